/* tests/support.h -- what the test files share. */
#ifndef LLM_TESTS_SUPPORT_H
#define LLM_TESTS_SUPPORT_H

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "llm/error.h"
#include "llm/tape.h"
#include "llm/tensor.h"

/* err's stage as the reports print it: "stage", or "stage <- cause" when
   the refusal started deeper (chapter 1's llm_error_where). One buffer:
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

/* As REFUSED, and the call changed nothing: tp (a tape of the test) still
   holds nodes nodes and the output *out still equals *kept, bit for bit. */
#define REFUSED_KEPT(st, want, want_stage, tp, nodes, out, kept)       \
    do {                                                               \
        REFUSED(st, want, want_stage);                                 \
        ck_assert_uint_eq((tp).count, (nodes));                        \
        ck_assert(memcmp((out), (kept), sizeof *(out)) == 0);          \
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

/* Reads the file at path into text (at most size - 1 bytes, then a NUL)
   and removes the file. */
static inline void take_file(const char *path, char *text, size_t size)
{
    FILE *fp = fopen(path, "r");
    size_t n;
    ck_assert_ptr_nonnull(fp);
    n = fread(text, 1, size - 1, fp);
    text[n] = '\0';
    fclose(fp);
    remove(path);
}

/* A handle no tape hands out, every byte 0x2d: the output of a call that
   must be refused, to check afterwards that the call did not write it. */
static inline llm_var marked_var(void)
{
    llm_var v;
    memset(&v, 0x2d, sizeof v);
    return v;
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

/* t has rank axes of the given extents (shape[0] first). */
static inline void assert_shape(const llm_tensor *t, size_t rank, const size_t *shape)
{
    size_t i;
    ck_assert_uint_eq(t->rank, rank);
    for (i = 0; i < rank; i++)
        ck_assert_msg(t->shape[i] == shape[i], "shape[%zu] is %zu, want %zu", i,
                      t->shape[i], shape[i]);
}

/* t has the given shape and strides (in elements). */
static inline void assert_layout(const llm_tensor *t, size_t rank, const size_t *shape,
                                 const size_t *stride)
{
    size_t i;
    assert_shape(t, rank, shape);
    for (i = 0; i < rank; i++)
        ck_assert_msg(t->stride[i] == stride[i], "stride[%zu] is %zu, want %zu", i,
                      t->stride[i], stride[i]);
}

/* Records tensors on tape, each as a constant (put_constants) or as a leaf
   without a gradient (put_leaves): the arguments after tape are pairs of a
   tensor and the variable that receives it, ended by NULL. */
static inline void put_vars(int leaves, llm_tape *tape, va_list ap)
{
    const llm_tensor *t;
    int k;
    for (k = 0; (t = va_arg(ap, const llm_tensor *)) != NULL; k++) {
        llm_var *v = va_arg(ap, llm_var *);
        llm_status st = leaves ? llm_tape_leaf(tape, t, NULL, v, NULL)
                               : llm_tape_constant(tape, t, v, NULL);
        ck_assert_msg(st == LLM_OK, "%s %d: %s", leaves ? "leaf" : "constant", k,
                      llm_status_name(st));
    }
}
static inline void put_constants(llm_tape *tape, ...)
{
    va_list ap;
    va_start(ap, tape);
    put_vars(0, tape, ap);
    va_end(ap);
}
static inline void put_leaves(llm_tape *tape, ...)
{
    va_list ap;
    va_start(ap, tape);
    put_vars(1, tape, ap);
    va_end(ap);
}

/* Defines name, an objective for llm_gradient_check that ignores theta (the
   probe reads the tensor it perturbs through ctx) and returns call, an
   expression of ctx, value and err. */
#define OBJECTIVE(name, call)                                                 \
    static llm_status name(void *ctx, const llm_tensor *theta, double *value, \
                           llm_error *err)                                    \
    {                                                                         \
        (void)theta;                                                          \
        (void)err;                                                            \
        return (call);                                                        \
    }

/* The loss the gradient checks differentiate, L = sum(y (.) w), recorded on
   tape with w as a constant: *loss gets L and, when backward is set, the
   tape runs backward from L. Returns the first refusal. */
static inline llm_status weighted_loss(llm_tape *tape, llm_var y, const llm_tensor *w,
                                      int backward, double *loss, llm_error *err)
{
    llm_var wv, m, l;
    const llm_tensor *v;
    llm_status st = llm_tape_constant(tape, w, &wv, err);
    if (st == LLM_OK)
        st = llm_tape_mul(tape, y, wv, &m, err);
    if (st == LLM_OK)
        st = llm_tape_sum_all(tape, m, &l, err);
    if (st == LLM_OK && (st = llm_tape_value(tape, l, &v, err)) == LLM_OK)
        *loss = v->data[v->offset];
    if (st == LLM_OK && backward)
        st = llm_tape_backward(tape, l, NULL, 0, err);
    return st;
}

/* How many elements the array a has. */
#define COUNT(a) (sizeof (a) / sizeof *(a))

/* A test case named name running the n tests in order, each allowed
   timeout seconds (0: Check's default). */
static inline TCase *tcase_of(const char *name, int timeout, const TTest *const *tests,
                              size_t n)
{
    TCase *tc = tcase_create(name);
    size_t i;
    if (timeout > 0)
        tcase_set_timeout(tc, timeout);
    for (i = 0; i < n; i++)
        tcase_add_test(tc, tests[i]);
    return tc;
}

/* A suite named name holding the one test case tc. */
static inline Suite *suite_of(const char *name, TCase *tc)
{
    Suite *s = suite_create(name);
    suite_add_tcase(s, tc);
    return s;
}

/* The walk of llm_alloc_fail_at (chapter 1) over one call: runs `call` (an
   expression of type llm_status using err, a variable of the test) with the
   n-th allocation failing, for n = 1, 2, ...; every run that meets its
   failure must be refused with LLM_ERR_ALLOC under a stage, and
   `unchanged`, an expression, must hold after it; the first run that needs
   fewer than n allocations must succeed and ends the walk. `reset` runs before every attempt,
   `undo` after a success. Leaves the number of allocations in *used. */
#define WALK(used, reset, call, unchanged, undo)                               \
    do {                                                                       \
        size_t n_, calls_;                                                     \
        llm_status st_;                                                        \
        for (n_ = 1;; n_++) {                                                  \
            reset;                                                             \
            memset(&err, 0, sizeof err);                                       \
            llm_alloc_fail_at(n_);                                             \
            st_ = (call);                                                      \
            calls_ = llm_alloc_calls();                                        \
            llm_alloc_fail_at(0);                                              \
            if (calls_ < n_) {                                                 \
                ck_assert_msg(st_ == LLM_OK, "with no failure: %s (%s: %s)",   \
                              llm_status_name(st_), err.stage, err.message);   \
                undo;                                                          \
                break;                                                         \
            }                                                                  \
            ck_assert_msg(st_ == LLM_ERR_ALLOC && err.code == LLM_ERR_ALLOC,   \
                          "allocation %zu failed: got %s (%s: %s)", n_,        \
                          llm_status_name(st_), err.stage, err.message);       \
            ck_assert_msg(err.stage[0] != '\0', "allocation %zu: no stage", n_); \
            ck_assert_msg((unchanged), "allocation %zu failed: state changed", \
                          n_);                                                 \
        }                                                                      \
        *(used) = n_ - 1;                                                      \
    } while (0)

#endif
