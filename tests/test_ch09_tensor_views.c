/* Chapter 9: reshape, transpose, permute and slice as views; copy. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "llm/error.h"
#include "llm/tensor.h"
#include "support.h"

static const double fixture[6] = {10, 11, 12, 20, 21, 22};
static const size_t fixture_shape[2] = {2, 3};

/* The buffer positions v reads, in row-major order of its index. */
static size_t reads(const llm_tensor *v, size_t *out, size_t max)
{
    size_t idx[LLM_MAX_RANK] = {0}, n = 0;
    if (v->size == 0)
        return 0;
    do {
        ck_assert_uint_lt(n, max);
        ck_assert_int_eq(llm_tensor_offset(v, v->rank, idx, &out[n], NULL), LLM_OK);
        n++;
    } while (llm_index_next(v->rank, v->shape, idx));
    ck_assert_uint_eq(n, v->size);
    return n;
}

static void assert_reads(const llm_tensor *v, const size_t *want, size_t n)
{
    size_t got[64], k;
    ck_assert_uint_eq(reads(v, got, 64), n);
    for (k = 0; k < n; k++)
        ck_assert_uint_eq(got[k], want[k]);
}

static void make_fixture(llm_tensor *t)
{
    ck_assert_int_eq(llm_tensor_from(t, 2, fixture_shape, fixture, 6, NULL), LLM_OK);
}

