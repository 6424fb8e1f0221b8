/* Chapter 1: UTF-8 bytes, scalars and the scalar vocabulary; the error
   record and the demo layer's helpers. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/error.h"
#include "llm/evidence.h"
#include "llm/tokenizer.h"
#include "support.h"

static const unsigned char *bytes_of(const char *s)
{
    return (const unsigned char *)s;
}

/* ------------------------------------------------ an independent oracle */

/* Whether b[0..n-1] begins with one well-formed UTF-8 sequence, by the
   table of well-formed byte sequences of the Unicode standard (its length,
   or 0), written out range by range rather than computed. */
static size_t well_formed(const unsigned char *b, size_t n)
{
    static const struct { unsigned char lo[4], hi[4]; size_t len; } rows[] = {
        {{0x00}, {0x7F}, 1},
        {{0xC2, 0x80}, {0xDF, 0xBF}, 2},
        {{0xE0, 0xA0, 0x80}, {0xE0, 0xBF, 0xBF}, 3},
        {{0xE1, 0x80, 0x80}, {0xEC, 0xBF, 0xBF}, 3},
        {{0xED, 0x80, 0x80}, {0xED, 0x9F, 0xBF}, 3},
        {{0xEE, 0x80, 0x80}, {0xEF, 0xBF, 0xBF}, 3},
        {{0xF0, 0x90, 0x80, 0x80}, {0xF0, 0xBF, 0xBF, 0xBF}, 4},
        {{0xF1, 0x80, 0x80, 0x80}, {0xF3, 0xBF, 0xBF, 0xBF}, 4},
        {{0xF4, 0x80, 0x80, 0x80}, {0xF4, 0x8F, 0xBF, 0xBF}, 4},
    };
    size_t r, k;
    for (r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        int ok = n >= rows[r].len;
        for (k = 0; ok && k < rows[r].len; k++)
            ok = b[k] >= rows[r].lo[k] && b[k] <= rows[r].hi[k];
        if (ok)
            return rows[r].len;
    }
    return 0;
}

/* The offset in a refusal's message, "byte <n>: ...". */
static size_t message_offset(const llm_error *err)
{
    size_t at = SIZE_MAX;
    ck_assert_int_eq(sscanf(err->message, "byte %zu:", &at), 1);
    return at;
}

/* A small generator of the tests' own (the library's comes later). */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* ------------------------------------------------------------- the text */

START_TEST(the_course_fixture_cat_kot)
{
    static const unsigned char kot[6] = {208, 186, 208, 190, 209, 130};
    static const uint32_t known[7] = {' ', 'a', 'c', 't', 0x43A, 0x43E, 0x442};
    llm_scalar_vocab v;
    size_t ids[8], n = 0, len = 0;
    unsigned char back[16];
    ck_assert_int_eq(llm_scalar_vocab_build(&v, bytes_of("cat кот"), strlen("cat кот"), NULL),
                     LLM_OK);
    ck_assert_uint_eq(v.size, 8);
    ck_assert(memcmp(v.scalars, known, sizeof known) == 0);
    ck_assert(memcmp("кот", kot, 6) == 0 && strlen("кот") == 6);
    ck_assert_int_eq(llm_scalar_vocab_encode(&v, bytes_of("cat"), 3, ids, 8, &n, NULL), LLM_OK);
    ck_assert(n == 3 && ids[0] == 3 && ids[1] == 2 && ids[2] == 4);
    ck_assert_int_eq(llm_scalar_vocab_encode(&v, kot, 6, ids, 8, &n, NULL), LLM_OK);
    ck_assert(n == 3 && ids[0] == 5 && ids[1] == 6 && ids[2] == 7);
    ck_assert_int_eq(llm_scalar_vocab_encode(&v, bytes_of("?"), 1, ids, 8, &n, NULL), LLM_OK);
    ck_assert(n == 1 && ids[0] == LLM_UNK);
    ck_assert_int_eq(llm_scalar_vocab_decode(&v, ids, 1, back, sizeof back, &len, NULL), LLM_OK);
    ck_assert(len == 3 && memcmp(back, "\xEF\xBF\xBD", 3) == 0);     /* U+FFFD */
    ck_assert_uint_eq(llm_scalar_vocab_id(&v, 0x732B), LLM_UNK);     /* 猫 */
    ck_assert_uint_eq(llm_scalar_vocab_id(&v, ' '), 1);
    ck_assert_uint_eq(llm_scalar_vocab_id(NULL, ' '), LLM_UNK);
    llm_scalar_vocab_free(&v);
    ck_assert(v.scalars == NULL && v.size == 0);
    llm_scalar_vocab_free(NULL);
}
END_TEST

