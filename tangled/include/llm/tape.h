/* llm/tape.h -- the tensor tape module (llm_tape): nodes that record
   tensor operations, and the backward pass that runs their vector-Jacobian
   products. Built by chapter 15 (the tape and its structural operations);
   chapters 16 and 27-29 add operations, each in its own file, through the
   private header src/tape_op.h. */
#ifndef LLM_TAPE_H
#define LLM_TAPE_H

#include <stddef.h>

#include "llm/error.h"

/* The tensor tape records chapter 8's tensors: values, seeds and grads. */
#include "llm/tensor.h"

/* A handle to a node of one recording: the node's id and the epoch of the
   recording it was made in. A reset starts a new epoch, so older handles
   are refused; so are handles made on another tape. */
typedef struct llm_var {
    size_t id;
    size_t epoch;
} llm_var;
typedef struct llm_tape llm_tape;
typedef struct llm_node llm_node;

/* An operation of the tensor tape: its name and its vector-Jacobian
   product, defined together by the file that records the operation. vjp
   adds J^T cbar along operand edge k of node c into pbar (cbar: c's
   adjoint, pbar: operand k's, both row-major); it fails only for want of
   scratch memory, with LLM_ERR_ALLOC under the stage "tape.backward".
   The tape's inputs have no edges and no vjp. */
typedef struct llm_op {
    const char *name;
    llm_status (*vjp)(const llm_tape *tape, const llm_node *c, size_t k,
                      const double *cbar, double *pbar, llm_error *err);
} llm_op;

/* The tape's two inputs, which code outside the tape may look for. */
extern const llm_op llm_op_leaf;    /* borrowed from the caller; may have a grad */
extern const llm_op llm_op_const;   /* copied onto the tape; never has a grad */
struct llm_tape {
    llm_node *nodes;   /* nodes[0 .. count-1], in the order they were recorded */
    size_t count;      /* nodes in the current recording */
    size_t capacity;   /* room in nodes before the array must grow */
    size_t epoch;      /* the number of the current recording; 0: not initialised */
    int released;      /* 1 after a backward pass that did not keep the graph */
    size_t *leaves;    /* leaves[0 .. nleaves-1]: the ids of the leaves, ascending */
    size_t nleaves;    /* the leaves in the current recording */
    size_t leaf_room;  /* room in leaves before the array must grow */
};

/* The short name of an operation: "leaf", "add", ..., "unknown" for NULL. */
const char *llm_op_name(const llm_op *op);
/* An empty tape with room for capacity nodes (at least 1), recording a
   new epoch.
   Errors: LLM_ERR_ARGUMENT (tape is NULL), LLM_ERR_OVERFLOW (the bytes of
   capacity nodes do not fit in size_t), LLM_ERR_ALLOC. On failure *tape is
   not touched. */
llm_status llm_tape_init(llm_tape *tape, size_t capacity, llm_error *err);

/* Releases every value, adjoint and parameter block the tape owns (values
   and adjoints go back to the allocator, llm_alloc_give) and empties the
   recording; the node array is kept for reuse. A new epoch begins, so every
   older llm_var becomes stale; a released recording becomes usable again.
   Leaves' values and grads belong to the caller and are not touched.
   Errors: LLM_ERR_ARGUMENT (tape is NULL), LLM_ERR_TAPE (not initialised). */
llm_status llm_tape_reset(llm_tape *tape, llm_error *err);

/* Frees everything the tape owns, the node array included, and zeroes the
   tape (llm_tape_init makes it usable again); then frees every block kept
   by the allocator (llm_alloc_trim). Safe on NULL. */
void llm_tape_free(llm_tape *tape);
/* The tape's node count, to rewind to after a failure midway (0 for a
   NULL tape). */
size_t llm_tape_mark(const llm_tape *tape);

