/* Chapter 21: unbiased bounded draws, seeded shuffles, batches, token-weighted means. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "llm/error.h"
#include "llm/nn.h"
#include "llm/data.h"
#include "llm/optim.h"
#include "support.h"

/* The fixture: a = [0,10,11,12,1], b = [0,20,21,1], T = 2, stride 1. */
static const size_t doc_a[5] = {0, 10, 11, 12, 1}, doc_b[4] = {0, 20, 21, 1};
static const llm_doc docs[2] = {{doc_a, 5}, {doc_b, 4}};

/* Chapter 5's rule, for the tests: windows at every start that fits. */
static size_t cut(const llm_doc *d, size_t ndocs, size_t T, llm_window *out)
{
    size_t i, s, n = 0;
    for (i = 0; i < ndocs; i++)
        for (s = 0; s + T + 1 <= d[i].length; s++) {
            out[n].doc = i;
            out[n].start = s;
            n++;
        }
    return n;
}

static double token_loss(size_t id)
{
    switch (id) {
    case 1:  return 0.25;
    case 10: case 11: case 12: return 0.5;
    case 20: return 1.875;
    case 21: return 1.5;
    default: return 0.0;
    }
}

/* The specification, written independently: Fisher-Yates from the top
   with the threshold rule on a fresh SplitMix64. */
static void spec_shuffle(size_t *x, size_t n, uint64_t seed)
{
    llm_rng rng;
    size_t u;
    llm_rng_seed(&rng, seed);
    for (u = n; u > 1; u--) {
        uint64_t bound = u, threshold = (UINT64_C(0) - bound) % bound, r, t;
        do
            r = llm_rng_next_u64(&rng);
        while (r < threshold);
        t = x[u - 1];
        x[u - 1] = x[r % bound];
        x[r % bound] = t;
    }
}

START_TEST(below_returns_the_first_draw_past_the_threshold)
{
    /* bound 2^63 + 1 has threshold 2^63 - 1: about half the draws are
       rejected, so some seeds must need a second draw */
    const uint64_t bound = (UINT64_C(1) << 63) + 1;
    uint64_t seed, out, r, threshold = (UINT64_C(0) - bound) % bound;
    size_t rejected = 0;
    ck_assert(threshold == (UINT64_C(1) << 63) - 1);
    for (seed = 0; seed < 200; seed++) {
        llm_rng rng, copy;
        llm_rng_seed(&rng, seed);
        copy = rng;
        do {
            r = llm_rng_next_u64(&copy);
            rejected += r < threshold;
        } while (r < threshold);
        ck_assert_int_eq(llm_rng_below(&rng, bound, &out, NULL), LLM_OK);
        ck_assert(out == r % bound);
        ck_assert(rng.state == copy.state);        /* exactly the draws used */
    }
    ck_assert_uint_gt(rejected, 50);
}
END_TEST

START_TEST(below_small_bounds_take_one_draw_and_stay_in_range)
{
    llm_rng rng, copy;
    uint64_t bound, out;
    int k;
    llm_rng_seed(&rng, 3);
    for (bound = 1; bound <= 64; bound++)
        for (k = 0; k < 50; k++) {
            copy = rng;
            uint64_t r = llm_rng_next_u64(&copy);
            ck_assert_int_eq(llm_rng_below(&rng, bound, &out, NULL), LLM_OK);
            ck_assert(out < bound);
            if (r >= (UINT64_C(0) - bound) % bound) {
                ck_assert(out == r % bound);
                ck_assert(rng.state == copy.state);
            }
        }
    /* bound 1: always 0, one draw */
    llm_rng_seed(&rng, 9);
    copy = rng;
    llm_rng_next_u64(&copy);
    ck_assert_int_eq(llm_rng_below(&rng, 1, &out, NULL), LLM_OK);
    ck_assert(out == 0);
    ck_assert(rng.state == copy.state);
    /* the largest bound: threshold 1, any draw but 0 accepted */
    ck_assert_int_eq(llm_rng_below(&rng, UINT64_MAX, &out, NULL), LLM_OK);
    ck_assert(out < UINT64_MAX);
}
END_TEST

