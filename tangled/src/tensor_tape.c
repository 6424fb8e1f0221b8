/* tensor_tape.c -- a tape of tensor operations and vector-Jacobian products. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tape.h"
#include "tape_op.h"

const llm_op llm_op_leaf = {"leaf", NULL};
const llm_op llm_op_const = {"const", NULL};

const char *llm_op_name(const llm_op *op)
{
    return op == NULL || op->name == NULL ? "unknown" : op->name;
}
static size_t last_epoch;   /* shared by every tape; one thread only */

static size_t new_epoch(void)
{
    return ++last_epoch;
}

/* The bytes of a buffer of n doubles as the library allocates it: at least
   one double, so that no buffer is empty. */
static size_t buffer_bytes(size_t n)
{
    return (n > 0 ? n : 1) * sizeof(double);
}

/* Releases what one node owns: its value if owned and its adjoint go back
   to the allocator for the next recording, its parameters are freed. */
static void release_node(llm_node *node)
{
    llm_alloc_give(node->adjoint, buffer_bytes(node->value.size));
    llm_tensor_give(&node->value);
    node->adjoint = NULL;
    free(node->attr);
    node->attr = NULL;
}

llm_status llm_tape_init(llm_tape *tape, size_t capacity, llm_error *err)
{
    llm_tape t;
    if (tape == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tape.init", "no tape");
    if (capacity == 0)
        capacity = 1;
    if (capacity > SIZE_MAX / sizeof(llm_node))
        return llm_fail(err, LLM_ERR_OVERFLOW, "tape.init",
                        "%zu nodes need more bytes than size_t can count", capacity);
    t.nodes = llm_malloc(capacity * sizeof(llm_node));
    if (t.nodes == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, "tape.init", "cannot allocate %zu nodes",
                        capacity);
    t.count = 0;
    t.capacity = capacity;
    t.epoch = new_epoch();
    t.released = 0;
    t.leaves = NULL;
    t.nleaves = t.leaf_room = 0;
    *tape = t;
    return LLM_OK;
}
llm_status llm_tape_reset(llm_tape *tape, llm_error *err)
{
    size_t i;
    if (tape == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tape.reset", "no tape");
    if (tape->epoch == 0)
        return llm_fail(err, LLM_ERR_TAPE, "tape.reset",
                        "the tape is not initialised: call llm_tape_init first");
    for (i = 0; i < tape->count; i++)
        release_node(&tape->nodes[i]);
    tape->count = 0;
    tape->nleaves = 0;
    tape->epoch = new_epoch();
    tape->released = 0;
    return LLM_OK;
}

void llm_tape_free(llm_tape *tape)
{
    size_t i;
    if (tape == NULL)
        return;
    for (i = 0; i < tape->count; i++)
        release_node(&tape->nodes[i]);
    free(tape->nodes);
    free(tape->leaves);
    memset(tape, 0, sizeof *tape);
    llm_alloc_trim();
}
static llm_status check_tape(const llm_tape *tape, const char *stage, llm_error *err)
{
    if (tape == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "no tape");
    if (tape->epoch == 0)
        return llm_fail(err, LLM_ERR_TAPE, stage,
                        "the tape is not initialised: call llm_tape_init first");
    if (tape->released)
        return llm_fail(err, LLM_ERR_TAPE, stage,
                        "the recording was released by a backward pass without "
                        "keep_graph; reset the tape to record again");
    return LLM_OK;
}

static llm_status check_var(const llm_tape *tape, llm_var v, const char *name,
                            const char *stage, llm_error *err)
{
    if (v.epoch != tape->epoch)
        return llm_fail(err, LLM_ERR_TAPE, stage,
                        "%s (node %zu) is stale: it comes from recording %zu, "
                        "the tape is recording %zu", name, v.id, v.epoch, tape->epoch);
    if (v.id >= tape->count)
        return llm_fail(err, LLM_ERR_TAPE, stage,
                        "%s is node %zu, but the recording holds %zu nodes",
                        name, v.id, tape->count);
    return LLM_OK;
}

/* The checks every operation makes before it computes anything. */
static llm_status check_operation(const llm_tape *tape, size_t nargs,
                                  const llm_var *args, const llm_var *out,
                                  const char *stage, llm_error *err)
{
    static const char *const names[3] = {"operand a", "operand b", "operand c"};
    size_t k;
    llm_status st = check_tape(tape, stage, err);
    if (st != LLM_OK)
        return st;
    if (out == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "no place for the new node's handle");
    for (k = 0; k < nargs; k++)
        if ((st = check_var(tape, args[k], k < 3 ? names[k] : "an operand", stage,
                            err)) != LLM_OK)
            return st;
    return LLM_OK;
}
size_t llm_tape_mark(const llm_tape *tape)
{
    return tape == NULL ? 0 : tape->count;
}

llm_status llm_tape_rewind(llm_tape *tape, size_t mark, llm_error *err)
{
    llm_status st = check_tape(tape, "tape.rewind", err);
    if (st != LLM_OK)
        return llm_pass(err, st, "tape.rewind");
    if (mark > tape->count)
        return llm_fail(err, LLM_ERR_TAPE, "tape.rewind",
                        "mark %zu is beyond the recording's %zu nodes: it comes from "
                        "another recording or tape", mark, tape->count);
    while (tape->count > mark)                 /* newest first: views before owners */
        release_node(&tape->nodes[--tape->count]);
    while (tape->nleaves > 0 && tape->leaves[tape->nleaves - 1] >= mark)
        tape->nleaves--;
    return LLM_OK;
}
/* Room for one more node: the array doubles when it is full. */
static llm_status make_room(llm_tape *tape, const char *stage, llm_error *err)
{
    size_t capacity;
    llm_node *grown;
    if (tape->count < tape->capacity)
        return LLM_OK;
    if (tape->capacity > SIZE_MAX / 2 / sizeof(llm_node))
        return llm_fail(err, LLM_ERR_OVERFLOW, stage,
                        "a tape of %zu nodes cannot double", tape->capacity);
    capacity = tape->capacity > 0 ? 2 * tape->capacity : 8;
    grown = llm_realloc(tape->nodes, capacity * sizeof(llm_node));
    if (grown == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, stage, "cannot grow the tape to %zu nodes",
                        capacity);
    tape->nodes = grown;
    tape->capacity = capacity;
    return LLM_OK;
}

/* Appends node, whose value and parameters the tape takes over. On
   failure they are freed and the tape is as it was. */
static llm_status append(llm_tape *tape, llm_node node, llm_var *out, const char *stage,
                         llm_error *err)
{
    size_t k;
    llm_status st = make_room(tape, stage, err);
    if (st != LLM_OK) {
        release_node(&node);
        return st;
    }
    node.adjoint = NULL;
    node.needs_grad = node.op == &llm_op_leaf && node.grad != NULL;
    for (k = 0; k < node.nargs; k++)
        node.needs_grad = node.needs_grad || tape->nodes[node.arg[k]].needs_grad;
    tape->nodes[tape->count] = node;
    out->id = tape->count++;
    out->epoch = tape->epoch;
    return LLM_OK;
}
/* Refuses a NaN or an infinity among the elements of a contiguous t. */
static llm_status check_finite(const llm_tensor *t, const char *what, const char *stage,
                               llm_error *err)
{
    size_t j;
    for (j = 0; j < t->size; j++)
        if (!isfinite(t->data[t->offset + j]))
            return llm_fail(err, LLM_ERR_NONFINITE, stage,
                            "element %zu of %s is %g; values on the tape are finite",
                            j, what, t->data[t->offset + j]);
    return LLM_OK;
}

static int same_shape(const llm_tensor *a, const llm_tensor *b)
{
    size_t k;
    if (a->rank != b->rank)
        return 0;
    for (k = 0; k < a->rank; k++)
        if (a->shape[k] != b->shape[k])
            return 0;
    return 1;
}

/* 1 when the elements of the contiguous tensors a and b share memory. */
static int overlaps(const llm_tensor *a, const llm_tensor *b)
{
    uintptr_t a0, a1, b0, b1;
    if (a->size == 0 || b->size == 0)
        return 0;
    a0 = (uintptr_t)(a->data + a->offset);
    a1 = a0 + a->size * sizeof(double);
    b0 = (uintptr_t)(b->data + b->offset);
    b1 = b0 + b->size * sizeof(double);
    return a0 < b1 && b0 < a1;
}
llm_status llm_tape_check(const llm_tape *tape, size_t nargs, const llm_var *args,
                          const llm_var *out, const char *stage, llm_error *err)
{
    return check_operation(tape, nargs, args, out, stage, err);
}

llm_status llm_tape_attr(llm_tape *tape, llm_node *node, size_t bytes,
                         const char *stage, llm_error *err)
{
    (void)tape;
    node->attr = llm_calloc(1, bytes > 0 ? bytes : 1);
    if (node->attr == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, stage,
                        "cannot keep the operation's %zu bytes of parameters", bytes);
    return LLM_OK;
}

void llm_tape_discard(llm_tape *tape, llm_node *node)
{
    (void)tape;
    release_node(node);
}

llm_status llm_tape_append(llm_tape *tape, llm_node node, llm_var *out,
                           const char *stage, llm_error *err)
{
    return append(tape, node, out, stage, err);
}
#define WALK_POSITIONS 3

typedef struct walk {
    size_t rank;
    size_t shape[LLM_MAX_RANK], index[LLM_MAX_RANK];
    size_t stride[WALK_POSITIONS][LLM_MAX_RANK];
    size_t pos[WALK_POSITIONS];
} walk;

/* A walk over shape from index 0 with every position and stride 0. */
static void walk_start(walk *w, size_t rank, const size_t *shape)
{
    memset(w, 0, sizeof *w);
    w->rank = rank;
    if (rank > 0)
        memcpy(w->shape, shape, rank * sizeof shape[0]);
}

/* The next index in row-major order; every position follows it. */
static void walk_next(walk *w)
{
    size_t k = w->rank, j;
    while (k-- > 0) {
        for (j = 0; j < WALK_POSITIONS; j++)
            w->pos[j] += w->stride[j][k];
        if (++w->index[k] < w->shape[k])
            return;
        for (j = 0; j < WALK_POSITIONS; j++)
            w->pos[j] -= w->shape[k] * w->stride[j][k];
        w->index[k] = 0;
    }
}

/* Past the rest of the current row (the last axis) to the start of the
   next; a walk of rank 0 has one row of one element. The loops below walk
   a row at a time: n = walk_row(w) elements, position j moving by
   walk_step(w, j) along the row. */
static void walk_next_row(walk *w)
{
    const size_t r = w->rank;
    size_t j;
    if (r == 0)
        return;
    for (j = 0; j < WALK_POSITIONS; j++)
        w->pos[j] += (w->shape[r - 1] - 1 - w->index[r - 1]) * w->stride[j][r - 1];
    w->index[r - 1] = w->shape[r - 1] - 1;
    walk_next(w);
}
static size_t walk_row(const walk *w)
{
    return w->rank > 0 ? w->shape[w->rank - 1] : 1;
}
static size_t walk_step(const walk *w, size_t j)
{
    return w->rank > 0 ? w->stride[j][w->rank - 1] : 0;
}
/* t's own strides aligned to the last axes of a rank-r walk: 0 along the
   axes t lacks or has with extent 1. */
static void read_strides(const llm_tensor *t, size_t r, size_t *stride)
{
    size_t lead = r - t->rank, k;
    for (k = 0; k < r; k++)
        stride[k] = k < lead || t->shape[k - lead] == 1 ? 0 : t->stride[k - lead];
}

/* The same for a row-major buffer of t's shape (an adjoint). */
static void dense_strides(const llm_tensor *t, size_t r, size_t *stride)
{
    size_t lead = r - t->rank, k, step = 1;
    for (k = r; k-- > 0;) {
        size_t extent = k < lead ? 1 : t->shape[k - lead];
        stride[k] = extent == 1 ? 0 : step;
        step *= extent;
    }
}
typedef struct transpose_attr {
    size_t axis_a, axis_b;    /* the two axes the view swapped */
} transpose_attr;

typedef struct reduce_attr {
    size_t axis;              /* the axis summed over */
    int keepdim;              /* 1: it stays in the result with extent 1 */
} reduce_attr;
/* add and sub: a_bar += unbroadcast(c_bar), b_bar += (sign) unbroadcast(c_bar) */
static void unbroadcast_add(const llm_tape *tape, const llm_node *c, size_t k,
                            int negate, const double *cbar, double *pbar)
{
    const llm_tensor *p = &tape->nodes[c->arg[k]].value;
    size_t i, j, n, s;
    walk w;
    if (same_shape(p, &c->value)) {            /* nothing broadcast: a flat loop */
        for (i = 0; i < c->value.size; i++)
            pbar[i] += negate ? -cbar[i] : cbar[i];
        return;
    }
    walk_start(&w, c->value.rank, c->value.shape);
    dense_strides(p, c->value.rank, w.stride[0]);
    n = walk_row(&w);
    s = walk_step(&w, 0);
    for (i = 0; i < c->value.size; i += n, walk_next_row(&w))
        for (j = 0; j < n; j++)
            pbar[w.pos[0] + j * s] += negate ? -cbar[i + j] : cbar[i + j];
}

static llm_status add_vjp(const llm_tape *tape, const llm_node *c, size_t k,
                          const double *cbar, double *pbar, llm_error *err)
{
    (void)err;
    unbroadcast_add(tape, c, k, 0, cbar, pbar);
    return LLM_OK;
}

static llm_status sub_vjp(const llm_tape *tape, const llm_node *c, size_t k,
                          const double *cbar, double *pbar, llm_error *err)
{
    (void)err;
    unbroadcast_add(tape, c, k, k == 1, cbar, pbar);
    return LLM_OK;
}

/* mul: a_bar += unbroadcast(c_bar * b), b_bar += unbroadcast(c_bar * a) */
static llm_status mul_vjp(const llm_tape *tape, const llm_node *c, size_t k,
                          const double *cbar, double *pbar, llm_error *err)
{
    const llm_tensor *p = &tape->nodes[c->arg[k]].value;
    const llm_tensor *q = &tape->nodes[c->arg[1 - k]].value;   /* the other factor */
    size_t i, j, n, s, t;
    walk w;
    (void)err;
    if (same_shape(p, &c->value) && same_shape(q, &c->value) &&
        llm_tensor_is_contiguous(q)) {
        const double *qv = q->data + q->offset;
        for (i = 0; i < c->value.size; i++)
            pbar[i] += cbar[i] * qv[i];
        return LLM_OK;
    }
    walk_start(&w, c->value.rank, c->value.shape);
    dense_strides(p, c->value.rank, w.stride[0]);
    read_strides(q, c->value.rank, w.stride[1]);
    w.pos[1] = q->offset;
    n = walk_row(&w);
    s = walk_step(&w, 0);
    t = walk_step(&w, 1);
    for (i = 0; i < c->value.size; i += n, walk_next_row(&w))
        for (j = 0; j < n; j++)
            pbar[w.pos[0] + j * s] += cbar[i + j] * q->data[w.pos[1] + j * t];
    return LLM_OK;
}
/* reshape: a_bar += c_bar, element for element in row-major order */
static llm_status reshape_vjp(const llm_tape *tape, const llm_node *c, size_t k,
                              const double *cbar, double *pbar, llm_error *err)
{
    size_t i;
    (void)tape, (void)k, (void)err;
    for (i = 0; i < c->value.size; i++)
        pbar[i] += cbar[i];
    return LLM_OK;
}

/* transpose: a_bar += c_bar with the axes swapped back */
static llm_status transpose_vjp(const llm_tape *tape, const llm_node *c, size_t k,
                                const double *cbar, double *pbar, llm_error *err)
{
    const llm_tensor *p = &tape->nodes[c->arg[0]].value;
    const transpose_attr *at = c->attr;
    size_t i, j, n, s;
    walk w;
    (void)k, (void)err;
    walk_start(&w, c->value.rank, c->value.shape);
    dense_strides(p, p->rank, w.stride[0]);
    s = w.stride[0][at->axis_a];
    w.stride[0][at->axis_a] = w.stride[0][at->axis_b];
    w.stride[0][at->axis_b] = s;
    n = walk_row(&w);
    s = walk_step(&w, 0);
    for (i = 0; i < c->value.size; i += n, walk_next_row(&w))
        for (j = 0; j < n; j++)
            pbar[w.pos[0] + j * s] += cbar[i + j];
    return LLM_OK;
}

/* sum and mean over axis: a_bar += c_bar (/ n) repeated along the axis */
static void reduce_back(const llm_tape *tape, const llm_node *c, int mean,
                        const double *cbar, double *pbar)
{
    const llm_tensor *p = &tape->nodes[c->arg[0]].value;
    const reduce_attr *at = c->attr;
    const double n = (double)p->shape[at->axis];
    size_t cs[LLM_MAX_RANK], i, k, j = 0, m, s;
    walk w;
    walk_start(&w, p->rank, p->shape);
    dense_strides(&c->value, c->value.rank, cs);
    for (k = 0; k < p->rank; k++) {            /* the child's strides, over a's axes */
        if (k == at->axis) {
            w.stride[0][k] = 0;
            j += (size_t)at->keepdim;          /* a kept axis has extent 1: skip it */
        } else {
            w.stride[0][k] = cs[j++];
        }
    }
    m = walk_row(&w);
    s = walk_step(&w, 0);
    for (i = 0; i < p->size; i += m, walk_next_row(&w))
        for (j = 0; j < m; j++)
            pbar[i + j] += mean ? cbar[w.pos[0] + j * s] / n : cbar[w.pos[0] + j * s];
}

static llm_status sum_vjp(const llm_tape *tape, const llm_node *c, size_t k,
                          const double *cbar, double *pbar, llm_error *err)
{
    (void)k, (void)err;
    reduce_back(tape, c, 0, cbar, pbar);
    return LLM_OK;
}

static llm_status mean_vjp(const llm_tape *tape, const llm_node *c, size_t k,
                           const double *cbar, double *pbar, llm_error *err)
{
    (void)k, (void)err;
    reduce_back(tape, c, 1, cbar, pbar);
    return LLM_OK;
}

/* sum_all: every element of a_bar gets the scalar c_bar */
static llm_status sum_all_vjp(const llm_tape *tape, const llm_node *c, size_t k,
                              const double *cbar, double *pbar, llm_error *err)
{
    size_t i, n = tape->nodes[c->arg[0]].value.size;
    (void)k, (void)err;
    for (i = 0; i < n; i++)
        pbar[i] += cbar[0];
    return LLM_OK;
}
static const llm_op add_op = {"add", add_vjp};
static const llm_op sub_op = {"sub", sub_vjp};
static const llm_op mul_op = {"mul", mul_vjp};
static const llm_op reshape_op = {"reshape", reshape_vjp};
static const llm_op transpose_op = {"transpose", transpose_vjp};
static const llm_op sum_op = {"sum", sum_vjp};
static const llm_op mean_op = {"mean", mean_vjp};
static const llm_op sum_all_op = {"sum_all", sum_all_vjp};
static const llm_op detach_op = {"detach", NULL};      /* no edge */
static llm_status check_input(const llm_tensor *t, const char *what, const char *stage,
                              llm_error *err)
{
    if (t->data == NULL || t->rank > LLM_MAX_RANK)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "the %s has no buffer or a rank above %d", what, LLM_MAX_RANK);
    if (!llm_tensor_is_contiguous(t))
        return llm_fail(err, LLM_ERR_CONTIGUITY, stage,
                        "the %s is a strided view; a leaf needs contiguous elements "
                        "(copy it first)", what);
    return LLM_OK;
}

/* The memory rules of a new leaf against itself and every earlier leaf. */
static llm_status check_leaf_memory(const llm_tape *tape, const llm_tensor *value,
                                    const llm_tensor *grad, const char *stage,
                                    llm_error *err)
{
    size_t k;
    if (grad != NULL && overlaps(grad, value))
        return llm_fail(err, LLM_ERR_TAPE, stage,
                        "the grad shares memory with the value");
    for (k = 0; k < tape->nleaves; k++) {      /* the leaves only, not every node */
        const size_t i = tape->leaves[k];
        const llm_node *leaf = &tape->nodes[i];
        if ((grad != NULL && (overlaps(grad, &leaf->value) ||
                              (leaf->grad != NULL && overlaps(grad, leaf->grad)))) ||
            (leaf->grad != NULL && overlaps(value, leaf->grad)))
            return llm_fail(err, LLM_ERR_TAPE, stage,
                            "the new leaf shares memory with leaf %zu (an accumulator "
                            "with a value or another accumulator); record a tensor "
                            "once and reuse its handle", i);
    }
    return LLM_OK;
}

/* Room for one more id in the list of leaves: it doubles when full. */
static llm_status leaf_room(llm_tape *tape, const char *stage, llm_error *err)
{
    size_t room;
    size_t *grown;
    if (tape->nleaves < tape->leaf_room)
        return LLM_OK;
    if (tape->leaf_room > SIZE_MAX / 2 / sizeof(size_t))
        return llm_fail(err, LLM_ERR_OVERFLOW, stage,
                        "a list of %zu leaves cannot double", tape->leaf_room);
    room = tape->leaf_room > 0 ? 2 * tape->leaf_room : 8;
    grown = llm_realloc(tape->leaves, room * sizeof *grown);
    if (grown == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, stage, "cannot list %zu leaves", room);
    tape->leaves = grown;
    tape->leaf_room = room;
    return LLM_OK;
}
llm_status llm_tape_leaf(llm_tape *tape, const llm_tensor *value, llm_tensor *grad,
                         llm_var *out, llm_error *err)
{
    const char *stage = "tape.leaf";
    llm_node node;
    llm_status st = check_operation(tape, 0, NULL, out, stage, err);
    if (st != LLM_OK)
        return st;
    if (value == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "no value");
    if ((st = check_input(value, "value", stage, err)) != LLM_OK)
        return llm_pass(err, st, "tape.leaf");
    if (grad != NULL) {
        if ((st = check_input(grad, "grad", stage, err)) != LLM_OK)
            return llm_pass(err, st, "tape.leaf");
        if (!same_shape(grad, value))
            return llm_fail(err, LLM_ERR_SHAPE, stage,
                            "the grad must have the value's shape: rank %zu and %zu "
                            "elements against rank %zu and %zu elements",
                            grad->rank, grad->size, value->rank, value->size);
    }
    if ((st = check_leaf_memory(tape, value, grad, stage, err)) != LLM_OK ||
        (st = check_finite(value, "the value", stage, err)) != LLM_OK ||
        (st = leaf_room(tape, stage, err)) != LLM_OK)
        return llm_pass(err, st, "tape.leaf");
    memset(&node, 0, sizeof node);
    node.op = &llm_op_leaf;
    node.value = *value;
    node.value.owns = 0;          /* borrowed: the caller frees it */
    node.grad = grad;
    if ((st = append(tape, node, out, stage, err)) != LLM_OK)
        return st;
    tape->leaves[tape->nleaves++] = out->id;
    return LLM_OK;
}

llm_status llm_tape_constant(llm_tape *tape, const llm_tensor *value, llm_var *out,
                             llm_error *err)
{
    const char *stage = "tape.constant";
    llm_node node;
    llm_status st = check_operation(tape, 0, NULL, out, stage, err);
    if (st != LLM_OK)
        return st;
    if (value == NULL || value->data == NULL || value->rank > LLM_MAX_RANK)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "a value with a buffer and a rank up to %d is required",
                        LLM_MAX_RANK);
    memset(&node, 0, sizeof node);
    node.op = &llm_op_const;
    if ((st = llm_tensor_copy(&node.value, value, err)) != LLM_OK)
        return llm_pass(err, st, "tape.constant");
    if ((st = check_finite(&node.value, "the value", stage, err)) != LLM_OK) {
        llm_tensor_free(&node.value);
        return llm_pass(err, st, "tape.constant");
    }
    return append(tape, node, out, stage, err);
}
static llm_status record_binary(llm_tape *tape, const llm_op *op, llm_binary_op how,
                                llm_var a, llm_var b, llm_var *out, const char *stage,
                                llm_error *err)
{
    const llm_var args[2] = {a, b};
    llm_node node;
    llm_status st = check_operation(tape, 2, args, out, stage, err);
    if (st != LLM_OK)
        return st;
    memset(&node, 0, sizeof node);
    node.op = op;
    node.nargs = 2;
    node.arg[0] = a.id;
    node.arg[1] = b.id;
    st = llm_tensor_binary(&node.value, how, &tape->nodes[a.id].value,
                           &tape->nodes[b.id].value, err);
    if (st != LLM_OK)
        return st;
    if ((st = check_finite(&node.value, "the result", stage, err)) != LLM_OK) {
        llm_tensor_free(&node.value);
        return st;
    }
    return append(tape, node, out, stage, err);
}

