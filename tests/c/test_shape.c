/*
 * test_shape.c — tycho/shape.h: scans (ty_scan) and reversed views
 * (ty_store_flip). Short lines scan in index order, exactly as a plain C
 * loop; long lines (blocks of TY_SCAN_BLOCK) give the same bits under every
 * processor count, mode and fusion setting, and stay within rounding of the
 * plain loop. A flip is a view: negative stride, writes reach the base.
 */
#include "check.h"
#include "req.h"

#include <tycho/shape.h>
#include <tycho/task.h>
#include <tycho/tycho.h>

#include <math.h>
#include <stdint.h>

static ty_runtime *make_rt(int cpus, ty_mode mode, bool fuse) {
  ty_config cfg = {.cpus = cpus};
  cfg.policy.set = TY_POL_MODE | TY_POL_FUSE;
  cfg.policy.mode = mode;
  cfg.policy.fuse = fuse;
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) {
    fprintf(stderr, "cannot create a runtime\n");
    exit(1);
  }
  return rt;
}

/* Values over ~12 orders of magnitude, both signs: another order of
 * additions shows in the last bits. */
static void fill_spread(double *v, int64_t n, uint64_t seed) {
  uint64_t x = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (int64_t i = 0; i < n; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = (double)(x >> 11) * 0x1.0p-53;
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    double e = (double)(x >> 11) * 0x1.0p-53;
    v[i] = (u - 0.4) * pow(10.0, 12.0 * e - 6.0);
  }
}

TEST(short_lines_scan_in_index_order_like_a_loop) {
  ty_runtime *rt = make_rt(3, TY_MODE_ALL, true);
  enum { R = 7, C = 1001 };
  static double v[R * C], got[R * C], want[R * C];
  fill_spread(v, R * C, 1);
  ty_store *x = NULL, *s1 = NULL, *s0 = NULL, *p = NULL;
  REQ(rt, ty_store_from_buffer(rt, TY_F64, 2, (const int64_t[]){R, C}, v, &x));
  REQ(rt, ty_scan(rt, TY_SCAN_SUM, x, 1, &s1)); /* along rows */
  REQ(rt, ty_store_read(rt, s1, got, sizeof got));
  for (int r = 0; r < R; r++) {
    double acc = 0;
    for (int c = 0; c < C; c++) want[r * C + c] = c ? (acc += v[r * C + c]) : (acc = v[r * C]);
  }
  CHECK(memcmp(got, want, sizeof got) == 0);
  REQ(rt, ty_scan(rt, TY_SCAN_SUM, x, 0, &s0)); /* down columns */
  REQ(rt, ty_store_read(rt, s0, got, sizeof got));
  for (int c = 0; c < C; c++) want[c] = v[c];
  for (int r = 1; r < R; r++)
    for (int c = 0; c < C; c++) want[r * C + c] = want[(r - 1) * C + c] + v[r * C + c];
  CHECK(memcmp(got, want, sizeof got) == 0);
  REQ(rt, ty_scan(rt, TY_SCAN_PROD, x, -1, &p)); /* flat: 1-D */
  CHECK_EQ_INT(ty_store_ndim(p), 1);
  CHECK_EQ_INT(ty_store_shape(p)[0], R * C);
  ty_store_release(x), ty_store_release(s1), ty_store_release(s0), ty_store_release(p);
  ty_runtime_destroy(rt);
}

