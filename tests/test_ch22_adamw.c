/* Chapter 22: AdamW, bias correction, decoupled decay, groups, clipping. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/error.h"
#include "llm/nn.h"
#include "llm/tape.h"
#include "llm/tensor.h"
#include "llm/data.h"
#include "llm/optim.h"
#include "support.h"

static const llm_adamw_config fixture_config = {0.5, 0.5, 0.1, 0.1};

#define CLOSE(a, b) ck_assert_msg(fabs((a) - (b)) <= 1e-12, "%.17g != %.17g", (double)(a), \
                                  (double)(b))
/* Appends a rank-1 parameter with the given values and gradient. */
static void add(llm_params *ps, const char *name, size_t n, const double *values,
                const double *grad, int decay)
{
    const size_t shape[1] = {n};
    llm_param *p;
    ck_assert_int_eq(llm_params_add_const(ps, name, 1, shape, 0.0, decay, NULL), LLM_OK);
    p = &ps->items[ps->count - 1];
    memcpy(p->value.data, values, n * sizeof values[0]);
    if (grad != NULL)
        memcpy(p->grad.data, grad, n * sizeof grad[0]);
}

/* The fixture list: w = [1, -2] with gradient [0.2, -0.4], decayed, and a
   gain norm.gain = [1] with gradient [0.5], not decayed. */
static void fixture(llm_params *ps, llm_adamw *opt)
{
    static const double w[2] = {1.0, -2.0}, gw[2] = {0.2, -0.4};
    static const double gain[1] = {1.0}, gg[1] = {0.5};
    ck_assert_int_eq(llm_params_init(ps, NULL), LLM_OK);
    add(ps, "w", 2, w, gw, 1);
    add(ps, "norm.gain", 1, gain, gg, 0);
    ck_assert_int_eq(llm_adamw_init(opt, ps, &fixture_config, NULL), LLM_OK);
}

static void teardown(llm_params *ps, llm_adamw *opt)
{
    llm_adamw_free(opt);
    llm_params_free(ps);
}

/* Every value and moment, then steps, p1 and p2, as raw bytes. */
static size_t snapshot(const llm_params *ps, const llm_adamw *opt, unsigned char *out)
{
    size_t i, n = 0;
    for (i = 0; i < ps->count; i++) {
        const size_t bytes = ps->items[i].value.size * sizeof(double);
        memcpy(out + n, ps->items[i].value.data, bytes);
        n += bytes;
        memcpy(out + n, opt->moments[i].m.data, bytes);
        n += bytes;
        memcpy(out + n, opt->moments[i].v.data, bytes);
        n += bytes;
    }
    memcpy(out + n, &opt->steps, sizeof opt->steps);
    n += sizeof opt->steps;
    memcpy(out + n, &opt->p1, sizeof opt->p1);
    n += sizeof opt->p1;
    memcpy(out + n, &opt->p2, sizeof opt->p2);
    n += sizeof opt->p2;
    return n;
}

START_TEST(fixture_step_matches_the_rust_course)
{
    llm_params ps;
    llm_adamw opt;
    llm_adamw_terms t[2];
    size_t j;
    fixture(&ps, &opt);
    for (j = 0; j < 2; j++)
        ck_assert_int_eq(llm_adamw_coordinate(&opt, LLM_GRAD_UNSCALED, 0.1, 1,
                                              ps.items[0].value.data[j],
                                              ps.items[0].grad.data[j], 0.0, 0.0, &t[j], NULL),
                         LLM_OK);
    CLOSE(t[0].m, 0.1);
    CLOSE(t[1].m, -0.2);
    CLOSE(t[0].v, 0.02);
    CLOSE(t[1].v, 0.08);
    CLOSE(t[0].m_hat, 0.2);
    CLOSE(t[1].m_hat, -0.4);
    CLOSE(t[0].v_hat, 0.04);
    CLOSE(t[1].v_hat, 0.16);
    CLOSE(t[0].adaptive, 0.1 * 0.2 / 0.3);
    CLOSE(t[1].adaptive, -0.08);
    CLOSE(t[0].decay, 0.01);
    CLOSE(t[1].decay, -0.02);
    CLOSE(t[0].theta, 1.0 - 0.2 / 3.0 - 0.01);
    CLOSE(t[1].theta, -1.9);
    ck_assert_int_eq(llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 0.1, NULL), LLM_OK);
    for (j = 0; j < 2; j++) {     /* the step applied exactly these terms */
        ck_assert_int_eq(memcmp(&ps.items[0].value.data[j], &t[j].theta, sizeof(double)), 0);
        ck_assert_int_eq(memcmp(&opt.moments[0].m.data[j], &t[j].m, sizeof(double)), 0);
        ck_assert_int_eq(memcmp(&opt.moments[0].v.data[j], &t[j].v, sizeof(double)), 0);
    }
    CLOSE(ps.items[0].value.data[0], 0.923333333333333);
    ck_assert_uint_eq(opt.steps, 1);
    ck_assert(opt.p1 == 0.5 && opt.p2 == 0.5);
    ck_assert(ps.items[0].grad.data[0] == 0.2 && ps.items[0].grad.data[1] == -0.4);
    teardown(&ps, &opt);
}
END_TEST

START_TEST(zero_gradient_decays_3_to_2_97_and_leaves_a_gain_alone)
{
    const size_t one[1] = {1};
    llm_params ps;
    llm_adamw opt;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&ps, "w", 1, one, 3.0, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&ps, "norm.gain", 1, one, 3.0, 0, NULL), LLM_OK);
    ck_assert_int_eq(llm_adamw_init(&opt, &ps, &fixture_config, NULL), LLM_OK);
    ck_assert_int_eq(llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 0.1, NULL), LLM_OK);
    CLOSE(ps.items[0].value.data[0], 2.97);
    ck_assert(ps.items[1].value.data[0] == 3.0);
    ck_assert(opt.moments[0].m.data[0] == 0.0 && opt.moments[0].v.data[0] == 0.0);
    teardown(&ps, &opt);
}
END_TEST