llm_status llm_tape_add(llm_tape *tape, llm_var a, llm_var b, llm_var *out,
                        llm_error *err)
{
    return llm_pass(err,
                    record_binary(tape, &add_op, LLM_ADD, a, b, out, "tape.add", err),
                    "tape.add");
}

llm_status llm_tape_sub(llm_tape *tape, llm_var a, llm_var b, llm_var *out,
                        llm_error *err)
{
    return llm_pass(err,
                    record_binary(tape, &sub_op, LLM_SUB, a, b, out, "tape.sub", err),
                    "tape.sub");
}

llm_status llm_tape_mul(llm_tape *tape, llm_var a, llm_var b, llm_var *out,
                        llm_error *err)
{
    return llm_pass(err,
                    record_binary(tape, &mul_op, LLM_MUL, a, b, out, "tape.mul", err),
                    "tape.mul");
}
llm_status llm_tape_reshape(llm_tape *tape, llm_var a, size_t rank, const size_t *shape,
                            llm_var *out, llm_error *err)
{
    const char *stage = "tape.reshape";
    const llm_tensor *src;
    llm_node node;
    llm_status st = check_operation(tape, 1, &a, out, stage, err);
    if (st != LLM_OK)
        return st;
    src = &tape->nodes[a.id].value;
    memset(&node, 0, sizeof node);
    node.op = &reshape_op;
    node.nargs = 1;
    node.arg[0] = a.id;
    st = llm_tensor_reshape(&node.value, src, rank, shape, err);
    if (st == LLM_ERR_CONTIGUITY) {      /* checked last: only the layout is wrong */
        llm_tensor dense;
        if ((st = llm_tensor_copy(&dense, src, err)) != LLM_OK)
            return llm_pass(err, st, "tape.reshape");
        st = llm_tensor_reshape(&node.value, &dense, rank, shape, err);
        if (st != LLM_OK) {
            llm_tensor_free(&dense);
            return llm_pass(err, st, "tape.reshape");
        }
        node.value.owns = 1;             /* the node takes the copy's buffer over */
    }
    if (st != LLM_OK)
        return llm_pass(err, st, "tape.reshape");
    return append(tape, node, out, stage, err);
}

