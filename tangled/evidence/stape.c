/* evidence/stape.c -- the demo layer's llm_own_stape. */
#include "llm/evidence.h"
#include "llm/stape.h"

static void release(void *stape)
{
    llm_stape_free(stape);
}

llm_stape *llm_own_stape(llm_demo *d)
{
    return llm_own(d, sizeof(llm_stape), release);
}
