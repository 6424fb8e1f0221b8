/* ch19-linear-layers -- y = x W (+ b) on the tape, W stored [d_in, d_out]. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/nn.h"
#include "llm/probe.h"

static const double fix_x[4] = {1, 2, -1, 3};               /* X [2, 2] */
static const double fix_w[6] = {1, 0, -1, 2, 0.5, 1};       /* W [2, 3] */
static const double fix_b[3] = {0.5, -0.5, 1};              /* b [3] */
static const double fix_g[6] = {1, 0, -1, 0.5, 2, 1};       /* G = dL/dY [2, 3] */
static const size_t shape_x[2] = {2, 2};

static llm_params *ps;        /* the demo's list, owned by main */
static llm_linear proj;       /* 2 -> 3 with a bias, in ps */
static llm_rng rng;           /* what proj was drawn from */
static double y_ref[6], dx_ref[4], dw_ref[6], db_ref[3];   /* the fixture's results */

static llm_status linear(const void *lin, llm_params *list, llm_tape *tape, llm_var x,
                         llm_var *y, llm_error *err)
{
    return llm_linear_forward(lin, list, tape, x, y, err);
}
/* A row-major [rows, cols] matrix as "[[a, b], [c, d]]", a vector "[a, b]"
   when rows is 0; the numbers trimmed, with twelve decimals. */
static const char *matrix(const double *x, size_t rows, size_t cols)
{
    return rows == 0 ? llm_trims(x, cols, 12) : llm_trim_rows(x, rows, cols, 12);
}

/* The same numbers as trace rows, one per row; cols is 2 or 3. */
static void trace_matrix(llm_demo *d, const char *table, const double *x, size_t rows,
                         size_t cols)
{
    size_t i;
    for (i = 0; i < rows; i++, x += cols)           /* a third cell when cols is 3 */
        llm_row(d, table, llm_trim(x[0], 12), llm_trim(x[1], 12),
                cols > 2 ? llm_trim(x[2], 12) : NULL, NULL);
}

/* How many draws lead from state a to state b (at most limit). */
static size_t draws_between(llm_rng a, llm_rng b, size_t limit)
{
    size_t n = 0;
    while (a.state != b.state && n < limit) {
        (void)llm_rng_next_u64(&a);
        n++;
    }
    return n;
}

