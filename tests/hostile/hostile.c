/* hostile.c -- the library called as a hostile caller would call it.
 *
 * Each case is seeded (seed + case number) and runs in a forked child, so a
 * crash is counted and does not end the run. A case makes a few dozen calls
 * with random arguments: shapes, ranks (some beyond LLM_MAX_RANK), axes,
 * indices and IDs (some out of range, some near SIZE_MAX), NaN and
 * infinities, null pointers, handles that are stale, foreign, one past the
 * last node or random, and decoder, RoPE and AdamW configurations drawn
 * around their limits. After every refused call it checks the promise of
 * the library: the status is a named error, err holds that status and a
 * stage, and the call's outputs, the tape and the parameter list are as
 * they were before it.
 *
 * Usage: hostile [CASES [SEED]]   (defaults 300 and 1)
 * Prints cases, calls, refusals, crashes and state violations; exits 1
 * when there is a crash or a violation. Built with ASan and UBSan by make.
 * A chapter that adds a public function adds calls of it here.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "llm/attention.h"
#include "llm/data.h"
#include "llm/error.h"
#include "llm/metrics.h"
#include "llm/model.h"
#include "llm/nn.h"
#include "llm/optim.h"
#include "llm/softmax.h"
#include "llm/tape.h"
#include "llm/tensor.h"
#include "llm/tokenizer.h"

/* ------------------------------------------------------ counts and checks */

static size_t calls, refusals;
static llm_rng rng;

static uint64_t draw(uint64_t bound) { return llm_rng_next_u64(&rng) % bound; }
static int chance(unsigned percent) { return draw(100) < percent; }

/* A violation ends the child with status 3 and says where. */
static void violated(const char *call, const char *what, const llm_error *err)
{
    fprintf(stderr, "hostile: %s: %s (status %s, stage '%s': %s)\n", call, what,
            llm_status_name(err->code), err->stage, err->message);
    exit(3);
}

/* The status st of call, and whether the state it must keep (same) held. */
/* 1 when s is <module>.<verb>: two lowercase words joined by one dot */
static int stage_shaped(const char *s)
{
    size_t i, dots = 0;
    if (s[0] == '\0' || s[0] == '.')
        return 0;
    for (i = 0; s[i] != '\0'; i++) {
        if (s[i] == '.')
            dots++;
        else if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return 0;
    }
    return dots == 1 && s[i - 1] != '.';
}

static void judge(const char *call, llm_status st, const llm_error *err, int same)
{
    calls++;
    if (st == LLM_OK)
        return;
    refusals++;
    if ((int)st <= 0 || st >= LLM_STATUS_COUNT)
        violated(call, "an unnamed status", err);
    if (err->code != st)
        violated(call, "err does not hold the returned status", err);
    if (err->stage[0] == '\0')
        violated(call, "no stage named", err);
    if (!stage_shaped(err->stage) || (err->cause[0] != '\0' && !stage_shaped(err->cause)))
        violated(call, "a stage that is not <module>.<verb>", err);
    if (strcmp(err->stage, call) != 0)
        violated(call, "the stage is not the called function's", err);
    if (!same)
        violated(call, "a refused call changed its state", err);
}

/* --------------------------------------------------------- random values */

static double value(void)
{
    switch (draw(40)) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return 1e308;
    case 4: return -0.0;
    case 5: return 5e-324;
    default: return (double)(int64_t)draw(2001) / 250.0 - 4.0;
    }
}

static size_t extent(void)
{
    switch (draw(30)) {
    case 0: return 0;
    case 1: return SIZE_MAX;
    case 2: return SIZE_MAX / 2 + 1;
    default: return 1 + draw(3);
    }
}

static size_t index_near(size_t n)
{
    switch (draw(12)) {
    case 0: return n;
    case 1: return SIZE_MAX;
    case 2: return n + 1;
    default: return n > 0 ? draw(n) : 0;
    }
}

/* A tensor the library made (maybe a view of it), or, one time in eight, a
   struct with a malformed header: no buffer, or a rank the struct cannot
   hold. *owned is what to free. */
static llm_tensor tensor(llm_tensor *owned)
{
    size_t rank = draw(4), shape[LLM_MAX_RANK], k, n = 1;
    double buf[64];
    llm_tensor t;
    memset(owned, 0, sizeof *owned);
    for (k = 0; k < rank; k++) {
        shape[k] = draw(12) == 0 ? 0 : 1 + draw(3);
        n *= shape[k];
    }
    for (k = 0; k < n && k < 64; k++)
        buf[k] = value();
    if (llm_tensor_from(owned, rank, shape, buf, n, NULL) != LLM_OK)
        memset(owned, 0, sizeof *owned);
    t = *owned;
    t.owns = 0;
    if (rank >= 2 && chance(20))
        llm_tensor_transpose(&t, owned, 0, rank - 1, NULL);
    if (chance(12)) {
        if (chance(50))
            t.data = NULL;
        else
            t.rank = chance(50) ? LLM_MAX_RANK + 1 + draw(4) : SIZE_MAX - draw(4);
    }
    return t;
}

static llm_tensor *maybe_null(llm_tensor *t) { return chance(5) ? NULL : t; }

/* ----------------------------------------------------------- tensor calls */

#define MARKED(x) (memcmp(&(x), &marker, sizeof(x)) == 0)

