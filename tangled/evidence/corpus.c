/* evidence/corpus.c -- the demo layer's corpus, tokenizer and encoded
   documents. */
#include <stdlib.h>

#include "llm/data.h"
#include "llm/evidence.h"
#include "llm/tokenizer.h"

static void release_corpus(void *c)
{
    llm_corpus_free(c);
}

static void release_tokenizer(void *t)
{
    llm_tokenizer_free(t);
}

typedef struct encoded {
    llm_doc *docs;
    size_t *ids;
} encoded;

static void release_encoded(void *p)
{
    encoded *e = p;
    free(e->docs);
    free(e->ids);
}

llm_corpus *llm_own_corpus(llm_demo *d)
{
    llm_corpus *c = llm_own(d, sizeof *c, release_corpus);
    if (c == NULL || !LLM_TRY(d, llm_corpus_load(c, "corpus/corpus.txt", "corpus/splits.txt",
                                                 &d->err)))
        return NULL;
    return c;
}

llm_tokenizer *llm_own_book_tokenizer(llm_demo *d, const llm_corpus *corpus)
{
    llm_tokenizer *tok = llm_own(d, sizeof *tok, release_tokenizer);
    llm_bytes *docs;
    llm_bpe bpe = {NULL, 0};
    size_t n = 0;
    if (tok == NULL || corpus == NULL)
        return NULL;
    docs = malloc((corpus->count + 1) * sizeof *docs);
    if (!llm_demo_check(d, docs != NULL, "memory for the training documents"))
        return NULL;
    if (LLM_TRY(d, llm_corpus_bytes(corpus, LLM_TRAIN, docs, corpus->count, &n, &d->err))
        && LLM_TRY(d, llm_bpe_learn(&bpe, docs, n, LLM_BOOK_MERGES, &d->err)))
        (void)LLM_TRY(d, llm_tokenizer_init(tok, &bpe, &d->err));
    llm_bpe_free(&bpe);
    free(docs);
    return d->ok ? tok : NULL;
}

llm_doc *llm_own_encoded(llm_demo *d, const llm_tokenizer *tok, const llm_corpus *corpus,
                         int partition, size_t *n)
{
    encoded *e = llm_own(d, sizeof *e, release_encoded);
    size_t i, room = 0, used = 0, len = 0;
    *n = 0;
    if (e == NULL || tok == NULL || corpus == NULL)
        return NULL;
    for (i = 0; i < corpus->count; i++)
        if ((int)corpus->docs[i].partition == partition)
            room += corpus->docs[i].length + 2;
    e->docs = malloc((corpus->count + 1) * sizeof *e->docs);
    e->ids = malloc((room + 1) * sizeof *e->ids);
    if (!llm_demo_check(d, e->docs != NULL && e->ids != NULL, "memory for encoded documents"))
        return NULL;
    for (i = 0; i < corpus->count; i++) {
        const llm_corpus_doc *doc = &corpus->docs[i];
        if ((int)doc->partition != partition)
            continue;
        if (!LLM_TRY(d, llm_tokenizer_encode_document(tok, doc->text, doc->length,
                                                      e->ids + used, room - used, &len,
                                                      &d->err)))
            return NULL;
        e->docs[*n].ids = e->ids + used;
        e->docs[(*n)++].length = len;
        used += len;
    }
    return e->docs;
}
