/* llm/attention.h -- the attention module: Q/K/V projections, attention
   and its causal form, RoPE, multi-head attention. Built by chapters 26-30. */
#ifndef LLM_ATTENTION_H
#define LLM_ATTENTION_H

#include "llm/nn.h"

/* The query, key and value projections of one attention head: three
   bias-free linear layers of chapter 19, named <prefix>.query,
   <prefix>.key and <prefix>.value; [d_model, d_k] each, unless grouped
   (llm_qkv_init_grouped), when the key and the value are [d_model, d_kv]. */
typedef struct llm_qkv {
    size_t d_model;   /* D, the width of a position */
    size_t d_k;       /* the width of a query (and of a key and a value) */
    size_t d_kv;      /* the width of a key and a value: d_k unless grouped */
    llm_linear query; /* <prefix>.query.weight [D, d_k] */
    llm_linear key;   /* <prefix>.key.weight   [D, d_kv] */
    llm_linear value; /* <prefix>.value.weight [D, d_kv] */
} llm_qkv;

/* Appends <prefix>.query.weight, <prefix>.key.weight and
   <prefix>.value.weight, each [d_model, d_k], Xavier-uniform, drawn from
   rng in that order, decay 1, no biases.
   Errors: LLM_ERR_ARGUMENT (null qkv, ps, prefix or rng; a zero width),
   LLM_ERR_NAME (a name longer than 63 characters, breaking the rules, or
   taken), LLM_ERR_OVERFLOW, LLM_ERR_ALLOC. On failure *qkv and *rng
   are not touched and ps holds the parameters it held (llm_params_truncate). */
llm_status llm_qkv_init(llm_qkv *qkv, llm_params *ps, const char *prefix,
                        size_t d_model, size_t d_k, llm_rng *rng, llm_error *err);

/* As llm_qkv_init, with a query of width d_q and a key and a value of
   width d_kv: grouped-query attention (chapter 40) shares each key and
   value head among several query heads, so d_kv divides d_q there; this
   constructor only asks that both be positive. Errors: as llm_qkv_init.
   Stage "qkv.init_grouped". */
llm_status llm_qkv_init_grouped(llm_qkv *qkv, llm_params *ps, const char *prefix,
                                size_t d_model, size_t d_q, size_t d_kv, llm_rng *rng,
                                llm_error *err);
/* x [..., d_model] -> q [..., d_k], k and v [..., d_kv]: records q = x W_q,
   k = x W_k and v = x W_v on tape with chapter 19's llm_linear_forward, in
   that order. Everything that can be refused is checked before the first node is
   recorded. ps must be the list the projections were built in.
   Errors: LLM_ERR_ARGUMENT (null qkv, ps, tape, q, k or v; two outputs
   that are one variable), LLM_ERR_NAME (a weight position outside ps),
   LLM_ERR_SHAPE (a
   weight that is not [d_model, d_k] or [d_model, d_kv]; the last axis of
   x is not d_model),
   LLM_ERR_RANK (x is a scalar), and those of the tape (LLM_ERR_TAPE for a
   stale x, LLM_ERR_ALLOC, LLM_ERR_NONFINITE). A failure midway rewinds the
   projections already recorded (llm_tape_rewind): on failure the tape is
   as it was and *q, *k and *v are not touched. */
llm_status llm_qkv_forward(const llm_qkv *qkv, llm_params *ps, llm_tape *tape,
                           llm_var x, llm_var *q, llm_var *k, llm_var *v,
                           llm_error *err);
/* LLM_OK when ps holds the three projections' weights at their positions:
   <prefix>.query.weight [D, d_k], <prefix>.key.weight and
   <prefix>.value.weight [D, d_kv]. Errors: LLM_ERR_ARGUMENT (a null
   pointer), and those of llm_linear_check. Stage "qkv.check". */
llm_status llm_qkv_check(const llm_qkv *qkv, const llm_params *ps, const char *prefix,
                         llm_error *err);
/* Records softmax(a) along a's last axis, chapter 12's llm_softmax.
   Errors: LLM_ERR_ARGUMENT (tape or out is NULL), LLM_ERR_TAPE (as
   llm_tape_matmul), LLM_ERR_AXIS (a scalar), LLM_ERR_EMPTY (the last axis
   has extent 0), LLM_ERR_NONFINITE (a value that is not finite),
   LLM_ERR_OVERFLOW and LLM_ERR_ALLOC. Stage "tape.softmax". On failure
   nothing changes. */
llm_status llm_tape_softmax(llm_tape *tape, llm_var a, llm_var *out, llm_error *err);

