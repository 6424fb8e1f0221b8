/* ch30-multi-head-attention -- two heads with RoPE and causal weights, the
   concatenation and W_O; separation, causality, gradients, refusals. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/attention.h"
#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/probe.h"

#define D 4          /* d_model */
#define H 2          /* heads */
#define DH 2         /* head width */
#define T 3          /* tokens */

static const double eye[D * D] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
/* W_O: row r of the concatenated row goes to column (r + 2) mod 4. */
static const double swap[D * D] = {0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0};

static llm_params *ps;       /* the fixture's list, owned by main */
static llm_rope *rope;       /* head width 2, base 100, capacity 6; owned by main */
static llm_mha mha;          /* in ps */
static llm_rng rng;          /* what mha was drawn from */
/* The input [1, 3, 4]. Row t: [cos t, -sin t] for head 0, the rotation RoPE
   will undo (build writes rows 1 and 2); then [1, 0], [0, 1], [1, 1] for head 1. */
static double xin[T * D] = {1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 1, 1};
static void release_rope(void *r)
{
    llm_rope_free(r);
}

/* Weight k of the fixture layer: W_Q, W_K, W_V, W_O. */
static llm_param *weight(size_t k)
{
    const size_t at[4] = {mha.qkv.query.weight, mha.qkv.key.weight,
                          mha.qkv.value.weight, mha.output.weight};
    return &ps->items[at[k]];
}

static size_t count_params(const llm_params *list)
{
    size_t i, n = 0;
    for (i = 0; i < list->count; i++)
        n += list->items[i].value.size;
    return n;
}

static int same(const double *a, const double *b, size_t n)
{
    return memcmp(a, b, n * sizeof *a) == 0;
}

static llm_status forward(llm_tape *tape, const llm_rope *r, llm_var x, size_t offset,
                          llm_var *y, llm_error *err)
{
    return llm_mha_forward(&mha, ps, tape, r, x, offset, NULL, y, err);
}
/* Every stage of one pass, each a dense row-major copy. */
typedef struct mha_run {
    llm_tensor q, k, v, q_rot, k_rot, weights, heads, concat, y;
} mha_run;

static mha_run *base;        /* the fixture pass, owned by main */

static void release_run(void *run)
{
    mha_run *r = run;
    llm_tensor *stage[9] = {&r->q, &r->k, &r->v, &r->q_rot, &r->k_rot, &r->weights,
                            &r->heads, &r->concat, &r->y};
    size_t i;
    for (i = 0; i < 9; i++)
        llm_tensor_free(stage[i]);
}

/* out = var's value, dense and row-major. */
static int fetch(llm_demo *d, const llm_tape *tape, llm_var var, llm_tensor *out)
{
    const llm_tensor *t;
    return LLM_TRY(d, llm_tape_value(tape, var, &t, &d->err))
           && LLM_TRY(d, llm_tensor_copy(out, t, &d->err));
}

/* x [1, T, m->d_model] through the layer m at positions offset.., on a fresh
   tape; every stage into o. */
static int run(llm_demo *d, const llm_mha *m, llm_params *list, const llm_rope *r,
               const double *x, size_t offset, mha_run *o)
{
    const size_t shape[3] = {1, T, m->d_model};
    llm_tape *tape = llm_own_tape(d);
    llm_tensor *xt = llm_own_tensor(d);
    llm_mha_trace tr;
    llm_var xv, y;
    return LLM_TRY(d, llm_tensor_from(xt, 3, shape, x, T * m->d_model, &d->err))
           && LLM_TRY(d, llm_tape_init(tape, 32, &d->err))
           && LLM_TRY(d, llm_tape_constant(tape, xt, &xv, &d->err))
           && LLM_TRY(d, llm_mha_forward(m, list, tape, r, xv, offset, &tr, &y,
                                         &d->err))
           && fetch(d, tape, tr.q, &o->q) && fetch(d, tape, tr.k, &o->k)
           && fetch(d, tape, tr.v, &o->v) && fetch(d, tape, tr.q_rot, &o->q_rot)
           && fetch(d, tape, tr.k_rot, &o->k_rot)
           && fetch(d, tape, tr.weights, &o->weights)
           && fetch(d, tape, tr.heads, &o->heads)
           && fetch(d, tape, tr.concat, &o->concat) && fetch(d, tape, y, &o->y);
}

