/* ch22-adamw -- AdamW: moments, bias correction, decoupled decay, clipping. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/nn.h"
#include "llm/optim.h"

/* beta1, beta2, eps, weight decay of the predict-first fixture. */
static const llm_adamw_config fixture_config = {0.5, 0.5, 0.1, 0.1};
static const double zeros[3], ones[4] = {1.0, 1.0, 1.0, 1.0}, threes[2] = {3.0, 3.0};

static void release_adamw(void *opt)
{
    llm_adamw_free(opt);
}

/* A list the demo owns: for each name up to NULL, a rank-1 parameter; two
   ints follow the name, its number of values, taken in turn from values,
   and its decay flag. The gradients are zero. */
static llm_params *new_list(llm_demo *d, const double *values, ...)
{
    llm_params *ps = llm_own_params(d);
    const char *name;
    va_list ap;
    (void)LLM_TRY(d, llm_params_init(ps, &d->err));
    va_start(ap, values);
    while (d->ok && (name = va_arg(ap, const char *)) != NULL) {
        const size_t n = (size_t)va_arg(ap, int);
        const int decay = va_arg(ap, int);
        if (LLM_TRY(d, llm_params_add_const(ps, name, 1, &n, 0.0, decay, &d->err)))
            memcpy(ps->items[ps->count - 1].value.data, values, n * sizeof *values);
        values += n;
    }
    va_end(ap);
    return ps;
}

/* AdamW with config over ps, owned by the demo. */
static llm_adamw *new_adamw(llm_demo *d, const llm_params *ps,
                            const llm_adamw_config *config)
{
    llm_adamw *opt = llm_own(d, sizeof *opt, release_adamw);
    (void)LLM_TRY(d, llm_adamw_init(opt, ps, config, &d->err));
    return opt;
}

static llm_status step_unscaled(llm_demo *d, llm_adamw *opt, llm_params *ps, double lr)
{
    return llm_adamw_step(opt, ps, LLM_GRAD_UNSCALED, lr, &d->err);
}