/* Every scalar, written and read back: the length is l(u), reading gives u,
   and the bytes are what the oracle calls one well-formed sequence. */
START_TEST(every_scalar_round_trips)
{
    uint32_t u, back = 0, first_wrong = UINT32_MAX;
    unsigned char b[LLM_UTF8_MAX];
    size_t len = 0, got = 0, want, wrong = 0;
    for (u = 0; u <= LLM_SCALAR_MAX; u++) {
        if (u == 0xD800)
            u = 0xE000;
        want = u < 0x80 ? 1 : u < 0x800 ? 2 : u < 0x10000 ? 3 : 4;
        if (llm_utf8_encode(u, b, &len, NULL) != LLM_OK || len != want
            || well_formed(b, len) != len
            || llm_utf8_next(b, len, 0, &back, &got, NULL) != LLM_OK || back != u
            || got != len) {
            if (wrong++ == 0)
                first_wrong = u;
        }
    }
    ck_assert_msg(wrong == 0, "%zu scalars do not round-trip, the first U+%04X", wrong,
                  (unsigned)first_wrong);
}
END_TEST

/* Every sequence of one and two bytes, every three-byte one whose last byte
   is a continuation, and four-byte ones around the limits: the reader
   accepts exactly what the oracle accepts, with the same length, and a
   refusal names offset 0. */
START_TEST(the_reader_agrees_with_the_table_of_well_formed_sequences)
{
    unsigned char b[4];
    uint32_t u;
    size_t len, n, want, i, j, k;
    llm_error err;
    static const unsigned char ends[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0,
                                         0xBF, 0xC0, 0xF4, 0xFF};
    for (n = 1; n <= 4; n++)
        for (i = 0; i < 256; i++)
            for (j = 0; j < (n >= 2 ? 256u : 1u); j++)
                for (k = 0; k < (n >= 3 ? sizeof ends : 1u); k++) {
                    llm_status st;
                    b[0] = (unsigned char)i;
                    b[1] = (unsigned char)j;
                    b[2] = ends[k];
                    b[3] = n == 4 ? 0x80 : 0;
                    want = well_formed(b, n);
                    u = 0x5a5a5a5a;
                    len = 77;
                    st = llm_utf8_next(b, n, 0, &u, &len, &err);
                    if (want > 0 ? st != LLM_OK || len != want
                                 : st != LLM_ERR_UTF8 || strncmp(err.message, "byte 0:", 7) != 0
                                       || u != 0x5a5a5a5a || len != 77)
                        ck_abort_msg("%zu bytes %02zX %02zX %02X: got %s, want %zu", n, i, j,
                                     (unsigned)ends[k], llm_status_name(st), want);
                }
}
END_TEST

/* The five ways a sequence can be wrong, inside a longer text: the offset
   named is where the sequence began, and nothing was written. */
