/* ch14-scalar-autodiff -- a scalar tape and reverse accumulation. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/stape.h"
#include "llm/evidence.h"

static int give_up(llm_trace *tr, llm_stape *tape)
{
    llm_stape_free(tape);
    return llm_demo_finish(tr, 0);
}

/* Prints node id as "node 1 mul [0, 0] value=4 grad=2" and writes the
   same cells as a row of the trace table: id, op, edges, value, grad. */
static void node_row(llm_trace *tr, const char *table, const llm_stape *tape,
                     size_t id, int decimals)
{
    const llm_snode *v = &tape->nodes[id];
    char cell[5][64];
    const char *cells[5] = {cell[0], cell[1], cell[2], cell[3], cell[4]};
    snprintf(cell[0], sizeof cell[0], "%zu", id);
    if (v->op == LLM_SOP_SCALE)
        snprintf(cell[1], sizeof cell[1], "scale(%s)",
                 llm_fmt(cell[3], sizeof cell[3], v->constant, 0));
    else if (v->op == LLM_SOP_DETACH)
        snprintf(cell[1], sizeof cell[1], "detach(%zu)", v->arg[0]);
    else
        snprintf(cell[1], sizeof cell[1], "%s", llm_sop_name(v->op));
    llm_fmt_sizes(cell[2], sizeof cell[2], v->arg, v->nargs);
    llm_fmt(cell[3], sizeof cell[3], v->value, decimals);
    llm_fmt(cell[4], sizeof cell[4], v->grad, decimals);
    printf("node %s %s %s value=%s grad=%s\n", cell[0], cell[1], cell[2], cell[3], cell[4]);
    llm_trace_row(tr, table, 5, cells);
}

/* The gradients of loss, sq and x after a step: printed after label, kept
   as a row of the trace table "passes" and as the values key_loss, ... */
static void grads_row(llm_trace *tr, const char *label, const char *key,
                      const llm_stape *tape)
{
    static const char *const names[3] = {"loss", "sq", "x"};
    char cell[3][64], name[64];
    const char *cells[4] = {label, cell[0], cell[1], cell[2]};
    int i;
    for (i = 0; i < 3; i++) {       /* loss is node 2, sq node 1, x node 0 */
        llm_fmt(cell[i], sizeof cell[i], tape->nodes[2 - i].grad, 0);
        snprintf(name, sizeof name, "%s_%s", key, names[i]);
        llm_trace_value(tr, name, cell[i]);
    }
    printf("%s: grad loss=%s sq=%s x=%s\n", label, cell[0], cell[1], cell[2]);
    llm_trace_row(tr, "passes", 4, cells);
}

