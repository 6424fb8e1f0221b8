/* adamw.c -- global-norm clipping and the AdamW step. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llm/optim.h"

/* The buffer position of the element at idx in t. */
static size_t adamw_at(const llm_tensor *t, const size_t *idx)
{
    size_t k, o = t->offset;
    for (k = 0; k < t->rank; k++)
        o += idx[k] * t->stride[k];
    return o;
}
static llm_status adamw_config_check(const llm_adamw_config *c, llm_error *err)
{
    if (!(c->beta1 >= 0.0 && c->beta1 < 1.0))
        return llm_fail(err, LLM_ERR_ARGUMENT, "adamw.init",
                        "beta1 must lie in [0, 1), got %g", c->beta1);
    if (!(c->beta2 >= 0.0 && c->beta2 < 1.0))
        return llm_fail(err, LLM_ERR_ARGUMENT, "adamw.init",
                        "beta2 must lie in [0, 1), got %g", c->beta2);
    if (!(c->eps > 0.0) || !isfinite(c->eps))
        return llm_fail(err, LLM_ERR_ARGUMENT, "adamw.init",
                        "eps must be positive and finite, got %g", c->eps);
    if (!(c->weight_decay >= 0.0) || !isfinite(c->weight_decay))
        return llm_fail(err, LLM_ERR_ARGUMENT, "adamw.init",
                        "the weight decay must be zero or positive and finite, "
                        "got %g", c->weight_decay);
    return LLM_OK;
}
llm_status llm_adamw_init(llm_adamw *opt, const llm_params *ps,
                          const llm_adamw_config *config, llm_error *err)
{
    llm_adamw a;
    size_t i;
    llm_status st;
    if (opt == NULL || ps == NULL || config == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "adamw.init",
                        "an optimiser, a parameter list and a configuration "
                        "are required");
    st = adamw_config_check(config, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "adamw.init");
    memset(&a, 0, sizeof a);
    a.moments = llm_calloc(ps->count > 0 ? ps->count : 1, sizeof *a.moments);
    if (a.moments == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, "adamw.init",
                        "cannot allocate the moments of %zu parameters",
                        ps->count);
    for (i = 0; i < ps->count; i++) {
        const llm_tensor *value = &ps->items[i].value;
        llm_adamw_moment *mo = &a.moments[i];
        memcpy(mo->name, ps->items[i].name, sizeof mo->name);
        a.count = i + 1;           /* so that llm_adamw_free sees this pair */
        st = llm_tensor_zeros(&mo->m, value->rank, value->shape, err);
        if (st == LLM_OK)
            st = llm_tensor_zeros(&mo->v, value->rank, value->shape, err);
        if (st != LLM_OK) {
            llm_adamw_free(&a);
            return llm_pass(err, st, "adamw.init");
        }
    }
    a.config = *config;
    a.steps = 0;
    a.p1 = 1.0;                          /* beta^0 */
    a.p2 = 1.0;
    *opt = a;
    return LLM_OK;
}

void llm_adamw_free(llm_adamw *opt)
{
    size_t i;
    if (opt == NULL)
        return;
    for (i = 0; i < opt->count; i++) {
        llm_tensor_free(&opt->moments[i].m);
        llm_tensor_free(&opt->moments[i].v);
    }
    free(opt->moments);
    memset(opt, 0, sizeof *opt);
}
llm_status llm_adamw_find(const llm_adamw *opt, const char *name, size_t *index,
                          llm_error *err)
{
    size_t i;
    if (opt == NULL || name == NULL || index == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "adamw.find",
                        "an optimiser, a name and a place for the index "
                        "are required");
    for (i = 0; i < opt->count; i++)
        if (strcmp(opt->moments[i].name, name) == 0) {
            *index = i;
            return LLM_OK;
        }
    return llm_fail(err, LLM_ERR_NAME, "adamw.find",
                    "no moments are kept for a parameter named \"%.63s\"", name);
}
static void adamw_accumulate(double *scale, double *ss, double x)
{
    const double a = fabs(x);
    if (a == 0.0)
        return;
    if (*scale < a) {                  /* a new largest value: rescale the sum */
        const double r = *scale / a;
        *ss = 1.0 + *ss * (r * r);
        *scale = a;
    } else {
        const double r = a / *scale;
        *ss += r * r;
    }
}