llm_status llm_tape_transpose(llm_tape *tape, llm_var a, size_t axis_a, size_t axis_b,
                              llm_var *out, llm_error *err)
{
    const char *stage = "tape.transpose";
    transpose_attr *at;
    llm_node node;
    llm_status st = check_operation(tape, 1, &a, out, stage, err);
    if (st != LLM_OK)
        return st;
    memset(&node, 0, sizeof node);
    node.op = &transpose_op;
    node.nargs = 1;
    node.arg[0] = a.id;
    st = llm_tensor_transpose(&node.value, &tape->nodes[a.id].value, axis_a, axis_b,
                              err);
    if (st == LLM_OK)
        st = llm_tape_attr(tape, &node, sizeof *at, stage, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "tape.transpose");   /* a view: nothing to free */
    at = node.attr;
    at->axis_a = axis_a;
    at->axis_b = axis_b;
    return append(tape, node, out, stage, err);
}
static llm_status record_reduce(llm_tape *tape, const llm_op *op, llm_reduce_op how,
                                llm_var a, size_t axis, int keepdim, llm_var *out,
                                const char *stage, llm_error *err)
{
    reduce_attr *at;
    llm_node node;
    llm_status st = check_operation(tape, 1, &a, out, stage, err);
    if (st != LLM_OK)
        return st;
    memset(&node, 0, sizeof node);
    node.op = op;
    node.nargs = 1;
    node.arg[0] = a.id;
    st = llm_tensor_reduce(&node.value, how, &tape->nodes[a.id].value, axis,
                           keepdim != 0, err);
    if (st != LLM_OK)
        return st;
    if ((st = check_finite(&node.value, "the result", stage, err)) != LLM_OK ||
        (st = llm_tape_attr(tape, &node, sizeof *at, stage, err)) != LLM_OK) {
        release_node(&node);
        return st;
    }
    at = node.attr;
    at->axis = axis;
    at->keepdim = keepdim != 0;
    return append(tape, node, out, stage, err);
}

