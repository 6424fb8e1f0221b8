/* ch31-decoder-block -- x' = x + MHA(RMSNorm(x)), y = x' + FFN(RMSNorm(x')). */
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/model.h"

#define D 4
#define T 3

int main(int argc, char **argv)
{
    static const double xin[T * D] = {2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0};
    llm_trace tr;
    llm_tape tape;
    llm_error err;
    llm_params ps;
    llm_rng rng;
    llm_block blk;
    llm_rope rope;
    llm_tensor tx;
    llm_var x, y;
    const llm_tensor *o;
    const size_t shape[3] = {1, T, D};
    size_t i, j, n = 0;
    char buf[512];
    int ok, rc = llm_demo_start(argc, argv, "ch31-decoder-block", &tr);
    if (rc != 0)
        return rc;
    llm_rng_seed(&rng, 31);
    ok = llm_demo_ok("ch31", llm_params_init(&ps, &err), &err);
    ok = ok && llm_demo_ok("ch31", llm_block_init(&blk, &ps, "block", D, 2, D, 0.0, &rng, &err),
                           &err);
    for (i = 0; ok && i < ps.count; i++) {
        llm_tensor *w = &ps.items[i].value;
        n += w->size;
        if (w->rank == 2)
            for (j = 0; j < w->size; j++)
                w->data[j] = j / w->shape[1] == j % w->shape[1] ? 1.0 : 0.0;
    }
    ok = ok && llm_demo_ok("ch31", llm_rope_init(&rope, 2, 100.0, 6, LLM_ROPE_ADJACENT, &err),
                           &err);
    ok = ok && llm_demo_ok("ch31", llm_tape_init(&tape, 64, &err), &err);
    ok = ok && llm_demo_ok("ch31", llm_tensor_from(&tx, 3, shape, xin, T * D, &err), &err);
    ok = ok && llm_demo_ok("ch31", llm_tape_constant(&tape, &tx, &x, &err), &err);
    ok = ok && llm_demo_ok("ch31", llm_block_forward(&blk, &ps, &tape, &rope, x, 0, NULL, &y,
                                                     &err), &err);
    ok = ok && llm_demo_ok("ch31", llm_tape_value(&tape, y, &o, &err), &err);
    if (ok) {
        printf("tensors=%zu scalars=%zu\n", ps.count, n);
        printf("output=%s\n", llm_fmt_list(buf, sizeof buf, o->data, T * D, 6));
        llm_trace_value(&tr, "output", buf);
    }
    llm_tensor_free(&tx);
    llm_tape_free(&tape);
    llm_rope_free(&rope);
    llm_params_free(&ps);
    return llm_demo_finish(&tr, ok);
}
