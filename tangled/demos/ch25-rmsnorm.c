/* ch25-rmsnorm -- y = g x / sqrt(mean(x^2) + eps) over the last axis. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/nn.h"

static const double fix_x[2] = {3, 4};          /* x [2] */
static const double fix_g[2] = {1.5, 0.5};      /* g [2], set by hand */
static const double fix_up[2] = {1, -2};        /* dL/dy */
static const double fix_eps = 1e-5;
static char *list6(char *buf, size_t size, const double *x, size_t n)
{
    return llm_fmt_list(buf, size, x, n, 6);
}

/* y = norm(x) for x of the given shape on a fresh tape (y: x's shape,
   contiguous). With up (y's shape) backward runs too: dx gets x's
   gradient, and the list's grads hold this run's alone. */
static llm_status run(const llm_rmsnorm *norm, llm_params *ps, size_t rank,
                      const size_t *shape, const double *x, const double *up,
                      double *y, double *dx, llm_error *err)
{
    llm_tape tape;
    llm_tensor xt, xg, ut;
    llm_var xv, yv;
    const llm_tensor *yt;
    size_t i;
    llm_status st;
    for (i = 0; i < ps->count; i++)
        memset(ps->items[i].grad.data, 0, ps->items[i].grad.size * sizeof(double));
    memset(&ut, 0, sizeof ut);
    memset(&xg, 0, sizeof xg);
    memset(&xt, 0, sizeof xt);
    st = llm_tensor_zeros(&xt, rank, shape, err);
    if (st == LLM_OK && xt.size > 0)
        memcpy(xt.data, x, xt.size * sizeof *x);
    if (st == LLM_OK)
        st = llm_tensor_zeros(&xg, rank, shape, err);
    if (st == LLM_OK && up != NULL)
        st = llm_tensor_from(&ut, rank, shape, up, xt.size, err);
    if (st == LLM_OK)
        st = llm_tape_init(&tape, 16, err);
    if (st != LLM_OK) {
        llm_tensor_free(&xt);
        llm_tensor_free(&xg);
        llm_tensor_free(&ut);
        return st;
    }
    st = llm_tape_leaf(&tape, &xt, &xg, &xv, err);
    if (st == LLM_OK)
        st = llm_rmsnorm_forward(norm, ps, &tape, xv, &yv, err);
    if (st == LLM_OK)
        st = llm_tape_value(&tape, yv, &yt, err);
    if (st == LLM_OK && yt->size > 0)
        memcpy(y, yt->data, yt->size * sizeof *y);         /* a new, contiguous tensor */
    if (st == LLM_OK && up != NULL)
        st = llm_tape_backward(&tape, yv, &ut, 0, err);
    if (st == LLM_OK && up != NULL && xg.size > 0)
        memcpy(dx, xg.data, xg.size * sizeof *dx);
    llm_tape_free(&tape);
    llm_tensor_free(&xt);
    llm_tensor_free(&xg);
    llm_tensor_free(&ut);
    return st;
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
        if (fabs(a[i] - b[i]) > worst)
            worst = fabs(a[i] - b[i]);
    return worst;
}
typedef struct probe {
    const llm_rmsnorm *norm;
    llm_params *ps;
    const double *x;      /* x [2]: the tensor under test, or a copy of fix_x */
} probe;

static llm_status probe_loss(void *ctx, const llm_tensor *theta, double *value,
                             llm_error *err)
{
    const probe *p = ctx;
    const size_t shape[1] = {2};
    double y[2];
    llm_status st;
    (void)theta;                          /* perturbed in place: x or the gain */
    st = run(p->norm, p->ps, 1, shape, p->x, NULL, y, NULL, err);
    if (st != LLM_OK)
        return st;
    *value = fix_up[0] * y[0] + fix_up[1] * y[1];
    return LLM_OK;
}

