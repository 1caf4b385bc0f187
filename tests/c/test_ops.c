/*
 * test_ops.c — the built-in operations (ops.c) and their kernels
 * (kernels_*.c, iter.c): values are checked exactly, or against plain C loops
 * with tight tolerances, for every op and dtype path, and runtimes with 1, 2,
 * 3 and 8 processors must agree (pieces only decide who computes what).
 * Arrays in the multi-processor cases are above 64 KiB per piece so that the
 * runtime really splits them (the tests check stats.pieces).
 */
#include "check.h"
#include "req.h"
#include "internal.h"
#include "kernels.h"

#include <tycho/task.h>
#include <tycho/tycho.h>

#include <float.h>
#include <math.h>
#include <stdint.h>

static const int cpu_counts[] = {1, 2, 3, 8};
#define NCPUS ((int)(sizeof cpu_counts / sizeof cpu_counts[0]))

/* A failed setup step ends the test case at once (later steps would only
 * dereference NULL stores). */

static ty_runtime *make_rt(int cpus) {
  ty_config cfg = {.cpus = cpus};
  cfg.policy.set = TY_POL_FUSE; /* one launch per op: these test the kernels, and count pieces */
  cfg.policy.fuse = false;
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) {
    fprintf(stderr, "cannot create a runtime\n");
    exit(1);
  }
  return rt;
}

/* A store of dtype t holding `vals` converted (the core's scalar rules). */
static ty_store *mk(ty_runtime *rt, ty_dtype t, int nd, const int64_t *shape, const double *vals) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  size_t es = ty_dtype_size(t);
  char *buf = malloc((size_t)n * es + 1);
  for (int64_t i = 0; i < n; i++) ty__store_f64(buf + i * (int64_t)es, t, vals[i]);
  ty_store *s = NULL;
  REQ(rt, ty_store_from_buffer(rt, t, nd, shape, buf, &s));
  free(buf);
  return s;
}

static ty_store *mk1(ty_runtime *rt, ty_dtype t, int64_t n, const double *vals) {
  return mk(rt, t, 1, &n, vals);
}

static ty_store *scalar(ty_runtime *rt, ty_dtype t, double v) {
  ty_store *s = NULL;
  REQ(rt, ty_scalar_f64(rt, t, v, &s));
  return s;
}

/* The store's elements (C order) as doubles / int64; malloc'd. */
static double *get_f64(ty_runtime *rt, ty_store *s) {
  ty_dtype t = ty_store_dtype(s);
  int64_t n = ty_store_size(s);
  size_t es = ty_dtype_size(t);
  char *raw = malloc((size_t)n * es + 1);
  REQ(rt, ty_store_read(rt, s, raw, (size_t)n * es));
  double *out = malloc((size_t)n * sizeof(double) + 1);
  for (int64_t i = 0; i < n; i++) out[i] = ty__load_f64(raw + i * (int64_t)es, t);
  free(raw);
  return out;
}

static int64_t *get_i64(ty_runtime *rt, ty_store *s) {
  ty_dtype t = ty_store_dtype(s);
  int64_t n = ty_store_size(s);
  size_t es = ty_dtype_size(t);
  char *raw = malloc((size_t)n * es + 1);
  REQ(rt, ty_store_read(rt, s, raw, (size_t)n * es));
  int64_t *out = malloc((size_t)n * sizeof(int64_t) + 1);
  for (int64_t i = 0; i < n; i++) out[i] = ty__load_i64(raw + i * (int64_t)es, t);
  free(raw);
  return out;
}

static double item_f64(ty_runtime *rt, ty_store *s) {
  ty_value v;
  REQ(rt, ty_item(rt, s, &v));
  return v.f;
}

static int64_t item_i64(ty_runtime *rt, ty_store *s) {
  ty_value v;
  REQ(rt, ty_item(rt, s, &v));
  return v.i;
}

/* Temporaries of expression-style tests: released together by drop_tmp(). */
static ty_store *tmp_pool[512];
static int tmp_n;
static ty_store *tmp(ty_store *s) {
  if (tmp_n == (int)(sizeof tmp_pool / sizeof tmp_pool[0])) {
    fprintf(stderr, "test_ops: temporary pool full\n");
    exit(1);
  }
  tmp_pool[tmp_n++] = s;
  return s;
}
static void drop_tmp(void) {
  while (tmp_n > 0) ty_store_release(tmp_pool[--tmp_n]);
}

static ty_store *bin(ty_runtime *rt, ty_op op, ty_store *a, ty_store *b) {
  ty_store *r = NULL;
  REQ(rt, ty_binary(rt, op, a, b, &r));
  return r;
}

static ty_store *un(ty_runtime *rt, ty_op op, ty_store *a) {
  ty_store *r = NULL;
  REQ(rt, ty_unary(rt, op, a, &r));
  return r;
}

static ty_store *red(ty_runtime *rt, ty_reduce_op op, ty_store *a, int axis) {
  ty_store *r = NULL;
  REQ(rt, ty_reduce(rt, op, a, axis, &r));
  return r;
}

/* Deterministic test data (not tycho's generator): a small LCG in [lo, hi). */
static void fill_lcg(double *v, int64_t n, uint64_t seed, double lo, double hi) {
  uint64_t x = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (int64_t i = 0; i < n; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    v[i] = lo + (hi - lo) * (double)(x >> 11) * 0x1.0p-53;
  }
}

static uint64_t pieces_run(ty_runtime *rt) {
  ty_stats st;
  ty_get_stats(rt, &st);
  return st.pieces;
}

/* ---- iteration ------------------------------------------------------------------ */

typedef struct rec {
  int calls;
  int64_t ns[8];
  int64_t s0[8];
} rec;

static void record(int64_t n, char **p, const int64_t *s, const void *aux) {
  (void)p;
  rec *r = (rec *)aux;
  if (r->calls < 8) {
    r->ns[r->calls] = n;
    r->s0[r->calls] = s[0];
  }
  r->calls++;
}

TEST(foreach_collapses_contiguous_dims) {
  char buf[1024];
  char *base[2] = {buf, buf};
  /* contiguous (3, 4) f64 against a row broadcast (stride 0 on dim 0): the row
   * operand blocks the merge, so 3 runs of 4 */
  int64_t shape[2] = {3, 4};
  int64_t st[2][TY_MAX_RANK] = {{32, 8}, {0, 8}};
  rec r = {0};
  ty__foreach(2, shape, 2, base, (const int64_t(*)[TY_MAX_RANK])st, record, &r);
  CHECK_EQ_INT(r.calls, 3);
  CHECK_EQ_INT(r.ns[0], 4);
  /* both contiguous: one run of 12 */
  int64_t st2[2][TY_MAX_RANK] = {{32, 8}, {32, 8}};
  memset(&r, 0, sizeof r);
  ty__foreach(2, shape, 2, base, (const int64_t(*)[TY_MAX_RANK])st2, record, &r);
  CHECK_EQ_INT(r.calls, 1);
  CHECK_EQ_INT(r.ns[0], 12);
  CHECK_EQ_INT(r.s0[0], 8);
  /* size-1 dims vanish, whatever their strides: (1, 3, 1, 4) -> one run of 12 */
  int64_t shape4[4] = {1, 3, 1, 4};
  int64_t st4[1][TY_MAX_RANK] = {{999, 32, 777, 8}};
  memset(&r, 0, sizeof r);
  ty__foreach(4, shape4, 1, base, (const int64_t(*)[TY_MAX_RANK])st4, record, &r);
  CHECK_EQ_INT(r.calls, 1);
  CHECK_EQ_INT(r.ns[0], 12);
  /* a zero extent: no call; 0-d: one call with n = 1 */
  int64_t shape0[2] = {3, 0};
  memset(&r, 0, sizeof r);
  ty__foreach(2, shape0, 2, base, (const int64_t(*)[TY_MAX_RANK])st2, record, &r);
  CHECK_EQ_INT(r.calls, 0);
  memset(&r, 0, sizeof r);
  ty__foreach(0, NULL, 2, base, (const int64_t(*)[TY_MAX_RANK])st2, record, &r);
  CHECK_EQ_INT(r.calls, 1);
  CHECK_EQ_INT(r.ns[0], 1);
  /* a transposed operand: runs along the last dim with its stride */
  int64_t stt[2][TY_MAX_RANK] = {{32, 8}, {8, 24}};
  memset(&r, 0, sizeof r);
  ty__foreach(2, shape, 2, base, (const int64_t(*)[TY_MAX_RANK])stt, record, &r);
  CHECK_EQ_INT(r.calls, 3);
  CHECK_EQ_INT(r.ns[2], 4);
}

/* ---- names and registration ---------------------------------------------------------- */

TEST(every_op_is_a_registered_task) {
  ty_runtime *rt = make_rt(1);
  CHECK(strcmp(ty_op_name(TY_OP_ADD), "add") == 0);
  CHECK(strcmp(ty_op_name(TY_OP_EXP), "exp") == 0);
  CHECK(strcmp(ty_op_name(TY_OP_MAXIMUM), "maximum") == 0);
  CHECK(strcmp(ty_op_name((ty_op)99), "?") == 0);
  CHECK(strcmp(ty_reduce_name(TY_RED_ARGMAX), "argmax") == 0);
  CHECK(strcmp(ty_reduce_name(TY_RED_MEAN), "mean") == 0);
  for (int op = 0; op < TY_NOPS; op++) CHECK(ty_task_find(rt, ty_op_name((ty_op)op)) != NULL);
  const char *names[] = {"sum", "prod", "min", "max", "argmin", "argmax", "matmul", "fill",
                         "copy", "cast", "where", "random", "arange", "linspace"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    CHECK(ty_task_find(rt, names[i]) != NULL);
  ty_runtime_destroy(rt);
}

/* ---- element-wise ---------------------------------------------------------------------- */

TEST(binary_broadcasts_row_against_matrix) {
  /* (600, 300) + (300,): big enough for 8 pieces */
  const int64_t R = 600, C = 300;
  double *m = malloc(sizeof(double) * R * C), *row = malloc(sizeof(double) * C);
  fill_lcg(m, R * C, 1, -5, 5);
  fill_lcg(row, C, 2, -5, 5);
  for (int ci = 0; ci < NCPUS; ci++) {
    ty_runtime *rt = make_rt(cpu_counts[ci]);
    int64_t shape[2] = {R, C};
    ty_store *a = mk(rt, TY_F64, 2, shape, m), *b = mk1(rt, TY_F64, C, row);
    ty_store *s = bin(rt, TY_OP_ADD, a, b), *d = bin(rt, TY_OP_SUB, b, a);
    CHECK_EQ_INT(ty_store_ndim(s), 2);
    CHECK_EQ_INT(ty_store_shape(s)[0], R);
    double *vs = get_f64(rt, s), *vd = get_f64(rt, d);
    int bad = 0;
    for (int64_t i = 0; i < R; i++)
      for (int64_t j = 0; j < C; j++) {
        bad += vs[i * C + j] != m[i * C + j] + row[j];
        bad += vd[i * C + j] != row[j] - m[i * C + j];
      }
    CHECK_EQ_INT(bad, 0);
    if (cpu_counts[ci] > 1) CHECK(pieces_run(rt) > 2);
    free(vs);
    free(vd);
    ty_store_release(a);
    ty_store_release(b);
    ty_store_release(s);
    ty_store_release(d);
    ty_runtime_destroy(rt);
  }
  free(m);
  free(row);
}

TEST(binary_shape_mismatch_names_shapes) {
  ty_runtime *rt = make_rt(2);
  int64_t s1[2] = {3, 4};
  double z[12] = {0};
  ty_store *a = mk(rt, TY_F64, 2, s1, z), *b = mk1(rt, TY_F64, 5, z), *r = NULL;
  CHECK(ty_binary(rt, TY_OP_ADD, a, b, &r) == TY_ESHAPE);
  CHECK(r == NULL);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "ty_binary: shapes (3, 4) and (5,) do not broadcast");
  CHECK(ty_binary(rt, TY_OP_EXP, a, a, &r) == TY_EINVAL);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "not a binary operation");
  CHECK(ty_unary(rt, TY_OP_ADD, a, &r) == TY_EINVAL);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "ty_unary");
  CHECK(ty_binary(rt, TY_OP_ADD, a, NULL, &r) == TY_EINVAL);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "ty_binary: b is NULL");
  CHECK(ty_where(rt, a, a, b, &r) == TY_ESHAPE);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "ty_where: shapes (3, 4), (3, 4) and (5,)");
  CHECK(ty_cast(rt, a, (ty_dtype)42, &r) == TY_EDTYPE);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "ty_cast: unknown dtype 42");
  /* the runtime keeps working */
  ty_store *ok = bin(rt, TY_OP_ADD, a, a);
  CHECK_EQ_INT(item_f64(rt, tmp(red(rt, TY_RED_SUM, ok, -1))) == 0, 1);
  drop_tmp();
  ty_store_release(ok);
  ty_store_release(a);
  ty_store_release(b);
  ty_runtime_destroy(rt);
}

