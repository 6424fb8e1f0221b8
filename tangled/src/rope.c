/* rope.c -- rotary position embeddings: tables, rotation, the tape op. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/attention.h"
#include "tape_op.h"

/* theta_k = base^(-2k/d) */
static double rope_frequency(double base, size_t d, size_t k)
{
    return pow(base, -(double)(2 * k) / (double)d);
}

/* cos and sin of the angle m * theta; an exact zero becomes +0.0. */
static void rope_cos_sin(double theta, size_t m, double *c, double *s)
{
    double angle = (double)m * theta;
    *c = cos(angle);
    *s = sin(angle);
    if (*c == 0.0)
        *c = 0.0;
    if (*s == 0.0)
        *s = 0.0;
}
llm_status llm_rope_init(llm_rope *rope, size_t head_dim, double base, size_t capacity,
                         llm_rope_pairing pairing, llm_error *err)
{
    const char *stage = "rope.init";
    llm_rope r;
    size_t half = head_dim / 2, shape[2], stride[2], n, m, k;
    llm_error why;
    if (rope == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a rope to build is required");
    if (head_dim == 0 || head_dim % 2 != 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "head width %zu: rotary pairs need an even width of at least 2",
                        head_dim);
    if (!isfinite(base) || base <= 0.0)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "base %g: a finite positive base is required", base);
    if (capacity == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "capacity 0 holds no position");
    if (pairing != LLM_ROPE_ADJACENT && pairing != LLM_ROPE_HALF)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "pairing %d is neither adjacent "
                        "nor rotate-half", (int)pairing);
    shape[0] = capacity;
    shape[1] = half;
    if (llm_row_major(2, shape, stride, &n, &why) != LLM_OK)
        return llm_fail_from(err, &why, stage, "tables of %zu x %zu: %s", capacity,
                             half, why.message);
    r.head_dim = head_dim;
    r.base = base;
    r.capacity = capacity;
    r.pairing = pairing;
    r.inv_freq = llm_malloc(half * sizeof *r.inv_freq);
    r.cos_table = n <= SIZE_MAX / sizeof(double) ? llm_malloc(n * sizeof(double)) : NULL;
    r.sin_table = n <= SIZE_MAX / sizeof(double) ? llm_malloc(n * sizeof(double)) : NULL;
    if (r.inv_freq == NULL || r.cos_table == NULL || r.sin_table == NULL) {
        free(r.inv_freq);
        free(r.cos_table);
        free(r.sin_table);
        return llm_fail(err, LLM_ERR_ALLOC, stage, "cannot hold tables for %zu positions",
                        capacity);
    }
    for (k = 0; k < half; k++)
        r.inv_freq[k] = rope_frequency(base, head_dim, k);
    for (m = 0; m < capacity; m++)
        for (k = 0; k < half; k++)
            rope_cos_sin(r.inv_freq[k], m, &r.cos_table[m * half + k],
                         &r.sin_table[m * half + k]);
    *rope = r;
    return LLM_OK;
}
void llm_rope_free(llm_rope *rope)
{
    if (rope == NULL)
        return;
    free(rope->inv_freq);
    free(rope->cos_table);
    free(rope->sin_table);
    memset(rope, 0, sizeof *rope);
}
/* The coordinates of pair k in a row of width d. */
static void rope_pair(llm_rope_pairing pairing, size_t d, size_t k, size_t *i,
                      size_t *j)
{
    *i = pairing == LLM_ROPE_ADJACENT ? 2 * k : k;
    *j = pairing == LLM_ROPE_ADJACENT ? 2 * k + 1 : k + d / 2;
}

/* row (d values) turned pair by pair: angle k has cosine c[k] and sine
   sign * s[k]; sign -1 is the inverse rotation. */
static void rope_row(double *row, size_t d, llm_rope_pairing pairing, const double *c,
                     const double *s, double sign)
{
    size_t k, i, j;
    for (k = 0; k < d / 2; k++) {
        double u, v, sk = sign * s[k];
        rope_pair(pairing, d, k, &i, &j);
        u = row[i];
        v = row[j];
        row[i] = u * c[k] - v * sk;
        row[j] = u * sk + v * c[k];
    }
}
/* x's shape against rope: x [..., T, head_dim]. */
static llm_status rope_check_shape(const llm_rope *rope, const llm_tensor *x,
                                   const char *stage, llm_error *err)
{
    char buf[96];
    if (llm_tensor_check(x, "x", stage, err) != LLM_OK)
        return LLM_ERR_ARGUMENT;
    if (x->rank < 2)
        return llm_fail(err, LLM_ERR_RANK, stage,
                        "x has rank %zu; rotary positions need x [..., T, %zu]",
                        x->rank, rope->head_dim);
    if (x->shape[x->rank - 1] != rope->head_dim)
        return llm_fail(err, LLM_ERR_SHAPE, stage,
                        "x has shape %s; a rope of head width %zu needs the last "
                        "axis %zu", llm_fmt_sizes(buf, sizeof buf, x->shape, x->rank),
                        rope->head_dim, rope->head_dim);
    return LLM_OK;
}

/* *out = x rotated, row t of each slice at positions[t], or at offset + t
   when positions is NULL; every position is known to be below capacity. */
