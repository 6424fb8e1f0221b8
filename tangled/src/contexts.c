/* contexts.c -- the C IDs before each target, BOS before a document. */
#include <stdint.h>

#include "llm/data.h"
#include "llm/tokenizer.h"

llm_status llm_batch_contexts(const llm_doc *docs, size_t ndocs,
                              const llm_window *windows, size_t n, size_t first,
                              size_t count, size_t C, size_t *inputs,
                              size_t *targets, llm_error *err)
{
    const char *stage = "data.batch_contexts";
    size_t b, j;
    if (windows == NULL || inputs == NULL || targets == NULL || (docs == NULL && ndocs > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "the windows, documents and output arrays must not be NULL");
    if (C == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "the context C must be at least 1");
    if (count == 0)
        return llm_fail(err, LLM_ERR_EMPTY, stage, "a batch holds at least one window, got 0");
    if (first > n || count > n - first)
        return llm_fail(err, LLM_ERR_INDEX, stage,
                        "the batch of %zu windows from position %zu runs past the %zu windows",
                        count, first, n);
    if (count > SIZE_MAX / C)
        return llm_fail(err, LLM_ERR_OVERFLOW, stage,
                        "%zu contexts of C = %zu IDs overflow size_t", count, C);
    for (b = 0; b < count; b++) {
        const llm_window *w = &windows[first + b];
        if (w->doc >= ndocs)
            return llm_fail(err, LLM_ERR_INDEX, stage,
                            "window %zu names document %zu of %zu", first + b, w->doc, ndocs);
        if (docs[w->doc].ids == NULL && docs[w->doc].length > 0)
            return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                            "document %zu has %zu IDs and no pointer to them", w->doc,
                            docs[w->doc].length);
        if (w->start >= docs[w->doc].length || docs[w->doc].length - w->start < 2)
            return llm_fail(err, LLM_ERR_INDEX, stage,
                            "window %zu at %zu has no target in document %zu of %zu IDs",
                            first + b, w->start, w->doc, docs[w->doc].length);
    }
    for (b = 0; b < count; b++) {
        const llm_window *w = &windows[first + b];
        const size_t *z = docs[w->doc].ids;
        for (j = 0; j < C; j++)        /* position start - (C - 1) + j */
            inputs[b * C + j] = w->start + j + 1 >= C ? z[w->start + j + 1 - C] : LLM_BOS;
        targets[b] = z[w->start + 1];
    }
    return LLM_OK;
}