/* x with six significant digits: "5", "0.2", "5e+200", "inf". */
static const char *sig6(double x)
{
    return llm_text("%.6g", x);
}
static void fixture_step(llm_demo *d)
{
    static const double theta[2] = {1.0, -2.0}, grad[2] = {0.2, -0.4};
    llm_params *ps = new_list(d, theta, "w", 2, 1, NULL);
    llm_adamw *opt = new_adamw(d, ps, &fixture_config);
    llm_adamw_terms t[2];
    size_t j;
    if (!d->ok)
        return;
    memcpy(ps->items[0].grad.data, grad, sizeof grad);
    for (j = 0; j < 2; j++)
        (void)LLM_TRY(d, llm_adamw_coordinate(opt, LLM_GRAD_UNSCALED, 0.1, 1, theta[j],
                                              grad[j], 0.0, 0.0, &t[j], &d->err));
    if (!LLM_TRY(d, step_unscaled(d, opt, ps, 0.1)))
        return;
    printf("fixture theta=[1, -2] g=[0.2, -0.4] lr=0.1 beta1=0.5 beta2=0.5 eps=0.1 "
           "lambda=0.1\n");
    {
        static const char *const key[7] = {"m", "v", "m_hat", "v_hat", "adaptive",
                                           "decay", "theta"};
        static const char *const formula[7] = {
            "$m_1 = (1-\\beta_1)\\,g_1$", "$v_1 = (1-\\beta_2)\\,g_1^2$",
            "$\\hat m_1 = m_1/(1-\\beta_1)$", "$\\hat v_1 = v_1/(1-\\beta_2)$",
            "$s_1 = \\eta\\,\\hat m_1/(\\sqrt{\\hat v_1}+\\varepsilon)$",
            "$d_1 = \\eta\\lambda\\,\\theta_0$", "$\\theta_1 = \\theta_0 - s_1 - d_1$"};
        const double q[7][2] = {{t[0].m, t[1].m}, {t[0].v, t[1].v},
                                {t[0].m_hat, t[1].m_hat}, {t[0].v_hat, t[1].v_hat},
                                {t[0].adaptive, t[1].adaptive},
                                {t[0].decay, t[1].decay}, {t[0].theta, t[1].theta}};
        int applied;
        for (j = 0; j < 7; j++) {
            printf("%s=%s\n", key[j], llm_put(d, key[j], llm_nums(q[j], 2, 6)));
            llm_row(d, "fixture", formula[j], llm_num(q[j][0], 6), llm_num(q[j][1], 6),
                    NULL);
        }
        llm_put(d, "step1", llm_num(t[0].adaptive, 6));
        applied = memcmp(ps->items[0].value.data, q[6], sizeof q[6]) == 0   /* theta */
                  && memcmp(opt->moments[0].m.data, q[0], sizeof q[0]) == 0
                  && memcmp(opt->moments[0].v.data, q[1], sizeof q[1]) == 0;
        printf("state steps=%zu p1=%s p2=%s", opt->steps, llm_num(opt->p1, 6),
               llm_num(opt->p2, 6));
        printf(" terms_applied=%s\n",
               llm_put(d, "applied", applied ? "exact" : "changed"));
        llm_demo_check(d, applied, "the step wrote exactly the predicted terms");
    }
}
static void bias_correction(llm_demo *d)
{
    llm_params *ps = new_list(d, zeros, "u", 1, 0, NULL);
    llm_adamw *opt = new_adamw(d, ps, &fixture_config);
    llm_adamw_terms t;
    size_t k;
    for (k = 1; d->ok && k <= 3; k++) {
        ps->items[0].grad.data[0] = 0.2;
        if (!(LLM_TRY(d, llm_adamw_coordinate(opt, LLM_GRAD_UNSCALED, 0.1, 0,
                                              ps->items[0].value.data[0], 0.2,
                                              opt->moments[0].m.data[0],
                                              opt->moments[0].v.data[0], &t, &d->err))
              && LLM_TRY(d, step_unscaled(d, opt, ps, 0.1))))
            return;
        llm_demo_check(d, opt->moments[0].m.data[0] == t.m
                          && opt->moments[0].v.data[0] == t.v,
                       "the step wrote the moments llm_adamw_coordinate gave");
        printf("bias t=%zu beta^t=%s m=%s m_hat=%s v=%s v_hat=%s s=%s\n", opt->steps,
               llm_num(opt->p1, 6), llm_num(t.m, 6), llm_num(t.m_hat, 6),
               llm_num(t.v, 6), llm_num(t.v_hat, 6), llm_num(t.adaptive, 6));
        llm_row(d, "bias", llm_text("%zu", opt->steps), llm_num(opt->p1, 6),
                llm_num(t.m, 6), llm_num(t.m_hat, 6), llm_num(t.v, 6),
                llm_num(t.v_hat, 6), llm_num(t.adaptive, 6), NULL);
    }
    llm_put(d, "bias_m3", llm_num(t.m, 6));             /* the third step's terms */
    llm_put(d, "bias_mhat3", llm_num(t.m_hat, 6));
}
static void zero_gradient(llm_demo *d)
{
    llm_params *ps = new_list(d, threes, "w", 1, 1, "norm.gain", 1, 0, NULL);
    llm_adamw *opt = new_adamw(d, ps, &fixture_config);
    size_t i;
    if (!LLM_TRY(d, step_unscaled(d, opt, ps, 0.1)))
        return;
    for (i = 0; i < 2; i++) {
        const llm_param *p = &ps->items[i];
        const char *after = llm_num(p->value.data[0], 6);
        printf("zero gradient %s decay=%d: 3 -> %s\n", p->name, p->decay, after);
        llm_row(d, "groups", llm_text("`%s`", p->name),
                llm_text("$\\delta = %d$", p->decay), llm_num(3.0, 6), after, NULL);
        llm_put(d, i == 0 ? "zero_decay" : "zero_gain", after);
    }
    llm_demo_check(d, ps->items[1].value.data[0] == 3.0, "the gain did not move");
}
/* f(x, y) = (x^2 + 4 y^2) / 2 at p; adds its gradient (x, 4y) into grad. */
static double bowl(const double *p, double *grad)
{
    grad[0] += p[0];
    grad[1] += 4.0 * p[1];
    return 0.5 * (p[0] * p[0] + 4.0 * p[1] * p[1]);
}

