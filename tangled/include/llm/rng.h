/* llm/rng.h -- the random-number module: one 64-bit generator (llm_rng),
   its uniform doubles and unbiased draws below a bound. Built by chapters
   17 and 21. */
#ifndef LLM_RNG_H
#define LLM_RNG_H

#include <stdint.h>

#include "llm/error.h"

/* SplitMix64: the whole generator is its 64-bit state. */
typedef struct llm_rng {
    uint64_t state;
} llm_rng;

/* Sets the state to seed itself (no pre-mixing). With a null rng, the
   generator's three functions do nothing and return 0 (llm/error.h). */
void llm_rng_seed(llm_rng *rng, uint64_t seed);

/* Adds 0x9e3779b97f4a7c15 to the state and returns the mixed state. */
uint64_t llm_rng_next_u64(llm_rng *rng);

/* The top 53 bits of the next draw times 2^-53: a double in [0, 1), every
   value a multiple of 2^-53. One draw. */
double llm_rng_unit(llm_rng *rng);
/* A uniform integer in [0, bound): draws from rng until a draw r is at
   least (2^64 - bound) mod bound, then *out = r mod bound. Fewer than two
   draws on average, almost always one.
   Errors: LLM_ERR_ARGUMENT (rng or out is NULL, bound is 0). On failure
   neither *rng nor *out is touched. */
llm_status llm_rng_below(llm_rng *rng, uint64_t bound, uint64_t *out, llm_error *err);

#endif
