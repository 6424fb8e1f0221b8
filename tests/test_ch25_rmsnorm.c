/* Chapter 25: RMSNorm over the last axis, with a gain and eps inside the root. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "llm/error.h"
#include "llm/gradcheck.h"
#include "llm/nn.h"
#include "llm/tape.h"
#include "llm/tensor.h"
#include "support.h"

static const double fix_x[2] = {3, 4};
static const double fix_g[2] = {1.5, 0.5};
static const double fix_up[2] = {1, -2};

/* A list holding one layer "norm" (width D, eps), gain set to g unless NULL. */
typedef struct fixture {
    llm_params ps;
    llm_rmsnorm norm;
} fixture;

static void fixture_make(fixture *f, size_t width, double eps, const double *g)
{
    ck_assert_int_eq(llm_params_init(&f->ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_rmsnorm_init(&f->norm, &f->ps, "norm", width, eps, NULL), LLM_OK);
    if (g != NULL)
        memcpy(f->ps.items[f->norm.gain].value.data, g, width * sizeof *g);
}

/* x on a fresh tape as a leaf with its own grad, then the layer; with up,
   backward too (dx gets x's gradient; the gain's grad is zeroed first). */
static llm_status run(fixture *f, size_t rank, const size_t *shape, const double *x,
                      const double *up, double *y, double *dx, llm_error *err)
{
    llm_tape tape;
    llm_tensor xt, xg, ut;
    llm_var xv, yv;
    const llm_tensor *yt;
    llm_status st;
    llm_param *g = &f->ps.items[f->norm.gain];
    memset(g->grad.data, 0, g->grad.size * sizeof(double));
    ck_assert_int_eq(llm_tensor_zeros(&xt, rank, shape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&xg, rank, shape, NULL), LLM_OK);
    if (xt.size > 0)
        memcpy(xt.data, x, xt.size * sizeof *x);
    ck_assert_int_eq(llm_tape_init(&tape, 16, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &xt, &xg, &xv, NULL), LLM_OK);
    st = llm_rmsnorm_forward(&f->norm, &f->ps, &tape, xv, &yv, err);
    if (st == LLM_OK) {
        ck_assert_int_eq(llm_tape_value(&tape, yv, &yt, NULL), LLM_OK);
        ck_assert_uint_eq(yt->rank, rank);
        ck_assert_uint_eq(yt->size, xt.size);
        if (yt->size > 0)
            memcpy(y, yt->data, yt->size * sizeof *y);
        if (up != NULL) {
            ck_assert_int_eq(llm_tensor_from(&ut, rank, shape, up, xt.size, NULL), LLM_OK);
            ck_assert_int_eq(llm_tape_backward(&tape, yv, &ut, 0, NULL), LLM_OK);
            if (xg.size > 0)
                memcpy(dx, xg.data, xg.size * sizeof *dx);
            llm_tensor_free(&ut);
        }
    }
    llm_tape_free(&tape);
    llm_tensor_free(&xt);
    llm_tensor_free(&xg);
    return st;
}

static void assert_near(const double *got, const double *want, size_t n, double tol)
{
    size_t i;
    for (i = 0; i < n; i++)
        ck_assert_msg(fabs(got[i] - want[i]) <= tol, "element %zu: %.17g, want %.17g", i,
                      got[i], want[i]);
}

START_TEST(init_adds_a_gain_of_ones_without_decay)
{
    llm_params ps;
    llm_rmsnorm a, b;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&ps, "first", 1, (size_t[]){3}, 0.0, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_rmsnorm_init(&a, &ps, "blocks.0.attn_norm", 4, 1e-5, NULL), LLM_OK);
    ck_assert_int_eq(llm_rmsnorm_init(&b, &ps, "final_norm", 4, 0.0, NULL), LLM_OK);
    ck_assert_uint_eq(ps.count, 3);
    ck_assert_uint_eq(a.gain, 1);
    ck_assert_uint_eq(b.gain, 2);
    ck_assert_uint_eq(a.width, 4);
    ck_assert(a.eps == 1e-5 && b.eps == 0.0);
    ck_assert_str_eq(ps.items[1].name, "blocks.0.attn_norm.gain");
    ck_assert_str_eq(ps.items[2].name, "final_norm.gain");
    ck_assert_int_eq(ps.items[1].decay, 0);
    assert_shape(&ps.items[1].value, 1, (const size_t[]){4});
    for (size_t i = 0; i < 4; i++) {
        ck_assert(ps.items[1].value.data[i] == 1.0);
        ck_assert(ps.items[1].grad.data[i] == 0.0);
    }
    llm_params_free(&ps);
}
END_TEST

