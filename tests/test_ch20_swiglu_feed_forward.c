/* Chapter 20: the bias-free SwiGLU feed-forward branch. */
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

#define GAMMA UINT64_C(0x9e3779b97f4a7c15)

static const double fix_gate[6] = {-1, 0, 1, 0, 1, -1};
static const double fix_up[6] = {1, 2, 3, 3, 2, 1};
static const double fix_down[6] = {1, 0, 0, 1, 1, -1};
static const double fix_x[4] = {1, 0, 0, 1};
static const double fix_y[4] = {1.924234314520, -2.193175735890,
                                -0.268941421370, 1.731058578630};

/* A layer struct filled with a marker, to prove a refused call left it alone. */
static void mark_layer(llm_swiglu *f) { memset(f, 0x5a, sizeof *f); }
static int layer_marked(const llm_swiglu *f)
{
    llm_swiglu m;
    mark_layer(&m);
    return memcmp(f, &m, sizeof m) == 0;
}

/* A fresh list with the layer "ffn" (D = 2, F = 3, seed 20) holding the fixture. */
static void fixture_layer(llm_params *ps, llm_swiglu *ffn)
{
    llm_rng rng;
    llm_rng_seed(&rng, 20);
    ck_assert_int_eq(llm_params_init(ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_swiglu_init(ffn, ps, "ffn", 2, 3, &rng, NULL), LLM_OK);
    memcpy(ps->items[ffn->gate].value.data, fix_gate, sizeof fix_gate);
    memcpy(ps->items[ffn->up].value.data, fix_up, sizeof fix_up);
    memcpy(ps->items[ffn->down].value.data, fix_down, sizeof fix_down);
}

/* The value of v, row-major, into out (at most n values); returns the count. */
static size_t read_values(const llm_tape *tape, llm_var v, double *out, size_t n)
{
    const llm_tensor *t;
    size_t idx[LLM_MAX_RANK] = {0}, i = 0, k, o;
    ck_assert_int_eq(llm_tape_value(tape, v, &t, NULL), LLM_OK);
    ck_assert_uint_le(t->size, n);
    if (t->size > 0)
        do {
            for (o = t->offset, k = 0; k < t->rank; k++)
                o += idx[k] * t->stride[k];
            out[i++] = t->data[o];
        } while (llm_index_next(t->rank, t->shape, idx));
    return i;
}

/* ------------------------------------------------------------ construction -- */

START_TEST(init_draws_gate_up_down_in_row_major_order)
{
    static const char *const names[3] = {"ffn.gate.weight", "ffn.up.weight", "ffn.down.weight"};
    static const size_t shapes[3][2] = {{2, 3}, {2, 3}, {3, 2}};
    llm_params ps;
    llm_swiglu ffn;
    llm_rng rng, fresh;
    llm_tensor w;
    size_t k, i;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    llm_rng_seed(&rng, 20);
    ck_assert_int_eq(llm_swiglu_init(&ffn, &ps, "ffn", 2, 3, &rng, NULL), LLM_OK);
    ck_assert_uint_eq(ffn.d_model, 2);
    ck_assert_uint_eq(ffn.d_ff, 3);
    ck_assert_uint_eq(ffn.gate, 0);
    ck_assert_uint_eq(ffn.up, 1);
    ck_assert_uint_eq(ffn.down, 2);
    ck_assert_uint_eq(ps.count, 3);
    ck_assert_uint_eq(rng.state, 20 + 18 * GAMMA);          /* 3 D F = 18 draws */
    llm_rng_seed(&fresh, 20);
    for (k = 0; k < 3; k++) {
        const llm_param *p = &ps.items[k];
        ck_assert_str_eq(p->name, names[k]);
        assert_shape(&p->value, 2, (const size_t[]){shapes[k][0], shapes[k][1]});
        ck_assert_int_eq(p->decay, 1);
        ck_assert_int_eq(llm_xavier_uniform(&w, shapes[k][0], shapes[k][1], &fresh, NULL),
                         LLM_OK);
        ck_assert(memcmp(w.data, p->value.data, 6 * sizeof(double)) == 0);
        for (i = 0; i < 6; i++)
            ck_assert(p->grad.data[i] == 0.0);
        llm_tensor_free(&w);
    }
    ck_assert_uint_eq(fresh.state, rng.state);
    llm_params_free(&ps);
}
END_TEST

START_TEST(init_appends_after_existing_parameters)
{
    const size_t two[1] = {2};
    llm_params ps;
    llm_swiglu a, b;
    llm_rng rng;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&ps, "norm.gain", 1, two, 1.0, 0, NULL), LLM_OK);
    llm_rng_seed(&rng, 1);
    ck_assert_int_eq(llm_swiglu_init(&a, &ps, "blocks.0.ffn", 2, 5, &rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_swiglu_init(&b, &ps, "blocks.1.ffn", 2, 5, &rng, NULL), LLM_OK);
    ck_assert_uint_eq(a.gate, 1);
    ck_assert_uint_eq(a.down, 3);
    ck_assert_uint_eq(b.gate, 4);
    ck_assert_uint_eq(b.up, 5);
    ck_assert_uint_eq(b.down, 6);
    ck_assert_str_eq(ps.items[6].name, "blocks.1.ffn.down.weight");
    ck_assert_uint_eq(ps.items[6].value.shape[0], 5);
    ck_assert_uint_eq(ps.items[6].value.shape[1], 2);
    ck_assert_uint_eq(rng.state, 1 + 60 * GAMMA);           /* two layers of 3 * 2 * 5 */
    llm_params_free(&ps);
}
END_TEST

