/* Chapter 17: SplitMix64, Xavier-uniform matrices, named parameter lists. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/error.h"
#include "llm/nn.h"
#include "llm/tensor.h"
#include "support.h"

#define GAMMA UINT64_C(0x9e3779b97f4a7c15)

/* A tensor struct filled with a marker, to prove a refused call left it alone. */
static void mark(llm_tensor *t) { memset(t, 0x5a, sizeof *t); }
static int marked(const llm_tensor *t)
{
    llm_tensor m;
    mark(&m);
    return memcmp(t, &m, sizeof m) == 0;
}

/* ------------------------------------------------------------ generator -- */

START_TEST(seed_0_gives_the_reference_sequence)
{
    static const uint64_t want[4] = {
        UINT64_C(0xe220a8397b1dcdaf), UINT64_C(0x6e789e6aa1b965f4),
        UINT64_C(0x06c45d188009454f), UINT64_C(0xf88bb8a8724c81ec)};
    llm_rng rng;
    size_t k;
    llm_rng_seed(&rng, 0);
    for (k = 0; k < 4; k++)
        ck_assert_uint_eq(llm_rng_next_u64(&rng), want[k]);
    ck_assert_uint_eq(rng.state, 4 * GAMMA);   /* wraps modulo 2^64 */
}
END_TEST

START_TEST(the_seed_is_the_state_and_each_draw_adds_gamma)
{
    llm_rng rng;
    llm_rng_seed(&rng, 38);
    ck_assert_uint_eq(rng.state, UINT64_C(0x26));      /* no pre-mixing */
    llm_rng_seed(&rng, 35);
    (void)llm_rng_next_u64(&rng);
    ck_assert_uint_eq(rng.state, UINT64_C(0x9e3779b97f4a7c38));
    (void)llm_rng_unit(&rng);                          /* a unit value is one draw */
    ck_assert_uint_eq(rng.state, 35 + 2 * GAMMA);
}
END_TEST

START_TEST(unit_values_are_the_top_53_bits_times_2_pow_minus_53)
{
    llm_rng rng, copy;
    size_t k;
    llm_rng_seed(&rng, 12345);
    for (k = 0; k < 10000; k++) {
        uint64_t z;
        double u;
        copy = rng;
        z = llm_rng_next_u64(&copy);
        u = llm_rng_unit(&rng);
        ck_assert(u >= 0.0 && u < 1.0);
        ck_assert(u * 9007199254740992.0 == (double)(z >> 11));   /* exact */
        ck_assert_uint_eq(rng.state, copy.state);
    }
}
END_TEST

START_TEST(the_same_seed_replays_the_same_stream)
{
    llm_rng a, b, c;
    size_t k;
    int differ = 0;
    llm_rng_seed(&a, 17);
    llm_rng_seed(&b, 17);
    llm_rng_seed(&c, 18);
    for (k = 0; k < 100; k++) {
        uint64_t x = llm_rng_next_u64(&a);
        ck_assert_uint_eq(x, llm_rng_next_u64(&b));
        differ += x != llm_rng_next_u64(&c);
    }
    ck_assert_int_eq(differ, 100);
}
END_TEST

/* -------------------------------------------------------------- Xavier -- */

START_TEST(seed_17_fixture_matrix)
{
    static const double want[4] = {0.004950883736, -0.265932089217, -0.420504358848,
                                   -0.676313443233};
    llm_rng rng, copy;
    llm_tensor w;
    double limit = sqrt(6.0 / 4.0);
    size_t k;
    llm_rng_seed(&rng, 17);
    copy = rng;
    ck_assert_int_eq(llm_xavier_uniform(&w, 2, 2, &rng, NULL), LLM_OK);
    assert_layout(&w, 2, (const size_t[]){2, 2}, (const size_t[]){2, 1});
    ck_assert(w.owns);
    for (k = 0; k < 4; k++) {
        double exact = limit * (2.0 * llm_rng_unit(&copy) - 1.0);
        ck_assert_double_eq_tol(w.data[k], want[k], 1e-12);
        ck_assert(memcmp(&w.data[k], &exact, sizeof exact) == 0);
        ck_assert(fabs(w.data[k]) <= limit);
    }
    ck_assert_uint_eq(rng.state, 17 + 4 * GAMMA);
    ck_assert_uint_eq(rng.state, copy.state);
    llm_tensor_free(&w);
}
END_TEST

