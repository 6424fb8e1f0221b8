/* ch22-adamw -- AdamW: moments, bias correction, decoupled decay, clipping. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/nn.h"
#include "llm/optim.h"

/* beta1, beta2, eps, weight decay of the predict-first fixture. */
static const llm_adamw_config fixture_config = {0.5, 0.5, 0.1, 0.1};

/* Appends a rank-1 parameter holding values[0..n-1], with a zero gradient. */
static llm_status add_vector(llm_params *ps, const char *name, size_t n,
                             const double *values, int decay, llm_error *err)
{
    const size_t shape[1] = {n};
    llm_status st = llm_params_add_const(ps, name, 1, shape, 0.0, decay, err);
    if (st == LLM_OK)
        memcpy(ps->items[ps->count - 1].value.data, values, n * sizeof values[0]);
    return st;
}

/* Prints "key=[a, b]" with six decimals and keeps the list as trace value key. */
static void show_list(llm_trace *tr, const char *key, const double *x, size_t n)
{
    char buf[256];
    llm_fmt_list(buf, sizeof buf, x, n, 6);
    printf("%s=%s\n", key, buf);
    llm_trace_value(tr, key, buf);
}

/* Prints "key=x" with six decimals and keeps x as trace value key. */
static void show_value(llm_trace *tr, const char *key, double x)
{
    char buf[64];
    llm_fmt(buf, sizeof buf, x, 6);
    printf("%s=%s\n", key, buf);
    llm_trace_value(tr, key, buf);
}

