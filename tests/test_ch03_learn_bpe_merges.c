/* Chapter 3: learning byte-pair merges. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/data.h"
#include "llm/error.h"
#include "llm/tokenizer.h"
#include "support.h"

static llm_bytes span(const char *s)
{
    llm_bytes b;
    b.bytes = (const unsigned char *)s;
    b.length = strlen(s);
    return b;
}

/* An independent learner, as slow as the definition: every round counts
   each pair by scanning all positions for each candidate. */
static size_t reference_learn(const llm_bytes *docs, size_t ndocs, size_t rounds,
                              llm_merge *out)
{
    size_t *ids[8], lens[8], d, i, j, r;
    for (d = 0; d < ndocs; d++) {
        ids[d] = malloc((docs[d].length + 1) * sizeof(size_t));
        ck_assert_ptr_nonnull(ids[d]);
        for (i = 0; i < docs[d].length; i++)
            ids[d][i] = docs[d].bytes[i];
        lens[d] = docs[d].length;
    }
    for (r = 0; r < rounds; r++) {
        size_t best_a = 0, best_b = 0, best_c = 0, uses = 0;
        for (d = 0; d < ndocs; d++)
            for (i = 0; i + 1 < lens[d]; i++) {
                const size_t a = ids[d][i], b = ids[d][i + 1];
                size_t c = 0, e, k;
                for (e = 0; e < ndocs; e++)
                    for (k = 0; k + 1 < lens[e]; k++)
                        c += ids[e][k] == a && ids[e][k + 1] == b;
                if (c > best_c || (c == best_c && (a < best_a || (a == best_a && b < best_b)))) {
                    best_a = a;
                    best_b = b;
                    best_c = c;
                }
            }
        if (best_c == 0)
            break;
        for (d = 0; d < ndocs; d++) {
            size_t o = 0;
            for (i = 0; i < lens[d];) {
                if (i + 1 < lens[d] && ids[d][i] == best_a && ids[d][i + 1] == best_b) {
                    ids[d][o++] = 256 + r;
                    i += 2;
                    uses++;
                } else {
                    ids[d][o++] = ids[d][i++];
                }
            }
            lens[d] = o;
        }
        out[r].left = best_a;
        out[r].right = best_b;
        out[r].count = best_c;
        out[r].uses = uses;
        (void)j;
    }
    for (d = 0; d < ndocs; d++)
        free(ids[d]);
    return r;
}

START_TEST(the_course_fixture_aaa_aba)
{
    const llm_bytes docs[2] = {span("aaa"), span("aba")};
    llm_bpe bpe;
    size_t ids[3] = {97, 97, 97};
    ck_assert_int_eq(llm_bpe_learn(&bpe, docs, 2, 2, NULL), LLM_OK);
    ck_assert_uint_eq(bpe.count, 2);
    ck_assert(bpe.merges[0].left == 97 && bpe.merges[0].right == 97);
    ck_assert_uint_eq(bpe.merges[0].count, 2);        /* overlapping occurrences */
    ck_assert_uint_eq(bpe.merges[0].uses, 1);         /* one replacement */
    ck_assert_uint_eq(llm_bpe_replace(ids, 3, 97, 97, 256), 2);
    ck_assert(ids[0] == 256 && ids[1] == 97);
    ck_assert(bpe.merges[1].left == 97 && bpe.merges[1].right == 98); /* the tie rule */
    ck_assert_uint_eq(bpe.merges[1].count, 1);
    llm_bpe_free(&bpe);
    ck_assert(bpe.merges == NULL && bpe.count == 0);
    llm_bpe_free(NULL);
}
END_TEST

START_TEST(one_byte_documents_give_no_candidate)
{
    const llm_bytes docs[3] = {span("a"), span("b"), span("")};
    llm_bpe bpe;
    ck_assert_int_eq(llm_bpe_learn(&bpe, docs, 3, 5, NULL), LLM_OK);
    ck_assert_uint_eq(bpe.count, 0);
    llm_bpe_free(&bpe);
    ck_assert_int_eq(llm_bpe_learn(&bpe, NULL, 0, 5, NULL), LLM_OK);  /* no documents */
    ck_assert_uint_eq(bpe.count, 0);
    llm_bpe_free(&bpe);
    ck_assert_int_eq(llm_bpe_learn(&bpe, docs, 1, 0, NULL), LLM_OK);  /* zero rounds */
    ck_assert_uint_eq(bpe.count, 0);
    llm_bpe_free(&bpe);
}
END_TEST

