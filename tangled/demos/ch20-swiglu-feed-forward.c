/* ch20-swiglu-feed-forward -- the bias-free SwiGLU branch on the tape. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/nn.h"

static void fill_row(llm_trace *tr, const char *table, size_t n, char (*c)[128])
{
    const char *cells[8];
    size_t i;
    for (i = 0; i < n && i < 8; i++)
        cells[i] = c[i];
    llm_trace_row(tr, table, n, cells);
}

/* "[[a, b], [c, d]]" from r rows of c values, row-major. */
static char *matrix(char *buf, size_t size, const double *x, size_t r, size_t c, int dec)
{
    char row[256];
    size_t i, used;
    snprintf(buf, size, "[");
    for (i = 0; i < r; i++) {
        used = strlen(buf);
        snprintf(buf + used, size - used, "%s%s", i > 0 ? ", " : "",
                 llm_fmt_list(row, sizeof row, x + i * c, c, dec));
    }
    used = strlen(buf);
    snprintf(buf + used, size - used, "]");
    return buf;
}
static const double fix_gate[6] = {-1, 0, 1, 0, 1, -1};     /* W_g [2, 3] */
static const double fix_up[6] = {1, 2, 3, 3, 2, 1};         /* W_u [2, 3] */
static const double fix_down[6] = {1, 0, 0, 1, 1, -1};      /* W_2 [3, 2] */
static const double fix_x[4] = {1, 0, 0, 1};                /* X = I_2 */
static const double fix_x_changed[4] = {5, -3, 0, 1};       /* row 0 replaced */
static const double fix_seed[4] = {1, -2, 0.5, 3};          /* C for sum(C (.) Y) */