/* x with six significant digits: "5", "0.2", "5e+200", "inf". */
static char *sig6(char *buf, size_t size, double x)
{
    snprintf(buf, size, "%.6g", x);
    return buf;
}
static int fixture_step(llm_trace *tr)
{
    static const double theta[2] = {1.0, -2.0}, grad[2] = {0.2, -0.4};
    const double lr = 0.1;
    llm_params ps;
    llm_adamw opt;
    llm_adamw_terms t[2];
    llm_error err;
    size_t j;
    int ok;
    memset(&ps, 0, sizeof ps);
    memset(&opt, 0, sizeof opt);
    ok = llm_demo_ok("ch22", llm_params_init(&ps, &err), &err)
         && llm_demo_ok("ch22", add_vector(&ps, "w", 2, theta, 1, &err), &err)
         && llm_demo_ok("ch22", llm_adamw_init(&opt, &ps, &fixture_config, &err), &err);
    if (ok)
        memcpy(ps.items[0].grad.data, grad, sizeof grad);
    for (j = 0; ok && j < 2; j++)
        ok = llm_demo_ok("ch22", llm_adamw_coordinate(&opt, LLM_GRAD_UNSCALED, lr, 1, theta[j],
                                                      grad[j], 0.0, 0.0, &t[j], &err), &err);
    ok = ok && llm_demo_ok("ch22",
                           llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, lr, &err), &err);
    if (ok) {
        static const char *const key[7] = {"m", "v", "m_hat", "v_hat", "adaptive",
                                           "decay", "theta"};
        static const char *const formula[7] = {
            "$m_1 = (1-\\beta_1)\\,g_1$", "$v_1 = (1-\\beta_2)\\,g_1^2$",
            "$\\hat m_1 = m_1/(1-\\beta_1)$", "$\\hat v_1 = v_1/(1-\\beta_2)$",
            "$s_1 = \\eta\\,\\hat m_1/(\\sqrt{\\hat v_1}+\\varepsilon)$",
            "$d_1 = \\eta\\lambda\\,\\theta_0$", "$\\theta_1 = \\theta_0 - s_1 - d_1$"};
        const double q[7][2] = {{t[0].m, t[1].m}, {t[0].v, t[1].v},
                                {t[0].m_hat, t[1].m_hat}, {t[0].v_hat, t[1].v_hat},
                                {t[0].adaptive, t[1].adaptive}, {t[0].decay, t[1].decay},
                                {t[0].theta, t[1].theta}};
        const llm_adamw_moment *mo = &opt.moments[0];
        char c[2][64];
        size_t r;
        int applied = 1;
        printf("fixture theta=[1, -2] g=[0.2, -0.4] lr=0.1 beta1=0.5 beta2=0.5 eps=0.1 "
               "lambda=0.1\n");
        for (r = 0; r < 7; r++) {
            const char *cells[3] = {formula[r], c[0], c[1]};
            show_list(tr, key[r], q[r], 2);
            llm_fmt(c[0], sizeof c[0], q[r][0], 6);
            llm_fmt(c[1], sizeof c[1], q[r][1], 6);
            llm_trace_row(tr, "fixture", 3, cells);
        }
        llm_trace_value(tr, "step1", llm_fmt(c[0], sizeof c[0], t[0].adaptive, 6));
        for (j = 0; j < 2; j++)           /* the step wrote exactly these terms */
            applied = applied
                      && memcmp(&ps.items[0].value.data[j], &t[j].theta, sizeof(double))
                         == 0
                      && memcmp(&mo->m.data[j], &t[j].m, sizeof(double)) == 0
                      && memcmp(&mo->v.data[j], &t[j].v, sizeof(double)) == 0;
        llm_fmt(c[0], sizeof c[0], opt.p1, 6);
        llm_fmt(c[1], sizeof c[1], opt.p2, 6);
        printf("state steps=%zu p1=%s p2=%s terms_applied=%s\n", opt.steps, c[0], c[1],
               applied ? "exact" : "changed");
        llm_trace_value(tr, "applied", applied ? "exact" : "changed");
        ok = ok && applied;
    }
    llm_adamw_free(&opt);
    llm_params_free(&ps);
    return ok;
}
static int bias_correction(llm_trace *tr)
{
    const size_t one[1] = {1};
    const double g = 0.2, lr = 0.1;
    llm_params ps;
    llm_adamw opt;
    llm_error err;
    size_t step;
    int ok;
    memset(&ps, 0, sizeof ps);
    memset(&opt, 0, sizeof opt);
    ok = llm_demo_ok("ch22", llm_params_init(&ps, &err), &err)
         && llm_demo_ok("ch22", llm_params_add_const(&ps, "u", 1, one, 0.0, 0, &err), &err)
         && llm_demo_ok("ch22", llm_adamw_init(&opt, &ps, &fixture_config, &err), &err);
    for (step = 1; ok && step <= 3; step++) {
        llm_adamw_terms t;
        char c[7][32];
        const char *cells[7] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6]};
        ps.items[0].grad.data[0] = g;
        ok = llm_demo_ok("ch22",
                         llm_adamw_coordinate(&opt, LLM_GRAD_UNSCALED, lr, 0,
                                              ps.items[0].value.data[0], g,
                                              opt.moments[0].m.data[0],
                                              opt.moments[0].v.data[0], &t, &err), &err)
             && llm_demo_ok("ch22",
                            llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, lr, &err), &err);
        if (!ok)
            break;
        ok = opt.moments[0].m.data[0] == t.m && opt.moments[0].v.data[0] == t.v;
        snprintf(c[0], sizeof c[0], "%zu", opt.steps);
        llm_fmt(c[1], sizeof c[1], opt.p1, 6);
        llm_fmt(c[2], sizeof c[2], t.m, 6);
        llm_fmt(c[3], sizeof c[3], t.m_hat, 6);
        llm_fmt(c[4], sizeof c[4], t.v, 6);
        llm_fmt(c[5], sizeof c[5], t.v_hat, 6);
        llm_fmt(c[6], sizeof c[6], t.adaptive, 6);
        printf("bias t=%s beta^t=%s m=%s m_hat=%s v=%s v_hat=%s s=%s\n",
               c[0], c[1], c[2], c[3], c[4], c[5], c[6]);
        llm_trace_row(tr, "bias", 7, cells);
        if (step == 3) {
            llm_trace_value(tr, "bias_m3", c[2]);
            llm_trace_value(tr, "bias_mhat3", c[3]);
        }
    }
    llm_adamw_free(&opt);
    llm_params_free(&ps);
    return ok;
}
static int zero_gradient(llm_trace *tr)
{
    static const char *const name[2] = {"w", "norm.gain"};
    const size_t one[1] = {1};
    llm_params ps;
    llm_adamw opt;
    llm_error err;
    size_t i;
    int ok;
    memset(&ps, 0, sizeof ps);
    memset(&opt, 0, sizeof opt);
    ok = llm_demo_ok("ch22", llm_params_init(&ps, &err), &err)
         && llm_demo_ok("ch22", llm_params_add_const(&ps, name[0], 1, one, 3.0, 1, &err), &err)
         && llm_demo_ok("ch22", llm_params_add_const(&ps, name[1], 1, one, 3.0, 0, &err), &err)
         && llm_demo_ok("ch22", llm_adamw_init(&opt, &ps, &fixture_config, &err), &err)
         && llm_demo_ok("ch22", llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 0.1, &err), &err);
    for (i = 0; ok && i < 2; i++) {
        char c[4][32];
        const char *cells[4] = {c[0], c[1], c[2], c[3]};
        snprintf(c[0], sizeof c[0], "`%s`", name[i]);
        snprintf(c[1], sizeof c[1], "$\\delta = %d$", ps.items[i].decay);
        llm_fmt(c[2], sizeof c[2], 3.0, 6);
        llm_fmt(c[3], sizeof c[3], ps.items[i].value.data[0], 6);
        printf("zero gradient %s decay=%d: 3 -> %s\n", name[i], ps.items[i].decay,
               c[3]);
        llm_trace_row(tr, "groups", 4, cells);
        llm_trace_value(tr, i == 0 ? "zero_decay" : "zero_gain", c[3]);
    }
    ok = ok && ps.items[1].value.data[0] == 3.0;     /* the gain did not move */
    llm_adamw_free(&opt);
    llm_params_free(&ps);
    return ok;
}
/* f(x, y) = (x^2 + 4 y^2) / 2 at p; adds its gradient (x, 4y) into grad. */
static double bowl(const double *p, double *grad)
{
    grad[0] += p[0];
    grad[1] += 4.0 * p[1];
    return 0.5 * (p[0] * p[0] + 4.0 * p[1] * p[1]);
}

