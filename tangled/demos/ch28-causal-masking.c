/* ch28-causal-masking -- no position sees its future: the causal softmax,
   prefix rows, a longer key list, gradients, and masking after softmax. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/attention.h"
#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/probe.h"
#include "llm/softmax.h"

static const double fix_q[6] = {0, 3, 2, -1, 1, 1};
static const double fix_k[6] = {3, 0, -1, 2, 2, 1};
static const double fix_v[6] = {3, -3, 1, 3, -2, 4};
/* the last key and value, changed */
static const double new_k[6] = {3, 0, -1, 2, -2, 4};
static const double new_v[6] = {3, -3, 1, 3, 5, -1};
static const size_t s33[2] = {3, 3}, s32[2] = {3, 2};     /* scores; Q, K, V */

/* S = Q K^T / sqrt(2), the causal weights, their row sums and the output:
   the first section computes them, the later ones compare with them. */
static struct {
    double s[9], w[9], sums[3], o[6];
} fx;

/* s = Q K^T / sqrt(2) for Q [3, 2] and K [3, 2], summed as attention sums
   it: each dot product from +0.0 in ascending k, then times 1/sqrt(2). */
static void scaled_scores(const double *q, const double *k, double *s)
{
    const double inv = 1.0 / sqrt(2.0);
    size_t i;
    for (i = 0; i < 9; i++) {
        const double *qi = q + 2 * (i / 3), *kj = k + 2 * (i % 3);
        s[i] = (0.0 + qi[0] * kj[0] + qi[1] * kj[1]) * inv;
    }
}

/* The last tq rows of Q against all three keys k and values v on a fresh
   tape: w [tq, 3], o [tq, 2]. Returns d->ok. */
static int run(llm_demo *d, size_t tq, const double *k, const double *v, double *w,
               double *o)
{
    const size_t sq[2] = {tq, 2};
    llm_tape *tape = llm_own_fresh_tape(d, 16);
    llm_var qv, kv, vv, wv, ov;
    return llm_own_constant(d, tape, 2, sq, fix_q + 2 * (3 - tq), &qv)
           && llm_own_constant(d, tape, 2, s32, k, &kv)
           && llm_own_constant(d, tape, 2, s32, v, &vv)
           && LLM_TRY(d, llm_tape_causal_attention(tape, qv, kv, vv, &wv, &ov, &d->err))
           && LLM_TRY(d, llm_probe_read(tape, wv, w, 3 * tq, NULL, NULL, &d->err))
           && LLM_TRY(d, llm_probe_read(tape, ov, o, 2 * tq, NULL, NULL, &d->err));
}