/* Scaled dot-product attention of one head, no mask:
   weights = softmax(q k^T / sqrt(d)), out = weights v, for q [..., Tq, d],
   k [..., Tk, d] and v [..., Tk, dv] with the same leading axes; Tq may be
   0. weights may be NULL; otherwise it receives the [..., Tq, Tk]
   probabilities. Records five nodes: the constant 1/sqrt(d), the scores,
   the scaled scores, the weights, the output.
   Errors: LLM_ERR_ARGUMENT (tape or out is NULL), LLM_ERR_TAPE (an operand
   stale or not on the tape, a released recording), LLM_ERR_RANK (an
   operand of rank below 2, or ranks that differ), LLM_ERR_SHAPE (leading
   axes that differ; q and k of different widths; k and v of different
   lengths; d = 0), LLM_ERR_EMPTY (Tk = 0): stage "attention", found before
   anything is recorded. Then those of the tape operations under their own
   stages (LLM_ERR_NONFINITE when finite scores overflow, LLM_ERR_OVERFLOW,
   LLM_ERR_ALLOC); the nodes recorded before such a failure are rewound
   (llm_tape_rewind). On failure the tape is as it was and *weights and
   *out are not touched. */
llm_status llm_tape_attention(llm_tape *tape, llm_var q, llm_var k, llm_var v,
                              llm_var *weights, llm_var *out, llm_error *err);
/* Records the causal softmax of scores [..., Tq, Tk], Tk >= Tq: the Tq
   queries are the last Tq of Tk positions, so row i is normalised over
   its first i + Tk - Tq + 1 entries (keys j <= i + Tk - Tq) and the rest
   are exactly +0.0. The masked scores are never read, and no -inf is
   ever formed. The backward pass is the softmax's (chapter 27).
   Errors: LLM_ERR_ARGUMENT (tape or out is NULL), LLM_ERR_TAPE (as
   llm_tape_matmul), LLM_ERR_RANK (rank below 2), LLM_ERR_SHAPE (Tk < Tq),
   LLM_ERR_NONFINITE (a visible score that is not finite, named by its row
   and key), LLM_ERR_OVERFLOW and LLM_ERR_ALLOC. Stage
   "tape.causal_softmax". On failure nothing changes. */
llm_status llm_tape_causal_softmax(llm_tape *tape, llm_var scores, llm_var *out,
                                   llm_error *err);

/* llm_tape_attention with the causal softmax: q [..., Tq, d], k [..., Tk, d],
   v [..., Tk, dv], Tk >= Tq; the Tq queries are the last Tq of the Tk
   positions, and query i sees keys j <= i + Tk - Tq (Tq = Tk: j <= i).
   weights may be NULL. Every check is made before the first node is
   recorded, and a tape operation that fails midway rewinds the nodes
   recorded before it (llm_tape_rewind). Errors: those of
   llm_tape_attention, and LLM_ERR_SHAPE (Tk < Tq). Stage
   "causal_attention". On failure the tape is as it was and *weights and
   *out are not touched. */
llm_status llm_tape_causal_attention(llm_tape *tape, llm_var q, llm_var k, llm_var v,
                                     llm_var *weights, llm_var *out, llm_error *err);
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
llm_status llm_rope_apply(const llm_rope *rope, const llm_tensor *x,
                          const size_t *positions, size_t npos, llm_tensor *out,
                          llm_error *err);
/* Records x [..., T, d] rotated at positions offset .. offset+T-1.
   Errors: LLM_ERR_ARGUMENT (tape, rope or out is NULL), LLM_ERR_TAPE (as
   llm_tape_matmul), LLM_ERR_RANK and LLM_ERR_SHAPE (as llm_rope_apply),
   LLM_ERR_INDEX (offset + T > capacity, found before any work),
   LLM_ERR_NONFINITE (a rotated value overflowed), LLM_ERR_OVERFLOW and
   LLM_ERR_ALLOC. Stage "tape.rope". On failure nothing changes. */
llm_status llm_tape_rope(llm_tape *tape, const llm_rope *rope, llm_var x, size_t offset,
                         llm_var *out, llm_error *err);
/* Multi-head causal attention with rotary positions: full-width Q, K, V
   (chapter 26's projections with d_k = d_model), split into n_heads heads
   of width head_dim, RoPE on each head's queries and keys, causal attention
   per head, heads concatenated in order, then the output projection.
   4 d_model^2 parameters, whatever n_heads is. */
typedef struct llm_mha {
    size_t d_model;     /* D */
    size_t n_heads;     /* H, dividing D */
    size_t head_dim;    /* D / H, even */
    llm_qkv qkv;        /* <prefix>.query/.key/.value.weight [D, D] */
    llm_linear output;  /* <prefix>.output.weight [D, D], no bias */
} llm_mha;

/* The intermediate handles of one forward pass, for inspection: q, k, v
   split into heads [B, H, T, dh]; q and k after RoPE; the causal weights
   [B, H, T, T]; the head outputs [B, H, T, dh]; the concatenated rows
   [B, T, D] before the output projection. */
