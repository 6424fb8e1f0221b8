/* ch33-training-selection -- training by a plan, choosing the state on
   validation. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/fixtures.h"

/* Short names for the fixture's parts (llm/fixtures.h). */
static const llm_train_docs *const train_set = &llm_fix33_train,
                            *const val_set = &llm_fix33_validation;
static const llm_train_config *const plan_cfg = &llm_fix33_plan;
/* The validation documents of the fixture, labelled test: refused. */
static const llm_train_docs test_set = {llm_fix33_val_docs, 2, LLM_TEST};
enum { LONG_STEPS = 80, LONG_EVERY = 4, MAX_EVENTS = 6 * LONG_STEPS + LONG_STEPS + 2 };

/* What setup builds and the sections read: the model, its list and
   optimiser as training starts, and the result of the plan's run. */
static struct {
    llm_decoder *dec;
    llm_params *ps;
    llm_adamw *opt;
    llm_train_result *result;
} fix;

/* Every event of a run, in the order the observer heard them. */
typedef struct heard {
    llm_train_event ev[MAX_EVENTS];
    size_t n, lost;              /* events kept, events past the room */
} heard;

static void listen(void *ctx, const llm_train_event *event)
{
    heard *h = ctx;
    if (h->n < MAX_EVENTS)
        h->ev[h->n++] = *event;
    else
        h->lost++;
}