/* The causal softmax of the [3, 3] scores s, recorded on a fresh tape. */
static int causal_of(llm_demo *d, const double *s, double *w)
{
    llm_tape *tape = llm_own_fresh_tape(d, 16);
    llm_var sv, wv;
    return llm_own_constant(d, tape, 2, s33, s, &sv)
           && LLM_TRY(d, llm_tape_causal_softmax(tape, sv, &wv, &d->err))
           && LLM_TRY(d, llm_probe_read(tape, wv, w, 9, NULL, NULL, &d->err));
}
static void causal_weights(llm_demo *d)
{
    const char *hidden = "$-\\infty$";
    llm_tensor *t = llm_own_tensor(d), *y = llm_own_tensor(d);
    double w2[9], sm[9], p[9];
    size_t i, j, future = 0, plus_zero = 0;
    int sums_ok = 1, same, by_hand;
    scaled_scores(fix_q, fix_k, fx.s);
    if (!run(d, 3, fix_k, fix_v, fx.w, fx.o))
        return;
    for (i = 0; i < 3; i++) {
        const double *s = fx.s + 3 * i, *w = fx.w + 3 * i;
        const char *row = llm_text("$i = %zu$", i);
        fx.sums[i] = w[0] + w[1] + w[2];
        llm_row(d, "masked", row, llm_num(s[0], 6), i >= 1 ? llm_num(s[1], 6) : hidden,
                i >= 2 ? llm_num(s[2], 6) : hidden, NULL);
        llm_row(d, "weights", row, llm_num(w[0], 6), llm_num(w[1], 6), llm_num(w[2], 6),
                llm_num(fx.sums[i], 6), NULL);
        printf("row %zu scaled=%s weights=%s sum=%s\n", i, llm_nums(s, 3, 6),
               llm_nums(w, 3, 6), llm_num(fx.sums[i], 6));
        future += 2 - i;
        for (j = i + 1; j < 3; j++)
            plus_zero += w[j] == 0.0 && !signbit(w[j]);
        sums_ok = sums_ok && fabs(fx.sums[i] - 1.0) < 1e-12;
    }
    printf("weights=%s\n", llm_put(d, "weights", llm_rows(fx.w, 3, 3, 6)));
    printf("output=%s\n", llm_put(d, "output", llm_rows(fx.o, 3, 2, 6)));
    for (i = 0; i < 3; i++) {
        llm_put(d, llm_text("w%zu", i), llm_nums(fx.w + 3 * i, 3, 6));
        llm_put(d, llm_text("o%zu", i), llm_nums(fx.o + 2 * i, 2, 6));
    }
    printf("future entries=%zu exactly +0.0=%s", future,
           llm_put(d, "plus_zero", llm_text("%zu", plus_zero)));
    printf(" row sums within 1e-12=%s\n", llm_put(d, "sums_ok", llm_yes(sums_ok)));
    if (!causal_of(d, fx.s, w2))
        return;
    same = memcmp(fx.w, w2, sizeof w2) == 0;
    printf("causal softmax of these scores on the tape = attention's weights: %s\n",
           same ? "bit-identical" : "different");
    llm_demo_check(d, same, "the causal softmax of S is attention's weights");
    llm_demo_check(d, sums_ok, "every row of weights sums to 1 within 1e-12");
    llm_demo_check(d, plus_zero == 3, "the three future weights are exactly +0.0");
    for (i = 0; i < 9; i++)
        sm[i] = fx.s[i] + (i % 3 <= i / 3 ? 0.0 : -INFINITY);
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
    by_hand = memcmp(p, fx.w, sizeof p) == 0;
    printf("softmax(S + M) by hand, exp(-inf) = 0: %s to the causal weights\n",
           by_hand ? "bit-identical" : "different");
    llm_put(d, "textbook_same", llm_yes(by_hand));
    llm_demo_check(d, by_hand, "the textbook softmax(S + M) is the causal weights");
    if (!LLM_TRY(d, llm_tensor_from(t, 2, s33, sm, 9, &d->err)))
        return;
    llm_refuse_as(d, "chapter 12 softmax of S + M", llm_softmax(y, t, 1, &d->err),
                  LLM_ERR_NONFINITE);
    llm_put(d, "inf_message", d->err.message);
}
static void prefix_rows(llm_demo *d)
{
    double w2[9], o2[6], wt2[6], ot2[4], wt1[3], ot1[2];  /* new key; Tq = 2, 1 */
    size_t i;
    int prefix_same, last_changed, same2, same1;
    if (!(run(d, 3, new_k, new_v, w2, o2) && run(d, 2, fix_k, fix_v, wt2, ot2)
          && run(d, 1, fix_k, fix_v, wt1, ot1)))
        return;
    prefix_same = memcmp(fx.o, o2, 4 * sizeof *o2) == 0
                  && memcmp(fx.w, w2, 6 * sizeof *w2) == 0;
    last_changed = memcmp(fx.o + 4, o2 + 4, 2 * sizeof *o2) != 0;
    printf("last key [2, 1] -> [-2, 4], last value [-2, 4] -> [5, -1]\n");
    printf("  output=%s\n", llm_rows(o2, 3, 2, 6));
    printf("  rows 0 and 1 bit-identical=%s row 2 changed=%s\n", llm_yes(prefix_same),
           llm_yes(last_changed));
    for (i = 0; i < 3; i++) {
        const char *row = llm_text("$i = %zu$", i);
        const int same = memcmp(fx.o + 2 * i, o2 + 2 * i, 2 * sizeof *o2) == 0;
        llm_row(d, "change", row, llm_nums(fx.o + 2 * i, 2, 6),
                llm_nums(o2 + 2 * i, 2, 6), same ? "$=$" : "$\\neq$", NULL);
        llm_row(d, "samebits", row, llm_text("%d", same), NULL);
    }
    llm_put(d, "o2_new", llm_nums(o2 + 4, 2, 6));
    llm_put(d, "w2_new", llm_nums(w2 + 6, 3, 6));
    llm_put(d, "prefix_same", llm_yes(prefix_same));
    llm_demo_check(d, prefix_same, "rows 0 and 1 keep every bit");
    llm_demo_check(d, last_changed, "row 2 of the output changes");
    same2 = !memcmp(wt2, fx.w + 3, sizeof wt2) && !memcmp(ot2, fx.o + 2, sizeof ot2);
    same1 = !memcmp(wt1, fx.w + 6, sizeof wt1) && !memcmp(ot1, fx.o + 4, sizeof ot1);
    printf("queries 1..2 against keys 0..2 (Tq=2, Tk=3): weights=%s\n",
           llm_put(d, "tq2_weights", llm_rows(wt2, 2, 3, 6)));
    printf("  = rows 1..2 of the full result, bit for bit: %s\n", llm_yes(same2));
    printf("query 2 against keys 0..2 (Tq=1, Tk=3): output=%s\n",
           llm_put(d, "tq1_output", llm_nums(ot1, 2, 6)));
    printf("  = row 2 of the full result, bit for bit: %s\n", llm_yes(same1));
    llm_put(d, "tq2_same", llm_yes(same2));
    llm_put(d, "tq1_same", llm_yes(same1));
    llm_demo_check(d, same2, "queries 1..2 alone give rows 1..2, bit for bit");
    llm_demo_check(d, same1, "query 2 alone gives row 2, bit for bit");
}
static const double seed_all[6] = {1, -0.5, 0.25, 2, -1, 0.75};
static const double seed_prefix[6] = {1, -1, 0.5, 2, 0, 0};

