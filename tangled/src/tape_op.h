/* tape_op.h -- the interface between the tensor tape and the operations
   recorded outside tensor_tape.c (chapter 16 onwards). Private to the
   library: programs do not include it. Built by chapter 15. */
#ifndef LLM_TAPE_OP_H
#define LLM_TAPE_OP_H

#include "llm/tape.h"

struct llm_node {
    const llm_op *op;     /* what the node computes */
    size_t nargs;         /* operand edges: 0, 1 or 2 */
    size_t arg[2];        /* operand ids, each smaller than this node's id;
                             detach keeps its source in arg[0] with nargs 0 */
    llm_tensor value;     /* owns = 1: the tape frees it; owns = 0: a leaf's
                             borrowed tensor or a view of an operand's value */
    llm_tensor *grad;     /* a leaf's accumulator (the caller's), else NULL */
    double *adjoint;      /* the adjoint of the last pass that kept the graph:
                             value.size doubles, row-major; or NULL */
    int needs_grad;       /* 1 when a leaf with a grad lies behind this node */
    void *attr;           /* the operation's parameters, laid out by the
                             operation; allocated and freed with the node */
};

/* The checks every operation makes first: the tape is initialised and not
   released, out is not NULL, each of the nargs handles in args belongs to
   this recording. Refusals carry stage. */
llm_status llm_tape_check(const llm_tape *tape, size_t nargs, const llm_var *args,
                          const llm_var *out, const char *stage, llm_error *err);

/* node->attr = a block of bytes bytes (at least one), zeroed, for the
   operation's parameters; it is freed with the node.
   Errors: LLM_ERR_ALLOC, under stage; node->attr stays NULL. */
llm_status llm_tape_attr(llm_tape *tape, llm_node *node, size_t bytes,
                         const char *stage, llm_error *err);

/* Frees what a node that was never appended owns: its value (when owned)
   and its parameters. */
void llm_tape_discard(llm_tape *tape, llm_node *node);

/* Appends node and writes its handle to *out. The tape takes the node
   over, value and parameters included; when the tape cannot grow
   (LLM_ERR_OVERFLOW, LLM_ERR_ALLOC) it frees them and is as it was. */
llm_status llm_tape_append(llm_tape *tape, llm_node node, llm_var *out,
                           const char *stage, llm_error *err);

#endif