START_TEST(seed_17_replays_bit_for_bit_and_seed_18_differs)
{
    llm_rng a, b, c;
    llm_tensor w1, w2, w3;
    size_t k;
    llm_rng_seed(&a, 17);
    llm_rng_seed(&b, 17);
    llm_rng_seed(&c, 18);
    ck_assert_int_eq(llm_xavier_uniform(&w1, 2, 2, &a, NULL), LLM_OK);
    ck_assert_int_eq(llm_xavier_uniform(&w2, 2, 2, &b, NULL), LLM_OK);
    ck_assert_int_eq(llm_xavier_uniform(&w3, 2, 2, &c, NULL), LLM_OK);
    ck_assert(memcmp(w1.data, w2.data, 4 * sizeof(double)) == 0);
    for (k = 0; k < 4; k++)
        ck_assert(w1.data[k] != w3.data[k]);
    ck_assert_double_eq_tol(w3.data[0], -1.060861150427, 1e-12);
    llm_tensor_free(&w1);
    llm_tensor_free(&w2);
    llm_tensor_free(&w3);
}
END_TEST

START_TEST(elements_are_drawn_in_row_major_order)
{
    llm_rng rng, copy;
    llm_tensor w;
    double limit = sqrt(6.0 / 5.0);
    size_t i, j;
    llm_rng_seed(&rng, 7);
    copy = rng;
    ck_assert_int_eq(llm_xavier_uniform(&w, 2, 3, &rng, NULL), LLM_OK);
    for (i = 0; i < 2; i++)           /* row = fan-in index */
        for (j = 0; j < 3; j++) {
            double e = limit * (2.0 * llm_rng_unit(&copy) - 1.0);
            ck_assert(memcmp(&w.data[i * w.stride[0] + j], &e, sizeof e) == 0);
        }
    ck_assert_uint_eq(rng.state, 7 + 6 * GAMMA);
    llm_tensor_free(&w);
}
END_TEST

START_TEST(limit_and_spread_follow_the_fans)
{
    llm_rng rng;
    llm_tensor w;
    double mean = 0.0, var = 0.0, big = 0.0;
    size_t i;
    /* fan-in 2 -> 4: limit 1, std 1/sqrt(3) */
    ck_assert_double_eq_tol(sqrt(6.0 / 6.0), 1.0, 1e-15);
    ck_assert_double_eq_tol(sqrt(2.0 / 6.0), 0.577350269190, 1e-12);
    ck_assert_double_eq_tol(sqrt(2.0 / 4.0), 0.707106781187, 1e-12);
    ck_assert_double_eq_tol(sqrt(6.0 / 4.0), 1.224744871392, 1e-12);
    llm_rng_seed(&rng, 17);
    ck_assert_int_eq(llm_xavier_uniform(&w, 4, 2, &rng, NULL), LLM_OK);
    for (i = 0; i < w.size; i++)
        ck_assert(fabs(w.data[i]) <= 1.0);
    llm_tensor_free(&w);
    ck_assert_int_eq(llm_xavier_uniform(&w, 200, 300, &rng, NULL), LLM_OK);
    for (i = 0; i < w.size; i++) {
        mean += w.data[i];
        if (fabs(w.data[i]) > big)
            big = fabs(w.data[i]);
    }
    mean /= (double)w.size;
    for (i = 0; i < w.size; i++)
        var += (w.data[i] - mean) * (w.data[i] - mean);
    var /= (double)w.size;
    ck_assert(fabs(mean) < 0.002);
    ck_assert(fabs(var - 0.004) < 0.0002);      /* the target 2 / 500 */
    ck_assert(big <= sqrt(6.0 / 500.0));
    ck_assert(big > 0.95 * sqrt(6.0 / 500.0));
    llm_tensor_free(&w);
}
END_TEST

