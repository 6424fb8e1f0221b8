/* ch15-tensor-autodiff-core -- a tensor tape: record, backward, release. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/tape.h"
#include "llm/tensor.h"

static llm_tape *tape;                          /* the fixture's, owned by main */
static llm_tensor *x, *bias, *dx, *dbias, *seed;
static llm_var stale_x;                         /* x's handle from recording 1 */
static const size_t s23[2] = {2, 3}, s32[2] = {3, 2}, s3[1] = {3}, s2[1] = {2};

static void refuse(llm_demo *d, const char *what, llm_status st)
{
    llm_refuse_cells(d, "cs", what, st);
}

/* A new tensor that the demo owns, of the given shape, holding v in
   row-major order (zeros when v is NULL); NULL after an error. */
static llm_tensor *tensor(llm_demo *d, size_t rank, const size_t *shape,
                          const double *v)
{
    llm_tensor *t = llm_own_tensor(d);
    if (!LLM_TRY(d, llm_tensor_zeros(t, rank, shape, &d->err)))
        return NULL;
    if (v != NULL)
        memcpy(t->data, v, t->size * sizeof *v);
    return t;
}

/* v[0 .. n-1]: the first n elements of t in row-major order, read through
   its strides by llm_tensor_get. */
static void gather(const llm_tensor *t, double *v, size_t n)
{
    size_t idx[LLM_MAX_RANK] = {0}, i;
    for (i = 0; i < n; i++, llm_index_next(t->rank, t->shape, idx))
        llm_tensor_get(t, t->rank, idx, &v[i], NULL);
}

/* The elements of t (at most 64): "[1, 3, 5, 2, 4, 6]". */
static const char *show(const llm_tensor *t)
{
    double v[64];
    size_t n = t->size < 64 ? t->size : 64;
    gather(t, v, n);
    return llm_nums(v, n, 0);
}

/* Prints fmt with the elements of t, traced under key; unless want is NULL
   they must read want. */
static void shown(llm_demo *d, const char *fmt, const char *key, const llm_tensor *t,
                  const char *want)
{
    const char *v = llm_put(d, key, show(t));
    printf(fmt, v);
    if (want != NULL)
        llm_demo_check(d, strcmp(v, want) == 0, llm_text("%s is %s", key, want));
}
/* Prints nodes 0 .. n-1 of t and writes the cells id, operation, shape,
   storage, value, adjoint as rows of the trace table. */
static void node_rows(llm_demo *d, const char *table, const llm_tape *t, size_t n)
{
    llm_node_info v;
    const char *c[6], *name;
    size_t id;
    for (id = 0; id < n && llm_tape_node(t, id, &v, NULL) == LLM_OK; id++) {
        name = llm_op_name(v.op);
        c[0] = llm_text("%zu", id);
        c[1] = v.nargs == 2 ? llm_text("%s(%zu, %zu)", name, v.arg[0], v.arg[1])
               : v.nargs == 1 || strcmp(name, "detach") == 0   /* it keeps its source */
                   ? llm_text("%s(%zu)", name, v.arg[0])
                   : name;
        c[2] = llm_sizes(v.value->shape, v.value->rank);
        c[3] = v.op == &llm_op_leaf ? "borrowed" : v.value->owns ? "owned" : "view";
        c[4] = show(v.value);
        c[5] = v.adjoint != NULL ? llm_nums(v.adjoint, v.value->size, 0) : "none";
        printf("node %s %s shape=%s %s value=%s adjoint=%s\n", c[0], c[1], c[2], c[3],
               c[4], c[5]);
        llm_row(d, table, c[0], c[1], c[2], c[3], c[4], c[5], NULL);
    }
}
static void setup(llm_demo *d)
{
    static const double xv[6] = {1, 2, 3, 4, 5, 6}, bv[3] = {1, -1, 0}, sv[2] = {3, 6};
    tape = llm_own_tape(d);
    x = tensor(d, 2, s23, xv);
    bias = tensor(d, 1, s3, bv);
    dx = tensor(d, 2, s23, NULL);
    dbias = tensor(d, 1, s3, NULL);
    seed = tensor(d, 1, s2, sv);
    if (LLM_TRY(d, llm_tape_init(tape, 4, &d->err)))
        printf("x=%s shape=[2, 3] bias=%s seed=%s tape capacity=%zu\n", show(x),
               show(bias), show(seed), tape->capacity);
}
/* Records the fixture on tp: the leaves x and bias (*a, *b), t and
   m = mean(h * h, axis 1); 0 after an error. */