/* add sub mul min max for each dtype against C; ints wrap. */
TEST(arithmetic_matches_loops_for_every_dtype) {
  ty_runtime *rt = make_rt(3);
  const double av[6] = {1, -2, 3, 100, 0, 7}, bv[6] = {4, 5, -6, 100, 1, -7};
  const ty_dtype types[5] = {TY_F64, TY_F32, TY_I64, TY_I32, TY_U8};
  for (int ti = 0; ti < 5; ti++) {
    ty_dtype t = types[ti];
    ty_store *a = mk1(rt, t, 6, av), *b = mk1(rt, t, 6, bv);
    double ra[6], rb[6];
    for (int i = 0; i < 6; i++) { /* the values as stored (u8 wraps -2 to 254) */
      char tmp[8];
      ty__store_f64(tmp, t, av[i]);
      ra[i] = ty__load_f64(tmp, t);
      ty__store_f64(tmp, t, bv[i]);
      rb[i] = ty__load_f64(tmp, t);
    }
    ty_op ops[5] = {TY_OP_ADD, TY_OP_SUB, TY_OP_MUL, TY_OP_MAXIMUM, TY_OP_MINIMUM};
    for (int k = 0; k < 5; k++) {
      ty_store *r = bin(rt, ops[k], a, b);
      CHECK(ty_store_dtype(r) == t);
      double *v = get_f64(rt, r);
      for (int i = 0; i < 6; i++) {
        double e = ops[k] == TY_OP_ADD   ? ra[i] + rb[i]
                   : ops[k] == TY_OP_SUB ? ra[i] - rb[i]
                   : ops[k] == TY_OP_MUL ? ra[i] * rb[i]
                   : ops[k] == TY_OP_MAXIMUM ? fmax(ra[i], rb[i])
                                             : fmin(ra[i], rb[i]);
        if (t == TY_U8) e = (double)(uint8_t)(int64_t)e;
        if (v[i] != e) {
          fprintf(stderr, "%s %s [%d]: %g != %g\n", ty_dtype_name(t), ty_op_name(ops[k]), i, v[i], e);
          CHECK(v[i] == e);
        }
      }
      free(v);
      ty_store_release(r);
    }
    ty_store_release(a);
    ty_store_release(b);
  }
  ty_runtime_destroy(rt);
}

TEST(int_arithmetic_wraps_without_ub) {
  ty_runtime *rt = make_rt(1);
  int64_t big[2] = {INT64_MAX, INT64_MIN}, one[2] = {1, 1}, n = 2;
  ty_store *a, *b;
  REQ(rt, ty_store_from_buffer(rt, TY_I64, 1, &n, big, &a));
  REQ(rt, ty_store_from_buffer(rt, TY_I64, 1, &n, one, &b));
  ty_store *s = bin(rt, TY_OP_ADD, a, b), *d = bin(rt, TY_OP_SUB, a, b), *m = bin(rt, TY_OP_MUL, a, a);
  ty_store *ng = un(rt, TY_OP_NEG, a), *ab = un(rt, TY_OP_ABS, a);
  int64_t *vs = get_i64(rt, s), *vd = get_i64(rt, d), *vm = get_i64(rt, m);
  int64_t *vn = get_i64(rt, ng), *va = get_i64(rt, ab);
  CHECK(vs[0] == INT64_MIN && vs[1] == INT64_MIN + 1);
  CHECK(vd[0] == INT64_MAX - 1 && vd[1] == INT64_MAX);
  CHECK(vm[0] == 1 && vm[1] == 0);
  CHECK(vn[0] == INT64_MIN + 1 && vn[1] == INT64_MIN);
  CHECK(va[0] == INT64_MAX && va[1] == INT64_MIN);
  int32_t b32[2] = {INT32_MAX, INT32_MIN};
  ty_store *c;
  REQ(rt, ty_store_from_buffer(rt, TY_I32, 1, &n, b32, &c));
  ty_store *c1 = scalar(rt, TY_I32, 1), *cs = bin(rt, TY_OP_ADD, c, c1), *cn = un(rt, TY_OP_NEG, c);
  int64_t *vcs = get_i64(rt, cs), *vcn = get_i64(rt, cn);
  CHECK(vcs[0] == INT32_MIN && vcs[1] == INT32_MIN + 1);
  CHECK(vcn[0] == -INT32_MAX && vcn[1] == INT32_MIN);
  free(vs), free(vd), free(vm), free(vn), free(va), free(vcs), free(vcn);
  ty_store *all[] = {a, b, s, d, m, ng, ab, c, c1, cs, cn};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ty_store_release(all[i]);
  ty_runtime_destroy(rt);
}

TEST(div_of_ints_is_f64) {
  ty_runtime *rt = make_rt(2);
  const double av[4] = {7, -7, 1, 0}, bv[4] = {2, 2, 0, 0};
  ty_store *a = mk1(rt, TY_I64, 4, av), *b = mk1(rt, TY_I32, 4, bv);
  ty_store *q = bin(rt, TY_OP_DIV, a, b);
  CHECK(ty_store_dtype(q) == TY_F64);
  double *v = get_f64(rt, q);
  CHECK(v[0] == 3.5 && v[1] == -3.5 && isinf(v[2]) && v[2] > 0 && isnan(v[3]));
  free(v);
  /* f32 / u8 stays f32; bool / bool is f64 */
  ty_store *f = mk1(rt, TY_F32, 4, av), *u = mk1(rt, TY_U8, 4, bv), *fq = bin(rt, TY_OP_DIV, f, u);
  CHECK(ty_store_dtype(fq) == TY_F32);
  ty_store *t = mk1(rt, TY_BOOL, 4, av), *tq = bin(rt, TY_OP_DIV, t, t);
  CHECK(ty_store_dtype(tq) == TY_F64);
  double *vt = get_f64(rt, tq);
  CHECK(vt[0] == 1 && isnan(vt[3]));
  free(vt);
  ty_store *all[] = {a, b, q, f, u, fq, t, tq};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ty_store_release(all[i]);
  ty_runtime_destroy(rt);
}

TEST(mod_follows_divisor_sign) {
  ty_runtime *rt = make_rt(2);
  const double av[6] = {7, -7, 7, -7, 6, -6}, bv[6] = {3, 3, -3, -3, 3, 3};
  const double expect[6] = {1, 2, -2, -1, 0, 0};
  const ty_dtype types[4] = {TY_F64, TY_F32, TY_I64, TY_I32};
  for (int ti = 0; ti < 4; ti++) {
    ty_store *a = mk1(rt, types[ti], 6, av), *b = mk1(rt, types[ti], 6, bv);
    ty_store *r = bin(rt, TY_OP_MOD, a, b);
    CHECK(ty_store_dtype(r) == types[ti]);
    double *v = get_f64(rt, r);
    for (int i = 0; i < 6; i++) CHECK(v[i] == expect[i]);
    free(v);
    ty_store_release(a), ty_store_release(b), ty_store_release(r);
  }
  /* floats: fractional parts, zero takes the divisor's sign, x % 0 is NaN */
  const double fa[4] = {-7.5, 7.5, -6, 1}, fb[4] = {2, -2, -3, 0};
  ty_store *a = mk1(rt, TY_F64, 4, fa), *b = mk1(rt, TY_F64, 4, fb), *r = bin(rt, TY_OP_MOD, a, b);
  double *v = get_f64(rt, r);
  CHECK(v[0] == 0.5 && v[1] == -0.5 && v[2] == 0 && signbit(v[2]) && isnan(v[3]));
  free(v);
  /* u8 */
  const double ua[3] = {250, 7, 9}, ub[3] = {7, 250, 0};
  ty_store *u = mk1(rt, TY_U8, 3, ua), *w = mk1(rt, TY_U8, 3, ub), *ur = bin(rt, TY_OP_MOD, u, w);
  int64_t *vu = get_i64(rt, ur);
  CHECK(vu[0] == 5 && vu[1] == 7 && vu[2] == 0);
  free(vu);
  ty_store_release(a), ty_store_release(b), ty_store_release(r);
  ty_store_release(u), ty_store_release(w), ty_store_release(ur);
  ty_runtime_destroy(rt);
}

TEST(int_mod_by_zero_is_zero) {
  ty_runtime *rt = make_rt(1);
  int64_t av[4] = {5, INT64_MIN, -5, 0}, bv[4] = {0, -1, 0, 0}, n = 4;
  ty_store *a, *b;
  REQ(rt, ty_store_from_buffer(rt, TY_I64, 1, &n, av, &a));
  REQ(rt, ty_store_from_buffer(rt, TY_I64, 1, &n, bv, &b));
  ty_store *r = bin(rt, TY_OP_MOD, a, b);
  int64_t *v = get_i64(rt, r);
  CHECK(v[0] == 0 && v[1] == 0 && v[2] == 0 && v[3] == 0);
  free(v);
  int32_t a32[2] = {INT32_MIN, 9}, b32[2] = {-1, 0};
  int64_t n2 = 2;
  ty_store *c, *d;
  REQ(rt, ty_store_from_buffer(rt, TY_I32, 1, &n2, a32, &c));
  REQ(rt, ty_store_from_buffer(rt, TY_I32, 1, &n2, b32, &d));
  ty_store *cr = bin(rt, TY_OP_MOD, c, d);
  int64_t *vc = get_i64(rt, cr);
  CHECK(vc[0] == 0 && vc[1] == 0);
  free(vc);
  /* bool % bool computes in i64 */
  const double tv[2] = {1, 1}, fv[2] = {1, 0};
  ty_store *t = mk1(rt, TY_BOOL, 2, tv), *f = mk1(rt, TY_BOOL, 2, fv), *tr = bin(rt, TY_OP_MOD, t, f);
  CHECK(ty_store_dtype(tr) == TY_I64);
  int64_t *vt = get_i64(rt, tr);
  CHECK(vt[0] == 0 && vt[1] == 0);
  free(vt);
  ty_store *all[] = {a, b, r, c, d, cr, t, f, tr};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ty_store_release(all[i]);
  ty_runtime_destroy(rt);
}

