/* mha.c -- multi-head causal attention with rotary positions. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/attention.h"

/* *t = the value of x, or a refusal under stage naming the operand. */
static llm_status tape_operand(const llm_tape *tape, llm_var x, const char *what,
                               const char *stage, const llm_tensor **t, llm_error *err)
{
    llm_error inner;
    llm_status st = llm_tape_value(tape, x, t, &inner);
    if (st != LLM_OK)
        return llm_fail(err, st, stage, "%s: %s", what, inner.message);
    return LLM_OK;
}
llm_status llm_mha_check_heads(size_t d_model, size_t n_heads, const char *stage,
                               llm_error *err)
{
    if (d_model == 0 || n_heads == 0)
        return llm_fail(err, LLM_ERR_CONFIG, stage,
                        "d_model %zu and n_heads %zu must both be positive", d_model,
                        n_heads);
    if (d_model % n_heads != 0)
        return llm_fail(err, LLM_ERR_CONFIG, stage,
                        "%zu heads do not divide d_model %zu", n_heads, d_model);
    if ((d_model / n_heads) % 2 != 0)
        return llm_fail(err, LLM_ERR_CONFIG, stage,
                        "head width %zu = %zu / %zu is odd: RoPE turns pairs",
                        d_model / n_heads, d_model, n_heads);
    return LLM_OK;
}
llm_status llm_mha_init(llm_mha *mha, llm_params *ps, const char *prefix,
                        size_t d_model, size_t n_heads, llm_rng *rng, llm_error *err)
{
    const char *stage = "mha.init";
    llm_mha m;
    llm_rng saved;
    size_t count;
    char name[80];
    llm_status st;
    if (mha == NULL || ps == NULL || prefix == NULL || rng == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "mha, ps, prefix and rng are required");
    if ((st = llm_mha_check_heads(d_model, n_heads, stage, err)) != LLM_OK)
        return llm_pass(err, st, "mha.init");
    if (snprintf(name, sizeof name, "%s.output", prefix) >= (int)sizeof name)
        return llm_fail(err, LLM_ERR_NAME, stage, "the prefix '%.40s...' is too long",
                        prefix);
    m.d_model = d_model;
    m.n_heads = n_heads;
    m.head_dim = d_model / n_heads;
    saved = *rng;
    count = ps->count;
    st = llm_qkv_init(&m.qkv, ps, prefix, d_model, d_model, rng, err);
    if (st == LLM_OK)
        st = llm_linear_init(&m.output, ps, name, d_model, d_model, 0, rng, err);
    if (st != LLM_OK) {
        llm_params_truncate(ps, count);
        *rng = saved;
        return llm_pass(err, st, "mha.init");
    }
    *mha = m;
    return LLM_OK;
}
llm_status llm_mha_split_heads(llm_tape *tape, llm_var x, size_t n_heads, llm_var *out,
                               llm_error *err)
{
    const char *stage = "mha.split_heads";
    const llm_tensor *t;
    size_t shape[4], mark;
    llm_var r;
    llm_status st;
    if (tape == NULL || out == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "tape and out are required");
    if ((st = tape_operand(tape, x, "x", stage, &t, err)) != LLM_OK)
        return llm_pass(err, st, "mha.split_heads");
    if (t->rank != 3)
        return llm_fail(err, LLM_ERR_RANK, stage,
                        "x must be [B, T, D], not of rank %zu", t->rank);
    if (n_heads == 0 || t->shape[2] % n_heads != 0)
        return llm_fail(err, LLM_ERR_CONFIG, stage,
                        "%zu heads do not divide the width %zu", n_heads, t->shape[2]);
    shape[0] = t->shape[0];
    shape[1] = t->shape[1];
    shape[2] = n_heads;
    shape[3] = t->shape[2] / n_heads;
    mark = llm_tape_mark(tape);
    st = llm_tape_reshape(tape, x, 4, shape, &r, err);
    if (st == LLM_OK)
        st = llm_tape_transpose(tape, r, 1, 2, &r, err);
    if (st == LLM_OK)
        *out = r;
    else
        llm_tape_rewind(tape, mark, NULL);
    return llm_pass(err, st, "mha.split_heads");
}

