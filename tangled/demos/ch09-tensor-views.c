/* ch09-tensor-views -- views of one buffer, and copies made on purpose. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/tensor.h"

static const double values[6] = {10, 11, 12, 20, 21, 22};
static const size_t shape[2] = {2, 3};

/* Prints and traces view v (at most 24 elements), named key, made by expr;
   also a row of the table "views" when in_table. Nothing once ok is cleared. */
static void show(llm_demo *d, const char *key, const char *expr, const llm_tensor *v,
                 int in_table)
{
    static const char *const field[6] = {"shape", "strides", "offset", "reads",
                                          "values", "contiguous"};
    size_t idx[LLM_MAX_RANK] = {0}, reads[24], j;
    double got[24];
    if (!d->ok || !llm_demo_check(d, v->size <= 24, "a view shows at most 24 elements"))
        return;
    for (j = 0; j < v->size; j++) {
        if (!LLM_TRY(d, llm_tensor_offset(v, v->rank, idx, &reads[j], &d->err)))
            return;
        got[j] = v->data[reads[j]];
        llm_row(d, llm_text("reads_%s", key), llm_text("%zu", j + 1),
                llm_text("%zu", reads[j]), llm_num(got[j], 0), NULL);
        llm_index_next(v->rank, v->shape, idx);
    }
    const char *text[6] = {   /* after the rows: a ring text lasts 63 more texts */
        llm_sizes(v->shape, v->rank), llm_sizes(v->stride, v->rank),
        llm_text("%zu", v->offset), llm_sizes(reads, v->size),
        llm_nums(got, v->size, 0), llm_yes(llm_tensor_is_contiguous(v))};
    printf("view %s = %s\n  shape=%s strides=%s offset=%s contiguous=%s\n"
           "  reads=%s values=%s\n", key, expr, text[0], text[1], text[2], text[5],
           text[3], text[4]);
    if (in_table)
        llm_row(d, "views", expr, text[0], text[1], text[2], text[3], text[5], NULL);
    for (j = 0; j < 6; j++)
        llm_put(d, llm_text("%s_%s", key, field[j]), text[j]);
}

