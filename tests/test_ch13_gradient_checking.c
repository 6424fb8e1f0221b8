/* Chapter 13: finite differences from the stored probes, scaled errors,
   sampled gradient checks, bit-exact restoration. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/error.h"
#include "llm/gradcheck.h"
#include "llm/softmax.h"
#include "llm/tensor.h"
#include "support.h"

/* ------------------------------------------------------------ objectives */

/* A scalar function of element `at` of theta, with a call counter and an
   optional refusal on call number fail_at (1-based; 0 never refuses). */
typedef struct probe_ctx {
    double (*fn)(double);
    size_t at;
    int calls;
    int fail_at;
} probe_ctx;

static llm_status probe_objective(void *ctx, const llm_tensor *theta, double *value,
                                  llm_error *err)
{
    probe_ctx *c = ctx;
    c->calls++;
    if (c->calls == c->fail_at)
        return llm_fail(err, LLM_ERR_SHAPE, "test.objective", "refused on call %d", c->calls);
    *value = c->fn(theta->data[theta->offset + c->at]);
    return LLM_OK;
}

static double square(double t) { return t * t; }
static double identity(double t) { return t; }
static double absolute(double t) { return fabs(t); }
static double cubic(double t) { return t * t * t - 2.0 * t; }
static double raw_sqrt(double t) { return sqrt(t); }
static double to_infinity(double t) { return t > 0.5 ? INFINITY : t; }
static double cliff(double t) { return t >= 0.0 ? DBL_MAX : -DBL_MAX; }

/* (x - 2^53)^2 + 5 (x - 2^53): a quadratic whose values stay exact near 2^53 */
static double shifted_quadratic(double t)
{
    double d = t - 9007199254740992.0;
    return d * d + 5.0 * d;
}

static llm_tensor scalar(double v)
{
    llm_tensor t;
    ck_assert_int_eq(llm_tensor_from(&t, 0, NULL, &v, 1, NULL), LLM_OK);
    return t;
}

static llm_difference run(double (*fn)(double), double theta, double h)
{
    probe_ctx c = {fn, 0, 0, 0};
    llm_tensor t = scalar(theta);
    llm_difference d;
    ck_assert_int_eq(llm_central_difference(probe_objective, &c, &t, 0, h, &d, NULL), LLM_OK);
    ck_assert_int_eq(c.calls, 3);
    ck_assert(t.data[0] == theta);
    llm_tensor_free(&t);
    return d;
}

static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* --------------------------------------------------------- the Rust course's cases */

START_TEST(square_at_three_gives_six_and_scores_candidates)
{
    llm_difference d = run(square, 3.0, 0.1);
    ck_assert(d.estimate == 6.0);
    ck_assert(d.h_minus == d.h_plus);
    ck_assert(fabs(d.h_minus - 0.1) < 1e-15);
    ck_assert(llm_gradient_error(6.0, d.estimate) == 0.0);
    /* 5.5 against 6: scale 6, |5.5/6 - 1| = 1/12 */
    ck_assert(fabs(llm_gradient_error(5.5, d.estimate) - 1.0 / 12.0) < 1e-15);
    ck_assert(llm_gradient_error(5.5, d.estimate) > 1e-6);
}
END_TEST

START_TEST(rounded_identity_is_rescued_by_the_stored_spacing)
{
    const double h = 3e-16;
    llm_difference d = run(identity, 1.0, h);
    ck_assert(d.h_minus == 3.0 * DBL_EPSILON / 2.0);  /* three steps of 2^-53 below 1 */
    ck_assert(d.h_plus == DBL_EPSILON);                /* one step of 2^-52 above 1 */
    ck_assert(d.slope_minus == 1.0 && d.slope_plus == 1.0);
    ck_assert(d.estimate == 1.0);
    /* dividing by the requested 2h would be wrong by 7.5 percent */
    ck_assert(fabs(((1.0 + h) - (1.0 - h)) / (2.0 * h) - 0.925185853854) < 1e-12);
}
END_TEST

