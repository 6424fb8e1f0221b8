/* Chapter 33: schedules, copies, measuring without a gradient, and the
   training run with validation selection. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/data.h"
#include "llm/error.h"
#include "llm/model.h"
#include "llm/optim.h"
#include "llm/params.h"
#include "llm/tape.h"
#include "support.h"

/* The Rust course's seed-33 fixture (its chapter 33). */
static const llm_decoder_config cfg33 = {5, 4, 2, 4, 1, 2, 10000.0, 1e-6, 0};
static const llm_adamw_config adamw33 = {0.9, 0.999, 1e-8, 0.01};
static const size_t ta[12] = {0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1},
                    tb[12] = {2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3},
                    va[9] = {0, 1, 2, 3, 4, 0, 1, 2, 3}, vb[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
static const llm_doc tdocs[2] = {{ta, 12}, {tb, 12}}, vdocs[2] = {{va, 9}, {vb, 9}};
static const llm_train_docs tset = {tdocs, 2, LLM_TRAIN}, vset = {vdocs, 2, LLM_VALIDATION};
static const double rates33[8] = {0.04, 0.04, 0.025, 0.025, 0.015, 0.015, 0.008, 0.008};
static const llm_train_config plan33 = {8, 2, 1, 2, 33, 5, 4, 2, {rates33, 8}, 0.35};

typedef struct model {
    llm_params ps;
    llm_decoder dec;
    llm_adamw opt;
} model;

static void model_init(model *m)
{
    llm_rng rng;
    llm_rng_seed(&rng, 33);
    ck_assert_int_eq(llm_params_init(&m->ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_decoder_init(&m->dec, &m->ps, &cfg33, &rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_adamw_init(&m->opt, &m->ps, &adamw33, NULL), LLM_OK);
}

static void model_free(model *m)
{
    llm_adamw_free(&m->opt);
    llm_decoder_free(&m->dec);
    llm_params_free(&m->ps);
}

static int same_params(const llm_params *a, const llm_params *b, int grads)
{
    size_t i;
    if (a->count != b->count)
        return 0;
    for (i = 0; i < a->count; i++) {
        const llm_param *p = &a->items[i], *q = &b->items[i];
        if (strcmp(p->name, q->name) != 0 || p->decay != q->decay
            || p->trainable != q->trainable || p->value.size != q->value.size
            || memcmp(p->value.data, q->value.data, p->value.size * sizeof(double)) != 0
            || (grads && memcmp(p->grad.data, q->grad.data, p->grad.size * sizeof(double))))
            return 0;
    }
    return 1;
}

static int same_adamw(const llm_adamw *a, const llm_adamw *b)
{
    size_t i;
    if (a->count != b->count || a->steps != b->steps || memcmp(&a->p1, &b->p1, sizeof a->p1)
        || memcmp(&a->p2, &b->p2, sizeof a->p2))
        return 0;
    for (i = 0; i < a->count; i++)
        if (strcmp(a->moments[i].name, b->moments[i].name) != 0
            || memcmp(a->moments[i].m.data, b->moments[i].m.data,
                      a->moments[i].m.size * sizeof(double))
            || memcmp(a->moments[i].v.data, b->moments[i].v.data,
                      a->moments[i].v.size * sizeof(double)))
            return 0;
    return 1;
}

/* ---------------------------------------------------------------- schedule -- */

START_TEST(schedule_keeps_its_last_rate)
{
    static const double r[3] = {0.5, 0.25, 0.125};
    const llm_schedule s = {r, 3}, one = {r, 1};
    double lr = 7.0;
    size_t step;
    for (step = 1; step <= 10; step++) {
        ck_assert_int_eq(llm_schedule_rate(&s, step, &lr, NULL), LLM_OK);
        ck_assert(lr == r[step <= 3 ? step - 1 : 2]);
        ck_assert_int_eq(llm_schedule_rate(&one, step, &lr, NULL), LLM_OK);
        ck_assert(lr == 0.5);
    }
}
END_TEST

START_TEST(schedule_refusals_leave_the_rate)
{
    static const double r[2] = {0.5, NAN};
    const llm_schedule s = {r, 2}, none = {NULL, 0}, empty = {r, 0};
    llm_error err;
    double lr = 7.0;
    REFUSED(llm_schedule_rate(&s, 0, &lr, &err), LLM_ERR_ARGUMENT, "schedule.rate");
    REFUSED(llm_schedule_rate(&s, 2, &lr, &err), LLM_ERR_ARGUMENT, "schedule.rate");
    ck_assert(strstr(err.message, "step 2") != NULL);
    REFUSED(llm_schedule_rate(&s, 9, &lr, &err), LLM_ERR_ARGUMENT, "schedule.rate");
    REFUSED(llm_schedule_rate(&none, 1, &lr, &err), LLM_ERR_ARGUMENT, "schedule.rate");
    REFUSED(llm_schedule_rate(&empty, 1, &lr, &err), LLM_ERR_ARGUMENT, "schedule.rate");
    REFUSED(llm_schedule_rate(NULL, 1, &lr, &err), LLM_ERR_ARGUMENT, "schedule.rate");
    REFUSED(llm_schedule_rate(&s, 1, NULL, &err), LLM_ERR_ARGUMENT, "schedule.rate");
    ck_assert(lr == 7.0);
}
END_TEST

/* ------------------------------------------------------------------ copies -- */

START_TEST(copies_are_deep_and_equal)
{
    model m;
    llm_params c;
    llm_adamw o;
    llm_error err;
    llm_tape tape;
    llm_var loss;
    const llm_tensor *v;
    double a;
    model_init(&m);
    m.ps.items[1].trainable = 0;
    m.ps.items[2].grad.data[3] = 0.75;
    m.opt.steps = 3;
    m.opt.p1 = 0.729;
    m.opt.moments[4].v.data[1] = 0.5;
    ck_assert_int_eq(llm_params_copy(&c, &m.ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_adamw_copy(&o, &m.opt, NULL), LLM_OK);
    ck_assert(same_params(&c, &m.ps, 1));
    ck_assert(same_adamw(&o, &m.opt));
    ck_assert_ptr_ne(c.items[0].value.data, m.ps.items[0].value.data);
    ck_assert_ptr_ne(o.moments[0].m.data, m.opt.moments[0].m.data);
    /* the copy serves the decoder as the original does, to the bit */
    ck_assert_int_eq(llm_tape_init(&tape, 64, NULL), LLM_OK);
    ck_assert_int_eq(llm_decoder_loss(&m.dec, &m.ps, &tape, ta, ta + 1, 1, 2, NULL, &loss,
                                      NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&tape, loss, &v, NULL), LLM_OK);
    a = v->data[v->offset];
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    ck_assert_int_eq(llm_decoder_loss(&m.dec, &c, &tape, ta, ta + 1, 1, 2, NULL, &loss, NULL),
                     LLM_OK);
    ck_assert_int_eq(llm_tape_value(&tape, loss, &v, NULL), LLM_OK);
    ck_assert(memcmp(&a, &v->data[v->offset], sizeof a) == 0);
    llm_tape_free(&tape);
    c.items[0].value.data[0] += 1.0;
    o.moments[0].m.data[0] = 9.0;
    ck_assert(!same_params(&c, &m.ps, 1));
    ck_assert(!same_adamw(&o, &m.opt));
    REFUSED(llm_params_copy(&m.ps, &m.ps, &err), LLM_ERR_ARGUMENT, "params.copy");
    REFUSED(llm_params_copy(NULL, &m.ps, &err), LLM_ERR_ARGUMENT, "params.copy");
    REFUSED(llm_adamw_copy(&m.opt, &m.opt, &err), LLM_ERR_ARGUMENT, "adamw.copy");
    REFUSED(llm_adamw_copy(&o, NULL, &err), LLM_ERR_ARGUMENT, "adamw.copy");
    llm_adamw_free(&o);
    llm_params_free(&c);
    model_free(&m);
}
END_TEST

/* -------------------------------------------------------------- measuring -- */

/* The mean over targets of the decoder's loss on docs' windows, batch by
   batch with llm_decoder_loss, written out. */
static double measure_by_hand(const llm_decoder *dec, llm_params *ps, const llm_doc *docs,
                              size_t ndocs, size_t T, size_t batch)
{
    llm_window w[64];
    size_t n = 0, first, count, ids[64 * 4], tg[64 * 4], tokens = 0;
    double sum = 0.0;
    llm_tape tape;
    llm_var loss;
    const llm_tensor *v;
    ck_assert_int_eq(llm_windows(docs, ndocs, T, 1, w, 64, &n, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 64, NULL), LLM_OK);
    for (first = 0; first < n; first += count) {
        count = n - first < batch ? n - first : batch;
        ck_assert_int_eq(llm_batch_tokens(docs, ndocs, w, n, first, count, T, ids, tg, NULL),
                         LLM_OK);
        ck_assert_int_eq(llm_decoder_loss(dec, ps, &tape, ids, tg, count, T, NULL, &loss,
                                          NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_value(&tape, loss, &v, NULL), LLM_OK);
        sum += v->data[v->offset] * (double)(count * T);
        tokens += count * T;
        ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    }
    llm_tape_free(&tape);
    return sum / (double)tokens;
}

START_TEST(evaluate_is_the_mean_over_targets)
{
    model m;
    llm_tape tape;
    llm_params before;
    llm_loss_sum acc;
    size_t batch;
    double mean = 0.0, ref, first = 0.0;
    model_init(&m);
    ck_assert_int_eq(llm_tape_init(&tape, 16, NULL), LLM_OK);
    m.ps.items[0].grad.data[0] = 0.25;            /* a gradient it must not touch */
    ck_assert_int_eq(llm_params_copy(&before, &m.ps, NULL), LLM_OK);
    for (batch = 1; batch <= 15; batch++) {
        ck_assert_int_eq(llm_evaluate(&m.dec, &m.ps, &tape, &vset, 2, 1, batch, &acc, NULL),
                         LLM_OK);
        ck_assert_uint_eq(acc.tokens, 28);
        ck_assert_int_eq(llm_loss_mean(&acc, &mean, NULL), LLM_OK);
        ref = measure_by_hand(&m.dec, &m.ps, vdocs, 2, 2, batch);
        ck_assert(memcmp(&mean, &ref, sizeof mean) == 0);
        if (batch == 1)
            first = mean;
        ck_assert(fabs(mean - first) < 1e-12);    /* the batching does not matter */
        ck_assert_uint_eq(tape.count, 0);
        ck_assert(same_params(&before, &m.ps, 1));
    }
    /* T = 1 measures other windows: 11 targets in each training document */
    ck_assert_int_eq(llm_evaluate(&m.dec, &m.ps, &tape, &tset, 1, 1, 7, &acc, NULL), LLM_OK);
    ck_assert_uint_eq(acc.tokens, 22);
    llm_params_free(&before);
    llm_tape_free(&tape);
    model_free(&m);
}
END_TEST

START_TEST(evaluate_refusals_change_nothing)
{
    static const size_t two[2] = {0, 1};
    const llm_doc short_doc = {two, 2};
    const llm_train_docs test = {vdocs, 2, LLM_TEST}, none = {NULL, 1, LLM_VALIDATION},
                         shorts = {&short_doc, 1, LLM_VALIDATION};
    model m;
    llm_tape tape;
    llm_error err;
    llm_loss_sum acc, kept;
    model_init(&m);
    ck_assert_int_eq(llm_tape_init(&tape, 16, NULL), LLM_OK);
    mark_bytes(&acc, sizeof acc);
    kept = acc;
    REFUSED_KEPT(llm_evaluate(&m.dec, &m.ps, &tape, &test, 2, 1, 4, &acc, &err), LLM_ERR_SPLIT,
                 "optim.evaluate", tape, 0, &acc, &kept);
    REFUSED_KEPT(llm_evaluate(&m.dec, &m.ps, &tape, &vset, 3, 1, 4, &acc, &err),
                 LLM_ERR_ARGUMENT, "optim.evaluate", tape, 0, &acc, &kept);
    REFUSED_KEPT(llm_evaluate(&m.dec, &m.ps, &tape, &vset, 2, 0, 4, &acc, &err),
                 LLM_ERR_ARGUMENT, "optim.evaluate", tape, 0, &acc, &kept);
    REFUSED_KEPT(llm_evaluate(&m.dec, &m.ps, &tape, &vset, 2, 1, 0, &acc, &err),
                 LLM_ERR_ARGUMENT, "optim.evaluate", tape, 0, &acc, &kept);
    REFUSED_KEPT(llm_evaluate(&m.dec, &m.ps, &tape, &none, 2, 1, 4, &acc, &err),
                 LLM_ERR_ARGUMENT, "optim.evaluate", tape, 0, &acc, &kept);
    REFUSED_KEPT(llm_evaluate(&m.dec, &m.ps, &tape, &shorts, 2, 1, 4, &acc, &err),
                 LLM_ERR_EMPTY, "optim.evaluate", tape, 0, &acc, &kept);
    REFUSED_KEPT(llm_evaluate(NULL, &m.ps, &tape, &vset, 2, 1, 4, &acc, &err),
                 LLM_ERR_ARGUMENT, "optim.evaluate", tape, 0, &acc, &kept);
    m.ps.items[3].value.data[2] = INFINITY;       /* refused by the pass, then rewound */
    REFUSED_KEPT(llm_evaluate(&m.dec, &m.ps, &tape, &vset, 2, 1, 4, &acc, &err),
                 LLM_ERR_NONFINITE, "optim.evaluate <- tape.leaf", tape, 0, &acc, &kept);
    llm_tape_free(&tape);
    model_free(&m);
}
END_TEST

/* ---------------------------------------------------------------- the run -- */

/* A run written out step by step from chapter 21's and 22's pieces: the
   losses of every checkpoint and, at its end, the state of step `keep`
   in *kept (when keep is one of the checkpoints), the batch losses in
   batch_loss. */
typedef struct hand {
    size_t steps[64];
    double train[64], val[64], batch_loss[128];
    size_t count;
} hand;

static void run_by_hand(const model *m0, const llm_train_config *c, size_t keep,
                        llm_params *kept, hand *h)
{
    llm_params ps;
    llm_adamw opt;
    llm_tape tape;
    llm_window w[20];
    size_t n = 0, nb, s, first, count, ids[16], tg[16];
    llm_var loss;
    const llm_tensor *v;
    llm_grad_multiplier mu;
    double norm, lr;
    ck_assert_int_eq(llm_params_copy(&ps, &m0->ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_adamw_copy(&opt, &m0->opt, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 64, NULL), LLM_OK);
    ck_assert_int_eq(llm_windows(tdocs, 2, c->T, c->stride, w, 20, &n, NULL), LLM_OK);
    ck_assert_int_eq(llm_shuffle_windows(w, n, c->seed, NULL), LLM_OK);
    nb = (n + c->batch - 1) / c->batch;
    h->count = 0;
    for (s = 0; s <= c->steps; s++) {
        if (s > 0) {
            first = (s - 1) % nb * c->batch;
            count = n - first < c->batch ? n - first : c->batch;
            ck_assert_int_eq(llm_batch_tokens(tdocs, 2, w, n, first, count, c->T, ids, tg,
                                              NULL), LLM_OK);
            ck_assert_int_eq(llm_decoder_loss(&m0->dec, &ps, &tape, ids, tg, count, c->T,
                                              NULL, &loss, NULL), LLM_OK);
            ck_assert_int_eq(llm_tape_value(&tape, loss, &v, NULL), LLM_OK);
            h->batch_loss[s - 1] = v->data[v->offset];
            ck_assert_int_eq(llm_tape_backward(&tape, loss, NULL, 0, NULL), LLM_OK);
            ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
            ck_assert_int_eq(llm_grad_clip_multiplier(&ps, c->clip, &norm, &mu, NULL), LLM_OK);
            lr = c->schedule.rates[(s < c->schedule.count ? s : c->schedule.count) - 1];
            ck_assert_int_eq(llm_adamw_step(&opt, &ps, mu, lr, NULL), LLM_OK);
            ck_assert_int_eq(llm_params_zero_grad(&ps, NULL), LLM_OK);
        }
        if (s % c->every == 0 || s == c->steps) {
            h->steps[h->count] = s;
            h->train[h->count] = measure_by_hand(&m0->dec, &ps, tdocs, 2, c->T, c->train_batch);
            h->val[h->count] = measure_by_hand(&m0->dec, &ps, vdocs, 2, c->T,
                                               c->validation_batch);
            h->count++;
            if (s == keep)
                ck_assert_int_eq(llm_params_copy(kept, &ps, NULL), LLM_OK);
        }
    }
    llm_tape_free(&tape);
    llm_adamw_free(&opt);
    llm_params_free(&ps);
}

/* What an observer heard. */
typedef struct heard {
    llm_train_event ev[700];
    size_t n;
} heard;

static void listen(void *ctx, const llm_train_event *e)
{
    heard *h = ctx;
    ck_assert_uint_lt(h->n, 700);
    h->ev[h->n++] = *e;
}

START_TEST(the_course_fixture_is_reproduced)
{
    static const double want_train[5] = {2.095016, 1.562026, 1.453259, 1.369832, 1.322897},
                        want_val[5] = {1.918167, 1.696310, 1.687788, 1.642599, 1.595297};
    model m;
    llm_train_result r;
    size_t i, n = 0;
    model_init(&m);
    for (i = 0; i < m.ps.count; i++)
        n += m.ps.items[i].value.size;
    ck_assert_uint_eq(m.ps.count, 11);
    ck_assert_uint_eq(n, 144);
    m.ps.items[0].grad.data[0] = 1.0;            /* the run starts from zero gradients */
    ck_assert_int_eq(llm_train(&m.dec, &m.ps, &m.opt, &tset, &vset, &plan33, NULL, NULL, &r,
                               NULL), LLM_OK);
    ck_assert_uint_eq(r.count, 5);
    for (i = 0; i < 5; i++) {
        ck_assert_uint_eq(r.points[i].step, 2 * i);
        ck_assert_msg(fabs(r.points[i].train - want_train[i]) < 5e-7, "train %zu: %.9f", i,
                      r.points[i].train);
        ck_assert_msg(fabs(r.points[i].validation - want_val[i]) < 5e-7, "val %zu: %.9f", i,
                      r.points[i].validation);
    }
    ck_assert_uint_eq(r.selected, 8);
    ck_assert_uint_eq(r.train_windows, 20);
    ck_assert_uint_eq(r.validation_windows, 14);
    ck_assert_uint_eq(r.train_targets, 40);
    ck_assert_uint_eq(r.validation_targets, 28);
    ck_assert_uint_eq(r.opt.steps, 8);
    llm_train_result_free(&r);
    model_free(&m);
}
END_TEST

/* The run against the same steps written out, bit for bit, in the plan and
   in a longer one whose selection is not its last step; the events in
   their order with the same batch losses; the selection rule. */
START_TEST(the_run_is_its_steps_written_out)
{
    static const llm_train_kind update[6] = {LLM_TRAIN_FORWARD, LLM_TRAIN_BACKWARD,
                                             LLM_TRAIN_FINITE,  LLM_TRAIN_CLIP,
                                             LLM_TRAIN_UPDATE,  LLM_TRAIN_ZERO};
    static heard h;
    static hand ref;
    llm_train_config c = plan33;
    model m;
    llm_params before, kept;
    llm_adamw opt0;
    llm_train_result r;
    size_t round, i, e, s, k, sel;
    double best = 0.0;
    int want;
    model_init(&m);
    ck_assert_int_eq(llm_params_copy(&before, &m.ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_adamw_copy(&opt0, &m.opt, NULL), LLM_OK);
    for (round = 0; round < 3; round++) {       /* the plan, a longer run, a ragged end */
        c.steps = round == 0 ? 8 : round == 1 ? 80 : 7;
        c.every = round == 0 ? 2 : round == 1 ? 4 : 3;
        h.n = 0;
        ck_assert_int_eq(llm_train(&m.dec, &m.ps, &m.opt, &tset, &vset, &c, listen, &h, &r,
                                   NULL), LLM_OK);
        run_by_hand(&m, &c, r.selected, &kept, &ref);
        ck_assert_uint_eq(r.count, ref.count);
        for (i = 0, sel = 0; i < r.count; i++) {
            ck_assert_uint_eq(r.points[i].step, ref.steps[i]);
            ck_assert(memcmp(&r.points[i].train, &ref.train[i], sizeof ref.train[i]) == 0);
            ck_assert(memcmp(&r.points[i].validation, &ref.val[i], sizeof ref.val[i]) == 0);
            sel = r.points[i].step == r.selected ? i : sel;
        }
        /* the earliest of the lowest */
        for (i = 0; i < r.count; i++)
            ck_assert(i < sel ? r.points[i].validation > r.validation
                              : r.points[i].validation >= r.validation);
        ck_assert(memcmp(&r.points[sel].validation, &r.validation, sizeof r.validation) == 0);
        ck_assert(same_params(&r.params, &kept, 0));
        ck_assert_uint_eq(r.opt.steps, r.selected);
        /* the events: a MEASURE, then six per update and a MEASURE at each checkpoint */
        for (e = 0, s = 0, k = 0; s <= c.steps; s++) {
            for (i = 0; s > 0 && i < 6; i++, e++) {
                ck_assert_uint_lt(e, h.n);
                ck_assert_int_eq(h.ev[e].kind, update[i]);
                ck_assert_uint_eq(h.ev[e].step, s);
                if (update[i] == LLM_TRAIN_FORWARD)
                    ck_assert(memcmp(&h.ev[e].loss, &ref.batch_loss[s - 1], sizeof(double))
                              == 0);
                if (update[i] == LLM_TRAIN_CLIP)
                    ck_assert(h.ev[e].mu.factor / h.ev[e].mu.divisor < 1.0
                              && h.ev[e].norm > c.clip);
                if (update[i] == LLM_TRAIN_UPDATE)
                    ck_assert(h.ev[e].lr == rates33[s <= 8 ? s - 1 : 7]);
            }
            if (s % c.every == 0 || s == c.steps) {
                ck_assert_int_eq(h.ev[e].kind, LLM_TRAIN_MEASURE);
                ck_assert_uint_eq(h.ev[e].step, s);
                ck_assert(h.ev[e].validation == r.points[k].validation);
                want = k == 0 || r.points[k].validation < best;
                best = want ? r.points[k].validation : best;
                ck_assert_int_eq(h.ev[e].selected, want);
                e++;
                k++;
            }
        }
        ck_assert_uint_eq(e, h.n);
        ck_assert_uint_eq(r.points[r.count - 1].step, c.steps);
        if (round == 1)
            ck_assert_uint_lt(r.selected, 80);   /* the longer run overfits */
        llm_params_free(&kept);
        llm_train_result_free(&r);
    }
    ck_assert(same_params(&before, &m.ps, 1));
    ck_assert(same_adamw(&opt0, &m.opt));
    llm_adamw_free(&opt0);
    llm_params_free(&before);
    model_free(&m);
}
END_TEST

START_TEST(a_replay_is_bitwise)
{
    model m;
    llm_train_result a, b;
    model_init(&m);
    ck_assert_int_eq(llm_train(&m.dec, &m.ps, &m.opt, &tset, &vset, &plan33, NULL, NULL, &a,
                               NULL), LLM_OK);
    ck_assert_int_eq(llm_train(&m.dec, &m.ps, &m.opt, &tset, &vset, &plan33, NULL, NULL, &b,
                               NULL), LLM_OK);
    ck_assert(memcmp(a.points, b.points, a.count * sizeof *a.points) == 0);
    ck_assert(same_params(&a.params, &b.params, 1));
    ck_assert(same_adamw(&a.opt, &b.opt));
    llm_train_result_free(&a);
    llm_train_result_free(&b);
    llm_train_result_free(&b);                     /* safe on an empty result */
    llm_train_result_free(NULL);
    model_free(&m);
}
END_TEST

/* Every parameter frozen: the updates move nothing, every checkpoint
   measures the same loss, and the ties keep step 0. */
START_TEST(a_tie_keeps_the_earlier_step)
{
    llm_train_config c = plan33;
    model m;
    llm_train_result r;
    size_t i;
    model_init(&m);
    c.steps = 4;
    c.every = 1;
    for (i = 0; i < m.ps.count; i++)
        ck_assert_int_eq(llm_params_set_trainable(&m.ps, i, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_train(&m.dec, &m.ps, &m.opt, &tset, &vset, &c, NULL, NULL, &r, NULL),
                     LLM_OK);
    ck_assert_uint_eq(r.count, 5);
    for (i = 1; i < r.count; i++)
        ck_assert(memcmp(&r.points[i].validation, &r.points[0].validation,
                         sizeof r.validation) == 0);
    ck_assert_uint_eq(r.selected, 0);
    ck_assert_uint_eq(r.opt.steps, 0);
    llm_train_result_free(&r);
    model_free(&m);
}
END_TEST

START_TEST(refused_runs_change_nothing)
{
    static const double big[1] = {200.0}, nan_rate[2] = {0.04, NAN};
    static const size_t two[2] = {0, 1};
    const llm_doc short_doc = {two, 2};
    const llm_train_docs test = {vdocs, 2, LLM_TEST}, shorts = {&short_doc, 1, LLM_TRAIN},
                         as_train = {vdocs, 2, LLM_TRAIN};
    llm_train_config c[8];
    static const llm_status want[8] = {LLM_ERR_ARGUMENT, LLM_ERR_ARGUMENT, LLM_ERR_ARGUMENT,
                                       LLM_ERR_ARGUMENT, LLM_ERR_ARGUMENT, LLM_ERR_ARGUMENT,
                                       LLM_ERR_ARGUMENT, LLM_ERR_ARGUMENT};
    model m;
    llm_params before;
    llm_train_result out;
    llm_error err;
    size_t i;
    model_init(&m);
    ck_assert_int_eq(llm_params_copy(&before, &m.ps, NULL), LLM_OK);
    for (i = 0; i < 8; i++)
        c[i] = plan33;
    c[0].steps = 0;
    c[1].batch = 0;
    c[2].every = 0;
    c[3].clip = NAN;
    c[4].T = 3;                                   /* the context is 2 */
    c[5].schedule.rates = big;                    /* 200 * 0.01 is not in (0, 1) */
    c[5].schedule.count = 1;
    c[6].schedule.rates = nan_rate;
    c[6].schedule.count = 2;
    c[7].stride = 0;
    mark_bytes(&out, sizeof out);
    for (i = 0; i < 8; i++) {
        ck_assert_int_eq(llm_train(&m.dec, &m.ps, &m.opt, &tset, &vset, &c[i], NULL, NULL, &out,
                                   &err), want[i]);
        ck_assert_str_eq(err.stage, "optim.train");
        ck_assert(marked_bytes(&out, sizeof out));
    }
    REFUSED(llm_train(&m.dec, &m.ps, &m.opt, &tset, &test, &plan33, NULL, NULL, &out, &err),
            LLM_ERR_SPLIT, "optim.train");
    REFUSED(llm_train(&m.dec, &m.ps, &m.opt, &test, &vset, &plan33, NULL, NULL, &out, &err),
            LLM_ERR_SPLIT, "optim.train");
    REFUSED(llm_train(&m.dec, &m.ps, &m.opt, &tset, &as_train, &plan33, NULL, NULL, &out, &err),
            LLM_ERR_SPLIT, "optim.train");
    REFUSED(llm_train(&m.dec, &m.ps, &m.opt, &shorts, &vset, &plan33, NULL, NULL, &out, &err),
            LLM_ERR_EMPTY, "optim.train");
    REFUSED(llm_train(NULL, &m.ps, &m.opt, &tset, &vset, &plan33, NULL, NULL, &out, &err),
            LLM_ERR_ARGUMENT, "optim.train");
    REFUSED(llm_train(&m.dec, &m.ps, &m.opt, &tset, &vset, &plan33, NULL, NULL, NULL, &err),
            LLM_ERR_ARGUMENT, "optim.train");
    /* a parameter that is NaN is refused when the first checkpoint records it */
    m.ps.items[5].value.data[0] = NAN;
    REFUSED(llm_train(&m.dec, &m.ps, &m.opt, &tset, &vset, &plan33, NULL, NULL, &out, &err),
            LLM_ERR_NONFINITE, "optim.train <- tape.leaf");
    /* a parameter so large that the loss overflows, after step 0 */
    m.ps.items[5].value.data[0] = before.items[5].value.data[0];
    ck_assert(marked_bytes(&out, sizeof out));
    m.ps.items[0].value.data[0] = 1e300;
    ck_assert_int_ne(llm_train(&m.dec, &m.ps, &m.opt, &tset, &vset, &plan33, NULL, NULL, &out,
                               &err), LLM_OK);
    ck_assert(marked_bytes(&out, sizeof out));
    m.ps.items[0].value.data[0] = before.items[0].value.data[0];
    ck_assert(same_params(&before, &m.ps, 1));
    llm_params_free(&before);
    model_free(&m);
}
END_TEST

START_TEST(every_allocation_failure_is_clean)
{
    llm_train_config c = plan33;
    model m;
    llm_train_result out;
    llm_params cp;
    llm_adamw co;
    llm_tape tape;
    llm_loss_sum acc;
    llm_error err;
    size_t used;
    model_init(&m);
    c.steps = 2;
    c.every = 1;
    WALK(&used, mark_bytes(&out, sizeof out),
         llm_train(&m.dec, &m.ps, &m.opt, &tset, &vset, &c, NULL, NULL, &out, &err),
         marked_bytes(&out, sizeof out), llm_train_result_free(&out));
    ck_assert_uint_gt(used, 10);
    WALK(&used, mark_bytes(&cp, sizeof cp), llm_params_copy(&cp, &m.ps, &err),
         marked_bytes(&cp, sizeof cp), llm_params_free(&cp));
    ck_assert_uint_eq(used, 1 + 2 * m.ps.count);
    WALK(&used, mark_bytes(&co, sizeof co), llm_adamw_copy(&co, &m.opt, &err),
         marked_bytes(&co, sizeof co), llm_adamw_free(&co));
    ck_assert_uint_eq(used, 1 + 2 * m.opt.count);
    ck_assert_int_eq(llm_tape_init(&tape, 16, NULL), LLM_OK);
    WALK(&used, mark_bytes(&acc, sizeof acc),
         llm_evaluate(&m.dec, &m.ps, &tape, &vset, 2, 1, 4, &acc, &err),
         marked_bytes(&acc, sizeof acc) && tape.count == 0, (void)0);
    ck_assert_uint_gt(used, 3);
    llm_tape_free(&tape);
    model_free(&m);
}
END_TEST

Suite *ch33_training_selection_suite(void)
{
    const TTest *tests[] = {
        schedule_keeps_its_last_rate,
        schedule_refusals_leave_the_rate,
        copies_are_deep_and_equal,
        evaluate_is_the_mean_over_targets,
        evaluate_refusals_change_nothing,
        the_course_fixture_is_reproduced,
        the_run_is_its_steps_written_out,
        a_replay_is_bitwise,
        a_tie_keeps_the_earlier_step,
        refused_runs_change_nothing,
        every_allocation_failure_is_clean,
    };
    return suite_of("ch33 training selection", tcase_of("train", 120, tests, COUNT(tests)));
}