/* Frees every node recorded since mark (the values they own, their
   parameters and adjoints) and returns the count to mark; the epoch and the
   nodes below mark, adjoints included, are untouched, so handles below
   mark stay valid and the next node recorded gets id mark. Never rewind
   past a node whose handle was handed out: after new recordings that
   handle would name another node.
   Errors: LLM_ERR_ARGUMENT (tape is NULL), LLM_ERR_TAPE (not initialised,
   released, or mark beyond the count). On failure the tape is unchanged. */
llm_status llm_tape_rewind(llm_tape *tape, size_t mark, llm_error *err);
/* Records value as a leaf and writes its handle to *out. The value is
   borrowed: keep it alive and unchanged until backward or reset. grad is
   the caller's accumulator (same shape, contiguous, +0.0 to start) into
   which backward adds, or NULL when no gradient is needed.
   Errors: LLM_ERR_ARGUMENT (tape, value or out is NULL, a tensor without a
   buffer or of rank > LLM_MAX_RANK), LLM_ERR_TAPE (not initialised,
   released; grad overlaps value or another leaf's value or grad, or value
   overlaps another leaf's grad), LLM_ERR_CONTIGUITY (value or grad is a
   strided view), LLM_ERR_SHAPE (grad's shape is not value's),
   LLM_ERR_NONFINITE (a NaN or infinite element), LLM_ERR_OVERFLOW and
   LLM_ERR_ALLOC (the tape cannot grow). On failure nothing changes. */
llm_status llm_tape_leaf(llm_tape *tape, const llm_tensor *value, llm_tensor *grad,
                         llm_var *out, llm_error *err);

/* Records a copy of value (any layout) as a constant: no gradient.
   Errors: those of llm_tape_leaf except the grad's, and those of
   llm_tensor_copy (LLM_ERR_ALLOC). On failure nothing changes. */
llm_status llm_tape_constant(llm_tape *tape, const llm_tensor *value, llm_var *out,
                             llm_error *err);
/* Record a + b, a - b and a * b (elementwise), broadcast as in chapter 10.
   Errors: LLM_ERR_ARGUMENT (tape or out is NULL), LLM_ERR_TAPE (not
   initialised, released; an operand stale or not on the tape), those of
   llm_tensor_binary (LLM_ERR_BROADCAST, LLM_ERR_ALLOC, ...),
   LLM_ERR_NONFINITE (finite operands overflowed), LLM_ERR_OVERFLOW and
   LLM_ERR_ALLOC (the tape cannot grow). On failure nothing changes. */
llm_status llm_tape_add(llm_tape *tape, llm_var a, llm_var b, llm_var *out,
                        llm_error *err);
llm_status llm_tape_sub(llm_tape *tape, llm_var a, llm_var b, llm_var *out,
                        llm_error *err);
llm_status llm_tape_mul(llm_tape *tape, llm_var a, llm_var b, llm_var *out,
                        llm_error *err);
/* Record a under a new shape (rank extents, the same element count): a
   view when a's value is contiguous, else a copy in row-major order.
   Errors: as llm_tape_add, and those of llm_tensor_reshape (LLM_ERR_RANK,
   LLM_ERR_SHAPE, LLM_ERR_ARGUMENT for a NULL shape) and llm_tensor_copy. */
llm_status llm_tape_reshape(llm_tape *tape, llm_var a, size_t rank, const size_t *shape,
                            llm_var *out, llm_error *err);

/* Record a with axes axis_a and axis_b swapped: always a view.
   Errors: as llm_tape_add, and LLM_ERR_AXIS (an axis >= a's rank). */
llm_status llm_tape_transpose(llm_tape *tape, llm_var a, size_t axis_a, size_t axis_b,
                              llm_var *out, llm_error *err);
/* Record the sum or the mean of a over axis; keepdim keeps the axis with
   extent 1. Errors: as llm_tape_add, and those of llm_tensor_reduce
   (LLM_ERR_AXIS, LLM_ERR_EMPTY for a mean over extent 0). */
llm_status llm_tape_sum(llm_tape *tape, llm_var a, size_t axis, int keepdim,
                        llm_var *out, llm_error *err);
