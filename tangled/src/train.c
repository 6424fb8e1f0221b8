/* train.c -- chapter 33: the learning-rate schedule, copies of the
   optimiser, graph-free evaluation and the training run with validation
   selection. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/optim.h"

llm_status llm_schedule_rate(const llm_schedule *s, size_t step, double *lr,
                             llm_error *err)
{
    double r;
    if (s == NULL || lr == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "schedule.rate",
                        "a schedule and a place for the rate are required");
    if (s->rates == NULL || s->count == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "schedule.rate", "a schedule with no rates");
    if (step == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "schedule.rate",
                        "steps are counted from 1, got 0");
    r = s->rates[(step < s->count ? step : s->count) - 1];
    if (!(r > 0.0) || !isfinite(r))
        return llm_fail(err, LLM_ERR_ARGUMENT, "schedule.rate",
                        "the rate of step %zu must be positive and finite, got %g",
                        step, r);
    *lr = r;
    return LLM_OK;
}

llm_status llm_adamw_copy(llm_adamw *out, const llm_adamw *opt, llm_error *err)
{
    llm_adamw a;
    size_t i;
    llm_status st;
    if (out == NULL || opt == NULL || out == opt)
        return llm_fail(err, LLM_ERR_ARGUMENT, "adamw.copy",
                        "an optimiser and another one to copy it into are required");
    a = *opt;
    a.count = 0;
    a.moments = llm_calloc(opt->count > 0 ? opt->count : 1, sizeof *a.moments);
    if (a.moments == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, "adamw.copy",
                        "cannot allocate the moments of %zu parameters", opt->count);
    for (i = 0; i < opt->count; i++) {
        llm_adamw_moment *mo = &a.moments[i];
        memcpy(mo->name, opt->moments[i].name, sizeof mo->name);
        a.count = i + 1;                   /* so that llm_adamw_free sees this pair */
        st = llm_tensor_copy(&mo->m, &opt->moments[i].m, err);
        if (st == LLM_OK)
            st = llm_tensor_copy(&mo->v, &opt->moments[i].v, err);
        if (st != LLM_OK) {
            llm_adamw_free(&a);
            return llm_pass(err, st, "adamw.copy");
        }
    }
    *out = a;
    return LLM_OK;
}

/* The windows of set in a new array *w (at least one slot), *n of them. */
static llm_status train_windows(const llm_train_docs *set, size_t T, size_t stride,
                                llm_window **w, size_t *n, const char *stage,
                                llm_error *err)
{
    size_t i, one = 0, room = 0;
    llm_window *list;
    llm_status st;
    if (set->docs == NULL && set->count > 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "%zu %s documents at NULL",
                        set->count, llm_partition_name(set->partition));
    for (i = 0; i < set->count; i++) {
        if ((st = llm_window_count(set->docs[i].length, T, stride, &one, err)) != LLM_OK)
            return llm_pass(err, st, stage);
        if (one > SIZE_MAX - room)
            return llm_fail(err, LLM_ERR_OVERFLOW, stage, "more windows than a size_t counts");
        room += one;
    }
    if (room == 0)
        return llm_fail(err, LLM_ERR_EMPTY, stage,
                        "the %s documents hold no window of %zu inputs",
                        llm_partition_name(set->partition), T);
    if (room > SIZE_MAX / sizeof *list || (list = llm_malloc(room * sizeof *list)) == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, stage, "no room for %zu windows", room);
    if ((st = llm_windows(set->docs, set->count, T, stride, list, room, n, err)) != LLM_OK) {
        free(list);
        return llm_pass(err, st, stage);
    }
    *w = list;
    return LLM_OK;
}

/* The loss of windows w[0 .. n-1] in batches of batch, into *acc; ids and
   targets have room for batch * T. */