/* The probe's layer: causal_attention(x, k, v), k and v the list's
   parameters. */
static llm_status attend_kv(const void *layer, llm_params *ps, llm_tape *tape,
                            llm_var x, llm_var *y, llm_error *err)
{
    llm_var k, v;
    llm_status st = llm_param_leaf(tape, ps, 0, &k, err);
    (void)layer;
    if (st == LLM_OK)
        st = llm_param_leaf(tape, ps, 1, &v, err);
    return st == LLM_OK ? llm_tape_causal_attention(tape, x, k, v, NULL, y, err) : st;
}
static void gradients(llm_demo *d)
{
    static const size_t coords[6] = {0, 1, 2, 3, 4, 5};
    llm_params *ps = llm_own_params(d);
    llm_tensor *q = llm_own_tensor(d);
    llm_probe p = {attend_kv, NULL, ps, 2, s32, NULL, seed_all};
    double o[6], dq[6], loss = 0.0, worst_all = 0.0;
    const double *grad[3] = {dq, NULL, NULL};      /* dL/dQ, dL/dK, dL/dV */
    size_t b, failed = 0;
    int zero_row = 1;
    if (!(LLM_TRY(d, llm_tensor_from(q, 2, s32, fix_q, 6, &d->err))
          && LLM_TRY(d, llm_params_init(ps, &d->err))
          && LLM_TRY(d, llm_params_add_const(ps, "k", 2, s32, 0.0, 0, &d->err))
          && LLM_TRY(d, llm_params_add_const(ps, "v", 2, s32, 0.0, 0, &d->err))))
        return;
    memcpy(ps->items[0].value.data, fix_k, sizeof fix_k);
    memcpy(ps->items[1].value.data, fix_v, sizeof fix_v);
    p.x = q->data;                  /* the check perturbs q in place */
    grad[1] = ps->items[0].grad.data;
    grad[2] = ps->items[1].grad.data;
    if (!LLM_TRY(d, llm_probe_run(&p, o, 6, NULL, NULL, dq, &d->err)))
        return;
    for (b = 0; b < 6; b++)
        loss += seed_all[b] * o[b];
    printf("G=%s loss=sum(G * O)=%s\n", llm_rows(seed_all, 3, 2, 6),
           llm_put(d, "loss", llm_num(loss, 6)));
    for (b = 0; b < 3; b++)
        printf("  d%c=%s\n", "QKV"[b],
               llm_put(d, llm_text("d%c", "QKV"[b]), llm_rows(grad[b], 3, 2, 6)));
    p.up = seed_prefix;
    if (!LLM_TRY(d, llm_probe_run(&p, o, 6, NULL, NULL, dq, &d->err)))
        return;
    printf("G=%s (row 2 unseeded)\n", llm_rows(seed_prefix, 3, 2, 6));
    for (b = 0; b < 3; b++) {
        const int zero = grad[b][4] == 0.0 && grad[b][5] == 0.0;
        printf("  d%c row 2=%s exactly zero=%s\n", "QKV"[b],
               llm_nums(grad[b] + 4, 2, 6), llm_yes(zero));
        llm_put(d, llm_text("prefix_d%c", "QKV"[b]), llm_rows(grad[b], 3, 2, 6));
        zero_row = zero_row && zero;
    }
    llm_put(d, "future_zero", llm_yes(zero_row));
    llm_demo_check(d, zero_row, "no gradient reaches row 2 of Q, K or V");
    p.up = seed_all;
    if (!LLM_TRY(d, llm_probe_run(&p, o, 6, NULL, NULL, dq, &d->err)))
        return;
    for (b = 0; b < 3; b++) {
        llm_tensor *theta = b == 0 ? q : &ps->items[b - 1].value;
        double worst = 0.0;
        size_t failures = 0;
        const char *worst_text, *verdict;
        if (!LLM_TRY(d, llm_gradient_check(llm_probe_loss, &p, theta, grad[b], coords,
                                           6, 1e-6, 4e-6, &worst, &failures, &d->err)))
            return;
        worst_text = llm_text("%.1e", worst);
        verdict = failures == 0 ? "pass" : "fail";
        llm_row(d, "grads", llm_text("$%c$", "QKV"[b]), "6", worst_text, verdict, NULL);
        printf("gradcheck %c coordinates=6 worst=%s verdict=%s\n", "QKV"[b], worst_text,
               verdict);
        failed += failures;
        worst_all = worst > worst_all ? worst : worst_all;
    }
    llm_put(d, "grad_coords", llm_text("%zu", b * 6));      /* b == 3 blocks of 6 */
    llm_put(d, "grad_worst", llm_text("%.1e", worst_all));
    llm_put(d, "grad_verdict", failed == 0 ? "pass" : "fail");
    llm_demo_check(d, failed == 0, "every gradient coordinate passes the check");
}
/* The misconception, for the [3, 3] scores s: Z is chapter 12's softmax
   over all keys with the future set to 0, R is Z with each row divided by
   its sum. */
