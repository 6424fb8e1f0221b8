/* ch12-stable-softmax -- softmax, log-softmax, log-sum-exp, NLL without overflow. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/softmax.h"
#include "llm/tensor.h"

static unsigned long long bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return (unsigned long long)u;
}

static const char *naive(double x, int decimals)
{
    return llm_num(x, x == 0.0 || !isfinite(x) ? 0 : decimals);
}

/* The textbook formula on a row of two logits: printed with twelve decimals,
   the trace table "naive" with six. */
static void naive_row(llm_demo *d, size_t r, const double *l)
{
    const double e[2] = {exp(l[0]), exp(l[1])};
    const double p[2] = {e[0] / (e[0] + e[1]), e[1] / (e[0] + e[1])};
    const double lse = log(e[0] + e[1]);
    printf("  naive exp=[%s, %s]", naive(e[0], 12), naive(e[1], 12));
    printf(" p=%s", llm_put(d, llm_text("naive%zu", r),
                            llm_text("[%s, %s]", naive(p[0], 12), naive(p[1], 12))));
    printf(" lse=%s\n", naive(lse, 12));
    llm_row(d, "naive", llm_nums(l, 2, 0), naive(e[0], 6), naive(e[1], 6),
            llm_text("[%s, %s]", naive(p[0], 6), naive(p[1], 6)), naive(lse, 6), NULL);
}
static void limits_of_exp(llm_demo *d)
{
    printf("exp overflows above=%s",
           llm_put(d, "overflow_at", llm_num(log(DBL_MAX), 3)));
    printf(" smallest positive=e^%s\n",
           llm_put(d, "underflow_at", llm_num(log(DBL_TRUE_MIN), 3)));
}
static void three_rows(llm_demo *d)
{
    static const double logits[6] = {0, 1, 1000, 1001, -1001, -1000};
    static const size_t targets[3] = {1, 0, 1};
    const size_t shape[2] = {3, 2};
    llm_tensor *x = llm_own_tensor(d), *p = llm_own_tensor(d);
    llm_tensor *lp = llm_own_tensor(d), *lse = llm_own_tensor(d);
    double loss = 0.0, total = 0.0, unfused;
    size_t r;
    int same = 1;
    if (!(LLM_TRY(d, llm_tensor_from(x, 2, shape, logits, 6, &d->err))
          && LLM_TRY(d, llm_softmax(p, x, 1, &d->err))
          && LLM_TRY(d, llm_log_softmax(lp, x, 1, &d->err))
          && LLM_TRY(d, llm_logsumexp(lse, x, 1, &d->err))
          && LLM_TRY(d, llm_nll_mean(&loss, x, targets, 3, &d->err))))
        return;
    for (r = 0; r < 3; r++) {
        const double *l = logits + 2 * r, *q = p->data + 2 * r;
        const char *row = llm_nums(l, 2, 0);
        const char *max = llm_num(l[0] > l[1] ? l[0] : l[1], 0);
        const char *p0 = llm_num(q[0], 12), *p1 = llm_num(q[1], 12);
        const char *lse_r = llm_num(lse->data[r], 12);
        same = same && memcmp(q, p->data, 2 * sizeof q[0]) == 0;
        printf("row %zu logits=%s max=%s p=[%s, %s] sum=%s lse=%s\n", r, row, max, p0,
               p1, llm_num(q[0] + q[1], 12), lse_r);
        llm_row(d, "rows", row, max, p0, p1, lse_r, NULL);
        llm_put(d, llm_text("lse%zu", r), lse_r);
        naive_row(d, r, l);
    }
    printf("shift invariance=%s p_bits=[%016llx, %016llx]\n", llm_put(d, "shift",
           llm_demo_check(d, same, "the three rows' probabilities have the same bits")
           ? "bit-identical" : "different"), bits(p->data[0]), bits(p->data[1]));
    llm_put(d, "p0_bits", llm_text("%016llx", bits(p->data[0])));
    llm_put(d, "p0", llm_num(p->data[0], 12));
    llm_put(d, "p1", llm_num(p->data[1], 12));
    llm_put(d, "sum0", llm_num(p->data[0] + p->data[1], 12));
    printf("lse shape=%s", llm_sizes(lse->shape, lse->rank));
    printf(" values=%s\n", llm_put(d, "lse", llm_nums(lse->data, 3, 12)));
    llm_put(d, "lse_shape", llm_sizes(lse->shape, lse->rank));
    printf("log_softmax=%s\n", llm_nums(lp->data, 6, 12));
    for (r = 0; r < 3; r++) {
        const double *l = logits + 2 * r, m = l[0] > l[1] ? l[0] : l[1];
        const double row_loss = -lp->data[2 * r + targets[r]];
        total += row_loss;
        llm_row(d, "nll", llm_text("%zu", r), llm_text("%zu", targets[r]),
                llm_num(l[targets[r]] - m, 0), llm_num(lse->data[r] - m, 12),
                llm_num(row_loss, 12), NULL);
    }
    unfused = total / 3.0;
    printf("targets=[1, 0, 1] nll_mean=%s", llm_put(d, "nll", llm_num(loss, 12)));
    printf(" fused_vs_log_softmax=%s\n",
           llm_put(d, "fused", bits(unfused) == bits(loss) ? "exact" : "different"));
    llm_demo_check(d, bits(unfused) == bits(loss), "fused loss = unfused loss");
}
static void axis0_and_view(llm_demo *d)
{
    static double values[6] = {1, 2, 3, 4, 5, 6};   /* view reads them in place */
    const size_t shape[2] = {2, 3};
    llm_tensor *x = llm_own_tensor(d), *p = llm_own_tensor(d), *pt = llm_own_tensor(d);
    llm_tensor view = {.data = values, .rank = 2, .shape = {3, 2}, .stride = {1, 3},
                       .size = 6};
    double colsum[3] = {0};
    size_t i;
    int same = 1;
    if (!(LLM_TRY(d, llm_tensor_from(x, 2, shape, values, 6, &d->err))
          && LLM_TRY(d, llm_softmax(p, x, 0, &d->err))
          && LLM_TRY(d, llm_softmax(pt, &view, 1, &d->err))))
        return;
    for (i = 0; i < 6; i++) {                 /* p at [i / 3, i % 3], pt transposed */
        colsum[i % 3] += p->data[i];
        same = same && bits(p->data[i]) == bits(pt->data[i % 3 * 2 + i / 3]);
    }
    printf("axis 0 of [[1, 2, 3], [4, 5, 6]]: p=%s\n",
           llm_put(d, "axis0_p", llm_nums(p->data, 6, 12)));
    printf("  column sums=%s\n", llm_put(d, "axis0_sums", llm_nums(colsum, 3, 12)));
    printf("transposed view strides=%s axis 1: p=%s same_as_axis_0=%s\n",
           llm_sizes(view.stride, 2), llm_nums(pt->data, 6, 12),
           llm_put(d, "view_same", same ? "bit-identical" : "different"));
    llm_demo_check(d, same, "softmax through the view has axis 0's bits, transposed");
}
static void underflow(llm_demo *d)
{
    static const double values[2] = {0, -2000};
    const size_t shape[1] = {2};
    llm_tensor *x = llm_own_tensor(d), *p = llm_own_tensor(d);
    llm_tensor *lp = llm_own_tensor(d), *lse = llm_own_tensor(d);
    double logp[2];
    if (!(LLM_TRY(d, llm_tensor_from(x, 1, shape, values, 2, &d->err))
          && LLM_TRY(d, llm_softmax(p, x, 0, &d->err))
          && LLM_TRY(d, llm_log_softmax(lp, x, 0, &d->err))
          && LLM_TRY(d, llm_logsumexp(lse, x, 0, &d->err))))
        return;
    logp[0] = log(p->data[0]);
    logp[1] = log(p->data[1]);
    printf("logits=[0, -2000] p=%s", llm_put(d, "under_p", llm_nums(p->data, 2, 0)));
    printf(" log(p)=%s\n", llm_put(d, "under_logp", llm_nums(logp, 2, 0)));
    printf("  log_softmax=%s", llm_put(d, "under_lsm", llm_nums(lp->data, 2, 0)));
    printf(" lse rank=%zu value=%s\n", lse->rank, llm_num(lse->data[0], 0));
    llm_put(d, "under_lsm1", llm_num(lp->data[1], 0));
    llm_demo_check(d, isfinite(lp->data[1]) && !isfinite(logp[1]),
                   "log-softmax stays finite where log(p) does not");
}
static void refusals(llm_demo *d)
{
    static const double good[6] = {0, 1, 1000, 1001, -1001, -1000};
    const size_t shape[2] = {3, 2}, two[2] = {2, 2}, no_class[2] = {2, 0};
    const size_t no_rows[2] = {0, 2}, targets[3] = {1, 0, 1}, wrong[3] = {1, 2, 1};
    llm_tensor *x = llm_own_tensor(d), *s = llm_own_tensor(d), y, marker;
    llm_tensor *nan_x = llm_own_tensor(d), *inf_x = llm_own_tensor(d);
    llm_tensor *empty_c = llm_own_tensor(d), *empty_r = llm_own_tensor(d);
    double loss = -1.0, nan_v[4] = {0, 1, 2, NAN}, inf_v[4] = {INFINITY, 1, 2, 0};
    int untouched;
    memset(&y, 0x5a, sizeof y);
    memcpy(&marker, &y, sizeof marker);   /* bytes, padding included */
    if (!(LLM_TRY(d, llm_tensor_from(x, 2, shape, good, 6, &d->err))
          && LLM_TRY(d, llm_tensor_zeros(s, 0, NULL, &d->err))
          && LLM_TRY(d, llm_tensor_from(nan_x, 2, two, nan_v, 4, &d->err))
          && LLM_TRY(d, llm_tensor_from(inf_x, 2, two, inf_v, 4, &d->err))
          && LLM_TRY(d, llm_tensor_zeros(empty_c, 2, no_class, &d->err))
          && LLM_TRY(d, llm_tensor_zeros(empty_r, 2, no_rows, &d->err))))
        return;
    llm_refuse(d, "softmax along axis 2 of [3, 2]", llm_softmax(&y, x, 2, &d->err));
    llm_refuse(d, "log_softmax of a scalar", llm_log_softmax(&y, s, 0, &d->err));
    llm_refuse(d, "logsumexp along the empty axis of [2, 0]",
               llm_logsumexp(&y, empty_c, 1, &d->err));
    llm_refuse(d, "softmax of [[0, 1], [2, NaN]]", llm_softmax(&y, nan_x, 1, &d->err));
    printf("  %s\n", llm_put(d, "nan_message", d->err.message));
    llm_refuse(d, "log_softmax of [[inf, 1], [2, 0]]",
               llm_log_softmax(&y, inf_x, 1, &d->err));
    printf("  %s\n", d->err.message);
    llm_refuse(d, "softmax without an output tensor", llm_softmax(NULL, x, 1, &d->err));
    llm_refuse(d, "nll_mean with 2 targets for 3 rows",
               llm_nll_mean(&loss, x, targets, 2, &d->err));
    llm_refuse(d, "nll_mean with targets [1, 2, 1] for 2 classes",
               llm_nll_mean(&loss, x, wrong, 3, &d->err));
    printf("  %s\n", llm_put(d, "target_message", d->err.message));
    llm_refuse(d, "nll_mean over [0, 2]",
               llm_nll_mean(&loss, empty_r, targets, 0, &d->err));
    llm_refuse(d, "nll_mean over [2, 0]",
               llm_nll_mean(&loss, empty_c, targets, 0, &d->err));
    llm_refuse(d, "nll_mean of a scalar", llm_nll_mean(&loss, s, targets, 1, &d->err));
    llm_refuse(d, "nll_mean of [[0, 1], [2, NaN]]",
               llm_nll_mean(&loss, nan_x, targets, 2, &d->err));
    llm_refuse(d, "nll_mean without targets", llm_nll_mean(&loss, x, NULL, 3, &d->err));
    untouched = memcmp(&y, &marker, sizeof y) == 0 && loss == -1.0;
    printf("outputs untouched after refusals=%s\n",
           llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "the refused calls left the outputs untouched");
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {limits_of_exp, three_rows, axis0_and_view,
                                            underflow, refusals, NULL};
    return llm_demo_main(argc, argv, "ch12-stable-softmax", NULL, sections);
}
