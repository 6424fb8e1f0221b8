/* Chapter 6: the count bigram baseline. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "llm/data.h"
#include "llm/error.h"
#include "llm/metrics.h"
#include "support.h"

static const size_t doc_a[5] = {0, 2, 2, 3, 1}, doc_b[4] = {0, 2, 3, 1};

START_TEST(the_course_fixture)
{
    const llm_doc docs[2] = {{doc_a, 5}, {doc_b, 4}};
    const double mle[5] = {0, 0, 1.0 / 3, 2.0 / 3, 0}, smooth[5] = {1.0 / 8, 1.0 / 8, 2.0 / 8,
                                                                   3.0 / 8, 1.0 / 8};
    llm_bigram m;
    llm_error err;
    double p, sum = 0.0;
    size_t j;
    ck_assert_int_eq(llm_bigram_fit(&m, docs, 2, 5, 1.0, NULL), LLM_OK);
    ck_assert_uint_eq(m.transitions, 7);
    ck_assert_uint_eq(m.counts[1 * 5 + 0], 0);                 /* no EOS -> BOS */
    for (j = 0; j < 5; j++) {
        ck_assert_int_eq(llm_bigram_mle(&m, 2, j, &p, NULL), LLM_OK);
        ck_assert(p == mle[j]);
        ck_assert_int_eq(llm_bigram_prob(&m, 2, j, &p, NULL), LLM_OK);
        ck_assert(p == smooth[j]);
        ck_assert_int_eq(llm_bigram_prob(&m, 4, j, &p, NULL), LLM_OK);
        ck_assert(p == 1.0 / 5);                                /* row C: uniform */
        sum += p;
    }
    ck_assert(fabs(sum - 1.0) < 1e-15);
    p = -1.0;
    REFUSED(llm_bigram_mle(&m, 4, 3, &p, &err), LLM_ERR_EMPTY, "bigram.mle");
    ck_assert(p == -1.0);
    llm_bigram_free(&m);
    ck_assert(m.counts == NULL && m.vocab == 0);
    llm_bigram_free(NULL);
}
END_TEST

/* Seeded random documents: every row's smoothed probabilities sum to 1
   within rounding, the counts add up to the transitions, and the counts
   equal a recount by hand that never looks across two documents. */
START_TEST(counts_agree_with_a_recount)
{
    uint64_t s = 99;
    size_t trial;
    for (trial = 0; trial < 200; trial++) {
        size_t ids[6][12], lens[6], nd = 1 + trial % 6, d, t, i, j, total = 0;
        llm_doc docs[6];
        llm_bigram m;
        const size_t V = 2 + trial % 7;
        for (d = 0; d < nd; d++) {
            s = s * 6364136223846793005u + 1442695040888963407u;
            lens[d] = (size_t)(s >> 33) % 12;
            for (t = 0; t < lens[d]; t++) {
                s = s * 6364136223846793005u + 1442695040888963407u;
                ids[d][t] = (size_t)(s >> 40) % V;
            }
            docs[d].ids = ids[d];
            docs[d].length = lens[d];
        }
        ck_assert_int_eq(llm_bigram_fit(&m, docs, nd, V, 0.5, NULL), LLM_OK);
        for (i = 0; i < V; i++) {
            double sum = 0.0, p;
            size_t row = 0;
            for (j = 0; j < V; j++) {
                size_t c = 0;
                for (d = 0; d < nd; d++)
                    for (t = 0; t + 1 < lens[d]; t++)
                        c += ids[d][t] == i && ids[d][t + 1] == j;
                ck_assert_uint_eq(m.counts[i * V + j], c);
                row += c;
                ck_assert_int_eq(llm_bigram_prob(&m, i, j, &p, NULL), LLM_OK);
                ck_assert(p > 0.0 && p < 1.0 + 1e-15);
                sum += p;
            }
            ck_assert_uint_eq(m.rows[i], row);
            total += row;
            ck_assert(fabs(sum - 1.0) < 1e-12);
        }
        ck_assert_uint_eq(m.transitions, total);
        llm_bigram_free(&m);
    }
}
END_TEST

