/* decoder-step -- times training steps of chapter 41's decoder: V = 79,
   D = 64, 2 blocks of 2 heads, F = 128, contexts of 32 tokens in batches of
   16. Prints milliseconds per step for the forward pass with the loss, the
   backward pass and the AdamW step (medians over the timed steps), nodes
   and bytes per step. Not part of make check: the numbers depend on the
   machine. With an argument FILE it also writes, one %a per line, the bits
   of the first step's loss, logits and gradients and of the parameters
   after the last step: two builds of the library compute the same step
   exactly when their files are the same. */
#define _XOPEN_SOURCE 700
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "llm/model.h"
#include "llm/train.h"

enum { BATCH = 16, CONTEXT = 32, WARM = 3, TIMED = 15, PHASES = 3 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
/* page faults so far: each is a page the process touches for the first
   time since it was given back to the system */
static double faults(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_minflt : 0.0;
}
static int by_value(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}
/* the nodes on the tape and the bytes they hold: the node array, each
   owned value and, during the backward pass, each adjoint */
static size_t tape_bytes(const llm_tape *tape)
{
    size_t i, bytes = tape->count * sizeof(llm_node);
    for (i = 0; i < tape->count; i++) {
        const llm_node *n = &tape->nodes[i];
        bytes += (n->value.owns ? n->value.size * sizeof(double) : 0)
               + (n->needs_grad ? n->value.size * sizeof(double) : 0);
    }
    return bytes;
}
/* the n doubles at x, one hexadecimal float per line */
static void dump(FILE *f, const double *x, size_t n)
{
    size_t i;
    for (i = 0; f != NULL && i < n; i++)
        fprintf(f, "%a\n", x[i]);
}

int main(int argc, char **argv)
{
    static const llm_decoder_config cfg = {79, 64, 2, 128, 2, CONTEXT, 10000.0, 1e-6};
    static const llm_adamw_config acfg = {0.9, 0.999, 1e-8, 0.01};
    static size_t ids[BATCH * CONTEXT], targets[BATCH * CONTEXT];
    static double ms[PHASES][TIMED], pf[PHASES][TIMED];
    static const char *const names[PHASES] = {"forward", "backward", "adamw"};
    llm_params ps;
    llm_rng rng;
    llm_decoder dec;
    llm_tape tape;
    llm_adamw opt;
    llm_error err;
    llm_status st;
    size_t i, s, p, nodes = 0, bytes = 0, numbers = 0;
    double total = 0.0;
    FILE *bits = NULL;

    if (argc > 1 && (bits = fopen(argv[1], "w")) == NULL) {
        fprintf(stderr, "decoder-step: cannot write %s\n", argv[1]);
        return 1;
    }

    for (i = 0; i < BATCH * CONTEXT; i++) {      /* a fixed pseudo-text */
        ids[i] = i * 7 % cfg.vocab;
        targets[i] = (i * 7 + 1) % cfg.vocab;
    }
    llm_rng_seed(&rng, 41);
    st = llm_params_init(&ps, &err);
    if (st == LLM_OK) st = llm_decoder_init(&dec, &ps, &cfg, &rng, &err);
    if (st == LLM_OK) st = llm_tape_init(&tape, 1024, &err);
    if (st == LLM_OK) st = llm_adamw_init(&opt, &ps, &acfg, &err);
    for (s = 0; st == LLM_OK && s < WARM + TIMED; s++) {
        llm_var loss, logits;
        double t[PHASES + 1], f[PHASES + 1];
        t[0] = now();
        f[0] = faults();
        st = llm_params_zero_grad(&ps, &err);
        if (st == LLM_OK)
            st = llm_decoder_loss(&dec, &ps, &tape, ids, targets, BATCH, CONTEXT, &logits,
                                  &loss, &err);
        if (st == LLM_OK && s == 0 && bits != NULL) {
            const llm_tensor *v;
            if ((st = llm_tape_value(&tape, loss, &v, &err)) == LLM_OK)
                dump(bits, v->data + v->offset, v->size);
            if (st == LLM_OK && (st = llm_tape_value(&tape, logits, &v, &err)) == LLM_OK)
                dump(bits, v->data + v->offset, v->size);
        }
        t[1] = now();
        f[1] = faults();
        if (st == LLM_OK) {
            nodes = tape.count;
            bytes = tape_bytes(&tape);
            st = llm_tape_backward(&tape, loss, NULL, 0, &err);
        }
        for (p = 0; st == LLM_OK && s == 0 && p < ps.count; p++)
            dump(bits, ps.items[p].grad.data, ps.items[p].grad.size);
        if (st == LLM_OK)
            st = llm_tape_reset(&tape, &err);
        t[2] = now();
        f[2] = faults();
        if (st == LLM_OK)
            st = llm_adamw_step(&opt, &ps, LLM_GRAD_UNSCALED, 1e-3, &err);
        t[3] = now();
        f[3] = faults();
        for (p = 0; s >= WARM && p < PHASES; p++) {
            ms[p][s - WARM] = 1e3 * (t[p + 1] - t[p]);
            pf[p][s - WARM] = f[p + 1] - f[p];
        }
    }
    if (st != LLM_OK) {
        fprintf(stderr, "decoder-step: %s: %s\n", err.stage, err.message);
        return 1;
    }
    for (p = 0; p < ps.count; p++) {
        numbers += ps.items[p].value.size;
        dump(bits, ps.items[p].value.data, ps.items[p].value.size);
    }
    if (bits != NULL && fclose(bits) != 0) {
        fprintf(stderr, "decoder-step: cannot write %s\n", argv[1]);
        return 1;
    }
    printf("decoder V=%zu D=%zu L=%zu H=%zu F=%zu batch=%d context=%d parameters=%zu\n",
           cfg.vocab, cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.d_ff, BATCH, CONTEXT,
           numbers);
    for (p = 0; p < PHASES; p++) {
        qsort(ms[p], TIMED, sizeof ms[p][0], by_value);
        qsort(pf[p], TIMED, sizeof pf[p][0], by_value);
        total += ms[p][TIMED / 2];
        printf("%-8s %8.2f ms/step %7.0f page faults/step (medians of %d)\n", names[p],
               ms[p][TIMED / 2], pf[p][TIMED / 2], TIMED);
    }
    printf("step     %8.2f ms (sum of the medians)\n", total);
    printf("nodes/step=%zu bytes/step=%zu\n", nodes, bytes);
    llm_adamw_free(&opt);
    llm_tape_free(&tape);
    llm_decoder_free(&dec);
    llm_params_free(&ps);
    return 0;
}