static void tensor_calls(void)
{
    llm_tensor oa, ob, a = tensor(&oa), b = tensor(&ob), out, marker;
    llm_error err;
    llm_status st;
    size_t idx[LLM_MAX_RANK + 4], perm[LLM_MAX_RANK + 4], shape[LLM_MAX_RANK + 4];
    size_t k, r, off, targets[16];
    double d, loss;
    memset(&marker, 0x5a, sizeof marker);
    for (k = 0; k < LLM_MAX_RANK + 4; k++) {
        idx[k] = index_near(a.rank > 0 && a.rank <= LLM_MAX_RANK ? a.shape[k % a.rank] : 2);
        perm[k] = index_near(a.rank < LLM_MAX_RANK ? a.rank : 2);
        shape[k] = extent();
    }
    r = draw(LLM_MAX_RANK + 3);
#define CALL(name, expr)                                                       \
    do {                                                                       \
        out = marker;                                                          \
        memset(&err, 0, sizeof err);                                           \
        st = (expr);                                                           \
        judge(name, st, &err, st == LLM_OK || MARKED(out));                    \
        if (st == LLM_OK && out.owns && chance(50))                            \
            llm_tensor_give(&out);        /* kept, for a later call to reuse */ \
        else if (st == LLM_OK && out.owns)                                     \
            llm_tensor_free(&out);                                             \
    } while (0)
    CALL("tensor.zeros", llm_tensor_zeros(&out, r, shape, &err));
    CALL("tensor.copy", llm_tensor_copy(&out, maybe_null(&a), &err));
    CALL("tensor.reshape", llm_tensor_reshape(&out, maybe_null(&a), r, shape, &err));
    CALL("tensor.transpose",
         llm_tensor_transpose(&out, maybe_null(&a), index_near(2), index_near(2), &err));
    CALL("tensor.permute", llm_tensor_permute(&out, maybe_null(&a), r, perm, &err));
    CALL("tensor.slice", llm_tensor_slice(&out, maybe_null(&a), index_near(3), index_near(3),
                                          index_near(4), &err));
    CALL("tensor.binary", llm_tensor_binary(&out, (llm_binary_op)draw(4), maybe_null(&a),
                                            maybe_null(&b), &err));
    CALL("tensor.map", llm_tensor_map(&out, maybe_null(&a), chance(90) ? exp : NULL, &err));
    CALL("tensor.reduce", llm_tensor_reduce(&out, (llm_reduce_op)draw(3), maybe_null(&a),
                                            index_near(3), (int)draw(2), &err));
    CALL("tensor.matmul", llm_matmul(&out, maybe_null(&a), maybe_null(&b), (int)draw(2),
                                     (int)draw(2), &err));
    CALL("softmax.softmax", llm_softmax(&out, maybe_null(&a), index_near(3), &err));
    CALL("softmax.log_softmax", llm_log_softmax(&out, maybe_null(&a), index_near(3), &err));
    CALL("softmax.logsumexp", llm_logsumexp(&out, maybe_null(&a), index_near(3), &err));
#undef CALL
    for (k = 0; k < 16; k++)
        targets[k] = index_near(3);
    loss = 1234.5;
    memset(&err, 0, sizeof err);
    st = llm_nll_mean(&loss, maybe_null(&a), targets, draw(17), &err);
    judge("softmax.nll_mean", st, &err, st == LLM_OK || loss == 1234.5);
    off = 77;
    memset(&err, 0, sizeof err);
    st = llm_tensor_offset(maybe_null(&a), r, idx, &off, &err);
    judge("tensor.offset", st, &err, st == LLM_OK || off == 77);
    d = 55.0;
    memset(&err, 0, sizeof err);
    st = llm_tensor_get(maybe_null(&a), r, idx, &d, &err);
    judge("tensor.get", st, &err, st == LLM_OK || d == 55.0);
    (void)llm_tensor_is_contiguous(maybe_null(&a));
    (void)llm_index_next(chance(50) ? 0 : 3, NULL, NULL);
    calls += 2;
    llm_tensor_free(&oa);
    llm_tensor_free(&ob);
}

/* ------------------------------------------------------------- text calls */

/* Bytes that are mostly UTF-8: ASCII, Cyrillic and CJK sequences, with now
   and then a stray continuation, a cut sequence, an overlong form, a
   surrogate or a byte above F4. */
static size_t text_bytes(unsigned char *b, size_t room)
{
    static const char *const pieces[] = {"a", " ", "к", "猫", "\x80", "\xE7\x8C", "\xC0\xAF",
                                         "\xED\xA0\x80", "\xF5", "\xF4\x90\x80\x80", "?"};
    size_t n = 0, k, want = draw(12);
    for (k = 0; k < want; k++) {
        const char *p = pieces[chance(85) ? draw(4) : draw(11)];
        const size_t len = strlen(p);
        if (n + len > room)
            break;
        memcpy(b + n, p, len);
        n += len;
    }
    return n;
}