llm_status llm_tape_sum(llm_tape *tape, llm_var a, size_t axis, int keepdim,
                        llm_var *out, llm_error *err)
{
    return llm_pass(err, record_reduce(tape, &sum_op, LLM_SUM, a, axis, keepdim, out,
                                       "tape.sum", err), "tape.sum");
}

llm_status llm_tape_mean(llm_tape *tape, llm_var a, size_t axis, int keepdim,
                         llm_var *out, llm_error *err)
{
    return llm_pass(err, record_reduce(tape, &mean_op, LLM_MEAN, a, axis, keepdim, out,
                                       "tape.mean", err), "tape.mean");
}
llm_status llm_tape_sum_all(llm_tape *tape, llm_var a, llm_var *out, llm_error *err)
{
    const char *stage = "tape.sum_all";
    const llm_tensor *src;
    size_t idx[LLM_MAX_RANK] = {0}, i, k, o;
    double acc = +0.0;
    llm_node node;
    llm_status st = check_operation(tape, 1, &a, out, stage, err);
    if (st != LLM_OK)
        return st;
    src = &tape->nodes[a.id].value;
    for (i = 0; i < src->size; i++) {          /* row-major, through the strides */
        for (o = src->offset, k = 0; k < src->rank; k++)
            o += idx[k] * src->stride[k];
        acc += src->data[o];
        llm_index_next(src->rank, src->shape, idx);
    }
    if (!isfinite(acc))
        return llm_fail(err, LLM_ERR_NONFINITE, stage,
                        "the sum of %zu finite elements overflowed to %g", src->size,
                        acc);
    memset(&node, 0, sizeof node);
    node.op = &sum_all_op;
    node.nargs = 1;
    node.arg[0] = a.id;
    if ((st = llm_tensor_zeros(&node.value, 0, NULL, err)) != LLM_OK)
        return llm_pass(err, st, "tape.sum_all");
    node.value.data[0] = acc;
    return append(tape, node, out, stage, err);
}

