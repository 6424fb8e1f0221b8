/* Chapter 19: linear layers y = x W (+ b), W stored [d_in, d_out]. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "llm/error.h"
#include "llm/gradcheck.h"
#include "llm/nn.h"
#include "llm/tape.h"
#include "llm/tensor.h"
#include "../tangled/src/tape_op.h"   /* white-box: the tape's nodes */
#include "support.h"

static const double fix_x[4] = {1, 2, -1, 3};           /* X [2, 2] */
static const double fix_w[6] = {1, 0, -1, 2, 0.5, 1};   /* W [2, 3] */
static const double fix_b[3] = {0.5, -0.5, 1};          /* b [3] */
static const double fix_g[6] = {1, 0, -1, 0.5, 2, 1};   /* G [2, 3] */
static const double want_y[6] = {5.5, 0.5, 2, 5.5, 1, 5};
static const double want_dx[4] = {2, 1, -0.5, 3};
static const double want_dw[6] = {0.5, -2, -2, 3.5, 6, 1};
static const double want_db[3] = {1.5, 2, 0};

/* A layer "proj", 2 -> 3, built from seed 19, with the fixture's W and b
   set by hand. */
typedef struct fixture {
    llm_params ps;
    llm_linear lin;
    llm_rng rng;
} fixture;

static void fixture_make(fixture *f, int has_bias)
{
    ck_assert_int_eq(llm_params_init(&f->ps, NULL), LLM_OK);
    llm_rng_seed(&f->rng, 19);
    ck_assert_int_eq(llm_linear_init(&f->lin, &f->ps, "proj", 2, 3, has_bias, &f->rng, NULL),
                     LLM_OK);
    memcpy(f->ps.items[f->lin.weight].value.data, fix_w, sizeof fix_w);
    if (has_bias)
        memcpy(f->ps.items[f->lin.bias].value.data, fix_b, sizeof fix_b);
}

/* x (shape, values) as a leaf with its own zero grad, then the layer. */
typedef struct pass {
    llm_tape tape;
    llm_tensor x, dx;
    llm_var xv, yv;
    const llm_tensor *y;
} pass;

static llm_status pass_run(pass *p, fixture *f, size_t rank, const size_t *shape,
                           const double *x, llm_error *err)
{
    llm_status st;
    ck_assert_int_eq(llm_tensor_zeros(&p->x, rank, shape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&p->dx, rank, shape, NULL), LLM_OK);
    if (p->x.size > 0)
        memcpy(p->x.data, x, p->x.size * sizeof *x);
    ck_assert_int_eq(llm_tape_init(&p->tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&p->tape, &p->x, &p->dx, &p->xv, NULL), LLM_OK);
    st = llm_linear_forward(&f->lin, &f->ps, &p->tape, p->xv, &p->yv, err);
    if (st == LLM_OK)
        ck_assert_int_eq(llm_tape_value(&p->tape, p->yv, &p->y, NULL), LLM_OK);
    return st;
}

/* Backward from y with seed values g (y's shape). */
static void pass_backward(pass *p, const double *g)
{
    llm_tensor seed;
    ck_assert_int_eq(llm_tensor_zeros(&seed, p->y->rank, p->y->shape, NULL), LLM_OK);
    if (seed.size > 0)
        memcpy(seed.data, g, seed.size * sizeof *g);
    ck_assert_int_eq(llm_tape_backward(&p->tape, p->yv, &seed, 0, NULL), LLM_OK);
    llm_tensor_free(&seed);
}

static void pass_free(pass *p)
{
    llm_tape_free(&p->tape);
    llm_tensor_free(&p->x);
    llm_tensor_free(&p->dx);
}

/* y's elements in row-major order through its strides. */
static void read_all(const llm_tensor *t, double *out)
{
    size_t index[LLM_MAX_RANK] = {0}, n = 0, k, at;
    if (t->size == 0)
        return;
    do {
        for (at = t->offset, k = 0; k < t->rank; k++)
            at += index[k] * t->stride[k];
        out[n++] = t->data[at];
    } while (llm_index_next(t->rank, t->shape, index));
}

static void assert_values(const double *got, const double *want, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        ck_assert_msg(got[i] == want[i], "element %zu: %.17g, want %.17g", i, got[i], want[i]);
}

/* A struct filled with a marker, padding included. */


/* ----------------------------------------------------------- construction -- */

