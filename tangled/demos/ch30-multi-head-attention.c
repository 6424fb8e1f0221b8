/* ch30-multi-head-attention -- two heads with RoPE and causal weights, the
   concatenation and W_O; separation, causality, gradients, refusals. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/attention.h"
#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/probe.h"

/* D: d_model; H: heads, of width DH; T: tokens. */
enum { D = 4, H = 2, DH = 2, T = 3 };

static const double eye[D * D] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
/* W_O: row r of the concatenated row goes to column (r + 2) mod 4. */
static const double swap[D * D] = {0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0};

static llm_params *ps;       /* the fixture's list; setup takes it from the demo */
static llm_rope *rope;       /* head width 2, base 100, capacity 6; the same */
static llm_mha mha;          /* in ps */
static llm_rng rng;          /* what mha was drawn from */
/* The input [1, 3, 4]. Row t: [cos t, -sin t] for head 0, the rotation RoPE
   will undo (setup writes rows 1 and 2); then [1, 0], [0, 1], [1, 1] for head 1. */
static double xin[T * D] = {1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 1, 1};
static const size_t xshape[3] = {1, T, D};
static llm_tensor *xfix;     /* xin as a tensor, from setup */
static void release_rope(void *r)
{
    llm_rope_free(r);
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

/* A property of the evidence, traced under key as yes or no and checked. */
static const char *claim(llm_demo *d, const char *key, int holds, const char *what)
{
    llm_demo_check(d, holds, what);
    return llm_put(d, key, llm_yes(holds));
}
/* The stages of one pass: those of llm_mha_trace, then the output. */
enum { Q, K, V, Q_ROT, K_ROT, WEIGHTS, HEADS, CONCAT, Y, STAGES };
#define ROOM 64              /* the values a stage may hold */

typedef struct mha_run {
    double value[STAGES][ROOM];                 /* row-major */
    size_t rank[STAGES], shape[STAGES][LLM_MAX_RANK];
} mha_run;

static mha_run base;         /* the fixture pass */

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
    const llm_var *stage[STAGES] = {&tr.q, &tr.k, &tr.v, &tr.q_rot, &tr.k_rot,
                                    &tr.weights, &tr.heads, &tr.concat, &y};
    size_t s;
    int ok = LLM_TRY(d, llm_tensor_from(xt, 3, shape, x, T * m->d_model, &d->err))
             && LLM_TRY(d, llm_tape_init(tape, 32, &d->err))
             && LLM_TRY(d, llm_tape_constant(tape, xt, &xv, &d->err))
             && LLM_TRY(d, llm_mha_forward(m, list, tape, r, xv, offset, &tr, &y,
                                           &d->err));
    for (s = 0; ok && s < STAGES; s++)
        ok = LLM_TRY(d, llm_probe_read(tape, *stage[s], o->value[s], ROOM, &o->rank[s],
                                       o->shape[s], &d->err));
    return ok;
}

static const char *shape_of(const mha_run *o, size_t s)
{
    return llm_sizes(o->shape[s], o->rank[s]);
}

/* Row i = h T + t of stage s of the fixture pass: DH numbers. */
static const char *pair(size_t s, size_t i)
{
    return llm_nums(base.value[s] + DH * i, DH, 6);
}

