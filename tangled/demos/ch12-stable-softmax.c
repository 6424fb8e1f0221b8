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

static char *naive(char *buf, size_t size, double x, int decimals)
{
    return llm_fmt(buf, size, x, x == 0.0 || !isfinite(x) ? 0 : decimals);
}

/* The textbook formula on a row of two logits: printed with twelve decimals,
   the trace table "naive" with six. */
static void naive_row(llm_trace *tr, size_t r, const double *l)
{
    double e[2], p[2], lse;
    char c[5][80], a[32], b[32], key[16];
    const char *cells[5] = {c[0], c[1], c[2], c[3], c[4]};
    e[0] = exp(l[0]);
    e[1] = exp(l[1]);
    p[0] = e[0] / (e[0] + e[1]);
    p[1] = e[1] / (e[0] + e[1]);
    lse = log(e[0] + e[1]);
    printf("  naive exp=[%s, %s]", naive(a, sizeof a, e[0], 12),
           naive(b, sizeof b, e[1], 12));
    printf(" p=[%s, %s]", naive(a, sizeof a, p[0], 12), naive(b, sizeof b, p[1], 12));
    snprintf(c[0], sizeof c[0], "[%s, %s]", a, b);
    snprintf(key, sizeof key, "naive%zu", r);
    llm_trace_value(tr, key, c[0]);
    printf(" lse=%s\n", naive(a, sizeof a, lse, 12));
    llm_fmt_list(c[0], sizeof c[0], l, 2, 0);
    naive(c[1], sizeof c[1], e[0], 6);
    naive(c[2], sizeof c[2], e[1], 6);
    snprintf(c[3], sizeof c[3], "[%s, %s]", naive(a, sizeof a, p[0], 6),
             naive(b, sizeof b, p[1], 6));
    naive(c[4], sizeof c[4], lse, 6);
    llm_trace_row(tr, "naive", 5, cells);
}

