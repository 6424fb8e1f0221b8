/* llm/tokenizer.h -- the tokenizer module: UTF-8 bytes, the Unicode
   scalars they spell, and the scalar vocabulary that gives each scalar of a
   text an ID. Built by chapter 1; chapters 3 and 4 will add byte-pair
   merges. */
#ifndef LLM_TOKENIZER_H
#define LLM_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "llm/error.h"

/* The most bytes one scalar takes in UTF-8, and the last scalar. */
#define LLM_UTF8_MAX 4
#define LLM_SCALAR_MAX 0x10FFFFu

/* Reads the scalar whose UTF-8 starts at bytes[at], one of n bytes:
   *scalar gets its value and *len the bytes it takes (1 to 4).
   Errors: LLM_ERR_ARGUMENT (a null pointer, at >= n), LLM_ERR_UTF8 (no
   scalar starts at at: a continuation byte or a byte above F4 there, a
   sequence cut short by the end or by a byte that is no continuation, an
   overlong form, a surrogate, a value above U+10FFFF); the message begins
   "byte <at>:". On failure *scalar and *len are not touched. */
llm_status llm_utf8_next(const unsigned char *bytes, size_t n, size_t at,
                         uint32_t *scalar, size_t *len, llm_error *err);
/* The number of scalars in bytes[0..n-1], when the n bytes are UTF-8:
   the library's UTF-8 check.
   Errors: LLM_ERR_ARGUMENT (count is NULL, bytes is NULL and n > 0),
   LLM_ERR_UTF8 (as llm_utf8_next, for the first sequence that fails).
   On failure *count is not touched. */
llm_status llm_utf8_count(const unsigned char *bytes, size_t n, size_t *count,
                          llm_error *err);

/* The scalars of bytes[0..n-1] in scalars[0..cap-1]; *count gets their
   number.
   Errors: those of llm_utf8_count, LLM_ERR_ARGUMENT (scalars is NULL and
   cap > 0), LLM_ERR_LENGTH (more than cap scalars). On failure scalars and
   *count are not touched. */
llm_status llm_utf8_decode(const unsigned char *bytes, size_t n, uint32_t *scalars,
                           size_t cap, size_t *count, llm_error *err);
/* The UTF-8 of scalar in out[0..*len-1]; *len is 1 to 4 (LLM_UTF8_MAX,
   the room out needs).
   Errors: LLM_ERR_ARGUMENT (a null pointer), LLM_ERR_UTF8 (a surrogate,
   D800 to DFFF, or a number above U+10FFFF: not a scalar). On failure out
   and *len are not touched. */
llm_status llm_utf8_encode(uint32_t scalar, unsigned char *out, size_t *len,
                           llm_error *err);
/* A vocabulary of scalars: ID 0 (LLM_UNK) stands for every scalar it does
   not hold; ID k + 1 is scalars[k], the scalars it holds in strictly
   ascending order. */
typedef struct llm_scalar_vocab {
    uint32_t *scalars;
    size_t size;          /* the number of IDs: 1 + the scalars held */
} llm_scalar_vocab;

#define LLM_UNK 0

/* The vocabulary of the n bytes of text: each distinct scalar once.
   Errors: LLM_ERR_ARGUMENT (vocab is NULL), those of llm_utf8_count,
   LLM_ERR_ALLOC. On failure *vocab is not touched. */
llm_status llm_scalar_vocab_build(llm_scalar_vocab *vocab, const unsigned char *text,
                                  size_t n, llm_error *err);

/* Frees what vocab holds and leaves it empty (size 0). Safe on NULL. */
void llm_scalar_vocab_free(llm_scalar_vocab *vocab);

/* The ID of scalar: its position among the scalars plus 1, or LLM_UNK. */
size_t llm_scalar_vocab_id(const llm_scalar_vocab *vocab, uint32_t scalar);

/* The IDs of the n bytes of text in ids[0..cap-1]; *count gets their
   number, one per scalar.
   Errors: LLM_ERR_ARGUMENT (a null pointer; a vocabulary no build makes:
   size 0, or scalars missing, not strictly ascending or not scalars),
   those of llm_utf8_count, LLM_ERR_LENGTH (more than cap IDs). On failure
   ids and *count are not touched. */
llm_status llm_scalar_vocab_encode(const llm_scalar_vocab *vocab,
                                   const unsigned char *text, size_t n, size_t *ids,
                                   size_t cap, size_t *count, llm_error *err);

/* The UTF-8 of the n IDs in out[0..cap-1], LLM_UNK as U+FFFD; *len gets
   the bytes written.
   Errors: LLM_ERR_ARGUMENT (as for encoding), LLM_ERR_TOKEN (an ID at or
   above vocab->size; the message names its position), LLM_ERR_LENGTH (more
   than cap bytes). On failure out and *len are not touched. */
llm_status llm_scalar_vocab_decode(const llm_scalar_vocab *vocab, const size_t *ids,
                                   size_t n, unsigned char *out, size_t cap,
                                   size_t *len, llm_error *err);
/* Byte-pair merges. While merges are learned, IDs 0..255 are the bytes
   and merge rank r makes ID 256 + r. The book's table has LLM_BOOK_MERGES
   merges, learned from the corpus's training documents. */
#define LLM_BYTE_IDS 256
#define LLM_BOOK_MERGES 256

