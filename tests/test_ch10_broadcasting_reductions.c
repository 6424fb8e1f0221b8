/* Chapter 10: broadcast binary maps, unary maps, reductions over an axis. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/error.h"
#include "llm/tensor.h"
#include "support.h"

static const double xv[6] = {1, 2, 3, 4, 5, 6};
static const double bv[3] = {10, 20, 30};

static uint64_t bits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

static double from_bits(uint64_t u)
{
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* A tensor borrowing buf, with the given shape and strides (no copy). */
static llm_tensor borrowed(double *buf, size_t offset, size_t rank, const size_t *shape,
                           const size_t *stride)
{
    llm_tensor t;
    size_t k;
    memset(&t, 0, sizeof t);
    t.data = buf;
    t.offset = offset;
    t.rank = rank;
    t.size = 1;
    for (k = 0; k < rank; k++) {
        t.shape[k] = shape[k];
        t.stride[k] = stride[k];
        t.size *= shape[k];
    }
    return t;
}

static void assert_values(const llm_tensor *t, size_t rank, const size_t *shape,
                          const double *values, size_t n)
{
    size_t k;
    ck_assert_int_eq(t->owns, 1);
    ck_assert_uint_eq(t->offset, 0);
    ck_assert_uint_eq(t->rank, rank);
    for (k = 0; k < rank; k++)
        ck_assert_uint_eq(t->shape[k], shape[k]);
    ck_assert_uint_eq(t->size, n);
    for (k = 0; k < n; k++)
        ck_assert_msg(t->data[k] == values[k], "element %zu is %g, expected %g",
                      k, t->data[k], values[k]);
}

/* An output that must stay exactly as it was when a call fails. */
static void poison(llm_tensor *t)
{
    memset(t, 0xab, sizeof *t);
}

static int poisoned(const llm_tensor *t)
{
    llm_tensor p;
    poison(&p);
    return memcmp(t, &p, sizeof p) == 0;
}

START_TEST(fixture_matches_the_rust_course)
{
    const size_t xs[2] = {2, 3}, bs[1] = {3}, s3[1] = {3}, s21[2] = {2, 1}, s2[1] = {2};
    const double y_want[6] = {11, 22, 33, 14, 25, 36}, sum_want[3] = {25, 47, 69};
    const double mean_want[2] = {22, 25}, max_want[2] = {33, 36};
    llm_tensor x, b, y, s, m, mx;
    ck_assert_int_eq(llm_tensor_from(&x, 2, xs, xv, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&b, 1, bs, bv, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_binary(&y, LLM_ADD, &x, &b, NULL), LLM_OK);
    assert_values(&y, 2, xs, y_want, 6);
    ck_assert_int_eq(llm_tensor_reduce(&s, LLM_SUM, &y, 0, 0, NULL), LLM_OK);
    assert_values(&s, 1, s3, sum_want, 3);
    ck_assert_int_eq(llm_tensor_reduce(&m, LLM_MEAN, &y, 1, 1, NULL), LLM_OK);
    assert_values(&m, 2, s21, mean_want, 2);
    ck_assert_int_eq(llm_tensor_reduce(&mx, LLM_MAX, &y, 1, 0, NULL), LLM_OK);
    assert_values(&mx, 1, s2, max_want, 2);
    llm_tensor_free(&x);
    llm_tensor_free(&b);
    llm_tensor_free(&y);
    llm_tensor_free(&s);
    llm_tensor_free(&m);
    llm_tensor_free(&mx);
}
END_TEST

START_TEST(broadcast_shapes_align_trailing_axes)
{
    static double one[1] = {0};
    const size_t s23[2] = {2, 3}, s3[1] = {3}, s21[2] = {2, 1}, s13[2] = {1, 3};
    const size_t s413[3] = {4, 1, 3}, s21b[2] = {2, 1}, s10[2] = {1, 0}, s31[2] = {3, 1};
    const size_t zero[3] = {0, 0, 0};
    struct { size_t ra; const size_t *a; size_t rb; const size_t *b; size_t r; size_t want[3]; } cases[] = {
        {2, s23, 1, s3, 2, {2, 3, 0}},
        {0, NULL, 2, s23, 2, {2, 3, 0}},
        {2, s23, 0, NULL, 2, {2, 3, 0}},
        {2, s21, 2, s13, 2, {2, 3, 0}},
        {3, s413, 2, s21b, 3, {4, 2, 3}},
        {2, s10, 2, s31, 2, {3, 0, 0}},
        {0, NULL, 0, NULL, 0, {0, 0, 0}},
    };
    size_t c, k, rank, shape[LLM_MAX_RANK];
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        /* stride 0 everywhere: only the shapes matter here */
        llm_tensor a = borrowed(one, 0, cases[c].ra, cases[c].a ? cases[c].a : zero, zero);
        llm_tensor b = borrowed(one, 0, cases[c].rb, cases[c].b ? cases[c].b : zero, zero);
        ck_assert_int_eq(llm_broadcast_shape(&a, &b, &rank, shape, NULL), LLM_OK);
        ck_assert_uint_eq(rank, cases[c].r);
        for (k = 0; k < rank; k++)
            ck_assert_uint_eq(shape[k], cases[c].want[k]);
    }
}
END_TEST

