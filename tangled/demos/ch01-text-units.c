/* ch01-text-units -- UTF-8 bytes, Unicode scalars and vocabulary IDs. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/tokenizer.h"

static const char *const fixture = "cat кот";
static llm_scalar_vocab *vocab;      /* built by setup from fixture */

static const unsigned char *bytes_of(const char *s)
{
    return (const unsigned char *)s;
}

/* n bytes as the list "[99, 97, 116]". */
static const char *decimal(const unsigned char *b, size_t n)
{
    size_t wide[64], i;
    for (i = 0; i < n && i < 64; i++)
        wide[i] = b[i];
    return llm_sizes(wide, i);
}

/* n scalars as "U+0063 U+0061 U+0074". */
static const char *scalars(const uint32_t *u, size_t n)
{
    char buf[8 * 32 + 1] = "";
    size_t i, used = 0;
    for (i = 0; i < n && i < 32; i++)
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%sU+%04X",
                                 i > 0 ? " " : "", (unsigned)u[i]);
    return llm_text("%s", buf);
}
static void release_vocab(void *v)
{
    llm_scalar_vocab_free(v);
}

static void setup(llm_demo *d)
{
    vocab = llm_own(d, sizeof *vocab, release_vocab);
    if (vocab != NULL)
        (void)LLM_TRY(d, llm_scalar_vocab_build(vocab, bytes_of(fixture), strlen(fixture),
                                                &d->err));
}
static void three_words(llm_demo *d)
{
    static const char *const words[3] = {"cat", "кот", "猫"};
    static const char *const keys[3] = {"cat", "kot", "mao"};
    size_t w;
    for (w = 0; w < 3; w++) {
        const unsigned char *b = bytes_of(words[w]);
        const size_t n = strlen(words[w]);
        unsigned char again[LLM_UTF8_MAX];
        uint32_t u[8];
        size_t nu = 0, ids[8], nid = 0, i, len = 0, spent = 0;
        if (!(LLM_TRY(d, llm_utf8_decode(b, n, u, 8, &nu, &d->err))
              && LLM_TRY(d, llm_scalar_vocab_encode(vocab, b, n, ids, 8, &nid, &d->err))))
            return;
        for (i = 0; i < nu && LLM_TRY(d, llm_utf8_encode(u[i], again, &len, &d->err)); i++) {
            llm_row(d, "glyphs", llm_text("%zu", w), llm_text("%zu", spent),
                    llm_text("%zu", len), llm_text("%.*s", (int)len, (const char *)again),
                    llm_text("U+%04X", (unsigned)u[i]), llm_hex(again, 1),
                    len > 1 ? llm_hex(again + 1, 1) : "", len > 2 ? llm_hex(again + 2, 1) : "",
                    llm_text("%zu", ids[i]), NULL);
            spent += len;
        }
        printf("word=%s bytes=%s", words[w],
               llm_put(d, llm_text("%s_nbytes", keys[w]), llm_text("%zu", n)));
        printf(" [%s] scalars=%s", llm_put(d, llm_text("%s_hex", keys[w]), llm_hex(b, n)),
               llm_put(d, llm_text("%s_nscalars", keys[w]), llm_text("%zu", nu)));
        printf(" [%s] ids=%s\n", llm_put(d, llm_text("%s_scalars", keys[w]), scalars(u, nu)),
               llm_put(d, llm_text("%s_ids", keys[w]), llm_sizes(ids, nid)));
        llm_put(d, llm_text("%s_bytes", keys[w]), decimal(b, n));
        llm_row(d, "units", words[w], llm_hex(b, n), llm_text("%zu", n), scalars(u, nu),
                llm_text("%zu", nu), llm_sizes(ids, nid), NULL);
        llm_demo_check(d, spent == n, "the bytes are the sum of the scalars' lengths");
        if (w == 1) {                  /* к: u = 64 (b0 - 192) + (b1 - 128) */
            printf("к U+%04X = %s = 64 * %s + %s -> bytes %s %s\n", (unsigned)u[0],
                   llm_put(d, "ka_value", llm_text("%u", (unsigned)u[0])),
                   llm_put(d, "ka_high", llm_text("%u", (unsigned)u[0] / 64)),
                   llm_put(d, "ka_low", llm_text("%u", (unsigned)u[0] % 64)),
                   llm_put(d, "ka_b0", llm_text("%u", 192 + (unsigned)u[0] / 64)),
                   llm_put(d, "ka_b1", llm_text("%u", 128 + (unsigned)u[0] % 64)));
            llm_demo_check(d, 192 + u[0] / 64 == b[0] && 128 + u[0] % 64 == b[1],
                           "the two-byte formula gives the bytes of к");
        }
    }
}
static void vocabulary(llm_demo *d)
{
    static const char *const unknown[2] = {"?", "猫"};
    unsigned char back[32], one[LLM_UTF8_MAX];
    size_t id, ids[16], nid = 0, len = 0, k;
    int exact;
    printf("vocabulary of \"%s\": %s IDs\n", fixture,
           llm_put(d, "vocab_size", llm_text("%zu", vocab->size)));
    for (id = 0; id < vocab->size; id++) {
        const uint32_t u = id == LLM_UNK ? 0 : vocab->scalars[id - 1];
        if (id != LLM_UNK && !LLM_TRY(d, llm_utf8_encode(u, one, &len, &d->err)))
            return;
        printf("  id=%zu %s\n", id, id == LLM_UNK ? "<UNK>" : llm_text("U+%04X", (unsigned)u));
        llm_row(d, "vocab", llm_text("%zu", id),
                id == LLM_UNK ? "`<UNK>`" : llm_text("U+%04X", (unsigned)u),
                id == LLM_UNK ? "—" : u == ' ' ? "space" : llm_text("%.*s", (int)len, one),
                id == LLM_UNK ? "—" : llm_hex(one, len), NULL);
    }
    for (k = 0; k < 2; k++) {
        if (!(LLM_TRY(d, llm_scalar_vocab_encode(vocab, bytes_of(unknown[k]),
                                                 strlen(unknown[k]), ids, 16, &nid,
                                                 &d->err))
              && LLM_TRY(d, llm_scalar_vocab_decode(vocab, ids, nid, back, sizeof back,
                                                    &len, &d->err))))
            return;
        printf("encode %s -> %s -> %s, decoded [%s]\n", unknown[k],
               llm_put(d, k == 0 ? "question_ids" : "mao_vocab_ids", llm_sizes(ids, nid)),
               ids[0] == LLM_UNK ? "<UNK>" : "known",
               llm_put(d, k == 0 ? "question_back" : "mao_back", llm_hex(back, len)));
    }
    if (!(LLM_TRY(d, llm_scalar_vocab_encode(vocab, bytes_of(fixture), strlen(fixture),
                                             ids, 16, &nid, &d->err))
          && LLM_TRY(d, llm_scalar_vocab_decode(vocab, ids, nid, back, sizeof back, &len,
                                                &d->err))))
        return;
    exact = len == strlen(fixture) && memcmp(back, fixture, len) == 0;
    printf("round trip \"%s\" -> %s -> %s\n", fixture,
           llm_put(d, "fixture_ids", llm_sizes(ids, nid)),
           llm_put(d, "round_trip", exact ? "exact" : "changed"));
    llm_demo_check(d, exact, "the round trip gave back every byte");
}
static void malformed(llm_demo *d)
{
    static const struct {
        const char *what, *key, *bytes;
        size_t n;
    } bad[] = {
        {"61 62 C0 AF (an overlong slash)", "overlong", "ab\xC0\xAF", 4},
        {"E0 80 AF (the slash in three bytes)", NULL, "\xE0\x80\xAF", 3},
        {"ED A0 80 (a surrogate)", NULL, "\xED\xA0\x80", 3},
        {"E7 8C (猫 cut short)", "short", "\xE7\x8C", 2},
        {"E7 41 AB (a letter inside 猫)", NULL, "\xE7\x41\xAB", 3},
        {"63 BA 74 (a continuation alone)", NULL, "c\xBAt", 3},
        {"F4 90 80 80 (above U+10FFFF)", NULL, "\xF4\x90\x80\x80", 4},
        {"F5 80 80 80 (a byte above F4)", NULL, "\xF5\x80\x80\x80", 4},
    };
    const size_t too_far[2] = {3, 8};
    uint32_t out[8], u = 0;
    unsigned char bytes[8];
    char where[100];
    size_t k, at, len = 0, ids[8], count = 77;
    int untouched = 1;
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        const unsigned char *b = bytes_of(bad[k].bytes);
        for (at = 0; at < bad[k].n && llm_utf8_next(b, bad[k].n, at, &u, &len, NULL) == LLM_OK;
             at += len)
            ;
        memset(out, 0x5a, sizeof out);
        if (!llm_refuse_as(d, bad[k].what, llm_utf8_decode(b, bad[k].n, out, 8, &count,
                                                           &d->err), LLM_ERR_UTF8))
            return;
        printf("  walk stopped at byte %zu; %s\n", at, d->err.message);
        llm_row(d, "malformed", llm_hex(b, bad[k].n), llm_text("%zu", at), d->err.message, NULL);
        if (bad[k].key != NULL) {
            llm_put(d, llm_text("%s_offset", bad[k].key), llm_text("%zu", at));
            llm_put(d, llm_text("%s_message", bad[k].key), d->err.message);
        }
        untouched = untouched && out[0] == 0x5a5a5a5au && count == 77;
    }
    memset(ids, 0x5a, sizeof ids);
    llm_refuse_as(d, "encode \"ab C0 AF\" with the vocabulary",
                  llm_scalar_vocab_encode(vocab, bytes_of(bad[0].bytes), bad[0].n, ids, 8,
                                          &count, &d->err), LLM_ERR_UTF8);
    printf("  %s\n", d->err.message);
    llm_put(d, "chain", llm_text("%s", llm_error_where(where, sizeof where, &d->err)));
    memset(bytes, 0x5a, sizeof bytes);
    len = 77;
    llm_refuse_as(d, "encode U+D800", llm_utf8_encode(0xD800, bytes, &len, &d->err),
                  LLM_ERR_UTF8);
    untouched = untouched && len == 77;
    llm_refuse_as(d, "decode [3, 8]", llm_scalar_vocab_decode(vocab, too_far, 2, bytes,
                                                              sizeof bytes, &len, &d->err),
                  LLM_ERR_TOKEN);
    llm_put(d, "token_message", d->err.message);
    llm_refuse_as(d, "encode \"cat кот\" into room for 6 IDs",
                  llm_scalar_vocab_encode(vocab, bytes_of(fixture), strlen(fixture), ids, 6,
                                          &count, &d->err), LLM_ERR_LENGTH);
    untouched = untouched && count == 77 && bytes[0] == 0x5a && bytes[7] == 0x5a
                && ids[0] == (size_t)0x5a5a5a5a5a5a5a5au && ids[7] == ids[0] && len == 77;
    printf("refused calls wrote nothing: %s\n", llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "refused calls wrote nothing");
}
static void out_of_memory(llm_demo *d)
{
    llm_scalar_vocab *v = llm_own(d, sizeof *v, release_vocab);
    llm_status st = LLM_ERR_ALLOC;
    size_t k, refused = 0;
    int untouched = 1;
    if (v == NULL)
        return;
    for (k = 1; st == LLM_ERR_ALLOC && k <= 8; k++) {
        llm_alloc_fail_at(k);
        st = llm_scalar_vocab_build(v, bytes_of(fixture), strlen(fixture), &d->err);
        if (st == LLM_ERR_ALLOC) {
            refused++;
            untouched = untouched && v->scalars == NULL && v->size == 0;
            printf("allocation %zu refused: %s (%s)\n", k, llm_status_name(st), d->err.stage);
        }
    }
    llm_alloc_fail_at(0);
    if (!LLM_TRY(d, st))
        return;
    printf("then built with %s IDs; refused builds left the vocabulary untouched: %s\n",
           llm_text("%zu", v->size), llm_put(d, "oom_untouched", llm_yes(untouched)));
    llm_put(d, "oom_refused", llm_text("%zu", refused));
    llm_demo_check(d, untouched && refused == 2 && v->size == vocab->size,
                   "each refused allocation left the vocabulary untouched");
}
static void exercise_answers(llm_demo *d)
{
    static const char *const privet = "Привет, мир!";
    static const char *const key[2] = {"e", "zh"};
    const uint32_t letters[2] = {0xE9, 0x436};       /* é, for the notation; ж */
    unsigned char b[LLM_UTF8_MAX];
    size_t n = 0, len = 0, k;
    if (!LLM_TRY(d, llm_utf8_count(bytes_of(privet), strlen(privet), &n, &d->err)))
        return;
    llm_put(d, "privet_nbytes", llm_text("%zu", strlen(privet)));
    llm_put(d, "privet_nscalars", llm_text("%zu", n));
    for (k = 0; k < 2 && LLM_TRY(d, llm_utf8_encode(letters[k], b, &len, &d->err)); k++) {
        const unsigned u = (unsigned)letters[k];
        llm_put(d, llm_text("%s_value", key[k]), llm_text("%u", u));
        llm_put(d, llm_text("%s_high", key[k]), llm_text("%u", u / 64));
        llm_put(d, llm_text("%s_low", key[k]), llm_text("%u", u % 64));
        llm_put(d, llm_text("%s_b0", key[k]), llm_text("%u", (unsigned)b[0]));
        llm_put(d, llm_text("%s_b1", key[k]), llm_text("%u", (unsigned)b[1]));
        llm_put(d, llm_text("%s_hex", key[k]), llm_hex(b, len));
        llm_demo_check(d, len == 2 && b[0] == 192 + u / 64 && b[1] == 128 + u % 64,
                       "the two-byte formula gives the bytes");
    }
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {three_words, vocabulary, malformed,
                                            out_of_memory, exercise_answers, NULL};
    return llm_demo_main(argc, argv, "ch01-text-units", setup, sections);
}
