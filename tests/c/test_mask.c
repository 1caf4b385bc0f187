/*
 * test_mask.c — tycho/mask.h and tycho/sort.h through the C API: compaction,
 * argwhere, mask assignment, take/put with repeated positions, position
 * checks, the bucketed scatter of a long idx, and the 1-D parallel sort, each against a serial loop written here
 * and the same under 1, 2, 3 and 8 processors with every processor used
 * (mode all, 3 pieces per processor).
 */
#include "check.h"
#include "req.h"
#include "internal.h"

#include <tycho/mask.h>
#include <tycho/sort.h>
#include <tycho/task.h>
#include <tycho/tycho.h>

#include <stdint.h>
#include <stdlib.h>

static const int cpu_counts[] = {1, 2, 3, 8};
#define NCPUS ((int)(sizeof cpu_counts / sizeof cpu_counts[0]))

/* a runtime of `cpus` processors inside a scope of mode all, 3 per processor */
static ty_runtime *make_rt(int cpus) {
  ty_config cfg = {.cpus = cpus};
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) {
    fprintf(stderr, "cannot create a runtime\n");
    exit(1);
  }
  ty_policy p = {.set = TY_POL_MODE | TY_POL_OVERDECOMPOSE, .mode = TY_MODE_ALL, .overdecompose = 3};
  REQ(rt, ty_scope_push(rt, &p, "scope at test"));
  return rt;
}

static ty_store *mk1(ty_runtime *rt, ty_dtype t, int64_t n, const double *vals) {
  size_t es = ty_dtype_size(t);
  char *buf = malloc((size_t)n * es + 1);
  for (int64_t i = 0; i < n; i++) ty__store_f64(buf + i * (int64_t)es, t, vals[i]);
  ty_store *s = NULL;
  REQ(rt, ty_store_from_buffer(rt, t, 1, &n, buf, &s));
  free(buf);
  return s;
}

static double *values(ty_runtime *rt, ty_store *s) {
  int64_t n = ty_store_size(s);
  ty_dtype t = ty_store_dtype(s);
  size_t es = ty_dtype_size(t);
  char *buf = malloc((size_t)n * es + 1);
  REQ(rt, ty_store_read(rt, s, buf, (size_t)n * es));
  double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = ty__load_f64(buf + i * (int64_t)es, t);
  free(buf);
  return v;
}

/* 3 chunks and a bit: a mask whose true elements cluster and thin out */
#define NM (3 * TY_MASK_CHUNK + 777)
static double xval(int64_t i) { return (double)((i * 7919) % 10007); }
static bool mval(int64_t i) { return (i % 3 == 0) != (i > NM / 2 && i % 5 == 0); }

TEST(compress_matches_a_serial_loop_under_any_processor_count) {
  double *xv = malloc(sizeof(double) * NM), *mv = malloc(sizeof(double) * NM);
  int64_t want = 0;
  for (int64_t i = 0; i < NM; i++) {
    xv[i] = xval(i);
    mv[i] = mval(i);
    want += mval(i);
  }
  for (int c = 0; c < NCPUS; c++) {
    ty_runtime *rt = make_rt(cpu_counts[c]);
    ty_store *x = mk1(rt, TY_F64, NM, xv), *m = mk1(rt, TY_BOOL, NM, mv), *r = NULL, *aw = NULL;
    REQ(rt, ty_compress(rt, x, m, &r));
    REQ(rt, ty_argwhere(rt, m, 1, &aw));
    CHECK_EQ_INT(ty_store_size(r), want);
    CHECK_EQ_INT(ty_store_shape(aw)[0], want);
    CHECK_EQ_INT(ty_store_shape(aw)[1], 1);
    double *rv = values(rt, r), *av = values(rt, aw);
    int64_t k = 0, bad = 0;
    for (int64_t i = 0; i < NM; i++)
      if (mval(i)) {
        bad += rv[k] != xv[i] || av[k] != (double)(i + 1);
        k++;
      }
    CHECK_EQ_INT(bad, 0);
    free(rv), free(av);
    ty_store_release(r), ty_store_release(aw), ty_store_release(x), ty_store_release(m);
    ty_runtime_destroy(rt);
  }
  free(xv), free(mv);
}

