/* ch32-decoder-model -- the seed-32 decoder: logits, loss, parameters. */
#include <stdio.h>

#include "llm/evidence.h"
#include "llm/model.h"

int main(int argc, char **argv)
{
    static const size_t ids[3] = {0, 1, 2}, targets[3] = {1, 2, 3};
    const llm_decoder_config cfg = {5, 4, 2, 4, 2, 4, 10000.0, 1e-6};
    llm_trace tr;
    llm_tape tape;
    llm_error err;
    llm_params ps;
    llm_rng rng;
    llm_decoder dec;
    llm_var logits, loss;
    const llm_tensor *z, *l;
    size_t i, n = 0;
    char buf[512];
    int ok, rc = llm_demo_start(argc, argv, "ch32-decoder-model", &tr);
    if (rc != 0)
        return rc;
    llm_rng_seed(&rng, 32);
    ok = llm_demo_ok("ch32", llm_params_init(&ps, &err), &err);
    ok = ok && llm_demo_ok("ch32", llm_decoder_init(&dec, &ps, &cfg, &rng, &err), &err);
    ok = ok && llm_demo_ok("ch32", llm_tape_init(&tape, 256, &err), &err);
    ok = ok && llm_demo_ok("ch32", llm_decoder_loss(&dec, &ps, &tape, ids, targets, 1, 3,
                                                    &logits, &loss, &err), &err);
    ok = ok && llm_demo_ok("ch32", llm_tape_value(&tape, logits, &z, &err), &err);
    ok = ok && llm_demo_ok("ch32", llm_tape_value(&tape, loss, &l, &err), &err);
    if (ok) {
        for (i = 0; i < ps.count; i++)
            n += ps.items[i].value.size;
        printf("tensors=%zu scalars=%zu\n", ps.count, n);
        printf("token_1_logits=%s\n", llm_fmt_list(buf, sizeof buf, z->data + 5, 5, 6));
        llm_trace_value(&tr, "token_1_logits", buf);
        printf("mean_loss=%s\n", llm_fmt(buf, sizeof buf, l->data[0], 6));
        llm_trace_value(&tr, "mean_loss", buf);
    }
    llm_tape_free(&tape);
    llm_decoder_free(&dec);
    llm_params_free(&ps);
    return llm_demo_finish(&tr, ok);
}