START_TEST(init_refusals_touch_neither_layer_list_nor_generator)
{
    struct { const char *prefix; size_t d, f; llm_status code; const char *stage; } cases[] = {
        {NULL, 2, 3, LLM_ERR_ARGUMENT, "swiglu.init"},
        {"ffn", 0, 3, LLM_ERR_ARGUMENT, "swiglu.init"},
        {"ffn", 2, 0, LLM_ERR_ARGUMENT, "swiglu.init"},
        {"FFN", 2, 3, LLM_ERR_NAME, "param.name_check"},
        {"", 2, 3, LLM_ERR_NAME, "param.name_check"},
        {"ffn.", 2, 3, LLM_ERR_NAME, "param.name_check"},
        {"taken", 2, 3, LLM_ERR_NAME, "params.add_xavier"},
    };
    const size_t one[1] = {1};
    llm_params ps;
    llm_swiglu ffn;
    llm_rng rng, before;
    llm_error err;
    size_t k;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&ps, "taken.gate.weight", 1, one, 0.0, 1, NULL),
                     LLM_OK);
    llm_rng_seed(&rng, 20);
    before = rng;
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        mark_layer(&ffn);
        ck_assert_int_eq(llm_swiglu_init(&ffn, &ps, cases[k].prefix, cases[k].d, cases[k].f,
                                         &rng, &err), cases[k].code);
        ck_assert_int_eq(err.code, cases[k].code);
        ck_assert_str_eq(first_stage(&err), cases[k].stage);
        ck_assert(layer_marked(&ffn));
        ck_assert_uint_eq(ps.count, 1);
        ck_assert_uint_eq(rng.state, before.state);
    }
    mark_layer(&ffn);
    ck_assert_int_eq(llm_swiglu_init(NULL, &ps, "ffn", 2, 3, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_swiglu_init(&ffn, NULL, "ffn", 2, 3, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_swiglu_init(&ffn, &ps, "ffn", 2, 3, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "swiglu.init");
    ck_assert(layer_marked(&ffn));
    ck_assert_uint_eq(ps.count, 1);
    ck_assert_uint_eq(rng.state, before.state);
    llm_params_free(&ps);
}
END_TEST

START_TEST(a_prefix_is_refused_exactly_when_a_name_would_exceed_63_characters)
{
    char prefix[64];
    llm_params ps;
    llm_swiglu ffn;
    llm_rng rng;
    llm_error err;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    llm_rng_seed(&rng, 3);
    memset(prefix, 'p', 52);
    prefix[52] = '\0';          /* "<52>.gate.weight" has 64 characters */
    mark_layer(&ffn);
    ck_assert_int_eq(llm_swiglu_init(&ffn, &ps, prefix, 2, 2, &rng, &err), LLM_ERR_NAME);
    ck_assert_str_eq(where(&err), "swiglu.init");
    ck_assert(layer_marked(&ffn));
    ck_assert_uint_eq(ps.count, 0);
    ck_assert_uint_eq(rng.state, 3);
    prefix[51] = '\0';          /* 63 characters: the longest name there can be */
    ck_assert_int_eq(llm_swiglu_init(&ffn, &ps, prefix, 2, 2, &rng, &err), LLM_OK);
    ck_assert_uint_eq(strlen(ps.items[ffn.gate].name), 63);
    ck_assert_uint_eq(strlen(ps.items[ffn.down].name), 63);
    llm_params_free(&ps);
}
END_TEST

START_TEST(a_failure_on_the_third_tensor_rolls_back_the_first_two)
{
    const size_t one[1] = {1};
    llm_params ps;
    llm_param saved;
    llm_swiglu ffn;
    llm_rng rng;
    llm_error err;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&ps, "mlp.down.weight", 1, one, 0.0, 1, NULL), LLM_OK);
    saved = ps.items[0];
    llm_rng_seed(&rng, 20);
    mark_layer(&ffn);
    ck_assert_int_eq(llm_swiglu_init(&ffn, &ps, "mlp", 2, 3, &rng, &err), LLM_ERR_NAME);
    ck_assert_str_eq(where(&err), "swiglu.init <- params.add_xavier");
    ck_assert(strstr(err.message, "mlp.down.weight") != NULL);
    ck_assert_uint_eq(ps.count, 1);
    ck_assert(memcmp(&ps.items[0], &saved, sizeof saved) == 0);
    ck_assert_uint_eq(rng.state, 20);
    ck_assert(layer_marked(&ffn));
    llm_params_free(&ps);
}
END_TEST

