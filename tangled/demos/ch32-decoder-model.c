/* ch32-decoder-model -- the seed-32 decoder: its stages, logits and loss,
   the tied table's one leaf, two uses and two gradients, depth, causality,
   replay, gradient checks and refusals. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/model.h"
#include "llm/probe.h"

/* The Rust course's seed-32 decoder and its input. */
static const llm_decoder_config fix_cfg = {5, 4, 2, 4, 2, 4, 10000.0, 1e-6, 0};
static const size_t fix_ids[3] = {0, 1, 2}, fix_targets[3] = {1, 2, 3};

/* The zero-layer probe: fix_cfg with L = 0, its table [5, 4], its final
   gain, its input. */
static const llm_decoder_config probe_cfg = {5, 4, 2, 4, 0, 4, 10000.0, 1e-6, 0};
static const double probe_table[20] = {0.8, -0.2, 0.1, 0.4, -0.3, 0.7, 0.2, -0.1,
                                       0.5, 0.1, -0.6, 0.3, -0.4, -0.2, 0.9, 0.1,
                                       0.2, 0.3, -0.1, 0.8};
static const double probe_gain[4] = {1.0, 0.9, 1.1, 0.8};
static const size_t probe_ids[2] = {0, 1}, probe_targets[2] = {1, 2};

/* The fixture's model and the probe, built once by setup and read by the
   sections. */
static struct {
    llm_params *ps;
    llm_decoder *dec;
    llm_tape *tape;
    double z[15];                 /* the first pass's logits [1, 3, 5], row-major */
} m;
static struct {
    llm_params *ps;
    llm_decoder *dec;
} probe;
static size_t count_scalars(const llm_params *ps)
{
    size_t i, n = 0;
    for (i = 0; i < ps->count; i++)
        n += ps->items[i].value.size;
    return n;
}

static void release_decoder(void *dec)
{
    llm_decoder_free(dec);
}

/* A decoder of configuration cfg drawn from seed 32, with a list of its
   own in *ps; both belong to d. NULL when it cannot be built. */
static llm_decoder *build(llm_demo *d, const llm_decoder_config *cfg, llm_params **ps)
{
    llm_decoder *dec;
    llm_rng rng;
    llm_rng_seed(&rng, 32);
    *ps = llm_own_params(d);
    dec = llm_own(d, sizeof *dec, release_decoder);
    return dec != NULL && LLM_TRY(d, llm_params_init(*ps, &d->err))
                   && LLM_TRY(d, llm_decoder_init(dec, *ps, cfg, &rng, &d->err))
               ? dec
               : NULL;
}
/* The probe's loss with the lookup use and the head use of the table each
   live (1) or detached (0), and the table's gradient from that loss. */
static int probe_roles(llm_demo *d, int lookup, int head, double *loss, double grad[20])
{
    static const size_t shape[2] = {1, 2};
    llm_tape *tape = llm_own_tape(d);
    llm_params *ps = probe.ps;
    llm_var table, from, x, h, to, z, l;
    llm_error *e = &d->err;
    if (!(tape != NULL && LLM_TRY(d, llm_tape_init(tape, 32, e))
          && LLM_TRY(d, llm_params_zero_grad(ps, e))
          && LLM_TRY(d, llm_param_leaf(tape, ps, probe.dec->embedding.weight, &table,
                                       e))))
        return 0;
    from = to = table;
    if (!((lookup || LLM_TRY(d, llm_tape_detach(tape, table, &from, e)))
          && LLM_TRY(d, llm_tape_gather(tape, from, probe_ids, 2, shape, &x, e))
          && LLM_TRY(d, llm_rmsnorm_forward(&probe.dec->final_norm, ps, tape, x, &h, e))
          && (head || LLM_TRY(d, llm_tape_detach(tape, table, &to, e)))
          && LLM_TRY(d, llm_tape_matmul(tape, h, to, 0, 1, &z, e))
          && LLM_TRY(d, llm_tape_nll_mean(tape, z, probe_targets, 2, &l, e))
          && LLM_TRY(d, llm_probe_read(tape, l, loss, 1, NULL, NULL, e))
          && LLM_TRY(d, llm_tape_backward(tape, l, NULL, 0, e))))
        return 0;
    memcpy(grad, ps->items[0].grad.data, 20 * sizeof *grad);
    return 1;
}
typedef struct seq_loss {
    const llm_decoder *dec;
    const size_t *ids, *targets;
    size_t T;
} seq_loss;