TEST(integer_scans_are_i64_and_wrap) {
  ty_runtime *rt = make_rt(2, TY_MODE_AUTO, true);
  const int32_t v[4] = {INT32_MAX, INT32_MAX, -5, 7};
  ty_store *x = NULL, *s = NULL, *p = NULL, *b = NULL, *bs = NULL;
  REQ(rt, ty_store_from_buffer(rt, TY_I32, 1, (const int64_t[]){4}, v, &x));
  REQ(rt, ty_scan(rt, TY_SCAN_SUM, x, 0, &s));
  CHECK_EQ_INT(ty_store_dtype(s), TY_I64);
  int64_t got[4];
  REQ(rt, ty_store_read(rt, s, got, sizeof got));
  CHECK_EQ_INT(got[1], 2LL * INT32_MAX);
  CHECK_EQ_INT(got[3], 2LL * INT32_MAX + 2);
  const int64_t big[3] = {INT64_MAX, 2, 3};
  ty_store_release(x);
  REQ(rt, ty_store_from_buffer(rt, TY_I64, 1, (const int64_t[]){3}, big, &x));
  REQ(rt, ty_scan(rt, TY_SCAN_PROD, x, 0, &p));
  REQ(rt, ty_store_read(rt, p, got, 3 * sizeof got[0]));
  CHECK_EQ_INT(got[1], (int64_t)((uint64_t)INT64_MAX * 2u)); /* wraps, as numpy's */
  const uint8_t bits[3] = {1, 0, 1};
  REQ(rt, ty_store_from_buffer(rt, TY_BOOL, 1, (const int64_t[]){3}, bits, &b));
  REQ(rt, ty_scan(rt, TY_SCAN_SUM, b, -1, &bs));
  REQ(rt, ty_store_read(rt, bs, got, 3 * sizeof got[0]));
  CHECK_EQ_INT(got[2], 2);
  ty_store_release(x), ty_store_release(s), ty_store_release(p);
  ty_store_release(b), ty_store_release(bs);
  ty_runtime_destroy(rt);
}

/* n = 3 blocks and a tail, as a (2, n) store scanned along axis 1, flat, and
 * through the transpose along axis 0. */
#define LONG_N (3 * TY_SCAN_BLOCK + 77)
static void long_scans(ty_runtime *rt, const double *v, double *out /* 3 * 2 * LONG_N */) {
  ty_store *x = NULL, *xt = NULL, *a = NULL, *f = NULL, *t = NULL;
  REQ(rt, ty_store_from_buffer(rt, TY_F64, 2, (const int64_t[]){2, LONG_N}, v, &x));
  REQ(rt, ty_store_transpose(rt, x, 0, 1, &xt));
  REQ(rt, ty_scan(rt, TY_SCAN_SUM, x, 1, &a));
  REQ(rt, ty_scan(rt, TY_SCAN_SUM, x, -1, &f));
  REQ(rt, ty_scan(rt, TY_SCAN_SUM, xt, 0, &t));
  const size_t bytes = 2 * (size_t)LONG_N * sizeof(double);
  REQ(rt, ty_store_read(rt, a, out, bytes));
  REQ(rt, ty_store_read(rt, f, out + 2 * LONG_N, bytes));
  REQ(rt, ty_store_read(rt, t, out + 4 * LONG_N, bytes));
  ty_store_release(x), ty_store_release(xt), ty_store_release(a), ty_store_release(f);
  ty_store_release(t);
}

TEST(long_lines_same_bits_for_any_pieces) {
  static double v[2 * LONG_N], ref[6 * LONG_N], got[6 * LONG_N];
  fill_spread(v, 2 * LONG_N, 7);
  const struct {
    int cpus;
    ty_mode mode;
    bool fuse;
  } confs[] = {{1, TY_MODE_AUTO, true},  {2, TY_MODE_AUTO, true},  {3, TY_MODE_ALL, true},
               {8, TY_MODE_ALL, true},   {3, TY_MODE_SINGLE, true}, {5, TY_MODE_TASK, true},
               {3, TY_MODE_AUTO, false}, {7, TY_MODE_ALL, false}};
  for (size_t c = 0; c < sizeof confs / sizeof confs[0]; c++) {
    ty_runtime *rt = make_rt(confs[c].cpus, confs[c].mode, confs[c].fuse);
    long_scans(rt, v, c ? got : ref);
    if (c && memcmp(got, ref, sizeof got) != 0) {
      fprintf(stderr, "scan bits differ under --cpus %d --parallel %s --fuse %s\n", confs[c].cpus,
              ty_mode_name(confs[c].mode), confs[c].fuse ? "on" : "off");
      CHECK(0);
    }
    ty_runtime_destroy(rt);
  }
  /* within rounding of the plain loop, the transposed scan too (its block
   * totals are ordered reductions of another shape: the same up to rounding) */
  double acc = 0, worst = 0, scale = 0;
  for (int64_t i = 0; i < LONG_N; i++) {
    acc += v[i];
    scale = fmax(scale, fabs(acc));
    worst = fmax(worst, fabs(ref[i] - acc));
  }
  CHECK(worst <= 1e-12 * scale);
  double tworst = 0;
  for (int64_t i = 0; i < LONG_N; i++) /* row 0 is column 0 of the (n, 2) result */
    tworst = fmax(tworst, fabs(ref[i] - ref[4 * LONG_N + 2 * i]));
  CHECK(tworst <= 1e-12 * scale);
  CHECK(ref[2 * LONG_N + LONG_N - 1] == ref[LONG_N - 1]); /* flat: row 0 first */
}

