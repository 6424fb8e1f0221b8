/* Chapter 26: the query, key and value projections of one sequence. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "llm/attention.h"
#include "llm/error.h"
#include "llm/gradcheck.h"
#include "llm/nn.h"
#include "llm/tape.h"
#include "llm/tensor.h"
#include "../tangled/src/tape_op.h"   /* white-box: the tape's nodes */
#include "support.h"

#define GAMMA UINT64_C(0x9e3779b97f4a7c15)

static const double fix_x[6] = {1, 2, -1, 0, 1, 2};
static const double fix_wq[6] = {1, 0, 0, 1, 1, -1};
static const double fix_wk[6] = {0, 1, 1, 0, -1, 1};
static const double fix_wv[6] = {1, 1, 1, -1, 0, 2};
static const double fix_q[4] = {0, 3, 2, -1};
static const double fix_k[4] = {3, 0, -1, 2};
static const double fix_v[4] = {3, -3, 1, 3};

static void mark_qkv(llm_qkv *p) { memset(p, 0x5a, sizeof *p); }
static int qkv_marked(const llm_qkv *p)
{
    llm_qkv m;
    mark_qkv(&m);
    return memcmp(p, &m, sizeof m) == 0;
}

/* A fresh list with the projections "attn" (D = 3, d_k = 2, seed 26)
   holding the Rust course's weights. */
