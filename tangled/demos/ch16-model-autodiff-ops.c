/* ch16-model-autodiff-ops -- matmul, lookup, nonlinearities, log-softmax
   and the fused loss on the tape, checked against central differences. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/tape.h"
#include "llm/tensor.h"

/* x as an exact fraction with a power-of-two denominator ("-3/8", "1", and
   "0" also for -0, which x + 0.0 turns into 0), or with 6 decimals when it is
   not one */
static const char *fraction(double x)
{
    double d = 1.0;
    int k;
    for (k = 0; k <= 20 && x * d != floor(x * d); k++)
        d *= 2.0;
    if (k > 20 || fabs(x * d) > 1e15)
        return llm_num(x, 6);
    return d == 1.0 ? llm_text("%.0f", x + 0.0) : llm_text("%.0f/%.0f", x * d, d);
}

/* "[a, b]" of n fractions when cols is 0, else "[[a, b], [c, d]]" of n rows */
static const char *fractions(const double *x, size_t n, size_t cols)
{
    const char *s = "[";
    size_t i;
    for (i = 0; i < n; i++)
        s = llm_text("%s%s%s", s, i > 0 ? ", " : "",
                     cols == 0 ? fraction(x[i]) : fractions(x + i * cols, cols, 0));
    return llm_text("%s]", s);
}

/* A refusal, traced with its code and stage */
static void refuse(llm_demo *d, const char *what, llm_status st)
{
    llm_refuse_cells(d, "cs", what, st);
}
static const double fix_e[6] = {2, 2, 1, -1, -1, 1};   /* E, [3, 2] */
static const double fix_w[4] = {1, -1, 1, -1};          /* W, [2, 2] */
static const size_t fix_ids[4] = {1, 1, 1, 2};
static const size_t fix_targets[4] = {0, 0, 0, 1};

static llm_var fix_node[3];   /* X, Z and H of the fixture's last recording */

/* Records the fixture on E and W: the rows X, the product Z, H = SiLU(Z) and
   the loss, in *loss */
static llm_status record_fixture(llm_tape *t, llm_var ve, llm_var vw, llm_var *loss,
                                 llm_error *err)
{
    static const size_t four[1] = {4};
    llm_var *n = fix_node;
    llm_status st = llm_tape_gather(t, ve, fix_ids, 1, four, &n[0], err);
    st = st != LLM_OK ? st : llm_tape_matmul(t, n[0], vw, 0, 0, &n[1], err);
    st = st != LLM_OK ? st : llm_tape_silu(t, n[1], &n[2], err);
    return st != LLM_OK ? st : llm_tape_nll_mean(t, n[2], fix_targets, 4, loss, err);
}

