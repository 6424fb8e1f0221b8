/* evidence/probe.c -- a layer run on a fresh tape, and its probe loss. */
#include <string.h>

#include "llm/probe.h"

/* t's elements in row-major order into out, or, with out NULL, the sum of
   up_i t_i in that order. */
static double walk(const llm_tensor *t, double *out, const double *up)
{
    size_t index[LLM_MAX_RANK] = {0}, n = 0, k, at;
    double sum = 0.0;
    if (t->size == 0)
        return sum;
    do {
        for (at = t->offset, k = 0; k < t->rank; k++)
            at += index[k] * t->stride[k];
        if (out != NULL)
            out[n] = t->data[at];
        else
            sum += up[n] * t->data[at];
        n++;
    } while (llm_index_next(t->rank, t->shape, index));
    return sum;
}

/* llm_probe_run, and with loss not NULL the probe's loss instead of y. */
static llm_status probe(const llm_probe *p, double *y, size_t ny, size_t *yrank,
                        size_t *yshape, double *dx, double *loss, llm_error *err)
{
    llm_tape tape;
    llm_tensor xt, xg, ut;
    llm_var xv, yv;
    const llm_tensor *yt;
    llm_status st;
    memset(&tape, 0, sizeof tape);
    memset(&ut, 0, sizeof ut);
    memset(&xg, 0, sizeof xg);
    st = llm_tensor_zeros(&xt, p->rank, p->shape, err);
    if (st == LLM_OK && xt.size > 0)
        memcpy(xt.data, p->x, xt.size * sizeof *p->x);
    if (st == LLM_OK)
        st = llm_tensor_zeros(&xg, p->rank, p->shape, err);
    if (st == LLM_OK)
        st = llm_tape_init(&tape, 16, err);
    if (st == LLM_OK)
        st = llm_tape_leaf(&tape, &xt, &xg, &xv, err);
    if (st == LLM_OK)
        st = p->forward(p->layer, p->ps, &tape, xv, &yv, err);
    if (st == LLM_OK)
        st = llm_tape_value(&tape, yv, &yt, err);
    if (st == LLM_OK && loss != NULL)
        *loss = walk(yt, NULL, p->up);
    else if (st == LLM_OK && yt->size > ny)
        st = llm_fail(err, LLM_ERR_SHAPE, "probe.run",
                      "the output has %zu values, room for %zu", yt->size, ny);
    else if (st == LLM_OK) {
        walk(yt, y, NULL);
        if (yrank != NULL)
            *yrank = yt->rank;
        if (yshape != NULL)
            memcpy(yshape, yt->shape, yt->rank * sizeof *yshape);
    }
    if (st == LLM_OK && dx != NULL)
        st = llm_params_zero_grad(p->ps, err);
    if (st == LLM_OK && dx != NULL)
        st = llm_tensor_from(&ut, yt->rank, yt->shape, p->up, yt->size, err);
    if (st == LLM_OK && dx != NULL)
        st = llm_tape_backward(&tape, yv, &ut, 0, err);
    if (st == LLM_OK && dx != NULL)
        walk(&xg, dx, NULL);
    llm_tape_free(&tape);
    llm_tensor_free(&ut);
    llm_tensor_free(&xg);
    llm_tensor_free(&xt);
    return st;
}

llm_status llm_probe_run(const llm_probe *p, double *y, size_t ny, size_t *yrank,
                         size_t *yshape, double *dx, llm_error *err)
{
    return probe(p, y, ny, yrank, yshape, dx, NULL, err);
}

llm_status llm_probe_read(const llm_tape *tape, llm_var v, double *out, size_t n,
                          size_t *rank, size_t *shape, llm_error *err)
{
    const llm_tensor *t;
    llm_status st = llm_tape_value(tape, v, &t, err);
    if (st == LLM_OK && t->size > n)
        st = llm_fail(err, LLM_ERR_SHAPE, "probe.read",
                      "the value has %zu elements, room for %zu", t->size, n);
    if (st != LLM_OK)
        return st;
    walk(t, out, NULL);
    if (rank != NULL)
        *rank = t->rank;
    if (shape != NULL)
        memcpy(shape, t->shape, t->rank * sizeof *shape);
    return LLM_OK;
}

llm_status llm_probe_loss(void *p, const llm_tensor *theta, double *value,
                          llm_error *err)
{
    (void)theta;                   /* perturbed in place by the checker */
    return probe(p, NULL, 0, NULL, NULL, NULL, value, err);
}
