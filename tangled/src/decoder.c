/* decoder.c -- embedding, blocks, final norm and the tied head. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/model.h"

static llm_status config_check(const llm_decoder_config *c, const char *stage,
                               llm_error *err)
{
    llm_status st;
    if (c->vocab == 0 || c->d_model == 0 || c->n_heads == 0 || c->d_ff == 0 ||
        c->context == 0)
        return llm_fail(err, LLM_ERR_CONFIG, stage,
                        "vocab %zu, d_model %zu, n_heads %zu, d_ff %zu and context %zu "
                        "must all be positive", c->vocab, c->d_model, c->n_heads,
                        c->d_ff, c->context);
    if ((st = llm_mha_check_heads(c->d_model, c->n_heads, stage, err)) != LLM_OK)
        return st;
    if (!isfinite(c->rope_base) || c->rope_base <= 0)
        return llm_fail(err, LLM_ERR_CONFIG, stage,
                        "the RoPE base must be finite and positive");
    if (!isfinite(c->eps) || c->eps < 0)
        return llm_fail(err, LLM_ERR_CONFIG, stage, "eps must be finite and >= 0");
    if (c->untied_head != 0 && c->untied_head != 1)
        return llm_fail(err, LLM_ERR_CONFIG, stage,
                        "untied_head is 0 (the tied head) or 1, not %d",
                        c->untied_head);
    return LLM_OK;
}
llm_status llm_decoder_init(llm_decoder *dec, llm_params *ps,
                            const llm_decoder_config *cfg, llm_rng *rng, llm_error *err)
{
    const char *stage = "decoder.init";
    llm_decoder d;
    llm_rng saved;
    size_t l;
    char name[64];
    llm_status st;
    if (dec == NULL || ps == NULL || cfg == NULL || rng == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "dec, ps, cfg and rng are required");
    if (ps->count != 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "the parameter list must be empty; it holds %zu", ps->count);
    if ((st = config_check(cfg, stage, err)) != LLM_OK)
        return llm_pass(err, st, "decoder.init");
    memset(&d, 0, sizeof d);
    d.config = *cfg;
    if (cfg->n_layers > 0) {
        d.blocks = llm_calloc(cfg->n_layers, sizeof d.blocks[0]);
        if (d.blocks == NULL)
            return llm_fail(err, LLM_ERR_ALLOC, stage, "no room for %zu blocks",
                            cfg->n_layers);
    }
    saved = *rng;
    st = llm_rope_init(&d.rope, cfg->d_model / cfg->n_heads, cfg->rope_base,
                       cfg->context, LLM_ROPE_ADJACENT, err);
    if (st == LLM_OK)
        st = llm_embedding_init(&d.embedding, ps, "token_embedding", cfg->vocab,
                                cfg->d_model, rng, err);
    for (l = 0; st == LLM_OK && l < cfg->n_layers; l++) {
        snprintf(name, sizeof name, "blocks.%zu", l);
        st = llm_block_init(&d.blocks[l], ps, name, cfg->d_model, cfg->n_heads,
                            cfg->d_ff, cfg->eps, rng, err);
    }
    if (st == LLM_OK)
        st = llm_rmsnorm_init(&d.final_norm, ps, "final_norm", cfg->d_model, cfg->eps,
                              err);
    if (st == LLM_OK && cfg->untied_head)  /* drawn last: a tied model's bits stay */
        st = llm_linear_init(&d.head, ps, "output", cfg->d_model, cfg->vocab, 0, rng,
                             err);
    if (st != LLM_OK) {
        llm_params_truncate(ps, 0);
        llm_rope_free(&d.rope);
        free(d.blocks);
        *rng = saved;
        return llm_pass(err, st, "decoder.init");
    }
    *dec = d;
    return LLM_OK;
}