START_TEST(bad_fits_and_pairs_are_refused_and_nothing_changes)
{
    const llm_doc docs[2] = {{doc_a, 5}, {doc_b, 4}};
    const size_t seven[3] = {0, 7, 1};
    const llm_doc bad[1] = {{seven, 3}}, missing[1] = {{NULL, 2}};
    llm_bigram m, mark, good;
    llm_error err;
    double p = -1.0;
    mark_bytes(&mark, sizeof mark);
    m = mark;
    REFUSED(llm_bigram_fit(&m, docs, 2, 5, 0.0, &err), LLM_ERR_ARGUMENT, "bigram.fit");
    REFUSED(llm_bigram_fit(&m, docs, 2, 5, -1.0, &err), LLM_ERR_ARGUMENT, "bigram.fit");
    REFUSED(llm_bigram_fit(&m, docs, 2, 5, NAN, &err), LLM_ERR_ARGUMENT, "bigram.fit");
    REFUSED(llm_bigram_fit(&m, docs, 2, 5, INFINITY, &err), LLM_ERR_ARGUMENT, "bigram.fit");
    REFUSED(llm_bigram_fit(&m, docs, 2, 0, 1.0, &err), LLM_ERR_ARGUMENT, "bigram.fit");
    REFUSED(llm_bigram_fit(&m, docs, 2, SIZE_MAX / 2, 1.0, &err), LLM_ERR_OVERFLOW,
            "bigram.fit");
    REFUSED(llm_bigram_fit(&m, bad, 1, 5, 1.0, &err), LLM_ERR_TOKEN, "bigram.fit");
    ck_assert_str_eq(err.message, "document 0, position 1: ID 7 is outside the vocabulary of 5");
    REFUSED(llm_bigram_fit(&m, missing, 1, 5, 1.0, &err), LLM_ERR_ARGUMENT, "bigram.fit");
    REFUSED(llm_bigram_fit(NULL, docs, 2, 5, 1.0, &err), LLM_ERR_ARGUMENT, "bigram.fit");
    ck_assert(memcmp(&m, &mark, sizeof m) == 0);
    ck_assert_int_eq(llm_bigram_fit(&good, docs, 2, 5, 1.0, &err), LLM_OK);
    REFUSED(llm_bigram_prob(&good, 5, 0, &p, &err), LLM_ERR_TOKEN, "bigram.prob");
    REFUSED(llm_bigram_mle(&good, 0, 5, &p, &err), LLM_ERR_TOKEN, "bigram.mle");
    REFUSED(llm_bigram_prob(&good, 0, 0, NULL, &err), LLM_ERR_ARGUMENT, "bigram.prob");
    memset(&m, 0, sizeof m);
    REFUSED(llm_bigram_prob(&m, 0, 0, &p, &err), LLM_ERR_ARGUMENT, "bigram.prob");
    ck_assert(p == -1.0);
    llm_bigram_free(&good);
}
END_TEST

START_TEST(each_refused_allocation_leaves_the_model_untouched)
{
    const llm_doc docs[2] = {{doc_a, 5}, {doc_b, 4}};
    llm_bigram m, mark;
    llm_error err;
    size_t refused = 0;
    mark_bytes(&mark, sizeof mark);
    WALK(&refused, m = mark, llm_bigram_fit(&m, docs, 2, 5, 1.0, &err),
         memcmp(&m, &mark, sizeof m) == 0, (void)0);
    ck_assert_uint_eq(refused, 2);
    llm_bigram_free(&m);
}
END_TEST

Suite *ch06_bigram_baseline_suite(void)
{
    const TTest *tests[] = {
        the_course_fixture,
        counts_agree_with_a_recount,
        bad_fits_and_pairs_are_refused_and_nothing_changes,
        each_refused_allocation_leaves_the_model_untouched,
    };
    return suite_of("ch06 bigram baseline", tcase_of("bigram", 0, tests, COUNT(tests)));
}
