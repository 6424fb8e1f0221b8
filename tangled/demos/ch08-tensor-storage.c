/* ch08-tensor-storage -- flat storage, strides and checked indexing. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/tensor.h"

int main(int argc, char **argv)
{
    llm_trace tr;
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch08-tensor-storage", &tr);
    if (status != 0)
        return status;
    printf("chapter=08 tensor-storage\n");
    {
        static const double values[12] = {10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42};
        const size_t shape[3] = {2, 2, 3};
        const size_t read_at[3] = {1, 0, 2}, write_at[3] = {0, 1, 1};
        llm_tensor t;
        llm_error err;
        size_t o, i, idx[3];
        double v = 0.0, before = 0.0;
        char buf[256], cell[3][64];

        ok = ok && llm_demo_ok("ch08", llm_tensor_from(&t, 3, shape, values, 12, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        printf("shape=%s", llm_fmt_sizes(buf, sizeof buf, t.shape, t.rank));
        llm_trace_value(&tr, "shape", buf);
        printf(" strides=%s elements=%zu\n", llm_fmt_sizes(buf, sizeof buf, t.stride, t.rank),
               t.size);
        llm_trace_value(&tr, "strides", buf);
        snprintf(buf, sizeof buf, "%zu", t.size);
        llm_trace_value(&tr, "elements", buf);
        printf("storage=%s\n", llm_fmt_list(buf, sizeof buf, t.data, t.size, 0));

        /* the storage table: flat position, index, value */
        for (o = 0; o < t.size; o++) {
            const char *cells[3] = {cell[0], cell[1], cell[2]};
            idx[0] = o / 6; idx[1] = o / 3 % 2; idx[2] = o % 3;
            snprintf(cell[0], sizeof cell[0], "%zu", o);
            llm_fmt_sizes(cell[1], sizeof cell[1], idx, 3);
            llm_fmt(cell[2], sizeof cell[2], t.data[o], 0);
            llm_trace_row(&tr, "storage", 3, cells);
        }

        ok = ok && llm_demo_ok("ch08", llm_tensor_offset(&t, 3, read_at, &o, &err), &err)
                && llm_demo_ok("ch08", llm_tensor_get(&t, 3, read_at, &v, &err), &err);
        printf("read index=[1, 0, 2] offset=%zu value=%s\n", o, llm_fmt(buf, sizeof buf, v, 0));
        snprintf(buf, sizeof buf, "%zu", o);
        llm_trace_value(&tr, "read_offset", buf);
        llm_trace_value(&tr, "read_value", llm_fmt(buf, sizeof buf, v, 0));
        for (i = 0; i < 3; i++) {          /* how each axis contributes to the offset */
            const char *cells[3] = {cell[0], cell[1], cell[2]};
            snprintf(cell[0], sizeof cell[0], "%zu", i);
            snprintf(cell[1], sizeof cell[1], "%zu · %zu", read_at[i], t.stride[i]);
            snprintf(cell[2], sizeof cell[2], "%zu", read_at[i] * t.stride[i]);
            llm_trace_row(&tr, "read_terms", 3, cells);
        }

        ok = ok && llm_demo_ok("ch08", llm_tensor_get(&t, 3, write_at, &before, &err), &err)
                && llm_demo_ok("ch08", llm_tensor_set(&t, 3, write_at, 99.0, &err), &err)
                && llm_demo_ok("ch08", llm_tensor_offset(&t, 3, write_at, &o, &err), &err);
        printf("write index=[0, 1, 1] flat=%zu before=%s after=%s\n", o,
               llm_fmt(cell[0], sizeof cell[0], before, 0), llm_fmt(cell[1], sizeof cell[1], t.data[o], 0));
        snprintf(buf, sizeof buf, "%zu", o);
        llm_trace_value(&tr, "write_flat", buf);
        llm_trace_value(&tr, "write_before", cell[0]);
        printf("storage=%s\n", llm_fmt_list(buf, sizeof buf, t.data, t.size, 0));
        llm_trace_value(&tr, "storage_after", buf);
        llm_tensor_free(&t);
    }
    {
        static const double values[12] = {10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42};
        const size_t shape[3] = {2, 2, 3}, bad_index[3] = {1, 2, 0}, short_index[2] = {1, 0};
        const size_t huge[2] = {SIZE_MAX / 2 + 1, 2}, deep[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
        llm_tensor t, other;
        llm_error err;
        llm_status st;
        double v = -1.0;
        char buf[32];

        memset(&other, 0, sizeof other);
        ok = ok && llm_demo_ok("ch08", llm_tensor_from(&t, 3, shape, values, 12, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        st = llm_tensor_get(&t, 3, bad_index, &v, &err);
        llm_demo_refusal(&tr, "read [1, 2, 0]", st, &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "bad_axis", "1");
        llm_trace_value(&tr, "bad_message", err.message);
        llm_demo_refusal(&tr, "read [1, 0]", llm_tensor_get(&t, 2, short_index, &v, &err), &err);
        llm_demo_refusal(&tr, "write [1, 2, 0]",
                         llm_tensor_set(&t, 3, bad_index, 7.0, &err), &err);
        llm_demo_refusal(&tr, "11 values for [2, 2, 3]",
                         llm_tensor_from(&other, 3, shape, values, 11, &err), &err);
        llm_demo_refusal(&tr, "shape [2^63, 2]", llm_tensor_zeros(&other, 2, huge, &err), &err);
        llm_demo_refusal(&tr, "rank 9", llm_tensor_zeros(&other, 9, deep, &err), &err);
        ok = ok && other.data == NULL;
        printf("unchanged after refusals=%s value_untouched=%s\n",
               memcmp(t.data, values, sizeof values) == 0 ? "yes" : "no",
               v == -1.0 ? "yes" : "no");
        ok = ok && memcmp(t.data, values, sizeof values) == 0 && v == -1.0;
        llm_trace_value(&tr, "unchanged", memcmp(t.data, values, sizeof values) == 0 ? "yes" : "no");
        snprintf(buf, sizeof buf, "%d", (int)LLM_MAX_RANK);
        llm_trace_value(&tr, "max_rank", buf);
        llm_tensor_free(&t);
    }
    {
        const size_t empty_shape[3] = {2, 0, 3}, zero[3] = {0, 0, 0}, two[1] = {2};
        llm_tensor s, e, b;
        llm_error err;
        llm_status st;
        double v = 0.0, special[2];
        uint64_t bits_in[2] = {UINT64_C(0x8000000000000000), UINT64_C(0x7ff8000000000123)};
        uint64_t bits_out[2];
        char buf[64], buf2[64], buf3[64];

        ok = ok && llm_demo_ok("ch08", llm_tensor_zeros(&s, 0, NULL, &err), &err)
                && llm_demo_ok("ch08", llm_tensor_set(&s, 0, NULL, 3.5, &err), &err)
                && llm_demo_ok("ch08", llm_tensor_get(&s, 0, NULL, &v, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        printf("scalar shape=%s strides=%s elements=%zu value=%s\n",
               llm_fmt_sizes(buf, sizeof buf, s.shape, 0), llm_fmt_sizes(buf2, sizeof buf2, s.stride, 0),
               s.size, llm_fmt(buf3, sizeof buf3, v, 1));
        llm_tensor_free(&s);

        ok = ok && llm_demo_ok("ch08", llm_tensor_zeros(&e, 3, empty_shape, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        printf("empty shape=%s strides=%s elements=%zu\n",
               llm_fmt_sizes(buf, sizeof buf, e.shape, 3), llm_fmt_sizes(buf2, sizeof buf2, e.stride, 3),
               e.size);
        llm_trace_value(&tr, "empty_strides", buf2);
        st = llm_tensor_get(&e, 3, zero, &v, &err);
        llm_demo_refusal(&tr, "read [0, 0, 0] of the empty tensor", st, &err);
        llm_tensor_free(&e);

        memcpy(special, bits_in, sizeof special);
        ok = ok && llm_demo_ok("ch08", llm_tensor_from(&b, 1, two, special, 2, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        memcpy(bits_out, b.data, sizeof bits_out);
        printf("bits -0=%016llx nan=%016llx round_trip=%s\n",
               (unsigned long long)bits_out[0], (unsigned long long)bits_out[1],
               memcmp(bits_in, bits_out, sizeof bits_in) == 0 ? "exact" : "changed");
        ok = ok && memcmp(bits_in, bits_out, sizeof bits_in) == 0;
        llm_tensor_free(&b);
    }
    return llm_demo_finish(&tr, ok);
}
