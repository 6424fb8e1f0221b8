/* evidence/tape.c -- the demo layer's tapes and constants. */
#include "llm/evidence.h"
#include "llm/tape.h"

static void release(void *tape)
{
    llm_tape_free(tape);
}

llm_tape *llm_own_tape(llm_demo *d)
{
    return llm_own(d, sizeof(llm_tape), release);
}

llm_tape *llm_own_fresh_tape(llm_demo *d, size_t capacity)
{
    llm_tape *tape = llm_own_tape(d);
    return LLM_TRY(d, llm_tape_init(tape, capacity, &d->err)) ? tape : NULL;
}

int llm_own_constant(llm_demo *d, llm_tape *tape, size_t rank, const size_t *shape,
                     const double *x, llm_var *v)
{
    llm_tensor *t = llm_own_tensor(d);
    size_t n = 1, i;
    for (i = 0; i < rank; i++)
        n *= shape[i];
    return LLM_TRY(d, llm_tensor_from(t, rank, shape, x, n, &d->err))
           && LLM_TRY(d, llm_tape_constant(tape, t, v, &d->err));
}
