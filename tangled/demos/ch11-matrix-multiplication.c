/* ch11-matrix-multiplication -- checked 2-d and batched matrix products. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/tensor.h"

static const double fixture_a[6] = {1, 2, 3, 4, 5, 6};   /* A, shape [2, 3] */
static const double fixture_w[6] = {1, 2, 0, 1, 2, 0};   /* W, shape [3, 2] */
static const size_t shape_a[2] = {2, 3}, shape_w[2] = {3, 2};

/* A new tensor the demo owns, of the given shape, holding values (zeros when
   values is NULL); empty after an error. */
static llm_tensor *operand(llm_demo *d, size_t rank, const size_t *shape,
                           const double *values)
{
    llm_tensor *t = llm_own_tensor(d);
    if (LLM_TRY(d, llm_tensor_zeros(t, rank, shape, &d->err)) && values != NULL)
        memcpy(t->data, values, t->size * sizeof *values);
    return t;
}

/* op(a) op(b) as a new tensor the demo owns, op transposing when its flag is
   set; empty after an error. */
static llm_tensor *product(llm_demo *d, const llm_tensor *a, const llm_tensor *b,
                           int trans_a, int trans_b)
{
    llm_tensor *c = llm_own_tensor(d);
    (void)LLM_TRY(d, llm_matmul(c, a, b, trans_a, trans_b, &d->err));
    return c;
}

/* A refusal traced with its code alone, and its message printed. */
static void refuse(llm_demo *d, const char *what, llm_status st)
{
    llm_refuse_cells(d, "c", what, st);
    printf("  %s\n", d->err.message);
}
/* Prints "name shape=[..] values=[..]" of a new contiguous tensor and traces
   name_shape and name_values. */
static void show(llm_demo *d, const char *name, const llm_tensor *t)
{
    printf("%s shape=%s", name,
           llm_put(d, llm_text("%s_shape", name), llm_sizes(t->shape, t->rank)));
    printf(" values=%s\n",
           llm_put(d, llm_text("%s_values", name), llm_nums(t->data, t->size, 0)));
}
/* A contiguous matrix (up to 4 columns) as trace table rows. */
static void trace_matrix(llm_demo *d, const char *table, const llm_tensor *t)
{
    const char *cells[4];
    size_t i, j, n = t->shape[1] < 4 ? t->shape[1] : 4;
    for (i = 0; i < t->shape[0]; i++) {
        for (j = 0; j < n; j++)
            cells[j] = llm_num(t->data[i * t->shape[1] + j], 0);
        llm_trace_row(&d->trace, table, n, cells);
    }
}

/* The textbook product of row-major m x kk and kk x n matrices: loops i, j,
   k, each output one sum from +0.0, k ascending (or descending). */
