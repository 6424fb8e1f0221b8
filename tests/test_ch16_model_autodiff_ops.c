/* Chapter 16: matmul, lookup, nonlinearities, log-softmax and the fused loss
   on the tensor tape: the Rust course's fixture, every VJP against central
   differences on every coordinate, extreme inputs, refusals. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/error.h"
#include "llm/gradcheck.h"
#include "llm/tape.h"
#include "llm/tensor.h"
#include "../tangled/src/tape_op.h"   /* white-box: the tape's nodes */
#include "support.h"


static llm_tensor zeros(size_t rank, const size_t *shape)
{
    llm_tensor t;
    ck_assert_int_eq(llm_tensor_zeros(&t, rank, shape, NULL), LLM_OK);
    return t;
}

/* element i of one of four patterns: 0 in [-4/3, 4/3], 1 positive,
   2 away from zero with both signs, 3 in [-8, 8] */
static llm_tensor pattern(size_t rank, const size_t *shape, int kind)
{
    llm_tensor t = zeros(rank, shape);
    size_t i;
    for (i = 0; i < t.size; i++) {
        const double k = (double)(i * 5 % 9);
        t.data[i] = kind == 0 ? (k - 4.0) / 3.0
                  : kind == 1 ? 0.25 + 0.25 * k
                  : kind == 2 ? (i % 2 ? -1.0 : 1.0) * (0.5 + 0.25 * k)
                  : 2.0 * (k - 4.0);
    }
    return t;
}

static double weight(size_t i)
{
    return (double)((long)(i * 7 % 11) - 5) / 4.0;
}

static const llm_tensor *value_of(llm_tape *tape, llm_var v)
{
    const llm_tensor *t = NULL;
    ck_assert_int_eq(llm_tape_value(tape, v, &t, NULL), LLM_OK);
    return t;
}

/* ------------------------------------------------------------ the fixture */

static const double fix_e[6] = {2, 2, 1, -1, -1, 1};
static const double fix_w[4] = {1, -1, 1, -1};
static const size_t fix_ids[4] = {1, 1, 1, 2}, fix_targets[4] = {0, 0, 0, 1};
static const size_t s32[2] = {3, 2}, s22[2] = {2, 2}, four[1] = {4};

