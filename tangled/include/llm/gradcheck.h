/* llm/gradcheck.h -- the gradient-checking module: central differences,
   the scaled error and the check of analytic gradients against them.
   Built by chapter 13. */
#ifndef LLM_GRADCHECK_H
#define LLM_GRADCHECK_H

#include <stddef.h>

#include "llm/error.h"
#include "llm/tensor.h"

/* An objective: reads theta, writes one value. Returns LLM_OK or its own
   error; it must not keep theta or change it. */
typedef llm_status (*llm_objective)(void *ctx, const llm_tensor *theta,
                                    double *value, llm_error *err);

/* One finite difference: the estimate, the distances the stored probes
   actually moved, and the left and right slopes. */
typedef struct llm_difference {
    double estimate;
    double h_minus, h_plus;          /* theta - fl(theta - h), fl(theta + h) - theta */
    double slope_minus, slope_plus;  /* (f(theta) - f(lo))/h_minus,
                                        (f(hi) - f(theta))/h_plus */
} llm_difference;

/* Estimates df/dtheta[flat] by the weighted three-point difference. Element
   flat (row-major) of theta is perturbed in place and its exact bits are
   restored before returning, also on failure; *out is written on success.
   Errors: LLM_ERR_ARGUMENT (null f, theta, its data or out; h not positive
   and finite), LLM_ERR_CONTIGUITY (theta is a strided view),
   LLM_ERR_INDEX (flat >= theta->size), LLM_ERR_NONFINITE (the element is not
   finite, a probe overflows or equals theta because h is too small for it,
   the objective returns NaN or an infinity, or the estimate overflows), and
   any error of the objective, passed through. */
llm_status llm_central_difference(llm_objective f, void *ctx, llm_tensor *theta,
                                  size_t flat, double h, llm_difference *out,
                                  llm_error *err);
/* |a/s - n/s| with s = max(1, |a|, |n|); +infinity when a or n is not
   finite. Never fails. */
double llm_gradient_error(double analytic, double numeric);
/* The midpoints of count equal blocks of 0..size-1, ascending and distinct:
   coords[k] = floor((2k + 1) * size / (2 * count)).
   Errors: LLM_ERR_ARGUMENT (count is 0 or exceeds size, coords is NULL).
   On failure coords is not touched. */
llm_status llm_gradient_coords(size_t size, size_t count, size_t *coords,
                               llm_error *err);
/* Compares analytic (theta->size values, row-major) with the weighted
   difference at coords[0..ncoords-1]; *worst is the largest scaled error,
   *failures the number above tolerance. Both are written on success only;
   theta's bits are unchanged in every case.
   Errors: LLM_ERR_ARGUMENT (a null pointer, ncoords = 0, h or tolerance not
   positive and finite), LLM_ERR_INDEX (a coordinate >= theta->size, found
   before any evaluation), and those of llm_central_difference. */
llm_status llm_gradient_check(llm_objective f, void *ctx, llm_tensor *theta,
                              const double *analytic, const size_t *coords,
                              size_t ncoords, double h, double tolerance,
                              double *worst, size_t *failures, llm_error *err);

#endif
