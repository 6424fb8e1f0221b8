/* tape_ops.c -- the operations a decoder needs on the tensor tape: matrix
   products, lookups, nonlinearities, log-softmax, the fused loss. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/softmax.h"
#include "llm/tape.h"
#include "llm/tensor.h"
#include "tape_op.h"

typedef struct matmul_attr {
    int trans_a, trans_b;     /* C = op(A) op(B): 1 where op transposes */
} matmul_attr;

typedef struct axis_attr {
    size_t axis;              /* log-softmax: the axis it normalises */
} axis_attr;

/* the IDs of a lookup or the targets of the loss, copied onto the tape */
typedef struct id_list {
    size_t n;
    size_t id[];              /* n entries */
} id_list;

/* Gives node an id_list holding a copy of ids[0 .. n-1]; what names them
   in a refusal ("IDs", "targets"). */
static llm_status keep_ids(llm_tape *tape, llm_node *node, const size_t *ids, size_t n,
                           const char *what, const char *stage, llm_error *err)
{
    id_list *list;
    llm_status st;
    if (n > (SIZE_MAX - sizeof *list) / sizeof list->id[0])
        return llm_fail(err, LLM_ERR_OVERFLOW, stage, "%zu %s need more bytes than "
                        "size_t can count", n, what);
    st = llm_tape_attr(tape, node, sizeof *list + n * sizeof list->id[0], stage, err);
    if (st != LLM_OK)
        return st;
    list = node->attr;
    list->n = n;
    if (n > 0)
        memcpy(list->id, ids, n * sizeof ids[0]);
    return LLM_OK;
}
/* *values = t's elements in row-major order: t's own buffer when t is
   contiguous, otherwise a copy made in *copy (release it with
   llm_tensor_give, which keeps the buffer for the next step's copy; it is
   emptied first, so releasing is always safe). */
static llm_status dense(const llm_tensor *t, llm_tensor *copy, const double **values,
                        const char *stage, llm_error *err)
{
    llm_error why;
    memset(copy, 0, sizeof *copy);
    if (llm_tensor_is_contiguous(t)) {
        *values = t->data + t->offset;
        return LLM_OK;
    }
    if (llm_tensor_copy(copy, t, &why) != LLM_OK)
        return llm_fail_from(err, &why, stage, "cannot copy a strided operand: %s",
                             why.message);
    *values = copy->data;
    return LLM_OK;
}
/* "[i0, i1, ...]": the coordinates of the row-major element flat of shape */
static char *coordinates(char *buf, size_t size, size_t flat, size_t rank,
                         const size_t *shape)
{
    size_t idx[LLM_MAX_RANK], k;
    for (k = rank; k-- > 0;) {
        idx[k] = shape[k] > 0 ? flat % shape[k] : 0;
        flat = shape[k] > 0 ? flat / shape[k] : 0;
    }
    return llm_fmt_sizes(buf, size, idx, rank);
}
/* Appends node (its value contiguous, made by the operation) unless an
   element is NaN or infinite. On failure node's value and parameters are
   freed. */
static llm_status record_node(llm_tape *tape, llm_node node, llm_var *out,
                              const char *stage, llm_error *err)
{
    const double *v = node.value.data + node.value.offset;
    size_t j;
    char where[128];
    for (j = 0; j < node.value.size; j++)
        if (!isfinite(v[j])) {
            llm_status st = llm_fail(err, LLM_ERR_NONFINITE, stage,
                                     "element %s of the result is %g; values on the "
                                     "tape are finite",
                                     coordinates(where, sizeof where, j,
                                                 node.value.rank, node.value.shape),
                                     v[j]);
            llm_tape_discard(tape, &node);
            return st;
        }
    return llm_tape_append(tape, node, out, stage, err);
}
/* adj (row-major, t's shape) += g, where g (contiguous) has an output's batch
   axes followed by t's last two extents: each of g's matrices is added into
   the matrix of t it was computed from, in row-major batch order. */
