/* softmax.c -- max-shifted softmax, log-softmax, log-sum-exp, fused mean NLL. */
#include <math.h>
#include <string.h>

#include "llm/softmax.h"
#include "llm/tensor.h"

/* The n values of one slice are x[0], x[step], ..., x[(n-1)*step]; n >= 1
   and every value is finite. */
static double slice_max(const double *x, size_t n, size_t step)
{
    double m = x[0];
    size_t i;
    for (i = 1; i < n; i++)
        if (x[i * step] > m)
            m = x[i * step];
    return m;
}

/* s = sum of exp(x_i - m) for i = 0, 1, ..., n-1, in this order; s >= 1
   because the term of the maximum is exp(0) = 1. */
static double slice_sum_exp(const double *x, size_t n, size_t step, double m)
{
    double s = 0.0;
    size_t i;
    for (i = 0; i < n; i++)
        s += exp(x[i * step] - m);
    return s;
}
/* The buffer position of idx, an index the caller knows to be valid. */
static size_t position(const llm_tensor *t, const size_t *idx)
{
    size_t o = t->offset, k;
    for (k = 0; k < t->rank; k++)
        o += idx[k] * t->stride[k];
    return o;
}

static llm_status check_axis(const char *stage, const llm_tensor *x, size_t axis,
                             llm_error *err)
{
    if (llm_tensor_check(x, "logits", stage, err) != LLM_OK)
        return LLM_ERR_ARGUMENT;
    if (x->rank == 0)
        return llm_fail(err, LLM_ERR_AXIS, stage,
                        "a scalar has no axis %zu to normalise along", axis);
    if (axis >= x->rank)
        return llm_fail(err, LLM_ERR_AXIS, stage,
                        "axis %zu is outside a tensor of rank %zu", axis, x->rank);
    if (x->shape[axis] == 0)
        return llm_fail(err, LLM_ERR_EMPTY, stage,
                        "axis %zu has extent 0: a distribution over no classes "
                        "is undefined", axis);
    return LLM_OK;
}

static llm_status check_finite(const char *stage, const llm_tensor *x, llm_error *err)
{
    size_t idx[LLM_MAX_RANK] = {0};
    char where[256];
    if (x->size == 0)
        return LLM_OK;
    do {
        double v = x->data[position(x, idx)];
        if (!isfinite(v))
            return llm_fail(err, LLM_ERR_NONFINITE, stage, "logit %s is %s",
                            llm_fmt_sizes(where, sizeof where, idx, x->rank),
                            v != v ? "NaN" : v > 0 ? "+inf" : "-inf");
    } while (llm_index_next(x->rank, x->shape, idx));
    return LLM_OK;
}
enum slice_result { SOFTMAX, LOG_SOFTMAX, LOGSUMEXP };

static void normalise(const llm_tensor *x, size_t axis, enum slice_result what,
                      llm_tensor *y)
{
    size_t outer[LLM_MAX_RANK], idx[LLM_MAX_RANK] = {0};
    size_t n = x->shape[axis], step = x->stride[axis], j = 0, i;
    if (x->size == 0)          /* another axis is empty: there are no slices */
        return;
    memcpy(outer, x->shape, x->rank * sizeof outer[0]);
    outer[axis] = 1;
    do {
        const double *xs = x->data + position(x, idx);
        double m = slice_max(xs, n, step);
        double s = slice_sum_exp(xs, n, step, m);
        if (what == LOGSUMEXP) {
            y->data[j++] = m + log(s);
        } else {
            double *ys = y->data + position(y, idx);
            double log_s = log(s);
            for (i = 0; i < n; i++) {
                double d = xs[i * step] - m;
                ys[i * y->stride[axis]] = what == SOFTMAX ? exp(d) / s : d - log_s;
            }
        }
    } while (llm_index_next(x->rank, outer, idx));
}
static llm_status normalise_new(const char *stage, enum slice_result what,
                                llm_tensor *out, const llm_tensor *logits,
                                size_t axis, llm_error *err)
{
    llm_tensor y;
    size_t shape[LLM_MAX_RANK], rank = 0, k;
    llm_status st;
    if (out == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "no output tensor");
    st = check_axis(stage, logits, axis, err);
    if (st != LLM_OK)
        return st;
    for (k = 0; k < logits->rank; k++)
        if (what != LOGSUMEXP || k != axis)
            shape[rank++] = logits->shape[k];
    st = llm_tensor_zeros(&y, rank, shape, NULL);
    if (st != LLM_OK)
        return llm_fail(err, st, stage, "cannot make an output of %zu elements",
                        what == LOGSUMEXP ? logits->size / logits->shape[axis]
                                          : logits->size);
    st = check_finite(stage, logits, err);
    if (st != LLM_OK) {
        llm_tensor_free(&y);
        return st;
    }
    normalise(logits, axis, what, &y);
    *out = y;
    return LLM_OK;
}

