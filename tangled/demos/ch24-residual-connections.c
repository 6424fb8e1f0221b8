/* ch24-residual-connections -- y = x + F(x), and the gradient through depth. */
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/nn.h"

static const double fix_x[2] = {2, -1};                 /* x [2] */
static const double fix_w[4] = {0.5, -1, 2, 0.25};      /* W [2, 2], [in, out] */
static const double fix_g[2] = {1, 1};                  /* g = dL/dy [2] */
static const double deep_diag = -0.25;                  /* W_k = -0.25 I */
static const double deep_seed[2] = {2, -1};             /* the stack's seed at the top */
static const size_t shape_x[1] = {2};
#define DEPTH 4
/* "[a, b]" for a vector of two. */
static char *vec(char *buf, size_t size, const double *x)
{
    char a[48], b[48];
    snprintf(buf, size, "[%s, %s]", llm_fmt_trim(a, sizeof a, x[0], 12), llm_fmt_trim(b, sizeof b, x[1], 12));
    return buf;
}

/* "[[a, b], [c, d]]" for a row-major 2 x 2 matrix. */
static char *mat(char *buf, size_t size, const double *x)
{
    char r0[104], r1[104];
    snprintf(buf, size, "[%s, %s]", vec(r0, sizeof r0, x), vec(r1, sizeof r1, x + 2));
    return buf;
}

static void zero_grads(llm_params *ps)
{
    size_t i;
    for (i = 0; i < ps->count; i++)
        memset(ps->items[i].grad.data, 0, ps->items[i].grad.size * sizeof(double));
}

static int same(const double *a, const double *b, size_t n)
{
    return memcmp(a, b, n * sizeof *a) == 0;
}
/* f = F(x), y = x + F(x) (or F(x) when !residual) for x [2] on a fresh
   tape; with g, backward from y seeded with g, and dx = x's gradient. */
static llm_status block(const llm_linear *lin, llm_params *ps, int residual,
                        const double *x, const double *g, double *f, double *y,
                        double *dx, llm_error *err)
{
    llm_tape tape;
    llm_tensor xt, xg, gt;
    llm_var xv, fv, yv;
    const llm_tensor *t;
    llm_status st;
    memset(&gt, 0, sizeof gt);
    memset(&fv, 0, sizeof fv);
    zero_grads(ps);
    st = llm_tensor_from(&xt, 1, shape_x, x, 2, err);
    if (st != LLM_OK)
        return st;
    st = llm_tensor_zeros(&xg, 1, shape_x, err);
    if (st != LLM_OK) {
        llm_tensor_free(&xt);
        return st;
    }
    st = llm_tape_init(&tape, 16, err);
    if (st == LLM_OK) {
        st = llm_tape_leaf(&tape, &xt, &xg, &xv, err);
        if (st == LLM_OK)
            st = llm_linear_forward(lin, ps, &tape, xv, &fv, err);
        yv = fv;
        if (st == LLM_OK && residual)
            st = llm_residual_add(&tape, xv, fv, &yv, err);
        if (st == LLM_OK && (st = llm_tape_value(&tape, fv, &t, err)) == LLM_OK)
            memcpy(f, t->data + t->offset, 2 * sizeof *f);     /* a fresh result: contiguous */
        if (st == LLM_OK && (st = llm_tape_value(&tape, yv, &t, err)) == LLM_OK)
            memcpy(y, t->data + t->offset, 2 * sizeof *y);
        if (st == LLM_OK && g != NULL)
            st = llm_tensor_from(&gt, 1, shape_x, g, 2, err);
        if (st == LLM_OK && g != NULL)
            st = llm_tape_backward(&tape, yv, &gt, 0, err);
        if (st == LLM_OK && g != NULL)
            memcpy(dx, xg.data, 2 * sizeof *dx);
        llm_tape_free(&tape);
    }
    llm_tensor_free(&gt);
    llm_tensor_free(&xg);
    llm_tensor_free(&xt);
    return st;
}
/* h_0 = x, h_{k+1} = F_k(h_k) or h_k + F_k(h_k); top = h_DEPTH; grads[k] =
   the gradient at h_k after one backward pass from the top seeded with seed. */
