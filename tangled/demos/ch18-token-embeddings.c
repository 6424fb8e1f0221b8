/* ch18-token-embeddings -- lookup as gather, scatter-add gradient. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/evidence.h"
#include "llm/gradcheck.h"
#include "llm/nn.h"

static const double fixture[8] = {10, 11, 20, 21, 30, 31, 40, 41};
static const double upstream[6] = {1, 0, 0, 2, 3, 4};
static const size_t ids[3] = {2, 1, 2}, ids_shape[2] = {1, 3};

static llm_params *ps;            /* these four are owned by main */
static llm_tape *tape;
static llm_tensor *up, *onehot;   /* upstream as a [1, 3, 2] tensor; O, [3, 4] */
static llm_embedding emb;
static llm_param *table;          /* the layer's table in ps */
static llm_var x;                 /* the lookup of ids */
static double table_grad[8];      /* the table's gradient after the lookup */
static const char *identical(int same)
{
    return same ? "bit-identical" : "different";
}

static const char *sci(double e)
{
    return e == 0.0 ? "0" : llm_text("%.1e", e);
}

/* 1 when t, contiguous, is [size / 2, 2] and has the bits of x. */
static int same_bits(const llm_tensor *t, const double *x, size_t size)
{
    return t->rank == 2 && t->shape[1] == 2 && t->size == size
           && memcmp(t->data + t->offset, x, size * sizeof *x) == 0;
}
static void layer(llm_demo *d)
{
    static const size_t up_shape[3] = {1, 3, 2};
    llm_rng rng, replay;
    size_t draws = 0, i;
    llm_rng_seed(&rng, 18);
    replay = rng;
    if (!(LLM_TRY(d, llm_params_init(ps, &d->err))
          && LLM_TRY(d, llm_tape_init(tape, 16, &d->err))
          && LLM_TRY(d, llm_tensor_from(up, 3, up_shape, upstream, 6, &d->err))
          && LLM_TRY(d, llm_embedding_init(&emb, ps, "token_embedding", 4, 2, &rng,
                                           &d->err))))
        return;
    for (; replay.state != rng.state && draws < 100; draws++)
        (void)llm_rng_next_u64(&replay);
    table = &ps->items[emb.weight];
    printf("layer vocab=4 width=2 parameter=%s shape=%s\n", table->name,
           llm_put(d, "param_shape", llm_sizes(table->value.shape, 2)));
    printf("seed=18 limit=%s", llm_put(d, "limit", llm_num(sqrt(6.0 / (4 + 2)), 12)));
    printf(" draws=%s decay=%d\n", llm_put(d, "draws", llm_text("%zu", draws)),
           table->decay);
    for (i = 0; i < 4; i++)
        printf("seed=18 row %zu=%s\n", i, llm_nums(table->value.data + 2 * i, 2, 6));
    llm_put(d, "seed_table", llm_rows(table->value.data, 4, 2, 6));
    llm_demo_check(d, draws == 8, "the table took V D = 8 draws");
    llm_demo_check(d, table->decay == 1, "the table is decayed");

    memcpy(table->value.data, fixture, sizeof fixture);
    printf("fixture table=%s\n", llm_rows(table->value.data, 4, 2, 0));
}
static void lookup(llm_demo *d)
{
    static const size_t o_shape[2] = {3, 4};
    llm_tensor *product = llm_own_tensor(d);
    const llm_tensor *xv = NULL;
    const double *rows;
    size_t t;
    int same;
    if (!(LLM_TRY(d, llm_embedding_forward(&emb, ps, tape, ids, 2, ids_shape, &x,
                                           &d->err))
          && LLM_TRY(d, llm_tape_value(tape, x, &xv, &d->err))
          && llm_demo_check(d, llm_tensor_is_contiguous(xv), "the output is contiguous")
          && LLM_TRY(d, llm_tensor_zeros(onehot, 2, o_shape, &d->err))))
        return;
    rows = xv->data + xv->offset;
    for (t = 0; t < 3; t++)
        onehot->data[4 * t + ids[t]] = 1.0;
    printf("ids=[[2, 1, 2]] x shape=%s",
           llm_put(d, "x_shape", llm_sizes(xv->shape, xv->rank)));
    printf(" rows=%s\n", llm_put(d, "x_rows", llm_rows(rows, 3, 2, 0)));
    for (t = 0; t < 3; t++)
        llm_row(d, "lookup", llm_text("%zu", t), llm_text("%zu", ids[t]),
                llm_nums(onehot->data + 4 * t, 4, 0), llm_nums(rows + 2 * t, 2, 0),
                llm_nums(upstream + 2 * t, 2, 0), NULL);
    for (t = 0; t < 4; t++)
        llm_row(d, "table", llm_text("%zu", t), llm_nums(fixture + 2 * t, 2, 0), NULL);

    if (!LLM_TRY(d, llm_matmul(product, onehot, &table->value, 0, 0, &d->err)))
        return;
    same = same_bits(product, rows, 6);
    printf("one-hot O=%s\n", llm_rows(onehot->data, 3, 4, 0));
    printf("O E=%s lookup=%s\n", llm_rows(product->data, 3, 2, 0),
           llm_put(d, "onehot_same", identical(same)));
    llm_demo_check(d, same, "O E is the lookup, bit for bit");
}
static void backward(llm_demo *d)
{
    static const size_t flat_shape[2] = {3, 2};
    llm_tensor *product = llm_own_tensor(d), flat;
    const char *unused = "";
    size_t i, t;
    int same;
    if (!LLM_TRY(d, llm_tape_backward(tape, x, up, 0, &d->err)))
        return;
    memcpy(table_grad, table->grad.data, sizeof table_grad);
    printf("upstream=%s\n", llm_rows(upstream, 3, 2, 0));
    printf("table grad=%s\n", llm_put(d, "table_grad", llm_rows(table_grad, 4, 2, 0)));
    llm_put(d, "grad_row2", llm_nums(table_grad + 4, 2, 0));
    for (i = 0; i < 4; i++) {
        const char *used = "", *sent = "";
        for (t = 0; t < 3; t++)
            if (ids[t] == i) {
                used = llm_text("%s%s%zu", used, *used ? ", " : "", t);
                sent = llm_text("%s%s%s", sent, *sent ? " + " : "",
                                llm_nums(upstream + 2 * t, 2, 0));
            }
        if (*used == '\0')
            unused = llm_text("%s%s%zu", unused, *unused ? ", " : "", i);
        llm_row(d, "scatter", llm_text("%zu", i), *used ? used : "—",
                *sent ? sent : "—", llm_nums(table_grad + 2 * i, 2, 0), NULL);
    }
    llm_put(d, "unused_rows", unused);

    if (!(LLM_TRY(d, llm_tensor_reshape(&flat, up, 2, flat_shape, &d->err))
          && LLM_TRY(d, llm_matmul(product, onehot, &flat, 1, 0, &d->err))))
        return;
    same = same_bits(product, table->grad.data, 8);
    printf("O^T upstream=%s table grad=%s\n", llm_rows(product->data, 4, 2, 0),
           llm_put(d, "scatter_same", identical(same)));
    llm_demo_check(d, same, "O^T upstream is the table's gradient, bit for bit");
}
/* Records sum(X * g) for the lookup of the n IDs [1, n] on t; writes the
   sum's handle. */
