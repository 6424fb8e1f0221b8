/* ch23-neural-ngram -- the first trained neural language model. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/data.h"
#include "llm/evidence.h"
#include "llm/metrics.h"
#include "llm/model.h"
#include "llm/optim.h"
#include "llm/tokenizer.h"

enum { C = 2, D = 8, F = 32, BATCH = 64, EVAL_BATCH = 512, STEPS = 600, EVERY = 50,
       REPLAY = 50, NEW = 32 };
static const double LR = 0.02;
static const uint64_t SEED = 23;
static const llm_adamw_config ADAMW = {0.9, 0.99, 1e-8, 0.01};
/* What every section shares: the tokenizer, the encoded training and
   validation documents and their windows of T = 1, one per target. */
static struct {
    const llm_tokenizer *tok;
    const llm_doc *docs[2];
    size_t ndocs[2];
    llm_window *windows[2];
    size_t nwindows[2];
} book;

static void release_nothing(void *p)
{
    (void)p;
}

static void examples(llm_demo *d)
{
    static const char *const key[2] = {"train", "val"};
    const llm_corpus *c = llm_own_corpus(d);
    size_t p, i, one = 0, room;
    book.tok = llm_own_book_tokenizer(d, c);
    for (p = 0; p < 2 && book.tok != NULL; p++) {
        if ((book.docs[p] = llm_own_encoded(d, book.tok, c, p == 0 ? LLM_TRAIN : LLM_VALIDATION,
                                            &book.ndocs[p])) == NULL)
            return;
        for (room = 0, i = 0; i < book.ndocs[p]; i++) {
            if (!LLM_TRY(d, llm_window_count(book.docs[p][i].length, 1, 1, &one, &d->err)))
                return;
            room += one;
        }
        if ((book.windows[p] = llm_own(d, (room + 1) * sizeof(llm_window), release_nothing))
                == NULL
            || !LLM_TRY(d, llm_windows(book.docs[p], book.ndocs[p], 1, 1, book.windows[p], room,
                                       &book.nwindows[p], &d->err)))
            return;
        printf("%s: %zu documents, %s windows of T = 1, one per target\n",
               llm_partition_name(p == 0 ? LLM_TRAIN : LLM_VALIDATION), book.ndocs[p],
               llm_put(d, llm_text("%s_windows", key[p]), llm_text("%zu", book.nwindows[p])));
    }
    printf("test: not encoded\n");
}
/* One model: its list, the model, its optimiser, a tape, and its own copy
   of the training windows, whose order the epochs shuffle. */
typedef struct run {
    llm_params ps;
    llm_ngram model;
    llm_adamw opt;
    llm_tape tape;
    llm_window *order;
} run;

static void release_run(void *p)
{
    run *r = p;
    llm_adamw_free(&r->opt);
    llm_params_free(&r->ps);
    llm_tape_free(&r->tape);
    free(r->order);
}

/* A model of the configuration cfg drawn from SEED, with an optimiser of
   the settings ADAMW, ready to train on the windows in the book's order. */
static run *own_run(llm_demo *d, const llm_ngram_config *cfg)
{
    run *r = llm_own(d, sizeof *r, release_run);
    const size_t n = book.nwindows[0];
    llm_rng rng;
    llm_rng_seed(&rng, SEED);
    if (r == NULL
        || !(LLM_TRY(d, llm_params_init(&r->ps, &d->err))
             && LLM_TRY(d, llm_ngram_init(&r->model, &r->ps, cfg, &rng, &d->err))
             && LLM_TRY(d, llm_adamw_init(&r->opt, &r->ps, &ADAMW, &d->err))
             && LLM_TRY(d, llm_tape_init(&r->tape, 64, &d->err))))
        return NULL;
    r->order = malloc((n + 1) * sizeof *r->order);
    if (!llm_demo_check(d, r->order != NULL, "memory for the training order"))
        return NULL;
    memcpy(r->order, book.windows[0], n * sizeof *r->order);
    return r;
}

/* The book's model: V from the tokenizer, C, D and F above. */
static llm_ngram_config book_config(void)
{
    const llm_ngram_config cfg = {book.tok->vocab, C, D, F};
    return cfg;
}
/* Step s (from 1) of r: batch (s - 1) mod nb of the order, which is
   shuffled with seed SEED + epoch when an epoch begins; *loss gets the
   batch's mean loss before the update. */