START_TEST(malformed_sequences_name_the_offset)
{
    static const struct { const char *bytes; size_t n, at; const char *says; } bad[] = {
        {"ab\xC0\xAF", 4, 2, "overlong"},
        {"x\xE0\x80\xAF", 4, 1, "overlong"},
        {"xy\xF0\x80\x80\xAF", 6, 2, "overlong"},
        {"\xED\xA0\x80", 3, 0, "surrogate"},
        {"ok \xED\xBF\xBF", 6, 3, "surrogate"},
        {"\xE7\x8C", 2, 0, "ends after 2"},
        {"кот\xD0", 7, 6, "ends after 1"},
        {"\xE7\x41\xAB", 3, 0, "no continuation"},
        {"c\xBA" "t", 3, 1, "continues"},
        {"\xF4\x90\x80\x80", 4, 0, "above U+10FFFF"},
        {"a\xF5\x80\x80\x80", 5, 1, "above F4"},
        {"\xFF", 1, 0, "above F4"},
    };
    size_t k, count = 77, ids[8];
    uint32_t out[8];
    llm_scalar_vocab v;
    llm_error err;
    ck_assert_int_eq(llm_scalar_vocab_build(&v, bytes_of("cat"), 3, NULL), LLM_OK);
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        const unsigned char *b = bytes_of(bad[k].bytes);
        mark_bytes(out, sizeof out);
        REFUSED(llm_utf8_decode(b, bad[k].n, out, 8, &count, &err), LLM_ERR_UTF8,
                "tokenizer.utf8_decode <- tokenizer.utf8_next");
        ck_assert_uint_eq(message_offset(&err), bad[k].at);
        ck_assert_msg(strstr(err.message, bad[k].says) != NULL, "%s", err.message);
        ck_assert(marked_bytes(out, sizeof out) && count == 77);
        REFUSED(llm_utf8_count(b, bad[k].n, &count, &err), LLM_ERR_UTF8,
                "tokenizer.utf8_count <- tokenizer.utf8_next");
        mark_bytes(ids, sizeof ids);
        REFUSED(llm_scalar_vocab_encode(&v, b, bad[k].n, ids, 8, &count, &err), LLM_ERR_UTF8,
                "scalar_vocab.encode <- tokenizer.utf8_next");
        REFUSED(llm_scalar_vocab_build(&v, b, bad[k].n, &err), LLM_ERR_UTF8,
                "scalar_vocab.build <- tokenizer.utf8_next");
        ck_assert(marked_bytes(ids, sizeof ids) && count == 77 && v.size == 4);
    }
    llm_scalar_vocab_free(&v);
}
END_TEST

START_TEST(non_scalars_are_not_written)
{
    static const uint32_t bad[] = {0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0x110000, UINT32_MAX};
    unsigned char b[LLM_UTF8_MAX];
    size_t k, len = 77;
    llm_error err;
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        mark_bytes(b, sizeof b);
        REFUSED(llm_utf8_encode(bad[k], b, &len, &err), LLM_ERR_UTF8, "tokenizer.utf8_encode");
        ck_assert(marked_bytes(b, sizeof b) && len == 77);
    }
    REFUSED(llm_utf8_encode('a', NULL, &len, &err), LLM_ERR_ARGUMENT, "tokenizer.utf8_encode");
    REFUSED(llm_utf8_encode('a', b, NULL, &err), LLM_ERR_ARGUMENT, "tokenizer.utf8_encode");
}
END_TEST

/* Seeded random byte strings: a string the check accepts decodes, and
   writing its scalars back gives the same bytes; its vocabulary encodes and
   decodes it exactly. A string the check refuses is refused at the first
   offset where the oracle finds no sequence. */
START_TEST(random_byte_strings_round_trip)
{
    uint64_t s = 0x9E3779B97F4A7C15u;
    unsigned char text[24], again[24 * LLM_UTF8_MAX];
    uint32_t u[24];
    size_t ids[24], trial, accepted = 0;
    for (trial = 0; trial < 20000; trial++) {
        const size_t n = (size_t)(next_random(&s) % 24);
        size_t i, count = 0, nid = 0, len = 0, at, used, k, oracle;
        llm_scalar_vocab v;
        llm_error err;
        llm_status st;
        for (i = 0; i < n; i++) {          /* mostly ASCII, Cyrillic and CJK lead bytes */
            const uint64_t r = next_random(&s);
            text[i] = (unsigned char)(r % 4 == 0 ? r >> 8 : r % 4 == 1 ? 0x80 | (r >> 8 & 0x3F)
                                      : r % 4 == 2 ? 0xD0 + (r >> 8 & 1) : 0x61 + (r >> 8) % 26);
        }
        for (oracle = 0; oracle < n && (k = well_formed(text + oracle, n - oracle)) > 0;)
            oracle += k;
        st = llm_utf8_decode(text, n, u, 24, &count, &err);
        if (oracle < n) {
            ck_assert_int_eq(st, LLM_ERR_UTF8);
            ck_assert_uint_eq(message_offset(&err), oracle);
            continue;
        }
        accepted++;
        ck_assert_int_eq(st, LLM_OK);
        for (i = 0, used = 0; i < count; i++, used += len)
            ck_assert_int_eq(llm_utf8_encode(u[i], again + used, &len, NULL), LLM_OK);
        ck_assert(used == n && memcmp(again, text, n) == 0);
        ck_assert_int_eq(llm_scalar_vocab_build(&v, text, n, NULL), LLM_OK);
        ck_assert_int_eq(llm_scalar_vocab_encode(&v, text, n, ids, 24, &nid, NULL), LLM_OK);
        ck_assert_uint_eq(nid, count);
        for (at = 0; at < nid; at++)
            ck_assert(ids[at] != LLM_UNK && ids[at] < v.size);
        ck_assert_int_eq(llm_scalar_vocab_decode(&v, ids, nid, again, sizeof again, &len, NULL),
                         LLM_OK);
        ck_assert(len == n && memcmp(again, text, n) == 0);
        llm_scalar_vocab_free(&v);
    }
    ck_assert_uint_gt(accepted, 1000);           /* both kinds were met often */
    ck_assert_uint_lt(accepted, 18000);
}
END_TEST