typedef struct zeroed {
    double z[9], sums[3], o0[2];     /* Z, its row sums, row 0 of Z V */
    double r[9], rsums[3], ro0[2];   /* R, its row sums, row 0 of R V */
} zeroed;

static int zero_after(llm_demo *d, const double *s, const double *v, zeroed *m)
{
    llm_tensor *t = llm_own_tensor(d), *p = llm_own_tensor(d);
    size_t i;
    if (!(LLM_TRY(d, llm_tensor_from(t, 2, s33, s, 9, &d->err))
          && LLM_TRY(d, llm_softmax(p, t, 1, &d->err))))
        return 0;
    for (i = 0; i < 9; i++)
        m->z[i] = i % 3 <= i / 3 ? p->data[p->offset + i] : 0.0;
    for (i = 0; i < 3; i++)
        m->sums[i] = m->z[3 * i] + m->z[3 * i + 1] + m->z[3 * i + 2];
    for (i = 0; i < 9; i++)
        m->r[i] = m->z[i] / m->sums[i / 3];
    for (i = 0; i < 3; i++)
        m->rsums[i] = m->r[3 * i] + m->r[3 * i + 1] + m->r[3 * i + 2];
    for (i = 0; i < 2; i++) {
        m->o0[i] = m->z[0] * v[i] + m->z[1] * v[2 + i] + m->z[2] * v[4 + i];
        m->ro0[i] = m->r[0] * v[i] + m->r[1] * v[2 + i] + m->r[2] * v[4 + i];
    }
    return 1;
}
static void after_softmax(llm_demo *d)
{
    double s2[9], wb[9], diff = 0.0;
    zeroed z, z2;
    size_t i;
    int leak, big_same;
    const char *diff_text;
    scaled_scores(fix_q, new_k, s2);
    if (!(zero_after(d, fx.s, fix_v, &z) && zero_after(d, s2, new_v, &z2)))
        return;
    for (i = 0; i < 9; i++)
        diff = fabs(z.r[i] - fx.w[i]) > diff ? fabs(z.r[i] - fx.w[i]) : diff;
    leak = memcmp(z.o0, z2.o0, sizeof z.o0) != 0;
    llm_row(d, "after", "$A$", llm_nums(fx.sums, 3, 6), llm_nums(fx.o, 2, 6),
            llm_nums(fx.o, 2, 6), NULL);
    llm_row(d, "after", "$Z$", llm_nums(z.sums, 3, 6), llm_nums(z.o0, 2, 6),
            llm_nums(z2.o0, 2, 6), NULL);
    llm_row(d, "after", "$R$", llm_nums(z.rsums, 3, 6), llm_nums(z.ro0, 2, 6),
            llm_nums(z2.ro0, 2, 6), NULL);
    diff_text = llm_put(d, "renorm_diff", llm_text("%.1e", diff));
    printf("softmax over all keys, future zeroed: row sums=%s",
           llm_put(d, "zero_sums", llm_nums(z.sums, 3, 6)));
    printf(" output row 0=%s\n", llm_put(d, "zero_o0", llm_nums(z.o0, 2, 6)));
    printf("  last key and value changed: output row 0=%s",
           llm_put(d, "zero_o0_new", llm_nums(z2.o0, 2, 6)));
    printf(" changed=%s\n", llm_put(d, "leak", llm_yes(leak)));
    printf("  renormalised: row sums=%s", llm_nums(z.rsums, 3, 6));
    printf(" largest difference from the causal weights=%s\n", diff_text);
    llm_demo_check(d, leak, "zeroing after the softmax lets the last key into row 0");
    memcpy(s2, fx.s, sizeof s2);
    s2[2] = 1000.0;                  /* row 0, key 2: masked */
    if (!(causal_of(d, s2, wb) && zero_after(d, s2, fix_v, &z2)))
        return;
    big_same = memcmp(wb, fx.w, sizeof wb) == 0;
    llm_put(d, "big_same", llm_yes(big_same));
    printf("a future score of 1000 in row 0: causal weights %s;",
           big_same ? "bit-identical" : "different");
    printf(" zeroed row 0 sums to %s,", llm_put(d, "big_sum", llm_num(z2.sums[0], 6)));
    printf(" renormalised=%s\n", llm_put(d, "big_renorm", llm_nums(z2.r, 3, 6)));
    llm_demo_check(d, big_same, "a masked score of 1000 leaves the weights alone");
}
static void refusals(llm_demo *d)
{
    static const size_t s22[2] = {2, 2}, s3[1] = {3};
    static const struct {
        const char *what;
        size_t x;                  /* the scores, or attention's queries: x[0..3] */
        int how;                   /* 0 softmax, 1 attention (k = v = x[2]), 2 softmax
                                      with x[0]'s row 1, key 1 +inf, 3 no output */
        llm_status code;
        const char *key;           /* the message's trace key, or NULL */
    } refused[5] = {
        {"scores [3, 2]: 3 queries, 2 keys", 1, 0, LLM_ERR_SHAPE, "short_message"},
        {"attention: 3 queries, 2 keys", 1, 1, LLM_ERR_SHAPE, NULL},
        {"scores of shape [3]", 3, 0, LLM_ERR_RANK, NULL},
        {"a visible score +inf (row 1, key 1)", 0, 2, LLM_ERR_NONFINITE,
         "inf_visible_message"},
        {"no output handle", 0, 3, LLM_ERR_ARGUMENT, NULL}};
    llm_tape *tape = llm_own_fresh_tape(d, 16);
    llm_tensor *t = llm_own_tensor(d);
    llm_var x[4], y, kept, wv;      /* x[0] the fixture's scores, a leaf on t */
    double wm[9];
    size_t i, count;
    llm_status st;
    int untouched, masked_same;
    if (!(LLM_TRY(d, llm_tensor_from(t, 2, s33, fx.s, 9, &d->err))
          && LLM_TRY(d, llm_tape_leaf(tape, t, NULL, &x[0], &d->err))
          && llm_own_constant(d, tape, 2, s32, fix_q, &x[1])
          && llm_own_constant(d, tape, 2, s22, fix_k, &x[2])
          && llm_own_constant(d, tape, 1, s3, fix_q, &x[3])))
        return;
    count = tape->count;
    memset(&y, 0x2d, sizeof y);
    kept = y;
    for (i = 0; i < 5; i++) {
        const llm_var a = x[refused[i].x];
        llm_var *out = refused[i].how == 3 ? NULL : &y;
        t->data[4] = refused[i].how == 2 ? INFINITY : fx.s[4];
        st = refused[i].how == 1
             ? llm_tape_causal_attention(tape, a, x[2], x[2], NULL, out, &d->err)
             : llm_tape_causal_softmax(tape, a, out, &d->err);
        llm_refuse_as(d, refused[i].what, st, refused[i].code);
        if (refused[i].key != NULL)
            llm_put(d, refused[i].key, d->err.message);
    }
    t->data[4] = fx.s[4];
    untouched = memcmp(&y, &kept, sizeof y) == 0 && tape->count == count;
    printf("output handle and tape untouched=%s\n",
           llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "refusals leave the output handle and the tape alone");
    t->data[2] = INFINITY;             /* row 0, key 2: masked */
    t->data[5] = NAN;                  /* row 1, key 2: masked */
    st = llm_tape_causal_softmax(tape, x[0], &wv, &d->err);
    llm_refuse(d, "masked scores +inf and NaN", st);
    masked_same = st == LLM_OK
                  && LLM_TRY(d, llm_probe_read(tape, wv, wm, 9, NULL, NULL, &d->err))
                  && memcmp(wm, fx.w, sizeof wm) == 0;
    printf("  its weights are the causal weights, bit for bit: %s\n",
           llm_put(d, "masked_same", llm_yes(masked_same)));
    llm_demo_check(d, masked_same, "masked +inf and NaN give the usual weights");
    if (!LLM_TRY(d, llm_tape_reset(tape, &d->err)))
        return;
    llm_refuse_as(d, "a handle from before a reset",
                  llm_tape_causal_softmax(tape, x[0], &y, &d->err), LLM_ERR_TAPE);
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {causal_weights, prefix_rows, gradients,
                                            after_softmax, refusals, NULL};
    return llm_demo_main(argc, argv, "ch28-causal-masking", NULL, sections);
}