static void load_fixture(llm_params *ps, const llm_swiglu *ffn)
{
    memcpy(ps->items[ffn->gate].value.data, fix_gate, sizeof fix_gate);
    memcpy(ps->items[ffn->up].value.data, fix_up, sizeof fix_up);
    memcpy(ps->items[ffn->down].value.data, fix_down, sizeof fix_down);
}
static double sigmoid(double x)
{
    return x >= 0.0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

/* x [n, 2] -> a, u, s, h [n, 3] and y [n, 2], with the fixture's weights. */
static void plain_branch(const double *x, size_t n, double *a, double *u, double *s,
                         double *h, double *y)
{
    size_t r, i, j, k;
    for (r = 0; r < n; r++) {
        for (j = 0; j < 3; j++) {
            a[r * 3 + j] = 0.0;
            u[r * 3 + j] = 0.0;
            for (i = 0; i < 2; i++) {
                a[r * 3 + j] += x[r * 2 + i] * fix_gate[i * 3 + j];
                u[r * 3 + j] += x[r * 2 + i] * fix_up[i * 3 + j];
            }
            s[r * 3 + j] = a[r * 3 + j] * sigmoid(a[r * 3 + j]);
            h[r * 3 + j] = s[r * 3 + j] * u[r * 3 + j];
        }
        for (k = 0; k < 2; k++) {
            y[r * 2 + k] = 0.0;
            for (j = 0; j < 3; j++)
                y[r * 2 + k] += h[r * 3 + j] * fix_down[j * 2 + k];
        }
    }
}
static llm_status run_branch(llm_params *ps, const llm_swiglu *ffn, const llm_tensor *x,
                             llm_tensor *gx, const llm_tensor *seed, double *y_out,
                             llm_error *err)
{
    llm_tape tape;
    llm_var xv, yv;
    const llm_tensor *y;
    size_t idx[LLM_MAX_RANK] = {0}, i = 0, k, o;
    llm_status st = llm_tape_init(&tape, 16, err);
    if (st != LLM_OK)
        return st;
    st = gx != NULL ? llm_tape_leaf(&tape, x, gx, &xv, err)
                    : llm_tape_constant(&tape, x, &xv, err);
    if (st == LLM_OK)
        st = llm_swiglu_forward(ffn, ps, &tape, xv, &yv, err);
    if (st == LLM_OK)
        st = llm_tape_value(&tape, yv, &y, err);
    if (st == LLM_OK && y_out != NULL && y->size > 0)
        do {                                   /* row-major, through the strides */
            for (o = y->offset, k = 0; k < y->rank; k++)
                o += idx[k] * y->stride[k];
            y_out[i++] = y->data[o];
        } while (llm_index_next(y->rank, y->shape, idx));
    if (st == LLM_OK && seed != NULL)
        st = llm_tape_backward(&tape, yv, seed, 0, err);
    llm_tape_free(&tape);
    return st;
}

typedef struct ffn_ctx {
    llm_params *ps;
    const llm_swiglu *ffn;
    const llm_tensor *x;
} ffn_ctx;

static llm_status ffn_objective(void *ctx, const llm_tensor *theta, double *value,
                                llm_error *err)
{
    const ffn_ctx *c = ctx;
    double y[4], sum = 0.0;
    size_t i;
    llm_status st = run_branch(c->ps, c->ffn, c->x, NULL, NULL, y, err);
    (void)theta;                   /* theta is c->x or a weight of c->ps */
    if (st != LLM_OK)
        return st;
    for (i = 0; i < 4; i++)
        sum += fix_seed[i] * y[i];
    *value = sum;
    return LLM_OK;
}

int main(int argc, char **argv)
{
    llm_trace tr;
    llm_params ps;
    llm_swiglu ffn;
    llm_error err;
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch20-swiglu-feed-forward", &tr);
    if (status != 0)
        return status;
    printf("chapter=20 swiglu-feed-forward\n");
    if (!llm_demo_ok("ch20", llm_params_init(&ps, &err), &err))
        return llm_demo_finish(&tr, 0);
    {
        static const char *const part[3] = {"gate", "up", "down"};
        llm_rng rng, start, fresh;
        llm_tensor w;
        size_t k, draws = 0, scalars = 0, first = 1, pos[3];
        int same = 1;
        char c[8][128], buf[512];

        llm_rng_seed(&rng, 20);
        start = rng;
        if (!llm_demo_ok("ch20", llm_swiglu_init(&ffn, &ps, "ffn", 2, 3, &rng, &err), &err))
            return llm_demo_finish(&tr, 0);
        while (start.state != rng.state && draws < 1000) {
            start.state += UINT64_C(0x9e3779b97f4a7c15);
            draws++;
        }
        pos[0] = ffn.gate;
        pos[1] = ffn.up;
        pos[2] = ffn.down;
        llm_rng_seed(&fresh, 20);
        for (k = 0; k < 3; k++) {
            const llm_param *p = &ps.items[pos[k]];
            int equal;
            if (!llm_demo_ok("ch20", llm_xavier_uniform(&w, k < 2 ? 2 : 3, k < 2 ? 3 : 2, &fresh,
                                                        &err), &err))
                return llm_demo_finish(&tr, 0);
            equal = w.size == p->value.size
                    && memcmp(w.data, p->value.data, w.size * sizeof w.data[0]) == 0;
            same = same && equal;
            snprintf(c[0], sizeof c[0], "%zu", pos[k]);
            snprintf(c[1], sizeof c[1], "`%s`", p->name);
            llm_fmt_sizes(c[2], sizeof c[2], p->value.shape, p->value.rank);
            snprintf(c[3], sizeof c[3], "%zu–%zu", first, first + p->value.size - 1);
            matrix(c[4], sizeof c[4], p->value.data, p->value.shape[0], p->value.shape[1], 6);
            snprintf(c[5], sizeof c[5], "%s", equal ? "yes" : "no");
            fill_row(&tr, "params", 6, c);
            printf("param %s shape=%s draws=%s same_as_fresh_%s=%s\n  value=%s\n", p->name,
                   c[2], c[3], part[k], c[5], c[4]);
            first += p->value.size;
            scalars += p->value.size;
            llm_tensor_free(&w);
        }
        printf("params=%zu scalars=%zu draws=%zu order=%s\n", ps.count, scalars, draws,
               same ? "gate, up, down" : "different");
        snprintf(buf, sizeof buf, "%zu", scalars);
        llm_trace_value(&tr, "n_scalars", buf);
        snprintf(buf, sizeof buf, "%zu", draws);
        llm_trace_value(&tr, "draws", buf);
        llm_trace_value(&tr, "draw_order", same ? "gate, up, down" : "different");
        ok = ok && same && draws == 18 && scalars == 18;
    }
    {
        const size_t one[1] = {1};
        llm_params other;
        llm_swiglu half, marker;
        llm_rng rng, before;
        llm_param saved;
        llm_status st;
        int rng_same, list_same, layer_same;

        if (!llm_demo_ok("ch20", llm_params_init(&other, &err), &err)
            || !llm_demo_ok("ch20", llm_params_add_const(&other, "mlp.down.weight", 1, one, 0.0, 1,
                                                         &err), &err))
            return llm_demo_finish(&tr, 0);
        saved = other.items[0];
        memset(&half, 0x5a, sizeof half);
        marker = half;
        llm_rng_seed(&rng, 20);
        before = rng;
        st = llm_swiglu_init(&half, &other, "mlp", 2, 3, &rng, &err);
        llm_demo_refusal(&tr, "layer mlp when mlp.down.weight is taken", st, &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "half_message", err.message);
        rng_same = memcmp(&rng, &before, sizeof rng) == 0;
        list_same = other.count == 1 && memcmp(&other.items[0], &saved, sizeof saved) == 0;
        layer_same = memcmp(&half, &marker, sizeof half) == 0;
        printf("after the failed layer: generator=%s list=%s layer=%s\n",
               rng_same ? "unchanged" : "moved", list_same ? "unchanged" : "changed",
               layer_same ? "untouched" : "written");
        llm_trace_value(&tr, "half_rng", rng_same ? "yes" : "no");
        llm_trace_value(&tr, "half_list", list_same ? "yes" : "no");
        ok = ok && st == LLM_ERR_NAME && rng_same && list_same && layer_same;
        llm_params_free(&other);
    }
    {
        const size_t xshape[2] = {2, 2};
        llm_tensor x;
        double y[4], a[6], u[6], s[6], h[6], py[4], diff = 0.0;
        size_t r, j, k;
        char c[8][128], buf[512];
        static const char *const akey[2] = {"a0", "a1"}, *const ukey[2] = {"u0", "u1"};
        static const char *const skey[2] = {"s0", "s1"}, *const hkey[2] = {"h0", "h1"};

        load_fixture(&ps, &ffn);
        if (!llm_demo_ok("ch20", llm_tensor_from(&x, 2, xshape, fix_x, 4, &err), &err)
            || !llm_demo_ok("ch20", run_branch(&ps, &ffn, &x, NULL, NULL, y, &err), &err))
            return llm_demo_finish(&tr, 0);
        plain_branch(fix_x, 2, a, u, s, h, py);
        for (r = 0; r < 2; r++) {
            for (j = 0; j < 3; j++) {
                snprintf(c[0], sizeof c[0], "%zu", r);
                snprintf(c[1], sizeof c[1], "%zu", j);
                llm_fmt(c[2], sizeof c[2], a[r * 3 + j], 0);
                llm_fmt(c[3], sizeof c[3], sigmoid(a[r * 3 + j]), 6);
                llm_fmt(c[4], sizeof c[4], s[r * 3 + j], 6);
                llm_fmt(c[5], sizeof c[5], u[r * 3 + j], 0);
                llm_fmt(c[6], sizeof c[6], h[r * 3 + j], 6);
                fill_row(&tr, "units", 7, c);
            }
            printf("row %zu a=%s", r, llm_fmt_list(buf, sizeof buf, a + r * 3, 3, 0));
            llm_trace_value(&tr, akey[r], buf);
            printf(" u=%s", llm_fmt_list(buf, sizeof buf, u + r * 3, 3, 0));
            llm_trace_value(&tr, ukey[r], buf);
            printf("\n  silu(a)=%s", llm_fmt_list(buf, sizeof buf, s + r * 3, 3, 6));
            llm_trace_value(&tr, skey[r], buf);
            printf(" h=%s\n", llm_fmt_list(buf, sizeof buf, h + r * 3, 3, 6));
            llm_trace_value(&tr, hkey[r], buf);
            for (k = 0; k < 2; k++) {
                snprintf(c[0], sizeof c[0], "%zu", r);
                snprintf(c[1], sizeof c[1], "%zu", k);
                llm_fmt(c[2], sizeof c[2], y[r * 2 + k], 12);
                fill_row(&tr, "output", 3, c);
                if (fabs(y[r * 2 + k] - py[r * 2 + k]) > diff)
                    diff = fabs(y[r * 2 + k] - py[r * 2 + k]);
            }
        }
        printf("y=%s\n", matrix(buf, sizeof buf, y, 2, 2, 12));
        llm_trace_value(&tr, "y", buf);
        llm_trace_value(&tr, "y0", llm_fmt_list(buf, sizeof buf, y, 2, 12));
        llm_trace_value(&tr, "y1", llm_fmt_list(buf, sizeof buf, y + 2, 2, 12));
        snprintf(buf, sizeof buf, "%.2e", diff);
        printf("tape against plain loops: largest difference=%s\n", buf);
        llm_trace_value(&tr, "plain_diff", buf);
        ok = ok && diff <= 1e-15;
        llm_tensor_free(&x);
    }
    {
        static const double xs[5] = {-1000, -1, 0, 1, 1000}, ones[5] = {1, 1, 1, 1, 1};
        const size_t five[1] = {5};
        llm_tensor x, g, seed;
        llm_tape tape;
        llm_var xv, sv;
        const llm_tensor *s;
        double val[5], big[2], dbig[2];
        size_t k;
        int finite = 1;
        char c[8][128], buf[256];

        if (!llm_demo_ok("ch20", llm_tensor_from(&x, 1, five, xs, 5, &err), &err)
            || !llm_demo_ok("ch20", llm_tensor_zeros(&g, 1, five, &err), &err)
            || !llm_demo_ok("ch20", llm_tensor_from(&seed, 1, five, ones, 5, &err), &err)
            || !llm_demo_ok("ch20", llm_tape_init(&tape, 4, &err), &err))
            return llm_demo_finish(&tr, 0);
        ok = ok && llm_demo_ok("ch20", llm_tape_leaf(&tape, &x, &g, &xv, &err), &err)
                && llm_demo_ok("ch20", llm_tape_silu(&tape, xv, &sv, &err), &err)
                && llm_demo_ok("ch20", llm_tape_value(&tape, sv, &s, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        for (k = 0; k < 5; k++)
            val[k] = s->data[s->offset + k * s->stride[0]];
        ok = ok && llm_demo_ok("ch20", llm_tape_backward(&tape, sv, &seed, 0, &err), &err);
        for (k = 0; k < 5; k++) {
            finite = finite && isfinite(val[k]) && isfinite(g.data[k]);
            llm_fmt(c[0], sizeof c[0], xs[k], 0);
            llm_fmt(c[1], sizeof c[1], val[k], 12);
            llm_fmt(c[2], sizeof c[2], g.data[k], 12);
            fill_row(&tr, "silu", 3, c);
            printf("silu(%s)=%s slope=%s\n", c[0], c[1], c[2]);
        }
        llm_trace_value(&tr, "silu_m1", llm_fmt(buf, sizeof buf, val[1], 12));
        big[0] = val[0];
        big[1] = val[4];
        dbig[0] = g.data[0];
        dbig[1] = g.data[4];
        llm_trace_value(&tr, "silu_big", llm_fmt_list(buf, sizeof buf, big, 2, 6));
        llm_trace_value(&tr, "dsilu_big", llm_fmt_list(buf, sizeof buf, dbig, 2, 6));
        printf("silu at -1000 and 1000 finite=%s\n", finite ? "yes" : "no");
        llm_trace_value(&tr, "big_finite", finite ? "yes" : "no");
        ok = ok && finite;
        llm_tape_free(&tape);
        llm_tensor_free(&x);
        llm_tensor_free(&g);
        llm_tensor_free(&seed);
    }
    {
        const size_t xshape[2] = {2, 2};
        llm_tensor x, x2;
        double y[4], y2[4];
        int row1_same, row0_changed;
        char buf[256];

        if (!llm_demo_ok("ch20", llm_tensor_from(&x, 2, xshape, fix_x, 4, &err), &err)
            || !llm_demo_ok("ch20", llm_tensor_from(&x2, 2, xshape, fix_x_changed, 4, &err), &err)
            || !llm_demo_ok("ch20", run_branch(&ps, &ffn, &x, NULL, NULL, y, &err), &err)
            || !llm_demo_ok("ch20", run_branch(&ps, &ffn, &x2, NULL, NULL, y2, &err), &err))
            return llm_demo_finish(&tr, 0);
        row1_same = memcmp(y + 2, y2 + 2, 2 * sizeof y[0]) == 0;
        row0_changed = y[0] != y2[0] || y[1] != y2[1];
        printf("x row 0 -> [5, -3]: y row 0=%s", llm_fmt_list(buf, sizeof buf, y2, 2, 12));
        llm_trace_value(&tr, "y0_changed", buf);
        printf("\n  y row 1=%s %s\n", llm_fmt_list(buf, sizeof buf, y2 + 2, 2, 12),
               row1_same ? "bit-identical" : "changed");
        llm_trace_value(&tr, "rowwise", row1_same ? "bit-identical" : "changed");
        ok = ok && row1_same && row0_changed;
        llm_tensor_free(&x);
        llm_tensor_free(&x2);
    }
    {
        static const char *const label[4] = {"W_g", "W_u", "W_2", "X"};
        const size_t xshape[2] = {2, 2};
        llm_tensor x, gx, seed;
        llm_tensor *theta[4];
        const double *analytic[4];
        size_t coords[6] = {0, 1, 2, 3, 4, 5}, k, total = 0, failed = 0;
        double worst_all = 0.0;
        ffn_ctx ctx;
        char c[8][128], buf[256];

        if (!llm_demo_ok("ch20", llm_tensor_from(&x, 2, xshape, fix_x, 4, &err), &err)
            || !llm_demo_ok("ch20", llm_tensor_zeros(&gx, 2, xshape, &err), &err)
            || !llm_demo_ok("ch20", llm_tensor_from(&seed, 2, xshape, fix_seed, 4, &err), &err))
            return llm_demo_finish(&tr, 0);
        for (k = 0; k < ps.count; k++)
            memset(ps.items[k].grad.data, 0, ps.items[k].grad.size * sizeof(double));
        if (!llm_demo_ok("ch20", run_branch(&ps, &ffn, &x, &gx, &seed, NULL, &err), &err))
            return llm_demo_finish(&tr, 0);
        theta[0] = &ps.items[ffn.gate].value;
        theta[1] = &ps.items[ffn.up].value;
        theta[2] = &ps.items[ffn.down].value;
        theta[3] = &x;
        analytic[0] = ps.items[ffn.gate].grad.data;
        analytic[1] = ps.items[ffn.up].grad.data;
        analytic[2] = ps.items[ffn.down].grad.data;
        analytic[3] = gx.data;
        ctx.ps = &ps;
        ctx.ffn = &ffn;
        ctx.x = &x;
        printf("grad W_2=%s\n", matrix(buf, sizeof buf, analytic[2], 3, 2, 12));
        llm_trace_value(&tr, "grad_down", buf);
        for (k = 0; k < 4; k++) {
            double worst = 0.0;
            size_t failures = 0;
            if (!llm_demo_ok("ch20", llm_gradient_check(ffn_objective, &ctx, theta[k], analytic[k],
                                                        coords, theta[k]->size, 1e-6, 3e-6, &worst,
                                                        &failures, &err), &err))
                return llm_demo_finish(&tr, 0);
            snprintf(c[0], sizeof c[0], "$%s$", label[k]);
            llm_fmt_sizes(c[1], sizeof c[1], theta[k]->shape, theta[k]->rank);
            snprintf(c[2], sizeof c[2], "%zu", theta[k]->size);
            snprintf(c[3], sizeof c[3], "%.2e", worst);
            snprintf(c[4], sizeof c[4], "%zu", failures);
            fill_row(&tr, "gradcheck", 5, c);
            printf("gradcheck %s coords=%zu worst=%s failures=%zu\n", label[k], theta[k]->size,
                   c[3], failures);
            total += theta[k]->size;
            failed += failures;
            if (worst > worst_all)
                worst_all = worst;
        }
        snprintf(buf, sizeof buf, "%zu", total);
        llm_trace_value(&tr, "gc_coords", buf);
        snprintf(buf, sizeof buf, "%.2e", worst_all);
        llm_trace_value(&tr, "gc_worst", buf);
        snprintf(buf, sizeof buf, "%zu", failed);
        llm_trace_value(&tr, "gc_failures", buf);
        printf("gradcheck h=1e-06 tolerance=3e-06 coords=%zu failures=%zu verdict=%s\n", total,
               failed, failed == 0 ? "pass" : "fail");
        llm_trace_value(&tr, "gc_verdict", failed == 0 ? "pass" : "fail");
        ok = ok && failed == 0 && total == 22;
        llm_tensor_free(&x);
        llm_tensor_free(&gx);
        llm_tensor_free(&seed);
    }
    {
        const size_t xshape[2] = {2, 2}, wide[2] = {2, 3};
        static const double zeros[6] = {0, 0, 0, 0, 0, 0};
        llm_swiglu bad, unused;
        llm_tensor x, xw, scalar;
        llm_tape tape;
        llm_var xv, xwv, sv, stale, y, marker;
        llm_rng rng;
        size_t count = ps.count;
        char longp[61];
        int untouched;

        memset(longp, 'p', sizeof longp - 1);
        longp[sizeof longp - 1] = '\0';
        llm_rng_seed(&rng, 20);
        llm_demo_refusal(&tr, "init with no prefix",
                         llm_swiglu_init(&unused, &ps, NULL, 2, 3, &rng, &err), &err);
        llm_demo_refusal(&tr, "init with d_ff 0",
                         llm_swiglu_init(&unused, &ps, "ffn2", 2, 0, &rng, &err), &err);
        llm_demo_refusal(&tr, "init with a 60-character prefix",
                         llm_swiglu_init(&unused, &ps, longp, 2, 3, &rng, &err), &err);
        llm_demo_refusal(&tr, "init with prefix FFN",
                         llm_swiglu_init(&unused, &ps, "FFN", 2, 3, &rng, &err), &err);
        llm_demo_refusal(&tr, "init with prefix ffn again",
                         llm_swiglu_init(&unused, &ps, "ffn", 2, 3, &rng, &err), &err);

        memset(&marker, 0x5a, sizeof marker);
        y = marker;
        if (!llm_demo_ok("ch20", llm_tensor_from(&x, 2, xshape, fix_x, 4, &err), &err)
            || !llm_demo_ok("ch20", llm_tensor_from(&xw, 2, wide, zeros, 6, &err), &err)
            || !llm_demo_ok("ch20", llm_tensor_zeros(&scalar, 0, NULL, &err), &err)
            || !llm_demo_ok("ch20", llm_tape_init(&tape, 16, &err), &err)
            || !llm_demo_ok("ch20", llm_tape_constant(&tape, &x, &stale, &err), &err)
            || !llm_demo_ok("ch20", llm_tape_reset(&tape, &err), &err)
            || !llm_demo_ok("ch20", llm_tape_constant(&tape, &x, &xv, &err), &err)
            || !llm_demo_ok("ch20", llm_tape_constant(&tape, &xw, &xwv, &err), &err)
            || !llm_demo_ok("ch20", llm_tape_constant(&tape, &scalar, &sv, &err), &err))
            return llm_demo_finish(&tr, 0);
        llm_demo_refusal(&tr, "forward with no tape",
                         llm_swiglu_forward(&ffn, &ps, NULL, xv, &y, &err), &err);
        llm_demo_refusal(&tr, "forward of a scalar",
                         llm_swiglu_forward(&ffn, &ps, &tape, sv, &y, &err), &err);
        llm_demo_refusal(&tr, "forward of x [2, 3]",
                         llm_swiglu_forward(&ffn, &ps, &tape, xwv, &y, &err), &err);
        llm_demo_refusal(&tr, "forward of an x from before a reset",
                         llm_swiglu_forward(&ffn, &ps, &tape, stale, &y, &err), &err);
        bad = ffn;
        bad.down = 7;
        llm_demo_refusal(&tr, "forward with the down weight at position 7 of 3",
                         llm_swiglu_forward(&bad, &ps, &tape, xv, &y, &err), &err);
        bad = ffn;
        bad.gate = ffn.down;
        bad.down = ffn.gate;
        llm_demo_refusal(&tr, "forward with gate and down swapped",
                         llm_swiglu_forward(&bad, &ps, &tape, xv, &y, &err), &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "swap_message", err.message);
        untouched = memcmp(&y, &marker, sizeof y) == 0 && ps.count == count;
        printf("after the refusals: output and list untouched=%s\n", untouched ? "yes" : "no");
        llm_trace_value(&tr, "untouched", untouched ? "yes" : "no");
        ok = ok && untouched;
        llm_tape_free(&tape);
        llm_tensor_free(&x);
        llm_tensor_free(&xw);
        llm_tensor_free(&scalar);
    }
    llm_params_free(&ps);
    return llm_demo_finish(&tr, ok);
}
