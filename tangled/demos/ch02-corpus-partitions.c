/* ch02-corpus-partitions -- the book's corpus, its checksum and its split. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/data.h"
#include "llm/evidence.h"

static const char *const corpus_path = "corpus/corpus.txt";
static const char *const manifest_path = "corpus/splits.txt";
static llm_corpus *corpus;           /* loaded by setup */

static void release_corpus(void *c)
{
    llm_corpus_free(c);
}

static void setup(llm_demo *d)
{
    corpus = llm_own(d, sizeof *corpus, release_corpus);
    if (corpus != NULL)
        (void)LLM_TRY(d, llm_corpus_load(corpus, corpus_path, manifest_path, &d->err));
}
static const char *hex64(uint64_t h)
{
    return llm_text("%016llx", (unsigned long long)h);
}

static void checksum_steps(llm_demo *d)
{
    const unsigned char *cat = (const unsigned char *)"cat";
    uint64_t h = LLM_FNV_BASIS;
    size_t i;
    printf("fnv1a64(\"\")=%s", llm_put(d, "fnv_empty", hex64(llm_fnv1a64(NULL, 0))));
    printf(" basis=%s\n", llm_put(d, "fnv_basis", hex64(LLM_FNV_BASIS)));
    for (i = 0; i < 3; i++) {
        const uint64_t mixed = h ^ cat[i];
        h = mixed * LLM_FNV_PRIME;
        printf("step %zu byte %02X: xor=%s times P=%s\n", i, cat[i], hex64(mixed), hex64(h));
        llm_row(d, "fnv_steps", llm_text("%zu", i), llm_text("%02X", cat[i]), hex64(mixed),
                hex64(h), NULL);
    }
    printf("fnv1a64(\"cat\")=%s\n", llm_put(d, "fnv_cat", hex64(llm_fnv1a64(cat, 3))));
    printf("fnv1a64(\"a\")=%s (test vector af63dc4c8601ec8c)\n",
           llm_put(d, "fnv_a", hex64(llm_fnv1a64((const unsigned char *)"a", 1))));
    llm_demo_check(d, h == llm_fnv1a64(cat, 3), "the steps give the checksum");
    llm_demo_check(d, llm_fnv1a64((const unsigned char *)"a", 1)
                          == UINT64_C(0xaf63dc4c8601ec8c), "the published test vector");
}
static void partitions(llm_demo *d)
{
    static const char *const key[LLM_PARTITIONS] = {"train", "val", "test"};
    size_t docs[LLM_PARTITIONS] = {0}, bytes[LLM_PARTITIONS] = {0}, i, j, scenes = 0;
    const char *first[LLM_PARTITIONS] = {NULL, NULL, NULL};
    const llm_corpus_doc *paragraph_end;
    int together = 1;
    printf("corpus %s: %s bytes, checksum fnv1a64:%s, split %s\n", corpus_path,
           llm_put(d, "corpus_bytes", llm_text("%zu", corpus->size)),
           llm_put(d, "checksum", hex64(corpus->checksum)), llm_put(d, "split", corpus->split));
    for (i = 0; i < corpus->count; i++) {
        const llm_corpus_doc *doc = &corpus->docs[i];
        docs[doc->partition]++;
        bytes[doc->partition] += doc->length;
        if (first[doc->partition] == NULL)
            first[doc->partition] = doc->group;
        for (j = i + 1; j < corpus->count; j++)
            if (strcmp(corpus->docs[j].group, doc->group) == 0) {
                scenes++;
                together = together && corpus->docs[j].partition == doc->partition;
                llm_row(d, "scenes", llm_text("%zu", scenes), doc->group,
                        llm_partition_name(doc->partition), llm_text("%zu", doc->length),
                        llm_text("%zu", corpus->docs[j].length), NULL);
            }
    }
    printf("documents=%s scenes=%s\n", llm_put(d, "docs", llm_text("%zu", corpus->count)),
           llm_put(d, "scenes", llm_text("%zu", scenes)));
    for (i = 0; i < LLM_PARTITIONS; i++) {
        const char *name = llm_partition_name((llm_partition)i);
        printf("%s: documents=%s", name,
               llm_put(d, llm_text("%s_docs", key[i]), llm_text("%zu", docs[i])));
        printf(" scenes=%s bytes=%s", llm_put(d, llm_text("%s_scenes", key[i]),
                                             llm_text("%zu", docs[i] / 2)),
               llm_text("%zu", bytes[i]));
        printf(" first scene=%s\n", llm_put(d, llm_text("%s_first", key[i]), first[i]));
        llm_row(d, "partitions", name, llm_text("%zu", docs[i]), llm_text("%zu", docs[i] / 2),
                llm_text("%zu", bytes[i]), first[i], NULL);
    }
    paragraph_end = &corpus->docs[0];                /* the first paragraph of scene 1 */
    for (i = 0; i < 2; i++) {
        const llm_corpus_doc *doc = &corpus->docs[i];
        const unsigned char *nl = memchr(doc->text, '\n', doc->length);
        const size_t len = nl != NULL ? (size_t)(nl - doc->text) : doc->length;
        llm_put(d, i == 0 ? "sample_en" : "sample_ru",
                llm_text("%.*s", (int)len, (const char *)doc->text));
    }
    (void)paragraph_end;
    llm_demo_check(d, together, "both versions of every scene share a partition");
    llm_demo_check(d, docs[0] + docs[1] + docs[2] == corpus->count && 2 * scenes == corpus->count,
                   "the partitions add up to the corpus, two documents a scene");
}
/* The file at path, whole, in a buffer the caller frees; NULL on failure. */
static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    unsigned char *buf = NULL;
    long size;
    if (fp != NULL && fseek(fp, 0, SEEK_END) == 0 && (size = ftell(fp)) >= 0
        && fseek(fp, 0, SEEK_SET) == 0 && (buf = malloc((size_t)size + 1)) != NULL
        && fread(buf, 1, (size_t)size, fp) != (size_t)size) {
        free(buf);
        buf = NULL;
    }
    if (fp != NULL)
        fclose(fp);
    *n = buf != NULL ? (size_t)size : 0;
    return buf;
}

