/* ch24-residual-connections -- y = x + F(x), and the gradient through depth. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/nn.h"
#include "llm/probe.h"

static const double fix_x[2] = {2, -1};                 /* x [2] */
static const double fix_w[4] = {0.5, -1, 2, 0.25};      /* W [2, 2], [in, out] */
static const double fix_g[2] = {1, 1};                  /* g = dL/dy [2] */
static const double deep_w[4] = {-0.25, 0, 0, -0.25};  /* W_k = -0.25 I */
static const double deep_seed[2] = {2, -1};             /* the seed at the top */
static const size_t shape_x[1] = {2};
#define DEPTH 4
static llm_params *ps;                 /* the fixture's list: the branch's weight */
static llm_linear branch;
static double dx_ref[2], dw_ref[4];    /* the fixture block's gradients */
static const char *vec(const double *x)
{
    return llm_trims(x, 2, 12);
}

static const char *mat(const double *x)
{
    return llm_trim_rows(x, 2, 2, 12);
}
static double branch_out[2];           /* F(x) of the last residual block */

/* y = x + F(x), F the linear branch, as a layer for llm_probe. */
static llm_status residual_block(const void *lin, llm_params *list, llm_tape *tape,
                                 llm_var x, llm_var *y, llm_error *err)
{
    const llm_tensor *t;
    llm_var f;
    llm_status st = llm_linear_forward(lin, list, tape, x, &f, err);
    if (st == LLM_OK && (st = llm_tape_value(tape, f, &t, err)) == LLM_OK)
        memcpy(branch_out, t->data + t->offset, sizeof branch_out);  /* contiguous */
    return st == LLM_OK ? llm_residual_add(tape, x, f, y, err) : st;
}

static llm_status branch_alone(const void *lin, llm_params *list, llm_tape *tape,
                               llm_var x, llm_var *y, llm_error *err)
{
    return llm_linear_forward(lin, list, tape, x, y, err);
}