static void text_calls(void)
{
    unsigned char text[64], out[64], outmark[64];
    uint32_t scalars[16], smark[16], u = 7;
    size_t n = text_bytes(text, sizeof text), ids[16], idmark[16], count, len, k;
    const size_t cap = draw(20);
    llm_scalar_vocab v, vmark, *vp = chance(5) ? NULL : &v;
    llm_error err;
    llm_status st;
    memset(outmark, 0x5a, sizeof outmark);
    memset(smark, 0x5a, sizeof smark);
    memset(idmark, 0x5a, sizeof idmark);
    memset(&vmark, 0x5a, sizeof vmark);
#define TEXT_CALL(name, expr, kept)                                            \
    do {                                                                       \
        memset(&err, 0, sizeof err);                                           \
        count = len = 77;                                                      \
        st = (expr);                                                           \
        judge(name, st, &err, st == LLM_OK || (kept));                         \
    } while (0)
    TEXT_CALL("tokenizer.utf8_next",
              llm_utf8_next(chance(5) ? NULL : text, n, index_near(n), &u, &len, &err),
              u == 7 && len == 77);
    TEXT_CALL("tokenizer.utf8_count", llm_utf8_count(chance(5) ? NULL : text, n, &count, &err),
              count == 77);
    memcpy(scalars, smark, sizeof scalars);
    TEXT_CALL("tokenizer.utf8_decode",
              llm_utf8_decode(text, n, chance(5) ? NULL : scalars, cap < 16 ? cap : 16, &count,
                              &err),
              count == 77 && memcmp(scalars, smark, sizeof scalars) == 0);
    memcpy(out, outmark, sizeof out);
    TEXT_CALL("tokenizer.utf8_encode",
              llm_utf8_encode(chance(50) ? (uint32_t)draw(0x110010)
                                         : (uint32_t)llm_rng_next_u64(&rng), out, &len, &err),
              len == 77 && memcmp(out, outmark, sizeof out) == 0);
    v = vmark;
    TEXT_CALL("scalar_vocab.build", llm_scalar_vocab_build(vp, text, n, &err),
              memcmp(&v, &vmark, sizeof v) == 0);
    if (st != LLM_OK || vp == NULL) {
        v.scalars = NULL;                  /* a vocabulary of <UNK> alone, or none */
        v.size = chance(50);
    }
    n = text_bytes(text, sizeof text);
    memcpy(ids, idmark, sizeof ids);
    TEXT_CALL("scalar_vocab.encode",
              llm_scalar_vocab_encode(chance(5) ? NULL : &v, text, n, ids, cap < 16 ? cap : 16,
                                      &count, &err),
              count == 77 && memcmp(ids, idmark, sizeof ids) == 0);
    for (k = 0; k < 16; k++)
        ids[k] = index_near(v.size);
    memcpy(out, outmark, sizeof out);
    TEXT_CALL("scalar_vocab.decode",
              llm_scalar_vocab_decode(chance(5) ? NULL : &v, ids, draw(17), out, draw(65), &len,
                                      &err),
              len == 77 && memcmp(out, outmark, sizeof out) == 0);
    (void)llm_scalar_vocab_id(chance(50) ? NULL : &v, (uint32_t)draw(0x500));
    calls++;
    {                                   /* byte-pair merges: learn, spell, replace */
        llm_bytes docs[4];
        llm_bpe bpe, bmark, forged;
        llm_merge bad[4];
        const size_t nd = draw(5), rounds = chance(5) ? SIZE_MAX : draw(12);
        size_t seq[8] = {97, 98, 97, 98, 256, 97, 0, 1};
        for (k = 0; k < 4; k++) {
            docs[k].bytes = chance(5) ? NULL : text;
            docs[k].length = chance(5) ? SIZE_MAX / 3 : draw(n + 1);
        }
        memset(&bmark, 0x5a, sizeof bmark);
        bpe = bmark;
        TEXT_CALL("bpe.learn", llm_bpe_learn(chance(5) ? NULL : &bpe, chance(5) ? NULL : docs,
                                             nd, rounds, &err),
                  memcmp(&bpe, &bmark, sizeof bpe) == 0);
        if (st != LLM_OK) {
            bpe.merges = NULL;
            bpe.count = 0;
        }
        for (k = 0; k < 4; k++) {          /* a forged table: sometimes no ranking */
            bad[k].left = chance(80) ? draw(256 + k) : index_near(300);
            bad[k].right = chance(80) ? draw(256 + k) : index_near(300);
            bad[k].count = bad[k].uses = 1;
        }
        forged.merges = chance(5) ? NULL : bad;
        forged.count = draw(5);
        memcpy(out, outmark, sizeof out);
        TEXT_CALL("bpe.spell",
                  llm_bpe_spell(chance(50) ? &bpe : &forged, index_near(256 + 6), out,
                                draw(65), &len, &err),
                  len == 77 && memcmp(out, outmark, sizeof out) == 0);
        (void)llm_bpe_replace(chance(20) ? NULL : seq, draw(9), 97, 98, 300);
        calls++;
        {                               /* the frozen tokenizer */
            llm_tokenizer tk, tmark;
            size_t tids[20], tidmark[20];
            memset(&tmark, 0x5a, sizeof tmark);
            memset(tidmark, 0x5a, sizeof tidmark);
            tk = tmark;
            TEXT_CALL("tokenizer.init",
                      llm_tokenizer_init(chance(5) ? NULL : &tk, chance(50) ? &bpe : &forged,
                                         &err),
                      memcmp(&tk, &tmark, sizeof tk) == 0);
            if (st != LLM_OK)
                memset(&tk, 0, sizeof tk);     /* an empty one: every call refuses it */
            memcpy(tids, tidmark, sizeof tids);
            TEXT_CALL("tokenizer.encode",
                      llm_tokenizer_encode(&tk, text, n, chance(5) ? NULL : tids, draw(21),
                                           &count, &err),
                      count == 77 && memcmp(tids, tidmark, sizeof tids) == 0);
            TEXT_CALL("tokenizer.encode_document",
                      llm_tokenizer_encode_document(&tk, text, n, tids, draw(21), &count, &err),
                      count == 77);
            for (k = 0; k < 20; k++)
                tids[k] = chance(80) ? draw(tk.vocab + 1) : index_near(tk.vocab);
            if (chance(50))
                tids[0] = LLM_BOS;
            memcpy(out, outmark, sizeof out);
            TEXT_CALL("tokenizer.decode",
                      llm_tokenizer_decode(&tk, tids, draw(21), out, draw(65), &len, &err),
                      len == 77 && memcmp(out, outmark, sizeof out) == 0);
            memcpy(out, outmark, sizeof out);
            TEXT_CALL("tokenizer.decode_document",
                      llm_tokenizer_decode_document(&tk, tids, draw(21), out, draw(65), &len,
                                                    &err),
                      len == 77 && memcmp(out, outmark, sizeof out) == 0);
            llm_tokenizer_free(&tk);
        }
        llm_bpe_free(&bpe);
    }
#undef TEXT_CALL
    if (v.scalars != NULL)
        llm_scalar_vocab_free(&v);
}

/* ----------------------------------------------------------- corpus calls */

/* A small corpus and manifest, each changed now and then by one byte, a
   line or a name; the manifest names the corpus's checksum unless the
   draw says otherwise. */
