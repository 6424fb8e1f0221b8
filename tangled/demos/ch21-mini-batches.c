/* ch21-mini-batches -- seeded shuffles, batches, token-weighted means. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/nn.h"
#include "llm/data.h"

/* The fixture: two wrapped documents (0 = BOS, 1 = EOS), T = 2, stride 1,
   batches of 3, shuffled with seed 7. */
static const size_t doc_a[5] = {0, 10, 11, 12, 1}, doc_b[4] = {0, 20, 21, 1};
static const llm_doc docs[2] = {{doc_a, 5}, {doc_b, 4}};
static const char *const doc_name[2] = {"a", "b"};
#define T 2
#define STRIDE 1
#define BATCH 3
#define SEED 7

static llm_window windows[8], order[8];   /* as listed; as shuffled */
static size_t n;                          /* how many */

/* The loss of predicting target token id: a fixed table, not a model,
   whose values are exact binary fractions. */
static double token_loss(size_t id)
{
    switch (id) {
    case 1:  return 0.25;                          /* EOS */
    case 10: case 11: case 12: return 0.5;
    case 20: return 1.875;
    case 21: return 1.5;
    default: return 0.0;
    }
}

/* "a@1": the window's document and start. */
static const char *name_of(llm_window w)
{
    return llm_text("%s@%zu", w.doc < 2 ? doc_name[w.doc] : "?", w.start);
}

/* "[b@1, a@1, ...]" */
static const char *order_text(const llm_window *w, size_t count)
{
    const char *text = "";
    size_t i;
    for (i = 0; i < count; i++)
        text = llm_text("%s%s%s", text, i > 0 ? ", " : "", name_of(w[i]));
    return llm_text("[%s]", text);
}