static const char *shape_of(const llm_tensor *t)
{
    return llm_sizes(t->shape, t->rank);
}

/* The fixture layer for chapter 19's probe, at positions 0... */
static llm_status mha_layer(const void *layer, llm_params *list, llm_tape *tape,
                            llm_var x, llm_var *y, llm_error *err)
{
    return llm_mha_forward(layer, list, tape, rope, x, 0, NULL, y, err);
}
static void build(llm_demo *d)
{
    const char *names = "";
    size_t i;

    for (i = 1; i < T; i++) {
        xin[D * i] = cos((double)i);
        xin[D * i + 1] = -sin((double)i);
    }
    llm_rng_seed(&rng, 30);
    if (!(LLM_TRY(d, llm_mha_init(&mha, ps, "attention", D, H, &rng, &d->err))
          && LLM_TRY(d, llm_mha_check(&mha, ps, "attention", &d->err))
          && LLM_TRY(d, llm_rope_init(rope, DH, 100.0, 6, LLM_ROPE_ADJACENT, &d->err))))
        return;
    for (i = 0; i < 4; i++)                   /* [D, D] each, as llm_mha_check says */
        memcpy(weight(i)->value.data, i < 3 ? eye : swap, sizeof eye);
    for (i = 0; i < ps->count; i++)
        names = llm_text("%s%s%s", names, i ? ", " : "", ps->items[i].name);
    printf("batch=1 tokens=%d d_model=%d heads=%zu head_dim=%zu rope_base=100 "
           "capacity=%zu pairing=adjacent bias=no\n", T, D, mha.n_heads, mha.head_dim,
           rope->capacity);
    printf("parameters=[%s] count=%s\n", names,
           llm_put(d, "params", llm_text("%zu", count_params(ps))));
    llm_demo_check(d, count_params(ps) == 4 * D * D, "the layer has 4 D^2 parameters");
}
static void stages(llm_demo *d)
{
    double worst_uniform = 0.0, worst_sum = 0.0;
    size_t i, j, t;
    int qkv_same, future_zero = 1;

    if (!run(d, &mha, ps, rope, xin, 0, base))
        return;
    llm_put(d, "shape_split", shape_of(&base->q));
    llm_put(d, "shape_weights", shape_of(&base->weights));
    llm_put(d, "shape_concat", shape_of(&base->concat));
    printf("shapes input=[1, 3, 4] split=%s rotated=%s weights=%s heads=%s concat=%s "
           "output=%s\n", shape_of(&base->q), shape_of(&base->q_rot),
           shape_of(&base->weights), shape_of(&base->heads), shape_of(&base->concat),
           shape_of(&base->y));
    for (i = 0; i < H * T; i++) {
        const char *q = llm_nums(base->q.data + DH * i, DH, 6);
        const char *q_rot = llm_nums(base->q_rot.data + DH * i, DH, 6);
        const char *k_rot = llm_nums(base->k_rot.data + DH * i, DH, 6);
        printf("head %zu t=%zu q=%s k=%s v=%s q_rot=%s k_rot=%s\n", i / T, i % T, q,
               llm_nums(base->k.data + DH * i, DH, 6),
               llm_nums(base->v.data + DH * i, DH, 6), q_rot, k_rot);
        llm_row(d, "qkv", llm_text("%zu", i / T), llm_text("%zu", i % T), q, q_rot,
                k_rot, NULL);
    }
    qkv_same = same(base->q.data, base->k.data, H * T * DH)
               && same(base->q.data, base->v.data, H * T * DH);
    printf("identity projections: q, k, v bit-identical=%s\n",
           llm_put(d, "qkv_same", llm_yes(qkv_same)));
    llm_demo_check(d, qkv_same, "identity projections give q = k = v");
    for (i = 0; i < H * T; i++) {
        const double *w = base->weights.data + T * i, *q = base->q_rot.data + DH * i;
        const double *k = base->k_rot.data + DH * T * (i / T);      /* its first key */
        double s[T], sum = 0.0;
        const char *weights, *scores, *out, *total;
        for (t = i % T, j = 0; j <= t; j++)
            s[j] = (q[0] * k[DH * j] + q[1] * k[DH * j + 1]) / sqrt((double)DH);
        for (j = 0; j < T; j++) {
            sum += w[j];
            if (j > t)
                future_zero = future_zero && w[j] == 0.0 && !signbit(w[j]);
            else if (i < T)                                            /* head 0 */
                worst_uniform = fmax(worst_uniform, fabs(w[j] - 1.0 / (double)(t + 1)));
        }
        worst_sum = fmax(worst_sum, fabs(sum - 1.0));
        weights = llm_nums(w, T, 6);
        scores = llm_nums(s, t + 1, 6);
        out = llm_nums(base->heads.data + DH * i, DH, 6);
        total = llm_num(sum, 6);
        printf("head %zu row %zu weights=%s sum=%s visible_scores=%s output=%s\n",
               i / T, t, weights, total, scores, out);
        llm_row(d, llm_text("w%zu", i / T), llm_text("$q = %zu$", t), llm_num(w[0], 6),
                llm_num(w[1], 6), llm_num(w[2], 6), total, out, NULL);
        llm_put(d, llm_text("w%zu_%zu", i / T, t), weights);
        llm_put(d, llm_text("s%zu_%zu", i / T, t), scores);
        llm_put(d, llm_text("h%zu_%zu", i / T, t), out);
    }
    for (t = 0; t < T; t++) {
        const double *c = base->concat.data + D * t, *y = base->y.data + D * t;
        const char *label = llm_text("$t = %zu$", t);
        printf("t=%zu concat=%s output=%s\n", t, llm_nums(c, D, 6), llm_nums(y, D, 6));
        llm_row(d, "rows", label, "$\\operatorname{Concat}$", llm_nums(c, D, 6), NULL);
        llm_row(d, "rows", label, "$\\operatorname{Concat} \\cdot W_O$",
                llm_nums(y, D, 6), NULL);
        llm_put(d, llm_text("concat_%zu", t), llm_nums(c, D, 6));
        llm_put(d, llm_text("y_%zu", t), llm_nums(y, D, 6));
        llm_row(d, "cat", label, llm_num(c[0], 6), llm_num(c[1], 6), llm_num(c[2], 6),
                llm_num(c[3], 6), NULL);          /* a number a cell, for the figure */
        llm_row(d, "out", label, llm_num(y[0], 6), llm_num(y[1], 6), llm_num(y[2], 6),
                llm_num(y[3], 6), NULL);
    }
    for (t = 0; t < D; t++)
        printf("W_O row %zu=%s\n", t, llm_nums(swap + D * t, D, 6));
    printf("head 0 rows uniform within=%s",
           llm_put(d, "uniform_diff", llm_text("%.1e", worst_uniform)));
    printf(" rows sum to 1 within=%s",
           llm_put(d, "sum_diff", llm_text("%.1e", worst_sum)));
    printf(" future weights exactly +0=%s\n",
           llm_put(d, "future_zero", llm_yes(future_zero)));
    llm_demo_check(d, worst_uniform < 1e-12, "head 0's rows are uniform");
    llm_demo_check(d, worst_sum < 1e-12, "every row sums to 1");
    llm_demo_check(d, future_zero, "every masked weight is exactly +0");
}
static void split_merge(llm_demo *d)
{
    static const size_t heads[3] = {1, 2, 4}, shape[3] = {2, 3, 4};
    llm_tensor *xt = llm_own_tensor(d);
    llm_tape *tape = llm_own_tape(d);
    double x[24];
    llm_var xv, s, m;
    const llm_tensor *sv, *mv;
    size_t i, n;
    int inverse = 1, columns = 1;

    for (i = 0; i < 24; i++)
        x[i] = 0.25 * (double)i - 2.0;
    if (!(LLM_TRY(d, llm_tensor_from(xt, 3, shape, x, 24, &d->err))
          && LLM_TRY(d, llm_tape_init(tape, 16, &d->err))
          && LLM_TRY(d, llm_tape_constant(tape, xt, &xv, &d->err))))
        return;
    for (n = 0; n < 3; n++) {
        const size_t dh = 4 / heads[n];
        llm_tensor *dense = llm_own_tensor(d);
        if (!(LLM_TRY(d, llm_mha_split_heads(tape, xv, heads[n], &s, &d->err))
              && LLM_TRY(d, llm_mha_merge_heads(tape, s, &m, &d->err))
              && LLM_TRY(d, llm_tape_value(tape, s, &sv, &d->err))
              && LLM_TRY(d, llm_tape_value(tape, m, &mv, &d->err))
              && LLM_TRY(d, llm_tensor_copy(dense, mv, &d->err))))
            return;
        for (i = 0; i < 24; i++)   /* x[12 b + 4 t + dh h + e] at (b, h, t, e) */
            columns = columns && sv->data[sv->offset + i / 12 * sv->stride[0]
                                          + i % 4 / dh * sv->stride[1]
                                          + i / 4 % 3 * sv->stride[2]
                                          + i % dh * sv->stride[3]] == x[i];
        inverse = inverse && dense->rank == 3 && dense->shape[2] == 4
                  && same(dense->data + dense->offset, x, 24);
    }
    printf("split [2, 3, 4] into 1, 2, 4 heads: head h holds columns h*dh..=%s; ",
           llm_put(d, "split_columns", llm_yes(columns)));
    printf("merge(split(x)) bit-identical=%s\n",
           llm_put(d, "split_inverse", llm_yes(inverse)));
    llm_demo_check(d, columns, "head h holds columns h dh ..");
    llm_demo_check(d, inverse, "merge(split(x)) is x");
}
static void isolation(llm_demo *d)
{
    mha_run *other = llm_own(d, sizeof *other, release_run);
    double w[D * D];
    size_t m, r, t;
    int ran, same0, same_w0, moved1, same_y = 1, moved_y = 0;

    for (m = 0; m < 3; m++) {
        memcpy(w, eye, sizeof eye);
        for (r = 0; r < D; r++) {
            w[D * r + 2] += 0.25 * (double)(r + 1) * (double)(m + 1);
            w[D * r + 3] -= 0.5 * (double)r;
        }
        memcpy(weight(m)->value.data, w, sizeof w);
    }
    ran = run(d, &mha, ps, rope, xin, 0, other);
    for (m = 0; m < 3; m++)
        memcpy(weight(m)->value.data, eye, sizeof eye);
    if (!ran)
        return;
    same0 = same(other->heads.data, base->heads.data, T * DH);
    same_w0 = same(other->weights.data, base->weights.data, T * T);
    moved1 = !same(other->heads.data + T * DH, base->heads.data + T * DH, T * DH);
    for (t = 0; t < T; t++) {
        same_y = same_y && same(other->y.data + D * t + 2, base->y.data + D * t + 2, 2);
        moved_y = moved_y || !same(other->y.data + D * t, base->y.data + D * t, 2);
    }
    printf("head 1's columns of W_Q, W_K, W_V changed: head 0 weights bit-identical=%s "
           "head 0 outputs bit-identical=%s head 1 outputs changed=%s\n",
           llm_yes(same_w0), llm_yes(same0), llm_yes(moved1));
    printf("  after W_O: output columns 2, 3 (head 0) bit-identical=%s columns 0, 1 "
           "(head 1) changed=%s\n", llm_yes(same_y), llm_yes(moved_y));
    llm_put(d, "iso_same", llm_yes(same0 && same_w0));
    llm_put(d, "iso_moved", llm_yes(moved1));
    llm_put(d, "iso_y", llm_yes(same_y && moved_y));
    llm_put(d, "iso_h1", llm_nums(other->heads.data + (T + 2) * DH, DH, 6));
    llm_demo_check(d, same0 && same_w0, "head 0 did not move");
    llm_demo_check(d, moved1, "head 1 moved");
    llm_demo_check(d, same_y && moved_y, "W_O sends head 1 to columns 0 and 1 alone");
}
static void causality(llm_demo *d)
{
    static const double token2[D] = {0.5, -1.0, 2.0, 0.25};
    mha_run *other = llm_own(d, sizeof *other, release_run);
    mha_run *later = llm_own(d, sizeof *later, release_run);
    double x2[T * D], worst = 0.0;
    size_t i;
    int prefix, changed;

    memcpy(x2, xin, sizeof x2);
    memcpy(x2 + 2 * D, token2, sizeof token2);
    if (!(run(d, &mha, ps, rope, x2, 0, other)
          && run(d, &mha, ps, rope, xin, 3, later)))
        return;
    prefix = same(other->y.data, base->y.data, 2 * D);
    changed = !same(other->y.data + 2 * D, base->y.data + 2 * D, D);
    printf("token 2 -> %s: output rows 0, 1 bit-identical=%s", llm_nums(token2, D, 6),
           llm_put(d, "prefix_same", llm_yes(prefix)));
    printf(" row 2 changed=%s\n", llm_put(d, "prefix_changed", llm_yes(changed)));
    printf("  new row 2=%s\n",
           llm_put(d, "prefix_row2", llm_nums(other->y.data + 2 * D, D, 6)));
    for (i = 0; i < H * T * T; i++)
        worst = fmax(worst, fabs(later->weights.data[i] - base->weights.data[i]));
    printf("same rows at positions 3..5: largest change of a weight=%s\n",
           llm_put(d, "offset_diff", llm_text("%.1e", worst)));
    llm_demo_check(d, prefix, "rows 0 and 1 do not see token 2");
    llm_demo_check(d, changed, "row 2 sees token 2");
    llm_demo_check(d, worst < 1e-12, "the same rows later give the same weights");
}
/* A fixed upstream gradient G [1, 3, 4], none of its entries alike. */
static const double upstream[T * D] = {0.7, -0.3, 0.5, 1.1, -0.9, 0.4, 0.2, -0.6,
                                       0.3, 0.8, -1.2, 0.45};

