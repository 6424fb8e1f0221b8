/* ch03-learn-bpe-merges -- byte-pair merges learned from training text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/data.h"
#include "llm/evidence.h"
#include "llm/tokenizer.h"

enum { SHOWN = 16 };

static llm_corpus *corpus;

static void release_corpus(void *c)
{
    llm_corpus_free(c);
}

static void release_bpe(void *b)
{
    llm_bpe_free(b);
}

static void nothing(void *p)            /* for owned plain arrays */
{
    (void)p;
}

static void setup(llm_demo *d)
{
    corpus = llm_own(d, sizeof *corpus, release_corpus);
    if (corpus != NULL)
        (void)LLM_TRY(d, llm_corpus_load(corpus, "corpus/corpus.txt", "corpus/splits.txt",
                                         &d->err));
    llm_put(d, "merges", llm_text("%d", LLM_BOOK_MERGES));
}

/* The bytes of ID id as hexadecimal, and as text when they are UTF-8
   (a space shown as ·), else "—". */
static int spelled(llm_demo *d, const llm_bpe *bpe, size_t id, const char **hex,
                   const char **text)
{
    unsigned char b[64];
    size_t len = 0;
    if (!LLM_TRY(d, llm_bpe_spell(bpe, id, b, sizeof b, &len, &d->err)))
        return 0;
    *hex = llm_hex(b, len);
    *text = llm_unit_text(b, len);
    *text = *text != NULL && len > 0 ? *text : "—";
    return 1;
}

/* The documents as lists of IDs, after the merges of bpe applied in rank
   order (the way chapter 4 will encode), as "[256, 97] [97, 98, 97]". */
static const char *documents_after(const llm_bpe *bpe, const char *const *texts, size_t n,
                                   size_t ranks)
{
    char buf[256] = "";
    size_t k, used = 0;
    for (k = 0; k < n; k++) {
        size_t ids[16], len = strlen(texts[k]), r, i;
        for (i = 0; i < len && i < 16; i++)
            ids[i] = (unsigned char)texts[k][i];
        for (r = 0; r < ranks && r < bpe->count; r++)
            len = llm_bpe_replace(ids, len, bpe->merges[r].left, bpe->merges[r].right,
                                  LLM_BYTE_IDS + r);
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", k > 0 ? " " : "",
                                 llm_sizes(ids, len));
    }
    return llm_text("%s", buf);
}
static void learn_texts(llm_demo *d, llm_bpe *bpe, const char *const *texts, size_t n,
                        size_t rounds)
{
    llm_bytes docs[4];
    size_t k;
    for (k = 0; k < n && k < 4; k++) {
        docs[k].bytes = (const unsigned char *)texts[k];
        docs[k].length = strlen(texts[k]);
    }
    (void)LLM_TRY(d, llm_bpe_learn(bpe, docs, n, rounds, &d->err));
}

/* Every adjacent pair of the documents after ranks merges, with its count,
   in the order of the tie rule: "(97, 98)×1 (98, 97)×1 (256, 97)×1". */
static const char *pairs_after(const llm_bpe *bpe, const char *const *texts, size_t n,
                               size_t ranks)
{
    size_t pair[32][3], np = 0, k, i, j;
    char buf[512] = "";
    size_t used = 0;
    for (k = 0; k < n; k++) {
        size_t ids[16], len = strlen(texts[k]), r;
        for (i = 0; i < len && i < 16; i++)
            ids[i] = (unsigned char)texts[k][i];
        for (r = 0; r < ranks; r++)
            len = llm_bpe_replace(ids, len, bpe->merges[r].left, bpe->merges[r].right,
                                  LLM_BYTE_IDS + r);
        for (i = 0; i + 1 < len; i++) {
            for (j = 0; j < np && !(pair[j][0] == ids[i] && pair[j][1] == ids[i + 1]); j++)
                ;
            if (j == np && np < 32) {
                pair[np][0] = ids[i];
                pair[np][1] = ids[i + 1];
                pair[np++][2] = 0;
            }
            if (j < 32)
                pair[j][2]++;
        }
    }
    for (i = 0; i < np; i++)                   /* the tie rule's order */
        for (j = i + 1; j < np; j++)
            if (pair[j][2] > pair[i][2] || (pair[j][2] == pair[i][2]
                && (pair[j][0] < pair[i][0] || (pair[j][0] == pair[i][0]
                                                && pair[j][1] < pair[i][1])))) {
                size_t t[3];
                memcpy(t, pair[i], sizeof t);
                memcpy(pair[i], pair[j], sizeof t);
                memcpy(pair[j], t, sizeof t);
            }
    for (i = 0; i < np; i++)
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s(%zu, %zu)×%zu",
                                 i > 0 ? " " : "", pair[i][0], pair[i][1], pair[i][2]);
    return llm_text("%s", buf);
}

