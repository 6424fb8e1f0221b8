/* Every allocation failure of representative calls, one at a time.
   llm_alloc_fail_at(n) (chapter 1) makes the n-th allocation from now fail.
   Each walk runs the same call for n = 1, 2, ... on the same starting state:
   while the call makes n allocations or more, the n-th one fails, and the
   call must be refused with LLM_ERR_ALLOC, name a stage, and leave its
   state as it was; the first run that needs fewer than n allocations must
   succeed, and ends the walk. Each walk asserts that it met at least one
   allocation, so a call that stopped allocating would be noticed. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/attention.h"
#include "llm/tape.h"
#include "llm/error.h"
#include "llm/model.h"
#include "llm/nn.h"
#include "llm/tensor.h"
#include "llm/data.h"
#include "llm/optim.h"

#include "support.h"

/* ------------------------------------------------ a parameter list's state */

/* What a failed constructor must give back: the count, every name, every
   value and every gradient, bit for bit. Kept with the C library's malloc,
   which the hook does not count. */
typedef struct snapshot {
    size_t count, doubles;
    char (*names)[LLM_PARAM_NAME_MAX];
    double *numbers;
} snapshot;

static snapshot take(const llm_params *ps)
{
    snapshot s;
    size_t i, at = 0;
    s.count = ps->count;
    s.doubles = 0;
    for (i = 0; i < ps->count; i++)
        s.doubles += 2 * ps->items[i].value.size;
    s.names = malloc((s.count + 1) * sizeof *s.names);
    s.numbers = malloc((s.doubles + 1) * sizeof *s.numbers);
    ck_assert(s.names != NULL && s.numbers != NULL);
    for (i = 0; i < ps->count; i++) {
        const llm_param *p = &ps->items[i];
        memcpy(s.names[i], p->name, sizeof s.names[i]);
        memcpy(s.numbers + at, p->value.data, p->value.size * sizeof(double));
        at += p->value.size;
        memcpy(s.numbers + at, p->grad.data, p->grad.size * sizeof(double));
        at += p->grad.size;
    }
    return s;
}

static int same(const snapshot *s, const llm_params *ps)
{
    snapshot now = take(ps);
    int eq = now.count == s->count && now.doubles == s->doubles &&
             memcmp(now.names, s->names, s->count * sizeof *s->names) == 0 &&
             memcmp(now.numbers, s->numbers, s->doubles * sizeof(double)) == 0;
    free(now.names);
    free(now.numbers);
    return eq;
}

static void drop(snapshot *s)
{
    free(s->names);
    free(s->numbers);
}

/* A list that already holds two parameters, so that a rollback has
   something to keep, and a generator in a known state. */
