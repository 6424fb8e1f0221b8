/* llm/softmax.h -- the softmax module: softmax, log-softmax, log-sum-exp
   and the mean negative log-likelihood, each stable for any finite input.
   Built by chapter 12. */
#ifndef LLM_SOFTMAX_H
#define LLM_SOFTMAX_H

#include <stddef.h>

#include "llm/error.h"
#include "llm/tensor.h"

/* Along axis: p = exp(l - m) / sum exp(l - m), m the max of the slice. New
   owned tensors, same shape. Sums run in ascending index along the axis.
   Errors: LLM_ERR_ARGUMENT (null out or logits), LLM_ERR_AXIS (axis >= rank;
   rank 0 has no axis), LLM_ERR_EMPTY (the axis has extent 0),
   LLM_ERR_NONFINITE (a NaN or infinite logit, named by its index),
   LLM_ERR_ALLOC. On failure *out is not touched. */
llm_status llm_softmax(llm_tensor *out, const llm_tensor *logits, size_t axis,
                       llm_error *err);
llm_status llm_log_softmax(llm_tensor *out, const llm_tensor *logits,
                           size_t axis, llm_error *err);
/* log sum exp along axis; the output drops that axis. Same errors. */
llm_status llm_logsumexp(llm_tensor *out, const llm_tensor *logits,
                         size_t axis, llm_error *err);
/* Mean over rows of -log softmax(row)[target]: logits [..., V] (the last axis is
   the class axis), one target per row (ntargets = size / V), fused and stable:
   -(l_t - m - log sum exp(l - m)). Rows are summed in ascending order.
   Errors: LLM_ERR_ARGUMENT (null loss, logits or targets), LLM_ERR_AXIS (a
   scalar has no class axis), LLM_ERR_EMPTY (V = 0 or no rows), LLM_ERR_SHAPE
   (ntargets is not the number of rows), LLM_ERR_TARGET (a target >= V),
   LLM_ERR_NONFINITE. On failure *loss is not touched. */
llm_status llm_nll_mean(double *loss, const llm_tensor *logits,
                        const size_t *targets, size_t ntargets, llm_error *err);

#endif