/* The residual block with the weight w on x = fix_x, seeded with fix_g. */
static int run_block(llm_demo *d, const double *w, double *y, double *dx)
{
    llm_probe p = {residual_block, &branch, ps, 1, shape_x, fix_x, fix_g};
    memcpy(ps->items[branch.weight].value.data, w, 4 * sizeof *w);
    return LLM_TRY(d, llm_probe_run(&p, y, 2, NULL, NULL, dx, &d->err));
}
static void fixture_block(llm_demo *d)
{
    llm_probe alone = {branch_alone, &branch, ps, 1, shape_x, fix_x, fix_g};
    double y[2], yb[2], db[2], skip[2];
    llm_rng rng;
    llm_rng_seed(&rng, 24);
    if (!(LLM_TRY(d, llm_params_init(ps, &d->err))
          && LLM_TRY(d, llm_linear_init(&branch, ps, "branch", 2, 2, 0, &rng, &d->err))
          && run_block(d, fix_w, y, dx_ref)))
        return;
    memcpy(dw_ref, ps->items[branch.weight].grad.data, sizeof dw_ref);
    if (!LLM_TRY(d, llm_probe_run(&alone, yb, 2, NULL, NULL, db, &d->err)))
        return;
    skip[0] = dx_ref[0] - db[0];
    skip[1] = dx_ref[1] - db[1];
    printf("x=%s W=%s\n", vec(fix_x), mat(fix_w));
    printf("F = x W = %s\n", llm_put(d, "f", vec(branch_out)));
    printf("y = x + F = %s\n", llm_put(d, "y", vec(y)));
    printf("upstream g=%s\n", vec(fix_g));
    printf("dx=%s", llm_put(d, "dx", vec(dx_ref)));
    printf(" skip=%s", llm_put(d, "skip", vec(skip)));
    printf(" branch=%s\n", llm_put(d, "branch", vec(db)));
    printf("dW=%s\n", llm_put(d, "dw", mat(dw_ref)));
    llm_demo_check(d, branch_out[0] == -1 && branch_out[1] == -2.25 && y[0] == 1
                      && y[1] == -3.25 && dx_ref[0] == 0.5 && dx_ref[1] == 3.25
                      && !memcmp(skip, fix_g, sizeof skip),
                   "the block gives the predicted F(x), y and dx; its skip part is g");
}
static void gradients(llm_demo *d)
{
    static const size_t coords[4] = {0, 1, 2, 3};
    const double *analytic[2] = {dw_ref, dx_ref};
    llm_tensor *xt = llm_own_tensor(d);
    llm_tensor *theta[2] = {&ps->items[branch.weight].value, xt};
    llm_probe p = {residual_block, &branch, ps, 1, shape_x, NULL, fix_g};
    double worst = 0.0, worst_all = 0.0;
    size_t t, failures = 0, failed = 0;
    if (!LLM_TRY(d, llm_tensor_from(xt, 1, shape_x, fix_x, 2, &d->err)))
        return;
    p.x = xt->data;                   /* the checker perturbs x in place */
    for (t = 0; t < 2; t++) {
        if (!LLM_TRY(d, llm_gradient_check(llm_probe_loss, &p, theta[t], analytic[t],
                                           coords, theta[t]->size, 1e-6, 2e-6, &worst,
                                           &failures, &d->err)))
            return;
        llm_row(d, "grads", llm_text("$%c$", "Wx"[t]),
                t == 0 ? mat(analytic[t]) : vec(analytic[t]),
                llm_text("%zu", theta[t]->size), llm_text("%.1e", worst),
                failures == 0 ? "pass" : "fail", NULL);
        printf("gradcheck %c coordinates=%zu worst=%.1e tolerance=2e-6 verdict=%s\n",
               "Wx"[t], theta[t]->size, worst, failures == 0 ? "pass" : "fail");
        failed += failures;
        worst_all = worst > worst_all ? worst : worst_all;
    }
    llm_put(d, "grad_worst", llm_text("%.1e", worst_all));
    llm_put(d, "grad_verdict", failed == 0 ? "pass" : "fail");
    llm_demo_check(d, failed == 0, "every coordinate matches its finite difference");
}
static void zero_branch(llm_demo *d)
{
    static const double zero[4];
    const double *dw = ps->items[branch.weight].grad.data;
    double y[2], dx[2];
    int passes;
    if (!run_block(d, zero, y, dx))
        return;
    passes = !memcmp(y, fix_x, sizeof y) && !memcmp(dx, fix_g, sizeof dx);
    printf("zero branch: F=%s", vec(branch_out));
    printf(" y=%s", llm_put(d, "zero_y", vec(y)));
    printf(" dx=%s", llm_put(d, "zero_dx", vec(dx)));
    printf(" y_is_x_and_dx_is_g=%s\n", llm_put(d, "zero_passes", llm_yes(passes)));
    printf("zero branch: dW=%s\n", llm_put(d, "zero_dw", mat(dw)));
    llm_demo_check(d, passes && !memcmp(dw, dw_ref, sizeof dw_ref),
                   "a zero branch passes x and g through bit for bit; dW stays x^T g");
}
/* h_0 = x, h_{k+1} = F_k(h_k) or h_k + F_k(h_k); top = h_DEPTH; grads[k] =
   the gradient at h_k after one backward pass from the top seeded with seed. */
