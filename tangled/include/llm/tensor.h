/* llm/tensor.h -- f64 tensors: storage, views, maps, products, softmax. */
#ifndef LLM_TENSOR_H
#define LLM_TENSOR_H

#include <stddef.h>

#include "llm/error.h"

#define LLM_MAX_RANK 8

typedef struct llm_tensor {
    double *data;                 /* the buffer */
    size_t offset;                /* position of the first element in data */
    size_t rank;                  /* number of axes, 0 for a scalar */
    size_t shape[LLM_MAX_RANK];   /* extent of each axis */
    size_t stride[LLM_MAX_RANK];  /* buffer step of each axis, in elements */
    size_t size;                  /* number of elements, product of shape */
    int owns;                     /* 1 when llm_tensor_free releases data */
} llm_tensor;

/* Row-major strides of shape and its element count.
   Errors: LLM_ERR_RANK (rank > LLM_MAX_RANK), LLM_ERR_ARGUMENT (null shape
   with rank > 0), LLM_ERR_OVERFLOW (a stride, the count or the byte size
   does not fit in size_t). */
llm_status llm_row_major(size_t rank, const size_t *shape, size_t *stride,
                         size_t *size, llm_error *err);
/* A new owned tensor of the given shape, every element +0.0.
   Errors: those of llm_row_major, LLM_ERR_ARGUMENT (out is NULL),
   LLM_ERR_ALLOC. On failure *out is not touched. */
llm_status llm_tensor_zeros(llm_tensor *out, size_t rank, const size_t *shape,
                            llm_error *err);

/* A new owned tensor holding a copy of values, in row-major order.
   Errors: those of llm_tensor_zeros, LLM_ERR_LENGTH (count is not the
   element count of shape), LLM_ERR_ARGUMENT (values is NULL, count > 0). */
llm_status llm_tensor_from(llm_tensor *out, size_t rank, const size_t *shape,
                           const double *values, size_t count, llm_error *err);

/* Releases t's buffer if t owns it and empties t. Safe on an empty tensor
   and on NULL. */
void llm_tensor_free(llm_tensor *t);
/* The buffer position of element index (rank coordinates) of t.
   Errors: LLM_ERR_ARGUMENT (null t, index or offset), LLM_ERR_RANK (rank is
   not t's rank), LLM_ERR_INDEX (a coordinate outside its axis). */
llm_status llm_tensor_offset(const llm_tensor *t, size_t rank, const size_t *index,
                             size_t *offset, llm_error *err);

/* Reads or writes one element through llm_tensor_offset; same errors.
   Nothing is read or written unless every check passes. */
llm_status llm_tensor_get(const llm_tensor *t, size_t rank, const size_t *index,
                          double *value, llm_error *err);
llm_status llm_tensor_set(llm_tensor *t, size_t rank, const size_t *index,
                          double value, llm_error *err);
/* Advances index (rank coordinates within shape) to the next element in
   row-major order. Returns 1, or 0 when it wrapped around to all zeros
   (also at once for rank 0, which has one element). */
int llm_index_next(size_t rank, const size_t *shape, size_t *index);

#endif