static int record_fixture(llm_demo *d, llm_tape *tp, llm_var *a, llm_var *b, llm_var *t,
                          llm_var *m)
{
    llm_var r, h, q;
    return LLM_TRY(d, llm_tape_leaf(tp, x, dx, a, &d->err))
           && LLM_TRY(d, llm_tape_leaf(tp, bias, dbias, b, &d->err))
           && LLM_TRY(d, llm_tape_reshape(tp, *a, 2, s32, &r, &d->err))
           && LLM_TRY(d, llm_tape_transpose(tp, r, 0, 1, t, &d->err))
           && LLM_TRY(d, llm_tape_add(tp, *t, *b, &h, &d->err))
           && LLM_TRY(d, llm_tape_mul(tp, h, h, &q, &d->err))
           && LLM_TRY(d, llm_tape_mean(tp, q, 1, 0, m, &d->err));
}

static void fixture_tape(llm_demo *d)
{
    const llm_tensor *t = NULL, *m = NULL;
    llm_var vx, vb, vt, vm;
    if (!(record_fixture(d, tape, &vx, &vb, &vt, &vm)
          && LLM_TRY(d, llm_tape_value(tape, vt, &t, &d->err))
          && LLM_TRY(d, llm_tape_value(tape, vm, &m, &d->err))))
        return;
    shown(d, "t = transpose(reshape(x, [3, 2])) = %s\n", "t_value", t,
          "[1, 3, 5, 2, 4, 6]");
    shown(d, "m = mean(h * h, axis 1) = %s\n", "mean", m, "[11, 18]");
    printf("tape nodes=%zu capacity=%zu\n", tape->count, tape->capacity);
    if (!LLM_TRY(d, llm_tape_backward(tape, vm, seed, 1, &d->err)))
        return;
    node_rows(d, "nodes", tape, tape->count);
    shown(d, "pass 1 (keep_graph): dx=%s", "dx", dx, "[4, 12, 4, 12, 10, 24]");
    shown(d, " dbias=%s", "dbias", dbias, "[16, 16, 34]");
    printf(" dbias shape=%s\n",
           llm_put(d, "dbias_shape", llm_sizes(dbias->shape, dbias->rank)));
    if (!LLM_TRY(d, llm_tape_backward(tape, vm, seed, 0, &d->err)))
        return;
    shown(d, "pass 2 (releases): dx=%s", "pass2_dx", dx, "[8, 24, 8, 24, 20, 48]");
    shown(d, " dbias=%s", "pass2_dbias", dbias, NULL);
    printf(" released=%s\n", llm_yes(tape->released));
    llm_demo_check(d, tape->released, "a pass without keep_graph released the tape");
    refuse(d, "a third backward pass", llm_tape_backward(tape, vm, seed, 0, &d->err));
    llm_put(d, "released_code", llm_status_name(d->err.code));
    printf("  %s\n", llm_put(d, "released_message", d->err.message));
    refuse(d, "the value of m after release", llm_tape_value(tape, vm, &m, &d->err));
    refuse(d, "add after release", llm_tape_add(tape, vx, vb, &stale_x, &d->err));
    const size_t capacity = tape->capacity;
    llm_var y;
    if (!LLM_TRY(d, llm_tape_reset(tape, &d->err)))
        return;
    printf("reset: nodes=%zu capacity=%zu released=%s\n", tape->count, tape->capacity,
           llm_yes(tape->released));
    llm_demo_check(d, tape->count == 0 && tape->capacity == capacity && !tape->released,
                   "a reset empties the tape and keeps its capacity");
    stale_x = vx;
    refuse(d, "add with handles from before the reset",
           llm_tape_add(tape, vx, vb, &y, &d->err));
    printf("  %s\n", llm_put(d, "stale_message", d->err.message));
}
static void detach_live(llm_demo *d)
{
    static const double pv[2] = {2, 3}, qv[3] = {1, 2, 3};
    llm_tensor *p = tensor(d, 1, s2, pv), *gp = tensor(d, 1, s2, NULL);
    llm_tensor *q = tensor(d, 1, s3, qv), *c10 = tensor(d, 0, NULL, (double[1]){10});
    llm_tensor *huge = tensor(d, 0, NULL, (double[1]){1e200});
    llm_var vp, vpp, vd, vc, vdc, vs, vl, vq, vbig;
    const llm_tensor *loss = NULL;
    const char *value;
    if (!(LLM_TRY(d, llm_tape_leaf(tape, p, gp, &vp, &d->err))
          && LLM_TRY(d, llm_tape_mul(tape, vp, vp, &vpp, &d->err))
          && LLM_TRY(d, llm_tape_detach(tape, vp, &vd, &d->err))
          && LLM_TRY(d, llm_tape_constant(tape, c10, &vc, &d->err))
          && LLM_TRY(d, llm_tape_mul(tape, vd, vc, &vdc, &d->err))
          && LLM_TRY(d, llm_tape_add(tape, vpp, vdc, &vs, &d->err))
          && LLM_TRY(d, llm_tape_sum_all(tape, vs, &vl, &d->err))
          && LLM_TRY(d, llm_tape_constant(tape, q, &vq, &d->err))
          && LLM_TRY(d, llm_tape_constant(tape, huge, &vbig, &d->err))
          && LLM_TRY(d, llm_tape_backward(tape, vl, NULL, 1, &d->err))
          && LLM_TRY(d, llm_tape_value(tape, vl, &loss, &d->err))))
        return;
    value = llm_put(d, "detach_value", llm_num(loss->data[loss->offset], 0));
    printf("detach: sum(p*p + detach(p)*10) = %s", value);
    llm_demo_check(d, strcmp(value, "63") == 0, "the detached sum is 63");
    shown(d, " grad p=%s\n", "detach_grad", gp, "[4, 6]");
    node_rows(d, "detach_nodes", tape, vl.id + 1);   /* the loss's, not q and 1e200 */
    const size_t bytes = tape->count * llm_tape_node_size();
    unsigned char nodes[4096];                  /* the node array, byte for byte */
    double adjoint_p[2], grad_before[2];
    llm_tape before;
    llm_node_info leaf;
    llm_tensor *xt = llm_own_tensor(d), *nan_t = tensor(d, 0, NULL, (double[1]){NAN});
    llm_tensor *huge_seed = tensor(d, 0, NULL, (double[1]){1e308});
    llm_tape *other = llm_own_tape(d);
    llm_var id = {99, 99}, ov = {0, 0};
    int same, kept;
    if (!(llm_demo_check(d, bytes <= sizeof nodes, "the recording fits the snapshot")
          && LLM_TRY(d, llm_tape_node(tape, vp.id, &leaf, &d->err))
          && LLM_TRY(d, llm_tensor_transpose(xt, x, 0, 1, &d->err))
          && LLM_TRY(d, llm_tape_init(other, 1, &d->err))
          && LLM_TRY(d, llm_tape_constant(other, q, &ov, &d->err))))
        return;
    memcpy(&before, tape, sizeof before);
    memcpy(nodes, tape->nodes, bytes);
    memcpy(adjoint_p, leaf.adjoint, sizeof adjoint_p);
    memcpy(grad_before, gp->data, sizeof grad_before);
    refuse(d, "add p [2] + q [3]", llm_tape_add(tape, vp, vq, &id, &d->err));
    refuse(d, "mul with a stale handle", llm_tape_mul(tape, stale_x, vp, &id, &d->err));
    refuse(d, "sub with another tape's handle",
           llm_tape_sub(tape, vp, ov, &id, &d->err));
    refuse(d, "mul 1e200 * 1e200", llm_tape_mul(tape, vbig, vbig, &id, &d->err));
    refuse(d, "transpose axes 0 and 1 of p [2]",
           llm_tape_transpose(tape, vp, 0, 1, &id, &d->err));
    refuse(d, "sum of p over axis 1", llm_tape_sum(tape, vp, 1, 0, &id, &d->err));
    refuse(d, "reshape p [2] to [3]", llm_tape_reshape(tape, vp, 1, s3, &id, &d->err));
    refuse(d, "leaf with a grad of shape [3]", llm_tape_leaf(tape, p, q, &id, &d->err));
    refuse(d, "leaf of a transposed view", llm_tape_leaf(tape, xt, NULL, &id, &d->err));
    refuse(d, "leaf NaN", llm_tape_leaf(tape, nan_t, NULL, &id, &d->err));
    refuse(d, "leaf p again, with p's grad", llm_tape_leaf(tape, p, gp, &id, &d->err));
    refuse(d, "backward from node 5 [2] with seed [3]",
           llm_tape_backward(tape, vs, q, 1, &d->err));
    refuse(d, "backward from node 5 [2] without seed",
           llm_tape_backward(tape, vs, NULL, 1, &d->err));
    refuse(d, "backward with seed NaN", llm_tape_backward(tape, vl, nan_t, 1, &d->err));
    refuse(d, "backward with seed 1e308",
           llm_tape_backward(tape, vl, huge_seed, 0, &d->err));
    printf("  %s\n", llm_put(d, "overflow_message", d->err.message));
    refuse(d, "value without a place for it", llm_tape_value(tape, vl, NULL, &d->err));
    same = memcmp(&before, tape, sizeof before) == 0 && !tape->released
           && memcmp(nodes, tape->nodes, bytes) == 0
           && memcmp(adjoint_p, leaf.adjoint, sizeof adjoint_p) == 0;
    kept = memcmp(grad_before, gp->data, sizeof grad_before) == 0;
    printf("unchanged after refusals: tape=%s", llm_yes(same));
    printf(" grad p=%s (%s) handle=%s\n", show(gp), kept ? "same bits" : "changed",
           id.id == 99 && id.epoch == 99 ? "unwritten" : "written");
    llm_put(d, "unchanged", llm_yes(same && kept));
    llm_demo_check(d, same, "the refusals left the tape as it was");
    llm_demo_check(d, kept, "the refusals kept the bits of p's gradient");
    llm_demo_check(d, id.id == 99, "the refusals wrote no handle");
    llm_demo_check(d, llm_tape_value(tape, vl, &loss, &d->err) == LLM_OK,
                   "the recording still answers");
}
/* The operations under test, named as the tape names them. */
typedef enum probe_op {
    P_ADD, P_SUB, P_MUL, P_RESHAPE, P_TRANSPOSE, P_SUM, P_MEAN, P_SUM_ALL
} probe_op;