static void textbook(double *c, const double *a, const double *b, size_t m,
                     size_t kk, size_t n, int descending)
{
    size_t i, j, t;
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            double s = 0.0;
            for (t = 0; t < kk; t++) {
                const size_t k = descending ? kk - 1 - t : t;
                s += a[i * kk + k] * b[k * n + j];
            }
            c[i * n + j] = s;
        }
}
static void predict_first(llm_demo *d)
{
    llm_tensor *a = operand(d, 2, shape_a, fixture_a);
    llm_tensor *w = operand(d, 2, shape_w, fixture_w), *c = product(d, a, w, 0, 0);
    const double *ar = NULL, *wc;
    const char *dot;
    double sum = 0.0, p;
    size_t i, k;
    int same;
    if (!d->ok)
        return;
    show(d, "A", a);
    show(d, "W", w);
    show(d, "C", c);
    trace_matrix(d, "mat_a", a);
    trace_matrix(d, "mat_w", w);
    trace_matrix(d, "mat_c", c);
    for (i = 0; i < 4; i++) {          /* each output and its dot product */
        ar = a->data + i / 2 * 3;
        wc = w->data + i % 2;
        dot = llm_text("%s·%s + %s·%s + %s·%s", llm_num(ar[0], 0), llm_num(wc[0], 0),
                       llm_num(ar[1], 0), llm_num(wc[2], 0), llm_num(ar[2], 0),
                       llm_num(wc[4], 0));
        llm_row(d, "dots", llm_text("[%zu, %zu]", i / 2, i % 2), dot,
                llm_num(c->data[i], 0), NULL);
        if (i == 2)
            llm_put(d, "c10_expr", dot);
    }
    for (k = 0, ar = a->data + 3; k < 3; k++) {
        p = ar[k] * w->data[k * 2];
        sum += p;                  /* the library's order: +0.0, then k = 0, 1, 2 */
        llm_row(d, "c10_terms", llm_text("%zu", k), llm_num(ar[k], 0),
                llm_num(w->data[k * 2], 0), llm_num(p, 0), llm_num(sum, 0), NULL);
    }
    same = memcmp(&sum, &c->data[2], sizeof sum) == 0;
    printf("C[1,0] terms=%s*%s + %s*%s + %s*%s", llm_num(ar[0], 0),
           llm_num(w->data[0], 0), llm_num(ar[1], 0), llm_num(w->data[2], 0),
           llm_num(ar[2], 0), llm_num(w->data[4], 0));
    printf(" sum=%s same_bits=%s\n", llm_put(d, "c10", llm_num(sum, 0)), llm_yes(same));
    llm_demo_check(d, same, "the running sum ends on the library's C[1,0]");
}
static void transposed_operands(llm_demo *d)
{
    static const char *const names[5] = {   /* the tensors passed, for the table */
        "$A$, $W$", "$A^{\\mathsf T}$, $W$", "$A$, $W^{\\mathsf T}$",
        "$A^{\\mathsf T}$, $W^{\\mathsf T}$", "$A$, $W^{\\mathsf T}$"};
    static const char *const plain[5] = {
        "A W", "A^T trans_a", "W^T trans_b", "A^T W^T both", "view W^T trans_b"};
    llm_tensor *a = operand(d, 2, shape_a, fixture_a), *at = llm_own_tensor(d);
    llm_tensor *w = operand(d, 2, shape_w, fixture_w), *wt = llm_own_tensor(d);
    llm_tensor *c0 = NULL, *c, view;
    const llm_tensor *first[5] = {a, at, a, at, a}, *second[5] = {w, w, wt, wt, &view};
    size_t i;
    int same, same_all = 1;
    if (!(LLM_TRY(d, llm_tensor_transpose(&view, a, 0, 1, &d->err))
          && LLM_TRY(d, llm_tensor_copy(at, &view, &d->err))
          && LLM_TRY(d, llm_tensor_transpose(&view, w, 0, 1, &d->err))  /* no copy */
          && LLM_TRY(d, llm_tensor_copy(wt, &view, &d->err))))
        return;
    llm_put(d, "view_strides", llm_sizes(view.stride, 2));  /* W^T's view */
    for (i = 0; i < 5; i++) {
        c = product(d, first[i], second[i], i == 1 || i == 3, i >= 2);
        if (!d->ok)
            return;
        c0 = i == 0 ? c : c0;
        same = memcmp(c->data, c0->data, 4 * sizeof(double)) == 0;
        same_all = same_all && same;
        printf("flags %s: C=%s same_bits=%s\n", plain[i], llm_nums(c->data, 4, 0),
               llm_yes(same));
        llm_row(d, "flags", names[i], llm_sizes(second[i]->stride, 2),
                llm_text("%d, %d", i == 1 || i == 3, i >= 2), llm_nums(c->data, 4, 0),
                NULL);
    }
    llm_put(d, "flags_same", llm_yes(same_all));
    llm_demo_check(d, same_all, "every way of passing A and W gives C's bits");
}
static void batched(llm_demo *d)
{
    static const double a_vals[12] = {1, 2, 3, 4, 5, 6, 0, 1, 2, 2, 1, 0};
    const size_t shape_a3[3] = {2, 2, 3}, shape_w3[3] = {1, 3, 2};
    llm_tensor *a = operand(d, 3, shape_a3, a_vals);
    llm_tensor *c = product(d, a, operand(d, 3, shape_w3, fixture_w), 0, 0);
    llm_tensor *c2 = product(d, a, operand(d, 2, shape_w, fixture_w), 0, 0);
    const double *x, *y;
    size_t b;
    int same;
    if (!d->ok)
        return;
    show(d, "batched", c);
    for (b = 0; b < 2; b++) {           /* each matrix of the stack and its product */
        x = a_vals + 6 * b;
        y = c->data + 4 * b;
        llm_row(d, "batches", llm_text("%zu", b),
                llm_text("%s, %s", llm_nums(x, 3, 0), llm_nums(x + 3, 3, 0)),
                llm_text("%s, %s", llm_nums(y, 2, 0), llm_nums(y + 2, 2, 0)), NULL);
    }
    same = c2->rank == 3 && memcmp(c->data, c2->data, 8 * sizeof(double)) == 0;
    printf("batched with W of rank 2: same_bits=%s\n",
           llm_put(d, "rank2_same", llm_yes(same)));
    llm_demo_check(d, same, "W of rank 2 gives the batched product's bits");
}
static void empty_axes(llm_demo *d)
{
    const size_t shape_k0a[2] = {2, 0}, shape_k0b[2] = {0, 2}, shape_m0[2] = {0, 3};
    llm_tensor *a = operand(d, 2, shape_k0a, NULL), *b = operand(d, 2, shape_k0b, NULL);
    llm_tensor *c = product(d, a, b, 0, 0), *am = operand(d, 2, shape_m0, NULL);
    llm_tensor *e = product(d, am, operand(d, 2, shape_w, fixture_w), 0, 0);
    size_t i;
    int positive = 1;
    if (!d->ok)
        return;
    show(d, "k0", c);
    for (i = 0; i < c->size; i++)
        positive = positive && c->data[i] == 0.0 && !signbit(c->data[i]);
    printf("k0 every output +0.0=%s\n", llm_yes(positive));
    llm_demo_check(d, positive, "with K = 0 every output is +0.0");
    show(d, "m0", e);
}
static void order_of_the_sum(llm_demo *d)
{
    enum { NB = 3, M = 5, K = 37, N = 11 };
    static double a[NB * M * K], b[K * N], up[NB * M * N], down[NB * M * N];
    static const double row[3] = {0.1, 0.2, 0.3}, ones[3] = {1, 1, 1};
    const size_t shape_a3[3] = {NB, M, K}, shape_b2[2] = {K, N};
    const size_t shape_row[2] = {1, 3}, shape_col[2] = {3, 1};
    volatile double x = 0.1, z = -0.01;  /* volatile: computed at run time */
    llm_tensor *ta, *c, *tr, *c3;
    double desc = 0.0;
    size_t t, differ = 0;
    int same;
    for (t = 0; t < NB * M * K; t++)
        a[t] = (double)(t * 7919 % 1009) / 1009.0 - 0.5;
    for (t = 0; t < K * N; t++)
        b[t] = (double)(t * 104729 % 997) / 313.0 - 1.5;
    textbook(up, a, b, NB * M, K, N, 0);     /* the stack as one matrix, NB * M rows */
    textbook(down, a, b, NB * M, K, N, 1);
    ta = operand(d, 3, shape_a3, a);
    c = product(d, ta, operand(d, 2, shape_b2, b), 0, 0);
    tr = operand(d, 2, shape_row, row);
    c3 = product(d, tr, operand(d, 2, shape_col, ones), 0, 0);
    if (!d->ok)
        return;
    same = memcmp(c->data, up, sizeof up) == 0;
    for (t = 0; t < NB * M * N; t++)
        differ += memcmp(&up[t], &down[t], sizeof up[t]) != 0;
    printf("order [3, 5, 37] x [37, 11]: outputs=%d textbook_same_bits=%s "
           "descending_k_differs=%zu\n", NB * M * N,
           llm_put(d, "order_same", llm_yes(same)), differ);
    llm_put(d, "order_outputs", llm_text("%d", NB * M * N));
    llm_put(d, "order_differ", llm_text("%zu", differ));
    llm_demo_check(d, same, "the library's product has the textbook's bits");
    for (t = 3; t-- > 0;)
        desc += row[t] * ones[t];
    printf("sum 0.1+0.2+0.3 ascending=%s",
           llm_put(d, "sum_up", llm_num(c3->data[0], 17)));
    printf(" descending=%s\n", llm_put(d, "sum_down", llm_num(desc, 17)));
    printf("0.1*0.1 + (-0.01) two_roundings=%s",
           llm_put(d, "fma_twice", llm_text("%.6e", x * x + z)));
    printf(" one_rounding=%s\n",
           llm_put(d, "fma_once", llm_text("%.6e", fma(x, x, z))));
}
static void refusals(llm_demo *d)
{
    static double one = 1.0;
    const size_t shape_v[1] = {3}, shape_223[3] = {2, 2, 3};
    const size_t shape_422[3] = {4, 2, 2}, shape_332[3] = {3, 3, 2};
    llm_tensor *a = operand(d, 2, shape_a, NULL), *w = operand(d, 2, shape_w, NULL);
    llm_tensor *v = operand(d, 1, shape_v, NULL), *a3 = operand(d, 3, shape_223, NULL);
    llm_tensor *b = operand(d, 3, shape_422, NULL), *out = llm_own_tensor(d);
    llm_tensor *b3 = operand(d, 3, shape_332, NULL);
    /* shapes [2^32, 1] and [1, 2^32], strides [0, 0]: every element is one */
    llm_tensor column = {.data = &one, .rank = 2, .shape = {(size_t)1 << 32, 1},
                         .size = (size_t)1 << 32};
    llm_tensor row = {.data = &one, .rank = 2, .shape = {1, (size_t)1 << 32},
                      .size = (size_t)1 << 32};
    if (!d->ok)
        return;
    llm_refuse_cells(d, "c", "NULL x [3, 2]", llm_matmul(out, NULL, w, 0, 0, &d->err));
    llm_refuse_cells(d, "c", "[2, 3] x [3]", llm_matmul(out, a, v, 0, 0, &d->err));
    refuse(d, "[2, 3] x [2, 3]", llm_matmul(out, a, a, 0, 0, &d->err));
    llm_put(d, "inner_message", d->err.message);
    refuse(d, "[2, 3]^T x [3, 2]", llm_matmul(out, a, w, 1, 0, &d->err));
    refuse(d, "[2, 2, 3] x [4, 2, 2]", llm_matmul(out, a3, b, 0, 0, &d->err));
    llm_put(d, "inner_first", llm_status_name(d->err.code));
    refuse(d, "[2, 2, 3] x [3, 3, 2]", llm_matmul(out, a3, b3, 0, 0, &d->err));
    llm_put(d, "batch_message", d->err.message);
    refuse(d, "[2^32, 1] x [1, 2^32]", llm_matmul(out, &column, &row, 0, 0, &d->err));
    printf("output untouched after refusals=%s\n",
           llm_put(d, "untouched", llm_yes(out->data == NULL)));
    llm_demo_check(d, out->data == NULL && out->rank == 0,
                   "the refused products left the output empty");
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {predict_first, transposed_operands, batched,
                                            empty_axes, order_of_the_sum, refusals,
                                            NULL};
    return llm_demo_main(argc, argv, "ch11-matrix-multiplication", NULL, sections);
}
