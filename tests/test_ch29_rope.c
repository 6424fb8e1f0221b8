/* Chapter 29: rotary position embeddings, both pairings, on the tape. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "llm/attention.h"
#include "llm/tape.h"
#include "llm/error.h"
#include "llm/tensor.h"
#include "support.h"

static const double fix_row[4] = {1, 0, 1, 0};

static void make_rope(llm_rope *r, llm_rope_pairing pairing)
{
    ck_assert_int_eq(llm_rope_init(r, 4, 100.0, 8, pairing, NULL), LLM_OK);
}

/* T rows of width 4 rotated at positions pos into y. */
static llm_status rot(const llm_rope *r, const double *x, size_t T, const size_t *pos,
                      double *y, llm_error *err)
{
    size_t shape[2] = {T, 4};
    llm_tensor xt, yt;
    llm_status st;
    ck_assert_int_eq(llm_tensor_from(&xt, 2, shape, x, 4 * T, NULL), LLM_OK);
    st = llm_rope_apply(r, &xt, pos, T, &yt, err);
    llm_tensor_free(&xt);
    if (st == LLM_OK) {
        memcpy(y, yt.data + yt.offset, 4 * T * sizeof *y);
        llm_tensor_free(&yt);
    }
    return st;
}

static void grid_at(const llm_rope *r, size_t start, double grid[9])
{
    double x[12], y[12];
    size_t pos[3], i, j, k;
    for (i = 0; i < 3; i++) {
        memcpy(x + 4 * i, fix_row, sizeof fix_row);
        pos[i] = start + i;
    }
    ck_assert_int_eq(rot(r, x, 3, pos, y, NULL), LLM_OK);
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) {
            double s = 0.0;
            for (k = 0; k < 4; k++)
                s += y[4 * i + k] * y[4 * j + k];
            grid[3 * i + j] = s;
        }
}

START_TEST(test_frequencies_and_tables)
{
    llm_rope r;
    size_t m, k;
    make_rope(&r, LLM_ROPE_ADJACENT);
    ck_assert(r.inv_freq[0] == 1.0);
    ck_assert(fabs(r.inv_freq[1] - 0.1) < 1e-15);
    ck_assert(r.cos_table[0] == 1.0 && r.cos_table[1] == 1.0);
    ck_assert(r.sin_table[0] == 0.0 && !signbit(r.sin_table[0]));
    ck_assert(r.sin_table[1] == 0.0 && !signbit(r.sin_table[1]));
    for (m = 0; m < 8; m++)
        for (k = 0; k < 2; k++) {
            ck_assert(fabs(r.cos_table[2 * m + k] - cos((double)m * r.inv_freq[k])) == 0.0);
            ck_assert(fabs(r.sin_table[2 * m + k] - sin((double)m * r.inv_freq[k])) == 0.0);
        }
    llm_rope_free(&r);
    ck_assert_ptr_null(r.cos_table);
    llm_rope_free(&r);                 /* safe on an emptied rope */
}
END_TEST

START_TEST(test_dot_grid_fixture_and_shift)
{
    static const double want[9] = {2, 1.535306, 0.563920, 1.535306, 2, 1.535306,
                                   0.563920, 1.535306, 2};
    llm_rope r;
    double g[9], g3[9];
    size_t i;
    make_rope(&r, LLM_ROPE_ADJACENT);
    grid_at(&r, 0, g);
    grid_at(&r, 3, g3);
    for (i = 0; i < 9; i++) {
        ck_assert(fabs(g[i] - want[i]) < 5e-7);
        ck_assert(fabs(g3[i] - g[i]) < 1e-12);
    }
    llm_rope_free(&r);
}
END_TEST

START_TEST(test_norms_kept)
{
    static const double x[4] = {0.3, -1.2, 2.5, 0.7};
    llm_rope r;
    double y[4], n0, n1;
    size_t m;
    make_rope(&r, LLM_ROPE_HALF);
    n0 = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2] + x[3] * x[3]);
    for (m = 0; m < 8; m++) {
        ck_assert_int_eq(rot(&r, x, 1, &m, y, NULL), LLM_OK);
        n1 = sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2] + y[3] * y[3]);
        ck_assert(fabs(n1 - n0) < 1e-14);
    }
    llm_rope_free(&r);
}
END_TEST

