/* llm/nn.h -- the layers module: embedding, linear, SwiGLU, the residual
   connection and RMSNorm, each recording its forward pass on the tape.
   Built by chapters 18-20, 24 and 25. */
#ifndef LLM_NN_H
#define LLM_NN_H

#include <stddef.h>

#include "llm/error.h"
#include "llm/params.h"
#include "llm/rng.h"
#include "llm/tape.h"
#include "llm/tensor.h"

/* A token embedding: ids [...] -> x [..., width], x[..., :] = E[id, :],
   E = the [vocab, width] parameter <prefix>.weight. */
typedef struct llm_embedding {
    size_t weight;   /* position of <prefix>.weight in the parameter list */
    size_t vocab;    /* V: the IDs 0 .. vocab - 1 have rows */
    size_t width;    /* D: features per token */
} llm_embedding;
/* Adds <prefix>.weight to ps: a Xavier-uniform [vocab, width] table
   (fan_in = vocab, fan_out = width; vocab * width draws; decay 1), and
   describes the layer in *emb.
   Errors: LLM_ERR_ARGUMENT (null emb, ps, prefix or rng; vocab or width
   0), LLM_ERR_NAME (the name breaks the rules, has more than 63
   characters, or is taken), LLM_ERR_OVERFLOW, LLM_ERR_ALLOC. On failure
   *emb, *ps and *rng are not touched. */
llm_status llm_embedding_init(llm_embedding *emb, llm_params *ps, const char *prefix,
                              size_t vocab, size_t width, llm_rng *rng,
                              llm_error *err);
/* ids [shape...] (rank axes, row-major) -> *x [shape..., width] on tape:
   the rows of the layer's table, which enters through llm_param_leaf.
   Errors, in the order checked: LLM_ERR_ARGUMENT (null emb, ps, tape or x;
   null shape with rank > 0), LLM_ERR_NAME (the layer's position is not in
   ps), LLM_ERR_ARGUMENT (null ids with elements), LLM_ERR_SHAPE (the parameter there is not [vocab,
   width]), LLM_ERR_RANK (rank >= LLM_MAX_RANK), LLM_ERR_OVERFLOW (too many
   IDs), LLM_ERR_INDEX (an ID >= vocab), then those of llm_param_leaf and
   llm_tape_gather. A refused call records nothing, and a gather that
   fails rewinds the table's leaf if this call recorded it: on failure the
   tape is as it was; *x is written on success only. */
llm_status llm_embedding_forward(const llm_embedding *emb, llm_params *ps,
                                 llm_tape *tape, const size_t *ids, size_t rank,
                                 const size_t *shape, llm_var *x, llm_error *err);
/* LLM_OK when ps holds the layer's table at its position: <prefix>.weight,
   [vocab, width]. Errors: LLM_ERR_ARGUMENT (a null pointer), and those of
   llm_param_check. Stage "embedding.check". */
llm_status llm_embedding_check(const llm_embedding *emb, const llm_params *ps,
                               const char *prefix, llm_error *err);
/* A linear layer y = x W (+ b): its widths and where its parameters sit in
   the list it was built in. W is [d_in, d_out]; b, when has_bias, [d_out]. */
typedef struct llm_linear {
    size_t d_in, d_out;
    int has_bias;     /* 1 when the layer adds a bias */
    size_t weight;    /* position of <prefix>.weight in the parameter list */
    size_t bias;      /* position of <prefix>.bias; 0 and unused without one */
} llm_linear;

/* Appends <prefix>.weight, [d_in, d_out], Xavier-uniform with fan_in = d_in
   and fan_out = d_out, drawn from rng, decay 1; then, when has_bias,
   <prefix>.bias, [d_out], zeros, decay 0, no draws.
   Errors: LLM_ERR_ARGUMENT (null lin, ps, prefix or rng; a zero width),
   LLM_ERR_NAME (a name longer than 63 characters, breaking the rules, or
   taken), LLM_ERR_OVERFLOW, LLM_ERR_ALLOC. On failure *lin and *rng
   are not touched and ps holds the parameters it held (llm_params_truncate). */
