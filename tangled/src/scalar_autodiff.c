/* scalar_autodiff.c -- a scalar tape and reverse accumulation. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/stape.h"

llm_status llm_stape_init(llm_stape *tape, size_t capacity, llm_error *err)
{
    llm_stape t;
    if (tape == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "stape.init", "no tape");
    if (capacity == 0)
        capacity = 1;
    if (capacity > SIZE_MAX / sizeof(llm_snode))
        return llm_fail(err, LLM_ERR_OVERFLOW, "stape.init",
                        "%zu nodes need more bytes than size_t can count", capacity);
    t.nodes = llm_malloc(capacity * sizeof(llm_snode));
    if (t.nodes == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, "stape.init",
                        "cannot allocate %zu nodes", capacity);
    t.count = 0;
    t.capacity = capacity;
    *tape = t;
    return LLM_OK;
}

void llm_stape_free(llm_stape *tape)
{
    if (tape == NULL)
        return;
    free(tape->nodes);
    memset(tape, 0, sizeof *tape);
}
/* Room for one more node: the array doubles when it is full. */
static llm_status make_room(llm_stape *tape, const char *stage, llm_error *err)
{
    size_t capacity;
    llm_snode *grown;
    if (tape->count < tape->capacity)
        return LLM_OK;
    if (tape->capacity > SIZE_MAX / 2 / sizeof(llm_snode))
        return llm_fail(err, LLM_ERR_OVERFLOW, stage,
                        "a tape of %zu nodes cannot double", tape->capacity);
    capacity = tape->capacity > 0 ? 2 * tape->capacity : 8;
    grown = llm_realloc(tape->nodes, capacity * sizeof(llm_snode));
    if (grown == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, stage,
                        "cannot grow the tape to %zu nodes", capacity);
    tape->nodes = grown;
    tape->capacity = capacity;
    return LLM_OK;
}
/* The checks every recording makes before it computes anything. */
static llm_status check_operands(const llm_stape *tape, size_t nargs, const size_t *arg,
                                 const size_t *out, const char *stage, llm_error *err)
{
    size_t k;
    if (tape == NULL || out == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "a tape and a place for the new node's id are required");
    for (k = 0; k < nargs; k++)
        if (arg[k] >= tape->count)
            return llm_fail(err, LLM_ERR_TAPE, stage,
                            "operand %zu is node %zu, but the tape holds %zu nodes",
                            k, arg[k], tape->count);
    return LLM_OK;
}

/* Appends a node whose value is computed; the last check is that value. */
static llm_status record(llm_stape *tape, llm_snode node, size_t *out,
                         const char *stage, llm_error *err)
{
    llm_status st;
    if (!isfinite(node.value))
        return llm_fail(err, LLM_ERR_NONFINITE, stage,
                        "the new node's value %g is not finite", node.value);
    st = make_room(tape, stage, err);
    if (st != LLM_OK)
        return st;
    node.grad = 0.0;
    tape->nodes[tape->count] = node;
    *out = tape->count++;
    return LLM_OK;
}
/* Checks the operands, computes the value of op and records the node. */
static llm_status apply(llm_stape *tape, llm_sop op, size_t nargs, size_t a, size_t b,
                        double c, size_t *out, const char *stage, llm_error *err)
{
    const size_t arg[2] = {a, b};
    llm_snode node;
    double x, y;
    llm_status st = check_operands(tape, nargs, arg, out, stage, err);
    if (st != LLM_OK)
        return st;
    if (!isfinite(c))
        return llm_fail(err, LLM_ERR_NONFINITE, stage, "the constant %g is not finite",
                        c);
    x = tape->nodes[a].value;
    y = nargs == 2 ? tape->nodes[b].value : 0.0;
    memset(&node, 0, sizeof node);
    node.op = op;
    node.nargs = op == LLM_SOP_DETACH ? 0 : nargs;   /* detach: no edge back */
    node.arg[0] = a;
    node.arg[1] = nargs == 2 ? b : 0;
    node.constant = c;
    switch (op) {
    case LLM_SOP_ADD:   node.value = x + y; break;
    case LLM_SOP_MUL:   node.value = x * y; break;
    case LLM_SOP_SCALE: node.value = c * x; break;
    case LLM_SOP_EXP:   node.value = exp(x); break;
    case LLM_SOP_TANH:  node.value = tanh(x); break;
    default:            node.value = x; break;   /* detach copies its source */
    }
    return record(tape, node, out, stage, err);
}
llm_status llm_stape_leaf(llm_stape *tape, double value, size_t *out, llm_error *err)
{
    llm_snode node;
    llm_status st = check_operands(tape, 0, NULL, out, "stape.leaf", err);
    if (st != LLM_OK)
        return llm_pass(err, st, "stape.leaf");
    memset(&node, 0, sizeof node);
    node.op = LLM_SOP_LEAF;
    node.value = value;
    return llm_pass(err, record(tape, node, out, "stape.leaf", err), "stape.leaf");
}

