/* attention.c -- softmax on the tape and scaled dot-product attention. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/attention.h"
#include "llm/softmax.h"
#include "tape_op.h"

/* pbar += J^T cbar, row by row: pbar_j += y_j (cbar_j - sum_i cbar_i y_i);
   entries with y_j = 0 (masked ones) receive nothing */
static llm_status softmax_vjp(const llm_tape *tape, const llm_node *c, size_t k,
                              const double *cbar, double *pbar, llm_error *err)
{
    const llm_tensor *y = &c->value;   /* contiguous, row-major */
    size_t n, rows, r, j;
    (void)tape;
    (void)k;
    (void)err;
    if (y->size == 0)
        return LLM_OK;
    n = y->shape[y->rank - 1];
    rows = y->size / n;
    for (r = 0; r < rows; r++) {
        const double *yr = y->data + y->offset + r * n, *g = cbar + r * n;
        double s = 0.0;
        for (j = 0; j < n; j++)
            s += g[j] * yr[j];
        for (j = 0; j < n; j++)
            if (yr[j] != 0.0)
                pbar[r * n + j] += yr[j] * (g[j] - s);
    }
    return LLM_OK;
}

static const llm_op softmax_op = {"softmax", softmax_vjp};

llm_status llm_tape_softmax(llm_tape *tape, llm_var a, llm_var *out, llm_error *err)
{
    const char *stage = "tape.softmax";
    const llm_tensor *x;
    llm_node node;
    llm_error why;
    llm_status st = llm_tape_check(tape, 1, &a, out, stage, err);
    if (st != LLM_OK)
        return st;
    x = &tape->nodes[a.id].value;
    if (x->rank == 0)
        return llm_fail(err, LLM_ERR_AXIS, stage, "a scalar has no axis to normalise");
    memset(&node, 0, sizeof node);
    node.op = &softmax_op;
    node.nargs = 1;
    node.arg[0] = a.id;
    st = llm_softmax(&node.value, x, x->rank - 1, &why);
    if (st != LLM_OK)
        return llm_fail_from(err, &why, stage, "%s", why.message);
    return llm_tape_append(tape, node, out, stage, err);
}

/* One operand's handle, named q, k or v in the message: of this
   recording, and on the tape. */
static llm_status attention_operand(const llm_tape *tape, llm_var x, const char *name,
                                    const char *stage, llm_error *err)
{
    if (x.epoch != tape->epoch)
        return llm_fail(err, LLM_ERR_TAPE, stage,
                        "%s (node %zu) is stale: it comes from recording %zu, "
                        "the tape is recording %zu", name, x.id, x.epoch, tape->epoch);
    if (x.id >= tape->count)
        return llm_fail(err, LLM_ERR_TAPE, stage,
                        "%s is node %zu, but the recording holds %zu nodes", name, x.id,
                        tape->count);
    return LLM_OK;
}

/* The checks attention makes before it records anything; *d: the width of
   q and k. */
static llm_status attention_check(const llm_tape *tape, llm_var q, llm_var k, llm_var v,
                                  const llm_var *out, const char *stage, size_t *d,
                                  llm_error *err)
{
    const llm_tensor *tq, *tk, *tv;
    size_t r, a;
    llm_status st = llm_tape_check(tape, 0, NULL, out, stage, err);
    if (st == LLM_OK)
        st = attention_operand(tape, q, "q", stage, err);
    if (st == LLM_OK)
        st = attention_operand(tape, k, "k", stage, err);
    if (st == LLM_OK)
        st = attention_operand(tape, v, "v", stage, err);
    if (st != LLM_OK)
        return st;
    tq = &tape->nodes[q.id].value;
    tk = &tape->nodes[k.id].value;
    tv = &tape->nodes[v.id].value;
    r = tq->rank;
    if (r < 2 || tk->rank < 2 || tv->rank < 2)
        return llm_fail(err, LLM_ERR_RANK, stage,
                        "q, k and v need rank 2 or more ([..., T, d]); they have "
                        "ranks %zu, %zu and %zu", tq->rank, tk->rank, tv->rank);
    if (tk->rank != r || tv->rank != r)
        return llm_fail(err, LLM_ERR_RANK, stage,
                        "q, k and v must have one rank; they have %zu, %zu and %zu",
                        tq->rank, tk->rank, tv->rank);
    for (a = 0; a + 2 < r; a++)
        if (tk->shape[a] != tq->shape[a] || tv->shape[a] != tq->shape[a])
            return llm_fail(err, LLM_ERR_SHAPE, stage,
                            "leading axis %zu differs: q %zu, k %zu, v %zu", a,
                            tq->shape[a], tk->shape[a], tv->shape[a]);
    if (tq->shape[r - 1] != tk->shape[r - 1])
        return llm_fail(err, LLM_ERR_SHAPE, stage,
                        "queries of width %zu cannot meet keys of width %zu",
                        tq->shape[r - 1], tk->shape[r - 1]);
    if (tq->shape[r - 1] == 0)
        return llm_fail(err, LLM_ERR_SHAPE, stage,
                        "queries and keys of width 0 have no scale 1/sqrt(d)");
    if (tk->shape[r - 2] != tv->shape[r - 2])
        return llm_fail(err, LLM_ERR_SHAPE, stage,
                        "%zu keys but %zu values", tk->shape[r - 2], tv->shape[r - 2]);
    if (tk->shape[r - 2] == 0)
        return llm_fail(err, LLM_ERR_EMPTY, stage,
                        "no keys: a distribution over no positions is undefined");
    *d = tq->shape[r - 1];
    return LLM_OK;
}

