/* evidence/tensor.c -- the demo layer's llm_own_tensor. */
#include "llm/evidence.h"
#include "llm/tensor.h"

static void release(void *t)
{
    llm_tensor_free(t);
}

llm_tensor *llm_own_tensor(llm_demo *d)
{
    return llm_own(d, sizeof(llm_tensor), release);
}
