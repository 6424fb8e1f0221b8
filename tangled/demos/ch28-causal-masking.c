/* ch28-causal-masking -- no position sees its future: the causal softmax,
   prefix rows, a longer key list, gradients, and masking after softmax. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/attention.h"
#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/softmax.h"

static const double fix_q[6] = {0, 3, 2, -1, 1, 1};
static const double fix_k[6] = {3, 0, -1, 2, 2, 1};
static const double fix_v[6] = {3, -3, 1, 3, -2, 4};
/* the last key and value, changed */
static const double new_k[6] = {3, 0, -1, 2, -2, 4};
static const double new_v[6] = {3, -3, 1, 3, 5, -1};

/* rows x cols values as "[[a, b], [c, d]]" */
static char *matrix(char *buf, size_t size, const double *x, size_t rows, size_t cols)
{
    char one[160];
    size_t i, used = 0;
    used += (size_t)snprintf(buf, size, "[");
    for (i = 0; i < rows && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
                                 llm_fmt_list(one, sizeof one, x + i * cols, cols, 6));
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

/* s = Q K^T / sqrt(2) for Q [3, 2] and K [3, 2], summed as attention sums
   it: each dot product from +0.0 in ascending k, then times 1/sqrt(2). */
static void scaled_scores(const double *q, const double *k, double *s)
{
    const double inv = 1.0 / sqrt(2.0);
    size_t i, j;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) {
            double dot = 0.0;
            dot += q[2 * i] * k[2 * j];
            dot += q[2 * i + 1] * k[2 * j + 1];
            s[3 * i + j] = dot * inv;
        }
}
/* The last tq rows of Q against all three keys: w [tq, 3], o [tq, 2]. */
static llm_status run(const double *q, size_t tq, const double *k, const double *v,
                      double *w, double *o, llm_error *err)
{
    const size_t sq[2] = {tq, 2}, s3[2] = {3, 2};
    llm_tape tape;
    llm_tensor tq_, tk_, tv_;
    llm_var qv, kv, vv, wv, ov;
    const llm_tensor *val;
    llm_status st = llm_tape_init(&tape, 16, err);
    if (st != LLM_OK)
        return st;
    memset(&tq_, 0, sizeof tq_);
    memset(&tk_, 0, sizeof tk_);
    memset(&tv_, 0, sizeof tv_);
    if ((st = llm_tensor_from(&tq_, 2, sq, q + 2 * (3 - tq), 2 * tq, err)) == LLM_OK
        && (st = llm_tensor_from(&tk_, 2, s3, k, 6, err)) == LLM_OK
        && (st = llm_tensor_from(&tv_, 2, s3, v, 6, err)) == LLM_OK
        && (st = llm_tape_constant(&tape, &tq_, &qv, err)) == LLM_OK
        && (st = llm_tape_constant(&tape, &tk_, &kv, err)) == LLM_OK
        && (st = llm_tape_constant(&tape, &tv_, &vv, err)) == LLM_OK
        && (st = llm_tape_causal_attention(&tape, qv, kv, vv, &wv, &ov, err)) == LLM_OK
        && (st = llm_tape_value(&tape, wv, &val, err)) == LLM_OK) {
        memcpy(w, val->data + val->offset, 3 * tq * sizeof *w);
        if ((st = llm_tape_value(&tape, ov, &val, err)) == LLM_OK)
            memcpy(o, val->data + val->offset, 2 * tq * sizeof *o);
    }
    llm_tensor_free(&tq_);
    llm_tensor_free(&tk_);
    llm_tensor_free(&tv_);
    llm_tape_free(&tape);
    return st;
}