START_TEST(fixture_matches_the_rust_course)
{
    static const double dw[4] = {-0.25, 0.25, 0.25, -0.25};
    static const double de[6] = {0, 0, -0.375, -0.375, 0.125, 0.125};
    llm_tape tape;
    llm_tensor e = make_tensor(2, s32, fix_e), w = make_tensor(2, s22, fix_w);
    llm_tensor ge = zeros(2, s32), gw = zeros(2, s22);
    llm_var ve, vw, x, z, h, loss;
    const llm_tensor *t;
    size_t i;
    ck_assert_int_eq(llm_tape_init(&tape, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &e, &ge, &ve, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &w, &gw, &vw, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_gather(&tape, ve, fix_ids, 1, four, &x, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_matmul(&tape, x, vw, 0, 0, &z, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_silu(&tape, z, &h, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_nll_mean(&tape, h, fix_targets, 4, &loss, NULL), LLM_OK);
    t = value_of(&tape, x);
    assert_shape(t, 2, (const size_t[]){4, 2});
    for (i = 0; i < 8; i++)                     /* rows 1, 1, 1, 2 of E */
        ck_assert(t->data[t->offset + i] == fix_e[2 * fix_ids[i / 2] + i % 2]);
    t = value_of(&tape, z);
    for (i = 0; i < 8; i++)
        ck_assert(t->data[t->offset + i] == 0.0);
    t = value_of(&tape, loss);
    ck_assert_uint_eq(t->rank, 0);
    ck_assert(fabs(t->data[t->offset] - log(2.0)) < 1e-15);
    ck_assert(fabs(t->data[t->offset] - 0.693147180560) < 5e-13);
    ck_assert_int_eq(llm_tape_backward(&tape, loss, NULL, 0, NULL), LLM_OK);
    ck_assert_mem_eq(gw.data, dw, sizeof dw);
    ck_assert_mem_eq(ge.data, de, sizeof de);
    llm_tape_free(&tape);
    llm_tensor_free(&e); llm_tensor_free(&w); llm_tensor_free(&ge); llm_tensor_free(&gw);
}
END_TEST

/* The logits of the fixture as a leaf: +-1/8, then through SiLU +-1/16. */
START_TEST(fixture_logit_and_preactivation_gradients)
{
    static const double zero[8] = {0};
    llm_tape tape;
    llm_tensor h = make_tensor(2, (const size_t[]){4, 2}, zero), gh = zeros(2, (const size_t[]){4, 2});
    llm_tensor z = make_tensor(2, (const size_t[]){4, 2}, zero), gz = zeros(2, (const size_t[]){4, 2});
    llm_var vh, vz, s, loss;
    size_t p, j;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &h, &gh, &vh, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_nll_mean(&tape, vh, fix_targets, 4, &loss, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, loss, NULL, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &z, &gz, &vz, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_silu(&tape, vz, &s, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_nll_mean(&tape, s, fix_targets, 4, &loss, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, loss, NULL, 0, NULL), LLM_OK);
    for (p = 0; p < 4; p++)
        for (j = 0; j < 2; j++) {
            const double sign = j == fix_targets[p] ? -1.0 : 1.0;
            ck_assert(gh.data[2 * p + j] == sign / 8.0);
            ck_assert(gz.data[2 * p + j] == sign / 16.0);
        }
    llm_tape_free(&tape);
    llm_tensor_free(&h); llm_tensor_free(&gh); llm_tensor_free(&z); llm_tensor_free(&gz);
}
END_TEST

/* ------------------------------------------- every VJP, every coordinate */

enum kind { K_MATMUL, K_GATHER, K_EXP, K_LOG, K_SQRT, K_RECIPROCAL, K_SIGMOID, K_SILU,
            K_LOG_SOFTMAX, K_NLL };

typedef struct op {
    enum kind kind;
    llm_tensor *arg[2];
    size_t nargs, wrt, axis;
    int ta, tb;
    const size_t *index, *index_shape;
    size_t index_rank, nindex;
    llm_tape *tape;
} op;

static llm_status apply(const op *c, const llm_var *v, llm_var *y, llm_error *err)
{
    llm_tape *t = c->tape;
    switch (c->kind) {
    case K_MATMUL:      return llm_tape_matmul(t, v[0], v[1], c->ta, c->tb, y, err);
    case K_GATHER:      return llm_tape_gather(t, v[0], c->index, c->index_rank,
                                               c->index_shape, y, err);
    case K_EXP:         return llm_tape_exp(t, v[0], y, err);
    case K_LOG:         return llm_tape_log(t, v[0], y, err);
    case K_SQRT:        return llm_tape_sqrt(t, v[0], y, err);
    case K_RECIPROCAL:  return llm_tape_reciprocal(t, v[0], y, err);
    case K_SIGMOID:     return llm_tape_sigmoid(t, v[0], y, err);
    case K_SILU:        return llm_tape_silu(t, v[0], y, err);
    case K_LOG_SOFTMAX: return llm_tape_log_softmax(t, v[0], c->axis, y, err);
    default:            return llm_tape_nll_mean(t, v[0], c->index, c->nindex, y, err);
    }
}

static llm_status record(const op *c, const llm_tensor *theta, llm_tensor *g, llm_var *y,
                         llm_error *err)
{
    llm_var v[2];
    size_t k;
    llm_status st = LLM_OK;
    if ((st = llm_tape_reset(c->tape, err)) != LLM_OK)
        return st;
    for (k = 0; k < c->nargs && st == LLM_OK; k++) {
        const llm_tensor *x = k == c->wrt ? theta : c->arg[k];
        st = k == c->wrt && g != NULL ? llm_tape_leaf(c->tape, x, g, &v[k], err)
                                      : llm_tape_constant(c->tape, x, &v[k], err);
    }
    return st == LLM_OK ? apply(c, v, y, err) : st;
}

static llm_status objective(void *ctx, const llm_tensor *theta, double *value,
                            llm_error *err)
{
    const op *c = ctx;
    const llm_tensor *out = NULL;
    llm_var y;
    double s = 0.0;
    size_t i;
    llm_status st = record(c, theta, NULL, &y, err);
    if (st == LLM_OK)
        st = llm_tape_value(c->tape, y, &out, err);
    if (st != LLM_OK)
        return st;
    for (i = 0; i < out->size; i++)
        s += weight(i) * out->data[out->offset + i];
    *value = s;
    return LLM_OK;
}

/* the tape's gradient of objective() with respect to operand wrt, checked
   against central differences on every one of its coordinates */
static void check_every_coordinate(op *c, size_t wrt)
{
    llm_tensor *theta = c->arg[wrt], g = zeros(theta->rank, theta->shape), seed;
    const llm_tensor *out;
    double worst = -1.0;
    size_t failures = 99, i, *coords = malloc(theta->size * sizeof *coords);
    llm_var y;
    ck_assert_ptr_nonnull(coords);
    c->wrt = wrt;
    ck_assert_int_eq(record(c, theta, &g, &y, NULL), LLM_OK);
    out = value_of(c->tape, y);
    seed = zeros(out->rank, out->shape);
    for (i = 0; i < seed.size; i++)
        seed.data[i] = weight(i);
    ck_assert_int_eq(llm_tape_backward(c->tape, y, &seed, 0, NULL), LLM_OK);
    for (i = 0; i < theta->size; i++)
        coords[i] = i;
    ck_assert_int_eq(llm_gradient_check(objective, c, theta, g.data, coords, theta->size,
                                        1e-5, 1e-6, &worst, &failures, NULL), LLM_OK);
    ck_assert_uint_eq(failures, 0);
    ck_assert(worst >= 0.0 && worst < 1e-6);
    free(coords);
    llm_tensor_free(&g);
    llm_tensor_free(&seed);
}

static void check_op(enum kind kind, size_t nargs, const size_t *rank, const size_t *const *shape,
                     int fill, int ta, int tb, size_t axis)
{
    static const size_t ids[6] = {1, 2, 1, 1, 0, 1}, ids_shape[2] = {2, 3};
    static const size_t targets[3] = {1, 3, 0};
    llm_tape tape;
    llm_tensor x[2];
    op c;
    size_t k;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    c.kind = kind;
    c.nargs = nargs;
    c.ta = ta;
    c.tb = tb;
    c.axis = axis;
    c.tape = &tape;
    c.index = kind == K_GATHER ? ids : targets;
    c.index_shape = ids_shape;
    c.index_rank = 2;
    c.nindex = 3;
    for (k = 0; k < nargs; k++) {
        x[k] = pattern(rank[k], shape[k], fill);
        c.arg[k] = &x[k];
    }
    for (k = 0; k < nargs; k++)
        check_every_coordinate(&c, k);
    for (k = 0; k < nargs; k++)
        llm_tensor_free(&x[k]);
    llm_tape_free(&tape);
}

START_TEST(matmul_vjps_for_every_flag_and_broadcast)
{
    static const size_t s223[3] = {2, 2, 3}, s232[3] = {2, 3, 2}, s123[3] = {1, 2, 3};
    static const size_t a32[2] = {3, 2}, a23[2] = {2, 3}, s2134[4] = {2, 1, 3, 4};
    static const size_t s342[3] = {3, 4, 2};
    const size_t r32[2] = {3, 2}, r23[2] = {2, 3}, r33[2] = {3, 3}, r43[2] = {4, 3};
    check_op(K_MATMUL, 2, r32, (const size_t *const[]){s223, a32}, 0, 0, 0, 0);
    check_op(K_MATMUL, 2, r23, (const size_t *const[]){a32, s232}, 0, 1, 0, 0);
    check_op(K_MATMUL, 2, r33, (const size_t *const[]){s223, s123}, 0, 0, 1, 0);
    check_op(K_MATMUL, 2, r32, (const size_t *const[]){s232, a23}, 0, 1, 1, 0);
    check_op(K_MATMUL, 2, r43, (const size_t *const[]){s2134, s342}, 0, 0, 0, 0);
}
END_TEST

START_TEST(gather_vjp_with_repeated_ids)
{
    const size_t r[1] = {2};
    check_op(K_GATHER, 1, r, (const size_t *const[]){s32}, 0, 0, 0, 0);
}
END_TEST

START_TEST(elementwise_vjps)
{
    static const size_t s23[2] = {2, 3};
    const size_t r[1] = {2};
    check_op(K_EXP, 1, r, (const size_t *const[]){s23}, 0, 0, 0, 0);
    check_op(K_LOG, 1, r, (const size_t *const[]){s23}, 1, 0, 0, 0);
    check_op(K_SQRT, 1, r, (const size_t *const[]){s23}, 1, 0, 0, 0);
    check_op(K_RECIPROCAL, 1, r, (const size_t *const[]){s23}, 2, 0, 0, 0);
    check_op(K_SIGMOID, 1, r, (const size_t *const[]){s23}, 3, 0, 0, 0);
    check_op(K_SILU, 1, r, (const size_t *const[]){s23}, 3, 0, 0, 0);
}
END_TEST

START_TEST(log_softmax_vjp_on_every_axis)
{
    static const size_t s234[3] = {2, 3, 4};
    const size_t r[1] = {3};
    size_t axis;
    for (axis = 0; axis < 3; axis++)
        check_op(K_LOG_SOFTMAX, 1, r, (const size_t *const[]){s234}, 3, 0, 0, axis);
}
END_TEST

START_TEST(nll_mean_vjp)
{
    static const size_t s34[2] = {3, 4};
    const size_t r[1] = {2};
    check_op(K_NLL, 1, r, (const size_t *const[]){s34}, 3, 0, 0, 0);
}
END_TEST

/* ------------------------------------------------------- specific claims */

START_TEST(repeated_ids_accumulate_and_unused_rows_stay_zero)
{
    static const size_t ids[5] = {2, 2, 0, 2, 2}, five[1] = {5};
    llm_tape tape;
    llm_tensor e = make_tensor(2, s32, fix_e), ge = zeros(2, s32), seed;
    llm_var ve, x, y;
    size_t i;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &e, &ge, &ve, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_gather(&tape, ve, ids, 1, five, &x, NULL), LLM_OK);
    /* a second lookup from the same table adds on top */
    ck_assert_int_eq(llm_tape_gather(&tape, ve, ids, 1, five, &y, NULL), LLM_OK);
    seed = zeros(2, (const size_t[]){5, 2});
    for (i = 0; i < 10; i++)
        seed.data[i] = (double)(i + 1);            /* position p sends 2p+1, 2p+2 */
    ck_assert_int_eq(llm_tape_backward(&tape, x, &seed, 1, NULL), LLM_OK);
    ck_assert(ge.data[0] == 5.0 && ge.data[1] == 6.0);            /* position 2 */
    ck_assert(ge.data[2] == 0.0 && ge.data[3] == 0.0);            /* never used */
    ck_assert(ge.data[4] == 1.0 + 3.0 + 7.0 + 9.0);              /* positions 0, 1, 3, 4 */
    ck_assert(ge.data[5] == 2.0 + 4.0 + 8.0 + 10.0);
    ck_assert_int_eq(llm_tape_backward(&tape, y, &seed, 1, NULL), LLM_OK);
    ck_assert(ge.data[4] == 40.0 && ge.data[5] == 48.0 && ge.data[2] == 0.0);
    llm_tape_free(&tape);
    llm_tensor_free(&e); llm_tensor_free(&ge); llm_tensor_free(&seed);
}
END_TEST

START_TEST(gather_shapes_and_copies_its_ids)
{
    size_t ids[6] = {2, 0, 1, 1, 2, 0};
    static const size_t s23[2] = {2, 3};
    llm_tape tape;
    llm_tensor e = make_tensor(2, s32, fix_e), ge = zeros(2, s32), seed;
    llm_var ve, x;
    const llm_tensor *t;
    size_t i;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &e, &ge, &ve, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_gather(&tape, ve, ids, 2, s23, &x, NULL), LLM_OK);
    t = value_of(&tape, x);
    assert_shape(t, 3, (const size_t[]){2, 3, 2});
    for (i = 0; i < 12; i++)
        ck_assert(t->data[t->offset + i] == fix_e[2 * ids[i / 2] + i % 2]);
    for (i = 0; i < 6; i++)
        ids[i] = 0;                              /* the tape kept its own copy */
    seed = zeros(3, t->shape);
    for (i = 0; i < 12; i++)
        seed.data[i] = 1.0;
    ck_assert_int_eq(llm_tape_backward(&tape, x, &seed, 0, NULL), LLM_OK);
    for (i = 0; i < 6; i++)
        ck_assert(ge.data[i] == 2.0);            /* every row was used twice */
    llm_tape_free(&tape);
    llm_tensor_free(&e); llm_tensor_free(&ge); llm_tensor_free(&seed);
}
END_TEST

START_TEST(gather_of_no_positions_and_of_a_scalar_id)
{
    static const size_t zero[2] = {0, 3}, one_id[1] = {2};
    llm_tape tape;
    llm_tensor e = make_tensor(2, s32, fix_e), ge = zeros(2, s32), seed;
    llm_var ve, x, y;
    const llm_tensor *t;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &e, &ge, &ve, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_gather(&tape, ve, NULL, 2, zero, &x, NULL), LLM_OK);
    t = value_of(&tape, x);
    ck_assert_uint_eq(t->rank, 3);
    ck_assert_uint_eq(t->size, 0);
    ck_assert_int_eq(llm_tape_gather(&tape, ve, one_id, 0, NULL, &y, NULL), LLM_OK);
    t = value_of(&tape, y);
    assert_shape(t, 1, (const size_t[]){2});
    ck_assert(t->data[t->offset] == -1.0 && t->data[t->offset + 1] == 1.0);
    seed = make_tensor(1, (const size_t[]){2}, (const double[]){3, 4});
    ck_assert_int_eq(llm_tape_backward(&tape, y, &seed, 0, NULL), LLM_OK);
    ck_assert(ge.data[4] == 3.0 && ge.data[5] == 4.0 && ge.data[0] == 0.0);
    llm_tape_free(&tape);
    llm_tensor_free(&e); llm_tensor_free(&ge); llm_tensor_free(&seed);
}
END_TEST

/* dA = dC B^T through a materialised B^T: the same bits as llm_matmul with the
   transpose flag, and batch gradients summed over a broadcast operand */
START_TEST(matmul_gradients_equal_the_products_they_stand_for)
{
    static const size_t sa[3] = {2, 3, 4}, sb[3] = {1, 4, 5};
    llm_tape tape;
    llm_tensor a = pattern(3, sa, 0), b = pattern(3, sb, 3), ga = zeros(3, sa),
               gb = zeros(3, sb), dc, da, db_full;
    llm_var va, vb, c;
    const llm_tensor *cv;
    size_t i;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &a, &ga, &va, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &b, &gb, &vb, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_matmul(&tape, va, vb, 0, 0, &c, NULL), LLM_OK);
    cv = value_of(&tape, c);
    dc = pattern(cv->rank, cv->shape, 3);
    ck_assert_int_eq(llm_tape_backward(&tape, c, &dc, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_matmul(&da, &dc, &b, 0, 1, NULL), LLM_OK);      /* dC B^T */
    ck_assert_mem_eq(ga.data, da.data, da.size * sizeof(double));
    ck_assert_int_eq(llm_matmul(&db_full, &a, &dc, 1, 0, NULL), LLM_OK); /* A^T dC, [2,4,5] */
    for (i = 0; i < 20; i++)                                /* summed over the batch */
        ck_assert(gb.data[i] == (0.0 + db_full.data[i]) + db_full.data[20 + i]);
    llm_tape_free(&tape);
    llm_tensor_free(&a); llm_tensor_free(&b); llm_tensor_free(&ga); llm_tensor_free(&gb);
    llm_tensor_free(&dc); llm_tensor_free(&da); llm_tensor_free(&db_full);
}
END_TEST

START_TEST(extreme_logits_give_a_finite_loss_and_gradient)
{
    static const double l[6] = {1000, -1000, 0, -1000, 1000, 999};
    static const size_t targets[2] = {1, 2}, s23[2] = {2, 3};
    llm_tape tape;
    llm_tensor x = make_tensor(2, s23, l), g = zeros(2, s23);
    llm_var v, loss, ls;
    const llm_tensor *t;
    size_t i;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &x, &g, &v, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_nll_mean(&tape, v, targets, 2, &loss, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_log_softmax(&tape, v, 1, &ls, NULL), LLM_OK);
    t = value_of(&tape, loss);
    ck_assert(isfinite(t->data[t->offset]));
    ck_assert(fabs(t->data[t->offset] - (2000.0 + log1p(exp(-1.0)) + 1.0) / 2.0) < 1e-9);
    t = value_of(&tape, ls);
    for (i = 0; i < 6; i++)
        ck_assert(isfinite(t->data[t->offset + i]));
    ck_assert_int_eq(llm_tape_backward(&tape, loss, NULL, 1, NULL), LLM_OK);
    for (i = 0; i < 6; i++)
        ck_assert(isfinite(g.data[i]));
    ck_assert(g.data[0] == 0.5 && g.data[1] == -0.5 && g.data[2] == 0.0);
    ck_assert(fabs(g.data[3]) == 0.0);
    ck_assert(fabs(g.data[4] - 0.5 / (1.0 + exp(-1.0))) < 1e-15);
    ck_assert(fabs(g.data[5] + 0.5 / (1.0 + exp(1.0)) * exp(1.0)) < 1e-15);
    llm_tape_free(&tape);
    llm_tensor_free(&x); llm_tensor_free(&g);
}
END_TEST

START_TEST(sigmoid_and_silu_at_plus_minus_1000_stay_finite)
{
    static const double xs[4] = {-1000, -40, 40, 1000};
    static const size_t s4[1] = {4};
    llm_tape tape;
    llm_tensor x = make_tensor(1, s4, xs), g1 = zeros(1, s4), g2 = zeros(1, s4), seed;
    llm_var v1, v2, s, q;
    const llm_tensor *t;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &x, &g1, &v1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &x, &g2, &v2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sigmoid(&tape, v1, &s, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_silu(&tape, v2, &q, NULL), LLM_OK);
    t = value_of(&tape, s);
    ck_assert(t->data[t->offset] == 0.0 && t->data[t->offset + 3] == 1.0);
    ck_assert(t->data[t->offset + 1] > 0.0);                  /* e^-40, not 0 */
    t = value_of(&tape, q);
    ck_assert(t->data[t->offset] == 0.0 && t->data[t->offset + 3] == 1000.0);
    seed = make_tensor(1, s4, (const double[]){1, 1, 1, 1});
    ck_assert_int_eq(llm_tape_backward(&tape, s, &seed, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, q, &seed, 1, NULL), LLM_OK);
    ck_assert(g1.data[0] == 0.0 && g1.data[3] == 0.0);
    /* sigma'(40) = sigma(40) sigma(-40) ~ e^-40: exact to rounding, not 0 */
    ck_assert(fabs(g1.data[2] / exp(-40.0) - 1.0) < 1e-12);
    ck_assert(fabs(g1.data[1] / exp(-40.0) - 1.0) < 1e-12);
    ck_assert(g2.data[0] == 0.0 && g2.data[3] == 1.0);
    ck_assert(isfinite(g2.data[1]) && isfinite(g2.data[2]));
    llm_tape_free(&tape);
    llm_tensor_free(&x); llm_tensor_free(&g1); llm_tensor_free(&g2); llm_tensor_free(&seed);
}
END_TEST

/* ------------------------------------------------------------- refusals */

START_TEST(domain_errors_are_refused_before_anything_is_recorded)
{
    static const double v[6] = {4, 0, -1, 1000, 1e-320, 2};
    static const size_t s23[2] = {2, 3};
    llm_tape tape;
    llm_tensor x = make_tensor(2, s23, v), one;
    llm_var vx, vo, id = {77, 77};
    llm_error err;
    size_t count;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &x, &vx, NULL), LLM_OK);
    count = tape.count;
    REFUSED(llm_tape_log(&tape, vx, &id, &err), LLM_ERR_NONFINITE, "tape.log");
    ck_assert_ptr_nonnull(strstr(err.message, "[0, 1]"));     /* the 0 */
    REFUSED(llm_tape_sqrt(&tape, vx, &id, &err), LLM_ERR_NONFINITE, "tape.sqrt");
    ck_assert_ptr_nonnull(strstr(err.message, "[0, 2]"));     /* the -1 */
    REFUSED(llm_tape_reciprocal(&tape, vx, &id, &err), LLM_ERR_NONFINITE, "tape.reciprocal");
    ck_assert_ptr_nonnull(strstr(err.message, "[0, 1]"));
    REFUSED(llm_tape_exp(&tape, vx, &id, &err), LLM_ERR_NONFINITE, "tape.exp");
    ck_assert_ptr_nonnull(strstr(err.message, "[1, 0]"));     /* e^1000 */
    llm_tensor_free(&x);
    x = make_tensor(1, (const size_t[]){1}, v + 4);
    ck_assert_int_eq(llm_tape_constant(&tape, &x, &vo, NULL), LLM_OK);
    count = tape.count;
    REFUSED(llm_tape_reciprocal(&tape, vo, &id, &err), LLM_ERR_NONFINITE, "tape.reciprocal");
    ck_assert_uint_eq(tape.count, count);
    ck_assert(id.id == 77 && id.epoch == 77);
    /* sqrt(0) is accepted; its infinite derivative refuses the pass */
    one = make_tensor(1, (const size_t[]){1}, v + 1);
    {
        llm_tensor g = make_tensor(1, (const size_t[]){1}, v + 5), seed = make_tensor(1, (const size_t[]){1}, v + 5);
        llm_var z, r;
        ck_assert_int_eq(llm_tape_leaf(&tape, &one, &g, &z, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_sqrt(&tape, z, &r, NULL), LLM_OK);
        REFUSED(llm_tape_backward(&tape, r, &seed, 1, &err), LLM_ERR_NONFINITE, "tape.backward");
        ck_assert(g.data[0] == 2.0);                          /* untouched */
        llm_tensor_free(&g);
        llm_tensor_free(&seed);
    }
    llm_tape_free(&tape);
    llm_tensor_free(&x); llm_tensor_free(&one);
}
END_TEST

START_TEST(lookup_refusals_record_nothing)
{
    static const size_t bad[6] = {0, 1, 2, 2, 3, 0}, s23[2] = {2, 3};
    static const size_t deep[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    static const size_t huge[2] = {SIZE_MAX / 2 + 1, 4};
    llm_tape tape;
    llm_tensor e = make_tensor(2, s32, fix_e), ge = zeros(2, s32), s = make_tensor(0, NULL, fix_e);
    llm_var ve, vs, id = {77, 77};
    llm_error err;
    size_t count;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &e, &ge, &ve, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &s, &vs, NULL), LLM_OK);
    count = tape.count;
    REFUSED(llm_tape_gather(&tape, ve, bad, 2, s23, &id, &err), LLM_ERR_INDEX, "tape.gather");
    ck_assert_ptr_nonnull(strstr(err.message, "[1, 1]"));     /* position of the 3 */
    ck_assert_ptr_nonnull(strstr(err.message, "3 rows"));
    REFUSED(llm_tape_gather(&tape, vs, bad, 2, s23, &id, &err), LLM_ERR_RANK, "tape.gather");
    REFUSED(llm_tape_gather(&tape, ve, bad, 8, deep, &id, &err), LLM_ERR_RANK, "tape.gather");
    REFUSED(llm_tape_gather(&tape, ve, NULL, 2, s23, &id, &err), LLM_ERR_ARGUMENT,
            "tape.gather");
    REFUSED(llm_tape_gather(&tape, ve, bad, 2, NULL, &id, &err), LLM_ERR_ARGUMENT,
            "tape.gather");
    REFUSED(llm_tape_gather(&tape, ve, bad, 2, s23, NULL, &err), LLM_ERR_ARGUMENT,
            "tape.gather");
    REFUSED(llm_tape_gather(&tape, ve, bad, 2, huge, &id, &err), LLM_ERR_OVERFLOW,
            "tape.gather <- tensor.row_major");
    REFUSED(llm_tape_gather(NULL, ve, bad, 2, s23, &id, &err), LLM_ERR_ARGUMENT,
            "tape.gather");
    ck_assert_uint_eq(tape.count, count);
    ck_assert(id.id == 77 && id.epoch == 77);
    llm_tape_free(&tape);
    llm_tensor_free(&e); llm_tensor_free(&ge); llm_tensor_free(&s);
}
END_TEST

