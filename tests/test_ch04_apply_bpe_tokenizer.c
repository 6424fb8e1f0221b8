/* Chapter 4: the frozen tokenizer. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/data.h"
#include "llm/error.h"
#include "llm/tokenizer.h"
#include "support.h"

/* The book's tokenizer: 256 merges from the corpus's training documents. */
static void book_tokenizer(llm_tokenizer *tok)
{
    llm_corpus c;
    llm_bytes docs[64];
    llm_bpe bpe;
    size_t n = 0;
    ck_assert_int_eq(llm_corpus_load(&c, "corpus/corpus.txt", "corpus/splits.txt", NULL), LLM_OK);
    ck_assert_int_eq(llm_corpus_bytes(&c, LLM_TRAIN, docs, 64, &n, NULL), LLM_OK);
    ck_assert_int_eq(llm_bpe_learn(&bpe, docs, n, LLM_BOOK_MERGES, NULL), LLM_OK);
    ck_assert_int_eq(llm_tokenizer_init(tok, &bpe, NULL), LLM_OK);
    llm_bpe_free(&bpe);
    llm_corpus_free(&c);
}

static void encode(const llm_tokenizer *tok, const char *s, size_t n, size_t *ids,
                   size_t *count)
{
    ck_assert_int_eq(llm_tokenizer_encode(tok, (const unsigned char *)s, n, ids, 64, count, NULL),
                     LLM_OK);
}

START_TEST(the_course_fixtures_where_the_corpus_does_not_enter)
{
    llm_tokenizer tok;
    size_t ids[64], n = 0, len = 0;
    unsigned char back[8];
    book_tokenizer(&tok);
    ck_assert_uint_eq(tok.vocab, 258 + LLM_BOOK_MERGES);
    ck_assert_int_eq(llm_tokenizer_encode_document(&tok, NULL, 0, ids, 64, &n, NULL), LLM_OK);
    ck_assert(n == 2 && ids[0] == LLM_BOS && ids[1] == LLM_EOS);
    encode(&tok, "\xFF\xFE", 2, ids, &n);
    ck_assert(n == 2 && ids[0] == 257 && ids[1] == 256);
    ck_assert_int_eq(llm_tokenizer_decode(&tok, ids, n, back, sizeof back, &len, NULL), LLM_OK);
    ck_assert(len == 2 && back[0] == 0xFF && back[1] == 0xFE);
    encode(&tok, "\xF0\x9F\xA6\x80", 4, ids, &n);                      /* 🦀 */
    ck_assert(n == 4 && ids[0] == 242 && ids[1] == 161 && ids[2] == 168 && ids[3] == 130);
    encode(&tok, "A", 1, ids, &n);
    ck_assert(n == 1 && ids[0] == 67);
    llm_tokenizer_free(&tok);
    ck_assert(tok.vocab == 0 && tok.spelling == NULL);
    llm_tokenizer_free(NULL);
}
END_TEST

/* Two merges, (32, 208) and (208, 176): " а" is [258, 178], and the other
   spelling [34, 259] decodes to the same bytes and encodes back
   canonically. */
START_TEST(a_non_canonical_spelling_reencodes_canonically)
{
    llm_merge m[2] = {{32, 208, 1, 1}, {208, 176, 1, 1}};
    const llm_bpe bpe = {m, 2};
    const size_t other[2] = {34, 259};
    llm_tokenizer tok;
    size_t ids[64], n = 0, len = 0, doc[8];
    unsigned char back[8];
    ck_assert_int_eq(llm_tokenizer_init(&tok, &bpe, NULL), LLM_OK);
    ck_assert_uint_eq(tok.vocab, 260);
    encode(&tok, " \xD0\xB0", 3, ids, &n);
    ck_assert(n == 2 && ids[0] == 258 && ids[1] == 178);
    ck_assert_int_eq(llm_tokenizer_encode_document(&tok, (const unsigned char *)" \xD0\xB0", 3,
                                                   doc, 8, &n, NULL), LLM_OK);
    ck_assert(n == 4 && doc[0] == 0 && doc[1] == 258 && doc[2] == 178 && doc[3] == 1);
    ck_assert_int_eq(llm_tokenizer_decode(&tok, other, 2, back, sizeof back, &len, NULL), LLM_OK);
    ck_assert(len == 3 && memcmp(back, " \xD0\xB0", 3) == 0);
    encode(&tok, (const char *)back, len, ids, &n);
    ck_assert(n == 2 && ids[0] == 258 && ids[1] == 178);
    llm_tokenizer_free(&tok);
}
END_TEST