int main(int argc, char **argv)
{
    llm_trace tr;
    llm_params ps;
    llm_rmsnorm norm, flat, unit;
    llm_error err;
    double y[2], dx[2], dg[2];
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch25-rmsnorm", &tr);
    if (status != 0)
        return status;
    printf("chapter=25 rmsnorm\n");
    if (!llm_demo_ok("ch25", llm_params_init(&ps, &err), &err))
        return llm_demo_finish(&tr, 0);
    {
        size_t i;
        char c[5][96];
        const char *cells[5] = {c[0], c[1], c[2], c[3], c[4]};
        ok = ok && llm_demo_ok("ch25",
                               llm_rmsnorm_init(&norm, &ps, "norm", 2, fix_eps, &err), &err)
                && llm_demo_ok("ch25", llm_rmsnorm_init(&flat, &ps, "flat", 2, 0.0, &err), &err)
                && llm_demo_ok("ch25",
                               llm_rmsnorm_init(&unit, &ps, "unit", 2, fix_eps, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        for (i = 0; i < ps.count; i++) {
            const llm_param *p = &ps.items[i];
            snprintf(c[0], sizeof c[0], "`%s`", p->name);
            llm_fmt_sizes(c[1], sizeof c[1], p->value.shape, p->value.rank);
            llm_fmt_list(c[2], sizeof c[2], p->value.data, p->value.size, 1);
            snprintf(c[3], sizeof c[3], "%d", p->decay);
            snprintf(c[4], sizeof c[4], "%s", i == flat.gain ? "0" : "1e-05");
            printf("param %s shape=%s init=%s decay=%s eps=%s\n", p->name, c[1], c[2], c[3],
                   c[4]);
            llm_trace_row(&tr, "params", 5, cells);
            ok = ok && p->decay == 0 && p->value.data[0] == 1.0 && p->value.data[1] == 1.0;
        }
        llm_trace_value(&tr, "gain_init", c[2]);
        llm_trace_value(&tr, "gain_decay", c[3]);
    }
    {
        const size_t shape[1] = {2};
        double ms, rho, xhat[2], yr[2], dxr[2], dgr[2], n[2];
        char buf[128];
        ok = ok && llm_demo_ok("ch25",
                               run(&norm, &ps, 1, shape, fix_x, NULL, n, NULL, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        closed_form(fix_x, ps.items[norm.gain].value.data, fix_up, 2, fix_eps, &ms, &rho, xhat,
                    yr, dxr, dgr);
        printf("x=[3, 4] eps=1e-05 mean_square=%s", llm_fmt(buf, sizeof buf, ms, 6));
        llm_trace_value(&tr, "ms", llm_fmt(buf, sizeof buf, ms, 1));
        printf(" rho=%s\n", llm_fmt(buf, sizeof buf, rho, 6));
        llm_trace_value(&tr, "rho", buf);
        printf("gain [1, 1]: normalised=%s", list6(buf, sizeof buf, n, 2));
        llm_trace_value(&tr, "n", buf);
        llm_trace_row(&tr, "vecs", 3, (const char *const[]){"x", "3", "4"});
        {
            char a[32], b[32];
            llm_trace_row(&tr, "vecs", 3, (const char *const[]){"n", llm_fmt(a, sizeof a, n[0], 6),
                                                                 llm_fmt(b, sizeof b, n[1], 6)});
        }
        printf(" plain_loops=%s diff=%.1e\n", list6(buf, sizeof buf, xhat, 2), max_diff(n, xhat, 2));
        ok = ok && max_diff(n, xhat, 2) < 1e-15;
    }
    {
        const size_t shape[1] = {2};
        double ms, rho, xhat[2], yr[2], dxr[2], dgr[2], d;
        char c[3][96], a[32], b[32];
        const char *cells[3] = {c[0], c[1], c[2]};
        memcpy(ps.items[norm.gain].value.data, fix_g, sizeof fix_g);      /* set by hand */
        ok = ok && llm_demo_ok("ch25",
                               run(&norm, &ps, 1, shape, fix_x, fix_up, y, dx, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        memcpy(dg, ps.items[norm.gain].grad.data, sizeof dg);
        closed_form(fix_x, fix_g, fix_up, 2, fix_eps, &ms, &rho, xhat, yr, dxr, dgr);
        printf("gain [1.5, 0.5]: y=%s", list6(c[0], sizeof c[0], y, 2));
        llm_trace_value(&tr, "y", c[0]);
        llm_trace_row(&tr, "vecs", 3, (const char *const[]){"y", llm_fmt(a, sizeof a, y[0], 6),
                                                             llm_fmt(b, sizeof b, y[1], 6)});
        printf(" upstream=[1, -2] dx=%s", list6(c[0], sizeof c[0], dx, 2));
        llm_trace_value(&tr, "dx", c[0]);
        printf(" dg=%s\n", list6(c[0], sizeof c[0], dg, 2));
        llm_trace_value(&tr, "dg", c[0]);
        snprintf(c[0], sizeof c[0], "$y$");
        list6(c[1], sizeof c[1], y, 2);
        list6(c[2], sizeof c[2], yr, 2);
        llm_trace_row(&tr, "fixture", 3, cells);
        snprintf(c[0], sizeof c[0], "$\\bar x$");
        list6(c[1], sizeof c[1], dx, 2);
        list6(c[2], sizeof c[2], dxr, 2);
        llm_trace_row(&tr, "fixture", 3, cells);
        snprintf(c[0], sizeof c[0], "$\\bar g$");
        list6(c[1], sizeof c[1], dg, 2);
        list6(c[2], sizeof c[2], dgr, 2);
        llm_trace_row(&tr, "fixture", 3, cells);
        d = max_diff(y, yr, 2);
        if (max_diff(dx, dxr, 2) > d)
            d = max_diff(dx, dxr, 2);
        if (max_diff(dg, dgr, 2) > d)
            d = max_diff(dg, dgr, 2);
        printf("tape against the closed form: largest difference=%.1e\n", d);
        snprintf(c[0], sizeof c[0], "%.1e", d);
        llm_trace_value(&tr, "closed_diff", c[0]);
        ok = ok && d < 1e-14;
    }
    {
        static const size_t coords[2] = {0, 1}, shape[1] = {2};
        static const char *const names[2] = {"$x$", "$g$"};
        llm_tensor xt;
        llm_tensor *theta[2];
        const double *analytic[2];
        double worst = 0.0, worst_all = 0.0;
        size_t t, failures = 0, failed = 0;
        char c[5][96], buf[64];
        const char *cells[5] = {c[0], c[1], c[2], c[3], c[4]};
        probe pr;

        ok = ok && llm_demo_ok("ch25", llm_tensor_from(&xt, 1, shape, fix_x, 2, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        pr.norm = &norm;
        pr.ps = &ps;
        pr.x = xt.data;
        theta[0] = &xt;
        theta[1] = &ps.items[norm.gain].value;
        analytic[0] = dx;
        analytic[1] = dg;
        for (t = 0; t < 2 && ok; t++) {
            ok = llm_demo_ok("ch25",
                             llm_gradient_check(probe_loss, &pr, theta[t], analytic[t], coords, 2,
                                                1e-6, 1e-6, &worst, &failures, &err), &err);
            snprintf(c[0], sizeof c[0], "%s", names[t]);
            list6(c[1], sizeof c[1], analytic[t], 2);
            snprintf(c[2], sizeof c[2], "%d", 2);
            snprintf(c[3], sizeof c[3], "%.1e", worst);
            snprintf(c[4], sizeof c[4], "%s", failures == 0 ? "pass" : "fail");
            llm_trace_row(&tr, "grads", 5, cells);
            printf("gradcheck %c coordinates=2 worst=%s verdict=%s\n", "xg"[t], c[3], c[4]);
            failed += failures;
            if (worst > worst_all)
                worst_all = worst;
        }
        snprintf(buf, sizeof buf, "%.1e", worst_all);
        llm_trace_value(&tr, "grad_worst", buf);
        llm_trace_value(&tr, "grad_verdict", failed == 0 ? "pass" : "fail");
        ok = ok && failed == 0;
        llm_tensor_free(&xt);
    }
    {
        static const double zero[2] = {0, 0};
        const size_t shape[1] = {2};
        double zy[2], zdx[2];
        llm_tape tape;
        llm_tensor xt;
        llm_var xv, yv, y0;
        llm_status st;
        size_t nodes;
        int finite, untouched;
        char buf[128];

        ok = ok && llm_demo_ok("ch25",
                               run(&norm, &ps, 1, shape, zero, fix_up, zy, zdx, &err), &err)
                && llm_demo_ok("ch25", llm_tensor_from(&xt, 1, shape, zero, 2, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        finite = isfinite(zy[0]) && isfinite(zy[1]) && isfinite(zdx[0]) && isfinite(zdx[1]);
        printf("zero row eps=1e-05: y=%s", list6(buf, sizeof buf, zy, 2));
        llm_trace_value(&tr, "zero_y", buf);
        printf(" dx=%s finite=%s\n", list6(buf, sizeof buf, zdx, 2), finite ? "yes" : "no");
        llm_trace_value(&tr, "zero_dx", buf);
        ok = ok && finite && llm_demo_ok("ch25", llm_tape_init(&tape, 16, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        ok = llm_demo_ok("ch25", llm_tape_leaf(&tape, &xt, NULL, &xv, &err), &err);
        memset(&yv, 0x5a, sizeof yv);
        y0 = yv;
        nodes = tape.count;
        st = llm_rmsnorm_forward(&flat, &ps, &tape, xv, &yv, &err);
        llm_demo_refusal(&tr, "a zero row with eps = 0", st, &err);
        printf("  %s\n", err.message);
        untouched = tape.count == nodes && memcmp(&yv, &y0, sizeof yv) == 0;
        printf("  nodes recorded=%zu output untouched=%s\n", tape.count - nodes,
               untouched ? "yes" : "no");
        llm_trace_value(&tr, "zero_code", llm_status_name(st));
        llm_trace_value(&tr, "zero_msg", err.message);
        llm_trace_value(&tr, "zero_untouched", untouched ? "yes" : "no");
        ok = ok && st == LLM_ERR_NONFINITE && untouched;
        llm_tape_free(&tape);
        llm_tensor_free(&xt);
    }
    {
        const size_t shape[1] = {2};
        double x[2] = {3e-4, 4e-4}, ye[7][2], y0[7][2], rms;
        size_t k;
        char c[5][96], buf[64];
        const char *cells[5] = {c[0], c[1], c[2], c[3], c[4]};
        for (k = 0; k < 7 && ok; k++) {
            ok = llm_demo_ok("ch25", run(&unit, &ps, 1, shape, x, NULL, ye[k], NULL, &err), &err)
                 && llm_demo_ok("ch25",
                                run(&flat, &ps, 1, shape, x, NULL, y0[k], NULL, &err), &err);
            rms = sqrt((x[0] * x[0] + x[1] * x[1]) / 2.0);
            snprintf(c[0], sizeof c[0], "$10^{%d}$", (int)k - 4);
            llm_fmt_list(c[1], sizeof c[1], x, 2, k < 4 ? 4 - (int)k + 1 : 1);
            snprintf(c[2], sizeof c[2], "%.3g", rms);
            list6(c[3], sizeof c[3], ye[k], 2);
            list6(c[4], sizeof c[4], y0[k], 2);
            llm_trace_row(&tr, "scales", 5, cells);
            if (k == 0)
                llm_trace_value(&tr, "tiny_rms", c[2]);
            printf("x=%s rms=%s y(eps=1e-05)=%s y(eps=0)=%s\n", c[1], c[2], c[3], c[4]);
            x[0] *= 10.0;
            x[1] *= 10.0;
        }
        if (!ok)
            return llm_demo_finish(&tr, 0);
        printf("tiny row x10: change with eps=1e-05=%s",
               llm_fmt(buf, sizeof buf, fmax(fabs(ye[1][0] - ye[0][0]), fabs(ye[1][1] - ye[0][1])),
                       6));
        llm_trace_value(&tr, "change", buf);
        snprintf(buf, sizeof buf, "%.1e", max_diff(y0[1], y0[0], 2));
        printf(" with eps=0=%s\n", buf);
        llm_trace_value(&tr, "change0", buf);
        snprintf(buf, sizeof buf, "%.3g", sqrt(fix_eps));
        llm_trace_value(&tr, "sqrt_eps", buf);
        llm_trace_value(&tr, "tiny_y", list6(buf, sizeof buf, ye[0], 2));
        llm_trace_value(&tr, "tiny10_y", list6(buf, sizeof buf, ye[1], 2));
        ok = ok && max_diff(y0[1], y0[0], 2) < 1e-15;
    }
    {
        static const double xb[6] = {3, 4, 0, 0, -4, 3};
        static const double ub[6] = {1, -2, 1, -2, 1, -2};
        const size_t shape[3] = {3, 1, 2}, one[1] = {2};
        double yb[6], dxb[6], dgb[2], ys[2], dxs[2], dgsum[2] = {0.0, 0.0};
        size_t r;
        int same = 1;
        char c[4][96];
        const char *cells[4] = {c[0], c[1], c[2], c[3]};
        ok = ok && llm_demo_ok("ch25", run(&norm, &ps, 3, shape, xb, ub, yb, dxb, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        memcpy(dgb, ps.items[norm.gain].grad.data, sizeof dgb);
        for (r = 0; r < 3 && ok; r++) {
            ok = llm_demo_ok("ch25",
                             run(&norm, &ps, 1, one, xb + 2 * r, ub + 2 * r, ys, dxs, &err), &err);
            same = same && memcmp(ys, yb + 2 * r, sizeof ys) == 0
                   && memcmp(dxs, dxb + 2 * r, sizeof dxs) == 0;
            dgsum[0] += ps.items[norm.gain].grad.data[0];
            dgsum[1] += ps.items[norm.gain].grad.data[1];
            snprintf(c[0], sizeof c[0], "%zu", r);
            llm_fmt_list(c[1], sizeof c[1], xb + 2 * r, 2, 0);
            list6(c[2], sizeof c[2], yb + 2 * r, 2);
            list6(c[3], sizeof c[3], dxb + 2 * r, 2);
            llm_trace_row(&tr, "batch", 4, cells);
        }
        if (!ok)
            return llm_demo_finish(&tr, 0);
        printf("batch [3, 1, 2]: y=%s rows as alone=%s", list6(c[0], sizeof c[0], yb, 6),
               same ? "yes" : "no");
        llm_trace_value(&tr, "batch_same", same ? "yes" : "no");
        printf(" dg=%s sum of rows=%s\n", list6(c[0], sizeof c[0], dgb, 2),
               list6(c[1], sizeof c[1], dgsum, 2));
        llm_trace_value(&tr, "batch_dg", c[0]);
        ok = ok && same && max_diff(dgb, dgsum, 2) < 1e-15;
    }
    {
        static const double x3[3] = {1, 2, 3}, big[2] = {1e200, 1};
        const size_t three[1] = {3}, two[1] = {2};
        llm_params empty, wide;
        llm_rmsnorm bad, other, kept;
        llm_tape tape, old;
        llm_tensor t3, ts, tb;
        llm_var v3, vs, vb, v2, stale, yv, y0;
        size_t nodes0, count0;
        int untouched;

        ok = ok && llm_demo_ok("ch25", llm_params_init(&empty, &err), &err)
                && llm_demo_ok("ch25", llm_params_init(&wide, &err), &err)
                && llm_demo_ok("ch25", llm_params_add_const(&wide, "norm.gain", 1, three, 1.0, 0,
                                                            &err), &err)
                && llm_demo_ok("ch25", llm_tensor_from(&t3, 1, three, x3, 3, &err), &err)
                && llm_demo_ok("ch25", llm_tensor_zeros(&ts, 0, NULL, &err), &err)
                && llm_demo_ok("ch25", llm_tensor_from(&tb, 1, two, big, 2, &err), &err)
                && llm_demo_ok("ch25", llm_tape_init(&tape, 16, &err), &err)
                && llm_demo_ok("ch25", llm_tape_init(&old, 4, &err), &err)
                && llm_demo_ok("ch25", llm_tape_constant(&tape, &t3, &v3, &err), &err)
                && llm_demo_ok("ch25", llm_tape_constant(&tape, &ts, &vs, &err), &err)
                && llm_demo_ok("ch25", llm_tape_constant(&tape, &tb, &vb, &err), &err)
                && llm_demo_ok("ch25", llm_tape_constant(&tape, &tb, &v2, &err), &err)
                && llm_demo_ok("ch25", llm_tape_constant(&old, &tb, &stale, &err), &err)
                && llm_demo_ok("ch25", llm_tape_reset(&old, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        memset(&yv, 0x5a, sizeof yv);
        y0 = yv;
        nodes0 = tape.count;
        bad = norm;
        bad.eps = -1.0;
        llm_demo_refusal(&tr, "x [3] into a width-2 layer",
                         llm_rmsnorm_forward(&norm, &ps, &tape, v3, &yv, &err), &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "width_msg", err.message);
        llm_demo_refusal(&tr, "a scalar x",
                         llm_rmsnorm_forward(&norm, &ps, &tape, vs, &yv, &err), &err);
        llm_demo_refusal(&tr, "an empty list",
                         llm_rmsnorm_forward(&norm, &empty, &tape, v2, &yv, &err), &err);
        llm_demo_refusal(&tr, "a gain of width 3",
                         llm_rmsnorm_forward(&norm, &wide, &tape, v2, &yv, &err), &err);
        llm_demo_refusal(&tr, "no output",
                         llm_rmsnorm_forward(&norm, &ps, &tape, v2, NULL, &err), &err);
        llm_demo_refusal(&tr, "the row [1e200, 1]",
                         llm_rmsnorm_forward(&norm, &ps, &tape, vb, &yv, &err), &err);
        printf("  %s\n", err.message);
        llm_demo_refusal(&tr, "eps set to -1 by hand",
                         llm_rmsnorm_forward(&bad, &ps, &tape, v2, &yv, &err), &err);
        llm_demo_refusal(&tr, "x from a reset tape",
                         llm_rmsnorm_forward(&norm, &ps, &old, stale, &yv, &err), &err);
        count0 = ps.count;
        memset(&other, 0x5a, sizeof other);
        kept = other;
        llm_demo_refusal(&tr, "width 0",
                         llm_rmsnorm_init(&other, &ps, "head", 0, fix_eps, &err), &err);
        llm_demo_refusal(&tr, "eps = -1e-05",
                         llm_rmsnorm_init(&other, &ps, "head", 2, -1e-5, &err), &err);
        llm_demo_refusal(&tr, "eps = NaN",
                         llm_rmsnorm_init(&other, &ps, "head", 2, NAN, &err), &err);
        llm_demo_refusal(&tr, "prefix \"Head\"",
                         llm_rmsnorm_init(&other, &ps, "Head", 2, fix_eps, &err), &err);
        llm_demo_refusal(&tr, "prefix \"norm\" again",
                         llm_rmsnorm_init(&other, &ps, "norm", 2, fix_eps, &err), &err);
        printf("  %s\n", err.message);
        llm_demo_refusal(&tr, "a prefix of 59 characters",
                         llm_rmsnorm_init(&other, &ps,
                                          "a_prefix_that_is_far_too_long_to_leave_any_room_for_gain_xy",
                                          2, fix_eps, &err), &err);
        untouched = memcmp(&yv, &y0, sizeof yv) == 0 && tape.count == nodes0
                    && ps.count == count0 && memcmp(&other, &kept, sizeof other) == 0;
        printf("after the refusals: output, tape, list and layer untouched=%s\n",
               untouched ? "yes" : "no");
        llm_trace_value(&tr, "untouched", untouched ? "yes" : "no");
        ok = ok && untouched;
        llm_tape_free(&tape);
        llm_tape_free(&old);
        llm_tensor_free(&t3);
        llm_tensor_free(&ts);
        llm_tensor_free(&tb);
        llm_params_free(&empty);
        llm_params_free(&wide);
    }
    llm_params_free(&ps);
    return llm_demo_finish(&tr, ok);
}