static void stack(llm_demo *d, const llm_linear *layers, llm_params *list, int residual,
                  double top[2], double grads[DEPTH + 1][2])
{
    llm_tape *tape = llm_own_tape(d);
    llm_tensor *xt = llm_own_tensor(d), *xg = llm_own_tensor(d);
    llm_tensor *gt = llm_own_tensor(d);
    llm_var h[DEPTH + 1], f;
    const llm_tensor *t;
    const double *adj;
    size_t k;
    (void)(LLM_TRY(d, llm_tensor_from(xt, 1, shape_x, fix_x, 2, &d->err))
           && LLM_TRY(d, llm_tensor_zeros(xg, 1, shape_x, &d->err))
           && LLM_TRY(d, llm_tape_init(tape, 32, &d->err))
           && LLM_TRY(d, llm_tape_leaf(tape, xt, xg, &h[0], &d->err)));
    for (k = 0; d->ok && k < DEPTH; k++) {
        if (LLM_TRY(d, llm_linear_forward(&layers[k], list, tape, h[k], &f, &d->err)))
            h[k + 1] = f;
        if (residual)
            (void)LLM_TRY(d, llm_residual_add(tape, h[k], f, &h[k + 1], &d->err));
    }
    if (LLM_TRY(d, llm_tape_value(tape, h[DEPTH], &t, &d->err)))
        memcpy(top, t->data + t->offset, 2 * sizeof *top);
    if (!(LLM_TRY(d, llm_tensor_from(gt, 1, shape_x, deep_seed, 2, &d->err))
          && LLM_TRY(d, llm_tape_backward(tape, h[DEPTH], gt, 1, &d->err))))
        return;
    for (k = 0; k <= DEPTH; k++)      /* every h_k is reached */
        if (LLM_TRY(d, llm_tape_adjoint(tape, h[k], &adj, &d->err)))
            memcpy(grads[k], adj, 2 * sizeof *adj);
}
static void four_deep(llm_demo *d)
{
    static const double want[2][2] = {{0.0078125, -0.00390625},
                                      {0.6328125, -0.31640625}};
    llm_params *list = llm_own_params(d);
    llm_linear layers[DEPTH];
    llm_rng rng;
    double top[2][2], grads[2][DEPTH + 1][2];
    size_t k, r;
    llm_rng_seed(&rng, 24);
    (void)LLM_TRY(d, llm_params_init(list, &d->err));
    for (k = 0; k < DEPTH; k++)             /* each weight -0.25 I, set by hand */
        if (LLM_TRY(d, llm_linear_init(&layers[k], list, llm_text("layer%zu", k), 2, 2,
                                       0, &rng, &d->err)))
            memcpy(list->items[layers[k].weight].value.data, deep_w, sizeof deep_w);
    for (r = 0; r < 2; r++)
        stack(d, layers, list, (int)r, top[r], grads[r]);
    if (!d->ok)
        return;
    printf("stack depth=%d branch=%s I seed=%s\n", DEPTH, llm_trim(deep_w[0], 12),
           vec(deep_seed));
    printf("plain: h%d=%s", DEPTH, llm_put(d, "plain_top", vec(top[0])));
    printf(" dx=%s\n", llm_put(d, "plain_dx", vec(grads[0][0])));
    printf("residual: h%d=%s", DEPTH, llm_put(d, "resid_top", vec(top[1])));
    printf(" dx=%s\n", llm_put(d, "resid_dx", vec(grads[1][0])));
    for (k = DEPTH + 1; k-- > 0;) {
        const char *crossed = llm_text("%zu", (size_t)DEPTH - k);
        llm_row(d, "depth", llm_text("$h_%zu$", k), crossed, vec(grads[0][k]),
                vec(grads[1][k]), NULL);
        printf("gradient at h%zu crossed=%s plain=%s residual=%s\n", k, crossed,
               vec(grads[0][k]), vec(grads[1][k]));
        llm_row(d, "mag", crossed, llm_trim(fabs(grads[0][k][0]), 12),
                llm_trim(fabs(grads[1][k][0]), 12), NULL);
    }
    for (r = 0; r < 2; r++)
        llm_demo_check(d, !memcmp(grads[r][0], want[r], sizeof want[r])
                          && !memcmp(top[r], want[r], sizeof want[r]),
                       "the stack hands x exactly the predicted gradient");
}
static void cancelling_branch(llm_demo *d)
{
    static const double minus_i[4] = {-1, 0, 0, -1};
    double y[2], dx[2];
    if (!run_block(d, minus_i, y, dx))
        return;
    printf("cancelling branch W=%s:", mat(minus_i));
    printf(" y=%s", llm_put(d, "cancel_y", vec(y)));
    printf(" dx=%s\n", llm_put(d, "cancel_dx", vec(dx)));
    llm_demo_check(d, y[0] == 0 && y[1] == 0 && dx[0] == 0 && dx[1] == 0,
                   "a branch -I cancels x forward and back");
}
static void refusals(llm_demo *d)
{
    static const double four[4] = {1, 2, 3, 4}, three[3] = {1, 2, 3};
    static const size_t s12[2] = {1, 2}, s22[2] = {2, 2}, s3[1] = {3};
    llm_tape *tape = llm_own_tape(d), *old = llm_own_tape(d);
    llm_tensor *x2 = llm_own_tensor(d), *v3 = llm_own_tensor(d), *s = llm_own_tensor(d);
    llm_tensor *r12 = llm_own_tensor(d), *m22 = llm_own_tensor(d);
    llm_var xv, rv, mv, vv, sv, stale, y, y0, wide;
    const llm_tensor *t;
    size_t nodes0;
    int untouched;
    if (!(LLM_TRY(d, llm_tensor_from(x2, 1, shape_x, fix_x, 2, &d->err))
          && LLM_TRY(d, llm_tensor_from(r12, 2, s12, fix_g, 2, &d->err))
          && LLM_TRY(d, llm_tensor_from(m22, 2, s22, four, 4, &d->err))
          && LLM_TRY(d, llm_tensor_from(v3, 1, s3, three, 3, &d->err))
          && LLM_TRY(d, llm_tensor_zeros(s, 0, NULL, &d->err))
          && LLM_TRY(d, llm_tape_init(tape, 16, &d->err))
          && LLM_TRY(d, llm_tape_init(old, 4, &d->err))
          && LLM_TRY(d, llm_tape_constant(tape, x2, &xv, &d->err))
          && LLM_TRY(d, llm_tape_constant(tape, r12, &rv, &d->err))
          && LLM_TRY(d, llm_tape_constant(tape, m22, &mv, &d->err))
          && LLM_TRY(d, llm_tape_constant(tape, v3, &vv, &d->err))
          && LLM_TRY(d, llm_tape_constant(tape, s, &sv, &d->err))
          && LLM_TRY(d, llm_tape_constant(old, x2, &stale, &d->err))
          && LLM_TRY(d, llm_tape_reset(old, &d->err))
          && LLM_TRY(d, llm_tape_add(tape, xv, rv, &wide, &d->err))
          && LLM_TRY(d, llm_tape_value(tape, wide, &t, &d->err))))
        return;
    printf("tape add x [2] + F(x) [1, 2]: accepted, shape %s\n",
           llm_put(d, "broadcast_shape", llm_sizes(t->shape, t->rank)));
    memset(&y, 0x5a, sizeof y);
    memcpy(&y0, &y, sizeof y0);
    nodes0 = tape->count;
    llm_refuse(d, "x [2] + F(x) [1, 2]", llm_residual_add(tape, xv, rv, &y, &d->err));
    printf("  %s\n", llm_put(d, "shape_message", d->err.message));
    llm_refuse(d, "x [2, 2] + F(x) [2]", llm_residual_add(tape, mv, xv, &y, &d->err));
    llm_refuse(d, "x [2] + a scalar F(x)", llm_residual_add(tape, xv, sv, &y, &d->err));
    llm_refuse(d, "x [2] + F(x) [3]", llm_residual_add(tape, xv, vv, &y, &d->err));
    llm_refuse(d, "no output", llm_residual_add(tape, xv, xv, NULL, &d->err));
    llm_refuse(d, "no tape", llm_residual_add(NULL, xv, xv, &y, &d->err));
    llm_refuse(d, "a stale x", llm_residual_add(old, stale, stale, &y, &d->err));
    untouched = memcmp(&y, &y0, sizeof y) == 0 && tape->count == nodes0;
    printf("after the refusals: output untouched and tape unchanged=%s\n",
           llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "a refused residual leaves the output and the tape");
}

static void setup(llm_demo *d)
{
    ps = llm_own_params(d);
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {fixture_block, gradients, zero_branch,
                                            four_deep, cancelling_branch, refusals,
                                            NULL};
    return llm_demo_main(argc, argv, "ch24-residual-connections", setup, sections);
}
