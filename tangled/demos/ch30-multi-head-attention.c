/* ch30-multi-head-attention -- two heads with RoPE and causal weights, the
   concatenation and W_O; separation, causality, gradients, refusals. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/attention.h"
#include "llm/evidence.h"
#include "llm/gradcheck.h"

#define D 4          /* d_model */
#define H 2          /* heads */
#define DH 2         /* head width */
#define T 3          /* tokens */
#define CAP 72       /* room for any tensor the demo copies out */

static const double eye[D * D] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
/* W_O: row r of the concatenated row goes to column (r + 2) mod 4. */
static const double swap[D * D] = {0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0};
static const char *const weight_names[4] = {
    "attention.query.weight", "attention.key.weight", "attention.value.weight",
    "attention.output.weight"};

/* Row t: [cos t, -sin t] for head 0, the rotation RoPE will undo; then
   [1, 0], [0, 1], [1, 1] for head 1. */
static void fixture_input(double x[T * D])
{
    static const double tail[T][2] = {{1, 0}, {0, 1}, {1, 1}};
    size_t t;
    for (t = 0; t < T; t++) {
        x[D * t] = t == 0 ? 1.0 : cos((double)t);
        x[D * t + 1] = t == 0 ? 0.0 : -sin((double)t);
        x[D * t + 2] = tail[t][0];
        x[D * t + 3] = tail[t][1];
    }
}
static int set_matrix(llm_params *ps, const char *name, const double *w)
{
    size_t i;
    if (llm_params_find(ps, name, &i, NULL) != LLM_OK || ps->items[i].value.size != D * D)
        return 0;
    memcpy(ps->items[i].value.data, w, D * D * sizeof w[0]);
    return 1;
}

static size_t count_params(const llm_params *ps)
{
    size_t i, n = 0;
    for (i = 0; i < ps->count; i++)
        n += ps->items[i].value.size;
    return n;
}

/* A row of n values as "[a, b]" in buf. */
static const char *row(char *buf, size_t size, const double *x, size_t n)
{
    return llm_fmt_list(buf, size, x, n, 6);
}

static const char *yes(int b)
{
    return b ? "yes" : "no";
}
/* Every stage of one pass, dense and row-major, with its shape. */
typedef struct mha_stage {
    double v[CAP];
    size_t shape[4], rank, size;
} mha_stage;

typedef struct mha_run {
    mha_stage q, k, v, q_rot, k_rot, weights, heads, concat, y;
} mha_run;

static llm_status fetch(const llm_tape *tape, llm_var var, mha_stage *s, llm_error *err)
{
    const llm_tensor *t;
    llm_tensor dense;
    llm_status st = llm_tape_value(tape, var, &t, err);
    if (st == LLM_OK)
        st = llm_tensor_copy(&dense, t, err);
    if (st != LLM_OK)
        return st;
    if (dense.size > CAP) {
        llm_tensor_free(&dense);
        return llm_fail(err, LLM_ERR_SHAPE, "ch30.fetch", "%zu values", dense.size);
    }
    memcpy(s->v, dense.data + dense.offset, dense.size * sizeof s->v[0]);
    memcpy(s->shape, dense.shape, dense.rank * sizeof s->shape[0]);
    s->rank = dense.rank;
    s->size = dense.size;
    llm_tensor_free(&dense);
    return LLM_OK;
}