/* ------------------------------------------------------------ forward -- */

START_TEST(the_fixture_gives_the_rust_course_output)
{
    const size_t shape[2] = {2, 2};
    llm_params ps;
    llm_swiglu ffn;
    llm_tensor x;
    llm_tape tape;
    llm_var xv, yv;
    const llm_tensor *y;
    double got[4];
    size_t k;
    fixture_layer(&ps, &ffn);
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape, fix_x, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &x, &xv, NULL), LLM_OK);
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, xv, &yv, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&tape, yv, &y, NULL), LLM_OK);
    assert_shape(y, 2, (const size_t[]){2, 2});
    ck_assert_uint_eq(read_values(&tape, yv, got, 4), 4);
    for (k = 0; k < 4; k++)
        ck_assert_double_eq_tol(got[k], fix_y[k], 5e-13);
    /* the down matrix passes h_0 and h_1 through: y[1][0] = SiLU(-1) * 1 */
    ck_assert_double_eq_tol(got[2], -1.0 / (1.0 + exp(1.0)), 1e-15);
    llm_tape_free(&tape);
    llm_tensor_free(&x);
    llm_params_free(&ps);
}
END_TEST

START_TEST(leading_axes_are_kept_and_a_vector_is_one_row)
{
    const size_t s3[3] = {1, 2, 2}, s1[1] = {2};
    llm_params ps;
    llm_swiglu ffn;
    llm_tensor x3, x1;
    llm_tape tape;
    llm_var v3, v1, y3, y1;
    const llm_tensor *t;
    double got[4];
    size_t k;
    fixture_layer(&ps, &ffn);
    ck_assert_int_eq(llm_tensor_from(&x3, 3, s3, fix_x, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&x1, 1, s1, fix_x + 2, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &x3, &v3, NULL), LLM_OK);
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, v3, &y3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&tape, y3, &t, NULL), LLM_OK);
    assert_shape(t, 3, (const size_t[]){1, 2, 2});
    read_values(&tape, y3, got, 4);
    for (k = 0; k < 4; k++)
        ck_assert_double_eq_tol(got[k], fix_y[k], 5e-13);
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);    /* weights enter once per tape */
    ck_assert_int_eq(llm_tape_constant(&tape, &x1, &v1, NULL), LLM_OK);
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, v1, &y1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&tape, y1, &t, NULL), LLM_OK);
    assert_shape(t, 1, (const size_t[]){2});
    read_values(&tape, y1, got, 2);
    ck_assert_double_eq_tol(got[0], fix_y[2], 5e-13);        /* the vector [0, 1] is row 1 */
    ck_assert_double_eq_tol(got[1], fix_y[3], 5e-13);
    llm_tape_free(&tape);
    llm_tensor_free(&x3);
    llm_tensor_free(&x1);
    llm_params_free(&ps);
}
END_TEST