static void start_list(llm_params *ps, llm_rng *rng)
{
    const size_t shape[1] = {3};
    llm_rng_seed(rng, 40);
    ck_assert_int_eq(llm_params_init(ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_xavier(ps, "before.weight", 2, 3, rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(ps, "before.gain", 1, shape, 1.0, 0, NULL), LLM_OK);
}

/* The walk itself is WALK, in support.h. */

START_TEST(the_hook_fails_exactly_the_chosen_call)
{
    void *a, *b, *c;
    llm_alloc_fail_at(2);
    a = llm_malloc(8);
    b = llm_calloc(1, 8);
    c = llm_realloc(a, 16);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_null(b);                  /* the second call, once */
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(llm_alloc_calls(), 3);
    llm_alloc_fail_at(1);
    ck_assert_ptr_null(llm_realloc(c, 32)); /* a refused realloc keeps c */
    llm_alloc_fail_at(0);
    ck_assert_uint_eq(llm_alloc_calls(), 0);
    free(c);
}
END_TEST

/* ------------------------------------------------------------ constructors */

START_TEST(tensors_and_tapes)
{
    const size_t shape[2] = {3, 4};
    static const double values[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    llm_tensor t, out, marker, view;
    llm_tape tape, tape_marker;
    llm_error err;
    size_t used;
    memset(&marker, 0x5a, sizeof marker);
    memset(&tape_marker, 0x5a, sizeof tape_marker);
    WALK(&used, out = marker, llm_tensor_zeros(&out, 2, shape, &err),
         memcmp(&out, &marker, sizeof out) == 0, llm_tensor_free(&out));
    ck_assert_uint_eq(used, 1);
    WALK(&used, out = marker, llm_tensor_from(&out, 2, shape, values, 12, &err),
         memcmp(&out, &marker, sizeof out) == 0, llm_tensor_free(&out));
    ck_assert_uint_ge(used, 1);
    ck_assert_int_eq(llm_tensor_from(&t, 2, shape, values, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_transpose(&view, &t, 0, 1, NULL), LLM_OK);
    WALK(&used, out = marker, llm_tensor_copy(&out, &view, &err),
         memcmp(&out, &marker, sizeof out) == 0, llm_tensor_free(&out));
    ck_assert_uint_ge(used, 1);
    WALK(&used, tape = tape_marker, llm_tape_init(&tape, 4, &err),
         memcmp(&tape, &tape_marker, sizeof tape) == 0, llm_tape_free(&tape));
    ck_assert_uint_ge(used, 1);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(layers_roll_back_to_the_list_they_were_given)
{
    llm_params ps;
    llm_rng rng, rng0;
    snapshot s;
    llm_error err;
    llm_embedding emb, emb0;
    llm_linear lin, lin0;
    llm_swiglu ffn, ffn0;
    llm_rmsnorm norm, norm0;
    llm_qkv qkv, qkv0;
    llm_mha mha, mha0;
    llm_block blk, blk0;
    size_t used, count;
    start_list(&ps, &rng);
    s = take(&ps);
    rng0 = rng;
    count = ps.count;
#define UNCHANGED(layer, marker)                                               \
    (memcmp(&(layer), &(marker), sizeof(layer)) == 0 && same(&s, &ps) &&       \
     rng.state == rng0.state)
#define UNDO (llm_params_truncate(&ps, count), rng = rng0)
    memset(&emb0, 0x5a, sizeof emb0);
    WALK(&used, emb = emb0, llm_embedding_init(&emb, &ps, "tok", 5, 4, &rng, &err),
         UNCHANGED(emb, emb0), UNDO);
    ck_assert_uint_ge(used, 2);                    /* the value and its gradient */
    memset(&lin0, 0x5a, sizeof lin0);
    WALK(&used, lin = lin0, llm_linear_init(&lin, &ps, "lin", 4, 3, 1, &rng, &err),
         UNCHANGED(lin, lin0), UNDO);
    ck_assert_uint_ge(used, 4);
    memset(&ffn0, 0x5a, sizeof ffn0);
    WALK(&used, ffn = ffn0, llm_swiglu_init(&ffn, &ps, "ffn", 4, 6, &rng, &err),
         UNCHANGED(ffn, ffn0), UNDO);
    ck_assert_uint_ge(used, 6);
    memset(&norm0, 0x5a, sizeof norm0);
    WALK(&used, norm = norm0, llm_rmsnorm_init(&norm, &ps, "norm", 4, 1e-6, &err),
         UNCHANGED(norm, norm0), UNDO);
    ck_assert_uint_ge(used, 2);
    memset(&qkv0, 0x5a, sizeof qkv0);
    WALK(&used, qkv = qkv0, llm_qkv_init(&qkv, &ps, "qkv", 4, 4, &rng, &err),
         UNCHANGED(qkv, qkv0), UNDO);
    ck_assert_uint_ge(used, 6);
    memset(&mha0, 0x5a, sizeof mha0);
    WALK(&used, mha = mha0, llm_mha_init(&mha, &ps, "mha", 4, 2, &rng, &err),
         UNCHANGED(mha, mha0), UNDO);
    ck_assert_uint_ge(used, 8);
    memset(&blk0, 0x5a, sizeof blk0);
    WALK(&used, blk = blk0,
         llm_block_init(&blk, &ps, "block", 4, 2, 6, 1e-6, &rng, &err),
         UNCHANGED(blk, blk0), UNDO);
    ck_assert_uint_ge(used, 18);
#undef UNCHANGED
#undef UNDO
    drop(&s);
    llm_params_free(&ps);
}
END_TEST

START_TEST(decoder_rope_and_optimiser_constructors)
{
    static const llm_decoder_config cfg[2] = {{7, 4, 2, 6, 2, 5, 10000.0, 1e-6, 0},
                                              {7, 4, 2, 6, 2, 5, 10000.0, 1e-6, 1}};
    static const llm_adamw_config acfg = {0.9, 0.999, 1e-8, 0.01};
    llm_params ps;
    llm_rng rng, rng0;
    llm_decoder dec, dec0;
    llm_rope rope, rope0;
    llm_adamw opt, opt0;
    llm_error err;
    size_t used, k;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    llm_rng_seed(&rng, 41);
    rng0 = rng;
    memset(&dec0, 0x5a, sizeof dec0);
    for (k = 0; k < 2; k++) {                               /* tied, then untied */
        WALK(&used, dec = dec0, llm_decoder_init(&dec, &ps, &cfg[k], &rng, &err),
             memcmp(&dec, &dec0, sizeof dec) == 0 && ps.count == 0 && rng.state == rng0.state,
             (llm_decoder_free(&dec), llm_params_truncate(&ps, 0), rng = rng0));
        ck_assert_uint_ge(used, 2 * (2 + k + 9 * 2));       /* an untied head's weight too */
    }
    memset(&rope0, 0x5a, sizeof rope0);
    WALK(&used, rope = rope0, llm_rope_init(&rope, 2, 10000.0, 5, LLM_ROPE_ADJACENT, &err),
         memcmp(&rope, &rope0, sizeof rope) == 0, llm_rope_free(&rope));
    ck_assert_uint_ge(used, 3);
    ck_assert_int_eq(llm_decoder_init(&dec, &ps, &cfg[0], &rng, NULL), LLM_OK);
    memset(&opt0, 0x5a, sizeof opt0);
    WALK(&used, opt = opt0, llm_adamw_init(&opt, &ps, &acfg, &err),
         memcmp(&opt, &opt0, sizeof opt) == 0, llm_adamw_free(&opt));
    ck_assert_uint_ge(used, 1 + 2 * ps.count);
    llm_decoder_free(&dec);
    llm_params_free(&ps);
}
END_TEST

/* ------------------------------------------------------------- recordings */

typedef struct model {
    llm_decoder dec;
    llm_params ps;
    llm_tape tape;
} model;

static const llm_decoder_config model_cfg = {7, 4, 2, 6, 2, 5, 10000.0, 1e-6, 0};
static const size_t model_ids[4] = {6, 0, 3, 5}, model_targets[4] = {0, 3, 5, 1};

/* A tape of capacity 1, so that the walks also fail the tape's growth. */
static void build(model *m)
{
    llm_rng rng;
    llm_rng_seed(&rng, 42);
    ck_assert_int_eq(llm_params_init(&m->ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_decoder_init(&m->dec, &m->ps, &model_cfg, &rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&m->tape, 1, NULL), LLM_OK);
}

static void destroy(model *m)
{
    llm_tape_free(&m->tape);
    llm_decoder_free(&m->dec);
    llm_params_free(&m->ps);
}

/* The tape's recording as a caller sees it: its node count and epoch. */
#define TAPE_AS_IT_WAS(t, nodes, recording) ((t).count == (nodes) && (t).epoch == (recording))

START_TEST(an_embedding_lookup_rewinds_its_leaf)
{
    model m;
    llm_var x, x0;
    llm_error err;
    size_t used, count, epoch, shape[2] = {1, 4};
    build(&m);
    memset(&x0, 0x5a, sizeof x0);
    count = m.tape.count;
    epoch = m.tape.epoch;
    WALK(&used, x = x0,
         llm_embedding_forward(&m.dec.embedding, &m.ps, &m.tape, model_ids, 2, shape, &x,
                               &err),
         TAPE_AS_IT_WAS(m.tape, count, epoch) && memcmp(&x, &x0, sizeof x) == 0,
         (void)0);
    ck_assert_uint_ge(used, 2);       /* the leaf's room on the tape, the gather's */
    destroy(&m);
}
END_TEST

START_TEST(a_decoder_loss_forward_and_backward)
{
    model m;
    llm_var z, loss, loss0;
    llm_error err;
    snapshot s;
    size_t used, epoch;
    build(&m);
    memset(&loss0, 0x5a, sizeof loss0);
    epoch = m.tape.epoch;
    /* the forward pass with the loss: every failure leaves an empty tape */
    WALK(&used, (z = loss0, loss = loss0),
         llm_decoder_loss(&m.dec, &m.ps, &m.tape, model_ids, model_targets, 1, 4, &z, &loss,
                          &err),
         TAPE_AS_IT_WAS(m.tape, 0, epoch) && memcmp(&loss, &loss0, sizeof loss) == 0,
         (void)0);
    ck_assert_uint_ge(used, 20);
    /* the backward pass from that loss: every grad and the tape as they were */
    s = take(&m.ps);
    {
        size_t count = m.tape.count;
        WALK(&used, (void)0, llm_tape_backward(&m.tape, loss, NULL, 0, &err),
             TAPE_AS_IT_WAS(m.tape, count, epoch) && same(&s, &m.ps), (void)0);
        ck_assert_uint_ge(used, 1);
    }
    drop(&s);
    destroy(&m);
}
END_TEST

START_TEST(an_ngram_builds_runs_and_continues)
{
    static const llm_ngram_config cfg = {6, 2, 2, 3};
    static const size_t ids[4] = {0, 0, 0, 3}, targets[2] = {3, 4}, prompt[2] = {0, 3};
    llm_params ps;
    llm_rng rng, rng0;
    llm_ngram m, m0;
    llm_tape tape;
    llm_var loss, loss0;
    llm_error err;
    size_t used, epoch, out[4], count = 77;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    llm_rng_seed(&rng, 23);
    rng0 = rng;
    memset(&m0, 0x5a, sizeof m0);
    WALK(&used, m = m0, llm_ngram_init(&m, &ps, &cfg, &rng, &err),
         memcmp(&m, &m0, sizeof m) == 0 && ps.count == 0 && rng.state == rng0.state,
         (llm_params_truncate(&ps, 0), rng = rng0));
    ck_assert_uint_ge(used, 2 * 5);                 /* value and grad of five tensors */
    ck_assert_int_eq(llm_ngram_init(&m, &ps, &cfg, &rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 1, NULL), LLM_OK);
    memset(&loss0, 0x5a, sizeof loss0);
    epoch = tape.epoch;
    WALK(&used, loss = loss0,
         llm_ngram_loss(&m, &ps, &tape, ids, targets, 2, NULL, &loss, &err),
         TAPE_AS_IT_WAS(tape, 0, epoch) && memcmp(&loss, &loss0, sizeof loss) == 0,
         llm_tape_reset(&tape, NULL));
    ck_assert_uint_ge(used, 10);
    epoch = tape.epoch;
    WALK(&used, count = 77,
         llm_ngram_greedy(&m, &ps, &tape, prompt, 2, 4, out, 4, &count, &err),
         TAPE_AS_IT_WAS(tape, 0, epoch) && count == 77, (void)0);
    ck_assert_uint_ge(used, 3);
    llm_tape_free(&tape);
    llm_params_free(&ps);
}
END_TEST

START_TEST(an_adamw_step_allocates_nothing)
{
    static const llm_adamw_config acfg = {0.9, 0.999, 1e-8, 0.01};
    const llm_grad_multiplier one = {1.0, 1.0};
    model m;
    llm_adamw opt;
    llm_var z, loss;
    llm_error err;
    size_t i;
    build(&m);
    ck_assert_int_eq(llm_adamw_init(&opt, &m.ps, &acfg, NULL), LLM_OK);
    ck_assert_int_eq(llm_decoder_loss(&m.dec, &m.ps, &m.tape, model_ids, model_targets, 1, 4,
                                      &z, &loss, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&m.tape, loss, NULL, 0, NULL), LLM_OK);
    llm_alloc_fail_at(1);
    ck_assert_int_eq(llm_adamw_step(&opt, &m.ps, one, 1e-3, &err), LLM_OK);
    ck_assert_uint_eq(llm_alloc_calls(), 0);
    llm_alloc_fail_at(0);
    ck_assert_uint_eq(opt.steps, 1);
    for (i = 0; i < m.ps.count; i++)
        ck_assert(isfinite(m.ps.items[i].value.data[0]));
    llm_adamw_free(&opt);
    destroy(&m);
}
END_TEST

Suite *alloc_failures_suite(void)
{
    const TTest *tests[] = {
        the_hook_fails_exactly_the_chosen_call,
        tensors_and_tapes,
        layers_roll_back_to_the_list_they_were_given,
        decoder_rope_and_optimiser_constructors,
        an_embedding_lookup_rewinds_its_leaf,
        a_decoder_loss_forward_and_backward,
        an_ngram_builds_runs_and_continues,
        an_adamw_step_allocates_nothing,
    };
    return suite_of("allocation failures", tcase_of("alloc", 0, tests, COUNT(tests)));
}