static void refuse(llm_demo *d, const char *what, llm_status st)
{
    llm_refuse_cells(d, "cs", what, st);
}
static void predict_first_views(llm_demo *d)
{
    const size_t to32[2] = {3, 2}, to6[1] = {6}, to3[1] = {3}, at[2] = {2, 0};
    llm_tensor *t = llm_own_tensor(d), *sc = llm_own_tensor(d), *tc = llm_own_tensor(d);
    llm_tensor r, tt, s, ts, row, rowr, tc6, bad = {0};
    const llm_tensor *view[6] = {&r, &tt, &s, &ts, &row, &rowr};
    int shared = 1, i;
    if (!(LLM_TRY(d, llm_tensor_from(t, 2, shape, values, 6, &d->err))
          && LLM_TRY(d, llm_tensor_reshape(&r, t, 2, to32, &d->err))
          && LLM_TRY(d, llm_tensor_transpose(&tt, t, 0, 1, &d->err))
          && LLM_TRY(d, llm_tensor_slice(&s, t, 1, 1, 3, &d->err))
          && LLM_TRY(d, llm_tensor_slice(&ts, &tt, 0, 1, 3, &d->err))
          && LLM_TRY(d, llm_tensor_slice(&row, t, 0, 1, 2, &d->err))
          && LLM_TRY(d, llm_tensor_reshape(&rowr, &row, 1, to3, &d->err))
          && LLM_TRY(d, llm_tensor_copy(sc, &s, &d->err))  /* copied before the write */
          && LLM_TRY(d, llm_tensor_copy(tc, &tt, &d->err))
          && LLM_TRY(d, llm_tensor_reshape(&tc6, tc, 1, to6, &d->err))))
        return;
    show(d, "t", "from([2, 3], values)", t, 1);
    show(d, "r", "reshape(t, [3, 2])", &r, 1);
    show(d, "tt", "transpose(t, 0, 1)", &tt, 1);
    show(d, "s", "slice(t, 1, 1, 3)", &s, 1);
    show(d, "ts", "slice(tt, 0, 1, 3)", &ts, 1);
    show(d, "row", "slice(t, 0, 1, 2)", &row, 1);
    show(d, "rowr", "reshape(row, [3])", &rowr, 1);
    for (i = 0; i < 6; i++)
        shared = shared && view[i]->data == t->data && !view[i]->owns;
    printf("views share t's buffer=%s\n",
           llm_yes(llm_demo_check(d, shared, "every view borrows t's buffer")));

    /* a transposed view cannot be reshaped: refused, then done by a copy */
    refuse(d, "reshape(tt, [6])", llm_tensor_reshape(&bad, &tt, 1, to6, &d->err));
    llm_put(d, "tt_reshape_code", llm_status_name(d->err.code));
    printf("  %s\n", llm_put(d, "contig_message", d->err.message));
    llm_demo_check(d, d->err.code == LLM_ERR_CONTIGUITY && bad.data == NULL,
                   "reshape(tt) is refused for contiguity and writes nothing");
    show(d, "sc", "copy(s)", sc, 1);
    show(d, "tc6", "reshape(copy(tt), [6])", &tc6, 1);

    /* one write through the transposed view: views see it, copies do not */
    if (!LLM_TRY(d, llm_tensor_set(&tt, 2, at, 99.0, &d->err)))
        return;
    printf("write tt[2, 0]=99: t.storage=%s\n",
           llm_put(d, "after_write", llm_nums(t->data, 6, 0)));
    show(d, "s2", "s", &s, 0);
    printf("copy sc still=%s\n",
           llm_put(d, "sc_after", llm_nums(sc->data, sc->size, 0)));
}
static void refusals(llm_demo *d)
{
    const size_t to42[2] = {4, 2}, huge[2] = {SIZE_MAX / 2 + 1, 2};
    const size_t deep[9] = {6, 1, 1, 1, 1, 1, 1, 1, 1};
    const size_t twice[2] = {0, 0}, outside[2] = {1, 2}, three[3] = {1, 0, 2};
    llm_tensor *t = llm_own_tensor(d), out, pattern;
    int untouched, unchanged;
    memset(&out, 0xab, sizeof out);
    memset(&pattern, 0xab, sizeof pattern);
    if (!LLM_TRY(d, llm_tensor_from(t, 2, shape, values, 6, &d->err)))
        return;
    refuse(d, "reshape(t, [4, 2])", llm_tensor_reshape(&out, t, 2, to42, &d->err));
    refuse(d, "reshape(t, rank 9)", llm_tensor_reshape(&out, t, 9, deep, &d->err));
    refuse(d, "reshape(t, [2^63, 2])", llm_tensor_reshape(&out, t, 2, huge, &d->err));
    refuse(d, "reshape(NULL, [4, 2])",
           llm_tensor_reshape(&out, NULL, 2, to42, &d->err));
    refuse(d, "transpose(t, 0, 2)", llm_tensor_transpose(&out, t, 0, 2, &d->err));
    refuse(d, "permute(t, [0, 0])", llm_tensor_permute(&out, t, 2, twice, &d->err));
    printf("  %s\n", llm_put(d, "twice_message", d->err.message));
    refuse(d, "permute(t, [1, 2])", llm_tensor_permute(&out, t, 2, outside, &d->err));
    refuse(d, "permute(t, [1, 0, 2])", llm_tensor_permute(&out, t, 3, three, &d->err));
    refuse(d, "slice(t, 1, 2, 1)", llm_tensor_slice(&out, t, 1, 2, 1, &d->err));
    refuse(d, "slice(t, 1, 1, 4)", llm_tensor_slice(&out, t, 1, 1, 4, &d->err));
    printf("  %s\n", llm_put(d, "bounds_message", d->err.message));
    refuse(d, "slice(t, 2, 0, 1)", llm_tensor_slice(&out, t, 2, 0, 1, &d->err));
    refuse(d, "copy(NULL)", llm_tensor_copy(&out, NULL, &d->err));
    untouched = memcmp(&out, &pattern, sizeof out) == 0;
    unchanged = memcmp(t->data, values, sizeof values) == 0;
    printf("output untouched=%s", llm_put(d, "untouched", llm_yes(untouched)));
    printf(" storage unchanged=%s\n", llm_yes(unchanged));
    llm_demo_check(d, untouched && unchanged, "the refused calls changed nothing");
}
static void scalar_and_empty_views(llm_demo *d)
{
    const size_t one[1] = {1}, empty_shape[3] = {2, 0, 3}, zero[1] = {0};
    llm_tensor *x = llm_own_tensor(d), *e = llm_own_tensor(d), *t = llm_own_tensor(d);
    llm_tensor *ec = llm_own_tensor(d);
    llm_tensor v1, v0, et, e0, es, out;
    if (!(LLM_TRY(d, llm_tensor_zeros(x, 0, NULL, &d->err))
          && LLM_TRY(d, llm_tensor_set(x, 0, NULL, 7.0, &d->err))
          && LLM_TRY(d, llm_tensor_reshape(&v1, x, 1, one, &d->err))
          && LLM_TRY(d, llm_tensor_reshape(&v0, &v1, 0, NULL, &d->err))
          && LLM_TRY(d, llm_tensor_zeros(e, 3, empty_shape, &d->err))
          && LLM_TRY(d, llm_tensor_transpose(&et, e, 0, 2, &d->err))
          && LLM_TRY(d, llm_tensor_reshape(&e0, &et, 1, zero, &d->err))
          && LLM_TRY(d, llm_tensor_from(t, 2, shape, values, 6, &d->err))
          && LLM_TRY(d, llm_tensor_slice(&es, t, 1, 3, 3, &d->err))
          && LLM_TRY(d, llm_tensor_copy(ec, &es, &d->err))))
        return;
    printf("scalar x=7\n");
    show(d, "v1", "reshape(x, [1])", &v1, 1);
    show(d, "v0", "reshape(v1, [])", &v0, 1);
    llm_demo_check(d, v0.data[v0.offset] == 7.0, "x reads 7 through [1] and back");
    refuse(d, "slice(x, 0, 0, 1)", llm_tensor_slice(&out, x, 0, 0, 1, &d->err));
    refuse(d, "transpose(x, 0, 0)", llm_tensor_transpose(&out, x, 0, 0, &d->err));
    show(d, "e", "zeros([2, 0, 3])", e, 1);
    show(d, "et", "transpose(e, 0, 2)", &et, 1);
    show(d, "e0", "reshape(et, [0])", &e0, 1);
    show(d, "es", "slice(t, 1, 3, 3)", &es, 1);
    printf("copy(es) elements=%zu owns=%s\n", ec->size, llm_yes(ec->owns));
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {predict_first_views, refusals,
                                            scalar_and_empty_views, NULL};
    return llm_demo_main(argc, argv, "ch09-tensor-views", NULL, sections);
}
