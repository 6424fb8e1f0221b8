/* Chapter 27: softmax on the tape and scaled dot-product attention. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "llm/attention.h"
#include "llm/error.h"
#include "llm/gradcheck.h"
#include "llm/nn.h"
#include "llm/softmax.h"
#include "llm/tape.h"
#include "llm/tensor.h"
#include "../tangled/src/tape_op.h"   /* white-box: the tape's nodes */
#include "support.h"

static const double fix_q[4] = {0, 3, 2, -1};
static const double fix_k[4] = {3, 0, -1, 2};
static const double fix_v[4] = {3, -3, 1, 3};

/* Records a constant of the given shape on tape. */
static llm_var constant(llm_tape *tape, size_t rank, const size_t *shape, const double *x,
                        size_t n)
{
    llm_tensor t;
    llm_var v;
    ck_assert_int_eq(llm_tensor_from(&t, rank, shape, x, n, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(tape, &t, &v, NULL), LLM_OK);
    llm_tensor_free(&t);
    return v;
}

/* The row-major values of v (its value is contiguous on the tape). */
static const double *vals(const llm_tape *tape, llm_var v)
{
    const llm_tensor *t;
    ck_assert_int_eq(llm_tape_value(tape, v, &t, NULL), LLM_OK);
    return t->data + t->offset;
}

/* Attention written out by hand, for Tq queries and Tk keys of width d and
   values of width dv: w = softmax(q k^T / sqrt d) row by row, o = w v. */
static void by_hand(const double *q, const double *k, const double *v, size_t Tq, size_t Tk,
                    size_t d, size_t dv, double *w, double *o)
{
    size_t i, j, c;
    for (i = 0; i < Tq; i++) {
        double m = -INFINITY, z = 0.0;
        for (j = 0; j < Tk; j++) {
            double s = 0.0;
            for (c = 0; c < d; c++)
                s += q[i * d + c] * k[j * d + c];
            w[i * Tk + j] = s / sqrt((double)d);
            if (w[i * Tk + j] > m)
                m = w[i * Tk + j];
        }
        for (j = 0; j < Tk; j++) {
            w[i * Tk + j] = exp(w[i * Tk + j] - m);
            z += w[i * Tk + j];
        }
        for (j = 0; j < Tk; j++)
            w[i * Tk + j] /= z;
        for (c = 0; c < dv; c++) {
            double s = 0.0;
            for (j = 0; j < Tk; j++)
                s += w[i * Tk + j] * v[j * dv + c];
            o[i * dv + c] = s;
        }
    }
}

/* n values uniform on [-2, 2) from seed. */
static void fill(double *x, size_t n, uint64_t seed)
{
    llm_rng rng;
    size_t i;
    llm_rng_seed(&rng, seed);
    for (i = 0; i < n; i++)
        x[i] = 4.0 * llm_rng_unit(&rng) - 2.0;
}

/* ------------------------------------------------------------------ values -- */

START_TEST(test_fixture)
{
    static const double want_w[4] = {0.014166, 0.985834, 0.999151, 0.000849};
    static const double want_o[4] = {1.028332, 2.915004, 2.998303, -2.994908};
    const size_t s22[2] = {2, 2};
    llm_tape tape;
    llm_var q, k, v, w, o;
    double hw[4], ho[4];
    size_t i;
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    q = constant(&tape, 2, s22, fix_q, 4);
    k = constant(&tape, 2, s22, fix_k, 4);
    v = constant(&tape, 2, s22, fix_v, 4);
    ck_assert_int_eq(llm_tape_attention(&tape, q, k, v, &w, &o, NULL), LLM_OK);
    by_hand(fix_q, fix_k, fix_v, 2, 2, 2, 2, hw, ho);
    for (i = 0; i < 4; i++) {
        ck_assert(fabs(vals(&tape, w)[i] - want_w[i]) < 5e-7);
        ck_assert(fabs(vals(&tape, o)[i] - want_o[i]) < 5e-7);
        ck_assert(fabs(vals(&tape, w)[i] - hw[i]) < 1e-15);
        ck_assert(fabs(vals(&tape, o)[i] - ho[i]) < 1e-14);
    }
    /* five nodes: the scale, the scores, the scaled scores, softmax, the mix */
    ck_assert_uint_eq(tape.count, 8);
    ck_assert_ptr_eq(tape.nodes[3].op, &llm_op_const);
    ck_assert(tape.nodes[3].value.rank == 0
              && tape.nodes[3].value.data[tape.nodes[3].value.offset] == 1.0 / sqrt(2.0));
    ck_assert_str_eq(llm_op_name(tape.nodes[4].op), "matmul");
    ck_assert(vals(&tape, (llm_var){4, tape.epoch})[1] == 6.0);
    ck_assert(vals(&tape, (llm_var){4, tape.epoch})[3] == -4.0);
    ck_assert_str_eq(llm_op_name(tape.nodes[5].op), "mul");
    ck_assert(fabs(vals(&tape, (llm_var){5, tape.epoch})[1] - 4.242641) < 5e-7);
    ck_assert_str_eq(llm_op_name(tape.nodes[6].op), "softmax");
    ck_assert_uint_eq(w.id, 6);
    ck_assert_str_eq(llm_op_name(tape.nodes[7].op), "matmul");
    ck_assert_uint_eq(o.id, 7);
    llm_tape_free(&tape);
}
END_TEST

START_TEST(test_through_the_projections)
{
    static const double fix_x[6] = {1, 2, -1, 0, 1, 2};
    static const double wq[6] = {1, 0, 0, 1, 1, -1}, wk[6] = {0, 1, 1, 0, -1, 1},
                        wv[6] = {1, 1, 1, -1, 0, 2};
    const size_t s23[2] = {2, 3}, s22[2] = {2, 2};
    llm_params ps;
    llm_qkv qkv;
    llm_rng rng;
    llm_tape tape;
    llm_var x, q, k, v, w, o, q2, k2, v2, w2, o2;
    llm_rng_seed(&rng, 27);
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_qkv_init(&qkv, &ps, "attn", 3, 2, &rng, NULL), LLM_OK);
    memcpy(ps.items[qkv.query.weight].value.data, wq, sizeof wq);
    memcpy(ps.items[qkv.key.weight].value.data, wk, sizeof wk);
    memcpy(ps.items[qkv.value.weight].value.data, wv, sizeof wv);
    ck_assert_int_eq(llm_tape_init(&tape, 32, NULL), LLM_OK);
    x = constant(&tape, 2, s23, fix_x, 6);
    ck_assert_int_eq(llm_qkv_forward(&qkv, &ps, &tape, x, &q, &k, &v, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_attention(&tape, q, k, v, &w, &o, NULL), LLM_OK);
    q2 = constant(&tape, 2, s22, fix_q, 4);
    k2 = constant(&tape, 2, s22, fix_k, 4);
    v2 = constant(&tape, 2, s22, fix_v, 4);
    ck_assert_int_eq(llm_tape_attention(&tape, q2, k2, v2, &w2, &o2, NULL), LLM_OK);
    ck_assert(memcmp(vals(&tape, w), vals(&tape, w2), 4 * sizeof(double)) == 0);
    ck_assert(memcmp(vals(&tape, o), vals(&tape, o2), 4 * sizeof(double)) == 0);
    llm_tape_free(&tape);
    llm_params_free(&ps);
}
END_TEST

START_TEST(test_rows_are_distributions)
{
    /* 5 queries, 7 keys of width 4, values of width 3 */
    double q[20], k[28], v[21], hw[35], ho[15], lo[3], hi[3];
    const size_t sq[2] = {5, 4}, sk[2] = {7, 4}, sv[2] = {7, 3};
    llm_tape tape;
    llm_var qv, kv, vv, w, o;
    size_t i, j;
    fill(q, 20, 1);
    fill(k, 28, 2);
    fill(v, 21, 3);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    qv = constant(&tape, 2, sq, q, 20);
    kv = constant(&tape, 2, sk, k, 28);
    vv = constant(&tape, 2, sv, v, 21);
    ck_assert_int_eq(llm_tape_attention(&tape, qv, kv, vv, &w, &o, NULL), LLM_OK);
    ck_assert_uint_eq(tape.nodes[w.id].value.shape[0], 5);
    ck_assert_uint_eq(tape.nodes[w.id].value.shape[1], 7);
    ck_assert_uint_eq(tape.nodes[o.id].value.shape[1], 3);
    by_hand(q, k, v, 5, 7, 4, 3, hw, ho);
    for (j = 0; j < 3; j++) {
        lo[j] = hi[j] = v[j];
        for (i = 1; i < 7; i++) {
            lo[j] = fmin(lo[j], v[3 * i + j]);
            hi[j] = fmax(hi[j], v[3 * i + j]);
        }
    }
    for (i = 0; i < 5; i++) {
        double sum = 0.0;
        for (j = 0; j < 7; j++) {
            const double p = vals(&tape, w)[7 * i + j];
            ck_assert(p > 0.0 && p < 1.0);
            ck_assert(fabs(p - hw[7 * i + j]) < 1e-15);
            sum += p;
        }
        ck_assert(fabs(sum - 1.0) < 1e-12);
        /* each output is a weighted average of the value rows */
        for (j = 0; j < 3; j++) {
            const double y = vals(&tape, o)[3 * i + j];
            ck_assert(y >= lo[j] - 1e-12 && y <= hi[j] + 1e-12);
            ck_assert(fabs(y - ho[3 * i + j]) < 1e-14);
        }
    }
    llm_tape_free(&tape);
}
END_TEST

START_TEST(test_one_key_is_the_identity)
{
    /* three queries, one key: every weight is 1, every output row is v */
    static const double q[6] = {0.5, -1, 40, 3, -7, 0.25}, k[2] = {2, 1},
                        v[3] = {7, -2, 0.25};
    const size_t sq[2] = {3, 2}, sk[2] = {1, 2}, sv[2] = {1, 3};
    llm_tape tape;
    llm_var qv, kv, vv, w, o;
    size_t i;
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    qv = constant(&tape, 2, sq, q, 6);
    kv = constant(&tape, 2, sk, k, 2);
    vv = constant(&tape, 2, sv, v, 3);
    ck_assert_int_eq(llm_tape_attention(&tape, qv, kv, vv, &w, &o, NULL), LLM_OK);
    for (i = 0; i < 3; i++) {
        ck_assert(vals(&tape, w)[i] == 1.0);
        ck_assert(memcmp(vals(&tape, o) + 3 * i, v, sizeof v) == 0);
    }
    llm_tape_free(&tape);
}
END_TEST

START_TEST(test_scale_lowers_the_favoured_weight)
{
    static const double q[2] = {1, 0}, k[4] = {1, 0, 0, 1};
    const size_t sq[2] = {1, 2}, sk[2] = {2, 2};
    llm_tape tape;
    llm_var qv, kv, w, o, s, p;
    double plain, scaled;
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    qv = constant(&tape, 2, sq, q, 2);
    kv = constant(&tape, 2, sk, k, 4);
    ck_assert_int_eq(llm_tape_attention(&tape, qv, kv, kv, &w, &o, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_matmul(&tape, qv, kv, 0, 1, &s, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_softmax(&tape, s, &p, NULL), LLM_OK);
    plain = vals(&tape, p)[0];
    scaled = vals(&tape, w)[0];
    ck_assert(fabs(plain - 1.0 / (1.0 + exp(-1.0))) < 1e-15);
    ck_assert(fabs(scaled - 1.0 / (1.0 + exp(-1.0 / sqrt(2.0)))) < 1e-15);
    ck_assert(fabs(plain - 0.731059) < 5e-7 && fabs(scaled - 0.669762) < 5e-7);
    ck_assert(scaled < plain);
    /* the values are the identity, so the output is the weights */
    ck_assert(memcmp(vals(&tape, o), vals(&tape, w), 2 * sizeof(double)) == 0);
    llm_tape_free(&tape);
}
END_TEST

START_TEST(test_weights_need_not_be_symmetric)
{
    /* the fixture's raw scores are symmetric, [[0, 6], [6, -4]]; the weights
       are not, because each row is normalised on its own */
    const size_t s22[2] = {2, 2};
    llm_tape tape;
    llm_var q, k, v, w, o;
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    q = constant(&tape, 2, s22, fix_q, 4);
    k = constant(&tape, 2, s22, fix_k, 4);
    v = constant(&tape, 2, s22, fix_v, 4);
    ck_assert_int_eq(llm_tape_attention(&tape, q, k, v, &w, &o, NULL), LLM_OK);
    ck_assert(vals(&tape, (llm_var){4, tape.epoch})[1]
              == vals(&tape, (llm_var){4, tape.epoch})[2]);
    ck_assert(fabs(vals(&tape, w)[1] - vals(&tape, w)[2]) > 0.01);
    llm_tape_free(&tape);
}
END_TEST

START_TEST(test_leading_axes_and_no_weights)
{
    /* [2, 3, 2] queries, [2, 4, 2] keys, [2, 4, 3] values: each slice as alone */
    double q[12], k[16], v[24];
    const size_t sq[3] = {2, 3, 2}, sk[3] = {2, 4, 2}, sv[3] = {2, 4, 3};
    const size_t tq[2] = {3, 2}, tk[2] = {4, 2}, tv[2] = {4, 3};
    llm_tape tape;
    llm_var qv, kv, vv, w, o, o_only, qs, ks, vs, ws, os;
    size_t b;
    fill(q, 12, 4);
    fill(k, 16, 5);
    fill(v, 24, 6);
    ck_assert_int_eq(llm_tape_init(&tape, 16, NULL), LLM_OK);
    qv = constant(&tape, 3, sq, q, 12);
    kv = constant(&tape, 3, sk, k, 16);
    vv = constant(&tape, 3, sv, v, 24);
    ck_assert_int_eq(llm_tape_attention(&tape, qv, kv, vv, &w, &o, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_attention(&tape, qv, kv, vv, NULL, &o_only, NULL), LLM_OK);
    ck_assert(memcmp(vals(&tape, o), vals(&tape, o_only), 18 * sizeof(double)) == 0);
    for (b = 0; b < 2; b++) {
        qs = constant(&tape, 2, tq, q + 6 * b, 6);
        ks = constant(&tape, 2, tk, k + 8 * b, 8);
        vs = constant(&tape, 2, tv, v + 12 * b, 12);
        ck_assert_int_eq(llm_tape_attention(&tape, qs, ks, vs, &ws, &os, NULL), LLM_OK);
        ck_assert(memcmp(vals(&tape, w) + 12 * b, vals(&tape, ws), 12 * sizeof(double)) == 0);
        ck_assert(memcmp(vals(&tape, o) + 9 * b, vals(&tape, os), 9 * sizeof(double)) == 0);
    }
    llm_tape_free(&tape);
}
END_TEST

START_TEST(test_no_queries)
{
    /* no query is not an error: an empty table of weights, an empty output */
    static const double none[1] = {0};
    const size_t sq[2] = {0, 2}, s22[2] = {2, 2}, s23[2] = {2, 3};
    llm_tape tape;
    llm_var q, k, v, w, o;
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    q = constant(&tape, 2, sq, none, 0);
    k = constant(&tape, 2, s22, fix_k, 4);
    v = constant(&tape, 2, s23, (const double[6]){1, 2, 3, 4, 5, 6}, 6);
    ck_assert_int_eq(llm_tape_attention(&tape, q, k, v, &w, &o, NULL), LLM_OK);
    ck_assert_uint_eq(tape.nodes[w.id].value.shape[0], 0);
    ck_assert_uint_eq(tape.nodes[w.id].value.shape[1], 2);
    ck_assert_uint_eq(tape.nodes[o.id].value.shape[0], 0);
    ck_assert_uint_eq(tape.nodes[o.id].value.shape[1], 3);
    ck_assert_uint_eq(tape.nodes[o.id].value.size, 0);
    llm_tape_free(&tape);
}
END_TEST

/* ----------------------------------------------------------------- softmax -- */

START_TEST(test_softmax_on_the_tape)
{
    static const double x[6] = {0, 1, 1000, 1001, -1001, -1000};
    const size_t s32[2] = {3, 2};
    llm_tensor t, ref;
    llm_tape tape;
    llm_var a, y;
    size_t i;
    ck_assert_int_eq(llm_tensor_from(&t, 2, s32, x, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_softmax(&ref, &t, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &t, &a, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_softmax(&tape, a, &y, NULL), LLM_OK);
    ck_assert_str_eq(llm_op_name(tape.nodes[y.id].op), "softmax");
    ck_assert(tape.nodes[y.id].op->vjp != NULL);
    ck_assert(memcmp(vals(&tape, y), ref.data + ref.offset, 6 * sizeof(double)) == 0);
    for (i = 0; i < 3; i++) {
        ck_assert(fabs(vals(&tape, y)[2 * i] - 0.268941421370) < 1e-12);
        ck_assert(fabs(vals(&tape, y)[2 * i + 1] - 0.731058578630) < 1e-12);
    }
    llm_tape_free(&tape);
    llm_tensor_free(&t);
    llm_tensor_free(&ref);
}
END_TEST

START_TEST(test_softmax_refusals)
{
    static const double one = 2.0, none[1] = {0};
    const size_t s20[2] = {2, 0};
    llm_tape tape;
    llm_var s, e, ok_in, y, kept, stale;
    llm_error err;
    size_t count;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    stale = constant(&tape, 0, NULL, &one, 1);
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    s = constant(&tape, 0, NULL, &one, 1);
    e = constant(&tape, 2, s20, none, 0);
    ok_in = constant(&tape, 2, (const size_t[2]){1, 2}, fix_q, 2);
    count = tape.count;
    memset(&y, 0x5a, sizeof y);
    kept = y;
    ck_assert_int_eq(llm_tape_softmax(&tape, s, &y, &err), LLM_ERR_AXIS);
    ck_assert_str_eq(where(&err), "tape.softmax");
    ck_assert_int_eq(llm_tape_softmax(&tape, e, &y, &err), LLM_ERR_EMPTY);
    ck_assert_str_eq(where(&err), "tape.softmax <- softmax.softmax");
    ck_assert_int_eq(llm_tape_softmax(&tape, stale, &y, &err), LLM_ERR_TAPE);
    ck_assert_int_eq(llm_tape_softmax(&tape, ok_in, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tape_softmax(NULL, ok_in, &y, &err), LLM_ERR_ARGUMENT);
    ck_assert(memcmp(&y, &kept, sizeof y) == 0);
    ck_assert_uint_eq(tape.count, count);
    llm_tape_free(&tape);
}
END_TEST

START_TEST(test_softmax_vjp_rows_and_masked_entries)
{
    /* two rows of four; the second has two masked entries (y = 0) */
    static const double y[8] = {0.1, 0.2, 0.3, 0.4, 0.25, 0, 0.75, 0};
    static const double cbar[8] = {1, -2, 0.5, 3, 4, 100, -1, 50};
    const size_t s24[2] = {2, 4};
    llm_node node;
    llm_tape tape;
    llm_tensor x;
    llm_var a, p;
    double pbar[8], start[8], dot, row;
    size_t r, j;
    /* the softmax's own record, taken from a node the tape recorded */
    ck_assert_int_eq(llm_tensor_from(&x, 2, s24, cbar, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &x, &a, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_softmax(&tape, a, &p, NULL), LLM_OK);
    memset(&node, 0, sizeof node);
    node.op = tape.nodes[p.id].op;
    ck_assert_str_eq(llm_op_name(node.op), "softmax");
    ck_assert_int_eq(llm_tensor_from(&node.value, 2, s24, y, 8, NULL), LLM_OK);
    for (j = 0; j < 8; j++)
        start[j] = pbar[j] = 0.5 * (double)j;
    /* -0.0 + 0 * (positive) would be +0.0: a masked entry keeps its sign bit */
    start[5] = pbar[5] = -0.0;
    start[7] = pbar[7] = -0.0;
    ck_assert_int_eq(node.op->vjp(NULL, &node, 0, cbar, pbar, NULL), LLM_OK);
    for (r = 0; r < 2; r++) {
        dot = 0.0;
        for (j = 0; j < 4; j++)
            dot += cbar[4 * r + j] * y[4 * r + j];
        row = 0.0;
        for (j = 0; j < 4; j++) {
            const size_t n = 4 * r + j;
            ck_assert(fabs(pbar[n] - start[n] - y[n] * (cbar[n] - dot)) < 1e-14);
            row += pbar[n] - start[n];
        }
        ck_assert(fabs(row) < 1e-14);   /* softmax forgets a shift: rows sum to 0 */
    }
    ck_assert(signbit(pbar[5]) && signbit(pbar[7]));   /* masked: nothing, not even +0 */
    llm_tensor_free(&node.value);
    llm_tensor_free(&x);
    llm_tape_free(&tape);
}
END_TEST

/* --------------------------------------------------------------- gradients -- */

typedef struct objective {
    llm_tensor *t[3];   /* q, k, v; or t[0] alone for softmax */
    const double *c;    /* the weights of the sum */
    int softmax_only;
} objective;

/* L = sum c (.) attention(q, k, v), or sum c (.) softmax(x); with g, backward. */
static llm_status run(const objective *ob, double *loss, llm_tensor *g, llm_error *err)
{
    const llm_tensor *t0 = ob->t[0];
    llm_tape tape;
    llm_tensor ct;
    llm_var in[3], o;
    size_t i, n = ob->softmax_only ? 1 : 3, rows = t0->shape[0];
    size_t cs[2];
    llm_status st;
    cs[0] = rows;
    cs[1] = ob->softmax_only ? t0->shape[1] : ob->t[2]->shape[1];
    st = llm_tensor_from(&ct, 2, cs, ob->c, cs[0] * cs[1], err);
    if (st != LLM_OK)
        return st;
    st = llm_tape_init(&tape, 16, err);
    for (i = 0; i < n && st == LLM_OK; i++)
        st = llm_tape_leaf(&tape, ob->t[i], g != NULL ? &g[i] : NULL, &in[i], err);
    if (st == LLM_OK)
        st = ob->softmax_only ? llm_tape_softmax(&tape, in[0], &o, err)
                              : llm_tape_attention(&tape, in[0], in[1], in[2], NULL, &o, err);
    if (st == LLM_OK)
        st = weighted_loss(&tape, o, &ct, g != NULL, loss, err);
    llm_tape_free(&tape);
    llm_tensor_free(&ct);
    return st;
}

OBJECTIVE(loss_only, run(ctx, value, NULL, err))

static void check_all(objective *ob, llm_tensor *g, size_t n)
{
    size_t coords[32], i, t, failures = 99;
    double worst = 1.0, loss;
    ck_assert_int_eq(run(ob, &loss, g, NULL), LLM_OK);
    for (t = 0; t < n; t++) {
        for (i = 0; i < ob->t[t]->size; i++)
            coords[i] = i;
        ck_assert_int_eq(llm_gradient_check(loss_only, ob, ob->t[t], g[t].data, coords,
                                            ob->t[t]->size, 1e-6, 1e-6, &worst, &failures,
                                            NULL), LLM_OK);
        ck_assert_uint_eq(failures, 0);
        ck_assert(worst < 1e-6);
    }
}

START_TEST(test_softmax_gradient)
{
    static const double x[6] = {0.5, -1, 2, 3, 0.25, -0.5};
    static const double c[6] = {1, -2, 0.5, 0.75, 1.5, -1};
    const size_t s23[2] = {2, 3};
    llm_tensor t, g;
    objective ob;
    ck_assert_int_eq(llm_tensor_from(&t, 2, s23, x, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&g, 2, s23, NULL), LLM_OK);
    ob.t[0] = &t;
    ob.c = c;
    ob.softmax_only = 1;
    check_all(&ob, &g, 1);
    llm_tensor_free(&t);
    llm_tensor_free(&g);
}
END_TEST

START_TEST(test_attention_gradient)
{
    /* q [4, 3], k [5, 3], v [5, 2]: Tq != Tk, d != dv */
    static const size_t sh[3][2] = {{4, 3}, {5, 3}, {5, 2}};
    double x[3][15], c[8], hw[20], ho[8];
    llm_tensor t[3], g[3];
    objective ob;
    size_t i, j, col;
    fill(c, 8, 10);
    for (i = 0; i < 3; i++) {
        fill(x[i], sh[i][0] * sh[i][1], 11 + i);
        ck_assert_int_eq(llm_tensor_from(&t[i], 2, sh[i], x[i], sh[i][0] * sh[i][1], NULL),
                         LLM_OK);
        ck_assert_int_eq(llm_tensor_zeros(&g[i], 2, sh[i], NULL), LLM_OK);
        ob.t[i] = &t[i];
    }
    ob.c = c;
    ob.softmax_only = 0;
    check_all(&ob, g, 3);
    /* the gradient of v is w^T C: row j gathers what every query took from key j */
    by_hand(x[0], x[1], x[2], 4, 5, 3, 2, hw, ho);
    for (j = 0; j < 5; j++)
        for (col = 0; col < 2; col++) {
            double s = 0.0;
            for (i = 0; i < 4; i++)
                s += hw[5 * i + j] * c[2 * i + col];
            ck_assert(fabs(g[2].data[2 * j + col] - s) < 1e-14);
        }
    for (i = 0; i < 3; i++) {
        llm_tensor_free(&t[i]);
        llm_tensor_free(&g[i]);
    }
}
END_TEST

/* ---------------------------------------------------------------- refusals -- */

START_TEST(test_attention_refusals)
{
    static const double z[8] = {0}, big[4] = {1e200, 1e200, 1e200, 1e200};
    const size_t s2[1] = {2}, s22[2] = {2, 2}, s122[3] = {1, 2, 2}, s222[3] = {2, 2, 2},
                 s23[2] = {2, 3}, s32[2] = {3, 2}, s20[2] = {2, 0}, s02[2] = {0, 2};
    llm_tape tape, other;
    llm_var a, vec, a3, b3, wide, long_v, zero_w, no_k, huge, stale, w, o, w_kept, o_kept;
    llm_error err;
    size_t count;
    ck_assert_int_eq(llm_tape_init(&tape, 16, NULL), LLM_OK);
    stale = constant(&tape, 2, s22, z, 4);
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    a = constant(&tape, 2, s22, z, 4);
    vec = constant(&tape, 1, s2, z, 2);
    a3 = constant(&tape, 3, s122, z, 4);
    b3 = constant(&tape, 3, s222, z, 8);
    wide = constant(&tape, 2, s23, z, 6);
    long_v = constant(&tape, 2, s32, z, 6);
    zero_w = constant(&tape, 2, s20, z, 0);
    no_k = constant(&tape, 2, s02, z, 0);
    huge = constant(&tape, 2, s22, big, 4);
    count = tape.count;
    memset(&w, 0x5a, sizeof w);
    memset(&o, 0x5a, sizeof o);
    w_kept = w;
    o_kept = o;

    ck_assert_int_eq(llm_tape_attention(NULL, a, a, a, &w, &o, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tape_attention(&tape, a, a, a, &w, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tape_attention(&tape, stale, a, a, &w, &o, &err), LLM_ERR_TAPE);
    ck_assert_str_eq(where(&err), "tape.attention");
    ck_assert_ptr_nonnull(strstr(err.message, "q (node 0) is stale"));
    ck_assert_int_eq(llm_tape_attention(&tape, a, a, stale, &w, &o, &err), LLM_ERR_TAPE);
    ck_assert_ptr_nonnull(strstr(err.message, "v (node 0) is stale"));
    ck_assert_int_eq(llm_tape_attention(&tape, a, (llm_var){999, tape.epoch}, a, &w, &o, &err),
                     LLM_ERR_TAPE);
    ck_assert_ptr_nonnull(strstr(err.message, "k is node 999"));
    ck_assert_int_eq(llm_tape_attention(&tape, vec, a, a, &w, &o, &err), LLM_ERR_RANK);
    ck_assert_str_eq(where(&err), "tape.attention");
    ck_assert_int_eq(llm_tape_attention(&tape, a, a, vec, &w, &o, &err), LLM_ERR_RANK);
    ck_assert_int_eq(llm_tape_attention(&tape, a3, a, a, &w, &o, &err), LLM_ERR_RANK);
    ck_assert_ptr_nonnull(strstr(err.message, "one rank"));
    ck_assert_int_eq(llm_tape_attention(&tape, a3, b3, b3, &w, &o, &err), LLM_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(err.message, "leading axis 0"));
    ck_assert_int_eq(llm_tape_attention(&tape, a, wide, a, &w, &o, &err), LLM_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(err.message, "width 3"));
    ck_assert_int_eq(llm_tape_attention(&tape, a, a, long_v, &w, &o, &err), LLM_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(err.message, "2 keys but 3 values"));
    ck_assert_int_eq(llm_tape_attention(&tape, zero_w, zero_w, a, &w, &o, &err),
                     LLM_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(err.message, "width 0"));
    ck_assert_int_eq(llm_tape_attention(&tape, a, no_k, no_k, &w, &o, &err), LLM_ERR_EMPTY);
    ck_assert_str_eq(where(&err), "tape.attention");
    ck_assert(memcmp(&w, &w_kept, sizeof w) == 0 && memcmp(&o, &o_kept, sizeof o) == 0);
    ck_assert_uint_eq(tape.count, count);

    /* scores that overflow are refused by the product that computes them,
       after the scale's constant was recorded: it is rewound */
    ck_assert_int_eq(llm_tape_attention(&tape, huge, huge, a, &w, &o, &err),
                     LLM_ERR_NONFINITE);
    ck_assert_str_eq(where(&err), "tape.attention <- tape.matmul");
    ck_assert(memcmp(&w, &w_kept, sizeof w) == 0 && memcmp(&o, &o_kept, sizeof o) == 0);
    ck_assert_uint_eq(tape.count, count);
    /* and the next attention starts at the freed id */
    ck_assert_int_eq(llm_tape_attention(&tape, a, a, a, NULL, &o, NULL), LLM_OK);
    ck_assert_uint_eq(tape.count, count + 5);
    ck_assert_uint_eq(o.id, count + 4);
    ck_assert_ptr_eq(tape.nodes[count].op, &llm_op_const);
    memset(&o, 0x5a, sizeof o);

    /* a handle of another tape */
    ck_assert_int_eq(llm_tape_init(&other, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_attention(&other, a, a, a, &w, &o, &err), LLM_ERR_TAPE);
    ck_assert_uint_eq(other.count, 0);
    llm_tape_free(&other);

    /* a released recording */
    ck_assert_int_eq(llm_tape_attention(&tape, a, a, a, &w, &o, &err), LLM_OK);
    {
        llm_var s;
        ck_assert_int_eq(llm_tape_sum_all(&tape, o, &s, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_backward(&tape, s, NULL, 0, NULL), LLM_OK);
    }
    w_kept = w;
    o_kept = o;
    ck_assert_int_eq(llm_tape_attention(&tape, a, a, a, &w, &o, &err), LLM_ERR_TAPE);
    ck_assert(memcmp(&w, &w_kept, sizeof w) == 0 && memcmp(&o, &o_kept, sizeof o) == 0);
    llm_tape_free(&tape);
}
END_TEST

Suite *ch27_self_attention_suite(void)
{
    const TTest *tests[] = {
        test_fixture,
        test_through_the_projections,
        test_rows_are_distributions,
        test_one_key_is_the_identity,
        test_scale_lowers_the_favoured_weight,
        test_weights_need_not_be_symmetric,
        test_leading_axes_and_no_weights,
        test_no_queries,
        test_softmax_on_the_tape,
        test_softmax_refusals,
        test_softmax_vjp_rows_and_masked_entries,
        test_softmax_gradient,
        test_attention_gradient,
        test_attention_refusals,
    };
    return suite_of("ch27 self-attention", tcase_of("core", 0, tests, COUNT(tests)));
}