static void fixture_qkv(llm_params *ps, llm_qkv *qkv)
{
    llm_rng rng;
    llm_rng_seed(&rng, 26);
    ck_assert_int_eq(llm_params_init(ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_qkv_init(qkv, ps, "attn", 3, 2, &rng, NULL), LLM_OK);
    memcpy(ps->items[qkv->query.weight].value.data, fix_wq, sizeof fix_wq);
    memcpy(ps->items[qkv->key.weight].value.data, fix_wk, sizeof fix_wk);
    memcpy(ps->items[qkv->value.weight].value.data, fix_wv, sizeof fix_wv);
}

/* The value of v, row-major, into out (at most n values); returns the count. */
static size_t read_values(const llm_tape *tape, llm_var v, double *out, size_t n)
{
    const llm_tensor *t;
    size_t idx[LLM_MAX_RANK] = {0}, i = 0, k, o;
    ck_assert_int_eq(llm_tape_value(tape, v, &t, NULL), LLM_OK);
    ck_assert_uint_le(t->size, n);
    if (t->size > 0)
        do {
            for (o = t->offset, k = 0; k < t->rank; k++)
                o += idx[k] * t->stride[k];
            out[i++] = t->data[o];
        } while (llm_index_next(t->rank, t->shape, idx));
    return i;
}

/* ------------------------------------------------------------ construction -- */

START_TEST(init_draws_query_key_value_in_row_major_order)
{
    static const char *const names[3] = {"attn.query.weight", "attn.key.weight",
                                         "attn.value.weight"};
    llm_params ps;
    llm_qkv qkv;
    llm_rng rng, fresh;
    llm_tensor w;
    size_t k, i;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    llm_rng_seed(&rng, 26);
    ck_assert_int_eq(llm_qkv_init(&qkv, &ps, "attn", 3, 2, &rng, NULL), LLM_OK);
    ck_assert_uint_eq(qkv.d_model, 3);
    ck_assert_uint_eq(qkv.d_k, 2);
    ck_assert_uint_eq(qkv.query.weight, 0);
    ck_assert_uint_eq(qkv.key.weight, 1);
    ck_assert_uint_eq(qkv.value.weight, 2);
    ck_assert_int_eq(qkv.query.has_bias, 0);
    ck_assert_int_eq(qkv.key.has_bias, 0);
    ck_assert_int_eq(qkv.value.has_bias, 0);
    ck_assert_uint_eq(qkv.value.d_in, 3);
    ck_assert_uint_eq(qkv.value.d_out, 2);
    ck_assert_uint_eq(ps.count, 3);                          /* no biases */
    ck_assert_uint_eq(rng.state, 26 + 18 * GAMMA);           /* 3 * 3 * 2 draws */
    llm_rng_seed(&fresh, 26);
    for (k = 0; k < 3; k++) {
        const llm_param *p = &ps.items[k];
        ck_assert_str_eq(p->name, names[k]);
        assert_shape(&p->value, 2, (const size_t[]){3, 2});
        ck_assert_int_eq(p->decay, 1);
        ck_assert_int_eq(llm_xavier_uniform(&w, 3, 2, &fresh, NULL), LLM_OK);
        ck_assert(memcmp(w.data, p->value.data, 6 * sizeof(double)) == 0);
        for (i = 0; i < 6; i++)
            ck_assert(p->grad.data[i] == 0.0);
        llm_tensor_free(&w);
    }
    ck_assert_uint_eq(fresh.state, rng.state);
    llm_params_free(&ps);
}
END_TEST

START_TEST(a_replay_from_seed_26_is_bit_identical)
{
    llm_params a, b;
    llm_qkv qa, qb;
    llm_rng ra, rb;
    size_t k;
    ck_assert_int_eq(llm_params_init(&a, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_init(&b, NULL), LLM_OK);
    llm_rng_seed(&ra, 26);
    llm_rng_seed(&rb, 26);
    ck_assert_int_eq(llm_qkv_init(&qa, &a, "attn", 3, 2, &ra, NULL), LLM_OK);
    ck_assert_int_eq(llm_qkv_init(&qb, &b, "attn", 3, 2, &rb, NULL), LLM_OK);
    ck_assert_uint_eq(ra.state, rb.state);
    ck_assert_uint_eq(a.count, b.count);
    for (k = 0; k < a.count; k++) {
        ck_assert_str_eq(a.items[k].name, b.items[k].name);
        ck_assert(memcmp(a.items[k].value.data, b.items[k].value.data,
                         a.items[k].value.size * sizeof(double)) == 0);
    }
    /* another seed gives other numbers */
    llm_params_free(&b);
    ck_assert_int_eq(llm_params_init(&b, NULL), LLM_OK);
    llm_rng_seed(&rb, 27);
    ck_assert_int_eq(llm_qkv_init(&qb, &b, "attn", 3, 2, &rb, NULL), LLM_OK);
    ck_assert(memcmp(a.items[0].value.data, b.items[0].value.data, 6 * sizeof(double)) != 0);
    llm_params_free(&a);
    llm_params_free(&b);
}
END_TEST

START_TEST(init_appends_after_existing_parameters)
{
    const size_t three[1] = {3};
    llm_params ps;
    llm_qkv a, b;
    llm_rng rng;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&ps, "norm.gain", 1, three, 1.0, 0, NULL), LLM_OK);
    llm_rng_seed(&rng, 1);
    ck_assert_int_eq(llm_qkv_init(&a, &ps, "blocks.0.attention", 3, 4, &rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_qkv_init(&b, &ps, "blocks.1.attention", 3, 4, &rng, NULL), LLM_OK);
    ck_assert_uint_eq(a.query.weight, 1);
    ck_assert_uint_eq(a.value.weight, 3);
    ck_assert_uint_eq(b.query.weight, 4);
    ck_assert_uint_eq(b.key.weight, 5);
    ck_assert_uint_eq(b.value.weight, 6);
    ck_assert_str_eq(ps.items[5].name, "blocks.1.attention.key.weight");
    ck_assert_uint_eq(ps.items[6].value.shape[0], 3);
    ck_assert_uint_eq(ps.items[6].value.shape[1], 4);
    ck_assert_uint_eq(rng.state, 1 + 72 * GAMMA);           /* two times 3 * 3 * 4 */
    llm_params_free(&ps);
}
END_TEST

START_TEST(init_refusals_touch_neither_projections_list_nor_generator)
{
    struct { const char *prefix; size_t d, dk; llm_status code; const char *stage; } cases[] = {
        {NULL, 3, 2, LLM_ERR_ARGUMENT, "qkv.init"},
        {"attn", 0, 2, LLM_ERR_ARGUMENT, "qkv.init"},
        {"attn", 3, 0, LLM_ERR_ARGUMENT, "qkv.init"},
        {"Attn", 3, 2, LLM_ERR_NAME, "param.name_check"},
        {"", 3, 2, LLM_ERR_NAME, "param.name_check"},
        {"attn.", 3, 2, LLM_ERR_NAME, "param.name_check"},
        {"taken", 3, 2, LLM_ERR_NAME, "params.add_xavier"},
    };
    const size_t one[1] = {1};
    llm_params ps;
    llm_qkv qkv;
    llm_rng rng, before;
    llm_error err;
    size_t k;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&ps, "taken.query.weight", 1, one, 0.0, 1, NULL),
                     LLM_OK);
    llm_rng_seed(&rng, 26);
    before = rng;
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        mark_qkv(&qkv);
        ck_assert_int_eq(llm_qkv_init(&qkv, &ps, cases[k].prefix, cases[k].d, cases[k].dk,
                                      &rng, &err), cases[k].code);
        ck_assert_int_eq(err.code, cases[k].code);
        ck_assert_str_eq(first_stage(&err), cases[k].stage);
        ck_assert(qkv_marked(&qkv));
        ck_assert_uint_eq(ps.count, 1);
        ck_assert_uint_eq(rng.state, before.state);
    }
    ck_assert_int_eq(llm_qkv_init(NULL, &ps, "attn", 3, 2, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_qkv_init(&qkv, NULL, "attn", 3, 2, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_qkv_init(&qkv, &ps, "attn", 3, 2, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "qkv.init");
    ck_assert(qkv_marked(&qkv));
    ck_assert_uint_eq(ps.count, 1);
    ck_assert_uint_eq(rng.state, before.state);
    llm_params_free(&ps);
}
END_TEST

START_TEST(a_prefix_is_refused_exactly_when_a_name_would_exceed_63_characters)
{
    char prefix[64];
    llm_params ps;
    llm_qkv qkv;
    llm_rng rng;
    llm_error err;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    llm_rng_seed(&rng, 3);
    memset(prefix, 'p', 51);
    prefix[51] = '\0';          /* "<51>.query.weight" has 64 characters */
    mark_qkv(&qkv);
    ck_assert_int_eq(llm_qkv_init(&qkv, &ps, prefix, 3, 2, &rng, &err), LLM_ERR_NAME);
    ck_assert_str_eq(where(&err), "qkv.init");
    ck_assert(qkv_marked(&qkv));
    ck_assert_uint_eq(ps.count, 0);
    ck_assert_uint_eq(rng.state, 3);
    prefix[50] = '\0';          /* 63 characters: the longest name there can be */
    ck_assert_int_eq(llm_qkv_init(&qkv, &ps, prefix, 3, 2, &rng, &err), LLM_OK);
    ck_assert_uint_eq(strlen(ps.items[qkv.query.weight].name), 63);
    ck_assert_uint_eq(strlen(ps.items[qkv.value.weight].name), 63);
    ck_assert_uint_eq(strlen(ps.items[qkv.key.weight].name), 61);
    llm_params_free(&ps);
}
END_TEST

START_TEST(a_failure_on_the_value_rolls_back_query_and_key)
{
    const size_t one[1] = {1};
    llm_params ps;
    llm_param saved;
    llm_qkv qkv;
    llm_rng rng;
    llm_error err;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&ps, "head.value.weight", 1, one, 0.0, 1, NULL),
                     LLM_OK);
    saved = ps.items[0];
    llm_rng_seed(&rng, 26);
    mark_qkv(&qkv);
    ck_assert_int_eq(llm_qkv_init(&qkv, &ps, "head", 3, 2, &rng, &err), LLM_ERR_NAME);
    ck_assert_str_eq(where(&err), "qkv.init <- params.add_xavier");
    ck_assert(strstr(err.message, "head.value.weight") != NULL);
    ck_assert_uint_eq(ps.count, 1);
    ck_assert(memcmp(&ps.items[0], &saved, sizeof saved) == 0);
    ck_assert_uint_eq(rng.state, 26);
    ck_assert(qkv_marked(&qkv));
    /* the list is usable afterwards: the same prefix minus the clash works */
    ck_assert_int_eq(llm_qkv_init(&qkv, &ps, "head2", 3, 2, &rng, &err), LLM_OK);
    ck_assert_uint_eq(qkv.query.weight, 1);
    ck_assert_uint_eq(ps.count, 4);
    llm_params_free(&ps);
}
END_TEST

