/* llm/model.h -- the model module: the neural n-gram, the decoder block
   and the decoder. Built by chapters 23, 31 and 32. */
#ifndef LLM_MODEL_H
#define LLM_MODEL_H

#include "llm/nn.h"
#include "llm/attention.h"

/* The shape of a neural n-gram: what llm_ngram_init checks and builds. */
typedef struct llm_ngram_config {
    size_t vocab;     /* V: token IDs 0 .. V-1 */
    size_t context;   /* C: the IDs before a target that it reads */
    size_t width;     /* D: features per ID */
    size_t d_ff;      /* F: the SwiGLU hidden width */
} llm_ngram_config;

/* logits = SwiGLU([E[z_1], ..., E[z_C]]) W_o for a context z_1 .. z_C:
   the C embedded rows side by side, one row of C D features. */
typedef struct llm_ngram {
    llm_ngram_config config;
    llm_embedding embedding;  /* token_embedding.weight [V, D] */
    llm_swiglu ffn;           /* ffn.{gate,up}.weight [C D, F], ffn.down.weight [F, C D] */
    llm_linear head;          /* output.weight [C D, V], no bias */
} llm_ngram;

/* Checks cfg and appends, in this order, token_embedding.weight [V, D],
   ffn.gate.weight and ffn.up.weight [C D, F], ffn.down.weight [F, C D] and
   output.weight [C D, V] to ps, Xavier-uniform and drawn from rng in that
   order: V D + 3 C D F + C D V numbers. ps must be empty.
   Errors: LLM_ERR_ARGUMENT (a null pointer; ps not empty; a size of 0),
   LLM_ERR_OVERFLOW (C D does not fit a size_t), and those of the layers
   (LLM_ERR_OVERFLOW, LLM_ERR_ALLOC). Stage "ngram.init". On failure *m
   and *rng are not touched and ps is empty again. */
llm_status llm_ngram_init(llm_ngram *m, llm_params *ps, const llm_ngram_config *cfg,
                          llm_rng *rng, llm_error *err);

/* ids [batch, C] (row-major) -> *logits [batch, V] on tape. hidden may be
   NULL; otherwise it receives 3 handles: the embedded rows [batch, C, D],
   the same side by side [batch, C D] and the SwiGLU output [batch, C D].
   Errors, checked before the first node is recorded: LLM_ERR_ARGUMENT (a
   null pointer; a size of 0 in the configuration), LLM_ERR_EMPTY (batch
   is 0), LLM_ERR_OVERFLOW (batch * C), LLM_ERR_TOKEN (an ID >= V, named
   by its row and position), LLM_ERR_NAME and LLM_ERR_SHAPE (ps does not
   hold the model's five tensors at their places, or the layers disagree
   with the configuration); then those of the layers. Stage
   "ngram.forward". A layer that fails after others were recorded rewinds
   the whole pass (llm_tape_rewind): on failure the tape is as it was and
   *logits and hidden are not touched. */
llm_status llm_ngram_forward(const llm_ngram *m, llm_params *ps, llm_tape *tape,
                             const size_t *ids, size_t batch, llm_var *hidden,
                             llm_var *logits, llm_error *err);

/* llm_ngram_forward, then the mean over the batch rows of
   -log softmax(logits)[target]: *loss, a scalar on the tape. logits may
   be NULL.
   Errors: the input errors of llm_ngram_forward, LLM_ERR_ARGUMENT
   (targets NULL), LLM_ERR_TARGET (a target >= V, named by its row), all
   found before any work, then those of the forward pass and the loss.
   Stage "ngram.loss". On failure the tape is as it was and *loss and
   *logits are not touched. */
llm_status llm_ngram_loss(const llm_ngram *m, llm_params *ps, llm_tape *tape,
                          const size_t *ids, const size_t *targets, size_t batch,
                          llm_var *logits, llm_var *loss, llm_error *err);
/* Continues prompt (n IDs, usually [BOS, content...]) by up to max_new
   IDs, one at a time: each is the ID of the largest logit (the smallest
   such ID on a tie) for the context of the last C IDs so far, BOS where
   they run out; it stops after an EOS. The new IDs go to
   out[0..*count-1]; the tape is as it was when the call returns.
   Errors: LLM_ERR_ARGUMENT (a null m, ps, tape or count; prompt NULL with
   n > 0; out NULL with max_new > 0; a size of 0 in the configuration),
   LLM_ERR_NAME and LLM_ERR_SHAPE (as llm_ngram_forward), LLM_ERR_LENGTH
   (max_new > cap), LLM_ERR_TOKEN (a prompt ID >= V, named by its
   position), LLM_ERR_OVERFLOW, LLM_ERR_ALLOC, and those of
   llm_ngram_forward. Stage "ngram.greedy". On failure out and *count are
   not touched. */
