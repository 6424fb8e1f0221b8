/* Chapter 2: the corpus, its checksum and its split. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/data.h"
#include "llm/error.h"
#include "llm/tokenizer.h"
#include "support.h"

/* A small corpus of three scenes, one for each partition. */
static const char small_corpus[] =
    "@doc en-a en a\nOne line.\nTwo lines.\n@end\n\n"
    "@doc ru-a ru a\nОдна строка.\n@end\n\n"
    "@doc en-b en b\n@end\n\n"
    "@doc ru-b ru b\nБ.\n@end\n\n"
    "@doc en-c en c\nC.\n@end\n\n"
    "@doc ru-c ru c\nВ.\n@end\n\n";

static const char small_entries[] =
    "en-a train\nru-a train\nen-b validation\nru-b validation\nen-c test\nru-c test\n";

/* The manifest of text (n bytes) with the given entries, its checksum the
   text's, in buf; returns its length. */
static size_t manifest_for(char *buf, size_t room, const char *text, size_t n,
                           const char *entries)
{
    const int len = snprintf(buf, room, "# a test\nsplit small-v1\ncorpus fnv1a64:%016llx\n%s",
                             (unsigned long long)llm_fnv1a64((const unsigned char *)text, n),
                             entries);
    ck_assert(len > 0 && (size_t)len < room);
    return (size_t)len;
}

/* Parses text with a manifest naming its checksum and entries; *c must be
   left as marked when the parse is refused. */
static llm_status parse_with(llm_corpus *c, const char *text, const char *entries,
                             llm_error *err)
{
    char m[1024];
    const size_t n = strlen(text), len = manifest_for(m, sizeof m, text, n, entries);
    llm_corpus mark;
    llm_status st;
    mark_bytes(&mark, sizeof mark);
    *c = mark;
    st = llm_corpus_parse(c, (const unsigned char *)text, n, (const unsigned char *)m, len, err);
    if (st != LLM_OK)
        ck_assert_msg(memcmp(c, &mark, sizeof mark) == 0, "a refused parse changed *corpus");
    return st;
}

START_TEST(fnv1a64_matches_the_published_test_vectors)
{
    ck_assert(llm_fnv1a64(NULL, 0) == LLM_FNV_BASIS);
    ck_assert(llm_fnv1a64((const unsigned char *)"", 0) == UINT64_C(0xcbf29ce484222325));
    ck_assert(llm_fnv1a64((const unsigned char *)"a", 1) == UINT64_C(0xaf63dc4c8601ec8c));
    ck_assert(llm_fnv1a64((const unsigned char *)"foobar", 6) == UINT64_C(0x85944171f73967e8));
    /* one changed byte changes the checksum */
    ck_assert(llm_fnv1a64((const unsigned char *)"foobaz", 6)
              != llm_fnv1a64((const unsigned char *)"foobar", 6));
}
END_TEST

