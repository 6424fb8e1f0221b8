/* llm/optim.h -- the optimisation module: AdamW, the global gradient norm
   and its clipping (chapter 22); learning-rate schedules, measuring
   without a gradient and the training run with validation selection
   (chapter 33). */
#ifndef LLM_OPTIM_H
#define LLM_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "llm/error.h"
#include "llm/params.h"
#include "llm/data.h"
#include "llm/model.h"

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
/* A learning-rate schedule: rates[0 .. count-1] for steps 1 .. count, and
   the last rate for every later step; one rate is a constant schedule. */
typedef struct llm_schedule {
    const double *rates;
    size_t count;
} llm_schedule;

/* The rate of step (counted from 1) in *lr.
   Errors: LLM_ERR_ARGUMENT (a null schedule or lr; no rates; step 0; a
   rate that is not positive and finite, named by its step). Stage
   "schedule.rate". On failure *lr is not touched. */
llm_status llm_schedule_rate(const llm_schedule *s, size_t step, double *lr,
                             llm_error *err);
/* A copy of opt in *out: its configuration, step count, running products
   and every moment, in storage of its own.
   Errors: LLM_ERR_ARGUMENT (a null pointer; out is opt), LLM_ERR_ALLOC.
   Stage "adamw.copy". On failure *out is not touched. */
llm_status llm_adamw_copy(llm_adamw *out, const llm_adamw *opt, llm_error *err);
/* The documents of one partition, as training reads them. */
typedef struct llm_train_docs {
    const llm_doc *docs;
    size_t count;
    llm_partition partition;   /* which partition they are */
} llm_train_docs;

/* The token-weighted loss of the decoder on every window of set (T
   inputs, one window every stride positions), in the windows' order, in
   batches of batch windows: *out (chapter 21's llm_loss_sum) gets the sum
   of each batch's mean loss times its targets, and the targets, so that
   llm_loss_mean gives the mean over targets. Each batch's forward pass is
   recorded on tape and rewound at once: there is no backward pass, no
   gradient is read or written, and the tape is left as it was.
   Errors: LLM_ERR_ARGUMENT (a null pointer; T, stride or batch 0; T
   beyond the decoder's context), LLM_ERR_SPLIT (set is the test
   partition), LLM_ERR_EMPTY (no window), LLM_ERR_OVERFLOW, LLM_ERR_ALLOC,
   and those of llm_windows and llm_decoder_loss. Stage "optim.evaluate".
   On failure *out is not touched. */
llm_status llm_evaluate(const llm_decoder *dec, llm_params *ps, llm_tape *tape,
                        const llm_train_docs *set, size_t T, size_t stride, size_t batch,
                        llm_loss_sum *out, llm_error *err);
/* A training run's plan. */
typedef struct llm_train_config {
    size_t steps;             /* S: updates, at least 1 */
    size_t T, stride;         /* the windows: T inputs, a start every stride */
    size_t batch;             /* windows in an update batch */
    uint64_t seed;            /* the shuffle of the update epoch */
    size_t train_batch;       /* windows in a batch when the training loss is measured */
    size_t validation_batch;  /* the same for the validation loss */
    size_t every;             /* measure at step 0, every `every` steps and at S */
    llm_schedule schedule;    /* the learning rate of each step */
    double clip;              /* the largest global gradient norm an update uses */
} llm_train_config;

/* What happens in a run, in the order it happens. */
typedef enum llm_train_kind {
    LLM_TRAIN_MEASURE,   /* the training and validation losses of a checkpoint */
    LLM_TRAIN_FORWARD,   /* an update batch's loss recorded */
    LLM_TRAIN_BACKWARD,  /* its gradients accumulated, the tape emptied */
    LLM_TRAIN_FINITE,    /* the loss and every gradient checked finite */
    LLM_TRAIN_CLIP,      /* the global norm and the multiplier that bounds it */
    LLM_TRAIN_UPDATE,    /* one AdamW step at the scheduled rate */
    LLM_TRAIN_ZERO       /* the gradients cleared */
} llm_train_kind;