static int bowl_race(llm_trace *tr)
{
    static const double start[2] = {1.0, 1.0};
    const double lr = 0.1;
    double sgd[2] = {1.0, 1.0}, f_sgd = 0.0, f_adamw = 0.0;
    llm_params ps;
    llm_adamw opt;
    llm_error err;
    size_t step;
    int ok;
    memset(&ps, 0, sizeof ps);
    memset(&opt, 0, sizeof opt);
    ok = llm_demo_ok("ch22", llm_params_init(&ps, &err), &err)
         && llm_demo_ok("ch22", add_vector(&ps, "p", 2, start, 1, &err), &err)
         && llm_demo_ok("ch22", llm_adamw_init(&opt, &ps, &fixture_config, &err), &err);
    for (step = 0; ok && step <= 4; step++) {
        double *p = ps.items[0].value.data, g[2] = {0.0, 0.0};
        char c[5][32];
        const char *cells[5] = {c[0], c[1], c[2], c[3], c[4]};
        if (step > 0) {
            bowl(sgd, g);                          /* plain gradient descent */
            sgd[0] -= lr * g[0];
            sgd[1] -= lr * g[1];
            ok = llm_demo_ok("ch22", llm_params_zero_grad(&ps, &err), &err);
            bowl(p, ps.items[0].grad.data);        /* AdamW */
            ok = ok && llm_demo_ok("ch22", llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, lr,
                                                          &err), &err);
        }
        snprintf(c[0], sizeof c[0], "%zu", step);
        llm_fmt(c[1], sizeof c[1], sgd[0], 6);
        llm_fmt(c[2], sizeof c[2], sgd[1], 6);
        llm_fmt(c[3], sizeof c[3], p[0], 6);
        llm_fmt(c[4], sizeof c[4], p[1], 6);
        printf("bowl t=%s sgd=[%s, %s] adamw=[%s, %s]\n", c[0], c[1], c[2], c[3],
               c[4]);
        llm_trace_row(tr, "bowl", 5, cells);
    }
    if (ok) {
        double g[2] = {0.0, 0.0};
        show_list(tr, "sgd_end", sgd, 2);
        show_list(tr, "adamw_end", ps.items[0].value.data, 2);
        f_sgd = bowl(sgd, g);
        f_adamw = bowl(ps.items[0].value.data, g);
        show_value(tr, "f_sgd", f_sgd);
        show_value(tr, "f_adamw", f_adamw);
    }
    llm_adamw_free(&opt);
    llm_params_free(&ps);
    return ok;
}
static int clipping(llm_trace *tr)
{
    static const struct { const char *name; double w[2], b, c; } cases[5] = {
        {"within", {0.0, 0.3}, -0.4, 1.0},
        {"clipped", {0.0, 3.0}, -4.0, 1.0},
        {"zero", {0.0, 0.0}, 0.0, 1.0},
        {"huge", {0.0, 3e200}, -4e200, 1.0},
        {"fallback", {0.0, 3e100}, -4e100, 1e-300}};
    const size_t two[1] = {2}, one[1] = {1};
    llm_params ps;
    llm_error err;
    size_t k, j;
    int ok;
    memset(&ps, 0, sizeof ps);
    ok = llm_demo_ok("ch22", llm_params_init(&ps, &err), &err)
         && llm_demo_ok("ch22", llm_params_add_const(&ps, "w", 1, two, 0.0, 1, &err), &err)
         && llm_demo_ok("ch22", llm_params_add_const(&ps, "b", 1, one, 0.0, 0, &err), &err);
    for (k = 0; ok && k < 5; k++) {
        const double g[3] = {cases[k].w[0], cases[k].w[1], cases[k].b};
        llm_grad_multiplier mu = {0.0, 0.0};
        double norm = 0.0, naive = 0.0, eff[3], scale = 0.0, ss = 0.0;
        char c[7][32];
        const char *cells[7] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6]};
        memcpy(ps.items[0].grad.data, g, 2 * sizeof g[0]);
        ps.items[1].grad.data[0] = g[2];
        ok = llm_demo_ok("ch22",
                         llm_grad_clip_multiplier(&ps, cases[k].c, &norm, &mu, &err), &err);
        for (j = 0; ok && j < 3; j++) {
            naive += g[j] * g[j];
            eff[j] = (g[j] / mu.divisor) * mu.factor;
            ok = llm_demo_ok("ch22", llm_norm_accumulate(&scale, &ss, eff[j], &err), &err);
        }
        if (!ok)
            break;
        snprintf(c[0], sizeof c[0], "%s", cases[k].name);
        sig6(c[1], sizeof c[1], cases[k].c);
        sig6(c[2], sizeof c[2], norm);
        sig6(c[3], sizeof c[3], sqrt(naive));
        sig6(c[4], sizeof c[4], mu.divisor);
        sig6(c[5], sizeof c[5], mu.factor);
        sig6(c[6], sizeof c[6], scale * sqrt(ss));
        printf("clip %s: c=%s norm=%s naive=%s divisor=%s factor=%s", c[0], c[1], c[2],
               c[3], c[4], c[5]);
        {
            char buf[128];
            snprintf(buf, sizeof buf, "[%.6g, %.6g, %.6g]", eff[0], eff[1], eff[2]);
            printf(" effective=%s effective_norm=%s\n", buf, c[6]);
            if (k == 4)
                llm_trace_value(tr, "fallback_effective", buf);
        }
        llm_trace_row(tr, "clip", 7, cells);
        if (k == 1 || k == 3 || k == 4) {      /* the quoted cases */
            char name[48];
            snprintf(name, sizeof name, "clip_%s_factor", cases[k].name);
            llm_trace_value(tr, name, c[5]);
            snprintf(name, sizeof name, "clip_%s_naive", cases[k].name);
            llm_trace_value(tr, name, c[3]);
            snprintf(name, sizeof name, "clip_%s_norm", cases[k].name);
            llm_trace_value(tr, name, c[2]);
        }
        ok = ok && scale * sqrt(ss) <= cases[k].c * (1.0 + 1e-12);
        if (k == 1) {
            static const char *const coordinate[3] = {"w[0]", "w[1]", "b[0]"};
            double s = 0.0, q = 0.0;
            for (j = 0; j < 3; j++) {
                char w[4][32];
                const char *row[4] = {w[0], w[1], w[2], w[3]};
                snprintf(w[0], sizeof w[0], "`%s`", coordinate[j]);
                ok = ok && llm_demo_ok("ch22", llm_norm_accumulate(&s, &q, g[j], &err), &err);
                sig6(w[1], sizeof w[1], g[j]);
                sig6(w[2], sizeof w[2], s);
                sig6(w[3], sizeof w[3], q);
                printf("  walk %s g=%s scale=%s ss=%s\n", coordinate[j], w[1], w[2], w[3]);
                llm_trace_row(tr, "walk", 4, row);
            }
            ok = ok && s * sqrt(q) == norm;        /* the same walk as the library's */
        }
        ok = ok && ps.items[0].grad.data[0] == g[0]   /* raw gradients intact */
                && ps.items[0].grad.data[1] == g[1]
                && ps.items[1].grad.data[0] == g[2];
    }
    printf("raw gradients unchanged=%s\n", ok ? "yes" : "no");
    llm_params_free(&ps);
    return ok;
}
/* quiet = 3 with gradient 0 and busy = 3 with gradient 10, plus l2 * theta,
   after one step with config. */