START_TEST(init_refusals_touch_neither_layer_nor_list)
{
    llm_params ps;
    llm_rmsnorm n, kept;
    llm_error err;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_rmsnorm_init(&n, &ps, "norm", 2, 1e-5, NULL), LLM_OK);
    memset(&n, 0x5a, sizeof n);
    kept = n;
    ck_assert_int_eq(llm_rmsnorm_init(NULL, &ps, "a", 2, 1e-5, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "rmsnorm.init");
    ck_assert_int_eq(llm_rmsnorm_init(&n, NULL, "a", 2, 1e-5, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rmsnorm_init(&n, &ps, NULL, 2, 1e-5, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rmsnorm_init(&n, &ps, "a", 0, 1e-5, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "rmsnorm.init");
    ck_assert_int_eq(llm_rmsnorm_init(&n, &ps, "a", 2, -1e-5, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rmsnorm_init(&n, &ps, "a", 2, NAN, &err), LLM_ERR_NONFINITE);
    ck_assert_str_eq(where(&err), "rmsnorm.init");
    ck_assert_int_eq(llm_rmsnorm_init(&n, &ps, "a", 2, INFINITY, &err), LLM_ERR_NONFINITE);
    ck_assert_int_eq(llm_rmsnorm_init(&n, &ps, "A", 2, 1e-5, &err), LLM_ERR_NAME);
    ck_assert_int_eq(llm_rmsnorm_init(&n, &ps, "norm", 2, 1e-5, &err), LLM_ERR_NAME);
    ck_assert_int_eq(memcmp(&n, &kept, sizeof n), 0);
    ck_assert_uint_eq(ps.count, 1);
    llm_params_free(&ps);
}
END_TEST

START_TEST(a_prefix_is_refused_exactly_when_the_name_would_exceed_63_characters)
{
    char prefix[64];
    llm_params ps;
    llm_rmsnorm n;
    llm_error err;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    memset(prefix, 'a', sizeof prefix);
    prefix[58] = '\0';                                   /* 58 + ".gain" = 63 */
    ck_assert_int_eq(llm_rmsnorm_init(&n, &ps, prefix, 2, 1e-5, &err), LLM_OK);
    memset(prefix, 'b', sizeof prefix);
    prefix[59] = '\0';                                   /* 64: one too many */
    ck_assert_int_eq(llm_rmsnorm_init(&n, &ps, prefix, 2, 1e-5, &err), LLM_ERR_NAME);
    ck_assert_str_eq(where(&err), "rmsnorm.init");
    ck_assert_uint_eq(ps.count, 1);
    llm_params_free(&ps);
}
END_TEST

START_TEST(the_fixture_gives_the_rust_course_numbers)
{
    fixture f;
    const size_t shape[1] = {2};
    static const double want_n[2] = {0.848528, 1.131370};     /* the Rust course, 6 decimals */
    static const double want_y[2] = {1.272792, 0.565685};
    static const double want_dx[2] = {0.407293, -0.305470};
    static const double want_dg[2] = {0.848528, -2.262741};
    double y[2], dx[2];
    fixture_make(&f, 2, 1e-5, NULL);
    ck_assert_int_eq(run(&f, 1, shape, fix_x, NULL, y, NULL, NULL), LLM_OK);
    assert_near(y, want_n, 2, 5e-7);                      /* gain 1: the normalised row */
    memcpy(f.ps.items[f.norm.gain].value.data, fix_g, sizeof fix_g);
    ck_assert_int_eq(run(&f, 1, shape, fix_x, fix_up, y, dx, NULL), LLM_OK);
    assert_near(y, want_y, 2, 5e-7);
    assert_near(dx, want_dx, 2, 5e-7);
    assert_near(f.ps.items[f.norm.gain].grad.data, want_dg, 2, 5e-7);
    llm_params_free(&f.ps);
}
END_TEST

START_TEST(the_tape_matches_the_closed_form_gradient)
{
    static const double x[4] = {0.5, -1.25, 2.0, 0.75}, g[4] = {1, -0.5, 2, 0.25};
    static const double up[4] = {0.3, 1.0, -0.7, 2.0};
    const size_t shape[1] = {4};
    double y[4], dx[4], want_dx[4], want_dg[4], ms = 0.0, rho, dot = 0.0;
    fixture f;
    size_t i;
    fixture_make(&f, 4, 1e-3, g);
    ck_assert_int_eq(run(&f, 1, shape, x, up, y, dx, NULL), LLM_OK);
    for (i = 0; i < 4; i++)
        ms += x[i] * x[i] / 4.0;
    rho = sqrt(ms + 1e-3);
    for (i = 0; i < 4; i++)
        dot += g[i] * up[i] * x[i];
    for (i = 0; i < 4; i++) {
        want_dx[i] = g[i] * up[i] / rho - x[i] * dot / (4.0 * rho * rho * rho);
        want_dg[i] = up[i] * x[i] / rho;
        ck_assert(fabs(y[i] - g[i] * x[i] / rho) < 1e-14);
    }
    assert_near(dx, want_dx, 4, 1e-13);
    assert_near(f.ps.items[f.norm.gain].grad.data, want_dg, 4, 1e-13);
    llm_params_free(&f.ps);
}
END_TEST

typedef struct probe {
    fixture *f;
    const double *x;
    size_t width;
    const double *up;
} probe;

static llm_status probe_loss(void *ctx, const llm_tensor *theta, double *value,
                             llm_error *err)
{
    const probe *p = ctx;
    const size_t shape[2] = {2, p->width};
    double y[8], sum = 0.0;
    size_t i;
    llm_status st;
    (void)theta;
    st = run(p->f, 2, shape, p->x, NULL, y, NULL, err);
    if (st != LLM_OK)
        return st;
    for (i = 0; i < 2 * p->width; i++)
        sum += p->up[i] * y[i];
    *value = sum;
    return LLM_OK;
}

START_TEST(every_input_and_gain_coordinate_passes_the_gradient_check)
{
    static const double x[6] = {3, 4, -1, 0.001, 0.002, -0.003};    /* two rows of 3 */
    static const double g[3] = {1.5, 0.5, -2};
    static const double up[6] = {1, -2, 0.5, -1, 3, 2};
    static const size_t coords[6] = {0, 1, 2, 3, 4, 5};
    const size_t shape[2] = {2, 3};
    double y[6], dx[6], dg[3], worst = 1.0;
    size_t failures = 99;
    llm_tensor xt;
    fixture f;
    probe pr;
    fixture_make(&f, 3, 1e-5, g);
    ck_assert_int_eq(run(&f, 2, shape, x, up, y, dx, NULL), LLM_OK);
    memcpy(dg, f.ps.items[f.norm.gain].grad.data, sizeof dg);
    ck_assert_int_eq(llm_tensor_from(&xt, 2, shape, x, 6, NULL), LLM_OK);
    pr.f = &f;
    pr.x = xt.data;
    pr.width = 3;
    pr.up = up;
    ck_assert_int_eq(llm_gradient_check(probe_loss, &pr, &xt, dx, coords, 6, 1e-7, 1e-5,
                                        &worst, &failures, NULL), LLM_OK);
    ck_assert_uint_eq(failures, 0);
    ck_assert_int_eq(llm_gradient_check(probe_loss, &pr, &f.ps.items[f.norm.gain].value, dg,
                                        coords, 3, 1e-6, 1e-6, &worst, &failures, NULL),
                     LLM_OK);
    ck_assert_uint_eq(failures, 0);
    /* a gradient without the second term is caught */
    {
        double wrong[6];
        size_t i;
        for (i = 0; i < 6; i++)
            wrong[i] = g[i % 3] * up[i] / sqrt((i < 3 ? (9 + 16 + 1) / 3.0 : 14e-6 / 3.0) + 1e-5);
        ck_assert_int_eq(llm_gradient_check(probe_loss, &pr, &xt, wrong, coords, 6, 1e-7, 1e-5,
                                            &worst, &failures, NULL), LLM_OK);
        ck_assert_uint_gt(failures, 0);
    }
    llm_tensor_free(&xt);
    llm_params_free(&f.ps);
}
END_TEST

START_TEST(a_zero_row_is_finite_with_eps_and_refused_without)
{
    static const double zero[2] = {0, 0};
    const size_t shape[1] = {2};
    double y[2], dx[2];
    llm_tape tape;
    llm_tensor xt;
    llm_var xv, yv, kept;
    llm_error err;
    fixture f, g;
    fixture_make(&f, 2, 1e-5, fix_g);
    ck_assert_int_eq(run(&f, 1, shape, zero, fix_up, y, dx, NULL), LLM_OK);
    ck_assert(y[0] == 0.0 && y[1] == 0.0);
    ck_assert(fabs(dx[0] - 1.5 / sqrt(1e-5)) < 1e-9);
    ck_assert(fabs(dx[1] + 1.0 / sqrt(1e-5)) < 1e-9);
    ck_assert(f.ps.items[f.norm.gain].grad.data[0] == 0.0);
    fixture_make(&g, 2, 0.0, NULL);
    ck_assert_int_eq(llm_tensor_from(&xt, 1, shape, zero, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &xt, NULL, &xv, NULL), LLM_OK);
    memset(&yv, 0x5a, sizeof yv);
    kept = yv;
    ck_assert_int_eq(llm_rmsnorm_forward(&g.norm, &g.ps, &tape, xv, &yv, &err),
                     LLM_ERR_NONFINITE);
    ck_assert_str_eq(where(&err), "rmsnorm.forward");
    ck_assert_uint_eq(tape.count, 1);                    /* nothing recorded */
    ck_assert_int_eq(memcmp(&yv, &kept, sizeof yv), 0);
    llm_tape_free(&tape);
    llm_tensor_free(&xt);
    llm_params_free(&f.ps);
    llm_params_free(&g.ps);
}
END_TEST

START_TEST(underflowing_squares_count_as_a_zero_row_when_eps_is_0)
{
    static const double tiny[4] = {1, 2, 1e-170, -1e-170};   /* row 1 squares to 0 */
    const size_t shape[2] = {2, 2};
    double y[4];
    llm_error err;
    fixture f, g;
    fixture_make(&f, 2, 0.0, NULL);
    ck_assert_int_eq(run(&f, 2, shape, tiny, NULL, y, NULL, &err), LLM_ERR_NONFINITE);
    ck_assert_msg(strstr(err.message, "row 1") != NULL, "%s", err.message);
    fixture_make(&g, 2, 1e-300, NULL);                  /* any eps > 0 is enough */
    ck_assert_int_eq(run(&g, 2, shape, tiny, NULL, y, NULL, NULL), LLM_OK);
    ck_assert(isfinite(y[2]) && isfinite(y[3]));
    llm_params_free(&f.ps);
    llm_params_free(&g.ps);
}
END_TEST

START_TEST(an_overflowing_mean_square_is_refused_before_recording)
{
    static const double big[2] = {1e200, 1};
    const size_t shape[1] = {2};
    double y[2];
    llm_error err;
    fixture f;
    fixture_make(&f, 2, 1e-5, NULL);
    ck_assert_int_eq(run(&f, 1, shape, big, NULL, y, NULL, &err), LLM_ERR_NONFINITE);
    ck_assert_str_eq(where(&err), "rmsnorm.forward");
    llm_params_free(&f.ps);
}
END_TEST

START_TEST(scale_invariance_holds_only_without_eps)
{
    double small[2] = {3e-4, 4e-4}, big[2], ya[2], yb[2];
    const size_t shape[1] = {2};
    fixture f, g;
    big[0] = small[0] * 10.0;
    big[1] = small[1] * 10.0;
    fixture_make(&f, 2, 1e-5, NULL);
    fixture_make(&g, 2, 0.0, NULL);
    ck_assert_int_eq(run(&f, 1, shape, small, NULL, ya, NULL, NULL), LLM_OK);
    ck_assert_int_eq(run(&f, 1, shape, big, NULL, yb, NULL, NULL), LLM_OK);
    ck_assert(fabs(fmax(fabs(yb[0] - ya[0]), fabs(yb[1] - ya[1])) - 0.717566) < 5e-7);
    ck_assert_int_eq(run(&g, 1, shape, small, NULL, ya, NULL, NULL), LLM_OK);
    ck_assert_int_eq(run(&g, 1, shape, big, NULL, yb, NULL, NULL), LLM_OK);
    ck_assert(fabs(yb[0] - ya[0]) < 1e-15 && fabs(yb[1] - ya[1]) < 1e-15);
    llm_params_free(&f.ps);
    llm_params_free(&g.ps);
}
END_TEST

START_TEST(rows_are_normalised_alone_and_the_gain_gradient_sums_over_them)
{
    static const double xb[6] = {3, 4, 0, 0, -4, 3}, ub[6] = {1, -2, 1, -2, 1, -2};
    const size_t shape[3] = {3, 1, 2}, one[1] = {2}, empty[2] = {0, 2};
    double yb[6], dxb[6], dgb[2], ys[2], dxs[2], sum[2] = {0, 0};
    size_t r;
    fixture f;
    fixture_make(&f, 2, 1e-5, fix_g);
    ck_assert_int_eq(run(&f, 3, shape, xb, ub, yb, dxb, NULL), LLM_OK);
    memcpy(dgb, f.ps.items[f.norm.gain].grad.data, sizeof dgb);
    for (r = 0; r < 3; r++) {
        ck_assert_int_eq(run(&f, 1, one, xb + 2 * r, ub + 2 * r, ys, dxs, NULL), LLM_OK);
        ck_assert_int_eq(memcmp(ys, yb + 2 * r, sizeof ys), 0);
        ck_assert_int_eq(memcmp(dxs, dxb + 2 * r, sizeof dxs), 0);
        sum[0] += f.ps.items[f.norm.gain].grad.data[0];
        sum[1] += f.ps.items[f.norm.gain].grad.data[1];
    }
    assert_near(dgb, sum, 2, 1e-15);
    /* no rows at all: an empty output and a zero gain gradient */
    ck_assert_int_eq(run(&f, 2, empty, NULL, NULL, ys, NULL, NULL), LLM_OK);
    llm_params_free(&f.ps);
}
END_TEST

START_TEST(a_strided_view_as_input_gives_the_same_rows)
{
    static const double xt_vals[6] = {3, 0, -4, 4, 0, 3};   /* [2, 3], transposed: rows */
    const size_t shape[2] = {2, 3};
    llm_tensor base, view;
    llm_tape tape;
    llm_var v, y;
    const llm_tensor *yt;
    fixture f;
    double want[6], got[6];
    static const double rows[6] = {3, 4, 0, 0, -4, 3};
    const size_t rshape[2] = {3, 2};
    fixture_make(&f, 2, 1e-5, fix_g);
    ck_assert_int_eq(run(&f, 2, rshape, rows, NULL, want, NULL, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&base, 2, shape, xt_vals, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_transpose(&view, &base, 0, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 16, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &view, &v, NULL), LLM_OK);
    ck_assert_int_eq(llm_rmsnorm_forward(&f.norm, &f.ps, &tape, v, &y, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&tape, y, &yt, NULL), LLM_OK);
    memcpy(got, yt->data, sizeof got);
    ck_assert_int_eq(memcmp(got, want, sizeof got), 0);
    llm_tape_free(&tape);
    llm_tensor_free(&base);
    llm_params_free(&f.ps);
}
END_TEST

START_TEST(forward_refusals_name_their_stage_and_record_nothing)
{
    static const double x3[3] = {1, 2, 3};
    const size_t three[1] = {3}, two[1] = {2};
    llm_params empty, wide;
    llm_tape tape, old;
    llm_tensor t3, ts, t2;
    llm_var v3, vs, v2, stale, y, kept;
    llm_rmsnorm bad;
    llm_error err;
    size_t nodes;
    fixture f;
    fixture_make(&f, 2, 1e-5, NULL);
    ck_assert_int_eq(llm_params_init(&empty, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_init(&wide, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&wide, "norm.gain", 1, three, 1.0, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&t3, 1, three, x3, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&ts, 0, NULL, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&t2, 1, two, fix_x, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&old, 8, NULL), LLM_OK);
    put_constants(&tape, &t3, &v3, &ts, &vs, &t2, &v2, NULL);
    ck_assert_int_eq(llm_tape_constant(&old, &t2, &stale, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_reset(&old, NULL), LLM_OK);
    nodes = tape.count;
    memset(&y, 0x5a, sizeof y);
    kept = y;
    ck_assert_int_eq(llm_rmsnorm_forward(NULL, &f.ps, &tape, v2, &y, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "rmsnorm.forward");
    ck_assert_int_eq(llm_rmsnorm_forward(&f.norm, NULL, &tape, v2, &y, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rmsnorm_forward(&f.norm, &f.ps, NULL, v2, &y, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rmsnorm_forward(&f.norm, &f.ps, &tape, v2, NULL, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rmsnorm_forward(&f.norm, &empty, &tape, v2, &y, &err),
                     LLM_ERR_NAME);
    ck_assert_int_eq(llm_rmsnorm_forward(&f.norm, &wide, &tape, v2, &y, &err), LLM_ERR_SHAPE);
    ck_assert_str_eq(where(&err), "rmsnorm.forward");
    bad = f.norm;
    bad.eps = -1.0;
    ck_assert_int_eq(llm_rmsnorm_forward(&bad, &f.ps, &tape, v2, &y, &err), LLM_ERR_ARGUMENT);
    bad.eps = NAN;
    ck_assert_int_eq(llm_rmsnorm_forward(&bad, &f.ps, &tape, v2, &y, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_rmsnorm_forward(&f.norm, &f.ps, &old, stale, &y, &err), LLM_ERR_TAPE);
    ck_assert_int_eq(llm_rmsnorm_forward(&f.norm, &f.ps, &tape, vs, &y, &err), LLM_ERR_RANK);
    ck_assert_str_eq(where(&err), "rmsnorm.forward");
    REFUSED_KEPT(llm_rmsnorm_forward(&f.norm, &f.ps, &tape, v3, &y, &err),
                 LLM_ERR_SHAPE, "rmsnorm.forward", tape, nodes, &y, &kept);
    /* failures midway: a NaN gain is refused by its leaf after seven nodes,
       a gain of 1.7e308 overflows in the last product after eight; both
       are rewound */
    f.ps.items[f.norm.gain].value.data[0] = NAN;
    REFUSED_KEPT(llm_rmsnorm_forward(&f.norm, &f.ps, &tape, v2, &y, &err),
                 LLM_ERR_NONFINITE, "rmsnorm.forward <- tape.leaf",
                 tape, nodes, &y, &kept);
    f.ps.items[f.norm.gain].value.data[0] = 1.7e308;
    f.ps.items[f.norm.gain].value.data[1] = 1.7e308;
    REFUSED_KEPT(llm_rmsnorm_forward(&f.norm, &f.ps, &tape, v2, &y, &err),
                 LLM_ERR_NONFINITE, "rmsnorm.forward <- tape.mul",
                 tape, nodes, &y, &kept);
    f.ps.items[f.norm.gain].value.data[0] = 1.0;
    f.ps.items[f.norm.gain].value.data[1] = 1.0;
    /* and an accepted call records nine nodes: x*x, mean, eps, +, sqrt, 1/, *, g, * */
    ck_assert_int_eq(llm_rmsnorm_forward(&f.norm, &f.ps, &tape, v2, &y, &err), LLM_OK);
    ck_assert_uint_eq(tape.count, nodes + 9);
    llm_tape_free(&tape);
    llm_tape_free(&old);
    llm_tensor_free(&t3);
    llm_tensor_free(&ts);
    llm_tensor_free(&t2);
    llm_params_free(&empty);
    llm_params_free(&wide);
    llm_params_free(&f.ps);
}
END_TEST

START_TEST(two_norms_on_one_tape_share_the_gain_leaf)
{
    const size_t two[1] = {2};
    llm_tensor xt, seed;
    llm_tape tape;
    llm_var x, a, b, s;
    fixture f;
    double once[2];
    static const double ones[2] = {1, 1};
    fixture_make(&f, 2, 1e-5, fix_g);
    ck_assert_int_eq(llm_tensor_from(&xt, 1, two, fix_x, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&seed, 1, two, ones, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 32, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &xt, &x, NULL), LLM_OK);
    ck_assert_int_eq(llm_rmsnorm_forward(&f.norm, &f.ps, &tape, x, &a, NULL), LLM_OK);
    ck_assert_int_eq(llm_rmsnorm_forward(&f.norm, &f.ps, &tape, x, &b, NULL), LLM_OK);
    ck_assert_uint_eq(tape.count, 1 + 9 + 8);              /* the second reuses g's leaf */
    ck_assert_int_eq(llm_tape_add(&tape, a, b, &s, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, s, &seed, 0, NULL), LLM_OK);
    once[0] = 2.0 * 3.0 / sqrt(12.5 + 1e-5);
    once[1] = 2.0 * 4.0 / sqrt(12.5 + 1e-5);
    assert_near(f.ps.items[f.norm.gain].grad.data, once, 2, 1e-14);
    llm_tape_free(&tape);
    llm_tensor_free(&xt);
    llm_tensor_free(&seed);
    llm_params_free(&f.ps);
}
END_TEST

Suite *ch25_rmsnorm_suite(void)
{
    const TTest *tests[] = {
        init_adds_a_gain_of_ones_without_decay,
        init_refusals_touch_neither_layer_nor_list,
        a_prefix_is_refused_exactly_when_the_name_would_exceed_63_characters,
        the_fixture_gives_the_rust_course_numbers,
        the_tape_matches_the_closed_form_gradient,
        every_input_and_gain_coordinate_passes_the_gradient_check,
        a_zero_row_is_finite_with_eps_and_refused_without,
        underflowing_squares_count_as_a_zero_row_when_eps_is_0,
        an_overflowing_mean_square_is_refused_before_recording,
        scale_invariance_holds_only_without_eps,
        rows_are_normalised_alone_and_the_gain_gradient_sums_over_them,
        a_strided_view_as_input_gives_the_same_rows,
        forward_refusals_name_their_stage_and_record_nothing,
        two_norms_on_one_tape_share_the_gain_leaf,
    };
    return suite_of("ch25 rmsnorm", tcase_of("core", 0, tests, COUNT(tests)));
}