llm_status llm_linear_init(llm_linear *lin, llm_params *ps, const char *prefix,
                           size_t d_in, size_t d_out, int has_bias, llm_rng *rng,
                           llm_error *err);
/* x [..., d_in] -> y [..., d_out]: records y = x W (+ b) on tape, with the
   leading axes of x flattened into N rows for one [N, d_in] x [d_in, d_out]
   product. ps must be the list the layer was built in; its parameters enter
   the tape through llm_param_leaf, once per recording.
   Errors: LLM_ERR_ARGUMENT (null lin, ps, tape or y), LLM_ERR_NAME (a
   parameter position outside ps), LLM_ERR_SHAPE (the weight is not [d_in, d_out], the bias is
   not [d_out], or the last axis of x is not d_in), LLM_ERR_RANK (x is a
   scalar), and those of the tape operations. On failure *y is not touched
   and the tape is as it was: the checks run before the first node, and a
   failure midway rewinds the nodes already recorded (llm_tape_rewind). */
llm_status llm_linear_forward(const llm_linear *lin, llm_params *ps, llm_tape *tape,
                              llm_var x, llm_var *y, llm_error *err);
/* LLM_OK when ps holds the layer's parameters at their positions:
   <prefix>.weight [d_in, d_out] and, with a bias, <prefix>.bias [d_out].
   Errors: LLM_ERR_ARGUMENT (a null pointer), and those of llm_param_check.
   Stage "linear.check". */
llm_status llm_linear_check(const llm_linear *lin, const llm_params *ps,
                            const char *prefix, llm_error *err);
/* The bias-free SwiGLU feed-forward branch,
   y = (SiLU(x W_g) (.) (x W_u)) W_2, applied to each position alone. */
typedef struct llm_swiglu {
    size_t d_model;   /* D, the width of a position */
    size_t d_ff;      /* F, the hidden width */
    size_t gate;      /* position of <prefix>.gate.weight [D, F] in the list */
    size_t up;        /* position of <prefix>.up.weight   [D, F] */
    size_t down;      /* position of <prefix>.down.weight [F, D] */
} llm_swiglu;
/* Appends <prefix>.gate.weight [D, F], <prefix>.up.weight [D, F] and
   <prefix>.down.weight [F, D], Xavier-uniform and drawn from rng in that
   order (3 D F draws, decay 1), and fills *ffn with D, F and their positions.
   Errors: LLM_ERR_ARGUMENT (null ffn, ps, prefix or rng; d_model or d_ff
   zero), LLM_ERR_NAME (a name longer than 63 characters, breaking the rules
   or already taken), LLM_ERR_OVERFLOW, LLM_ERR_ALLOC. On failure *ffn
   and *rng are untouched and ps holds the parameters it held
   (llm_params_truncate). */
llm_status llm_swiglu_init(llm_swiglu *ffn, llm_params *ps, const char *prefix,
                           size_t d_model, size_t d_ff, llm_rng *rng,
                           llm_error *err);
/* x [..., D] -> y [..., D]: every row of x (all axes but the last,
   flattened) goes through (SiLU(x W_g) (.) (x W_u)) W_2, recorded on tape;
   the three weights enter it through llm_param_leaf, once per recording.
   Errors: LLM_ERR_ARGUMENT (a null pointer), LLM_ERR_NAME (a weight
   position outside the list), LLM_ERR_SHAPE (a weight whose shape is not
   [D, F], [D, F], [F, D]; x's last axis is not D), LLM_ERR_RANK (x is a
   scalar), and those of the tape's operations (LLM_ERR_TAPE for a stale x
   or a released tape, LLM_ERR_NONFINITE for a weight that is not finite,
   LLM_ERR_ALLOC). On failure *y is untouched and the tape is as it was:
   nodes recorded before a failure midway are rewound (llm_tape_rewind). */
llm_status llm_swiglu_forward(const llm_swiglu *ffn, llm_params *ps, llm_tape *tape,
                              llm_var x, llm_var *y, llm_error *err);
