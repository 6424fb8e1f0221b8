/* ch09-tensor-views -- views of one buffer, and copies made on purpose. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/tensor.h"

static void trace_key(llm_trace *tr, const char *key, const char *field,
                      const char *value)
{
    char name[64];
    snprintf(name, sizeof name, "%s_%s", key, field);
    llm_trace_value(tr, name, value);
}

/* Prints and traces view v (at most 24 elements), named key, made by expr;
   also a row of the table "views" when in_table. */
static int show(llm_trace *tr, const char *key, const char *expr, const llm_tensor *v,
                int in_table)
{
    size_t idx[LLM_MAX_RANK] = {0}, reads[24], j, n = v->size;
    double values[24];
    char shape[64], strides[64], offset[32], rd[160], vals[160], table[32];
    char cj[16], co[16], cv[32];
    const char *cells[6], *row[3] = {cj, co, cv};
    const char *contig = llm_tensor_is_contiguous(v) ? "yes" : "no";
    llm_error err;
    if (n > 24)
        return 0;
    snprintf(table, sizeof table, "reads_%s", key);
    for (j = 0; j < n; j++) {
        if (!llm_demo_ok("ch09", llm_tensor_offset(v, v->rank, idx, &reads[j], &err), &err))
            return 0;
        values[j] = v->data[reads[j]];
        snprintf(cj, sizeof cj, "%zu", j + 1);
        snprintf(co, sizeof co, "%zu", reads[j]);
        llm_fmt(cv, sizeof cv, values[j], 0);
        llm_trace_row(tr, table, 3, row);
        llm_index_next(v->rank, v->shape, idx);
    }
    llm_fmt_sizes(shape, sizeof shape, v->shape, v->rank);
    llm_fmt_sizes(strides, sizeof strides, v->stride, v->rank);
    snprintf(offset, sizeof offset, "%zu", v->offset);
    llm_fmt_sizes(rd, sizeof rd, reads, n);
    llm_fmt_list(vals, sizeof vals, values, n, 0);
    printf("view %s = %s\n  shape=%s strides=%s offset=%s contiguous=%s\n"
           "  reads=%s values=%s\n", key, expr, shape, strides, offset, contig, rd, vals);
    cells[0] = expr; cells[1] = shape; cells[2] = strides; cells[3] = offset;
    cells[4] = rd; cells[5] = contig;
    if (in_table)
        llm_trace_row(tr, "views", 6, cells);
    trace_key(tr, key, "shape", shape);
    trace_key(tr, key, "strides", strides);
    trace_key(tr, key, "offset", offset);
    trace_key(tr, key, "reads", rd);
    trace_key(tr, key, "values", vals);
    trace_key(tr, key, "contiguous", contig);
    return 1;
}