START_TEST(the_books_corpus_loads_with_its_frozen_split)
{
    llm_corpus c;
    llm_error err;
    size_t i, j, in[LLM_PARTITIONS] = {0};
    FILE *fp;
    static unsigned char raw[65536];
    size_t n;
    ck_assert_int_eq(llm_corpus_load(&c, "corpus/corpus.txt", "corpus/splits.txt", &err), LLM_OK);
    fp = fopen("corpus/corpus.txt", "rb");
    ck_assert_ptr_nonnull(fp);
    n = fread(raw, 1, sizeof raw, fp);
    fclose(fp);
    ck_assert_uint_eq(c.size, n);
    ck_assert(memcmp(c.bytes, raw, n) == 0);
    ck_assert(c.checksum == llm_fnv1a64(raw, n));
    ck_assert_uint_ge(c.count, 48);                        /* at least 24 scenes */
    ck_assert_uint_ge(c.size, 24 * 1024);
    for (i = 0; i < c.count; i++) {
        const llm_corpus_doc *d = &c.docs[i];
        size_t scalars, pairs = 0;
        in[d->partition]++;
        ck_assert(d->text >= c.bytes && d->text + d->length <= c.bytes + c.size);
        ck_assert_int_eq(llm_utf8_count(d->text, d->length, &scalars, NULL), LLM_OK);
        ck_assert(d->length > 0 && d->text[d->length - 1] != '\n');
        ck_assert(strncmp(d->id, d->lang, 2) == 0 && strcmp(d->id + 3, d->group) == 0);
        for (j = 0; j < c.count; j++)
            if (strcmp(c.docs[j].group, d->group) == 0) {
                pairs++;
                ck_assert_int_eq(c.docs[j].partition, d->partition);
            }
        ck_assert_uint_eq(pairs, 2);
    }
    for (i = 0; i < LLM_PARTITIONS; i++) {
        ck_assert_uint_eq(in[i], c.in[i]);
        ck_assert_uint_gt(c.in[i], 0);
    }
    ck_assert_str_eq(c.docs[0].id, "en-01-ferry-bell");
    llm_corpus_free(&c);
    ck_assert(c.docs == NULL && c.count == 0);
    llm_corpus_free(NULL);
}
END_TEST

START_TEST(documents_keep_their_exact_text)
{
    llm_corpus c;
    llm_error err;
    ck_assert_int_eq(parse_with(&c, small_corpus, small_entries, &err), LLM_OK);
    ck_assert_uint_eq(c.count, 6);
    ck_assert_str_eq(c.split, "small-v1");
    ck_assert_uint_eq(c.docs[0].length, strlen("One line.\nTwo lines."));
    ck_assert(memcmp(c.docs[0].text, "One line.\nTwo lines.", c.docs[0].length) == 0);
    ck_assert_uint_eq(c.docs[2].length, 0);                 /* a document with no text */
    ck_assert_str_eq(c.docs[3].lang, "ru");
    ck_assert_int_eq(c.docs[4].partition, LLM_TEST);
    ck_assert(c.in[LLM_TRAIN] == 2 && c.in[LLM_VALIDATION] == 2 && c.in[LLM_TEST] == 2);
    llm_corpus_free(&c);
    ck_assert_str_eq(llm_partition_name(LLM_VALIDATION), "validation");
    ck_assert_str_eq(llm_partition_name((llm_partition)7), "?");
}
END_TEST

/* The course's bad manifests, and the other rules of a split. */
START_TEST(manifests_that_break_the_split_are_refused)
{
    static const struct { const char *entries, *says; } bad[] = {
        {"en-a train\nru-a train\nen-a validation\nru-b validation\nen-c test\nru-c test\n",
         "lists en-a again (first on line 4)"},
        {"en-a train\nru-a train\nen-b validation\nru-b validation\nen-c test\n",
         "ru-c is in no partition"},
        {"en-a train\nru-a train\nen-b validation\nru-b validation\nen-c test\nru-c test\n"
         "en-d test\n", "names en-d, which is not in the corpus"},
        {"en-a train\nru-a validation\nen-b validation\nru-b validation\nen-c test\nru-c test\n",
         "group a is divided: en-a in train, ru-a in validation"},
        {"en-a train\nru-a train\nen-b train\nru-b train\nen-c test\nru-c test\n",
         "the validation partition has no document"},
    };
    size_t k;
    llm_corpus c;
    llm_error err;
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        REFUSED(parse_with(&c, small_corpus, bad[k].entries, &err), LLM_ERR_SPLIT, "corpus.parse");
        ck_assert_msg(strstr(err.message, bad[k].says) != NULL, "%s", err.message);
    }
}
END_TEST