START_TEST(an_empty_batch_gives_an_empty_output_and_no_gradient)
{
    const size_t shape[3] = {2, 0, 2};
    llm_params ps;
    llm_swiglu ffn;
    llm_tensor x, seed;
    llm_tape tape;
    llm_var xv, yv;
    const llm_tensor *y;
    size_t k, i;
    fixture_layer(&ps, &ffn);
    ck_assert_int_eq(llm_tensor_zeros(&x, 3, shape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&seed, 3, shape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &x, &xv, NULL), LLM_OK);
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, xv, &yv, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&tape, yv, &y, NULL), LLM_OK);
    assert_shape(y, 3, (const size_t[]){2, 0, 2});
    ck_assert_uint_eq(y->size, 0);
    ck_assert_int_eq(llm_tape_backward(&tape, yv, &seed, 0, NULL), LLM_OK);
    for (k = 0; k < 3; k++)                   /* no position, no contribution */
        for (i = 0; i < 6; i++)
            ck_assert(ps.items[k].grad.data[i] == 0.0);
    llm_tape_free(&tape);
    llm_tensor_free(&x);
    llm_tensor_free(&seed);
    llm_params_free(&ps);
}
END_TEST

START_TEST(a_transposed_view_as_input_gives_the_same_rows)
{
    const size_t shape[2] = {2, 2};
    static const double xt[4] = {1, 3, 2, 4};            /* X = [[1, 2], [3, 4]] transposed */
    static const double xr[4] = {1, 2, 3, 4};
    llm_params ps;
    llm_swiglu ffn;
    llm_tensor a, b;
    llm_tape tape;
    llm_var va, vt, vb, ya, yb;
    double got_a[4], got_b[4];
    fixture_layer(&ps, &ffn);
    ck_assert_int_eq(llm_tensor_from(&a, 2, shape, xt, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&b, 2, shape, xr, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &a, &va, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_transpose(&tape, va, 0, 1, &vt, NULL), LLM_OK);
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, vt, &ya, NULL), LLM_OK);
    read_values(&tape, ya, got_a, 4);
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &b, &vb, NULL), LLM_OK);
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, vb, &yb, NULL), LLM_OK);
    read_values(&tape, yb, got_b, 4);
    ck_assert(memcmp(got_a, got_b, sizeof got_a) == 0);
    llm_tape_free(&tape);
    llm_tensor_free(&a);
    llm_tensor_free(&b);
    llm_params_free(&ps);
}
END_TEST

START_TEST(changing_row_0_leaves_row_1_bit_identical)
{
    const size_t shape[2] = {2, 2};
    static const double x2[4] = {5, -3, 0, 1};
    llm_params ps;
    llm_swiglu ffn;
    llm_tensor a, b;
    llm_tape tape;
    llm_var va, vb, ya, yb;
    double got_a[4], got_b[4];
    fixture_layer(&ps, &ffn);
    ck_assert_int_eq(llm_tensor_from(&a, 2, shape, fix_x, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&b, 2, shape, x2, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &a, &va, NULL), LLM_OK);
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, va, &ya, NULL), LLM_OK);
    read_values(&tape, ya, got_a, 4);
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &b, &vb, NULL), LLM_OK);
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, vb, &yb, NULL), LLM_OK);
    read_values(&tape, yb, got_b, 4);
    ck_assert(memcmp(got_a + 2, got_b + 2, 2 * sizeof(double)) == 0);
    ck_assert(got_a[0] != got_b[0] || got_a[1] != got_b[1]);
    llm_tape_free(&tape);
    llm_tensor_free(&a);
    llm_tensor_free(&b);
    llm_params_free(&ps);
}
END_TEST

