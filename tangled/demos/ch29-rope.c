/* ch29-rope -- rotary position embeddings: a relative dot grid, two
   pairings, the rotation on the tape. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/attention.h"
#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/probe.h"

static const double fix_x[24] = {1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0,  /* [1, 0, 1, 0] */
                                 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0}; /* six times */
static const size_t positions[6] = {0, 1, 2, 3, 4, 5};
static llm_rope *rope;                 /* d = 4, b = 100, capacity 8, adjacent */

static void release_rope(void *r)
{
    llm_rope_free(r);
}

/* y = the T rows x (width 4) rotated by r at positions pos. */
static int rotate(llm_demo *d, const llm_rope *r, const double *x, size_t T,
                  const size_t *pos, double *y)
{
    const size_t shape[2] = {T, 4};
    llm_tensor *xt = llm_own_tensor(d), *yt = llm_own_tensor(d);
    if (LLM_TRY(d, llm_tensor_from(xt, 2, shape, x, 4 * T, &d->err))
        && LLM_TRY(d, llm_rope_apply(r, xt, pos, T, yt, &d->err)))
        memcpy(y, yt->data + yt->offset, 4 * T * sizeof *y);
    return d->ok;
}

static llm_status refused[8];            /* the codes of the refusals, in order */
static size_t nrefused;

static void refuse(llm_demo *d, const char *what, llm_status st)
{
    llm_refuse(d, what, st);
    refused[nrefused++] = st;
}
static void frequencies(llm_demo *d)
{
    printf("head_dim=4 base=100 capacity=8 pairing=adjacent inv_freq=%s\n",
           llm_put(d, "inv_freq", llm_trims(rope->inv_freq, 2, 6)));
    llm_demo_check(d, rope->inv_freq[0] == 1.0 && fabs(rope->inv_freq[1] - 0.1) < 1e-15,
                   "the frequencies are 1 and 0.1");
}
static void dot_grids(llm_demo *d)
{
    double rows[24], grid[18], *grid3 = grid + 9, diff = 0.0;
    const double *r;
    const char *norms, *norm;
    size_t i, k;
    int norms_same = 1;

    if (!rotate(d, rope, fix_x, 6, positions, rows))
        return;
    for (i = 0; i < 18; i++)               /* rows 0..2 with 0..2, 3..5 with 3..5 */
        for (grid[i] = 0.0, k = 0; k < 4; k++)
            grid[i] += rows[4 * (i / 3) + k] * rows[4 * (i / 9 * 3 + i % 3) + k];
    for (i = 0, r = rows; i < 3; i++, r += 4) {
        norm = llm_num(sqrt(grid[4 * i]), 6);     /* the root of a diagonal entry */
        llm_row(d, "rot", llm_text("%zu", i), llm_num(r[0], 6), llm_num(r[1], 6),
                llm_num(r[2], 6), llm_num(r[3], 6), norm, NULL);
        printf("position %zu rotated=%s norm=%s\n", i, llm_nums(r, 4, 6), norm);
        llm_row(d, "grid", llm_text("$m = %zu$", i), llm_num(grid[3 * i], 6),
                llm_num(grid[3 * i + 1], 6), llm_num(grid[3 * i + 2], 6), NULL);
    }
    printf("grid=%s\n", llm_put(d, "grid", llm_rows(grid, 3, 3, 6)));
    llm_put(d, "g01", llm_num(grid[1], 6));
    llm_put(d, "g02", llm_num(grid[2], 6));
    norms = llm_num(sqrt(grid[0]), 6);
    for (i = 0; i < 9; i++)
        diff = fmax(diff, fabs(grid3[i] - grid[i]));
    for (i = 0; i < 3; i++)
        norms_same = norms_same && strcmp(norms, llm_num(sqrt(grid[4 * i]), 6)) == 0
                     && strcmp(norms, llm_num(sqrt(grid3[4 * i]), 6)) == 0;
    printf("shift=3 grid=%s\nshift=3 largest_change=%s", llm_rows(grid3, 3, 3, 6),
           llm_put(d, "shift_diff", llm_text("%.1e", diff)));
    printf(" norms=%s all_equal=%s\n", llm_put(d, "norms", norms), llm_yes(norms_same));
    llm_demo_check(d, diff < 1e-12, "the grid three positions later is the same grid");
    llm_demo_check(d, norms_same && strcmp(norms, "1.414214") == 0,
                   "all six rotated rows have the length sqrt 2");
}
static void pairings(llm_demo *d)
{
    static const double x[8] = {0.3, -1.2, 2.5, 0.7, 1, 2, 3, 4};   /* positions 0, 1 */
    llm_rope *half = llm_own(d, sizeof *half, release_rope);
    double ya[8], yh[8];                                     /* adjacent, rotate-half */
    int identity, differ;

    if (!(LLM_TRY(d, llm_rope_init(half, 4, 100.0, 8, LLM_ROPE_HALF, &d->err))
          && rotate(d, rope, x, 2, positions, ya)
          && rotate(d, half, x, 2, positions, yh)))
        return;
    identity = memcmp(ya, x, 4 * sizeof *x) == 0 && memcmp(yh, x, 4 * sizeof *x) == 0;
    differ = memcmp(ya + 4, yh + 4, 4 * sizeof *ya) != 0;
    printf("position 0 x=%s bit-identical=%s\nx=%s at position 1\n", llm_trims(x, 4, 6),
           llm_put(d, "identity", llm_yes(identity)), llm_trims(x + 4, 4, 6));
    printf("  adjacent=%s\n", llm_put(d, "pair_adjacent", llm_nums(ya + 4, 4, 6)));
    printf("  half=%s\n", llm_put(d, "pair_half", llm_nums(yh + 4, 4, 6)));
    printf("  pairings differ=%s\n", llm_put(d, "pair_differ", llm_yes(differ)));
    llm_demo_check(d, identity, "position 0 returns its row bit for bit");
    llm_demo_check(d, differ, "the two pairings turn the row differently");
}
static const double fix_q[12] = {0.5, -1, 0.25, 2, 1, 0.5, -0.5, 1,
                                 -1, 0.75, 1.5, -0.25};
