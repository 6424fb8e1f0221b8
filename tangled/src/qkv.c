/* qkv.c -- the query, key and value projections of one sequence. */
#include <stdio.h>
#include <string.h>

#include "llm/attention.h"

/* The longest name the projections make is <prefix>.query.weight (value
   has as many letters, key fewer); it must fit in a parameter name. */
static llm_status check_prefix(const char *prefix, const char *stage, llm_error *err)
{
    size_t np = strlen(prefix);
    if (np + sizeof ".query.weight" - 1 >= LLM_PARAM_NAME_MAX)
        return llm_fail(err, LLM_ERR_NAME, stage,
                        "'%.24s...' + '.query.weight' would have %zu characters; a "
                        "name has at most %d", prefix, np + sizeof ".query.weight" - 1,
                        LLM_PARAM_NAME_MAX - 1);
    return LLM_OK;
}
/* Both constructors: widths d_q for the query and d_kv for the key and
   the value, refusals under stage. */
static llm_status qkv_make(llm_qkv *qkv, llm_params *ps, const char *prefix,
                           size_t d_model, size_t d_k, size_t d_kv, llm_rng *rng,
                           const char *stage, llm_error *err)
{
    static const char *const part[3] = {"query", "key", "value"};
    char name[LLM_PARAM_NAME_MAX];
    llm_qkv made;
    llm_linear *lin[3];
    llm_rng trial;
    size_t start, k;
    llm_status st;
    if (qkv == NULL || ps == NULL || prefix == NULL || rng == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "projections, a parameter list, a prefix and a generator are "
                        "required");
    if ((d_model == 0 || d_k == 0) && d_kv == d_k)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "'%.40s' projects width %zu to width %zu; "
                        "both must be positive", prefix, d_model, d_k);
    if (d_model == 0 || d_k == 0 || d_kv == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "'%.40s' projects width %zu to widths %zu and %zu; all must be "
                        "positive", prefix, d_model, d_k, d_kv);
    st = check_prefix(prefix, stage, err);
    if (st != LLM_OK)
        return st;
    lin[0] = &made.query;
    lin[1] = &made.key;
    lin[2] = &made.value;
    start = ps->count;
    trial = *rng;
    for (k = 0; k < 3 && st == LLM_OK; k++) {
        snprintf(name, sizeof name, "%s.%s", prefix, part[k]);     /* fits: checked */
        st = llm_linear_init(lin[k], ps, name, d_model, k == 0 ? d_k : d_kv, 0, &trial,
                             err);
    }
    if (st != LLM_OK) {
        llm_params_truncate(ps, start);
        return llm_pass(err, st, stage);
    }
    made.d_model = d_model;
    made.d_k = d_k;
    made.d_kv = d_kv;
    *rng = trial;
    *qkv = made;
    return LLM_OK;
}

llm_status llm_qkv_init(llm_qkv *qkv, llm_params *ps, const char *prefix,
                        size_t d_model, size_t d_k, llm_rng *rng, llm_error *err)
{
    return qkv_make(qkv, ps, prefix, d_model, d_k, d_k, rng, "qkv.init", err);
}

