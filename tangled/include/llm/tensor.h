/* llm/tensor.h -- the tensor module: f64 storage, views, broadcast maps and
   reductions, matrix products. Built by chapters 8-11. */
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
   or stride with rank > 0, null size), LLM_ERR_OVERFLOW (a stride, the count
   or the byte size does not fit in size_t). */
llm_status llm_row_major(size_t rank, const size_t *shape, size_t *stride,
                         size_t *size, llm_error *err);
/* A new owned tensor of the given shape, every element +0.0.
   Errors: those of llm_row_major, LLM_ERR_ARGUMENT (out is NULL),
   LLM_ERR_ALLOC. On failure *out is not touched. */
llm_status llm_tensor_zeros(llm_tensor *out, size_t rank, const size_t *shape,
                            llm_error *err);

/* A new owned tensor holding a copy of values, in row-major order.
   Errors: those of llm_tensor_zeros, LLM_ERR_LENGTH (count is not the
   element count of shape), LLM_ERR_ARGUMENT (out is NULL, or values is NULL
   and count > 0). On failure *out is not touched. */
llm_status llm_tensor_from(llm_tensor *out, size_t rank, const size_t *shape,
                           const double *values, size_t count, llm_error *err);

/* Releases t's buffer if t owns it and empties t. Safe on an empty tensor
   and on NULL. */
void llm_tensor_free(llm_tensor *t);

/* As llm_tensor_free, but an owned buffer goes back to the allocator for
   reuse (llm_alloc_give) instead of being freed. Only for a tensor the
   library made, whose buffer holds max(size, 1) doubles. */
void llm_tensor_give(llm_tensor *t);

/* The check every public function makes of a tensor it is given, before it
   reads a field: t exists, has a buffer, and its rank fits the struct. name
   says which argument ("logits") and stage who asks.
   Errors: LLM_ERR_ARGUMENT for each of the three. */
llm_status llm_tensor_check(const llm_tensor *t, const char *name,
                            const char *stage, llm_error *err);
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
   (also at once for rank 0, which has one element, and for a null shape or
   index). */
int llm_index_next(size_t rank, const size_t *shape, size_t *index);
/* 1 when t's elements are dense in row-major order from t->offset
   (strides of axes with extent 1 are ignored; an empty tensor is contiguous).
   0 otherwise, and 0 for NULL. */
int llm_tensor_is_contiguous(const llm_tensor *t);
/* Views: *view borrows t's storage (owns = 0); valid while t's storage lives.
   Output written only on success. */

/* t's elements under a new shape with row-major strides.
   Errors: LLM_ERR_ARGUMENT (null view or t, null shape with rank > 0),
   LLM_ERR_RANK (rank > LLM_MAX_RANK), LLM_ERR_OVERFLOW (from llm_row_major),
   LLM_ERR_SHAPE (the new shape holds a different element count),
   LLM_ERR_CONTIGUITY (t is not contiguous: copy it first). */
llm_status llm_tensor_reshape(llm_tensor *view, const llm_tensor *t, size_t rank,
                              const size_t *shape, llm_error *err);
/* t with axes axis_a and axis_b swapped (extents and strides).
   Errors: LLM_ERR_ARGUMENT (null view or t), LLM_ERR_AXIS (an axis >= rank). */
llm_status llm_tensor_transpose(llm_tensor *view, const llm_tensor *t,
                                size_t axis_a, size_t axis_b, llm_error *err);

/* t with its axes reordered: axis k of the view is axis perm[k] of t.
   Errors: LLM_ERR_ARGUMENT (null view or t, null perm with rank > 0),
   LLM_ERR_RANK (rank is not t's rank), LLM_ERR_AXIS (perm names an axis
   >= rank, or one axis twice). */
llm_status llm_tensor_permute(llm_tensor *view, const llm_tensor *t, size_t rank,
                              const size_t *perm, llm_error *err);
/* The indices start <= i < stop of one axis of t.
   Errors: LLM_ERR_ARGUMENT (null view or t), LLM_ERR_AXIS (axis >= rank),
   LLM_ERR_INDEX (start > stop, or stop > the axis' extent). */
llm_status llm_tensor_slice(llm_tensor *view, const llm_tensor *t, size_t axis,
                            size_t start, size_t stop, llm_error *err);
