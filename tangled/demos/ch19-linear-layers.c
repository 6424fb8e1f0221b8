/* ch19-linear-layers -- y = x W (+ b) on the tape, W stored [d_in, d_out]. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/nn.h"

static const double fix_x[4] = {1, 2, -1, 3};               /* X [2, 2] */
static const double fix_w[6] = {1, 0, -1, 2, 0.5, 1};       /* W [2, 3] */
static const double fix_b[3] = {0.5, -0.5, 1};              /* b [3] */
static const double fix_g[6] = {1, 0, -1, 0.5, 2, 1};       /* G = dL/dY [2, 3] */
static const size_t shape_x[2] = {2, 2};
/* A row-major [rows, cols] matrix as "[[a, b], [c, d]]"; a vector when
   rows is 0 ("[a, b]"). */
static char *matrix(char *buf, size_t size, const double *x, size_t rows, size_t cols)
{
    size_t used = 0, i, j, nrows = rows == 0 ? 1 : rows;
    char one[64];
    buf[0] = '\0';
    if (rows > 0)
        used += (size_t)snprintf(buf, size, "[");
    for (i = 0; i < nrows && used < size; i++) {
        used += (size_t)snprintf(buf + used, size - used, "%s[", i ? ", " : "");
        for (j = 0; j < cols && used < size; j++)
            used += (size_t)snprintf(buf + used, size - used, "%s%s", j ? ", " : "",
                                     llm_fmt_trim(one, sizeof one, x[i * cols + j], 12));
        if (used < size)
            used += (size_t)snprintf(buf + used, size - used, "]");
    }
    if (rows > 0 && used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

static void trace_matrix(llm_trace *tr, const char *table, const double *x,
                         size_t rows, size_t cols)
{
    char cell[8][64];
    const char *cells[8];
    size_t i, j;
    for (i = 0; i < rows; i++) {
        for (j = 0; j < cols && j < 8; j++) {
            llm_fmt_trim(cell[j], sizeof cell[j], x[i * cols + j], 12);
            cells[j] = cell[j];
        }
        llm_trace_row(tr, table, cols, cells);
    }
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

static size_t count_scalars(const llm_params *ps)
{
    size_t i, n = 0;
    for (i = 0; i < ps->count; i++)
        n += ps->items[i].value.size;
    return n;
}

static void zero_grads(llm_params *ps)
{
    size_t i;
    for (i = 0; i < ps->count; i++)
        memset(ps->items[i].grad.data, 0, ps->items[i].grad.size * sizeof(double));
}
/* Copies t's elements in row-major order into out. */
static void copy_out(const llm_tensor *t, double *out)
{
    size_t index[LLM_MAX_RANK] = {0}, n = 0, k, at;
    if (t->size == 0)
        return;
    do {
        for (at = t->offset, k = 0; k < t->rank; k++)
            at += index[k] * t->stride[k];
        out[n++] = t->data[at];
    } while (llm_index_next(t->rank, t->shape, index));
}

/* y = lin(x) for x of the given shape and values on a fresh tape; y and its
   shape are copied out. When g is not NULL (y's shape), backward runs too and
   dx receives x's gradient; the parameters' grads hold this run's alone. */
static llm_status run(const llm_linear *lin, llm_params *ps, size_t rank,
                      const size_t *shape, const double *x, const double *g,
                      double *y, size_t *yrank, size_t *yshape, double *dx,
                      llm_error *err)
{
    llm_tape tape;
    llm_tensor xt, xg, gt;
    llm_var xv, yv;
    const llm_tensor *yt;
    llm_status st;
    memset(&gt, 0, sizeof gt);
    zero_grads(ps);
    st = llm_tensor_zeros(&xt, rank, shape, err);
    if (st != LLM_OK)
        return st;
    if (xt.size > 0)
        memcpy(xt.data, x, xt.size * sizeof *x);
    st = llm_tensor_zeros(&xg, rank, shape, err);
    if (st != LLM_OK) {
        llm_tensor_free(&xt);
        return st;
    }
    st = llm_tape_init(&tape, 16, err);
    if (st == LLM_OK) {
        st = llm_tape_leaf(&tape, &xt, &xg, &xv, err);
        if (st == LLM_OK)
            st = llm_linear_forward(lin, ps, &tape, xv, &yv, err);
        if (st == LLM_OK)
            st = llm_tape_value(&tape, yv, &yt, err);
        if (st == LLM_OK) {
            copy_out(yt, y);
            *yrank = yt->rank;
            memcpy(yshape, yt->shape, yt->rank * sizeof *yshape);
        }
        if (st == LLM_OK && g != NULL)
            st = llm_tensor_zeros(&gt, yt->rank, yt->shape, err);
        if (st == LLM_OK && g != NULL) {
            if (gt.size > 0)
                memcpy(gt.data, g, gt.size * sizeof *g);
            st = llm_tape_backward(&tape, yv, &gt, 0, err);
            if (st == LLM_OK)
                copy_out(&xg, dx);
        }
        llm_tape_free(&tape);
    }
    llm_tensor_free(&gt);
    llm_tensor_free(&xg);
    llm_tensor_free(&xt);
    return st;
}
static char *factor(char buf[48], double x)
{
    char one[32];
    llm_fmt_trim(one, sizeof one, x, 12);
    snprintf(buf, 48, x < 0 ? "(%s)" : "%s", one);
    return buf;
}
typedef struct probe {
    const llm_linear *lin;
    llm_params *ps;
    const double *x;      /* X [2, 2]: fix_x, or the tensor under test */
} probe;

/* L = sum G_nj Y_nj for the fixture's G, summed in row-major order. */
static llm_status probe_loss(void *ctx, const llm_tensor *theta, double *value,
                             llm_error *err)
{
    const probe *p = ctx;
    double y[6], sum = 0.0;
    size_t yrank, yshape[LLM_MAX_RANK], i;
    llm_status st;
    (void)theta;          /* perturbed in place: a parameter, or p->x itself */
    st = run(p->lin, p->ps, 2, shape_x, p->x, NULL, y, &yrank, yshape, NULL, err);
    if (st != LLM_OK)
        return st;
    for (i = 0; i < 6; i++)
        sum += fix_g[i] * y[i];
    *value = sum;
    return LLM_OK;
}

int main(int argc, char **argv)
{
    llm_trace tr;
    llm_params ps;
    llm_linear proj;
    llm_rng rng;
    llm_error err;
    double y_ref[6], dx_ref[4], dw_ref[6], db_ref[3];   /* the fixture's results */
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch19-linear-layers", &tr);
    if (status != 0)
        return status;
    printf("chapter=19 linear-layers\n");
    if (!llm_demo_ok("ch19", llm_params_init(&ps, &err), &err))
        return llm_demo_finish(&tr, 0);
    {
        llm_params plain;
        llm_linear bare;
        llm_rng before, plain_rng;
        size_t i, k, draws_b, draws_p;
        int same;
        char c[6][160], buf[256];
        const char *cells[6];

        llm_rng_seed(&rng, 19);
        before = rng;
        ok = ok && llm_demo_ok("ch19",
                               llm_linear_init(&proj, &ps, "proj", 2, 3, 1, &rng, &err), &err);
        llm_rng_seed(&plain_rng, 19);
        ok = ok && llm_demo_ok("ch19", llm_params_init(&plain, &err), &err)
                && llm_demo_ok("ch19", llm_linear_init(&bare, &plain, "proj", 2, 3, 0, &plain_rng,
                                                       &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        draws_b = draws_between(before, rng, 100);
        draws_p = draws_between(before, plain_rng, 100);
        for (i = 0; i < ps.count; i++) {
            const llm_param *p = &ps.items[i];
            snprintf(c[0], sizeof c[0], "%zu", i);
            snprintf(c[1], sizeof c[1], "`%s`", p->name);
            llm_fmt_sizes(c[2], sizeof c[2], p->value.shape, p->value.rank);
            llm_fmt_list(c[3], sizeof c[3], p->value.data, p->value.size, 3);
            snprintf(c[4], sizeof c[4], "%d", p->decay);
            snprintf(c[5], sizeof c[5], "%zu", i == proj.weight ? draws_b : (size_t)0);
            printf("param %s shape=%s decay=%s draws=%s init=%s\n", p->name, c[2], c[4],
                   c[5], c[3]);
            for (k = 0; k < 6; k++)
                cells[k] = c[k];
            llm_trace_row(&tr, "params", 6, cells);
        }
        same = memcmp(ps.items[proj.weight].value.data, plain.items[bare.weight].value.data,
                      6 * sizeof(double)) == 0;
        printf("draws with bias=%zu without=%zu weights=%s\n", draws_b, draws_p,
               same ? "bit-identical" : "different");
        snprintf(buf, sizeof buf, "%zu", draws_b);
        llm_trace_value(&tr, "draws_bias", buf);
        snprintf(buf, sizeof buf, "%zu", draws_p);
        llm_trace_value(&tr, "draws_nobias", buf);
        llm_trace_value(&tr, "weights_same", same ? "bit-identical" : "different");
        printf("parameters with bias=%zu without=%zu\n", count_scalars(&ps), count_scalars(&plain));
        snprintf(buf, sizeof buf, "%zu", count_scalars(&ps));
        llm_trace_value(&tr, "n_bias", buf);
        snprintf(buf, sizeof buf, "%zu", count_scalars(&plain));
        llm_trace_value(&tr, "n_nobias", buf);
        ok = ok && same && draws_b == 6 && draws_p == 6 && count_scalars(&ps) == 9
                && count_scalars(&plain) == 6;
        llm_params_free(&plain);
    }
    {
        llm_param *w = &ps.items[proj.weight], *b = &ps.items[proj.bias];
        size_t yrank = 0, yshape[LLM_MAX_RANK], i, j;
        char c[3][160], buf[256], f[4][48];
        const char *cells[3] = {c[0], c[1], c[2]};

        memcpy(w->value.data, fix_w, sizeof fix_w);            /* set by hand */
        memcpy(b->value.data, fix_b, sizeof fix_b);
        ok = ok && llm_demo_ok("ch19", run(&proj, &ps, 2, shape_x, fix_x, fix_g, y_ref, &yrank,
                                           yshape, dx_ref, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        memcpy(dw_ref, w->grad.data, sizeof dw_ref);
        memcpy(db_ref, b->grad.data, sizeof db_ref);
        printf("X=%s W=%s b=%s\n", matrix(c[0], sizeof c[0], fix_x, 2, 2),
               matrix(c[1], sizeof c[1], fix_w, 2, 3), matrix(c[2], sizeof c[2], fix_b, 0, 3));
        printf("Y shape=%s values=%s\n", llm_fmt_sizes(c[0], sizeof c[0], yshape, yrank),
               matrix(buf, sizeof buf, y_ref, 2, 3));
        llm_trace_value(&tr, "y", buf);
        llm_trace_value(&tr, "y12", llm_fmt_trim(c[0], sizeof c[0], y_ref[5], 12));
        for (i = 0; i < 2; i++)
            for (j = 0; j < 3; j++) {
                snprintf(c[0], sizeof c[0], "[%zu, %zu]", i, j);
                snprintf(c[1], sizeof c[1], "%s·%s + %s·%s + %s",
                         factor(f[0], fix_x[2 * i]), factor(f[1], fix_w[j]),
                         factor(f[2], fix_x[2 * i + 1]), factor(f[3], fix_w[3 + j]),
                         llm_fmt_trim(buf, sizeof buf, fix_b[j], 12));
                llm_fmt_trim(c[2], sizeof c[2], y_ref[3 * i + j], 12);
                llm_trace_row(&tr, "terms", 3, cells);
            }
        trace_matrix(&tr, "mat_x", fix_x, 2, 2);
        trace_matrix(&tr, "mat_w", fix_w, 2, 3);
        trace_matrix(&tr, "vec_b", fix_b, 1, 3);
        trace_matrix(&tr, "mat_y", y_ref, 2, 3);
        printf("G=%s\n", matrix(buf, sizeof buf, fix_g, 2, 3));
        printf("dX=%s\n", matrix(buf, sizeof buf, dx_ref, 2, 2));
        llm_trace_value(&tr, "dx", buf);
        printf("dW=%s\n", matrix(buf, sizeof buf, dw_ref, 2, 3));
        llm_trace_value(&tr, "dw", buf);
        printf("db=%s\n", matrix(buf, sizeof buf, db_ref, 0, 3));
        llm_trace_value(&tr, "db", buf);
    }
    {
        static const size_t coords[6] = {0, 1, 2, 3, 4, 5};
        static const char *const names[3] = {"$W$", "$b$", "$X$"};
        static const size_t rows[3] = {2, 0, 2}, cols[3] = {3, 3, 2};   /* 0: a vector */
        llm_tensor xt;
        llm_tensor *theta[3];
        const double *analytic[3];
        double worst = 0.0, worst_all = 0.0;
        size_t t, failures = 0, failed = 0;
        char c[5][160], buf[64];
        const char *cells[5] = {c[0], c[1], c[2], c[3], c[4]};
        probe pr;

        ok = ok && llm_demo_ok("ch19", llm_tensor_from(&xt, 2, shape_x, fix_x, 4, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        pr.lin = &proj;
        pr.ps = &ps;
        pr.x = xt.data;
        theta[0] = &ps.items[proj.weight].value;
        theta[1] = &ps.items[proj.bias].value;
        theta[2] = &xt;
        analytic[0] = dw_ref;
        analytic[1] = db_ref;
        analytic[2] = dx_ref;
        for (t = 0; t < 3 && ok; t++) {
            ok = llm_demo_ok("ch19", llm_gradient_check(probe_loss, &pr, theta[t], analytic[t],
                                                        coords, theta[t]->size, 1e-6, 1e-6, &worst,
                                                        &failures, &err), &err);
            snprintf(c[0], sizeof c[0], "%s", names[t]);
            matrix(c[1], sizeof c[1], analytic[t], rows[t], cols[t]);
            snprintf(c[2], sizeof c[2], "%zu", theta[t]->size);
            snprintf(c[3], sizeof c[3], "%.1e", worst);
            snprintf(c[4], sizeof c[4], "%s", failures == 0 ? "pass" : "fail");
            llm_trace_row(&tr, "grads", 5, cells);
            printf("gradcheck %c coordinates=%zu worst=%s verdict=%s\n", "Wbx"[t],
                   theta[t]->size, c[3], c[4]);
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
        static const size_t shapes[5][4] = {{2, 2}, {2, 1, 2}, {1, 2, 2}, {2, 1, 1, 2}, {2}};
        static const size_t ranks[5] = {2, 3, 3, 4, 1};
        double y[6], dx[4];
        size_t r, yrank = 0, yshape[LLM_MAX_RANK], rows;
        int same, all_same = 1;
        char c[5][160];
        const char *cells[5] = {c[0], c[1], c[2], c[3], c[4]};

        for (r = 0; r < 5 && ok; r++) {
            const llm_param *w = &ps.items[proj.weight], *b = &ps.items[proj.bias];
            ok = llm_demo_ok("ch19", run(&proj, &ps, ranks[r], shapes[r], fix_x, fix_g, y, &yrank,
                                         yshape, dx, &err), &err);
            if (!ok)
                break;
            rows = ranks[r] == 1 ? 1 : 2;
            same = memcmp(y, y_ref, rows * 3 * sizeof *y) == 0
                   && memcmp(dx, dx_ref, rows * 2 * sizeof *dx) == 0;
            if (rows == 2)
                same = same && memcmp(w->grad.data, dw_ref, sizeof dw_ref) == 0
                       && memcmp(b->grad.data, db_ref, sizeof db_ref) == 0;
            llm_fmt_sizes(c[0], sizeof c[0], shapes[r], ranks[r]);
            llm_fmt_sizes(c[1], sizeof c[1], yshape, yrank);
            matrix(c[2], sizeof c[2], y, rows == 1 ? 0 : rows, 3);
            matrix(c[3], sizeof c[3], w->grad.data, 2, 3);
            snprintf(c[4], sizeof c[4], "%s", same ? "yes" : "no");
            llm_trace_row(&tr, "ranks", 5, cells);
            printf("x shape=%s -> y shape=%s y=%s dW=%s same_as_rows=%s\n", c[0], c[1], c[2],
                   c[3], c[4]);
            if (r == 1)
                llm_trace_value(&tr, "bt_shape", c[1]);
            if (r == 4) {
                llm_trace_value(&tr, "vec_shape", c[1]);
                llm_trace_value(&tr, "vec_y", c[2]);
                llm_trace_value(&tr, "vec_dw", c[3]);
            }
            all_same = all_same && same;
        }
        llm_trace_value(&tr, "ranks_same", all_same ? "yes" : "no");
        ok = ok && all_same;
    }
    {
        const size_t empty[2] = {0, 2};
        double y[1], dx[1];
        size_t yrank = 0, yshape[LLM_MAX_RANK], i;
        int zeros = 1;
        char c[2][160];

        ok = ok && llm_demo_ok("ch19", run(&proj, &ps, 2, empty, NULL, fix_g, y, &yrank, yshape,
                                           dx, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        for (i = 0; i < 6; i++)
            zeros = zeros && ps.items[proj.weight].grad.data[i] == 0.0
                    && !signbit(ps.items[proj.weight].grad.data[i]);
        for (i = 0; i < 3; i++)
            zeros = zeros && ps.items[proj.bias].grad.data[i] == 0.0
                    && !signbit(ps.items[proj.bias].grad.data[i]);
        printf("x shape=[0, 2] -> y shape=%s dW=%s", llm_fmt_sizes(c[0], sizeof c[0], yshape, yrank),
               matrix(c[1], sizeof c[1], ps.items[proj.weight].grad.data, 2, 3));
        printf(" db=%s all_plus_zero=%s\n",
               matrix(c[1], sizeof c[1], ps.items[proj.bias].grad.data, 0, 3), zeros ? "yes" : "no");
        llm_trace_value(&tr, "empty_shape", c[0]);
        llm_trace_value(&tr, "empty_zero", zeros ? "yes" : "no");
        ok = ok && zeros && yrank == 2 && yshape[0] == 0 && yshape[1] == 3;
    }
    {
        static const double wt[6] = {1, 2, 0, 0.5, -1, 1};        /* W^T [3, 2] */
        static const double sq_w[4] = {1, 2, 3, 4}, sq_wt[4] = {1, 3, 2, 4}, sq_x[2] = {1, 0};
        const size_t shape_wt[2] = {3, 2}, shape_b[1] = {3}, two[1] = {2};
        llm_tensor x, w, b, xw, y;
        llm_params sp;
        llm_linear sq;
        llm_rng srng;
        double right[2], wrong[2];
        size_t yrank, yshape[LLM_MAX_RANK];
        int same;
        char c[2][160];

        ok = ok && llm_demo_ok("ch19", llm_tensor_from(&x, 2, shape_x, fix_x, 4, &err), &err)
                && llm_demo_ok("ch19", llm_tensor_from(&w, 2, shape_wt, wt, 6, &err), &err)
                && llm_demo_ok("ch19", llm_tensor_from(&b, 1, shape_b, fix_b, 3, &err), &err)
                && llm_demo_ok("ch19", llm_matmul(&xw, &x, &w, 0, 1, &err), &err)
                && llm_demo_ok("ch19", llm_tensor_binary(&y, LLM_ADD, &xw, &b, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        same = memcmp(y.data, y_ref, sizeof y_ref) == 0;
        printf("W stored [out, in]=%s x W^T + b=%s same_bits=%s\n",
               matrix(c[0], sizeof c[0], wt, 3, 2), matrix(c[1], sizeof c[1], y.data, 2, 3),
               same ? "yes" : "no");
        llm_trace_value(&tr, "layout_same", same ? "yes" : "no");
        ok = ok && same;
        llm_tensor_free(&x);
        llm_tensor_free(&w);
        llm_tensor_free(&b);
        llm_tensor_free(&xw);
        llm_tensor_free(&y);

        llm_rng_seed(&srng, 19);
        ok = ok && llm_demo_ok("ch19", llm_params_init(&sp, &err), &err)
                && llm_demo_ok("ch19",
                               llm_linear_init(&sq, &sp, "square", 2, 2, 0, &srng, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        memcpy(sp.items[sq.weight].value.data, sq_w, sizeof sq_w);
        ok = ok && llm_demo_ok("ch19", run(&sq, &sp, 1, two, sq_x, NULL, right, &yrank, yshape,
                                           NULL, &err), &err);
        memcpy(sp.items[sq.weight].value.data, sq_wt, sizeof sq_wt);
        ok = ok && llm_demo_ok("ch19", run(&sq, &sp, 1, two, sq_x, NULL, wrong, &yrank, yshape,
                                           NULL, &err), &err);
        printf("square layer x=[1, 0]: y=%s; weight loaded transposed: accepted, y=%s\n",
               matrix(c[0], sizeof c[0], right, 0, 2), matrix(c[1], sizeof c[1], wrong, 0, 2));
        llm_trace_value(&tr, "sq_right", c[0]);
        llm_trace_value(&tr, "sq_wrong", c[1]);
        llm_params_free(&sp);
    }
    {
        const size_t wide[2] = {2, 3}, b2[1] = {2};
        llm_params empty, swapped, narrow;
        llm_linear kept, other;
        llm_tape tape;
        llm_tensor xw, xs;
        llm_var xv, xsv, y, y0;
        llm_rng rng0, spare;
        size_t count0, nodes0;
        char buf[96];

        llm_rng_seed(&spare, 0);
        ok = ok && llm_demo_ok("ch19", llm_params_init(&empty, &err), &err)
                && llm_demo_ok("ch19", llm_params_init(&swapped, &err), &err)
                && llm_demo_ok("ch19", llm_params_init(&narrow, &err), &err)
                && llm_demo_ok("ch19", llm_params_add_xavier(&swapped, "proj.weight", 3, 2, &spare,
                                                             &err), &err)
                && llm_demo_ok("ch19", llm_params_add_const(&swapped, "proj.bias", 1, &proj.d_out,
                                                            0.0, 0, &err), &err)
                && llm_demo_ok("ch19", llm_params_add_xavier(&narrow, "proj.weight", 2, 3, &spare,
                                                             &err), &err)
                && llm_demo_ok("ch19", llm_params_add_const(&narrow, "proj.bias", 1, b2, 0.0, 0,
                                                            &err), &err)
                && llm_demo_ok("ch19", llm_tensor_from(&xw, 2, wide, fix_w, 6, &err), &err)
                && llm_demo_ok("ch19", llm_tensor_zeros(&xs, 0, NULL, &err), &err)
                && llm_demo_ok("ch19", llm_tape_init(&tape, 16, &err), &err)
                && llm_demo_ok("ch19", llm_tape_constant(&tape, &xw, &xv, &err), &err)
                && llm_demo_ok("ch19", llm_tape_constant(&tape, &xs, &xsv, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        memset(&y, 0x5a, sizeof y);
        memcpy(&y0, &y, sizeof y0);
        nodes0 = tape.count;
        llm_demo_refusal(&tr, "x [2, 3] into a 2 -> 3 layer",
                         llm_linear_forward(&proj, &ps, &tape, xv, &y, &err), &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "width_message", err.message);
        llm_demo_refusal(&tr, "a scalar x",
                         llm_linear_forward(&proj, &ps, &tape, xsv, &y, &err), &err);
        llm_demo_refusal(&tr, "an empty list",
                         llm_linear_forward(&proj, &empty, &tape, xv, &y, &err), &err);
        llm_demo_refusal(&tr, "the weight stored [3, 2]",
                         llm_linear_forward(&proj, &swapped, &tape, xv, &y, &err), &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "layout_message", err.message);
        llm_demo_refusal(&tr, "a bias of width 2",
                         llm_linear_forward(&proj, &narrow, &tape, xv, &y, &err), &err);
        llm_demo_refusal(&tr, "no output",
                         llm_linear_forward(&proj, &ps, &tape, xv, NULL, &err), &err);
        ok = ok && llm_demo_ok("ch19",
                               llm_params_add_const(&ps, "head.bias", 1, b2, 0.0, 0, &err), &err);
        count0 = ps.count;
        rng0 = rng;
        memset(&other, 0x5a, sizeof other);           /* a marker, padding included */
        memcpy(&kept, &other, sizeof kept);
        llm_demo_refusal(&tr, "d_out = 0",
                         llm_linear_init(&other, &ps, "head", 2, 0, 1, &rng, &err), &err);
        llm_demo_refusal(&tr, "prefix \"Head\"",
                         llm_linear_init(&other, &ps, "Head", 2, 3, 1, &rng, &err), &err);
        llm_demo_refusal(&tr, "a prefix of 57 characters",
                         llm_linear_init(&other, &ps,
                                         "a_prefix_that_is_far_too_long_to_leave_room_for_weight_xy",
                                         2, 3, 1, &rng, &err), &err);
        llm_demo_refusal(&tr, "prefix \"proj\" again",
                         llm_linear_init(&other, &ps, "proj", 2, 3, 1, &rng, &err), &err);
        llm_demo_refusal(&tr, "\"head\" whose bias name is taken",
                         llm_linear_init(&other, &ps, "head", 2, 3, 1, &rng, &err), &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "rollback_message", err.message);
        ok = ok && memcmp(&other, &kept, sizeof other) == 0;
        printf("after the refusals: output untouched=%s tape unchanged=%s list unchanged=%s"
               " generator unchanged=%s\n", memcmp(&y, &y0, sizeof y) == 0 ? "yes" : "no",
               tape.count == nodes0 ? "yes" : "no", ps.count == count0 ? "yes" : "no",
               rng.state == rng0.state ? "yes" : "no");
        snprintf(buf, sizeof buf, "%s", memcmp(&y, &y0, sizeof y) == 0 && tape.count == nodes0
                 && ps.count == count0 && rng.state == rng0.state ? "yes" : "no");
        llm_trace_value(&tr, "untouched", buf);
        ok = ok && strcmp(buf, "yes") == 0;
        llm_tape_free(&tape);
        llm_tensor_free(&xw);
        llm_tensor_free(&xs);
        llm_params_free(&empty);
        llm_params_free(&swapped);
        llm_params_free(&narrow);
    }
    llm_params_free(&ps);
    return llm_demo_finish(&tr, ok);
}
