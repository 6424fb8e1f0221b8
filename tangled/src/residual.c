/* residual.c -- residual connections y = x + F(x) on the tensor tape. */
#include <stdio.h>
#include <string.h>

#include "llm/nn.h"

llm_status llm_residual_add(llm_tape *tape, llm_var x, llm_var fx, llm_var *y,
                            llm_error *err)
{
    const llm_tensor *xv, *fv;
    char a[96], b[96];
    llm_status st;
    if (tape == NULL || y == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "nn.residual_add",
                        "a tape and an output are required");
    st = llm_tape_value(tape, x, &xv, err);
    if (st == LLM_OK)
        st = llm_tape_value(tape, fx, &fv, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "nn.residual_add");
    if (xv->rank != fv->rank
        || memcmp(xv->shape, fv->shape, xv->rank * sizeof *xv->shape) != 0)
        return llm_fail(err, LLM_ERR_SHAPE, "nn.residual_add",
                        "x has shape %s and F(x) %s; a residual adds equal shapes "
                        "only, without broadcasting",
                        llm_fmt_sizes(a, sizeof a, xv->shape, xv->rank),
                        llm_fmt_sizes(b, sizeof b, fv->shape, fv->rank));
    return llm_pass(err, llm_tape_add(tape, x, fx, y, err), "nn.residual_add");
}
