/* tensor_view.c -- reshape, transpose, permute and slice as views; copy. */
#include <stdlib.h>
#include <string.h>

#include "llm/tensor.h"

/* The first axis whose stride breaks row-major density, or t->rank when
   there is none; *need is the stride that axis should have had. */
static size_t first_gap(const llm_tensor *t, size_t *need)
{
    size_t expect = 1, k;
    if (t->size == 0)
        return t->rank;
    for (k = t->rank; k-- > 0;) {
        if (t->shape[k] == 1)
            continue;
        if (t->stride[k] != expect) {
            *need = expect;
            return k;
        }
        expect *= t->shape[k];
    }
    return t->rank;
}

int llm_tensor_is_contiguous(const llm_tensor *t)
{
    size_t need;
    return llm_tensor_check(t, "t", "tensor.is_contiguous", NULL) == LLM_OK &&
           first_gap(t, &need) == t->rank;
}
/* A view of t that describes it unchanged, without owning its buffer. */
static llm_tensor borrow(const llm_tensor *t)
{
    llm_tensor v;
    memset(&v, 0, sizeof v);
    v.data = t->data;
    v.offset = t->offset;
    v.rank = t->rank;
    if (t->rank > 0) {
        memcpy(v.shape, t->shape, t->rank * sizeof t->shape[0]);
        memcpy(v.stride, t->stride, t->rank * sizeof t->stride[0]);
    }
    v.size = t->size;
    v.owns = 0;
    return v;
}
llm_status llm_tensor_reshape(llm_tensor *view, const llm_tensor *t, size_t rank,
                              const size_t *shape, llm_error *err)
{
    llm_tensor v;
    size_t gap, need = 0;
    llm_status st;
    if (view == NULL || t == NULL || (rank > 0 && shape == NULL))
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.reshape",
                        "a view, a tensor and a shape of rank %zu are required",
                        rank);
    if (llm_tensor_check(t, "t", "tensor.reshape", err) != LLM_OK)
        return LLM_ERR_ARGUMENT;
    if (rank > LLM_MAX_RANK)
        return llm_fail(err, LLM_ERR_RANK, "tensor.reshape",
                        "rank %zu exceeds the maximum %d", rank, LLM_MAX_RANK);
    memset(&v, 0, sizeof v);
    st = llm_row_major(rank, shape, v.stride, &v.size, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "tensor.reshape");
    if (v.size != t->size)
        return llm_fail(err, LLM_ERR_SHAPE, "tensor.reshape",
                        "the new shape holds %zu elements, the tensor has %zu",
                        v.size, t->size);
    gap = first_gap(t, &need);
    if (gap != t->rank)
        return llm_fail(err, LLM_ERR_CONTIGUITY, "tensor.reshape",
                        "axis %zu has stride %zu, contiguous elements need %zu; "
                        "copy first", gap, t->stride[gap], need);
    v.data = t->data;
    v.offset = t->offset;
    v.rank = rank;
    if (rank > 0)
        memcpy(v.shape, shape, rank * sizeof shape[0]);
    v.owns = 0;
    *view = v;
    return LLM_OK;
}
llm_status llm_tensor_transpose(llm_tensor *view, const llm_tensor *t,
                                size_t axis_a, size_t axis_b, llm_error *err)
{
    llm_tensor v;
    if (view == NULL || t == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.transpose",
                        "a view and a tensor are required");
    if (llm_tensor_check(t, "t", "tensor.transpose", err) != LLM_OK)
        return LLM_ERR_ARGUMENT;
    if (axis_a >= t->rank || axis_b >= t->rank)
        return llm_fail(err, LLM_ERR_AXIS, "tensor.transpose",
                        "axis %zu is outside a tensor of rank %zu",
                        axis_a >= t->rank ? axis_a : axis_b, t->rank);
    v = borrow(t);
    v.shape[axis_a] = t->shape[axis_b];
    v.stride[axis_a] = t->stride[axis_b];
    v.shape[axis_b] = t->shape[axis_a];
    v.stride[axis_b] = t->stride[axis_a];
    *view = v;
    return LLM_OK;
}