TEST(mask_assign_writes_one_value_per_true_element_in_order) {
  for (int c = 0; c < NCPUS; c++) {
    ty_runtime *rt = make_rt(cpu_counts[c]);
    double *xv = malloc(sizeof(double) * NM), *mv = malloc(sizeof(double) * NM);
    int64_t n = 0;
    for (int64_t i = 0; i < NM; i++) {
      xv[i] = -1;
      mv[i] = mval(i);
      n += mval(i);
    }
    ty_store *x = mk1(rt, TY_F64, NM, xv), *m = mk1(rt, TY_BOOL, NM, mv), *v = NULL;
    REQ(rt, ty_arange(rt, TY_F64, 0, 1, n, &v));
    REQ(rt, ty_mask_assign(rt, x, m, v));
    double *r = values(rt, x);
    int64_t k = 0, bad = 0;
    for (int64_t i = 0; i < NM; i++) bad += r[i] != (mval(i) ? (double)k++ : -1.0);
    CHECK_EQ_INT(bad, 0);
    /* a wrong count is an error naming both, and x is left as it was */
    ty_store *w = NULL;
    REQ(rt, ty_arange(rt, TY_F64, 0, 1, 3, &w));
    CHECK(ty_mask_assign(rt, x, m, w) == TY_ESHAPE);
    CHECK_STR_CONTAINS(ty_errmsg(rt), "cannot assign values of shape (3,)");
    double *r2 = values(rt, x);
    CHECK(memcmp(r, r2, sizeof(double) * NM) == 0);
    free(r), free(r2), free(xv), free(mv);
    ty_store_release(w), ty_store_release(v), ty_store_release(x), ty_store_release(m);
    ty_runtime_destroy(rt);
  }
}

TEST(put_keeps_the_last_of_repeated_positions_and_take_gathers) {
  static const double idx[] = {2, 0, 2, -1, 2, 4};
  static const double vals[] = {10, 11, 12, 13, 14, 15};
  for (int c = 0; c < NCPUS; c++) {
    ty_runtime *rt = make_rt(cpu_counts[c]);
    ty_store *x = NULL, *i = mk1(rt, TY_I64, 6, idx), *v = mk1(rt, TY_F64, 6, vals), *g = NULL;
    REQ(rt, ty_full(rt, TY_F64, 1, (const int64_t[]){6}, 0, &x));
    REQ(rt, ty_put(rt, x, i, 0, 0, v)); /* 0-based positions: numpy's x[idx] = vals */
    double *r = values(rt, x);
    static const double want[] = {11, 0, 14, 0, 15, 13};
    for (int k = 0; k < 6; k++) CHECK(r[k] == want[k]);
    REQ(rt, ty_take(rt, x, i, 0, 0, &g));
    double *gv = values(rt, g);
    static const double gw[] = {14, 11, 14, 13, 14, 15};
    for (int k = 0; k < 6; k++) CHECK(gv[k] == gw[k]);
    free(r), free(gv);
    ty_store_release(g), ty_store_release(v), ty_store_release(i), ty_store_release(x);
    ty_runtime_destroy(rt);
  }
}

TEST(index_check_names_the_first_bad_position) {
  ty_runtime *rt = make_rt(3);
  static const double idx[] = {1, 5, 0, 9, -6, -5};
  ty_store *i = mk1(rt, TY_I32, 6, idx);
  int64_t at = 0, v = 0;
  REQ(rt, ty_index_check(rt, i, 5, 1, &at, &v)); /* 1-based: 0 is the first bad one */
  CHECK_EQ_INT(at, 2);
  CHECK_EQ_INT(v, 0);
  REQ(rt, ty_index_check(rt, i, 5, 0, &at, &v)); /* 0-based: 5 is */
  CHECK_EQ_INT(at, 1);
  CHECK_EQ_INT(v, 5);
  REQ(rt, ty_index_check(rt, i, 10, 0, &at, &v));
  CHECK_EQ_INT(at, -1);
  ty_store_release(i);
  ty_runtime_destroy(rt);
}

/* Positions over several chunks of the check, the first bad one in a later
 * chunk: it is named, in C order, and nothing at all is written (every piece
 * of the put sees the check's result), under any processor count. */
