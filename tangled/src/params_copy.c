/* params_copy.c -- chapter 33: a parameter list copied, so that training
   can keep the state it selects. */
#include <string.h>

#include "llm/params.h"

llm_status llm_params_copy(llm_params *out, const llm_params *ps, llm_error *err)
{
    llm_params c = {NULL, 0, 0};
    size_t i;
    llm_status st;
    if (out == NULL || ps == NULL || out == ps)
        return llm_fail(err, LLM_ERR_ARGUMENT, "params.copy",
                        "a parameter list and another one to copy it into are required");
    c.capacity = ps->count > 0 ? ps->count : 1;
    if ((c.items = llm_calloc(c.capacity, sizeof *c.items)) == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, "params.copy",
                        "no room for a list of %zu parameters", ps->count);
    for (i = 0; i < ps->count; i++) {
        const llm_param *q = &ps->items[i];
        llm_param *p = &c.items[i];
        memcpy(p->name, q->name, sizeof p->name);
        p->decay = q->decay;
        p->trainable = q->trainable;
        st = llm_tensor_copy(&p->value, &q->value, err);
        if (st == LLM_OK && (st = llm_tensor_copy(&p->grad, &q->grad, err)) != LLM_OK)
            llm_tensor_free(&p->value);
        if (st != LLM_OK) {
            llm_params_free(&c);
            return llm_pass(err, st, "params.copy");
        }
        c.count = i + 1;
    }
    *out = c;
    return LLM_OK;
}