START_TEST(incompatible_shapes_name_the_axis_and_both_extents)
{
    static double one[1] = {0};
    const size_t s23[2] = {2, 3}, s2[1] = {2}, s3[1] = {3}, s4[1] = {4}, s423[3] = {4, 2, 3};
    const size_t s53[2] = {5, 3}, zero[3] = {0, 0, 0};
    llm_tensor a = borrowed(one, 0, 2, s23, zero), b = borrowed(one, 0, 1, s2, zero);
    llm_tensor c3 = borrowed(one, 0, 1, s3, zero), c4 = borrowed(one, 0, 1, s4, zero);
    llm_tensor big = borrowed(one, 0, 3, s423, zero), other = borrowed(one, 0, 2, s53, zero);
    llm_error err;
    size_t rank = 77, shape[LLM_MAX_RANK] = {77, 77, 77};
    ck_assert_int_eq(llm_broadcast_shape(&a, &b, &rank, shape, &err), LLM_ERR_BROADCAST);
    ck_assert_int_eq(err.code, LLM_ERR_BROADCAST);
    ck_assert_str_eq(where(&err), "tensor.broadcast_shape");
    ck_assert_str_eq(err.message, "axis 1 of the result: a has extent 3, b has 2; "
                                  "they must be equal or one of them 1");
    ck_assert_int_eq(llm_broadcast_shape(&c3, &c4, &rank, shape, &err), LLM_ERR_BROADCAST);
    ck_assert_str_eq(err.message, "axis 0 of the result: a has extent 3, b has 4; "
                                  "they must be equal or one of them 1");
    /* different ranks: the axis is counted in the result */
    ck_assert_int_eq(llm_broadcast_shape(&big, &other, &rank, shape, &err), LLM_ERR_BROADCAST);
    ck_assert_str_eq(err.message, "axis 1 of the result: a has extent 2, b has 5; "
                                  "they must be equal or one of them 1");
    ck_assert_uint_eq(rank, 77);
    ck_assert(shape[0] == 77 && shape[1] == 77 && shape[2] == 77);
}
END_TEST

