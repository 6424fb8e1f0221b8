/* ch27-self-attention -- softmax(Q K^T / sqrt(d)) V for one head: the
   fixture from chapter 26's projections, the scale, one token, gradients,
   refusals. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/attention.h"
#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/probe.h"

/* The row-major values of v: a pointer into the tape. */
static const double *values(const llm_tape *tape, llm_var v)
{
    const llm_tensor *t = NULL;
    return llm_tape_value(tape, v, &t, NULL) == LLM_OK ? t->data + t->offset : NULL;
}

static struct {
    llm_params *ps;            /* the projections' list, owned by main */
    llm_tape *tape;            /* the recording, owned by main */
    llm_var q, k, v, w, o;
    size_t first;              /* attention's first node */
} fx;

static void fixture(llm_demo *d)
{
    static const double fix_x[6] = {1, 2, -1, 0, 1, 2};
    static const double fix_w[3][6] = {{1, 0, 0, 1, 1, -1},     /* W_q */
                                       {0, 1, 1, 0, -1, 1},     /* W_k */
                                       {1, 1, 1, -1, 0, 2}};    /* W_v */
    static const size_t s23[2] = {2, 3};
    llm_qkv qkv;
    llm_rng rng;
    llm_var xv;
    llm_rng_seed(&rng, 27);
    if (!(LLM_TRY(d, llm_params_init(fx.ps, &d->err))
          && LLM_TRY(d, llm_qkv_init(&qkv, fx.ps, "attn", 3, 2, &rng, &d->err))
          && LLM_TRY(d, llm_tape_init(fx.tape, 32, &d->err))))
        return;
    memcpy(fx.ps->items[qkv.query.weight].value.data, fix_w[0], sizeof fix_w[0]);
    memcpy(fx.ps->items[qkv.key.weight].value.data, fix_w[1], sizeof fix_w[1]);
    memcpy(fx.ps->items[qkv.value.weight].value.data, fix_w[2], sizeof fix_w[2]);
    if (!(llm_own_constant(d, fx.tape, 2, s23, fix_x, &xv)
          && LLM_TRY(d, llm_qkv_forward(&qkv, fx.ps, fx.tape, xv, &fx.q, &fx.k, &fx.v,
                                        &d->err))))
        return;
    fx.first = fx.tape->count;
    if (!LLM_TRY(d, llm_tape_attention(fx.tape, fx.q, fx.k, fx.v, &fx.w, &fx.o,
                                       &d->err)))
        return;
    printf("X=%s through chapter 26's projections:\n",
           llm_put(d, "x", llm_trim_rows(fix_x, 2, 3, 6)));
    printf("  Q=%s", llm_put(d, "q", llm_trim_rows(values(fx.tape, fx.q), 2, 2, 6)));
    printf(" K=%s", llm_put(d, "k", llm_trim_rows(values(fx.tape, fx.k), 2, 2, 6)));
    printf(" V=%s\n", llm_put(d, "v", llm_trim_rows(values(fx.tape, fx.v), 2, 2, 6)));
}
static void attention_nodes(llm_demo *d)
{
    static const char *const keys[5] = {"scale", "scores", "scaled", "weights",
                                        "output"};
    size_t id, count = fx.tape->count;
    printf("attention recorded %zu nodes:\n", count - fx.first);
    llm_put(d, "nodes", llm_text("%zu", count - fx.first));
    for (id = fx.first; id < count; id++) {
        llm_node_info n;
        const llm_tensor *t;
        const char *shape, *value;
        if (!LLM_TRY(d, llm_tape_node(fx.tape, id, &n, &d->err)))
            return;
        t = n.value;
        shape = llm_sizes(t->shape, t->rank);
        value = t->rank == 0 ? llm_num(t->data[t->offset], 6)
                : id == fx.first + 1 ? llm_trim_rows(t->data + t->offset, 2, 2, 6)
                                     : llm_rows(t->data + t->offset, t->shape[0],
                                                t->shape[1], 6);
        printf("  node %zu %s %s %s\n", id, llm_op_name(n.op), shape, value);
        llm_row(d, "nodes", llm_text("%zu", id), llm_op_name(n.op), shape, value, NULL);
        if (id - fx.first < 5)
            llm_put(d, keys[id - fx.first], value);
    }
    llm_demo_check(d, count - fx.first == 5 && fx.o.id == count - 1
                      && fx.w.id == count - 2,
                   "attention records five nodes, the weights fourth, the output last");
}
static void weights_by_row(llm_demo *d)
{
    const double *wv = values(fx.tape, fx.w), *ov = values(fx.tape, fx.o);
    const double *vv = values(fx.tape, fx.v);
    double dev = 0.0;
    size_t i;
    int same;
    for (i = 0; i < 2; i++) {
        double sum = wv[2 * i] + wv[2 * i + 1];
        dev = fabs(sum - 1.0) > dev ? fabs(sum - 1.0) : dev;
        llm_row(d, "mix", llm_text("%zu", i), llm_num(wv[2 * i], 6),
                llm_num(wv[2 * i + 1], 6), llm_num(sum, 6), llm_num(ov[2 * i], 6),
                llm_num(ov[2 * i + 1], 6), NULL);
        llm_row(d, "vrows", llm_text("%zu", i), llm_trim(vv[2 * i], 6),
                llm_trim(vv[2 * i + 1], 6), NULL);
    }
    printf("row sums: largest |sum - 1|=%s\n",
           llm_put(d, "row_dev", llm_text("%.1e", dev)));
    printf("weights not symmetric: w[0][1]=%s", llm_put(d, "w01", llm_num(wv[1], 6)));
    printf(" w[1][0]=%s\n", llm_put(d, "w10", llm_num(wv[2], 6)));
    same = !strcmp(llm_rows(wv, 2, 2, 6),
                   "[[0.014166, 0.985834], [0.999151, 0.000849]]")
           && !strcmp(llm_rows(ov, 2, 2, 6),
                      "[[1.028332, 2.915004], [2.998303, -2.994908]]");
    printf("weights and output match the Rust course: %s\n",
           llm_put(d, "reference", llm_yes(dev < 1e-12 && same)));
    llm_demo_check(d, dev < 1e-12, "every row of weights sums to 1");
    llm_demo_check(d, same, "weights and output are the Rust course's numbers");
}
static void without_scale(llm_demo *d)
{
    llm_var raw, plain;
    if (!(LLM_TRY(d, llm_tape_matmul(fx.tape, fx.q, fx.k, 0, 1, &raw, &d->err))
          && LLM_TRY(d, llm_tape_softmax(fx.tape, raw, &plain, &d->err))))
        return;
    printf("without the scale: weights=%s\n",
           llm_put(d, "unscaled", llm_rows(values(fx.tape, plain), 2, 2, 6)));
    llm_put(d, "unscaled_small", llm_num(values(fx.tape, plain)[0], 6));
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
static void scale_row(llm_demo *d, size_t width)
{
    enum { TQ = 64, TK = 8 };
    static double xq[TQ * 512], xk[TK * 512], xv[TK];
    const size_t sq[2] = {TQ, width}, sk[2] = {TK, width}, sv[2] = {TK, 1};
    llm_tape *tape = llm_own_fresh_tape(d, 16);
    llm_rng rng;
    llm_var q, k, v, w, o, raw, plain;
    static const char *const keys[5] = {"rms512", "top512", "top512s", "jac512",
                                        "jac512s"};
    double rms = 0.0, top[2] = {0, 0}, jac[2] = {0, 0}, m[5];
    const double *s, *y[2];
    const char *c[5];
    size_t i, j, r;
    llm_rng_seed(&rng, 27);
    draw(&rng, xq, TQ * width);
    draw(&rng, xk, TK * width);
    if (!(llm_own_constant(d, tape, 2, sq, xq, &q)
          && llm_own_constant(d, tape, 2, sk, xk, &k)
          && llm_own_constant(d, tape, 2, sv, xv, &v)
          && LLM_TRY(d, llm_tape_attention(tape, q, k, v, &w, &o, &d->err))
          && LLM_TRY(d, llm_tape_matmul(tape, q, k, 0, 1, &raw, &d->err))
          && LLM_TRY(d, llm_tape_softmax(tape, raw, &plain, &d->err))))
        return;
    s = values(tape, raw);
    y[0] = values(tape, plain);
    y[1] = values(tape, w);
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
    m[0] = rms;
    m[1] = top[0] / TQ;
    m[2] = top[1] / TQ;
    m[3] = jac[0] / TQ;
    m[4] = jac[1] / TQ;
    for (i = 0; i < 5; i++)
        c[i] = llm_num(m[i], 3);
    printf("  d=%zu rms(q.k)=%s largest weight %s -> %s slope %s -> %s\n", width, c[0],
           c[1], c[2], c[3], c[4]);
    llm_row(d, "scale", llm_text("%zu", width), c[0], c[1], c[2], c[3], c[4], NULL);
    for (i = 0; i < 5 && width == 512; i++)
        llm_put(d, keys[i], c[i]);
}
static void scale(llm_demo *d)
{
    static const double one_q[2] = {1, 0}, two_k[4] = {1, 0, 0, 1};
    static const size_t s12[2] = {1, 2}, s22[2] = {2, 2};
    static const size_t widths[5] = {2, 8, 32, 128, 512};
    llm_tape *tape = llm_own_fresh_tape(d, 16);
    llm_var q, k, w, o, raw, plain;
    const char *a, *b;
    size_t i;
    if (!(llm_own_constant(d, tape, 2, s12, one_q, &q)
          && llm_own_constant(d, tape, 2, s22, two_k, &k)
          && LLM_TRY(d, llm_tape_attention(tape, q, k, k, &w, &o, &d->err))
          && LLM_TRY(d, llm_tape_matmul(tape, q, k, 0, 1, &raw, &d->err))
          && LLM_TRY(d, llm_tape_softmax(tape, raw, &plain, &d->err))))
        return;
    a = llm_put(d, "pair_plain", llm_num(values(tape, plain)[0], 6));
    b = llm_put(d, "pair_scaled", llm_num(values(tape, w)[0], 6));
    printf("scores [1, 0] at d=2: favoured weight without the scale=%s", a);
    printf(" with=%s\n", b);
    llm_demo_check(d, strcmp(a, "0.731059") == 0 && strcmp(b, "0.669762") == 0,
                   "the favoured weight is 0.731059 unscaled, 0.669762 scaled");
    printf("64 queries, 8 keys, entries of variance 1 (seed 27):\n");
    for (i = 0; i < 5 && d->ok; i++)
        scale_row(d, widths[i]);
}
static void single_token(llm_demo *d)
{
    static const double q1[2] = {0.5, -1}, k1[2] = {2, 1}, v1[3] = {7, -2, 0.25};
    static const size_t s12[2] = {1, 2}, s13[2] = {1, 3};
    llm_tape *tape = llm_own_fresh_tape(d, 16);
    llm_var q, k, v, w, o;
    const char *out;
    int same;
    if (!(llm_own_constant(d, tape, 2, s12, q1, &q)
          && llm_own_constant(d, tape, 2, s12, k1, &k)
          && llm_own_constant(d, tape, 2, s13, v1, &v)
          && LLM_TRY(d, llm_tape_attention(tape, q, k, v, &w, &o, &d->err))))
        return;
    same = values(tape, w)[0] == 1.0 && memcmp(values(tape, o), v1, sizeof v1) == 0;
    out = llm_trim_rows(values(tape, o), 1, 3, 6);
    printf("one token: weight=%s output=%s bit-identical to v=%s\n",
           llm_trim(values(tape, w)[0], 6), out, llm_put(d, "single", llm_yes(same)));
    llm_put(d, "single_out", out);
    llm_demo_check(d, same, "one token gets the weight 1 and returns its value");
}
static const double probe_q[6] = {0.5, -1, 1, 0.25, -0.75, 0.5};
static const double probe_k[8] = {1, 0.5, -0.5, 1, 0.25, -1, 0.8, 0.3};
static const double probe_v[12] = {1, -2, 0.5, 0, 1, 1.5, -1, 0.25, 2, 0.75, -0.5, 1};
static const double probe_c[9] = {1, -0.5, 0.25, 0.5, 2, -1, 0.75, -0.25, 1.5};

/* The probe's layer: attention(x, k, v), k and v the list's parameters. */
static llm_status attend_kv(const void *layer, llm_params *ps, llm_tape *tape,
                            llm_var x, llm_var *y, llm_error *err)
{
    llm_var k, v;
    llm_status st = llm_param_leaf(tape, ps, 0, &k, err);
    (void)layer;
    if (st == LLM_OK)
        st = llm_param_leaf(tape, ps, 1, &v, err);
    return st == LLM_OK ? llm_tape_attention(tape, x, k, v, NULL, y, err) : st;
}
static void gradient_check(llm_demo *d)
{
    static const size_t sh[3][2] = {{3, 2}, {4, 2}, {4, 3}};
    static const char *const names[3] = {"q", "k", "v"};
    static const size_t coords[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    llm_params *ps = llm_own_params(d);
    llm_tensor *q = llm_own_tensor(d);
    llm_probe p = {attend_kv, NULL, ps, 2, sh[0], NULL, probe_c};
    double o[9], dq[6], loss = 0.0, worst_all = 0.0;
    size_t i, t, failed = 0, count = 0;
    const char *worst_text;
    if (!(LLM_TRY(d, llm_tensor_from(q, 2, sh[0], probe_q, 6, &d->err))
          && LLM_TRY(d, llm_params_init(ps, &d->err))
          && LLM_TRY(d, llm_params_add_const(ps, "k", 2, sh[1], 0.0, 0, &d->err))
          && LLM_TRY(d, llm_params_add_const(ps, "v", 2, sh[2], 0.0, 0, &d->err))))
        return;
    memcpy(ps->items[0].value.data, probe_k, sizeof probe_k);
    memcpy(ps->items[1].value.data, probe_v, sizeof probe_v);
    p.x = q->data;                  /* the check perturbs q in place */
    if (!LLM_TRY(d, llm_probe_run(&p, o, 9, NULL, NULL, dq, &d->err)))
        return;
    for (i = 0; i < 9; i++)
        loss += probe_c[i] * o[i];
    printf("gradient check: L = sum C * attention(q [3, 2], k [4, 2], v [4, 3]) = %s\n",
           llm_num(loss, 6));
    for (t = 0; t < 3; t++) {
        llm_tensor *theta = t == 0 ? q : &ps->items[t - 1].value;
        const double *analytic = t == 0 ? dq : ps->items[t - 1].grad.data;
        const char *grad;
        double worst = 0.0;
        size_t failures = 0;
        if (!LLM_TRY(d, llm_gradient_check(llm_probe_loss, &p, theta, analytic, coords,
                                           theta->size, 1e-6, 1e-6, &worst, &failures,
                                           &d->err)))
            return;
        grad = llm_rows(analytic, sh[t][0], sh[t][1], 6);
        worst_text = llm_text("%.1e", worst);
        llm_row(d, "grads", llm_text("$%s$", names[t]), grad,
                llm_text("%zu", theta->size), worst_text, NULL);
        printf("  d%s=%s coordinates=%zu worst=%s\n", names[t], grad, theta->size,
               worst_text);
        failed += failures;
        count += theta->size;
        worst_all = worst > worst_all ? worst : worst_all;
    }
    llm_put(d, "grad_coords", llm_text("%zu", count));
    worst_text = llm_put(d, "grad_worst", llm_text("%.1e", worst_all));
    printf("  coordinates=%zu worst=%s", count, worst_text);
    printf(" verdict=%s\n", llm_put(d, "grad_verdict", failed == 0 ? "pass" : "fail"));
    llm_demo_check(d, failed == 0, "every gradient coordinate passes the check");
}
static void refusals(llm_demo *d)
{
    static const double zero[8] = {0};
    static const size_t shapes[9][3] = {{2, 2}, {2}, {1, 2, 2}, {2, 2, 2}, {2, 3},
                                        {3, 2}, {2, 0}, {0, 2}, {0}};
    static const size_t ranks[9] = {2, 1, 3, 3, 2, 2, 2, 2, 0};
    static const struct {
        const char *what;
        size_t q, k, v;            /* operands: x[0..8], or x[9], the stale one */
        llm_status code;
        const char *key;           /* the message's trace key, or NULL */
    } refused[8] = {
        {"q of shape [2]", 1, 0, 0, LLM_ERR_RANK, NULL},
        {"q [1, 2, 2], k and v [2, 2]", 2, 0, 0, LLM_ERR_RANK, NULL},
        {"q [1, 2, 2], k and v [2, 2, 2]", 2, 3, 3, LLM_ERR_SHAPE, NULL},
        {"q of width 2, k of width 3", 0, 4, 0, LLM_ERR_SHAPE, "width_message"},
        {"2 keys, 3 values", 0, 0, 5, LLM_ERR_SHAPE, "length_message"},
        {"q and k of width 0", 6, 6, 0, LLM_ERR_SHAPE, NULL},
        {"no keys: k and v [0, 2]", 0, 7, 7, LLM_ERR_EMPTY, "empty_message"},
        {"q from before a reset", 9, 0, 0, LLM_ERR_TAPE, NULL}};
    llm_tape *tape = llm_own_fresh_tape(d, 16);
    llm_var x[10], w, o, marker;        /* x[9] is from before the reset */
    size_t i, count;
    llm_status st;
    int untouched;
    if (!(llm_own_constant(d, tape, 2, shapes[0], zero, &x[9])
          && LLM_TRY(d, llm_tape_reset(tape, &d->err))))
        return;
    for (i = 0; i < 9; i++)
        if (!llm_own_constant(d, tape, ranks[i], shapes[i], zero, &x[i]))
            return;
    count = tape->count;
    memset(&marker, 0x5a, sizeof marker);
    w = o = marker;
    for (i = 0; i < 8; i++) {
        st = llm_tape_attention(tape, x[refused[i].q], x[refused[i].k], x[refused[i].v],
                                &w, &o, &d->err);
        llm_refuse(d, refused[i].what, st);
        if (refused[i].key != NULL)
            llm_put(d, refused[i].key, d->err.message);
        llm_demo_check(d, st == refused[i].code, refused[i].what);
    }
    st = llm_tape_softmax(tape, x[8], &w, &d->err);
    llm_refuse(d, "softmax of a scalar", st);
    llm_demo_check(d, st == LLM_ERR_AXIS, "softmax of a scalar");
    untouched = memcmp(&w, &marker, sizeof w) == 0 && memcmp(&o, &marker, sizeof o) == 0
                && tape->count == count;
    printf("after the refusals: weights, output and tape untouched=%s\n",
           llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "refused calls left weights, output and tape alone");
}

static void setup(llm_demo *d)
{
    fx.ps = llm_own_params(d);
    fx.tape = llm_own_tape(d);
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {fixture, attention_nodes, weights_by_row,
                                            without_scale, scale, single_token,
                                            gradient_check, refusals, NULL};
    return llm_demo_main(argc, argv, "ch27-self-attention", setup, sections);
}