static void fixture(llm_demo *d)
{
    const size_t es[2] = {3, 2}, ws[2] = {2, 2};
    llm_tensor *e = llm_own_tensor(d), *w = llm_own_tensor(d);
    llm_tensor *ge = llm_own_tensor(d), *gw = llm_own_tensor(d);
    llm_tape *tape = llm_own_tape(d);
    llm_var ve, vw, vl, *n = fix_node;
    const llm_tensor *xt = NULL, *zt = NULL, *ht = NULL, *lt = NULL;
    const double *x, *dx = NULL, *dz = NULL, *dh = NULL;
    const char *loss;
    double assigned[6] = {0};
    size_t p, q, v, uses[3] = {0};
    int exact;
    if (!(LLM_TRY(d, llm_tensor_from(e, 2, es, fix_e, 6, &d->err))
          && LLM_TRY(d, llm_tensor_from(w, 2, ws, fix_w, 4, &d->err))
          && LLM_TRY(d, llm_tensor_zeros(ge, 2, es, &d->err))
          && LLM_TRY(d, llm_tensor_zeros(gw, 2, ws, &d->err))
          && LLM_TRY(d, llm_tape_init(tape, 4, &d->err))
          && LLM_TRY(d, llm_tape_leaf(tape, e, ge, &ve, &d->err))
          && LLM_TRY(d, llm_tape_leaf(tape, w, gw, &vw, &d->err))
          && LLM_TRY(d, record_fixture(tape, ve, vw, &vl, &d->err))
          && LLM_TRY(d, llm_tape_backward(tape, vl, NULL, 1, &d->err))
          && LLM_TRY(d, llm_tape_value(tape, n[0], &xt, &d->err))
          && LLM_TRY(d, llm_tape_value(tape, n[1], &zt, &d->err))
          && LLM_TRY(d, llm_tape_value(tape, n[2], &ht, &d->err))
          && LLM_TRY(d, llm_tape_value(tape, vl, &lt, &d->err))
          && LLM_TRY(d, llm_tape_adjoint(tape, n[0], &dx, &d->err))
          && LLM_TRY(d, llm_tape_adjoint(tape, n[1], &dz, &d->err))
          && LLM_TRY(d, llm_tape_adjoint(tape, n[2], &dh, &d->err))
          && llm_demo_check(d, dx && dz && dh, "X, Z and H have adjoints")))
        return;
    printf("fixture E=%s W=%s\nfixture ids=[1, 1, 1, 2] targets=[0, 0, 0, 1]\n",
           fractions(fix_e, 3, 2), fractions(fix_w, 2, 2));
    printf("tape nodes=%zu\n", tape->count);       /* new values are contiguous */
    printf("pre-activations z=%s\n", fractions(zt->data + zt->offset, 4, 2));
    exact = strcmp(fractions(zt->data + zt->offset, 4, 2),
                   "[[0, 0], [0, 0], [0, 0], [0, 0]]") == 0;
    printf("logits h=%s\n", fractions(ht->data + ht->offset, 4, 2));
    for (p = 0, q = 0, x = xt->data + xt->offset; p < 4; p++, q += 2) {
        const size_t id = fix_ids[p], tg = fix_targets[p];
        const char *xs = fractions(x + q, 2, 0), *dhs = fractions(dh + q, 2, 0);
        const char *dzs = fractions(dz + q, 2, 0), *dxs = fractions(dx + q, 2, 0);
        printf("position %zu: id=%zu target=%zu x=%s dh=%s dz=%s dx=%s\n", p, id, tg,
               xs, dhs, dzs, dxs);
        llm_row(d, "positions", llm_text("%zu", p), llm_text("%zu", id),
                llm_text("%zu", tg), xs, dhs, dzs, dxs, NULL);
        exact = exact && strcmp(dhs, tg ? "[1/8, -1/8]" : "[-1/8, 1/8]") == 0
                      && strcmp(dzs, tg ? "[1/16, -1/16]" : "[-1/16, 1/16]") == 0;
        uses[id]++;
        memcpy(assigned + 2 * id, dx + q, 2 * sizeof assigned[0]);       /* '=' */
    }
    llm_demo_check(d, exact, "every pre-activation is 0, dh is ±1/8 and dz is ±1/16");
    llm_put(d, "preact", fraction(zt->data[zt->offset]));
    llm_put(d, "dlogit", llm_text("±%s", fraction(fabs(dh[0]))));
    llm_put(d, "dpre", llm_text("±%s", fraction(fabs(dz[0]))));
    llm_put(d, "dlogit_target", fraction(dh[fix_targets[0]]));
    loss = llm_put(d, "loss", llm_num(lt->data[lt->offset], 12));
    printf("loss=%s ln2=%s\n", loss, llm_num(log(2.0), 12));
    llm_demo_check(d, strcmp(loss, "0.693147180560") == 0, "the loss is ln 2");
    printf("dW=%s\n", llm_put(d, "dW", fractions(gw->data, 2, 2)));
    llm_demo_check(d, strcmp(fractions(gw->data, 2, 2), "[[-1/4, 1/4], [1/4, -1/4]]")
                      == 0, "dW is [[-1/4, 1/4], [1/4, -1/4]]");
    for (v = 0; v < 3; v++) {
        const char *grad = fractions(ge->data + 2 * v, 2, 0);
        const char *wrong = fractions(assigned + 2 * v, 2, 0);
        printf("dE row %zu: uses=%zu grad=%s with_assignment=%s\n", v, uses[v], grad,
               wrong);
        llm_row(d, "rows", llm_text("%zu", v), fractions(fix_e + 2 * v, 2, 0),
                llm_text("%zu", uses[v]), grad, wrong, NULL);
        llm_put(d, llm_text("dE%zu", v), grad);
        if (v == 1)
            llm_put(d, "wrong_dE1", wrong);
    }
    llm_demo_check(d, strcmp(fractions(ge->data, 3, 2),
                             "[[0, 0], [-3/8, -3/8], [1/8, 1/8]]") == 0,
                   "dE is [[0, 0], [-3/8, -3/8], [1/8, 1/8]]");
}
enum op_kind { K_MATMUL, K_GATHER, K_EXP, K_LOG, K_SQRT, K_RECIPROCAL, K_SIGMOID,
               K_SILU, K_LOG_SOFTMAX, K_NLL, K_FIXTURE };