START_TEST(test_position_zero_is_identity)
{
    static const double x[4] = {0.3, -1.2, 2.5, -0.0};
    llm_rope a, h;
    double y[4];
    const size_t zero = 0;
    make_rope(&a, LLM_ROPE_ADJACENT);
    make_rope(&h, LLM_ROPE_HALF);
    ck_assert_int_eq(rot(&a, x, 1, &zero, y, NULL), LLM_OK);
    ck_assert(memcmp(x, y, 3 * sizeof *y) == 0 && y[3] == 0.0);
    ck_assert_int_eq(rot(&h, x, 1, &zero, y, NULL), LLM_OK);
    ck_assert(memcmp(x, y, 3 * sizeof *y) == 0 && y[3] == 0.0);
    llm_rope_free(&a);
    llm_rope_free(&h);
}
END_TEST

START_TEST(test_pairings_differ_at_width_4)
{
    static const double x[4] = {1, 2, 3, 4};
    llm_rope a, h;
    double ya[4], yh[4], c1 = cos(1.0), s1 = sin(1.0), c2, s2;
    const size_t one = 1;
    make_rope(&a, LLM_ROPE_ADJACENT);
    make_rope(&h, LLM_ROPE_HALF);
    c2 = cos(a.inv_freq[1]);
    s2 = sin(a.inv_freq[1]);
    ck_assert_int_eq(rot(&a, x, 1, &one, ya, NULL), LLM_OK);
    ck_assert_int_eq(rot(&h, x, 1, &one, yh, NULL), LLM_OK);
    /* adjacent: (x0, x1) by 1, (x2, x3) by 0.1 */
    ck_assert(ya[0] == 1 * c1 - 2 * s1 && ya[1] == 1 * s1 + 2 * c1);
    ck_assert(ya[2] == 3 * c2 - 4 * s2 && ya[3] == 3 * s2 + 4 * c2);
    /* rotate-half: (x0, x2) by 1, (x1, x3) by 0.1 */
    ck_assert(yh[0] == 1 * c1 - 3 * s1 && yh[2] == 1 * s1 + 3 * c1);
    ck_assert(yh[1] == 2 * c2 - 4 * s2 && yh[3] == 2 * s2 + 4 * c2);
    ck_assert(fabs(ya[0] - yh[0]) > 0.5);
    llm_rope_free(&a);
    llm_rope_free(&h);
}
END_TEST

