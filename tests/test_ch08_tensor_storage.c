/* Chapter 8: flat storage, strides, checked indexing, errors, evidence. */
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

START_TEST(every_status_has_a_name)
{
    int code;
    for (code = 0; code < LLM_STATUS_COUNT; code++)
        ck_assert_str_ne(llm_status_name((llm_status)code), "unknown");
    ck_assert_str_eq(llm_status_name(LLM_OK), "ok");
    ck_assert_str_eq(llm_status_name(LLM_ERR_INDEX), "index");
    ck_assert_str_eq(llm_status_name(LLM_STATUS_COUNT), "unknown");
    ck_assert_str_eq(llm_status_name((llm_status)-1), "unknown");
}
END_TEST

START_TEST(long_messages_are_truncated_not_overrun)
{
    llm_error err;
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ck_assert_int_eq(llm_fail(&err, LLM_ERR_ARGUMENT, big, "%s", big), LLM_ERR_ARGUMENT);
    ck_assert_uint_eq(strlen(err.stage), sizeof err.stage - 1);
    ck_assert_uint_eq(strlen(err.message), sizeof err.message - 1);
    ck_assert_int_eq(llm_fail(NULL, LLM_ERR_RANK, "s", "m"), LLM_ERR_RANK);
}
END_TEST

START_TEST(numbers_are_formatted_without_negative_zero)
{
    char buf[64];
    const double xs[3] = {0.5, -0.0000001, -2.25};
    const size_t sizes[3] = {2, 0, 3};
    ck_assert_str_eq(llm_fmt(buf, sizeof buf, -0.0, 6), "0.000000");
    ck_assert_str_eq(llm_fmt(buf, sizeof buf, -0.0000004, 6), "0.000000");
    ck_assert_str_eq(llm_fmt(buf, sizeof buf, -0.0000006, 6), "-0.000001");
    ck_assert_str_eq(llm_fmt(buf, sizeof buf, -3.0, 0), "-3");
    ck_assert_str_eq(llm_fmt(buf, sizeof buf, 0.0 / 0.0, 3), "nan");
    ck_assert_str_eq(llm_fmt(buf, sizeof buf, -1.0 / 0.0, 3), "-inf");
    ck_assert_str_eq(llm_fmt_list(buf, sizeof buf, xs, 3, 2), "[0.50, 0.00, -2.25]");
    ck_assert_str_eq(llm_fmt_list(buf, sizeof buf, xs, 0, 2), "[]");
    ck_assert_str_eq(llm_fmt_sizes(buf, sizeof buf, sizes, 3), "[2, 0, 3]");
    ck_assert_str_eq(llm_fmt_sizes(buf, sizeof buf, sizes, 0), "[]");
}
END_TEST

START_TEST(demo_arguments_are_checked)
{
    char prog[] = "demo", flag[] = "--trace", bad[] = "--nope",
         path[] = "/nonexistent-dir/x.trace";
    char *no_args[] = {prog, NULL};
    char *unknown[] = {prog, bad, NULL};
    char *unwritable[] = {prog, flag, path, NULL};
    char *missing_file[] = {prog, flag, NULL};
    llm_trace tr;
    /* the refusals print their messages; this test only needs the status */
    ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
    ck_assert_int_eq(llm_demo_start(1, no_args, "demo", &tr), 0);
    ck_assert_ptr_null(tr.fp);
    ck_assert_int_eq(llm_demo_finish(&tr, 1), 0);
    ck_assert_int_eq(llm_demo_finish(&tr, 0), 1);
    ck_assert_int_eq(llm_demo_start(2, unknown, "demo", &tr), 2);
    ck_assert_int_eq(llm_demo_start(3, unwritable, "demo", &tr), 2);
    ck_assert_int_eq(llm_demo_start(2, missing_file, "demo", &tr), 2);
}
END_TEST

START_TEST(trace_lines_are_tab_separated)
{
    char path[] = "/tmp/llm-trace-XXXXXX";
    char prog[] = "demo", flag[] = "--trace";
    char *argv[4];
    const char *cells[2] = {"a b", "c"};
    char text[128];
    llm_trace tr;
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    argv[0] = prog; argv[1] = flag; argv[2] = path; argv[3] = NULL;
    ck_assert_int_eq(llm_demo_start(3, argv, "demo", &tr), 0);
    llm_trace_value(&tr, "k", "v 1");
    llm_trace_row(&tr, "t", 2, cells);
    ck_assert_int_eq(llm_demo_finish(&tr, 1), 0);
    take_file(path, text, sizeof text);
    ck_assert_str_eq(text, "v\tk\tv 1\nr\tt\ta b\tc\n");
}
END_TEST

