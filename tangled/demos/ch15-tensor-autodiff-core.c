/* ch15-tensor-autodiff-core -- a tensor tape: record, backward, release. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/tape.h"
#include "llm/tensor.h"

/* The elements of t (at most 64) in row-major order, read through its
   strides: "[1, 3, 5, 2, 4, 6]". */
static char *show(char *buf, size_t size, const llm_tensor *t, int decimals)
{
    double v[64];
    size_t idx[LLM_MAX_RANK] = {0}, i, k, o, n = t->size < 64 ? t->size : 64;
    for (i = 0; i < n; i++) {
        for (o = t->offset, k = 0; k < t->rank; k++)
            o += idx[k] * t->stride[k];
        v[i] = t->data[o];
        llm_index_next(t->rank, t->shape, idx);
    }
    return llm_fmt_list(buf, size, v, n, decimals);
}
/* Prints node id of the tape and writes the cells id, operation, shape,
   storage, value, adjoint as a row of the trace table. */
static void node_row(llm_trace *tr, const char *table, const llm_tape *tape, size_t id)
{
    llm_node_info v;
    char cell[6][160];
    const char *cells[6] = {cell[0], cell[1], cell[2], cell[3], cell[4], cell[5]};
    if (llm_tape_node(tape, id, &v, NULL) != LLM_OK)
        return;                       /* the demo only asks for nodes it recorded */
    snprintf(cell[0], sizeof cell[0], "%zu", id);
    if (v.nargs == 0 && strcmp(llm_op_name(v.op), "detach") == 0)
        snprintf(cell[1], sizeof cell[1], "detach(%zu)", v.arg[0]);
    else if (v.nargs == 1)
        snprintf(cell[1], sizeof cell[1], "%s(%zu)", llm_op_name(v.op), v.arg[0]);
    else if (v.nargs == 2)
        snprintf(cell[1], sizeof cell[1], "%s(%zu, %zu)", llm_op_name(v.op), v.arg[0],
                 v.arg[1]);
    else
        snprintf(cell[1], sizeof cell[1], "%s", llm_op_name(v.op));
    llm_fmt_sizes(cell[2], sizeof cell[2], v.value->shape, v.value->rank);
    snprintf(cell[3], sizeof cell[3], "%s",
             v.op == &llm_op_leaf ? "borrowed" : v.value->owns ? "owned" : "view");
    show(cell[4], sizeof cell[4], v.value, 0);
    if (v.adjoint != NULL)
        llm_fmt_list(cell[5], sizeof cell[5], v.adjoint, v.value->size, 0);
    else
        snprintf(cell[5], sizeof cell[5], "none");
    printf("node %s %s shape=%s %s value=%s adjoint=%s\n", cell[0], cell[1], cell[2],
           cell[3], cell[4], cell[5]);
    llm_trace_row(tr, table, 6, cells);
}

/* What nodes 0 .. n-1 of tape are: their descriptions and, byte for byte,
   their value headers. */
static void snapshot(const llm_tape *tape, size_t n, llm_node_info *info,
                     llm_tensor *value)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (llm_tape_node(tape, i, &info[i], NULL) == LLM_OK)
            memcpy(&value[i], info[i].value, sizeof value[i]);
}

/* 1 when nodes 0 .. n-1 of tape are still what snapshot saw */
static int same_nodes(const llm_tape *tape, size_t n, const llm_node_info *info,
                      const llm_tensor *value)
{
    llm_node_info now;
    size_t i;
    for (i = 0; i < n; i++)
        if (llm_tape_node(tape, i, &now, NULL) != LLM_OK || now.op != info[i].op ||
            now.nargs != info[i].nargs || now.arg[0] != info[i].arg[0] ||
            now.arg[1] != info[i].arg[1] || now.value != info[i].value ||
            now.grad != info[i].grad || now.adjoint != info[i].adjoint ||
            now.needs_grad != info[i].needs_grad ||
            memcmp(now.value, &value[i], sizeof value[i]) != 0)
            return 0;
    return 1;
}
/* The operations under test, named as the tape names them. */
typedef enum probe_op {
    P_ADD, P_SUB, P_MUL, P_RESHAPE, P_TRANSPOSE, P_SUM, P_MEAN, P_SUM_ALL
} probe_op;