typedef struct llm_train_event {
    llm_train_kind kind;
    size_t step;                 /* the update, from 1; 0 for the first checkpoint */
    size_t batch;                /* FORWARD: the batch's place in the epoch */
    double loss;                 /* FORWARD: the batch's mean loss */
    double norm;                 /* CLIP: the global norm of the gradients */
    llm_grad_multiplier mu;      /* CLIP: what the update multiplies them by */
    double lr;                   /* UPDATE: the scheduled rate */
    double train, validation;    /* MEASURE: the two token-weighted losses */
    int selected;                /* MEASURE: 1 when this checkpoint is the new best */
} llm_train_event;

/* Called after each event; it may read the event, not keep it. */
typedef void (*llm_train_observer)(void *ctx, const llm_train_event *event);

/* One checkpoint of a run. */
typedef struct llm_train_point {
    size_t step;
    double train, validation;
} llm_train_point;

/* What a run gives back: the selected state and every checkpoint. */
typedef struct llm_train_result {
    llm_params params;        /* the parameters at the selected step */
    llm_adamw opt;            /* the optimiser at the selected step */
    size_t selected;          /* the step: the earliest of the lowest validation loss */
    double validation;        /* its validation loss */
    llm_train_point *points;  /* every checkpoint, step 0 first */
    size_t count;
    size_t train_windows, validation_windows;  /* windows of each partition */
    size_t train_targets, validation_targets;  /* targets each measurement weighs */
} llm_train_result;

/* Trains copies of ps and opt on train, measured on validation, as cfg
   says: checkpoint at step 0; then for step s = 1 .. S, update batch
   (s - 1) mod nb of the training windows shuffled once with cfg->seed
   (nb batches of cfg->batch), recorded (FORWARD), run backward (BACKWARD),
   checked finite (FINITE), its global norm bounded by cfg->clip (CLIP,
   chapter 22's multiplier), one AdamW step at the schedule's rate for s
   (UPDATE), gradients cleared (ZERO); a checkpoint after every cfg->every
   steps and after step S. A checkpoint measures both partitions with
   llm_evaluate, sequential batches of cfg->train_batch and
   cfg->validation_batch windows, and keeps a copy of the parameters and
   the optimiser when its validation loss is strictly below every earlier
   one: ties keep the earlier step. observe, when not NULL, hears each
   event with ctx. ps and opt are read, never changed; *out gets the
   selected state, every checkpoint and the counts, and is the caller's
   to free with llm_train_result_free.
   Errors: LLM_ERR_ARGUMENT (a null pointer; a size of 0 in cfg; a T
   beyond the decoder's context; a clip that is not positive and finite; a rate the schedule refuses, or one
   whose product with the weight decay is not in (0, 1)), LLM_ERR_SPLIT
   (train is not the training partition, or validation not the
   validation partition: the test partition never trains and never
   selects), LLM_ERR_EMPTY (a partition with no window), LLM_ERR_NONFINITE
   (a loss or a gradient that is not finite, named by its step), and
   those of llm_windows, llm_params_copy, llm_adamw_copy, llm_tape_init,
   llm_decoder_loss, llm_tape_backward and llm_adamw_step (LLM_ERR_ALLOC
   among them). Stage "optim.train". On failure *out is not touched and
   nothing the run made is left behind. */
llm_status llm_train(const llm_decoder *dec, const llm_params *ps, const llm_adamw *opt,
                     const llm_train_docs *train, const llm_train_docs *validation,
                     const llm_train_config *cfg, llm_train_observer observe, void *ctx,
                     llm_train_result *out, llm_error *err);

/* Frees what r holds and empties it. Safe on NULL and on an empty r. */
void llm_train_result_free(llm_train_result *r);

#endif
