/* llm/optim.h -- the optimisation module: AdamW, the global gradient norm
   and its clipping. Built by chapter 22; chapter 33 will add learning-rate
   schedules. */
#ifndef LLM_OPTIM_H
#define LLM_OPTIM_H

#include <stddef.h>

#include "llm/error.h"
#include "llm/params.h"

/* AdamW's fixed hyper-parameters; the learning rate comes with each step. */
typedef struct llm_adamw_config {
    double beta1;         /* decay rate of the first moment, in [0, 1) */
    double beta2;         /* decay rate of the second moment, in [0, 1) */
    double eps;           /* added to sqrt(v_hat); positive and finite */
    double weight_decay;  /* lambda, zero or positive and finite; applied
                             to the parameters whose decay flag is set */
} llm_adamw_config;
/* The two moments of one parameter, keyed by its name. */
typedef struct llm_adamw_moment {
    char name[LLM_PARAM_NAME_MAX];  /* the parameter's name */
    llm_tensor m;                   /* first moment, the parameter's shape */
    llm_tensor v;                   /* second moment, the parameter's shape */
} llm_adamw_moment;

typedef struct llm_adamw {
    llm_adamw_config config;
    size_t steps;               /* steps taken so far, t */
    double p1, p2;              /* beta1^t and beta2^t, running products */
    llm_adamw_moment *moments;  /* one pair per parameter, parameter order */
    size_t count;               /* number of pairs */
} llm_adamw;
/* An optimiser for the parameters of ps, as they are now: one zero pair of
   moments per parameter, keyed by its name, with its shape; t = 0.
   Errors: LLM_ERR_ARGUMENT (null opt, ps or config; a hyper-parameter out
   of its domain, named in the message), LLM_ERR_ALLOC. On failure *opt is
   not touched. */
llm_status llm_adamw_init(llm_adamw *opt, const llm_params *ps,
                          const llm_adamw_config *config, llm_error *err);

/* Frees every moment and empties opt. Safe on NULL and on an empty opt. */
void llm_adamw_free(llm_adamw *opt);
/* The position of the moments kept for the parameter called name.
   Errors: LLM_ERR_ARGUMENT (null opt, name or index), LLM_ERR_NAME (no
   moments under that name). On failure *index is not touched. */
llm_status llm_adamw_find(const llm_adamw *opt, const char *name, size_t *index,
                          llm_error *err);
/* Adds x to a running norm kept as (scale, ss): the sum of squares so far
   is scale^2 * ss and scale is the largest |x| so far. Start from (0, 0);
   the norm is scale * sqrt(ss). Zeros change nothing.
   Errors: LLM_ERR_ARGUMENT (scale or ss is NULL), LLM_ERR_NONFINITE (x is
   NaN or infinite). On failure nothing changes. */
llm_status llm_norm_accumulate(double *scale, double *ss, double x,
                               llm_error *err);
/* The transform a step applies to every raw gradient coordinate g:
   (g / divisor) * factor. */
typedef struct llm_grad_multiplier {
    double divisor;  /* 1, or the largest |g| when factor alone underflows */
    double factor;
} llm_grad_multiplier;

/* Gradients used as they are. */
#define LLM_GRAD_UNSCALED ((llm_grad_multiplier){1.0, 1.0})

/* The global norm of the gradients of ps, over every coordinate in
   parameter order, and the multiplier that brings it down to max_norm:
   {1, 1} when the norm is at most max_norm, else {1, (max_norm/scale)/root},
   or {scale, max_norm/root} when that factor underflows to zero. *norm is
   +inf when the norm exceeds the largest double; the multiplier is still
   right. The gradients are not changed.
   Errors: LLM_ERR_ARGUMENT (null ps, norm or multiplier; max_norm not
   positive and finite), LLM_ERR_NONFINITE (a gradient coordinate is NaN
   or infinite). On failure *norm and *multiplier are not touched. */
llm_status llm_grad_clip_multiplier(const llm_params *ps, double max_norm,
                                    double *norm, llm_grad_multiplier *multiplier,
                                    llm_error *err);
/* Every term of one AdamW step for one coordinate. */
typedef struct llm_adamw_terms {
    double g;         /* effective gradient, (raw / divisor) * factor */
    double m, v;      /* the moments after the step */
    double m_hat;     /* m / (1 - beta1^t) */
    double v_hat;     /* v / (1 - beta2^t) */
    double adaptive;  /* lr * (m_hat / (sqrt(v_hat) + eps)) */
    double decay;     /* (lr * weight_decay) * theta when decay is set, else 0 */
    double theta;     /* theta - adaptive - decay */
} llm_adamw_terms;

/* The terms of opt's next step (t = opt->steps + 1) for one coordinate with
   value theta, raw gradient g (transformed by mu) and moments m, v, in the
   decay group when decay is nonzero. Checks nothing else and changes
   nothing: the terms may be NaN or infinite, which llm_adamw_step refuses.
   Errors: LLM_ERR_ARGUMENT (opt or terms is NULL). */
llm_status llm_adamw_coordinate(const llm_adamw *opt, llm_grad_multiplier mu,
                                double lr, int decay, double theta, double g,
                                double m, double v, llm_adamw_terms *terms,
                                llm_error *err);
/* One AdamW step over ps with learning rate lr: every coordinate of every
   parameter, in parameter order, gets the terms of llm_adamw_coordinate
   (raw gradient transformed by mu), and t advances by one. The
   gradients are read, not changed.
   Errors: LLM_ERR_ARGUMENT (null opt or ps; lr not positive and finite;
   weight decay nonzero and lr * weight_decay not in (0, 1); a divisor or
   factor not positive and finite), LLM_ERR_NAME (ps has a parameter the
   moments are not kept for, at that position, or lacks one),
   LLM_ERR_SHAPE (a value or gradient whose shape differs from its
   moments'), LLM_ERR_NONFINITE (a gradient is NaN or infinite, or a new
   value or moment would be). On failure no value, no moment and nothing
   in opt changes. */
llm_status llm_adamw_step(llm_adamw *opt, llm_params *ps, llm_grad_multiplier mu,
                          double lr, llm_error *err);

#endif
