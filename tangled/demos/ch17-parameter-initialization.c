/* ch17-parameter-initialization -- SplitMix64, Xavier-uniform, named parameters. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/params.h"

/* x as 0x and sixteen hex digits; as Markdown code when code is 1. */
static char *hex(char *buf, size_t size, uint64_t x, int code)
{
    snprintf(buf, size, code ? "`0x%016llx`" : "0x%016llx", (unsigned long long)x);
    return buf;
}

static void fill_row(llm_trace *tr, const char *table, size_t n, char (*c)[96])
{
    const char *cells[6];
    size_t i;
    for (i = 0; i < n && i < 6; i++)
        cells[i] = c[i];
    llm_trace_row(tr, table, n, cells);
}
static const double tiny_x[2] = {1.0, -1.0}, tiny_t = -1.0;

/* h = x W1, y = h W2, L = (y - t)^2 / 2; returns L and y - t. */
static double tiny_grad(double w1[2][2], const double w2[2],
                        double dw1[2][2], double dw2[2], double *gy)
{
    double h[2], y = 0.0;
    size_t i, j;
    for (j = 0; j < 2; j++) {
        h[j] = tiny_x[0] * w1[0][j] + tiny_x[1] * w1[1][j];
        y += h[j] * w2[j];
    }
    *gy = y - tiny_t;                                 /* dL/dy */
    for (j = 0; j < 2; j++) {
        dw2[j] = h[j] * *gy;                          /* h_j (y - t) */
        for (i = 0; i < 2; i++)
            dw1[i][j] = tiny_x[i] * w2[j] * *gy;      /* x_i W2[j] (y - t) */
    }
    return 0.5 * *gy * *gy;
}

static double tiny_step(double w1[2][2], double w2[2], double lr)
{
    double dw1[2][2], dw2[2], gy;
    double loss = tiny_grad(w1, w2, dw1, dw2, &gy);
    size_t i, j;
    for (j = 0; j < 2; j++) {
        w2[j] -= lr * dw2[j];
        for (i = 0; i < 2; i++)
            w1[i][j] -= lr * dw1[i][j];
    }
    return loss;
}

/* Column j of W1 and its equality with column 0, bit for bit. */
static char *column(char *buf, size_t size, double m[2][2], size_t j)
{
    double col[2];
    col[0] = m[0][j];
    col[1] = m[1][j];
    return llm_fmt_list(buf, size, col, 2, 6);
}

static int columns_equal(double m[2][2])
{
    return memcmp(&m[0][0], &m[0][1], sizeof m[0][0]) == 0
           && memcmp(&m[1][0], &m[1][1], sizeof m[1][0]) == 0;
}
/* prefix.up.weight [d_in, d_hidden] (Xavier), prefix.up.bias [d_hidden]
   (zeros, no draws), prefix.down.weight [d_hidden, d_out] (Xavier). All or
   nothing: the draws come from a trial copy of rng, committed only when all
   three are in the list; a failure takes back what was added. */
static llm_status add_two_layers(llm_params *ps, const char *prefix, size_t d_in,
                                 size_t d_hidden, size_t d_out, llm_rng *rng,
                                 llm_error *err)
{
    char name[3][128];
    llm_rng trial;
    size_t mark;
    llm_status st;
    if (ps == NULL || prefix == NULL || rng == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "demo.two_layers",
                        "a list, a prefix and a generator are required");
    snprintf(name[0], sizeof name[0], "%s.up.weight", prefix);
    snprintf(name[1], sizeof name[1], "%s.up.bias", prefix);
    snprintf(name[2], sizeof name[2], "%s.down.weight", prefix);
    trial = *rng;
    mark = ps->count;
    st = llm_params_add_xavier(ps, name[0], d_in, d_hidden, &trial, err);
    if (st == LLM_OK)
        st = llm_params_add_const(ps, name[1], 1, &d_hidden, 0.0, 0, err);
    if (st == LLM_OK)
        st = llm_params_add_xavier(ps, name[2], d_hidden, d_out, &trial, err);
    if (st != LLM_OK) {
        llm_params_truncate(ps, mark);      /* take back what was added */
        return st;
    }
    *rng = trial;                           /* commit the draws */
    return LLM_OK;
}