static void gradients(llm_demo *d)
{
    static const size_t coords[16] = {0, 1, 2, 3, 4, 5, 6, 7,
                                      8, 9, 10, 11, 12, 13, 14, 15};
    static const char *const blocks[5] = {"X", "W_Q", "W_K", "W_V", "W_O"};
    const size_t shape[3] = {1, T, D};
    llm_tensor *xt = llm_own_tensor(d);
    llm_probe p = {mha_layer, &mha, ps, 3, shape, NULL, upstream};
    double y[T * D], gx[T * D], loss = 0.0, worst = 0.0, worst_all = 0.0;
    size_t b, i, failures = 0, failed = 0, total = 0;

    if (!LLM_TRY(d, llm_tensor_from(xt, 3, shape, xin, T * D, &d->err)))
        return;
    p.x = xt->data;
    if (!LLM_TRY(d, llm_probe_run(&p, y, T * D, NULL, NULL, gx, &d->err)))
        return;
    for (i = 0; i < T * D; i++)
        loss += upstream[i] * y[i];
    printf("gradient check: L = sum G * MHA(X), G=%s L=%s\n",
           llm_nums(upstream, T * D, 6), llm_num(loss, 6));
    for (b = 0; b < 5; b++) {
        llm_tensor *theta = b == 0 ? xt : &weight(b - 1)->value;
        const double *analytic = b == 0 ? gx : weight(b - 1)->grad.data;
        const char *verdict;
        if (!LLM_TRY(d, llm_gradient_check(llm_probe_loss, &p, theta, analytic, coords,
                                           theta->size, 1e-6, 8e-6, &worst, &failures,
                                           &d->err)))
            return;
        verdict = failures == 0 ? "pass" : "fail";
        llm_row(d, "grads", llm_text("$%s$", blocks[b]), llm_text("%zu", theta->size),
                llm_text("%.1e", worst), verdict, NULL);
        printf("gradcheck %s coordinates=%zu worst=%s verdict=%s\n", blocks[b],
               theta->size, llm_text("%.1e", worst), verdict);
        printf("  analytic=%s\n",
               llm_nums(analytic, theta->size < 8 ? theta->size : 8, 6));
        failed += failures;
        total += theta->size;
        worst_all = fmax(worst_all, worst);
    }
    llm_put(d, "grad_worst", llm_text("%.1e", worst_all));
    llm_put(d, "grad_total", llm_text("%zu", total));
    llm_put(d, "grad_verdict", failed == 0 ? "pass" : "fail");
    printf("gradcheck total coordinates=%zu delta=1e-6 tolerance=8e-6 worst=%.1e "
           "verdict=%s\n", total, worst_all, failed == 0 ? "pass" : "fail");
    llm_demo_check(d, failed == 0, "every gradient coordinate agrees");
    llm_demo_check(d, total == 76, "all 76 coordinates were checked");
}
static void more_heads(llm_demo *d)
{
    static const size_t widths[5] = {4, 4, 8, 8, 8}, counts[5] = {1, 2, 1, 2, 4};
    double x8[T * 8];
    size_t n, i;

    for (i = 0; i < T * 8; i++)
        x8[i] = cos(0.7 * (double)i + 0.3);
    for (n = 0; n < 5; n++) {
        llm_params *list = llm_own_params(d);
        llm_rope *r = llm_own(d, sizeof *r, release_rope);
        mha_run *out = llm_own(d, sizeof *out, release_run);
        llm_mha m;
        llm_rng g;
        size_t products;
        llm_rng_seed(&g, 30);
        if (!(LLM_TRY(d, llm_mha_init(&m, list, "attention", widths[n], counts[n], &g,
                                      &d->err))
              && LLM_TRY(d, llm_rope_init(r, m.head_dim, 100.0, 6, LLM_ROPE_ADJACENT,
                                          &d->err))
              && run(d, &m, list, r, widths[n] == 8 ? x8 : xin, 0, out)))
            return;
        products = counts[n] * T * T * m.head_dim;
        printf("d_model=%zu heads=%zu head_dim=%zu parameters=%zu weights=%s "
               "score products=%zu\n", widths[n], counts[n], m.head_dim,
               count_params(list), shape_of(&out->weights), products);
        llm_row(d, "heads", llm_text("%zu", widths[n]), llm_text("%zu", counts[n]),
                llm_text("%zu", m.head_dim), llm_text("%zu", count_params(list)),
                shape_of(&out->weights), llm_text("%zu", products), NULL);
        llm_demo_check(d, count_params(list) == 4 * widths[n] * widths[n],
                       "4 D^2 parameters at every head count");
    }
}
static void refusals(llm_demo *d)
{
    static const size_t s3[3] = {1, T, D}, s2[2] = {T, D}, s6[3] = {1, T, 6},
                        s0[3] = {1, 0, D};
    static const double six[T * 6] = {0};
    static const llm_status want[10] = {
        LLM_ERR_CONFIG, LLM_ERR_CONFIG, LLM_ERR_CONFIG, LLM_ERR_NAME, LLM_ERR_CONFIG,
        LLM_ERR_RANK, LLM_ERR_SHAPE, LLM_ERR_EMPTY, LLM_ERR_INDEX, LLM_ERR_TAPE};
    llm_rope *wide = llm_own(d, sizeof *wide, release_rope);
    llm_tape *tape = llm_own_tape(d);
    llm_tensor *xt = llm_own_tensor(d), *x2 = llm_own_tensor(d);
    llm_tensor *x6 = llm_own_tensor(d), *x0 = llm_own_tensor(d);
    llm_error *e = &d->err;
    const llm_params ps_kept = *ps;
    const llm_rng rng_kept = rng;
    struct { llm_mha bad; llm_var y; } o, kept;   /* what the refusals must not touch */
    llm_var xv, v2, v6, v0, stale;
    llm_status st[10];
    size_t count;
    int untouched;

    memset(&o, 0x5a, sizeof o);
    memcpy(&kept, &o, sizeof o);
    if (!(LLM_TRY(d, llm_rope_init(wide, 4, 100.0, 6, LLM_ROPE_ADJACENT, e))
          && LLM_TRY(d, llm_tensor_from(xt, 3, s3, xin, T * D, e))
          && LLM_TRY(d, llm_tensor_from(x2, 2, s2, xin, T * D, e))
          && LLM_TRY(d, llm_tensor_from(x6, 3, s6, six, T * 6, e))
          && LLM_TRY(d, llm_tensor_zeros(x0, 3, s0, e))
          && LLM_TRY(d, llm_tape_init(tape, 8, e))
          && LLM_TRY(d, llm_tape_constant(tape, xt, &stale, e))
          && LLM_TRY(d, llm_tape_reset(tape, e))
          && LLM_TRY(d, llm_tape_constant(tape, xt, &xv, e))
          && LLM_TRY(d, llm_tape_constant(tape, x2, &v2, e))
          && LLM_TRY(d, llm_tape_constant(tape, x6, &v6, e))
          && LLM_TRY(d, llm_tape_constant(tape, x0, &v0, e))))
        return;
    count = tape->count;
    st[0] = llm_mha_init(&o.bad, ps, "other", 4, 0, &rng, e);
    llm_refuse(d, "d_model 4, 0 heads", st[0]);
    st[1] = llm_mha_init(&o.bad, ps, "other", 4, 3, &rng, e);
    llm_refuse(d, "d_model 4, 3 heads", st[1]);
    st[2] = llm_mha_init(&o.bad, ps, "other", 4, 4, &rng, e);
    llm_refuse(d, "d_model 4, 4 heads of width 1", st[2]);
    llm_put(d, "odd_message", d->err.message);
    st[3] = llm_mha_init(&o.bad, ps, "attention", 4, 2, &rng, e);
    llm_refuse(d, "the prefix attention again", st[3]);
    st[4] = forward(tape, wide, xv, 0, &o.y, e);
    llm_refuse(d, "a rope for heads of width 4", st[4]);
    st[5] = forward(tape, rope, v2, 0, &o.y, e);
    llm_refuse(d, "x of shape [3, 4]", st[5]);
    st[6] = forward(tape, rope, v6, 0, &o.y, e);
    llm_refuse(d, "x of shape [1, 3, 6]", st[6]);
    st[7] = forward(tape, rope, v0, 0, &o.y, e);
    llm_refuse(d, "x of shape [1, 0, 4]", st[7]);
    st[8] = forward(tape, rope, xv, 4, &o.y, e);
    llm_refuse(d, "3 tokens from position 4, capacity 6", st[8]);
    llm_put(d, "index_message", d->err.message);
    st[9] = forward(tape, rope, stale, 0, &o.y, e);
    llm_refuse(d, "x from an earlier recording", st[9]);
    untouched = memcmp(&o, &kept, sizeof o) == 0 && rng.state == rng_kept.state
                && ps->count == ps_kept.count && ps->items == ps_kept.items
                && tape->count == count;
    printf("layer, parameters, generator, output and tape untouched=%s\n",
           llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "the refusals left everything untouched");
    llm_demo_check(d, memcmp(st, want, sizeof want) == 0, "every refusal has its code");
}

int main(int argc, char **argv)
{
    llm_demo d;
    if (llm_demo_begin(&d, argc, argv, "ch30-multi-head-attention") != 0)
        return 2;
    ps = llm_own_params(&d);
    rope = llm_own(&d, sizeof *rope, release_rope);
    base = llm_own(&d, sizeof *base, release_run);
    llm_demo_run(&d, build);
    llm_demo_run(&d, stages);
    llm_demo_run(&d, split_merge);
    llm_demo_run(&d, isolation);
    llm_demo_run(&d, causality);
    llm_demo_run(&d, gradients);
    llm_demo_run(&d, more_heads);
    llm_demo_run(&d, refusals);
    return llm_demo_end(&d);
}
