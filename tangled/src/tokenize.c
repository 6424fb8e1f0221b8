/* tokenize.c -- the frozen tokenizer: encoding, wrapping, decoding. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer.h"
#include "bpe_rank.h"

llm_status llm_tokenizer_init(llm_tokenizer *tok, const llm_bpe *bpe, llm_error *err)
{
    const char *stage = "tokenizer.init";
    llm_tokenizer t;
    size_t r, q, v, total = LLM_BYTE_IDS, *bytes;
    llm_status st;
    if (tok == NULL || bpe == NULL || (bpe->merges == NULL && bpe->count > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    if (bpe->count > SIZE_MAX / sizeof(size_t) - LLM_CONTROLS - LLM_BYTE_IDS - 1)
        return llm_fail(err, LLM_ERR_OVERFLOW, stage, "%zu merges are too many", bpe->count);
    if ((st = llm_bpe_ranking(bpe, stage, err)) != LLM_OK)
        return st;
    for (r = 0; r < bpe->count; r++) {
        const llm_merge *m = &bpe->merges[r];
        for (q = 0; q < r; q++)
            if (bpe->merges[q].left == m->left && bpe->merges[q].right == m->right)
                return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                                "merge %zu repeats the pair (%zu, %zu) of merge %zu", r,
                                m->left, m->right, q);
    }
    memset(&t, 0, sizeof t);
    t.vocab = LLM_CONTROLS + LLM_BYTE_IDS + bpe->count;
    bytes = llm_malloc((LLM_BYTE_IDS + bpe->count) * sizeof *bytes);
    if (bytes == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, stage, "no memory for %zu IDs", t.vocab);
    for (v = 0; v < LLM_BYTE_IDS + bpe->count; v++) {     /* the bytes of each ID */
        const llm_merge *m = &bpe->merges[v < LLM_BYTE_IDS ? 0 : v - LLM_BYTE_IDS];
        bytes[v] = v < LLM_BYTE_IDS ? 1 : bytes[m->left] + bytes[m->right];
        if (v >= LLM_BYTE_IDS && (bytes[v] < bytes[m->left] || bytes[v] > SIZE_MAX - total)) {
            free(bytes);
            return llm_fail(err, LLM_ERR_OVERFLOW, stage,
                            "the spellings of %zu merges are too long", bpe->count);
        }
        if (v >= LLM_BYTE_IDS)
            total += bytes[v];
    }
    t.bpe.count = bpe->count;
    t.bpe.merges = llm_malloc((bpe->count > 0 ? bpe->count : 1) * sizeof *t.bpe.merges);
    t.start = llm_malloc((t.vocab + 1) * sizeof *t.start);
    t.spelling = llm_malloc(total);
    if (t.bpe.merges == NULL || t.start == NULL || t.spelling == NULL) {
        free(bytes);
        free(t.bpe.merges);
        free(t.start);
        free(t.spelling);
        return llm_fail(err, LLM_ERR_ALLOC, stage, "no memory for %zu IDs", t.vocab);
    }
    if (bpe->count > 0)
        memcpy(t.bpe.merges, bpe->merges, bpe->count * sizeof *t.bpe.merges);
    t.start[0] = t.start[1] = t.start[2] = 0;            /* BOS and EOS: no bytes */
    for (v = 0; v < LLM_BYTE_IDS + bpe->count; v++) {
        unsigned char *at = t.spelling + t.start[v + LLM_CONTROLS];
        if (v < LLM_BYTE_IDS) {
            at[0] = (unsigned char)v;
        } else {                                   /* left's bytes, then right's */
            const llm_merge *m = &bpe->merges[v - LLM_BYTE_IDS];
            const size_t left = m->left + LLM_CONTROLS, right = m->right + LLM_CONTROLS;
            memcpy(at, t.spelling + t.start[left], bytes[m->left]);
            memcpy(at + bytes[m->left], t.spelling + t.start[right], bytes[m->right]);
        }
        t.start[v + LLM_CONTROLS + 1] = t.start[v + LLM_CONTROLS] + bytes[v];
    }
    free(bytes);
    *tok = t;
    return LLM_OK;
}

void llm_tokenizer_free(llm_tokenizer *tok)
{
    if (tok == NULL)
        return;
    llm_bpe_free(&tok->bpe);
    free(tok->spelling);
    free(tok->start);
    memset(tok, 0, sizeof *tok);
}
/* LLM_OK when tok is one that llm_tokenizer_init made. */
static llm_status tokenizer_check(const llm_tokenizer *tok, const char *stage, llm_error *err)
{
    if (tok == NULL || tok->start == NULL || tok->spelling == NULL
        || (tok->bpe.merges == NULL && tok->bpe.count > 0)
        || tok->vocab != LLM_CONTROLS + LLM_BYTE_IDS + tok->bpe.count)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "a tokenizer that llm_tokenizer_init did not make");
    return LLM_OK;
}

