/* corpus_bytes.c -- one partition of the corpus as byte strings. */
#include "llm/data.h"
#include "llm/tokenizer.h"

llm_status llm_corpus_bytes(const llm_corpus *corpus, llm_partition p,
                            struct llm_bytes *out, size_t cap, size_t *n, llm_error *err)
{
    const char *stage = "corpus.bytes";
    size_t i, k = 0;
    if (corpus == NULL || n == NULL || (out == NULL && cap > 0)
        || (corpus->docs == NULL && corpus->count > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    if (p != LLM_TRAIN && p != LLM_VALIDATION && p != LLM_TEST)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "%d is not a partition", (int)p);
    for (i = 0; i < corpus->count; i++)
        k += corpus->docs[i].partition == p;
    if (k > cap)
        return llm_fail(err, LLM_ERR_LENGTH, stage,
                        "%zu %s documents do not fit in room for %zu", k,
                        llm_partition_name(p), cap);
    for (k = 0, i = 0; i < corpus->count; i++)
        if (corpus->docs[i].partition == p) {
            out[k].bytes = corpus->docs[i].text;
            out[k++].length = corpus->docs[i].length;
        }
    *n = k;
    return LLM_OK;
}