/* The function that turns scaled scores into weights: softmax here,
   the causal softmax of chapter 28. */
typedef llm_status (*normaliser)(llm_tape *, llm_var, llm_var *, llm_error *);

/* scores = q k^T, scaled = scores * (1/sqrt(d)), weights = norm(scaled),
   out = weights v; the checks are the caller's. A failure midway rewinds
   the tape to where it was. */
static llm_status attend(llm_tape *tape, llm_var q, llm_var k, llm_var v, size_t d,
                         normaliser norm, llm_var *weights, llm_var *out,
                         llm_error *err)
{
    llm_tensor c;
    llm_var scores, scale, scaled, w, o;
    double inv = 1.0 / sqrt((double)d);
    size_t mark = llm_tape_mark(tape);
    llm_status st = llm_tensor_from(&c, 0, NULL, &inv, 1, err);
    if (st != LLM_OK)
        return st;
    st = llm_tape_constant(tape, &c, &scale, err);
    llm_tensor_free(&c);
    if (st == LLM_OK)
        st = llm_tape_matmul(tape, q, k, 0, 1, &scores, err);
    if (st == LLM_OK)
        st = llm_tape_mul(tape, scores, scale, &scaled, err);
    if (st == LLM_OK)
        st = norm(tape, scaled, &w, err);
    if (st == LLM_OK)
        st = llm_tape_matmul(tape, w, v, 0, 0, &o, err);
    if (st != LLM_OK) {
        llm_tape_rewind(tape, mark, NULL);    /* the caller checked the tape */
        return st;
    }
    if (weights != NULL)
        *weights = w;
    *out = o;
    return LLM_OK;
}

llm_status llm_tape_attention(llm_tape *tape, llm_var q, llm_var k, llm_var v,
                              llm_var *weights, llm_var *out, llm_error *err)
{
    const char *stage = "tape.attention";
    size_t d = 0;
    llm_status st = attention_check(tape, q, k, v, out, stage, &d, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "tape.attention");
    return llm_pass(err, attend(tape, q, k, v, d, llm_tape_softmax, weights, out, err),
                    "tape.attention");
}

/* y[0 .. n-1] = the softmax of the n visible scores x[0], x[step], ...,
   x[(n-1) step]: their maximum m, s = the sum of exp(x_j - m) in ascending
   j, then exp(x_j - m) / s, chapter 12's arithmetic on the prefix alone.
   y[n] onwards is not touched. */
static void causal_row(const double *x, size_t step, size_t n, double *y)
{
    double m = x[0], s = 0.0;
    size_t j;
    for (j = 1; j < n; j++)
        if (x[j * step] > m)
            m = x[j * step];
    for (j = 0; j < n; j++)
        s += exp(x[j * step] - m);
    for (j = 0; j < n; j++)
        y[j] = exp(x[j * step] - m) / s;
}
/* The first score of row number row of x [..., Tq, Tk], counting rows in
   row-major order over the axes before the last; x may be a view. */
static const double *causal_score_row(const llm_tensor *x, size_t row)
{
    const double *p = x->data + x->offset;
    size_t a = x->rank - 1;
    while (a-- > 0) {
        p += (row % x->shape[a]) * x->stride[a];
        row /= x->shape[a];
    }
    return p;
}

/* How many keys row number row sees: its query is i = row mod Tq, at
   position i + Tk - Tq, and it sees keys 0 .. i + Tk - Tq. */