TEST(flip_is_a_view_with_a_negative_stride) {
  ty_runtime *rt = make_rt(3, TY_MODE_ALL, true);
  const double v[6] = {0, 1, 2, 3, 4, 5};
  ty_store *x = NULL, *f = NULL, *ff = NULL, *c = NULL, *two = NULL;
  REQ(rt, ty_store_from_buffer(rt, TY_F64, 2, (const int64_t[]){2, 3}, v, &x));
  REQ(rt, ty_store_flip(rt, x, 1, &f));
  CHECK(ty_store_same_storage(x, f));
  CHECK_EQ_INT(ty_store_strides(f)[1], -1);
  CHECK(!ty_store_is_contiguous(f));
  double got[6];
  REQ(rt, ty_store_read(rt, f, got, sizeof got));
  CHECK(got[0] == 2 && got[2] == 0 && got[3] == 5 && got[5] == 3);
  REQ(rt, ty_store_flip(rt, f, 1, &ff)); /* twice: the original order */
  REQ(rt, ty_store_read(rt, ff, got, sizeof got));
  CHECK(memcmp(got, v, sizeof got) == 0);
  REQ(rt, ty_scalar_f64(rt, TY_F64, 2.0, &two));
  REQ(rt, ty_binary(rt, TY_OP_MUL, f, two, &c)); /* a launch reads it */
  REQ(rt, ty_store_read(rt, c, got, sizeof got));
  CHECK(got[0] == 4 && got[5] == 6);
  REQ(rt, ty_copy(rt, f, x)); /* writes through, overlapping: via a temporary */
  REQ(rt, ty_store_read(rt, x, got, sizeof got));
  CHECK(got[0] == 2 && got[1] == 1 && got[2] == 0 && got[3] == 5);
  ty_store_release(x), ty_store_release(f), ty_store_release(ff), ty_store_release(c);
  ty_store_release(two);
  ty_runtime_destroy(rt);
}

TEST(scan_and_flip_reject_bad_arguments_and_stay_usable) {
  ty_runtime *rt = make_rt(2, TY_MODE_AUTO, true);
  ty_store *x = NULL, *out = NULL;
  REQ(rt, ty_full(rt, TY_F64, 1, (const int64_t[]){4}, 1.0, &x));
  CHECK(ty_scan(rt, TY_SCAN_SUM, x, 1, &out) == TY_ERANGE);
  CHECK(out == NULL);
  CHECK(ty_scan(rt, (ty_scan_op)9, x, 0, &out) == TY_EINVAL);
  CHECK(ty_scan(rt, TY_SCAN_SUM, NULL, 0, &out) == TY_EINVAL);
  CHECK(ty_store_flip(rt, x, 1, &out) == TY_ERANGE);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "ty_store_flip");
  CHECK(ty_task_find(rt, "scan") != NULL);
  REQ(rt, ty_scan(rt, TY_SCAN_SUM, x, 0, &out));
  double got[4];
  REQ(rt, ty_store_read(rt, out, got, sizeof got));
  CHECK(got[3] == 4.0);
  ty_store_release(out), ty_store_release(x);
  ty_runtime_destroy(rt);
}

static const check_case cases[] = {
    CASE(short_lines_scan_in_index_order_like_a_loop),
    CASE(integer_scans_are_i64_and_wrap),
    CASE(long_lines_same_bits_for_any_pieces),
    CASE(flip_is_a_view_with_a_negative_stride),
    CASE(scan_and_flip_reject_bad_arguments_and_stay_usable),
};
CHECK_MAIN(cases)
