/*
 * test_short_rows.c — reductions along a short innermost axis (k-means'
 * distances to 10 centroids: kernels_reduce.c's short-row kernels) and
 * matrix-vector products (kernels_linalg.c's gemv path).
 *
 * min/max/argmin/argmax of rows of 1..40 elements (the short-row kernels take
 * up to 32; 33 and 40 go the row-scan way) must equal the rule written out
 * here: the row in order from its first element, a later element replacing
 * the running one only when strictly better or NaN (min/max: NaN sticks, ties
 * and signed zeros keep the earlier element), argmin/argmax the first best
 * index or the first NaN. Rows are contiguous or strided (a transposed
 * store), with NaN, infinities, ties and signed zeros, on 1 and 3 processors.
 */
#include "check.h"
#include "req.h"

#include <tycho/tycho.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static ty_runtime *make_rt(int cpus) {
  ty_config cfg = {.cpus = cpus};
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) exit(1);
  return rt;
}

/* rows x n values: a few distinct values (ties), signed zeros, infinities,
 * and a NaN in some rows (none in the first half when `nans` is false) */
static double *values(int64_t rows, int64_t n, bool nans) {
  double *v = malloc((size_t)(rows * n) * sizeof *v);
  uint64_t s = 0x9E3779B97F4A7C15u;
  for (int64_t i = 0; i < rows * n; i++) {
    s = s * 6364136223846793005u + 1442695040888963407u;
    const int r = (int)(s >> 59); /* 0..31 */
    v[i] = r < 4 ? 0.0 : r < 8 ? -0.0 : r == 8 ? INFINITY : r == 9 ? -INFINITY
                                                 : (double)(r % 7) - 3.0;
    if (nans && r == 10 && i / n >= rows / 2) v[i] = NAN;
  }
  return v;
}

static bool better(double x, double m, bool min) { return (min ? x < m : x > m) || x != x; }

/* the rule, element (i, j) at v[i * s0 + j * s1] */
static double ref_minmax(const double *v, int64_t n, int64_t s1, bool min) {
  double m = min ? INFINITY : -INFINITY;
  for (int64_t j = 0; j < n; j++)
    if (better(v[j * s1], m, min)) m = v[j * s1];
  return m;
}

static int64_t ref_arg(const double *v, int64_t n, int64_t s1, bool min) {
  double m = v[0];
  if (m != m) return 0;
  int64_t best = 0;
  for (int64_t j = 1; j < n; j++) {
    const double x = v[j * s1];
    if (x != x) return j;
    if (min ? x < m : x > m) m = x, best = j;
  }
  return best;
}

static bool same_double(double a, double b) {
  return (a != a && b != b) || memcmp(&a, &b, sizeof a) == 0;
}

/* op along axis 1 of a rows x n store of v, read back as doubles; transposed:
 * the store is built n x rows and transposed (rows strided by 1, elements
 * by rows) */
static void reduce_rows(int cpus, ty_dtype dt, const double *v, int64_t rows, int64_t n,
                        bool transposed, ty_reduce_op op, double *out) {
  ty_runtime *rt = make_rt(cpus);
  const int64_t shape[2] = {rows, n}, tshape[2] = {n, rows};
  double *buf = malloc((size_t)(rows * n) * sizeof *buf);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < n; j++) buf[transposed ? j * rows + i : i * n + j] = v[i * n + j];
  ty_store *s = NULL, *x = NULL, *c = NULL, *r = NULL, *rd = NULL;
  REQ(rt, ty_store_from_buffer(rt, TY_F64, 2, transposed ? tshape : shape, buf, &s));
  if (transposed) REQ(rt, ty_store_transpose(rt, s, 0, 1, &x));
  else ty_store_retain(x = s);
  REQ(rt, ty_cast(rt, x, dt, &c));
  REQ(rt, ty_reduce(rt, op, c, 1, &r));
  REQ(rt, ty_cast(rt, r, TY_F64, &rd));
  REQ(rt, ty_store_read(rt, rd, out, (size_t)rows * sizeof *out));
  ty_store *all[] = {s, x, c, r, rd};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) ty_store_release(all[k]);
  free(buf);
  ty_runtime_destroy(rt);
}

static const int64_t ns[] = {1, 2, 3, 10, 16, 17, 31, 32, 33, 40};
static const int64_t nrows[] = {1, 2, 7, 1000, 3001};