static llm_status stack(const llm_linear *layers, llm_params *ps, int residual,
                        const double *seed, double top[2], double grads[DEPTH + 1][2],
                        llm_error *err)
{
    llm_tape tape;
    llm_tensor xt, xg, gt;
    llm_var h[DEPTH + 1], f;
    const llm_tensor *t;
    const double *adj;
    size_t k;
    llm_status st;
    memset(&gt, 0, sizeof gt);
    zero_grads(ps);
    st = llm_tensor_from(&xt, 1, shape_x, fix_x, 2, err);
    if (st != LLM_OK)
        return st;
    st = llm_tensor_zeros(&xg, 1, shape_x, err);
    if (st == LLM_OK)
        st = llm_tape_init(&tape, 32, err);
    if (st != LLM_OK) {
        llm_tensor_free(&xg);
        llm_tensor_free(&xt);
        return st;
    }
    st = llm_tape_leaf(&tape, &xt, &xg, &h[0], err);
    for (k = 0; k < DEPTH && st == LLM_OK; k++) {
        st = llm_linear_forward(&layers[k], ps, &tape, h[k], &f, err);
        h[k + 1] = f;
        if (st == LLM_OK && residual)
            st = llm_residual_add(&tape, h[k], f, &h[k + 1], err);
    }
    if (st == LLM_OK && (st = llm_tape_value(&tape, h[DEPTH], &t, err)) == LLM_OK)
        memcpy(top, t->data + t->offset, 2 * sizeof *top);
    if (st == LLM_OK)
        st = llm_tensor_from(&gt, 1, shape_x, seed, 2, err);
    if (st == LLM_OK)
        st = llm_tape_backward(&tape, h[DEPTH], &gt, 1, err);
    for (k = 0; k <= DEPTH && st == LLM_OK; k++)
        if ((st = llm_tape_adjoint(&tape, h[k], &adj, err)) == LLM_OK)
            memcpy(grads[k], adj, 2 * sizeof *adj);   /* every h_k is reached */
    llm_tape_free(&tape);
    llm_tensor_free(&gt);
    llm_tensor_free(&xg);
    llm_tensor_free(&xt);
    return st;
}
typedef struct probe {
    const llm_linear *lin;
    llm_params *ps;
    const double *x;      /* x [2]: fix_x, or the tensor under test */
} probe;

/* L = g_0 y_0 + g_1 y_1 for the residual block. */
static llm_status probe_loss(void *ctx, const llm_tensor *theta, double *value,
                             llm_error *err)
{
    const probe *p = ctx;
    double f[2], y[2];
    llm_status st;
    (void)theta;          /* perturbed in place: the weight, or p->x itself */
    st = block(p->lin, p->ps, 1, p->x, NULL, f, y, NULL, err);
    if (st != LLM_OK)
        return st;
    *value = fix_g[0] * y[0] + fix_g[1] * y[1];
    return LLM_OK;
}