static size_t causal_visible(size_t row, size_t tq, size_t tk)
{
    return row % tq + (tk - tq) + 1;
}
/* LLM_OK, or LLM_ERR_NONFINITE naming the first visible score of x that is
   a NaN or an infinity. Masked scores are not read. */
static llm_status causal_check_finite(const llm_tensor *x, const char *stage,
                                      llm_error *err)
{
    size_t r = x->rank, tq = x->shape[r - 2], tk = x->shape[r - 1], row, j, n;
    if (x->size == 0)
        return LLM_OK;
    for (row = 0; row < x->size / tk; row++) {
        const double *xs = causal_score_row(x, row);
        n = causal_visible(row, tq, tk);
        for (j = 0; j < n; j++) {
            double v = xs[j * x->stride[r - 1]];
            if (!isfinite(v))
                return llm_fail(err, LLM_ERR_NONFINITE, stage,
                                "score row %zu, key %zu is %s; query %zu of its slice "
                                "sees keys 0..%zu, so it must be finite", row, j,
                                v != v ? "NaN" : v > 0 ? "+inf" : "-inf", row % tq,
                                n - 1);
        }
    }
    return LLM_OK;
}
/* *y = the causal softmax of x [..., Tq, Tk] (any layout, its visible
   scores known to be finite): a new contiguous tensor, +0.0 everywhere,
   then each row's visible prefix normalised in place. */
static llm_status causal_normalise(const llm_tensor *x, llm_tensor *y, llm_error *err)
{
    size_t r = x->rank, tq = x->shape[r - 2], tk = x->shape[r - 1], row;
    llm_status st = llm_tensor_zeros(y, r, x->shape, err);
    if (st != LLM_OK || y->size == 0)
        return st;
    for (row = 0; row < y->size / tk; row++)
        causal_row(causal_score_row(x, row), x->stride[r - 1],
                   causal_visible(row, tq, tk), y->data + y->offset + row * tk);
    return LLM_OK;
}
/* softmax of the last axis over keys j <= i + Tk - Tq: chapter 27's product */
static const llm_op causal_softmax_op = {"causal_softmax", softmax_vjp};

llm_status llm_tape_causal_softmax(llm_tape *tape, llm_var scores, llm_var *out,
                                   llm_error *err)
{
    const char *stage = "tape.causal_softmax";
    const llm_tensor *x;
    llm_node node;
    llm_error why;
    size_t r;
    llm_status st = llm_tape_check(tape, 1, &scores, out, stage, err);
    if (st != LLM_OK)
        return st;
    x = &tape->nodes[scores.id].value;
    r = x->rank;
    if (r < 2)
        return llm_fail(err, LLM_ERR_RANK, stage,
                        "scores need rank 2 or more ([..., Tq, Tk]), not %zu", r);
    if (x->shape[r - 1] < x->shape[r - 2])
        return llm_fail(err, LLM_ERR_SHAPE, stage,
                        "%zu queries cannot be the last positions of %zu keys",
                        x->shape[r - 2], x->shape[r - 1]);
    if ((st = causal_check_finite(x, stage, err)) != LLM_OK)
        return llm_pass(err, st, "tape.causal_softmax");
    memset(&node, 0, sizeof node);
    node.op = &causal_softmax_op;
    node.nargs = 1;
    node.arg[0] = scores.id;
    if ((st = causal_normalise(x, &node.value, &why)) != LLM_OK)
        return llm_fail_from(err, &why, stage, "%s", why.message);
    return llm_tape_append(tape, node, out, stage, err);
}
llm_status llm_tape_causal_attention(llm_tape *tape, llm_var q, llm_var k, llm_var v,
                                     llm_var *weights, llm_var *out, llm_error *err)
{
    const char *stage = "tape.causal_attention";
    size_t d = 0, r, tq, tk;
    llm_status st = attention_check(tape, q, k, v, out, stage, &d, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "tape.causal_attention");
    r = tape->nodes[q.id].value.rank;
    tq = tape->nodes[q.id].value.shape[r - 2];
    tk = tape->nodes[k.id].value.shape[r - 2];
    if (tk < tq)
        return llm_fail(err, LLM_ERR_SHAPE, stage,
                        "%zu queries cannot be the last positions of %zu keys", tq, tk);
    return llm_pass(err,
                    attend(tape, q, k, v, d, llm_tape_causal_softmax, weights, out,
                           err),
                    "tape.causal_attention");
}
