/* Chapter 31: the pre-norm decoder block. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "llm/error.h"
#include "llm/gradcheck.h"
#include "llm/model.h"
#include "llm/nn.h"
#include "llm/tape.h"
#include "llm/tensor.h"
#include "support.h"

#define GAMMA UINT64_C(0x9e3779b97f4a7c15)
#define MAXN 64   /* room for T * max(D, F) and T * T values */

static const double fix_x[12] = {2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0};
static const double mixed_x[12] = {0.3, -1.2, 0.8, 0.5, 1.1, 0.4, -0.6, 0.9,
                                   -0.7, 0.2, 1.5, -0.4};

/* ------------------------------------------------------ a plain reference -- */
/* Everything below works on plain row-major arrays, independently of the
   tape: the formulas of the chapter, written out. */

static void ref_matmul(const double *x, const double *w, double *y, size_t n, size_t din,
                       size_t dout)
{
    size_t i, j, k;
    for (i = 0; i < n; i++)
        for (j = 0; j < dout; j++) {
            double s = 0.0;
            for (k = 0; k < din; k++)
                s += x[i * din + k] * w[k * dout + j];
            y[i * dout + j] = s;
        }
}

static void ref_rmsnorm(const double *x, const double *g, double eps, double *y, size_t n,
                        size_t d)
{
    size_t i, k;
    for (i = 0; i < n; i++) {
        double ms = 0.0, inv;
        for (k = 0; k < d; k++)
            ms += x[i * d + k] * x[i * d + k];
        inv = 1.0 / sqrt(ms / (double)d + eps);
        for (k = 0; k < d; k++)
            y[i * d + k] = x[i * d + k] * inv * g[k];
    }
}

/* Adjacent pairs of a head row of width dh turned for position m. */
static void ref_rope(double *row, size_t dh, size_t m, double base)
{
    size_t j;
    for (j = 0; j < dh / 2; j++) {
        double th = pow(base, -(double)(2 * j) / (double)dh) * (double)m;
        double u = row[2 * j], v = row[2 * j + 1];
        row[2 * j] = u * cos(th) - v * sin(th);
        row[2 * j + 1] = u * sin(th) + v * cos(th);
    }
}

/* Causal multi-head attention with RoPE on n [T, D], positions from
   offset: out [T, D]; weights [H, T, T] when not NULL. */
static void ref_mha(const double *n, const double *wq, const double *wk, const double *wv,
                    const double *wo, size_t T, size_t D, size_t H, size_t offset,
                    double base, double *out, double *weights)
{
    double q[MAXN], k[MAXN], v[MAXN], cat[MAXN];
    size_t dh = D / H, h, t, s, j;
    ref_matmul(n, wq, q, T, D, D);
    ref_matmul(n, wk, k, T, D, D);
    ref_matmul(n, wv, v, T, D, D);
    for (t = 0; t < T; t++)
        for (h = 0; h < H; h++) {
            ref_rope(q + t * D + h * dh, dh, offset + t, base);
            ref_rope(k + t * D + h * dh, dh, offset + t, base);
        }
    for (h = 0; h < H; h++)
        for (t = 0; t < T; t++) {
            double sc[8], mx = -INFINITY, z = 0.0;
            for (s = 0; s <= t; s++) {
                double d = 0.0;
                for (j = 0; j < dh; j++)
                    d += q[t * D + h * dh + j] * k[s * D + h * dh + j];
                sc[s] = d / sqrt((double)dh);
                if (sc[s] > mx)
                    mx = sc[s];
            }
            for (s = 0; s <= t; s++)
                z += (sc[s] = exp(sc[s] - mx));
            for (j = 0; j < dh; j++)
                cat[t * D + h * dh + j] = 0.0;
            for (s = 0; s < T; s++) {
                double w = s <= t ? sc[s] / z : 0.0;
                if (weights != NULL)
                    weights[(h * T + t) * T + s] = w;
                for (j = 0; s <= t && j < dh; j++)
                    cat[t * D + h * dh + j] += w * v[s * D + h * dh + j];
            }
        }
    ref_matmul(cat, wo, out, T, D, D);
}

