/* Chapter 12: softmax, log-softmax, log-sum-exp and the fused mean NLL. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "llm/error.h"
#include "llm/softmax.h"
#include "llm/tensor.h"
#include "support.h"

static const double rows3[6] = {0, 1, 1000, 1001, -1001, -1000};
static const size_t shape3[2] = {3, 2};

/* A tensor struct filled with a marker, to prove a refused call left it alone. */
static void mark(llm_tensor *t) { memset(t, 0x5a, sizeof *t); }
static int marked(const llm_tensor *t)
{
    llm_tensor m;
    mark(&m);
    return memcmp(t, &m, sizeof m) == 0;
}

/* A view of the whole of t with a different shape and strides (chapter 9 will
   make these properly). */
static llm_tensor view2(const llm_tensor *t, size_t offset, size_t n0, size_t n1,
                        size_t s0, size_t s1)
{
    llm_tensor v = *t;
    v.owns = 0;
    v.offset = offset;
    v.rank = 2;
    v.shape[0] = n0; v.shape[1] = n1;
    v.stride[0] = s0; v.stride[1] = s1;
    v.size = n0 * n1;
    return v;
}

START_TEST(fixture_probabilities_and_exact_shift_invariance)
{
    llm_tensor x, p;
    size_t r;
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape3, rows3, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_softmax(&p, &x, 1, NULL), LLM_OK);
    assert_layout(&p, 2, (const size_t[]){3, 2}, (const size_t[]){2, 1});
    ck_assert(p.owns);
    for (r = 0; r < 3; r++) {
        ck_assert_double_eq_tol(p.data[2 * r], 0.268941421370, 1e-12);
        ck_assert_double_eq_tol(p.data[2 * r + 1], 0.731058578630, 1e-12);
        /* not close: the same bits as row 0 */
        ck_assert_int_eq(memcmp(p.data + 2 * r, p.data, 2 * sizeof(double)), 0);
    }
    /* the exact value e^-1 / (e^-1 + 1), within rounding */
    ck_assert_double_eq_tol(p.data[0], exp(-1.0) / (exp(-1.0) + 1.0), 1e-16);
    llm_tensor_free(&x);
    llm_tensor_free(&p);
}
END_TEST

START_TEST(naive_formula_really_fails_on_the_fixture)
{
    /* the reason for the chapter: without the shift rows 1 and 2 are NaN */
    volatile double big = 1000.0, small = -1001.0;
    double e1 = exp(big), e2 = exp(small);
    ck_assert(isinf(e1) && e1 > 0);
    ck_assert(e2 == 0.0);
    ck_assert(isnan(e1 / (e1 + e1)));
    ck_assert(isnan(e2 / (e2 + e2)));
}
END_TEST

START_TEST(fixture_logsumexp_drops_the_axis)
{
    static const double want[3] = {1.313261687518, 1001.313261687518, -999.686738312482};
    llm_tensor x, lse;
    size_t r;
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape3, rows3, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_logsumexp(&lse, &x, 1, NULL), LLM_OK);
    assert_shape(&lse, 1, (const size_t[]){3});
    ck_assert_uint_eq(lse.size, 3);
    for (r = 0; r < 3; r++)
        ck_assert_double_eq_tol(lse.data[r], want[r], 1e-12);
    llm_tensor_free(&lse);
    /* along axis 0: shape [2], each the lse of a column of three */
    ck_assert_int_eq(llm_logsumexp(&lse, &x, 0, NULL), LLM_OK);
    assert_shape(&lse, 1, (const size_t[]){2});
    ck_assert_double_eq_tol(lse.data[0], 1000.0 + log(1.0 + exp(-1000.0) + exp(-2001.0)), 1e-12);
    ck_assert_double_eq_tol(lse.data[1], 1001.0, 1e-12);
    llm_tensor_free(&lse);
    llm_tensor_free(&x);
}
END_TEST