static int train_step(llm_demo *d, run *r, size_t s, double *loss)
{
    const size_t n = book.nwindows[0];
    size_t inputs[BATCH * C], targets[BATCH], nb = 0, k, first = 0, count = 0;
    const llm_tensor *v;
    llm_var out;
    if (!LLM_TRY(d, llm_batch_count(n, BATCH, &nb, &d->err)))
        return 0;
    k = (s - 1) % nb;
    if (k == 0 && !LLM_TRY(d, llm_shuffle_windows(r->order, n, SEED + (s - 1) / nb, &d->err)))
        return 0;
    if (!(LLM_TRY(d, llm_batch_span(n, BATCH, k, &first, &count, &d->err))
          && LLM_TRY(d, llm_batch_contexts(book.docs[0], book.ndocs[0], r->order, n, first,
                                           count, C, inputs, targets, &d->err))
          && LLM_TRY(d, llm_params_zero_grad(&r->ps, &d->err))
          && LLM_TRY(d, llm_ngram_loss(&r->model, &r->ps, &r->tape, inputs, targets, count,
                                       NULL, &out, &d->err))
          && LLM_TRY(d, llm_tape_value(&r->tape, out, &v, &d->err))))
        return 0;
    *loss = v->data[v->offset];
    return LLM_TRY(d, llm_tape_backward(&r->tape, out, NULL, 0, &d->err))
           && LLM_TRY(d, llm_tape_reset(&r->tape, &d->err))
           && LLM_TRY(d, llm_adamw_step(&r->opt, &r->ps, LLM_GRAD_UNSCALED, LR, &d->err));
}
/* The mean loss of r's model on every window of partition p (0 train, 1
   validation), in their order, in batches of EVAL_BATCH: each batch's mean
   times its size into one token-weighted sum. No update, no backward. */
static int evaluate(llm_demo *d, run *r, size_t p, double *mean)
{
    static size_t inputs[EVAL_BATCH * C], targets[EVAL_BATCH];
    llm_loss_sum acc = {0.0, 0};
    size_t nb = 0, k, first = 0, count = 0;
    const llm_tensor *v;
    llm_var out;
    if (!LLM_TRY(d, llm_batch_count(book.nwindows[p], EVAL_BATCH, &nb, &d->err)))
        return 0;
    for (k = 0; k < nb; k++)
        if (!(LLM_TRY(d, llm_batch_span(book.nwindows[p], EVAL_BATCH, k, &first, &count,
                                        &d->err))
              && LLM_TRY(d, llm_batch_contexts(book.docs[p], book.ndocs[p], book.windows[p],
                                               book.nwindows[p], first, count, C, inputs,
                                               targets, &d->err))
              && LLM_TRY(d, llm_ngram_loss(&r->model, &r->ps, &r->tape, inputs, targets, count,
                                           NULL, &out, &d->err))
              && LLM_TRY(d, llm_tape_value(&r->tape, out, &v, &d->err))
              && LLM_TRY(d, llm_loss_add(&acc, v->data[v->offset] * (double)count, count,
                                         &d->err))
              && LLM_TRY(d, llm_tape_reset(&r->tape, &d->err))))
            return 0;
    return LLM_TRY(d, llm_loss_mean(&acc, mean, &d->err));
}
static size_t parameter_count(const llm_params *ps)
{
    size_t i, n = 0;
    for (i = 0; i < ps->count; i++)
        n += ps->items[i].value.size;
    return n;
}

/* The shape of v on r's tape, as "[a, b]". */
static const char *shape_of(llm_demo *d, run *r, llm_var v)
{
    const llm_tensor *t;
    return LLM_TRY(d, llm_tape_value(&r->tape, v, &t, &d->err)) ? llm_sizes(t->shape, t->rank)
                                                               : "?";
}

