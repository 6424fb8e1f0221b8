/* llm/data.h -- the data module: windows of documents, their shuffle, the
   batches cut from them and the loss summed over batches. Built by chapter
   21; chapters 2 and 5 will add the corpus and its documents. */
#ifndef LLM_DATA_H
#define LLM_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "llm/error.h"
#include "llm/rng.h"

/* One window: inputs are tokens start..start+T-1 of document doc, targets
   tokens start+1..start+T (chapter 5 decides where windows are). */
typedef struct llm_window {
    size_t doc;    /* position of the document in the list */
    size_t start;  /* position of the first input token */
} llm_window;

/* The token IDs of one wrapped document, [BOS, content..., EOS]. */
typedef struct llm_doc {
    const size_t *ids;
    size_t length;
} llm_doc;
/* Puts windows[0..n-1] in the order of a fresh SplitMix64 seeded with seed:
   for u = n-1 down to 1, swaps positions u and j = llm_rng_below(u + 1).
   The same seed and n give the same order; n <= 1 draws nothing.
   Errors: LLM_ERR_ARGUMENT (windows is NULL and n > 0). On failure the
   list is not touched. */
llm_status llm_shuffle_windows(llm_window *windows, size_t n, uint64_t seed,
                               llm_error *err);
/* The number of batches of batch_size windows that n windows make:
   ceil(n / batch_size), the last batch possibly shorter; 0 for n = 0.
   Errors: LLM_ERR_ARGUMENT (batches is NULL, batch_size is 0). On failure
   *batches is not touched. */
llm_status llm_batch_count(size_t n, size_t batch_size, size_t *batches,
                           llm_error *err);

/* Batch k of n windows cut into batches of batch_size: positions
   *first..*first + *count - 1; *count is batch_size except in a shorter
   last batch.
   Errors: LLM_ERR_ARGUMENT (first or count is NULL, batch_size is 0),
   LLM_ERR_INDEX (no batch k: k >= llm_batch_count). On failure neither
   *first nor *count is touched. */
llm_status llm_batch_span(size_t n, size_t batch_size, size_t k, size_t *first,
                          size_t *count, llm_error *err);
/* The token IDs of windows[first..first+count-1] as two row-major
   [count, T] arrays: row b of inputs holds tokens start..start+T-1 of the
   window's document, row b of targets tokens start+1..start+T. Each array
   has count * T slots; nothing after them is written.
   Errors: LLM_ERR_ARGUMENT (windows, inputs or targets is NULL; docs is
   NULL with ndocs > 0; a document with no IDs but a positive length;
   T is 0), LLM_ERR_EMPTY (count is 0), LLM_ERR_INDEX (the batch runs past
   the n windows; a window whose document does not exist or that does not
   fit in it, named by its position), LLM_ERR_OVERFLOW (count * T). On
   failure neither array is touched. */
llm_status llm_batch_tokens(const llm_doc *docs, size_t ndocs,
                            const llm_window *windows, size_t n, size_t first,
                            size_t count, size_t T, size_t *inputs,
                            size_t *targets, llm_error *err);
/* A token-weighted loss: the sum of per-token losses and the number of
   tokens they came from. Starts as {0.0, 0}. */
typedef struct llm_loss_sum {
    double sum;
    size_t tokens;
} llm_loss_sum;

/* Adds a part of tokens tokens whose per-token losses sum to loss_sum.
   Errors: LLM_ERR_ARGUMENT (acc is NULL), LLM_ERR_EMPTY (tokens is 0),
   LLM_ERR_NONFINITE (loss_sum is NaN or infinite, or the new sum would
   be), LLM_ERR_OVERFLOW (the token count would wrap). On failure *acc is
   not touched. */
llm_status llm_loss_add(llm_loss_sum *acc, double loss_sum, size_t tokens,
                        llm_error *err);

/* Adds part's sum and tokens to acc; a part with no tokens changes nothing.
   Errors: LLM_ERR_ARGUMENT (acc or part is NULL; part has no tokens but a
   nonzero sum), LLM_ERR_NONFINITE, LLM_ERR_OVERFLOW (as llm_loss_add).
   On failure *acc is not touched. */
llm_status llm_loss_merge(llm_loss_sum *acc, const llm_loss_sum *part,
                          llm_error *err);

/* *mean = acc->sum / acc->tokens.
   Errors: LLM_ERR_ARGUMENT (acc or mean is NULL), LLM_ERR_EMPTY (no
   tokens). On failure *mean is not touched. */
llm_status llm_loss_mean(const llm_loss_sum *acc, double *mean, llm_error *err);

#endif