START_TEST(huge_gate_pre_activations_stay_finite)
{
    const size_t shape[2] = {2, 2};
    static const double big_gate[6] = {-1000, 1000, 0, 0, 0, 0};
    static const double ones[4] = {1, 1, 1, 1};
    llm_params ps;
    llm_swiglu ffn;
    llm_tensor x, seed;
    llm_tape tape;
    llm_var xv, yv;
    double got[4];
    size_t k, i;
    fixture_layer(&ps, &ffn);
    memcpy(ps.items[ffn.gate].value.data, big_gate, sizeof big_gate);
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape, fix_x, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&seed, 2, shape, ones, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &x, &xv, NULL), LLM_OK);
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, xv, &yv, NULL), LLM_OK);
    read_values(&tape, yv, got, 4);
    /* row 0: a = [-1000, 1000, 0], SiLU = [-0, 1000, 0], h = [-0, 2000, 0] */
    ck_assert_double_eq_tol(got[0], 0.0, 1e-300);
    ck_assert_double_eq_tol(got[1], 2000.0, 1e-9);
    ck_assert_int_eq(llm_tape_backward(&tape, yv, &seed, 0, NULL), LLM_OK);
    for (k = 0; k < 3; k++)
        for (i = 0; i < 6; i++)
            ck_assert(isfinite(ps.items[k].grad.data[i]));
    /* dL/dWg[0][1] = x_00 * u_01 * SiLU'(1000) * (dL/dh_01) = 1 * 2 * 1 * 1 */
    ck_assert_double_eq_tol(ps.items[ffn.gate].grad.data[1], 2.0, 1e-12);
    llm_tape_free(&tape);
    llm_tensor_free(&x);
    llm_tensor_free(&seed);
    llm_params_free(&ps);
}
END_TEST

/* sum(C (.) Y) on a fresh tape, for llm_gradient_check. */
typedef struct obj_ctx {
    llm_params *ps;
    const llm_swiglu *ffn;
    const llm_tensor *x;
} obj_ctx;

static const double fix_c[4] = {1, -2, 0.5, 3};

static llm_status objective(void *ctx, const llm_tensor *theta, double *value, llm_error *err)
{
    const obj_ctx *c = ctx;
    llm_tape tape;
    llm_var xv, yv;
    double y[4];
    llm_status st = llm_tape_init(&tape, 8, err);
    (void)theta;
    if (st == LLM_OK)
        st = llm_tape_constant(&tape, c->x, &xv, err);
    if (st == LLM_OK)
        st = llm_swiglu_forward(c->ffn, c->ps, &tape, xv, &yv, err);
    if (st == LLM_OK) {
        read_values(&tape, yv, y, 4);
        *value = fix_c[0] * y[0] + fix_c[1] * y[1] + fix_c[2] * y[2] + fix_c[3] * y[3];
    }
    llm_tape_free(&tape);
    return st;
}

START_TEST(every_weight_and_input_coordinate_passes_the_gradient_check)
{
    const size_t shape[2] = {2, 2};
    static const double x0[4] = {0.3, -0.7, 1.1, 0.4};   /* a point with no zero gates */
    const size_t coords[6] = {0, 1, 2, 3, 4, 5};
    llm_params ps;
    llm_swiglu ffn;
    llm_tensor x, gx, seed;
    llm_tape tape;
    llm_var xv, yv;
    obj_ctx ctx;
    double worst, grad_before[6];
    size_t failures, k;
    const size_t pos[3] = {0, 1, 2};
    fixture_layer(&ps, &ffn);
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape, x0, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&gx, 2, shape, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&seed, 2, shape, fix_c, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_leaf(&tape, &x, &gx, &xv, NULL), LLM_OK);
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, xv, &yv, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, yv, &seed, 0, NULL), LLM_OK);
    ctx.ps = &ps;
    ctx.ffn = &ffn;
    ctx.x = &x;
    for (k = 0; k < 3; k++) {
        llm_param *p = &ps.items[pos[k]];
        ck_assert_int_eq(llm_gradient_check(objective, &ctx, &p->value, p->grad.data, coords, 6,
                                            1e-6, 3e-6, &worst, &failures, NULL), LLM_OK);
        ck_assert_uint_eq(failures, 0);
        ck_assert(worst < 3e-6);
    }
    ck_assert_int_eq(llm_gradient_check(objective, &ctx, &x, gx.data, coords, 4, 1e-6, 3e-6,
                                        &worst, &failures, NULL), LLM_OK);
    ck_assert_uint_eq(failures, 0);
    /* a wrong gradient must fail: the check can tell */
    memcpy(grad_before, ps.items[ffn.down].grad.data, sizeof grad_before);
    grad_before[3] += 1e-3;
    ck_assert_int_eq(llm_gradient_check(objective, &ctx, &ps.items[ffn.down].value, grad_before,
                                        coords, 6, 1e-6, 3e-6, &worst, &failures, NULL), LLM_OK);
    ck_assert_uint_eq(failures, 1);
    llm_tape_free(&tape);
    llm_tensor_free(&x);
    llm_tensor_free(&gx);
    llm_tensor_free(&seed);
    llm_params_free(&ps);
}
END_TEST

