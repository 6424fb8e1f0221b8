/* gradcheck.c -- finite differences from the stored probes, scaled errors. */
#include <math.h>
#include <string.h>

#include "llm/gradcheck.h"
#include "llm/tensor.h"

llm_status llm_central_difference(llm_objective f, void *ctx, llm_tensor *theta,
                                  size_t flat, double h, llm_difference *out,
                                  llm_error *err)
{
    unsigned char kept[sizeof(double)];
    double *x, t, lo, hi, hm, hp, v[3], w;
    llm_difference d;
    llm_status st = LLM_OK;
    size_t i;
    if (f == NULL || theta == NULL || theta->data == NULL || out == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "gradcheck.central_difference",
                        "objective, tensor and output are required");
    if (!(h > 0.0) || !isfinite(h))
        return llm_fail(err, LLM_ERR_ARGUMENT, "gradcheck.central_difference",
                        "the step must be positive and finite, got %g", h);
    if (!llm_tensor_is_contiguous(theta))
        return llm_fail(err, LLM_ERR_CONTIGUITY, "gradcheck.central_difference",
                        "the tensor must have row-major strides to be perturbed in place");
    if (flat >= theta->size)
        return llm_fail(err, LLM_ERR_INDEX, "gradcheck.central_difference",
                        "coordinate %zu is outside the %zu elements", flat, theta->size);
    x = theta->data + theta->offset + flat;
    memcpy(kept, x, sizeof kept);
    memcpy(&t, kept, sizeof t);
    if (!isfinite(t))
        return llm_fail(err, LLM_ERR_NONFINITE, "gradcheck.central_difference",
                        "element %zu is not finite", flat);
    lo = t - h;
    hi = t + h;
    hm = t - lo;
    hp = hi - t;
    if (!isfinite(lo) || !isfinite(hi) || hm == 0.0 || hp == 0.0)
        return llm_fail(err, LLM_ERR_NONFINITE, "gradcheck.central_difference",
                        "h = %g does not move element %zu = %g to two finite "
                        "probes (moved %g and %g)", h, flat, t, hm, hp);
    for (i = 0; i < 3 && st == LLM_OK; i++) {
        if (i > 0)
            *x = i == 1 ? lo : hi;
        st = f(ctx, theta, &v[i], err);
        if (st == LLM_OK && !isfinite(v[i]))
            st = llm_fail(err, LLM_ERR_NONFINITE, "gradcheck.central_difference",
                          "the objective returned %s at element %zu = %g",
                          v[i] != v[i] ? "NaN" : "an infinity", flat,
                          i == 0 ? t : i == 1 ? lo : hi);
    }
    memcpy(x, kept, sizeof kept);
    if (st != LLM_OK)
        return st;
    d.h_minus = hm;
    d.h_plus = hp;
    d.slope_minus = (v[0] - v[1]) / hm;
    d.slope_plus = (v[2] - v[0]) / hp;
    w = hm + hp;
    d.estimate = (hp / w) * d.slope_minus + (hm / w) * d.slope_plus;
    if (!isfinite(d.estimate))
        return llm_fail(err, LLM_ERR_NONFINITE, "gradcheck.central_difference",
                        "the difference at element %zu overflows", flat);
    *out = d;
    return LLM_OK;
}
double llm_gradient_error(double analytic, double numeric)
{
    double s = 1.0;
    if (!isfinite(analytic) || !isfinite(numeric))
        return INFINITY;
    if (fabs(analytic) > s)
        s = fabs(analytic);
    if (fabs(numeric) > s)
        s = fabs(numeric);
    return fabs(analytic / s - numeric / s);
}
llm_status llm_gradient_coords(size_t size, size_t count, size_t *coords,
                               llm_error *err)
{
    size_t k, d, q, r, step_q, step_r;
    if (coords == NULL || count == 0 || count > size)
        return llm_fail(err, LLM_ERR_ARGUMENT, "gradcheck.gradient_coords",
                        "cannot choose %zu of %zu coordinates", count, size);
    d = 2 * count;                  /* count <= size < SIZE_MAX / 8 */
    q = size / d;                   /* j_0 = size / (2 count) */
    r = size % d;
    step_q = size / count;          /* the step size / count, over d */
    step_r = 2 * (size % count);
    for (k = 0; k < count; k++) {
        coords[k] = q;
        q += step_q;
        r += step_r;
        if (r >= d) {
            q++;
            r -= d;
        }
    }
    return LLM_OK;
}
llm_status llm_gradient_check(llm_objective f, void *ctx, llm_tensor *theta,
                              const double *analytic, const size_t *coords,
                              size_t ncoords, double h, double tolerance,
                              double *worst, size_t *failures, llm_error *err)
{
    double top = 0.0, e;
    size_t k, bad = 0;
    llm_difference d;
    llm_status st;
    if (f == NULL || theta == NULL || analytic == NULL || coords == NULL ||
        worst == NULL || failures == NULL || ncoords == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "gradcheck.gradient_check",
                        "objective, tensor, gradient, at least one coordinate "
                        "and both outputs are required");
    if (!(h > 0.0) || !isfinite(h) || !(tolerance > 0.0) || !isfinite(tolerance))
        return llm_fail(err, LLM_ERR_ARGUMENT, "gradcheck.gradient_check",
                        "step and tolerance must be positive and finite, got %g and %g",
                        h, tolerance);
    for (k = 0; k < ncoords; k++)
        if (coords[k] >= theta->size)
            return llm_fail(err, LLM_ERR_INDEX, "gradcheck.gradient_check",
                            "coordinate %zu (entry %zu) is outside the %zu elements",
                            coords[k], k, theta->size);
    for (k = 0; k < ncoords; k++) {
        st = llm_central_difference(f, ctx, theta, coords[k], h, &d, err);
        if (st != LLM_OK)
            return llm_pass(err, st, "gradcheck.gradient_check");
        e = llm_gradient_error(analytic[coords[k]], d.estimate);
        if (!(e <= tolerance))
            bad++;
        if (!(e <= top))
            top = e;
    }
    *worst = top;
    *failures = bad;
    return LLM_OK;
}