int main(int argc, char **argv)
{
    llm_trace tr;
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch09-tensor-views", &tr);
    if (status != 0)
        return status;
    printf("chapter=09 tensor-views\n");
    {
        static const double values[6] = {10, 11, 12, 20, 21, 22};
        const size_t shape[2] = {2, 3}, to32[2] = {3, 2}, to6[1] = {6}, to3[1] = {3};
        const size_t at[2] = {2, 0};
        llm_tensor t, r, tt, s, ts, row, rowr, bad, sc, tc, tc6;
        llm_error err;
        char buf[160];

        memset(&bad, 0, sizeof bad);
        ok = ok && llm_demo_ok("ch09", llm_tensor_from(&t, 2, shape, values, 6, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        ok = ok && llm_demo_ok("ch09", llm_tensor_reshape(&r, &t, 2, to32, &err), &err)
                && llm_demo_ok("ch09", llm_tensor_transpose(&tt, &t, 0, 1, &err), &err)
                && llm_demo_ok("ch09", llm_tensor_slice(&s, &t, 1, 1, 3, &err), &err)
                && llm_demo_ok("ch09", llm_tensor_slice(&ts, &tt, 0, 1, 3, &err), &err)
                && llm_demo_ok("ch09", llm_tensor_slice(&row, &t, 0, 1, 2, &err), &err)
                && llm_demo_ok("ch09", llm_tensor_reshape(&rowr, &row, 1, to3, &err), &err);
        if (!ok) {
            llm_tensor_free(&t);
            return llm_demo_finish(&tr, 0);
        }
        ok = ok && show(&tr, "t", "from([2, 3], values)", &t, 1)
                && show(&tr, "r", "reshape(t, [3, 2])", &r, 1)
                && show(&tr, "tt", "transpose(t, 0, 1)", &tt, 1)
                && show(&tr, "s", "slice(t, 1, 1, 3)", &s, 1)
                && show(&tr, "ts", "slice(tt, 0, 1, 3)", &ts, 1)
                && show(&tr, "row", "slice(t, 0, 1, 2)", &row, 1)
                && show(&tr, "rowr", "reshape(row, [3])", &rowr, 1);
        ok = ok && r.data == t.data && tt.data == t.data && s.data == t.data
                && ts.data == t.data && row.data == t.data && rowr.data == t.data
                && !r.owns && !tt.owns && !s.owns && !ts.owns && !row.owns && !rowr.owns;
        printf("views share t's buffer=%s\n", ok ? "yes" : "no");

        /* a transposed view cannot be reshaped: refused, then done by a copy */
        llm_demo_refusal_cells(&tr, "cs", "reshape(tt, [6])",
                               llm_tensor_reshape(&bad, &tt, 1, to6, &err), &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "tt_reshape_code", llm_status_name(err.code));
        llm_trace_value(&tr, "contig_message", err.message);
        ok = ok && err.code == LLM_ERR_CONTIGUITY && bad.data == NULL;

        ok = ok && llm_demo_ok("ch09", llm_tensor_copy(&sc, &s, &err), &err);
        if (!ok) {
            llm_tensor_free(&t);
            return llm_demo_finish(&tr, 0);
        }
        ok = ok && show(&tr, "sc", "copy(s)", &sc, 1);
        ok = ok && llm_demo_ok("ch09", llm_tensor_copy(&tc, &tt, &err), &err)
                && llm_demo_ok("ch09", llm_tensor_reshape(&tc6, &tc, 1, to6, &err), &err)
                && show(&tr, "tc6", "reshape(copy(tt), [6])", &tc6, 1);

        /* one write through the transposed view: views see it, copies do not */
        ok = ok && llm_demo_ok("ch09", llm_tensor_set(&tt, 2, at, 99.0, &err), &err);
        printf("write tt[2, 0]=99: t.storage=%s\n",
               llm_fmt_list(buf, sizeof buf, t.data, 6, 0));
        llm_trace_value(&tr, "after_write", buf);
        ok = ok && show(&tr, "s2", "s", &s, 0);
        printf("copy sc still=%s\n", llm_fmt_list(buf, sizeof buf, sc.data, sc.size, 0));
        llm_trace_value(&tr, "sc_after", buf);
        llm_tensor_free(&sc);
        llm_tensor_free(&tc);
        llm_tensor_free(&t);
    }
    {
        static const double values[6] = {10, 11, 12, 20, 21, 22};
        const size_t shape[2] = {2, 3}, to42[2] = {4, 2}, huge[2] = {SIZE_MAX / 2 + 1, 2};
        const size_t deep[9] = {6, 1, 1, 1, 1, 1, 1, 1, 1};
        const size_t twice[2] = {0, 0}, outside[2] = {1, 2}, three[3] = {1, 0, 2};
        llm_tensor t, out, pattern;
        llm_error err;

        memset(&out, 0xab, sizeof out);
        memset(&pattern, 0xab, sizeof pattern);
        ok = ok && llm_demo_ok("ch09", llm_tensor_from(&t, 2, shape, values, 6, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        llm_demo_refusal_cells(&tr, "cs", "reshape(t, [4, 2])",
                               llm_tensor_reshape(&out, &t, 2, to42, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "reshape(t, rank 9)",
                               llm_tensor_reshape(&out, &t, 9, deep, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "reshape(t, [2^63, 2])",
                               llm_tensor_reshape(&out, &t, 2, huge, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "reshape(NULL, [4, 2])",
                               llm_tensor_reshape(&out, NULL, 2, to42, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "transpose(t, 0, 2)",
                               llm_tensor_transpose(&out, &t, 0, 2, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "permute(t, [0, 0])",
                               llm_tensor_permute(&out, &t, 2, twice, &err), &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "twice_message", err.message);
        llm_demo_refusal_cells(&tr, "cs", "permute(t, [1, 2])",
                               llm_tensor_permute(&out, &t, 2, outside, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "permute(t, [1, 0, 2])",
                               llm_tensor_permute(&out, &t, 3, three, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "slice(t, 1, 2, 1)",
                               llm_tensor_slice(&out, &t, 1, 2, 1, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "slice(t, 1, 1, 4)",
                               llm_tensor_slice(&out, &t, 1, 1, 4, &err), &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "bounds_message", err.message);
        llm_demo_refusal_cells(&tr, "cs", "slice(t, 2, 0, 1)",
                               llm_tensor_slice(&out, &t, 2, 0, 1, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "copy(NULL)", llm_tensor_copy(&out, NULL, &err), &err);
        ok = ok && memcmp(&out, &pattern, sizeof out) == 0
                && memcmp(t.data, values, sizeof values) == 0;
        printf("output untouched=%s storage unchanged=%s\n",
               memcmp(&out, &pattern, sizeof out) == 0 ? "yes" : "no",
               memcmp(t.data, values, sizeof values) == 0 ? "yes" : "no");
        llm_trace_value(&tr, "untouched", memcmp(&out, &pattern, sizeof out) == 0 ? "yes" : "no");
        llm_tensor_free(&t);
    }
    {
        static const double values[6] = {10, 11, 12, 20, 21, 22};
        const size_t one[1] = {1}, empty_shape[3] = {2, 0, 3}, shape[2] = {2, 3};
        const size_t zero[1] = {0};
        llm_tensor sc, v1, v0, e, et, e0, t, es, ec, out;
        llm_error err;
        double x = 0.0;

        memset(&out, 0, sizeof out);
        ok = ok && llm_demo_ok("ch09", llm_tensor_zeros(&sc, 0, NULL, &err), &err)
                && llm_demo_ok("ch09", llm_tensor_set(&sc, 0, NULL, 7.0, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        printf("scalar x=7\n");
        ok = ok && llm_demo_ok("ch09", llm_tensor_reshape(&v1, &sc, 1, one, &err), &err)
                && show(&tr, "v1", "reshape(x, [1])", &v1, 1)
                && llm_demo_ok("ch09", llm_tensor_reshape(&v0, &v1, 0, NULL, &err), &err)
                && llm_demo_ok("ch09", llm_tensor_get(&v0, 0, NULL, &x, &err), &err)
                && show(&tr, "v0", "reshape(v1, [])", &v0, 1);
        ok = ok && x == 7.0;
        llm_demo_refusal_cells(&tr, "cs", "slice(x, 0, 0, 1)",
                               llm_tensor_slice(&out, &sc, 0, 0, 1, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "transpose(x, 0, 0)",
                               llm_tensor_transpose(&out, &sc, 0, 0, &err), &err);
        llm_tensor_free(&sc);

        ok = ok && llm_demo_ok("ch09", llm_tensor_zeros(&e, 3, empty_shape, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        ok = ok && show(&tr, "e", "zeros([2, 0, 3])", &e, 1)
                && llm_demo_ok("ch09", llm_tensor_transpose(&et, &e, 0, 2, &err), &err)
                && show(&tr, "et", "transpose(e, 0, 2)", &et, 1)
                && llm_demo_ok("ch09", llm_tensor_reshape(&e0, &et, 1, zero, &err), &err)
                && show(&tr, "e0", "reshape(et, [0])", &e0, 1);
        llm_tensor_free(&e);

        ok = ok && llm_demo_ok("ch09", llm_tensor_from(&t, 2, shape, values, 6, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        ok = ok && llm_demo_ok("ch09", llm_tensor_slice(&es, &t, 1, 3, 3, &err), &err)
                && show(&tr, "es", "slice(t, 1, 3, 3)", &es, 1)
                && llm_demo_ok("ch09", llm_tensor_copy(&ec, &es, &err), &err);
        if (ok) {
            printf("copy(es) elements=%zu owns=%s\n", ec.size, ec.owns ? "yes" : "no");
            llm_tensor_free(&ec);
        }
        llm_tensor_free(&t);
    }
    return llm_demo_finish(&tr, ok);
}
