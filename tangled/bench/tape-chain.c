/* tape-chain -- record, differentiate and reset a long chain of small
   tensor operations; nodes per second and bytes per node. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "llm/tape.h"

enum { LINKS = 10000, REPEATS = 20 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* v = a; then alternately v = v * b and v = v + a; loss = sum_all(v).
   With b = 0.5 and a = 0.25 every value stays between 0.25 and 1. */
static int chain(llm_tape *tape, llm_tensor *a, llm_tensor *ga, llm_tensor *b,
                 llm_tensor *gb, double *forward, double *backward)
{
    llm_var va, vb, v, loss;
    llm_error err;
    size_t k;
    double t0 = now(), t1;
    int ok = llm_tape_leaf(tape, a, ga, &va, &err) == LLM_OK
          && llm_tape_leaf(tape, b, gb, &vb, &err) == LLM_OK;
    v = va;
    for (k = 0; ok && k < LINKS; k++)
        ok = (k % 2 == 0 ? llm_tape_mul(tape, v, vb, &v, &err)
                         : llm_tape_add(tape, v, va, &v, &err)) == LLM_OK;
    ok = ok && llm_tape_sum_all(tape, v, &loss, &err) == LLM_OK;
    t1 = now();
    ok = ok && llm_tape_backward(tape, loss, NULL, 0, &err) == LLM_OK
            && llm_tape_reset(tape, &err) == LLM_OK;
    *forward += t1 - t0;
    *backward += now() - t1;
    if (!ok)
        fprintf(stderr, "tape-chain: %s in %s: %s\n", llm_status_name(err.code),
                err.stage, err.message);
    return ok;
}
int main(void)
{
    const size_t shape[2] = {4, 4};
    const size_t nodes = 2 + LINKS + 1, elements = 16;
    const size_t bytes = llm_tape_node_size() + 2 * elements * sizeof(double);
    llm_tensor a, b, ga, gb;
    llm_tape tape;
    llm_error err;
    double forward = 0.0, backward = 0.0, total;
    size_t r, capacity;
    int ok;
    memset(&tape, 0, sizeof tape);
    ok = llm_tensor_zeros(&a, 2, shape, &err) == LLM_OK
      && llm_tensor_zeros(&b, 2, shape, &err) == LLM_OK
      && llm_tensor_zeros(&ga, 2, shape, &err) == LLM_OK
      && llm_tensor_zeros(&gb, 2, shape, &err) == LLM_OK
      && llm_tape_init(&tape, 16, &err) == LLM_OK;
    if (!ok)
        return 1;
    for (r = 0; r < elements; r++) {
        a.data[r] = 0.25;
        b.data[r] = 0.5;
    }
    ok = chain(&tape, &a, &ga, &b, &gb, &forward, &backward);   /* warm-up */
    capacity = tape.capacity;
    forward = backward = 0.0;
    for (r = 0; ok && r < REPEATS; r++)
        ok = chain(&tape, &a, &ga, &b, &gb, &forward, &backward);
    total = forward + backward;
    printf("tape-chain: %d links (add/mul) of [4, 4] tensors, %zu nodes, %d repeats\n",
           LINKS, nodes, REPEATS);
    printf("record:            %.3g nodes/s (%.0f ns per node)\n",
           (double)(nodes * REPEATS) / forward,
           1e9 * forward / (double)(nodes * REPEATS));
    printf("backward + reset:  %.3g nodes/s (%.0f ns per node)\n",
           (double)(nodes * REPEATS) / backward,
           1e9 * backward / (double)(nodes * REPEATS));
    printf("whole step:        %.3g nodes/s\n", (double)(nodes * REPEATS) / total);
    printf("bytes per node:    %zu (node %zu + value %zu + adjoint %zu)\n", bytes,
           llm_tape_node_size(), elements * sizeof(double), elements * sizeof(double));
    printf("node capacity:     %zu after the warm-up, %zu after the last step\n",
           capacity, tape.capacity);
    ok = ok && capacity == tape.capacity;
    llm_tape_free(&tape);
    llm_tensor_free(&a);
    llm_tensor_free(&b);
    llm_tensor_free(&ga);
    llm_tensor_free(&gb);
    return ok ? 0 : 1;
}
