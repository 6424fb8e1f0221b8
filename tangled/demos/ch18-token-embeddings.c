/* ch18-token-embeddings -- lookup as gather, scatter-add gradient. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/nn.h"

static void fill_row(llm_trace *tr, const char *table, size_t n, char (*c)[96])
{
    const char *cells[6];
    size_t i;
    for (i = 0; i < n && i < 6; i++)
        cells[i] = c[i];
    llm_trace_row(tr, table, n, cells);
}

/* n rows of width w from x, as "[[a, b], [c, d]]", with the given decimals. */
static char *rows_of(char *buf, size_t size, const double *x, size_t n, size_t w,
                     int decimals)
{
    char one[64];
    size_t used = 0, i;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, size, "[");
    for (i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i == 0 ? "" : ", ",
                                 llm_fmt_list(one, sizeof one, x + w * i, w, decimals));
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

/* n rows of width 2: tables, outputs and gradients of the fixture. */
static char *rows(char *buf, size_t size, const double *x, size_t n, int decimals)
{
    return rows_of(buf, size, x, n, 2, decimals);
}

/* 1 when a and b have the same shape and every element the same bits. */
static int same_bits(const llm_tensor *a, const llm_tensor *b)
{
    size_t idx[LLM_MAX_RANK] = {0}, k, oa, ob;
    if (a->rank != b->rank || a->size != b->size)
        return 0;
    for (k = 0; k < a->rank; k++)
        if (a->shape[k] != b->shape[k])
            return 0;
    if (a->size == 0)
        return 1;
    do {
        oa = a->offset;
        ob = b->offset;
        for (k = 0; k < a->rank; k++) {
            oa += idx[k] * a->stride[k];
            ob += idx[k] * b->stride[k];
        }
        if (memcmp(&a->data[oa], &b->data[ob], sizeof(double)) != 0)
            return 0;
    } while (llm_index_next(a->rank, a->shape, idx));
    return 1;
}
/* The [n, v] one-hot matrix of n IDs (each < v). */
static llm_status onehot_matrix(llm_tensor *out, const size_t *id, size_t n, size_t v,
                                llm_error *err)
{
    const size_t shape[2] = {n, v};
    size_t t;
    llm_status st = llm_tensor_zeros(out, 2, shape, err);
    if (st != LLM_OK)
        return st;
    for (t = 0; t < n; t++)
        out->data[t * v + id[t]] = 1.0;
    return LLM_OK;
}
/* Records sum(x * up) for the lookup of ids and writes the sum's handle. */
static llm_status weighted_lookup(llm_tape *tape, const llm_embedding *emb, llm_params *ps,
                                  const size_t *id, const size_t *shape,
                                  const llm_tensor *up, llm_var *out, llm_error *err)
{
    llm_var x, g, xg;
    llm_status st;
    if ((st = llm_embedding_forward(emb, ps, tape, id, 2, shape, &x, err)) != LLM_OK
        || (st = llm_tape_constant(tape, up, &g, err)) != LLM_OK
        || (st = llm_tape_mul(tape, x, g, &xg, err)) != LLM_OK)
        return st;
    return llm_tape_sum_all(tape, xg, out, err);
}
typedef struct lookup_ctx {
    const llm_embedding *emb;
    llm_params *ps;
    const size_t *ids;
    size_t rank;
    const size_t *shape;
    const llm_tensor *upstream;   /* the objective is sum(X * upstream) */
} lookup_ctx;