START_TEST(logsumexp_shapes_of_rank_three_and_of_a_vector)
{
    const size_t shape[3] = {2, 3, 4}, one[1] = {3};
    double v[24], w[3] = {-1.0, 2.0, 0.5};
    llm_tensor x, lse;
    size_t i, j, k;
    for (i = 0; i < 24; i++)
        v[i] = (double)((i * 7) % 11) - 5.0;
    ck_assert_int_eq(llm_tensor_from(&x, 3, shape, v, 24, NULL), LLM_OK);
    ck_assert_int_eq(llm_logsumexp(&lse, &x, 1, NULL), LLM_OK);
    assert_shape(&lse, 2, (const size_t[]){2, 4});
    for (i = 0; i < 2; i++)
        for (k = 0; k < 4; k++) {
            double s = 0.0;
            for (j = 0; j < 3; j++)
                s += exp(v[i * 12 + j * 4 + k]);
            ck_assert_double_eq_tol(lse.data[i * 4 + k], log(s), 1e-12);
        }
    llm_tensor_free(&lse);
    llm_tensor_free(&x);
    /* a vector's log-sum-exp is a scalar */
    ck_assert_int_eq(llm_tensor_from(&x, 1, one, w, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_logsumexp(&lse, &x, 0, NULL), LLM_OK);
    ck_assert_uint_eq(lse.rank, 0);
    ck_assert_uint_eq(lse.size, 1);
    ck_assert_double_eq_tol(lse.data[0], log(exp(-1.0) + exp(2.0) + exp(0.5)), 1e-12);
    llm_tensor_free(&lse);
    llm_tensor_free(&x);
}
END_TEST

START_TEST(softmax_along_axis_0_of_a_2x3)
{
    static const double v[6] = {1, 2, 3, 4, 5, 6};
    const size_t shape[2] = {2, 3};
    const double lo = 1.0 / (1.0 + exp(3.0)), hi = exp(3.0) / (1.0 + exp(3.0));
    llm_tensor x, p;
    size_t j;
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape, v, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_softmax(&p, &x, 0, NULL), LLM_OK);
    ck_assert_uint_eq(p.shape[0], 2);
    ck_assert_uint_eq(p.shape[1], 3);
    for (j = 0; j < 3; j++) {
        ck_assert_double_eq_tol(p.data[j], lo, 1e-15);
        ck_assert_double_eq_tol(p.data[3 + j], hi, 1e-15);
        ck_assert_double_eq_tol(p.data[j] + p.data[3 + j], 1.0, 1e-15);
    }
    ck_assert_double_eq_tol(p.data[0], 0.047425873178, 1e-12);
    llm_tensor_free(&p);
    llm_tensor_free(&x);
}
END_TEST

START_TEST(rows_sum_to_one)
{
    const size_t shape[2] = {4, 7};
    double v[28];
    llm_tensor x, p;
    size_t r, i;
    for (i = 0; i < 28; i++)        /* spread over +-800: naive exp would fail */
        v[i] = 800.0 * sin(1.7 * (double)i + 0.3);
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape, v, 28, NULL), LLM_OK);
    ck_assert_int_eq(llm_softmax(&p, &x, 1, NULL), LLM_OK);
    for (r = 0; r < 4; r++) {
        double s = 0.0;
        for (i = 0; i < 7; i++) {
            ck_assert(p.data[r * 7 + i] >= 0.0 && p.data[r * 7 + i] <= 1.0);
            s += p.data[r * 7 + i];
        }
        ck_assert_double_eq_tol(s, 1.0, 1e-15);
    }
    llm_tensor_free(&p);
    llm_tensor_free(&x);
}
END_TEST