/* Clears the gradients of ps and accumulates the bowl's at its values. */
static int bowl_backward(llm_demo *d, llm_params *ps)
{
    if (!LLM_TRY(d, llm_params_zero_grad(ps, &d->err)))
        return 0;
    bowl(ps->items[0].value.data, ps->items[0].grad.data);
    return 1;
}

static void bowl_race(llm_demo *d)
{
    llm_params *ps = new_list(d, ones, "p", 2, 1, NULL);
    llm_adamw *opt = new_adamw(d, ps, &fixture_config);
    double sgd[2] = {1.0, 1.0}, g[2] = {0.0, 0.0}, *p;
    size_t t;
    if (!d->ok)
        return;
    p = ps->items[0].value.data;
    for (t = 0; t <= 4; t++) {
        if (t > 0) {
            g[0] = g[1] = 0.0;
            bowl(sgd, g);                          /* plain gradient descent */
            sgd[0] -= 0.1 * g[0];
            sgd[1] -= 0.1 * g[1];
            if (!(bowl_backward(d, ps) && LLM_TRY(d, step_unscaled(d, opt, ps, 0.1))))
                return;                            /* AdamW */
        }
        printf("bowl t=%zu sgd=%s adamw=%s\n", t, llm_nums(sgd, 2, 6),
               llm_nums(p, 2, 6));
        llm_row(d, "bowl", llm_text("%zu", t), llm_num(sgd[0], 6), llm_num(sgd[1], 6),
                llm_num(p[0], 6), llm_num(p[1], 6), NULL);
    }
    printf("sgd_end=%s\n", llm_put(d, "sgd_end", llm_nums(sgd, 2, 6)));
    printf("adamw_end=%s\n", llm_put(d, "adamw_end", llm_nums(p, 2, 6)));
    printf("f_sgd=%s\n", llm_put(d, "f_sgd", llm_num(bowl(sgd, g), 6)));
    printf("f_adamw=%s\n", llm_put(d, "f_adamw", llm_num(bowl(p, g), 6)));
}
static void clipping(llm_demo *d)
{
    static const struct { const char *name; double g[3], c; } cases[5] = {
        {"within", {0.0, 0.3, -0.4}, 1.0}, {"clipped", {0.0, 3.0, -4.0}, 1.0},
        {"zero", {0.0, 0.0, 0.0}, 1.0}, {"huge", {0.0, 3e200, -4e200}, 1.0},
        {"fallback", {0.0, 3e100, -4e100}, 1e-300}};
    static const char *const coordinate[3] = {"w[0]", "w[1]", "b[0]"};
    llm_params *ps = new_list(d, zeros, "w", 2, 1, "b", 1, 0, NULL);
    size_t k, j;
    for (k = 0; d->ok && k < 5; k++) {
        const double *g = cases[k].g;
        llm_grad_multiplier mu = {0.0, 0.0};
        double norm = 0.0, naive = 0.0, eff[3], scale = 0.0, ss = 0.0, s = 0.0, q = 0.0;
        const char *name = cases[k].name, *effective;
        memcpy(ps->items[0].grad.data, g, 2 * sizeof g[0]);
        ps->items[1].grad.data[0] = g[2];
        if (!LLM_TRY(d, llm_grad_clip_multiplier(ps, cases[k].c, &norm, &mu, &d->err)))
            return;
        for (j = 0; j < 3; j++) {
            naive += g[j] * g[j];
            eff[j] = (g[j] / mu.divisor) * mu.factor;
            if (!LLM_TRY(d, llm_norm_accumulate(&scale, &ss, eff[j], &d->err)))
                return;
        }
        effective = llm_text("[%.6g, %.6g, %.6g]", eff[0], eff[1], eff[2]);
        printf("clip %s: c=%s norm=%s naive=%s divisor=%s factor=%s", name,
               sig6(cases[k].c), sig6(norm), sig6(sqrt(naive)), sig6(mu.divisor),
               sig6(mu.factor));
        printf(" effective=%s effective_norm=%s\n", effective, sig6(scale * sqrt(ss)));
        if (k == 4)
            llm_put(d, "fallback_effective", effective);
        llm_row(d, "clip", name, sig6(cases[k].c), sig6(norm), sig6(sqrt(naive)),
                sig6(mu.divisor), sig6(mu.factor), sig6(scale * sqrt(ss)), NULL);
        if (k == 1 || k == 3 || k == 4) {      /* the quoted cases */
            llm_put(d, llm_text("clip_%s_factor", name), sig6(mu.factor));
            llm_put(d, llm_text("clip_%s_naive", name), sig6(sqrt(naive)));
            llm_put(d, llm_text("clip_%s_norm", name), sig6(norm));
        }
        llm_demo_check(d, scale * sqrt(ss) <= cases[k].c * (1.0 + 1e-12),
                       "the effective gradient's norm is at most c");
        for (j = 0; k == 1 && j < 3; j++)
            if (LLM_TRY(d, llm_norm_accumulate(&s, &q, g[j], &d->err))) {
                printf("  walk %s g=%s scale=%s ss=%s\n", coordinate[j], sig6(g[j]),
                       sig6(s), sig6(q));
                llm_row(d, "walk", llm_text("`%s`", coordinate[j]), sig6(g[j]), sig6(s),
                        sig6(q), NULL);
            }
        llm_demo_check(d, k != 1 || s * sqrt(q) == norm,
                       "the walk ends at the library's norm");
        llm_demo_check(d, memcmp(ps->items[0].grad.data, g, 2 * sizeof g[0]) == 0
                          && memcmp(ps->items[1].grad.data, g + 2, sizeof g[0]) == 0,
                       "clipping left the raw gradients as they were written");
    }
    printf("raw gradients unchanged=%s\n", llm_yes(d->ok));
}
static void decay_against_l2(llm_demo *d)
{
    static const char *const name[2] = {"quiet", "busy"};
    static const double grad[2] = {0.0, 10.0};
    const llm_adamw_config plain = {0.5, 0.5, 0.1, 0.0};   /* the fixture's, no decay */
    double after[3][2];            /* AdamW, Adam, Adam with lambda theta added */
    size_t m, i;
    for (m = 0; m < 3; m++) {
        llm_params *ps = new_list(d, threes, "quiet", 1, 1, "busy", 1, 1, NULL);
        llm_adamw *opt = new_adamw(d, ps, m == 0 ? &fixture_config : &plain);
        for (i = 0; d->ok && i < 2; i++)
            ps->items[i].grad.data[0] =
                grad[i] + (m == 2 ? fixture_config.weight_decay : 0.0) * 3.0;
        if (!LLM_TRY(d, step_unscaled(d, opt, ps, 0.1)))
            return;
        for (i = 0; i < 2; i++)
            after[m][i] = ps->items[i].value.data[0];
    }
    for (i = 0; i < 2; i++) {
        const char *g = llm_num(grad[i], 0);
        const char *by_adamw = llm_num(after[1][i] - after[0][i], 6);
        const char *by_l2 = llm_num(after[1][i] - after[2][i], 6);
        printf("decay effect %s g=%s: adamw=%s l2=%s\n", name[i], g, by_adamw, by_l2);
        llm_row(d, "decay", llm_text("`%s`", name[i]), g, by_adamw, by_l2, NULL);
        llm_put(d, llm_text("%s_adamw", name[i]), by_adamw);
        llm_put(d, llm_text("%s_l2", name[i]), by_l2);
    }
}
/* Values and moments of every parameter, then steps, p1 and p2. */
static size_t snapshot(const llm_params *ps, const llm_adamw *opt, double *out)
{
    size_t i, k, n = 0;
    for (i = 0; i < ps->count; i++) {
        const llm_tensor *part[3] = {&ps->items[i].value, &opt->moments[i].m,
                                     &opt->moments[i].v};
        for (k = 0; k < 3; n += part[k++]->size)
            memcpy(out + n, part[k]->data, part[k]->size * sizeof(double));
    }
    out[n] = (double)opt->steps;
    out[n + 1] = opt->p1;
    out[n + 2] = opt->p2;
    return n + 3;
}