static void corpus_calls(void)
{
    static const char *const pieces[] = {
        "@doc en-a en a\nOne.\n@end\n\n", "@doc ru-a ru a\nОдин.\n@end\n\n",
        "@doc en-b en b\n@end\n\n", "@doc ru-b ru b\nДва.\n@end\n\n",
        "@doc en-c en c\nC\n@end\n\n", "@doc ru-c ru c\nВ.\n@end\n\n",
        "@doc en-a de x\n@end\n\n", "@doc ru-c ru c\n\xC0\n@end\n\n", "@end\n", "x\n"};
    static const char *const entries[] = {"en-a train\n", "ru-a train\n", "en-b validation\n",
                                          "ru-b validation\n", "en-c test\n", "ru-c test\n",
                                          "en-a test\n", "en-x train\n", "ru-c nowhere\n"};
    char text[512], manifest[512];
    size_t n = 0, m, k, count = draw(8);
    llm_corpus c, mark;
    llm_error err;
    llm_status st;
    for (k = 0; k < 6; k++) {
        const char *p = pieces[chance(85) ? k : draw(10)];
        memcpy(text + n, p, strlen(p));
        n += strlen(p);
    }
    if (n > 0 && chance(10))
        text[draw(n)] ^= (char)(1 + draw(255));
    m = (size_t)snprintf(manifest, sizeof manifest, "%ssplit s\ncorpus fnv1a64:%016llx\n",
                         chance(10) ? "" : "# h\n",
                         (unsigned long long)(chance(90) ? llm_fnv1a64((unsigned char *)text, n)
                                                         : llm_rng_next_u64(&rng)));
    for (k = 0; k < 6 + count % 3 && m < sizeof manifest - 32; k++) {
        const char *e = entries[chance(85) && k < 6 ? k : draw(9)];
        memcpy(manifest + m, e, strlen(e));
        m += strlen(e);
    }
    if (chance(5))
        m = draw(m + 1);                                /* cut anywhere */
    memset(&mark, 0x5a, sizeof mark);
    c = mark;
    memset(&err, 0, sizeof err);
    st = llm_corpus_parse(chance(3) ? NULL : &c, chance(3) ? NULL : (unsigned char *)text, n,
                          (unsigned char *)manifest, m, &err);
    judge("corpus.parse", st, &err, st == LLM_OK || memcmp(&c, &mark, sizeof c) == 0);
    if (st == LLM_OK)
        llm_corpus_free(&c);
    c = mark;
    memset(&err, 0, sizeof err);
    st = llm_corpus_load(&c, chance(50) ? "corpus/no-such-file" : "corpus/corpus.txt",
                         chance(20) ? NULL : chance(50) ? "corpus" : "corpus/splits.txt", &err);
    judge("corpus.load", st, &err, st == LLM_OK || memcmp(&c, &mark, sizeof c) == 0);
    if (st == LLM_OK) {                 /* a partition as byte strings */
        llm_bytes b[64], bmark[64];
        size_t bn = 77;
        memset(bmark, 0x5a, sizeof bmark);
        memcpy(b, bmark, sizeof b);
        memset(&err, 0, sizeof err);
        st = llm_corpus_bytes(chance(5) ? NULL : &c, (llm_partition)draw(4),
                              chance(5) ? NULL : b, draw(65), chance(5) ? NULL : &bn, &err);
        judge("corpus.bytes", st, &err,
              st == LLM_OK || (bn == 77 && memcmp(b, bmark, sizeof b) == 0));
        llm_corpus_free(&c);
    }
    {                                   /* windows of documents */
        const size_t ids[6] = {0, 41, 42, 43, 44, 1};
        llm_doc docs[3];
        llm_window w[8], wmark[8];
        size_t wn = 77;
        for (k = 0; k < 3; k++) {
            docs[k].ids = ids;
            docs[k].length = chance(10) ? SIZE_MAX - draw(3) : draw(7);
        }
        memset(wmark, 0x5a, sizeof wmark);
        memcpy(w, wmark, sizeof w);
        memset(&err, 0, sizeof err);
        st = llm_windows(chance(5) ? NULL : docs, draw(4), chance(10) ? 0 : extent(),
                         chance(10) ? 0 : 1 + draw(3), chance(5) ? NULL : w, draw(9), &wn,
                         &err);
        judge("data.windows", st, &err,
              st == LLM_OK || (wn == 77 && memcmp(w, wmark, sizeof w) == 0));
        wn = 77;
        memset(&err, 0, sizeof err);
        st = llm_window_count(extent(), chance(10) ? 0 : extent(), draw(3), &wn, &err);
        judge("window.count", st, &err, st == LLM_OK || wn == 77);
        {                               /* the bigram: fit and look up */
            llm_bigram bg, bmark;
            double p = 55.0;
            const size_t vocab = chance(10) ? extent() : 1 + draw(60);
            for (k = 0; k < 3; k++)            /* documents that hold what they say */
                docs[k].length = draw(7);
            memset(&bmark, 0x5a, sizeof bmark);
            bg = bmark;
            memset(&err, 0, sizeof err);
            st = llm_bigram_fit(chance(5) ? NULL : &bg, chance(5) ? NULL : docs, draw(4), vocab,
                                chance(10) ? value() : 1.0, &err);
            judge("bigram.fit", st, &err, st == LLM_OK || memcmp(&bg, &bmark, sizeof bg) == 0);
            if (st != LLM_OK)
                memset(&bg, 0, sizeof bg);
            memset(&err, 0, sizeof err);
            st = llm_bigram_prob(&bg, index_near(bg.vocab), index_near(bg.vocab),
                                 chance(5) ? NULL : &p, &err);
            judge("bigram.prob", st, &err, st == LLM_OK || p == 55.0);
            p = 55.0;
            memset(&err, 0, sizeof err);
            st = llm_bigram_mle(&bg, index_near(bg.vocab), index_near(bg.vocab), &p, &err);
            judge("bigram.mle", st, &err, st == LLM_OK || p == 55.0);
            {                           /* scores */
                llm_score sc = {value(), chance(10) ? SIZE_MAX - draw(3) : draw(9)}, smark;
                double probs[6], mean = 55.0;
                for (k = 0; k < 6; k++)
                    probs[k] = chance(70) ? (double)draw(1001) / 1000.0 : value();
                smark = sc;
                memset(&err, 0, sizeof err);
                st = llm_score_add(chance(5) ? NULL : &sc, chance(5) ? NULL : probs, draw(7),
                                   &err);
                judge("score.add", st, &err,
                      st == LLM_OK || memcmp(&sc, &smark, sizeof sc) == 0);
                smark = sc;
                memset(&err, 0, sizeof err);
                st = llm_bigram_score(&bg, docs, draw(4), &sc, &err);
                judge("bigram.score", st, &err,
                      st == LLM_OK || memcmp(&sc, &smark, sizeof sc) == 0);
                memset(&err, 0, sizeof err);
                st = llm_score_mean(chance(5) ? NULL : &sc, &mean, NULL, &err);
                judge("score.mean", st, &err, st == LLM_OK || mean == 55.0);
            }
            llm_bigram_free(&bg);
        }
    }
    (void)llm_fnv1a64(chance(50) ? NULL : (unsigned char *)text, n);
    (void)llm_partition_name((llm_partition)draw(5));
    calls += 2;
}

/* ------------------------------------------------------------- tape calls */

/* A handle for tape: one of its nodes, or a stale, foreign, one-past or
   random one. */
static llm_var handle(const llm_tape *tape, const llm_var *good, size_t ngood,
                      llm_var stale, llm_var foreign)
{
    llm_var v;
    switch (draw(10)) {
    case 0: return stale;
    case 1: return foreign;
    case 2: v.id = tape->count; v.epoch = tape->epoch; return v;
    case 3: v.id = llm_rng_next_u64(&rng); v.epoch = tape->epoch; return v;
    default:
        if (ngood == 0) {
            v.id = 0;
            v.epoch = tape->epoch;
            return v;
        }
        return good[draw(ngood)];
    }
}