llm_status llm_stape_add(llm_stape *tape, size_t a, size_t b, size_t *out,
                         llm_error *err)
{
    return llm_pass(err, apply(tape, LLM_SOP_ADD, 2, a, b, 0.0, out, "stape.add", err),
                    "stape.add");
}

llm_status llm_stape_mul(llm_stape *tape, size_t a, size_t b, size_t *out,
                         llm_error *err)
{
    return llm_pass(err, apply(tape, LLM_SOP_MUL, 2, a, b, 0.0, out, "stape.mul", err),
                    "stape.mul");
}

llm_status llm_stape_scale(llm_stape *tape, size_t a, double c, size_t *out,
                           llm_error *err)
{
    return llm_pass(err,
                    apply(tape, LLM_SOP_SCALE, 1, a, 0, c, out, "stape.scale", err),
                    "stape.scale");
}

llm_status llm_stape_exp(llm_stape *tape, size_t a, size_t *out, llm_error *err)
{
    return llm_pass(err, apply(tape, LLM_SOP_EXP, 1, a, 0, 0.0, out, "stape.exp", err),
                    "stape.exp");
}

llm_status llm_stape_tanh(llm_stape *tape, size_t a, size_t *out, llm_error *err)
{
    return llm_pass(err,
                    apply(tape, LLM_SOP_TANH, 1, a, 0, 0.0, out, "stape.tanh", err),
                    "stape.tanh");
}

llm_status llm_stape_detach(llm_stape *tape, size_t a, size_t *out, llm_error *err)
{
    return llm_pass(err,
                    apply(tape, LLM_SOP_DETACH, 1, a, 0, 0.0, out, "stape.detach",
                          err),
                    "stape.detach");
}

const char *llm_sop_name(llm_sop op)
{
    static const char *const names[] = {"leaf", "add", "mul", "scale", "exp", "tanh",
                                         "detach"};
    if ((int)op < 0 || (size_t)op >= sizeof names / sizeof names[0])
        return "unknown";
    return names[op];
}
static double local_derivative(const llm_stape *tape, const llm_snode *v, size_t k)
{
    switch (v->op) {
    case LLM_SOP_ADD:   return 1.0;                             /* d(a+b)/da = 1 */
    case LLM_SOP_MUL:   return tape->nodes[v->arg[1 - k]].value; /* d(ab)/da = b */
    case LLM_SOP_SCALE: return v->constant;                      /* d(ca)/da = c */
    case LLM_SOP_EXP:   return v->value;                /* d exp(a)/da = exp(a) */
    case LLM_SOP_TANH:  return 1.0 - v->value * v->value;   /* 1 - tanh(a)^2 */
    default:            return 0.0;             /* leaf and detach: no edges */
    }
}