START_TEST(absolute_value_at_its_kink_gives_a_misleading_zero)
{
    llm_difference d = run(absolute, 0.0, 1e-3);
    ck_assert(d.estimate == 0.0);
    ck_assert(d.slope_minus == -1.0);
    ck_assert(d.slope_plus == 1.0);
    ck_assert(llm_gradient_error(0.0, d.estimate) <= 1e-6);   /* sign(0) "passes" */
}
END_TEST

START_TEST(cubic_step_sizes_trusted_and_untrusted)
{
    llm_difference d = run(cubic, 1.5, 1e-5);
    ck_assert(llm_gradient_error(4.75, d.estimate) <= 1e-6);
    d = run(cubic, 1.5, 1e-13);
    ck_assert(fabs(d.estimate - 4.751111) < 5e-7);
    ck_assert(llm_gradient_error(4.75, d.estimate) > 1e-6);
    d = run(cubic, 1.5, 1e-15);
    ck_assert(fabs(d.estimate - 4.8) < 5e-7);
    ck_assert(llm_gradient_error(4.75, d.estimate) > 1e-6);
    /* truncation of a cubic is h_minus * h_plus: 4.76 at h = 0.1 */
    d = run(cubic, 1.5, 0.1);
    ck_assert(fabs(d.estimate - 4.76) < 1e-12);
}
END_TEST

START_TEST(weighted_formula_is_exact_for_a_quadratic_with_unequal_spacing)
{
    /* at 2^53 the doubles are 1 apart below and 2 apart above: 2^53 - 3 is
       stored exactly, 2^53 + 3 rounds to 2^53 + 4 */
    const double theta = 9007199254740992.0, h = 3.0;
    llm_difference d = run(shifted_quadratic, theta, h);
    ck_assert(d.h_minus == 3.0);
    ck_assert(d.h_plus == 4.0);
    ck_assert(d.slope_minus == 2.0);
    ck_assert(d.slope_plus == 9.0);
    ck_assert(d.estimate == 5.0);      /* the derivative 2 (x - 2^53) + 5 at 2^53 */
    /* the textbook formula over the requested 2h gets (36 - (-6)) / 6 = 7 */
    ck_assert((shifted_quadratic(theta + h) - shifted_quadratic(theta - h)) / (2.0 * h) == 7.0);
}
END_TEST

/* ------------------------------------------------------- scaled error */

START_TEST(scaled_error_is_absolute_below_one_relative_above)
{
    ck_assert(llm_gradient_error(1e-14, -1e-14) == 2e-14);
    ck_assert(fabs(llm_gradient_error(1e9, 1e9 + 1.0) - 1e-9) < 1e-15);
    ck_assert(llm_gradient_error(0.25, 0.5) == 0.25);
    ck_assert(llm_gradient_error(2.0, -2.0) == 2.0);
    /* dividing first: no overflow at the top of the range */
    ck_assert(llm_gradient_error(DBL_MAX, -DBL_MAX) == 2.0);
    ck_assert(llm_gradient_error(3.0, 7.0) == llm_gradient_error(7.0, 3.0));
    ck_assert(isinf(llm_gradient_error(NAN, 1.0)));
    ck_assert(isinf(llm_gradient_error(1.0, INFINITY)));
    ck_assert(isinf(llm_gradient_error(-INFINITY, -INFINITY)));
}
END_TEST

/* --------------------------------------------------------- coordinates */

START_TEST(coordinates_are_midpoints_of_equal_blocks)
{
    size_t c[10], k;
    const size_t big3[3] = {192153584101141162u, 576460752303423488u, 960767920505705813u};
    const size_t big7[7] = {164703072086692425u, 494109216260077275u, 823515360433462125u,
                            1152921504606846975u, 1482327648780231825u,
                            1811733792953616675u, 2141139937127001525u};
    ck_assert_int_eq(llm_gradient_coords(6, 4, c, NULL), LLM_OK);
    ck_assert(c[0] == 0 && c[1] == 2 && c[2] == 3 && c[3] == 5);
    ck_assert_int_eq(llm_gradient_coords(10, 10, c, NULL), LLM_OK);
    for (k = 0; k < 10; k++)
        ck_assert_uint_eq(c[k], k);
    ck_assert_int_eq(llm_gradient_coords(7, 1, c, NULL), LLM_OK);
    ck_assert_uint_eq(c[0], 3);
    /* sizes whose products (2k+1) N would overflow */
    ck_assert_int_eq(llm_gradient_coords((size_t)1 << 60, 3, c, NULL), LLM_OK);
    for (k = 0; k < 3; k++)
        ck_assert_uint_eq(c[k], big3[k]);
    ck_assert_int_eq(llm_gradient_coords(((size_t)1 << 61) - 1, 7, c, NULL), LLM_OK);
    for (k = 0; k < 7; k++)
        ck_assert_uint_eq(c[k], big7[k]);
}
END_TEST

