/* ch10-broadcasting-reductions -- broadcast binary maps, reductions over an axis. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/tensor.h"

/* "label shape=[..] values=[..]" for a row-major result; traces the values
   as key and the shape as key_shape. */
static void show(llm_trace *tr, const char *label, const char *key, const llm_tensor *t)
{
    char shape[64], values[256], name[64];
    llm_fmt_sizes(shape, sizeof shape, t->shape, t->rank);
    llm_fmt_list(values, sizeof values, t->data, t->size, 0);
    printf("%s shape=%s values=%s\n", label, shape, values);
    llm_trace_value(tr, key, values);
    snprintf(name, sizeof name, "%s_shape", key);
    llm_trace_value(tr, name, shape);
}

static double square(double v)
{
    return v * v;
}

/* +0 and -0 with their signs, a NaN with its bits, other values plainly. */
static char *describe(char *buf, size_t size, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    if (v != v)
        snprintf(buf, size, "nan(%016llx)", (unsigned long long)bits);
    else if (v == 0.0)
        snprintf(buf, size, "%s0", bits >> 63 ? "-" : "+");
    else
        llm_fmt(buf, size, v, 0);
    return buf;
}

static double naive_max(const double *x, size_t n)
{
    double m = x[0];
    size_t j;
    for (j = 1; j < n; j++)
        m = x[j] > m ? x[j] : m;
    return m;
}