/* One operation under test: f(theta) = sum(weight * op(...theta...)). */
typedef struct probe {
    llm_tape tape;
    probe_op op;
    int theta_is_b;             /* binary operations: theta is operand b */
    const llm_tensor *other;    /* the other operand, recorded as a constant */
    size_t axis;                /* sum and mean */
    int keepdim;
    size_t rank, shape[2];      /* reshape */
    llm_tensor weight;          /* the seed, of the result's shape */
} probe;

static llm_status probe_record(probe *pr, const llm_tensor *theta, llm_tensor *grad,
                               llm_var *y, llm_error *err)
{
    llm_var t, o, a, b;
    llm_status st = llm_tape_reset(&pr->tape, err);
    if (st == LLM_OK)
        st = llm_tape_leaf(&pr->tape, theta, grad, &t, err);
    if (st != LLM_OK)
        return st;
    if (pr->op == P_ADD || pr->op == P_SUB || pr->op == P_MUL) {
        if ((st = llm_tape_constant(&pr->tape, pr->other, &o, err)) != LLM_OK)
            return st;
        a = pr->theta_is_b ? o : t;
        b = pr->theta_is_b ? t : o;
        if (pr->op == P_ADD)
            return llm_tape_add(&pr->tape, a, b, y, err);
        if (pr->op == P_SUB)
            return llm_tape_sub(&pr->tape, a, b, y, err);
        return llm_tape_mul(&pr->tape, a, b, y, err);
    }
    switch (pr->op) {
    case P_RESHAPE:   return llm_tape_reshape(&pr->tape, t, pr->rank, pr->shape, y, err);
    case P_TRANSPOSE: return llm_tape_transpose(&pr->tape, t, 0, 1, y, err);
    case P_SUM:       return llm_tape_sum(&pr->tape, t, pr->axis, pr->keepdim, y, err);
    case P_MEAN:      return llm_tape_mean(&pr->tape, t, pr->axis, pr->keepdim, y, err);
    default:               return llm_tape_sum_all(&pr->tape, t, y, err);
    }
}

/* The objective: sum over the result's elements, row-major, of w * c. */
static llm_status probe_value(void *ctx, const llm_tensor *theta, double *value,
                              llm_error *err)
{
    probe *pr = ctx;
    const llm_tensor *c = NULL;
    size_t idx[LLM_MAX_RANK] = {0}, i, k, o;
    double acc = 0.0;
    llm_var y;
    llm_status st = probe_record(pr, theta, NULL, &y, err);
    if (st == LLM_OK)
        st = llm_tape_value(&pr->tape, y, &c, err);
    if (st != LLM_OK)
        return st;
    for (i = 0; i < c->size; i++) {
        for (o = c->offset, k = 0; k < c->rank; k++)
            o += idx[k] * c->stride[k];
        acc += pr->weight.data[i] * c->data[o];
        llm_index_next(c->rank, c->shape, idx);
    }
    *value = acc;
    return LLM_OK;
}
/* Checks J^T w of pr's operation at theta on every coordinate; prints and
   traces one row. Returns 1 when every coordinate passed. */
