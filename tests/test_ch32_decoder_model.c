/* Chapter 32: the decoder model -- embedding, blocks, final norm, tied head. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/error.h"
#include "llm/gradcheck.h"
#include "llm/model.h"
#include "llm/nn.h"
#include "llm/tape.h"
#include "llm/tensor.h"
#include "../tangled/src/tape_op.h"   /* white-box: the tape's nodes */
#include "support.h"

static const llm_decoder_config fix_cfg = {5, 4, 2, 4, 2, 4, 10000.0, 1e-6, 0};
static const size_t fix_ids[3] = {0, 1, 2}, fix_targets[3] = {1, 2, 3};
static const double probe_table[20] = {0.8, -0.2, 0.1, 0.4, -0.3, 0.7, 0.2, -0.1,
                                       0.5, 0.1, -0.6, 0.3, -0.4, -0.2, 0.9, 0.1,
                                       0.2, 0.3, -0.1, 0.8};
static const double probe_gain[4] = {1.0, 0.9, 1.1, 0.8};
static const size_t probe_ids[2] = {0, 1}, probe_targets[2] = {1, 2};

typedef struct model {
    llm_decoder dec;
    llm_params ps;
    llm_tape tape;
} model;

static void build(model *m, const llm_decoder_config *cfg, uint64_t seed)
{
    llm_rng rng;
    llm_rng_seed(&rng, seed);
    ck_assert_int_eq(llm_params_init(&m->ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_decoder_init(&m->dec, &m->ps, cfg, &rng, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_init(&m->tape, 256, NULL), LLM_OK);
}

static void destroy(model *m)
{
    llm_tape_free(&m->tape);
    llm_decoder_free(&m->dec);
    llm_params_free(&m->ps);
}

/* n values of v (contiguous on the tape) into out. */
static void read(const llm_tape *tape, llm_var v, double *out, size_t n)
{
    const llm_tensor *t;
    llm_tensor c;
    ck_assert_int_eq(llm_tape_value(tape, v, &t, NULL), LLM_OK);
    ck_assert_uint_eq(t->size, n);
    ck_assert_int_eq(llm_tensor_copy(&c, t, NULL), LLM_OK);
    memcpy(out, c.data + c.offset, n * sizeof *out);
    llm_tensor_free(&c);
}

static void forward_logits(const llm_decoder_config *cfg, const size_t *ids, size_t batch,
                           size_t T, size_t offset, double *z)
{
    model m;
    llm_var l;
    build(&m, cfg, 32);
    ck_assert_int_eq(llm_decoder_forward(&m.dec, &m.ps, &m.tape, ids, batch, T, offset, NULL,
                                         &l, NULL), LLM_OK);
    read(&m.tape, l, z, batch * T * cfg->vocab);
    destroy(&m);
}

static void zero_grads(llm_params *ps)
{
    size_t i;
    for (i = 0; i < ps->count; i++)
        memset(ps->items[i].grad.data, 0, ps->items[i].grad.size * sizeof(double));
}

START_TEST(test_seed_32_fixture)
{
    /* The reference course's report for this fixture. */
    static const double row1[5] = {-0.862249, 0.967613, -0.991545, -0.446363, 1.234533};
    static const size_t argmax[3] = {0, 4, 1};
    model m;
    llm_var logits, loss;
    const llm_tensor *t;
    double z[15], l;
    size_t pos, v, best;
    build(&m, &fix_cfg, 32);
    ck_assert_int_eq(llm_decoder_loss(&m.dec, &m.ps, &m.tape, fix_ids, fix_targets, 1, 3,
                                      &logits, &loss, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&m.tape, logits, &t, NULL), LLM_OK);
    ck_assert_uint_eq(t->rank, 3);
    ck_assert(t->shape[0] == 1 && t->shape[1] == 3 && t->shape[2] == 5);
    read(&m.tape, logits, z, 15);
    read(&m.tape, loss, &l, 1);
    for (v = 0; v < 5; v++)
        ck_assert(fabs(z[5 + v] - row1[v]) < 5e-7);
    ck_assert(fabs(l - 2.045535) < 5e-7);
    for (pos = 0; pos < 3; pos++) {
        for (best = 0, v = 1; v < 5; v++)
            if (z[5 * pos + v] > z[5 * pos + best])
                best = v;
        ck_assert_uint_eq(best, argmax[pos]);
    }
    destroy(&m);
}
END_TEST

START_TEST(test_parameter_layout)
{
    static const char *const part[9] = {
        "attention_norm.gain", "attention.query.weight", "attention.key.weight",
        "attention.value.weight", "attention.output.weight", "ffn_norm.gain",
        "ffn.gate.weight", "ffn.up.weight", "ffn.down.weight"};
    model m;
    char want[80];
    size_t i, n = 0;
    build(&m, &fix_cfg, 32);
    ck_assert_uint_eq(m.ps.count, 20);
    ck_assert_str_eq(m.ps.items[0].name, "token_embedding.weight");
    ck_assert(m.ps.items[0].value.shape[0] == 5 && m.ps.items[0].value.shape[1] == 4);
    for (i = 1; i < 19; i++) {
        snprintf(want, sizeof want, "blocks.%zu.%s", (i - 1) / 9, part[(i - 1) % 9]);
        ck_assert_str_eq(m.ps.items[i].name, want);
    }
    ck_assert_str_eq(m.ps.items[9].name, "blocks.0.ffn.down.weight");
    ck_assert_str_eq(m.ps.items[19].name, "final_norm.gain");
    for (i = 0; i < 20; i++) {
        ck_assert_ptr_null(strstr(m.ps.items[i].name, "head"));
        ck_assert_ptr_null(strstr(m.ps.items[i].name, "bias"));
        n += m.ps.items[i].value.size;
    }
    ck_assert_uint_eq(n, 5 * 4 + 2 * (2 * 4 + 4 * 16 + 3 * 16) + 4);
    destroy(&m);
}
END_TEST

/* The exercise's model: V 40, D 12, F 32, N 3; init draws V D + N (4 D^2 +
   3 D F) numbers, no more. */
START_TEST(test_counts_and_draws)
{
    const llm_decoder_config cfg = {40, 12, 2, 32, 3, 8, 10000.0, 1e-6, 0};
    llm_rng a, b;
    llm_params ps;
    llm_decoder dec;
    size_t i, n = 0, draws = 40 * 12 + 3 * (4 * 144 + 3 * 12 * 32);
    llm_rng_seed(&a, 7);
    llm_rng_seed(&b, 7);
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    ck_assert_int_eq(llm_decoder_init(&dec, &ps, &cfg, &a, NULL), LLM_OK);
    for (i = 0; i < ps.count; i++)
        n += ps.items[i].value.size;
    ck_assert_uint_eq(ps.count, 2 + 9 * 3);
    ck_assert_uint_eq(n, 5748);
    for (i = 0; i < draws; i++)
        (void)llm_rng_unit(&b);
    ck_assert(memcmp(&a, &b, sizeof a) == 0);
    llm_decoder_free(&dec);
    llm_decoder_free(&dec);   /* safe twice */
    llm_decoder_free(NULL);
    llm_params_free(&ps);
}
END_TEST

/* logits = hat_h E^T with E the table itself, and hat_h rows of mean
   square ~1 (gain 1); one leaf on the tape for the table. */
START_TEST(test_head_is_the_table)
{
    model m;
    llm_var hidden[4], logits;
    double h[12], z[15], want, ms;
    const double *E;
    size_t pos, v, k, i, leaves = 0, uses = 0, leaf = 0;
    build(&m, &fix_cfg, 32);
    ck_assert_int_eq(llm_decoder_forward(&m.dec, &m.ps, &m.tape, fix_ids, 1, 3, 0, hidden,
                                         &logits, NULL), LLM_OK);
    read(&m.tape, hidden[3], h, 12);
    read(&m.tape, logits, z, 15);
    E = m.ps.items[0].value.data;
    for (pos = 0; pos < 3; pos++) {
        for (ms = 0.0, k = 0; k < 4; k++)
            ms += h[4 * pos + k] * h[4 * pos + k] / 4.0;
        ck_assert(fabs(ms - 1.0) < 1e-4);
        for (v = 0; v < 5; v++) {
            for (want = 0.0, k = 0; k < 4; k++)
                want += h[4 * pos + k] * E[4 * v + k];
            ck_assert(z[5 * pos + v] == want);
        }
    }
    for (i = 0; i < m.tape.count; i++)
        if (m.tape.nodes[i].op == &llm_op_leaf && m.tape.nodes[i].value.data == E) {
            leaves++;
            leaf = i;
        }
    ck_assert_uint_eq(leaves, 1);
    for (i = 0; i < m.tape.count; i++)
        for (k = 0; k < m.tape.nodes[i].nargs; k++)
            uses += m.tape.nodes[i].arg[k] == leaf;
    ck_assert_uint_eq(uses, 2);
    destroy(&m);
}
END_TEST

/* N = 0: logits = RMSNorm(E[z]) E^T, by hand. */
START_TEST(test_zero_layers)
{
    llm_decoder_config cfg = fix_cfg;
    model m;
    llm_var hidden[2], logits;
    double z[15], e[12], x[4], ms, inv, want;
    const double *E;
    size_t pos, v, k;
    cfg.n_layers = 0;
    build(&m, &cfg, 32);
    ck_assert_uint_eq(m.ps.count, 2);
    ck_assert_int_eq(llm_decoder_forward(&m.dec, &m.ps, &m.tape, fix_ids, 1, 3, 0, hidden,
                                         &logits, NULL), LLM_OK);
    read(&m.tape, hidden[0], e, 12);
    read(&m.tape, logits, z, 15);
    E = m.ps.items[0].value.data;
    ck_assert(memcmp(e, E, 12 * sizeof *e) == 0);   /* rows 0, 1, 2 of the table */
    for (pos = 0; pos < 3; pos++) {
        for (ms = 0.0, k = 0; k < 4; k++)
            ms += E[4 * pos + k] * E[4 * pos + k];
        inv = 1.0 / sqrt(ms / 4.0 + 1e-6);
        for (k = 0; k < 4; k++)
            x[k] = E[4 * pos + k] * inv;
        for (v = 0; v < 5; v++) {
            for (want = 0.0, k = 0; k < 4; k++)
                want += x[k] * E[4 * v + k];
            ck_assert(fabs(z[5 * pos + v] - want) < 1e-12);
        }
    }
    destroy(&m);
}
END_TEST

START_TEST(test_causal_prefix)
{
    static const size_t changed[3] = {0, 1, 4};
    double a[15], b[15];
    forward_logits(&fix_cfg, fix_ids, 1, 3, 0, a);
    forward_logits(&fix_cfg, changed, 1, 3, 0, b);
    ck_assert(memcmp(a, b, 10 * sizeof *a) == 0);
    ck_assert(memcmp(a + 10, b + 10, 5 * sizeof *a) != 0);
}
END_TEST

/* Two sequences in one batch give each sequence's own logits; a window
   moved by one position gives the same logits up to rounding (RoPE is
   relative); a second build from the same seed gives the same bits. */
START_TEST(test_batch_offset_replay)
{
    static const size_t two[6] = {0, 1, 2, 3, 4, 0}, second[3] = {3, 4, 0};
    double both[30], one[15], other[15], moved[15], again[15];
    size_t i;
    forward_logits(&fix_cfg, two, 2, 3, 0, both);
    forward_logits(&fix_cfg, fix_ids, 1, 3, 0, one);
    forward_logits(&fix_cfg, second, 1, 3, 0, other);
    for (i = 0; i < 15; i++) {
        ck_assert(fabs(both[i] - one[i]) < 1e-14);
        ck_assert(fabs(both[15 + i] - other[i]) < 1e-14);
    }
    forward_logits(&fix_cfg, fix_ids, 1, 3, 1, moved);
    for (i = 0; i < 15; i++)
        ck_assert(fabs(moved[i] - one[i]) < 1e-12);
    forward_logits(&fix_cfg, fix_ids, 1, 3, 0, again);
    ck_assert(memcmp(one, again, sizeof one) == 0);
}
END_TEST

/* The probe: a zero-layer decoder with the course's table and gain. */
static void probe_build(model *m)
{
    llm_decoder_config cfg = fix_cfg;
    cfg.n_layers = 0;
    build(m, &cfg, 32);
    memcpy(m->ps.items[0].value.data, probe_table, sizeof probe_table);
    memcpy(m->ps.items[1].value.data, probe_gain, sizeof probe_gain);
}

/* The table's gradient with the lookup and the head use live or detached. */
static void probe_roles(model *m, int lookup, int head, double grad[20])
{
    static const size_t shape[2] = {1, 2};
    llm_var table, from, x, h, to, z, l;
    ck_assert_int_eq(llm_tape_reset(&m->tape, NULL), LLM_OK);
    zero_grads(&m->ps);
    ck_assert_int_eq(llm_param_leaf(&m->tape, &m->ps, 0, &table, NULL), LLM_OK);
    from = to = table;
    if (!lookup)
        ck_assert_int_eq(llm_tape_detach(&m->tape, table, &from, NULL), LLM_OK);
    if (!head)
        ck_assert_int_eq(llm_tape_detach(&m->tape, table, &to, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_gather(&m->tape, from, probe_ids, 2, shape, &x, NULL), LLM_OK);
    ck_assert_int_eq(llm_rmsnorm_forward(&m->dec.final_norm, &m->ps, &m->tape, x, &h, NULL),
                     LLM_OK);
    ck_assert_int_eq(llm_tape_matmul(&m->tape, h, to, 0, 1, &z, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_nll_mean(&m->tape, z, probe_targets, 2, &l, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&m->tape, l, NULL, 0, NULL), LLM_OK);
    memcpy(grad, m->ps.items[0].grad.data, 20 * sizeof *grad);
}

START_TEST(test_tied_gradient_is_the_sum)
{
    model m;
    llm_var l;
    double full[20], in[20], out[20];
    size_t i;
    probe_build(&m);
    probe_roles(&m, 1, 1, full);
    probe_roles(&m, 1, 0, in);
    probe_roles(&m, 0, 1, out);
    for (i = 0; i < 20; i++) {
        ck_assert(full[i] == in[i] + out[i]);
        if (i >= 8)                   /* rows 2..4: no input token picked them */
            ck_assert(in[i] == 0.0);
    }
    for (i = 0; i < 5; i++)           /* every row receives a logit, so a gradient */
        ck_assert(out[4 * i] != 0.0 || out[4 * i + 1] != 0.0 || out[4 * i + 2] != 0.0 ||
                  out[4 * i + 3] != 0.0);
    ck_assert(in[0] != 0.0 && in[4] != 0.0);
    /* the decoder's own loss gives the full gradient */
    ck_assert_int_eq(llm_tape_reset(&m.tape, NULL), LLM_OK);
    zero_grads(&m.ps);
    ck_assert_int_eq(llm_decoder_loss(&m.dec, &m.ps, &m.tape, probe_ids, probe_targets, 1, 2,
                                      NULL, &l, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&m.tape, l, NULL, 0, NULL), LLM_OK);
    ck_assert(memcmp(full, m.ps.items[0].grad.data, sizeof full) == 0);
    destroy(&m);
}
END_TEST

typedef struct objective {
    model *m;
    const size_t *ids, *targets;
    size_t T;
} objective;

static llm_status objective_loss(void *ctx, const llm_tensor *theta, double *value,
                                 llm_error *err)
{
    objective *o = ctx;
    llm_var l;
    llm_status st;
    (void)theta;
    if ((st = llm_tape_reset(&o->m->tape, err)) != LLM_OK)
        return st;
    st = llm_decoder_loss(&o->m->dec, &o->m->ps, &o->m->tape, o->ids, o->targets, 1, o->T,
                          NULL, &l, err);
    if (st == LLM_OK)
        read(&o->m->tape, l, value, 1);
    return st;
}

static void analytic(objective *o)
{
    llm_var l;
    ck_assert_int_eq(llm_tape_reset(&o->m->tape, NULL), LLM_OK);
    zero_grads(&o->m->ps);
    ck_assert_int_eq(llm_decoder_loss(&o->m->dec, &o->m->ps, &o->m->tape, o->ids, o->targets,
                                      1, o->T, NULL, &l, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_backward(&o->m->tape, l, NULL, 0, NULL), LLM_OK);
}

static size_t check_all(objective *o, size_t per_tensor)
{
    size_t coords[20], i, k, n, failures, checked = 0;
    double worst;
    for (i = 0; i < o->m->ps.count; i++) {
        llm_param *p = &o->m->ps.items[i];
        n = p->value.size < per_tensor ? p->value.size : per_tensor;
        for (k = 0; k < n; k++)
            coords[k] = k;
        if (n < p->value.size)
            ck_assert_int_eq(llm_gradient_coords(p->value.size, n, coords, NULL), LLM_OK);
        ck_assert_int_eq(llm_gradient_check(objective_loss, o, &p->value, p->grad.data,
                                            coords, n, 1e-6, 2e-5, &worst, &failures, NULL),
                         LLM_OK);
        ck_assert_uint_eq(failures, 0);
        checked += n;
    }
    return checked;
}

/* The course's 24 coordinates of the probe, then a sample of every tensor
   of the seed-32 model, against central differences. */
START_TEST(test_gradients_against_differences)
{
    model m;
    objective o;
    probe_build(&m);
    o.m = &m;
    o.ids = probe_ids;
    o.targets = probe_targets;
    o.T = 2;
    analytic(&o);
    ck_assert_uint_eq(check_all(&o, 20), 24);
    destroy(&m);
    build(&m, &fix_cfg, 32);
    o.ids = fix_ids;
    o.targets = fix_targets;
    o.T = 3;
    analytic(&o);
    ck_assert_uint_eq(check_all(&o, 5), 15 * 5 + 5 * 4);   /* five gains of 4 */
    destroy(&m);
}
END_TEST

/* The untied head: one matrix more, drawn last, its own gradient. */
START_TEST(test_untied_head)
{
    llm_decoder_config ucfg = fix_cfg;
    model tied, untied;
    objective o;
    llm_var z, l;
    const llm_tensor *zv;
    llm_error err;
    size_t i, scalars = 0;
    ucfg.untied_head = 1;
    build(&tied, &fix_cfg, 32);
    build(&untied, &ucfg, 32);
    ck_assert_uint_eq(untied.ps.count, tied.ps.count + 1);        /* 21 tensors */
    for (i = 0; i < untied.ps.count; i++)
        scalars += untied.ps.items[i].value.size;
    ck_assert_uint_eq(scalars, 284);                                /* 2VD + ... + D */
    for (i = 0; i < tied.ps.count; i++) {                           /* the same draws first */
        ck_assert_str_eq(untied.ps.items[i].name, tied.ps.items[i].name);
        ck_assert(memcmp(untied.ps.items[i].value.data, tied.ps.items[i].value.data,
                         tied.ps.items[i].value.size * sizeof(double)) == 0);
    }
    ck_assert_str_eq(untied.ps.items[20].name, "output.weight");
    ck_assert_uint_eq(untied.ps.items[20].value.rank, 2);
    ck_assert_uint_eq(untied.ps.items[20].value.shape[0], 4);       /* [D, V] */
    ck_assert_uint_eq(untied.ps.items[20].value.shape[1], 5);
    ck_assert_int_eq(llm_decoder_loss(&untied.dec, &untied.ps, &untied.tape, fix_ids,
                                      fix_targets, 1, 3, &z, &l, NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&untied.tape, z, &zv, NULL), LLM_OK);
    ck_assert_uint_eq(zv->rank, 3);
    ck_assert_uint_eq(zv->shape[2], 5);
    /* a list with the wrong head is refused before anything is recorded */
    ck_assert_int_eq(llm_decoder_forward(&untied.dec, &tied.ps, &untied.tape, fix_ids, 1, 3,
                                         0, NULL, &z, &err), LLM_ERR_NAME);
    ck_assert_int_eq(llm_decoder_forward(&tied.dec, &untied.ps, &tied.tape, fix_ids, 1, 3,
                                         0, NULL, &z, &err), LLM_ERR_NAME);
    /* every tensor's gradient, the head's included, against differences */
    o.m = &untied;
    o.ids = fix_ids;
    o.targets = fix_targets;
    o.T = 3;
    analytic(&o);
    ck_assert_uint_eq(check_all(&o, 5), 16 * 5 + 5 * 4);
    destroy(&tied);
    destroy(&untied);
    /* untied_head is 0 or 1 */
    ucfg.untied_head = 2;
    {
        llm_decoder d;
        llm_params ps;
        llm_rng rng;
        llm_rng_seed(&rng, 1);
        ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
        ck_assert_int_eq(llm_decoder_init(&d, &ps, &ucfg, &rng, &err), LLM_ERR_CONFIG);
        ck_assert_str_eq(err.stage, "decoder.init");
        ck_assert_uint_eq(ps.count, 0);
        llm_params_free(&ps);
    }
}
END_TEST

START_TEST(test_init_refusals)
{
    static const struct {
        size_t field;
        double value;
    } bad[] = {{0, 0}, {1, 0}, {2, 0}, {2, 3}, {2, 4}, {3, 0}, {5, 0},
               {6, 0}, {6, -1}, {6, INFINITY}, {6, NAN}, {7, -1e-9}, {7, NAN}};
    llm_decoder dec, kept;
    llm_params ps, full;
    llm_rng rng, rng_kept;
    llm_decoder_config cfg;
    llm_error err;
    size_t i;
    memset(&dec, 0x77, sizeof dec);
    kept = dec;
    llm_rng_seed(&rng, 32);
    rng_kept = rng;
    ck_assert_int_eq(llm_params_init(&ps, NULL), LLM_OK);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cfg = fix_cfg;
        switch (bad[i].field) {
        case 0: cfg.vocab = 0; break;
        case 1: cfg.d_model = 0; break;
        case 2: cfg.n_heads = (size_t)bad[i].value; break;
        case 3: cfg.d_ff = 0; break;
        case 5: cfg.context = 0; break;
        case 6: cfg.rope_base = bad[i].value; break;
        default: cfg.eps = bad[i].value; break;
        }
        ck_assert_int_eq(llm_decoder_init(&dec, &ps, &cfg, &rng, &err), LLM_ERR_CONFIG);
        ck_assert_str_eq(where(&err), "decoder.init");
        ck_assert(memcmp(&dec, &kept, sizeof dec) == 0);
        ck_assert(memcmp(&rng, &rng_kept, sizeof rng) == 0);
        ck_assert_uint_eq(ps.count, 0);
    }
    /* a stack too deep to allocate: refused before anything is drawn */
    cfg = fix_cfg;
    cfg.n_layers = SIZE_MAX / 2;
    ck_assert_int_eq(llm_decoder_init(&dec, &ps, &cfg, &rng, &err), LLM_ERR_ALLOC);
    ck_assert(memcmp(&dec, &kept, sizeof dec) == 0);
    ck_assert(memcmp(&rng, &rng_kept, sizeof rng) == 0);
    ck_assert_uint_eq(ps.count, 0);
    ck_assert_int_eq(llm_decoder_init(NULL, &ps, &fix_cfg, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_decoder_init(&dec, NULL, &fix_cfg, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_decoder_init(&dec, &ps, NULL, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_decoder_init(&dec, &ps, &fix_cfg, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_params_init(&full, NULL), LLM_OK);
    ck_assert_int_eq(llm_rmsnorm_init(&(llm_rmsnorm){0}, &full, "x", 4, 0.0, NULL), LLM_OK);
    ck_assert_int_eq(llm_decoder_init(&dec, &full, &fix_cfg, &rng, &err), LLM_ERR_ARGUMENT);
    ck_assert_uint_eq(full.count, 1);
    ck_assert(memcmp(&dec, &kept, sizeof dec) == 0);
    ck_assert(memcmp(&rng, &rng_kept, sizeof rng) == 0);
    llm_params_free(&full);
    llm_params_free(&ps);
}
END_TEST

/* A refused forward pass records nothing and writes no handle. */
static void refused(model *m, llm_params *ps, const size_t *ids, size_t batch, size_t T,
                    size_t offset, llm_status want)
{
    llm_var h[4], h_kept[4], z, z_kept;
    llm_error err;
    size_t count = m->tape.count;
    memset(h, 0x3c, sizeof h);
    memcpy(h_kept, h, sizeof h);
    z_kept = z = marked_var();
    ck_assert_int_eq(llm_decoder_forward(&m->dec, ps, &m->tape, ids, batch, T, offset, h, &z,
                                         &err), want);
    ck_assert_str_eq(err.stage, "decoder.forward");    /* the cause, if any, is a layer's */
    ck_assert_uint_eq(m->tape.count, count);
    ck_assert(memcmp(h, h_kept, sizeof h) == 0 && memcmp(&z, &z_kept, sizeof z) == 0);
}

/* A forward pass and a loss that fail midway, in the final norm, after the
   embedding and every block were recorded: refused by the tape under stage,
   with the tape's count, hidden, logits and loss unchanged. */
static void fails_midway(model *m, const char *stage)
{
    llm_var h[4], h_kept[4], z, z_kept, l, l_kept;
    llm_error err;
    size_t count = m->tape.count;
    memset(h, 0x3c, sizeof h);
    memcpy(h_kept, h, sizeof h);
    z_kept = z = marked_var();
    memset(&l, 0x4b, sizeof l);
    l_kept = l;
    ck_assert_int_eq(llm_decoder_forward(&m->dec, &m->ps, &m->tape, fix_ids, 1, 3, 0, h, &z,
                                         &err), LLM_ERR_NONFINITE);
    ck_assert_str_eq(first_stage(&err), stage);
    ck_assert_uint_eq(m->tape.count, count);
    ck_assert(memcmp(h, h_kept, sizeof h) == 0 && memcmp(&z, &z_kept, sizeof z) == 0);
    ck_assert_int_eq(llm_decoder_loss(&m->dec, &m->ps, &m->tape, fix_ids, fix_targets, 1, 3,
                                      &z, &l, &err), LLM_ERR_NONFINITE);
    ck_assert_str_eq(first_stage(&err), stage);
    ck_assert_uint_eq(m->tape.count, count);
    ck_assert(memcmp(&z, &z_kept, sizeof z) == 0 && memcmp(&l, &l_kept, sizeof l) == 0);
}

START_TEST(test_forward_refusals)
{
    static const size_t five[5] = {0, 1, 2, 3, 4}, bad_id[3] = {0, 5, 2};
    llm_decoder_config cfg = fix_cfg;
    model m, one, wide, big;
    llm_param tmp;
    llm_var z;
    build(&m, &fix_cfg, 32);
    refused(&m, &m.ps, fix_ids, 0, 3, 0, LLM_ERR_EMPTY);
    refused(&m, &m.ps, fix_ids, 1, 0, 0, LLM_ERR_EMPTY);
    refused(&m, &m.ps, NULL, 1, 3, 0, LLM_ERR_ARGUMENT);
    refused(&m, &m.ps, five, 1, 5, 0, LLM_ERR_INDEX);
    refused(&m, &m.ps, fix_ids, 1, 3, 2, LLM_ERR_INDEX);
    refused(&m, &m.ps, fix_ids, 1, 1, 4, LLM_ERR_INDEX);
    refused(&m, &m.ps, bad_id, 1, 3, 0, LLM_ERR_INDEX);
    refused(&m, &m.ps, fix_ids, SIZE_MAX, 2, 0, LLM_ERR_OVERFLOW);
    ck_assert_int_eq(llm_decoder_forward(NULL, &m.ps, &m.tape, fix_ids, 1, 3, 0, NULL, &z,
                                         NULL), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_decoder_forward(&m.dec, NULL, &m.tape, fix_ids, 1, 3, 0, NULL, &z,
                                         NULL), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_decoder_forward(&m.dec, &m.ps, NULL, fix_ids, 1, 3, 0, NULL, &z,
                                         NULL), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_decoder_forward(&m.dec, &m.ps, &m.tape, fix_ids, 1, 3, 0, NULL, NULL,
                                         NULL), LLM_ERR_ARGUMENT);
    /* another model's list: fewer tensors (a list that does not hold the
       model's parameters), another width, another vocabulary (the right
       names with other shapes) */
    cfg.n_layers = 1;
    build(&one, &cfg, 32);
    refused(&m, &one.ps, fix_ids, 1, 3, 0, LLM_ERR_NAME);
    cfg = fix_cfg;
    cfg.d_ff = 6;
    build(&wide, &cfg, 32);
    refused(&m, &wide.ps, fix_ids, 1, 3, 0, LLM_ERR_SHAPE);
    cfg = fix_cfg;
    cfg.vocab = 6;
    build(&big, &cfg, 32);
    refused(&m, &big.ps, fix_ids, 1, 3, 0, LLM_ERR_SHAPE);
    /* the right list with two tensors swapped, or one renamed */
    tmp = m.ps.items[2];
    m.ps.items[2] = m.ps.items[3];
    m.ps.items[3] = tmp;
    refused(&m, &m.ps, fix_ids, 1, 3, 0, LLM_ERR_NAME);
    m.ps.items[3] = m.ps.items[2];
    m.ps.items[2] = tmp;
    memcpy(m.ps.items[19].name, "final_norm.gaim", 16);
    refused(&m, &m.ps, fix_ids, 1, 3, 0, LLM_ERR_NAME);
    memcpy(m.ps.items[19].name, "final_norm.gain", 16);
    /* a NaN gain in the final norm is refused by its leaf; a gain of
       1.7e308 overflows in its product with the normalised rows */
    {
        double *gain = m.ps.items[19].value.data, kept[4];
        size_t j;
        memcpy(kept, gain, sizeof kept);
        gain[2] = NAN;
        fails_midway(&m, "tape.leaf");
        for (j = 0; j < 4; j++)
            gain[j] = 1.7e308;
        fails_midway(&m, "tape.mul");
        memcpy(gain, kept, sizeof kept);
    }
    /* and after all of that, the pass works */
    ck_assert_int_eq(llm_decoder_forward(&m.dec, &m.ps, &m.tape, fix_ids, 1, 3, 0, NULL, &z,
                                         NULL), LLM_OK);
    destroy(&big);
    destroy(&wide);
    destroy(&one);
    destroy(&m);
}
END_TEST

START_TEST(test_loss_refusals)
{
    static const size_t bad_target[3] = {1, 5, 3}, bad_id[3] = {0, 1, 7};
    model m;
    llm_var z, l, z_kept, l_kept;
    llm_error err;
    size_t count;
    build(&m, &fix_cfg, 32);
    memset(&z, 0x11, sizeof z);
    memset(&l, 0x22, sizeof l);
    z_kept = z;
    l_kept = l;
    count = m.tape.count;
    ck_assert_int_eq(llm_decoder_loss(&m.dec, &m.ps, &m.tape, fix_ids, bad_target, 1, 3, &z,
                                      &l, &err), LLM_ERR_TARGET);
    ck_assert_str_eq(where(&err), "decoder.loss");
    ck_assert_ptr_nonnull(strstr(err.message, "[0, 1]"));
    ck_assert_int_eq(llm_decoder_loss(&m.dec, &m.ps, &m.tape, fix_ids, NULL, 1, 3, &z, &l,
                                      &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_decoder_loss(&m.dec, &m.ps, &m.tape, bad_id, fix_targets, 1, 3, &z,
                                      &l, &err), LLM_ERR_INDEX);
    ck_assert_int_eq(llm_decoder_loss(&m.dec, &m.ps, &m.tape, fix_ids, fix_targets, 0, 3, &z,
                                      &l, &err), LLM_ERR_EMPTY);
    ck_assert_int_eq(llm_decoder_loss(&m.dec, &m.ps, &m.tape, fix_ids, fix_targets, 1, 5, &z,
                                      &l, &err), LLM_ERR_INDEX);
    ck_assert_int_eq(llm_decoder_loss(&m.dec, &m.ps, &m.tape, fix_ids, fix_targets, 1, 3, &z,
                                      NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_decoder_loss(NULL, &m.ps, &m.tape, fix_ids, fix_targets, 1, 3, &z,
                                      &l, &err), LLM_ERR_ARGUMENT);
    ck_assert_uint_eq(m.tape.count, count);
    ck_assert(memcmp(&z, &z_kept, sizeof z) == 0 && memcmp(&l, &l_kept, sizeof l) == 0);
    /* logits may be NULL */
    ck_assert_int_eq(llm_decoder_loss(&m.dec, &m.ps, &m.tape, fix_ids, fix_targets, 1, 3, NULL,
                                      &l, &err), LLM_OK);
    destroy(&m);
}
END_TEST

/* A decoder whose widths all differ (V 7, D 8, H 2, F 12, L 3, P 5), so that
   no swapped width can hide: every tensor has the shape its layer gives it,
   the forward pass accepts the decoder's own list, and the loss is finite. */
START_TEST(test_every_width_different)
{
    static const llm_decoder_config cfg = {7, 8, 2, 12, 3, 5, 10000.0, 1e-6, 0};
    static const size_t ids[4] = {6, 0, 3, 5}, targets[4] = {0, 3, 5, 1};
    static const char *const part[9] = {
        "attention_norm.gain", "attention.query.weight", "attention.key.weight",
        "attention.value.weight", "attention.output.weight", "ffn_norm.gain",
        "ffn.gate.weight", "ffn.up.weight", "ffn.down.weight"};
    const size_t rows[9] = {8, 8, 8, 8, 8, 8, 8, 8, 12}, cols[9] = {0, 8, 8, 8, 8, 0, 12, 12, 8};
    model m;
    llm_var z, loss;
    const llm_tensor *t;
    char name[64];
    size_t l, k, at;
    build(&m, &cfg, 7);
    ck_assert_uint_eq(m.ps.count, 2 + 9 * 3);
    ck_assert_int_eq(llm_params_find(&m.ps, "token_embedding.weight", &at, NULL), LLM_OK);
    ck_assert_uint_eq(m.ps.items[at].value.shape[0], 7);
    ck_assert_uint_eq(m.ps.items[at].value.shape[1], 8);
    for (l = 0; l < 3; l++)
        for (k = 0; k < 9; k++) {
            const llm_tensor *v;
            snprintf(name, sizeof name, "blocks.%zu.%s", l, part[k]);
            ck_assert_int_eq(llm_params_find(&m.ps, name, &at, NULL), LLM_OK);
            v = &m.ps.items[at].value;
            ck_assert_uint_eq(v->rank, cols[k] == 0 ? 1 : 2);
            ck_assert_uint_eq(v->shape[0], rows[k]);
            if (cols[k] > 0)
                ck_assert_uint_eq(v->shape[1], cols[k]);
        }
    ck_assert_int_eq(llm_decoder_forward(&m.dec, &m.ps, &m.tape, ids, 1, 4, 0, NULL, &z, NULL),
                     LLM_OK);
    ck_assert_int_eq(llm_tape_value(&m.tape, z, &t, NULL), LLM_OK);
    ck_assert_uint_eq(t->size, 4 * 7);
    ck_assert_int_eq(llm_tape_reset(&m.tape, NULL), LLM_OK);
    ck_assert_int_eq(llm_decoder_loss(&m.dec, &m.ps, &m.tape, ids, targets, 1, 4, &z, &loss,
                                      NULL), LLM_OK);
    ck_assert_int_eq(llm_tape_value(&m.tape, loss, &t, NULL), LLM_OK);
    ck_assert(isfinite(t->data[t->offset]) && t->data[t->offset] > 0.0);
    destroy(&m);
}
END_TEST

Suite *ch32_decoder_model_suite(void)
{
    const TTest *tests[] = {
        test_seed_32_fixture,
        test_parameter_layout,
        test_counts_and_draws,
        test_head_is_the_table,
        test_zero_layers,
        test_causal_prefix,
        test_batch_offset_replay,
        test_tied_gradient_is_the_sum,
        test_gradients_against_differences,
        test_untied_head,
        test_init_refusals,
        test_forward_refusals,
        test_loss_refusals,
        test_every_width_different,
    };
    return suite_of("ch32 decoder model", tcase_of("core", 60, tests, COUNT(tests)));
}
