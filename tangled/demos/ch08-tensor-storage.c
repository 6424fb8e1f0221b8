/* ch08-tensor-storage -- flat storage, strides and checked indexing. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/tensor.h"

static const double values[12] = {10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42};
static const size_t shape[3] = {2, 2, 3};

static void predict_first(llm_demo *d)
{
    const size_t read_at[3] = {1, 0, 2}, write_at[3] = {0, 1, 1};
    llm_tensor *t = llm_own_tensor(d);
    size_t o = 0, i, idx[3];
    double v = 0.0, before = 0.0;

    if (!LLM_TRY(d, llm_tensor_from(t, 3, shape, values, 12, &d->err)))
        return;
    printf("shape=%s", llm_put(d, "shape", llm_sizes(t->shape, t->rank)));
    printf(" strides=%s", llm_put(d, "strides", llm_sizes(t->stride, t->rank)));
    printf(" elements=%s\n", llm_put(d, "elements", llm_text("%zu", t->size)));
    printf("storage=%s\n", llm_nums(t->data, t->size, 0));
    for (o = 0; o < t->size; o++) {        /* flat position, index, value */
        idx[0] = o / 6; idx[1] = o / 3 % 2; idx[2] = o % 3;
        llm_row(d, "storage", llm_text("%zu", o), llm_sizes(idx, 3),
                llm_num(t->data[o], 0), NULL);
    }

    if (!(LLM_TRY(d, llm_tensor_offset(t, 3, read_at, &o, &d->err))
          && LLM_TRY(d, llm_tensor_get(t, 3, read_at, &v, &d->err))))
        return;
    printf("read index=[1, 0, 2] offset=%s",
           llm_put(d, "read_offset", llm_text("%zu", o)));
    printf(" value=%s\n", llm_put(d, "read_value", llm_num(v, 0)));
    for (i = 0; i < 3; i++)            /* how each axis contributes to the offset */
        llm_row(d, "read_terms", llm_text("%zu", i),
                llm_text("%zu · %zu", read_at[i], t->stride[i]),
                llm_text("%zu", read_at[i] * t->stride[i]), NULL);

    if (!(LLM_TRY(d, llm_tensor_get(t, 3, write_at, &before, &d->err))
          && LLM_TRY(d, llm_tensor_set(t, 3, write_at, 99.0, &d->err))
          && LLM_TRY(d, llm_tensor_offset(t, 3, write_at, &o, &d->err))))
        return;
    printf("write index=[0, 1, 1] flat=%s",
           llm_put(d, "write_flat", llm_text("%zu", o)));
    printf(" before=%s", llm_put(d, "write_before", llm_num(before, 0)));
    printf(" after=%s\n", llm_num(t->data[o], 0));
    printf("storage=%s\n", llm_put(d, "storage_after", llm_nums(t->data, t->size, 0)));
}
static void refusals(llm_demo *d)
{
    const size_t bad_index[3] = {1, 2, 0}, short_index[2] = {1, 0};
    const size_t huge[2] = {SIZE_MAX / 2 + 1, 2}, deep[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    llm_tensor *t = llm_own_tensor(d);
    llm_tensor *other = llm_own_tensor(d);
    double v = -1.0;
    int unchanged;

    if (!LLM_TRY(d, llm_tensor_from(t, 3, shape, values, 12, &d->err)))
        return;
    llm_refuse(d, "read [1, 2, 0]", llm_tensor_get(t, 3, bad_index, &v, &d->err));
    printf("  %s\n", d->err.message);
    llm_put(d, "bad_axis", "1");
    llm_put(d, "bad_message", d->err.message);
    llm_refuse(d, "read [1, 0]", llm_tensor_get(t, 2, short_index, &v, &d->err));
    llm_refuse(d, "write [1, 2, 0]", llm_tensor_set(t, 3, bad_index, 7.0, &d->err));
    llm_refuse(d, "11 values for [2, 2, 3]",
               llm_tensor_from(other, 3, shape, values, 11, &d->err));
    llm_refuse(d, "shape [2^63, 2]", llm_tensor_zeros(other, 2, huge, &d->err));
    llm_refuse(d, "rank 9", llm_tensor_zeros(other, 9, deep, &d->err));
    unchanged = memcmp(t->data, values, sizeof values) == 0;
    printf("unchanged after refusals=%s", llm_put(d, "unchanged", llm_yes(unchanged)));
    printf(" value_untouched=%s\n", llm_yes(v == -1.0));
    llm_put(d, "max_rank", llm_text("%d", (int)LLM_MAX_RANK));
    llm_demo_check(d, other->data == NULL, "a refused constructor left no buffer");
    llm_demo_check(d, unchanged && v == -1.0, "refused calls changed nothing");
}
static void scalar_empty_bits(llm_demo *d)
{
    const size_t empty_shape[3] = {2, 0, 3}, zero[3] = {0, 0, 0}, two[1] = {2};
    llm_tensor *s = llm_own_tensor(d);
    llm_tensor *e = llm_own_tensor(d);
    llm_tensor *b = llm_own_tensor(d);
    double v = 0.0, special[2];
    const uint64_t bits_in[2] = {UINT64_C(0x8000000000000000),
                                 UINT64_C(0x7ff8000000000123)};
    uint64_t bits_out[2];

    if (!(LLM_TRY(d, llm_tensor_zeros(s, 0, NULL, &d->err))
          && LLM_TRY(d, llm_tensor_set(s, 0, NULL, 3.5, &d->err))
          && LLM_TRY(d, llm_tensor_get(s, 0, NULL, &v, &d->err))
          && LLM_TRY(d, llm_tensor_zeros(e, 3, empty_shape, &d->err))))
        return;
    printf("scalar shape=%s strides=%s elements=%zu value=%s\n", llm_sizes(s->shape, 0),
           llm_sizes(s->stride, 0), s->size, llm_num(v, 1));
    printf("empty shape=%s strides=%s elements=%zu\n", llm_sizes(e->shape, 3),
           llm_put(d, "empty_strides", llm_sizes(e->stride, 3)), e->size);
    llm_refuse(d, "read [0, 0, 0] of the empty tensor",
               llm_tensor_get(e, 3, zero, &v, &d->err));

    memcpy(special, bits_in, sizeof special);
    if (!LLM_TRY(d, llm_tensor_from(b, 1, two, special, 2, &d->err)))
        return;
    memcpy(bits_out, b->data, sizeof bits_out);
    printf("bits -0=%016llx nan=%016llx round_trip=%s\n",
           (unsigned long long)bits_out[0], (unsigned long long)bits_out[1],
           memcmp(bits_in, bits_out, sizeof bits_in) == 0 ? "exact" : "changed");
    llm_demo_check(d, memcmp(bits_in, bits_out, sizeof bits_in) == 0,
                   "-0 and the NaN kept every bit");
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {predict_first, refusals, scalar_empty_bits,
                                            NULL};
    return llm_demo_main(argc, argv, "ch08-tensor-storage", NULL, sections);
}