llm_status llm_tape_mean(llm_tape *tape, llm_var a, size_t axis, int keepdim,
                         llm_var *out, llm_error *err);

/* Record the sum of every element of a (row-major order, from +0.0), a
   tensor of rank 0. Errors: as llm_tape_add. */
llm_status llm_tape_sum_all(llm_tape *tape, llm_var a, llm_var *out, llm_error *err);

/* Record a's value with no edge back to a: a constant from now on.
   Errors: as llm_tape_add. */
llm_status llm_tape_detach(llm_tape *tape, llm_var a, llm_var *out, llm_error *err);
/* One backward pass from v: adds the gradient of sum(seed * v) with respect
   to every leaf's value into that leaf's grad. seed has v's shape (any
   layout); NULL means 1 and is allowed only when v has rank 0. Without
   keep_graph a successful pass releases the recording (values and adjoints
   are freed; every later call but reset and free is refused); with it the
   pass's adjoints stay readable through llm_tape_adjoint.
   Errors: LLM_ERR_ARGUMENT (tape is NULL, a seed without a buffer),
   LLM_ERR_TAPE (not initialised, released, v stale or not on the tape),
   LLM_ERR_RANK (no seed for an output of rank > 0), LLM_ERR_SHAPE (the
   seed's shape is not v's), LLM_ERR_NONFINITE (a NaN or infinite seed
   element, adjoint or resulting grad), LLM_ERR_ALLOC. On failure the tape
   and every grad are as they were. */
llm_status llm_tape_backward(llm_tape *tape, llm_var v, const llm_tensor *seed,
                             int keep_graph, llm_error *err);
/* *value = v's value tensor; *adjoint = v's adjoint from the last pass that
   kept the graph (value->size doubles, row-major), or NULL when that pass
   did not reach v. Both point into the tape: valid until the next call
   that records, runs backward, rewinds past v, resets or frees.
   Errors: LLM_ERR_ARGUMENT (tape or the result pointer is NULL),
   LLM_ERR_TAPE (not initialised, released, v stale or not on the tape). */
llm_status llm_tape_value(const llm_tape *tape, llm_var v, const llm_tensor **value,
                          llm_error *err);
llm_status llm_tape_adjoint(const llm_tape *tape, llm_var v, const double **adjoint,
                            llm_error *err);

/* What node id of the current recording is. The pointers point into the
   tape, valid as llm_tape_value's are. */
typedef struct llm_node_info {
    const llm_op *op;           /* what it computes; &llm_op_leaf for a leaf */
    size_t nargs;               /* operand edges: 0, 1 or 2 */
    size_t arg[2];              /* their ids; a detach keeps its source in arg[0] */
    const llm_tensor *value;    /* its value; value->owns: the tape's own buffer */
    const llm_tensor *grad;     /* a leaf's accumulator, else NULL */
    const double *adjoint;      /* the last kept pass's adjoint, or NULL */
    int needs_grad;             /* 1 when a leaf with a grad lies behind it */
} llm_node_info;

/* *info = node id. Errors: LLM_ERR_ARGUMENT (tape or info is NULL),
   LLM_ERR_TAPE (not initialised, released, id not in the recording). */
llm_status llm_tape_node(const llm_tape *tape, size_t id, llm_node_info *info,
                         llm_error *err);

/* The bytes one node takes in the tape's array (for the benchmarks). */
size_t llm_tape_node_size(void);
/* Record C = op(A) op(B), chapter 11's llm_matmul: batch axes broadcast.
   Errors: LLM_ERR_ARGUMENT (tape or out is NULL), LLM_ERR_TAPE (not
   initialised, released; an operand stale or not on the tape), those of
   llm_matmul (LLM_ERR_RANK, LLM_ERR_SHAPE, LLM_ERR_BROADCAST,
   LLM_ERR_OVERFLOW, LLM_ERR_ALLOC), LLM_ERR_NONFINITE (finite operands
   overflowed), LLM_ERR_OVERFLOW and LLM_ERR_ALLOC (the tape cannot grow).
   Every refusal has the stage "tape.matmul". On failure nothing changes. */