static llm_status train_measure(const llm_decoder *dec, llm_params *ps, llm_tape *tape,
                                const llm_train_docs *set, const llm_window *w, size_t n,
                                size_t T, size_t batch, size_t *ids, size_t *targets,
                                llm_loss_sum *acc, const char *stage, llm_error *err)
{
    const size_t mark = llm_tape_mark(tape);
    llm_loss_sum sum = {0.0, 0};
    size_t nb = 0, k, first = 0, count = 0;
    const llm_tensor *v;
    llm_var loss;
    llm_status st = llm_batch_count(n, batch, &nb, err);
    for (k = 0; st == LLM_OK && k < nb; k++) {
        st = llm_batch_span(n, batch, k, &first, &count, err);
        if (st == LLM_OK)
            st = llm_batch_tokens(set->docs, set->count, w, n, first, count, T, ids,
                                  targets, err);
        if (st == LLM_OK)
            st = llm_decoder_loss(dec, ps, tape, ids, targets, count, T, NULL, &loss, err);
        if (st == LLM_OK && (st = llm_tape_value(tape, loss, &v, err)) == LLM_OK)
            st = llm_loss_add(&sum, v->data[v->offset] * (double)(count * T), count * T,
                              err);
        if (llm_tape_mark(tape) > mark)
            llm_tape_rewind(tape, mark, NULL);     /* no graph survives a batch */
    }
    if (st != LLM_OK)
        return llm_pass(err, st, stage);
    *acc = sum;
    return LLM_OK;
}

llm_status llm_evaluate(const llm_decoder *dec, llm_params *ps, llm_tape *tape,
                        const llm_train_docs *set, size_t T, size_t stride, size_t batch,
                        llm_loss_sum *out, llm_error *err)
{
    llm_window *w = NULL;
    size_t n = 0, *ids, *targets;
    llm_loss_sum acc = {0.0, 0};
    llm_status st;
    if (dec == NULL || ps == NULL || tape == NULL || set == NULL || out == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "optim.evaluate",
                        "a decoder, its parameters, a tape, documents and a sum are "
                        "required");
    if (T == 0 || stride == 0 || batch == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "optim.evaluate",
                        "T, the stride and the batch must be positive, got %zu, %zu, %zu",
                        T, stride, batch);
    if (T > dec->config.context)
        return llm_fail(err, LLM_ERR_ARGUMENT, "optim.evaluate",
                        "windows of %zu inputs do not fit a context of %zu positions", T,
                        dec->config.context);
    if (set->partition == LLM_TEST)
        return llm_fail(err, LLM_ERR_SPLIT, "optim.evaluate",
                        "the test partition is not measured while a model is chosen");
    if (batch > SIZE_MAX / T / sizeof *ids)
        return llm_fail(err, LLM_ERR_OVERFLOW, "optim.evaluate",
                        "batches of %zu windows of %zu inputs", batch, T);
    if ((st = train_windows(set, T, stride, &w, &n, "optim.evaluate", err)) != LLM_OK)
        return st;
    ids = llm_malloc(batch * T * sizeof *ids);
    targets = llm_malloc(batch * T * sizeof *targets);
    if (ids == NULL || targets == NULL)
        st = llm_fail(err, LLM_ERR_ALLOC, "optim.evaluate", "no room for a batch");
    else
        st = train_measure(dec, ps, tape, set, w, n, T, batch, ids, targets, &acc,
                           "optim.evaluate", err);
    free(ids);
    free(targets);
    free(w);
    if (st == LLM_OK)
        *out = acc;
    return st;
}

void llm_train_result_free(llm_train_result *r)
{
    if (r == NULL)
        return;
    llm_params_free(&r->params);
    llm_adamw_free(&r->opt);
    free(r->points);
    memset(r, 0, sizeof *r);
}

/* Everything a run makes, freed together whatever happens. */
typedef struct train_run {
    const llm_decoder *dec;
    const llm_train_config *cfg;
    const llm_train_docs *set[2];   /* training, validation */
    llm_window *w[2];               /* their windows; w[0] in the epoch's order */
    size_t n[2];
    llm_window *order;              /* the update epoch: w[0] shuffled */
    size_t *ids, *targets;          /* room for the largest batch */
    llm_params ps;                  /* the parameters being trained */
    llm_adamw opt;                  /* and their optimiser */
    llm_tape tape;
    llm_train_result best;          /* the selection so far, and every checkpoint */
    llm_train_observer observe;
    void *ctx;
} train_run;

