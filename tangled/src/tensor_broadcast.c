/* tensor_broadcast.c -- broadcast binary maps, unary maps, reductions. */
#include <math.h>
#include <string.h>

#include "llm/tensor.h"

static size_t extent_along(const llm_tensor *t, size_t r, size_t k)
{
    size_t lead = r - t->rank;           /* the axes t does not have */
    return k < lead ? 1 : t->shape[k - lead];
}
llm_status llm_broadcast_shape(const llm_tensor *a, const llm_tensor *b, size_t *rank,
                               size_t *shape, llm_error *err)
{
    size_t r, k, out[LLM_MAX_RANK];
    llm_status st;
    if (rank == NULL || shape == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.broadcast_shape",
                        "no place for the broadcast rank and shape");
    if ((st = llm_tensor_check(a, "a", "tensor.broadcast_shape", err)) != LLM_OK ||
        (st = llm_tensor_check(b, "b", "tensor.broadcast_shape", err)) != LLM_OK)
        return llm_pass(err, st, "tensor.broadcast_shape");
    r = a->rank > b->rank ? a->rank : b->rank;
    for (k = 0; k < r; k++) {
        size_t ea = extent_along(a, r, k), eb = extent_along(b, r, k);
        if (ea != eb && ea != 1 && eb != 1)
            return llm_fail(err, LLM_ERR_BROADCAST, "tensor.broadcast_shape",
                            "axis %zu of the result: a has extent %zu, b has %zu; "
                            "they must be equal or one of them 1", k, ea, eb);
        out[k] = ea == 1 ? eb : ea;
    }
    *rank = r;
    if (r > 0)
        memcpy(shape, out, r * sizeof out[0]);
    return LLM_OK;
}
static void broadcast_strides(const llm_tensor *t, size_t r, size_t *stride)
{
    size_t lead = r - t->rank, k;
    for (k = 0; k < r; k++)
        stride[k] = k < lead || t->shape[k - lead] == 1 ? 0 : t->stride[k - lead];
}
static size_t offset_of(size_t base, size_t r, const size_t *index,
                        const size_t *stride)
{
    size_t k;
    for (k = 0; k < r; k++)
        base += index[k] * stride[k];
    return base;
}
/* out[j] = x[j * sx] op y[j * sy] for j < n: one row of the walk, with
   the operation chosen once for the whole row */
static void binary_row(llm_binary_op op, double *out, const double *x, size_t sx,
                       const double *y, size_t sy, size_t n)
{
    size_t j;
    switch (op) {
    case LLM_ADD: for (j = 0; j < n; j++) out[j] = x[j * sx] + y[j * sy]; break;
    case LLM_SUB: for (j = 0; j < n; j++) out[j] = x[j * sx] - y[j * sy]; break;
    case LLM_MUL: for (j = 0; j < n; j++) out[j] = x[j * sx] * y[j * sy]; break;
    default:      for (j = 0; j < n; j++) out[j] = x[j * sx] / y[j * sy]; /* LLM_DIV */
    }
}