START_TEST(gradients_accumulate_into_the_list_and_sum_over_positions)
{
    const size_t shape[2] = {2, 2};
    static const double ones[4] = {1, 1, 1, 1};
    llm_params ps;
    llm_swiglu ffn;
    llm_tensor x, seed;
    llm_tape tape;
    llm_var xv, yv;
    double first[6], s0, s1;
    size_t pass, j;
    fixture_layer(&ps, &ffn);
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape, fix_x, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&seed, 2, shape, ones, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    for (pass = 0; pass < 2; pass++) {
        ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_constant(&tape, &x, &xv, NULL), LLM_OK);
        ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, xv, &yv, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_backward(&tape, yv, &seed, 0, NULL), LLM_OK);
        if (pass == 0)
            memcpy(first, ps.items[ffn.down].grad.data, sizeof first);
    }
    for (j = 0; j < 6; j++)
        ck_assert(ps.items[ffn.down].grad.data[j] == 2.0 * first[j]);   /* backward adds */
    /* with a seed of ones, dW_2[j][k] = h_0j + h_1j for both k */
    s0 = -1.0 / (1.0 + exp(1.0));             /* SiLU(-1) */
    s1 = 1.0 / (1.0 + exp(-1.0));             /* SiLU(1) */
    ck_assert_double_eq_tol(first[0], s0 * 1.0 + 0.0, 1e-14);          /* h_00 + h_10 */
    ck_assert_double_eq_tol(first[2], 0.0 + s1 * 2.0, 1e-14);          /* h_01 + h_11 */
    ck_assert_double_eq_tol(first[4], s1 * 3.0 + s0 * 1.0, 1e-14);     /* h_02 + h_12 */
    ck_assert(first[4] == first[5]);
    llm_tape_free(&tape);
    llm_tensor_free(&x);
    llm_tensor_free(&seed);
    llm_params_free(&ps);
}
END_TEST

START_TEST(two_passes_on_one_tape_share_the_weights_leaves)
{
    const size_t one[1] = {2}, shape[2] = {2, 2};
    static const double ones[4] = {1, 1, 1, 1};
    llm_params ps;
    llm_swiglu ffn;
    llm_tensor x0, x1, x, seed2, seed4;
    llm_tape tape;
    llm_var v0, v1, y0, y1, z, xv, yv;
    double once[18];
    size_t k, i, leaves = 0;
    fixture_layer(&ps, &ffn);
    ck_assert_int_eq(llm_tensor_from(&x0, 1, one, fix_x, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&x1, 1, one, fix_x + 2, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape, fix_x, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&seed2, 1, one, ones, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&seed4, 2, shape, ones, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    /* one pass over both rows */
    ck_assert_int_eq(llm_tape_constant(&tape, &x, &xv, NULL), LLM_OK);
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, xv, &yv, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, yv, &seed4, 0, NULL), LLM_OK);
    for (k = 0; k < 3; k++)
        for (i = 0; i < 6; i++) {
            once[k * 6 + i] = ps.items[k].grad.data[i];
            ps.items[k].grad.data[i] = 0.0;
        }
    /* two passes, one row each, on one recording: y0 + y1 */
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    put_constants(&tape, &x0, &v0, &x1, &v1, NULL);
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, v0, &y0, NULL), LLM_OK);
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, v1, &y1, NULL), LLM_OK);
    for (i = 0; i < tape.count; i++)
        leaves += tape.nodes[i].op == &llm_op_leaf;
    ck_assert_uint_eq(leaves, 3);                     /* gate, up, down, once each */
    ck_assert_int_eq(llm_tape_add(&tape, y0, y1, &z, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, z, &seed2, 0, NULL), LLM_OK);
    for (k = 0; k < 3; k++)
        for (i = 0; i < 6; i++)
            ck_assert_double_eq_tol(ps.items[k].grad.data[i], once[k * 6 + i], 1e-15);
    llm_tape_free(&tape);
    llm_tensor_free(&x0);
    llm_tensor_free(&x1);
    llm_tensor_free(&x);
    llm_tensor_free(&seed2);
    llm_tensor_free(&seed4);
    llm_params_free(&ps);
}
END_TEST