TEST(put_checked_writes_nothing_when_a_position_is_bad) {
  const int64_t n = 3 * TY_MASK_CHUNK + 5, m = 1000;
  double *idx = malloc(sizeof(double) * (size_t)n), *vals = malloc(sizeof(double) * (size_t)n);
  for (int64_t k = 0; k < n; k++) idx[k] = (double)((k * 7919) % m), vals[k] = (double)k;
  idx[2 * TY_MASK_CHUNK + 3] = (double)m;    /* the first bad one (0-based) */
  idx[2 * TY_MASK_CHUNK + 9] = -(double)m - 1; /* a later one */
  for (int c = 0; c < NCPUS; c++) {
    ty_runtime *rt = make_rt(cpu_counts[c]);
    ty_store *x = NULL, *i = mk1(rt, TY_I64, n, idx), *v = mk1(rt, TY_F64, n, vals);
    REQ(rt, ty_full(rt, TY_F64, 1, &m, -1, &x));
    int64_t at = 0, bad = 0;
    REQ(rt, ty_put_checked(rt, x, i, 0, 0, v, &at, &bad));
    CHECK_EQ_INT(at, 2 * TY_MASK_CHUNK + 3);
    CHECK_EQ_INT(bad, m);
    double *r = values(rt, x);
    int64_t written = 0;
    for (int64_t k = 0; k < m; k++) written += r[k] != -1;
    CHECK_EQ_INT(written, 0);
    free(r);
    /* the same positions made good: the last write of each wins */
    idx[2 * TY_MASK_CHUNK + 3] = 7, idx[2 * TY_MASK_CHUNK + 9] = -1;
    ty_store *i2 = mk1(rt, TY_I64, n, idx);
    REQ(rt, ty_put_checked(rt, x, i2, 0, 0, v, &at, &bad));
    CHECK_EQ_INT(at, -1);
    double *want = malloc(sizeof(double) * (size_t)m);
    for (int64_t k = 0; k < m; k++) want[k] = -1;
    for (int64_t k = 0; k < n; k++) want[idx[k] < 0 ? (int64_t)idx[k] + m : (int64_t)idx[k]] = vals[k];
    r = values(rt, x);
    int64_t diff = 0;
    for (int64_t k = 0; k < m; k++) diff += r[k] != want[k];
    CHECK_EQ_INT(diff, 0);
    free(r), free(want);
    idx[2 * TY_MASK_CHUNK + 3] = (double)m, idx[2 * TY_MASK_CHUNK + 9] = -(double)m - 1;
    ty_store_release(i2), ty_store_release(v), ty_store_release(i), ty_store_release(x);
    ty_runtime_destroy(rt);
  }
  free(idx), free(vals);
}

/* A long idx into one line takes the bucketed scatter (ops_scatter.c):
 * 5 chunks of 65536 positions and a bit, repeated positions within and
 * across chunks, negative ones; each dtype width; 1, 2, 3 and 8 processors,
 * and a 16 MB budget that cuts idx into segments of one chunk: every result
 * is the serial loop's (the last write of a position wins). */
static ty_runtime *make_rt_mem(int cpus, size_t sysmem) {
  ty_config cfg = {.cpus = cpus, .sysmem = sysmem};
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) {
    fprintf(stderr, "cannot create a runtime\n");
    exit(1);
  }
  ty_policy p = {.set = TY_POL_MODE | TY_POL_OVERDECOMPOSE, .mode = TY_MODE_ALL, .overdecompose = 3};
  REQ(rt, ty_scope_push(rt, &p, "scope at test"));
  return rt;
}

TEST(bucketed_put_matches_a_serial_loop) {
  const int64_t n = 5 * 65536 + 17, m = 300001;
  double *idx = malloc(sizeof(double) * (size_t)n), *vals = malloc(sizeof(double) * (size_t)n);
  double *want = malloc(sizeof(double) * (size_t)m);
  for (int64_t k = 0; k < n; k++) {
    const int64_t j = (k * 7919 + (k >> 7)) % m;
    idx[k] = (double)(k % 5 == 0 ? j - m : j);
    vals[k] = (double)(k % 251);
  }
  for (int64_t k = 0; k < m; k++) want[k] = 0;
  for (int64_t k = 0; k < n; k++) want[idx[k] < 0 ? (int64_t)idx[k] + m : (int64_t)idx[k]] = vals[k];
  static const ty_dtype types[] = {TY_F64, TY_I32, TY_U8};
  /* bucketed (TYCHO_SCATTER_DIRECT=0) under each processor count, then the
   * default: a line this short (2.4 MB at most) goes to the plain put */
  for (int run = 0; run < 2 * (NCPUS + 1); run++)
    for (int t = 0; t < 3; t++) {
      const int c = run % (NCPUS + 1);
      if (run > NCPUS) unsetenv("TYCHO_SCATTER_DIRECT");
      else setenv("TYCHO_SCATTER_DIRECT", "0", 1);
      ty_runtime *rt = c < NCPUS ? make_rt(cpu_counts[c]) : make_rt_mem(2, (size_t)16 << 20);
      ty_store *x = NULL, *i = mk1(rt, TY_I64, n, idx), *v = mk1(rt, types[t], n, vals);
      REQ(rt, ty_full(rt, types[t], 1, &m, 0, &x));
      int64_t at = 0, bad = 0;
      REQ(rt, ty_put_checked(rt, x, i, 0, 0, v, &at, &bad));
      CHECK_EQ_INT(at, -1);
      double *r = values(rt, x);
      int64_t diff = 0;
      for (int64_t k = 0; k < m; k++) diff += r[k] != want[k];
      CHECK_EQ_INT(diff, 0);
      free(r);
      /* unchecked, a bad position: the launch fails and names it */
      const double keep = idx[3 * 65536 + 5];
      idx[3 * 65536 + 5] = (double)m;
      ty_store *i2 = mk1(rt, TY_I64, n, idx);
      idx[3 * 65536 + 5] = keep;
      ty_status st = ty_put(rt, x, i2, 0, 0, v);
      if (st == TY_OK) st = ty_flush(rt);
      CHECK(st != TY_OK);
      CHECK_STR_CONTAINS(ty_errmsg(rt), "index 300001 is out of range");
      ty_store_release(i2), ty_store_release(v), ty_store_release(i), ty_store_release(x);
      ty_runtime_destroy(rt);
    }
  free(idx), free(vals), free(want);
}

