/* Chapter 11: checked 2-d and batched matrix products. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/error.h"
#include "llm/tensor.h"
#include "support.h"

static const double fa[6] = {1, 2, 3, 4, 5, 6};   /* A, [2, 3] */
static const double fw[6] = {1, 2, 0, 1, 2, 0};   /* W, [3, 2] */
static const size_t sa[2] = {2, 3}, sw[2] = {3, 2};

/* A deterministic value with no pattern to it: element t of stream s. */
static double value(size_t s, size_t t)
{
    return (double)((t * 7919 + s * 104729) % 1009) / 97.0 - 5.2;
}

static void fill(llm_tensor *t, size_t s)
{
    size_t i;
    for (i = 0; i < t->size; i++)
        t->data[t->offset + i] = value(s, i);
}

/* The straightforward reference: element (r, c) of op(X) for batch offset o. */
static double at(const llm_tensor *x, size_t o, int trans, size_t r, size_t c)
{
    const size_t n = x->rank;
    return trans ? x->data[o + c * x->stride[n - 2] + r * x->stride[n - 1]]
                 : x->data[o + r * x->stride[n - 2] + c * x->stride[n - 1]];
}

/* Textbook i-j-k product of one pair of matrices into c (m x n contiguous). */
static void ref_pair(double *c, const llm_tensor *a, size_t oa, int ta,
                     const llm_tensor *b, size_t ob, int tb, size_t m, size_t k, size_t n)
{
    size_t i, j, t;
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            double s = 0.0;
            for (t = 0; t < k; t++)
                s += at(a, oa, ta, i, t) * at(b, ob, tb, t, j);
            c[i * n + j] = s;
        }
}

static llm_tensor make(size_t rank, const size_t *shape, size_t stream)
{
    llm_tensor t;
    ck_assert_int_eq(llm_tensor_zeros(&t, rank, shape, NULL), LLM_OK);
    fill(&t, stream);
    return t;
}

