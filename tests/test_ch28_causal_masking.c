/* Chapter 28: the causal softmax and causal attention on the tape. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "llm/attention.h"
#include "llm/error.h"
#include "llm/gradcheck.h"
#include "llm/softmax.h"
#include "llm/tape.h"
#include "llm/tensor.h"
#include "support.h"

static const double fix_q[6] = {0, 3, 2, -1, 1, 1};
static const double fix_k[6] = {3, 0, -1, 2, 2, 1};
static const double fix_v[6] = {3, -3, 1, 3, -2, 4};

/* The causal softmax of a leaf of the given shape holding x; y receives
   the weights (row-major). Returns the status of the op. */
static llm_status causal(size_t rank, const size_t *shape, const double *x, size_t n,
                         double *y, llm_error *err)
{
    llm_tape tape;
    llm_tensor t;
    llm_var a, w;
    const llm_tensor *val;
    llm_status st;
    ck_assert_int_eq(llm_tensor_from(&t, rank, shape, x, n, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &t, NULL, &a, NULL), LLM_OK);
    st = llm_tape_causal_softmax(&tape, a, &w, err);
    if (st == LLM_OK) {
        ck_assert_int_eq(llm_tape_value(&tape, w, &val, NULL), LLM_OK);
        ck_assert_uint_eq(val->size, n);
        ck_assert_uint_eq(val->rank, rank);
        memcpy(y, val->data + val->offset, n * sizeof *y);
    }
    llm_tape_free(&tape);
    llm_tensor_free(&t);
    return st;
}

/* Causal attention of the last tq rows of q against tk keys (width 2):
   w [tq, tk], o [tq, 2]. */
static void attend(const double *q, size_t tq, const double *k, const double *v, size_t tk,
                   double *w, double *o)
{
    size_t sq[2] = {tq, 2}, sk[2] = {tk, 2};
    llm_tape tape;
    llm_tensor a, b, c;
    llm_var qv, kv, vv, wv, ov;
    const llm_tensor *val;
    ck_assert_int_eq(llm_tensor_from(&a, 2, sq, q, 2 * tq, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&b, 2, sk, k, 2 * tk, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&c, 2, sk, v, 2 * tk, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 16, NULL), LLM_OK);
    put_leaves(&tape, &a, &qv, &b, &kv, &c, &vv, NULL);
    ck_assert_int_eq(llm_tape_causal_attention(&tape, qv, kv, vv, &wv, &ov, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&tape, wv, &val, NULL), LLM_OK);
    memcpy(w, val->data + val->offset, tq * tk * sizeof *w);
    ck_assert_int_eq(llm_tape_value(&tape, ov, &val, NULL), LLM_OK);
    memcpy(o, val->data + val->offset, 2 * tq * sizeof *o);
    llm_tape_free(&tape);
    llm_tensor_free(&a);
    llm_tensor_free(&b);
    llm_tensor_free(&c);
}

START_TEST(test_fixture)
{
    /* the reference course's numbers, 6 decimals */
    static const double want_w[9] = {1, 0, 0, 0.999151, 0.000849, 0,
                                     0.445808, 0.108383, 0.445808};
    static const double want_o[6] = {3, -3, 2.998303, -2.994908, 0.554192, 0.770959};
    double w[9], o[6];
    size_t i, j;
    attend(fix_q, 3, fix_k, fix_v, 3, w, o);
    for (i = 0; i < 9; i++)
        ck_assert(fabs(w[i] - want_w[i]) < 5e-7);
    for (i = 0; i < 6; i++)
        ck_assert(fabs(o[i] - want_o[i]) < 5e-7);
    for (i = 0; i < 3; i++) {
        double s = 0.0;
        for (j = 0; j < 3; j++) {
            s += w[3 * i + j];
            if (j > i)         /* the future: exactly +0.0 */
                ck_assert(w[3 * i + j] == 0.0 && !signbit(w[3 * i + j]));
            else
                ck_assert(w[3 * i + j] > 0.0);
        }
        ck_assert(fabs(s - 1.0) < 1e-12);
    }
    /* row 0 sees only itself: its output is v_0 exactly */
    ck_assert(w[0] == 1.0 && o[0] == 3.0 && o[1] == -3.0);
}
END_TEST

