/* ch25-rmsnorm -- y = g x / sqrt(mean(x^2) + eps) over the last axis. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/nn.h"
#include "llm/probe.h"

static const double fix_x[2] = {3, 4};          /* x [2] */
static const double fix_g[2] = {1.5, 0.5};      /* g [2], set by hand */
static const double fix_up[2] = {1, -2};        /* dL/dy */
static const double fix_eps = 1e-5;
static const size_t shape_x[1] = {2};
static llm_params *ps;                          /* the three layers' gains */
static llm_rmsnorm norm, flat, unit;
static double got[3][2];                        /* the fixture's tape: y, dx, dg */
static llm_status rmsnorm(const void *layer, llm_params *list, llm_tape *tape,
                          llm_var x, llm_var *y, llm_error *err)
{
    return llm_rmsnorm_forward(layer, list, tape, x, y, err);
}

/* y = layer(x) on a fresh tape; with dx, backward from up: dx and this run's grads. */
static int run(llm_demo *d, const llm_rmsnorm *layer, size_t rank, const size_t *shape,
               const double *x, const double *up, double *y, double *dx)
{
    llm_probe p = {rmsnorm, layer, ps, rank, shape, x, up};
    return LLM_TRY(d, llm_probe_run(&p, y, 6, NULL, NULL, dx, &d->err));
}
/* One row of width d: mean square, rho, x hat and y; with up, dx and dg. */
static void closed_form(const double *x, const double *g, const double *up, size_t d,
                        double eps, double *ms, double *rho, double *xhat, double *y,
                        double *dx, double *dg)
{
    double sum = 0.0, dot = 0.0;
    size_t i;
    for (i = 0; i < d; i++)
        sum += x[i] * x[i];
    *ms = sum / (double)d;
    *rho = sqrt(*ms + eps);
    for (i = 0; i < d; i++) {
        xhat[i] = x[i] / *rho;
        y[i] = g[i] * xhat[i];
        dot += g[i] * up[i] * x[i];                    /* sum_j u_j x_j */
    }
    for (i = 0; i < d; i++) {
        dx[i] = g[i] * up[i] / *rho - x[i] * dot / ((double)d * *rho * *rho * *rho);
        dg[i] = up[i] * xhat[i];
    }
}

