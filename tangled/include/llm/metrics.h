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
/* A running score: total is the sum of -ln p over the targets taken in,
   targets their number. Start it at {0.0, 0}. */
typedef struct llm_score {
    double total;
    size_t targets;
} llm_score;

/* Takes in the n probabilities, in order: total += -ln p each (+infinity
   for p = 0: no clamping).
   Errors: LLM_ERR_ARGUMENT (acc is NULL, probs is NULL with n > 0; a
   probability outside [0, 1] or NaN: the message names its position),
   LLM_ERR_OVERFLOW (more targets than a size_t counts). On failure *acc
   is not touched. */
llm_status llm_score_add(llm_score *acc, const double *probs, size_t n, llm_error *err);

/* The mean total / targets in *mean and its exponential in *perplexity
   (either may be NULL).
   Errors: LLM_ERR_ARGUMENT (acc is NULL), LLM_ERR_EMPTY (no targets). On
   failure the outputs are not touched. */
llm_status llm_score_mean(const llm_score *acc, double *mean, double *perplexity,
                        llm_error *err);

/* Adds to *acc the smoothed probability of every target of the ndocs
   documents: each ID after the first, given the ID before it.
   Errors: those of llm_bigram_prob (an ID outside the vocabulary, with its
   document and position), LLM_ERR_ARGUMENT (a null pointer). On failure
   *acc is not touched. */
llm_status llm_bigram_score(const llm_bigram *model, const llm_doc *docs, size_t ndocs,
                            llm_score *acc, llm_error *err);

#endif