static void first_batch(llm_demo *d)
{
    const llm_ngram_config cfg = book_config(), course = {266, 2, 4, 8};
    run *r = own_run(d, &cfg), *small = own_run(d, &course);
    size_t inputs[BATCH * C], targets[BATCH], i, k, formula;
    llm_var hidden[3], logits, loss;
    double l1, train0 = 0.0, val0 = 0.0;
    int positive = 1;
    if (r == NULL || small == NULL)
        return;
    formula = cfg.vocab * D + 3 * C * D * F + C * D * cfg.vocab;
    printf("model: V=%s C=%s D=%s F=%s, %s parameters (V D + 3 C D F + C D V = %s)\n",
           llm_put(d, "V", llm_text("%zu", cfg.vocab)), llm_put(d, "C", llm_text("%d", C)),
           llm_put(d, "D", llm_text("%d", D)), llm_put(d, "F", llm_text("%d", F)),
           llm_put(d, "params", llm_text("%zu", parameter_count(&r->ps))),
           llm_put(d, "formula", llm_text("%zu", formula)));
    llm_demo_check(d, parameter_count(&r->ps) == formula, "the count is the formula's");
    printf("the Rust course's size, V=266 C=2 D=4 F=8: %s parameters\n",
           llm_put(d, "course_params", llm_text("%zu", parameter_count(&small->ps))));
    if (!(LLM_TRY(d, llm_batch_contexts(book.docs[0], book.ndocs[0], book.windows[0],
                                        book.nwindows[0], 0, BATCH, C, inputs, targets,
                                        &d->err))
          && LLM_TRY(d, llm_ngram_forward(&r->model, &r->ps, &r->tape, inputs, BATCH, hidden,
                                          &logits, &d->err))))
        return;
    printf("first batch: IDs [%d, %d] -> embedded %s -> side by side %s -> SwiGLU %s"
           " -> logits %s\n", BATCH, C, shape_of(d, r, hidden[0]), shape_of(d, r, hidden[1]),
           shape_of(d, r, hidden[2]), shape_of(d, r, logits));
    llm_row(d, "shapes", "IDs", llm_text("[%d, %d]", BATCH, C), NULL);
    llm_row(d, "shapes", "embedded", shape_of(d, r, hidden[0]), NULL);
    llm_row(d, "shapes", "side by side", shape_of(d, r, hidden[1]), NULL);
    llm_row(d, "shapes", "SwiGLU", shape_of(d, r, hidden[2]), NULL);
    llm_row(d, "shapes", "logits", shape_of(d, r, logits), NULL);
    llm_put(d, "first_context", llm_sizes(inputs, C));
    llm_put(d, "first_target", llm_text("%zu", targets[0]));
    if (!(LLM_TRY(d, llm_tape_reset(&r->tape, &d->err))
          && LLM_TRY(d, llm_ngram_loss(&r->model, &r->ps, &r->tape, inputs, targets, BATCH,
                                       NULL, &loss, &d->err))
          && LLM_TRY(d, llm_tape_backward(&r->tape, loss, NULL, 0, &d->err))))
        return;
    for (k = 0; k < r->ps.count; k++) {
        const llm_param *p = &r->ps.items[k];
        for (l1 = 0.0, i = 0; i < p->grad.size; i++)
            l1 += fabs(p->grad.data[i]);
        positive = positive && isfinite(l1) && l1 > 0.0;
        printf("  %-22s %-9s %5zu numbers, gradient L1 norm %s\n", p->name,
               llm_sizes(p->value.shape, p->value.rank), p->value.size, llm_num(l1, 6));
        llm_row(d, "params", llm_text("`%s`", p->name), llm_sizes(p->value.shape, p->value.rank),
                llm_text("%zu", p->value.size), llm_num(l1, 6), NULL);
    }
    printf("every gradient finite and nonzero: %s\n", llm_put(d, "grads_ok", llm_yes(positive)));
    llm_demo_check(d, positive, "every parameter gets a gradient");
    if (!(LLM_TRY(d, llm_tape_reset(&r->tape, &d->err))
          && evaluate(d, r, 0, &train0) && evaluate(d, r, 1, &val0)))
        return;
    printf("untrained: train %s, validation %s; ln V = %s\n",
           llm_put(d, "train0", llm_num(train0, 6)), llm_put(d, "val0", llm_num(val0, 6)),
           llm_put(d, "lnV", llm_num(log((double)cfg.vocab), 6)));
}
static run *trained;               /* made by examples, trained here */
static double batch_loss[STEPS];   /* the loss of each step's batch */
static double *snapshot;           /* every parameter after REPLAY steps */

static void release_bigram(void *b)
{
    llm_bigram_free(b);
}