int main(int argc, char **argv)
{
    llm_trace tr;
    llm_params ps;
    llm_linear branch;
    llm_rng rng;
    llm_error err;
    double dx_ref[2], dw_ref[4];
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch24-residual-connections", &tr);
    if (status != 0)
        return status;
    printf("chapter=24 residual-connections\n");
    llm_rng_seed(&rng, 24);
    if (!llm_demo_ok("ch24", llm_params_init(&ps, &err), &err)
        || !llm_demo_ok("ch24", llm_linear_init(&branch, &ps, "branch", 2, 2, 0, &rng, &err),
                        &err)) {
        llm_params_free(&ps);
        return llm_demo_finish(&tr, 0);
    }
    {
        double f[2], y[2], fb[2], yb[2], db[2], skip[2];
        char c[256];
        memcpy(ps.items[branch.weight].value.data, fix_w, sizeof fix_w);   /* set by hand */
        ok = ok && llm_demo_ok("ch24",
                               block(&branch, &ps, 1, fix_x, fix_g, f, y, dx_ref, &err), &err);
        if (ok)
            memcpy(dw_ref, ps.items[branch.weight].grad.data, sizeof dw_ref);
        ok = ok && llm_demo_ok("ch24",
                               block(&branch, &ps, 0, fix_x, fix_g, fb, yb, db, &err), &err);
        if (!ok) {
            llm_params_free(&ps);
            return llm_demo_finish(&tr, 0);
        }
        skip[0] = dx_ref[0] - db[0];
        skip[1] = dx_ref[1] - db[1];
        printf("x=%s", vec(c, sizeof c, fix_x));
        printf(" W=%s\n", mat(c, sizeof c, fix_w));
        printf("F = x W = %s\n", vec(c, sizeof c, f));
        llm_trace_value(&tr, "f", c);
        printf("y = x + F = %s\n", vec(c, sizeof c, y));
        llm_trace_value(&tr, "y", c);
        printf("upstream g=%s\n", vec(c, sizeof c, fix_g));
        printf("dx=%s", vec(c, sizeof c, dx_ref));
        llm_trace_value(&tr, "dx", c);
        printf(" skip=%s", vec(c, sizeof c, skip));
        llm_trace_value(&tr, "skip", c);
        printf(" branch=%s\n", vec(c, sizeof c, db));
        llm_trace_value(&tr, "branch", c);
        printf("dW=%s\n", mat(c, sizeof c, dw_ref));
        llm_trace_value(&tr, "dw", c);
        ok = ok && f[0] == -1 && f[1] == -2.25 && y[0] == 1 && y[1] == -3.25
                && dx_ref[0] == 0.5 && dx_ref[1] == 3.25 && same(skip, fix_g, 2);
    }
    {
        static const size_t coords[4] = {0, 1, 2, 3};
        static const char *const names[2] = {"$W$", "$x$"};
        llm_tensor xt;
        llm_tensor *theta[2];
        const double *analytic[2];
        double worst = 0.0, worst_all = 0.0;
        size_t t, failures = 0, failed = 0;
        char c[5][256];
        const char *cells[5] = {c[0], c[1], c[2], c[3], c[4]};
        probe pr;

        ok = ok && llm_demo_ok("ch24", llm_tensor_from(&xt, 1, shape_x, fix_x, 2, &err), &err);
        if (!ok) {
            llm_params_free(&ps);
            return llm_demo_finish(&tr, 0);
        }
        pr.lin = &branch;
        pr.ps = &ps;
        pr.x = xt.data;
        theta[0] = &ps.items[branch.weight].value;
        theta[1] = &xt;
        analytic[0] = dw_ref;
        analytic[1] = dx_ref;
        for (t = 0; t < 2 && ok; t++) {
            ok = llm_demo_ok("ch24", llm_gradient_check(probe_loss, &pr, theta[t], analytic[t],
                                                        coords, theta[t]->size, 1e-6, 2e-6, &worst,
                                                        &failures, &err), &err);
            snprintf(c[0], sizeof c[0], "%s", names[t]);
            if (t == 0)
                mat(c[1], sizeof c[1], analytic[t]);
            else
                vec(c[1], sizeof c[1], analytic[t]);
            snprintf(c[2], sizeof c[2], "%zu", theta[t]->size);
            snprintf(c[3], sizeof c[3], "%.1e", worst);
            snprintf(c[4], sizeof c[4], "%s", failures == 0 ? "pass" : "fail");
            llm_trace_row(&tr, "grads", 5, cells);
            printf("gradcheck %c coordinates=%zu worst=%s tolerance=2e-6 verdict=%s\n",
                   "Wx"[t], theta[t]->size, c[3], c[4]);
            failed += failures;
            if (worst > worst_all)
                worst_all = worst;
        }
        snprintf(c[0], sizeof c[0], "%.1e", worst_all);
        llm_trace_value(&tr, "grad_worst", c[0]);
        llm_trace_value(&tr, "grad_verdict", failed == 0 ? "pass" : "fail");
        ok = ok && failed == 0;
        llm_tensor_free(&xt);
    }
    {
        double f[2], y[2], dx[2];
        char c[256];
        int passes;
        memset(ps.items[branch.weight].value.data, 0, 4 * sizeof(double));
        ok = ok && llm_demo_ok("ch24", block(&branch, &ps, 1, fix_x, fix_g, f, y, dx, &err), &err);
        if (!ok) {
            llm_params_free(&ps);
            return llm_demo_finish(&tr, 0);
        }
        passes = same(y, fix_x, 2) && same(dx, fix_g, 2);
        printf("zero branch: F=%s", vec(c, sizeof c, f));
        printf(" y=%s", vec(c, sizeof c, y));
        llm_trace_value(&tr, "zero_y", c);
        printf(" dx=%s", vec(c, sizeof c, dx));
        llm_trace_value(&tr, "zero_dx", c);
        printf(" y_is_x_and_dx_is_g=%s\n", passes ? "yes" : "no");
        llm_trace_value(&tr, "zero_passes", passes ? "yes" : "no");
        printf("zero branch: dW=%s\n", mat(c, sizeof c, ps.items[branch.weight].grad.data));
        llm_trace_value(&tr, "zero_dw", c);
        ok = ok && passes && same(ps.items[branch.weight].grad.data, dw_ref, 4);
    }
    {
        static const double want_plain[2] = {0.0078125, -0.00390625};
        static const double want_resid[2] = {0.6328125, -0.31640625};
        llm_params deep;
        llm_linear layers[DEPTH];
        llm_rng drng;
        double top[2][2], grads[2][DEPTH + 1][2];
        char name[16], c[5][160];
        const char *cells[4] = {c[0], c[1], c[2], c[3]};
        size_t k, r;

        llm_rng_seed(&drng, 24);
        ok = ok && llm_demo_ok("ch24", llm_params_init(&deep, &err), &err);
        for (k = 0; k < DEPTH && ok; k++) {
            snprintf(name, sizeof name, "layer%zu", k);
            ok = llm_demo_ok("ch24",
                             llm_linear_init(&layers[k], &deep, name, 2, 2, 0, &drng, &err), &err);
            if (ok) {
                double *w = deep.items[layers[k].weight].value.data;
                w[0] = w[3] = deep_diag;                    /* -0.25 I, set by hand */
                w[1] = w[2] = 0.0;
            }
        }
        for (r = 0; r < 2 && ok; r++)
            ok = llm_demo_ok("ch24", stack(layers, &deep, (int)r, deep_seed, top[r], grads[r],
                                           &err), &err);
        if (ok) {
            printf("stack depth=%d branch=%s I seed=%s\n", DEPTH, llm_fmt_trim(c[0], sizeof c[0], deep_diag, 12),
                   vec(c[1], sizeof c[1], deep_seed));
            printf("plain: h%d=%s", DEPTH, vec(c[0], sizeof c[0], top[0]));
            printf(" dx=%s\n", vec(c[0], sizeof c[0], grads[0][0]));
            llm_trace_value(&tr, "plain_top", vec(c[0], sizeof c[0], top[0]));
            llm_trace_value(&tr, "plain_dx", vec(c[0], sizeof c[0], grads[0][0]));
            printf("residual: h%d=%s", DEPTH, vec(c[0], sizeof c[0], top[1]));
            printf(" dx=%s\n", vec(c[0], sizeof c[0], grads[1][0]));
            llm_trace_value(&tr, "resid_top", vec(c[0], sizeof c[0], top[1]));
            llm_trace_value(&tr, "resid_dx", vec(c[0], sizeof c[0], grads[1][0]));
            for (k = DEPTH + 1; k-- > 0;) {
                snprintf(c[0], sizeof c[0], "$h_%zu$", k);
                snprintf(c[1], sizeof c[1], "%zu", (size_t)DEPTH - k);
                vec(c[2], sizeof c[2], grads[0][k]);
                vec(c[3], sizeof c[3], grads[1][k]);
                llm_trace_row(&tr, "depth", 4, cells);
                printf("gradient at h%zu crossed=%s plain=%s residual=%s\n", k, c[1], c[2], c[3]);
                llm_fmt_trim(c[2], sizeof c[2], grads[0][k][0] < 0 ? -grads[0][k][0] : grads[0][k][0], 12);
                llm_fmt_trim(c[3], sizeof c[3], grads[1][k][0] < 0 ? -grads[1][k][0] : grads[1][k][0], 12);
                cells[0] = c[1];
                cells[1] = c[2];
                cells[2] = c[3];
                llm_trace_row(&tr, "mag", 3, cells);
                cells[0] = c[0];
                cells[1] = c[1];
                cells[2] = c[2];
            }
            ok = same(grads[0][0], want_plain, 2) && same(grads[1][0], want_resid, 2)
                 && same(top[0], want_plain, 2) && same(top[1], want_resid, 2);
        }
        llm_params_free(&deep);
    }
    {
        static const double minus_i[4] = {-1, 0, 0, -1};
        double f[2], y[2], dx[2];
        char c[256];
        memcpy(ps.items[branch.weight].value.data, minus_i, sizeof minus_i);
        ok = ok && llm_demo_ok("ch24", block(&branch, &ps, 1, fix_x, fix_g, f, y, dx, &err), &err);
        if (!ok) {
            llm_params_free(&ps);
            return llm_demo_finish(&tr, 0);
        }
        printf("cancelling branch W=%s:", mat(c, sizeof c, minus_i));
        printf(" y=%s", vec(c, sizeof c, y));
        llm_trace_value(&tr, "cancel_y", c);
        printf(" dx=%s\n", vec(c, sizeof c, dx));
        llm_trace_value(&tr, "cancel_dx", c);
        ok = ok && y[0] == 0 && y[1] == 0 && dx[0] == 0 && dx[1] == 0;
    }
    {
        static const double four[4] = {1, 2, 3, 4}, three[3] = {1, 2, 3};
        const size_t s12[2] = {1, 2}, s22[2] = {2, 2}, s3[1] = {3};
        llm_tape tape, old;
        llm_tensor x2, r12, m22, v3, sc;
        llm_var xv, rv, mv, vv, sv, stale, y, y0, wide;
        const llm_tensor *t;
        size_t nodes0;
        char c[256];

        ok = ok && llm_demo_ok("ch24", llm_tensor_from(&x2, 1, shape_x, fix_x, 2, &err), &err)
                && llm_demo_ok("ch24", llm_tensor_from(&r12, 2, s12, fix_g, 2, &err), &err)
                && llm_demo_ok("ch24", llm_tensor_from(&m22, 2, s22, four, 4, &err), &err)
                && llm_demo_ok("ch24", llm_tensor_from(&v3, 1, s3, three, 3, &err), &err)
                && llm_demo_ok("ch24", llm_tensor_zeros(&sc, 0, NULL, &err), &err)
                && llm_demo_ok("ch24", llm_tape_init(&tape, 16, &err), &err)
                && llm_demo_ok("ch24", llm_tape_init(&old, 4, &err), &err)
                && llm_demo_ok("ch24", llm_tape_constant(&tape, &x2, &xv, &err), &err)
                && llm_demo_ok("ch24", llm_tape_constant(&tape, &r12, &rv, &err), &err)
                && llm_demo_ok("ch24", llm_tape_constant(&tape, &m22, &mv, &err), &err)
                && llm_demo_ok("ch24", llm_tape_constant(&tape, &v3, &vv, &err), &err)
                && llm_demo_ok("ch24", llm_tape_constant(&tape, &sc, &sv, &err), &err)
                && llm_demo_ok("ch24", llm_tape_constant(&old, &x2, &stale, &err), &err)
                && llm_demo_ok("ch24", llm_tape_reset(&old, &err), &err)
                && llm_demo_ok("ch24", llm_tape_add(&tape, xv, rv, &wide, &err), &err)
                && llm_demo_ok("ch24", llm_tape_value(&tape, wide, &t, &err), &err);
        if (!ok) {
            llm_params_free(&ps);
            return llm_demo_finish(&tr, 0);
        }
        printf("tape add x [2] + F(x) [1, 2]: accepted, shape %s\n",
               llm_fmt_sizes(c, sizeof c, t->shape, t->rank));
        llm_trace_value(&tr, "broadcast_shape", c);
        memset(&y, 0x5a, sizeof y);
        memcpy(&y0, &y, sizeof y0);
        nodes0 = tape.count;
        llm_demo_refusal(&tr, "x [2] + F(x) [1, 2]",
                         llm_residual_add(&tape, xv, rv, &y, &err), &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "shape_message", err.message);
        llm_demo_refusal(&tr, "x [2, 2] + F(x) [2]",
                         llm_residual_add(&tape, mv, xv, &y, &err), &err);
        llm_demo_refusal(&tr, "x [2] + a scalar F(x)",
                         llm_residual_add(&tape, xv, sv, &y, &err), &err);
        llm_demo_refusal(&tr, "x [2] + F(x) [3]", llm_residual_add(&tape, xv, vv, &y, &err), &err);
        llm_demo_refusal(&tr, "no output", llm_residual_add(&tape, xv, xv, NULL, &err), &err);
        llm_demo_refusal(&tr, "no tape", llm_residual_add(NULL, xv, xv, &y, &err), &err);
        llm_demo_refusal(&tr, "a stale x", llm_residual_add(&old, stale, stale, &y, &err), &err);
        snprintf(c, sizeof c, "%s", memcmp(&y, &y0, sizeof y) == 0 && tape.count == nodes0
                 ? "yes" : "no");
        printf("after the refusals: output untouched and tape unchanged=%s\n", c);
        llm_trace_value(&tr, "untouched", c);
        ok = ok && strcmp(c, "yes") == 0;
        llm_tape_free(&old);
        llm_tape_free(&tape);
        llm_tensor_free(&x2);
        llm_tensor_free(&r12);
        llm_tensor_free(&m22);
        llm_tensor_free(&v3);
        llm_tensor_free(&sc);
    }
    llm_params_free(&ps);
    return llm_demo_finish(&tr, ok);
}
