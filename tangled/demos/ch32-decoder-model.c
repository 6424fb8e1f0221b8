/* ch32-decoder-model -- the seed-32 decoder: its stages, logits and loss,
   the tied table's one leaf, two uses and two gradients, depth, causality,
   replay, gradient checks and refusals. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/model.h"

#define DEMO "ch32"

/* The reference course's seed-32 decoder and its input. */
static const llm_decoder_config fix_cfg = {5, 4, 2, 4, 2, 4, 10000.0, 1e-6, 0};
static const size_t fix_ids[3] = {0, 1, 2}, fix_targets[3] = {1, 2, 3};

/* The zero-layer probe: its table [5, 4], its final gain, its input. */
static const double probe_table[20] = {0.8, -0.2, 0.1, 0.4, -0.3, 0.7, 0.2, -0.1,
                                       0.5, 0.1, -0.6, 0.3, -0.4, -0.2, 0.9, 0.1,
                                       0.2, 0.3, -0.1, 0.8};
static const double probe_gain[4] = {1.0, 0.9, 1.1, 0.8};
static const size_t probe_ids[2] = {0, 1}, probe_targets[2] = {1, 2};
/* n values of v, in row-major order, into out; its shape into shape/rank. */
static llm_status read_var(const llm_tape *tape, llm_var v, double *out, size_t n,
                           size_t *shape, size_t *rank, llm_error *err)
{
    const llm_tensor *t;
    llm_tensor c;
    llm_status st = llm_tape_value(tape, v, &t, err);
    if (st == LLM_OK)
        st = llm_tensor_copy(&c, t, err);
    if (st != LLM_OK)
        return st;
    if (c.size != n) {
        llm_tensor_free(&c);
        return llm_fail(err, LLM_ERR_SHAPE, "ch32.read", "%zu values, not %zu", c.size, n);
    }
    memcpy(out, c.data + c.offset, n * sizeof *out);
    if (shape != NULL) {
        memcpy(shape, t->shape, t->rank * sizeof *shape);
        *rank = t->rank;
    }
    llm_tensor_free(&c);
    return LLM_OK;
}

static size_t count_scalars(const llm_params *ps)
{
    size_t i, n = 0;
    for (i = 0; i < ps->count; i++)
        n += ps->items[i].value.size;
    return n;
}

static void zero_grads(llm_params *ps)
{
    size_t i;
    for (i = 0; i < ps->count; i++)
        memset(ps->items[i].grad.data + ps->items[i].grad.offset, 0,
               ps->items[i].grad.size * sizeof(double));
}

/* A model of the given depth built from seed 32, run on ids [1, 3]: its
   parameter counts, the shapes of its L + 2 stages and its logits. */
typedef struct run {
    size_t tensors, scalars, nstages;
    size_t stage_shape[4][LLM_MAX_RANK], stage_rank[4];
    size_t logit_shape[LLM_MAX_RANK], logit_rank;
    double logits[15];
} run;

static llm_status run_model(size_t layers, const size_t *ids, run *r, llm_error *err)
{
    llm_decoder_config cfg = fix_cfg;
    llm_params ps;
    llm_decoder dec;
    llm_tape tape;
    llm_rng rng;
    llm_var hidden[4], logits;
    double rows[12];
    size_t s;
    llm_status st;
    cfg.n_layers = layers;
    memset(&dec, 0, sizeof dec);
    memset(&tape, 0, sizeof tape);
    llm_rng_seed(&rng, 32);
    st = llm_params_init(&ps, err);
    if (st == LLM_OK)
        st = llm_decoder_init(&dec, &ps, &cfg, &rng, err);
    if (st == LLM_OK)
        st = llm_tape_init(&tape, 256, err);
    if (st == LLM_OK)
        st = llm_decoder_forward(&dec, &ps, &tape, ids, 1, 3, 0, hidden, &logits, err);
    r->tensors = ps.count;
    r->scalars = count_scalars(&ps);
    r->nstages = layers + 2;
    for (s = 0; st == LLM_OK && s < layers + 2; s++)
        st = read_var(&tape, hidden[s], rows, 12, r->stage_shape[s], &r->stage_rank[s], err);
    if (st == LLM_OK)
        st = read_var(&tape, logits, r->logits, 15, r->logit_shape, &r->logit_rank, err);
    llm_tape_free(&tape);
    llm_decoder_free(&dec);
    llm_params_free(&ps);
    return st;
}
typedef struct probe {
    llm_decoder dec;
    llm_params ps;
} probe;

