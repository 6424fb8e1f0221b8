/* ch26-qkv-projections -- three bias-free projections of one sequence. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/attention.h"
#include "llm/evidence.h"
#include "llm/gradcheck.h"

static void fill_row(llm_trace *tr, const char *table, size_t n, char (*c)[128])
{
    const char *cells[8];
    size_t i;
    for (i = 0; i < n && i < 8; i++)
        cells[i] = c[i];
    llm_trace_row(tr, table, n, cells);
}

/* "[[a, b], [c, d]]" from r rows of c values, row-major; one row without
   the outer brackets, "[a, b]", when r is 0. */
static char *matrix(char *buf, size_t size, const double *x, size_t r, size_t c)
{
    char one[64];
    size_t i, j, used, nr = r == 0 ? 1 : r;
    snprintf(buf, size, "%s", r == 0 ? "" : "[");
    for (i = 0; i < nr; i++)
        for (j = 0; j < c; j++) {
            used = strlen(buf);
            snprintf(buf + used, size - used, "%s%s%s%s", j == 0 && i > 0 ? ", " : "",
                     j == 0 ? "[" : ", ", llm_fmt_trim(one, sizeof one, x[i * c + j], 12),
                     j + 1 == c ? "]" : "");
        }
    used = strlen(buf);
    if (r > 0)
        snprintf(buf + used, size - used, "]");
    return buf;
}

/* A [r, c] matrix as a trace table, one row per row, for the figure. */
static void trace_matrix(llm_trace *tr, const char *table, const double *x, size_t r,
                         size_t c)
{
    char cell[8][128];
    size_t i, j;
    for (i = 0; i < r; i++) {
        for (j = 0; j < c && j < 8; j++)
            llm_fmt_trim(cell[j], sizeof cell[j], x[i * c + j], 12);
        fill_row(tr, table, c, cell);
    }
}
static const double fix_x[6] = {1, 2, -1, 0, 1, 2};         /* X [2, 3] */
static const double fix_wq[6] = {1, 0, 0, 1, 1, -1};        /* W_q [3, 2] */
static const double fix_wk[6] = {0, 1, 1, 0, -1, 1};        /* W_k [3, 2] */
static const double fix_wv[6] = {1, 1, 1, -1, 0, 2};        /* W_v [3, 2] */
static const double fix_cq[4] = {1, -1, 2, 0.5};            /* C_q for sum(C_q (.) Q) */
static const double fix_ck[4] = {0.5, 1, -1, 2};            /* C_k */
static const double fix_cv[4] = {-2, 1, 1.5, -0.5};         /* C_v */

static void load_fixture(llm_params *ps, const llm_qkv *qkv)
{
    memcpy(ps->items[qkv->query.weight].value.data, fix_wq, sizeof fix_wq);
    memcpy(ps->items[qkv->key.weight].value.data, fix_wk, sizeof fix_wk);
    memcpy(ps->items[qkv->value.weight].value.data, fix_wv, sizeof fix_wv);
}
/* Values of v, row-major, into out; returns the count. */
static size_t read_var(const llm_tape *tape, llm_var v, double *out, size_t *shape,
                       size_t *rank)
{
    const llm_tensor *t;
    size_t idx[LLM_MAX_RANK] = {0}, i = 0, k, o;
    if (llm_tape_value(tape, v, &t, NULL) != LLM_OK)
        return 0;
    if (shape != NULL) {
        memcpy(shape, t->shape, t->rank * sizeof *shape);
        *rank = t->rank;
    }
    if (t->size > 0 && out != NULL)
        do {
            for (o = t->offset, k = 0; k < t->rank; k++)
                o += idx[k] * t->stride[k];
            out[i++] = t->data[o];
        } while (llm_index_next(t->rank, t->shape, idx));
    return i;
}

/* x through the projections; q, k, v's values into out[0..], out[n..],
   out[2n..] (n values each) and q's shape into qshape. With gx, backward
   from L = sum(C_q Q) + sum(C_k K) + sum(C_v V) adds into the list's grads
   and gx (x must then be [2, 3]). */
