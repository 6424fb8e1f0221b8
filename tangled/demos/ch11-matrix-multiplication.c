/* ch11-matrix-multiplication -- checked 2-d and batched matrix products. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/tensor.h"

static const double fixture_a[6] = {1, 2, 3, 4, 5, 6};   /* A, shape [2, 3] */
static const double fixture_w[6] = {1, 2, 0, 1, 2, 0};   /* W, shape [3, 2] */
/* Prints "name shape=[..] values=[..]" of a new contiguous tensor and traces
   name_shape and name_values. */
static void show(llm_trace *tr, const char *name, const llm_tensor *t)
{
    char shape[64], values[256], key[64];
    llm_fmt_sizes(shape, sizeof shape, t->shape, t->rank);
    llm_fmt_list(values, sizeof values, t->data, t->size, 0);
    printf("%s shape=%s values=%s\n", name, shape, values);
    snprintf(key, sizeof key, "%s_shape", name);
    llm_trace_value(tr, key, shape);
    snprintf(key, sizeof key, "%s_values", name);
    llm_trace_value(tr, key, values);
}
/* A contiguous matrix (up to 4 columns) as trace table rows. */
static void trace_matrix(llm_trace *tr, const char *table, const llm_tensor *t)
{
    char cell[4][32];
    const char *cells[4] = {cell[0], cell[1], cell[2], cell[3]};
    size_t i, j;
    for (i = 0; i < t->shape[0]; i++) {
        for (j = 0; j < t->shape[1] && j < 4; j++)
            llm_fmt(cell[j], sizeof cell[j], t->data[i * t->shape[1] + j], 0);
        llm_trace_row(tr, table, j, cells);
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

int main(int argc, char **argv)
{
    llm_trace tr;
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch11-matrix-multiplication", &tr);
    if (status != 0)
        return status;
    printf("chapter=11 matrix-multiplication\n");
    {
        const size_t shape_a[2] = {2, 3}, shape_w[2] = {3, 2};
        llm_tensor a, w, c;
        llm_error err;
        size_t i, j, k, used;
        char cell[5][64], x[32], y[32], terms[64];
        const char *cells[5] = {cell[0], cell[1], cell[2], cell[3], cell[4]};
        double sum = 0.0;

        ok = ok && llm_demo_ok("ch11", llm_tensor_from(&a, 2, shape_a, fixture_a, 6, &err), &err)
                && llm_demo_ok("ch11", llm_tensor_from(&w, 2, shape_w, fixture_w, 6, &err), &err)
                && llm_demo_ok("ch11", llm_matmul(&c, &a, &w, 0, 0, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        show(&tr, "A", &a);
        show(&tr, "W", &w);
        show(&tr, "C", &c);
        trace_matrix(&tr, "mat_a", &a);
        trace_matrix(&tr, "mat_w", &w);
        trace_matrix(&tr, "mat_c", &c);
        for (i = 0; i < 2; i++)             /* each output and its dot product */
            for (j = 0; j < 2; j++) {
                for (k = 0, used = 0; k < 3; k++)
                    used += (size_t)snprintf(cell[1] + used, sizeof cell[1] - used, "%s%s·%s",
                                             k > 0 ? " + " : "",
                                             llm_fmt(x, sizeof x, a.data[i * 3 + k], 0),
                                             llm_fmt(y, sizeof y, w.data[k * 2 + j], 0));
                snprintf(cell[0], sizeof cell[0], "[%zu, %zu]", i, j);
                llm_fmt(cell[2], sizeof cell[2], c.data[i * 2 + j], 0);
                llm_trace_row(&tr, "dots", 3, cells);
                if (i == 1 && j == 0)
                    llm_trace_value(&tr, "c10_expr", cell[1]);
            }
        for (k = 0, used = 0; k < 3; k++) {
            const double p = a.data[3 + k] * w.data[k * 2];
            sum += p;                            /* the library's order: +0.0, then k = 0, 1, 2 */
            snprintf(cell[0], sizeof cell[0], "%zu", k);
            llm_fmt(cell[1], sizeof cell[1], a.data[3 + k], 0);
            llm_fmt(cell[2], sizeof cell[2], w.data[k * 2], 0);
            llm_fmt(cell[3], sizeof cell[3], p, 0);
            llm_fmt(cell[4], sizeof cell[4], sum, 0);
            llm_trace_row(&tr, "c10_terms", 5, cells);
            used += (size_t)snprintf(terms + used, sizeof terms - used, "%s%s*%s",
                                     k > 0 ? " + " : "", cell[1], cell[2]);
        }
        printf("C[1,0] terms=%s sum=%s same_bits=%s\n", terms, llm_fmt(x, sizeof x, sum, 0),
               memcmp(&sum, &c.data[2], sizeof sum) == 0 ? "yes" : "no");
        ok = ok && memcmp(&sum, &c.data[2], sizeof sum) == 0;
        llm_trace_value(&tr, "c10", x);
        llm_tensor_free(&a);
        llm_tensor_free(&w);
        llm_tensor_free(&c);
    }
    {
        static const double at_vals[6] = {1, 4, 2, 5, 3, 6};   /* A^T, shape [3, 2] */
        static const double wt_vals[6] = {1, 0, 2, 2, 1, 0};   /* W^T, shape [2, 3] */
        static const char *const names[5] = {   /* the tensors passed, for the table */
            "$A$, $W$", "$A^{\\mathsf T}$, $W$", "$A$, $W^{\\mathsf T}$",
            "$A^{\\mathsf T}$, $W^{\\mathsf T}$", "$A$, $W^{\\mathsf T}$"};
        static const char *const plain[5] = {
            "A W", "A^T trans_a", "W^T trans_b", "A^T W^T both", "view W^T trans_b"};
        const size_t shape_a[2] = {2, 3}, shape_w[2] = {3, 2};
        const size_t shape_at[2] = {3, 2}, shape_wt[2] = {2, 3};
        llm_tensor a, w, at, wt, view, c[5];
        llm_error err;
        char values[128], flags[16], strides[32];
        const char *cells[4] = {NULL, strides, flags, values};
        const llm_tensor *second[5];
        size_t i;
        int same_all = 1;

        ok = ok && llm_demo_ok("ch11", llm_tensor_from(&a, 2, shape_a, fixture_a, 6, &err), &err)
                && llm_demo_ok("ch11", llm_tensor_from(&w, 2, shape_w, fixture_w, 6, &err), &err)
                && llm_demo_ok("ch11", llm_tensor_from(&at, 2, shape_at, at_vals, 6, &err), &err)
                && llm_demo_ok("ch11", llm_tensor_from(&wt, 2, shape_wt, wt_vals, 6, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        view = w;                              /* W^T over W's buffer: no copy */
        view.shape[0] = 2; view.shape[1] = 3;
        view.stride[0] = 1; view.stride[1] = 2;
        view.owns = 0;
        ok = ok && llm_demo_ok("ch11", llm_matmul(&c[0], &a, &w, 0, 0, &err), &err)
                && llm_demo_ok("ch11", llm_matmul(&c[1], &at, &w, 1, 0, &err), &err)
                && llm_demo_ok("ch11", llm_matmul(&c[2], &a, &wt, 0, 1, &err), &err)
                && llm_demo_ok("ch11", llm_matmul(&c[3], &at, &wt, 1, 1, &err), &err)
                && llm_demo_ok("ch11", llm_matmul(&c[4], &a, &view, 0, 1, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        second[0] = &w; second[1] = &w; second[2] = &wt; second[3] = &wt; second[4] = &view;
        for (i = 0; i < 5; i++) {
            const int same = memcmp(c[i].data, c[0].data, 4 * sizeof(double)) == 0;
            same_all = same_all && same;
            llm_fmt_list(values, sizeof values, c[i].data, 4, 0);
            snprintf(flags, sizeof flags, "%d, %d", i == 1 || i == 3, i >= 2);
            printf("flags %s: C=%s same_bits=%s\n", plain[i], values, same ? "yes" : "no");
            llm_fmt_sizes(strides, sizeof strides, second[i]->stride, 2);
            cells[0] = names[i];
            llm_trace_row(&tr, "flags", 4, cells);
        }
        for (i = 0; i < 5; i++)
            llm_tensor_free(&c[i]);
        ok = ok && same_all;
        llm_trace_value(&tr, "flags_same", same_all ? "yes" : "no");
        llm_tensor_free(&a);
        llm_tensor_free(&w);
        llm_tensor_free(&at);
        llm_tensor_free(&wt);
    }
    {
        static const double a_vals[12] = {1, 2, 3, 4, 5, 6, 0, 1, 2, 2, 1, 0};
        const size_t shape_a3[3] = {2, 2, 3}, shape_w3[3] = {1, 3, 2}, shape_w[2] = {3, 2};
        llm_tensor a, w, w2, c, c2;
        llm_error err;
        char cell[3][64], r0[32], r1[32];
        const char *cells[3] = {cell[0], cell[1], cell[2]};
        size_t b;
        int same;

        ok = ok && llm_demo_ok("ch11", llm_tensor_from(&a, 3, shape_a3, a_vals, 12, &err), &err)
                && llm_demo_ok("ch11", llm_tensor_from(&w, 3, shape_w3, fixture_w, 6, &err), &err)
                && llm_demo_ok("ch11", llm_tensor_from(&w2, 2, shape_w, fixture_w, 6, &err), &err)
                && llm_demo_ok("ch11", llm_matmul(&c, &a, &w, 0, 0, &err), &err)
                && llm_demo_ok("ch11", llm_matmul(&c2, &a, &w2, 0, 0, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        show(&tr, "batched", &c);
        for (b = 0; b < 2; b++) {           /* each matrix of the stack and its product */
            snprintf(cell[0], sizeof cell[0], "%zu", b);
            snprintf(cell[1], sizeof cell[1], "%s, %s",
                     llm_fmt_list(r0, sizeof r0, a.data + 6 * b, 3, 0),
                     llm_fmt_list(r1, sizeof r1, a.data + 6 * b + 3, 3, 0));
            snprintf(cell[2], sizeof cell[2], "%s, %s",
                     llm_fmt_list(r0, sizeof r0, c.data + 4 * b, 2, 0),
                     llm_fmt_list(r1, sizeof r1, c.data + 4 * b + 2, 2, 0));
            llm_trace_row(&tr, "batches", 3, cells);
        }
        same = c2.rank == 3 && memcmp(c.data, c2.data, 8 * sizeof(double)) == 0;
        printf("batched with W of rank 2: same_bits=%s\n", same ? "yes" : "no");
        llm_trace_value(&tr, "rank2_same", same ? "yes" : "no");
        ok = ok && same;
        llm_tensor_free(&a);
        llm_tensor_free(&w);
        llm_tensor_free(&w2);
        llm_tensor_free(&c);
        llm_tensor_free(&c2);
    }
    {
        const size_t shape_k0a[2] = {2, 0}, shape_k0b[2] = {0, 2}, shape_m0[2] = {0, 3};
        const size_t shape_w[2] = {3, 2};
        llm_tensor a, b, c, am, w, e;
        llm_error err;
        size_t i;
        int positive = 1;

        ok = ok && llm_demo_ok("ch11", llm_tensor_zeros(&a, 2, shape_k0a, &err), &err)
                && llm_demo_ok("ch11", llm_tensor_zeros(&b, 2, shape_k0b, &err), &err)
                && llm_demo_ok("ch11", llm_matmul(&c, &a, &b, 0, 0, &err), &err)
                && llm_demo_ok("ch11", llm_tensor_zeros(&am, 2, shape_m0, &err), &err)
                && llm_demo_ok("ch11", llm_tensor_from(&w, 2, shape_w, fixture_w, 6, &err), &err)
                && llm_demo_ok("ch11", llm_matmul(&e, &am, &w, 0, 0, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        show(&tr, "k0", &c);
        for (i = 0; i < c.size; i++)
            positive = positive && c.data[i] == 0.0 && !signbit(c.data[i]);
        printf("k0 every output +0.0=%s\n", positive ? "yes" : "no");
        ok = ok && positive;
        show(&tr, "m0", &e);
        llm_tensor_free(&a);
        llm_tensor_free(&b);
        llm_tensor_free(&c);
        llm_tensor_free(&am);
        llm_tensor_free(&w);
        llm_tensor_free(&e);
    }
    {
        enum { NB = 3, M = 5, K = 37, N = 11 };
        static double a[NB * M * K], b[K * N], up[NB * M * N], down[NB * M * N];
        const size_t shape_a3[3] = {NB, M, K}, shape_b2[2] = {K, N};
        llm_tensor ta, tb, c;
        llm_error err;
        size_t t, differ = 0;
        int same;
        char buf[64];

        for (t = 0; t < NB * M * K; t++)
            a[t] = (double)(t * 7919 % 1009) / 1009.0 - 0.5;
        for (t = 0; t < K * N; t++)
            b[t] = (double)(t * 104729 % 997) / 313.0 - 1.5;
        for (t = 0; t < NB; t++) {
            textbook(up + t * M * N, a + t * M * K, b, M, K, N, 0);
            textbook(down + t * M * N, a + t * M * K, b, M, K, N, 1);
        }
        ok = ok && llm_demo_ok("ch11",
                               llm_tensor_from(&ta, 3, shape_a3, a, NB * M * K, &err), &err)
                && llm_demo_ok("ch11", llm_tensor_from(&tb, 2, shape_b2, b, K * N, &err), &err)
                && llm_demo_ok("ch11", llm_matmul(&c, &ta, &tb, 0, 0, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        same = memcmp(c.data, up, sizeof up) == 0;
        for (t = 0; t < NB * M * N; t++)
            differ += memcmp(&up[t], &down[t], sizeof up[t]) != 0;
        printf("order [3, 5, 37] x [37, 11]: outputs=%d textbook_same_bits=%s "
               "descending_k_differs=%zu\n", NB * M * N, same ? "yes" : "no", differ);
        ok = ok && same;
        llm_trace_value(&tr, "order_same", same ? "yes" : "no");
        snprintf(buf, sizeof buf, "%d", NB * M * N);
        llm_trace_value(&tr, "order_outputs", buf);
        snprintf(buf, sizeof buf, "%zu", differ);
        llm_trace_value(&tr, "order_differ", buf);
        llm_tensor_free(&ta);
        llm_tensor_free(&tb);
        llm_tensor_free(&c);
        {
            static const double row[3] = {0.1, 0.2, 0.3}, ones[3] = {1, 1, 1};
            const size_t shape_row[2] = {1, 3}, shape_col[2] = {3, 1};
            volatile double x = 0.1, z = -0.01;  /* volatile: computed at run time */
            double desc = 0.0, twice, once;
            char s1[64], s2[64];

            ok = ok && llm_demo_ok("ch11", llm_tensor_from(&ta, 2, shape_row, row, 3, &err), &err)
                    && llm_demo_ok("ch11", llm_tensor_from(&tb, 2, shape_col, ones, 3, &err), &err)
                    && llm_demo_ok("ch11", llm_matmul(&c, &ta, &tb, 0, 0, &err), &err);
            if (!ok)
                return llm_demo_finish(&tr, 0);
            for (t = 3; t-- > 0;)
                desc += row[t] * ones[t];
            printf("sum 0.1+0.2+0.3 ascending=%s descending=%s\n",
                   llm_fmt(s1, sizeof s1, c.data[0], 17), llm_fmt(s2, sizeof s2, desc, 17));
            llm_trace_value(&tr, "sum_up", s1);
            llm_trace_value(&tr, "sum_down", s2);
            twice = x * x + z;
            once = fma(x, x, z);
            snprintf(s1, sizeof s1, "%.6e", twice);
            snprintf(s2, sizeof s2, "%.6e", once);
            printf("0.1*0.1 + (-0.01) two_roundings=%s one_rounding=%s\n", s1, s2);
            llm_trace_value(&tr, "fma_twice", s1);
            llm_trace_value(&tr, "fma_once", s2);
            llm_tensor_free(&ta);
            llm_tensor_free(&tb);
            llm_tensor_free(&c);
        }
    }
    {
        static double one = 1.0;
        const size_t shape_a[2] = {2, 3}, shape_w[2] = {3, 2}, shape_v[1] = {3};
        const size_t shape_wt[2] = {2, 3};
        const size_t shape_223[3] = {2, 2, 3}, shape_422[3] = {4, 2, 2}, shape_332[3] = {3, 3, 2};
        llm_tensor a, w, v, wt, a3, b422, b332, column, row, out;
        llm_error err;
        llm_status st;

        memset(&out, 0, sizeof out);
        ok = ok && llm_demo_ok("ch11", llm_tensor_from(&a, 2, shape_a, fixture_a, 6, &err), &err)
                && llm_demo_ok("ch11", llm_tensor_from(&w, 2, shape_w, fixture_w, 6, &err), &err)
                && llm_demo_ok("ch11", llm_tensor_zeros(&v, 1, shape_v, &err), &err)
                && llm_demo_ok("ch11", llm_tensor_zeros(&wt, 2, shape_wt, &err), &err)
                && llm_demo_ok("ch11", llm_tensor_zeros(&a3, 3, shape_223, &err), &err)
                && llm_demo_ok("ch11", llm_tensor_zeros(&b422, 3, shape_422, &err), &err)
                && llm_demo_ok("ch11", llm_tensor_zeros(&b332, 3, shape_332, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        memset(&column, 0, sizeof column);       /* shape [2^32, 1], strides [0, 0] */
        column.data = &one;
        column.rank = 2;
        column.shape[0] = (size_t)1 << 32;
        column.shape[1] = 1;
        column.size = column.shape[0];
        row = column;                            /* shape [1, 2^32] */
        row.shape[0] = 1;
        row.shape[1] = (size_t)1 << 32;
        llm_demo_refusal_cells(&tr, "c", "NULL x [3, 2]",
                               llm_matmul(&out, NULL, &w, 0, 0, &err), &err);
        llm_demo_refusal_cells(&tr, "c", "[2, 3] x [3]",
                               llm_matmul(&out, &a, &v, 0, 0, &err), &err);
        llm_demo_refusal_cells(&tr, "c", "[2, 3] x [2, 3]",
                               llm_matmul(&out, &a, &wt, 0, 0, &err), &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "inner_message", err.message);
        llm_demo_refusal_cells(&tr, "c", "[2, 3]^T x [3, 2]",
                               llm_matmul(&out, &a, &w, 1, 0, &err), &err);
        printf("  %s\n", err.message);
        st = llm_matmul(&out, &a3, &b422, 0, 0, &err);
        llm_demo_refusal_cells(&tr, "c", "[2, 2, 3] x [4, 2, 2]", st, &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "inner_first", llm_status_name(st));
        llm_demo_refusal_cells(&tr, "c", "[2, 2, 3] x [3, 3, 2]",
                               llm_matmul(&out, &a3, &b332, 0, 0, &err), &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "batch_message", err.message);
        llm_demo_refusal_cells(&tr, "c", "[2^32, 1] x [1, 2^32]",
                               llm_matmul(&out, &column, &row, 0, 0, &err), &err);
        printf("  %s\n", err.message);
        ok = ok && out.data == NULL && out.rank == 0;
        printf("output untouched after refusals=%s\n", out.data == NULL ? "yes" : "no");
        llm_trace_value(&tr, "untouched", out.data == NULL ? "yes" : "no");
        llm_tensor_free(&a);
        llm_tensor_free(&w);
        llm_tensor_free(&v);
        llm_tensor_free(&wt);
        llm_tensor_free(&a3);
        llm_tensor_free(&b422);
        llm_tensor_free(&b332);
    }
    return llm_demo_finish(&tr, ok);
}