START_TEST(bias_correction_at_steps_1_to_3)
{
    const llm_adamw_config usual = {0.9, 0.999, 1e-8, 0.0};
    const double g = 0.2, p1[3] = {0.9, 0.9 * 0.9, 0.9 * 0.9 * 0.9};
    const double p2[3] = {0.999, 0.999 * 0.999, 0.999 * 0.999 * 0.999};
    const double m[3] = {0.1 * g, (0.9 * 0.1 + 0.1) * g, ((0.9 * 0.1 + 0.1) * 0.9 + 0.1) * g};
    static const double zero[1] = {0.0};
    llm_params ps;
    llm_adamw opt;
    size_t t;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    add(&ps, "u", 1, zero, NULL, 0);
    ck_assert_int_eq(llm_adamw_init(&opt, &ps, &usual, NULL), LLM_OK);
    ck_assert(opt.p1 == 1.0 && opt.p2 == 1.0 && opt.steps == 0);
    for (t = 0; t < 3; t++) {
        llm_adamw_terms terms;
        ps.items[0].grad.data[0] = g;
        ck_assert_int_eq(llm_adamw_coordinate(&opt, LLM_GRAD_UNSCALED, 1e-3, 0,
                                              ps.items[0].value.data[0], g,
                                              opt.moments[0].m.data[0],
                                              opt.moments[0].v.data[0], &terms, NULL),
                         LLM_OK);
        CLOSE(terms.m, m[t]);
        CLOSE(terms.m_hat, g);              /* the correction removes the bias */
        CLOSE(terms.v_hat, g * g);
        CLOSE(terms.adaptive, 1e-3 * g / (g + 1e-8));
        ck_assert(terms.m < g);             /* the raw moment is still biased */
        ck_assert_int_eq(llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 1e-3, NULL), LLM_OK);
        ck_assert_uint_eq(opt.steps, t + 1);
        ck_assert(opt.p1 == p1[t]);         /* running products, bit for bit */
        ck_assert(opt.p2 == p2[t]);
        ck_assert(opt.moments[0].m.data[0] == terms.m);
        ck_assert(opt.moments[0].v.data[0] == terms.v);
    }
    teardown(&ps, &opt);
}
END_TEST

START_TEST(groups_decay_only_the_decay_group)
{
    static const double three[1] = {3.0}, g[1] = {0.7};
    const llm_adamw_config plain = {0.5, 0.5, 0.1, 0.0};
    llm_params ps, ref;
    llm_adamw opt, ropt;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    add(&ps, "w", 1, three, g, 1);
    add(&ps, "norm.gain", 1, three, g, 0);
    ck_assert_int_eq(llm_params_init(&ref, NULL), LLM_OK);
    add(&ref, "w", 1, three, g, 1);
    add(&ref, "norm.gain", 1, three, g, 0);
    ck_assert_int_eq(llm_adamw_init(&opt, &ps, &fixture_config, NULL), LLM_OK);
    ck_assert_int_eq(llm_adamw_init(&ropt, &ref, &plain, NULL), LLM_OK);
    ck_assert_int_eq(llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 0.1, NULL), LLM_OK);
    ck_assert_int_eq(llm_adamw_step(&ropt, &ref, LLM_GRAD_UNSCALED, 0.1, NULL), LLM_OK);
    /* the gain moves exactly as without any decay; the weight by lr*wd*3 more */
    ck_assert(ps.items[1].value.data[0] == ref.items[1].value.data[0]);
    CLOSE(ref.items[0].value.data[0] - ps.items[0].value.data[0], 0.1 * 0.1 * 3.0);
    ck_assert(ps.items[0].value.data[0] < ps.items[1].value.data[0]);
    /* the moments do not see the decay */
    ck_assert(opt.moments[0].m.data[0] == ropt.moments[0].m.data[0]);
    ck_assert(opt.moments[0].v.data[0] == ropt.moments[0].v.data[0]);
    teardown(&ps, &opt);
    teardown(&ref, &ropt);
}
END_TEST

START_TEST(quadratic_trajectory_endpoints)
{
    static const double start[2] = {1.0, 1.0};
    double sgd[2] = {1.0, 1.0};
    llm_params ps;
    llm_adamw opt;
    size_t t;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    add(&ps, "p", 2, start, NULL, 1);
    ck_assert_int_eq(llm_adamw_init(&opt, &ps, &fixture_config, NULL), LLM_OK);
    for (t = 0; t < 4; t++) {
        double *p = ps.items[0].value.data, *g = ps.items[0].grad.data;
        sgd[0] -= 0.1 * sgd[0];
        sgd[1] -= 0.1 * (4.0 * sgd[1]);
        ck_assert_int_eq(llm_params_zero_grad(&ps, NULL), LLM_OK);
        g[0] += p[0];
        g[1] += 4.0 * p[1];
        ck_assert_int_eq(llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 0.1, NULL), LLM_OK);
    }
    CLOSE(sgd[0], 0.6561);
    CLOSE(sgd[1], 0.1296);
    ck_assert(fabs(ps.items[0].value.data[0] - 0.607580) < 5e-7);
    ck_assert(fabs(ps.items[0].value.data[1] - 0.578823) < 5e-7);
    teardown(&ps, &opt);
}
END_TEST

START_TEST(decay_product_domain)
{
    llm_params ps;
    llm_adamw opt, nodecay;
    llm_error err;
    const llm_adamw_config zero_wd = {0.5, 0.5, 0.1, 0.0};
    fixture(&ps, &opt);
    REFUSED(llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 10.0, &err), LLM_ERR_ARGUMENT,
            "adamw.step");                                 /* 10 * 0.1 rounds to 1 */
    ck_assert(strstr(err.message, "decay product") != NULL);
    REFUSED(llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 25.0, &err), LLM_ERR_ARGUMENT,
            "adamw.step");
    REFUSED(llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 1e-323, &err), LLM_ERR_ARGUMENT,
            "adamw.step");                                 /* the product rounds to 0 */
    ck_assert(strstr(err.message, "decay product") != NULL);
    ck_assert_uint_eq(opt.steps, 0);
    ck_assert_int_eq(llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 9.99, &err), LLM_OK);
    ck_assert_int_eq(llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 1e-300, &err), LLM_OK);
    /* without decay there is no product to check */
    ck_assert_int_eq(llm_adamw_init(&nodecay, &ps, &zero_wd, NULL), LLM_OK);
    ck_assert_int_eq(llm_adamw_step(&nodecay, &ps, LLM_GRAD_UNSCALED, 100.0, &err), LLM_OK);
    ck_assert_int_eq(llm_adamw_step(&nodecay, &ps, LLM_GRAD_UNSCALED, 1e-323, &err), LLM_OK);
    llm_adamw_free(&nodecay);
    teardown(&ps, &opt);
}
END_TEST