START_TEST(every_operation_refuses_null_and_stale_operands)
{
    static const size_t targets[3] = {0, 1, 0};
    llm_tape tape;
    llm_tensor e = make_tensor(2, s32, fix_e);
    llm_var ve, stale, id = {77, 77};
    llm_error err;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &e, &stale, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &e, &ve, NULL), LLM_OK);
    REFUSED(llm_tape_matmul(&tape, ve, ve, 1, 0, NULL, &err), LLM_ERR_ARGUMENT, "tape.matmul");
    REFUSED(llm_tape_exp(&tape, ve, NULL, &err), LLM_ERR_ARGUMENT, "tape.exp");
    REFUSED(llm_tape_log(&tape, ve, NULL, &err), LLM_ERR_ARGUMENT, "tape.log");
    REFUSED(llm_tape_sqrt(&tape, ve, NULL, &err), LLM_ERR_ARGUMENT, "tape.sqrt");
    REFUSED(llm_tape_reciprocal(&tape, ve, NULL, &err), LLM_ERR_ARGUMENT, "tape.reciprocal");
    REFUSED(llm_tape_sigmoid(&tape, ve, NULL, &err), LLM_ERR_ARGUMENT, "tape.sigmoid");
    REFUSED(llm_tape_silu(&tape, ve, NULL, &err), LLM_ERR_ARGUMENT, "tape.silu");
    REFUSED(llm_tape_log_softmax(&tape, ve, 1, NULL, &err), LLM_ERR_ARGUMENT,
            "tape.log_softmax");
    REFUSED(llm_tape_nll_mean(&tape, ve, targets, 3, NULL, &err), LLM_ERR_ARGUMENT,
            "tape.nll_mean");
    REFUSED(llm_tape_matmul(&tape, stale, ve, 1, 0, &id, &err), LLM_ERR_TAPE, "tape.matmul");
    REFUSED(llm_tape_matmul(&tape, ve, stale, 1, 0, &id, &err), LLM_ERR_TAPE, "tape.matmul");
    REFUSED(llm_tape_gather(&tape, stale, targets, 1, (const size_t[]){3}, &id, &err),
            LLM_ERR_TAPE, "tape.gather");
    REFUSED(llm_tape_exp(&tape, stale, &id, &err), LLM_ERR_TAPE, "tape.exp");
    REFUSED(llm_tape_log(&tape, stale, &id, &err), LLM_ERR_TAPE, "tape.log");
    REFUSED(llm_tape_sqrt(&tape, stale, &id, &err), LLM_ERR_TAPE, "tape.sqrt");
    REFUSED(llm_tape_reciprocal(&tape, stale, &id, &err), LLM_ERR_TAPE, "tape.reciprocal");
    REFUSED(llm_tape_sigmoid(&tape, stale, &id, &err), LLM_ERR_TAPE, "tape.sigmoid");
    REFUSED(llm_tape_silu(&tape, stale, &id, &err), LLM_ERR_TAPE, "tape.silu");
    REFUSED(llm_tape_log_softmax(&tape, stale, 1, &id, &err), LLM_ERR_TAPE, "tape.log_softmax");
    REFUSED(llm_tape_nll_mean(&tape, stale, targets, 3, &id, &err), LLM_ERR_TAPE,
            "tape.nll_mean");
    REFUSED(llm_tape_silu(NULL, ve, &id, &err), LLM_ERR_ARGUMENT, "tape.silu");
    ck_assert_uint_eq(tape.count, 1);
    ck_assert(id.id == 77 && id.epoch == 77);
    llm_tape_free(&tape);
    llm_tensor_free(&e);
}
END_TEST