/* One operation, and its operands: of shape[j] (shape[1] NULL for one), filled
   by pattern fill */
typedef struct op_case {
    const char *name;
    enum op_kind kind;
    int ta, tb;                 /* the product's flags */
    size_t axis;                /* of log-softmax */
    const size_t *targets;      /* of the loss, one per row */
    size_t rank[2];
    const size_t *shape[2];
    int fill;
} op_case;

/* Case c on its tape, as a function of its operand wrt: a leaf with gradient g,
   or a constant while g is NULL; y and out are the last recording's output and
   its value */
typedef struct op_check {
    const op_case *c;
    llm_tape *tape;
    llm_tensor *arg[2], *g;
    size_t wrt;
    llm_var y;
    const llm_tensor *out;
} op_check;

static double weight(size_t i)
{
    return (double)((long)(i * 7 % 11) - 5) / 4.0;
}

/* Records k's operation on operands v, then the output in *y. */
static llm_status apply_case(const op_check *k, const llm_var *v, llm_var *y,
                             llm_error *err)
{
    static const size_t ids[6] = {1, 2, 1, 1, 0, 1}, ids_shape[2] = {2, 3};
    static llm_status (*const unary[])(llm_tape *, llm_var, llm_var *, llm_error *) = {
        llm_tape_exp, llm_tape_log, llm_tape_sqrt, llm_tape_reciprocal,
        llm_tape_sigmoid, llm_tape_silu};      /* K_EXP to K_SILU */
    const op_case *c = k->c;
    llm_tape *t = k->tape;
    switch (c->kind) {
    case K_MATMUL:      return llm_tape_matmul(t, v[0], v[1], c->ta, c->tb, y, err);
    case K_GATHER:      return llm_tape_gather(t, v[0], ids, 2, ids_shape, y, err);
    case K_LOG_SOFTMAX: return llm_tape_log_softmax(t, v[0], c->axis, y, err);
    case K_NLL:         return llm_tape_nll_mean(t, v[0], c->targets,
                                                 k->arg[0]->shape[0], y, err);
    case K_FIXTURE:     return record_fixture(t, v[0], v[1], y, err);   /* its loss */
    default:            return unary[c->kind - K_EXP](t, v[0], y, err);
    }
}

/* k's objective: records k's operands afresh (operand wrt from theta) and the
   operation, and sets *phi = sum_i weight(i) * y_i. */