static int one_step_pair(const llm_adamw_config *config, double l2, double *after)
{
    static const double three[1] = {3.0}, grad[2] = {0.0, 10.0};
    llm_params ps;
    llm_adamw opt;
    llm_error err;
    int ok;
    memset(&ps, 0, sizeof ps);
    memset(&opt, 0, sizeof opt);
    ok = llm_demo_ok("ch22", llm_params_init(&ps, &err), &err)
         && llm_demo_ok("ch22", add_vector(&ps, "quiet", 1, three, 1, &err), &err)
         && llm_demo_ok("ch22", add_vector(&ps, "busy", 1, three, 1, &err), &err)
         && llm_demo_ok("ch22", llm_adamw_init(&opt, &ps, config, &err), &err);
    if (ok) {
        ps.items[0].grad.data[0] = grad[0] + l2 * 3.0;
        ps.items[1].grad.data[0] = grad[1] + l2 * 3.0;
        ok = llm_demo_ok("ch22",
                         llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 0.1, &err), &err);
    }
    if (ok) {
        after[0] = ps.items[0].value.data[0];
        after[1] = ps.items[1].value.data[0];
    }
    llm_adamw_free(&opt);
    llm_params_free(&ps);
    return ok;
}

static int decay_against_l2(llm_trace *tr)
{
    llm_adamw_config plain = fixture_config;
    double adamw[2], adam[2], l2[2];
    size_t i;
    int ok;
    plain.weight_decay = 0.0;
    ok = one_step_pair(&fixture_config, 0.0, adamw)
         && one_step_pair(&plain, 0.0, adam)
         && one_step_pair(&plain, fixture_config.weight_decay, l2);
    for (i = 0; ok && i < 2; i++) {
        char c[4][32];
        const char *cells[4] = {i == 0 ? "`quiet`" : "`busy`", c[1], c[2], c[3]};
        llm_fmt(c[1], sizeof c[1], i == 0 ? 0.0 : 10.0, 0);
        llm_fmt(c[2], sizeof c[2], adam[i] - adamw[i], 6);
        llm_fmt(c[3], sizeof c[3], adam[i] - l2[i], 6);
        printf("decay effect %s g=%s: adamw=%s l2=%s\n",
               i == 0 ? "quiet" : "busy", c[1], c[2], c[3]);
        llm_trace_row(tr, "decay", 4, cells);
        llm_trace_value(tr, i == 0 ? "quiet_adamw" : "busy_adamw", c[2]);
        llm_trace_value(tr, i == 0 ? "quiet_l2" : "busy_l2", c[3]);
    }
    return ok;
}
/* Values and moments of every parameter, then steps, p1 and p2. */
static size_t snapshot(const llm_params *ps, const llm_adamw *opt, double *out)
{
    size_t i, n = 0;
    for (i = 0; i < ps->count; i++) {
        size_t size = ps->items[i].value.size;
        memcpy(out + n, ps->items[i].value.data, size * sizeof(double));
        memcpy(out + n + size, opt->moments[i].m.data, size * sizeof(double));
        memcpy(out + n + 2 * size, opt->moments[i].v.data, size * sizeof(double));
        n += 3 * size;
    }
    out[n++] = (double)opt->steps;
    out[n++] = opt->p1;
    out[n++] = opt->p2;
    return n;
}