START_TEST(broadcast_shape_refuses_bad_arguments)
{
    static double one[1] = {0};
    const size_t s3[1] = {3}, zero[1] = {0};
    llm_tensor a = borrowed(one, 0, 1, s3, zero), empty, deep = a;
    llm_error err;
    size_t rank = 5, shape[LLM_MAX_RANK];
    memset(&empty, 0, sizeof empty);
    deep.rank = LLM_MAX_RANK + 1;
    ck_assert_int_eq(llm_broadcast_shape(NULL, &a, &rank, shape, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.broadcast_shape");
    ck_assert_str_eq(err.message, "tensor a is missing");
    ck_assert_int_eq(llm_broadcast_shape(&a, NULL, &rank, shape, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.message, "tensor b is missing");
    ck_assert_int_eq(llm_broadcast_shape(&a, &a, NULL, shape, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_broadcast_shape(&a, &a, &rank, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.message, "no place for the broadcast rank and shape");
    ck_assert_int_eq(llm_broadcast_shape(&a, &empty, &rank, shape, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.message, "tensor b has no buffer");
    ck_assert_int_eq(llm_broadcast_shape(&deep, &a, &rank, shape, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.message, "tensor a has rank 9, more than 8");
    ck_assert_uint_eq(rank, 5);
    ck_assert_int_eq(llm_broadcast_shape(&a, &a, &rank, shape, NULL), LLM_OK);
    ck_assert_uint_eq(rank, 1);
}
END_TEST

START_TEST(scalar_column_and_row_broadcast)
{
    const size_t xs[2] = {2, 3}, cs[2] = {2, 1}, rs[2] = {1, 3};
    const double two[1] = {2}, three[1] = {3}, cv[2] = {1, 2};
    const double scaled[6] = {2, 4, 6, 8, 10, 12}, outer[6] = {11, 21, 31, 12, 22, 32};
    const double divided[6] = {0.5, 1, 1.5, 2, 2.5, 3}, minus[6] = {-1, 0, 1, 2, 3, 4};
    llm_tensor x, s, t, c, r, out;
    ck_assert_int_eq(llm_tensor_from(&x, 2, xs, xv, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&s, 0, NULL, two, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&t, 0, NULL, three, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&c, 2, cs, cv, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&r, 2, rs, bv, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_MUL, &s, &x, NULL), LLM_OK);
    assert_values(&out, 2, xs, scaled, 6);
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_DIV, &x, &s, NULL), LLM_OK);
    assert_values(&out, 2, xs, divided, 6);
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_SUB, &x, &s, NULL), LLM_OK);
    assert_values(&out, 2, xs, minus, 6);
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_ADD, &c, &r, NULL), LLM_OK);
    assert_values(&out, 2, xs, outer, 6);
    llm_tensor_free(&out);
    /* scalar with scalar: a scalar */
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_SUB, &s, &t, NULL), LLM_OK);
    ck_assert_uint_eq(out.rank, 0);
    ck_assert_uint_eq(out.size, 1);
    ck_assert(out.data[0] == -1.0);
    llm_tensor_free(&out);
    llm_tensor_free(&x);
    llm_tensor_free(&s);
    llm_tensor_free(&t);
    llm_tensor_free(&c);
    llm_tensor_free(&r);
}
END_TEST

START_TEST(division_follows_ieee)
{
    const size_t s3[1] = {3};
    const double num[3] = {1, -1, 0}, zero[1] = {0};
    llm_tensor n, z, out;
    ck_assert_int_eq(llm_tensor_from(&n, 1, s3, num, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&z, 0, NULL, zero, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_DIV, &n, &z, NULL), LLM_OK);
    ck_assert(isinf(out.data[0]) && out.data[0] > 0);
    ck_assert(isinf(out.data[1]) && out.data[1] < 0);
    ck_assert(isnan(out.data[2]));
    llm_tensor_free(&out);
    llm_tensor_free(&n);
    llm_tensor_free(&z);
}
END_TEST

START_TEST(rank_three_broadcast_and_reductions)
{
    const size_t as[3] = {2, 1, 3}, ds[2] = {2, 1}, want_shape[3] = {2, 2, 3};
    const size_t ts[3] = {2, 2, 3}, s23[2] = {2, 3}, s213[3] = {2, 1, 3}, s22[2] = {2, 2};
    const size_t s123[3] = {1, 2, 3};
    const double av[6] = {1, 2, 3, 4, 5, 6}, dv[2] = {100, 200};
    const double tv[12] = {10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42};
    const double sum1[6] = {30, 32, 34, 70, 72, 74}, max2[4] = {12, 22, 32, 42};
    const double mean0[6] = {20, 21, 22, 30, 31, 32};
    llm_tensor a, d, t, out;
    size_t i, j, k;
    ck_assert_int_eq(llm_tensor_from(&a, 3, as, av, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&d, 2, ds, dv, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_ADD, &a, &d, NULL), LLM_OK);
    ck_assert_uint_eq(out.rank, 3);
    for (k = 0; k < 3; k++)
        ck_assert_uint_eq(out.shape[k], want_shape[k]);
    for (i = 0; i < 2; i++)
        for (j = 0; j < 2; j++)
            for (k = 0; k < 3; k++)
                ck_assert(out.data[i * 6 + j * 3 + k] == av[i * 3 + k] + dv[j]);
    llm_tensor_free(&out);

    ck_assert_int_eq(llm_tensor_from(&t, 3, ts, tv, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_SUM, &t, 1, 0, NULL), LLM_OK);
    assert_values(&out, 2, s23, sum1, 6);
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_SUM, &t, 1, 1, NULL), LLM_OK);
    assert_values(&out, 3, s213, sum1, 6);
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_MAX, &t, 2, 0, NULL), LLM_OK);
    assert_values(&out, 2, s22, max2, 4);
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_MEAN, &t, 0, 1, NULL), LLM_OK);
    assert_values(&out, 3, s123, mean0, 6);
    llm_tensor_free(&out);
    llm_tensor_free(&a);
    llm_tensor_free(&d);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(reducing_the_only_axis_gives_a_scalar)
{
    const size_t s3[1] = {3}, one[1] = {1};
    const double six[1] = {6};
    llm_tensor b, out;
    ck_assert_int_eq(llm_tensor_from(&b, 1, s3, bv, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_SUM, &b, 0, 0, NULL), LLM_OK);
    ck_assert_uint_eq(out.rank, 0);
    ck_assert_uint_eq(out.size, 1);
    ck_assert(out.data[0] == 60.0);
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_MAX, &b, 0, 1, NULL), LLM_OK);
    assert_shape(&out, 1, (const size_t[]){1});
    ck_assert(out.data[0] == 30.0);
    llm_tensor_free(&out);
    llm_tensor_free(&b);
    ck_assert_int_eq(llm_tensor_from(&b, 1, one, six, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_MEAN, &b, 0, 0, NULL), LLM_OK);
    ck_assert(out.data[0] == 6.0);
    llm_tensor_free(&out);
    llm_tensor_free(&b);
}
END_TEST