START_TEST(pairs_never_cross_a_document_boundary)
{
    const llm_bytes apart[2] = {span("ab"), span("ab")}, joined[1] = {span("abab")};
    const llm_bytes ends[2] = {span("xa"), span("bx")};    /* "a" | "b" is no pair */
    llm_bpe a, j, e;
    size_t r;
    ck_assert_int_eq(llm_bpe_learn(&a, apart, 2, 4, NULL), LLM_OK);
    ck_assert_int_eq(llm_bpe_learn(&j, joined, 1, 4, NULL), LLM_OK);
    ck_assert_uint_eq(a.count, 1);
    ck_assert_uint_eq(j.count, 2);
    ck_assert(j.merges[1].left == 256 && j.merges[1].right == 256);
    ck_assert_int_eq(llm_bpe_learn(&e, ends, 2, 4, NULL), LLM_OK);
    for (r = 0; r < e.count; r++)
        ck_assert(!(e.merges[r].left == 'a' && e.merges[r].right == 'b'));
    llm_bpe_free(&a);
    llm_bpe_free(&j);
    llm_bpe_free(&e);
}
END_TEST

/* Seeded random documents over a small alphabet, learned by the library
   and by the slow definition above: the same merges, counts and uses. */
START_TEST(the_learner_agrees_with_the_definition)
{
    uint64_t s = 12345;
    size_t trial;
    for (trial = 0; trial < 300; trial++) {
        unsigned char text[8][24];
        llm_bytes docs[8];
        llm_merge want[40];
        llm_bpe bpe;
        size_t nd = 1 + trial % 8, d, i, nwant;
        for (d = 0; d < nd; d++) {
            s = s * 6364136223846793005u + 1442695040888963407u;
            docs[d].length = (size_t)(s >> 33) % 24;
            for (i = 0; i < docs[d].length; i++) {
                s = s * 6364136223846793005u + 1442695040888963407u;
                text[d][i] = (unsigned char)('a' + (s >> 40) % 3);
            }
            docs[d].bytes = text[d];
        }
        nwant = reference_learn(docs, nd, 40, want);
        ck_assert_int_eq(llm_bpe_learn(&bpe, docs, nd, 40, NULL), LLM_OK);
        ck_assert_uint_eq(bpe.count, nwant);
        for (i = 0; i < nwant; i++) {
            ck_assert_uint_eq(bpe.merges[i].left, want[i].left);
            ck_assert_uint_eq(bpe.merges[i].right, want[i].right);
            ck_assert_uint_eq(bpe.merges[i].count, want[i].count);
            ck_assert_uint_eq(bpe.merges[i].uses, want[i].uses);
        }
        llm_bpe_free(&bpe);
    }
}
END_TEST

/* Every ID of a table learned from the book's training documents spells
   bytes whose pieces are its merge's; the table is a ranking. */
START_TEST(the_books_table_spells_every_id)
{
    llm_corpus c;
    llm_bytes docs[64];
    llm_bpe bpe;
    size_t n = 0, id;
    ck_assert_int_eq(llm_corpus_load(&c, "corpus/corpus.txt", "corpus/splits.txt", NULL), LLM_OK);
    ck_assert_int_eq(llm_corpus_bytes(&c, LLM_TRAIN, docs, 64, &n, NULL), LLM_OK);
    ck_assert_int_eq(llm_bpe_learn(&bpe, docs, n, 64, NULL), LLM_OK);
    ck_assert_uint_eq(bpe.count, 64);
    for (id = 0; id < LLM_BYTE_IDS + bpe.count; id++) {
        unsigned char whole[64], left[64], right[64];
        size_t lw = 0, ll = 0, lr = 0;
        ck_assert_int_eq(llm_bpe_spell(&bpe, id, whole, sizeof whole, &lw, NULL), LLM_OK);
        if (id < LLM_BYTE_IDS) {
            ck_assert(lw == 1 && whole[0] == id);
            continue;
        }
        ck_assert_int_eq(llm_bpe_spell(&bpe, bpe.merges[id - 256].left, left, sizeof left, &ll,
                                       NULL), LLM_OK);
        ck_assert_int_eq(llm_bpe_spell(&bpe, bpe.merges[id - 256].right, right, sizeof right,
                                       &lr, NULL), LLM_OK);
        ck_assert(lw == ll + lr && memcmp(whole, left, ll) == 0
                  && memcmp(whole + ll, right, lr) == 0);
        ck_assert(bpe.merges[id - 256].count >= bpe.merges[id - 256].uses);
        if (id > 256)                             /* counts never rise with rank */
            ck_assert_uint_le(bpe.merges[id - 256].count, bpe.merges[id - 257].count);
    }
    llm_bpe_free(&bpe);
    llm_corpus_free(&c);
}
END_TEST