START_TEST(a_changed_byte_is_caught_by_the_checksum_first)
{
    char text[sizeof small_corpus], m[1024];
    const size_t n = strlen(small_corpus);
    size_t len, i;
    llm_corpus c;
    llm_error err;
    len = manifest_for(m, sizeof m, small_corpus, n, small_entries);
    for (i = 0; i < n; i += 7) {                   /* any byte, even one the format ignores */
        memcpy(text, small_corpus, n);
        text[i] ^= 0x01;
        REFUSED(llm_corpus_parse(&c, (const unsigned char *)text, n, (const unsigned char *)m, len,
                                 &err), LLM_ERR_CHECKSUM, "corpus.parse");
    }
    /* a byte that breaks UTF-8, with the manifest naming that corpus's checksum */
    memcpy(text, small_corpus, n + 1);
    text[20] = (char)0xC0;
    REFUSED(parse_with(&c, text, small_entries, &err), LLM_ERR_UTF8,
            "corpus.parse <- tokenizer.utf8_next");
    ck_assert_ptr_nonnull(strstr(err.message, "byte 20:"));
}
END_TEST

START_TEST(texts_that_break_the_format_are_refused)
{
    static const struct { const char *corpus, *says; } bad[] = {
        {"@doc en-a en\nx\n@end\n\n", "corpus line 1: expected '@doc ID LANG GROUP'"},
        {"@doc en-a de a\nx\n@end\n\n", "language 'de'"},
        {"@doc en-a en a\n@end\n\n@doc en-a ru a\n@end\n\n", "a second document en-a"},
        {"@doc en-a en a\n@end\n\n@doc en-b en a\n@end\n\n", "group a has a second en"},
        {"@doc en-a en a\n@end\n\n", "group a has one document"},
        {"@doc en-a en a\n@doc ru-a ru a\n@end\n\n", "may not begin with '@'"},
        {"@doc en-a en a\n@end\n@doc ru-a ru a\n@end\n\n", "expected an empty line"},
        {"@doc en-a en a\ntext\n", "inside a document"},
        {"@doc en-a en a\n@end\n", "without the empty line"},
        {"@doc en-a en a\n@end\n\n@doc ru-a ru a\n@end\n\nx", "expected '@doc ID LANG GROUP'"},
        {"@doc en-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa en a\n@end\n\n",
         "expected '@doc ID LANG GROUP'"},
    };
    size_t k;
    llm_corpus c;
    llm_error err;
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        REFUSED(parse_with(&c, bad[k].corpus, "en-a train\n", &err), LLM_ERR_FORMAT,
                "corpus.parse");
        ck_assert_msg(strstr(err.message, bad[k].says) != NULL, "%zu: %s", k, err.message);
    }
}
END_TEST

START_TEST(manifests_that_break_their_format_are_refused)
{
    static const struct { const char *manifest, *says; } bad[] = {
        {"", "ends after 0 lines"},
        {"# only a comment\n", "ends after 1 lines"},
        {"split x\n", "ends after 1 lines"},
        {"corpus fnv1a64:0000000000000000\n", "line 1: expected 'split NAME'"},
        {"split x\ncorpus fnv1a64:000000000000000\n", "line 2: expected 'corpus fnv1a64:'"},
        {"split x\ncorpus fnv1a64:000000000000000G\n", "line 2"},
        {"split x\ncorpus fnv1a64:00000000000000000\n", "line 2"},
        {"split x\ncorpus fnv1a64:ABCDEF0000000000\n", "line 2"},
        {"split x\ncorpus crc32:00000000\n", "line 2"},
        {"split x\ncorpus fnv1a64:0000000000000000\nen-a training\n", "line 3: expected 'ID"},
        {"split x\ncorpus fnv1a64:0000000000000000\nen-a  train\n", "line 3"},
        {"split two words\n", "line 1"},
    };
    size_t k;
    llm_corpus c, mark;
    llm_error err;
    mark_bytes(&mark, sizeof mark);
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        c = mark;
        REFUSED(llm_corpus_parse(&c, (const unsigned char *)small_corpus, strlen(small_corpus),
                                 (const unsigned char *)bad[k].manifest, strlen(bad[k].manifest),
                                 &err), LLM_ERR_FORMAT, "corpus.parse");
        ck_assert_msg(strstr(err.message, bad[k].says) != NULL, "%zu: %s", k, err.message);
        ck_assert(memcmp(&c, &mark, sizeof c) == 0);
    }
}
END_TEST

