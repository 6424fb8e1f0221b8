/* ch27-self-attention -- softmax(Q K^T / sqrt(d)) V for one head: the
   fixture from chapter 26's projections, the scale, one token, gradients,
   refusals. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/attention.h"
#include "llm/evidence.h"
#include "llm/gradcheck.h"

/* "[[a, b], [c, d]]": r rows of c values, row-major; six decimals, or
   trimmed by num when trim is 1. */
static char *matrix(char *buf, size_t size, const double *x, size_t r, size_t c, int trim)
{
    char one[48];
    size_t i, j, used = 0;
    used += (size_t)snprintf(buf, size, "[");
    for (i = 0; i < r && used < size; i++)
        for (j = 0; j < c && used < size; j++) {
            if (trim)
                llm_fmt_trim(one, sizeof one, x[i * c + j], 6);
            else
                llm_fmt(one, sizeof one, x[i * c + j], 6);
            used += (size_t)snprintf(buf + used, size - used, "%s%s%s%s",
                                     j == 0 && i > 0 ? ", " : "", j == 0 ? "[" : ", ", one,
                                     j + 1 == c ? "]" : "");
        }
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

/* The row-major values of v: a pointer into the tape. */
static const double *values(const llm_tape *tape, llm_var v)
{
    const llm_tensor *t = NULL;
    if (llm_tape_value(tape, v, &t, NULL) != LLM_OK)
        return NULL;
    return t->data + t->offset;
}
/* n draws, uniform on [-sqrt 3, sqrt 3): mean 0, variance 1. */
static void draw(llm_rng *rng, double *x, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        x[i] = sqrt(3.0) * (2.0 * llm_rng_unit(rng) - 1.0);
}

/* One row of the table "scale": 64 queries against 8 keys of width d,
   the root mean square of the raw scores; with and without the scale, the
   mean over the queries of the largest weight and of sum_j w_j (1 - w_j),
   the trace of the softmax's Jacobian. */
static llm_status scale_row(llm_trace *tr, size_t d, llm_error *err)
{
    enum { TQ = 64, TK = 8 };
    static double xq[TQ * 512], xk[TK * 512], xv[TK];
    const size_t sq[2] = {TQ, d}, sk[2] = {TK, d}, sv[2] = {TK, 1};
    llm_rng rng;
    llm_tape tape;
    llm_tensor tq, tk, tv;
    llm_var q, k, v, w, o, raw, plain;
    double rms = 0.0, top[2] = {0, 0}, jac[2] = {0, 0};
    size_t i, j, r;
    char c[6][32];
    const char *cells[6] = {c[0], c[1], c[2], c[3], c[4], c[5]};
    llm_status st;

    llm_rng_seed(&rng, 27);
    draw(&rng, xq, TQ * d);
    draw(&rng, xk, TK * d);
    memset(xv, 0, sizeof xv);
    memset(&tq, 0, sizeof tq);
    memset(&tk, 0, sizeof tk);
    memset(&tv, 0, sizeof tv);
    memset(&tape, 0, sizeof tape);
    st = llm_tensor_from(&tq, 2, sq, xq, TQ * d, err);
    if (st == LLM_OK)
        st = llm_tensor_from(&tk, 2, sk, xk, TK * d, err);
    if (st == LLM_OK)
        st = llm_tensor_from(&tv, 2, sv, xv, TK, err);
    if (st == LLM_OK)
        st = llm_tape_init(&tape, 16, err);
    if (st == LLM_OK)
        st = llm_tape_constant(&tape, &tq, &q, err);
    if (st == LLM_OK)
        st = llm_tape_constant(&tape, &tk, &k, err);
    if (st == LLM_OK)
        st = llm_tape_constant(&tape, &tv, &v, err);
    if (st == LLM_OK)
        st = llm_tape_attention(&tape, q, k, v, &w, &o, err);
    if (st == LLM_OK)
        st = llm_tape_matmul(&tape, q, k, 0, 1, &raw, err);
    if (st == LLM_OK)
        st = llm_tape_softmax(&tape, raw, &plain, err);
    if (st == LLM_OK) {
        const double *s = values(&tape, raw), *y[2];
        y[0] = values(&tape, plain);
        y[1] = values(&tape, w);
        for (i = 0; i < TQ * TK; i++)
            rms += s[i] * s[i];
        rms = sqrt(rms / (TQ * TK));
        for (j = 0; j < 2; j++)
            for (r = 0; r < TQ; r++) {
                double best = 0.0, t = 0.0;
                for (i = 0; i < TK; i++) {
                    const double p = y[j][r * TK + i];
                    if (p > best)
                        best = p;
                    t += p * (1.0 - p);
                }
                top[j] += best;
                jac[j] += t;
            }
        snprintf(c[0], sizeof c[0], "%zu", d);
        llm_fmt(c[1], sizeof c[1], rms, 3);
        llm_fmt(c[2], sizeof c[2], top[0] / TQ, 3);
        llm_fmt(c[3], sizeof c[3], top[1] / TQ, 3);
        llm_fmt(c[4], sizeof c[4], jac[0] / TQ, 3);
        llm_fmt(c[5], sizeof c[5], jac[1] / TQ, 3);
        printf("  d=%s rms(q.k)=%s largest weight %s -> %s slope %s -> %s\n", c[0], c[1], c[2],
               c[3], c[4], c[5]);
        llm_trace_row(tr, "scale", 6, cells);
        if (d == 512) {
            llm_trace_value(tr, "rms512", c[1]);
            llm_trace_value(tr, "top512", c[2]);
            llm_trace_value(tr, "top512s", c[3]);
            llm_trace_value(tr, "jac512", c[4]);
            llm_trace_value(tr, "jac512s", c[5]);
        }
    }
    llm_tape_free(&tape);
    llm_tensor_free(&tq);
    llm_tensor_free(&tk);
    llm_tensor_free(&tv);
    return st;
}
static const double probe_q[6] = {0.5, -1, 1, 0.25, -0.75, 0.5};
static const double probe_k[8] = {1, 0.5, -0.5, 1, 0.25, -1, 0.8, 0.3};
static const double probe_v[12] = {1, -2, 0.5, 0, 1, 1.5, -1, 0.25, 2, 0.75, -0.5, 1};
static const double probe_c[9] = {1, -0.5, 0.25, 0.5, 2, -1, 0.75, -0.25, 1.5};

typedef struct probe {
    llm_tensor *t[3];       /* q [3, 2], k [4, 2], v [4, 3], perturbed by the check */
} probe;

/* L = sum C (.) attention(q, k, v) on a fresh tape; with g (three
   gradients), backward too. */
static llm_status probe_run(const probe *p, double *loss, llm_tensor *g, llm_error *err)
{
    static const size_t s33[2] = {3, 3};
    llm_tape tape;
    llm_tensor ct;
    llm_var in[3], c, o, m, l;
    size_t i;
    llm_status st = llm_tensor_from(&ct, 2, s33, probe_c, 9, err);
    if (st != LLM_OK)
        return st;
    st = llm_tape_init(&tape, 16, err);
    for (i = 0; i < 3 && st == LLM_OK; i++)
        st = llm_tape_leaf(&tape, p->t[i], g != NULL ? &g[i] : NULL, &in[i], err);
    if (st == LLM_OK)
        st = llm_tape_attention(&tape, in[0], in[1], in[2], NULL, &o, err);
    if (st == LLM_OK)
        st = llm_tape_constant(&tape, &ct, &c, err);
    if (st == LLM_OK)
        st = llm_tape_mul(&tape, o, c, &m, err);
    if (st == LLM_OK)
        st = llm_tape_sum_all(&tape, m, &l, err);
    if (st == LLM_OK)
        *loss = values(&tape, l)[0];
    if (st == LLM_OK && g != NULL)
        st = llm_tape_backward(&tape, l, NULL, 0, err);
    llm_tape_free(&tape);
    llm_tensor_free(&ct);
    return st;
}

static llm_status probe_loss(void *ctx, const llm_tensor *theta, double *value,
                             llm_error *err)
{
    (void)theta;
    return probe_run(ctx, value, NULL, err);
}

int main(int argc, char **argv)
{
    llm_trace tr;
    llm_error err;
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch27-self-attention", &tr);
    if (status != 0)
        return status;
    printf("chapter=27 self-attention\n");
    {
        static const double fix_x[6] = {1, 2, -1, 0, 1, 2};
        static const double fix_wq[6] = {1, 0, 0, 1, 1, -1};
        static const double fix_wk[6] = {0, 1, 1, 0, -1, 1};
        static const double fix_wv[6] = {1, 1, 1, -1, 0, 2};
        static const size_t s23[2] = {2, 3};
        llm_params ps;
        llm_qkv qkv;
        llm_rng rng;
        llm_tape tape;
        llm_tensor x;
        llm_var xv, q, k, v, w, o, raw, plain;
        size_t first = 0, id, i;
        const double *wv = NULL, *ov = NULL;
        double dev = 0.0;
        char buf[256], a[64], b[64];

        llm_rng_seed(&rng, 27);
        ok = llm_demo_ok("ch27", llm_params_init(&ps, &err), &err)
             && llm_demo_ok("ch27", llm_qkv_init(&qkv, &ps, "attn", 3, 2, &rng, &err), &err)
             && llm_demo_ok("ch27", llm_tensor_from(&x, 2, s23, fix_x, 6, &err), &err)
             && llm_demo_ok("ch27", llm_tape_init(&tape, 32, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        memcpy(ps.items[qkv.query.weight].value.data, fix_wq, sizeof fix_wq);
        memcpy(ps.items[qkv.key.weight].value.data, fix_wk, sizeof fix_wk);
        memcpy(ps.items[qkv.value.weight].value.data, fix_wv, sizeof fix_wv);
        ok = llm_demo_ok("ch27", llm_tape_constant(&tape, &x, &xv, &err), &err)
             && llm_demo_ok("ch27", llm_qkv_forward(&qkv, &ps, &tape, xv, &q, &k, &v, &err),
                            &err);
        if (ok) {
            first = tape.count;
            ok = llm_demo_ok("ch27", llm_tape_attention(&tape, q, k, v, &w, &o, &err), &err);
        }
        if (ok) {
            printf("X=%s through chapter 26's projections:\n", matrix(buf, sizeof buf, fix_x, 2, 3, 1));
            llm_trace_value(&tr, "x", buf);
            printf("  Q=%s", matrix(buf, sizeof buf, values(&tape, q), 2, 2, 1));
            llm_trace_value(&tr, "q", buf);
            printf(" K=%s", matrix(buf, sizeof buf, values(&tape, k), 2, 2, 1));
            llm_trace_value(&tr, "k", buf);
            printf(" V=%s\n", matrix(buf, sizeof buf, values(&tape, v), 2, 2, 1));
            llm_trace_value(&tr, "v", buf);
        }
        if (ok) {
            char c[4][128];
            const char *cells[4] = {c[0], c[1], c[2], c[3]};
            printf("attention recorded %zu nodes:\n", tape.count - first);
            snprintf(buf, sizeof buf, "%zu", tape.count - first);
            llm_trace_value(&tr, "nodes", buf);
            for (id = first; id < tape.count; id++) {
                static const char *const keys[5] = {"scale", "scores", "scaled", "weights", "output"};
                llm_node_info n;
                const llm_tensor *t;
                if (!llm_demo_ok("ch27", llm_tape_node(&tape, id, &n, &err), &err))
                    break;
                t = n.value;
                snprintf(c[0], sizeof c[0], "%zu", id);
                snprintf(c[1], sizeof c[1], "%s", llm_op_name(n.op));
                llm_fmt_sizes(c[2], sizeof c[2], t->shape, t->rank);
                if (t->rank == 0)
                    llm_fmt(c[3], sizeof c[3], t->data[t->offset], 6);
                else
                    matrix(c[3], sizeof c[3], t->data + t->offset, t->shape[0], t->shape[1],
                           id == first + 1);
                printf("  node %s %s %s %s\n", c[0], c[1], c[2], c[3]);
                llm_trace_row(&tr, "nodes", 4, cells);
                if (id - first < 5)
                    llm_trace_value(&tr, keys[id - first], c[3]);
            }
            ok = tape.count - first == 5 && o.id == tape.count - 1 && w.id == tape.count - 2;
        }
        if (ok) {
            char c[6][48];
            const char *cells[6] = {c[0], c[1], c[2], c[3], c[4], c[5]};
            wv = values(&tape, w);
            ov = values(&tape, o);
            for (i = 0; i < 2; i++) {
                double sum = wv[2 * i] + wv[2 * i + 1];
                if (fabs(sum - 1.0) > dev)
                    dev = fabs(sum - 1.0);
                snprintf(c[0], sizeof c[0], "%zu", i);
                llm_fmt(c[1], sizeof c[1], wv[2 * i], 6);
                llm_fmt(c[2], sizeof c[2], wv[2 * i + 1], 6);
                llm_fmt(c[3], sizeof c[3], sum, 6);
                llm_fmt(c[4], sizeof c[4], ov[2 * i], 6);
                llm_fmt(c[5], sizeof c[5], ov[2 * i + 1], 6);
                llm_trace_row(&tr, "mix", 6, cells);
                llm_fmt_trim(c[1], sizeof c[1], values(&tape, v)[2 * i], 6);
                llm_fmt_trim(c[2], sizeof c[2], values(&tape, v)[2 * i + 1], 6);
                llm_trace_row(&tr, "vrows", 3, cells);
            }
            snprintf(buf, sizeof buf, "%.1e", dev);
            printf("row sums: largest |sum - 1|=%s\n", buf);
            llm_trace_value(&tr, "row_dev", buf);
            printf("weights not symmetric: w[0][1]=%s w[1][0]=%s\n",
                   llm_fmt(a, sizeof a, wv[1], 6), llm_fmt(b, sizeof b, wv[2], 6));
            llm_trace_value(&tr, "w01", a);
            llm_trace_value(&tr, "w10", b);
            ok = dev < 1e-12
                 && strcmp(matrix(buf, sizeof buf, wv, 2, 2, 0),
                           "[[0.014166, 0.985834], [0.999151, 0.000849]]") == 0
                 && strcmp(matrix(buf, sizeof buf, ov, 2, 2, 0),
                           "[[1.028332, 2.915004], [2.998303, -2.994908]]") == 0;
            printf("weights and output as the reference=%s\n", ok ? "yes" : "no");
            llm_trace_value(&tr, "reference", ok ? "yes" : "no");
        }
        if (ok) {
            ok = llm_demo_ok("ch27", llm_tape_matmul(&tape, q, k, 0, 1, &raw, &err), &err)
                 && llm_demo_ok("ch27", llm_tape_softmax(&tape, raw, &plain, &err), &err);
            if (ok) {
                printf("without the scale: weights=%s\n",
                       matrix(buf, sizeof buf, values(&tape, plain), 2, 2, 0));
                llm_trace_value(&tr, "unscaled", buf);
                llm_trace_value(&tr, "unscaled_small", llm_fmt(a, sizeof a, values(&tape, plain)[0], 6));
            }
        }
        llm_tape_free(&tape);
        llm_tensor_free(&x);
        llm_params_free(&ps);
        if (!ok)
            return llm_demo_finish(&tr, 0);
    }
    {
        static const double one_q[2] = {1, 0}, two_k[4] = {1, 0, 0, 1};
        static const size_t s12[2] = {1, 2}, s22[2] = {2, 2};
        llm_tape tape;
        llm_tensor tq, tk;
        llm_var q, k, w, o, raw, plain;
        char a[48], b[48];
        ok = llm_demo_ok("ch27", llm_tensor_from(&tq, 2, s12, one_q, 2, &err), &err)
             && llm_demo_ok("ch27", llm_tensor_from(&tk, 2, s22, two_k, 4, &err), &err)
             && llm_demo_ok("ch27", llm_tape_init(&tape, 8, &err), &err)
             && llm_demo_ok("ch27", llm_tape_constant(&tape, &tq, &q, &err), &err)
             && llm_demo_ok("ch27", llm_tape_constant(&tape, &tk, &k, &err), &err)
             && llm_demo_ok("ch27", llm_tape_attention(&tape, q, k, k, &w, &o, &err), &err)
             && llm_demo_ok("ch27", llm_tape_matmul(&tape, q, k, 0, 1, &raw, &err), &err)
             && llm_demo_ok("ch27", llm_tape_softmax(&tape, raw, &plain, &err), &err);
        if (ok) {
            llm_fmt(a, sizeof a, values(&tape, plain)[0], 6);
            llm_fmt(b, sizeof b, values(&tape, w)[0], 6);
            printf("scores [1, 0] at d=2: favoured weight without the scale=%s with=%s\n", a, b);
            llm_trace_value(&tr, "pair_plain", a);
            llm_trace_value(&tr, "pair_scaled", b);
            ok = strcmp(a, "0.731059") == 0 && strcmp(b, "0.669762") == 0;
        }
        llm_tape_free(&tape);
        llm_tensor_free(&tq);
        llm_tensor_free(&tk);
        if (ok) {
            static const size_t widths[5] = {2, 8, 32, 128, 512};
            size_t i;
            printf("64 queries, 8 keys, entries of variance 1 (seed 27):\n");
            for (i = 0; i < 5 && ok; i++)
                ok = llm_demo_ok("ch27", scale_row(&tr, widths[i], &err), &err);
        }
        if (!ok)
            return llm_demo_finish(&tr, 0);
    }
    {
        static const double q1[2] = {0.5, -1}, k1[2] = {2, 1}, v1[3] = {7, -2, 0.25};
        static const size_t s12[2] = {1, 2}, s13[2] = {1, 3};
        llm_tape tape;
        llm_tensor tq, tk, tv;
        llm_var q, k, v, w, o;
        int same = 0;
        char buf[64];
        ok = llm_demo_ok("ch27", llm_tensor_from(&tq, 2, s12, q1, 2, &err), &err)
             && llm_demo_ok("ch27", llm_tensor_from(&tk, 2, s12, k1, 2, &err), &err)
             && llm_demo_ok("ch27", llm_tensor_from(&tv, 2, s13, v1, 3, &err), &err)
             && llm_demo_ok("ch27", llm_tape_init(&tape, 8, &err), &err)
             && llm_demo_ok("ch27", llm_tape_constant(&tape, &tq, &q, &err), &err)
             && llm_demo_ok("ch27", llm_tape_constant(&tape, &tk, &k, &err), &err)
             && llm_demo_ok("ch27", llm_tape_constant(&tape, &tv, &v, &err), &err)
             && llm_demo_ok("ch27", llm_tape_attention(&tape, q, k, v, &w, &o, &err), &err);
        if (ok) {
            same = values(&tape, w)[0] == 1.0 && memcmp(values(&tape, o), v1, sizeof v1) == 0;
            printf("one token: weight=%s output=%s bit-identical to v=%s\n",
                   llm_fmt_trim(buf, sizeof buf, values(&tape, w)[0], 6),
                   matrix(buf + 16, sizeof buf - 16, values(&tape, o), 1, 3, 1), same ? "yes" : "no");
            llm_trace_value(&tr, "single", same ? "yes" : "no");
            llm_trace_value(&tr, "single_out", buf + 16);
        }
        ok = ok && same;
        llm_tape_free(&tape);
        llm_tensor_free(&tq);
        llm_tensor_free(&tk);
        llm_tensor_free(&tv);
        if (!ok)
            return llm_demo_finish(&tr, 0);
    }
    {
        static const size_t sh[3][2] = {{3, 2}, {4, 2}, {4, 3}};
        static const double *const data[3] = {probe_q, probe_k, probe_v};
        static const char *const names[3] = {"q", "k", "v"};
        size_t coords[12], i, t, failures = 0, failed = 0, count = 0;
        llm_tensor in[3], g[3];
        probe pr;
        double loss = 0.0, worst = 0.0, worst_all = 0.0;
        char c[4][160], buf[64];
        const char *cells[4] = {c[0], c[1], c[2], c[3]};

        memset(in, 0, sizeof in);
        memset(g, 0, sizeof g);
        for (i = 0; i < 12; i++)
            coords[i] = i;
        for (t = 0; t < 3 && ok; t++)
            ok = llm_demo_ok("ch27", llm_tensor_from(&in[t], 2, sh[t], data[t],
                                                     sh[t][0] * sh[t][1], &err), &err)
                 && llm_demo_ok("ch27", llm_tensor_zeros(&g[t], 2, sh[t], &err), &err);
        for (t = 0; t < 3; t++)
            pr.t[t] = &in[t];
        ok = ok && llm_demo_ok("ch27", probe_run(&pr, &loss, g, &err), &err);
        if (ok)
            printf("gradient check: L = sum C * attention(q [3, 2], k [4, 2], v [4, 3]) = %s\n",
                   llm_fmt(buf, sizeof buf, loss, 6));
        for (t = 0; t < 3 && ok; t++) {
            const size_t n = in[t].size;
            ok = llm_demo_ok("ch27", llm_gradient_check(probe_loss, &pr, &in[t], g[t].data, coords,
                                                        n, 1e-6, 1e-6, &worst, &failures, &err),
                             &err);
            snprintf(c[0], sizeof c[0], "$%s$", names[t]);
            matrix(c[1], sizeof c[1], g[t].data, sh[t][0], sh[t][1], 0);
            snprintf(c[2], sizeof c[2], "%zu", n);
            snprintf(c[3], sizeof c[3], "%.1e", worst);
            llm_trace_row(&tr, "grads", 4, cells);
            printf("  d%s=%s coordinates=%zu worst=%s\n", names[t], c[1], n, c[3]);
            failed += failures;
            count += n;
            if (worst > worst_all)
                worst_all = worst;
        }
        ok = ok && failed == 0;
        snprintf(buf, sizeof buf, "%zu", count);
        llm_trace_value(&tr, "grad_coords", buf);
        snprintf(buf, sizeof buf, "%.1e", worst_all);
        llm_trace_value(&tr, "grad_worst", buf);
        llm_trace_value(&tr, "grad_verdict", ok ? "pass" : "fail");
        printf("  coordinates=%zu worst=%s verdict=%s\n", count, buf, ok ? "pass" : "fail");
        for (t = 0; t < 3; t++) {
            llm_tensor_free(&in[t]);
            llm_tensor_free(&g[t]);
        }
        if (!ok)
            return llm_demo_finish(&tr, 0);
    }
    {
        static const double zero[8] = {0};
        static const size_t s2[1] = {2}, s22[2] = {2, 2}, s122[3] = {1, 2, 2},
                            s222[3] = {2, 2, 2}, s23[2] = {2, 3}, s32[2] = {3, 2},
                            s20[2] = {2, 0}, s02[2] = {0, 2};
        const size_t *const shapes[9] = {s22, s2, s122, s222, s23, s32, s20, s02, NULL};
        static const size_t ranks[9] = {2, 1, 3, 3, 2, 2, 2, 2, 0};
        static const size_t sizes[9] = {4, 2, 4, 8, 6, 6, 0, 0, 1};
        llm_tape tape;
        llm_tensor t[9];
        llm_var x[9], stale, w, o, w_kept, o_kept;
        size_t i, count = 0;
        llm_status st;
        int untouched;

        memset(t, 0, sizeof t);
        ok = llm_demo_ok("ch27", llm_tape_init(&tape, 16, &err), &err);
        for (i = 0; i < 9 && ok; i++)
            ok = llm_demo_ok("ch27", llm_tensor_from(&t[i], ranks[i], shapes[i], zero, sizes[i],
                                                     &err), &err);
        ok = ok && llm_demo_ok("ch27", llm_tape_constant(&tape, &t[0], &stale, &err), &err)
                && llm_demo_ok("ch27", llm_tape_reset(&tape, &err), &err);
        for (i = 0; i < 9 && ok; i++)
            ok = llm_demo_ok("ch27", llm_tape_constant(&tape, &t[i], &x[i], &err), &err);
        if (ok) {
            count = tape.count;
            memset(&w, 0x5a, sizeof w);
            memset(&o, 0x5a, sizeof o);
            w_kept = w;
            o_kept = o;
            st = llm_tape_attention(&tape, x[1], x[0], x[0], &w, &o, &err);
            llm_demo_refusal(&tr, "q of shape [2]", st, &err);
            ok = ok && st == LLM_ERR_RANK;
            st = llm_tape_attention(&tape, x[2], x[0], x[0], &w, &o, &err);
            llm_demo_refusal(&tr, "q [1, 2, 2], k and v [2, 2]", st, &err);
            ok = ok && st == LLM_ERR_RANK;
            st = llm_tape_attention(&tape, x[2], x[3], x[3], &w, &o, &err);
            llm_demo_refusal(&tr, "q [1, 2, 2], k and v [2, 2, 2]", st, &err);
            ok = ok && st == LLM_ERR_SHAPE;
            st = llm_tape_attention(&tape, x[0], x[4], x[0], &w, &o, &err);
            llm_demo_refusal(&tr, "q of width 2, k of width 3", st, &err);
            llm_trace_value(&tr, "width_message", err.message);
            ok = ok && st == LLM_ERR_SHAPE;
            st = llm_tape_attention(&tape, x[0], x[0], x[5], &w, &o, &err);
            llm_demo_refusal(&tr, "2 keys, 3 values", st, &err);
            llm_trace_value(&tr, "length_message", err.message);
            ok = ok && st == LLM_ERR_SHAPE;
            st = llm_tape_attention(&tape, x[6], x[6], x[0], &w, &o, &err);
            llm_demo_refusal(&tr, "q and k of width 0", st, &err);
            ok = ok && st == LLM_ERR_SHAPE;
            st = llm_tape_attention(&tape, x[0], x[7], x[7], &w, &o, &err);
            llm_demo_refusal(&tr, "no keys: k and v [0, 2]", st, &err);
            llm_trace_value(&tr, "empty_message", err.message);
            ok = ok && st == LLM_ERR_EMPTY;
            st = llm_tape_attention(&tape, stale, x[0], x[0], &w, &o, &err);
            llm_demo_refusal(&tr, "q from before a reset", st, &err);
            ok = ok && st == LLM_ERR_TAPE;
            st = llm_tape_softmax(&tape, x[8], &w, &err);
            llm_demo_refusal(&tr, "softmax of a scalar", st, &err);
            ok = ok && st == LLM_ERR_AXIS;
            untouched = memcmp(&w, &w_kept, sizeof w) == 0 && memcmp(&o, &o_kept, sizeof o) == 0
                        && tape.count == count;
            printf("after the refusals: weights, output and tape untouched=%s\n",
                   untouched ? "yes" : "no");
            llm_trace_value(&tr, "untouched", untouched ? "yes" : "no");
            ok = ok && untouched;
        }
        llm_tape_free(&tape);
        for (i = 0; i < 9; i++)
            llm_tensor_free(&t[i]);
    }
    return llm_demo_finish(&tr, ok);
}