TEST(pow_is_float_and_squares_exactly) {
  ty_runtime *rt = make_rt(2);
  const int64_t N = 1001;
  double *x = malloc(sizeof(double) * N);
  fill_lcg(x, N, 3, -3, 3);
  ty_store *a = mk1(rt, TY_F64, N, x), *two = scalar(rt, TY_F64, 2), *half = scalar(rt, TY_F64, 0.5);
  ty_store *sq = bin(rt, TY_OP_POW, a, two), *ab = un(rt, TY_OP_ABS, a), *rt2 = bin(rt, TY_OP_POW, ab, half);
  ty_store *p = bin(rt, TY_OP_POW, two, a); /* scalar base, array exponent */
  double *vs = get_f64(rt, sq), *vr = get_f64(rt, rt2), *vp = get_f64(rt, p);
  int bad = 0;
  for (int64_t i = 0; i < N; i++) {
    bad += vs[i] != x[i] * x[i];
    bad += fabs(vr[i] - pow(fabs(x[i]), 0.5)) > 5e-16 * fabs(pow(fabs(x[i]), 0.5));
    bad += fabs(vp[i] - pow(2, x[i])) > 5e-16 * pow(2, x[i]);
  }
  CHECK_EQ_INT(bad, 0);
  free(vs), free(vr), free(vp);
  /* integers: pow is f64 */
  const double iv[3] = {2, 3, -2}, ev[3] = {10, -1, 3};
  ty_store *i = mk1(rt, TY_I64, 3, iv), *e = mk1(rt, TY_I32, 3, ev), *ip = bin(rt, TY_OP_POW, i, e);
  CHECK(ty_store_dtype(ip) == TY_F64);
  double *vi = get_f64(rt, ip);
  CHECK(vi[0] == 1024 && fabs(vi[1] - 1.0 / 3) < 1e-16 && vi[2] == -8);
  free(vi);
  /* f32 */
  ty_store *f = mk1(rt, TY_F32, 3, iv), *fe = mk1(rt, TY_F32, 3, ev), *fp = bin(rt, TY_OP_POW, f, fe);
  CHECK(ty_store_dtype(fp) == TY_F32);
  double *vf = get_f64(rt, fp);
  CHECK(vf[0] == 1024 && fabs(vf[1] - 1.0 / 3) < 1e-7 && vf[2] == -8);
  free(vf);
  ty_store *all[] = {a, two, half, sq, ab, rt2, p, i, e, ip, f, fe, fp};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) ty_store_release(all[k]);
  free(x);
  ty_runtime_destroy(rt);
}

/* exp log sin cos tanh sqrt, f64 and f32, contiguous (with a tail that is
 * not a multiple of the vector width) and strided (a step-3 slice). */
TEST(unary_math_matches_libm) {
  ty_runtime *rt = make_rt(3);
  const int64_t N = 30011;
  double *x = malloc(sizeof(double) * N);
  fill_lcg(x, N, 4, 0.01, 20);
  ty_op ops[6] = {TY_OP_EXP, TY_OP_LOG, TY_OP_SIN, TY_OP_COS, TY_OP_TANH, TY_OP_SQRT};
  double (*ref[6])(double) = {exp, log, sin, cos, tanh, sqrt};
  for (int ti = 0; ti < 2; ti++) {
    ty_dtype t = ti ? TY_F32 : TY_F64;
    /* SLEEF and glibc are each within 1 ULP: allow ~2.5 ULP between them,
     * relative to max(1, |ref|) */
    double tol = ti ? 3e-7 : 6e-16;
    ty_store *a = mk1(rt, t, N, x), *sl = NULL;
    REQ(rt, ty_store_slice(rt, a, 0, 1, N, 3, &sl));
    for (int k = 0; k < 6; k++) {
      ty_store *r = un(rt, ops[k], a), *rs = un(rt, ops[k], sl);
      CHECK(ty_store_dtype(r) == t);
      double *v = get_f64(rt, r), *vs = get_f64(rt, rs);
      int bad = 0;
      for (int64_t i = 0; i < N; i++) {
        double xi = ti ? (double)(float)x[i] : x[i];
        double e = ti ? (double)(float)ref[k](xi) : ref[k](xi);
        double s = fabs(e) > 1 ? fabs(e) : 1;
        if (fabs(v[i] - e) > tol * s) bad++;
        if (i % 3 == 1 && fabs(vs[i / 3] - e) > tol * s) bad++;
      }
      if (bad) fprintf(stderr, "%s %s: %d mismatches\n", ty_op_name(ops[k]), ty_dtype_name(t), bad);
      CHECK_EQ_INT(bad, 0);
      free(v), free(vs);
      ty_store_release(r), ty_store_release(rs);
    }
    ty_store_release(a), ty_store_release(sl);
  }
  /* integers compute in f64; special values */
  const double iv[4] = {0, 1, 4, 9};
  ty_store *i = mk1(rt, TY_I32, 4, iv), *si = un(rt, TY_OP_SQRT, i), *li = un(rt, TY_OP_LOG, i);
  CHECK(ty_store_dtype(si) == TY_F64);
  double *vsi = get_f64(rt, si), *vli = get_f64(rt, li);
  CHECK(vsi[0] == 0 && vsi[1] == 1 && vsi[2] == 2 && vsi[3] == 3);
  CHECK(isinf(vli[0]) && vli[0] < 0 && vli[1] == 0);
  free(vsi), free(vli);
  const double sp[4] = {-1, INFINITY, -INFINITY, NAN};
  ty_store *s = mk1(rt, TY_F64, 4, sp), *ls = un(rt, TY_OP_LOG, s), *es = un(rt, TY_OP_EXP, s), *qs = un(rt, TY_OP_SQRT, s);
  double *vl = get_f64(rt, ls), *ve = get_f64(rt, es), *vq = get_f64(rt, qs);
  CHECK(isnan(vl[0]) && isinf(vl[1]) && isnan(vl[3]));
  CHECK(ve[1] == INFINITY && ve[2] == 0 && isnan(ve[3]));
  CHECK(isnan(vq[0]) && vq[1] == INFINITY && isnan(vq[3]));
  free(vl), free(ve), free(vq);
  ty_store *all[] = {i, si, li, s, ls, es, qs};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) ty_store_release(all[k]);
  free(x);
  ty_runtime_destroy(rt);
}

TEST(neg_abs_floor_ceil_keep_int_dtypes) {
  ty_runtime *rt = make_rt(2);
  const double v[5] = {-2.5, -0.5, 0, 1.5, 3};
  ty_store *f = mk1(rt, TY_F64, 5, v), *g = mk1(rt, TY_F32, 5, v);
  ty_store *fl = un(rt, TY_OP_FLOOR, f), *ce = un(rt, TY_OP_CEIL, f), *ab = un(rt, TY_OP_ABS, f), *ng = un(rt, TY_OP_NEG, f);
  ty_store *gfl = un(rt, TY_OP_FLOOR, g), *gce = un(rt, TY_OP_CEIL, g), *gab = un(rt, TY_OP_ABS, g), *gng = un(rt, TY_OP_NEG, g);
  double *a1 = get_f64(rt, fl), *a2 = get_f64(rt, ce), *a3 = get_f64(rt, ab), *a4 = get_f64(rt, ng);
  double *b1 = get_f64(rt, gfl), *b2 = get_f64(rt, gce), *b3 = get_f64(rt, gab), *b4 = get_f64(rt, gng);
  for (int i = 0; i < 5; i++) {
    CHECK(a1[i] == floor(v[i]) && b1[i] == floor(v[i]));
    CHECK(a2[i] == ceil(v[i]) && b2[i] == ceil(v[i]));
    CHECK(a3[i] == fabs(v[i]) && b3[i] == fabs(v[i]));
    CHECK(a4[i] == -v[i] && b4[i] == -v[i]);
  }
  CHECK(signbit(a2[1])); /* ceil(-0.5) = -0 */
  free(a1), free(a2), free(a3), free(a4), free(b1), free(b2), free(b3), free(b4);
  const ty_dtype types[4] = {TY_I64, TY_I32, TY_U8, TY_BOOL};
  const double iv[3] = {-3, 0, 5};
  for (int ti = 0; ti < 4; ti++) {
    ty_dtype t = types[ti];
    ty_store *x = mk1(rt, t, 3, iv);
    int64_t *xv = get_i64(rt, x);
    ty_op ops[4] = {TY_OP_NEG, TY_OP_ABS, TY_OP_FLOOR, TY_OP_CEIL};
    for (int k = 0; k < 4; k++) {
      ty_store *r = un(rt, ops[k], x);
      ty_dtype want = (ops[k] == TY_OP_NEG && t == TY_BOOL) ? TY_I64 : t;
      CHECK(ty_store_dtype(r) == want);
      int64_t *rv = get_i64(rt, r);
      for (int i = 0; i < 3; i++) {
        int64_t e = ops[k] == TY_OP_NEG ? -xv[i] : ops[k] == TY_OP_ABS ? llabs(xv[i]) : xv[i];
        if (want == TY_U8) e = (uint8_t)e;
        CHECK(rv[i] == e);
      }
      free(rv);
      ty_store_release(r);
    }
    free(xv);
    ty_store_release(x);
  }
  ty_store *all[] = {f, g, fl, ce, ab, ng, gfl, gce, gab, gng};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) ty_store_release(all[k]);
  ty_runtime_destroy(rt);
}

TEST(comparisons_give_bool_and_handle_nan) {
  ty_runtime *rt = make_rt(2);
  const double av[4] = {1, 2, 3, NAN}, bv[4] = {2, 2, 2, 2};
  const ty_dtype types[6] = {TY_F64, TY_F32, TY_I64, TY_I32, TY_U8, TY_BOOL};
  ty_op ops[6] = {TY_OP_LT, TY_OP_LE, TY_OP_GT, TY_OP_GE, TY_OP_EQ, TY_OP_NE};
  for (int ti = 0; ti < 6; ti++) {
    ty_dtype t = types[ti];
    ty_store *a = mk1(rt, t, 4, av), *b = mk1(rt, t, 4, bv);
    double *x = get_f64(rt, a), *y = get_f64(rt, b);
    for (int k = 0; k < 6; k++) {
      ty_store *r = bin(rt, ops[k], a, b);
      CHECK(ty_store_dtype(r) == TY_BOOL);
      int64_t *v = get_i64(rt, r);
      for (int i = 0; i < 4; i++) {
        int e = ops[k] == TY_OP_LT ? x[i] < y[i] : ops[k] == TY_OP_LE ? x[i] <= y[i]
                : ops[k] == TY_OP_GT ? x[i] > y[i] : ops[k] == TY_OP_GE ? x[i] >= y[i]
                : ops[k] == TY_OP_EQ ? x[i] == y[i] : x[i] != y[i];
        CHECK_EQ_INT(v[i], e);
      }
      free(v);
      ty_store_release(r);
    }
    free(x), free(y);
    ty_store_release(a), ty_store_release(b);
  }
  /* mixed dtypes compare in the promoted dtype: 2.5 (f64) > 2 (i64) */
  const double fv[1] = {2.5}, iv[1] = {2};
  ty_store *f = mk1(rt, TY_F64, 1, fv), *i = mk1(rt, TY_I64, 1, iv), *g = bin(rt, TY_OP_GT, f, i);
  CHECK_EQ_INT(item_i64(rt, g), 1);
  ty_store_release(f), ty_store_release(i), ty_store_release(g);
  ty_runtime_destroy(rt);
}