START_TEST(the_threshold_leaves_a_multiple_of_the_bound)
{
    /* 2^64 - threshold draws remain, and they must split evenly */
    static const uint64_t bounds[] = {1, 2, 3, 5, 6, 7, 10, 100, 1000003,
                                      UINT64_C(3) << 62, (UINT64_C(1) << 63) + 1,
                                      UINT64_MAX - 1, UINT64_MAX};
    size_t i;
    for (i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
        uint64_t m = bounds[i], tau = (UINT64_C(0) - m) % m;
        ck_assert(tau < m);
        if (tau == 0)
            ck_assert(UINT64_MAX % m == m - 1);     /* m divides 2^64 */
        else
            ck_assert((UINT64_C(0) - tau) % m == 0); /* (2^64 - tau) mod m */
    }
    /* exhaustively at 8 bits: the same rule gives exactly equal counts */
    for (i = 1; i <= 256; i++) {
        unsigned m = (unsigned)i, tau = (256 - m) % m, hits[256], r, v;
        memset(hits, 0, sizeof hits);
        for (r = tau; r < 256; r++)
            hits[r % m]++;
        for (v = 1; v < m; v++)
            ck_assert_uint_eq(hits[v], hits[0]);
    }
}
END_TEST

START_TEST(below_is_unbiased_where_the_modulo_is_not)
{
    const uint64_t big = UINT64_C(3) << 62;
    llm_rng plain, fair;
    uint64_t out;
    size_t i, lower_mod = 0, lower_fair = 0;
    llm_rng_seed(&plain, 5);
    llm_rng_seed(&fair, 5);
    for (i = 0; i < 60000; i++) {
        lower_mod += llm_rng_next_u64(&plain) % big < (UINT64_C(1) << 62);
        ck_assert_int_eq(llm_rng_below(&fair, big, &out, NULL), LLM_OK);
        ck_assert(out < big);
        lower_fair += out < (UINT64_C(1) << 62);
    }
    /* one third versus one half; 5 standard deviations is about 600 */
    ck_assert_uint_gt(lower_fair, 19400);
    ck_assert_uint_lt(lower_fair, 20600);
    ck_assert_uint_gt(lower_mod, 29400);
}
END_TEST

