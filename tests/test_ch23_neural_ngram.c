/* Chapter 23: the neural n-gram and the contexts it reads. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/data.h"
#include "llm/error.h"
#include "llm/gradcheck.h"
#include "llm/model.h"
#include "llm/optim.h"
#include "llm/tape.h"
#include "llm/tokenizer.h"
#include "support.h"

#define GAMMA UINT64_C(0x9e3779b97f4a7c15)

/* ---------------------------------------------------------------- contexts -- */

START_TEST(contexts_pad_with_bos_before_a_document)
{
    static const size_t ids[5] = {0, 41, 42, 43, 1};
    static const size_t want_in[12] = {0, 0, 0, 0, 0, 41, 0, 41, 42, 41, 42, 43};
    static const size_t want_t[4] = {41, 42, 43, 1};
    const llm_doc doc = {ids, 5};
    llm_window w[4];
    size_t n = 0, in[12], t[4];
    ck_assert_int_eq(llm_windows(&doc, 1, 1, 1, w, 4, &n, NULL), LLM_OK);
    ck_assert_uint_eq(n, 4);
    ck_assert_int_eq(llm_batch_contexts(&doc, 1, w, n, 0, 4, 3, in, t, NULL), LLM_OK);
    ck_assert(memcmp(in, want_in, sizeof in) == 0);
    ck_assert(memcmp(t, want_t, sizeof t) == 0);
}
END_TEST

/* Random documents and batches against the definition, position by position. */
START_TEST(contexts_match_their_definition)
{
    llm_rng rng;
    size_t round;
    llm_rng_seed(&rng, 2301);
    for (round = 0; round < 200; round++) {
        size_t ids[3][12], len[3], d, i, n = 0, C, first, count, b, j;
        llm_doc docs[3];
        llm_window w[36];
        size_t in[36 * 6], t[36];
        for (d = 0; d < 3; d++) {
            len[d] = llm_rng_next_u64(&rng) % 12;
            for (i = 0; i < len[d]; i++)
                ids[d][i] = llm_rng_next_u64(&rng) % 9;
            docs[d].ids = ids[d];
            docs[d].length = len[d];
        }
        ck_assert_int_eq(llm_windows(docs, 3, 1, 1, w, 36, &n, NULL), LLM_OK);
        if (n == 0)
            continue;
        C = 1 + llm_rng_next_u64(&rng) % 6;
        first = llm_rng_next_u64(&rng) % n;
        count = 1 + llm_rng_next_u64(&rng) % (n - first);
        ck_assert_int_eq(llm_batch_contexts(docs, 3, w, n, first, count, C, in, t, NULL),
                         LLM_OK);
        for (b = 0; b < count; b++) {
            const llm_window *x = &w[first + b];
            long pos = (long)x->start - (long)C + 1;
            for (j = 0; j < C; j++, pos++)
                ck_assert_uint_eq(in[b * C + j], pos < 0 ? LLM_BOS : ids[x->doc][pos]);
            ck_assert_uint_eq(t[b], ids[x->doc][x->start + 1]);
        }
    }
}
END_TEST