TEST(short_row_min_max_follow_the_row_rule) {
  int cases = 0;
  for (size_t a = 0; a < sizeof nrows / sizeof nrows[0]; a++)
    for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++)
      for (int tr = 0; tr < 2; tr++)
        for (int cpus = 1; cpus <= 3; cpus += 2)
          for (int mn = 0; mn < 2; mn++) {
            const int64_t rows = nrows[a], n = ns[b];
            double *v = values(rows, n, true), *got = malloc((size_t)rows * sizeof *got);
            const bool min = mn == 0;
            reduce_rows(cpus, TY_F64, v, rows, n, tr, min ? TY_RED_MIN : TY_RED_MAX, got);
            int bad = 0;
            for (int64_t i = 0; i < rows; i++) {
              const double want = ref_minmax(v + i * n, n, 1, min);
              /* signed zeros: exact below 16 elements (one scan); longer rows
               * merge 16 lanes, where -0 and +0 may come either way */
              const bool ok = n < 16 ? same_double(want, got[i])
                                     : (want == got[i] || (want != want && got[i] != got[i]));
              if (!ok && bad++ < 3)
                fprintf(stderr, "%s %lldx%lld%s cpus %d row %lld: %g, want %g\n",
                        min ? "min" : "max", (long long)rows, (long long)n, tr ? " (T)" : "",
                        cpus, (long long)i, got[i], want);
            }
            CHECK(bad == 0);
            free(v), free(got);
            cases++;
          }
  CHECK(cases == 5 * 10 * 2 * 2 * 2);
}

TEST(short_row_argmin_argmax_take_the_first) {
  for (size_t a = 0; a < sizeof nrows / sizeof nrows[0]; a++)
    for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++)
      for (int tr = 0; tr < 2; tr++)
        for (int cpus = 1; cpus <= 3; cpus += 2)
          for (int mn = 0; mn < 2; mn++) {
            const int64_t rows = nrows[a], n = ns[b];
            double *v = values(rows, n, true), *got = malloc((size_t)rows * sizeof *got);
            const bool min = mn == 0;
            reduce_rows(cpus, TY_F64, v, rows, n, tr, min ? TY_RED_ARGMIN : TY_RED_ARGMAX, got);
            int bad = 0;
            for (int64_t i = 0; i < rows; i++) {
              const int64_t want = ref_arg(v + i * n, n, 1, min);
              if ((int64_t)got[i] != want && bad++ < 3)
                fprintf(stderr, "arg%s %lldx%lld%s cpus %d row %lld: %lld, want %lld\n",
                        min ? "min" : "max", (long long)rows, (long long)n, tr ? " (T)" : "",
                        cpus, (long long)i, (long long)got[i], (long long)want);
            }
            CHECK(bad == 0);
            free(v), free(got);
          }
}

/* f32 and the integer dtypes take the same kernels (values are small
 * integers, infinities and NaN only where the dtype has them) */
TEST(short_row_kernels_for_every_dtype) {
  const ty_dtype dts[] = {TY_F32, TY_I64, TY_I32, TY_U8};
  const ty_reduce_op ops[] = {TY_RED_MIN, TY_RED_MAX, TY_RED_ARGMIN, TY_RED_ARGMAX};
  const int64_t rows = 1000, n = 10;
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
    for (size_t o = 0; o < 4; o++) {
      const bool fl = dts[d] == TY_F32;
      double *v = values(rows, n, fl), *got = malloc((size_t)rows * sizeof *got);
      for (int64_t i = 0; i < rows * n; i++) {
        if (!fl && (isinf(v[i]) || v[i] != v[i])) v[i] = 5.0;
        if (dts[d] == TY_U8 && v[i] < 0) v[i] += 10.0;
        if (v[i] == 0) v[i] = 0.0; /* no -0 in the integers */
      }
      reduce_rows(3, dts[d], v, rows, n, false, ops[o], got);
      const bool min = ops[o] == TY_RED_MIN || ops[o] == TY_RED_ARGMIN;
      const bool arg = ops[o] == TY_RED_ARGMIN || ops[o] == TY_RED_ARGMAX;
      int bad = 0;
      for (int64_t i = 0; i < rows; i++) {
        const double want = arg ? (double)ref_arg(v + i * n, n, 1, min)
                                : ref_minmax(v + i * n, n, 1, min);
        bad += !(want == got[i] || (want != want && got[i] != got[i]));
      }
      if (bad) fprintf(stderr, "dtype %s op %zu: %d rows differ\n", ty_dtype_name(dts[d]), o, bad);
      CHECK(bad == 0);
      free(v), free(got);
    }
}

/* ---- matrix-vector products (gemv) ------------------------------------------------ */

static ty_store *mk(ty_runtime *rt, int nd, const int64_t *shape, const double *v) {
  ty_store *s = NULL;
  REQ(rt, ty_store_from_buffer(rt, TY_F64, nd, shape, v, &s));
  return s;
}

/* Every layout a vector product takes: A @ x and y @ A with A row-major and
 * with A column-major (the transpose of a stored Aᵀ); within 1e-13 of a long double
 * loop, NaN in x giving NaN rows, and the same bits on 1 and 3 processors */
