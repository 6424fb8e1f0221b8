/* llm/attention.h -- attention */
#ifndef LLM_ATTENTION_H
#define LLM_ATTENTION_H

#include "llm/nn.h"

/* The query, key and value projections of one attention head: three
   bias-free linear layers of chapter 19, each [d_model, d_k], named
   <prefix>.query, <prefix>.key and <prefix>.value. */
typedef struct llm_qkv {
    size_t d_model;   /* D, the width of a position */
    size_t d_k;       /* the width of a query, a key and a value */
    llm_linear query; /* <prefix>.query.weight [D, d_k] */
    llm_linear key;   /* <prefix>.key.weight   [D, d_k] */
    llm_linear value; /* <prefix>.value.weight [D, d_k] */
} llm_qkv;

/* Appends <prefix>.query.weight, <prefix>.key.weight and
   <prefix>.value.weight, each [d_model, d_k], Xavier-uniform, drawn from
   rng in that order, decay 1, no biases.
   Errors: LLM_ERR_ARGUMENT (null qkv, ps, prefix or rng; a zero width),
   LLM_ERR_NAME (a name longer than 63 characters, breaking the rules, or
   taken), LLM_ERR_OVERFLOW, LLM_ERR_ALLOC. On failure *qkv, *ps and *rng
   are not touched. */
llm_status llm_qkv_init(llm_qkv *qkv, llm_params *ps, const char *prefix,
                        size_t d_model, size_t d_k, llm_rng *rng, llm_error *err);
/* x [..., d_model] -> q, k, v [..., d_k]: records q = x W_q, k = x W_k and
   v = x W_v on tape with chapter 19's llm_linear_forward, in that order.
   Everything that can be refused is checked before the first node is
   recorded. ps must be the list the projections were built in.
   Errors: LLM_ERR_ARGUMENT (null qkv, ps, tape, q, k or v; two outputs
   that are one variable; a weight position outside ps), LLM_ERR_SHAPE (a
   weight that is not [d_model, d_k]; the last axis of x is not d_model),
   LLM_ERR_RANK (x is a scalar), and those of the tape (LLM_ERR_TAPE for a
   stale x, LLM_ERR_ALLOC, LLM_ERR_NONFINITE). On failure *q, *k and *v
   are not touched. */
llm_status llm_qkv_forward(const llm_qkv *qkv, llm_params *ps, llm_tape *tape,
                           llm_var x, llm_var *q, llm_var *k, llm_var *v,
                           llm_error *err);

#endif