START_TEST(shape_axis_and_target_errors_name_the_tape_stage)
{
    static const size_t targets[3] = {0, 2, 1}, s203[3] = {2, 0, 3}, s40[2] = {4, 0};
    static const size_t s223[3] = {2, 2, 3}, s332[3] = {3, 3, 2}, ok3[3] = {0, 1, 1};
    llm_tape tape;
    llm_tensor e = make_tensor(2, s32, fix_e), v = make_tensor(1, (const size_t[]){2}, fix_e);
    llm_tensor a = pattern(3, s223, 0), b = pattern(3, s332, 0), em = zeros(3, s203),
               nc = zeros(2, s40);
    llm_var ve, vv, va, vb, vem, vnc, id = {77, 77};
    llm_error err;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    put_constants(&tape, &e, &ve, &v, &vv, &a, &va, &b, &vb, &em, &vem, &nc, &vnc,
                  NULL);
    REFUSED(llm_tape_matmul(&tape, ve, ve, 0, 0, &id, &err), LLM_ERR_SHAPE, "tape.matmul <- tensor.matmul");
    REFUSED(llm_tape_matmul(&tape, vv, ve, 0, 0, &id, &err), LLM_ERR_RANK, "tape.matmul <- tensor.matmul");
    REFUSED(llm_tape_matmul(&tape, va, vb, 0, 0, &id, &err), LLM_ERR_BROADCAST, "tape.matmul <- tensor.matmul");
    REFUSED(llm_tape_log_softmax(&tape, ve, 2, &id, &err), LLM_ERR_AXIS, "tape.log_softmax <- softmax.log_softmax");
    REFUSED(llm_tape_log_softmax(&tape, vem, 1, &id, &err), LLM_ERR_EMPTY, "tape.log_softmax <- softmax.log_softmax");
    REFUSED(llm_tape_nll_mean(&tape, ve, targets, 3, &id, &err), LLM_ERR_TARGET,
            "tape.nll_mean <- softmax.nll_mean");
    REFUSED(llm_tape_nll_mean(&tape, ve, targets, 2, &id, &err), LLM_ERR_SHAPE,
            "tape.nll_mean <- softmax.nll_mean");
    REFUSED(llm_tape_nll_mean(&tape, ve, NULL, 3, &id, &err), LLM_ERR_ARGUMENT,
            "tape.nll_mean <- softmax.nll_mean");
    REFUSED(llm_tape_nll_mean(&tape, vnc, ok3, 3, &id, &err), LLM_ERR_EMPTY,
            "tape.nll_mean <- softmax.nll_mean");
    ck_assert_uint_eq(tape.count, 6);
    ck_assert(id.id == 77 && id.epoch == 77);
    llm_tape_free(&tape);
    llm_tensor_free(&e); llm_tensor_free(&v); llm_tensor_free(&a); llm_tensor_free(&b);
    llm_tensor_free(&em); llm_tensor_free(&nc);
}
END_TEST

