/*
 * test_index.c — ty_bincount: counts and weighted sums per label, with a
 * base, ignored out-of-range labels, every label dtype, strided inputs, any
 * number of processors, and the errors it reports.
 */
#include "check.h"
#include "req.h"
#include "internal.h"

#include <tycho/task.h>
#include <tycho/tycho.h>

#include <stdint.h>
#include <stdlib.h>

static const int cpu_counts[] = {1, 2, 3, 8};
#define NCPUS ((int)(sizeof cpu_counts / sizeof cpu_counts[0]))


static ty_runtime *make_rt(int cpus) {
  ty_config cfg = {.cpus = cpus};
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) {
    fprintf(stderr, "cannot create a runtime\n");
    exit(1);
  }
  return rt;
}

/* A 1-D store of dtype t holding vals converted. */
static ty_store *mk1(ty_runtime *rt, ty_dtype t, int64_t n, const double *vals) {
  size_t es = ty_dtype_size(t);
  char *buf = malloc((size_t)n * es + 1);
  for (int64_t i = 0; i < n; i++) ty__store_f64(buf + i * (int64_t)es, t, vals[i]);
  ty_store *s = NULL;
  REQ(rt, ty_store_from_buffer(rt, t, 1, &n, buf, &s));
  free(buf);
  return s;
}

/* The store's elements as doubles (malloc'd). */
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

TEST(bincount_counts_each_label_from_base) {
  static const double labels[] = {1, 3, 3, 2, 5, 1, 3, 0, 7, -1};
  for (int c = 0; c < NCPUS; c++) {
    ty_runtime *rt = make_rt(cpu_counts[c]);
    ty_store *x = mk1(rt, TY_I64, 10, labels), *h = NULL, *h1 = NULL;
    REQ(rt, ty_bincount(rt, x, NULL, 0, 6, &h));   /* numpy: bincount(x, minlength=6)[:6] */
    REQ(rt, ty_bincount(rt, x, NULL, 1, 5, &h1));  /* 1-based labels 1..5 */
    CHECK_EQ_INT(ty_store_dtype(h), TY_I64);
    CHECK_EQ_INT(ty_store_size(h), 6);
    double *v = values(rt, h), *v1 = values(rt, h1);
    static const double want[] = {1, 2, 1, 3, 0, 1}; /* 7 and -1 are out of range */
    for (int j = 0; j < 6; j++) CHECK_EQ_INT(v[j], want[j]);
    static const double want1[] = {2, 1, 3, 0, 1};
    for (int j = 0; j < 5; j++) CHECK_EQ_INT(v1[j], want1[j]);
    free(v), free(v1);
    ty_store_release(h), ty_store_release(h1), ty_store_release(x);
    ty_runtime_destroy(rt);
  }
}

TEST(bincount_sums_weights_in_their_float_dtype) {
  static const double labels[] = {0, 2, 2, 1, 0};
  static const double w[] = {0.5, 1.25, 2.0, -3.0, 4.0};
  ty_runtime *rt = make_rt(2);
  ty_store *x = mk1(rt, TY_I32, 5, labels);
  ty_store *w64 = mk1(rt, TY_F64, 5, w), *w32 = mk1(rt, TY_F32, 5, w), *wi = mk1(rt, TY_I64, 5, labels);
  ty_store *h64 = NULL, *h32 = NULL, *hi = NULL;
  REQ(rt, ty_bincount(rt, x, w64, 0, 4, &h64));
  REQ(rt, ty_bincount(rt, x, w32, 0, 4, &h32));
  REQ(rt, ty_bincount(rt, x, wi, 0, 3, &hi)); /* integer weights: f64, as numpy */
  CHECK_EQ_INT(ty_store_dtype(h64), TY_F64);
  CHECK_EQ_INT(ty_store_dtype(h32), TY_F32);
  CHECK_EQ_INT(ty_store_dtype(hi), TY_F64);
  static const double want[] = {4.5, -3.0, 3.25, 0.0};
  double *a = values(rt, h64), *b = values(rt, h32), *c = values(rt, hi);
  for (int j = 0; j < 4; j++) {
    CHECK(a[j] == want[j]);
    CHECK(b[j] == want[j]);
  }
  static const double want_i[] = {0, 1, 4};
  for (int j = 0; j < 3; j++) CHECK(c[j] == want_i[j]);
  free(a), free(b), free(c);
  ty_store_release(h64), ty_store_release(h32), ty_store_release(hi);
  ty_store_release(x), ty_store_release(w64), ty_store_release(w32), ty_store_release(wi);
  ty_runtime_destroy(rt);
}

/* Many labels over every label dtype and processor count: the private
 * histograms of the pieces must add up to the serial counts exactly. */
TEST(bincount_large_matches_serial_for_every_label_dtype) {
  enum { N = 100003, NB = 7 };
  double *labels = malloc(N * sizeof *labels), *w = malloc(N * sizeof *w);
  double want[NB] = {0}, want_w[NB] = {0};
  for (int i = 0; i < N; i++) {
    labels[i] = (double)((i * 2654435761u) % 9); /* 7 and 8 are out of range */
    w[i] = (double)(i % 5); /* small integers: exact sums in any order */
    if (labels[i] < NB) {
      want[(int)labels[i]] += 1;
      want_w[(int)labels[i]] += w[i];
    }
  }
  static const ty_dtype dts[] = {TY_I64, TY_I32, TY_U8};
  for (int c = 0; c < NCPUS; c++) {
    for (int d = 0; d < 3; d++) {
      ty_runtime *rt = make_rt(cpu_counts[c]);
      ty_store *x = mk1(rt, dts[d], N, labels), *ws = mk1(rt, TY_F64, N, w), *h = NULL, *hw = NULL;
      REQ(rt, ty_bincount(rt, x, NULL, 0, NB, &h));
      REQ(rt, ty_bincount(rt, x, ws, 0, NB, &hw));
      double *v = values(rt, h), *vw = values(rt, hw);
      for (int j = 0; j < NB; j++) {
        CHECK_EQ_INT(v[j], want[j]);
        CHECK(vw[j] == want_w[j]);
      }
      free(v), free(vw);
      ty_store_release(h), ty_store_release(hw), ty_store_release(x), ty_store_release(ws);
      ty_runtime_destroy(rt);
    }
  }
  free(labels), free(w);
}