START_TEST(xavier_refusals_touch_neither_output_nor_generator)
{
    llm_rng rng, before;
    llm_tensor out;
    llm_error err;
    llm_rng_seed(&rng, 17);
    (void)llm_rng_next_u64(&rng);
    before = rng;
    mark(&out);
    ck_assert_int_eq(llm_xavier_uniform(NULL, 2, 2, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "params.xavier_uniform");
    ck_assert_int_eq(llm_xavier_uniform(&out, 2, 2, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_xavier_uniform(&out, 0, 3, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_xavier_uniform(&out, 3, 0, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_xavier_uniform(&out, 0, 0, &rng, NULL), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_xavier_uniform(&out, SIZE_MAX / 4 + 1, 4, &rng, &err),
                     LLM_ERR_OVERFLOW);
    ck_assert_str_eq(where(&err), "params.xavier_uniform");
    ck_assert_int_eq(llm_xavier_uniform(&out, (size_t)1 << 40, (size_t)1 << 20, &rng, &err),
                     LLM_ERR_ALLOC);
    ck_assert_str_eq(where(&err), "params.xavier_uniform");
    ck_assert(marked(&out));
    ck_assert(memcmp(&rng, &before, sizeof rng) == 0);
}
END_TEST

/* --------------------------------------------------------------- names -- */

START_TEST(valid_names_are_accepted)
{
    static const char *const good[] = {
        "blocks.0.ffn.down.weight", "token_embedding.weight", "final_norm.gain",
        "a", "0", "_", "a.b.c", "layer_10.w_2"};
    char longest[LLM_PARAM_NAME_MAX];
    size_t i;
    for (i = 0; i < sizeof good / sizeof good[0]; i++)
        ck_assert_int_eq(llm_param_name_check(good[i], NULL), LLM_OK);
    memset(longest, 'a', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';                /* 63 characters */
    ck_assert_int_eq(llm_param_name_check(longest, NULL), LLM_OK);
}
END_TEST

START_TEST(each_broken_rule_is_refused_with_its_position)
{
    static const struct { const char *name; const char *says; } bad[] = {
        {"", "empty"},
        {".", "before the '.' at position 0"},
        {".weight", "before the '.' at position 0"},
        {"ffn.", "after the '.' at position 3"},
        {"ffn..down", "before the '.' at position 4"},
        {"FFN.weight", "'F' at position 0"},
        {"ffn.Down", "'D' at position 4"},
        {"ffn-down", "'-' at position 3"},
        {"ffn down", "' ' at position 3"},
        {"ffn/down", "'/' at position 3"},
        {"\xc3\xa9t\xc3\xa9", "byte 0xc3 at position 0"},
        {"a\tb", "byte 0x09 at position 1"}};
    char too_long[LLM_PARAM_NAME_MAX + 1];
    llm_error err;
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(llm_param_name_check(bad[i].name, &err), LLM_ERR_NAME);
        ck_assert_str_eq(where(&err), "param.name_check");
        ck_assert_msg(strstr(err.message, bad[i].says) != NULL, "%s: %s", bad[i].name,
                      err.message);
    }
    memset(too_long, 'a', sizeof too_long - 1);
    too_long[sizeof too_long - 1] = '\0';              /* 64 characters */
    ck_assert_int_eq(llm_param_name_check(too_long, &err), LLM_ERR_NAME);
    ck_assert(strstr(err.message, "at most 63") != NULL);
    ck_assert_int_eq(llm_param_name_check(NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(llm_status_name(LLM_ERR_NAME), "name");
}
END_TEST

/* --------------------------------------------------------------- lists -- */

START_TEST(init_free_and_truncate_are_safe)
{
    llm_params ps;
    llm_error err;
    const size_t two[1] = {2};
    ck_assert_int_eq(llm_params_init(NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "params.init");
    ck_assert_int_eq(llm_params_init(&ps, &err), LLM_OK);
    ck_assert_ptr_null(ps.items);
    ck_assert_uint_eq(ps.count, 0);
    llm_params_free(&ps);
    llm_params_free(&ps);
    llm_params_free(NULL);
    llm_params_truncate(NULL, 0);
    ck_assert_int_eq(llm_params_add_const(&ps, "a", 1, two, 0.0, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&ps, "b", 1, two, 0.0, 0, NULL), LLM_OK);
    llm_params_truncate(&ps, 5);                       /* beyond count: nothing */
    ck_assert_uint_eq(ps.count, 2);
    llm_params_truncate(&ps, 1);
    ck_assert_uint_eq(ps.count, 1);
    ck_assert_str_eq(ps.items[0].name, "a");
    ck_assert_int_eq(llm_params_add_const(&ps, "b", 1, two, 0.0, 0, NULL), LLM_OK);
    llm_params_free(&ps);
    ck_assert_ptr_null(ps.items);
    ck_assert_uint_eq(ps.count, 0);
    ck_assert_uint_eq(ps.capacity, 0);
}
END_TEST

START_TEST(add_xavier_appends_value_zero_gradient_and_decay)
{
    llm_params ps;
    llm_rng rng, fresh;
    llm_tensor w;
    const llm_param *p;
    size_t i;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    llm_rng_seed(&rng, 17);
    llm_rng_seed(&fresh, 17);
    ck_assert_int_eq(llm_params_add_xavier(&ps, "mlp.up.weight", 2, 3, &rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_xavier_uniform(&w, 2, 3, &fresh, NULL), LLM_OK);
    ck_assert_uint_eq(ps.count, 1);
    p = &ps.items[0];
    ck_assert_str_eq(p->name, "mlp.up.weight");
    ck_assert_int_eq(p->decay, 1);
    ck_assert_uint_eq(p->value.rank, 2);
    assert_shape(&p->grad, 2, (const size_t[]){2, 3});
    ck_assert(p->value.owns && p->grad.owns);
    ck_assert(memcmp(p->value.data, w.data, 6 * sizeof(double)) == 0);
    for (i = 0; i < 6; i++)
        ck_assert(p->grad.data[i] == 0.0);
    ck_assert_uint_eq(rng.state, fresh.state);
    llm_tensor_free(&w);
    llm_params_free(&ps);
}
END_TEST

START_TEST(add_const_makes_gains_and_biases_without_draws)
{
    const size_t two[1] = {2}, three[1] = {3};
    llm_params ps;
    llm_rng rng;
    size_t i;
    llm_rng_seed(&rng, 17);
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&ps, "norm.gain", 1, two, 1.0, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&ps, "up.bias", 1, three, 0.0, 7, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&ps, "scale", 0, NULL, 0.5, 0, NULL), LLM_OK);
    ck_assert_uint_eq(rng.state, 17);                  /* nothing touched rng */
    ck_assert_uint_eq(ps.count, 3);
    for (i = 0; i < 2; i++)
        ck_assert(ps.items[0].value.data[i] == 1.0 && ps.items[0].grad.data[i] == 0.0);
    for (i = 0; i < 3; i++)
        ck_assert(ps.items[1].value.data[i] == 0.0 && !signbit(ps.items[1].value.data[i]));
    ck_assert_int_eq(ps.items[0].decay, 0);
    ck_assert_int_eq(ps.items[1].decay, 1);            /* normalised to 0 or 1 */
    ck_assert_uint_eq(ps.items[2].value.rank, 0);
    ck_assert_uint_eq(ps.items[2].value.size, 1);
    ck_assert(ps.items[2].value.data[0] == 0.5);
    llm_params_free(&ps);
}
END_TEST

START_TEST(find_returns_the_position_or_refuses)
{
    const size_t one[1] = {1};
    llm_params ps;
    llm_error err;
    size_t idx = 99;
    char name[16];
    int i;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    for (i = 0; i < 20; i++) {                          /* grows past the first capacity */
        snprintf(name, sizeof name, "p.%d", i);
        ck_assert_int_eq(llm_params_add_const(&ps, name, 1, one, (double)i, 0, NULL), LLM_OK);
    }
    ck_assert_uint_ge(ps.capacity, 20);
    for (i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "p.%d", i);
        ck_assert_int_eq(llm_params_find(&ps, name, &idx, NULL), LLM_OK);
        ck_assert_uint_eq(idx, (size_t)i);
        ck_assert(ps.items[idx].value.data[0] == (double)i);
    }
    idx = 99;
    ck_assert_int_eq(llm_params_find(&ps, "p.20", &idx, &err), LLM_ERR_NAME);
    ck_assert_str_eq(where(&err), "params.find");
    ck_assert_int_eq(llm_params_find(&ps, "P.1", &idx, &err), LLM_ERR_NAME);
    ck_assert_uint_eq(idx, 99);
    ck_assert_int_eq(llm_params_find(NULL, "p.1", &idx, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_params_find(&ps, NULL, &idx, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_params_find(&ps, "p.1", NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "params.find");
    ck_assert_uint_eq(idx, 99);
    llm_params_free(&ps);
}
END_TEST

/* Every refusal of both adders: the code, and the list and generator left
   byte for byte as they were. */
START_TEST(refused_additions_change_nothing)
{
    const size_t two[1] = {2}, empty[2] = {3, 0};
    const size_t deep[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    const size_t huge[2] = {SIZE_MAX / 2 + 1, 2}, big[2] = {(size_t)1 << 40, (size_t)1 << 20};
    llm_params ps, ps_before;
    llm_rng rng, rng_before;
    llm_error err;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    llm_rng_seed(&rng, 17);
    ck_assert_int_eq(llm_params_add_xavier(&ps, "w", 2, 2, &rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&ps, "g", 1, two, 1.0, 0, NULL), LLM_OK);
    memcpy(&ps_before, &ps, sizeof ps);
    rng_before = rng;

#define UNCHANGED()                                                  \
    do {                                                             \
        ck_assert(memcmp(&ps, &ps_before, sizeof ps) == 0);          \
        ck_assert(memcmp(&rng, &rng_before, sizeof rng) == 0);       \
    } while (0)

    ck_assert_int_eq(llm_params_add_xavier(NULL, "v", 2, 2, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_params_add_xavier(&ps, "v", 2, 2, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "params.add_xavier");
    ck_assert_int_eq(llm_params_add_xavier(&ps, NULL, 2, 2, &rng, &err), LLM_ERR_ARGUMENT);
    UNCHANGED();
    ck_assert_int_eq(llm_params_add_xavier(&ps, "w", 2, 2, &rng, &err), LLM_ERR_NAME);
    ck_assert_str_eq(where(&err), "params.add_xavier");
    ck_assert(strstr(err.message, "already taken by parameter 0") != NULL);
    ck_assert_int_eq(llm_params_add_xavier(&ps, "g", 2, 2, &rng, &err), LLM_ERR_NAME);
    ck_assert_int_eq(llm_params_add_xavier(&ps, "W", 2, 2, &rng, &err), LLM_ERR_NAME);
    ck_assert_str_eq(where(&err), "params.add_xavier <- param.name_check");
    ck_assert_int_eq(llm_params_add_xavier(&ps, "v", 0, 2, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_params_add_xavier(&ps, "v", 2, 0, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_params_add_xavier(&ps, "v", SIZE_MAX / 4 + 1, 4, &rng, &err),
                     LLM_ERR_OVERFLOW);
    ck_assert_int_eq(llm_params_add_xavier(&ps, "v", big[0], big[1], &rng, &err),
                     LLM_ERR_ALLOC);
    UNCHANGED();

    ck_assert_int_eq(llm_params_add_const(NULL, "b", 1, two, 0.0, 0, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_params_add_const(&ps, "g", 1, two, 0.0, 0, &err), LLM_ERR_NAME);
    ck_assert_int_eq(llm_params_add_const(&ps, "b..c", 1, two, 0.0, 0, &err), LLM_ERR_NAME);
    ck_assert_int_eq(llm_params_add_const(&ps, "b", 1, two, NAN, 0, &err), LLM_ERR_NONFINITE);
    ck_assert_str_eq(where(&err), "params.add_const");
    ck_assert_int_eq(llm_params_add_const(&ps, "b", 1, two, INFINITY, 0, &err),
                     LLM_ERR_NONFINITE);
    ck_assert_int_eq(llm_params_add_const(&ps, "b", 1, two, -INFINITY, 0, &err),
                     LLM_ERR_NONFINITE);
    ck_assert_int_eq(llm_params_add_const(&ps, "b", 2, empty, 0.0, 0, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "params.add_const");
    ck_assert_int_eq(llm_params_add_const(&ps, "b", 1, NULL, 0.0, 0, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_params_add_const(&ps, "b", 9, deep, 0.0, 0, &err), LLM_ERR_RANK);
    ck_assert_int_eq(llm_params_add_const(&ps, "b", 2, huge, 0.0, 0, &err), LLM_ERR_OVERFLOW);
    ck_assert_int_eq(llm_params_add_const(&ps, "b", 2, big, 0.0, 0, &err), LLM_ERR_ALLOC);
    UNCHANGED();
#undef UNCHANGED
    llm_params_free(&ps);
}
END_TEST

/* The demo's recipe: a component of three tensors, all or nothing. */
static llm_status two_layers(llm_params *ps, const char *prefix, size_t d_in,
                             size_t d_hidden, size_t d_out, llm_rng *rng, llm_error *err)
{
    char name[3][128];
    llm_rng trial = *rng;
    size_t mark = ps->count;
    llm_status st;
    snprintf(name[0], sizeof name[0], "%s.up.weight", prefix);
    snprintf(name[1], sizeof name[1], "%s.up.bias", prefix);
    snprintf(name[2], sizeof name[2], "%s.down.weight", prefix);
    st = llm_params_add_xavier(ps, name[0], d_in, d_hidden, &trial, err);
    if (st == LLM_OK)
        st = llm_params_add_const(ps, name[1], 1, &d_hidden, 0.0, 0, err);
    if (st == LLM_OK)
        st = llm_params_add_xavier(ps, name[2], d_hidden, d_out, &trial, err);
    if (st != LLM_OK) {
        llm_params_truncate(ps, mark);
        return st;
    }
    *rng = trial;
    return LLM_OK;
}

START_TEST(a_failed_component_leaves_generator_and_list_unchanged)
{
    const size_t two[1] = {2};
    llm_params ps, fresh_ps;
    llm_rng rng, before, fresh;
    llm_param first;
    llm_error err;
    size_t i;
    char prefix[80];
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_init(&fresh_ps, NULL), LLM_OK);
    llm_rng_seed(&rng, 17);
    ck_assert_int_eq(llm_params_add_const(&ps, "final_norm.gain", 1, two, 1.0, 0, NULL), LLM_OK);
    memcpy(&first, &ps.items[0], sizeof first);
    before = rng;
    /* the third tensor has a zero fan */
    ck_assert_int_eq(two_layers(&ps, "mlp", 2, 3, 0, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "params.add_xavier <- params.xavier_uniform");
    ck_assert(memcmp(&rng, &before, sizeof rng) == 0);
    ck_assert_uint_eq(ps.count, 1);
    ck_assert(memcmp(&ps.items[0], &first, sizeof first) == 0);
    /* a prefix too long for the last name: the first two fit, the third not */
    memset(prefix, 'a', 52);
    prefix[52] = '\0';
    ck_assert_int_eq(two_layers(&ps, prefix, 2, 3, 2, &rng, &err), LLM_ERR_NAME);
    ck_assert(memcmp(&rng, &before, sizeof rng) == 0);
    ck_assert_uint_eq(ps.count, 1);
    /* success: exactly what a fresh stream gives, 12 draws */
    ck_assert_int_eq(two_layers(&ps, "mlp", 2, 3, 2, &rng, &err), LLM_OK);
    ck_assert_uint_eq(ps.count, 4);
    ck_assert_uint_eq(rng.state, 17 + 12 * GAMMA);
    llm_rng_seed(&fresh, 17);
    ck_assert_int_eq(llm_params_add_const(&fresh_ps, "final_norm.gain", 1, two, 1.0, 0, NULL),
                     LLM_OK);
    ck_assert_int_eq(two_layers(&fresh_ps, "mlp", 2, 3, 2, &fresh, NULL), LLM_OK);
    for (i = 0; i < 4; i++) {
        ck_assert_str_eq(ps.items[i].name, fresh_ps.items[i].name);
        ck_assert(memcmp(ps.items[i].value.data, fresh_ps.items[i].value.data,
                         ps.items[i].value.size * sizeof(double)) == 0);
    }
    ck_assert_str_eq(ps.items[1].name, "mlp.up.weight");
    ck_assert_str_eq(ps.items[2].name, "mlp.up.bias");
    ck_assert_str_eq(ps.items[3].name, "mlp.down.weight");
    ck_assert_uint_eq(ps.items[3].value.shape[0], 3);
    ck_assert_uint_eq(ps.items[3].value.shape[1], 2);
    /* the same prefix again: refused on its first name, nothing changed */
    before = rng;
    ck_assert_int_eq(two_layers(&ps, "mlp", 2, 3, 2, &rng, &err), LLM_ERR_NAME);
    ck_assert(memcmp(&rng, &before, sizeof rng) == 0);
    ck_assert_uint_eq(ps.count, 4);
    llm_params_free(&ps);
    llm_params_free(&fresh_ps);
}
END_TEST

/* The symmetry argument, checked with hand gradients: from W1 = 0 and equal
   W2 entries the two hidden columns get equal gradients [0.5, -0.5]. */
START_TEST(zero_first_layer_gives_equal_gradient_columns)
{
    const double x[2] = {1.0, -1.0}, t = -1.0;
    double w1[2][2] = {{0, 0}, {0, 0}}, w2[2] = {0.5, 0.5};
    int step;
    for (step = 0; step < 5; step++) {
        double h[2], y = 0.0, gy, d[2][2], d2[2];
        size_t i, j;
        for (j = 0; j < 2; j++) {
            h[j] = x[0] * w1[0][j] + x[1] * w1[1][j];
            y += h[j] * w2[j];
        }
        gy = y - t;
        for (j = 0; j < 2; j++) {
            d2[j] = h[j] * gy;
            for (i = 0; i < 2; i++)
                d[i][j] = x[i] * w2[j] * gy;
        }
        if (step == 0) {
            ck_assert(d[0][0] == 0.5 && d[1][0] == -0.5);
            ck_assert(d[0][1] == 0.5 && d[1][1] == -0.5);
        }
        ck_assert(memcmp(&d[0][0], &d[0][1], sizeof d[0][0]) == 0);
        ck_assert(memcmp(&d[1][0], &d[1][1], sizeof d[1][0]) == 0);
        for (j = 0; j < 2; j++) {
            w2[j] -= 0.1 * d2[j];
            for (i = 0; i < 2; i++)
                w1[i][j] -= 0.1 * d[i][j];
        }
        ck_assert(memcmp(&w2[0], &w2[1], sizeof w2[0]) == 0);
    }
}
END_TEST

/* The null rule of llm/error.h for the generator's three void-ish calls. */
START_TEST(the_generator_ignores_a_null_state)
{
    llm_rng_seed(NULL, 42);
    ck_assert(llm_rng_next_u64(NULL) == 0);
    ck_assert(llm_rng_unit(NULL) == 0.0);
}
END_TEST

Suite *ch17_parameter_initialization_suite(void)
{
    const TTest *tests[] = {
        seed_0_gives_the_reference_sequence,
        the_seed_is_the_state_and_each_draw_adds_gamma,
        unit_values_are_the_top_53_bits_times_2_pow_minus_53,
        the_same_seed_replays_the_same_stream,
        seed_17_fixture_matrix,
        seed_17_replays_bit_for_bit_and_seed_18_differs,
        elements_are_drawn_in_row_major_order,
        limit_and_spread_follow_the_fans,
        xavier_refusals_touch_neither_output_nor_generator,
        valid_names_are_accepted,
        each_broken_rule_is_refused_with_its_position,
        init_free_and_truncate_are_safe,
        add_xavier_appends_value_zero_gradient_and_decay,
        add_const_makes_gains_and_biases_without_draws,
        find_returns_the_position_or_refuses,
        refused_additions_change_nothing,
        a_failed_component_leaves_generator_and_list_unchanged,
        zero_first_layer_gives_equal_gradient_columns,
        the_generator_ignores_a_null_state,
    };
    return suite_of("ch17 parameter initialization",
                    tcase_of("core", 0, tests, COUNT(tests)));
}
