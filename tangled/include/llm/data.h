/* llm/data.h -- the data module: the book's corpus and its partitions
   (chapter 2); windows of documents, their shuffle, the batches cut from
   them and the loss summed over batches (chapter 21). */
#ifndef LLM_DATA_H
#define LLM_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "llm/error.h"

/* FNV-1a in 64 bits over n bytes: the checksum that names the corpus. A
   value, not a status: n = 0 gives the basis, and so does NULL. */
#define LLM_FNV_BASIS UINT64_C(0xcbf29ce484222325)
#define LLM_FNV_PRIME UINT64_C(0x100000001b3)
uint64_t llm_fnv1a64(const unsigned char *bytes, size_t n);
typedef enum llm_partition { LLM_TRAIN, LLM_VALIDATION, LLM_TEST } llm_partition;
#define LLM_PARTITIONS 3

/* "train", "validation", "test"; "?" for any other value. */
const char *llm_partition_name(llm_partition p);

#define LLM_DOC_NAME 64   /* room for a name and its NUL */

typedef struct llm_corpus_doc {
    char id[LLM_DOC_NAME];     /* en-07-ferry-in-fog */
    char lang[LLM_DOC_NAME];   /* en or ru */
    char group[LLM_DOC_NAME];  /* 07-ferry-in-fog: the scene, one per version */
    const unsigned char *text; /* the text, inside the corpus's bytes */
    size_t length;             /* its bytes */
    llm_partition partition;
} llm_corpus_doc;

typedef struct llm_corpus {
    unsigned char *bytes;        /* the corpus file, every byte */
    size_t size;
    uint64_t checksum;           /* llm_fnv1a64 of the bytes */
    char split[LLM_DOC_NAME];    /* the manifest's name for the split */
    llm_corpus_doc *docs;        /* in the file's order */
    size_t count;
    size_t in[LLM_PARTITIONS];   /* the documents of each partition */
} llm_corpus;
/* Reads a corpus (the n bytes of text) and the manifest that splits it
   (m bytes) into *corpus, checking in this order: the manifest's header;
   the corpus's checksum against the manifest's, before any document is
   read; UTF-8; the documents' format (each group one document in en and
   one in ru); the split (every document in exactly one partition, each
   group in one partition, no partition empty).
   Errors: LLM_ERR_ARGUMENT (a null pointer), LLM_ERR_FORMAT (a line of
   either file that breaks its format: the message names the line),
   LLM_ERR_CHECKSUM, LLM_ERR_UTF8 (the byte offset), LLM_ERR_SPLIT,
   LLM_ERR_ALLOC. On failure *corpus is not touched. */
llm_status llm_corpus_parse(llm_corpus *corpus, const unsigned char *text, size_t n,
                            const unsigned char *manifest, size_t m, llm_error *err);

/* Frees what corpus holds and leaves it empty. Safe on NULL. */
void llm_corpus_free(llm_corpus *corpus);
/* As llm_corpus_parse, on the files at corpus_path and manifest_path.
   Errors: those of llm_corpus_parse, LLM_ERR_FILE (a file that cannot be
   opened or read: the message names it and the system's reason). On
   failure *corpus is not touched. */
llm_status llm_corpus_load(llm_corpus *corpus, const char *corpus_path,
                           const char *manifest_path, llm_error *err);
/* The documents of partition p of corpus as byte strings (chapter 3's
   llm_bytes, llm/tokenizer.h), in the corpus's order, pointing into its
   text: nothing is copied. out[0..cap-1] gets them, *n their number.
   Errors: LLM_ERR_ARGUMENT (a null corpus or n; out NULL with cap > 0; p
   not a partition), LLM_ERR_LENGTH (more than cap documents). On failure
   out and *n are not touched. */
struct llm_bytes;
llm_status llm_corpus_bytes(const llm_corpus *corpus, llm_partition p,
                            struct llm_bytes *out, size_t cap, size_t *n, llm_error *err);
/* The token IDs of one wrapped document, [BOS, content..., EOS]. */
typedef struct llm_doc {
    const size_t *ids;
    size_t length;
} llm_doc;

/* One window: inputs are tokens start..start+T-1 of document doc, targets
   tokens start+1..start+T; start + T + 1 <= the document's length. */
typedef struct llm_window {
    size_t doc;    /* position of the document in the list */
    size_t start;  /* position of the first input token */
} llm_window;

/* The number of windows of T inputs, one every stride positions from 0,
   in a document of length IDs: (length - T - 1) / stride + 1, or 0 when
   length < T + 1.
   Errors: LLM_ERR_ARGUMENT (count is NULL, T or stride is 0),
   LLM_ERR_OVERFLOW (T + 1 does not fit a size_t). On failure *count is
   not touched. */
llm_status llm_window_count(size_t length, size_t T, size_t stride, size_t *count,
                            llm_error *err);

/* The windows of the ndocs documents, document by document and start by
   start, in windows[0..cap-1]; *count gets their number.
   Errors: those of llm_window_count, LLM_ERR_ARGUMENT (docs is NULL with
   ndocs > 0, windows is NULL with cap > 0), LLM_ERR_OVERFLOW (more windows
   than a size_t counts), LLM_ERR_LENGTH (more than cap windows). On
   failure windows and *count are not touched. */
