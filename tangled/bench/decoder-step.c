/* decoder-step -- times training steps of chapter 41's decoder: V = 79,
   D = 64, 2 blocks of 2 heads, F = 128, contexts of 32 tokens in batches of
   16. Prints milliseconds and page faults per step for the forward pass
   with the loss, the backward pass and the AdamW step (medians over the
   timed steps), nodes and bytes per step, in two ways in one process: with
   buffers freed after every step (llm_alloc_keep(0)) and with the tape's
   buffers kept for the next step (the default). The two alternate, in
   rounds of one warm-up step and five timed steps, so that a machine that
   speeds up or slows down during the run favours neither. Not part of make
   check: the numbers depend on the machine. With an argument FILE it also
   writes, one %a per line, the bits of the first step's loss, logits and
   gradients and of the parameters after the first three rounds (18
   steps): two builds of the library compute the same steps exactly when
   their files are the same. */
#define _XOPEN_SOURCE 700
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "llm/model.h"
#include "llm/optim.h"

enum { BATCH = 16, CONTEXT = 32, ROUNDS = 3, WARM = 1, TIMED = 5, PHASES = 3 };

/* what the runs share: the model, its tape and optimiser, the data */
typedef struct bench {
    llm_params ps;
    llm_decoder dec;
    llm_tape tape;
    llm_adamw opt;
    size_t ids[BATCH * CONTEXT], targets[BATCH * CONTEXT];
    size_t nodes, bytes;
    FILE *bits;                /* NULL, or where the first step's bits go */
} bench;

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
    size_t i, bytes = tape->count * llm_tape_node_size();
    llm_node_info n;
    for (i = 0; i < tape->count && llm_tape_node(tape, i, &n, NULL) == LLM_OK; i++)
        bytes += (n.value->owns ? n.value->size * sizeof(double) : 0)
               + (n.needs_grad ? n.value->size * sizeof(double) : 0);
    return bytes;
}
/* the n doubles at x, one hexadecimal float per line */
static void dump(FILE *f, const double *x, size_t n)
{
    size_t i;
    for (i = 0; f != NULL && i < n; i++)
        fprintf(f, "%a\n", x[i]);
}
/* One training step, its phases timed into t and f (PHASES + 1 marks);
   dump says whether its loss, logits and gradients go to b->bits. */
static llm_status step(bench *b, int dump_bits, double *t, double *f, llm_error *err)
{
    llm_var loss, logits;
    const llm_tensor *v;
    size_t p;
    llm_status st;
    t[0] = now();
    f[0] = faults();
    st = llm_params_zero_grad(&b->ps, err);
    if (st == LLM_OK)
        st = llm_decoder_loss(&b->dec, &b->ps, &b->tape, b->ids, b->targets, BATCH,
                              CONTEXT, &logits, &loss, err);
    if (st == LLM_OK && dump_bits) {
        if ((st = llm_tape_value(&b->tape, loss, &v, err)) == LLM_OK)
            dump(b->bits, v->data + v->offset, v->size);
        if (st == LLM_OK && (st = llm_tape_value(&b->tape, logits, &v, err)) == LLM_OK)
            dump(b->bits, v->data + v->offset, v->size);
    }
    t[1] = now();
    f[1] = faults();
    if (st == LLM_OK) {
        b->nodes = b->tape.count;
        b->bytes = tape_bytes(&b->tape);
        st = llm_tape_backward(&b->tape, loss, NULL, 0, err);
    }
    for (p = 0; st == LLM_OK && dump_bits && p < b->ps.count; p++)
        dump(b->bits, b->ps.items[p].grad.data, b->ps.items[p].grad.size);
    if (st == LLM_OK)
        st = llm_tape_reset(&b->tape, err);
    t[2] = now();
    f[2] = faults();
    if (st == LLM_OK)
        st = llm_adamw_step(&b->opt, &b->ps, LLM_GRAD_UNSCALED, 1e-3, err);
    t[3] = now();
    f[3] = faults();
    return st;
}
/* One round: WARM + TIMED steps with at most keep bytes kept between them,
   the timed ones written to ms and pf from position at. */
