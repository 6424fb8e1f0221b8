/* error.c -- recording rejections; the one allocator. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/error.h"

static const char *const status_names[LLM_STATUS_COUNT] = {
    [LLM_OK] = "ok",
    [LLM_ERR_ARGUMENT] = "argument",
    [LLM_ERR_LENGTH] = "length",
    [LLM_ERR_ALLOC] = "alloc",
    [LLM_ERR_UTF8] = "utf8",
    [LLM_ERR_TOKEN] = "token",
    [LLM_ERR_FILE] = "file",
    [LLM_ERR_FORMAT] = "format",
    [LLM_ERR_CHECKSUM] = "checksum",
    [LLM_ERR_SPLIT] = "split",
    [LLM_ERR_RANK] = "rank",
    [LLM_ERR_INDEX] = "index",
    [LLM_ERR_OVERFLOW] = "overflow",
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
        err->cause[0] = '\0';
        err->message[0] = '\0';
        if (fmt != NULL) {
            va_start(ap, fmt);
            vsnprintf(err->message, sizeof err->message, fmt, ap);
            va_end(ap);
        }
    }
    return code;
}

llm_status llm_fail_from(llm_error *err, const llm_error *why, const char *stage,
                         const char *fmt, ...)
{
    const llm_status code = why != NULL ? why->code : LLM_ERR_ARGUMENT;
    if (err != NULL) {
        va_list ap;
        char first[sizeof err->cause] = "", message[sizeof err->message];
        if (why != NULL)
            snprintf(first, sizeof first, "%s", why->cause[0] != '\0' ? why->cause
                                                                       : why->stage);
        err->code = code;
        snprintf(err->stage, sizeof err->stage, "%s", stage != NULL ? stage : "");
        snprintf(err->cause, sizeof err->cause, "%s",
                 strcmp(first, err->stage) != 0 ? first : "");
        message[0] = '\0';            /* fmt's arguments may be why's, even err's */
        if (fmt != NULL) {
            va_start(ap, fmt);
            vsnprintf(message, sizeof message, fmt, ap);
            va_end(ap);
        }
        memcpy(err->message, message, sizeof message);
    }
    return code;
}

llm_status llm_pass(llm_error *err, llm_status code, const char *stage)
{
    if (code == LLM_OK || err == NULL || stage == NULL
        || strcmp(err->stage, stage) == 0)
        return code;
    if (err->cause[0] == '\0')
        memcpy(err->cause, err->stage, sizeof err->cause);
    snprintf(err->stage, sizeof err->stage, "%s", stage);
    return code;
}

char *llm_error_where(char *buf, size_t size, const llm_error *err)
{
    if (buf == NULL || size == 0)
        return buf;
    if (err == NULL)
        snprintf(buf, size, "?");
    else if (err->cause[0] == '\0')
        snprintf(buf, size, "%s", err->stage);
    else
        snprintf(buf, size, "%s <- %s", err->stage, err->cause);
    return buf;
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

#if defined(__SANITIZE_ADDRESS__)
#define LLM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LLM_ASAN 1
#endif
#endif
#ifdef LLM_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

typedef struct kept_size {         /* the blocks kept of one size */
    size_t bytes, count, room;
    void **blocks;
} kept_size;

static kept_size *kept;            /* sorted by bytes; one thread only */
static size_t nkept, kept_room, kept_bytes, keep_limit = LLM_ALLOC_KEEP;

/* The index of the entry for bytes, or where it would go. */
static size_t kept_find(size_t bytes)
{
    size_t lo = 0, hi = nkept;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (kept[mid].bytes < bytes)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A kept block of exactly bytes bytes, or NULL. */
static void *kept_take(size_t bytes)
{
    const size_t i = kept_find(bytes);
    void *block;
    if (i == nkept || kept[i].bytes != bytes || kept[i].count == 0)
        return NULL;
    block = kept[i].blocks[--kept[i].count];
    kept_bytes -= bytes;
    UNPOISON(block, bytes);
    return block;
}

/* Room for one more entry in the array *a of *room items of size item. */
static int make_room_for(void **a, size_t *room, size_t used, size_t item)
{
    size_t more;
    void *grown;
    if (used < *room)
        return 1;
    more = *room > 0 ? 2 * *room : 16;
    if (more > SIZE_MAX / item || (grown = realloc(*a, more * item)) == NULL)
        return 0;
    *a = grown;
    *room = more;
    return 1;
}

void llm_alloc_give(void *block, size_t bytes)
{
    size_t i;
    void *entries = kept, *blocks;
    if (block == NULL)
        return;
    if (bytes == 0 || bytes > keep_limit - kept_bytes) {
        free(block);
        return;
    }
    i = kept_find(bytes);
    if (i == nkept || kept[i].bytes != bytes) {            /* a new size */
        if (!make_room_for(&entries, &kept_room, nkept, sizeof *kept)) {
            free(block);
            return;
        }
        kept = entries;
        memmove(&kept[i + 1], &kept[i], (nkept - i) * sizeof *kept);
        memset(&kept[i], 0, sizeof kept[i]);
        kept[i].bytes = bytes;
        nkept++;
    }
    blocks = kept[i].blocks;
    if (!make_room_for(&blocks, &kept[i].room, kept[i].count, sizeof(void *))) {
        free(block);
        return;
    }
    kept[i].blocks = blocks;
    kept[i].blocks[kept[i].count++] = block;
    kept_bytes += bytes;
    POISON(block, bytes);
}

void llm_alloc_trim(void)
{
    size_t i, j;
    for (i = 0; i < nkept; i++) {
        for (j = 0; j < kept[i].count; j++) {
            UNPOISON(kept[i].blocks[j], kept[i].bytes);
            free(kept[i].blocks[j]);
        }
        free(kept[i].blocks);
    }
    free(kept);
    kept = NULL;
    nkept = kept_room = kept_bytes = 0;
}

void llm_alloc_keep(size_t limit)
{
    keep_limit = limit;
    if (kept_bytes > limit)
        llm_alloc_trim();
}

size_t llm_alloc_kept(void)
{
    return kept_bytes;
}
static size_t alloc_calls, alloc_fail_at;      /* one thread only */

static int alloc_refused(void)
{
    alloc_calls++;
    return alloc_fail_at != 0 && alloc_calls == alloc_fail_at;
}

void *llm_malloc(size_t size)
{
    void *block;
    if (alloc_refused())
        return NULL;
    block = kept_take(size);
    return block != NULL ? block : malloc(size);
}

void *llm_calloc(size_t count, size_t size)
{
    void *block = NULL;
    if (alloc_refused())
        return NULL;
    if (size == 0 || count <= SIZE_MAX / size)
        block = kept_take(count * size);
    if (block == NULL)
        return calloc(count, size);
    memset(block, 0, count * size);
    return block;
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