llm_status llm_ngram_greedy(const llm_ngram *m, llm_params *ps, llm_tape *tape,
                            const size_t *prompt, size_t n, size_t max_new,
                            size_t *out, size_t cap, size_t *count, llm_error *err);
/* One pre-norm decoder block, two residual branches around one stream:
   x' = x + MHA(RMSNorm_attn(x)),  y = x' + SwiGLU(RMSNorm_ffn(x')). */
typedef struct llm_block {
    llm_rmsnorm attention_norm;  /* <prefix>.attention_norm.gain [D] */
    llm_mha attention;           /* <prefix>.attention.{query,key,value,
                                    output}.weight */
    llm_rmsnorm ffn_norm;        /* <prefix>.ffn_norm.gain [D] */
    llm_swiglu ffn;              /* <prefix>.ffn.{gate,up,down}.weight */
} llm_block;
/* The intermediate handles of one block's forward pass, for inspection;
   each is [B, T, D], except inside attention_detail. */
typedef struct llm_block_trace {
    llm_var attention_in;            /* RMSNorm_attn(x) */
    llm_var attention_out;           /* MHA(RMSNorm_attn(x)) */
    llm_var mid;                     /* x' = x + attention_out */
    llm_var ffn_in;                  /* RMSNorm_ffn(x') */
    llm_var ffn_out;                 /* SwiGLU(RMSNorm_ffn(x')) */
    llm_mha_trace attention_detail;  /* chapter 30's heads and weights */
} llm_block_trace;
/* Appends, in this order, <prefix>.attention_norm.gain [D], the four
   attention weights <prefix>.attention.{query,key,value,output}.weight
   [D, D], <prefix>.ffn_norm.gain [D] and <prefix>.ffn.{gate,up}.weight
   [D, F], <prefix>.ffn.down.weight [F, D]: 9 tensors, 2 D + 4 D^2 + 3 D F
   numbers. The gains are 1 and draw nothing; the seven matrices are
   Xavier-uniform, drawn from rng in list order.
   Errors: LLM_ERR_ARGUMENT (a null blk, ps, prefix or rng), LLM_ERR_CONFIG
   (d_model 0; n_heads 0 or not dividing d_model; an odd head width; d_ff
   0; eps negative or not finite), LLM_ERR_NAME (a prefix too long for the
   names, or a name taken), and those of llm_rmsnorm_init, llm_mha_init and
   llm_swiglu_init (LLM_ERR_OVERFLOW, LLM_ERR_ALLOC). Stage "block.init" for
   the checks made here. On failure *blk and *rng are not touched
   and ps holds the parameters it held (llm_params_truncate). */
llm_status llm_block_init(llm_block *blk, llm_params *ps, const char *prefix,
                          size_t d_model, size_t n_heads, size_t d_ff, double eps,
                          llm_rng *rng, llm_error *err);

/* x [B, T, D] at positions offset .. offset+T-1 -> *y [B, T, D]; trace
   may be NULL. ps is the list blk was built in; rope turns heads of width
   D / n_heads.
   Errors, checked before the first node is recorded: LLM_ERR_ARGUMENT (a
   null blk, ps, tape, rope or y), LLM_ERR_CONFIG (the rope's head width is
   not the block's), LLM_ERR_TAPE (x stale or not on the tape),
   LLM_ERR_RANK (x is not of rank 3), LLM_ERR_SHAPE (x's last axis is not
   D), LLM_ERR_INDEX (offset + T beyond the rope's capacity); then those of
   the norms (LLM_ERR_NONFINITE for an all-zero row with eps 0), the
   attention, the feed-forward and llm_residual_add. Stage "block.forward"
   for the checks made here. A stage that fails after others were recorded
   rewinds them (llm_tape_rewind): on failure the tape is as it was and *y
   and *trace are not touched. */
llm_status llm_block_forward(const llm_block *blk, llm_params *ps, llm_tape *tape,
                             const llm_rope *rope, llm_var x, size_t offset,
                             llm_block_trace *trace, llm_var *y, llm_error *err);
/* LLM_OK when ps holds the block's nine tensors at their positions, under
   <prefix>.attention_norm, .attention, .ffn_norm and .ffn.
   Errors: LLM_ERR_ARGUMENT (a null pointer), and those of the layers'
   checks. Stage "block.check". */
llm_status llm_block_check(const llm_block *blk, const llm_params *ps,
                           const char *prefix, llm_error *err);