START_TEST(failed_calls_leave_gradients_untouched)
{
    static const size_t bad[4] = {0, 1, 5, 1};
    llm_tape tape;
    llm_tensor e = make_tensor(2, s32, fix_e), ge = zeros(2, s32), seed;
    llm_var ve, x, id;
    llm_error err;
    double before[6];
    size_t i;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &e, &ge, &ve, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_gather(&tape, ve, fix_ids, 1, four, &x, NULL), LLM_OK);
    seed = pattern(2, (const size_t[]){4, 2}, 0);
    ck_assert_int_eq(llm_tape_backward(&tape, x, &seed, 1, NULL), LLM_OK);
    memcpy(before, ge.data, sizeof before);
    REFUSED(llm_tape_gather(&tape, ve, bad, 1, four, &id, &err), LLM_ERR_INDEX, "tape.gather");
    REFUSED(llm_tape_log(&tape, x, &id, &err), LLM_ERR_NONFINITE, "tape.log");
    REFUSED(llm_tape_matmul(&tape, x, x, 0, 0, &id, &err), LLM_ERR_SHAPE, "tape.matmul <- tensor.matmul");
    for (i = 0; i < 6; i++)
        ck_assert(memcmp(&before[i], &ge.data[i], sizeof before[i]) == 0);
    ck_assert_int_eq(llm_tape_backward(&tape, x, &seed, 1, NULL), LLM_OK);
    for (i = 0; i < 6; i++)                         /* a second pass adds again */
        ck_assert(ge.data[i] == 2.0 * before[i]);
    llm_tape_free(&tape);
    llm_tensor_free(&e); llm_tensor_free(&ge); llm_tensor_free(&seed);
}
END_TEST