int main(int argc, char **argv)
{
    llm_trace tr;
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch12-stable-softmax", &tr);
    if (status != 0)
        return status;
    printf("chapter=12 stable-softmax\n");
    {
        char a[64], b[64];
        llm_fmt(a, sizeof a, log(DBL_MAX), 3);
        llm_fmt(b, sizeof b, log(DBL_TRUE_MIN), 3);
        printf("exp overflows above=%s smallest positive=e^%s\n", a, b);
        llm_trace_value(&tr, "overflow_at", a);
        llm_trace_value(&tr, "underflow_at", b);
    }
    {
        static const double logits[6] = {0, 1, 1000, 1001, -1001, -1000};
        static const size_t targets[3] = {1, 0, 1};
        const size_t shape[2] = {3, 2};
        llm_tensor x, p, lp, lse;
        llm_error err;
        double loss = 0.0;
        size_t r;
        int same = 1;
        char buf[256], key[16], c[5][64];

        memset(&p, 0, sizeof p);
        memset(&lp, 0, sizeof lp);
        memset(&lse, 0, sizeof lse);
        ok = llm_demo_ok("ch12", llm_tensor_from(&x, 2, shape, logits, 6, &err), &err)
             && llm_demo_ok("ch12", llm_softmax(&p, &x, 1, &err), &err)
             && llm_demo_ok("ch12", llm_log_softmax(&lp, &x, 1, &err), &err)
             && llm_demo_ok("ch12", llm_logsumexp(&lse, &x, 1, &err), &err)
             && llm_demo_ok("ch12", llm_nll_mean(&loss, &x, targets, 3, &err), &err);
        if (ok) {
            for (r = 0; r < 3; r++) {
                const double *l = logits + 2 * r, *q = p.data + 2 * r;
                const char *cells[5] = {c[0], c[1], c[2], c[3], c[4]};
                same = same && memcmp(q, p.data, 2 * sizeof q[0]) == 0;
                llm_fmt_list(c[0], sizeof c[0], l, 2, 0);
                llm_fmt(c[1], sizeof c[1], l[0] > l[1] ? l[0] : l[1], 0);
                llm_fmt(c[2], sizeof c[2], q[0], 12);
                llm_fmt(c[3], sizeof c[3], q[1], 12);
                llm_fmt(c[4], sizeof c[4], lse.data[r], 12);
                printf("row %zu logits=%s max=%s p=[%s, %s] sum=%s lse=%s\n", r, c[0], c[1],
                       c[2], c[3], llm_fmt(buf, sizeof buf, q[0] + q[1], 12), c[4]);
                llm_trace_row(&tr, "rows", 5, cells);
                snprintf(key, sizeof key, "lse%zu", r);
                llm_trace_value(&tr, key, c[4]);
                naive_row(&tr, r, l);
            }
            printf("shift invariance=%s p_bits=[%016llx, %016llx]\n",
                   same ? "bit-identical" : "different", bits(p.data[0]), bits(p.data[1]));
            ok = ok && same;
            llm_trace_value(&tr, "shift", same ? "bit-identical" : "different");
            snprintf(buf, sizeof buf, "%016llx", bits(p.data[0]));
            llm_trace_value(&tr, "p0_bits", buf);
            llm_trace_value(&tr, "p0", llm_fmt(buf, sizeof buf, p.data[0], 12));
            llm_trace_value(&tr, "p1", llm_fmt(buf, sizeof buf, p.data[1], 12));
            llm_trace_value(&tr, "sum0", llm_fmt(buf, sizeof buf, p.data[0] + p.data[1], 12));
            {
                double total = 0.0, unfused;
                const char *verdict;
                printf("lse shape=%s values=%s\n",
                       llm_fmt_sizes(c[0], sizeof c[0], lse.shape, lse.rank),
                       llm_fmt_list(buf, sizeof buf, lse.data, 3, 12));
                llm_trace_value(&tr, "lse", buf);
                llm_trace_value(&tr, "lse_shape", c[0]);
                printf("log_softmax=%s\n", llm_fmt_list(buf, sizeof buf, lp.data, 6, 12));
                for (r = 0; r < 3; r++) {
                    const double *l = logits + 2 * r;
                    double m = l[0] > l[1] ? l[0] : l[1];
                    double row_loss = -lp.data[2 * r + targets[r]];
                    const char *cells[5] = {c[0], c[1], c[2], c[3], c[4]};
                    total += row_loss;
                    snprintf(c[0], sizeof c[0], "%zu", r);
                    snprintf(c[1], sizeof c[1], "%zu", targets[r]);
                    llm_fmt(c[2], sizeof c[2], l[targets[r]] - m, 0);
                    llm_fmt(c[3], sizeof c[3], lse.data[r] - m, 12);
                    llm_fmt(c[4], sizeof c[4], row_loss, 12);
                    llm_trace_row(&tr, "nll", 5, cells);
                }
                unfused = total / 3.0;
                verdict = bits(unfused) == bits(loss) ? "exact" : "different";
                printf("targets=[1, 0, 1] nll_mean=%s fused_vs_log_softmax=%s\n",
                       llm_fmt(buf, sizeof buf, loss, 12), verdict);
                ok = ok && bits(unfused) == bits(loss);
                llm_trace_value(&tr, "nll", buf);
                llm_trace_value(&tr, "fused", verdict);
            }
        }
        llm_tensor_free(&x);
        llm_tensor_free(&p);
        llm_tensor_free(&lp);
        llm_tensor_free(&lse);
        if (!ok)
            return llm_demo_finish(&tr, 0);
    }
    {
        static const double values[6] = {1, 2, 3, 4, 5, 6};
        const size_t shape[2] = {2, 3};
        llm_tensor x, view, p, pt;
        llm_error err;
        size_t i, j;
        int same = 1;
        double colsum[3];
        char buf[256];

        memset(&p, 0, sizeof p);
        memset(&pt, 0, sizeof pt);
        ok = llm_demo_ok("ch12", llm_tensor_from(&x, 2, shape, values, 6, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        view = x;                                /* shares x's buffer */
        view.owns = 0;
        view.shape[0] = 3; view.shape[1] = 2;
        view.stride[0] = 1; view.stride[1] = 3;
        ok = llm_demo_ok("ch12", llm_softmax(&p, &x, 0, &err), &err)
             && llm_demo_ok("ch12", llm_softmax(&pt, &view, 1, &err), &err);
        if (ok) {
            for (j = 0; j < 3; j++)
                colsum[j] = p.data[j] + p.data[3 + j];
            for (i = 0; i < 2; i++)
                for (j = 0; j < 3; j++)
                    same = same && bits(p.data[i * 3 + j]) == bits(pt.data[j * 2 + i]);
            printf("axis 0 of [[1, 2, 3], [4, 5, 6]]: p=%s\n",
                   llm_fmt_list(buf, sizeof buf, p.data, 6, 12));
            llm_trace_value(&tr, "axis0_p", llm_fmt_list(buf, sizeof buf, p.data, 2 * 3, 12));
            printf("  column sums=%s\n", llm_fmt_list(buf, sizeof buf, colsum, 3, 12));
            llm_trace_value(&tr, "axis0_sums", buf);
            printf("transposed view strides=%s axis 1: p=%s same_as_axis_0=%s\n",
                   llm_fmt_sizes(buf, sizeof buf, view.stride, 2),
                   llm_fmt_list(buf + 64, sizeof buf - 64, pt.data, 6, 12),
                   same ? "bit-identical" : "different");
            llm_trace_value(&tr, "view_same", same ? "bit-identical" : "different");
            ok = ok && same;
        }
        llm_tensor_free(&x);
        llm_tensor_free(&p);
        llm_tensor_free(&pt);
        if (!ok)
            return llm_demo_finish(&tr, 0);
    }
    {
        static const double values[2] = {0, -2000};
        const size_t shape[1] = {2};
        llm_tensor x, p, lp, lse;
        llm_error err;
        double logp[2];
        char a[64], b[64], d[64];

        memset(&p, 0, sizeof p);
        memset(&lp, 0, sizeof lp);
        memset(&lse, 0, sizeof lse);
        ok = llm_demo_ok("ch12", llm_tensor_from(&x, 1, shape, values, 2, &err), &err)
             && llm_demo_ok("ch12", llm_softmax(&p, &x, 0, &err), &err)
             && llm_demo_ok("ch12", llm_log_softmax(&lp, &x, 0, &err), &err)
             && llm_demo_ok("ch12", llm_logsumexp(&lse, &x, 0, &err), &err);
        if (ok) {
            logp[0] = log(p.data[0]);
            logp[1] = log(p.data[1]);
            printf("logits=[0, -2000] p=%s log(p)=%s\n", llm_fmt_list(a, sizeof a, p.data, 2, 0),
                   llm_fmt_list(b, sizeof b, logp, 2, 0));
            printf("  log_softmax=%s lse rank=%zu value=%s\n",
                   llm_fmt_list(d, sizeof d, lp.data, 2, 0), lse.rank,
                   llm_fmt(a, sizeof a, lse.data[0], 0));
            llm_trace_value(&tr, "under_p", llm_fmt_list(a, sizeof a, p.data, 2, 0));
            llm_trace_value(&tr, "under_logp", b);
            llm_trace_value(&tr, "under_lsm", d);
            llm_trace_value(&tr, "under_lsm1", llm_fmt(a, sizeof a, lp.data[1], 0));
            ok = ok && isfinite(lp.data[1]) && !isfinite(logp[1]);
        }
        llm_tensor_free(&x);
        llm_tensor_free(&p);
        llm_tensor_free(&lp);
        llm_tensor_free(&lse);
        if (!ok)
            return llm_demo_finish(&tr, 0);
    }
    {
        static const double good[6] = {0, 1, 1000, 1001, -1001, -1000};
        static const double bad[4] = {0, 1, 2, 0};
        const size_t shape[2] = {3, 2}, two[2] = {2, 2}, no_class[2] = {2, 0};
        const size_t no_rows[2] = {0, 2};
        const size_t targets[3] = {1, 0, 1}, wrong[3] = {1, 2, 1};
        llm_tensor x, y, marker, s, nan_x, inf_x, empty_c, empty_r;
        llm_error err;
        double loss = -1.0, nan_v[4], inf_v[4];
        int untouched;

        memcpy(nan_v, bad, sizeof bad);
        memcpy(inf_v, bad, sizeof bad);
        nan_v[3] = NAN;
        inf_v[0] = INFINITY;
        memset(&y, 0x5a, sizeof y);
        memcpy(&marker, &y, sizeof marker);   /* bytes, padding included */
        ok = llm_demo_ok("ch12", llm_tensor_from(&x, 2, shape, good, 6, &err), &err)
             && llm_demo_ok("ch12", llm_tensor_zeros(&s, 0, NULL, &err), &err)
             && llm_demo_ok("ch12", llm_tensor_from(&nan_x, 2, two, nan_v, 4, &err), &err)
             && llm_demo_ok("ch12", llm_tensor_from(&inf_x, 2, two, inf_v, 4, &err), &err)
             && llm_demo_ok("ch12", llm_tensor_zeros(&empty_c, 2, no_class, &err), &err)
             && llm_demo_ok("ch12", llm_tensor_zeros(&empty_r, 2, no_rows, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        llm_demo_refusal(&tr, "softmax along axis 2 of [3, 2]",
                         llm_softmax(&y, &x, 2, &err), &err);
        llm_demo_refusal(&tr, "log_softmax of a scalar", llm_log_softmax(&y, &s, 0, &err), &err);
        llm_demo_refusal(&tr, "logsumexp along the empty axis of [2, 0]",
                         llm_logsumexp(&y, &empty_c, 1, &err), &err);
        llm_demo_refusal(&tr, "softmax of [[0, 1], [2, NaN]]",
                         llm_softmax(&y, &nan_x, 1, &err), &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "nan_message", err.message);
        llm_demo_refusal(&tr, "log_softmax of [[inf, 1], [2, 0]]",
                         llm_log_softmax(&y, &inf_x, 1, &err), &err);
        printf("  %s\n", err.message);
        llm_demo_refusal(&tr, "softmax without an output tensor",
                         llm_softmax(NULL, &x, 1, &err), &err);
        llm_demo_refusal(&tr, "nll_mean with 2 targets for 3 rows",
                         llm_nll_mean(&loss, &x, targets, 2, &err), &err);
        llm_demo_refusal(&tr, "nll_mean with targets [1, 2, 1] for 2 classes",
                         llm_nll_mean(&loss, &x, wrong, 3, &err), &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "target_message", err.message);
        llm_demo_refusal(&tr, "nll_mean over [0, 2]",
                         llm_nll_mean(&loss, &empty_r, targets, 0, &err), &err);
        llm_demo_refusal(&tr, "nll_mean over [2, 0]",
                         llm_nll_mean(&loss, &empty_c, targets, 0, &err), &err);
        llm_demo_refusal(&tr, "nll_mean of a scalar",
                         llm_nll_mean(&loss, &s, targets, 1, &err), &err);
        llm_demo_refusal(&tr, "nll_mean of [[0, 1], [2, NaN]]",
                         llm_nll_mean(&loss, &nan_x, targets, 2, &err), &err);
        llm_demo_refusal(&tr, "nll_mean without targets",
                         llm_nll_mean(&loss, &x, NULL, 3, &err), &err);
        untouched = memcmp(&y, &marker, sizeof y) == 0 && loss == -1.0;
        printf("outputs untouched after refusals=%s\n", untouched ? "yes" : "no");
        llm_trace_value(&tr, "untouched", untouched ? "yes" : "no");
        ok = ok && untouched;
        llm_tensor_free(&x);
        llm_tensor_free(&s);
        llm_tensor_free(&nan_x);
        llm_tensor_free(&inf_x);
        llm_tensor_free(&empty_c);
        llm_tensor_free(&empty_r);
    }
    return llm_demo_finish(&tr, ok);
}