START_TEST(below_refusals_touch_nothing)
{
    llm_rng rng;
    llm_error err;
    uint64_t out = 77;
    llm_rng_seed(&rng, 1);
    ck_assert_int_eq(llm_rng_below(&rng, 0, &out, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "rng.below");
    ck_assert_str_eq(err.message, "the bound must be at least 1, got 0");
    ck_assert_int_eq(llm_rng_below(NULL, 3, &out, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rng_below(&rng, 3, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rng_below(&rng, 0, &out, NULL), LLM_ERR_ARGUMENT);
    ck_assert(out == 77);
    ck_assert(rng.state == 1);
}
END_TEST

START_TEST(the_fixture_shuffles_to_the_rust_course_order)
{
    llm_window w[8];
    size_t n = cut(docs, 2, 2, w);
    /* b@1, a@1, b@0, a@0, a@2 */
    static const llm_window expect[5] = {{1, 1}, {0, 1}, {1, 0}, {0, 0}, {0, 2}};
    ck_assert_uint_eq(n, 5);
    ck_assert_int_eq(llm_shuffle_windows(w, n, 7, NULL), LLM_OK);
    ck_assert_int_eq(memcmp(w, expect, sizeof expect), 0);
}
END_TEST

START_TEST(the_shuffle_follows_the_specification)
{
    size_t n, i;
    uint64_t seed;
    for (n = 0; n <= 20; n++)
        for (seed = 0; seed < 40; seed++) {
            llm_window w[20];
            size_t x[20];
            for (i = 0; i < n; i++) {
                w[i].doc = i;
                w[i].start = 100 + i;
                x[i] = i;
            }
            ck_assert_int_eq(llm_shuffle_windows(w, n, seed * 7919, NULL), LLM_OK);
            spec_shuffle(x, n, seed * 7919);
            for (i = 0; i < n; i++) {
                ck_assert_uint_eq(w[i].doc, x[i]);
                ck_assert_uint_eq(w[i].start, 100 + x[i]);
            }
        }
}
END_TEST

START_TEST(the_same_seed_replays_and_seeds_differ)
{
    llm_window a[12], b[12];
    size_t i, differ = 0;
    uint64_t seed;
    for (seed = 0; seed < 100; seed++) {
        for (i = 0; i < 12; i++) {
            a[i].doc = b[i].doc = i / 4;
            a[i].start = b[i].start = i % 4;
        }
        ck_assert_int_eq(llm_shuffle_windows(a, 12, seed, NULL), LLM_OK);
        ck_assert_int_eq(llm_shuffle_windows(b, 12, seed, NULL), LLM_OK);
        ck_assert_int_eq(memcmp(a, b, sizeof a), 0);
        ck_assert_int_eq(llm_shuffle_windows(b, 12, seed, NULL), LLM_OK);
        differ += memcmp(a, b, sizeof a) != 0;     /* shuffling again moves them */
    }
    ck_assert_uint_gt(differ, 90);
}
END_TEST

START_TEST(every_window_exactly_once_and_every_order_appears)
{
    static unsigned orders[3125];
    unsigned first[5] = {0, 0, 0, 0, 0}, seen = 0;
    llm_window base[8], w[8];
    size_t n = cut(docs, 2, 2, base), i, k, code;
    uint64_t seed;
    memset(orders, 0, sizeof orders);
    for (seed = 0; seed < 12000; seed++) {
        size_t hits[5] = {0, 0, 0, 0, 0};
        memcpy(w, base, sizeof w);
        ck_assert_int_eq(llm_shuffle_windows(w, n, seed, NULL), LLM_OK);
        for (i = 0, code = 0; i < n; i++) {
            for (k = 0; k < n; k++)
                if (w[i].doc == base[k].doc && w[i].start == base[k].start)
                    break;
            ck_assert_uint_lt(k, n);
            hits[k]++;
            code = code * 5 + k;
            if (i == 0)
                first[k]++;
        }
        for (k = 0; k < n; k++)
            ck_assert_uint_eq(hits[k], 1);
        orders[code]++;
    }
    for (code = 0; code < 3125; code++)
        if (orders[code] > 0) {
            seen++;
            ck_assert_uint_gt(orders[code], 50);   /* about 100 each */
            ck_assert_uint_lt(orders[code], 150);
        }
    ck_assert_uint_eq(seen, 120);
    for (k = 0; k < 5; k++) {
        ck_assert_uint_gt(first[k], 2200);         /* about 2400 each */
        ck_assert_uint_lt(first[k], 2600);
    }
}
END_TEST

START_TEST(empty_and_single_lists_stay_as_they_are)
{
    llm_window one = {3, 4};
    llm_error err;
    ck_assert_int_eq(llm_shuffle_windows(NULL, 0, 7, NULL), LLM_OK);
    ck_assert_int_eq(llm_shuffle_windows(&one, 1, 7, NULL), LLM_OK);
    ck_assert_uint_eq(one.doc, 3);
    ck_assert_uint_eq(one.start, 4);
    ck_assert_int_eq(llm_shuffle_windows(NULL, 5, 7, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "data.shuffle_windows");
}
END_TEST

START_TEST(batch_counts_and_spans)
{
    size_t nb = 0, first = 0, count = 0;
    ck_assert_int_eq(llm_batch_count(5, 3, &nb, NULL), LLM_OK);
    ck_assert_uint_eq(nb, 2);
    ck_assert_int_eq(llm_batch_count(6, 3, &nb, NULL), LLM_OK);
    ck_assert_uint_eq(nb, 2);
    ck_assert_int_eq(llm_batch_count(0, 3, &nb, NULL), LLM_OK);
    ck_assert_uint_eq(nb, 0);
    ck_assert_int_eq(llm_batch_count(SIZE_MAX, 2, &nb, NULL), LLM_OK);
    ck_assert_uint_eq(nb, SIZE_MAX / 2 + 1);      /* no overflow */
    ck_assert_int_eq(llm_batch_span(5, 3, 0, &first, &count, NULL), LLM_OK);
    ck_assert_uint_eq(first, 0);
    ck_assert_uint_eq(count, 3);
    ck_assert_int_eq(llm_batch_span(5, 3, 1, &first, &count, NULL), LLM_OK);
    ck_assert_uint_eq(first, 3);
    ck_assert_uint_eq(count, 2);                  /* the short last batch */
    ck_assert_int_eq(llm_batch_span(6, 3, 1, &first, &count, NULL), LLM_OK);
    ck_assert_uint_eq(count, 3);
    ck_assert_int_eq(llm_batch_span(2, 5, 0, &first, &count, NULL), LLM_OK);
    ck_assert_uint_eq(count, 2);
    ck_assert_int_eq(llm_batch_span(SIZE_MAX, 2, SIZE_MAX / 2, &first, &count, NULL),
                     LLM_OK);
    ck_assert_uint_eq(first, SIZE_MAX - 1);
    ck_assert_uint_eq(count, 1);
}
END_TEST

START_TEST(batch_count_and_span_refusals)
{
    llm_error err;
    size_t nb = 99, first = 99, count = 99;
    ck_assert_int_eq(llm_batch_count(5, 0, &nb, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "data.batch_count");
    ck_assert_int_eq(llm_batch_count(5, 3, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_batch_span(5, 3, 2, &first, &count, &err), LLM_ERR_INDEX);
    ck_assert_str_eq(where(&err), "data.batch_span");
    ck_assert_str_eq(err.message, "no batch 2: 5 windows in batches of 3 make 2");
    ck_assert_int_eq(llm_batch_span(0, 3, 0, &first, &count, &err), LLM_ERR_INDEX);
    ck_assert_int_eq(llm_batch_span(5, 0, 0, &first, &count, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_batch_span(5, 3, 0, NULL, &count, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_batch_span(5, 3, 0, &first, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_uint_eq(nb, 99);
    ck_assert_uint_eq(first, 99);
    ck_assert_uint_eq(count, 99);
}
END_TEST

START_TEST(the_fixture_batches_have_the_rust_course_shapes_and_tokens)
{
    static const size_t in0[6] = {20, 21, 10, 11, 0, 20}, tg0[6] = {21, 1, 11, 12, 20, 21};
    static const size_t in1[4] = {0, 10, 11, 12}, tg1[4] = {10, 11, 12, 1};
    llm_window w[8];
    size_t n = cut(docs, 2, 2, w), in[6], tg[6], first, count, i;
    ck_assert_int_eq(llm_shuffle_windows(w, n, 7, NULL), LLM_OK);
    ck_assert_int_eq(llm_batch_span(n, 3, 0, &first, &count, NULL), LLM_OK);
    ck_assert_int_eq(llm_batch_tokens(docs, 2, w, n, first, count, 2, in, tg, NULL), LLM_OK);
    ck_assert_uint_eq(count, 3);
    ck_assert_int_eq(memcmp(in, in0, sizeof in0), 0);
    ck_assert_int_eq(memcmp(tg, tg0, sizeof tg0), 0);
    for (i = 0; i < 6; i++)
        in[i] = tg[i] = SIZE_MAX;
    ck_assert_int_eq(llm_batch_span(n, 3, 1, &first, &count, NULL), LLM_OK);
    ck_assert_int_eq(llm_batch_tokens(docs, 2, w, n, first, count, 2, in, tg, NULL), LLM_OK);
    ck_assert_uint_eq(count, 2);
    ck_assert_int_eq(memcmp(in, in1, sizeof in1), 0);
    ck_assert_int_eq(memcmp(tg, tg1, sizeof tg1), 0);
    for (i = 4; i < 6; i++) {                        /* not padded */
        ck_assert(in[i] == SIZE_MAX);
        ck_assert(tg[i] == SIZE_MAX);
    }
}
END_TEST

START_TEST(windows_that_end_exactly_at_the_document_end_fit)
{
    /* a@2 uses the last token as its last target; T = 4 fills a exactly */
    const llm_window last = {0, 2}, whole = {0, 0};
    size_t in[4], tg[4];
    ck_assert_int_eq(llm_batch_tokens(docs, 2, &last, 1, 0, 1, 2, in, tg, NULL), LLM_OK);
    ck_assert_uint_eq(in[0], 11);
    ck_assert_uint_eq(tg[1], 1);
    ck_assert_int_eq(llm_batch_tokens(docs, 2, &whole, 1, 0, 1, 4, in, tg, NULL), LLM_OK);
    ck_assert_uint_eq(in[3], 12);
    ck_assert_uint_eq(tg[3], 1);
    ck_assert_int_eq(llm_batch_tokens(docs, 2, &whole, 1, 0, 1, 5, in, tg, NULL),
                     LLM_ERR_INDEX);
}
END_TEST

START_TEST(batch_tokens_refusals_name_the_window_and_write_nothing)
{
    static const llm_window past_end[2] = {{0, 0}, {1, 2}}, no_doc[1] = {{2, 0}};
    static const llm_window far[1] = {{0, SIZE_MAX}};
    const llm_doc hollow[1] = {{NULL, 3}};
    llm_window w[8];
    size_t n = cut(docs, 2, 2, w), in[6], tg[6], i;
    llm_error err;
    for (i = 0; i < 6; i++)
        in[i] = tg[i] = 42;
    ck_assert_int_eq(llm_batch_tokens(docs, 2, past_end, 2, 0, 2, 2, in, tg, &err),
                     LLM_ERR_INDEX);
    ck_assert_str_eq(where(&err), "data.batch_tokens");
    ck_assert_str_eq(err.message, "window 1 (document 1, start 2) does not fit: "
                     "start + T + 1 must be at most the length 4, T = 2");
    ck_assert_int_eq(llm_batch_tokens(docs, 2, far, 1, 0, 1, 2, in, tg, &err),
                     LLM_ERR_INDEX);
    ck_assert_int_eq(llm_batch_tokens(docs, 2, no_doc, 1, 0, 1, 2, in, tg, &err),
                     LLM_ERR_INDEX);
    ck_assert_str_eq(err.message, "window 0 names document 2; there are 2 documents");
    ck_assert_int_eq(llm_batch_tokens(hollow, 1, no_doc, 1, 0, 1, 2, in, tg, &err),
                     LLM_ERR_INDEX);
    ck_assert_int_eq(llm_batch_tokens(hollow, 1, past_end, 1, 0, 1, 2, in, tg, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_batch_tokens(NULL, 0, w, n, 0, 1, 2, in, tg, &err),
                     LLM_ERR_INDEX);                /* no documents at all */
    ck_assert_int_eq(llm_batch_tokens(NULL, 2, w, n, 0, 1, 2, in, tg, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_batch_tokens(docs, 2, w, n, 3, 3, 2, in, tg, &err), LLM_ERR_INDEX);
    ck_assert_str_eq(err.message,
                     "the batch of 3 windows from position 3 runs past the 5 windows");
    ck_assert_int_eq(llm_batch_tokens(docs, 2, w, n, 6, 1, 2, in, tg, &err), LLM_ERR_INDEX);
    ck_assert_int_eq(llm_batch_tokens(docs, 2, w, n, SIZE_MAX, 2, 2, in, tg, &err),
                     LLM_ERR_INDEX);
    ck_assert_int_eq(llm_batch_tokens(docs, 2, w, n, 0, 0, 2, in, tg, &err), LLM_ERR_EMPTY);
    ck_assert_int_eq(llm_batch_tokens(docs, 2, w, n, 0, 3, 0, in, tg, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_batch_tokens(docs, 2, w, n, 0, 2, SIZE_MAX, in, tg, &err),
                     LLM_ERR_OVERFLOW);
    ck_assert_int_eq(llm_batch_tokens(docs, 2, NULL, n, 0, 1, 2, in, tg, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_batch_tokens(docs, 2, w, n, 0, 1, 2, NULL, tg, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_batch_tokens(docs, 2, w, n, 0, 1, 2, in, NULL, &err),
                     LLM_ERR_ARGUMENT);
    /* a bad window after good ones: the good rows are not written either */
    w[1] = past_end[1];
    ck_assert_int_eq(llm_batch_tokens(docs, 2, w, n, 0, 3, 2, in, tg, &err), LLM_ERR_INDEX);
    for (i = 0; i < 6; i++) {
        ck_assert_uint_eq(in[i], 42);
        ck_assert_uint_eq(tg[i], 42);
    }
}
END_TEST

START_TEST(token_weighted_means_of_the_fixture)
{
    llm_window w[8];
    size_t n = cut(docs, 2, 2, w), in[6], tg[6], first, count, k, i;
    llm_loss_sum epoch = {0.0, 0};
    double mean, expect_sum[2] = {6.125, 1.75}, expect_mean[2] = {6.125 / 6, 0.4375};
    ck_assert_int_eq(llm_shuffle_windows(w, n, 7, NULL), LLM_OK);
    for (k = 0; k < 2; k++) {
        llm_loss_sum batch = {0.0, 0};
        double sum = 0.0;
        ck_assert_int_eq(llm_batch_span(n, 3, k, &first, &count, NULL), LLM_OK);
        ck_assert_int_eq(llm_batch_tokens(docs, 2, w, n, first, count, 2, in, tg, NULL),
                         LLM_OK);
        for (i = 0; i < count * 2; i++)
            sum += token_loss(tg[i]);
        ck_assert_int_eq(llm_loss_add(&batch, sum, count * 2, NULL), LLM_OK);
        ck_assert_int_eq(llm_loss_add(&epoch, sum, count * 2, NULL), LLM_OK);
        ck_assert_int_eq(llm_loss_mean(&batch, &mean, NULL), LLM_OK);
        ck_assert(batch.sum == expect_sum[k]);
        ck_assert(mean == expect_mean[k]);
    }
    ck_assert_double_eq_tol(6.125 / 6, 1.020833, 5e-7);
    ck_assert_int_eq(llm_loss_mean(&epoch, &mean, NULL), LLM_OK);
    ck_assert_uint_eq(epoch.tokens, 10);
    ck_assert(mean == 0.7875);                      /* not (1.020833 + 0.4375) / 2 */
    ck_assert(fabs(mean - 0.5 * (expect_mean[0] + expect_mean[1])) > 0.05);
}
END_TEST

START_TEST(split_accumulators_merge_exactly)
{
    /* row sums that are multiples of 1/8 below 2^10: every partial sum is
       exact, so any split merges to the one-pass bits */
    double rows[40];
    llm_rng rng;
    size_t i, cut_at;
    llm_rng_seed(&rng, 11);
    for (i = 0; i < 40; i++)
        rows[i] = (double)(llm_rng_next_u64(&rng) % 8192) / 8.0;
    for (cut_at = 0; cut_at <= 40; cut_at++) {
        llm_loss_sum one = {0.0, 0}, left = {0.0, 0}, right = {0.0, 0};
        double m1, m2;
        for (i = 0; i < 40; i++) {
            ck_assert_int_eq(llm_loss_add(&one, rows[i], 2, NULL), LLM_OK);
            ck_assert_int_eq(llm_loss_add(i < cut_at ? &left : &right, rows[i], 2, NULL),
                             LLM_OK);
        }
        ck_assert_int_eq(llm_loss_merge(&left, &right, NULL), LLM_OK);
        ck_assert_int_eq(memcmp(&left.sum, &one.sum, sizeof one.sum), 0);
        ck_assert_uint_eq(left.tokens, one.tokens);
        ck_assert_int_eq(llm_loss_mean(&left, &m1, NULL), LLM_OK);
        ck_assert_int_eq(llm_loss_mean(&one, &m2, NULL), LLM_OK);
        ck_assert_int_eq(memcmp(&m1, &m2, sizeof m1), 0);
    }
}
END_TEST

START_TEST(merging_an_empty_part_changes_nothing)
{
    llm_loss_sum acc = {-0.0, 0}, none = {0.0, 0}, some = {1.75, 4};
    double zero = -0.0;
    ck_assert_int_eq(llm_loss_merge(&acc, &none, NULL), LLM_OK);
    ck_assert_int_eq(memcmp(&acc.sum, &zero, sizeof zero), 0);   /* -0 stays -0 */
    ck_assert_uint_eq(acc.tokens, 0);
    ck_assert_int_eq(llm_loss_merge(&acc, &some, NULL), LLM_OK);
    ck_assert(acc.sum == 1.75);
    ck_assert_uint_eq(acc.tokens, 4);
    ck_assert_int_eq(llm_loss_merge(&acc, &acc, NULL), LLM_OK);  /* into itself */
    ck_assert(acc.sum == 3.5);
    ck_assert_uint_eq(acc.tokens, 8);
}
END_TEST

START_TEST(failed_adds_and_merges_roll_back)
{
    llm_loss_sum acc = {7.875, 10}, full = {DBL_MAX, 1}, many = {0.5, SIZE_MAX - 1};
    const llm_loss_sum hollow = {1.0, 0}, nan_part = {NAN, 2}, big = {DBL_MAX, 3};
    const llm_loss_sum wide = {0.0, 2};
    llm_error err;
    ck_assert_int_eq(llm_loss_add(&acc, 0.0, 0, &err), LLM_ERR_EMPTY);
    ck_assert_str_eq(where(&err), "data.loss_add");
    ck_assert_int_eq(llm_loss_add(&acc, NAN, 2, &err), LLM_ERR_NONFINITE);
    ck_assert_int_eq(llm_loss_add(&acc, -HUGE_VAL, 2, &err), LLM_ERR_NONFINITE);
    ck_assert_int_eq(llm_loss_add(&full, DBL_MAX, 1, &err), LLM_ERR_NONFINITE);
    ck_assert_int_eq(llm_loss_add(&many, 0.5, 2, &err), LLM_ERR_OVERFLOW);
    ck_assert_int_eq(llm_loss_add(NULL, 0.5, 2, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_loss_merge(&acc, &hollow, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "data.loss_merge");
    ck_assert_int_eq(llm_loss_merge(&acc, &nan_part, &err), LLM_ERR_NONFINITE);
    ck_assert_int_eq(llm_loss_merge(&full, &big, &err), LLM_ERR_NONFINITE);
    ck_assert_int_eq(llm_loss_merge(&many, &wide, &err), LLM_ERR_OVERFLOW);
    ck_assert_int_eq(llm_loss_merge(NULL, &wide, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_loss_merge(&acc, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert(acc.sum == 7.875);
    ck_assert_uint_eq(acc.tokens, 10);
    ck_assert(full.sum == DBL_MAX);
    ck_assert_uint_eq(full.tokens, 1);
    ck_assert(many.sum == 0.5);
    ck_assert_uint_eq(many.tokens, SIZE_MAX - 1);
    /* one more token still fits */
    ck_assert_int_eq(llm_loss_add(&many, 0.5, 1, NULL), LLM_OK);
    ck_assert_uint_eq(many.tokens, SIZE_MAX);
}
END_TEST

START_TEST(mean_refusals)
{
    const llm_loss_sum none = {0.0, 0}, some = {1.75, 4};
    llm_error err;
    double mean = -1.0;
    ck_assert_int_eq(llm_loss_mean(&none, &mean, &err), LLM_ERR_EMPTY);
    ck_assert_str_eq(where(&err), "data.loss_mean");
    ck_assert_int_eq(llm_loss_mean(NULL, &mean, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_loss_mean(&some, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert(mean == -1.0);
    ck_assert_int_eq(llm_loss_mean(&some, &mean, NULL), LLM_OK);
    ck_assert(mean == 0.4375);
}
END_TEST

Suite *ch21_mini_batches_suite(void)
{
    const TTest *tests[] = {
        below_returns_the_first_draw_past_the_threshold,
        below_small_bounds_take_one_draw_and_stay_in_range,
        the_threshold_leaves_a_multiple_of_the_bound,
        below_is_unbiased_where_the_modulo_is_not,
        below_refusals_touch_nothing,
        the_fixture_shuffles_to_the_rust_course_order,
        the_shuffle_follows_the_specification,
        the_same_seed_replays_and_seeds_differ,
        every_window_exactly_once_and_every_order_appears,
        empty_and_single_lists_stay_as_they_are,
        batch_counts_and_spans,
        batch_count_and_span_refusals,
        the_fixture_batches_have_the_rust_course_shapes_and_tokens,
        windows_that_end_exactly_at_the_document_end_fit,
        batch_tokens_refusals_name_the_window_and_write_nothing,
        token_weighted_means_of_the_fixture,
        split_accumulators_merge_exactly,
        merging_an_empty_part_changes_nothing,
        failed_adds_and_merges_roll_back,
        mean_refusals,
    };
    return suite_of("ch21 mini-batches",
                    tcase_of("mini-batches", 0, tests, COUNT(tests)));
}