START_TEST(sums_add_in_ascending_order_from_plus_zero)
{
    /* 2^53 + 1 rounds back to 2^53 (ties to even): ascending order loses both
       ones, any order that adds the ones first would give 2^53 + 2 */
    const size_t s3[1] = {3}, s31[2] = {3, 1};
    const double line[3] = {9007199254740992.0, 1, 1};
    llm_tensor t, c, out;
    ck_assert_int_eq(llm_tensor_from(&t, 1, s3, line, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_SUM, &t, 0, 0, NULL), LLM_OK);
    ck_assert(out.data[0] == 9007199254740992.0);
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_MEAN, &t, 0, 0, NULL), LLM_OK);
    ck_assert(out.data[0] == 9007199254740992.0 / 3.0);
    llm_tensor_free(&out);
    /* the same along axis 0 of a column, read with stride 1 */
    ck_assert_int_eq(llm_tensor_from(&c, 2, s31, line, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_SUM, &c, 0, 0, NULL), LLM_OK);
    ck_assert(out.data[0] == 9007199254740992.0);
    llm_tensor_free(&out);
    llm_tensor_free(&t);
    llm_tensor_free(&c);
}
END_TEST

START_TEST(empty_axes_sum_to_plus_zero_and_refuse_mean_and_max)
{
    const size_t s20[2] = {2, 0}, s00[2] = {0, 0}, s2[1] = {2}, s21[2] = {2, 1};
    const double zeros[2] = {0, 0};
    llm_tensor e, ee, out;
    llm_error err;
    ck_assert_int_eq(llm_tensor_zeros(&e, 2, s20, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_SUM, &e, 1, 0, NULL), LLM_OK);
    assert_values(&out, 1, s2, zeros, 2);
    ck_assert_uint_eq(bits(out.data[0]), 0);
    ck_assert_uint_eq(bits(out.data[1]), 0);
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_SUM, &e, 1, 1, NULL), LLM_OK);
    assert_values(&out, 2, s21, zeros, 2);
    llm_tensor_free(&out);
    poison(&out);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_MEAN, &e, 1, 0, &err), LLM_ERR_EMPTY);
    ck_assert_str_eq(where(&err), "tensor.reduce");
    ck_assert_str_eq(err.message, "the mean over axis 1 needs at least one element; "
                                  "the axis has extent 0");
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_MAX, &e, 1, 1, &err), LLM_ERR_EMPTY);
    ck_assert_str_eq(err.message, "the max over axis 1 needs at least one element; "
                                  "the axis has extent 0");
    /* refused even when there are no lines at all */
    ck_assert_int_eq(llm_tensor_zeros(&ee, 2, s00, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_MEAN, &ee, 1, 0, &err), LLM_ERR_EMPTY);
    ck_assert(poisoned(&out));
    llm_tensor_free(&e);
    llm_tensor_free(&ee);
}
END_TEST