TEST(maximum_minimum_propagate_nan) {
  ty_runtime *rt = make_rt(1);
  const double av[4] = {NAN, 1, 5, -1}, bv[4] = {1, NAN, 2, -1};
  for (int ti = 0; ti < 2; ti++) {
    ty_dtype t = ti ? TY_F32 : TY_F64;
    ty_store *a = mk1(rt, t, 4, av), *b = mk1(rt, t, 4, bv);
    ty_store *mx = bin(rt, TY_OP_MAXIMUM, a, b), *mn = bin(rt, TY_OP_MINIMUM, a, b);
    double *x = get_f64(rt, mx), *n = get_f64(rt, mn);
    CHECK(isnan(x[0]) && isnan(x[1]) && x[2] == 5 && x[3] == -1);
    CHECK(isnan(n[0]) && isnan(n[1]) && n[2] == 2 && n[3] == -1);
    free(x), free(n);
    ty_store_release(a), ty_store_release(b), ty_store_release(mx), ty_store_release(mn);
  }
  /* bools: maximum is or, minimum is and, result stays bool */
  const double p[4] = {0, 0, 1, 1}, q[4] = {0, 1, 0, 1};
  ty_store *a = mk1(rt, TY_BOOL, 4, p), *b = mk1(rt, TY_BOOL, 4, q);
  ty_store *mx = bin(rt, TY_OP_MAXIMUM, a, b), *mn = bin(rt, TY_OP_MINIMUM, a, b);
  CHECK(ty_store_dtype(mx) == TY_BOOL);
  int64_t *x = get_i64(rt, mx), *n = get_i64(rt, mn);
  CHECK(x[0] == 0 && x[1] == 1 && x[2] == 1 && x[3] == 1);
  CHECK(n[0] == 0 && n[1] == 0 && n[2] == 0 && n[3] == 1);
  free(x), free(n);
  ty_store_release(a), ty_store_release(b), ty_store_release(mx), ty_store_release(mn);
  ty_runtime_destroy(rt);
}

TEST(logical_ops_treat_nonzero_and_nan_as_true) {
  ty_runtime *rt = make_rt(1);
  const double av[4] = {0, 2.5, NAN, -1}, bv[4] = {0, 0, 3, 7};
  for (int ti = 0; ti < 6; ti++) {
    ty_dtype t = (ty_dtype)ti;
    ty_store *a = mk1(rt, t, 4, av), *b = mk1(rt, t, 4, bv);
    double *x = get_f64(rt, a), *y = get_f64(rt, b);
    ty_store *n = un(rt, TY_OP_NOT, a), *an = bin(rt, TY_OP_AND, a, b), *o = bin(rt, TY_OP_OR, a, b);
    CHECK(ty_store_dtype(n) == TY_BOOL && ty_store_dtype(an) == TY_BOOL);
    int64_t *vn = get_i64(rt, n), *va = get_i64(rt, an), *vo = get_i64(rt, o);
    for (int i = 0; i < 4; i++) {
      CHECK_EQ_INT(vn[i], x[i] == 0);
      CHECK_EQ_INT(va[i], x[i] != 0 && y[i] != 0);
      CHECK_EQ_INT(vo[i], x[i] != 0 || y[i] != 0);
    }
    free(x), free(y), free(vn), free(va), free(vo);
    ty_store *all[] = {a, b, n, an, o};
    for (size_t k = 0; k < 5; k++) ty_store_release(all[k]);
  }
  ty_runtime_destroy(rt);
}

TEST(where_selects_with_broadcast) {
  ty_runtime *rt = make_rt(2);
  const double cv[3] = {1, 0, 7}, bv[4] = {10, 20, 30, 40};
  int64_t cshape[2] = {3, 1};
  ty_store *c = mk(rt, TY_I64, 2, cshape, cv), *a = scalar(rt, TY_F32, -1), *b = mk1(rt, TY_I32, 4, bv);
  ty_store *w = NULL;
  REQ(rt, ty_where(rt, c, a, b, &w));
  CHECK(ty_store_dtype(w) == TY_F64); /* promote(f32, i32) */
  CHECK_EQ_INT(ty_store_ndim(w), 2);
  CHECK_EQ_INT(ty_store_shape(w)[0], 3);
  CHECK_EQ_INT(ty_store_shape(w)[1], 4);
  double *v = get_f64(rt, w);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) CHECK(v[i * 4 + j] == (cv[i] != 0 ? -1 : bv[j]));
  free(v);
  /* every dtype, contiguous operands, NaN condition is true */
  const double cond[4] = {1, 0, NAN, 0}, x[4] = {1, 2, 3, 4}, y[4] = {5, 6, 7, 8};
  for (int ti = 0; ti < 6; ti++) {
    ty_dtype t = (ty_dtype)ti;
    ty_store *cc = mk1(rt, TY_F64, 4, cond), *xx = mk1(rt, t, 4, x), *yy = mk1(rt, t, 4, y), *ww = NULL;
    REQ(rt, ty_where(rt, cc, xx, yy, &ww));
    CHECK(ty_store_dtype(ww) == t);
    double *vw = get_f64(rt, ww), *vx = get_f64(rt, xx), *vy = get_f64(rt, yy);
    CHECK(vw[0] == vx[0] && vw[1] == vy[1] && vw[2] == vx[2] && vw[3] == vy[3]);
    free(vw), free(vx), free(vy);
    ty_store_release(cc), ty_store_release(xx), ty_store_release(yy), ty_store_release(ww);
  }
  ty_store_release(c), ty_store_release(a), ty_store_release(b), ty_store_release(w);
  ty_runtime_destroy(rt);
}

/* ---- casts ------------------------------------------------------------------------------ */

TEST(cast_float_to_int_saturates) {
  ty_runtime *rt = make_rt(1);
  const double v[9] = {NAN, 1e30, -1e30, -3.7, 3.7, 300, -5, 3e9, -0.5};
  ty_store *f = mk1(rt, TY_F64, 9, v), *g = mk1(rt, TY_F32, 9, v);
  for (int src = 0; src < 2; src++) {
    ty_store *x = src ? g : f;
    ty_store *i64, *i32, *u8, *b;
    REQ(rt, ty_cast(rt, x, TY_I64, &i64));
    REQ(rt, ty_cast(rt, x, TY_I32, &i32));
    REQ(rt, ty_cast(rt, x, TY_U8, &u8));
    REQ(rt, ty_cast(rt, x, TY_BOOL, &b));
    int64_t *a = get_i64(rt, i64), *c = get_i64(rt, i32), *d = get_i64(rt, u8), *e = get_i64(rt, b);
    CHECK(a[0] == 0 && a[1] == INT64_MAX && a[2] == INT64_MIN && a[3] == -3 && a[4] == 3);
    CHECK(a[5] == 300 && a[6] == -5 && a[7] == 3000000000LL && a[8] == 0);
    CHECK(c[0] == 0 && c[1] == INT32_MAX && c[2] == INT32_MIN && c[3] == -3 && c[7] == INT32_MAX);
    CHECK(d[0] == 0 && d[1] == 255 && d[2] == 0 && d[3] == 0 && d[4] == 3 && d[5] == 255 && d[6] == 0 && d[8] == 0);
    CHECK(e[0] == 1 && e[1] == 1 && e[8] == 1);
    free(a), free(c), free(d), free(e);
    ty_store_release(i64), ty_store_release(i32), ty_store_release(u8), ty_store_release(b);
  }
  ty_store_release(f), ty_store_release(g);
  ty_runtime_destroy(rt);
}

TEST(cast_between_every_dtype_pair) {
  ty_runtime *rt = make_rt(2);
  const double v[4] = {0, 1, 7, 100};
  for (int from = 0; from < TY_NDTYPES; from++)
    for (int to = 0; to < TY_NDTYPES; to++) {
      ty_store *x = mk1(rt, (ty_dtype)from, 4, v), *y = NULL, *sl = NULL, *ys = NULL;
      REQ(rt, ty_cast(rt, x, (ty_dtype)to, &y));
      CHECK(ty_store_dtype(y) == (ty_dtype)to);
      REQ(rt, ty_store_slice(rt, x, 0, 0, 4, 2, &sl)); /* strided source */
      REQ(rt, ty_cast(rt, sl, (ty_dtype)to, &ys));
      double *a = get_f64(rt, y), *b = get_f64(rt, ys);
      for (int i = 0; i < 4; i++) {
        double e = (from == TY_BOOL || to == TY_BOOL) ? (v[i] != 0) : v[i];
        CHECK(a[i] == e);
        if (i % 2 == 0) CHECK(b[i / 2] == e);
      }
      free(a), free(b);
      ty_store_release(x), ty_store_release(y), ty_store_release(sl), ty_store_release(ys);
    }
  /* integer narrowing wraps like numpy */
  int64_t big[3] = {4294967297LL, -1, 256 + 7}, n = 3;
  ty_store *x, *i32, *u8;
  REQ(rt, ty_store_from_buffer(rt, TY_I64, 1, &n, big, &x));
  REQ(rt, ty_cast(rt, x, TY_I32, &i32));
  REQ(rt, ty_cast(rt, x, TY_U8, &u8));
  int64_t *a = get_i64(rt, i32), *b = get_i64(rt, u8);
  CHECK(a[0] == 1 && a[1] == -1 && a[2] == 263);
  CHECK(b[0] == 1 && b[1] == 255 && b[2] == 7);
  free(a), free(b);
  ty_store_release(x), ty_store_release(i32), ty_store_release(u8);
  ty_runtime_destroy(rt);
}

/* ---- reductions ------------------------------------------------------------------------- */

TEST(sum_axis_matches_loop) {
  const int64_t R = 301, C = 503;
  double *m = malloc(sizeof(double) * R * C);
  fill_lcg(m, R * C, 5, -1, 1);
  double *col = calloc((size_t)C, sizeof(double)), *row = calloc((size_t)R, sizeof(double));
  long double tot = 0;
  for (int64_t i = 0; i < R; i++)
    for (int64_t j = 0; j < C; j++) {
      col[j] += m[i * C + j];
      row[i] += m[i * C + j];
      tot += m[i * C + j];
    }
  for (int ci = 0; ci < NCPUS; ci++) {
    ty_runtime *rt = make_rt(cpu_counts[ci]);
    int64_t shape[2] = {R, C};
    ty_store *a = mk(rt, TY_F64, 2, shape, m), *f = mk(rt, TY_F32, 2, shape, m);
    ty_store *s0 = red(rt, TY_RED_SUM, a, 0), *s1 = red(rt, TY_RED_SUM, a, 1), *s = red(rt, TY_RED_SUM, a, -1);
    ty_store *f0 = red(rt, TY_RED_SUM, f, 0), *fs = red(rt, TY_RED_SUM, f, -1);
    CHECK_EQ_INT(ty_store_ndim(s0), 1);
    CHECK_EQ_INT(ty_store_shape(s0)[0], C);
    CHECK_EQ_INT(ty_store_ndim(s), 0);
    CHECK(ty_store_dtype(f0) == TY_F32);
    double *v0 = get_f64(rt, s0), *v1 = get_f64(rt, s1), *vf = get_f64(rt, f0);
    int bad = 0;
    for (int64_t j = 0; j < C; j++) {
      bad += fabs(v0[j] - col[j]) > 1e-13;
      bad += fabs(vf[j] - col[j]) > 1e-4;
    }
    for (int64_t i = 0; i < R; i++) bad += fabs(v1[i] - row[i]) > 1e-13;
    CHECK_EQ_INT(bad, 0);
    CHECK_NEAR(item_f64(rt, s), (double)tot, 1e-12);
    CHECK_NEAR(item_f64(rt, fs), (double)tot, 2e-3);
    /* the transposed view reduces the other way */
    ty_store *t = NULL;
    REQ(rt, ty_store_transpose(rt, a, 0, 1, &t));
    ty_store *t1 = red(rt, TY_RED_SUM, t, 1);
    double *vt = get_f64(rt, t1);
    bad = 0;
    for (int64_t j = 0; j < C; j++) bad += fabs(vt[j] - col[j]) > 1e-13;
    CHECK_EQ_INT(bad, 0);
    if (cpu_counts[ci] > 1) CHECK(pieces_run(rt) > 6);
    free(v0), free(v1), free(vf), free(vt);
    ty_store *all[] = {a, f, s0, s1, s, f0, fs, t, t1};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) ty_store_release(all[k]);
    ty_runtime_destroy(rt);
  }
  free(m), free(col), free(row);
}