static void add_back(double *adj, const llm_tensor *t, const llm_tensor *g)
{
    size_t stride[LLM_MAX_RANK], step[LLM_MAX_RANK], idx[LLM_MAX_RANK] = {0};
    size_t size, r = g->rank, mat, k, j, done = 0;
    const double *src = g->data + g->offset;
    if (g->size == 0)
        return;
    llm_row_major(t->rank, t->shape, stride, &size, NULL);   /* t exists */
    mat = t->shape[t->rank - 2] * t->shape[t->rank - 1];
    for (k = 0; k + 2 < r; k++) {          /* step 0 where t was broadcast */
        const size_t axis = k + t->rank - r;
        step[k] = k + t->rank < r || t->shape[axis] == 1 ? 0 : stride[axis];
    }
    do {
        double *dst = adj;
        for (k = 0; k + 2 < r; k++)
            dst += idx[k] * step[k];
        for (j = 0; j < mat; j++)
            dst[j] += src[done * mat + j];
        done++;
    } while (llm_index_next(r - 2, g->shape, idx));
}
/* pbar += the gradient of operand k (0: A, 1: B) of C = op(A) op(B) */
static llm_status matmul_vjp(const llm_tape *tape, const llm_node *c, size_t k,
                             const double *cbar, double *pbar, llm_error *err)
{
    const llm_tensor *a = &tape->nodes[c->arg[0]].value;
    const llm_tensor *b = &tape->nodes[c->arg[1]].value;
    const matmul_attr *at = c->attr;
    const int ta = at->trans_a, tb = at->trans_b;
    llm_tensor dc = c->value, g;        /* C's shape and row-major strides ... */
    llm_error why;
    llm_status st;
    dc.data = (double *)cbar;           /* ... over the adjoint, which is only read */
    dc.offset = 0;
    dc.owns = 0;
    if (k == 0)                         /* dA = dC op(B)^T, or its transpose */
        st = ta ? llm_matmul(&g, b, &dc, tb, 1, &why)
                : llm_matmul(&g, &dc, b, 0, !tb, &why);
    else                                /* dB = op(A)^T dC, or its transpose */
        st = tb ? llm_matmul(&g, &dc, a, 1, ta, &why)
                : llm_matmul(&g, a, &dc, !ta, 0, &why);
    if (st != LLM_OK)
        return llm_fail_from(err, &why, "tape.backward",
                             "the gradient of operand %zu of matmul: %s", k,
                             why.message);
    add_back(pbar, k == 0 ? a : b, &g);
    llm_tensor_give(&g);                /* the next step's gradient reuses it */
    return LLM_OK;
}

static const llm_op matmul_op = {"matmul", matmul_vjp};
llm_status llm_tape_matmul(llm_tape *tape, llm_var a, llm_var b,
                           int trans_a, int trans_b, llm_var *out, llm_error *err)
{
    const char *stage = "tape.matmul";
    const llm_var args[2] = {a, b};
    matmul_attr *at;
    llm_node node;
    llm_error why;
    llm_status st = llm_tape_check(tape, 2, args, out, stage, err);
    if (st != LLM_OK)
        return st;
    memset(&node, 0, sizeof node);
    node.op = &matmul_op;
    node.nargs = 2;
    node.arg[0] = a.id;
    node.arg[1] = b.id;
    st = llm_matmul(&node.value, &tape->nodes[a.id].value, &tape->nodes[b.id].value,
                    trans_a != 0, trans_b != 0, &why);
    if (st != LLM_OK)
        return llm_fail_from(err, &why, stage, "%s", why.message);
    if ((st = llm_tape_attr(tape, &node, sizeof *at, stage, err)) != LLM_OK) {
        llm_tape_discard(tape, &node);
        return llm_pass(err, st, "tape.matmul");
    }
    at = node.attr;
    at->trans_a = trans_a != 0;
    at->trans_b = trans_b != 0;
    return record_node(tape, node, out, stage, err);
}
/* Every ids[p] (p < n, positions of shape [rank]) must name a row of a table
   of v rows. The first that does not is refused by its coordinates. */