/* The clip multiplier of a list w = {a, b}, c = {d} for max_norm. */
static void clip3(double a, double b, double d, double max_norm, double *norm,
                  llm_grad_multiplier *mu)
{
    static const double zero[2] = {0.0, 0.0};
    const double gw[2] = {a, b}, gc[1] = {d};
    llm_params ps;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    add(&ps, "w", 2, zero, gw, 1);
    add(&ps, "c", 1, zero, gc, 0);
    ck_assert_int_eq(llm_grad_clip_multiplier(&ps, max_norm, norm, mu, NULL), LLM_OK);
    /* the raw gradients are not modified */
    ck_assert(ps.items[0].grad.data[0] == a && ps.items[0].grad.data[1] == b);
    ck_assert(ps.items[1].grad.data[0] == d);
    llm_params_free(&ps);
}

START_TEST(clip_multiplier_cases)
{
    llm_grad_multiplier mu;
    double norm;
    clip3(0.0, 0.3, -0.4, 1.0, &norm, &mu);                 /* within: no clip */
    CLOSE(norm, 0.5);
    ck_assert(mu.divisor == 1.0 && mu.factor == 1.0);
    clip3(0.0, 3.0, -4.0, 1.0, &norm, &mu);                 /* clipped */
    ck_assert(norm == 5.0);
    ck_assert(mu.divisor == 1.0 && mu.factor == (1.0 / 4.0) / 1.25);
    clip3(3.0, 0.0, 4.0, 5.0, &norm, &mu);                  /* exactly at the limit */
    ck_assert(norm == 5.0 && mu.divisor == 1.0 && mu.factor == 1.0);
    clip3(0.0, 0.0, 0.0, 1.0, &norm, &mu);                  /* zero gradients */
    ck_assert(norm == 0.0 && mu.divisor == 1.0 && mu.factor == 1.0);
    clip3(-0.0, 0.0, -0.0, 1e-300, &norm, &mu);
    ck_assert(norm == 0.0 && mu.divisor == 1.0 && mu.factor == 1.0);
    clip3(3e-200, 0.0, 4e-200, 1.0, &norm, &mu);            /* squares would underflow */
    CLOSE(norm / 1e-200, 5.0);
    ck_assert(mu.factor == 1.0);
    clip3(3e-200, 0.0, 4e-200, 1e-201, &norm, &mu);
    ck_assert(mu.divisor == 1.0);
    CLOSE(mu.factor * 50.0, 1.0);
}
END_TEST

START_TEST(huge_gradients_do_not_overflow_the_norm)
{
    llm_grad_multiplier mu;
    double norm;
    clip3(0.0, 3e200, -4e200, 1.0, &norm, &mu);             /* squares would overflow */
    CLOSE(norm / 1e200, 5.0);
    ck_assert(mu.divisor == 1.0);
    CLOSE(3e200 * mu.factor, 0.6);
    CLOSE(4e200 * mu.factor, 0.8);
    clip3(1.5e308, 1.5e308, 0.0, 1.0, &norm, &mu);          /* the norm itself overflows */
    ck_assert(isinf(norm) && norm > 0.0);
    ck_assert(mu.divisor == 1.0 && mu.factor > 0.0 && isfinite(mu.factor));
    ck_assert(fabs(1.5e308 * mu.factor - sqrt(0.5)) < 1e-6);
}
END_TEST

START_TEST(the_fallback_divides_first_when_the_factor_underflows)
{
    llm_grad_multiplier mu;
    double norm, e1, e2;
    ck_assert((1e-300 / 4e100) / 1.25 == 0.0);              /* the ordinary factor is 0 */
    clip3(0.0, 3e100, -4e100, 1e-300, &norm, &mu);
    CLOSE(norm / 1e100, 5.0);
    ck_assert(mu.divisor == 4e100);
    ck_assert(mu.factor == 1e-300 / 1.25);
    e1 = (3e100 / mu.divisor) * mu.factor;
    e2 = (-4e100 / mu.divisor) * mu.factor;
    CLOSE(e1 / 1e-300, 0.6);
    CLOSE(e2 / 1e-300, -0.8);
    /* a step with the fallback multiplier is accepted and moves the weight */
    {
        static const double w[2] = {1.0, 1.0}, g[2] = {3e100, -4e100};
        llm_params ps;
        llm_adamw opt;
        llm_adamw_terms t;
        ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
        add(&ps, "w", 2, w, g, 0);
        ck_assert_int_eq(llm_adamw_init(&opt, &ps, &fixture_config, NULL), LLM_OK);
        ck_assert_int_eq(llm_adamw_coordinate(&opt, mu, 0.1, 0, 1.0, 3e100, 0.0, 0.0, &t,
                                              NULL), LLM_OK);
        ck_assert(t.g == e1);
        ck_assert_int_eq(llm_adamw_step(&opt, &ps, mu, 0.1, NULL), LLM_OK);
        ck_assert(ps.items[0].value.data[0] == t.theta);
        ck_assert(isfinite(opt.moments[0].v.data[1]) && opt.moments[0].m.data[1] < 0.0);
        teardown(&ps, &opt);
    }
}
END_TEST

