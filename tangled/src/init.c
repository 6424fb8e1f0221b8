/* init.c -- SplitMix64, Xavier-uniform matrices, named parameter lists. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/params.h"

void llm_rng_seed(llm_rng *rng, uint64_t seed)
{
    if (rng != NULL)
        rng->state = seed;
}

uint64_t llm_rng_next_u64(llm_rng *rng)
{
    uint64_t z;
    if (rng == NULL)
        return 0;
    rng->state += UINT64_C(0x9e3779b97f4a7c15);
    z = rng->state;
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

double llm_rng_unit(llm_rng *rng)
{
    if (rng == NULL)
        return 0.0;
    return (double)(llm_rng_next_u64(rng) >> 11) * 0x1.0p-53;
}
llm_status llm_xavier_uniform(llm_tensor *out, size_t fan_in, size_t fan_out,
                              llm_rng *rng, llm_error *err)
{
    const size_t shape[2] = {fan_in, fan_out};
    llm_tensor w;
    llm_rng trial;
    double limit;
    size_t i;
    llm_status st;
    if (out == NULL || rng == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "params.xavier_uniform",
                        "an output tensor and a generator are required");
    if (fan_in == 0 || fan_out == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "params.xavier_uniform",
                        "a [%zu, %zu] matrix has no weights: both fans must be "
                        "positive", fan_in, fan_out);
    st = llm_tensor_zeros(&w, 2, shape, NULL);
    if (st != LLM_OK)
        return llm_fail(err, st, "params.xavier_uniform", "a [%zu, %zu] matrix %s",
                        fan_in, fan_out, st == LLM_ERR_ALLOC ? "cannot be allocated"
                                                             : "has too many elements");
    limit = sqrt(6.0 / (double)(fan_in + fan_out));
    trial = *rng;
    for (i = 0; i < w.size; i++)
        w.data[i] = limit * (2.0 * llm_rng_unit(&trial) - 1.0);
    *rng = trial;
    *out = w;
    return LLM_OK;
}
llm_status llm_params_init(llm_params *ps, llm_error *err)
{
    if (ps == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "params.init", "no parameter list");
    ps->items = NULL;
    ps->count = 0;
    ps->capacity = 0;
    return LLM_OK;
}

void llm_params_truncate(llm_params *ps, size_t count)
{
    if (ps == NULL)
        return;
    while (ps->count > count) {
        llm_param *p = &ps->items[--ps->count];
        llm_tensor_free(&p->value);
        llm_tensor_free(&p->grad);
        memset(p, 0, sizeof *p);
    }
}

void llm_params_free(llm_params *ps)
{
    if (ps == NULL)
        return;
    llm_params_truncate(ps, 0);
    free(ps->items);
    ps->items = NULL;
    ps->capacity = 0;
}
static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

llm_status llm_param_name_check(const char *name, llm_error *err)
{
    size_t i, segment = 0;           /* length of the segment being read */
    if (name == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "param.name_check", "no name");
    for (i = 0; name[i] != '\0'; i++) {
        unsigned char c = (unsigned char)name[i];
        if (i == LLM_PARAM_NAME_MAX - 1)
            return llm_fail(err, LLM_ERR_NAME, "param.name_check",
                            "a name has at most %d characters", LLM_PARAM_NAME_MAX - 1);
        if (c == '.' && segment == 0)
            return llm_fail(err, LLM_ERR_NAME, "param.name_check",
                            "empty segment before the '.' at position %zu", i);
        if (c == '.')
            segment = 0;
        else if (name_char((char)c))
            segment++;
        else if (c >= ' ' && c < 127)
            return llm_fail(err, LLM_ERR_NAME, "param.name_check",
                            "'%c' at position %zu is not a-z, 0-9, _ or .", c, i);
        else
            return llm_fail(err, LLM_ERR_NAME, "param.name_check",
                            "byte 0x%02x at position %zu is not a-z, 0-9, _ or .",
                            (unsigned)c, i);
    }
    if (i == 0)
        return llm_fail(err, LLM_ERR_NAME, "param.name_check", "the name is empty");
    if (segment == 0)
        return llm_fail(err, LLM_ERR_NAME, "param.name_check",
                        "empty segment after the '.' at position %zu", i - 1);
    return LLM_OK;
}

llm_status llm_params_find(const llm_params *ps, const char *name, size_t *index,
                           llm_error *err)
{
    size_t i;
    if (ps == NULL || name == NULL || index == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "params.find",
                        "a list, a name and an index are required");
    for (i = 0; i < ps->count; i++)
        if (strcmp(ps->items[i].name, name) == 0) {
            *index = i;
            return LLM_OK;
        }
    return llm_fail(err, LLM_ERR_NAME, "params.find",
                    "no parameter is named '%.63s'", name);
}

