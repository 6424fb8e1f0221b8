/* ch17-parameter-initialization -- SplitMix64, Xavier-uniform, named parameters. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/params.h"

/* x as 0x and sixteen hex digits; as Markdown code when code is 1. */
static const char *hex(uint64_t x, int code)
{
    return llm_text(code ? "`0x%016llx`" : "0x%016llx", (unsigned long long)x);
}

static const char *identical(int same)
{
    return same ? "bit-identical" : "different";
}

/* A [rows, cols] Xavier matrix that the demo owns, drawn from *rng seeded
   with seed; NULL when the call fails. */
static llm_tensor *xavier(llm_demo *d, size_t rows, size_t cols, uint64_t seed,
                          llm_rng *rng)
{
    llm_tensor *w = llm_own_tensor(d);
    llm_rng_seed(rng, seed);
    return LLM_TRY(d, llm_xavier_uniform(w, rows, cols, rng, &d->err)) ? w : NULL;
}
/* h = x W1, y = h W2, L = (y - t)^2 / 2, with w1[j] the weights of unit j
   (column j of W1). Fills the gradients and dL/dy = y - t, then steps W1
   and W2 by lr times their gradients; returns L. */
static double tiny_step(double w1[2][2], double w2[2], double lr, double dw1[2][2],
                        double dw2[2], double *gy)
{
    static const double tiny_x[2] = {1.0, -1.0}, tiny_t = -1.0;
    double h[2], y = 0.0;
    size_t i, j;
    for (j = 0; j < 2; j++) {
        h[j] = tiny_x[0] * w1[j][0] + tiny_x[1] * w1[j][1];
        y += h[j] * w2[j];
    }
    *gy = y - tiny_t;                                 /* dL/dy */
    for (j = 0; j < 2; j++) {
        dw2[j] = h[j] * *gy;                          /* h_j (y - t) */
        for (i = 0; i < 2; i++) {
            dw1[j][i] = tiny_x[i] * w2[j] * *gy;      /* x_i W2[j] (y - t) */
            w1[j][i] -= lr * dw1[j][i];
        }
        w2[j] -= lr * dw2[j];
    }
    return 0.5 * *gy * *gy;
}
/* prefix.up.weight [d_in, d_hidden] (Xavier), prefix.up.bias [d_hidden]
   (zeros, no draws), prefix.down.weight [d_hidden, d_out] (Xavier). All or
   nothing: the draws come from a trial copy of rng, committed only when all
   three are in the list; a failure takes back what was added. */
static llm_status add_two_layers(llm_params *ps, const char *prefix, size_t d_in,
                                 size_t d_hidden, size_t d_out, llm_rng *rng,
                                 llm_error *err)
{
    llm_rng trial = *rng;
    const size_t mark = ps->count;
    llm_status st = llm_params_add_xavier(ps, llm_text("%s.up.weight", prefix), d_in,
                                          d_hidden, &trial, err);
    if (st == LLM_OK)
        st = llm_params_add_const(ps, llm_text("%s.up.bias", prefix), 1, &d_hidden, 0.0,
                                  0, err);
    if (st == LLM_OK)
        st = llm_params_add_xavier(ps, llm_text("%s.down.weight", prefix), d_hidden,
                                   d_out, &trial, err);
    if (st != LLM_OK)
        llm_params_truncate(ps, mark);      /* take back what was added */
    else
        *rng = trial;                       /* commit the draws */
    return st;
}
/* One step of the mixing by hand, traced; returns m. */
static uint64_t mix_step(llm_demo *d, const char *step, uint64_t m)
{
    llm_row(d, "mix", step, hex(m, 1), NULL);
    return m;
}

