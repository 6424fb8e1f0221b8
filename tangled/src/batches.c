/* batches.c -- unbiased draws, seeded shuffles, batches, token-weighted means. */
#include <math.h>
#include <stdint.h>

#include "llm/data.h"
#include "llm/rng.h"

llm_status llm_rng_below(llm_rng *rng, uint64_t bound, uint64_t *out, llm_error *err)
{
    uint64_t threshold, draw;
    if (rng == NULL || out == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "rng.below",
                        "the generator and the output must not be NULL");
    if (bound == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "rng.below",
                        "the bound must be at least 1, got 0");
    threshold = (UINT64_C(0) - bound) % bound;    /* 2^64 mod bound */
    do
        draw = llm_rng_next_u64(rng);
    while (draw < threshold);
    *out = draw % bound;
    return LLM_OK;
}
_Static_assert(SIZE_MAX <= UINT64_MAX, "a window count fits a 64-bit bound");

llm_status llm_shuffle_windows(llm_window *windows, size_t n, uint64_t seed,
                               llm_error *err)
{
    llm_rng rng;
    size_t u;
    if (windows == NULL && n > 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "data.shuffle_windows",
                        "the list of %zu windows must not be NULL", n);
    llm_rng_seed(&rng, seed);
    for (u = n; u-- > 1;) {
        uint64_t j = 0;
        llm_window held;
        llm_rng_below(&rng, (uint64_t)u + 1, &j, NULL);  /* bound >= 2: cannot fail */
        held = windows[u];
        windows[u] = windows[j];
        windows[j] = held;
    }
    return LLM_OK;
}
llm_status llm_batch_count(size_t n, size_t batch_size, size_t *batches,
                           llm_error *err)
{
    if (batches == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "data.batch_count",
                        "the output must not be NULL");
    if (batch_size == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "data.batch_count",
                        "the batch size must be at least 1, got 0");
    *batches = n / batch_size + (n % batch_size != 0);
    return LLM_OK;
}