static llm_status check_ids(const size_t *ids, size_t n, size_t rank,
                            const size_t *shape, size_t v, const char *stage,
                            llm_error *err)
{
    size_t p;
    char where[128];
    for (p = 0; p < n; p++)
        if (ids[p] >= v)
            return llm_fail(err, LLM_ERR_INDEX, stage,
                            "position %s holds ID %zu, the table has %zu rows",
                            coordinates(where, sizeof where, p, rank, shape),
                            ids[p], v);
    return LLM_OK;
}
/* out[p] = row ids[p] of the table, for n positions of d numbers each */
static void gather_rows(const double *table, size_t d, const size_t *ids, size_t n,
                        double *out)
{
    size_t p;
    if (d == 0)
        return;
    for (p = 0; p < n; p++)
        memcpy(out + p * d, table + ids[p] * d, d * sizeof *out);
}
/* adj_table[ids[p]] += dy[p], row by row, positions in ascending order */
static void scatter_add(const size_t *ids, size_t n, size_t d, const double *dy,
                        double *adj_table)
{
    size_t p, j;
    for (p = 0; p < n; p++) {
        double *row = adj_table + ids[p] * d;
        for (j = 0; j < d; j++)
            row[j] += dy[p * d + j];
    }
}

/* rows of size / V numbers each; V = 0: there are no IDs */
static llm_status gather_vjp(const llm_tape *tape, const llm_node *c, size_t k,
                             const double *cbar, double *pbar, llm_error *err)
{
    const llm_tensor *a = &tape->nodes[c->arg[0]].value;
    const id_list *ids = c->attr;
    (void)k, (void)err;
    scatter_add(ids->id, ids->n, a->shape[0] > 0 ? a->size / a->shape[0] : 0, cbar,
                pbar);
    return LLM_OK;
}

static const llm_op gather_op = {"gather", gather_vjp};
llm_status llm_tape_gather(llm_tape *tape, llm_var table, const size_t *ids,
                           size_t rank, const size_t *shape, llm_var *out,
                           llm_error *err)
{
    const char *stage = "tape.gather";
    const llm_tensor *t;
    const double *rows = NULL;
    llm_tensor copy;
    llm_node node;
    llm_error why;
    size_t oshape[LLM_MAX_RANK], stride[LLM_MAX_RANK], n, size, k;
    llm_status st = llm_tape_check(tape, 1, &table, out, stage, err);
    if (st != LLM_OK)
        return st;
    t = &tape->nodes[table.id].value;
    if (rank > 0 && shape == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "IDs of rank %zu need a shape",
                        rank);
    if (t->rank == 0)
        return llm_fail(err, LLM_ERR_RANK, stage,
                        "a scalar table has no rows to look up");
    if (rank > LLM_MAX_RANK - (t->rank - 1))    /* rank + t->rank - 1, unwrapped */
        return llm_fail(err, LLM_ERR_RANK, stage,
                        "IDs of rank %zu from a table of rank %zu make more than "
                        "%d axes", rank, t->rank, LLM_MAX_RANK);
    for (k = 0; k < rank; k++)
        oshape[k] = shape[k];
    for (k = 1; k < t->rank; k++)
        oshape[rank + k - 1] = t->shape[k];
    st = llm_row_major(rank + t->rank - 1, oshape, stride, &size, &why);
    if (st == LLM_OK)                                   /* n: the positions */
        st = llm_row_major(rank, shape, stride, &n, &why);
    if (st != LLM_OK)
        return llm_fail_from(err, &why, stage, "%s", why.message);
    if (n > 0 && ids == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "no IDs for %zu positions", n);
    if ((st = check_ids(ids, n, rank, shape, t->shape[0], stage, err)) != LLM_OK)
        return llm_pass(err, st, "tape.gather");
    memset(&node, 0, sizeof node);
    node.op = &gather_op;
    node.nargs = 1;
    node.arg[0] = table.id;
    st = keep_ids(tape, &node, ids, n, "IDs", stage, err);
    if (st == LLM_OK)
        st = llm_tensor_zeros(&node.value, rank + t->rank - 1, oshape, err);
    if (st == LLM_OK)
        st = dense(t, &copy, &rows, stage, err);
    if (st != LLM_OK) {
        llm_tape_discard(tape, &node);
        return st;
    }
    gather_rows(rows, t->shape[0] > 0 ? t->size / t->shape[0] : 0, ids, n, node.value.data);
    llm_tensor_give(&copy);
    return llm_tape_append(tape, node, out, stage, err);
}
/* 1 / (1 + e^-x), never exponentiating a positive number */
static double sigmoid(double x)
{
    double e;
    if (x >= 0.0)
        return 1.0 / (1.0 + exp(-x));    /* e^-x <= 1 */
    e = exp(x);                          /* x < 0: e^x < 1 */
    return e / (1.0 + e);
}
static double reciprocal(double x) { return 1.0 / x; }
static double silu(double x)       { return x * sigmoid(x); }