llm_status llm_norm_accumulate(double *scale, double *ss, double x,
                               llm_error *err)
{
    if (scale == NULL || ss == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "optim.norm_accumulate",
                        "a scale and a scaled sum are required");
    if (!isfinite(x))
        return llm_fail(err, LLM_ERR_NONFINITE, "optim.norm_accumulate",
                        "the value %g is not finite", x);
    adamw_accumulate(scale, ss, x);
    return LLM_OK;
}
llm_status llm_grad_clip_multiplier(const llm_params *ps, double max_norm,
                                    double *norm, llm_grad_multiplier *multiplier,
                                    llm_error *err)
{
    llm_grad_multiplier mu = LLM_GRAD_UNSCALED;
    double scale = 0.0, ss = 0.0, root;
    size_t i, j, idx[LLM_MAX_RANK];
    if (ps == NULL || norm == NULL || multiplier == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "optim.grad_clip_multiplier",
                        "a parameter list, a norm and a multiplier are required");
    if (!(max_norm > 0.0) || !isfinite(max_norm))
        return llm_fail(err, LLM_ERR_ARGUMENT, "optim.grad_clip_multiplier",
                        "the maximum norm must be positive and finite, got %g",
                        max_norm);
    for (i = 0; i < ps->count; i++) {
        const llm_tensor *g = &ps->items[i].grad;
        if (!ps->items[i].trainable)
            continue;                          /* a frozen gradient does not count */
        memset(idx, 0, sizeof idx);
        for (j = 0; j < g->size; j++) {
            const double x = g->data[adamw_at(g, idx)];
            if (!isfinite(x))
                return llm_fail(err, LLM_ERR_NONFINITE, "optim.grad_clip_multiplier",
                                "the gradient of \"%s\" at coordinate %zu is %g",
                                ps->items[i].name, j, x);
            adamw_accumulate(&scale, &ss, x);
            llm_index_next(g->rank, g->shape, idx);
        }
    }
    root = sqrt(ss);
    if (scale > 0.0 && scale > max_norm / root) {   /* the norm exceeds max_norm */
        const double factor = (max_norm / scale) / root;
        if (factor > 0.0) {
            mu.factor = factor;
        } else {                               /* it underflowed: divide first */
            mu.divisor = scale;
            mu.factor = max_norm / root;
        }
    }
    *norm = scale * root;
    *multiplier = mu;
    return LLM_OK;
}
llm_status llm_adamw_coordinate(const llm_adamw *opt, llm_grad_multiplier mu,
                                double lr, int decay, double theta, double g,
                                double m, double v, llm_adamw_terms *terms,
                                llm_error *err)
{
    const llm_adamw_config *c;
    llm_adamw_terms t;
    double p1, p2;
    if (opt == NULL || terms == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "adamw.coordinate",
                        "an optimiser and a place for the terms are required");
    c = &opt->config;
    p1 = opt->p1 * c->beta1;                          /* beta1^t */
    p2 = opt->p2 * c->beta2;                          /* beta2^t */
    t.g = (g / mu.divisor) * mu.factor;
    t.m = c->beta1 * m + (1.0 - c->beta1) * t.g;
    t.v = c->beta2 * v + (1.0 - c->beta2) * t.g * t.g;
    t.m_hat = t.m / (1.0 - p1);
    t.v_hat = t.v / (1.0 - p2);
    t.adaptive = lr * (t.m_hat / (sqrt(t.v_hat) + c->eps));
    t.decay = decay ? (lr * c->weight_decay) * theta : 0.0;
    t.theta = theta - t.adaptive - t.decay;
    *terms = t;
    return LLM_OK;
}
static int adamw_same_shape(const llm_tensor *a, const llm_tensor *b)
{
    size_t k;
    if (a->rank != b->rank)
        return 0;
    for (k = 0; k < a->rank; k++)
        if (a->shape[k] != b->shape[k])
            return 0;
    return 1;
}