/* A short kept dim (3, under ops.c's 16) reduces through private tiles split
 * along the reduced axis (the ordered tiles of kernels.h); a long one through
 * owned outputs: same answers. */
TEST(sum_short_kept_dim_splits_reduced_axis) {
  const int64_t R = 3, C = 100003;
  double *m = malloc(sizeof(double) * R * C);
  fill_lcg(m, R * C, 6, 0, 1);
  double row[3] = {0, 0, 0};
  for (int64_t i = 0; i < R; i++)
    for (int64_t j = 0; j < C; j++) row[i] += m[i * C + j];
  for (int ci = 0; ci < NCPUS; ci++) {
    ty_runtime *rt = make_rt(cpu_counts[ci]);
    int64_t shape[2] = {R, C};
    ty_store *a = mk(rt, TY_F64, 2, shape, m), *s = red(rt, TY_RED_SUM, a, 1);
    ty_store *mx = red(rt, TY_RED_MAX, a, 1), *mn = red(rt, TY_RED_MIN, a, 1);
    double *v = get_f64(rt, s), *vx = get_f64(rt, mx), *vn = get_f64(rt, mn);
    for (int i = 0; i < 3; i++) {
      CHECK_NEAR(v[i], row[i], 1e-12);
      double hi = -INFINITY, lo = INFINITY;
      for (int64_t j = 0; j < C; j++) hi = fmax(hi, m[i * C + j]), lo = fmin(lo, m[i * C + j]);
      CHECK(vx[i] == hi && vn[i] == lo);
    }
    if (cpu_counts[ci] == 8) CHECK(pieces_run(rt) >= 8);
    free(v), free(vx), free(vn);
    ty_store_release(a), ty_store_release(s), ty_store_release(mx), ty_store_release(mn);
    ty_runtime_destroy(rt);
  }
  free(m);
}

TEST(sum_of_ints_is_i64_and_exact) {
  const int64_t N = 200003;
  int32_t *v = malloc(sizeof(int32_t) * N);
  int64_t expect = 0, cnt = 0;
  for (int64_t i = 0; i < N; i++) {
    v[i] = (int32_t)((i * 2654435761u) % 2000000001u) - 1000000000;
    expect += v[i];
    cnt += v[i] > 0;
  }
  for (int ci = 0; ci < NCPUS; ci++) {
    ty_runtime *rt = make_rt(cpu_counts[ci]);
    ty_store *a = NULL;
    REQ(rt, ty_store_from_buffer(rt, TY_I32, 1, &N, v, &a));
    ty_store *s = red(rt, TY_RED_SUM, a, -1);
    CHECK(ty_store_dtype(s) == TY_I64);
    CHECK_EQ_INT(item_i64(rt, s), expect);
    ty_store *zero = scalar(rt, TY_I32, 0), *pos = bin(rt, TY_OP_GT, a, zero), *c = red(rt, TY_RED_SUM, pos, -1);
    CHECK(ty_store_dtype(c) == TY_I64);
    CHECK_EQ_INT(item_i64(rt, c), cnt);
    ty_store *mean = red(rt, TY_RED_MEAN, a, -1);
    CHECK(ty_store_dtype(mean) == TY_F64);
    CHECK_NEAR(item_f64(rt, mean), (double)expect / (double)N, 1e-12);
    ty_store_release(a), ty_store_release(s), ty_store_release(zero), ty_store_release(pos);
    ty_store_release(c), ty_store_release(mean);
    ty_runtime_destroy(rt);
  }
  free(v);
}

TEST(prod_min_max_every_dtype) {
  ty_runtime *rt = make_rt(3);
  const double v[6] = {3, 1, 2, 5, 1, 2}; /* prod 60, min 1, max 5 */
  int64_t shape[2] = {2, 3};
  for (int ti = 0; ti < TY_NDTYPES; ti++) {
    ty_dtype t = (ty_dtype)ti;
    ty_store *a = mk(rt, t, 2, shape, v);
    ty_store *p = red(rt, TY_RED_PROD, a, -1), *mn = red(rt, TY_RED_MIN, a, -1), *mx = red(rt, TY_RED_MAX, a, -1);
    ty_store *p1 = red(rt, TY_RED_PROD, a, 1), *mn0 = red(rt, TY_RED_MIN, a, 0), *mx0 = red(rt, TY_RED_MAX, a, 0);
    CHECK(ty_store_dtype(mn) == t && ty_store_dtype(mx) == t);
    CHECK(ty_store_dtype(p) == (ty_dtype_is_float(t) ? t : ty_dtype_is_unsigned(t) ? TY_U64 : TY_I64));
    bool b = t == TY_BOOL;
    CHECK(item_f64(rt, p) == (b ? 1 : 60));
    CHECK(item_f64(rt, mn) == 1);
    CHECK(item_f64(rt, mx) == (b ? 1 : 5));
    double *vp = get_f64(rt, p1), *vn = get_f64(rt, mn0), *vx = get_f64(rt, mx0);
    CHECK(vp[0] == (b ? 1 : 6) && vp[1] == (b ? 1 : 10));
    CHECK(vn[0] == (b ? 1 : 3) && vn[1] == 1 && vn[2] == (b ? 1 : 2));
    CHECK(vx[0] == (b ? 1 : 5) && vx[1] == 1 && vx[2] == (b ? 1 : 2));
    free(vp), free(vn), free(vx);
    ty_store *all[] = {a, p, mn, mx, p1, mn0, mx0};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) ty_store_release(all[k]);
  }
  /* bool min is "all", max is "any" */
  const double bv[3] = {1, 0, 1};
  ty_store *bb = mk1(rt, TY_BOOL, 3, bv), *all = red(rt, TY_RED_MIN, bb, -1), *any = red(rt, TY_RED_MAX, bb, -1);
  CHECK_EQ_INT(item_i64(rt, all), 0);
  CHECK_EQ_INT(item_i64(rt, any), 1);
  ty_store_release(bb), ty_store_release(all), ty_store_release(any);
  ty_runtime_destroy(rt);
}

TEST(min_max_propagate_nan) {
  const int64_t N = 150000;
  double *v = malloc(sizeof(double) * N);
  fill_lcg(v, N, 7, -1, 1);
  v[123457] = NAN;
  for (int ci = 0; ci < NCPUS; ci++) {
    ty_runtime *rt = make_rt(cpu_counts[ci]);
    ty_store *a = mk1(rt, TY_F64, N, v), *f = mk1(rt, TY_F32, N, v);
    ty_store *mn = red(rt, TY_RED_MIN, a, -1), *mx = red(rt, TY_RED_MAX, a, -1);
    ty_store *fmn = red(rt, TY_RED_MIN, f, 0), *fmx = red(rt, TY_RED_MAX, f, 0);
    ty_store *s = red(rt, TY_RED_SUM, a, -1), *am = red(rt, TY_RED_ARGMIN, a, -1), *ax = red(rt, TY_RED_ARGMAX, a, 0);
    CHECK(isnan(item_f64(rt, mn)) && isnan(item_f64(rt, mx)));
    CHECK(isnan(item_f64(rt, fmn)) && isnan(item_f64(rt, fmx)));
    CHECK(isnan(item_f64(rt, s)));
    CHECK_EQ_INT(item_i64(rt, am), 123457);
    CHECK_EQ_INT(item_i64(rt, ax), 123457);
    ty_store *all[] = {a, f, mn, mx, fmn, fmx, s, am, ax};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) ty_store_release(all[k]);
    ty_runtime_destroy(rt);
  }
  free(v);
}

TEST(argmin_argmax_first_occurrence) {
  ty_runtime *rt = make_rt(3);
  /* 3 x 4 with ties */
  const double v[12] = {5, 1, 1, 9, 9, 2, 9, 0, 3, 3, 3, 3};
  int64_t shape[2] = {3, 4};
  for (int ti = 0; ti < TY_NDTYPES; ti++) {
    ty_dtype t = (ty_dtype)ti;
    if (t == TY_BOOL) continue;
    ty_store *a = mk(rt, t, 2, shape, v);
    ty_store *mn = red(rt, TY_RED_ARGMIN, a, -1), *mx = red(rt, TY_RED_ARGMAX, a, -1);
    ty_store *mn1 = red(rt, TY_RED_ARGMIN, a, 1), *mx0 = red(rt, TY_RED_ARGMAX, a, 0);
    CHECK(ty_store_dtype(mn) == TY_I64);
    CHECK_EQ_INT(item_i64(rt, mn), 7);
    CHECK_EQ_INT(item_i64(rt, mx), 3);
    int64_t *r1 = get_i64(rt, mn1), *r0 = get_i64(rt, mx0);
    CHECK(r1[0] == 1 && r1[1] == 3 && r1[2] == 0);
    CHECK(r0[0] == 1 && r0[1] == 2 && r0[2] == 1 && r0[3] == 0);
    free(r1), free(r0);
    /* over a transposed (non-contiguous) view: the C-order index of the view */
    ty_store *tr = NULL;
    REQ(rt, ty_store_transpose(rt, a, 0, 1, &tr));
    ty_store *tm = red(rt, TY_RED_ARGMIN, tr, -1), *tx = red(rt, TY_RED_ARGMAX, tr, -1);
    CHECK_EQ_INT(item_i64(rt, tm), 3 * 3 + 1); /* element (3, 1) of the 4x3 view */
    CHECK_EQ_INT(item_i64(rt, tx), 0 * 3 + 1); /* first 9 in C order of the view: (0, 1) */
    ty_store *all[] = {a, mn, mx, mn1, mx0, tr, tm, tx};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) ty_store_release(all[k]);
  }
  const double b[4] = {0, 1, 1, 0};
  ty_store *bb = mk1(rt, TY_BOOL, 4, b), *am = red(rt, TY_RED_ARGMAX, bb, -1), *an = red(rt, TY_RED_ARGMIN, bb, 0);
  CHECK_EQ_INT(item_i64(rt, am), 1);
  CHECK_EQ_INT(item_i64(rt, an), 0);
  ty_store *s0 = scalar(rt, TY_F64, 3), *a0 = red(rt, TY_RED_ARGMAX, s0, -1);
  CHECK_EQ_INT(item_i64(rt, a0), 0);
  ty_store_release(bb), ty_store_release(am), ty_store_release(an), ty_store_release(s0), ty_store_release(a0);
  ty_runtime_destroy(rt);
}

TEST(argmax_axis_large_matches_loop) {
  const int64_t R = 700, C = 257;
  double *m = malloc(sizeof(double) * R * C);
  fill_lcg(m, R * C, 8, 0, 1);
  for (int ci = 0; ci < NCPUS; ci++) {
    ty_runtime *rt = make_rt(cpu_counts[ci]);
    int64_t shape[2] = {R, C};
    ty_store *a = mk(rt, TY_F64, 2, shape, m);
    ty_store *x0 = red(rt, TY_RED_ARGMAX, a, 0), *n1 = red(rt, TY_RED_ARGMIN, a, 1);
    int64_t *v0 = get_i64(rt, x0), *v1 = get_i64(rt, n1);
    int bad = 0;
    for (int64_t j = 0; j < C; j++) {
      int64_t best = 0;
      for (int64_t i = 1; i < R; i++)
        if (m[i * C + j] > m[best * C + j]) best = i;
      bad += v0[j] != best;
    }
    for (int64_t i = 0; i < R; i++) {
      int64_t best = 0;
      for (int64_t j = 1; j < C; j++)
        if (m[i * C + j] < m[i * C + best]) best = j;
      bad += v1[i] != best;
    }
    CHECK_EQ_INT(bad, 0);
    free(v0), free(v1);
    ty_store_release(a), ty_store_release(x0), ty_store_release(n1);
    ty_runtime_destroy(rt);
  }
  free(m);
}