/* x as a factor of a product: in parentheses when it is negative. */
static const char *factor(double x)
{
    return llm_text(x < 0 ? "(%s)" : "%s", llm_trim(x, 12));
}
static void build(llm_demo *d)
{
    llm_params *plain = llm_own_params(d);
    llm_linear bare;
    llm_rng before, plain_rng;
    size_t i, draws_b, draws_p, n_b = 0, n_p = 0;
    int same;

    llm_rng_seed(&rng, 19);
    before = plain_rng = rng;
    if (!(LLM_TRY(d, llm_linear_init(&proj, ps, "proj", 2, 3, 1, &rng, &d->err))
          && LLM_TRY(d, llm_linear_init(&bare, plain, "proj", 2, 3, 0, &plain_rng,
                                        &d->err))))
        return;
    draws_b = draws_between(before, rng, 100);
    draws_p = draws_between(before, plain_rng, 100);
    for (i = 0; i < ps->count; i++) {
        const llm_param *p = &ps->items[i];
        const char *shape = llm_sizes(p->value.shape, p->value.rank);
        const char *init = llm_nums(p->value.data, p->value.size, 3);
        const char *draws = llm_text("%zu", i == proj.weight ? draws_b : (size_t)0);
        printf("param %s shape=%s decay=%d draws=%s init=%s\n", p->name, shape,
               p->decay, draws, init);
        llm_row(d, "params", llm_text("%zu", i), llm_text("`%s`", p->name), shape, init,
                llm_text("%d", p->decay), draws, NULL);
        n_b += p->value.size;
    }
    for (i = 0; i < plain->count; i++)
        n_p += plain->items[i].value.size;
    same = memcmp(ps->items[proj.weight].value.data,
                  plain->items[bare.weight].value.data, 6 * sizeof(double)) == 0;
    printf("draws with bias=%s", llm_put(d, "draws_bias", llm_text("%zu", draws_b)));
    printf(" without=%s", llm_put(d, "draws_nobias", llm_text("%zu", draws_p)));
    printf(" weights=%s\n",
           llm_put(d, "weights_same", same ? "bit-identical" : "different"));
    printf("parameters with bias=%s", llm_put(d, "n_bias", llm_text("%zu", n_b)));
    printf(" without=%s\n", llm_put(d, "n_nobias", llm_text("%zu", n_p)));
    llm_demo_check(d, same, "the weight is drawn the same with and without a bias");
    llm_demo_check(d, draws_b == 6 && draws_p == 6, "the weight alone takes 6 draws");
    llm_demo_check(d, n_b == 9 && n_p == 6, "the lists hold 9 and 6 numbers");
}
static void fixture(llm_demo *d)
{
    llm_param *w = &ps->items[proj.weight], *b = &ps->items[proj.bias];
    llm_probe p = {linear, &proj, ps, 2, shape_x, fix_x, fix_g};
    size_t yrank = 0, yshape[LLM_MAX_RANK], i, j;

    memcpy(w->value.data, fix_w, sizeof fix_w);            /* set by hand */
    memcpy(b->value.data, fix_b, sizeof fix_b);
    if (!LLM_TRY(d, llm_probe_run(&p, y_ref, 6, &yrank, yshape, dx_ref, &d->err)))
        return;
    memcpy(dw_ref, w->grad.data, sizeof dw_ref);
    memcpy(db_ref, b->grad.data, sizeof db_ref);
    printf("X=%s W=%s b=%s\n", matrix(fix_x, 2, 2), matrix(fix_w, 2, 3),
           matrix(fix_b, 0, 3));
    printf("Y shape=%s", llm_sizes(yshape, yrank));
    printf(" values=%s\n", llm_put(d, "y", matrix(y_ref, 2, 3)));
    llm_put(d, "y12", llm_trim(y_ref[5], 12));
    for (i = 0; i < 2; i++)
        for (j = 0; j < 3; j++)
            llm_row(d, "terms", llm_text("[%zu, %zu]", i, j),
                    llm_text("%s·%s + %s·%s + %s", factor(fix_x[2 * i]),
                             factor(fix_w[j]), factor(fix_x[2 * i + 1]),
                             factor(fix_w[3 + j]), llm_trim(fix_b[j], 12)),
                    llm_trim(y_ref[3 * i + j], 12), NULL);
    trace_matrix(d, "mat_x", fix_x, 2, 2);
    trace_matrix(d, "mat_w", fix_w, 2, 3);
    trace_matrix(d, "vec_b", fix_b, 1, 3);
    trace_matrix(d, "mat_y", y_ref, 2, 3);
    printf("G=%s\n", matrix(fix_g, 2, 3));
    printf("dX=%s\n", llm_put(d, "dx", matrix(dx_ref, 2, 2)));
    printf("dW=%s\n", llm_put(d, "dw", matrix(dw_ref, 2, 3)));
    printf("db=%s\n", llm_put(d, "db", matrix(db_ref, 0, 3)));
}
static void gradients(llm_demo *d)
{
    static const size_t coords[6] = {0, 1, 2, 3, 4, 5};
    static const size_t rows[3] = {2, 0, 2}, cols[3] = {3, 3, 2};   /* 0: a vector */
    static const char *const names[3] = {"$W$", "$b$", "$X$"};
    const double *analytic[3] = {dw_ref, db_ref, dx_ref};
    llm_tensor *xt = llm_own_tensor(d);
    llm_tensor *theta[3] = {&ps->items[proj.weight].value, &ps->items[proj.bias].value,
                            xt};
    llm_probe p = {linear, &proj, ps, 2, shape_x, NULL, fix_g};
    double worst = 0.0, worst_all = 0.0;
    size_t t, failures = 0, failed = 0;

    if (!LLM_TRY(d, llm_tensor_from(xt, 2, shape_x, fix_x, 4, &d->err)))
        return;
    p.x = xt->data;                   /* the checker perturbs X in place */
    for (t = 0; t < 3; t++) {
        const char *worst_t, *verdict;
        if (!LLM_TRY(d, llm_gradient_check(llm_probe_loss, &p, theta[t], analytic[t],
                                           coords, theta[t]->size, 1e-6, 1e-6, &worst,
                                           &failures, &d->err)))
            return;
        worst_t = llm_text("%.1e", worst);
        verdict = failures == 0 ? "pass" : "fail";
        llm_row(d, "grads", names[t], matrix(analytic[t], rows[t], cols[t]),
                llm_text("%zu", theta[t]->size), worst_t, verdict, NULL);
        printf("gradcheck %c coordinates=%zu worst=%s verdict=%s\n", "Wbx"[t],
               theta[t]->size, worst_t, verdict);
        failed += failures;
        worst_all = worst > worst_all ? worst : worst_all;
    }
    llm_put(d, "grad_worst", llm_text("%.1e", worst_all));
    llm_put(d, "grad_verdict", failed == 0 ? "pass" : "fail");
    llm_demo_check(d, failed == 0, "every coordinate matches its finite difference");
}
static void leading_axes(llm_demo *d)
{
    static const size_t shape[5][4] = {{2, 2}, {2, 1, 2}, {1, 2, 2}, {2, 1, 1, 2}, {2}};
    static const size_t ranks[5] = {2, 3, 3, 4, 1}, empty[2] = {0, 2};
    static const double zero[6];                      /* +0, bit for bit */
    const double *dw = ps->items[proj.weight].grad.data;
    const double *db = ps->items[proj.bias].grad.data;
    llm_probe p = {linear, &proj, ps, 2, empty, NULL, fix_g};
    double y[6], dx[4];
    size_t r, yrank = 0, yshape[LLM_MAX_RANK], rows;
    int same, all_same = 1, zeros;

    for (r = 0; r < 5; r++) {
        llm_probe q = {linear, &proj, ps, ranks[r], shape[r], fix_x, fix_g};
        const char *xs = llm_sizes(shape[r], ranks[r]), *ys, *yv, *dws;
        if (!LLM_TRY(d, llm_probe_run(&q, y, 6, &yrank, yshape, dx, &d->err)))
            return;
        rows = ranks[r] == 1 ? 1 : 2;
        same = memcmp(y, y_ref, rows * 3 * sizeof *y) == 0
               && memcmp(dx, dx_ref, rows * 2 * sizeof *dx) == 0
               && (rows == 1 || (memcmp(dw, dw_ref, sizeof dw_ref) == 0
                                 && memcmp(db, db_ref, sizeof db_ref) == 0));
        ys = llm_sizes(yshape, yrank);
        yv = matrix(y, rows == 1 ? 0 : 2, 3);
        dws = matrix(dw, 2, 3);
        llm_row(d, "ranks", xs, ys, yv, dws, llm_yes(same), NULL);
        printf("x shape=%s -> y shape=%s y=%s dW=%s same_as_rows=%s\n", xs, ys, yv, dws,
               llm_yes(same));
        if (r == 1)
            llm_put(d, "bt_shape", ys);
        if (r == 4) {
            llm_put(d, "vec_shape", ys);
            llm_put(d, "vec_y", yv);
            llm_put(d, "vec_dw", dws);
        }
        all_same = all_same && same;
    }
    llm_put(d, "ranks_same", llm_yes(all_same));
    llm_demo_check(d, all_same, "every arrangement gives the fixture's numbers");
    if (!LLM_TRY(d, llm_probe_run(&p, y, 6, &yrank, yshape, dx, &d->err)))
        return;
    zeros = memcmp(dw, zero, sizeof zero) == 0 && memcmp(db, zero, 3 * sizeof *db) == 0;
    printf("x shape=[0, 2] -> y shape=%s",
           llm_put(d, "empty_shape", llm_sizes(yshape, yrank)));
    printf(" dW=%s db=%s", matrix(dw, 2, 3), matrix(db, 0, 3));
    printf(" all_plus_zero=%s\n", llm_put(d, "empty_zero", llm_yes(zeros)));
    llm_demo_check(d, zeros, "an empty batch leaves every gradient at +0");
    llm_demo_check(d, yrank == 2 && yshape[0] == 0 && yshape[1] == 3, "y is [0, 3]");
}
static void other_layout(llm_demo *d)
{
    static const double wt[6] = {1, 2, 0, 0.5, -1, 1};            /* W^T [3, 2] */
    static const double sq_w[2][4] = {{1, 2, 3, 4}, {1, 3, 2, 4}}; /* and transposed */
    static const double sq_x[2] = {1, 0};
    static const size_t shape_wt[2] = {3, 2}, shape_b[1] = {3}, two[1] = {2};
    llm_tensor *x = llm_own_tensor(d), *w = llm_own_tensor(d), *b = llm_own_tensor(d);
    llm_tensor *xw = llm_own_tensor(d), *y = llm_own_tensor(d);
    llm_params *sp = llm_own_params(d);
    llm_linear sq;
    llm_rng srng;
    llm_probe p = {linear, &sq, sp, 1, two, sq_x, NULL};
    double out[2][2];                                              /* right, wrong */
    size_t k;
    int same;

    if (!(LLM_TRY(d, llm_tensor_from(x, 2, shape_x, fix_x, 4, &d->err))
          && LLM_TRY(d, llm_tensor_from(w, 2, shape_wt, wt, 6, &d->err))
          && LLM_TRY(d, llm_tensor_from(b, 1, shape_b, fix_b, 3, &d->err))
          && LLM_TRY(d, llm_matmul(xw, x, w, 0, 1, &d->err))
          && LLM_TRY(d, llm_tensor_binary(y, LLM_ADD, xw, b, &d->err))))
        return;
    same = memcmp(y->data, y_ref, sizeof y_ref) == 0;
    printf("W stored [out, in]=%s", matrix(wt, 3, 2));
    printf(" x W^T + b=%s", matrix(y->data, 2, 3));
    printf(" same_bits=%s\n", llm_put(d, "layout_same", llm_yes(same)));
    llm_demo_check(d, same, "x W^T + b with W stored [out, in] gives Y bit for bit");

    llm_rng_seed(&srng, 19);
    if (!LLM_TRY(d, llm_linear_init(&sq, sp, "square", 2, 2, 0, &srng, &d->err)))
        return;
    for (k = 0; k < 2; k++) {
        memcpy(sp->items[sq.weight].value.data, sq_w[k], sizeof sq_w[k]);
        if (!LLM_TRY(d, llm_probe_run(&p, out[k], 2, NULL, NULL, NULL, &d->err)))
            return;
    }
    printf("square layer x=[1, 0]: y=%s", llm_put(d, "sq_right", matrix(out[0], 0, 2)));
    printf("; weight loaded transposed: accepted, y=%s\n",
           llm_put(d, "sq_wrong", matrix(out[1], 0, 2)));
}
static void refusals(llm_demo *d)
{
    static const size_t wide[2] = {2, 3}, b2[1] = {2};
    static const char long_prefix[] =                               /* 57 characters */
        "a_prefix_that_is_far_too_long_to_leave_room_for_weight_xy";
    llm_params *empty = llm_own_params(d), *swapped = llm_own_params(d);
    llm_params *narrow = llm_own_params(d);
    llm_tape *tape = llm_own_tape(d);
    llm_tensor *xw = llm_own_tensor(d), *xs = llm_own_tensor(d);
    llm_linear kept, other;
    llm_var xv, xsv, y, y0;
    llm_rng rng0, spare;
    size_t count0, nodes0;
    int untouched;

    llm_rng_seed(&spare, 0);
    if (!(LLM_TRY(d, llm_params_add_xavier(swapped, "proj.weight", 3, 2, &spare,
                                           &d->err))
          && LLM_TRY(d, llm_params_add_const(swapped, "proj.bias", 1, &proj.d_out, 0.0,
                                             0, &d->err))
          && LLM_TRY(d, llm_params_add_xavier(narrow, "proj.weight", 2, 3, &spare,
                                              &d->err))
          && LLM_TRY(d, llm_params_add_const(narrow, "proj.bias", 1, b2, 0.0, 0,
                                             &d->err))
          && LLM_TRY(d, llm_tensor_from(xw, 2, wide, fix_w, 6, &d->err))
          && LLM_TRY(d, llm_tensor_zeros(xs, 0, NULL, &d->err))
          && LLM_TRY(d, llm_tape_init(tape, 16, &d->err))
          && LLM_TRY(d, llm_tape_constant(tape, xw, &xv, &d->err))
          && LLM_TRY(d, llm_tape_constant(tape, xs, &xsv, &d->err))))
        return;
    memset(&y, 0x5a, sizeof y);
    memcpy(&y0, &y, sizeof y0);
    nodes0 = tape->count;
    llm_refuse(d, "x [2, 3] into a 2 -> 3 layer",
               llm_linear_forward(&proj, ps, tape, xv, &y, &d->err));
    printf("  %s\n", llm_put(d, "width_message", d->err.message));
    llm_refuse(d, "a scalar x", llm_linear_forward(&proj, ps, tape, xsv, &y, &d->err));
    llm_refuse(d, "an empty list",
               llm_linear_forward(&proj, empty, tape, xv, &y, &d->err));
    llm_refuse(d, "the weight stored [3, 2]",
               llm_linear_forward(&proj, swapped, tape, xv, &y, &d->err));
    printf("  %s\n", llm_put(d, "layout_message", d->err.message));
    llm_refuse(d, "a bias of width 2",
               llm_linear_forward(&proj, narrow, tape, xv, &y, &d->err));
    llm_refuse(d, "no output", llm_linear_forward(&proj, ps, tape, xv, NULL, &d->err));
    if (!LLM_TRY(d, llm_params_add_const(ps, "head.bias", 1, b2, 0.0, 0, &d->err)))
        return;
    count0 = ps->count;
    rng0 = rng;
    memset(&other, 0x5a, sizeof other);           /* a marker, padding included */
    memcpy(&kept, &other, sizeof kept);
    llm_refuse(d, "d_out = 0",
               llm_linear_init(&other, ps, "head", 2, 0, 1, &rng, &d->err));
    llm_refuse(d, "prefix \"Head\"",
               llm_linear_init(&other, ps, "Head", 2, 3, 1, &rng, &d->err));
    llm_refuse(d, "a prefix of 57 characters",
               llm_linear_init(&other, ps, long_prefix, 2, 3, 1, &rng, &d->err));
    llm_refuse(d, "prefix \"proj\" again",
               llm_linear_init(&other, ps, "proj", 2, 3, 1, &rng, &d->err));
    llm_refuse(d, "\"head\" whose bias name is taken",
               llm_linear_init(&other, ps, "head", 2, 3, 1, &rng, &d->err));
    printf("  %s\n", llm_put(d, "rollback_message", d->err.message));
    llm_demo_check(d, memcmp(&other, &kept, sizeof other) == 0,
                   "a refused constructor leaves its layer as it was");
    untouched = memcmp(&y, &y0, sizeof y) == 0 && tape->count == nodes0
                && ps->count == count0 && rng.state == rng0.state;
    printf("after the refusals: output untouched=%s tape unchanged=%s",
           llm_yes(memcmp(&y, &y0, sizeof y) == 0), llm_yes(tape->count == nodes0));
    printf(" list unchanged=%s generator unchanged=%s\n", llm_yes(ps->count == count0),
           llm_yes(rng.state == rng0.state));
    llm_put(d, "untouched", llm_yes(untouched));
    llm_demo_check(d, untouched, "refusals change no output, tape, list or generator");
}

static void setup(llm_demo *d)
{
    ps = llm_own_params(d);
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {build, fixture, gradients, leading_axes,
                                            other_layout, refusals, NULL};
    return llm_demo_main(argc, argv, "ch19-linear-layers", setup, sections);
}