static llm_status round_of_steps(bench *b, size_t keep, int first, size_t at,
                                 double ms[PHASES][ROUNDS * TIMED],
                                 double pf[PHASES][ROUNDS * TIMED], llm_error *err)
{
    double t[PHASES + 1], f[PHASES + 1];
    size_t s, p;
    llm_status st = LLM_OK;
    llm_alloc_keep(keep);
    for (s = 0; st == LLM_OK && s < WARM + TIMED; s++) {
        st = step(b, first && s == 0 && b->bits != NULL, t, f, err);
        for (p = 0; s >= WARM && p < PHASES; p++) {
            ms[p][at + s - WARM] = 1e3 * (t[p + 1] - t[p]);
            pf[p][at + s - WARM] = f[p + 1] - f[p];
        }
    }
    return st;
}
/* Prints the medians of one way under its title; returns the step time. */
static double report(const char *title, double ms[PHASES][ROUNDS * TIMED],
                     double pf[PHASES][ROUNDS * TIMED])
{
    static const char *const names[PHASES] = {"forward", "backward", "adamw"};
    const size_t n = ROUNDS * TIMED;
    double total = 0.0;
    size_t p;
    printf("%s\n", title);
    for (p = 0; p < PHASES; p++) {
        qsort(ms[p], n, sizeof ms[p][0], by_value);
        qsort(pf[p], n, sizeof pf[p][0], by_value);
        total += ms[p][n / 2];
        printf("  %-8s %8.2f ms/step %7.0f page faults/step (medians of %zu)\n",
               names[p], ms[p][n / 2], pf[p][n / 2], n);
    }
    printf("  step     %8.2f ms (sum of the medians)\n", total);
    return total;
}
int main(int argc, char **argv)
{
    static const llm_decoder_config cfg = {79, 64, 2, 128, 2, CONTEXT, 10000.0, 1e-6,
                                           0};
    static const llm_adamw_config acfg = {0.9, 0.999, 1e-8, 0.01};
    static double ms[2][PHASES][ROUNDS * TIMED], pf[2][PHASES][ROUNDS * TIMED];
    static bench b;
    llm_rng rng;
    llm_error err;
    llm_status st;
    size_t i, p, r, numbers = 0;
    double freed, kept;

    if (argc > 1 && (b.bits = fopen(argv[1], "w")) == NULL) {
        fprintf(stderr, "decoder-step: cannot write %s\n", argv[1]);
        return 1;
    }
    for (i = 0; i < BATCH * CONTEXT; i++) {      /* a fixed pseudo-text */
        b.ids[i] = i * 7 % cfg.vocab;
        b.targets[i] = (i * 7 + 1) % cfg.vocab;
    }
    llm_rng_seed(&rng, 41);
    st = llm_params_init(&b.ps, &err);
    if (st == LLM_OK) st = llm_decoder_init(&b.dec, &b.ps, &cfg, &rng, &err);
    if (st == LLM_OK) st = llm_tape_init(&b.tape, 1024, &err);
    if (st == LLM_OK) st = llm_adamw_init(&b.opt, &b.ps, &acfg, &err);
    for (p = 0; st == LLM_OK && p < b.ps.count; p++)
        numbers += b.ps.items[p].value.size;
    for (r = 0; st == LLM_OK && r < 2 * ROUNDS; r++) {  /* freed, kept, freed, ... */
        st = round_of_steps(&b, r % 2 == 0 ? 0 : LLM_ALLOC_KEEP, r == 0, r / 2 * TIMED,
                            ms[r % 2], pf[r % 2], &err);
        for (p = 0; st == LLM_OK && r == 2 && p < b.ps.count; p++)   /* 18 steps in */
            dump(b.bits, b.ps.items[p].value.data, b.ps.items[p].value.size);
    }
    if (st != LLM_OK) {
        fprintf(stderr, "decoder-step: %s: %s\n", err.stage, err.message);
        return 1;
    }
    if (b.bits != NULL && fclose(b.bits) != 0) {
        fprintf(stderr, "decoder-step: cannot write %s\n", argv[1]);
        return 1;
    }
    printf("decoder V=%zu D=%zu L=%zu H=%zu F=%zu batch=%d context=%d parameters=%zu\n",
           cfg.vocab, cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.d_ff, BATCH, CONTEXT,
           numbers);
    freed = report("buffers freed after every step:", ms[0], pf[0]);
    kept = report("buffers kept for the next step:", ms[1], pf[1]);
    printf("kept/freed step time: %.2f\n", kept / freed);
    printf("nodes/step=%zu bytes/step=%zu\n", b.nodes, b.bytes);
    llm_adamw_free(&b.opt);
    llm_tape_free(&b.tape);
    llm_decoder_free(&b.dec);
    llm_params_free(&b.ps);
    return 0;
}