START_TEST(bad_tables_and_ids_are_refused_and_nothing_is_written)
{
    llm_merge loop[2] = {{256, 97, 1, 1}, {97, 98, 1, 1}}, doubling[70];
    llm_bpe bad = {loop, 2}, big = {doubling, 70}, good;
    const llm_bytes docs[1] = {span("abab")};
    unsigned char out[8];
    size_t len = 77, r;
    llm_error err;
    mark_bytes(out, sizeof out);
    REFUSED(llm_bpe_spell(&bad, 256, out, sizeof out, &len, &err), LLM_ERR_ARGUMENT,
            "bpe.spell");
    ck_assert_ptr_nonnull(strstr(err.message, "not a ranking"));
    doubling[0].left = doubling[0].right = 97;
    for (r = 1; r < 70; r++)                 /* each rank doubles the length: 2^70 bytes */
        doubling[r].left = doubling[r].right = 256 + r - 1;
    REFUSED(llm_bpe_spell(&big, 256 + 69, out, sizeof out, &len, &err), LLM_ERR_LENGTH,
            "bpe.spell");
    ck_assert_int_eq(llm_bpe_learn(&good, docs, 1, 4, NULL), LLM_OK);
    REFUSED(llm_bpe_spell(&good, 256 + good.count, out, sizeof out, &len, &err), LLM_ERR_TOKEN,
            "bpe.spell");
    REFUSED(llm_bpe_spell(&good, 257, out, 3, &len, &err), LLM_ERR_LENGTH, "bpe.spell");
    REFUSED(llm_bpe_spell(&good, 97, out, 0, &len, &err), LLM_ERR_LENGTH, "bpe.spell");
    ck_assert(marked_bytes(out, sizeof out) && len == 77);
    ck_assert_int_eq(llm_bpe_spell(&good, 257, out, 4, &len, &err), LLM_OK);
    ck_assert(len == 4 && memcmp(out, "abab", 4) == 0);
    REFUSED(llm_bpe_spell(NULL, 97, out, 8, &len, &err), LLM_ERR_ARGUMENT, "bpe.spell");
    REFUSED(llm_bpe_spell(&good, 97, out, 8, NULL, &err), LLM_ERR_ARGUMENT, "bpe.spell");
    llm_bpe_free(&good);
    ck_assert_uint_eq(llm_bpe_replace(NULL, 4, 1, 2, 3), 0);
}
END_TEST

START_TEST(bad_arguments_to_the_learner_are_refused)
{
    llm_bpe bpe, mark;
    llm_bytes docs[2] = {span("ab"), {NULL, 3}};
    llm_error err;
    mark_bytes(&mark, sizeof mark);
    bpe = mark;
    REFUSED(llm_bpe_learn(&bpe, docs, 2, 4, &err), LLM_ERR_ARGUMENT, "bpe.learn");
    REFUSED(llm_bpe_learn(NULL, docs, 1, 4, &err), LLM_ERR_ARGUMENT, "bpe.learn");
    REFUSED(llm_bpe_learn(&bpe, NULL, 2, 4, &err), LLM_ERR_ARGUMENT, "bpe.learn");
    REFUSED(llm_bpe_learn(&bpe, docs, 1, SIZE_MAX, &err), LLM_ERR_OVERFLOW, "bpe.learn");
    docs[1].bytes = (const unsigned char *)"x";
    docs[1].length = SIZE_MAX / 2;
    REFUSED(llm_bpe_learn(&bpe, docs, 2, 4, &err), LLM_ERR_OVERFLOW, "bpe.learn");
    ck_assert(memcmp(&bpe, &mark, sizeof bpe) == 0);
}
END_TEST

