/* error.c -- recording rejections; the one allocator. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "llm/error.h"

static const char *const status_names[LLM_STATUS_COUNT] = {
    [LLM_OK] = "ok",
    [LLM_ERR_ARGUMENT] = "argument",
    [LLM_ERR_RANK] = "rank",
    [LLM_ERR_INDEX] = "index",
    [LLM_ERR_OVERFLOW] = "overflow",
    [LLM_ERR_LENGTH] = "length",
    [LLM_ERR_ALLOC] = "alloc",
    [LLM_ERR_SHAPE] = "shape",
    [LLM_ERR_AXIS] = "axis",
    [LLM_ERR_CONTIGUITY] = "contiguity",
    [LLM_ERR_BROADCAST] = "broadcast",
    [LLM_ERR_EMPTY] = "empty",
    [LLM_ERR_TARGET] = "target",
    [LLM_ERR_NONFINITE] = "nonfinite",
    [LLM_ERR_TAPE] = "tape",
    [LLM_ERR_NAME] = "name",
    [LLM_ERR_CONFIG] = "config",
};

llm_status llm_fail(llm_error *err, llm_status code, const char *stage,
                    const char *fmt, ...)
{
    if (err != NULL) {
        va_list ap;
        err->code = code;
        snprintf(err->stage, sizeof err->stage, "%s", stage != NULL ? stage : "");
        err->message[0] = '\0';
        if (fmt != NULL) {
            va_start(ap, fmt);
            vsnprintf(err->message, sizeof err->message, fmt, ap);
            va_end(ap);
        }
    }
    return code;
}

const char *llm_status_name(llm_status code)
{
    if ((int)code < 0 || code >= LLM_STATUS_COUNT || status_names[code] == NULL)
        return "unknown";
    return status_names[code];
}

char *llm_fmt_sizes(char *buf, size_t size, const size_t *x, size_t n)
{
    size_t used = 0, i;
    if (buf == NULL || size == 0)
        return buf;
    buf[0] = '\0';
    if (n == 0)
        snprintf(buf, size, "[]");
    for (i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%zu%s",
                                 i == 0 ? "[" : ", ", x[i], i + 1 == n ? "]" : "");
    return buf;
}

static size_t alloc_calls, alloc_fail_at;      /* one thread only */

static int alloc_refused(void)
{
    alloc_calls++;
    return alloc_fail_at != 0 && alloc_calls == alloc_fail_at;
}

void *llm_malloc(size_t size)
{
    return alloc_refused() ? NULL : malloc(size);
}

void *llm_calloc(size_t count, size_t size)
{
    return alloc_refused() ? NULL : calloc(count, size);
}

void *llm_realloc(void *block, size_t size)
{
    return alloc_refused() ? NULL : realloc(block, size);
}

void llm_alloc_fail_at(size_t n)
{
    alloc_calls = 0;
    alloc_fail_at = n;
}

size_t llm_alloc_calls(void)
{
    return alloc_calls;
}