/* ------------------------------------------------------------ forward pass -- */

/* The fixture projections run on the fixture input: the layer (built by
   fixture_qkv, then perhaps edited), the tape holding x and q, k, v. */
typedef struct projected {
    llm_params ps;
    llm_qkv qkv;
    llm_tape tape;
    llm_tensor x;
    llm_var xv, q, k, v;
} projected;

/* Runs the forward pass of r's layer, as fixture_qkv left it or edited. */
static void project(projected *r)
{
    const size_t xshape[2] = {2, 3};
    ck_assert_int_eq(llm_tensor_from(&r->x, 2, xshape, fix_x, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&r->tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&r->tape, &r->x, &r->xv, NULL), LLM_OK);
    ck_assert_int_eq(llm_qkv_forward(&r->qkv, &r->ps, &r->tape, r->xv,
                                     &r->q, &r->k, &r->v, NULL), LLM_OK);
}

static void projected_free(projected *r)
{
    llm_tape_free(&r->tape);
    llm_tensor_free(&r->x);
    llm_params_free(&r->ps);
}

START_TEST(the_fixture_gives_the_rust_course_projections)
{
    projected r;
    llm_tape *const tape = &r.tape;
    double out[4];
    const llm_tensor *t;
    fixture_qkv(&r.ps, &r.qkv);
    project(&r);
    ck_assert_uint_eq(read_values(tape, r.q, out, 4), 4);
    ck_assert(memcmp(out, fix_q, sizeof out) == 0);
    ck_assert_uint_eq(read_values(tape, r.k, out, 4), 4);
    ck_assert(memcmp(out, fix_k, sizeof out) == 0);
    ck_assert_uint_eq(read_values(tape, r.v, out, 4), 4);
    ck_assert(memcmp(out, fix_v, sizeof out) == 0);
    ck_assert_int_eq(llm_tape_value(tape, r.v, &t, NULL), LLM_OK);
    assert_shape(t, 2, (const size_t[]){2, 2});
    ck_assert(r.q.id < r.k.id && r.k.id < r.v.id);     /* recorded q, then k, then v */
    projected_free(&r);
}
END_TEST