/* x [b, t, mha->d_model] at positions offset.. through the layer. */
static llm_status run(const llm_mha *mha, llm_params *ps, const llm_rope *rope,
                      const double *x, size_t b, size_t t, size_t offset, mha_run *out,
                      llm_error *err)
{
    const size_t shape[3] = {b, t, mha->d_model};
    llm_tape tape;
    llm_tensor xt;
    llm_var xv, y;
    llm_mha_trace tr;
    llm_status st = llm_tensor_from(&xt, 3, shape, x, b * t * mha->d_model, err);
    if (st != LLM_OK)
        return st;
    if ((st = llm_tape_init(&tape, 32, err)) == LLM_OK) {
        st = llm_tape_constant(&tape, &xt, &xv, err);
        if (st == LLM_OK)
            st = llm_mha_forward(mha, ps, &tape, rope, xv, offset, &tr, &y, err);
        if (st == LLM_OK && (st = fetch(&tape, tr.q, &out->q, err)) == LLM_OK
            && (st = fetch(&tape, tr.k, &out->k, err)) == LLM_OK
            && (st = fetch(&tape, tr.v, &out->v, err)) == LLM_OK
            && (st = fetch(&tape, tr.q_rot, &out->q_rot, err)) == LLM_OK
            && (st = fetch(&tape, tr.k_rot, &out->k_rot, err)) == LLM_OK
            && (st = fetch(&tape, tr.weights, &out->weights, err)) == LLM_OK
            && (st = fetch(&tape, tr.heads, &out->heads, err)) == LLM_OK
            && (st = fetch(&tape, tr.concat, &out->concat, err)) == LLM_OK)
            st = fetch(&tape, y, &out->y, err);
        llm_tape_free(&tape);
    }
    llm_tensor_free(&xt);
    return st;
}
/* A fixed upstream gradient G [1, 3, 4], none of its entries alike. */
static const double upstream[T * D] = {0.7, -0.3, 0.5, 1.1, -0.9, 0.4, 0.2, -0.6,
                                       0.3, 0.8, -1.2, 0.45};

typedef struct probe {
    const llm_mha *mha;
    llm_params *ps;
    const llm_rope *rope;
    llm_tensor *x;        /* [1, 3, 4], perturbed in place by the check */
} probe;

/* L = sum G * MHA(x) on a fresh tape; with gx, backward too: gx and the
   parameters' grads receive dL/dx and dL/dW. */
static llm_status probe_run(const probe *p, double *loss, llm_tensor *gx, llm_error *err)
{
    const size_t shape[3] = {1, T, D};
    llm_tape tape;
    llm_tensor gt;
    llm_var xv, y, g, yg, l;
    const llm_tensor *v;
    llm_status st = llm_tensor_from(&gt, 3, shape, upstream, T * D, err);
    if (st != LLM_OK)
        return st;
    if ((st = llm_tape_init(&tape, 32, err)) == LLM_OK) {
        st = llm_tape_leaf(&tape, p->x, gx, &xv, err);
        if (st == LLM_OK)
            st = llm_mha_forward(p->mha, p->ps, &tape, p->rope, xv, 0, NULL, &y, err);
        if (st == LLM_OK)
            st = llm_tape_constant(&tape, &gt, &g, err);
        if (st == LLM_OK)
            st = llm_tape_mul(&tape, y, g, &yg, err);
        if (st == LLM_OK)
            st = llm_tape_sum_all(&tape, yg, &l, err);
        if (st == LLM_OK && (st = llm_tape_value(&tape, l, &v, err)) == LLM_OK)
            *loss = v->data[v->offset];
        if (st == LLM_OK && gx != NULL)
            st = llm_tape_backward(&tape, l, NULL, 0, err);
        llm_tape_free(&tape);
    }
    llm_tensor_free(&gt);
    return st;
}

static llm_status probe_loss(void *ctx, const llm_tensor *theta, double *value,
                             llm_error *err)
{
    (void)theta;
    return probe_run(ctx, value, NULL, err);
}

