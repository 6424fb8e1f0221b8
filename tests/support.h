/* tests/support.h -- what the test files share. */
#ifndef LLM_TESTS_SUPPORT_H
#define LLM_TESTS_SUPPORT_H

#include <check.h>
#include <string.h>

#include "llm/error.h"
#include "llm/tensor.h"

/* err's stage as the reports print it: "stage", or "stage <- cause" when
   the refusal started deeper (chapter 8's llm_error_where). One buffer:
   use the result before the next call. */
static inline const char *where(const llm_error *err)
{
    static char buf[100];
    return llm_error_where(buf, sizeof buf, err);
}

/* The stage that refused first: err's cause, or its stage when the refusal
   started there. */
static inline const char *first_stage(const llm_error *err)
{
    return err->cause[0] != '\0' ? err->cause : err->stage;
}

/* The call st was refused with code want, recorded in err (a variable of
   the test), whose stage as printed (where) is want_stage. */
#define REFUSED(st, want, want_stage)                          \
    do {                                                       \
        ck_assert_int_eq((st), (want));                        \
        ck_assert_int_eq(err.code, (want));                    \
        ck_assert_str_eq(where(&err), (want_stage));           \
    } while (0)

/* st is code, with a message, and the stage that refused first is stage. */
static inline void assert_error(llm_status st, const llm_error *err, llm_status code,
                                const char *stage)
{
    ck_assert_msg(st == code, "got %s, want %s", llm_status_name(st), llm_status_name(code));
    ck_assert_str_eq(first_stage(err), stage);
    ck_assert(err->message[0] != '\0');
}

/* Fills n bytes at p with 0x5a, the marker of "not written"; marked_bytes
   says whether they still hold it. */
static inline void mark_bytes(void *p, size_t n)
{
    memset(p, 0x5a, n);
}
static inline int marked_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i;
    for (i = 0; i < n; i++)
        if (b[i] != 0x5a)
            return 0;
    return 1;
}

/* A new tensor of the given shape holding values (row-major, as many as
   the shape has elements). */
static inline llm_tensor make_tensor(size_t rank, const size_t *shape, const double *values)
{
    llm_tensor t;
    size_t stride[LLM_MAX_RANK], n;
    ck_assert_int_eq(llm_row_major(rank, shape, stride, &n, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&t, rank, shape, values, n, NULL), LLM_OK);
    return t;
}

/* A header no constructor makes: one element at *data under rank axes
   (rank above LLM_MAX_RANK, for the refusals of llm_tensor_check). */
static inline llm_tensor malformed_tensor(double *data, size_t rank)
{
    llm_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.rank = rank;
    t.size = 1;
    return t;
}

#endif