llm_status llm_tensor_permute(llm_tensor *view, const llm_tensor *t, size_t rank,
                              const size_t *perm, llm_error *err)
{
    llm_tensor v;
    int seen[LLM_MAX_RANK] = {0};
    size_t k;
    if (view == NULL || t == NULL || (rank > 0 && perm == NULL))
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.permute",
                        "a view, a tensor and a permutation of %zu axes are "
                        "required", rank);
    if (llm_tensor_check(t, "t", "tensor.permute", err) != LLM_OK)
        return LLM_ERR_ARGUMENT;
    if (rank != t->rank)
        return llm_fail(err, LLM_ERR_RANK, "tensor.permute",
                        "the permutation names %zu axes, the tensor has rank %zu",
                        rank, t->rank);
    for (k = 0; k < rank; k++) {
        if (perm[k] >= rank)
            return llm_fail(err, LLM_ERR_AXIS, "tensor.permute",
                            "axis %zu is outside a tensor of rank %zu",
                            perm[k], rank);
        if (seen[perm[k]])
            return llm_fail(err, LLM_ERR_AXIS, "tensor.permute",
                            "axis %zu appears twice in the permutation", perm[k]);
        seen[perm[k]] = 1;
    }
    v = borrow(t);
    for (k = 0; k < rank; k++) {
        v.shape[k] = t->shape[perm[k]];
        v.stride[k] = t->stride[perm[k]];
    }
    *view = v;
    return LLM_OK;
}
llm_status llm_tensor_slice(llm_tensor *view, const llm_tensor *t, size_t axis,
                            size_t start, size_t stop, llm_error *err)
{
    llm_tensor v;
    if (view == NULL || t == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.slice",
                        "a view and a tensor are required");
    if (llm_tensor_check(t, "t", "tensor.slice", err) != LLM_OK)
        return LLM_ERR_ARGUMENT;
    if (axis >= t->rank)
        return llm_fail(err, LLM_ERR_AXIS, "tensor.slice",
                        "axis %zu is outside a tensor of rank %zu", axis, t->rank);
    if (start > stop)
        return llm_fail(err, LLM_ERR_INDEX, "tensor.slice",
                        "the range [%zu, %zu) of axis %zu starts after it stops",
                        start, stop, axis);
    if (stop > t->shape[axis])
        return llm_fail(err, LLM_ERR_INDEX, "tensor.slice",
                        "the range [%zu, %zu) runs past axis %zu of extent %zu",
                        start, stop, axis, t->shape[axis]);
    v = borrow(t);
    v.offset = t->offset + start * t->stride[axis];
    v.shape[axis] = stop - start;
    v.size = stop == start ? 0 : t->size / t->shape[axis] * (stop - start);
    *view = v;
    return LLM_OK;
}
llm_status llm_tensor_copy(llm_tensor *out, const llm_tensor *t, llm_error *err)
{
    llm_tensor c;
    size_t idx[LLM_MAX_RANK] = {0};
    size_t i = 0, j, k, o, n, step;
    llm_status st;
    if (out == NULL || t == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.copy",
                        "an output and a tensor are required");
    if (llm_tensor_check(t, "t", "tensor.copy", err) != LLM_OK)
        return LLM_ERR_ARGUMENT;
    memset(&c, 0, sizeof c);
    st = llm_row_major(t->rank, t->shape, c.stride, &c.size, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "tensor.copy");
    c.data = llm_malloc((c.size > 0 ? c.size : 1) * sizeof(double));
    if (c.data == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, "tensor.copy",
                        "cannot allocate %zu elements", c.size);
    c.rank = t->rank;
    if (t->rank > 0)
        memcpy(c.shape, t->shape, t->rank * sizeof t->shape[0]);
    c.owns = 1;
    n = t->rank > 0 ? t->shape[t->rank - 1] : 1;       /* a row: the last axis */
    step = t->rank > 0 ? t->stride[t->rank - 1] : 0;
    if (c.size > 0)
        do {                             /* idx: the row's first index */
            o = t->offset;
            for (k = 0; k < t->rank; k++)
                o += idx[k] * t->stride[k];
            for (j = 0; j < n; j++)
                c.data[i + j] = t->data[o + j * step];
            i += n;
        } while (llm_index_next(t->rank > 0 ? t->rank - 1 : 0, t->shape, idx));
    *out = c;
    return LLM_OK;
}