START_TEST(test_rows_are_prefix_softmaxes)
{
    /* scores [2, 3, 5]: Tq = 3, Tk = 5, so row i sees keys 0 .. i + 2; each
       row equals chapter 12's softmax of its visible prefix, bit for bit */
    size_t shape[3] = {2, 3, 5}, b, i, j;
    double x[30], y[30];
    for (i = 0; i < 30; i++)
        x[i] = sin(1.7 * (double)i) * 3.0;
    ck_assert_int_eq(causal(3, shape, x, 30, y, NULL), LLM_OK);
    for (b = 0; b < 2; b++)
        for (i = 0; i < 3; i++) {
            size_t n = i + 3, ps[1];
            llm_tensor t, p;
            const double *row = x + 15 * b + 5 * i, *got = y + 15 * b + 5 * i;
            ps[0] = n;
            ck_assert_int_eq(llm_tensor_from(&t, 1, ps, row, n, NULL), LLM_OK);
            ck_assert_int_eq(llm_softmax(&p, &t, 0, NULL), LLM_OK);
            ck_assert(memcmp(p.data + p.offset, got, n * sizeof *got) == 0);
            for (j = n; j < 5; j++)
                ck_assert(got[j] == 0.0 && !signbit(got[j]));
            llm_tensor_free(&t);
            llm_tensor_free(&p);
        }
}
END_TEST

START_TEST(test_leading_axes_are_independent)
{
    /* scores [2, 2, 3, 3] (batch, heads, Tq, Tk): each [3, 3] slice alone
       gives the same bits as inside the rank-4 tensor */
    size_t shape[4] = {2, 2, 3, 3}, one[2] = {3, 3}, s;
    double x[36], y[36], ys[9];
    for (s = 0; s < 36; s++)
        x[s] = cos(0.9 * (double)s) * 4.0 - 1.0;
    ck_assert_int_eq(causal(4, shape, x, 36, y, NULL), LLM_OK);
    for (s = 0; s < 4; s++) {
        ck_assert_int_eq(causal(2, one, x + 9 * s, 9, ys, NULL), LLM_OK);
        ck_assert(memcmp(ys, y + 9 * s, sizeof ys) == 0);
    }
}
END_TEST