static void tape_calls(void)
{
    llm_tape tape, other;
    llm_tensor owned[6], t, grad;
    llm_var good[24], stale, foreign, out, marker;
    llm_error err;
    llm_status st;
    size_t ngood = 0, k, count, epoch, ids[64], shape[LLM_MAX_RANK + 2], targets[8];
    memset(&marker, 0x5a, sizeof marker);
    if (llm_tape_init(&tape, 1 + draw(4), NULL) != LLM_OK ||
        llm_tape_init(&other, 2, NULL) != LLM_OK)
        exit(4);
    t = tensor(&owned[0]);
    if (llm_tape_constant(&tape, &t, &stale, NULL) != LLM_OK)
        stale.id = 0, stale.epoch = tape.epoch;
    llm_tape_reset(&tape, NULL);
    t = tensor(&owned[1]);
    if (llm_tape_constant(&other, &t, &foreign, NULL) != LLM_OK)
        foreign.id = 0, foreign.epoch = other.epoch;
    memset(&grad, 0, sizeof grad);
    for (k = 2; k < 6; k++) {
        t = tensor(&owned[k]);
        out = marker;
        count = tape.count;
        memset(&err, 0, sizeof err);
        if (k == 2 && owned[k].data != NULL &&
            llm_tensor_zeros(&grad, owned[k].rank, owned[k].shape, NULL) == LLM_OK) {
            st = llm_tape_leaf(&tape, maybe_null(&t), &grad, &out, &err);
            judge("tape.leaf", st, &err, st == LLM_OK || (MARKED(out) && tape.count == count));
        } else {
            st = llm_tape_constant(&tape, maybe_null(&t), &out, &err);
            judge("tape.constant", st, &err,
                  st == LLM_OK || (MARKED(out) && tape.count == count));
        }
        if (st == LLM_OK)
            good[ngood++] = out;
    }
    for (k = 0; k < 64; k++)
        ids[k] = index_near(3);
    for (k = 0; k < 8; k++)
        targets[k] = index_near(3);
    /* the IDs of a gather: at most 3 x 3 x 3 = 27 of the 64, unless the
       product overflows (refused before any ID is read) */
    for (k = 0; k < LLM_MAX_RANK + 2; k++)
        shape[k] = extent();
    for (k = 0; k < 3; k++)
        if (shape[k] > 3 && shape[k] < SIZE_MAX / 2)
            shape[k] = 3;
    for (k = 0; k < 14; k++) {
        llm_var a = handle(&tape, good, ngood, stale, foreign);
        llm_var b = handle(&tape, good, ngood, stale, foreign);
        const char *name = "";
        out = marker;
        count = tape.count;
        epoch = tape.epoch;
        memset(&err, 0, sizeof err);
        switch (draw(12)) {
        case 0: name = "tape.add"; st = llm_tape_add(&tape, a, b, &out, &err); break;
        case 1: name = "tape.mul"; st = llm_tape_mul(&tape, a, b, &out, &err); break;
        case 2:
            name = "tape.matmul";
            st = llm_tape_matmul(&tape, a, b, (int)draw(2), (int)draw(2), &out, &err);
            break;
        case 3:
            name = "tape.gather";
            st = llm_tape_gather(&tape, a, ids, chance(10) ? SIZE_MAX - draw(3) : draw(3),
                                 shape, &out, &err);
            break;
        case 4: name = "tape.exp"; st = llm_tape_exp(&tape, a, &out, &err); break;
        case 5: name = "tape.log"; st = llm_tape_log(&tape, a, &out, &err); break;
        case 6:
            name = "tape.sum";
            st = llm_tape_sum(&tape, a, index_near(3), (int)draw(2), &out, &err);
            break;
        case 7:
            name = "tape.transpose";
            st = llm_tape_transpose(&tape, a, index_near(3), index_near(3), &out, &err);
            break;
        case 8:
            name = "tape.reshape";
            st = llm_tape_reshape(&tape, a, draw(LLM_MAX_RANK + 2), shape, &out, &err);
            break;
        case 9:
            name = "tape.log_softmax";
            st = llm_tape_log_softmax(&tape, a, index_near(3), &out, &err);
            break;
        case 10:
            name = "tape.nll_mean";
            st = llm_tape_nll_mean(&tape, a, targets, draw(9), &out, &err);
            break;
        default:
            name = "tape.softmax";
            st = llm_tape_softmax(&tape, a, &out, &err);
            break;
        }
        judge(name, st, &err,
              st == LLM_OK || (MARKED(out) && tape.count == count && tape.epoch == epoch));
        if (st == LLM_OK && ngood < 24)
            good[ngood++] = out;
        {                                   /* any node id, or none; info may be NULL */
            llm_node_info info, info_marker;
            const size_t id = chance(70) ? draw(tape.count + 1) : index_near(SIZE_MAX);
            memset(&info_marker, 0x5a, sizeof info_marker);
            info = info_marker;
            memset(&err, 0, sizeof err);
            st = llm_tape_node(chance(5) ? NULL : &tape, id, chance(5) ? NULL : &info, &err);
            judge("tape.node", st, &err,
                  st == LLM_OK ? info.value != NULL && info.op != NULL
                               : memcmp(&info, &info_marker, sizeof info) == 0);
        }
    }
    if (ngood > 0) {
        llm_var v = handle(&tape, good, ngood, stale, foreign);
        count = tape.count;
        memset(&err, 0, sizeof err);
        st = llm_tape_backward(&tape, v, NULL, (int)draw(2), &err);
        judge("tape.backward", st, &err, st == LLM_OK || tape.count == count);
    }
    llm_tape_free(&tape);
    llm_tape_free(&other);
    llm_tensor_free(&grad);
    for (k = 0; k < 6; k++)
        llm_tensor_free(&owned[k]);
}

/* ----------------------------------------------------------- model calls */

static size_t small(void)
{
    switch (draw(16)) {
    case 0: return 0;
    case 1: return SIZE_MAX;
    case 2: return SIZE_MAX / 3;
    case 3: return 1 + draw(7);
    default: return 1 + draw(4);
    }
}

static double positive(void)
{
    switch (draw(10)) {
    case 0: return NAN;
    case 1: return -1.0;
    case 2: return 0.0;
    case 3: return INFINITY;
    default: return 1e-6 + (double)draw(1000);
    }
}