START_TEST(the_norm_walk_rescales_and_skips_zeros)
{
    double scale = 0.0, ss = 0.0;
    ck_assert_int_eq(llm_norm_accumulate(&scale, &ss, 0.0, NULL), LLM_OK);
    ck_assert(scale == 0.0 && ss == 0.0);
    ck_assert_int_eq(llm_norm_accumulate(&scale, &ss, 3.0, NULL), LLM_OK);
    ck_assert(scale == 3.0 && ss == 1.0);
    ck_assert_int_eq(llm_norm_accumulate(&scale, &ss, -4.0, NULL), LLM_OK);
    ck_assert(scale == 4.0 && ss == 1.5625);
    ck_assert_int_eq(llm_norm_accumulate(&scale, &ss, 2.0, NULL), LLM_OK);
    ck_assert(scale == 4.0 && ss == 1.8125);
    ck_assert_int_eq(llm_norm_accumulate(&scale, &ss, -0.0, NULL), LLM_OK);
    ck_assert(scale == 4.0 && ss == 1.8125);
}
END_TEST

START_TEST(a_multiplier_equals_scaling_the_gradients)
{
    static const double w[2] = {1.0, -2.0}, g[2] = {0.2, -0.4};
    const llm_grad_multiplier mu = {1.0, 0.3};
    double scaled[2];
    llm_params a, b;
    llm_adamw oa, ob;
    unsigned char sa[256], sb[256];
    size_t na, nb, step;
    scaled[0] = g[0] * mu.factor;
    scaled[1] = g[1] * mu.factor;
    ck_assert_int_eq(llm_params_init(&a, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_init(&b, NULL), LLM_OK);
    add(&a, "w", 2, w, g, 1);
    add(&b, "w", 2, w, scaled, 1);
    ck_assert_int_eq(llm_adamw_init(&oa, &a, &fixture_config, NULL), LLM_OK);
    ck_assert_int_eq(llm_adamw_init(&ob, &b, &fixture_config, NULL), LLM_OK);
    for (step = 0; step < 3; step++) {
        ck_assert_int_eq(llm_adamw_step(&oa, &a, mu, 0.1, NULL), LLM_OK);
        ck_assert_int_eq(llm_adamw_step(&ob, &b, LLM_GRAD_UNSCALED, 0.1, NULL), LLM_OK);
    }
    na = snapshot(&a, &oa, sa);
    nb = snapshot(&b, &ob, sb);
    ck_assert_uint_eq(na, nb);
    ck_assert_int_eq(memcmp(sa, sb, na), 0);
    ck_assert(a.items[0].grad.data[0] == g[0]);     /* raw gradient kept */
    teardown(&a, &oa);
    teardown(&b, &ob);
}
END_TEST

START_TEST(init_builds_named_zero_moments_and_free_is_safe)
{
    llm_params ps, empty;
    llm_adamw opt;
    size_t index = 99;
    fixture(&ps, &opt);
    ck_assert_uint_eq(opt.count, 2);
    ck_assert_str_eq(opt.moments[0].name, "w");
    ck_assert_str_eq(opt.moments[1].name, "norm.gain");
    assert_shape(&opt.moments[0].m, 1, (const size_t[]){2});
    ck_assert_uint_eq(opt.moments[1].v.shape[0], 1);
    ck_assert(opt.moments[0].m.data[1] == 0.0 && opt.moments[0].v.data[0] == 0.0);
    ck_assert(opt.config.beta1 == 0.5 && opt.config.weight_decay == 0.1);
    ck_assert_int_eq(llm_adamw_find(&opt, "norm.gain", &index, NULL), LLM_OK);
    ck_assert_uint_eq(index, 1);
    ck_assert_int_eq(llm_adamw_find(&opt, "w", &index, NULL), LLM_OK);
    ck_assert_uint_eq(index, 0);
    teardown(&ps, &opt);
    ck_assert(opt.moments == NULL && opt.count == 0);
    llm_adamw_free(&opt);                 /* twice */
    llm_adamw_free(NULL);
    /* an empty list gives an optimiser that steps over nothing */
    ck_assert_int_eq(llm_params_init(&empty, NULL), LLM_OK);
    ck_assert_int_eq(llm_adamw_init(&opt, &empty, &fixture_config, NULL), LLM_OK);
    ck_assert_int_eq(llm_adamw_step(&opt, &empty, LLM_GRAD_UNSCALED, 0.1, NULL), LLM_OK);
    ck_assert_uint_eq(opt.steps, 1);
    teardown(&empty, &opt);
}
END_TEST

START_TEST(zero_grad_clears_gradients_only)
{
    llm_params ps;
    llm_adamw opt;
    llm_error err;
    uint64_t bits;
    fixture(&ps, &opt);
    ps.items[1].grad.data[0] = -0.0;
    ck_assert_int_eq(llm_params_zero_grad(&ps, &err), LLM_OK);
    ck_assert(ps.items[0].grad.data[0] == 0.0 && ps.items[0].grad.data[1] == 0.0);
    memcpy(&bits, &ps.items[1].grad.data[0], sizeof bits);
    ck_assert(bits == 0);                              /* +0.0, not -0.0 */
    ck_assert(ps.items[0].value.data[0] == 1.0 && ps.items[0].value.data[1] == -2.0);
    REFUSED(llm_params_zero_grad(NULL, &err), LLM_ERR_ARGUMENT, "params.zero_grad");
    teardown(&ps, &opt);
}
END_TEST

START_TEST(gradients_are_read_through_their_strides)
{
    static const double w[6] = {1, 2, 3, 4, 5, 6};
    static const double g[6] = {0.1, -0.2, 0.3, -0.4, 0.5, -0.6};
    /* the same gradient stored transposed: base[j][i] = g[i][j] */
    static const double gt[6] = {0.1, -0.4, -0.2, 0.5, 0.3, -0.6};
    const size_t shape[2] = {2, 3}, tshape[2] = {3, 2};
    llm_params a, b;
    llm_adamw oa, ob;
    llm_tensor base;
    double norm_a, norm_b;
    llm_grad_multiplier mu_a, mu_b;
    ck_assert_int_eq(llm_params_init(&a, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_init(&b, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&a, "w", 2, shape, 0.0, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&b, "w", 2, shape, 0.0, 1, NULL), LLM_OK);
    memcpy(a.items[0].value.data, w, sizeof w);
    memcpy(b.items[0].value.data, w, sizeof w);
    memcpy(a.items[0].grad.data, g, sizeof g);
    ck_assert_int_eq(llm_tensor_from(&base, 2, tshape, gt, 6, NULL), LLM_OK);
    llm_tensor_free(&b.items[0].grad);
    ck_assert_int_eq(llm_tensor_transpose(&b.items[0].grad, &base, 0, 1, NULL), LLM_OK);
    ck_assert(!llm_tensor_is_contiguous(&b.items[0].grad));
    ck_assert_int_eq(llm_adamw_init(&oa, &a, &fixture_config, NULL), LLM_OK);
    ck_assert_int_eq(llm_adamw_init(&ob, &b, &fixture_config, NULL), LLM_OK);
    ck_assert_int_eq(llm_grad_clip_multiplier(&a, 0.5, &norm_a, &mu_a, NULL), LLM_OK);
    ck_assert_int_eq(llm_grad_clip_multiplier(&b, 0.5, &norm_b, &mu_b, NULL), LLM_OK);
    ck_assert(norm_a == norm_b && mu_a.factor == mu_b.factor);
    ck_assert_int_eq(llm_adamw_step(&oa, &a, mu_a, 0.1, NULL), LLM_OK);
    ck_assert_int_eq(llm_adamw_step(&ob, &b, mu_b, 0.1, NULL), LLM_OK);
    ck_assert_int_eq(memcmp(a.items[0].value.data, b.items[0].value.data, sizeof w), 0);
    ck_assert_int_eq(memcmp(oa.moments[0].v.data, ob.moments[0].v.data, sizeof w), 0);
    ck_assert_int_eq(llm_params_zero_grad(&b, NULL), LLM_OK);
    ck_assert(base.data[1] == 0.0 && base.data[5] == 0.0);
    teardown(&a, &oa);
    teardown(&b, &ob);
    llm_tensor_free(&base);
}
END_TEST

START_TEST(init_refusals_leave_the_output_untouched)
{
    llm_params ps;
    llm_adamw opt, pattern;
    llm_error err;
    llm_adamw_config bad;
    const double not_in_0_1[4] = {1.0, -0.1, NAN, INFINITY};
    const double not_positive[4] = {0.0, -1.0, NAN, INFINITY};
    size_t i;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    memset(&pattern, 0xab, sizeof pattern);
    memset(&opt, 0xab, sizeof opt);
    REFUSED(llm_adamw_init(NULL, &ps, &fixture_config, &err), LLM_ERR_ARGUMENT, "adamw.init");
    REFUSED(llm_adamw_init(&opt, NULL, &fixture_config, &err), LLM_ERR_ARGUMENT, "adamw.init");
    REFUSED(llm_adamw_init(&opt, &ps, NULL, &err), LLM_ERR_ARGUMENT, "adamw.init");
    for (i = 0; i < 4; i++) {
        bad = fixture_config;
        bad.beta1 = not_in_0_1[i];
        REFUSED(llm_adamw_init(&opt, &ps, &bad, &err), LLM_ERR_ARGUMENT, "adamw.init");
        ck_assert(strstr(err.message, "beta1") != NULL);
        bad = fixture_config;
        bad.beta2 = not_in_0_1[i];
        REFUSED(llm_adamw_init(&opt, &ps, &bad, &err), LLM_ERR_ARGUMENT, "adamw.init");
        ck_assert(strstr(err.message, "beta2") != NULL);
        bad = fixture_config;
        bad.eps = not_positive[i];
        REFUSED(llm_adamw_init(&opt, &ps, &bad, &err), LLM_ERR_ARGUMENT, "adamw.init");
        ck_assert(strstr(err.message, "eps") != NULL);
        bad = fixture_config;
        bad.weight_decay = i == 0 ? -0.1 : not_positive[i];
        REFUSED(llm_adamw_init(&opt, &ps, &bad, &err), LLM_ERR_ARGUMENT, "adamw.init");
        ck_assert(strstr(err.message, "weight decay") != NULL);
    }
    ck_assert_int_eq(memcmp(&opt, &pattern, sizeof opt), 0);
    /* the edges of the domains are accepted */
    bad.beta1 = 0.0;
    bad.beta2 = 0.0;
    bad.eps = DBL_MIN;
    bad.weight_decay = 0.0;
    ck_assert_int_eq(llm_adamw_init(&opt, &ps, &bad, &err), LLM_OK);
    llm_adamw_free(&opt);
    llm_params_free(&ps);
}
END_TEST

START_TEST(step_argument_refusals)
{
    llm_params ps;
    llm_adamw opt;
    llm_error err;
    const double bad_lr[4] = {0.0, -0.1, NAN, INFINITY};
    const double bad_part[4] = {0.0, -1.0, NAN, INFINITY};
    size_t i;
    fixture(&ps, &opt);
    REFUSED(llm_adamw_step(NULL, &ps, LLM_GRAD_UNSCALED, 0.1, &err), LLM_ERR_ARGUMENT,
            "adamw.step");
    REFUSED(llm_adamw_step(&opt, NULL, LLM_GRAD_UNSCALED, 0.1, &err), LLM_ERR_ARGUMENT,
            "adamw.step");
    for (i = 0; i < 4; i++) {
        llm_grad_multiplier d = {bad_part[i], 1.0}, f = {1.0, bad_part[i]};
        REFUSED(llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, bad_lr[i], &err),
                LLM_ERR_ARGUMENT, "adamw.step");
        ck_assert(strstr(err.message, "learning rate") != NULL);
        REFUSED(llm_adamw_step(&opt, &ps, d, 0.1, &err), LLM_ERR_ARGUMENT, "adamw.step");
        ck_assert(strstr(err.message, "multiplier") != NULL);
        REFUSED(llm_adamw_step(&opt, &ps, f, 0.1, &err), LLM_ERR_ARGUMENT, "adamw.step");
    }
    ck_assert_uint_eq(opt.steps, 0);
    REFUSED(llm_adamw_coordinate(NULL, LLM_GRAD_UNSCALED, 0.1, 1, 1.0, 0.1, 0.0, 0.0, NULL,
                                 &err), LLM_ERR_ARGUMENT, "adamw.coordinate");
    {
        llm_adamw_terms t;
        REFUSED(llm_adamw_coordinate(NULL, LLM_GRAD_UNSCALED, 0.1, 1, 1.0, 0.1, 0.0, 0.0, &t,
                                     &err), LLM_ERR_ARGUMENT, "adamw.coordinate");
        REFUSED(llm_adamw_coordinate(&opt, LLM_GRAD_UNSCALED, 0.1, 1, 1.0, 0.1, 0.0, 0.0,
                                     NULL, &err), LLM_ERR_ARGUMENT, "adamw.coordinate");
    }
    teardown(&ps, &opt);
}
END_TEST

/* A list with the given names and sizes, values 1, gradients 0. */
static void make_list(llm_params *ps, size_t n, const char *const *names,
                      const size_t *sizes)
{
    size_t i;
    ck_assert_int_eq(llm_params_init(ps, NULL), LLM_OK);
    for (i = 0; i < n; i++)
        ck_assert_int_eq(llm_params_add_const(ps, names[i], 1, &sizes[i], 1.0, 1, NULL),
                         LLM_OK);
}

START_TEST(mismatched_lists_are_refused_by_name_or_shape)
{
    static const char *const renamed[2] = {"w", "gain"}, *const swapped[2] = {"norm.gain", "w"};
    static const char *const right[3] = {"w", "norm.gain", "extra"};
    static const size_t sizes[3] = {2, 1, 4}, wide[2] = {3, 1}, one_two[2] = {1, 2};
    llm_params ps, other;
    llm_adamw opt;
    llm_error err;
    fixture(&ps, &opt);
    make_list(&other, 2, renamed, sizes);
    REFUSED(llm_adamw_step(&opt, &other, LLM_GRAD_UNSCALED, 0.1, &err), LLM_ERR_NAME,
            "adamw.step");
    ck_assert(strstr(err.message, "\"gain\"") != NULL);
    llm_params_free(&other);
    make_list(&other, 2, swapped, one_two);
    REFUSED(llm_adamw_step(&opt, &other, LLM_GRAD_UNSCALED, 0.1, &err), LLM_ERR_NAME,
            "adamw.step");
    llm_params_free(&other);
    make_list(&other, 1, right, sizes);                          /* one missing */
    REFUSED(llm_adamw_step(&opt, &other, LLM_GRAD_UNSCALED, 0.1, &err), LLM_ERR_NAME,
            "adamw.step");
    ck_assert(strstr(err.message, "\"norm.gain\" is missing") != NULL);
    llm_params_free(&other);
    make_list(&other, 3, right, sizes);                          /* one unknown */
    REFUSED(llm_adamw_step(&opt, &other, LLM_GRAD_UNSCALED, 0.1, &err), LLM_ERR_NAME,
            "adamw.step");
    ck_assert(strstr(err.message, "\"extra\" is unknown") != NULL);
    llm_params_free(&other);
    make_list(&other, 2, right, wide);                           /* a wider value */
    REFUSED(llm_adamw_step(&opt, &other, LLM_GRAD_UNSCALED, 0.1, &err), LLM_ERR_SHAPE,
            "adamw.step");
    ck_assert(strstr(err.message, "[3]") != NULL && strstr(err.message, "[2]") != NULL);
    llm_params_free(&other);
    /* a gradient whose shape differs from its value's */
    make_list(&other, 2, right, sizes);
    llm_tensor_free(&other.items[0].grad);
    ck_assert_int_eq(llm_tensor_zeros(&other.items[0].grad, 1, &sizes[2], NULL), LLM_OK);
    REFUSED(llm_adamw_step(&opt, &other, LLM_GRAD_UNSCALED, 0.1, &err), LLM_ERR_SHAPE,
            "adamw.step");
    llm_params_free(&other);
    /* a rank that differs */
    {
        const size_t two_by_one[2] = {2, 1};
        ck_assert_int_eq(llm_params_init(&other, NULL), LLM_OK);
        ck_assert_int_eq(llm_params_add_const(&other, "w", 2, two_by_one, 1.0, 1, NULL),
                         LLM_OK);
        ck_assert_int_eq(llm_params_add_const(&other, "norm.gain", 1, &sizes[1], 1.0, 0,
                                              NULL), LLM_OK);
        REFUSED(llm_adamw_step(&opt, &other, LLM_GRAD_UNSCALED, 0.1, &err), LLM_ERR_SHAPE,
                "adamw.step");
        llm_params_free(&other);
    }
    ck_assert_uint_eq(opt.steps, 0);
    teardown(&ps, &opt);
}
END_TEST

START_TEST(a_failed_step_changes_no_parameter_and_no_moment)
{
    llm_params ps;
    llm_adamw opt;
    llm_error err;
    unsigned char before[512], after[512];
    size_t n;
    const double bad[4] = {NAN, INFINITY, -INFINITY, 1e200};
    size_t i;
    fixture(&ps, &opt);
    ck_assert_int_eq(llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 0.1, NULL), LLM_OK);
    n = snapshot(&ps, &opt, before);
    for (i = 0; i < 4; i++) {
        /* the bad coordinate is the last one walked: a step that wrote as it
           went would already have moved w */
        ps.items[1].grad.data[0] = bad[i];
        REFUSED(llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 0.1, &err), LLM_ERR_NONFINITE,
                "adamw.step");
        ck_assert(strstr(err.message, "norm.gain") != NULL);
        ck_assert_uint_eq(snapshot(&ps, &opt, after), n);
        ck_assert_int_eq(memcmp(before, after, n), 0);
        ck_assert(ps.items[1].grad.data[0] == bad[i] || isnan(bad[i]));
    }
    /* a multiplier that overflows a finite gradient */
    {
        const llm_grad_multiplier big = {1.0, 1e300};
        ps.items[1].grad.data[0] = 1e10;
        REFUSED(llm_adamw_step(&opt, &ps, big, 0.1, &err), LLM_ERR_NONFINITE, "adamw.step");
        ck_assert_uint_eq(snapshot(&ps, &opt, after), n);
        ck_assert_int_eq(memcmp(before, after, n), 0);
    }
    /* a value that is not finite */
    ps.items[1].grad.data[0] = 0.5;
    ps.items[1].value.data[0] = NAN;
    n = snapshot(&ps, &opt, before);
    REFUSED(llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 0.1, &err), LLM_ERR_NONFINITE,
            "adamw.step");
    ck_assert_uint_eq(snapshot(&ps, &opt, after), n);
    ck_assert_int_eq(memcmp(before, after, n), 0);
    /* refusals before the sweep change nothing either */
    ps.items[1].value.data[0] = 1.0;
    n = snapshot(&ps, &opt, before);
    REFUSED(llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 10.0, &err), LLM_ERR_ARGUMENT,
            "adamw.step");
    snapshot(&ps, &opt, after);
    ck_assert_int_eq(memcmp(before, after, n), 0);
    ck_assert_uint_eq(opt.steps, 1);
    /* and the optimiser still works */
    ck_assert_int_eq(llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 0.1, NULL), LLM_OK);
    ck_assert_uint_eq(opt.steps, 2);
    teardown(&ps, &opt);
}
END_TEST