static llm_status rope_rotate(const llm_rope *rope, const llm_tensor *x,
                              const size_t *positions, size_t offset, llm_tensor *out,
                              const char *stage, llm_error *err)
{
    llm_tensor y;
    llm_error why;
    size_t d = rope->head_dim, half = d / 2, T = x->shape[x->rank - 2], rows, n, m;
    llm_status st = llm_tensor_copy(&y, x, &why);
    if (st != LLM_OK)
        return llm_fail_from(err, &why, stage, "%s", why.message);
    rows = y.size / d;
    for (n = 0; n < rows; n++) {
        m = positions != NULL ? positions[n % T] : offset + n % T;
        rope_row(y.data + y.offset + n * d, d, rope->pairing,
                 rope->cos_table + m * half, rope->sin_table + m * half, 1.0);
    }
    *out = y;
    return LLM_OK;
}
llm_status llm_rope_apply(const llm_rope *rope, const llm_tensor *x,
                          const size_t *positions, size_t npos, llm_tensor *out,
                          llm_error *err)
{
    const char *stage = "rope.apply";
    size_t T, t;
    llm_status st;
    if (rope == NULL || x == NULL || out == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "a rope, x and an output are required");
    if ((st = rope_check_shape(rope, x, stage, err)) != LLM_OK)
        return llm_pass(err, st, "rope.apply");
    T = x->shape[x->rank - 2];
    if (npos != T)
        return llm_fail(err, LLM_ERR_SHAPE, stage, "%zu positions for %zu rows", npos,
                        T);
    if (T > 0 && positions == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "no positions for %zu rows", T);
    for (t = 0; t < T; t++)
        if (positions[t] >= rope->capacity)
            return llm_fail(err, LLM_ERR_INDEX, stage,
                            "position %zu (row %zu) is beyond the capacity %zu "
                            "(positions 0..%zu)", positions[t], t, rope->capacity,
                            rope->capacity - 1);
    return llm_pass(err, rope_rotate(rope, x, positions, 0, out, stage, err),
                    "rope.apply");
}
typedef struct rope_attr {
    double base;                 /* the rope's base */
    size_t first;                /* the position of the first row */
    llm_rope_pairing pairing;    /* which coordinates turn together */
} rope_attr;
/* pbar += R^T cbar: each pair turned back by its angle */
static llm_status rope_vjp(const llm_tape *tape, const llm_node *c, size_t k,
                           const double *cbar, double *pbar, llm_error *err)
{
    const llm_tensor *y = &c->value;
    const rope_attr *at = c->attr;
    size_t d = y->shape[y->rank - 1], T = y->shape[y->rank - 2], rows, n, p, i, j;
    (void)tape;
    (void)k;
    (void)err;
    rows = y->size / d;
    for (n = 0; n < rows; n++)
        for (p = 0; p < d / 2; p++) {
            double cs, sn, u, v;
            rope_cos_sin(rope_frequency(at->base, d, p), at->first + n % T, &cs, &sn);
            rope_pair(at->pairing, d, p, &i, &j);
            u = cbar[n * d + i];
            v = cbar[n * d + j];
            pbar[n * d + i] += u * cs + v * sn;
            pbar[n * d + j] += v * cs - u * sn;
        }
    return LLM_OK;
}

static const llm_op rope_op = {"rope", rope_vjp};
llm_status llm_tape_rope(llm_tape *tape, const llm_rope *rope, llm_var x, size_t offset,
                         llm_var *out, llm_error *err)
{
    const char *stage = "tape.rope";
    const llm_tensor *t;
    rope_attr *at;
    llm_node node;
    size_t T, i;
    llm_status st = llm_tape_check(tape, 1, &x, out, stage, err);
    if (st != LLM_OK)
        return st;
    if (rope == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a rope is required");
    t = &tape->nodes[x.id].value;
    if ((st = rope_check_shape(rope, t, stage, err)) != LLM_OK)
        return llm_pass(err, st, "tape.rope");
    T = t->shape[t->rank - 2];
    if (T > 0 && (offset >= rope->capacity || T > rope->capacity - offset))
        return llm_fail(err, LLM_ERR_INDEX, stage,
                        "%zu rows from position %zu reach position %zu; the capacity "
                        "is %zu (positions 0..%zu)", T, offset,
                        offset >= rope->capacity ? offset : rope->capacity,
                        rope->capacity, rope->capacity - 1);
    memset(&node, 0, sizeof node);
    node.op = &rope_op;
    node.nargs = 1;
    node.arg[0] = x.id;
    if ((st = rope_rotate(rope, t, NULL, offset, &node.value, stage, err)) != LLM_OK)
        return llm_pass(err, st, "tape.rope");
    for (i = 0; i < node.value.size; i++)
        if (!isfinite(node.value.data[i])) {
            llm_tape_discard(tape, &node);
            return llm_fail(err, LLM_ERR_NONFINITE, stage,
                            "rotated element %zu overflowed", i);
        }
    if ((st = llm_tape_attr(tape, &node, sizeof *at, stage, err)) != LLM_OK) {
        llm_tape_discard(tape, &node);
        return llm_pass(err, st, "tape.rope");
    }
    at = node.attr;
    at->base = rope->base;
    at->first = offset;
    at->pairing = rope->pairing;
    return llm_tape_append(tape, node, out, stage, err);
}