START_TEST(init_adds_a_xavier_weight_and_a_zero_bias)
{
    llm_params ps;
    llm_linear lin;
    llm_rng rng, ref_rng;
    llm_tensor ref;
    size_t i;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    llm_rng_seed(&rng, 19);
    llm_rng_seed(&ref_rng, 19);
    ck_assert_int_eq(llm_linear_init(&lin, &ps, "blocks.0.ffn.up", 2, 3, 1, &rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_xavier_uniform(&ref, 2, 3, &ref_rng, NULL), LLM_OK);
    ck_assert_uint_eq(lin.d_in, 2);
    ck_assert_uint_eq(lin.d_out, 3);
    ck_assert_int_eq(lin.has_bias, 1);
    ck_assert_uint_eq(ps.count, 2);
    ck_assert_uint_eq(lin.weight, 0);
    ck_assert_uint_eq(lin.bias, 1);
    ck_assert_str_eq(ps.items[0].name, "blocks.0.ffn.up.weight");
    ck_assert_str_eq(ps.items[1].name, "blocks.0.ffn.up.bias");
    ck_assert_uint_eq(ps.items[0].value.rank, 2);
    ck_assert_uint_eq(ps.items[0].value.shape[0], 2);     /* [d_in, d_out] */
    ck_assert_uint_eq(ps.items[0].value.shape[1], 3);
    ck_assert(memcmp(ps.items[0].value.data, ref.data, 6 * sizeof(double)) == 0);
    ck_assert_int_eq(ps.items[0].decay, 1);
    assert_shape(&ps.items[1].value, 1, (const size_t[]){3});
    ck_assert_int_eq(ps.items[1].decay, 0);
    for (i = 0; i < 6; i++)
        ck_assert(ps.items[0].grad.data[i] == 0.0);
    for (i = 0; i < 3; i++) {
        ck_assert(ps.items[1].value.data[i] == 0.0 && !signbit(ps.items[1].value.data[i]));
        ck_assert(ps.items[1].grad.data[i] == 0.0);
    }
    ck_assert_uint_eq(rng.state, ref_rng.state);          /* six draws, no more */
    llm_tensor_free(&ref);
    llm_params_free(&ps);
}
END_TEST

START_TEST(the_bias_draws_nothing_and_adds_d_out_numbers)
{
    llm_params with, without;
    llm_linear a1, b1, a2, b2;
    llm_rng r1, r2;
    size_t n1 = 0, n2 = 0, i;
    ck_assert_int_eq(llm_params_init(&with, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_init(&without, NULL), LLM_OK);
    llm_rng_seed(&r1, 19);
    llm_rng_seed(&r2, 19);
    ck_assert_int_eq(llm_linear_init(&a1, &with, "a", 2, 3, 1, &r1, NULL), LLM_OK);
    ck_assert_int_eq(llm_linear_init(&a2, &without, "a", 2, 3, 0, &r2, NULL), LLM_OK);
    ck_assert_uint_eq(r1.state, r2.state);
    for (i = 0; i < with.count; i++)
        n1 += with.items[i].value.size;
    for (i = 0; i < without.count; i++)
        n2 += without.items[i].value.size;
    ck_assert_uint_eq(n1, 9);
    ck_assert_uint_eq(n2, 6);
    ck_assert_int_eq(a2.has_bias, 0);
    ck_assert_uint_eq(without.count, 1);
    /* the next layer's weights do not depend on the earlier bias policy */
    ck_assert_int_eq(llm_linear_init(&b1, &with, "b", 3, 2, 0, &r1, NULL), LLM_OK);
    ck_assert_int_eq(llm_linear_init(&b2, &without, "b", 3, 2, 0, &r2, NULL), LLM_OK);
    ck_assert(memcmp(with.items[b1.weight].value.data, without.items[b2.weight].value.data,
                     6 * sizeof(double)) == 0);
    ck_assert(memcmp(with.items[a1.weight].value.data, without.items[a2.weight].value.data,
                     6 * sizeof(double)) == 0);
    llm_params_free(&with);
    llm_params_free(&without);
}
END_TEST

START_TEST(init_refusals_leave_layer_list_and_generator_untouched)
{
    static const char long56[] = "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcd";
    static const char long57[] = "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcde";
    llm_params ps;
    llm_linear lin, ok_lin;
    llm_rng rng, before;
    llm_error err;
    const size_t two[1] = {2};
    ck_assert_uint_eq(strlen(long56), 56);
    ck_assert_uint_eq(strlen(long57), 57);
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    llm_rng_seed(&rng, 5);
    ck_assert_int_eq(llm_linear_init(&ok_lin, &ps, "proj", 2, 3, 1, &rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&ps, "head.bias", 1, two, 0.0, 0, NULL), LLM_OK);
    before = rng;
    mark_bytes(&lin, sizeof lin);

#define REFUSED_HERE(call, code, stage)                                   \
    do {                                                             \
        assert_error((call), &err, (code), (stage));                 \
        ck_assert(marked_bytes(&lin, sizeof lin));                         \
        ck_assert_uint_eq(ps.count, 3);                              \
        ck_assert_uint_eq(rng.state, before.state);                  \
    } while (0)
    REFUSED_HERE(llm_linear_init(NULL, &ps, "x", 2, 3, 1, &rng, &err), LLM_ERR_ARGUMENT, "linear.init");
    REFUSED_HERE(llm_linear_init(&lin, NULL, "x", 2, 3, 1, &rng, &err), LLM_ERR_ARGUMENT, "linear.init");
    REFUSED_HERE(llm_linear_init(&lin, &ps, NULL, 2, 3, 1, &rng, &err), LLM_ERR_ARGUMENT, "linear.init");
    REFUSED_HERE(llm_linear_init(&lin, &ps, "x", 2, 3, 1, NULL, &err), LLM_ERR_ARGUMENT, "linear.init");
    REFUSED_HERE(llm_linear_init(&lin, &ps, "x", 0, 3, 1, &rng, &err), LLM_ERR_ARGUMENT, "linear.init");
    REFUSED_HERE(llm_linear_init(&lin, &ps, "x", 2, 0, 0, &rng, &err), LLM_ERR_ARGUMENT, "linear.init");
    REFUSED_HERE(llm_linear_init(&lin, &ps, "Proj", 2, 3, 1, &rng, &err), LLM_ERR_NAME, "param.name_check");
    REFUSED_HERE(llm_linear_init(&lin, &ps, "", 2, 3, 1, &rng, &err), LLM_ERR_NAME, "param.name_check");
    REFUSED_HERE(llm_linear_init(&lin, &ps, long57, 2, 3, 1, &rng, &err), LLM_ERR_NAME, "linear.init");
    REFUSED_HERE(llm_linear_init(&lin, &ps, "proj", 2, 3, 0, &rng, &err), LLM_ERR_NAME, "params.add_xavier");
    /* the weight is drawn and added, then the bias name is taken: rollback */
    REFUSED_HERE(llm_linear_init(&lin, &ps, "head", 2, 3, 1, &rng, &err), LLM_ERR_NAME, "params.add_const");
    ck_assert_ptr_nonnull(strstr(err.message, "head.bias"));
    REFUSED_HERE(llm_linear_init(&lin, &ps, "x", SIZE_MAX / 2, 4, 0, &rng, &err), LLM_ERR_OVERFLOW,
            "params.xavier_uniform");
#undef REFUSED_HERE
    /* the same layer without a bias fits, and so does a 56-character prefix */
    ck_assert_int_eq(llm_linear_init(&lin, &ps, "head", 2, 3, 0, &rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_linear_init(&lin, &ps, long56, 1, 1, 1, &rng, NULL), LLM_OK);
    ck_assert_uint_eq(strlen(ps.items[lin.weight].name), 63);
    ck_assert_uint_eq(ps.count, 6);
    llm_params_free(&ps);
}
END_TEST

/* ------------------------------------------------------------ forward pass -- */

START_TEST(forward_and_backward_reproduce_the_fixture)
{
    const size_t shape[2] = {2, 2}, yshape[2] = {2, 3};
    fixture f;
    pass p;
    double y[6];
    fixture_make(&f, 1);
    ck_assert_int_eq(pass_run(&p, &f, 2, shape, fix_x, NULL), LLM_OK);
    assert_shape(p.y, 2, yshape);
    read_all(p.y, y);
    assert_values(y, want_y, 6);
    pass_backward(&p, fix_g);
    assert_values(p.dx.data, want_dx, 4);
    assert_values(f.ps.items[f.lin.weight].grad.data, want_dw, 6);
    assert_values(f.ps.items[f.lin.bias].grad.data, want_db, 3);
    pass_free(&p);
    llm_params_free(&f.ps);
}
END_TEST

START_TEST(a_bias_free_layer_computes_x_w)
{
    static const double want[6] = {5, 1, 1, 5, 1.5, 4};
    const size_t shape[2] = {2, 2};
    fixture f;
    pass p;
    double y[6];
    size_t i, leaves = 0;
    fixture_make(&f, 0);
    ck_assert_uint_eq(f.ps.count, 1);
    ck_assert_int_eq(pass_run(&p, &f, 2, shape, fix_x, NULL), LLM_OK);
    read_all(p.y, y);
    assert_values(y, want, 6);
    for (i = 0; i < p.tape.count; i++)
        leaves += p.tape.nodes[i].op == &llm_op_leaf;
    ck_assert_uint_eq(leaves, 2);                          /* x and W, no bias */
    pass_backward(&p, fix_g);
    assert_values(p.dx.data, want_dx, 4);                  /* the bias does not enter */
    assert_values(f.ps.items[f.lin.weight].grad.data, want_dw, 6);
    pass_free(&p);
    llm_params_free(&f.ps);
}
END_TEST

START_TEST(leading_axes_are_preserved_and_change_no_bit)
{
    static const size_t shapes[5][8] = {
        {2, 2}, {2, 1, 2}, {1, 2, 2}, {1, 1, 1, 1, 1, 1, 2, 2}, {2}};
    static const size_t ranks[5] = {2, 3, 3, 8, 1};
    fixture f;
    size_t r, k;
    fixture_make(&f, 1);
    for (r = 0; r < 5; r++) {
        pass p;
        double y[6];
        size_t rows = ranks[r] == 1 ? 1 : 2;
        ck_assert_int_eq(pass_run(&p, &f, ranks[r], shapes[r], fix_x, NULL), LLM_OK);
        ck_assert_uint_eq(p.y->rank, ranks[r]);
        for (k = 0; k + 1 < ranks[r]; k++)
            ck_assert_uint_eq(p.y->shape[k], shapes[r][k]);
        ck_assert_uint_eq(p.y->shape[ranks[r] - 1], 3);
        read_all(p.y, y);
        assert_values(y, want_y, rows * 3);
        memset(f.ps.items[f.lin.weight].grad.data, 0, 6 * sizeof(double));
        memset(f.ps.items[f.lin.bias].grad.data, 0, 3 * sizeof(double));
        pass_backward(&p, fix_g);
        assert_values(p.dx.data, want_dx, rows * 2);
        if (rows == 2) {
            assert_values(f.ps.items[f.lin.weight].grad.data, want_dw, 6);
            assert_values(f.ps.items[f.lin.bias].grad.data, want_db, 3);
        } else {
            static const double outer[6] = {1, 0, -1, 2, 0, -2};   /* x0^T g0 */
            assert_values(f.ps.items[f.lin.weight].grad.data, outer, 6);
            assert_values(f.ps.items[f.lin.bias].grad.data, fix_g, 3);
        }
        pass_free(&p);
    }
    llm_params_free(&f.ps);
}
END_TEST

START_TEST(an_empty_leading_axis_gives_an_empty_output_and_zero_gradients)
{
    static const size_t shapes[2][3] = {{0, 2}, {2, 0, 2}};
    static const size_t ranks[2] = {2, 3};
    fixture f;
    size_t r, i;
    fixture_make(&f, 1);
    for (r = 0; r < 2; r++) {
        pass p;
        ck_assert_int_eq(pass_run(&p, &f, ranks[r], shapes[r], NULL, NULL), LLM_OK);
        ck_assert_uint_eq(p.y->rank, ranks[r]);
        ck_assert_uint_eq(p.y->size, 0);
        ck_assert_uint_eq(p.y->shape[ranks[r] - 2], 0);
        ck_assert_uint_eq(p.y->shape[ranks[r] - 1], 3);
        pass_backward(&p, NULL);
        for (i = 0; i < 6; i++) {
            double g = f.ps.items[f.lin.weight].grad.data[i];
            ck_assert(g == 0.0 && !signbit(g));
        }
        for (i = 0; i < 3; i++) {
            double g = f.ps.items[f.lin.bias].grad.data[i];
            ck_assert(g == 0.0 && !signbit(g));
        }
        pass_free(&p);
    }
    llm_params_free(&f.ps);
}
END_TEST

START_TEST(a_strided_input_is_read_through_its_strides)
{
    static const double xt[4] = {1, -1, 2, 3};           /* X^T, stored */
    static const double want_dxt[4] = {2, -0.5, 1, 3};   /* dX^T */
    const size_t shape[2] = {2, 2};
    fixture f;
    llm_tape tape;
    llm_tensor x, dx, seed;
    llm_var xv, tv, yv;
    const llm_tensor *y;
    double got[6];
    fixture_make(&f, 1);
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape, xt, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&dx, 2, shape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&seed, 2, (const size_t[]){2, 3}, fix_g, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &x, &dx, &xv, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_transpose(&tape, xv, 0, 1, &tv, NULL), LLM_OK);
    ck_assert_int_eq(llm_linear_forward(&f.lin, &f.ps, &tape, tv, &yv, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&tape, yv, &y, NULL), LLM_OK);
    read_all(y, got);
    assert_values(got, want_y, 6);
    ck_assert_int_eq(llm_tape_backward(&tape, yv, &seed, 0, NULL), LLM_OK);
    assert_values(dx.data, want_dxt, 4);
    llm_tape_free(&tape);
    llm_tensor_free(&x);
    llm_tensor_free(&dx);
    llm_tensor_free(&seed);
    llm_params_free(&f.ps);
}
END_TEST

START_TEST(a_layer_used_twice_records_its_parameters_once)
{
    const size_t shape[2] = {2, 2};
    fixture f;
    pass p;
    llm_var y2, z;
    llm_tensor seed;
    size_t i, leaves = 0;
    fixture_make(&f, 1);
    ck_assert_int_eq(pass_run(&p, &f, 2, shape, fix_x, NULL), LLM_OK);
    ck_assert_int_eq(llm_linear_forward(&f.lin, &f.ps, &p.tape, p.xv, &y2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_add(&p.tape, p.yv, y2, &z, NULL), LLM_OK);
    for (i = 0; i < p.tape.count; i++)
        leaves += p.tape.nodes[i].op == &llm_op_leaf;
    ck_assert_uint_eq(leaves, 3);                           /* x, W, b */
    ck_assert_int_eq(llm_tensor_from(&seed, 2, (const size_t[]){2, 3}, fix_g, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&p.tape, z, &seed, 0, NULL), LLM_OK);
    for (i = 0; i < 6; i++)
        ck_assert(f.ps.items[f.lin.weight].grad.data[i] == 2 * want_dw[i]);
    for (i = 0; i < 3; i++)
        ck_assert(f.ps.items[f.lin.bias].grad.data[i] == 2 * want_db[i]);
    for (i = 0; i < 4; i++)
        ck_assert(p.dx.data[i] == 2 * want_dx[i]);
    llm_tensor_free(&seed);
    pass_free(&p);
    llm_params_free(&f.ps);
}
END_TEST

START_TEST(param_leaf_finds_the_recorded_leaf_or_refuses)
{
    llm_params ps;
    llm_linear lin;
    llm_rng rng;
    llm_tape tape;
    llm_var a, b, out;
    llm_error err;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    llm_rng_seed(&rng, 1);
    ck_assert_int_eq(llm_linear_init(&lin, &ps, "p", 2, 2, 1, &rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_param_leaf(&tape, &ps, 1, &a, NULL), LLM_OK);
    ck_assert_int_eq(llm_param_leaf(&tape, &ps, 0, &b, NULL), LLM_OK);
    ck_assert_int_eq(llm_param_leaf(&tape, &ps, 1, &out, NULL), LLM_OK);
    ck_assert_uint_eq(out.id, a.id);
    ck_assert_uint_eq(out.epoch, a.epoch);
    ck_assert_uint_eq(tape.count, 2);
    mark_bytes(&out, sizeof out);
    assert_error(llm_param_leaf(NULL, &ps, 0, &out, &err), &err, LLM_ERR_ARGUMENT, "param.leaf");
    assert_error(llm_param_leaf(&tape, NULL, 0, &out, &err), &err, LLM_ERR_ARGUMENT, "param.leaf");
    assert_error(llm_param_leaf(&tape, &ps, 0, NULL, &err), &err, LLM_ERR_ARGUMENT, "param.leaf");
    assert_error(llm_param_leaf(&tape, &ps, 2, &out, &err), &err, LLM_ERR_NAME, "param.leaf");
    ck_assert(marked_bytes(&out, sizeof out));
    /* after a reset the old leaf is gone: a new one is recorded */
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    ck_assert_int_eq(llm_param_leaf(&tape, &ps, 1, &out, NULL), LLM_OK);
    ck_assert_uint_eq(out.id, 0);
    ck_assert_uint_eq(tape.count, 1);
    ck_assert(out.epoch != a.epoch);
    llm_tape_free(&tape);
    llm_params_free(&ps);
}
END_TEST

/* L = sum G * Y on a fresh tape; theta is perturbed in place by the checker. */
typedef struct probe {
    fixture *f;
    const double *x;
} probe;

static llm_status probe_loss(void *ctx, const llm_tensor *theta, double *value,
                             llm_error *err)
{
    const probe *pr = ctx;
    const size_t shape[2] = {2, 2};
    pass p;
    double y[6], sum = 0.0;
    size_t i;
    llm_status st;
    (void)theta;
    st = pass_run(&p, pr->f, 2, shape, pr->x, err);
    if (st == LLM_OK) {
        read_all(p.y, y);
        for (i = 0; i < 6; i++)
            sum += fix_g[i] * y[i];
        *value = sum;
    }
    pass_free(&p);
    return st;
}

START_TEST(every_gradient_coordinate_passes_the_difference_check)
{
    static const size_t coords[6] = {0, 1, 2, 3, 4, 5};
    const size_t shape[2] = {2, 2};
    fixture f;
    llm_tensor x;
    probe pr;
    double worst = -1.0;
    size_t failures = 99;
    fixture_make(&f, 1);
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape, fix_x, 4, NULL), LLM_OK);
    pr.f = &f;
    pr.x = x.data;
    ck_assert_int_eq(llm_gradient_check(probe_loss, &pr, &f.ps.items[f.lin.weight].value, want_dw,
                                        coords, 6, 1e-6, 1e-6, &worst, &failures, NULL), LLM_OK);
    ck_assert_uint_eq(failures, 0);
    ck_assert(worst < 1e-6);
    ck_assert_int_eq(llm_gradient_check(probe_loss, &pr, &f.ps.items[f.lin.bias].value, want_db,
                                        coords, 3, 1e-6, 1e-6, &worst, &failures, NULL), LLM_OK);
    ck_assert_uint_eq(failures, 0);
    ck_assert_int_eq(llm_gradient_check(probe_loss, &pr, &x, want_dx, coords, 4, 1e-6, 1e-6,
                                        &worst, &failures, NULL), LLM_OK);
    ck_assert_uint_eq(failures, 0);
    /* a wrong gradient, dW^T read as [2, 3], is caught where it differs */
    {
        static const double wrong[6] = {0.5, 3.5, -2, 6, -2, 1};
        ck_assert_int_eq(llm_gradient_check(probe_loss, &pr, &f.ps.items[f.lin.weight].value,
                                            wrong, coords, 6, 1e-6, 1e-6, &worst, &failures,
                                            NULL), LLM_OK);
        ck_assert_uint_eq(failures, 3);                  /* it agrees at 0, 2 and 5 */
    }
    ck_assert(memcmp(f.ps.items[f.lin.weight].value.data, fix_w, sizeof fix_w) == 0);
    llm_tensor_free(&x);
    llm_params_free(&f.ps);
}
END_TEST

/* ---------------------------------------------------------------- refusals -- */

START_TEST(forward_refusals_leave_output_and_tape_untouched)
{
    const size_t wide[2] = {2, 3}, two[1] = {2}, three[1] = {3};
    fixture f;
    llm_params empty, swapped, narrow;
    llm_rng spare;
    llm_tape tape, dead;
    llm_tensor xw, xs, x;
    llm_var xv, xsv, xok, y, stale;
    llm_error err;
    size_t nodes;
    fixture_make(&f, 1);
    llm_rng_seed(&spare, 0);
    ck_assert_int_eq(llm_params_init(&empty, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_init(&swapped, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_init(&narrow, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_xavier(&swapped, "proj.weight", 3, 2, &spare, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&swapped, "proj.bias", 1, three, 0.0, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_xavier(&narrow, "proj.weight", 2, 3, &spare, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&narrow, "proj.bias", 1, two, 0.0, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&xw, 2, wide, fix_w, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&xs, 0, NULL, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&x, 2, (const size_t[]){2, 2}, fix_x, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &x, &stale, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);       /* stale is now stale */
    put_constants(&tape, &xw, &xv, &xs, &xsv, &x, &xok, NULL);
    nodes = tape.count;
    mark_bytes(&y, sizeof y);

#define REFUSED_HERE(call, code, stage)                      \
    do {                                                \
        assert_error((call), &err, (code), (stage));    \
        ck_assert(marked_bytes(&y, sizeof y));                \
        ck_assert_uint_eq(tape.count, nodes);           \
    } while (0)
    REFUSED_HERE(llm_linear_forward(NULL, &f.ps, &tape, xok, &y, &err), LLM_ERR_ARGUMENT, "linear.forward");
    REFUSED_HERE(llm_linear_forward(&f.lin, NULL, &tape, xok, &y, &err), LLM_ERR_ARGUMENT, "linear.forward");
    REFUSED_HERE(llm_linear_forward(&f.lin, &f.ps, NULL, xok, &y, &err), LLM_ERR_ARGUMENT, "linear.forward");
    REFUSED_HERE(llm_linear_forward(&f.lin, &f.ps, &tape, xok, NULL, &err), LLM_ERR_ARGUMENT,
            "linear.forward");
    REFUSED_HERE(llm_linear_forward(&f.lin, &f.ps, &tape, xv, &y, &err), LLM_ERR_SHAPE, "linear.forward");
    ck_assert_ptr_nonnull(strstr(err.message, "[2, 3]"));
    REFUSED_HERE(llm_linear_forward(&f.lin, &f.ps, &tape, xsv, &y, &err), LLM_ERR_RANK, "linear.forward");
    REFUSED_HERE(llm_linear_forward(&f.lin, &empty, &tape, xok, &y, &err), LLM_ERR_NAME,
            "linear.forward");
    REFUSED_HERE(llm_linear_forward(&f.lin, &swapped, &tape, xok, &y, &err), LLM_ERR_SHAPE,
            "linear.forward");
    ck_assert_ptr_nonnull(strstr(err.message, "proj.weight"));
    REFUSED_HERE(llm_linear_forward(&f.lin, &narrow, &tape, xok, &y, &err), LLM_ERR_SHAPE,
            "linear.forward");
    ck_assert_ptr_nonnull(strstr(err.message, "proj.bias"));
    REFUSED_HERE(llm_linear_forward(&f.lin, &f.ps, &tape, stale, &y, &err), LLM_ERR_TAPE, "tape.value");
    f.ps.items[f.lin.weight].value.data[0] = NAN;                /* the first leaf refuses */
    REFUSED_HERE(llm_linear_forward(&f.lin, &f.ps, &tape, xok, &y, &err), LLM_ERR_NONFINITE, "tape.leaf");
    f.ps.items[f.lin.weight].value.data[0] = fix_w[0];
    /* a NaN bias is refused by its leaf, after the weight's leaf, the
       reshape and the product were recorded: they are rewound */
    f.ps.items[f.lin.bias].value.data[1] = NAN;
    REFUSED_HERE(llm_linear_forward(&f.lin, &f.ps, &tape, xok, &y, &err), LLM_ERR_NONFINITE,
            "tape.leaf");
    f.ps.items[f.lin.bias].value.data[1] = fix_b[1];
    /* finite weights and inputs whose product overflows: the product is
       refused midway, and the tape is as it was */
    {
        llm_tensor big;
        llm_var bigv;
        ck_assert_int_eq(llm_tensor_from(&big, 2, (const size_t[]){1, 2},
                                         (const double[]){1e200, 1e200}, 2, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_constant(&tape, &big, &bigv, NULL), LLM_OK);
        nodes = tape.count;
        f.ps.items[f.lin.weight].value.data[0] = 1e200;
        REFUSED_HERE(llm_linear_forward(&f.lin, &f.ps, &tape, bigv, &y, &err), LLM_ERR_NONFINITE,
                "tape.matmul");
        f.ps.items[f.lin.weight].value.data[0] = fix_w[0];
        llm_tensor_free(&big);
    }
    /* a released tape refuses when x is read, before anything is recorded */
    ck_assert_int_eq(llm_tape_init(&dead, 4, NULL), LLM_OK);
    {
        llm_var c, s;
        ck_assert_int_eq(llm_tape_constant(&dead, &x, &c, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_sum_all(&dead, c, &s, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_backward(&dead, s, NULL, 0, NULL), LLM_OK);
        assert_error(llm_linear_forward(&f.lin, &f.ps, &dead, c, &y, &err), &err, LLM_ERR_TAPE,
                     "tape.value");
        ck_assert(marked_bytes(&y, sizeof y));
    }
#undef REFUSED_HERE
    /* and the layer still works on the same tape: its first node takes the
       first id after the refusals, which left nothing behind */
    ck_assert_int_eq(llm_linear_forward(&f.lin, &f.ps, &tape, xok, &y, NULL), LLM_OK);
    ck_assert_ptr_eq(tape.nodes[nodes].op, &llm_op_leaf);
    ck_assert_ptr_eq(tape.nodes[nodes].grad, &f.ps.items[f.lin.weight].grad);
    {
        const llm_tensor *yv;
        double got[6];
        ck_assert_int_eq(llm_tape_value(&tape, y, &yv, NULL), LLM_OK);
        read_all(yv, got);
        assert_values(got, want_y, 6);
    }
    llm_tape_free(&dead);
    llm_tape_free(&tape);
    llm_tensor_free(&xw);
    llm_tensor_free(&xs);
    llm_tensor_free(&x);
    llm_params_free(&empty);
    llm_params_free(&swapped);
    llm_params_free(&narrow);
    llm_params_free(&f.ps);
}
END_TEST

/* A layer checks a list by the names and shapes it made (chapter 17's
   llm_param_check under it). */
START_TEST(a_layer_checks_a_list_by_name_and_shape)
{
    llm_params ps, other;
    llm_linear lin, biasless;
    llm_rng rng;
    llm_error err;
    const size_t s32[2] = {3, 2};
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_init(&other, NULL), LLM_OK);
    llm_rng_seed(&rng, 19);
    ck_assert_int_eq(llm_linear_init(&lin, &ps, "proj", 3, 2, 1, &rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_linear_init(&biasless, &ps, "out", 2, 3, 0, &rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_linear_check(&lin, &ps, "proj", &err), LLM_OK);
    ck_assert_int_eq(llm_linear_check(&biasless, &ps, "out", &err), LLM_OK);
    /* another prefix: the weight's name is not the one the layer made */
    ck_assert_int_eq(llm_linear_check(&lin, &ps, "prox", &err), LLM_ERR_NAME);
    ck_assert_str_eq(where(&err), "linear.check <- param.check");
    ck_assert_ptr_nonnull(strstr(err.message, "'proj.weight'"));
    ck_assert_ptr_nonnull(strstr(err.message, "'prox.weight'"));
    /* the right names at other positions: out's weight is [2, 3], not [3, 2] */
    biasless.weight = lin.weight;
    ck_assert_int_eq(llm_linear_check(&biasless, &ps, "proj", &err), LLM_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(err.message, "[3, 2]"));
    /* a list too short for the layer's positions */
    ck_assert_int_eq(llm_params_add_const(&other, "proj.weight", 2, s32, 0.5, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_linear_check(&lin, &other, "proj", &err), LLM_ERR_NAME);
    ck_assert_str_eq(first_stage(&err), "param.check");
    ck_assert_ptr_nonnull(strstr(err.message, "list holds 1"));
    /* null arguments */
    ck_assert_int_eq(llm_linear_check(NULL, &ps, "proj", &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.stage, "linear.check");
    ck_assert_int_eq(llm_linear_check(&lin, NULL, "proj", &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_linear_check(&lin, &ps, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_param_check(NULL, 0, "x", 0, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_param_check(&ps, 0, "proj.weight", 2, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_param_check(&ps, 0, "proj.weight", 2, s32, &err), LLM_OK);
    ck_assert_int_eq(llm_param_check(&ps, 0, "proj.weight", 1, s32, &err), LLM_ERR_SHAPE);
    llm_params_free(&ps);
    llm_params_free(&other);
}
END_TEST

/* llm_param_leaf reuses only a leaf of the parameter itself: the same view,
   and no accumulator only when the parameter is frozen. */
START_TEST(param_leaf_reuses_only_the_parameters_own_leaf)
{
    llm_params ps;
    llm_linear lin;
    llm_rng rng;
    llm_tape tape;
    llm_tensor rows;
    llm_var slice, whole, got;
    llm_node_info info;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    llm_rng_seed(&rng, 1);
    ck_assert_int_eq(llm_linear_init(&lin, &ps, "p", 3, 2, 0, &rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    /* rows 1..2 of the weight: the same buffer, another view */
    ck_assert_int_eq(llm_tensor_slice(&rows, &ps.items[0].value, 0, 1, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &rows, NULL, &slice, NULL), LLM_OK);
    ck_assert_int_eq(llm_param_leaf(&tape, &ps, 0, &got, NULL), LLM_OK);
    ck_assert_uint_ne(got.id, slice.id);
    ck_assert_int_eq(llm_tape_node(&tape, got.id, &info, NULL), LLM_OK);
    ck_assert_uint_eq(info.value->shape[0], 3);
    ck_assert_ptr_eq(info.grad, &ps.items[0].grad);
    /* the whole weight without an accumulator is not a trainable one's leaf */
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &ps.items[0].value, NULL, &whole, NULL), LLM_OK);
    ck_assert_int_eq(llm_param_leaf(&tape, &ps, 0, &got, NULL), LLM_OK);
    ck_assert_uint_ne(got.id, whole.id);
    /* but it is a frozen one's */
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_set_trainable(&ps, 0, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &ps.items[0].value, NULL, &whole, NULL), LLM_OK);
    ck_assert_int_eq(llm_param_leaf(&tape, &ps, 0, &got, NULL), LLM_OK);
    ck_assert_uint_eq(got.id, whole.id);
    llm_tape_free(&tape);
    llm_params_free(&ps);
}
END_TEST

Suite *ch19_linear_layers_suite(void)
{
    const TTest *tests[] = {
        init_adds_a_xavier_weight_and_a_zero_bias,
        the_bias_draws_nothing_and_adds_d_out_numbers,
        init_refusals_leave_layer_list_and_generator_untouched,
        forward_and_backward_reproduce_the_fixture,
        a_bias_free_layer_computes_x_w,
        leading_axes_are_preserved_and_change_no_bit,
        an_empty_leading_axis_gives_an_empty_output_and_zero_gradients,
        a_strided_input_is_read_through_its_strides,
        a_layer_used_twice_records_its_parameters_once,
        param_leaf_finds_the_recorded_leaf_or_refuses,
        a_layer_checks_a_list_by_name_and_shape,
        param_leaf_reuses_only_the_parameters_own_leaf,
        every_gradient_coordinate_passes_the_difference_check,
        forward_refusals_leave_output_and_tape_untouched,
    };
    return suite_of("ch19 linear layers", tcase_of("core", 0, tests, COUNT(tests)));
}