static llm_status record_case(void *ctx, const llm_tensor *theta, double *phi,
                              llm_error *err)
{
    op_check *k = ctx;
    llm_var v[2];
    size_t i;
    llm_status st = llm_tape_reset(k->tape, err);
    for (i = 0; i < (k->c->shape[1] != NULL ? 2u : 1u) && st == LLM_OK; i++) {
        const llm_tensor *x = i == k->wrt ? theta : k->arg[i];
        st = i == k->wrt && k->g != NULL ? llm_tape_leaf(k->tape, x, k->g, &v[i], err)
                                         : llm_tape_constant(k->tape, x, &v[i], err);
    }
    st = st != LLM_OK ? st : apply_case(k, v, &k->y, err);
    st = st != LLM_OK ? st : llm_tape_value(k->tape, k->y, &k->out, err);
    for (*phi = 0.0, i = 0; st == LLM_OK && i < k->out->size; i++)
        *phi += weight(i) * k->out->data[k->out->offset + i];     /* it is contiguous */
    return st;
}

/* Records k with a leaf whose gradient g starts at zero and runs a pass that
   keeps the graph, seeded with s (NULL: the weights); g is k's only while it
   records, the objective records constants. */
static int backward_case(llm_demo *d, op_check *k, const double *s, llm_tensor *g)
{
    const llm_tensor *theta = k->arg[k->wrt];
    llm_tensor *seed = llm_own_tensor(d);
    double phi;
    size_t i;
    int ok;
    k->g = g;
    ok = LLM_TRY(d, llm_tensor_zeros(g, theta->rank, theta->shape, &d->err))
         && LLM_TRY(d, record_case(k, theta, &phi, &d->err))
         && LLM_TRY(d, llm_tensor_zeros(seed, k->out->rank, k->out->shape, &d->err));
    k->g = NULL;
    for (i = 0; ok && i < seed->size; i++)
        seed->data[i] = s != NULL ? s[i] : weight(i);
    return ok && LLM_TRY(d, llm_tape_backward(k->tape, k->y, seed, 1, &d->err));
}
/* Checks every coordinate of k's operand wrt, named name, against central
   differences; prints and traces one row. */