/* dy * f'(x), where y = f(x) is the value the forward pass recorded */
static double exp_grad(double x, double y, double dy)
{
    (void)x;
    return dy * y;                                     /* e^x */
}
static double log_grad(double x, double y, double dy)
{
    (void)y;
    return dy / x;                                     /* 1/x */
}
static double sqrt_grad(double x, double y, double dy)
{
    (void)x;
    return dy / (2.0 * y);                             /* 1/(2 sqrt x) */
}
static double reciprocal_grad(double x, double y, double dy)
{
    (void)x;
    return -dy * (y * y);                              /* -1/x^2 */
}
static double sigmoid_grad(double x, double y, double dy)
{
    return dy * (y * sigmoid(-x));                     /* s(x) s(-x) */
}
static double silu_grad(double x, double y, double dy)
{
    const double e = exp(-fabs(x));            /* s(x), s(-x) from one e^-|x| */
    const double big = 1.0 / (1.0 + e), small = e / (1.0 + e);
    const double s = x >= 0.0 ? big : small, s_neg = x >= 0.0 ? small : big;
    (void)y;
    return dy * (s * (1.0 + x * s_neg));
}

/* the domains: log needs x > 0, sqrt x >= 0, reciprocal x != 0 */
static int positive(double x)     { return x > 0.0; }
static int non_negative(double x) { return x >= 0.0; }
static int nonzero(double x)      { return x != 0.0; }
typedef struct unary_op {
    llm_op op;                                    /* first: a node points here */
    double (*value)(double x);
    double (*grad)(double x, double y, double dy);
    int (*inside)(double x);                      /* the domain; NULL: every x */
    const char *need;                             /* why an input was refused */
} unary_op;
/* LLM_OK when x is inside f's domain; otherwise the refusal, naming
   element `flat` of a tensor of the given shape. */
static llm_status check_domain(const unary_op *f, double x, size_t flat, size_t rank,
                               const size_t *shape, const char *stage, llm_error *err)
{
    char where[128];
    if (f->inside == NULL || f->inside(x))
        return LLM_OK;
    return llm_fail(err, LLM_ERR_NONFINITE, stage, "element %s is %g: %s",
                    coordinates(where, sizeof where, flat, rank, shape), x, f->need);
}
/* pbar += f'(x) cbar, elementwise, for the function f the node records */
static llm_status unary_vjp(const llm_tape *tape, const llm_node *c, size_t k,
                            const double *cbar, double *pbar, llm_error *err)
{
    const unary_op *f = (const unary_op *)c->op;  /* c->op is f's first member */
    const double *y = c->value.data + c->value.offset, *x = NULL;
    llm_tensor copy;
    size_t i;
    llm_status st = dense(&tape->nodes[c->arg[0]].value, &copy, &x, "tape.backward",
                          err);
    (void)k;
    if (st != LLM_OK)
        return st;
    for (i = 0; i < c->value.size; i++)
        pbar[i] += f->grad(x[i], y[i], cbar[i]);
    llm_tensor_give(&copy);
    return LLM_OK;
}

static const unary_op exp_op = {{"exp", unary_vjp}, exp, exp_grad, NULL, NULL};
static const unary_op log_op = {{"log", unary_vjp}, log, log_grad, positive,
                                "log needs a positive input"};
static const unary_op sqrt_op = {{"sqrt", unary_vjp}, sqrt, sqrt_grad, non_negative,
                                 "sqrt needs an input >= 0"};
static const unary_op reciprocal_op = {{"reciprocal", unary_vjp}, reciprocal,
                                       reciprocal_grad, nonzero,
                                       "reciprocal needs a nonzero input"};