START_TEST(fixture_views_match_the_rust_course)
{
    const size_t to32[2] = {3, 2};
    const size_t r_reads[6] = {0, 1, 2, 3, 4, 5}, t_reads[6] = {0, 3, 1, 4, 2, 5};
    const size_t s_reads[4] = {1, 2, 4, 5};
    llm_tensor t, r, tt, s, c;
    make_fixture(&t);

    ck_assert_int_eq(llm_tensor_reshape(&r, &t, 2, to32, NULL), LLM_OK);
    assert_layout(&r, 2, (const size_t[]){3, 2}, (const size_t[]){2, 1});
    ck_assert_uint_eq(r.offset, 0);
    ck_assert_uint_eq(r.size, 6);
    assert_reads(&r, r_reads, 6);

    ck_assert_int_eq(llm_tensor_transpose(&tt, &t, 0, 1, NULL), LLM_OK);
    ck_assert_uint_eq(tt.shape[0], 3);
    ck_assert_uint_eq(tt.shape[1], 2);
    ck_assert_uint_eq(tt.stride[0], 1);
    ck_assert_uint_eq(tt.stride[1], 3);
    ck_assert_uint_eq(tt.size, 6);
    assert_reads(&tt, t_reads, 6);

    ck_assert_int_eq(llm_tensor_slice(&s, &t, 1, 1, 3, NULL), LLM_OK);
    ck_assert_uint_eq(s.offset, 1);
    ck_assert_uint_eq(s.shape[0], 2);
    ck_assert_uint_eq(s.shape[1], 2);
    ck_assert_uint_eq(s.stride[0], 3);
    ck_assert_uint_eq(s.stride[1], 1);
    ck_assert_uint_eq(s.size, 4);
    assert_reads(&s, s_reads, 4);

    /* views borrow; only the copy owns */
    ck_assert_ptr_eq(r.data, t.data);
    ck_assert_ptr_eq(tt.data, t.data);
    ck_assert_ptr_eq(s.data, t.data);
    ck_assert_int_eq(r.owns, 0);
    ck_assert_int_eq(tt.owns, 0);
    ck_assert_int_eq(s.owns, 0);

    ck_assert_int_eq(llm_tensor_copy(&c, &s, NULL), LLM_OK);
    ck_assert_int_eq(c.owns, 1);
    ck_assert_ptr_ne(c.data, t.data);
    ck_assert_uint_eq(c.offset, 0);
    ck_assert_uint_eq(c.size, 4);
    ck_assert_uint_eq(c.stride[0], 2);
    ck_assert_uint_eq(c.stride[1], 1);
    ck_assert(c.data[0] == 11 && c.data[1] == 12 && c.data[2] == 21 && c.data[3] == 22);
    ck_assert(llm_tensor_is_contiguous(&c));
    llm_tensor_free(&c);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(reshape_of_the_transpose_is_refused_and_a_copy_fixes_it)
{
    const size_t to6[1] = {6}, to23[2] = {2, 3};
    const double want[6] = {10, 20, 11, 21, 12, 22};
    llm_tensor t, tt, v, c, flat;
    llm_error err;
    size_t k;
    make_fixture(&t);
    ck_assert_int_eq(llm_tensor_transpose(&tt, &t, 0, 1, NULL), LLM_OK);
    memset(&v, 0x5a, sizeof v);
    ck_assert_int_eq(llm_tensor_reshape(&v, &tt, 1, to6, &err), LLM_ERR_CONTIGUITY);
    ck_assert_int_eq(err.code, LLM_ERR_CONTIGUITY);
    ck_assert_str_eq(where(&err), "tensor.reshape");
    ck_assert_str_eq(err.message,
                     "axis 1 has stride 3, contiguous elements need 1; copy first");
    ck_assert_int_eq(llm_tensor_reshape(&v, &tt, 2, to23, &err), LLM_ERR_CONTIGUITY);
    ck_assert_int_eq(llm_tensor_copy(&c, &tt, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_reshape(&flat, &c, 1, to6, NULL), LLM_OK);
    ck_assert_ptr_eq(flat.data, c.data);
    for (k = 0; k < 6; k++) {
        double x;
        ck_assert_int_eq(llm_tensor_get(&flat, 1, &k, &x, NULL), LLM_OK);
        ck_assert(x == want[k]);
    }
    llm_tensor_free(&c);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(contiguity_rules)
{
    llm_tensor t, tt, cols, rows, col, h;
    const size_t one_row[2] = {1, 3};
    make_fixture(&t);
    ck_assert(llm_tensor_is_contiguous(&t));
    ck_assert_int_eq(llm_tensor_transpose(&tt, &t, 0, 1, NULL), LLM_OK);
    ck_assert(!llm_tensor_is_contiguous(&tt));
    ck_assert_int_eq(llm_tensor_slice(&cols, &t, 1, 1, 3, NULL), LLM_OK);
    ck_assert(!llm_tensor_is_contiguous(&cols));
    /* a slice of whole rows is dense, from its own base offset */
    ck_assert_int_eq(llm_tensor_slice(&rows, &t, 0, 1, 2, NULL), LLM_OK);
    ck_assert(llm_tensor_is_contiguous(&rows));
    ck_assert_uint_eq(rows.offset, 3);
    /* a single column is not: it steps by 3 */
    ck_assert_int_eq(llm_tensor_slice(&col, &t, 1, 0, 1, NULL), LLM_OK);
    ck_assert(!llm_tensor_is_contiguous(&col));
    ck_assert(!llm_tensor_is_contiguous(NULL));

    /* strides of extent-1 axes are ignored: [1, 3] transposed is [3, 1] */
    ck_assert_int_eq(llm_tensor_from(&h, 2, one_row, fixture, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_transpose(&tt, &h, 0, 1, NULL), LLM_OK);
    ck_assert_uint_eq(tt.stride[0], 1);
    ck_assert_uint_eq(tt.stride[1], 3);
    ck_assert(llm_tensor_is_contiguous(&tt));
    tt.stride[1] = 12345;               /* any stride on an extent-1 axis */
    ck_assert(llm_tensor_is_contiguous(&tt));
    llm_tensor_free(&h);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(views_of_views_compose)
{
    const size_t ts_reads[4] = {1, 4, 2, 5}, st_reads[4] = {1, 4, 2, 5};
    const size_t ss_reads[2] = {4, 5};
    llm_tensor t, tt, ts, s, st, ss;
    make_fixture(&t);
    /* slice of a transpose: rows 1..3 of the [3, 2] view */
    ck_assert_int_eq(llm_tensor_transpose(&tt, &t, 0, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_slice(&ts, &tt, 0, 1, 3, NULL), LLM_OK);
    ck_assert_uint_eq(ts.offset, 1);
    ck_assert_uint_eq(ts.stride[0], 1);
    ck_assert_uint_eq(ts.stride[1], 3);
    assert_reads(&ts, ts_reads, 4);
    /* transpose of a slice reaches the same elements */
    ck_assert_int_eq(llm_tensor_slice(&s, &t, 1, 1, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_transpose(&st, &s, 0, 1, NULL), LLM_OK);
    assert_reads(&st, st_reads, 4);
    /* slice of a slice adds both offsets */
    ck_assert_int_eq(llm_tensor_slice(&ss, &s, 0, 1, 2, NULL), LLM_OK);
    ck_assert_uint_eq(ss.offset, 4);
    ck_assert_uint_eq(ss.size, 2);
    assert_reads(&ss, ss_reads, 2);
    ck_assert(llm_tensor_is_contiguous(&ss));
    ck_assert_ptr_eq(ss.data, t.data);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(copy_of_a_permuted_3d_view_equals_element_reads)
{
    const size_t shape[3] = {2, 3, 4}, perm[3] = {2, 0, 1};
    double values[24];
    llm_tensor t, p, ps, c;
    size_t idx[3] = {0, 0, 0}, src[3], k, n = 0;
    for (k = 0; k < 24; k++)
        values[k] = (double)(100 + k);
    ck_assert_int_eq(llm_tensor_from(&t, 3, shape, values, 24, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_permute(&p, &t, 3, perm, NULL), LLM_OK);
    ck_assert_uint_eq(p.shape[0], 4);
    ck_assert_uint_eq(p.shape[1], 2);
    ck_assert_uint_eq(p.shape[2], 3);
    ck_assert_uint_eq(p.stride[0], 1);
    ck_assert_uint_eq(p.stride[1], 12);
    ck_assert_uint_eq(p.stride[2], 4);
    ck_assert(!llm_tensor_is_contiguous(&p));
    /* element [a, b, c] of the view is element [b, c, a] of t */
    do {
        double x, y;
        src[0] = idx[1]; src[1] = idx[2]; src[2] = idx[0];
        ck_assert_int_eq(llm_tensor_get(&p, 3, idx, &x, NULL), LLM_OK);
        ck_assert_int_eq(llm_tensor_get(&t, 3, src, &y, NULL), LLM_OK);
        ck_assert(x == y);
    } while (llm_index_next(3, p.shape, idx));

    ck_assert_int_eq(llm_tensor_copy(&c, &p, NULL), LLM_OK);
    ck_assert(llm_tensor_is_contiguous(&c));
    ck_assert_uint_eq(c.stride[0], 6);
    ck_assert_uint_eq(c.stride[1], 3);
    ck_assert_uint_eq(c.stride[2], 1);
    do {
        double x;
        ck_assert_int_eq(llm_tensor_get(&p, 3, idx, &x, NULL), LLM_OK);
        ck_assert(c.data[n] == x);
        n++;
    } while (llm_index_next(3, p.shape, idx));
    ck_assert_uint_eq(n, 24);
    llm_tensor_free(&c);

    /* a copy of a sliced permuted view starts from the view's offset */
    ck_assert_int_eq(llm_tensor_slice(&ps, &p, 2, 1, 3, NULL), LLM_OK);
    ck_assert_uint_eq(ps.offset, 4);
    ck_assert_int_eq(llm_tensor_copy(&c, &ps, NULL), LLM_OK);
    ck_assert_uint_eq(c.size, 16);
    n = 0;
    do {
        double x;
        ck_assert_int_eq(llm_tensor_get(&ps, 3, idx, &x, NULL), LLM_OK);
        ck_assert(c.data[n++] == x);
    } while (llm_index_next(3, ps.shape, idx));
    llm_tensor_free(&c);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(views_share_storage_and_copies_do_not)
{
    const size_t at[2] = {2, 0};
    llm_tensor t, tt, s, c;
    double x;
    make_fixture(&t);
    ck_assert_int_eq(llm_tensor_transpose(&tt, &t, 0, 1, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_slice(&s, &t, 1, 1, 3, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_copy(&c, &s, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_set(&tt, 2, at, 99.0, NULL), LLM_OK);
    ck_assert(t.data[2] == 99.0);
    {
        const size_t i01[2] = {0, 1};
        ck_assert_int_eq(llm_tensor_get(&s, 2, i01, &x, NULL), LLM_OK);
        ck_assert(x == 99.0);
    }
    ck_assert(c.data[1] == 12.0);
    /* freeing a view releases nothing and leaves the owner usable */
    llm_tensor_free(&tt);
    ck_assert_ptr_null(tt.data);
    ck_assert(t.data[2] == 99.0);
    llm_tensor_free(&c);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(reshape_keeps_the_base_offset_and_same_axis_transpose_is_identity)
{
    const size_t to3[1] = {3}, to31[2] = {3, 1}, ident[2] = {0, 1};
    const size_t row_reads[3] = {3, 4, 5};
    llm_tensor t, row, flat, col, same, perm;
    make_fixture(&t);
    ck_assert_int_eq(llm_tensor_slice(&row, &t, 0, 1, 2, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_reshape(&flat, &row, 1, to3, NULL), LLM_OK);
    ck_assert_uint_eq(flat.offset, 3);
    assert_reads(&flat, row_reads, 3);
    ck_assert_int_eq(llm_tensor_reshape(&col, &row, 2, to31, NULL), LLM_OK);
    assert_reads(&col, row_reads, 3);
    ck_assert_int_eq(llm_tensor_transpose(&same, &t, 1, 1, NULL), LLM_OK);
    ck_assert_uint_eq(same.stride[0], 3);
    ck_assert_uint_eq(same.stride[1], 1);
    ck_assert_int_eq(llm_tensor_permute(&perm, &t, 2, ident, NULL), LLM_OK);
    ck_assert_uint_eq(perm.shape[0], 2);
    ck_assert_uint_eq(perm.stride[0], 3);
    ck_assert(llm_tensor_is_contiguous(&perm));
    llm_tensor_free(&t);
}
END_TEST

START_TEST(reshape_errors_leave_the_view_untouched)
{
    const size_t to42[2] = {4, 2}, huge[2] = {SIZE_MAX / 2 + 1, 2};
    const size_t deep[LLM_MAX_RANK + 1] = {6, 1, 1, 1, 1, 1, 1, 1, 1};
    llm_tensor t, v, pattern;
    llm_error err;
    make_fixture(&t);
    memset(&v, 0xab, sizeof v);
    memset(&pattern, 0xab, sizeof pattern);
    ck_assert_int_eq(llm_tensor_reshape(NULL, &t, 2, to42, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.reshape");
    ck_assert_int_eq(llm_tensor_reshape(&v, NULL, 2, to42, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tensor_reshape(&v, &t, 2, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tensor_reshape(&v, &t, LLM_MAX_RANK + 1, deep, &err), LLM_ERR_RANK);
    ck_assert_str_eq(where(&err), "tensor.reshape");
    ck_assert_str_eq(err.message, "rank 9 exceeds the maximum 8");
    ck_assert_int_eq(llm_tensor_reshape(&v, &t, 2, huge, &err), LLM_ERR_OVERFLOW);
    ck_assert_str_eq(where(&err), "tensor.reshape <- tensor.row_major");
    ck_assert_int_eq(llm_tensor_reshape(&v, &t, 2, to42, &err), LLM_ERR_SHAPE);
    ck_assert_str_eq(where(&err), "tensor.reshape");
    ck_assert_str_eq(err.message, "the new shape holds 8 elements, the tensor has 6");
    ck_assert_int_eq(memcmp(&v, &pattern, sizeof v), 0);
    ck_assert_int_eq(memcmp(t.data, fixture, sizeof fixture), 0);
    /* rank 8 is allowed */
    ck_assert_int_eq(llm_tensor_reshape(&v, &t, LLM_MAX_RANK, deep, NULL), LLM_OK);
    ck_assert_uint_eq(v.rank, LLM_MAX_RANK);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(transpose_errors_leave_the_view_untouched)
{
    llm_tensor t, v, pattern;
    llm_error err;
    make_fixture(&t);
    memset(&v, 0xab, sizeof v);
    memset(&pattern, 0xab, sizeof pattern);
    ck_assert_int_eq(llm_tensor_transpose(NULL, &t, 0, 1, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.transpose");
    ck_assert_int_eq(llm_tensor_transpose(&v, NULL, 0, 1, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tensor_transpose(&v, &t, 2, 0, &err), LLM_ERR_AXIS);
    ck_assert_str_eq(where(&err), "tensor.transpose");
    ck_assert_str_eq(err.message, "axis 2 is outside a tensor of rank 2");
    ck_assert_int_eq(llm_tensor_transpose(&v, &t, 0, 7, &err), LLM_ERR_AXIS);
    ck_assert_str_eq(err.message, "axis 7 is outside a tensor of rank 2");
    ck_assert_int_eq(memcmp(&v, &pattern, sizeof v), 0);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(permute_errors_leave_the_view_untouched)
{
    const size_t twice[2] = {1, 1}, outside[2] = {0, 2}, three[3] = {2, 1, 0};
    const size_t one[1] = {0}, nine[LLM_MAX_RANK + 1] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    llm_tensor t, v, pattern;
    llm_error err;
    make_fixture(&t);
    memset(&v, 0xab, sizeof v);
    memset(&pattern, 0xab, sizeof pattern);
    ck_assert_int_eq(llm_tensor_permute(NULL, &t, 2, twice, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.permute");
    ck_assert_int_eq(llm_tensor_permute(&v, NULL, 2, twice, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tensor_permute(&v, &t, 2, NULL, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tensor_permute(&v, &t, 3, three, &err), LLM_ERR_RANK);
    ck_assert_str_eq(where(&err), "tensor.permute");
    ck_assert_str_eq(err.message, "the permutation names 3 axes, the tensor has rank 2");
    ck_assert_int_eq(llm_tensor_permute(&v, &t, 1, one, &err), LLM_ERR_RANK);
    ck_assert_int_eq(llm_tensor_permute(&v, &t, LLM_MAX_RANK + 1, nine, &err), LLM_ERR_RANK);
    ck_assert_int_eq(llm_tensor_permute(&v, &t, 2, outside, &err), LLM_ERR_AXIS);
    ck_assert_str_eq(err.message, "axis 2 is outside a tensor of rank 2");
    ck_assert_int_eq(llm_tensor_permute(&v, &t, 2, twice, &err), LLM_ERR_AXIS);
    ck_assert_str_eq(where(&err), "tensor.permute");
    ck_assert_str_eq(err.message, "axis 1 appears twice in the permutation");
    ck_assert_int_eq(memcmp(&v, &pattern, sizeof v), 0);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(slice_errors_and_bounds)
{
    llm_tensor t, v, pattern, e;
    llm_error err;
    make_fixture(&t);
    memset(&v, 0xab, sizeof v);
    memset(&pattern, 0xab, sizeof pattern);
    ck_assert_int_eq(llm_tensor_slice(NULL, &t, 1, 1, 3, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.slice");
    ck_assert_int_eq(llm_tensor_slice(&v, NULL, 1, 1, 3, &err), LLM_ERR_ARGUMENT);
    ck_assert_int_eq(llm_tensor_slice(&v, &t, 2, 0, 1, &err), LLM_ERR_AXIS);
    ck_assert_str_eq(where(&err), "tensor.slice");
    ck_assert_str_eq(err.message, "axis 2 is outside a tensor of rank 2");
    ck_assert_int_eq(llm_tensor_slice(&v, &t, 1, 2, 1, &err), LLM_ERR_INDEX);
    ck_assert_str_eq(where(&err), "tensor.slice");
    ck_assert_str_eq(err.message, "the range [2, 1) of axis 1 starts after it stops");
    ck_assert_int_eq(llm_tensor_slice(&v, &t, 1, 1, 4, &err), LLM_ERR_INDEX);
    ck_assert_str_eq(err.message, "the range [1, 4) runs past axis 1 of extent 3");
    ck_assert_int_eq(llm_tensor_slice(&v, &t, 0, 3, 3, &err), LLM_ERR_INDEX);
    ck_assert_int_eq(memcmp(&v, &pattern, sizeof v), 0);
    /* the bounds themselves are allowed: the whole axis, and empty at the end */
    ck_assert_int_eq(llm_tensor_slice(&v, &t, 1, 0, 3, NULL), LLM_OK);
    ck_assert_uint_eq(v.size, 6);
    ck_assert(llm_tensor_is_contiguous(&v));
    ck_assert_int_eq(llm_tensor_slice(&e, &t, 1, 3, 3, NULL), LLM_OK);
    ck_assert_uint_eq(e.size, 0);
    ck_assert_uint_eq(e.shape[1], 0);
    ck_assert(llm_tensor_is_contiguous(&e));
    llm_tensor_free(&t);
}
END_TEST

START_TEST(copy_errors_leave_the_output_untouched)
{
    llm_tensor t, out, pattern, huge, deep;
    llm_error err;
    double one = 1.0;
    size_t k;
    make_fixture(&t);
    memset(&out, 0xab, sizeof out);
    memset(&pattern, 0xab, sizeof pattern);
    ck_assert_int_eq(llm_tensor_copy(NULL, &t, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.copy");
    ck_assert_int_eq(llm_tensor_copy(&out, NULL, &err), LLM_ERR_ARGUMENT);
    /* a hand-made view reading one element everywhere: stride 0, huge extent */
    memset(&huge, 0, sizeof huge);
    huge.data = &one;
    huge.rank = 1;
    huge.shape[0] = SIZE_MAX / sizeof(double) - 1;
    huge.stride[0] = 0;
    huge.size = huge.shape[0];
    ck_assert_int_eq(llm_tensor_copy(&out, &huge, &err), LLM_ERR_ALLOC);
    ck_assert_str_eq(where(&err), "tensor.copy");
    /* a malformed tensor: its rank is refused by llm_tensor_check, its
       shape by llm_row_major */
    memset(&deep, 0, sizeof deep);
    deep.data = &one;
    deep.rank = LLM_MAX_RANK + 1;
    ck_assert_int_eq(llm_tensor_copy(&out, &deep, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.copy");
    deep.rank = 2;
    deep.shape[0] = SIZE_MAX / 2 + 1;
    deep.shape[1] = 2;
    ck_assert_int_eq(llm_tensor_copy(&out, &deep, &err), LLM_ERR_OVERFLOW);
    ck_assert_int_eq(memcmp(&out, &pattern, sizeof out), 0);
    /* a small stride-0 view copies into repeated values */
    huge.shape[0] = 3;
    huge.size = 3;
    ck_assert_int_eq(llm_tensor_copy(&out, &huge, NULL), LLM_OK);
    for (k = 0; k < 3; k++)
        ck_assert(out.data[k] == 1.0);
    ck_assert_uint_eq(out.stride[0], 1);
    llm_tensor_free(&out);
    llm_tensor_free(&t);
}
END_TEST

START_TEST(scalar_views)
{
    const size_t one[1] = {1}, ones[3] = {1, 1, 1}, two[1] = {2};
    llm_tensor s, v1, v0, v3, c, out, pattern;
    llm_error err;
    double x = 0.0;
    ck_assert_int_eq(llm_tensor_zeros(&s, 0, NULL, NULL), LLM_OK);
    ck_assert_int_eq(llm_tensor_set(&s, 0, NULL, 7.0, NULL), LLM_OK);
    ck_assert(llm_tensor_is_contiguous(&s));
    ck_assert_int_eq(llm_tensor_reshape(&v1, &s, 1, one, NULL), LLM_OK);
    assert_layout(&v1, 1, (const size_t[]){1}, (const size_t[]){1});
    ck_assert_uint_eq(v1.size, 1);
    ck_assert_int_eq(llm_tensor_reshape(&v0, &v1, 0, NULL, NULL), LLM_OK);
    ck_assert_uint_eq(v0.rank, 0);
    ck_assert_uint_eq(v0.size, 1);
    ck_assert_int_eq(llm_tensor_get(&v0, 0, NULL, &x, NULL), LLM_OK);
    ck_assert(x == 7.0);
    ck_assert_int_eq(llm_tensor_reshape(&v3, &s, 3, ones, NULL), LLM_OK);
    ck_assert_uint_eq(v3.size, 1);
    /* a scalar has no axes to slice or swap; the empty permutation is fine */
    memset(&out, 0xab, sizeof out);
    memset(&pattern, 0xab, sizeof pattern);
    ck_assert_int_eq(llm_tensor_slice(&out, &s, 0, 0, 1, &err), LLM_ERR_AXIS);
    ck_assert_int_eq(llm_tensor_transpose(&out, &s, 0, 0, &err), LLM_ERR_AXIS);
    ck_assert_int_eq(llm_tensor_reshape(&out, &s, 1, two, &err), LLM_ERR_SHAPE);
    ck_assert_int_eq(memcmp(&out, &pattern, sizeof out), 0);
    ck_assert_int_eq(llm_tensor_permute(&out, &s, 0, NULL, NULL), LLM_OK);
    ck_assert_uint_eq(out.rank, 0);
    ck_assert_int_eq(llm_tensor_copy(&c, &v0, NULL), LLM_OK);
    ck_assert_uint_eq(c.rank, 0);
    ck_assert_uint_eq(c.size, 1);
    ck_assert(c.data[0] == 7.0);
    llm_tensor_free(&c);
    llm_tensor_free(&s);
}
END_TEST

START_TEST(empty_views)
{
    const size_t shape[3] = {2, 0, 3}, to0[1] = {0}, to07[2] = {0, 7}, to1[1] = {1};
    llm_tensor e, et, r, r2, c, s, bad;
    llm_error err;
    ck_assert_int_eq(llm_tensor_zeros(&e, 3, shape, NULL), LLM_OK);
    ck_assert(llm_tensor_is_contiguous(&e));
    ck_assert_int_eq(llm_tensor_transpose(&et, &e, 0, 2, NULL), LLM_OK);
    ck_assert_uint_eq(et.shape[0], 3);
    ck_assert_uint_eq(et.shape[1], 0);
    ck_assert_uint_eq(et.shape[2], 2);
    ck_assert_uint_eq(et.size, 0);
    ck_assert(llm_tensor_is_contiguous(&et));   /* whatever its strides */
    ck_assert_int_eq(llm_tensor_reshape(&r, &et, 1, to0, NULL), LLM_OK);
    ck_assert_uint_eq(r.size, 0);
    ck_assert_int_eq(llm_tensor_reshape(&r2, &et, 2, to07, NULL), LLM_OK);
    ck_assert_uint_eq(r2.shape[1], 7);
    ck_assert_int_eq(llm_tensor_reshape(&bad, &et, 1, to1, &err), LLM_ERR_SHAPE);
    /* slicing the empty axis: only [0, 0) fits */
    ck_assert_int_eq(llm_tensor_slice(&s, &e, 1, 0, 0, NULL), LLM_OK);
    ck_assert_uint_eq(s.size, 0);
    ck_assert_int_eq(llm_tensor_slice(&s, &e, 1, 0, 1, &err), LLM_ERR_INDEX);
    /* slicing another axis of an empty tensor keeps it empty */
    ck_assert_int_eq(llm_tensor_slice(&s, &e, 2, 1, 3, NULL), LLM_OK);
    ck_assert_uint_eq(s.size, 0);
    ck_assert_uint_eq(s.shape[2], 2);
    ck_assert_int_eq(llm_tensor_copy(&c, &et, NULL), LLM_OK);
    ck_assert_uint_eq(c.size, 0);
    ck_assert_int_eq(c.owns, 1);
    ck_assert_ptr_nonnull(c.data);
    ck_assert_uint_eq(c.shape[0], 3);
    llm_tensor_free(&c);
    llm_tensor_free(&e);
}
END_TEST

/* A tensor whose rank field exceeds LLM_MAX_RANK is refused by name by
   every view, before any axis is read; the view is not touched. */
START_TEST(views_refuse_a_rank_the_struct_cannot_hold)
{
    double one = 1.0;
    size_t perm[LLM_MAX_RANK + 2] = {0}, shape[1] = {1};
    llm_tensor bad, view, keep;
    llm_error err;
    bad = malformed_tensor(&one, LLM_MAX_RANK + 2);
    memset(&view, 0x5a, sizeof view);
    keep = view;
    ck_assert_int_eq(llm_tensor_transpose(&view, &bad, 0, LLM_MAX_RANK + 1, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.transpose");
    ck_assert_int_eq(llm_tensor_slice(&view, &bad, LLM_MAX_RANK + 1, 0, 0, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.slice");
    ck_assert_int_eq(llm_tensor_permute(&view, &bad, LLM_MAX_RANK + 2, perm, &err),
                     LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.permute");
    ck_assert_int_eq(llm_tensor_reshape(&view, &bad, 1, shape, &err), LLM_ERR_ARGUMENT);
    ck_assert_str_eq(where(&err), "tensor.reshape");
    ck_assert_int_eq(memcmp(&view, &keep, sizeof view), 0);
    ck_assert_int_eq(llm_tensor_is_contiguous(&bad), 0);
    ck_assert_int_eq(llm_tensor_is_contiguous(NULL), 0);
}
END_TEST

Suite *ch09_tensor_views_suite(void)
{
    const TTest *tests[] = {
        fixture_views_match_the_rust_course,
        reshape_of_the_transpose_is_refused_and_a_copy_fixes_it,
        contiguity_rules,
        views_of_views_compose,
        copy_of_a_permuted_3d_view_equals_element_reads,
        views_share_storage_and_copies_do_not,
        reshape_keeps_the_base_offset_and_same_axis_transpose_is_identity,
        reshape_errors_leave_the_view_untouched,
        transpose_errors_leave_the_view_untouched,
        permute_errors_leave_the_view_untouched,
        slice_errors_and_bounds,
        copy_errors_leave_the_output_untouched,
        scalar_views,
        empty_views,
        views_refuse_a_rank_the_struct_cannot_hold,
    };
    return suite_of("ch09 tensor views", tcase_of("views", 0, tests, COUNT(tests)));
}
