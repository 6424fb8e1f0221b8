/* ch31-decoder-block -- x' = x + MHA(RMSNorm(x)), y = x' + FFN(RMSNorm(x')):
   the stages, the post-norm variant, causality, gradients, refusals. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/model.h"
#include "llm/probe.h"

/* D: model width; H: heads, of width 2; F: feed-forward width; T:
   positions 0, 1, 2; STAGES: x and the six stages of a block. */
enum { D = 4, H = 2, F = 4, T = 3, STAGES = 7 };

/* Row t is 2 e_t, of the input [1, T, D]. */
static const size_t fix_shape[3] = {1, T, D};
static const double fix_x[T * D] = {2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0};
/* The same rows with row 2 replaced, for the causality check. */
static const double fix_x2[T * D] = {2, 0, 0, 0, 0, 2, 0, 0, 1, -1, 0.5, 2};
/* The weighting of the objective L = sum W (.) y of the gradient check. */
static const double fix_w[T * D] = {1, -0.5, 0.25, 0.75, -1, 0.5, 2, -0.25,
                                    0.5, 1, -0.75, 1.5};
/* One pass, row-major: x and the six stages; the weights [H, T, T]. */
typedef struct pass { double stage[STAGES][T * D], weights[H * T * T]; } pass;
static llm_params *ps;   /* the fixture's list, owned by main */
static llm_rope *rope;   /* head width 2, base 100, capacity 6; owned by main */
static llm_block blk;    /* in ps */
static llm_rng rng;      /* what blk was drawn from, seed 31 */
/* sqrt(mean(r^2)) of a row r of width D = 4. */
static double rms(const double *r)
{
    return sqrt((r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + r[3] * r[3]) / D);
}
static int same(const double *a, const double *b, size_t n)
{
    return memcmp(a, b, n * sizeof *a) == 0;
}
static void release_rope(void *r)
{
    llm_rope_free(r);
}
/* The stages' names in the report and their labels in the trace:
   pre-norm [0], post-norm [1]. */
static const char *const key[2][STAGES] = {
    {"x", "norm1", "attention", "mid", "norm2", "ffn", "y"},
    {"x", "attention", "sum1", "mid", "ffn", "sum2", "y"}};
static const char *const label[2][STAGES] = {
    {"$x$", "$\\hat x = \\operatorname{RMSNorm}(x)$",
     "$a = \\operatorname{MHA}(\\hat x)$", "$x' = x + a$",
     "$\\hat x' = \\operatorname{RMSNorm}(x')$", "$f = \\operatorname{FFN}(\\hat x')$",
     "$y = x' + f$"},
    {"$x$", "$a = \\operatorname{MHA}(x)$", "$s = x + a$",
     "$x' = \\operatorname{RMSNorm}(s)$", "$f = \\operatorname{FFN}(x')$",
     "$s' = x' + f$", "$y = \\operatorname{RMSNorm}(s')$"}};

/* The stages of p, position by position: report lines and the rows of the
   table stages or post; position 2 also as the trace values pre0.., post0... */
static void print_stages(llm_demo *d, int post, const pass *p)
{
    const char *name = post ? "post" : "pre", *table = post ? "post" : "stages";
    size_t t, s;
    for (t = 0; t < T; t++) {
        printf("%s-norm position=%zu\n", name, t);
        for (s = 0; s < STAGES; s++) {
            const double *row = p->stage[s] + t * D;
            const char *values = llm_nums(row, D, 6), *r = llm_num(rms(row), 6);
            llm_row(d, table, s == 0 ? llm_text("%zu", t) : "", label[post][s], values,
                    r, NULL);
            printf("  %s=%s rms=%s\n", key[post][s], values, r);
            if (t == 2)
                llm_put(d, llm_text("%s%zu", name, s), llm_nums(row, D, 3));
        }
    }
}
/* s = x + MHA(x), x' = RMSNorm_attn(s), s' = x' + FFN(x'), y = RMSNorm_ffn(s'):
   v[0..5] get a = MHA(x), s, x', f = FFN(x'), s', y; mt the attention's trace. */
