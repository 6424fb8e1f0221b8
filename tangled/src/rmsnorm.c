/* rmsnorm.c -- RMSNorm over the last axis, with a gain, on the tensor tape. */
#include <stdio.h>

#include "llm/nn.h"

llm_status llm_rmsnorm_init(llm_rmsnorm *norm, llm_params *ps, const char *prefix,
                            size_t width, double eps, llm_error *err)
{
    char name[LLM_PARAM_NAME_MAX];
    int n;
    llm_status st;
    if (norm == NULL || ps == NULL || prefix == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "rmsnorm.init",
                        "a layer, a parameter list and a prefix are required");
    if (width == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "rmsnorm.init",
                        "'%.40s' normalises rows of width 0; "
                        "the width must be positive", prefix);
    if (eps != eps || eps - eps != 0.0)                    /* NaN or an infinity */
        return llm_fail(err, LLM_ERR_NONFINITE, "rmsnorm.init",
                        "eps must be a finite number, it is %g", eps);
    if (eps < 0.0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "rmsnorm.init",
                        "eps %g is negative; the root needs mean(x^2) + eps >= 0", eps);
    n = snprintf(name, sizeof name, "%s.gain", prefix);
    if (n < 0 || (size_t)n >= sizeof name)
        return llm_fail(err, LLM_ERR_NAME, "rmsnorm.init",
                        "'%.24s...' + '.gain' would have more than %d characters",
                        prefix, LLM_PARAM_NAME_MAX - 1);
    st = llm_params_add_const(ps, name, 1, &width, 1.0, 0, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "rmsnorm.init");
    norm->width = width;
    norm->eps = eps;
    norm->gain = ps->count - 1;
    return LLM_OK;
}
static llm_status rmsnorm_check(const llm_rmsnorm *norm, const llm_params *ps,
                                const llm_tape *tape, llm_var x, const llm_var *y,
                                const llm_tensor **xv, llm_error *err)
{
    const llm_tensor *g;
    llm_status st;
    if (norm == NULL || ps == NULL || tape == NULL || y == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "rmsnorm.forward",
                        "a layer, a parameter list, a tape and an output are required");
    if (norm->eps != norm->eps || norm->eps - norm->eps != 0.0 || norm->eps < 0.0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "rmsnorm.forward",
                        "the layer's eps %g is not a finite number >= 0", norm->eps);
    if (norm->gain >= ps->count)
        return llm_fail(err, LLM_ERR_NAME, "rmsnorm.forward",
                        "the layer's gain is parameter %zu, but the list has %zu",
                        norm->gain, ps->count);
    g = &ps->items[norm->gain].value;
    if (g->rank != 1 || g->shape[0] != norm->width)
        return llm_fail(err, LLM_ERR_SHAPE, "rmsnorm.forward",
                        "gain '%s' has rank %zu and %zu elements; "
                        "the layer needs [%zu]",
                        ps->items[norm->gain].name, g->rank, g->size, norm->width);
    st = llm_tape_value(tape, x, xv, err);
    if (st != LLM_OK)
        return st;
    if ((*xv)->rank == 0)
        return llm_fail(err, LLM_ERR_RANK, "rmsnorm.forward",
                        "x is a scalar; the layer normalises rows [..., %zu]",
                        norm->width);
    if ((*xv)->shape[(*xv)->rank - 1] != norm->width)
        return llm_fail(err, LLM_ERR_SHAPE, "rmsnorm.forward",
                        "x's last axis is %zu wide, the layer's width is %zu",
                        (*xv)->shape[(*xv)->rank - 1], norm->width);
    return LLM_OK;
}
static llm_status rmsnorm_rows(const llm_rmsnorm *norm, const llm_tensor *x,
                               llm_error *err)
{
    size_t index[LLM_MAX_RANK] = {0}, lead = x->rank - 1, row = 0, k, at;
    if (x->size == 0)
        return LLM_OK;
    do {
        double sum = 0.0, ms;
        for (at = x->offset, k = 0; k < lead; k++)
            at += index[k] * x->stride[k];
        for (k = 0; k < norm->width; k++) {
            double v = x->data[at + k * x->stride[lead]];
            sum += v * v;
        }
        ms = sum / (double)norm->width;
        if (ms - ms != 0.0)
            return llm_fail(err, LLM_ERR_NONFINITE, "rmsnorm.forward",
                            "row %zu: its mean square overflows", row);
        if (ms + norm->eps == 0.0)
            return llm_fail(err, LLM_ERR_NONFINITE, "rmsnorm.forward",
                            "row %zu has mean square 0 and eps is 0: "
                            "1/sqrt(0) is infinite", row);
        row++;
    } while (llm_index_next(lead, x->shape, index));
    return LLM_OK;
}
llm_status llm_rmsnorm_forward(const llm_rmsnorm *norm, llm_params *ps, llm_tape *tape,
                               llm_var x, llm_var *y, llm_error *err)
{
    const llm_tensor *xv = NULL;
    llm_tensor eps;
    llm_var sq, ms, e, s, rho, inv, n, g, out;
    size_t last, mark;
    llm_status st = rmsnorm_check(norm, ps, tape, x, y, &xv, err);
    if (st == LLM_OK)
        st = rmsnorm_rows(norm, xv, err);
    if (st == LLM_OK)
        st = llm_tensor_zeros(&eps, 0, NULL, err);             /* a scalar: eps */
    if (st != LLM_OK)
        return llm_pass(err, st, "rmsnorm.forward");
    eps.data[0] = norm->eps;
    last = xv->rank - 1;                      /* copied: xv dies at the next record */
    mark = llm_tape_mark(tape);
    st = llm_tape_mul(tape, x, x, &sq, err);                       /* x^2      [..., D] */
    if (st == LLM_OK)
        st = llm_tape_mean(tape, sq, last, 1, &ms, err);           /* mean     [..., 1] */
    if (st == LLM_OK)
        st = llm_tape_constant(tape, &eps, &e, err);               /* eps      [] */
    if (st == LLM_OK)
        st = llm_tape_add(tape, ms, e, &s, err);                   /* + eps    [..., 1] */
    if (st == LLM_OK)
        st = llm_tape_sqrt(tape, s, &rho, err);                    /* rho      [..., 1] */
    if (st == LLM_OK)
        st = llm_tape_reciprocal(tape, rho, &inv, err);            /* 1 / rho  [..., 1] */
    if (st == LLM_OK)
        st = llm_tape_mul(tape, x, inv, &n, err);                  /* x hat    [..., D] */
    if (st == LLM_OK)
        st = llm_param_leaf(tape, ps, norm->gain, &g, err);        /* g        [D] */
    if (st == LLM_OK)
        st = llm_tape_mul(tape, n, g, &out, err);                  /* y        [..., D] */
    llm_tensor_free(&eps);
    if (st != LLM_OK) {
        llm_tape_rewind(tape, mark, NULL);    /* the nodes before the failure go */
        return llm_pass(err, st, "rmsnorm.forward");
    }
    *y = out;
    return LLM_OK;
}
llm_status llm_rmsnorm_check(const llm_rmsnorm *norm, const llm_params *ps,
                             const char *prefix, llm_error *err)
{
    char name[2 * LLM_PARAM_NAME_MAX];
    if (norm == NULL || ps == NULL || prefix == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "rmsnorm.check",
                        "a layer, a parameter list and a prefix are required");
    snprintf(name, sizeof name, "%s.gain", prefix);
    return llm_pass(err, llm_param_check(ps, norm->gain, name, 1, &norm->width, err),
                    "rmsnorm.check");
}