static void ref_swiglu(const double *x, const double *wg, const double *wu, const double *wd,
                       size_t T, size_t D, size_t F, double *y)
{
    double g[MAXN], u[MAXN];
    size_t i;
    ref_matmul(x, wg, g, T, D, F);
    ref_matmul(x, wu, u, T, D, F);
    for (i = 0; i < T * F; i++)
        g[i] = g[i] / (1.0 + exp(-g[i])) * u[i];
    ref_matmul(g, wd, y, T, F, D);
}

/* The pre-norm block on plain arrays, parameters p[0..8] in list order:
   st[0..5] = n1, a, x', n2, f, y, each [T, D]. */
static void ref_block(const llm_params *ps, const double *x, size_t T, size_t D, size_t H,
                      size_t F, double eps, size_t offset, double st[6][MAXN],
                      double *weights)
{
    const double *p[9];
    size_t i;
    for (i = 0; i < 9; i++)
        p[i] = ps->items[i].value.data;
    ref_rmsnorm(x, p[0], eps, st[0], T, D);
    ref_mha(st[0], p[1], p[2], p[3], p[4], T, D, H, offset, 100.0, st[1], weights);
    for (i = 0; i < T * D; i++)
        st[2][i] = x[i] + st[1][i];
    ref_rmsnorm(st[2], p[5], eps, st[3], T, D);
    ref_swiglu(st[3], p[6], p[7], p[8], T, D, F, st[4]);
    for (i = 0; i < T * D; i++)
        st[5][i] = st[2][i] + st[4][i];
}

/* ---------------------------------------------------------------- helpers -- */

/* The n values of v, row-major. */
static void read_var(const llm_tape *tape, llm_var v, double *out, size_t n)
{
    const llm_tensor *t;
    size_t idx[LLM_MAX_RANK] = {0}, i = 0, k, o;
    ck_assert_int_eq(llm_tape_value(tape, v, &t, NULL), LLM_OK);
    ck_assert_uint_eq(t->size, n);
    do {
        for (o = t->offset, k = 0; k < t->rank; k++)
            o += idx[k] * t->stride[k];
        out[i++] = t->data[o];
    } while (llm_index_next(t->rank, t->shape, idx));
}