START_TEST(forward_refusals_name_their_stage_and_leave_the_output_alone)
{
    const size_t shape[2] = {2, 2}, wide[2] = {2, 3};
    static const double zeros[6] = {0, 0, 0, 0, 0, 0};
    llm_params ps;
    llm_swiglu ffn, bad;
    llm_tensor x, xw, sc;
    llm_tape tape, other;
    llm_var xv, xwv, sv, stale, y, marker;
    llm_error err;
    fixture_layer(&ps, &ffn);
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape, fix_x, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_from(&xw, 2, wide, zeros, 6, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_zeros(&sc, 0, NULL, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&other, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &x, &stale, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_reset(&tape, NULL), LLM_OK);
    put_constants(&tape, &x, &xv, &xw, &xwv, &sc, &sv, NULL);
    memset(&marker, 0x5a, sizeof marker);
    y = marker;

    ck_assert_int_eq(llm_swiglu_forward(NULL, &ps, &tape, xv, &y, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "swiglu.forward");
    ck_assert_int_eq(llm_swiglu_forward(&ffn, NULL, &tape, xv, &y, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, NULL, xv, &y, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, xv, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "swiglu.forward");

    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, sv, &y, &err), LLM_ERR_RANK);
    ck_assert_str_eq(where(&err), "swiglu.forward");
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, xwv, &y, &err), LLM_ERR_SHAPE);
    ck_assert_str_eq(where(&err), "swiglu.forward");
    ck_assert(strstr(err.message, "d_model is 2") != NULL);
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, stale, &y, &err), LLM_ERR_TAPE);
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &other, xv, &y, &err), LLM_ERR_TAPE);

    bad = ffn;
    bad.up = 3;
    ck_assert_int_eq(llm_swiglu_forward(&bad, &ps, &tape, xv, &y, &err), LLM_ERR_NAME);
    ck_assert_str_eq(where(&err), "swiglu.forward");
    ck_assert(strstr(err.message, "up") != NULL);
    bad = ffn;
    bad.gate = ffn.down;
    bad.down = ffn.gate;
    ck_assert_int_eq(llm_swiglu_forward(&bad, &ps, &tape, xv, &y, &err), LLM_ERR_SHAPE);
    ck_assert(strstr(err.message, "ffn.down.weight") != NULL);
    bad = ffn;
    bad.d_ff = 4;
    ck_assert_int_eq(llm_swiglu_forward(&bad, &ps, &tape, xv, &y, &err), LLM_ERR_SHAPE);
    bad = ffn;
    bad.d_model = 0;
    ck_assert_int_eq(llm_swiglu_forward(&bad, &ps, &tape, xv, &y, &err), LLM_ERR_SHAPE);

    ck_assert_uint_eq(tape.count, 3);         /* the refusals above record nothing */
    ps.items[ffn.up].value.data[4] = NAN;     /* the tape refuses a non-finite leaf */
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, xv, &y, &err), LLM_ERR_NONFINITE);
    ck_assert_uint_eq(tape.count, 3);         /* the gate's leaf was rewound */
    ps.items[ffn.up].value.data[4] = 0.0;
    {
        /* finite, but X W_u overflows after the leaves, the reshape and
           X W_g were recorded: all of them are rewound */
        static const double huge[4] = {1e200, 1e200, 1e200, 1e200};
        llm_tensor xb;
        llm_var xbv;
        size_t k, nodes;
        ck_assert_int_eq(llm_tensor_from(&xb, 2, shape, huge, 4, NULL), LLM_OK);
        ck_assert_int_eq(llm_tape_constant(&tape, &xb, &xbv, NULL), LLM_OK);
        nodes = tape.count;
        for (k = 0; k < ps.items[ffn.up].value.size; k++)
            ps.items[ffn.up].value.data[k] = 1e200;
        ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, xbv, &y, &err),
                         LLM_ERR_NONFINITE);
        ck_assert_str_eq(where(&err), "tape.matmul");
        ck_assert_uint_eq(tape.count, nodes);
        llm_tensor_free(&xb);
    }

    ck_assert(memcmp(&y, &marker, sizeof y) == 0);
    ck_assert_uint_eq(ps.count, 3);
    llm_tape_free(&tape);
    llm_tape_free(&other);
    llm_tensor_free(&x);
    llm_tensor_free(&xw);
    llm_tensor_free(&sc);
    llm_params_free(&ps);
}
END_TEST

