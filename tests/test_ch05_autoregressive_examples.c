/* Chapter 5: windows inside documents, never across. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "llm/data.h"
#include "llm/error.h"
#include "support.h"

static const size_t fixture[6] = {0, 41, 42, 43, 44, 1};

START_TEST(the_course_fixtures)
{
    const size_t shorter[3] = {0, 61, 1}, empty[2] = {0, 1};
    const llm_doc docs[3] = {{fixture, 6}, {shorter, 3}, {empty, 2}};
    llm_window w[8];
    size_t n = 0;
    ck_assert_int_eq(llm_windows(docs, 1, 3, 1, w, 8, &n, NULL), LLM_OK);
    ck_assert(n == 3 && w[0].start == 0 && w[1].start == 1 && w[2].start == 2);
    ck_assert(fixture[w[2].start + 3] == 1);                  /* the last target is EOS */
    ck_assert_int_eq(llm_windows(docs + 1, 1, 3, 1, w, 8, &n, NULL), LLM_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(llm_windows(docs, 1, 3, 2, w, 8, &n, NULL), LLM_OK);
    ck_assert(n == 2 && w[0].start == 0 && w[1].start == 2);
    ck_assert_int_eq(llm_windows(docs + 2, 1, 1, 1, w, 8, &n, NULL), LLM_OK);
    ck_assert(n == 1 && w[0].doc == 0 && w[0].start == 0);
    ck_assert_int_eq(llm_windows(docs, 3, 1, 1, w, 8, &n, NULL), LLM_OK);   /* 5 + 2 + 1 */
    ck_assert(n == 8 && w[5].doc == 1 && w[7].doc == 2);
}
END_TEST

/* Every length, window length and stride up to small bounds: the count is
   the number of starts s = 0, k, 2k, ... with s + T + 1 <= n, found by
   walking, and the listed windows are exactly those starts. */
START_TEST(counts_agree_with_walking_every_start)
{
    size_t n, T, k, s, walk, count;
    size_t ids[24];
    llm_window w[24];
    for (s = 0; s < 24; s++)
        ids[s] = s + 2;
    for (n = 0; n < 24; n++)
        for (T = 1; T < 8; T++)
            for (k = 1; k < 6; k++) {
                const llm_doc doc = {ids, n};
                size_t i = 0;
                for (walk = 0, s = 0; s + T + 1 <= n; s += k)
                    walk++;
                ck_assert_int_eq(llm_window_count(n, T, k, &count, NULL), LLM_OK);
                ck_assert_uint_eq(count, walk);
                ck_assert_int_eq(llm_windows(&doc, 1, T, k, w, 24, &count, NULL), LLM_OK);
                ck_assert_uint_eq(count, walk);
                for (s = 0; s + T + 1 <= n; s += k, i++)
                    ck_assert(w[i].doc == 0 && w[i].start == s);
            }
}
END_TEST

START_TEST(bad_windows_are_refused_and_nothing_is_written)
{
    const llm_doc doc = {fixture, 6};
    llm_window w[2];
    size_t count = 77;
    llm_error err;
    mark_bytes(w, sizeof w);
    REFUSED(llm_windows(&doc, 1, 0, 1, w, 2, &count, &err), LLM_ERR_ARGUMENT,
            "data.windows <- window.count");
    REFUSED(llm_windows(&doc, 1, 3, 0, w, 2, &count, &err), LLM_ERR_ARGUMENT,
            "data.windows <- window.count");
    REFUSED(llm_windows(&doc, 1, 3, 1, w, 2, &count, &err), LLM_ERR_LENGTH, "data.windows");
    REFUSED(llm_windows(NULL, 1, 3, 1, w, 2, &count, &err), LLM_ERR_ARGUMENT, "data.windows");
    REFUSED(llm_windows(&doc, 1, 3, 1, NULL, 2, &count, &err), LLM_ERR_ARGUMENT, "data.windows");
    REFUSED(llm_window_count(6, SIZE_MAX, 1, &count, &err), LLM_ERR_OVERFLOW, "window.count");
    REFUSED(llm_window_count(6, 3, 1, NULL, &err), LLM_ERR_ARGUMENT, "window.count");
    ck_assert(marked_bytes(w, sizeof w) && count == 77);
    ck_assert_int_eq(llm_window_count(SIZE_MAX, SIZE_MAX - 1, 1, &count, &err), LLM_OK);
    ck_assert_uint_eq(count, 1);
    ck_assert_int_eq(llm_windows(NULL, 0, 3, 1, NULL, 0, &count, &err), LLM_OK);
    ck_assert_uint_eq(count, 0);
}
END_TEST

Suite *ch05_autoregressive_examples_suite(void)
{
    const TTest *tests[] = {
        the_course_fixtures,
        counts_agree_with_walking_every_start,
        bad_windows_are_refused_and_nothing_is_written,
    };
    return suite_of("ch05 autoregressive examples", tcase_of("windows", 0, tests, COUNT(tests)));
}