static llm_status probe_build(probe *p, llm_error *err)
{
    llm_decoder_config cfg = fix_cfg;
    llm_rng rng;
    llm_status st;
    cfg.n_layers = 0;
    memset(p, 0, sizeof *p);
    llm_rng_seed(&rng, 32);
    st = llm_params_init(&p->ps, err);
    if (st == LLM_OK)
        st = llm_decoder_init(&p->dec, &p->ps, &cfg, &rng, err);
    if (st == LLM_OK) {
        memcpy(p->ps.items[0].value.data, probe_table, sizeof probe_table);
        memcpy(p->ps.items[1].value.data, probe_gain, sizeof probe_gain);
    }
    return st;
}

static void probe_free(probe *p)
{
    llm_decoder_free(&p->dec);
    llm_params_free(&p->ps);
}

/* The probe's loss with the lookup use and the head use of the table each
   live (1) or detached (0), and the table's gradient from that loss. */
static llm_status probe_roles(probe *p, int lookup, int head, double *loss,
                              double grad[20], llm_error *err)
{
    static const size_t shape[2] = {1, 2};
    llm_tape tape;
    llm_var table, from, x, h, to, z, l;
    llm_status st = llm_tape_init(&tape, 32, err);
    if (st != LLM_OK)
        return st;
    zero_grads(&p->ps);
    st = llm_param_leaf(&tape, &p->ps, p->dec.embedding.weight, &table, err);
    from = to = table;
    if (st == LLM_OK && !lookup)
        st = llm_tape_detach(&tape, table, &from, err);
    if (st == LLM_OK)
        st = llm_tape_gather(&tape, from, probe_ids, 2, shape, &x, err);
    if (st == LLM_OK)
        st = llm_rmsnorm_forward(&p->dec.final_norm, &p->ps, &tape, x, &h, err);
    if (st == LLM_OK && !head)
        st = llm_tape_detach(&tape, table, &to, err);
    if (st == LLM_OK)
        st = llm_tape_matmul(&tape, h, to, 0, 1, &z, err);
    if (st == LLM_OK)
        st = llm_tape_nll_mean(&tape, z, probe_targets, 2, &l, err);
    if (st == LLM_OK)
        st = read_var(&tape, l, loss, 1, NULL, NULL, err);
    if (st == LLM_OK)
        st = llm_tape_backward(&tape, l, NULL, 0, err);
    if (st == LLM_OK)
        memcpy(grad, p->ps.items[0].grad.data, 20 * sizeof *grad);
    llm_tape_free(&tape);
    return st;
}
typedef struct objective {
    const llm_decoder *dec;
    llm_params *ps;
    const size_t *ids, *targets;
    size_t T;
} objective;

static llm_status objective_run(objective *o, double *value, int backward, llm_error *err)
{
    llm_tape tape;
    llm_var l;
    llm_status st = llm_tape_init(&tape, 256, err);
    if (st != LLM_OK)
        return st;
    st = llm_decoder_loss(o->dec, o->ps, &tape, o->ids, o->targets, 1, o->T, NULL, &l, err);
    if (st == LLM_OK)
        st = read_var(&tape, l, value, 1, NULL, NULL, err);
    if (st == LLM_OK && backward) {
        zero_grads(o->ps);
        st = llm_tape_backward(&tape, l, NULL, 0, err);
    }
    llm_tape_free(&tape);
    return st;
}

static llm_status objective_loss(void *ctx, const llm_tensor *theta, double *value,
                                 llm_error *err)
{
    (void)theta;
    return objective_run(ctx, value, 0, err);
}