llm_status llm_stape_partial(const llm_stape *tape, size_t id, size_t k, double *d,
                             llm_error *err)
{
    if (tape == NULL || d == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "stape.partial",
                        "a tape and a place for the derivative are required");
    if (id >= tape->count)
        return llm_fail(err, LLM_ERR_TAPE, "stape.partial",
                        "node %zu is not on a tape of %zu nodes", id, tape->count);
    if (k >= tape->nodes[id].nargs)
        return llm_fail(err, LLM_ERR_TAPE, "stape.partial",
                        "node %zu (%s) has %zu operand edges, edge %zu was asked for",
                        id, llm_sop_name(tape->nodes[id].op), tape->nodes[id].nargs, k);
    *d = local_derivative(tape, &tape->nodes[id], k);
    return LLM_OK;
}
llm_status llm_stape_backward(llm_stape *tape, size_t output, double seed,
                              llm_error *err)
{
    double *bar;
    size_t i, k;
    if (tape == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "stape.backward", "no tape");
    if (output >= tape->count)
        return llm_fail(err, LLM_ERR_TAPE, "stape.backward",
                        "the output is node %zu, but the tape holds %zu nodes",
                        output, tape->count);
    if (!isfinite(seed))
        return llm_fail(err, LLM_ERR_NONFINITE, "stape.backward",
                        "the seed %g is not finite", seed);
    bar = llm_calloc(output + 1, sizeof *bar);
    if (bar == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, "stape.backward",
                        "cannot allocate %zu adjoints", output + 1);
    bar[output] = seed;
    for (i = output + 1; i-- > 0;) {
        const llm_snode *v = &tape->nodes[i];
        for (k = 0; k < v->nargs; k++)      /* every operand edge, repeats included */
            bar[v->arg[k]] += bar[i] * local_derivative(tape, v, k);
    }
    for (i = 0; i <= output; i++) {
        const double g = tape->nodes[i].grad;
        if (!isfinite(bar[i]) || !isfinite(g + bar[i])) {
            const double adjoint = bar[i];
            free(bar);
            return llm_fail(err, LLM_ERR_NONFINITE, "stape.backward",
                            "node %zu would get the adjoint %g on top of the gradient %g; "
                            "no gradient was changed", i, adjoint, g);
        }
    }
    for (i = 0; i <= output; i++)          /* commit: grad += adjoint */
        tape->nodes[i].grad += bar[i];
    free(bar);
    return LLM_OK;
}
llm_status llm_stape_zero_grad(llm_stape *tape, llm_error *err)
{
    size_t i;
    if (tape == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "stape.zero_grad", "no tape");
    for (i = 0; i < tape->count; i++)
        tape->nodes[i].grad = 0.0;
    return LLM_OK;
}

static llm_status check_node(const llm_stape *tape, size_t id, const void *result,
                             const char *stage, llm_error *err)
{
    if (tape == NULL || result == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "a tape and a place for the result are required");
    if (id >= tape->count)
        return llm_fail(err, LLM_ERR_TAPE, stage,
                        "node %zu is not on a tape of %zu nodes", id, tape->count);
    return LLM_OK;
}

llm_status llm_stape_value(const llm_stape *tape, size_t id, double *value,
                           llm_error *err)
{
    llm_status st = check_node(tape, id, value, "stape.value", err);
    if (st == LLM_OK)
        *value = tape->nodes[id].value;
    return llm_pass(err, st, "stape.value");
}

llm_status llm_stape_grad(const llm_stape *tape, size_t id, double *grad,
                          llm_error *err)
{
    llm_status st = check_node(tape, id, grad, "stape.grad", err);
    if (st == LLM_OK)
        *grad = tape->nodes[id].grad;
    return llm_pass(err, st, "stape.grad");
}
llm_status llm_stape_order(const llm_stape *tape, size_t output, size_t *order,
                           size_t *count, llm_error *err)
{
    unsigned char *needed;
    size_t i, k, n = 0;
    if (tape == NULL || order == NULL || count == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "stape.order",
                        "a tape, an order array and a count are required");
    if (output >= tape->count)
        return llm_fail(err, LLM_ERR_TAPE, "stape.order",
                        "the output is node %zu, but the tape holds %zu nodes",
                        output, tape->count);
    needed = llm_calloc(output + 1, 1);
    if (needed == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, "stape.order",
                        "cannot allocate %zu marks", output + 1);
    needed[output] = 1;
    for (i = output + 1; i-- > 0;) {   /* every user of i has been seen */
        if (!needed[i])
            continue;
        order[n++] = i;
        for (k = 0; k < tape->nodes[i].nargs; k++)
            needed[tape->nodes[i].arg[k]] = 1;
    }
    free(needed);
    *count = n;
    return LLM_OK;
}