START_TEST(zero_size_results)
{
    const size_t s03[2] = {0, 3}, s3[1] = {3}, s0[1] = {0}, s10[2] = {1, 0}, s31[2] = {3, 1};
    const size_t s30[2] = {3, 0};
    const double zeros[3] = {0, 0, 0};
    llm_tensor z, b, c, col, out;
    ck_assert_int_eq(llm_tensor_zeros(&z, 2, s03, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&b, 1, s3, bv, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_ADD, &z, &b, NULL), LLM_OK);
    assert_values(&out, 2, s03, NULL, 0);
    ck_assert_ptr_nonnull(out.data);
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_ADD, &b, &z, NULL), LLM_OK);
    assert_values(&out, 2, s03, NULL, 0);
    llm_tensor_free(&out);
    /* a stretched axis stretches to nothing: [1, 0] with [3, 1] */
    ck_assert_int_eq(llm_tensor_zeros(&c, 2, s10, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&col, 2, s31, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_MUL, &c, &col, NULL), LLM_OK);
    assert_values(&out, 2, s30, NULL, 0);
    llm_tensor_free(&out);
    /* reductions: the other axis empty gives an empty result, even for max */
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_MAX, &z, 1, 0, NULL), LLM_OK);
    assert_values(&out, 1, s0, NULL, 0);
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_SUM, &z, 0, 0, NULL), LLM_OK);
    assert_values(&out, 1, s3, zeros, 3);
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_map(&out, &z, sqrt, NULL), LLM_OK);
    assert_values(&out, 2, s03, NULL, 0);
    llm_tensor_free(&out);
    llm_tensor_free(&z);
    llm_tensor_free(&b);
    llm_tensor_free(&c);
    llm_tensor_free(&col);
}
END_TEST

START_TEST(max_propagates_nan_with_its_bits)
{
    const uint64_t payload = UINT64_C(0x7ff8000000000123), other = UINT64_C(0x7ff8000000000456);
    const size_t s4[2] = {4, 3};
    double v[12];
    llm_tensor t, out, s;
    size_t i;
    /* NaN first, in the middle, last; two different NaNs */
    v[0] = from_bits(payload); v[1] = 1;  v[2] = 3;
    v[3] = 1;  v[4] = from_bits(payload); v[5] = 3;
    v[6] = -INFINITY; v[7] = INFINITY; v[8] = from_bits(payload);
    v[9] = from_bits(payload); v[10] = 2; v[11] = from_bits(other);
    ck_assert_int_eq(llm_tensor_from(&t, 2, s4, v, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_MAX, &t, 1, 0, NULL), LLM_OK);
    for (i = 0; i < 4; i++)
        ck_assert_uint_eq(bits(out.data[i]), payload);
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_reduce(&s, LLM_SUM, &t, 1, 0, NULL), LLM_OK);
    for (i = 0; i < 4; i++)
        ck_assert(isnan(s.data[i]));
    llm_tensor_free(&s);
    /* along axis 0: column 1 holds 1, nan, inf, 2 */
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_MAX, &t, 0, 0, NULL), LLM_OK);
    ck_assert_uint_eq(bits(out.data[0]), payload);
    ck_assert_uint_eq(bits(out.data[1]), payload);
    ck_assert_uint_eq(bits(out.data[2]), payload);
    llm_tensor_free(&out);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(max_orders_plus_zero_above_minus_zero)
{
    const uint64_t mz = UINT64_C(0x8000000000000000);
    const size_t s5[2] = {5, 2};
    double v[10];
    llm_tensor t, out, s;
    size_t i;
    v[0] = from_bits(mz); v[1] = 0.0;          /* [-0, +0] -> +0 */
    v[2] = 0.0; v[3] = from_bits(mz);          /* [+0, -0] -> +0 */
    v[4] = from_bits(mz); v[5] = from_bits(mz); /* [-0, -0] -> -0 */
    v[6] = from_bits(mz); v[7] = -1.0;         /* [-0, -1] -> -0 */
    v[8] = -INFINITY; v[9] = -5.0;             /* [-inf, -5] -> -5 */
    ck_assert_int_eq(llm_tensor_from(&t, 2, s5, v, 10, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_MAX, &t, 1, 0, NULL), LLM_OK);
    ck_assert_uint_eq(bits(out.data[0]), 0);
    ck_assert_uint_eq(bits(out.data[1]), 0);
    ck_assert_uint_eq(bits(out.data[2]), mz);
    ck_assert_uint_eq(bits(out.data[3]), mz);
    ck_assert(out.data[4] == -5.0);
    llm_tensor_free(&out);
    /* sums start from +0: [-0, -0] sums to +0, and so does its mean */
    ck_assert_int_eq(llm_tensor_reduce(&s, LLM_SUM, &t, 1, 0, NULL), LLM_OK);
    ck_assert_uint_eq(bits(s.data[2]), 0);
    llm_tensor_free(&s);
    ck_assert_int_eq(llm_tensor_reduce(&s, LLM_MEAN, &t, 1, 0, NULL), LLM_OK);
    ck_assert_uint_eq(bits(s.data[2]), 0);
    for (i = 0; i < 2; i++)
        ck_assert_uint_eq(bits(s.data[i]), 0);
    llm_tensor_free(&s);
    llm_tensor_free(&t);
}
END_TEST

