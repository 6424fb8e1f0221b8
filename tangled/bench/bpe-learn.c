/* bpe-learn -- the time to learn 256 merges from the book's training
   documents, repeated 1, 4 and 16 times: its growth with the corpus. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llm/data.h"
#include "llm/tokenizer.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(void)
{
    static const size_t times[3] = {1, 4, 16};
    llm_corpus c;
    llm_error err;
    llm_bytes *docs;
    llm_bpe tables[3];
    size_t n = 0, bytes = 0, i, k, t;
    double first = 0.0;
    int same = 1;
    if (llm_corpus_load(&c, "corpus/corpus.txt", "corpus/splits.txt", &err) != LLM_OK) {
        fprintf(stderr, "bpe-learn: %s: %s\n", err.stage, err.message);
        return 1;
    }
    docs = malloc(16 * c.in[LLM_TRAIN] * sizeof *docs);
    if (docs == NULL)
        return 1;
    for (t = 0; t < 3; t++) {
        double start, seconds;
        for (n = 0, bytes = 0, k = 0; k < times[t]; k++) {
            size_t got = 0;
            if (llm_corpus_bytes(&c, LLM_TRAIN, docs + n, c.in[LLM_TRAIN], &got, &err) != LLM_OK)
                return 1;
            for (i = n, n += got; i < n; i++)
                bytes += docs[i].length;
        }
        start = now();
        if (llm_bpe_learn(&tables[t], docs, n, LLM_BOOK_MERGES, &err) != LLM_OK) {
            fprintf(stderr, "bpe-learn: %s: %s\n", err.stage, err.message);
            return 1;
        }
        seconds = now() - start;
        if (t == 0)
            first = seconds;
        printf("bpe-learn: corpus x%-2zu %7zu bytes, %d merges: %8.2f ms, ratio %5.2f\n",
               times[t], bytes, LLM_BOOK_MERGES, 1e3 * seconds, seconds / first);
    }
    for (t = 1; t < 3; t++)
        for (i = 0; i < tables[0].count; i++)
            same = same && tables[t].count == tables[0].count
                   && tables[t].merges[i].left == tables[0].merges[i].left
                   && tables[t].merges[i].right == tables[0].merges[i].right;
    printf("bpe-learn: the three tables are %s\n", same ? "equal" : "DIFFERENT");
    for (t = 0; t < 3; t++)
        llm_bpe_free(&tables[t]);
    free(docs);
    llm_corpus_free(&c);
    return same ? 0 : 1;
}