static const unary_op sigmoid_op = {{"sigmoid", unary_vjp}, sigmoid, sigmoid_grad, NULL,
                                    NULL};
static const unary_op silu_op = {{"silu", unary_vjp}, silu, silu_grad, NULL, NULL};
static llm_status record_unary(llm_tape *tape, const unary_op *f, llm_var a,
                               llm_var *out, const char *stage, llm_error *err)
{
    const llm_tensor *x;
    const double *xv = NULL;
    llm_tensor copy;
    llm_node node;
    size_t i;
    llm_status st = llm_tape_check(tape, 1, &a, out, stage, err);
    if (st != LLM_OK)
        return st;
    x = &tape->nodes[a.id].value;
    if ((st = dense(x, &copy, &xv, stage, err)) != LLM_OK)
        return st;
    for (i = 0; i < x->size && st == LLM_OK; i++)
        st = check_domain(f, xv[i], i, x->rank, x->shape, stage, err);
    memset(&node, 0, sizeof node);
    if (st == LLM_OK)
        st = llm_tensor_zeros(&node.value, x->rank, x->shape, err);
    if (st != LLM_OK) {
        llm_tensor_give(&copy);
        return st;
    }
    for (i = 0; i < x->size; i++)
        node.value.data[i] = f->value(xv[i]);
    llm_tensor_give(&copy);
    node.op = &f->op;
    node.nargs = 1;
    node.arg[0] = a.id;
    return record_node(tape, node, out, stage, err);
}

llm_status llm_tape_exp(llm_tape *tape, llm_var a, llm_var *out, llm_error *err)
{
    return llm_pass(err, record_unary(tape, &exp_op, a, out, "tape.exp", err),
                    "tape.exp");
}

llm_status llm_tape_log(llm_tape *tape, llm_var a, llm_var *out, llm_error *err)
{
    return llm_pass(err, record_unary(tape, &log_op, a, out, "tape.log", err),
                    "tape.log");
}

llm_status llm_tape_sqrt(llm_tape *tape, llm_var a, llm_var *out, llm_error *err)
{
    return llm_pass(err, record_unary(tape, &sqrt_op, a, out, "tape.sqrt", err),
                    "tape.sqrt");
}

llm_status llm_tape_reciprocal(llm_tape *tape, llm_var a, llm_var *out, llm_error *err)
{
    return llm_pass(err,
                    record_unary(tape, &reciprocal_op, a, out, "tape.reciprocal", err),
                    "tape.reciprocal");
}

llm_status llm_tape_sigmoid(llm_tape *tape, llm_var a, llm_var *out, llm_error *err)
{
    return llm_pass(err, record_unary(tape, &sigmoid_op, a, out, "tape.sigmoid", err),
                    "tape.sigmoid");
}

llm_status llm_tape_silu(llm_tape *tape, llm_var a, llm_var *out, llm_error *err)
{
    return llm_pass(err, record_unary(tape, &silu_op, a, out, "tape.silu", err),
                    "tape.silu");
}
/* adj += dy - exp(y) * sum(dy) along axis, for y = log_softmax(x) (row-major,
   contiguous) and its adjoint dy; each slice's sum in ascending order. */
static void log_softmax_grad(const llm_tensor *y, size_t axis, const double *dy,
                             double *adj)
{
    const double *yv = y->data + y->offset;
    size_t outer = 1, inner = 1, n = y->shape[axis], o, q, i, k;
    for (k = 0; k < axis; k++)
        outer *= y->shape[k];
    for (k = axis + 1; k < y->rank; k++)
        inner *= y->shape[k];
    for (o = 0; o < outer; o++)
        for (q = 0; q < inner; q++) {            /* one slice: base + i * inner */
            const size_t base = o * n * inner + q;
            double s = 0.0;
            for (i = 0; i < n; i++)
                s += dy[base + i * inner];
            for (i = 0; i < n; i++)
                adj[base + i * inner] += dy[base + i * inner]
                                         - exp(yv[base + i * inner]) * s;
        }
}