llm_status llm_tape_matmul(llm_tape *tape, llm_var a, llm_var b,
                           int trans_a, int trans_b, llm_var *out, llm_error *err);

/* Record the rows ids[p] of table (shape [V, ...]) at the positions of
   shape[0..rank-1]: a tensor of shape [shape..., table's extents after
   the first]. The n = product(shape) IDs are copied onto the tape; ids may
   be NULL when n = 0.
   Errors: LLM_ERR_ARGUMENT (tape or out is NULL, shape NULL with rank > 0,
   ids NULL with n > 0), LLM_ERR_TAPE (as llm_tape_matmul), LLM_ERR_RANK (a
   scalar table, an output of rank above LLM_MAX_RANK), LLM_ERR_OVERFLOW
   (the output's element count; the tape cannot grow), LLM_ERR_INDEX (an
   ID >= V, named by the coordinates of its position), LLM_ERR_ALLOC.
   Stage "tape.gather". On failure nothing changes. */
llm_status llm_tape_gather(llm_tape *tape, llm_var table, const size_t *ids,
                           size_t rank, const size_t *shape, llm_var *out,
                           llm_error *err);

/* Record e^a, ln a, sqrt(a), 1/a, sigmoid(a) and SiLU(a) = a sigmoid(a),
   elementwise, in a new tensor of a's shape.
   Errors: LLM_ERR_ARGUMENT (tape or out is NULL), LLM_ERR_TAPE (as
   llm_tape_matmul), LLM_ERR_NONFINITE (an input outside the domain, log:
   a <= 0, sqrt: a < 0, reciprocal: a = 0; or a result that overflows, exp
   of more than about 709.78, the reciprocal of a tiny subnormal; named by
   its coordinates), LLM_ERR_OVERFLOW (the tape cannot grow), LLM_ERR_ALLOC.
   Stages "tape.exp", "tape.log", ..., "tape.silu".
   On failure nothing changes. */
llm_status llm_tape_exp(llm_tape *tape, llm_var a, llm_var *out, llm_error *err);
llm_status llm_tape_log(llm_tape *tape, llm_var a, llm_var *out, llm_error *err);
llm_status llm_tape_sqrt(llm_tape *tape, llm_var a, llm_var *out, llm_error *err);
llm_status llm_tape_reciprocal(llm_tape *tape, llm_var a, llm_var *out, llm_error *err);
llm_status llm_tape_sigmoid(llm_tape *tape, llm_var a, llm_var *out, llm_error *err);
llm_status llm_tape_silu(llm_tape *tape, llm_var a, llm_var *out, llm_error *err);

/* Record log softmax(a) along axis, chapter 12's llm_log_softmax.
   Errors: as llm_tape_exp but for the domain, and those of llm_log_softmax
   (LLM_ERR_AXIS, LLM_ERR_EMPTY). Stage "tape.log_softmax". */
llm_status llm_tape_log_softmax(llm_tape *tape, llm_var a, size_t axis, llm_var *out,
                                llm_error *err);

/* Record the mean over the rows of logits ([..., V]) of -log softmax(row)
   [target], chapter 12's llm_nll_mean: a tensor of rank 0. The ntargets
   targets are copied onto the tape.
   Errors: as llm_tape_exp but for the domain, and those of llm_nll_mean
   (LLM_ERR_ARGUMENT for NULL targets, LLM_ERR_AXIS, LLM_ERR_EMPTY,
   LLM_ERR_SHAPE, LLM_ERR_TARGET). Stage "tape.nll_mean". */
llm_status llm_tape_nll_mean(llm_tape *tape, llm_var logits, const size_t *targets,
                             size_t ntargets, llm_var *out, llm_error *err);

#endif