int main(int argc, char **argv)
{
    llm_trace tr;
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch17-parameter-initialization", &tr);
    if (status != 0)
        return status;
    printf("chapter=17 parameter-initialization\n");
    {
        llm_rng rng, copy;
        uint64_t z[4], m;
        double u[4];
        size_t k;
        int exact = 1;
        char c[6][96], list[4][24], buf[256];

        llm_rng_seed(&rng, 0);
        for (k = 0; k < 4; k++) {
            copy = rng;
            u[k] = llm_rng_unit(&copy);             /* the same draw as a unit value */
            z[k] = llm_rng_next_u64(&rng);
            exact = exact && u[k] >= 0.0 && u[k] < 1.0
                    && u[k] * 9007199254740992.0 == (double)(z[k] >> 11);
            snprintf(c[0], sizeof c[0], "%zu", k + 1);
            hex(c[1], sizeof c[1], rng.state, 1);
            hex(c[2], sizeof c[2], z[k], 1);
            hex(list[k], sizeof list[k], z[k], 0);
            llm_fmt(c[3], sizeof c[3], u[k], 12);
            fill_row(&tr, "splitmix", 4, c);
        }
        snprintf(buf, sizeof buf, "[%s, %s, %s, %s]", list[0], list[1], list[2], list[3]);
        printf("seed=0 next_u64=%s\n", buf);
        llm_trace_value(&tr, "seq0", buf);
        printf("seed=0 unit=%s unit_exact=%s\n", llm_fmt_list(buf, sizeof buf, u, 4, 12),
               exact ? "yes" : "no");
        llm_trace_value(&tr, "unit_exact", exact ? "yes" : "no");
        printf("seed=0 state after 4 draws=%s\n", hex(buf, sizeof buf, rng.state, 0));
        llm_trace_value(&tr, "state0_4", buf);
        ok = ok && exact;

        /* the first draw, mixed by hand */
        m = UINT64_C(0) + UINT64_C(0x9e3779b97f4a7c15);
        strcpy(c[0], "$s_1 = s_0 + \\gamma$");
        hex(c[1], sizeof c[1], m, 1);
        fill_row(&tr, "mix", 2, c);
        m ^= m >> 30;
        strcpy(c[0], "$z \\oplus (z \\gg 30)$");
        hex(c[1], sizeof c[1], m, 1);
        fill_row(&tr, "mix", 2, c);
        m *= UINT64_C(0xbf58476d1ce4e5b9);
        strcpy(c[0], "$\\cdot\\, c_1$");
        hex(c[1], sizeof c[1], m, 1);
        fill_row(&tr, "mix", 2, c);
        m ^= m >> 27;
        strcpy(c[0], "$z \\oplus (z \\gg 27)$");
        hex(c[1], sizeof c[1], m, 1);
        fill_row(&tr, "mix", 2, c);
        m *= UINT64_C(0x94d049bb133111eb);
        strcpy(c[0], "$\\cdot\\, c_2$");
        hex(c[1], sizeof c[1], m, 1);
        fill_row(&tr, "mix", 2, c);
        m ^= m >> 31;
        strcpy(c[0], "$z_1 = z \\oplus (z \\gg 31)$");
        hex(c[1], sizeof c[1], m, 1);
        fill_row(&tr, "mix", 2, c);
        printf("first draw mixed by hand=%s same=%s\n", hex(buf, sizeof buf, m, 0), m == z[0] ? "yes" : "no");
        ok = ok && m == z[0];
    }
    {
        llm_rng rng, copy;
        llm_tensor w, again, w18;
        llm_error err;
        double limit = sqrt(6.0 / (double)(2 + 2)), var = 2.0 / (double)(2 + 2), u, want;
        size_t k;
        int same_bits = 1, replay, differ = 1;
        char c[6][96], buf[256];

        llm_rng_seed(&rng, 17);
        copy = rng;
        if (!llm_demo_ok("ch17", llm_xavier_uniform(&w, 2, 2, &rng, &err), &err))
            return llm_demo_finish(&tr, 0);
        for (k = 0; k < 4; k++) {
            u = llm_rng_unit(&copy);
            want = limit * (2.0 * u - 1.0);
            same_bits = same_bits && memcmp(&w.data[k], &want, sizeof want) == 0;
            snprintf(c[0], sizeof c[0], "%zu", k + 1);
            snprintf(c[1], sizeof c[1], "[%zu, %zu]", k / 2, k % 2);
            llm_fmt(c[2], sizeof c[2], u, 12);
            llm_fmt(c[3], sizeof c[3], 2.0 * u - 1.0, 12);
            llm_fmt(c[4], sizeof c[4], w.data[k], 12);
            fill_row(&tr, "xavier", 5, c);
        }
        printf("seed=17 shape=[2, 2] limit=%s", llm_fmt(buf, sizeof buf, limit, 12));
        llm_trace_value(&tr, "limit", buf);
        printf(" var=%s", llm_fmt(buf, sizeof buf, var, 12));
        llm_trace_value(&tr, "var", buf);
        printf(" std=%s\n", llm_fmt(buf, sizeof buf, sqrt(var), 12));
        llm_trace_value(&tr, "std", buf);
        printf("seed=17 w=%s from_draws=%s\n", llm_fmt_list(buf, sizeof buf, w.data, 4, 12),
               same_bits ? "bit-identical" : "different");
        llm_trace_value(&tr, "w17", buf);
        printf("seed=17 state after 4 draws=%s\n", hex(buf, sizeof buf, rng.state, 0));
        llm_trace_value(&tr, "state17_4", buf);
        ok = ok && same_bits;

        llm_rng_seed(&rng, 17);
        if (!llm_demo_ok("ch17", llm_xavier_uniform(&again, 2, 2, &rng, &err), &err))
            return llm_demo_finish(&tr, 0);
        replay = memcmp(w.data, again.data, 4 * sizeof w.data[0]) == 0;
        llm_rng_seed(&rng, 18);
        if (!llm_demo_ok("ch17", llm_xavier_uniform(&w18, 2, 2, &rng, &err), &err))
            return llm_demo_finish(&tr, 0);
        for (k = 0; k < 4; k++) {
            differ = differ && w18.data[k] != w.data[k];
            snprintf(c[0], sizeof c[0], "%zu", k + 1);
            llm_fmt(c[1], sizeof c[1], w18.data[k], 12);
            fill_row(&tr, "seed18", 2, c);
        }
        printf("seed=17 again=%s\n", replay ? "bit-identical" : "different");
        llm_trace_value(&tr, "replay", replay ? "bit-identical" : "different");
        printf("seed=18 w=%s differs_everywhere=%s\n",
               llm_fmt_list(buf, sizeof buf, w18.data, 4, 12), differ ? "yes" : "no");
        llm_trace_value(&tr, "w18", buf);
        ok = ok && replay && differ;
        llm_tensor_free(&w);
        llm_tensor_free(&again);
        llm_tensor_free(&w18);
    }
    {
        static const size_t fans[4][2] = {{2, 2}, {4, 2}, {5, 4}, {200, 300}};
        llm_rng rng;
        llm_tensor w;
        llm_error err;
        double limit = 0.0, var = 0.0, mean = 0.0, sq = 0.0, big = 0.0;
        size_t r, i;
        char c[6][96];

        for (r = 0; r < 4; r++) {
            size_t sum = fans[r][0] + fans[r][1];
            limit = sqrt(6.0 / (double)sum);
            var = 2.0 / (double)sum;
            snprintf(c[0], sizeof c[0], "[%zu, %zu]", fans[r][0], fans[r][1]);
            snprintf(c[1], sizeof c[1], "%zu", sum);
            llm_fmt(c[2], sizeof c[2], var, 12);
            llm_fmt(c[3], sizeof c[3], sqrt(var), 12);
            llm_fmt(c[4], sizeof c[4], limit, 12);
            fill_row(&tr, "limits", 5, c);
            printf("shape=%s var=%s std=%s limit=%s\n", c[0], c[2], c[3], c[4]);
            if (r == 1) {
                llm_trace_value(&tr, "limit42", c[4]);
                llm_trace_value(&tr, "std42", c[3]);
            }
            if (r == 2)
                llm_trace_value(&tr, "limit_token", c[4]);
        }
        llm_rng_seed(&rng, 17);
        if (!llm_demo_ok("ch17", llm_xavier_uniform(&w, 200, 300, &rng, &err), &err))
            return llm_demo_finish(&tr, 0);
        for (i = 0; i < w.size; i++) {
            mean += w.data[i];
            if (fabs(w.data[i]) > big)
                big = fabs(w.data[i]);
        }
        mean /= (double)w.size;
        for (i = 0; i < w.size; i++)
            sq += (w.data[i] - mean) * (w.data[i] - mean);
        printf("seed=17 shape=[200, 300] mean=%s", llm_fmt(c[0], sizeof c[0], mean, 6));
        printf(" var=%s target=%s", llm_fmt(c[1], sizeof c[1], sq / (double)w.size, 6),
               llm_fmt(c[2], sizeof c[2], var, 6));
        printf(" max_abs=%s limit=%s\n", llm_fmt(c[3], sizeof c[3], big, 6),
               llm_fmt(c[4], sizeof c[4], limit, 6));
        llm_trace_value(&tr, "emp_mean", c[0]);
        llm_trace_value(&tr, "emp_var", c[1]);
        llm_trace_value(&tr, "emp_target", c[2]);
        llm_trace_value(&tr, "emp_max", c[3]);
        llm_trace_value(&tr, "emp_limit", c[4]);
        ok = ok && big <= limit;
        llm_tensor_free(&w);
    }
    {
        double w1[2][2] = {{0.0, 0.0}, {0.0, 0.0}}, w2[2] = {0.5, 0.5};
        double dw1[2][2], dw2[2], gy, loss;
        llm_rng rng;
        llm_tensor a, b;
        llm_error err;
        size_t k;
        int symmetric = 1;
        char c[6][96];

        tiny_grad(w1, w2, dw1, dw2, &gy);
        printf("zero start dL/dy=%s", llm_fmt(c[0], sizeof c[0], gy, 6));
        llm_trace_value(&tr, "sym_gy", c[0]);
        printf(" dW1 column0=%s", column(c[1], sizeof c[1], dw1, 0));
        printf(" column1=%s", column(c[2], sizeof c[2], dw1, 1));
        printf(" dW2=%s\n", llm_fmt_list(c[3], sizeof c[3], dw2, 2, 6));
        llm_trace_value(&tr, "sym_col0", c[1]);
        llm_trace_value(&tr, "sym_col1", c[2]);
        llm_trace_value(&tr, "sym_dw2", c[3]);
        symmetric = columns_equal(dw1);
        for (k = 0; k <= 3; k++) {
            symmetric = symmetric && columns_equal(w1)
                        && memcmp(&w2[0], &w2[1], sizeof w2[0]) == 0;
            snprintf(c[0], sizeof c[0], "%zu", k);
            column(c[1], sizeof c[1], w1, 0);
            column(c[2], sizeof c[2], w1, 1);
            llm_fmt_list(c[3], sizeof c[3], w2, 2, 6);
            loss = k < 3 ? tiny_step(w1, w2, 0.1) : tiny_grad(w1, w2, dw1, dw2, &gy);
            llm_fmt(c[4], sizeof c[4], loss, 6);
            fill_row(&tr, "symmetry", 5, c);
            printf("step %zu W1 columns=%s %s W2=%s loss=%s\n", k, c[1], c[2], c[3], c[4]);
        }
        printf("zero start after 3 steps units=%s\n", symmetric ? "bit-identical" : "different");
        llm_trace_value(&tr, "sym_equal", symmetric ? "bit-identical" : "different");
        llm_trace_value(&tr, "sym_steps", "3");
        ok = ok && symmetric && gy > 0.0;

        llm_rng_seed(&rng, 17);
        if (!llm_demo_ok("ch17", llm_xavier_uniform(&a, 2, 2, &rng, &err), &err))
            return llm_demo_finish(&tr, 0);
        if (!llm_demo_ok("ch17", llm_xavier_uniform(&b, 2, 1, &rng, &err), &err)) {
            llm_tensor_free(&a);
            return llm_demo_finish(&tr, 0);
        }
        memcpy(w1, a.data, sizeof w1);
        memcpy(w2, b.data, sizeof w2);
        tiny_grad(w1, w2, dw1, dw2, &gy);
        printf("random start W2=%s", llm_fmt_list(c[0], sizeof c[0], w2, 2, 6));
        printf(" dW1 column0=%s column1=%s equal=%s\n", column(c[1], sizeof c[1], dw1, 0),
               column(c[2], sizeof c[2], dw1, 1), columns_equal(dw1) ? "yes" : "no");
        llm_trace_value(&tr, "brk_w2", c[0]);
        llm_trace_value(&tr, "brk_col0", c[1]);
        llm_trace_value(&tr, "brk_col1", c[2]);
        ok = ok && !columns_equal(dw1);
        llm_tensor_free(&a);
        llm_tensor_free(&b);
    }
    {
        const size_t two[1] = {2};
        llm_params ps, again;
        llm_rng rng, before, fresh;
        llm_param first;
        llm_tensor up;
        llm_error err;
        llm_status st;
        size_t i, count_before, idx = 0, draws = 0, scalars = 0;
        int rng_same, list_same, fresh_same, replay = 1, no_draws;
        char c[6][96], buf[256];

        if (!llm_demo_ok("ch17", llm_params_init(&ps, &err), &err)
            || !llm_demo_ok("ch17", llm_params_init(&again, &err), &err))
            return llm_demo_finish(&tr, 0);
        llm_rng_seed(&rng, 17);
        before = rng;
        ok = ok && llm_demo_ok("ch17", llm_params_add_const(&ps, "final_norm.gain", 1, two, 1.0, 0,
                                                            &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        no_draws = memcmp(&rng, &before, sizeof rng) == 0;
        printf("final_norm.gain=%s generator %s\n",
               llm_fmt_list(buf, sizeof buf, ps.items[0].value.data, 2, 1),
               no_draws ? "unchanged" : "advanced");
        llm_trace_value(&tr, "gain_rng", no_draws ? "unchanged" : "advanced");
        ok = ok && no_draws;

        memcpy(&first, &ps.items[0], sizeof first);
        count_before = ps.count;
        st = add_two_layers(&ps, "mlp", 2, 3, 0, &rng, &err);
        llm_demo_refusal(&tr, "component mlp with d_out 0", st, &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "component_message", err.message);
        rng_same = memcmp(&rng, &before, sizeof rng) == 0;
        list_same = ps.count == count_before && memcmp(&ps.items[0], &first, sizeof first) == 0;
        printf("after the failed component: generator %s, list of %zu %s\n",
               rng_same ? "unchanged" : "advanced", ps.count, list_same ? "unchanged" : "changed");
        llm_trace_value(&tr, "component_rng", rng_same ? "unchanged" : "advanced");
        llm_trace_value(&tr, "component_list", list_same ? "unchanged" : "changed");
        ok = ok && st == LLM_ERR_ARGUMENT && rng_same && list_same;
        if (!llm_demo_ok("ch17", add_two_layers(&ps, "mlp", 2, 3, 2, &rng, &err), &err)) {
            llm_params_free(&ps);
            llm_params_free(&again);
            return llm_demo_finish(&tr, 0);
        }
        fresh = before;
        while (fresh.state != rng.state && draws < 1000) {
            fresh.state += UINT64_C(0x9e3779b97f4a7c15);
            draws++;
        }
        printf("component built: parameters=%zu draws=%zu state=%s\n", ps.count, draws,
               hex(buf, sizeof buf, rng.state, 0));
        snprintf(buf, sizeof buf, "%zu", draws);
        llm_trace_value(&tr, "draws", buf);
        for (i = 0; i < ps.count; i++) {
            const llm_param *p = &ps.items[i];
            snprintf(c[0], sizeof c[0], "%zu", i);
            snprintf(c[1], sizeof c[1], "`%s`", p->name);
            llm_fmt_sizes(c[2], sizeof c[2], p->value.shape, p->value.rank);
            snprintf(c[3], sizeof c[3], "%s", p->decay ? "Xavier" : p->value.data[0] == 1.0 ? "ones" : "zeros");
            snprintf(c[4], sizeof c[4], "%d", p->decay);
            snprintf(c[5], sizeof c[5], "%zu", p->decay ? p->value.size : (size_t)0);
            fill_row(&tr, "params", 6, c);
            printf("param %s name=%s shape=%s init=%s decay=%s draws=%s grad=%s\n", c[0], p->name,
                   c[2], c[3], c[4], c[5], llm_fmt_list(buf, sizeof buf, p->grad.data, p->grad.size, 0));
            scalars += p->value.size;
        }
        snprintf(buf, sizeof buf, "%zu", ps.count);
        llm_trace_value(&tr, "n_params", buf);
        snprintf(buf, sizeof buf, "%zu", scalars);
        llm_trace_value(&tr, "n_scalars", buf);
        llm_rng_seed(&fresh, 17);
        if (!llm_demo_ok("ch17", llm_xavier_uniform(&up, 2, 3, &fresh, &err), &err)) {
            llm_params_free(&ps);
            llm_params_free(&again);
            return llm_demo_finish(&tr, 0);
        }
        fresh_same = memcmp(up.data, ps.items[1].value.data, 6 * sizeof up.data[0]) == 0;
        llm_tensor_free(&up);
        printf("mlp.up.weight vs a fresh seed-17 [2, 3]=%s\n",
               fresh_same ? "bit-identical" : "different");
        llm_trace_value(&tr, "fresh_same", fresh_same ? "bit-identical" : "different");
        ok = ok && fresh_same && draws == 12;
        before = rng;
        count_before = ps.count;
        st = add_two_layers(&ps, "mlp", 2, 3, 2, &rng, &err);
        llm_demo_refusal(&tr, "component mlp a second time", st, &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "dup_message", err.message);
        ok = ok && st == LLM_ERR_NAME && ps.count == count_before
             && memcmp(&rng, &before, sizeof rng) == 0;

        ok = ok && llm_demo_ok("ch17", llm_params_find(&ps, "mlp.down.weight", &idx, &err), &err);
        printf("find mlp.down.weight=%zu\n", idx);
        snprintf(buf, sizeof buf, "%zu", idx);
        llm_trace_value(&tr, "find_index", buf);

        llm_rng_seed(&fresh, 17);
        ok = ok && llm_demo_ok("ch17", llm_params_add_const(&again, "final_norm.gain", 1, two, 1.0, 0,
                                                            &err), &err)
             && llm_demo_ok("ch17", add_two_layers(&again, "mlp", 2, 3, 2, &fresh, &err), &err);
        replay = ok && again.count == ps.count;
        for (i = 0; replay && i < ps.count; i++)
            replay = strcmp(again.items[i].name, ps.items[i].name) == 0
                     && memcmp(again.items[i].value.data, ps.items[i].value.data,
                               ps.items[i].value.size * sizeof(double)) == 0;
        printf("the list again from seed 17=%s\n", replay ? "bit-identical" : "different");
        llm_trace_value(&tr, "list_replay", replay ? "bit-identical" : "different");
        ok = ok && replay;
        llm_params_free(&ps);
        llm_params_free(&again);
    }
    {
        static const char *const names[11] = {
            "blocks.0.ffn.down.weight", "token_embedding.weight", "final_norm.gain",
            "", ".weight", "ffn.", "ffn..down", "FFN.weight", "ffn-down.weight",
            "ffn down", NULL};
        char long_name[LLM_PARAM_NAME_MAX + 1], shown[96], what[128], c[3][256];
        const char *cells[3] = {c[0], c[1], c[2]};
        llm_error err;
        llm_status st;
        size_t i;
        int good = 1;

        memset(long_name, 'a', LLM_PARAM_NAME_MAX);
        long_name[LLM_PARAM_NAME_MAX] = '\0';
        for (i = 0; i < 11; i++) {
            const char *name = names[i] != NULL ? names[i] : long_name;
            if (names[i] == NULL)
                snprintf(shown, sizeof shown, "%d × `a`", LLM_PARAM_NAME_MAX);
            else if (name[0] == '\0')
                snprintf(shown, sizeof shown, "(empty)");
            else
                snprintf(shown, sizeof shown, "`%s`", name);
            st = llm_param_name_check(name, &err);
            good = good && (st == LLM_OK) == (i < 3);
            if (names[i] == NULL)
                snprintf(what, sizeof what, "name of %d characters", LLM_PARAM_NAME_MAX);
            else
                snprintf(what, sizeof what, "name \"%s\"", name);
            if (st == LLM_OK)
                printf("accept %s\n", what);
            else
                printf("reject %s: %s (%s)\n", what, llm_status_name(st), err.stage);
            snprintf(c[0], sizeof c[0], "%s", shown);
            snprintf(c[1], sizeof c[1], "%s", llm_status_name(st));
            snprintf(c[2], sizeof c[2], "%s", st == LLM_OK ? "accepted" : err.message);
            llm_trace_row(&tr, "names", 3, cells);
        }
        ok = ok && good;
    }
    {
        const size_t empty[1] = {0}, two[1] = {2}, deep[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
        llm_params ps, ps_before;
        llm_rng rng, rng_before;
        llm_tensor out, marker;
        llm_error err;
        size_t idx = 99;
        int untouched;

        llm_rng_seed(&rng, 17);
        if (!llm_demo_ok("ch17", llm_params_init(&ps, &err), &err)
            || !llm_demo_ok("ch17", llm_params_add_xavier(&ps, "w", 2, 2, &rng, &err), &err))
            return llm_demo_finish(&tr, 0);
        memcpy(&ps_before, &ps, sizeof ps);
        rng_before = rng;
        memset(&out, 0x5a, sizeof out);
        memcpy(&marker, &out, sizeof out);
        llm_demo_refusal(&tr, "xavier without a generator",
                         llm_xavier_uniform(&out, 2, 2, NULL, &err), &err);
        llm_demo_refusal(&tr, "xavier [0, 3]", llm_xavier_uniform(&out, 0, 3, &rng, &err), &err);
        printf("  %s\n", err.message);
        llm_demo_refusal(&tr, "xavier [2^62, 4]",
                         llm_xavier_uniform(&out, SIZE_MAX / 4 + 1, 4, &rng, &err), &err);
        llm_demo_refusal(&tr, "add_xavier \"w\" a second time",
                         llm_params_add_xavier(&ps, "w", 2, 2, &rng, &err), &err);
        llm_demo_refusal(&tr, "add_xavier \"Layer.weight\"",
                         llm_params_add_xavier(&ps, "Layer.weight", 2, 2, &rng, &err), &err);
        printf("  %s\n", err.message);
        llm_demo_refusal(&tr, "add_xavier \"v\" [3, 0]",
                         llm_params_add_xavier(&ps, "v", 3, 0, &rng, &err), &err);
        llm_demo_refusal(&tr, "add_const \"b\" = NaN",
                         llm_params_add_const(&ps, "b", 1, two, NAN, 0, &err), &err);
        llm_demo_refusal(&tr, "add_const \"b\" of shape [0]",
                         llm_params_add_const(&ps, "b", 1, empty, 0.0, 0, &err), &err);
        llm_demo_refusal(&tr, "add_const \"b\" of rank 9",
                         llm_params_add_const(&ps, "b", 9, deep, 0.0, 0, &err), &err);
        llm_demo_refusal(&tr, "add_const without a list",
                         llm_params_add_const(NULL, "b", 1, two, 0.0, 0, &err), &err);
        llm_demo_refusal(&tr, "find \"w.bias\"", llm_params_find(&ps, "w.bias", &idx, &err), &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "find_message", err.message);
        llm_demo_refusal(&tr, "init without a list", llm_params_init(NULL, &err), &err);
        untouched = memcmp(&ps, &ps_before, sizeof ps) == 0
                    && memcmp(&rng, &rng_before, sizeof rng) == 0
                    && memcmp(&out, &marker, sizeof out) == 0 && idx == 99;
        printf("list, generator and outputs untouched after refusals=%s\n",
               untouched ? "yes" : "no");
        llm_trace_value(&tr, "untouched", untouched ? "yes" : "no");
        ok = ok && untouched;
        llm_params_free(&ps);
    }
    return llm_demo_finish(&tr, ok);
}