/* A refusal row with the code and its stage, then the message. */
static void refuse(llm_demo *d, const char *what, llm_status st)
{
    llm_refuse_cells(d, "bm", what, st);
}

static void refusals(llm_demo *d)
{
    static const double w0[3] = {1.0, -2.0, 1.0}, g0[3] = {0.2, -0.4, 0.5};
    static const struct { const char *what; llm_adamw_config config; } bad[4] = {
        {"beta1 = 1", {1.0, 0.5, 0.1, 0.1}}, {"beta2 = -0.1", {0.5, -0.1, 0.1, 0.1}},
        {"eps = 0", {0.5, 0.5, 0.0, 0.1}}, {"weight decay NaN", {0.5, 0.5, 0.1, NAN}}};
    static const char *const mismatch[4] = {"renamed parameter", "wider parameter",
                                            "missing parameter", "parameters swapped"};
    const llm_grad_multiplier zero_factor = {1.0, 0.0};
    llm_params *ps = new_list(d, w0, "w", 2, 1, "norm.gain", 1, 0, NULL);
    llm_adamw *opt = new_adamw(d, ps, &fixture_config);
    llm_params *other[4];
    llm_adamw untouched, pattern;
    double before[16], after[16], norm = -1.0, s = 0.0, q = 0.0;
    llm_grad_multiplier mu = {-1.0, -1.0};
    size_t n, i, index = 99;
    int unchanged;
    other[0] = new_list(d, ones, "w", 2, 1, "gain", 1, 1, NULL);
    other[1] = new_list(d, ones, "w", 3, 1, "norm.gain", 1, 1, NULL);
    other[2] = new_list(d, ones, "w", 2, 1, NULL);
    other[3] = new_list(d, ones, "norm.gain", 1, 1, "w", 2, 1, NULL);
    if (!d->ok)
        return;
    memcpy(ps->items[0].grad.data, g0, 2 * sizeof g0[0]);
    ps->items[1].grad.data[0] = g0[2];
    if (!LLM_TRY(d, step_unscaled(d, opt, ps, 0.1)))
        return;
    memset(&pattern, 0xab, sizeof pattern);
    memset(&untouched, 0xab, sizeof untouched);
    n = snapshot(ps, opt, before);
    for (i = 0; i < 4; i++)
        refuse(d, bad[i].what, llm_adamw_init(&untouched, ps, &bad[i].config, &d->err));
    refuse(d, "learning rate 0", step_unscaled(d, opt, ps, 0.0));
    refuse(d, "lr 10, decay product 1", step_unscaled(d, opt, ps, 10.0));
    llm_put(d, "product_message", d->err.message);
    refuse(d, "lr 1e-323, decay product rounds to 0",
           step_unscaled(d, opt, ps, 1e-323));
    refuse(d, "multiplier factor 0",
           llm_adamw_step(opt, ps, zero_factor, 0.1, &d->err));
    ps->items[1].grad.data[0] = NAN;
    refuse(d, "NaN gradient", step_unscaled(d, opt, ps, 0.1));
    refuse(d, "clip a NaN gradient",
           llm_grad_clip_multiplier(ps, 1.0, &norm, &mu, &d->err));
    ps->items[1].grad.data[0] = 0.5;
    ps->items[0].grad.data[0] = 1e200;
    refuse(d, "gradient 1e200 unclipped", step_unscaled(d, opt, ps, 0.1));
    llm_put(d, "overflow_message", d->err.message);
    for (i = 0; i < 4; i++)
        refuse(d, mismatch[i], step_unscaled(d, opt, other[i], 0.1));
    refuse(d, "clip to norm 0", llm_grad_clip_multiplier(ps, 0.0, &norm, &mu, &d->err));
    refuse(d, "norm of an infinity", llm_norm_accumulate(&s, &q, INFINITY, &d->err));
    refuse(d, "moments of \"nope\"", llm_adamw_find(opt, "nope", &index, &d->err));
    unchanged = memcmp(&untouched, &pattern, sizeof pattern) == 0 && index == 99
                && norm == -1.0 && mu.divisor == -1.0 && snapshot(ps, opt, after) == n
                && memcmp(before, after, n * sizeof(double)) == 0;
    printf("unchanged after refusals=%s\n",
           llm_put(d, "unchanged", llm_yes(unchanged)));
    llm_demo_check(d, unchanged, "the refused calls changed nothing");
    if (!(LLM_TRY(d, llm_grad_clip_multiplier(ps, 1.0, &norm, &mu, &d->err))
          && LLM_TRY(d, llm_adamw_step(opt, ps, mu, 0.1, &d->err))))
        return;
    printf("gradient 1e200 clipped: norm=%s", sig6(norm));
    printf(" factor=%s", llm_put(d, "huge_factor", sig6(mu.factor)));
    printf(" v=%s", llm_put(d, "huge_v", sig6(opt->moments[0].v.data[0])));
    printf(" w=%s\n", llm_put(d, "huge_w", llm_nums(ps->items[0].value.data, 2, 6)));
}
/* 200 steps of the training loop on the bowl from ps's values, the rows
   printed and traced when show is set. Returns how many steps clipped. */