typedef struct llm_mha_trace {
    llm_var q, k, v, q_rot, k_rot, weights, heads, concat;
} llm_mha_trace;
/* Appends <prefix>.query.weight, .key.weight, .value.weight and
   .output.weight, each [D, D], Xavier-uniform, drawn from rng in that
   order, decay 1, no biases.
   Errors: LLM_ERR_ARGUMENT (a null pointer), LLM_ERR_CONFIG (d_model 0,
   n_heads 0, n_heads not dividing d_model, an odd head width), LLM_ERR_NAME
   (a prefix too long for "<prefix>.output", or a name taken), and those of
   llm_qkv_init and llm_linear_init. Stage "mha.init". On failure *mha
   and *rng are not touched and ps holds the parameters it held
   (llm_params_truncate). */
llm_status llm_mha_init(llm_mha *mha, llm_params *ps, const char *prefix,
                        size_t d_model, size_t n_heads, llm_rng *rng, llm_error *err);
/* x [B, T, D] -> *out [B, H, T, D/H]: head h takes the feature columns
   h*dh .. (h+1)*dh - 1; a reshape to [B, T, H, dh] and a transpose of the
   token and head axes, both on the tape.
   Errors: LLM_ERR_ARGUMENT (tape or out is NULL), LLM_ERR_TAPE (x stale or
   not on the tape), LLM_ERR_RANK (x is not of rank 3), LLM_ERR_CONFIG
   (n_heads 0 or not dividing D), and those of the tape operations. Stage
   "mha.split_heads". On failure *out is not touched and the tape is as it was
   (a transpose that fails after the reshape rewinds it). */
llm_status llm_mha_split_heads(llm_tape *tape, llm_var x, size_t n_heads, llm_var *out,
                               llm_error *err);

/* x [B, H, T, dh] -> *out [B, T, H*dh]: the inverse of the split, the heads
   side by side in order (Concat).
   Errors: LLM_ERR_ARGUMENT (tape or out is NULL), LLM_ERR_TAPE, LLM_ERR_RANK
   (x is not of rank 4), LLM_ERR_OVERFLOW (H*dh does not fit in size_t), and
   those of the tape operations. Stage "mha.merge_heads". On failure *out is not
   touched and the tape is as it was (a reshape that fails after the
   transpose rewinds it). */
llm_status llm_mha_merge_heads(llm_tape *tape, llm_var x, llm_var *out, llm_error *err);
/* x [B, T, D] at positions offset .. offset+T-1 -> *y [B, T, D]. trace
   may be NULL. rope must be built for head width head_dim.
   Errors, in the order checked: LLM_ERR_ARGUMENT (a null mha, ps, tape,
   rope or y), LLM_ERR_CONFIG (mha is not a layer llm_mha_init could have
   built; the rope's head width is not head_dim), LLM_ERR_TAPE (x stale or
   not on the tape), LLM_ERR_RANK (x is not of rank 3), LLM_ERR_SHAPE (x's
   last axis is not D), LLM_ERR_EMPTY (T = 0: a causal row needs a key),
   LLM_ERR_INDEX (offset + T beyond the rope's capacity), LLM_ERR_NAME
   and LLM_ERR_SHAPE (a weight missing from ps or not [D, D]). All of these
   are found before the first node is recorded. Then those of the tape
   operations (LLM_ERR_ALLOC; LLM_ERR_NONFINITE when finite values
   overflow), after which the nodes recorded so far are rewound
   (llm_tape_rewind). Stage "mha.forward". On failure the tape is as it
   was and *y and *trace are not touched. */
llm_status llm_mha_forward(const llm_mha *mha, llm_params *ps, llm_tape *tape,
                           const llm_rope *rope, llm_var x, size_t offset,
                           llm_mha_trace *trace, llm_var *y, llm_error *err);
/* LLM_OK when d_model splits into n_heads heads of one even width: both
   positive, n_heads dividing d_model, an even quotient. Else
   LLM_ERR_CONFIG under stage, which the caller names: llm_mha_init, and
   the block and decoder of chapters 31 and 32, check their heads here. */
llm_status llm_mha_check_heads(size_t d_model, size_t n_heads, const char *stage,
                               llm_error *err);
/* LLM_OK when ps holds the layer's four weights at their positions: the
   projections (llm_qkv_check) and <prefix>.output.weight [D, D].
   Errors: LLM_ERR_ARGUMENT (a null pointer), and those of llm_qkv_check
   and llm_linear_check. Stage "mha.check". */
llm_status llm_mha_check(const llm_mha *mha, const llm_params *ps, const char *prefix,
                         llm_error *err);

#endif
