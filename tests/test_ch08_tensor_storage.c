/* Chapter 8: flat storage, strides and checked indexing. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/error.h"
#include "llm/evidence.h"
#include "llm/tensor.h"
#include "support.h"

static const double fixture[12] = {10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42};

START_TEST(strides_and_offsets_follow_row_major_order)
{
    const size_t shape[3] = {2, 2, 3};
    llm_tensor t;
    size_t i0, i1, i2, o;
    ck_assert_int_eq(llm_tensor_from(&t, 3, shape, fixture, 12, NULL), LLM_OK);
    ck_assert_uint_eq(t.stride[0], 6);
    ck_assert_uint_eq(t.stride[1], 3);
    ck_assert_uint_eq(t.stride[2], 1);
    ck_assert_uint_eq(t.size, 12);
    /* every index maps to a distinct position, in row-major order */
    for (i0 = 0; i0 < 2; i0++)
        for (i1 = 0; i1 < 2; i1++)
            for (i2 = 0; i2 < 3; i2++) {
                const size_t idx[3] = {i0, i1, i2};
                double v;
                ck_assert_int_eq(llm_tensor_offset(&t, 3, idx, &o, NULL), LLM_OK);
                ck_assert_uint_eq(o, i0 * 6 + i1 * 3 + i2);
                ck_assert_int_eq(llm_tensor_get(&t, 3, idx, &v, NULL), LLM_OK);
                ck_assert(v == fixture[o]);
            }
    llm_tensor_free(&t);
}
END_TEST

