/* Chapter 18: token embeddings (gather forward, scatter-add backward), and
   the one leaf that two lookups from the same table share. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "llm/error.h"
#include "llm/gradcheck.h"
#include "llm/nn.h"
#include "llm/tape.h"
#include "llm/tensor.h"
#include "../tangled/src/tape_op.h"   /* white-box: the tape's nodes */
#include "support.h"

#define GAMMA UINT64_C(0x9e3779b97f4a7c15)

static const double fixture[8] = {10, 11, 20, 21, 30, 31, 40, 41};
static const double upstream[6] = {1, 0, 0, 2, 3, 4};
static const size_t fixture_ids[3] = {2, 1, 2}, fixture_shape[2] = {1, 3};

/* A struct filled with a marker, to prove a refused call left it alone. */

/* The layer token_embedding [4, 2] from seed 18, holding the fixture table. */
static void fixture_layer(llm_params *ps, llm_embedding *emb)
{
    llm_rng rng;
    llm_rng_seed(&rng, 18);
    ck_assert_int_eq(llm_params_init(ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_embedding_init(emb, ps, "token_embedding", 4, 2, &rng, NULL), LLM_OK);
    memcpy(ps->items[emb->weight].value.data, fixture, sizeof fixture);
}

static const llm_tensor *value_of(llm_tape *tape, llm_var v)
{
    const llm_tensor *t = NULL;
    ck_assert_int_eq(llm_tape_value(tape, v, &t, NULL), LLM_OK);
    return t;
}

/* Element [i0, ..., i_{r-1}] of t through its strides. */
static double at(const llm_tensor *t, const size_t *index)
{
    size_t k, o = t->offset;
    for (k = 0; k < t->rank; k++)
        o += index[k] * t->stride[k];
    return t->data[o];
}

static size_t table_leaves(const llm_tape *tape, const llm_param *p)
{
    size_t i, n = 0;
    for (i = 0; i < tape->count; i++)
        n += tape->nodes[i].op == &llm_op_leaf && tape->nodes[i].grad == &p->grad;
    return n;
}

/* ---------------------------------------------------------------- init -- */

START_TEST(init_draws_a_xavier_table_named_prefix_weight)
{
    llm_params ps;
    llm_embedding emb;
    llm_rng rng, copy;
    llm_tensor want;
    llm_param *p;
    size_t i;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&ps, "first", 1, (const size_t[]){3}, 1.0, 0, NULL),
                     LLM_OK);
    llm_rng_seed(&rng, 18);
    copy = rng;
    ck_assert_int_eq(llm_embedding_init(&emb, &ps, "token_embedding", 4, 2, &rng, NULL),
                     LLM_OK);
    ck_assert_uint_eq(emb.weight, 1);
    ck_assert_uint_eq(emb.vocab, 4);
    ck_assert_uint_eq(emb.width, 2);
    ck_assert_uint_eq(ps.count, 2);
    p = &ps.items[1];
    ck_assert_str_eq(p->name, "token_embedding.weight");
    assert_shape(&p->value, 2, (const size_t[]){4, 2});
    ck_assert_int_eq(p->decay, 1);
    /* fan_in = V, fan_out = D: the same numbers as chapter 17's sampler */
    ck_assert_int_eq(llm_xavier_uniform(&want, 4, 2, &copy, NULL), LLM_OK);
    ck_assert(memcmp(p->value.data, want.data, 8 * sizeof(double)) == 0);
    for (i = 0; i < 8; i++) {
        ck_assert(fabs(p->value.data[i]) <= 1.0);       /* sqrt(6 / (4 + 2)) */
        ck_assert(p->grad.data[i] == 0.0);
    }
    ck_assert_uint_eq(rng.state, 18 + 8 * GAMMA);
    ck_assert_uint_eq(rng.state, copy.state);
    llm_tensor_free(&want);
    llm_params_free(&ps);
}
END_TEST

