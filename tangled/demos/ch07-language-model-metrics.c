/* ch07-language-model-metrics -- mean NLL and perplexity, token-weighted. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/data.h"
#include "llm/evidence.h"
#include "llm/metrics.h"
#include "llm/tokenizer.h"

/* Scores probs into a fresh llm_score and prints and traces total, mean and
   perplexity under key. */
static int score(llm_demo *d, const char *key, const char *what, const double *probs, size_t n)
{
    llm_score acc = {0.0, 0};
    double mean = 0.0, ppl = 0.0;
    if (!(LLM_TRY(d, llm_score_add(&acc, probs, n, &d->err))
          && LLM_TRY(d, llm_score_mean(&acc, &mean, &ppl, &d->err))))
        return 0;
    printf("%s: targets=%zu total=%s", what, acc.targets,
           llm_put(d, llm_text("%s_total", key), llm_num(acc.total, 12)));
    printf(" mean=%s", llm_put(d, llm_text("%s_mean", key), llm_num(mean, 12)));
    printf(" perplexity=%s\n", llm_put(d, llm_text("%s_ppl", key), llm_num(ppl, 12)));
    return 1;
}

static void fixtures(llm_demo *d)
{
    static const double two[2] = {0.5, 0.25}, uniform[1] = {0.2}, impossible[3] = {0.5, 0.0,
                                                                                     0.25};
    if (score(d, "two", "[1/2, 1/4]", two, 2) && score(d, "uniform", "uniform over 5", uniform, 1))
        (void)score(d, "zero", "[1/2, 0, 1/4]", impossible, 3);
    llm_put(d, "ln8", llm_num(log(8.0), 12));
    llm_put(d, "ln5", llm_num(log(5.0), 12));
}
static void weighting(llm_demo *d)
{
    static const double a[1] = {1.0}, b[3] = {0.25, 0.25, 0.25};
    llm_score both = {0.0, 0}, only_a = {0.0, 0}, only_b = {0.0, 0};
    double m = 0.0, p = 0.0, ma = 0.0, mb = 0.0;
    if (!(LLM_TRY(d, llm_score_add(&both, a, 1, &d->err))
          && LLM_TRY(d, llm_score_add(&both, b, 3, &d->err))
          && LLM_TRY(d, llm_score_mean(&both, &m, &p, &d->err))
          && LLM_TRY(d, llm_score_add(&only_a, a, 1, &d->err))
          && LLM_TRY(d, llm_score_add(&only_b, b, 3, &d->err))
          && LLM_TRY(d, llm_score_mean(&only_a, &ma, NULL, &d->err))
          && LLM_TRY(d, llm_score_mean(&only_b, &mb, NULL, &d->err))))
        return;
    printf("documents A [1] and B [1/4, 1/4, 1/4]: token-weighted mean=%s perplexity=%s\n",
           llm_put(d, "tokens_mean", llm_num(m, 12)), llm_put(d, "tokens_ppl", llm_num(p, 12)));
    printf("  the wrong way, the mean of the documents' means: %s perplexity=%s\n",
           llm_put(d, "docs_mean", llm_num((ma + mb) / 2.0, 12)),
           llm_put(d, "docs_ppl", llm_num(exp((ma + mb) / 2.0), 12)));
    llm_put(d, "a_mean", llm_num(ma, 12));
    llm_put(d, "b_mean", llm_num(mb, 12));
}
static void release_bigram(void *b)
{
    llm_bigram_free(b);
}

static void bigram(llm_demo *d)
{
    static const char *const key[2] = {"train", "val"};
    const llm_corpus *c = llm_own_corpus(d);
    const llm_tokenizer *tok = llm_own_book_tokenizer(d, c);
    llm_bigram *m = llm_own(d, sizeof *m, release_bigram);
    const llm_doc *train, *val;
    size_t nt = 0, nv = 0, k;
    if (tok == NULL || m == NULL
        || (train = llm_own_encoded(d, tok, c, LLM_TRAIN, &nt)) == NULL
        || (val = llm_own_encoded(d, tok, c, LLM_VALIDATION, &nv)) == NULL
        || !LLM_TRY(d, llm_bigram_fit(m, train, nt, tok->vocab, 1.0, &d->err)))
        return;
    for (k = 0; k < 2; k++) {
        llm_score acc = {0.0, 0};
        double mean = 0.0, ppl = 0.0;
        if (!(LLM_TRY(d, llm_bigram_score(m, k == 0 ? train : val, k == 0 ? nt : nv, &acc,
                                          &d->err))
              && LLM_TRY(d, llm_score_mean(&acc, &mean, &ppl, &d->err))))
            return;
        printf("bigram, alpha=1, on %s: targets=%s", llm_partition_name(k == 0 ? LLM_TRAIN
                                                                             : LLM_VALIDATION),
               llm_put(d, llm_text("%s_targets", key[k]), llm_text("%zu", acc.targets)));
        printf(" mean NLL=%s", llm_put(d, llm_text("%s_mean", key[k]), llm_num(mean, 12)));
        printf(" perplexity=%s\n", llm_put(d, llm_text("%s_ppl", key[k]), llm_num(ppl, 12)));
        llm_row(d, "bigram", llm_partition_name(k == 0 ? LLM_TRAIN : LLM_VALIDATION),
                llm_text("%zu", acc.targets), llm_num(mean, 6), llm_num(ppl, 3), NULL);
    }
    llm_put(d, "vocab", llm_text("%zu", tok->vocab));
    llm_put(d, "uniform_v", llm_num(log((double)tok->vocab), 6));
}
static void refusals(llm_demo *d)
{
    static const double bad[3] = {0.5, 1.5, 0.25}, nan_p[1] = {NAN};
    llm_score acc = {1.0, 2}, none = {0.0, 0};
    double mean = -1.0;
    int untouched;
    llm_refuse_as(d, "[1/2, 1.5, 1/4]", llm_score_add(&acc, bad, 3, &d->err), LLM_ERR_ARGUMENT);
    printf("  %s\n", llm_put(d, "range_message", d->err.message));
    llm_refuse_as(d, "[NaN]", llm_score_add(&acc, nan_p, 1, &d->err), LLM_ERR_ARGUMENT);
    llm_refuse_as(d, "the mean of no targets", llm_score_mean(&none, &mean, NULL, &d->err),
                  LLM_ERR_EMPTY);
    untouched = acc.total == 1.0 && acc.targets == 2 && mean == -1.0;
    printf("refused calls changed nothing: %s\n", llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "refused calls changed nothing");
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {fixtures, weighting, bigram, refusals, NULL};
    return llm_demo_main(argc, argv, "ch07-language-model-metrics", NULL, sections);
}
