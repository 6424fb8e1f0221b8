/* bpe.c -- byte-pair merges: learning them, one replacement, spelling. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer.h"
#include "bpe_rank.h"

size_t llm_bpe_replace(size_t *ids, size_t n, size_t left, size_t right, size_t id)
{
    size_t i = 0, out = 0;
    if (ids == NULL)
        return 0;
    while (i < n) {                      /* out never passes i */
        if (i + 1 < n && ids[i] == left && ids[i + 1] == right) {
            ids[out++] = id;
            i += 2;
        } else {
            ids[out++] = ids[i++];
        }
    }
    return out;
}
typedef struct pair_slot {
    uint64_t key;       /* a * 2^32 + b + 1; 0 when the slot is empty */
    size_t count;
} pair_slot;

/* Counts every adjacent pair of the documents (ids, lens[d] each) into the
   table of mask + 1 slots, whose empty slots are zero; the slots taken are
   listed in used[*nused], so that clearing them costs no more than filling
   them. The best pair's key goes to *best and its count to *best_count (0
   when there is no pair). */
static void count_pairs(const size_t *ids, const size_t *lens, size_t ndocs,
                        pair_slot *table, size_t mask, size_t *used, size_t *nused,
                        uint64_t *best, size_t *best_count)
{
    size_t d, i, at = 0;
    *best = 0;
    *best_count = 0;
    *nused = 0;
    for (d = 0; d < ndocs; at += lens[d], d++)
        for (i = at; i + 1 < at + lens[d]; i++) {
            const uint64_t key = ((uint64_t)ids[i] << 32 | ids[i + 1]) + 1;
            size_t s = (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & mask;
            while (table[s].key != 0 && table[s].key != key)
                s = (s + 1) & mask;
            if (table[s].key == 0) {
                table[s].key = key;
                used[(*nused)++] = s;
            }
            table[s].count++;
            if (table[s].count > *best_count
                || (table[s].count == *best_count && key < *best)) {
                *best = key;
                *best_count = table[s].count;
            }
        }
}
llm_status llm_bpe_learn(llm_bpe *bpe, const llm_bytes *docs, size_t ndocs,
                         size_t rounds, llm_error *err)
{
    const char *stage = "bpe.learn";
    size_t total = 0, slots = 16, d, i, r, at = 0, nused = 0, *ids, *lens, *used;
    pair_slot *table;
    llm_merge *merges;
    if (bpe == NULL || (docs == NULL && ndocs > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    for (d = 0; d < ndocs; d++) {
        if (docs[d].bytes == NULL && docs[d].length > 0)
            return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                            "document %zu has %zu bytes and no pointer to them", d,
                            docs[d].length);
        if (docs[d].length > SIZE_MAX / 64 - total)
            return llm_fail(err, LLM_ERR_OVERFLOW, stage,
                            "the documents hold more bytes than the counts can");
        total += docs[d].length;
    }
    if (rounds > UINT32_MAX - LLM_BYTE_IDS)
        return llm_fail(err, LLM_ERR_OVERFLOW, stage,
                        "%zu rounds would need IDs beyond 32 bits", rounds);
    if (rounds > total)                 /* each merge takes away at least one ID */
        rounds = total;
    while (slots < 2 * total)
        slots *= 2;
    ids = llm_malloc((total > 0 ? total : 1) * sizeof *ids);
    lens = llm_malloc((ndocs > 0 ? ndocs : 1) * sizeof *lens);
    used = llm_malloc((total > 0 ? total : 1) * sizeof *used);
    table = llm_calloc(slots, sizeof *table);
    merges = llm_malloc((rounds > 0 ? rounds : 1) * sizeof *merges);
    if (ids == NULL || lens == NULL || used == NULL || table == NULL || merges == NULL) {
        free(ids);
        free(lens);
        free(used);
        free(table);
        free(merges);
        return llm_fail(err, LLM_ERR_ALLOC, stage, "no memory to learn from %zu bytes", total);
    }
    for (d = 0; d < ndocs; at += docs[d].length, d++) {
        for (i = 0; i < docs[d].length; i++)
            ids[at + i] = docs[d].bytes[i];
        lens[d] = docs[d].length;
    }
    for (r = 0; r < rounds; r++) {
        size_t best_count, from = 0, to = 0;
        uint64_t best;
        llm_merge *m = &merges[r];
        count_pairs(ids, lens, ndocs, table, slots - 1, used, &nused, &best, &best_count);
        for (i = 0; i < nused; i++) {
            table[used[i]].key = 0;
            table[used[i]].count = 0;
        }
        if (best_count == 0)
            break;
        m->left = (size_t)((best - 1) >> 32);
        m->right = (size_t)((best - 1) & 0xFFFFFFFFu);
        m->count = best_count;
        m->uses = 0;
        for (d = 0; d < ndocs; d++) {          /* replace, then close the gap */
            const size_t n = llm_bpe_replace(ids + from, lens[d], m->left, m->right,
                                             LLM_BYTE_IDS + r);
            memmove(ids + to, ids + from, n * sizeof *ids);
            m->uses += lens[d] - n;
            from += lens[d];
            to += n;
            lens[d] = n;
        }
    }
    free(ids);
    free(lens);
    free(used);
    free(table);
    bpe->merges = merges;
    bpe->count = r;
    return LLM_OK;
}

void llm_bpe_free(llm_bpe *bpe)
{
    if (bpe == NULL)
        return;
    free(bpe->merges);
    bpe->merges = NULL;
    bpe->count = 0;
}
llm_status llm_bpe_ranking(const llm_bpe *bpe, const char *stage, llm_error *err)
{
    size_t r;
    if (bpe == NULL || (bpe->merges == NULL && bpe->count > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    for (r = 0; r < bpe->count; r++)
        if (bpe->merges[r].left >= LLM_BYTE_IDS + r || bpe->merges[r].right >= LLM_BYTE_IDS + r)
            return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                            "merge %zu joins IDs %zu and %zu, but may only join IDs below "
                            "%zu: not a ranking", r, bpe->merges[r].left,
                            bpe->merges[r].right, (size_t)LLM_BYTE_IDS + r);
    return LLM_OK;
}

llm_status llm_bpe_spell(const llm_bpe *bpe, size_t id, unsigned char *out, size_t cap,
                         size_t *len, llm_error *err)
{
    const char *stage = "bpe.spell";
    size_t *sizes, *stack, r, top = 0, n = 0;
    llm_status st = llm_bpe_ranking(bpe, stage, err);
    if (st != LLM_OK)
        return st;
    if (len == NULL || (out == NULL && cap > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    if (id >= LLM_BYTE_IDS + bpe->count)
        return llm_fail(err, LLM_ERR_TOKEN, stage,
                        "ID %zu is outside a table of %zu IDs", id,
                        (size_t)LLM_BYTE_IDS + bpe->count);
    if (id < LLM_BYTE_IDS) {
        if (cap < 1)
            return llm_fail(err, LLM_ERR_LENGTH, stage, "1 byte does not fit in room for 0");
        out[0] = (unsigned char)id;
        *len = 1;
        return LLM_OK;
    }
    sizes = llm_malloc((id - LLM_BYTE_IDS + 1) * sizeof *sizes);
    stack = llm_malloc((id - LLM_BYTE_IDS + 2) * sizeof *stack);
    if (sizes == NULL || stack == NULL) {
        free(sizes);
        free(stack);
        return llm_fail(err, LLM_ERR_ALLOC, stage, "no memory to spell ID %zu", id);
    }
    for (r = 0; r <= id - LLM_BYTE_IDS; r++) {   /* bytes of each rank, capped */
        const size_t a = bpe->merges[r].left, b = bpe->merges[r].right;
        const size_t sa = a < LLM_BYTE_IDS ? 1 : sizes[a - LLM_BYTE_IDS];
        const size_t sb = b < LLM_BYTE_IDS ? 1 : sizes[b - LLM_BYTE_IDS];
        sizes[r] = sa > SIZE_MAX - sb ? SIZE_MAX : sa + sb;
    }
    if (sizes[id - LLM_BYTE_IDS] > cap) {
        const size_t need = sizes[id - LLM_BYTE_IDS];
        free(sizes);
        free(stack);
        return llm_fail(err, LLM_ERR_LENGTH, stage, "ID %zu is %zu bytes, room for %zu", id,
                        need, cap);
    }
    stack[top++] = id;
    while (top > 0) {                          /* leftmost first */
        const size_t t = stack[--top];
        if (t < LLM_BYTE_IDS) {
            out[n++] = (unsigned char)t;
        } else {
            stack[top++] = bpe->merges[t - LLM_BYTE_IDS].right;
            stack[top++] = bpe->merges[t - LLM_BYTE_IDS].left;
        }
    }
    *len = n;
    free(sizes);
    free(stack);
    return LLM_OK;
}