TEST(reduce_middle_axis_of_3d_and_scalars) {
  const int64_t D0 = 7, D1 = 500, D2 = 9, N = D0 * D1 * D2;
  double *v = malloc(sizeof(double) * N);
  fill_lcg(v, N, 11, -2, 2);
  for (int ci = 0; ci < NCPUS; ci++) {
    ty_runtime *rt = make_rt(cpu_counts[ci]);
    int64_t shape[3] = {D0, D1, D2};
    ty_store *a = mk(rt, TY_F64, 3, shape, v);
    ty_store *s = red(rt, TY_RED_SUM, a, 1), *mx = red(rt, TY_RED_MAX, a, 1), *am = red(rt, TY_RED_ARGMIN, a, 1);
    CHECK_EQ_INT(ty_store_ndim(s), 2);
    CHECK_EQ_INT(ty_store_shape(s)[1], D2);
    double *vs = get_f64(rt, s), *vx = get_f64(rt, mx);
    int64_t *va = get_i64(rt, am);
    int bad = 0;
    for (int64_t i = 0; i < D0; i++)
      for (int64_t k = 0; k < D2; k++) {
        double sum = 0, hi = -INFINITY;
        int64_t lo = 0;
        for (int64_t j = 0; j < D1; j++) {
          double x = v[(i * D1 + j) * D2 + k];
          sum += x;
          hi = fmax(hi, x);
          if (x < v[(i * D1 + lo) * D2 + k]) lo = j;
        }
        bad += fabs(vs[i * D2 + k] - sum) > 1e-12;
        bad += vx[i * D2 + k] != hi;
        bad += va[i * D2 + k] != lo;
      }
    CHECK_EQ_INT(bad, 0);
    free(vs), free(vx), free(va);
    ty_store *c = scalar(rt, TY_I32, -4);
    ty_store *cs = red(rt, TY_RED_SUM, c, -1), *cm = red(rt, TY_RED_MEAN, c, -1), *cx = red(rt, TY_RED_MIN, c, -1);
    CHECK(ty_store_dtype(cs) == TY_I64 && item_i64(rt, cs) == -4);
    CHECK(ty_store_dtype(cm) == TY_F64 && item_f64(rt, cm) == -4);
    CHECK(ty_store_dtype(cx) == TY_I32 && item_i64(rt, cx) == -4);
    ty_store *all[] = {a, s, mx, am, c, cs, cm, cx};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) ty_store_release(all[k]);
    ty_runtime_destroy(rt);
  }
  free(v);
}

TEST(reduce_empty_follows_identities) {
  ty_runtime *rt = make_rt(2);
  int64_t shape[2] = {0, 3};
  ty_store *e = NULL, *r = NULL;
  REQ(rt, ty_store_create(rt, TY_F64, 2, shape, &e));
  ty_store *s = red(rt, TY_RED_SUM, e, -1), *p = red(rt, TY_RED_PROD, e, -1), *m = red(rt, TY_RED_MEAN, e, -1);
  CHECK(item_f64(rt, s) == 0 && item_f64(rt, p) == 1 && isnan(item_f64(rt, m)));
  ty_store *s0 = red(rt, TY_RED_SUM, e, 0), *m0 = red(rt, TY_RED_MEAN, e, 0), *x1 = red(rt, TY_RED_MAX, e, 1);
  CHECK_EQ_INT(ty_store_shape(s0)[0], 3);
  CHECK_EQ_INT(ty_store_size(x1), 0);
  double *v = get_f64(rt, s0), *vm = get_f64(rt, m0);
  CHECK(v[0] == 0 && v[1] == 0 && v[2] == 0 && isnan(vm[1]));
  free(v), free(vm);
  CHECK(ty_reduce(rt, TY_RED_MIN, e, -1, &r) == TY_EINVAL && r == NULL);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "ty_reduce: min of an empty store");
  CHECK(ty_reduce(rt, TY_RED_ARGMAX, e, 0, &r) == TY_EINVAL);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "axis 0 of length 0");
  CHECK(ty_reduce(rt, TY_RED_SUM, e, 2, &r) == TY_ERANGE);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "axis 2 is out of range for a 2-D store");
  CHECK(ty_reduce(rt, (ty_reduce_op)77, e, 0, &r) == TY_EINVAL);
  ty_store *all[] = {e, s, p, m, s0, m0, x1};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) ty_store_release(all[k]);
  ty_runtime_destroy(rt);
}

TEST(mean_keeps_float_dtype) {
  ty_runtime *rt = make_rt(2);
  const double v[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  ty_store *f = mk(rt, TY_F32, 2, shape, v), *m = red(rt, TY_RED_MEAN, f, 1);
  CHECK(ty_store_dtype(m) == TY_F32);
  double *vm = get_f64(rt, m);
  CHECK(vm[0] == 2 && vm[1] == 5);
  free(vm);
  ty_store *b = mk(rt, TY_BOOL, 2, shape, v), *bm = red(rt, TY_RED_MEAN, b, -1);
  CHECK(ty_store_dtype(bm) == TY_F64 && item_f64(rt, bm) == 1);
  ty_store_release(f), ty_store_release(m), ty_store_release(b), ty_store_release(bm);
  ty_runtime_destroy(rt);
}

/* ---- random ------------------------------------------------------------------------------ */

TEST(random_same_for_any_cpu_count) {
  const int64_t shape[2] = {1000, 137};
  const int64_t N = shape[0] * shape[1];
  double *first = NULL;
  for (int ci = 0; ci < NCPUS; ci++) {
    ty_runtime *rt = make_rt(cpu_counts[ci]);
    ty_seed(rt, 42);
    ty_store *a = NULL, *b = NULL;
    REQ(rt, ty_random(rt, TY_F64, 2, shape, &a));
    REQ(rt, ty_random(rt, TY_F64, 2, shape, &b));
    double *va = get_f64(rt, a), *vb = get_f64(rt, b);
    int out = 0, same = 0;
    double mean = 0;
    for (int64_t i = 0; i < N; i++) {
      out += !(va[i] >= 0 && va[i] < 1);
      same += va[i] == vb[i];
      mean += va[i];
    }
    CHECK_EQ_INT(out, 0);
    CHECK(same < 5); /* each call draws a fresh stream */
    CHECK_NEAR(mean / N, 0.5, 0.01);
    CHECK(va[0] == ty__random_u01(42, 0, 0) && va[N - 1] == ty__random_u01(42, 0, (uint64_t)N - 1));
    if (!first) {
      first = va;
    } else {
      CHECK(memcmp(first, va, sizeof(double) * (size_t)N) == 0);
      free(va);
    }
    if (cpu_counts[ci] > 1) CHECK(pieces_run(rt) > 2);
    free(vb);
    /* re-seeding replays the same draws */
    ty_seed(rt, 42);
    ty_store *c = NULL;
    REQ(rt, ty_random(rt, TY_F64, 2, shape, &c));
    double *vc = get_f64(rt, c);
    CHECK(memcmp(first, vc, sizeof(double) * (size_t)N) == 0);
    free(vc);
    ty_store_release(a), ty_store_release(b), ty_store_release(c);
    ty_runtime_destroy(rt);
  }
  free(first);
}

TEST(random_other_dtypes) {
  ty_runtime *rt = make_rt(3);
  const int64_t n = 100000;
  int64_t hist[2] = {0, 0};
  ty_store *f = NULL, *b = NULL, *u = NULL, *i = NULL;
  REQ(rt, ty_random(rt, TY_F32, 1, &n, &f));
  REQ(rt, ty_random(rt, TY_BOOL, 1, &n, &b));
  REQ(rt, ty_random(rt, TY_U8, 1, &n, &u));
  REQ(rt, ty_random(rt, TY_I32, 1, &n, &i));
  double *vf = get_f64(rt, f);
  int64_t *vb = get_i64(rt, b), *vu = get_i64(rt, u), *vi = get_i64(rt, i);
  int bad = 0, neg = 0;
  double mu = 0;
  for (int64_t k = 0; k < n; k++) {
    bad += !(vf[k] >= 0 && vf[k] < 1);
    bad += vb[k] != 0 && vb[k] != 1;
    hist[vb[k] != 0]++;
    mu += (double)vu[k];
    neg += vi[k] < 0;
  }
  CHECK_EQ_INT(bad, 0);
  CHECK(hist[0] > 49000 && hist[1] > 49000);
  CHECK_NEAR(mu / n, 127.5, 1.0);
  CHECK(neg > 49000 && neg < 51000);
  free(vf), free(vb), free(vu), free(vi);
  ty_store_release(f), ty_store_release(b), ty_store_release(u), ty_store_release(i);
  ty_runtime_destroy(rt);
}

/* ---- creation ------------------------------------------------------------------------------ */

TEST(full_arange_linspace_values) {
  ty_runtime *rt = make_rt(3);
  int64_t shape[2] = {400, 300};
  ty_store *f = NULL, *i = NULL, *b = NULL;
  REQ(rt, ty_full(rt, TY_F32, 2, shape, 2.5, &f));
  REQ(rt, ty_full(rt, TY_I32, 2, shape, -1e12, &i)); /* saturates */
  REQ(rt, ty_full(rt, TY_BOOL, 0, NULL, 0.25, &b));
  CHECK_NEAR(item_f64(rt, tmp(red(rt, TY_RED_SUM, f, -1))), 2.5 * 120000, 1e-6);
  drop_tmp();
  double *vi = get_f64(rt, i);
  CHECK(vi[0] == INT32_MIN && vi[119999] == INT32_MIN);
  free(vi);
  CHECK_EQ_INT(item_i64(rt, b), 1);

  ty_store *a = NULL, *ai = NULL, *lin = NULL, *l1 = NULL, *li = NULL;
  const int64_t n = 100001;
  REQ(rt, ty_arange(rt, TY_F64, 1.5, 0.1, n, &a));
  REQ(rt, ty_arange(rt, TY_I64, -3, 7, n, &ai));
  REQ(rt, ty_linspace(rt, TY_F64, -1, 3, n, &lin));
  REQ(rt, ty_linspace(rt, TY_F64, 5, 9, 1, &l1));
  REQ(rt, ty_linspace(rt, TY_I32, 0, 10, 4, &li));
  double *va = get_f64(rt, a), *vl = get_f64(rt, lin);
  int64_t *vai = get_i64(rt, ai), *vli = get_i64(rt, li);
  int bad = 0;
  const double step = 4.0 / (double)(n - 1);
  const double x1 = 1.5 + 0.1, delta = x1 - 1.5;
  for (int64_t k = 0; k < n; k++) {
    /* numpy's values (kernels_fill.c), at every ISA level: arange is start,
     * start + step, then start + k * delta; linspace k * step + start; each
     * product rounded before the sum (volatile: no contraction here either) */
    volatile double pa = (double)k * delta, pl = (double)k * step;
    bad += va[k] != (k == 0 ? 1.5 : k == 1 ? x1 : 1.5 + pa);
    bad += vai[k] != -3 + 7 * k;
    bad += vl[k] != (k == n - 1 ? 3.0 : pl + -1.0);
  }
  CHECK_EQ_INT(bad, 0);
  CHECK(vl[n - 1] == 3);
  CHECK(item_f64(rt, l1) == 5);
  CHECK(vli[0] == 0 && vli[1] == 3 && vli[2] == 6 && vli[3] == 10);
  free(va), free(vl), free(vai), free(vli);
  ty_store *e = NULL, *r = NULL;
  REQ(rt, ty_arange(rt, TY_F64, 0, 1, 0, &e));
  CHECK_EQ_INT(ty_store_size(e), 0);
  CHECK(ty_arange(rt, TY_F64, 0, 1, -1, &r) == TY_EINVAL);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "ty_arange: n must be non-negative, got -1");
  CHECK(ty_full(rt, (ty_dtype)-1, 0, NULL, 0, &r) == TY_EDTYPE);
  ty_store *all[] = {f, i, b, a, ai, lin, l1, li, e};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) ty_store_release(all[k]);
  ty_runtime_destroy(rt);
}