START_TEST(clip_refusals_leave_outputs_untouched)
{
    llm_params ps;
    llm_adamw opt;
    llm_error err;
    double norm = -1.0;
    llm_grad_multiplier mu = {-1.0, -2.0};
    const double bad_c[4] = {0.0, -1.0, NAN, INFINITY};
    double scale = 2.0, ss = 3.0;
    size_t i;
    fixture(&ps, &opt);
    REFUSED(llm_grad_clip_multiplier(NULL, 1.0, &norm, &mu, &err), LLM_ERR_ARGUMENT,
            "optim.grad_clip_multiplier");
    REFUSED(llm_grad_clip_multiplier(&ps, 1.0, NULL, &mu, &err), LLM_ERR_ARGUMENT,
            "optim.grad_clip_multiplier");
    REFUSED(llm_grad_clip_multiplier(&ps, 1.0, &norm, NULL, &err), LLM_ERR_ARGUMENT,
            "optim.grad_clip_multiplier");
    for (i = 0; i < 4; i++)
        REFUSED(llm_grad_clip_multiplier(&ps, bad_c[i], &norm, &mu, &err), LLM_ERR_ARGUMENT,
                "optim.grad_clip_multiplier");
    ps.items[0].grad.data[1] = INFINITY;
    REFUSED(llm_grad_clip_multiplier(&ps, 1.0, &norm, &mu, &err), LLM_ERR_NONFINITE,
            "optim.grad_clip_multiplier");
    ck_assert(strstr(err.message, "\"w\" at coordinate 1") != NULL);
    ps.items[0].grad.data[1] = NAN;
    REFUSED(llm_grad_clip_multiplier(&ps, 1.0, &norm, &mu, &err), LLM_ERR_NONFINITE,
            "optim.grad_clip_multiplier");
    ck_assert(norm == -1.0 && mu.divisor == -1.0 && mu.factor == -2.0);
    REFUSED(llm_norm_accumulate(NULL, &ss, 1.0, &err), LLM_ERR_ARGUMENT, "optim.norm_accumulate");
    REFUSED(llm_norm_accumulate(&scale, NULL, 1.0, &err), LLM_ERR_ARGUMENT,
            "optim.norm_accumulate");
    REFUSED(llm_norm_accumulate(&scale, &ss, NAN, &err), LLM_ERR_NONFINITE, "optim.norm_accumulate");
    REFUSED(llm_norm_accumulate(&scale, &ss, -INFINITY, &err), LLM_ERR_NONFINITE,
            "optim.norm_accumulate");
    ck_assert(scale == 2.0 && ss == 3.0);
    teardown(&ps, &opt);
}
END_TEST

