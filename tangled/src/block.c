/* block.c -- the pre-norm decoder block. */
#include <math.h>
#include <stdio.h>

#include "llm/model.h"

/* LLM_OK when a block of these sizes can be built. */
static llm_status block_check_config(size_t d_model, size_t n_heads, size_t d_ff,
                                     double eps, const char *stage, llm_error *err)
{
    llm_status st = llm_mha_check_heads(d_model, n_heads, stage, err);
    if (st != LLM_OK)
        return st;
    if (d_ff == 0)
        return llm_fail(err, LLM_ERR_CONFIG, stage, "the feed-forward width d_ff is 0");
    if (!isfinite(eps) || eps < 0)
        return llm_fail(err, LLM_ERR_CONFIG, stage,
                        "eps %g: RMSNorm needs a finite eps >= 0", eps);
    return LLM_OK;
}
llm_status llm_block_init(llm_block *blk, llm_params *ps, const char *prefix,
                          size_t d_model, size_t n_heads, size_t d_ff, double eps,
                          llm_rng *rng, llm_error *err)
{
    const char *stage = "block.init";
    static const char *const part[4] = {"attention_norm", "attention", "ffn_norm",
                                        "ffn"};
    char name[4][80];
    llm_block b;
    llm_rng saved;
    size_t count, i;
    llm_status st;
    if (blk == NULL || ps == NULL || prefix == NULL || rng == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "blk, ps, prefix and rng are required");
    if ((st = block_check_config(d_model, n_heads, d_ff, eps, stage, err)) != LLM_OK)
        return llm_pass(err, st, "block.init");
    for (i = 0; i < 4; i++)
        if (snprintf(name[i], sizeof name[i], "%s.%s", prefix, part[i]) >=
            (int)sizeof name[i])
            return llm_fail(err, LLM_ERR_NAME, stage,
                            "the prefix '%.40s...' is too long", prefix);
    saved = *rng;
    count = ps->count;
    st = llm_rmsnorm_init(&b.attention_norm, ps, name[0], d_model, eps, err);
    if (st == LLM_OK)
        st = llm_mha_init(&b.attention, ps, name[1], d_model, n_heads, rng, err);
    if (st == LLM_OK)
        st = llm_rmsnorm_init(&b.ffn_norm, ps, name[2], d_model, eps, err);
    if (st == LLM_OK)
        st = llm_swiglu_init(&b.ffn, ps, name[3], d_model, d_ff, rng, err);
    if (st != LLM_OK) {
        llm_params_truncate(ps, count);
        *rng = saved;
        return llm_pass(err, st, "block.init");
    }
    *blk = b;
    return LLM_OK;
}
/* LLM_OK when x [B, T, D] at offset .. offset+T-1 can go through blk. */
static llm_status block_check_input(const llm_block *blk, const llm_tape *tape,
                                    const llm_rope *rope, llm_var x, size_t offset,
                                    const char *stage, llm_error *err)
{
    const llm_tensor *t;
    llm_error why;
    size_t d = blk->attention.d_model;
    char buf[96];
    if (rope->head_dim != blk->attention.head_dim)
        return llm_fail(err, LLM_ERR_CONFIG, stage,
                        "the rope turns heads of width %zu, the block's heads are "
                        "%zu wide", rope->head_dim, blk->attention.head_dim);
    if (llm_tape_value(tape, x, &t, &why) != LLM_OK)
        return llm_fail_from(err, &why, stage, "x: %s", why.message);
    if (t->rank != 3)
        return llm_fail(err, LLM_ERR_RANK, stage,
                        "x has shape %s; a block needs [B, T, %zu]",
                        llm_fmt_sizes(buf, sizeof buf, t->shape, t->rank), d);
    if (t->shape[2] != d)
        return llm_fail(err, LLM_ERR_SHAPE, stage,
                        "x has shape %s; the block's rows are %zu wide",
                        llm_fmt_sizes(buf, sizeof buf, t->shape, t->rank), d);
    if (t->shape[1] > 0
        && (offset >= rope->capacity || t->shape[1] > rope->capacity - offset))
        return llm_fail(err, LLM_ERR_INDEX, stage,
                        "%zu positions from %zu do not fit a context of %zu positions "
                        "(0..%zu)", t->shape[1], offset, rope->capacity,
                        rope->capacity - 1);
    return LLM_OK;
}
llm_status llm_block_forward(const llm_block *blk, llm_params *ps, llm_tape *tape,
                             const llm_rope *rope, llm_var x, size_t offset,
                             llm_block_trace *trace, llm_var *y, llm_error *err)
{
    const char *stage = "block.forward";
    llm_block_trace r;
    llm_var out;
    size_t mark;
    llm_status st;
    if (blk == NULL || ps == NULL || tape == NULL || rope == NULL || y == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "blk, ps, tape, rope and y are required");
    if ((st = block_check_input(blk, tape, rope, x, offset, stage, err)) != LLM_OK)
        return llm_pass(err, st, "block.forward");
    mark = llm_tape_mark(tape);
    st = llm_rmsnorm_forward(&blk->attention_norm, ps, tape, x, &r.attention_in, err);
    if (st == LLM_OK)
        st = llm_mha_forward(&blk->attention, ps, tape, rope, r.attention_in, offset,
                             &r.attention_detail, &r.attention_out, err);
    if (st == LLM_OK)
        st = llm_residual_add(tape, x, r.attention_out, &r.mid, err);
    if (st == LLM_OK)
        st = llm_rmsnorm_forward(&blk->ffn_norm, ps, tape, r.mid, &r.ffn_in, err);
    if (st == LLM_OK)
        st = llm_swiglu_forward(&blk->ffn, ps, tape, r.ffn_in, &r.ffn_out, err);
    if (st == LLM_OK)
        st = llm_residual_add(tape, r.mid, r.ffn_out, &out, err);
    if (st != LLM_OK) {
        llm_tape_rewind(tape, mark, NULL);    /* the stages before the failure go */
        return llm_pass(err, st, "block.forward");
    }
    if (trace != NULL)
        *trace = r;
    *y = out;
    return LLM_OK;
}
llm_status llm_block_check(const llm_block *blk, const llm_params *ps,
                           const char *prefix, llm_error *err)
{
    char name[2 * LLM_PARAM_NAME_MAX];
    llm_status st;
    if (blk == NULL || ps == NULL || prefix == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "block.check",
                        "a block, a parameter list and a prefix are required");
    snprintf(name, sizeof name, "%s.attention_norm", prefix);
    st = llm_rmsnorm_check(&blk->attention_norm, ps, name, err);
    snprintf(name, sizeof name, "%s.attention", prefix);
    if (st == LLM_OK)
        st = llm_mha_check(&blk->attention, ps, name, err);
    snprintf(name, sizeof name, "%s.ffn_norm", prefix);
    if (st == LLM_OK)
        st = llm_rmsnorm_check(&blk->ffn_norm, ps, name, err);
    snprintf(name, sizeof name, "%s.ffn", prefix);
    if (st == LLM_OK)
        st = llm_swiglu_check(&blk->ffn, ps, name, err);
    return llm_pass(err, st, "block.check");
}