START_TEST(one_projection_does_not_see_the_others_weights)
{
    projected r;
    llm_tape *const tape = &r.tape;
    double out[4];
    fixture_qkv(&r.ps, &r.qkv);
    r.ps.items[r.qkv.key.weight].value.data[0] = 10.0;
    r.ps.items[r.qkv.value.weight].value.data[5] = -7.0;
    project(&r);
    read_values(tape, r.q, out, 4);
    ck_assert(memcmp(out, fix_q, sizeof out) == 0);
    read_values(tape, r.k, out, 4);
    ck_assert(out[0] == 13.0 && out[1] == 0.0 && out[2] == -1.0 && out[3] == 2.0);
    read_values(tape, r.v, out, 4);
    ck_assert(out[0] == 3.0 && out[1] == 6.0 && out[2] == 1.0 && out[3] == -15.0);
    projected_free(&r);
}
END_TEST

START_TEST(leading_axes_are_kept_and_empty_axes_give_empty_outputs)
{
    static const size_t shapes[5][3] = {{1, 2, 3}, {2, 1, 3}, {3}, {0, 3}, {2, 0, 3}};
    static const size_t ranks[5] = {3, 3, 1, 2, 3}, sizes[5] = {6, 6, 3, 0, 0};
    llm_params ps;
    llm_qkv qkv;
    llm_tape tape;
    llm_tensor x, gx;
    llm_var xv, out[3];
    const llm_tensor *t;
    double vals[4];
    size_t s, j, i;
    fixture_qkv(&ps, &qkv);
    for (s = 0; s < 5; s++) {
        ck_assert_int_eq(llm_tensor_from(&x, ranks[s], shapes[s], fix_x, sizes[s], NULL),
                         LLM_OK);
        ck_assert_int_eq(llm_tensor_zeros(&gx, ranks[s], shapes[s], NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_leaf(&tape, &x, &gx, &xv, NULL), LLM_OK);
        ck_assert_int_eq(llm_qkv_forward(&qkv, &ps, &tape, xv, &out[0], &out[1], &out[2],
                                         NULL), LLM_OK);
        for (j = 0; j < 3; j++) {
            const double *want = j == 0 ? fix_q : j == 1 ? fix_k : fix_v;
            ck_assert_int_eq(llm_tape_value(&tape, out[j], &t, NULL), LLM_OK);
            ck_assert_uint_eq(t->rank, ranks[s]);
            for (i = 0; i + 1 < ranks[s]; i++)
                ck_assert_uint_eq(t->shape[i], shapes[s][i]);
            ck_assert_uint_eq(t->shape[ranks[s] - 1], 2);
            ck_assert_uint_eq(t->size, sizes[s] / 3 * 2);
            ck_assert_uint_eq(read_values(&tape, out[j], vals, 4), sizes[s] / 3 * 2);
            ck_assert(memcmp(vals, want, t->size * sizeof(double)) == 0);
        }
        if (sizes[s] == 0) {        /* backward through nothing: every grad stays +0 */
            ck_assert_int_eq(llm_tape_sum_all(&tape, out[2], &xv, NULL), LLM_OK);
            ck_assert_int_eq(llm_tape_backward(&tape, xv, NULL, 0, NULL), LLM_OK);
            for (j = 0; j < 3; j++)
                for (i = 0; i < 6; i++) {
                    ck_assert(ps.items[j].grad.data[i] == 0.0);
                    ck_assert(!signbit(ps.items[j].grad.data[i]));
                }
        }
        llm_tape_free(&tape);
        llm_tensor_free(&x);
        llm_tensor_free(&gx);
    }
    llm_params_free(&ps);
}
END_TEST

/* L = sum(C_q Q) + sum(C_k K) + sum(C_v V) for the fixture, on a fresh tape;
   with grads, backward adds into the list and gx. */
static const double fix_cq[4] = {1, -1, 2, 0.5}, fix_ck[4] = {0.5, 1, -1, 2},
                    fix_cv[4] = {-2, 1, 1.5, -0.5};
typedef struct obj_ctx {
    llm_params *ps;
    const llm_qkv *qkv;
    llm_tensor *x;
} obj_ctx;

static llm_status loss_on_tape(const obj_ctx *c, llm_tensor *gx, double *value)
{
    static const size_t two[2] = {2, 2};
    const double *seeds[3] = {fix_cq, fix_ck, fix_cv};
    llm_tape tape;
    llm_tensor cs[3];
    llm_var xv, o[3], cv, p, loss = {0, 0};
    const llm_tensor *t;
    size_t j;
    ck_assert_int_eq(llm_tape_init(&tape, 32, NULL), LLM_OK);
    ck_assert_int_eq(gx != NULL ? llm_tape_leaf(&tape, c->x, gx, &xv, NULL)
                                : llm_tape_constant(&tape, c->x, &xv, NULL), LLM_OK);
    ck_assert_int_eq(llm_qkv_forward(c->qkv, c->ps, &tape, xv, &o[0], &o[1], &o[2], NULL),
                     LLM_OK);
    for (j = 0; j < 3; j++) {
        ck_assert_int_eq(llm_tensor_from(&cs[j], 2, two, seeds[j], 4, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_constant(&tape, &cs[j], &cv, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_mul(&tape, o[j], cv, &p, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_sum_all(&tape, p, &p, NULL), LLM_OK);
        if (j > 0)
            ck_assert_int_eq(llm_tape_add(&tape, loss, p, &p, NULL), LLM_OK);
        loss = p;
        llm_tensor_free(&cs[j]);
    }
    ck_assert_int_eq(llm_tape_value(&tape, loss, &t, NULL), LLM_OK);
    *value = t->data[t->offset];
    if (gx != NULL)
        ck_assert_int_eq(llm_tape_backward(&tape, loss, NULL, 0, NULL), LLM_OK);
    llm_tape_free(&tape);
    return LLM_OK;
}

OBJECTIVE(objective, loss_on_tape(ctx, NULL, value))

START_TEST(every_weight_and_input_coordinate_passes_the_gradient_check)
{
    /* dL/dW_j = X^T C_j and dL/dX = sum_j C_j W_j^T, worked out by hand */
    static const double want_wq[6] = {1, -1, 4, -1.5, 3, 2};
    static const double want_wk[6] = {0.5, 1, 0, 4, -2.5, 3};
    static const double want_wv[6] = {-2, 1, -2.5, 1.5, 5, -2};
    static const double want_x[6] = {1, -3.5, 4.5, 5, 1.5, 3.5};
    const size_t xshape[2] = {2, 3};
    size_t coords[6] = {0, 1, 2, 3, 4, 5}, failures, k;
    llm_params ps;
    llm_qkv qkv;
    llm_tensor x, gx;
    llm_tensor *theta[4];
    const double *analytic[4];
    double value, worst;
    obj_ctx ctx;
    fixture_qkv(&ps, &qkv);
    ck_assert_int_eq(llm_tensor_from(&x, 2, xshape, fix_x, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&gx, 2, xshape, NULL), LLM_OK);
    ctx.ps = &ps;
    ctx.qkv = &qkv;
    ctx.x = &x;
    loss_on_tape(&ctx, &gx, &value);
    ck_assert(memcmp(ps.items[qkv.query.weight].grad.data, want_wq, sizeof want_wq) == 0);
    ck_assert(memcmp(ps.items[qkv.key.weight].grad.data, want_wk, sizeof want_wk) == 0);
    ck_assert(memcmp(ps.items[qkv.value.weight].grad.data, want_wv, sizeof want_wv) == 0);
    ck_assert(memcmp(gx.data, want_x, sizeof want_x) == 0);
    theta[0] = &ps.items[qkv.query.weight].value;
    theta[1] = &ps.items[qkv.key.weight].value;
    theta[2] = &ps.items[qkv.value.weight].value;
    theta[3] = &x;
    analytic[0] = want_wq;
    analytic[1] = want_wk;
    analytic[2] = want_wv;
    analytic[3] = want_x;
    for (k = 0; k < 4; k++) {
        ck_assert_int_eq(llm_gradient_check(objective, &ctx, theta[k], analytic[k], coords, 6,
                                            1e-6, 2e-6, &worst, &failures, NULL), LLM_OK);
        ck_assert_uint_eq(failures, 0);
        ck_assert(worst < 2e-6);
    }
    /* a wrong analytic gradient is caught: the check can fail */
    {
        double wrong[6];
        memcpy(wrong, want_wk, sizeof wrong);
        wrong[3] += 0.01;
        ck_assert_int_eq(llm_gradient_check(objective, &ctx, theta[1], wrong, coords, 6,
                                            1e-6, 2e-6, &worst, &failures, NULL), LLM_OK);
        ck_assert_uint_eq(failures, 1);
    }
    llm_tensor_free(&x);
    llm_tensor_free(&gx);
    llm_params_free(&ps);
}
END_TEST

START_TEST(two_passes_on_one_tape_share_each_weights_leaf)
{
    const size_t xshape[2] = {2, 3};
    llm_params ps;
    llm_qkv qkv;
    llm_tape tape;
    llm_tensor x;
    llm_var xv, q1, k1, v1, q2, k2, v2, s;
    size_t after_first;
    fixture_qkv(&ps, &qkv);
    ck_assert_int_eq(llm_tensor_from(&x, 2, xshape, fix_x, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &x, &xv, NULL), LLM_OK);
    ck_assert_int_eq(llm_qkv_forward(&qkv, &ps, &tape, xv, &q1, &k1, &v1, NULL), LLM_OK);
    after_first = tape.count;
    ck_assert_int_eq(llm_qkv_forward(&qkv, &ps, &tape, xv, &q2, &k2, &v2, NULL), LLM_OK);
    /* the second pass records no new leaves: three (reshape, product, reshape) */
    ck_assert_uint_eq(tape.count - after_first, 9);
    ck_assert_int_eq(llm_tape_add(&tape, q1, q2, &s, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sum_all(&tape, s, &s, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, s, NULL, 0, NULL), LLM_OK);
    /* dL/dW_q = 2 X^T 1: column sums of X, twice */
    ck_assert(ps.items[qkv.query.weight].grad.data[0] == 2.0);
    ck_assert(ps.items[qkv.query.weight].grad.data[2] == 6.0);
    ck_assert(ps.items[qkv.query.weight].grad.data[5] == 2.0);
    ck_assert(ps.items[qkv.key.weight].grad.data[0] == 0.0);
    llm_tape_free(&tape);
    llm_tensor_free(&x);
    llm_params_free(&ps);
}
END_TEST

START_TEST(forward_refusals_name_their_stage_and_leave_the_outputs_alone)
{
    const size_t xshape[2] = {2, 3}, narrow[2] = {2, 2};
    static const double zeros[4] = {0, 0, 0, 0};
    llm_params ps;
    llm_qkv qkv, bad;
    llm_tape tape, other;
    llm_tensor x, xn, sc;
    llm_var xv, xnv, sv, stale, foreign, q, k, v, marker;
    llm_error err;
    size_t nodes;
    fixture_qkv(&ps, &qkv);
    ck_assert_int_eq(llm_tensor_from(&x, 2, xshape, fix_x, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&xn, 2, narrow, zeros, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&sc, 0, NULL, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&other, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &x, &stale, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    put_constants(&tape, &x, &xv, &xn, &xnv, &sc, &sv, NULL);
    put_constants(&other, &x, &foreign, &x, &foreign, NULL);
    nodes = tape.count;
    memset(&marker, 0x5a, sizeof marker);
    q = k = v = marker;

    ck_assert_int_eq(llm_qkv_forward(NULL, &ps, &tape, xv, &q, &k, &v, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "qkv.forward");
    ck_assert_int_eq(llm_qkv_forward(&qkv, NULL, &tape, xv, &q, &k, &v, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_qkv_forward(&qkv, &ps, NULL, xv, &q, &k, &v, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_qkv_forward(&qkv, &ps, &tape, xv, NULL, &k, &v, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_qkv_forward(&qkv, &ps, &tape, xv, &q, NULL, &v, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_qkv_forward(&qkv, &ps, &tape, xv, &q, &k, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_qkv_forward(&qkv, &ps, &tape, xv, &q, &q, &v, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_qkv_forward(&qkv, &ps, &tape, xv, &q, &k, &k, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_qkv_forward(&qkv, &ps, &tape, xv, &v, &k, &v, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "qkv.forward");

    ck_assert_int_eq(llm_qkv_forward(&qkv, &ps, &tape, sv, &q, &k, &v, &err), LLM_ERR_RANK);
    ck_assert_str_eq(where(&err), "qkv.forward");
    ck_assert_int_eq(llm_qkv_forward(&qkv, &ps, &tape, xnv, &q, &k, &v, &err), LLM_ERR_SHAPE);
    ck_assert_str_eq(where(&err), "qkv.forward");
    ck_assert_int_eq(llm_qkv_forward(&qkv, &ps, &tape, stale, &q, &k, &v, &err), LLM_ERR_TAPE);
    ck_assert_int_eq(llm_qkv_forward(&qkv, &ps, &tape, foreign, &q, &k, &v, &err), LLM_ERR_TAPE);

    bad = qkv;
    bad.key.weight = 3;
    ck_assert_int_eq(llm_qkv_forward(&bad, &ps, &tape, xv, &q, &k, &v, &err), LLM_ERR_NAME);
    ck_assert_str_eq(where(&err), "qkv.forward");
    ck_assert(strstr(err.message, "key") != NULL);
    bad = qkv;
    bad.d_model = 2;
    ck_assert_int_eq(llm_qkv_forward(&bad, &ps, &tape, xv, &q, &k, &v, &err), LLM_ERR_SHAPE);
    bad = qkv;
    bad.value.has_bias = 1;
    ck_assert_int_eq(llm_qkv_forward(&bad, &ps, &tape, xv, &q, &k, &v, &err), LLM_ERR_SHAPE);
    ck_assert(strstr(err.message, "attn.value.weight") != NULL);
    ck_assert_uint_eq(tape.count, nodes);       /* every refusal recorded nothing */

    ps.items[qkv.value.weight].value.data[4] = NAN;  /* the tape refuses the leaf */
    ck_assert_int_eq(llm_qkv_forward(&qkv, &ps, &tape, xv, &q, &k, &v, &err),
                     LLM_ERR_NONFINITE);
    ck_assert_uint_eq(tape.count, nodes);       /* the query and key were rewound */
    ps.items[qkv.value.weight].value.data[4] = fix_wv[4];
    {
        /* finite weights whose product with x overflows, on the value only:
           refused after the query and the key were recorded */
        size_t j;
        for (j = 0; j < ps.items[qkv.value.weight].value.size; j++)
            ps.items[qkv.value.weight].value.data[j] = 1e308;
        ck_assert_int_eq(llm_qkv_forward(&qkv, &ps, &tape, xv, &q, &k, &v, &err),
                         LLM_ERR_NONFINITE);
        ck_assert_str_eq(where(&err), "qkv.forward <- tape.matmul");
        ck_assert_uint_eq(tape.count, nodes);
        memcpy(ps.items[qkv.value.weight].value.data, fix_wv, sizeof fix_wv);
    }

    ck_assert(memcmp(&q, &marker, sizeof q) == 0);
    ck_assert(memcmp(&k, &marker, sizeof k) == 0);
    ck_assert(memcmp(&v, &marker, sizeof v) == 0);
    /* the rewound leaves are not found again: the next call records the
       query's weight afresh at the first free id */
    ck_assert_int_eq(llm_qkv_forward(&qkv, &ps, &tape, xv, &q, &k, &v, NULL), LLM_OK);
    ck_assert_ptr_eq(tape.nodes[nodes].op, &llm_op_leaf);
    ck_assert_ptr_eq(tape.nodes[nodes].grad, &ps.items[qkv.query.weight].grad);
    ck_assert_uint_eq(ps.count, 3);
    llm_tape_free(&tape);
    llm_tape_free(&other);
    llm_tensor_free(&x);
    llm_tensor_free(&xn);
    llm_tensor_free(&sc);
    llm_params_free(&ps);
}
END_TEST

/* Grouped widths: a query of 4, a key and a value of 2, from width 3. */
START_TEST(grouped_projections_have_their_own_widths)
{
    static const double xs[6] = {1, 0, -1, 0.5, 2, -0.5};
    const size_t s23[2] = {2, 3};
    llm_params ps, same;
    llm_qkv g, e, marker, out;
    llm_rng rng, rng2, before;
    llm_tape tape;
    llm_tensor x;
    llm_var vx, q, k, v;
    const llm_tensor *t;
    llm_error err;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_init(&same, NULL), LLM_OK);
    llm_rng_seed(&rng, 40);
    rng2 = rng;
    ck_assert_int_eq(llm_qkv_init_grouped(&g, &ps, "attn", 3, 4, 2, &rng, NULL), LLM_OK);
    ck_assert_uint_eq(g.d_k, 4);
    ck_assert_uint_eq(g.d_kv, 2);
    ck_assert_uint_eq(ps.items[0].value.shape[1], 4);          /* query [3, 4] */
    ck_assert_uint_eq(ps.items[1].value.shape[1], 2);          /* key   [3, 2] */
    ck_assert_uint_eq(ps.items[2].value.shape[1], 2);          /* value [3, 2] */
    /* equal widths through the grouped constructor are llm_qkv_init, draw for draw */
    ck_assert_int_eq(llm_qkv_init_grouped(&e, &same, "attn", 3, 2, 2, &rng2, NULL), LLM_OK);
    {
        llm_params ref;
        llm_qkv r;
        llm_rng rng3;
        size_t i;
        llm_rng_seed(&rng3, 40);
        ck_assert_int_eq(llm_params_init(&ref, NULL), LLM_OK);
        ck_assert_int_eq(llm_qkv_init(&r, &ref, "attn", 3, 2, &rng3, NULL), LLM_OK);
        ck_assert_uint_eq(r.d_kv, 2);
        for (i = 0; i < 3; i++)
            ck_assert(memcmp(ref.items[i].value.data, same.items[i].value.data,
                             6 * sizeof(double)) == 0);
        ck_assert(rng3.state == rng2.state);
        llm_params_free(&ref);
    }
    /* the forward pass gives each output its own width */
    ck_assert_int_eq(llm_tensor_from(&x, 2, s23, xs, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &x, &vx, NULL), LLM_OK);
    ck_assert_int_eq(llm_qkv_forward(&g, &ps, &tape, vx, &q, &k, &v, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&tape, q, &t, NULL), LLM_OK);
    ck_assert_uint_eq(t->shape[1], 4);
    ck_assert_int_eq(llm_tape_value(&tape, k, &t, NULL), LLM_OK);
    ck_assert_uint_eq(t->shape[1], 2);
    ck_assert_int_eq(llm_tape_value(&tape, v, &t, NULL), LLM_OK);
    ck_assert_uint_eq(t->shape[1], 2);
    /* a grouped layer read against an ungrouped list is refused */
    ck_assert_int_eq(llm_qkv_forward(&g, &same, &tape, vx, &q, &k, &v, &err), LLM_ERR_SHAPE);
    ck_assert_str_eq(err.stage, "qkv.forward");
    /* refusals: a zero width, under the grouped stage; nothing changes */
    memset(&marker, 0x5a, sizeof marker);
    out = marker;
    before = rng;
    ck_assert_int_eq(llm_qkv_init_grouped(&out, &ps, "b", 3, 4, 0, &rng, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.stage, "qkv.init_grouped");
    ck_assert_ptr_nonnull(strstr(err.message, "widths 4 and 0"));
    ck_assert_int_eq(llm_qkv_init_grouped(&out, &ps, "attn", 3, 4, 2, &rng, &err),
                     LLM_ERR_NAME);                               /* taken */
    ck_assert_str_eq(where(&err), "qkv.init_grouped <- params.add_xavier");
    ck_assert(memcmp(&out, &marker, sizeof out) == 0);
    ck_assert(rng.state == before.state);
    ck_assert_uint_eq(ps.count, 3);
    /* the check: the layer as built passes, a layer whose widths disagree
       with its projections does not */
    ck_assert_int_eq(llm_qkv_check(&g, &ps, "attn", &err), LLM_OK);
    out = g;
    out.d_kv = 3;
    ck_assert_int_eq(llm_qkv_check(&out, &ps, "attn", &err), LLM_ERR_SHAPE);
    ck_assert_str_eq(err.stage, "qkv.check");
    out = g;
    out.d_model = 7;
    ck_assert_int_eq(llm_qkv_check(&out, &ps, "attn", &err), LLM_ERR_SHAPE);
    llm_tape_free(&tape);
    llm_tensor_free(&x);
    llm_params_free(&ps);
    llm_params_free(&same);
}
END_TEST

Suite *ch26_qkv_projections_suite(void)
{
    const TTest *tests[] = {
        init_draws_query_key_value_in_row_major_order,
        grouped_projections_have_their_own_widths,
        a_replay_from_seed_26_is_bit_identical,
        init_appends_after_existing_parameters,
        init_refusals_touch_neither_projections_list_nor_generator,
        a_prefix_is_refused_exactly_when_a_name_would_exceed_63_characters,
        a_failure_on_the_value_rolls_back_query_and_key,
        the_fixture_gives_the_rust_course_projections,
        one_projection_does_not_see_the_others_weights,
        leading_axes_are_kept_and_empty_axes_give_empty_outputs,
        every_weight_and_input_coordinate_passes_the_gradient_check,
        two_passes_on_one_tape_share_each_weights_leaf,
        forward_refusals_name_their_stage_and_leave_the_outputs_alone,
    };
    return suite_of("ch26 qkv projections", tcase_of("qkv", 0, tests, COUNT(tests)));
}