START_TEST(refusal_rows_carry_the_chosen_cells)
{
    char path[] = "/tmp/llm-refusal-XXXXXX";
    char prog[] = "demo", flag[] = "--trace";
    char *argv[4];
    char text[512];
    llm_trace tr;
    llm_error err;
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    /* the refusals print their report lines; this test reads the trace */
    ck_assert_ptr_nonnull(freopen("/dev/null", "w", stdout));
    argv[0] = prog; argv[1] = flag; argv[2] = path; argv[3] = NULL;
    ck_assert_int_eq(llm_demo_start(3, argv, "demo", &tr), 0);
    (void)llm_fail(&err, LLM_ERR_INDEX, "tensor.get", "index %d of %d", 3, 2);
    llm_demo_refusal(&tr, "a", LLM_ERR_INDEX, &err);
    llm_demo_refusal_cells(&tr, "csmbx", "b", LLM_ERR_INDEX, &err);
    llm_demo_refusal_cells(&tr, "b", "c", LLM_OK, &err);
    llm_demo_refusal_cells(&tr, "", "d", LLM_ERR_INDEX, NULL);
    llm_demo_refusal_cells(&tr, "cccccccccc", "e", LLM_ERR_INDEX, &err);
    ck_assert_int_eq(llm_demo_ok("demo", LLM_OK, NULL), 1);
    ck_assert_int_eq(llm_demo_finish(&tr, 1), 0);
    take_file(path, text, sizeof text);
    ck_assert_str_eq(text,
        "r\trefusals\ta\tindex\tindex 3 of 2\n"
        "r\trefusals\tb\tindex\ttensor.get\tindex 3 of 2\tindex (`tensor.get`)\t?\n"
        "r\trefusals\tc\tok (`accepted`)\n"
        "r\trefusals\td\n"
        "r\trefusals\te\tindex\tindex\tindex\tindex\tindex\tindex\tindex\n");
}
END_TEST