/* Views as operands: a transposed table, a transposed input to exp and to
   the loss. dense() copies them; the gradients reach the leaf through the
   transpose. */
START_TEST(strided_operands_are_read_through_their_strides)
{
    static const double tv[6] = {1, 2, 3, 4, 5, 6};
    static const size_t s23[2] = {2, 3}, two[1] = {2}, ids[2] = {2, 0};
    static const size_t targets[3] = {1, 0, 1};
    llm_tape tape;
    llm_tensor t = make_tensor(2, s23, tv), g = zeros(2, s23), seed;
    llm_var vt, tt, x, e, loss;
    const llm_tensor *v;
    const double *adj;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &t, &g, &vt, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_transpose(&tape, vt, 0, 1, &tt, NULL), LLM_OK);  /* [3, 2] */
    ck_assert_int_eq(llm_tape_gather(&tape, tt, ids, 1, two, &x, NULL), LLM_OK);
    v = value_of(&tape, x);                        /* rows 2 and 0 of t^T */
    ck_assert(v->data[0] == 3.0 && v->data[1] == 6.0 && v->data[2] == 1.0 && v->data[3] == 4.0);
    seed = make_tensor(2, (const size_t[]){2, 2}, (const double[]){1, 2, 3, 4});
    ck_assert_int_eq(llm_tape_backward(&tape, x, &seed, 1, NULL), LLM_OK);
    /* t^T row 2 = column 2 of t gets [1, 2], row 0 = column 0 gets [3, 4] */
    ck_assert(g.data[2] == 1.0 && g.data[5] == 2.0 && g.data[0] == 3.0 && g.data[3] == 4.0);
    ck_assert(g.data[1] == 0.0 && g.data[4] == 0.0);
    ck_assert_int_eq(llm_tape_exp(&tape, tt, &e, NULL), LLM_OK);
    v = value_of(&tape, e);
    ck_assert(v->data[1] == exp(4.0));             /* element [0, 1] of t^T */
    ck_assert_int_eq(llm_tape_nll_mean(&tape, tt, targets, 3, &loss, NULL), LLM_OK);
    memset(g.data, 0, 6 * sizeof(double));
    ck_assert_int_eq(llm_tape_backward(&tape, loss, NULL, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_adjoint(&tape, tt, &adj, NULL), LLM_OK);
    /* row r of t^T is [t[0][r], t[1][r]] = [r + 1, r + 4]: p = sigma(-3), sigma(3) */
    ck_assert(fabs(adj[0] - (1.0 / (1.0 + exp(3.0)) / 3.0)) < 1e-15);
    ck_assert(fabs(g.data[3] - adj[1]) == 0.0);    /* t[1][0] is t^T[0][1] */
    llm_tape_free(&tape);
    llm_tensor_free(&t); llm_tensor_free(&g); llm_tensor_free(&seed);
}
END_TEST

