/* corpus.c -- the book's corpus: its checksum, its documents, its split. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/data.h"
#include "llm/tokenizer.h"

uint64_t llm_fnv1a64(const unsigned char *bytes, size_t n)
{
    uint64_t h = LLM_FNV_BASIS;
    size_t i;
    if (bytes == NULL)
        return h;
    for (i = 0; i < n; i++) {
        h ^= bytes[i];
        h *= LLM_FNV_PRIME;
    }
    return h;
}
/* The line at *at of text (n bytes): *line and *len, without its newline;
   *at moves past it. Returns 0 when no line is left. */
static int next_line(const unsigned char *text, size_t n, size_t *at,
                     const unsigned char **line, size_t *len)
{
    const unsigned char *nl;
    if (*at >= n)
        return 0;
    *line = text + *at;
    nl = memchr(*line, '\n', n - *at);
    *len = nl != NULL ? (size_t)(nl - *line) : n - *at;
    *at += *len + (nl != NULL);
    return 1;
}

typedef struct word {
    const unsigned char *at;
    size_t len;
} word;

/* Splits the line into words at single spaces: at most max words go into
   w; returns how many words the line has (an empty word counts, so two
   spaces in a row make the count wrong, as they should). */
static size_t words(const unsigned char *line, size_t len, word *w, size_t max)
{
    size_t count = 0, start = 0, i;
    for (i = 0; i <= len; i++)
        if (i == len || line[i] == ' ') {
            if (count < max) {
                w[count].at = line + start;
                w[count].len = i - start;
            }
            count++;
            start = i + 1;
        }
    return count;
}

static int word_is(word w, const char *s)
{
    return w.len == strlen(s) && memcmp(w.at, s, w.len) == 0;
}

/* Copies w into name[LLM_DOC_NAME]; 0 when it is empty or does not fit. */
static int take_name(char *name, word w)
{
    if (w.len == 0 || w.len >= LLM_DOC_NAME)
        return 0;
    memcpy(name, w.at, w.len);
    name[w.len] = '\0';
    return 1;
}
typedef struct entry {
    char id[LLM_DOC_NAME];
    llm_partition partition;
    size_t line;                /* its line in the manifest, from 1 */
} entry;

typedef struct manifest {
    char split[LLM_DOC_NAME];
    uint64_t checksum;
    entry *entries;
    size_t count;
} manifest;

