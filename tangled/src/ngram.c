/* ngram.c -- the neural n-gram: C embeddings side by side, SwiGLU, an
   output matrix; and its greedy continuation of a prompt. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/model.h"
#include "llm/tokenizer.h"

static llm_status ngram_config_check(const llm_ngram_config *c, const char *stage,
                                     llm_error *err)
{
    if (c->vocab == 0 || c->context == 0 || c->width == 0 || c->d_ff == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "vocab %zu, context %zu, width %zu and d_ff %zu must all be positive",
                        c->vocab, c->context, c->width, c->d_ff);
    if (c->context > SIZE_MAX / c->width)
        return llm_fail(err, LLM_ERR_OVERFLOW, stage,
                        "context %zu times width %zu overflows size_t", c->context, c->width);
    return LLM_OK;
}
llm_status llm_ngram_init(llm_ngram *m, llm_params *ps, const llm_ngram_config *cfg,
                          llm_rng *rng, llm_error *err)
{
    const char *stage = "ngram.init";
    llm_ngram g;
    llm_rng saved;
    llm_status st;
    if (m == NULL || ps == NULL || cfg == NULL || rng == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "m, ps, cfg and rng are required");
    if (ps->count != 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "the parameter list must be empty; it holds %zu", ps->count);
    if ((st = ngram_config_check(cfg, stage, err)) != LLM_OK)
        return st;
    memset(&g, 0, sizeof g);
    g.config = *cfg;
    saved = *rng;
    st = llm_embedding_init(&g.embedding, ps, "token_embedding", cfg->vocab, cfg->width, rng,
                            err);
    if (st == LLM_OK)
        st = llm_swiglu_init(&g.ffn, ps, "ffn", cfg->context * cfg->width, cfg->d_ff, rng, err);
    if (st == LLM_OK)
        st = llm_linear_init(&g.head, ps, "output", cfg->context * cfg->width, cfg->vocab, 0,
                             rng, err);
    if (st != LLM_OK) {
        llm_params_truncate(ps, 0);
        *rng = saved;
        return llm_pass(err, st, stage);
    }
    *m = g;
    return LLM_OK;
}
/* The model's layers agree with its configuration and ps holds their five
   tensors, and nothing else, where the layers say. */
static llm_status ngram_params_check(const llm_ngram *m, const llm_params *ps,
                                     const char *stage, llm_error *err)
{
    const llm_ngram_config *c = &m->config;
    const size_t cd = c->context * c->width;
    llm_status st;
    if (m->embedding.vocab != c->vocab || m->embedding.width != c->width
        || m->ffn.d_model != cd || m->ffn.d_ff != c->d_ff || m->head.d_in != cd
        || m->head.d_out != c->vocab || m->head.has_bias != 0)
        return llm_fail(err, LLM_ERR_SHAPE, stage,
                        "the model's layers do not match its configuration");
    if (ps->count != 5)
        return llm_fail(err, LLM_ERR_NAME, stage,
                        "an n-gram has 5 tensors; the list holds %zu", ps->count);
    if ((st = llm_embedding_check(&m->embedding, ps, "token_embedding", err)) != LLM_OK
        || (st = llm_swiglu_check(&m->ffn, ps, "ffn", err)) != LLM_OK
        || (st = llm_linear_check(&m->head, ps, "output", err)) != LLM_OK)
        return llm_pass(err, st, stage);
    return LLM_OK;
}
/* Every input of a forward pass, checked before anything is recorded. */
static llm_status ngram_inputs_check(const llm_ngram *m, llm_params *ps, llm_tape *tape,
                                     const size_t *ids, size_t batch, const char *stage,
                                     llm_error *err)
{
    size_t i, C;
    llm_status st;
    if (m == NULL || ps == NULL || tape == NULL || ids == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "m, ps, tape and ids are required");
    if ((st = ngram_config_check(&m->config, stage, err)) != LLM_OK)
        return st;
    C = m->config.context;
    if (batch == 0)
        return llm_fail(err, LLM_ERR_EMPTY, stage, "a batch holds at least one context");
    if (batch > SIZE_MAX / C)
        return llm_fail(err, LLM_ERR_OVERFLOW, stage,
                        "%zu contexts of %zu IDs overflow size_t", batch, C);
    for (i = 0; i < batch * C; i++)
        if (ids[i] >= m->config.vocab)
            return llm_fail(err, LLM_ERR_TOKEN, stage,
                            "ID %zu at row %zu, position %zu is not below the vocabulary %zu",
                            ids[i], i / C, i % C, m->config.vocab);
    return ngram_params_check(m, ps, stage, err);
}

