/* tensor_matmul.c -- checked 2-d and batched matrix products. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

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
/* The 4 x 4 block of C at c (rows ldc apart): c[r][j] = +0.0 + a_r0 b_0j
   + ... + a_r,K-1 b_K-1,j, added in ascending k, where a_rk = a[r * ars
   + k * acs] and b_kj = b[k * ldb + j]: the rows of b are contiguous. */
static void block_4x4(double *restrict c, size_t ldc, const double *restrict a,
                      size_t ars, size_t acs, const double *restrict b, size_t ldb,
                      size_t kk)
{
    double r0[4] = {0.0, 0.0, 0.0, 0.0}, r1[4] = {0.0, 0.0, 0.0, 0.0};
    double r2[4] = {0.0, 0.0, 0.0, 0.0}, r3[4] = {0.0, 0.0, 0.0, 0.0};
    size_t k, j;
    for (k = 0; k < kk; k++) {
        const double *bk = b + k * ldb, *ak = a + k * acs;
        const double a0 = ak[0], a1 = ak[ars], a2 = ak[2 * ars], a3 = ak[3 * ars];
        r0[0] += a0 * bk[0]; r0[1] += a0 * bk[1];
        r0[2] += a0 * bk[2]; r0[3] += a0 * bk[3];
        r1[0] += a1 * bk[0]; r1[1] += a1 * bk[1];
        r1[2] += a1 * bk[2]; r1[3] += a1 * bk[3];
        r2[0] += a2 * bk[0]; r2[1] += a2 * bk[1];
        r2[2] += a2 * bk[2]; r2[3] += a2 * bk[3];
        r3[0] += a3 * bk[0]; r3[1] += a3 * bk[1];
        r3[2] += a3 * bk[2]; r3[3] += a3 * bk[3];
    }
    for (j = 0; j < 4; j++) {
        c[j] = r0[j];
        c[ldc + j] = r1[j];
        c[2 * ldc + j] = r2[j];
        c[3 * ldc + j] = r3[j];
    }
}
/* The m x n block of C (m, n <= 4) that block_4x4 would compute. */
static void block_border(double *restrict c, size_t ldc, const double *restrict a,
                         size_t ars, size_t acs, const double *restrict b, size_t ldb,
                         size_t kk, size_t m, size_t n)
{
    double acc[4][4] = {{0.0}};
    size_t k, r, j;
    for (k = 0; k < kk; k++)
        for (r = 0; r < m; r++) {
            const double ark = a[r * ars + k * acs];
            for (j = 0; j < n; j++)
                acc[r][j] += ark * b[k * ldb + j];
        }
    for (r = 0; r < m; r++)
        for (j = 0; j < n; j++)
            c[r * ldc + j] = acc[r][j];
}
/* c (ma.rows x mb.cols, contiguous) = op(A) op(B), where a and b point at
   the first element of each operand's matrix and mb.col_step is 1. */
static void matmul_pair(double *c, const double *a, mat_view ma,
                        const double *b, mat_view mb)
{
    const size_t m = ma.rows, n = mb.cols;
    size_t i, j;
    for (i = 0; i < m; i += 4)
        for (j = 0; j < n; j += 4) {
            double *cij = c + i * n + j;
            const double *ai = a + i * ma.row_step, *bj = b + j;
            if (i + 4 <= m && j + 4 <= n)
                block_4x4(cij, n, ai, ma.row_step, ma.col_step, bj, mb.row_step,
                          ma.cols);
            else
                block_border(cij, n, ai, ma.row_step, ma.col_step, bj, mb.row_step,
                             ma.cols, m - i < 4 ? m - i : 4, n - j < 4 ? n - j : 4);
        }
}
/* dst[k * N + j] = op(B)_kj for the K x N matrix mb at b. */
static void pack_rows(double *restrict dst, const double *restrict b, mat_view mb)
{
    size_t k, j;
    for (k = 0; k < mb.rows; k++)
        for (j = 0; j < mb.cols; j++)
            dst[k * mb.cols + j] = b[k * mb.row_step + j * mb.col_step];
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
    if (llm_tensor_check(a, "A", "tensor.matmul", err) != LLM_OK ||
        llm_tensor_check(b, "B", "tensor.matmul", err) != LLM_OK)
        return LLM_ERR_ARGUMENT;
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
            return llm_fail_from(err, &why, "tensor.matmul",
                                 "cannot make the output (M=%zu, N=%zu): %s",
                                 ma.rows, mb.cols, why.message);
    }
    if (c.size > 0) {
        size_t index[LLM_MAX_RANK] = {0}, done = 0, packed = 0;
        int have = 0;                 /* 1: rows holds op(B) from offset packed */
        double *rows = NULL;
        mat_view mr = mb;
        if (mb.col_step != 1 && mb.rows > 0) {
            if (mb.rows <= SIZE_MAX / sizeof *rows / mb.cols)
                rows = llm_malloc(mb.rows * mb.cols * sizeof *rows);
            if (rows == NULL) {
                llm_tensor_free(&c);
                return llm_fail(err, LLM_ERR_ALLOC, "tensor.matmul",
                                "no room to copy op(B) (K=%zu, N=%zu) into rows",
                                mb.rows, mb.cols);
            }
            mr.row_step = mb.cols;
            mr.col_step = 1;
        }
        do {
            size_t oa = a->offset, ob = b->offset;
            for (k = 0; k + 2 < rank; k++) {
                oa += index[k] * step_a[k];
                ob += index[k] * step_b[k];
            }
            if (rows != NULL && (!have || ob != packed)) {  /* a broadcast B: once */
                pack_rows(rows, b->data + ob, mb);
                packed = ob;
                have = 1;
            }
            matmul_pair(c.data + done * ma.rows * mb.cols, a->data + oa, ma,
                        rows != NULL ? rows : b->data + ob, mr);
            done++;
        } while (llm_index_next(rank - 2, shape, index));
        free(rows);
    }
    *out = c;
    return LLM_OK;
}