/* The causal softmax of the [3, 3] scores s, recorded on a fresh tape. */
static llm_status causal_of(const double *s, double *w, llm_error *err)
{
    const size_t shape[2] = {3, 3};
    llm_tape tape;
    llm_tensor t;
    llm_var sv, wv;
    const llm_tensor *val;
    llm_status st = llm_tensor_from(&t, 2, shape, s, 9, err);
    if (st != LLM_OK)
        return st;
    if ((st = llm_tape_init(&tape, 4, err)) == LLM_OK) {
        if ((st = llm_tape_constant(&tape, &t, &sv, err)) == LLM_OK
            && (st = llm_tape_causal_softmax(&tape, sv, &wv, err)) == LLM_OK
            && (st = llm_tape_value(&tape, wv, &val, err)) == LLM_OK)
            memcpy(w, val->data + val->offset, 9 * sizeof *w);
        llm_tape_free(&tape);
    }
    llm_tensor_free(&t);
    return st;
}
static const double seed_all[6] = {1, -0.5, 0.25, 2, -1, 0.75};
static const double seed_prefix[6] = {1, -1, 0.5, 2, 0, 0};

typedef struct probe {
    llm_tensor *q, *k, *v;    /* [3, 2] each, perturbed in place by the check */
    const double *seed;       /* G [3, 2] */
} probe;

/* L = sum G * causal_attention(Q, K, V) on a fresh tape; when dq is not
   NULL, backward too, into dq, dk and dv. */
static llm_status probe_run(const probe *p, double *loss, llm_tensor *dq, llm_tensor *dk,
                            llm_tensor *dv, llm_error *err)
{
    const size_t shape[2] = {3, 2};
    llm_tape tape;
    llm_tensor g;
    llm_var qv, kv, vv, o, gv, go, l;
    const llm_tensor *val;
    llm_status st = llm_tensor_from(&g, 2, shape, p->seed, 6, err);
    if (st != LLM_OK)
        return st;
    if ((st = llm_tape_init(&tape, 16, err)) == LLM_OK) {
        if ((st = llm_tape_leaf(&tape, p->q, dq, &qv, err)) == LLM_OK
            && (st = llm_tape_leaf(&tape, p->k, dk, &kv, err)) == LLM_OK
            && (st = llm_tape_leaf(&tape, p->v, dv, &vv, err)) == LLM_OK
            && (st = llm_tape_causal_attention(&tape, qv, kv, vv, NULL, &o, err)) == LLM_OK
            && (st = llm_tape_constant(&tape, &g, &gv, err)) == LLM_OK
            && (st = llm_tape_mul(&tape, o, gv, &go, err)) == LLM_OK
            && (st = llm_tape_sum_all(&tape, go, &l, err)) == LLM_OK
            && (st = llm_tape_value(&tape, l, &val, err)) == LLM_OK) {
            *loss = val->data[val->offset];
            if (dq != NULL)
                st = llm_tape_backward(&tape, l, NULL, 0, err);
        }
        llm_tape_free(&tape);
    }
    llm_tensor_free(&g);
    return st;
}

static llm_status probe_loss(void *ctx, const llm_tensor *theta, double *value,
                             llm_error *err)
{
    (void)theta;
    return probe_run(ctx, value, NULL, NULL, NULL, err);
}
/* The misconception: p = chapter 12's softmax of the [3, 3] scores s over
   all keys, z = p with the future set to 0, zo = row 0 of z V; sums (when
   not NULL) receives z's row sums. */
static llm_status zero_after(const double *s, const double *v, double *z, double *zo,
                             double *sums, llm_error *err)
{
    const size_t shape[2] = {3, 3};
    llm_tensor t, p;
    size_t i, j;
    llm_status st = llm_tensor_from(&t, 2, shape, s, 9, err);
    if (st != LLM_OK)
        return st;
    st = llm_softmax(&p, &t, 1, err);
    llm_tensor_free(&t);
    if (st != LLM_OK)
        return st;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++)
            z[3 * i + j] = j <= i ? p.data[p.offset + 3 * i + j] : 0.0;
    llm_tensor_free(&p);
    for (i = 0; sums != NULL && i < 3; i++)
        sums[i] = z[3 * i] + z[3 * i + 1] + z[3 * i + 2];
    zo[0] = z[0] * v[0] + z[1] * v[2] + z[2] * v[4];
    zo[1] = z[0] * v[1] + z[1] * v[3] + z[2] * v[5];
    return LLM_OK;
}

