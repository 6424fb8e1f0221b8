/* ch29-rope -- rotary position embeddings: a relative dot grid, two
   pairings, the rotation on the tape. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/attention.h"
#include "llm/evidence.h"
#include "llm/gradcheck.h"

static const double fix_row[4] = {1, 0, 1, 0};

/* y = the T rows x (width 4) rotated at positions pos. */
static llm_status rotate(const llm_rope *rope, const double *x, size_t T, const size_t *pos,
                         double *y, llm_error *err)
{
    size_t shape[2];
    llm_tensor xt, yt;
    llm_status st;
    shape[0] = T;
    shape[1] = 4;
    st = llm_tensor_from(&xt, 2, shape, x, 4 * T, err);
    if (st != LLM_OK)
        return st;
    st = llm_rope_apply(rope, &xt, pos, T, &yt, err);
    llm_tensor_free(&xt);
    if (st != LLM_OK)
        return st;
    memcpy(y, yt.data + yt.offset, 4 * T * sizeof *y);
    llm_tensor_free(&yt);
    return LLM_OK;
}

/* The fixture row at positions start .. start+2: rows [3, 4], grid [3, 3]. */
static llm_status dot_grid(const llm_rope *rope, size_t start, double rows[12],
                           double grid[9], llm_error *err)
{
    double x[12];
    size_t pos[3], i, j, k;
    llm_status st;
    for (i = 0; i < 3; i++) {
        memcpy(x + 4 * i, fix_row, sizeof fix_row);
        pos[i] = start + i;
    }
    if ((st = rotate(rope, x, 3, pos, rows, err)) != LLM_OK)
        return st;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) {
            double sum = 0.0;
            for (k = 0; k < 4; k++)
                sum += rows[4 * i + k] * rows[4 * j + k];
            grid[3 * i + j] = sum;
        }
    return LLM_OK;
}
static const double fix_q[12] = {0.5, -1, 0.25, 2, 1, 0.5, -0.5, 1, -1, 0.75, 1.5, -0.25};
static const double fix_k[12] = {1, 0, 1, 0, 0.2, -0.4, 0.6, 1, -0.5, 1, 0.3, 0.8};
static const double fix_w[9] = {1, -0.5, 0.25, 0.5, 2, -1, 0.75, -0.25, 1.5};

typedef struct probe {
    const llm_rope *rope;
    llm_tensor *q, *k;        /* [3, 4] each, perturbed in place by the check */
} probe;

/* L = sum W_ij (R q_i . R k_j), positions 2..4, on a fresh tape; when dq
   and dk are not NULL, backward too, and qrot receives the rotated Q. */
static llm_status probe_run(const probe *p, double *loss, llm_tensor *dq, llm_tensor *dk,
                            double *qrot, llm_error *err)
{
    const size_t wshape[2] = {3, 3};
    llm_tape tape;
    llm_tensor wt;
    llm_var qv, kv, qr, kr, s, w, sw, l;
    const llm_tensor *v;
    llm_status st = llm_tensor_from(&wt, 2, wshape, fix_w, 9, err);
    if (st != LLM_OK)
        return st;
    st = llm_tape_init(&tape, 16, err);
    if (st == LLM_OK) {
        st = llm_tape_leaf(&tape, p->q, dq, &qv, err);
        if (st == LLM_OK)
            st = llm_tape_leaf(&tape, p->k, dk, &kv, err);
        if (st == LLM_OK)
            st = llm_tape_rope(&tape, p->rope, qv, 2, &qr, err);
        if (st == LLM_OK)
            st = llm_tape_rope(&tape, p->rope, kv, 2, &kr, err);
        if (st == LLM_OK)
            st = llm_tape_matmul(&tape, qr, kr, 0, 1, &s, err);
        if (st == LLM_OK)
            st = llm_tape_constant(&tape, &wt, &w, err);
        if (st == LLM_OK)
            st = llm_tape_mul(&tape, s, w, &sw, err);
        if (st == LLM_OK)
            st = llm_tape_sum_all(&tape, sw, &l, err);
        if (st == LLM_OK && qrot != NULL && (st = llm_tape_value(&tape, qr, &v, err)) == LLM_OK)
            memcpy(qrot, v->data + v->offset, 12 * sizeof *qrot);
        if (st == LLM_OK && (st = llm_tape_value(&tape, l, &v, err)) == LLM_OK)
            *loss = v->data[v->offset];
        if (st == LLM_OK && dq != NULL)
            st = llm_tape_backward(&tape, l, NULL, 0, err);
        llm_tape_free(&tape);
    }
    llm_tensor_free(&wt);
    return st;
}

