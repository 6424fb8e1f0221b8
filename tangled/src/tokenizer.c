/* tokenizer.c -- UTF-8 bytes and Unicode scalars; the scalar vocabulary. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer.h"

/* The bytes UTF-8 spends on scalar u. */
static size_t utf8_length(uint32_t u)
{
    return u < 0x80 ? 1 : u < 0x800 ? 2 : u < 0x10000 ? 3 : 4;
}

/* The bytes of the sequence that lead begins, or 0 when lead begins none:
   a continuation byte 10xxxxxx, or F5 to FF. */
static size_t sequence_length(unsigned char lead)
{
    if (lead < 0x80)
        return 1;
    if (lead < 0xC0)
        return 0;
    if (lead < 0xE0)
        return 2;
    if (lead < 0xF0)
        return 3;
    return lead < 0xF5 ? 4 : 0;
}

static int is_surrogate(uint32_t u)
{
    return u >= 0xD800 && u <= 0xDFFF;
}

llm_status llm_utf8_next(const unsigned char *bytes, size_t n, size_t at,
                         uint32_t *scalar, size_t *len, llm_error *err)
{
    static const uint32_t least[LLM_UTF8_MAX + 1] = {0, 0, 0x80, 0x800, 0x10000};
    const char *stage = "tokenizer.utf8_next";
    size_t length, k;
    uint32_t u;
    if (bytes == NULL || scalar == NULL || len == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    if (at >= n)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "offset %zu is past the end of %zu bytes", at, n);
    length = sequence_length(bytes[at]);
    if (length == 0)
        return llm_fail(err, LLM_ERR_UTF8, stage,
                        bytes[at] < 0xC0 ? "byte %zu: %02X continues a scalar, but none began"
                                         : "byte %zu: %02X is above F4 and begins no scalar",
                        at, (unsigned)bytes[at]);
    if (length > n - at)
        return llm_fail(err, LLM_ERR_UTF8, stage,
                        "byte %zu: %02X begins %zu bytes, but the text ends after %zu",
                        at, (unsigned)bytes[at], length, n - at);
    u = length == 1 ? bytes[at] : bytes[at] & (0x7Fu >> length);
    for (k = 1; k < length; k++) {
        if ((bytes[at + k] & 0xC0) != 0x80)
            return llm_fail(err, LLM_ERR_UTF8, stage,
                            "byte %zu: %02X begins %zu bytes, but byte %zu, %02X, "
                            "is no continuation", at, (unsigned)bytes[at], length,
                            at + k, (unsigned)bytes[at + k]);
        u = u << 6 | (bytes[at + k] & 0x3Fu);
    }
    if (u < least[length])
        return llm_fail(err, LLM_ERR_UTF8, stage,
                        "byte %zu: %zu bytes spell U+%04X, which takes %zu: an overlong form",
                        at, length, (unsigned)u, utf8_length(u));
    if (is_surrogate(u) || u > LLM_SCALAR_MAX)
        return llm_fail(err, LLM_ERR_UTF8, stage, "byte %zu: U+%04X is %s, not a scalar",
                        at, (unsigned)u, is_surrogate(u) ? "a surrogate" : "above U+10FFFF");
    *scalar = u;
    *len = length;
    return LLM_OK;
}
llm_status llm_utf8_count(const unsigned char *bytes, size_t n, size_t *count,
                          llm_error *err)
{
    size_t at, len = 0, scalars = 0;
    uint32_t u;
    llm_status st;
    if (count == NULL || (bytes == NULL && n > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, "tokenizer.utf8_count", "a null pointer");
    for (at = 0; at < n; at += len, scalars++)
        if ((st = llm_utf8_next(bytes, n, at, &u, &len, err)) != LLM_OK)
            return llm_pass(err, st, "tokenizer.utf8_count");
    *count = scalars;
    return LLM_OK;
}

llm_status llm_utf8_decode(const unsigned char *bytes, size_t n, uint32_t *scalars,
                           size_t cap, size_t *count, llm_error *err)
{
    size_t total = 0, at, i, len = 0;
    llm_status st;
    if (count == NULL || (scalars == NULL && cap > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, "tokenizer.utf8_decode", "a null pointer");
    if ((st = llm_utf8_count(bytes, n, &total, err)) != LLM_OK)
        return llm_pass(err, st, "tokenizer.utf8_decode");
    if (total > cap)
        return llm_fail(err, LLM_ERR_LENGTH, "tokenizer.utf8_decode",
                        "%zu scalars do not fit in room for %zu", total, cap);
    for (at = 0, i = 0; at < n; at += len, i++)
        (void)llm_utf8_next(bytes, n, at, &scalars[i], &len, NULL);
    *count = total;
    return LLM_OK;
}
llm_status llm_utf8_encode(uint32_t scalar, unsigned char *out, size_t *len,
                           llm_error *err)
{
    static const unsigned char prefix[LLM_UTF8_MAX + 1] = {0, 0x00, 0xC0, 0xE0, 0xF0};
    size_t length, k;
    if (out == NULL || len == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "tokenizer.utf8_encode", "a null pointer");
    if (is_surrogate(scalar) || scalar > LLM_SCALAR_MAX)
        return llm_fail(err, LLM_ERR_UTF8, "tokenizer.utf8_encode", "U+%04X is %s, not a scalar",
                        (unsigned)scalar,
                        is_surrogate(scalar) ? "a surrogate" : "above U+10FFFF");
    length = utf8_length(scalar);
    for (k = length - 1; k > 0; k--) {
        out[k] = (unsigned char)(0x80 | (scalar & 0x3F));
        scalar >>= 6;
    }
    out[0] = (unsigned char)(prefix[length] | scalar);
    *len = length;
    return LLM_OK;
}
static int ascending(const void *a, const void *b)
{
    const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

llm_status llm_scalar_vocab_build(llm_scalar_vocab *vocab, const unsigned char *text,
                                  size_t n, llm_error *err)
{
    const char *stage = "scalar_vocab.build";
    uint32_t *all, *kept;
    size_t count = 0, distinct = 0, i;
    llm_status st;
    if (vocab == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    if ((st = llm_utf8_count(text, n, &count, err)) != LLM_OK)
        return llm_pass(err, st, stage);
    all = llm_malloc((count > 0 ? count : 1) * sizeof *all);  /* count <= n bytes */
    if (all == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, stage, "no memory for %zu scalars", count);
    (void)llm_utf8_decode(text, n, all, count, &count, NULL);
    qsort(all, count, sizeof *all, ascending);
    for (i = 0; i < count; i++)
        if (distinct == 0 || all[i] != all[distinct - 1])
            all[distinct++] = all[i];
    kept = llm_realloc(all, (distinct > 0 ? distinct : 1) * sizeof *all);
    if (kept == NULL) {
        free(all);
        return llm_fail(err, LLM_ERR_ALLOC, stage, "no memory for %zu scalars", distinct);
    }
    vocab->scalars = kept;
    vocab->size = distinct + 1;
    return LLM_OK;
}

void llm_scalar_vocab_free(llm_scalar_vocab *vocab)
{
    if (vocab == NULL)
        return;
    free(vocab->scalars);
    vocab->scalars = NULL;
    vocab->size = 0;
}

size_t llm_scalar_vocab_id(const llm_scalar_vocab *vocab, uint32_t scalar)
{
    size_t lo = 0, hi;
    if (vocab == NULL || vocab->scalars == NULL || vocab->size < 2)
        return LLM_UNK;
    hi = vocab->size - 1;
    while (lo < hi) {                      /* the first position not below scalar */
        const size_t mid = lo + (hi - lo) / 2;
        if (vocab->scalars[mid] < scalar)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < vocab->size - 1 && vocab->scalars[lo] == scalar ? lo + 1 : LLM_UNK;
}

/* LLM_OK when vocab is one that llm_scalar_vocab_build could have made. */
static llm_status vocab_check(const llm_scalar_vocab *vocab, const char *stage,
                              llm_error *err)
{
    size_t k;
    if (vocab == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    if (vocab->size == 0 || (vocab->size > 1 && vocab->scalars == NULL))
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "a vocabulary of %zu IDs %s", vocab->size,
                        vocab->size == 0 ? "lacks even the ID of <UNK>" : "has no scalars");
    for (k = 0; k + 1 < vocab->size; k++)
        if ((k > 0 && vocab->scalars[k] <= vocab->scalars[k - 1])
            || is_surrogate(vocab->scalars[k]) || vocab->scalars[k] > LLM_SCALAR_MAX)
            return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                            "the scalar of ID %zu, U+%04X, is not a scalar above "
                            "the one before it", k + 1, (unsigned)vocab->scalars[k]);
    return LLM_OK;
}

/* The scalar that decoding writes for id (below vocab->size). */
static uint32_t scalar_of(const llm_scalar_vocab *vocab, size_t id)
{
    return id == LLM_UNK ? 0xFFFD : vocab->scalars[id - 1];
}

llm_status llm_scalar_vocab_encode(const llm_scalar_vocab *vocab,
                                   const unsigned char *text, size_t n, size_t *ids,
                                   size_t cap, size_t *count, llm_error *err)
{
    const char *stage = "scalar_vocab.encode";
    size_t total = 0, at, i, len = 0;
    uint32_t u = 0;
    llm_status st;
    if ((st = vocab_check(vocab, stage, err)) != LLM_OK)
        return st;
    if (count == NULL || (ids == NULL && cap > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    if ((st = llm_utf8_count(text, n, &total, err)) != LLM_OK)
        return llm_pass(err, st, stage);
    if (total > cap)
        return llm_fail(err, LLM_ERR_LENGTH, stage, "%zu IDs do not fit in room for %zu",
                        total, cap);
    for (at = 0, i = 0; at < n; at += len, i++) {
        (void)llm_utf8_next(text, n, at, &u, &len, NULL);
        ids[i] = llm_scalar_vocab_id(vocab, u);
    }
    *count = total;
    return LLM_OK;
}

llm_status llm_scalar_vocab_decode(const llm_scalar_vocab *vocab, const size_t *ids,
                                   size_t n, unsigned char *out, size_t cap,
                                   size_t *len, llm_error *err)
{
    const char *stage = "scalar_vocab.decode";
    size_t total = 0, i, k = 0;
    llm_status st;
    if ((st = vocab_check(vocab, stage, err)) != LLM_OK)
        return st;
    if (len == NULL || (ids == NULL && n > 0) || (out == NULL && cap > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    for (i = 0; i < n; i++) {
        if (ids[i] >= vocab->size)
            return llm_fail(err, LLM_ERR_TOKEN, stage,
                            "ID %zu at position %zu is outside the vocabulary of %zu IDs",
                            ids[i], i, vocab->size);
        total += utf8_length(scalar_of(vocab, ids[i]));
    }
    if (total > cap)
        return llm_fail(err, LLM_ERR_LENGTH, stage, "%zu bytes do not fit in room for %zu",
                        total, cap);
    for (i = 0, total = 0; i < n; i++, total += k)
        (void)llm_utf8_encode(scalar_of(vocab, ids[i]), out + total, &k, NULL);
    *len = total;
    return LLM_OK;
}