static int run_probe(llm_trace *tr, probe *pr, const char *label, llm_tensor *theta,
                     const char *other)
{
    static const double w[6] = {0.3, -1.1, 0.7, 1.9, -0.6, 0.25};
    const llm_tensor *c = NULL;
    llm_tensor grad;
    llm_error err;
    size_t coords[6], i, failures = 0;
    double worst = 0.0;
    char cell[4][64];
    const char *cells[6] = {label, cell[0], other, cell[1], cell[2], cell[3]};
    llm_var y;
    int ok = theta->size <= 6;
    memset(&grad, 0, sizeof grad);
    memset(&pr->weight, 0, sizeof pr->weight);
    for (i = 0; i < theta->size && i < 6; i++)
        coords[i] = i;
    ok = ok && llm_demo_ok("ch15",
                           llm_tensor_zeros(&grad, theta->rank, theta->shape, &err), &err)
            && llm_demo_ok("ch15", probe_record(pr, theta, NULL, &y, &err), &err)
            && llm_demo_ok("ch15", llm_tape_value(&pr->tape, y, &c, &err), &err)
            && c->size <= 6
            && llm_demo_ok("ch15", llm_tensor_from(&pr->weight, c->rank, c->shape, w, c->size,
                                                   &err), &err)
            && llm_demo_ok("ch15", probe_record(pr, theta, &grad, &y, &err), &err)
            && llm_demo_ok("ch15", llm_tape_backward(&pr->tape, y, &pr->weight, 0, &err), &err)
            && llm_demo_ok("ch15", llm_gradient_check(probe_value, pr, theta, grad.data,
                                                      coords, theta->size, 1e-5, 1e-6, &worst,
                                                      &failures, &err), &err);
    llm_fmt_sizes(cell[0], sizeof cell[0], theta->shape, theta->rank);
    snprintf(cell[1], sizeof cell[1], "%zu", theta->size);
    snprintf(cell[2], sizeof cell[2], "%.1e", worst);
    snprintf(cell[3], sizeof cell[3], "%s", ok && failures == 0 ? "yes" : "no");
    printf("gradcheck %s: theta %s, %s: coordinates=%s worst=%s pass=%s\n", label, cell[0],
           other, cell[1], cell[2], cell[3]);
    llm_trace_row(tr, "gradchecks", 6, cells);
    llm_tensor_free(&grad);
    llm_tensor_free(&pr->weight);
    return ok && failures == 0;
}