/* A block "b" (D 4, 2 heads) in a fresh list, seed 31. */
static void make_block(llm_params *ps, llm_block *blk, size_t d_ff, double eps)
{
    llm_rng rng;
    llm_rng_seed(&rng, 31);
    ck_assert_int_eq(llm_params_init(ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_block_init(blk, ps, "b", 4, 2, d_ff, eps, &rng, NULL), LLM_OK);
}

static void identity_matrices(llm_params *ps)
{
    size_t i, j;
    for (i = 0; i < ps->count; i++) {
        llm_tensor *w = &ps->items[i].value;
        if (w->rank == 2)
            for (j = 0; j < w->size; j++)
                w->data[j] = j / w->shape[1] == j % w->shape[1] ? 1.0 : 0.0;
    }
}

/* x [1, 3, 4] through the block at offset on a fresh tape: st[0..5] as in
   ref_block, weights [2, 3, 3]. post selects the post-norm arrangement
   (st = a, s, x', f, s', y). */
static void run(const llm_block *blk, llm_params *ps, const llm_rope *rope, const double *x,
                size_t offset, int post, double st[6][MAXN], double *weights)
{
    static const size_t shape[3] = {1, 3, 4};
    llm_tape tape;
    llm_tensor xt;
    llm_var xv, v[6];
    llm_block_trace bt;
    llm_mha_trace mt;
    size_t s;
    ck_assert_int_eq(llm_tensor_from(&xt, 3, shape, x, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 64, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &xt, &xv, NULL), LLM_OK);
    if (!post) {
        ck_assert_int_eq(llm_block_forward(blk, ps, &tape, rope, xv, offset, &bt, &v[5], NULL),
                         LLM_OK);
        v[0] = bt.attention_in;
        v[1] = bt.attention_out;
        v[2] = bt.mid;
        v[3] = bt.ffn_in;
        v[4] = bt.ffn_out;
        mt = bt.attention_detail;
    } else {
        ck_assert_int_eq(llm_mha_forward(&blk->attention, ps, &tape, rope, xv, offset, &mt,
                                         &v[0], NULL), LLM_OK);
        ck_assert_int_eq(llm_residual_add(&tape, xv, v[0], &v[1], NULL), LLM_OK);
        ck_assert_int_eq(llm_rmsnorm_forward(&blk->attention_norm, ps, &tape, v[1], &v[2],
                                             NULL), LLM_OK);
        ck_assert_int_eq(llm_swiglu_forward(&blk->ffn, ps, &tape, v[2], &v[3], NULL), LLM_OK);
        ck_assert_int_eq(llm_residual_add(&tape, v[2], v[3], &v[4], NULL), LLM_OK);
        ck_assert_int_eq(llm_rmsnorm_forward(&blk->ffn_norm, ps, &tape, v[4], &v[5], NULL),
                         LLM_OK);
    }
    for (s = 0; s < 6; s++)
        read_var(&tape, v[s], st[s], 12);
    if (weights != NULL)
        read_var(&tape, mt.weights, weights, 18);
    llm_tape_free(&tape);
    llm_tensor_free(&xt);
}

static double row_rms(const double *row)
{
    return sqrt((row[0] * row[0] + row[1] * row[1] + row[2] * row[2] + row[3] * row[3]) / 4);
}

/* ------------------------------------------------------------ construction -- */

START_TEST(test_parameter_order_and_draws)
{
    static const char *const names[9] = {
        "b.attention_norm.gain", "b.attention.query.weight", "b.attention.key.weight",
        "b.attention.value.weight", "b.attention.output.weight", "b.ffn_norm.gain",
        "b.ffn.gate.weight", "b.ffn.up.weight", "b.ffn.down.weight"};
    static const size_t rows[9] = {4, 4, 4, 4, 4, 4, 4, 4, 6};
    static const size_t cols[9] = {0, 4, 4, 4, 4, 0, 6, 6, 4};
    llm_params ps;
    llm_block blk;
    llm_rng rng, fresh;
    llm_tensor w;
    size_t i, j, total = 0;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    llm_rng_seed(&rng, 31);
    ck_assert_int_eq(llm_block_init(&blk, &ps, "b", 4, 2, 6, 1e-6, &rng, NULL), LLM_OK);
    ck_assert_uint_eq(ps.count, 9);
    ck_assert_uint_eq(blk.attention_norm.gain, 0);
    ck_assert_uint_eq(blk.attention.qkv.query.weight, 1);
    ck_assert_uint_eq(blk.attention.output.weight, 4);
    ck_assert_uint_eq(blk.ffn_norm.gain, 5);
    ck_assert_uint_eq(blk.ffn.gate, 6);
    ck_assert_uint_eq(blk.ffn.down, 8);
    ck_assert_uint_eq(blk.attention.n_heads, 2);
    ck_assert_uint_eq(blk.attention.head_dim, 2);
    ck_assert(blk.attention_norm.eps == 1e-6 && blk.ffn_norm.eps == 1e-6);
    llm_rng_seed(&fresh, 31);
    for (i = 0; i < 9; i++) {
        const llm_param *p = &ps.items[i];
        ck_assert_str_eq(p->name, names[i]);
        total += p->value.size;
        if (cols[i] == 0) {   /* a gain: ones, no decay, no draw */
            assert_shape(&p->value, 1, (const size_t[]){rows[i]});
            ck_assert_int_eq(p->decay, 0);
            for (j = 0; j < p->value.size; j++)
                ck_assert(p->value.data[j] == 1.0);
            continue;
        }
        assert_shape(&p->value, 2, (const size_t[]){rows[i], cols[i]});
        ck_assert_int_eq(p->decay, 1);
        ck_assert_int_eq(llm_xavier_uniform(&w, rows[i], cols[i], &fresh, NULL), LLM_OK);
        ck_assert(memcmp(w.data, p->value.data, w.size * sizeof(double)) == 0);
        llm_tensor_free(&w);
    }
    /* 2 D + 4 D^2 + 3 D F scalars; 4 D^2 + 3 D F draws */
    ck_assert_uint_eq(total, 2 * 4 + 4 * 16 + 3 * 4 * 6);
    ck_assert_uint_eq(rng.state, 31 + (4 * 16 + 3 * 4 * 6) * GAMMA);
    ck_assert_uint_eq(fresh.state, rng.state);
    llm_params_free(&ps);
}
END_TEST

START_TEST(test_fixture_counts_and_two_blocks_in_one_list)
{
    llm_params ps;
    llm_block a, b;
    llm_rng rng;
    size_t i, n = 0;
    make_block(&ps, &a, 4, 0.0);
    for (i = 0; i < ps.count; i++)
        n += ps.items[i].value.size;
    ck_assert_uint_eq(ps.count, 9);
    ck_assert_uint_eq(n, 120);
    /* a second block continues the list and the stream */
    llm_rng_seed(&rng, 5);
    ck_assert_int_eq(llm_block_init(&b, &ps, "blocks.1", 4, 1, 8, 0.0, &rng, NULL), LLM_OK);
    ck_assert_uint_eq(ps.count, 18);
    ck_assert_str_eq(ps.items[9].name, "blocks.1.attention_norm.gain");
    ck_assert_str_eq(ps.items[17].name, "blocks.1.ffn.down.weight");
    ck_assert_uint_eq(b.attention_norm.gain, 9);
    ck_assert_uint_eq(b.ffn.down, 17);
    ck_assert_uint_eq(b.attention.head_dim, 4);
    llm_params_free(&ps);
}
END_TEST

START_TEST(test_init_refusals_change_nothing)
{
    llm_params ps;
    llm_block blk, kept;
    llm_rng rng, rng_kept;
    llm_error err;
    char longp[80];
    size_t count;
    make_block(&ps, &blk, 4, 0.0);
    llm_rng_seed(&rng, 9);
    rng_kept = rng;
    count = ps.count;
    memset(&blk, 0x5a, sizeof blk);
    kept = blk;
    ck_assert_int_eq(llm_block_init(&blk, &ps, "c", 4, 0, 4, 0.0, &rng, &err), LLM_ERR_CONFIG);
    ck_assert_str_eq(where(&err), "block.init");
    ck_assert_int_eq(llm_block_init(&blk, &ps, "c", 4, 3, 4, 0.0, &rng, &err), LLM_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "do not divide"));
    ck_assert_int_eq(llm_block_init(&blk, &ps, "c", 6, 2, 4, 0.0, &rng, &err), LLM_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "odd"));
    ck_assert_int_eq(llm_block_init(&blk, &ps, "c", 0, 2, 4, 0.0, &rng, &err), LLM_ERR_CONFIG);
    ck_assert_int_eq(llm_block_init(&blk, &ps, "c", 4, 2, 0, 0.0, &rng, &err), LLM_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "d_ff"));
    ck_assert_int_eq(llm_block_init(&blk, &ps, "c", 4, 2, 4, -1e-9, &rng, &err),
                     LLM_ERR_CONFIG);
    ck_assert_int_eq(llm_block_init(&blk, &ps, "c", 4, 2, 4, NAN, &rng, &err), LLM_ERR_CONFIG);
    ck_assert_int_eq(llm_block_init(&blk, &ps, "c", 4, 2, 4, INFINITY, &rng, &err),
                     LLM_ERR_CONFIG);
    ck_assert_int_eq(llm_block_init(NULL, &ps, "c", 4, 2, 4, 0.0, &rng, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_block_init(&blk, NULL, "c", 4, 2, 4, 0.0, &rng, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_block_init(&blk, &ps, NULL, 4, 2, 4, 0.0, &rng, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_block_init(&blk, &ps, "c", 4, 2, 4, 0.0, NULL, &err),
                     LLM_ERR_ARGUMENT);
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    ck_assert_int_eq(llm_block_init(&blk, &ps, longp, 4, 2, 4, 0.0, &rng, &err), LLM_ERR_NAME);
    ck_assert_int_eq(llm_block_init(&blk, &ps, "b", 4, 2, 4, 0.0, &rng, &err), LLM_ERR_NAME);
    ck_assert_int_eq(llm_block_init(&blk, &ps, "Bad", 4, 2, 4, 0.0, &rng, &err), LLM_ERR_NAME);
    ck_assert_uint_eq(ps.count, count);
    ck_assert_uint_eq(rng.state, rng_kept.state);
    ck_assert(memcmp(&blk, &kept, sizeof blk) == 0);
    llm_params_free(&ps);
}
END_TEST

START_TEST(test_init_rolls_back_a_late_failure)
{
    static const size_t two[1] = {2};
    llm_params ps;
    llm_block blk, kept;
    llm_rng rng, rng_kept;
    llm_error err;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    /* the feed-forward's gate name is taken: the norm, the attention and the
       second norm are built, then the gate fails */
    ck_assert_int_eq(llm_params_add_const(&ps, "c.ffn.gate.weight", 1, two, 0.0, 0, NULL),
                     LLM_OK);
    llm_rng_seed(&rng, 12);
    rng_kept = rng;
    memset(&blk, 0x33, sizeof blk);
    kept = blk;
    ck_assert_int_eq(llm_block_init(&blk, &ps, "c", 4, 2, 4, 0.0, &rng, &err), LLM_ERR_NAME);
    ck_assert_ptr_nonnull(strstr(err.message, "c.ffn.gate.weight"));
    ck_assert_uint_eq(ps.count, 1);
    ck_assert_str_eq(ps.items[0].name, "c.ffn.gate.weight");
    ck_assert_uint_eq(rng.state, rng_kept.state);
    ck_assert(memcmp(&blk, &kept, sizeof blk) == 0);
    llm_params_free(&ps);
}
END_TEST

/* --------------------------------------------------------------- forward -- */

START_TEST(test_fixture_matches_the_formulas)
{
    llm_params ps;
    llm_block blk;
    llm_rope rope;
    double st[6][MAXN], ref[6][MAXN], w[18], wref[18];
    double s2 = 2.0 / (1.0 + exp(-2.0));   /* SiLU(2) */
    size_t s, i;
    make_block(&ps, &blk, 4, 0.0);
    identity_matrices(&ps);
    ck_assert_int_eq(llm_rope_init(&rope, 2, 100.0, 6, LLM_ROPE_ADJACENT, NULL), LLM_OK);
    run(&blk, &ps, &rope, fix_x, 0, 0, st, w);
    ref_block(&ps, fix_x, 3, 4, 2, 4, 0.0, 0, ref, wref);
    for (s = 0; s < 6; s++)
        for (i = 0; i < 12; i++)
            ck_assert_double_eq_tol(st[s][i], ref[s][i], 1e-12);
    for (i = 0; i < 18; i++)
        ck_assert_double_eq_tol(w[i], wref[i], 1e-12);
    /* each row 2 e_t has root mean square 1: the first norm returns it */
    ck_assert(memcmp(st[0], fix_x, sizeof fix_x) == 0);
    /* position 0 sees only itself: x' = 4 e_0, the second norm gives 2 e_0,
       the identity SwiGLU gives SiLU(2) * 2 e_0 */
    ck_assert_double_eq_tol(st[2][0], 4.0, 1e-15);
    ck_assert_double_eq_tol(st[5][0], 4.0 + 2.0 * s2, 1e-14);
    for (i = 1; i < 4; i++)
        ck_assert(st[5][i] == 0.0);
    /* head 1 at position 1 has a zero query: uniform weights */
    ck_assert_double_eq_tol(w[9 + 3], 0.5, 1e-15);
    ck_assert_double_eq_tol(w[9 + 4], 0.5, 1e-15);
    /* head 0 at position 2 has a zero query: uniform over three */
    for (i = 6; i < 9; i++)
        ck_assert_double_eq_tol(w[i], 1.0 / 3.0, 1e-15);
    llm_rope_free(&rope);
    llm_params_free(&ps);
}
END_TEST

START_TEST(test_drawn_weights_match_the_formulas_at_an_offset)
{
    llm_params ps;
    llm_block blk;
    llm_rope rope;
    double st[6][MAXN], ref[6][MAXN];
    size_t s, i;
    make_block(&ps, &blk, 6, 1e-6);   /* Xavier weights, F = 6, eps 1e-6 */
    ps.items[0].value.data[1] = 0.7;  /* gains that are not all 1 */
    ps.items[5].value.data[2] = 1.3;
    ck_assert_int_eq(llm_rope_init(&rope, 2, 100.0, 6, LLM_ROPE_ADJACENT, NULL), LLM_OK);
    run(&blk, &ps, &rope, mixed_x, 2, 0, st, NULL);
    ref_block(&ps, mixed_x, 3, 4, 2, 6, 1e-6, 2, ref, NULL);
    for (s = 0; s < 6; s++)
        for (i = 0; i < 12; i++)
            ck_assert_double_eq_tol(st[s][i], ref[s][i], 1e-12);
    /* the stream passes each addition untouched: y - x = a + f */
    for (i = 0; i < 12; i++)
        ck_assert_double_eq_tol(st[5][i] - mixed_x[i], st[1][i] + st[4][i], 1e-14);
    llm_rope_free(&rope);
    llm_params_free(&ps);
}
END_TEST

START_TEST(test_post_norm_from_the_same_parts_differs)
{
    llm_params ps;
    llm_block blk;
    llm_rope rope;
    double pre[6][MAXN], post[6][MAXN], diff = 0.0;
    size_t t, i;
    make_block(&ps, &blk, 4, 0.0);
    identity_matrices(&ps);
    ck_assert_int_eq(llm_rope_init(&rope, 2, 100.0, 6, LLM_ROPE_ADJACENT, NULL), LLM_OK);
    run(&blk, &ps, &rope, fix_x, 0, 0, pre, NULL);
    run(&blk, &ps, &rope, fix_x, 0, 1, post, NULL);
    /* the same attention output (here RMSNorm(x) = x), other results after */
    ck_assert(memcmp(pre[1], post[0], 12 * sizeof(double)) == 0);
    for (i = 0; i < 12; i++)
        if (fabs(pre[5][i] - post[5][i]) > diff)
            diff = fabs(pre[5][i] - post[5][i]);
    ck_assert(diff > 1.0);
    /* post-norm rows end with a norm of gain 1; pre-norm rows keep growing */
    for (t = 0; t < 3; t++) {
        ck_assert_double_eq_tol(row_rms(post[5] + 4 * t), 1.0, 1e-12);
        ck_assert(row_rms(pre[5] + 4 * t) > 3.0);
    }
    llm_rope_free(&rope);
    llm_params_free(&ps);
}
END_TEST

START_TEST(test_causal_prefix_is_bit_identical)
{
    llm_params ps;
    llm_block blk;
    llm_rope rope;
    double a[6][MAXN], b[6][MAXN], changed[12];
    size_t s;
    make_block(&ps, &blk, 4, 1e-6);
    ck_assert_int_eq(llm_rope_init(&rope, 2, 100.0, 6, LLM_ROPE_ADJACENT, NULL), LLM_OK);
    memcpy(changed, mixed_x, sizeof changed);
    changed[8] = 3.0;
    changed[11] = -2.5;
    run(&blk, &ps, &rope, mixed_x, 1, 0, a, NULL);
    run(&blk, &ps, &rope, changed, 1, 0, b, NULL);
    for (s = 0; s < 6; s++)
        ck_assert(memcmp(a[s], b[s], 8 * sizeof(double)) == 0);
    ck_assert(memcmp(a[5] + 8, b[5] + 8, 4 * sizeof(double)) != 0);
    llm_rope_free(&rope);
    llm_params_free(&ps);
}
END_TEST

START_TEST(test_forward_refusals_record_nothing)
{
    static const size_t s2[2] = {3, 4}, s5[3] = {1, 3, 5}, s3[3] = {1, 3, 4};
    static const double zeros[15] = {0};
    llm_params ps;
    llm_block blk;
    llm_rope rope, wide;
    llm_tape tape;
    llm_tensor x2, x5, x3, xz;
    llm_var v2, v5, v3, vz, y, y_kept, stale;
    llm_block_trace bt, bt_kept;
    llm_error err;
    size_t nodes;
    make_block(&ps, &blk, 4, 0.0);
    ck_assert_int_eq(llm_rope_init(&rope, 2, 100.0, 6, LLM_ROPE_ADJACENT, NULL), LLM_OK);
    ck_assert_int_eq(llm_rope_init(&wide, 4, 100.0, 6, LLM_ROPE_ADJACENT, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&x2, 2, s2, fix_x, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&x5, 3, s5, zeros, 15, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&x3, 3, s3, fix_x, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&xz, 3, s3, zeros, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    put_constants(&tape, &x2, &v2, &x5, &v5, &x3, &v3, &xz, &vz, NULL);
    nodes = tape.count;
    y_kept = y = marked_var();
    memset(&bt, 0x3c, sizeof bt);
    bt_kept = bt;
    ck_assert_int_eq(llm_block_forward(&blk, &ps, &tape, &rope, v2, 0, &bt, &y, &err),
                     LLM_ERR_RANK);
    ck_assert_str_eq(where(&err), "block.forward");
    ck_assert_int_eq(llm_block_forward(&blk, &ps, &tape, &rope, v5, 0, &bt, &y, &err),
                     LLM_ERR_SHAPE);
    ck_assert_int_eq(llm_block_forward(&blk, &ps, &tape, &rope, v3, 4, &bt, &y, &err),
                     LLM_ERR_INDEX);
    ck_assert_ptr_nonnull(strstr(err.message, "context of 6"));
    ck_assert_int_eq(llm_block_forward(&blk, &ps, &tape, &rope, v3, 6, &bt, &y, &err),
                     LLM_ERR_INDEX);
    ck_assert_int_eq(llm_block_forward(&blk, &ps, &tape, &rope, v3, SIZE_MAX, &bt, &y, &err),
                     LLM_ERR_INDEX);
    ck_assert_int_eq(llm_block_forward(&blk, &ps, &tape, &wide, v3, 0, &bt, &y, &err),
                     LLM_ERR_CONFIG);
    ck_assert_int_eq(llm_block_forward(NULL, &ps, &tape, &rope, v3, 0, &bt, &y, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_block_forward(&blk, NULL, &tape, &rope, v3, 0, &bt, &y, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_block_forward(&blk, &ps, NULL, &rope, v3, 0, &bt, &y, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_block_forward(&blk, &ps, &tape, NULL, v3, 0, &bt, &y, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_block_forward(&blk, &ps, &tape, &rope, v3, 0, &bt, NULL, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_uint_eq(tape.count, nodes);
    /* an all-zero row with eps 0 has no root mean square to divide by */
    ck_assert_int_eq(llm_block_forward(&blk, &ps, &tape, &rope, vz, 0, &bt, &y, &err),
                     LLM_ERR_NONFINITE);
    ck_assert(memcmp(&y, &y_kept, sizeof y) == 0);
    ck_assert(memcmp(&bt, &bt_kept, sizeof bt) == 0);
    ck_assert_uint_eq(tape.count, nodes);
    /* a failure midway: a NaN in the feed-forward's down matrix is refused
       by its leaf, after the attention half was recorded; all of it is
       rewound */
    {
        double *down = ps.items[blk.ffn.down].value.data;
        double kept = down[1];
        down[1] = NAN;
        ck_assert_int_eq(llm_block_forward(&blk, &ps, &tape, &rope, v3, 0, &bt, &y, &err),
                         LLM_ERR_NONFINITE);
        ck_assert_str_eq(where(&err), "block.forward <- tape.leaf");
        ck_assert_uint_eq(tape.count, nodes);
        ck_assert(memcmp(&y, &y_kept, sizeof y) == 0);
        ck_assert(memcmp(&bt, &bt_kept, sizeof bt) == 0);
        down[1] = kept;
    }
    /* three positions ending exactly at the capacity fit */
    ck_assert_int_eq(llm_block_forward(&blk, &ps, &tape, &rope, v3, 3, NULL, &y, &err),
                     LLM_OK);
    stale = v3;
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    nodes = tape.count;
    ck_assert_int_eq(llm_block_forward(&blk, &ps, &tape, &rope, stale, 0, &bt, &y, &err),
                     LLM_ERR_TAPE);
    ck_assert_str_eq(where(&err), "block.forward <- tape.value");
    ck_assert_uint_eq(tape.count, nodes);
    llm_tape_free(&tape);
    llm_tensor_free(&x2);
    llm_tensor_free(&x5);
    llm_tensor_free(&x3);
    llm_tensor_free(&xz);
    llm_rope_free(&rope);
    llm_rope_free(&wide);
    llm_params_free(&ps);
}
END_TEST

/* --------------------------------------------------------------- gradients -- */

static const double fix_w[12] = {1, -0.5, 0.25, 0.75, -1, 0.5, 2, -0.25, 0.5, 1, -0.75, 1.5};

typedef struct probe {
    const llm_block *blk;
    llm_params *ps;
    const llm_rope *rope;
    llm_tensor *x;
    const llm_tensor *w;
} probe;

static llm_status probe_run(const probe *p, double *loss, llm_tensor *dx, llm_error *err)
{
    llm_tape tape;
    llm_var xv, yv;
    llm_status st = llm_tape_init(&tape, 64, err);
    if (st != LLM_OK)
        return st;
    st = llm_tape_leaf(&tape, p->x, dx, &xv, err);
    if (st == LLM_OK)
        st = llm_block_forward(p->blk, p->ps, &tape, p->rope, xv, 1, NULL, &yv, err);
    if (st == LLM_OK)
        st = weighted_loss(&tape, yv, p->w, dx != NULL, loss, err);
    llm_tape_free(&tape);
    return st;
}

OBJECTIVE(probe_loss, probe_run(ctx, value, NULL, err))

/* Every coordinate of the nine parameters and of x against central
   differences, with drawn (not identity) weights, at offset 1. */
START_TEST(test_every_gradient_coordinate)
{
    static const size_t shape[3] = {1, 3, 4};
    static const size_t coords[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    llm_params ps;
    llm_block blk;
    llm_rope rope;
    llm_tensor x, dx, w;
    probe pr;
    double loss, worst, bits[12];
    size_t i, failures, total = 0;
    make_block(&ps, &blk, 4, 1e-6);
    ck_assert_int_eq(llm_rope_init(&rope, 2, 100.0, 6, LLM_ROPE_ADJACENT, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&x, 3, shape, mixed_x, 12, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&dx, 3, shape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&w, 3, shape, fix_w, 12, NULL), LLM_OK);
    pr.blk = &blk;
    pr.ps = &ps;
    pr.rope = &rope;
    pr.x = &x;
    pr.w = &w;
    ck_assert_int_eq(probe_run(&pr, &loss, &dx, NULL), LLM_OK);
    memcpy(bits, x.data, sizeof bits);
    for (i = 0; i <= ps.count; i++) {
        llm_tensor *theta = i < ps.count ? &ps.items[i].value : &x;
        const llm_tensor *g = i < ps.count ? &ps.items[i].grad : &dx;
        ck_assert_int_eq(llm_gradient_check(probe_loss, &pr, theta, g->data + g->offset,
                                            coords, theta->size, 1e-6, 2e-5, &worst,
                                            &failures, NULL), LLM_OK);
        ck_assert_uint_eq(failures, 0);
        ck_assert(worst < 2e-5);
        total += theta->size;
    }
    ck_assert_uint_eq(total, 132);
    ck_assert(memcmp(bits, x.data, sizeof bits) == 0);
    /* a gradient that is wrong on purpose is caught */
    dx.data[5] += 1e-3;
    ck_assert_int_eq(llm_gradient_check(probe_loss, &pr, &x, dx.data, coords, 12, 1e-6, 2e-5,
                                        &worst, &failures, NULL), LLM_OK);
    ck_assert_uint_eq(failures, 1);
    llm_tensor_free(&x);
    llm_tensor_free(&dx);
    llm_tensor_free(&w);
    llm_rope_free(&rope);
    llm_params_free(&ps);
}
END_TEST

Suite *ch31_decoder_block_suite(void)
{
    const TTest *tests[] = {
        test_parameter_order_and_draws,
        test_fixture_counts_and_two_blocks_in_one_list,
        test_init_refusals_change_nothing,
        test_init_rolls_back_a_late_failure,
        test_fixture_matches_the_formulas,
        test_drawn_weights_match_the_formulas_at_an_offset,
        test_post_norm_from_the_same_parts_differs,
        test_causal_prefix_is_bit_identical,
        test_forward_refusals_record_nothing,
        test_every_gradient_coordinate,
    };
    return suite_of("ch31 decoder block", tcase_of("core", 0, tests, COUNT(tests)));
}
