/* windows.c -- where the windows of a document are. */
#include <stdint.h>

#include "llm/data.h"

llm_status llm_window_count(size_t length, size_t T, size_t stride, size_t *count,
                            llm_error *err)
{
    const char *stage = "window.count";
    if (count == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    if (T == 0 || stride == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, stage,
                        "the window length T and the stride must be at least 1, got %zu "
                        "and %zu", T, stride);
    if (T == SIZE_MAX)
        return llm_fail(err, LLM_ERR_OVERFLOW, stage, "T + 1 does not fit a size_t");
    *count = length < T + 1 ? 0 : (length - T - 1) / stride + 1;
    return LLM_OK;
}

llm_status llm_windows(const llm_doc *docs, size_t ndocs, size_t T, size_t stride,
                       llm_window *windows, size_t cap, size_t *count, llm_error *err)
{
    const char *stage = "data.windows";
    size_t total = 0, d, w = 0, n = 0;
    llm_status st;
    if (count == NULL || (docs == NULL && ndocs > 0) || (windows == NULL && cap > 0))
        return llm_fail(err, LLM_ERR_ARGUMENT, stage, "a null pointer");
    for (d = 0; d < ndocs; d++) {
        if ((st = llm_window_count(docs[d].length, T, stride, &w, err)) != LLM_OK)
            return llm_pass(err, st, stage);
        if (w > SIZE_MAX - total)
            return llm_fail(err, LLM_ERR_OVERFLOW, stage, "the windows overflow a size_t");
        total += w;
    }
    if (total > cap)
        return llm_fail(err, LLM_ERR_LENGTH, stage, "%zu windows do not fit in room for %zu",
                        total, cap);
    for (d = 0; d < ndocs; d++) {
        (void)llm_window_count(docs[d].length, T, stride, &w, NULL);
        size_t k;
        for (k = 0; k < w; k++, n++) {
            windows[n].doc = d;
            windows[n].start = k * stride;
        }
    }
    *count = total;
    return LLM_OK;
}