START_TEST(init_refusals_touch_nothing)
{
    char fits[64], too_long[64];
    llm_params ps;
    llm_embedding emb, spare;
    llm_rng rng, before;
    llm_error err;
    size_t k;
    static const struct { const char *prefix; size_t v, d; llm_status code;
                          const char *stage; const char *says; } bad[] = {
        {"tok", 0, 2, LLM_ERR_ARGUMENT, "embedding.init", "[0, 2]"},
        {"tok", 4, 0, LLM_ERR_ARGUMENT, "embedding.init", "[4, 0]"},
        {"Token", 4, 2, LLM_ERR_NAME, "param.name_check", "'T' at position 0"},
        {"", 4, 2, LLM_ERR_NAME, "param.name_check", "empty segment"},
        {"tok.", 4, 2, LLM_ERR_NAME, "param.name_check", "empty segment"},
        {"token_embedding", 4, 2, LLM_ERR_NAME, "params.add_xavier", "already taken"},
        {"tok", SIZE_MAX / 2, 4, LLM_ERR_OVERFLOW, "params.xavier_uniform", "too many"},
    };
    fixture_layer(&ps, &emb);
    llm_rng_seed(&rng, 99);
    before = rng;
    mark_bytes(&spare, sizeof spare);
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ck_assert_int_eq(llm_embedding_init(&spare, &ps, bad[k].prefix, bad[k].v, bad[k].d,
                                            &rng, &err), bad[k].code);
        ck_assert_str_eq(first_stage(&err), bad[k].stage);
        ck_assert_msg(strstr(err.message, bad[k].says) != NULL, "%s", err.message);
    }
    ck_assert_int_eq(llm_embedding_init(NULL, &ps, "a", 4, 2, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "embedding.init");
    ck_assert_int_eq(llm_embedding_init(&spare, NULL, "a", 4, 2, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_embedding_init(&spare, &ps, NULL, 4, 2, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_embedding_init(&spare, &ps, "a", 4, 2, NULL, &err), LLM_ERR_ARGUMENT);
    /* 56 + ".weight" = 63 characters fit; 57 do not */
    memset(too_long, 'a', 57);
    too_long[57] = '\0';
    ck_assert_int_eq(llm_embedding_init(&spare, &ps, too_long, 4, 2, &rng, &err), LLM_ERR_NAME);
    ck_assert_str_eq(where(&err), "embedding.init");
    ck_assert(marked_bytes(&spare, sizeof spare));
    ck_assert_uint_eq(ps.count, 1);
    ck_assert(memcmp(&rng, &before, sizeof rng) == 0);
    memset(fits, 'a', 56);
    fits[56] = '\0';
    ck_assert_int_eq(llm_embedding_init(&spare, &ps, fits, 4, 2, &rng, &err), LLM_OK);
    ck_assert_uint_eq(strlen(ps.items[1].name), 63);
    ck_assert_uint_eq(spare.weight, 1);
    llm_params_free(&ps);
}
END_TEST

/* ------------------------------------------------------------- forward -- */

START_TEST(lookup_copies_the_rows_of_the_ids)
{
    static const double want[6] = {30, 31, 20, 21, 30, 31};
    llm_params ps;
    llm_embedding emb;
    llm_tape tape;
    llm_var x;
    const llm_tensor *xv;
    size_t idx[3] = {0, 0, 0}, k = 0;
    fixture_layer(&ps, &emb);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, fixture_ids, 2, fixture_shape,
                                           &x, NULL), LLM_OK);
    xv = value_of(&tape, x);
    assert_shape(xv, 3, (const size_t[]){1, 3, 2});
    do
        ck_assert(at(xv, idx) == want[k++]);
    while (llm_index_next(3, xv->shape, idx));
    ck_assert_uint_eq(k, 6);
    llm_tape_free(&tape);
    llm_params_free(&ps);
}
END_TEST

START_TEST(a_batch_of_two_sequences_and_a_single_id)
{
    static const size_t ids[4] = {3, 0, 0, 1}, shape[2] = {2, 2}, one = 2;
    llm_params ps;
    llm_embedding emb;
    llm_tape tape;
    llm_var x, y;
    const llm_tensor *xv;
    size_t b, t, d;
    fixture_layer(&ps, &emb);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, ids, 2, shape, &x, NULL), LLM_OK);
    xv = value_of(&tape, x);
    for (b = 0; b < 2; b++)
        for (t = 0; t < 2; t++)
            for (d = 0; d < 2; d++) {
                size_t idx[3] = {b, t, d};
                ck_assert(at(xv, idx) == fixture[2 * ids[2 * b + t] + d]);
            }
    /* rank 0: one ID, a vector of width D */
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, &one, 0, NULL, &y, NULL), LLM_OK);
    xv = value_of(&tape, y);
    assert_shape(xv, 1, (const size_t[]){2});
    ck_assert(xv->data[xv->offset] == 30.0);
    ck_assert(xv->data[xv->offset + xv->stride[0]] == 31.0);
    llm_tape_free(&tape);
    llm_params_free(&ps);
}
END_TEST

