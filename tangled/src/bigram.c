/* bigram.c -- the count bigram baseline. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/metrics.h"

llm_status llm_bigram_fit(llm_bigram *model, const llm_doc *docs, size_t ndocs,
                          size_t vocab, double alpha, llm_error *err)
{
    const char *stage = "bigram.fit";
    llm_bigram m;
    size_t d, t;
    if (model == NULL || (docs == NULL && ndocs > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    if (vocab == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a vocabulary needs at least one ID");
    if (!(alpha > 0.0) || !isfinite(alpha))
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "alpha must be a positive finite number, got %g", alpha);
    if (vocab > SIZE_MAX / vocab / sizeof(size_t))
        return llm_fail(err, LLM_ERR_OVERFLOW, stage, "%zu^2 counts are too many", vocab);
    for (d = 0; d < ndocs; d++) {
        if (docs[d].ids == NULL && docs[d].length > 0)
            return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                            "document %zu has %zu IDs and no pointer to them", d,
                            docs[d].length);
        for (t = 0; t < docs[d].length; t++)
            if (docs[d].ids[t] >= vocab)
                return llm_fail(err, LLM_ERR_TOKEN, stage,
                                "document %zu, position %zu: ID %zu is outside the "
                                "vocabulary of %zu", d, t, docs[d].ids[t], vocab);
    }
    memset(&m, 0, sizeof m);
    m.vocab = vocab;
    m.alpha = alpha;
    m.counts = llm_calloc(vocab * vocab, sizeof *m.counts);
    m.rows = llm_calloc(vocab, sizeof *m.rows);
    if (m.counts == NULL || m.rows == NULL) {
        free(m.counts);
        free(m.rows);
        return llm_fail(err, LLM_ERR_ALLOC, stage, "no memory for %zu^2 counts", vocab);
    }
    for (d = 0; d < ndocs; d++)
        for (t = 0; t + 1 < docs[d].length; t++) {
            m.counts[docs[d].ids[t] * vocab + docs[d].ids[t + 1]]++;
            m.rows[docs[d].ids[t]]++;
            m.transitions++;
        }
    *model = m;
    return LLM_OK;
}

void llm_bigram_free(llm_bigram *model)
{
    if (model == NULL)
        return;
    free(model->counts);
    free(model->rows);
    memset(model, 0, sizeof *model);
}
static llm_status pair_check(const llm_bigram *model, size_t prev, size_t next, const double *p,
                             const char *stage, llm_error *err)
{
    if (model == NULL || p == NULL || model->counts == NULL || model->rows == NULL
        || model->vocab == 0 || !(model->alpha > 0.0))
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "a null pointer, or a model llm_bigram_fit did not make");
    if (prev >= model->vocab || next >= model->vocab)
        return llm_fail(err, LLM_ERR_TOKEN, stage,
                        "the pair (%zu, %zu) is outside the vocabulary of %zu", prev, next,
                        model->vocab);
    return LLM_OK;
}

llm_status llm_bigram_mle(const llm_bigram *model, size_t prev, size_t next, double *p,
                          llm_error *err)
{
    const char *stage = "bigram.mle";
    llm_status st = pair_check(model, prev, next, p, stage, err);
    if (st != LLM_OK)
        return st;
    if (model->rows[prev] == 0)
        return llm_fail(err, LLM_ERR_EMPTY, stage,
                        "row %zu has no transitions: its count estimate is undefined", prev);
    *p = (double)model->counts[prev * model->vocab + next] / (double)model->rows[prev];
    return LLM_OK;
}

llm_status llm_bigram_prob(const llm_bigram *model, size_t prev, size_t next, double *p,
                           llm_error *err)
{
    const char *stage = "bigram.prob";
    llm_status st = pair_check(model, prev, next, p, stage, err);
    if (st != LLM_OK)
        return st;
    *p = ((double)model->counts[prev * model->vocab + next] + model->alpha)
         / ((double)model->rows[prev] + model->alpha * (double)model->vocab);
    return LLM_OK;
}