static size_t train_bowl(llm_demo *d, int show, llm_params *ps, llm_adamw *opt)
{
    size_t t, clipped = 0;
    for (t = 0; d->ok && t <= 200; t++) {
        llm_grad_multiplier mu = LLM_GRAD_UNSCALED;
        double norm = 0.0, g[2] = {0.0, 0.0}, *p = ps->items[0].value.data;
        const char *f, *factor;
        if (t > 0
            && !(bowl_backward(d, ps)
                 && LLM_TRY(d, llm_grad_clip_multiplier(ps, 1.0, &norm, &mu, &d->err))
                 && LLM_TRY(d, llm_adamw_step(opt, ps, mu, 0.1, &d->err))))
            break;
        clipped += mu.factor != 1.0 || mu.divisor != 1.0;
        if (!show || !(t <= 2 || t == 5 || t == 10 || t == 20 || t % 50 == 0))
            continue;
        f = llm_text("%.3e", bowl(p, g));
        factor = t == 0 ? "—" : llm_num(mu.factor, 6);
        printf("replay t=%zu f=%s p=[%.3e, %.3e] factor=%s\n", t, f, p[0], p[1],
               factor);
        llm_row(d, "replay", llm_text("%zu", t), f, llm_text("%.3e", p[0]),
                llm_text("%.3e", p[1]), factor, NULL);
        if (t == 200)
            llm_put(d, "replay_f", f);
    }
    return clipped;
}