START_TEST(index_next_walks_row_major_order)
{
    const size_t shape[3] = {2, 2, 3};
    size_t idx[3] = {0, 0, 0}, count = 1, o;
    llm_tensor t;
    ck_assert_int_eq(llm_tensor_from(&t, 3, shape, fixture, 12, NULL), LLM_OK);
    while (llm_index_next(3, shape, idx)) {
        ck_assert_int_eq(llm_tensor_offset(&t, 3, idx, &o, NULL), LLM_OK);
        ck_assert_uint_eq(o, count);    /* the walk visits offsets 1, 2, ... */
        count++;
    }
    ck_assert_uint_eq(count, 12);
    ck_assert(idx[0] == 0 && idx[1] == 0 && idx[2] == 0);
    ck_assert_int_eq(llm_index_next(0, NULL, NULL), 0);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(write_changes_exactly_one_position)
{
    const size_t shape[3] = {2, 2, 3}, at[3] = {0, 1, 1};
    llm_tensor t;
    size_t k;
    ck_assert_int_eq(llm_tensor_from(&t, 3, shape, fixture, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_set(&t, 3, at, 99.0, NULL), LLM_OK);
    for (k = 0; k < 12; k++)
        ck_assert(t.data[k] == (k == 4 ? 99.0 : fixture[k]));
    llm_tensor_free(&t);
}
END_TEST

START_TEST(out_of_range_index_names_the_axis_and_reads_nothing)
{
    const size_t shape[3] = {2, 2, 3}, bad[3] = {1, 2, 0}, bad_last[3] = {1, 1, 3};
    llm_tensor t;
    llm_error err;
    double v = -7.0;
    ck_assert_int_eq(llm_tensor_from(&t, 3, shape, fixture, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_get(&t, 3, bad, &v, &err), LLM_ERR_INDEX);
    ck_assert_int_eq(err.code, LLM_ERR_INDEX);
    ck_assert_str_eq(where(&err), "tensor.get <- tensor.offset");
    ck_assert_str_eq(err.message, "index 2 is outside axis 1 of extent 2");
    ck_assert(v == -7.0);
    ck_assert_int_eq(llm_tensor_set(&t, 3, bad_last, 5.0, &err), LLM_ERR_INDEX);
    ck_assert_str_eq(err.message, "index 3 is outside axis 2 of extent 3");
    ck_assert_int_eq(memcmp(t.data, fixture, sizeof fixture), 0);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(wrong_rank_index_is_refused)
{
    const size_t shape[3] = {2, 2, 3}, idx[4] = {0, 0, 0, 0};
    llm_tensor t;
    llm_error err;
    size_t o = 1234;
    ck_assert_int_eq(llm_tensor_from(&t, 3, shape, fixture, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_offset(&t, 2, idx, &o, &err), LLM_ERR_RANK);
    ck_assert_int_eq(llm_tensor_offset(&t, 4, idx, &o, &err), LLM_ERR_RANK);
    ck_assert_str_eq(err.message, "the index has 4 coordinates, the tensor has rank 3");
    ck_assert_uint_eq(o, 1234);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(null_arguments_are_refused)
{
    const size_t shape[1] = {2}, idx[1] = {0};
    llm_tensor t;
    llm_error err;
    size_t o;
    double v;
    ck_assert_int_eq(llm_tensor_zeros(NULL, 1, shape, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.zeros");
    ck_assert_int_eq(llm_tensor_zeros(&t, 1, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tensor_from(&t, 1, shape, NULL, 2, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tensor_zeros(&t, 1, shape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_offset(NULL, 1, idx, &o, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tensor_offset(&t, 1, NULL, &o, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tensor_offset(&t, 1, idx, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tensor_get(&t, 1, idx, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.get");
    ck_assert_int_eq(llm_tensor_get(&t, 1, idx, &v, NULL), LLM_OK);
    llm_tensor_free(&t);
    llm_tensor_free(NULL);
}
END_TEST

START_TEST(length_mismatch_leaves_output_untouched)
{
    const size_t shape[3] = {2, 2, 3};
    llm_tensor t;
    llm_error err;
    memset(&t, 0xab, sizeof t);
    ck_assert_int_eq(llm_tensor_from(&t, 3, shape, fixture, 11, &err), LLM_ERR_LENGTH);
    ck_assert_str_eq(err.message, "the shape holds 12 elements, 11 values were given");
    ck_assert_int_eq(llm_tensor_from(&t, 3, shape, fixture, 13, &err), LLM_ERR_LENGTH);
    {
        llm_tensor expect;
        memset(&expect, 0xab, sizeof expect);
        ck_assert_int_eq(memcmp(&t, &expect, sizeof t), 0);
    }
}
END_TEST

START_TEST(element_counts_never_overflow)
{
    const size_t wrap[2] = {SIZE_MAX / 2 + 1, 2};
    const size_t bytes[1] = {SIZE_MAX / 4};
    const size_t huge_stride[3] = {0, (size_t)1 << 40, (size_t)1 << 40};
    const size_t zero_first[3] = {SIZE_MAX, 2, 0};
    size_t stride[3], n = 99;
    llm_error err;
    llm_tensor t;
    ck_assert_int_eq(llm_row_major(2, wrap, stride, &n, &err), LLM_ERR_OVERFLOW);
    ck_assert_str_eq(where(&err), "tensor.row_major");
    ck_assert_uint_eq(n, 99);
    ck_assert_int_eq(llm_row_major(1, bytes, stride, &n, &err), LLM_ERR_OVERFLOW);
    ck_assert_int_eq(llm_row_major(3, huge_stride, stride, &n, &err), LLM_ERR_OVERFLOW);
    ck_assert_int_eq(llm_tensor_zeros(&t, 2, wrap, &err), LLM_ERR_OVERFLOW);
    /* a zero extent on the right makes every product zero: no overflow */
    ck_assert_int_eq(llm_row_major(3, zero_first, stride, &n, &err), LLM_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_uint_eq(stride[0], 0);
    ck_assert_uint_eq(stride[1], 0);
    ck_assert_uint_eq(stride[2], 1);
}
END_TEST

START_TEST(rank_above_the_maximum_is_refused)
{
    size_t shape[LLM_MAX_RANK + 1], stride[LLM_MAX_RANK + 1], n;
    llm_error err;
    size_t k;
    for (k = 0; k <= LLM_MAX_RANK; k++)
        shape[k] = 1;
    ck_assert_int_eq(llm_row_major(LLM_MAX_RANK, shape, stride, &n, &err), LLM_OK);
    ck_assert_int_eq(llm_row_major(LLM_MAX_RANK + 1, shape, stride, &n, &err), LLM_ERR_RANK);
    ck_assert_str_eq(err.message, "rank 9 exceeds the maximum 8");
}
END_TEST

START_TEST(allocation_failure_is_reported)
{
    /* fits in size_t as a byte count, but no allocator can give it */
    const size_t shape[1] = {SIZE_MAX / sizeof(double) - 1};
    llm_tensor t;
    llm_error err;
    memset(&t, 0, sizeof t);
    ck_assert_int_eq(llm_tensor_zeros(&t, 1, shape, &err), LLM_ERR_ALLOC);
    ck_assert_str_eq(where(&err), "tensor.zeros");
    ck_assert_ptr_null(t.data);
}
END_TEST

START_TEST(scalar_and_empty_shapes)
{
    const size_t empty[3] = {2, 0, 3}, zero[3] = {0, 0, 0};
    llm_tensor s, e;
    double v = 0.0;
    ck_assert_int_eq(llm_tensor_zeros(&s, 0, NULL, NULL), LLM_OK);
    ck_assert_uint_eq(s.size, 1);
    ck_assert_int_eq(llm_tensor_set(&s, 0, NULL, 2.5, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_get(&s, 0, NULL, &v, NULL), LLM_OK);
    ck_assert(v == 2.5);
    llm_tensor_free(&s);
    ck_assert_ptr_null(s.data);

    ck_assert_int_eq(llm_tensor_zeros(&e, 3, empty, NULL), LLM_OK);
    ck_assert_uint_eq(e.size, 0);
    ck_assert_ptr_nonnull(e.data);
    ck_assert_uint_eq(e.stride[0], 0);
    ck_assert_uint_eq(e.stride[1], 3);
    ck_assert_uint_eq(e.stride[2], 1);
    ck_assert_int_eq(llm_tensor_get(&e, 3, zero, &v, NULL), LLM_ERR_INDEX);
    llm_tensor_free(&e);
}
END_TEST

START_TEST(storage_keeps_bits_of_negative_zero_and_nan)
{
    const uint64_t in[3] = {UINT64_C(0x8000000000000000), UINT64_C(0x7ff8000000000123),
                            UINT64_C(0xfff0000000000001)};
    const size_t shape[1] = {3}, at[1] = {1};
    double values[3], v;
    uint64_t out[3], one;
    llm_tensor t;
    memcpy(values, in, sizeof values);
    ck_assert_int_eq(llm_tensor_from(&t, 1, shape, values, 3, NULL), LLM_OK);
    memcpy(out, t.data, sizeof out);
    ck_assert_int_eq(memcmp(in, out, sizeof in), 0);
    ck_assert_int_eq(llm_tensor_get(&t, 1, at, &v, NULL), LLM_OK);
    memcpy(&one, &v, sizeof one);
    ck_assert(one == in[1]);
    llm_tensor_free(&t);
}
END_TEST

/* The null-pointer rule of llm/error.h and llm_tensor_check. */
START_TEST(null_and_malformed_arguments_are_refused)
{
    const size_t shape[2] = {2, 3}, idx[2] = {0, 0};
    llm_tensor t, bad;
    llm_error err;
    size_t stride[2], o = 7;
    ck_assert_int_eq(llm_tensor_from(NULL, 2, shape, fixture, 6, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.from");
    ck_assert_int_eq(llm_row_major(2, shape, stride, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.row_major");
    ck_assert_int_eq(llm_index_next(2, NULL, NULL), 0);
    ck_assert_int_eq(llm_fail(&err, LLM_ERR_INDEX, NULL, NULL), LLM_ERR_INDEX);
    ck_assert_str_eq(where(&err), "");
    ck_assert_str_eq(err.message, "");
    ck_assert_int_eq(llm_tensor_check(NULL, "x", "here", &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.message, "tensor x is missing");
    ck_assert_int_eq(llm_tensor_from(&t, 2, shape, fixture, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_check(&t, "t", "here", &err), LLM_OK);
    bad = t;
    bad.data = NULL;
    ck_assert_int_eq(llm_tensor_check(&bad, "t", "here", &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "here");
    /* a rank the struct cannot hold, with an index of the same rank: the
       loop over the axes would read past shape[] */
    bad = t;
    bad.rank = 1000;
    ck_assert_int_eq(llm_tensor_check(&bad, "t", "here", &err), LLM_ERR_ARGUMENT);
    {
        size_t deep[1000] = {0};
        ck_assert_int_eq(llm_tensor_offset(&bad, 1000, deep, &o, &err), LLM_ERR_ARGUMENT);
        ck_assert_str_eq(where(&err), "tensor.offset");
        ck_assert_uint_eq(o, 7);
    }
    ck_assert_int_eq(llm_tensor_offset(&t, 2, idx, &o, NULL), LLM_OK);
    llm_tensor_free(&t);
}
END_TEST

Suite *ch08_tensor_storage_suite(void)
{
    const TTest *tests[] = {
        strides_and_offsets_follow_row_major_order,
        index_next_walks_row_major_order,
        write_changes_exactly_one_position,
        out_of_range_index_names_the_axis_and_reads_nothing,
        wrong_rank_index_is_refused,
        null_arguments_are_refused,
        length_mismatch_leaves_output_untouched,
        element_counts_never_overflow,
        rank_above_the_maximum_is_refused,
        allocation_failure_is_reported,
        scalar_and_empty_shapes,
        storage_keeps_bits_of_negative_zero_and_nan,
        null_and_malformed_arguments_are_refused,
    };
    return suite_of("ch08 tensor storage", tcase_of("storage", 0, tests, COUNT(tests)));
}