START_TEST(test_leading_axes_and_views)
{
    /* x [2, 3, 4]: both slices get positions 1, 4, 7; a transposed view of
       a [4, 3] tensor is rotated like its dense copy. */
    double x[24], y[24], one[12];
    size_t shape[3] = {2, 3, 4}, pos[3] = {1, 4, 7}, i, s43[2] = {4, 3};
    llm_tensor xt, yt, base, view, yv, dense;
    llm_rope r;
    make_rope(&r, LLM_ROPE_ADJACENT);
    for (i = 0; i < 24; i++)
        x[i] = (double)i * 0.25 - 2.0;
    ck_assert_int_eq(llm_tensor_from(&xt, 3, shape, x, 24, NULL), LLM_OK);
    ck_assert_int_eq(llm_rope_apply(&r, &xt, pos, 3, &yt, NULL), LLM_OK);
    memcpy(y, yt.data + yt.offset, sizeof y);
    ck_assert_int_eq(rot(&r, x, 3, pos, one, NULL), LLM_OK);
    ck_assert(memcmp(y, one, sizeof one) == 0);
    ck_assert_int_eq(rot(&r, x + 12, 3, pos, one, NULL), LLM_OK);
    ck_assert(memcmp(y + 12, one, sizeof one) == 0);
    ck_assert_int_eq(llm_tensor_from(&base, 2, s43, x, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_transpose(&view, &base, 0, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_copy(&dense, &view, NULL), LLM_OK);
    ck_assert_int_eq(llm_rope_apply(&r, &view, pos, 3, &yv, NULL), LLM_OK);
    ck_assert_int_eq(rot(&r, dense.data + dense.offset, 3, pos, one, NULL), LLM_OK);
    ck_assert(memcmp(yv.data + yv.offset, one, sizeof one) == 0);
    llm_tensor_free(&xt);
    llm_tensor_free(&yt);
    llm_tensor_free(&base);
    llm_tensor_free(&view);
    llm_tensor_free(&dense);
    llm_tensor_free(&yv);
    llm_rope_free(&r);
}
END_TEST

START_TEST(test_empty_rows)
{
    size_t shape[2] = {0, 4};
    llm_tensor xt, yt;
    llm_rope r;
    make_rope(&r, LLM_ROPE_ADJACENT);
    ck_assert_int_eq(llm_tensor_zeros(&xt, 2, shape, NULL), LLM_OK);
    ck_assert_int_eq(llm_rope_apply(&r, &xt, NULL, 0, &yt, NULL), LLM_OK);
    ck_assert_uint_eq(yt.size, 0);
    ck_assert_uint_eq(yt.shape[0], 0);
    llm_tensor_free(&yt);
    llm_tensor_free(&xt);
    llm_rope_free(&r);
}
END_TEST

START_TEST(test_init_refusals)
{
    llm_rope r, kept;
    llm_error err;
    memset(&r, 0x5a, sizeof r);
    kept = r;
    ck_assert_int_eq(llm_rope_init(NULL, 4, 100, 8, LLM_ROPE_ADJACENT, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rope_init(&r, 3, 100, 8, LLM_ROPE_ADJACENT, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "rope.init");
    ck_assert_ptr_nonnull(strstr(err.message, "3"));
    ck_assert_int_eq(llm_rope_init(&r, 0, 100, 8, LLM_ROPE_ADJACENT, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rope_init(&r, 4, 0.0, 8, LLM_ROPE_ADJACENT, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rope_init(&r, 4, -2.0, 8, LLM_ROPE_ADJACENT, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rope_init(&r, 4, NAN, 8, LLM_ROPE_ADJACENT, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rope_init(&r, 4, INFINITY, 8, LLM_ROPE_ADJACENT, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rope_init(&r, 4, 100, 0, LLM_ROPE_ADJACENT, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rope_init(&r, 4, 100, 8, (llm_rope_pairing)7, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rope_init(&r, 4, 100, SIZE_MAX, LLM_ROPE_ADJACENT, &err),
                     LLM_ERR_OVERFLOW);
    ck_assert_int_eq(llm_rope_init(&r, 4, 100, SIZE_MAX / 4, LLM_ROPE_ADJACENT, &err),
                     LLM_ERR_OVERFLOW);        /* the tables' bytes, not their count */
    ck_assert(memcmp(&r, &kept, sizeof r) == 0);
}
END_TEST

/* The zero inputs the refusal tests feed the fixture's rope: x34 of the
   right shape [3, 4], x36 of a width the rope does not have, [2, 6], and
   x4 of rank 1. */
static void refusal_inputs(llm_tensor *x34, llm_tensor *x36, llm_tensor *x4)
{
    static const double x[12] = {0};
    const size_t s34[2] = {3, 4}, s36[2] = {2, 6}, s4[1] = {4};
    *x34 = make_tensor(2, s34, x);
    *x36 = make_tensor(2, s36, x);
    *x4 = make_tensor(1, s4, x);
}

START_TEST(test_apply_refusals)
{
    const size_t far[3] = {0, 8, 1}, ok3[3] = {0, 1, 2};
    llm_tensor x34, x36, x4, out, kept;
    llm_rope r;
    llm_error err;
    make_rope(&r, LLM_ROPE_ADJACENT);
    refusal_inputs(&x34, &x36, &x4);
    memset(&out, 0x3c, sizeof out);
    kept = out;
    ck_assert_int_eq(llm_rope_apply(&r, &x34, far, 3, &out, &err), LLM_ERR_INDEX);
    ck_assert_str_eq(where(&err), "rope.apply");
    ck_assert_ptr_nonnull(strstr(err.message, "position 8"));
    ck_assert_ptr_nonnull(strstr(err.message, "capacity 8"));
    ck_assert_int_eq(llm_rope_apply(&r, &x36, ok3, 2, &out, &err), LLM_ERR_SHAPE);
    ck_assert_int_eq(llm_rope_apply(&r, &x4, ok3, 1, &out, &err), LLM_ERR_RANK);
    ck_assert_int_eq(llm_rope_apply(&r, &x34, ok3, 2, &out, &err), LLM_ERR_SHAPE);
    ck_assert_int_eq(llm_rope_apply(&r, &x34, NULL, 3, &out, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rope_apply(NULL, &x34, ok3, 3, &out, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rope_apply(&r, NULL, ok3, 3, &out, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rope_apply(&r, &x34, ok3, 3, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert(memcmp(&out, &kept, sizeof out) == 0);
    llm_tensor_free(&x34);
    llm_tensor_free(&x36);
    llm_tensor_free(&x4);
    llm_rope_free(&r);
}
END_TEST

/* x [3, 4] as a leaf, rotated on the tape from offset; backward with seed g. */
static void tape_pass(const llm_rope *r, const double *x, size_t offset, const double *g,
                      double *y, double *dx)
{
    size_t shape[2] = {3, 4};
    llm_tape tape;
    llm_tensor xt, gx, seed;
    llm_var xv, yv;
    const llm_tensor *v;
    ck_assert_int_eq(llm_tensor_from(&xt, 2, shape, x, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&gx, 2, shape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&seed, 2, shape, g, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &xt, &gx, &xv, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_rope(&tape, r, xv, offset, &yv, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&tape, yv, &v, NULL), LLM_OK);
    memcpy(y, v->data + v->offset, 12 * sizeof *y);
    ck_assert_int_eq(llm_tape_backward(&tape, yv, &seed, 0, NULL), LLM_OK);
    memcpy(dx, gx.data, 12 * sizeof *dx);
    llm_tape_free(&tape);
    llm_tensor_free(&xt);
    llm_tensor_free(&gx);
    llm_tensor_free(&seed);
}

static void check_tape(llm_rope_pairing pairing)
{
    static const double x[12] = {0.5, -1, 0.25, 2, 1, 0.5, -0.5, 1, -1, 0.75, 1.5, -0.25};
    static const double g[12] = {1, 0.2, -0.3, 0.4, -1, 2, 0.5, 0, 0.1, -0.7, 0.9, 1.1};
    const size_t pos[3] = {3, 4, 5};
    double y[12], dx[12], ref[12], lhs = 0, rhs = 0, ng = 0, ndx = 0;
    size_t i;
    llm_rope r;
    make_rope(&r, pairing);
    tape_pass(&r, x, 3, g, y, dx);
    ck_assert_int_eq(rot(&r, x, 3, pos, ref, NULL), LLM_OK);
    ck_assert(memcmp(y, ref, sizeof ref) == 0);
    /* the VJP is the transpose: (R x) . g == x . dx, and it keeps lengths */
    for (i = 0; i < 12; i++) {
        lhs += y[i] * g[i];
        rhs += x[i] * dx[i];
        ng += g[i] * g[i];
        ndx += dx[i] * dx[i];
    }
    ck_assert(fabs(lhs - rhs) < 1e-13);
    ck_assert(fabs(ng - ndx) < 1e-13);
    /* rotating dx forward again gives g back */
    ck_assert_int_eq(rot(&r, dx, 3, pos, ref, NULL), LLM_OK);
    for (i = 0; i < 12; i++)
        ck_assert(fabs(ref[i] - g[i]) < 1e-14);
    llm_rope_free(&r);
}

START_TEST(test_tape_adjacent)
{
    check_tape(LLM_ROPE_ADJACENT);
}
END_TEST

START_TEST(test_tape_half)
{
    check_tape(LLM_ROPE_HALF);
}
END_TEST

START_TEST(test_tape_refusals)
{
    llm_tape tape;
    llm_tensor x34, x36, x4, big;
    llm_var a, b, c, d, y, kept, stale;
    llm_rope r;
    llm_error err;
    size_t count;
    make_rope(&r, LLM_ROPE_ADJACENT);
    refusal_inputs(&x34, &x36, &x4);
    big = make_tensor(2, (const size_t[]){3, 4}, (const double[12]){0});
    big.data[0] = 1.5e308;
    big.data[1] = 1.5e308;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    put_leaves(&tape, &x34, &a, &x36, &b, &x4, &c, &big, &d, NULL);
    count = tape.count;
    kept = y = marked_var();
    ck_assert_int_eq(llm_tape_rope(&tape, &r, a, 6, &y, &err), LLM_ERR_INDEX);
    ck_assert_str_eq(where(&err), "tape.rope");
    ck_assert_ptr_nonnull(strstr(err.message, "capacity is 8"));
    ck_assert_int_eq(llm_tape_rope(&tape, &r, a, 8, &y, &err), LLM_ERR_INDEX);
    ck_assert_int_eq(llm_tape_rope(&tape, &r, a, SIZE_MAX, &y, &err), LLM_ERR_INDEX);
    ck_assert_int_eq(llm_tape_rope(&tape, &r, b, 0, &y, &err), LLM_ERR_SHAPE);
    ck_assert_int_eq(llm_tape_rope(&tape, &r, c, 0, &y, &err), LLM_ERR_RANK);
    ck_assert_int_eq(llm_tape_rope(&tape, NULL, a, 0, &y, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tape_rope(&tape, &r, a, 0, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tape_rope(NULL, &r, a, 0, &y, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tape_rope(&tape, &r, d, 1, &y, &err), LLM_ERR_NONFINITE);
    ck_assert(memcmp(&y, &kept, sizeof y) == 0);
    ck_assert_uint_eq(tape.count, count);
    /* exactly at the capacity is fine: positions 5, 6, 7 */
    ck_assert_int_eq(llm_tape_rope(&tape, &r, a, 5, &y, &err), LLM_OK);
    stale = a;
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_rope(&tape, &r, stale, 0, &y, &err), LLM_ERR_TAPE);
    llm_tape_free(&tape);
    llm_tensor_free(&x34);
    llm_tensor_free(&x36);
    llm_tensor_free(&x4);
    llm_tensor_free(&big);
    llm_rope_free(&r);
}
END_TEST

START_TEST(test_a_rank_the_struct_cannot_hold)
{
    double one = 1.0;
    const size_t pos[1] = {0};
    llm_tensor bad, out, keep;
    llm_error err;
    llm_rope r;
    make_rope(&r, LLM_ROPE_ADJACENT);
    bad = malformed_tensor(&one, LLM_MAX_RANK + 3);
    memset(&out, 0x5a, sizeof out);
    keep = out;
    ck_assert_int_eq(llm_rope_apply(&r, &bad, pos, 1, &out, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "rope.apply");
    ck_assert(memcmp(&out, &keep, sizeof out) == 0);
    llm_rope_free(&r);
}
END_TEST

Suite *ch29_rope_suite(void)
{
    const TTest *tests[] = {
        test_frequencies_and_tables,
        test_dot_grid_fixture_and_shift,
        test_norms_kept,
        test_position_zero_is_identity,
        test_pairings_differ_at_width_4,
        test_leading_axes_and_views,
        test_empty_rows,
        test_init_refusals,
        test_apply_refusals,
        test_tape_adjacent,
        test_tape_half,
        test_tape_refusals,
        test_a_rank_the_struct_cannot_hold,
    };
    return suite_of("ch29 rope", tcase_of("core", 0, tests, COUNT(tests)));
}
