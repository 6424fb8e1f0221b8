/* ch14-scalar-autodiff -- a scalar tape and reverse accumulation. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/stape.h"
#include "llm/evidence.h"

static llm_stape *tape;            /* the fixture's tape, owned by main */
static size_t x, sq, loss;         /* its first nodes */

static void refuse(llm_demo *d, const char *what, llm_status st)
{
    llm_refuse_cells(d, "cs", what, st);
}

/* Prints each node of t as "node 1 mul [0, 0] value=4 grad=2" and writes the
   same cells as a row of the trace table: id, op, edges, value, grad. */
static void node_rows(llm_demo *d, const char *table, const llm_stape *t, int decimals)
{
    const llm_snode *v;
    const char *c[5];
    size_t id;
    for (id = 0; id < t->count; id++) {
        v = &t->nodes[id];
        c[0] = llm_text("%zu", id);
        c[1] = v->op == LLM_SOP_SCALE ? llm_text("scale(%s)", llm_num(v->constant, 0))
             : v->op == LLM_SOP_DETACH ? llm_text("detach(%zu)", v->arg[0])
             : llm_sop_name(v->op);
        c[2] = llm_sizes(v->arg, v->nargs);
        c[3] = llm_num(v->value, decimals);
        c[4] = llm_num(v->grad, decimals);
        printf("node %s %s %s value=%s grad=%s\n", c[0], c[1], c[2], c[3], c[4]);
        llm_row(d, table, c[0], c[1], c[2], c[3], c[4], NULL);
    }
}

/* The gradients of loss, sq and x after a step: printed after label, kept
   as a row of the trace table "passes" and as the values key_loss, ...;
   they must be gl, gs, gx, the Rust course's values. */
