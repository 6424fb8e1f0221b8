/* Chapter 24: residual connections y = x + F(x), exact shapes only. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "llm/error.h"
#include "llm/gradcheck.h"
#include "llm/nn.h"
#include "llm/tape.h"
#include "llm/tensor.h"
#include "support.h"

static const double fix_x[2] = {2, -1};
static const double fix_w[4] = {0.5, -1, 2, 0.25};
static const double fix_g[2] = {1, 1};
static const size_t shape2[1] = {2};



/* One branch "branch", 2 -> 2, no bias, weight w set by hand. */
typedef struct fixture {
    llm_params ps;
    llm_linear lin;
} fixture;

static void fixture_make(fixture *f, const double *w)
{
    llm_rng rng;
    llm_rng_seed(&rng, 24);
    ck_assert_int_eq(llm_params_init(&f->ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_linear_init(&f->lin, &f->ps, "branch", 2, 2, 0, &rng, NULL), LLM_OK);
    memcpy(f->ps.items[f->lin.weight].value.data, w, 4 * sizeof *w);
}

/* y = x + F(x) (or F(x)), backward with g; y, dx and dW copied out. */
static void block(fixture *f, int residual, const double *x, const double *g, double *y,
                  double *dx, double *dw)
{
    llm_tape tape;
    llm_tensor xt, xg, gt;
    llm_var xv, fv, yv;
    const llm_tensor *t;
    memset(f->ps.items[f->lin.weight].grad.data, 0, 4 * sizeof(double));
    ck_assert_int_eq(llm_tensor_from(&xt, 1, shape2, x, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&xg, 1, shape2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&gt, 1, shape2, g, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &xt, &xg, &xv, NULL), LLM_OK);
    ck_assert_int_eq(llm_linear_forward(&f->lin, &f->ps, &tape, xv, &fv, NULL), LLM_OK);
    yv = fv;
    if (residual)
        ck_assert_int_eq(llm_residual_add(&tape, xv, fv, &yv, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&tape, yv, &t, NULL), LLM_OK);
    assert_shape(t, 1, (const size_t[]){2});
    y[0] = t->data[t->offset];
    y[1] = t->data[t->offset + t->stride[0]];
    ck_assert_int_eq(llm_tape_backward(&tape, yv, &gt, 0, NULL), LLM_OK);
    memcpy(dx, xg.data, 2 * sizeof *dx);
    memcpy(dw, f->ps.items[f->lin.weight].grad.data, 4 * sizeof *dw);
    llm_tape_free(&tape);
    llm_tensor_free(&xt);
    llm_tensor_free(&xg);
    llm_tensor_free(&gt);
}

START_TEST(the_fixture_block_gives_the_rust_course_numbers)
{
    static const double want_dw[4] = {2, 2, -1, -1};
    fixture f;
    double y[2], dx[2], dw[4], fy[2], fdx[2], fdw[4];
    fixture_make(&f, fix_w);
    block(&f, 0, fix_x, fix_g, fy, fdx, fdw);
    ck_assert(fy[0] == -1 && fy[1] == -2.25);          /* F = x W, W [in, out] */
    ck_assert(fdx[0] == -0.5 && fdx[1] == 2.25);       /* g W^T, the branch's part */
    block(&f, 1, fix_x, fix_g, y, dx, dw);
    ck_assert(y[0] == 1 && y[1] == -3.25);
    ck_assert(dx[0] == 0.5 && dx[1] == 3.25);
    ck_assert(dx[0] - fdx[0] == 1 && dx[1] - fdx[1] == 1);   /* the skip's part is g */
    ck_assert(memcmp(dw, want_dw, sizeof dw) == 0);
    llm_params_free(&f.ps);
}
END_TEST

START_TEST(a_zero_branch_passes_x_and_the_gradient_bit_for_bit)
{
    static const double zero[4] = {0, 0, 0, 0}, want_dw[4] = {2, 2, -1, -1};
    static const double g[2] = {0.3, -7.5};
    fixture f;
    double y[2], dx[2], dw[4];
    fixture_make(&f, zero);
    block(&f, 1, fix_x, g, y, dx, dw);
    ck_assert(memcmp(y, fix_x, sizeof y) == 0);
    ck_assert(memcmp(dx, g, sizeof dx) == 0);
    block(&f, 1, fix_x, fix_g, y, dx, dw);
    ck_assert(memcmp(dw, want_dw, sizeof dw) == 0);    /* the zero weight still learns */
    llm_params_free(&f.ps);
}
END_TEST

START_TEST(a_cancelling_branch_passes_nothing)
{
    static const double minus_i[4] = {-1, 0, 0, -1};
    fixture f;
    double y[2], dx[2], dw[4];
    fixture_make(&f, minus_i);
    block(&f, 1, fix_x, fix_g, y, dx, dw);
    ck_assert(y[0] == 0 && y[1] == 0 && dx[0] == 0 && dx[1] == 0);
    llm_params_free(&f.ps);
}
END_TEST

/* Four layers -0.25 I, x = [2, -1], seed [2, -1] at the top: x's gradient. */
static void deep_stack(int residual, double *dx, double *top)
{
    static const double diag[4] = {-0.25, 0, 0, -0.25};
    llm_params ps;
    llm_linear lin[4];
    llm_rng rng;
    llm_tape tape;
    llm_tensor xt, xg, gt;
    llm_var h, f;
    const llm_tensor *t;
    char name[16];
    size_t k;
    llm_rng_seed(&rng, 24);
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    for (k = 0; k < 4; k++) {
        snprintf(name, sizeof name, "layer%zu", k);
        ck_assert_int_eq(llm_linear_init(&lin[k], &ps, name, 2, 2, 0, &rng, NULL), LLM_OK);
        memcpy(ps.items[lin[k].weight].value.data, diag, sizeof diag);
    }
    ck_assert_int_eq(llm_tensor_from(&xt, 1, shape2, fix_x, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&xg, 1, shape2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&gt, 1, shape2, fix_x, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 32, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &xt, &xg, &h, NULL), LLM_OK);
    for (k = 0; k < 4; k++) {
        ck_assert_int_eq(llm_linear_forward(&lin[k], &ps, &tape, h, &f, NULL), LLM_OK);
        if (residual)
            ck_assert_int_eq(llm_residual_add(&tape, h, f, &h, NULL), LLM_OK);
        else
            h = f;
    }
    ck_assert_int_eq(llm_tape_value(&tape, h, &t, NULL), LLM_OK);
    top[0] = t->data[t->offset];
    top[1] = t->data[t->offset + t->stride[0]];
    ck_assert_int_eq(llm_tape_backward(&tape, h, &gt, 0, NULL), LLM_OK);
    memcpy(dx, xg.data, 2 * sizeof *dx);
    llm_tape_free(&tape);
    llm_tensor_free(&xt);
    llm_tensor_free(&xg);
    llm_tensor_free(&gt);
    llm_params_free(&ps);
}

START_TEST(four_branches_deep_plain_and_residual)
{
    static const double plain[2] = {0.0078125, -0.00390625};
    static const double resid[2] = {0.6328125, -0.31640625};
    double dx[2], top[2];
    deep_stack(0, dx, top);
    ck_assert(memcmp(dx, plain, sizeof dx) == 0);
    ck_assert(memcmp(top, plain, sizeof top) == 0);
    deep_stack(1, dx, top);
    ck_assert(memcmp(dx, resid, sizeof dx) == 0);
    ck_assert(memcmp(top, resid, sizeof top) == 0);
}
END_TEST

START_TEST(equal_shapes_of_any_rank_are_added)
{
    static const double a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {6, 5, 4, 3, 2, 1};
    const size_t s23[2] = {2, 3}, s02[2] = {0, 2};
    llm_tape tape;
    llm_tensor ta, tb, s1, s2, e1, e2;
    llm_var va, vb, vs1, vs2, ve1, ve2, y;
    const llm_tensor *t;
    size_t i;
    ck_assert_int_eq(llm_tensor_from(&ta, 2, s23, a, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&tb, 2, s23, b, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&s1, 0, NULL, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&s2, 0, NULL, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&e1, 2, s02, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&e2, 2, s02, NULL), LLM_OK);
    s1.data[0] = 1.5;
    s2.data[0] = -0.25;
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    put_constants(&tape, &ta, &va, &tb, &vb, &s1, &vs1, &s2, &vs2, &e1, &ve1, &e2, &ve2,
                  NULL);
    ck_assert_int_eq(llm_residual_add(&tape, va, vb, &y, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&tape, y, &t, NULL), LLM_OK);
    ck_assert_uint_eq(t->rank, 2);
    for (i = 0; i < 6; i++)
        ck_assert(t->data[t->offset + i] == 7.0);
    ck_assert_int_eq(llm_residual_add(&tape, vs1, vs2, &y, NULL), LLM_OK);   /* scalars */
    ck_assert_int_eq(llm_tape_value(&tape, y, &t, NULL), LLM_OK);
    ck_assert_uint_eq(t->rank, 0);
    ck_assert(t->data[t->offset] == 1.25);
    ck_assert_int_eq(llm_residual_add(&tape, ve1, ve2, &y, NULL), LLM_OK);   /* empty */
    ck_assert_int_eq(llm_tape_value(&tape, y, &t, NULL), LLM_OK);
    assert_shape(t, 2, (const size_t[]){0, 2});
    llm_tape_free(&tape);
    llm_tensor_free(&ta);
    llm_tensor_free(&tb);
    llm_tensor_free(&s1);
    llm_tensor_free(&s2);
    llm_tensor_free(&e1);
    llm_tensor_free(&e2);
}
END_TEST

START_TEST(a_strided_operand_is_added_through_its_strides)
{
    static const double a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40};
    const size_t s22[2] = {2, 2};
    llm_tape tape;
    llm_tensor ta, tb, tt;
    llm_var va, vt, y;
    const llm_tensor *t;
    ck_assert_int_eq(llm_tensor_from(&ta, 2, s22, a, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&tb, 2, s22, b, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_transpose(&tt, &tb, 0, 1, NULL), LLM_OK);   /* b^T, a view */
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    put_constants(&tape, &ta, &va, &tt, &vt, NULL);
    ck_assert_int_eq(llm_residual_add(&tape, va, vt, &y, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&tape, y, &t, NULL), LLM_OK);
    ck_assert(t->data[t->offset + 0 * t->stride[0] + 1 * t->stride[1]] == 2 + 30);
    ck_assert(t->data[t->offset + 1 * t->stride[0] + 0 * t->stride[1]] == 3 + 20);
    llm_tape_free(&tape);
    llm_tensor_free(&tt);
    llm_tensor_free(&ta);
    llm_tensor_free(&tb);
}
END_TEST

START_TEST(unequal_shapes_and_bad_arguments_are_refused_untouched)
{
    static const double four[4] = {1, 2, 3, 4}, three[3] = {1, 2, 3};
    const size_t s12[2] = {1, 2}, s21[2] = {2, 1}, s22[2] = {2, 2}, s3[1] = {3};
    llm_tape tape, old;
    llm_tensor x2, r12, c21, m22, v3, sc;
    llm_var xv, rv, cv, mv, vv, sv, stale, y, wide;
    llm_error err;
    size_t nodes0;
    ck_assert_int_eq(llm_tensor_from(&x2, 1, shape2, fix_x, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&r12, 2, s12, fix_g, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&c21, 2, s21, fix_g, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&m22, 2, s22, four, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&v3, 1, s3, three, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&sc, 0, NULL, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 16, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&old, 4, NULL), LLM_OK);
    put_constants(&tape, &x2, &xv, &r12, &rv, &c21, &cv, &m22, &mv, &v3, &vv, &sc, &sv,
                  NULL);
    ck_assert_int_eq(llm_tape_constant(&old, &x2, &stale, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_reset(&old, NULL), LLM_OK);
    /* the tape's own addition broadcasts these; the residual must not */
    ck_assert_int_eq(llm_tape_add(&tape, xv, rv, &wide, NULL), LLM_OK);
    memset(&y, 0x5a, sizeof y);
    nodes0 = tape.count;
#define REFUSED_HERE(call, code, stage)                     \
    do {                                               \
        memset(&err, 0, sizeof err);                   \
        assert_error((call), &err, (code), (stage));   \
        ck_assert(marked_bytes(&y, sizeof y));               \
        ck_assert_uint_eq(tape.count, nodes0);         \
    } while (0)
    REFUSED_HERE(llm_residual_add(&tape, xv, rv, &y, &err), LLM_ERR_SHAPE, "nn.residual_add");
    REFUSED_HERE(llm_residual_add(&tape, rv, xv, &y, &err), LLM_ERR_SHAPE, "nn.residual_add");
    REFUSED_HERE(llm_residual_add(&tape, rv, cv, &y, &err), LLM_ERR_SHAPE, "nn.residual_add");
    REFUSED_HERE(llm_residual_add(&tape, mv, xv, &y, &err), LLM_ERR_SHAPE, "nn.residual_add");
    REFUSED_HERE(llm_residual_add(&tape, xv, sv, &y, &err), LLM_ERR_SHAPE, "nn.residual_add");
    REFUSED_HERE(llm_residual_add(&tape, sv, xv, &y, &err), LLM_ERR_SHAPE, "nn.residual_add");
    REFUSED_HERE(llm_residual_add(&tape, xv, vv, &y, &err), LLM_ERR_SHAPE, "nn.residual_add");
    REFUSED_HERE(llm_residual_add(&tape, xv, xv, NULL, &err), LLM_ERR_ARGUMENT, "nn.residual_add");
    REFUSED_HERE(llm_residual_add(NULL, xv, xv, &y, &err), LLM_ERR_ARGUMENT, "nn.residual_add");
    REFUSED_HERE(llm_residual_add(&old, stale, stale, &y, &err), LLM_ERR_TAPE, "tape.value");
    REFUSED_HERE(llm_residual_add(&tape, xv, stale, &y, &err), LLM_ERR_TAPE, "tape.value");
#undef REFUSED_HERE
    /* the message names both shapes */
    ck_assert_int_eq(llm_residual_add(&tape, xv, rv, &y, &err), LLM_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(err.message, "[2]"));
    ck_assert_ptr_nonnull(strstr(err.message, "[1, 2]"));
    /* a NULL error record is allowed */
    ck_assert_int_eq(llm_residual_add(&tape, xv, rv, &y, NULL), LLM_ERR_SHAPE);
    /* and the same tape still adds equal shapes */
    ck_assert_int_eq(llm_residual_add(&tape, xv, xv, &y, NULL), LLM_OK);
    ck_assert_uint_eq(tape.count, nodes0 + 1);
    llm_tape_free(&old);
    llm_tape_free(&tape);
    llm_tensor_free(&x2);
    llm_tensor_free(&r12);
    llm_tensor_free(&c21);
    llm_tensor_free(&m22);
    llm_tensor_free(&v3);
    llm_tensor_free(&sc);
}
END_TEST

/* L = g . (x + x W) for the gradient check. */
typedef struct probe {
    fixture *f;
    double *x;
} probe;

static llm_status probe_loss(void *ctx, const llm_tensor *theta, double *value,
                             llm_error *err)
{
    probe *p = ctx;
    double y[2], dx[2], dw[4];
    (void)theta;
    (void)err;
    block(p->f, 1, p->x, fix_g, y, dx, dw);
    *value = fix_g[0] * y[0] + fix_g[1] * y[1];
    return LLM_OK;
}

START_TEST(every_gradient_coordinate_passes_at_2e_6)
{
    static const size_t coords[4] = {0, 1, 2, 3};
    fixture f;
    llm_tensor xt;
    double y[2], dx[2], dw[4], worst = 1.0;
    size_t failures = 99;
    probe pr;
    fixture_make(&f, fix_w);
    block(&f, 1, fix_x, fix_g, y, dx, dw);
    ck_assert_int_eq(llm_tensor_from(&xt, 1, shape2, fix_x, 2, NULL), LLM_OK);
    pr.f = &f;
    pr.x = xt.data;
    ck_assert_int_eq(llm_gradient_check(probe_loss, &pr, &f.ps.items[f.lin.weight].value, dw,
                                        coords, 4, 1e-6, 2e-6, &worst, &failures, NULL),
                     LLM_OK);
    ck_assert_uint_eq(failures, 0);
    ck_assert(worst < 2e-6);
    worst = 1.0;
    failures = 99;
    ck_assert_int_eq(llm_gradient_check(probe_loss, &pr, &xt, dx, coords, 2, 1e-6, 2e-6,
                                        &worst, &failures, NULL), LLM_OK);
    ck_assert_uint_eq(failures, 0);
    ck_assert(worst < 2e-6);
    /* a wrong analytic gradient (the branch's part alone) fails */
    dx[0] = -0.5;
    dx[1] = 2.25;
    ck_assert_int_eq(llm_gradient_check(probe_loss, &pr, &xt, dx, coords, 2, 1e-6, 2e-6,
                                        &worst, &failures, NULL), LLM_OK);
    ck_assert_uint_eq(failures, 2);
    llm_tensor_free(&xt);
    llm_params_free(&f.ps);
}
END_TEST

Suite *ch24_residual_connections_suite(void)
{
    const TTest *tests[] = {
        the_fixture_block_gives_the_rust_course_numbers,
        a_zero_branch_passes_x_and_the_gradient_bit_for_bit,
        a_cancelling_branch_passes_nothing,
        four_branches_deep_plain_and_residual,
        equal_shapes_of_any_rank_are_added,
        a_strided_operand_is_added_through_its_strides,
        unequal_shapes_and_bad_arguments_are_refused_untouched,
        every_gradient_coordinate_passes_at_2e_6,
    };
    return suite_of("ch24 residual connections",
                    tcase_of("core", 0, tests, COUNT(tests)));
}