static void replay(llm_demo *d)
{
    llm_params *ps[2];
    llm_adamw *opt[2];
    size_t clipped[2], i;
    double end[2][16], g[2] = {0.0, 0.0};
    int same;
    for (i = 0; i < 2; i++) {
        ps[i] = new_list(d, ones, "p", 2, 1, NULL);
        opt[i] = new_adamw(d, ps[i], &fixture_config);
        clipped[i] = train_bowl(d, i == 0, ps[i], opt[i]);
    }
    if (!d->ok)
        return;
    same = snapshot(ps[0], opt[0], end[0]) == 9 && snapshot(ps[1], opt[1], end[1]) == 9
           && memcmp(end[0], end[1], 9 * sizeof(double)) == 0
           && clipped[0] == clipped[1];
    printf("replay steps=%zu clipped_steps=%s", opt[0]->steps,
           llm_put(d, "clipped_steps", llm_text("%zu", clipped[0])));
    printf(" second_run=%s\n",
           llm_put(d, "replay", same ? "bit-identical" : "changed"));
    llm_demo_check(d, same, "the second run is bit-identical to the first");
    llm_demo_check(d, bowl(ps[0]->items[0].value.data, g) < 1e-20,
                   "the loop converged: f < 1e-20");
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {fixture_step, bias_correction,
                                            zero_gradient, bowl_race, clipping,
                                            decay_against_l2, refusals, replay, NULL};
    return llm_demo_main(argc, argv, "ch22-adamw", NULL, sections);
}