/* A list of rank-1 parameters named names[i] with sizes[i] elements. */
static int make_list(llm_params *ps, size_t n, const char *const *names,
                     const size_t *sizes)
{
    llm_error err;
    size_t i;
    int ok = llm_demo_ok("ch22", llm_params_init(ps, &err), &err);
    for (i = 0; ok && i < n; i++)
        ok = llm_demo_ok("ch22",
                         llm_params_add_const(ps, names[i], 1, &sizes[i], 1.0, 1, &err), &err);
    return ok;
}

static int refusals(llm_trace *tr)
{
    static const double w0[2] = {1.0, -2.0}, g0[2] = {0.2, -0.4};
    static const char *const renamed[2] = {"w", "gain"};
    static const char *const swapped[2] = {"norm.gain", "w"};
    static const char *const right[2] = {"w", "norm.gain"};
    static const size_t sizes[2] = {2, 1}, wide[2] = {3, 1}, one_each[2] = {1, 2};
    llm_params ps, other[4];
    llm_adamw opt, untouched, pattern;
    llm_error err;
    double before[16], after[16], norm = -1.0;
    llm_grad_multiplier mu = {-1.0, -1.0};
    size_t n, i, index = 99;
    int ok;
    memset(&ps, 0, sizeof ps);
    memset(other, 0, sizeof other);
    memset(&opt, 0, sizeof opt);
    memset(&pattern, 0xab, sizeof pattern);
    memset(&untouched, 0xab, sizeof untouched);
    ok = llm_demo_ok("ch22", llm_params_init(&ps, &err), &err)
         && llm_demo_ok("ch22", add_vector(&ps, "w", 2, w0, 1, &err), &err)
         && llm_demo_ok("ch22", add_vector(&ps, "norm.gain", 1, w0, 0, &err), &err)
         && llm_demo_ok("ch22", llm_adamw_init(&opt, &ps, &fixture_config, &err), &err);
    if (ok) {
        memcpy(ps.items[0].grad.data, g0, sizeof g0);
        ps.items[1].grad.data[0] = 0.5;
        ok = llm_demo_ok("ch22",
                         llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 0.1, &err), &err);
    }
    ok = ok && make_list(&other[0], 2, renamed, sizes)
            && make_list(&other[1], 2, right, wide)
            && make_list(&other[2], 1, right, sizes)
            && make_list(&other[3], 2, swapped, one_each);
    if (ok) {
        n = snapshot(&ps, &opt, before);
        {
            llm_adamw_config bad[4];
            const llm_grad_multiplier zero_factor = {1.0, 0.0};
            double s = 0.0, q = 0.0;
            for (i = 0; i < 4; i++)
                bad[i] = fixture_config;
            bad[0].beta1 = 1.0;
            bad[1].beta2 = -0.1;
            bad[2].eps = 0.0;
            bad[3].weight_decay = NAN;
            llm_demo_refusal_cells(tr, "bm", "beta1 = 1",
                                   llm_adamw_init(&untouched, &ps, &bad[0], &err), &err);
            llm_demo_refusal_cells(tr, "bm", "beta2 = -0.1",
                                   llm_adamw_init(&untouched, &ps, &bad[1], &err), &err);
            llm_demo_refusal_cells(tr, "bm", "eps = 0",
                                   llm_adamw_init(&untouched, &ps, &bad[2], &err), &err);
            llm_demo_refusal_cells(tr, "bm", "weight decay NaN",
                                   llm_adamw_init(&untouched, &ps, &bad[3], &err), &err);
            llm_demo_refusal_cells(tr, "bm", "learning rate 0",
                                   llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 0.0, &err), &err);
            llm_demo_refusal_cells(tr, "bm", "lr 10, decay product 1",
                                   llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 10.0, &err), &err);
            llm_trace_value(tr, "product_message", err.message);
            llm_demo_refusal_cells(tr, "bm", "lr 1e-323, decay product rounds to 0",
                                   llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 1e-323, &err), &err);
            llm_demo_refusal_cells(tr, "bm", "multiplier factor 0",
                                   llm_adamw_step(&opt, &ps, zero_factor, 0.1, &err), &err);
            ps.items[1].grad.data[0] = NAN;
            llm_demo_refusal_cells(tr, "bm", "NaN gradient",
                                   llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 0.1, &err), &err);
            llm_demo_refusal_cells(tr, "bm", "clip a NaN gradient",
                                   llm_grad_clip_multiplier(&ps, 1.0, &norm, &mu, &err), &err);
            ps.items[1].grad.data[0] = 0.5;
            ps.items[0].grad.data[0] = 1e200;
            llm_demo_refusal_cells(tr, "bm", "gradient 1e200 unclipped",
                                   llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 0.1, &err), &err);
            llm_trace_value(tr, "overflow_message", err.message);
            llm_demo_refusal_cells(tr, "bm", "renamed parameter",
                                   llm_adamw_step(&opt, &other[0], LLM_GRAD_UNSCALED, 0.1, &err),
                                   &err);
            llm_demo_refusal_cells(tr, "bm", "wider parameter",
                                   llm_adamw_step(&opt, &other[1], LLM_GRAD_UNSCALED, 0.1, &err),
                                   &err);
            llm_demo_refusal_cells(tr, "bm", "missing parameter",
                                   llm_adamw_step(&opt, &other[2], LLM_GRAD_UNSCALED, 0.1, &err),
                                   &err);
            llm_demo_refusal_cells(tr, "bm", "parameters swapped",
                                   llm_adamw_step(&opt, &other[3], LLM_GRAD_UNSCALED, 0.1, &err),
                                   &err);
            llm_demo_refusal_cells(tr, "bm", "clip to norm 0",
                                   llm_grad_clip_multiplier(&ps, 0.0, &norm, &mu, &err), &err);
            llm_demo_refusal_cells(tr, "bm", "norm of an infinity",
                                   llm_norm_accumulate(&s, &q, INFINITY, &err), &err);
            llm_demo_refusal_cells(tr, "bm", "moments of \"nope\"",
                                   llm_adamw_find(&opt, "nope", &index, &err), &err);
        }
        ok = memcmp(&untouched, &pattern, sizeof pattern) == 0 && index == 99
             && norm == -1.0 && mu.divisor == -1.0;
        ok = snapshot(&ps, &opt, after) == n
             && memcmp(before, after, n * sizeof(double)) == 0 && ok;
        printf("unchanged after refusals=%s\n", ok ? "yes" : "no");
        llm_trace_value(tr, "unchanged", ok ? "yes" : "no");
        ok = ok && llm_demo_ok("ch22", llm_grad_clip_multiplier(&ps, 1.0, &norm, &mu, &err), &err)
                && llm_demo_ok("ch22", llm_adamw_step(&opt, &ps, mu, 0.1, &err), &err);
        if (ok) {
            char c[3][32], w[128];
            llm_fmt_list(w, sizeof w, ps.items[0].value.data, 2, 6);
            printf("gradient 1e200 clipped: norm=%s factor=%s v=%s w=%s\n",
                   sig6(c[0], sizeof c[0], norm), sig6(c[1], sizeof c[1], mu.factor),
                   sig6(c[2], sizeof c[2], opt.moments[0].v.data[0]), w);
            llm_trace_value(tr, "huge_factor", c[1]);
            llm_trace_value(tr, "huge_v", c[2]);
            llm_trace_value(tr, "huge_w", w);
        }
    }
    for (i = 0; i < 4; i++)
        llm_params_free(&other[i]);
    llm_adamw_free(&opt);
    llm_params_free(&ps);
    return ok;
}
/* 200 steps of the training loop on the bowl from (1, 1); the table rows
   go to tr when it is not NULL. *clipped counts the steps that clipped. */