START_TEST(empty_ids_give_an_empty_output)
{
    static const size_t none[1] = {0}, none2[2] = {3, 0};
    llm_params ps;
    llm_embedding emb;
    llm_tape tape;
    llm_var x;
    const llm_tensor *xv;
    fixture_layer(&ps, &emb);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, fixture_ids, 1, none, &x, NULL),
                     LLM_OK);
    xv = value_of(&tape, x);
    assert_shape(xv, 2, (const size_t[]){0, 2});
    ck_assert_uint_eq(xv->size, 0);
    /* with no IDs at all, the array may be NULL */
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, NULL, 2, none2, &x, NULL), LLM_OK);
    xv = value_of(&tape, x);
    assert_shape(xv, 3, (const size_t[]){3, 0, 2});
    llm_tape_free(&tape);
    llm_params_free(&ps);
}
END_TEST

START_TEST(ids_of_rank_7_fit_rank_8_does_not)
{
    static const size_t seven[7] = {1, 1, 1, 1, 1, 1, 1}, eight[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    static const size_t id[1] = {3};
    llm_params ps;
    llm_embedding emb;
    llm_tape tape;
    llm_var x, keep = {41, 42};
    llm_error err;
    const llm_tensor *xv;
    fixture_layer(&ps, &emb);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, id, 7, seven, &x, NULL), LLM_OK);
    xv = value_of(&tape, x);
    ck_assert_uint_eq(xv->rank, LLM_MAX_RANK);
    ck_assert_uint_eq(xv->shape[7], 2);
    ck_assert(xv->data[xv->offset] == 40.0);
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, id, 8, eight, &keep, &err),
                     LLM_ERR_RANK);
    ck_assert_str_eq(where(&err), "embedding.forward");
    ck_assert_uint_eq(keep.id, 41);
    llm_tape_free(&tape);
    llm_params_free(&ps);
}
END_TEST