static void model_calls(void)
{
    llm_decoder_config cfg;
    llm_decoder dec, dmark;
    llm_params ps;
    llm_rng r, r0;
    llm_tape tape;
    llm_error err;
    llm_status st;
    llm_var logits, loss, vmark;
    size_t ids[12], targets[12], k, batch, T, offset, count;
    cfg.vocab = small();
    cfg.d_model = chance(50) ? 4 : small();
    cfg.n_heads = chance(50) ? 2 : small();
    cfg.d_ff = small();
    cfg.n_layers = draw(3);
    cfg.context = small();
    cfg.rope_base = chance(70) ? 10000.0 : positive();
    cfg.eps = chance(70) ? 1e-6 : positive() - 1.0;
    cfg.untied_head = chance(60) ? 0 : chance(90) ? 1 : (int)draw(5) - 2;
    if (cfg.vocab > 8 && chance(80))
        cfg.vocab = 1 + draw(8);
    if (cfg.d_ff > 8 && chance(80))
        cfg.d_ff = 1 + draw(8);
    if (cfg.context > 8 && chance(80))
        cfg.context = 1 + draw(8);
    if (cfg.d_model > 8 && chance(80))
        cfg.d_model = 2 * (1 + draw(4));
    llm_rng_seed(&r, draw(1000));
    r0 = r;
    if (llm_params_init(&ps, NULL) != LLM_OK)
        exit(4);
    {                                   /* grouped projections of any widths */
        llm_params gp;
        llm_qkv g, gmark;
        llm_rng gr = r, gr0 = r;
        if (llm_params_init(&gp, NULL) != LLM_OK)
            exit(4);
        memset(&gmark, 0x5a, sizeof gmark);
        g = gmark;
        memset(&err, 0, sizeof err);
        st = llm_qkv_init_grouped(&g, chance(5) ? NULL : &gp, chance(90) ? "g" : "G",
                                  small(), small(), small(), &gr, &err);
        judge("qkv.init_grouped", st, &err,
              st == LLM_OK || (memcmp(&g, &gmark, sizeof g) == 0 && gp.count == 0 &&
                               gr.state == gr0.state));
        llm_params_free(&gp);
    }
    memset(&dmark, 0x5a, sizeof dmark);
    dec = dmark;
    memset(&err, 0, sizeof err);
    st = llm_decoder_init(&dec, &ps, &cfg, &r, &err);
    judge("decoder.init", st, &err,
          st == LLM_OK || (memcmp(&dec, &dmark, sizeof dec) == 0 && ps.count == 0 &&
                           r.state == r0.state));
    if (st == LLM_OK) {                 /* the layers' checks, right and wrong prefixes */
        const size_t before = ps.count;
        const char *prefix = chance(50) ? "blocks.0" : chance(50) ? "blocks.9" : "";
        memset(&err, 0, sizeof err);
        st = cfg.n_layers > 0 ? llm_block_check(chance(5) ? NULL : &dec.blocks[0],
                                                chance(5) ? NULL : &ps, prefix, &err)
                              : llm_block_check(NULL, &ps, prefix, &err);
        judge("block.check", st, &err, ps.count == before);
        memset(&err, 0, sizeof err);
        st = llm_embedding_check(&dec.embedding, &ps,
                                 chance(50) ? "token_embedding" : "final_norm", &err);
        judge("embedding.check", st, &err, ps.count == before);
        memset(&err, 0, sizeof err);
        st = llm_rmsnorm_check(&dec.final_norm, &ps, chance(50) ? "final_norm" : "x", &err);
        judge("rmsnorm.check", st, &err, ps.count == before);
        st = LLM_OK;
    }
    if (st == LLM_OK) {
        if (llm_tape_init(&tape, 1 + draw(8), NULL) != LLM_OK)
            exit(4);
        for (k = 0; k < 3; k++) {
            size_t j;
            batch = chance(10) ? SIZE_MAX / 2 : draw(3);
            T = chance(10) ? SIZE_MAX - 1 : draw(cfg.context + 2);
            offset = chance(10) ? SIZE_MAX : draw(3);
            for (j = 0; j < 12; j++) {
                ids[j] = index_near(cfg.vocab);
                targets[j] = index_near(cfg.vocab);
            }
            memset(&vmark, 0x5a, sizeof vmark);
            logits = loss = vmark;
            count = tape.count;
            memset(&err, 0, sizeof err);
            /* ids and targets hold batch * T entries, as the contract asks,
               unless batch * T overflows (refused before any is read) */
            if (T > 0 && batch <= SIZE_MAX / T && batch * T > 12) {
                batch = 1 + draw(3);
                T = 12 / batch;
            }
            const int forward = chance(50);
            if (forward)
                st = llm_decoder_forward(&dec, &ps, &tape, chance(5) ? NULL : ids, batch, T,
                                         offset, NULL, &logits, &err);
            else
                st = llm_decoder_loss(&dec, &ps, &tape, ids, chance(5) ? NULL : targets,
                                      batch, T, &logits, &loss, &err);
            judge(forward ? "decoder.forward" : "decoder.loss", st, &err,
                  st == LLM_OK || (tape.count == count &&
                                   memcmp(&logits, &vmark, sizeof logits) == 0));
            if (st == LLM_OK && loss.id != vmark.id && chance(50)) {
                memset(&err, 0, sizeof err);
                st = llm_tape_backward(&tape, loss, NULL, 0, &err);
                judge("tape.backward", st, &err, st == LLM_OK || tape.count > 0);
            }
            llm_tape_reset(&tape, NULL);
        }
        {
            llm_adamw_config acfg;
            llm_adamw opt, omark;
            llm_grad_multiplier mu;
            acfg.beta1 = chance(70) ? 0.9 : value();
            acfg.beta2 = chance(70) ? 0.999 : value();
            acfg.eps = chance(70) ? 1e-8 : value();
            acfg.weight_decay = chance(70) ? 0.01 : value();
            memset(&omark, 0x5a, sizeof omark);
            opt = omark;
            memset(&err, 0, sizeof err);
            st = llm_adamw_init(&opt, &ps, &acfg, &err);
            judge("adamw.init", st, &err, st == LLM_OK || memcmp(&opt, &omark, sizeof opt) == 0);
            if (st == LLM_OK) {
                size_t steps = opt.steps;
                double first = ps.items[0].value.data[0];
                mu.divisor = chance(80) ? 1.0 : value();
                mu.factor = chance(80) ? 1.0 : value();
                if (chance(20))
                    ps.items[draw(ps.count)].grad.data[0] = value();
                if (chance(20)) {                  /* freeze or thaw any parameter, or none */
                    const size_t index = chance(80) ? draw(ps.count) : index_near(SIZE_MAX);
                    const int was = index < ps.count ? ps.items[index].trainable : -1;
                    memset(&err, 0, sizeof err);
                    st = llm_params_set_trainable(chance(5) ? NULL : &ps, index,
                                                  (int)draw(3), &err);
                    judge("params.set_trainable", st, &err,
                          st == LLM_OK || index >= ps.count || ps.items[index].trainable == was);
                }
                memset(&err, 0, sizeof err);
                st = llm_adamw_step(&opt, &ps, mu, chance(80) ? 1e-3 : value(), &err);
                judge("adamw.step", st, &err,
                      st == LLM_OK || (opt.steps == steps &&
                                       memcmp(&first, &ps.items[0].value.data[0],
                                              sizeof first) == 0));
                llm_adamw_free(&opt);
            }
        }
        llm_tape_free(&tape);
        llm_decoder_free(&dec);
    }
    llm_params_free(&ps);
    {
        llm_rope rope, rmark;
        memset(&rmark, 0x5a, sizeof rmark);
        rope = rmark;
        memset(&err, 0, sizeof err);
        st = llm_rope_init(&rope, small(), positive(), small() % 64, (llm_rope_pairing)draw(2),
                           &err);
        judge("rope.init", st, &err, st == LLM_OK || memcmp(&rope, &rmark, sizeof rope) == 0);
        if (st == LLM_OK) {
            llm_tensor owned, x = tensor(&owned), out, marker;
            size_t pos[8];
            memset(&marker, 0x5a, sizeof marker);
            for (k = 0; k < 8; k++)
                pos[k] = index_near(rope.capacity);
            out = marker;
            memset(&err, 0, sizeof err);
            st = llm_rope_apply(&rope, maybe_null(&x), chance(5) ? NULL : pos, draw(9), &out,
                                &err);
            judge("rope.apply", st, &err, st == LLM_OK || MARKED(out));
            if (st == LLM_OK)
                llm_tensor_free(&out);
            llm_tensor_free(&owned);
            llm_rope_free(&rope);
        }
    }
}

/* ----------------------------------------------------------- n-gram calls */

