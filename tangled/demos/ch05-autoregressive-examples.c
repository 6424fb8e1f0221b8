/* ch05-autoregressive-examples -- windows inside documents, never across. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/data.h"
#include "llm/evidence.h"
#include "llm/tokenizer.h"

static const size_t fixture[6] = {0, 41, 42, 43, 44, 1}, shorter[3] = {0, 61, 1},
                    empty[2] = {0, 1};

/* Cuts one document into windows and prints and traces each one. */
static int cut(llm_demo *d, const char *name, const size_t *ids, size_t n, size_t T,
               size_t stride)
{
    const llm_doc doc = {ids, n};
    llm_window w[8];
    size_t count = 0, k;
    const char *starts = "";
    if (!LLM_TRY(d, llm_windows(&doc, 1, T, stride, w, 8, &count, &d->err)))
        return 0;
    for (k = 0; k < count; k++) {
        starts = llm_text("%s%s%zu", starts, k > 0 ? ", " : "", w[k].start);
        printf("  %s T=%zu stride=%zu start %zu: inputs %s -> targets %s\n", name, T, stride,
               w[k].start, llm_sizes(ids + w[k].start, T), llm_sizes(ids + w[k].start + 1, T));
        llm_row(d, "windows", name, llm_text("%zu, %zu", T, stride),
                llm_text("%zu", w[k].start), llm_sizes(ids + w[k].start, T),
                llm_sizes(ids + w[k].start + 1, T), NULL);
    }
    printf("%s T=%zu stride=%zu: windows=%zu, starts [%s]\n", name, T, stride, count, starts);
    llm_put(d, llm_text("%s_T%zu_k%zu", name, T, stride), llm_text("[%s]", starts));
    llm_put(d, llm_text("%s_T%zu_k%zu_n", name, T, stride), llm_text("%zu", count));
    return 1;
}

static void fixtures(llm_demo *d)
{
    llm_put(d, "fixture", llm_sizes(fixture, 6));
    llm_put(d, "short", llm_sizes(shorter, 3));
    llm_put(d, "empty", llm_sizes(empty, 2));
    llm_put(d, "suffix", llm_sizes(fixture + 3, 3));
    if (cut(d, "fixture", fixture, 6, 3, 1) && cut(d, "short", shorter, 3, 3, 1)
        && cut(d, "fixture", fixture, 6, 3, 2))
        (void)cut(d, "empty", empty, 2, 1, 1);
    {                                   /* the first exercise, into the trace only */
        static const size_t ten[10] = {0, 2, 3, 4, 5, 6, 7, 8, 9, 1};
        const llm_doc doc = {ten, 10};
        llm_window w[4];
        size_t count = 0;
        if (LLM_TRY(d, llm_windows(&doc, 1, 4, 3, w, 4, &count, &d->err))) {
            llm_put(d, "ex1_n", llm_text("%zu", count));
            llm_put(d, "ex1_s0", llm_text("%zu", w[0].start));
            llm_put(d, "ex1_s1", llm_text("%zu", count == 2 ? w[1].start : 0));
            llm_demo_check(d, count == 2, "the first exercise's windows");
        }
    }
}
static void corpus_windows(llm_demo *d)
{
    static const char *const part_key[2] = {"train", "val"};
    const llm_corpus *c = llm_own_corpus(d);
    const llm_tokenizer *tok = llm_own_book_tokenizer(d, c);
    size_t p, T;
    int clean = 1;
    for (p = 0; p < 2 && tok != NULL && d->ok; p++) {
        const llm_partition part = p == 0 ? LLM_TRAIN : LLM_VALIDATION;
        size_t nd = 0, i;
        const llm_doc *docs = llm_own_encoded(d, tok, c, part, &nd);
        if (docs == NULL)
            return;
        for (T = 3; T <= 4 && d->ok; T++) {
            size_t count = 0, w, one = 0;
            llm_window *windows;
            for (i = 0; i < nd; i++) {
                if (!LLM_TRY(d, llm_window_count(docs[i].length, T, 1, &one, &d->err)))
                    return;
                count += one;
            }
            windows = malloc((count + 1) * sizeof *windows);
            if (!llm_demo_check(d, windows != NULL, "memory for the windows")
                || !LLM_TRY(d, llm_windows(docs, nd, T, 1, windows, count, &count, &d->err))) {
                free(windows);
                return;
            }
            for (w = 0; w < count; w++) {               /* the rule, where it shows */
                const size_t *z = docs[windows[w].doc].ids + windows[w].start;
                size_t t;
                for (t = 0; t < T; t++)
                    clean = clean && z[t] != LLM_EOS && z[t + 1] != LLM_BOS;
            }
            free(windows);
            printf("%s: documents=%zu T=%zu windows=%s\n", llm_partition_name(part), nd, T,
                   llm_put(d, llm_text("%s_T%zu", part_key[p], T), llm_text("%zu", count)));
        }
    }
    printf("no input is EOS, no target is BOS: %s\n", llm_put(d, "clean", llm_yes(clean)));
    llm_demo_check(d, clean, "no window crosses a document boundary");
}
static void refusals(llm_demo *d)
{
    const llm_doc doc = {fixture, 6};
    llm_window w[2];
    size_t count = 77;
    int untouched;
    memset(w, 0x5a, sizeof w);
    llm_refuse_as(d, "T = 0", llm_windows(&doc, 1, 0, 1, w, 2, &count, &d->err),
                  LLM_ERR_ARGUMENT);
    llm_refuse_as(d, "stride 0", llm_windows(&doc, 1, 3, 0, w, 2, &count, &d->err),
                  LLM_ERR_ARGUMENT);
    printf("  %s\n", llm_put(d, "zero_message", d->err.message));
    llm_refuse_as(d, "room for 2 of the fixture's 3 windows",
                  llm_windows(&doc, 1, 3, 1, w, 2, &count, &d->err), LLM_ERR_LENGTH);
    llm_refuse_as(d, "T = SIZE_MAX", llm_window_count(6, SIZE_MAX, 1, &count, &d->err),
                  LLM_ERR_OVERFLOW);
    untouched = count == 77 && w[0].doc == (size_t)0x5a5a5a5a5a5a5a5au;
    printf("refused calls wrote nothing: %s\n", llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "refused calls wrote nothing");
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {fixtures, corpus_windows, refusals, NULL};
    return llm_demo_main(argc, argv, "ch05-autoregressive-examples", NULL, sections);
}
