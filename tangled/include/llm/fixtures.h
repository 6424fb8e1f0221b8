/* llm/fixtures.h -- the demo layer's fixtures that several chapters read:
   the Rust course's seed-33 decoder, its documents and its training plan
   (chapter 33), and comparisons of states bit for bit. */
#ifndef LLM_FIXTURES_H
#define LLM_FIXTURES_H

#include <stddef.h>
#include <stdint.h>

#include "llm/evidence.h"
#include "llm/model.h"
#include "llm/optim.h"

/* The seed-33 fixture: V = 5, D = 4, two heads, F = 4, one block, a
   context of 2; AdamW 0.9, 0.999, 1e-8, weight decay 0.01. Two training
   documents of the cycle 0 1 2 3 4 (12 IDs each, starting at 0 and at 2)
   and two validation documents (the cycle, 9 IDs; nine zeros). */
extern const llm_decoder_config llm_fix33_model;
extern const llm_adamw_config llm_fix33_adamw;
extern const uint64_t llm_fix33_seed;
extern const llm_doc llm_fix33_train_docs[2], llm_fix33_val_docs[2];
extern const llm_train_docs llm_fix33_train, llm_fix33_validation;
/* The plan: 8 updates of T = 2, stride 1, batches of 2 shuffled with
   seed 33, at the rates below; measured in batches of 5 and 4 at steps
   0, 2, 4, 6, 8; clip 0.35. */
extern const double llm_fix33_rates[8];
extern const llm_train_config llm_fix33_plan;

/* The parts of the fixture as training starts, each owned by a demo. */
typedef struct llm_fix33 {
    llm_decoder *dec;
    llm_params *ps;
    llm_adamw *opt;
} llm_fix33;

/* The decoder drawn from llm_fix33_seed into a list of its own and the
   optimiser at step 0, owned by d. 1 on success; 0 after d has the
   error. */
int llm_own_fix33(llm_demo *d, llm_fix33 *f);

/* The number of scalars in ps's values. */
size_t llm_count_scalars(const llm_params *ps);
/* 1 when a and b hold the same names, and values bit for bit. */
int llm_same_values(const llm_params *a, const llm_params *b);
/* 1 when a and b hold the same names, and gradients bit for bit. */
int llm_same_grads(const llm_params *a, const llm_params *b);
/* 1 when a and b have taken the same steps and hold the same moments. */
int llm_same_adamw(const llm_adamw *a, const llm_adamw *b);

#endif
