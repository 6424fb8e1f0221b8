/* ch26-qkv-projections -- three bias-free projections of one sequence. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/attention.h"
#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/probe.h"

static const size_t fix_shape[2] = {2, 3};                  /* X's shape */
static const double fix_x[6] = {1, 2, -1, 0, 1, 2};         /* X [2, 3] */
static const double fix_w[3][6] = {{1, 0, 0, 1, 1, -1},     /* W_q [3, 2] */
                                   {0, 1, 1, 0, -1, 1},     /* W_k [3, 2] */
                                   {1, 1, 1, -1, 0, 2}};    /* W_v [3, 2] */
static const double fix_c[3][4] = {{1, -1, 2, 0.5},         /* C_q for sum(C_q (.) Q) */
                                   {0.5, 1, -1, 2},         /* C_k */
                                   {-2, 1, 1.5, -0.5}};     /* C_v */
static llm_params *ps;       /* the list of seed 26, owned by main */
static llm_qkv qkv;          /* its projections */

/* Weight k of the projections: 0 the query's, 1 the key's, 2 the value's. */
static llm_param *weight(size_t k)
{
    return &ps->items[k == 0 ? qkv.query.weight : k == 1 ? qkv.key.weight
                                                          : qkv.value.weight];
}

/* A [r, c] matrix (c is 2 or 3) as a trace table, one row per row. */
static void trace_matrix(llm_demo *d, const char *table, const double *x, size_t r,
                         size_t c)
{
    for (; r > 0; r--, x += c)
        llm_row(d, table, llm_trim(x[0], 12), llm_trim(x[1], 12),
                c > 2 ? llm_trim(x[2], 12) : NULL, NULL);
}
typedef struct qkv_out { double *kv; size_t n; } qkv_out;   /* K, V: n values each */

/* The probe's layer: y = Q, with K and V copied to kv; or, with kv NULL,
   y = L = sum(C_q Q) + sum(C_k K) + sum(C_v V), the sums in that order. */
static llm_status qkv_layer(const void *layer, llm_params *list, llm_tape *tape,
                            llm_var x, llm_var *y, llm_error *err)
{
    static const size_t two[2] = {2, 2};
    const qkv_out *out = layer;
    const llm_tensor *t;
    llm_tensor c;
    llm_var o[3] = {{0, 0}}, cv, part;
    size_t j;
    llm_status st = llm_qkv_forward(&qkv, list, tape, x, &o[0], &o[1], &o[2], err);
    *y = o[0];
    for (j = 1; j < 3 && st == LLM_OK && out->kv != NULL; j++) {
        st = llm_tape_value(tape, o[j], &t, err);     /* a matmul's, contiguous */
        if (st == LLM_OK && t->size > 0 && t->size <= out->n)
            memcpy(out->kv + (j - 1) * out->n, t->data + t->offset,
                   t->size * sizeof *t->data);
    }
    for (j = 0; j < 3 && st == LLM_OK && out->kv == NULL; j++) {
        if ((st = llm_tensor_from(&c, 2, two, fix_c[j], 4, err)) != LLM_OK)
            break;
        st = llm_tape_constant(tape, &c, &cv, err);
        llm_tensor_free(&c);
        if (st == LLM_OK)
            st = llm_tape_mul(tape, o[j], cv, &part, err);
        if (st == LLM_OK)
            st = llm_tape_sum_all(tape, part, &part, err);
        if (st == LLM_OK && j > 0)
            st = llm_tape_add(tape, *y, part, &part, err);
        *y = part;
    }
    return st;
}

/* Q, K, V of x (rank, shape, fix_x's first values) into out, out + n,
   out + 2n, and Q's shape into qshape when not NULL. Returns d->ok. */