/* The merge of rank r: (left, right) became ID 256 + r; count is how often
   the pair occurred, overlaps included, when it won its round, and uses
   how many times it was replaced. */
typedef struct llm_merge {
    size_t left, right;
    size_t count, uses;
} llm_merge;

/* A merge table: the merges in rank order. */
typedef struct llm_bpe {
    llm_merge *merges;
    size_t count;
} llm_bpe;

/* A document's bytes. */
typedef struct llm_bytes {
    const unsigned char *bytes;
    size_t length;
} llm_bytes;

/* Learns up to rounds merges from the ndocs documents: each round counts
   every adjacent pair within each document (overlapping, never across
   two), takes the largest count (ties: the smaller left ID, then the
   smaller right), and replaces it left to right without overlap. Stops
   early when no pair is left. Time proportional to rounds times the bytes.
   Errors: LLM_ERR_ARGUMENT (a null pointer; a document with no bytes but
   a length), LLM_ERR_OVERFLOW (more bytes, or more IDs, than the counts
   can hold), LLM_ERR_ALLOC. On failure *bpe is not touched. */
llm_status llm_bpe_learn(llm_bpe *bpe, const llm_bytes *docs, size_t ndocs,
                         size_t rounds, llm_error *err);

/* Frees the table and leaves it empty. Safe on NULL. */
void llm_bpe_free(llm_bpe *bpe);

/* Replaces each (left, right) of ids[0..n-1] by id, from the left and
   without overlap, in place; returns the new length, n less the
   replacements. A value, not a status: NULL gives 0. */
size_t llm_bpe_replace(size_t *ids, size_t n, size_t left, size_t right, size_t id);

/* The bytes that ID id stands for, in out[0..cap-1]; *len gets their
   number. An ID below 256 is its byte; ID 256 + r is the bytes of merge r's
   left ID followed by those of its right.
   Errors: LLM_ERR_ARGUMENT (a null pointer; a table that is not a ranking:
   a merge of rank r may only join IDs below 256 + r), LLM_ERR_TOKEN (id at
   or above 256 + bpe->count), LLM_ERR_LENGTH (more than cap bytes),
   LLM_ERR_ALLOC. On failure out and *len are not touched. */
llm_status llm_bpe_spell(const llm_bpe *bpe, size_t id, unsigned char *out, size_t cap,
                         size_t *len, llm_error *err);
/* The layout of the book's IDs: the two controls, then the bytes (byte b
   is ID b + 2), then the merges (rank r is ID 258 + r). */
#define LLM_BOS 0
#define LLM_EOS 1
#define LLM_CONTROLS 2

/* A frozen tokenizer: its merge table, its vocabulary size and the bytes
   each ID stands for (ID v: spelling[start[v]] .. spelling[start[v + 1]
   - 1]; the controls stand for none). */
typedef struct llm_tokenizer {
    llm_bpe bpe;                 /* its own copy */
    size_t vocab;                /* 258 + bpe.count */
    unsigned char *spelling;
    size_t *start;               /* vocab + 1 entries */
} llm_tokenizer;

/* Freezes the merge table bpe into *tok.
   Errors: LLM_ERR_ARGUMENT (a null pointer; a table that is not a ranking,
   or that repeats a pair), LLM_ERR_OVERFLOW (spellings longer than a
   size_t can count), LLM_ERR_ALLOC. On failure *tok is not touched. */
llm_status llm_tokenizer_init(llm_tokenizer *tok, const llm_bpe *bpe, llm_error *err);

/* Frees what tok holds and leaves it empty. Safe on NULL. */
void llm_tokenizer_free(llm_tokenizer *tok);
/* The IDs of the n bytes (content, no controls) in ids[0..cap-1]; *count
   gets their number. Merges apply in rank order, one left-to-right pass
   each.
   Errors: LLM_ERR_ARGUMENT (a null pointer, or a tokenizer that
   llm_tokenizer_init did not make), LLM_ERR_LENGTH (more than cap IDs),
   LLM_ERR_ALLOC. On failure ids and *count are not touched. */
llm_status llm_tokenizer_encode(const llm_tokenizer *tok, const unsigned char *bytes,
                                size_t n, size_t *ids, size_t cap, size_t *count,
                                llm_error *err);

/* As llm_tokenizer_encode, wrapped as a document: [BOS, content..., EOS]. */
llm_status llm_tokenizer_encode_document(const llm_tokenizer *tok, const unsigned char *bytes,
                                         size_t n, size_t *ids, size_t cap, size_t *count,
                                         llm_error *err);
/* The bytes of the n content IDs in out[0..cap-1]; *len gets their number.
   Errors: LLM_ERR_ARGUMENT (as for encoding), LLM_ERR_TOKEN (a control, or
   an ID at or above tok->vocab; the message names its position),
   LLM_ERR_LENGTH (more than cap bytes). On failure out and *len are not
   touched. */
llm_status llm_tokenizer_decode(const llm_tokenizer *tok, const size_t *ids, size_t n,
                                unsigned char *out, size_t cap, size_t *len,
                                llm_error *err);

/* As llm_tokenizer_decode, for a document [BOS, content..., EOS]: also
   LLM_ERR_TOKEN for a list that does not begin with BOS or end with EOS. */
llm_status llm_tokenizer_decode_document(const llm_tokenizer *tok, const size_t *ids,
                                         size_t n, unsigned char *out, size_t cap,
                                         size_t *len, llm_error *err);

#endif