llm_status llm_batch_span(size_t n, size_t batch_size, size_t k, size_t *first,
                          size_t *count, llm_error *err)
{
    size_t batches, start;
    if (first == NULL || count == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "data.batch_span",
                        "the outputs must not be NULL");
    if (batch_size == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "data.batch_span",
                        "the batch size must be at least 1, got 0");
    batches = n / batch_size + (n % batch_size != 0);
    if (k >= batches)
        return llm_fail(err, LLM_ERR_INDEX, "data.batch_span",
                        "no batch %zu: %zu windows in batches of %zu make %zu",
                        k, n, batch_size, batches);
    start = k * batch_size;                       /* < n, so no overflow */
    *first = start;
    *count = n - start < batch_size ? n - start : batch_size;
    return LLM_OK;
}
/* Whether the window at position p of the list fits its document. */
static llm_status batch_window_check(const llm_doc *docs, size_t ndocs,
                                     const llm_window *w, size_t p, size_t T,
                                     llm_error *err)
{
    const llm_doc *d;
    if (w->doc >= ndocs)
        return llm_fail(err, LLM_ERR_INDEX, "data.batch_tokens",
                        "window %zu names document %zu; there are %zu documents",
                        p, w->doc, ndocs);
    d = &docs[w->doc];
    if (d->ids == NULL && d->length > 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "data.batch_tokens",
                        "document %zu has length %zu but no IDs", w->doc, d->length);
    if (w->start >= d->length || T > d->length - w->start - 1)
        return llm_fail(err, LLM_ERR_INDEX, "data.batch_tokens",
                        "window %zu (document %zu, start %zu) does not fit: "
                        "start + T + 1 must be at most the length %zu, T = %zu",
                        p, w->doc, w->start, d->length, T);
    return LLM_OK;
}
llm_status llm_batch_tokens(const llm_doc *docs, size_t ndocs,
                            const llm_window *windows, size_t n, size_t first,
                            size_t count, size_t T, size_t *inputs,
                            size_t *targets, llm_error *err)
{
    size_t b, t;
    llm_status st;
    if (windows == NULL || inputs == NULL || targets == NULL
        || (docs == NULL && ndocs > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, "data.batch_tokens",
                        "the windows, documents and output arrays must not be NULL");
    if (T == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "data.batch_tokens",
                        "the window length T must be at least 1, got 0");
    if (count == 0)
        return llm_fail(err, LLM_ERR_EMPTY, "data.batch_tokens",
                        "a batch holds at least one window, got 0");
    if (first > n || count > n - first)
        return llm_fail(err, LLM_ERR_INDEX, "data.batch_tokens",
                        "the batch of %zu windows from position %zu runs past the "
                        "%zu windows", count, first, n);
    if (count > SIZE_MAX / T)
        return llm_fail(err, LLM_ERR_OVERFLOW, "data.batch_tokens",
                        "%zu windows of T = %zu tokens overflow size_t", count, T);
    for (b = 0; b < count; b++) {
        st = batch_window_check(docs, ndocs, &windows[first + b], first + b, T, err);
        if (st != LLM_OK)
            return llm_pass(err, st, "data.batch_tokens");
    }
    for (b = 0; b < count; b++) {
        const llm_window *w = &windows[first + b];
        const size_t *z = docs[w->doc].ids + w->start;
        for (t = 0; t < T; t++) {
            inputs[b * T + t] = z[t];
            targets[b * T + t] = z[t + 1];
        }
    }
    return LLM_OK;
}
/* The checks and the update shared by add and merge, for stage. */
static llm_status loss_accumulate(llm_loss_sum *acc, double sum, size_t tokens,
                                  const char *stage, llm_error *err)
{
    double total;
    if (!isfinite(sum))
        return llm_fail(err, LLM_ERR_NONFINITE, stage,
                        "the loss sum of %zu tokens is %g", tokens, sum);
    if (tokens > SIZE_MAX - acc->tokens)
        return llm_fail(err, LLM_ERR_OVERFLOW, stage,
                        "%zu + %zu tokens overflow size_t", acc->tokens, tokens);
    total = acc->sum + sum;
    if (!isfinite(total))
        return llm_fail(err, LLM_ERR_NONFINITE, stage,
                        "the running sum would overflow: %g + %g", acc->sum, sum);
    acc->sum = total;
    acc->tokens += tokens;
    return LLM_OK;
}

llm_status llm_loss_add(llm_loss_sum *acc, double loss_sum, size_t tokens,
                        llm_error *err)
{
    if (acc == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "data.loss_add",
                        "the accumulator must not be NULL");
    if (tokens == 0)
        return llm_fail(err, LLM_ERR_EMPTY, "data.loss_add",
                        "a part adds at least one token, got 0 (loss sum %g)",
                        loss_sum);
    return llm_pass(err, loss_accumulate(acc, loss_sum, tokens, "data.loss_add", err),
                    "data.loss_add");
}

llm_status llm_loss_merge(llm_loss_sum *acc, const llm_loss_sum *part,
                          llm_error *err)
{
    if (acc == NULL || part == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "data.loss_merge",
                        "the accumulators must not be NULL");
    if (part->tokens == 0) {
        if (part->sum != 0.0)
            return llm_fail(err, LLM_ERR_ARGUMENT, "data.loss_merge",
                            "a part with no tokens must have sum 0, got %g",
                            part->sum);
        return LLM_OK;
    }
    return llm_pass(err,
                    loss_accumulate(acc, part->sum, part->tokens, "data.loss_merge",
                                    err),
                    "data.loss_merge");
}

llm_status llm_loss_mean(const llm_loss_sum *acc, double *mean, llm_error *err)
{
    if (acc == NULL || mean == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "data.loss_mean",
                        "the accumulator and the output must not be NULL");
    if (acc->tokens == 0)
        return llm_fail(err, LLM_ERR_EMPTY, "data.loss_mean",
                        "no tokens: a mean over zero tokens does not exist");
    *mean = acc->sum / (double)acc->tokens;
    return LLM_OK;
}
