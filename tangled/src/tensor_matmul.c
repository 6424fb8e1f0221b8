/* tensor_matmul.c -- checked 2-d and batched matrix products. */
#include <stddef.h>

#include "llm/tensor.h"

/* op(X) for the last two axes of t: extents, and the buffer steps of one
   row and one column. */
typedef struct mat_view {
    size_t rows, cols;
    size_t row_step, col_step;
} mat_view;

static mat_view mat_of(const llm_tensor *t, int trans)
{
    const size_t *n = t->shape + t->rank - 2, *s = t->stride + t->rank - 2;
    const int x = trans != 0;        /* 1: the two axes swap their roles */
    mat_view m;
    m.rows = n[x];
    m.cols = n[1 - x];
    m.row_step = s[x];
    m.col_step = s[1 - x];
    return m;
}
/* c[j] += a * b[j * step] for j = 0..n-1; c and b do not overlap. */
static void add_scaled_row(double *restrict c, const double *restrict b,
                           size_t step, size_t n, double a)
{
    size_t j;
    if (step == 1) {
        for (j = 0; j + 2 <= n; j += 2) {   /* pairs: one 2-wide vector operation */
            c[j] += a * b[j];
            c[j + 1] += a * b[j + 1];
        }
        for (; j < n; j++)
            c[j] += a * b[j];
    } else
        for (j = 0; j < n; j++)
            c[j] += a * b[j * step];
}
/* c (ma.rows x mb.cols, contiguous, every element +0.0) += op(A) op(B), where
   a and b point at the first element of each operand's matrix. */
static void matmul_pair(double *c, const double *a, mat_view ma,
                        const double *b, mat_view mb)
{
    size_t i, k;
    for (i = 0; i < ma.rows; i++)
        for (k = 0; k < ma.cols; k++)
            add_scaled_row(c + i * mb.cols, b + k * mb.row_step, mb.col_step,
                           mb.cols, a[i * ma.row_step + k * ma.col_step]);
}
/* The extent of t on batch axis k of an output of rank r (axes aligned from
   the right; a missing axis has extent 1) and the buffer step along it: 0 for
   extent 1, so that every output index reads the same matrix. */
static void batch_axis(const llm_tensor *t, size_t r, size_t k, size_t *extent,
                       size_t *step)
{
    const size_t axis = k + t->rank - r;     /* meaningful when k + rank >= r */
    *extent = k + t->rank < r ? 1 : t->shape[axis];
    *step = *extent == 1 ? 0 : t->stride[axis];
}
llm_status llm_matmul(llm_tensor *out, const llm_tensor *a, const llm_tensor *b,
                      int trans_a, int trans_b, llm_error *err)
{
    size_t shape[LLM_MAX_RANK], step_a[LLM_MAX_RANK], step_b[LLM_MAX_RANK];
    size_t rank, k;
    mat_view ma, mb;
    llm_tensor c;
    if (out == NULL || a == NULL || b == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tensor.matmul",
                        "out, A and B are required");
    if (a->rank < 2 || b->rank < 2)
        return llm_fail(err, LLM_ERR_RANK, "tensor.matmul",
                        "%s has rank %zu; a matrix product needs at least 2 axes",
                        a->rank < 2 ? "A" : "B", a->rank < 2 ? a->rank : b->rank);
    ma = mat_of(a, trans_a);
    mb = mat_of(b, trans_b);
    if (ma.cols != mb.rows)
        return llm_fail(err, LLM_ERR_SHAPE, "tensor.matmul",
                        "%s has K=%zu columns, %s has %zu rows",
                        trans_a ? "A^T" : "A", ma.cols, trans_b ? "B^T" : "B", mb.rows);
    rank = a->rank > b->rank ? a->rank : b->rank;
    for (k = 0; k + 2 < rank; k++) {
        size_t na, nb;
        batch_axis(a, rank, k, &na, &step_a[k]);
        batch_axis(b, rank, k, &nb, &step_b[k]);
        if (na != nb && na != 1 && nb != 1)
            return llm_fail(err, LLM_ERR_BROADCAST, "tensor.matmul",
                            "batch axis %zu: A has extent %zu, B has %zu; "
                            "they must be equal or one of them 1", k, na, nb);
        shape[k] = na == 1 ? nb : na;
    }
    shape[rank - 2] = ma.rows;
    shape[rank - 1] = mb.cols;
    {
        llm_error why;
        llm_status st = llm_tensor_zeros(&c, rank, shape, &why);
        if (st != LLM_OK)
            return llm_fail(err, st, "tensor.matmul",
                            "cannot make the output (M=%zu, N=%zu): %s",
                            ma.rows, mb.cols, why.message);
    }
    if (c.size > 0) {
        size_t index[LLM_MAX_RANK] = {0}, done = 0;
        do {
            size_t oa = a->offset, ob = b->offset;
            for (k = 0; k + 2 < rank; k++) {
                oa += index[k] * step_a[k];
                ob += index[k] * step_b[k];
            }
            matmul_pair(c.data + done * ma.rows * mb.cols, a->data + oa, ma,
                        b->data + ob, mb);
            done++;
        } while (llm_index_next(rank - 2, shape, index));
    }
    *out = c;
    return LLM_OK;
}