int main(int argc, char **argv)
{
    llm_trace tr;
    llm_error err;
    double w[9], o[6];
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch28-causal-masking", &tr);
    if (status != 0)
        return status;
    printf("chapter=28 causal-masking\n");
    if (!llm_demo_ok("ch28", run(fix_q, 3, fix_k, fix_v, w, o, &err), &err))
        return llm_demo_finish(&tr, 0);
    {
        double s[9], w2[9];
        char c[5][64], buf[256];
        const char *cells[5] = {c[0], c[1], c[2], c[3], c[4]};
        size_t i, j, future = 0, plus_zero = 0;
        int sums_ok = 1, same;
        scaled_scores(fix_q, fix_k, s);
        for (i = 0; i < 3; i++) {
            double sum = 0.0;
            snprintf(c[0], sizeof c[0], "$i = %zu$", i);
            for (j = 0; j < 3; j++)
                if (j <= i)
                    llm_fmt(c[1 + j], sizeof c[1 + j], s[3 * i + j], 6);
                else
                    snprintf(c[1 + j], sizeof c[1 + j], "$-\\infty$");
            llm_trace_row(&tr, "masked", 4, cells);
            printf("row %zu scaled=%s", i, llm_fmt_list(buf, sizeof buf, s + 3 * i, 3, 6));
            printf(" weights=%s", llm_fmt_list(buf, sizeof buf, w + 3 * i, 3, 6));
            for (j = 0; j < 3; j++) {
                sum += w[3 * i + j];
                llm_fmt(c[1 + j], sizeof c[1 + j], w[3 * i + j], 6);
                if (j > i) {
                    future++;
                    plus_zero += w[3 * i + j] == 0.0 && !signbit(w[3 * i + j]);
                }
            }
            llm_fmt(c[4], sizeof c[4], sum, 6);
            llm_trace_row(&tr, "weights", 5, cells);
            printf(" sum=%s\n", c[4]);
            sums_ok = sums_ok && fabs(sum - 1.0) < 1e-12;
        }
        printf("weights=%s\n", matrix(buf, sizeof buf, w, 3, 3));
        llm_trace_value(&tr, "weights", buf);
        printf("output=%s\n", matrix(buf, sizeof buf, o, 3, 2));
        llm_trace_value(&tr, "output", buf);
        for (i = 0; i < 3; i++) {
            snprintf(c[0], sizeof c[0], "w%zu", i);
            llm_trace_value(&tr, c[0], llm_fmt_list(buf, sizeof buf, w + 3 * i, 3, 6));
            snprintf(c[0], sizeof c[0], "o%zu", i);
            llm_trace_value(&tr, c[0], llm_fmt_list(buf, sizeof buf, o + 2 * i, 2, 6));
        }
        printf("future entries=%zu exactly +0.0=%zu row sums within 1e-12=%s\n", future,
               plus_zero, sums_ok ? "yes" : "no");
        snprintf(buf, sizeof buf, "%zu", plus_zero);
        llm_trace_value(&tr, "plus_zero", buf);
        llm_trace_value(&tr, "sums_ok", sums_ok ? "yes" : "no");
        ok = ok && llm_demo_ok("ch28", causal_of(s, w2, &err), &err);
        same = ok && memcmp(w, w2, sizeof w2) == 0;
        printf("causal softmax of these scores on the tape = attention's weights: %s\n",
               same ? "bit-identical" : "different");
        ok = ok && same && sums_ok && plus_zero == 3;
    }
    {
        const size_t shape[2] = {3, 3};
        double s[9], sm[9], p[9];
        llm_tensor t, y;
        llm_status st;
        size_t i, j;
        int same;
        scaled_scores(fix_q, fix_k, s);
        for (i = 0; i < 3; i++)
            for (j = 0; j < 3; j++)
                sm[3 * i + j] = s[3 * i + j] + (j <= i ? 0.0 : -INFINITY);
        for (i = 0; i < 3; i++) {
            double m = sm[3 * i], sum = 0.0;
            for (j = 1; j < 3; j++)
                if (sm[3 * i + j] > m)
                    m = sm[3 * i + j];
            for (j = 0; j < 3; j++)
                sum += exp(sm[3 * i + j] - m);
            for (j = 0; j < 3; j++)
                p[3 * i + j] = exp(sm[3 * i + j] - m) / sum;
        }
        same = memcmp(p, w, sizeof p) == 0;
        printf("softmax(S + M) by hand, exp(-inf) = 0: %s to the causal weights\n",
               same ? "bit-identical" : "different");
        llm_trace_value(&tr, "textbook_same", same ? "yes" : "no");
        ok = ok && same && llm_demo_ok("ch28", llm_tensor_from(&t, 2, shape, sm, 9, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        st = llm_softmax(&y, &t, 1, &err);
        llm_demo_refusal(&tr, "chapter 12 softmax of S + M", st, &err);
        llm_trace_value(&tr, "inf_message", err.message);
        ok = ok && st == LLM_ERR_NONFINITE;
        llm_tensor_free(&t);
    }
    {
        double w2[9], o2[6];
        char c[4][64], buf[256];
        const char *cells[4] = {c[0], c[1], c[2], c[3]};
        size_t i;
        int prefix_same, last_changed, same;
        ok = ok && llm_demo_ok("ch28", run(fix_q, 3, new_k, new_v, w2, o2, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        prefix_same = memcmp(o, o2, 4 * sizeof *o) == 0 && memcmp(w, w2, 6 * sizeof *w) == 0;
        last_changed = memcmp(o + 4, o2 + 4, 2 * sizeof *o) != 0;
        printf("last key [2, 1] -> [-2, 4], last value [-2, 4] -> [5, -1]\n");
        printf("  output=%s\n", matrix(buf, sizeof buf, o2, 3, 2));
        printf("  rows 0 and 1 bit-identical=%s row 2 changed=%s\n", prefix_same ? "yes" : "no",
               last_changed ? "yes" : "no");
        for (i = 0; i < 3; i++) {
            snprintf(c[0], sizeof c[0], "$i = %zu$", i);
            llm_fmt_list(c[1], sizeof c[1], o + 2 * i, 2, 6);
            llm_fmt_list(c[2], sizeof c[2], o2 + 2 * i, 2, 6);
            same = memcmp(o + 2 * i, o2 + 2 * i, 2 * sizeof *o) == 0;
            snprintf(c[3], sizeof c[3], "%s", same ? "$=$" : "$\\neq$");
            llm_trace_row(&tr, "change", 4, cells);
            snprintf(c[1], sizeof c[1], "%d", same);
            llm_trace_row(&tr, "samebits", 2, cells);
        }
        llm_trace_value(&tr, "o2_new", llm_fmt_list(buf, sizeof buf, o2 + 4, 2, 6));
        llm_trace_value(&tr, "w2_new", llm_fmt_list(buf, sizeof buf, w2 + 6, 3, 6));
        llm_trace_value(&tr, "prefix_same", prefix_same ? "yes" : "no");
        ok = ok && prefix_same && last_changed;
    }
    {
        double w2[6], o2[4], w1[3], o1[2];
        char buf[256];
        int same2, same1;
        ok = ok && llm_demo_ok("ch28", run(fix_q, 2, fix_k, fix_v, w2, o2, &err), &err)
                && llm_demo_ok("ch28", run(fix_q, 1, fix_k, fix_v, w1, o1, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        same2 = memcmp(w2, w + 3, sizeof w2) == 0 && memcmp(o2, o + 2, sizeof o2) == 0;
        same1 = memcmp(w1, w + 6, sizeof w1) == 0 && memcmp(o1, o + 4, sizeof o1) == 0;
        printf("queries 1..2 against keys 0..2 (Tq=2, Tk=3): weights=%s\n",
               matrix(buf, sizeof buf, w2, 2, 3));
        llm_trace_value(&tr, "tq2_weights", buf);
        printf("  = rows 1..2 of the full result, bit for bit: %s\n", same2 ? "yes" : "no");
        printf("query 2 against keys 0..2 (Tq=1, Tk=3): output=%s\n",
               llm_fmt_list(buf, sizeof buf, o1, 2, 6));
        llm_trace_value(&tr, "tq1_output", buf);
        printf("  = row 2 of the full result, bit for bit: %s\n", same1 ? "yes" : "no");
        llm_trace_value(&tr, "tq2_same", same2 ? "yes" : "no");
        llm_trace_value(&tr, "tq1_same", same1 ? "yes" : "no");
        ok = ok && same2 && same1;
    }
    {
        static const size_t coords[6] = {0, 1, 2, 3, 4, 5};
        const size_t shape[2] = {3, 2};
        llm_tensor q, k, v, d[3];
        llm_tensor *theta[3];
        double loss = 0.0, worst = 0.0, worst_all = 0.0;
        size_t b, failures = 0, failed = 0;
        int zero_row = 1;
        char c[4][64], buf[256];
        const char *cells[4] = {c[0], c[1], c[2], c[3]};
        probe pr;
        memset(d, 0, sizeof d);
        ok = ok && llm_demo_ok("ch28", llm_tensor_from(&q, 2, shape, fix_q, 6, &err), &err)
                && llm_demo_ok("ch28", llm_tensor_from(&k, 2, shape, fix_k, 6, &err), &err)
                && llm_demo_ok("ch28", llm_tensor_from(&v, 2, shape, fix_v, 6, &err), &err);
        for (b = 0; b < 3 && ok; b++)
            ok = llm_demo_ok("ch28", llm_tensor_zeros(&d[b], 2, shape, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        theta[0] = &q;
        theta[1] = &k;
        theta[2] = &v;
        pr.q = &q;
        pr.k = &k;
        pr.v = &v;
        pr.seed = seed_all;
        ok = ok && llm_demo_ok("ch28", probe_run(&pr, &loss, &d[0], &d[1], &d[2], &err), &err);
        printf("G=%s loss=sum(G * O)=%s\n", matrix(buf, sizeof buf, seed_all, 3, 2),
               llm_fmt(c[0], sizeof c[0], loss, 6));
        llm_trace_value(&tr, "loss", c[0]);
        for (b = 0; b < 3; b++) {
            printf("  d%c=%s\n", "QKV"[b], matrix(buf, sizeof buf, d[b].data, 3, 2));
            snprintf(c[0], sizeof c[0], "d%c", "QKV"[b]);
            llm_trace_value(&tr, c[0], buf);
            memset(d[b].data, 0, 6 * sizeof *d[b].data);
        }
        pr.seed = seed_prefix;
        ok = ok && llm_demo_ok("ch28", probe_run(&pr, &loss, &d[0], &d[1], &d[2], &err), &err);
        printf("G=%s (row 2 unseeded)\n", matrix(buf, sizeof buf, seed_prefix, 3, 2));
        for (b = 0; b < 3; b++) {
            int zero = d[b].data[4] == 0.0 && d[b].data[5] == 0.0;
            printf("  d%c row 2=%s exactly zero=%s\n", "QKV"[b],
                   llm_fmt_list(buf, sizeof buf, d[b].data + 4, 2, 6), zero ? "yes" : "no");
            snprintf(c[0], sizeof c[0], "prefix_d%c", "QKV"[b]);
            llm_trace_value(&tr, c[0], matrix(buf, sizeof buf, d[b].data, 3, 2));
            zero_row = zero_row && zero;
            memset(d[b].data, 0, 6 * sizeof *d[b].data);
        }
        llm_trace_value(&tr, "future_zero", zero_row ? "yes" : "no");
        ok = ok && zero_row;
        pr.seed = seed_all;
        ok = ok && llm_demo_ok("ch28", probe_run(&pr, &loss, &d[0], &d[1], &d[2], &err), &err);
        for (b = 0; b < 3 && ok; b++) {
            ok = llm_demo_ok("ch28", llm_gradient_check(probe_loss, &pr, theta[b], d[b].data, coords,
                                                        6, 1e-6, 4e-6, &worst, &failures, &err),
                             &err);
            snprintf(c[0], sizeof c[0], "$%c$", "QKV"[b]);
            snprintf(c[1], sizeof c[1], "%d", 6);
            snprintf(c[2], sizeof c[2], "%.1e", worst);
            snprintf(c[3], sizeof c[3], "%s", failures == 0 ? "pass" : "fail");
            llm_trace_row(&tr, "grads", 4, cells);
            printf("gradcheck %c coordinates=6 worst=%s verdict=%s\n", "QKV"[b], c[2], c[3]);
            failed += failures;
            if (worst > worst_all)
                worst_all = worst;
        }
        snprintf(buf, sizeof buf, "%.1e", worst_all);
        llm_trace_value(&tr, "grad_worst", buf);
        llm_trace_value(&tr, "grad_verdict", ok && failed == 0 ? "pass" : "fail");
        ok = ok && failed == 0;
        llm_tensor_free(&q);
        llm_tensor_free(&k);
        llm_tensor_free(&v);
        for (b = 0; b < 3; b++)
            llm_tensor_free(&d[b]);
    }
    {
        double s[9], s2[9], z[9], z2[9], zo[6], zo2[6], r[9], ro[6], ro2[6], wb[9];
        double sums[3], sums_r[3], sums_a[3], diff = 0.0;
        char c[4][96], buf[256];
        const char *cells[4] = {c[0], c[1], c[2], c[3]};
        size_t i;
        int leak, big_same;
        scaled_scores(fix_q, fix_k, s);
        scaled_scores(fix_q, new_k, s2);
        ok = ok && llm_demo_ok("ch28", zero_after(s, fix_v, z, zo, sums, &err), &err)
                && llm_demo_ok("ch28", zero_after(s2, new_v, z2, zo2, NULL, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        for (i = 0; i < 9; i++) {
            r[i] = z[i] / sums[i / 3];
            if (fabs(r[i] - w[i]) > diff)
                diff = fabs(r[i] - w[i]);
        }
        for (i = 0; i < 3; i++)
            sums_r[i] = r[3 * i] + r[3 * i + 1] + r[3 * i + 2];
        ro[0] = r[0] * fix_v[0] + r[1] * fix_v[2] + r[2] * fix_v[4];
        ro[1] = r[0] * fix_v[1] + r[1] * fix_v[3] + r[2] * fix_v[5];
        for (i = 0; i < 9; i++)
            r[i] = z2[i] / (z2[3 * (i / 3)] + z2[3 * (i / 3) + 1] + z2[3 * (i / 3) + 2]);
        ro2[0] = r[0] * new_v[0] + r[1] * new_v[2] + r[2] * new_v[4];
        ro2[1] = r[0] * new_v[1] + r[1] * new_v[3] + r[2] * new_v[5];
        leak = memcmp(zo, zo2, 2 * sizeof *zo) != 0;
        printf("softmax over all keys, future zeroed: row sums=%s output row 0=%s\n",
               llm_fmt_list(buf, sizeof buf, sums, 3, 6), llm_fmt_list(c[0], sizeof c[0], zo, 2, 6));
        printf("  last key and value changed: output row 0=%s changed=%s\n",
               llm_fmt_list(buf, sizeof buf, zo2, 2, 6), leak ? "yes" : "no");
        printf("  renormalised: row sums=%s largest difference from the causal weights=%.1e\n",
               llm_fmt_list(buf, sizeof buf, sums_r, 3, 6), diff);
        snprintf(c[0], sizeof c[0], "$A$");
        for (i = 0; i < 3; i++)
            sums_a[i] = w[3 * i] + w[3 * i + 1] + w[3 * i + 2];
        llm_fmt_list(c[1], sizeof c[1], sums_a, 3, 6);
        llm_fmt_list(c[2], sizeof c[2], o, 2, 6);
        llm_fmt_list(c[3], sizeof c[3], o, 2, 6);
        llm_trace_row(&tr, "after", 4, cells);
        snprintf(c[0], sizeof c[0], "$Z$");
        llm_fmt_list(c[1], sizeof c[1], sums, 3, 6);
        llm_fmt_list(c[2], sizeof c[2], zo, 2, 6);
        llm_fmt_list(c[3], sizeof c[3], zo2, 2, 6);
        llm_trace_row(&tr, "after", 4, cells);
        snprintf(c[0], sizeof c[0], "$R$");
        llm_fmt_list(c[1], sizeof c[1], sums_r, 3, 6);
        llm_fmt_list(c[2], sizeof c[2], ro, 2, 6);
        llm_fmt_list(c[3], sizeof c[3], ro2, 2, 6);
        llm_trace_row(&tr, "after", 4, cells);
        snprintf(buf, sizeof buf, "%.1e", diff);
        llm_trace_value(&tr, "renorm_diff", buf);
        llm_trace_value(&tr, "zero_sums", llm_fmt_list(buf, sizeof buf, sums, 3, 6));
        llm_trace_value(&tr, "zero_o0", llm_fmt_list(buf, sizeof buf, zo, 2, 6));
        llm_trace_value(&tr, "zero_o0_new", llm_fmt_list(buf, sizeof buf, zo2, 2, 6));
        llm_trace_value(&tr, "leak", leak ? "yes" : "no");
        memcpy(s2, s, sizeof s);
        s2[2] = 1000.0;                  /* row 0, key 2: masked */
        ok = ok && llm_demo_ok("ch28", causal_of(s2, wb, &err), &err)
                && llm_demo_ok("ch28", zero_after(s2, fix_v, z2, zo2, sums, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        big_same = memcmp(wb, w, sizeof wb) == 0;
        for (i = 0; i < 3; i++)
            r[i] = z2[i] / sums[0];
        printf("a future score of 1000 in row 0: causal weights %s; zeroed row 0 sums to %s, "
               "renormalised=%s\n", big_same ? "bit-identical" : "different",
               llm_fmt(c[0], sizeof c[0], sums[0], 6), llm_fmt_list(buf, sizeof buf, r, 3, 6));
        llm_trace_value(&tr, "big_same", big_same ? "yes" : "no");
        llm_trace_value(&tr, "big_sum", c[0]);
        llm_trace_value(&tr, "big_renorm", buf);
        ok = ok && leak && big_same;
    }
    {
        static const size_t s33[2] = {3, 3}, s32[2] = {3, 2}, s22[2] = {2, 2}, s3[1] = {3};
        double s[9], wm[9];
        llm_tensor t, t32, t22, t3;
        llm_tape tape;
        llm_var sv, s32v, k2, v2, s3v, y, y_kept, wv, stale;
        const llm_tensor *val;
        size_t count;
        llm_status st;
        int untouched, masked_same = 0;
        scaled_scores(fix_q, fix_k, s);
        memset(&y, 0x2d, sizeof y);
        y_kept = y;
        ok = ok && llm_demo_ok("ch28", llm_tensor_from(&t, 2, s33, s, 9, &err), &err)
                && llm_demo_ok("ch28", llm_tensor_from(&t32, 2, s32, fix_q, 6, &err), &err)
                && llm_demo_ok("ch28", llm_tensor_from(&t22, 2, s22, fix_k, 4, &err), &err)
                && llm_demo_ok("ch28", llm_tensor_from(&t3, 1, s3, fix_q, 3, &err), &err)
                && llm_demo_ok("ch28", llm_tape_init(&tape, 16, &err), &err)
                && llm_demo_ok("ch28", llm_tape_leaf(&tape, &t, NULL, &sv, &err), &err)
                && llm_demo_ok("ch28", llm_tape_leaf(&tape, &t32, NULL, &s32v, &err), &err)
                && llm_demo_ok("ch28", llm_tape_leaf(&tape, &t22, NULL, &k2, &err), &err)
                && llm_demo_ok("ch28", llm_tape_leaf(&tape, &t22, NULL, &v2, &err), &err)
                && llm_demo_ok("ch28", llm_tape_leaf(&tape, &t3, NULL, &s3v, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        count = tape.count;
        st = llm_tape_causal_softmax(&tape, s32v, &y, &err);
        llm_demo_refusal(&tr, "scores [3, 2]: 3 queries, 2 keys", st, &err);
        llm_trace_value(&tr, "short_message", err.message);
        ok = ok && st == LLM_ERR_SHAPE;
        st = llm_tape_causal_attention(&tape, s32v, k2, v2, NULL, &y, &err);
        llm_demo_refusal(&tr, "attention: 3 queries, 2 keys", st, &err);
        ok = ok && st == LLM_ERR_SHAPE;
        st = llm_tape_causal_softmax(&tape, s3v, &y, &err);
        llm_demo_refusal(&tr, "scores of shape [3]", st, &err);
        ok = ok && st == LLM_ERR_RANK;
        t.data[4] = INFINITY;            /* row 1, key 1: visible */
        st = llm_tape_causal_softmax(&tape, sv, &y, &err);
        t.data[4] = s[4];
        llm_demo_refusal(&tr, "a visible score +inf (row 1, key 1)", st, &err);
        llm_trace_value(&tr, "inf_visible_message", err.message);
        ok = ok && st == LLM_ERR_NONFINITE;
        st = llm_tape_causal_softmax(&tape, sv, NULL, &err);
        llm_demo_refusal(&tr, "no output handle", st, &err);
        ok = ok && st == LLM_ERR_ARGUMENT;
        untouched = memcmp(&y, &y_kept, sizeof y) == 0 && tape.count == count;
        printf("output handle and tape untouched=%s\n", untouched ? "yes" : "no");
        llm_trace_value(&tr, "untouched", untouched ? "yes" : "no");
        t.data[2] = INFINITY;            /* row 0, key 2: masked */
        t.data[5] = NAN;                 /* row 1, key 2: masked */
        st = llm_tape_causal_softmax(&tape, sv, &wv, &err);
        llm_demo_refusal(&tr, "masked scores +inf and NaN", st, &err);
        if (st == LLM_OK && llm_demo_ok("ch28", llm_tape_value(&tape, wv, &val, &err), &err)) {
            memcpy(wm, val->data + val->offset, sizeof wm);
            masked_same = memcmp(wm, w, sizeof wm) == 0;
        }
        t.data[2] = s[2];
        t.data[5] = s[5];
        printf("  its weights are the causal weights, bit for bit: %s\n", masked_same ? "yes" : "no");
        llm_trace_value(&tr, "masked_same", masked_same ? "yes" : "no");
        stale = sv;
        ok = ok && llm_demo_ok("ch28", llm_tape_reset(&tape, &err), &err);
        st = llm_tape_causal_softmax(&tape, stale, &y, &err);
        llm_demo_refusal(&tr, "a handle from before a reset", st, &err);
        ok = ok && st == LLM_ERR_TAPE;
        ok = ok && untouched && masked_same;
        llm_tape_free(&tape);
        llm_tensor_free(&t);
        llm_tensor_free(&t32);
        llm_tensor_free(&t22);
        llm_tensor_free(&t3);
    }
    return llm_demo_finish(&tr, ok);
}