static void grads_row(llm_demo *d, const char *label, const char *key, double gl,
                      double gs, double gx)
{
    const llm_snode *n = tape->nodes;
    const char *g[3];
    g[0] = llm_put(d, llm_text("%s_loss", key), llm_num(n[loss].grad, 0));
    g[1] = llm_put(d, llm_text("%s_sq", key), llm_num(n[sq].grad, 0));
    g[2] = llm_put(d, llm_text("%s_x", key), llm_num(n[x].grad, 0));
    printf("%s: grad loss=%s sq=%s x=%s\n", label, g[0], g[1], g[2]);
    llm_row(d, "passes", label, g[0], g[1], g[2], NULL);
    llm_demo_check(d, n[loss].grad == gl && n[sq].grad == gs && n[x].grad == gx,
                   llm_text("the gradients after %s", label));
}
static void edge_rows(llm_demo *d)
{
    const llm_snode *v;
    double local;
    size_t i, k;
    for (i = tape->count; i-- > 0;)
        for (v = &tape->nodes[i], k = 0; k < v->nargs; k++) {
            if (!LLM_TRY(d, llm_stape_partial(tape, i, k, &local, &d->err)))
                return;
            printf("edge %zu->%zu (k=%zu) local=%s adjoint=%s contribution=%s\n", i,
                   v->arg[k], k, llm_num(local, 0), llm_num(v->grad, 0),
                   llm_num(v->grad * local, 0));
            llm_row(d, "edges", llm_text("%zu", i), llm_text("%zu", k),
                    llm_text("%zu", v->arg[k]), llm_num(local, 0), llm_num(v->grad, 0),
                    llm_num(v->grad * local, 0), NULL);
        }
}
static void fixture_tape(llm_demo *d)
{
    size_t order[6], n = 0, i;
    int falling = 1;
    if (!(LLM_TRY(d, llm_stape_leaf(tape, 2.0, &x, &d->err))
          && LLM_TRY(d, llm_stape_mul(tape, x, x, &sq, &d->err))
          && LLM_TRY(d, llm_stape_add(tape, sq, sq, &loss, &d->err))
          && LLM_TRY(d, llm_stape_order(tape, loss, order, &n, &d->err))))
        return;
    printf("x=%s", llm_num(tape->nodes[x].value, 0));
    printf(" sq=%s", llm_put(d, "sq", llm_num(tape->nodes[sq].value, 0)));
    printf(" loss=%s\n", llm_put(d, "loss", llm_num(tape->nodes[loss].value, 0)));
    llm_demo_check(d, tape->nodes[sq].value == 4.0 && tape->nodes[loss].value == 8.0,
                   "sq = 4 and loss = 8");
    printf("order(loss)=%s", llm_put(d, "order_loss", llm_sizes(order, n)));
    for (i = 0; i + 1 < n; i++)      /* ids fall along the order */
        falling = falling && order[i] > order[i + 1];
    printf(" decreasing_ids=%s\n", llm_yes(falling));
    llm_demo_check(d, falling, "the ids fall along the order");
    if (!LLM_TRY(d, llm_stape_backward(tape, loss, 1.0, &d->err)))
        return;
    grads_row(d, "backward 1", "pass1", 1.0, 2.0, 8.0);
    node_rows(d, "nodes", tape, 0);
    edge_rows(d);
    if (!LLM_TRY(d, llm_stape_backward(tape, loss, 1.0, &d->err)))
        return;
    grads_row(d, "backward 2", "pass2", 2.0, 4.0, 16.0);
    if (LLM_TRY(d, llm_stape_zero_grad(tape, &d->err)))
        grads_row(d, "zero_grad", "zeroed", 0.0, 0.0, 0.0);
    size_t dx = 0, s = 0, y = 0;
    if (!(LLM_TRY(d, llm_stape_detach(tape, x, &dx, &d->err))
          && LLM_TRY(d, llm_stape_scale(tape, dx, 3.0, &s, &d->err))
          && LLM_TRY(d, llm_stape_add(tape, sq, s, &y, &d->err))
          && LLM_TRY(d, llm_stape_order(tape, y, order, &n, &d->err))
          && LLM_TRY(d, llm_stape_backward(tape, y, 1.0, &d->err))))
        return;
    printf("detach: y = x*x + detach(x)*3 = %s\n",
           llm_put(d, "y", llm_num(tape->nodes[y].value, 0)));
    printf("order(y)=%s\n", llm_put(d, "order_y", llm_sizes(order, n)));
    node_rows(d, "detach_nodes", tape, 0);
    llm_put(d, "y_grad_x", llm_num(tape->nodes[x].grad, 0));
    llm_put(d, "y_grad_detach", llm_num(tape->nodes[dx].grad, 0));
    llm_demo_check(d, tape->nodes[y].value == 10.0, "y = 10");
    llm_demo_check(d, tape->nodes[x].grad == 4.0, "dy/dx = 4: no edge through detach");
    llm_demo_check(d, tape->nodes[loss].grad == 0.0, "the old loss keeps gradient 0");
    printf("tape nodes=%zu capacity=%s\n", tape->count,
           llm_put(d, "capacity_final", llm_text("%zu", tape->capacity)));
    llm_snode before[6];
    llm_stape big = {NULL, 0, 0};       /* a refused init leaves it as it is */
    size_t id = 99;
    double g = -1.0;
    int same, untouched;
    memcpy(before, tape->nodes, sizeof before);
    refuse(d, "leaf NaN", llm_stape_leaf(tape, NAN, &id, &d->err));
    refuse(d, "add sq + node 99", llm_stape_add(tape, sq, 99, &id, &d->err));
    refuse(d, "mul node 99 * x", llm_stape_mul(tape, 99, x, &id, &d->err));
    refuse(d, "scale x by 1e308", llm_stape_scale(tape, x, 1e308, &id, &d->err));
    refuse(d, "exp of node 6", llm_stape_exp(tape, 6, &id, &d->err));
    refuse(d, "tanh without a place for the id",
           llm_stape_tanh(tape, x, NULL, &d->err));
    refuse(d, "detach node 6", llm_stape_detach(tape, 6, &id, &d->err));
    refuse(d, "edge 0 of the detach node", llm_stape_partial(tape, 3, 0, &g, &d->err));
    refuse(d, "grad of node 6", llm_stape_grad(tape, 6, &g, &d->err));
    refuse(d, "backward from node 6", llm_stape_backward(tape, 6, 1.0, &d->err));
    refuse(d, "backward with seed NaN", llm_stape_backward(tape, y, NAN, &d->err));
    refuse(d, "backward without a tape", llm_stape_backward(NULL, y, 1.0, &d->err));
    refuse(d, "backward from y with seed 1e308",
           llm_stape_backward(tape, y, 1e308, &d->err));
    printf("  %s\n", llm_put(d, "overflow_message", d->err.message));
    refuse(d, "a tape of SIZE_MAX/8 nodes", llm_stape_init(&big, SIZE_MAX/8, &d->err));
    /* a node holds its gradient, so one comparison covers the gradients too */
    same = tape->count == 6 && memcmp(before, tape->nodes, sizeof before) == 0;
    untouched = id == 99 && g == -1.0 && big.nodes == NULL;
    printf("unchanged after refusals: nodes=%s gradients=%s outputs=%s\n",
           llm_yes(same), llm_yes(same), llm_yes(untouched));
    llm_put(d, "unchanged", llm_yes(same));
    llm_demo_check(d, same, "the refusals kept every node and its gradient");
    llm_demo_check(d, untouched, "the refusals wrote no output");
}
static void exp_tanh(llm_demo *d)
{
    const double x0 = 0.5, h = 1e-5;
    /* the symmetric difference (f(x0 + h) - f(x0 - h)) / 2h, outside the tape */
    double fd = (exp(tanh(x0 + h)) - exp(tanh(x0 - h))) / (2.0 * h);
    llm_stape *chain = llm_own_stape(d);
    size_t a = 0, t = 0, e = 0;
    const char *value, *grad;
    if (!(LLM_TRY(d, llm_stape_init(chain, 1, &d->err))
          && LLM_TRY(d, llm_stape_leaf(chain, x0, &a, &d->err))
          && LLM_TRY(d, llm_stape_tanh(chain, a, &t, &d->err))
          && LLM_TRY(d, llm_stape_exp(chain, t, &e, &d->err))
          && LLM_TRY(d, llm_stape_backward(chain, e, 1.0, &d->err))))
        return;
    node_rows(d, "chain", chain, 12);
    value = llm_put(d, "exptanh", llm_num(chain->nodes[e].value, 12));
    printf("exp(tanh(0.5))=%s\n", value);
    grad = llm_put(d, "exptanh_grad", llm_num(chain->nodes[a].grad, 12));
    printf("d/dx exp(tanh(x)) at 0.5=%s\n", grad);
    printf("central difference h=1e-5: %s", llm_put(d, "central", llm_num(fd, 9)));
    printf(" within_1e-9=%s\n", llm_yes(fabs(fd - chain->nodes[a].grad) < 1e-9));
    llm_demo_check(d, !strcmp(value, "1.587431271430"), "exp(tanh(0.5)) to 12 places");
    llm_demo_check(d, !strcmp(grad, "1.248431724655"), "its derivative to 12 places");
    llm_demo_check(d, fabs(fd - chain->nodes[a].grad) < 1e-9, "the difference to 1e-9");
}

static void setup(llm_demo *d)
{
    tape = llm_own_stape(d);
    if (LLM_TRY(d, llm_stape_init(tape, 2, &d->err)))
        printf("tape initial_capacity=%s\n",
               llm_put(d, "capacity_initial", llm_text("%zu", tape->capacity)));
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {fixture_tape, exp_tanh, NULL};
    return llm_demo_main(argc, argv, "ch14-scalar-autodiff", setup, sections);
}