static int project(llm_demo *d, size_t rank, const size_t *shape, double *out,
                   size_t n, size_t *qrank, size_t *qshape)
{
    qkv_out layer = {out + n, n};
    llm_probe p = {qkv_layer, &layer, ps, rank, shape, fix_x, NULL};
    return LLM_TRY(d, llm_probe_run(&p, out, n, qrank, qshape, NULL, &d->err));
}
static void build_and_replay(llm_demo *d)
{
    static const char *const part[3] = {"query", "key", "value"};
    llm_params *again = llm_own_params(d);
    llm_qkv twin;
    llm_rng rng, start, fresh, rng2;
    size_t k, draws = 0, scalars = 0;
    int same = 1, replay;
    llm_rng_seed(&rng, 26);
    start = rng;
    if (!LLM_TRY(d, llm_qkv_init(&qkv, ps, "attn", 3, 2, &rng, &d->err)))
        return;
    for (; start.state != rng.state && draws < 1000; draws++)
        start.state += UINT64_C(0x9e3779b97f4a7c15);
    llm_rng_seed(&fresh, 26);
    llm_rng_seed(&rng2, 26);                 /* the replay: same seed, second list */
    if (!(LLM_TRY(d, llm_params_init(again, &d->err))
          && LLM_TRY(d, llm_qkv_init(&twin, again, "attn", 3, 2, &rng2, &d->err))))
        return;
    replay = again->count == ps->count && rng2.state == rng.state
             && twin.query.weight == qkv.query.weight
             && twin.key.weight == qkv.key.weight
             && twin.value.weight == qkv.value.weight;
    for (k = 0; k < 3; k++) {
        const llm_param *p = weight(k);
        llm_tensor *w = llm_own_tensor(d);
        const char *shape, *drawn, *value;
        int equal;
        if (!LLM_TRY(d, llm_xavier_uniform(w, 3, 2, &fresh, &d->err)))
            return;
        equal = w->size == p->value.size
                && memcmp(w->data, p->value.data, w->size * sizeof *w->data) == 0;
        same = same && equal;
        shape = llm_sizes(p->value.shape, p->value.rank);
        drawn = llm_text("%zu–%zu", scalars + 1, scalars + p->value.size);
        value = llm_nums(p->value.data, p->value.size, 6);
        llm_row(d, "params", llm_text("%td", p - ps->items), llm_text("`%s`", p->name),
                shape, drawn, value, llm_yes(equal), NULL);
        printf("param %s shape=%s draws=%s same_as_fresh_%s=%s\n  value=%s\n", p->name,
               shape, drawn, part[k], llm_yes(equal), value);
        scalars += p->value.size;
        replay = replay && strcmp(again->items[k].name, ps->items[k].name) == 0
                 && memcmp(again->items[k].value.data, ps->items[k].value.data,
                           ps->items[k].value.size * sizeof(double)) == 0;
    }
    printf("params=%zu", ps->count);
    printf(" scalars=%s", llm_put(d, "n_scalars", llm_text("%zu", scalars)));
    printf(" draws=%s", llm_put(d, "draws", llm_text("%zu", draws)));
    printf(" order=%s\n",
           llm_put(d, "draw_order", same ? "query, key, value" : "different"));
    llm_demo_check(d, same, "each weight is the next matrix of a fresh seed-26 stream");
    llm_demo_check(d, draws == 18 && scalars == 18 && ps->count == 3,
                   "three weights of 18 scalars took 18 draws");
    printf("replay seed=26: %s\n",
           llm_put(d, "replay", replay ? "bit-identical" : "different"));
    llm_demo_check(d, replay, "a second construction from seed 26 is bit-identical");
}
static void failed_constructor(llm_demo *d)
{
    const size_t one[1] = {1};
    llm_params *other = llm_own_params(d);
    llm_qkv half, marker;
    llm_rng rng, before;
    llm_param saved;
    llm_status st;
    int rng_same, list_same, layer_same;
    if (!(LLM_TRY(d, llm_params_init(other, &d->err))
          && LLM_TRY(d, llm_params_add_const(other, "head.value.weight", 1, one, 0.0, 1,
                                             &d->err))))
        return;
    saved = other->items[0];
    memset(&half, 0x5a, sizeof half);
    marker = half;
    llm_rng_seed(&rng, 26);
    before = rng;
    st = llm_qkv_init(&half, other, "head", 3, 2, &rng, &d->err);
    llm_refuse(d, "projections head when head.value.weight is taken", st);
    printf("  %s\n", llm_put(d, "half_message", d->err.message));
    rng_same = memcmp(&rng, &before, sizeof rng) == 0;
    list_same = other->count == 1 && memcmp(other->items, &saved, sizeof saved) == 0;
    layer_same = memcmp(&half, &marker, sizeof half) == 0;
    printf("after the failed construction: generator=%s list=%s projections=%s\n",
           rng_same ? "unchanged" : "moved", list_same ? "unchanged" : "changed",
           layer_same ? "untouched" : "written");
    llm_put(d, "half_rng", llm_yes(rng_same));
    llm_put(d, "half_list", llm_yes(list_same));
    llm_demo_check(d, st == LLM_ERR_NAME, "a taken third name is refused as a name");
    llm_demo_check(d, rng_same && list_same && layer_same,
                   "a refused constructor leaves generator, list and layer alone");
}
static void fixture(llm_demo *d)
{
    static const double want[12] = {0, 3, 2, -1, 3, 0, -1, 2, 3, -3, 1, 3};
    static const char *const key[3] = {"q", "k", "v"};
    static const char *const tab[6] = {"mat_wq", "mat_wk", "mat_wv", "mat_q", "mat_k",
                                       "mat_v"};
    double out[12], sc[4] = {0}, sh[4] = {0};
    size_t j, n;
    int match;
    printf("x=%s\n", llm_trim_rows(fix_x, 2, 3, 12));
    trace_matrix(d, "mat_x", fix_x, 2, 3);
    for (j = 0; j < 3; j++) {             /* the fixture's weights, by hand */
        memcpy(weight(j)->value.data, fix_w[j], sizeof fix_w[j]);
        trace_matrix(d, tab[j], fix_w[j], 3, 2);
    }
    if (!project(d, 2, fix_shape, out, 4, NULL, NULL))
        return;
    for (j = 0; j < 3; j++) {
        printf("%s=%s\n", key[j], llm_put(d, key[j], llm_trim_rows(out + 4 * j, 2, 2,
                                                                     12)));
        trace_matrix(d, tab[3 + j], out + 4 * j, 2, 2);
    }
    for (n = 0; n < 2; n++)             /* one row per position: x_n, q_n, k_n, v_n */
        llm_row(d, "rows", llm_text("%zu", n), llm_trims(fix_x + 3 * n, 3, 12),
                llm_trims(out + 2 * n, 2, 12), llm_trims(out + 4 + 2 * n, 2, 12),
                llm_trims(out + 8 + 2 * n, 2, 12), NULL);
    for (n = 0; n < 4; n++)            /* q_i . k_j at n = 2i + j, and with K = Q */
        for (j = 0; j < 2; j++) {
            sc[n] += out[n / 2 * 2 + j] * out[4 + n % 2 * 2 + j];
            sh[n] += out[n / 2 * 2 + j] * out[n % 2 * 2 + j];
        }
    printf("scores q.k=%s", llm_put(d, "scores", llm_trim_rows(sc, 2, 2, 12)));
    printf(" with W_k = W_q: %s\n",
           llm_put(d, "scores_shared", llm_trim_rows(sh, 2, 2, 12)));
    llm_put(d, "score_11", llm_trim(sc[3], 12));
    match = memcmp(out, want, sizeof want) == 0;
    printf("matches the Rust course: %s\n", llm_put(d, "course_match", llm_yes(match)));
    llm_demo_check(d, match, "Q, K and V are the numbers worked by hand, bit for bit");
}
static void independence(llm_demo *d)
{
    double *wk = weight(1)->value.data, out[12], out2[12];
    int ran, q_same, v_same, k_changed;
    if (!project(d, 2, fix_shape, out, 4, NULL, NULL))
        return;
    wk[0] = 10.0;                                  /* W_k[0, 0]: 0 -> 10 */
    ran = project(d, 2, fix_shape, out2, 4, NULL, NULL);
    wk[0] = fix_w[1][0];
    if (!ran)
        return;
    q_same = memcmp(out, out2, 4 * sizeof out[0]) == 0;
    k_changed = memcmp(out + 4, out2 + 4, 4 * sizeof out[0]) != 0;
    v_same = memcmp(out + 8, out2 + 8, 4 * sizeof out[0]) == 0;
    printf("W_k[0, 0] -> 10: k=%s",
           llm_put(d, "k_changed", llm_trim_rows(out2 + 4, 2, 2, 12)));
    printf(" q %s v %s\n", q_same ? "bit-identical" : "changed",
           v_same ? "bit-identical" : "changed");
    llm_put(d, "qv_same", q_same && v_same ? "bit-identical" : "changed");
    llm_demo_check(d, k_changed, "a changed W_k changes K");
    llm_demo_check(d, q_same && v_same, "a changed W_k leaves Q and V bit-identical");
}
static void leading_axes(llm_demo *d)
{
    static const size_t xs[6][3] = {{2, 3}, {1, 2, 3}, {2, 1, 3}, {3}, {0, 3},
                                    {2, 0, 3}};
    static const size_t ranks[6] = {2, 3, 3, 1, 2, 3}, sizes[6] = {6, 6, 6, 3, 0, 0};
    double out[12], ref[12];
    size_t s, j, n, qshape[LLM_MAX_RANK], qrank = 0;
    int all_kept = 1;
    for (s = 0; s < 6; s++) {
        const char *xt = llm_sizes(xs[s], ranks[s]), *qs, *q, *rows;
        int same = 1;
        n = sizes[s] / 3 * 2;                        /* values in each of q, k, v */
        if (!project(d, ranks[s], xs[s], out, n, &qrank, qshape))
            return;
        if (s == 0)
            memcpy(ref, out, sizeof ref);
        for (j = 0; j < 3; j++)          /* each row as that row of the [2, 3] input */
            same = same && memcmp(out + j * n, ref + j * 4, n * sizeof out[0]) == 0;
        all_kept = all_kept && same && qrank == ranks[s] && qshape[qrank - 1] == 2
                   && memcmp(qshape, xs[s], (qrank - 1) * sizeof qshape[0]) == 0;
        qs = llm_sizes(qshape, qrank);
        q = n == 0 ? "(none)" : n == 2 ? llm_trims(out, 2, 12)
                                       : llm_trim_rows(out, n / 2, 2, 12);
        rows = n == 0 ? "(nothing to compare)" : llm_yes(same);
        llm_row(d, "shapes", xt, qs, q, rows, NULL);
        printf("x %s -> q, k, v %s q=%s same rows=%s\n", xt, qs, q, rows);
        if (s == 3 || s == 5)
            llm_put(d, s == 3 ? "vec_shape" : "empty_shape", qs);
    }
    printf("leading axes kept, rows unchanged: %s\n",
           llm_put(d, "shapes_kept", llm_yes(all_kept)));
    llm_demo_check(d, all_kept, "every shape keeps its leading axes and the same rows");
}
static void gradient_check(llm_demo *d)
{
    static const char *const label[4] = {"W_q", "W_k", "W_v", "X"};
    static const char *const key[4] = {"grad_wq", "grad_wk", "grad_wv", "grad_x"};
    static const double one[1] = {1.0};
    static const size_t coords[6] = {0, 1, 2, 3, 4, 5};
    const qkv_out loss = {NULL, 0};
    llm_tensor *x = llm_own_tensor(d);
    llm_probe p = {qkv_layer, &loss, ps, 2, fix_shape, NULL, one};
    double y, dx[6], worst_all = 0.0;
    size_t k, total = 0, failed = 0;
    if (!LLM_TRY(d, llm_tensor_from(x, 2, fix_shape, fix_x, 6, &d->err)))
        return;
    p.x = x->data;                  /* the check perturbs x in place */
    if (!LLM_TRY(d, llm_probe_run(&p, &y, 1, NULL, NULL, dx, &d->err)))
        return;
    for (k = 0; k < 4; k++) {
        llm_tensor *theta = k < 3 ? &weight(k)->value : x;
        const double *analytic = k < 3 ? weight(k)->grad.data : dx;
        const char *grad, *worst_text;
        double worst = 0.0;
        size_t failures = 0;
        if (!LLM_TRY(d, llm_gradient_check(llm_probe_loss, &p, theta, analytic, coords,
                                           theta->size, 1e-6, 2e-6, &worst, &failures,
                                           &d->err)))
            return;
        grad = llm_trim_rows(analytic, theta->shape[0], theta->shape[1], 12);
        worst_text = llm_text("%.2e", worst);
        llm_row(d, "grads", llm_text("$%s$", label[k]), grad,
                llm_text("%zu", theta->size), worst_text, llm_text("%zu", failures),
                NULL);
        printf("grad %s=%s\n  coords=%zu worst=%s failures=%zu\n", label[k],
               llm_put(d, key[k], grad), theta->size, worst_text, failures);
        total += theta->size;
        failed += failures;
        worst_all = worst > worst_all ? worst : worst_all;
    }
    llm_put(d, "gc_coords", llm_text("%zu", total));
    llm_put(d, "gc_worst", llm_text("%.2e", worst_all));
    printf("gradcheck h=1e-06 tolerance=2e-06 coords=%zu failures=%zu", total, failed);
    printf(" verdict=%s\n", llm_put(d, "gc_verdict", failed == 0 ? "pass" : "fail"));
    llm_demo_check(d, failed == 0 && total == 24,
                   "all 24 gradient coordinates agree with finite differences");
}
static void refusals(llm_demo *d)
{
    static const size_t narrow[2] = {2, 2};
    llm_tensor *x = llm_own_tensor(d), *xn = llm_own_tensor(d), *s = llm_own_tensor(d);
    llm_tape *tape = llm_own_tape(d);
    llm_error *e = &d->err;
    llm_qkv no, far = qkv, wide = qkv;
    llm_var xv, xnv, sv, stale, q, k, v, marker;
    llm_rng rng;
    size_t count = ps->count, nodes;
    char longp[52] = "";
    int untouched;
    memset(longp, 'p', sizeof longp - 1);
    llm_rng_seed(&rng, 26);
    llm_refuse(d, "init with no prefix", llm_qkv_init(&no, ps, NULL, 3, 2, &rng, e));
    llm_refuse(d, "init with d_k 0", llm_qkv_init(&no, ps, "attn2", 3, 0, &rng, e));
    llm_refuse(d, "init with a 51-character prefix",
               llm_qkv_init(&no, ps, longp, 3, 2, &rng, e));
    llm_refuse(d, "init with prefix Attn",
               llm_qkv_init(&no, ps, "Attn", 3, 2, &rng, e));
    llm_refuse(d, "init with prefix attn again",
               llm_qkv_init(&no, ps, "attn", 3, 2, &rng, e));
    memset(&marker, 0x5a, sizeof marker);
    q = k = v = marker;
    if (!(LLM_TRY(d, llm_tensor_from(x, 2, fix_shape, fix_x, 6, e))
          && LLM_TRY(d, llm_tensor_zeros(xn, 2, narrow, e))
          && LLM_TRY(d, llm_tensor_zeros(s, 0, NULL, e))
          && LLM_TRY(d, llm_tape_init(tape, 16, e))
          && LLM_TRY(d, llm_tape_constant(tape, x, &stale, e))
          && LLM_TRY(d, llm_tape_reset(tape, e))
          && LLM_TRY(d, llm_tape_constant(tape, x, &xv, e))
          && LLM_TRY(d, llm_tape_constant(tape, xn, &xnv, e))
          && LLM_TRY(d, llm_tape_constant(tape, s, &sv, e))))
        return;
    nodes = tape->count;
    llm_refuse(d, "forward with no tape",
               llm_qkv_forward(&qkv, ps, NULL, xv, &q, &k, &v, e));
    llm_refuse(d, "forward with q and v one variable",
               llm_qkv_forward(&qkv, ps, tape, xv, &q, &k, &q, e));
    llm_refuse(d, "forward of a scalar",
               llm_qkv_forward(&qkv, ps, tape, sv, &q, &k, &v, e));
    llm_refuse(d, "forward of x [2, 2]",
               llm_qkv_forward(&qkv, ps, tape, xnv, &q, &k, &v, e));
    printf("  %s\n", llm_put(d, "width_message", e->message));
    llm_refuse(d, "forward of an x from before a reset",
               llm_qkv_forward(&qkv, ps, tape, stale, &q, &k, &v, e));
    far.value.weight = 7;
    llm_refuse(d, "forward with the value weight at position 7 of 3",
               llm_qkv_forward(&far, ps, tape, xv, &q, &k, &v, e));
    wide.d_k = 3;
    llm_refuse(d, "forward of projections that claim d_k 3",
               llm_qkv_forward(&wide, ps, tape, xv, &q, &k, &v, e));
    printf("  %s\n", llm_put(d, "shape_message", e->message));
    untouched = memcmp(&q, &marker, sizeof q) == 0 && memcmp(&k, &marker, sizeof k) == 0
                && memcmp(&v, &marker, sizeof v) == 0 && ps->count == count
                && tape->count == nodes;
    printf("after the refusals: outputs, list and tape untouched=%s\n",
           llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "refused calls left outputs, list and tape untouched");
}

static void setup(llm_demo *d)
{
    ps = llm_own_params(d);
    if (ps != NULL)
        (void)LLM_TRY(d, llm_params_init(ps, &d->err));
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {build_and_replay, failed_constructor,
                                            fixture, independence, leading_axes,
                                            gradient_check, refusals, NULL};
    return llm_demo_main(argc, argv, "ch26-qkv-projections", setup, sections);
}