static void training(llm_demo *d)
{
    llm_bigram *bg = llm_own(d, sizeof *bg, release_bigram);
    llm_score bt = {0.0, 0}, bv = {0.0, 0};
    double val = 0.0, train = 0.0, sum = 0.0, btm = 0.0, bvm = 0.0, bvp = 0.0;
    size_t s, k, at, cross = 0;
    run *r = trained;
    if (r == NULL || bg == NULL
        || !(LLM_TRY(d, llm_bigram_fit(bg, book.docs[0], book.ndocs[0], book.tok->vocab, 1.0,
                                       &d->err))
             && LLM_TRY(d, llm_bigram_score(bg, book.docs[0], book.ndocs[0], &bt, &d->err))
             && LLM_TRY(d, llm_bigram_score(bg, book.docs[1], book.ndocs[1], &bv, &d->err))
             && LLM_TRY(d, llm_score_mean(&bt, &btm, NULL, &d->err))
             && LLM_TRY(d, llm_score_mean(&bv, &bvm, &bvp, &d->err))
             && evaluate(d, r, 1, &val)))
        return;
    printf("step   0: validation %s\n", llm_num(val, 6));
    llm_row(d, "curve", "0", "", llm_num(val, 6), NULL);
    for (s = 1; s <= STEPS; s++) {
        if (!train_step(d, r, s, &batch_loss[s - 1]))
            return;
        sum += batch_loss[s - 1];
        for (k = 0, at = 0; s == REPLAY && k < r->ps.count; at += r->ps.items[k++].value.size)
            memcpy(snapshot + at, r->ps.items[k].value.data,
                   r->ps.items[k].value.size * sizeof *snapshot);
        if (s % EVERY == 0) {
            if (!evaluate(d, r, 1, &val))
                return;
            printf("step %3zu: mean batch loss of the last %d steps %s, validation %s\n", s,
                   EVERY, llm_num(sum / EVERY, 6), llm_num(val, 6));
            llm_row(d, "curve", llm_text("%zu", s), llm_num(sum / EVERY, 6), llm_num(val, 6),
                    NULL);
            sum = 0.0;
            cross = cross == 0 && val < bvm ? s : cross;
        }
    }
    if (!evaluate(d, r, 0, &train))
        return;
    printf("first measured below the bigram's validation loss at step %s\n",
           llm_put(d, "cross", llm_text("%zu", cross)));
    printf("after %d steps: n-gram train %s, validation %s (perplexity %s)\n", STEPS,
           llm_put(d, "train_end", llm_num(train, 6)), llm_put(d, "val_end", llm_num(val, 6)),
           llm_put(d, "val_end_ppl", llm_num(exp(val), 2)));
    printf("bigram, alpha=1: train %s, validation %s (perplexity %s), on %s targets\n",
           llm_put(d, "bigram_train", llm_num(btm, 6)), llm_put(d, "bigram_val", llm_num(bvm, 6)),
           llm_put(d, "bigram_val_ppl", llm_num(bvp, 2)),
           llm_put(d, "val_targets", llm_text("%zu", bv.targets)));
    llm_row(d, "compare", "bigram, $\\alpha = 1$", llm_num(btm, 6), llm_num(bvm, 6),
            llm_num(bvp, 2), NULL);
    llm_row(d, "compare", llm_text("n-gram, %d steps", STEPS), llm_num(train, 6), llm_num(val, 6),
            llm_num(exp(val), 2), NULL);
    printf("the same targets: %s; the n-gram below the bigram on validation by %s nats: %s\n",
           llm_yes(bv.targets == book.nwindows[1] && bt.targets == book.nwindows[0]),
           llm_put(d, "gap", llm_num(bvm - val, 6)), llm_put(d, "below", llm_yes(val < bvm)));
    llm_demo_check(d, bv.targets == book.nwindows[1] && bt.targets == book.nwindows[0],
                   "the bigram and the n-gram score the same targets");
    llm_demo_check(d, val < bvm, "the n-gram ends below the bigram on validation");
}
/* The examples, and the model that training trains and greedy reads. */
static void setup(llm_demo *d)
{
    llm_ngram_config cfg;
    examples(d);
    if (!d->ok)
        return;
    llm_put(d, "STEPS", llm_text("%d", STEPS));
    llm_put(d, "BATCH", llm_text("%d", BATCH));
    llm_put(d, "EVERY", llm_text("%d", EVERY));
    llm_put(d, "REPLAY", llm_text("%d", REPLAY));
    llm_put(d, "NEW", llm_text("%d", NEW));
    llm_put(d, "LR", llm_trim(LR, 6));
    cfg = book_config();
    if ((trained = own_run(d, &cfg)) != NULL)
        snapshot = llm_own(d, parameter_count(&trained->ps) * sizeof *snapshot,
                           release_nothing);
}
/* bytes as text for a report line: a byte that starts no UTF-8 scalar
   becomes U+FFFD, a line break the two characters \n. */