llm_status llm_qkv_init_grouped(llm_qkv *qkv, llm_params *ps, const char *prefix,
                                size_t d_model, size_t d_q, size_t d_kv, llm_rng *rng,
                                llm_error *err)
{
    return qkv_make(qkv, ps, prefix, d_model, d_q, d_kv, rng, "qkv.init_grouped", err);
}
/* The weight of projection what sits in ps and is [d_model, width]. */
static llm_status check_weight(const llm_qkv *qkv, const llm_params *ps,
                               const llm_linear *lin, size_t width, const char *what,
                               llm_error *err)
{
    const llm_tensor *w;
    if (lin->weight >= ps->count)
        return llm_fail(err, LLM_ERR_NAME, "qkv.forward",
                        "the %s weight is parameter %zu, but the list has %zu", what,
                        lin->weight, ps->count);
    w = &ps->items[lin->weight].value;
    if (lin->has_bias || lin->d_in != qkv->d_model || lin->d_out != width
        || w->rank != 2 || w->shape[0] != qkv->d_model || w->shape[1] != width)
        return llm_fail(err, LLM_ERR_SHAPE, "qkv.forward",
                        "the %s weight '%s' is not a bias-free [%zu, %zu] projection",
                        what, ps->items[lin->weight].name, qkv->d_model, width);
    return LLM_OK;
}
llm_status llm_qkv_forward(const llm_qkv *qkv, llm_params *ps, llm_tape *tape,
                           llm_var x, llm_var *q, llm_var *k, llm_var *v,
                           llm_error *err)
{
    const llm_tensor *xv;
    llm_var out[3];
    size_t mark;
    llm_status st;
    if (qkv == NULL || ps == NULL || tape == NULL
        || q == NULL || k == NULL || v == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "qkv.forward",
                        "projections, a parameter list, a tape and three outputs are "
                        "required");
    if (q == k || k == v || q == v)
        return llm_fail(err, LLM_ERR_ARGUMENT, "qkv.forward",
                        "q, k and v must be three different variables");
    st = check_weight(qkv, ps, &qkv->query, qkv->d_k, "query", err);
    if (st == LLM_OK)
        st = check_weight(qkv, ps, &qkv->key, qkv->d_kv, "key", err);
    if (st == LLM_OK)
        st = check_weight(qkv, ps, &qkv->value, qkv->d_kv, "value", err);
    if (st == LLM_OK)
        st = llm_tape_value(tape, x, &xv, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "qkv.forward");
    if (xv->rank == 0)
        return llm_fail(err, LLM_ERR_RANK, "qkv.forward",
                        "x is a scalar; the projections need x [..., %zu]",
                        qkv->d_model);
    if (xv->shape[xv->rank - 1] != qkv->d_model)
        return llm_fail(err, LLM_ERR_SHAPE, "qkv.forward",
                        "x has last axis %zu (rank %zu); the projections need %zu",
                        xv->shape[xv->rank - 1], xv->rank, qkv->d_model);
    mark = llm_tape_mark(tape);
    st = llm_linear_forward(&qkv->query, ps, tape, x, &out[0], err);
    if (st == LLM_OK)
        st = llm_linear_forward(&qkv->key, ps, tape, x, &out[1], err);
    if (st == LLM_OK)
        st = llm_linear_forward(&qkv->value, ps, tape, x, &out[2], err);
    if (st != LLM_OK) {
        llm_tape_rewind(tape, mark, NULL);    /* the query and key go too */
        return llm_pass(err, st, "qkv.forward");
    }
    *q = out[0];
    *k = out[1];
    *v = out[2];
    return LLM_OK;
}
llm_status llm_qkv_check(const llm_qkv *qkv, const llm_params *ps, const char *prefix,
                         llm_error *err)
{
    static const char *const part[3] = {"query", "key", "value"};
    const llm_linear *lin[3];
    char name[2 * LLM_PARAM_NAME_MAX];
    size_t k;
    llm_status st = LLM_OK;
    if (qkv == NULL || ps == NULL || prefix == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "qkv.check",
                        "projections, a parameter list and a prefix are required");
    if (qkv->query.d_in != qkv->d_model || qkv->query.d_out != qkv->d_k
        || qkv->key.d_in != qkv->d_model || qkv->key.d_out != qkv->d_kv
        || qkv->value.d_in != qkv->d_model || qkv->value.d_out != qkv->d_kv
        || qkv->query.has_bias || qkv->key.has_bias || qkv->value.has_bias)
        return llm_fail(err, LLM_ERR_SHAPE, "qkv.check",
                        "the projections (D %zu, d_k %zu, d_kv %zu) are not ones "
                        "llm_qkv_init builds", qkv->d_model, qkv->d_k, qkv->d_kv);
    lin[0] = &qkv->query;
    lin[1] = &qkv->key;
    lin[2] = &qkv->value;
    for (k = 0; k < 3 && st == LLM_OK; k++) {
        snprintf(name, sizeof name, "%s.%s", prefix, part[k]);
        st = llm_linear_check(lin[k], ps, name, err);
    }
    return llm_pass(err, st, "qkv.check");
}