llm_status llm_tape_detach(llm_tape *tape, llm_var a, llm_var *out, llm_error *err)
{
    const char *stage = "tape.detach";
    llm_node node;
    llm_status st = check_operation(tape, 1, &a, out, stage, err);
    if (st != LLM_OK)
        return st;
    memset(&node, 0, sizeof node);
    node.op = &detach_op;
    node.nargs = 0;                    /* no edge: the gradient stops here */
    node.arg[0] = a.id;
    node.value = tape->nodes[a.id].value;
    node.value.owns = 0;               /* a view of the operand's value */
    return append(tape, node, out, stage, err);
}
static llm_status check_seed(const llm_tape *tape, llm_var v, const llm_tensor *seed,
                             llm_error *err)
{
    const llm_tensor *out = &tape->nodes[v.id].value;
    size_t idx[LLM_MAX_RANK] = {0}, i, k, o;
    if (seed == NULL) {
        if (out->rank != 0)
            return llm_fail(err, LLM_ERR_RANK, "tape.backward",
                            "node %zu has rank %zu; only a scalar output may omit the "
                            "seed", v.id, out->rank);
        return LLM_OK;
    }
    if (seed->data == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tape.backward",
                        "the seed has no buffer");
    if (!same_shape(seed, out))
        return llm_fail(err, LLM_ERR_SHAPE, "tape.backward",
                        "the seed must have the output's shape: rank %zu and %zu "
                        "elements against rank %zu and %zu elements",
                        seed->rank, seed->size, out->rank, out->size);
    for (i = 0; i < seed->size; i++) {
        for (o = seed->offset, k = 0; k < seed->rank; k++)
            o += idx[k] * seed->stride[k];
        if (!isfinite(seed->data[o]))
            return llm_fail(err, LLM_ERR_NONFINITE, "tape.backward",
                            "element %zu of the seed is %g", i, seed->data[o]);
        llm_index_next(seed->rank, seed->shape, idx);
    }
    return LLM_OK;
}

