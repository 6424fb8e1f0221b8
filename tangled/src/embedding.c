/* embedding.c -- token embeddings: gather forward, scatter-add backward. */
#include <stdio.h>

#include "llm/nn.h"
#include "tape_op.h"

/* 1 when a and b read the same elements the same way: one buffer, offset,
   shape and strides */
static int same_view(const llm_tensor *a, const llm_tensor *b)
{
    size_t k;
    if (a->data != b->data || a->offset != b->offset || a->rank != b->rank)
        return 0;
    for (k = 0; k < a->rank && k < LLM_MAX_RANK; k++)
        if (a->shape[k] != b->shape[k] || a->stride[k] != b->stride[k])
            return 0;
    return 1;
}

llm_status llm_param_leaf(llm_tape *tape, llm_params *ps, size_t index, llm_var *out,
                          llm_error *err)
{
    llm_param *p;
    size_t k;
    if (tape == NULL || ps == NULL || out == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "param.leaf",
                        "a tape, a parameter list and an output are required");
    if (index >= ps->count)
        return llm_fail(err, LLM_ERR_NAME, "param.leaf",
                        "parameter %zu of a list of %zu", index, ps->count);
    p = &ps->items[index];
    if (tape->epoch != 0 && !tape->released)      /* else llm_tape_leaf refuses */
        for (k = 0; k < tape->nleaves; k++) {   /* the tape's leaves, not its nodes */
            const size_t i = tape->leaves[k];
            const llm_node *n = &tape->nodes[i];
            if (same_view(&n->value, &p->value) &&
                (n->grad == &p->grad || (n->grad == NULL && !p->trainable))) {
                out->id = i;
                out->epoch = tape->epoch;
                return LLM_OK;
            }
        }
    return llm_pass(err, llm_tape_leaf(tape, &p->value, p->trainable ? &p->grad : NULL,
                                       out, err), "param.leaf");
}
llm_status llm_embedding_init(llm_embedding *emb, llm_params *ps, const char *prefix,
                              size_t vocab, size_t width, llm_rng *rng,
                              llm_error *err)
{
    char name[LLM_PARAM_NAME_MAX];
    int n;
    llm_status st;
    if (emb == NULL || ps == NULL || prefix == NULL || rng == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "embedding.init",
                        "a layer, a parameter list, a prefix and a generator are "
                        "required");
    if (vocab == 0 || width == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "embedding.init",
                        "a [%zu, %zu] table has no rows to look up: vocabulary and "
                        "width must be positive", vocab, width);
    n = snprintf(name, sizeof name, "%s.weight", prefix);
    if (n < 0 || (size_t)n >= sizeof name)
        return llm_fail(err, LLM_ERR_NAME, "embedding.init",
                        "'%.20s...' + '.weight' is longer than %d characters",
                        prefix, LLM_PARAM_NAME_MAX - 1);
    st = llm_params_add_xavier(ps, name, vocab, width, rng, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "embedding.init");
    emb->weight = ps->count - 1;
    emb->vocab = vocab;
    emb->width = width;
    return LLM_OK;
}
llm_status llm_embedding_forward(const llm_embedding *emb, llm_params *ps,
                                 llm_tape *tape, const size_t *ids, size_t rank,
                                 const size_t *shape, llm_var *x, llm_error *err)
{
    size_t stride[LLM_MAX_RANK], count, i, mark;
    llm_param *p;
    llm_var table;
    llm_status st;
    if (emb == NULL || ps == NULL || tape == NULL || x == NULL
        || (rank > 0 && shape == NULL))
        return llm_fail(err, LLM_ERR_ARGUMENT, "embedding.forward",
                        "a layer, a parameter list, a tape, the IDs' shape and an "
                        "output handle are required");
    if (emb->weight >= ps->count)
        return llm_fail(err, LLM_ERR_NAME, "embedding.forward",
                        "the table is parameter %zu, the list has %zu", emb->weight,
                        ps->count);
    p = &ps->items[emb->weight];
    if (p->value.rank != 2 || p->value.shape[0] != emb->vocab
        || p->value.shape[1] != emb->width)
        return llm_fail(err, LLM_ERR_SHAPE, "embedding.forward",
                        "parameter %zu ('%s') is not a [%zu, %zu] table", emb->weight,
                        p->name, emb->vocab, emb->width);
    if (rank >= LLM_MAX_RANK)
        return llm_fail(err, LLM_ERR_RANK, "embedding.forward",
                        "IDs of rank %zu leave no room for the feature axis (at most "
                        "%d axes)", rank, LLM_MAX_RANK - 1);
    st = llm_row_major(rank, shape, stride, &count, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "embedding.forward");
    if (ids == NULL && count > 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "embedding.forward",
                        "%zu IDs were promised, none given", count);
    for (i = 0; i < count; i++)
        if (ids[i] >= emb->vocab)
            return llm_fail(err, LLM_ERR_INDEX, "embedding.forward",
                            "ID %zu at position %zu is outside the vocabulary of %zu "
                            "tokens", ids[i], i, emb->vocab);
    mark = llm_tape_mark(tape);
    st = llm_param_leaf(tape, ps, emb->weight, &table, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "embedding.forward");
    st = llm_tape_gather(tape, table, ids, rank, shape, x, err);
    if (st != LLM_OK)
        llm_tape_rewind(tape, mark, NULL);    /* a new leaf goes, a found one stays */
    return llm_pass(err, st, "embedding.forward");
}
llm_status llm_embedding_check(const llm_embedding *emb, const llm_params *ps,
                               const char *prefix, llm_error *err)
{
    char name[2 * LLM_PARAM_NAME_MAX];
    size_t shape[2];
    if (emb == NULL || ps == NULL || prefix == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "embedding.check",
                        "a layer, a parameter list and a prefix are required");
    snprintf(name, sizeof name, "%s.weight", prefix);
    shape[0] = emb->vocab;
    shape[1] = emb->width;
    return llm_pass(err, llm_param_check(ps, emb->weight, name, 2, shape, err),
                    "embedding.check");
}
