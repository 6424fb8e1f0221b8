/* llm/params.h -- the parameter-list module: named parameters with their
   gradients, Xavier initialisation, a parameter's leaf on the tape and the
   clearing of gradients. Built by chapters 17, 18 and 22. */
#ifndef LLM_PARAMS_H
#define LLM_PARAMS_H

#include <stddef.h>

#include "llm/error.h"
#include "llm/rng.h"
#include "llm/tape.h"
#include "llm/tensor.h"

/* A new owned [fan_in, fan_out] tensor: element [i, j] is
   limit * (2u - 1), u the (i * fan_out + j + 1)-th unit draw of rng,
   limit = sqrt(6 / (fan_in + fan_out)). Consumes fan_in * fan_out draws.
   Errors: LLM_ERR_ARGUMENT (null out or rng, a zero fan), LLM_ERR_OVERFLOW,
   LLM_ERR_ALLOC. On failure neither *out nor *rng is touched. */
llm_status llm_xavier_uniform(llm_tensor *out, size_t fan_in, size_t fan_out,
                              llm_rng *rng, llm_error *err);
#define LLM_PARAM_NAME_MAX 64   /* a name has at most 63 characters */

/* A named parameter: its value and the gradient that reverse mode
   accumulates into (same shape, zeros); decay is 1 when weight decay
   applies; trainable is 1 unless the parameter is frozen. */
typedef struct llm_param {
    char name[LLM_PARAM_NAME_MAX];
    llm_tensor value;
    llm_tensor grad;
    int decay;
    int trainable;    /* 0: no gradient, no update (llm_params_set_trainable) */
} llm_param;

/* An ordered list of parameters with unique, valid names; owns them. */
typedef struct llm_params {
    llm_param *items;
    size_t count, capacity;
} llm_params;

/* An empty list. Errors: LLM_ERR_ARGUMENT (ps is NULL). */
llm_status llm_params_init(llm_params *ps, llm_error *err);

/* Frees every parameter and the list itself, leaving an empty list. Safe on
   NULL and on an empty list. */
void llm_params_free(llm_params *ps);

/* Frees the parameters from position count on, keeping the first count:
   the rollback of a constructor that failed half way. Does nothing when
   count >= ps->count. After it ps holds exactly the parameters it held at
   count, names, values and gradients; only its spare room may be larger,
   and the array may have moved, as after any append. A constructor that
   adds several parameters promises this much on failure, no more. */
void llm_params_truncate(llm_params *ps, size_t count);
/* LLM_OK when name is one to 63 characters of dot-separated, non-empty
   segments of a-z, 0-9 and _. Errors: LLM_ERR_ARGUMENT (name is NULL),
   LLM_ERR_NAME (the first rule broken, with its position). */
llm_status llm_param_name_check(const char *name, llm_error *err);

/* The position of the parameter called name. Errors: LLM_ERR_ARGUMENT (null
   ps, name or index), LLM_ERR_NAME (no parameter has that name). On failure
   *index is not touched. */
llm_status llm_params_find(const llm_params *ps, const char *name, size_t *index,
                           llm_error *err);

/* Freezes parameter index (trainable = 0) or thaws it (any other value).
   A leaf recorded before the change keeps its accumulator or its lack of
   one; the next recording follows the flag.
   Errors: LLM_ERR_ARGUMENT (ps is NULL), LLM_ERR_NAME (index >= ps->count). */
llm_status llm_params_set_trainable(llm_params *ps, size_t index, int trainable,
                                    llm_error *err);
/* Appends name: a Xavier-uniform [fan_in, fan_out] value drawn from rng, a
   zero gradient, decay 1. Errors: LLM_ERR_ARGUMENT (null ps or rng, a zero
   fan), LLM_ERR_NAME (name breaks the rules or is taken), LLM_ERR_OVERFLOW,
   LLM_ERR_ALLOC. On failure neither *ps nor *rng is touched. */
llm_status llm_params_add_xavier(llm_params *ps, const char *name, size_t fan_in,
                                 size_t fan_out, llm_rng *rng, llm_error *err);

/* Appends name: every element value (0 for biases, 1 for gains), a zero
   gradient, the given decay; no random draws. Errors: LLM_ERR_ARGUMENT (null
   ps, a shape with no elements), LLM_ERR_NAME, LLM_ERR_NONFINITE (value is
   NaN or infinite), those of llm_row_major, LLM_ERR_ALLOC. On failure *ps is
   not touched. */
llm_status llm_params_add_const(llm_params *ps, const char *name, size_t rank,
                                const size_t *shape, double value, int decay,
                                llm_error *err);
/* LLM_OK when position index of ps holds a parameter called name, of rank
   rank and the given shape. Errors: LLM_ERR_ARGUMENT (ps or name is NULL,
   shape NULL with rank > 0), LLM_ERR_NAME (index beyond the list; another
   name), LLM_ERR_SHAPE (another rank or shape). Stage "param.check". */
llm_status llm_param_check(const llm_params *ps, size_t index, const char *name,
                           size_t rank, const size_t *shape, llm_error *err);
/* The handle of parameter index of ps on tape: the leaf already recorded
   for it in the current recording (its very tensor, with its grad, or with
   none if the parameter is frozen), else a new leaf that accumulates into
   its grad, or has no grad when the parameter is frozen.
   Add no parameter to ps while a recording holds its leaves: growing the
   list may move the grad tensors they point to.
   Errors: LLM_ERR_ARGUMENT (null tape, ps or out), LLM_ERR_NAME (index >=
   ps->count) and those of llm_tape_leaf. On failure *out is not touched. */
llm_status llm_param_leaf(llm_tape *tape, llm_params *ps, size_t index, llm_var *out,
                          llm_error *err);
/* Sets every gradient coordinate of ps to +0.0; values are not touched.
   Errors: LLM_ERR_ARGUMENT (ps is NULL). */
llm_status llm_params_zero_grad(llm_params *ps, llm_error *err);
/* A copy of ps in *out: every parameter's name, value, gradient and
   flags, in the same order, in storage of its own (contiguous even where
   ps holds a strided view). out must not be ps.
   Errors: LLM_ERR_ARGUMENT (a null pointer; out is ps), LLM_ERR_ALLOC
   (and those of llm_tensor_copy). Stage "params.copy". On failure *out is
   not touched. */
llm_status llm_params_copy(llm_params *out, const llm_params *ps, llm_error *err);

#endif
