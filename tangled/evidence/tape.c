/* evidence/tape.c -- the demo layer's llm_own_tape. */
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