TEST(bincount_reads_strided_views_and_bool_labels) {
  static const double labels[] = {1, 9, 2, 9, 1, 9, 0, 9};
  static const double flags[] = {1, 0, 1, 1};
  ty_runtime *rt = make_rt(3);
  ty_store *x = mk1(rt, TY_I64, 8, labels), *every2 = NULL, *h = NULL, *b = NULL, *hb = NULL;
  REQ(rt, ty_store_slice(rt, x, 0, 0, 8, 2, &every2)); /* 1, 2, 1, 0 */
  REQ(rt, ty_bincount(rt, every2, NULL, 0, 3, &h));
  double *v = values(rt, h);
  CHECK_EQ_INT(v[0], 1);
  CHECK_EQ_INT(v[1], 2);
  CHECK_EQ_INT(v[2], 1);
  b = mk1(rt, TY_BOOL, 4, flags);
  REQ(rt, ty_bincount(rt, b, NULL, 0, 2, &hb));
  double *vb = values(rt, hb);
  CHECK_EQ_INT(vb[0], 1);
  CHECK_EQ_INT(vb[1], 3);
  free(v), free(vb);
  ty_store_release(h), ty_store_release(hb), ty_store_release(b);
  ty_store_release(every2), ty_store_release(x);
  ty_runtime_destroy(rt);
}

TEST(bincount_of_nothing_is_zeros_and_zero_bins_is_empty) {
  ty_runtime *rt = make_rt(2);
  ty_store *x = mk1(rt, TY_I64, 0, NULL), *h = NULL, *e = NULL;
  REQ(rt, ty_bincount(rt, x, NULL, 0, 4, &h));
  double *v = values(rt, h);
  CHECK_EQ_INT(ty_store_size(h), 4);
  for (int j = 0; j < 4; j++) CHECK_EQ_INT(v[j], 0);
  static const double one[] = {3};
  ty_store *y = mk1(rt, TY_I64, 1, one);
  REQ(rt, ty_bincount(rt, y, NULL, 0, 0, &e));
  CHECK_EQ_INT(ty_store_size(e), 0);
  CHECK_EQ_INT(ty_store_ndim(e), 1);
  free(v);
  ty_store_release(h), ty_store_release(e), ty_store_release(x), ty_store_release(y);
  ty_runtime_destroy(rt);
}

TEST(bincount_rejects_bad_arguments_and_stays_usable) {
  ty_runtime *rt = make_rt(2);
  static const double v[] = {0, 1, 2, 3, 4, 5};
  ty_store *x = mk1(rt, TY_I64, 6, v), *f = mk1(rt, TY_F64, 6, v), *w3 = mk1(rt, TY_F64, 3, v);
  ty_store *m = NULL, *h = NULL;
  REQ(rt, ty_store_reshape(rt, x, 2, (const int64_t[]){2, 3}, &m));
  CHECK_EQ_INT(ty_bincount(rt, m, NULL, 0, 3, &h), TY_ESHAPE);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "ty_bincount: x must be 1-D");
  CHECK(h == NULL);
  CHECK_EQ_INT(ty_bincount(rt, f, NULL, 0, 3, &h), TY_EDTYPE);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "integer dtype, got f64");
  CHECK_EQ_INT(ty_bincount(rt, x, w3, 0, 3, &h), TY_ESHAPE);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "weights must be 1-D of x's length 6");
  CHECK_EQ_INT(ty_bincount(rt, x, NULL, 0, -1, &h), TY_EINVAL);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "nbins must be non-negative, got -1");
  CHECK_EQ_INT(ty_bincount(rt, x, NULL, 0, INT64_MAX / 4, &h), TY_ERANGE);
  CHECK_EQ_INT(ty_bincount(rt, NULL, NULL, 0, 3, &h), TY_EINVAL);
  CHECK(h == NULL);
  REQ(rt, ty_bincount(rt, x, f, 0, 6, &h)); /* still works */
  double *r = values(rt, h);
  for (int j = 0; j < 6; j++) CHECK(r[j] == v[j]);
  free(r);
  ty_store_release(h), ty_store_release(m), ty_store_release(x), ty_store_release(f);
  ty_store_release(w3);
  ty_runtime_destroy(rt);
}

TEST(bincount_is_a_registered_task) {
  ty_runtime *rt = make_rt(1);
  CHECK(ty_task_find(rt, "bincount") != NULL);
  ty_runtime_destroy(rt);
}

static const check_case cases[] = {
    CASE(bincount_counts_each_label_from_base),
    CASE(bincount_sums_weights_in_their_float_dtype),
    CASE(bincount_large_matches_serial_for_every_label_dtype),
    CASE(bincount_reads_strided_views_and_bool_labels),
    CASE(bincount_of_nothing_is_zeros_and_zero_bins_is_empty),
    CASE(bincount_rejects_bad_arguments_and_stays_usable),
    CASE(bincount_is_a_registered_task),
};
CHECK_MAIN(cases)