static llm_status adamw_list_check(const llm_adamw *opt, const llm_params *ps,
                                   llm_error *err)
{
    char value[96], grad[96], moments[96];
    size_t i;
    if (ps->count != opt->count) {
        const int fewer = ps->count < opt->count;
        return llm_fail(err, LLM_ERR_NAME, "adamw.step",
                        "the moments are kept for %zu parameters, the list "
                        "has %zu: \"%s\" is %s", opt->count, ps->count,
                        fewer ? opt->moments[ps->count].name
                              : ps->items[opt->count].name,
                        fewer ? "missing" : "unknown");
    }
    for (i = 0; i < ps->count; i++) {
        const llm_param *p = &ps->items[i];
        const llm_adamw_moment *mo = &opt->moments[i];
        if (strcmp(p->name, mo->name) != 0)
            return llm_fail(err, LLM_ERR_NAME, "adamw.step",
                            "parameter %zu is \"%s\", but the moments there "
                            "are kept for \"%s\"", i, p->name, mo->name);
        if (adamw_same_shape(&p->value, &mo->m)
            && adamw_same_shape(&p->grad, &mo->m))
            continue;
        llm_fmt_sizes(value, sizeof value, p->value.shape, p->value.rank);
        llm_fmt_sizes(grad, sizeof grad, p->grad.shape, p->grad.rank);
        llm_fmt_sizes(moments, sizeof moments, mo->m.shape, mo->m.rank);
        return llm_fail(err, LLM_ERR_SHAPE, "adamw.step",
                        "\"%s\" has a value of shape %s and a gradient of shape "
                        "%s, its moments %s", p->name, value, grad, moments);
    }
    return LLM_OK;
}
static llm_status adamw_sweep(llm_adamw *opt, llm_params *ps,
                              llm_grad_multiplier mu, double lr, int commit,
                              llm_error *err)
{
    size_t i, j, idx[LLM_MAX_RANK];
    for (i = 0; i < ps->count; i++) {
        llm_param *p = &ps->items[i];
        llm_adamw_moment *mo = &opt->moments[i];
        if (!p->trainable)
            continue;                          /* frozen: value and moments stay */
        memset(idx, 0, sizeof idx);
        for (j = 0; j < p->value.size; j++) {
            double *theta = &p->value.data[adamw_at(&p->value, idx)];
            double *m = &mo->m.data[adamw_at(&mo->m, idx)];
            double *v = &mo->v.data[adamw_at(&mo->v, idx)];
            const double g = p->grad.data[adamw_at(&p->grad, idx)];
            llm_adamw_terms t;
            llm_adamw_coordinate(opt, mu, lr, p->decay, *theta, g, *m, *v, &t,
                                 NULL);
            if (commit) {
                *theta = t.theta;
                *m = t.m;
                *v = t.v;
            } else if (!isfinite(g)) {
                return llm_fail(err, LLM_ERR_NONFINITE, "adamw.step",
                                "the gradient of \"%s\" at coordinate %zu is %g; "
                                "nothing was changed", p->name, j, g);
            } else if (!isfinite(t.m) || !isfinite(t.v) || !isfinite(t.theta)) {
                return llm_fail(err, LLM_ERR_NONFINITE, "adamw.step",
                                "coordinate %zu of \"%s\" (gradient %g) would "
                                "get m = %g, v = %g, value %g; nothing was "
                                "changed",
                                j, p->name, g, t.m, t.v, t.theta);
            }
            llm_index_next(p->value.rank, p->value.shape, idx);
        }
    }
    return LLM_OK;
}
llm_status llm_adamw_step(llm_adamw *opt, llm_params *ps, llm_grad_multiplier mu,
                          double lr, llm_error *err)
{
    double wd;
    llm_status st;
    if (opt == NULL || ps == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "adamw.step",
                        "an optimiser and a parameter list are required");
    wd = opt->config.weight_decay;
    if (!(lr > 0.0) || !isfinite(lr))
        return llm_fail(err, LLM_ERR_ARGUMENT, "adamw.step",
                        "the learning rate must be positive and finite, got %g",
                        lr);
    if (wd != 0.0 && !(lr * wd > 0.0 && lr * wd < 1.0))
        return llm_fail(err, LLM_ERR_ARGUMENT, "adamw.step",
                        "the decay product lr * weight_decay = %g * %g = %g "
                        "must lie in (0, 1)", lr, wd, lr * wd);
    if (!(mu.divisor > 0.0) || !isfinite(mu.divisor)
        || !(mu.factor > 0.0) || !isfinite(mu.factor))
        return llm_fail(err, LLM_ERR_ARGUMENT, "adamw.step",
                        "the gradient multiplier needs a positive finite divisor "
                        "and factor, got %g and %g", mu.divisor, mu.factor);
    st = adamw_list_check(opt, ps, err);
    if (st == LLM_OK)
        st = adamw_sweep(opt, ps, mu, lr, 0, err);      /* check, write nothing */
    if (st != LLM_OK)
        return llm_pass(err, st, "adamw.step");
    adamw_sweep(opt, ps, mu, lr, 1, err);          /* the same terms, written */
    opt->p1 *= opt->config.beta1;
    opt->p2 *= opt->config.beta2;
    opt->steps++;
    return LLM_OK;
}
llm_status llm_params_zero_grad(llm_params *ps, llm_error *err)
{
    size_t i, j, idx[LLM_MAX_RANK];
    if (ps == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "params.zero_grad",
                        "no parameter list");
    for (i = 0; i < ps->count; i++) {
        llm_tensor *g = &ps->items[i].grad;
        memset(idx, 0, sizeof idx);
        for (j = 0; j < g->size; j++) {
            g->data[adamw_at(g, idx)] = 0.0;
            llm_index_next(g->rank, g->shape, idx);
        }
    }
    return LLM_OK;
}
