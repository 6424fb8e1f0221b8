/* swiglu.c -- the bias-free SwiGLU feed-forward branch. */
#include <stdio.h>
#include <string.h>

#include "llm/nn.h"

llm_status llm_swiglu_init(llm_swiglu *ffn, llm_params *ps, const char *prefix,
                           size_t d_model, size_t d_ff, llm_rng *rng,
                           llm_error *err)
{
    static const char *const part[3] = {"gate", "up", "down"};
    char name[3][LLM_PARAM_NAME_MAX];
    llm_rng trial;
    size_t mark, k;
    llm_status st = LLM_OK;
    if (ffn == NULL || ps == NULL || prefix == NULL || rng == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "swiglu.init",
                        "a layer, a parameter list, a prefix and a generator "
                        "are required");
    if (d_model == 0 || d_ff == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "swiglu.init",
                        "d_model %zu and d_ff %zu must both be positive",
                        d_model, d_ff);
    for (k = 0; k < 3; k++) {
        int n = snprintf(name[k], sizeof name[k], "%s.%s.weight", prefix, part[k]);
        if (n < 0 || (size_t)n >= sizeof name[k])
            return llm_fail(err, LLM_ERR_NAME, "swiglu.init",
                            "'%.20s...%s.weight' would be longer than %d characters",
                            prefix, part[k], LLM_PARAM_NAME_MAX - 1);
    }
    mark = ps->count;
    trial = *rng;
    st = llm_params_add_xavier(ps, name[0], d_model, d_ff, &trial, err);
    if (st == LLM_OK)
        st = llm_params_add_xavier(ps, name[1], d_model, d_ff, &trial, err);
    if (st == LLM_OK)
        st = llm_params_add_xavier(ps, name[2], d_ff, d_model, &trial, err);
    if (st != LLM_OK) {
        llm_params_truncate(ps, mark);       /* take back what was added */
        return llm_pass(err, st, "swiglu.init");
    }
    ffn->d_model = d_model;
    ffn->d_ff = d_ff;
    ffn->gate = mark;
    ffn->up = mark + 1;
    ffn->down = mark + 2;
    *rng = trial;                            /* commit the 3 D F draws */
    return LLM_OK;
}
/* LLM_OK when the parameter at position index has shape [rows, cols]. */
static llm_status swiglu_weight(const llm_params *ps, size_t index, size_t rows,
                                size_t cols, const char *what, llm_error *err)
{
    const llm_tensor *v;
    char shape[64];
    if (index >= ps->count)
        return llm_fail(err, LLM_ERR_NAME, "swiglu.forward",
                        "the %s weight is at position %zu of a list of %zu parameters",
                        what, index, ps->count);
    v = &ps->items[index].value;
    if (v->rank == 2 && v->shape[0] == rows && v->shape[1] == cols)
        return LLM_OK;
    return llm_fail(err, LLM_ERR_SHAPE, "swiglu.forward",
                    "the %s weight '%s' must be [%zu, %zu], it is %s", what,
                    ps->items[index].name, rows, cols,
                    llm_fmt_sizes(shape, sizeof shape, v->shape,
                                  v->rank < LLM_MAX_RANK ? v->rank : LLM_MAX_RANK));
}
llm_status llm_swiglu_forward(const llm_swiglu *ffn, llm_params *ps, llm_tape *tape,
                              llm_var x, llm_var *y, llm_error *err)
{
    const llm_tensor *xv;
    llm_var leaf[3], rows, a, u, s, h, down, out;
    size_t pos[3], rank, shape[LLM_MAX_RANK], flat[2], k, mark;
    llm_status st;
    if (ffn == NULL || ps == NULL || tape == NULL || y == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "swiglu.forward",
                        "a layer, a parameter list, a tape and an output are required");
    pos[0] = ffn->gate;
    pos[1] = ffn->up;
    pos[2] = ffn->down;
    st = swiglu_weight(ps, pos[0], ffn->d_model, ffn->d_ff, "gate", err);
    if (st == LLM_OK)
        st = swiglu_weight(ps, pos[1], ffn->d_model, ffn->d_ff, "up", err);
    if (st == LLM_OK)
        st = swiglu_weight(ps, pos[2], ffn->d_ff, ffn->d_model, "down", err);
    if (st == LLM_OK)
        st = llm_tape_value(tape, x, &xv, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "swiglu.forward");
    if (xv->rank == 0)
        return llm_fail(err, LLM_ERR_RANK, "swiglu.forward",
                        "x is a scalar; it needs a last axis of width d_model %zu",
                        ffn->d_model);
    if (xv->shape[xv->rank - 1] != ffn->d_model)
        return llm_fail(err, LLM_ERR_SHAPE, "swiglu.forward",
                        "x's last axis is %zu wide, the layer's d_model is %zu",
                        xv->shape[xv->rank - 1], ffn->d_model);
    rank = xv->rank;                           /* copied: xv dies at the next record */
    for (k = 0; k < rank; k++)
        shape[k] = xv->shape[k];
    flat[0] = xv->size / ffn->d_model;         /* N rows; d_model > 0 by the checks */
    flat[1] = ffn->d_model;
    mark = llm_tape_mark(tape);
    for (k = 0; k < 3 && st == LLM_OK; k++)
        st = llm_param_leaf(tape, ps, pos[k], &leaf[k], err);         /* gate, up, down */
    if (st == LLM_OK)
        st = llm_tape_reshape(tape, x, 2, flat, &rows, err);           /* [N, D] */
    if (st == LLM_OK)
        st = llm_tape_matmul(tape, rows, leaf[0], 0, 0, &a, err);      /* A = X W_g */
    if (st == LLM_OK)
        st = llm_tape_matmul(tape, rows, leaf[1], 0, 0, &u, err);      /* U = X W_u */
    if (st == LLM_OK)
        st = llm_tape_silu(tape, a, &s, err);                          /* S = SiLU(A) */
    if (st == LLM_OK)
        st = llm_tape_mul(tape, s, u, &h, err);                        /* H = S (.) U */
    if (st == LLM_OK)
        st = llm_tape_matmul(tape, h, leaf[2], 0, 0, &down, err);      /* H W_2 */
    if (st == LLM_OK)
        st = llm_tape_reshape(tape, down, rank, shape, &out, err);     /* [..., D] */
    if (st != LLM_OK) {
        llm_tape_rewind(tape, mark, NULL);        /* nothing of this call stays behind */
        return st;
    }
    *y = out;
    return LLM_OK;
}
llm_status llm_swiglu_check(const llm_swiglu *ffn, const llm_params *ps,
                            const char *prefix, llm_error *err)
{
    static const char *const part[3] = {"gate", "up", "down"};
    char name[2 * LLM_PARAM_NAME_MAX];
    size_t at[3], shape[2], k;
    llm_status st = LLM_OK;
    if (ffn == NULL || ps == NULL || prefix == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "swiglu.check",
                        "a branch, a parameter list and a prefix are required");
    at[0] = ffn->gate;
    at[1] = ffn->up;
    at[2] = ffn->down;
    for (k = 0; k < 3 && st == LLM_OK; k++) {
        snprintf(name, sizeof name, "%s.%s.weight", prefix, part[k]);
        shape[0] = k < 2 ? ffn->d_model : ffn->d_ff;
        shape[1] = k < 2 ? ffn->d_ff : ffn->d_model;
        st = llm_param_check(ps, at[k], name, 2, shape, err);
    }
    return llm_pass(err, st, "swiglu.check");
}
