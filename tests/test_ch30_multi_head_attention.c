/* Chapter 30: multi-head causal attention with RoPE, split, merge, W_O. */
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
#include "support.h"

#define MAXV 256

static const double eye4[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
static const double swap4[16] = {0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0};

/* A layer, its list and a rope of its head width (base 100, capacity cap). */
typedef struct layer {
    llm_params ps;
    llm_mha mha;
    llm_rope rope;
} layer;

static void make_layer(layer *l, size_t d, size_t h, size_t cap, uint64_t seed)
{
    llm_rng rng;
    llm_rng_seed(&rng, seed);
    ck_assert_int_eq(llm_params_init(&l->ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_mha_init(&l->mha, &l->ps, "attention", d, h, &rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_rope_init(&l->rope, d / h, 100.0, cap, LLM_ROPE_ADJACENT, NULL),
                     LLM_OK);
}

static void free_layer(layer *l)
{
    llm_rope_free(&l->rope);
    llm_params_free(&l->ps);
}

static void set_weight(layer *l, size_t index, const double *w)
{
    llm_tensor *t = &l->ps.items[index].value;
    memcpy(t->data + t->offset, w, t->size * sizeof *w);
}

/* The seed's fixture: identity Q, K, V, W_O swapping the two head blocks. */
static void make_fixture(layer *l)
{
    make_layer(l, 4, 2, 6, 30);
    set_weight(l, l->mha.qkv.query.weight, eye4);
    set_weight(l, l->mha.qkv.key.weight, eye4);
    set_weight(l, l->mha.qkv.value.weight, eye4);
    set_weight(l, l->mha.output.weight, swap4);
}

static void fixture_x(double x[12])
{
    static const double tail[3][2] = {{1, 0}, {0, 1}, {1, 1}};
    size_t t;
    for (t = 0; t < 3; t++) {
        x[4 * t] = cos((double)t);
        x[4 * t + 1] = -sin((double)t);
        x[4 * t + 2] = tail[t][0];
        x[4 * t + 3] = tail[t][1];
    }
}

/* Dense row-major copy of a tape value. */
static size_t take(const llm_tape *tape, llm_var v, double *out)
{
    const llm_tensor *t;
    llm_tensor dense;
    size_t n;
    ck_assert_int_eq(llm_tape_value(tape, v, &t, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_copy(&dense, t, NULL), LLM_OK);
    n = dense.size;
    ck_assert_uint_le(n, MAXV);
    if (n > 0)
        memcpy(out, dense.data + dense.offset, n * sizeof *out);
    llm_tensor_free(&dense);
    return n;
}

typedef struct result {
    double weights[MAXV], heads[MAXV], concat[MAXV], y[MAXV];
    size_t nweights, ny;
} result;

/* x [b, t, D] at offset through the layer; the stages copied into r. */
static void forward(layer *l, const double *x, size_t b, size_t t, size_t offset, result *r)
{
    const size_t shape[3] = {b, t, l->mha.d_model};
    llm_tape tape;
    llm_tensor xt;
    llm_var xv, y;
    llm_mha_trace tr;
    ck_assert_int_eq(llm_tensor_from(&xt, 3, shape, x, b * t * l->mha.d_model, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &xt, &xv, NULL), LLM_OK);
    ck_assert_int_eq(llm_mha_forward(&l->mha, &l->ps, &tape, &l->rope, xv, offset, &tr, &y,
                                     NULL), LLM_OK);
    r->nweights = take(&tape, tr.weights, r->weights);
    take(&tape, tr.heads, r->heads);
    take(&tape, tr.concat, r->concat);
    r->ny = take(&tape, y, r->y);
    llm_tape_free(&tape);
    llm_tensor_free(&xt);
}

static void fill(double *x, size_t n, double a, double b)
{
    size_t i;
    for (i = 0; i < n; i++)
        x[i] = sin(a * (double)i + b) + 0.25 * cos(3.0 * a * (double)i);
}

START_TEST(the_fixture_reproduces_the_seed_tables)
{
    /* the reference text's numbers, six decimals */
    static const double head1[9] = {1, 0, 0, 0.213809, 0.786191, 0,
                                    0.054696, 0.370956, 0.574348};
    static const double heads[12] = {1, 0, 0.770151, -0.420735, 0.374718, -0.583589,
                                     1, 0, 0.213809, 0.786191, 0.629044, 0.945304};
    static const double out[12] = {1, 0, 1, 0, 0.213809, 0.786191, 0.770151, -0.420735,
                                   0.629044, 0.945304, 0.374718, -0.583589};
    layer l;
    result r;
    double x[12];
    size_t t, j;
    make_fixture(&l);
    fixture_x(x);
    forward(&l, x, 1, 3, 0, &r);
    ck_assert_uint_eq(r.nweights, 18);
    for (t = 0; t < 3; t++)
        for (j = 0; j < 3; j++) {
            /* head 0: RoPE undoes the built-in rotation, so rows are uniform */
            double want = j <= t ? 1.0 / (double)(t + 1) : 0.0;
            ck_assert(fabs(r.weights[3 * t + j] - want) < 1e-12);
            ck_assert(fabs(r.weights[9 + 3 * t + j] - head1[3 * t + j]) < 5e-7);
        }
    for (t = 0; t < 12; t++) {
        ck_assert(fabs(r.heads[t] - heads[t]) < 5e-7);
        ck_assert(fabs(r.y[t] - out[t]) < 5e-7);
    }
    /* the concatenation puts head 0 then head 1 in each row */
    for (t = 0; t < 3; t++) {
        ck_assert(memcmp(r.concat + 4 * t, r.heads + 2 * t, 2 * sizeof(double)) == 0);
        ck_assert(memcmp(r.concat + 4 * t + 2, r.heads + 6 + 2 * t, 2 * sizeof(double)) == 0);
    }
    free_layer(&l);
}
END_TEST

START_TEST(the_layer_holds_four_d_squared_parameters_at_any_head_count)
{
    static const size_t counts[3] = {1, 2, 4};
    static const char *const names[4] = {"attention.query.weight", "attention.key.weight",
                                         "attention.value.weight", "attention.output.weight"};
    size_t n, i;
    for (n = 0; n < 3; n++) {
        layer l;
        llm_rng rng;
        size_t total = 0;
        make_layer(&l, 8, counts[n], 4, 7);
        ck_assert_uint_eq(l.mha.head_dim, 8 / counts[n]);
        ck_assert_uint_eq(l.ps.count, 4);
        /* the draws are four [8, 8] Xavier matrices in order, as any H */
        llm_rng_seed(&rng, 7);
        for (i = 0; i < 4; i++) {
            llm_tensor w;
            ck_assert_str_eq(l.ps.items[i].name, names[i]);
            ck_assert_int_eq(llm_xavier_uniform(&w, 8, 8, &rng, NULL), LLM_OK);
            ck_assert(memcmp(w.data, l.ps.items[i].value.data, 64 * sizeof(double)) == 0);
            llm_tensor_free(&w);
            total += l.ps.items[i].value.size;
        }
        ck_assert_uint_eq(total, 4 * 8 * 8);
        free_layer(&l);
    }
}
END_TEST

/* An independent reference: projections, adjacent-pair RoPE, causal softmax
   per head, concatenation, W_O, in plain loops. */
static void reference(const double *x, size_t b, size_t t, size_t d, size_t h, size_t off,
                      const double *wq, const double *wk, const double *wv,
                      const double *wo, double *y)
{
    double q[MAXV], k[MAXV], v[MAXV], c[MAXV];
    size_t dh = d / h, bi, i, j, n, m, p;
    for (i = 0; i < b * t; i++)
        for (j = 0; j < d; j++) {
            q[i * d + j] = k[i * d + j] = v[i * d + j] = 0.0;
            for (n = 0; n < d; n++) {
                q[i * d + j] += x[i * d + n] * wq[n * d + j];
                k[i * d + j] += x[i * d + n] * wk[n * d + j];
                v[i * d + j] += x[i * d + n] * wv[n * d + j];
            }
        }
    for (i = 0; i < b * t; i++)
        for (n = 0; n < h; n++)
            for (p = 0; p < dh / 2; p++) {
                double a = (double)(off + i % t) * pow(100.0, -2.0 * (double)p / (double)dh);
                double cs = cos(a), sn = sin(a);
                double *qa = q + i * d + n * dh + 2 * p, *ka = k + i * d + n * dh + 2 * p;
                double q0 = qa[0], q1 = qa[1], k0 = ka[0], k1 = ka[1];
                qa[0] = q0 * cs - q1 * sn;
                qa[1] = q0 * sn + q1 * cs;
                ka[0] = k0 * cs - k1 * sn;
                ka[1] = k0 * sn + k1 * cs;
            }
    for (bi = 0; bi < b; bi++)
        for (n = 0; n < h; n++)
            for (i = 0; i < t; i++) {
                double s[64], mx = -INFINITY, z = 0.0;
                for (j = 0; j <= i; j++) {
                    s[j] = 0.0;
                    for (m = 0; m < dh; m++)
                        s[j] += q[(bi * t + i) * d + n * dh + m] * k[(bi * t + j) * d + n * dh + m];
                    s[j] /= sqrt((double)dh);
                    if (s[j] > mx)
                        mx = s[j];
                }
                for (j = 0; j <= i; j++)
                    z += (s[j] = exp(s[j] - mx));
                for (m = 0; m < dh; m++) {
                    double acc = 0.0;
                    for (j = 0; j <= i; j++)
                        acc += s[j] / z * v[(bi * t + j) * d + n * dh + m];
                    c[(bi * t + i) * d + n * dh + m] = acc;
                }
            }
    for (i = 0; i < b * t; i++)
        for (j = 0; j < d; j++) {
            y[i * d + j] = 0.0;
            for (n = 0; n < d; n++)
                y[i * d + j] += c[i * d + n] * wo[n * d + j];
        }
}

START_TEST(random_layers_agree_with_a_plain_reference)
{
    static const size_t cases[5][5] = {{4, 2, 3, 1, 0}, {8, 2, 4, 2, 1}, {8, 4, 3, 2, 3},
                                       {6, 3, 5, 1, 2}, {4, 2, 1, 2, 7}};
    size_t c, i;
    for (c = 0; c < 5; c++) {
        const size_t d = cases[c][0], h = cases[c][1], t = cases[c][2], b = cases[c][3],
                     off = cases[c][4];
        layer l;
        result r;
        double x[MAXV], y[MAXV];
        make_layer(&l, d, h, 8, 100 + c);
        fill(x, b * t * d, 0.37, (double)c);
        forward(&l, x, b, t, off, &r);
        reference(x, b, t, d, h, off, l.ps.items[0].value.data, l.ps.items[1].value.data,
                  l.ps.items[2].value.data, l.ps.items[3].value.data, y);
        ck_assert_uint_eq(r.ny, b * t * d);
        ck_assert_uint_eq(r.nweights, b * h * t * t);
        for (i = 0; i < b * t * d; i++)
            ck_assert(fabs(r.y[i] - y[i]) < 1e-12);
        if (t == 1)                     /* one token: its own value, weight 1 */
            for (i = 0; i < r.nweights; i++)
                ck_assert(r.weights[i] == 1.0);
        free_layer(&l);
    }
}
END_TEST

START_TEST(split_then_merge_is_the_identity_and_split_takes_column_blocks)
{
    static const size_t counts[4] = {1, 2, 3, 6}, shape[3] = {2, 3, 6};
    double x[36], s[36], m[36];
    llm_tape tape;
    llm_tensor xt;
    llm_var xv, sv, mv;
    const llm_tensor *st;
    size_t n, b, t, h, d;
    fill(x, 36, 0.5, 0.1);
    ck_assert_int_eq(llm_tensor_from(&xt, 3, shape, x, 36, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &xt, &xv, NULL), LLM_OK);
    for (n = 0; n < 4; n++) {
        const size_t dh = 6 / counts[n];
        ck_assert_int_eq(llm_mha_split_heads(&tape, xv, counts[n], &sv, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_value(&tape, sv, &st, NULL), LLM_OK);
        assert_shape(st, 4, (const size_t[]){2, counts[n], 3, dh});
        take(&tape, sv, s);
        for (b = 0; b < 2; b++)
            for (h = 0; h < counts[n]; h++)
                for (t = 0; t < 3; t++)
                    for (d = 0; d < dh; d++)
                        ck_assert(s[((b * counts[n] + h) * 3 + t) * dh + d]
                                  == x[(b * 3 + t) * 6 + h * dh + d]);
        ck_assert_int_eq(llm_mha_merge_heads(&tape, sv, &mv, NULL), LLM_OK);
        ck_assert_uint_eq(take(&tape, mv, m), 36);
        ck_assert(memcmp(m, x, sizeof x) == 0);
    }
    llm_tape_free(&tape);
    llm_tensor_free(&xt);
}
END_TEST

START_TEST(split_and_merge_refusals_record_nothing)
{
    static const size_t s3[3] = {1, 2, 6}, s2[2] = {2, 6};
    static const double x[12] = {0};
    llm_tape tape;
    llm_tensor a, b;
    llm_var av, bv, out, kept, stale;
    llm_error err;
    size_t count;
    ck_assert_int_eq(llm_tensor_from(&a, 3, s3, x, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&b, 2, s2, x, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &a, &stale, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    put_constants(&tape, &a, &av, &b, &bv, NULL);
    count = tape.count;
    memset(&out, 0x4b, sizeof out);
    kept = out;
    ck_assert_int_eq(llm_mha_split_heads(&tape, av, 0, &out, &err), LLM_ERR_CONFIG);
    ck_assert_str_eq(where(&err), "mha.split_heads");
    ck_assert_int_eq(llm_mha_split_heads(&tape, av, 4, &out, &err), LLM_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "4 heads"));
    ck_assert_int_eq(llm_mha_split_heads(&tape, bv, 2, &out, &err), LLM_ERR_RANK);
    ck_assert_int_eq(llm_mha_split_heads(&tape, stale, 2, &out, &err), LLM_ERR_TAPE);
    ck_assert_int_eq(llm_mha_split_heads(NULL, av, 2, &out, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_mha_split_heads(&tape, av, 2, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_mha_merge_heads(&tape, av, &out, &err), LLM_ERR_RANK);
    ck_assert_str_eq(where(&err), "mha.merge_heads");
    ck_assert_int_eq(llm_mha_merge_heads(&tape, stale, &out, &err), LLM_ERR_TAPE);
    ck_assert_int_eq(llm_mha_merge_heads(&tape, av, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_uint_eq(tape.count, count);
    ck_assert(memcmp(&out, &kept, sizeof out) == 0);
    llm_tape_free(&tape);
    llm_tensor_free(&a);
    llm_tensor_free(&b);
}
END_TEST

START_TEST(changing_one_heads_columns_leaves_the_other_head_bit_identical)
{
    layer l;
    result r0, r1;
    double x[24], w[3][64];
    size_t m, i;
    make_layer(&l, 8, 2, 6, 11);
    fill(x, 24, 0.3, 0.2);
    forward(&l, x, 1, 3, 0, &r0);
    /* head 1 owns the output columns 4..7 of W_Q, W_K and W_V */
    for (m = 0; m < 3; m++) {
        memcpy(w[m], l.ps.items[m].value.data, sizeof w[m]);
        for (i = 0; i < 8; i++)
            w[m][8 * i + 4 + i % 4] += 0.5;
        set_weight(&l, m, w[m]);
    }
    forward(&l, x, 1, 3, 0, &r1);
    ck_assert(memcmp(r0.weights, r1.weights, 9 * sizeof(double)) == 0);
    ck_assert(memcmp(r0.heads, r1.heads, 12 * sizeof(double)) == 0);
    ck_assert(memcmp(r0.heads + 12, r1.heads + 12, 12 * sizeof(double)) != 0);
    for (i = 0; i < 3; i++)
        ck_assert(memcmp(r0.concat + 8 * i, r1.concat + 8 * i, 4 * sizeof(double)) == 0);
    free_layer(&l);
}
END_TEST

START_TEST(a_later_token_changes_no_earlier_row)
{
    layer l;
    result r0, r1;
    double x[32];
    size_t h, i, j;
    make_layer(&l, 8, 4, 6, 12);
    fill(x, 32, 0.21, 0.4);
    forward(&l, x, 1, 4, 1, &r0);
    for (i = 24; i < 32; i++)
        x[i] = -3.0 * x[i] + 1.0;
    forward(&l, x, 1, 4, 1, &r1);
    ck_assert(memcmp(r0.y, r1.y, 24 * sizeof(double)) == 0);
    ck_assert(memcmp(r0.y + 24, r1.y + 24, 8 * sizeof(double)) != 0);
    for (h = 0; h < 4; h++)
        for (i = 0; i < 4; i++)
            for (j = i + 1; j < 4; j++) {
                double w = r0.weights[(h * 4 + i) * 4 + j];
                ck_assert(w == 0.0 && !signbit(w));
            }
    free_layer(&l);
}
END_TEST

START_TEST(the_same_rows_later_give_the_same_weights)
{
    layer l;
    result r0, r1;
    double x[24];
    size_t i;
    make_layer(&l, 8, 2, 8, 13);
    fill(x, 24, 0.6, 0.9);
    forward(&l, x, 1, 3, 0, &r0);
    forward(&l, x, 1, 3, 5, &r1);
    for (i = 0; i < 18; i++)
        ck_assert(fabs(r0.weights[i] - r1.weights[i]) < 1e-12);
    free_layer(&l);
}
END_TEST

START_TEST(batch_rows_are_independent_and_an_empty_batch_is_empty)
{
    layer l;
    result both, one;
    double x[48];
    make_layer(&l, 8, 2, 6, 14);
    fill(x, 48, 0.45, 0.3);
    forward(&l, x, 2, 3, 0, &both);
    forward(&l, x + 24, 1, 3, 0, &one);
    ck_assert(memcmp(both.y + 24, one.y, 24 * sizeof(double)) == 0);
    forward(&l, x, 0, 3, 0, &one);
    ck_assert_uint_eq(one.ny, 0);
    ck_assert_uint_eq(one.nweights, 0);
    free_layer(&l);
}
END_TEST

/* L = sum G * MHA(x) for the gradient check. */
typedef struct probe {
    layer *l;
    llm_tensor *x;
} probe;

static const double upstream[12] = {0.3, -1.1, 0.8, 0.25, -0.7, 0.6, 1.2, -0.4,
                                    0.9, -0.2, -0.5, 1.0};

static llm_status probe_run(probe *p, double *loss, llm_tensor *gx, llm_error *err)
{
    static const size_t shape[3] = {1, 3, 4};
    llm_tape tape;
    llm_tensor g;
    llm_var xv, y;
    llm_status st;
    ck_assert_int_eq(llm_tensor_from(&g, 3, shape, upstream, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    st = llm_tape_leaf(&tape, p->x, gx, &xv, err);
    if (st == LLM_OK)
        st = llm_mha_forward(&p->l->mha, &p->l->ps, &tape, &p->l->rope, xv, 0, NULL, &y, err);
    if (st == LLM_OK)
        st = weighted_loss(&tape, y, &g, gx != NULL, loss, err);
    llm_tape_free(&tape);
    llm_tensor_free(&g);
    return st;
}

OBJECTIVE(probe_loss, probe_run(ctx, value, NULL, err))

static void check_all_76(layer *l, const double *x0)
{
    static const size_t shape[3] = {1, 3, 4};
    size_t coords[16], i, failures, total = 0;
    double loss, worst;
    llm_tensor x, gx;
    probe p;
    for (i = 0; i < 16; i++)
        coords[i] = i;
    ck_assert_int_eq(llm_tensor_from(&x, 3, shape, x0, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&gx, 3, shape, NULL), LLM_OK);
    p.l = l;
    p.x = &x;
    ck_assert_int_eq(probe_run(&p, &loss, &gx, NULL), LLM_OK);
    ck_assert_int_eq(llm_gradient_check(probe_loss, &p, &x, gx.data, coords, 12, 1e-6, 8e-6,
                                        &worst, &failures, NULL), LLM_OK);
    ck_assert_uint_eq(failures, 0);
    total += 12;
    for (i = 0; i < 4; i++) {
        ck_assert_int_eq(llm_gradient_check(probe_loss, &p, &l->ps.items[i].value,
                                            l->ps.items[i].grad.data, coords, 16, 1e-6, 8e-6,
                                            &worst, &failures, NULL), LLM_OK);
        ck_assert_uint_eq(failures, 0);
        total += 16;
    }
    ck_assert_uint_eq(total, 76);
    llm_tensor_free(&x);
    llm_tensor_free(&gx);
}

START_TEST(all_76_coordinates_pass_the_central_difference_check)
{
    layer l;
    double x[12];
    make_fixture(&l);
    fixture_x(x);
    check_all_76(&l, x);
    free_layer(&l);
    make_layer(&l, 4, 2, 6, 15);
    fill(x, 12, 0.8, 0.5);
    check_all_76(&l, x);
    free_layer(&l);
}
END_TEST

START_TEST(init_refusals_touch_neither_layer_list_nor_generator)
{
    layer l;
    llm_mha bad, kept;
    llm_rng rng, rng_kept;
    llm_error err;
    char prefix[80];
    size_t count;
    make_layer(&l, 4, 2, 6, 16);
    llm_rng_seed(&rng, 99);
    rng_kept = rng;
    memset(&bad, 0x5a, sizeof bad);
    kept = bad;
    count = l.ps.count;
    ck_assert_int_eq(llm_mha_init(&bad, &l.ps, "b", 4, 0, &rng, &err), LLM_ERR_CONFIG);
    ck_assert_str_eq(where(&err), "mha.init");
    ck_assert_int_eq(llm_mha_init(&bad, &l.ps, "b", 0, 2, &rng, &err), LLM_ERR_CONFIG);
    ck_assert_int_eq(llm_mha_init(&bad, &l.ps, "b", 4, 3, &rng, &err), LLM_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "3 heads"));
    ck_assert_int_eq(llm_mha_init(&bad, &l.ps, "b", 4, 4, &rng, &err), LLM_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "odd"));
    ck_assert_int_eq(llm_mha_init(&bad, &l.ps, "b", 6, 2, &rng, &err), LLM_ERR_CONFIG);
    ck_assert_int_eq(llm_mha_init(NULL, &l.ps, "b", 4, 2, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_mha_init(&bad, NULL, "b", 4, 2, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_mha_init(&bad, &l.ps, NULL, 4, 2, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_mha_init(&bad, &l.ps, "b", 4, 2, NULL, &err), LLM_ERR_ARGUMENT);
    /* the names are taken: query fails first */
    ck_assert_int_eq(llm_mha_init(&bad, &l.ps, "attention", 4, 2, &rng, &err), LLM_ERR_NAME);
    /* too long for "<prefix>.query.weight" in 63 characters, then too long for
       the buffer of "<prefix>.output" */
    memset(prefix, 'a', 60);
    prefix[60] = '\0';
    ck_assert_int_eq(llm_mha_init(&bad, &l.ps, prefix, 4, 2, &rng, &err), LLM_ERR_NAME);
    memset(prefix, 'a', 79);
    prefix[79] = '\0';
    ck_assert_int_eq(llm_mha_init(&bad, &l.ps, prefix, 4, 2, &rng, &err), LLM_ERR_NAME);
    ck_assert(memcmp(&bad, &kept, sizeof bad) == 0);
    ck_assert(rng.state == rng_kept.state);
    ck_assert_uint_eq(l.ps.count, count);
    free_layer(&l);
}
END_TEST

START_TEST(forward_refusals_come_before_the_first_node)
{
    static const size_t s3[3] = {1, 3, 4}, s2[2] = {3, 4}, s4[4] = {1, 1, 3, 4},
                        s6[3] = {1, 3, 6}, s0[3] = {1, 0, 4};
    static const double z[18] = {0};
    layer l;
    llm_rope wide;
    llm_mha odd;
    llm_tape tape;
    llm_tensor a, b, c, d, e;
    llm_var av, bv, cv, dv, ev, stale, y, y_kept;
    llm_mha_trace tr, tr_kept;
    llm_error err;
    size_t count;
    make_layer(&l, 4, 2, 6, 17);
    ck_assert_int_eq(llm_rope_init(&wide, 4, 100.0, 6, LLM_ROPE_ADJACENT, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&a, 3, s3, z, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&b, 2, s2, z, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&c, 4, s4, z, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&d, 3, s6, z, 18, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&e, 3, s0, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &a, &stale, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    put_constants(&tape, &a, &av, &b, &bv, &c, &cv, &d, &dv, &e, &ev, NULL);
    count = tape.count;
    y_kept = y = marked_var();
    memset(&tr, 0x3c, sizeof tr);
    tr_kept = tr;
    ck_assert_int_eq(llm_mha_forward(&l.mha, &l.ps, &tape, &wide, av, 0, &tr, &y, &err),
                     LLM_ERR_CONFIG);
    ck_assert_str_eq(where(&err), "mha.forward");
    ck_assert_int_eq(llm_mha_forward(&l.mha, &l.ps, &tape, &l.rope, bv, 0, &tr, &y, &err),
                     LLM_ERR_RANK);
    ck_assert_int_eq(llm_mha_forward(&l.mha, &l.ps, &tape, &l.rope, cv, 0, &tr, &y, &err),
                     LLM_ERR_RANK);
    ck_assert_int_eq(llm_mha_forward(&l.mha, &l.ps, &tape, &l.rope, dv, 0, &tr, &y, &err),
                     LLM_ERR_SHAPE);
    ck_assert_int_eq(llm_mha_forward(&l.mha, &l.ps, &tape, &l.rope, ev, 0, &tr, &y, &err),
                     LLM_ERR_EMPTY);
    /* the layer itself refuses a context that does not fit, before RoPE */
    ck_assert_int_eq(llm_mha_forward(&l.mha, &l.ps, &tape, &l.rope, av, 4, &tr, &y, &err),
                     LLM_ERR_INDEX);
    ck_assert_str_eq(where(&err), "mha.forward");
    ck_assert_ptr_nonnull(strstr(err.message, "6 positions"));
    ck_assert_int_eq(llm_mha_forward(&l.mha, &l.ps, &tape, &l.rope, av, 6, &tr, &y, &err),
                     LLM_ERR_INDEX);
    ck_assert_str_eq(where(&err), "mha.forward");
    ck_assert_int_eq(llm_mha_forward(&l.mha, &l.ps, &tape, &l.rope, av, SIZE_MAX, &tr, &y,
                                     &err), LLM_ERR_INDEX);
    ck_assert_str_eq(where(&err), "mha.forward");
    ck_assert_int_eq(llm_mha_forward(&l.mha, &l.ps, &tape, &l.rope, stale, 0, &tr, &y, &err),
                     LLM_ERR_TAPE);
    ck_assert_str_eq(where(&err), "mha.forward");
    ck_assert_int_eq(llm_mha_forward(NULL, &l.ps, &tape, &l.rope, av, 0, &tr, &y, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_mha_forward(&l.mha, NULL, &tape, &l.rope, av, 0, &tr, &y, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_mha_forward(&l.mha, &l.ps, NULL, &l.rope, av, 0, &tr, &y, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_mha_forward(&l.mha, &l.ps, &tape, NULL, av, 0, &tr, &y, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_mha_forward(&l.mha, &l.ps, &tape, &l.rope, av, 0, &tr, NULL, &err),
                     LLM_ERR_ARGUMENT);
    /* a layer no constructor makes, and an output weight outside the list */
    odd = l.mha;
    odd.head_dim = 4;
    ck_assert_int_eq(llm_mha_forward(&odd, &l.ps, &tape, &l.rope, av, 0, &tr, &y, &err),
                     LLM_ERR_CONFIG);
    odd = l.mha;
    odd.output.weight = 9;
    ck_assert_int_eq(llm_mha_forward(&odd, &l.ps, &tape, &l.rope, av, 0, &tr, &y, &err),
                     LLM_ERR_NAME);
    odd = l.mha;
    odd.output.weight = odd.qkv.query.weight;
    ck_assert_int_eq(llm_mha_forward(&odd, &l.ps, &tape, &l.rope, av, 0, &tr, &y, &err),
                     LLM_OK);
    /* the last call was a legal layer (W_O = W_Q's matrix); take its nodes back */
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &a, &av, NULL), LLM_OK);
    count = tape.count;
    y = y_kept;
    tr = tr_kept;
    ck_assert_int_eq(llm_mha_forward(&l.mha, &l.ps, &tape, &l.rope, av, 4, &tr, &y, &err),
                     LLM_ERR_INDEX);
    ck_assert_uint_eq(tape.count, count);
    ck_assert(memcmp(&y, &y_kept, sizeof y) == 0);
    ck_assert(memcmp(&tr, &tr_kept, sizeof tr) == 0);
    /* exactly at the capacity is fine: positions 3, 4, 5 */
    ck_assert_int_eq(llm_mha_forward(&l.mha, &l.ps, &tape, &l.rope, av, 3, &tr, &y, &err),
                     LLM_OK);
    /* a failure at the very end: identity projections and rows of ones give
       heads of ones, and an output matrix of 1e308 overflows their sum of 4
       products; the whole recording of the call is rewound */
    {
        static const double ones[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
        double w[16];
        llm_tensor o;
        llm_var ov;
        size_t j;
        for (j = 0; j < 16; j++)
            w[j] = 1e308;
        set_weight(&l, l.mha.qkv.query.weight, eye4);
        set_weight(&l, l.mha.qkv.key.weight, eye4);
        set_weight(&l, l.mha.qkv.value.weight, eye4);
        set_weight(&l, l.mha.output.weight, w);
        ck_assert_int_eq(llm_tensor_from(&o, 3, s3, ones, 12, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);   /* new weights, new leaves */
        put_constants(&tape, &a, &av, &o, &ov, NULL);
        count = tape.count;
        y = y_kept;
        tr = tr_kept;
        ck_assert_int_eq(llm_mha_forward(&l.mha, &l.ps, &tape, &l.rope, ov, 0, &tr, &y, &err),
                         LLM_ERR_NONFINITE);
        ck_assert_str_eq(where(&err), "mha.forward <- tape.matmul");
        ck_assert_uint_eq(tape.count, count);
        ck_assert(memcmp(&y, &y_kept, sizeof y) == 0);
        ck_assert(memcmp(&tr, &tr_kept, sizeof tr) == 0);
        /* with a sane output matrix the same call works from the same count */
        set_weight(&l, l.mha.output.weight, swap4);
        ck_assert_int_eq(llm_mha_forward(&l.mha, &l.ps, &tape, &l.rope, ov, 0, &tr, &y, &err),
                         LLM_OK);
        ck_assert_uint_gt(tape.count, count);
        llm_tensor_free(&o);
    }
    llm_tape_free(&tape);
    llm_tensor_free(&a);
    llm_tensor_free(&b);
    llm_tensor_free(&c);
    llm_tensor_free(&d);
    llm_tensor_free(&e);
    llm_rope_free(&wide);
    free_layer(&l);
}
END_TEST

START_TEST(the_check_refuses_a_layer_its_constructor_would_not_build)
{
    llm_params ps;
    llm_mha mha, bad;
    llm_rng rng;
    llm_error err;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    llm_rng_seed(&rng, 30);
    ck_assert_int_eq(llm_mha_init(&mha, &ps, "attention", 4, 2, &rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_mha_check(&mha, &ps, "attention", &err), LLM_OK);
    bad = mha;
    bad.d_model = 6;                               /* heads of 2 no longer make D */
    ck_assert_int_eq(llm_mha_check(&bad, &ps, "attention", &err), LLM_ERR_CONFIG);
    ck_assert_str_eq(err.stage, "mha.check");
    bad = mha;
    bad.n_heads = 0;
    ck_assert_int_eq(llm_mha_check(&bad, &ps, "attention", &err), LLM_ERR_CONFIG);
    ck_assert_int_eq(llm_mha_check(&mha, &ps, "attn", &err), LLM_ERR_NAME);
    ck_assert_str_eq(where(&err), "mha.check <- param.check");
    llm_params_free(&ps);
}
END_TEST

Suite *ch30_multi_head_attention_suite(void)
{
    const TTest *tests[] = {
        the_fixture_reproduces_the_seed_tables,
        the_check_refuses_a_layer_its_constructor_would_not_build,
        the_layer_holds_four_d_squared_parameters_at_any_head_count,
        random_layers_agree_with_a_plain_reference,
        split_then_merge_is_the_identity_and_split_takes_column_blocks,
        split_and_merge_refusals_record_nothing,
        changing_one_heads_columns_leaves_the_other_head_bit_identical,
        a_later_token_changes_no_earlier_row,
        the_same_rows_later_give_the_same_weights,
        batch_rows_are_independent_and_an_empty_batch_is_empty,
        all_76_coordinates_pass_the_central_difference_check,
        init_refusals_touch_neither_layer_list_nor_generator,
        forward_refusals_come_before_the_first_node,
    };
    return suite_of("ch30 multi-head attention",
                    tcase_of("core", 30, tests, COUNT(tests)));
}