static const char *readable(const unsigned char *bytes, size_t n)
{
    const char *text = "";
    uint32_t scalar;
    size_t at = 0, len = 0;
    while (at < n) {
        if (bytes[at] == '\n')
            text = llm_text("%s\\n", text), len = 1;
        else if (llm_utf8_next(bytes, n, at, &scalar, &len, NULL) == LLM_OK)
            text = llm_text("%s%.*s", text, (int)len, (const char *)bytes + at);
        else
            text = llm_text("%s\xEF\xBF\xBD", text), len = 1;
        at += len;
    }
    return text;
}

/* The text of n content IDs, readable. */
static const char *ids_text(llm_demo *d, const size_t *ids, size_t n)
{
    unsigned char bytes[4 * (NEW + 64)];
    size_t len = 0;
    return LLM_TRY(d, llm_tokenizer_decode(book.tok, ids, n, bytes, sizeof bytes, &len, &d->err))
               ? readable(bytes, len)
               : "";
}

/* Writes the greedy continuation of prompt and the place where it starts
   to repeat itself: the first new position j whose context of C IDs was
   already the context of an earlier new position i. */
static void continue_prompt(llm_demo *d, const char *key, const char *prompt)
{
    size_t ids[NEW + 64], n = 0, count = 0, i, j, cycle = 0, period = 0, nodes, eos;
    const char *text;
    ids[0] = LLM_BOS;
    if (!LLM_TRY(d, llm_tokenizer_encode(book.tok, (const unsigned char *)prompt, strlen(prompt),
                                         ids + 1, 63, &n, &d->err)))
        return;
    nodes = trained->tape.count;
    if (!LLM_TRY(d, llm_ngram_greedy(&trained->model, &trained->ps, &trained->tape, ids, n + 1,
                                     NEW, ids + n + 1, NEW, &count, &d->err)))
        return;
    llm_demo_check(d, trained->tape.count == nodes, "greedy leaves the tape as it was");
    for (j = n + 1; period == 0 && j < n + 1 + count; j++)
        for (i = n + 1; period == 0 && i < j; i++)
            if (memcmp(ids + i - C, ids + j - C, C * sizeof ids[0]) == 0)
                cycle = i, period = j - i;
    eos = count > 0 && ids[n + count] == LLM_EOS;
    text = ids_text(d, ids + 1, n + count - eos);
    printf("greedy from \"%s\" %s: %s\n", prompt, llm_sizes(ids, n + 1),
           llm_put(d, llm_text("%s_text", key), text));
    printf("  new IDs %s\n", llm_sizes(ids + n + 1, count));
    llm_row(d, "greedy", llm_text("\"%s\"", prompt), text,
            period > 0 ? llm_text("%zu", cycle - n) : "", llm_text("%zu", period), NULL);
    if (period > 0) {
        printf("  from new ID %s on it repeats every %s IDs: \"%s\"\n",
               llm_put(d, llm_text("%s_cycle_at", key), llm_text("%zu", cycle - n)),
               llm_put(d, llm_text("%s_period", key), llm_text("%zu", period)),
               llm_put(d, llm_text("%s_cycle", key), ids_text(d, ids + cycle, period)));
    } else {
        printf("  no context repeats in %zu new IDs\n", count);
        llm_put(d, llm_text("%s_period", key), "0");
    }
}

static void greedy(llm_demo *d)
{
    if (trained == NULL)
        return;
    llm_put(d, "prompt_en", "The old ");
    llm_put(d, "prompt_ru", "Мира ");
    continue_prompt(d, "en", "The old ");
    continue_prompt(d, "ru", "Мира ");
}
/* The first REPLAY steps again, on a model drawn afresh from the same seed
   with the windows in the book's order: every batch loss and, at the end,
   every parameter bit for bit as the first run had them. */
