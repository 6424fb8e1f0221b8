/* ch30-multi-head-attention -- two heads, RoPE, causal weights, W_O. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/attention.h"
#include "llm/evidence.h"

#define D 4
#define T 3

static int set_matrix(llm_params *ps, const char *name, const double *w)
{
    size_t i;
    if (llm_params_find(ps, name, &i, NULL) != LLM_OK)
        return 0;
    memcpy(ps->items[i].value.data, w, D * D * sizeof w[0]);
    return 1;
}

int main(int argc, char **argv)
{
    static const double eye[D * D] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    static const double swap[D * D] = {0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0};
    double xin[T * D];
    llm_trace tr;
    llm_tape tape;
    llm_error err;
    llm_params ps;
    llm_rng rng;
    llm_mha mha;
    llm_rope rope;
    llm_mha_trace mt;
    llm_tensor tx;
    llm_var x, y;
    const llm_tensor *w, *o;
    const size_t shape[3] = {1, T, D};
    char buf[512];
    int ok, rc = llm_demo_start(argc, argv, "ch30-multi-head-attention", &tr);
    if (rc != 0)
        return rc;
    xin[0] = 1; xin[1] = 0; xin[2] = 1; xin[3] = 0;
    xin[4] = cos(1.0); xin[5] = -sin(1.0); xin[6] = 0; xin[7] = 1;
    xin[8] = cos(2.0); xin[9] = -sin(2.0); xin[10] = 1; xin[11] = 1;
    llm_rng_seed(&rng, 30);
    ok = llm_demo_ok("ch30", llm_params_init(&ps, &err), &err);
    ok = ok && llm_demo_ok("ch30", llm_mha_init(&mha, &ps, "attention", D, 2, &rng, &err),
                           &err);
    ok = ok && set_matrix(&ps, "attention.query.weight", eye);
    ok = ok && set_matrix(&ps, "attention.key.weight", eye);
    ok = ok && set_matrix(&ps, "attention.value.weight", eye);
    ok = ok && set_matrix(&ps, "attention.output.weight", swap);
    ok = ok && llm_demo_ok("ch30", llm_rope_init(&rope, 2, 100.0, 6, LLM_ROPE_ADJACENT, &err),
                           &err);
    ok = ok && llm_demo_ok("ch30", llm_tape_init(&tape, 64, &err), &err);
    ok = ok && llm_demo_ok("ch30", llm_tensor_from(&tx, 3, shape, xin, T * D, &err), &err);
    ok = ok && llm_demo_ok("ch30", llm_tape_constant(&tape, &tx, &x, &err), &err);
    ok = ok && llm_demo_ok("ch30", llm_mha_forward(&mha, &ps, &tape, &rope, x, 0, &mt, &y,
                                                   &err), &err);
    ok = ok && llm_demo_ok("ch30", llm_tape_value(&tape, mt.weights, &w, &err), &err);
    ok = ok && llm_demo_ok("ch30", llm_tape_value(&tape, y, &o, &err), &err);
    if (ok) {
        printf("weights=%s\n", llm_fmt_list(buf, sizeof buf, w->data, 18, 6));
        llm_trace_value(&tr, "weights", buf);
        printf("output=%s\n", llm_fmt_list(buf, sizeof buf, o->data, 12, 6));
        llm_trace_value(&tr, "output", buf);
    }
    llm_tensor_free(&tx);
    llm_tape_free(&tape);
    llm_rope_free(&rope);
    llm_params_free(&ps);
    return llm_demo_finish(&tr, ok);
}
