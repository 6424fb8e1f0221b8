/* llm/metrics.h -- the metrics module: the count bigram baseline
   (chapter 6) and the scores of a language model (chapter 7). */
#ifndef LLM_METRICS_H
#define LLM_METRICS_H

#include <stddef.h>

#include "llm/data.h"
#include "llm/error.h"

/* A count bigram model over vocab IDs: counts[i * vocab + j] transitions
   from i to j, rows[i] their sum; alpha the smoothing. */
typedef struct llm_bigram {
    size_t vocab;
    double alpha;
    size_t *counts;
    size_t *rows;
    size_t transitions;     /* all of them */
} llm_bigram;

/* Counts the transitions within each of the ndocs documents (never across
   two) into *model.
   Errors: LLM_ERR_ARGUMENT (a null pointer; vocab 0; alpha not a positive
   finite number), LLM_ERR_OVERFLOW (vocab^2 counts too many),
   LLM_ERR_TOKEN (an ID at or above vocab: the message names its document
   and position), LLM_ERR_ALLOC. On failure *model is not touched. */
llm_status llm_bigram_fit(llm_bigram *model, const llm_doc *docs, size_t ndocs,
                          size_t vocab, double alpha, llm_error *err);

/* Frees what model holds and leaves it empty. Safe on NULL. */
void llm_bigram_free(llm_bigram *model);
/* The count estimate C[prev][next] / N[prev] in *p.
   Errors: LLM_ERR_ARGUMENT (a null pointer, a model llm_bigram_fit did not
   make), LLM_ERR_TOKEN (an ID at or above the vocabulary), LLM_ERR_EMPTY
   (row prev has no transitions: the estimate is undefined). On failure *p
   is not touched. */
llm_status llm_bigram_mle(const llm_bigram *model, size_t prev, size_t next, double *p,
                          llm_error *err);

/* The smoothed estimate (C[prev][next] + alpha) / (N[prev] + alpha V) in
   *p. Errors: as llm_bigram_mle, without LLM_ERR_EMPTY. */
llm_status llm_bigram_prob(const llm_bigram *model, size_t prev, size_t next, double *p,
                           llm_error *err);

#endif