static void replay(llm_demo *d)
{
    const llm_ngram_config cfg = book_config();
    run *r = own_run(d, &cfg);
    double loss[REPLAY];
    size_t s, k, at, same = 1;
    if (r == NULL || snapshot == NULL)
        return;
    for (s = 1; s <= REPLAY; s++)
        if (!train_step(d, r, s, &loss[s - 1]))
            return;
    for (k = 0, at = 0; k < r->ps.count; at += r->ps.items[k++].value.size)
        same = same && memcmp(snapshot + at, r->ps.items[k].value.data,
                              r->ps.items[k].value.size * sizeof *snapshot) == 0;
    printf("replay of the first %d steps from seed %s: %zu parameters bit-identical: %s,"
           " %d batch losses bit-identical: %s\n", REPLAY,
           llm_put(d, "seed", llm_text("%u", (unsigned)SEED)), at,
           llm_put(d, "replay_params", llm_yes((int)same)), REPLAY,
           llm_put(d, "replay_losses",
                   llm_yes(memcmp(loss, batch_loss, sizeof loss) == 0)));
    llm_demo_check(d, same && memcmp(loss, batch_loss, sizeof loss) == 0, "a bitwise replay");
}
static void refusals(llm_demo *d)
{
    const llm_ngram_config none = {book.tok->vocab, 0, D, F};
    const size_t bad_id[C] = {LLM_BOS, book.tok->vocab}, ok_id[C] = {LLM_BOS, LLM_BOS},
                 bad_target[1] = {book.tok->vocab};
    const llm_doc *train = book.docs[0];
    const llm_window past = {0, train[0].length - 1};
    llm_params *ps = llm_own_params(d);
    llm_ngram m, kept;
    llm_rng rng;
    llm_var out = {77, 77}, loss = {77, 77};
    size_t inputs[C] = {77, 77}, targets[1] = {77}, new_ids[1] = {77}, count = 77, nodes;
    int untouched;
    if (trained == NULL || ps == NULL || !LLM_TRY(d, llm_params_init(ps, &d->err)))
        return;
    memset(&m, 0x5a, sizeof m);
    kept = m;
    llm_rng_seed(&rng, SEED);
    nodes = trained->tape.count;
    llm_refuse_as(d, "an n-gram with C = 0", llm_ngram_init(&m, ps, &none, &rng, &d->err),
                  LLM_ERR_ARGUMENT);
    llm_refuse_as(d, "a context holding the ID V",
                  llm_ngram_forward(&trained->model, &trained->ps, &trained->tape, bad_id, 1,
                                    NULL, &out, &d->err), LLM_ERR_TOKEN);
    printf("  %s\n", llm_put(d, "token_message", d->err.message));
    llm_refuse_as(d, "the target V",
                  llm_ngram_loss(&trained->model, &trained->ps, &trained->tape, ok_id,
                                 bad_target, 1, NULL, &loss, &d->err), LLM_ERR_TARGET);
    llm_refuse_as(d, "contexts of C = 0",
                  llm_batch_contexts(train, 1, &past, 1, 0, 1, 0, inputs, targets, &d->err),
                  LLM_ERR_ARGUMENT);
    llm_refuse_as(d, "a window at a document's last ID",
                  llm_batch_contexts(train, 1, &past, 1, 0, 1, C, inputs, targets, &d->err),
                  LLM_ERR_INDEX);
    llm_refuse_as(d, "a continuation of 2 IDs into room for 1",
                  llm_ngram_greedy(&trained->model, &trained->ps, &trained->tape, ok_id, C, 2,
                                   new_ids, 1, &count, &d->err), LLM_ERR_LENGTH);
    untouched = ps->count == 0 && rng.state == SEED && memcmp(&m, &kept, sizeof m) == 0
                && trained->tape.count == nodes && out.id == 77 && loss.id == 77
                && inputs[0] == 77 && targets[0] == 77 && new_ids[0] == 77 && count == 77;
    printf("refused calls changed nothing: %s\n", llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "refused calls changed nothing");
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {first_batch, training, greedy, replay, refusals,
                                            NULL};
    return llm_demo_main(argc, argv, "ch23-neural-ngram", setup, sections);
}
