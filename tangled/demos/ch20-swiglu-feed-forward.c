/* ch20-swiglu-feed-forward -- the bias-free SwiGLU branch on the tape. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/nn.h"
#include "llm/probe.h"

static llm_params *ps;        /* the demo's list, owned by main */
static llm_swiglu ffn;        /* D = 2, F = 3, in ps */

static llm_status swiglu(const void *layer, llm_params *list, llm_tape *tape, llm_var x,
                         llm_var *y, llm_error *err)
{
    return llm_swiglu_forward(layer, list, tape, x, y, err);
}
static const double fix_gate[6] = {-1, 0, 1, 0, 1, -1};     /* W_g [2, 3] */
static const double fix_up[6] = {1, 2, 3, 3, 2, 1};         /* W_u [2, 3] */
static const double fix_down[6] = {1, 0, 0, 1, 1, -1};      /* W_2 [3, 2] */
static const double fix_x[4] = {1, 0, 0, 1};                /* X = I_2 */
static const double fix_x_changed[4] = {5, -3, 0, 1};       /* row 0 replaced */
static const double fix_seed[4] = {1, -2, 0.5, 3};          /* C for sum(C (.) Y) */
static const size_t shape_x[2] = {2, 2};
static double sigmoid(double x)
{
    return x >= 0.0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

/* x [n, 2] -> a, u, s, h [n, 3] and y [n, 2], with the fixture's weights; each
   sum from 0 in ascending order of its index (y's over j, as unit j is done). */
static void plain_branch(const double *x, size_t n, double *a, double *u, double *s,
                         double *h, double *y)
{
    size_t r, i, j;
    for (r = 0; r < n; r++, x += 2, a += 3, u += 3, s += 3, h += 3, y += 2) {
        y[0] = y[1] = 0.0;
        for (j = 0; j < 3; j++) {
            a[j] = u[j] = 0.0;
            for (i = 0; i < 2; i++) {
                a[j] += x[i] * fix_gate[i * 3 + j];
                u[j] += x[i] * fix_up[i * 3 + j];
            }
            s[j] = a[j] * sigmoid(a[j]);
            h[j] = s[j] * u[j];
            y[0] += h[j] * fix_down[j * 2];
            y[1] += h[j] * fix_down[j * 2 + 1];
        }
    }
}
static void build(llm_demo *d)
{
    static const char *const part[3] = {"gate", "up", "down"};
    llm_rng rng, start, fresh;
    size_t k, draws = 0, scalars = 0, at[3];
    int same = 1;

    llm_rng_seed(&rng, 20);
    start = fresh = rng;
    if (!LLM_TRY(d, llm_swiglu_init(&ffn, ps, "ffn", 2, 3, &rng, &d->err)))
        return;
    at[0] = ffn.gate, at[1] = ffn.up, at[2] = ffn.down;
    for (; start.state != rng.state && draws < 1000; draws++)
        start.state += UINT64_C(0x9e3779b97f4a7c15);
    for (k = 0; k < 3; k++) {
        const llm_param *p = &ps->items[at[k]];
        llm_tensor *w = llm_own_tensor(d);
        const char *shape = llm_sizes(p->value.shape, p->value.rank), *range, *value;
        int equal;
        if (!LLM_TRY(d, llm_xavier_uniform(w, k < 2 ? 2 : 3, k < 2 ? 3 : 2, &fresh,
                                           &d->err)))
            return;
        equal = w->size == p->value.size
                && memcmp(w->data, p->value.data, w->size * sizeof w->data[0]) == 0;
        same = same && equal;
        range = llm_text("%zu–%zu", scalars + 1, scalars + p->value.size);
        value = llm_rows(p->value.data, p->value.shape[0], p->value.shape[1], 6);
        llm_row(d, "params", llm_text("%zu", at[k]), llm_text("`%s`", p->name), shape,
                range, value, llm_yes(equal), NULL);
        printf("param %s shape=%s draws=%s same_as_fresh_%s=%s\n  value=%s\n", p->name,
               shape, range, part[k], llm_yes(equal), value);
        scalars += p->value.size;
    }
    printf("params=%zu scalars=%s", ps->count,
           llm_put(d, "n_scalars", llm_text("%zu", scalars)));
    printf(" draws=%s", llm_put(d, "draws", llm_text("%zu", draws)));
    printf(" order=%s\n",
           llm_put(d, "draw_order", same ? "gate, up, down" : "different"));
    llm_demo_check(d, same, "a fresh stream draws gate, up and down in turn");
    llm_demo_check(d, draws == 18 && scalars == 18, "18 draws for 18 numbers");
}
static void half_way(llm_demo *d)
{
    static const size_t one[1] = {1};
    llm_params *other = llm_own_params(d);
    llm_swiglu half, marker;
    llm_rng rng, before;
    llm_param saved;
    int rng_same, list_same, layer_same;

    if (!LLM_TRY(d, llm_params_add_const(other, "mlp.down.weight", 1, one, 0.0, 1,
                                         &d->err)))
        return;
    saved = other->items[0];
    memset(&half, 0x5a, sizeof half);
    marker = half;
    llm_rng_seed(&rng, 20);
    before = rng;
    llm_refuse_as(d, "layer mlp when mlp.down.weight is taken",
                  llm_swiglu_init(&half, other, "mlp", 2, 3, &rng, &d->err),
                  LLM_ERR_NAME);
    printf("  %s\n", llm_put(d, "half_message", d->err.message));
    rng_same = memcmp(&rng, &before, sizeof rng) == 0;
    list_same = other->count == 1
                && memcmp(&other->items[0], &saved, sizeof saved) == 0;
    layer_same = memcmp(&half, &marker, sizeof half) == 0;
    printf("after the failed layer: generator=%s list=%s layer=%s\n",
           rng_same ? "unchanged" : "moved", list_same ? "unchanged" : "changed",
           layer_same ? "untouched" : "written");
    llm_put(d, "half_rng", llm_yes(rng_same));
    llm_put(d, "half_list", llm_yes(list_same));
    llm_demo_check(d, rng_same && list_same && layer_same,
                   "the rollback left the generator, the list and the layer");
}
static void fixture(llm_demo *d)
{
    llm_probe p = {swiglu, &ffn, ps, 2, shape_x, fix_x, NULL};
    double y[4], a[6], u[6], s[6], h[6], py[4], diff = 0.0;
    size_t r, j, k;

    memcpy(ps->items[ffn.gate].value.data, fix_gate, sizeof fix_gate);  /* by hand */
    memcpy(ps->items[ffn.up].value.data, fix_up, sizeof fix_up);
    memcpy(ps->items[ffn.down].value.data, fix_down, sizeof fix_down);
    if (!LLM_TRY(d, llm_probe_run(&p, y, 4, NULL, NULL, NULL, &d->err)))
        return;
    plain_branch(fix_x, 2, a, u, s, h, py);
    for (r = 0; r < 2; r++) {
        for (j = 0; j < 3; j++)
            llm_row(d, "units", llm_text("%zu", r), llm_text("%zu", j),
                    llm_num(a[r * 3 + j], 0), llm_num(sigmoid(a[r * 3 + j]), 6),
                    llm_num(s[r * 3 + j], 6), llm_num(u[r * 3 + j], 0),
                    llm_num(h[r * 3 + j], 6), NULL);
        printf("row %zu a=%s", r,
               llm_put(d, llm_text("a%zu", r), llm_nums(a + r * 3, 3, 0)));
        printf(" u=%s", llm_put(d, llm_text("u%zu", r), llm_nums(u + r * 3, 3, 0)));
        printf("\n  silu(a)=%s",
               llm_put(d, llm_text("s%zu", r), llm_nums(s + r * 3, 3, 6)));
        printf(" h=%s\n", llm_put(d, llm_text("h%zu", r), llm_nums(h + r * 3, 3, 6)));
        for (k = 0; k < 2; k++) {
            llm_row(d, "output", llm_text("%zu", r), llm_text("%zu", k),
                    llm_num(y[r * 2 + k], 12), NULL);
            diff = fmax(diff, fabs(y[r * 2 + k] - py[r * 2 + k]));
        }
    }
    printf("y=%s\n", llm_put(d, "y", llm_rows(y, 2, 2, 12)));
    llm_put(d, "y0", llm_nums(y, 2, 12));
    llm_put(d, "y1", llm_nums(y + 2, 2, 12));
    printf("tape against plain loops: largest difference=%s\n",
           llm_put(d, "plain_diff", llm_text("%.2e", diff)));
    llm_demo_check(d, diff <= 1e-15, "the tape agrees with the plain loops");
}
/* SiLU as a layer with no parameters, for the probe. */
static llm_status silu(const void *layer, llm_params *list, llm_tape *tape, llm_var x,
                       llm_var *y, llm_error *err)
{
    (void)layer;
    (void)list;
    return llm_tape_silu(tape, x, y, err);
}

static void silu_extremes(llm_demo *d)
{
    static const double xs[5] = {-1000, -1, 0, 1, 1000}, ones[5] = {1, 1, 1, 1, 1};
    static const size_t five[1] = {5};
    llm_probe p = {silu, NULL, NULL, 1, five, xs, ones};
    double val[5], slope[5];
    size_t k;
    int finite = 1;

    p.ps = llm_own_params(d);                              /* an empty list */
    if (!LLM_TRY(d, llm_probe_run(&p, val, 5, NULL, NULL, slope, &d->err)))
        return;
    for (k = 0; k < 5; k++) {
        const char *at = llm_num(xs[k], 0), *v = llm_num(val[k], 12);
        finite = finite && isfinite(val[k]) && isfinite(slope[k]);
        llm_row(d, "silu", at, v, llm_num(slope[k], 12), NULL);
        printf("silu(%s)=%s slope=%s\n", at, v, llm_num(slope[k], 12));
    }
    llm_put(d, "silu_m1", llm_num(val[1], 12));
    llm_put(d, "silu_big", llm_nums((const double[2]){val[0], val[4]}, 2, 6));
    llm_put(d, "dsilu_big", llm_nums((const double[2]){slope[0], slope[4]}, 2, 6));
    printf("silu at -1000 and 1000 finite=%s\n",
           llm_put(d, "big_finite", llm_yes(finite)));
    llm_demo_check(d, finite, "SiLU and its slope stay finite at -1000 and 1000");
}
static void rowwise(llm_demo *d)
{
    llm_probe p = {swiglu, &ffn, ps, 2, shape_x, fix_x, NULL}, p2 = p;
    double y[4], y2[4];
    int row1_same;

    p2.x = fix_x_changed;
    if (!(LLM_TRY(d, llm_probe_run(&p, y, 4, NULL, NULL, NULL, &d->err))
          && LLM_TRY(d, llm_probe_run(&p2, y2, 4, NULL, NULL, NULL, &d->err))))
        return;
    row1_same = memcmp(y + 2, y2 + 2, 2 * sizeof y[0]) == 0;
    printf("x row 0 -> [5, -3]: y row 0=%s",
           llm_put(d, "y0_changed", llm_nums(y2, 2, 12)));
    printf("\n  y row 1=%s", llm_nums(y2 + 2, 2, 12));
    printf(" %s\n", llm_put(d, "rowwise", row1_same ? "bit-identical" : "changed"));
    llm_demo_check(d, row1_same, "row 1 of y keeps every bit");
    llm_demo_check(d, y[0] != y2[0] || y[1] != y2[1], "row 0 of y follows row 0 of x");
}
static void gradients(llm_demo *d)
{
    static const char *const label[4] = {"W_g", "W_u", "W_2", "X"};
    static const size_t coords[6] = {0, 1, 2, 3, 4, 5};
    const size_t at[3] = {ffn.gate, ffn.up, ffn.down};
    llm_tensor *x = llm_own_tensor(d);
    llm_probe p = {swiglu, &ffn, ps, 2, shape_x, NULL, fix_seed};
    double y[4], gx[4], worst = 0.0, worst_all = 0.0;
    size_t k, total = 0, failed = 0, failures = 0;

    if (!LLM_TRY(d, llm_tensor_from(x, 2, shape_x, fix_x, 4, &d->err)))
        return;
    p.x = x->data;                    /* the check perturbs X in place */
    if (!LLM_TRY(d, llm_probe_run(&p, y, 4, NULL, NULL, gx, &d->err)))
        return;
    printf("grad W_2=%s\n",
           llm_put(d, "grad_down", llm_rows(ps->items[ffn.down].grad.data, 3, 2, 12)));
    for (k = 0; k < 4; k++) {
        llm_tensor *theta = k < 3 ? &ps->items[at[k]].value : x;
        const double *analytic = k < 3 ? ps->items[at[k]].grad.data : gx;
        if (!LLM_TRY(d, llm_gradient_check(llm_probe_loss, &p, theta, analytic, coords,
                                           theta->size, 1e-6, 3e-6, &worst, &failures,
                                           &d->err)))
            return;
        llm_row(d, "gradcheck", llm_text("$%s$", label[k]),
                llm_sizes(theta->shape, theta->rank), llm_text("%zu", theta->size),
                llm_text("%.2e", worst), llm_text("%zu", failures), NULL);
        printf("gradcheck %s coords=%zu worst=%s failures=%zu\n", label[k], theta->size,
               llm_text("%.2e", worst), failures);
        total += theta->size;
        failed += failures;
        worst_all = fmax(worst_all, worst);
    }
    llm_put(d, "gc_coords", llm_text("%zu", total));
    llm_put(d, "gc_worst", llm_text("%.2e", worst_all));
    llm_put(d, "gc_failures", llm_text("%zu", failed));
    printf("gradcheck h=1e-06 tolerance=3e-06 coords=%zu failures=%zu verdict=%s\n",
           total, failed, llm_put(d, "gc_verdict", failed == 0 ? "pass" : "fail"));
    llm_demo_check(d, failed == 0, "every coordinate matches its central difference");
    llm_demo_check(d, total == 22, "the check covered all 22 coordinates");
}
static void refusals(llm_demo *d)
{
    static const size_t wide[2] = {2, 3};
    static const double zeros[6];
    static const char longp[] = "pppppppppppppppppppppppppppppp"    /* 60 characters */
                                "pppppppppppppppppppppppppppppp";
    static const char *const init_what[5] = {
        "init with no prefix", "init with d_ff 0", "init with a 60-character prefix",
        "init with prefix FFN", "init with prefix ffn again"};
    static const char *const init_prefix[5] = {NULL, "ffn2", longp, "FFN", "ffn"};
    llm_tensor *x = llm_own_tensor(d), *xw = llm_own_tensor(d);
    llm_tensor *scalar = llm_own_tensor(d);
    llm_tape *tape = llm_own_tape(d);
    llm_swiglu far = ffn, swapped = ffn, unused;
    llm_var xv, xwv, sv, stale, y, marker;
    const struct { const char *what; const llm_swiglu *layer; llm_tape *tape;
                   const llm_var *x; } fwd[6] = {
        {"forward with no tape", &ffn, NULL, &xv},
        {"forward of a scalar", &ffn, tape, &sv},
        {"forward of x [2, 3]", &ffn, tape, &xwv},
        {"forward of an x from before a reset", &ffn, tape, &stale},
        {"forward with the down weight at position 7 of 3", &far, tape, &xv},
        {"forward with gate and down swapped", &swapped, tape, &xv}};
    llm_rng rng;
    size_t count = ps->count, k;
    int untouched;

    llm_rng_seed(&rng, 20);
    for (k = 0; k < 5; k++)                                 /* d_ff is 0 for k = 1 */
        llm_refuse(d, init_what[k], llm_swiglu_init(&unused, ps, init_prefix[k], 2,
                                                    k == 1 ? 0 : 3, &rng, &d->err));
    memset(&marker, 0x5a, sizeof marker);
    y = marker;
    if (!(LLM_TRY(d, llm_tensor_from(x, 2, shape_x, fix_x, 4, &d->err))
          && LLM_TRY(d, llm_tensor_from(xw, 2, wide, zeros, 6, &d->err))
          && LLM_TRY(d, llm_tensor_zeros(scalar, 0, NULL, &d->err))
          && LLM_TRY(d, llm_tape_init(tape, 16, &d->err))
          && LLM_TRY(d, llm_tape_constant(tape, x, &stale, &d->err))
          && LLM_TRY(d, llm_tape_reset(tape, &d->err))
          && LLM_TRY(d, llm_tape_constant(tape, x, &xv, &d->err))
          && LLM_TRY(d, llm_tape_constant(tape, xw, &xwv, &d->err))
          && LLM_TRY(d, llm_tape_constant(tape, scalar, &sv, &d->err))))
        return;
    far.down = 7;
    swapped.gate = ffn.down;
    swapped.down = ffn.gate;
    for (k = 0; k < 6; k++)
        llm_refuse(d, fwd[k].what, llm_swiglu_forward(fwd[k].layer, ps, fwd[k].tape,
                                                      *fwd[k].x, &y, &d->err));
    printf("  %s\n", llm_put(d, "swap_message", d->err.message));
    untouched = memcmp(&y, &marker, sizeof y) == 0 && ps->count == count;
    printf("after the refusals: output and list untouched=%s\n",
           llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "no refused call wrote the output or grew the list");
}

static void setup(llm_demo *d)
{
    ps = llm_own_params(d);
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {build, half_way, fixture, silu_extremes,
                                            rowwise, gradients, refusals, NULL};
    return llm_demo_main(argc, argv, "ch20-swiglu-feed-forward", setup, sections);
}