static llm_status log_softmax_vjp(const llm_tape *tape, const llm_node *c, size_t k,
                                  const double *cbar, double *pbar, llm_error *err)
{
    const axis_attr *at = c->attr;
    (void)tape, (void)k, (void)err;
    log_softmax_grad(&c->value, at->axis, cbar, pbar);
    return LLM_OK;
}

static const llm_op log_softmax_op = {"log_softmax", log_softmax_vjp};
llm_status llm_tape_log_softmax(llm_tape *tape, llm_var a, size_t axis, llm_var *out,
                                llm_error *err)
{
    const char *stage = "tape.log_softmax";
    llm_node node;
    llm_error why;
    llm_status st = llm_tape_check(tape, 1, &a, out, stage, err);
    if (st != LLM_OK)
        return st;
    memset(&node, 0, sizeof node);
    node.op = &log_softmax_op;
    node.nargs = 1;
    node.arg[0] = a.id;
    st = llm_log_softmax(&node.value, &tape->nodes[a.id].value, axis, &why);
    if (st != LLM_OK)
        return llm_fail_from(err, &why, stage, "%s", why.message);
    if ((st = llm_tape_attr(tape, &node, sizeof(axis_attr), stage, err)) != LLM_OK) {
        llm_tape_discard(tape, &node);
        return llm_pass(err, st, "tape.log_softmax");
    }
    ((axis_attr *)node.attr)->axis = axis;
    return record_node(tape, node, out, stage, err);
}
/* adj += (softmax(row) - onehot(target)) * seed / rows for each row of v
   logits (row-major), rows in ascending order */
static void nll_grad(const double *logits, size_t rows, size_t v, const size_t *targets,
                     double seed, double *adj)
{
    const double scale = seed / (double)rows;
    size_t r, j;
    for (r = 0; r < rows; r++) {
        const double *l = logits + r * v;
        double *g = adj + r * v;
        double m = l[0], s = 0.0;
        for (j = 1; j < v; j++)
            if (l[j] > m)
                m = l[j];
        for (j = 0; j < v; j++)
            s += exp(l[j] - m);
        for (j = 0; j < v; j++)
            g[j] += (exp(l[j] - m) / s - (j == targets[r] ? 1.0 : 0.0)) * scale;
    }
}

/* n rows of V logits, read densely; a scalar adjoint */
static llm_status nll_mean_vjp(const llm_tape *tape, const llm_node *c, size_t k,
                               const double *cbar, double *pbar, llm_error *err)
{
    const llm_tensor *a = &tape->nodes[c->arg[0]].value;
    const id_list *targets = c->attr;
    const double *x = NULL;
    llm_tensor copy;
    llm_status st = dense(a, &copy, &x, "tape.backward", err);
    (void)k;
    if (st != LLM_OK)
        return st;
    nll_grad(x, targets->n, a->shape[a->rank - 1], targets->id, cbar[0], pbar);
    llm_tensor_give(&copy);
    return LLM_OK;
}

static const llm_op nll_mean_op = {"nll_mean", nll_mean_vjp};
llm_status llm_tape_nll_mean(llm_tape *tape, llm_var logits, const size_t *targets,
                             size_t ntargets, llm_var *out, llm_error *err)
{
    const char *stage = "tape.nll_mean";
    llm_node node;
    llm_error why;
    double loss = 0.0;
    llm_status st = llm_tape_check(tape, 1, &logits, out, stage, err);
    if (st != LLM_OK)
        return st;
    st = llm_nll_mean(&loss, &tape->nodes[logits.id].value, targets, ntargets, &why);
    if (st != LLM_OK)
        return llm_fail_from(err, &why, stage, "%s", why.message);
    memset(&node, 0, sizeof node);
    node.op = &nll_mean_op;
    node.nargs = 1;
    node.arg[0] = logits.id;
    st = keep_ids(tape, &node, targets, ntargets, "targets", stage, err);
    if (st == LLM_OK)
        st = llm_tensor_zeros(&node.value, 0, NULL, err);
    if (st != LLM_OK) {
        llm_tape_discard(tape, &node);
        return llm_pass(err, st, "tape.nll_mean");
    }
    node.value.data[0] = loss;
    return record_node(tape, node, out, stage, err);
}
