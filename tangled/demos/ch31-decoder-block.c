/* ch31-decoder-block -- x' = x + MHA(RMSNorm(x)), y = x' + FFN(RMSNorm(x')):
   the stages, the post-norm variant, causality, gradients, refusals. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/model.h"

/* D: model width; H: heads, of width 2; F: feed-forward width; T:
   positions 0, 1, 2; STAGES: x and the six stages of a block. */
enum { D = 4, H = 2, F = 4, T = 3, STAGES = 7 };

/* Row t is 2 e_t. */
static const double fix_x[T * D] = {2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0};
/* The same rows with row 2 replaced, for the causality check. */
static const double fix_x2[T * D] = {2, 0, 0, 0, 0, 2, 0, 0, 1, -1, 0.5, 2};
/* The weighting of the objective L = sum W (.) y of the gradient check. */
static const double fix_w[T * D] = {1, -0.5, 0.25, 0.75, -1, 0.5, 2, -0.25,
                                    0.5, 1, -0.75, 1.5};
/* The n values of v, row-major, into out. */
static llm_status read_var(const llm_tape *tape, llm_var v, double *out, size_t n,
                           llm_error *err)
{
    const llm_tensor *t;
    size_t idx[LLM_MAX_RANK] = {0}, i = 0, k, o;
    llm_status st = llm_tape_value(tape, v, &t, err);
    if (st != LLM_OK)
        return st;
    if (t->size != n)
        return llm_fail(err, LLM_ERR_SHAPE, "ch31.read", "%zu values, %zu expected", t->size,
                        n);
    if (n > 0)
        do {
            for (o = t->offset, k = 0; k < t->rank; k++)
                o += idx[k] * t->stride[k];
            out[i++] = t->data[o];
        } while (llm_index_next(t->rank, t->shape, idx));
    return LLM_OK;
}

/* sqrt(mean(row^2)) of a row of width D. */
static double rms(const double *row)
{
    double s = 0.0;
    size_t k;
    for (k = 0; k < D; k++)
        s += row[k] * row[k];
    return sqrt(s / D);
}
/* The stages of one pass, position by position: report lines and the
   trace table; with fig, position 2 as the trace values <fig>0..<fig>6. */
static void print_stages(llm_trace *tr, const char *variant, const char *table,
                         const char *const *key, const char *const *label,
                         double stage[STAGES][T * D], const char *fig)
{
    char c[4][128], name[32];
    const char *cells[4] = {c[0], c[1], c[2], c[3]};
    size_t t, s;
    for (t = 0; t < T; t++) {
        printf("%s position=%zu\n", variant, t);
        for (s = 0; s < STAGES; s++) {
            const double *row = stage[s] + t * D;
            c[0][0] = '\0';
            if (s == 0)
                snprintf(c[0], sizeof c[0], "%zu", t);
            snprintf(c[1], sizeof c[1], "%s", label[s]);
            llm_fmt_list(c[2], sizeof c[2], row, D, 6);
            llm_fmt(c[3], sizeof c[3], rms(row), 6);
            llm_trace_row(tr, table, 4, cells);
            printf("  %s=%s rms=%s\n", key[s], c[2], c[3]);
            if (fig != NULL && t == 2) {
                snprintf(name, sizeof name, "%s%zu", fig, s);
                llm_trace_value(tr, name, llm_fmt_list(c[2], sizeof c[2], row, D, 3));
            }
        }
    }
}
/* s = x + MHA(x), x' = RMSNorm_attn(s), s' = x' + FFN(x'),
   y = RMSNorm_ffn(s'); v receives a = MHA(x), s, x', f = FFN(x'), s', y. */
static llm_status post_norm_forward(const llm_block *blk, llm_params *ps, llm_tape *tape,
                                    const llm_rope *rope, llm_var x, llm_var v[6],
                                    llm_var *weights, llm_error *err)
{
    llm_mha_trace mt;
    llm_status st = llm_mha_forward(&blk->attention, ps, tape, rope, x, 0, &mt, &v[0], err);
    if (st == LLM_OK)
        st = llm_residual_add(tape, x, v[0], &v[1], err);
    if (st == LLM_OK)
        st = llm_rmsnorm_forward(&blk->attention_norm, ps, tape, v[1], &v[2], err);
    if (st == LLM_OK)
        st = llm_swiglu_forward(&blk->ffn, ps, tape, v[2], &v[3], err);
    if (st == LLM_OK)
        st = llm_residual_add(tape, v[2], v[3], &v[4], err);
    if (st == LLM_OK)
        st = llm_rmsnorm_forward(&blk->ffn_norm, ps, tape, v[4], &v[5], err);
    if (st == LLM_OK)
        *weights = mt.weights;
    return st;
}
/* x [1, T, D] through blk, pre-norm (post = 0) or post-norm (post = 1):
   stage[0] = x, stage[1..6] the six stages; weights [H, T, T]. */
