/* tape_op.h -- the interface between the tensor tape and the operations
   recorded outside tensor_tape.c (chapter 16 onwards). Private to the
   library: programs do not include it. Built by chapter 15. */
#ifndef LLM_TAPE_OP_H
#define LLM_TAPE_OP_H

#include "llm/tape.h"

/* The checks every operation makes first: the tape is initialised and not
   released, out is not NULL, each of the nargs handles in args belongs to
   this recording. Refusals carry stage. */
llm_status llm_tape_check(const llm_tape *tape, size_t nargs, const llm_var *args,
                          const llm_var *out, const char *stage, llm_error *err);

/* node->attr = a block of bytes bytes (at least one), zeroed, for the
   operation's parameters; it is freed with the node.
   Errors: LLM_ERR_ALLOC, under stage; node->attr stays NULL. */
llm_status llm_tape_attr(llm_tape *tape, llm_node *node, size_t bytes, const char *stage,
                         llm_error *err);

/* Frees what a node that was never appended owns: its value (when owned)
   and its parameters. */
void llm_tape_discard(llm_tape *tape, llm_node *node);

/* Appends node and writes its handle to *out. The tape takes the node
   over, value and parameters included; when the tape cannot grow
   (LLM_ERR_OVERFLOW, LLM_ERR_ALLOC) it frees them and is as it was. */
llm_status llm_tape_append(llm_tape *tape, llm_node node, llm_var *out, const char *stage,
                           llm_error *err);

#endif
