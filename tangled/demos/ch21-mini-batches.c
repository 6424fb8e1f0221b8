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
static char *window_name(char *buf, size_t size, llm_window w)
{
    snprintf(buf, size, "%s@%zu", w.doc < 2 ? doc_name[w.doc] : "?", w.start);
    return buf;
}

/* "[1.5, 0.25]": exact binary fractions with up to six significant digits. */
static char *sig_list(char *buf, size_t size, const double *x, size_t n)
{
    size_t i, len;
    snprintf(buf, size, "[");
    for (i = 0; i < n; i++) {
        len = strlen(buf);
        snprintf(buf + len, size - len, "%s%.6g", i > 0 ? ", " : "", x[i]);
    }
    len = strlen(buf);
    snprintf(buf + len, size - len, "]");
    return buf;
}

/* "[b@1, a@1, ...]" */
static char *order_text(char *buf, size_t size, const llm_window *w, size_t n)
{
    char name[48];
    size_t i, len;
    snprintf(buf, size, "[");
    for (i = 0; i < n; i++) {
        len = strlen(buf);
        snprintf(buf + len, size - len, "%s%s", i > 0 ? ", " : "",
                 window_name(name, sizeof name, w[i]));
    }
    len = strlen(buf);
    snprintf(buf + len, size - len, "]");
    return buf;
}
static size_t list_windows(llm_trace *tr, llm_window *out)
{
    char buf[256], name[48], in[64], tg[64], pos[32], doc[32], start[32];
    size_t d, s, n = 0;
    for (d = 0; d < 2; d++)                        /* chapter 5's rule */
        for (s = 0; s + T + 1 <= docs[d].length; s += STRIDE) {
            const char *cells[6] = {pos, name, doc, start, in, tg};
            out[n].doc = d;
            out[n].start = s;
            snprintf(pos, sizeof pos, "%zu", n);
            window_name(name, sizeof name, out[n]);
            snprintf(doc, sizeof doc, "%zu", d);
            snprintf(start, sizeof start, "%zu", s);
            llm_fmt_sizes(in, sizeof in, docs[d].ids + s, T);
            llm_fmt_sizes(tg, sizeof tg, docs[d].ids + s + 1, T);
            llm_trace_row(tr, "windows", 6, cells);
            n++;
        }
    for (d = 0; d < 2; d++)
        for (s = 0; s < docs[d].length; s++) {
            const char *cells[3] = {doc, pos, start};
            snprintf(doc, sizeof doc, "%zu", d);
            snprintf(pos, sizeof pos, "%zu", s);
            snprintf(start, sizeof start, "%zu", docs[d].ids[s]);
            llm_trace_row(tr, "tokens", 3, cells);
        }
    snprintf(buf, sizeof buf, "%d", T);
    llm_trace_value(tr, "T", buf);
    snprintf(buf, sizeof buf, "%zu", n);
    llm_trace_value(tr, "n_windows", buf);
    printf("windows=%zu %s\n", n, order_text(buf, sizeof buf, out, n));
    llm_trace_value(tr, "windows", buf);
    return n;
}
static int shuffle_walk(llm_trace *tr, const llm_window *windows, size_t n,
                        llm_window *order)
{
    llm_window walk[8];
    llm_rng rng, peek;
    llm_error err;
    char buf[256], c[5][64];
    size_t u;
    int ok = 1, same;
    memcpy(walk, windows, n * sizeof *walk);
    llm_rng_seed(&rng, SEED);
    for (u = n - 1; u >= 1; u--) {
        const char *cells[6] = {c[0], c[1], c[2], c[3], c[4], buf};
        uint64_t bound = (uint64_t)u + 1, j = 0, draw;
        uint64_t threshold = (UINT64_C(0) - bound) % bound;
        llm_window held;
        peek = rng;
        draw = llm_rng_next_u64(&peek);
        ok = llm_demo_ok("ch21", llm_rng_below(&rng, bound, &j, &err), &err) && ok;
        ok = ok && draw >= threshold && j == draw % bound && rng.state == peek.state;
        held = walk[u];
        walk[u] = walk[j];
        walk[j] = held;
        snprintf(c[0], sizeof c[0], "%zu", u);
        snprintf(c[1], sizeof c[1], "%llu", (unsigned long long)bound);
        snprintf(c[2], sizeof c[2], "%llu", (unsigned long long)threshold);
        snprintf(c[3], sizeof c[3], "`%016llx`", (unsigned long long)draw);
        snprintf(c[4], sizeof c[4], "%llu", (unsigned long long)j);
        order_text(buf, sizeof buf, walk, n);
        printf("u=%zu bound=%s tau=%s draw=%016llx j=%s %s\n", u, c[1],
               c[2], (unsigned long long)draw, c[4], buf);
        llm_trace_row(tr, "swaps", 6, cells);
    }
    memcpy(order, windows, n * sizeof *order);
    ok = llm_demo_ok("ch21", llm_shuffle_windows(order, n, SEED, &err), &err) && ok;
    same = memcmp(order, walk, n * sizeof *walk) == 0;
    printf("order=%s library=%s\n", order_text(buf, sizeof buf, order, n),
           same ? "same" : "different");
    llm_trace_value(tr, "order", buf);
    llm_trace_value(tr, "shuffle_matches", same ? "yes" : "no");
    return ok && same;
}
static int batches(llm_trace *tr, const llm_window *order, size_t n)
{
    size_t inputs[BATCH * T], targets[BATCH * T], shape[2];
    size_t nb = 0, k, b, t, i, first = 0, count = 0;
    llm_loss_sum epoch = {0.0, 0}, part[2] = {{0.0, 0}, {0.0, 0}}, merged = {0.0, 0};
    double mean[2] = {0.0, 0.0}, epoch_mean = 0.0, merged_mean = 0.0;
    llm_error err;
    char buf[256], in[64], tg[64], c[5][64];
    int ok, unpadded = 1, identical;
    ok = llm_demo_ok("ch21", llm_batch_count(n, BATCH, &nb, &err), &err) && nb == 2;
    for (k = 0; ok && k < nb; k++) {
        for (i = 0; i < BATCH * T; i++)
            inputs[i] = targets[i] = SIZE_MAX;       /* sentinels */
        ok = llm_demo_ok("ch21", llm_batch_span(n, BATCH, k, &first, &count, &err), &err)
             && llm_demo_ok("ch21", llm_batch_tokens(docs, 2, order, n, first, count, T,
                                                     inputs, targets, &err), &err);
        if (!ok)
            break;
        for (i = count * T; i < BATCH * T; i++)
            unpadded = unpadded && inputs[i] == SIZE_MAX && targets[i] == SIZE_MAX;
        for (b = 0; b < count; b++) {
            const char *cells[7] = {c[0], c[1], c[2], in, tg, c[3], c[4]};
            double losses[T], row = 0.0;
            for (t = 0; t < T; t++) {
                losses[t] = token_loss(targets[b * T + t]);
                row += losses[t];
            }
            ok = ok && llm_demo_ok("ch21", llm_loss_add(&part[k], row, T, &err), &err)
                 && llm_demo_ok("ch21", llm_loss_add(&epoch, row, T, &err), &err);
            snprintf(c[0], sizeof c[0], "%zu", k);
            snprintf(c[1], sizeof c[1], "%zu", b);
            window_name(c[2], sizeof c[2], order[first + b]);
            llm_fmt_sizes(in, sizeof in, inputs + b * T, T);
            llm_fmt_sizes(tg, sizeof tg, targets + b * T, T);
            sig_list(c[3], sizeof c[3], losses, T);
            snprintf(c[4], sizeof c[4], "%.6g", row);
            llm_trace_row(tr, "batches", 7, cells);
        }
        ok = ok && llm_demo_ok("ch21", llm_loss_mean(&part[k], &mean[k], &err), &err);
        shape[0] = count;
        shape[1] = T;
        llm_fmt_sizes(buf, sizeof buf, shape, 2);
        printf("batch=%zu windows=%s shape=%s\n", k, order_text(c[0], sizeof c[0], order + first,
               count), buf);
        llm_trace_value(tr, k == 0 ? "shape_first" : "shape_last", buf);
        printf("  inputs=%s", llm_fmt_sizes(buf, sizeof buf, inputs, count * T));
        printf(" targets=%s\n", llm_fmt_sizes(buf, sizeof buf, targets, count * T));
        snprintf(c[1], sizeof c[1], "%.6g", part[k].sum);
        snprintf(c[2], sizeof c[2], "%zu", part[k].tokens);
        llm_fmt(c[3], sizeof c[3], mean[k], 6);
        printf("  loss_sum=%s tokens=%s loss=%s\n", c[1], c[2], c[3]);
        llm_trace_value(tr, k == 0 ? "loss_first_sum" : "loss_last_sum", c[1]);
        llm_trace_value(tr, k == 0 ? "loss_first_tokens" : "loss_last_tokens", c[2]);
        llm_trace_value(tr, k == 0 ? "loss_first" : "loss_last", c[3]);
        if (k + 1 == nb) {
            snprintf(c[4], sizeof c[4], "%zu", count);
            llm_trace_value(tr, "last_count", c[4]);
        }
    }
    ok = ok && llm_demo_ok("ch21", llm_loss_merge(&merged, &part[0], &err), &err)
         && llm_demo_ok("ch21", llm_loss_merge(&merged, &part[1], &err), &err)
         && llm_demo_ok("ch21", llm_loss_mean(&epoch, &epoch_mean, &err), &err)
         && llm_demo_ok("ch21", llm_loss_mean(&merged, &merged_mean, &err), &err);
    identical = memcmp(&merged.sum, &epoch.sum, sizeof epoch.sum) == 0
                && merged.tokens == epoch.tokens
                && memcmp(&merged_mean, &epoch_mean, sizeof epoch_mean) == 0;
    snprintf(c[0], sizeof c[0], "%.6g", epoch.sum);
    snprintf(c[1], sizeof c[1], "%zu", epoch.tokens);
    llm_fmt(c[2], sizeof c[2], epoch_mean, 6);
    printf("epoch loss_sum=%s tokens=%s loss=%s\n", c[0], c[1], c[2]);
    llm_trace_value(tr, "epoch_sum", c[0]);
    llm_trace_value(tr, "epoch_tokens", c[1]);
    llm_trace_value(tr, "epoch_mean", c[2]);
    printf("halves merged: loss_sum=%.6g tokens=%zu versus one pass: %s\n", merged.sum,
           merged.tokens, identical ? "bit-identical" : "different");
    llm_trace_value(tr, "merge", identical ? "bit-identical" : "different");
    llm_fmt(c[3], sizeof c[3], 0.5 * (mean[0] + mean[1]), 6);
    llm_fmt(c[4], sizeof c[4], part[1].sum / (double)(BATCH * T), 6);
    printf("mean of batch means=%s last batch over %d tokens=%s\n", c[3], BATCH * T, c[4]);
    llm_trace_value(tr, "mean_of_means", c[3]);
    llm_trace_value(tr, "last_by_full", c[4]);
    printf("unwritten slots after the short batch=%s\n", unpadded ? "yes" : "no");
    llm_trace_value(tr, "unpadded", unpadded ? "yes" : "no");
    return ok && unpadded && identical;
}
static int threshold_against_modulo(llm_trace *tr)
{
    static const unsigned bounds8[4] = {3, 6, 100, 192};
    const uint64_t big = UINT64_C(3) << 62;
    const uint64_t bounds[6] = {2, 3, 4, 5, UINT64_C(3) << 62, (UINT64_C(1) << 63) + 1};
    llm_rng plain, fair, count;
    llm_error err;
    char c[6][64];
    size_t i, r, lower_mod = 0, lower_fair = 0, draws = 0;
    int ok = 1;
    for (i = 0; i < 4; i++) {
        const char *cells[5] = {c[0], c[1], c[2], c[3], c[4]};
        unsigned m = bounds8[i], tau = (256 - m) % m, hits[2][192];
        unsigned lo[2] = {256, 256}, hi[2] = {0, 0}, v, w;
        memset(hits, 0, sizeof hits);
        for (r = 0; r < 256; r++) {
            hits[0][r % m]++;
            if (r >= tau)
                hits[1][r % m]++;
        }
        for (w = 0; w < 2; w++)
            for (v = 0; v < m; v++) {
                lo[w] = hits[w][v] < lo[w] ? hits[w][v] : lo[w];
                hi[w] = hits[w][v] > hi[w] ? hits[w][v] : hi[w];
            }
        snprintf(c[0], sizeof c[0], "%u", m);
        snprintf(c[1], sizeof c[1], "%u", tau);
        snprintf(c[2], sizeof c[2], "%u–%u", lo[0], hi[0]);
        snprintf(c[3], sizeof c[3], "%.4f", (double)hi[0] / lo[0]);
        snprintf(c[4], sizeof c[4], "%u–%u", lo[1], hi[1]);
        printf("8-bit m=%u threshold=%u modulo=%u..%u (ratio %s) threshold=%u..%u\n", m, tau,
               lo[0], hi[0], c[3], lo[1], hi[1]);
        llm_trace_row(tr, "bias8", 5, cells);
        ok = ok && lo[1] == hi[1] && lo[1] * m == 256 - tau;
    }
    llm_rng_seed(&plain, 21);
    llm_rng_seed(&fair, 21);
    for (i = 0; i < 60000; i++) {
        uint64_t j = 0;
        lower_mod += llm_rng_next_u64(&plain) % big < (UINT64_C(1) << 62);
        ok = llm_demo_ok("ch21", llm_rng_below(&fair, big, &j, &err), &err) && ok;
        lower_fair += j < (UINT64_C(1) << 62);
    }
    llm_rng_seed(&count, 21);
    while (count.state != fair.state && draws < 1000000) {
        llm_rng_next_u64(&count);
        draws++;
    }
    llm_fmt(c[0], sizeof c[0], lower_mod / 60000.0, 4);
    llm_fmt(c[1], sizeof c[1], lower_fair / 60000.0, 4);
    snprintf(c[2], sizeof c[2], "%zu", draws);
    printf("m=3*2^62 lower third: modulo=%s threshold=%s (%s draws for 60000)\n",
           c[0], c[1], c[2]);
    llm_trace_value(tr, "lower_mod", c[0]);
    llm_trace_value(tr, "lower_fair", c[1]);
    llm_trace_value(tr, "fair_draws", c[2]);
    for (i = 0; i < 6; i++) {
        const char *cells[3] = {c[3], c[4], c[5]};
        uint64_t threshold = (UINT64_C(0) - bounds[i]) % bounds[i];
        snprintf(c[3], sizeof c[3], "%llu", (unsigned long long)bounds[i]);
        snprintf(c[4], sizeof c[4], "%llu", (unsigned long long)threshold);
        snprintf(c[5], sizeof c[5], "%.6g", (double)threshold * 0x1.0p-64);
        printf("bound=%s threshold=%s rejected=%s\n", c[3], c[4], c[5]);
        llm_trace_row(tr, "thresholds", 3, cells);
    }
    return ok && lower_fair > 19000 && lower_fair < 21000;
}
/* The position of w in the unshuffled list. */
static size_t position_of(const llm_window *windows, size_t n, llm_window w)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (windows[i].doc == w.doc && windows[i].start == w.start)
            return i;
    return n;
}