/* The largest |a_i - b_i|. */
static double max_diff(const double *a, const double *b, size_t n)
{
    double worst = 0.0;
    size_t i;
    for (i = 0; i < n; i++)
        worst = fmax(worst, fabs(a[i] - b[i]));
    return worst;
}
static void build_layers(llm_demo *d)
{
    size_t i;
    if (!(LLM_TRY(d, llm_params_init(ps, &d->err))
          && LLM_TRY(d, llm_rmsnorm_init(&norm, ps, "norm", 2, fix_eps, &d->err))
          && LLM_TRY(d, llm_rmsnorm_init(&flat, ps, "flat", 2, 0.0, &d->err))
          && LLM_TRY(d, llm_rmsnorm_init(&unit, ps, "unit", 2, fix_eps, &d->err))))
        return;
    for (i = 0; i < ps->count; i++) {
        const llm_param *p = &ps->items[i];
        const char *shape = llm_sizes(p->value.shape, p->value.rank);
        const char *eps = i == flat.gain ? "0" : "1e-05";
        const char *init = llm_nums(p->value.data, p->value.size, 1);
        printf("param %s shape=%s init=%s decay=%d eps=%s\n", p->name, shape, init,
               p->decay, eps);
        llm_row(d, "params", llm_text("`%s`", p->name), shape, init,
                llm_text("%d", p->decay), eps, NULL);
        llm_demo_check(d, !p->decay && p->value.data[0] == 1 && p->value.data[1] == 1,
                       "a gain starts as ones, outside weight decay");
    }
    llm_put(d, "gain_init", llm_nums(ps->items[unit.gain].value.data, 2, 1));
    llm_put(d, "gain_decay", llm_text("%d", ps->items[unit.gain].decay));
}
static void fixture(llm_demo *d)
{
    static const char *const name[3] = {"$y$", "$\\bar x$", "$\\bar g$"};
    double cf[3][2], ms, rho, xhat[2], n[2], worst = 0.0;
    size_t i;
    closed_form(fix_x, fix_g, fix_up, 2, fix_eps, &ms, &rho, xhat, cf[0], cf[1], cf[2]);
    if (!run(d, &norm, 1, shape_x, fix_x, NULL, n, NULL))
        return;
    printf("x=[3, 4] eps=1e-05 mean_square=%s", llm_num(ms, 6));
    llm_put(d, "ms", llm_num(ms, 1));
    printf(" rho=%s\n", llm_put(d, "rho", llm_num(rho, 6)));
    printf("gain [1, 1]: normalised=%s", llm_put(d, "n", llm_nums(n, 2, 6)));
    llm_row(d, "vecs", "x", "3", "4", NULL);
    llm_row(d, "vecs", "n", llm_num(n[0], 6), llm_num(n[1], 6), NULL);
    printf(" plain_loops=%s diff=%.1e\n", llm_nums(xhat, 2, 6), max_diff(n, xhat, 2));
    llm_demo_check(d, max_diff(n, xhat, 2) < 1e-15, "the tape normalises as loops do");
    memcpy(ps->items[norm.gain].value.data, fix_g, sizeof fix_g);      /* set by hand */
    if (!run(d, &norm, 1, shape_x, fix_x, fix_up, got[0], got[1]))
        return;
    memcpy(got[2], ps->items[norm.gain].grad.data, sizeof got[2]);
    printf("gain [1.5, 0.5]: y=%s", llm_put(d, "y", llm_nums(got[0], 2, 6)));
    llm_row(d, "vecs", "y", llm_num(got[0][0], 6), llm_num(got[0][1], 6), NULL);
    printf(" upstream=[1, -2] dx=%s", llm_put(d, "dx", llm_nums(got[1], 2, 6)));
    printf(" dg=%s\n", llm_put(d, "dg", llm_nums(got[2], 2, 6)));
    for (i = 0; i < 3; i++) {          /* the tape's y, dx, dg and the closed form's */
        llm_row(d, "fixture", name[i], llm_nums(got[i], 2, 6), llm_nums(cf[i], 2, 6),
                NULL);
        worst = fmax(worst, max_diff(got[i], cf[i], 2));
    }
    printf("tape against the closed form: largest difference=%s\n",
           llm_put(d, "closed_diff", llm_text("%.1e", worst)));
    llm_demo_check(d, worst < 1e-14, "the tape agrees with the closed form");
}
static void gradients(llm_demo *d)
{
    static const size_t coords[2] = {0, 1};
    llm_tensor *xt = llm_own_tensor(d);
    llm_tensor *theta[2] = {xt, &ps->items[norm.gain].value};
    llm_probe p = {rmsnorm, &norm, ps, 1, shape_x, NULL, fix_up};
    double worst = 0.0, worst_all = 0.0;
    size_t t, failures = 0, failed = 0;
    if (!LLM_TRY(d, llm_tensor_from(xt, 1, shape_x, fix_x, 2, &d->err)))
        return;
    p.x = xt->data;                   /* the checker perturbs x in place */
    for (t = 0; t < 2; t++) {         /* x against dx, then the gain against dg */
        if (!LLM_TRY(d, llm_gradient_check(llm_probe_loss, &p, theta[t], got[t + 1],
                                           coords, 2, 1e-6, 1e-6, &worst, &failures,
                                           &d->err)))
            return;
        llm_row(d, "grads", llm_text("$%c$", "xg"[t]), llm_nums(got[t + 1], 2, 6), "2",
                llm_text("%.1e", worst), failures == 0 ? "pass" : "fail", NULL);
        printf("gradcheck %c coordinates=2 worst=%.1e verdict=%s\n", "xg"[t], worst,
               failures == 0 ? "pass" : "fail");
        failed += failures;
        worst_all = fmax(worst, worst_all);
    }
    llm_put(d, "grad_worst", llm_text("%.1e", worst_all));
    llm_put(d, "grad_verdict", failed == 0 ? "pass" : "fail");
    llm_demo_check(d, failed == 0, "every coordinate matches its finite difference");
}
static void zero_row(llm_demo *d)
{
    static const double zero[2] = {0, 0};
    llm_tape *tape = llm_own_tape(d);
    llm_tensor *xt = llm_own_tensor(d);
    double zy[2], zdx[2];
    llm_var xv, yv, y0;
    llm_status st;
    size_t nodes;
    int finite, untouched;
    if (!(run(d, &norm, 1, shape_x, zero, fix_up, zy, zdx)
          && LLM_TRY(d, llm_tensor_from(xt, 1, shape_x, zero, 2, &d->err))
          && LLM_TRY(d, llm_tape_init(tape, 16, &d->err))
          && LLM_TRY(d, llm_tape_leaf(tape, xt, NULL, &xv, &d->err))))
        return;
    finite = isfinite(zy[0]) && isfinite(zy[1]) && isfinite(zdx[0]) && isfinite(zdx[1]);
    printf("zero row eps=1e-05: y=%s", llm_put(d, "zero_y", llm_nums(zy, 2, 6)));
    printf(" dx=%s finite=%s\n", llm_put(d, "zero_dx", llm_nums(zdx, 2, 6)),
           llm_yes(finite));
    memset(&yv, 0x5a, sizeof yv);
    y0 = yv;
    nodes = tape->count;
    st = rmsnorm(&flat, ps, tape, xv, &yv, &d->err);
    llm_refuse(d, "a zero row with eps = 0", st);
    llm_put(d, "zero_code", llm_status_name(st));
    printf("  %s\n", llm_put(d, "zero_msg", d->err.message));
    untouched = tape->count == nodes && memcmp(&yv, &y0, sizeof yv) == 0;
    printf("  nodes recorded=%zu output untouched=%s\n", tape->count - nodes,
           llm_put(d, "zero_untouched", llm_yes(untouched)));
    llm_demo_check(d, finite && st == LLM_ERR_NONFINITE && untouched,
                   "a zero row: finite with eps, refused without it, nothing recorded");
}
static void scaled_copies(llm_demo *d)
{
    double x[2] = {3e-4, 4e-4}, ye[7][2], y0[7][2];
    size_t k;
    for (k = 0; k < 7; k++, x[0] *= 10.0, x[1] *= 10.0) {
        const char *xs = llm_nums(x, 2, k < 4 ? 4 - (int)k + 1 : 1);
        const char *rms = llm_text("%.3g", sqrt((x[0] * x[0] + x[1] * x[1]) / 2.0));
        if (!(run(d, &unit, 1, shape_x, x, NULL, ye[k], NULL)
              && run(d, &flat, 1, shape_x, x, NULL, y0[k], NULL)))
            return;
        llm_row(d, "scales", llm_text("$10^{%d}$", (int)k - 4), xs, rms,
                llm_nums(ye[k], 2, 6), llm_nums(y0[k], 2, 6), NULL);
        if (k == 0)
            llm_put(d, "tiny_rms", rms);
        printf("x=%s rms=%s y(eps=1e-05)=%s y(eps=0)=%s\n", xs, rms,
               llm_nums(ye[k], 2, 6), llm_nums(y0[k], 2, 6));
    }
    printf("tiny row x10: change with eps=1e-05=%s",
           llm_put(d, "change", llm_num(max_diff(ye[1], ye[0], 2), 6)));
    printf(" with eps=0=%s\n",
           llm_put(d, "change0", llm_text("%.1e", max_diff(y0[1], y0[0], 2))));
    llm_put(d, "sqrt_eps", llm_text("%.3g", sqrt(fix_eps)));
    llm_put(d, "tiny_y", llm_nums(ye[0], 2, 6));
    llm_put(d, "tiny10_y", llm_nums(ye[1], 2, 6));
    llm_demo_check(d, max_diff(y0[1], y0[0], 2) < 1e-15,
                   "without eps, scaling the tiny row changes nothing");
}
static void batch(llm_demo *d)
{
    static const double xb[6] = {3, 4, 0, 0, -4, 3}, ub[6] = {1, -2, 1, -2, 1, -2};
    static const size_t shape[3] = {3, 1, 2};
    const double *dg = ps->items[norm.gain].grad.data;
    double yb[6], dxb[6], dgb[2], yr[6], dxr[6], dgsum[2] = {0.0, 0.0};
    size_t r;
    int same;
    if (!run(d, &norm, 3, shape, xb, ub, yb, dxb))
        return;
    memcpy(dgb, dg, sizeof dgb);
    for (r = 0; r < 3; r++) {
        if (!run(d, &norm, 1, shape_x, xb + 2 * r, ub + 2 * r, yr + 2 * r, dxr + 2 * r))
            return;
        dgsum[0] += dg[0];
        dgsum[1] += dg[1];
        llm_row(d, "batch", llm_text("%zu", r), llm_nums(xb + 2 * r, 2, 0),
                llm_nums(yb + 2 * r, 2, 6), llm_nums(dxb + 2 * r, 2, 6), NULL);
    }
    same = !memcmp(yr, yb, sizeof yb) && !memcmp(dxr, dxb, sizeof dxb);
    printf("batch [3, 1, 2]: y=%s rows as alone=%s", llm_nums(yb, 6, 6),
           llm_put(d, "batch_same", llm_yes(same)));
    printf(" dg=%s sum of rows=%s\n", llm_put(d, "batch_dg", llm_nums(dgb, 2, 6)),
           llm_nums(dgsum, 2, 6));
    llm_demo_check(d, same && max_diff(dgb, dgsum, 2) < 1e-15,
                   "each row comes out as alone, and dg is the rows' sum");
}
static void refusals(llm_demo *d)
{
    static const double x3[3] = {1, 2, 3}, big[2] = {1e200, 1};
    static const size_t three[1] = {3};
    llm_params *empty = llm_own_params(d), *wide = llm_own_params(d);
    llm_rmsnorm bad = norm, other, kept;
    llm_tape *tape = llm_own_tape(d), *old = llm_own_tape(d);
    llm_tensor *t3 = llm_own_tensor(d), *ts = llm_own_tensor(d);
    llm_tensor *t2 = llm_own_tensor(d);
    llm_var v3, vs, v2, stale, yv, y0;
    size_t nodes0, count0;
    int untouched;
    llm_error *err = &d->err;
    if (!(LLM_TRY(d, llm_params_init(empty, err))
          && LLM_TRY(d, llm_params_init(wide, err))
          && LLM_TRY(d, llm_params_add_const(wide, "norm.gain", 1, three, 1, 0, err))
          && LLM_TRY(d, llm_tensor_from(t3, 1, three, x3, 3, err))
          && LLM_TRY(d, llm_tensor_zeros(ts, 0, NULL, err))
          && LLM_TRY(d, llm_tensor_from(t2, 1, shape_x, big, 2, err))
          && LLM_TRY(d, llm_tape_init(tape, 16, err))
          && LLM_TRY(d, llm_tape_init(old, 4, err))
          && LLM_TRY(d, llm_tape_constant(tape, t3, &v3, err))
          && LLM_TRY(d, llm_tape_constant(tape, ts, &vs, err))
          && LLM_TRY(d, llm_tape_constant(tape, t2, &v2, err))
          && LLM_TRY(d, llm_tape_constant(old, t2, &stale, err))
          && LLM_TRY(d, llm_tape_reset(old, err))))
        return;
    memset(&yv, 0x5a, sizeof yv);
    y0 = yv;
    nodes0 = tape->count;
    bad.eps = -1.0;
    llm_refuse(d, "x [3] into a width-2 layer", rmsnorm(&norm, ps, tape, v3, &yv, err));
    printf("  %s\n", llm_put(d, "width_msg", d->err.message));
    llm_refuse(d, "a scalar x", rmsnorm(&norm, ps, tape, vs, &yv, err));
    llm_refuse(d, "an empty list", rmsnorm(&norm, empty, tape, v2, &yv, err));
    llm_refuse(d, "a gain of width 3", rmsnorm(&norm, wide, tape, v2, &yv, err));
    llm_refuse(d, "no output", rmsnorm(&norm, ps, tape, v2, NULL, err));
    llm_refuse(d, "the row [1e200, 1]", rmsnorm(&norm, ps, tape, v2, &yv, err));
    printf("  %s\n", d->err.message);
    llm_refuse(d, "eps set to -1 by hand", rmsnorm(&bad, ps, tape, v2, &yv, err));
    llm_refuse(d, "x from a reset tape", rmsnorm(&norm, ps, old, stale, &yv, err));
    count0 = ps->count;
    memset(&other, 0x5a, sizeof other);
    kept = other;
    llm_refuse(d, "width 0", llm_rmsnorm_init(&other, ps, "head", 0, fix_eps, err));
    llm_refuse(d, "eps = -1e-05", llm_rmsnorm_init(&other, ps, "head", 2, -1e-5, err));
    llm_refuse(d, "eps = NaN", llm_rmsnorm_init(&other, ps, "head", 2, NAN, err));
    llm_refuse(d, "prefix \"Head\"",
               llm_rmsnorm_init(&other, ps, "Head", 2, fix_eps, err));
    llm_refuse(d, "prefix \"norm\" again",
               llm_rmsnorm_init(&other, ps, "norm", 2, fix_eps, err));
    printf("  %s\n", d->err.message);
    llm_refuse(d, "a prefix of 59 characters",
               llm_rmsnorm_init(&other, ps, "a_prefix_that_is_far_too_long_to_leave_"
                                "any_room_for_gain_xy", 2, fix_eps, err));
    untouched = memcmp(&yv, &y0, sizeof yv) == 0 && tape->count == nodes0
                && ps->count == count0 && memcmp(&other, &kept, sizeof other) == 0;
    printf("after the refusals: output, tape, list and layer untouched=%s\n",
           llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "refusals change no output, tape, list or layer");
}

static void setup(llm_demo *d)
{
    ps = llm_own_params(d);
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {build_layers, fixture, gradients, zero_row,
                                            scaled_copies, batch, refusals, NULL};
    return llm_demo_main(argc, argv, "ch25-rmsnorm", setup, sections);
}