/* ---- fill and copy ---------------------------------------------------------------------- */

TEST(fill_view_leaves_rest) {
  ty_runtime *rt = make_rt(2);
  int64_t shape[2] = {4, 5};
  ty_store *x = NULL, *row = NULL, *col = NULL;
  REQ(rt, ty_store_create(rt, TY_I64, 2, shape, &x)); /* never written: reads as zero */
  REQ(rt, ty_store_select(rt, x, 0, 1, &row));
  REQ(rt, ty_store_select(rt, x, 1, 3, &col));
  REQ(rt, ty_fill(rt, row, 7));
  REQ(rt, ty_fill(rt, col, -2.9)); /* truncates to -2 */
  int64_t *v = get_i64(rt, x);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 5; j++) CHECK_EQ_INT(v[i * 5 + j], j == 3 ? -2 : i == 1 ? 7 : 0);
  free(v);
  CHECK(ty_fill(rt, NULL, 1) == TY_EINVAL);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "ty_fill: dst is NULL");
  ty_store_release(x), ty_store_release(row), ty_store_release(col);
  ty_runtime_destroy(rt);
}

TEST(copy_overlapping_views) {
  ty_runtime *rt = make_rt(3);
  const int64_t n = 100000;
  for (int dir = 0; dir < 2; dir++) {
    ty_store *x = NULL, *lo = NULL, *hi = NULL;
    REQ(rt, ty_arange(rt, TY_I64, 0, 1, n, &x));
    REQ(rt, ty_store_slice(rt, x, 0, 0, n - 2, 1, &lo));
    REQ(rt, ty_store_slice(rt, x, 0, 2, n, 1, &hi));
    if (dir == 0)
      REQ(rt, ty_copy(rt, lo, hi)); /* x[0:n-2] = x[2:n] */
    else
      REQ(rt, ty_copy(rt, hi, lo)); /* x[2:n] = x[0:n-2] */
    int64_t *v = get_i64(rt, x);
    int bad = 0;
    for (int64_t k = 0; k < n; k++) {
      int64_t e = dir == 0 ? (k < n - 2 ? k + 2 : k) : (k >= 2 ? k - 2 : k);
      bad += v[k] != e;
    }
    CHECK_EQ_INT(bad, 0);
    free(v);
    ty_store_release(x), ty_store_release(lo), ty_store_release(hi);
  }
  /* a matrix copied into its own transpose: x = x.T (square) */
  const double m[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  int64_t shape[2] = {3, 3};
  ty_store *a = mk(rt, TY_F64, 2, shape, m), *t = NULL;
  REQ(rt, ty_store_transpose(rt, a, 0, 1, &t));
  REQ(rt, ty_copy(rt, a, t));
  double *v = get_f64(rt, a);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) CHECK(v[i * 3 + j] == m[j * 3 + i]);
  free(v);
  ty_store_release(a), ty_store_release(t);
  ty_runtime_destroy(rt);
}

TEST(copy_broadcasts_and_casts) {
  ty_runtime *rt = make_rt(2);
  int64_t shape[2] = {3, 4};
  const double row[4] = {1.9, -2.5, 300, NAN};
  ty_store *dst = NULL, *src = mk1(rt, TY_F64, 4, row);
  REQ(rt, ty_store_create(rt, TY_U8, 2, shape, &dst));
  REQ(rt, ty_copy(rt, dst, src));
  int64_t *v = get_i64(rt, dst);
  for (int i = 0; i < 3; i++)
    CHECK(v[i * 4] == 1 && v[i * 4 + 1] == 0 && v[i * 4 + 2] == 255 && v[i * 4 + 3] == 0);
  free(v);
  ty_store *bad = mk1(rt, TY_F64, 3, row);
  CHECK(ty_copy(rt, dst, bad) == TY_ESHAPE);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "ty_copy: shape (3,) does not broadcast to (3, 4)");
  /* a larger dst cannot come from broadcasting dst itself: (3,4) <- (2,3,4) */
  int64_t big[3] = {2, 3, 4};
  ty_store *b3 = NULL;
  REQ(rt, ty_store_create(rt, TY_F64, 3, big, &b3));
  CHECK(ty_copy(rt, dst, b3) == TY_ESHAPE);
  ty_store_release(dst), ty_store_release(src), ty_store_release(bad), ty_store_release(b3);
  ty_runtime_destroy(rt);
}

/* ---- matmul -------------------------------------------------------------------------------- */

static void naive_mm(const double *a, const double *b, double *c, int64_t m, int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t p = 0; p < k; p++) s += a[i * k + p] * b[p * n + j];
      c[i * n + j] = s;
    }
}

TEST(matmul_matches_naive) {
  const int64_t M = 123, K = 77, N = 301;
  double *a = malloc(sizeof(double) * M * K), *b = malloc(sizeof(double) * K * N);
  double *c = malloc(sizeof(double) * M * N), *at = malloc(sizeof(double) * K * M);
  fill_lcg(a, M * K, 9, -1, 1);
  fill_lcg(b, K * N, 10, -1, 1);
  naive_mm(a, b, c, M, K, N);
  for (int64_t i = 0; i < M; i++)
    for (int64_t p = 0; p < K; p++) at[p * M + i] = a[i * K + p];
  double *bt = malloc(sizeof(double) * K * N), *ai = malloc(sizeof(double) * M * K);
  double *bi = malloc(sizeof(double) * K * N);
  int64_t *cint = calloc((size_t)(M * N), sizeof(int64_t));
  for (int64_t p = 0; p < K; p++)
    for (int64_t j = 0; j < N; j++) bt[j * K + p] = b[p * N + j];
  for (int64_t i = 0; i < M * K; i++) ai[i] = trunc(a[i] * 1000);
  for (int64_t i = 0; i < K * N; i++) bi[i] = trunc(b[i] * 1000);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++)
      for (int64_t p = 0; p < K; p++) cint[i * N + j] += (int64_t)ai[i * K + p] * (int64_t)bi[p * N + j];
  for (int ci = 0; ci < NCPUS; ci++) {
    ty_runtime *rt = make_rt(cpu_counts[ci]);
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sat[2] = {K, M};
    ty_store *A = mk(rt, TY_F64, 2, sa, a), *B = mk(rt, TY_F64, 2, sb, b), *AT = mk(rt, TY_F64, 2, sat, at);
    ty_store *Af = mk(rt, TY_F32, 2, sa, a), *Bf = mk(rt, TY_F32, 2, sb, b);
    ty_store *tA = NULL;
    REQ(rt, ty_store_transpose(rt, AT, 0, 1, &tA)); /* (M, K), transposed layout */
    int64_t sbt[2] = {N, K};
    ty_store *BT = mk(rt, TY_F64, 2, sbt, bt), *tB = NULL, *Ctb = NULL;
    REQ(rt, ty_store_transpose(rt, BT, 0, 1, &tB)); /* (K, N), transposed layout */
    REQ(rt, ty_matmul(rt, tA, tB, &Ctb));
    ty_store *Ai = mk(rt, TY_I64, 2, sa, ai), *Bi = mk(rt, TY_I64, 2, sb, bi), *Ci = NULL;
    REQ(rt, ty_matmul(rt, Ai, Bi, &Ci));
    ty_store *C = NULL, *Ct = NULL, *Cf = NULL, *Cm = NULL;
    REQ(rt, ty_matmul(rt, A, B, &C));
    REQ(rt, ty_matmul(rt, tA, B, &Ct));
    REQ(rt, ty_matmul(rt, Af, Bf, &Cf));
    REQ(rt, ty_matmul(rt, Af, B, &Cm)); /* f32 @ f64 -> f64 */
    CHECK(ty_store_dtype(Cf) == TY_F32 && ty_store_dtype(Cm) == TY_F64);
    double *v = get_f64(rt, C), *vt = get_f64(rt, Ct), *vf = get_f64(rt, Cf), *vm = get_f64(rt, Cm);
    double *vtb = get_f64(rt, Ctb);
    int64_t *vi = get_i64(rt, Ci);
    int bad = 0;
    for (int64_t i = 0; i < M * N; i++) {
      bad += fabs(vtb[i] - c[i]) > 1e-12;
      bad += vi[i] != cint[i];
      bad += fabs(v[i] - c[i]) > 1e-12;
      bad += fabs(vt[i] - c[i]) > 1e-12;
      bad += fabs(vf[i] - c[i]) > 1e-4;
      bad += fabs(vm[i] - c[i]) > 1e-6;
    }
    CHECK_EQ_INT(bad, 0);
    if (cpu_counts[ci] > 1) CHECK(pieces_run(rt) > 1);
    free(v), free(vt), free(vf), free(vm), free(vtb), free(vi);
    ty_store *all[] = {A, B, AT, Af, Bf, tA, C, Ct, Cf, Cm, BT, tB, Ctb, Ai, Bi, Ci};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) ty_store_release(all[k]);
    ty_runtime_destroy(rt);
  }
  free(a), free(b), free(c), free(at), free(bt), free(ai), free(bi), free(cint);
}