START_TEST(files_that_cannot_be_read_are_named)
{
    llm_corpus c, mark;
    llm_error err;
    mark_bytes(&mark, sizeof mark);
    c = mark;
    REFUSED(llm_corpus_load(&c, "corpus/corpus.txt", "corpus/no-such-manifest.txt", &err),
            LLM_ERR_FILE, "corpus.load");
    ck_assert_ptr_nonnull(strstr(err.message, "corpus/no-such-manifest.txt"));
    ck_assert_ptr_nonnull(strstr(err.message, "No such file"));
    REFUSED(llm_corpus_load(&c, "corpus", "corpus/splits.txt", &err), LLM_ERR_FILE,
            "corpus.load");                        /* a directory opens, but cannot be read */
    ck_assert_ptr_nonnull(strstr(err.message, "cannot read corpus"));
    REFUSED(llm_corpus_load(&c, "corpus/splits.txt", "corpus/splits.txt", &err),
            LLM_ERR_CHECKSUM, "corpus.load <- corpus.parse");
    ck_assert(memcmp(&c, &mark, sizeof c) == 0);
    REFUSED(llm_corpus_load(NULL, "a", "b", &err), LLM_ERR_ARGUMENT, "corpus.load");
    REFUSED(llm_corpus_load(&c, NULL, "b", &err), LLM_ERR_ARGUMENT, "corpus.load");
    REFUSED(llm_corpus_parse(&c, NULL, 3, NULL, 0, &err), LLM_ERR_ARGUMENT, "corpus.parse");
    REFUSED(llm_corpus_parse(NULL, NULL, 0, NULL, 0, &err), LLM_ERR_ARGUMENT, "corpus.parse");
}
END_TEST

/* Every allocation of a parse and of a load refused in turn. */
START_TEST(each_refused_allocation_leaves_the_corpus_untouched)
{
    llm_corpus c, mark;
    llm_error err;
    char m[1024];
    const size_t n = strlen(small_corpus), len = manifest_for(m, sizeof m, small_corpus, n,
                                                              small_entries);
    size_t k, refused;
    llm_status st;
    int walk;
    mark_bytes(&mark, sizeof mark);
    for (walk = 0; walk < 2; walk++) {
        st = LLM_ERR_ALLOC;
        refused = 0;
        for (k = 1; st == LLM_ERR_ALLOC; k++) {
            c = mark;
            llm_alloc_fail_at(k);
            st = walk == 0 ? llm_corpus_parse(&c, (const unsigned char *)small_corpus, n,
                                              (const unsigned char *)m, len, &err)
                           : llm_corpus_load(&c, "corpus/corpus.txt", "corpus/splits.txt", &err);
            if (st == LLM_ERR_ALLOC) {
                refused++;
                ck_assert(memcmp(&c, &mark, sizeof c) == 0);
            }
        }
        llm_alloc_fail_at(0);
        ck_assert_int_eq(st, LLM_OK);
        ck_assert_uint_ge(refused, walk == 0 ? 4 : 6);
        llm_corpus_free(&c);
    }
}
END_TEST

Suite *ch02_corpus_partitions_suite(void)
{
    const TTest *tests[] = {
        fnv1a64_matches_the_published_test_vectors,
        the_books_corpus_loads_with_its_frozen_split,
        documents_keep_their_exact_text,
        manifests_that_break_the_split_are_refused,
        a_changed_byte_is_caught_by_the_checksum_first,
        texts_that_break_the_format_are_refused,
        manifests_that_break_their_format_are_refused,
        files_that_cannot_be_read_are_named,
        each_refused_allocation_leaves_the_corpus_untouched,
    };
    return suite_of("ch02 corpus partitions", tcase_of("corpus", 0, tests, COUNT(tests)));
}