/* The fixture layer at positions 0.., for chapter 19's probe and the refusals. */
static llm_status mha_layer(const void *layer, llm_params *list, llm_tape *tape,
                            llm_var x, llm_var *y, llm_error *err)
{
    return llm_mha_forward(layer, list, tape, rope, x, 0, NULL, y, err);
}
static void setup(llm_demo *d)
{
    const char *names = "";
    size_t i;
    ps = llm_own_params(d);
    rope = llm_own(d, sizeof *rope, release_rope);
    xfix = llm_own_tensor(d);
    for (i = 1; i < T; i++) {
        xin[D * i] = cos((double)i);
        xin[D * i + 1] = -sin((double)i);
    }
    llm_rng_seed(&rng, 30);
    if (!(LLM_TRY(d, llm_mha_init(&mha, ps, "attention", D, H, &rng, &d->err))
          && LLM_TRY(d, llm_mha_check(&mha, ps, "attention", &d->err))
          && LLM_TRY(d, llm_rope_init(rope, DH, 100.0, 6, LLM_ROPE_ADJACENT, &d->err))
          && LLM_TRY(d, llm_tensor_from(xfix, 3, xshape, xin, T * D, &d->err))))
        return;
    for (i = 0; i < 4; i++)         /* W_Q, W_K, W_V, W_O, as llm_mha_check says */
        memcpy(ps->items[i].value.data, i < 3 ? eye : swap, sizeof eye);
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
    if (!run(d, &mha, ps, rope, xin, 0, &base))
        return;
    llm_put(d, "shape_split", shape_of(&base, Q));
    llm_put(d, "shape_weights", shape_of(&base, WEIGHTS));
    llm_put(d, "shape_concat", shape_of(&base, CONCAT));
    printf("shapes input=[1, 3, 4] split=%s rotated=%s weights=%s heads=%s concat=%s "
           "output=%s\n", shape_of(&base, Q), shape_of(&base, Q_ROT),
           shape_of(&base, WEIGHTS), shape_of(&base, HEADS), shape_of(&base, CONCAT),
           shape_of(&base, Y));
    for (i = 0; i < H * T; i++) {
        printf("head %zu t=%zu q=%s k=%s v=%s q_rot=%s k_rot=%s\n", i / T, i % T,
               pair(Q, i), pair(K, i), pair(V, i), pair(Q_ROT, i), pair(K_ROT, i));
        llm_row(d, "qkv", llm_text("%zu", i / T), llm_text("%zu", i % T), pair(Q, i),
                pair(Q_ROT, i), pair(K_ROT, i), NULL);
    }
    qkv_same = same(base.value[Q], base.value[K], H * T * DH)
               && same(base.value[Q], base.value[V], H * T * DH);
    printf("identity projections: q, k, v bit-identical=%s\n",
           claim(d, "qkv_same", qkv_same, "identity projections give q = k = v"));
    for (i = 0; i < H * T; i++) {
        const double *w = base.value[WEIGHTS] + T * i, *q = base.value[Q_ROT] + DH * i;
        const double *k = base.value[K_ROT] + DH * T * (i / T);     /* its first key */
        double s[T], sum = 0.0;
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
        printf("head %zu row %zu weights=%s sum=%s visible_scores=%s output=%s\n",
               i / T, t, llm_nums(w, T, 6), llm_num(sum, 6), llm_nums(s, t + 1, 6),
               pair(HEADS, i));
        llm_row(d, llm_text("w%zu", i / T), llm_text("$q = %zu$", t), llm_num(w[0], 6),
                llm_num(w[1], 6), llm_num(w[2], 6), llm_num(sum, 6), pair(HEADS, i),
                NULL);
        llm_put(d, llm_text("w%zu_%zu", i / T, t), llm_nums(w, T, 6));
        llm_put(d, llm_text("s%zu_%zu", i / T, t), llm_nums(s, t + 1, 6));
        llm_put(d, llm_text("h%zu_%zu", i / T, t), pair(HEADS, i));
    }
    for (t = 0; t < T; t++) {
        const double *c = base.value[CONCAT] + D * t, *y = base.value[Y] + D * t;
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
           claim(d, "future_zero", future_zero, "every masked weight is exactly +0"));
    llm_demo_check(d, worst_uniform < 1e-12, "head 0's rows are uniform");
    llm_demo_check(d, worst_sum < 1e-12, "every row sums to 1");
}
static void split_merge(llm_demo *d)
{
    static const size_t heads[3] = {1, 2, 4}, shape[3] = {2, 3, 4};
    llm_tensor *xt = llm_own_tensor(d);
    llm_tape *tape = llm_own_tape(d);
    double x[24], split[24], merged[24];
    size_t i, n, rank, merged_shape[LLM_MAX_RANK];
    llm_var xv, s, m;
    int inverse = 1, columns = 1;
    for (i = 0; i < 24; i++)
        x[i] = 0.25 * (double)i - 2.0;
    if (!(LLM_TRY(d, llm_tensor_from(xt, 3, shape, x, 24, &d->err))
          && LLM_TRY(d, llm_tape_init(tape, 16, &d->err))
          && LLM_TRY(d, llm_tape_constant(tape, xt, &xv, &d->err))))
        return;
    for (n = 0; n < 3; n++) {
        const size_t dh = 4 / heads[n];
        if (!(LLM_TRY(d, llm_mha_split_heads(tape, xv, heads[n], &s, &d->err))
              && LLM_TRY(d, llm_mha_merge_heads(tape, s, &m, &d->err))
              && LLM_TRY(d, llm_probe_read(tape, s, split, 24, NULL, NULL, &d->err))
              && LLM_TRY(d, llm_probe_read(tape, m, merged, 24, &rank, merged_shape,
                                           &d->err))))
            return;
        for (i = 0; i < 24; i++)   /* x[12 b + 4 t + dh h + e] at (b, h, t, e) */
            columns = columns && split[i / 12 * 12 + i % 4 / dh * 3 * dh
                                       + i / 4 % 3 * dh + i % dh] == x[i];
        inverse = inverse && rank == 3 && merged_shape[2] == 4 && same(merged, x, 24);
    }
    printf("split [2, 3, 4] into 1, 2, 4 heads: head h holds columns h*dh..=%s; ",
           claim(d, "split_columns", columns, "head h holds columns h dh .."));
    printf("merge(split(x)) bit-identical=%s\n",
           claim(d, "split_inverse", inverse, "merge(split(x)) is x"));
}
static void separation(llm_demo *d)
{
    static const double token2[D] = {0.5, -1.0, 2.0, 0.25};
    mha_run o, later;
    const double *y = o.value[Y], *y0 = base.value[Y];
    double x2[T * D], worst = 0.0;
    size_t m, r, t;
    int same0, same_w0, moved1, same_y = 1, moved_y = 0, prefix, changed;
    for (m = 0; m < 3; m++)                     /* W_Q, W_K, W_V: identities till now */
        for (r = 0; r < D; r++) {
            ps->items[m].value.data[D * r + 2] += 0.25 * (double)((r + 1) * (m + 1));
            ps->items[m].value.data[D * r + 3] -= 0.5 * (double)r;
        }
    if (!run(d, &mha, ps, rope, xin, 0, &o))
        return;                                   /* ok is cleared: nothing more runs */
    for (m = 0; m < 3; m++)
        memcpy(ps->items[m].value.data, eye, sizeof eye);
    same0 = same(o.value[HEADS], base.value[HEADS], T * DH);
    same_w0 = same(o.value[WEIGHTS], base.value[WEIGHTS], T * T);
    moved1 = !same(o.value[HEADS] + T * DH, base.value[HEADS] + T * DH, T * DH);
    for (t = 0; t < T; t++) {
        same_y = same_y && same(y + D * t + 2, y0 + D * t + 2, 2);   /* head 0 */
        moved_y = moved_y || !same(y + D * t, y0 + D * t, 2);        /* head 1 */
    }
    printf("head 1's columns of W_Q, W_K, W_V changed: head 0 weights bit-identical=%s "
           "head 0 outputs bit-identical=%s head 1 outputs changed=%s\n",
           llm_yes(same_w0), llm_yes(same0), llm_yes(moved1));
    printf("  after W_O: output columns 2, 3 (head 0) bit-identical=%s columns 0, 1 "
           "(head 1) changed=%s\n", llm_yes(same_y), llm_yes(moved_y));
    claim(d, "iso_same", same0 && same_w0, "head 0 did not move");
    claim(d, "iso_moved", moved1, "head 1 moved");
    claim(d, "iso_y", same_y && moved_y, "W_O sends head 1 to columns 0 and 1 alone");
    llm_put(d, "iso_h1", llm_nums(o.value[HEADS] + (T + 2) * DH, DH, 6));
    memcpy(x2, xin, sizeof x2);
    memcpy(x2 + 2 * D, token2, sizeof token2);
    if (!(run(d, &mha, ps, rope, x2, 0, &o) && run(d, &mha, ps, rope, xin, 3, &later)))
        return;
    prefix = same(y, y0, 2 * D);
    changed = !same(y + 2 * D, y0 + 2 * D, D);
    printf("token 2 -> %s: output rows 0, 1 bit-identical=%s", llm_nums(token2, D, 6),
           claim(d, "prefix_same", prefix, "rows 0 and 1 do not see token 2"));
    printf(" row 2 changed=%s\n",
           claim(d, "prefix_changed", changed, "row 2 sees token 2"));
    printf("  new row 2=%s\n", llm_put(d, "prefix_row2", llm_nums(y + 2 * D, D, 6)));
    for (t = 0; t < H * T * T; t++)
        worst = fmax(worst, fabs(later.value[WEIGHTS][t] - base.value[WEIGHTS][t]));
    printf("same rows at positions 3..5: largest change of a weight=%s\n",
           llm_put(d, "offset_diff", llm_text("%.1e", worst)));
    llm_demo_check(d, worst < 1e-12, "the same rows later give the same weights");
}
static void gradients(llm_demo *d)
{
    /* A fixed upstream gradient G [1, 3, 4], none of its entries alike. */
    static const double upstream[T * D] = {0.7, -0.3, 0.5, 1.1, -0.9, 0.4, 0.2, -0.6,
                                           0.3, 0.8, -1.2, 0.45};
    static const size_t coords[16] = {0, 1, 2, 3, 4, 5, 6, 7,
                                      8, 9, 10, 11, 12, 13, 14, 15};
    static const char *const blocks[5] = {"X", "W_Q", "W_K", "W_V", "W_O"};
    llm_probe p = {mha_layer, &mha, ps, 3, xshape, xfix->data, upstream};
    double y[T * D], gx[T * D], loss = 0.0, worst = 0.0, worst_all = 0.0;
    size_t b, i, failures = 0, failed = 0, total = 0;
    if (!LLM_TRY(d, llm_probe_run(&p, y, T * D, NULL, NULL, gx, &d->err)))
        return;
    for (i = 0; i < T * D; i++)
        loss += upstream[i] * y[i];
    printf("gradient check: L = sum G * MHA(X), G=%s L=%s\n",
           llm_nums(upstream, T * D, 6), llm_num(loss, 6));
    for (b = 0; b < 5; b++) {
        llm_tensor *theta = b == 0 ? xfix : &ps->items[b - 1].value;
        const double *analytic = b == 0 ? gx : ps->items[b - 1].grad.data;
        if (!LLM_TRY(d, llm_gradient_check(llm_probe_loss, &p, theta, analytic, coords,
                                           theta->size, 1e-6, 8e-6, &worst, &failures,
                                           &d->err)))
            return;
        llm_row(d, "grads", llm_text("$%s$", blocks[b]), llm_text("%zu", theta->size),
                llm_text("%.1e", worst), failures ? "fail" : "pass", NULL);
        printf("gradcheck %s coordinates=%zu worst=%s verdict=%s\n", blocks[b],
               theta->size, llm_text("%.1e", worst), failures ? "fail" : "pass");
        printf("  analytic=%s\n", llm_nums(analytic, 8, 6));        /* the first 8 */
        failed += failures;
        total += theta->size;
        worst_all = fmax(worst_all, worst);
    }
    printf("gradcheck total coordinates=%zu delta=1e-6 tolerance=8e-6 worst=%s "
           "verdict=%s\n", total, llm_put(d, "grad_worst", llm_text("%.1e", worst_all)),
           failed == 0 ? "pass" : "fail");
    llm_put(d, "grad_total", llm_text("%zu", total));
    llm_put(d, "grad_verdict", failed == 0 ? "pass" : "fail");
    llm_demo_check(d, failed == 0, "every gradient coordinate agrees");
    llm_demo_check(d, total == 76, "all 76 coordinates were checked");
}
static void more_heads(llm_demo *d)
{
    static const size_t widths[5] = {4, 4, 8, 8, 8}, counts[5] = {1, 2, 1, 2, 4};
    static const double zeros[T * 8];             /* only shapes and counts are read */
    mha_run out;
    size_t n, products;
    for (n = 0; n < 5; n++) {
        llm_params *list = llm_own_params(d);
        llm_rope *r = llm_own(d, sizeof *r, release_rope);
        llm_mha m;
        llm_rng g;
        llm_rng_seed(&g, 30);
        if (!(LLM_TRY(d, llm_mha_init(&m, list, "attention", widths[n], counts[n], &g,
                                      &d->err))
              && LLM_TRY(d, llm_rope_init(r, m.head_dim, 100.0, 6, LLM_ROPE_ADJACENT,
                                          &d->err))
              && run(d, &m, list, r, zeros, 0, &out)))
            return;
        products = counts[n] * T * T * m.head_dim;
        printf("d_model=%zu heads=%zu head_dim=%zu parameters=%zu weights=%s "
               "score products=%zu\n", widths[n], counts[n], m.head_dim,
               count_params(list), shape_of(&out, WEIGHTS), products);
        llm_row(d, "heads", llm_text("%zu", widths[n]), llm_text("%zu", counts[n]),
                llm_text("%zu", m.head_dim), llm_text("%zu", count_params(list)),
                shape_of(&out, WEIGHTS), llm_text("%zu", products), NULL);
        llm_demo_check(d, count_params(list) == 4 * widths[n] * widths[n],
                       "4 D^2 parameters at every head count");
    }
}
static void refusals(llm_demo *d)
{
    static const size_t s2[2] = {T, D}, s6[3] = {1, T, 6}, s0[3] = {1, 0, D};
    llm_rope *wide = llm_own(d, sizeof *wide, release_rope);
    llm_tape *tape = llm_own_tape(d);
    llm_tensor *x6 = llm_own_tensor(d), *x0 = llm_own_tensor(d);
    llm_error *e = &d->err;
    const llm_params ps_kept = *ps;
    const llm_rng rng_kept = rng;
    struct { llm_mha bad; llm_var y; } o, kept;   /* what the refusals must not touch */
    llm_var xv, v2, v6, v0, stale;
    size_t count;
    int untouched;
    memset(&o, 0x5a, sizeof o);
    memcpy(&kept, &o, sizeof o);
    if (!(LLM_TRY(d, llm_rope_init(wide, 4, 100.0, 6, LLM_ROPE_ADJACENT, e))
          && LLM_TRY(d, llm_tensor_zeros(x6, 3, s6, e))
          && LLM_TRY(d, llm_tensor_zeros(x0, 3, s0, e))
          && LLM_TRY(d, llm_tape_init(tape, 8, e))
          && LLM_TRY(d, llm_tape_constant(tape, xfix, &stale, e))
          && LLM_TRY(d, llm_tape_reset(tape, e))
          && LLM_TRY(d, llm_tape_constant(tape, xfix, &xv, e))
          && LLM_TRY(d, llm_tape_reshape(tape, xv, 2, s2, &v2, e))
          && LLM_TRY(d, llm_tape_constant(tape, x6, &v6, e))
          && LLM_TRY(d, llm_tape_constant(tape, x0, &v0, e))))
        return;
    count = tape->count;
    llm_refuse_as(d, "d_model 4, 0 heads",
                  llm_mha_init(&o.bad, ps, "other", 4, 0, &rng, e), LLM_ERR_CONFIG);
    llm_refuse_as(d, "d_model 4, 3 heads",
                  llm_mha_init(&o.bad, ps, "other", 4, 3, &rng, e), LLM_ERR_CONFIG);
    llm_refuse_as(d, "d_model 4, 4 heads of width 1",
                  llm_mha_init(&o.bad, ps, "other", 4, 4, &rng, e), LLM_ERR_CONFIG);
    llm_put(d, "odd_message", d->err.message);
    llm_refuse_as(d, "the prefix attention again",
                  llm_mha_init(&o.bad, ps, "attention", 4, 2, &rng, e), LLM_ERR_NAME);
    llm_refuse_as(d, "a rope for heads of width 4",
                  llm_mha_forward(&mha, ps, tape, wide, xv, 0, NULL, &o.y, e),
                  LLM_ERR_CONFIG);
    llm_refuse_as(d, "x of shape [3, 4]", mha_layer(&mha, ps, tape, v2, &o.y, e),
                  LLM_ERR_RANK);
    llm_refuse_as(d, "x of shape [1, 3, 6]", mha_layer(&mha, ps, tape, v6, &o.y, e),
                  LLM_ERR_SHAPE);
    llm_refuse_as(d, "x of shape [1, 0, 4]", mha_layer(&mha, ps, tape, v0, &o.y, e),
                  LLM_ERR_EMPTY);
    llm_refuse_as(d, "3 tokens from position 4, capacity 6",
                  llm_mha_forward(&mha, ps, tape, rope, xv, 4, NULL, &o.y, e),
                  LLM_ERR_INDEX);
    llm_put(d, "index_message", d->err.message);
    llm_refuse_as(d, "x from an earlier recording",
                  mha_layer(&mha, ps, tape, stale, &o.y, e), LLM_ERR_TAPE);
    untouched = memcmp(&o, &kept, sizeof o) == 0 && rng.state == rng_kept.state
                && memcmp(ps, &ps_kept, sizeof *ps) == 0 && tape->count == count;
    printf("layer, parameters, generator, output and tape untouched=%s\n",
           claim(d, "untouched", untouched, "the refusals left everything untouched"));
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {stages, split_merge, separation, gradients,
                                            more_heads, refusals, NULL};
    return llm_demo_main(argc, argv, "ch30-multi-head-attention", setup, sections);
}