START_TEST(log_softmax_is_log_of_softmax_and_survives_underflow)
{
    static const double under[2] = {0, -2000};
    const size_t two[1] = {2};
    llm_tensor x, p, lp;
    size_t i;
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape3, rows3, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_softmax(&p, &x, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_log_softmax(&lp, &x, 1, NULL), LLM_OK);
    for (i = 0; i < 6; i++)
        ck_assert_double_eq_tol(lp.data[i], log(p.data[i]), 1e-12);
    ck_assert_double_eq_tol(lp.data[0], -1.313261687518, 1e-12);
    ck_assert_double_eq_tol(lp.data[1], -0.313261687518, 1e-12);
    llm_tensor_free(&x);
    llm_tensor_free(&p);
    llm_tensor_free(&lp);

    ck_assert_int_eq(llm_tensor_from(&x, 1, two, under, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_softmax(&p, &x, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_log_softmax(&lp, &x, 0, NULL), LLM_OK);
    ck_assert(p.data[0] == 1.0 && p.data[1] == 0.0);
    ck_assert(isinf(log(p.data[1])));          /* log of the softmax is lost */
    ck_assert(lp.data[0] == 0.0);
    ck_assert(lp.data[1] == -2000.0);          /* log-softmax is exact */
    llm_tensor_free(&x);
    llm_tensor_free(&p);
    llm_tensor_free(&lp);
}
END_TEST

START_TEST(nll_mean_matches_the_fixture_and_a_hand_computation)
{
    static const size_t targets[3] = {1, 0, 1};
    static const double v[6] = {0, 1, -1, 2, 0, -2};
    static const size_t t2[2] = {0, 2};
    const size_t shape[2] = {2, 3};
    llm_tensor x;
    double loss = 0.0, hand;
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape3, rows3, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_nll_mean(&loss, &x, targets, 3, NULL), LLM_OK);
    ck_assert_double_eq_tol(loss, 0.646595020852, 1e-12);
    /* by hand: -log p1 = log(1 + e^-1) twice, -log p0 = 1 + log(1 + e^-1) once */
    hand = (2.0 * log(1.0 + exp(-1.0)) + 1.0 + log(1.0 + exp(-1.0))) / 3.0;
    ck_assert_double_eq_tol(loss, hand, 1e-15);
    llm_tensor_free(&x);

    /* chapter 13's fixture: rows [0, 1, -1] and [2, 0, -2], targets 0 and 2 */
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape, v, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_nll_mean(&loss, &x, t2, 2, NULL), LLM_OK);
    hand = (log(exp(0.0) + exp(1.0) + exp(-1.0)) - 0.0
            + log(exp(2.0) + exp(0.0) + exp(-2.0)) + 2.0) / 2.0;
    ck_assert_double_eq_tol(loss, hand, 1e-14);
    ck_assert_double_eq_tol(loss, 2.775268796472, 1e-12);
    llm_tensor_free(&x);
}
END_TEST

START_TEST(nll_mean_equals_the_mean_of_negated_log_softmax_bits)
{
    static const size_t targets[3] = {1, 0, 1};
    llm_tensor x, lp;
    double loss, total = 0.0, mean;
    size_t r;
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape3, rows3, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_log_softmax(&lp, &x, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_nll_mean(&loss, &x, targets, 3, NULL), LLM_OK);
    for (r = 0; r < 3; r++)
        total += -lp.data[2 * r + targets[r]];
    mean = total / 3.0;
    ck_assert_int_eq(memcmp(&mean, &loss, sizeof mean), 0);
    llm_tensor_free(&x);
    llm_tensor_free(&lp);
}
END_TEST