/* A zeroed adjoint for node i (at least one double, so NULL means failure). */
static double *new_adjoint(const llm_tape *tape, size_t i)
{
    size_t n = tape->nodes[i].value.size;
    return llm_calloc(n > 0 ? n : 1, sizeof(double));
}

/* Gives back the adjoints of nodes 0 .. n-1 that bar holds. */
static void free_adjoints(const llm_tape *tape, double **bar, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        llm_alloc_give(bar[i], buffer_bytes(tape->nodes[i].value.size));
}
/* 1 when x[0 .. n-1] are all finite: x * 0 is a zero for a finite x and NaN
   for an infinity or a NaN, and a NaN survives every addition. The two
   sums side by side let the compiler use one two-wide instruction. */
static int all_finite(const double *x, size_t n)
{
    double z0 = 0.0, z1 = 0.0;
    size_t j;
    for (j = 0; j + 2 <= n; j += 2) {
        z0 += x[j] * 0.0;
        z1 += x[j + 1] * 0.0;
    }
    if (j < n)
        z0 += x[j] * 0.0;
    return z0 + z1 == 0.0;
}
static llm_status propagate(const llm_tape *tape, size_t out, const llm_tensor *seed,
                            double **bar, llm_error *err)
{
    size_t i, k, j, idx[LLM_MAX_RANK] = {0};
    llm_status st;
    if ((bar[out] = new_adjoint(tape, out)) == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, "tape.backward",
                        "cannot allocate the adjoint of node %zu", out);
    for (j = 0; j < tape->nodes[out].value.size; j++) {
        size_t o = seed == NULL ? 0 : seed->offset;
        for (k = 0; seed != NULL && k < seed->rank; k++)
            o += idx[k] * seed->stride[k];
        bar[out][j] = seed == NULL ? 1.0 : seed->data[o];
        if (seed != NULL)
            llm_index_next(seed->rank, seed->shape, idx);
    }
    for (i = out + 1; i-- > 0;) {
        const llm_node *c = &tape->nodes[i];
        if (bar[i] == NULL)
            continue;                         /* no path from node i to the output */
        for (j = 0; !all_finite(bar[i], c->value.size) && j < c->value.size; j++)
            if (!isfinite(bar[i][j]))         /* the first culprit, named */
                return llm_fail(err, LLM_ERR_NONFINITE, "tape.backward",
                                "element %zu of the adjoint of node %zu (%s) is %g; "
                                "no gradient was changed", j, i, llm_op_name(c->op),
                                bar[i][j]);
        for (k = 0; k < c->nargs; k++) {      /* every edge, repeats included */
            size_t p = c->arg[k];
            if (!tape->nodes[p].needs_grad)
                continue;                     /* no gradient is wanted behind p */
            if (bar[p] == NULL && (bar[p] = new_adjoint(tape, p)) == NULL)
                return llm_fail(err, LLM_ERR_ALLOC, "tape.backward",
                                "cannot allocate the adjoint of node %zu", p);
            if (c->op->vjp == NULL)           /* a bug of the operation, not the data */
                return llm_fail(err, LLM_ERR_TAPE, "tape.backward",
                                "operation %s has an edge but no "
                                "vector-Jacobian product", llm_op_name(c->op));
            if ((st = c->op->vjp(tape, c, k, bar[i], bar[p], err)) != LLM_OK)
                return st;
        }
    }
    return LLM_OK;
}
static llm_status check_commit(const llm_tape *tape, size_t out, double **bar,
                               llm_error *err)
{
    size_t i, j;
    for (i = 0; i <= out; i++) {
        const llm_node *leaf = &tape->nodes[i];
        if (leaf->op != &llm_op_leaf || leaf->grad == NULL || bar[i] == NULL)
            continue;
        for (j = 0; j < leaf->value.size; j++) {
            const double g = leaf->grad->data[leaf->grad->offset + j];
            if (!isfinite(g + bar[i][j]))
                return llm_fail(err, LLM_ERR_NONFINITE, "tape.backward",
                                "leaf %zu: element %zu of its grad, %g, plus the "
                                "adjoint %g is not finite; no gradient was changed",
                                i, j, g, bar[i][j]);
        }
    }
    return LLM_OK;
}

