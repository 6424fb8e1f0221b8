/* evidence/params.c -- the demo layer's llm_own_params. */
#include "llm/evidence.h"
#include "llm/params.h"

static void release(void *ps)
{
    llm_params_free(ps);
}

llm_params *llm_own_params(llm_demo *d)
{
    return llm_own(d, sizeof(llm_params), release);
}
