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
/* Which coordinates of a head of width d form rotated pair k: adjacent
   (2k, 2k+1), this book's convention in chapters 29-39, or rotate-half
   (k, k + d/2), the layout of GPT-NeoX and of Hugging Face's LLaMA
   (chapter 40). */
typedef enum llm_rope_pairing {
    LLM_ROPE_ADJACENT,
    LLM_ROPE_HALF
} llm_rope_pairing;

/* Rotary position embeddings: pair k of a row at position m turns by the
   angle m * inv_freq[k], inv_freq[k] = base^(-2k/head_dim). The tables hold
   row m for position m, m < capacity; exact zeros are stored as +0.0. */
typedef struct llm_rope {
    size_t head_dim;            /* d, even and positive */
    double base;                /* b, finite and positive */
    size_t capacity;            /* P: positions 0 .. P-1 */
    llm_rope_pairing pairing;
    double *inv_freq;           /* [d/2] */
    double *cos_table;          /* [P, d/2]: cos(m inv_freq[k]) */
    double *sin_table;          /* [P, d/2]: sin(m inv_freq[k]) */
} llm_rope;
/* Builds rope's frequencies and its [capacity, head_dim/2] tables.
   Errors: LLM_ERR_ARGUMENT (rope NULL; head_dim 0 or odd; base not finite
   and positive; capacity 0; an unknown pairing), LLM_ERR_OVERFLOW (the
   table size), LLM_ERR_ALLOC. Stage "rope.init". On failure *rope is not
   touched. */
llm_status llm_rope_init(llm_rope *rope, size_t head_dim, double base, size_t capacity,
                         llm_rope_pairing pairing, llm_error *err);

/* Frees rope's tables and empties it; safe on an emptied rope. */
void llm_rope_free(llm_rope *rope);

/* x [..., T, d] -> out [..., T, d] (new, contiguous): row t of every
   leading slice rotated for position positions[t]; x may be a view.
   Errors: LLM_ERR_ARGUMENT (a null rope, x or out; positions NULL with
   T > 0), LLM_ERR_RANK (x of rank below 2), LLM_ERR_SHAPE (the last axis
   of x is not head_dim, npos is not T), LLM_ERR_INDEX (a position >=
   capacity, named with the capacity, before any work), and those of
   llm_tensor_copy (LLM_ERR_ALLOC). Stage "rope.apply". On failure *out is
   not touched. */
llm_status llm_rope_apply(const llm_rope *rope, const llm_tensor *x, const size_t *positions,
                          size_t npos, llm_tensor *out, llm_error *err);
/* Records x [..., T, d] rotated at positions offset .. offset+T-1.
   Errors: LLM_ERR_ARGUMENT (tape, rope or out is NULL), LLM_ERR_TAPE (as
   llm_tape_matmul), LLM_ERR_RANK and LLM_ERR_SHAPE (as llm_rope_apply),
   LLM_ERR_INDEX (offset + T > capacity, found before any work),
   LLM_ERR_NONFINITE (a rotated value overflowed), LLM_ERR_OVERFLOW and
   LLM_ERR_ALLOC. Stage "tape.rope". On failure nothing changes. */
llm_status llm_tape_rope(llm_tape *tape, const llm_rope *rope, llm_var x, size_t offset,
                         llm_var *out, llm_error *err);

#endif