static llm_status weighted_lookup(llm_tape *t, const size_t *id, size_t n,
                                  const llm_tensor *g, llm_var *out, llm_error *err)
{
    const size_t shape[2] = {1, n};
    llm_var xs, vg, xg;
    llm_status st = llm_embedding_forward(&emb, ps, t, id, 2, shape, &xs, err);
    st = st != LLM_OK ? st : llm_tape_constant(t, g, &vg, err);
    st = st != LLM_OK ? st : llm_tape_mul(t, xs, vg, &xg, err);
    return st != LLM_OK ? st : llm_tape_sum_all(t, xg, out, err);
}

/* sum(X * upstream) for the fixture's IDs, recorded on the tape t after a
   reset; theta is the table's value inside ps: the lookup reads it there. */
static llm_status lookup_objective(void *t, const llm_tensor *theta, double *value,
                                   llm_error *err)
{
    const llm_tensor *v = NULL;
    llm_var s;
    llm_status st = llm_tape_reset(t, err);
    (void)theta;
    st = st != LLM_OK ? st : weighted_lookup(t, ids, 3, up, &s, err);
    st = st != LLM_OK ? st : llm_tape_value(t, s, &v, err);
    if (st == LLM_OK)
        *value = v->data[v->offset];
    return st;
}
static void gradcheck(llm_demo *d)
{
    const double h = 1e-5, tol = 2e-6;
    llm_difference diff;
    size_t coords[8], k, failures = 0;
    double worst = 0.0;
    for (k = 0; k < 8; k++) {
        coords[k] = k;
        if (!LLM_TRY(d, llm_central_difference(lookup_objective, tape, &table->value,
                                               k, h, &diff, &d->err)))
            return;
        llm_row(d, "gradcheck", llm_text("[%zu, %zu]", k / 2, k % 2),
                llm_num(table_grad[k], 0), llm_num(diff.estimate, 9),
                sci(llm_gradient_error(table_grad[k], diff.estimate)), NULL);
    }
    if (!LLM_TRY(d, llm_gradient_check(lookup_objective, tape, &table->value,
                                       table_grad, coords, 8, h, tol, &worst,
                                       &failures, &d->err)))
        return;
    printf("gradcheck coordinates=8 h=1e-05 tolerance=2e-06");
    printf(" worst=%s", llm_put(d, "gc_worst", sci(worst)));
    printf(" failures=%s", llm_put(d, "gc_failures", llm_text("%zu", failures)));
    printf(" verdict=%s\n", llm_put(d, "gc_verdict", failures == 0 ? "pass" : "fail"));
    llm_demo_check(d, failures == 0, "every coordinate passes the gradient check");
    llm_demo_check(d, memcmp(table->value.data, fixture, sizeof fixture) == 0,
                   "the check leaves the table's bits as they were");
}
static void shared_leaf(llm_demo *d)
{
    static const size_t ids2[2] = {3, 2}, up2_shape[3] = {1, 2, 2};
    static const double upstream2[4] = {1, 1, 1, 1};
    llm_tensor *up2 = llm_own_tensor(d);
    llm_var s1, s2, total;
    llm_node_info n;
    double alone[8], want[8];
    size_t i, leaves = 0;
    int same;
    memset(table->grad.data, 0, sizeof alone);
    if (!(LLM_TRY(d, llm_tensor_from(up2, 3, up2_shape, upstream2, 4, &d->err))
          && LLM_TRY(d, llm_tape_reset(tape, &d->err))
          && LLM_TRY(d, weighted_lookup(tape, ids2, 2, up2, &s2, &d->err))
          && LLM_TRY(d, llm_tape_backward(tape, s2, NULL, 0, &d->err))))
        return;
    memcpy(alone, table->grad.data, sizeof alone);
    printf("second ids=[[3, 2]] upstream=%s\n", llm_rows(upstream2, 2, 2, 0));
    printf("second alone: table grad=%s\n", llm_rows(alone, 4, 2, 0));

    memset(table->grad.data, 0, sizeof alone);
    if (!(LLM_TRY(d, llm_tape_reset(tape, &d->err))
          && LLM_TRY(d, weighted_lookup(tape, ids, 3, up, &s1, &d->err))
          && LLM_TRY(d, weighted_lookup(tape, ids2, 2, up2, &s2, &d->err))
          && LLM_TRY(d, llm_tape_add(tape, s1, s2, &total, &d->err))))
        return;
    for (i = 0; i < tape->count && LLM_TRY(d, llm_tape_node(tape, i, &n, &d->err)); i++)
        leaves += n.op == &llm_op_leaf && n.grad == &table->grad;
    if (!LLM_TRY(d, llm_tape_backward(tape, total, NULL, 0, &d->err)))
        return;
    for (i = 0; i < 8; i++)
        want[i] = table_grad[i] + alone[i];
    same = memcmp(table->grad.data, want, sizeof want) == 0;
    printf("one graph: table leaves=%zu table grad=%s\n", leaves,
           llm_put(d, "shared_grad", llm_rows(table->grad.data, 4, 2, 0)));
    llm_put(d, "alone_grad", llm_rows(alone, 4, 2, 0));
    llm_put(d, "shared_leaves", llm_text("%zu", leaves));
    printf("one graph = first alone + second alone: %s\n",
           llm_put(d, "shared_same", identical(same)));
    llm_demo_check(d, same, "one graph gives the sum of the two gradients");
    llm_demo_check(d, leaves == 1, "the two lookups share one leaf of the table");
}
static void empty_ids(llm_demo *d)
{
    static const size_t none[1] = {0};
    const llm_tensor *ev = NULL;
    llm_var e;
    if (!(LLM_TRY(d, llm_tape_reset(tape, &d->err))
          && LLM_TRY(d, llm_embedding_forward(&emb, ps, tape, ids, 1, none, &e,
                                              &d->err))
          && LLM_TRY(d, llm_tape_value(tape, e, &ev, &d->err))))
        return;
    printf("ids shape=[0] x shape=%s elements=%zu\n",
           llm_put(d, "empty_shape", llm_sizes(ev->shape, ev->rank)), ev->size);
    llm_demo_check(d, ev->rank == 2 && ev->shape[0] == 0 && ev->shape[1] == 2
                      && ev->size == 0, "no IDs give an empty [0, 2] output");
}
static void refusals(llm_demo *d)
{
    static const size_t bad[3] = {2, 4, 1}, deep[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    static const char long_prefix[] =
        "a_prefix_so_long_that_the_name_of_its_table_cannot_fit_in_63";
    llm_params *other = llm_own_params(d), *empty = llm_own_params(d);
    llm_embedding spare, marker;     /* a refused build writes no layer */
    llm_rng rng, before;
    llm_var out = {777, 777};        /* nor does a refused lookup write out */
    const size_t nodes = tape->count, nparams = ps->count;
    llm_error *err = &d->err;
    int untouched;
    llm_rng_seed(&rng, 18);
    if (!(LLM_TRY(d, llm_params_init(other, err))
          && LLM_TRY(d, llm_params_init(empty, err))
          && LLM_TRY(d, llm_embedding_init(&spare, other, "token_embedding", 3, 2, &rng,
                                           err))))
        return;
    llm_refuse_as(d, "ID 4 in [[2, 4, 1]]",
                  llm_embedding_forward(&emb, ps, tape, bad, 2, ids_shape, &out, err),
                  LLM_ERR_INDEX);
    printf("  %s\n", err->message);
    llm_put(d, "bad_code", llm_status_name(err->code));
    llm_put(d, "bad_stage", err->stage);
    llm_put(d, "bad_message", err->message);
    llm_refuse_as(d, "IDs of rank 8",
                  llm_embedding_forward(&emb, ps, tape, ids, 8, deep, &out, err),
                  LLM_ERR_RANK);
    llm_refuse_as(d, "a list whose table is [3, 2]",
                  llm_embedding_forward(&emb, other, tape, ids, 2, ids_shape, &out,
                                        err), LLM_ERR_SHAPE);
    llm_refuse_as(d, "an empty parameter list",
                  llm_embedding_forward(&emb, empty, tape, ids, 2, ids_shape, &out,
                                        err), LLM_ERR_NAME);

    memset(&spare, 0x5a, sizeof spare);
    memcpy(&marker, &spare, sizeof spare);
    before = rng;
    llm_refuse_as(d, "width 0", llm_embedding_init(&spare, ps, "spare", 4, 0, &rng,
                                                   err), LLM_ERR_ARGUMENT);
    llm_refuse_as(d, "prefix \"Token\"", llm_embedding_init(&spare, ps, "Token", 4, 2,
                                                            &rng, err), LLM_ERR_NAME);
    llm_refuse_as(d, "a prefix of 60 characters",
                  llm_embedding_init(&spare, ps, long_prefix, 4, 2, &rng, err),
                  LLM_ERR_NAME);
    llm_refuse_as(d, "prefix \"token_embedding\" again",
                  llm_embedding_init(&spare, ps, "token_embedding", 4, 2, &rng, err),
                  LLM_ERR_NAME);
    untouched = tape->count == nodes && out.id == 777 && out.epoch == 777
                && ps->count == nparams && rng.state == before.state
                && memcmp(&spare, &marker, sizeof spare) == 0;
    printf("after the refusals: tape, output, list, generator and layer untouched=%s\n",
           llm_put(d, "untouched", llm_yes(untouched)));
    llm_demo_check(d, untouched, "the refusals changed no tape, output, list, "
                   "generator or layer");
}

static void setup(llm_demo *d)
{
    ps = llm_own_params(d);
    tape = llm_own_tape(d);
    up = llm_own_tensor(d);
    onehot = llm_own_tensor(d);
}

int main(int argc, char **argv)
{
    static llm_section *const sections[] = {layer, lookup, backward, gradcheck,
                                            shared_leaf, empty_ids, refusals, NULL};
    return llm_demo_main(argc, argv, "ch18-token-embeddings", setup, sections);
}
