/* llm/evidence.h -- the demo layer, not the library: what every demo shares
   (arguments, numbers, traces, refusal rows), in libllm-evidence.a.
   Built by chapter 1; chapters 8, 14, 15 and 17 add what their demos own. */
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

/* A demo's state. Its calls write err; ok turns 0 at the first unexpected
   error or failed check and stays 0; owned lists what the demo frees. */
typedef struct llm_owned {
    void *obj;
    void (*release)(void *obj);
} llm_owned;

typedef struct llm_demo {
    const char *name;     /* "ch01-text-units" */
    llm_trace trace;
    llm_error err;
    int ok;
    llm_owned *owned;
    size_t nowned, room;
} llm_demo;

/* Parses the arguments as llm_demo_start does and prints the report's
   first line, "chapter=01 text-units" for "ch01-text-units". Returns 0, or the
   exit status 2. */
int llm_demo_begin(llm_demo *d, int argc, char **argv, const char *name);

/* Frees what the demo owns, newest first, closes the trace and returns the
   exit status: 0 when ok is set, no trace write failed and no text was
   cut; 1 otherwise. */
int llm_demo_end(llm_demo *d);

/* The status of a call that wrote d->err: returns d->ok; an error is
   printed as llm_demo_ok prints it and clears ok. LLM_TRY makes the call
   only while ok is set. */
int llm_demo_call(llm_demo *d, llm_status st);
#define LLM_TRY(d, call) ((d)->ok && llm_demo_call((d), (call)))

/* A property the evidence must have: when holds is 0, ok is cleared and
   "<demo>: check failed: <what>" goes to stderr. Returns holds. */
int llm_demo_check(llm_demo *d, int holds, const char *what);

/* A new zeroed object of size bytes that the demo owns: when the section
   that took it ends (llm_demo_run) or at llm_demo_end, release(obj) runs
   and the memory is freed. Returns NULL and clears ok when memory runs
   out. */
void *llm_own(llm_demo *d, size_t size, void (*release)(void *obj));
/* One section: while ok is set, section(d) runs, and what it owned is
   freed when it returns. */
typedef void llm_section(llm_demo *d);
void llm_demo_run(llm_demo *d, llm_section *section);

/* A demo's whole main: llm_demo_begin; setup, when not NULL, whose
   objects last until the end; each of the sections (a list ended by NULL)
   through llm_demo_run; llm_demo_end. Returns the exit status. */
int llm_demo_main(int argc, char **argv, const char *name, llm_section *setup,
                  llm_section *const *sections);

/* One value into the trace under key; returns value, so that the report
   line prints what the trace holds. One row of a trace table: the cells
   up to a NULL. */
const char *llm_put(llm_demo *d, const char *key, const char *value);
void llm_row(llm_demo *d, const char *table, ...);

/* llm_demo_refusal and llm_demo_refusal_cells on the demo's trace and err. */
void llm_refuse(llm_demo *d, const char *what, llm_status st);
void llm_refuse_cells(llm_demo *d, const char *cells, const char *what,
                      llm_status st);
/* llm_refuse, and a check that the code is want. Returns st == want. */
int llm_refuse_as(llm_demo *d, const char *what, llm_status st, llm_status want);

/* Texts that last: each call writes into the next of LLM_TEXT_SLOTS
   buffers, so a text stays valid for the next LLM_TEXT_SLOTS - 1 texts,
   enough for one report line or one row. A text longer than
   LLM_TEXT_SIZE - 1 bytes is cut, and llm_demo_end then fails. */
#define LLM_TEXT_SLOTS 64
#define LLM_TEXT_SIZE 4096
const char *llm_num(double x, int decimals);                   /* llm_fmt */
const char *llm_trim(double x, int decimals);                  /* llm_fmt_trim */
const char *llm_nums(const double *x, size_t n, int decimals); /* llm_fmt_list */
const char *llm_trims(const double *x, size_t n, int decimals); /* a list of llm_trim */
const char *llm_sizes(const size_t *sizes, size_t n);          /* llm_fmt_sizes */
/* rows lists of cols values, row-major, as "[[a, b], [c, d]]": llm_num
   values, or llm_trim values. */
const char *llm_rows(const double *x, size_t rows, size_t cols, int decimals);
const char *llm_trim_rows(const double *x, size_t rows, size_t cols, int decimals);
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
const char *llm_text(const char *fmt, ...);                    /* snprintf */
const char *llm_yes(int holds);                                /* "yes", "no" */
/* n bytes as "63 61 74" (the first 64 at most); and n bytes as text when
   they are UTF-8, each space shown as a middle dot (U+00B7), or NULL when
   they are not UTF-8: how the demos show bytes and the units of a
   tokenizer. */
const char *llm_hex(const unsigned char *b, size_t n);
const char *llm_unit_text(const unsigned char *b, size_t n);
/* What the demos of later chapters own: each adds its llm_own_<thing>. */
/* The book's corpus from corpus/, and its tokenizer: LLM_BOOK_MERGES merges
   learned from the training documents, frozen (chapter 4). NULL, with ok
   cleared, when either cannot be made. */
struct llm_corpus;
struct llm_corpus *llm_own_corpus(llm_demo *d);
struct llm_tokenizer;
struct llm_tokenizer *llm_own_book_tokenizer(llm_demo *d, const struct llm_corpus *corpus);
/* The documents of partition (an llm_partition) encoded by tok as
   [BOS, content..., EOS], in the corpus's order; *n gets their number. */
struct llm_doc;
struct llm_doc *llm_own_encoded(llm_demo *d, const struct llm_tokenizer *tok,
                                const struct llm_corpus *corpus, int partition, size_t *n);
/* llm_own for a tensor, freed with llm_tensor_free (chapter 8). */
struct llm_tensor;
struct llm_tensor *llm_own_tensor(llm_demo *d);
/* llm_own for a scalar tape, freed with llm_stape_free (chapter 14). */
struct llm_stape;
struct llm_stape *llm_own_stape(llm_demo *d);
/* llm_own for a tape, freed with llm_tape_free (chapter 15). */
struct llm_tape;
struct llm_tape *llm_own_tape(llm_demo *d);
/* An owned tape initialised with room for capacity nodes; NULL, with ok
   cleared, when it cannot be made. */
struct llm_tape *llm_own_fresh_tape(llm_demo *d, size_t capacity);
/* An owned tensor of the given shape holding x's first values (as many as
   the shape has elements), recorded on tape as the constant *v. Returns
   d->ok. */
struct llm_var;
int llm_own_constant(llm_demo *d, struct llm_tape *tape, size_t rank,
                     const size_t *shape, const double *x, struct llm_var *v);
/* llm_own for a parameter list, freed with llm_params_free (chapter 17). */
struct llm_params;
struct llm_params *llm_own_params(llm_demo *d);

#endif
