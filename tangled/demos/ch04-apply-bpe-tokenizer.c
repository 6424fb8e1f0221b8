/* ch04-apply-bpe-tokenizer -- the frozen tokenizer: layout, encoding,
   documents, exact decoding. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/data.h"
#include "llm/evidence.h"
#include "llm/tokenizer.h"

static llm_corpus *corpus;
static llm_tokenizer *tok;

static void nothing(void *p)
{
    (void)p;
}

/* The book's tokenizer: chapter 3's table, learned from the training
   documents and frozen. */
static void setup(llm_demo *d)
{
    corpus = llm_own_corpus(d);
    tok = llm_own_book_tokenizer(d, corpus);
    llm_put(d, "merges", llm_text("%d", LLM_BOOK_MERGES));
}

static const unsigned char *bytes_of(const char *s)
{
    return (const unsigned char *)s;
}
static void layout(llm_demo *d)
{
    static const char *const texts[3] = {"A", "At", "\xF0\x9F\xA6\x80"};
    static const char *const names[3] = {"\"A\"", "\"At\"", "U+1F980, a crab"};
    static const char *const keys[3] = {"a", "at", "crab"};
    size_t ids[16], n = 0, k;
    printf("vocabulary=%s BOS=%d EOS=%d bytes=2..257 merges=258..%zu\n",
           llm_put(d, "vocab", llm_text("%zu", tok->vocab)), LLM_BOS, LLM_EOS,
           tok->vocab - 1);
    for (k = 0; k < 3; k++) {
        if (!LLM_TRY(d, llm_tokenizer_encode(tok, bytes_of(texts[k]), strlen(texts[k]), ids, 16,
                                             &n, &d->err)))
            return;
        printf("encode %s (%s) -> %s\n", names[k], llm_hex(bytes_of(texts[k]), strlen(texts[k])),
               llm_put(d, llm_text("%s_ids", keys[k]), llm_sizes(ids, n)));
    }
}
static void fixtures(llm_demo *d)
{
    static const unsigned char ff_fe[2] = {0xFF, 0xFE};
    const unsigned char *space_a = bytes_of(" \xD0\xB0");           /* " а" */
    const size_t other[2] = {' ' + LLM_CONTROLS, LLM_CONTROLS + LLM_BYTE_IDS + 1};
    size_t ids[16], n = 0, again[16], m = 0, scalars = 0, len = 0;
    unsigned char back[16];
    llm_status utf8;
    if (!(LLM_TRY(d, llm_tokenizer_encode_document(tok, NULL, 0, ids, 16, &n, &d->err))
          && LLM_TRY(d, llm_tokenizer_decode_document(tok, ids, n, back, sizeof back, &len,
                                                      &d->err))))
        return;
    printf("empty document -> %s, decoded to %zu bytes\n",
           llm_put(d, "empty_doc", llm_sizes(ids, n)), len);
    if (!(LLM_TRY(d, llm_tokenizer_encode(tok, ff_fe, 2, ids, 16, &n, &d->err))
          && LLM_TRY(d, llm_tokenizer_decode(tok, ids, n, back, sizeof back, &len, &d->err))))
        return;
    utf8 = llm_utf8_count(back, len, &scalars, &d->err);
    printf("FF FE -> %s -> %s; UTF-8 check: %s\n", llm_put(d, "fffe_ids", llm_sizes(ids, n)),
           llm_put(d, "fffe_back", llm_hex(back, len)),
           llm_put(d, "fffe_utf8", utf8 == LLM_OK ? "passes" : d->err.message));
    llm_demo_check(d, len == 2 && memcmp(back, ff_fe, 2) == 0 && utf8 == LLM_ERR_UTF8,
                   "FF FE round-trips and fails UTF-8");
    if (!(LLM_TRY(d, llm_tokenizer_encode(tok, space_a, 3, ids, 16, &n, &d->err))
          && LLM_TRY(d, llm_tokenizer_encode_document(tok, space_a, 3, again, 16, &m, &d->err))))
        return;
    printf("\" а\" (20 D0 B0) -> content %s, document %s\n",
           llm_put(d, "space_a_ids", llm_sizes(ids, n)),
           llm_put(d, "space_a_doc", llm_sizes(again, m)));
    if (!(LLM_TRY(d, llm_tokenizer_decode(tok, other, 2, back, sizeof back, &len, &d->err))
          && LLM_TRY(d, llm_tokenizer_encode(tok, back, len, again, 16, &m, &d->err))))
        return;
    printf("%s -> %s -> %s\n", llm_put(d, "other_ids", llm_sizes(other, 2)),
           llm_put(d, "other_back", llm_hex(back, len)),
           llm_put(d, "other_again", llm_sizes(again, m)));
    llm_demo_check(d, len == 3 && memcmp(back, space_a, 3) == 0 && m == n
                          && memcmp(again, ids, n * sizeof *ids) == 0,
                   "the other spelling decodes to the same bytes and encodes canonically");
}
static void refusals(llm_demo *d)
{
    const size_t bos_inside[3] = {100, 0, 101};
    size_t unknown[2] = {100, 0};
    const size_t eos_inside[5] = {0, 100, 1, 101, 1}, no_bos[3] = {100, 101, 1};
    const size_t word[3] = {0, 70, 1};
    llm_merge loop[1] = {{256, 97, 1, 1}}, twice[2] = {{97, 98, 1, 1}, {97, 98, 1, 1}};
    const llm_bpe not_ranked = {loop, 1}, repeated = {twice, 2};
    llm_tokenizer t, mark;
    unsigned char out[8];
    size_t len = 77, ids[4], n = 77;
    int untouched;
    unknown[1] = tok->vocab;                     /* one past the last ID */
    memset(out, 0x5a, sizeof out);
    llm_refuse_as(d, "decode [100, 0, 101]",
                  llm_tokenizer_decode(tok, bos_inside, 3, out, sizeof out, &len, &d->err),
                  LLM_ERR_TOKEN);
    printf("  %s\n", llm_put(d, "bos_message", d->err.message));
    llm_refuse_as(d, llm_text("decode [100, %zu]", unknown[1]),
                  llm_tokenizer_decode(tok, unknown, 2, out, sizeof out, &len, &d->err),
                  LLM_ERR_TOKEN);
    printf("  %s\n", llm_put(d, "unknown_message", d->err.message));
    llm_refuse_as(d, "decode the document [0, 100, 1, 101, 1]",
                  llm_tokenizer_decode_document(tok, eos_inside, 5, out, sizeof out, &len,
                                                &d->err), LLM_ERR_TOKEN);
    printf("  %s\n", llm_put(d, "eos_message", d->err.message));
    llm_refuse_as(d, "decode the document [100, 101, 1]",
                  llm_tokenizer_decode_document(tok, no_bos, 3, out, sizeof out, &len,
                                                &d->err), LLM_ERR_TOKEN);
    llm_refuse_as(d, "decode [0, 70, 1] into 0 bytes",
                  llm_tokenizer_decode_document(tok, word, 3, out, 0, &len, &d->err),
                  LLM_ERR_LENGTH);
    llm_refuse_as(d, "encode \"cat\" into room for 2 IDs",
                  llm_tokenizer_encode_document(tok, bytes_of("cat"), 3, ids, 2, &n, &d->err),
                  LLM_ERR_LENGTH);
    memset(&mark, 0x5a, sizeof mark);
    t = mark;
    llm_refuse_as(d, "a merge that joins itself", llm_tokenizer_init(&t, &not_ranked, &d->err),
                  LLM_ERR_ARGUMENT);
    llm_refuse_as(d, "a pair merged twice", llm_tokenizer_init(&t, &repeated, &d->err),
                  LLM_ERR_ARGUMENT);
    printf("  %s\n", d->err.message);
    untouched = out[0] == 0x5a && out[7] == 0x5a && len == 77 && n == 77
                && memcmp(&t, &mark, sizeof t) == 0;
    printf("refused calls wrote nothing: %s\n", llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "refused calls wrote nothing");
}
/* The units of the first sentence of document k, as trace rows: the
   language, the unit's number, its text (a space as ·) or its bytes when
   they are not whole UTF-8, and its ID. */