static int replay_and_coverage(llm_trace *tr, const llm_window *windows, size_t n)
{
    static unsigned orders[3125];                  /* 5^5 codes of 5 positions */
    unsigned first[5] = {0, 0, 0, 0, 0}, lo = 12000, hi = 0, seen = 0;
    llm_window a[8], b[8];
    llm_error err;
    char buf[256], c[2][32];
    size_t i, code, p, hits[5];
    uint64_t seed;
    int ok = n == 5, replay, covered = 1;
    if (!ok)
        return 0;
    memcpy(a, windows, n * sizeof *a);
    memcpy(b, windows, n * sizeof *b);
    ok = llm_demo_ok("ch21", llm_shuffle_windows(a, n, SEED, &err), &err)
         && llm_demo_ok("ch21", llm_shuffle_windows(b, n, SEED, &err), &err);
    replay = memcmp(a, b, n * sizeof *a) == 0;
    printf("seed=%d again: %s\n", SEED, replay ? "bit-identical" : "different");
    llm_trace_value(tr, "replay", replay ? "bit-identical" : "different");
    memcpy(b, windows, n * sizeof *b);
    ok = llm_demo_ok("ch21", llm_shuffle_windows(b, n, SEED + 1, &err), &err) && ok;
    printf("seed=%d order=%s\n", SEED + 1, order_text(buf, sizeof buf, b, n));
    llm_trace_value(tr, "other_order", buf);
    for (seed = 0; ok && seed < 12000; seed++) {
        memcpy(a, windows, n * sizeof *a);
        ok = llm_demo_ok("ch21", llm_shuffle_windows(a, n, seed, &err), &err);
        memset(hits, 0, sizeof hits);
        for (i = 0, code = 0; i < n; i++) {
            p = position_of(windows, n, a[i]);
            covered = covered && p < n;
            if (p < n)
                hits[p]++;
            code = code * 5 + (p < n ? p : 0);
        }
        for (i = 0; i < n; i++)
            covered = covered && hits[i] == 1;
        orders[code]++;
        first[position_of(windows, n, a[0]) % 5]++;
    }
    for (code = 0; code < 3125; code++)
        if (orders[code] > 0) {
            seen++;
            lo = orders[code] < lo ? orders[code] : lo;
            hi = orders[code] > hi ? orders[code] : hi;
        }
    for (i = 0; i < n; i++) {
        const char *cells[2] = {c[0], c[1]};
        window_name(c[0], sizeof c[0], windows[i]);
        snprintf(c[1], sizeof c[1], "%u", first[i]);
        llm_trace_row(tr, "first", 2, cells);
    }
    printf("seeds 0..11999: every window once=%s orders seen=%u each %u..%u times\n",
           covered ? "yes" : "no", seen, lo, hi);
    printf("first window counts=[%u, %u, %u, %u, %u]\n", first[0], first[1], first[2],
           first[3], first[4]);
    llm_trace_value(tr, "covered", covered ? "yes" : "no");
    snprintf(buf, sizeof buf, "%u", seen);
    llm_trace_value(tr, "orders_seen", buf);
    snprintf(buf, sizeof buf, "%u", lo);
    llm_trace_value(tr, "orders_min", buf);
    snprintf(buf, sizeof buf, "%u", hi);
    llm_trace_value(tr, "orders_max", buf);
    return ok && replay && covered && seen == 120;
}
static int refusals(llm_trace *tr, const llm_window *order, size_t n)
{
    static const llm_window past_end[2] = {{0, 0}, {1, 2}}, no_doc[1] = {{2, 0}};
    size_t inputs[BATCH * T], targets[BATCH * T], first = 99, count = 99, nb = 99, i;
    llm_loss_sum acc = {7.875, 10}, full = {DBL_MAX, 1}, many = {0.0, SIZE_MAX};
    const llm_loss_sum hollow = {1.0, 0}, none = {0.0, 0};
    llm_rng rng;
    uint64_t j = 99;
    double mean = -1.0;
    llm_error err;
    int same = 1;
    for (i = 0; i < BATCH * T; i++)
        inputs[i] = targets[i] = SIZE_MAX;
    llm_rng_seed(&rng, SEED);
    llm_demo_refusal_cells(tr, "bm", "a draw below 0", llm_rng_below(&rng, 0, &j, &err), &err);
    llm_demo_refusal_cells(tr, "bm", "shuffle a NULL list of 5",
                           llm_shuffle_windows(NULL, 5, SEED, &err), &err);
    llm_demo_refusal_cells(tr, "bm", "count batches of 0",
                           llm_batch_count(n, 0, &nb, &err), &err);
    llm_demo_refusal_cells(tr, "bm", "batch 2 of 5 windows in 3s",
                           llm_batch_span(n, BATCH, 2, &first, &count, &err), &err);
    llm_demo_refusal_cells(tr, "bm", "window b@2, past the end of b",
                           llm_batch_tokens(docs, 2, past_end, 2, 0, 2, T, inputs, targets,
                                            &err), &err);
    llm_trace_value(tr, "fit_message", err.message);
    llm_demo_refusal_cells(tr, "bm", "a window in document 2 of 2",
                           llm_batch_tokens(docs, 2, no_doc, 1, 0, 1, T, inputs, targets,
                                            &err), &err);
    llm_demo_refusal_cells(tr, "bm", "3 windows from position 3 of 5",
                           llm_batch_tokens(docs, 2, order, n, 3, 3, T, inputs, targets, &err),
                           &err);
    llm_demo_refusal_cells(tr, "bm", "a batch of 0 windows",
                           llm_batch_tokens(docs, 2, order, n, 0, 0, T, inputs, targets, &err),
                           &err);
    llm_demo_refusal_cells(tr, "bm", "T = 0", llm_batch_tokens(docs, 2, order, n, 0, 3, 0,
                                                               inputs, targets, &err), &err);
    llm_demo_refusal_cells(tr, "bm", "2 windows of T = SIZE_MAX",
                           llm_batch_tokens(docs, 2, order, n, 0, 2, SIZE_MAX, inputs, targets,
                                            &err), &err);
    llm_demo_refusal_cells(tr, "bm", "add 0 tokens", llm_loss_add(&acc, 0.0, 0, &err), &err);
    llm_demo_refusal_cells(tr, "bm", "add a NaN loss", llm_loss_add(&acc, NAN, 2, &err), &err);
    llm_demo_refusal_cells(tr, "bm", "add an infinite loss",
                           llm_loss_add(&acc, HUGE_VAL, 2, &err), &err);
    llm_demo_refusal_cells(tr, "bm", "add DBL_MAX to DBL_MAX",
                           llm_loss_add(&full, DBL_MAX, 1, &err), &err);
    llm_trace_value(tr, "overflow_message", err.message);
    llm_demo_refusal_cells(tr, "bm", "add 1 token to SIZE_MAX",
                           llm_loss_add(&many, 0.5, 1, &err), &err);
    llm_demo_refusal_cells(tr, "bm", "merge a part of sum 1 and no tokens",
                           llm_loss_merge(&acc, &hollow, &err), &err);
    llm_demo_refusal_cells(tr, "bm", "the mean of no tokens",
                           llm_loss_mean(&none, &mean, &err), &err);
    for (i = 0; i < BATCH * T; i++)
        same = same && inputs[i] == SIZE_MAX && targets[i] == SIZE_MAX;
    same = same && first == 99 && count == 99 && nb == 99 && j == 99 && mean == -1.0
           && rng.state == SEED && acc.sum == 7.875 && acc.tokens == 10
           && full.sum == DBL_MAX && full.tokens == 1 && many.sum == 0.0
           && many.tokens == SIZE_MAX;
    printf("unchanged after refusals=%s\n", same ? "yes" : "no");
    llm_trace_value(tr, "unchanged", same ? "yes" : "no");
    return same;
}

int main(int argc, char **argv)
{
    llm_trace tr;
    llm_window windows[8], order[8];
    size_t n;
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch21-mini-batches", &tr);
    if (status != 0)
        return status;
    printf("chapter=21 mini-batches\n");
    n = list_windows(&tr, windows);
    ok = shuffle_walk(&tr, windows, n, order) && ok;
    ok = batches(&tr, order, n) && ok;
    ok = threshold_against_modulo(&tr) && ok;
    ok = replay_and_coverage(&tr, windows, n) && ok;
    ok = refusals(&tr, order, n) && ok;
    return llm_demo_finish(&tr, ok);
}