START_TEST(find_refusals)
{
    llm_params ps;
    llm_adamw opt;
    llm_error err;
    size_t index = 77;
    fixture(&ps, &opt);
    REFUSED(llm_adamw_find(NULL, "w", &index, &err), LLM_ERR_ARGUMENT, "adamw.find");
    REFUSED(llm_adamw_find(&opt, NULL, &index, &err), LLM_ERR_ARGUMENT, "adamw.find");
    REFUSED(llm_adamw_find(&opt, "w", NULL, &err), LLM_ERR_ARGUMENT, "adamw.find");
    REFUSED(llm_adamw_find(&opt, "gain", &index, &err), LLM_ERR_NAME, "adamw.find");
    ck_assert_str_eq(err.message, "no moments are kept for a parameter named \"gain\"");
    ck_assert_uint_eq(index, 77);
    teardown(&ps, &opt);
}
END_TEST

/* 200 steps of clear, gradient of (x^2 + 4y^2)/2, clip to 1, step. */
static void train(llm_params *ps, llm_adamw *opt, size_t *clipped)
{
    static const double start[2] = {1.0, 1.0};
    size_t step;
    ck_assert_int_eq(llm_params_init(ps, NULL), LLM_OK);
    add(ps, "p", 2, start, NULL, 1);
    ck_assert_int_eq(llm_adamw_init(opt, ps, &fixture_config, NULL), LLM_OK);
    *clipped = 0;
    for (step = 0; step < 200; step++) {
        double *p = ps->items[0].value.data, *g = ps->items[0].grad.data, norm;
        llm_grad_multiplier mu;
        ck_assert_int_eq(llm_params_zero_grad(ps, NULL), LLM_OK);
        g[0] += p[0];
        g[1] += 4.0 * p[1];
        ck_assert_int_eq(llm_grad_clip_multiplier(ps, 1.0, &norm, &mu, NULL), LLM_OK);
        *clipped += mu.factor != 1.0;
        ck_assert_int_eq(llm_adamw_step(opt, ps, mu, 0.1, NULL), LLM_OK);
    }
}