START_TEST(an_unexpected_status_fails_the_demo)
{
    llm_error err;
    ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
    (void)llm_fail(&err, LLM_ERR_SHAPE, "tensor.from", "11 values for 12");
    ck_assert_int_eq(llm_demo_ok("demo", LLM_ERR_SHAPE, &err), 0);
    ck_assert_int_eq(llm_demo_ok("demo", LLM_ERR_SHAPE, NULL), 0);
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

START_TEST(a_refusal_passed_on_keeps_the_stage_that_refused_first)
{
    llm_error err, why;
    char buf[100], tiny[8];
    const size_t shape[2] = {SIZE_MAX, 3};
    llm_tensor t;
    /* llm_fail clears a cause left from before */
    memset(&err, 0, sizeof err);
    strcpy(err.cause, "old.cause");
    ck_assert_int_eq(llm_fail(&err, LLM_ERR_INDEX, "tensor.offset", "x"), LLM_ERR_INDEX);
    ck_assert_str_eq(err.cause, "");
    ck_assert_str_eq(llm_error_where(buf, sizeof buf, &err), "tensor.offset");
    /* a chain of callers: the outermost is the stage, the innermost the cause */
    ck_assert_int_eq(llm_pass(&err, LLM_ERR_INDEX, "tensor.get"), LLM_ERR_INDEX);
    ck_assert_str_eq(err.stage, "tensor.get");
    ck_assert_str_eq(err.cause, "tensor.offset");
    ck_assert_int_eq(llm_pass(&err, LLM_ERR_INDEX, "decoder.forward"), LLM_ERR_INDEX);
    ck_assert_str_eq(llm_error_where(buf, sizeof buf, &err), "decoder.forward <- tensor.offset");
    ck_assert_str_eq(err.message, "x");                    /* the message stays */
    /* passing on one's own refusal, or success, changes nothing */
    ck_assert_int_eq(llm_pass(&err, LLM_ERR_INDEX, "decoder.forward"), LLM_ERR_INDEX);
    ck_assert_str_eq(err.cause, "tensor.offset");
    ck_assert_int_eq(llm_pass(&err, LLM_OK, "block.forward"), LLM_OK);
    ck_assert_str_eq(err.stage, "decoder.forward");
    ck_assert_int_eq(llm_pass(NULL, LLM_ERR_RANK, "block.forward"), LLM_ERR_RANK);
    /* llm_fail_from: a new message, the code and the first stage of why */
    ck_assert_int_eq(llm_tensor_zeros(&t, 2, shape, &why), LLM_ERR_OVERFLOW);
    ck_assert_str_eq(llm_error_where(buf, sizeof buf, &why), "tensor.zeros <- tensor.row_major");
    ck_assert_int_eq(llm_fail_from(&err, &why, "tape.gather", "IDs: %s", "too many"),
                     LLM_ERR_OVERFLOW);
    ck_assert_int_eq(err.code, LLM_ERR_OVERFLOW);
    ck_assert_str_eq(llm_error_where(buf, sizeof buf, &err), "tape.gather <- tensor.row_major");
    ck_assert_str_eq(err.message, "IDs: too many");
    ck_assert_int_eq(llm_fail(&why, LLM_ERR_SHAPE, "tape.gather", "same"), LLM_ERR_SHAPE);
    ck_assert_int_eq(llm_fail_from(&err, &why, "tape.gather", NULL), LLM_ERR_SHAPE);
    ck_assert_str_eq(err.cause, "");                      /* its own stage is no cause */
    ck_assert_str_eq(err.message, "");
    /* why may be err itself, its message an argument */
    ck_assert_int_eq(llm_fail(&err, LLM_ERR_INDEX, "tensor.offset", "inner"), LLM_ERR_INDEX);
    ck_assert_int_eq(llm_fail_from(&err, &err, "tensor.get", "outer: %s", err.message),
                     LLM_ERR_INDEX);
    ck_assert_str_eq(err.message, "outer: inner");
    ck_assert_str_eq(llm_error_where(buf, sizeof buf, &err), "tensor.get <- tensor.offset");
    /* the printed form is cut to the buffer, and NULL is safe */
    ck_assert_str_eq(llm_error_where(tiny, sizeof tiny, &err), "tensor.");
    ck_assert_str_eq(llm_error_where(buf, sizeof buf, NULL), "?");
    ck_assert_ptr_null(llm_error_where(NULL, 4, &err));
}
END_TEST

START_TEST(trimmed_numbers_drop_trailing_zeros_only)
{
    char buf[64];
    ck_assert_str_eq(llm_fmt_trim(buf, sizeof buf, 5.5, 12), "5.5");
    ck_assert_str_eq(llm_fmt_trim(buf, sizeof buf, 2.0, 12), "2");
    ck_assert_str_eq(llm_fmt_trim(buf, sizeof buf, -0.5, 12), "-0.5");
    ck_assert_str_eq(llm_fmt_trim(buf, sizeof buf, 10.0, 6), "10");      /* not "1" */
    ck_assert_str_eq(llm_fmt_trim(buf, sizeof buf, 100.0, 0), "100");    /* no point */
    ck_assert_str_eq(llm_fmt_trim(buf, sizeof buf, 1e-6, 6), "0.000001");
    ck_assert_str_eq(llm_fmt_trim(buf, sizeof buf, -1e-9, 6), "0");      /* no "-0" */
    ck_assert_str_eq(llm_fmt_trim(buf, sizeof buf, 0.25, 1), "0.2");
}
END_TEST

Suite *ch08_tensor_storage_suite(void)
{
    const TTest *tests[] = {
        strides_and_offsets_follow_row_major_order,
        a_refusal_passed_on_keeps_the_stage_that_refused_first,
        trimmed_numbers_drop_trailing_zeros_only,
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
        every_status_has_a_name,
        long_messages_are_truncated_not_overrun,
        numbers_are_formatted_without_negative_zero,
        demo_arguments_are_checked,
        trace_lines_are_tab_separated,
        refusal_rows_carry_the_chosen_cells,
        an_unexpected_status_fails_the_demo,
        null_and_malformed_arguments_are_refused,
    };
    return suite_of("ch08 tensor storage", tcase_of("storage", 0, tests, COUNT(tests)));
}