START_TEST(contexts_refuse_bad_batches_and_touch_nothing)
{
    static const size_t ids[3] = {0, 5, 1};
    const llm_doc doc = {ids, 3}, hollow = {NULL, 3};
    const llm_window ok[2] = {{0, 0}, {0, 1}}, last = {0, 2}, elsewhere = {1, 0};
    size_t in[4], t[2];
    llm_error err;
    mark_bytes(in, sizeof in);
    mark_bytes(t, sizeof t);
    REFUSED(llm_batch_contexts(&doc, 1, NULL, 2, 0, 1, 2, in, t, &err), LLM_ERR_ARGUMENT,
            "data.batch_contexts");
    REFUSED(llm_batch_contexts(NULL, 1, ok, 2, 0, 1, 2, in, t, &err), LLM_ERR_ARGUMENT,
            "data.batch_contexts");
    REFUSED(llm_batch_contexts(&doc, 1, ok, 2, 0, 1, 0, in, t, &err), LLM_ERR_ARGUMENT,
            "data.batch_contexts");
    REFUSED(llm_batch_contexts(&doc, 1, ok, 2, 0, 0, 2, in, t, &err), LLM_ERR_EMPTY,
            "data.batch_contexts");
    REFUSED(llm_batch_contexts(&doc, 1, ok, 2, 1, 2, 2, in, t, &err), LLM_ERR_INDEX,
            "data.batch_contexts");
    REFUSED(llm_batch_contexts(&doc, 1, ok, 2, 3, 1, 2, in, t, &err), LLM_ERR_INDEX,
            "data.batch_contexts");
    REFUSED(llm_batch_contexts(&doc, 1, ok, 2, 0, 2, SIZE_MAX, in, t, &err), LLM_ERR_OVERFLOW,
            "data.batch_contexts");
    REFUSED(llm_batch_contexts(&doc, 1, &last, 1, 0, 1, 2, in, t, &err), LLM_ERR_INDEX,
            "data.batch_contexts");
    ck_assert_str_eq(err.message, "window 0 at 2 has no target in document 0 of 3 IDs");
    REFUSED(llm_batch_contexts(&doc, 1, &elsewhere, 1, 0, 1, 2, in, t, &err), LLM_ERR_INDEX,
            "data.batch_contexts");
    REFUSED(llm_batch_contexts(&hollow, 1, ok, 2, 0, 1, 2, in, t, &err), LLM_ERR_ARGUMENT,
            "data.batch_contexts");
    ck_assert(marked_bytes(in, sizeof in) && marked_bytes(t, sizeof t));
}
END_TEST

/* ------------------------------------------------------------------- model -- */

typedef struct ngram_fixture {
    llm_params ps;
    llm_ngram m;
    llm_tape tape;
} ngram_fixture;