static void train_run_free(train_run *r)
{
    free(r->w[0]);
    free(r->w[1]);
    free(r->order);
    free(r->ids);
    free(r->targets);
    llm_params_free(&r->ps);
    llm_adamw_free(&r->opt);
    llm_tape_free(&r->tape);
    llm_train_result_free(&r->best);
}

static void train_tell(const train_run *r, llm_train_event *ev)
{
    if (r->observe != NULL)
        r->observe(r->ctx, ev);
}

/* The plan's sizes, its clip and every rate it will use. */
static llm_status train_check(const llm_decoder *dec, const llm_adamw *opt,
                              const llm_train_config *c, const llm_train_docs *train,
                              const llm_train_docs *val, llm_error *err)
{
    const double wd = opt->config.weight_decay;
    size_t s;
    double lr = 0.0;
    llm_status st;
    if (c->steps == 0 || c->T == 0 || c->stride == 0 || c->batch == 0
        || c->train_batch == 0 || c->validation_batch == 0 || c->every == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "optim.train",
                        "steps, T, stride, the three batch sizes and the checkpoint "
                        "interval must be positive");
    if (c->T > dec->config.context)
        return llm_fail(err, LLM_ERR_ARGUMENT, "optim.train",
                        "windows of %zu inputs do not fit a context of %zu positions",
                        c->T, dec->config.context);
    if (!(c->clip > 0.0) || !isfinite(c->clip))
        return llm_fail(err, LLM_ERR_ARGUMENT, "optim.train",
                        "the clip must be positive and finite, got %g", c->clip);
    for (s = 1; s <= c->steps && s <= c->schedule.count + 1; s++) {
        if ((st = llm_schedule_rate(&c->schedule, s, &lr, err)) != LLM_OK)
            return llm_pass(err, st, "optim.train");
        if (wd != 0.0 && !(lr * wd > 0.0 && lr * wd < 1.0))
            return llm_fail(err, LLM_ERR_ARGUMENT, "optim.train",
                            "step %zu: lr * weight_decay = %g * %g is not in (0, 1)", s,
                            lr, wd);
    }
    if (train->partition != LLM_TRAIN)
        return llm_fail(err, LLM_ERR_SPLIT, "optim.train",
                        "updates read the training partition only, not the %s partition",
                        llm_partition_name(train->partition));
    if (val->partition != LLM_VALIDATION)
        return llm_fail(err, LLM_ERR_SPLIT, "optim.train",
                        "selection reads the validation partition only, not the %s "
                        "partition", llm_partition_name(val->partition));
    return LLM_OK;
}

/* The checkpoint after step s: both losses measured, the point kept, and
   the state copied when its validation loss is the lowest so far. */