START_TEST(nll_mean_uses_the_last_axis_of_a_rank_three_tensor)
{
    const size_t shape[3] = {2, 2, 2};
    static const size_t targets[4] = {1, 0, 1, 1};
    double v[8], loss, want = 0.0;
    llm_tensor x;
    size_t r;
    memcpy(v, rows3, sizeof rows3);
    v[6] = 3.0; v[7] = 5.0;
    ck_assert_int_eq(llm_tensor_from(&x, 3, shape, v, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_nll_mean(&loss, &x, targets, 4, NULL), LLM_OK);
    for (r = 0; r < 4; r++) {
        double a = v[2 * r], b = v[2 * r + 1], m = a > b ? a : b;
        want += m + log(exp(a - m) + exp(b - m)) - v[2 * r + targets[r]];
    }
    ck_assert_double_eq_tol(loss, want / 4.0, 1e-14);
    llm_tensor_free(&x);
}
END_TEST

START_TEST(strided_views_are_read_through_their_strides)
{
    static const double v[6] = {1, 2, 3, 4, 5, 6};
    static const size_t targets[2] = {1, 0};
    const size_t shape[2] = {2, 3};
    llm_tensor x, t, p, pt, lse, lset, f, tail, lp, lpt;
    double a, b;
    size_t i, j;
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape, v, 6, NULL), LLM_OK);
    t = view2(&x, 0, 3, 2, 1, 3);                    /* the transpose */
    ck_assert_int_eq(llm_softmax(&p, &x, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_softmax(&pt, &t, 1, NULL), LLM_OK);
    ck_assert_uint_eq(pt.stride[0], 2);              /* the output is row-major */
    ck_assert_uint_eq(pt.stride[1], 1);
    ck_assert_uint_eq(pt.offset, 0);
    for (i = 0; i < 2; i++)
        for (j = 0; j < 3; j++)
            ck_assert_int_eq(memcmp(&p.data[i * 3 + j], &pt.data[j * 2 + i], sizeof(double)), 0);
    ck_assert_int_eq(llm_log_softmax(&lp, &x, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_log_softmax(&lpt, &t, 1, NULL), LLM_OK);
    for (i = 0; i < 2; i++)
        for (j = 0; j < 3; j++)
            ck_assert(lp.data[i * 3 + j] == lpt.data[j * 2 + i]);
    ck_assert_int_eq(llm_logsumexp(&lse, &x, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_logsumexp(&lset, &t, 1, NULL), LLM_OK);
    ck_assert_int_eq(memcmp(lse.data, lset.data, 3 * sizeof(double)), 0);
    /* a view with an offset: the last two rows of the fixture */
    ck_assert_int_eq(llm_tensor_from(&f, 2, shape3, rows3, 6, NULL), LLM_OK);
    tail = view2(&f, 2, 2, 2, 2, 1);
    ck_assert_int_eq(llm_nll_mean(&a, &tail, targets, 2, NULL), LLM_OK);
    ck_assert_double_eq_tol(a, (0.313261687518 + 1.313261687518) / 2.0, 1e-12);
    /* nll over the transposed view's rows, against the row-major copy */
    {
        static const double tv[6] = {1, 4, 2, 5, 3, 6};
        const size_t s32[2] = {3, 2};
        static const size_t t3[3] = {0, 1, 1};
        llm_tensor c;
        ck_assert_int_eq(llm_tensor_from(&c, 2, s32, tv, 6, NULL), LLM_OK);
        ck_assert_int_eq(llm_nll_mean(&a, &t, t3, 3, NULL), LLM_OK);
        ck_assert_int_eq(llm_nll_mean(&b, &c, t3, 3, NULL), LLM_OK);
        ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0);
        llm_tensor_free(&c);
    }
    llm_tensor_free(&x);
    llm_tensor_free(&p);
    llm_tensor_free(&pt);
    llm_tensor_free(&lp);
    llm_tensor_free(&lpt);
    llm_tensor_free(&lse);
    llm_tensor_free(&lset);
    llm_tensor_free(&f);
}
END_TEST

START_TEST(empty_other_axis_gives_an_empty_result)
{
    const size_t shape[2] = {0, 3};
    llm_tensor x, p, lse;
    ck_assert_int_eq(llm_tensor_zeros(&x, 2, shape, NULL), LLM_OK);
    ck_assert_int_eq(llm_softmax(&p, &x, 1, NULL), LLM_OK);
    ck_assert_uint_eq(p.size, 0);
    ck_assert_uint_eq(p.shape[0], 0);
    ck_assert_uint_eq(p.shape[1], 3);
    ck_assert_int_eq(llm_logsumexp(&lse, &x, 1, NULL), LLM_OK);
    assert_shape(&lse, 1, (const size_t[]){0});
    llm_tensor_free(&x);
    llm_tensor_free(&p);
    llm_tensor_free(&lse);
}
END_TEST

/* One normalising function, by index, so the error tests cover all three. */
typedef llm_status (*norm_fn)(llm_tensor *, const llm_tensor *, size_t, llm_error *);
static const norm_fn norm[3] = {llm_softmax, llm_log_softmax, llm_logsumexp};
static const char *const norm_stage[3] = {"softmax.softmax", "softmax.log_softmax", "softmax.logsumexp"};

START_TEST(normalisers_refuse_null_arguments)
{
    llm_tensor x, y, nodata;
    llm_error err;
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape3, rows3, 6, NULL), LLM_OK);
    nodata = x;
    nodata.data = NULL;
    mark(&y);
    ck_assert_int_eq(norm[_i](NULL, &x, 1, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), norm_stage[_i]);
    ck_assert_str_eq(err.message, "no output tensor");
    ck_assert_int_eq(norm[_i](&y, NULL, 1, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), norm_stage[_i]);
    ck_assert_int_eq(norm[_i](&y, &nodata, 1, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(norm[_i](&y, NULL, 1, NULL), LLM_ERR_ARGUMENT);
    ck_assert(marked(&y));
    llm_tensor_free(&x);
}
END_TEST

START_TEST(normalisers_refuse_a_bad_axis)
{
    llm_tensor x, s, y;
    llm_error err;
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape3, rows3, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&s, 0, NULL, NULL), LLM_OK);
    mark(&y);
    ck_assert_int_eq(norm[_i](&y, &x, 2, &err), LLM_ERR_AXIS);
    ck_assert_int_eq(err.code, LLM_ERR_AXIS);
    ck_assert_str_eq(where(&err), norm_stage[_i]);
    ck_assert_str_eq(err.message, "axis 2 is outside a tensor of rank 2");
    ck_assert_int_eq(norm[_i](&y, &x, SIZE_MAX, &err), LLM_ERR_AXIS);
    ck_assert_int_eq(norm[_i](&y, &s, 0, &err), LLM_ERR_AXIS);
    ck_assert_str_eq(err.message, "a scalar has no axis 0 to normalise along");
    ck_assert(marked(&y));
    llm_tensor_free(&x);
    llm_tensor_free(&s);
}
END_TEST