static void run_case(llm_demo *d, op_check *k, const char *name, size_t *coordinates)
{
    static const size_t every[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    llm_tensor *theta = k->arg[k->wrt], *g = llm_own_tensor(d);
    const char *shape = llm_sizes(theta->shape, theta->rank), *worst_text, *verdict;
    const char *count = llm_text("%zu of %zu", theta->size, theta->size);
    double worst = 0.0;
    size_t failures = 0;
    if (!(llm_demo_check(d, theta->size <= 12, "an operand has at most 12 coordinates")
          && backward_case(d, k, NULL, g)
          && LLM_TRY(d, llm_gradient_check(record_case, k, theta, g->data, every,
                                           theta->size, 1e-5, 1e-6, &worst, &failures,
                                           &d->err))))
        return;
    worst_text = llm_text("%.3e", worst);
    verdict = failures == 0 ? "pass" : "fail";
    printf("check %s d/d%s shape=%s coordinates=%s worst=%s verdict=%s\n", k->c->name,
           name, shape, count, worst_text, verdict);
    llm_row(d, "checks", k->c->name, name, shape, count, worst_text, verdict, NULL);
    llm_demo_check(d, failures == 0,
                   llm_text("%s d/d%s matches central differences", k->c->name, name));
    *coordinates += theta->size;
}
/* Operand j of case c: E or W of the fixture, or element i after pattern fill:
   0 in [-4/3, 4/3], 1 positive, 2 away from zero with both signs, 3 in [-8, 8]. */
static llm_status operand(const op_case *c, size_t j, llm_tensor *t, llm_error *err)
{
    size_t i;
    llm_status st = llm_tensor_zeros(t, c->rank[j], c->shape[j], err);
    for (i = 0; st == LLM_OK && i < t->size; i++) {
        const double k = (double)(i * 5 % 9);
        t->data[i] = c->kind == K_FIXTURE ? (j == 0 ? fix_e : fix_w)[i]
                   : c->fill == 0 ? (k - 4.0) / 3.0
                   : c->fill == 1 ? 0.25 + 0.25 * k
                   : c->fill == 2 ? (i % 2 ? -1.0 : 1.0) * (0.5 + 0.25 * k)
                   : 2.0 * (k - 4.0);
    }
    return st;
}

static void every_vjp(llm_demo *d)
{
    static const size_t targets[3] = {1, 3, 0};
    static const size_t s223[3] = {2, 2, 3}, s232[3] = {2, 3, 2}, s123[3] = {1, 2, 3};
    static const size_t s32[2] = {3, 2}, s23[2] = {2, 3}, s34[2] = {3, 4};
    static const size_t s22[2] = {2, 2};
    static const op_case table[] = {
        {"matmul A B", K_MATMUL, 0, 0, 0, NULL, {3, 2}, {s223, s32}, 0},
        {"matmul A^T B", K_MATMUL, 1, 0, 0, NULL, {2, 3}, {s32, s232}, 0},
        {"matmul A B^T", K_MATMUL, 0, 1, 0, NULL, {3, 3}, {s223, s123}, 0},
        {"matmul A^T B^T", K_MATMUL, 1, 1, 0, NULL, {3, 2}, {s232, s23}, 0},
        {"gather", K_GATHER, 0, 0, 0, NULL, {2}, {s32}, 0},
        {"exp", K_EXP, 0, 0, 0, NULL, {2}, {s23}, 0},
        {"log", K_LOG, 0, 0, 0, NULL, {2}, {s23}, 1},
        {"sqrt", K_SQRT, 0, 0, 0, NULL, {2}, {s23}, 1},
        {"reciprocal", K_RECIPROCAL, 0, 0, 0, NULL, {2}, {s23}, 2},
        {"sigmoid", K_SIGMOID, 0, 0, 0, NULL, {2}, {s23}, 3},
        {"silu", K_SILU, 0, 0, 0, NULL, {2}, {s23}, 3},
        {"log_softmax axis 1", K_LOG_SOFTMAX, 0, 0, 1, NULL, {2}, {s23}, 0},
        {"log_softmax axis 0", K_LOG_SOFTMAX, 0, 0, 0, NULL, {2}, {s23}, 0},
        {"nll_mean", K_NLL, 0, 0, 0, targets, {2}, {s34}, 0},
        {"the fixture", K_FIXTURE, 0, 0, 0, NULL, {2, 2}, {s32, s22}, 0},
    };
    op_check k = {.tape = llm_own_tape(d)};
    size_t i, j, n, rows = 0, coordinates = 0;
    if (!LLM_TRY(d, llm_tape_init(k.tape, 8, &d->err)))
        return;
    for (i = 0; d->ok && i < sizeof table / sizeof table[0]; i++) {
        const op_case *c = k.c = &table[i];
        n = c->shape[1] != NULL ? 2 : 1;
        for (j = 0; j < n; j++)
            (void)LLM_TRY(d, operand(c, j, k.arg[j] = llm_own_tensor(d), &d->err));
        for (k.wrt = 0; d->ok && k.wrt < n; k.wrt++, rows++)
            run_case(d, &k, c->kind == K_FIXTURE ? (k.wrt == 0 ? "E" : "W")
                            : c->kind == K_GATHER ? "table"
                            : n == 1 ? "x" : k.wrt == 0 ? "A" : "B", &coordinates);
    }
    printf("every VJP: checks=%s", llm_put(d, "check_rows", llm_text("%zu", rows)));
    printf(" coordinates=%s all_pass=%s\n",
           llm_put(d, "coordinates", llm_text("%zu", coordinates)), llm_yes(d->ok));
}
/* Records op on the leaf x of the given shape, runs a pass seeded with s, and
   prints and traces the value and the gradient. */
static void extreme(llm_demo *d, const char *name, enum op_kind kind, size_t rank,
                    const size_t *shape, const double *x, const double *s,
                    const size_t *targets)
{
    const op_case c = {.name = name, .kind = kind, .axis = rank - 1,
                       .targets = targets};
    op_check k = {.c = &c, .tape = llm_own_tape(d), .arg = {llm_own_tensor(d)}};
    llm_tensor *g = llm_own_tensor(d);
    const char *value, *grad;
    size_t stride[LLM_MAX_RANK], n = 0, i;
    int finite = 1;
    if (!(LLM_TRY(d, llm_row_major(rank, shape, stride, &n, &d->err))
          && LLM_TRY(d, llm_tensor_from(k.arg[0], rank, shape, x, n, &d->err))
          && LLM_TRY(d, llm_tape_init(k.tape, 4, &d->err))
          && backward_case(d, &k, s, g)))
        return;
    for (i = 0; i < k.out->size + g->size; i++)     /* the value, then the gradient */
        finite = finite && isfinite(i < k.out->size ? k.out->data[k.out->offset + i]
                                                    : g->data[i - k.out->size]);
    value = fractions(k.out->data + k.out->offset, k.out->size, 0);
    grad = fractions(g->data, g->size, 0);
    printf("extreme %s\n  value=%s grad=%s finite=%s\n", name, value, grad,
           llm_yes(finite));
    llm_row(d, "extremes", name, value, grad, llm_yes(finite), NULL);
    llm_demo_check(d, finite, llm_text("%s stays finite", name));
}

static void extremes(llm_demo *d)
{
    static const double logits[4] = {1000, -1000, -1000, 1000}, one[1] = {1};
    static const double spread[3] = {1000, -1000, 0}, pick[3] = {0, 1, 0};
    static const double wide[2] = {-1000, 1000}, ones[2] = {1, 1};
    static const size_t targets[2] = {1, 1}, s22[2] = {2, 2}, three[1] = {3};
    static const size_t two[1] = {2};
    extreme(d, "nll_mean of [[1000, -1000], [-1000, 1000]], targets [1, 1]", K_NLL, 2,
            s22, logits, one, targets);
    extreme(d, "log_softmax of [1000, -1000, 0], seed [0, 1, 0]", K_LOG_SOFTMAX, 1,
            three, spread, pick, NULL);
    extreme(d, "sigmoid of [-1000, 1000]", K_SIGMOID, 1, two, wide, ones, NULL);
    extreme(d, "silu of [-1000, 1000]", K_SILU, 1, two, wide, ones, NULL);
    /* the textbook derivative e^-x / (1 + e^-x)^2 at x = -1000 */
    printf("textbook sigmoid derivative at -1000=%s\n", llm_put(d, "naive_sigmoid_grad",
           llm_num(exp(1000.0) / ((1.0 + exp(1000.0)) * (1.0 + exp(1000.0))), 6)));
}
static void refusals(llm_demo *d)
{
    static const size_t bad_ids[4] = {0, 1, 3, 2}, four[1] = {4}, one[1] = {1};
    static const size_t deep[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    static const size_t targets[3] = {0, 2, 1}, s32[2] = {3, 2};
    static const double special[6] = {0, -1, 1000, 1e-320, 2, 4};
    static const double half[6] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5};   /* must survive */
    llm_tape *t = llm_own_tape(d);
    llm_error *err = &d->err;
    llm_tensor *e = llm_own_tensor(d), *ge = llm_own_tensor(d), *s = llm_own_tensor(d);
    llm_tensor *sc[6], *gq = llm_own_tensor(d);
    llm_var ve, vs, vc[6], vq, vy, stale, id = {77, 77};
    size_t count, i;
    int unchanged;
    if (!(LLM_TRY(d, llm_tensor_from(e, 2, s32, fix_e, 6, err))
          && LLM_TRY(d, llm_tensor_from(ge, 2, s32, half, 6, err))
          && LLM_TRY(d, llm_tensor_from(s, 0, NULL, special + 4, 1, err))
          && LLM_TRY(d, llm_tape_init(t, 4, err))
          && LLM_TRY(d, llm_tape_leaf(t, e, ge, &stale, err))
          && LLM_TRY(d, llm_tape_reset(t, err))      /* stale: from before */
          && LLM_TRY(d, llm_tape_leaf(t, e, ge, &ve, err))
          && LLM_TRY(d, llm_tape_constant(t, s, &vs, err))))
        return;
    for (i = 0; i < 6; i++) {
        sc[i] = llm_own_tensor(d);
        if (!(LLM_TRY(d, llm_tensor_from(sc[i], 1, one, special + i, 1, err))
              && LLM_TRY(d, llm_tape_constant(t, sc[i], &vc[i], err))))
            return;
    }
    count = t->count;
    refuse(d, "gather ID 3 from a table of 3 rows",
           llm_tape_gather(t, ve, bad_ids, 1, four, &id, err));
    printf("  %s\n", llm_put(d, "gather_message", d->err.message));
    refuse(d, "gather from a scalar table",
           llm_tape_gather(t, vs, bad_ids, 1, one, &id, err));
    refuse(d, "gather IDs of rank 8 from a table of rank 2",
           llm_tape_gather(t, ve, bad_ids, 8, deep, &id, err));
    refuse(d, "gather 4 positions without IDs",
           llm_tape_gather(t, ve, NULL, 1, four, &id, err));
    refuse(d, "log of 0", llm_tape_log(t, vc[0], &id, err));
    printf("  %s\n", llm_put(d, "log_message", d->err.message));
    refuse(d, "log of -1", llm_tape_log(t, vc[1], &id, err));
    refuse(d, "sqrt of -1", llm_tape_sqrt(t, vc[1], &id, err));
    refuse(d, "reciprocal of 0", llm_tape_reciprocal(t, vc[0], &id, err));
    refuse(d, "exp of 1000", llm_tape_exp(t, vc[2], &id, err));
    refuse(d, "reciprocal of 1e-320", llm_tape_reciprocal(t, vc[3], &id, err));
    refuse(d, "silu without a place for the result", llm_tape_silu(t, ve, NULL, err));
    refuse(d, "matmul [3, 2] by [3, 2]", llm_tape_matmul(t, ve, ve, 0, 0, &id, err));
    refuse(d, "matmul of a vector", llm_tape_matmul(t, vc[4], ve, 0, 0, &id, err));
    refuse(d, "matmul with an operand recorded before a reset",
           llm_tape_matmul(t, stale, ve, 1, 0, &id, err));
    refuse(d, "log_softmax along axis 2 of a matrix",
           llm_tape_log_softmax(t, ve, 2, &id, err));
    refuse(d, "nll_mean target 2 of 2 classes",
           llm_tape_nll_mean(t, ve, targets, 3, &id, err));
    refuse(d, "nll_mean with 2 targets for 3 rows",
           llm_tape_nll_mean(t, ve, targets, 2, &id, err));
    unchanged = memcmp(ge->data, half, sizeof half) == 0;
    printf("after the refusals: nodes=%zu (before: %zu) gradients untouched=%s output "
           "untouched=%s\n", t->count, count, llm_yes(unchanged),
           llm_yes(id.id == 77 && id.epoch == 77));
    unchanged = unchanged && t->count == count && id.id == 77 && id.epoch == 77;
    llm_put(d, "refused_unchanged", llm_yes(llm_demo_check(d, unchanged,
            "a refused operation records no node and writes no gradient or output")));
    if (!(LLM_TRY(d, llm_tensor_from(gq, 1, one, half, 1, err))   /* sc[0] holds 0 */
          && LLM_TRY(d, llm_tape_leaf(t, sc[0], gq, &vq, err))
          && LLM_TRY(d, llm_tape_sqrt(t, vq, &vy, err))))
        return;
    refuse(d, "backward through sqrt(0)", llm_tape_backward(t, vy, sc[4], 1, err));
    printf("  %s\n", d->err.message);
    printf("gradient after the refused pass=%s\n",
           gq->data[0] == 0.5 ? "untouched" : "changed");
    llm_demo_check(d, gq->data[0] == 0.5, "the refused pass changed no gradient");
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {fixture, every_vjp, extremes, refusals,
                                            NULL};
    return llm_demo_main(argc, argv, "ch16-model-autodiff-ops", NULL, sections);
}