START_TEST(forward_refusals_record_nothing)
{
    static const size_t bad[3] = {2, 4, 1}, huge[2] = {SIZE_MAX / 2 + 1, 2};
    llm_params ps, other, none;
    llm_embedding emb, small, lost;
    llm_tape tape;
    llm_var x = {41, 42};
    llm_error err;
    llm_rng rng;
    size_t nodes;
    fixture_layer(&ps, &emb);
    ck_assert_int_eq(llm_params_init(&other, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_init(&none, NULL), LLM_OK);
    llm_rng_seed(&rng, 1);
    ck_assert_int_eq(llm_embedding_init(&small, &other, "token_embedding", 3, 2, &rng, NULL),
                     LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    nodes = tape.count;

    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, bad, 2, fixture_shape, &x, &err),
                     LLM_ERR_INDEX);
    ck_assert_str_eq(where(&err), "embedding.forward");
    ck_assert_msg(strstr(err.message, "ID 4 at position 1") != NULL, "%s", err.message);
    ck_assert_msg(strstr(err.message, "4 tokens") != NULL, "%s", err.message);
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, (const size_t[]){SIZE_MAX}, 0,
                                           NULL, &x, &err), LLM_ERR_INDEX);
    ck_assert_int_eq(llm_embedding_forward(&emb, &other, &tape, fixture_ids, 2, fixture_shape,
                                           &x, &err), LLM_ERR_SHAPE);
    ck_assert_str_eq(where(&err), "embedding.forward");
    ck_assert_msg(strstr(err.message, "token_embedding.weight") != NULL, "%s", err.message);
    ck_assert_int_eq(llm_embedding_forward(&emb, &none, &tape, fixture_ids, 2, fixture_shape,
                                           &x, &err), LLM_ERR_NAME);
    ck_assert_str_eq(where(&err), "embedding.forward");
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, fixture_ids, 2, huge, &x, &err),
                     LLM_ERR_OVERFLOW);
    ck_assert_int_eq(llm_embedding_forward(NULL, &ps, &tape, fixture_ids, 2, fixture_shape,
                                           &x, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_embedding_forward(&emb, NULL, &tape, fixture_ids, 2, fixture_shape,
                                           &x, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, NULL, fixture_ids, 2, fixture_shape,
                                           &x, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, fixture_ids, 2, fixture_shape,
                                           NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, fixture_ids, 2, NULL, &x, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, NULL, 2, fixture_shape, &x, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_msg(strstr(err.message, "3 IDs") != NULL, "%s", err.message);
    mark_bytes(&lost, sizeof lost);
    lost.weight = 0;
    lost.vocab = 4;
    lost.width = 3;                                  /* not the table's width */
    ck_assert_int_eq(llm_embedding_forward(&lost, &ps, &tape, fixture_ids, 2, fixture_shape,
                                           &x, &err), LLM_ERR_SHAPE);
    ck_assert_uint_eq(tape.count, nodes);
    ck_assert_uint_eq(x.id, 41);
    ck_assert_uint_eq(x.epoch, 42);
    llm_tape_free(&tape);
    llm_params_free(&ps);
    llm_params_free(&other);
    llm_params_free(&none);
}
END_TEST

START_TEST(a_tape_that_cannot_record_is_refused_by_the_tape)
{
    llm_params ps;
    llm_embedding emb;
    llm_tape tape;
    llm_var x = {41, 42}, s;
    llm_error err;
    fixture_layer(&ps, &emb);
    memset(&tape, 0, sizeof tape);                   /* never initialised */
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, fixture_ids, 2, fixture_shape,
                                           &x, &err), LLM_ERR_TAPE);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, fixture_ids, 2, fixture_shape,
                                           &x, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sum_all(&tape, x, &s, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, s, NULL, 0, NULL), LLM_OK);   /* released */
    x.id = 41;
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, fixture_ids, 2, fixture_shape,
                                           &x, &err), LLM_ERR_TAPE);
    ck_assert_uint_eq(x.id, 41);
    llm_tape_free(&tape);
    llm_params_free(&ps);
}
END_TEST

/* ------------------------------------------------------------ backward -- */

/* Backward from x with the fixture's upstream gradient as the seed. */
static void backward_fixture(llm_params *ps, llm_embedding *emb)
{
    static const size_t seed_shape[3] = {1, 3, 2};
    llm_tape tape;
    llm_tensor seed;
    llm_var x;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&seed, 3, seed_shape, upstream, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_embedding_forward(emb, ps, &tape, fixture_ids, 2, fixture_shape,
                                           &x, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, x, &seed, 0, NULL), LLM_OK);
    llm_tensor_free(&seed);
    llm_tape_free(&tape);
}

START_TEST(backward_scatter_adds_into_the_rows)
{
    static const double want[8] = {0, 0, 0, 2, 4, 4, 0, 0};
    llm_params ps;
    llm_embedding emb;
    fixture_layer(&ps, &emb);
    backward_fixture(&ps, &emb);
    ck_assert(memcmp(ps.items[0].grad.data, want, sizeof want) == 0);
    ck_assert(memcmp(ps.items[0].value.data, fixture, sizeof fixture) == 0);
    backward_fixture(&ps, &emb);                       /* grads accumulate */
    ck_assert(ps.items[0].grad.data[4] == 8.0 && ps.items[0].grad.data[3] == 4.0);
    ck_assert(ps.items[0].grad.data[0] == 0.0 && ps.items[0].grad.data[7] == 0.0);
    llm_params_free(&ps);
}
END_TEST