START_TEST(a_200_step_replay_is_bit_identical_and_converges)
{
    llm_params a, b;
    llm_adamw oa, ob;
    unsigned char sa[256], sb[256];
    size_t ca, cb, na, nb;
    double x, y;
    train(&a, &oa, &ca);
    train(&b, &ob, &cb);
    na = snapshot(&a, &oa, sa);
    nb = snapshot(&b, &ob, sb);
    ck_assert_uint_eq(na, nb);
    ck_assert_int_eq(memcmp(sa, sb, na), 0);
    ck_assert_uint_eq(ca, cb);
    ck_assert(ca > 0 && ca < 200);                 /* clipping only early on */
    ck_assert_uint_eq(oa.steps, 200);
    x = a.items[0].value.data[0];
    y = a.items[0].value.data[1];
    ck_assert(0.5 * (x * x + 4.0 * y * y) < 1e-20);
    teardown(&a, &oa);
    teardown(&b, &ob);
}
END_TEST

START_TEST(a_frozen_parameter_gets_no_gradient_no_norm_and_no_update)
{
    static const double xs[2] = {1.0, -2.0};
    const size_t s1[1] = {2}, s2[1] = {2};
    llm_params ps;
    llm_adamw opt;
    llm_tape tape;
    llm_tensor x;
    llm_var vx, w, b, prod, y, s;
    llm_grad_multiplier mu;
    llm_error err;
    double norm, before[2];
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&ps, "w", 1, s1, 0.5, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_params_add_const(&ps, "b", 1, s2, 3.0, 1, NULL), LLM_OK);
    ck_assert_int_eq(ps.items[0].trainable, 1);           /* added trainable */
    ck_assert_int_eq(llm_params_set_trainable(&ps, 1, 0, &err), LLM_OK);
    ck_assert_int_eq(ps.items[1].trainable, 0);
    ck_assert_int_eq(llm_params_set_trainable(NULL, 0, 0, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(err.stage, "params.set_trainable");
    ck_assert_int_eq(llm_params_set_trainable(&ps, 2, 1, &err), LLM_ERR_NAME);
    ck_assert_int_eq(llm_params_set_trainable(&ps, 1, 0, NULL), LLM_OK);
    /* y = sum(w * x + b): the frozen b enters the tape with no accumulator */
    ck_assert_int_eq(llm_tensor_from(&x, 1, s1, xs, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&tape, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_constant(&tape, &x, &vx, NULL), LLM_OK);
    ck_assert_int_eq(llm_param_leaf(&tape, &ps, 0, &w, NULL), LLM_OK);
    ck_assert_int_eq(llm_param_leaf(&tape, &ps, 1, &b, NULL), LLM_OK);
    {
        llm_node_info info;
        llm_var again;
        ck_assert_int_eq(llm_tape_node(&tape, b.id, &info, NULL), LLM_OK);
        ck_assert_ptr_null(info.grad);
        ck_assert_int_eq(llm_param_leaf(&tape, &ps, 1, &again, NULL), LLM_OK);
        ck_assert_uint_eq(again.id, b.id);                 /* found, not recorded again */
    }
    ck_assert_int_eq(llm_tape_mul(&tape, w, vx, &prod, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_add(&tape, prod, b, &y, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_sum_all(&tape, y, &s, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&tape, s, NULL, 0, NULL), LLM_OK);
    ck_assert(ps.items[0].grad.data[0] == 1.0 && ps.items[0].grad.data[1] == -2.0);
    ck_assert(ps.items[1].grad.data[0] == 0.0 && ps.items[1].grad.data[1] == 0.0);
    /* a frozen gradient, even a huge one, does not enter the norm */
    ps.items[1].grad.data[0] = 1e300;
    ck_assert_int_eq(llm_grad_clip_multiplier(&ps, 1.0, &norm, &mu, NULL), LLM_OK);
    ck_assert(norm == sqrt(5.0));
    /* and the step moves w, not b, nor b's moments */
    ck_assert_int_eq(llm_adamw_init(&opt, &ps, &fixture_config, NULL), LLM_OK);
    memcpy(before, ps.items[0].value.data, sizeof before);
    ck_assert_int_eq(llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 0.1, NULL), LLM_OK);
    ck_assert(ps.items[0].value.data[0] != before[0] && ps.items[0].value.data[1] != before[1]);
    ck_assert(ps.items[1].value.data[0] == 3.0 && ps.items[1].value.data[1] == 3.0);
    ck_assert(opt.moments[1].m.data[0] == 0.0 && opt.moments[1].v.data[0] == 0.0);
    /* thawed, it trains again, and a NaN in it is refused again */
    ck_assert_int_eq(llm_params_set_trainable(&ps, 1, 5, NULL), LLM_OK);
    ck_assert_int_eq(ps.items[1].trainable, 1);
    ps.items[1].grad.data[0] = NAN;
    ck_assert_int_eq(llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 0.1, &err), LLM_ERR_NONFINITE);
    llm_adamw_free(&opt);
    llm_tape_free(&tape);
    llm_tensor_free(&x);
    llm_params_free(&ps);
}
END_TEST

Suite *ch22_adamw_suite(void)
{
    const TTest *tests[] = {
        fixture_step_matches_the_rust_course,
        a_frozen_parameter_gets_no_gradient_no_norm_and_no_update,
        zero_gradient_decays_3_to_2_97_and_leaves_a_gain_alone,
        bias_correction_at_steps_1_to_3,
        groups_decay_only_the_decay_group,
        quadratic_trajectory_endpoints,
        decay_product_domain,
        clip_multiplier_cases,
        huge_gradients_do_not_overflow_the_norm,
        the_fallback_divides_first_when_the_factor_underflows,
        the_norm_walk_rescales_and_skips_zeros,
        a_multiplier_equals_scaling_the_gradients,
        init_builds_named_zero_moments_and_free_is_safe,
        zero_grad_clears_gradients_only,
        gradients_are_read_through_their_strides,
        init_refusals_leave_the_output_untouched,
        step_argument_refusals,
        mismatched_lists_are_refused_by_name_or_shape,
        a_failed_step_changes_no_parameter_and_no_moment,
        clip_refusals_leave_outputs_untouched,
        find_refusals,
        a_200_step_replay_is_bit_identical_and_converges,
    };
    return suite_of("ch22 adamw", tcase_of("adamw", 0, tests, COUNT(tests)));
}