static int train_bowl(llm_params *ps, llm_adamw *opt, llm_trace *tr,
                      size_t *clipped)
{
    static const double start[2] = {1.0, 1.0};
    static const size_t shown[10] = {0, 1, 2, 5, 10, 20, 50, 100, 150, 200};
    llm_error err;
    size_t step, next = 0;
    int ok = llm_demo_ok("ch22", llm_params_init(ps, &err), &err)
             && llm_demo_ok("ch22", add_vector(ps, "p", 2, start, 1, &err), &err)
             && llm_demo_ok("ch22", llm_adamw_init(opt, ps, &fixture_config, &err), &err);
    *clipped = 0;
    for (step = 0; ok && step <= 200; step++) {
        llm_grad_multiplier mu = LLM_GRAD_UNSCALED;
        double norm = 0.0, g[2] = {0.0, 0.0}, *p = ps->items[0].value.data;
        if (step > 0) {
            ok = llm_demo_ok("ch22", llm_params_zero_grad(ps, &err), &err);
            bowl(p, ps->items[0].grad.data);
            ok = ok
                 && llm_demo_ok("ch22",
                                llm_grad_clip_multiplier(ps, 1.0, &norm, &mu, &err), &err)
                 && llm_demo_ok("ch22", llm_adamw_step(opt, ps, mu, 0.1, &err), &err);
            *clipped += mu.factor != 1.0 || mu.divisor != 1.0;
        }
        if (ok && tr != NULL && step == shown[next]) {
            char c[5][32];
            const char *cells[5] = {c[0], c[1], c[2], c[3], c[4]};
            snprintf(c[0], sizeof c[0], "%zu", step);
            snprintf(c[1], sizeof c[1], "%.3e", bowl(p, g));
            snprintf(c[2], sizeof c[2], "%.3e", p[0]);
            snprintf(c[3], sizeof c[3], "%.3e", p[1]);
            if (step == 0)
                snprintf(c[4], sizeof c[4], "—");
            else
                llm_fmt(c[4], sizeof c[4], mu.factor, 6);
            printf("replay t=%s f=%s p=[%s, %s] factor=%s\n", c[0], c[1], c[2],
                   c[3], c[4]);
            llm_trace_row(tr, "replay", 5, cells);
            if (step == 200)
                llm_trace_value(tr, "replay_f", c[1]);
            next++;
        }
    }
    return ok;
}