static void seeds(llm_demo *d)
{
    llm_rng rng, copy;
    uint64_t z[4], m;
    double unit[4];
    size_t k;
    int exact = 1;
    llm_rng_seed(&rng, 0);
    for (k = 0; k < 4; k++) {
        copy = rng;
        unit[k] = llm_rng_unit(&copy);          /* the same draw as a unit value */
        z[k] = llm_rng_next_u64(&rng);
        exact = exact && unit[k] * 9007199254740992.0 == (double)(z[k] >> 11);
        llm_row(d, "splitmix", llm_text("%zu", k + 1), hex(rng.state, 1), hex(z[k], 1),
                llm_num(unit[k], 12), NULL);
    }
    printf("seed=0 next_u64=%s\n", llm_put(d, "seq0", llm_text("[%s, %s, %s, %s]",
           hex(z[0], 0), hex(z[1], 0), hex(z[2], 0), hex(z[3], 0))));
    printf("seed=0 unit=%s", llm_nums(unit, 4, 12));
    printf(" unit_exact=%s\n", llm_put(d, "unit_exact", llm_yes(exact)));
    printf("seed=0 state after 4 draws=%s\n",
           llm_put(d, "state0_4", hex(rng.state, 0)));
    llm_demo_check(d, exact, "each unit value is the top 53 bits of its draw");

    m = mix_step(d, "$s_1 = s_0 + \\gamma$", UINT64_C(0x9e3779b97f4a7c15));
    m = mix_step(d, "$z \\oplus (z \\gg 30)$", m ^ (m >> 30));
    m = mix_step(d, "$\\cdot\\, c_1$", m * UINT64_C(0xbf58476d1ce4e5b9));
    m = mix_step(d, "$z \\oplus (z \\gg 27)$", m ^ (m >> 27));
    m = mix_step(d, "$\\cdot\\, c_2$", m * UINT64_C(0x94d049bb133111eb));
    m = mix_step(d, "$z_1 = z \\oplus (z \\gg 31)$", m ^ (m >> 31));
    printf("first draw mixed by hand=%s same=%s\n", hex(m, 0), llm_yes(m == z[0]));
    llm_demo_check(d, m == z[0], "the mixing by hand gives the first draw");
    const double limit = sqrt(6.0 / (double)(2 + 2)), var = 2.0 / (double)(2 + 2);
    llm_tensor *w = xavier(d, 2, 2, 17, &rng), *again = xavier(d, 2, 2, 17, &copy);
    llm_tensor *w18 = xavier(d, 2, 2, 18, &copy);
    int same_bits = 1, replay, differ = 1;
    if (!d->ok)
        return;
    llm_rng_seed(&copy, 17);
    for (k = 0; k < 4; k++) {
        const double u = llm_rng_unit(&copy), want = limit * (2.0 * u - 1.0);
        same_bits = same_bits && memcmp(&w->data[k], &want, sizeof want) == 0;
        differ = differ && w18->data[k] != w->data[k];
        llm_row(d, "xavier", llm_text("%zu", k + 1),
                llm_text("[%zu, %zu]", k / 2, k % 2), llm_num(u, 12),
                llm_num(2.0 * u - 1.0, 12), llm_num(w->data[k], 12), NULL);
    }
    printf("seed=17 shape=[2, 2] limit=%s", llm_put(d, "limit", llm_num(limit, 12)));
    printf(" var=%s", llm_put(d, "var", llm_num(var, 12)));
    printf(" std=%s\n", llm_put(d, "std", llm_num(sqrt(var), 12)));
    printf("seed=17 w=%s", llm_put(d, "w17", llm_nums(w->data, 4, 12)));
    printf(" from_draws=%s\n", identical(same_bits));
    printf("seed=17 state after 4 draws=%s\n",
           llm_put(d, "state17_4", hex(rng.state, 0)));
    llm_demo_check(d, same_bits, "each weight is limit * (2u - 1) of its draw");
    for (k = 0; k < 4; k++)
        llm_row(d, "seed18", llm_text("%zu", k + 1), llm_num(w18->data[k], 12), NULL);
    replay = memcmp(w->data, again->data, 4 * sizeof w->data[0]) == 0;
    printf("seed=17 again=%s\n", llm_put(d, "replay", identical(replay)));
    printf("seed=18 w=%s", llm_put(d, "w18", llm_nums(w18->data, 4, 12)));
    printf(" differs_everywhere=%s\n", llm_yes(differ));
    llm_demo_check(d, replay, "seed 17 again gives the same bits");
    llm_demo_check(d, differ, "seed 18 differs in every weight");
}
static void limits(llm_demo *d)
{
    static const size_t fans[4][2] = {{2, 2}, {4, 2}, {5, 4}, {200, 300}};
    const double var = 2.0 / 500.0, limit = sqrt(6.0 / 500.0);    /* [200, 300] */
    llm_tensor *w;
    llm_rng rng;
    double mean = 0.0, sq = 0.0, big = 0.0;
    size_t r, i;
    for (r = 0; r < 4; r++) {
        const size_t n = fans[r][0] + fans[r][1];
        const char *shape = llm_sizes(fans[r], 2), *v = llm_num(2.0 / (double)n, 12);
        const char *std = llm_num(sqrt(2.0 / (double)n), 12);
        const char *lim = llm_num(sqrt(6.0 / (double)n), 12);
        llm_row(d, "limits", shape, llm_text("%zu", n), v, std, lim, NULL);
        printf("shape=%s var=%s std=%s limit=%s\n", shape, v, std, lim);
        if (r == 1) {
            llm_put(d, "limit42", lim);
            llm_put(d, "std42", std);
        }
        if (r == 2)
            llm_put(d, "limit_token", lim);
    }
    if ((w = xavier(d, 200, 300, 17, &rng)) == NULL)
        return;
    for (i = 0; i < w->size; i++) {
        mean += w->data[i];
        big = fmax(big, fabs(w->data[i]));
    }
    mean /= (double)w->size;
    for (i = 0; i < w->size; i++)
        sq += (w->data[i] - mean) * (w->data[i] - mean);
    printf("seed=17 shape=[200, 300]");
    printf(" mean=%s", llm_put(d, "emp_mean", llm_num(mean, 6)));
    printf(" var=%s", llm_put(d, "emp_var", llm_num(sq / (double)w->size, 6)));
    printf(" target=%s", llm_put(d, "emp_target", llm_num(var, 6)));
    printf(" max_abs=%s", llm_put(d, "emp_max", llm_num(big, 6)));
    printf(" limit=%s\n", llm_put(d, "emp_limit", llm_num(limit, 6)));
    llm_demo_check(d, big <= limit, "no weight lies beyond the limit");
}
static void symmetry(llm_demo *d)
{
    double w1[2][2] = {{0.0, 0.0}, {0.0, 0.0}}, w2[2] = {0.5, 0.5}, dw1[2][2], dw2[2];
    double gy, loss;
    llm_tensor *a, *b = llm_own_tensor(d);
    llm_rng rng;
    size_t k;
    int symmetric;
    tiny_step(w1, w2, 0.0, dw1, dw2, &gy);
    printf("zero start dL/dy=%s", llm_put(d, "sym_gy", llm_num(gy, 6)));
    printf(" dW1 column0=%s", llm_put(d, "sym_col0", llm_nums(dw1[0], 2, 6)));
    printf(" column1=%s", llm_put(d, "sym_col1", llm_nums(dw1[1], 2, 6)));
    printf(" dW2=%s\n", llm_put(d, "sym_dw2", llm_nums(dw2, 2, 6)));
    symmetric = memcmp(dw1[0], dw1[1], sizeof dw1[0]) == 0;
    for (k = 0; k <= 3; k++) {
        const char *c0 = llm_nums(w1[0], 2, 6), *c1 = llm_nums(w1[1], 2, 6);
        const char *v2 = llm_nums(w2, 2, 6);
        symmetric = symmetric && memcmp(w1[0], w1[1], sizeof w1[0]) == 0
                    && memcmp(&w2[0], &w2[1], sizeof w2[0]) == 0;
        loss = tiny_step(w1, w2, k < 3 ? 0.1 : 0.0, dw1, dw2, &gy);
        llm_row(d, "symmetry", llm_text("%zu", k), c0, c1, v2, llm_num(loss, 6), NULL);
        printf("step %zu W1 columns=%s %s W2=%s loss=%s\n", k, c0, c1, v2,
               llm_num(loss, 6));
    }
    printf("zero start after 3 steps units=%s\n",
           llm_put(d, "sym_equal", identical(symmetric)));
    llm_put(d, "sym_steps", "3");
    llm_demo_check(d, symmetric && gy > 0.0, "from zero the units stay the same");

    a = xavier(d, 2, 2, 17, &rng);
    if (!LLM_TRY(d, llm_xavier_uniform(b, 2, 1, &rng, &d->err)))
        return;
    for (k = 0; k < 4; k++)
        w1[k % 2][k / 2] = a->data[k];     /* element [i, j] is unit j's weight i */
    memcpy(w2, b->data, sizeof w2);
    tiny_step(w1, w2, 0.0, dw1, dw2, &gy);
    printf("random start W2=%s", llm_put(d, "brk_w2", llm_nums(w2, 2, 6)));
    printf(" dW1 column0=%s", llm_put(d, "brk_col0", llm_nums(dw1[0], 2, 6)));
    printf(" column1=%s", llm_put(d, "brk_col1", llm_nums(dw1[1], 2, 6)));
    symmetric = memcmp(dw1[0], dw1[1], sizeof dw1[0]) == 0;
    printf(" equal=%s\n", llm_yes(symmetric));
    llm_demo_check(d, !symmetric, "from random weights the gradients differ");
}
static void component(llm_demo *d)
{
    const size_t two[1] = {2};
    llm_params *ps = llm_own_params(d), *again = llm_own_params(d);
    llm_rng rng, before, fresh;
    llm_tensor *up;
    llm_param first;
    size_t i, idx = 0, draws = 0, scalars = 0;
    int same;
    llm_rng_seed(&rng, 17);
    before = rng;
    if (!(LLM_TRY(d, llm_params_init(ps, &d->err))
          && LLM_TRY(d, llm_params_init(again, &d->err))
          && LLM_TRY(d, llm_params_add_const(ps, "final_norm.gain", 1, two, 1.0, 0,
                                             &d->err))))
        return;
    same = memcmp(&rng, &before, sizeof rng) == 0;
    printf("final_norm.gain=%s generator ", llm_nums(ps->items[0].value.data, 2, 1));
    printf("%s\n", llm_put(d, "gain_rng", same ? "unchanged" : "advanced"));
    llm_demo_check(d, same, "a constant draws nothing");
    memcpy(&first, &ps->items[0], sizeof first);
    llm_refuse_as(d, "component mlp with d_out 0",
                  add_two_layers(ps, "mlp", 2, 3, 0, &rng, &d->err), LLM_ERR_ARGUMENT);
    printf("  %s\n", llm_put(d, "component_message", d->err.message));
    same = memcmp(&rng, &before, sizeof rng) == 0;
    printf("after the failed component: generator %s",
           llm_put(d, "component_rng", same ? "unchanged" : "advanced"));
    llm_demo_check(d, same, "the refusal drew nothing");
    same = ps->count == 1 && memcmp(&ps->items[0], &first, sizeof first) == 0;
    printf(", list of %zu %s\n", ps->count,
           llm_put(d, "component_list", same ? "unchanged" : "changed"));
    llm_demo_check(d, same, "the failed component took back its tensors");
    if (!LLM_TRY(d, add_two_layers(ps, "mlp", 2, 3, 2, &rng, &d->err)))
        return;
    for (fresh = before; fresh.state != rng.state && draws < 1000; draws++)
        fresh.state += UINT64_C(0x9e3779b97f4a7c15);
    printf("component built: parameters=%zu draws=%s state=%s\n", ps->count,
           llm_put(d, "draws", llm_text("%zu", draws)), hex(rng.state, 0));
    for (i = 0; i < ps->count; i++) {
        const llm_param *p = &ps->items[i];
        const char *shape = llm_sizes(p->value.shape, p->value.rank);
        const char *init = p->decay ? "Xavier" : *p->value.data == 1 ? "ones" : "zeros";
        const char *n = llm_text("%zu", p->decay ? p->value.size : (size_t)0);
        llm_row(d, "params", llm_text("%zu", i), llm_text("`%s`", p->name), shape, init,
                llm_text("%d", p->decay), n, NULL);
        printf("param %zu name=%s shape=%s init=%s decay=%d draws=%s grad=%s\n", i,
               p->name, shape, init, p->decay, n,
               llm_nums(p->grad.data, p->grad.size, 0));
        scalars += p->value.size;
    }
    llm_put(d, "n_params", llm_text("%zu", ps->count));
    llm_put(d, "n_scalars", llm_text("%zu", scalars));
    if ((up = xavier(d, 2, 3, 17, &fresh)) == NULL)
        return;
    same = memcmp(up->data, ps->items[1].value.data, 6 * sizeof up->data[0]) == 0;
    printf("mlp.up.weight vs a fresh seed-17 [2, 3]=%s\n",
           llm_put(d, "fresh_same", identical(same)));
    llm_demo_check(d, same && draws == 12, "the component made 12 draws of seed 17");
    before = rng;
    llm_refuse_as(d, "component mlp a second time",
                  add_two_layers(ps, "mlp", 2, 3, 2, &rng, &d->err), LLM_ERR_NAME);
    printf("  %s\n", llm_put(d, "dup_message", d->err.message));
    llm_demo_check(d, ps->count == 4 && memcmp(&rng, &before, sizeof rng) == 0,
                   "a taken prefix adds nothing and draws nothing");
    if (!LLM_TRY(d, llm_params_find(ps, "mlp.down.weight", &idx, &d->err)))
        return;
    printf("find mlp.down.weight=%s\n", llm_put(d, "find_index", llm_text("%zu", idx)));

    llm_rng_seed(&fresh, 17);
    if (!(LLM_TRY(d, llm_params_add_const(again, "final_norm.gain", 1, two, 1.0, 0,
                                          &d->err))
          && LLM_TRY(d, add_two_layers(again, "mlp", 2, 3, 2, &fresh, &d->err))))
        return;
    same = again->count == ps->count;
    for (i = 0; same && i < ps->count; i++)
        same = strcmp(again->items[i].name, ps->items[i].name) == 0
               && memcmp(again->items[i].value.data, ps->items[i].value.data,
                         ps->items[i].value.size * sizeof(double)) == 0;
    printf("the list again from seed 17=%s\n",
           llm_put(d, "list_replay", identical(same)));
    llm_demo_check(d, same, "the list again has the same names and bits");
}
static void refusals(llm_demo *d)
{
    static const char *const names[11] = {
        "blocks.0.ffn.down.weight", "token_embedding.weight", "final_norm.gain",
        "", ".weight", "ffn.", "ffn..down", "FFN.weight", "ffn-down.weight",
        "ffn down", NULL};
    const size_t empty[1] = {0}, two[1] = {2}, deep[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    char long_name[LLM_PARAM_NAME_MAX + 1] = {0};
    llm_params *ps = llm_own_params(d), ps_before;
    llm_rng rng, rng_before;
    llm_tensor out, marker;          /* refused calls write nothing to free */
    llm_error *err = &d->err;
    size_t i, idx = 99;
    int good = 1, untouched;
    memset(long_name, 'a', LLM_PARAM_NAME_MAX);
    for (i = 0; i < 11; i++) {
        const char *name = names[i] != NULL ? names[i] : long_name;
        const char *what = names[i] != NULL ? llm_text("name \"%s\"", name)
                           : llm_text("name of %d characters", LLM_PARAM_NAME_MAX);
        const char *shown = names[i] == NULL ? llm_text("%d × `a`", LLM_PARAM_NAME_MAX)
                            : name[0] == '\0' ? "(empty)" : llm_text("`%s`", name);
        const llm_status st = llm_param_name_check(name, &d->err);
        good = good && (st == LLM_OK) == (i < 3);
        if (st == LLM_OK)
            printf("accept %s\n", what);
        else
            printf("reject %s: %s (%s)\n", what, llm_status_name(st), d->err.stage);
        llm_row(d, "names", shown, llm_status_name(st),
                st == LLM_OK ? "accepted" : d->err.message, NULL);
    }
    llm_demo_check(d, good, "exactly the three good names pass the rules");
    llm_rng_seed(&rng, 17);
    if (!(LLM_TRY(d, llm_params_init(ps, err))
          && LLM_TRY(d, llm_params_add_xavier(ps, "w", 2, 2, &rng, err))))
        return;
    memcpy(&ps_before, ps, sizeof *ps);
    rng_before = rng;
    memset(&out, 0x5a, sizeof out);
    memcpy(&marker, &out, sizeof out);
    llm_refuse(d, "xavier without a generator",
               llm_xavier_uniform(&out, 2, 2, NULL, err));
    llm_refuse(d, "xavier [0, 3]", llm_xavier_uniform(&out, 0, 3, &rng, err));
    printf("  %s\n", err->message);
    llm_refuse(d, "xavier [2^62, 4]",
               llm_xavier_uniform(&out, SIZE_MAX / 4 + 1, 4, &rng, err));
    llm_refuse(d, "add_xavier \"w\" a second time",
               llm_params_add_xavier(ps, "w", 2, 2, &rng, err));
    llm_refuse(d, "add_xavier \"Layer.weight\"",
               llm_params_add_xavier(ps, "Layer.weight", 2, 2, &rng, err));
    printf("  %s\n", err->message);
    llm_refuse(d, "add_xavier \"v\" [3, 0]",
               llm_params_add_xavier(ps, "v", 3, 0, &rng, err));
    llm_refuse(d, "add_const \"b\" = NaN",
               llm_params_add_const(ps, "b", 1, two, NAN, 0, err));
    llm_refuse(d, "add_const \"b\" of shape [0]",
               llm_params_add_const(ps, "b", 1, empty, 0.0, 0, err));
    llm_refuse(d, "add_const \"b\" of rank 9",
               llm_params_add_const(ps, "b", 9, deep, 0.0, 0, err));
    llm_refuse(d, "add_const without a list",
               llm_params_add_const(NULL, "b", 1, two, 0.0, 0, err));
    llm_refuse(d, "find \"w.bias\"", llm_params_find(ps, "w.bias", &idx, err));
    printf("  %s\n", llm_put(d, "find_message", err->message));
    llm_refuse(d, "init without a list", llm_params_init(NULL, err));
    untouched = memcmp(ps, &ps_before, sizeof *ps) == 0
                && memcmp(&rng, &rng_before, sizeof rng) == 0
                && memcmp(&out, &marker, sizeof out) == 0 && idx == 99;
    printf("list, generator and outputs untouched after refusals=%s\n",
           llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "refused calls changed no list, generator or output");
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {seeds, limits, symmetry, component,
                                            refusals, NULL};
    return llm_demo_main(argc, argv, "ch17-parameter-initialization", NULL, sections);
}
