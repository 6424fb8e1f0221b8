/* tape-mlp -- times forward + backward + reset of a small MLP on the tape:
   X [512, 64] (16 sequences of 32 tokens), W1 [64, 128], SiLU, W2 [128, 64],
   mean NLL over 64 classes. Prints steps per second, nodes per second and
   bytes per node. Not part of make check: the numbers depend on the machine. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "llm/tape.h"
#include "llm/tensor.h"

enum { ROWS = 16 * 32, WIDTH = 64, HIDDEN = 128, STEPS = 200 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* deterministic values in [-0.5, 0.5) */
static void fill(llm_tensor *t, unsigned seed)
{
    size_t i;
    unsigned s = seed;
    for (i = 0; i < t->size; i++) {
        s = s * 1103515245u + 12345u;
        t->data[i] = (double)(s >> 8 & 0xffff) / 65536.0 - 0.5;
    }
}

/* one training step's graph: forward, backward, reset; *nodes and *bytes
   describe the tape just before the reset */
static llm_status step(llm_tape *tape, const llm_tensor *x, const llm_tensor *w1,
                       llm_tensor *g1, const llm_tensor *w2, llm_tensor *g2,
                       const size_t *targets, size_t *nodes, size_t *bytes,
                       llm_error *err)
{
    llm_var vx, v1, v2, z, h, logits, loss;
    llm_node_info n;
    size_t i;
    llm_status st = llm_tape_constant(tape, x, &vx, err);
    if (st == LLM_OK) st = llm_tape_leaf(tape, w1, g1, &v1, err);
    if (st == LLM_OK) st = llm_tape_leaf(tape, w2, g2, &v2, err);
    if (st == LLM_OK) st = llm_tape_matmul(tape, vx, v1, 0, 0, &z, err);
    if (st == LLM_OK) st = llm_tape_silu(tape, z, &h, err);
    if (st == LLM_OK) st = llm_tape_matmul(tape, h, v2, 0, 0, &logits, err);
    if (st == LLM_OK) st = llm_tape_nll_mean(tape, logits, targets, ROWS, &loss, err);
    if (st == LLM_OK) {
        *nodes = tape->count;
        *bytes = tape->count * llm_tape_node_size();
        for (i = 0; i < tape->count
                    && (st = llm_tape_node(tape, i, &n, err)) == LLM_OK; i++)
            /* the values the tape owns, and the adjoints */
            *bytes += (n.value->owns ? n.value->size * sizeof(double) : 0)
                    + (n.needs_grad ? n.value->size * sizeof(double) : 0);
        if (st == LLM_OK)
            st = llm_tape_backward(tape, loss, NULL, 0, err);
    }
    return st == LLM_OK ? llm_tape_reset(tape, err) : st;
}

int main(void)
{
    const size_t sx[2] = {ROWS, WIDTH}, s1[2] = {WIDTH, HIDDEN},
                 s2[2] = {HIDDEN, WIDTH};
    static size_t targets[ROWS];
    llm_tensor x, w1, w2, g1, g2;
    llm_tape tape;
    llm_error err;
    size_t i, nodes = 0, bytes = 0;
    double t0, t1;
    llm_status st;

    for (i = 0; i < ROWS; i++)
        targets[i] = i * 7 % WIDTH;
    if (llm_tensor_zeros(&x, 2, sx, &err) || llm_tensor_zeros(&w1, 2, s1, &err) ||
        llm_tensor_zeros(&w2, 2, s2, &err) || llm_tensor_zeros(&g1, 2, s1, &err) ||
        llm_tensor_zeros(&g2, 2, s2, &err) || llm_tape_init(&tape, 16, &err)) {
        fprintf(stderr, "tape-mlp: %s\n", err.message);
        return 1;
    }
    fill(&x, 1);
    fill(&w1, 2);
    fill(&w2, 3);
    /* a warm-up step */
    st = step(&tape, &x, &w1, &g1, &w2, &g2, targets, &nodes, &bytes, &err);
    t0 = now();
    for (i = 0; i < STEPS && st == LLM_OK; i++)
        st = step(&tape, &x, &w1, &g1, &w2, &g2, targets, &nodes, &bytes, &err);
    t1 = now();
    if (st != LLM_OK) {
        fprintf(stderr, "tape-mlp: %s: %s\n", err.stage, err.message);
        return 1;
    }
    printf("tape-mlp: X [%d, %d] -> W1 [%d, %d] -> SiLU -> W2 [%d, %d] -> mean NLL\n",
           ROWS, WIDTH, WIDTH, HIDDEN, HIDDEN, WIDTH);
    printf("steps=%d time=%.3f s  %.1f steps/s  %.2f ms/step\n", STEPS, t1 - t0,
           STEPS / (t1 - t0), 1e3 * (t1 - t0) / STEPS);
    printf("nodes/step=%zu  %.0f nodes/s  %.0f bytes/node (values and adjoints)\n",
           nodes, (double)nodes * STEPS / (t1 - t0), (double)bytes / (double)nodes);
    llm_tape_free(&tape);
    llm_tensor_free(&x); llm_tensor_free(&w1); llm_tensor_free(&w2);
    llm_tensor_free(&g1); llm_tensor_free(&g2);
    return 0;
}