START_TEST(fixture_product)
{
    const double want[4] = {7, 4, 16, 13};
    llm_tensor a, w, c;
    ck_assert_int_eq(llm_tensor_from(&a, 2, sa, fa, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&w, 2, sw, fw, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_matmul(&c, &a, &w, 0, 0, NULL), LLM_OK);
    assert_layout(&c, 2, (const size_t[]){2, 2}, (const size_t[]){2, 1});
    ck_assert_int_eq(c.owns, 1);
    ck_assert_int_eq(memcmp(c.data, want, sizeof want), 0);
    ck_assert(c.data[2] == 4.0 * 1.0 + 5.0 * 0.0 + 6.0 * 2.0);
    llm_tensor_free(&a);
    llm_tensor_free(&w);
    llm_tensor_free(&c);
}
END_TEST

START_TEST(batched_fixture_broadcasts_w)
{
    const double av[12] = {1, 2, 3, 4, 5, 6, 0, 1, 2, 2, 1, 0};
    const double want[8] = {7, 4, 16, 13, 4, 1, 2, 5};
    const size_t s3[3] = {2, 2, 3}, sw3[3] = {1, 3, 2};
    llm_tensor a, w, c;
    ck_assert_int_eq(llm_tensor_from(&a, 3, s3, av, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&w, 3, sw3, fw, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_matmul(&c, &a, &w, 0, 0, NULL), LLM_OK);
    assert_shape(&c, 3, (const size_t[]){2, 2, 2});
    ck_assert_uint_eq(c.size, 8);
    ck_assert_int_eq(memcmp(c.data, want, sizeof want), 0);
    llm_tensor_free(&a);
    llm_tensor_free(&w);
    llm_tensor_free(&c);
}
END_TEST

/* Checks llm_matmul(a, b, ta, tb) of 2-d operands against the reference. */
static void check_2d(const llm_tensor *a, const llm_tensor *b, int ta, int tb,
                     size_t m, size_t k, size_t n)
{
    llm_tensor c;
    double *want = malloc((m * n + 1) * sizeof *want);
    ck_assert_ptr_nonnull(want);
    ref_pair(want, a, a->offset, ta, b, b->offset, tb, m, k, n);
    ck_assert_int_eq(llm_matmul(&c, a, b, ta, tb, NULL), LLM_OK);
    ck_assert_uint_eq(c.shape[0], m);
    ck_assert_uint_eq(c.shape[1], n);
    ck_assert_int_eq(memcmp(c.data, want, m * n * sizeof *want), 0);
    llm_tensor_free(&c);
    free(want);
}

START_TEST(transpose_flags_match_explicit_loops)
{
    const size_t smk[2] = {4, 6}, skm[2] = {6, 4}, skn[2] = {6, 5}, snk[2] = {5, 6};
    llm_tensor amk = make(2, smk, 1), akm = make(2, skm, 2);
    llm_tensor bkn = make(2, skn, 3), bnk = make(2, snk, 4);
    check_2d(&amk, &bkn, 0, 0, 4, 6, 5);
    check_2d(&akm, &bkn, 1, 0, 4, 6, 5);
    check_2d(&amk, &bnk, 0, 1, 4, 6, 5);
    check_2d(&akm, &bnk, 1, 1, 4, 6, 5);
    /* any nonzero flag transposes */
    check_2d(&akm, &bnk, 7, -1, 4, 6, 5);
    llm_tensor_free(&amk);
    llm_tensor_free(&akm);
    llm_tensor_free(&bkn);
    llm_tensor_free(&bnk);
}
END_TEST

START_TEST(flags_and_strided_views_agree)
{
    const double at_vals[6] = {1, 4, 2, 5, 3, 6}, wt_vals[6] = {1, 0, 2, 2, 1, 0};
    const size_t s32[2] = {3, 2}, s23[2] = {2, 3};
    const double want[4] = {7, 4, 16, 13};
    llm_tensor a, w, at_, wt, view, c;
    ck_assert_int_eq(llm_tensor_from(&a, 2, sa, fa, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&w, 2, sw, fw, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&at_, 2, s32, at_vals, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&wt, 2, s23, wt_vals, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_matmul(&c, &at_, &wt, 1, 1, NULL), LLM_OK);
    ck_assert_int_eq(memcmp(c.data, want, sizeof want), 0);
    llm_tensor_free(&c);
    /* A^T as a view over A's buffer (strides [1, 3]), then the flag undoes it */
    view = a;
    view.shape[0] = 3; view.shape[1] = 2;
    view.stride[0] = 1; view.stride[1] = 3;
    view.owns = 0;
    ck_assert_int_eq(llm_matmul(&c, &view, &w, 1, 0, NULL), LLM_OK);
    ck_assert_int_eq(memcmp(c.data, want, sizeof want), 0);
    llm_tensor_free(&c);
    /* the view without a flag is A^T: (A^T)(A) is [3, 3] */
    ck_assert_int_eq(llm_matmul(&c, &view, &a, 0, 0, NULL), LLM_OK);
    ck_assert_uint_eq(c.shape[0], 3);
    ck_assert_uint_eq(c.shape[1], 3);
    ck_assert(c.data[0] == 1.0 * 1.0 + 4.0 * 4.0);
    ck_assert(c.data[5] == 2.0 * 3.0 + 5.0 * 6.0);
    llm_tensor_free(&c);
    llm_tensor_free(&a);
    llm_tensor_free(&w);
    llm_tensor_free(&at_);
    llm_tensor_free(&wt);
}
END_TEST

START_TEST(offset_views_are_read_from_their_offset)
{
    /* a [2, 3] window with row stride 4 inside a [3, 4] buffer, offset 5 */
    const size_t big[2] = {3, 4};
    llm_tensor buf = make(2, big, 9), view, w, c;
    double want[4];
    ck_assert_int_eq(llm_tensor_from(&w, 2, sw, fw, 6, NULL), LLM_OK);
    view = buf;
    view.owns = 0;
    view.offset = 5;
    view.shape[0] = 2; view.shape[1] = 3;
    view.stride[0] = 4; view.stride[1] = 1;
    view.size = 6;
    ref_pair(want, &view, 5, 0, &w, 0, 0, 2, 3, 2);
    ck_assert_int_eq(llm_matmul(&c, &view, &w, 0, 0, NULL), LLM_OK);
    ck_assert_int_eq(memcmp(c.data, want, sizeof want), 0);
    ck_assert(want[0] == buf.data[5] * 1.0 + buf.data[6] * 0.0 + buf.data[7] * 2.0);
    llm_tensor_free(&c);
    llm_tensor_free(&w);
    llm_tensor_free(&buf);
}
END_TEST

/* Checks a batched product against the reference, walking the output's batch
   index and mapping it to each operand by hand. */
static void check_batched(const llm_tensor *a, const llm_tensor *b, int ta, int tb,
                          size_t rank, const size_t *want_shape)
{
    llm_tensor c;
    size_t idx[LLM_MAX_RANK] = {0}, per, done = 0, k;
    const size_t m = want_shape[rank - 2], n = want_shape[rank - 1];
    const size_t kk = ta ? a->shape[a->rank - 2] : a->shape[a->rank - 1];
    double *want;
    ck_assert_int_eq(llm_matmul(&c, a, b, ta, tb, NULL), LLM_OK);
    ck_assert_uint_eq(c.rank, rank);
    for (k = 0; k < rank; k++)
        ck_assert_uint_eq(c.shape[k], want_shape[k]);
    per = m * n;
    want = malloc((c.size + 1) * sizeof *want);
    ck_assert_ptr_nonnull(want);
    do {
        size_t oa = a->offset, ob = b->offset;
        for (k = 0; k + 2 < rank; k++) {
            if (k + a->rank >= rank && a->shape[k + a->rank - rank] > 1)
                oa += idx[k] * a->stride[k + a->rank - rank];
            if (k + b->rank >= rank && b->shape[k + b->rank - rank] > 1)
                ob += idx[k] * b->stride[k + b->rank - rank];
        }
        ref_pair(want + done * per, a, oa, ta, b, ob, tb, m, kk, n);
        done++;
    } while (llm_index_next(rank - 2, want_shape, idx));
    ck_assert_uint_eq(done * per, c.size);
    ck_assert_int_eq(memcmp(c.data, want, c.size * sizeof *want), 0);
    llm_tensor_free(&c);
    free(want);
}

START_TEST(batch_axes_broadcast_both_ways)
{
    const size_t a1[3] = {1, 2, 4}, b3[3] = {3, 4, 5}, a3[3] = {3, 2, 4}, b1[3] = {1, 4, 5};
    const size_t b2[2] = {4, 5}, a2[2] = {2, 4};
    const size_t a41[4] = {2, 1, 2, 4}, b_3[3] = {3, 4, 5}, bt[3] = {3, 5, 4};
    const size_t out3[3] = {3, 2, 5}, out4[4] = {2, 3, 2, 5};
    llm_tensor ta1 = make(3, a1, 1), tb3 = make(3, b3, 2), ta3 = make(3, a3, 3);
    llm_tensor tb1 = make(3, b1, 4), tb2 = make(2, b2, 5), ta2 = make(2, a2, 6);
    llm_tensor ta41 = make(4, a41, 7), tb_3 = make(3, b_3, 8), tbt = make(3, bt, 9);
    check_batched(&ta1, &tb3, 0, 0, 3, out3);   /* [1, ...] x [3, ...] */
    check_batched(&ta3, &tb1, 0, 0, 3, out3);   /* [3, ...] x [1, ...] */
    check_batched(&ta3, &tb2, 0, 0, 3, out3);   /* rank 3 x rank 2 */
    check_batched(&ta2, &tb3, 0, 0, 3, out3);   /* rank 2 x rank 3 */
    check_batched(&ta41, &tb_3, 0, 0, 4, out4); /* [2, 1] x [3] -> [2, 3] */
    check_batched(&ta41, &tbt, 0, 1, 4, out4);  /* with a transposed B */
    llm_tensor_free(&ta1); llm_tensor_free(&tb3); llm_tensor_free(&ta3);
    llm_tensor_free(&tb1); llm_tensor_free(&tb2); llm_tensor_free(&ta2);
    llm_tensor_free(&ta41); llm_tensor_free(&tb_3); llm_tensor_free(&tbt);
}
END_TEST

START_TEST(empty_inner_axis_gives_positive_zeros)
{
    const size_t s20[2] = {2, 0}, s03[2] = {0, 3}, s402[3] = {4, 0, 2}, s02[2] = {0, 2}, s40[2] = {4, 0};
    llm_tensor a, b, c, b3, at0, bt;
    size_t i;
    ck_assert_int_eq(llm_tensor_zeros(&a, 2, s20, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&b, 2, s03, NULL), LLM_OK);
    ck_assert_int_eq(llm_matmul(&c, &a, &b, 0, 0, NULL), LLM_OK);
    ck_assert_uint_eq(c.shape[0], 2);
    ck_assert_uint_eq(c.shape[1], 3);
    ck_assert_uint_eq(c.size, 6);
    for (i = 0; i < 6; i++)
        ck_assert(c.data[i] == 0.0 && !signbit(c.data[i]));
    llm_tensor_free(&c);
    /* K = 0 with a batch of B: [2, 0] x [4, 0, 2] is [4, 2, 2] of +0.0 */
    ck_assert_int_eq(llm_tensor_zeros(&b3, 3, s402, NULL), LLM_OK);
    ck_assert_int_eq(llm_matmul(&c, &a, &b3, 0, 0, NULL), LLM_OK);
    ck_assert_uint_eq(c.rank, 3);
    ck_assert_uint_eq(c.shape[0], 4);
    ck_assert_uint_eq(c.size, 16);
    for (i = 0; i < 16; i++)
        ck_assert(c.data[i] == 0.0 && !signbit(c.data[i]));
    llm_tensor_free(&c);
    /* K = 0 through both flags: [0, 2]^T x [4, 0]^T is [2, 4] of +0.0 */
    ck_assert_int_eq(llm_tensor_zeros(&at0, 2, s02, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&bt, 2, s40, NULL), LLM_OK);
    ck_assert_int_eq(llm_matmul(&c, &at0, &bt, 1, 1, NULL), LLM_OK);
    ck_assert_uint_eq(c.shape[0], 2);
    ck_assert_uint_eq(c.shape[1], 4);
    for (i = 0; i < 8; i++)
        ck_assert(c.data[i] == 0.0 && !signbit(c.data[i]));
    llm_tensor_free(&c);
    llm_tensor_free(&at0);
    llm_tensor_free(&bt);
    llm_tensor_free(&a);
    llm_tensor_free(&b);
    llm_tensor_free(&b3);
}
END_TEST

START_TEST(empty_outputs_have_the_right_shape)
{
    const size_t s03[2] = {0, 3}, s30[2] = {3, 0}, s023[3] = {0, 2, 3}, s123[3] = {1, 2, 3};
    const size_t s032[3] = {0, 3, 2};
    llm_tensor m0, n0, b0, w, a1, c;
    ck_assert_int_eq(llm_tensor_zeros(&m0, 2, s03, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&n0, 2, s30, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&b0, 3, s023, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&w, 2, sw, fw, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&a1, 3, s123, NULL), LLM_OK);
    ck_assert_int_eq(llm_matmul(&c, &m0, &w, 0, 0, NULL), LLM_OK);     /* M = 0 */
    ck_assert_uint_eq(c.shape[0], 0);
    ck_assert_uint_eq(c.shape[1], 2);
    ck_assert_uint_eq(c.size, 0);
    ck_assert_ptr_nonnull(c.data);
    llm_tensor_free(&c);
    ck_assert_int_eq(llm_matmul(&c, &w, &n0, 1, 0, NULL), LLM_OK);     /* N = 0 */
    ck_assert_uint_eq(c.shape[0], 2);
    ck_assert_uint_eq(c.shape[1], 0);
    ck_assert_uint_eq(c.size, 0);
    llm_tensor_free(&c);
    ck_assert_int_eq(llm_matmul(&c, &b0, &w, 0, 0, NULL), LLM_OK);     /* batch 0 */
    ck_assert_uint_eq(c.rank, 3);
    ck_assert_uint_eq(c.shape[0], 0);
    ck_assert_uint_eq(c.size, 0);
    llm_tensor_free(&c);
    /* extent 1 broadcasts against 0 */
    {
        llm_tensor w0;
        ck_assert_int_eq(llm_tensor_zeros(&w0, 3, s032, NULL), LLM_OK);
        ck_assert_int_eq(llm_matmul(&c, &a1, &w0, 0, 0, NULL), LLM_OK);
        ck_assert_uint_eq(c.shape[0], 0);
        ck_assert_uint_eq(c.shape[1], 2);
        ck_assert_uint_eq(c.shape[2], 2);
        llm_tensor_free(&c);
        llm_tensor_free(&w0);
    }
    llm_tensor_free(&m0);
    llm_tensor_free(&n0);
    llm_tensor_free(&b0);
    llm_tensor_free(&w);
    llm_tensor_free(&a1);
}
END_TEST

START_TEST(bit_identical_to_the_textbook_loops)
{
    const size_t shapes[4][3] = {{7, 13, 9}, {1, 64, 1}, {16, 33, 17}, {3, 1, 40}};
    size_t s;
    for (s = 0; s < 4; s++) {
        const size_t m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
        const size_t smk[2] = {m, k}, skn[2] = {k, n};
        llm_tensor a = make(2, smk, 11 + s), b = make(2, skn, 23 + s);
        check_2d(&a, &b, 0, 0, m, k, n);
        llm_tensor_free(&a);
        llm_tensor_free(&b);
    }
}
END_TEST

START_TEST(sum_order_and_zero_products_are_kept)
{
    const double row[3] = {0.1, 0.2, 0.3}, ones[3] = {1, 1, 1};
    const double negz_a[2] = {-1, 1}, negz_b[2] = {0.0, -0.0};
    const double inf_a[2] = {0, 1}, inf_b[2] = {INFINITY, 1};
    const size_t s13[2] = {1, 3}, s31[2] = {3, 1}, s12[2] = {1, 2}, s21[2] = {2, 1};
    llm_tensor a, b, c;
    /* ascending k: (0.1 + 0.2) + 0.3, not 0.1 + (0.2 + 0.3) */
    ck_assert_int_eq(llm_tensor_from(&a, 2, s13, row, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&b, 2, s31, ones, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_matmul(&c, &a, &b, 0, 0, NULL), LLM_OK);
    {
        volatile double x = 0.1, y = 0.2, z = 0.3;
        const double up = (x + y) + z, down = x + (y + z);
        ck_assert(c.data[0] == up);
        ck_assert(c.data[0] != down);
    }
    llm_tensor_free(&a); llm_tensor_free(&b); llm_tensor_free(&c);
    /* every product -0: the sum starts at +0, so the output is +0 */
    ck_assert_int_eq(llm_tensor_from(&a, 2, s12, negz_a, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&b, 2, s21, negz_b, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_matmul(&c, &a, &b, 0, 0, NULL), LLM_OK);
    ck_assert(c.data[0] == 0.0 && !signbit(c.data[0]));
    llm_tensor_free(&a); llm_tensor_free(&b); llm_tensor_free(&c);
    /* a zero in A is not skipped: 0 * inf is NaN */
    ck_assert_int_eq(llm_tensor_from(&a, 2, s12, inf_a, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&b, 2, s21, inf_b, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_matmul(&c, &a, &b, 0, 0, NULL), LLM_OK);
    ck_assert(isnan(c.data[0]));
    llm_tensor_free(&a); llm_tensor_free(&b); llm_tensor_free(&c);
}
END_TEST

static void assert_untouched(const llm_tensor *out)
{
    llm_tensor expect;
    memset(&expect, 0xab, sizeof expect);
    ck_assert_int_eq(memcmp(out, &expect, sizeof expect), 0);
}

START_TEST(every_error_path_leaves_the_output_untouched)
{
    const size_t s3[1] = {3}, s23[2] = {2, 3}, s223[3] = {2, 2, 3}, s422[3] = {4, 2, 2};
    const size_t s332[3] = {3, 3, 2}, s2322[4] = {2, 3, 3, 2};
    llm_tensor a, w, v, wt, a3, b422, b332, b4, s, out;
    llm_error err;
    ck_assert_int_eq(llm_tensor_from(&a, 2, sa, fa, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&w, 2, sw, fw, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&v, 1, s3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&wt, 2, s23, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&a3, 3, s223, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&b422, 3, s422, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&b332, 3, s332, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&b4, 4, s2322, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&s, 0, NULL, NULL), LLM_OK);
    memset(&out, 0xab, sizeof out);

    ck_assert_int_eq(llm_matmul(NULL, &a, &w, 0, 0, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.matmul");
    ck_assert_int_eq(llm_matmul(&out, NULL, &w, 0, 0, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_matmul(&out, &a, NULL, 0, 0, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.message, "out, A and B are required");
    assert_untouched(&out);

    ck_assert_int_eq(llm_matmul(&out, &v, &w, 0, 0, &err), LLM_ERR_RANK);
    ck_assert_str_eq(err.message, "A has rank 1; a matrix product needs at least 2 axes");
    ck_assert_int_eq(llm_matmul(&out, &a, &v, 0, 0, &err), LLM_ERR_RANK);
    ck_assert_str_eq(err.message, "B has rank 1; a matrix product needs at least 2 axes");
    ck_assert_int_eq(llm_matmul(&out, &a, &s, 0, 0, &err), LLM_ERR_RANK);
    ck_assert_str_eq(where(&err), "tensor.matmul");
    assert_untouched(&out);

    ck_assert_int_eq(llm_matmul(&out, &a, &wt, 0, 0, &err), LLM_ERR_SHAPE);
    ck_assert_str_eq(err.message, "A has K=3 columns, B has 2 rows");
    ck_assert_int_eq(llm_matmul(&out, &a, &w, 1, 0, &err), LLM_ERR_SHAPE);
    ck_assert_str_eq(err.message, "A^T has K=2 columns, B has 3 rows");
    ck_assert_int_eq(llm_matmul(&out, &a, &w, 0, 1, &err), LLM_ERR_SHAPE);
    ck_assert_str_eq(err.message, "A has K=3 columns, B^T has 2 rows");
    ck_assert_str_eq(where(&err), "tensor.matmul");
    assert_untouched(&out);

    ck_assert_int_eq(llm_matmul(&out, &a3, &b332, 0, 0, &err), LLM_ERR_BROADCAST);
    ck_assert_str_eq(where(&err), "tensor.matmul");
    ck_assert_str_eq(err.message, "batch axis 0: A has extent 2, B has 3; "
                                  "they must be equal or one of them 1");
    ck_assert_int_eq(llm_matmul(&out, &a3, &b4, 0, 0, &err), LLM_ERR_BROADCAST);
    ck_assert_str_eq(err.message, "batch axis 1: A has extent 2, B has 3; "
                                  "they must be equal or one of them 1");
    assert_untouched(&out);

    llm_tensor_free(&a); llm_tensor_free(&w); llm_tensor_free(&v);
    llm_tensor_free(&wt); llm_tensor_free(&a3); llm_tensor_free(&b422);
    llm_tensor_free(&b332); llm_tensor_free(&b4); llm_tensor_free(&s);
}
END_TEST

START_TEST(inner_error_is_reported_before_batch_error)
{
    const size_t s223[3] = {2, 2, 3}, s422[3] = {4, 2, 2};
    llm_tensor a, b, out;
    llm_error err;
    ck_assert_int_eq(llm_tensor_zeros(&a, 3, s223, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&b, 3, s422, NULL), LLM_OK);
    memset(&out, 0xab, sizeof out);
    ck_assert_int_eq(llm_matmul(&out, &a, &b, 0, 0, &err), LLM_ERR_SHAPE);
    ck_assert_str_eq(err.message, "A has K=3 columns, B has 2 rows");
    /* fixing the inner extent with a flag leaves only the batch error */
    ck_assert_int_eq(llm_matmul(&out, &a, &b, 1, 0, &err), LLM_ERR_BROADCAST);
    assert_untouched(&out);
    llm_tensor_free(&a);
    llm_tensor_free(&b);
}
END_TEST

/* An operand described by hand: every element is the one stored value. */
static llm_tensor repeated(double *one, size_t rows, size_t cols)
{
    llm_tensor t;
    memset(&t, 0, sizeof t);
    t.data = one;
    t.rank = 2;
    t.shape[0] = rows;
    t.shape[1] = cols;
    t.size = rows * cols;
    return t;
}

START_TEST(huge_outputs_are_refused)
{
    double one = 1.0;
    const size_t half = (size_t)1 << (sizeof(size_t) * 4);
    llm_tensor column = repeated(&one, half, 1), row = repeated(&one, 1, half), out;
    llm_tensor tall = repeated(&one, SIZE_MAX / sizeof(double) - 1, 1);
    llm_tensor unit = repeated(&one, 1, 1);
    llm_error err;
    memset(&out, 0xab, sizeof out);
    ck_assert_int_eq(llm_matmul(&out, &column, &row, 0, 0, &err), LLM_ERR_OVERFLOW);
    ck_assert_str_eq(where(&err), "tensor.matmul <- tensor.row_major");
    ck_assert_ptr_nonnull(strstr(err.message, "cannot make the output"));
    ck_assert_int_eq(llm_matmul(&out, &tall, &unit, 0, 0, &err), LLM_ERR_ALLOC);
    ck_assert_str_eq(where(&err), "tensor.matmul <- tensor.zeros");
    assert_untouched(&out);
    ck_assert_int_eq(llm_matmul(&out, &column, &row, 0, 0, NULL), LLM_ERR_OVERFLOW);
    assert_untouched(&out);
}
END_TEST

START_TEST(operands_are_not_modified)
{
    const size_t s45[2] = {4, 5}, s56[2] = {5, 6};
    llm_tensor a = make(2, s45, 31), b = make(2, s56, 32), c;
    llm_tensor a0 = make(2, s45, 31), b0 = make(2, s56, 32);
    ck_assert_int_eq(llm_matmul(&c, &a, &b, 0, 0, NULL), LLM_OK);
    ck_assert_int_eq(memcmp(a.data, a0.data, a.size * sizeof(double)), 0);
    ck_assert_int_eq(memcmp(b.data, b0.data, b.size * sizeof(double)), 0);
    ck_assert_ptr_ne(c.data, a.data);
    ck_assert_ptr_ne(c.data, b.data);
    llm_tensor_free(&a); llm_tensor_free(&b); llm_tensor_free(&c);
    llm_tensor_free(&a0); llm_tensor_free(&b0);
}
END_TEST

/* The blocked kernel (4 x 4 blocks, border blocks for the last rows and
   columns) and the copy of a strided op(B) against the textbook loops, bit
   for bit: every size from 0 to 9 on each side of a block, both flags,
   batch broadcast of either operand and strided views. */
START_TEST(blocked_and_packed_paths_match_the_textbook_bit_for_bit)
{
    static const size_t sizes[] = {0, 1, 3, 4, 5, 7, 8, 9};
    const size_t ns = sizeof sizes / sizeof sizes[0];
    size_t im, ik, in, f;
    for (im = 0; im < ns; im++)
        for (ik = 0; ik < ns; ik++)
            for (in = 0; in < ns; in++)
                for (f = 0; f < 4; f++) {
                    const size_t m = sizes[im], kk = sizes[ik], n = sizes[in];
                    const int ta = (int)(f & 1), tb = (int)(f >> 1);
                    const size_t sa3[3] = {3, ta ? kk : m, ta ? m : kk};
                    const size_t sb2[2] = {tb ? n : kk, tb ? kk : n};
                    const size_t sa2[2] = {ta ? kk : m, ta ? m : kk};
                    const size_t sb3[3] = {2, tb ? n : kk, tb ? kk : n};
                    const size_t w1[3] = {3, m, n}, w2[3] = {2, m, n}, w0[2] = {m, n};
                    llm_tensor a3 = make(3, sa3, 1 + f), b2 = make(2, sb2, 2 + f);
                    llm_tensor a2 = make(2, sa2, 3 + f), b3 = make(3, sb3, 4 + f);
                    check_batched(&a2, &b2, ta, tb, 2, w0);
                    check_batched(&a3, &b2, ta, tb, 3, w1);   /* B broadcast */
                    check_batched(&a2, &b3, ta, tb, 3, w2);   /* A broadcast */
                    llm_tensor_free(&a3);
                    llm_tensor_free(&b2);
                    llm_tensor_free(&a2);
                    llm_tensor_free(&b3);
                }
}
END_TEST

/* Model-sized products, with op(B) as a transposed view of a slice (an
   offset, a row step wider than the row) and as a flag on it. */
START_TEST(large_strided_views_match_the_textbook_bit_for_bit)
{
    static const size_t sx[3] = {5, 33, 64}, sw3[2] = {79, 70};
    llm_tensor x = make(3, sx, 11), w = make(2, sw3, 12), ws, wt;
    const size_t want_flag[3] = {5, 33, 79}, want_view[3] = {5, 33, 79};
    ck_assert_int_eq(llm_tensor_slice(&ws, &w, 1, 3, 67, NULL), LLM_OK);  /* [79, 64] */
    check_batched(&x, &ws, 0, 1, 3, want_flag);                          /* x ws^T */
    ck_assert_int_eq(llm_tensor_transpose(&wt, &ws, 0, 1, NULL), LLM_OK);   /* [64, 79] */
    check_batched(&x, &wt, 0, 0, 3, want_view);
    llm_tensor_free(&x);
    llm_tensor_free(&w);
}
END_TEST

/* Found by the hostile-caller harness: an operand without a buffer or with
   a rank the struct cannot hold is refused by llm_tensor_check. */
START_TEST(malformed_operands_are_refused_before_any_read)
{
    static const double v[4] = {1, 2, 3, 4};
    const size_t s22[2] = {2, 2};
    llm_tensor good, bad, out, marker;
    llm_error err;
    ck_assert_int_eq(llm_tensor_from(&good, 2, s22, v, 4, NULL), LLM_OK);
    memset(&marker, 0x5a, sizeof marker);
    bad = good;
    bad.data = NULL;
    out = marker;
    ck_assert_int_eq(llm_matmul(&out, &bad, &good, 0, 0, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.matmul");
    bad = good;
    bad.rank = LLM_MAX_RANK + 1;
    ck_assert_int_eq(llm_matmul(&out, &good, &bad, 0, 1, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.message, "tensor B has rank 9, more than 8");
    ck_assert(memcmp(&out, &marker, sizeof out) == 0);
    llm_tensor_free(&good);
}
END_TEST

Suite *ch11_matrix_multiplication_suite(void)
{
    const TTest *tests[] = {
        fixture_product,
        batched_fixture_broadcasts_w,
        transpose_flags_match_explicit_loops,
        flags_and_strided_views_agree,
        offset_views_are_read_from_their_offset,
        batch_axes_broadcast_both_ways,
        empty_inner_axis_gives_positive_zeros,
        empty_outputs_have_the_right_shape,
        bit_identical_to_the_textbook_loops,
        sum_order_and_zero_products_are_kept,
        every_error_path_leaves_the_output_untouched,
        inner_error_is_reported_before_batch_error,
        huge_outputs_are_refused,
        operands_are_not_modified,
        blocked_and_packed_paths_match_the_textbook_bit_for_bit,
        large_strided_views_match_the_textbook_bit_for_bit,
        malformed_operands_are_refused_before_any_read,
    };
    return suite_of("ch11 matrix multiplication",
                    tcase_of("matmul", 0, tests, COUNT(tests)));
}