llm_status llm_softmax(llm_tensor *out, const llm_tensor *logits, size_t axis,
                       llm_error *err)
{
    return llm_pass(err,
                    normalise_new("softmax.softmax", SOFTMAX, out, logits, axis, err),
                    "softmax.softmax");
}

llm_status llm_log_softmax(llm_tensor *out, const llm_tensor *logits,
                           size_t axis, llm_error *err)
{
    return llm_pass(err,
                    normalise_new("softmax.log_softmax", LOG_SOFTMAX, out, logits,
                                  axis, err),
                    "softmax.log_softmax");
}

llm_status llm_logsumexp(llm_tensor *out, const llm_tensor *logits,
                         size_t axis, llm_error *err)
{
    return llm_pass(err,
                    normalise_new("softmax.logsumexp", LOGSUMEXP, out, logits, axis,
                                  err),
                    "softmax.logsumexp");
}
llm_status llm_nll_mean(double *loss, const llm_tensor *logits,
                        const size_t *targets, size_t ntargets, llm_error *err)
{
    size_t outer[LLM_MAX_RANK], idx[LLM_MAX_RANK] = {0};
    size_t last, v, rows, r, step;
    double total = 0.0;
    llm_status st;
    if (loss == NULL || logits == NULL || logits->data == NULL || targets == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "softmax.nll_mean",
                        "loss, logits and targets are required");
    if (llm_tensor_check(logits, "logits", "softmax.nll_mean", err) != LLM_OK)
        return LLM_ERR_ARGUMENT;
    if (logits->rank == 0)
        return llm_fail(err, LLM_ERR_AXIS, "softmax.nll_mean",
                        "a scalar has no class axis");
    last = logits->rank - 1;
    v = logits->shape[last];
    if (v == 0)
        return llm_fail(err, LLM_ERR_EMPTY, "softmax.nll_mean",
                        "the class axis %zu has extent 0", last);
    rows = logits->size / v;
    if (rows == 0)
        return llm_fail(err, LLM_ERR_EMPTY, "softmax.nll_mean",
                        "no rows: the mean over zero rows is undefined");
    if (ntargets != rows)
        return llm_fail(err, LLM_ERR_SHAPE, "softmax.nll_mean",
                        "%zu rows of %zu classes need %zu targets, %zu were given",
                        rows, v, rows, ntargets);
    for (r = 0; r < rows; r++)
        if (targets[r] >= v)
            return llm_fail(err, LLM_ERR_TARGET, "softmax.nll_mean",
                            "row %zu: target %zu is outside the %zu classes",
                            r, targets[r], v);
    st = check_finite("softmax.nll_mean", logits, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "softmax.nll_mean");
    memcpy(outer, logits->shape, logits->rank * sizeof outer[0]);
    outer[last] = 1;
    step = logits->stride[last];
    r = 0;
    do {
        const double *xs = logits->data + position(logits, idx);
        double m = slice_max(xs, v, step);
        double s = slice_sum_exp(xs, v, step, m);
        total += -((xs[targets[r] * step] - m) - log(s));
        r++;
    } while (llm_index_next(logits->rank, outer, idx));
    *loss = total / (double)rows;
    return LLM_OK;
}