static llm_status train_checkpoint(train_run *r, size_t s, llm_error *err)
{
    const llm_train_config *c = r->cfg;
    llm_train_event ev;
    llm_loss_sum acc[2] = {{0.0, 0}, {0.0, 0}};
    double mean[2] = {0.0, 0.0};
    llm_params ps;
    llm_adamw opt;
    size_t p;
    llm_status st = LLM_OK;
    for (p = 0; p < 2 && st == LLM_OK; p++) {
        st = train_measure(r->dec, &r->ps, &r->tape, r->set[p], r->w[p], r->n[p], c->T,
                           p == 0 ? c->train_batch : c->validation_batch, r->ids,
                           r->targets, &acc[p], "optim.train", err);
        if (st == LLM_OK)
            st = llm_loss_mean(&acc[p], &mean[p], err);
    }
    if (st != LLM_OK)
        return llm_pass(err, st, "optim.train");
    r->best.points[r->best.count].step = s;
    r->best.points[r->best.count].train = mean[0];
    r->best.points[r->best.count].validation = mean[1];
    r->best.count++;
    r->best.train_targets = acc[0].tokens;
    r->best.validation_targets = acc[1].tokens;
    memset(&ev, 0, sizeof ev);
    ev.kind = LLM_TRAIN_MEASURE;
    ev.step = s;
    ev.train = mean[0];
    ev.validation = mean[1];
    ev.selected = r->best.count == 1 || mean[1] < r->best.validation;  /* strictly */
    if (ev.selected) {
        if ((st = llm_params_copy(&ps, &r->ps, err)) != LLM_OK)
            return llm_pass(err, st, "optim.train");
        if ((st = llm_adamw_copy(&opt, &r->opt, err)) != LLM_OK) {
            llm_params_free(&ps);
            return llm_pass(err, st, "optim.train");
        }
        llm_params_free(&r->best.params);
        llm_adamw_free(&r->best.opt);
        r->best.params = ps;
        r->best.opt = opt;
        r->best.selected = s;
        r->best.validation = mean[1];
    }
    train_tell(r, &ev);
    return LLM_OK;
}

/* Update s: FORWARD, BACKWARD, FINITE, CLIP, UPDATE, ZERO. */
static llm_status train_step(train_run *r, size_t s, llm_error *err)
{
    const llm_train_config *c = r->cfg;
    llm_train_event ev;
    size_t nb = 0, first = 0, count = 0, i, j;
    const llm_tensor *v;
    llm_var loss;
    llm_status st;
    memset(&ev, 0, sizeof ev);
    ev.step = s;
    st = llm_batch_count(r->n[0], c->batch, &nb, err);
    if (st == LLM_OK)
        st = llm_batch_span(r->n[0], c->batch, (s - 1) % nb, &first, &count, err);
    if (st == LLM_OK)
        st = llm_batch_tokens(r->set[0]->docs, r->set[0]->count, r->order, r->n[0], first,
                              count, c->T, r->ids, r->targets, err);
    if (st == LLM_OK)
        st = llm_decoder_loss(r->dec, &r->ps, &r->tape, r->ids, r->targets, count, c->T,
                              NULL, &loss, err);
    if (st == LLM_OK)
        st = llm_tape_value(&r->tape, loss, &v, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "optim.train");
    ev.kind = LLM_TRAIN_FORWARD;
    ev.batch = (s - 1) % nb;
    ev.loss = v->data[v->offset];
    train_tell(r, &ev);
    st = llm_tape_backward(&r->tape, loss, NULL, 0, err);
    if (st == LLM_OK)
        st = llm_tape_reset(&r->tape, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "optim.train");
    ev.kind = LLM_TRAIN_BACKWARD;
    train_tell(r, &ev);
    if (!isfinite(ev.loss))
        return llm_fail(err, LLM_ERR_NONFINITE, "optim.train",
                        "step %zu: the batch's loss is %g", s, ev.loss);
    for (i = 0; i < r->ps.count; i++)
        for (j = 0; j < r->ps.items[i].grad.size; j++)
            if (!isfinite(r->ps.items[i].grad.data[j]))
                return llm_fail(err, LLM_ERR_NONFINITE, "optim.train",
                                "step %zu: the gradient of '%s' at coordinate %zu is %g", s,
                                r->ps.items[i].name, j, r->ps.items[i].grad.data[j]);
    ev.kind = LLM_TRAIN_FINITE;
    train_tell(r, &ev);
    if ((st = llm_grad_clip_multiplier(&r->ps, c->clip, &ev.norm, &ev.mu, err)) != LLM_OK)
        return llm_pass(err, st, "optim.train");
    ev.kind = LLM_TRAIN_CLIP;
    train_tell(r, &ev);
    st = llm_schedule_rate(&c->schedule, s, &ev.lr, err);
    if (st == LLM_OK)
        st = llm_adamw_step(&r->opt, &r->ps, ev.mu, ev.lr, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "optim.train");
    ev.kind = LLM_TRAIN_UPDATE;
    train_tell(r, &ev);
    if ((st = llm_params_zero_grad(&r->ps, err)) != LLM_OK)
        return llm_pass(err, st, "optim.train");
    ev.kind = LLM_TRAIN_ZERO;
    train_tell(r, &ev);
    return LLM_OK;
}