int main(int argc, char **argv)
{
    llm_trace tr;
    llm_tensor x = {0}, b = {0}, y = {0}, sum0 = {0}, mean1 = {0};
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch10-broadcasting-reductions", &tr);
    if (status != 0)
        return status;
    printf("chapter=10 broadcasting-reductions\n");
    {
        static const double xv[6] = {1, 2, 3, 4, 5, 6}, bv[3] = {10, 20, 30};
        const size_t xs[2] = {2, 3}, bs[1] = {3};
        llm_tensor max1 = {0};
        llm_error err;
        size_t r = 0, shape[LLM_MAX_RANK], i, j;
        char buf[256], cell[5][64], one[32];
        const char *cells[5] = {cell[0], cell[1], cell[2], cell[3], cell[4]};

        ok = llm_demo_ok("ch10", llm_tensor_from(&x, 2, xs, xv, 6, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_from(&b, 1, bs, bv, 3, &err), &err)
          && llm_demo_ok("ch10", llm_broadcast_shape(&x, &b, &r, shape, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_binary(&y, LLM_ADD, &x, &b, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_reduce(&sum0, LLM_SUM, &y, 0, 0, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_reduce(&mean1, LLM_MEAN, &y, 1, 1, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_reduce(&max1, LLM_MAX, &y, 1, 0, &err), &err);
        if (ok) {
            show(&tr, "x", "x", &x);
            show(&tr, "b", "b", &b);
            printf("broadcast [2, 3] with [3] -> %s\n", llm_fmt_sizes(buf, sizeof buf, shape, r));
            llm_trace_value(&tr, "bshape", buf);
            show(&tr, "x+b", "y", &y);
            llm_trace_value(&tr, "y10", llm_fmt(buf, sizeof buf, y.data[3], 0));
            for (i = 0; i < 2; i++)
                for (j = 0; j < 3; j++) {     /* result index, x, index of b read, b, result */
                    snprintf(cell[0], sizeof cell[0], "[%zu, %zu]", i, j);
                    llm_fmt(cell[1], sizeof cell[1], x.data[i * 3 + j], 0);
                    snprintf(cell[2], sizeof cell[2], "[%zu]", j);
                    llm_fmt(cell[3], sizeof cell[3], b.data[j], 0);
                    llm_fmt(cell[4], sizeof cell[4], y.data[i * 3 + j], 0);
                    llm_trace_row(&tr, "grid", 5, cells);
                }
            show(&tr, "sum axis=0", "sum0", &sum0);
            llm_trace_value(&tr, "sum0_first", llm_fmt(buf, sizeof buf, sum0.data[0], 0));
            for (j = 0; j < 3; j++) {         /* column j, its additions in order, the sum */
                snprintf(cell[0], sizeof cell[0], "%zu", j);
                snprintf(cell[1], sizeof cell[1], "+0");
                for (i = 0; i < 2; i++)
                    snprintf(cell[1] + strlen(cell[1]), sizeof cell[1] - strlen(cell[1]),
                             " + %s", llm_fmt(one, sizeof one, y.data[i * 3 + j], 0));
                llm_fmt(cell[2], sizeof cell[2], sum0.data[j], 0);
                llm_trace_row(&tr, "sum_axis0", 3, cells);
            }
            show(&tr, "mean axis=1 keepdim", "mean1", &mean1);
            snprintf(buf, sizeof buf, "[");
            for (i = 0; i < 2; i++)
                snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s[%s]",
                         i > 0 ? ", " : "", llm_fmt(one, sizeof one, mean1.data[i], 0));
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "]");
            printf("  as rows=%s\n", buf);
            llm_trace_value(&tr, "mean1_rows", buf);
            show(&tr, "max axis=1", "max1", &max1);
            for (i = 0; i < 2; i++) {         /* row i, its additions, mean, max */
                snprintf(cell[0], sizeof cell[0], "%zu", i);
                snprintf(cell[1], sizeof cell[1], "(+0");
                for (j = 0; j < 3; j++)
                    snprintf(cell[1] + strlen(cell[1]), sizeof cell[1] - strlen(cell[1]),
                             " + %s", llm_fmt(one, sizeof one, y.data[i * 3 + j], 0));
                snprintf(cell[1] + strlen(cell[1]), sizeof cell[1] - strlen(cell[1]), ") / 3");
                llm_fmt(cell[2], sizeof cell[2], mean1.data[i], 0);
                llm_fmt(cell[3], sizeof cell[3], max1.data[i], 0);
                llm_trace_row(&tr, "rows", 4, cells);
            }
        }
        llm_tensor_free(&max1);
    }
    if (ok) {
        static const double cv[2] = {1, 2}, rv[3] = {10, 20, 30}, two[1] = {2};
        static const double av[6] = {1, 2, 3, 4, 5, 6}, dv[2] = {100, 200};
        const size_t cs[2] = {2, 1}, rs[2] = {1, 3}, as[3] = {2, 1, 3};
        llm_tensor c = {0}, row = {0}, s = {0}, a3 = {0}, d = {0};
        llm_tensor outer = {0}, scaled = {0}, sum3 = {0}, sq = {0};
        llm_error err;

        ok = llm_demo_ok("ch10", llm_tensor_from(&c, 2, cs, cv, 2, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_from(&row, 2, rs, rv, 3, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_from(&s, 0, NULL, two, 1, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_from(&a3, 3, as, av, 6, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_from(&d, 2, cs, dv, 2, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_binary(&outer, LLM_ADD, &c, &row, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_binary(&scaled, LLM_MUL, &s, &x, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_binary(&sum3, LLM_ADD, &a3, &d, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_map(&sq, &x, square, &err), &err);
        if (ok) {
            show(&tr, "[2, 1] + [1, 3]", "outer", &outer);
            show(&tr, "scalar 2 * x", "scaled", &scaled);
            show(&tr, "[2, 1, 3] + [2, 1]", "rank3", &sum3);
            show(&tr, "map square x", "squared", &sq);
        }
        llm_tensor_free(&c);
        llm_tensor_free(&row);
        llm_tensor_free(&s);
        llm_tensor_free(&a3);
        llm_tensor_free(&d);
        llm_tensor_free(&outer);
        llm_tensor_free(&scaled);
        llm_tensor_free(&sum3);
        llm_tensor_free(&sq);
    }
    if (ok) {
        llm_tensor view = {0}, column = {0}, vsum = {0}, cmax = {0};
        llm_error err;
        char buf[64];
        int same;

        view.data = y.data;                   /* borrowed: owns stays 0 */
        view.rank = 2;
        view.shape[0] = 3; view.shape[1] = 2;
        view.stride[0] = 1; view.stride[1] = 3;
        view.size = 6;
        column.data = y.data;
        column.offset = 1;
        column.rank = 1;
        column.shape[0] = 2;
        column.stride[0] = 3;
        column.size = 2;
        ok = llm_demo_ok("ch10", llm_tensor_reduce(&vsum, LLM_SUM, &view, 1, 0, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_reduce(&cmax, LLM_MAX, &column, 0, 0, &err), &err);
        if (ok) {
            same = vsum.size == sum0.size
                && memcmp(vsum.data, sum0.data, sum0.size * sizeof sum0.data[0]) == 0;
            show(&tr, "transposed view strides=[1, 3] sum axis=1", "view_sum", &vsum);
            printf("  same bits as sum axis=0: %s\n", same ? "yes" : "no");
            llm_trace_value(&tr, "view_same", same ? "yes" : "no");
            ok = same;
            printf("column 1 view offset=1 stride=3 max=%s\n",
                   llm_fmt(buf, sizeof buf, cmax.data[0], 0));
            llm_trace_value(&tr, "column_max", buf);
        }
        llm_tensor_free(&vsum);
        llm_tensor_free(&cmax);
    }
    if (ok) {
        const size_t es[2] = {2, 0}, zs[2] = {0, 3};
        llm_tensor e = {0}, z = {0}, esum = {0}, zb = {0}, zsum = {0}, bad = {0};
        llm_error err;
        char buf[32];

        ok = llm_demo_ok("ch10", llm_tensor_zeros(&e, 2, es, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_zeros(&z, 2, zs, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_reduce(&esum, LLM_SUM, &e, 1, 0, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_binary(&zb, LLM_ADD, &z, &b, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_reduce(&zsum, LLM_SUM, &z, 0, 0, &err), &err);
        if (ok) {
            show(&tr, "sum axis=1 of [2, 0]", "empty_sum", &esum);
            llm_demo_refusal(&tr, "mean over axis 1 of [2, 0]",
                             llm_tensor_reduce(&bad, LLM_MEAN, &e, 1, 0, &err), &err);
            llm_trace_value(&tr, "empty_message", err.message);
            llm_demo_refusal(&tr, "max over axis 1 of [2, 0]",
                             llm_tensor_reduce(&bad, LLM_MAX, &e, 1, 1, &err), &err);
            show(&tr, "[0, 3] + [3]", "zero_size", &zb);
            snprintf(buf, sizeof buf, "%zu", zb.size);
            printf("  elements=%s\n", buf);
            llm_trace_value(&tr, "zero_size_elements", buf);
            show(&tr, "sum axis=0 of [0, 3]", "zero_rows_sum", &zsum);
            ok = bad.data == NULL;
        }
        llm_tensor_free(&e);
        llm_tensor_free(&z);
        llm_tensor_free(&esum);
        llm_tensor_free(&zb);
        llm_tensor_free(&zsum);
    }
    if (ok) {
        static const double pv[2] = {10, 20};
        const size_t ps[1] = {2}, pcol[2] = {2, 1};
        llm_tensor p = {0}, pc = {0}, fixed = {0}, mean_flat = {0}, centered = {0};
        llm_tensor out = {0}, no_buffer = {0}, tall = {0}, wide = {0};
        llm_error err;

        ok = llm_demo_ok("ch10", llm_tensor_from(&p, 1, ps, pv, 2, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_from(&pc, 2, pcol, pv, 2, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_binary(&fixed, LLM_ADD, &x, &pc, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_reduce(&mean_flat, LLM_MEAN, &y, 1, 0, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_binary(&centered, LLM_SUB, &y, &mean1, &err), &err);
        if (ok) {
            llm_demo_refusal(&tr, "[2, 3] + [2]",
                             llm_tensor_binary(&out, LLM_ADD, &x, &p, &err), &err);
            printf("  %s\n", err.message);
            llm_trace_value(&tr, "bad_message", err.message);
            show(&tr, "[2, 3] + [2, 1]", "fixed", &fixed);
            llm_demo_refusal(&tr, "[2, 3] - mean over axis 1 without keepdim",
                             llm_tensor_binary(&out, LLM_SUB, &y, &mean_flat, &err), &err);
            show(&tr, "[2, 3] - mean over axis 1 with keepdim", "centered", &centered);
            llm_demo_refusal(&tr, "sum over axis 2 of [2, 3]",
                             llm_tensor_reduce(&out, LLM_SUM, &y, 2, 0, &err), &err);
            llm_demo_refusal(&tr, "binary operation 7",
                             llm_tensor_binary(&out, (llm_binary_op)7, &x, &b, &err), &err);
            llm_demo_refusal(&tr, "reduction 7",
                             llm_tensor_reduce(&out, (llm_reduce_op)7, &y, 0, 0, &err), &err);
            llm_demo_refusal(&tr, "map without a function",
                             llm_tensor_map(&out, &x, NULL, &err), &err);
            llm_demo_refusal(&tr, "a tensor without a buffer",
                             llm_tensor_binary(&out, LLM_ADD, &x, &no_buffer, &err), &err);
            tall.data = wide.data = x.data;   /* stride 0: one element, read 2^40 times */
            tall.rank = wide.rank = 2;
            tall.shape[0] = wide.shape[1] = (size_t)1 << 40;
            tall.shape[1] = wide.shape[0] = 1;
            llm_demo_refusal(&tr, "[2^40, 1] + [1, 2^40]",
                             llm_tensor_binary(&out, LLM_ADD, &tall, &wide, &err), &err);
            printf("output untouched after refusals=%s\n", out.data == NULL ? "yes" : "no");
            llm_trace_value(&tr, "untouched", out.data == NULL ? "yes" : "no");
            ok = out.data == NULL;
        }
        llm_tensor_free(&p);
        llm_tensor_free(&pc);
        llm_tensor_free(&fixed);
        llm_tensor_free(&mean_flat);
        llm_tensor_free(&centered);
    }
    if (ok) {
        static const char *const lines[5] = {"[-0, +0]", "[+0, -0]", "[-0, -0]",
                                             "[nan, 3]", "[3, nan]"};
        const uint64_t nan_bits = UINT64_C(0x7ff8000000000123);
        const uint64_t minus_zero_bits = UINT64_C(0x8000000000000000);
        const size_t vs[2] = {5, 2};
        double v[10], qnan, mz;
        llm_tensor t = {0}, mx = {0}, sm = {0};
        llm_error err;
        char cell[4][64];
        const char *cells[4] = {cell[0], cell[1], cell[2], cell[3]};
        size_t i;

        memcpy(&qnan, &nan_bits, sizeof qnan);
        memcpy(&mz, &minus_zero_bits, sizeof mz);
        v[0] = mz;  v[1] = 0.0;
        v[2] = 0.0; v[3] = mz;
        v[4] = mz;  v[5] = mz;
        v[6] = qnan; v[7] = 3.0;
        v[8] = 3.0; v[9] = qnan;
        ok = llm_demo_ok("ch10", llm_tensor_from(&t, 2, vs, v, 10, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_reduce(&mx, LLM_MAX, &t, 1, 0, &err), &err)
          && llm_demo_ok("ch10", llm_tensor_reduce(&sm, LLM_SUM, &t, 1, 0, &err), &err);
        for (i = 0; ok && i < 5; i++) {
            snprintf(cell[0], sizeof cell[0], "%s", lines[i]);
            describe(cell[1], sizeof cell[1], mx.data[i]);
            describe(cell[2], sizeof cell[2], naive_max(v + 2 * i, 2));
            describe(cell[3], sizeof cell[3], sm.data[i]);
            printf("line %s max=%s naive=%s sum=%s\n", cell[0], cell[1], cell[2], cell[3]);
            llm_trace_row(&tr, "signed", 4, cells);
            if (i == 0)
                llm_trace_value(&tr, "mixed_zeros_max", cell[1]);
            if (i == 2) {
                llm_trace_value(&tr, "minus_zeros_max", cell[1]);
                llm_trace_value(&tr, "minus_zeros_sum", cell[3]);
            }
            if (i == 4)
                llm_trace_value(&tr, "nan_max", cell[1]);
        }
        llm_tensor_free(&t);
        llm_tensor_free(&mx);
        llm_tensor_free(&sm);
    }
    llm_tensor_free(&x);
    llm_tensor_free(&b);
    llm_tensor_free(&y);
    llm_tensor_free(&sum0);
    llm_tensor_free(&mean1);
    return llm_demo_finish(&tr, ok);
}