static llm_status probe_loss(void *ctx, const llm_tensor *theta, double *value,
                             llm_error *err)
{
    (void)theta;
    return probe_run(ctx, value, NULL, NULL, NULL, err);
}

int main(int argc, char **argv)
{
    llm_trace tr;
    llm_rope rope;
    llm_error err;
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch29-rope", &tr);
    if (status != 0)
        return status;
    printf("chapter=29 rope\n");
    if (!llm_demo_ok("ch29", llm_rope_init(&rope, 4, 100.0, 8, LLM_ROPE_ADJACENT, &err), &err))
        return llm_demo_finish(&tr, 0);
    {
        char a[32], b[32], buf[96];
        snprintf(buf, sizeof buf, "[%s, %s]", llm_fmt_trim(a, sizeof a, rope.inv_freq[0], 6),
                 llm_fmt_trim(b, sizeof b, rope.inv_freq[1], 6));
        printf("head_dim=4 base=100 capacity=8 pairing=adjacent inv_freq=%s\n", buf);
        llm_trace_value(&tr, "inv_freq", buf);
        ok = ok && rope.inv_freq[0] == 1.0 && fabs(rope.inv_freq[1] - 0.1) < 1e-15;
    }
    {
        double rows[12], grid[9], rows3[12], grid3[9], diff = 0.0, norm;
        size_t i, k, used = 0;
        char c[6][48], buf[256], one[128], norms[64] = "";
        const char *cells[6] = {c[0], c[1], c[2], c[3], c[4], c[5]};
        char g[4][48];
        const char *gcells[4] = {g[0], g[1], g[2], g[3]};
        int norms_same = 1;

        ok = ok && llm_demo_ok("ch29", dot_grid(&rope, 0, rows, grid, &err), &err)
                && llm_demo_ok("ch29", dot_grid(&rope, 3, rows3, grid3, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        for (i = 0; i < 3; i++) {
            norm = sqrt(rows[4 * i] * rows[4 * i] + rows[4 * i + 1] * rows[4 * i + 1]
                        + rows[4 * i + 2] * rows[4 * i + 2] + rows[4 * i + 3] * rows[4 * i + 3]);
            snprintf(c[0], sizeof c[0], "%zu", i);
            for (k = 0; k < 4; k++)
                llm_fmt(c[1 + k], sizeof c[1 + k], rows[4 * i + k], 6);
            llm_fmt(c[5], sizeof c[5], norm, 6);
            llm_trace_row(&tr, "rot", 6, cells);
            printf("position %zu rotated=%s norm=%s\n", i,
                   llm_fmt_list(one, sizeof one, rows + 4 * i, 4, 6), c[5]);
            if (i == 0)
                snprintf(norms, sizeof norms, "%s", c[5]);
            norms_same = norms_same && strcmp(norms, c[5]) == 0;
            snprintf(g[0], sizeof g[0], "$m = %zu$", i);
            for (k = 0; k < 3; k++)
                llm_fmt(g[1 + k], sizeof g[1 + k], grid[3 * i + k], 6);
            llm_trace_row(&tr, "grid", 4, gcells);
        }
        used += (size_t)snprintf(buf, sizeof buf, "[");
        for (i = 0; i < 3; i++)
            used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", i ? ", " : "",
                                     llm_fmt_list(one, sizeof one, grid + 3 * i, 3, 6));
        snprintf(buf + used, sizeof buf - used, "]");
        printf("grid=%s\n", buf);
        llm_trace_value(&tr, "grid", buf);
        llm_trace_value(&tr, "g01", llm_fmt(one, sizeof one, grid[1], 6));
        llm_trace_value(&tr, "g02", llm_fmt(one, sizeof one, grid[2], 6));
        for (i = 0; i < 9; i++)
            if (fabs(grid3[i] - grid[i]) > diff)
                diff = fabs(grid3[i] - grid[i]);
        for (i = 0; i < 3; i++) {
            norm = sqrt(rows3[4 * i] * rows3[4 * i] + rows3[4 * i + 1] * rows3[4 * i + 1]
                        + rows3[4 * i + 2] * rows3[4 * i + 2] + rows3[4 * i + 3] * rows3[4 * i + 3]);
            norms_same = norms_same && strcmp(norms, llm_fmt(one, sizeof one, norm, 6)) == 0;
        }
        used = 0;
        used += (size_t)snprintf(buf, sizeof buf, "[");
        for (i = 0; i < 3; i++)
            used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", i ? ", " : "",
                                     llm_fmt_list(one, sizeof one, grid3 + 3 * i, 3, 6));
        snprintf(buf + used, sizeof buf - used, "]");
        printf("shift=3 grid=%s\n", buf);
        snprintf(one, sizeof one, "%.1e", diff);
        printf("shift=3 largest_change=%s norms=%s all_equal=%s\n", one, norms,
               norms_same ? "yes" : "no");
        llm_trace_value(&tr, "shift_diff", one);
        llm_trace_value(&tr, "norms", norms);
        ok = ok && diff < 1e-12 && norms_same && strcmp(norms, "1.414214") == 0;
    }
    {
        static const double probe_row[4] = {0.3, -1.2, 2.5, 0.7}, mixed[4] = {1, 2, 3, 4};
        const size_t zero = 0, one_pos = 1;
        llm_rope half;
        double y0a[4], y0h[4], ya[4], yh[4];
        int identity, differ;
        char buf[128];

        ok = ok && llm_demo_ok("ch29",
                               llm_rope_init(&half, 4, 100.0, 8, LLM_ROPE_HALF, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        ok = llm_demo_ok("ch29", rotate(&rope, probe_row, 1, &zero, y0a, &err), &err)
             && llm_demo_ok("ch29", rotate(&half, probe_row, 1, &zero, y0h, &err), &err)
             && llm_demo_ok("ch29", rotate(&rope, mixed, 1, &one_pos, ya, &err), &err)
             && llm_demo_ok("ch29", rotate(&half, mixed, 1, &one_pos, yh, &err), &err);
        identity = memcmp(y0a, probe_row, sizeof y0a) == 0 && memcmp(y0h, probe_row, sizeof y0h) == 0;
        differ = memcmp(ya, yh, sizeof ya) != 0;
        printf("position 0 x=[0.3, -1.2, 2.5, 0.7] bit-identical=%s\n", identity ? "yes" : "no");
        llm_trace_value(&tr, "identity", identity ? "yes" : "no");
        printf("x=[1, 2, 3, 4] at position 1\n");
        printf("  adjacent=%s\n", llm_fmt_list(buf, sizeof buf, ya, 4, 6));
        llm_trace_value(&tr, "pair_adjacent", buf);
        printf("  half=%s\n", llm_fmt_list(buf, sizeof buf, yh, 4, 6));
        llm_trace_value(&tr, "pair_half", buf);
        printf("  pairings differ=%s\n", differ ? "yes" : "no");
        llm_trace_value(&tr, "pair_differ", differ ? "yes" : "no");
        ok = ok && identity && differ;
        llm_rope_free(&half);
    }
    {
        static const size_t coords[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
        static const size_t shape[2] = {3, 4}, pos[3] = {2, 3, 4};
        llm_tensor q, k, dq, dk;
        llm_tensor *theta[2];
        const double *analytic[2];
        double loss = 0.0, qrot[12], qref[12], worst = 0.0, worst_all = 0.0;
        size_t t, failures = 0, failed = 0;
        int same;
        char c[4][96], buf[64];
        const char *cells[4] = {c[0], c[1], c[2], c[3]};
        probe pr;

        memset(&q, 0, sizeof q);
        memset(&k, 0, sizeof k);
        memset(&dq, 0, sizeof dq);
        memset(&dk, 0, sizeof dk);
        ok = ok && llm_demo_ok("ch29", llm_tensor_from(&q, 2, shape, fix_q, 12, &err), &err)
                && llm_demo_ok("ch29", llm_tensor_from(&k, 2, shape, fix_k, 12, &err), &err)
                && llm_demo_ok("ch29", llm_tensor_zeros(&dq, 2, shape, &err), &err)
                && llm_demo_ok("ch29", llm_tensor_zeros(&dk, 2, shape, &err), &err);
        pr.rope = &rope;
        pr.q = &q;
        pr.k = &k;
        ok = ok && llm_demo_ok("ch29", probe_run(&pr, &loss, &dq, &dk, qrot, &err), &err)
                && llm_demo_ok("ch29", rotate(&rope, fix_q, 3, pos, qref, &err), &err);
        same = ok && memcmp(qrot, qref, sizeof qref) == 0;
        printf("tape loss=%s rope(Q) as llm_rope_apply=%s\n", llm_fmt(buf, sizeof buf, loss, 6),
               same ? "bit-identical" : "different");
        llm_trace_value(&tr, "tape_same", same ? "yes" : "no");
        theta[0] = &q;
        theta[1] = &k;
        analytic[0] = dq.data;
        analytic[1] = dk.data;
        for (t = 0; t < 2 && ok; t++) {
            ok = llm_demo_ok("ch29",
                             llm_gradient_check(probe_loss, &pr, theta[t], analytic[t], coords, 12,
                                                1e-6, 4e-6, &worst, &failures, &err), &err);
            snprintf(c[0], sizeof c[0], "$%c$", "QK"[t]);
            snprintf(c[1], sizeof c[1], "%d", 12);
            snprintf(c[2], sizeof c[2], "%.1e", worst);
            snprintf(c[3], sizeof c[3], "%s", failures == 0 ? "pass" : "fail");
            llm_trace_row(&tr, "grads", 4, cells);
            printf("gradcheck %c coordinates=12 worst=%s verdict=%s\n", "QK"[t], c[2], c[3]);
            printf("  analytic=%s\n", llm_fmt_list(c[0], sizeof c[0], analytic[t], 4, 6));
            failed += failures;
            if (worst > worst_all)
                worst_all = worst;
        }
        snprintf(buf, sizeof buf, "%.1e", worst_all);
        llm_trace_value(&tr, "grad_worst", buf);
        llm_trace_value(&tr, "grad_verdict", ok && failed == 0 ? "pass" : "fail");
        ok = ok && same && failed == 0;
        llm_tensor_free(&q);
        llm_tensor_free(&k);
        llm_tensor_free(&dq);
        llm_tensor_free(&dk);
    }
    {
        static const double x6[6] = {1, 2, 3, 4, 5, 6};
        static const size_t s34[2] = {3, 4}, s16[2] = {1, 6}, s4[1] = {4};
        const size_t far[3] = {0, 8, 1}, two[2] = {0, 1};
        llm_rope bad, bad_kept;
        llm_tensor x, xw, xv, out, out_kept;
        llm_tape tape;
        llm_var xl, y, y_kept;
        size_t count;
        llm_status st;
        int untouched;

        memset(&bad, 0x5a, sizeof bad);
        bad_kept = bad;
        memset(&out, 0x3c, sizeof out);
        out_kept = out;
        memset(&y, 0x2d, sizeof y);
        y_kept = y;
        ok = ok && llm_demo_ok("ch29", llm_tensor_from(&x, 2, s34, fix_q, 12, &err), &err)
                && llm_demo_ok("ch29", llm_tensor_from(&xw, 2, s16, x6, 6, &err), &err)
                && llm_demo_ok("ch29", llm_tensor_from(&xv, 1, s4, fix_row, 4, &err), &err)
                && llm_demo_ok("ch29", llm_tape_init(&tape, 4, &err), &err)
                && llm_demo_ok("ch29", llm_tape_leaf(&tape, &x, NULL, &xl, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        count = tape.count;
        st = llm_rope_init(&bad, 3, 100.0, 8, LLM_ROPE_ADJACENT, &err);
        llm_demo_refusal(&tr, "head width 3", st, &err);
        ok = ok && st == LLM_ERR_ARGUMENT;
        st = llm_rope_init(&bad, 4, 0.0, 8, LLM_ROPE_ADJACENT, &err);
        llm_demo_refusal(&tr, "base 0", st, &err);
        ok = ok && st == LLM_ERR_ARGUMENT;
        st = llm_rope_apply(&rope, &x, far, 3, &out, &err);
        llm_demo_refusal(&tr, "position 8, capacity 8", st, &err);
        llm_trace_value(&tr, "index_message", err.message);
        ok = ok && st == LLM_ERR_INDEX;
        st = llm_rope_apply(&rope, &xw, two, 1, &out, &err);
        llm_demo_refusal(&tr, "a row of width 6", st, &err);
        ok = ok && st == LLM_ERR_SHAPE;
        st = llm_rope_apply(&rope, &xv, two, 1, &out, &err);
        llm_demo_refusal(&tr, "x of shape [4]", st, &err);
        ok = ok && st == LLM_ERR_RANK;
        st = llm_rope_apply(&rope, &x, two, 2, &out, &err);
        llm_demo_refusal(&tr, "2 positions for 3 rows", st, &err);
        ok = ok && st == LLM_ERR_SHAPE;
        st = llm_tape_rope(&tape, &rope, xl, 6, &y, &err);
        llm_demo_refusal(&tr, "tape: 3 rows from position 6", st, &err);
        llm_trace_value(&tr, "tape_message", err.message);
        ok = ok && st == LLM_ERR_INDEX;
        untouched = memcmp(&bad, &bad_kept, sizeof bad) == 0
                    && memcmp(&out, &out_kept, sizeof out) == 0
                    && memcmp(&y, &y_kept, sizeof y) == 0 && tape.count == count;
        printf("outputs, table and tape untouched=%s\n", untouched ? "yes" : "no");
        llm_trace_value(&tr, "untouched", untouched ? "yes" : "no");
        ok = ok && untouched;
        llm_tape_free(&tape);
        llm_tensor_free(&x);
        llm_tensor_free(&xw);
        llm_tensor_free(&xv);
    }
    llm_rope_free(&rope);
    return llm_demo_finish(&tr, ok);
}
