/* ch10-broadcasting-reductions -- broadcast binary maps, reductions over an axis. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/tensor.h"

/* The fixture the first section builds and the later ones read; main owns it. */
static llm_tensor *x, *b, *y, *sum0, *mean1;

/* "label shape=[..] values=[..]" for a row-major result; traces the values
   as key and the shape as key_shape. */
static void show(llm_demo *d, const char *label, const char *key, const llm_tensor *t)
{
    printf("%s shape=%s", label, llm_sizes(t->shape, t->rank));
    printf(" values=%s\n", llm_put(d, key, llm_nums(t->data, t->size, 0)));
    llm_put(d, llm_text("%s_shape", key), llm_sizes(t->shape, t->rank));
}

static double square(double v)
{
    return v * v;
}

/* +0 and -0 with their signs, a NaN with its bits, other values plainly. */
static const char *describe(double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    if (v != v)
        return llm_text("nan(%016llx)", (unsigned long long)bits);
    return v != 0.0 ? llm_num(v, 0) : bits >> 63 ? "-0" : "+0";
}
static void predict_first(llm_demo *d)
{
    static const double xv[6] = {1, 2, 3, 4, 5, 6}, bv[3] = {10, 20, 30};
    const size_t xs[2] = {2, 3}, bs[1] = {3};
    llm_tensor *max1 = llm_own_tensor(d);
    size_t r = 0, shape[LLM_MAX_RANK], i;
    const double *v;
    if (!(LLM_TRY(d, llm_tensor_from(x, 2, xs, xv, 6, &d->err))
          && LLM_TRY(d, llm_tensor_from(b, 1, bs, bv, 3, &d->err))
          && LLM_TRY(d, llm_broadcast_shape(x, b, &r, shape, &d->err))
          && LLM_TRY(d, llm_tensor_binary(y, LLM_ADD, x, b, &d->err))
          && LLM_TRY(d, llm_tensor_reduce(sum0, LLM_SUM, y, 0, 0, &d->err))
          && LLM_TRY(d, llm_tensor_reduce(mean1, LLM_MEAN, y, 1, 1, &d->err))
          && LLM_TRY(d, llm_tensor_reduce(max1, LLM_MAX, y, 1, 0, &d->err))))
        return;
    v = y->data;
    show(d, "x", "x", x);
    show(d, "b", "b", b);
    printf("broadcast [2, 3] with [3] -> %s\n",
           llm_put(d, "bshape", llm_sizes(shape, r)));
    show(d, "x+b", "y", y);
    llm_put(d, "y10", llm_num(v[3], 0));
    for (i = 0; i < 6; i++)           /* result index, x, index of b read, b, result */
        llm_row(d, "grid", llm_text("[%zu, %zu]", i / 3, i % 3), llm_num(x->data[i], 0),
                llm_text("[%zu]", i % 3), llm_num(b->data[i % 3], 0), llm_num(v[i], 0),
                NULL);
    show(d, "sum axis=0", "sum0", sum0);
    llm_put(d, "sum0_first", llm_num(sum0->data[0], 0));
    for (i = 0; i < 3; i++)           /* column i, its additions in order, the sum */
        llm_row(d, "sum_axis0", llm_text("%zu", i),
                llm_text("+0 + %s + %s", llm_num(v[i], 0), llm_num(v[3 + i], 0)),
                llm_num(sum0->data[i], 0), NULL);
    show(d, "mean axis=1 keepdim", "mean1", mean1);
    printf("  as rows=%s\n", llm_put(d, "mean1_rows", llm_rows(mean1->data, 2, 1, 0)));
    show(d, "max axis=1", "max1", max1);
    for (i = 0; i < 2; i++)           /* row i, its additions, mean, max */
        llm_row(d, "rows", llm_text("%zu", i),
                llm_text("(+0 + %s + %s + %s) / 3", llm_num(v[3 * i], 0),
                         llm_num(v[3 * i + 1], 0), llm_num(v[3 * i + 2], 0)),
                llm_num(mean1->data[i], 0), llm_num(max1->data[i], 0), NULL);
}
static void stretch_scalar_rank3_map(llm_demo *d)
{
    static const double cv[2] = {1, 2}, rv[3] = {10, 20, 30}, two[1] = {2};
    static const double av[6] = {1, 2, 3, 4, 5, 6}, dv[2] = {100, 200};
    const size_t cs[2] = {2, 1}, rs[2] = {1, 3}, as[3] = {2, 1, 3};
    llm_tensor *c = llm_own_tensor(d), *row = llm_own_tensor(d), *s = llm_own_tensor(d);
    llm_tensor *a3 = llm_own_tensor(d), *a2 = llm_own_tensor(d);
    llm_tensor *outer = llm_own_tensor(d), *scaled = llm_own_tensor(d);
    llm_tensor *sum3 = llm_own_tensor(d), *sq = llm_own_tensor(d);
    if (!(LLM_TRY(d, llm_tensor_from(c, 2, cs, cv, 2, &d->err))
          && LLM_TRY(d, llm_tensor_from(row, 2, rs, rv, 3, &d->err))
          && LLM_TRY(d, llm_tensor_from(s, 0, NULL, two, 1, &d->err))
          && LLM_TRY(d, llm_tensor_from(a3, 3, as, av, 6, &d->err))
          && LLM_TRY(d, llm_tensor_from(a2, 2, cs, dv, 2, &d->err))
          && LLM_TRY(d, llm_tensor_binary(outer, LLM_ADD, c, row, &d->err))
          && LLM_TRY(d, llm_tensor_binary(scaled, LLM_MUL, s, x, &d->err))
          && LLM_TRY(d, llm_tensor_binary(sum3, LLM_ADD, a3, a2, &d->err))
          && LLM_TRY(d, llm_tensor_map(sq, x, square, &d->err))))
        return;
    show(d, "[2, 1] + [1, 3]", "outer", outer);
    show(d, "scalar 2 * x", "scaled", scaled);
    show(d, "[2, 1, 3] + [2, 1]", "rank3", sum3);
    show(d, "map square x", "squared", sq);
}
static void strided_input(llm_demo *d)
{
    llm_tensor view = {.rank = 2, .shape = {3, 2}, .stride = {1, 3}, .size = 6};
    llm_tensor col = {.offset = 1, .rank = 1, .shape = {2}, .stride = {3}, .size = 2};
    llm_tensor *vsum = llm_own_tensor(d), *cmax = llm_own_tensor(d);
    int same;
    view.data = col.data = y->data;           /* borrowed: owns stays 0 */
    if (!(LLM_TRY(d, llm_tensor_reduce(vsum, LLM_SUM, &view, 1, 0, &d->err))
          && LLM_TRY(d, llm_tensor_reduce(cmax, LLM_MAX, &col, 0, 0, &d->err))))
        return;
    same = vsum->size == sum0->size
        && memcmp(vsum->data, sum0->data, sum0->size * sizeof sum0->data[0]) == 0;
    show(d, "transposed view strides=[1, 3] sum axis=1", "view_sum", vsum);
    printf("  same bits as sum axis=0: %s\n", llm_put(d, "view_same", llm_yes(same)));
    llm_demo_check(d, same, "the view's sum is the sum over axis 0, bit for bit");
    printf("column 1 view offset=1 stride=3 max=%s\n",
           llm_put(d, "column_max", llm_num(cmax->data[0], 0)));
}
static void empty_axes(llm_demo *d)
{
    const size_t es[2] = {2, 0}, zs[2] = {0, 3};
    llm_tensor *e = llm_own_tensor(d), *z = llm_own_tensor(d), *bad = llm_own_tensor(d);
    llm_tensor *esum = llm_own_tensor(d), *zb = llm_own_tensor(d);
    llm_tensor *zsum = llm_own_tensor(d);
    if (!(LLM_TRY(d, llm_tensor_zeros(e, 2, es, &d->err))
          && LLM_TRY(d, llm_tensor_zeros(z, 2, zs, &d->err))
          && LLM_TRY(d, llm_tensor_reduce(esum, LLM_SUM, e, 1, 0, &d->err))
          && LLM_TRY(d, llm_tensor_binary(zb, LLM_ADD, z, b, &d->err))
          && LLM_TRY(d, llm_tensor_reduce(zsum, LLM_SUM, z, 0, 0, &d->err))))
        return;
    show(d, "sum axis=1 of [2, 0]", "empty_sum", esum);
    llm_refuse(d, "mean over axis 1 of [2, 0]",
               llm_tensor_reduce(bad, LLM_MEAN, e, 1, 0, &d->err));
    llm_put(d, "empty_message", d->err.message);
    llm_refuse(d, "max over axis 1 of [2, 0]",
               llm_tensor_reduce(bad, LLM_MAX, e, 1, 1, &d->err));
    show(d, "[0, 3] + [3]", "zero_size", zb);
    printf("  elements=%s\n",
           llm_put(d, "zero_size_elements", llm_text("%zu", zb->size)));
    show(d, "sum axis=0 of [0, 3]", "zero_rows_sum", zsum);
    llm_demo_check(d, bad->data == NULL, "the refused reductions wrote no output");
}
static void refusals(llm_demo *d)
{
    static const double pv[2] = {10, 20};
    const size_t ps[1] = {2}, pcol[2] = {2, 1};
    llm_tensor *p = llm_own_tensor(d), *pc = llm_own_tensor(d);
    llm_tensor *fixed = llm_own_tensor(d), *mean_flat = llm_own_tensor(d);
    llm_tensor *centered = llm_own_tensor(d), *out = llm_own_tensor(d), no_buffer = {0};
    /* stride 0: one element, read 2^40 times */
    llm_tensor tall = {.rank = 2, .shape = {(size_t)1 << 40, 1}};
    llm_tensor wide = {.rank = 2, .shape = {1, (size_t)1 << 40}};
    if (!(LLM_TRY(d, llm_tensor_from(p, 1, ps, pv, 2, &d->err))
          && LLM_TRY(d, llm_tensor_from(pc, 2, pcol, pv, 2, &d->err))
          && LLM_TRY(d, llm_tensor_binary(fixed, LLM_ADD, x, pc, &d->err))
          && LLM_TRY(d, llm_tensor_reduce(mean_flat, LLM_MEAN, y, 1, 0, &d->err))
          && LLM_TRY(d, llm_tensor_binary(centered, LLM_SUB, y, mean1, &d->err))))
        return;
    llm_refuse(d, "[2, 3] + [2]", llm_tensor_binary(out, LLM_ADD, x, p, &d->err));
    printf("  %s\n", llm_put(d, "bad_message", d->err.message));
    show(d, "[2, 3] + [2, 1]", "fixed", fixed);
    llm_refuse(d, "[2, 3] - mean over axis 1 without keepdim",
               llm_tensor_binary(out, LLM_SUB, y, mean_flat, &d->err));
    show(d, "[2, 3] - mean over axis 1 with keepdim", "centered", centered);
    llm_refuse(d, "sum over axis 2 of [2, 3]",
               llm_tensor_reduce(out, LLM_SUM, y, 2, 0, &d->err));
    llm_refuse(d, "binary operation 7",
               llm_tensor_binary(out, (llm_binary_op)7, x, b, &d->err));
    llm_refuse(d, "reduction 7",
               llm_tensor_reduce(out, (llm_reduce_op)7, y, 0, 0, &d->err));
    llm_refuse(d, "map without a function", llm_tensor_map(out, x, NULL, &d->err));
    llm_refuse(d, "a tensor without a buffer",
               llm_tensor_binary(out, LLM_ADD, x, &no_buffer, &d->err));
    tall.data = wide.data = x->data;
    llm_refuse(d, "[2^40, 1] + [1, 2^40]",
               llm_tensor_binary(out, LLM_ADD, &tall, &wide, &d->err));
    printf("output untouched after refusals=%s\n", llm_put(d, "untouched", llm_yes(
           llm_demo_check(d, out->data == NULL, "the refused calls wrote no output"))));
}
static void signed_zeros_and_nan(llm_demo *d)
{
    static const char *const lines[5] = {"[-0, +0]", "[+0, -0]", "[-0, -0]",
                                         "[nan, 3]", "[3, nan]"};
    static const char *const max_key[3] = {"mixed_zeros_max", "minus_zeros_max",
                                           "nan_max"};     /* of lines 0, 2 and 4 */
    const uint64_t nan_bits = UINT64_C(0x7ff8000000000123);
    const size_t vs[2] = {5, 2};
    double v[10] = {-0.0, 0.0, 0.0, -0.0, -0.0, -0.0, 0.0, 3.0, 3.0, 0.0};
    llm_tensor *t = llm_own_tensor(d), *mx = llm_own_tensor(d), *sm = llm_own_tensor(d);
    size_t i;
    memcpy(&v[6], &nan_bits, sizeof v[6]);
    memcpy(&v[9], &nan_bits, sizeof v[9]);
    if (!(LLM_TRY(d, llm_tensor_from(t, 2, vs, v, 10, &d->err))
          && LLM_TRY(d, llm_tensor_reduce(mx, LLM_MAX, t, 1, 0, &d->err))
          && LLM_TRY(d, llm_tensor_reduce(sm, LLM_SUM, t, 1, 0, &d->err))))
        return;
    for (i = 0; i < 5; i++) {
        const char *m = describe(mx->data[i]), *s = describe(sm->data[i]);
        const char *naive = describe(v[2 * i + 1] > v[2 * i] ? v[2 * i + 1] : v[2 * i]);
        printf("line %s max=%s naive=%s sum=%s\n", lines[i], m, naive, s);
        llm_row(d, "signed", lines[i], m, naive, s, NULL);
        if (i % 2 == 0)
            llm_put(d, max_key[i / 2], m);
        if (i == 2)
            llm_put(d, "minus_zeros_sum", s);
    }
}

static void setup(llm_demo *d)
{
    x = llm_own_tensor(d);
    b = llm_own_tensor(d);
    y = llm_own_tensor(d);
    sum0 = llm_own_tensor(d);
    mean1 = llm_own_tensor(d);
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {predict_first, stretch_scalar_rank3_map,
                                            strided_input, empty_axes, refusals,
                                            signed_zeros_and_nan, NULL};
    return llm_demo_main(argc, argv, "ch10-broadcasting-reductions", setup, sections);
}