/* A copy of src (n bytes) with the first from replaced by to, every one
   when all is set, in a buffer of room bytes; *len its length. */
static size_t edit(char *dst, size_t room, const unsigned char *src, size_t n,
                   const char *from, const char *to, int all)
{
    const size_t lf = strlen(from), lt = strlen(to);
    size_t i = 0, len = 0;
    int done = 0;
    while (i < n && len + lt < room) {
        if ((!done || all) && i + lf <= n && memcmp(src + i, from, lf) == 0) {
            memcpy(dst + len, to, lt);
            len += lt;
            i += lf;
            done = 1;
        } else {
            dst[len++] = (char)src[i++];
        }
    }
    return len;
}

static void refuse_parse(llm_demo *d, const char *what, const unsigned char *text, size_t n,
                         const char *manifest, size_t m, llm_status want, int *untouched)
{
    llm_corpus c, mark;
    memset(&mark, 0x5a, sizeof mark);
    c = mark;
    llm_refuse_as(d, what, llm_corpus_parse(&c, text, n, (const unsigned char *)manifest, m,
                                            &d->err), want);
    printf("  %s\n", d->err.message);
    *untouched = *untouched && memcmp(&c, &mark, sizeof c) == 0;
}

static void refusals(llm_demo *d)
{
    size_t n = 0, m = 0, len, i;
    unsigned char *text = slurp(corpus_path, &n), *bad = NULL;
    unsigned char *manifest = slurp(manifest_path, &m);
    char edited[4096], named[64];
    int untouched = 1;
    llm_corpus c, mark;
    if (!llm_demo_check(d, text != NULL && manifest != NULL && m + 64 < sizeof edited,
                        "the demo reads the corpus and the manifest")
        || !llm_demo_check(d, (bad = malloc(n + 1)) != NULL, "memory for a copy")) {
        free(text);
        free(manifest);
        return;
    }
    len = edit(edited, sizeof edited, manifest, m, "en-06-market-rain train",
               "en-04-stolen-fish train", 0);
    refuse_parse(d, "en-04 listed twice, en-06 left out", text, n, edited, len, LLM_ERR_SPLIT,
                 &untouched);
    llm_put(d, "twice_message", d->err.message);
    len = edit(edited, sizeof edited, manifest, m, "ru-05-harbour-map validation",
               "ru-05-harbour-map train", 0);
    refuse_parse(d, "ru-05 moved alone to train", text, n, edited, len, LLM_ERR_SPLIT,
                 &untouched);
    llm_put(d, "alone_message", d->err.message);
    len = edit(edited, sizeof edited, manifest, m, " test\n", " train\n", 1);
    refuse_parse(d, "every test document moved to train", text, n, edited, len, LLM_ERR_SPLIT,
                 &untouched);
    memcpy(bad, text, n);
    for (i = 0; i < n && bad[i] != 'M'; i++)         /* the first capital M, of Mira */
        ;
    if (i < n)
        bad[i] = 'N';
    refuse_parse(d, "one byte of the corpus changed", bad, n, (const char *)manifest, m,
                 LLM_ERR_CHECKSUM, &untouched);
    llm_put(d, "changed_at", llm_text("%zu", i));
    llm_put(d, "checksum_message", d->err.message);
    if (i < n)
        bad[i] = 0xC0;
    snprintf(named, sizeof named, "fnv1a64:%016llx",
             (unsigned long long)llm_fnv1a64(bad, n));
    len = edit(edited, sizeof edited, manifest, m, "fnv1a64:7e91ef4e8b8beaa7", named, 0);
    refuse_parse(d, "a byte C0 in the corpus, its checksum in the manifest", bad, n, edited,
                 len, LLM_ERR_UTF8, &untouched);
    len = edit(edited, sizeof edited, manifest, m, "fnv1a64:7e91ef4e8b8beaa7",
               "fnv1a64:7e91ef4e8b8beaa", 0);
    refuse_parse(d, "a checksum of 15 digits", text, n, edited, len, LLM_ERR_FORMAT,
                 &untouched);
    memset(&mark, 0x5a, sizeof mark);
    len = edit(edited, sizeof edited, manifest, m, "en-09-letter-for-vera test",
               "en-09-letter-for-vera validation", 0);
    c = mark;                     /* the second exercise's manifest: trace only */
    if (llm_corpus_parse(&c, text, n, (const unsigned char *)edited, len, &d->err) != LLM_OK)
        llm_put(d, "divided_message", d->err.message);
    else
        llm_corpus_free(&c);
    c = mark;
    llm_refuse_as(d, "corpus/missing.txt", llm_corpus_load(&c, "corpus/missing.txt",
                                                           manifest_path, &d->err),
                  LLM_ERR_FILE);
    printf("  %s\n", d->err.message);
    llm_put(d, "file_message", d->err.message);
    untouched = untouched && memcmp(&c, &mark, sizeof c) == 0;
    printf("refused calls left the corpus untouched: %s\n",
           llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "refused calls left the corpus untouched");
    free(bad);
    free(text);
    free(manifest);
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {checksum_steps, partitions, refusals, NULL};
    return llm_demo_main(argc, argv, "ch02-corpus-partitions", setup, sections);
}