/* The shape of a decoder: what llm_decoder_init checks and builds. */
typedef struct llm_decoder_config {
    size_t vocab;       /* V: token IDs 0 .. V-1 */
    size_t d_model;     /* D */
    size_t n_heads;     /* H, dividing D, with D / H even */
    size_t d_ff;        /* F, the SwiGLU hidden width */
    size_t n_layers;    /* L, 0 allowed: embedding, final norm, tied head */
    size_t context;     /* P: positions 0 .. P-1 */
    double rope_base;   /* finite, > 0 */
    double eps;         /* the RMSNorm epsilon, finite, >= 0 */
    int untied_head;    /* 0: the head is the embedding table (tied); 1: a
                           matrix of its own, output.weight [D, V] */
} llm_decoder_config;

/* Embedding, n_layers pre-norm blocks, a final RMSNorm and the head. Tied:
   logits = RMSNorm(blocks(E[z])) E^T, no separate matrix. Untied:
   logits = RMSNorm(blocks(E[z])) U with U = output.weight. */
typedef struct llm_decoder {
    llm_decoder_config config;
    llm_embedding embedding;   /* token_embedding.weight [V, D] */
    llm_block *blocks;         /* blocks.<l>.*, l = 0 .. L-1 */
    llm_rmsnorm final_norm;    /* final_norm.gain [D] */
    llm_linear head;           /* untied only: output.weight [D, V], no bias */
    llm_rope rope;             /* head width D / H, capacity P, adjacent pairs */
} llm_decoder;
/* Checks cfg and appends token_embedding.weight, each block's nine
   tensors and final_norm.gain to ps (2 + 9 L tensors,
   V D + L (2 D + 4 D^2 + 3 D F) + D numbers), and for an untied head
   output.weight after them (one tensor and V D numbers more), drawing from
   rng in that order. ps must be empty.
   Errors: LLM_ERR_ARGUMENT (a null pointer; ps not empty), LLM_ERR_CONFIG
   (a zero size, heads that do not divide D, an odd head width, a base
   that is not finite and positive, an eps that is negative or not finite,
   an untied_head other than 0 or 1),
   and those of the layers (LLM_ERR_NAME, LLM_ERR_OVERFLOW, LLM_ERR_ALLOC).
   Stage "decoder.init". On failure *dec and *rng are not touched
   and ps holds the parameters it held (llm_params_truncate). */
llm_status llm_decoder_init(llm_decoder *dec, llm_params *ps,
                            const llm_decoder_config *cfg, llm_rng *rng,
                            llm_error *err);

/* Frees the decoder's blocks and rope tables; safe on a freed decoder. */
void llm_decoder_free(llm_decoder *dec);
/* ids [batch, T] (row-major) at positions offset .. offset+T-1 -> *logits
   [batch, T, V]. hidden may be NULL; otherwise it receives L + 2 handles:
   the embedded rows, the output of each block, the normalised rows.
   Every input is checked before the first node is recorded.
   Errors: LLM_ERR_ARGUMENT (a null pointer; ids NULL), LLM_ERR_EMPTY
   (batch or T zero), LLM_ERR_INDEX (offset + T beyond the context; a token
   ID >= V, named by its position), LLM_ERR_OVERFLOW (batch * T),
   LLM_ERR_NAME (ps holds another number of tensors than the
   configuration, or a tensor that is not the one the configuration has at
   that position), LLM_ERR_SHAPE (a tensor of the right name and another
   shape), LLM_ERR_ALLOC, and those of the layers. Stage
   "decoder.forward". A layer that fails after others were recorded
   rewinds the whole pass (llm_tape_rewind): on failure the tape is as it
   was and *logits and hidden are not touched. */
llm_status llm_decoder_forward(const llm_decoder *dec, llm_params *ps, llm_tape *tape,
                               const size_t *ids, size_t batch, size_t T, size_t offset,
                               llm_var *hidden, llm_var *logits, llm_error *err);

/* llm_decoder_forward at offset 0, then the mean over all batch * T
   positions of -log softmax(logits)[target]: *loss, a scalar on the tape.
   logits may be NULL.
   Errors: the input errors of llm_decoder_forward, LLM_ERR_ARGUMENT
   (targets NULL), LLM_ERR_TARGET (a target >= V, named by its position),
   all found before any work, then those of the forward pass and the loss.
   Stage "decoder.loss". A loss that fails after the forward pass rewinds
   it: on failure the tape is as it was and *loss and *logits are not
   touched. */
llm_status llm_decoder_loss(const llm_decoder *dec, llm_params *ps, llm_tape *tape,
                            const size_t *ids, const size_t *targets, size_t batch,
                            size_t T, llm_var *logits, llm_var *loss, llm_error *err);

#endif