/* theta is the table's value inside ctx->ps: the lookup reads it there. */
static llm_status lookup_objective(void *vctx, const llm_tensor *theta, double *value,
                                   llm_error *err)
{
    const lookup_ctx *ctx = vctx;
    llm_tape tape;
    llm_var x, g, xg, s;
    const llm_tensor *v;
    llm_status st = llm_tape_init(&tape, 8, err);
    (void)theta;
    if (st != LLM_OK)
        return st;
    if ((st = llm_embedding_forward(ctx->emb, ctx->ps, &tape, ctx->ids, ctx->rank,
                                    ctx->shape, &x, err)) == LLM_OK
        && (st = llm_tape_constant(&tape, ctx->upstream, &g, err)) == LLM_OK
        && (st = llm_tape_mul(&tape, x, g, &xg, err)) == LLM_OK
        && (st = llm_tape_sum_all(&tape, xg, &s, err)) == LLM_OK
        && (st = llm_tape_value(&tape, s, &v, err)) == LLM_OK)
        *value = v->data[v->offset];
    llm_tape_free(&tape);
    return st;
}

int main(int argc, char **argv)
{
    static const double fixture[8] = {10, 11, 20, 21, 30, 31, 40, 41};
    static const double upstream[6] = {1, 0, 0, 2, 3, 4};
    static const size_t ids[3] = {2, 1, 2}, ids_shape[2] = {1, 3};
    llm_trace tr;
    llm_params ps;
    llm_embedding emb;
    llm_tape tape;
    llm_param *p = NULL;
    llm_var x;
    const llm_tensor *xv = NULL;
    llm_error err;
    double table_grad[8];
    int ok = 1;
    int status = llm_demo_start(argc, argv, "ch18-token-embeddings", &tr);
    if (status != 0)
        return status;
    printf("chapter=18 token-embeddings\n");
    if (!llm_demo_ok("ch18", llm_params_init(&ps, &err), &err)
        || !llm_demo_ok("ch18", llm_tape_init(&tape, 16, &err), &err))
        return llm_demo_finish(&tr, 0);
    {
        llm_rng rng, replay;
        size_t draws = 0, i;
        char buf[256];

        llm_rng_seed(&rng, 18);
        replay = rng;
        if (!llm_demo_ok("ch18",
                         llm_embedding_init(&emb, &ps, "token_embedding", 4, 2, &rng, &err), &err))
            return llm_demo_finish(&tr, 0);
        while (replay.state != rng.state && draws < 100) {
            (void)llm_rng_next_u64(&replay);
            draws++;
        }
        p = &ps.items[emb.weight];
        printf("layer vocab=4 width=2 parameter=%s shape=%s\n", p->name,
               llm_fmt_sizes(buf, sizeof buf, p->value.shape, 2));
        llm_trace_value(&tr, "param_shape", buf);
        printf("seed=18 limit=%s", llm_fmt(buf, sizeof buf, sqrt(6.0 / (4.0 + 2.0)), 12));
        llm_trace_value(&tr, "limit", buf);
        printf(" draws=%zu decay=%d\n", draws, p->decay);
        snprintf(buf, sizeof buf, "%zu", draws);
        llm_trace_value(&tr, "draws", buf);
        for (i = 0; i < 4; i++)
            printf("seed=18 row %zu=%s\n", i,
                   llm_fmt_list(buf, sizeof buf, p->value.data + 2 * i, 2, 6));
        llm_trace_value(&tr, "seed_table", rows(buf, sizeof buf, p->value.data, 4, 6));
        ok = ok && draws == 8 && p->decay == 1;

        memcpy(p->value.data, fixture, sizeof fixture);
        printf("fixture table=%s\n", rows(buf, sizeof buf, p->value.data, 4, 0));
    }
    {
        size_t t, k;
        char c[6][96], buf[256];

        if (!llm_demo_ok("ch18", llm_embedding_forward(&emb, &ps, &tape, ids, 2, ids_shape, &x,
                                                       &err), &err)
            || !llm_demo_ok("ch18", llm_tape_value(&tape, x, &xv, &err), &err))
            return llm_demo_finish(&tr, 0);
        printf("ids=[[2, 1, 2]] x shape=%s", llm_fmt_sizes(buf, sizeof buf, xv->shape, xv->rank));
        llm_trace_value(&tr, "x_shape", buf);
        {
            double flat[6];
            for (t = 0; t < 3; t++)
                for (k = 0; k < 2; k++)
                    flat[2 * t + k] = xv->data[xv->offset + t * xv->stride[1] + k * xv->stride[2]];
            printf(" rows=%s\n", rows(buf, sizeof buf, flat, 3, 0));
            llm_trace_value(&tr, "x_rows", buf);
            for (t = 0; t < 3; t++) {
                double onehot[4] = {0, 0, 0, 0};
                onehot[ids[t]] = 1.0;
                snprintf(c[0], sizeof c[0], "%zu", t);
                snprintf(c[1], sizeof c[1], "%zu", ids[t]);
                llm_fmt_list(c[2], sizeof c[2], onehot, 4, 0);
                llm_fmt_list(c[3], sizeof c[3], flat + 2 * t, 2, 0);
                llm_fmt_list(c[4], sizeof c[4], upstream + 2 * t, 2, 0);
                fill_row(&tr, "lookup", 5, c);
            }
        }
        for (t = 0; t < 4; t++) {
            snprintf(c[0], sizeof c[0], "%zu", t);
            llm_fmt_list(c[1], sizeof c[1], fixture + 2 * t, 2, 0);
            fill_row(&tr, "table", 2, c);
        }
    }
    {
        static const size_t flat_shape[2] = {3, 2};
        llm_tensor onehot, product, flat;
        int same;
        char buf[256];

        if (!llm_demo_ok("ch18", onehot_matrix(&onehot, ids, 3, 4, &err), &err))
            return llm_demo_finish(&tr, 0);
        if (!llm_demo_ok("ch18", llm_matmul(&product, &onehot, &p->value, 0, 0, &err), &err)
            || !llm_demo_ok("ch18", llm_tensor_reshape(&flat, xv, 2, flat_shape, &err), &err)) {
            llm_tensor_free(&onehot);
            return llm_demo_finish(&tr, 0);
        }
        same = same_bits(&product, &flat);
        printf("one-hot O=%s\n", rows_of(buf, sizeof buf, onehot.data, 3, 4, 0));
        printf("O E=%s lookup=%s\n", rows(buf, sizeof buf, product.data, 3, 0),
               same ? "bit-identical" : "different");
        llm_trace_value(&tr, "onehot_same", same ? "bit-identical" : "different");
        ok = ok && same;
        llm_tensor_free(&onehot);
        llm_tensor_free(&product);
    }
    {
        static const size_t seed_shape[3] = {1, 3, 2}, flat_shape[2] = {3, 2};
        llm_tensor seed, onehot, flat, product;
        size_t i, t, used;
        int same;
        char c[6][96], buf[256], unused[64] = "", one[64];

        if (!llm_demo_ok("ch18", llm_tensor_from(&seed, 3, seed_shape, upstream, 6, &err), &err))
            return llm_demo_finish(&tr, 0);
        if (!llm_demo_ok("ch18", llm_tape_backward(&tape, x, &seed, 0, &err), &err)) {
            llm_tensor_free(&seed);
            return llm_demo_finish(&tr, 0);
        }
        memcpy(table_grad, p->grad.data, sizeof table_grad);
        printf("upstream=%s\n", rows(buf, sizeof buf, upstream, 3, 0));
        printf("table grad=%s\n", rows(buf, sizeof buf, table_grad, 4, 0));
        llm_trace_value(&tr, "table_grad", buf);
        llm_trace_value(&tr, "grad_row2", llm_fmt_list(buf, sizeof buf, table_grad + 4, 2, 0));
        for (i = 0; i < 4; i++) {
            snprintf(c[0], sizeof c[0], "%zu", i);
            c[1][0] = c[2][0] = '\0';
            for (t = 0, used = 0; t < 3; t++)
                if (ids[t] == i) {
                    snprintf(c[1] + strlen(c[1]), sizeof c[1] - strlen(c[1]), "%s%zu",
                             used ? ", " : "", t);
                    snprintf(c[2] + strlen(c[2]), sizeof c[2] - strlen(c[2]), "%s%s",
                             used ? " + " : "", llm_fmt_list(one, sizeof one, upstream + 2 * t, 2, 0));
                    used++;
                }
            if (used == 0) {
                snprintf(c[1], sizeof c[1], "—");
                snprintf(c[2], sizeof c[2], "—");
                snprintf(unused + strlen(unused), sizeof unused - strlen(unused), "%s%zu",
                         unused[0] ? ", " : "", i);
            }
            llm_fmt_list(c[3], sizeof c[3], table_grad + 2 * i, 2, 0);
            fill_row(&tr, "scatter", 4, c);
        }
        llm_trace_value(&tr, "unused_rows", unused);

        if (!llm_demo_ok("ch18", onehot_matrix(&onehot, ids, 3, 4, &err), &err)) {
            llm_tensor_free(&seed);
            return llm_demo_finish(&tr, 0);
        }
        ok = ok && llm_demo_ok("ch18", llm_tensor_reshape(&flat, &seed, 2, flat_shape, &err), &err)
                && llm_demo_ok("ch18", llm_matmul(&product, &onehot, &flat, 1, 0, &err), &err);
        if (ok) {
            same = same_bits(&product, &p->grad);
            printf("O^T upstream=%s table grad=%s\n", rows(buf, sizeof buf, product.data, 4, 0),
                   same ? "bit-identical" : "different");
            llm_trace_value(&tr, "scatter_same", same ? "bit-identical" : "different");
            ok = ok && same;
            llm_tensor_free(&product);
        }
        llm_tensor_free(&onehot);
        llm_tensor_free(&seed);
    }
    {
        static const size_t seed_shape[3] = {1, 3, 2};
        const double h = 1e-5, tol = 2e-6;
        llm_tensor seed;
        lookup_ctx ctx;
        llm_difference d;
        size_t coords[8], k, failures = 0;
        double worst = 0.0, e;
        char c[6][96], buf[64];

        if (!llm_demo_ok("ch18", llm_tensor_from(&seed, 3, seed_shape, upstream, 6, &err), &err))
            return llm_demo_finish(&tr, 0);
        ctx.emb = &emb;
        ctx.ps = &ps;
        ctx.ids = ids;
        ctx.rank = 2;
        ctx.shape = ids_shape;
        ctx.upstream = &seed;
        for (k = 0; k < 8 && ok; k++) {
            coords[k] = k;
            ok = llm_demo_ok("ch18", llm_central_difference(lookup_objective, &ctx, &p->value, k,
                                                            h, &d, &err), &err);
            if (!ok)
                break;
            e = llm_gradient_error(table_grad[k], d.estimate);
            snprintf(c[0], sizeof c[0], "[%zu, %zu]", k / 2, k % 2);
            llm_fmt(c[1], sizeof c[1], table_grad[k], 0);
            llm_fmt(c[2], sizeof c[2], d.estimate, 9);
            snprintf(c[3], sizeof c[3], e == 0.0 ? "0" : "%.1e", e);
            fill_row(&tr, "gradcheck", 4, c);
        }
        ok = ok && llm_demo_ok("ch18", llm_gradient_check(lookup_objective, &ctx, &p->value,
                                                          table_grad, coords, 8, h, tol, &worst,
                                                          &failures, &err), &err);
        printf("gradcheck coordinates=8 h=1e-05 tolerance=2e-06");
        snprintf(buf, sizeof buf, worst == 0.0 ? "0" : "%.1e", worst);
        printf(" worst=%s failures=%zu verdict=%s\n", buf, failures,
               ok && failures == 0 ? "pass" : "fail");
        llm_trace_value(&tr, "gc_worst", buf);
        snprintf(buf, sizeof buf, "%zu", failures);
        llm_trace_value(&tr, "gc_failures", buf);
        llm_trace_value(&tr, "gc_verdict", ok && failures == 0 ? "pass" : "fail");
        ok = ok && failures == 0 && memcmp(p->value.data, fixture, sizeof fixture) == 0;
        llm_tensor_free(&seed);
    }
    {
        static const size_t ids2[2] = {3, 2}, shape2[2] = {1, 2};
        static const size_t seed_shape[3] = {1, 3, 2}, seed2_shape[3] = {1, 2, 2};
        static const double upstream2[4] = {1, 1, 1, 1};
        llm_tensor up1, up2;
        llm_var s1, s2, total;
        double alone[8], want[8];
        size_t i, leaves = 0;
        int same;
        char buf[256];

        if (!llm_demo_ok("ch18", llm_tensor_from(&up1, 3, seed_shape, upstream, 6, &err), &err))
            return llm_demo_finish(&tr, 0);
        if (!llm_demo_ok("ch18", llm_tensor_from(&up2, 3, seed2_shape, upstream2, 4, &err),
                         &err)) {
            llm_tensor_free(&up1);
            return llm_demo_finish(&tr, 0);
        }
        memset(p->grad.data, 0, p->grad.size * sizeof(double));
        ok = ok && llm_demo_ok("ch18", llm_tape_reset(&tape, &err), &err)
                && llm_demo_ok("ch18", weighted_lookup(&tape, &emb, &ps, ids2, shape2, &up2, &s2,
                                                       &err), &err)
                && llm_demo_ok("ch18", llm_tape_backward(&tape, s2, NULL, 0, &err), &err);
        memcpy(alone, p->grad.data, sizeof alone);
        printf("second ids=[[3, 2]] upstream=%s\n", rows(buf, sizeof buf, upstream2, 2, 0));
        printf("second alone: table grad=%s\n", rows(buf, sizeof buf, alone, 4, 0));

        memset(p->grad.data, 0, p->grad.size * sizeof(double));
        ok = ok && llm_demo_ok("ch18", llm_tape_reset(&tape, &err), &err)
                && llm_demo_ok("ch18", weighted_lookup(&tape, &emb, &ps, ids, ids_shape, &up1, &s1,
                                                       &err), &err)
                && llm_demo_ok("ch18", weighted_lookup(&tape, &emb, &ps, ids2, shape2, &up2, &s2,
                                                       &err), &err)
                && llm_demo_ok("ch18", llm_tape_add(&tape, s1, s2, &total, &err), &err);
        for (i = 0; ok && i < tape.count; i++) {
            llm_node_info n;
            ok = llm_demo_ok("ch18", llm_tape_node(&tape, i, &n, &err), &err);
            leaves += ok && n.op == &llm_op_leaf && n.grad == &p->grad;
        }
        ok = ok && llm_demo_ok("ch18", llm_tape_backward(&tape, total, NULL, 0, &err), &err);
        for (i = 0; i < 8; i++)
            want[i] = table_grad[i] + alone[i];
        same = ok && memcmp(p->grad.data, want, sizeof want) == 0;
        printf("one graph: table leaves=%zu table grad=%s\n", leaves,
               rows(buf, sizeof buf, p->grad.data, 4, 0));
        printf("one graph = first alone + second alone: %s\n", same ? "bit-identical" : "different");
        llm_trace_value(&tr, "shared_grad", buf);
        llm_trace_value(&tr, "alone_grad", rows(buf, sizeof buf, alone, 4, 0));
        snprintf(buf, sizeof buf, "%zu", leaves);
        llm_trace_value(&tr, "shared_leaves", buf);
        llm_trace_value(&tr, "shared_same", same ? "bit-identical" : "different");
        ok = ok && same && leaves == 1;
        llm_tensor_free(&up1);
        llm_tensor_free(&up2);
    }
    {
        static const size_t none[1] = {0};
        llm_var e;
        const llm_tensor *ev = NULL;
        char buf[64];

        ok = ok && llm_demo_ok("ch18", llm_tape_reset(&tape, &err), &err)
                && llm_demo_ok("ch18", llm_embedding_forward(&emb, &ps, &tape, ids, 1, none, &e,
                                                             &err), &err)
                && llm_demo_ok("ch18", llm_tape_value(&tape, e, &ev, &err), &err);
        if (!ok)
            return llm_demo_finish(&tr, 0);
        printf("ids shape=[0] x shape=%s elements=%zu\n",
               llm_fmt_sizes(buf, sizeof buf, ev->shape, ev->rank), ev->size);
        llm_trace_value(&tr, "empty_shape", buf);
        ok = ok && ev->rank == 2 && ev->shape[0] == 0 && ev->shape[1] == 2 && ev->size == 0;
    }
    {
        static const size_t bad[3] = {2, 4, 1}, deep[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        static const char long_prefix[] =
            "a_prefix_so_long_that_the_name_of_its_table_cannot_fit_in_63";
        llm_params other, empty;
        llm_embedding small, spare;
        llm_rng rng, before;
        llm_var out = {777, 777};
        llm_status st;
        size_t nodes = tape.count, nparams = ps.count;
        int untouched;

        memset(&spare, 0x5a, sizeof spare);
        st = llm_embedding_forward(&emb, &ps, &tape, bad, 2, ids_shape, &out, &err);
        llm_demo_refusal(&tr, "ID 4 in [[2, 4, 1]]", st, &err);
        printf("  %s\n", err.message);
        llm_trace_value(&tr, "bad_code", llm_status_name(st));
        llm_trace_value(&tr, "bad_stage", err.stage);
        llm_trace_value(&tr, "bad_message", err.message);
        llm_demo_refusal(&tr, "IDs of rank 8",
                         llm_embedding_forward(&emb, &ps, &tape, ids, 8, deep, &out, &err), &err);
        ok = ok && llm_demo_ok("ch18", llm_params_init(&other, &err), &err)
                && llm_demo_ok("ch18", llm_params_init(&empty, &err), &err);
        llm_rng_seed(&rng, 18);
        ok = ok && llm_demo_ok("ch18", llm_embedding_init(&small, &other, "token_embedding", 3, 2,
                                                          &rng, &err), &err);
        llm_demo_refusal(&tr, "a list whose table is [3, 2]",
                         llm_embedding_forward(&emb, &other, &tape, ids, 2, ids_shape, &out, &err),
                         &err);
        llm_demo_refusal(&tr, "an empty parameter list",
                         llm_embedding_forward(&emb, &empty, &tape, ids, 2, ids_shape, &out, &err),
                         &err);

        llm_rng_seed(&rng, 18);
        before = rng;
        llm_demo_refusal(&tr, "width 0",
                         llm_embedding_init(&spare, &ps, "spare", 4, 0, &rng, &err), &err);
        llm_demo_refusal(&tr, "prefix \"Token\"",
                         llm_embedding_init(&spare, &ps, "Token", 4, 2, &rng, &err), &err);
        llm_demo_refusal(&tr, "a prefix of 60 characters",
                         llm_embedding_init(&spare, &ps, long_prefix, 4, 2, &rng, &err), &err);
        llm_demo_refusal(&tr, "prefix \"token_embedding\" again",
                         llm_embedding_init(&spare, &ps, "token_embedding", 4, 2, &rng, &err),
                         &err);

        untouched = tape.count == nodes && out.id == 777 && out.epoch == 777
                    && ps.count == nparams && rng.state == before.state;
        memset(&small, 0x5a, sizeof small);
        untouched = untouched && memcmp(&spare, &small, sizeof spare) == 0;
        printf("after the refusals: tape, output, list, generator and layer untouched=%s\n",
               untouched ? "yes" : "no");
        llm_trace_value(&tr, "untouched", untouched ? "yes" : "no");
        ok = ok && untouched;
        llm_params_free(&other);
        llm_params_free(&empty);
    }
    llm_tape_free(&tape);
    llm_params_free(&ps);
    return llm_demo_finish(&tr, ok);
}