static llm_status run_block(const llm_block *blk, llm_params *ps, const llm_rope *rope,
                            const double *x, int post, double stage[STAGES][T * D],
                            double *weights, llm_error *err)
{
    static const size_t shape[3] = {1, T, D};
    llm_tape tape;
    llm_tensor xt;
    llm_block_trace bt;
    llm_var v[STAGES], wv;
    size_t s;
    llm_status st = llm_tensor_from(&xt, 3, shape, x, T * D, err);
    if (st != LLM_OK)
        return st;
    if ((st = llm_tape_init(&tape, 64, err)) == LLM_OK) {
        st = llm_tape_constant(&tape, &xt, &v[0], err);
        if (st == LLM_OK && post)
            st = post_norm_forward(blk, ps, &tape, rope, v[0], v + 1, &wv, err);
        else if (st == LLM_OK &&
                 (st = llm_block_forward(blk, ps, &tape, rope, v[0], 0, &bt, &v[6], err)) ==
                     LLM_OK) {
            v[1] = bt.attention_in;
            v[2] = bt.attention_out;
            v[3] = bt.mid;
            v[4] = bt.ffn_in;
            v[5] = bt.ffn_out;
            wv = bt.attention_detail.weights;
        }
        for (s = 0; st == LLM_OK && s < STAGES; s++)
            st = read_var(&tape, v[s], stage[s], T * D, err);
        if (st == LLM_OK)
            st = read_var(&tape, wv, weights, H * T * T, err);
        llm_tape_free(&tape);
    }
    llm_tensor_free(&xt);
    return st;
}
typedef struct probe {
    const llm_block *blk;
    llm_params *ps;
    const llm_rope *rope;
    llm_tensor *x;       /* [1, T, D], perturbed in place by the check */
    const llm_tensor *w; /* [1, T, D] */
} probe;

/* *loss = sum W (.) block(x); with dx, backward too. */
static llm_status probe_run(const probe *p, double *loss, llm_tensor *dx, llm_error *err)
{
    llm_tape tape;
    llm_var xv, yv, wv, pv, lv;
    const llm_tensor *v;
    llm_status st = llm_tape_init(&tape, 64, err);
    if (st != LLM_OK)
        return st;
    st = llm_tape_leaf(&tape, p->x, dx, &xv, err);
    if (st == LLM_OK)
        st = llm_block_forward(p->blk, p->ps, &tape, p->rope, xv, 0, NULL, &yv, err);
    if (st == LLM_OK)
        st = llm_tape_constant(&tape, p->w, &wv, err);
    if (st == LLM_OK)
        st = llm_tape_mul(&tape, yv, wv, &pv, err);
    if (st == LLM_OK)
        st = llm_tape_sum_all(&tape, pv, &lv, err);
    if (st == LLM_OK && (st = llm_tape_value(&tape, lv, &v, err)) == LLM_OK)
        *loss = v->data[v->offset];
    if (st == LLM_OK && dx != NULL)
        st = llm_tape_backward(&tape, lv, NULL, 0, err);
    llm_tape_free(&tape);
    return st;
}

static llm_status probe_loss(void *ctx, const llm_tensor *theta, double *value,
                             llm_error *err)
{
    (void)theta;
    return probe_run(ctx, value, NULL, err);
}