START_TEST(ids_outside_the_vocabulary_and_short_buffers_are_refused)
{
    llm_scalar_vocab v;
    llm_error err;
    size_t ids[8], far[3] = {1, 2, 4}, n = 77, len = 77;
    unsigned char out[16];
    ck_assert_int_eq(llm_scalar_vocab_build(&v, bytes_of("кот"), 6, NULL), LLM_OK);
    mark_bytes(out, sizeof out);
    REFUSED(llm_scalar_vocab_decode(&v, far, 3, out, sizeof out, &len, &err), LLM_ERR_TOKEN,
            "scalar_vocab.decode");
    ck_assert_ptr_nonnull(strstr(err.message, "ID 4 at position 2"));
    far[2] = 3;
    REFUSED(llm_scalar_vocab_decode(&v, far, 3, out, 5, &len, &err), LLM_ERR_LENGTH,
            "scalar_vocab.decode");
    ck_assert(marked_bytes(out, sizeof out) && len == 77);
    ck_assert_int_eq(llm_scalar_vocab_decode(&v, far, 3, out, 6, &len, &err), LLM_OK);
    ck_assert(len == 6 && memcmp(out, "кот", 6) == 0);
    mark_bytes(ids, sizeof ids);
    REFUSED(llm_scalar_vocab_encode(&v, bytes_of("кот"), 6, ids, 2, &n, &err), LLM_ERR_LENGTH,
            "scalar_vocab.encode");
    ck_assert(marked_bytes(ids, sizeof ids) && n == 77);
    {
        uint32_t u[2];
        mark_bytes(u, sizeof u);
        REFUSED(llm_utf8_decode(bytes_of("кот"), 6, u, 2, &n, &err), LLM_ERR_LENGTH,
                "tokenizer.utf8_decode");
        ck_assert(marked_bytes(u, sizeof u) && n == 77);
    }
    llm_scalar_vocab_free(&v);
}
END_TEST

/* A vocabulary no build makes is refused before it is searched. */
START_TEST(vocabularies_no_build_makes_are_refused)
{
    uint32_t unsorted[3] = {'b', 'a', 'c'}, twice[2] = {'a', 'a'}, surrogate[1] = {0xD800};
    llm_scalar_vocab v;
    llm_error err;
    size_t ids[4], n = 77, len = 77, one = 1;
    unsigned char out[8];
    v.scalars = NULL;
    v.size = 0;
    REFUSED(llm_scalar_vocab_encode(&v, bytes_of("a"), 1, ids, 4, &n, &err), LLM_ERR_ARGUMENT,
            "scalar_vocab.encode");
    v.size = 3;
    REFUSED(llm_scalar_vocab_decode(&v, &one, 1, out, 8, &len, &err), LLM_ERR_ARGUMENT,
            "scalar_vocab.decode");
    v.scalars = unsorted;
    v.size = 4;
    REFUSED(llm_scalar_vocab_encode(&v, bytes_of("a"), 1, ids, 4, &n, &err), LLM_ERR_ARGUMENT,
            "scalar_vocab.encode");
    v.scalars = twice;
    v.size = 3;
    REFUSED(llm_scalar_vocab_decode(&v, &one, 1, out, 8, &len, &err), LLM_ERR_ARGUMENT,
            "scalar_vocab.decode");
    v.scalars = surrogate;
    v.size = 2;
    REFUSED(llm_scalar_vocab_decode(&v, &one, 1, out, 8, &len, &err), LLM_ERR_ARGUMENT,
            "scalar_vocab.decode");
    ck_assert(n == 77 && len == 77);
    REFUSED(llm_scalar_vocab_encode(NULL, bytes_of("a"), 1, ids, 4, &n, &err), LLM_ERR_ARGUMENT,
            "scalar_vocab.encode");
    REFUSED(llm_scalar_vocab_build(NULL, bytes_of("a"), 1, &err), LLM_ERR_ARGUMENT,
            "scalar_vocab.build");
    REFUSED(llm_utf8_next(bytes_of("a"), 1, 1, (uint32_t *)ids, &n, &err), LLM_ERR_ARGUMENT,
            "tokenizer.utf8_next");
    REFUSED(llm_utf8_count(NULL, 3, &n, &err), LLM_ERR_ARGUMENT, "tokenizer.utf8_count");
    REFUSED(llm_utf8_decode(bytes_of("a"), 1, NULL, 4, &n, &err), LLM_ERR_ARGUMENT,
            "tokenizer.utf8_decode");
    ck_assert_uint_eq(n, 77);
}
END_TEST