/* The sixteen lowercase hexadecimal digits of w as *h; 0 if they are not. */
static int hex64(word w, uint64_t *h)
{
    size_t i;
    *h = 0;
    if (w.len != 16)
        return 0;
    for (i = 0; i < 16; i++) {
        const unsigned char c = w.at[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return 0;
        *h = *h << 4 | (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    return 1;
}

/* The partition named w, in *p; 0 if w names none. */
static int partition_of(word w, llm_partition *p)
{
    static const char *const names[LLM_PARTITIONS] = {"train", "validation", "test"};
    int k;
    for (k = 0; k < LLM_PARTITIONS; k++)
        if (word_is(w, names[k])) {
            *p = (llm_partition)k;
            return 1;
        }
    return 0;
}

/* Reads the manifest's n bytes into *m, its entries allocated. */
static llm_status read_manifest(manifest *m, const unsigned char *text, size_t n,
                                const char *stage, llm_error *err)
{
    const unsigned char *line;
    size_t at = 0, len, lineno = 0, bad = 0, lines = 0;
    int header = 0;                 /* the header lines read: split, corpus */
    word w[2];
    while (next_line(text, n, &at, &line, &len))
        lines++;
    m->count = 0;
    m->entries = llm_malloc((lines > 0 ? lines : 1) * sizeof *m->entries);
    if (m->entries == NULL)
        return llm_fail(err, LLM_ERR_ALLOC, stage, "no memory for %zu manifest lines", lines);
    for (at = 0; bad == 0 && next_line(text, n, &at, &line, &len);) {
        const size_t nw = words(line, len, w, 2);
        entry *e = &m->entries[m->count];
        lineno++;
        if (len == 0 || line[0] == '#')
            continue;
        if (header == 0) {
            if (nw == 2 && word_is(w[0], "split") && take_name(m->split, w[1]))
                header = 1;
            else
                bad = lineno;
        } else if (header == 1) {
            word digits = {NULL, 0};
            if (nw == 2 && w[1].len == 24 && memcmp(w[1].at, "fnv1a64:", 8) == 0) {
                digits.at = w[1].at + 8;
                digits.len = 16;
            }
            if (nw == 2 && word_is(w[0], "corpus") && hex64(digits, &m->checksum))
                header = 2;
            else
                bad = lineno;
        } else if (nw == 2 && take_name(e->id, w[0]) && partition_of(w[1], &e->partition)) {
            e->line = lineno;
            m->count++;
        } else {
            bad = lineno;
        }
    }
    if (bad == 0 && header == 2)
        return LLM_OK;
    free(m->entries);
    if (bad == 0)
        return llm_fail(err, LLM_ERR_FORMAT, stage,
                        "the manifest ends after %zu lines, before its header is complete",
                        lineno);
    return llm_fail(err, LLM_ERR_FORMAT, stage, "manifest line %zu: expected %s", bad,
                    header == 0 ? "'split NAME'"
                    : header == 1 ? "'corpus fnv1a64:' and 16 lowercase hexadecimal digits"
                                  : "'ID PARTITION', the partition train, validation or test");
}
/* Reads the documents of text (n bytes, UTF-8 already checked) into
   docs[0..*count-1]; docs has room for every header line. */
static llm_status read_documents(const unsigned char *text, size_t n, llm_corpus_doc *docs,
                                 size_t *count, const char *stage, llm_error *err)
{
    enum { BETWEEN, INSIDE, AFTER } state = BETWEEN;
    const unsigned char *line, *start = text;
    size_t at = 0, len, lineno = 0, nd = 0, i;
    word w[4];
    while (next_line(text, n, &at, &line, &len)) {
        lineno++;
        if (state == BETWEEN) {
            llm_corpus_doc *d = &docs[nd];
            if (words(line, len, w, 4) != 4 || !word_is(w[0], "@doc")
                || !take_name(d->id, w[1]) || !take_name(d->lang, w[2])
                || !take_name(d->group, w[3]))
                return llm_fail(err, LLM_ERR_FORMAT, stage,
                                "corpus line %zu: expected '@doc ID LANG GROUP'", lineno);
            if (strcmp(d->lang, "en") != 0 && strcmp(d->lang, "ru") != 0)
                return llm_fail(err, LLM_ERR_FORMAT, stage,
                                "corpus line %zu: language '%s' is neither en nor ru", lineno,
                                d->lang);
            for (i = 0; i < nd; i++) {
                if (strcmp(docs[i].id, d->id) == 0)
                    return llm_fail(err, LLM_ERR_FORMAT, stage,
                                    "corpus line %zu: a second document %s", lineno, d->id);
                if (strcmp(docs[i].group, d->group) == 0 && strcmp(docs[i].lang, d->lang) == 0)
                    return llm_fail(err, LLM_ERR_FORMAT, stage,
                                    "corpus line %zu: group %s has a second %s document",
                                    lineno, d->group, d->lang);
            }
            start = text + at;
            state = INSIDE;
        } else if (state == INSIDE && len == 4 && memcmp(line, "@end", 4) == 0) {
            docs[nd].text = start;
            docs[nd].length = line > start ? (size_t)(line - 1 - start) : 0;
            nd++;
            state = AFTER;
        } else if (state == INSIDE && len > 0 && line[0] == '@') {
            return llm_fail(err, LLM_ERR_FORMAT, stage,
                            "corpus line %zu: a text line may not begin with '@'", lineno);
        } else if (state == AFTER) {
            if (len != 0)
                return llm_fail(err, LLM_ERR_FORMAT, stage,
                                "corpus line %zu: expected an empty line after '@end'", lineno);
            state = BETWEEN;
        }
    }
    if (state != BETWEEN || (n > 0 && text[n - 1] != '\n'))
        return llm_fail(err, LLM_ERR_FORMAT, stage,
                        "the corpus ends at line %zu %s", lineno,
                        state == INSIDE ? "inside a document"
                        : state == AFTER ? "without the empty line after '@end'"
                                         : "without a newline");
    for (i = 0; i < nd; i++) {                  /* every group has both languages */
        size_t j, pair = 0;
        for (j = 0; j < nd; j++)
            pair += strcmp(docs[j].group, docs[i].group) == 0;
        if (pair != 2)
            return llm_fail(err, LLM_ERR_FORMAT, stage,
                            "group %s has one document, %s, not one of each language",
                            docs[i].group, docs[i].id);
    }
    *count = nd;
    return LLM_OK;
}
/* Gives each document its partition from m's entries and counts them in
   in[]; assigned[] (one per document) is scratch. */
static llm_status check_split(const manifest *m, llm_corpus_doc *docs, size_t nd,
                              size_t *named, size_t in[LLM_PARTITIONS], const char *stage,
                              llm_error *err)
{
    size_t e, i, j;
    for (i = 0; i < nd; i++)
        named[i] = 0;
    for (e = 0; e < m->count; e++) {
        for (i = 0; i < nd && strcmp(docs[i].id, m->entries[e].id) != 0; i++)
            ;
        if (i == nd)
            return llm_fail(err, LLM_ERR_SPLIT, stage,
                            "manifest line %zu names %s, which is not in the corpus",
                            m->entries[e].line, m->entries[e].id);
        if (named[i] != 0)
            return llm_fail(err, LLM_ERR_SPLIT, stage,
                            "manifest line %zu lists %s again (first on line %zu)",
                            m->entries[e].line, docs[i].id, named[i]);
        named[i] = m->entries[e].line;
        docs[i].partition = m->entries[e].partition;
    }
    for (i = 0; i < nd; i++)
        if (named[i] == 0)
            return llm_fail(err, LLM_ERR_SPLIT, stage, "%s is in no partition", docs[i].id);
    for (i = 0; i < nd; i++)
        for (j = i + 1; j < nd; j++)
            if (strcmp(docs[i].group, docs[j].group) == 0
                && docs[i].partition != docs[j].partition)
                return llm_fail(err, LLM_ERR_SPLIT, stage,
                                "group %s is divided: %s in %s, %s in %s", docs[i].group,
                                docs[i].id, llm_partition_name(docs[i].partition), docs[j].id,
                                llm_partition_name(docs[j].partition));
    for (i = 0; i < LLM_PARTITIONS; i++)
        in[i] = 0;
    for (i = 0; i < nd; i++)
        in[docs[i].partition]++;
    for (i = 0; i < LLM_PARTITIONS; i++)
        if (in[i] == 0)
            return llm_fail(err, LLM_ERR_SPLIT, stage, "the %s partition has no document",
                            llm_partition_name((llm_partition)i));
    return LLM_OK;
}

const char *llm_partition_name(llm_partition p)
{
    static const char *const names[LLM_PARTITIONS] = {"train", "validation", "test"};
    return (int)p >= 0 && (int)p < LLM_PARTITIONS ? names[p] : "?";
}
llm_status llm_corpus_parse(llm_corpus *corpus, const unsigned char *text, size_t n,
                            const unsigned char *manifest_text, size_t m, llm_error *err)
{
    const char *stage = "corpus.parse";
    manifest mf;
    llm_corpus c;
    const unsigned char *line;
    size_t at = 0, len, headers = 0, scalars, i, *named = NULL;
    llm_status st;
    if (corpus == NULL || (text == NULL && n > 0) || (manifest_text == NULL && m > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    if ((st = read_manifest(&mf, manifest_text, m, stage, err)) != LLM_OK)
        return st;
    memset(&c, 0, sizeof c);
    c.checksum = llm_fnv1a64(text, n);
    if (c.checksum != mf.checksum) {
        free(mf.entries);
        return llm_fail(err, LLM_ERR_CHECKSUM, stage,
                        "the corpus is fnv1a64:%016llx, the manifest names fnv1a64:%016llx",
                        (unsigned long long)c.checksum, (unsigned long long)mf.checksum);
    }
    if ((st = llm_utf8_count(text, n, &scalars, err)) != LLM_OK) {
        free(mf.entries);
        return llm_pass(err, st, stage);
    }
    while (next_line(text, n, &at, &line, &len))
        headers += len >= 5 && memcmp(line, "@doc ", 5) == 0;
    c.docs = llm_calloc(headers > 0 ? headers : 1, sizeof *c.docs);
    named = llm_malloc((headers > 0 ? headers : 1) * sizeof *named);
    c.bytes = llm_malloc(n > 0 ? n : 1);
    if (c.docs == NULL || named == NULL || c.bytes == NULL)
        st = llm_fail(err, LLM_ERR_ALLOC, stage, "no memory for a corpus of %zu bytes", n);
    if (st == LLM_OK)
        st = read_documents(text, n, c.docs, &c.count, stage, err);
    if (st == LLM_OK)
        st = check_split(&mf, c.docs, c.count, named, c.in, stage, err);
    free(mf.entries);
    free(named);
    if (st != LLM_OK) {
        free(c.docs);
        free(c.bytes);
        return st;
    }
    if (n > 0)
        memcpy(c.bytes, text, n);
    for (i = 0; i < c.count; i++)               /* the texts now point into the copy */
        c.docs[i].text = c.bytes + (c.docs[i].text - text);
    c.size = n;
    memcpy(c.split, mf.split, sizeof c.split);
    *corpus = c;
    return LLM_OK;
}

void llm_corpus_free(llm_corpus *corpus)
{
    if (corpus == NULL)
        return;
    free(corpus->docs);
    free(corpus->bytes);
    memset(corpus, 0, sizeof *corpus);
}
/* The bytes of the file at path in a new buffer *bytes of *n bytes. */
static llm_status read_file(const char *path, unsigned char **bytes, size_t *n,
                            const char *stage, llm_error *err)
{
    FILE *fp = fopen(path, "rb");
    unsigned char *buf = NULL, *grown;
    size_t used = 0, room = 0, got;
    if (fp == NULL)
        return llm_fail(err, LLM_ERR_FILE, stage, "cannot open %s: %s", path, strerror(errno));
    do {
        if (used == room) {
            room = room > 0 ? 2 * room : 65536;
            if ((grown = llm_realloc(buf, room)) == NULL) {
                free(buf);
                fclose(fp);
                return llm_fail(err, LLM_ERR_ALLOC, stage, "no memory to read %s", path);
            }
            buf = grown;
        }
        got = fread(buf + used, 1, room - used, fp);
        used += got;
    } while (got > 0);
    if (ferror(fp)) {
        const int why = errno;
        free(buf);
        fclose(fp);
        return llm_fail(err, LLM_ERR_FILE, stage, "cannot read %s: %s", path, strerror(why));
    }
    fclose(fp);
    *bytes = buf;
    *n = used;
    return LLM_OK;
}

llm_status llm_corpus_load(llm_corpus *corpus, const char *corpus_path,
                           const char *manifest_path, llm_error *err)
{
    const char *stage = "corpus.load";
    unsigned char *text = NULL, *manifest_text = NULL;
    size_t n = 0, m = 0;
    llm_status st;
    if (corpus == NULL || corpus_path == NULL || manifest_path == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    st = read_file(manifest_path, &manifest_text, &m, stage, err);
    if (st == LLM_OK)
        st = read_file(corpus_path, &text, &n, stage, err);
    if (st == LLM_OK)
        st = llm_pass(err, llm_corpus_parse(corpus, text, n, manifest_text, m, err), stage);
    free(text);
    free(manifest_text);
    return st;
}