static void ngram_calls(void)
{
    static const size_t ids[6] = {0, 41, 42, 43, 44, 1};
    llm_ngram_config cfg;
    llm_ngram m, mmark;
    llm_params ps;
    llm_rng r, r0;
    llm_tape tape;
    llm_error err;
    llm_status st;
    llm_doc docs[2];
    llm_window w[4];
    size_t in[12], t[4], k, count;
    {                                   /* contexts of windows, some not in the documents */
        size_t inmark[12], tmark[4];
        for (k = 0; k < 2; k++) {
            docs[k].ids = chance(5) ? NULL : ids;
            docs[k].length = draw(7);
        }
        for (k = 0; k < 4; k++) {
            w[k].doc = chance(10) ? index_near(2) : draw(2);
            w[k].start = chance(10) ? SIZE_MAX - draw(2) : draw(6);
        }
        memset(inmark, 0x5a, sizeof inmark);
        memset(tmark, 0x5a, sizeof tmark);
        memcpy(in, inmark, sizeof in);
        memcpy(t, tmark, sizeof t);
        count = draw(4);
        memset(&err, 0, sizeof err);
        st = llm_batch_contexts(chance(5) ? NULL : docs, draw(3), chance(5) ? NULL : w,
                                draw(5), draw(3), count,
                                chance(10) && count > 1 ? SIZE_MAX : draw(4),
                                in, t, &err);
        /* the arrays hold count * C and count slots, as the contract asks,
           unless count * C overflows (refused before any is written) */
        judge("data.batch_contexts", st, &err,
              st == LLM_OK || (memcmp(in, inmark, sizeof in) == 0
                               && memcmp(t, tmark, sizeof t) == 0));
    }
    cfg.vocab = chance(80) ? 1 + draw(8) : small();
    cfg.context = chance(80) ? 1 + draw(3) : small();
    cfg.width = chance(80) ? 1 + draw(3) : small();
    cfg.d_ff = chance(80) ? 1 + draw(4) : small();
    llm_rng_seed(&r, draw(1000));
    r0 = r;
    if (llm_params_init(&ps, NULL) != LLM_OK)
        exit(4);
    memset(&mmark, 0x5a, sizeof mmark);
    m = mmark;
    memset(&err, 0, sizeof err);
    st = llm_ngram_init(chance(5) ? NULL : &m, &ps, chance(5) ? NULL : &cfg, &r, &err);
    judge("ngram.init", st, &err,
          st == LLM_OK || (memcmp(&m, &mmark, sizeof m) == 0 && ps.count == 0
                           && r.state == r0.state));
    if (st == LLM_OK && llm_tape_init(&tape, 1 + draw(4), NULL) == LLM_OK) {
        for (k = 0; k < 4; k++) {
            size_t batch = chance(10) ? SIZE_MAX / 2 : draw(4), j, nodes = tape.count;
            size_t cap = draw(5), out[4], outmark[4], got = 77, n = draw(4);
            llm_var v, vmark;
            llm_ngram use = m;
            const int which = (int)draw(3);
            if (chance(10))
                use.config.context = small();
            if (chance(10))
                use.head.d_in = small();
            for (j = 0; j < 12; j++) {
                in[j] = index_near(cfg.vocab);
                t[j % 4] = index_near(cfg.vocab);
            }
            /* ids hold batch * C entries and targets batch, as the contract
               asks, unless batch * C overflows (refused before any is read) */
            if (which == 1 && batch > 4)
                batch = 4;
            if (batch > 0 && use.config.context > 0 && batch <= SIZE_MAX / use.config.context
                && batch * use.config.context > 12)
                batch = 1;
            if (use.config.context > 12 && batch > 0)
                use.config.context = 1 + draw(3);
            memset(&vmark, 0x5a, sizeof vmark);
            v = vmark;
            memset(&err, 0, sizeof err);
            switch (which) {
            case 0:
                st = llm_ngram_forward(&use, &ps, &tape, chance(5) ? NULL : in, batch, NULL, &v,
                                       &err);
                judge("ngram.forward", st, &err,
                      st == LLM_OK || (tape.count == nodes && memcmp(&v, &vmark, sizeof v) == 0));
                break;
            case 1:
                st = llm_ngram_loss(&use, &ps, &tape, in, chance(5) ? NULL : t, batch, NULL, &v,
                                    &err);
                judge("ngram.loss", st, &err,
                      st == LLM_OK || (tape.count == nodes && memcmp(&v, &vmark, sizeof v) == 0));
                break;
            default:
                memset(outmark, 0x5a, sizeof outmark);
                memcpy(out, outmark, sizeof out);
                if (cap > 4)
                    cap = 4;
                st = llm_ngram_greedy(&use, &ps, &tape, chance(5) ? NULL : in, n, draw(6),
                                      chance(5) ? NULL : out, cap, &got, &err);
                judge("ngram.greedy", st, &err,
                      tape.count == nodes
                          && (st == LLM_OK || (got == 77 && memcmp(out, outmark,
                                                                   sizeof out) == 0)));
                break;
            }
            llm_tape_reset(&tape, NULL);
        }
        llm_tape_free(&tape);
    }
    llm_params_free(&ps);
}

/* ------------------------------------------------------------ train calls */

/* 1 when a and b hold the same values and gradients, bit for bit. */
static int same_list(const llm_params *a, const llm_params *b)
{
    size_t i;
    if (a->count != b->count)
        return 0;
    for (i = 0; i < a->count; i++)
        if (memcmp(a->items[i].value.data, b->items[i].value.data,
                   a->items[i].value.size * sizeof(double)) != 0
            || memcmp(a->items[i].grad.data, b->items[i].grad.data,
                      a->items[i].grad.size * sizeof(double)) != 0)
            return 0;
    return 1;
}

