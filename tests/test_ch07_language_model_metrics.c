/* Chapter 7: mean negative log-likelihood and perplexity. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "llm/data.h"
#include "llm/error.h"
#include "llm/metrics.h"
#include "support.h"

START_TEST(the_course_fixtures)
{
    const double two[2] = {0.5, 0.25}, five[1] = {0.2}, zero[2] = {0.5, 0.0}, one[3] = {1, 1, 1};
    llm_score s = {0.0, 0};
    double m = 0, p = 0;
    ck_assert_int_eq(llm_score_add(&s, two, 2, NULL), LLM_OK);
    ck_assert(fabs(s.total - log(8.0)) < 1e-15 && s.targets == 2);
    ck_assert_int_eq(llm_score_mean(&s, &m, &p, NULL), LLM_OK);
    ck_assert(fabs(m - 1.039720770840) < 1e-12 && fabs(p - 2.828427124746) < 1e-12);
    s.total = 0.0;
    s.targets = 0;
    ck_assert_int_eq(llm_score_add(&s, five, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_score_mean(&s, &m, &p, NULL), LLM_OK);
    ck_assert(fabs(m - log(5.0)) < 1e-12 && fabs(p - 5.0) < 1e-12);
    s.total = 0.0;
    s.targets = 0;
    ck_assert_int_eq(llm_score_add(&s, zero, 2, NULL), LLM_OK);   /* no clamping */
    ck_assert_int_eq(llm_score_mean(&s, &m, &p, NULL), LLM_OK);
    ck_assert(isinf(m) && m > 0 && isinf(p));
    s.total = 0.0;
    s.targets = 0;
    ck_assert_int_eq(llm_score_add(&s, one, 3, NULL), LLM_OK);    /* perfect */
    ck_assert_int_eq(llm_score_mean(&s, &m, &p, NULL), LLM_OK);
    ck_assert(m == 0.0 && p == 1.0);
}
END_TEST

/* Token weighting: adding documents one after another into one score is
   the same as adding all their targets at once. */
START_TEST(scores_are_token_weighted)
{
    const double a[1] = {1.0}, b[3] = {0.25, 0.25, 0.25}, ab[4] = {1.0, 0.25, 0.25, 0.25};
    llm_score parts = {0.0, 0}, whole = {0.0, 0};
    double m1 = 0, m2 = 0;
    ck_assert_int_eq(llm_score_add(&parts, a, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_score_add(&parts, b, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_score_add(&whole, ab, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_score_mean(&parts, &m1, NULL, NULL), LLM_OK);
    ck_assert_int_eq(llm_score_mean(&whole, &m2, NULL, NULL), LLM_OK);
    ck_assert(m1 == m2 && fabs(m1 - 1.5 * log(2.0)) < 1e-15);
}
END_TEST

/* The bigram's score equals the sum of -ln of its probabilities, target by
   target, over the transitions within each document. */
START_TEST(the_bigram_score_is_its_probabilities)
{
    const size_t a[5] = {0, 2, 2, 3, 1}, b[4] = {0, 2, 3, 1};
    const llm_doc docs[2] = {{a, 5}, {b, 4}};
    llm_bigram m;
    llm_score s = {0.0, 0};
    double want = 0.0, p;
    size_t d, t;
    ck_assert_int_eq(llm_bigram_fit(&m, docs, 2, 5, 1.0, NULL), LLM_OK);
    ck_assert_int_eq(llm_bigram_score(&m, docs, 2, &s, NULL), LLM_OK);
    for (d = 0; d < 2; d++)
        for (t = 1; t < docs[d].length; t++) {
            ck_assert_int_eq(llm_bigram_prob(&m, docs[d].ids[t - 1], docs[d].ids[t], &p, NULL),
                             LLM_OK);
            want += -log(p);
        }
    ck_assert_uint_eq(s.targets, 7);
    ck_assert(s.total == want);
    llm_bigram_free(&m);
}
END_TEST

START_TEST(bad_probabilities_and_empty_scores_are_refused)
{
    const double bad[3] = {0.5, 1.5, 0.25}, neg[1] = {-0.1}, nan_p[1] = {NAN};
    const size_t far[3] = {0, 9, 1};
    const llm_doc docs[1] = {{far, 3}}, none[1] = {{NULL, 2}};
    llm_score s = {1.0, 2}, empty = {0.0, 0};
    llm_bigram m;
    const size_t a[3] = {0, 2, 1};
    const llm_doc ok[1] = {{a, 3}};
    double mean = -1.0, ppl = -1.0;
    llm_error err;
    REFUSED(llm_score_add(&s, bad, 3, &err), LLM_ERR_ARGUMENT, "score.add");
    ck_assert_str_eq(err.message, "probability 1.5 at position 1 is outside [0, 1]");
    REFUSED(llm_score_add(&s, neg, 1, &err), LLM_ERR_ARGUMENT, "score.add");
    REFUSED(llm_score_add(&s, nan_p, 1, &err), LLM_ERR_ARGUMENT, "score.add");
    REFUSED(llm_score_add(&s, NULL, 1, &err), LLM_ERR_ARGUMENT, "score.add");
    s.targets = SIZE_MAX;
    REFUSED(llm_score_add(&s, neg, 1, &err), LLM_ERR_OVERFLOW, "score.add");
    s.targets = 2;
    ck_assert(s.total == 1.0 && s.targets == 2);
    REFUSED(llm_score_mean(&empty, &mean, &ppl, &err), LLM_ERR_EMPTY, "score.mean");
    REFUSED(llm_score_mean(NULL, &mean, &ppl, &err), LLM_ERR_ARGUMENT, "score.mean");
    ck_assert(mean == -1.0 && ppl == -1.0);
    ck_assert_int_eq(llm_bigram_fit(&m, ok, 1, 5, 1.0, NULL), LLM_OK);
    REFUSED(llm_bigram_score(&m, docs, 1, &s, &err), LLM_ERR_TOKEN,
            "bigram.score <- bigram.prob");
    ck_assert_ptr_nonnull(strstr(err.message, "document 0, position 1"));
    REFUSED(llm_bigram_score(&m, none, 1, &s, &err), LLM_ERR_ARGUMENT, "bigram.score");
    REFUSED(llm_bigram_score(NULL, ok, 1, &s, &err), LLM_ERR_ARGUMENT, "bigram.score");
    ck_assert(s.total == 1.0 && s.targets == 2);
    llm_bigram_free(&m);
}
END_TEST

Suite *ch07_language_model_metrics_suite(void)
{
    const TTest *tests[] = {
        the_course_fixtures,
        scores_are_token_weighted,
        the_bigram_score_is_its_probabilities,
        bad_probabilities_and_empty_scores_are_refused,
    };
    return suite_of("ch07 language model metrics", tcase_of("metrics", 0, tests, COUNT(tests)));
}
