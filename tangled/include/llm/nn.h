/* llm/nn.h -- parameters and layers */
#ifndef LLM_NN_H
#define LLM_NN_H

#include <stdint.h>

#include "llm/tensor.h"

/* SplitMix64: the whole generator is its 64-bit state. */
typedef struct llm_rng {
    uint64_t state;
} llm_rng;

/* Sets the state to seed itself (no pre-mixing). */
void llm_rng_seed(llm_rng *rng, uint64_t seed);

/* Adds 0x9e3779b97f4a7c15 to the state and returns the mixed state. */
uint64_t llm_rng_next_u64(llm_rng *rng);

/* The top 53 bits of the next draw times 2^-53: a double in [0, 1), every
   value a multiple of 2^-53. One draw. */
double llm_rng_unit(llm_rng *rng);
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
   applies. */
typedef struct llm_param {
    char name[LLM_PARAM_NAME_MAX];
    llm_tensor value;
    llm_tensor grad;
    int decay;
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
   count >= ps->count. */
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

#endif