static void train_calls(void)
{
    static const llm_partition parts[4] = {LLM_TRAIN, LLM_VALIDATION, LLM_TEST,
                                           (llm_partition)7};
    llm_decoder_config cfg = {1 + draw(6), 2 * (1 + draw(2)), 1, 1 + draw(3), draw(2),
                              1 + draw(3), 10000.0, 1e-6, 0};
    const llm_adamw_config acfg = {0.9, 0.99, 1e-8, chance(50) ? 0.0 : 0.01};
    size_t ids[2][10], k, j;
    llm_doc docs[2][2];
    llm_train_docs set[2];
    double rates[3];
    llm_train_config plan;
    llm_params ps, before, cp, cpmark;
    llm_decoder dec;
    llm_adamw opt, co, comark;
    llm_train_result out, outmark;
    llm_loss_sum acc, accmark;
    llm_tape tape;
    llm_rng r;
    llm_error err;
    llm_status st;
    double lr, lrmark;
    llm_rng_seed(&r, draw(1000));
    if (llm_params_init(&ps, NULL) != LLM_OK)
        exit(4);
    if (llm_decoder_init(&dec, &ps, &cfg, &r, NULL) != LLM_OK
        || llm_adamw_init(&opt, &ps, &acfg, NULL) != LLM_OK
        || llm_tape_init(&tape, 1 + draw(8), NULL) != LLM_OK)
        exit(4);
    if (chance(10))
        ps.items[draw(ps.count)].value.data[0] = value();
    if (chance(10))
        ps.items[draw(ps.count)].grad.data[0] = value();
    if (llm_params_copy(&before, &ps, NULL) != LLM_OK)
        exit(4);
    for (k = 0; k < 2; k++) {
        for (j = 0; j < 2; j++) {
            docs[k][j].ids = ids[k];
            docs[k][j].length = draw(11);
        }
        for (j = 0; j < 10; j++)
            ids[k][j] = chance(3) ? index_near(cfg.vocab) : draw(cfg.vocab);
        set[k].docs = chance(10) ? NULL : docs[k];
        set[k].count = draw(3);
        set[k].partition = chance(80) ? (k == 0 ? LLM_TRAIN : LLM_VALIDATION) : parts[draw(4)];
    }
    for (k = 0; k < 3; k++)
        rates[k] = chance(85) ? 0.001 * (double)(1 + draw(50)) : value();
    plan.steps = chance(90) ? 1 + draw(3) : small();
    plan.T = chance(90) ? 1 + draw(3) : small();
    plan.stride = chance(90) ? 1 + draw(2) : small();
    plan.batch = chance(90) ? 1 + draw(3) : small();
    plan.seed = llm_rng_next_u64(&rng);
    plan.train_batch = chance(90) ? 1 + draw(3) : small();
    plan.validation_batch = chance(90) ? 1 + draw(3) : small();
    plan.every = chance(90) ? 1 + draw(3) : small();
    plan.schedule.rates = chance(5) ? NULL : rates;
    plan.schedule.count = draw(4);
    plan.clip = chance(85) ? 0.1 * (double)(1 + draw(20)) : value();
    if (plan.steps > 3)                 /* a hostile plan, not a long one */
        plan.steps = chance(50) ? 0 : 3;

    memset(&lrmark, 0x5a, sizeof lrmark);
    lr = lrmark;
    memset(&err, 0, sizeof err);
    st = llm_schedule_rate(chance(5) ? NULL : &plan.schedule, draw(5), &lr, &err);
    judge("schedule.rate", st, &err, st == LLM_OK || memcmp(&lr, &lrmark, sizeof lr) == 0);

    memset(&cpmark, 0x5a, sizeof cpmark);
    cp = cpmark;
    memset(&err, 0, sizeof err);
    st = llm_params_copy(chance(5) ? &ps : &cp, chance(5) ? NULL : &ps, &err);
    judge("params.copy", st, &err,
          same_list(&ps, &before)
              && (st == LLM_OK || memcmp(&cp, &cpmark, sizeof cp) == 0));
    if (st == LLM_OK) {
        if (!same_list(&cp, &ps))
            violated("params.copy", "the copy differs", &err);
        llm_params_free(&cp);
    }
    memset(&comark, 0x5a, sizeof comark);
    co = comark;
    memset(&err, 0, sizeof err);
    st = llm_adamw_copy(chance(5) ? &opt : &co, chance(5) ? NULL : &opt, &err);
    judge("adamw.copy", st, &err, st == LLM_OK || memcmp(&co, &comark, sizeof co) == 0);
    if (st == LLM_OK)
        llm_adamw_free(&co);

    memset(&accmark, 0x5a, sizeof accmark);
    acc = accmark;
    memset(&err, 0, sizeof err);
    st = llm_evaluate(&dec, &ps, &tape, chance(5) ? NULL : &set[draw(2)], plan.T, plan.stride,
                      plan.validation_batch, &acc, &err);
    judge("optim.evaluate", st, &err,
          tape.count == 0 && same_list(&ps, &before)
              && (st == LLM_OK || memcmp(&acc, &accmark, sizeof acc) == 0));

    memset(&outmark, 0x5a, sizeof outmark);
    out = outmark;
    memset(&err, 0, sizeof err);
    st = llm_train(chance(10) ? NULL : &dec, &ps, &opt, &set[0], chance(10) ? NULL : &set[1],
                   chance(10) ? NULL : &plan, NULL, NULL, &out, &err);
    judge("optim.train", st, &err,
          same_list(&ps, &before) && opt.steps == 0
              && (st == LLM_OK || memcmp(&out, &outmark, sizeof out) == 0));
    if (st == LLM_OK) {
        if (out.count == 0 || out.selected > plan.steps || !isfinite(out.validation))
            violated("optim.train", "a result that is not a run's", &err);
        llm_train_result_free(&out);
    }
    llm_tape_free(&tape);
    llm_adamw_free(&opt);
    llm_params_free(&before);
    llm_decoder_free(&dec);
    llm_params_free(&ps);
}

/* ------------------------------------------------------------------ main */

static void one_case(uint64_t seed, int fd)
{
    size_t counts[2];
    int k;
    llm_rng_seed(&rng, seed);
    llm_alloc_keep(chance(20) ? draw(1 << 16) : LLM_ALLOC_KEEP);   /* small limits too */
    for (k = 0; k < 4; k++) {
        text_calls();
        tensor_calls();
        tape_calls();
        if (chance(10))
            llm_alloc_trim();
    }
    model_calls();
    ngram_calls();
    train_calls();
    corpus_calls();
    counts[0] = calls;
    counts[1] = refusals;
    if (write(fd, counts, sizeof counts) != (ssize_t)sizeof counts)
        exit(4);
}

int main(int argc, char **argv)
{
    unsigned long cases = argc > 1 ? strtoul(argv[1], NULL, 10) : 300;
    unsigned long seed = argc > 2 ? strtoul(argv[2], NULL, 10) : 1, i;
    size_t total_calls = 0, total_refusals = 0, crashes = 0, violations = 0;
    for (i = 0; i < cases; i++) {
        int fds[2], status;
        size_t counts[2] = {0, 0};
        pid_t pid;
        if (pipe(fds) != 0)
            return 2;
        fflush(stdout);
        pid = fork();
        if (pid < 0)
            return 2;
        if (pid == 0) {
            close(fds[0]);
            one_case(seed * 1000003u + i, fds[1]);
            _exit(0);
        }
        close(fds[1]);
        if (read(fds[0], counts, sizeof counts) != (ssize_t)sizeof counts)
            counts[0] = counts[1] = 0;
        close(fds[0]);
        waitpid(pid, &status, 0);
        total_calls += counts[0];
        total_refusals += counts[1];
        if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
            violations++;
            fprintf(stderr, "hostile: case %lu (seed %lu) broke a promise\n", i, seed);
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            crashes++;
            fprintf(stderr, "hostile: case %lu (seed %lu) crashed\n", i, seed);
        }
    }
    printf("hostile: %lu cases, %zu calls, %zu refusals, %zu crashes, %zu state violations\n",
           cases, total_calls, total_refusals, crashes, violations);
    return crashes + violations > 0 ? 1 : 0;
}