llm_status llm_tensor_binary(llm_tensor *out, llm_binary_op op, const llm_tensor *a,
                             const llm_tensor *b, llm_error *err)
{
    size_t r, shape[LLM_MAX_RANK], sa[LLM_MAX_RANK], sb[LLM_MAX_RANK];
    size_t idx[LLM_MAX_RANK] = {0}, i = 0, n;
    llm_tensor t;
    llm_status st;
    if (out == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.binary", "no output tensor");
    if (op != LLM_ADD && op != LLM_SUB && op != LLM_MUL && op != LLM_DIV)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.binary",
                        "unknown binary operation %d", (int)op);
    if ((st = llm_tensor_check(a, "a", "tensor.binary", err)) != LLM_OK ||
        (st = llm_tensor_check(b, "b", "tensor.binary", err)) != LLM_OK ||
        (st = llm_broadcast_shape(a, b, &r, shape, err)) != LLM_OK ||
        (st = llm_tensor_zeros(&t, r, shape, err)) != LLM_OK)
        return llm_pass(err, st, "tensor.binary");
    broadcast_strides(a, r, sa);
    broadcast_strides(b, r, sb);
    n = r > 0 ? shape[r - 1] : 1;             /* a row: the last axis */
    if (t.size > 0)
        do {                                  /* idx walks the axes before it */
            binary_row(op, t.data + i,
                       a->data + offset_of(a->offset, r, idx, sa),
                       r > 0 ? sa[r - 1] : 0,
                       b->data + offset_of(b->offset, r, idx, sb),
                       r > 0 ? sb[r - 1] : 0, n);
            i += n;
        } while (llm_index_next(r > 0 ? r - 1 : 0, shape, idx));
    *out = t;
    return LLM_OK;
}
llm_status llm_tensor_map(llm_tensor *out, const llm_tensor *a, double (*fn)(double),
                          llm_error *err)
{
    size_t idx[LLM_MAX_RANK] = {0}, i = 0, j, n, step;
    llm_tensor t;
    llm_status st;
    if (out == NULL || fn == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.map", "%s",
                        out == NULL ? "no output tensor" : "no function to apply");
    if ((st = llm_tensor_check(a, "a", "tensor.map", err)) != LLM_OK ||
        (st = llm_tensor_zeros(&t, a->rank, a->shape, err)) != LLM_OK)
        return llm_pass(err, st, "tensor.map");
    n = a->rank > 0 ? a->shape[a->rank - 1] : 1;        /* rows, as above */
    step = a->rank > 0 ? a->stride[a->rank - 1] : 0;
    if (t.size > 0)
        do {
            const double *x = a->data + offset_of(a->offset, a->rank, idx, a->stride);
            for (j = 0; j < n; j++)
                t.data[i + j] = fn(x[j * step]);
            i += n;
        } while (llm_index_next(a->rank > 0 ? a->rank - 1 : 0, a->shape, idx));
    *out = t;
    return LLM_OK;
}
static double maximum(double m, double x)
{
    if (isnan(m))
        return m;                        /* the first NaN stays */
    if (isnan(x))
        return x;
    if (x > m)
        return x;
    if (x == 0.0 && m == 0.0 && signbit(m) && !signbit(x))
        return x;                        /* +0 is greater than -0 */
    return m;
}
static double reduce_line(llm_reduce_op op, const double *x, size_t n, size_t step)
{
    double acc;
    size_t j;
    if (op == LLM_MAX) {
        acc = x[0];
        for (j = 1; j < n; j++)
            acc = maximum(acc, x[j * step]);
        return acc;
    }
    acc = +0.0;
    for (j = 0; j < n; j++)              /* ascending order, one rounding each */
        acc += x[j * step];
    return op == LLM_MEAN ? acc / (double)n : acc;
}
llm_status llm_tensor_reduce(llm_tensor *out, llm_reduce_op op, const llm_tensor *t,
                             size_t axis, int keepdim, llm_error *err)
{
    static const char *const names[] = {"sum", "mean", "max"};
    size_t line[LLM_MAX_RANK], shape[LLM_MAX_RANK], idx[LLM_MAX_RANK] = {0};
    size_t r = 0, k, i, n;
    llm_tensor res;
    llm_status st;
    if (out == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.reduce", "no output tensor");
    if (op != LLM_SUM && op != LLM_MEAN && op != LLM_MAX)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.reduce",
                        "unknown reduction %d", (int)op);
    if ((st = llm_tensor_check(t, "t", "tensor.reduce", err)) != LLM_OK)
        return llm_pass(err, st, "tensor.reduce");
    if (axis >= t->rank)
        return llm_fail(err, LLM_ERR_AXIS, "tensor.reduce",
                        "axis %zu is outside a tensor of rank %zu", axis, t->rank);
    n = t->shape[axis];
    if (n == 0 && op != LLM_SUM)
        return llm_fail(err, LLM_ERR_EMPTY, "tensor.reduce",
                        "the %s over axis %zu needs at least one element; "
                        "the axis has extent 0", names[op], axis);
    memcpy(line, t->shape, t->rank * sizeof line[0]);
    line[axis] = 1;                      /* one position per line */
    for (k = 0; k < t->rank; k++)
        if (k != axis || keepdim)
            shape[r++] = line[k];
    if ((st = llm_tensor_zeros(&res, r, shape, err)) != LLM_OK)
        return llm_pass(err, st, "tensor.reduce");
    for (i = 0; i < res.size; i++) {
        const double *first = t->data + offset_of(t->offset, t->rank, idx, t->stride);
        res.data[i] = reduce_line(op, first, n, t->stride[axis]);
        llm_index_next(t->rank, line, idx);
    }
    *out = res;
    return LLM_OK;
}