/* Seeded random byte strings, every byte value possible: decoding gives
   the bytes back, and encoding the decoded bytes gives the same IDs. */
START_TEST(random_byte_strings_round_trip)
{
    llm_tokenizer tok;
    uint64_t s = 0xC0FFEE;
    size_t trial;
    book_tokenizer(&tok);
    for (trial = 0; trial < 4000; trial++) {
        unsigned char text[48], back[48];
        size_t ids[64], again[64], n = 0, m = 0, len = 0, i, length;
        s = s * 6364136223846793005u + 1442695040888963407u;
        length = (size_t)(s >> 33) % 48;
        for (i = 0; i < length; i++) {         /* bytes of the corpus's alphabet, or any */
            s = s * 6364136223846793005u + 1442695040888963407u;
            text[i] = (s >> 62) == 0 ? (unsigned char)(s >> 24)
                                     : (unsigned char)" etaonsr\xD0\xD1\xB0\xBE\xB5\x82"[(s >> 40) % 14];
        }
        ck_assert_int_eq(llm_tokenizer_encode_document(&tok, text, length, ids, 64, &n, NULL),
                         LLM_OK);
        ck_assert(n >= 2 && n <= length + 2 && ids[0] == LLM_BOS && ids[n - 1] == LLM_EOS);
        for (i = 1; i + 1 < n; i++)
            ck_assert(ids[i] >= LLM_CONTROLS && ids[i] < tok.vocab);
        ck_assert_int_eq(llm_tokenizer_decode_document(&tok, ids, n, back, sizeof back, &len,
                                                       NULL), LLM_OK);
        ck_assert(len == length && memcmp(back, text, len) == 0);
        ck_assert_int_eq(llm_tokenizer_encode_document(&tok, back, len, again, 64, &m, NULL),
                         LLM_OK);
        ck_assert(m == n && memcmp(again, ids, n * sizeof *ids) == 0);
    }
    llm_tokenizer_free(&tok);
}
END_TEST

START_TEST(controls_and_unknown_ids_are_refused_with_their_position)
{
    llm_tokenizer tok;
    const size_t bos[3] = {100, 101, 0}, big[2] = {100, 600}, inner[4] = {0, 100, 1, 1};
    const size_t no_eos[2] = {0, 100}, no_bos[2] = {100, 1}, one[1] = {0}, fine[3] = {0, 70, 1};
    unsigned char out[8];
    size_t len = 77;
    llm_error err;
    book_tokenizer(&tok);
    mark_bytes(out, sizeof out);
    REFUSED(llm_tokenizer_decode(&tok, bos, 3, out, sizeof out, &len, &err), LLM_ERR_TOKEN,
            "tokenizer.decode");
    ck_assert_str_eq(err.message, "position 2 holds BOS inside the content");
    REFUSED(llm_tokenizer_decode(&tok, big, 2, out, sizeof out, &len, &err), LLM_ERR_TOKEN,
            "tokenizer.decode");
    ck_assert_ptr_nonnull(strstr(err.message, "position 1 holds ID 600"));
    {                                        /* the first ID past the last */
        const size_t edge[2] = {100, tok.vocab};
        REFUSED(llm_tokenizer_decode(&tok, edge, 2, out, sizeof out, &len, &err),
                LLM_ERR_TOKEN, "tokenizer.decode");
    }
    REFUSED(llm_tokenizer_decode_document(&tok, inner, 4, out, sizeof out, &len, &err),
            LLM_ERR_TOKEN, "tokenizer.decode_document");
    ck_assert_str_eq(err.message, "position 2 holds EOS inside the content");
    REFUSED(llm_tokenizer_decode_document(&tok, no_eos, 2, out, sizeof out, &len, &err),
            LLM_ERR_TOKEN, "tokenizer.decode_document");
    REFUSED(llm_tokenizer_decode_document(&tok, no_bos, 2, out, sizeof out, &len, &err),
            LLM_ERR_TOKEN, "tokenizer.decode_document");
    REFUSED(llm_tokenizer_decode_document(&tok, one, 1, out, sizeof out, &len, &err),
            LLM_ERR_TOKEN, "tokenizer.decode_document");
    REFUSED(llm_tokenizer_decode_document(&tok, fine, 3, out, 0, &len, &err), LLM_ERR_LENGTH,
            "tokenizer.decode_document");
    ck_assert(marked_bytes(out, sizeof out) && len == 77);
    ck_assert_int_eq(llm_tokenizer_decode_document(&tok, fine, 3, out, 1, &len, &err), LLM_OK);
    ck_assert(len == 1 && out[0] == 68);
    llm_tokenizer_free(&tok);
}
END_TEST