static llm_status run_qkv(llm_params *ps, const llm_qkv *qkv, const llm_tensor *x,
                          llm_tensor *gx, double *out, size_t n, size_t *qshape,
                          size_t *qrank, llm_error *err)
{
    static const size_t two[2] = {2, 2};
    const double *const seeds[3] = {fix_cq, fix_ck, fix_cv};
    llm_tape tape;
    llm_tensor c;
    llm_var xv, qkvv[3], cv, prod, part, loss = {0, 0};
    size_t j;
    llm_status st = llm_tape_init(&tape, 32, err);
    if (st != LLM_OK)
        return st;
    st = gx != NULL ? llm_tape_leaf(&tape, x, gx, &xv, err)
                    : llm_tape_constant(&tape, x, &xv, err);
    if (st == LLM_OK)
        st = llm_qkv_forward(qkv, ps, &tape, xv, &qkvv[0], &qkvv[1], &qkvv[2], err);
    for (j = 0; j < 3 && st == LLM_OK && out != NULL; j++)
        read_var(&tape, qkvv[j], out + j * n, j == 0 ? qshape : NULL, qrank);
    for (j = 0; j < 3 && st == LLM_OK && gx != NULL; j++) {
        st = llm_tensor_from(&c, 2, two, seeds[j], 4, err);
        if (st != LLM_OK)
            break;
        st = llm_tape_constant(&tape, &c, &cv, err);
        llm_tensor_free(&c);
        if (st == LLM_OK)
            st = llm_tape_mul(&tape, qkvv[j], cv, &prod, err);
        if (st == LLM_OK)
            st = llm_tape_sum_all(&tape, prod, &part, err);
        if (st == LLM_OK)
            st = j == 0 ? LLM_OK : llm_tape_add(&tape, loss, part, &part, err);
        loss = part;
    }
    if (st == LLM_OK && gx != NULL)
        st = llm_tape_backward(&tape, loss, NULL, 0, err);
    llm_tape_free(&tape);
    return st;
}

typedef struct qkv_ctx {
    llm_params *ps;
    const llm_qkv *qkv;
    const llm_tensor *x;
} qkv_ctx;

/* Chapter 13's objective: L = sum(C_q Q) + sum(C_k K) + sum(C_v V), the
   three sums in that order, each row-major. */
static llm_status qkv_objective(void *ctx, const llm_tensor *theta, double *value,
                                llm_error *err)
{
    const qkv_ctx *c = ctx;
    double out[12], sum = 0.0, part;
    size_t i, j;
    llm_status st = run_qkv(c->ps, c->qkv, c->x, NULL, out, 4, NULL, NULL, err);
    (void)theta;                   /* theta is c->x or a weight of c->ps */
    if (st != LLM_OK)
        return st;
    for (j = 0; j < 3; j++) {
        const double *cj = j == 0 ? fix_cq : j == 1 ? fix_ck : fix_cv;
        for (part = 0.0, i = 0; i < 4; i++)
            part += cj[i] * out[j * 4 + i];
        sum += part;
    }
    *value = sum;
    return LLM_OK;
}