llm_status llm_windows(const llm_doc *docs, size_t ndocs, size_t T, size_t stride,
                       llm_window *windows, size_t cap, size_t *count, llm_error *err);
/* Puts windows[0..n-1] in the order of a fresh SplitMix64 seeded with seed:
   for u = n-1 down to 1, swaps positions u and j = llm_rng_below(u + 1).
   The same seed and n give the same order; n <= 1 draws nothing.
   Errors: LLM_ERR_ARGUMENT (windows is NULL and n > 0). On failure the
   list is not touched. */
llm_status llm_shuffle_windows(llm_window *windows, size_t n, uint64_t seed,
                               llm_error *err);
/* The number of batches of batch_size windows that n windows make:
   ceil(n / batch_size), the last batch possibly shorter; 0 for n = 0.
   Errors: LLM_ERR_ARGUMENT (batches is NULL, batch_size is 0). On failure
   *batches is not touched. */
llm_status llm_batch_count(size_t n, size_t batch_size, size_t *batches,
                           llm_error *err);

/* Batch k of n windows cut into batches of batch_size: positions
   *first..*first + *count - 1; *count is batch_size except in a shorter
   last batch.
   Errors: LLM_ERR_ARGUMENT (first or count is NULL, batch_size is 0),
   LLM_ERR_INDEX (no batch k: k >= llm_batch_count). On failure neither
   *first nor *count is touched. */
llm_status llm_batch_span(size_t n, size_t batch_size, size_t k, size_t *first,
                          size_t *count, llm_error *err);
/* The token IDs of windows[first..first+count-1] as two row-major
   [count, T] arrays: row b of inputs holds tokens start..start+T-1 of the
   window's document, row b of targets tokens start+1..start+T. Each array
   has count * T slots; nothing after them is written.
   Errors: LLM_ERR_ARGUMENT (windows, inputs or targets is NULL; docs is
   NULL with ndocs > 0; a document with no IDs but a positive length;
   T is 0), LLM_ERR_EMPTY (count is 0), LLM_ERR_INDEX (the batch runs past
   the n windows; a window whose document does not exist or that does not
   fit in it, named by its position), LLM_ERR_OVERFLOW (count * T). On
   failure neither array is touched. */
llm_status llm_batch_tokens(const llm_doc *docs, size_t ndocs,
                            const llm_window *windows, size_t n, size_t first,
                            size_t count, size_t T, size_t *inputs,
                            size_t *targets, llm_error *err);
/* A token-weighted loss: the sum of per-token losses and the number of
   tokens they came from. Starts as {0.0, 0}. */
typedef struct llm_loss_sum {
    double sum;
    size_t tokens;
} llm_loss_sum;

/* Adds a part of tokens tokens whose per-token losses sum to loss_sum.
   Errors: LLM_ERR_ARGUMENT (acc is NULL), LLM_ERR_EMPTY (tokens is 0),
   LLM_ERR_NONFINITE (loss_sum is NaN or infinite, or the new sum would
   be), LLM_ERR_OVERFLOW (the token count would wrap). On failure *acc is
   not touched. */
llm_status llm_loss_add(llm_loss_sum *acc, double loss_sum, size_t tokens,
                        llm_error *err);

/* Adds part's sum and tokens to acc; a part with no tokens changes nothing.
   Errors: LLM_ERR_ARGUMENT (acc or part is NULL; part has no tokens but a
   nonzero sum), LLM_ERR_NONFINITE, LLM_ERR_OVERFLOW (as llm_loss_add).
   On failure *acc is not touched. */
llm_status llm_loss_merge(llm_loss_sum *acc, const llm_loss_sum *part,
                          llm_error *err);

/* *mean = acc->sum / acc->tokens.
   Errors: LLM_ERR_ARGUMENT (acc or mean is NULL), LLM_ERR_EMPTY (no
   tokens). On failure *mean is not touched. */
llm_status llm_loss_mean(const llm_loss_sum *acc, double *mean, llm_error *err);
/* The examples of a fixed-context model: windows[first..first+count-1],
   windows of T = 1 (llm_windows with T = 1: one per target), each widened
   to the context IDs before its target. Row b of inputs (count * C slots)
   holds tokens start-C+1 .. start of the window's document, BOS (ID 0)
   where a position falls before the document's first; targets[b] is token
   start+1. Nothing after the count * C and count slots is written.
   Errors: LLM_ERR_ARGUMENT (windows, inputs or targets is NULL; docs is
   NULL with ndocs > 0; C is 0; a document with no IDs but a positive
   length), LLM_ERR_EMPTY (count is 0), LLM_ERR_INDEX (the batch runs past
   the n windows; a window whose document does not exist or whose target
   is not in it, named by its position), LLM_ERR_OVERFLOW (count * C). On
   failure neither array is touched. */
llm_status llm_batch_contexts(const llm_doc *docs, size_t ndocs,
                              const llm_window *windows, size_t n, size_t first,
                              size_t count, size_t C, size_t *inputs,
                              size_t *targets, llm_error *err);

#endif
