/* Blocks given back to the allocator (chapter 1's llm_alloc_give) and
   reused by the next allocation of the same size; the tensor tape
   (chapter 15) gives its values and adjoints back on every reset. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tape.h"
#include "llm/error.h"
#include "llm/tensor.h"
#include "support.h"

#if defined(__SANITIZE_ADDRESS__)
#define KEPT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KEPT_ASAN 1
#endif
#endif
#ifdef KEPT_ASAN
#include <sanitizer/asan_interface.h>
#endif

/* every test starts and ends with nothing kept and the default limit */
static void fresh(void)
{
    llm_alloc_keep(LLM_ALLOC_KEEP);
    llm_alloc_trim();
}

START_TEST(a_block_given_back_is_the_next_of_its_size)
{
    unsigned char *a, *b, *c;
    fresh();
    a = llm_malloc(64);
    ck_assert_ptr_nonnull(a);
    memset(a, 0xab, 64);
    llm_alloc_give(a, 64);
    ck_assert_uint_eq(llm_alloc_kept(), 64);
#ifdef KEPT_ASAN
    ck_assert(__asan_address_is_poisoned(a));        /* reading it now is reported */
#endif
    b = llm_malloc(72);                              /* another size: not the kept one */
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_ne(b, a);
    ck_assert_uint_eq(llm_alloc_kept(), 64);
    c = llm_malloc(64);
    ck_assert_ptr_eq(c, a);
    ck_assert_uint_eq(llm_alloc_kept(), 0);
    ck_assert_uint_eq(c[0], 0xab);                   /* malloc: contents as they were */
    llm_alloc_give(c, 64);
    c = llm_calloc(8, 8);                            /* calloc of the same 64 bytes */
    ck_assert_ptr_eq(c, a);
    for (size_t i = 0; i < 64; i++)
        ck_assert_uint_eq(c[i], 0);
    free(b);
    free(c);
    fresh();
}
END_TEST

START_TEST(the_limit_null_and_empty_blocks)
{
    void *a = llm_malloc(64), *b = llm_malloc(64), *c = llm_malloc(16);
    fresh();
    llm_alloc_give(NULL, 64);                        /* nothing to keep */
    ck_assert_uint_eq(llm_alloc_kept(), 0);
    llm_alloc_keep(100);
    llm_alloc_give(a, 64);
    llm_alloc_give(b, 64);                           /* 128 > 100: freed instead */
    ck_assert_uint_eq(llm_alloc_kept(), 64);
    llm_alloc_give(c, 16);
    ck_assert_uint_eq(llm_alloc_kept(), 80);
    llm_alloc_keep(0);                               /* below what is kept: all freed */
    ck_assert_uint_eq(llm_alloc_kept(), 0);
    a = llm_malloc(64);
    llm_alloc_give(a, 64);                           /* a limit of 0 keeps nothing */
    ck_assert_uint_eq(llm_alloc_kept(), 0);
    llm_alloc_keep(LLM_ALLOC_KEEP);
    a = llm_malloc(1);
    llm_alloc_give(a, 0);                            /* an empty size is never kept */
    ck_assert_uint_eq(llm_alloc_kept(), 0);
    a = llm_malloc(8);
    llm_alloc_give(a, 8);
    llm_alloc_trim();
    ck_assert_uint_eq(llm_alloc_kept(), 0);
    ck_assert_ptr_null(llm_calloc(SIZE_MAX / 8 + 1, 16));   /* count * size wraps */
    fresh();
}
END_TEST

START_TEST(the_failure_hook_counts_a_kept_block)
{
    void *a = llm_malloc(48);
    fresh();
    llm_alloc_give(a, 48);
    llm_alloc_fail_at(1);
    ck_assert_ptr_null(llm_malloc(48));              /* refused, though one is kept */
    ck_assert_uint_eq(llm_alloc_calls(), 1);
    ck_assert_uint_eq(llm_alloc_kept(), 48);         /* and still kept */
    llm_alloc_fail_at(0);
    a = llm_malloc(48);
    ck_assert_uint_eq(llm_alloc_calls(), 1);
    ck_assert_uint_eq(llm_alloc_kept(), 0);
    free(a);
    fresh();
}
END_TEST

/* x * x then its sum, on tape; *value gets the product's buffer */
static void record_step(llm_tape *tape, const llm_tensor *x, llm_tensor *g,
                        const double **value)
{
    llm_var a, sq, s;
    const llm_tensor *v;
    ck_assert_int_eq(llm_tape_leaf(tape, x, g, &a, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_mul(tape, a, a, &sq, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sum_all(tape, sq, &s, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(tape, sq, &v, NULL), LLM_OK);
    *value = v->data;
    ck_assert_int_eq(llm_tape_backward(tape, s, NULL, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_reset(tape, NULL), LLM_OK);
}

START_TEST(a_tape_step_reuses_the_buffers_of_the_last)
{
    static const double xs[6] = {1, -2, 3, -4, 5, -6};
    const size_t s23[2] = {2, 3};
    const double *first, *second;
    llm_tensor x, g;
    llm_tape tape;
    size_t kept;
    fresh();
    ck_assert_int_eq(llm_tensor_from(&x, 2, s23, xs, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&g, 2, s23, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    record_step(&tape, &x, &g, &first);
    kept = llm_alloc_kept();
    ck_assert_uint_gt(kept, 0);                      /* values and adjoints came back */
    record_step(&tape, &x, &g, &second);
    ck_assert_ptr_eq(second, first);                 /* the same shape, the same buffer */
    ck_assert_uint_eq(llm_alloc_kept(), kept);       /* a steady state: nothing grows */
    ck_assert(g.data[0] == 4.0 && g.data[5] == -24.0);   /* 2 x, twice */
    llm_tape_free(&tape);
    ck_assert_uint_eq(llm_alloc_kept(), 0);          /* freeing the tape trims */
    llm_tensor_free(&x);
    llm_tensor_free(&g);
    fresh();
}
END_TEST

START_TEST(a_failed_pass_gives_its_adjoints_back)
{
    static const double big[2] = {1e300, -1e300}, huge[2] = {1e308, -1e308};
    const size_t s2[1] = {2};
    llm_tensor x, g, seed;
    llm_tape tape;
    llm_var a, y;
    llm_error err;
    fresh();
    ck_assert_int_eq(llm_tensor_from(&x, 1, s2, big, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&g, 1, s2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&seed, 1, s2, huge, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &x, &g, &a, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_add(&tape, a, a, &y, NULL), LLM_OK);
    ck_assert_uint_eq(llm_alloc_kept(), 0);
    /* the adjoint of a is 2e308: not finite, refused */
    ck_assert_int_eq(llm_tape_backward(&tape, y, &seed, 0, &err), LLM_ERR_NONFINITE);
    ck_assert_uint_eq(llm_alloc_kept(), 2 * 2 * sizeof(double));
    ck_assert(g.data[0] == 0.0 && g.data[1] == 0.0);
    llm_tape_free(&tape);
    llm_tensor_free(&x);
    llm_tensor_free(&g);
    llm_tensor_free(&seed);
    fresh();
}
END_TEST

Suite *alloc_kept_suite(void)
{
    const TTest *tests[] = {
        a_block_given_back_is_the_next_of_its_size,
        the_limit_null_and_empty_blocks,
        the_failure_hook_counts_a_kept_block,
        a_tape_step_reuses_the_buffers_of_the_last,
        a_failed_pass_gives_its_adjoints_back,
    };
    return suite_of("kept blocks", tcase_of("kept", 0, tests, COUNT(tests)));
}
