/* tensor_storage.c -- flat f64 storage, shape, strides, checked indexing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tensor.h"

llm_status llm_row_major(size_t rank, const size_t *shape, size_t *stride,
                         size_t *size, llm_error *err)
{
    size_t acc = 1;
    size_t k;
    if (rank > LLM_MAX_RANK)
        return llm_fail(err, LLM_ERR_RANK, "tensor.row_major",
                        "rank %zu exceeds the maximum %d", rank, LLM_MAX_RANK);
    if (rank > 0 && (shape == NULL || stride == NULL))
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.row_major",
                        "a shape of rank %zu needs shape and stride arrays", rank);
    if (size == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.row_major",
                        "no place for the count");
    for (k = rank; k-- > 0;) {
        stride[k] = acc;
        if (shape[k] != 0 && acc > SIZE_MAX / shape[k])
            return llm_fail(err, LLM_ERR_OVERFLOW, "tensor.row_major",
                            "the element count overflows size_t at axis %zu "
                            "(extent %zu)", k, shape[k]);
        acc *= shape[k];
    }
    if (acc > SIZE_MAX / sizeof(double))
        return llm_fail(err, LLM_ERR_OVERFLOW, "tensor.row_major",
                        "%zu elements need more bytes than size_t can count", acc);
    *size = acc;
    return LLM_OK;
}
llm_status llm_tensor_zeros(llm_tensor *out, size_t rank, const size_t *shape,
                            llm_error *err)
{
    llm_tensor t;
    llm_status st;
    memset(&t, 0, sizeof t);
    if (out == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.zeros", "no output tensor");
    st = llm_row_major(rank, shape, t.stride, &t.size, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "tensor.zeros");
    t.data = llm_calloc(t.size > 0 ? t.size : 1, sizeof(double));
    if (t.data == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, "tensor.zeros",
                        "cannot allocate %zu elements", t.size);
    t.rank = rank;
    if (rank > 0)
        memcpy(t.shape, shape, rank * sizeof shape[0]);
    t.owns = 1;
    *out = t;
    return LLM_OK;
}

llm_status llm_tensor_from(llm_tensor *out, size_t rank, const size_t *shape,
                           const double *values, size_t count, llm_error *err)
{
    llm_tensor t;
    size_t stride[LLM_MAX_RANK], size;
    llm_status st;
    if (out == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.from", "no output tensor");
    st = llm_row_major(rank, shape, stride, &size, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "tensor.from");
    if (count != size)
        return llm_fail(err, LLM_ERR_LENGTH, "tensor.from",
                        "the shape holds %zu elements, %zu values were given",
                        size, count);
    if (values == NULL && count > 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.from", "no values");
    st = llm_tensor_zeros(&t, rank, shape, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "tensor.from");
    if (count > 0)
        memcpy(t.data, values, count * sizeof values[0]);
    *out = t;
    return LLM_OK;
}

void llm_tensor_free(llm_tensor *t)
{
    if (t == NULL)
        return;
    if (t->owns)
        free(t->data);
    memset(t, 0, sizeof *t);
}

void llm_tensor_give(llm_tensor *t)
{
    if (t == NULL)
        return;
    if (t->owns)
        llm_alloc_give(t->data, (t->size > 0 ? t->size : 1) * sizeof(double));
    memset(t, 0, sizeof *t);
}

llm_status llm_tensor_check(const llm_tensor *t, const char *name,
                            const char *stage, llm_error *err)
{
    if (t == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "tensor %s is missing", name);
    if (t->data == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "tensor %s has no buffer", name);
    if (t->rank > LLM_MAX_RANK)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "tensor %s has rank %zu, more than %d", name, t->rank,
                        LLM_MAX_RANK);
    return LLM_OK;
}
llm_status llm_tensor_offset(const llm_tensor *t, size_t rank, const size_t *index,
                             size_t *offset, llm_error *err)
{
    size_t k, o;
    if (t == NULL || offset == NULL || (rank > 0 && index == NULL))
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.offset",
                        "tensor, index and offset are required");
    if (llm_tensor_check(t, "t", "tensor.offset", err) != LLM_OK)
        return LLM_ERR_ARGUMENT;
    if (rank != t->rank)
        return llm_fail(err, LLM_ERR_RANK, "tensor.offset",
                        "the index has %zu coordinates, the tensor has rank %zu",
                        rank, t->rank);
    for (k = 0; k < rank; k++)
        if (index[k] >= t->shape[k])
            return llm_fail(err, LLM_ERR_INDEX, "tensor.offset",
                            "index %zu is outside axis %zu of extent %zu",
                            index[k], k, t->shape[k]);
    o = t->offset;
    for (k = 0; k < rank; k++)
        o += index[k] * t->stride[k];
    *offset = o;
    return LLM_OK;
}

llm_status llm_tensor_get(const llm_tensor *t, size_t rank, const size_t *index,
                          double *value, llm_error *err)
{
    size_t o = 0;
    llm_status st;
    if (value == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.get", "no place for the value");
    st = llm_tensor_offset(t, rank, index, &o, err);
    if (st == LLM_OK)
        *value = t->data[o];
    return llm_pass(err, st, "tensor.get");
}

llm_status llm_tensor_set(llm_tensor *t, size_t rank, const size_t *index,
                          double value, llm_error *err)
{
    size_t o = 0;
    llm_status st = llm_tensor_offset(t, rank, index, &o, err);
    if (st == LLM_OK)
        t->data[o] = value;
    return llm_pass(err, st, "tensor.set");
}
int llm_index_next(size_t rank, const size_t *shape, size_t *index)
{
    size_t k;
    if (rank > 0 && (shape == NULL || index == NULL))
        return 0;
    for (k = rank; k-- > 0;) {
        if (++index[k] < shape[k])
            return 1;
        index[k] = 0;
    }
    return 0;
}
