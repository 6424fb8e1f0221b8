/* ch13-gradient-checking -- finite differences from the stored probes. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/softmax.h"
#include "llm/tensor.h"

static char *sci(char *buf, size_t size, double x)
{
    if (x == 0.0)
        snprintf(buf, size, "0");
    else
        snprintf(buf, size, "%.3e", x);
    return buf;
}

/* One row of the table of cases: name, point, step, estimate, analytic,
   scaled error, verdict. */
static void case_row(llm_trace *tr, const char *name, double point, const char *step,
                     double estimate, double analytic, double tol)
{
    char c[6][32];
    const char *cells[7] = {name, c[0], step, c[1], c[2], c[3], c[4]};
    double e = llm_gradient_error(analytic, estimate);
    llm_fmt(c[0], sizeof c[0], point, 1);
    llm_fmt(c[1], sizeof c[1], estimate, 6);
    llm_fmt(c[2], sizeof c[2], analytic, 2);
    llm_fmt(c[3], sizeof c[3], e, 6);
    snprintf(c[4], sizeof c[4], "%s", e <= tol ? "pass" : "fail");
    llm_trace_row(tr, "cases", 7, cells);
}
typedef struct scalar_fn {
    double (*fn)(double);
} scalar_fn;

static llm_status scalar_objective(void *ctx, const llm_tensor *theta, double *value,
                                   llm_error *err)
{
    (void)err;
    *value = ((const scalar_fn *)ctx)->fn(theta->data[theta->offset]);
    return LLM_OK;
}

static double square(double t) { return t * t; }
static double identity(double t) { return t; }
static double absolute(double t) { return fabs(t); }
static double cubic(double t) { return t * t * t - 2.0 * t; }

/* a single element, a scalar of rank 0 */
static llm_status scalar_at(llm_tensor *t, double value, llm_error *err)
{
    return llm_tensor_from(t, 0, NULL, &value, 1, err);
}
static llm_status first_two_squared(void *ctx, const llm_tensor *theta, double *value,
                                    llm_error *err)
{
    const double *x = theta->data + theta->offset;
    (void)ctx;
    (void)err;
    *value = x[0] * x[0] + x[1] * x[1];
    return LLM_OK;
}

/* a square root that refuses a negative argument instead of returning NaN */
static llm_status checked_sqrt(void *ctx, const llm_tensor *theta, double *value,
                               llm_error *err)
{
    double x = theta->data[theta->offset];
    (void)ctx;
    if (x < 0.0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "objective.sqrt",
                        "sqrt of the negative number %g", x);
    *value = sqrt(x);
    return LLM_OK;
}
static double raw_sqrt(double t) { return sqrt(t); }
typedef struct nll_ctx {
    const size_t *targets;
    size_t ntargets;
} nll_ctx;

static llm_status nll_objective(void *ctx, const llm_tensor *theta, double *value,
                                llm_error *err)
{
    const nll_ctx *c = ctx;
    return llm_nll_mean(value, theta, c->targets, c->ntargets, err);
}

/* (softmax(z) - onehot(targets)) / divisor for logits z of shape [rows, cols] */
static llm_status nll_gradient(const llm_tensor *z, const size_t *targets, double divisor,
                               double *grad, llm_error *err)
{
    llm_tensor p;
    size_t r, j, cols = z->shape[1];
    llm_status st = llm_softmax(&p, z, 1, err);
    if (st != LLM_OK)
        return st;
    for (r = 0; r < z->shape[0]; r++)
        for (j = 0; j < cols; j++)
            grad[r * cols + j] = (p.data[p.offset + r * cols + j]
                                  - (j == targets[r] ? 1.0 : 0.0)) / divisor;
    llm_tensor_free(&p);
    return LLM_OK;
}