START_TEST(normalisers_refuse_an_empty_axis)
{
    const size_t shape[2] = {2, 0};
    llm_tensor x, y;
    llm_error err;
    ck_assert_int_eq(llm_tensor_zeros(&x, 2, shape, NULL), LLM_OK);
    mark(&y);
    ck_assert_int_eq(norm[_i](&y, &x, 1, &err), LLM_ERR_EMPTY);
    ck_assert_str_eq(where(&err), norm_stage[_i]);
    ck_assert_str_eq(err.message,
                     "axis 1 has extent 0: a distribution over no classes is undefined");
    ck_assert(marked(&y));
    llm_tensor_free(&x);
}
END_TEST

START_TEST(normalisers_refuse_nonfinite_logits_by_position)
{
    const size_t shape[2] = {2, 3};
    double v[6] = {0, 1, 2, 3, 4, 5};
    llm_tensor x, y, t;
    llm_error err;
    mark(&y);
    v[4] = NAN;
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape, v, 6, NULL), LLM_OK);
    ck_assert_int_eq(norm[_i](&y, &x, 1, &err), LLM_ERR_NONFINITE);
    ck_assert_str_eq(where(&err), norm_stage[_i]);
    ck_assert_str_eq(err.message, "logit [1, 1] is NaN");
    /* through the transposed view t, x[1, 1] is t[1, 1] and x[0, 2] is
       t[2, 0]: positions are named in the view's own coordinates */
    x.data[2] = INFINITY;
    t = view2(&x, 0, 3, 2, 1, 3);
    ck_assert_int_eq(norm[_i](&y, &t, 0, &err), LLM_ERR_NONFINITE);
    ck_assert_str_eq(err.message, "logit [1, 1] is NaN");
    x.data[4] = 4.0;
    ck_assert_int_eq(norm[_i](&y, &t, 0, &err), LLM_ERR_NONFINITE);
    ck_assert_str_eq(err.message, "logit [2, 0] is +inf");
    x.data[2] = -INFINITY;
    ck_assert_int_eq(norm[_i](&y, &x, 0, &err), LLM_ERR_NONFINITE);
    ck_assert_str_eq(err.message, "logit [0, 2] is -inf");
    ck_assert(marked(&y));
    llm_tensor_free(&x);
}
END_TEST