START_TEST(each_refused_allocation_leaves_the_table_untouched)
{
    const llm_bytes docs[2] = {span("the cat and the hat"), span("кот и кошка")};
    llm_bpe bpe, mark, good;
    llm_error err;
    unsigned char out[32];
    size_t refused = 0, len = 0;
    mark_bytes(&mark, sizeof mark);
    WALK(&refused, bpe = mark, llm_bpe_learn(&bpe, docs, 2, 8, &err),
         memcmp(&bpe, &mark, sizeof bpe) == 0, (void)0);
    ck_assert_uint_eq(refused, 5);
    good = bpe;
    WALK(&refused, mark_bytes(out, sizeof out),
         llm_bpe_spell(&good, 256 + good.count - 1, out, sizeof out, &len, &err),
         marked_bytes(out, sizeof out), (void)0);
    ck_assert_uint_eq(refused, 2);
    llm_bpe_free(&good);
}
END_TEST

START_TEST(a_partition_as_bytes_is_exactly_its_documents)
{
    llm_corpus c;
    llm_bytes docs[64], kept[64];
    llm_error err;
    size_t p, n = 77, i, k, total = 0;
    ck_assert_int_eq(llm_corpus_load(&c, "corpus/corpus.txt", "corpus/splits.txt", NULL), LLM_OK);
    for (p = 0; p < 3; p++) {
        ck_assert_int_eq(llm_corpus_bytes(&c, (llm_partition)p, docs, 64, &n, NULL), LLM_OK);
        ck_assert_uint_eq(n, c.in[p]);
        for (k = 0, i = 0; i < c.count; i++)
            if (c.docs[i].partition == (llm_partition)p) {
                ck_assert_ptr_eq(docs[k].bytes, c.docs[i].text);
                ck_assert_uint_eq(docs[k++].length, c.docs[i].length);
            }
        ck_assert_uint_eq(k, n);
        total += n;
    }
    ck_assert_uint_eq(total, c.count);
    memset(docs, 0x5a, sizeof docs);
    memcpy(kept, docs, sizeof docs);
    n = 77;
    REFUSED(llm_corpus_bytes(&c, LLM_TRAIN, docs, c.in[LLM_TRAIN] - 1, &n, &err), LLM_ERR_LENGTH,
            "corpus.bytes");
    REFUSED(llm_corpus_bytes(&c, (llm_partition)3, docs, 64, &n, &err), LLM_ERR_ARGUMENT,
            "corpus.bytes");
    REFUSED(llm_corpus_bytes(NULL, LLM_TRAIN, docs, 64, &n, &err), LLM_ERR_ARGUMENT,
            "corpus.bytes");
    REFUSED(llm_corpus_bytes(&c, LLM_TRAIN, NULL, 64, &n, &err), LLM_ERR_ARGUMENT,
            "corpus.bytes");
    REFUSED(llm_corpus_bytes(&c, LLM_TRAIN, docs, 64, NULL, &err), LLM_ERR_ARGUMENT,
            "corpus.bytes");
    ck_assert(n == 77 && memcmp(docs, kept, sizeof docs) == 0);
    llm_corpus_free(&c);
}
END_TEST

Suite *ch03_learn_bpe_merges_suite(void)
{
    const TTest *tests[] = {
        the_course_fixture_aaa_aba,
        one_byte_documents_give_no_candidate,
        pairs_never_cross_a_document_boundary,
        the_learner_agrees_with_the_definition,
        the_books_table_spells_every_id,
        bad_tables_and_ids_are_refused_and_nothing_is_written,
        bad_arguments_to_the_learner_are_refused,
        each_refused_allocation_leaves_the_table_untouched,
        a_partition_as_bytes_is_exactly_its_documents,
    };
    return suite_of("ch03 learn bpe merges", tcase_of("bpe", 0, tests, COUNT(tests)));
}