static void commit(llm_tape *tape, size_t out, double **bar)
{
    size_t i, j;
    for (i = 0; i <= out; i++) {
        llm_node *leaf = &tape->nodes[i];
        double *g;
        if (leaf->op != &llm_op_leaf || leaf->grad == NULL || bar[i] == NULL)
            continue;
        g = leaf->grad->data + leaf->grad->offset;
        for (j = 0; j < leaf->value.size; j++)
            g[j] += bar[i][j];
    }
}
llm_status llm_tape_backward(llm_tape *tape, llm_var v, const llm_tensor *seed,
                             int keep_graph, llm_error *err)
{
    double **bar;
    size_t i;
    llm_status st = check_tape(tape, "tape.backward", err);
    if (st != LLM_OK
        || (st = check_var(tape, v, "the output", "tape.backward", err)) != LLM_OK
        || (st = check_seed(tape, v, seed, err)) != LLM_OK)
        return llm_pass(err, st, "tape.backward");
    bar = llm_calloc(v.id + 1, sizeof *bar);
    if (bar == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, "tape.backward",
                        "cannot allocate %zu adjoint pointers", v.id + 1);
    st = propagate(tape, v.id, seed, bar, err);
    if (st == LLM_OK)
        st = check_commit(tape, v.id, bar, err);
    if (st != LLM_OK) {                        /* nothing has changed yet */
        free_adjoints(tape, bar, v.id + 1);
        free(bar);
        return llm_pass(err, st, "tape.backward");
    }
    commit(tape, v.id, bar);
    for (i = 0; i < tape->count; i++) {        /* the last kept pass's adjoints go */
        llm_alloc_give(tape->nodes[i].adjoint, buffer_bytes(tape->nodes[i].value.size));
        tape->nodes[i].adjoint = keep_graph && i <= v.id ? bar[i] : NULL;
    }
    if (!keep_graph) {
        free_adjoints(tape, bar, v.id + 1);
        for (i = 0; i < tape->count; i++)
            release_node(&tape->nodes[i]);
        tape->released = 1;
    }
    free(bar);
    return LLM_OK;
}
static llm_status check_read(const llm_tape *tape, llm_var v, const void *result,
                             const char *stage, llm_error *err)
{
    llm_status st = check_tape(tape, stage, err);
    if (st != LLM_OK)
        return st;
    if (result == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "no place for the result");
    return check_var(tape, v, "the node", stage, err);
}

