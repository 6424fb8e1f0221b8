/* score.c -- mean negative log-likelihood and perplexity, token-weighted. */
#include <math.h>
#include <stdint.h>

#include "llm/metrics.h"

llm_status llm_score_add(llm_score *acc, const double *probs, size_t n, llm_error *err)
{
    double total;
    size_t i;
    if (acc == NULL || (probs == NULL && n > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, "score.add", "a null pointer");
    if (n > SIZE_MAX - acc->targets)
        return llm_fail(err, LLM_ERR_OVERFLOW, "score.add", "too many targets to count");
    for (i = 0; i < n; i++)
        if (!(probs[i] >= 0.0 && probs[i] <= 1.0))
            return llm_fail(err, LLM_ERR_ARGUMENT, "score.add",
                            "probability %g at position %zu is outside [0, 1]", probs[i], i);
    for (total = acc->total, i = 0; i < n; i++)
        total += -log(probs[i]);                    /* -log(0) is +infinity */
    acc->total = total;
    acc->targets += n;
    return LLM_OK;
}

llm_status llm_score_mean(const llm_score *acc, double *mean, double *perplexity,
                        llm_error *err)
{
    double m;
    if (acc == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "score.mean", "a null pointer");
    if (acc->targets == 0)
        return llm_fail(err, LLM_ERR_EMPTY, "score.mean", "no targets: the mean is undefined");
    m = acc->total / (double)acc->targets;
    if (mean != NULL)
        *mean = m;
    if (perplexity != NULL)
        *perplexity = exp(m);
    return LLM_OK;
}

llm_status llm_bigram_score(const llm_bigram *model, const llm_doc *docs, size_t ndocs,
                            llm_score *acc, llm_error *err)
{
    const char *stage = "bigram.score";
    llm_score sum;
    size_t d, t;
    double p;
    llm_status st;
    if (model == NULL || acc == NULL || (docs == NULL && ndocs > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    sum = *acc;
    for (d = 0; d < ndocs; d++) {
        if (docs[d].ids == NULL && docs[d].length > 0)
            return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                            "document %zu has %zu IDs and no pointer to them", d,
                            docs[d].length);
        for (t = 1; t < docs[d].length; t++) {
            if ((st = llm_bigram_prob(model, docs[d].ids[t - 1], docs[d].ids[t], &p, err))
                != LLM_OK)
                return llm_fail_from(err, err, stage, "document %zu, position %zu: %s", d, t,
                                     err->message);
            if ((st = llm_score_add(&sum, &p, 1, err)) != LLM_OK)
                return llm_pass(err, st, stage);
        }
    }
    *acc = sum;
    return LLM_OK;
}