/* A new owned, contiguous tensor with t's elements in row-major order
   (materialise).
   Errors: LLM_ERR_ARGUMENT (null out, or t refused by llm_tensor_check),
   LLM_ERR_ALLOC, and those of llm_row_major for a malformed shape. On
   failure *out is not touched. */
llm_status llm_tensor_copy(llm_tensor *out, const llm_tensor *t, llm_error *err);
/* Elementwise binary operations: a + b, a - b, a * b, a / b. Division is
   IEEE division: x / 0 is an infinity or a NaN, not an error. */
typedef enum llm_binary_op { LLM_ADD, LLM_SUB, LLM_MUL, LLM_DIV } llm_binary_op;

/* The broadcast shape of a and b: trailing axes aligned, extents equal or 1.
   *rank receives max(a->rank, b->rank) and shape that many extents (give it
   room for LLM_MAX_RANK). Errors: LLM_ERR_ARGUMENT (a null pointer, a tensor
   without a buffer or of rank > LLM_MAX_RANK), LLM_ERR_BROADCAST (extents
   that differ where neither is 1). On failure nothing is written. */
llm_status llm_broadcast_shape(const llm_tensor *a, const llm_tensor *b, size_t *rank,
                               size_t *shape, llm_error *err);
/* A new owned tensor: op applied elementwise over the broadcast shape.
   Errors: LLM_ERR_ARGUMENT (null out, a or b, a tensor without a buffer,
   an unknown op), those of llm_broadcast_shape (LLM_ERR_BROADCAST), those
   of llm_tensor_zeros (LLM_ERR_OVERFLOW, LLM_ERR_ALLOC). On failure *out
   is not touched. */
llm_status llm_tensor_binary(llm_tensor *out, llm_binary_op op, const llm_tensor *a,
                             const llm_tensor *b, llm_error *err);
/* A new owned tensor: fn applied to every element.
   Errors: LLM_ERR_ARGUMENT (null out, a or fn, a tensor without a buffer),
   those of llm_tensor_zeros (LLM_ERR_OVERFLOW, only for a hand-built input
   whose shape has too many elements; LLM_ERR_ALLOC). On failure *out is not
   touched. */
llm_status llm_tensor_map(llm_tensor *out, const llm_tensor *a, double (*fn)(double),
                          llm_error *err);
typedef enum llm_reduce_op { LLM_SUM, LLM_MEAN, LLM_MAX } llm_reduce_op;

/* A new owned tensor: op over axis; keepdim keeps that axis with extent 1,
   otherwise the result has rank t->rank - 1. Sums add in ascending index
   order along the axis, starting from +0.0; a mean is that sum / extent; the
   maximum is IEEE 754-2019 maximum (NaN propagates, +0 > -0).
   Errors: LLM_ERR_ARGUMENT (null out or t, a tensor without a buffer, an
   unknown op), LLM_ERR_AXIS (axis >= t->rank), LLM_ERR_EMPTY (mean or max
   over an axis of extent 0), those of llm_tensor_zeros (LLM_ERR_OVERFLOW,
   as for llm_tensor_map; LLM_ERR_ALLOC). On failure *out is not touched. */
llm_status llm_tensor_reduce(llm_tensor *out, llm_reduce_op op, const llm_tensor *t,
                             size_t axis, int keepdim, llm_error *err);
/* C = op(A) op(B) over the last two axes, op = transpose when the flag is set;
   leading (batch) axes broadcast (trailing-aligned, extents equal or 1).
   A new owned contiguous tensor of shape [batch..., M, N].
   Every C[..., i, j] starts at +0.0 and adds A[i][k] * B[k][j] in ascending k.
   Errors, in the order they are checked: LLM_ERR_ARGUMENT (out, a or b is
   NULL), LLM_ERR_RANK (an operand of rank < 2), LLM_ERR_SHAPE (op(A) has K
   columns and op(B) a different number of rows), LLM_ERR_BROADCAST (batch
   axes neither equal nor 1), LLM_ERR_OVERFLOW (the output's element count),
   LLM_ERR_ALLOC. On failure *out is not touched. */
llm_status llm_matmul(llm_tensor *out, const llm_tensor *a, const llm_tensor *b,
                      int trans_a, int trans_b, llm_error *err);

#endif