int main(int argc, char **argv)
{
    llm_trace tr;
    llm_error err;
    llm_params ps;
    llm_decoder dec;
    llm_tape tape;
    llm_rng rng;
    double z[15];
    int ok;
    int status = llm_demo_start(argc, argv, "ch32-decoder-model", &tr);
    if (status != 0)
        return status;
    memset(&ps, 0, sizeof ps);
    memset(&dec, 0, sizeof dec);
    memset(&tape, 0, sizeof tape);
    printf("chapter=32 decoder-model\n");
    printf("config=vocab:5 d_model:4 heads:2 head_width:2 d_ff:4 layers:2 context:4 "
           "rope_base:10000 eps:1e-06 seed:32\n");
    printf("tokens=[0, 1, 2] targets=[1, 2, 3]\n");
    llm_rng_seed(&rng, 32);
    ok = llm_demo_ok(DEMO, llm_params_init(&ps, &err), &err)
         && llm_demo_ok(DEMO, llm_decoder_init(&dec, &ps, &fix_cfg, &rng, &err), &err)
         && llm_demo_ok(DEMO, llm_tape_init(&tape, 256, &err), &err);
    llm_var hidden[4], logits;
    if (ok) {
        static const char *const label[4] = {
            "$h_0 = E[z]$", "$h_1 = B_1(h_0)$", "$h_2 = B_2(h_1)$",
            "$\\hat h = \\operatorname{RMSNorm}(h_2)$"};
        static const char *const key[4] = {"embedding", "block_0", "block_1", "final_norm"};
        double rows[12];
        size_t shape[LLM_MAX_RANK], rank, s, k;
        char c[6][48], buf[256];
        const char *cells[6] = {c[0], c[1], c[2], c[3], c[4], c[5]};
        ok = llm_demo_ok(DEMO, llm_decoder_forward(&dec, &ps, &tape, fix_ids, 1, 3, 0, hidden,
                                                   &logits, &err), &err);
        for (s = 0; ok && s < 4; s++) {
            ok = llm_demo_ok(DEMO, read_var(&tape, hidden[s], rows, 12, shape, &rank, &err), &err);
            if (!ok)
                break;
            llm_fmt_sizes(c[1], sizeof c[1], shape, rank);
            printf("stage %s shape=%s t=1 row=%s\n", key[s], c[1],
                   llm_fmt_list(buf, sizeof buf, rows + 4, 4, 6));
            snprintf(buf, sizeof buf, "shape_%s", key[s]);
            llm_trace_value(&tr, buf, c[1]);
            snprintf(c[0], sizeof c[0], "%s", label[s]);
            for (k = 0; k < 4; k++)
                llm_fmt(c[2 + k], sizeof c[2 + k], rows[4 + k], 6);
            llm_trace_row(&tr, "stages", 6, cells);
        }
    }
    if (ok) {
        size_t i, j, k, leaves = 0, leaf = 0, uses = 0, used = 0;
        char names[64] = "", buf[32];
        llm_node_info n;
        for (i = 0; i < tape.count && llm_tape_node(&tape, i, &n, NULL) == LLM_OK; i++)
            if (n.op == &llm_op_leaf &&
                n.value->data == ps.items[dec.embedding.weight].value.data) {
                leaves++;
                leaf = i;
            }
        for (j = 0; leaves == 1 && j < tape.count; j++)
            for (k = 0; llm_tape_node(&tape, j, &n, NULL) == LLM_OK && k < n.nargs; k++)
                if (n.arg[k] == leaf) {
                    used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                                             uses ? ", " : "", llm_op_name(n.op));
                    uses++;
                }
        printf("tape token_embedding.weight leaves=%zu uses=%zu (%s)\n", leaves, uses, names);
        snprintf(buf, sizeof buf, "%zu", leaves);
        llm_trace_value(&tr, "leaves", buf);
        snprintf(buf, sizeof buf, "%zu", uses);
        llm_trace_value(&tr, "uses", buf);
        llm_trace_value(&tr, "uses_ops", names);
        ok = leaves == 1 && uses == 2;
    }
    if (ok) {
        llm_var lz, loss;
        double z2[15], mean;
        size_t t, v, best[3], reached = 0, i, k;
        char c[8][48], buf[256];
        const char *cells[8] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]};
        int same;
        ok = llm_demo_ok(DEMO, read_var(&tape, logits, z, 15, NULL, NULL, &err), &err);
        for (t = 0; ok && t < 3; t++) {
            best[t] = 0;
            for (v = 1; v < 5; v++)
                if (z[5 * t + v] > z[5 * t + best[t]])
                    best[t] = v;
            printf("logits t=%zu row=%s argmax=%zu target=%zu\n", t,
                   llm_fmt_list(buf, sizeof buf, z + 5 * t, 5, 6), best[t], fix_targets[t]);
            snprintf(c[0], sizeof c[0], "$t = %zu$", t);
            for (v = 0; v < 5; v++)
                llm_fmt(c[1 + v], sizeof c[1 + v], z[5 * t + v], 6);
            snprintf(c[6], sizeof c[6], "%zu", best[t]);
            snprintf(c[7], sizeof c[7], "%zu", fix_targets[t]);
            llm_trace_row(&tr, "logits", 8, cells);
        }
        if (ok) {
            printf("token_1_logits=%s\n", llm_fmt_list(buf, sizeof buf, z + 5, 5, 6));
            llm_trace_value(&tr, "token_1_logits", buf);
            llm_trace_value(&tr, "shape_logits", "[1, 3, 5]");
            printf("predictions=%s\n", llm_fmt_sizes(buf, sizeof buf, best, 3));
            llm_trace_value(&tr, "predictions", buf);
            ok = llm_demo_ok(DEMO, llm_tape_reset(&tape, &err), &err)
                 && llm_demo_ok(DEMO, llm_decoder_loss(&dec, &ps, &tape, fix_ids, fix_targets, 1,
                                                       3, &lz, &loss, &err), &err)
                 && llm_demo_ok(DEMO, read_var(&tape, lz, z2, 15, NULL, NULL, &err), &err)
                 && llm_demo_ok(DEMO, read_var(&tape, loss, &mean, 1, NULL, NULL, &err), &err)
                 && llm_demo_ok(DEMO, llm_tape_backward(&tape, loss, NULL, 0, &err), &err);
        }
        if (ok) {
            same = memcmp(z, z2, sizeof z) == 0;
            printf("mean_loss=%s loss_logits=%s\n", llm_fmt(buf, sizeof buf, mean, 6),
                   same ? "bit-identical" : "different");
            llm_trace_value(&tr, "mean_loss", buf);
            for (i = 0; i < ps.count; i++) {
                int finite = 1, nonzero = 0;
                for (k = 0; k < ps.items[i].grad.size; k++) {
                    double g = ps.items[i].grad.data[ps.items[i].grad.offset + k];
                    finite = finite && isfinite(g);
                    nonzero = nonzero || g != 0.0;
                }
                reached += finite && nonzero;
            }
            snprintf(buf, sizeof buf, "%zu/%zu", reached, ps.count);
            printf("stack_gradients=%s finite and non-zero\n", buf);
            llm_trace_value(&tr, "stack_gradients", buf);
            ok = same && reached == ps.count && llm_demo_ok(DEMO, llm_tape_reset(&tape, &err), &err);
        }
    }
    if (ok) {
        size_t i, n = count_scalars(&ps), V = fix_cfg.vocab, D = fix_cfg.d_model, biases = 0;
        char c[4][80], buf[128];
        const char *cells[4] = {c[0], c[1], c[2], c[3]};
        for (i = 0; i < ps.count; i++) {
            biases += strstr(ps.items[i].name, "bias") != NULL;
            snprintf(c[0], sizeof c[0], "%zu", i);
            snprintf(c[1], sizeof c[1], "`%s`", ps.items[i].name);
            llm_fmt_sizes(c[2], sizeof c[2], ps.items[i].value.shape, ps.items[i].value.rank);
            snprintf(c[3], sizeof c[3], "%zu", ps.items[i].value.size);
            llm_trace_row(&tr, "params", 4, cells);
        }
        printf("parameters tensors=%zu scalars=%zu untied_scalars=%zu saved=%zu biases=%zu\n",
               ps.count, n, n + V * D, V * D, biases);
        printf("names first=%s tenth=%s last=%s\n", ps.items[0].name, ps.items[9].name,
               ps.items[ps.count - 1].name);
        snprintf(buf, sizeof buf, "%zu", ps.count);
        llm_trace_value(&tr, "tensors", buf);
        snprintf(buf, sizeof buf, "%zu", n);
        llm_trace_value(&tr, "scalars", buf);
        snprintf(buf, sizeof buf, "%zu", n + V * D);
        llm_trace_value(&tr, "untied", buf);
        snprintf(buf, sizeof buf, "%zu", V * D);
        llm_trace_value(&tr, "saved", buf);
        llm_trace_value(&tr, "first_name", ps.items[0].name);
        llm_trace_value(&tr, "tenth_name", ps.items[9].name);
        llm_trace_value(&tr, "last_name", ps.items[ps.count - 1].name);
        ok = ps.count == 20 && n == 264 && biases == 0;
    }
    if (ok) {
        static const size_t stage_shape[3] = {1, 3, 4}, logit_shape[3] = {1, 3, 5};
        size_t L, s, all = 1;
        run r;
        char c[6][48];
        const char *cells[6] = {c[0], c[1], c[2], c[3], c[4], c[5]};
        for (L = 0; ok && L < 3; L++) {
            int valid;
            ok = llm_demo_ok(DEMO, run_model(L, fix_ids, &r, &err), &err);
            if (!ok)
                break;
            valid = r.tensors == 2 + 9 * L && r.scalars == 20 + 120 * L + 4 &&
                    r.logit_rank == 3 && memcmp(r.logit_shape, logit_shape, sizeof logit_shape) == 0;
            for (s = 0; s < r.nstages; s++)
                valid = valid && r.stage_rank[s] == 3 &&
                        memcmp(r.stage_shape[s], stage_shape, sizeof stage_shape) == 0;
            snprintf(c[0], sizeof c[0], "%zu", L);
            snprintf(c[1], sizeof c[1], "%zu", r.tensors);
            snprintf(c[2], sizeof c[2], "%zu", r.scalars);
            snprintf(c[3], sizeof c[3], "%zu", r.nstages);
            llm_fmt_sizes(c[4], sizeof c[4], r.logit_shape, r.logit_rank);
            snprintf(c[5], sizeof c[5], "%s", valid ? "yes" : "no");
            llm_trace_row(&tr, "depths", 6, cells);
            printf("depth=%zu tensors=%s scalars=%s stages=%s (each [1, 3, 4]) logits=%s valid=%s\n",
                   L, c[1], c[2], c[3], c[4], c[5]);
            all = all && valid;
        }
        llm_trace_value(&tr, "depths_valid", all ? "yes" : "no");
        ok = ok && all;
    }
    if (ok) {
        static const size_t changed[3] = {0, 1, 4};
        run r;
        const char *row[3];
        size_t t;
        int replay;
        ok = llm_demo_ok(DEMO, run_model(2, changed, &r, &err), &err);
        for (t = 0; ok && t < 3; t++)
            row[t] = memcmp(r.logits + 5 * t, z + 5 * t, 5 * sizeof *z) == 0 ? "bit-identical"
                                                                             : "changed";
        if (ok) {
            printf("causality tokens=[0, 1, 4] row_0=%s row_1=%s row_2=%s\n", row[0], row[1],
                   row[2]);
            llm_trace_value(&tr, "causal_row0", row[0]);
            llm_trace_value(&tr, "causal_row1", row[1]);
            llm_trace_value(&tr, "causal_row2", row[2]);
            ok = row[0][0] == 'b' && row[1][0] == 'b' && row[2][0] == 'c';
        }
        ok = ok && llm_demo_ok(DEMO, run_model(2, fix_ids, &r, &err), &err);
        if (ok) {
            replay = memcmp(r.logits, z, sizeof r.logits) == 0;
            printf("replay seed=32 logits=%s\n", replay ? "bit-identical" : "different");
            llm_trace_value(&tr, "replay", replay ? "bit-identical" : "different");
            ok = replay;
        }
    }
    if (ok) {
        probe p;
        objective o;
        double full[20], part_in[20], part_out[20], loss[3], dec_loss, worst = 0.0;
        size_t i, v, k, rows_in = 0, rows_out = 0;
        int bitwise = 1, as_decoder;
        char c[4][48], buf[64];
        const char *cells[4] = {c[0], c[1], c[2], c[3]};
        ok = llm_demo_ok(DEMO, probe_build(&p, &err), &err)
             && llm_demo_ok(DEMO, probe_roles(&p, 1, 1, &loss[0], full, &err), &err)
             && llm_demo_ok(DEMO, probe_roles(&p, 1, 0, &loss[1], part_in, &err), &err)
             && llm_demo_ok(DEMO, probe_roles(&p, 0, 1, &loss[2], part_out, &err), &err);
        o.dec = &p.dec;
        o.ps = &p.ps;
        o.ids = probe_ids;
        o.targets = probe_targets;
        o.T = 2;
        ok = ok && llm_demo_ok(DEMO, objective_run(&o, &dec_loss, 1, &err), &err);
        if (ok) {
            as_decoder = memcmp(full, p.ps.items[0].grad.data, sizeof full) == 0 &&
                         dec_loss == loss[0] && loss[1] == loss[0] && loss[2] == loss[0];
            for (i = 0; i < 20; i++) {
                double sum = part_in[i] + part_out[i];
                bitwise = bitwise && full[i] == sum;
                if (fabs(full[i] - part_in[i] - part_out[i]) > worst)
                    worst = fabs(full[i] - part_in[i] - part_out[i]);
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
                snprintf(c[0], sizeof c[0], "%zu", v);
                llm_fmt(c[1], sizeof c[1], a, 6);
                llm_fmt(c[2], sizeof c[2], b, 6);
                llm_fmt(c[3], sizeof c[3], f, 6);
                llm_trace_row(&tr, "roles", 4, cells);
            }
            printf("probe loss=%s lookup_rows=%zu/5 output_rows=%zu/5\n",
                   llm_fmt(buf, sizeof buf, loss[0], 6), rows_in, rows_out);
            llm_trace_value(&tr, "probe_loss", buf);
            snprintf(buf, sizeof buf, "%zu", rows_in);
            llm_trace_value(&tr, "rows_lookup", buf);
            snprintf(buf, sizeof buf, "%zu", rows_out);
            llm_trace_value(&tr, "rows_output", buf);
            printf("tied_gradient full=lookup+output decomposition_error=%s bitwise=%s "
                   "as_decoder_loss=%s\n", llm_fmt(buf, sizeof buf, worst, 12),
                   bitwise ? "yes" : "no", as_decoder ? "bit-identical" : "different");
            llm_trace_value(&tr, "decomp_error", buf);
            llm_trace_value(&tr, "decomp_bitwise", bitwise ? "yes" : "no");
            llm_trace_value(&tr, "as_decoder", as_decoder ? "bit-identical" : "different");
            ok = bitwise && as_decoder && rows_in == 2 && rows_out == 5;
        }
        probe_free(&p);
    }
    if (ok) {
        static const size_t coords[20] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
                                          10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
        probe p;
        objective o;
        double value, worst, probe_worst = 0.0, model_worst = 0.0;
        size_t i, failures, probe_failed = 0, model_failed = 0, model_coords = 0;
        char c[4][96], buf[64];
        const char *cells[4] = {c[0], c[1], c[2], c[3]};
        ok = llm_demo_ok(DEMO, probe_build(&p, &err), &err);
        o.dec = &p.dec;
        o.ps = &p.ps;
        o.ids = probe_ids;
        o.targets = probe_targets;
        o.T = 2;
        ok = ok && llm_demo_ok(DEMO, objective_run(&o, &value, 1, &err), &err);
        for (i = 0; ok && i < 2; i++) {
            llm_param *q = &p.ps.items[i];
            ok = llm_demo_ok(DEMO, llm_gradient_check(objective_loss, &o, &q->value,
                                                      q->grad.data, coords, q->value.size,
                                                      1e-6, 2e-5, &worst, &failures, &err),
                             &err);
            if (!ok)
                break;
            snprintf(c[0], sizeof c[0], "probe `%s`", q->name);
            snprintf(c[1], sizeof c[1], "%zu", q->value.size);
            snprintf(c[2], sizeof c[2], "%.1e", worst);
            snprintf(c[3], sizeof c[3], "%s", failures == 0 ? "pass" : "fail");
            llm_trace_row(&tr, "grads", 4, cells);
            printf("gradcheck probe %s coordinates=%s worst=%s verdict=%s\n", q->name, c[1], c[2],
                   c[3]);
            probe_failed += failures;
            probe_worst = worst > probe_worst ? worst : probe_worst;
        }
        probe_free(&p);
        o.dec = &dec;
        o.ps = &ps;
        o.ids = fix_ids;
        o.targets = fix_targets;
        o.T = 3;
        ok = ok && llm_demo_ok(DEMO, objective_run(&o, &value, 1, &err), &err);
        for (i = 0; ok && i < ps.count; i++) {
            ok = llm_demo_ok(DEMO, llm_gradient_check(objective_loss, &o, &ps.items[i].value,
                                                      ps.items[i].grad.data, coords,
                                                      ps.items[i].value.size, 1e-6, 2e-5, &worst,
                                                      &failures, &err), &err);
            model_coords += ps.items[i].value.size;
            model_failed += failures;
            model_worst = worst > model_worst ? worst : model_worst;
        }
        if (ok) {
            snprintf(c[0], sizeof c[0], "seed 32, all %zu tensors", ps.count);
            snprintf(c[1], sizeof c[1], "%zu", model_coords);
            snprintf(c[2], sizeof c[2], "%.1e", model_worst);
            snprintf(c[3], sizeof c[3], "%s", model_failed == 0 ? "pass" : "fail");
            llm_trace_row(&tr, "grads", 4, cells);
            printf("gradcheck model tensors=%zu coordinates=%s worst=%s verdict=%s\n", ps.count, c[1],
                   c[2], c[3]);
            snprintf(buf, sizeof buf, "%.1e", probe_worst);
            printf("gradcheck probe coordinates=24 step=1e-06 tolerance=2e-05 worst=%s verdict=%s\n",
                   buf, probe_failed == 0 ? "pass" : "fail");
            llm_trace_value(&tr, "grad_probe_worst", buf);
            llm_trace_value(&tr, "grad_probe_verdict", probe_failed == 0 ? "pass" : "fail");
            snprintf(buf, sizeof buf, "%.1e", model_worst);
            llm_trace_value(&tr, "grad_model_worst", buf);
            llm_trace_value(&tr, "grad_model_verdict", model_failed == 0 ? "pass" : "fail");
            ok = probe_failed == 0 && model_failed == 0;
        }
    }
    if (ok) {
        static const size_t five[5] = {0, 1, 2, 3, 4}, bad_id[3] = {0, 5, 2};
        static const size_t bad_target[3] = {1, 2, 5};
        llm_decoder_config cfg;
        llm_decoder other, other_kept;
        llm_params empty, one_block, wide;
        llm_decoder d1, dw;
        llm_rng r, r_kept;
        llm_var out, out_kept, lv, lv_kept, h[4], h_kept[4];
        llm_param tmp;
        size_t count;
        llm_status st;
        int untouched;
        memset(&other, 0x5a, sizeof other);
        other_kept = other;
        memset(&out, 0x3c, sizeof out);
        out_kept = out;
        memset(&lv, 0x2d, sizeof lv);
        lv_kept = lv;
        memset(h, 0x4b, sizeof h);
        memcpy(h_kept, h, sizeof h);
        llm_rng_seed(&r, 32);
        r_kept = r;
        memset(&d1, 0, sizeof d1);
        memset(&dw, 0, sizeof dw);
        ok = llm_demo_ok(DEMO, llm_params_init(&empty, &err), &err)
             && llm_demo_ok(DEMO, llm_params_init(&one_block, &err), &err)
             && llm_demo_ok(DEMO, llm_params_init(&wide, &err), &err);
        cfg = fix_cfg;
        cfg.n_layers = 1;
        ok = ok && llm_demo_ok(DEMO, llm_decoder_init(&d1, &one_block, &cfg, &r, &err), &err);
        cfg = fix_cfg;
        cfg.d_ff = 6;
        ok = ok && llm_demo_ok(DEMO, llm_decoder_init(&dw, &wide, &cfg, &r, &err), &err);
        llm_rng_seed(&r, 32);
        count = tape.count;
        if (ok) {
            cfg = fix_cfg;
            cfg.n_heads = 0;
            st = llm_decoder_init(&other, &empty, &cfg, &r, &err);
            llm_demo_refusal(&tr, "configuration: 0 heads", st, &err);
            ok = ok && st == LLM_ERR_CONFIG;
            cfg.n_heads = 4;
            st = llm_decoder_init(&other, &empty, &cfg, &r, &err);
            llm_demo_refusal(&tr, "configuration: 4 heads of width 1", st, &err);
            ok = ok && st == LLM_ERR_CONFIG;
            st = llm_decoder_forward(&dec, &ps, &tape, five, 1, 5, 0, h, &out, &err);
            llm_demo_refusal(&tr, "context: 5 tokens", st, &err);
            llm_trace_value(&tr, "context_message", err.message);
            ok = ok && st == LLM_ERR_INDEX;
            st = llm_decoder_forward(&dec, &ps, &tape, fix_ids, 1, 3, 3, h, &out, &err);
            llm_demo_refusal(&tr, "context: 3 tokens from position 3", st, &err);
            ok = ok && st == LLM_ERR_INDEX;
            st = llm_decoder_forward(&dec, &ps, &tape, bad_id, 1, 3, 0, h, &out, &err);
            llm_demo_refusal(&tr, "vocabulary: token ID 5", st, &err);
            llm_trace_value(&tr, "vocab_message", err.message);
            ok = ok && st == LLM_ERR_INDEX;
            st = llm_decoder_loss(&dec, &ps, &tape, fix_ids, bad_target, 1, 3, &out, &lv, &err);
            llm_demo_refusal(&tr, "targets: target 5", st, &err);
            ok = ok && st == LLM_ERR_TARGET;
            st = llm_decoder_loss(&dec, &ps, &tape, fix_ids, NULL, 1, 3, &out, &lv, &err);
            llm_demo_refusal(&tr, "targets: none", st, &err);
            ok = ok && st == LLM_ERR_ARGUMENT;
            st = llm_decoder_forward(&dec, &ps, &tape, fix_ids, 0, 3, 0, h, &out, &err);
            llm_demo_refusal(&tr, "batch of 0 sequences", st, &err);
            ok = ok && st == LLM_ERR_ARGUMENT;
            st = llm_decoder_forward(&dec, &one_block, &tape, fix_ids, 1, 3, 0, h, &out, &err);
            llm_demo_refusal(&tr, "list: a one-block model's", st, &err);
            ok = ok && st == LLM_ERR_SHAPE;
            tmp = ps.items[2];
            ps.items[2] = ps.items[3];
            ps.items[3] = tmp;
            st = llm_decoder_forward(&dec, &ps, &tape, fix_ids, 1, 3, 0, h, &out, &err);
            ps.items[3] = ps.items[2];
            ps.items[2] = tmp;
            llm_demo_refusal(&tr, "list: query and key swapped", st, &err);
            llm_trace_value(&tr, "name_message", err.message);
            ok = ok && st == LLM_ERR_NAME;
            st = llm_decoder_forward(&dec, &wide, &tape, fix_ids, 1, 3, 0, h, &out, &err);
            llm_demo_refusal(&tr, "list: a model's with F = 6", st, &err);
            llm_trace_value(&tr, "shape_message", err.message);
            ok = ok && st == LLM_ERR_SHAPE;
            untouched = memcmp(&other, &other_kept, sizeof other) == 0
                        && memcmp(&out, &out_kept, sizeof out) == 0
                        && memcmp(&lv, &lv_kept, sizeof lv) == 0
                        && memcmp(h, h_kept, sizeof h) == 0
                        && memcmp(&r, &r_kept, sizeof r) == 0 && empty.count == 0
                        && tape.count == count;
            printf("stream, lists, tape and handles untouched=%s\n", untouched ? "yes" : "no");
            llm_trace_value(&tr, "untouched", untouched ? "yes" : "no");
            ok = ok && untouched;
        }
        llm_decoder_free(&d1);
        llm_decoder_free(&dw);
        llm_params_free(&empty);
        llm_params_free(&one_block);
        llm_params_free(&wide);
    }
    llm_tape_free(&tape);
    llm_decoder_free(&dec);
    llm_params_free(&ps);
    return llm_demo_finish(&tr, ok);
}