static double negate(double v)
{
    return -v;
}

START_TEST(map_applies_the_function_to_every_element)
{
    const size_t xs[2] = {2, 3};
    const double neg[6] = {-1, -2, -3, -4, -5, -6};
    const double two[1] = {4};
    llm_tensor x, s, out;
    ck_assert_int_eq(llm_tensor_from(&x, 2, xs, xv, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_map(&out, &x, negate, NULL), LLM_OK);
    assert_values(&out, 2, xs, neg, 6);
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_from(&s, 0, NULL, two, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_map(&out, &s, sqrt, NULL), LLM_OK);
    ck_assert_uint_eq(out.rank, 0);
    ck_assert(out.data[0] == 2.0);
    llm_tensor_free(&out);
    llm_tensor_free(&x);
    llm_tensor_free(&s);
}
END_TEST

START_TEST(strided_inputs_are_read_through_their_strides)
{
    /* y = [[11, 22, 33], [14, 25, 36]] in a larger buffer, from offset 2 */
    double buf[9] = {-1, -1, 11, 22, 33, 14, 25, 36, -1};
    const size_t ts[2] = {3, 2}, tst[2] = {1, 3};          /* the transpose */
    const size_t cs[1] = {2}, cst[1] = {3};                /* column 1 */
    const size_t s1[1] = {1}, s3[1] = {3}, s32[2] = {3, 2}, s2[1] = {2};
    const double sums[3] = {25, 47, 69}, maxima[3] = {14, 25, 36};
    const double tplus[6] = {21, 24, 32, 35, 43, 46}, doubled[2] = {44, 50};
    const double col_b[6] = {32, 42, 52, 35, 45, 55};
    const size_t s23[2] = {2, 3};
    llm_tensor tr = borrowed(buf, 2, 2, ts, tst), col = borrowed(buf, 3, 1, cs, cst);
    llm_tensor b, c, out;
    const size_t cshape[2] = {2, 1}, cstride[2] = {3, 0};
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_SUM, &tr, 1, 0, NULL), LLM_OK);
    assert_values(&out, 1, s3, sums, 3);
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_MAX, &tr, 1, 0, NULL), LLM_OK);
    assert_values(&out, 1, s3, maxima, 3);
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_MAX, &tr, 0, 0, NULL), LLM_OK);
    ck_assert(out.data[0] == 33 && out.data[1] == 36);
    llm_tensor_free(&out);
    /* transpose + [10] broadcast along both axes: [3,2] + [1] */
    ck_assert_int_eq(llm_tensor_from(&b, 1, s1, bv, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_ADD, &tr, &b, NULL), LLM_OK);
    assert_values(&out, 2, s32, tplus, 6);
    llm_tensor_free(&out);
    llm_tensor_free(&b);
    ck_assert_int_eq(llm_tensor_map(&out, &col, sqrt, NULL), LLM_OK);
    ck_assert(out.data[0] == sqrt(22.0) && out.data[1] == sqrt(25.0));
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_ADD, &col, &col, NULL), LLM_OK);
    assert_values(&out, 1, s2, doubled, 2);
    llm_tensor_free(&out);
    /* a column with an explicit stride-0 axis, against a row */
    c = borrowed(buf, 3, 2, cshape, cstride);
    ck_assert_int_eq(llm_tensor_from(&b, 1, s3, bv, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_ADD, &c, &b, NULL), LLM_OK);
    assert_values(&out, 2, s23, col_b, 6);
    llm_tensor_free(&out);
    llm_tensor_free(&b);
    ck_assert(buf[0] == -1 && buf[1] == -1 && buf[8] == -1);
}
END_TEST