TEST(matmul_vectors_and_strided_views) {
  ty_runtime *rt = make_rt(3);
  const double a[6] = {1, 2, 3, 4, 5, 6}; /* (2, 3) */
  const double x[3] = {1, -1, 2}, y[2] = {3, -2};
  int64_t sa[2] = {2, 3};
  ty_store *A = mk(rt, TY_F64, 2, sa, a), *X = mk1(rt, TY_F64, 3, x), *Y = mk1(rt, TY_F64, 2, y);
  ty_store *Ax = NULL, *yA = NULL, *xx = NULL;
  REQ(rt, ty_matmul(rt, A, X, &Ax)); /* (2,) */
  REQ(rt, ty_matmul(rt, Y, A, &yA)); /* (3,) */
  REQ(rt, ty_matmul(rt, X, X, &xx)); /* () */
  CHECK_EQ_INT(ty_store_ndim(Ax), 1);
  CHECK_EQ_INT(ty_store_ndim(xx), 0);
  double *v1 = get_f64(rt, Ax), *v2 = get_f64(rt, yA);
  CHECK(v1[0] == 5 && v1[1] == 11);
  CHECK(v2[0] == -5 && v2[1] == -4 && v2[2] == -3);
  CHECK(item_f64(rt, xx) == 6);
  free(v1), free(v2);
  /* a step-2 column slice (not BLAS-compatible: copied) and a broadcast vector */
  const double big[12] = {1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0}; /* (2, 6) */
  int64_t sb[2] = {2, 6};
  ty_store *Bg = mk(rt, TY_F64, 2, sb, big), *S = NULL, *Sx = NULL;
  REQ(rt, ty_store_slice(rt, Bg, 1, 0, 6, 2, &S)); /* == A */
  REQ(rt, ty_matmul(rt, S, X, &Sx));
  double *v3 = get_f64(rt, Sx);
  CHECK(v3[0] == 5 && v3[1] == 11);
  free(v3);
  ty_store *one = scalar(rt, TY_F64, 1), *ones = NULL, *Ao = NULL;
  int64_t three = 3;
  REQ(rt, ty_store_broadcast(rt, one, 1, &three, &ones));
  REQ(rt, ty_matmul(rt, A, ones, &Ao)); /* row sums */
  double *v4 = get_f64(rt, Ao);
  CHECK(v4[0] == 6 && v4[1] == 15);
  free(v4);
  /* integers and bools: exact, bool counts in i64 */
  ty_store *Ai = mk(rt, TY_I32, 2, sa, a), *Xi = mk1(rt, TY_I64, 3, x), *Axi = NULL;
  REQ(rt, ty_matmul(rt, Ai, Xi, &Axi));
  CHECK(ty_store_dtype(Axi) == TY_I64);
  int64_t *vi = get_i64(rt, Axi);
  CHECK(vi[0] == 5 && vi[1] == 11);
  free(vi);
  ty_store *Au = mk(rt, TY_U8, 2, sa, a), *Auu = NULL, *Aut = NULL;
  REQ(rt, ty_store_transpose(rt, Au, 0, 1, &Aut));
  REQ(rt, ty_matmul(rt, Au, Aut, &Auu)); /* (2,2) u8: 14 32 / 32 77 */
  CHECK(ty_store_dtype(Auu) == TY_U8);
  int64_t *vu = get_i64(rt, Auu);
  CHECK(vu[0] == 14 && vu[1] == 32 && vu[2] == 32 && vu[3] == 77);
  free(vu);
  const double bb[3] = {1, 1, 0};
  ty_store *B1 = mk1(rt, TY_BOOL, 3, bb), *bdot = NULL;
  REQ(rt, ty_matmul(rt, B1, B1, &bdot));
  /* bool with bool is bool, as numpy's (issue 21: it was a count in i64) */
  CHECK(ty_store_dtype(bdot) == TY_BOOL && item_i64(rt, bdot) == 1);
  const double bz[3] = {0, 0, 1};
  ty_store *B0 = mk1(rt, TY_BOOL, 3, bz), *bdot0 = NULL;
  REQ(rt, ty_matmul(rt, B1, B0, &bdot0));
  CHECK(ty_store_dtype(bdot0) == TY_BOOL && item_i64(rt, bdot0) == 0);
  ty_store_release(bdot0);
  ty_store_release(B0);
  ty_store *F = mk(rt, TY_F32, 2, sa, a), *Fx = NULL;
  REQ(rt, ty_matmul(rt, F, X, &Fx));
  CHECK(ty_store_dtype(Fx) == TY_F64);
  /* k == 0: zeros */
  int64_t s0[2] = {2, 0}, s1[2] = {0, 3};
  ty_store *Z0 = NULL, *Z1 = NULL, *Z = NULL;
  REQ(rt, ty_store_create(rt, TY_F64, 2, s0, &Z0));
  REQ(rt, ty_store_create(rt, TY_F64, 2, s1, &Z1));
  REQ(rt, ty_matmul(rt, Z0, Z1, &Z));
  double *vz = get_f64(rt, Z);
  CHECK_EQ_INT(ty_store_size(Z), 6);
  for (int k = 0; k < 6; k++) CHECK(vz[k] == 0);
  free(vz);
  ty_store *all[] = {A, X, Y, Ax, yA, xx, Bg, S, Sx, one, ones, Ao, Ai, Xi, Axi, Au, Auu, Aut, B1, bdot, F, Fx, Z0, Z1, Z};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) ty_store_release(all[k]);
  ty_runtime_destroy(rt);
}

TEST(matmul_shape_errors) {
  ty_runtime *rt = make_rt(1);
  int64_t s[2] = {3, 4}, s3[3] = {2, 2, 2};
  ty_store *a = NULL, *b = NULL, *r = NULL;
  REQ(rt, ty_store_create(rt, TY_F64, 2, s, &a));
  REQ(rt, ty_store_create(rt, TY_F64, 3, s3, &b));
  CHECK(ty_matmul(rt, a, a, &r) == TY_ESHAPE && r == NULL);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "ty_matmul: shapes (3, 4) and (3, 4) do not align (4 != 3)");
  CHECK(ty_matmul(rt, a, b, &r) == TY_ESHAPE); /* batched: (3, 4) @ (2, 2, 2) */
  CHECK_STR_CONTAINS(ty_errmsg(rt), "ty_matmul: shapes (3, 4) and (2, 2, 2) do not align (4 != 2)");
  ty_store_release(a), ty_store_release(b);
  ty_runtime_destroy(rt);
}

/* ---- whole programs ------------------------------------------------------------------------- */

/* Black-Scholes through the public ops: every processor count gives the same
 * bits (element-wise ops do not depend on pieces). */
static double *black_scholes(int cpus, int64_t n, double *checksum) {
  ty_runtime *rt = make_rt(cpus);
#define B(op, x, y) tmp(bin(rt, TY_OP_##op, x, y))
#define U(op, x) tmp(un(rt, TY_OP_##op, x))
#define C(v) tmp(scalar(rt, TY_F64, v))
  ty_seed(rt, 7);
  ty_store *S0 = NULL, *K0 = NULL, *T0 = NULL;
  REQ(rt, ty_random(rt, TY_F64, 1, &n, &S0));
  REQ(rt, ty_random(rt, TY_F64, 1, &n, &K0));
  REQ(rt, ty_random(rt, TY_F64, 1, &n, &T0));
  tmp(S0), tmp(K0), tmp(T0);
  ty_store *R = C(0.02), *V = C(0.3);
  ty_store *S = B(ADD, B(MUL, S0, C(25)), C(5));
  ty_store *K = B(ADD, B(MUL, K0, C(99)), C(1));
  ty_store *T = B(ADD, B(MUL, T0, C(9.75)), C(0.25));
  ty_store *sqT = U(SQRT, T);
  ty_store *vv2 = B(DIV, B(POW, V, C(2)), C(2));
  ty_store *d1 = B(DIV, B(ADD, U(LOG, B(DIV, S, K)), B(MUL, B(ADD, R, vv2), T)), B(MUL, V, sqT));
  ty_store *d2 = B(SUB, d1, B(MUL, V, sqT));
  /* cnd(d) ~ 0.5 (1 + tanh(0.7978845608 (d + 0.044715 d^3))): a smooth stand-in */
  ty_store *ds[2] = {d1, d2}, *cnd[2];
  for (int i = 0; i < 2; i++) {
    ty_store *inner = B(ADD, ds[i], B(MUL, C(0.044715), B(POW, ds[i], C(3))));
    cnd[i] = B(MUL, C(0.5), B(ADD, C(1), U(TANH, B(MUL, C(0.7978845608), inner))));
  }
  ty_store *disc = U(EXP, U(NEG, B(MUL, R, T)));
  ty_store *call = B(SUB, B(MUL, S, cnd[0]), B(MUL, B(MUL, K, disc), cnd[1]));
  ty_store *put = NULL;
  REQ(rt, ty_where(rt, B(GT, call, C(1)), call, C(1), &put));
  tmp(put);
  *checksum = item_f64(rt, tmp(red(rt, TY_RED_SUM, put, -1)));
  double *v = get_f64(rt, call);
  drop_tmp();
  ty_runtime_destroy(rt);
  return v;
#undef B
#undef U
#undef C
}

TEST(results_do_not_depend_on_cpu_count) {
  const int64_t n = 200000;
  double sum1 = 0, sum8 = 0;
  double *a = black_scholes(1, n, &sum1), *b = black_scholes(8, n, &sum8);
  CHECK(memcmp(a, b, sizeof(double) * (size_t)n) == 0);
  CHECK_NEAR(sum1, sum8, 1e-12);
  int bad = 0;
  for (int64_t i = 0; i < n; i++) bad += !isfinite(a[i]);
  CHECK_EQ_INT(bad, 0);
  free(a), free(b);
}

TEST(empty_stores_launch_nothing) {
  ty_runtime *rt = make_rt(2);
  int64_t shape[2] = {0, 3};
  ty_store *a = NULL, *b = NULL;
  REQ(rt, ty_store_create(rt, TY_F64, 2, shape, &a));
  REQ(rt, ty_store_create(rt, TY_F64, 1, &shape[1], &b));
  ty_stats before, after;
  ty_get_stats(rt, &before);
  ty_store *s = bin(rt, TY_OP_ADD, a, b), *e = un(rt, TY_OP_EXP, a), *r = NULL;
  REQ(rt, ty_random(rt, TY_F64, 2, shape, &r));
  REQ(rt, ty_fill(rt, a, 3));
  ty_get_stats(rt, &after);
  CHECK_EQ_INT(after.launches, before.launches);
  CHECK_EQ_INT(ty_store_shape(s)[0], 0);
  CHECK_EQ_INT(ty_store_shape(s)[1], 3);
  ty_store_release(a), ty_store_release(b), ty_store_release(s), ty_store_release(e), ty_store_release(r);
  ty_runtime_destroy(rt);
}

/* Ops on 0-d and broadcast inputs of other dtypes insert casts; the result
 * matches computing in the promoted dtype. */
TEST(scalar_inputs_are_cast_to_compute_dtype) {
  ty_runtime *rt = make_rt(2);
  const double v[3] = {1, 2, 3};
  ty_store *f = mk1(rt, TY_F32, 3, v), *i = scalar(rt, TY_I64, 2), *u = scalar(rt, TY_U8, 2);
  ty_store *fi = bin(rt, TY_OP_MUL, f, i), *fu = bin(rt, TY_OP_MUL, f, u);
  CHECK(ty_store_dtype(fi) == TY_F64 && ty_store_dtype(fu) == TY_F32);
  double *a = get_f64(rt, fi), *b = get_f64(rt, fu);
  CHECK(a[0] == 2 && a[2] == 6 && b[1] == 4);
  free(a), free(b);
  /* bool + bool counts in i64 */
  ty_store *t = scalar(rt, TY_BOOL, 1), *tt = bin(rt, TY_OP_ADD, t, t);
  CHECK(ty_store_dtype(tt) == TY_I64 && item_i64(rt, tt) == 2);
  ty_store_release(f), ty_store_release(i), ty_store_release(u), ty_store_release(fi);
  ty_store_release(fu), ty_store_release(t), ty_store_release(tt);
  ty_runtime_destroy(rt);
}

static const check_case cases[] = {
    CASE(foreach_collapses_contiguous_dims),
    CASE(every_op_is_a_registered_task),
    CASE(binary_broadcasts_row_against_matrix),
    CASE(binary_shape_mismatch_names_shapes),
    CASE(arithmetic_matches_loops_for_every_dtype),
    CASE(int_arithmetic_wraps_without_ub),
    CASE(div_of_ints_is_f64),
    CASE(mod_follows_divisor_sign),
    CASE(int_mod_by_zero_is_zero),
    CASE(pow_is_float_and_squares_exactly),
    CASE(unary_math_matches_libm),
    CASE(neg_abs_floor_ceil_keep_int_dtypes),
    CASE(comparisons_give_bool_and_handle_nan),
    CASE(maximum_minimum_propagate_nan),
    CASE(logical_ops_treat_nonzero_and_nan_as_true),
    CASE(where_selects_with_broadcast),
    CASE(cast_float_to_int_saturates),
    CASE(cast_between_every_dtype_pair),
    CASE(sum_axis_matches_loop),
    CASE(sum_short_kept_dim_splits_reduced_axis),
    CASE(sum_of_ints_is_i64_and_exact),
    CASE(prod_min_max_every_dtype),
    CASE(min_max_propagate_nan),
    CASE(argmin_argmax_first_occurrence),
    CASE(argmax_axis_large_matches_loop),
    CASE(reduce_middle_axis_of_3d_and_scalars),
    CASE(reduce_empty_follows_identities),
    CASE(mean_keeps_float_dtype),
    CASE(random_same_for_any_cpu_count),
    CASE(random_other_dtypes),
    CASE(full_arange_linspace_values),
    CASE(fill_view_leaves_rest),
    CASE(copy_overlapping_views),
    CASE(copy_broadcasts_and_casts),
    CASE(matmul_matches_naive),
    CASE(matmul_vectors_and_strided_views),
    CASE(matmul_shape_errors),
    CASE(results_do_not_depend_on_cpu_count),
    CASE(empty_stores_launch_nothing),
    CASE(scalar_inputs_are_cast_to_compute_dtype),
};
CHECK_MAIN(cases)