START_TEST(normalisers_report_an_output_that_cannot_be_allocated)
{
    /* a broadcast-like view: one finite value read through zero strides.
       Its output would need 2^63 bytes: [2^30, 2^30] for softmax and
       log-softmax along axis 1, and for log-sum-exp of [2^30, 2^30, 2] along
       axis 2, which drops the last axis. */
    static double one = 0.5;
    llm_tensor v, y;
    llm_error err;
    size_t axis = _i == 2 ? 2 : 1;
    if (SIZE_MAX >> 62 == 0)          /* only meaningful with a 64-bit size_t */
        return;
    memset(&v, 0, sizeof v);
    v.data = &one;
    v.rank = axis + 1;
    v.shape[0] = (size_t)1 << 30;
    v.shape[1] = (size_t)1 << 30;
    v.shape[2] = 2;
    v.size = (size_t)1 << (_i == 2 ? 61 : 60);
    mark(&y);
    ck_assert_int_eq(norm[_i](&y, &v, axis, &err), LLM_ERR_ALLOC);
    ck_assert_str_eq(where(&err), norm_stage[_i]);
    ck_assert(marked(&y));
}
END_TEST

START_TEST(nll_mean_refuses_every_bad_input)
{
    static const size_t targets[3] = {1, 0, 1}, wrong[3] = {1, 0, 2};
    const size_t no_class[2] = {2, 0}, no_rows[3] = {2, 0, 2};
    llm_tensor x, s, e1, e2, nodata;
    llm_error err;
    double loss = -1.0;
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape3, rows3, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&s, 0, NULL, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&e1, 2, no_class, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&e2, 3, no_rows, NULL), LLM_OK);
    nodata = x;
    nodata.data = NULL;

    ck_assert_int_eq(llm_nll_mean(NULL, &x, targets, 3, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "softmax.nll_mean");
    ck_assert_int_eq(llm_nll_mean(&loss, NULL, targets, 3, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_nll_mean(&loss, &nodata, targets, 3, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_nll_mean(&loss, &x, NULL, 3, &err), LLM_ERR_ARGUMENT);

    ck_assert_int_eq(llm_nll_mean(&loss, &s, targets, 1, &err), LLM_ERR_AXIS);
    ck_assert_str_eq(where(&err), "softmax.nll_mean");
    ck_assert_str_eq(err.message, "a scalar has no class axis");

    ck_assert_int_eq(llm_nll_mean(&loss, &e1, targets, 2, &err), LLM_ERR_EMPTY);
    ck_assert_str_eq(err.message, "the class axis 1 has extent 0");
    ck_assert_int_eq(llm_nll_mean(&loss, &e2, targets, 0, &err), LLM_ERR_EMPTY);
    ck_assert_str_eq(err.message, "no rows: the mean over zero rows is undefined");

    ck_assert_int_eq(llm_nll_mean(&loss, &x, targets, 2, &err), LLM_ERR_SHAPE);
    ck_assert_str_eq(where(&err), "softmax.nll_mean");
    ck_assert_str_eq(err.message, "3 rows of 2 classes need 3 targets, 2 were given");
    ck_assert_int_eq(llm_nll_mean(&loss, &x, targets, 4, &err), LLM_ERR_SHAPE);

    ck_assert_int_eq(llm_nll_mean(&loss, &x, wrong, 3, &err), LLM_ERR_TARGET);
    ck_assert_str_eq(where(&err), "softmax.nll_mean");
    ck_assert_str_eq(err.message, "row 2: target 2 is outside the 2 classes");

    x.data[3] = NAN;
    ck_assert_int_eq(llm_nll_mean(&loss, &x, targets, 3, &err), LLM_ERR_NONFINITE);
    ck_assert_str_eq(where(&err), "softmax.nll_mean");
    ck_assert_str_eq(err.message, "logit [1, 1] is NaN");
    /* a bad target is reported before a bad logit */
    ck_assert_int_eq(llm_nll_mean(&loss, &x, wrong, 3, &err), LLM_ERR_TARGET);
    x.data[3] = -INFINITY;
    ck_assert_int_eq(llm_nll_mean(&loss, &x, targets, 3, NULL), LLM_ERR_NONFINITE);

    ck_assert(loss == -1.0);            /* untouched by every refusal */
    llm_tensor_free(&x);
    llm_tensor_free(&s);
    llm_tensor_free(&e1);
    llm_tensor_free(&e2);
}
END_TEST

START_TEST(refused_scan_releases_the_output)
{
    /* the output is allocated before the scan; a refused scan must free it
       (AddressSanitizer's leak check fails this test otherwise) */
    const size_t shape[2] = {2, 2};
    const double v[4] = {0, 1, INFINITY, 0};
    llm_tensor x, y;
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape, v, 4, NULL), LLM_OK);
    mark(&y);
    ck_assert_int_eq(llm_softmax(&y, &x, 1, NULL), LLM_ERR_NONFINITE);
    ck_assert_int_eq(llm_logsumexp(&y, &x, 0, NULL), LLM_ERR_NONFINITE);
    ck_assert(marked(&y));
    llm_tensor_free(&x);
}
END_TEST

