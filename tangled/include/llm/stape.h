/* llm/stape.h -- the scalar tape module (llm_stape): reverse-mode
   differentiation of one number at a time. Built by chapter 14. */
#ifndef LLM_STAPE_H
#define LLM_STAPE_H

#include <stddef.h>

#include "llm/error.h"

/* What a node of the scalar tape computes from its operands a and b. */
typedef enum llm_sop {
    LLM_SOP_LEAF,    /* an input or a constant: no operands */
    LLM_SOP_ADD,     /* a + b */
    LLM_SOP_MUL,     /* a * b */
    LLM_SOP_SCALE,   /* c * a, the constant c kept in the node */
    LLM_SOP_EXP,     /* exp(a) */
    LLM_SOP_TANH,    /* tanh(a) */
    LLM_SOP_DETACH   /* the value of a, with no edge back to a */
} llm_sop;

typedef struct llm_snode {
    double value;     /* computed when the node is recorded; always finite */
    double grad;      /* the sum of this node's adjoints over backward passes */
    double constant;  /* c of LLM_SOP_SCALE, 0 otherwise */
    llm_sop op;
    size_t nargs;     /* operand edges: 0, 1 or 2 */
    size_t arg[2];    /* operand ids, each smaller than this node's id;
                         detach keeps its source in arg[0] with nargs 0 */
} llm_snode;

typedef struct llm_stape {
    llm_snode *nodes;  /* nodes[0 .. count-1], in the order they were recorded */
    size_t count;      /* nodes on the tape; the next node gets id count */
    size_t capacity;   /* room in nodes before the array must grow */
} llm_stape;
/* An empty tape with room for capacity nodes (at least 1).
   Errors: LLM_ERR_ARGUMENT (tape is NULL), LLM_ERR_OVERFLOW (the bytes
   of capacity nodes do not fit in size_t), LLM_ERR_ALLOC. On failure
   *tape is not touched. */
llm_status llm_stape_init(llm_stape *tape, size_t capacity, llm_error *err);

/* Releases the nodes and empties the tape; every id becomes invalid.
   Safe on NULL and on an empty tape, which may be used again. */
void llm_stape_free(llm_stape *tape);
/* Record one node and write its id to *out. leaf takes a value; the others
   take the ids of their operands (scale also a constant c) and compute the
   value at once. detach(a) has a's value and no edge back to a.
   Errors: LLM_ERR_ARGUMENT (tape or out is NULL), LLM_ERR_TAPE (an
   operand is not on the tape), LLM_ERR_NONFINITE (the value or c is NaN
   or infinite, also when finite operands overflow), LLM_ERR_OVERFLOW and
   LLM_ERR_ALLOC (the tape cannot grow). On failure nothing changes. */
llm_status llm_stape_leaf(llm_stape *tape, double value, size_t *out, llm_error *err);
llm_status llm_stape_add(llm_stape *tape, size_t a, size_t b, size_t *out,
                         llm_error *err);
llm_status llm_stape_mul(llm_stape *tape, size_t a, size_t b, size_t *out,
                         llm_error *err);
llm_status llm_stape_scale(llm_stape *tape, size_t a, double c, size_t *out,
                           llm_error *err);
llm_status llm_stape_exp(llm_stape *tape, size_t a, size_t *out, llm_error *err);
llm_status llm_stape_tanh(llm_stape *tape, size_t a, size_t *out, llm_error *err);
llm_status llm_stape_detach(llm_stape *tape, size_t a, size_t *out, llm_error *err);

/* The short name of an operation: "leaf", "add", ..., "unknown". */
const char *llm_sop_name(llm_sop op);
/* The local derivative of node id with respect to its operand edge k
   (0 or 1): the factor the edge rule multiplies the node's adjoint by.
   Errors: LLM_ERR_ARGUMENT (tape or d is NULL), LLM_ERR_TAPE (id is not
   on the tape, or the node has no edge k). */
llm_status llm_stape_partial(const llm_stape *tape, size_t id, size_t k, double *d,
                             llm_error *err);
/* One backward pass from output with the given seed: computes the adjoint
   of every node 0..output and adds it to that node's grad (it does not
   zero first). Nodes recorded after output are not touched.
   Errors: LLM_ERR_ARGUMENT (tape is NULL), LLM_ERR_TAPE (output is not on
   the tape), LLM_ERR_NONFINITE (the seed, an adjoint or a resulting grad is
   NaN or infinite), LLM_ERR_ALLOC. On failure no grad changes. */
llm_status llm_stape_backward(llm_stape *tape, size_t output, double seed,
                              llm_error *err);
/* Sets the grad of every node on the tape to +0.0.
   Errors: LLM_ERR_ARGUMENT (tape is NULL). */
llm_status llm_stape_zero_grad(llm_stape *tape, llm_error *err);

/* Read the value or the accumulated grad of node id.
   Errors: LLM_ERR_ARGUMENT (tape or the result pointer is NULL),
   LLM_ERR_TAPE (id is not on the tape). */
llm_status llm_stape_value(const llm_stape *tape, size_t id, double *value,
                           llm_error *err);
llm_status llm_stape_grad(const llm_stape *tape, size_t id, double *grad,
                          llm_error *err);
/* The nodes output depends on, output first and every node before its
   operands: the order backward visits them. order must have room for
   output + 1 ids; *count gets how many were written.
   Errors: LLM_ERR_ARGUMENT (tape, order or count is NULL), LLM_ERR_TAPE
   (output is not on the tape), LLM_ERR_ALLOC. */
llm_status llm_stape_order(const llm_stape *tape, size_t output, size_t *order,
                           size_t *count, llm_error *err);

#endif