llm_status llm_mha_merge_heads(llm_tape *tape, llm_var x, llm_var *out, llm_error *err)
{
    const char *stage = "mha.merge_heads";
    const llm_tensor *t;
    size_t shape[3], mark;
    llm_var r;
    llm_status st;
    if (tape == NULL || out == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "tape and out are required");
    if ((st = tape_operand(tape, x, "x", stage, &t, err)) != LLM_OK)
        return llm_pass(err, st, "mha.merge_heads");
    if (t->rank != 4)
        return llm_fail(err, LLM_ERR_RANK, stage,
                        "x must be [B, H, T, dh], not of rank %zu", t->rank);
    if (t->shape[3] != 0 && t->shape[1] > SIZE_MAX / t->shape[3])
        return llm_fail(err, LLM_ERR_OVERFLOW, stage, "%zu heads of width %zu overflow",
                        t->shape[1], t->shape[3]);
    shape[0] = t->shape[0];
    shape[1] = t->shape[2];
    shape[2] = t->shape[1] * t->shape[3];
    mark = llm_tape_mark(tape);
    st = llm_tape_transpose(tape, x, 1, 2, &r, err);
    if (st == LLM_OK)
        st = llm_tape_reshape(tape, r, 3, shape, &r, err);
    if (st == LLM_OK)
        *out = r;
    else
        llm_tape_rewind(tape, mark, NULL);
    return llm_pass(err, st, "mha.merge_heads");
}
llm_status llm_mha_forward(const llm_mha *mha, llm_params *ps, llm_tape *tape,
                           const llm_rope *rope, llm_var x, size_t offset,
                           llm_mha_trace *trace, llm_var *y, llm_error *err)
{
    const char *stage = "mha.forward";
    const llm_tensor *t;
    llm_mha_trace r;
    llm_var q, k, v, out;
    size_t n, mark;
    llm_status st;
    if (mha == NULL || ps == NULL || tape == NULL || rope == NULL || y == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "mha, ps, tape, rope and y are required");
    if (mha->n_heads == 0 || mha->head_dim % 2 != 0 || mha->head_dim == 0
        || mha->d_model / mha->n_heads != mha->head_dim || mha->d_model % mha->n_heads != 0
        || mha->qkv.d_model != mha->d_model || mha->qkv.d_k != mha->d_model
        || mha->qkv.d_kv != mha->d_model
        || mha->output.d_in != mha->d_model || mha->output.d_out != mha->d_model)
        return llm_fail(err, LLM_ERR_CONFIG, stage,
                        "the layer (D %zu, %zu heads of width %zu) is not one llm_mha_init "
                        "builds", mha->d_model, mha->n_heads, mha->head_dim);
    if (rope->head_dim != mha->head_dim)
        return llm_fail(err, LLM_ERR_CONFIG, stage,
                        "the rope turns heads of width %zu, the layer's are %zu wide",
                        rope->head_dim, mha->head_dim);
    if ((st = tape_operand(tape, x, "x", stage, &t, err)) != LLM_OK)
        return st;
    if (t->rank != 3)
        return llm_fail(err, LLM_ERR_RANK, stage, "x must be [B, T, D], not of rank %zu",
                        t->rank);
    if (t->shape[2] != mha->d_model)
        return llm_fail(err, LLM_ERR_SHAPE, stage,
                        "rows of width %zu, the layer's D is %zu", t->shape[2],
                        mha->d_model);
    n = t->shape[1];
    if (n == 0)
        return llm_fail(err, LLM_ERR_EMPTY, stage, "no tokens: a causal row needs a key");
    if (offset >= rope->capacity || n > rope->capacity - offset)
        return llm_fail(err, LLM_ERR_INDEX, stage,
                        "%zu positions from %zu do not fit a context of %zu positions", n,
                        offset, rope->capacity);
    if (mha->output.weight >= ps->count)
        return llm_fail(err, LLM_ERR_NAME, stage,
                        "the output weight's position %zu is not in a list of %zu",
                        mha->output.weight, ps->count);
    t = &ps->items[mha->output.weight].value;
    if (t->rank != 2 || t->shape[0] != mha->d_model || t->shape[1] != mha->d_model)
        return llm_fail(err, LLM_ERR_SHAPE, stage, "the output weight is not [%zu, %zu]",
                        mha->d_model, mha->d_model);
    mark = llm_tape_mark(tape);
    st = llm_qkv_forward(&mha->qkv, ps, tape, x, &q, &k, &v, err);
    if (st == LLM_OK)
        st = llm_mha_split_heads(tape, q, mha->n_heads, &r.q, err);
    if (st == LLM_OK)
        st = llm_mha_split_heads(tape, k, mha->n_heads, &r.k, err);
    if (st == LLM_OK)
        st = llm_mha_split_heads(tape, v, mha->n_heads, &r.v, err);
    if (st == LLM_OK)
        st = llm_tape_rope(tape, rope, r.q, offset, &r.q_rot, err);
    if (st == LLM_OK)
        st = llm_tape_rope(tape, rope, r.k, offset, &r.k_rot, err);
    if (st == LLM_OK)
        st = llm_tape_causal_attention(tape, r.q_rot, r.k_rot, r.v, &r.weights,
                                       &r.heads, err);
    if (st == LLM_OK)
        st = llm_mha_merge_heads(tape, r.heads, &r.concat, err);
    if (st == LLM_OK)
        st = llm_linear_forward(&mha->output, ps, tape, r.concat, &out, err);
    if (st != LLM_OK) {
        llm_tape_rewind(tape, mark, NULL);    /* no handle of this call escaped */
        return llm_pass(err, st, "mha.forward");
    }
    if (trace != NULL)
        *trace = r;
    *y = out;
    return LLM_OK;
}
llm_status llm_mha_check(const llm_mha *mha, const llm_params *ps, const char *prefix,
                         llm_error *err)
{
    char name[2 * LLM_PARAM_NAME_MAX];
    llm_status st;
    if (mha == NULL || ps == NULL || prefix == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "mha.check",
                        "a layer, a parameter list and a prefix are required");
    if (mha->n_heads == 0 || mha->head_dim == 0 || mha->head_dim % 2 != 0
        || mha->d_model % mha->n_heads != 0
        || mha->d_model / mha->n_heads != mha->head_dim
        || mha->qkv.d_model != mha->d_model || mha->qkv.d_k != mha->d_model
        || mha->qkv.d_kv != mha->d_model || mha->output.has_bias
        || mha->output.d_in != mha->d_model || mha->output.d_out != mha->d_model)
        return llm_fail(err, LLM_ERR_CONFIG, "mha.check",
                        "the layer (D %zu, %zu heads of width %zu) is not one "
                        "llm_mha_init builds", mha->d_model, mha->n_heads,
                        mha->head_dim);
    st = llm_qkv_check(&mha->qkv, ps, prefix, err);
    snprintf(name, sizeof name, "%s.output", prefix);
    if (st == LLM_OK)
        st = llm_linear_check(&mha->output, ps, name, err);
    return llm_pass(err, st, "mha.check");
}