static const char *kind_name(llm_train_kind k)
{
    static const char *const names[] = {"measure", "forward", "backward", "finite",
                                        "clip",    "update",  "zero"};
    return (size_t)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

/* 1 when h holds, for each update in turn, the six events of one update
   in their order, each checkpoint's MEASURE where the plan puts it, and
   nothing else. */
static int in_order(const heard *h, const llm_train_config *cfg)
{
    size_t i = 0, s, k;
    if (h->lost != 0 || h->n == 0 || h->ev[i].kind != LLM_TRAIN_MEASURE || h->ev[i++].step)
        return 0;
    for (s = 1; s <= cfg->steps; s++) {
        for (k = LLM_TRAIN_FORWARD; k <= LLM_TRAIN_ZERO; k++, i++)
            if (i >= h->n || h->ev[i].kind != (llm_train_kind)k || h->ev[i].step != s)
                return 0;
        if (s % cfg->every == 0 || s == cfg->steps) {
            if (i >= h->n || h->ev[i].kind != LLM_TRAIN_MEASURE || h->ev[i].step != s)
                return 0;
            i++;
        }
    }
    return i == h->n;
}

static void release_adamw(void *opt)
{
    llm_adamw_free(opt);
}

static void release_result(void *r)
{
    llm_train_result_free(r);
}

/* The fixture's decoder drawn from seed 33, its optimiser at step 0, and
   room for the plan's result. */
static void setup(llm_demo *d)
{
    llm_fix33 f;
    fix.result = llm_own(d, sizeof *fix.result, release_result);
    if (fix.result == NULL || !llm_own_fix33(d, &f)) {
        fix.result = NULL;
        return;
    }
    fix.dec = f.dec;
    fix.ps = f.ps;
    fix.opt = f.opt;
}

/* The model, the windows, the one shuffled epoch and the plan. */
static void plan(llm_demo *d)
{
    const llm_train_config *c = plan_cfg;
    llm_window w[20], order[20];
    size_t n = 0, nb = 0, k, first = 0, count = 0, ids[4], targets[4], nv = 0;
    const size_t formula = 5 * 4 + 1 * (2 * 4 + 4 * 4 * 4 + 3 * 4 * 4) + 4;
    llm_window wv[14];
    if (fix.result == NULL)
        return;
    printf("model: V=5 D=4 H=2 F=4 L=1 P=2, seed %s: %s tensors, %s parameters"
           " (V D + L (2 D + 4 D^2 + 3 D F) + D = %zu)\n",
           llm_put(d, "seed", llm_text("%u", (unsigned)llm_fix33_seed)),
           llm_put(d, "tensors", llm_text("%zu", fix.ps->count)),
           llm_put(d, "params", llm_text("%zu", llm_count_scalars(fix.ps))), formula);
    llm_demo_check(d, llm_count_scalars(fix.ps) == formula, "the count is the formula's");
    if (!(LLM_TRY(d, llm_windows(train_set->docs, 2, c->T, c->stride, w, 20, &n, &d->err))
          && LLM_TRY(d, llm_windows(val_set->docs, 2, c->T, c->stride, wv, 14, &nv, &d->err))
          && LLM_TRY(d, llm_batch_count(n, c->batch, &nb, &d->err))))
        return;
    printf("windows of T=%s, stride %zu: train %s, validation %s\n",
           llm_put(d, "T", llm_text("%zu", c->T)), c->stride,
           llm_put(d, "train_windows", llm_text("%zu", n)),
           llm_put(d, "val_windows", llm_text("%zu", nv)));
    memcpy(order, w, sizeof w);
    if (!LLM_TRY(d, llm_shuffle_windows(order, n, c->seed, &d->err)))
        return;
    printf("update epoch: shuffled with seed %zu into %s batches of %s; the %s updates"
           " use batches 0 to %zu\n", (size_t)c->seed, llm_put(d, "nb", llm_text("%zu", nb)),
           llm_put(d, "batch", llm_text("%zu", c->batch)),
           llm_put(d, "steps", llm_text("%zu", c->steps)), c->steps - 1);
    for (k = 0; k < nb; k++) {
        if (!(LLM_TRY(d, llm_batch_span(n, c->batch, k, &first, &count, &d->err))
              && LLM_TRY(d, llm_batch_tokens(train_set->docs, 2, order, n, first, count, c->T,
                                             ids, targets, &d->err))))
            return;
        printf("  batch %zu: windows %zu:%zu %zu:%zu, inputs %s %s, targets %s %s%s\n", k,
               order[first].doc, order[first].start, order[first + 1].doc,
               order[first + 1].start, llm_sizes(ids, 2), llm_sizes(ids + 2, 2),
               llm_sizes(targets, 2), llm_sizes(targets + 2, 2),
               k < c->steps ? "" : "  (not used)");
        llm_row(d, "epoch", llm_text("%zu", k),
                llm_text("%zu:%zu, %zu:%zu", order[first].doc, order[first].start,
                         order[first + 1].doc, order[first + 1].start),
                llm_text("%s %s", llm_sizes(ids, 2), llm_sizes(ids + 2, 2)),
                llm_text("%s %s", llm_sizes(targets, 2), llm_sizes(targets + 2, 2)),
                k < c->steps ? llm_text("%zu", k + 1) : "", NULL);
    }
    printf("measured in order: training in batches of %s, validation in batches of %s;"
           " a checkpoint every %s steps\n",
           llm_put(d, "train_batch", llm_text("%zu", c->train_batch)),
           llm_put(d, "validation_batch", llm_text("%zu", c->validation_batch)),
           llm_put(d, "every", llm_text("%zu", c->every)));
    printf("schedule %s, clip %s, AdamW beta1 %s beta2 %s eps %s, weight decay %s"
           " (not on the gains)\n",
           llm_put(d, "schedule", llm_trims(llm_fix33_rates, 8, 3)),
           llm_put(d, "clip", llm_trim(c->clip, 2)), llm_trim(llm_fix33_adamw.beta1, 3),
           llm_trim(llm_fix33_adamw.beta2, 3), llm_text("%g", llm_fix33_adamw.eps),
           llm_put(d, "wd", llm_trim(llm_fix33_adamw.weight_decay, 3)));
    llm_put(d, "long_steps", llm_text("%d", LONG_STEPS));
    llm_put(d, "long_every", llm_text("%d", LONG_EVERY));
}

static heard events;   /* the plan's run, as its observer heard it */

/* The plan's run: its events, its checkpoints, its selection, and the
   caller's list and optimiser afterwards. */
static void run(llm_demo *d)
{
    llm_params *before = llm_own_params(d);
    llm_adamw *opt0 = llm_own(d, sizeof *opt0, release_adamw);
    const llm_train_result *r = fix.result;
    size_t i, clipped = 0, steps = 0;
    char order[160] = "";
    if (r == NULL || opt0 == NULL
        || !(LLM_TRY(d, llm_params_copy(before, fix.ps, &d->err))
             && LLM_TRY(d, llm_adamw_copy(opt0, fix.opt, &d->err))
             && LLM_TRY(d, llm_train(fix.dec, fix.ps, fix.opt, train_set, val_set, plan_cfg,
                                     listen, &events, fix.result, &d->err)))) {
        fix.result = NULL;
        return;
    }
    for (i = 0; i < events.n && events.ev[i].step <= 1; i++)
        if (events.ev[i].step == 1)
            snprintf(order + strlen(order), sizeof order - strlen(order), "%s%s",
                     order[0] != '\0' ? " > " : "", kind_name(events.ev[i].kind));
    printf("events of update 1: %s\n", llm_put(d, "order", order));
    printf("every update in that order, a checkpoint where the plan puts one: %s"
           " (%s events)\n", llm_put(d, "order_ok", llm_yes(in_order(&events, plan_cfg))),
           llm_put(d, "events", llm_text("%zu", events.n)));
    llm_demo_check(d, in_order(&events, plan_cfg), "the events come in the plan's order");
    for (i = 0; i < events.n; i++) {
        const llm_train_event *e = &events.ev[i];
        const double factor = e->mu.factor / e->mu.divisor;
        if (e->kind == LLM_TRAIN_FORWARD)
            printf("update %zu: batch %zu, loss %s", e->step, e->batch, llm_num(e->loss, 6));
        if (e->kind == LLM_TRAIN_CLIP) {
            printf(", norm %s, factor %s", llm_num(e->norm, 6), llm_num(factor, 6));
            clipped += factor < 1.0;
            steps++;
        }
        if (e->kind == LLM_TRAIN_UPDATE) {
            printf(", rate %s\n", llm_trim(e->lr, 3));
            llm_row(d, "updates", llm_text("%zu", e->step), llm_text("%zu", e->batch),
                    llm_num(events.ev[i - 4].loss, 6), llm_num(events.ev[i - 1].norm, 6),
                    llm_num(events.ev[i - 1].mu.factor / events.ev[i - 1].mu.divisor, 6),
                    llm_trim(e->lr, 3), NULL);
        }
        if (e->kind == LLM_TRAIN_MEASURE) {
            printf("checkpoint %zu: train %s, validation %s%s\n", e->step, llm_num(e->train, 6),
                   llm_num(e->validation, 6), e->selected ? " *" : "");
            llm_row(d, "checkpoints", llm_text("%zu", e->step), llm_num(e->train, 6),
                    llm_num(e->validation, 6), e->selected ? "yes" : "", NULL);
        }
    }
    printf("updates clipped: %s of %zu; first norm %s, first factor %s\n",
           llm_put(d, "clipped", llm_text("%zu", clipped)), steps,
           llm_put(d, "norm1", llm_num(events.ev[4].norm, 6)),
           llm_put(d, "factor1", llm_num(events.ev[4].mu.factor / events.ev[4].mu.divisor, 6)));
    printf("selected: step %s, validation %s; %s checkpoints over %s training and %s"
           " validation targets\n", llm_put(d, "selected", llm_text("%zu", r->selected)),
           llm_put(d, "selected_val", llm_num(r->validation, 6)), llm_text("%zu", r->count),
           llm_put(d, "train_targets", llm_text("%zu", r->train_targets)),
           llm_put(d, "val_targets", llm_text("%zu", r->validation_targets)));
    llm_demo_check(d, r->selected == plan_cfg->steps, "the plan's run selects its last step");
    printf("the caller's list and optimiser after the run: values bit-identical %s,"
           " optimiser at step %zu with its moments bit-identical %s\n",
           llm_put(d, "input_values", llm_yes(llm_same_values(before, fix.ps))), fix.opt->steps,
           llm_put(d, "input_opt", llm_yes(llm_same_adamw(opt0, fix.opt))));
    llm_demo_check(d, llm_same_values(before, fix.ps) && llm_same_adamw(opt0, fix.opt),
                   "the run leaves its input untouched");
}

/* The nonzero gradient coordinates of ps. */
static size_t nonzero_grads(const llm_params *ps)
{
    size_t i, j, n = 0;
    for (i = 0; i < ps->count; i++)
        for (j = 0; j < ps->items[i].grad.size; j++)
            n += ps->items[i].grad.data[j] != 0.0;
    return n;
}

/* The selected state measured again, on a tape of the demo's, in three
   batchings: the same mean over targets, no node left, no gradient. */
static void measuring(llm_demo *d)
{
    static const size_t sizes[3] = {1, 4, 14};
    llm_tape *tape = llm_own_fresh_tape(d, 64);
    llm_train_result *r = fix.result;
    llm_loss_sum acc = {0.0, 0};
    size_t k, nodes = 0, grads = 0;
    double mean = 0.0, at4 = 0.0;
    if (r == NULL || tape == NULL)
        return;
    for (k = 0; k < 3; k++) {
        if (!(LLM_TRY(d, llm_evaluate(fix.dec, &r->params, tape, val_set, plan_cfg->T,
                                      plan_cfg->stride, sizes[k], &acc, &d->err))
              && LLM_TRY(d, llm_loss_mean(&acc, &mean, &d->err))))
            return;
        nodes += tape->count;
        grads += nonzero_grads(&r->params);
        at4 = sizes[k] == plan_cfg->validation_batch ? mean : at4;
        printf("validation of the selected state in batches of %zu: %s over %zu targets\n",
               sizes[k], llm_num(mean, 12), acc.tokens);
        llm_row(d, "batchings", llm_text("%zu", sizes[k]),
                llm_text("%zu", (acc.tokens / plan_cfg->T + sizes[k] - 1) / sizes[k]),
                llm_text("%zu", acc.tokens), llm_num(mean, 12), NULL);
    }
    printf("nodes left on the tape: %s; nonzero gradient coordinates: %s\n",
           llm_put(d, "nodes_left", llm_text("%zu", nodes)),
           llm_put(d, "grads_touched", llm_text("%zu", grads)));
    printf("the same as the run's measurement, bit for bit: %s\n",
           llm_put(d, "remeasured", llm_yes(memcmp(&at4, &r->validation, sizeof at4) == 0)));
    llm_demo_check(d, nodes == 0 && grads == 0, "measuring leaves no node and no gradient");
    llm_demo_check(d, memcmp(&at4, &r->validation, sizeof at4) == 0,
                   "the result holds the state its validation loss was measured on");
}

/* The plan's run again, from the same list, optimiser and seed. */
static void replay(llm_demo *d)
{
    llm_train_result *again = llm_own(d, sizeof *again, release_result);
    const llm_train_result *r = fix.result;
    int points, state;
    if (r == NULL || again == NULL
        || !LLM_TRY(d, llm_train(fix.dec, fix.ps, fix.opt, train_set, val_set, plan_cfg,
                                 NULL, NULL, again, &d->err)))
        return;
    points = again->count == r->count
             && memcmp(again->points, r->points, r->count * sizeof *r->points) == 0;
    state = again->selected == r->selected && llm_same_values(&again->params, &r->params)
            && llm_same_adamw(&again->opt, &r->opt);
    printf("replay from seed %u: %zu checkpoints bit-identical %s; selected state (%zu"
           " numbers and the optimiser's moments) bit-identical %s\n", (unsigned)llm_fix33_seed,
           r->count, llm_put(d, "replay_points", llm_yes(points)),
           llm_count_scalars(&r->params), llm_put(d, "replay_state", llm_yes(state)));
    llm_demo_check(d, points && state, "a bitwise replay");
}

/* The plan run on to LONG_STEPS updates, the last rate kept, measured
   every LONG_EVERY steps: where the training loss is lowest and where
   validation selects. */
static void longer(llm_demo *d)
{
    llm_train_config cfg = *plan_cfg;
    llm_train_result *r = llm_own(d, sizeof *r, release_result);
    size_t i, low = 0, sel = 0;
    cfg.steps = LONG_STEPS;
    cfg.every = LONG_EVERY;
    if (r == NULL
        || !LLM_TRY(d, llm_train(fix.dec, fix.ps, fix.opt, train_set, val_set, &cfg, NULL,
                                 NULL, r, &d->err)))
        return;
    for (i = 1; i < r->count; i++)
        low = r->points[i].train < r->points[low].train ? i : low;
    for (i = 0; i < r->count; i++)
        sel = r->points[i].step == r->selected ? i : sel;
    for (i = 0; i < r->count; i++) {
        const llm_train_point *p = &r->points[i];
        const char *mark = p->step == r->selected ? "selected"
                           : i == low             ? "lowest training loss"
                                                  : "";
        printf("step %2zu: train %s, validation %s %s\n", p->step, llm_num(p->train, 6),
               llm_num(p->validation, 6), mark);
        llm_row(d, "long", llm_text("%zu", p->step), llm_num(p->train, 6),
                llm_num(p->validation, 6), p->step == r->selected ? "1" : "0",
                i == low ? "1" : "0", NULL);
    }
    printf("validation selects step %s (%s); the training loss is lowest at step %s (%s),"
           " where validation is %s\n",
           llm_put(d, "long_selected", llm_text("%zu", r->selected)),
           llm_put(d, "long_selected_val", llm_num(r->validation, 6)),
           llm_put(d, "long_low", llm_text("%zu", r->points[low].step)),
           llm_put(d, "long_low_train", llm_num(r->points[low].train, 6)),
           llm_put(d, "long_low_val", llm_num(r->points[low].validation, 6)));
    printf("training loss at the selected step %s; validation worse at the lowest training"
           " loss by %s nats\n",
           llm_put(d, "long_selected_train",
                   llm_num(r->points[sel].train, 6)),
           llm_put(d, "long_gap", llm_num(r->points[low].validation - r->validation, 6)));
    llm_demo_check(d, r->points[low].step != r->selected,
                   "training and validation disagree on the best step");
}

static void refusals(llm_demo *d)
{
    static const double bad_rates[5] = {0.04, 0.04, 0.025, 0.025, 0.0};
    llm_train_config no_clip = *plan_cfg, bad_schedule = *plan_cfg, too_long = *plan_cfg;
    llm_params *nan_ps = llm_own_params(d);
    llm_tape *tape = llm_own_fresh_tape(d, 64);
    llm_train_result out, kept;
    llm_loss_sum acc = {77.0, 77};
    int untouched;
    if (fix.result == NULL || tape == NULL
        || !LLM_TRY(d, llm_params_copy(nan_ps, fix.ps, &d->err)))
        return;
    nan_ps->items[0].value.data[0] = NAN;
    no_clip.clip = 0.0;
    bad_schedule.schedule.rates = bad_rates;
    bad_schedule.schedule.count = 5;
    too_long.T = 3;
    memset(&out, 0x5a, sizeof out);
    memcpy(&kept, &out, sizeof out);
    llm_refuse_as(d, "the test partition for selection",
                  llm_train(fix.dec, fix.ps, fix.opt, train_set, &test_set, plan_cfg, NULL,
                            NULL, &out, &d->err), LLM_ERR_SPLIT);
    printf("  %s\n", llm_put(d, "split_message", d->err.message));
    llm_refuse_as(d, "the test partition for updates",
                  llm_train(fix.dec, fix.ps, fix.opt, &test_set, val_set, plan_cfg, NULL,
                            NULL, &out, &d->err), LLM_ERR_SPLIT);
    llm_refuse_as(d, "the test partition measured during training",
                  llm_evaluate(fix.dec, fix.ps, tape, &test_set, 2, 1, 4, &acc, &d->err),
                  LLM_ERR_SPLIT);
    llm_refuse_as(d, "a clip of 0",
                  llm_train(fix.dec, fix.ps, fix.opt, train_set, val_set, &no_clip, NULL,
                            NULL, &out, &d->err), LLM_ERR_ARGUMENT);
    llm_refuse_as(d, "a schedule whose fifth rate is 0",
                  llm_train(fix.dec, fix.ps, fix.opt, train_set, val_set, &bad_schedule,
                            NULL, NULL, &out, &d->err), LLM_ERR_ARGUMENT);
    printf("  %s\n", llm_put(d, "rate_message", d->err.message));
    llm_refuse_as(d, "windows of 3 inputs for a context of 2",
                  llm_train(fix.dec, fix.ps, fix.opt, train_set, val_set, &too_long, NULL,
                            NULL, &out, &d->err), LLM_ERR_ARGUMENT);
    llm_refuse_as(d, "a parameter that is NaN",
                  llm_train(fix.dec, nan_ps, fix.opt, train_set, val_set, plan_cfg, NULL,
                            NULL, &out, &d->err), LLM_ERR_NONFINITE);
    untouched = memcmp(&out, &kept, sizeof out) == 0 && acc.tokens == 77 && tape->count == 0;
    printf("refused calls changed nothing: %s\n", llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "refused calls changed nothing");
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {plan, run, measuring, replay, longer, refusals,
                                            NULL};
    return llm_demo_main(argc, argv, "ch33-training-selection", setup, sections);
}