int main(int argc, char **argv)
{
    llm_trace tr;
    llm_tape tape;
    llm_error err;
    llm_tensor x, bias, dx, dbias, seed;
    llm_var vx, vb, vm, stale_x;
    char buf[512];
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch15-tensor-autodiff-core", &tr);
    if (status != 0)
        return status;
    memset(&tape, 0, sizeof tape);
    printf("chapter=15 tensor-autodiff-core\n");
    {
        static const double xv[6] = {1, 2, 3, 4, 5, 6}, bv[3] = {1, -1, 0}, sv[2] = {3, 6};
        const size_t s23[2] = {2, 3}, s3[1] = {3}, s2[1] = {2};
        memset(&x, 0, sizeof x);
        memset(&bias, 0, sizeof bias);
        memset(&dx, 0, sizeof dx);
        memset(&dbias, 0, sizeof dbias);
        memset(&seed, 0, sizeof seed);
        ok = llm_demo_ok("ch15", llm_tensor_from(&x, 2, s23, xv, 6, &err), &err)
          && llm_demo_ok("ch15", llm_tensor_from(&bias, 1, s3, bv, 3, &err), &err)
          && llm_demo_ok("ch15", llm_tensor_zeros(&dx, 2, s23, &err), &err)
          && llm_demo_ok("ch15", llm_tensor_zeros(&dbias, 1, s3, &err), &err)
          && llm_demo_ok("ch15", llm_tensor_from(&seed, 1, s2, sv, 2, &err), &err)
          && llm_demo_ok("ch15", llm_tape_init(&tape, 4, &err), &err);
        if (!ok)
            goto done;
        printf("x=%s shape=[2, 3] bias=%s seed=%s tape capacity=%zu\n",
               show(buf, sizeof buf, &x, 0), show(buf + 128, 128, &bias, 0),
               show(buf + 256, 128, &seed, 0), tape.capacity);
    }
    {
        const size_t s32[2] = {3, 2};
        llm_var vr, vt, vh, vq;
        const llm_tensor *t = NULL, *m = NULL;
        ok = llm_demo_ok("ch15", llm_tape_leaf(&tape, &x, &dx, &vx, &err), &err)
          && llm_demo_ok("ch15", llm_tape_leaf(&tape, &bias, &dbias, &vb, &err), &err)
          && llm_demo_ok("ch15", llm_tape_reshape(&tape, vx, 2, s32, &vr, &err), &err)
          && llm_demo_ok("ch15", llm_tape_transpose(&tape, vr, 0, 1, &vt, &err), &err)
          && llm_demo_ok("ch15", llm_tape_add(&tape, vt, vb, &vh, &err), &err)
          && llm_demo_ok("ch15", llm_tape_mul(&tape, vh, vh, &vq, &err), &err)
          && llm_demo_ok("ch15", llm_tape_mean(&tape, vq, 1, 0, &vm, &err), &err)
          && llm_demo_ok("ch15", llm_tape_value(&tape, vt, &t, &err), &err)
          && llm_demo_ok("ch15", llm_tape_value(&tape, vm, &m, &err), &err);
        if (!ok)
            goto done;
        printf("t = transpose(reshape(x, [3, 2])) = %s\n", show(buf, sizeof buf, t, 0));
        llm_trace_value(&tr, "t_value", buf);
        ok = ok && strcmp(buf, "[1, 3, 5, 2, 4, 6]") == 0;
        printf("m = mean(h * h, axis 1) = %s\n", show(buf, sizeof buf, m, 0));
        llm_trace_value(&tr, "mean", buf);
        ok = ok && strcmp(buf, "[11, 18]") == 0;
        printf("tape nodes=%zu capacity=%zu\n", tape.count, tape.capacity);
    }
    {
        size_t i;
        const llm_tensor *m = NULL;
        ok = llm_demo_ok("ch15", llm_tape_backward(&tape, vm, &seed, 1, &err), &err);
        if (!ok)
            goto done;
        for (i = 0; i < tape.count; i++)
            node_row(&tr, "nodes", &tape, i);
        printf("pass 1 (keep_graph): dx=%s", show(buf, sizeof buf, &dx, 0));
        llm_trace_value(&tr, "dx", buf);
        ok = ok && strcmp(buf, "[4, 12, 4, 12, 10, 24]") == 0;
        printf(" dbias=%s", show(buf, sizeof buf, &dbias, 0));
        llm_trace_value(&tr, "dbias", buf);
        ok = ok && strcmp(buf, "[16, 16, 34]") == 0;
        printf(" dbias shape=%s\n", llm_fmt_sizes(buf, sizeof buf, dbias.shape, dbias.rank));
        llm_trace_value(&tr, "dbias_shape", buf);
        ok = ok && llm_demo_ok("ch15", llm_tape_backward(&tape, vm, &seed, 0, &err), &err);
        printf("pass 2 (releases): dx=%s", show(buf, sizeof buf, &dx, 0));
        llm_trace_value(&tr, "pass2_dx", buf);
        ok = ok && strcmp(buf, "[8, 24, 8, 24, 20, 48]") == 0;
        printf(" dbias=%s released=%s\n", show(buf, sizeof buf, &dbias, 0),
               tape.released ? "yes" : "no");
        llm_trace_value(&tr, "pass2_dbias", buf);
        ok = ok && tape.released;
        llm_demo_refusal_cells(&tr, "cs", "a third backward pass",
                               llm_tape_backward(&tape, vm, &seed, 0, &err), &err);
        llm_trace_value(&tr, "released_code", llm_status_name(err.code));
        llm_trace_value(&tr, "released_message", err.message);
        printf("  %s\n", err.message);
        llm_demo_refusal_cells(&tr, "cs", "the value of m after release",
                               llm_tape_value(&tape, vm, &m, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "add after release",
                               llm_tape_add(&tape, vx, vb, &stale_x, &err), &err);
    }
    {
        const size_t capacity = tape.capacity;
        llm_var y;
        ok = ok && llm_demo_ok("ch15", llm_tape_reset(&tape, &err), &err);
        printf("reset: nodes=%zu capacity=%zu released=%s\n", tape.count, tape.capacity,
               tape.released ? "yes" : "no");
        ok = ok && tape.count == 0 && tape.capacity == capacity && !tape.released;
        stale_x = vx;
        llm_demo_refusal_cells(&tr, "cs", "add with handles from before the reset",
                               llm_tape_add(&tape, vx, vb, &y, &err), &err);
        llm_trace_value(&tr, "stale_message", err.message);
        printf("  %s\n", err.message);
    }
    {
        static const double pv[2] = {2, 3}, ten = 10, qv[3] = {1, 2, 3}, big = 1e200;
        const size_t s2[1] = {2}, s3[1] = {3};
        llm_tensor p, gp, c10, q, huge;
        llm_var vp, vpp, vd, vc, vdc, vs, vl, vq, vbig;
        const llm_tensor *loss = NULL;
        memset(&p, 0, sizeof p);
        memset(&gp, 0, sizeof gp);
        memset(&c10, 0, sizeof c10);
        memset(&q, 0, sizeof q);
        memset(&huge, 0, sizeof huge);
        ok = ok && llm_demo_ok("ch15", llm_tensor_from(&p, 1, s2, pv, 2, &err), &err)
                && llm_demo_ok("ch15", llm_tensor_zeros(&gp, 1, s2, &err), &err)
                && llm_demo_ok("ch15", llm_tensor_from(&c10, 0, NULL, &ten, 1, &err), &err)
                && llm_demo_ok("ch15", llm_tensor_from(&q, 1, s3, qv, 3, &err), &err)
                && llm_demo_ok("ch15", llm_tensor_from(&huge, 0, NULL, &big, 1, &err), &err)
                && llm_demo_ok("ch15", llm_tape_leaf(&tape, &p, &gp, &vp, &err), &err)
                && llm_demo_ok("ch15", llm_tape_mul(&tape, vp, vp, &vpp, &err), &err)
                && llm_demo_ok("ch15", llm_tape_detach(&tape, vp, &vd, &err), &err)
                && llm_demo_ok("ch15", llm_tape_constant(&tape, &c10, &vc, &err), &err)
                && llm_demo_ok("ch15", llm_tape_mul(&tape, vd, vc, &vdc, &err), &err)
                && llm_demo_ok("ch15", llm_tape_add(&tape, vpp, vdc, &vs, &err), &err)
                && llm_demo_ok("ch15", llm_tape_sum_all(&tape, vs, &vl, &err), &err)
                && llm_demo_ok("ch15", llm_tape_constant(&tape, &q, &vq, &err), &err)
                && llm_demo_ok("ch15", llm_tape_constant(&tape, &huge, &vbig, &err), &err)
                && llm_demo_ok("ch15", llm_tape_backward(&tape, vl, NULL, 1, &err), &err)
                && llm_demo_ok("ch15", llm_tape_value(&tape, vl, &loss, &err), &err);
        if (ok) {
            size_t i;
            printf("detach: sum(p*p + detach(p)*10) = %s",
                   llm_fmt(buf, sizeof buf, loss->data[loss->offset], 0));
            llm_trace_value(&tr, "detach_value", buf);
            ok = ok && strcmp(buf, "63") == 0;
            printf(" grad p=%s\n", show(buf, sizeof buf, &gp, 0));
            llm_trace_value(&tr, "detach_grad", buf);
            ok = ok && strcmp(buf, "[4, 6]") == 0;
            for (i = 0; i <= vl.id; i++)       /* the loss's recording, not q and 1e200 */
                node_row(&tr, "detach_nodes", &tape, i);
            {
                const size_t s3[1] = {3};
                llm_tape other, before = tape;
                llm_node_info nodes[16];
                llm_tensor values[16];
                double adjoint_p[2], grad_before[2];
                llm_tensor wrong, nan_t, seed3, huge_seed, nan_seed, xt;
                llm_var id = {99, 99}, ov = {0, 0};
                const llm_tensor *val = NULL;
                const double nan_v = NAN, big_seed = 1e308;
                const size_t n = tape.count < 16 ? tape.count : 16;
                int same;
                memset(&wrong, 0, sizeof wrong);
                memset(&nan_t, 0, sizeof nan_t);
                memset(&seed3, 0, sizeof seed3);
                memset(&huge_seed, 0, sizeof huge_seed);
                memset(&nan_seed, 0, sizeof nan_seed);
                memset(&xt, 0, sizeof xt);
                snapshot(&tape, n, nodes, values);
                memcpy(adjoint_p, nodes[vp.id].adjoint, sizeof adjoint_p);
                memcpy(grad_before, gp.data, sizeof grad_before);
                memset(&other, 0, sizeof other);
                ok = ok && tape.count == n
                        && llm_demo_ok("ch15", llm_tensor_zeros(&wrong, 1, s3, &err), &err)
                        && llm_demo_ok("ch15", llm_tensor_from(&nan_t, 0, NULL, &nan_v, 1, &err), &err)
                        && llm_demo_ok("ch15", llm_tensor_zeros(&seed3, 1, s3, &err), &err)
                        && llm_demo_ok("ch15",
                                       llm_tensor_from(&huge_seed, 0, NULL, &big_seed, 1, &err), &err)
                        && llm_demo_ok("ch15", llm_tensor_from(&nan_seed, 0, NULL, &nan_v, 1, &err), &err)
                        && llm_demo_ok("ch15", llm_tensor_transpose(&xt, &x, 0, 1, &err), &err)
                        && llm_demo_ok("ch15", llm_tape_init(&other, 1, &err), &err)
                        && llm_demo_ok("ch15", llm_tape_constant(&other, &q, &ov, &err), &err);
                llm_demo_refusal_cells(&tr, "cs", "add p [2] + q [3]",
                                       llm_tape_add(&tape, vp, vq, &id, &err), &err);
                llm_demo_refusal_cells(&tr, "cs", "mul with a stale handle",
                                       llm_tape_mul(&tape, stale_x, vp, &id, &err), &err);
                llm_demo_refusal_cells(&tr, "cs", "sub with another tape's handle",
                                       llm_tape_sub(&tape, vp, ov, &id, &err), &err);
                llm_demo_refusal_cells(&tr, "cs", "mul 1e200 * 1e200",
                                       llm_tape_mul(&tape, vbig, vbig, &id, &err), &err);
                llm_demo_refusal_cells(&tr, "cs", "transpose axes 0 and 1 of p [2]",
                                       llm_tape_transpose(&tape, vp, 0, 1, &id, &err), &err);
                llm_demo_refusal_cells(&tr, "cs", "sum of p over axis 1",
                                       llm_tape_sum(&tape, vp, 1, 0, &id, &err), &err);
                llm_demo_refusal_cells(&tr, "cs", "reshape p [2] to [3]",
                                       llm_tape_reshape(&tape, vp, 1, s3, &id, &err), &err);
                llm_demo_refusal_cells(&tr, "cs", "leaf with a grad of shape [3]",
                                       llm_tape_leaf(&tape, &p, &wrong, &id, &err), &err);
                llm_demo_refusal_cells(&tr, "cs", "leaf of a transposed view",
                                       llm_tape_leaf(&tape, &xt, NULL, &id, &err), &err);
                llm_demo_refusal_cells(&tr, "cs", "leaf NaN",
                                       llm_tape_leaf(&tape, &nan_t, NULL, &id, &err), &err);
                llm_demo_refusal_cells(&tr, "cs", "leaf p again, with p's grad",
                                       llm_tape_leaf(&tape, &p, &gp, &id, &err), &err);
                llm_demo_refusal_cells(&tr, "cs", "backward from node 5 [2] with seed [3]",
                                       llm_tape_backward(&tape, vs, &seed3, 1, &err), &err);
                llm_demo_refusal_cells(&tr, "cs", "backward from node 5 [2] without seed",
                                       llm_tape_backward(&tape, vs, NULL, 1, &err), &err);
                llm_demo_refusal_cells(&tr, "cs", "backward with seed NaN",
                                       llm_tape_backward(&tape, vl, &nan_seed, 1, &err), &err);
                llm_demo_refusal_cells(&tr, "cs", "backward with seed 1e308",
                                       llm_tape_backward(&tape, vl, &huge_seed, 0, &err), &err);
                llm_trace_value(&tr, "overflow_message", err.message);
                printf("  %s\n", err.message);
                llm_demo_refusal_cells(&tr, "cs", "value without a place for it",
                                       llm_tape_value(&tape, vl, NULL, &err), &err);
                same = tape.count == before.count && tape.capacity == before.capacity
                    && tape.nodes == before.nodes && tape.epoch == before.epoch && !tape.released
                    && same_nodes(&tape, n, nodes, values)
                    && memcmp(adjoint_p, nodes[vp.id].adjoint, sizeof adjoint_p) == 0;
                printf("unchanged after refusals: tape=%s", same ? "yes" : "no");
                printf(" grad p=%s (%s) handle=%s\n", show(buf, sizeof buf, &gp, 0),
                       memcmp(grad_before, gp.data, sizeof grad_before) == 0 ? "same bits" : "changed",
                       id.id == 99 && id.epoch == 99 ? "unwritten" : "written");
                llm_trace_value(&tr, "unchanged",
                                same && memcmp(grad_before, gp.data, sizeof grad_before) == 0 ? "yes"
                                                                                              : "no");
                ok = ok && same && memcmp(grad_before, gp.data, sizeof grad_before) == 0
                        && id.id == 99 && llm_tape_value(&tape, vl, &val, &err) == LLM_OK;
                llm_tape_free(&other);
                llm_tensor_free(&wrong);
                llm_tensor_free(&nan_t);
                llm_tensor_free(&seed3);
                llm_tensor_free(&huge_seed);
                llm_tensor_free(&nan_seed);
            }
        }
        llm_tensor_free(&p);
        llm_tensor_free(&gp);
        llm_tensor_free(&c10);
        llm_tensor_free(&q);
        llm_tensor_free(&huge);
    }
    {
        static const double av[6] = {0.5, -1.25, 2.0, 0.75, -0.3, 1.6};
        static const double bv[6] = {1.5, -0.4, 0.9, -2.1, 0.35, 1.2};
        const size_t s23[2] = {2, 3}, s3[1] = {3}, s21[2] = {2, 1}, s13[2] = {1, 3};
        llm_tensor a23, b23, a3, b3, a21, b13, a0;
        probe pr;
        int all = 1;
        memset(&pr, 0, sizeof pr);
        ok = ok && llm_demo_ok("ch15", llm_tensor_from(&a23, 2, s23, av, 6, &err), &err)
                && llm_demo_ok("ch15", llm_tensor_from(&b23, 2, s23, bv, 6, &err), &err)
                && llm_demo_ok("ch15", llm_tensor_from(&a3, 1, s3, av, 3, &err), &err)
                && llm_demo_ok("ch15", llm_tensor_from(&b3, 1, s3, bv, 3, &err), &err)
                && llm_demo_ok("ch15", llm_tensor_from(&a21, 2, s21, av, 2, &err), &err)
                && llm_demo_ok("ch15", llm_tensor_from(&b13, 2, s13, bv, 3, &err), &err)
                && llm_demo_ok("ch15", llm_tensor_from(&a0, 0, NULL, av, 1, &err), &err)
                && llm_demo_ok("ch15", llm_tape_init(&pr.tape, 4, &err), &err);
        if (!ok)
            goto done;
        pr.op = P_ADD;
        pr.other = &b3;
        all = run_probe(&tr, &pr, "add, theta = a", &a23, "b [3]") && all;
        pr.theta_is_b = 1;
        pr.other = &a23;
        all = run_probe(&tr, &pr, "add, theta = b", &b3, "a [2, 3]") && all;
        pr.op = P_SUB;
        pr.theta_is_b = 0;
        pr.other = &b23;
        all = run_probe(&tr, &pr, "sub, theta = a", &a3, "b [2, 3]") && all;
        pr.theta_is_b = 1;
        pr.other = &a3;
        all = run_probe(&tr, &pr, "sub, theta = b", &b23, "a [3]") && all;
        pr.op = P_MUL;
        pr.theta_is_b = 0;
        pr.other = &b13;
        all = run_probe(&tr, &pr, "mul, theta = a", &a21, "b [1, 3]") && all;
        pr.theta_is_b = 1;
        pr.other = &a21;
        all = run_probe(&tr, &pr, "mul, theta = b", &b13, "a [2, 1]") && all;
        pr.theta_is_b = 0;
        pr.other = &b23;
        all = run_probe(&tr, &pr, "mul, theta = a (rank 0)", &a0, "b [2, 3]") && all;
        pr.op = P_RESHAPE;
        pr.rank = 2;
        pr.shape[0] = 3;
        pr.shape[1] = 2;
        all = run_probe(&tr, &pr, "reshape to [3, 2]", &a23, "none") && all;
        pr.op = P_TRANSPOSE;
        all = run_probe(&tr, &pr, "transpose 0, 1", &a23, "none") && all;
        pr.op = P_SUM;
        pr.axis = 0;
        all = run_probe(&tr, &pr, "sum over axis 0", &a23, "none") && all;
        pr.axis = 1;
        pr.keepdim = 1;
        all = run_probe(&tr, &pr, "sum over axis 1, keepdim", &a23, "none") && all;
        pr.op = P_MEAN;
        pr.keepdim = 0;
        all = run_probe(&tr, &pr, "mean over axis 1", &a23, "none") && all;
        pr.op = P_SUM_ALL;
        all = run_probe(&tr, &pr, "sum_all", &a23, "none") && all;
        printf("gradchecks: all passed=%s\n", all ? "yes" : "no");
        llm_trace_value(&tr, "gradchecks_pass", all ? "yes" : "no");
        ok = ok && all;
        llm_tape_free(&pr.tape);
        llm_tensor_free(&a23);
        llm_tensor_free(&b23);
        llm_tensor_free(&a3);
        llm_tensor_free(&b3);
        llm_tensor_free(&a21);
        llm_tensor_free(&b13);
        llm_tensor_free(&a0);
    }
    {
        const size_t s32[2] = {3, 2};
        size_t step, first = 0;
        llm_tape loop;
        memset(&loop, 0, sizeof loop);
        memset(dx.data, 0, dx.size * sizeof(double));
        memset(dbias.data, 0, dbias.size * sizeof(double));
        ok = ok && llm_demo_ok("ch15", llm_tape_init(&loop, 1, &err), &err);
        for (step = 0; ok && step < 2000; step++) {
            llm_var a, b, r, t, h, q, m;
            ok = llm_demo_ok("ch15", llm_tape_leaf(&loop, &x, &dx, &a, &err), &err)
              && llm_demo_ok("ch15", llm_tape_leaf(&loop, &bias, &dbias, &b, &err), &err)
              && llm_demo_ok("ch15", llm_tape_reshape(&loop, a, 2, s32, &r, &err), &err)
              && llm_demo_ok("ch15", llm_tape_transpose(&loop, r, 0, 1, &t, &err), &err)
              && llm_demo_ok("ch15", llm_tape_add(&loop, t, b, &h, &err), &err)
              && llm_demo_ok("ch15", llm_tape_mul(&loop, h, h, &q, &err), &err)
              && llm_demo_ok("ch15", llm_tape_mean(&loop, q, 1, 0, &m, &err), &err)
              && llm_demo_ok("ch15", llm_tape_backward(&loop, m, &seed, 0, &err), &err)
              && llm_demo_ok("ch15", llm_tape_reset(&loop, &err), &err);
            if (step == 0)
                first = loop.capacity;
        }
        printf("2000 steps: capacity after step 1=%zu after step 2000=%zu\n", first,
               loop.capacity);
        printf("2000 steps: dx=%s", show(buf, sizeof buf, &dx, 0));
        llm_trace_value(&tr, "steps_dx", buf);
        ok = ok && first == loop.capacity && strcmp(buf, "[8000, 24000, 8000, 24000, 20000, "
                                                         "48000]") == 0;
        printf(" dbias=%s\n", show(buf, sizeof buf, &dbias, 0));
        llm_trace_value(&tr, "steps_dbias", buf);
        snprintf(buf, sizeof buf, "%zu", first);
        llm_trace_value(&tr, "steps_capacity_first", buf);
        snprintf(buf, sizeof buf, "%zu", loop.capacity);
        llm_trace_value(&tr, "steps_capacity_last", buf);
        llm_tape_free(&loop);
    }
done:
    llm_tape_free(&tape);
    llm_tensor_free(&x);
    llm_tensor_free(&bias);
    llm_tensor_free(&dx);
    llm_tensor_free(&dbias);
    llm_tensor_free(&seed);
    return llm_demo_finish(&tr, ok);
}
