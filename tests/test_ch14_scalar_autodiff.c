/* Chapter 14: the scalar tape, reverse accumulation, detach, refusals. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/stape.h"
#include "llm/error.h"
#include "support.h"

/* x = 2, sq = x*x, loss = sq + sq on a fresh tape of capacity 2. */
static void fixture(llm_stape *tape, size_t *x, size_t *sq, size_t *loss)
{
    ck_assert_int_eq(llm_stape_init(tape, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_leaf(tape, 2.0, x, NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_mul(tape, *x, *x, sq, NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_add(tape, *sq, *sq, loss, NULL), LLM_OK);
}

static double grad_of(const llm_stape *tape, size_t id)
{
    double g = NAN;
    ck_assert_int_eq(llm_stape_grad(tape, id, &g, NULL), LLM_OK);
    return g;
}

static double value_of(const llm_stape *tape, size_t id)
{
    double v = NAN;
    ck_assert_int_eq(llm_stape_value(tape, id, &v, NULL), LLM_OK);
    return v;
}

START_TEST(fixture_values_and_gradients)
{
    llm_stape tape;
    size_t x, sq, loss;
    fixture(&tape, &x, &sq, &loss);
    ck_assert_uint_eq(x, 0);
    ck_assert_uint_eq(sq, 1);
    ck_assert_uint_eq(loss, 2);
    ck_assert(value_of(&tape, sq) == 4.0);
    ck_assert(value_of(&tape, loss) == 8.0);
    ck_assert(grad_of(&tape, x) == 0.0);     /* recording does not touch grads */
    ck_assert_int_eq(llm_stape_backward(&tape, loss, 1.0, NULL), LLM_OK);
    ck_assert(grad_of(&tape, loss) == 1.0);
    ck_assert(grad_of(&tape, sq) == 2.0);
    ck_assert(grad_of(&tape, x) == 8.0);
    llm_stape_free(&tape);
}
END_TEST

START_TEST(repeated_operands_count_every_edge)
{
    llm_stape tape;
    size_t x, sq, loss;
    double d;
    fixture(&tape, &x, &sq, &loss);
    ck_assert_uint_eq(tape.nodes[sq].nargs, 2);
    ck_assert_uint_eq(tape.nodes[sq].arg[0], x);
    ck_assert_uint_eq(tape.nodes[sq].arg[1], x);
    ck_assert_int_eq(llm_stape_partial(&tape, sq, 0, &d, NULL), LLM_OK);
    ck_assert(d == 2.0);
    ck_assert_int_eq(llm_stape_partial(&tape, sq, 1, &d, NULL), LLM_OK);
    ck_assert(d == 2.0);
    ck_assert_int_eq(llm_stape_partial(&tape, loss, 1, &d, NULL), LLM_OK);
    ck_assert(d == 1.0);
    llm_stape_free(&tape);
}
END_TEST

START_TEST(a_second_backward_adds_and_zero_grad_clears)
{
    llm_stape tape;
    size_t x, sq, loss;
    fixture(&tape, &x, &sq, &loss);
    ck_assert_int_eq(llm_stape_backward(&tape, loss, 1.0, NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_backward(&tape, loss, 1.0, NULL), LLM_OK);
    ck_assert(grad_of(&tape, loss) == 2.0);
    ck_assert(grad_of(&tape, sq) == 4.0);
    ck_assert(grad_of(&tape, x) == 16.0);
    ck_assert_int_eq(llm_stape_zero_grad(&tape, NULL), LLM_OK);
    ck_assert(grad_of(&tape, loss) == 0.0);
    ck_assert(grad_of(&tape, sq) == 0.0);
    ck_assert(grad_of(&tape, x) == 0.0);
    ck_assert(!signbit(grad_of(&tape, x)));
    ck_assert(value_of(&tape, loss) == 8.0);   /* values survive zero_grad */
    ck_assert_int_eq(llm_stape_backward(&tape, loss, 1.0, NULL), LLM_OK);
    ck_assert(grad_of(&tape, x) == 8.0);
    llm_stape_free(&tape);
}
END_TEST

START_TEST(the_seed_scales_every_adjoint)
{
    llm_stape tape;
    size_t x, sq, loss;
    fixture(&tape, &x, &sq, &loss);
    ck_assert_int_eq(llm_stape_backward(&tape, loss, -0.5, NULL), LLM_OK);
    ck_assert(grad_of(&tape, loss) == -0.5);
    ck_assert(grad_of(&tape, sq) == -1.0);
    ck_assert(grad_of(&tape, x) == -4.0);
    llm_stape_free(&tape);
}
END_TEST

START_TEST(backward_from_an_inner_node_leaves_later_nodes_alone)
{
    llm_stape tape;
    size_t x, sq, loss;
    fixture(&tape, &x, &sq, &loss);
    ck_assert_int_eq(llm_stape_backward(&tape, sq, 1.0, NULL), LLM_OK);
    ck_assert(grad_of(&tape, loss) == 0.0);
    ck_assert(grad_of(&tape, sq) == 1.0);
    ck_assert(grad_of(&tape, x) == 4.0);
    llm_stape_free(&tape);
}
END_TEST

START_TEST(detach_cuts_the_edge_but_keeps_the_value)
{
    llm_stape tape;
    size_t x, sq, loss, d, s, y;
    fixture(&tape, &x, &sq, &loss);
    ck_assert_int_eq(llm_stape_detach(&tape, x, &d, NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_scale(&tape, d, 3.0, &s, NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_add(&tape, sq, s, &y, NULL), LLM_OK);
    ck_assert(value_of(&tape, d) == 2.0);
    ck_assert(value_of(&tape, y) == 10.0);
    ck_assert_uint_eq(tape.nodes[d].nargs, 0);
    ck_assert_uint_eq(tape.nodes[d].arg[0], x);
    ck_assert_int_eq(llm_stape_backward(&tape, y, 1.0, NULL), LLM_OK);
    ck_assert(grad_of(&tape, x) == 4.0);       /* only x*x reaches x */
    ck_assert(grad_of(&tape, d) == 3.0);       /* the detached copy has its own */
    ck_assert(grad_of(&tape, s) == 1.0);
    ck_assert(grad_of(&tape, loss) == 0.0);    /* not on the way to y */
    llm_stape_free(&tape);
}
END_TEST

START_TEST(exp_of_tanh_matches_the_rust_course)
{
    llm_stape tape;
    size_t a, t, e;
    ck_assert_int_eq(llm_stape_init(&tape, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_leaf(&tape, 0.5, &a, NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_tanh(&tape, a, &t, NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_exp(&tape, t, &e, NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_backward(&tape, e, 1.0, NULL), LLM_OK);
    ck_assert_double_eq_tol(value_of(&tape, e), 1.587431271430, 5e-13);
    ck_assert_double_eq_tol(grad_of(&tape, a), 1.248431724655, 5e-13);
    ck_assert(grad_of(&tape, t) == value_of(&tape, e));
    llm_stape_free(&tape);
}
END_TEST

/* f(a, b) for one operation, recorded on a fresh tape; the gradient of the
   result with respect to a and b, when grads is not NULL. */
static double run_op(int op, double a, double b, double *grads)
{
    llm_stape tape;
    size_t ia, ib, out = 0;
    double v;
    ck_assert_int_eq(llm_stape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_leaf(&tape, a, &ia, NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_leaf(&tape, b, &ib, NULL), LLM_OK);
    switch (op) {
    case 0: ck_assert_int_eq(llm_stape_add(&tape, ia, ib, &out, NULL), LLM_OK); break;
    case 1: ck_assert_int_eq(llm_stape_mul(&tape, ia, ib, &out, NULL), LLM_OK); break;
    case 2: ck_assert_int_eq(llm_stape_exp(&tape, ia, &out, NULL), LLM_OK); break;
    case 3: ck_assert_int_eq(llm_stape_tanh(&tape, ia, &out, NULL), LLM_OK); break;
    default: ck_assert_int_eq(llm_stape_scale(&tape, ia, -1.75, &out, NULL), LLM_OK); break;
    }
    v = value_of(&tape, out);
    if (grads != NULL) {
        ck_assert_int_eq(llm_stape_backward(&tape, out, 1.0, NULL), LLM_OK);
        grads[0] = grad_of(&tape, ia);
        grads[1] = grad_of(&tape, ib);
    }
    llm_stape_free(&tape);
    return v;
}

START_TEST(local_derivatives_agree_with_central_differences)
{
    static const double points[4][2] = {{0.5, -1.25}, {-2.0, 3.0}, {1.5, 0.25}, {0.0, 0.7}};
    const double h = 1e-6;
    int op, p;
    for (op = 0; op < 5; op++)
        for (p = 0; p < 4; p++) {
            const double a = points[p][0], b = points[p][1];
            double g[2];
            const double da = (run_op(op, a + h, b, NULL) - run_op(op, a - h, b, NULL)) / (2 * h);
            const double db = (run_op(op, a, b + h, NULL) - run_op(op, a, b - h, NULL)) / (2 * h);
            run_op(op, a, b, g);
            ck_assert_msg(fabs(g[0] - da) <= 1e-7 * (1 + fabs(da)),
                          "op %d at (%g, %g): tape %.12g, difference %.12g", op, a, b, g[0], da);
            ck_assert_msg(fabs(g[1] - db) <= 1e-7 * (1 + fabs(db)),
                          "op %d at (%g, %g): tape %.12g, difference %.12g", op, a, b, g[1], db);
        }
}
END_TEST

START_TEST(order_lists_each_node_before_its_operands)
{
    llm_stape tape;
    size_t ids[12], order[12], n = 0, i, j, k;
    int pos[12];
    ck_assert_int_eq(llm_stape_init(&tape, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_leaf(&tape, 0.3, &ids[0], NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_leaf(&tape, -0.4, &ids[1], NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_mul(&tape, ids[0], ids[1], &ids[2], NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_tanh(&tape, ids[2], &ids[3], NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_exp(&tape, ids[0], &ids[4], NULL), LLM_OK);  /* unused */
    ck_assert_int_eq(llm_stape_detach(&tape, ids[3], &ids[5], NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_add(&tape, ids[3], ids[5], &ids[6], NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_mul(&tape, ids[6], ids[1], &ids[7], NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_order(&tape, ids[7], order, &n, NULL), LLM_OK);
    ck_assert_uint_eq(n, 7);                  /* all but the unused exp */
    ck_assert_uint_eq(order[0], ids[7]);
    for (i = 0; i < 12; i++)
        pos[i] = -1;
    for (i = 0; i < n; i++)
        pos[order[i]] = (int)i;
    ck_assert_int_eq(pos[ids[4]], -1);
    for (i = 0; i < n; i++) {
        const llm_snode *v = &tape.nodes[order[i]];
        for (k = 0; k < v->nargs; k++) {
            j = v->arg[k];
            ck_assert_int_ge(pos[j], 0);      /* every operand is listed ... */
            ck_assert_int_gt(pos[j], (int)i); /* ... after the node using it */
        }
    }
    /* the detached node is listed (it feeds the add) but its source's
       position comes from the tanh's own use, not from the detach */
    ck_assert_int_ge(pos[ids[5]], 0);
    ck_assert_int_eq(llm_stape_order(&tape, ids[0], order, &n, NULL), LLM_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(order[0], ids[0]);
    llm_stape_free(&tape);
}
END_TEST

START_TEST(the_tape_grows_without_invalidating_ids)
{
    llm_stape tape;
    size_t x, acc, i, first_capacity;
    const size_t n = 1000;
    ck_assert_int_eq(llm_stape_init(&tape, 0, NULL), LLM_OK);
    ck_assert_uint_eq(tape.capacity, 1);
    first_capacity = tape.capacity;
    ck_assert_int_eq(llm_stape_leaf(&tape, 1.5, &x, NULL), LLM_OK);
    acc = x;
    for (i = 1; i < n; i++)                   /* acc = x + x + ... + x */
        ck_assert_int_eq(llm_stape_add(&tape, acc, x, &acc, NULL), LLM_OK);
    ck_assert_uint_gt(tape.capacity, first_capacity);
    ck_assert_uint_ge(tape.capacity, n);
    ck_assert_uint_eq(tape.count, n);
    ck_assert(value_of(&tape, x) == 1.5);
    ck_assert(value_of(&tape, acc) == 1.5 * (double)n);
    ck_assert_int_eq(llm_stape_backward(&tape, acc, 1.0, NULL), LLM_OK);
    ck_assert(grad_of(&tape, x) == (double)n);
    llm_stape_free(&tape);
}
END_TEST

START_TEST(a_freed_tape_is_empty_and_reusable)
{
    llm_stape tape;
    size_t x;
    ck_assert_int_eq(llm_stape_init(&tape, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_stape_leaf(&tape, 1.0, &x, NULL), LLM_OK);
    llm_stape_free(&tape);
    ck_assert_ptr_null(tape.nodes);
    ck_assert_uint_eq(tape.count, 0);
    ck_assert_uint_eq(tape.capacity, 0);
    ck_assert_int_eq(llm_stape_grad(&tape, 0, &(double){0}, NULL), LLM_ERR_TAPE);
    ck_assert_int_eq(llm_stape_leaf(&tape, 4.0, &x, NULL), LLM_OK);  /* grows from 0 */
    ck_assert_uint_eq(x, 0);
    ck_assert(value_of(&tape, x) == 4.0);
    llm_stape_free(&tape);
    llm_stape_free(NULL);
}
END_TEST

START_TEST(names_of_operations_and_the_tape_code)
{
    ck_assert_str_eq(llm_sop_name(LLM_SOP_LEAF), "leaf");
    ck_assert_str_eq(llm_sop_name(LLM_SOP_MUL), "mul");
    ck_assert_str_eq(llm_sop_name(LLM_SOP_DETACH), "detach");
    ck_assert_str_eq(llm_sop_name((llm_sop)99), "unknown");
    ck_assert_str_eq(llm_status_name(LLM_ERR_TAPE), "tape");
}
END_TEST

/* Expects st with the given code and stage. */
START_TEST(null_arguments_are_refused_at_every_stage)
{
    llm_stape tape;
    llm_error err;
    size_t x, sq, loss, id = 77, order[3], n = 0;
    double v = -1.0;
    fixture(&tape, &x, &sq, &loss);
    REFUSED(llm_stape_init(NULL, 4, &err), LLM_ERR_ARGUMENT, "stape.init");
    REFUSED(llm_stape_leaf(NULL, 1.0, &id, &err), LLM_ERR_ARGUMENT, "stape.leaf");
    REFUSED(llm_stape_leaf(&tape, 1.0, NULL, &err), LLM_ERR_ARGUMENT, "stape.leaf");
    REFUSED(llm_stape_add(&tape, x, x, NULL, &err), LLM_ERR_ARGUMENT, "stape.add");
    REFUSED(llm_stape_mul(NULL, x, x, &id, &err), LLM_ERR_ARGUMENT, "stape.mul");
    REFUSED(llm_stape_scale(&tape, x, 2.0, NULL, &err), LLM_ERR_ARGUMENT, "stape.scale");
    REFUSED(llm_stape_exp(&tape, x, NULL, &err), LLM_ERR_ARGUMENT, "stape.exp");
    REFUSED(llm_stape_tanh(NULL, x, &id, &err), LLM_ERR_ARGUMENT, "stape.tanh");
    REFUSED(llm_stape_detach(&tape, x, NULL, &err), LLM_ERR_ARGUMENT, "stape.detach");
    REFUSED(llm_stape_partial(&tape, sq, 0, NULL, &err), LLM_ERR_ARGUMENT, "stape.partial");
    REFUSED(llm_stape_partial(NULL, sq, 0, &v, &err), LLM_ERR_ARGUMENT, "stape.partial");
    REFUSED(llm_stape_backward(NULL, loss, 1.0, &err), LLM_ERR_ARGUMENT, "stape.backward");
    REFUSED(llm_stape_zero_grad(NULL, &err), LLM_ERR_ARGUMENT, "stape.zero_grad");
    REFUSED(llm_stape_value(&tape, x, NULL, &err), LLM_ERR_ARGUMENT, "stape.value");
    REFUSED(llm_stape_grad(NULL, x, &v, &err), LLM_ERR_ARGUMENT, "stape.grad");
    REFUSED(llm_stape_order(&tape, loss, NULL, &n, &err), LLM_ERR_ARGUMENT, "stape.order");
    REFUSED(llm_stape_order(&tape, loss, order, NULL, &err), LLM_ERR_ARGUMENT, "stape.order");
    REFUSED(llm_stape_order(NULL, loss, order, &n, &err), LLM_ERR_ARGUMENT, "stape.order");
    ck_assert_uint_eq(id, 77);
    ck_assert(v == -1.0);
    ck_assert_uint_eq(tape.count, 3);
    llm_stape_free(&tape);
}
END_TEST

START_TEST(nodes_not_on_the_tape_are_refused_at_every_stage)
{
    llm_stape tape;
    llm_error err;
    size_t x, sq, loss, id = 77, order[3], n = 5;
    double v = -1.0;
    fixture(&tape, &x, &sq, &loss);
    REFUSED(llm_stape_add(&tape, sq, 3, &id, &err), LLM_ERR_TAPE, "stape.add");
    ck_assert_str_eq(err.message, "operand 1 is node 3, but the tape holds 3 nodes");
    REFUSED(llm_stape_mul(&tape, SIZE_MAX, x, &id, &err), LLM_ERR_TAPE, "stape.mul");
    REFUSED(llm_stape_scale(&tape, 3, 2.0, &id, &err), LLM_ERR_TAPE, "stape.scale");
    REFUSED(llm_stape_exp(&tape, 3, &id, &err), LLM_ERR_TAPE, "stape.exp");
    REFUSED(llm_stape_tanh(&tape, 4, &id, &err), LLM_ERR_TAPE, "stape.tanh");
    REFUSED(llm_stape_detach(&tape, 3, &id, &err), LLM_ERR_TAPE, "stape.detach");
    REFUSED(llm_stape_partial(&tape, 3, 0, &v, &err), LLM_ERR_TAPE, "stape.partial");
    REFUSED(llm_stape_partial(&tape, x, 0, &v, &err), LLM_ERR_TAPE, "stape.partial");
    ck_assert_str_eq(err.message, "node 0 (leaf) has 0 operand edges, edge 0 was asked for");
    REFUSED(llm_stape_partial(&tape, sq, 2, &v, &err), LLM_ERR_TAPE, "stape.partial");
    REFUSED(llm_stape_backward(&tape, 3, 1.0, &err), LLM_ERR_TAPE, "stape.backward");
    REFUSED(llm_stape_value(&tape, 3, &v, &err), LLM_ERR_TAPE, "stape.value");
    REFUSED(llm_stape_grad(&tape, 3, &v, &err), LLM_ERR_TAPE, "stape.grad");
    REFUSED(llm_stape_order(&tape, 3, order, &n, &err), LLM_ERR_TAPE, "stape.order");
    ck_assert_uint_eq(id, 77);
    ck_assert_uint_eq(n, 5);
    ck_assert(v == -1.0);
    llm_stape_free(&tape);
}
END_TEST

START_TEST(non_finite_values_are_refused_at_every_stage)
{
    llm_stape tape;
    llm_error err;
    size_t x, sq, loss, big, id = 77;
    fixture(&tape, &x, &sq, &loss);
    REFUSED(llm_stape_leaf(&tape, NAN, &id, &err), LLM_ERR_NONFINITE, "stape.leaf");
    REFUSED(llm_stape_leaf(&tape, -INFINITY, &id, &err), LLM_ERR_NONFINITE, "stape.leaf");
    REFUSED(llm_stape_scale(&tape, x, NAN, &id, &err), LLM_ERR_NONFINITE, "stape.scale");
    ck_assert_str_eq(err.message, "the constant nan is not finite");
    REFUSED(llm_stape_scale(&tape, x, 1e308, &id, &err), LLM_ERR_NONFINITE, "stape.scale");
    ck_assert_uint_eq(id, 77);
    ck_assert_int_eq(llm_stape_leaf(&tape, 1e308, &big, NULL), LLM_OK);
    REFUSED(llm_stape_add(&tape, big, big, &id, &err), LLM_ERR_NONFINITE, "stape.add");
    REFUSED(llm_stape_mul(&tape, big, big, &id, &err), LLM_ERR_NONFINITE, "stape.mul");
    REFUSED(llm_stape_exp(&tape, big, &id, &err), LLM_ERR_NONFINITE, "stape.exp");
    ck_assert_int_eq(llm_stape_tanh(&tape, big, &id, NULL), LLM_OK);  /* tanh is bounded */
    ck_assert_int_eq(llm_stape_detach(&tape, big, &id, NULL), LLM_OK);
    REFUSED(llm_stape_backward(&tape, loss, NAN, &err), LLM_ERR_NONFINITE, "stape.backward");
    REFUSED(llm_stape_backward(&tape, loss, INFINITY, &err), LLM_ERR_NONFINITE,
            "stape.backward");
    ck_assert_uint_eq(tape.count, 6);
    llm_stape_free(&tape);
}
END_TEST

START_TEST(a_failed_pass_leaves_every_gradient_untouched)
{
    llm_stape tape;
    llm_error err;
    size_t x, sq, loss, i;
    llm_snode before[3];
    fixture(&tape, &x, &sq, &loss);
    ck_assert_int_eq(llm_stape_backward(&tape, loss, 1.0, NULL), LLM_OK);
    memcpy(before, tape.nodes, sizeof before);
    /* the adjoint of x, 8e308, overflows in the middle of the pass */
    REFUSED(llm_stape_backward(&tape, loss, 1e308, &err), LLM_ERR_NONFINITE, "stape.backward");
    ck_assert_int_eq(memcmp(before, tape.nodes, sizeof before), 0);
    /* each adjoint finite, but x's gradient plus its adjoint overflows */
    tape.nodes[x].grad = 1.7e308;
    memcpy(before, tape.nodes, sizeof before);
    REFUSED(llm_stape_backward(&tape, loss, 1e307, &err), LLM_ERR_NONFINITE, "stape.backward");
    ck_assert_str_eq(err.message, "node 0 would get the adjoint 8e+307 on top of the "
                                  "gradient 1.7e+308; no gradient was changed");
    for (i = 0; i < 3; i++)
        ck_assert_int_eq(memcmp(&before[i].grad, &tape.nodes[i].grad, sizeof(double)), 0);
    ck_assert_int_eq(memcmp(before, tape.nodes, sizeof before), 0);
    llm_stape_free(&tape);
}
END_TEST

START_TEST(failed_recordings_leave_the_tape_untouched)
{
    llm_stape tape, copy;
    llm_error err;
    size_t x, sq, loss, id = 77;
    llm_snode before[3];
    fixture(&tape, &x, &sq, &loss);
    ck_assert_int_eq(llm_stape_backward(&tape, loss, 1.0, NULL), LLM_OK);
    memcpy(before, tape.nodes, sizeof before);
    copy = tape;
    ck_assert_int_ne(llm_stape_leaf(&tape, NAN, &id, &err), LLM_OK);
    ck_assert_int_ne(llm_stape_add(&tape, x, 9, &id, &err), LLM_OK);
    ck_assert_int_ne(llm_stape_scale(&tape, sq, INFINITY, &id, &err), LLM_OK);
    ck_assert_int_ne(llm_stape_detach(&tape, 3, &id, &err), LLM_OK);
    ck_assert_int_ne(llm_stape_backward(&tape, 3, 1.0, &err), LLM_OK);
    ck_assert_int_ne(llm_stape_backward(&tape, loss, NAN, &err), LLM_OK);
    ck_assert_int_eq(memcmp(&copy, &tape, sizeof tape), 0);   /* pointer, count, capacity */
    ck_assert_int_eq(memcmp(before, tape.nodes, sizeof before), 0);
    ck_assert_uint_eq(id, 77);
    llm_stape_free(&tape);
}
END_TEST

START_TEST(size_and_allocation_limits_are_refused)
{
    llm_stape tape, fake;
    llm_error err;
    size_t id = 77, order[1], n = 5;
    llm_snode *one;
    memset(&tape, 0, sizeof tape);
    REFUSED(llm_stape_init(&tape, SIZE_MAX / sizeof(llm_snode) + 1, &err), LLM_ERR_OVERFLOW,
            "stape.init");
    REFUSED(llm_stape_init(&tape, SIZE_MAX / sizeof(llm_snode) - 1, &err), LLM_ERR_ALLOC,
            "stape.init");
    ck_assert_ptr_null(tape.nodes);
    /* a tape that claims to be full and too large to double */
    one = calloc(1, sizeof *one);
    ck_assert_ptr_nonnull(one);
    fake.nodes = one;
    fake.count = fake.capacity = SIZE_MAX / sizeof(llm_snode);
    REFUSED(llm_stape_leaf(&fake, 1.0, &id, &err), LLM_ERR_OVERFLOW, "stape.leaf");
    REFUSED(llm_stape_add(&fake, 0, 0, &id, &err), LLM_ERR_OVERFLOW, "stape.add");
    REFUSED(llm_stape_mul(&fake, 0, 0, &id, &err), LLM_ERR_OVERFLOW, "stape.mul");
    REFUSED(llm_stape_scale(&fake, 0, 2.0, &id, &err), LLM_ERR_OVERFLOW, "stape.scale");
    REFUSED(llm_stape_exp(&fake, 0, &id, &err), LLM_ERR_OVERFLOW, "stape.exp");
    REFUSED(llm_stape_tanh(&fake, 0, &id, &err), LLM_ERR_OVERFLOW, "stape.tanh");
    REFUSED(llm_stape_detach(&fake, 0, &id, &err), LLM_ERR_OVERFLOW, "stape.detach");
    /* full, small enough to double, but no allocator can give the bytes */
    fake.count = fake.capacity = SIZE_MAX / 2 / sizeof(llm_snode) - 1;
    REFUSED(llm_stape_leaf(&fake, 1.0, &id, &err), LLM_ERR_ALLOC, "stape.leaf");
    REFUSED(llm_stape_add(&fake, 0, 0, &id, &err), LLM_ERR_ALLOC, "stape.add");
    REFUSED(llm_stape_mul(&fake, 0, 0, &id, &err), LLM_ERR_ALLOC, "stape.mul");
    REFUSED(llm_stape_scale(&fake, 0, 2.0, &id, &err), LLM_ERR_ALLOC, "stape.scale");
    REFUSED(llm_stape_exp(&fake, 0, &id, &err), LLM_ERR_ALLOC, "stape.exp");
    REFUSED(llm_stape_tanh(&fake, 0, &id, &err), LLM_ERR_ALLOC, "stape.tanh");
    REFUSED(llm_stape_detach(&fake, 0, &id, &err), LLM_ERR_ALLOC, "stape.detach");
    ck_assert_uint_eq(fake.capacity, SIZE_MAX / 2 / sizeof(llm_snode) - 1);
    ck_assert_ptr_eq(fake.nodes, one);
    ck_assert_uint_eq(id, 77);
    /* the adjoints and marks of so many nodes cannot be allocated either */
    REFUSED(llm_stape_backward(&fake, fake.count - 1, 1.0, &err), LLM_ERR_ALLOC,
            "stape.backward");
    REFUSED(llm_stape_order(&fake, fake.count - 1, order, &n, &err), LLM_ERR_ALLOC,
            "stape.order");
    ck_assert_uint_eq(n, 5);
    free(one);
}
END_TEST

Suite *ch14_scalar_autodiff_suite(void)
{
    const TTest *tests[] = {
        fixture_values_and_gradients,
        repeated_operands_count_every_edge,
        a_second_backward_adds_and_zero_grad_clears,
        the_seed_scales_every_adjoint,
        backward_from_an_inner_node_leaves_later_nodes_alone,
        detach_cuts_the_edge_but_keeps_the_value,
        exp_of_tanh_matches_the_rust_course,
        local_derivatives_agree_with_central_differences,
        order_lists_each_node_before_its_operands,
        the_tape_grows_without_invalidating_ids,
        a_freed_tape_is_empty_and_reusable,
        names_of_operations_and_the_tape_code,
        null_arguments_are_refused_at_every_stage,
        nodes_not_on_the_tape_are_refused_at_every_stage,
        non_finite_values_are_refused_at_every_stage,
        a_failed_pass_leaves_every_gradient_untouched,
        failed_recordings_leave_the_tape_untouched,
        size_and_allocation_limits_are_refused,
    };
    return suite_of("ch14 scalar autodiff", tcase_of("tape", 0, tests, COUNT(tests)));
}
