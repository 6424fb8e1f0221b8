/* llm/error.h -- the error module: named errors (every rejection says what
   and where), the size-list formatter of their messages, and the one
   allocator whose refusals they report. Built by chapter 1 (the first codes,
   the allocator), then chapters 8 (the tensor chapters' codes), 14, 17 and
   30 (the codes of autodiff, names and configurations). */
#ifndef LLM_ERROR_H
#define LLM_ERROR_H

#include <stddef.h>

typedef enum llm_status {
    LLM_OK = 0,
    LLM_ERR_ARGUMENT,   /* a null pointer or a meaningless argument */
    LLM_ERR_LENGTH,     /* a buffer too short for what must go into it, or one
                           whose length does not match a shape (chapter 8) */
    LLM_ERR_ALLOC,      /* the allocator refused */
    LLM_ERR_UTF8,       /* bytes that are not the UTF-8 of Unicode scalars, or a
                           number that is not a scalar */
    LLM_ERR_TOKEN,      /* an ID outside its vocabulary */
    LLM_ERR_FILE,       /* a file that cannot be opened or read */
    LLM_ERR_FORMAT,     /* a text that breaks its documented format */
    LLM_ERR_CHECKSUM,   /* bytes whose checksum is not the one named for them */
    LLM_ERR_SPLIT,      /* a split that breaks a rule: a document listed twice,
                           missing or unknown, a group divided, a partition
                           left empty */
    LLM_ERR_RANK,       /* an index or shape with the wrong number of axes */
    LLM_ERR_INDEX,      /* an index outside the extent of its axis */
    LLM_ERR_OVERFLOW,   /* an element count size_t cannot hold */
    LLM_ERR_SHAPE,      /* shapes that must agree do not (a parameter
                           with the right name and another shape) */
    LLM_ERR_AXIS,       /* an axis outside the rank, or named twice */
    LLM_ERR_CONTIGUITY, /* a strided view where contiguous storage is needed */
    LLM_ERR_BROADCAST,  /* shapes that cannot be broadcast together */
    LLM_ERR_EMPTY,      /* no value over zero elements (mean, max, softmax);
                           an input of zero rows or tokens where values are
                           needed */
    LLM_ERR_TARGET,     /* a target class outside its row */
    LLM_ERR_NONFINITE,  /* a NaN or an infinity where a finite number is needed */
    LLM_ERR_TAPE,       /* the tape cannot do this: a node that is not on it,
                           an operand edge that a node does not have */
    LLM_ERR_NAME,       /* a parameter name that breaks the rules or is already
                           taken (or, in a lookup, is not in the list); a list
                           that does not hold the parameters expected: too few,
                           too many, or others in their places */
    LLM_ERR_CONFIG,     /* a configuration that cannot build the layer or model:
                           a head count of 0 or one that does not divide the
                           width, an odd head width, parts that do not fit */
    LLM_STATUS_COUNT
} llm_status;

typedef struct llm_error {
    llm_status code;
    char stage[48];     /* the public function that refused, as <module>.<verb>:
                           llm_scalar_vocab_encode is "scalar_vocab.encode",
                           llm_utf8_next (no type in its name) "tokenizer.utf8_next" */
    char cause[48];     /* the stage that refused first, inside it; "" if none */
    char message[208];  /* what was expected and what came */
} llm_error;

#if defined(__GNUC__)
#define LLM_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define LLM_PRINTF(fmt, args)
#endif

/* Records a rejection in err (when err is not NULL) and returns code; the
   cause is cleared. */
llm_status llm_fail(llm_error *err, llm_status code, const char *stage,
                    const char *fmt, ...) LLM_PRINTF(4, 5);

/* As llm_fail with why's code, for a refusal in why of a call that stage
   made: the message is fmt's, and the cause is why's cause, or why's
   stage when it has none. */
llm_status llm_fail_from(llm_error *err, const llm_error *why, const char *stage,
                         const char *fmt, ...) LLM_PRINTF(4, 5);

/* Passes on code, a status that a call made by stage returned, with err
   holding its refusal: err's stage becomes stage, and its first stage
   goes to cause unless cause already holds a deeper one. Returns code and
   changes nothing when code is LLM_OK, err is NULL or err's stage is
   stage already. */
llm_status llm_pass(llm_error *err, llm_status code, const char *stage);

/* "stage" or "stage <- cause", in buf cut to size; returns buf. */
char *llm_error_where(char *buf, size_t size, const llm_error *err);

/* The short name of a status code: "ok", "utf8", "alloc", ... */
const char *llm_status_name(llm_status code);

/* The rule for null pointers, kept by every function of the library:
   - a function that returns llm_status refuses a null pointer it needs with
     LLM_ERR_ARGUMENT (err itself may always be NULL);
   - a function that returns a value or nothing does nothing with a null
     pointer and returns 0 (llm_scalar_vocab_free, llm_scalar_vocab_id);
   - llm_fail with a null format records an empty message. */

/* n sizes as "[2, 2, 3]" ("[]" for none) in buf, cut to size; returns buf.
   The one formatter of size lists (shapes, IDs) of the library's messages
   and the demos. */
char *llm_fmt_sizes(char *buf, size_t size, const size_t *x, size_t n);

/* The library's allocations: malloc, calloc and realloc, except that the
   call chosen by llm_alloc_fail_at returns NULL (realloc then leaves its
   block as it was). */
void *llm_malloc(size_t size);
void *llm_calloc(size_t count, size_t size);
void *llm_realloc(void *block, size_t size);

/* For tests: the n-th allocation from now fails, once; n = 0 turns the hook
   off. Either way the count of llm_alloc_calls starts again from 0. */
void llm_alloc_fail_at(size_t n);

/* The allocations made since the last llm_alloc_fail_at, the failed one
   included. */
size_t llm_alloc_calls(void);
/* Gives block back for reuse: it came from llm_malloc or llm_calloc with
   exactly bytes bytes, and the caller no longer touches it. The allocator
   keeps it, and a later llm_malloc or llm_calloc of the same size returns
   it (llm_calloc zeroes it). A block that would take the kept bytes past
   the limit is freed instead. Safe on NULL. */
void llm_alloc_give(void *block, size_t bytes);

/* The most bytes kept at once (LLM_ALLOC_KEEP, a gibibyte, to start); 0
   keeps nothing. When more bytes are kept than the new limit, every kept
   block is freed. */
#define LLM_ALLOC_KEEP ((size_t)1 << 30)
void llm_alloc_keep(size_t limit);

/* The bytes kept now, and every kept block freed. */
size_t llm_alloc_kept(void);
void llm_alloc_trim(void);

#endif
