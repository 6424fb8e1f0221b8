/* ch06-bigram-baseline -- the count bigram and its smoothing. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/data.h"
#include "llm/evidence.h"
#include "llm/metrics.h"
#include "llm/tokenizer.h"

static const size_t doc_a[5] = {0, 2, 2, 3, 1}, doc_b[4] = {0, 2, 3, 1};

static void release_bigram(void *b)
{
    llm_bigram_free(b);
}

static void fixture(llm_demo *d)
{
    static const char *const name[5] = {"BOS", "EOS", "A", "B", "C"};
    const llm_doc docs[2] = {{doc_a, 5}, {doc_b, 4}};
    llm_bigram *m = llm_own(d, sizeof *m, release_bigram);
    size_t i, j;
    llm_put(d, "doc_a", llm_sizes(doc_a, 5));
    llm_put(d, "doc_b", llm_sizes(doc_b, 4));
    if (m == NULL || !LLM_TRY(d, llm_bigram_fit(m, docs, 2, 5, 1.0, &d->err)))
        return;
    printf("V=5 alpha=1 transitions=%s EOS->BOS=%s\n",
           llm_put(d, "transitions", llm_text("%zu", m->transitions)),
           llm_put(d, "eos_bos", llm_text("%zu", m->counts[1 * 5 + 0])));
    for (i = 0; i < 5; i++) {
        const size_t *row = m->counts + i * 5;
        printf("  row %-3s counts %s N=%zu\n", name[i], llm_sizes(row, 5), m->rows[i]);
        llm_row(d, "counts", name[i], llm_text("%zu", row[0]), llm_text("%zu", row[1]),
                llm_text("%zu", row[2]), llm_text("%zu", row[3]), llm_text("%zu", row[4]),
                llm_text("%zu", m->rows[i]), NULL);
    }
    for (i = 2; i <= 4; i += 2) {                      /* the rows of A and of C */
        const char *key = i == 2 ? "a" : "c", *mle = "", *smooth = "";
        for (j = 0; j < 5; j++) {
            double p = 0.0, q = 0.0;
            const llm_status st = llm_bigram_mle(m, i, j, &p, &d->err);
            if (!LLM_TRY(d, llm_bigram_prob(m, i, j, &q, &d->err)))
                return;
            mle = llm_text("%s%s%s", mle, j > 0 ? ", " : "",
                           st == LLM_OK ? llm_text("%zu/%zu", m->counts[i * 5 + j], m->rows[i])
                                        : "undefined");
            smooth = llm_text("%s%s%zu/%zu", smooth, j > 0 ? ", " : "",
                              m->counts[i * 5 + j] + 1, m->rows[i] + 5);
            if (i == 2)
                llm_row(d, "row_a", name[j], llm_text("%zu", m->counts[i * 5 + j]),
                        llm_trim(p, 12), llm_trim(q, 12), NULL);
            if (i == 4 && j == 3) {
                llm_put(d, "c_b_smooth", llm_trim(q, 12));
                llm_put(d, "c_b_mle", st == LLM_OK ? llm_trim(p, 12) : d->err.message);
            }
        }
        printf("row %s: counts %s, MLE [%s], smoothed [%s]\n", name[i],
               llm_put(d, llm_text("%s_counts", key), llm_sizes(m->counts + i * 5, 5)),
               llm_put(d, llm_text("%s_mle", key), mle),
               llm_put(d, llm_text("%s_smooth", key), smooth));
    }
}
/* The bytes of ID id as text (a space as ·) when they are whole UTF-8,
   else as hexadecimal bytes. */
static const char *unit_text(const llm_tokenizer *tok, size_t id)
{
    const unsigned char *b = tok->spelling + tok->start[id];
    const size_t len = tok->start[id + 1] - tok->start[id];
    const char *text = llm_unit_text(b, len);
    return text != NULL ? text : llm_hex(b, len);
}