START_TEST(coordinate_requests_that_cannot_be_met_are_refused)
{
    size_t c[4] = {7, 7, 7, 7};
    llm_error err;
    ck_assert_int_eq(llm_gradient_coords(3, 4, c, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "gradcheck.gradient_coords");
    ck_assert_str_eq(err.message, "cannot choose 4 of 3 coordinates");
    ck_assert_int_eq(llm_gradient_coords(3, 0, c, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_gradient_coords(0, 0, c, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_gradient_coords(3, 2, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert(c[0] == 7 && c[1] == 7 && c[2] == 7 && c[3] == 7);
}
END_TEST

/* --------------------------------------------------------- restoration */

static const uint64_t special_bits[3] = {UINT64_C(0x8000000000000000), UINT64_C(0x4000000000000000),
                                         UINT64_C(0x7ff8000000000123)};

static llm_tensor special_tensor(void)
{
    const size_t three[1] = {3};
    double v[3];
    llm_tensor t;
    memcpy(v, special_bits, sizeof v);
    ck_assert_int_eq(llm_tensor_from(&t, 1, three, v, 3, NULL), LLM_OK);
    return t;
}

START_TEST(probing_negative_zero_restores_every_bit)
{
    llm_tensor t = special_tensor();
    probe_ctx c = {square, 0, 0, 0};
    llm_difference d;
    ck_assert_int_eq(llm_central_difference(probe_objective, &c, &t, 0, 0.5, &d, NULL), LLM_OK);
    ck_assert(d.estimate == 0.0);
    ck_assert(d.h_minus == 0.5 && d.h_plus == 0.5);
    ck_assert_int_eq(memcmp(t.data, special_bits, sizeof special_bits), 0);
    ck_assert(signbit(t.data[0]));
    /* probing the 2 next to the NaN leaves the NaN's payload alone */
    c.at = 1;
    c.calls = 0;
    ck_assert_int_eq(llm_central_difference(probe_objective, &c, &t, 1, 1e-5, &d, NULL), LLM_OK);
    ck_assert(fabs(d.estimate - 4.0) < 1e-9);
    ck_assert_int_eq(memcmp(t.data, special_bits, sizeof special_bits), 0);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(bits_are_restored_when_the_objective_refuses_midway)
{
    llm_tensor t = special_tensor();
    llm_difference d, before;
    llm_error err;
    int fail_at;
    memset(&d, 0x5a, sizeof d);
    before = d;
    for (fail_at = 1; fail_at <= 3; fail_at++) {
        probe_ctx c = {square, 0, 0, 0};
        c.fail_at = fail_at;
        ck_assert_int_eq(llm_central_difference(probe_objective, &c, &t, 0, 0.5, &d, &err),
                         LLM_ERR_SHAPE);                /* the objective's own code */
        ck_assert_str_eq(where(&err), "test.objective");
        ck_assert_int_eq(c.calls, fail_at);
        ck_assert_int_eq(memcmp(t.data, special_bits, sizeof special_bits), 0);
        ck_assert_int_eq(memcmp(&d, &before, sizeof d), 0);
    }
    llm_tensor_free(&t);
}
END_TEST

START_TEST(bits_are_restored_when_the_objective_returns_nan)
{
    llm_tensor t = special_tensor();
    probe_ctx c = {raw_sqrt, 0, 0, 0};
    llm_difference d;
    llm_error err;
    /* sqrt(-0) = -0 is fine, sqrt(-0.5) is NaN at the second call */
    ck_assert_int_eq(llm_central_difference(probe_objective, &c, &t, 0, 0.5, &d, &err),
                     LLM_ERR_NONFINITE);
    ck_assert_str_eq(where(&err), "gradcheck.central_difference");
    ck_assert_str_eq(err.message, "the objective returned NaN at element 0 = -0.5");
    ck_assert_int_eq(c.calls, 2);
    ck_assert_int_eq(memcmp(t.data, special_bits, sizeof special_bits), 0);
    llm_tensor_free(&t);
}
END_TEST

/* --------------------------------------------------- difference errors */

START_TEST(difference_refuses_bad_arguments_before_any_call)
{
    llm_tensor t = scalar(1.0), empty;
    probe_ctx c = {square, 0, 0, 0};
    llm_difference d, before;
    llm_error err;
    const double bad_h[5] = {0.0, -1e-5, INFINITY, NAN, -0.0};
    size_t i;
    memset(&d, 0x3c, sizeof d);
    before = d;
    memset(&empty, 0, sizeof empty);
    ck_assert_int_eq(llm_central_difference(NULL, &c, &t, 0, 1e-5, &d, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "gradcheck.central_difference");
    ck_assert_int_eq(llm_central_difference(probe_objective, &c, NULL, 0, 1e-5, &d, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_central_difference(probe_objective, &c, &t, 0, 1e-5, NULL, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_central_difference(probe_objective, &c, &empty, 0, 1e-5, &d, &err),
                     LLM_ERR_ARGUMENT);
    for (i = 0; i < 5; i++)
        ck_assert_int_eq(llm_central_difference(probe_objective, &c, &t, 0, bad_h[i], &d, &err),
                         LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.message, "the step must be positive and finite, got -0");
    ck_assert_int_eq(llm_central_difference(probe_objective, &c, &t, 1, 1e-5, &d, &err),
                     LLM_ERR_INDEX);
    ck_assert_str_eq(err.message, "coordinate 1 is outside the 1 elements");
    ck_assert_int_eq(c.calls, 0);
    ck_assert_int_eq(memcmp(&d, &before, sizeof d), 0);
    ck_assert(t.data[0] == 1.0);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(difference_refuses_strided_views_and_accepts_offsets)
{
    static const double v[6] = {1, 2, 3, 4, 5, 6};
    const size_t shape[2] = {2, 3};
    llm_tensor t, view;
    probe_ctx c = {square, 1, 0, 0};
    llm_difference d;
    llm_error err;
    ck_assert_int_eq(llm_tensor_from(&t, 2, shape, v, 6, NULL), LLM_OK);
    view = t;                            /* transposed: shape [3, 2], strides [1, 3] */
    view.owns = 0;
    view.shape[0] = 3; view.shape[1] = 2;
    view.stride[0] = 1; view.stride[1] = 3;
    ck_assert_int_eq(llm_central_difference(probe_objective, &c, &view, 0, 1e-5, &d, &err),
                     LLM_ERR_CONTIGUITY);
    ck_assert_str_eq(where(&err), "gradcheck.central_difference");
    ck_assert_int_eq(c.calls, 0);
    /* the second row as a view with offset 3: flat 1 is buffer position 4 */
    view = t;
    view.owns = 0;
    view.rank = 1;
    view.shape[0] = 3;
    view.stride[0] = 1;
    view.offset = 3;
    view.size = 3;
    ck_assert_int_eq(llm_central_difference(probe_objective, &c, &view, 1, 1e-5, &d, &err),
                     LLM_OK);
    ck_assert(fabs(d.estimate - 10.0) < 1e-8);     /* d/dx x^2 at x = 5 */
    /* an axis of extent 1 may have any stride */
    view = t;
    view.owns = 0;
    view.shape[0] = 1; view.stride[0] = 7; view.size = 3;
    ck_assert_int_eq(llm_central_difference(probe_objective, &c, &view, 2, 1e-5, &d, &err),
                     LLM_OK);
    ck_assert_int_eq(memcmp(t.data, v, sizeof v), 0);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(difference_refuses_what_is_not_finite)
{
    llm_tensor t;
    probe_ctx c = {square, 0, 0, 0};
    llm_difference d;
    llm_error err;

    t = scalar(1.0);                     /* h too small: 1 + 1e-17 is 1 */
    ck_assert_int_eq(llm_central_difference(probe_objective, &c, &t, 0, 1e-17, &d, &err),
                     LLM_ERR_NONFINITE);
    ck_assert_str_eq(where(&err), "gradcheck.central_difference");
    ck_assert_str_eq(err.message,
                     "h = 1e-17 does not move element 0 = 1 to two finite probes (moved 0 and 0)");
    ck_assert_int_eq(c.calls, 0);
    /* only one side too small: 1 - 1e-16 moves, 1 + 1e-16 does not */
    ck_assert_int_eq(llm_central_difference(probe_objective, &c, &t, 0, 1e-16, &d, &err),
                     LLM_ERR_NONFINITE);
    llm_tensor_free(&t);

    t = scalar(INFINITY);
    ck_assert_int_eq(llm_central_difference(probe_objective, &c, &t, 0, 1e-5, &d, &err),
                     LLM_ERR_NONFINITE);
    ck_assert_str_eq(err.message, "element 0 is not finite");
    llm_tensor_free(&t);
    t = scalar(NAN);
    ck_assert_int_eq(llm_central_difference(probe_objective, &c, &t, 0, 1e-5, &d, &err),
                     LLM_ERR_NONFINITE);
    llm_tensor_free(&t);

    t = scalar(DBL_MAX);                 /* the upper probe overflows */
    ck_assert_int_eq(llm_central_difference(probe_objective, &c, &t, 0, 1e300, &d, &err),
                     LLM_ERR_NONFINITE);
    ck_assert_int_eq(c.calls, 0);
    ck_assert(t.data[0] == DBL_MAX);
    llm_tensor_free(&t);

    t = scalar(0.0);                     /* an infinite value at the upper probe */
    c.fn = to_infinity;
    ck_assert_int_eq(llm_central_difference(probe_objective, &c, &t, 0, 1.0, &d, &err),
                     LLM_ERR_NONFINITE);
    ck_assert_str_eq(err.message, "the objective returned an infinity at element 0 = 1");
    ck_assert(same_bits(t.data[0], 0.0));
    c.fn = cliff;                        /* finite values, overflowing slope */
    ck_assert_int_eq(llm_central_difference(probe_objective, &c, &t, 0, 0.5, &d, &err),
                     LLM_ERR_NONFINITE);
    ck_assert_str_eq(err.message, "the difference at element 0 overflows");
    ck_assert(same_bits(t.data[0], 0.0));
    llm_tensor_free(&t);
}
END_TEST

/* -------------------------------------------------------- gradient check */

typedef struct nll_ctx {
    const size_t *targets;
    size_t ntargets;
    int calls;
} nll_ctx;

static llm_status nll_objective(void *ctx, const llm_tensor *theta, double *value,
                                llm_error *err)
{
    nll_ctx *c = ctx;
    c->calls++;
    return llm_nll_mean(value, theta, c->targets, c->ntargets, err);
}

static const double logits[6] = {0, 1, -1, 2, 0, -2};
static const size_t nll_targets[2] = {0, 2};

static void nll_gradient(const llm_tensor *z, double divisor, double *grad)
{
    llm_tensor p;
    size_t r, j;
    ck_assert_int_eq(llm_softmax(&p, z, 1, NULL), LLM_OK);
    for (r = 0; r < 2; r++)
        for (j = 0; j < 3; j++)
            grad[r * 3 + j] = (p.data[p.offset + r * 3 + j]
                               - (j == nll_targets[r] ? 1.0 : 0.0)) / divisor;
    llm_tensor_free(&p);
}

START_TEST(sampled_nll_check_passes_and_a_wrong_gradient_fails)
{
    const size_t shape[2] = {2, 3};
    nll_ctx ctx = {nll_targets, 2, 0};
    llm_tensor z;
    double loss, grad[6], wrong[6], worst = -1.0;
    size_t coords[4], failures = 99;
    ck_assert_int_eq(llm_tensor_from(&z, 2, shape, logits, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_nll_mean(&loss, &z, nll_targets, 2, NULL), LLM_OK);
    ck_assert(fabs(loss - 2.775268796472) < 5e-13);
    nll_gradient(&z, 2.0, grad);
    nll_gradient(&z, 1.0, wrong);
    ck_assert(fabs(grad[0] - -0.377635764473) < 5e-13);
    ck_assert_int_eq(llm_gradient_coords(6, 4, coords, NULL), LLM_OK);
    ck_assert_int_eq(llm_gradient_check(nll_objective, &ctx, &z, grad, coords, 4, 1e-5, 1e-6,
                                        &worst, &failures, NULL), LLM_OK);
    ck_assert_uint_eq(failures, 0);
    ck_assert(worst >= 0.0 && worst < 1e-9);
    ck_assert_int_eq(ctx.calls, 12);                 /* three evaluations per coordinate */
    ck_assert_int_eq(llm_gradient_check(nll_objective, &ctx, &z, wrong, coords, 4, 1e-5, 1e-6,
                                        &worst, &failures, NULL), LLM_OK);
    ck_assert_uint_eq(failures, 4);
    ck_assert(fabs(worst - 0.492061880012) < 1e-9);  /* |2a - a| at the worst coordinate */
    ck_assert_int_eq(memcmp(z.data, logits, sizeof logits), 0);
    llm_tensor_free(&z);
}
END_TEST

START_TEST(check_counts_failures_and_treats_nan_as_one)
{
    llm_tensor t = scalar(3.0);
    probe_ctx c = {square, 0, 0, 0};
    const size_t at[3] = {0, 0, 0};
    double worst;
    size_t failures;
    double g[1] = {6.0};
    ck_assert_int_eq(llm_gradient_check(probe_objective, &c, &t, g, at, 3, 0.1, 1e-6,
                                        &worst, &failures, NULL), LLM_OK);
    ck_assert(worst == 0.0 && failures == 0);
    g[0] = 5.5;
    ck_assert_int_eq(llm_gradient_check(probe_objective, &c, &t, g, at, 1, 0.1, 1e-6,
                                        &worst, &failures, NULL), LLM_OK);
    ck_assert(failures == 1 && fabs(worst - 1.0 / 12.0) < 1e-15);
    /* a looser tolerance accepts it: the verdict is the tolerance's */
    ck_assert_int_eq(llm_gradient_check(probe_objective, &c, &t, g, at, 1, 0.1, 0.1,
                                        &worst, &failures, NULL), LLM_OK);
    ck_assert_uint_eq(failures, 0);
    g[0] = NAN;
    ck_assert_int_eq(llm_gradient_check(probe_objective, &c, &t, g, at, 2, 0.1, 1e-6,
                                        &worst, &failures, NULL), LLM_OK);
    ck_assert(failures == 2 && isinf(worst));
    llm_tensor_free(&t);
}
END_TEST

START_TEST(check_refuses_bad_arguments_before_any_evaluation)
{
    llm_tensor t = scalar(3.0);
    probe_ctx c = {square, 0, 0, 0};
    const size_t at[2] = {0, 1};
    const double g[1] = {6.0};
    const double bad_tol[4] = {0.0, -1e-6, INFINITY, NAN};
    double worst = -1.0;
    size_t failures = 99, i;
    llm_error err;
    ck_assert_int_eq(llm_gradient_check(NULL, &c, &t, g, at, 1, 0.1, 1e-6, &worst, &failures,
                                        &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "gradcheck.gradient_check");
    ck_assert_int_eq(llm_gradient_check(probe_objective, &c, NULL, g, at, 1, 0.1, 1e-6, &worst,
                                        &failures, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_gradient_check(probe_objective, &c, &t, NULL, at, 1, 0.1, 1e-6, &worst,
                                        &failures, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_gradient_check(probe_objective, &c, &t, g, NULL, 1, 0.1, 1e-6, &worst,
                                        &failures, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_gradient_check(probe_objective, &c, &t, g, at, 0, 0.1, 1e-6, &worst,
                                        &failures, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_gradient_check(probe_objective, &c, &t, g, at, 1, 0.1, 1e-6, NULL,
                                        &failures, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_gradient_check(probe_objective, &c, &t, g, at, 1, 0.1, 1e-6, &worst,
                                        NULL, &err), LLM_ERR_ARGUMENT);
    for (i = 0; i < 4; i++)
        ck_assert_int_eq(llm_gradient_check(probe_objective, &c, &t, g, at, 1, 0.1, bad_tol[i],
                                            &worst, &failures, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_gradient_check(probe_objective, &c, &t, g, at, 1, 0.0, 1e-6, &worst,
                                        &failures, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "gradcheck.gradient_check");
    ck_assert_str_eq(err.message, "step and tolerance must be positive and finite, got 0 and 1e-06");
    /* the bad second coordinate is found before the first is evaluated */
    ck_assert_int_eq(llm_gradient_check(probe_objective, &c, &t, g, at, 2, 0.1, 1e-6, &worst,
                                        &failures, &err), LLM_ERR_INDEX);
    ck_assert_str_eq(err.message, "coordinate 1 (entry 1) is outside the 1 elements");
    ck_assert_int_eq(c.calls, 0);
    ck_assert(worst == -1.0 && failures == 99);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(check_passes_objective_errors_through_with_outputs_untouched)
{
    const size_t shape[2] = {2, 3}, bad_targets[2] = {0, 3}, at[2] = {0, 5};
    nll_ctx ctx = {bad_targets, 2, 0};
    llm_tensor z;
    double grad[6] = {0}, worst = -1.0;
    size_t failures = 99;
    probe_ctx c = {square, 0, 0, 5};     /* refuses on the second coordinate */
    llm_error err;
    ck_assert_int_eq(llm_tensor_from(&z, 2, shape, logits, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_gradient_check(nll_objective, &ctx, &z, grad, at, 2, 1e-5, 1e-6,
                                        &worst, &failures, &err), LLM_ERR_TARGET);
    ck_assert_int_eq(ctx.calls, 1);
    ck_assert_int_eq(llm_gradient_check(probe_objective, &c, &z, grad, at, 2, 1e-5, 1e-6,
                                        &worst, &failures, &err), LLM_ERR_SHAPE);
    ck_assert_str_eq(where(&err), "gradcheck.gradient_check <- test.objective");
    ck_assert_int_eq(c.calls, 5);
    ck_assert(worst == -1.0 && failures == 99);
    ck_assert_int_eq(memcmp(z.data, logits, sizeof logits), 0);
    llm_tensor_free(&z);
}
END_TEST

Suite *ch13_gradient_checking_suite(void)
{
    const TTest *tests[] = {
        square_at_three_gives_six_and_scores_candidates,
        rounded_identity_is_rescued_by_the_stored_spacing,
        absolute_value_at_its_kink_gives_a_misleading_zero,
        cubic_step_sizes_trusted_and_untrusted,
        weighted_formula_is_exact_for_a_quadratic_with_unequal_spacing,
        scaled_error_is_absolute_below_one_relative_above,
        coordinates_are_midpoints_of_equal_blocks,
        coordinate_requests_that_cannot_be_met_are_refused,
        probing_negative_zero_restores_every_bit,
        bits_are_restored_when_the_objective_refuses_midway,
        bits_are_restored_when_the_objective_returns_nan,
        difference_refuses_bad_arguments_before_any_call,
        difference_refuses_strided_views_and_accepts_offsets,
        difference_refuses_what_is_not_finite,
        sampled_nll_check_passes_and_a_wrong_gradient_fails,
        check_counts_failures_and_treats_nan_as_one,
        check_refuses_bad_arguments_before_any_evaluation,
        check_passes_objective_errors_through_with_outputs_untouched,
    };
    return suite_of("ch13 gradient checking", tcase_of("core", 0, tests, COUNT(tests)));
}