int main(int argc, char **argv)
{
    llm_trace tr;
    llm_stape tape;
    llm_error err;
    size_t x = 0, sq = 0, loss = 0, y = 0;
    char buf[256];
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch14-scalar-autodiff", &tr);
    if (status != 0)
        return status;
    memset(&tape, 0, sizeof tape);
    printf("chapter=14 scalar-autodiff\n");
    {
        size_t order[3], n = 0, i;
        ok = ok && llm_demo_ok("ch14", llm_stape_init(&tape, 2, &err), &err);
        snprintf(buf, sizeof buf, "%zu", tape.capacity);
        printf("tape initial_capacity=%s\n", buf);
        llm_trace_value(&tr, "capacity_initial", buf);
        ok = ok && llm_demo_ok("ch14", llm_stape_leaf(&tape, 2.0, &x, &err), &err)
                && llm_demo_ok("ch14", llm_stape_mul(&tape, x, x, &sq, &err), &err)
                && llm_demo_ok("ch14", llm_stape_add(&tape, sq, sq, &loss, &err), &err)
                && llm_demo_ok("ch14", llm_stape_order(&tape, loss, order, &n, &err), &err);
        if (!ok)
            return give_up(&tr, &tape);
        printf("x=%s", llm_fmt(buf, sizeof buf, tape.nodes[x].value, 0));
        printf(" sq=%s", llm_fmt(buf, sizeof buf, tape.nodes[sq].value, 0));
        llm_trace_value(&tr, "sq", buf);
        printf(" loss=%s\n", llm_fmt(buf, sizeof buf, tape.nodes[loss].value, 0));
        llm_trace_value(&tr, "loss", buf);
        ok = ok && tape.nodes[sq].value == 4.0 && tape.nodes[loss].value == 8.0;
        printf("order(loss)=%s", llm_fmt_sizes(buf, sizeof buf, order, n));
        llm_trace_value(&tr, "order_loss", buf);
        for (i = 0; i + 1 < n; i++)      /* ids fall along the order */
            ok = ok && order[i] > order[i + 1];
        printf(" decreasing_ids=%s\n", ok ? "yes" : "no");
    }
    {
        size_t i;
        ok = ok && llm_demo_ok("ch14", llm_stape_backward(&tape, loss, 1.0, &err), &err);
        if (!ok)
            return give_up(&tr, &tape);
        grads_row(&tr, "backward 1", "pass1", &tape);
        ok = ok && tape.nodes[loss].grad == 1.0 && tape.nodes[sq].grad == 2.0
                && tape.nodes[x].grad == 8.0;
        for (i = 0; i < tape.count; i++)
            node_row(&tr, "nodes", &tape, i, 0);
        for (i = tape.count; i-- > 0;) {
            const llm_snode *v = &tape.nodes[i];
            size_t k;
            for (k = 0; k < v->nargs; k++) {
                char cell[6][64];
                const char *cells[6] = {cell[0], cell[1], cell[2], cell[3], cell[4], cell[5]};
                double d = 0.0;
                ok = ok && llm_demo_ok("ch14", llm_stape_partial(&tape, i, k, &d, &err), &err);
                snprintf(cell[0], sizeof cell[0], "%zu", i);
                snprintf(cell[1], sizeof cell[1], "%zu", k);
                snprintf(cell[2], sizeof cell[2], "%zu", v->arg[k]);
                llm_fmt(cell[3], sizeof cell[3], d, 0);
                llm_fmt(cell[4], sizeof cell[4], v->grad, 0);
                llm_fmt(cell[5], sizeof cell[5], v->grad * d, 0);
                printf("edge %s->%s (k=%s) local=%s adjoint=%s contribution=%s\n",
                       cell[0], cell[2], cell[1], cell[3], cell[4], cell[5]);
                llm_trace_row(&tr, "edges", 6, cells);
            }
        }
        ok = ok && llm_demo_ok("ch14", llm_stape_backward(&tape, loss, 1.0, &err), &err);
        grads_row(&tr, "backward 2", "pass2", &tape);
        ok = ok && tape.nodes[loss].grad == 2.0 && tape.nodes[sq].grad == 4.0
                && tape.nodes[x].grad == 16.0;
        ok = ok && llm_demo_ok("ch14", llm_stape_zero_grad(&tape, &err), &err);
        grads_row(&tr, "zero_grad", "zeroed", &tape);
        ok = ok && tape.nodes[loss].grad == 0.0 && tape.nodes[sq].grad == 0.0
                && tape.nodes[x].grad == 0.0;
    }
    {
        size_t d = 0, s = 0, order[6], n = 0, i;
        ok = ok && llm_demo_ok("ch14", llm_stape_detach(&tape, x, &d, &err), &err)
                && llm_demo_ok("ch14", llm_stape_scale(&tape, d, 3.0, &s, &err), &err)
                && llm_demo_ok("ch14", llm_stape_add(&tape, sq, s, &y, &err), &err)
                && llm_demo_ok("ch14", llm_stape_order(&tape, y, order, &n, &err), &err)
                && llm_demo_ok("ch14", llm_stape_backward(&tape, y, 1.0, &err), &err);
        if (!ok)
            return give_up(&tr, &tape);
        printf("detach: y = x*x + detach(x)*3 = %s\n",
               llm_fmt(buf, sizeof buf, tape.nodes[y].value, 0));
        llm_trace_value(&tr, "y", buf);
        printf("order(y)=%s\n", llm_fmt_sizes(buf, sizeof buf, order, n));
        llm_trace_value(&tr, "order_y", buf);
        for (i = 0; i < tape.count; i++)
            node_row(&tr, "detach_nodes", &tape, i, 0);
        llm_trace_value(&tr, "y_grad_x", llm_fmt(buf, sizeof buf, tape.nodes[x].grad, 0));
        llm_trace_value(&tr, "y_grad_detach", llm_fmt(buf, sizeof buf, tape.nodes[d].grad, 0));
        ok = ok && tape.nodes[y].value == 10.0 && tape.nodes[x].grad == 4.0
                && tape.nodes[loss].grad == 0.0;
        printf("tape nodes=%zu capacity=%zu\n", tape.count, tape.capacity);
        snprintf(buf, sizeof buf, "%zu", tape.capacity);
        llm_trace_value(&tr, "capacity_final", buf);
    }
    {
        llm_snode before[6];
        llm_stape other;
        size_t id = 99;
        double g = -1.0;
        int same_nodes, same_grads = 1, i;

        memcpy(before, tape.nodes, sizeof before);
        memset(&other, 0, sizeof other);
        llm_demo_refusal_cells(&tr, "cs", "leaf NaN", llm_stape_leaf(&tape, NAN, &id, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "add sq + node 99",
                               llm_stape_add(&tape, sq, 99, &id, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "mul node 99 * x",
                               llm_stape_mul(&tape, 99, x, &id, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "scale x by 1e308",
                               llm_stape_scale(&tape, x, 1e308, &id, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "exp of node 6",
                               llm_stape_exp(&tape, 6, &id, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "tanh without a place for the id",
                               llm_stape_tanh(&tape, x, NULL, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "detach node 6",
                               llm_stape_detach(&tape, 6, &id, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "edge 0 of the detach node",
                               llm_stape_partial(&tape, 3, 0, &g, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "grad of node 6",
                               llm_stape_grad(&tape, 6, &g, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "backward from node 6",
                               llm_stape_backward(&tape, 6, 1.0, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "backward with seed NaN",
                               llm_stape_backward(&tape, y, NAN, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "backward without a tape",
                               llm_stape_backward(NULL, y, 1.0, &err), &err);
        llm_demo_refusal_cells(&tr, "cs", "backward from y with seed 1e308",
                               llm_stape_backward(&tape, y, 1e308, &err), &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "overflow_message", err.message);
        llm_demo_refusal_cells(&tr, "cs", "a tape of SIZE_MAX/8 nodes",
                               llm_stape_init(&other, SIZE_MAX / 8, &err), &err);
        same_nodes = tape.count == 6 && memcmp(before, tape.nodes, sizeof before) == 0;
        for (i = 0; i < 6; i++)
            same_grads = same_grads
                      && memcmp(&before[i].grad, &tape.nodes[i].grad, sizeof g) == 0;
        printf("unchanged after refusals: nodes=%s gradients=%s outputs=%s\n",
               same_nodes ? "yes" : "no", same_grads ? "yes" : "no",
               id == 99 && g == -1.0 && other.nodes == NULL ? "yes" : "no");
        ok = ok && same_nodes && same_grads && id == 99 && g == -1.0 && other.nodes == NULL;
        llm_trace_value(&tr, "unchanged", same_nodes && same_grads ? "yes" : "no");
    }
    llm_stape_free(&tape);
    {
        const double x0 = 0.5, h = 1e-5;
        llm_stape chain;
        size_t a = 0, t = 0, e = 0, i;
        double fd;
        memset(&chain, 0, sizeof chain);
        ok = ok && llm_demo_ok("ch14", llm_stape_init(&chain, 1, &err), &err)
                && llm_demo_ok("ch14", llm_stape_leaf(&chain, x0, &a, &err), &err)
                && llm_demo_ok("ch14", llm_stape_tanh(&chain, a, &t, &err), &err)
                && llm_demo_ok("ch14", llm_stape_exp(&chain, t, &e, &err), &err)
                && llm_demo_ok("ch14", llm_stape_backward(&chain, e, 1.0, &err), &err);
        if (!ok)
            return give_up(&tr, &chain);
        for (i = 0; i < chain.count; i++)
            node_row(&tr, "chain", &chain, i, 12);
        printf("exp(tanh(0.5))=%s\n", llm_fmt(buf, sizeof buf, chain.nodes[e].value, 12));
        llm_trace_value(&tr, "exptanh", buf);
        ok = ok && strcmp(buf, "1.587431271430") == 0;
        printf("d/dx exp(tanh(x)) at 0.5=%s\n", llm_fmt(buf, sizeof buf, chain.nodes[a].grad, 12));
        llm_trace_value(&tr, "exptanh_grad", buf);
        ok = ok && strcmp(buf, "1.248431724655") == 0;
        /* the symmetric difference (f(x0 + h) - f(x0 - h)) / 2h, outside the tape */
        fd = (exp(tanh(x0 + h)) - exp(tanh(x0 - h))) / (2.0 * h);
        printf("central difference h=1e-5: %s within_1e-9=%s\n", llm_fmt(buf, sizeof buf, fd, 9),
               fabs(fd - chain.nodes[a].grad) < 1e-9 ? "yes" : "no");
        llm_trace_value(&tr, "central", buf);
        ok = ok && fabs(fd - chain.nodes[a].grad) < 1e-9;
        llm_stape_free(&chain);
    }
    return llm_demo_finish(&tr, ok);
}