static void pieces(llm_demo *d, const llm_corpus_doc *doc, const size_t *ids, size_t n)
{
    const unsigned char *dot = memchr(doc->text, '.', doc->length);
    const size_t sentence = dot != NULL ? (size_t)(dot - doc->text) + 1 : doc->length;
    size_t i, at = 0;
    for (i = 1; i + 1 < n && at < sentence; i++) {
        const unsigned char *b = tok->spelling + tok->start[ids[i]];
        const size_t len = tok->start[ids[i] + 1] - tok->start[ids[i]];
        const char *unit = llm_unit_text(b, len);
        const int whole = unit != NULL && len < 30;
        const char *text = whole ? unit : llm_hex(b, len);
        llm_row(d, "pieces", doc->lang, llm_text("%zu", i), text,
                llm_text("%zu", ids[i]), llm_yes(whole), NULL);
        at += len;
    }
}

static void whole_corpus(llm_demo *d)
{
    static const char *const key[2] = {"train", "val"};
    size_t tokens[2] = {0, 0}, docs[2] = {0, 0}, bytes[2] = {0, 0}, i, room = 0;
    size_t *ids, *again;
    unsigned char *back;
    int exact = 1, canonical = 1, shown = 0;
    for (i = 0; i < corpus->count; i++)
        room = corpus->docs[i].length > room ? corpus->docs[i].length : room;
    ids = llm_own(d, (room + 2) * sizeof *ids, nothing);
    again = llm_own(d, (room + 2) * sizeof *again, nothing);
    back = llm_own(d, room + 1, nothing);
    if (ids == NULL || again == NULL || back == NULL)
        return;
    for (i = 0; i < corpus->count; i++) {
        const llm_corpus_doc *doc = &corpus->docs[i];
        const int p = doc->partition == LLM_TRAIN ? 0 : doc->partition == LLM_VALIDATION ? 1 : -1;
        size_t n = 0, m = 0, len = 0;
        if (p < 0)
            continue;                            /* the test documents wait */
        if (!(LLM_TRY(d, llm_tokenizer_encode_document(tok, doc->text, doc->length, ids,
                                                       room + 2, &n, &d->err))
              && LLM_TRY(d, llm_tokenizer_decode_document(tok, ids, n, back, room + 1, &len,
                                                          &d->err))
              && LLM_TRY(d, llm_tokenizer_encode_document(tok, back, len, again, room + 2, &m,
                                                          &d->err))))
            return;
        exact = exact && len == doc->length && memcmp(back, doc->text, len) == 0;
        canonical = canonical && m == n && memcmp(again, ids, n * sizeof *ids) == 0;
        tokens[p] += n;
        docs[p]++;
        bytes[p] += doc->length;
        if (shown < 2 && strstr(doc->id, "-01-") != NULL) {
            pieces(d, doc, ids, n);
            shown++;
        }
    }
    for (i = 0; i < 2; i++) {
        printf("%s: documents=%zu bytes=%zu IDs with BOS and EOS=%s\n",
               llm_partition_name(i == 0 ? LLM_TRAIN : LLM_VALIDATION), docs[i], bytes[i],
               llm_put(d, llm_text("%s_ids", key[i]), llm_text("%zu", tokens[i])));
        llm_put(d, llm_text("%s_docs", key[i]), llm_text("%zu", docs[i]));
    }
    printf("test: not encoded\n");
    printf("every document decodes to its bytes: %s; encodes again to the same IDs: %s\n",
           llm_put(d, "exact", llm_yes(exact)), llm_put(d, "canonical", llm_yes(canonical)));
    llm_demo_check(d, exact && canonical, "decoding gives back every byte, canonically");
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {layout, fixtures, refusals, whole_corpus, NULL};
    return llm_demo_main(argc, argv, "ch04-apply-bpe-tokenizer", setup, sections);
}
