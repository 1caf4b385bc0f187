/*
 * test_range.c — ty_store_value_range (core/range.c): the bounds an integer
 * store's values are known to lie in without reading them. argmin/argmax
 * along an axis of length K give 0..K-1, a scalar added or subtracted shifts
 * them, integer casts keep them where they fit, any write forgets them, and
 * reading the range never flushes.
 */
#include "check.h"
#include "req.h"
#include "internal.h"

#include <tycho/tycho.h>

#include <stdint.h>
#include <stdlib.h>

static ty_runtime *make_rt(void) {
  ty_config cfg = {.cpus = 2};
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) {
    fprintf(stderr, "cannot create a runtime\n");
    exit(1);
  }
  return rt;
}

static uint64_t flushes(ty_runtime *rt) {
  ty_stats s;
  ty_get_stats(rt, &s);
  return s.flushes;
}

static bool range_is(const ty_store *s, int64_t lo, int64_t hi) {
  int64_t a, b;
  return ty_store_value_range(s, &a, &b) && a == lo && b == hi;
}

TEST(argmin_along_an_axis_gives_zero_to_length_minus_one) {
  ty_runtime *rt = make_rt();
  ty_store *d = NULL, *am = NULL, *ax = NULL, *one = NULL, *lab = NULL, *two = NULL, *sh = NULL;
  REQ(rt, ty_random(rt, TY_F64, 2, (const int64_t[]){100, 7}, &d));
  REQ(rt, ty_flush(rt));
  const uint64_t f0 = flushes(rt);
  REQ(rt, ty_reduce(rt, TY_RED_ARGMIN, d, 1, &am));
  REQ(rt, ty_reduce(rt, TY_RED_ARGMAX, d, 0, &ax));
  CHECK(range_is(am, 0, 6));
  CHECK(range_is(ax, 0, 99));
  REQ(rt, ty_scalar_i64(rt, TY_I64, 1, &one));
  CHECK(range_is(one, 1, 1));
  REQ(rt, ty_binary(rt, TY_OP_ADD, am, one, &lab)); /* Lua's 1-based argmin */
  CHECK(range_is(lab, 1, 7));
  REQ(rt, ty_scalar_i64(rt, TY_I64, 2, &two));
  REQ(rt, ty_binary(rt, TY_OP_SUB, lab, two, &sh));
  CHECK(range_is(sh, -1, 5));
  CHECK_EQ_INT(flushes(rt), f0); /* nothing was read */
  ty_store_release(sh), ty_store_release(two), ty_store_release(lab), ty_store_release(one);
  ty_store_release(ax), ty_store_release(am), ty_store_release(d);
  ty_runtime_destroy(rt);
}

TEST(unknown_bounds_are_the_dtype_limits) {
  ty_runtime *rt = make_rt();
  ty_store *u = NULL, *b = NULL, *i = NULL, *f = NULL, *p = NULL, *two = NULL;
  REQ(rt, ty_full(rt, TY_U8, 1, (const int64_t[]){4}, 3, &u));
  REQ(rt, ty_full(rt, TY_BOOL, 1, (const int64_t[]){4}, 1, &b));
  REQ(rt, ty_full(rt, TY_I64, 1, (const int64_t[]){4}, 3, &i));
  REQ(rt, ty_full(rt, TY_F64, 1, (const int64_t[]){4}, 3, &f));
  CHECK(range_is(u, 0, 255));
  CHECK(range_is(b, 0, 1));
  CHECK(range_is(i, INT64_MIN, INT64_MAX));
  int64_t lo, hi;
  CHECK(!ty_store_value_range(f, &lo, &hi));
  CHECK(!ty_store_value_range(NULL, &lo, &hi));
  /* a product is not followed: unknown */
  REQ(rt, ty_scalar_i64(rt, TY_I64, 2, &two));
  REQ(rt, ty_binary(rt, TY_OP_MUL, u, two, &p));
  CHECK(!range_is(p, 0, 510));
  ty_store_release(two), ty_store_release(p), ty_store_release(f), ty_store_release(i);
  ty_store_release(b), ty_store_release(u);
  ty_runtime_destroy(rt);
}