llm_status llm_ngram_forward(const llm_ngram *m, llm_params *ps, llm_tape *tape,
                             const size_t *ids, size_t batch, llm_var *hidden,
                             llm_var *logits, llm_error *err)
{
    const char *stage = "ngram.forward";
    llm_var x, row, h, out;
    size_t mark, shape[2];
    llm_status st;
    if (logits == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "logits is required");
    if ((st = ngram_inputs_check(m, ps, tape, ids, batch, stage, err)) != LLM_OK)
        return st;
    mark = llm_tape_mark(tape);
    shape[0] = batch;
    shape[1] = m->config.context;
    st = llm_embedding_forward(&m->embedding, ps, tape, ids, 2, shape, &x, err);
    shape[1] = m->config.context * m->config.width;  /* [B, C, D] -> [B, C D] */
    if (st == LLM_OK)
        st = llm_tape_reshape(tape, x, 2, shape, &row, err);
    if (st == LLM_OK)
        st = llm_swiglu_forward(&m->ffn, ps, tape, row, &h, err);
    if (st == LLM_OK)
        st = llm_linear_forward(&m->head, ps, tape, h, &out, err);
    if (st != LLM_OK) {
        (void)llm_tape_rewind(tape, mark, NULL);
        return llm_pass(err, st, stage);
    }
    if (hidden != NULL) {
        hidden[0] = x;
        hidden[1] = row;
        hidden[2] = h;
    }
    *logits = out;
    return LLM_OK;
}
llm_status llm_ngram_loss(const llm_ngram *m, llm_params *ps, llm_tape *tape,
                          const size_t *ids, const size_t *targets, size_t batch,
                          llm_var *logits, llm_var *loss, llm_error *err)
{
    const char *stage = "ngram.loss";
    llm_var out, value;
    size_t b, mark;
    llm_status st;
    if (loss == NULL || targets == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "targets and loss are required");
    if ((st = ngram_inputs_check(m, ps, tape, ids, batch, stage, err)) != LLM_OK)
        return st;
    for (b = 0; b < batch; b++)
        if (targets[b] >= m->config.vocab)
            return llm_fail(err, LLM_ERR_TARGET, stage,
                            "target %zu of row %zu is not below the vocabulary %zu",
                            targets[b], b, m->config.vocab);
    mark = llm_tape_mark(tape);
    st = llm_ngram_forward(m, ps, tape, ids, batch, NULL, &out, err);
    if (st == LLM_OK && (st = llm_tape_nll_mean(tape, out, targets, batch, &value, err))
                            != LLM_OK)
        (void)llm_tape_rewind(tape, mark, NULL);
    if (st != LLM_OK)
        return llm_pass(err, st, stage);
    if (logits != NULL)
        *logits = out;
    *loss = value;
    return LLM_OK;
}
/* The ID of the largest of the V logits in row 0 of v; the first on a tie. */
static size_t ngram_argmax(const llm_tensor *v, size_t V)
{
    const double *row = v->data + v->offset;
    size_t i, best = 0;
    for (i = 1; i < V; i++)
        if (row[i * v->stride[1]] > row[best * v->stride[1]])
            best = i;
    return best;
}

llm_status llm_ngram_greedy(const llm_ngram *m, llm_params *ps, llm_tape *tape,
                            const size_t *prompt, size_t n, size_t max_new,
                            size_t *out, size_t cap, size_t *count, llm_error *err)
{
    const char *stage = "ngram.greedy";
    const llm_tensor *v;
    llm_var logits;
    size_t *ids, *ctx, total, k, j, i, mark, C;
    llm_status st = LLM_OK;
    if (m == NULL || ps == NULL || tape == NULL || count == NULL
        || (prompt == NULL && n > 0) || (out == NULL && max_new > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    if ((st = ngram_config_check(&m->config, stage, err)) != LLM_OK
        || (st = ngram_params_check(m, ps, stage, err)) != LLM_OK)
        return st;
    if (max_new > cap)
        return llm_fail(err, LLM_ERR_LENGTH, stage,
                        "up to %zu new IDs, and room for %zu", max_new, cap);
    for (i = 0; i < n; i++)
        if (prompt[i] >= m->config.vocab)
            return llm_fail(err, LLM_ERR_TOKEN, stage,
                            "prompt ID %zu at position %zu is not below the vocabulary %zu",
                            prompt[i], i, m->config.vocab);
    if (n >= SIZE_MAX / sizeof *ids - max_new)
        return llm_fail(err, LLM_ERR_OVERFLOW, stage, "a prompt of %zu IDs and %zu more",
                        n, max_new);
    C = m->config.context;
    ids = llm_malloc((n + max_new + 1) * sizeof *ids);
    ctx = llm_malloc(C * sizeof *ctx);
    if (ids == NULL || ctx == NULL) {
        free(ids);
        free(ctx);
        return llm_fail(err, LLM_ERR_ALLOC, stage, "no room for %zu IDs", n + max_new);
    }
    for (i = 0; i < n; i++)
        ids[i] = prompt[i];
    total = n;
    mark = llm_tape_mark(tape);
    for (k = 0; st == LLM_OK && k < max_new; k++) {
        for (j = 0; j < C; j++)        /* position total - C + j, BOS before 0 */
            ctx[j] = total + j >= C ? ids[total + j - C] : LLM_BOS;
        st = llm_ngram_forward(m, ps, tape, ctx, 1, NULL, &logits, err);
        if (st == LLM_OK && (st = llm_tape_value(tape, logits, &v, err)) == LLM_OK) {
            ids[total++] = ngram_argmax(v, m->config.vocab);
            st = llm_tape_rewind(tape, mark, err);
        }
        if (st == LLM_OK && ids[total - 1] == LLM_EOS)
            break;
    }
    if (st == LLM_OK) {
        for (i = n; i < total; i++)
            out[i - n] = ids[i];
        *count = total - n;
    } else {
        (void)llm_tape_rewind(tape, mark, NULL);
    }
    free(ids);
    free(ctx);
    return llm_pass(err, st, stage);
}