int main(int argc, char **argv)
{
    llm_trace tr;
    llm_error err;
    llm_params ps;
    llm_rng rng;
    llm_block blk;
    llm_rope rope;
    double pre[STAGES][T * D], post[STAGES][T * D], wpre[H * T * T], wpost[H * T * T];
    int ok;
    int status = llm_demo_start(argc, argv, "ch31-decoder-block", &tr);
    if (status != 0)
        return status;
    printf("chapter=31 decoder-block\n");
    llm_rng_seed(&rng, 31);
    ok = llm_demo_ok("ch31", llm_params_init(&ps, &err), &err)
         && llm_demo_ok("ch31", llm_block_init(&blk, &ps, "block", D, H, F, 0.0, &rng, &err),
                        &err)
         && llm_demo_ok("ch31", llm_rope_init(&rope, D / H, 100.0, 6, LLM_ROPE_ADJACENT, &err),
                        &err);
    if (!ok)
        return llm_demo_finish(&tr, 0);
    printf("config d_model=%d n_heads=%d head_dim=%d d_ff=%d eps=0 rope_base=100 capacity=6\n",
           D, H, D / H, F);
    {
        llm_params rep;
        llm_rng replay;
        size_t i, scalars = 0, draws = 0;
        int same = 1;
        char c[4][80];
        const char *cells[4] = {c[0], c[1], c[2], c[3]};
        llm_rng_seed(&replay, 31);
        ok = llm_demo_ok("ch31", llm_params_init(&rep, &err), &err);
        for (i = 0; ok && i < ps.count; i++) {
            const llm_tensor *w = &ps.items[i].value;
            size_t nd = w->rank == 2 ? w->size : 0;
            snprintf(c[0], sizeof c[0], "`%s`", ps.items[i].name);
            llm_fmt_sizes(c[1], sizeof c[1], w->shape, w->rank);
            snprintf(c[2], sizeof c[2], "%zu", w->size);
            snprintf(c[3], sizeof c[3], "%zu", nd);
            llm_trace_row(&tr, "params", 4, cells);
            printf("param %s shape=%s scalars=%s draws=%s\n", ps.items[i].name, c[1], c[2], c[3]);
            scalars += w->size;
            draws += nd;
            if (nd > 0) {
                ok = llm_demo_ok("ch31", llm_params_add_xavier(&rep, ps.items[i].name, w->shape[0],
                                                               w->shape[1], &replay, &err), &err);
                same = same && ok &&
                       memcmp(rep.items[rep.count - 1].value.data, w->data,
                              w->size * sizeof *w->data) == 0;
            }
        }
        same = same && replay.state == rng.state;
        llm_params_free(&rep);
        printf("parameters tensors=%zu scalars=%zu draws=%zu\n", ps.count, scalars, draws);
        printf("draws replayed in list order from seed 31: bit-identical=%s\n", same ? "yes" : "no");
        snprintf(c[0], sizeof c[0], "%zu", ps.count);
        llm_trace_value(&tr, "tensors", c[0]);
        snprintf(c[0], sizeof c[0], "%zu", scalars);
        llm_trace_value(&tr, "scalars", c[0]);
        snprintf(c[0], sizeof c[0], "%zu", draws);
        llm_trace_value(&tr, "draws", c[0]);
        llm_trace_value(&tr, "replay", same ? "yes" : "no");
        ok = ok && same && ps.count == 9 && scalars == 120;
    }
    {
        size_t i, j;
        for (i = 0; i < ps.count; i++) {
            llm_tensor *w = &ps.items[i].value;
            if (w->rank == 2)
                for (j = 0; j < w->size; j++)
                    w->data[j] = j / w->shape[1] == j % w->shape[1] ? 1.0 : 0.0;
        }
    }
    {
        static const char *const key[STAGES] = {"x", "norm1", "attention", "mid", "norm2", "ffn",
                                                "y"};
        static const char *const label[STAGES] = {
            "$x$", "$\\hat x = \\operatorname{RMSNorm}(x)$", "$a = \\operatorname{MHA}(\\hat x)$",
            "$x' = x + a$", "$\\hat x' = \\operatorname{RMSNorm}(x')$",
            "$f = \\operatorname{FFN}(\\hat x')$", "$y = x' + f$"};
        char buf[512], c[3][96];
        const char *cells[3] = {c[0], c[1], c[2]};
        double r[T];
        size_t h, t;
        int same;
        ok = llm_demo_ok("ch31", run_block(&blk, &ps, &rope, fix_x, 0, pre, wpre, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        print_stages(&tr, "pre-norm", "stages", key, label, pre, "pre");
        for (h = 0; h < H; h++)
            for (t = 0; t < T; t++) {
                snprintf(c[0], sizeof c[0], "%zu", h);
                snprintf(c[1], sizeof c[1], "%zu", t);
                llm_fmt_list(c[2], sizeof c[2], wpre + (h * T + t) * T, T, 6);
                llm_trace_row(&tr, "weights", 3, cells);
                printf("weights head=%zu position=%zu %s\n", h, t, c[2]);
                snprintf(c[0], sizeof c[0], "w%zu_%zu", h, t);
                llm_trace_value(&tr, c[0], c[2]);
            }
        same = memcmp(pre[1], pre[0], sizeof pre[0]) == 0;
        printf("norm1 returns x bit for bit=%s\n", same ? "yes" : "no");
        llm_trace_value(&tr, "norm1_same", same ? "yes" : "no");
        printf("output=%s\n", llm_fmt_list(buf, sizeof buf, pre[6], T * D, 6));
        llm_trace_value(&tr, "output", buf);
        for (t = 0; t < T; t++) {
            llm_trace_value(&tr, t == 0 ? "y0" : t == 1 ? "y1" : "y2",
                            llm_fmt_list(buf, sizeof buf, pre[6] + t * D, D, 6));
            r[t] = rms(pre[6] + t * D);
        }
        printf("output rms=%s\n", llm_fmt_list(buf, sizeof buf, r, T, 6));
        llm_trace_value(&tr, "f0", llm_fmt(buf, sizeof buf, pre[5][0], 6));
        llm_trace_value(&tr, "pre_rms", buf);
        ok = same;
    }
    {
        static const char *const key[STAGES] = {"x", "attention", "sum1", "mid", "ffn", "sum2",
                                                "y"};
        static const char *const label[STAGES] = {
            "$x$", "$a = \\operatorname{MHA}(x)$", "$s = x + a$",
            "$x' = \\operatorname{RMSNorm}(s)$", "$f = \\operatorname{FFN}(x')$",
            "$s' = x' + f$", "$y = \\operatorname{RMSNorm}(s')$"};
        char buf[512];
        double r[T], diff = 0.0;
        size_t i, t;
        int same_weights;
        ok = ok && llm_demo_ok("ch31", run_block(&blk, &ps, &rope, fix_x, 1, post, wpost, &err),
                               &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        print_stages(&tr, "post-norm", "post", key, label, post, "post");
        printf("post-norm output=%s\n", llm_fmt_list(buf, sizeof buf, post[6], T * D, 6));
        llm_trace_value(&tr, "post_output", buf);
        for (t = 0; t < T; t++) {
            llm_trace_value(&tr, t == 0 ? "post_y0" : t == 1 ? "post_y1" : "post_y2",
                            llm_fmt_list(buf, sizeof buf, post[6] + t * D, D, 6));
            r[t] = rms(post[6] + t * D);
        }
        printf("post-norm output rms=%s\n", llm_fmt_list(buf, sizeof buf, r, T, 6));
        llm_trace_value(&tr, "post_rms", buf);
        for (i = 0; i < T * D; i++)
            if (fabs(post[6][i] - pre[6][i]) > diff)
                diff = fabs(post[6][i] - pre[6][i]);
        same_weights = memcmp(wpre, wpost, sizeof wpre) == 0;
        printf("attention weights as pre-norm=%s largest output difference=%s\n",
               same_weights ? "yes" : "no", llm_fmt(buf, sizeof buf, diff, 6));
        llm_trace_value(&tr, "post_same_weights", same_weights ? "yes" : "no");
        llm_trace_value(&tr, "post_diff", buf);
        ok = ok && diff > 1.0;
    }
    {
        double again[STAGES][T * D], w2[H * T * T];
        char buf[128];
        size_t s;
        int prefix = 1, changed;
        ok = ok && llm_demo_ok("ch31", run_block(&blk, &ps, &rope, fix_x2, 0, again, w2, &err),
                               &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        for (s = 0; s < STAGES; s++)
            prefix = prefix && memcmp(again[s], pre[s], 2 * D * sizeof(double)) == 0;
        changed = memcmp(again[6] + 2 * D, pre[6] + 2 * D, D * sizeof(double)) != 0;
        printf("row 2 replaced by [1, -1, 0.5, 2]: y[2]=%s\n",
               llm_fmt_list(buf, sizeof buf, again[6] + 2 * D, D, 6));
        llm_trace_value(&tr, "causal_y2", buf);
        printf("rows 0 and 1 of every stage bit-identical=%s row 2 changed=%s\n",
               prefix ? "yes" : "no", changed ? "yes" : "no");
        llm_trace_value(&tr, "causal_prefix", prefix ? "yes" : "no");
        llm_trace_value(&tr, "causal_changed", changed ? "yes" : "no");
        ok = ok && prefix && changed;
    }
    {
        static const size_t shape[3] = {1, T, D};
        static const size_t coords[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
        llm_tensor x, dx, w;
        double loss = 0.0, worst, worst_all = 0.0;
        size_t i, failures, failed = 0, total = 0;
        char c[4][96], buf[64];
        const char *cells[4] = {c[0], c[1], c[2], c[3]};
        probe pr;
        memset(&x, 0, sizeof x);
        memset(&dx, 0, sizeof dx);
        memset(&w, 0, sizeof w);
        ok = ok && llm_demo_ok("ch31", llm_tensor_from(&x, 3, shape, fix_x, T * D, &err), &err)
             && llm_demo_ok("ch31", llm_tensor_zeros(&dx, 3, shape, &err), &err)
             && llm_demo_ok("ch31", llm_tensor_from(&w, 3, shape, fix_w, T * D, &err), &err);
        pr.blk = &blk;
        pr.ps = &ps;
        pr.rope = &rope;
        pr.x = &x;
        pr.w = &w;
        ok = ok && llm_demo_ok("ch31", probe_run(&pr, &loss, &dx, &err), &err);
        printf("objective L=sum W*y loss=%s\n", llm_fmt(buf, sizeof buf, loss, 6));
        for (i = 0; ok && i <= ps.count; i++) {
            llm_tensor *theta = i < ps.count ? &ps.items[i].value : &x;
            const llm_tensor *g = i < ps.count ? &ps.items[i].grad : &dx;
            ok = llm_demo_ok("ch31", llm_gradient_check(probe_loss, &pr, theta, g->data + g->offset,
                                                        coords, theta->size, 1e-6, 2e-5, &worst,
                                                        &failures, &err), &err);
            if (!ok)
                break;
            if (i < ps.count)
                snprintf(c[0], sizeof c[0], "`%s`", ps.items[i].name);
            else
                snprintf(c[0], sizeof c[0], "input $x$");
            snprintf(c[1], sizeof c[1], "%zu", theta->size);
            snprintf(c[2], sizeof c[2], "%.1e", worst);
            snprintf(c[3], sizeof c[3], "%s", failures == 0 ? "pass" : "fail");
            llm_trace_row(&tr, "grads", 4, cells);
            printf("gradcheck %s coordinates=%s worst=%s verdict=%s\n",
                   i < ps.count ? ps.items[i].name : "x", c[1], c[2], c[3]);
            failed += failures;
            total += theta->size;
            if (worst > worst_all)
                worst_all = worst;
        }
        snprintf(buf, sizeof buf, "%.1e", worst_all);
        printf("gradcheck coordinates=%zu worst=%s failures=%zu\n", total, buf, failed);
        llm_trace_value(&tr, "grad_worst", buf);
        snprintf(buf, sizeof buf, "%zu", total);
        llm_trace_value(&tr, "grad_coords", buf);
        llm_trace_value(&tr, "grad_verdict", ok && failed == 0 ? "pass" : "fail");
        ok = ok && failed == 0 && total == 132;
        llm_tensor_free(&x);
        llm_tensor_free(&dx);
        llm_tensor_free(&w);
    }
    {
        llm_block bad, bad_kept;
        llm_rng rng_kept = rng;
        size_t count = ps.count;
        int untouched;
        llm_status st;
        memset(&bad, 0x5a, sizeof bad);
        bad_kept = bad;
        st = llm_block_init(&bad, &ps, "bad", 4, 0, 4, 0.0, &rng, &err);
        llm_demo_refusal(&tr, "0 heads", st, &err);
        ok = ok && st == LLM_ERR_CONFIG;
        st = llm_block_init(&bad, &ps, "bad", 4, 3, 4, 0.0, &rng, &err);
        llm_demo_refusal(&tr, "3 heads, width 4", st, &err);
        ok = ok && st == LLM_ERR_CONFIG;
        st = llm_block_init(&bad, &ps, "bad", 6, 2, 4, 0.0, &rng, &err);
        llm_demo_refusal(&tr, "2 heads, width 6", st, &err);
        ok = ok && st == LLM_ERR_CONFIG;
        st = llm_block_init(&bad, &ps, "bad", 0, 2, 4, 0.0, &rng, &err);
        llm_demo_refusal(&tr, "width 0", st, &err);
        ok = ok && st == LLM_ERR_CONFIG;
        st = llm_block_init(&bad, &ps, "bad", 4, 2, 0, 0.0, &rng, &err);
        llm_demo_refusal(&tr, "d_ff 0", st, &err);
        ok = ok && st == LLM_ERR_CONFIG;
        st = llm_block_init(&bad, &ps, "bad", 4, 2, 4, -1e-6, &rng, &err);
        llm_demo_refusal(&tr, "eps -1e-6", st, &err);
        ok = ok && st == LLM_ERR_CONFIG;
        st = llm_block_init(&bad, &ps, "bad", 4, 2, 4, NAN, &rng, &err);
        llm_demo_refusal(&tr, "eps NaN", st, &err);
        ok = ok && st == LLM_ERR_CONFIG;
        st = llm_block_init(&bad, &ps, "block", 4, 2, 4, 0.0, &rng, &err);
        llm_demo_refusal(&tr, "prefix \"block\" again", st, &err);
        ok = ok && st == LLM_ERR_NAME;
        untouched = ps.count == count && rng.state == rng_kept.state &&
                    memcmp(&bad, &bad_kept, sizeof bad) == 0;
        printf("after the refused constructions: list, stream and block untouched=%s\n",
               untouched ? "yes" : "no");
        llm_trace_value(&tr, "init_untouched", untouched ? "yes" : "no");
        ok = ok && untouched;
        {
            static const size_t s2[2] = {T, D}, s5[3] = {1, T, 5}, s3[3] = {1, T, D};
            static const double five[T * 5] = {0};
            llm_tape tape;
            llm_tensor x2, x5, x3;
            llm_var v2, v5, v3, y, y_kept;
            llm_block_trace bt, bt_kept;
            llm_rope wide;
            size_t nodes;
            ok = ok && llm_demo_ok("ch31", llm_tensor_from(&x2, 2, s2, fix_x, T * D, &err), &err)
                 && llm_demo_ok("ch31", llm_tensor_from(&x5, 3, s5, five, T * 5, &err), &err)
                 && llm_demo_ok("ch31", llm_tensor_from(&x3, 3, s3, fix_x, T * D, &err), &err)
                 && llm_demo_ok("ch31", llm_rope_init(&wide, 4, 100.0, 6, LLM_ROPE_ADJACENT, &err), &err)
                 && llm_demo_ok("ch31", llm_tape_init(&tape, 8, &err), &err)
                 && llm_demo_ok("ch31", llm_tape_constant(&tape, &x2, &v2, &err), &err)
                 && llm_demo_ok("ch31", llm_tape_constant(&tape, &x5, &v5, &err), &err)
                 && llm_demo_ok("ch31", llm_tape_constant(&tape, &x3, &v3, &err), &err);
            if (!ok)
                return llm_demo_finish(&tr, 0);
            nodes = tape.count;
            memset(&y, 0x2d, sizeof y);
            y_kept = y;
            memset(&bt, 0x3c, sizeof bt);
            bt_kept = bt;
            st = llm_block_forward(&blk, &ps, &tape, &rope, v2, 0, &bt, &y, &err);
            llm_demo_refusal(&tr, "x of shape [3, 4]", st, &err);
            ok = ok && st == LLM_ERR_RANK;
            st = llm_block_forward(&blk, &ps, &tape, &rope, v5, 0, &bt, &y, &err);
            llm_demo_refusal(&tr, "x of shape [1, 3, 5]", st, &err);
            ok = ok && st == LLM_ERR_SHAPE;
            st = llm_block_forward(&blk, &ps, &tape, &rope, v3, 4, &bt, &y, &err);
            llm_demo_refusal(&tr, "3 positions from offset 4", st, &err);
            llm_trace_value(&tr, "index_message", err.message);
            ok = ok && st == LLM_ERR_INDEX;
            st = llm_block_forward(&blk, &ps, &tape, &wide, v3, 0, &bt, &y, &err);
            llm_demo_refusal(&tr, "a rope for heads of width 4", st, &err);
            ok = ok && st == LLM_ERR_CONFIG;
            untouched = tape.count == nodes && memcmp(&y, &y_kept, sizeof y) == 0 &&
                        memcmp(&bt, &bt_kept, sizeof bt) == 0;
            printf("after the refused passes: tape, output and trace untouched=%s\n",
                   untouched ? "yes" : "no");
            llm_trace_value(&tr, "forward_untouched", untouched ? "yes" : "no");
            ok = ok && untouched;
            llm_tape_free(&tape);
            llm_rope_free(&wide);
            llm_tensor_free(&x2);
            llm_tensor_free(&x5);
            llm_tensor_free(&x3);
        }
    }
    llm_rope_free(&rope);
    llm_params_free(&ps);
    return llm_demo_finish(&tr, ok);
}
