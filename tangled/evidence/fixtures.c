/* evidence/fixtures.c -- the seed-33 fixture and the comparisons of
   llm/fixtures.h. */
#include <string.h>

#include "llm/fixtures.h"

const llm_decoder_config llm_fix33_model = {5, 4, 2, 4, 1, 2, 10000.0, 1e-6, 0};
const llm_adamw_config llm_fix33_adamw = {0.9, 0.999, 1e-8, 0.01};
const uint64_t llm_fix33_seed = 33;
static const size_t train_a[12] = {0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1},
                    train_b[12] = {2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3},
                    val_a[9] = {0, 1, 2, 3, 4, 0, 1, 2, 3},
                    val_b[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
const llm_doc llm_fix33_train_docs[2] = {{train_a, 12}, {train_b, 12}},
              llm_fix33_val_docs[2] = {{val_a, 9}, {val_b, 9}};
const llm_train_docs llm_fix33_train = {llm_fix33_train_docs, 2, LLM_TRAIN},
                     llm_fix33_validation = {llm_fix33_val_docs, 2, LLM_VALIDATION};
const double llm_fix33_rates[8] = {0.04, 0.04, 0.025, 0.025, 0.015, 0.015, 0.008, 0.008};
const llm_train_config llm_fix33_plan = {8, 2, 1, 2, 33, 5, 4, 2, {llm_fix33_rates, 8}, 0.35};

static void release_decoder(void *dec)
{
    llm_decoder_free(dec);
}

static void release_adamw(void *opt)
{
    llm_adamw_free(opt);
}

int llm_own_fix33(llm_demo *d, llm_fix33 *f)
{
    llm_rng rng;
    llm_rng_seed(&rng, llm_fix33_seed);
    f->ps = llm_own_params(d);
    f->dec = llm_own(d, sizeof *f->dec, release_decoder);
    f->opt = llm_own(d, sizeof *f->opt, release_adamw);
    return f->ps != NULL && f->dec != NULL && f->opt != NULL
           && LLM_TRY(d, llm_params_init(f->ps, &d->err))
           && LLM_TRY(d, llm_decoder_init(f->dec, f->ps, &llm_fix33_model, &rng, &d->err))
           && LLM_TRY(d, llm_adamw_init(f->opt, f->ps, &llm_fix33_adamw, &d->err));
}

size_t llm_count_scalars(const llm_params *ps)
{
    size_t i, n = 0;
    for (i = 0; i < ps->count; i++)
        n += ps->items[i].value.size;
    return n;
}

/* 1 when a and b hold the same names and, with grads set, the same
   gradients, else the same values, bit for bit. */
static int same_tensors(const llm_params *a, const llm_params *b, int grads)
{
    size_t i;
    int same = a->count == b->count;
    for (i = 0; same && i < a->count; i++) {
        const llm_tensor *x = grads ? &a->items[i].grad : &a->items[i].value,
                         *y = grads ? &b->items[i].grad : &b->items[i].value;
        same = strcmp(a->items[i].name, b->items[i].name) == 0 && x->size == y->size
               && memcmp(x->data, y->data, x->size * sizeof(double)) == 0;
    }
    return same;
}

int llm_same_values(const llm_params *a, const llm_params *b)
{
    return same_tensors(a, b, 0);
}

int llm_same_grads(const llm_params *a, const llm_params *b)
{
    return same_tensors(a, b, 1);
}

int llm_same_adamw(const llm_adamw *a, const llm_adamw *b)
{
    size_t i;
    int same = a->count == b->count && a->steps == b->steps
               && memcmp(&a->p1, &b->p1, sizeof a->p1) == 0
               && memcmp(&a->p2, &b->p2, sizeof a->p2) == 0;
    for (i = 0; same && i < a->count; i++)
        same = a->moments[i].m.size == b->moments[i].m.size
               && memcmp(a->moments[i].m.data, b->moments[i].m.data,
                         a->moments[i].m.size * sizeof(double)) == 0
               && memcmp(a->moments[i].v.data, b->moments[i].v.data,
                         a->moments[i].v.size * sizeof(double)) == 0;
    return same;
}