static const size_t unit_shape[1] = {1};
static const double unit_zero[1] = {0.0}, unit_one[1] = {1.0};

static llm_status loss_layer(const void *layer, llm_params *ps, llm_tape *tape,
                             llm_var x, llm_var *y, llm_error *e)
{
    const seq_loss *s = layer;
    (void)x;
    return llm_decoder_loss(s->dec, ps, tape, s->ids, s->targets, 1, s->T, NULL, y, e);
}

/* Every coordinate of every tensor of p's list against central differences of
   p's loss, adding to *worst and *failed; each tensor's row and line if each. */
static int check_list(llm_demo *d, llm_probe *p, int each, double *worst,
                      size_t *failed)
{
    static const size_t all[20] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
                                   10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
    double w;
    size_t i, failures;
    for (i = 0; i < p->ps->count; i++) {
        llm_param *q = &p->ps->items[i];
        if (!LLM_TRY(d, llm_gradient_check(llm_probe_loss, p, &q->value, q->grad.data,
                                           all, q->value.size, 1e-6, 2e-5, &w,
                                           &failures, &d->err)))
            return 0;
        if (each) {
            llm_row(d, "grads", llm_text("probe `%s`", q->name),
                    llm_text("%zu", q->value.size), llm_text("%.1e", w),
                    failures == 0 ? "pass" : "fail", NULL);
            printf("gradcheck probe %s coordinates=%zu worst=%s verdict=%s\n",
                   q->name, q->value.size, llm_text("%.1e", w),
                   failures == 0 ? "pass" : "fail");
        }
        *worst = fmax(*worst, w);
        *failed += failures;
    }
    return 1;
}
static void setup(llm_demo *d)
{
    printf("config=vocab:5 d_model:4 heads:2 head_width:2 d_ff:4 layers:2 context:4 "
           "rope_base:10000 eps:1e-06 seed:32\n");
    printf("tokens=[0, 1, 2] targets=[1, 2, 3]\n");
    m.dec = build(d, &fix_cfg, &m.ps);
    m.tape = llm_own_tape(d);
    probe.dec = build(d, &probe_cfg, &probe.ps);
    if (probe.dec == NULL || !LLM_TRY(d, llm_tape_init(m.tape, 256, &d->err)))
        return;
    memcpy(probe.ps->items[0].value.data, probe_table, sizeof probe_table);
    memcpy(probe.ps->items[1].value.data, probe_gain, sizeof probe_gain);
}
static void first_pass(llm_demo *d)
{
    static const char *const label[4] = {
        "$h_0 = E[z]$", "$h_1 = B_1(h_0)$", "$h_2 = B_2(h_1)$",
        "$\\hat h = \\operatorname{RMSNorm}(h_2)$"};
    static const char *const key[4] = {"embedding", "block_0", "block_1", "final_norm"};
    const double *weight = m.ps->items[m.dec->embedding.weight].value.data;
    const char *names = "";
    llm_error *e = &d->err;
    llm_var hidden[4], logits, lz, loss;
    llm_node_info n;
    double rows[12], z2[15], mean;
    size_t shape[LLM_MAX_RANK], rank, s, i, j, k, t, v, best[3];
    size_t leaves = 0, leaf = 0, uses = 0, reached = 0, biases = 0;
    size_t scalars = count_scalars(m.ps), VD = fix_cfg.vocab * fix_cfg.d_model;
    if (!LLM_TRY(d, llm_decoder_forward(m.dec, m.ps, m.tape, fix_ids, 1, 3, 0, hidden,
                                        &logits, e)))
        return;
    for (s = 0; s < 4; s++) {
        if (!LLM_TRY(d, llm_probe_read(m.tape, hidden[s], rows, 12, &rank, shape, e)))
            return;
        printf("stage %s shape=%s", key[s],
               llm_put(d, llm_text("shape_%s", key[s]), llm_sizes(shape, rank)));
        printf(" t=1 row=%s\n", llm_nums(rows + 4, 4, 6));
        llm_row(d, "stages", label[s], llm_sizes(shape, rank), llm_num(rows[4], 6),
                llm_num(rows[5], 6), llm_num(rows[6], 6), llm_num(rows[7], 6), NULL);
    }
    for (i = 0; i < m.tape->count && llm_tape_node(m.tape, i, &n, NULL) == LLM_OK; i++)
        if (n.op == &llm_op_leaf && n.value->data == weight) {
            leaves++;
            leaf = i;
        }
    for (j = 0; leaves == 1 && j < m.tape->count; j++)
        for (k = 0; llm_tape_node(m.tape, j, &n, NULL) == LLM_OK && k < n.nargs; k++)
            if (n.arg[k] == leaf)
                names = llm_text(uses++ ? "%s, %s" : "%s%s", names, llm_op_name(n.op));
    printf("tape token_embedding.weight leaves=%s",
           llm_put(d, "leaves", llm_text("%zu", leaves)));
    printf(" uses=%s", llm_put(d, "uses", llm_text("%zu", uses)));
    printf(" (%s)\n", llm_put(d, "uses_ops", names));
    llm_demo_check(d, leaves == 1 && uses == 2, "the table is one leaf with two uses");
    if (!LLM_TRY(d, llm_probe_read(m.tape, logits, m.z, 15, NULL, NULL, e)))
        return;
    for (t = 0; t < 3; t++) {
        const double *z = m.z + 5 * t;
        for (best[t] = 0, v = 1; v < 5; v++)
            if (z[v] > z[best[t]])
                best[t] = v;
        printf("logits t=%zu row=%s argmax=%zu target=%zu\n", t, llm_nums(z, 5, 6),
               best[t], fix_targets[t]);
        llm_row(d, "logits", llm_text("$t = %zu$", t), llm_num(z[0], 6),
                llm_num(z[1], 6), llm_num(z[2], 6), llm_num(z[3], 6), llm_num(z[4], 6),
                llm_text("%zu", best[t]), llm_text("%zu", fix_targets[t]), NULL);
    }
    printf("token_1_logits=%s\n",
           llm_put(d, "token_1_logits", llm_nums(m.z + 5, 5, 6)));
    llm_put(d, "shape_logits", "[1, 3, 5]");
    printf("predictions=%s\n", llm_put(d, "predictions", llm_sizes(best, 3)));
    if (!(LLM_TRY(d, llm_tape_reset(m.tape, e))
          && LLM_TRY(d, llm_decoder_loss(m.dec, m.ps, m.tape, fix_ids, fix_targets,
                                         1, 3, &lz, &loss, e))
          && LLM_TRY(d, llm_probe_read(m.tape, lz, z2, 15, NULL, NULL, e))
          && LLM_TRY(d, llm_probe_read(m.tape, loss, &mean, 1, NULL, NULL, e))
          && LLM_TRY(d, llm_tape_backward(m.tape, loss, NULL, 0, e))))
        return;
    printf("mean_loss=%s", llm_put(d, "mean_loss", llm_num(mean, 6)));
    printf(" loss_logits=%s\n",
           memcmp(m.z, z2, sizeof z2) == 0 ? "bit-identical" : "different");
    for (i = 0; i < m.ps->count; i++) {
        const llm_tensor *g = &m.ps->items[i].grad;
        int finite = 1, nonzero = 0;
        for (k = 0; k < g->size; k++) {
            finite = finite && isfinite(g->data[g->offset + k]);
            nonzero = nonzero || g->data[g->offset + k] != 0.0;
        }
        reached += finite && nonzero;
    }
    printf("stack_gradients=%s finite and non-zero\n",
           llm_put(d, "stack_gradients", llm_text("%zu/%zu", reached, m.ps->count)));
    llm_demo_check(d, memcmp(m.z, z2, sizeof z2) == 0,
                   "the loss's logits are the forward's");
    llm_demo_check(d, reached == m.ps->count,
                   "a finite, non-zero gradient in every tensor");
    (void)LLM_TRY(d, llm_tape_reset(m.tape, e));
    for (i = 0; i < m.ps->count; i++) {
        const llm_param *p = &m.ps->items[i];
        biases += strstr(p->name, "bias") != NULL;
        llm_row(d, "params", llm_text("%zu", i), llm_text("`%s`", p->name),
                llm_sizes(p->value.shape, p->value.rank),
                llm_text("%zu", p->value.size), NULL);
    }
    printf("parameters tensors=%s",
           llm_put(d, "tensors", llm_text("%zu", m.ps->count)));
    printf(" scalars=%s", llm_put(d, "scalars", llm_text("%zu", scalars)));
    printf(" untied_scalars=%s", llm_put(d, "untied", llm_text("%zu", scalars + VD)));
    printf(" saved=%s biases=%zu\n", llm_put(d, "saved", llm_text("%zu", VD)), biases);
    printf("names first=%s", llm_put(d, "first_name", m.ps->items[0].name));
    printf(" tenth=%s", llm_put(d, "tenth_name", m.ps->items[9].name));
    printf(" last=%s\n", llm_put(d, "last_name", m.ps->items[m.ps->count - 1].name));
    llm_demo_check(d, m.ps->count == 20 && scalars == 264 && biases == 0,
                   "20 tensors, 264 scalars, no bias");
}
static void other_models(llm_demo *d)
{
    static const size_t stage_shape[3] = {1, 3, 4}, logit_shape[3] = {1, 3, 5};
    static const size_t changed[3] = {0, 1, 4};
    llm_decoder_config cfg = fix_cfg;
    llm_error *e = &d->err;
    const char *row[3];
    llm_var hidden[4], logits;
    llm_params *ps;
    llm_decoder *dec;
    double rows[12], z[15];       /* after the loop, the depth-2 model's logits */
    size_t shape[LLM_MAX_RANK], rank, L, s, t, scalars;
    int all = 1, valid, replay;
    for (L = 0; L < 3; L++) {
        llm_tape *tape = llm_own_tape(d);
        cfg.n_layers = L;
        dec = build(d, &cfg, &ps);
        if (!(dec != NULL && LLM_TRY(d, llm_tape_init(tape, 256, e))
              && LLM_TRY(d, llm_decoder_forward(dec, ps, tape, fix_ids, 1, 3, 0, hidden,
                                                &logits, e))))
            return;
        scalars = count_scalars(ps);
        valid = ps->count == 2 + 9 * L && scalars == 20 + 120 * L + 4;
        for (s = 0; s < L + 2; s++) {
            if (!LLM_TRY(d, llm_probe_read(tape, hidden[s], rows, 12, &rank, shape, e)))
                return;
            valid = valid && rank == 3
                    && memcmp(shape, stage_shape, sizeof stage_shape) == 0;
        }
        if (!LLM_TRY(d, llm_probe_read(tape, logits, z, 15, &rank, shape, e)))
            return;
        valid = valid && rank == 3
                && memcmp(shape, logit_shape, sizeof logit_shape) == 0;
        llm_row(d, "depths", llm_text("%zu", L), llm_text("%zu", ps->count),
                llm_text("%zu", scalars), llm_text("%zu", L + 2),
                llm_sizes(shape, rank), llm_yes(valid), NULL);
        printf("depth=%zu tensors=%zu scalars=%zu stages=%zu (each [1, 3, 4]) "
               "logits=%s valid=%s\n", L, ps->count, scalars, L + 2,
               llm_sizes(shape, rank), llm_yes(valid));
        all = all && valid;
    }
    replay = memcmp(z, m.z, sizeof z) == 0;
    llm_put(d, "depths_valid", llm_yes(all));
    llm_demo_check(d, all, "every depth has the formula's counts and shapes");
    if (!(LLM_TRY(d, llm_decoder_forward(m.dec, m.ps, m.tape, changed, 1, 3, 0, hidden,
                                         &logits, e))
          && LLM_TRY(d, llm_probe_read(m.tape, logits, z, 15, NULL, NULL, e))
          && LLM_TRY(d, llm_tape_reset(m.tape, e))))
        return;
    for (t = 0; t < 3; t++)
        row[t] = memcmp(z + 5 * t, m.z + 5 * t, 5 * sizeof *m.z) == 0
                     ? "bit-identical" : "changed";
    printf("causality tokens=[0, 1, 4] row_0=%s", llm_put(d, "causal_row0", row[0]));
    printf(" row_1=%s", llm_put(d, "causal_row1", row[1]));
    printf(" row_2=%s\n", llm_put(d, "causal_row2", row[2]));
    llm_demo_check(d, row[0][0] == 'b' && row[1][0] == 'b' && row[2][0] == 'c',
                   "only the last row sees the changed token");
    printf("replay seed=32 logits=%s\n",
           llm_put(d, "replay", replay ? "bit-identical" : "different"));
    llm_demo_check(d, replay, "seed 32 gives the same logits again");
}
static void gradients(llm_demo *d)
{
    seq_loss s = {probe.dec, probe_ids, probe_targets, 2};
    seq_loss sm = {m.dec, fix_ids, fix_targets, 3};
    llm_probe p = {loss_layer, &s, probe.ps, 1, unit_shape, unit_zero, unit_one};
    llm_probe pm = {loss_layer, &sm, m.ps, 1, unit_shape, unit_zero, unit_one};
    double full[20], part_in[20], part_out[20], loss[3], dec_loss, dx, decomp = 0.0;
    double worst[2] = {0.0, 0.0};   /* [0] the probe, [1] the seed-32 model */
    size_t i, v, k, rows_in = 0, rows_out = 0, failed[2] = {0, 0};
    int bitwise = 1, as_decoder;
    if (!(probe_roles(d, 1, 1, &loss[0], full)
          && probe_roles(d, 1, 0, &loss[1], part_in)
          && probe_roles(d, 0, 1, &loss[2], part_out)
          && LLM_TRY(d, llm_probe_run(&p, &dec_loss, 1, NULL, NULL, &dx, &d->err))))
        return;
    as_decoder = memcmp(full, probe.ps->items[0].grad.data, sizeof full) == 0
                 && dec_loss == loss[0] && loss[1] == loss[0] && loss[2] == loss[0];
    for (i = 0; i < 20; i++) {
        bitwise = bitwise && full[i] == part_in[i] + part_out[i];
        decomp = fmax(decomp, fabs(full[i] - part_in[i] - part_out[i]));
    }
    for (v = 0; v < 5; v++) {
        double a = 0.0, b = 0.0, f = 0.0;
        for (k = 0; k < 4; k++) {
            a += fabs(part_in[4 * v + k]);
            b += fabs(part_out[4 * v + k]);
            f += fabs(full[4 * v + k]);
        }
        rows_in += a != 0.0;
        rows_out += b != 0.0;
        llm_row(d, "roles", llm_text("%zu", v), llm_num(a, 6), llm_num(b, 6),
                llm_num(f, 6), NULL);
    }
    printf("probe loss=%s", llm_put(d, "probe_loss", llm_num(loss[0], 6)));
    printf(" lookup_rows=%s/5", llm_put(d, "rows_lookup", llm_text("%zu", rows_in)));
    printf(" output_rows=%s/5\n", llm_put(d, "rows_output", llm_text("%zu", rows_out)));
    printf("tied_gradient full=lookup+output decomposition_error=%s",
           llm_put(d, "decomp_error", llm_num(decomp, 12)));
    printf(" bitwise=%s", llm_put(d, "decomp_bitwise", llm_yes(bitwise)));
    printf(" as_decoder_loss=%s\n",
           llm_put(d, "as_decoder", as_decoder ? "bit-identical" : "different"));
    llm_demo_check(d, bitwise && as_decoder, "the full gradient is the two parts' sum");
    llm_demo_check(d, rows_in == 2 && rows_out == 5,
                   "the lookup reaches 2 rows, the head 5");
    if (!(check_list(d, &p, 1, &worst[0], &failed[0])
          && LLM_TRY(d, llm_probe_run(&pm, &dec_loss, 1, NULL, NULL, &dx, &d->err))
          && check_list(d, &pm, 0, &worst[1], &failed[1])))
        return;
    llm_row(d, "grads", llm_text("seed 32, all %zu tensors", m.ps->count),
            llm_text("%zu", count_scalars(m.ps)), llm_text("%.1e", worst[1]),
            failed[1] == 0 ? "pass" : "fail", NULL);
    printf("gradcheck model tensors=%zu coordinates=%zu worst=%s verdict=%s\n",
           m.ps->count, count_scalars(m.ps), llm_text("%.1e", worst[1]),
           failed[1] == 0 ? "pass" : "fail");
    printf("gradcheck probe coordinates=%s",
           llm_put(d, "grad_probe_coords", llm_text("%zu", count_scalars(probe.ps))));
    printf(" step=1e-06 tolerance=2e-05 worst=%s",
           llm_put(d, "grad_probe_worst", llm_text("%.1e", worst[0])));
    printf(" verdict=%s\n",
           llm_put(d, "grad_probe_verdict", failed[0] == 0 ? "pass" : "fail"));
    llm_put(d, "grad_model_worst", llm_text("%.1e", worst[1]));
    llm_put(d, "grad_model_verdict", failed[1] == 0 ? "pass" : "fail");
    llm_demo_check(d, failed[0] == 0 && failed[1] == 0, "every gradient check passes");
}
/* What the refused calls must not write. */
typedef struct outputs {
    llm_decoder other;
    llm_var out, lv, h[4];
    llm_rng r;
} outputs;
static outputs now;