/* One check: its label, the operation, theta and the other operand (indices
   into operand), and the axis of sum and mean. */
typedef struct probe_case {
    const char *label, *other_label;
    probe_op op;
    int theta, other, theta_is_b;   /* binary operations: theta is operand b */
    size_t axis;
    int keepdim;
} probe_case;

/* The probes' tape, their operands (the last one, NONE, stays NULL) and the
   weights w of the objective f(theta) = sum(w * op(...theta...)). */
static llm_tape *ptape;
static llm_tensor *operand[8], *weight;

/* Records pc's operation on a fresh recording: theta is a leaf with grad,
   the other operand, if any, a constant. */
static llm_status probe_record(const probe_case *pc, const llm_tensor *theta,
                               llm_tensor *grad, llm_var *y, llm_error *err)
{
    llm_var t, o = {0, 0}, a, b;
    llm_status st = llm_tape_reset(ptape, err);
    if (st == LLM_OK)
        st = llm_tape_leaf(ptape, theta, grad, &t, err);
    if (st == LLM_OK && operand[pc->other] != NULL)
        st = llm_tape_constant(ptape, operand[pc->other], &o, err);
    if (st != LLM_OK)
        return st;
    a = pc->theta_is_b ? o : t;
    b = pc->theta_is_b ? t : o;
    switch (pc->op) {
    case P_ADD:       return llm_tape_add(ptape, a, b, y, err);
    case P_SUB:       return llm_tape_sub(ptape, a, b, y, err);
    case P_MUL:       return llm_tape_mul(ptape, a, b, y, err);
    case P_RESHAPE:   return llm_tape_reshape(ptape, t, 2, s32, y, err);
    case P_TRANSPOSE: return llm_tape_transpose(ptape, t, 0, 1, y, err);
    case P_SUM:       return llm_tape_sum(ptape, t, pc->axis, pc->keepdim, y, err);
    case P_MEAN:      return llm_tape_mean(ptape, t, pc->axis, pc->keepdim, y, err);
    default:          return llm_tape_sum_all(ptape, t, y, err);
    }
}

