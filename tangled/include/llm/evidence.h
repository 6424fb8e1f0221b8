/* llm/evidence.h -- the demo layer, not the library: what every demo shares
   (arguments, numbers, traces, refusal rows), in libllm-evidence.a.
   Built by chapter 8. */
#ifndef LLM_EVIDENCE_H
#define LLM_EVIDENCE_H

#include <stddef.h>
#include <stdio.h>

#include "llm/error.h"

typedef struct llm_trace {
    FILE *fp;     /* NULL when no trace was asked for */
    int failed;   /* a write failed */
} llm_trace;

/* Parses a demo's arguments: none, or --trace FILE. Returns 0, or prints a
   message naming the demo and returns the exit status 2. */
int llm_demo_start(int argc, char **argv, const char *demo, llm_trace *trace);

/* Closes the trace; returns the demo's exit status: 0, or 1 when ok is 0 or
   the trace could not be written. */
int llm_demo_finish(llm_trace *trace, int ok);

/* One value, or one table row, of the trace. */
void llm_trace_value(llm_trace *trace, const char *key, const char *value);
void llm_trace_row(llm_trace *trace, const char *table, size_t ncells,
                   const char *const *cells);

/* x with the given decimals ("-0.000" is written "0.000"; "nan", "inf");
   a list "[a, b, c]". Each returns buf. A list of sizes is llm_fmt_sizes
   of llm/error.h, the one the library's messages use. */
char *llm_fmt(char *buf, size_t size, double x, int decimals);
char *llm_fmt_list(char *buf, size_t size, const double *x, size_t n, int decimals);

/* llm_fmt, then the trailing zeros of the fraction and a bare point go:
   with 12 decimals 5.5 is "5.5", 2 is "2", -0.5 is "-0.5". Returns buf. */
char *llm_fmt_trim(char *buf, size_t size, double x, int decimals);

/* 1 when st is LLM_OK; else prints "<demo>: unexpected <code> error in
   <stage>: <message>" on stderr and returns 0. */
int llm_demo_ok(const char *demo, llm_status st, const llm_error *err);

/* A refusal the demo provoked on purpose: prints "reject <what>: <code>
   (<stage>)", or "(accepted)" when st is LLM_OK, and adds the row what,
   code, message (or "accepted") to the trace table "refusals". */
void llm_demo_refusal(llm_trace *trace, const char *what, llm_status st,
                      const llm_error *err);

/* The same refusal, with the row's cells after what named by the letters
   of cells: 'c' the code, 's' the stage, 'm' the message, 'b' both code and
   stage as "<code> (`<stage>`)"; "accepted" stands for the stage and the
   message of a call that succeeded, "?" for an unknown letter. At most 7
   letters are read. llm_demo_refusal is the cells "cm". */
void llm_demo_refusal_cells(llm_trace *trace, const char *cells,
                            const char *what, llm_status st,
                            const llm_error *err);

#endif