static llm_status encode_into(const llm_tokenizer *tok, const unsigned char *bytes, size_t n,
                              size_t *ids, size_t cap, size_t *count, int wrap,
                              const char *stage, llm_error *err)
{
    const size_t extra = wrap ? 2 : 0;
    size_t *work, len = n, r, i;
    llm_status st = tokenizer_check(tok, stage, err);
    if (st != LLM_OK)
        return st;
    if (count == NULL || (bytes == NULL && n > 0) || (ids == NULL && cap > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    if (n > SIZE_MAX / sizeof *work - extra)
        return llm_fail(err, LLM_ERR_LENGTH, stage, "%zu bytes are too many to encode", n);
    work = llm_malloc((n > 0 ? n : 1) * sizeof *work);
    if (work == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, stage, "no memory to encode %zu bytes", n);
    for (i = 0; i < n; i++)
        work[i] = bytes[i];
    for (r = 0; r < tok->bpe.count && len >= 2; r++)
        len = llm_bpe_replace(work, len, tok->bpe.merges[r].left, tok->bpe.merges[r].right,
                              LLM_BYTE_IDS + r);
    if (len + extra > cap) {
        free(work);
        return llm_fail(err, LLM_ERR_LENGTH, stage, "%zu IDs do not fit in room for %zu",
                        len + extra, cap);
    }
    if (wrap)
        ids[0] = LLM_BOS;
    for (i = 0; i < len; i++)
        ids[i + (wrap ? 1 : 0)] = work[i] + LLM_CONTROLS;
    if (wrap)
        ids[len + 1] = LLM_EOS;
    *count = len + extra;
    free(work);
    return LLM_OK;
}

llm_status llm_tokenizer_encode(const llm_tokenizer *tok, const unsigned char *bytes,
                                size_t n, size_t *ids, size_t cap, size_t *count,
                                llm_error *err)
{
    return encode_into(tok, bytes, n, ids, cap, count, 0, "tokenizer.encode", err);
}

llm_status llm_tokenizer_encode_document(const llm_tokenizer *tok, const unsigned char *bytes,
                                         size_t n, size_t *ids, size_t cap, size_t *count,
                                         llm_error *err)
{
    return encode_into(tok, bytes, n, ids, cap, count, 1, "tokenizer.encode_document", err);
}
/* Decodes ids[0..n-1], content whose first ID is at position first of the
   caller's list. */
static llm_status decode_into(const llm_tokenizer *tok, const size_t *ids, size_t n,
                              size_t first, unsigned char *out, size_t cap, size_t *len,
                              const char *stage, llm_error *err)
{
    size_t total = 0, i;
    for (i = 0; i < n; i++) {
        const size_t v = ids[i];
        if (v < LLM_CONTROLS)
            return llm_fail(err, LLM_ERR_TOKEN, stage, "position %zu holds %s inside the content",
                            first + i, v == LLM_BOS ? "BOS" : "EOS");
        if (v >= tok->vocab)
            return llm_fail(err, LLM_ERR_TOKEN, stage,
                            "position %zu holds ID %zu, outside the vocabulary of %zu",
                            first + i, v, tok->vocab);
        total += tok->start[v + 1] - tok->start[v];
    }
    if (total > cap)
        return llm_fail(err, LLM_ERR_LENGTH, stage, "%zu bytes do not fit in room for %zu",
                        total, cap);
    for (i = 0, total = 0; i < n; i++) {
        const size_t bytes = tok->start[ids[i] + 1] - tok->start[ids[i]];
        memcpy(out + total, tok->spelling + tok->start[ids[i]], bytes);
        total += bytes;
    }
    *len = total;
    return LLM_OK;
}

/* What both decoders check first: a tokenizer llm_tokenizer_init made,
   and the pointers. */
static llm_status decode_check(const llm_tokenizer *tok, const size_t *ids, size_t n,
                               const unsigned char *out, size_t cap, const size_t *len,
                               const char *stage, llm_error *err)
{
    llm_status st = tokenizer_check(tok, stage, err);
    if (st != LLM_OK)
        return st;
    if (len == NULL || (ids == NULL && n > 0) || (out == NULL && cap > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    return LLM_OK;
}

llm_status llm_tokenizer_decode(const llm_tokenizer *tok, const size_t *ids, size_t n,
                                unsigned char *out, size_t cap, size_t *len,
                                llm_error *err)
{
    const char *stage = "tokenizer.decode";
    llm_status st = decode_check(tok, ids, n, out, cap, len, stage, err);
    if (st != LLM_OK)
        return st;
    return decode_into(tok, ids, n, 0, out, cap, len, stage, err);
}

llm_status llm_tokenizer_decode_document(const llm_tokenizer *tok, const size_t *ids,
                                         size_t n, unsigned char *out, size_t cap,
                                         size_t *len, llm_error *err)
{
    const char *stage = "tokenizer.decode_document";
    llm_status st = decode_check(tok, ids, n, out, cap, len, stage, err);
    if (st != LLM_OK)
        return st;
    if (n < 2 || ids[0] != LLM_BOS || ids[n - 1] != LLM_EOS)
        return llm_fail(err, LLM_ERR_TOKEN, stage,
                        n < 2 ? "a document of %zu IDs has no room for BOS and EOS"
                        : ids[0] != LLM_BOS ? "position 0 holds ID %zu, not BOS"
                                            : "the last position holds ID %zu, not EOS",
                        n < 2 ? n : ids[0] != LLM_BOS ? ids[0] : ids[n - 1]);
    return decode_into(tok, ids + 1, n - 2, 1, out, cap, len, stage, err);
}
