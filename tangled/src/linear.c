/* linear.c -- linear layers y = x W (+ b) on the tensor tape. */
#include <stdio.h>
#include <string.h>

#include "llm/nn.h"

/* prefix.part into name, which has LLM_PARAM_NAME_MAX bytes. */
static llm_status layer_name(char *name, const char *prefix, const char *part,
                             llm_error *err)
{
    size_t np = strlen(prefix), nl = strlen(part);
    if (np + 1 + nl >= LLM_PARAM_NAME_MAX)
        return llm_fail(err, LLM_ERR_NAME, "linear.init",
                        "'%.24s...' + '.%s' would have %zu characters; a name has "
                        "at most %d", prefix, part, np + 1 + nl,
                        LLM_PARAM_NAME_MAX - 1);
    memcpy(name, prefix, np);
    name[np] = '.';
    memcpy(name + np + 1, part, nl + 1);          /* with its terminating zero */
    return LLM_OK;
}
llm_status llm_linear_init(llm_linear *lin, llm_params *ps, const char *prefix,
                           size_t d_in, size_t d_out, int has_bias, llm_rng *rng,
                           llm_error *err)
{
    char wname[LLM_PARAM_NAME_MAX], bname[LLM_PARAM_NAME_MAX];
    const size_t bshape[1] = {d_out};
    llm_linear made;
    llm_rng trial;
    size_t start;
    llm_status st;
    if (lin == NULL || ps == NULL || prefix == NULL || rng == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "linear.init",
                        "a layer, a parameter list, a prefix and a generator are "
                        "required");
    if (d_in == 0 || d_out == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "linear.init",
                        "'%.40s' maps %zu inputs to %zu outputs; both widths must be "
                        "positive", prefix, d_in, d_out);
    st = layer_name(wname, prefix, "weight", err);
    if (st != LLM_OK)
        return llm_pass(err, st, "linear.init");
    (void)layer_name(bname, prefix, "bias", err);         /* shorter: it fits */
    start = ps->count;
    trial = *rng;
    st = llm_params_add_xavier(ps, wname, d_in, d_out, &trial, err);
    if (st == LLM_OK && has_bias)
        st = llm_params_add_const(ps, bname, 1, bshape, 0.0, 0, err);
    if (st != LLM_OK) {
        llm_params_truncate(ps, start);
        return llm_pass(err, st, "linear.init");
    }
    made.d_in = d_in;
    made.d_out = d_out;
    made.has_bias = has_bias != 0;
    made.weight = start;
    made.bias = has_bias ? start + 1 : 0;
    *rng = trial;
    *lin = made;
    return LLM_OK;
}
/* Parameter at of ps exists and has the given shape. */
static llm_status check_param(const llm_linear *lin, const llm_params *ps, size_t at,
                              size_t rank, const size_t *shape, const char *what,
                              llm_error *err)
{
    const llm_param *p;
    char got[96], want[96];
    if (at >= ps->count)
        return llm_fail(err, LLM_ERR_NAME, "linear.forward",
                        "the layer's %s is parameter %zu, but the list has %zu", what,
                        at, ps->count);
    p = &ps->items[at];
    if (p->value.rank != rank
        || memcmp(p->value.shape, shape, rank * sizeof *shape) != 0)
        return llm_fail(err, LLM_ERR_SHAPE, "linear.forward",
                        "%s '%s' has shape %s; a %zu -> %zu layer needs %s", what,
                        p->name,
                        llm_fmt_sizes(got, sizeof got, p->value.shape, p->value.rank),
                        lin->d_in, lin->d_out,
                        llm_fmt_sizes(want, sizeof want, shape, rank));
    return LLM_OK;
}
llm_status llm_linear_forward(const llm_linear *lin, llm_params *ps, llm_tape *tape,
                              llm_var x, llm_var *y, llm_error *err)
{
    const llm_tensor *xv;
    size_t wshape[2], rows[2], out_shape[LLM_MAX_RANK], rank, k, mark;
    char buf[96];
    llm_var w, b, x2, prod, out;
    llm_status st;
    if (lin == NULL || ps == NULL || tape == NULL || y == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "linear.forward",
                        "a layer, a parameter list, a tape and an output are required");
    wshape[0] = lin->d_in;
    wshape[1] = lin->d_out;
    st = check_param(lin, ps, lin->weight, 2, wshape, "weight", err);
    if (st == LLM_OK && lin->has_bias)
        st = check_param(lin, ps, lin->bias, 1, &lin->d_out, "bias", err);
    if (st == LLM_OK)
        st = llm_tape_value(tape, x, &xv, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "linear.forward");
    rank = xv->rank;
    if (rank == 0)
        return llm_fail(err, LLM_ERR_RANK, "linear.forward",
                        "x is a scalar; a %zu -> %zu layer needs x [..., %zu]",
                        lin->d_in, lin->d_out, lin->d_in);
    if (xv->shape[rank - 1] != lin->d_in)
        return llm_fail(err, LLM_ERR_SHAPE, "linear.forward",
                        "x has shape %s; a %zu -> %zu layer needs the last axis %zu",
                        llm_fmt_sizes(buf, sizeof buf, xv->shape, rank), lin->d_in,
                        lin->d_out, lin->d_in);
    rows[0] = 1;                               /* N, the product of the leading axes */
    for (k = 0; k + 1 < rank; k++)
        rows[0] *= xv->shape[k];
    rows[1] = lin->d_in;
    memcpy(out_shape, xv->shape, rank * sizeof *out_shape);
    out_shape[rank - 1] = lin->d_out;
    mark = llm_tape_mark(tape);
    st = llm_param_leaf(tape, ps, lin->weight, &w, err);
    if (st == LLM_OK)
        st = llm_tape_reshape(tape, x, 2, rows, &x2, err);
    if (st == LLM_OK)
        st = llm_tape_matmul(tape, x2, w, 0, 0, &prod, err);
    if (st == LLM_OK && lin->has_bias) {
        st = llm_param_leaf(tape, ps, lin->bias, &b, err);
        if (st == LLM_OK)
            st = llm_tape_add(tape, prod, b, &prod, err);
    }
    if (st == LLM_OK)
        st = llm_tape_reshape(tape, prod, rank, out_shape, &out, err);
    if (st != LLM_OK) {
        llm_tape_rewind(tape, mark, NULL);        /* cannot fail: the tape was checked */
        return st;
    }
    *y = out;
    return LLM_OK;
}
llm_status llm_linear_check(const llm_linear *lin, const llm_params *ps,
                            const char *prefix, llm_error *err)
{
    char name[2 * LLM_PARAM_NAME_MAX];
    size_t shape[2];
    llm_status st;
    if (lin == NULL || ps == NULL || prefix == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "linear.check",
                        "a layer, a parameter list and a prefix are required");
    snprintf(name, sizeof name, "%s.weight", prefix);
    shape[0] = lin->d_in;
    shape[1] = lin->d_out;
    st = llm_param_check(ps, lin->weight, name, 2, shape, err);
    if (st == LLM_OK && lin->has_bias) {
        snprintf(name, sizeof name, "%s.bias", prefix);
        st = llm_param_check(ps, lin->bias, name, 1, &lin->d_out, err);
    }
    return llm_pass(err, st, "linear.check");
}