static int replay(llm_trace *tr)
{
    llm_params ps[2];
    llm_adamw opt[2];
    size_t clipped[2], i;
    double end[2][16], g[2] = {0.0, 0.0};
    int ok, same;
    char buf[32];
    memset(ps, 0, sizeof ps);
    memset(opt, 0, sizeof opt);
    ok = train_bowl(&ps[0], &opt[0], tr, &clipped[0])
         && train_bowl(&ps[1], &opt[1], NULL, &clipped[1]);
    same = ok && snapshot(&ps[0], &opt[0], end[0]) == 9
           && snapshot(&ps[1], &opt[1], end[1]) == 9
           && memcmp(end[0], end[1], 9 * sizeof(double)) == 0
           && clipped[0] == clipped[1];
    if (ok) {
        snprintf(buf, sizeof buf, "%zu", clipped[0]);
        printf("replay steps=%zu clipped_steps=%s second_run=%s\n", opt[0].steps,
               buf, same ? "bit-identical" : "changed");
        llm_trace_value(tr, "clipped_steps", buf);
        llm_trace_value(tr, "replay", same ? "bit-identical" : "changed");
        ok = same && bowl(ps[0].items[0].value.data, g) < 1e-20;   /* converged */
    }
    for (i = 0; i < 2; i++) {
        llm_adamw_free(&opt[i]);
        llm_params_free(&ps[i]);
    }
    return ok;
}

int main(int argc, char **argv)
{
    llm_trace tr;
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch22-adamw", &tr);
    if (status != 0)
        return status;
    printf("chapter=22 adamw\n");
    ok = fixture_step(&tr) && ok;
    ok = bias_correction(&tr) && ok;
    ok = zero_gradient(&tr) && ok;
    ok = bowl_race(&tr) && ok;
    ok = clipping(&tr) && ok;
    ok = decay_against_l2(&tr) && ok;
    ok = refusals(&tr) && ok;
    ok = replay(&tr) && ok;
    return llm_demo_finish(&tr, ok);
}