int main(int argc, char **argv)
{
    llm_trace tr;
    llm_error err;
    llm_params ps;
    llm_rng rng;
    llm_mha mha;
    llm_rope rope;
    mha_run base;
    double xin[T * D];
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch30-multi-head-attention", &tr);
    if (status != 0)
        return status;
    printf("chapter=30 multi-head-attention\n");
    fixture_input(xin);
    llm_rng_seed(&rng, 30);
    ok = llm_demo_ok("ch30", llm_params_init(&ps, &err), &err)
         && llm_demo_ok("ch30", llm_mha_init(&mha, &ps, "attention", D, H, &rng, &err), &err)
         && llm_demo_ok("ch30", llm_rope_init(&rope, DH, 100.0, 6, LLM_ROPE_ADJACENT, &err),
                        &err);
    if (!ok)
        return llm_demo_finish(&tr, 0);
    ok = set_matrix(&ps, weight_names[0], eye) && set_matrix(&ps, weight_names[1], eye)
         && set_matrix(&ps, weight_names[2], eye) && set_matrix(&ps, weight_names[3], swap);
    {
        char buf[256];
        size_t i, used = 0;
        buf[0] = '\0';
        for (i = 0; i < ps.count; i++)
            used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", i ? ", " : "",
                                     ps.items[i].name);
        printf("batch=1 tokens=%d d_model=%d heads=%zu head_dim=%zu rope_base=100 "
               "capacity=%zu pairing=adjacent bias=no\n", T, D, mha.n_heads, mha.head_dim,
               rope.capacity);
        printf("parameters=[%s] count=%zu\n", buf, count_params(&ps));
        snprintf(buf, sizeof buf, "%zu", count_params(&ps));
        llm_trace_value(&tr, "params", buf);
        ok = ok && count_params(&ps) == 4 * D * D;
    }
    ok = ok && llm_demo_ok("ch30", run(&mha, &ps, &rope, xin, 1, T, 0, &base, &err), &err);
    if (!ok)
        return llm_demo_finish(&tr, 0);
    {
        char buf[512], sh[7][48], c[8][96];
        const char *cells[8] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]};
        size_t h, t, j;
        printf("shapes input=[1, 3, 4] split=%s rotated=%s weights=%s heads=%s concat=%s "
               "output=%s\n",
               llm_fmt_sizes(sh[0], sizeof sh[0], base.q.shape, base.q.rank),
               llm_fmt_sizes(sh[1], sizeof sh[1], base.q_rot.shape, base.q_rot.rank),
               llm_fmt_sizes(sh[2], sizeof sh[2], base.weights.shape, base.weights.rank),
               llm_fmt_sizes(sh[3], sizeof sh[3], base.heads.shape, base.heads.rank),
               llm_fmt_sizes(sh[4], sizeof sh[4], base.concat.shape, base.concat.rank),
               llm_fmt_sizes(sh[5], sizeof sh[5], base.y.shape, base.y.rank));
        llm_trace_value(&tr, "shape_split", sh[0]);
        llm_trace_value(&tr, "shape_weights", sh[2]);
        llm_trace_value(&tr, "shape_concat", sh[4]);
        for (h = 0; h < H; h++)
            for (t = 0; t < T; t++) {
                const size_t at = (h * T + t) * DH;
                snprintf(c[0], sizeof c[0], "%zu", h);
                snprintf(c[1], sizeof c[1], "%zu", t);
                row(c[2], sizeof c[2], base.q.v + at, DH);
                row(c[3], sizeof c[3], base.k.v + at, DH);
                row(c[4], sizeof c[4], base.v.v + at, DH);
                row(c[5], sizeof c[5], base.q_rot.v + at, DH);
                row(c[6], sizeof c[6], base.k_rot.v + at, DH);
                printf("head %zu t=%zu q=%s k=%s v=%s q_rot=%s k_rot=%s\n", h, t, c[2], c[3], c[4],
                       c[5], c[6]);
                {
                    const char *table_cells[5] = {c[0], c[1], c[2], c[5], c[6]};
                    llm_trace_row(&tr, "qkv", 5, table_cells);
                }
            }
        {
            int same = memcmp(base.q.v, base.k.v, H * T * DH * sizeof(double)) == 0
                       && memcmp(base.q.v, base.v.v, H * T * DH * sizeof(double)) == 0;
            printf("identity projections: q, k, v bit-identical=%s\n", yes(same));
            llm_trace_value(&tr, "qkv_same", yes(same));
            ok = ok && same;
        }
        for (h = 0; h < H; h++) {
            char table[8], scores[128];
            snprintf(table, sizeof table, "w%zu", h);
            for (t = 0; t < T; t++) {
                const double *w = base.weights.v + (h * T + t) * T;
                double s[T], sum = 0.0;
                for (j = 0; j <= t; j++) {
                    const double *q = base.q_rot.v + (h * T + t) * DH;
                    const double *k = base.k_rot.v + (h * T + j) * DH;
                    s[j] = (q[0] * k[0] + q[1] * k[1]) / sqrt((double)DH);
                }
                for (j = 0; j < T; j++)
                    sum += w[j];
                snprintf(c[0], sizeof c[0], "$q = %zu$", t);
                for (j = 0; j < T; j++)
                    llm_fmt(c[1 + j], sizeof c[1 + j], w[j], 6);
                llm_fmt(c[4], sizeof c[4], sum, 6);
                row(c[5], sizeof c[5], base.heads.v + (h * T + t) * DH, DH);
                row(scores, sizeof scores, s, t + 1);
                printf("head %zu row %zu weights=%s sum=%s visible_scores=%s output=%s\n", h, t,
                       row(buf, sizeof buf, w, T), c[4], scores, c[5]);
                llm_trace_row(&tr, table, 6, cells);
                snprintf(buf, sizeof buf, "w%zu_%zu", h, t);
                llm_trace_value(&tr, buf, row(c[7], sizeof c[7], w, T));
                snprintf(buf, sizeof buf, "s%zu_%zu", h, t);
                llm_trace_value(&tr, buf, scores);
                snprintf(buf, sizeof buf, "h%zu_%zu", h, t);
                llm_trace_value(&tr, buf, c[5]);
            }
        }
        for (t = 0; t < T; t++) {
            snprintf(c[0], sizeof c[0], "$t = %zu$", t);
            row(c[1], sizeof c[1], base.heads.v + t * DH, DH);
            row(c[2], sizeof c[2], base.heads.v + (T + t) * DH, DH);
            row(c[3], sizeof c[3], base.concat.v + t * D, D);
            row(c[4], sizeof c[4], base.y.v + t * D, D);
            printf("t=%zu concat=%s output=%s\n", t, c[3], c[4]);
            {
                const char *before[3] = {c[0], "$\\operatorname{Concat}$", c[3]};
                const char *after[3] = {c[0], "$\\operatorname{Concat} \\cdot W_O$", c[4]};
                llm_trace_row(&tr, "rows", 3, before);
                llm_trace_row(&tr, "rows", 3, after);
            }
            snprintf(buf, sizeof buf, "concat_%zu", t);
            llm_trace_value(&tr, buf, c[3]);
            snprintf(buf, sizeof buf, "y_%zu", t);
            llm_trace_value(&tr, buf, c[4]);
            for (j = 0; j < D; j++)              /* one number a cell, for the figure */
                llm_fmt(c[1 + j], sizeof c[1 + j], base.concat.v[t * D + j], 6);
            llm_trace_row(&tr, "cat", 5, cells);
            for (j = 0; j < D; j++)
                llm_fmt(c[1 + j], sizeof c[1 + j], base.y.v[t * D + j], 6);
            llm_trace_row(&tr, "out", 5, cells);
        }
        for (t = 0; t < D; t++)
            printf("W_O row %zu=%s\n", t, row(buf, sizeof buf, swap + D * t, D));
    }
    {
        size_t h, t, j;
        double worst_uniform = 0.0, worst_sum = 0.0;
        int future_zero = 1;
        char buf[32];
        for (h = 0; h < H; h++)
            for (t = 0; t < T; t++) {
                const double *w = base.weights.v + (h * T + t) * T;
                double sum = 0.0;
                for (j = 0; j < T; j++) {
                    sum += w[j];
                    if (j > t)
                        future_zero = future_zero && w[j] == 0.0 && !signbit(w[j]);
                    else if (h == 0 && fabs(w[j] - 1.0 / (double)(t + 1)) > worst_uniform)
                        worst_uniform = fabs(w[j] - 1.0 / (double)(t + 1));
                }
                if (fabs(sum - 1.0) > worst_sum)
                    worst_sum = fabs(sum - 1.0);
            }
        printf("head 0 rows uniform within=%.1e rows sum to 1 within=%.1e future weights "
               "exactly +0=%s\n", worst_uniform, worst_sum, yes(future_zero));
        snprintf(buf, sizeof buf, "%.1e", worst_uniform);
        llm_trace_value(&tr, "uniform_diff", buf);
        snprintf(buf, sizeof buf, "%.1e", worst_sum);
        llm_trace_value(&tr, "sum_diff", buf);
        llm_trace_value(&tr, "future_zero", yes(future_zero));
        ok = ok && worst_uniform < 1e-12 && worst_sum < 1e-12 && future_zero;
    }
    {
        static const size_t heads[3] = {1, 2, 4}, shape[3] = {2, 3, 4};
        double x[24];
        llm_tape tape;
        llm_tensor xt, dense;
        llm_var xv, s, m;
        const llm_tensor *sv, *mv;
        size_t i, n, b, t, h, d;

        int inverse = 1, columns = 1;
        for (i = 0; i < 24; i++)
            x[i] = 0.25 * (double)i - 2.0;
        ok = ok && llm_demo_ok("ch30", llm_tensor_from(&xt, 3, shape, x, 24, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        ok = llm_demo_ok("ch30", llm_tape_init(&tape, 16, &err), &err)
             && llm_demo_ok("ch30", llm_tape_constant(&tape, &xt, &xv, &err), &err);
        for (n = 0; n < 3 && ok; n++) {
            const size_t dh = 4 / heads[n];
            ok = llm_demo_ok("ch30", llm_mha_split_heads(&tape, xv, heads[n], &s, &err), &err)
                 && llm_demo_ok("ch30", llm_mha_merge_heads(&tape, s, &m, &err), &err)
                 && llm_demo_ok("ch30", llm_tape_value(&tape, s, &sv, &err), &err)
                 && llm_demo_ok("ch30", llm_tape_value(&tape, m, &mv, &err), &err)
                 && llm_demo_ok("ch30", llm_tensor_copy(&dense, mv, &err), &err);
            if (!ok)
                break;
            for (b = 0; b < 2; b++)
                for (t = 0; t < 3; t++)
                    for (h = 0; h < heads[n]; h++)
                        for (d = 0; d < dh; d++) {
                            size_t at = sv->offset + b * sv->stride[0] + h * sv->stride[1]
                                        + t * sv->stride[2] + d * sv->stride[3];
                            columns = columns && sv->data[at] == x[12 * b + 4 * t + h * dh + d];
                        }
            inverse = inverse && dense.rank == 3 && dense.shape[2] == 4
                      && memcmp(dense.data + dense.offset, x, sizeof x) == 0;
            llm_tensor_free(&dense);
        }
        printf("split [2, 3, 4] into 1, 2, 4 heads: head h holds columns h*dh..=%s; "
               "merge(split(x)) bit-identical=%s\n", yes(columns), yes(inverse));
        llm_trace_value(&tr, "split_columns", yes(columns));
        llm_trace_value(&tr, "split_inverse", yes(inverse));
        ok = ok && columns && inverse;
        llm_tape_free(&tape);
        llm_tensor_free(&xt);
    }
    {
        double w[3][D * D];
        mha_run other;
        size_t m, r, t;
        int same0, same_w0, moved1, same_y, moved_y;
        for (m = 0; m < 3; m++) {
            memcpy(w[m], eye, sizeof eye);
            for (r = 0; r < D; r++) {
                w[m][D * r + 2] += 0.25 * (double)(r + 1) * (double)(m + 1);
                w[m][D * r + 3] -= 0.5 * (double)r;
            }
            ok = ok && set_matrix(&ps, weight_names[m], w[m]);
        }
        ok = ok && llm_demo_ok("ch30", run(&mha, &ps, &rope, xin, 1, T, 0, &other, &err), &err);
        for (m = 0; m < 3; m++)
            ok = ok && set_matrix(&ps, weight_names[m], eye);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        same0 = memcmp(other.heads.v, base.heads.v, T * DH * sizeof(double)) == 0;
        same_w0 = memcmp(other.weights.v, base.weights.v, T * T * sizeof(double)) == 0;
        moved1 = memcmp(other.heads.v + T * DH, base.heads.v + T * DH,
                        T * DH * sizeof(double)) != 0;
        same_y = 1;
        moved_y = 0;
        for (t = 0; t < T; t++) {
            same_y = same_y && memcmp(other.y.v + D * t + 2, base.y.v + D * t + 2,
                                      2 * sizeof(double)) == 0;
            moved_y = moved_y || memcmp(other.y.v + D * t, base.y.v + D * t,
                                        2 * sizeof(double)) != 0;
        }
        printf("head 1's columns of W_Q, W_K, W_V changed: head 0 weights bit-identical=%s "
               "head 0 outputs bit-identical=%s head 1 outputs changed=%s\n", yes(same_w0),
               yes(same0), yes(moved1));
        printf("  after W_O: output columns 2, 3 (head 0) bit-identical=%s columns 0, 1 "
               "(head 1) changed=%s\n", yes(same_y), yes(moved_y));
        {
            char buf[128];
            llm_trace_value(&tr, "iso_same", yes(same0 && same_w0));
            llm_trace_value(&tr, "iso_moved", yes(moved1));
            llm_trace_value(&tr, "iso_y", yes(same_y && moved_y));
            llm_trace_value(&tr, "iso_h1", row(buf, sizeof buf, other.heads.v + (T + 2) * DH, DH));
        }
        ok = ok && same0 && same_w0 && moved1 && same_y && moved_y;
    }
    {
        static const double token2[D] = {0.5, -1.0, 2.0, 0.25};
        double x2[T * D], worst = 0.0;
        mha_run other, later;
        size_t i;
        int prefix, changed;
        char buf[128];
        memcpy(x2, xin, sizeof x2);
        memcpy(x2 + 2 * D, token2, sizeof token2);
        ok = ok && llm_demo_ok("ch30", run(&mha, &ps, &rope, x2, 1, T, 0, &other, &err), &err)
             && llm_demo_ok("ch30", run(&mha, &ps, &rope, xin, 1, T, 3, &later, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        prefix = memcmp(other.y.v, base.y.v, 2 * D * sizeof(double)) == 0;
        changed = memcmp(other.y.v + 2 * D, base.y.v + 2 * D, D * sizeof(double)) != 0;
        printf("token 2 -> %s: output rows 0, 1 bit-identical=%s row 2 changed=%s\n",
               row(buf, sizeof buf, token2, D), yes(prefix), yes(changed));
        printf("  new row 2=%s\n", row(buf, sizeof buf, other.y.v + 2 * D, D));
        llm_trace_value(&tr, "prefix_same", yes(prefix));
        llm_trace_value(&tr, "prefix_changed", yes(changed));
        llm_trace_value(&tr, "prefix_row2", buf);
        for (i = 0; i < H * T * T; i++)
            if (fabs(later.weights.v[i] - base.weights.v[i]) > worst)
                worst = fabs(later.weights.v[i] - base.weights.v[i]);
        snprintf(buf, sizeof buf, "%.1e", worst);
        printf("same rows at positions 3..5: largest change of a weight=%s\n", buf);
        llm_trace_value(&tr, "offset_diff", buf);
        ok = ok && prefix && changed && worst < 1e-12;
    }
    {
        static const size_t coords[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
        static const char *const blocks[5] = {"X", "W_Q", "W_K", "W_V", "W_O"};
        const size_t shape[3] = {1, T, D};
        llm_tensor xt, gx;
        llm_tensor *theta[5];
        const double *analytic[5];
        size_t sizes[5], i, b, failures = 0, failed = 0, total = 0;
        double loss = 0.0, worst = 0.0, worst_all = 0.0;
        char c[4][160], buf[64];
        const char *cells[4] = {c[0], c[1], c[2], c[3]};
        probe pr;

        ok = ok && llm_demo_ok("ch30", llm_tensor_from(&xt, 3, shape, xin, T * D, &err), &err)
             && llm_demo_ok("ch30", llm_tensor_zeros(&gx, 3, shape, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        for (i = 0; i < ps.count; i++)
            memset(ps.items[i].grad.data, 0, ps.items[i].grad.size * sizeof(double));
        pr.mha = &mha;
        pr.ps = &ps;
        pr.rope = &rope;
        pr.x = &xt;
        ok = llm_demo_ok("ch30", probe_run(&pr, &loss, &gx, &err), &err);
        printf("gradient check: L = sum G * MHA(X), G=%s L=%s\n",
               row(c[0], sizeof c[0], upstream, T * D), llm_fmt(buf, sizeof buf, loss, 6));
        theta[0] = &xt;
        analytic[0] = gx.data;
        sizes[0] = T * D;
        for (b = 0; b < 4; b++) {
            const size_t at[4] = {mha.qkv.query.weight, mha.qkv.key.weight,
                                  mha.qkv.value.weight, mha.output.weight};
            theta[1 + b] = &ps.items[at[b]].value;
            analytic[1 + b] = ps.items[at[b]].grad.data;
            sizes[1 + b] = D * D;
        }
        for (b = 0; b < 5 && ok; b++) {
            ok = llm_demo_ok("ch30", llm_gradient_check(probe_loss, &pr, theta[b], analytic[b],
                                                        coords, sizes[b], 1e-6, 8e-6, &worst,
                                                        &failures, &err), &err);
            snprintf(c[0], sizeof c[0], "$%s$", blocks[b]);
            snprintf(c[1], sizeof c[1], "%zu", sizes[b]);
            snprintf(c[2], sizeof c[2], "%.1e", worst);
            snprintf(c[3], sizeof c[3], "%s", ok && failures == 0 ? "pass" : "fail");
            llm_trace_row(&tr, "grads", 4, cells);
            printf("gradcheck %s coordinates=%zu worst=%s verdict=%s\n", blocks[b], sizes[b], c[2],
                   c[3]);
            printf("  analytic=%s\n", row(c[0], sizeof c[0], analytic[b], sizes[b] < 8 ? sizes[b] : 8));
            failed += failures;
            total += sizes[b];
            if (worst > worst_all)
                worst_all = worst;
        }
        snprintf(buf, sizeof buf, "%.1e", worst_all);
        llm_trace_value(&tr, "grad_worst", buf);
        snprintf(buf, sizeof buf, "%zu", total);
        llm_trace_value(&tr, "grad_total", buf);
        llm_trace_value(&tr, "grad_verdict", ok && failed == 0 ? "pass" : "fail");
        printf("gradcheck total coordinates=%zu delta=1e-6 tolerance=8e-6 worst=%.1e verdict=%s\n",
               total, worst_all, ok && failed == 0 ? "pass" : "fail");
        ok = ok && failed == 0 && total == 76;
        llm_tensor_free(&xt);
        llm_tensor_free(&gx);
    }
    {
        static const size_t widths[5] = {4, 4, 8, 8, 8}, counts[5] = {1, 2, 1, 2, 4};
        double x8[T * 8];
        size_t n, i;
        char c[6][32];
        const char *cells[6] = {c[0], c[1], c[2], c[3], c[4], c[5]};
        for (i = 0; i < T * 8; i++)
            x8[i] = cos(0.7 * (double)i + 0.3);
        for (n = 0; n < 5 && ok; n++) {
            llm_params p;
            llm_mha m;
            llm_rope r;
            llm_rng g;
            mha_run out;
            llm_rng_seed(&g, 30);
            ok = llm_demo_ok("ch30", llm_params_init(&p, &err), &err)
                 && llm_demo_ok("ch30", llm_mha_init(&m, &p, "attention", widths[n], counts[n],
                                                     &g, &err), &err)
                 && llm_demo_ok("ch30", llm_rope_init(&r, m.head_dim, 100.0, 6,
                                                      LLM_ROPE_ADJACENT, &err), &err)
                 && llm_demo_ok("ch30", run(&m, &p, &r, widths[n] == 8 ? x8 : xin, 1, T, 0,
                                            &out, &err), &err);
            if (ok) {
                snprintf(c[0], sizeof c[0], "%zu", widths[n]);
                snprintf(c[1], sizeof c[1], "%zu", counts[n]);
                snprintf(c[2], sizeof c[2], "%zu", m.head_dim);
                snprintf(c[3], sizeof c[3], "%zu", count_params(&p));
                llm_fmt_sizes(c[4], sizeof c[4], out.weights.shape, out.weights.rank);
                snprintf(c[5], sizeof c[5], "%zu", counts[n] * T * T * m.head_dim);
                printf("d_model=%s heads=%s head_dim=%s parameters=%s weights=%s "
                       "score products=%s\n", c[0], c[1], c[2], c[3], c[4], c[5]);
                llm_trace_row(&tr, "heads", 6, cells);
                ok = count_params(&p) == 4 * widths[n] * widths[n];
            }
            llm_rope_free(&r);
            llm_params_free(&p);
        }
    }
    {
        llm_params ps_kept;
        llm_rng rng_kept = rng;
        llm_mha bad, bad_kept;
        llm_rope wide;
        llm_tape tape;
        llm_tensor xt, x2, x6, x0;
        llm_var xv, v2, v6, v0, stale, y, y_kept;
        static const size_t s3[3] = {1, T, D}, s2[2] = {T, D}, s6[3] = {1, T, 6},
                            s0[3] = {1, 0, D};
        static const double six[T * 6] = {0};
        size_t count;
        int untouched;
        llm_status st;

        ps_kept = ps;
        memset(&bad, 0x5a, sizeof bad);
        bad_kept = bad;
        memset(&y, 0x2d, sizeof y);
        y_kept = y;
        ok = ok && llm_demo_ok("ch30", llm_rope_init(&wide, 4, 100.0, 6, LLM_ROPE_ADJACENT, &err),
                               &err)
             && llm_demo_ok("ch30", llm_tensor_from(&xt, 3, s3, xin, T * D, &err), &err)
             && llm_demo_ok("ch30", llm_tensor_from(&x2, 2, s2, xin, T * D, &err), &err)
             && llm_demo_ok("ch30", llm_tensor_from(&x6, 3, s6, six, T * 6, &err), &err)
             && llm_demo_ok("ch30", llm_tensor_zeros(&x0, 3, s0, &err), &err)
             && llm_demo_ok("ch30", llm_tape_init(&tape, 8, &err), &err)
             && llm_demo_ok("ch30", llm_tape_constant(&tape, &xt, &stale, &err), &err)
             && llm_demo_ok("ch30", llm_tape_reset(&tape, &err), &err)
             && llm_demo_ok("ch30", llm_tape_constant(&tape, &xt, &xv, &err), &err)
             && llm_demo_ok("ch30", llm_tape_constant(&tape, &x2, &v2, &err), &err)
             && llm_demo_ok("ch30", llm_tape_constant(&tape, &x6, &v6, &err), &err)
             && llm_demo_ok("ch30", llm_tape_constant(&tape, &x0, &v0, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        count = tape.count;
        st = llm_mha_init(&bad, &ps, "other", 4, 0, &rng, &err);
        llm_demo_refusal(&tr, "d_model 4, 0 heads", st, &err);
        ok = ok && st == LLM_ERR_CONFIG;
        st = llm_mha_init(&bad, &ps, "other", 4, 3, &rng, &err);
        llm_demo_refusal(&tr, "d_model 4, 3 heads", st, &err);
        ok = ok && st == LLM_ERR_CONFIG;
        st = llm_mha_init(&bad, &ps, "other", 4, 4, &rng, &err);
        llm_demo_refusal(&tr, "d_model 4, 4 heads of width 1", st, &err);
        llm_trace_value(&tr, "odd_message", err.message);
        ok = ok && st == LLM_ERR_CONFIG;
        st = llm_mha_init(&bad, &ps, "attention", 4, 2, &rng, &err);
        llm_demo_refusal(&tr, "the prefix attention again", st, &err);
        ok = ok && st == LLM_ERR_NAME;
        st = llm_mha_forward(&mha, &ps, &tape, &wide, xv, 0, NULL, &y, &err);
        llm_demo_refusal(&tr, "a rope for heads of width 4", st, &err);
        ok = ok && st == LLM_ERR_CONFIG;
        st = llm_mha_forward(&mha, &ps, &tape, &rope, v2, 0, NULL, &y, &err);
        llm_demo_refusal(&tr, "x of shape [3, 4]", st, &err);
        ok = ok && st == LLM_ERR_RANK;
        st = llm_mha_forward(&mha, &ps, &tape, &rope, v6, 0, NULL, &y, &err);
        llm_demo_refusal(&tr, "x of shape [1, 3, 6]", st, &err);
        ok = ok && st == LLM_ERR_SHAPE;
        st = llm_mha_forward(&mha, &ps, &tape, &rope, v0, 0, NULL, &y, &err);
        llm_demo_refusal(&tr, "x of shape [1, 0, 4]", st, &err);
        ok = ok && st == LLM_ERR_EMPTY;
        st = llm_mha_forward(&mha, &ps, &tape, &rope, xv, 4, NULL, &y, &err);
        llm_demo_refusal(&tr, "3 tokens from position 4, capacity 6", st, &err);
        llm_trace_value(&tr, "index_message", err.message);
        ok = ok && st == LLM_ERR_INDEX;
        st = llm_mha_forward(&mha, &ps, &tape, &rope, stale, 0, NULL, &y, &err);
        llm_demo_refusal(&tr, "x from an earlier recording", st, &err);
        ok = ok && st == LLM_ERR_TAPE;
        untouched = memcmp(&bad, &bad_kept, sizeof bad) == 0 && rng.state == rng_kept.state
                    && ps.count == ps_kept.count && ps.items == ps_kept.items
                    && memcmp(&y, &y_kept, sizeof y) == 0 && tape.count == count;
        printf("layer, parameters, generator, output and tape untouched=%s\n", yes(untouched));
        llm_trace_value(&tr, "untouched", yes(untouched));
        ok = ok && untouched;
        llm_tape_free(&tape);
        llm_tensor_free(&xt);
        llm_tensor_free(&x2);
        llm_tensor_free(&x6);
        llm_tensor_free(&x0);
        llm_rope_free(&wide);
    }
    llm_rope_free(&rope);
    llm_params_free(&ps);
    return llm_demo_finish(&tr, ok);
}