/* The objective of the case ctx: sum over the result's elements, row-major,
   of w * c. */
static llm_status probe_value(void *ctx, const llm_tensor *theta, double *value,
                              llm_error *err)
{
    const llm_tensor *c = NULL;
    double v[6];
    size_t i;
    llm_var y;
    llm_status st = probe_record(ctx, theta, NULL, &y, err);
    if (st == LLM_OK)
        st = llm_tape_value(ptape, y, &c, err);
    if (st != LLM_OK)
        return st;
    gather(c, v, c->size);      /* run_probe checked that c->size <= 6 */
    for (*value = 0.0, i = 0; i < c->size; i++)
        *value += weight->data[i] * v[i];
    return LLM_OK;
}
/* Checks J^T w of pc's operation at its theta on every coordinate; prints
   and traces one row. Returns 1 when every coordinate passed. */
static int run_probe(llm_demo *d, const probe_case *pc)
{
    static const double w[6] = {0.3, -1.1, 0.7, 1.9, -0.6, 0.25};
    static const size_t coords[6] = {0, 1, 2, 3, 4, 5};
    llm_tensor *theta = operand[pc->theta];
    llm_tensor *grad = tensor(d, theta->rank, theta->shape, NULL);
    const llm_tensor *c = NULL;
    const char *shape = llm_sizes(theta->shape, theta->rank), *worst_text, *pass;
    size_t failures = 0;
    double worst = 0.0;
    llm_var y;
    int ok = llm_demo_check(d, theta->size <= 6, "theta has at most 6 elements")
             && LLM_TRY(d, probe_record(pc, theta, grad, &y, &d->err))
             && LLM_TRY(d, llm_tape_value(ptape, y, &c, &d->err))
             && llm_demo_check(d, c->size <= 6, "the result has at most 6 elements")
             && (weight = tensor(d, c->rank, c->shape, w)) != NULL
             && LLM_TRY(d, llm_tape_backward(ptape, y, weight, 0, &d->err))
             && LLM_TRY(d, llm_gradient_check(probe_value, (void *)pc, theta,
                                              grad->data, coords, theta->size, 1e-5,
                                              1e-6, &worst, &failures, &d->err))
             && failures == 0;
    worst_text = llm_text("%.1e", worst);
    pass = llm_yes(ok);
    printf("gradcheck %s: theta %s, %s: coordinates=%zu worst=%s pass=%s\n", pc->label,
           shape, pc->other_label, theta->size, worst_text, pass);
    llm_row(d, "gradchecks", pc->label, shape, pc->other_label,
            llm_text("%zu", theta->size), worst_text, pass, NULL);
    return ok;
}
static void gradchecks(llm_demo *d)
{
    enum { A23, B23, A3, B3, A21, B13, A0, NONE };
    static const double av[6] = {0.5, -1.25, 2.0, 0.75, -0.3, 1.6};
    static const double bv[6] = {1.5, -0.4, 0.9, -2.1, 0.35, 1.2};
    static const struct { const double *v; size_t rank, shape[2]; } made[7] = {
        {av, 2, {2, 3}}, {bv, 2, {2, 3}}, {av, 1, {3, 0}}, {bv, 1, {3, 0}},
        {av, 2, {2, 1}}, {bv, 2, {1, 3}}, {av, 0, {0, 0}}};
    static const probe_case cases[13] = {
        {"add, theta = a", "b [3]", P_ADD, A23, B3, 0, 0, 0},
        {"add, theta = b", "a [2, 3]", P_ADD, B3, A23, 1, 0, 0},
        {"sub, theta = a", "b [2, 3]", P_SUB, A3, B23, 0, 0, 0},
        {"sub, theta = b", "a [3]", P_SUB, B23, A3, 1, 0, 0},
        {"mul, theta = a", "b [1, 3]", P_MUL, A21, B13, 0, 0, 0},
        {"mul, theta = b", "a [2, 1]", P_MUL, B13, A21, 1, 0, 0},
        {"mul, theta = a (rank 0)", "b [2, 3]", P_MUL, A0, B23, 0, 0, 0},
        {"reshape to [3, 2]", "none", P_RESHAPE, A23, NONE, 0, 0, 0},
        {"transpose 0, 1", "none", P_TRANSPOSE, A23, NONE, 0, 0, 0},
        {"sum over axis 0", "none", P_SUM, A23, NONE, 0, 0, 0},
        {"sum over axis 1, keepdim", "none", P_SUM, A23, NONE, 0, 1, 1},
        {"mean over axis 1", "none", P_MEAN, A23, NONE, 0, 1, 0},
        {"sum_all", "none", P_SUM_ALL, A23, NONE, 0, 0, 0}
    };
    size_t i;
    int all = 1;
    ptape = llm_own_tape(d);
    for (i = 0; i < 7; i++)
        operand[i] = tensor(d, made[i].rank, made[i].shape, made[i].v);
    if (!LLM_TRY(d, llm_tape_init(ptape, 4, &d->err)))
        return;
    for (i = 0; i < 13; i++)
        all = run_probe(d, &cases[i]) && all;
    printf("gradchecks: all passed=%s\n", llm_put(d, "gradchecks_pass", llm_yes(all)));
    llm_demo_check(d, all, "every vector-Jacobian product passed its check");
}
static void steps(llm_demo *d)
{
    llm_tape *loop = llm_own_tape(d);
    size_t step, first = 0;
    llm_var a, b, t, m;
    memset(dx->data, 0, dx->size * sizeof(double));
    memset(dbias->data, 0, dbias->size * sizeof(double));
    if (!LLM_TRY(d, llm_tape_init(loop, 1, &d->err)))
        return;
    for (step = 0; step < 2000; step++) {
        if (!(record_fixture(d, loop, &a, &b, &t, &m)
              && LLM_TRY(d, llm_tape_backward(loop, m, seed, 0, &d->err))
              && LLM_TRY(d, llm_tape_reset(loop, &d->err))))
            return;
        if (step == 0)
            first = loop->capacity;
    }
    printf("2000 steps: capacity after step 1=%zu after step 2000=%zu\n", first,
           loop->capacity);
    shown(d, "2000 steps: dx=%s", "steps_dx", dx,
          "[8000, 24000, 8000, 24000, 20000, 48000]");
    shown(d, " dbias=%s\n", "steps_dbias", dbias, NULL);
    llm_put(d, "steps_capacity_first", llm_text("%zu", first));
    llm_put(d, "steps_capacity_last", llm_text("%zu", loop->capacity));
    llm_demo_check(d, first == loop->capacity, "steps 1 and 2000 end at one capacity");
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {fixture_tape, detach_live, gradchecks,
                                            steps, NULL};
    return llm_demo_main(argc, argv, "ch15-tensor-autodiff-core", setup, sections);
}