START_TEST(test_strided_scores)
{
    /* a transposed view on the tape is normalised like its dense copy */
    static const double x[9] = {0.5, -1, 2, 3, 0.25, -2, 1, 1.5, 0};
    size_t shape[2] = {3, 3};
    double dense[9], y[9];
    size_t i, j;
    llm_tape tape;
    llm_tensor t;
    llm_var a, at, w;
    const llm_tensor *val;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++)
            dense[3 * i + j] = x[3 * j + i];
    ck_assert_int_eq(causal(2, shape, dense, 9, y, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&t, 2, shape, x, 9, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &t, NULL, &a, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_transpose(&tape, a, 0, 1, &at, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_causal_softmax(&tape, at, &w, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&tape, w, &val, NULL), LLM_OK);
    ck_assert(memcmp(val->data + val->offset, y, sizeof y) == 0);
    llm_tape_free(&tape);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(test_prefix_invariance)
{
    /* the last key [2, 1] -> [-2, 4] and value [-2, 4] -> [5, -1] */
    static const double k2[6] = {3, 0, -1, 2, -2, 4};
    static const double v2[6] = {3, -3, 1, 3, 5, -1};
    double w[9], o[6], w2[9], o2[6];
    attend(fix_q, 3, fix_k, fix_v, 3, w, o);
    attend(fix_q, 3, k2, v2, 3, w2, o2);
    ck_assert(memcmp(w, w2, 6 * sizeof *w) == 0);
    ck_assert(memcmp(o, o2, 4 * sizeof *o) == 0);
    ck_assert(fabs(o2[4] - 3.287932) < 5e-7);
    ck_assert(fabs(o2[5] - -1.591834) < 5e-7);
}
END_TEST

START_TEST(test_last_queries_of_longer_keys)
{
    /* Tq < Tk: the queries are the last positions; each row equals the row
       of the full square computation, bit for bit (chapter 37's cache) */
    double w[9], o[6], w2[6], o2[4], w1[3], o1[2];
    attend(fix_q, 3, fix_k, fix_v, 3, w, o);
    attend(fix_q + 2, 2, fix_k, fix_v, 3, w2, o2);
    attend(fix_q + 4, 1, fix_k, fix_v, 3, w1, o1);
    ck_assert(memcmp(w2, w + 3, sizeof w2) == 0);
    ck_assert(memcmp(o2, o + 2, sizeof o2) == 0);
    ck_assert(memcmp(w1, w + 6, sizeof w1) == 0);
    ck_assert(memcmp(o1, o + 4, sizeof o1) == 0);
    /* the first of two queries against three keys sees keys 0 and 1 only */
    ck_assert(w2[2] == 0.0 && w2[0] > 0.0 && w2[1] > 0.0);
}
END_TEST

START_TEST(test_single_token_and_empty)
{
    static const double q[2] = {0.3, -0.7}, k[2] = {1.5, 2}, v[2] = {5, -2};
    size_t s03[2] = {0, 3}, s033[3] = {0, 3, 3};
    double w[1], o[2], none[1];
    llm_error err;
    attend(q, 1, k, v, 1, w, o);
    ck_assert(w[0] == 1.0 && o[0] == 5.0 && o[1] == -2.0);
    /* no queries for three keys, and an empty batch: accepted, shapes kept */
    ck_assert_int_eq(causal(2, s03, none, 0, none, &err), LLM_OK);
    ck_assert_int_eq(causal(3, s033, none, 0, none, &err), LLM_OK);
}
END_TEST

START_TEST(test_masked_scores_never_read)
{
    /* scores on a borrowed leaf; the owner writes into masked cells after
       recording (against chapter 15's rule, to see what is read) */
    static const double x[9] = {0.5, -1, 2, 3, 0.25, -2, 1, 1.5, 0};
    size_t shape[2] = {3, 3};
    double y[9];
    llm_tape tape;
    llm_tensor t;
    llm_var a, w, kept;
    const llm_tensor *val;
    llm_error err;
    size_t count;
    ck_assert_int_eq(causal(2, shape, x, 9, y, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&t, 2, shape, x, 9, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &t, NULL, &a, NULL), LLM_OK);
    t.data[1] = NAN;
    t.data[2] = INFINITY;
    t.data[5] = -INFINITY;
    ck_assert_int_eq(llm_tape_causal_softmax(&tape, a, &w, &err), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&tape, w, &val, NULL), LLM_OK);
    ck_assert(memcmp(val->data + val->offset, y, sizeof y) == 0);
    /* a visible one is refused, named by row and key, and nothing changes */
    t.data[7] = NAN;
    count = tape.count;
    kept = w = marked_var();
    ck_assert_int_eq(llm_tape_causal_softmax(&tape, a, &w, &err), LLM_ERR_NONFINITE);
    ck_assert_str_eq(where(&err), "tape.causal_softmax");
    ck_assert_ptr_nonnull(strstr(err.message, "row 2, key 1 is NaN"));
    ck_assert(memcmp(&w, &kept, sizeof w) == 0);
    ck_assert_uint_eq(tape.count, count);
    t.data[7] = 1.5;
    t.data[4] = -INFINITY;
    ck_assert_int_eq(llm_tape_causal_softmax(&tape, a, &w, &err), LLM_ERR_NONFINITE);
    ck_assert_ptr_nonnull(strstr(err.message, "row 1, key 1 is -inf"));
    llm_tape_free(&tape);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(test_backward_masked_receive_nothing)
{
    /* the VJP: visible scores get y (g - sum g y) over the row's prefix,
       masked ones exactly zero */
    static const double x[9] = {0.5, -1, 2, 3, 0.25, -2, 1, 1.5, 0};
    static const double g[9] = {1, -2, 3, 0.5, 0.25, -1, 2, -0.5, 0.75};
    size_t shape[2] = {3, 3}, i, j;
    double y[9], expect;
    llm_tape tape;
    llm_tensor t, gx, seed;
    llm_var a, w;
    ck_assert_int_eq(causal(2, shape, x, 9, y, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&t, 2, shape, x, 9, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&gx, 2, shape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&seed, 2, shape, g, 9, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &t, &gx, &a, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_causal_softmax(&tape, a, &w, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, w, &seed, 0, NULL), LLM_OK);
    for (i = 0; i < 3; i++) {
        double s = 0.0;
        for (j = 0; j <= i; j++)
            s += g[3 * i + j] * y[3 * i + j];
        for (j = 0; j < 3; j++) {
            expect = j <= i ? y[3 * i + j] * (g[3 * i + j] - s) : 0.0;
            if (j > i)
                ck_assert(gx.data[3 * i + j] == 0.0);
            else
                ck_assert(fabs(gx.data[3 * i + j] - expect) < 1e-15);
        }
    }
    /* row 0 is a distribution over one key: constant, no gradient at all */
    ck_assert(gx.data[0] == 0.0);
    llm_tape_free(&tape);
    llm_tensor_free(&t);
    llm_tensor_free(&gx);
    llm_tensor_free(&seed);
}
END_TEST

typedef struct probe {
    llm_tensor *q, *k, *v;
    const double *seed;
} probe;

/* L = sum seed * causal_attention(q, k, v); backward into dq, dk, dv when
   they are not NULL. */
static llm_status probe_run(const probe *p, double *loss, llm_tensor *dq, llm_tensor *dk,
                            llm_tensor *dv, llm_error *err)
{
    size_t shape[2] = {3, 2};
    llm_tape tape;
    llm_tensor g;
    llm_var qv, kv, vv, o;
    ck_assert_int_eq(llm_tensor_from(&g, 2, shape, p->seed, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 16, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, p->q, dq, &qv, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, p->k, dk, &kv, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, p->v, dv, &vv, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_causal_attention(&tape, qv, kv, vv, NULL, &o, NULL), LLM_OK);
    ck_assert_int_eq(weighted_loss(&tape, o, &g, dq != NULL, loss, err), LLM_OK);
    llm_tape_free(&tape);
    llm_tensor_free(&g);
    return LLM_OK;
}

OBJECTIVE(probe_loss, probe_run(ctx, value, NULL, NULL, NULL, err))

START_TEST(test_gradients)
{
    /* the reference course's seed and gradients (6 decimals) */
    static const double seed[6] = {1, -0.5, 0.25, 2, -1, 0.75};
    static const double prefix[6] = {1, -1, 0.5, 2, 0, 0};
    static const double want[3][6] = {
        {0, 0, -0.027579, 0.013790, -1.944424, 1.756510},
        {-1.676343, -1.655658, 0.107746, 0.087062, 1.568596, 1.568596},
        {0.803980, 1.832659, -0.108171, 0.082985, -0.445808, 0.334356}};
    static const size_t coords[6] = {0, 1, 2, 3, 4, 5};
    size_t shape[2] = {3, 2}, b, i, failures;
    llm_tensor q, k, v, d[3];
    llm_tensor *theta[3];
    double loss, worst;
    probe p;
    ck_assert_int_eq(llm_tensor_from(&q, 2, shape, fix_q, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&k, 2, shape, fix_k, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&v, 2, shape, fix_v, 6, NULL), LLM_OK);
    for (b = 0; b < 3; b++)
        ck_assert_int_eq(llm_tensor_zeros(&d[b], 2, shape, NULL), LLM_OK);
    theta[0] = &q;
    theta[1] = &k;
    theta[2] = &v;
    p.q = &q;
    p.k = &k;
    p.v = &v;
    /* a loss through the first two rows: nothing reaches the last row */
    p.seed = prefix;
    probe_run(&p, &loss, &d[0], &d[1], &d[2], NULL);
    for (b = 0; b < 3; b++) {
        ck_assert(d[b].data[4] == 0.0 && d[b].data[5] == 0.0);
        memset(d[b].data, 0, 6 * sizeof(double));
    }
    /* every row */
    p.seed = seed;
    probe_run(&p, &loss, &d[0], &d[1], &d[2], NULL);
    ck_assert(fabs(loss - -0.716214) < 5e-7);
    for (b = 0; b < 3; b++) {
        for (i = 0; i < 6; i++)
            ck_assert(fabs(d[b].data[i] - want[b][i]) < 5e-7);
        ck_assert_int_eq(llm_gradient_check(probe_loss, &p, theta[b], d[b].data, coords, 6,
                                            1e-6, 4e-6, &worst, &failures, NULL), LLM_OK);
        ck_assert_uint_eq(failures, 0);
        ck_assert(worst < 4e-6);
    }
    /* query 0 sees one key: its weight is constantly 1, so dQ row 0 is 0 */
    ck_assert(d[0].data[0] == 0.0 && d[0].data[1] == 0.0);
    llm_tensor_free(&q);
    llm_tensor_free(&k);
    llm_tensor_free(&v);
    for (b = 0; b < 3; b++)
        llm_tensor_free(&d[b]);
}
END_TEST

START_TEST(test_softmax_refusals)
{
    static const double x[9] = {0};
    size_t s33[2] = {3, 3}, s32[2] = {3, 2}, s3[1] = {3};
    llm_tape tape, other;
    llm_tensor a, b, c;
    llm_var va, vb, vc, y, kept, stale;
    llm_error err;
    size_t count;
    ck_assert_int_eq(llm_tensor_from(&a, 2, s33, x, 9, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&b, 2, s32, x, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&c, 1, s3, x, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    put_leaves(&tape, &a, &va, &b, &vb, &c, &vc, NULL);
    count = tape.count;
    kept = y = marked_var();
    ck_assert_int_eq(llm_tape_causal_softmax(&tape, vb, &y, &err), LLM_ERR_SHAPE);
    ck_assert_str_eq(where(&err), "tape.causal_softmax");
    ck_assert_ptr_nonnull(strstr(err.message, "3 queries"));
    ck_assert_ptr_nonnull(strstr(err.message, "2 keys"));
    ck_assert_int_eq(llm_tape_causal_softmax(&tape, vc, &y, &err), LLM_ERR_RANK);
    ck_assert_int_eq(llm_tape_causal_softmax(&tape, va, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tape_causal_softmax(NULL, va, &y, &err), LLM_ERR_ARGUMENT);
    ck_assert(memcmp(&y, &kept, sizeof y) == 0);
    ck_assert_uint_eq(tape.count, count);
    /* a handle of another tape, and one from before a reset */
    ck_assert_int_eq(llm_tape_init(&other, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_causal_softmax(&other, va, &y, &err), LLM_ERR_TAPE);
    stale = va;
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_causal_softmax(&tape, stale, &y, &err), LLM_ERR_TAPE);
    ck_assert(memcmp(&y, &kept, sizeof y) == 0);
    /* a recording released by a backward pass */
    ck_assert_int_eq(llm_tape_leaf(&tape, &a, NULL, &va, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sum_all(&tape, va, &vb, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, vb, NULL, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_causal_softmax(&tape, va, &y, &err), LLM_ERR_TAPE);
    ck_assert(memcmp(&y, &kept, sizeof y) == 0);
    llm_tape_free(&tape);
    llm_tape_free(&other);
    llm_tensor_free(&a);
    llm_tensor_free(&b);
    llm_tensor_free(&c);
}
END_TEST

START_TEST(test_attention_refusals)
{
    static const double x[12] = {0};
    size_t s32[2] = {3, 2}, s22[2] = {2, 2}, s02[2] = {0, 2}, s3[1] = {3};
    size_t s232[3] = {2, 3, 2}, s33[2] = {3, 3};
    llm_tape tape;
    llm_tensor t32, t22, t02, t3, t232, t33;
    llm_var q, k2, k0, r1, r3, w3, w, y, wkept, ykept;
    llm_error err;
    size_t count;
    ck_assert_int_eq(llm_tensor_from(&t32, 2, s32, x, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&t22, 2, s22, x, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&t02, 2, s02, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&t3, 1, s3, x, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&t232, 3, s232, x, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&t33, 2, s33, x, 9, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    put_leaves(&tape, &t32, &q, &t22, &k2, &t02, &k0, &t3, &r1, &t232, &r3, &t33, &w3,
               NULL);
    count = tape.count;
    memset(&w, 0x2d, sizeof w);
    memset(&y, 0x3c, sizeof y);
    wkept = w;
    ykept = y;
    /* 3 queries, 2 keys: the stage is causal attention's */
    ck_assert_int_eq(llm_tape_causal_attention(&tape, q, k2, k2, &w, &y, &err),
                     LLM_ERR_SHAPE);
    ck_assert_str_eq(where(&err), "tape.causal_attention");
    ck_assert_ptr_nonnull(strstr(err.message, "last positions"));
    /* and chapter 27's checks, under the same stage */
    ck_assert_int_eq(llm_tape_causal_attention(&tape, q, k0, k0, &w, &y, &err),
                     LLM_ERR_EMPTY);
    ck_assert_str_eq(where(&err), "tape.causal_attention");
    ck_assert_int_eq(llm_tape_causal_attention(&tape, r1, q, q, &w, &y, &err), LLM_ERR_RANK);
    ck_assert_int_eq(llm_tape_causal_attention(&tape, r3, q, q, &w, &y, &err), LLM_ERR_RANK);
    ck_assert_int_eq(llm_tape_causal_attention(&tape, q, w3, q, &w, &y, &err),
                     LLM_ERR_SHAPE);                       /* widths 2 and 3 */
    ck_assert_int_eq(llm_tape_causal_attention(&tape, q, q, k2, &w, &y, &err),
                     LLM_ERR_SHAPE);                       /* 3 keys, 2 values */
    ck_assert_int_eq(llm_tape_causal_attention(&tape, q, q, q, &w, NULL, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tape_causal_attention(NULL, q, q, q, &w, &y, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert(memcmp(&w, &wkept, sizeof w) == 0);
    ck_assert(memcmp(&y, &ykept, sizeof y) == 0);
    ck_assert_uint_eq(tape.count, count);
    /* finite queries and keys whose scores overflow: refused midway, by the
       product after the scale's constant, which is rewound */
    {
        static const double huge[4] = {1e200, 1e200, 1e200, 1e200};
        llm_tensor th;
        llm_var h;
        ck_assert_int_eq(llm_tensor_from(&th, 2, s22, huge, 4, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_leaf(&tape, &th, NULL, &h, NULL), LLM_OK);
        count = tape.count;
        ck_assert_int_eq(llm_tape_causal_attention(&tape, h, h, k2, &w, &y, &err),
                         LLM_ERR_NONFINITE);
        ck_assert_str_eq(where(&err), "tape.causal_attention <- tape.matmul");
        ck_assert_uint_eq(tape.count, count);
        ck_assert(memcmp(&w, &wkept, sizeof w) == 0);
        ck_assert(memcmp(&y, &ykept, sizeof y) == 0);
        llm_tape_reset(&tape, NULL);           /* the leaf borrows th */
        llm_tensor_free(&th);
    }
    ck_assert_int_eq(llm_tape_leaf(&tape, &t32, NULL, &q, NULL), LLM_OK);
    /* weights may be NULL */
    ck_assert_int_eq(llm_tape_causal_attention(&tape, q, q, q, NULL, &y, &err), LLM_OK);
    llm_tape_free(&tape);
    llm_tensor_free(&t32);
    llm_tensor_free(&t22);
    llm_tensor_free(&t02);
    llm_tensor_free(&t3);
    llm_tensor_free(&t232);
    llm_tensor_free(&t33);
}
END_TEST

Suite *ch28_causal_masking_suite(void)
{
    const TTest *tests[] = {
        test_fixture,
        test_rows_are_prefix_softmaxes,
        test_leading_axes_are_independent,
        test_strided_scores,
        test_prefix_invariance,
        test_last_queries_of_longer_keys,
        test_single_token_and_empty,
        test_masked_scores_never_read,
        test_backward_masked_receive_nothing,
        test_gradients,
        test_softmax_refusals,
        test_attention_refusals,
    };
    return suite_of("ch28 causal masking", tcase_of("core", 0, tests, COUNT(tests)));
}