llm_status llm_train(const llm_decoder *dec, const llm_params *ps, const llm_adamw *opt,
                     const llm_train_docs *train, const llm_train_docs *validation,
                     const llm_train_config *cfg, llm_train_observer observe, void *ctx,
                     llm_train_result *out, llm_error *err)
{
    train_run r;
    size_t s, big, points;
    llm_status st;
    if (dec == NULL || ps == NULL || opt == NULL || train == NULL || validation == NULL
        || cfg == NULL || out == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "optim.train",
                        "a decoder, its parameters, an optimiser, training and "
                        "validation documents, a plan and a result are required");
    if ((st = train_check(dec, opt, cfg, train, validation, err)) != LLM_OK)
        return st;
    memset(&r, 0, sizeof r);
    r.dec = dec;
    r.cfg = cfg;
    r.set[0] = train;
    r.set[1] = validation;
    r.observe = observe;
    r.ctx = ctx;
    big = cfg->batch;
    big = cfg->train_batch > big ? cfg->train_batch : big;
    big = cfg->validation_batch > big ? cfg->validation_batch : big;
    points = cfg->steps / cfg->every + 2;            /* step 0, every k, and S */
    if (big > SIZE_MAX / cfg->T / sizeof *r.ids || cfg->steps == SIZE_MAX)
        return llm_fail(err, LLM_ERR_OVERFLOW, "optim.train",
                        "batches of %zu windows of %zu inputs", big, cfg->T);
    st = train_windows(train, cfg->T, cfg->stride, &r.w[0], &r.n[0], "optim.train", err);
    if (st == LLM_OK)
        st = train_windows(validation, cfg->T, cfg->stride, &r.w[1], &r.n[1], "optim.train",
                           err);
    if (st == LLM_OK) {
        r.order = llm_malloc(r.n[0] * sizeof *r.order);
        r.ids = llm_malloc(big * cfg->T * sizeof *r.ids);
        r.targets = llm_malloc(big * cfg->T * sizeof *r.targets);
        r.best.points = llm_calloc(points, sizeof *r.best.points);
        if (r.order == NULL || r.ids == NULL || r.targets == NULL || r.best.points == NULL)
            st = llm_fail(err, LLM_ERR_ALLOC, "optim.train", "no room for the run");
    }
    if (st == LLM_OK) {
        memcpy(r.order, r.w[0], r.n[0] * sizeof *r.order);
        st = llm_shuffle_windows(r.order, r.n[0], cfg->seed, err);
    }
    if (st == LLM_OK)
        st = llm_params_copy(&r.ps, ps, err);
    if (st == LLM_OK)
        st = llm_params_zero_grad(&r.ps, err);
    if (st == LLM_OK)
        st = llm_adamw_copy(&r.opt, opt, err);
    if (st == LLM_OK)
        st = llm_tape_init(&r.tape, 256, err);
    if (st == LLM_OK)
        st = train_checkpoint(&r, 0, err);
    for (s = 1; st == LLM_OK && s <= cfg->steps; s++) {
        st = train_step(&r, s, err);
        if (st == LLM_OK && (s % cfg->every == 0 || s == cfg->steps))
            st = train_checkpoint(&r, s, err);
    }
    if (st != LLM_OK) {
        train_run_free(&r);
        return llm_pass(err, st, "optim.train");
    }
    r.best.train_windows = r.n[0];
    r.best.validation_windows = r.n[1];
    *out = r.best;
    memset(&r.best, 0, sizeof r.best);
    train_run_free(&r);
    return LLM_OK;
}