/* Each weight in turn is replaced by one with the right rows and one more
   column: the forward pass refuses it by name and records nothing. */
START_TEST(a_weight_wrong_only_in_its_columns_is_refused)
{
    const size_t shape[2] = {2, 2};
    llm_params ps;
    llm_swiglu ffn;
    llm_tensor x, kept, wider;
    llm_tape tape;
    llm_var xv, y, marker;
    llm_error err;
    size_t which[3], k, count;
    const char *names[3] = {"ffn.gate.weight", "ffn.up.weight", "ffn.down.weight"};
    fixture_layer(&ps, &ffn);
    which[0] = ffn.gate;
    which[1] = ffn.up;
    which[2] = ffn.down;
    ck_assert_int_eq(llm_tensor_from(&x, 2, shape, fix_x, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 8, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &x, &xv, NULL), LLM_OK);
    count = tape.count;
    memset(&marker, 0x5a, sizeof marker);
    y = marker;
    for (k = 0; k < 3; k++) {
        llm_tensor *w = &ps.items[which[k]].value;
        const size_t wshape[2] = {w->shape[0], w->shape[1] + 1};
        ck_assert_int_eq(llm_tensor_zeros(&wider, 2, wshape, NULL), LLM_OK);
        kept = *w;
        *w = wider;
        ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, xv, &y, &err), LLM_ERR_SHAPE);
        ck_assert_str_eq(where(&err), "swiglu.forward");
        ck_assert(strstr(err.message, names[k]) != NULL);
        ck_assert_uint_eq(tape.count, count);
        *w = kept;
        llm_tensor_free(&wider);
    }
    ck_assert(memcmp(&y, &marker, sizeof y) == 0);
    ck_assert_int_eq(llm_swiglu_forward(&ffn, &ps, &tape, xv, &y, &err), LLM_OK);
    llm_tape_free(&tape);
    llm_tensor_free(&x);
    llm_params_free(&ps);
}
END_TEST

Suite *ch20_swiglu_feed_forward_suite(void)
{
    const TTest *tests[] = {
        init_draws_gate_up_down_in_row_major_order,
        init_appends_after_existing_parameters,
        init_refusals_touch_neither_layer_list_nor_generator,
        a_prefix_is_refused_exactly_when_a_name_would_exceed_63_characters,
        a_failure_on_the_third_tensor_rolls_back_the_first_two,
        the_fixture_gives_the_rust_course_output,
        leading_axes_are_kept_and_a_vector_is_one_row,
        an_empty_batch_gives_an_empty_output_and_no_gradient,
        a_transposed_view_as_input_gives_the_same_rows,
        changing_row_0_leaves_row_1_bit_identical,
        huge_gate_pre_activations_stay_finite,
        every_weight_and_input_coordinate_passes_the_gradient_check,
        gradients_accumulate_into_the_list_and_sum_over_positions,
        two_passes_on_one_tape_share_the_weights_leaves,
        forward_refusals_name_their_stage_and_leave_the_output_alone,
        a_weight_wrong_only_in_its_columns_is_refused,
    };
    return suite_of("ch20 swiglu feed-forward",
                    tcase_of("swiglu", 0, tests, COUNT(tests)));
}