START_TEST(tables_and_tokenizers_no_init_makes_are_refused)
{
    llm_merge self[1] = {{256, 97, 1, 1}}, twice[2] = {{97, 98, 1, 1}, {97, 98, 1, 1}};
    const llm_bpe a = {self, 1}, b = {twice, 2}, none = {NULL, 3};
    llm_tokenizer t, mark, forged;
    size_t ids[8], n = 77, len = 77;
    unsigned char out[8];
    llm_error err;
    mark_bytes(&mark, sizeof mark);
    t = mark;
    REFUSED(llm_tokenizer_init(&t, &a, &err), LLM_ERR_ARGUMENT, "tokenizer.init");
    ck_assert_ptr_nonnull(strstr(err.message, "not a ranking"));
    REFUSED(llm_tokenizer_init(&t, &b, &err), LLM_ERR_ARGUMENT, "tokenizer.init");
    ck_assert_ptr_nonnull(strstr(err.message, "repeats the pair (97, 98)"));
    REFUSED(llm_tokenizer_init(&t, &none, &err), LLM_ERR_ARGUMENT, "tokenizer.init");
    REFUSED(llm_tokenizer_init(NULL, &a, &err), LLM_ERR_ARGUMENT, "tokenizer.init");
    ck_assert(memcmp(&t, &mark, sizeof t) == 0);
    memset(&forged, 0, sizeof forged);
    forged.vocab = 300;
    REFUSED(llm_tokenizer_encode(&forged, (const unsigned char *)"a", 1, ids, 8, &n, &err),
            LLM_ERR_ARGUMENT, "tokenizer.encode");
    REFUSED(llm_tokenizer_decode(&forged, ids, 0, out, 8, &len, &err), LLM_ERR_ARGUMENT,
            "tokenizer.decode");
    REFUSED(llm_tokenizer_encode_document(NULL, (const unsigned char *)"a", 1, ids, 8, &n, &err),
            LLM_ERR_ARGUMENT, "tokenizer.encode_document");
    ck_assert(n == 77 && len == 77);
}
END_TEST

START_TEST(each_refused_allocation_changes_nothing)
{
    llm_merge m[3] = {{97, 98, 1, 1}, {256, 99, 1, 1}, {257, 257, 1, 1}};
    const llm_bpe bpe = {m, 3};
    llm_tokenizer t, mark;
    llm_error err;
    size_t refused = 0, ids[8], n = 77;
    mark_bytes(&mark, sizeof mark);
    WALK(&refused, t = mark, llm_tokenizer_init(&t, &bpe, &err),
         memcmp(&t, &mark, sizeof t) == 0, (void)0);
    ck_assert_uint_eq(refused, 4);
    mark_bytes(ids, sizeof ids);
    llm_alloc_fail_at(1);
    REFUSED(llm_tokenizer_encode(&t, (const unsigned char *)"abcabc", 6, ids, 8, &n, &err),
            LLM_ERR_ALLOC, "tokenizer.encode");
    llm_alloc_fail_at(0);
    ck_assert(marked_bytes(ids, sizeof ids) && n == 77);
    ck_assert_int_eq(llm_tokenizer_encode(&t, (const unsigned char *)"abcabc", 6, ids, 8, &n,
                                          &err), LLM_OK);
    ck_assert(n == 1 && ids[0] == 258 + 2);
    llm_tokenizer_free(&t);
}
END_TEST

Suite *ch04_apply_bpe_tokenizer_suite(void)
{
    const TTest *tests[] = {
        the_course_fixtures_where_the_corpus_does_not_enter,
        a_non_canonical_spelling_reencodes_canonically,
        random_byte_strings_round_trip,
        controls_and_unknown_ids_are_refused_with_their_position,
        tables_and_tokenizers_no_init_makes_are_refused,
        each_refused_allocation_changes_nothing,
    };
    return suite_of("ch04 apply bpe tokenizer", tcase_of("tokenizer", 0, tests, COUNT(tests)));
}