llm_status llm_tape_value(const llm_tape *tape, llm_var v, const llm_tensor **value,
                          llm_error *err)
{
    llm_status st = check_read(tape, v, value, "tape.value", err);
    if (st == LLM_OK)
        *value = &tape->nodes[v.id].value;
    return llm_pass(err, st, "tape.value");
}

llm_status llm_tape_adjoint(const llm_tape *tape, llm_var v, const double **adjoint,
                            llm_error *err)
{
    llm_status st = check_read(tape, v, adjoint, "tape.adjoint", err);
    if (st == LLM_OK)
        *adjoint = tape->nodes[v.id].adjoint;
    return llm_pass(err, st, "tape.adjoint");
}

llm_status llm_tape_node(const llm_tape *tape, size_t id, llm_node_info *info,
                         llm_error *err)
{
    const llm_node *n;
    llm_status st = check_tape(tape, "tape.node", err);
    if (st != LLM_OK)
        return llm_pass(err, st, "tape.node");
    if (info == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tape.node", "no place for the result");
    if (id >= tape->count)
        return llm_fail(err, LLM_ERR_TAPE, "tape.node",
                        "node %zu is not in a recording of %zu nodes", id, tape->count);
    n = &tape->nodes[id];
    info->op = n->op;
    info->nargs = n->nargs;
    info->arg[0] = n->arg[0];
    info->arg[1] = n->arg[1];
    info->value = &n->value;
    info->grad = n->grad;
    info->adjoint = n->adjoint;
    info->needs_grad = n->needs_grad;
    return LLM_OK;
}

size_t llm_tape_node_size(void)
{
    return sizeof(llm_node);
}