/* The fixture's pass on list ps, writing into now, refused with code want. */
static void refuse(llm_demo *d, const char *what, llm_params *ps, const size_t *ids,
                   size_t batch, size_t T, size_t offset, llm_status want)
{
    llm_refuse_as(d, what, llm_decoder_forward(m.dec, ps, m.tape, ids, batch, T, offset,
                                               now.h, &now.out, &d->err), want);
}

static void refusals(llm_demo *d)
{
    static const size_t five[5] = {0, 1, 2, 3, 4}, bad_id[3] = {0, 5, 2};
    static const size_t bad_target[3] = {1, 2, 5};
    /* fix_cfg with 0 heads, with 4 heads (of width 1), with L = 1, with F = 6 */
    static const llm_decoder_config cfg[4] = {
        {5, 4, 0, 4, 2, 4, 10000.0, 1e-6, 0}, {5, 4, 4, 4, 2, 4, 10000.0, 1e-6, 0},
        {5, 4, 2, 4, 1, 4, 10000.0, 1e-6, 0}, {5, 4, 2, 6, 2, 4, 10000.0, 1e-6, 0}};
    outputs before;
    llm_decoder *other = &now.other;
    llm_params *empty = llm_own_params(d), *one_block, *wide, *ps = m.ps;
    llm_param tmp;
    llm_error *e = &d->err;
    const size_t count = m.tape->count;
    int untouched;
    memset(&now, 0x5a, sizeof now);
    llm_rng_seed(&now.r, 32);
    memcpy(&before, &now, sizeof now);
    if (empty == NULL || !LLM_TRY(d, llm_params_init(empty, e))
        || build(d, &cfg[2], &one_block) == NULL || build(d, &cfg[3], &wide) == NULL)
        return;
    llm_refuse_as(d, "configuration: 0 heads",
                  llm_decoder_init(other, empty, &cfg[0], &now.r, e), LLM_ERR_CONFIG);
    llm_refuse_as(d, "configuration: 4 heads of width 1",
                  llm_decoder_init(other, empty, &cfg[1], &now.r, e), LLM_ERR_CONFIG);
    refuse(d, "context: 5 tokens", ps, five, 1, 5, 0, LLM_ERR_INDEX);
    llm_put(d, "context_message", d->err.message);
    refuse(d, "context: 3 tokens from position 3", ps, fix_ids, 1, 3, 3, LLM_ERR_INDEX);
    refuse(d, "vocabulary: token ID 5", ps, bad_id, 1, 3, 0, LLM_ERR_INDEX);
    llm_put(d, "vocab_message", d->err.message);
    llm_refuse_as(d, "targets: target 5",
                  llm_decoder_loss(m.dec, ps, m.tape, fix_ids, bad_target, 1, 3,
                                   &now.out, &now.lv, e), LLM_ERR_TARGET);
    llm_refuse_as(d, "targets: none",
                  llm_decoder_loss(m.dec, ps, m.tape, fix_ids, NULL, 1, 3, &now.out,
                                   &now.lv, e), LLM_ERR_ARGUMENT);
    refuse(d, "batch of 0 sequences", ps, fix_ids, 0, 3, 0, LLM_ERR_EMPTY);
    refuse(d, "list: a one-block model's", one_block, fix_ids, 1, 3, 0, LLM_ERR_NAME);
    tmp = ps->items[2];
    ps->items[2] = ps->items[3];
    ps->items[3] = tmp;
    refuse(d, "list: query and key swapped", ps, fix_ids, 1, 3, 0, LLM_ERR_NAME);
    ps->items[3] = ps->items[2];
    ps->items[2] = tmp;
    llm_put(d, "name_message", d->err.message);
    refuse(d, "list: a model's with F = 6", wide, fix_ids, 1, 3, 0, LLM_ERR_SHAPE);
    llm_put(d, "shape_message", d->err.message);
    untouched = memcmp(&now, &before, sizeof now) == 0 && empty->count == 0
                && m.tape->count == count;
    printf("stream, lists, tape and handles untouched=%s\n",
           llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "the refusals changed nothing");
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {first_pass, other_models, gradients,
                                            refusals, NULL};
    return llm_demo_main(argc, argv, "ch32-decoder-model", setup, sections);
}