START_TEST(binary_errors_leave_the_output_untouched)
{
    static double one[1] = {1};
    const size_t s23[2] = {2, 3}, s2[1] = {2}, zero[2] = {0, 0};
    const size_t tall_shape[2] = {(size_t)1 << 40, 1}, wide_shape[2] = {1, (size_t)1 << 40};
    const size_t huge[1] = {SIZE_MAX / sizeof(double) - 1};
    llm_tensor x, p, out, empty, tall, wide, big, deep;
    llm_error err;
    ck_assert_int_eq(llm_tensor_from(&x, 2, s23, xv, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&p, 1, s2, bv, 2, NULL), LLM_OK);
    memset(&empty, 0, sizeof empty);
    tall = borrowed(one, 0, 2, tall_shape, zero);
    wide = borrowed(one, 0, 2, wide_shape, zero);
    big = borrowed(one, 0, 1, huge, zero);
    deep = x;
    deep.rank = LLM_MAX_RANK + 1;
    poison(&out);
    ck_assert_int_eq(llm_tensor_binary(NULL, LLM_ADD, &x, &x, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.binary");
    ck_assert_str_eq(err.message, "no output tensor");
    ck_assert_int_eq(llm_tensor_binary(&out, (llm_binary_op)4, &x, &x, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.message, "unknown binary operation 4");
    ck_assert_int_eq(llm_tensor_binary(&out, (llm_binary_op)99, &x, &x, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_ADD, NULL, &x, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.binary");
    ck_assert_str_eq(err.message, "tensor a is missing");
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_ADD, &x, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.message, "tensor b is missing");
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_ADD, &x, &empty, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.message, "tensor b has no buffer");
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_ADD, &deep, &x, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_SUB, &x, &p, &err), LLM_ERR_BROADCAST);
    ck_assert_str_eq(where(&err), "tensor.binary <- tensor.broadcast_shape");
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_ADD, &tall, &wide, &err), LLM_ERR_OVERFLOW);
    ck_assert_str_eq(where(&err), "tensor.binary <- tensor.row_major");
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_ADD, &big, &big, &err), LLM_ERR_ALLOC);
    ck_assert_str_eq(where(&err), "tensor.binary <- tensor.zeros");
    ck_assert(poisoned(&out));
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_ADD, &x, &x, NULL), LLM_OK);
    llm_tensor_free(&out);
    llm_tensor_free(&x);
    llm_tensor_free(&p);
}
END_TEST