static void book(llm_demo *d)
{
    const llm_corpus *c = llm_own_corpus(d);
    const llm_tokenizer *tok = llm_own_book_tokenizer(d, c);
    llm_bigram *m = llm_own(d, sizeof *m, release_bigram);
    const llm_doc *docs;
    size_t nd = 0, i, k, empty = 0, shown[5];
    if (tok == NULL || m == NULL
        || (docs = llm_own_encoded(d, tok, c, LLM_TRAIN, &nd)) == NULL
        || !LLM_TRY(d, llm_bigram_fit(m, docs, nd, tok->vocab, 1.0, &d->err)))
        return;
    for (i = 0; i < m->vocab; i++)
        empty += m->rows[i] == 0;
    printf("training documents=%zu V=%s transitions=%s rows with no data=%s, EOS among them: %s\n",
           nd, llm_put(d, "book_vocab", llm_text("%zu", m->vocab)),
           llm_put(d, "book_transitions", llm_text("%zu", m->transitions)),
           llm_put(d, "book_empty_rows", llm_text("%zu", empty)),
           llm_put(d, "eos_empty", llm_yes(m->rows[LLM_EOS] == 0)));
    printf("row BOS: N=%s\n", llm_put(d, "bos_n", llm_text("%zu", m->rows[LLM_BOS])));
    for (k = 0; k < 5; k++) {                      /* the five likeliest after BOS */
        size_t best = 0, j, t;
        double p = 0.0, q = 0.0;
        for (j = 1; j < m->vocab; j++) {
            int taken = 0;
            for (t = 0; t < k; t++)
                taken = taken || shown[t] == j;
            if (!taken && (best == 0 || m->counts[j] > m->counts[best]))
                best = j;
        }
        shown[k] = best;
        if (!(LLM_TRY(d, llm_bigram_mle(m, LLM_BOS, best, &p, &d->err))
              && LLM_TRY(d, llm_bigram_prob(m, LLM_BOS, best, &q, &d->err))))
            return;
        printf("  BOS -> %zu [%s] count=%zu MLE=%s smoothed=%s\n", best, unit_text(tok, best),
               m->counts[best], llm_num(p, 6), llm_num(q, 6));
        llm_row(d, "bos_row", llm_text("%zu", best), unit_text(tok, best),
                llm_text("%zu", m->counts[best]), llm_num(p, 6), llm_num(q, 6), NULL);
        if (k == 0) {
            llm_put(d, "bos_top_mle", llm_num(p, 6));
            llm_put(d, "bos_top_smooth", llm_num(q, 6));
        }
    }
    llm_demo_check(d, m->rows[LLM_BOS] == nd, "every document begins with BOS, once");
}
static void refusals(llm_demo *d)
{
    const llm_doc docs[2] = {{doc_a, 5}, {doc_b, 4}};
    const size_t bad_ids[3] = {0, 7, 1};
    const llm_doc bad[1] = {{bad_ids, 3}};
    llm_bigram *m = llm_own(d, sizeof *m, release_bigram);
    llm_bigram mark, t;
    double p = -1.0;
    int untouched;
    if (m == NULL || !LLM_TRY(d, llm_bigram_fit(m, docs, 2, 5, 1.0, &d->err)))
        return;
    memset(&mark, 0x5a, sizeof mark);
    t = mark;
    llm_refuse_as(d, "alpha = 0", llm_bigram_fit(&t, docs, 2, 5, 0.0, &d->err),
                  LLM_ERR_ARGUMENT);
    printf("  %s\n", llm_put(d, "alpha_message", d->err.message));
    llm_refuse_as(d, "alpha = -1", llm_bigram_fit(&t, docs, 2, 5, -1.0, &d->err),
                  LLM_ERR_ARGUMENT);
    llm_refuse_as(d, "ID 7 in a vocabulary of 5", llm_bigram_fit(&t, bad, 1, 5, 1.0, &d->err),
                  LLM_ERR_TOKEN);
    printf("  %s\n", d->err.message);
    llm_refuse_as(d, "the count estimate of row C", llm_bigram_mle(m, 4, 3, &p, &d->err),
                  LLM_ERR_EMPTY);
    printf("  %s\n", llm_put(d, "c_message", d->err.message));
    llm_refuse_as(d, "the pair (2, 5)", llm_bigram_prob(m, 2, 5, &p, &d->err), LLM_ERR_TOKEN);
    untouched = p == -1.0 && memcmp(&t, &mark, sizeof t) == 0;
    printf("refused calls wrote nothing: %s\n", llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "refused calls wrote nothing");
}
static void exercise_answers(llm_demo *d)
{
    static const size_t doc_c[3] = {0, 4, 1};
    const llm_doc three[3] = {{doc_a, 5}, {doc_b, 4}, {doc_c, 3}}, two[2] = {{doc_a, 5},
                                                                              {doc_b, 4}};
    llm_bigram *m = llm_own(d, sizeof *m, release_bigram);
    llm_bigram *half = llm_own(d, sizeof *half, release_bigram);
    double p = 0.0, q = 0.0;
    if (m == NULL || half == NULL
        || !(LLM_TRY(d, llm_bigram_fit(m, three, 3, 5, 1.0, &d->err))
             && LLM_TRY(d, llm_bigram_fit(half, two, 2, 5, 0.5, &d->err))
             && LLM_TRY(d, llm_bigram_mle(m, 4, 1, &p, &d->err))
             && LLM_TRY(d, llm_bigram_prob(half, 2, 3, &q, &d->err))))
        return;
    llm_put(d, "ex1_p", llm_trim(p, 12));
    llm_put(d, "ex3_p", llm_trim(q, 12));
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {fixture, book, refusals, exercise_answers, NULL};
    return llm_demo_main(argc, argv, "ch06-bigram-baseline", NULL, sections);
}