START_TEST(one_hot_products_equal_lookup_and_scatter_add)
{
    static const size_t oshape[2] = {3, 4}, gshape[2] = {3, 2}, xshape[2] = {3, 2};
    double o[12] = {0};
    llm_params ps;
    llm_embedding emb;
    llm_tape tape;
    llm_tensor onehot, g, prod, grad_prod, flat;
    llm_var x;
    size_t t;
    fixture_layer(&ps, &emb);
    for (t = 0; t < 3; t++)
        o[4 * t + fixture_ids[t]] = 1.0;
    ck_assert_int_eq(llm_tensor_from(&onehot, 2, oshape, o, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&g, 2, gshape, upstream, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_matmul(&prod, &onehot, &ps.items[0].value, 0, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_matmul(&grad_prod, &onehot, &g, 1, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, fixture_ids, 2, fixture_shape,
                                           &x, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_copy(&flat, value_of(&tape, x), NULL), LLM_OK);
    ck_assert(memcmp(flat.data, prod.data, 6 * sizeof(double)) == 0);
    ck_assert_uint_eq(prod.shape[0], xshape[0]);
    llm_tape_free(&tape);
    backward_fixture(&ps, &emb);
    ck_assert(memcmp(ps.items[0].grad.data, grad_prod.data, 8 * sizeof(double)) == 0);
    llm_tensor_free(&onehot);
    llm_tensor_free(&g);
    llm_tensor_free(&prod);
    llm_tensor_free(&grad_prod);
    llm_tensor_free(&flat);
    llm_params_free(&ps);
}
END_TEST

START_TEST(rows_add_in_ascending_position_order)
{
    /* ((0 + 1e16) - 1e16) + 1 = 1 in doubles; descending order gives
       ((0 + 1) - 1e16) + 1e16 = 0, because 1 - 1e16 rounds to -1e16 */
    static const double big[6] = {1e16, 0, -1e16, 0, 1, 0};
    static const size_t ids[3] = {1, 1, 1}, shape[1] = {3}, seed_shape[2] = {3, 2};
    llm_params ps;
    llm_embedding emb;
    llm_tape tape;
    llm_tensor seed;
    llm_var x;
    fixture_layer(&ps, &emb);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&seed, 2, seed_shape, big, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, ids, 1, shape, &x, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, x, &seed, 0, NULL), LLM_OK);
    ck_assert(ps.items[0].grad.data[2] == 1.0);
    ck_assert(ps.items[0].grad.data[3] == 0.0);
    llm_tensor_free(&seed);
    llm_tape_free(&tape);
    llm_params_free(&ps);
}
END_TEST

typedef struct objective_ctx {
    llm_embedding *emb;
    llm_params *ps;
    const llm_tensor *up;
} objective_ctx;

static llm_status weighted_sum(void *vctx, const llm_tensor *theta, double *value,
                               llm_error *err)
{
    objective_ctx *ctx = vctx;
    llm_tape tape;
    llm_var x;
    llm_status st = llm_tape_init(&tape, 8, err);
    (void)theta;
    if (st != LLM_OK)
        return st;
    if ((st = llm_embedding_forward(ctx->emb, ctx->ps, &tape, fixture_ids, 2, fixture_shape,
                                    &x, err)) == LLM_OK)
        st = weighted_loss(&tape, x, ctx->up, 0, value, err);
    llm_tape_free(&tape);
    return st;
}

START_TEST(gradient_check_passes_at_2e_6_and_catches_a_wrong_row)
{
    static const size_t seed_shape[3] = {1, 3, 2};
    llm_params ps;
    llm_embedding emb;
    llm_tensor up;
    objective_ctx ctx;
    size_t coords[8], k, failures = 99;
    double grad[8], worst = -1.0;
    fixture_layer(&ps, &emb);
    backward_fixture(&ps, &emb);
    memcpy(grad, ps.items[0].grad.data, sizeof grad);
    ck_assert_int_eq(llm_tensor_from(&up, 3, seed_shape, upstream, 6, NULL), LLM_OK);
    ctx.emb = &emb;
    ctx.ps = &ps;
    ctx.up = &up;
    for (k = 0; k < 8; k++)
        coords[k] = k;
    ck_assert_int_eq(llm_gradient_check(weighted_sum, &ctx, &ps.items[0].value, grad, coords, 8,
                                        1e-5, 2e-6, &worst, &failures, NULL), LLM_OK);
    ck_assert_uint_eq(failures, 0);
    ck_assert(worst >= 0.0 && worst <= 2e-6);
    /* gather without the scatter: the gradient of the first use only */
    grad[4] = 1.0;
    grad[5] = 0.0;
    ck_assert_int_eq(llm_gradient_check(weighted_sum, &ctx, &ps.items[0].value, grad, coords, 8,
                                        1e-5, 2e-6, &worst, &failures, NULL), LLM_OK);
    ck_assert_uint_eq(failures, 2);
    ck_assert(memcmp(ps.items[0].value.data, fixture, sizeof fixture) == 0);
    llm_tensor_free(&up);
    llm_params_free(&ps);
}
END_TEST

/* ------------------------------------------------------ one leaf, twice -- */

START_TEST(two_lookups_share_the_leaf_and_add_their_gradients)
{
    static const size_t ids2[2] = {3, 2}, shape2[2] = {1, 2};
    static const double want[8] = {0, 0, 0, 2, 5, 5, 1, 1};
    llm_params ps;
    llm_embedding emb;
    llm_tape tape;
    llm_var x1, x2, s1, s2, total, leaf1, leaf2;
    fixture_layer(&ps, &emb);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_param_leaf(&tape, &ps, emb.weight, &leaf1, NULL), LLM_OK);
    ck_assert_int_eq(llm_param_leaf(&tape, &ps, emb.weight, &leaf2, NULL), LLM_OK);
    ck_assert_uint_eq(leaf1.id, leaf2.id);
    ck_assert_uint_eq(leaf1.epoch, leaf2.epoch);
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, fixture_ids, 2, fixture_shape,
                                           &x1, NULL), LLM_OK);
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, ids2, 2, shape2, &x2, NULL),
                     LLM_OK);
    ck_assert_uint_eq(table_leaves(&tape, &ps.items[0]), 1);
    /* upstream [[1, 0], [0, 2], [3, 4]] for the first, all ones for the second */
    {
        static const size_t seed_shape[3] = {1, 3, 2};
        llm_tensor up;
        llm_var g, xg;
        ck_assert_int_eq(llm_tensor_from(&up, 3, seed_shape, upstream, 6, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_constant(&tape, &up, &g, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_mul(&tape, x1, g, &xg, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_sum_all(&tape, xg, &s1, NULL), LLM_OK);
        llm_tensor_free(&up);
    }
    ck_assert_int_eq(llm_tape_sum_all(&tape, x2, &s2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_add(&tape, s1, s2, &total, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, total, NULL, 0, NULL), LLM_OK);
    ck_assert(memcmp(ps.items[0].grad.data, want, sizeof want) == 0);
    /* a new recording gets a new leaf, in the new epoch */
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    ck_assert_int_eq(llm_param_leaf(&tape, &ps, emb.weight, &leaf2, NULL), LLM_OK);
    ck_assert_uint_eq(leaf2.id, 0);
    ck_assert_uint_ne(leaf2.epoch, leaf1.epoch);
    llm_tape_free(&tape);
    llm_params_free(&ps);
}
END_TEST

START_TEST(a_table_that_is_not_finite_is_refused_by_the_tape)
{
    llm_params ps;
    llm_embedding emb;
    llm_tape tape;
    llm_var x = {41, 42};
    llm_error err;
    fixture_layer(&ps, &emb);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ps.items[0].value.data[7] = INFINITY;          /* a row no ID uses */
    ck_assert_int_eq(llm_embedding_forward(&emb, &ps, &tape, fixture_ids, 2, fixture_shape,
                                           &x, &err), LLM_ERR_NONFINITE);
    ck_assert_str_eq(where(&err), "embedding.forward <- tape.leaf");
    ck_assert_uint_eq(x.id, 41);
    ck_assert_uint_eq(tape.count, 0);
    llm_tape_free(&tape);
    llm_params_free(&ps);
}
END_TEST

Suite *ch18_token_embeddings_suite(void)
{
    const TTest *tests[] = {
        init_draws_a_xavier_table_named_prefix_weight,
        init_refusals_touch_nothing,
        lookup_copies_the_rows_of_the_ids,
        a_batch_of_two_sequences_and_a_single_id,
        empty_ids_give_an_empty_output,
        ids_of_rank_7_fit_rank_8_does_not,
        forward_refusals_record_nothing,
        a_tape_that_cannot_record_is_refused_by_the_tape,
        backward_scatter_adds_into_the_rows,
        one_hot_products_equal_lookup_and_scatter_add,
        rows_add_in_ascending_position_order,
        gradient_check_passes_at_2e_6_and_catches_a_wrong_row,
        two_lookups_share_the_leaf_and_add_their_gradients,
        a_table_that_is_not_finite_is_refused_by_the_tape,
    };
    return suite_of("ch18 token embeddings", tcase_of("core", 0, tests, COUNT(tests)));
}