void llm_decoder_free(llm_decoder *dec)
{
    if (dec == NULL)
        return;
    free(dec->blocks);
    llm_rope_free(&dec->rope);
    memset(dec, 0, sizeof *dec);
}
static llm_status params_check(const llm_decoder *dec, const llm_params *ps,
                               const char *stage, llm_error *err)
{
    const llm_decoder_config *c = &dec->config;
    const size_t want = 2 + 9 * c->n_layers + (c->untied_head ? 1 : 0);
    char name[32];
    size_t l;
    llm_status st;
    if (ps->count != want)
        return llm_fail(err, LLM_ERR_NAME, stage,
                        "the list holds %zu tensors; the configuration has %zu",
                        ps->count, want);
    st = llm_embedding_check(&dec->embedding, ps, "token_embedding", err);
    for (l = 0; st == LLM_OK && l < c->n_layers; l++) {
        snprintf(name, sizeof name, "blocks.%zu", l);
        st = llm_block_check(&dec->blocks[l], ps, name, err);
    }
    if (st == LLM_OK)
        st = llm_rmsnorm_check(&dec->final_norm, ps, "final_norm", err);
    if (st == LLM_OK && c->untied_head)
        st = llm_linear_check(&dec->head, ps, "output", err);
    return st;
}
static llm_status inputs_check(const llm_decoder *dec, const llm_params *ps,
                               const size_t *ids, size_t batch, size_t T, size_t offset,
                               const char *stage, llm_error *err)
{
    const llm_decoder_config *c = &dec->config;
    size_t i, n;
    if (batch == 0 || T == 0)
        return llm_fail(err, LLM_ERR_EMPTY, stage,
                        "a batch of %zu sequences of %zu tokens is empty", batch, T);
    if (ids == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "no token IDs");
    if (offset >= c->context || T > c->context - offset)
        return llm_fail(err, LLM_ERR_INDEX, stage,
                        "%zu tokens from position %zu do not fit a context of %zu", T,
                        offset, c->context);
    if (batch > SIZE_MAX / T)
        return llm_fail(err, LLM_ERR_OVERFLOW, stage, "%zu sequences of %zu tokens",
                        batch, T);
    n = batch * T;
    for (i = 0; i < n; i++)
        if (ids[i] >= c->vocab)
            return llm_fail(err, LLM_ERR_INDEX, stage,
                            "token ID %zu at [%zu, %zu] is outside the vocabulary "
                            "of %zu", ids[i], i / T, i % T, c->vocab);
    return params_check(dec, ps, stage, err);
}
llm_status llm_decoder_forward(const llm_decoder *dec, llm_params *ps, llm_tape *tape,
                               const size_t *ids, size_t batch, size_t T, size_t offset,
                               llm_var *hidden, llm_var *logits, llm_error *err)
{
    const char *stage = "decoder.forward";
    const size_t shape[2] = {batch, T};
    llm_var x, table, out, *h = NULL;
    size_t l, L, mark;
    llm_status st;
    if (dec == NULL || ps == NULL || tape == NULL || logits == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "dec, ps, tape and logits are required");
    if ((st = inputs_check(dec, ps, ids, batch, T, offset, stage, err)) != LLM_OK)
        return llm_pass(err, st, "decoder.forward");
    L = dec->config.n_layers;
    if (hidden != NULL && (h = llm_malloc((L + 2) * sizeof *h)) == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, stage, "no room for %zu handles", L + 2);
    mark = llm_tape_mark(tape);
    st = llm_embedding_forward(&dec->embedding, ps, tape, ids, 2, shape, &x, err);
    if (st == LLM_OK && h != NULL)
        h[0] = x;
    for (l = 0; st == LLM_OK && l < L; l++) {
        st = llm_block_forward(&dec->blocks[l], ps, tape, &dec->rope, x, offset, NULL,
                               &x, err);
        if (st == LLM_OK && h != NULL)
            h[l + 1] = x;
    }
    if (st == LLM_OK)
        st = llm_rmsnorm_forward(&dec->final_norm, ps, tape, x, &x, err);
    if (st == LLM_OK && h != NULL)
        h[L + 1] = x;
    if (st == LLM_OK && dec->config.untied_head)     /* [B, T, D] x [D, V] */
        st = llm_linear_forward(&dec->head, ps, tape, x, &out, err);
    else if (st == LLM_OK)   /* the same leaf the lookup read: one table, no copy */
        st = llm_param_leaf(tape, ps, dec->embedding.weight, &table, err);
    if (st == LLM_OK && !dec->config.untied_head)   /* [B, T, D] x [V, D]^T -> [B, T, V] */
        st = llm_tape_matmul(tape, x, table, 0, 1, &out, err);
    if (st == LLM_OK && h != NULL)
        memcpy(hidden, h, (L + 2) * sizeof *h);
    free(h);
    if (st != LLM_OK) {
        llm_tape_rewind(tape, mark, NULL);    /* every layer recorded so far goes */
        return llm_pass(err, st, "decoder.forward");
    }
    *logits = out;
    return LLM_OK;
}
llm_status llm_decoder_loss(const llm_decoder *dec, llm_params *ps, llm_tape *tape,
                            const size_t *ids, const size_t *targets, size_t batch,
                            size_t T, llm_var *logits, llm_var *loss, llm_error *err)
{
    const char *stage = "decoder.loss";
    llm_var z, l;
    size_t i, mark;
    llm_status st;
    if (dec == NULL || ps == NULL || tape == NULL || loss == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "dec, ps, tape and loss are required");
    if ((st = inputs_check(dec, ps, ids, batch, T, 0, stage, err)) != LLM_OK)
        return llm_pass(err, st, "decoder.loss");
    if (targets == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "no targets");
    for (i = 0; i < batch * T; i++)
        if (targets[i] >= dec->config.vocab)
            return llm_fail(err, LLM_ERR_TARGET, stage,
                            "target %zu at [%zu, %zu] is outside the vocabulary of %zu",
                            targets[i], i / T, i % T, dec->config.vocab);
    mark = llm_tape_mark(tape);
    st = llm_decoder_forward(dec, ps, tape, ids, batch, T, 0, NULL, &z, err);
    if (st == LLM_OK)
        st = llm_tape_nll_mean(tape, z, targets, batch * T, &l, err);
    if (st != LLM_OK) {
        llm_tape_rewind(tape, mark, NULL);    /* the forward pass goes too */
        return llm_pass(err, st, "decoder.loss");
    }
    if (logits != NULL)
        *logits = z;
    *loss = l;
    return LLM_OK;
}
