/* ch28-causal-masking -- no position sees its future. */
#include <stdio.h>

#include "llm/attention.h"
#include "llm/evidence.h"

static const double fix_q[6] = {0, 3, 2, -1, 1, 1};
static const double fix_k[6] = {3, 0, -1, 2, 2, 1};
static const double fix_v[6] = {3, -3, 1, 3, -2, 4};

int main(int argc, char **argv)
{
    llm_trace tr;
    llm_tape tape;
    llm_error err;
    llm_tensor tq, tk, tv;
    llm_var q, k, v, w, o;
    const llm_tensor *wv, *ov;
    const size_t shape[2] = {3, 2};
    char buf[256];
    int ok = 1, rc = llm_demo_start(argc, argv, "ch28-causal-masking", &tr);
    if (rc != 0)
        return rc;
    ok = llm_demo_ok("ch28", llm_tape_init(&tape, 16, &err), &err);
    ok = ok && llm_demo_ok("ch28", llm_tensor_from(&tq, 2, shape, fix_q, 6, &err), &err);
    ok = ok && llm_demo_ok("ch28", llm_tensor_from(&tk, 2, shape, fix_k, 6, &err), &err);
    ok = ok && llm_demo_ok("ch28", llm_tensor_from(&tv, 2, shape, fix_v, 6, &err), &err);
    ok = ok && llm_demo_ok("ch28", llm_tape_constant(&tape, &tq, &q, &err), &err);
    ok = ok && llm_demo_ok("ch28", llm_tape_constant(&tape, &tk, &k, &err), &err);
    ok = ok && llm_demo_ok("ch28", llm_tape_constant(&tape, &tv, &v, &err), &err);
    ok = ok && llm_demo_ok("ch28", llm_tape_causal_attention(&tape, q, k, v, &w, &o, &err),
                           &err);
    ok = ok && llm_demo_ok("ch28", llm_tape_value(&tape, w, &wv, &err), &err);
    ok = ok && llm_demo_ok("ch28", llm_tape_value(&tape, o, &ov, &err), &err);
    if (ok) {
        printf("weights=%s\n", llm_fmt_list(buf, sizeof buf, wv->data, 9, 6));
        llm_trace_value(&tr, "weights", buf);
        printf("output=%s\n", llm_fmt_list(buf, sizeof buf, ov->data, 6, 6));
        llm_trace_value(&tr, "output", buf);
    }
    llm_tensor_free(&tq);
    llm_tensor_free(&tk);
    llm_tensor_free(&tv);
    llm_tape_free(&tape);
    return llm_demo_finish(&tr, ok);
}