int main(int argc, char **argv)
{
    llm_trace tr;
    llm_params ps;
    llm_qkv qkv;
    llm_error err;
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch26-qkv-projections", &tr);
    if (status != 0)
        return status;
    printf("chapter=26 qkv-projections\n");
    if (!llm_demo_ok("ch26", llm_params_init(&ps, &err), &err))
        return llm_demo_finish(&tr, 0);
    {
        static const char *const part[3] = {"query", "key", "value"};
        llm_params again;
        llm_qkv twin;
        llm_rng rng, start, fresh, rng2;
        llm_tensor w;
        size_t k, draws = 0, scalars = 0, first = 1, pos[3];
        int same = 1, replay;
        char c[8][128], buf[512];
        llm_rng_seed(&rng, 26);
        start = rng;
        if (!llm_demo_ok("ch26", llm_qkv_init(&qkv, &ps, "attn", 3, 2, &rng, &err), &err))
            return llm_demo_finish(&tr, 0);
        while (start.state != rng.state && draws < 1000) {
            start.state += UINT64_C(0x9e3779b97f4a7c15);
            draws++;
        }
        pos[0] = qkv.query.weight;
        pos[1] = qkv.key.weight;
        pos[2] = qkv.value.weight;
        llm_rng_seed(&fresh, 26);
        for (k = 0; k < 3; k++) {
            const llm_param *p = &ps.items[pos[k]];
            int equal;
            if (!llm_demo_ok("ch26", llm_xavier_uniform(&w, 3, 2, &fresh, &err), &err))
                return llm_demo_finish(&tr, 0);
            equal = w.size == p->value.size
                    && memcmp(w.data, p->value.data, w.size * sizeof w.data[0]) == 0;
            same = same && equal;
            snprintf(c[0], sizeof c[0], "%zu", pos[k]);
            snprintf(c[1], sizeof c[1], "`%s`", p->name);
            llm_fmt_sizes(c[2], sizeof c[2], p->value.shape, p->value.rank);
            snprintf(c[3], sizeof c[3], "%zu–%zu", first, first + p->value.size - 1);
            llm_fmt_list(c[4], sizeof c[4], p->value.data, p->value.size, 6);
            snprintf(c[5], sizeof c[5], "%s", equal ? "yes" : "no");
            fill_row(&tr, "params", 6, c);
            printf("param %s shape=%s draws=%s same_as_fresh_%s=%s\n  value=%s\n", p->name,
                   c[2], c[3], part[k], c[5], c[4]);
            first += p->value.size;
            scalars += p->value.size;
            llm_tensor_free(&w);
        }
        printf("params=%zu scalars=%zu draws=%zu order=%s\n", ps.count, scalars, draws,
               same ? "query, key, value" : "different");
        snprintf(buf, sizeof buf, "%zu", scalars);
        llm_trace_value(&tr, "n_scalars", buf);
        snprintf(buf, sizeof buf, "%zu", draws);
        llm_trace_value(&tr, "draws", buf);
        llm_trace_value(&tr, "draw_order", same ? "query, key, value" : "different");
        ok = ok && same && draws == 18 && scalars == 18 && ps.count == 3;

        /* replay: the same seed, a second list */
        llm_rng_seed(&rng2, 26);
        if (!llm_demo_ok("ch26", llm_params_init(&again, &err), &err)
            || !llm_demo_ok("ch26", llm_qkv_init(&twin, &again, "attn", 3, 2, &rng2, &err), &err))
            return llm_demo_finish(&tr, 0);
        replay = again.count == ps.count && rng2.state == rng.state
                 && twin.query.weight == qkv.query.weight && twin.key.weight == qkv.key.weight
                 && twin.value.weight == qkv.value.weight;
        for (k = 0; replay && k < ps.count; k++)
            replay = strcmp(again.items[k].name, ps.items[k].name) == 0
                     && memcmp(again.items[k].value.data, ps.items[k].value.data,
                               ps.items[k].value.size * sizeof(double)) == 0;
        printf("replay seed=26: %s\n", replay ? "bit-identical" : "different");
        llm_trace_value(&tr, "replay", replay ? "bit-identical" : "different");
        ok = ok && replay;
        llm_params_free(&again);
    }
    {
        const size_t one[1] = {1};
        llm_params other;
        llm_qkv half, marker;
        llm_rng rng, before;
        llm_param saved;
        llm_status st;
        int rng_same, list_same, layer_same;
        if (!llm_demo_ok("ch26", llm_params_init(&other, &err), &err)
            || !llm_demo_ok("ch26", llm_params_add_const(&other, "head.value.weight", 1, one, 0.0,
                                                         1, &err), &err))
            return llm_demo_finish(&tr, 0);
        saved = other.items[0];
        memset(&half, 0x5a, sizeof half);
        marker = half;
        llm_rng_seed(&rng, 26);
        before = rng;
        st = llm_qkv_init(&half, &other, "head", 3, 2, &rng, &err);
        llm_demo_refusal(&tr, "projections head when head.value.weight is taken", st, &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "half_message", err.message);
        rng_same = memcmp(&rng, &before, sizeof rng) == 0;
        list_same = other.count == 1 && memcmp(&other.items[0], &saved, sizeof saved) == 0;
        layer_same = memcmp(&half, &marker, sizeof half) == 0;
        printf("after the failed construction: generator=%s list=%s projections=%s\n",
               rng_same ? "unchanged" : "moved", list_same ? "unchanged" : "changed",
               layer_same ? "untouched" : "written");
        llm_trace_value(&tr, "half_rng", rng_same ? "yes" : "no");
        llm_trace_value(&tr, "half_list", list_same ? "yes" : "no");
        ok = ok && st == LLM_ERR_NAME && rng_same && list_same && layer_same;
        llm_params_free(&other);
    }
    {
        static const double want[12] = {0, 3, 2, -1, 3, 0, -1, 2, 3, -3, 1, 3};
        static const char *const key[3] = {"q", "k", "v"}, *const tab[3] = {"mat_q", "mat_k",
                                                                          "mat_v"};
        const size_t xshape[2] = {2, 3};
        llm_tensor x;
        double out[12];
        size_t j, n;
        int match;
        char c[8][128], buf[256];
        load_fixture(&ps, &qkv);
        if (!llm_demo_ok("ch26", llm_tensor_from(&x, 2, xshape, fix_x, 6, &err), &err)
            || !llm_demo_ok("ch26", run_qkv(&ps, &qkv, &x, NULL, out, 4, NULL, NULL, &err), &err))
            return llm_demo_finish(&tr, 0);
        printf("x=%s\n", matrix(buf, sizeof buf, fix_x, 2, 3));
        trace_matrix(&tr, "mat_x", fix_x, 2, 3);
        trace_matrix(&tr, "mat_wq", fix_wq, 3, 2);
        trace_matrix(&tr, "mat_wk", fix_wk, 3, 2);
        trace_matrix(&tr, "mat_wv", fix_wv, 3, 2);
        for (j = 0; j < 3; j++) {
            printf("%s=%s\n", key[j], matrix(buf, sizeof buf, out + 4 * j, 2, 2));
            llm_trace_value(&tr, key[j], buf);
            trace_matrix(&tr, tab[j], out + 4 * j, 2, 2);
        }
        for (n = 0; n < 2; n++) {           /* one row per position: x_n, q_n, k_n, v_n */
            snprintf(c[0], sizeof c[0], "%zu", n);
            matrix(c[1], sizeof c[1], fix_x + 3 * n, 0, 3);
            for (j = 0; j < 3; j++)
                matrix(c[2 + j], sizeof c[2 + j], out + 4 * j + 2 * n, 0, 2);
            fill_row(&tr, "rows", 5, c);
        }
        {                                  /* scores q_n . k_m, and with K = Q */
            double sc[4], sh[4];
            size_t m, d;
            for (n = 0; n < 2; n++)
                for (m = 0; m < 2; m++) {
                    sc[n * 2 + m] = 0.0;
                    sh[n * 2 + m] = 0.0;
                    for (d = 0; d < 2; d++) {
                        sc[n * 2 + m] += out[n * 2 + d] * out[4 + m * 2 + d];
                        sh[n * 2 + m] += out[n * 2 + d] * out[m * 2 + d];
                    }
                }
            printf("scores q.k=%s", matrix(buf, sizeof buf, sc, 2, 2));
            llm_trace_value(&tr, "scores", buf);
            printf(" with W_k = W_q: %s\n", matrix(buf, sizeof buf, sh, 2, 2));
            llm_trace_value(&tr, "scores_shared", buf);
            llm_trace_value(&tr, "score_11", llm_fmt_trim(buf, sizeof buf, sc[3], 12));
        }
        match = memcmp(out, want, sizeof want) == 0;
        printf("matches the digest: %s\n", match ? "yes" : "no");
        llm_trace_value(&tr, "digest_match", match ? "yes" : "no");
        ok = ok && match;
        llm_tensor_free(&x);
    }
    {
        const size_t xshape[2] = {2, 3};
        llm_tensor x;
        llm_tensor *wk = &ps.items[qkv.key.weight].value;
        double out[12], out2[12];
        int q_same, v_same, k_changed;
        char buf[256];
        if (!llm_demo_ok("ch26", llm_tensor_from(&x, 2, xshape, fix_x, 6, &err), &err)
            || !llm_demo_ok("ch26", run_qkv(&ps, &qkv, &x, NULL, out, 4, NULL, NULL, &err), &err))
            return llm_demo_finish(&tr, 0);
        wk->data[0] = 10.0;                            /* W_k[0, 0]: 0 -> 10 */
        if (!llm_demo_ok("ch26", run_qkv(&ps, &qkv, &x, NULL, out2, 4, NULL, NULL, &err), &err))
            return llm_demo_finish(&tr, 0);
        wk->data[0] = fix_wk[0];
        q_same = memcmp(out, out2, 4 * sizeof out[0]) == 0;
        k_changed = memcmp(out + 4, out2 + 4, 4 * sizeof out[0]) != 0;
        v_same = memcmp(out + 8, out2 + 8, 4 * sizeof out[0]) == 0;
        printf("W_k[0, 0] -> 10: k=%s q %s v %s\n", matrix(buf, sizeof buf, out2 + 4, 2, 2),
               q_same ? "bit-identical" : "changed", v_same ? "bit-identical" : "changed");
        llm_trace_value(&tr, "k_changed", buf);
        llm_trace_value(&tr, "qv_same", q_same && v_same ? "bit-identical" : "changed");
        ok = ok && q_same && v_same && k_changed;
        llm_tensor_free(&x);
    }
    {
        static const size_t shapes[6][3] = {{2, 3}, {1, 2, 3}, {2, 1, 3}, {3}, {0, 3},
                                            {2, 0, 3}};
        static const size_t ranks[6] = {2, 3, 3, 1, 2, 3}, sizes[6] = {6, 6, 6, 3, 0, 0};
        llm_tensor x;
        double out[12], ref[12];
        size_t s, qshape[LLM_MAX_RANK], qrank = 0, j, n;
        int all_kept = 1;
        char c[8][128];
        for (s = 0; s < 6; s++) {
            int kept, same;
            n = sizes[s] / 3 * 2;                        /* values in each of q, k, v */
            if (!llm_demo_ok("ch26",
                             llm_tensor_from(&x, ranks[s], shapes[s], fix_x, sizes[s], &err), &err)
                || !llm_demo_ok("ch26",
                                run_qkv(&ps, &qkv, &x, NULL, out, n, qshape, &qrank, &err), &err))
                return llm_demo_finish(&tr, 0);
            if (s == 0)
                memcpy(ref, out, sizeof ref);
            kept = qrank == ranks[s] && qshape[qrank - 1] == 2
                   && memcmp(qshape, shapes[s], (qrank - 1) * sizeof qshape[0]) == 0;
            same = 1;                    /* each row as the same row of the [2, 3] input */
            for (j = 0; j < 3; j++)
                same = same && memcmp(out + j * n, ref + j * 4, n * sizeof out[0]) == 0;
            all_kept = all_kept && kept && same;
            llm_fmt_sizes(c[0], sizeof c[0], shapes[s], ranks[s]);
            llm_fmt_sizes(c[1], sizeof c[1], qshape, qrank);
            if (n == 0)
                snprintf(c[2], sizeof c[2], "(none)");
            else
                matrix(c[2], sizeof c[2], out, n == 2 ? 0 : n / 2, 2);
            snprintf(c[3], sizeof c[3], "%s", n == 0 ? "(nothing to compare)"
                                              : same ? "yes" : "no");
            fill_row(&tr, "shapes", 4, c);
            printf("x %s -> q, k, v %s q=%s same rows=%s\n", c[0], c[1], c[2], c[3]);
            if (s == 5)
                llm_trace_value(&tr, "empty_shape", c[1]);
            if (s == 3)
                llm_trace_value(&tr, "vec_shape", c[1]);
            llm_tensor_free(&x);
        }
        printf("leading axes kept, rows unchanged: %s\n", all_kept ? "yes" : "no");
        llm_trace_value(&tr, "shapes_kept", all_kept ? "yes" : "no");
        ok = ok && all_kept;
    }
    {
        static const char *const label[4] = {"W_q", "W_k", "W_v", "X"};
        const size_t xshape[2] = {2, 3};
        llm_tensor x, gx;
        llm_tensor *theta[4];
        const double *analytic[4];
        size_t coords[6] = {0, 1, 2, 3, 4, 5}, k, total = 0, failed = 0;
        double worst_all = 0.0;
        qkv_ctx ctx;
        char c[8][128], buf[256];
        if (!llm_demo_ok("ch26", llm_tensor_from(&x, 2, xshape, fix_x, 6, &err), &err)
            || !llm_demo_ok("ch26", llm_tensor_zeros(&gx, 2, xshape, &err), &err))
            return llm_demo_finish(&tr, 0);
        for (k = 0; k < ps.count; k++)
            memset(ps.items[k].grad.data, 0, ps.items[k].grad.size * sizeof(double));
        if (!llm_demo_ok("ch26", run_qkv(&ps, &qkv, &x, &gx, NULL, 4, NULL, NULL, &err), &err))
            return llm_demo_finish(&tr, 0);
        theta[0] = &ps.items[qkv.query.weight].value;
        theta[1] = &ps.items[qkv.key.weight].value;
        theta[2] = &ps.items[qkv.value.weight].value;
        theta[3] = &x;
        analytic[0] = ps.items[qkv.query.weight].grad.data;
        analytic[1] = ps.items[qkv.key.weight].grad.data;
        analytic[2] = ps.items[qkv.value.weight].grad.data;
        analytic[3] = gx.data;
        ctx.ps = &ps;
        ctx.qkv = &qkv;
        ctx.x = &x;
        for (k = 0; k < 4; k++) {
            double worst = 0.0;
            size_t failures = 0;
            if (!llm_demo_ok("ch26", llm_gradient_check(qkv_objective, &ctx, theta[k], analytic[k],
                                                        coords, theta[k]->size, 1e-6, 2e-6, &worst,
                                                        &failures, &err), &err))
                return llm_demo_finish(&tr, 0);
            snprintf(c[0], sizeof c[0], "$%s$", label[k]);
            matrix(c[1], sizeof c[1], analytic[k], theta[k]->shape[0], theta[k]->shape[1]);
            snprintf(c[2], sizeof c[2], "%zu", theta[k]->size);
            snprintf(c[3], sizeof c[3], "%.2e", worst);
            snprintf(c[4], sizeof c[4], "%zu", failures);
            fill_row(&tr, "grads", 5, c);
            printf("grad %s=%s\n  coords=%zu worst=%s failures=%zu\n", label[k], c[1],
                   theta[k]->size, c[3], failures);
            snprintf(buf, sizeof buf, "grad_%s", k == 0 ? "wq" : k == 1 ? "wk" : k == 2 ? "wv" : "x");
            llm_trace_value(&tr, buf, c[1]);
            total += theta[k]->size;
            failed += failures;
            if (worst > worst_all)
                worst_all = worst;
        }
        snprintf(buf, sizeof buf, "%zu", total);
        llm_trace_value(&tr, "gc_coords", buf);
        snprintf(buf, sizeof buf, "%.2e", worst_all);
        llm_trace_value(&tr, "gc_worst", buf);
        printf("gradcheck h=1e-06 tolerance=2e-06 coords=%zu failures=%zu verdict=%s\n", total,
               failed, failed == 0 ? "pass" : "fail");
        llm_trace_value(&tr, "gc_verdict", failed == 0 ? "pass" : "fail");
        ok = ok && failed == 0 && total == 24;
        llm_tensor_free(&x);
        llm_tensor_free(&gx);
    }
    {
        const size_t xshape[2] = {2, 3}, narrow[2] = {2, 2};
        static const double zeros[4] = {0, 0, 0, 0};
        llm_qkv bad, unused;
        llm_tensor x, xn, scalar;
        llm_tape tape;
        llm_var xv, xnv, sv, stale, q, k, v, marker;
        llm_rng rng;
        size_t count = ps.count, nodes;
        char longp[52];
        int untouched;
        memset(longp, 'p', sizeof longp - 1);
        longp[sizeof longp - 1] = '\0';
        llm_rng_seed(&rng, 26);
        llm_demo_refusal(&tr, "init with no prefix",
                         llm_qkv_init(&unused, &ps, NULL, 3, 2, &rng, &err), &err);
        llm_demo_refusal(&tr, "init with d_k 0",
                         llm_qkv_init(&unused, &ps, "attn2", 3, 0, &rng, &err), &err);
        llm_demo_refusal(&tr, "init with a 51-character prefix",
                         llm_qkv_init(&unused, &ps, longp, 3, 2, &rng, &err), &err);
        llm_demo_refusal(&tr, "init with prefix Attn",
                         llm_qkv_init(&unused, &ps, "Attn", 3, 2, &rng, &err), &err);
        llm_demo_refusal(&tr, "init with prefix attn again",
                         llm_qkv_init(&unused, &ps, "attn", 3, 2, &rng, &err), &err);
        memset(&marker, 0x5a, sizeof marker);
        q = k = v = marker;
        if (!llm_demo_ok("ch26", llm_tensor_from(&x, 2, xshape, fix_x, 6, &err), &err)
            || !llm_demo_ok("ch26", llm_tensor_from(&xn, 2, narrow, zeros, 4, &err), &err)
            || !llm_demo_ok("ch26", llm_tensor_zeros(&scalar, 0, NULL, &err), &err)
            || !llm_demo_ok("ch26", llm_tape_init(&tape, 16, &err), &err)
            || !llm_demo_ok("ch26", llm_tape_constant(&tape, &x, &stale, &err), &err)
            || !llm_demo_ok("ch26", llm_tape_reset(&tape, &err), &err)
            || !llm_demo_ok("ch26", llm_tape_constant(&tape, &x, &xv, &err), &err)
            || !llm_demo_ok("ch26", llm_tape_constant(&tape, &xn, &xnv, &err), &err)
            || !llm_demo_ok("ch26", llm_tape_constant(&tape, &scalar, &sv, &err), &err))
            return llm_demo_finish(&tr, 0);
        nodes = tape.count;
        llm_demo_refusal(&tr, "forward with no tape",
                         llm_qkv_forward(&qkv, &ps, NULL, xv, &q, &k, &v, &err), &err);
        llm_demo_refusal(&tr, "forward with q and v one variable",
                         llm_qkv_forward(&qkv, &ps, &tape, xv, &q, &k, &q, &err), &err);
        llm_demo_refusal(&tr, "forward of a scalar",
                         llm_qkv_forward(&qkv, &ps, &tape, sv, &q, &k, &v, &err), &err);
        llm_demo_refusal(&tr, "forward of x [2, 2]",
                         llm_qkv_forward(&qkv, &ps, &tape, xnv, &q, &k, &v, &err), &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "width_message", err.message);
        llm_demo_refusal(&tr, "forward of an x from before a reset",
                         llm_qkv_forward(&qkv, &ps, &tape, stale, &q, &k, &v, &err), &err);
        bad = qkv;
        bad.value.weight = 7;
        llm_demo_refusal(&tr, "forward with the value weight at position 7 of 3",
                         llm_qkv_forward(&bad, &ps, &tape, xv, &q, &k, &v, &err), &err);
        bad = qkv;
        bad.d_k = 3;
        llm_demo_refusal(&tr, "forward of projections that claim d_k 3",
                         llm_qkv_forward(&bad, &ps, &tape, xv, &q, &k, &v, &err), &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "shape_message", err.message);
        untouched = memcmp(&q, &marker, sizeof q) == 0 && memcmp(&k, &marker, sizeof k) == 0
                    && memcmp(&v, &marker, sizeof v) == 0 && ps.count == count
                    && tape.count == nodes;
        printf("after the refusals: outputs, list and tape untouched=%s\n",
               untouched ? "yes" : "no");
        llm_trace_value(&tr, "untouched", untouched ? "yes" : "no");
        ok = ok && untouched;
        llm_tape_free(&tape);
        llm_tensor_free(&x);
        llm_tensor_free(&xn);
        llm_tensor_free(&scalar);
    }
    llm_params_free(&ps);
    return llm_demo_finish(&tr, ok);
}