static const double fix_k[12] = {1, 0, 1, 0, 0.2, -0.4, 0.6, 1, -0.5, 1, 0.3, 0.8};
static const double fix_w[9] = {1, -0.5, 0.25, 0.5, 2, -1, 0.75, -0.25, 1.5};
static double rotated_q[12];           /* rope(Q) of the last run */

/* S = rope(q) rope(k)^T at positions 2..4, k the list's parameter 0. */
static llm_status scores(const void *layer, llm_params *ps, llm_tape *tape, llm_var q,
                         llm_var *s, llm_error *err)
{
    llm_var k, qr, kr;
    const llm_tensor *v;
    llm_status st = llm_param_leaf(tape, ps, 0, &k, err);
    if (st == LLM_OK
        && (st = llm_tape_rope(tape, layer, q, 2, &qr, err)) == LLM_OK
        && (st = llm_tape_rope(tape, layer, k, 2, &kr, err)) == LLM_OK
        && (st = llm_tape_value(tape, qr, &v, err)) == LLM_OK)
        memcpy(rotated_q, v->data + v->offset, sizeof rotated_q);
    return st == LLM_OK ? llm_tape_matmul(tape, qr, kr, 0, 1, s, err) : st;
}
static void gradients(llm_demo *d)
{
    static const size_t coords[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    static const size_t shape[2] = {3, 4};
    llm_tensor *q = llm_own_tensor(d);
    llm_params *ps = llm_own_params(d);
    llm_probe p;
    double s[9], dq[12], qref[12], loss = 0.0, worst[2] = {0};
    size_t t, failures[2] = {0};
    int same;

    if (!(LLM_TRY(d, llm_tensor_from(q, 2, shape, fix_q, 12, &d->err))
          && LLM_TRY(d, llm_params_add_const(ps, "k", 2, shape, 0.0, 0, &d->err))))
        return;
    memcpy(ps->items[0].value.data, fix_k, sizeof fix_k);
    p = (llm_probe){scores, rope, ps, 2, shape, q->data, fix_w};
    if (!(LLM_TRY(d, llm_probe_run(&p, s, 9, NULL, NULL, dq, &d->err))
          && rotate(d, rope, fix_q, 3, positions + 2, qref)
          && LLM_TRY(d, llm_probe_loss(&p, q, &loss, &d->err))))
        return;
    same = memcmp(rotated_q, qref, sizeof qref) == 0;
    printf("tape loss=%s rope(Q) as llm_rope_apply=%s\n", llm_num(loss, 6),
           same ? "bit-identical" : "different");
    llm_put(d, "tape_same", llm_yes(same));
    for (t = 0; t < 2; t++) {
        llm_tensor *theta = t == 0 ? q : &ps->items[0].value;
        const double *analytic = t == 0 ? dq : ps->items[0].grad.data;
        if (!LLM_TRY(d, llm_gradient_check(llm_probe_loss, &p, theta, analytic, coords,
                                           12, 1e-6, 4e-6, &worst[t], &failures[t],
                                           &d->err)))
            return;
        llm_row(d, "grads", t == 0 ? "$Q$" : "$K$", "12", llm_text("%.1e", worst[t]),
                failures[t] == 0 ? "pass" : "fail", NULL);
        printf("gradcheck %c coordinates=12 worst=%s verdict=%s\n", "QK"[t],
               llm_text("%.1e", worst[t]), failures[t] == 0 ? "pass" : "fail");
        printf("  analytic=%s\n", llm_nums(analytic, 4, 6));
    }
    llm_put(d, "grad_coords", llm_text("%zu", q->size + ps->items[0].value.size));
    llm_put(d, "grad_worst", llm_text("%.1e", fmax(worst[0], worst[1])));
    llm_put(d, "grad_verdict", failures[0] + failures[1] == 0 ? "pass" : "fail");
    llm_demo_check(d, same, "the tape rotates Q as llm_rope_apply does");
    llm_demo_check(d, failures[0] + failures[1] == 0, "every coordinate agrees");
}
static void refusals(llm_demo *d)
{
    static const size_t s34[2] = {3, 4}, s16[2] = {1, 6}, s4[1] = {4};
    static const llm_status want[7] = {LLM_ERR_ARGUMENT, LLM_ERR_ARGUMENT,
                                       LLM_ERR_INDEX, LLM_ERR_SHAPE, LLM_ERR_RANK,
                                       LLM_ERR_SHAPE, LLM_ERR_INDEX};
    const size_t far[3] = {0, 8, 1}, two[2] = {0, 1};
    llm_tensor *x = llm_own_tensor(d), *xw = llm_own_tensor(d), *xv = llm_own_tensor(d);
    llm_tape *tape = llm_own_tape(d);
    llm_error *e = &d->err;
    struct { llm_rope bad; llm_tensor out; llm_var y; } o, kept;   /* never written */
    llm_var v;
    size_t count;
    int untouched;

    memset(&o, 0x5a, sizeof o);
    memcpy(&kept, &o, sizeof o);
    if (!(LLM_TRY(d, llm_tensor_from(x, 2, s34, fix_q, 12, e))
          && LLM_TRY(d, llm_tensor_from(xw, 2, s16, fix_q, 6, e))
          && LLM_TRY(d, llm_tensor_from(xv, 1, s4, fix_x, 4, e))
          && LLM_TRY(d, llm_tape_init(tape, 4, e))
          && LLM_TRY(d, llm_tape_leaf(tape, x, NULL, &v, e))))
        return;
    count = tape->count;
    refuse(d, "head width 3", llm_rope_init(&o.bad, 3, 100.0, 8, LLM_ROPE_ADJACENT, e));
    refuse(d, "base 0", llm_rope_init(&o.bad, 4, 0.0, 8, LLM_ROPE_ADJACENT, e));
    refuse(d, "position 8, capacity 8", llm_rope_apply(rope, x, far, 3, &o.out, e));
    llm_put(d, "index_message", d->err.message);
    refuse(d, "a row of width 6", llm_rope_apply(rope, xw, two, 1, &o.out, e));
    refuse(d, "x of shape [4]", llm_rope_apply(rope, xv, two, 1, &o.out, e));
    refuse(d, "2 positions for 3 rows", llm_rope_apply(rope, x, two, 2, &o.out, e));
    refuse(d, "tape: 3 rows from position 6", llm_tape_rope(tape, rope, v, 6, &o.y, e));
    llm_put(d, "tape_message", d->err.message);
    untouched = memcmp(&o, &kept, sizeof o) == 0 && tape->count == count;
    printf("outputs, table and tape untouched=%s\n",
           llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "the refusals left outputs, table and tape untouched");
    llm_demo_check(d, nrefused == 7 && memcmp(refused, want, sizeof want) == 0,
                   "each refusal carries its code");
}

static void setup(llm_demo *d)
{
    rope = llm_own(d, sizeof *rope, release_rope);
    (void)LLM_TRY(d, llm_rope_init(rope, 4, 100.0, 8, LLM_ROPE_ADJACENT, &d->err));
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {frequencies, dot_grids, pairings, gradients,
                                            refusals, NULL};
    return llm_demo_main(argc, argv, "ch29-rope", setup, sections);
}