static int post_norm_forward(llm_demo *d, llm_tape *t, llm_var x, llm_var *v,
                             llm_mha_trace *mt)
{
    llm_error *e = &d->err;
    return LLM_TRY(d, llm_mha_forward(&blk.attention, ps, t, rope, x, 0, mt, &v[0], e))
           && LLM_TRY(d, llm_residual_add(t, x, v[0], &v[1], e))
           && LLM_TRY(d, llm_rmsnorm_forward(&blk.attention_norm, ps, t, v[1], &v[2],
                                             e))
           && LLM_TRY(d, llm_swiglu_forward(&blk.ffn, ps, t, v[2], &v[3], e))
           && LLM_TRY(d, llm_residual_add(t, v[2], v[3], &v[4], e))
           && LLM_TRY(d, llm_rmsnorm_forward(&blk.ffn_norm, ps, t, v[4], &v[5], e));
}
/* x [1, T, D] through blk, pre-norm (post = 0) or post-norm (post = 1). */
static int run(llm_demo *d, const double *x, int post, pass *o)
{
    llm_tape *tp = llm_own_tape(d);
    llm_tensor *xt = llm_own_tensor(d);
    llm_error *e = &d->err;
    llm_block_trace bt;
    llm_var v[STAGES];
    size_t s;
    if (!(LLM_TRY(d, llm_tensor_from(xt, 3, fix_shape, x, T * D, e))
          && LLM_TRY(d, llm_tape_init(tp, 64, e))
          && LLM_TRY(d, llm_tape_constant(tp, xt, &v[0], e))
          && (post ? post_norm_forward(d, tp, v[0], v + 1, &bt.attention_detail)
                   : LLM_TRY(d, llm_block_forward(&blk, ps, tp, rope, v[0], 0, &bt,
                                                  &v[6], e)))))
        return 0;
    if (!post)                           /* the block's trace names its stages */
        memcpy(v + 1, (const llm_var[5]){bt.attention_in, bt.attention_out, bt.mid,
                                         bt.ffn_in, bt.ffn_out}, 5 * sizeof *v);
    for (s = 0; s < STAGES; s++)
        if (!LLM_TRY(d, llm_probe_read(tp, v[s], o->stage[s], T * D, NULL, NULL, e)))
            return 0;
    return LLM_TRY(d, llm_probe_read(tp, bt.attention_detail.weights, o->weights,
                                     H * T * T, NULL, NULL, e));
}
static void build(llm_demo *d)
{
    llm_params *rep = llm_own_params(d);      /* the replayed draws */
    llm_error *e = &d->err;
    llm_rng replay;
    size_t i, j, scalars = 0, draws = 0;
    int replayed = 1;
    llm_rng_seed(&rng, 31);
    llm_rng_seed(&replay, 31);
    if (!(LLM_TRY(d, llm_block_init(&blk, ps, "block", D, H, F, 0.0, &rng, e))
          && LLM_TRY(d, llm_rope_init(rope, D / H, 100.0, 6, LLM_ROPE_ADJACENT, e))))
        return;
    printf("config d_model=%d n_heads=%d head_dim=%d d_ff=%d eps=0 rope_base=100 "
           "capacity=6\n", D, H, D / H, F);
    for (i = 0; i < ps->count; i++) {
        llm_tensor *w = &ps->items[i].value;
        const char *name = ps->items[i].name, *shape = llm_sizes(w->shape, w->rank);
        const size_t nd = w->rank == 2 ? w->size : 0;
        const char *n = llm_text("%zu", w->size), *k = llm_text("%zu", nd);
        llm_row(d, "params", llm_text("`%s`", name), shape, n, k, NULL);
        printf("param %s shape=%s scalars=%s draws=%s\n", name, shape, n, k);
        scalars += w->size;
        draws += nd;
        if (nd > 0 && !LLM_TRY(d, llm_params_add_xavier(rep, name, w->shape[0],
                                                        w->shape[1], &replay, e)))
            return;
        replayed = replayed && (nd == 0 || same(rep->items[rep->count - 1].value.data,
                                                w->data, nd));
        for (j = 0; j < nd; j++)
            w->data[j] = j / w->shape[1] == j % w->shape[1] ? 1.0 : 0.0;
    }
    replayed = replayed && replay.state == rng.state;
    printf("parameters tensors=%s", llm_put(d, "tensors", llm_text("%zu", ps->count)));
    printf(" scalars=%s", llm_put(d, "scalars", llm_text("%zu", scalars)));
    printf(" draws=%s\n", llm_put(d, "draws", llm_text("%zu", draws)));
    printf("draws replayed in list order from seed 31: bit-identical=%s\n",
           llm_put(d, "replay", llm_yes(replayed)));
    llm_demo_check(d, replayed, "the draws replay in list order from seed 31");
    llm_demo_check(d, ps->count == 9 && scalars == 120, "9 tensors, 120 scalars");
}
static void passes(llm_demo *d)
{
    pass pre, post, again;
    double r[T], diff = 0.0;
    size_t i, t;
    int kept, prefix = 1, changed;
    if (!run(d, fix_x, 0, &pre))
        return;
    print_stages(d, 0, &pre);
    for (i = 0; i < H * T; i++) {           /* head i / T, position i % T */
        const char *w = llm_nums(pre.weights + T * i, T, 6);
        llm_row(d, "weights", llm_text("%zu", i / T), llm_text("%zu", i % T), w, NULL);
        printf("weights head=%zu position=%zu %s\n", i / T, i % T, w);
        llm_put(d, llm_text("w%zu_%zu", i / T, i % T), w);
    }
    kept = same(pre.stage[1], pre.stage[0], T * D);
    printf("norm1 returns x bit for bit=%s\n", llm_put(d, "norm1_same", llm_yes(kept)));
    printf("output=%s\n", llm_put(d, "output", llm_nums(pre.stage[6], T * D, 6)));
    for (t = 0; t < T; t++) {
        llm_put(d, llm_text("y%zu", t), llm_nums(pre.stage[6] + t * D, D, 6));
        r[t] = rms(pre.stage[6] + t * D);
    }
    printf("output rms=%s\n", llm_put(d, "pre_rms", llm_nums(r, T, 6)));
    llm_put(d, "f0", llm_num(pre.stage[5][0], 6));
    llm_demo_check(d, kept, "the first norm returns x bit for bit");
    if (!run(d, fix_x, 1, &post))
        return;
    print_stages(d, 1, &post);
    printf("post-norm output=%s\n",
           llm_put(d, "post_output", llm_nums(post.stage[6], T * D, 6)));
    for (t = 0; t < T; t++) {
        llm_put(d, llm_text("post_y%zu", t), llm_nums(post.stage[6] + t * D, D, 6));
        r[t] = rms(post.stage[6] + t * D);
    }
    printf("post-norm output rms=%s\n", llm_put(d, "post_rms", llm_nums(r, T, 6)));
    for (i = 0; i < T * D; i++)
        diff = fmax(diff, fabs(post.stage[6][i] - pre.stage[6][i]));
    printf("attention weights as pre-norm=%s", llm_put(d, "post_same_weights",
           llm_yes(same(pre.weights, post.weights, H * T * T))));
    printf(" largest output difference=%s\n",
           llm_put(d, "post_diff", llm_num(diff, 6)));
    llm_demo_check(d, diff > 1.0, "post-norm moves the output by more than 1");
    llm_demo_check(d, same(pre.weights, post.weights, H * T * T),
                   "both placements attend with the same weights");
    if (!run(d, fix_x2, 0, &again))
        return;
    for (i = 0; i < STAGES; i++)
        prefix = prefix && same(again.stage[i], pre.stage[i], 2 * D);
    changed = !same(again.stage[6] + 2 * D, pre.stage[6] + 2 * D, D);
    printf("row 2 replaced by [1, -1, 0.5, 2]: y[2]=%s\n",
           llm_put(d, "causal_y2", llm_nums(again.stage[6] + 2 * D, D, 6)));
    printf("rows 0 and 1 of every stage bit-identical=%s",
           llm_put(d, "causal_prefix", llm_yes(prefix)));
    printf(" row 2 changed=%s\n", llm_put(d, "causal_changed", llm_yes(changed)));
    llm_demo_check(d, prefix, "rows 0 and 1 of every stage do not see row 2");
    llm_demo_check(d, changed, "row 2 of the output changes");
}
static llm_status block_layer(const void *layer, llm_params *list, llm_tape *tape,
                              llm_var x, llm_var *y, llm_error *err)
{
    return llm_block_forward(layer, list, tape, rope, x, 0, NULL, y, err);
}
static void gradients(llm_demo *d)
{
    static const size_t coords[16] = {0, 1, 2, 3, 4, 5, 6, 7,
                                      8, 9, 10, 11, 12, 13, 14, 15};
    llm_tensor *xt = llm_own_tensor(d);
    llm_probe p = {block_layer, &blk, ps, 3, fix_shape, NULL, fix_w};
    double y[T * D], gx[T * D], loss, worst, worst_all = 0.0;
    size_t i, failures, failed = 0, total = 0;
    if (!LLM_TRY(d, llm_tensor_from(xt, 3, fix_shape, fix_x, T * D, &d->err)))
        return;
    p.x = xt->data;
    if (!(LLM_TRY(d, llm_probe_run(&p, y, T * D, NULL, NULL, gx, &d->err))
          && LLM_TRY(d, llm_probe_loss(&p, NULL, &loss, &d->err))))
        return;
    printf("objective L=sum W*y loss=%s\n", llm_num(loss, 6));
    for (i = 0; i <= ps->count; i++) {
        llm_tensor *theta = i < ps->count ? &ps->items[i].value : xt;
        const double *g = i < ps->count ? ps->items[i].grad.data : gx;
        const char *name = i < ps->count ? ps->items[i].name : "x", *w;
        if (!LLM_TRY(d, llm_gradient_check(llm_probe_loss, &p, theta, g, coords,
                                           theta->size, 1e-6, 2e-5, &worst, &failures,
                                           &d->err)))
            return;
        w = llm_text("%.1e", worst);
        llm_row(d, "grads", i < ps->count ? llm_text("`%s`", name) : "input $x$",
                llm_text("%zu", theta->size), w, failures ? "fail" : "pass", NULL);
        printf("gradcheck %s coordinates=%zu worst=%s verdict=%s\n", name, theta->size,
               w, failures ? "fail" : "pass");
        failed += failures;
        total += theta->size;
        worst_all = fmax(worst_all, worst);
    }
    printf("gradcheck coordinates=%zu worst=%s failures=%zu\n", total,
           llm_put(d, "grad_worst", llm_text("%.1e", worst_all)), failed);
    llm_put(d, "grad_coords", llm_text("%zu", total));
    llm_put(d, "grad_verdict", failed == 0 ? "pass" : "fail");
    llm_demo_check(d, failed == 0, "every gradient coordinate agrees");
    llm_demo_check(d, total == 132, "all 132 coordinates were checked");
}
static void refusals(llm_demo *d)
{
    /* Seven configurations refused with config, then the fixture's own prefix. */
    static const struct { const char *what; size_t dm, h, ff; double eps; } bad[8] = {
        {"0 heads", 4, 0, 4, 0.0}, {"3 heads, width 4", 4, 3, 4, 0.0},
        {"2 heads, width 6", 6, 2, 4, 0.0}, {"width 0", 0, 2, 4, 0.0},
        {"d_ff 0", 4, 2, 0, 0.0}, {"eps -1e-6", 4, 2, 4, -1e-6},
        {"eps NaN", 4, 2, 4, NAN}, {"prefix \"block\" again", 4, 2, 4, 0.0}};
    static const size_t s2[2] = {T, D}, s5[3] = {1, T, 5};
    const llm_rng rng_kept = rng;
    const size_t count = ps->count;
    llm_tape *tape = llm_own_tape(d);
    llm_tensor *x3 = llm_own_tensor(d), *x5 = llm_own_tensor(d);
    llm_rope *wide = llm_own(d, sizeof *wide, release_rope);
    llm_error *e = &d->err;
    struct { llm_block blk; llm_var y; llm_block_trace bt; } o, kept;
    llm_var v2, v3, v5;
    llm_status st;
    size_t i, nodes;
    int untouched;
    memset(&o, 0x5a, sizeof o);
    memcpy(&kept, &o, sizeof o);
    for (i = 0; i < 8; i++) {
        st = llm_block_init(&o.blk, ps, i < 7 ? "bad" : "block", bad[i].dm, bad[i].h,
                            bad[i].ff, bad[i].eps, &rng, e);
        llm_refuse_as(d, bad[i].what, st, i < 7 ? LLM_ERR_CONFIG : LLM_ERR_NAME);
    }
    untouched = ps->count == count && rng.state == rng_kept.state
                && memcmp(&o, &kept, sizeof o) == 0;
    printf("after the refused constructions: list, stream and block untouched=%s\n",
           llm_put(d, "init_untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "the refused constructions left everything untouched");
    if (!(LLM_TRY(d, llm_tensor_zeros(x3, 3, fix_shape, e))
          && LLM_TRY(d, llm_tensor_zeros(x5, 3, s5, e))
          && LLM_TRY(d, llm_rope_init(wide, 4, 100.0, 6, LLM_ROPE_ADJACENT, e))
          && LLM_TRY(d, llm_tape_init(tape, 8, e))
          && LLM_TRY(d, llm_tape_constant(tape, x3, &v3, e))
          && LLM_TRY(d, llm_tape_constant(tape, x5, &v5, e))
          && LLM_TRY(d, llm_tape_reshape(tape, v3, 2, s2, &v2, e))))
        return;
    nodes = tape->count;
    st = llm_block_forward(&blk, ps, tape, rope, v2, 0, &o.bt, &o.y, e);
    llm_refuse_as(d, "x of shape [3, 4]", st, LLM_ERR_RANK);
    st = llm_block_forward(&blk, ps, tape, rope, v5, 0, &o.bt, &o.y, e);
    llm_refuse_as(d, "x of shape [1, 3, 5]", st, LLM_ERR_SHAPE);
    st = llm_block_forward(&blk, ps, tape, rope, v3, 4, &o.bt, &o.y, e);
    llm_refuse_as(d, "3 positions from offset 4", st, LLM_ERR_INDEX);
    llm_put(d, "index_message", e->message);
    st = llm_block_forward(&blk, ps, tape, wide, v3, 0, &o.bt, &o.y, e);
    llm_refuse_as(d, "a rope for heads of width 4", st, LLM_ERR_CONFIG);
    untouched = tape->count == nodes && memcmp(&o, &kept, sizeof o) == 0;
    printf("after the refused passes: tape, output and trace untouched=%s\n",
           llm_put(d, "forward_untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "the refused passes left everything untouched");
}

static void setup(llm_demo *d)
{
    ps = llm_own_params(d);
    rope = llm_own(d, sizeof *rope, release_rope);
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {build, passes, gradients, refusals, NULL};
    return llm_demo_main(argc, argv, "ch31-decoder-block", setup, sections);
}