TEST(matrix_vector_products_match_a_plain_loop) {
  const int64_t dims[][2] = {{1000, 300}, {257, 1}, {1, 129}, {3001, 17}};
  for (size_t z = 0; z < sizeof dims / sizeof dims[0]; z++) {
    const int64_t m = dims[z][0], k = dims[z][1];
    double *a = malloc((size_t)(m * k) * sizeof *a), *at = malloc((size_t)(m * k) * sizeof *at);
    double *x = malloc((size_t)k * sizeof *x), *y = malloc((size_t)m * sizeof *y);
    for (int64_t i = 0; i < m; i++)
      for (int64_t p = 0; p < k; p++) {
        a[i * k + p] = sin((double)(i * k + p) * 0.37);
        at[p * m + i] = a[i * k + p];
      }
    for (int64_t p = 0; p < k; p++) x[p] = cos((double)p * 0.11);
    for (int64_t i = 0; i < m; i++) y[i] = cos((double)i * 0.23);
    double *first[4] = {NULL, NULL, NULL, NULL};
    for (int cpus = 1; cpus <= 3; cpus += 2) {
      ty_runtime *rt = make_rt(cpus);
      const int64_t sa[2] = {m, k}, sat[2] = {k, m};
      ty_store *A = mk(rt, 2, sa, a), *AT = mk(rt, 2, sat, at), *X = mk(rt, 1, &k, x);
      ty_store *Y = mk(rt, 1, &m, y), *tA = NULL, *r[4] = {NULL};
      REQ(rt, ty_store_transpose(rt, AT, 0, 1, &tA));  /* m x k, column-major */
      REQ(rt, ty_matmul(rt, A, X, &r[0]));   /* (m) */
      REQ(rt, ty_matmul(rt, tA, X, &r[1]));  /* (m) */
      REQ(rt, ty_matmul(rt, Y, A, &r[2]));   /* (k) */
      REQ(rt, ty_matmul(rt, Y, tA, &r[3]));  /* (k) */
      for (int j = 0; j < 4; j++) {
        const int64_t len = j < 2 ? m : k;
        double *got = malloc((size_t)len * sizeof *got);
        REQ(rt, ty_store_read(rt, r[j], got, (size_t)len * sizeof *got));
        for (int64_t i = 0; i < len; i++) {
          long double want = 0;
          if (j < 2)
            for (int64_t p = 0; p < k; p++) want += (long double)a[i * k + p] * x[p];
          else
            for (int64_t p = 0; p < m; p++) want += (long double)y[p] * a[p * k + i];
          CHECK_NEAR(got[i], (double)want, 1e-13 * (1.0 + fabsl(want)) * (double)(j < 2 ? k : m));
        }
        if (!first[j]) first[j] = got;
        else {
          CHECK(memcmp(first[j], got, (size_t)len * sizeof *got) == 0);
          free(got);
        }
      }
      ty_store *all[] = {A, AT, X, Y, tA, r[0], r[1], r[2], r[3]};
      for (size_t j = 0; j < sizeof all / sizeof all[0]; j++) ty_store_release(all[j]);
      ty_runtime_destroy(rt);
    }
    for (int j = 0; j < 4; j++) free(first[j]);
    free(a), free(at), free(x), free(y);
  }
}

/* gemv writes y through beta = 0 over an output whose memory may hold
 * anything (a recycled block): a NaN in x reaches its rows, nothing else does */
TEST(matrix_vector_nan_reaches_only_its_products) {
  ty_runtime *rt = make_rt(3);
  const int64_t m = 600, k = 40, sa[2] = {m, k};
  double *a = calloc((size_t)(m * k), sizeof *a), x[40];
  for (int64_t i = 0; i < m; i++) a[i * k + i % k] = 1.0;
  for (int p = 0; p < k; p++) x[p] = p == 7 ? NAN : (double)p;
  for (int rep = 0; rep < 3; rep++) { /* later reps reuse freed blocks */
    ty_store *A = mk(rt, 2, sa, a), *X = mk(rt, 1, &k, x), *r = NULL;
    REQ(rt, ty_matmul(rt, A, X, &r));
    double got[600];
    REQ(rt, ty_store_read(rt, r, got, sizeof got));
    /* 0 * NaN is NaN: every row multiplies x[7] */
    for (int64_t i = 0; i < m; i++) CHECK(got[i] != got[i]);
    ty_store_release(A), ty_store_release(X), ty_store_release(r);
  }
  for (int p = 0; p < k; p++) x[p] = (double)p;
  ty_store *A = mk(rt, 2, sa, a), *X = mk(rt, 1, &k, x), *r = NULL;
  REQ(rt, ty_matmul(rt, A, X, &r));
  double got[600];
  REQ(rt, ty_store_read(rt, r, got, sizeof got));
  for (int64_t i = 0; i < m; i++) CHECK(got[i] == (double)(i % k));
  ty_store_release(A), ty_store_release(X), ty_store_release(r);
  free(a);
  ty_runtime_destroy(rt);
}

static const check_case cases[] = {
    CASE(short_row_min_max_follow_the_row_rule),
    CASE(short_row_argmin_argmax_take_the_first),
    CASE(short_row_kernels_for_every_dtype),
    CASE(matrix_vector_products_match_a_plain_loop),
    CASE(matrix_vector_nan_reaches_only_its_products),
};
CHECK_MAIN(cases)