static void refuse(llm_demo *d, const char *what, llm_status st)
{
    llm_refuse_cells(d, "bm", what, st);
}
static void list_and_shuffle(llm_demo *d)
{
    llm_window walk[8], held;
    llm_rng rng, peek;
    size_t doc, s, u;
    int same;

    if (!LLM_TRY(d, llm_windows(docs, 2, T, STRIDE, windows, 8, &n, &d->err)))
        return;                                          /* chapter 5's rule */
    for (s = 0; s < n; s++)
        llm_row(d, "windows", llm_text("%zu", s), name_of(windows[s]),
                llm_text("%zu", windows[s].doc), llm_text("%zu", windows[s].start),
                llm_sizes(docs[windows[s].doc].ids + windows[s].start, T),
                llm_sizes(docs[windows[s].doc].ids + windows[s].start + 1, T), NULL);
    for (doc = 0; doc < 2; doc++) {
        size_t per = 0;
        for (s = 0; s < n; s++)
            per += windows[s].doc == doc;
        llm_put(d, llm_text("windows_%s", doc_name[doc]), llm_text("%zu", per));
    }
    for (doc = 0; doc < 2; doc++)
        for (s = 0; s < docs[doc].length; s++)
            llm_row(d, "tokens", llm_text("%zu", doc), llm_text("%zu", s),
                    llm_text("%zu", docs[doc].ids[s]), NULL);
    llm_put(d, "T", llm_text("%d", T));
    printf("windows=%s", llm_put(d, "n_windows", llm_text("%zu", n)));
    printf(" %s\n", llm_put(d, "windows", order_text(windows, n)));
    memcpy(walk, windows, n * sizeof *walk);
    llm_rng_seed(&rng, SEED);
    for (u = n - 1; u >= 1; u--) {
        uint64_t bound = (uint64_t)u + 1, j = 0, draw;
        uint64_t threshold = (UINT64_C(0) - bound) % bound;
        const char *b = llm_text("%llu", (unsigned long long)bound), *tau, *jt, *now;
        peek = rng;
        draw = llm_rng_next_u64(&peek);
        if (!LLM_TRY(d, llm_rng_below(&rng, bound, &j, &d->err)))
            return;
        llm_demo_check(d, draw >= threshold && j == draw % bound
                          && rng.state == peek.state,
                       "llm_rng_below used one draw and returned it modulo the bound");
        held = walk[u];
        walk[u] = walk[j];
        walk[j] = held;
        tau = llm_text("%llu", (unsigned long long)threshold);
        jt = llm_text("%llu", (unsigned long long)j);
        now = order_text(walk, n);
        printf("u=%zu bound=%s tau=%s draw=%016llx j=%s %s\n", u, b, tau,
               (unsigned long long)draw, jt, now);
        if (u == 1)
            llm_put(d, "last_j", jt);
        llm_row(d, "swaps", llm_text("%zu", u), b, tau,
                llm_text("`%016llx`", (unsigned long long)draw), jt, now, NULL);
    }
    memcpy(order, windows, n * sizeof *order);
    if (!LLM_TRY(d, llm_shuffle_windows(order, n, SEED, &d->err)))
        return;
    same = memcmp(order, walk, n * sizeof *walk) == 0;
    printf("order=%s", llm_put(d, "order", order_text(order, n)));
    printf(" library=%s\n", same ? "same" : "different");
    llm_put(d, "shuffle_matches", llm_yes(same));
    llm_demo_check(d, same, "the library's shuffle gives the walked order");
}
static void batches(llm_demo *d)
{
    size_t inputs[BATCH * T], targets[BATCH * T], shape[2] = {0, T};
    size_t nb = 0, k, b, t, i, first = 0, count = 0;
    llm_loss_sum epoch = {0.0, 0}, part[2] = {{0.0, 0}, {0.0, 0}}, merged = {0.0, 0};
    double mean[2] = {0.0, 0.0}, epoch_mean = 0.0, merged_mean = 0.0;
    int unpadded = 1, identical;

    if (!LLM_TRY(d, llm_batch_count(n, BATCH, &nb, &d->err))
        || !llm_demo_check(d, nb == 2, "five windows make two batches of three"))
        return;
    for (k = 0; k < nb; k++) {
        const char *which = k == 0 ? "first" : "last";
        for (i = 0; i < BATCH * T; i++)
            inputs[i] = targets[i] = SIZE_MAX;       /* sentinels */
        if (!(LLM_TRY(d, llm_batch_span(n, BATCH, k, &first, &count, &d->err))
              && LLM_TRY(d, llm_batch_tokens(docs, 2, order, n, first, count, T, inputs,
                                             targets, &d->err))))
            return;
        for (i = count * T; i < BATCH * T; i++)
            unpadded = unpadded && inputs[i] == SIZE_MAX && targets[i] == SIZE_MAX;
        for (b = 0; b < count; b++) {
            double losses[T], row = 0.0;
            for (t = 0; t < T; t++) {
                losses[t] = token_loss(targets[b * T + t]);
                row += losses[t];
            }
            if (!(LLM_TRY(d, llm_loss_add(&part[k], row, T, &d->err))
                  && LLM_TRY(d, llm_loss_add(&epoch, row, T, &d->err))))
                return;
            llm_row(d, "batches", llm_text("%zu", k), llm_text("%zu", b),
                    name_of(order[first + b]), llm_sizes(inputs + b * T, T),
                    llm_sizes(targets + b * T, T), llm_trims(losses, T, 6),
                    llm_text("%.6g", row), NULL);
        }
        if (!LLM_TRY(d, llm_loss_mean(&part[k], &mean[k], &d->err)))
            return;
        shape[0] = count;
        printf("batch=%zu windows=%s", k,
               llm_put(d, llm_text("rows_%s", which), order_text(order + first, count)));
        printf(" shape=%s\n",
               llm_put(d, llm_text("shape_%s", which), llm_sizes(shape, 2)));
        printf("  inputs=%s targets=%s\n", llm_sizes(inputs, count * T),
               llm_sizes(targets, count * T));
        printf("  loss_sum=%s", llm_put(d, llm_text("loss_%s_sum", which),
                                        llm_text("%.6g", part[k].sum)));
        printf(" tokens=%s", llm_put(d, llm_text("loss_%s_tokens", which),
                                     llm_text("%zu", part[k].tokens)));
        printf(" loss=%s\n",
               llm_put(d, llm_text("loss_%s", which), llm_num(mean[k], 6)));
        if (k + 1 == nb)
            llm_put(d, "last_count", llm_text("%zu", count));
    }
    if (!(LLM_TRY(d, llm_loss_merge(&merged, &part[0], &d->err))
          && LLM_TRY(d, llm_loss_merge(&merged, &part[1], &d->err))
          && LLM_TRY(d, llm_loss_mean(&epoch, &epoch_mean, &d->err))
          && LLM_TRY(d, llm_loss_mean(&merged, &merged_mean, &d->err))))
        return;
    identical = memcmp(&merged.sum, &epoch.sum, sizeof epoch.sum) == 0
                && merged.tokens == epoch.tokens
                && memcmp(&merged_mean, &epoch_mean, sizeof epoch_mean) == 0;
    printf("epoch loss_sum=%s", llm_put(d, "epoch_sum", llm_text("%.6g", epoch.sum)));
    printf(" tokens=%s", llm_put(d, "epoch_tokens", llm_text("%zu", epoch.tokens)));
    printf(" loss=%s\n", llm_put(d, "epoch_mean", llm_num(epoch_mean, 6)));
    printf("halves merged: loss_sum=%.6g tokens=%zu", merged.sum, merged.tokens);
    printf(" versus one pass: %s\n",
           llm_put(d, "merge", identical ? "bit-identical" : "different"));
    printf("mean of batch means=%s",
           llm_put(d, "mean_of_means", llm_num(0.5 * (mean[0] + mean[1]), 6)));
    printf(" last batch over %d tokens=%s\n", BATCH * T,
           llm_put(d, "last_by_full", llm_num(part[1].sum / (double)(BATCH * T), 6)));
    printf("unwritten slots after the short batch=%s\n",
           llm_put(d, "unpadded", llm_yes(unpadded)));
    llm_demo_check(d, unpadded, "the short batch is not padded");
    llm_demo_check(d, identical, "the merged halves equal the one pass bit for bit");
}
/* The position of w in the unshuffled list. */
static size_t position_of(llm_window w)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (windows[i].doc == w.doc && windows[i].start == w.start)
            return i;
    return n;
}
static void fair_shuffles(llm_demo *d)
{
    static const unsigned bounds8[4] = {3, 6, 100, 192};
    static unsigned orders[3125];                  /* 5^5 codes of 5 positions */
    const uint64_t big = UINT64_C(3) << 62;
    const uint64_t bounds[6] = {2, 3, 4, 5, UINT64_C(3) << 62, (UINT64_C(1) << 63) + 1};
    unsigned first[5] = {0, 0, 0, 0, 0}, fewest = 12000, most = 0, seen = 0;
    llm_rng plain, fair, count;
    llm_window a[8], b[8], c[8];
    size_t i, r, lower_mod = 0, lower_fair = 0, draws = 0;
    size_t code, p, hits[6];                       /* hits[5]: not a window */
    uint64_t seed;
    int replay, covered = 1;

    for (i = 0; i < 4; i++) {
        unsigned m = bounds8[i], tau = (256 - m) % m, hits, v, w;
        unsigned lo[2] = {256, 256}, hi[2] = {0, 0};
        const char *ratio;
        for (w = 0; w < 2; w++)              /* 0: every draw; 1: the draws >= tau */
            for (v = 0; v < m; v++) {
                for (hits = 0, r = w == 0 ? 0 : tau; r < 256; r++)
                    hits += r % m == v;
                lo[w] = hits < lo[w] ? hits : lo[w];
                hi[w] = hits > hi[w] ? hits : hi[w];
            }
        ratio = llm_text("%.4f", (double)hi[0] / lo[0]);
        printf("8-bit m=%u threshold=%u modulo=%u..%u (ratio %s) threshold=%u..%u\n", m,
               tau, lo[0], hi[0], ratio, lo[1], hi[1]);
        llm_row(d, "bias8", llm_text("%u", m), llm_text("%u", tau),
                llm_text("%u–%u", lo[0], hi[0]), ratio, llm_text("%u–%u", lo[1], hi[1]),
                NULL);
        llm_demo_check(d, lo[1] == hi[1] && lo[1] * m == 256 - tau,
                       "with the threshold every 8-bit value is hit equally often");
    }
    llm_rng_seed(&plain, 21);
    llm_rng_seed(&fair, 21);
    for (i = 0; i < 60000; i++) {
        uint64_t j = 0;
        lower_mod += llm_rng_next_u64(&plain) % big < (UINT64_C(1) << 62);
        if (!LLM_TRY(d, llm_rng_below(&fair, big, &j, &d->err)))
            return;
        lower_fair += j < (UINT64_C(1) << 62);
    }
    llm_rng_seed(&count, 21);
    for (; count.state != fair.state && draws < 1000000; draws++)
        llm_rng_next_u64(&count);
    printf("m=3*2^62 lower third: modulo=%s",
           llm_put(d, "lower_mod", llm_num(lower_mod / 60000.0, 4)));
    printf(" threshold=%s", llm_put(d, "lower_fair", llm_num(lower_fair / 60000.0, 4)));
    printf(" (%s draws for 60000)\n", llm_put(d, "fair_draws", llm_text("%zu", draws)));
    for (i = 0; i < 6; i++) {
        uint64_t threshold = (UINT64_C(0) - bounds[i]) % bounds[i];
        const char *bound = llm_text("%llu", (unsigned long long)bounds[i]);
        const char *tau = llm_text("%llu", (unsigned long long)threshold);
        const char *rejected = llm_text("%.6g", (double)threshold * 0x1.0p-64);
        printf("bound=%s threshold=%s rejected=%s\n", bound, tau, rejected);
        llm_row(d, "thresholds", bound, tau, rejected, NULL);
    }
    llm_demo_check(d, lower_fair > 19000 && lower_fair < 21000,
                   "with the threshold a third of the draws fall in the lower third");
    if (!llm_demo_check(d, n == 5, "the fixture has five windows"))
        return;
    memcpy(a, windows, n * sizeof *a);
    memcpy(b, windows, n * sizeof *b);
    memcpy(c, windows, n * sizeof *c);
    if (!(LLM_TRY(d, llm_shuffle_windows(a, n, SEED, &d->err))
          && LLM_TRY(d, llm_shuffle_windows(b, n, SEED, &d->err))
          && LLM_TRY(d, llm_shuffle_windows(c, n, SEED + 1, &d->err))))
        return;
    replay = memcmp(a, b, n * sizeof *a) == 0;
    printf("seed=%d again: %s\n", SEED,
           llm_put(d, "replay", replay ? "bit-identical" : "different"));
    printf("seed=%d order=%s\n", SEED + 1, llm_put(d, "other_order", order_text(c, n)));
    for (seed = 0; seed < 12000; seed++) {
        memcpy(a, windows, n * sizeof *a);
        if (!LLM_TRY(d, llm_shuffle_windows(a, n, seed, &d->err)))
            return;
        memset(hits, 0, sizeof hits);
        for (i = 0, code = 0; i < n; i++) {
            p = position_of(a[i]);
            hits[p]++;
            code = code * 5 + p % 5;
        }
        for (i = 0; i < n; i++)          /* n windows, each once: no stranger */
            covered = covered && hits[i] == 1;
        orders[code]++;
        first[position_of(a[0]) % 5]++;
    }
    for (code = 0; code < 3125; code++)
        if (orders[code] > 0) {
            seen++;
            fewest = orders[code] < fewest ? orders[code] : fewest;
            most = orders[code] > most ? orders[code] : most;
        }
    for (i = 0; i < n; i++)
        llm_row(d, "first", name_of(windows[i]), llm_text("%u", first[i]), NULL);
    printf("seeds 0..11999: every window once=%s",
           llm_put(d, "covered", llm_yes(covered)));
    printf(" orders seen=%s", llm_put(d, "orders_seen", llm_text("%u", seen)));
    printf(" each %s", llm_put(d, "orders_min", llm_text("%u", fewest)));
    printf("..%s times\n", llm_put(d, "orders_max", llm_text("%u", most)));
    printf("first window counts=[%u, %u, %u, %u, %u]\n", first[0], first[1], first[2],
           first[3], first[4]);
    llm_demo_check(d, replay, "the same seed gives the same order");
    llm_demo_check(d, covered, "every shuffle holds every window once");
    llm_demo_check(d, seen == 120, "all 120 orders come up");
}
static void refusals(llm_demo *d)
{
    static const llm_window past_end[2] = {{0, 0}, {1, 2}}, no_doc[1] = {{2, 0}};
    size_t in[BATCH * T], tg[BATCH * T], first = 99, count = 99, nb = 99, i;
    llm_loss_sum acc = {7.875, 10}, full = {DBL_MAX, 1}, many = {0.0, SIZE_MAX};
    const llm_loss_sum hollow = {1.0, 0}, none = {0.0, 0};
    llm_error *e = &d->err;
    llm_rng rng;
    uint64_t j = 99;
    double mean = -1.0;
    int same = 1;

    for (i = 0; i < BATCH * T; i++)
        in[i] = tg[i] = SIZE_MAX;
    llm_rng_seed(&rng, SEED);
    refuse(d, "a draw below 0", llm_rng_below(&rng, 0, &j, e));
    refuse(d, "shuffle a NULL list of 5", llm_shuffle_windows(NULL, 5, SEED, e));
    refuse(d, "count batches of 0", llm_batch_count(n, 0, &nb, e));
    refuse(d, "batch 2 of 5 windows in 3s",
           llm_batch_span(n, BATCH, 2, &first, &count, e));
    refuse(d, "window b@2, past the end of b",
           llm_batch_tokens(docs, 2, past_end, 2, 0, 2, T, in, tg, e));
    llm_put(d, "fit_message", e->message);
    refuse(d, "a window in document 2 of 2",
           llm_batch_tokens(docs, 2, no_doc, 1, 0, 1, T, in, tg, e));
    refuse(d, "3 windows from position 3 of 5",
           llm_batch_tokens(docs, 2, order, n, 3, 3, T, in, tg, e));
    refuse(d, "a batch of 0 windows",
           llm_batch_tokens(docs, 2, order, n, 0, 0, T, in, tg, e));
    refuse(d, "T = 0", llm_batch_tokens(docs, 2, order, n, 0, 3, 0, in, tg, e));
    refuse(d, "2 windows of T = SIZE_MAX",
           llm_batch_tokens(docs, 2, order, n, 0, 2, SIZE_MAX, in, tg, e));
    refuse(d, "add 0 tokens", llm_loss_add(&acc, 0.0, 0, e));
    refuse(d, "add a NaN loss", llm_loss_add(&acc, NAN, 2, e));
    refuse(d, "add an infinite loss", llm_loss_add(&acc, HUGE_VAL, 2, e));
    refuse(d, "add DBL_MAX to DBL_MAX", llm_loss_add(&full, DBL_MAX, 1, e));
    llm_put(d, "overflow_message", e->message);
    refuse(d, "add 1 token to SIZE_MAX", llm_loss_add(&many, 0.5, 1, e));
    refuse(d, "merge a part of sum 1 and no tokens", llm_loss_merge(&acc, &hollow, e));
    refuse(d, "the mean of no tokens", llm_loss_mean(&none, &mean, e));
    for (i = 0; i < BATCH * T; i++)
        same = same && in[i] == SIZE_MAX && tg[i] == SIZE_MAX;
    same = same && first == 99 && count == 99 && nb == 99 && j == 99 && mean == -1.0
           && rng.state == SEED && acc.sum == 7.875 && acc.tokens == 10
           && full.sum == DBL_MAX && full.tokens == 1 && many.sum == 0.0
           && many.tokens == SIZE_MAX;
    printf("unchanged after refusals=%s\n", llm_put(d, "unchanged", llm_yes(same)));
    llm_demo_check(d, same, "no refused call wrote an output or an accumulator");
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {list_and_shuffle, batches,
                                            fair_shuffles, refusals, NULL};
    return llm_demo_main(argc, argv, "ch21-mini-batches", NULL, sections);
}