static void build(ngram_fixture *f, const llm_ngram_config *cfg, uint64_t seed)
{
    llm_rng rng;
    llm_rng_seed(&rng, seed);
    ck_assert_int_eq(llm_params_init(&f->ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_ngram_init(&f->m, &f->ps, cfg, &rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&f->tape, 4, NULL), LLM_OK);
}

static void destroy(ngram_fixture *f)
{
    llm_tape_free(&f->tape);
    llm_params_free(&f->ps);
}

START_TEST(init_lays_out_five_tensors_in_draw_order)
{
    static const llm_ngram_config cfg = {11, 3, 2, 5};
    static const char *const names[5] = {"token_embedding.weight", "ffn.gate.weight",
                                         "ffn.up.weight", "ffn.down.weight", "output.weight"};
    static const size_t shapes[5][2] = {{11, 2}, {6, 5}, {6, 5}, {5, 6}, {6, 11}};
    ngram_fixture f;
    llm_rng rng, fresh;
    llm_tensor w;
    size_t k, total = 0;
    build(&f, &cfg, 23);
    ck_assert_uint_eq(f.ps.count, 5);
    llm_rng_seed(&fresh, 23);
    for (k = 0; k < 5; k++) {
        const llm_param *p = &f.ps.items[k];
        ck_assert_str_eq(p->name, names[k]);
        assert_shape(&p->value, 2, shapes[k]);
        ck_assert_int_eq(llm_xavier_uniform(&w, shapes[k][0], shapes[k][1], &fresh, NULL),
                         LLM_OK);
        ck_assert(memcmp(w.data, p->value.data, w.size * sizeof(double)) == 0);
        llm_tensor_free(&w);
        total += p->value.size;
    }
    ck_assert_uint_eq(total, 11 * 2 + 3 * 6 * 5 + 6 * 11);   /* V D + 3 C D F + C D V */
    llm_rng_seed(&rng, 23);
    ck_assert_uint_eq(fresh.state, rng.state + total * GAMMA);
    ck_assert_uint_eq(f.m.head.has_bias, 0);
    destroy(&f);
}
END_TEST

START_TEST(init_refuses_and_leaves_everything_as_it_was)
{
    static const llm_ngram_config zero[4] = {{0, 2, 2, 2}, {5, 0, 2, 2}, {5, 2, 0, 2},
                                             {5, 2, 2, 0}};
    static const llm_ngram_config huge = {5, SIZE_MAX / 2, 3, 2}, ok = {5, 2, 2, 2};
    llm_params ps;
    llm_ngram m, kept;
    llm_rng rng;
    llm_error err;
    const size_t one[1] = {1};
    size_t k;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    memset(&m, 0x5a, sizeof m);
    kept = m;
    llm_rng_seed(&rng, 5);
    for (k = 0; k < 4; k++)
        REFUSED(llm_ngram_init(&m, &ps, &zero[k], &rng, &err), LLM_ERR_ARGUMENT, "ngram.init");
    REFUSED(llm_ngram_init(&m, &ps, &huge, &rng, &err), LLM_ERR_OVERFLOW, "ngram.init");
    REFUSED(llm_ngram_init(NULL, &ps, &ok, &rng, &err), LLM_ERR_ARGUMENT, "ngram.init");
    REFUSED(llm_ngram_init(&m, &ps, &ok, NULL, &err), LLM_ERR_ARGUMENT, "ngram.init");
    ck_assert_int_eq(llm_params_add_const(&ps, "x.gain", 1, one, 1.0, 0, NULL), LLM_OK);
    REFUSED(llm_ngram_init(&m, &ps, &ok, &rng, &err), LLM_ERR_ARGUMENT, "ngram.init");
    ck_assert_uint_eq(ps.count, 1);
    ck_assert(memcmp(&m, &kept, sizeof m) == 0);
    ck_assert_uint_eq(rng.state, 5);
    llm_params_free(&ps);
}
END_TEST

static double silu(double a)
{
    return a / (1.0 + exp(-a));
}

/* The logits of one context, from the parameters by plain loops. */
static void plain_logits(const ngram_fixture *f, const size_t *ctx, double *logits)
{
    const llm_ngram_config *c = &f->m.config;
    const size_t CD = c->context * c->width, V = c->vocab, Fh = c->d_ff;
    const double *E = f->ps.items[0].value.data, *Wg = f->ps.items[1].value.data,
                 *Wu = f->ps.items[2].value.data, *W2 = f->ps.items[3].value.data,
                 *Wo = f->ps.items[4].value.data;
    double x[64], s[64], h[64];
    size_t i, j;
    for (i = 0; i < CD; i++)
        x[i] = E[ctx[i / c->width] * c->width + i % c->width];
    for (j = 0; j < Fh; j++) {
        double a = 0.0, u = 0.0;
        for (i = 0; i < CD; i++) {
            a += x[i] * Wg[i * Fh + j];
            u += x[i] * Wu[i * Fh + j];
        }
        s[j] = silu(a) * u;
    }
    for (i = 0; i < CD; i++)
        for (h[i] = 0.0, j = 0; j < Fh; j++)
            h[i] += s[j] * W2[j * CD + i];
    for (j = 0; j < V; j++)
        for (logits[j] = 0.0, i = 0; i < CD; i++)
            logits[j] += h[i] * Wo[i * V + j];
}

static double value_at(const llm_tape *tape, llm_var v, size_t row, size_t col)
{
    const llm_tensor *t;
    ck_assert_int_eq(llm_tape_value(tape, v, &t, NULL), LLM_OK);
    return t->data[t->offset + row * t->stride[0] + col * t->stride[1]];
}

START_TEST(forward_is_the_formula)
{
    static const llm_ngram_config cfg = {7, 3, 2, 4};
    static const size_t ids[15] = {0, 0, 3, 6, 1, 2, 5, 5, 5, 0, 4, 2, 3, 3, 6};
    ngram_fixture f;
    llm_var hidden[3], logits;
    double want[7];
    size_t b, j;
    const llm_tensor *t;
    build(&f, &cfg, 77);
    ck_assert_int_eq(llm_ngram_forward(&f.m, &f.ps, &f.tape, ids, 5, hidden, &logits, NULL),
                     LLM_OK);
    ck_assert_int_eq(llm_tape_value(&f.tape, hidden[0], &t, NULL), LLM_OK);
    assert_shape(t, 3, (const size_t[]){5, 3, 2});
    ck_assert_int_eq(llm_tape_value(&f.tape, hidden[1], &t, NULL), LLM_OK);
    assert_shape(t, 2, (const size_t[]){5, 6});
    ck_assert_int_eq(llm_tape_value(&f.tape, logits, &t, NULL), LLM_OK);
    assert_shape(t, 2, (const size_t[]){5, 7});
    for (b = 0; b < 5; b++) {
        plain_logits(&f, ids + 3 * b, want);
        for (j = 0; j < 7; j++)
            ck_assert_double_eq_tol(value_at(&f.tape, logits, b, j), want[j],
                                    1e-12 * (1.0 + fabs(want[j])));
    }
    destroy(&f);
}
END_TEST

/* The loss of the fixture's batch, on a tape of its own, for the checker. */
typedef struct loss_ctx {
    ngram_fixture *f;
    const size_t *ids, *targets;
    size_t batch;
} loss_ctx;

static llm_status batch_loss(void *p, const llm_tensor *theta, double *value, llm_error *err)
{
    loss_ctx *c = p;
    llm_tape tape;
    llm_var loss;
    llm_status st;
    (void)theta;                   /* theta is a parameter of the list, changed in place */
    if ((st = llm_tape_init(&tape, 8, err)) != LLM_OK)
        return st;
    st = llm_ngram_loss(&c->f->m, &c->f->ps, &tape, c->ids, c->targets, c->batch, NULL, &loss,
                        err);
    if (st == LLM_OK)
        *value = value_at(&tape, loss, 0, 0);
    llm_tape_free(&tape);
    return st;
}

START_TEST(gradients_match_central_differences)
{
    static const llm_ngram_config cfg = {5, 2, 2, 3};
    static const size_t ids[8] = {0, 0, 0, 2, 2, 3, 4, 1}, targets[4] = {2, 3, 4, 1};
    ngram_fixture f;
    loss_ctx ctx = {&f, ids, targets, 4};
    llm_var loss;
    size_t k, coords[64], i, failures = 1;
    double worst = 1.0;
    build(&f, &cfg, 13);
    ck_assert_int_eq(llm_params_zero_grad(&f.ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_ngram_loss(&f.m, &f.ps, &f.tape, ids, targets, 4, NULL, &loss, NULL),
                     LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&f.tape, loss, NULL, 0, NULL), LLM_OK);
    for (k = 0; k < f.ps.count; k++) {
        llm_param *p = &f.ps.items[k];
        for (i = 0; i < p->value.size; i++)
            coords[i] = i;
        ck_assert_int_eq(llm_gradient_check(batch_loss, &ctx, &p->value, p->grad.data, coords,
                                            p->value.size, 1e-5, 1e-7, &worst, &failures,
                                            NULL),
                         LLM_OK);
        ck_assert_msg(failures == 0, "%s: worst scaled error %g", p->name, worst);
    }
    destroy(&f);
}
END_TEST

START_TEST(forward_and_loss_refuse_before_recording)
{
    static const llm_ngram_config cfg = {5, 2, 2, 3};
    static const size_t ids[4] = {0, 4, 5, 1}, ok_ids[4] = {0, 4, 2, 1}, bad_t[2] = {1, 5},
                        ok_t[2] = {1, 2};
    ngram_fixture f;
    llm_ngram broken;
    llm_var out, kept, loss;
    llm_error err;
    const size_t one[1] = {1};
    size_t nodes;
    build(&f, &cfg, 3);
    memset(&kept, 0x5a, sizeof kept);
    out = loss = kept;
    ck_assert_int_eq(llm_ngram_forward(&f.m, &f.ps, &f.tape, ok_ids, 2, NULL, &out, NULL),
                     LLM_OK);
    out = kept;
    nodes = f.tape.count;
    REFUSED_KEPT(llm_ngram_forward(&f.m, &f.ps, &f.tape, ids, 2, NULL, &out, &err),
                 LLM_ERR_TOKEN, "ngram.forward", f.tape, nodes, &out, &kept);
    ck_assert_str_eq(err.message, "ID 5 at row 1, position 0 is not below the vocabulary 5");
    REFUSED_KEPT(llm_ngram_forward(&f.m, &f.ps, &f.tape, ok_ids, 0, NULL, &out, &err),
                 LLM_ERR_EMPTY, "ngram.forward", f.tape, nodes, &out, &kept);
    REFUSED_KEPT(llm_ngram_forward(&f.m, &f.ps, &f.tape, NULL, 2, NULL, &out, &err),
                 LLM_ERR_ARGUMENT, "ngram.forward", f.tape, nodes, &out, &kept);
    REFUSED_KEPT(llm_ngram_forward(&f.m, &f.ps, &f.tape, ok_ids, SIZE_MAX, NULL, &out, &err),
                 LLM_ERR_OVERFLOW, "ngram.forward", f.tape, nodes, &out, &kept);
    broken = f.m;
    broken.head.d_out = 4;
    REFUSED_KEPT(llm_ngram_forward(&broken, &f.ps, &f.tape, ok_ids, 2, NULL, &out, &err),
                 LLM_ERR_SHAPE, "ngram.forward", f.tape, nodes, &out, &kept);
    broken = f.m;
    broken.config.context = 0;
    REFUSED_KEPT(llm_ngram_forward(&broken, &f.ps, &f.tape, ok_ids, 2, NULL, &out, &err),
                 LLM_ERR_ARGUMENT, "ngram.forward", f.tape, nodes, &out, &kept);
    REFUSED_KEPT(llm_ngram_loss(&f.m, &f.ps, &f.tape, ok_ids, bad_t, 2, &out, &loss, &err),
                 LLM_ERR_TARGET, "ngram.loss", f.tape, nodes, &loss, &kept);
    REFUSED_KEPT(llm_ngram_loss(&f.m, &f.ps, &f.tape, ok_ids, NULL, 2, &out, &loss, &err),
                 LLM_ERR_ARGUMENT, "ngram.loss", f.tape, nodes, &loss, &kept);
    REFUSED_KEPT(llm_ngram_loss(&f.m, &f.ps, &f.tape, ids, ok_t, 2, &out, &loss, &err),
                 LLM_ERR_TOKEN, "ngram.loss", f.tape, nodes, &loss, &kept);
    ck_assert(memcmp(&out, &kept, sizeof out) == 0);
    ck_assert_int_eq(llm_params_add_const(&f.ps, "extra.gain", 1, one, 1.0, 0, NULL), LLM_OK);
    REFUSED_KEPT(llm_ngram_forward(&f.m, &f.ps, &f.tape, ok_ids, 2, NULL, &out, &err),
                 LLM_ERR_NAME, "ngram.forward", f.tape, nodes, &out, &kept);
    destroy(&f);
}
END_TEST

/* ------------------------------------------------------------------ greedy -- */

START_TEST(greedy_takes_the_largest_logit_each_step)
{
    static const llm_ngram_config cfg = {9, 2, 3, 4};
    static const size_t prompt[3] = {0, 4, 7};
    ngram_fixture f;
    size_t out[12], text[16], n = 3, count = 0, k, j, best, nodes;
    double logits[9];
    build(&f, &cfg, 99);
    nodes = f.tape.count;
    ck_assert_int_eq(llm_ngram_greedy(&f.m, &f.ps, &f.tape, prompt, 3, 12, out, 12, &count,
                                      NULL), LLM_OK);
    ck_assert_uint_eq(f.tape.count, nodes);
    memcpy(text, prompt, sizeof prompt);
    for (k = 0; k < 12; k++) {
        size_t ctx[2];
        for (j = 0; j < 2; j++)
            ctx[j] = n + j >= 2 ? text[n + j - 2] : LLM_BOS;
        plain_logits(&f, ctx, logits);
        for (best = 0, j = 1; j < 9; j++)
            if (logits[j] > logits[best])
                best = j;
        text[n++] = best;
        if (best == LLM_EOS)
            break;
    }
    ck_assert_uint_eq(count, n - 3);
    ck_assert(memcmp(out, text + 3, count * sizeof out[0]) == 0);
    destroy(&f);
}
END_TEST

START_TEST(greedy_breaks_ties_low_and_stops_after_eos)
{
    static const llm_ngram_config cfg = {4, 2, 2, 2};
    ngram_fixture f;
    size_t out[5], count = 0, k, i;
    build(&f, &cfg, 8);
    memset(f.ps.items[4].value.data, 0, f.ps.items[4].value.size * sizeof(double));
    ck_assert_int_eq(llm_ngram_greedy(&f.m, &f.ps, &f.tape, NULL, 0, 5, out, 5, &count, NULL),
                     LLM_OK);
    ck_assert_uint_eq(count, 5);                 /* all logits 0: ID 0 every time */
    for (k = 0; k < 5; k++)
        ck_assert_uint_eq(out[k], 0);
    for (k = 0; k < 4; k++)                      /* every logit but EOS's is 0 */
        for (i = 0; i < f.ps.items[k].value.size; i++)
            f.ps.items[k].value.data[i] = 0.5;
    for (i = 0; i < 4; i++)
        f.ps.items[4].value.data[i * 4 + LLM_EOS] = 1.0;
    ck_assert_int_eq(llm_ngram_greedy(&f.m, &f.ps, &f.tape, NULL, 0, 5, out, 5, &count, NULL),
                     LLM_OK);
    ck_assert_uint_eq(count, 1);
    ck_assert_uint_eq(out[0], LLM_EOS);
    ck_assert_int_eq(llm_ngram_greedy(&f.m, &f.ps, &f.tape, NULL, 0, 0, NULL, 0, &count, NULL),
                     LLM_OK);
    ck_assert_uint_eq(count, 0);
    destroy(&f);
}
END_TEST

START_TEST(greedy_refuses_and_writes_nothing)
{
    static const llm_ngram_config cfg = {4, 2, 2, 2};
    static const size_t prompt[2] = {0, 4};
    ngram_fixture f;
    size_t out[3], count = 77, nodes;
    llm_error err;
    build(&f, &cfg, 8);
    nodes = f.tape.count;
    mark_bytes(out, sizeof out);
    REFUSED(llm_ngram_greedy(&f.m, &f.ps, &f.tape, prompt, 2, 3, out, 3, &count, &err),
            LLM_ERR_TOKEN, "ngram.greedy");
    ck_assert_str_eq(err.message, "prompt ID 4 at position 1 is not below the vocabulary 4");
    REFUSED(llm_ngram_greedy(&f.m, &f.ps, &f.tape, prompt, 1, 3, out, 2, &count, &err),
            LLM_ERR_LENGTH, "ngram.greedy");
    REFUSED(llm_ngram_greedy(&f.m, &f.ps, &f.tape, NULL, 1, 3, out, 3, &count, &err),
            LLM_ERR_ARGUMENT, "ngram.greedy");
    REFUSED(llm_ngram_greedy(&f.m, &f.ps, &f.tape, prompt, 1, 3, NULL, 3, &count, &err),
            LLM_ERR_ARGUMENT, "ngram.greedy");
    REFUSED(llm_ngram_greedy(&f.m, &f.ps, &f.tape, prompt, 1, 3, out, 3, NULL, &err),
            LLM_ERR_ARGUMENT, "ngram.greedy");
    f.ps.items[4].value.data[0] = NAN;
    REFUSED(llm_ngram_greedy(&f.m, &f.ps, &f.tape, prompt, 1, 3, out, 3, &count, &err),
            LLM_ERR_NONFINITE, "ngram.greedy <- tape.leaf");
    ck_assert(marked_bytes(out, sizeof out));
    ck_assert_uint_eq(count, 77);
    ck_assert_uint_eq(f.tape.count, nodes);
    destroy(&f);
}
END_TEST

/* ---------------------------------------------------------------- training -- */

/* Three AdamW steps on a fixed batch from seed: the parameters afterwards. */
static void three_steps(double *out, size_t n, double *losses)
{
    static const llm_ngram_config cfg = {6, 2, 2, 3};
    static const llm_adamw_config acfg = {0.9, 0.99, 1e-8, 0.01};
    static const size_t ids[6] = {0, 0, 0, 2, 2, 3}, targets[3] = {2, 3, 5};
    ngram_fixture f;
    llm_adamw opt;
    llm_var loss;
    size_t s, k, at = 0;
    build(&f, &cfg, 4);
    ck_assert_int_eq(llm_adamw_init(&opt, &f.ps, &acfg, NULL), LLM_OK);
    for (s = 0; s < 3; s++) {
        ck_assert_int_eq(llm_params_zero_grad(&f.ps, NULL), LLM_OK);
        ck_assert_int_eq(llm_ngram_loss(&f.m, &f.ps, &f.tape, ids, targets, 3, NULL, &loss,
                                        NULL), LLM_OK);
        losses[s] = value_at(&f.tape, loss, 0, 0);
        ck_assert_int_eq(llm_tape_backward(&f.tape, loss, NULL, 0, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_reset(&f.tape, NULL), LLM_OK);
        ck_assert_int_eq(llm_adamw_step(&opt, &f.ps, LLM_GRAD_UNSCALED, 0.05, NULL), LLM_OK);
    }
    for (k = 0; k < f.ps.count; at += f.ps.items[k++].value.size) {
        ck_assert_uint_le(at + f.ps.items[k].value.size, n);
        memcpy(out + at, f.ps.items[k].value.data, f.ps.items[k].value.size * sizeof *out);
    }
    llm_adamw_free(&opt);
    destroy(&f);
}

START_TEST(training_replays_to_the_bit_and_learns)
{
    double a[200], b[200], la[3], lb[3];
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    three_steps(a, 200, la);
    three_steps(b, 200, lb);
    ck_assert(memcmp(a, b, sizeof a) == 0);
    ck_assert(memcmp(la, lb, sizeof la) == 0);
    ck_assert(la[2] < la[0]);                    /* the loss of the batch falls */
}
END_TEST

Suite *ch23_neural_ngram_suite(void)
{
    const TTest *tests[] = {
        contexts_pad_with_bos_before_a_document,
        contexts_match_their_definition,
        contexts_refuse_bad_batches_and_touch_nothing,
        init_lays_out_five_tensors_in_draw_order,
        init_refuses_and_leaves_everything_as_it_was,
        forward_is_the_formula,
        gradients_match_central_differences,
        forward_and_loss_refuse_before_recording,
        greedy_takes_the_largest_logit_each_step,
        greedy_breaks_ties_low_and_stops_after_eos,
        greedy_refuses_and_writes_nothing,
        training_replays_to_the_bit_and_learns,
    };
    return suite_of("ch23 neural n-gram", tcase_of("ngram", 0, tests, COUNT(tests)));
}