START_TEST(the_empty_text)
{
    llm_scalar_vocab v;
    size_t n = 77, len = 77, ids[1];
    unsigned char out[1];
    ck_assert_int_eq(llm_utf8_count(NULL, 0, &n, NULL), LLM_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(llm_scalar_vocab_build(&v, NULL, 0, NULL), LLM_OK);
    ck_assert_uint_eq(v.size, 1);                  /* <UNK> alone */
    ck_assert_uint_eq(llm_scalar_vocab_id(&v, 'a'), LLM_UNK);
    ck_assert_int_eq(llm_scalar_vocab_encode(&v, NULL, 0, NULL, 0, &n, NULL), LLM_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(llm_scalar_vocab_encode(&v, bytes_of("a"), 1, ids, 1, &n, NULL), LLM_OK);
    ck_assert(n == 1 && ids[0] == LLM_UNK);
    ck_assert_int_eq(llm_scalar_vocab_decode(&v, NULL, 0, NULL, 0, &len, NULL), LLM_OK);
    ck_assert_uint_eq(len, 0);
    ck_assert_int_eq(llm_scalar_vocab_decode(&v, ids, 1, out, 1, &len, NULL), LLM_ERR_LENGTH);
    llm_scalar_vocab_free(&v);
}
END_TEST

/* The walk of llm_alloc_fail_at over one build: each allocation refused in
   turn, each refusal named and harmless, then a build that succeeds. */
START_TEST(a_build_survives_each_refused_allocation)
{
    llm_scalar_vocab v, mark;
    llm_error err;
    size_t k, refused = 0;
    llm_status st = LLM_ERR_ALLOC;
    mark_bytes(&mark, sizeof mark);
    for (k = 1; st == LLM_ERR_ALLOC; k++) {
        v = mark;
        llm_alloc_fail_at(k);
        st = llm_scalar_vocab_build(&v, bytes_of("cat кот"), 10, &err);
        if (st == LLM_ERR_ALLOC) {
            refused++;
            ck_assert_str_eq(err.stage, "scalar_vocab.build");
            ck_assert(memcmp(&v, &mark, sizeof v) == 0);
        }
        ck_assert_uint_le(llm_alloc_calls(), k);
    }
    llm_alloc_fail_at(0);
    ck_assert_int_eq(st, LLM_OK);
    ck_assert_uint_eq(refused, 2);
    ck_assert_uint_eq(v.size, 8);
    llm_scalar_vocab_free(&v);
}
END_TEST

/* ------------------------------------------ errors and the demo layer */

START_TEST(a_refusal_passed_on_keeps_the_stage_that_refused_first)
{
    llm_error err, why;
    char buf[100], tiny[8];
    const unsigned char bad[4] = {0x61, 0x62, 0xC0, 0xAF};
    uint32_t out[4];
    size_t count;
    /* llm_fail clears a cause left from before */
    memset(&err, 0, sizeof err);
    strcpy(err.cause, "old.cause");
    ck_assert_int_eq(llm_fail(&err, LLM_ERR_INDEX, "tensor.offset", "x"), LLM_ERR_INDEX);
    ck_assert_str_eq(err.cause, "");
    ck_assert_str_eq(llm_error_where(buf, sizeof buf, &err), "tensor.offset");
    /* a chain of callers: the outermost is the stage, the innermost the cause */
    ck_assert_int_eq(llm_pass(&err, LLM_ERR_INDEX, "tensor.get"), LLM_ERR_INDEX);
    ck_assert_str_eq(err.stage, "tensor.get");
    ck_assert_str_eq(err.cause, "tensor.offset");
    ck_assert_int_eq(llm_pass(&err, LLM_ERR_INDEX, "decoder.forward"), LLM_ERR_INDEX);
    ck_assert_str_eq(llm_error_where(buf, sizeof buf, &err), "decoder.forward <- tensor.offset");
    ck_assert_str_eq(err.message, "x");                    /* the message stays */
    /* passing on one's own refusal, or success, changes nothing */
    ck_assert_int_eq(llm_pass(&err, LLM_ERR_INDEX, "decoder.forward"), LLM_ERR_INDEX);
    ck_assert_str_eq(err.cause, "tensor.offset");
    ck_assert_int_eq(llm_pass(&err, LLM_OK, "block.forward"), LLM_OK);
    ck_assert_str_eq(err.stage, "decoder.forward");
    ck_assert_int_eq(llm_pass(NULL, LLM_ERR_RANK, "block.forward"), LLM_ERR_RANK);
    /* llm_fail_from: a new message, the code and the first stage of why */
    ck_assert_int_eq(llm_utf8_decode(bad, 4, out, 4, &count, &why), LLM_ERR_UTF8);
    ck_assert_str_eq(llm_error_where(buf, sizeof buf, &why), "tokenizer.utf8_decode <- tokenizer.utf8_next");
    ck_assert_int_eq(llm_fail_from(&err, &why, "tape.gather", "IDs: %s", "too many"),
                     LLM_ERR_UTF8);
    ck_assert_int_eq(err.code, LLM_ERR_UTF8);
    ck_assert_str_eq(llm_error_where(buf, sizeof buf, &err), "tape.gather <- tokenizer.utf8_next");
    ck_assert_str_eq(err.message, "IDs: too many");
    ck_assert_int_eq(llm_fail(&why, LLM_ERR_SHAPE, "tape.gather", "same"), LLM_ERR_SHAPE);
    ck_assert_int_eq(llm_fail_from(&err, &why, "tape.gather", NULL), LLM_ERR_SHAPE);
    ck_assert_str_eq(err.cause, "");                      /* its own stage is no cause */
    ck_assert_str_eq(err.message, "");
    /* why may be err itself, its message an argument */
    ck_assert_int_eq(llm_fail(&err, LLM_ERR_INDEX, "tensor.offset", "inner"), LLM_ERR_INDEX);
    ck_assert_int_eq(llm_fail_from(&err, &err, "tensor.get", "outer: %s", err.message),
                     LLM_ERR_INDEX);
    ck_assert_str_eq(err.message, "outer: inner");
    ck_assert_str_eq(llm_error_where(buf, sizeof buf, &err), "tensor.get <- tensor.offset");
    /* the printed form is cut to the buffer, and NULL is safe */
    ck_assert_str_eq(llm_error_where(tiny, sizeof tiny, &err), "tensor.");
    ck_assert_str_eq(llm_error_where(buf, sizeof buf, NULL), "?");
    ck_assert_ptr_null(llm_error_where(NULL, 4, &err));
}
END_TEST

START_TEST(trimmed_numbers_drop_trailing_zeros_only)
{
    char buf[64];
    ck_assert_str_eq(llm_fmt_trim(buf, sizeof buf, 5.5, 12), "5.5");
    ck_assert_str_eq(llm_fmt_trim(buf, sizeof buf, 2.0, 12), "2");
    ck_assert_str_eq(llm_fmt_trim(buf, sizeof buf, -0.5, 12), "-0.5");
    ck_assert_str_eq(llm_fmt_trim(buf, sizeof buf, 10.0, 6), "10");      /* not "1" */
    ck_assert_str_eq(llm_fmt_trim(buf, sizeof buf, 100.0, 0), "100");    /* no point */
    ck_assert_str_eq(llm_fmt_trim(buf, sizeof buf, 1e-6, 6), "0.000001");
    ck_assert_str_eq(llm_fmt_trim(buf, sizeof buf, -1e-9, 6), "0");      /* no "-0" */
    ck_assert_str_eq(llm_fmt_trim(buf, sizeof buf, 0.25, 1), "0.2");
}
END_TEST

START_TEST(every_status_has_a_name)
{
    int code;
    for (code = 0; code < LLM_STATUS_COUNT; code++)
        ck_assert_str_ne(llm_status_name((llm_status)code), "unknown");
    ck_assert_str_eq(llm_status_name(LLM_OK), "ok");
    ck_assert_str_eq(llm_status_name(LLM_ERR_INDEX), "index");
    ck_assert_str_eq(llm_status_name(LLM_STATUS_COUNT), "unknown");
    ck_assert_str_eq(llm_status_name((llm_status)-1), "unknown");
}
END_TEST

START_TEST(long_messages_are_truncated_not_overrun)
{
    llm_error err;
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ck_assert_int_eq(llm_fail(&err, LLM_ERR_ARGUMENT, big, "%s", big), LLM_ERR_ARGUMENT);
    ck_assert_uint_eq(strlen(err.stage), sizeof err.stage - 1);
    ck_assert_uint_eq(strlen(err.message), sizeof err.message - 1);
    ck_assert_int_eq(llm_fail(NULL, LLM_ERR_RANK, "s", "m"), LLM_ERR_RANK);
}
END_TEST

START_TEST(numbers_are_formatted_without_negative_zero)
{
    char buf[64];
    const double xs[3] = {0.5, -0.0000001, -2.25};
    const size_t sizes[3] = {2, 0, 3};
    ck_assert_str_eq(llm_fmt(buf, sizeof buf, -0.0, 6), "0.000000");
    ck_assert_str_eq(llm_fmt(buf, sizeof buf, -0.0000004, 6), "0.000000");
    ck_assert_str_eq(llm_fmt(buf, sizeof buf, -0.0000006, 6), "-0.000001");
    ck_assert_str_eq(llm_fmt(buf, sizeof buf, -3.0, 0), "-3");
    ck_assert_str_eq(llm_fmt(buf, sizeof buf, 0.0 / 0.0, 3), "nan");
    ck_assert_str_eq(llm_fmt(buf, sizeof buf, -1.0 / 0.0, 3), "-inf");
    ck_assert_str_eq(llm_fmt_list(buf, sizeof buf, xs, 3, 2), "[0.50, 0.00, -2.25]");
    ck_assert_str_eq(llm_fmt_list(buf, sizeof buf, xs, 0, 2), "[]");
    ck_assert_str_eq(llm_fmt_sizes(buf, sizeof buf, sizes, 3), "[2, 0, 3]");
    ck_assert_str_eq(llm_fmt_sizes(buf, sizeof buf, sizes, 0), "[]");
}
END_TEST

START_TEST(demo_arguments_are_checked)
{
    char prog[] = "demo", flag[] = "--trace", bad[] = "--nope",
         path[] = "/nonexistent-dir/x.trace";
    char *no_args[] = {prog, NULL};
    char *unknown[] = {prog, bad, NULL};
    char *unwritable[] = {prog, flag, path, NULL};
    char *missing_file[] = {prog, flag, NULL};
    llm_trace tr;
    /* the refusals print their messages; this test only needs the status */
    ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
    ck_assert_int_eq(llm_demo_start(1, no_args, "demo", &tr), 0);
    ck_assert_ptr_null(tr.fp);
    ck_assert_int_eq(llm_demo_finish(&tr, 1), 0);
    ck_assert_int_eq(llm_demo_finish(&tr, 0), 1);
    ck_assert_int_eq(llm_demo_start(2, unknown, "demo", &tr), 2);
    ck_assert_int_eq(llm_demo_start(3, unwritable, "demo", &tr), 2);
    ck_assert_int_eq(llm_demo_start(2, missing_file, "demo", &tr), 2);
}
END_TEST

START_TEST(trace_lines_are_tab_separated)
{
    char path[] = "/tmp/llm-trace-XXXXXX";
    char prog[] = "demo", flag[] = "--trace";
    char *argv[4];
    const char *cells[2] = {"a b", "c"};
    char text[128];
    llm_trace tr;
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    argv[0] = prog; argv[1] = flag; argv[2] = path; argv[3] = NULL;
    ck_assert_int_eq(llm_demo_start(3, argv, "demo", &tr), 0);
    llm_trace_value(&tr, "k", "v 1");
    llm_trace_row(&tr, "t", 2, cells);
    ck_assert_int_eq(llm_demo_finish(&tr, 1), 0);
    take_file(path, text, sizeof text);
    ck_assert_str_eq(text, "v\tk\tv 1\nr\tt\ta b\tc\n");
}
END_TEST

START_TEST(refusal_rows_carry_the_chosen_cells)
{
    char path[] = "/tmp/llm-refusal-XXXXXX";
    char prog[] = "demo", flag[] = "--trace";
    char *argv[4];
    char text[512];
    llm_trace tr;
    llm_error err;
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    /* the refusals print their report lines; this test reads the trace */
    ck_assert_ptr_nonnull(freopen("/dev/null", "w", stdout));
    argv[0] = prog; argv[1] = flag; argv[2] = path; argv[3] = NULL;
    ck_assert_int_eq(llm_demo_start(3, argv, "demo", &tr), 0);
    (void)llm_fail(&err, LLM_ERR_INDEX, "tensor.get", "index %d of %d", 3, 2);
    llm_demo_refusal(&tr, "a", LLM_ERR_INDEX, &err);
    llm_demo_refusal_cells(&tr, "csmbx", "b", LLM_ERR_INDEX, &err);
    llm_demo_refusal_cells(&tr, "b", "c", LLM_OK, &err);
    llm_demo_refusal_cells(&tr, "", "d", LLM_ERR_INDEX, NULL);
    llm_demo_refusal_cells(&tr, "cccccccccc", "e", LLM_ERR_INDEX, &err);
    ck_assert_int_eq(llm_demo_ok("demo", LLM_OK, NULL), 1);
    ck_assert_int_eq(llm_demo_finish(&tr, 1), 0);
    take_file(path, text, sizeof text);
    ck_assert_str_eq(text,
        "r\trefusals\ta\tindex\tindex 3 of 2\n"
        "r\trefusals\tb\tindex\ttensor.get\tindex 3 of 2\tindex (`tensor.get`)\t?\n"
        "r\trefusals\tc\tok (`accepted`)\n"
        "r\trefusals\td\n"
        "r\trefusals\te\tindex\tindex\tindex\tindex\tindex\tindex\tindex\n");
}
END_TEST

START_TEST(an_unexpected_status_fails_the_demo)
{
    llm_error err;
    ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
    (void)llm_fail(&err, LLM_ERR_SHAPE, "tensor.from", "11 values for 12");
    ck_assert_int_eq(llm_demo_ok("demo", LLM_ERR_SHAPE, &err), 0);
    ck_assert_int_eq(llm_demo_ok("demo", LLM_ERR_SHAPE, NULL), 0);
}
END_TEST

Suite *ch01_text_units_suite(void)
{
    const TTest *tests[] = {
        the_course_fixture_cat_kot,
        every_scalar_round_trips,
        the_reader_agrees_with_the_table_of_well_formed_sequences,
        malformed_sequences_name_the_offset,
        non_scalars_are_not_written,
        random_byte_strings_round_trip,
        ids_outside_the_vocabulary_and_short_buffers_are_refused,
        vocabularies_no_build_makes_are_refused,
        the_empty_text,
        a_build_survives_each_refused_allocation,
        a_refusal_passed_on_keeps_the_stage_that_refused_first,
        trimmed_numbers_drop_trailing_zeros_only,
        every_status_has_a_name,
        long_messages_are_truncated_not_overrun,
        numbers_are_formatted_without_negative_zero,
        demo_arguments_are_checked,
        trace_lines_are_tab_separated,
        refusal_rows_carry_the_chosen_cells,
        an_unexpected_status_fails_the_demo,
    };
    return suite_of("ch01 text units", tcase_of("text", 0, tests, COUNT(tests)));
}