START_TEST(map_errors_leave_the_output_untouched)
{
    static double one[1] = {1};
    const size_t huge[1] = {SIZE_MAX / sizeof(double) - 1}, zero[2] = {0, 0};
    const size_t wrap[2] = {(size_t)1 << 40, (size_t)1 << 40};
    llm_tensor x, out, empty, big, square;
    llm_error err;
    const size_t s2[1] = {2};
    ck_assert_int_eq(llm_tensor_from(&x, 1, s2, xv, 2, NULL), LLM_OK);
    memset(&empty, 0, sizeof empty);
    big = borrowed(one, 0, 1, huge, zero);
    square = borrowed(one, 0, 2, wrap, zero);   /* 2^80 elements, one stored */
    poison(&out);
    ck_assert_int_eq(llm_tensor_map(NULL, &x, sqrt, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.map");
    ck_assert_str_eq(err.message, "no output tensor");
    ck_assert_int_eq(llm_tensor_map(&out, &x, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.message, "no function to apply");
    ck_assert_int_eq(llm_tensor_map(&out, NULL, sqrt, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.message, "tensor a is missing");
    ck_assert_int_eq(llm_tensor_map(&out, &empty, sqrt, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.map");
    ck_assert_int_eq(llm_tensor_map(&out, &big, sqrt, &err), LLM_ERR_ALLOC);
    ck_assert_str_eq(where(&err), "tensor.map <- tensor.zeros");
    ck_assert_int_eq(llm_tensor_map(&out, &square, sqrt, &err), LLM_ERR_OVERFLOW);
    ck_assert_str_eq(where(&err), "tensor.map <- tensor.row_major");
    ck_assert(poisoned(&out));
    llm_tensor_free(&x);
}
END_TEST

START_TEST(reduce_errors_leave_the_output_untouched)
{
    static double one[1] = {1};
    const size_t s23[2] = {2, 3}, zero[2] = {0, 0};
    const size_t huge[2] = {SIZE_MAX / sizeof(double) - 1, 2}, zero3[3] = {0, 0, 0};
    const size_t wrap[3] = {(size_t)1 << 40, (size_t)1 << 40, 2};
    llm_tensor x, s, out, empty, big, deep, cube;
    llm_error err;
    const double v[1] = {5};
    ck_assert_int_eq(llm_tensor_from(&x, 2, s23, xv, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&s, 0, NULL, v, 1, NULL), LLM_OK);
    memset(&empty, 0, sizeof empty);
    big = borrowed(one, 0, 2, huge, zero);
    cube = borrowed(one, 0, 3, wrap, zero3);
    deep = x;
    deep.rank = LLM_MAX_RANK + 1;
    poison(&out);
    ck_assert_int_eq(llm_tensor_reduce(NULL, LLM_SUM, &x, 0, 0, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.reduce");
    ck_assert_str_eq(err.message, "no output tensor");
    ck_assert_int_eq(llm_tensor_reduce(&out, (llm_reduce_op)3, &x, 0, 0, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.message, "unknown reduction 3");
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_SUM, NULL, 0, 0, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.message, "tensor t is missing");
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_MEAN, &empty, 0, 0, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.message, "tensor t has no buffer");
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_MAX, &deep, 0, 0, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_SUM, &x, 2, 0, &err), LLM_ERR_AXIS);
    ck_assert_str_eq(where(&err), "tensor.reduce");
    ck_assert_str_eq(err.message, "axis 2 is outside a tensor of rank 2");
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_SUM, &x, SIZE_MAX, 1, &err), LLM_ERR_AXIS);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_SUM, &s, 0, 0, &err), LLM_ERR_AXIS);
    ck_assert_str_eq(err.message, "axis 0 is outside a tensor of rank 0");
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_SUM, &big, 1, 0, &err), LLM_ERR_ALLOC);
    ck_assert_str_eq(where(&err), "tensor.reduce <- tensor.zeros");
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_MAX, &cube, 2, 0, &err), LLM_ERR_OVERFLOW);
    ck_assert_str_eq(where(&err), "tensor.reduce <- tensor.row_major");
    ck_assert(poisoned(&out));
    llm_tensor_free(&x);
    llm_tensor_free(&s);
}
END_TEST

START_TEST(inputs_are_never_modified)
{
    const size_t s23[2] = {2, 3}, s3[1] = {3};
    llm_tensor x, b, out;
    ck_assert_int_eq(llm_tensor_from(&x, 2, s23, xv, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&b, 1, s3, bv, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_binary(&out, LLM_DIV, &x, &b, NULL), LLM_OK);
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_reduce(&out, LLM_MEAN, &x, 0, 1, NULL), LLM_OK);
    llm_tensor_free(&out);
    ck_assert_int_eq(llm_tensor_map(&out, &x, sqrt, NULL), LLM_OK);
    llm_tensor_free(&out);
    ck_assert_int_eq(memcmp(x.data, xv, sizeof xv), 0);
    ck_assert_int_eq(memcmp(b.data, bv, sizeof bv), 0);
    llm_tensor_free(&x);
    llm_tensor_free(&b);
}
END_TEST

Suite *ch10_broadcasting_reductions_suite(void)
{
    const TTest *tests[] = {
        fixture_matches_the_rust_course,
        broadcast_shapes_align_trailing_axes,
        incompatible_shapes_name_the_axis_and_both_extents,
        broadcast_shape_refuses_bad_arguments,
        scalar_column_and_row_broadcast,
        division_follows_ieee,
        rank_three_broadcast_and_reductions,
        reducing_the_only_axis_gives_a_scalar,
        sums_add_in_ascending_order_from_plus_zero,
        empty_axes_sum_to_plus_zero_and_refuse_mean_and_max,
        zero_size_results,
        max_propagates_nan_with_its_bits,
        max_orders_plus_zero_above_minus_zero,
        map_applies_the_function_to_every_element,
        strided_inputs_are_read_through_their_strides,
        binary_errors_leave_the_output_untouched,
        map_errors_leave_the_output_untouched,
        reduce_errors_leave_the_output_untouched,
        inputs_are_never_modified,
    };
    return suite_of("ch10 broadcasting and reductions",
                    tcase_of("broadcasting", 0, tests, COUNT(tests)));
}