static int cmp_pos(const void *a, const void *b) {
  const double *x = a, *y = b; /* (key, position) pairs: by key, then position */
  if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
  return (x[1] > y[1]) - (x[1] < y[1]);
}

TEST(long_sorts_are_stable_and_the_same_under_any_processor_count) {
  const int64_t n = 300007; /* runs and merges (ops_sort.c) */
  double *kv = malloc(sizeof(double) * (size_t)n), *pairs = malloc(sizeof(double) * 2 * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    kv[i] = (double)((i * 7919) % 1009);
    pairs[2 * i] = kv[i];
    pairs[2 * i + 1] = (double)i;
  }
  qsort(pairs, (size_t)n, 2 * sizeof(double), cmp_pos);
  for (int c = 0; c < NCPUS; c++) {
    ty_runtime *rt = make_rt(cpu_counts[c]);
    ty_store *x = mk1(rt, TY_I32, n, kv), *s = NULL, *p = NULL;
    REQ(rt, ty_sort(rt, x, 0, &s));
    REQ(rt, ty_argsort(rt, x, 0, 0, &p));
    double *sv = values(rt, s), *pv = values(rt, p);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += sv[i] != pairs[2 * i] || pv[i] != pairs[2 * i + 1];
    CHECK_EQ_INT(bad, 0);
    free(sv), free(pv);
    ty_store_release(p), ty_store_release(s), ty_store_release(x);
    ty_runtime_destroy(rt);
  }
  free(kv), free(pairs);
}

TEST(unique_counts_and_inverse_round_trip) {
  static const double xs[] = {3, 1, 3, 2, 1, 1, 7};
  ty_runtime *rt = make_rt(3);
  ty_store *x = mk1(rt, TY_I64, 7, xs), *v = NULL, *idx = NULL, *inv = NULL, *cnt = NULL;
  REQ(rt, ty_unique(rt, x, 0, &v, &idx, &inv, &cnt));
  double *vv = values(rt, v), *iv = values(rt, idx), *nv = values(rt, inv), *cv = values(rt, cnt);
  static const double wv[] = {1, 2, 3, 7}, wi[] = {1, 3, 0, 6}, wc[] = {3, 1, 2, 1};
  CHECK_EQ_INT(ty_store_size(v), 4);
  for (int k = 0; k < 4; k++) CHECK(vv[k] == wv[k] && iv[k] == wi[k] && cv[k] == wc[k]);
  for (int k = 0; k < 7; k++) CHECK(vv[(int)nv[k]] == xs[k]);
  free(vv), free(iv), free(nv), free(cv);
  ty_store *all[] = {x, v, idx, inv, cnt};
  for (int k = 0; k < 5; k++) ty_store_release(all[k]);
  ty_runtime_destroy(rt);
}

static const check_case cases[] = {
    CASE(compress_matches_a_serial_loop_under_any_processor_count),
    CASE(mask_assign_writes_one_value_per_true_element_in_order),
    CASE(put_keeps_the_last_of_repeated_positions_and_take_gathers),
    CASE(index_check_names_the_first_bad_position),
    CASE(put_checked_writes_nothing_when_a_position_is_bad),
    CASE(bucketed_put_matches_a_serial_loop),
    CASE(long_sorts_are_stable_and_the_same_under_any_processor_count),
    CASE(unique_counts_and_inverse_round_trip),
};
CHECK_MAIN(cases)