START_TEST(results_that_overflow_and_released_recordings_are_refused)
{
    static const double big[4] = {1e200, 1e200, 1e200, 1e200};
    static const double far[2] = {1e308, -1e308};
    static const size_t s22[2] = {2, 2}, s12[2] = {1, 2}, t1[1] = {1}, t0[1] = {0};
    static const size_t wide[2] = {(size_t)1 << 40, 0}, tall[2] = {0, (size_t)1 << 40};
    llm_tape tape;
    llm_tensor a = make_tensor(2, s22, big), f = make_tensor(2, s12, far), w = zeros(2, wide),
               h = zeros(2, tall);
    llm_var va, vf, vw, vh, id = {77, 77}, y;
    llm_error err;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    put_constants(&tape, &a, &va, &f, &vf, &w, &vw, &h, &vh, NULL);
    REFUSED(llm_tape_matmul(&tape, va, va, 0, 0, &id, &err), LLM_ERR_NONFINITE, "tape.matmul");
    ck_assert_ptr_nonnull(strstr(err.message, "[0, 0]"));
    REFUSED(llm_tape_nll_mean(&tape, vf, t1, 1, &id, &err), LLM_ERR_NONFINITE,
            "tape.nll_mean");                      /* -1e308 - 1e308 overflows */
    REFUSED(llm_tape_matmul(&tape, vw, vh, 0, 0, &id, &err), LLM_ERR_OVERFLOW, "tape.matmul <- tensor.row_major");
    REFUSED(llm_tape_nll_mean(&tape, va, t1, 1, &id, &err), LLM_ERR_SHAPE, "tape.nll_mean <- softmax.nll_mean");
    ck_assert_uint_eq(tape.count, 4);
    ck_assert(id.id == 77 && id.epoch == 77);
    /* a pass without keep_graph releases the recording: nothing more is recorded */
    ck_assert_int_eq(llm_tape_nll_mean(&tape, vf, t0, 1, &y, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, y, NULL, 0, NULL), LLM_OK);
    REFUSED(llm_tape_silu(&tape, vf, &id, &err), LLM_ERR_TAPE, "tape.silu");
    REFUSED(llm_tape_gather(&tape, vf, t0, 1, t1, &id, &err), LLM_ERR_TAPE, "tape.gather");
    ck_assert(id.id == 77 && id.epoch == 77);
    llm_tape_free(&tape);
    llm_tensor_free(&a); llm_tensor_free(&f); llm_tensor_free(&w); llm_tensor_free(&h);
}
END_TEST