llm_status llm_params_set_trainable(llm_params *ps, size_t index, int trainable,
                                    llm_error *err)
{
    if (ps == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "params.set_trainable",
                        "no parameter list");
    if (index >= ps->count)
        return llm_fail(err, LLM_ERR_NAME, "params.set_trainable",
                        "parameter %zu of a list of %zu", index, ps->count);
    ps->items[index].trainable = trainable != 0;
    return LLM_OK;
}
static llm_status check_new_name(const llm_params *ps, const char *name,
                                 const char *stage, llm_error *err)
{
    size_t i;
    llm_status st = llm_param_name_check(name, err);
    if (st != LLM_OK)
        return st;
    for (i = 0; i < ps->count; i++)
        if (strcmp(ps->items[i].name, name) == 0)
            return llm_fail(err, LLM_ERR_NAME, stage,
                            "'%s' is already taken by parameter %zu", name, i);
    return LLM_OK;
}
static llm_status append(llm_params *ps, const char *name, llm_tensor *value,
                         int decay, const char *stage, llm_error *err)
{
    llm_tensor grad;
    llm_param *p;
    llm_status st = llm_tensor_zeros(&grad, value->rank, value->shape, NULL);
    if (st != LLM_OK) {
        llm_tensor_free(value);
        return llm_fail(err, st, stage, "no room for the gradient of '%s'", name);
    }
    if (ps->count == ps->capacity) {
        size_t capacity = ps->capacity > 0 ? 2 * ps->capacity : 8;
        llm_param *items = NULL;
        if (capacity <= SIZE_MAX / sizeof *items)
            items = llm_realloc(ps->items, capacity * sizeof *items);
        if (items == NULL) {
            llm_tensor_free(value);
            llm_tensor_free(&grad);
            return llm_fail(err, LLM_ERR_ALLOC, stage,
                            "no room for parameter %zu", ps->count);
        }
        ps->items = items;
        ps->capacity = capacity;
    }
    p = &ps->items[ps->count++];
    memset(p, 0, sizeof *p);
    strcpy(p->name, name);              /* checked: at most 63 characters */
    p->value = *value;
    p->grad = grad;
    p->decay = decay;
    p->trainable = 1;
    return LLM_OK;
}
llm_status llm_params_add_xavier(llm_params *ps, const char *name, size_t fan_in,
                                 size_t fan_out, llm_rng *rng, llm_error *err)
{
    llm_tensor value;
    llm_rng trial;
    llm_status st;
    if (ps == NULL || rng == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "params.add_xavier",
                        "a parameter list and a generator are required");
    st = check_new_name(ps, name, "params.add_xavier", err);
    if (st != LLM_OK)
        return llm_pass(err, st, "params.add_xavier");
    trial = *rng;
    st = llm_xavier_uniform(&value, fan_in, fan_out, &trial, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "params.add_xavier");
    st = append(ps, name, &value, 1, "params.add_xavier", err);
    if (st != LLM_OK)
        return llm_pass(err, st, "params.add_xavier");
    *rng = trial;
    return LLM_OK;
}
llm_status llm_params_add_const(llm_params *ps, const char *name, size_t rank,
                                const size_t *shape, double value, int decay,
                                llm_error *err)
{
    size_t stride[LLM_MAX_RANK], size, i;
    llm_tensor t;
    llm_status st;
    if (ps == NULL)
        return llm_fail(err, LLM_ERR_ARGUMENT, "params.add_const", "no parameter list");
    st = check_new_name(ps, name, "params.add_const", err);
    if (st != LLM_OK)
        return llm_pass(err, st, "params.add_const");
    if (!isfinite(value))
        return llm_fail(err, LLM_ERR_NONFINITE, "params.add_const",
                        "the constant for '%s' is %s", name,
                        value != value ? "NaN" : value > 0 ? "+inf" : "-inf");
    st = llm_row_major(rank, shape, stride, &size, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "params.add_const");
    if (size == 0)
        return llm_fail(err, LLM_ERR_ARGUMENT, "params.add_const",
                        "'%s' would have no elements", name);
    st = llm_tensor_zeros(&t, rank, shape, err);
    if (st != LLM_OK)
        return llm_pass(err, st, "params.add_const");
    for (i = 0; i < t.size; i++)
        t.data[i] = value;
    return llm_pass(err, append(ps, name, &t, decay != 0, "params.add_const", err),
                    "params.add_const");
}
llm_status llm_param_check(const llm_params *ps, size_t index, const char *name,
                           size_t rank, const size_t *shape, llm_error *err)
{
    const llm_param *p;
    char got[96], want[96];
    if (ps == NULL || name == NULL || (rank > 0 && shape == NULL))
        return llm_fail(err, LLM_ERR_ARGUMENT, "param.check",
                        "a list, a name and a shape are required");
    if (index >= ps->count)
        return llm_fail(err, LLM_ERR_NAME, "param.check",
                        "'%.63s' is parameter %zu, but the list holds %zu", name, index,
                        ps->count);
    p = &ps->items[index];
    if (strcmp(p->name, name) != 0)
        return llm_fail(err, LLM_ERR_NAME, "param.check",
                        "parameter %zu is '%.63s'; the layer made '%.63s' there", index,
                        p->name, name);
    if (p->value.rank != rank ||
        (rank > 0 && memcmp(p->value.shape, shape, rank * sizeof *shape) != 0))
        return llm_fail(err, LLM_ERR_SHAPE, "param.check",
                        "'%.63s' is %s; the layer needs %s", name,
                        llm_fmt_sizes(got, sizeof got, p->value.shape,
                                      p->value.rank <= LLM_MAX_RANK ? p->value.rank
                                                                    : LLM_MAX_RANK),
                        llm_fmt_sizes(want, sizeof want, shape, rank));
    return LLM_OK;
}
