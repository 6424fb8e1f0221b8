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

static const double tol = 1e-6;

/* Texts: x in scientific notation, an exact zero as "0"; the verdict on a
   scaled error; whether a buffer kept its bits; the 64 bits of *x. */
static const char *sci(double x) { return x == 0.0 ? "0" : llm_text("%.3e", x); }
static const char *verdict(double e) { return e <= tol ? "pass" : "fail"; }
static const char *exactness(int same) { return same ? "bit-exact" : "changed"; }
static const char *bits_of(const double *x)
{
    uint64_t bits;
    memcpy(&bits, x, sizeof bits);
    return llm_text("%016llx", (unsigned long long)bits);
}

/* whether t's buffer still holds the size bytes it was built from */
static int kept(const llm_tensor *t, const void *bytes, size_t size)
{
    return memcmp(t->data, bytes, size) == 0;
}

/* One row of the table of cases: name, point, step, estimate, analytic,
   scaled error, verdict. */
static void case_row(llm_demo *d, const char *name, double point, const char *step,
                     double estimate, double analytic)
{
    double e = llm_gradient_error(analytic, estimate);
    llm_row(d, "cases", name, llm_num(point, 1), step, llm_num(estimate, 6),
            llm_num(analytic, 2), llm_num(e, 6), verdict(e), NULL);
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
static double cubic(double t) { return t * t * t - 2.0 * t; }

/* the difference of fn at theta with step h, on a scalar (rank 0) the
   section owns; a failure to build the scalar is an unexpected error */
static llm_status scalar_difference(llm_demo *d, double (*fn)(double), double theta,
                                    double h, llm_difference *out)
{
    scalar_fn ctx = {fn};
    llm_tensor *t = llm_own_tensor(d);
    if (!LLM_TRY(d, llm_tensor_from(t, 0, NULL, &theta, 1, &d->err)))
        return d->err.code;
    return llm_central_difference(scalar_objective, &ctx, t, 0, h, out, &d->err);
}
/* ctx: the targets, one for each row of theta */
static llm_status nll_objective(void *ctx, const llm_tensor *theta, double *value,
                                llm_error *err)
{
    return llm_nll_mean(value, theta, ctx, theta->shape[0], err);
}

/* (softmax(z) - onehot(targets)) / divisor for logits z of shape [rows, cols];
   0 after an error */
static int nll_gradient(llm_demo *d, const llm_tensor *z, const size_t *targets,
                        double divisor, double *grad)
{
    llm_tensor *p = llm_own_tensor(d);
    size_t k, cols = z->shape[1];
    if (!LLM_TRY(d, llm_softmax(p, z, 1, &d->err)))
        return 0;
    for (k = 0; k < z->size; k++)       /* row k / cols, class k % cols */
        grad[k] = (p->data[p->offset + k] - (k % cols == targets[k / cols])) / divisor;
    return 1;
}

static const double logits[6] = {0, 1, -1, 2, 0, -2};
static void scalar_cases(llm_demo *d)
{
    const double candidates[2] = {6.0, 5.5}, h = 3e-16;
    const char *keys[2] = {"sq_error_good", "sq_error_bad"};
    double nominal = ((1.0 + h) - (1.0 - h)) / (2.0 * h), e;
    llm_difference sq, id, ab;
    size_t i;
    if (!(LLM_TRY(d, scalar_difference(d, square, 3.0, 0.1, &sq))
          && LLM_TRY(d, scalar_difference(d, identity, 1.0, h, &id))
          && LLM_TRY(d, scalar_difference(d, fabs, 0.0, 1e-3, &ab))))
        return;
    printf("tolerance=%s", llm_put(d, "tolerance", llm_text("%.0e", tol)));
    printf(" h_opt=%s\n", llm_put(d, "h_opt", sci(cbrt(DBL_EPSILON))));
    printf("square theta=3 h=0.1 estimate=%s h_minus=%s h_plus=%s\n",
           llm_num(sq.estimate, 12), sci(sq.h_minus), sci(sq.h_plus));
    llm_put(d, "sq_estimate", llm_num(sq.estimate, 6));
    for (i = 0; i < 2; i++) {
        e = llm_gradient_error(candidates[i], sq.estimate);
        printf("square candidate=%s error=%s verdict=%s\n", llm_num(candidates[i], 1),
               llm_put(d, keys[i], llm_num(e, 6)), verdict(e));
        case_row(d, "θ²", 3.0, "0.1", sq.estimate, candidates[i]);
    }
    llm_demo_check(d, sq.estimate == 6.0, "the square's estimate at 3 is 6");
    printf("identity theta=1 h=3e-16 h_minus=%s",
           llm_put(d, "id_h_minus", sci(id.h_minus)));
    printf(" h_plus=%s", llm_put(d, "id_h_plus", sci(id.h_plus)));
    printf(" estimate=%s nominal=%s\n", llm_num(id.estimate, 12), llm_num(nominal, 12));
    llm_put(d, "id_estimate", llm_num(id.estimate, 6));
    llm_put(d, "id_nominal", llm_num(nominal, 6));
    case_row(d, "θ", 1.0, "3e-16", id.estimate, 1.0);
    llm_demo_check(d, id.estimate == 1.0, "the identity's estimate is 1");
    llm_demo_check(d, id.h_minus != id.h_plus, "1's probes moved unequal distances");
    printf("abs theta=0 h=0.001 estimate=%s",
           llm_put(d, "abs_estimate", llm_num(ab.estimate, 6)));
    printf(" slopes=%s\n",
           llm_put(d, "abs_slopes",
                   llm_nums((double[2]){ab.slope_minus, ab.slope_plus}, 2, 1)));
    case_row(d, "|θ|", 0.0, "1e-3", ab.estimate, 0.0);
}
static void cubic_sweep(llm_demo *d)
{
    double h, e, nominal, en;
    llm_difference f;
    const char *step;
    int k;
    for (k = 1, h = 0.1; k <= 15; k++, h /= 10.0) {
        if (!LLM_TRY(d, scalar_difference(d, cubic, 1.5, h, &f)))
            return;
        e = llm_gradient_error(4.75, f.estimate);
        nominal = (cubic(1.5 + h) - cubic(1.5 - h)) / (2.0 * h);
        en = llm_gradient_error(4.75, nominal);
        step = llm_text("%.0e", h);
        printf("cubic h=%s estimate=%s error=%s verdict=%s nominal_error=%s\n", step,
               llm_num(f.estimate, 12), sci(e), verdict(e), sci(en));
        llm_row(d, "sweep", step, sci(f.h_minus), llm_num(f.estimate, 6), sci(e),
                verdict(e), llm_num(nominal, 6), sci(en), NULL);
        /* the figure's: h, zero flag, error drawn (zero at 1e-17), same for nominal */
        llm_row(d, "sweep_plot", step, llm_text("%d", e == 0.0), sci(e > 0 ? e : 1e-17),
                sci(en > 0 ? en : 1e-17), llm_text("%d", en == 0.0), NULL);
        if (k == 1 || k == 5 || k >= 12) {
            llm_put(d, llm_text("cubic_%d", k), llm_num(f.estimate, 6));
            llm_put(d, llm_text("cubic_%d_error", k), sci(e));
            llm_put(d, llm_text("nominal_%d_error", k), sci(en));
        }
        if (k == 5 || k == 13 || k == 15)
            case_row(d, "θ³ − 2θ", 1.5, step, f.estimate, 4.75);
        if (k == 5 || k >= 13)
            llm_demo_check(d, (e <= tol) == (k == 5), "1e-5 passes, 1e-13 on fail");
    }
}
static void nll_check(llm_demo *d)
{
    size_t targets[2] = {0, 2};
    llm_tensor *z = llm_own_tensor(d);
    llm_difference f;
    double loss = 0.0, grad[6], wrong[6], worst = 0.0, wrong_worst = 0.0, e;
    size_t coords[4], failures = 0, wrong_failures = 0, k, c;
    const char *at, *analytic, *estimate;
    if (!(LLM_TRY(d, llm_tensor_from(z, 2, (size_t[2]){2, 3}, logits, 6, &d->err))
          && LLM_TRY(d, llm_nll_mean(&loss, z, targets, 2, &d->err))
          && nll_gradient(d, z, targets, 2.0, grad)
          && nll_gradient(d, z, targets, 1.0, wrong)
          && LLM_TRY(d, llm_gradient_coords(z->size, 4, coords, &d->err))))
        return;
    printf("nll logits=%s targets=[0, 2]", llm_nums(logits, 6, 0));
    printf(" loss=%s\n", llm_put(d, "nll_loss", llm_num(loss, 12)));
    printf("nll coords=%s\n", llm_put(d, "nll_coords", llm_sizes(coords, 4)));
    for (k = 0; k < 4; k++) {
        c = coords[k];
        if (!LLM_TRY(d, llm_central_difference(nll_objective, targets, z, c, 1e-5, &f,
                                               &d->err)))
            return;
        e = llm_gradient_error(grad[c], f.estimate);
        at = llm_sizes((size_t[2]){c / 3, c % 3}, 2);
        analytic = llm_num(grad[c], 12);
        estimate = llm_num(f.estimate, 12);
        printf("nll coord=%zu index=%s analytic=%s estimate=%s error=%s verdict=%s\n",
               c, at, analytic, estimate, sci(e), verdict(e));
        llm_row(d, "nll", llm_text("%zu", c), at, analytic, estimate, sci(e),
                verdict(e), sci(llm_gradient_error(wrong[c], f.estimate)), NULL);
    }
    if (!(LLM_TRY(d, llm_gradient_check(nll_objective, targets, z, grad, coords, 4,
                                        1e-5, tol, &worst, &failures, &d->err))
          && LLM_TRY(d, llm_gradient_check(nll_objective, targets, z, wrong, coords, 4,
                                           1e-5, tol, &wrong_worst, &wrong_failures,
                                           &d->err))))
        return;
    printf("nll check worst=%s", llm_put(d, "nll_worst", sci(worst)));
    printf(" failures=%s of 4 verdict=%s\n",
           llm_put(d, "nll_failures", llm_text("%zu", failures)),
           failures ? "fail" : "pass");
    printf("nll check without the 1/rows of the mean: worst=%s",
           llm_put(d, "nll_wrong_worst", llm_num(wrong_worst, 6)));
    printf(" failures=%s of 4 verdict=%s\n",
           llm_put(d, "nll_wrong_failures", llm_text("%zu", wrong_failures)),
           wrong_failures ? "fail" : "pass");
    printf("nll logits after the checks=%s\n",
           exactness(kept(z, logits, sizeof logits)));
    llm_demo_check(d, failures == 0, "the right gradient passes at all four");
    llm_demo_check(d, wrong_failures == 4, "without 1/rows all four fail");
    llm_demo_check(d, kept(z, logits, sizeof logits), "the checks kept the logits");
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

static const uint64_t bits[3] = {UINT64_C(0x8000000000000000),  /* -0, 2, a NaN */
                                  UINT64_C(0x4000000000000000),
                                  UINT64_C(0x7ff8000000000123)};

static void restored_bits(llm_demo *d)
{
    scalar_fn sq = {square};
    llm_tensor *t = llm_own_tensor(d);
    llm_difference f;
    llm_status st;
    if (!LLM_TRY(d, llm_tensor_zeros(t, 1, (size_t[1]){3}, &d->err)))
        return;
    memcpy(t->data, bits, sizeof bits);
    if (!LLM_TRY(d, llm_central_difference(scalar_objective, &sq, t, 0, 0.5, &f,
                                           &d->err)))
        return;
    printf("restore probe=-0 h=0.5 estimate=%s", llm_num(f.estimate, 6));
    printf(" bits=%s", llm_put(d, "restore_zero", bits_of(t->data)));
    printf(" %s", bits_of(t->data + 1));
    printf(" %s", llm_put(d, "restore_nan", bits_of(t->data + 2)));
    printf(" buffer=%s\n",
           llm_put(d, "restore_result", exactness(kept(t, bits, sizeof bits))));
    llm_demo_check(d, kept(t, bits, sizeof bits), "the probe of -0 kept every bit");

    st = llm_central_difference(checked_sqrt, NULL, t, 0, 0.5, &f, &d->err);
    printf("restore after the objective refused: %s (%s)", llm_status_name(st),
           d->err.stage);
    printf(" buffer=%s\n",
           llm_put(d, "restore_refused", exactness(kept(t, bits, sizeof bits))));
    llm_put(d, "restore_refused_message", d->err.message);
    llm_demo_check(d, st == LLM_ERR_ARGUMENT, "the objective's own refusal came back");
    llm_demo_check(d, kept(t, bits, sizeof bits), "a refused difference kept the bits");
}
static void refusals(llm_demo *d)
{
    const size_t coords[2] = {0, 6};
    const double grad[6] = {0, 0, 0, 0, 0, 0};
    size_t targets[2] = {0, 3}, failures = 99, picked[4];
    llm_tensor *z = llm_own_tensor(d), *view = llm_own_tensor(d);
    llm_difference f;
    double worst = -1.0;
    if (!(LLM_TRY(d, llm_tensor_from(z, 2, (size_t[2]){2, 3}, logits, 6, &d->err))
          && LLM_TRY(d, llm_tensor_transpose(view, z, 0, 1, &d->err))))
        return;
    llm_refuse_cells(d, "cs", "h = 0", scalar_difference(d, square, 1.0, 0.0, &f));
    llm_refuse_cells(d, "cs", "h = NaN", scalar_difference(d, square, 1.0, NAN, &f));
    llm_refuse_cells(d, "cs", "tolerance = 0",
                     llm_gradient_check(nll_objective, targets, z, grad, coords, 1,
                                        1e-5, 0.0, &worst, &failures, &d->err));
    llm_refuse_cells(d, "cs", "no coordinates",
                     llm_gradient_check(nll_objective, targets, z, grad, coords, 0,
                                        1e-5, tol, &worst, &failures, &d->err));
    llm_refuse_cells(d, "cs", "4 of 3 coordinates",
                     llm_gradient_coords(3, 4, picked, &d->err));
    llm_refuse_cells(d, "cs", "a transposed view",
                     llm_central_difference(nll_objective, targets, view, 0, 1e-5, &f,
                                            &d->err));
    llm_refuse_cells(d, "cs", "coordinate 6 of 6",
                     llm_gradient_check(nll_objective, targets, z, grad, coords, 2,
                                        1e-5, tol, &worst, &failures, &d->err));
    llm_refuse_cells(d, "cs", "h = 1e-17 at 1",
                     scalar_difference(d, square, 1.0, 1e-17, &f));
    printf("  %s\n", llm_put(d, "small_h_message", d->err.message));
    llm_refuse_cells(d, "cs", "sqrt at 0", scalar_difference(d, sqrt, 0.0, 1e-5, &f));
    printf("  %s\n", d->err.message);
    llm_refuse_cells(d, "cs", "target 3 of 3 classes",
                     llm_central_difference(nll_objective, targets, z, 0, 1e-5, &f,
                                            &d->err));
    printf("outputs untouched=%s", llm_yes(worst == -1.0 && failures == 99));
    printf(" logits unchanged=%s\n", llm_yes(kept(z, logits, sizeof logits)));
    llm_demo_check(d, worst == -1.0 && failures == 99, "refused checks wrote nothing");
    llm_demo_check(d, kept(z, logits, sizeof logits), "the refusals kept the logits");
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {scalar_cases, cubic_sweep, nll_check,
                                            restored_bits, refusals, NULL};
    return llm_demo_main(argc, argv, "ch13-gradient-checking", NULL, sections);
}