/* LLM_OK when ps holds the branch's three weights at their positions:
   <prefix>.gate.weight [D, F], <prefix>.up.weight [D, F],
   <prefix>.down.weight [F, D]. Errors: LLM_ERR_ARGUMENT (a null pointer),
   and those of llm_param_check. Stage "swiglu.check". */
llm_status llm_swiglu_check(const llm_swiglu *ffn, const llm_params *ps,
                            const char *prefix, llm_error *err);
/* y = x + fx on tape, for x and fx of exactly the same shape (any rank,
   empty axes included); no broadcasting. The gradient of y goes unchanged
   to both operands.
   Errors: LLM_ERR_ARGUMENT (null tape or y), LLM_ERR_TAPE (x or fx stale or
   not on the tape, or the tape released), LLM_ERR_SHAPE (the shapes differ,
   even when they could be broadcast together), and those of llm_tape_add
   (LLM_ERR_NONFINITE, LLM_ERR_ALLOC, ...). On failure *y is not touched and
   the tape records nothing. */
llm_status llm_residual_add(llm_tape *tape, llm_var x, llm_var fx, llm_var *y,
                            llm_error *err);
/* RMSNorm over the last axis, y = g (.) x / sqrt(mean(x^2) + eps): its
   width D, its epsilon and where its gain <prefix>.gain [D] sits in the
   list it was built in. */
typedef struct llm_rmsnorm {
    size_t width;   /* D, the extent of the normalised (last) axis */
    double eps;     /* added to the mean square inside the root; >= 0 */
    size_t gain;    /* position of <prefix>.gain in the parameter list */
} llm_rmsnorm;

/* Appends <prefix>.gain, [width], every element 1.0, decay 0 (the
   no-decay group), through llm_params_add_const: no random draws.
   Errors: LLM_ERR_ARGUMENT (null norm, ps or prefix; width 0; eps < 0),
   LLM_ERR_NONFINITE (eps is NaN or infinite), LLM_ERR_NAME (the name is
   longer than 63 characters, breaks the rules or is taken), LLM_ERR_OVERFLOW
   (width too large to allocate), LLM_ERR_ALLOC. On failure *norm and *ps
   are not touched. */
llm_status llm_rmsnorm_init(llm_rmsnorm *norm, llm_params *ps, const char *prefix,
                            size_t width, double eps, llm_error *err);
/* x [..., D] -> y [..., D] on tape: every row (the last axis) becomes
   g (.) x / sqrt(mean(x^2) + eps), recorded as x*x, mean over the last
   axis, + eps (a constant), sqrt, reciprocal, * x, * g; the gain enters
   through llm_param_leaf, once per recording.
   Errors, in the order checked: LLM_ERR_ARGUMENT (null norm, ps, tape or
   y; the layer's eps not finite and >= 0), LLM_ERR_NAME (its gain position
   outside ps), LLM_ERR_SHAPE (the gain is not [D]), LLM_ERR_TAPE (x stale or not on
   the tape), LLM_ERR_RANK (x is a scalar), LLM_ERR_SHAPE (x's last axis is
   not D), LLM_ERR_NONFINITE (a row whose mean square overflows, or is 0 while eps
   is 0), then those of the tape operations (LLM_ERR_NONFINITE for a gain
   that is not finite or a product g x-hat that overflows, LLM_ERR_ALLOC).
   The checks record nothing, and a failure midway rewinds what was
   recorded (llm_tape_rewind): on failure the tape is as it was and *y is
   not touched. */
llm_status llm_rmsnorm_forward(const llm_rmsnorm *norm, llm_params *ps, llm_tape *tape,
                               llm_var x, llm_var *y, llm_error *err);
/* LLM_OK when ps holds the layer's gain at its position: <prefix>.gain
   [width]. Errors: LLM_ERR_ARGUMENT (a null pointer), and those of
   llm_param_check. Stage "rmsnorm.check". */
llm_status llm_rmsnorm_check(const llm_rmsnorm *norm, const llm_params *ps,
                             const char *prefix, llm_error *err);

#endif
