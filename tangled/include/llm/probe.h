/* llm/probe.h -- the demo layer: one layer run on a fresh tape, for the
   demos of chapter 19 on. In libllm-evidence.a. Built by chapter 19. */
#ifndef LLM_PROBE_H
#define LLM_PROBE_H

#include "llm/evidence.h"
#include "llm/params.h"
#include "llm/tape.h"

/* A layer's forward pass with the book's signature; a demo adapts its
   layer's function to it in one line. */
typedef llm_status (*llm_layer_fn)(const void *layer, llm_params *ps, llm_tape *tape,
                                   llm_var x, llm_var *y, llm_error *err);

typedef struct llm_probe {
    llm_layer_fn forward;
    const void *layer;
    llm_params *ps;
    size_t rank;
    const size_t *shape;   /* x's shape */
    const double *x;       /* x's values, row-major */
    const double *up;      /* dL/dy, row-major: the probe's loss is sum_i up_i y_i */
} llm_probe;

/* y = forward(x) on a fresh tape. y (room for ny values) gets y's values
   in row-major order, *yrank and yshape (room for LLM_MAX_RANK) its shape
   when not NULL. When dx is not NULL, the list's grads are zeroed and a
   backward pass from up runs: dx gets x's gradient and the grads hold this
   run's alone. An output larger than ny is refused (probe.run). */
llm_status llm_probe_run(const llm_probe *p, double *y, size_t ny, size_t *yrank,
                         size_t *yshape, double *dx, llm_error *err);

/* The value of v on tape, its elements in row-major order into out (room
   for n), and its shape into *rank and shape (room for LLM_MAX_RANK) when
   they are not NULL. A value of more than n elements is refused
   (probe.read). */
llm_status llm_probe_read(const llm_tape *tape, llm_var v, double *out, size_t n,
                          size_t *rank, size_t *shape, llm_error *err);

/* An llm_objective: L = sum_i up_i y_i for the probe, summed in row-major
   order. The checker perturbs theta in place: a parameter of the list, or
   a tensor whose data p->x points at. */
llm_status llm_probe_loss(void *probe, const llm_tensor *theta, double *value,
                          llm_error *err);

#endif