int main(int argc, char **argv)
{
    llm_trace tr;
    int ok = 1;
    const double tol = 1e-6;
    char buf[128];
    int status = llm_demo_start(argc, argv, "ch13-gradient-checking", &tr);
    if (status != 0)
        return status;
    printf("chapter=13 gradient-checking\n");
    snprintf(buf, sizeof buf, "%.0e", tol);
    printf("tolerance=%s h_opt=%s\n", buf, sci(buf + 64, 64, cbrt(DBL_EPSILON)));
    llm_trace_value(&tr, "tolerance", buf);
    llm_trace_value(&tr, "h_opt", buf + 64);
    {
        scalar_fn fn = {square};
        const double candidates[2] = {6.0, 5.5};
        const char *keys[2] = {"sq_error_good", "sq_error_bad"};
        llm_tensor t;
        llm_difference d;
        llm_error err;
        size_t i;
        char b1[64], b2[64];

        ok = ok && llm_demo_ok("ch13", scalar_at(&t, 3.0, &err), &err)
                && llm_demo_ok("ch13", llm_central_difference(scalar_objective, &fn, &t, 0, 0.1,
                                                              &d, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        printf("square theta=3 h=0.1 estimate=%s h_minus=%s h_plus=%s\n",
               llm_fmt(buf, sizeof buf, d.estimate, 12), sci(b1, sizeof b1, d.h_minus),
               sci(b2, sizeof b2, d.h_plus));
        llm_trace_value(&tr, "sq_estimate", llm_fmt(buf, sizeof buf, d.estimate, 6));
        for (i = 0; i < 2; i++) {
            double e = llm_gradient_error(candidates[i], d.estimate);
            printf("square candidate=%s error=%s verdict=%s\n",
                   llm_fmt(b1, sizeof b1, candidates[i], 1), llm_fmt(b2, sizeof b2, e, 6),
                   e <= tol ? "pass" : "fail");
            llm_trace_value(&tr, keys[i], b2);
            case_row(&tr, "θ²", 3.0, "0.1", d.estimate, candidates[i], tol);
        }
        ok = ok && d.estimate == 6.0;
        llm_tensor_free(&t);
    }
    {
        scalar_fn fn = {identity};
        const double h = 3e-16;
        llm_tensor t;
        llm_difference d;
        llm_error err;
        double nominal;
        char b1[64], b2[64];

        ok = ok && llm_demo_ok("ch13", scalar_at(&t, 1.0, &err), &err)
                && llm_demo_ok("ch13", llm_central_difference(scalar_objective, &fn, &t, 0, h, &d,
                                                              &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        nominal = ((1.0 + h) - (1.0 - h)) / (2.0 * h);
        printf("identity theta=1 h=3e-16 h_minus=%s h_plus=%s estimate=%s nominal=%s\n",
               sci(b1, sizeof b1, d.h_minus), sci(b2, sizeof b2, d.h_plus),
               llm_fmt(buf, sizeof buf, d.estimate, 12), llm_fmt(buf + 64, 64, nominal, 12));
        llm_trace_value(&tr, "id_h_minus", b1);
        llm_trace_value(&tr, "id_h_plus", b2);
        llm_trace_value(&tr, "id_estimate", llm_fmt(buf, sizeof buf, d.estimate, 6));
        llm_trace_value(&tr, "id_nominal", llm_fmt(buf, sizeof buf, nominal, 6));
        case_row(&tr, "θ", 1.0, "3e-16", d.estimate, 1.0, tol);
        ok = ok && d.estimate == 1.0 && d.h_minus != d.h_plus;
        llm_tensor_free(&t);
    }
    {
        scalar_fn fn = {absolute};
        llm_tensor t;
        llm_difference d;
        llm_error err;
        double slopes[2];
        char b1[64];

        ok = ok && llm_demo_ok("ch13", scalar_at(&t, 0.0, &err), &err)
                && llm_demo_ok("ch13", llm_central_difference(scalar_objective, &fn, &t, 0, 1e-3,
                                                              &d, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        slopes[0] = d.slope_minus;
        slopes[1] = d.slope_plus;
        printf("abs theta=0 h=0.001 estimate=%s slopes=%s\n",
               llm_fmt(buf, sizeof buf, d.estimate, 6), llm_fmt_list(b1, sizeof b1, slopes, 2, 1));
        llm_trace_value(&tr, "abs_estimate", buf);
        llm_trace_value(&tr, "abs_slopes", b1);
        case_row(&tr, "|θ|", 0.0, "1e-3", d.estimate, 0.0, tol);
        llm_tensor_free(&t);
    }
    {
        scalar_fn fn = {cubic};
        llm_tensor t;
        llm_difference d;
        llm_error err;
        double h = 1.0;
        int k;

        ok = ok && llm_demo_ok("ch13", scalar_at(&t, 1.5, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        for (k = 1; k <= 15 && ok; k++) {
            char c[8][32];
            const char *row[7] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6]};
            const char *plot[5] = {c[0], c[7], c[3], c[6], c[5]};
            double e, nominal, en;
            h /= 10.0;
            ok = llm_demo_ok("ch13", llm_central_difference(scalar_objective, &fn, &t, 0, h, &d,
                                                            &err), &err);
            if (!ok)
                break;
            e = llm_gradient_error(4.75, d.estimate);
            nominal = (cubic(1.5 + h) - cubic(1.5 - h)) / (2.0 * h);
            en = llm_gradient_error(4.75, nominal);
            snprintf(c[0], sizeof c[0], "%.0e", h);
            sci(c[1], sizeof c[1], d.h_minus);
            llm_fmt(c[2], sizeof c[2], d.estimate, 6);
            sci(c[3], sizeof c[3], e);
            snprintf(c[4], sizeof c[4], "%s", e <= tol ? "pass" : "fail");
            llm_fmt(c[5], sizeof c[5], nominal, 6);
            sci(c[6], sizeof c[6], en);
            printf("cubic h=%s estimate=%s error=%s verdict=%s nominal_error=%s\n", c[0],
                   llm_fmt(buf, sizeof buf, d.estimate, 12), c[3], c[4], c[6]);
            llm_trace_row(&tr, "sweep", 7, row);
            /* for the figure: h, error drawn (zero at 1e-17), zero flag, and the
               same for the nominal difference */
            snprintf(c[3], sizeof c[3], "%.3e", e > 0.0 ? e : 1e-17);
            snprintf(c[6], sizeof c[6], "%.3e", en > 0.0 ? en : 1e-17);
            snprintf(c[7], sizeof c[7], "%d", e == 0.0);
            snprintf(c[5], sizeof c[5], "%d", en == 0.0);
            llm_trace_row(&tr, "sweep_plot", 5, plot);
            if (k == 1 || k == 5 || k == 12 || k == 13 || k == 14 || k == 15) {
                char key[32];
                snprintf(key, sizeof key, "cubic_%d", k);
                llm_trace_value(&tr, key, llm_fmt(buf, sizeof buf, d.estimate, 6));
                snprintf(key, sizeof key, "cubic_%d_error", k);
                llm_trace_value(&tr, key, sci(buf, sizeof buf, e));
                snprintf(key, sizeof key, "nominal_%d_error", k);
                llm_trace_value(&tr, key, sci(buf, sizeof buf, en));
            }
            if (k == 5 || k == 13 || k == 15)
                case_row(&tr, "θ³ − 2θ", 1.5, c[0], d.estimate, 4.75, tol);
            if ((k == 5 && !(e <= tol)) || (k >= 13 && e <= tol))
                ok = 0;                     /* the course: 1e-5 passes, 1e-13, 1e-15 fail */
        }
        llm_tensor_free(&t);
    }
    {
        static const double logits[6] = {0, 1, -1, 2, 0, -2};
        const size_t shape[2] = {2, 3}, targets[2] = {0, 2};
        nll_ctx ctx = {targets, 2};
        llm_tensor z;
        llm_difference d;
        llm_error err;
        double loss = 0.0, grad[6], wrong[6], worst = 0.0, wrong_worst = 0.0;
        size_t coords[4], failures = 0, wrong_failures = 0, k;
        char c[6][40];

        ok = ok && llm_demo_ok("ch13", llm_tensor_from(&z, 2, shape, logits, 6, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        ok = llm_demo_ok("ch13", llm_nll_mean(&loss, &z, targets, 2, &err), &err)
          && llm_demo_ok("ch13", nll_gradient(&z, targets, 2.0, grad, &err), &err)
          && llm_demo_ok("ch13", nll_gradient(&z, targets, 1.0, wrong, &err), &err)
          && llm_demo_ok("ch13", llm_gradient_coords(z.size, 4, coords, &err), &err);
        printf("nll logits=%s targets=[0, 2] loss=%s\n",
               llm_fmt_list(buf, sizeof buf, logits, 6, 0), llm_fmt(c[0], sizeof c[0], loss, 12));
        llm_trace_value(&tr, "nll_loss", c[0]);
        printf("nll coords=%s\n", llm_fmt_sizes(buf, sizeof buf, coords, 4));
        llm_trace_value(&tr, "nll_coords", buf);
        for (k = 0; k < 4 && ok; k++) {
            const char *cells[7] = {c[0], c[1], c[2], c[3], c[4], c[5], NULL};
            size_t at[2] = {coords[k] / 3, coords[k] % 3};
            double e;
            ok = llm_demo_ok("ch13", llm_central_difference(nll_objective, &ctx, &z, coords[k],
                                                            1e-5, &d, &err), &err);
            if (!ok)
                break;
            e = llm_gradient_error(grad[coords[k]], d.estimate);
            snprintf(c[0], sizeof c[0], "%zu", coords[k]);
            llm_fmt_sizes(c[1], sizeof c[1], at, 2);
            llm_fmt(c[2], sizeof c[2], grad[coords[k]], 12);
            llm_fmt(c[3], sizeof c[3], d.estimate, 12);
            sci(c[4], sizeof c[4], e);
            snprintf(c[5], sizeof c[5], "%s", e <= tol ? "pass" : "fail");
            cells[6] = sci(buf, sizeof buf, llm_gradient_error(wrong[coords[k]], d.estimate));
            printf("nll coord=%s index=%s analytic=%s estimate=%s error=%s verdict=%s\n",
                   c[0], c[1], c[2], c[3], c[4], c[5]);
            llm_trace_row(&tr, "nll", 7, cells);
        }
        ok = ok && llm_demo_ok("ch13",
                               llm_gradient_check(nll_objective, &ctx, &z, grad, coords, 4, 1e-5,
                                                  tol, &worst, &failures, &err), &err)
                && llm_demo_ok("ch13",
                               llm_gradient_check(nll_objective, &ctx, &z, wrong, coords, 4, 1e-5,
                                                  tol, &wrong_worst, &wrong_failures, &err), &err);
        printf("nll check worst=%s failures=%zu of 4 verdict=%s\n", sci(c[0], sizeof c[0], worst),
               failures, failures == 0 ? "pass" : "fail");
        printf("nll check without the 1/rows of the mean: worst=%s failures=%zu of 4 verdict=%s\n",
               llm_fmt(c[1], sizeof c[1], wrong_worst, 6), wrong_failures,
               wrong_failures == 0 ? "pass" : "fail");
        printf("nll logits after the checks=%s\n",
               memcmp(z.data, logits, sizeof logits) == 0 ? "bit-exact" : "changed");
        llm_trace_value(&tr, "nll_worst", c[0]);
        snprintf(c[2], sizeof c[2], "%zu", failures);
        llm_trace_value(&tr, "nll_failures", c[2]);
        llm_trace_value(&tr, "nll_wrong_worst", c[1]);
        snprintf(c[2], sizeof c[2], "%zu", wrong_failures);
        llm_trace_value(&tr, "nll_wrong_failures", c[2]);
        ok = ok && failures == 0 && wrong_failures == 4 && memcmp(z.data, logits, sizeof logits) == 0;
        llm_tensor_free(&z);
    }
    {
        const uint64_t bits[3] = {UINT64_C(0x8000000000000000), UINT64_C(0x4000000000000000),
                                  UINT64_C(0x7ff8000000000123)};
        const size_t three[1] = {3};
        double values[3];
        llm_tensor t;
        llm_difference d;
        llm_error err;
        llm_status st;
        uint64_t after[3];
        int exact;

        memcpy(values, bits, sizeof values);
        ok = ok && llm_demo_ok("ch13", llm_tensor_from(&t, 1, three, values, 3, &err), &err)
                && llm_demo_ok("ch13", llm_central_difference(first_two_squared, NULL, &t, 0, 0.5,
                                                              &d, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        memcpy(after, t.data, sizeof after);
        exact = memcmp(after, bits, sizeof bits) == 0;
        printf("restore probe=-0 h=0.5 estimate=%s bits=%016llx %016llx %016llx buffer=%s\n",
               llm_fmt(buf, sizeof buf, d.estimate, 6), (unsigned long long)after[0],
               (unsigned long long)after[1], (unsigned long long)after[2],
               exact ? "bit-exact" : "changed");
        snprintf(buf, sizeof buf, "%016llx", (unsigned long long)after[0]);
        llm_trace_value(&tr, "restore_zero", buf);
        snprintf(buf, sizeof buf, "%016llx", (unsigned long long)after[2]);
        llm_trace_value(&tr, "restore_nan", buf);
        llm_trace_value(&tr, "restore_result", exact ? "bit-exact" : "changed");
        ok = ok && exact;

        st = llm_central_difference(checked_sqrt, NULL, &t, 0, 0.5, &d, &err);
        memcpy(after, t.data, sizeof after);
        exact = memcmp(after, bits, sizeof bits) == 0;
        printf("restore after the objective refused: %s (%s) buffer=%s\n", llm_status_name(st),
               err.stage, exact ? "bit-exact" : "changed");
        llm_trace_value(&tr, "restore_refused", exact ? "bit-exact" : "changed");
        llm_trace_value(&tr, "restore_refused_message", err.message);
        ok = ok && st == LLM_ERR_ARGUMENT && exact;
        llm_tensor_free(&t);
    }
    {
        static const double logits[6] = {0, 1, -1, 2, 0, -2};
        const size_t shape[2] = {2, 3}, bad_targets[2] = {0, 3}, coords[2] = {0, 6};
        const double grad[6] = {0, 0, 0, 0, 0, 0};
        nll_ctx ctx = {bad_targets, 2};
        scalar_fn sq = {square}, root = {raw_sqrt};
        llm_tensor z, view, one, zero;
        llm_difference d;
        llm_error err;
        double worst = -1.0;
        size_t failures = 99, picked[4];

        ok = ok && llm_demo_ok("ch13", llm_tensor_from(&z, 2, shape, logits, 6, &err), &err)
                && llm_demo_ok("ch13", scalar_at(&one, 1.0, &err), &err)
                && llm_demo_ok("ch13", scalar_at(&zero, 0.0, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        llm_demo_refusal_cells(&tr, "cs", "h = 0",
                               llm_central_difference(scalar_objective, &sq, &one, 0, 0.0, &d,
                                                      &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "h = NaN",
                               llm_central_difference(scalar_objective, &sq, &one, 0, NAN, &d,
                                                      &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "tolerance = 0",
                               llm_gradient_check(scalar_objective, &sq, &one, grad, coords, 1,
                                                  1e-5, 0.0, &worst, &failures, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "no coordinates",
                               llm_gradient_check(scalar_objective, &sq, &one, grad, coords, 0,
                                                  1e-5, 1e-6, &worst, &failures, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "4 of 3 coordinates",
                               llm_gradient_coords(3, 4, picked, &err), &err);
        ok = ok && llm_demo_ok("ch13", llm_tensor_transpose(&view, &z, 0, 1, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "a transposed view",
                               llm_central_difference(nll_objective, &ctx, &view, 0, 1e-5, &d,
                                                      &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "coordinate 6 of 6",
                               llm_gradient_check(nll_objective, &ctx, &z, grad, coords, 2, 1e-5,
                                                  1e-6, &worst, &failures, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "h = 1e-17 at 1",
                               llm_central_difference(scalar_objective, &sq, &one, 0, 1e-17, &d,
                                                      &err), &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "small_h_message", err.message);
        llm_demo_refusal_cells(&tr, "cs", "sqrt at 0",
                               llm_central_difference(scalar_objective, &root, &zero, 0, 1e-5, &d,
                                                      &err), &err);
        printf("  %s\n", err.message);
        llm_demo_refusal_cells(&tr, "cs", "target 3 of 3 classes",
                               llm_central_difference(nll_objective, &ctx, &z, 0, 1e-5, &d, &err),
                               &err);
        printf("outputs untouched=%s logits unchanged=%s\n",
               worst == -1.0 && failures == 99 ? "yes" : "no",
               memcmp(z.data, logits, sizeof logits) == 0 ? "yes" : "no");
        ok = ok && worst == -1.0 && failures == 99 && memcmp(z.data, logits, sizeof logits) == 0;
        llm_tensor_free(&z);
        llm_tensor_free(&one);
        llm_tensor_free(&zero);
    }
    return llm_demo_finish(&tr, ok);
}