static void fixture(llm_demo *d)
{
    static const char *const texts[2] = {"aaa", "aba"}, *const one_byte[2] = {"a", "b"};
    llm_bpe *bpe = llm_own(d, sizeof *bpe, release_bpe);
    llm_bpe *none = llm_own(d, sizeof *none, release_bpe);
    size_t r;
    if (bpe == NULL || none == NULL)
        return;
    learn_texts(d, bpe, texts, 2, 2);
    if (!d->ok)
        return;
    printf("documents \"aaa\" \"aba\" as bytes: %s\n", documents_after(bpe, texts, 2, 0));
    for (r = 0; r < bpe->count; r++) {
        const llm_merge *m = &bpe->merges[r];
        const char *pair = llm_text("(%zu, %zu)", m->left, m->right);
        printf("round %zu: pairs %s\n", r,
               llm_put(d, llm_text("round%zu_pairs", r), pairs_after(bpe, texts, 2, r)));
        printf("  winner %s count=%s", llm_put(d, llm_text("round%zu_pair", r), pair),
               llm_put(d, llm_text("round%zu_count", r), llm_text("%zu", m->count)));
        printf(" replaced=%s -> ID %zu;", llm_put(d, llm_text("round%zu_uses", r),
                                                 llm_text("%zu", m->uses)), LLM_BYTE_IDS + r);
        printf(" documents %s\n", llm_put(d, llm_text("round%zu_docs", r),
                                          documents_after(bpe, texts, 2, r + 1)));
        llm_row(d, "rounds", llm_text("%zu", r), pair, llm_text("%zu", m->count),
                llm_text("%zu", m->uses), documents_after(bpe, texts, 2, r + 1), NULL);
    }
    learn_texts(d, none, one_byte, 2, 4);
    if (!d->ok)
        return;
    printf("documents \"a\" \"b\": merges=%s (no pair to count)\n",
           llm_put(d, "one_byte_merges", llm_text("%zu", none->count)));
    llm_demo_check(d, bpe->count == 2 && bpe->merges[0].count == 2
                          && bpe->merges[0].uses == 1 && none->count == 0,
                   "the fixture's rounds");
}
static void barrier(llm_demo *d)
{
    static const char *const two[2] = {"ab", "ab"}, *const one[1] = {"abab"};
    llm_bpe *apart = llm_own(d, sizeof *apart, release_bpe);
    llm_bpe *joined = llm_own(d, sizeof *joined, release_bpe);
    size_t k;
    if (apart == NULL || joined == NULL)
        return;
    learn_texts(d, apart, two, 2, 4);
    learn_texts(d, joined, one, 1, 4);
    if (!d->ok)
        return;
    for (k = 0; k < 2; k++) {
        const llm_bpe *b = k == 0 ? apart : joined;
        size_t r;
        printf("%s: merges=%s", k == 0 ? "\"ab\" \"ab\"" : "\"abab\"",
               llm_put(d, k == 0 ? "apart_merges" : "joined_merges", llm_text("%zu", b->count)));
        for (r = 0; r < b->count; r++)
            printf(" (%zu, %zu)×%zu", b->merges[r].left, b->merges[r].right,
                   b->merges[r].count);
        printf("; documents %s\n", k == 0 ? documents_after(b, two, 2, b->count)
                                          : documents_after(b, one, 1, b->count));
    }
    llm_demo_check(d, apart->count == 1 && joined->count == 2,
                   "a pair never joins two documents");
}
static void book(llm_demo *d)
{
    llm_bytes *docs = llm_own(d, (corpus->count + 1) * sizeof *docs, nothing);
    llm_bpe *bpe = llm_own(d, sizeof *bpe, release_bpe);
    size_t n = 0, bytes = 0, i, r, tokens, replaced = 0, longest = 0, longest_len = 0;
    size_t *ids, *lens;
    if (docs == NULL || bpe == NULL)
        return;
    if (!LLM_TRY(d, llm_corpus_bytes(corpus, LLM_TRAIN, docs, corpus->count, &n, &d->err)))
        return;
    for (i = 0; i < n; i++)
        bytes += docs[i].length;
    if (!LLM_TRY(d, llm_bpe_learn(bpe, docs, n, LLM_BOOK_MERGES, &d->err)))
        return;
    printf("training documents=%s bytes=%s merges=%zu\n",
           llm_put(d, "train_docs", llm_text("%zu", n)),
           llm_put(d, "train_bytes", llm_text("%zu", bytes)), bpe->count);
    for (r = 0; r < bpe->count; r++) {
        const char *hex, *text;
        const llm_merge *m = &bpe->merges[r];
        unsigned char b[64];
        size_t len = 0;
        replaced += m->uses;
        if (r < SHOWN) {
            if (!spelled(d, bpe, LLM_BYTE_IDS + r, &hex, &text))
                return;
            printf("rank %2zu: ID %zu = (%zu, %zu) bytes [%s] %s count=%zu replaced=%zu\n", r,
                   LLM_BYTE_IDS + r, m->left, m->right, hex, text, m->count, m->uses);
            llm_row(d, "merges", llm_text("%zu", r), llm_text("%zu", LLM_BYTE_IDS + r),
                    llm_text("(%zu, %zu)", m->left, m->right), hex, text,
                    llm_text("%zu", m->count), llm_text("%zu", m->uses), NULL);
            if (r == 0) {
                llm_put(d, "first_pair", llm_text("(%zu, %zu)", m->left, m->right));
                llm_put(d, "first_hex", hex);
                llm_put(d, "first_count", llm_text("%zu", m->count));
            }
        }
        if (llm_bpe_spell(bpe, LLM_BYTE_IDS + r, b, sizeof b, &len, NULL) == LLM_OK
            && len > longest_len) {
            longest = r;
            longest_len = len;
        }
    }
    {
        const char *hex, *text;
        if (!spelled(d, bpe, LLM_BYTE_IDS + longest, &hex, &text))
            return;
        printf("longest: rank %s, %s bytes: %s\n",
               llm_put(d, "longest_rank", llm_text("%zu", longest)),
               llm_put(d, "longest_bytes", llm_text("%zu", longest_len)),
               llm_put(d, "longest_text", text));
    }
    ids = llm_own(d, (bytes + 1) * sizeof *ids, nothing);     /* the replay */
    lens = llm_own(d, (n + 1) * sizeof *lens, nothing);
    if (ids == NULL || lens == NULL)
        return;
    for (i = 0, tokens = 0; i < n; i++) {
        size_t k;
        for (k = 0; k < docs[i].length; k++)
            ids[tokens + k] = docs[i].bytes[k];
        tokens += docs[i].length;
        lens[i] = docs[i].length;
    }
    llm_row(d, "shrink", "0", llm_text("%zu", bytes), NULL);
    for (r = 0; r < bpe->count; r++) {
        size_t from = 0, to = 0;
        for (i = 0; i < n; i++) {
            const size_t len = llm_bpe_replace(ids + from, lens[i], bpe->merges[r].left,
                                               bpe->merges[r].right, LLM_BYTE_IDS + r);
            memmove(ids + to, ids + from, len * sizeof *ids);
            from += lens[i];
            to += len;
            lens[i] = len;
        }
        tokens = to;
        if ((r + 1) % 8 == 0)
            llm_row(d, "shrink", llm_text("%zu", r + 1), llm_text("%zu", tokens), NULL);
    }
    printf("IDs after %zu merges: %s, %s per byte\n", bpe->count,
           llm_put(d, "tokens_after", llm_text("%zu", tokens)),
           llm_put(d, "per_byte", llm_num((double)tokens / (double)bytes, 3)));
    llm_demo_check(d, n == corpus->in[LLM_TRAIN], "only the training documents were read");
    llm_demo_check(d, tokens == bytes - replaced,
                   "the replay ends at the bytes less every replacement");
}
static void exercise_answers(llm_demo *d)
{
    static const char *const abcabc[1] = {"abcabc"}, *const abba[2] = {"ab", "ba"};
    llm_bpe *one = llm_own(d, sizeof *one, release_bpe);
    llm_bpe *two = llm_own(d, sizeof *two, release_bpe);
    size_t r;
    if (one == NULL || two == NULL)
        return;
    learn_texts(d, one, abcabc, 1, 2);
    learn_texts(d, two, abba, 2, 1);
    if (!d->ok || !llm_demo_check(d, one->count == 2 && two->count == 1,
                                  "the exercises' merges"))
        return;
    llm_put(d, "ex1_pairs0", pairs_after(one, abcabc, 1, 0));
    for (r = 0; r < 2; r++) {
        llm_put(d, llm_text("ex1_pair%zu", r),
                llm_text("(%zu, %zu)", one->merges[r].left, one->merges[r].right));
        llm_put(d, llm_text("ex1_count%zu", r), llm_text("%zu", one->merges[r].count));
        llm_put(d, llm_text("ex1_docs%zu", r), documents_after(one, abcabc, 1, r + 1));
    }
    llm_put(d, "ex3_pair", llm_text("(%zu, %zu)", two->merges[0].left, two->merges[0].right));
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {fixture, barrier, book, exercise_answers,
                                            NULL};
    return llm_demo_main(argc, argv, "ch03-learn-bpe-merges", setup, sections);
}