START_TEST(a_rank_the_struct_cannot_hold_is_refused)
{
    double one = 1.0, loss = 7.0;
    const size_t targets[1] = {0};
    llm_tensor bad, out;
    llm_error err;
    memset(&bad, 0, sizeof bad);
    bad.data = &one;
    bad.rank = LLM_MAX_RANK + 1;
    bad.size = 1;
    mark(&out);
    ck_assert_int_eq(llm_softmax(&out, &bad, 0, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "softmax.softmax");
    ck_assert_int_eq(llm_log_softmax(&out, &bad, 0, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_logsumexp(&out, &bad, 0, &err), LLM_ERR_ARGUMENT);
    ck_assert(marked(&out));
    ck_assert_int_eq(llm_nll_mean(&loss, &bad, targets, 1, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "softmax.nll_mean");
    ck_assert(loss == 7.0);
}
END_TEST

Suite *ch12_stable_softmax_suite(void)
{
    const TTest *tests[] = {
        fixture_probabilities_and_exact_shift_invariance,
        naive_formula_really_fails_on_the_fixture,
        fixture_logsumexp_drops_the_axis,
        logsumexp_shapes_of_rank_three_and_of_a_vector,
        softmax_along_axis_0_of_a_2x3,
        rows_sum_to_one,
        log_softmax_is_log_of_softmax_and_survives_underflow,
        nll_mean_matches_the_fixture_and_a_hand_computation,
        nll_mean_equals_the_mean_of_negated_log_softmax_bits,
        nll_mean_uses_the_last_axis_of_a_rank_three_tensor,
        strided_views_are_read_through_their_strides,
        empty_other_axis_gives_an_empty_result,
        nll_mean_refuses_every_bad_input,
        refused_scan_releases_the_output,
        a_rank_the_struct_cannot_hold_is_refused,
    };
    TCase *tc = tcase_of("core", 0, tests, COUNT(tests));
    tcase_add_loop_test(tc, normalisers_refuse_null_arguments, 0, 3);
    tcase_add_loop_test(tc, normalisers_refuse_a_bad_axis, 0, 3);
    tcase_add_loop_test(tc, normalisers_refuse_an_empty_axis, 0, 3);
    tcase_add_loop_test(tc, normalisers_refuse_nonfinite_logits_by_position, 0, 3);
    tcase_add_loop_test(tc, normalisers_report_an_output_that_cannot_be_allocated, 0, 3);
    return suite_of("ch12 stable softmax", tc);
}