TEST(casts_keep_bounds_that_fit_and_overflow_forgets_them) {
  ty_runtime *rt = make_rt();
  ty_store *d = NULL, *am = NULL, *c8 = NULL, *big = NULL, *w = NULL, *cf = NULL;
  REQ(rt, ty_random(rt, TY_F64, 2, (const int64_t[]){10, 300}, &d));
  REQ(rt, ty_reduce(rt, TY_RED_ARGMIN, d, 1, &am)); /* 0 .. 299 */
  REQ(rt, ty_cast(rt, am, TY_I16, &c8));
  CHECK(range_is(c8, 0, 299));
  ty_store_release(c8);
  REQ(rt, ty_cast(rt, am, TY_U8, &c8)); /* 299 does not fit u8: the dtype's limits */
  CHECK(range_is(c8, 0, 255));
  REQ(rt, ty_cast(rt, am, TY_F64, &cf));
  int64_t lo, hi;
  CHECK(!ty_store_value_range(cf, &lo, &hi));
  REQ(rt, ty_scalar_i64(rt, TY_I64, INT64_MAX, &big));
  REQ(rt, ty_binary(rt, TY_OP_ADD, am, big, &w)); /* would wrap: unknown */
  CHECK(range_is(w, INT64_MIN, INT64_MAX));
  ty_store_release(w), ty_store_release(big), ty_store_release(cf), ty_store_release(c8);
  ty_store_release(am), ty_store_release(d);
  ty_runtime_destroy(rt);
}

TEST(any_write_forgets_the_bounds) {
  ty_runtime *rt = make_rt();
  ty_store *d = NULL, *am = NULL, *v = NULL, *src = NULL;
  REQ(rt, ty_random(rt, TY_F64, 2, (const int64_t[]){8, 5}, &d));
  REQ(rt, ty_reduce(rt, TY_RED_ARGMIN, d, 1, &am));
  CHECK(range_is(am, 0, 4));
  /* a write through a view of the same storage */
  REQ(rt, ty_store_slice(rt, am, 0, 2, 4, 1, &v));
  CHECK(range_is(v, 0, 4)); /* a view holds a subset */
  REQ(rt, ty_fill(rt, v, 40));
  CHECK(range_is(am, INT64_MIN, INT64_MAX));
  CHECK(range_is(v, INT64_MIN, INT64_MAX));
  ty_store_release(v);
  /* a copy into it */
  ty_store_release(am);
  am = NULL;
  REQ(rt, ty_reduce(rt, TY_RED_ARGMAX, d, 1, &am));
  CHECK(range_is(am, 0, 4));
  REQ(rt, ty_full(rt, TY_I64, 1, (const int64_t[]){8}, 9, &src));
  REQ(rt, ty_copy(rt, am, src));
  CHECK(range_is(am, INT64_MIN, INT64_MAX));
  int64_t h[10] = {0};
  ty_store *cnt = NULL;
  REQ(rt, ty_bincount(rt, am, NULL, 0, 10, &cnt));
  REQ(rt, ty_store_read(rt, cnt, h, sizeof h));
  CHECK_EQ_INT(h[9], 8);
  ty_store_release(cnt), ty_store_release(src), ty_store_release(am), ty_store_release(d);
  ty_runtime_destroy(rt);
}

static const check_case cases[] = {
    CASE(argmin_along_an_axis_gives_zero_to_length_minus_one),
    CASE(unknown_bounds_are_the_dtype_limits),
    CASE(casts_keep_bounds_that_fit_and_overflow_forgets_them),
    CASE(any_write_forgets_the_bounds),
};
CHECK_MAIN(cases)