START_TEST(operation_names)
{
    /* every operation of the chapter, recorded, names itself and has a VJP */
    static const char *const names[] = {"matmul", "gather", "exp", "log", "sqrt",
                                        "reciprocal", "sigmoid", "silu", "log_softmax",
                                        "nll_mean"};
    static const double x[4] = {1, 2, 3, 4};
    const size_t s22[2] = {2, 2}, ids[2] = {1, 0}, targets[2] = {0, 1};
    llm_tensor t;
    llm_tape tape;
    llm_var a, v[10];
    size_t i;
    ck_assert_int_eq(llm_tensor_from(&t, 2, s22, x, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &t, NULL, &a, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_matmul(&tape, a, a, 0, 1, &v[0], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_gather(&tape, a, ids, 1, &ids[1], &v[1], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_exp(&tape, a, &v[2], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_log(&tape, a, &v[3], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sqrt(&tape, a, &v[4], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_reciprocal(&tape, a, &v[5], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sigmoid(&tape, a, &v[6], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_silu(&tape, a, &v[7], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_log_softmax(&tape, a, 1, &v[8], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_nll_mean(&tape, a, targets, 2, &v[9], NULL), LLM_OK);
    for (i = 0; i < 10; i++) {
        ck_assert_str_eq(llm_op_name(tape.nodes[v[i].id].op), names[i]);
        ck_assert(tape.nodes[v[i].id].op->vjp != NULL);
    }
    llm_tape_free(&tape);
    llm_tensor_free(&t);
}
END_TEST

/* rank + table rank - 1 must not wrap: an ID rank near SIZE_MAX is refused
   with LLM_ERR_RANK before the shape is built, and nothing is recorded. */
START_TEST(gather_refuses_a_huge_id_rank_without_wrapping)
{
    static const size_t ids[1] = {0}, one[LLM_MAX_RANK] = {1, 1, 1, 1, 1, 1, 1, 1};
    const size_t ranks[4] = {SIZE_MAX, SIZE_MAX - 1, LLM_MAX_RANK, (size_t)1 << 62};
    llm_tape tape;
    llm_tensor e = make_tensor(2, s32, fix_e), ge = zeros(2, s32);
    llm_var ve, x = {0, 0}, keep;
    llm_error err;
    size_t count, i;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &e, &ge, &ve, NULL), LLM_OK);
    count = tape.count;
    keep = x;
    for (i = 0; i < 4; i++) {
        REFUSED(llm_tape_gather(&tape, ve, ids, ranks[i], one, &x, &err), LLM_ERR_RANK,
                "tape.gather");
        ck_assert(strstr(err.message, "more than") != NULL);   /* the gather's own check */
        ck_assert_uint_eq(tape.count, count);
        ck_assert(memcmp(&x, &keep, sizeof x) == 0);
    }
    /* the largest rank that fits is still accepted */
    ck_assert_int_eq(llm_tape_gather(&tape, ve, ids, LLM_MAX_RANK - 1, one, &x, NULL),
                     LLM_OK);
    llm_tape_free(&tape);
    llm_tensor_free(&e); llm_tensor_free(&ge);
}
END_TEST

Suite *ch16_model_autodiff_ops_suite(void)
{
    const TTest *tests[] = {
        fixture_matches_the_rust_course,
        fixture_logit_and_preactivation_gradients,
        matmul_vjps_for_every_flag_and_broadcast,
        gather_vjp_with_repeated_ids,
        elementwise_vjps,
        log_softmax_vjp_on_every_axis,
        nll_mean_vjp,
        repeated_ids_accumulate_and_unused_rows_stay_zero,
        gather_shapes_and_copies_its_ids,
        gather_of_no_positions_and_of_a_scalar_id,
        matmul_gradients_equal_the_products_they_stand_for,
        extreme_logits_give_a_finite_loss_and_gradient,
        sigmoid_and_silu_at_plus_minus_1000_stay_finite,
        domain_errors_are_refused_before_anything_is_recorded,
        lookup_refusals_record_nothing,
        every_operation_refuses_null_and_stale_operands,
        shape_axis_and_target_errors_name_the_tape_stage,
        failed_calls_leave_gradients_untouched,
        strided_operands_are_read_through_their_strides,
        results_that_overflow_and_released_recordings_are_refused,
        operation_names,
        gather_refuses_a_huge_id_rank_without_wrapping,
    };
    return suite_of("ch16 model autodiff ops",
                    tcase_of("ops", 60, tests, COUNT(tests)));
}
