/* ch16-model-autodiff-ops -- matmul, lookup, nonlinearities, log-softmax
   and the fused loss on the tape, checked against central differences. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/tape.h"
#include "llm/tensor.h"

/* x as an exact fraction with a power-of-two denominator ("-3/8", "0",
   "1"), or with 6 decimals when it is not one */
static char *fraction(char *buf, size_t size, double x)
{
    double d = 1.0;
    int k;
    for (k = 0; k <= 20 && x * d != floor(x * d); k++)
        d *= 2.0;
    if (k > 20 || fabs(x * d) > 1e15)
        return llm_fmt(buf, size, x, 6);
    if (d == 1.0)
        snprintf(buf, size, "%.0f", x == 0.0 ? 0.0 : x);
    else
        snprintf(buf, size, "%.0f/%.0f", x * d, d);
    return buf;
}

/* "[a, b, ...]" of n fractions */
static char *fractions(char *buf, size_t size, const double *x, size_t n)
{
    size_t used = 0, i;
    char one[32];
    buf[0] = '\0';
    for (i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s%s", i == 0 ? "[" : "",
                                 fraction(one, sizeof one, x[i]), i + 1 == n ? "]" : ", ");
    if (n == 0)
        snprintf(buf, size, "[]");
    return buf;
}

/* "[[a, b], [c, d]]": a rows x cols matrix of fractions */
static char *fraction_rows(char *buf, size_t size, const double *x, size_t rows, size_t cols)
{
    size_t used = 0, i;
    char one[128];
    buf[0] = '\0';
    for (i = 0; i < rows && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s%s", i == 0 ? "[" : "",
                                 fractions(one, sizeof one, x + i * cols, cols),
                                 i + 1 == rows ? "]" : ", ");
    return buf;
}
static const double fix_e[6] = {2, 2, 1, -1, -1, 1};   /* E, [3, 2] */
static const double fix_w[4] = {1, -1, 1, -1};          /* W, [2, 2] */
static const size_t fix_ids[4] = {1, 1, 1, 2};
static const size_t fix_targets[4] = {0, 0, 0, 1};

/* n doubles of node v's adjoint from the last pass that kept the graph */
static llm_status adjoint_of(const llm_tape *tape, llm_var v, double *out, size_t n,
                             llm_error *err)
{
    const double *a = NULL;
    llm_status st = llm_tape_adjoint(tape, v, &a, err);
    if (st == LLM_OK && a == NULL)
        return llm_fail(err, LLM_ERR_TAPE, "ch16.adjoint", "node %zu has no adjoint", v.id);
    if (st == LLM_OK)
        memcpy(out, a, n * sizeof *out);
    return st;
}

static int fixture(llm_trace *tr)
{
    const size_t es[2] = {3, 2}, ws[2] = {2, 2}, four[1] = {4};
    llm_tensor e, w, ge, gw;
    llm_tape tape;
    llm_var ve, vw, vx, vz, vh, vl;
    const llm_tensor *xt = NULL, *zt = NULL, *ht = NULL, *lt = NULL;
    llm_error err;
    double loss = 0.0, x[8], z[8], h[8], dh[8], dz[8], dx[8], assigned[6] = {0};
    size_t p, v, uses[3] = {0};
    char buf[256], cell[7][96];
    int ok;

    memset(&tape, 0, sizeof tape);
    memset(&e, 0, sizeof e);
    memset(&w, 0, sizeof w);
    memset(&ge, 0, sizeof ge);
    memset(&gw, 0, sizeof gw);
    ok = llm_demo_ok("ch16", llm_tensor_from(&e, 2, es, fix_e, 6, &err), &err)
      && llm_demo_ok("ch16", llm_tensor_from(&w, 2, ws, fix_w, 4, &err), &err)
      && llm_demo_ok("ch16", llm_tensor_zeros(&ge, 2, es, &err), &err)
      && llm_demo_ok("ch16", llm_tensor_zeros(&gw, 2, ws, &err), &err)
      && llm_demo_ok("ch16", llm_tape_init(&tape, 4, &err), &err)
      && llm_demo_ok("ch16", llm_tape_leaf(&tape, &e, &ge, &ve, &err), &err)
      && llm_demo_ok("ch16", llm_tape_leaf(&tape, &w, &gw, &vw, &err), &err)
      && llm_demo_ok("ch16", llm_tape_gather(&tape, ve, fix_ids, 1, four, &vx, &err), &err)
      && llm_demo_ok("ch16", llm_tape_matmul(&tape, vx, vw, 0, 0, &vz, &err), &err)
      && llm_demo_ok("ch16", llm_tape_silu(&tape, vz, &vh, &err), &err)
      && llm_demo_ok("ch16", llm_tape_nll_mean(&tape, vh, fix_targets, 4, &vl, &err), &err)
      && llm_demo_ok("ch16", llm_tape_backward(&tape, vl, NULL, 1, &err), &err)
      && llm_demo_ok("ch16", llm_tape_value(&tape, vx, &xt, &err), &err)
      && llm_demo_ok("ch16", llm_tape_value(&tape, vz, &zt, &err), &err)
      && llm_demo_ok("ch16", llm_tape_value(&tape, vh, &ht, &err), &err)
      && llm_demo_ok("ch16", llm_tape_value(&tape, vl, &lt, &err), &err)
      && llm_demo_ok("ch16", adjoint_of(&tape, vh, dh, 8, &err), &err)
      && llm_demo_ok("ch16", adjoint_of(&tape, vz, dz, 8, &err), &err)
      && llm_demo_ok("ch16", adjoint_of(&tape, vx, dx, 8, &err), &err);
    if (ok) {                               /* the new values are contiguous */
        memcpy(x, xt->data + xt->offset, sizeof x);
        memcpy(z, zt->data + zt->offset, sizeof z);
        memcpy(h, ht->data + ht->offset, sizeof h);
        loss = lt->data[lt->offset];
        printf("fixture E=%s W=%s\nfixture ids=[1, 1, 1, 2] targets=[0, 0, 0, 1]\n",
               fraction_rows(cell[0], sizeof cell[0], fix_e, 3, 2),
               fraction_rows(cell[1], sizeof cell[1], fix_w, 2, 2));
        printf("tape nodes=%zu\n", tape.count);
        printf("pre-activations z=%s\n", fraction_rows(buf, sizeof buf, z, 4, 2));
        printf("logits h=%s\n", fraction_rows(buf, sizeof buf, h, 4, 2));
        for (p = 0; p < 4; p++) {
            const char *cells[7] = {cell[0], cell[1], cell[2], cell[3], cell[4], cell[5], cell[6]};
            snprintf(cell[0], sizeof cell[0], "%zu", p);
            snprintf(cell[1], sizeof cell[1], "%zu", fix_ids[p]);
            snprintf(cell[2], sizeof cell[2], "%zu", fix_targets[p]);
            fractions(cell[3], sizeof cell[3], x + 2 * p, 2);
            fractions(cell[4], sizeof cell[4], dh + 2 * p, 2);
            fractions(cell[5], sizeof cell[5], dz + 2 * p, 2);
            fractions(cell[6], sizeof cell[6], dx + 2 * p, 2);
            printf("position %s: id=%s target=%s x=%s dh=%s dz=%s dx=%s\n", cell[0], cell[1],
                   cell[2], cell[3], cell[4], cell[5], cell[6]);
            llm_trace_row(tr, "positions", 7, cells);
            ok = ok && z[2 * p] == 0.0 && z[2 * p + 1] == 0.0;
            for (v = 0; v < 2; v++) {
                const double sign = v == fix_targets[p] ? -1.0 : 1.0;
                ok = ok && dh[2 * p + v] == sign * 0.125 && dz[2 * p + v] == sign * 0.0625;
            }
            uses[fix_ids[p]]++;
            memcpy(assigned + 2 * fix_ids[p], dx + 2 * p, 2 * sizeof assigned[0]);  /* '=' */
        }
        llm_trace_value(tr, "preact", fraction(buf, sizeof buf, z[0]));
        snprintf(buf, sizeof buf, "±%s", fraction(cell[0], sizeof cell[0], fabs(dh[0])));
        llm_trace_value(tr, "dlogit", buf);
        snprintf(buf, sizeof buf, "±%s", fraction(cell[0], sizeof cell[0], fabs(dz[0])));
        llm_trace_value(tr, "dpre", buf);
        llm_trace_value(tr, "dlogit_target", fraction(buf, sizeof buf, dh[fix_targets[0]]));
        printf("loss=%s ln2=%s\n", llm_fmt(cell[0], sizeof cell[0], loss, 12),
               llm_fmt(cell[1], sizeof cell[1], log(2.0), 12));
        llm_trace_value(tr, "loss", cell[0]);
        ok = ok && strcmp(cell[0], "0.693147180560") == 0;
        printf("dW=%s\n", fraction_rows(buf, sizeof buf, gw.data, 2, 2));
        llm_trace_value(tr, "dW", buf);
        ok = ok && gw.data[0] == -0.25 && gw.data[1] == 0.25 && gw.data[2] == 0.25
                && gw.data[3] == -0.25;
        for (v = 0; v < 3; v++) {
            const char *cells[5] = {cell[0], cell[1], cell[2], cell[3], cell[4]};
            char key[16];
            snprintf(cell[0], sizeof cell[0], "%zu", v);
            fractions(cell[1], sizeof cell[1], fix_e + 2 * v, 2);
            snprintf(cell[2], sizeof cell[2], "%zu", uses[v]);
            fractions(cell[3], sizeof cell[3], ge.data + 2 * v, 2);
            fractions(cell[4], sizeof cell[4], assigned + 2 * v, 2);
            printf("dE row %s: uses=%s grad=%s with_assignment=%s\n", cell[0], cell[2], cell[3],
                   cell[4]);
            llm_trace_row(tr, "rows", 5, cells);
            snprintf(key, sizeof key, "dE%zu", v);
            llm_trace_value(tr, key, cell[3]);
            if (v == 1)
                llm_trace_value(tr, "wrong_dE1", cell[4]);
        }
        ok = ok && ge.data[0] == 0.0 && ge.data[1] == 0.0 && ge.data[2] == -0.375
                && ge.data[3] == -0.375 && ge.data[4] == 0.125 && ge.data[5] == 0.125;
    }
    llm_tape_free(&tape);
    llm_tensor_free(&e);
    llm_tensor_free(&w);
    llm_tensor_free(&ge);
    llm_tensor_free(&gw);
    return ok;
}
enum op_kind { K_MATMUL, K_GATHER, K_EXP, K_LOG, K_SQRT, K_RECIPROCAL, K_SIGMOID, K_SILU,
               K_LOG_SOFTMAX, K_NLL, K_FIXTURE };

/* One operation with its operands; the objective is sum_i probe_i * y_i for
   the output y, as a function of operand wrt. */
typedef struct op_case {
    const char *name, *wrt_name;
    enum op_kind kind;
    const llm_tensor *arg[2];
    size_t nargs, wrt;
    int ta, tb;
    size_t axis;
    const size_t *index, *index_shape;  /* IDs of a lookup, or targets */
    size_t index_rank, nindex;
    llm_tape *tape;
} op_case;

static double weight(size_t i)
{
    return (double)((long)(i * 7 % 11) - 5) / 4.0;
}

/* Records c's operation on operands v, then the output in *y. */
static llm_status apply_case(const op_case *c, const llm_var *v, llm_var *y, llm_error *err)
{
    llm_tape *t = c->tape;
    llm_var a, b;
    llm_status st;
    switch (c->kind) {
    case K_MATMUL:      return llm_tape_matmul(t, v[0], v[1], c->ta, c->tb, y, err);
    case K_GATHER:      return llm_tape_gather(t, v[0], c->index, c->index_rank,
                                               c->index_shape, y, err);
    case K_EXP:         return llm_tape_exp(t, v[0], y, err);
    case K_LOG:         return llm_tape_log(t, v[0], y, err);
    case K_SQRT:        return llm_tape_sqrt(t, v[0], y, err);
    case K_RECIPROCAL:  return llm_tape_reciprocal(t, v[0], y, err);
    case K_SIGMOID:     return llm_tape_sigmoid(t, v[0], y, err);
    case K_SILU:        return llm_tape_silu(t, v[0], y, err);
    case K_LOG_SOFTMAX: return llm_tape_log_softmax(t, v[0], c->axis, y, err);
    case K_NLL:         return llm_tape_nll_mean(t, v[0], c->index, c->nindex, y, err);
    default:                                   /* the whole fixture */
        st = llm_tape_gather(t, v[0], fix_ids, 1, c->index_shape, &a, err);
        if (st == LLM_OK)
            st = llm_tape_matmul(t, a, v[1], 0, 0, &b, err);
        if (st == LLM_OK)
            st = llm_tape_silu(t, b, &a, err);
        return st == LLM_OK ? llm_tape_nll_mean(t, a, fix_targets, 4, y, err) : st;
    }
}

/* Records the operands (operand wrt from theta, as a leaf with gradient g
   when g is not NULL) and the operation. */
static llm_status record_case(const op_case *c, const llm_tensor *theta, llm_tensor *g,
                              llm_var *y, llm_error *err)
{
    llm_var v[2];
    size_t k;
    llm_status st = LLM_OK;
    if ((st = llm_tape_reset(c->tape, err)) != LLM_OK)
        return st;
    for (k = 0; k < c->nargs && st == LLM_OK; k++) {
        const llm_tensor *x = k == c->wrt ? theta : c->arg[k];
        st = k == c->wrt && g != NULL ? llm_tape_leaf(c->tape, x, g, &v[k], err)
                                      : llm_tape_constant(c->tape, x, &v[k], err);
    }
    return st == LLM_OK ? apply_case(c, v, y, err) : st;
}

static llm_status case_objective(void *ctx, const llm_tensor *theta, double *value,
                                 llm_error *err)
{
    const op_case *c = ctx;
    const llm_tensor *out = NULL;
    llm_var y;
    double s = 0.0;
    size_t i;
    llm_status st = record_case(c, theta, NULL, &y, err);
    if (st == LLM_OK)
        st = llm_tape_value(c->tape, y, &out, err);
    if (st != LLM_OK)
        return st;
    for (i = 0; i < out->size; i++)                 /* the output is contiguous */
        s += weight(i) * out->data[out->offset + i];
    *value = s;
    return LLM_OK;
}

/* The tape's gradient of the objective: backward from y seeded with the
   probe weights. */
static llm_status case_gradient(const op_case *c, llm_tensor *g, llm_error *err)
{
    const llm_tensor *theta = c->arg[c->wrt], *out = NULL;
    llm_tensor seed;
    llm_var y;
    size_t i;
    llm_status st = llm_tensor_zeros(g, theta->rank, theta->shape, err);
    if (st == LLM_OK)
        st = record_case(c, theta, g, &y, err);
    if (st == LLM_OK)
        st = llm_tape_value(c->tape, y, &out, err);
    if (st == LLM_OK)
        st = llm_tensor_zeros(&seed, out->rank, out->shape, err);
    if (st != LLM_OK)
        return st;
    for (i = 0; i < seed.size; i++)
        seed.data[i] = weight(i);
    st = llm_tape_backward(c->tape, y, &seed, 0, err);
    llm_tensor_free(&seed);
    return st;
}
/* Checks every coordinate of c's operand wrt (theta, perturbed in place and
   restored) against central differences; prints and traces one row. */
static int run_case(llm_trace *tr, op_case *c, llm_tensor *theta, size_t *worst_rows)
{
    const double h = 1e-5, tol = 1e-6;
    llm_tensor g;
    llm_error err;
    size_t *coords = NULL, failures = 0, i;
    double worst = 0.0;
    char cell[4][64];
    const char *cells[6] = {c->name, c->wrt_name, cell[0], cell[1], cell[2], cell[3]};
    int ok;

    memset(&g, 0, sizeof g);
    c->arg[c->wrt] = theta;
    coords = malloc(theta->size * sizeof *coords);
    ok = coords != NULL && llm_demo_ok("ch16", case_gradient(c, &g, &err), &err);
    for (i = 0; ok && i < theta->size; i++)
        coords[i] = i;                                 /* every coordinate */
    ok = ok && llm_demo_ok("ch16", llm_gradient_check(case_objective, c, theta, g.data, coords,
                                                      theta->size, h, tol, &worst, &failures,
                                                      &err), &err);
    llm_fmt_sizes(cell[0], sizeof cell[0], theta->shape, theta->rank);
    snprintf(cell[1], sizeof cell[1], "%zu of %zu", ok ? theta->size : 0, theta->size);
    snprintf(cell[2], sizeof cell[2], "%.3e", worst);
    snprintf(cell[3], sizeof cell[3], "%s", ok && failures == 0 ? "pass" : "fail");
    printf("check %s d/d%s shape=%s coordinates=%s worst=%s verdict=%s\n", c->name,
           c->wrt_name, cell[0], cell[1], cell[2], cell[3]);
    llm_trace_row(tr, "checks", 6, cells);
    *worst_rows += ok ? theta->size : 0;
    free(coords);
    llm_tensor_free(&g);
    return ok && failures == 0;
}
/* A new tensor of the given shape whose element i follows one of four
   patterns: 0 in [-4/3, 4/3], 1 positive, 2 away from zero with both signs,
   3 in [-8, 8]. */
static llm_status pattern(llm_tensor *t, size_t rank, const size_t *shape, int kind,
                          llm_error *err)
{
    size_t i;
    llm_status st = llm_tensor_zeros(t, rank, shape, err);
    for (i = 0; st == LLM_OK && i < t->size; i++) {
        const double k = (double)(i * 5 % 9);
        t->data[i] = kind == 0 ? (k - 4.0) / 3.0
                   : kind == 1 ? 0.25 + 0.25 * k
                   : kind == 2 ? (i % 2 ? -1.0 : 1.0) * (0.5 + 0.25 * k)
                   : 2.0 * (k - 4.0);
    }
    return st;
}

static int every_vjp(llm_trace *tr)
{
    static const size_t ids[6] = {1, 2, 1, 1, 0, 1}, ids_shape[2] = {2, 3};
    static const size_t targets[3] = {1, 3, 0}, four[1] = {4};
    static const size_t s223[3] = {2, 2, 3}, s232[3] = {2, 3, 2}, s123[3] = {1, 2, 3};
    static const size_t s32[2] = {3, 2}, s23[2] = {2, 3}, s34[2] = {3, 4}, s22[2] = {2, 2};
    static const struct {
        const char *name;
        enum op_kind kind;
        int ta, tb;
        size_t rank[2];
        const size_t *shape[2];
        int fill;
        size_t nargs, axis;
    } table[] = {
        {"matmul A B", K_MATMUL, 0, 0, {3, 2}, {s223, s32}, 0, 2, 0},
        {"matmul A^T B", K_MATMUL, 1, 0, {2, 3}, {s32, s232}, 0, 2, 0},
        {"matmul A B^T", K_MATMUL, 0, 1, {3, 3}, {s223, s123}, 0, 2, 0},
        {"matmul A^T B^T", K_MATMUL, 1, 1, {3, 2}, {s232, s23}, 0, 2, 0},
        {"gather", K_GATHER, 0, 0, {2, 0}, {s32, NULL}, 0, 1, 0},
        {"exp", K_EXP, 0, 0, {2, 0}, {s23, NULL}, 0, 1, 0},
        {"log", K_LOG, 0, 0, {2, 0}, {s23, NULL}, 1, 1, 0},
        {"sqrt", K_SQRT, 0, 0, {2, 0}, {s23, NULL}, 1, 1, 0},
        {"reciprocal", K_RECIPROCAL, 0, 0, {2, 0}, {s23, NULL}, 2, 1, 0},
        {"sigmoid", K_SIGMOID, 0, 0, {2, 0}, {s23, NULL}, 3, 1, 0},
        {"silu", K_SILU, 0, 0, {2, 0}, {s23, NULL}, 3, 1, 0},
        {"log_softmax axis 1", K_LOG_SOFTMAX, 0, 0, {2, 0}, {s23, NULL}, 0, 1, 1},
        {"log_softmax axis 0", K_LOG_SOFTMAX, 0, 0, {2, 0}, {s23, NULL}, 0, 1, 0},
        {"nll_mean", K_NLL, 0, 0, {2, 0}, {s34, NULL}, 0, 1, 0},
        {"the fixture", K_FIXTURE, 0, 0, {2, 2}, {s32, s22}, 0, 2, 0},
    };
    static const char *const names[2] = {"A", "B"};
    llm_tape tape;
    llm_tensor x[2];
    llm_error err;
    size_t i, k, rows = 0, coordinates = 0;
    char buf[64];
    int ok = llm_demo_ok("ch16", llm_tape_init(&tape, 8, &err), &err);

    for (i = 0; ok && i < sizeof table / sizeof table[0]; i++) {
        op_case c;
        memset(&c, 0, sizeof c);
        memset(x, 0, sizeof x);
        c.name = table[i].name;
        c.kind = table[i].kind;
        c.ta = table[i].ta;
        c.tb = table[i].tb;
        c.axis = table[i].axis;
        c.nargs = table[i].nargs;
        c.tape = &tape;
        c.index = c.kind == K_GATHER ? ids : targets;
        c.index_shape = c.kind == K_GATHER ? ids_shape : four;
        c.index_rank = c.kind == K_GATHER ? 2 : 1;
        c.nindex = c.kind == K_GATHER ? 6 : 3;
        for (k = 0; ok && k < c.nargs; k++)
            ok = llm_demo_ok("ch16",
                             pattern(&x[k], table[i].rank[k], table[i].shape[k],
                                     c.kind == K_FIXTURE ? -1 : table[i].fill, &err), &err);
        if (ok && c.kind == K_FIXTURE) {         /* E and W of the fixture */
            memcpy(x[0].data, fix_e, sizeof fix_e);
            memcpy(x[1].data, fix_w, sizeof fix_w);
        }
        for (k = 0; ok && k < c.nargs; k++)
            c.arg[k] = &x[k];
        for (k = 0; ok && k < c.nargs; k++) {
            c.wrt = k;
            c.wrt_name = c.kind == K_FIXTURE ? (k == 0 ? "E" : "W")
                       : c.kind == K_GATHER ? "table" : c.nargs == 1 ? "x" : names[k];
            ok = run_case(tr, &c, &x[k], &coordinates);
            rows++;
        }
        llm_tensor_free(&x[0]);
        llm_tensor_free(&x[1]);
    }
    llm_tape_free(&tape);
    printf("every VJP: checks=%zu coordinates=%zu all_pass=%s\n", rows, coordinates,
           ok ? "yes" : "no");
    snprintf(buf, sizeof buf, "%zu", rows);
    llm_trace_value(tr, "check_rows", buf);
    snprintf(buf, sizeof buf, "%zu", coordinates);
    llm_trace_value(tr, "coordinates", buf);
    return ok;
}
/* Records op on x (a leaf with gradient g), backward with seed s, and prints
   and traces the value and the gradient. */
static int extreme(llm_trace *tr, const char *name, enum op_kind kind, size_t rank,
                   const size_t *shape, const double *x, const double *s,
                   const size_t *targets)
{
    llm_tape tape;
    llm_tensor t, g, seed;
    llm_var v, y;
    llm_error err;
    const llm_tensor *out = NULL;
    op_case c;
    char cell[3][128];
    const char *cells[4] = {name, cell[0], cell[1], cell[2]};
    size_t i, n;
    int ok, finite = 1;

    memset(&c, 0, sizeof c);
    memset(&t, 0, sizeof t); memset(&g, 0, sizeof g); memset(&seed, 0, sizeof seed);
    memset(&tape, 0, sizeof tape);
    c.kind = kind;
    c.tape = &tape;
    c.index = targets;
    c.nindex = shape[0];
    c.axis = rank - 1;
    ok = llm_demo_ok("ch16", llm_row_major(rank, shape, t.stride, &n, &err), &err)
      && llm_demo_ok("ch16", llm_tensor_from(&t, rank, shape, x, n, &err), &err)
      && llm_demo_ok("ch16", llm_tensor_zeros(&g, rank, shape, &err), &err)
      && llm_demo_ok("ch16", llm_tape_init(&tape, 4, &err), &err)
      && llm_demo_ok("ch16", llm_tape_leaf(&tape, &t, &g, &v, &err), &err)
      && llm_demo_ok("ch16", apply_case(&c, &v, &y, &err), &err)
      && llm_demo_ok("ch16", llm_tape_value(&tape, y, &out, &err), &err)
      && llm_demo_ok("ch16",
                     llm_tensor_from(&seed, out->rank, out->shape, s, out->size, &err), &err);
    if (ok) {
        fractions(cell[0], sizeof cell[0], out->data + out->offset, out->size);
        for (i = 0; i < out->size; i++)
            finite = finite && isfinite(out->data[out->offset + i]);
    }
    ok = ok && llm_demo_ok("ch16", llm_tape_backward(&tape, y, &seed, 0, &err), &err);
    if (ok) {
        fractions(cell[1], sizeof cell[1], g.data, g.size);
        for (i = 0; i < g.size; i++)
            finite = finite && isfinite(g.data[i]);
        snprintf(cell[2], sizeof cell[2], "%s", finite ? "yes" : "no");
        printf("extreme %s\n  value=%s grad=%s finite=%s\n", name, cell[0], cell[1], cell[2]);
        llm_trace_row(tr, "extremes", 4, cells);
    }
    llm_tape_free(&tape);
    llm_tensor_free(&t); llm_tensor_free(&g); llm_tensor_free(&seed);
    return ok && finite;
}

static int extremes(llm_trace *tr)
{
    static const double logits[4] = {1000, -1000, -1000, 1000}, one[1] = {1};
    static const double spread[3] = {1000, -1000, 0}, pick[3] = {0, 1, 0};
    static const double wide[2] = {-1000, 1000}, ones[2] = {1, 1};
    static const size_t targets[2] = {1, 1}, s22[2] = {2, 2}, three[1] = {3}, two[1] = {2};
    const double big = 1000.0;
    char buf[64];
    int ok = extreme(tr, "nll_mean of [[1000, -1000], [-1000, 1000]], targets [1, 1]", K_NLL,
                     2, s22, logits, one, targets)
          && extreme(tr, "log_softmax of [1000, -1000, 0], seed [0, 1, 0]", K_LOG_SOFTMAX,
                     1, three, spread, pick, NULL)
          && extreme(tr, "sigmoid of [-1000, 1000]", K_SIGMOID, 1, two, wide, ones, NULL)
          && extreme(tr, "silu of [-1000, 1000]", K_SILU, 1, two, wide, ones, NULL);
    /* the textbook derivative e^-x / (1 + e^-x)^2 at x = -1000 */
    printf("textbook sigmoid derivative at -1000=%s\n",
           llm_fmt(buf, sizeof buf, exp(big) / ((1.0 + exp(big)) * (1.0 + exp(big))), 6));
    llm_trace_value(tr, "naive_sigmoid_grad", buf);
    return ok;
}
static int refusals(llm_trace *tr)
{
    static const size_t bad_ids[4] = {0, 1, 3, 2}, four[1] = {4}, one[1] = {1};
    static const size_t deep[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    static const size_t targets[3] = {0, 2, 1}, s32[2] = {3, 2};
    static const double special[6] = {0, -1, 1000, 1e-320, 2, 4};
    llm_tape tape;
    llm_tensor e, ge, s, sc[6], gq, seed;
    llm_var ve, vs, vc[6], vq, vy, stale, id = {77, 77};
    llm_error err;
    size_t count, i;
    int ok, untouched = 1;

    memset(&tape, 0, sizeof tape);
    memset(&e, 0, sizeof e); memset(&ge, 0, sizeof ge); memset(&s, 0, sizeof s);
    memset(sc, 0, sizeof sc); memset(&gq, 0, sizeof gq); memset(&seed, 0, sizeof seed);
    ok = llm_demo_ok("ch16", llm_tensor_from(&e, 2, s32, fix_e, 6, &err), &err)
      && llm_demo_ok("ch16", llm_tensor_zeros(&ge, 2, s32, &err), &err)
      && llm_demo_ok("ch16", llm_tensor_from(&s, 0, NULL, special + 4, 1, &err), &err)
      && llm_demo_ok("ch16", llm_tape_init(&tape, 4, &err), &err)
      && llm_demo_ok("ch16", llm_tape_leaf(&tape, &e, &ge, &stale, &err), &err);
    ok = ok && llm_demo_ok("ch16", llm_tape_reset(&tape, &err), &err)  /* stale: from before */
            && llm_demo_ok("ch16", llm_tape_leaf(&tape, &e, &ge, &ve, &err), &err)
            && llm_demo_ok("ch16", llm_tape_constant(&tape, &s, &vs, &err), &err);
    for (i = 0; ok && i < 6; i++)
        ok = llm_demo_ok("ch16", llm_tensor_from(&sc[i], 1, one, special + i, 1, &err), &err)
          && llm_demo_ok("ch16", llm_tape_constant(&tape, &sc[i], &vc[i], &err), &err);
    if (!ok)
        goto done;
    for (i = 0; i < ge.size; i++)
        ge.data[i] = 0.5;                        /* gradients that must survive */
    count = tape.count;
    llm_demo_refusal_cells(tr, "cs", "gather ID 3 from a table of 3 rows",
                           llm_tape_gather(&tape, ve, bad_ids, 1, four, &id, &err), &err);
    printf("  %s\n", err.message);
    llm_trace_value(tr, "gather_message", err.message);
    llm_demo_refusal_cells(tr, "cs", "gather from a scalar table",
                           llm_tape_gather(&tape, vs, bad_ids, 1, one, &id, &err), &err);
    llm_demo_refusal_cells(tr, "cs", "gather IDs of rank 8 from a table of rank 2",
                           llm_tape_gather(&tape, ve, bad_ids, 8, deep, &id, &err), &err);
    llm_demo_refusal_cells(tr, "cs", "gather 4 positions without IDs",
                           llm_tape_gather(&tape, ve, NULL, 1, four, &id, &err), &err);
    llm_demo_refusal_cells(tr, "cs", "log of 0", llm_tape_log(&tape, vc[0], &id, &err), &err);
    printf("  %s\n", err.message);
    llm_trace_value(tr, "log_message", err.message);
    llm_demo_refusal_cells(tr, "cs", "log of -1", llm_tape_log(&tape, vc[1], &id, &err), &err);
    llm_demo_refusal_cells(tr, "cs", "sqrt of -1",
                           llm_tape_sqrt(&tape, vc[1], &id, &err), &err);
    llm_demo_refusal_cells(tr, "cs", "reciprocal of 0",
                           llm_tape_reciprocal(&tape, vc[0], &id, &err), &err);
    llm_demo_refusal_cells(tr, "cs", "exp of 1000",
                           llm_tape_exp(&tape, vc[2], &id, &err), &err);
    llm_demo_refusal_cells(tr, "cs", "reciprocal of 1e-320",
                           llm_tape_reciprocal(&tape, vc[3], &id, &err), &err);
    llm_demo_refusal_cells(tr, "cs", "silu without a place for the result",
                           llm_tape_silu(&tape, ve, NULL, &err), &err);
    llm_demo_refusal_cells(tr, "cs", "matmul [3, 2] by [3, 2]",
                           llm_tape_matmul(&tape, ve, ve, 0, 0, &id, &err), &err);
    llm_demo_refusal_cells(tr, "cs", "matmul of a vector",
                           llm_tape_matmul(&tape, vc[4], ve, 0, 0, &id, &err), &err);
    llm_demo_refusal_cells(tr, "cs", "matmul with an operand recorded before a reset",
                           llm_tape_matmul(&tape, stale, ve, 1, 0, &id, &err), &err);
    llm_demo_refusal_cells(tr, "cs", "log_softmax along axis 2 of a matrix",
                           llm_tape_log_softmax(&tape, ve, 2, &id, &err), &err);
    llm_demo_refusal_cells(tr, "cs", "nll_mean target 2 of 2 classes",
                           llm_tape_nll_mean(&tape, ve, targets, 3, &id, &err), &err);
    llm_demo_refusal_cells(tr, "cs", "nll_mean with 2 targets for 3 rows",
                           llm_tape_nll_mean(&tape, ve, targets, 2, &id, &err), &err);
    for (i = 0; i < ge.size; i++)
        untouched = untouched && ge.data[i] == 0.5;
    printf("after the refusals: nodes=%zu (before: %zu) gradients untouched=%s output "
           "untouched=%s\n", tape.count, count, untouched ? "yes" : "no",
           id.id == 77 && id.epoch == 77 ? "yes" : "no");
    ok = ok && tape.count == count && untouched && id.id == 77 && id.epoch == 77;
    llm_trace_value(tr, "refused_unchanged", ok ? "yes" : "no");
    {
        const llm_tensor *q = &sc[0];          /* [0]: sqrt(0) = 0, derivative infinite */
        ok = ok && llm_demo_ok("ch16", llm_tensor_zeros(&gq, 1, one, &err), &err)
                && llm_demo_ok("ch16", llm_tape_leaf(&tape, q, &gq, &vq, &err), &err)
                && llm_demo_ok("ch16", llm_tape_sqrt(&tape, vq, &vy, &err), &err)
                && llm_demo_ok("ch16", llm_tensor_from(&seed, 1, one, special + 4, 1, &err), &err);
        if (ok) {
            gq.data[0] = 0.5;
            llm_demo_refusal_cells(tr, "cs", "backward through sqrt(0)",
                                   llm_tape_backward(&tape, vy, &seed, 1, &err), &err);
            printf("  %s\n", err.message);
            printf("gradient after the refused pass=%s\n",
                   gq.data[0] == 0.5 ? "untouched" : "changed");
            ok = gq.data[0] == 0.5;
        }
    }
done:
    llm_tape_free(&tape);
    llm_tensor_free(&e); llm_tensor_free(&ge); llm_tensor_free(&s);
    llm_tensor_free(&gq); llm_tensor_free(&seed);
    for (i = 0; i < 6; i++)
        llm_tensor_free(&sc[i]);
    return ok;
}

int main(int argc, char **argv)
{
    llm_trace tr;
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch16-model-autodiff-ops", &tr);
    if (status != 0)
        return status;
    printf("chapter=16 model-autodiff-ops\n");
    ok = fixture(&tr) && ok;
    ok = every_vjp(&tr) && ok;
    ok = extremes(&tr) && ok;
    ok = refusals(&tr) && ok;
    return llm_demo_finish(&tr, ok);
}
