/* Chapter 15: the tensor tape -- record, backward, accumulate, release,
   detach; every vector-Jacobian product against central differences. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/error.h"
#include "llm/gradcheck.h"
#include "llm/tape.h"
#include "llm/tensor.h"
#include "../tangled/src/tape_op.h"   /* white-box: the tape's nodes */
#include "support.h"


static llm_tensor zeros(size_t rank, const size_t *shape)
{
    llm_tensor t;
    ck_assert_int_eq(llm_tensor_zeros(&t, rank, shape, NULL), LLM_OK);
    return t;
}

static void expect(const llm_tensor *t, const double *want, size_t n)
{
    size_t j;
    ck_assert_uint_eq(t->size, n);
    for (j = 0; j < n; j++)
        ck_assert_msg(t->data[t->offset + j] == want[j], "element %zu: %g, want %g", j,
                      t->data[t->offset + j], want[j]);
}

/* ------------------------------------------------------------- fixture */

typedef struct fixture {
    llm_tape tape;
    llm_tensor x, bias, dx, dbias, seed;
    llm_var vx, vb, vr, vt, vh, vq, vm;
} fixture;

static void fixture_record(fixture *f)
{
    static const double xv[6] = {1, 2, 3, 4, 5, 6}, bv[3] = {1, -1, 0}, sv[2] = {3, 6};
    const size_t s23[2] = {2, 3}, s3[1] = {3}, s2[1] = {2}, s32[2] = {3, 2};
    f->x = make_tensor(2, s23, xv);
    f->bias = make_tensor(1, s3, bv);
    f->dx = zeros(2, s23);
    f->dbias = zeros(1, s3);
    f->seed = make_tensor(1, s2, sv);
    ck_assert_int_eq(llm_tape_init(&f->tape, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&f->tape, &f->x, &f->dx, &f->vx, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&f->tape, &f->bias, &f->dbias, &f->vb, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_reshape(&f->tape, f->vx, 2, s32, &f->vr, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_transpose(&f->tape, f->vr, 0, 1, &f->vt, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_add(&f->tape, f->vt, f->vb, &f->vh, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_mul(&f->tape, f->vh, f->vh, &f->vq, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_mean(&f->tape, f->vq, 1, 0, &f->vm, NULL), LLM_OK);
}

static void fixture_free(fixture *f)
{
    llm_tape_free(&f->tape);
    llm_tensor_free(&f->x);
    llm_tensor_free(&f->bias);
    llm_tensor_free(&f->dx);
    llm_tensor_free(&f->dbias);
    llm_tensor_free(&f->seed);
}

START_TEST(the_fixture_matches_the_rust_course)
{
    static const double mean[2] = {11, 18}, dx[6] = {4, 12, 4, 12, 10, 24},
                        db[3] = {16, 16, 34}, tv[6] = {1, 3, 5, 2, 4, 6};
    fixture f;
    const llm_tensor *m = NULL, *t = NULL;
    llm_tensor tc;
    fixture_record(&f);
    ck_assert_uint_eq(f.vm.id, 6);
    ck_assert_uint_eq(f.tape.capacity, 8);        /* 2 -> 4 -> 8 */
    ck_assert_int_eq(llm_tape_value(&f.tape, f.vm, &m, NULL), LLM_OK);
    expect(m, mean, 2);
    ck_assert_int_eq(llm_tape_value(&f.tape, f.vt, &t, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_copy(&tc, t, NULL), LLM_OK);
    expect(&tc, tv, 6);
    llm_tensor_free(&tc);
    ck_assert_int_eq(llm_tape_backward(&f.tape, f.vm, &f.seed, 0, NULL), LLM_OK);
    expect(&f.dx, dx, 6);
    expect(&f.dbias, db, 3);
    ck_assert_uint_eq(f.dbias.rank, 1);
    ck_assert(f.tape.released);
    fixture_free(&f);
}
END_TEST

START_TEST(views_share_buffers_and_computed_values_own_theirs)
{
    fixture f;
    const size_t s6[1] = {6};
    llm_var flat;
    fixture_record(&f);
    ck_assert_ptr_eq(f.tape.nodes[f.vx.id].value.data, f.x.data);   /* borrowed */
    ck_assert_int_eq(f.tape.nodes[f.vx.id].value.owns, 0);
    ck_assert_ptr_eq(f.tape.nodes[f.vr.id].value.data, f.x.data);   /* reshape: view */
    ck_assert_int_eq(f.tape.nodes[f.vr.id].value.owns, 0);
    ck_assert_ptr_eq(f.tape.nodes[f.vt.id].value.data, f.x.data);   /* transpose: view */
    ck_assert_int_eq(f.tape.nodes[f.vt.id].value.owns, 0);
    ck_assert_int_eq(f.tape.nodes[f.vh.id].value.owns, 1);
    /* a reshape of the transposed value must copy */
    ck_assert_int_eq(llm_tape_reshape(&f.tape, f.vt, 1, s6, &flat, NULL), LLM_OK);
    ck_assert_int_eq(f.tape.nodes[flat.id].value.owns, 1);
    ck_assert_ptr_ne(f.tape.nodes[flat.id].value.data, f.x.data);
    {
        static const double want[6] = {1, 3, 5, 2, 4, 6};
        expect(&f.tape.nodes[flat.id].value, want, 6);
    }
    ck_assert_str_eq(llm_op_name(f.tape.nodes[f.vt.id].op), "transpose");
    fixture_free(&f);
}
END_TEST

START_TEST(keep_graph_twice_doubles_and_release_refuses_more)
{
    static const double dx2[6] = {8, 24, 8, 24, 20, 48}, db2[3] = {32, 32, 68},
                        adj_h[6] = {4, 4, 10, 12, 12, 24};
    fixture f;
    llm_error err;
    const double *adj = NULL;
    const llm_tensor *v = NULL;
    llm_var y = {77, 77};
    size_t j;
    fixture_record(&f);
    ck_assert_int_eq(llm_tape_backward(&f.tape, f.vm, &f.seed, 1, NULL), LLM_OK);
    ck_assert(!f.tape.released);
    ck_assert_int_eq(llm_tape_adjoint(&f.tape, f.vh, &adj, NULL), LLM_OK);
    ck_assert_ptr_nonnull(adj);
    for (j = 0; j < 6; j++)
        ck_assert(adj[j] == adj_h[j]);
    ck_assert_int_eq(llm_tape_backward(&f.tape, f.vm, &f.seed, 1, NULL), LLM_OK);
    expect(&f.dx, dx2, 6);
    expect(&f.dbias, db2, 3);
    ck_assert_int_eq(llm_tape_backward(&f.tape, f.vm, &f.seed, 0, NULL), LLM_OK);
    ck_assert(f.tape.released);
    ck_assert_ptr_null(f.tape.nodes[f.vh.id].value.data);     /* values were freed */
    ck_assert_ptr_null(f.tape.nodes[f.vh.id].adjoint);
    REFUSED(llm_tape_backward(&f.tape, f.vm, &f.seed, 0, &err), LLM_ERR_TAPE, "tape.backward");
    ck_assert_ptr_nonnull(strstr(err.message, "released"));
    REFUSED(llm_tape_value(&f.tape, f.vm, &v, &err), LLM_ERR_TAPE, "tape.value");
    REFUSED(llm_tape_adjoint(&f.tape, f.vm, &adj, &err), LLM_ERR_TAPE, "tape.adjoint");
    REFUSED(llm_tape_add(&f.tape, f.vx, f.vb, &y, &err), LLM_ERR_TAPE, "tape.add");
    REFUSED(llm_tape_leaf(&f.tape, &f.x, NULL, &y, &err), LLM_ERR_TAPE, "tape.leaf");
    REFUSED(llm_tape_constant(&f.tape, &f.x, &y, &err), LLM_ERR_TAPE, "tape.constant");
    ck_assert_uint_eq(y.id, 77);
    /* a reset makes the tape usable; the old handles are stale */
    ck_assert_int_eq(llm_tape_reset(&f.tape, NULL), LLM_OK);
    ck_assert(!f.tape.released);
    ck_assert_uint_eq(f.tape.count, 0);
    ck_assert_uint_eq(f.tape.capacity, 8);
    REFUSED(llm_tape_detach(&f.tape, f.vx, &y, &err), LLM_ERR_TAPE, "tape.detach");
    ck_assert_ptr_nonnull(strstr(err.message, "stale"));
    ck_assert_int_eq(llm_tape_leaf(&f.tape, &f.x, NULL, &y, NULL), LLM_OK);
    ck_assert_uint_eq(y.id, f.vx.id);                         /* same index, new epoch */
    REFUSED(llm_tape_sum_all(&f.tape, f.vx, &y, &err), LLM_ERR_TAPE, "tape.sum_all");
    fixture_free(&f);
}
END_TEST

START_TEST(a_leaf_reached_by_several_paths_accumulates_every_edge)
{
    /* y = sum(x*x + x + (x - x)*x) = sum(x^2 + x): grad 2x + 1 */
    static const double xv[3] = {0.5, -2, 3}, want[3] = {2, -3, 7};
    const size_t s3[1] = {3};
    llm_tensor x = make_tensor(1, s3, xv), g = zeros(1, s3);
    llm_tape tape;
    llm_var vx, a, b, c, d, e, y;
    ck_assert_int_eq(llm_tape_init(&tape, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &x, &g, &vx, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_mul(&tape, vx, vx, &a, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_add(&tape, a, vx, &b, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sub(&tape, vx, vx, &c, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_mul(&tape, c, vx, &d, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_add(&tape, b, d, &e, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sum_all(&tape, e, &y, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, y, NULL, 0, NULL), LLM_OK);
    expect(&g, want, 3);
    llm_tape_free(&tape);
    llm_tensor_free(&x);
    llm_tensor_free(&g);
}
END_TEST

START_TEST(detach_stops_the_gradient_and_skips_the_subgraph)
{
    static const double pv[2] = {2, 3}, ten = 10, want[2] = {4, 6};
    const size_t s2[1] = {2};
    llm_tensor p = make_tensor(1, s2, pv), g = zeros(1, s2), c10 = make_tensor(0, NULL, &ten);
    llm_tape tape;
    llm_var vp, pp, d, c, dc, s, l;
    const llm_tensor *loss = NULL;
    const double *adj = (const double *)&tape;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &p, &g, &vp, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_mul(&tape, vp, vp, &pp, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_detach(&tape, vp, &d, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &c10, &c, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_mul(&tape, d, c, &dc, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_add(&tape, pp, dc, &s, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sum_all(&tape, s, &l, NULL), LLM_OK);
    ck_assert_int_eq(tape.nodes[d.id].needs_grad, 0);
    ck_assert_int_eq(tape.nodes[dc.id].needs_grad, 0);
    ck_assert_int_eq(tape.nodes[s.id].needs_grad, 1);
    ck_assert_uint_eq(tape.nodes[d.id].nargs, 0);
    ck_assert_uint_eq(tape.nodes[d.id].arg[0], vp.id);
    ck_assert_int_eq(llm_tape_value(&tape, l, &loss, NULL), LLM_OK);
    ck_assert_uint_eq(loss->rank, 0);
    ck_assert(loss->data[loss->offset] == 63.0);
    ck_assert_int_eq(llm_tape_backward(&tape, l, NULL, 1, NULL), LLM_OK);
    expect(&g, want, 2);
    ck_assert_int_eq(llm_tape_adjoint(&tape, dc, &adj, NULL), LLM_OK);
    ck_assert_ptr_null(adj);                      /* never allocated */
    ck_assert_int_eq(llm_tape_adjoint(&tape, d, &adj, NULL), LLM_OK);
    ck_assert_ptr_null(adj);
    ck_assert_int_eq(llm_tape_adjoint(&tape, vp, &adj, NULL), LLM_OK);
    ck_assert(adj[0] == 4.0 && adj[1] == 6.0);
    llm_tape_free(&tape);
    llm_tensor_free(&p);
    llm_tensor_free(&g);
    llm_tensor_free(&c10);
}
END_TEST

START_TEST(backward_from_an_inner_node_and_seeds_in_any_layout)
{
    /* from h (node 4) with seed = a transposed view: d/dx of sum(seed * h) */
    static const double sv[6] = {1, 4, 2, 5, 3, 6};       /* [3,2]; transposed: 1 2 3 / 4 5 6 */
    static const double want_b[3] = {5, 7, 9};
    const size_t s32[2] = {3, 2};
    fixture f;
    llm_tensor s = make_tensor(2, s32, sv), st;
    const double *adj = NULL;
    fixture_record(&f);
    ck_assert_int_eq(llm_tensor_transpose(&st, &s, 0, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&f.tape, f.vh, &st, 1, NULL), LLM_OK);
    expect(&f.dbias, want_b, 3);
    {   /* dx[i][j] = seed at t's position (j, i) of the reshape: x flat k -> t */
        static const double want_x[6] = {1, 4, 2, 5, 3, 6};
        expect(&f.dx, want_x, 6);
    }
    ck_assert_int_eq(llm_tape_adjoint(&f.tape, f.vq, &adj, NULL), LLM_OK);
    ck_assert_ptr_null(adj);                    /* above the output: untouched */
    ck_assert_int_eq(llm_tape_adjoint(&f.tape, f.vm, &adj, NULL), LLM_OK);
    ck_assert_ptr_null(adj);
    llm_tensor_free(&s);
    fixture_free(&f);
}
END_TEST

START_TEST(leaves_may_be_contiguous_views_with_an_offset)
{
    static const double v[6] = {1, 2, 3, 4, 5, 6};
    const size_t s23[2] = {2, 3};
    llm_tensor all = make_tensor(2, s23, v), gall = zeros(2, s23), row, grow;
    llm_tape tape;
    llm_var r, sq, y;
    ck_assert_int_eq(llm_tensor_slice(&row, &all, 0, 1, 2, NULL), LLM_OK);     /* [4,5,6] */
    ck_assert_int_eq(llm_tensor_slice(&grow, &gall, 0, 1, 2, NULL), LLM_OK);
    ck_assert_uint_eq(row.offset, 3);
    ck_assert_int_eq(llm_tape_init(&tape, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &row, &grow, &r, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_mul(&tape, r, r, &sq, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sum_all(&tape, sq, &y, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, y, NULL, 0, NULL), LLM_OK);
    {
        static const double want[6] = {0, 0, 0, 8, 10, 12};
        expect(&gall, want, 6);
    }
    llm_tape_free(&tape);
    llm_tensor_free(&all);
    llm_tensor_free(&gall);
}
END_TEST

/* ------------------------------------------- vector-Jacobian products */

/* the operations under test; P_DETACH stands for the copying reshape */
typedef enum probe_op {
    P_ADD, P_SUB, P_MUL, P_RESHAPE, P_TRANSPOSE, P_SUM, P_MEAN, P_SUM_ALL, P_DETACH
} probe_op;

static const char *const probe_names[] = {
    "add", "sub", "mul", "reshape", "transpose", "sum", "mean", "sum_all", "copying reshape"
};

typedef struct probe {
    llm_tape tape;
    probe_op op;
    int theta_is_b;
    const llm_tensor *other;
    size_t axis, axis2;
    int keepdim;
    size_t rank, shape[LLM_MAX_RANK];
    llm_tensor weight;
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
    switch (pr->op) {
    case P_ADD:
    case P_SUB:
    case P_MUL:
        if ((st = llm_tape_constant(&pr->tape, pr->other, &o, err)) != LLM_OK)
            return st;
        a = pr->theta_is_b ? o : t;
        b = pr->theta_is_b ? t : o;
        if (pr->op == P_ADD)
            return llm_tape_add(&pr->tape, a, b, y, err);
        if (pr->op == P_SUB)
            return llm_tape_sub(&pr->tape, a, b, y, err);
        return llm_tape_mul(&pr->tape, a, b, y, err);
    case P_RESHAPE:   return llm_tape_reshape(&pr->tape, t, pr->rank, pr->shape, y, err);
    case P_TRANSPOSE: return llm_tape_transpose(&pr->tape, t, pr->axis, pr->axis2, y, err);
    case P_SUM:       return llm_tape_sum(&pr->tape, t, pr->axis, pr->keepdim, y, err);
    case P_MEAN:      return llm_tape_mean(&pr->tape, t, pr->axis, pr->keepdim, y, err);
    case P_DETACH:    /* a reshape of a transpose: the copying reshape */
        if ((st = llm_tape_transpose(&pr->tape, t, pr->axis, pr->axis2, &o, err)) != LLM_OK)
            return st;
        return llm_tape_reshape(&pr->tape, o, pr->rank, pr->shape, y, err);
    default:               return llm_tape_sum_all(&pr->tape, t, y, err);
    }
}

static llm_status probe_value(void *ctx, const llm_tensor *theta, double *value,
                              llm_error *err)
{
    probe *pr = ctx;
    const llm_tensor *c = NULL;
    llm_tensor dense;
    size_t i;
    llm_var y;
    llm_status st = probe_record(pr, theta, NULL, &y, err);
    if (st == LLM_OK)
        st = llm_tape_value(&pr->tape, y, &c, err);
    if (st == LLM_OK)
        st = llm_tensor_copy(&dense, c, err);
    if (st != LLM_OK)
        return st;
    *value = 0.0;
    for (i = 0; i < dense.size; i++)
        *value += pr->weight.data[i] * dense.data[i];
    llm_tensor_free(&dense);
    return LLM_OK;
}

/* theta's values: 0.37 k - 1.1 + 0.05 k^2, distinct and of both signs */
static llm_tensor probe_tensor(size_t rank, const size_t *shape, double shift)
{
    double v[64];
    size_t n = 1, k;
    for (k = 0; k < rank; k++)
        n *= shape[k];
    ck_assert_uint_le(n, 64);
    for (k = 0; k < n; k++)
        v[k] = 0.37 * (double)k - 1.1 + 0.05 * (double)(k * k) + shift;
    return make_tensor(rank, shape, v);
}

/* J^T w by backward against central differences on every coordinate. */
static void check_probe(probe *pr, llm_tensor *theta)
{
    const llm_tensor *c = NULL;
    llm_tensor grad = zeros(theta->rank, theta->shape);
    size_t coords[64], i, failures = 99;
    double worst = -1.0;
    llm_var y;
    llm_error err;
    for (i = 0; i < theta->size; i++)
        coords[i] = i;
    ck_assert_int_eq(probe_record(pr, theta, NULL, &y, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&pr->tape, y, &c, NULL), LLM_OK);
    pr->weight = probe_tensor(c->rank, c->shape, 0.3);
    ck_assert_int_eq(probe_record(pr, theta, &grad, &y, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&pr->tape, y, &pr->weight, 0, &err), LLM_OK);
    ck_assert_int_eq(llm_gradient_check(probe_value, pr, theta, grad.data, coords,
                                        theta->size, 1e-5, 1e-7, &worst, &failures, &err),
                     LLM_OK);
    ck_assert_msg(failures == 0, "op %s: %zu failures, worst %g", probe_names[pr->op],
                  failures, worst);
    llm_tensor_free(&grad);
    llm_tensor_free(&pr->weight);
}

START_TEST(binary_products_in_every_broadcast_combination)
{
    /* rank 0, rank 1 and rank 2 shapes that broadcast with each other */
    static const size_t ranks[6] = {0, 1, 2, 2, 2, 1};
    static const size_t shapes[6][2] = {{0, 0}, {3, 0}, {2, 3}, {2, 1}, {1, 3}, {1, 0}};
    static const probe_op ops[3] = {P_ADD, P_SUB, P_MUL};
    probe pr;
    size_t i, j, o;
    memset(&pr, 0, sizeof pr);
    ck_assert_int_eq(llm_tape_init(&pr.tape, 2, NULL), LLM_OK);
    for (o = 0; o < 3; o++)
        for (i = 0; i < 6; i++)
            for (j = 0; j < 6; j++) {
                llm_tensor a = probe_tensor(ranks[i], shapes[i], 0.0);
                llm_tensor b = probe_tensor(ranks[j], shapes[j], 0.7);
                size_t r, shape[LLM_MAX_RANK];
                if (llm_broadcast_shape(&a, &b, &r, shape, NULL) == LLM_OK) {
                    pr.op = ops[o];
                    pr.theta_is_b = 0;
                    pr.other = &b;
                    check_probe(&pr, &a);     /* theta is a */
                    pr.theta_is_b = 1;
                    pr.other = &a;
                    check_probe(&pr, &b);     /* theta is b */
                }
                llm_tensor_free(&a);
                llm_tensor_free(&b);
            }
    llm_tape_free(&pr.tape);
}
END_TEST

START_TEST(unary_products_on_every_axis)
{
    const size_t s234[3] = {2, 3, 4}, s23[2] = {2, 3};
    llm_tensor t3 = probe_tensor(3, s234, 0.0), t2 = probe_tensor(2, s23, 0.0);
    llm_tensor t1, t0;
    probe pr;
    size_t axis, b;
    const size_t s4[1] = {4};
    t1 = probe_tensor(1, s4, 0.2);
    t0 = probe_tensor(0, NULL, 0.5);
    memset(&pr, 0, sizeof pr);
    ck_assert_int_eq(llm_tape_init(&pr.tape, 2, NULL), LLM_OK);
    for (axis = 0; axis < 3; axis++) {
        for (b = 0; b < 2; b++) {
            pr.op = P_SUM;
            pr.axis = axis;
            pr.keepdim = (int)b;
            check_probe(&pr, &t3);
            pr.op = P_MEAN;
            check_probe(&pr, &t3);
        }
        for (b = 0; b < 3; b++) {
            pr.op = P_TRANSPOSE;
            pr.axis = axis;
            pr.axis2 = b;
            check_probe(&pr, &t3);
        }
    }
    pr.op = P_SUM;
    pr.axis = 0;
    pr.keepdim = 0;
    check_probe(&pr, &t1);                 /* a rank-1 sum gives a scalar */
    pr.op = P_MEAN;
    pr.keepdim = 1;
    check_probe(&pr, &t1);
    pr.op = P_SUM_ALL;
    check_probe(&pr, &t3);
    check_probe(&pr, &t0);
    pr.op = P_RESHAPE;                /* a view */
    pr.rank = 3;
    pr.shape[0] = 3;
    pr.shape[1] = 1;
    pr.shape[2] = 2;
    check_probe(&pr, &t2);
    pr.rank = 0;
    check_probe(&pr, &t0);                 /* a scalar stays a scalar */
    pr.op = P_DETACH;                 /* here: reshape(transpose(theta)), a copy */
    pr.axis = 0;
    pr.axis2 = 2;
    pr.rank = 2;
    pr.shape[0] = 6;
    pr.shape[1] = 4;
    check_probe(&pr, &t3);
    llm_tape_free(&pr.tape);
    llm_tensor_free(&t3);
    llm_tensor_free(&t2);
    llm_tensor_free(&t1);
    llm_tensor_free(&t0);
}
END_TEST

/* -------------------------------------------------------- memory, names */

START_TEST(two_thousand_steps_keep_the_capacity)
{
    fixture f;
    size_t step, capacity;
    const size_t s32[2] = {3, 2};
    fixture_record(&f);
    ck_assert_int_eq(llm_tape_backward(&f.tape, f.vm, &f.seed, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_reset(&f.tape, NULL), LLM_OK);
    capacity = f.tape.capacity;
    for (step = 0; step < 2000; step++) {
        llm_var a, b, r, t, h, q, m;
        ck_assert_int_eq(llm_tape_leaf(&f.tape, &f.x, &f.dx, &a, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_leaf(&f.tape, &f.bias, &f.dbias, &b, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_reshape(&f.tape, a, 2, s32, &r, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_transpose(&f.tape, r, 0, 1, &t, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_add(&f.tape, t, b, &h, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_mul(&f.tape, h, h, &q, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_mean(&f.tape, q, 1, 0, &m, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_backward(&f.tape, m, &f.seed, step % 2, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_reset(&f.tape, NULL), LLM_OK);
        ck_assert_uint_eq(f.tape.capacity, capacity);
    }
    {
        static const double want[3] = {16 * 2001, 16 * 2001, 34 * 2001};
        expect(&f.dbias, want, 3);
    }
    fixture_free(&f);
}
END_TEST

START_TEST(names_init_free_and_reuse)
{
    static const char *const names[] = {"leaf", "const", "add", "sub", "mul", "reshape",
                                        "transpose", "sum", "mean", "sum_all", "detach"};
    static const double x[6] = {1, 2, 3, 4, 5, 6};
    const size_t s23[2] = {2, 3}, s6[1] = {6};
    const llm_op nameless = {NULL, NULL};
    llm_tensor t;
    llm_tape tape;
    llm_var v[11];
    size_t i;
    /* every operation of the chapter, recorded, names itself */
    ck_assert_int_eq(llm_tensor_from(&t, 2, s23, x, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &t, NULL, &v[0], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &t, &v[1], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_add(&tape, v[0], v[1], &v[2], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sub(&tape, v[0], v[1], &v[3], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_mul(&tape, v[0], v[1], &v[4], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_reshape(&tape, v[0], 1, s6, &v[5], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_transpose(&tape, v[0], 0, 1, &v[6], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sum(&tape, v[0], 1, 0, &v[7], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_mean(&tape, v[0], 0, 1, &v[8], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sum_all(&tape, v[0], &v[9], NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_detach(&tape, v[0], &v[10], NULL), LLM_OK);
    for (i = 0; i < 11; i++)
        ck_assert_str_eq(llm_op_name(tape.nodes[v[i].id].op), names[i]);
    ck_assert_ptr_eq(tape.nodes[v[0].id].op, &llm_op_leaf);
    ck_assert_ptr_eq(tape.nodes[v[1].id].op, &llm_op_const);
    ck_assert(llm_op_leaf.vjp == NULL && llm_op_const.vjp == NULL);
    for (i = 2; i < 10; i++)                  /* every operation with an edge has a VJP */
        ck_assert(tape.nodes[v[i].id].op->vjp != NULL);
    llm_tape_free(&tape);
    llm_tensor_free(&t);
    ck_assert_str_eq(llm_op_name(NULL), "unknown");
    ck_assert_str_eq(llm_op_name(&nameless), "unknown");
    llm_tape_free(NULL);
    ck_assert_int_eq(llm_tape_init(&tape, 0, NULL), LLM_OK);
    ck_assert_uint_eq(tape.capacity, 1);
    ck_assert_uint_ne(tape.epoch, 0);
    llm_tape_free(&tape);
    ck_assert_ptr_null(tape.nodes);
    ck_assert_uint_eq(tape.epoch, 0);
    ck_assert_int_eq(llm_tape_init(&tape, 3, NULL), LLM_OK);
    ck_assert_uint_eq(tape.capacity, 3);
    llm_tape_free(&tape);
}
END_TEST

/* --------------------------------------------------------------- errors */

START_TEST(init_reset_and_uninitialised_tapes_are_refused)
{
    llm_tape tape, zero;
    llm_error err;
    llm_var v = {5, 5};
    const llm_tensor *val = NULL;
    const double one = 1;
    llm_tensor s = make_tensor(0, NULL, &one);
    memset(&tape, 0, sizeof tape);
    memset(&zero, 0, sizeof zero);
    REFUSED(llm_tape_init(NULL, 1, &err), LLM_ERR_ARGUMENT, "tape.init");
    REFUSED(llm_tape_init(&tape, SIZE_MAX / sizeof(llm_node) + 1, &err), LLM_ERR_OVERFLOW,
            "tape.init");
    REFUSED(llm_tape_init(&tape, SIZE_MAX / sizeof(llm_node) - 1, &err), LLM_ERR_ALLOC,
            "tape.init");
    ck_assert_ptr_null(tape.nodes);
    REFUSED(llm_tape_reset(NULL, &err), LLM_ERR_ARGUMENT, "tape.reset");
    REFUSED(llm_tape_reset(&zero, &err), LLM_ERR_TAPE, "tape.reset");
    REFUSED(llm_tape_leaf(&zero, &s, NULL, &v, &err), LLM_ERR_TAPE, "tape.leaf");
    REFUSED(llm_tape_constant(&zero, &s, &v, &err), LLM_ERR_TAPE, "tape.constant");
    REFUSED(llm_tape_backward(&zero, v, NULL, 0, &err), LLM_ERR_TAPE, "tape.backward");
    REFUSED(llm_tape_value(&zero, v, &val, &err), LLM_ERR_TAPE, "tape.value");
    ck_assert_uint_eq(v.id, 5);
    llm_tensor_free(&s);
}
END_TEST

START_TEST(every_operation_refuses_null_stale_and_foreign_handles)
{
    fixture f;
    llm_tape other;
    llm_error err;
    llm_var y = {77, 77}, foreign, gone = {9, 0}, edge, old;
    const size_t s6[1] = {6};
    const llm_tensor *val = NULL;
    const double *adj = NULL;
    fixture_record(&f);
    gone.epoch = f.tape.epoch;                     /* right epoch, id 9 >= count 7 */
    edge.id = f.tape.count;                        /* right epoch, the first id past */
    edge.epoch = f.tape.epoch;
    ck_assert_int_eq(llm_tape_init(&other, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&other, &f.x, &foreign, NULL), LLM_OK);
    ck_assert_uint_eq(foreign.id, 0);              /* a valid index here too */
    old = f.vx;
    old.epoch = f.tape.epoch - 1;
#define EVERY(call_with, stage)                                                   \
    do {                                                                          \
        llm_var h;                                                                \
        h = foreign; REFUSED(call_with, LLM_ERR_TAPE, stage);                     \
        h = gone;    REFUSED(call_with, LLM_ERR_TAPE, stage);                     \
        h = edge;    REFUSED(call_with, LLM_ERR_TAPE, stage);                     \
        h = old;     REFUSED(call_with, LLM_ERR_TAPE, stage);                     \
        (void)h;                                                                  \
    } while (0)
    EVERY(llm_tape_add(&f.tape, h, f.vx, &y, &err), "tape.add");
    EVERY(llm_tape_add(&f.tape, f.vx, h, &y, &err), "tape.add");
    EVERY(llm_tape_sub(&f.tape, h, f.vx, &y, &err), "tape.sub");
    EVERY(llm_tape_mul(&f.tape, f.vx, h, &y, &err), "tape.mul");
    EVERY(llm_tape_reshape(&f.tape, h, 1, s6, &y, &err), "tape.reshape");
    EVERY(llm_tape_transpose(&f.tape, h, 0, 1, &y, &err), "tape.transpose");
    EVERY(llm_tape_sum(&f.tape, h, 0, 0, &y, &err), "tape.sum");
    EVERY(llm_tape_mean(&f.tape, h, 0, 0, &y, &err), "tape.mean");
    EVERY(llm_tape_sum_all(&f.tape, h, &y, &err), "tape.sum_all");
    EVERY(llm_tape_detach(&f.tape, h, &y, &err), "tape.detach");
    EVERY(llm_tape_value(&f.tape, h, &val, &err), "tape.value");
    EVERY(llm_tape_adjoint(&f.tape, h, &adj, &err), "tape.adjoint");
    EVERY(llm_tape_backward(&f.tape, h, &f.seed, 0, &err), "tape.backward");
#undef EVERY
    /* NULL tape and NULL places for the result */
    REFUSED(llm_tape_add(NULL, f.vx, f.vx, &y, &err), LLM_ERR_ARGUMENT, "tape.add");
    REFUSED(llm_tape_add(&f.tape, f.vx, f.vx, NULL, &err), LLM_ERR_ARGUMENT, "tape.add");
    REFUSED(llm_tape_sub(&f.tape, f.vx, f.vx, NULL, &err), LLM_ERR_ARGUMENT, "tape.sub");
    REFUSED(llm_tape_mul(NULL, f.vx, f.vx, &y, &err), LLM_ERR_ARGUMENT, "tape.mul");
    REFUSED(llm_tape_reshape(&f.tape, f.vx, 1, s6, NULL, &err), LLM_ERR_ARGUMENT,
            "tape.reshape");
    REFUSED(llm_tape_reshape(&f.tape, f.vx, 1, NULL, &y, &err), LLM_ERR_ARGUMENT,
            "tape.reshape <- tensor.reshape");
    REFUSED(llm_tape_transpose(NULL, f.vx, 0, 1, &y, &err), LLM_ERR_ARGUMENT,
            "tape.transpose");
    REFUSED(llm_tape_sum(&f.tape, f.vx, 0, 0, NULL, &err), LLM_ERR_ARGUMENT, "tape.sum");
    REFUSED(llm_tape_mean(NULL, f.vx, 0, 0, &y, &err), LLM_ERR_ARGUMENT, "tape.mean");
    REFUSED(llm_tape_sum_all(&f.tape, f.vx, NULL, &err), LLM_ERR_ARGUMENT, "tape.sum_all");
    REFUSED(llm_tape_detach(&f.tape, f.vx, NULL, &err), LLM_ERR_ARGUMENT, "tape.detach");
    REFUSED(llm_tape_leaf(&f.tape, &f.x, NULL, NULL, &err), LLM_ERR_ARGUMENT, "tape.leaf");
    REFUSED(llm_tape_leaf(&f.tape, NULL, NULL, &y, &err), LLM_ERR_ARGUMENT, "tape.leaf");
    REFUSED(llm_tape_leaf(NULL, &f.x, NULL, &y, &err), LLM_ERR_ARGUMENT, "tape.leaf");
    REFUSED(llm_tape_constant(&f.tape, NULL, &y, &err), LLM_ERR_ARGUMENT, "tape.constant");
    REFUSED(llm_tape_constant(&f.tape, &f.x, NULL, &err), LLM_ERR_ARGUMENT, "tape.constant");
    REFUSED(llm_tape_constant(NULL, &f.x, &y, &err), LLM_ERR_ARGUMENT, "tape.constant");
    REFUSED(llm_tape_value(&f.tape, f.vx, NULL, &err), LLM_ERR_ARGUMENT, "tape.value");
    REFUSED(llm_tape_value(NULL, f.vx, &val, &err), LLM_ERR_ARGUMENT, "tape.value");
    REFUSED(llm_tape_adjoint(&f.tape, f.vx, NULL, &err), LLM_ERR_ARGUMENT, "tape.adjoint");
    REFUSED(llm_tape_backward(NULL, f.vm, &f.seed, 0, &err), LLM_ERR_ARGUMENT,
            "tape.backward");
    ck_assert_uint_eq(y.id, 77);
    ck_assert_uint_eq(f.tape.count, 7);
    llm_tape_free(&other);
    fixture_free(&f);
}
END_TEST

START_TEST(leaves_refuse_bad_values_and_accumulators)
{
    static const double v6[6] = {1, 2, 3, 4, 5, 6};
    const size_t s23[2] = {2, 3}, s3[1] = {3}, s32[2] = {3, 2};
    llm_tensor x = make_tensor(2, s23, v6), g = zeros(2, s23), g3 = zeros(1, s3), g32 = zeros(2, s32);
    llm_tensor xt, gt, nobuf, bad, gbig;
    llm_tape tape;
    llm_error err;
    llm_var v = {77, 77}, vx;
    double nan_v[6] = {1, 2, NAN, 4, 5, 6};
    llm_tensor xn = make_tensor(2, s23, nan_v);
    ck_assert_int_eq(llm_tape_init(&tape, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_transpose(&xt, &x, 0, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_transpose(&gt, &g32, 0, 1, NULL), LLM_OK);
    nobuf = x;
    nobuf.data = NULL;
    bad = x;
    bad.rank = LLM_MAX_RANK + 1;
    REFUSED(llm_tape_leaf(&tape, &xt, NULL, &v, &err), LLM_ERR_CONTIGUITY, "tape.leaf");
    REFUSED(llm_tape_leaf(&tape, &x, &gt, &v, &err), LLM_ERR_CONTIGUITY, "tape.leaf");
    REFUSED(llm_tape_leaf(&tape, &nobuf, NULL, &v, &err), LLM_ERR_ARGUMENT, "tape.leaf");
    REFUSED(llm_tape_leaf(&tape, &bad, NULL, &v, &err), LLM_ERR_ARGUMENT, "tape.leaf");
    REFUSED(llm_tape_leaf(&tape, &x, &nobuf, &v, &err), LLM_ERR_ARGUMENT, "tape.leaf");
    REFUSED(llm_tape_leaf(&tape, &x, &g3, &v, &err), LLM_ERR_SHAPE, "tape.leaf");
    REFUSED(llm_tape_leaf(&tape, &x, &g32, &v, &err), LLM_ERR_SHAPE, "tape.leaf");
    REFUSED(llm_tape_leaf(&tape, &x, &x, &v, &err), LLM_ERR_TAPE, "tape.leaf");
    REFUSED(llm_tape_leaf(&tape, &xn, NULL, &v, &err), LLM_ERR_NONFINITE, "tape.leaf");
    REFUSED(llm_tape_constant(&tape, &xn, &v, &err), LLM_ERR_NONFINITE, "tape.constant");
    REFUSED(llm_tape_constant(&tape, &nobuf, &v, &err), LLM_ERR_ARGUMENT, "tape.constant");
    REFUSED(llm_tape_constant(&tape, &bad, &v, &err), LLM_ERR_ARGUMENT, "tape.constant");
    ck_assert_uint_eq(tape.count, 0);
    ck_assert_uint_eq(v.id, 77);
    /* memory shared with an earlier leaf */
    ck_assert_int_eq(llm_tape_leaf(&tape, &x, &g, &vx, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &x, NULL, &v, NULL), LLM_OK);   /* values may repeat */
    v.id = 77;
    REFUSED(llm_tape_leaf(&tape, &g3, &g, &v, &err), LLM_ERR_SHAPE, "tape.leaf");
    gbig = g;                                       /* the same accumulator again */
    REFUSED(llm_tape_leaf(&tape, &xn, &gbig, &v, &err), LLM_ERR_TAPE, "tape.leaf");
    REFUSED(llm_tape_leaf(&tape, &g, NULL, &v, &err), LLM_ERR_TAPE, "tape.leaf");  /* value = a grad */
    REFUSED(llm_tape_leaf(&tape, &g3, &g3, &v, &err), LLM_ERR_TAPE, "tape.leaf");  /* grad = its value */
    {   /* an accumulator inside an earlier leaf's value */
        const size_t s1[1] = {1};
        llm_tensor xs, gs;
        ck_assert_int_eq(llm_tensor_slice(&xs, &x, 0, 0, 1, NULL), LLM_OK);   /* row 0 */
        ck_assert_int_eq(llm_tensor_slice(&gs, &xs, 1, 0, 1, NULL), LLM_OK);  /* x[0][0] */
        ck_assert_int_eq(llm_tensor_reshape(&gs, &gs, 1, s1, NULL), LLM_OK);
        ck_assert_int_eq(llm_tensor_zeros(&xs, 1, s1, NULL), LLM_OK);
        REFUSED(llm_tape_leaf(&tape, &xs, &gs, &v, &err), LLM_ERR_TAPE, "tape.leaf");
        llm_tensor_free(&xs);
    }
    ck_assert_uint_eq(tape.count, 2);
    ck_assert_uint_eq(v.id, 77);
    llm_tape_free(&tape);
    llm_tensor_free(&x);
    llm_tensor_free(&g);
    llm_tensor_free(&g3);
    llm_tensor_free(&g32);
    llm_tensor_free(&xn);
}
END_TEST

START_TEST(operations_pass_through_the_tensor_functions_codes)
{
    static const double big = 1e200;
    fixture f;
    llm_error err;
    llm_var y = {77, 77}, vbig, ve;
    const size_t s4[1] = {4}, s0[1] = {0}, s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    llm_tensor hb = make_tensor(0, NULL, &big), empty = zeros(1, s0);
    fixture_record(&f);
    put_constants(&f.tape, &hb, &vbig, &empty, &ve, NULL);
    REFUSED(llm_tape_add(&f.tape, f.vx, f.vm, &y, &err), LLM_ERR_BROADCAST,
            "tape.add <- tensor.broadcast_shape");
    REFUSED(llm_tape_sub(&f.tape, f.vr, f.vb, &y, &err), LLM_ERR_BROADCAST,
            "tape.sub <- tensor.broadcast_shape");
    REFUSED(llm_tape_mul(&f.tape, vbig, vbig, &y, &err), LLM_ERR_NONFINITE, "tape.mul");
    {
        llm_var b2;
        ck_assert_int_eq(llm_tape_add(&f.tape, vbig, vbig, &b2, NULL), LLM_OK);
        REFUSED(llm_tape_mul(&f.tape, vbig, b2, &y, &err), LLM_ERR_NONFINITE, "tape.mul");
    }
    REFUSED(llm_tape_reshape(&f.tape, f.vx, 1, s4, &y, &err), LLM_ERR_SHAPE, "tape.reshape <- tensor.reshape");
    REFUSED(llm_tape_reshape(&f.tape, f.vt, 1, s4, &y, &err), LLM_ERR_SHAPE, "tape.reshape <- tensor.reshape");
    REFUSED(llm_tape_reshape(&f.tape, f.vx, 9, s9, &y, &err), LLM_ERR_RANK, "tape.reshape <- tensor.reshape");
    REFUSED(llm_tape_transpose(&f.tape, f.vx, 0, 2, &y, &err), LLM_ERR_AXIS,
            "tape.transpose <- tensor.transpose");
    REFUSED(llm_tape_sum(&f.tape, f.vx, 2, 0, &y, &err), LLM_ERR_AXIS, "tape.sum <- tensor.reduce");
    REFUSED(llm_tape_mean(&f.tape, f.vm, 1, 1, &y, &err), LLM_ERR_AXIS, "tape.mean <- tensor.reduce");
    REFUSED(llm_tape_mean(&f.tape, ve, 0, 0, &y, &err), LLM_ERR_EMPTY, "tape.mean <- tensor.reduce");
    REFUSED(llm_tape_sum(&f.tape, vbig, 0, 0, &y, &err), LLM_ERR_AXIS, "tape.sum <- tensor.reduce");
    ck_assert_uint_eq(y.id, 77);
    {   /* sums that overflow: over an axis and over everything */
        static const double hv[2] = {1e308, 1e308};
        const size_t s2[1] = {2};
        llm_tensor h2 = make_tensor(1, s2, hv);
        llm_var vh2;
        ck_assert_int_eq(llm_tape_constant(&f.tape, &h2, &vh2, NULL), LLM_OK);
        REFUSED(llm_tape_sum(&f.tape, vh2, 0, 0, &y, &err), LLM_ERR_NONFINITE, "tape.sum");
        REFUSED(llm_tape_sum_all(&f.tape, vh2, &y, &err), LLM_ERR_NONFINITE, "tape.sum_all");
        /* the mean divides the overflowed sum: still infinite */
        REFUSED(llm_tape_mean(&f.tape, vh2, 0, 0, &y, &err), LLM_ERR_NONFINITE, "tape.mean");
        llm_tensor_free(&h2);
    }
    {   /* a sum and a mean over an empty axis */
        llm_var s;
        const llm_tensor *val = NULL;
        ck_assert_int_eq(llm_tape_sum(&f.tape, ve, 0, 0, &s, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_value(&f.tape, s, &val, NULL), LLM_OK);
        ck_assert(val->rank == 0 && val->data[0] == 0.0);
        ck_assert_int_eq(llm_tape_sum_all(&f.tape, ve, &s, NULL), LLM_OK);
    }
    llm_tensor_free(&hb);
    llm_tensor_free(&empty);
    fixture_free(&f);
}
END_TEST

START_TEST(backward_refuses_bad_seeds_and_overflow_and_changes_nothing)
{
    static const double nan_s[2] = {3, NAN}, big_s[2] = {1e308, 1e308};
    const size_t s3[1] = {3}, s2[1] = {2}, s21[2] = {2, 1};
    fixture f;
    llm_error err;
    llm_tensor s3t = zeros(1, s3), s21t = zeros(2, s21), nan_t = make_tensor(1, s2, nan_s);
    llm_tensor big_t = make_tensor(1, s2, big_s), nobuf;
    llm_tape before;
    llm_node nodes[7];
    double dx[6], db[3];
    const double *adj_before = NULL, *adj_after = NULL;
    fixture_record(&f);
    ck_assert_int_eq(llm_tape_backward(&f.tape, f.vm, &f.seed, 1, NULL), LLM_OK);
    memcpy(nodes, f.tape.nodes, sizeof nodes);
    memcpy(dx, f.dx.data, sizeof dx);
    memcpy(db, f.dbias.data, sizeof db);
    before = f.tape;
    ck_assert_int_eq(llm_tape_adjoint(&f.tape, f.vx, &adj_before, NULL), LLM_OK);
    nobuf = f.seed;
    nobuf.data = NULL;
    REFUSED(llm_tape_backward(&f.tape, f.vm, NULL, 0, &err), LLM_ERR_RANK, "tape.backward");
    REFUSED(llm_tape_backward(&f.tape, f.vm, &s3t, 0, &err), LLM_ERR_SHAPE, "tape.backward");
    REFUSED(llm_tape_backward(&f.tape, f.vm, &s21t, 0, &err), LLM_ERR_SHAPE, "tape.backward");
    REFUSED(llm_tape_backward(&f.tape, f.vm, &nobuf, 0, &err), LLM_ERR_ARGUMENT,
            "tape.backward");
    REFUSED(llm_tape_backward(&f.tape, f.vm, &nan_t, 0, &err), LLM_ERR_NONFINITE,
            "tape.backward");
    REFUSED(llm_tape_backward(&f.tape, f.vm, &big_t, 0, &err), LLM_ERR_NONFINITE,
            "tape.backward");
    ck_assert_ptr_nonnull(strstr(err.message, "no gradient was changed"));
    /* the adjoints are finite but the accumulator overflows on commit */
    f.dbias.data[2] = 1.7e308;
    db[2] = 1.7e308;
    {
        static const double sv[2] = {3e306, 6e306};
        llm_tensor sd = make_tensor(1, s2, sv);
        REFUSED(llm_tape_backward(&f.tape, f.vm, &sd, 0, &err), LLM_ERR_NONFINITE,
                "tape.backward");
        ck_assert_ptr_nonnull(strstr(err.message, "leaf 1"));
        llm_tensor_free(&sd);
    }
    ck_assert_int_eq(memcmp(&before, &f.tape, sizeof before), 0);
    ck_assert_int_eq(memcmp(nodes, f.tape.nodes, sizeof nodes), 0);
    ck_assert_int_eq(memcmp(dx, f.dx.data, sizeof dx), 0);
    ck_assert_int_eq(memcmp(db, f.dbias.data, sizeof db), 0);
    ck_assert_int_eq(llm_tape_adjoint(&f.tape, f.vx, &adj_after, NULL), LLM_OK);
    ck_assert_ptr_eq(adj_before, adj_after);
    ck_assert(!f.tape.released);
    llm_tensor_free(&s3t);
    llm_tensor_free(&s21t);
    llm_tensor_free(&nan_t);
    llm_tensor_free(&big_t);
    fixture_free(&f);
}
END_TEST

START_TEST(an_allocation_failure_in_the_middle_of_a_pass_changes_nothing)
{
    static const double xv[2] = {1.5, -2};
    const size_t s2[1] = {2};
    llm_tensor x = make_tensor(1, s2, xv), g = zeros(1, s2);
    llm_tape tape;
    llm_error err;
    llm_var vx, sq, y;
    size_t saved;
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &x, &g, &vx, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_mul(&tape, vx, vx, &sq, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sum_all(&tape, sq, &y, NULL), LLM_OK);
    /* node sq claims more elements than any allocator can give: its adjoint
       fails after the output's adjoint was already allocated */
    saved = tape.nodes[sq.id].value.size;
    tape.nodes[sq.id].value.size = SIZE_MAX / 16;
    REFUSED(llm_tape_backward(&tape, y, NULL, 0, &err), LLM_ERR_ALLOC, "tape.backward");
    ck_assert(g.data[0] == 0.0 && g.data[1] == 0.0);
    ck_assert(!tape.released);
    tape.nodes[sq.id].value.size = saved;
    ck_assert_int_eq(llm_tape_backward(&tape, y, NULL, 0, NULL), LLM_OK);
    ck_assert(g.data[0] == 3.0 && g.data[1] == -4.0);
    llm_tape_free(&tape);
    llm_tensor_free(&x);
    llm_tensor_free(&g);
}
END_TEST

START_TEST(a_tape_that_cannot_grow_refuses_and_keeps_its_capacity)
{
    static const double one = 1;
    llm_tensor s = make_tensor(0, NULL, &one);
    llm_tape tape;
    llm_error err;
    llm_var v, y = {77, 77};
    const size_t s1[1] = {1};
    ck_assert_int_eq(llm_tape_init(&tape, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &s, &v, NULL), LLM_OK);
    /* full and too large to double */
    tape.count = tape.capacity = SIZE_MAX / sizeof(llm_node);
    REFUSED(llm_tape_constant(&tape, &s, &y, &err), LLM_ERR_OVERFLOW, "tape.constant");
    REFUSED(llm_tape_add(&tape, v, v, &y, &err), LLM_ERR_OVERFLOW, "tape.add");
    REFUSED(llm_tape_sub(&tape, v, v, &y, &err), LLM_ERR_OVERFLOW, "tape.sub");
    REFUSED(llm_tape_mul(&tape, v, v, &y, &err), LLM_ERR_OVERFLOW, "tape.mul");
    REFUSED(llm_tape_reshape(&tape, v, 1, s1, &y, &err), LLM_ERR_OVERFLOW, "tape.reshape");
    REFUSED(llm_tape_sum_all(&tape, v, &y, &err), LLM_ERR_OVERFLOW, "tape.sum_all");
    REFUSED(llm_tape_detach(&tape, v, &y, &err), LLM_ERR_OVERFLOW, "tape.detach");
    /* full, could double, but no allocator gives the bytes */
    tape.count = tape.capacity = SIZE_MAX / 2 / sizeof(llm_node) - 1;
    REFUSED(llm_tape_add(&tape, v, v, &y, &err), LLM_ERR_ALLOC, "tape.add");
    REFUSED(llm_tape_constant(&tape, &s, &y, &err), LLM_ERR_ALLOC, "tape.constant");
    ck_assert_uint_eq(tape.capacity, SIZE_MAX / 2 / sizeof(llm_node) - 1);
    ck_assert_uint_eq(y.id, 77);
    tape.count = tape.capacity = 1;
    {   /* transpose, sum and mean need an operand of rank >= 1 */
        const size_t s2[1] = {2};
        llm_tensor two = zeros(1, s2);
        llm_var w;
        ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_constant(&tape, &two, &w, NULL), LLM_OK);
        tape.count = tape.capacity = SIZE_MAX / sizeof(llm_node);
        REFUSED(llm_tape_transpose(&tape, w, 0, 0, &y, &err), LLM_ERR_OVERFLOW,
                "tape.transpose");
        REFUSED(llm_tape_sum(&tape, w, 0, 0, &y, &err), LLM_ERR_OVERFLOW, "tape.sum");
        REFUSED(llm_tape_mean(&tape, w, 0, 1, &y, &err), LLM_ERR_OVERFLOW, "tape.mean");
        tape.count = tape.capacity = 1;
        llm_tensor_free(&two);
    }
    llm_tape_free(&tape);
    llm_tensor_free(&s);
}
END_TEST

/* ------------------------------------------------------------ rewind */

START_TEST(rewind_frees_the_nodes_since_the_mark_and_ids_are_reused)
{
    static const double xv[3] = {1, 2, 3};
    const size_t s3[1] = {3}, s31[2] = {3, 1};
    llm_tape tape;
    llm_error err;
    llm_tensor x = make_tensor(1, s3, xv), dx = zeros(1, s3);
    llm_var vx, sq, a, t, total, again, loss;
    const llm_tensor *val = NULL;
    size_t mark, capacity, epoch, j;
    ck_assert_int_eq(llm_tape_init(&tape, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &x, &dx, &vx, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_mul(&tape, vx, vx, &sq, NULL), LLM_OK);
    mark = llm_tape_mark(&tape);
    ck_assert_uint_eq(mark, 2);
    /* owned values, a view of one of them, a scalar: freed by the rewind
       (the sanitizer's leak check would see any of them left behind) */
    ck_assert_int_eq(llm_tape_add(&tape, sq, vx, &a, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_reshape(&tape, a, 2, s31, &t, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sum_all(&tape, t, &total, NULL), LLM_OK);
    ck_assert_uint_eq(tape.count, 5);
    capacity = tape.capacity;
    epoch = tape.epoch;
    ck_assert_int_eq(llm_tape_rewind(&tape, mark, &err), LLM_OK);
    ck_assert_uint_eq(tape.count, mark);
    ck_assert_uint_eq(tape.capacity, capacity);   /* the node array is kept */
    ck_assert_uint_eq(tape.epoch, epoch);         /* handles below the mark stay valid */
    /* a rewound handle is off the recording until its id is reused */
    REFUSED(llm_tape_value(&tape, total, &val, &err), LLM_ERR_TAPE, "tape.value");
    ck_assert_ptr_null(val);
    ck_assert_int_eq(llm_tape_value(&tape, sq, &val, NULL), LLM_OK);
    for (j = 0; j < 3; j++)
        ck_assert(val->data[val->offset + j] == xv[j] * xv[j]);
    /* the next node gets the mark's id, and the graph works as if the
       rewound nodes had never been recorded: d/dx sum(x^2) = 2x */
    ck_assert_int_eq(llm_tape_sum_all(&tape, sq, &again, NULL), LLM_OK);
    ck_assert_uint_eq(again.id, mark);
    ck_assert_int_eq(llm_tape_add(&tape, again, again, &loss, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&tape, loss, &val, NULL), LLM_OK);
    ck_assert(val->data[val->offset] == 28.0);
    ck_assert_int_eq(llm_tape_backward(&tape, loss, NULL, 0, NULL), LLM_OK);
    for (j = 0; j < 3; j++)
        ck_assert(dx.data[j] == 4 * xv[j]);
    llm_tape_free(&tape);
    llm_tensor_free(&x);
    llm_tensor_free(&dx);
}
END_TEST

START_TEST(rewind_keeps_the_adjoints_below_the_mark_and_to_the_count_is_a_no_op)
{
    static const double xv[2] = {3, -2};
    const size_t s2[1] = {2};
    llm_tape tape;
    llm_tensor x = make_tensor(1, s2, xv), dx = zeros(1, s2);
    llm_var vx, sq, total, extra;
    const double *before = NULL, *after = NULL;
    double saved[2];
    size_t mark;
    ck_assert_int_eq(llm_tape_init(&tape, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &x, &dx, &vx, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_mul(&tape, vx, vx, &sq, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sum_all(&tape, sq, &total, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, total, NULL, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_adjoint(&tape, sq, &before, NULL), LLM_OK);
    ck_assert_ptr_nonnull(before);
    memcpy(saved, before, sizeof saved);
    mark = llm_tape_mark(&tape);
    ck_assert_int_eq(llm_tape_rewind(&tape, mark, NULL), LLM_OK);   /* nothing to free */
    ck_assert_uint_eq(tape.count, mark);
    ck_assert_int_eq(llm_tape_mul(&tape, sq, sq, &extra, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_rewind(&tape, mark, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_adjoint(&tape, sq, &after, NULL), LLM_OK);
    ck_assert_ptr_eq(after, before);
    ck_assert(memcmp(after, saved, sizeof saved) == 0);
    ck_assert(dx.data[0] == 6.0 && dx.data[1] == -4.0);   /* grads untouched */
    llm_tape_free(&tape);
    llm_tensor_free(&x);
    llm_tensor_free(&dx);
}
END_TEST

START_TEST(rewind_refuses_a_mark_beyond_the_count_and_unusable_tapes)
{
    static const double one = 1;
    llm_tape tape, zero;
    llm_error err;
    llm_tensor s = make_tensor(0, NULL, &one), ds = zeros(0, NULL);
    llm_var vs, sq;
    memset(&zero, 0, sizeof zero);
    ck_assert_uint_eq(llm_tape_mark(NULL), 0);
    ck_assert_uint_eq(llm_tape_mark(&zero), 0);
    REFUSED(llm_tape_rewind(NULL, 0, &err), LLM_ERR_ARGUMENT, "tape.rewind");
    REFUSED(llm_tape_rewind(&zero, 0, &err), LLM_ERR_TAPE, "tape.rewind");
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &s, &ds, &vs, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_mul(&tape, vs, vs, &sq, NULL), LLM_OK);
    REFUSED(llm_tape_rewind(&tape, 3, &err), LLM_ERR_TAPE, "tape.rewind");
    REFUSED(llm_tape_rewind(&tape, SIZE_MAX, &err), LLM_ERR_TAPE, "tape.rewind");
    ck_assert_uint_eq(tape.count, 2);
    ck_assert_int_eq(tape.nodes[sq.id].value.owns, 1);   /* nothing was freed */
    ck_assert(tape.nodes[sq.id].value.data[0] == 1.0);
    ck_assert_int_eq(llm_tape_backward(&tape, sq, NULL, 0, NULL), LLM_OK);
    REFUSED(llm_tape_rewind(&tape, 1, &err), LLM_ERR_TAPE, "tape.rewind");
    ck_assert_uint_eq(tape.count, 2);
    ck_assert(ds.data[0] == 2.0);
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_rewind(&tape, 0, NULL), LLM_OK);
    llm_tape_free(&tape);
    REFUSED(llm_tape_rewind(&tape, 0, &err), LLM_ERR_TAPE, "tape.rewind");
    llm_tensor_free(&s);
    llm_tensor_free(&ds);
}
END_TEST

START_TEST(a_node_is_read_through_llm_tape_node)
{
    static const double xs[4] = {1, 2, 3, 4};
    const size_t s4[1] = {4};
    llm_tensor x = make_tensor(1, s4, xs), g, seed;
    llm_tape tape, fresh;
    llm_node_info info, marker;
    const llm_tensor *value;
    const double *adjoint;
    llm_error err;
    llm_var a, c, y, s;
    ck_assert_int_eq(llm_tensor_zeros(&g, 1, s4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &x, &g, &a, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &x, &c, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_mul(&tape, a, c, &y, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sum_all(&tape, y, &s, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, s, NULL, 1, NULL), LLM_OK);
    /* the leaf: borrowed value, the caller's accumulator, no operands */
    ck_assert_int_eq(llm_tape_node(&tape, a.id, &info, NULL), LLM_OK);
    ck_assert_ptr_eq(info.op, &llm_op_leaf);
    ck_assert_uint_eq(info.nargs, 0);
    ck_assert_ptr_eq(info.grad, &g);
    ck_assert_ptr_eq(info.value->data, x.data);
    ck_assert_int_eq(info.value->owns, 0);
    ck_assert_int_eq(info.needs_grad, 1);
    /* the product: two operands, an owned value, the kept pass's adjoint */
    ck_assert_int_eq(llm_tape_node(&tape, y.id, &info, NULL), LLM_OK);
    ck_assert_str_eq(llm_op_name(info.op), "mul");
    ck_assert_uint_eq(info.nargs, 2);
    ck_assert_uint_eq(info.arg[0], a.id);
    ck_assert_uint_eq(info.arg[1], c.id);
    ck_assert_ptr_null(info.grad);
    ck_assert_int_eq(llm_tape_value(&tape, y, &value, NULL), LLM_OK);
    ck_assert_ptr_eq(info.value, value);
    ck_assert_int_eq(info.value->owns, 1);
    ck_assert_int_eq(llm_tape_adjoint(&tape, y, &adjoint, NULL), LLM_OK);
    ck_assert_ptr_eq(info.adjoint, adjoint);
    ck_assert(adjoint[0] == 1.0 && adjoint[3] == 1.0);
    /* the constant: a copy that needs no gradient */
    ck_assert_int_eq(llm_tape_node(&tape, c.id, &info, NULL), LLM_OK);
    ck_assert_ptr_eq(info.op, &llm_op_const);
    ck_assert_int_eq(info.needs_grad, 0);
    ck_assert_ptr_ne(info.value->data, x.data);
    /* refusals write nothing */
    memset(&marker, 0x5a, sizeof marker);
    info = marker;
    REFUSED(llm_tape_node(&tape, tape.count, &info, &err), LLM_ERR_TAPE, "tape.node");
    REFUSED(llm_tape_node(&tape, SIZE_MAX, &info, &err), LLM_ERR_TAPE, "tape.node");
    REFUSED(llm_tape_node(NULL, 0, &info, &err), LLM_ERR_ARGUMENT, "tape.node");
    REFUSED(llm_tape_node(&tape, 0, NULL, &err), LLM_ERR_ARGUMENT, "tape.node");
    memset(&fresh, 0, sizeof fresh);
    REFUSED(llm_tape_node(&fresh, 0, &info, &err), LLM_ERR_TAPE, "tape.node");
    ck_assert_int_eq(llm_tensor_zeros(&seed, 0, NULL, NULL), LLM_OK);
    seed.data[0] = 1.0;
    ck_assert_int_eq(llm_tape_backward(&tape, s, &seed, 0, NULL), LLM_OK);   /* releases */
    REFUSED(llm_tape_node(&tape, 0, &info, &err), LLM_ERR_TAPE, "tape.node");
    ck_assert(memcmp(&info, &marker, sizeof info) == 0);
    ck_assert_uint_eq(llm_tape_node_size(), sizeof(llm_node));
    llm_tape_free(&tape);
    llm_tensor_free(&x);
    llm_tensor_free(&g);
    llm_tensor_free(&seed);
}
END_TEST

START_TEST(the_tape_lists_its_leaves)
{
    static const double xs[4] = {1, 2, 3, 4};
    const size_t s4[1] = {4};
    llm_tensor a = make_tensor(1, s4, xs), b = make_tensor(1, s4, xs), c = make_tensor(1, s4, xs), ga, gb;
    llm_tape tape;
    llm_var va, vb, vc, y, z;
    llm_error err;
    size_t mark;
    ck_assert_int_eq(llm_tensor_zeros(&ga, 1, s4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&gb, 1, s4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &a, &ga, &va, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &c, &vc, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_add(&tape, va, vc, &y, NULL), LLM_OK);
    mark = llm_tape_mark(&tape);
    ck_assert_int_eq(llm_tape_leaf(&tape, &b, &gb, &vb, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_mul(&tape, vb, y, &z, NULL), LLM_OK);
    ck_assert_uint_eq(tape.nleaves, 2);                /* leaves only: not the constant */
    ck_assert_uint_eq(tape.leaves[0], va.id);
    ck_assert_uint_eq(tape.leaves[1], vb.id);
    /* an accumulator shared with a listed leaf is still found */
    ck_assert_int_eq(llm_tape_leaf(&tape, &c, &gb, &z, &err), LLM_ERR_TAPE);
    ck_assert_uint_eq(tape.nleaves, 2);
    ck_assert_int_eq(llm_tape_rewind(&tape, mark, NULL), LLM_OK);
    ck_assert_uint_eq(tape.nleaves, 1);                /* b's leaf went with the rewind */
    ck_assert_int_eq(llm_tape_leaf(&tape, &b, &gb, &vb, NULL), LLM_OK);   /* allowed now */
    ck_assert_uint_eq(tape.leaves[1], mark);
    /* the list cannot grow: refused, nothing recorded */
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    ck_assert_uint_eq(tape.nleaves, 0);
    {
        llm_tape fresh;
        ck_assert_int_eq(llm_tape_init(&fresh, 4, NULL), LLM_OK);
        llm_alloc_fail_at(1);
        ck_assert_int_eq(llm_tape_leaf(&fresh, &a, &ga, &va, &err), LLM_ERR_ALLOC);
        llm_alloc_fail_at(0);
        ck_assert_str_eq(err.stage, "tape.leaf");
        ck_assert_uint_eq(fresh.count, 0);
        ck_assert_uint_eq(fresh.nleaves, 0);
        llm_tape_free(&fresh);
    }
    llm_tape_free(&tape);
    ck_assert_ptr_null(tape.leaves);
    llm_tensor_free(&a);
    llm_tensor_free(&b);
    llm_tensor_free(&c);
    llm_tensor_free(&ga);
    llm_tensor_free(&gb);
}
END_TEST

Suite *ch15_tensor_autodiff_core_suite(void)
{
    const TTest *tests[] = {
        the_fixture_matches_the_rust_course,
        views_share_buffers_and_computed_values_own_theirs,
        keep_graph_twice_doubles_and_release_refuses_more,
        a_leaf_reached_by_several_paths_accumulates_every_edge,
        detach_stops_the_gradient_and_skips_the_subgraph,
        backward_from_an_inner_node_and_seeds_in_any_layout,
        leaves_may_be_contiguous_views_with_an_offset,
        binary_products_in_every_broadcast_combination,
        unary_products_on_every_axis,
        two_thousand_steps_keep_the_capacity,
        names_init_free_and_reuse,
        a_node_is_read_through_llm_tape_node,
        the_tape_lists_its_leaves,
        init_reset_and_uninitialised_tapes_are_refused,
        every_operation_refuses_null_stale_and_foreign_handles,
        leaves_refuse_bad_values_and_accumulators,
        operations_pass_through_the_tensor_functions_codes,
        backward_refuses_bad_seeds_and_overflow_and_changes_nothing,
        an_allocation_failure_in_the_middle_of_a_pass_changes_nothing,
        a_tape_that_cannot_grow_refuses_and_keeps_its_capacity,
        rewind_frees_the_nodes_since_the_mark_and_ids_are_reused,
        rewind_keeps_the_adjoints_below_the_mark_and_to_the_count_is_a_no_op,
        rewind_refuses_a_mark_beyond_the_count_and_unusable_tapes,
    };
    return suite_of("ch15 tensor autodiff core",
                    tcase_of("tape", 60, tests, COUNT(tests)));
}
