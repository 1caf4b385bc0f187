/*
 * test_fuse.c — the fusion pass (fuse.c), the fused kernel (fused_cpu.c) and
 * compiled kernels (fused_codegen.c): which launches fuse and exactly where a
 * run ends, deduplicated arguments, temporaries that are never allocated,
 * point-wise user tasks inside a run (with whole and reduction arguments),
 * and results bit-identical with fusion on and off (every op, every dtype,
 * 1 and 3 processors, random programs), interpreted or compiled. The
 * codegen tests compile into ./tycho-kernel-cache (the test's directory).
 *
 * How a test sees a run: tycho's explain records one entry per launch that
 * ran; a fused launch's entry has task "fused", `fused` = the launches it
 * holds, `fused_ops` their names and `fuse_end` why the run ended; the
 * launch that stopped a run says "not fused with #a-#b: <why>".
 */
#include "check.h"
#include "req.h"
#include "fused.h"
#include "internal.h"

#include <tycho/task.h>
#include <tycho/tycho.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static ty_runtime *rt_window(int cpus, int window) {
  ty_config cfg = {.cpus = cpus, .window = window};
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) exit(1);
  return rt;
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
static ty_store *scal(ty_runtime *rt, ty_dtype t, double v) {
  ty_store *s = NULL;
  REQ(rt, ty_scalar_f64(rt, t, v, &s));
  return s;
}
static ty_store *cast(ty_runtime *rt, ty_store *a, ty_dtype t) {
  ty_store *r = NULL;
  REQ(rt, ty_cast(rt, a, t, &r));
  return r;
}
static ty_store *red(ty_runtime *rt, ty_reduce_op op, ty_store *a, int axis) {
  ty_store *r = NULL;
  REQ(rt, ty_reduce(rt, op, a, axis, &r));
  return r;
}
/* x op y, releasing both operands (expression style: temporaries die at once) */
static ty_store *B2(ty_runtime *rt, ty_op op, ty_store *a, ty_store *b) {
  ty_store *r = bin(rt, op, a, b);
  ty_store_release(a);
  ty_store_release(b);
  return r;
}
static ty_store *BS(ty_runtime *rt, ty_op op, ty_store *a, double v) {
  return B2(rt, op, a, scal(rt, ty_store_dtype(a), v));
}
static ty_store *U1(ty_runtime *rt, ty_op op, ty_store *a) {
  ty_store *r = un(rt, op, a);
  ty_store_release(a);
  return r;
}
static ty_store *own(ty_store *s) {
  ty_store_retain(s);
  return s;
}

/* x rounded to double: expected values are written with R() around each
 * product so that the compiler cannot contract a*b+c into an FMA (gnu11
 * allows it), as the kernels never do */
static double R(double x) {
  volatile double v = x;
  return v;
}

static void fill_lcg(double *v, int64_t n, uint64_t seed, double lo, double hi) {
  uint64_t x = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (int64_t i = 0; i < n; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    v[i] = lo + (hi - lo) * (double)(x >> 11) * 0x1.0p-53;
  }
}

/* A deterministic input of dtype t: uniform values, with special values
 * (NaN, infinities, signed zeros, extremes) sprinkled in for floats and
 * integer limits for integers. */
static ty_store *input(ty_runtime *rt, ty_dtype t, int nd, const int64_t *shape, uint64_t seed) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  size_t es = ty_dtype_size(t);
  char *buf = malloc((size_t)n * es + 8);
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  static const double fspecial[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e-310, 1e300, -2.5, 2.0, 0.5};
  static const double ispecial[] = {0, 1, -1, 2, -2, 127, 255, 9.2e18, -9.2e18, 2147483647};
  for (int64_t i = 0; i < n; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    char *p = buf + i * (int64_t)es;
    if (t == TY_BOOL) {
      p[0] = (char)((x >> 40) & 1);
    } else if (ty_dtype_is_float(t)) {
      double v = (i % 37 == 5) ? fspecial[(x >> 20) % 10] : -10 + 20 * (double)(x >> 11) * 0x1.0p-53;
      ty__store_f64(p, t, v);
    } else {
      int64_t v = (i % 29 == 3) ? (int64_t)ispecial[(x >> 20) % 10] : (int64_t)((x >> 33) % 201) - 100;
      if (t == TY_I64 && i % 31 == 7) v = (int64_t)x;
      ty__store_i64(p, t, v);
    }
  }
  ty_store *s = NULL;
  REQ(rt, ty_store_from_buffer(rt, t, nd, shape, buf, &s));
  free(buf);
  return s;
}

/* Uniform values in [1, 10): for tests that compare with C expressions. */
static ty_store *plain(ty_runtime *rt, int nd, const int64_t *shape, uint64_t seed) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  double *v = malloc(sizeof(double) * (size_t)n + 8);
  fill_lcg(v, n, seed, 1, 10);
  ty_store *s = NULL;
  REQ(rt, ty_store_from_buffer(rt, TY_F64, nd, shape, v, &s));
  free(v);
  return s;
}

/* The bytes of a store (C order); malloc'd. */
static char *bytes_of(ty_runtime *rt, ty_store *s, size_t *len) {
  *len = (size_t)ty_store_size(s) * ty_dtype_size(ty_store_dtype(s));
  char *b = malloc(*len + 1);
  REQ(rt, ty_store_read(rt, s, b, *len));
  return b;
}

/* The last n explain entries (flushes first). */
static int entries(ty_runtime *rt, ty_explain_entry *e, int n) { return ty_explain(rt, n, e); }

static const ty_explain_entry *find_task(const ty_explain_entry *e, int n, const char *task) {
  for (int i = 0; i < n; i++)
    if (strcmp(e[i].task, task) == 0) return &e[i];
  return NULL;
}

static uint64_t stat_of(ty_runtime *rt, int which) {
  ty_stats s;
  ty_get_stats(rt, &s);
  switch (which) {
  case 0: return s.fused_runs;
  case 1: return s.fused_launches;
  case 2: return s.bytes_elided;
  case 3: return s.bytes_peak;
  default: return s.launches_run;
  }
}
#define FUSED_RUNS(rt) stat_of(rt, 0)
#define FUSED_LAUNCHES(rt) stat_of(rt, 1)
#define ELIDED(rt) stat_of(rt, 2)
#define PEAK(rt) stat_of(rt, 3)

/* ---- a program run with fusion on and off -------------------------------------------- */

typedef ty_store *(*prog_fn)(ty_runtime *rt, const void *arg);

/* Runs prog on a fresh runtime and returns its output's bytes. */
static char *run_prog(int cpus, bool fuse, prog_fn f, const void *arg, size_t *len,
                      uint64_t *fused_runs) {
  ty_runtime *rt = req_runtime(cpus, fuse);
  ty_store *out = f(rt, arg);
  REQ(rt, ty_flush(rt));
  if (fused_runs) *fused_runs = FUSED_RUNS(rt);
  char *b = bytes_of(rt, out, len);
  ty_store_release(out);
  ty_runtime_destroy(rt);
  return b;
}

/* Fused (1 and 3 cpus) and unfused results are the same bytes; returns the
 * fused runs of the 1-cpu run. */
static uint64_t same_fused_unfused(prog_fn f, const void *arg, const char *what) {
  size_t l0, l1, l3;
  uint64_t runs = 0;
  char *ref = run_prog(1, false, f, arg, &l0, NULL);
  char *f1 = run_prog(1, true, f, arg, &l1, &runs);
  char *f3 = run_prog(3, true, f, arg, &l3, NULL);
  bool ok = l0 == l1 && l0 == l3 && memcmp(ref, f1, l0) == 0 && memcmp(ref, f3, l0) == 0;
  if (!ok) fprintf(stderr, "fused and unfused results differ: %s\n", what);
  CHECK(ok);
  free(ref);
  free(f1);
  free(f3);
  return runs;
}

static const int64_t N1 = 50000; /* 400 KB of f64: several pieces on 3 cpus */

/* ---- legality: where runs end ----------------------------------------------------------- */

typedef struct opcase {
  int op;
  ty_dtype t;
  int variant; /* 0: store op store; 1: store op scalar; 2: 2-D with a row broadcast */
} opcase;

/* copy(op(copy(a), copy(b))): the op reads and writes block slots */
static ty_store *prog_op(ty_runtime *rt, const void *arg) {
  const opcase *c = arg;
  int64_t shape2[2] = {250, 200}, row = 200;
  ty_store *a, *b;
  if (c->variant == 2) {
    a = input(rt, c->t, 2, shape2, 1);
    b = input(rt, c->t, 1, &row, 2);
  } else {
    a = input(rt, c->t, 1, &N1, 1);
    b = c->variant == 1 ? scal(rt, c->t, c->t == TY_BOOL ? 1 : 3) : input(rt, c->t, 1, &N1, 2);
  }
  ty_store *a2 = cast(rt, a, c->t), *b2 = c->variant == 1 ? own(b) : cast(rt, b, c->t), *y;
  if (c->op < TY_OP_FIRST_BINARY) y = un(rt, (ty_op)c->op, a2);
  else y = bin(rt, (ty_op)c->op, a2, b2);
  ty_store *z = cast(rt, y, ty_store_dtype(y));
  ty_store_release(a), ty_store_release(b), ty_store_release(a2), ty_store_release(b2);
  ty_store_release(y);
  return z;
}

TEST(fused_equals_unfused_for_every_op_and_dtype) {
  int cases = 0;
  for (int op = 0; op < TY_NOPS; op++)
    for (int t = 0; t < TY_NDTYPES; t++)
      for (int variant = 0; variant < 3; variant++) {
        if (op < TY_OP_FIRST_BINARY && variant > 0) continue;
        ty_dtype ct = op < TY_OP_FIRST_BINARY ? ty__unary_compute_dtype((ty_op)op, (ty_dtype)t)
                                              : ty__binary_compute_dtype((ty_op)op, (ty_dtype)t, (ty_dtype)t);
        bool unary = op < TY_OP_FIRST_BINARY;
        if (!(unary ? ty__unary_loops : ty__binary_loops)[op][ct]) continue;
        opcase c = {op, (ty_dtype)t, variant};
        char what[96];
        snprintf(what, sizeof what, "%s %s variant %d", ty_op_name((ty_op)op), ty_dtype_name((ty_dtype)t), variant);
        uint64_t runs = same_fused_unfused(prog_op, &c, what);
        if (runs < 1) fprintf(stderr, "not fused: %s\n", what);
        CHECK(runs >= 1);
        cases++;
      }
  CHECK(cases > 150);
}

/* where, casts between every pair, fills and generators inside runs */
typedef struct misccase {
  int kind; /* 0 where, 1 cast, 2 fill, 3 random, 4 arange, 5 linspace */
  ty_dtype from, to;
} misccase;

static ty_store *prog_misc(ty_runtime *rt, const void *arg) {
  const misccase *c = arg;
  ty_store *y = NULL;
  switch (c->kind) {
  case 0: {
    ty_store *cond = input(rt, TY_BOOL, 1, &N1, 3), *a = input(rt, c->to, 1, &N1, 4), *b = input(rt, c->to, 1, &N1, 5);
    ty_store *a2 = cast(rt, a, c->to);
    REQ(rt, ty_where(rt, cond, a2, b, &y));
    ty_store_release(cond), ty_store_release(a), ty_store_release(b), ty_store_release(a2);
    break;
  }
  case 1: {
    ty_store *a = input(rt, c->from, 1, &N1, 6);
    ty_store *a2 = cast(rt, a, c->from);
    y = cast(rt, a2, c->to);
    ty_store_release(a), ty_store_release(a2);
    break;
  }
  case 2: REQ(rt, ty_full(rt, c->to, 1, &N1, -3.75, &y)); break;
  case 3: REQ(rt, ty_random(rt, c->to, 1, &N1, &y)); break;
  case 4: REQ(rt, ty_arange(rt, c->to, 3, 2, N1, &y)); break;
  default: REQ(rt, ty_linspace(rt, c->to, -1, 7, N1, &y)); break;
  }
  ty_store *z = cast(rt, y, ty_store_dtype(y));
  ty_store_release(y);
  return z;
}

TEST(fused_equals_unfused_for_where_casts_fills_and_generators) {
  for (int t = 0; t < TY_NDTYPES; t++) {
    misccase w = {0, (ty_dtype)t, (ty_dtype)t};
    CHECK(same_fused_unfused(prog_misc, &w, "where") >= 1);
    for (int u = 0; u < TY_NDTYPES; u++) {
      misccase c = {1, (ty_dtype)t, (ty_dtype)u};
      CHECK(same_fused_unfused(prog_misc, &c, "cast") >= 1);
    }
    for (int k = 2; k <= 5; k++) {
      misccase g = {k, (ty_dtype)t, (ty_dtype)t};
      CHECK(same_fused_unfused(prog_misc, &g, k == 2 ? "fill" : "generator") >= 1);
    }
  }
}

/* An element's result does not depend on where a piece or a block starts:
 * each unary kernel over a[k:] gives the same bytes as over a, shifted. */
TEST(kernels_results_do_not_depend_on_vector_grouping) {
  const ty_op ops[] = {TY_OP_EXP,    TY_OP_LOG,     TY_OP_SIN,     TY_OP_COS,     TY_OP_TANH,
                       TY_OP_SQRT,   TY_OP_TAN,     TY_OP_ARCSIN,  TY_OP_ARCCOS,  TY_OP_ARCTAN,
                       TY_OP_SINH,   TY_OP_COSH,    TY_OP_ARCSINH, TY_OP_ARCCOSH, TY_OP_ARCTANH,
                       TY_OP_EXPM1,  TY_OP_LOG1P,   TY_OP_LOG2,    TY_OP_LOG10,   TY_OP_EXP2,
                       TY_OP_CBRT,   TY_OP_RINT,    TY_OP_TRUNC};
  const int nops = (int)(sizeof ops / sizeof ops[0]);
  const ty_dtype types[] = {TY_F64, TY_F32};
  const int64_t n = 4099;
  for (int fast = 0; fast < 2; fast++)
    for (int t = 0; t < 2; t++)
      for (int o = 0; o < nops; o++) {
        ty_runtime *rt = req_runtime(1, false);
        ty_policy fm = {.set = TY_POL_FASTMATH, .fastmath = fast};
        REQ(rt, ty_launch_options(rt, &fm));
        ty_store *a = input(rt, types[t], 1, &n, 77);
        ty_store *full = un(rt, ops[o], a);
        size_t len, es = ty_dtype_size(types[t]);
        char *ref = bytes_of(rt, full, &len);
        int bad = 0;
        for (int64_t k = 1; k < 17; k++) {
          ty_store *v = NULL;
          REQ(rt, ty_store_slice(rt, a, 0, k, n, 1, &v));
          ty_store *y = un(rt, ops[o], v);
          char *got = bytes_of(rt, y, &len);
          bad += memcmp(got, ref + (size_t)k * es, len) != 0;
          free(got);
          ty_store_release(v), ty_store_release(y);
        }
        if (bad) fprintf(stderr, "%s %s fast=%d depends on grouping\n", ty_op_name(ops[o]), ty_dtype_name(types[t]), fast);
        CHECK_EQ_INT(bad, 0);
        free(ref);
        ty_store_release(a), ty_store_release(full);
        ty_runtime_destroy(rt);
      }
}

/* a*2 + b*3 + c: 4 launches, one run, 3 temporaries never allocated */
TEST(fuse_chain_elides_temporaries) {
  const int64_t n = 1 << 20; /* 8 MiB per f64 store */
  ty_runtime *rt = req_runtime(2, true);
  ty_store *a = plain(rt, 1, &n, 1), *b = plain(rt, 1, &n, 2), *c = plain(rt, 1, &n, 3);
  REQ(rt, ty_flush(rt));
  uint64_t inputs = PEAK(rt);
  ty_store *z = B2(rt, TY_OP_ADD, B2(rt, TY_OP_ADD, BS(rt, TY_OP_MUL, own(a), 2), BS(rt, TY_OP_MUL, own(b), 3)), own(c));
  ty_explain_entry e[4];
  int k = entries(rt, e, 4);
  const ty_explain_entry *f = find_task(e, k, "fused");
  CHECK(f != NULL);
  if (f) {
    CHECK_EQ_INT(f->fused, 4);
    CHECK_STR_CONTAINS(f->fused_ops, "mul mul add add");
    CHECK_STR_CONTAINS(f->fuse_end, "end of the window");
  }
  CHECK_EQ_INT(FUSED_RUNS(rt), 1);
  CHECK_EQ_INT(FUSED_LAUNCHES(rt), 4);
  CHECK_EQ_INT(ELIDED(rt), 3 * (uint64_t)n * 8);
  /* peak: the inputs and the output, nothing more (the 0-d scalars were
   * inlined into the fused launch and freed before it ran) */
  CHECK_EQ_INT(PEAK(rt), inputs + (uint64_t)n * 8);
  size_t len;
  double *va = (double *)bytes_of(rt, a, &len), *vb = (double *)bytes_of(rt, b, &len);
  double *vc = (double *)bytes_of(rt, c, &len), *vz = (double *)bytes_of(rt, z, &len);
  int bad = 0;
  for (int64_t i = 0; i < n; i++) {
    double want = (R(va[i] * 2) + R(vb[i] * 3)) + vc[i];
    bad += memcmp(&want, &vz[i], 8) != 0;
  }
  CHECK_EQ_INT(bad, 0);
  free(va), free(vb), free(vc), free(vz);
  ty_store_release(a), ty_store_release(b), ty_store_release(c), ty_store_release(z);
  ty_runtime_destroy(rt);
}

/* A store the caller still holds is written to memory; only unreachable
 * ones are elided. */
TEST(fuse_keeps_stores_the_caller_holds) {
  ty_runtime *rt = req_runtime(1, true);
  ty_store *a = plain(rt, 1, &N1, 1);
  ty_store *t1 = bin(rt, TY_OP_ADD, a, a);       /* held */
  ty_store *t2 = BS(rt, TY_OP_MUL, own(t1), 3);  /* dropped */
  ty_store *z = BS(rt, TY_OP_SUB, t2, 1);
  REQ(rt, ty_flush(rt));
  CHECK_EQ_INT(FUSED_RUNS(rt), 1);
  CHECK_EQ_INT(ELIDED(rt), (uint64_t)N1 * 8); /* t2 only */
  size_t len;
  double *va = (double *)bytes_of(rt, a, &len), *v1 = (double *)bytes_of(rt, t1, &len), *vz = (double *)bytes_of(rt, z, &len);
  int bad = 0;
  for (int64_t i = 0; i < N1; i++) {
    double s = va[i] + va[i], w = R(s * 3) - 1;
    bad += memcmp(&s, &v1[i], 8) != 0 || memcmp(&w, &vz[i], 8) != 0;
  }
  CHECK_EQ_INT(bad, 0);
  free(va), free(v1), free(vz);
  ty_store_release(a), ty_store_release(t1), ty_store_release(z);
  ty_runtime_destroy(rt);
}

/* A flush hook that releases the stores a binding no longer reaches (what
 * lua/lgc.c does with Lua's collector) makes them temporaries. */
typedef struct held {
  ty_store *s[8];
  int n;
} held;
static void release_held(void *ud) {
  held *h = ud;
  while (h->n > 0) ty_store_release(h->s[--h->n]);
}

TEST(fuse_flush_hook_turns_dropped_stores_into_temporaries) {
  ty_runtime *rt = req_runtime(1, true);
  held h = {.n = 0};
  ty_set_flush_hook(rt, release_held, &h);
  ty_store *a = input(rt, TY_F64, 1, &N1, 1);
  h.s[h.n++] = BS(rt, TY_OP_MUL, own(a), 2);       /* "unreachable, not yet collected" */
  h.s[h.n++] = BS(rt, TY_OP_ADD, own(h.s[0]), 1);
  ty_store *z = BS(rt, TY_OP_SUB, own(h.s[1]), 5);
  REQ(rt, ty_flush(rt));
  CHECK_EQ_INT(h.n, 0);
  CHECK_EQ_INT(FUSED_RUNS(rt), 1);
  CHECK_EQ_INT(ELIDED(rt), 2 * (uint64_t)N1 * 8);
  ty_set_flush_hook(rt, NULL, NULL);
  ty_store_release(a), ty_store_release(z);
  ty_runtime_destroy(rt);
}

/* y = sum(a*b); the add after it is not in the run */
TEST(fuse_stops_at_reduction) {
  ty_runtime *rt = req_runtime(2, true);
  ty_store *a = plain(rt, 1, &N1, 1), *b = plain(rt, 1, &N1, 2);
  REQ(rt, ty_flush(rt));
  ty_store *x = bin(rt, TY_OP_MUL, a, b);
  ty_store *s = red(rt, TY_RED_SUM, x, -1);
  ty_store *y = BS(rt, TY_OP_ADD, own(x), 1);
  ty_store_release(x);
  ty_explain_entry e[8];
  int k = entries(rt, e, 8);
  const ty_explain_entry *f = find_task(e, k, "fused");
  CHECK(f != NULL);
  if (f) {
    CHECK_EQ_INT(f->fused, 2);
    CHECK_STR_CONTAINS(f->fused_ops, "mul sum");
    CHECK_STR_CONTAINS(f->fuse_end, "reduction is terminal");
  }
  const ty_explain_entry *add = find_task(e, k, "add");
  CHECK(add != NULL); /* ran on its own, after the run */
  /* values: the sum within the pairwise bound, the add exact */
  size_t len;
  double *va = (double *)bytes_of(rt, a, &len), *vb = (double *)bytes_of(rt, b, &len), *vy = (double *)bytes_of(rt, y, &len);
  double want = 0;
  int bad = 0;
  for (int64_t i = 0; i < N1; i++) {
    want += R(va[i] * vb[i]);
    double w = R(va[i] * vb[i]) + 1;
    bad += memcmp(&w, &vy[i], 8) != 0;
  }
  CHECK_EQ_INT(bad, 0);
  ty_value v;
  REQ(rt, ty_item(rt, s, &v));
  CHECK_NEAR(v.f, want, 1e-11);
  free(va), free(vb), free(vy);
  ty_store_release(a), ty_store_release(b), ty_store_release(s), ty_store_release(y);
  ty_runtime_destroy(rt);
}

/* p[0:5] = a*2, then q = p[1:6] + 1 reads a shifted view of what the run wrote */
TEST(fuse_stops_at_stencil_read) {
  ty_runtime *rt = req_runtime(1, true);
  const int64_t n = 5, ten = 10;
  ty_store *a = plain(rt, 1, &n, 1), *p = NULL, *lo = NULL, *hi = NULL;
  REQ(rt, ty_full(rt, TY_F64, 1, &ten, 0, &p));
  REQ(rt, ty_flush(rt));
  REQ(rt, ty_store_slice(rt, p, 0, 0, 5, 1, &lo));
  REQ(rt, ty_store_slice(rt, p, 0, 1, 6, 1, &hi));
  ty_store *t = BS(rt, TY_OP_MUL, own(a), 2);
  REQ(rt, ty_copy(rt, lo, t)); /* mul + copy: one run */
  ty_store_release(t);
  ty_store *q = BS(rt, TY_OP_ADD, own(hi), 1);
  ty_explain_entry e[4];
  int k = entries(rt, e, 4);
  const ty_explain_entry *f = find_task(e, k, "fused"), *add = find_task(e, k, "add");
  CHECK(f && add);
  if (f && add) {
    CHECK_EQ_INT(f->fused, 2);
    CHECK_STR_CONTAINS(f->fuse_end, "stencil (shifted) read of a store produced in this run");
    CHECK_STR_CONTAINS(add->fuse_end, "not fused with");
  }
  size_t len;
  double *va = (double *)bytes_of(rt, a, &len), *vq = (double *)bytes_of(rt, q, &len);
  for (int i = 0; i < 4; i++) CHECK(vq[i] == R(va[i + 1] * 2) + 1);
  CHECK(vq[4] == 1);
  free(va), free(vq);
  ty_store_release(a), ty_store_release(p), ty_store_release(lo), ty_store_release(hi), ty_store_release(q);
  ty_runtime_destroy(rt);
}

TEST(fuse_stops_at_transposed_read) {
  ty_runtime *rt = req_runtime(1, true);
  const int64_t shape[2] = {64, 64};
  ty_store *a = plain(rt, 2, shape, 1), *xt = NULL;
  REQ(rt, ty_flush(rt));
  ty_store *x = BS(rt, TY_OP_MUL, own(a), 2);
  ty_store *x1 = BS(rt, TY_OP_ADD, own(x), 1); /* fuses with the mul */
  REQ(rt, ty_store_transpose(rt, x, 0, 1, &xt));
  ty_store *y = BS(rt, TY_OP_SUB, own(xt), 1);
  ty_explain_entry e[4];
  int k = entries(rt, e, 4);
  const ty_explain_entry *f = find_task(e, k, "fused");
  CHECK(f != NULL);
  if (f) CHECK_STR_CONTAINS(f->fuse_end, "transposed read of a store produced in this run");
  size_t len;
  double *va = (double *)bytes_of(rt, a, &len), *vy = (double *)bytes_of(rt, y, &len), *v1 = (double *)bytes_of(rt, x1, &len);
  int bad = 0;
  for (int i = 0; i < 64; i++)
    for (int j = 0; j < 64; j++) {
      bad += vy[i * 64 + j] != R(va[j * 64 + i] * 2) - 1;
      bad += v1[i * 64 + j] != R(va[i * 64 + j] * 2) + 1;
    }
  CHECK_EQ_INT(bad, 0);
  free(va), free(vy), free(v1);
  ty_store_release(a), ty_store_release(x), ty_store_release(xt), ty_store_release(x1), ty_store_release(y);
  ty_runtime_destroy(rt);
}

/* x (64, 64) produced in the run, then its row 0 broadcast over 64 rows */
TEST(fuse_stops_at_broadcast_read) {
  ty_runtime *rt = req_runtime(1, true);
  const int64_t shape[2] = {64, 64};
  ty_store *a = plain(rt, 2, shape, 1), *row = NULL, *bc = NULL;
  REQ(rt, ty_flush(rt));
  ty_store *x = BS(rt, TY_OP_MUL, own(a), 2);
  ty_store *x1 = BS(rt, TY_OP_ADD, own(x), 1);
  REQ(rt, ty_store_slice(rt, x, 0, 0, 1, 1, &row));
  REQ(rt, ty_store_broadcast(rt, row, 2, shape, &bc));
  ty_store *y = BS(rt, TY_OP_SUB, own(bc), 1);
  ty_explain_entry e[4];
  int k = entries(rt, e, 4);
  const ty_explain_entry *f = find_task(e, k, "fused");
  CHECK(f != NULL);
  if (f) CHECK_STR_CONTAINS(f->fuse_end, "broadcast read of a store produced in this run");
  size_t len;
  double *va = (double *)bytes_of(rt, a, &len), *vy = (double *)bytes_of(rt, y, &len);
  int bad = 0;
  for (int i = 0; i < 64; i++)
    for (int j = 0; j < 64; j++) bad += vy[i * 64 + j] != R(va[j] * 2) - 1;
  CHECK_EQ_INT(bad, 0);
  free(va), free(vy);
  ty_store_release(a), ty_store_release(x), ty_store_release(x1), ty_store_release(row), ty_store_release(bc), ty_store_release(y);
  ty_runtime_destroy(rt);
}

/* The run reads a[0:n-1]; a copy then writes a[1:n], an overlapping view of
 * the same storage: it must not join (nor be moved before the run). */
TEST(fuse_view_aliasing_write_does_not_fuse) {
  const int64_t n = 1000, m = n - 1;
  double *ref = NULL;
  for (int fuse = 0; fuse < 2; fuse++) {
    ty_runtime *rt = req_runtime(1, fuse);
    ty_store *a = input(rt, TY_F64, 1, &n, 1), *lo = NULL, *hi = NULL;
    REQ(rt, ty_flush(rt));
    REQ(rt, ty_store_slice(rt, a, 0, 0, m, 1, &lo));
    REQ(rt, ty_store_slice(rt, a, 0, 1, n, 1, &hi));
    ty_store *t = BS(rt, TY_OP_MUL, own(lo), 2);
    ty_store *u = BS(rt, TY_OP_ADD, own(t), 1); /* t is held: read again below */
    REQ(rt, ty_copy(rt, hi, u));                /* writes a[1:n] */
    ty_store *w = BS(rt, TY_OP_ADD, own(t), 0);
    ty_explain_entry e[8];
    int k = entries(rt, e, 8);
    if (fuse) {
      const ty_explain_entry *f = find_task(e, k, "fused");
      CHECK(f != NULL);
      if (f) CHECK_STR_CONTAINS(f->fuse_end, "write through another view of a store read in this run");
    }
    size_t len;
    double *va = (double *)bytes_of(rt, a, &len);
    double *vw = (double *)bytes_of(rt, w, &len);
    if (!ref) {
      ref = malloc(sizeof(double) * (size_t)(n + m));
      memcpy(ref, va, sizeof(double) * (size_t)n);
      memcpy(ref + n, vw, sizeof(double) * (size_t)m);
    } else {
      CHECK(memcmp(ref, va, sizeof(double) * (size_t)n) == 0);
      CHECK(memcmp(ref + n, vw, sizeof(double) * (size_t)m) == 0);
    }
    free(va), free(vw);
    ty_store_release(a), ty_store_release(lo), ty_store_release(hi), ty_store_release(t);
    ty_store_release(u), ty_store_release(w);
    ty_runtime_destroy(rt);
  }
  free(ref);
}

/* Disjoint views of one storage are not a dependence: writing x[0:n] while
 * reading x[n:2n] fuses. */
TEST(fuse_disjoint_views_of_one_storage_fuse) {
  const int64_t n = 1000, two = 2 * n;
  ty_runtime *rt = req_runtime(1, true);
  ty_store *x = plain(rt, 1, &two, 1), *lo = NULL, *hi = NULL;
  REQ(rt, ty_flush(rt));
  REQ(rt, ty_store_slice(rt, x, 0, 0, n, 1, &lo));
  REQ(rt, ty_store_slice(rt, x, 0, n, two, 1, &hi));
  size_t len;
  double *v0 = (double *)bytes_of(rt, x, &len);
  ty_store *t = BS(rt, TY_OP_MUL, own(hi), 3);
  REQ(rt, ty_copy(rt, lo, t));
  ty_store_release(t);
  ty_store *z = BS(rt, TY_OP_ADD, own(hi), 1);
  REQ(rt, ty_flush(rt));
  CHECK_EQ_INT(FUSED_RUNS(rt), 1);
  CHECK_EQ_INT(FUSED_LAUNCHES(rt), 3);
  double *v = (double *)bytes_of(rt, x, &len), *vz = (double *)bytes_of(rt, z, &len);
  int bad = 0;
  for (int64_t i = 0; i < n; i++) bad += v[i] != v0[n + i] * 3 || v[n + i] != v0[n + i] || vz[i] != v0[n + i] + 1;
  CHECK_EQ_INT(bad, 0);
  free(v0), free(v), free(vz);
  ty_store_release(x), ty_store_release(lo), ty_store_release(hi), ty_store_release(z);
  ty_runtime_destroy(rt);
}

/* a is read by five sub-operations: the fused launch passes it once */
TEST(fuse_dedups_a_store_used_by_five_sub_operations) {
  ty_runtime *rt = req_runtime(1, true);
  ty_store *a = plain(rt, 1, &N1, 1);
  REQ(rt, ty_flush(rt));
  ty_store *t1 = bin(rt, TY_OP_MUL, a, a);             /* 2 uses */
  ty_store *t2 = B2(rt, TY_OP_ADD, t1, own(a));          /* 3 */
  ty_store *t3 = B2(rt, TY_OP_SUB, t2, own(a));          /* 4 */
  ty_store *z = B2(rt, TY_OP_DIV, t3, own(a));           /* 5 */
  CHECK_EQ_INT(rt->nwindow, 4);
  ty__fuse(rt);
  CHECK_EQ_INT(rt->nwindow, 1);
  const ty_pending *f = rt->window[0];
  CHECK(f->task == ty__fused_task(rt));
  CHECK_EQ_INT(f->fused, 4);
  CHECK_EQ_INT(f->nargs, 2); /* a (IN) and z (OUT) */
  int a_args = 0;
  for (int i = 0; i < f->nargs; i++) a_args += f->args[i].store == a;
  CHECK_EQ_INT(a_args, 1);
  const ty__fhead *h = (const ty__fhead *)f->scalars;
  CHECK_EQ_INT(h->nsub, 4);
  CHECK_EQ_INT(h->nargs, 2);
  int refs_to_a = 0;
  const ty__fsub *s = ty__fsub_first(h);
  for (int k = 0; k < h->nsub; k++, s = ty__fsub_next(s))
    for (int j = 0; j < s->nops; j++) refs_to_a += s->opnd[j].ref >= 0 && f->args[s->opnd[j].ref].store == a;
  CHECK_EQ_INT(refs_to_a, 5);
  REQ(rt, ty_flush(rt));
  size_t len;
  double *va = (double *)bytes_of(rt, a, &len), *vz = (double *)bytes_of(rt, z, &len);
  int bad = 0;
  for (int64_t i = 0; i < N1; i++) {
    double w = ((R(va[i] * va[i]) + va[i]) - va[i]) / va[i];
    bad += memcmp(&w, &vz[i], 8) != 0;
  }
  CHECK_EQ_INT(bad, 0);
  free(va), free(vz);
  ty_store_release(a), ty_store_release(z);
  ty_runtime_destroy(rt);
}

/* ---- user tasks ------------------------------------------------------------------------ */

/* "axpb": out = in * s[0] + s[1]; point-wise. Records what its context says. */
typedef struct axpb_seen {
  int calls;
  int bad_identity;
} axpb_seen;

static int axpb_cpu(ty_task_ctx *ctx) {
  axpb_seen *seen = (axpb_seen *)ctx->task_data;
  __atomic_add_fetch(&seen->calls, 1, __ATOMIC_RELAXED);
  if (strcmp(ctx->task_name, "axpb") != 0 || ctx->nargs != 2 || ctx->scalar_bytes != 16 ||
      strcmp(ty_task_name(ctx->task), "axpb") != 0)
    __atomic_add_fetch(&seen->bad_identity, 1, __ATOMIC_RELAXED);
  double s[2];
  memcpy(s, ctx->scalars, sizeof s);
  const ty_tile *in = &ctx->args[0], *out = &ctx->args[1];
  for (int64_t i = 0; i < in->shape[0]; i++) {
    double x = *(const double *)(in->data + i * in->strides[0] * 8);
    *(double *)(out->data + i * out->strides[0] * 8) = x * s[0] + s[1];
  }
  /* the box it was given is the tile's */
  if (ctx->hi[0] - ctx->lo[0] != in->shape[0] || in->lo[0] != ctx->lo[0])
    __atomic_add_fetch(&seen->bad_identity, 1, __ATOMIC_RELAXED);
  return 0;
}

static const ty_task *reg_axpb(ty_runtime *rt, axpb_seen *seen, unsigned flags, const char *name) {
  ty_task_desc d = {.name = name, .cpu = axpb_cpu, .data = seen, .flags = flags};
  const ty_task *t = NULL;
  REQ(rt, ty_task_register(rt, &d, &t));
  return t;
}

static void launch_axpb(ty_runtime *rt, const ty_task *t, ty_store *in, ty_store *out, double a, double b) {
  ty_arg args[2] = {{in, TY_PRIV_IN, TY_REDOP_NONE, TY_PROJ_ALIGNED}, {out, TY_PRIV_OUT, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
  double s[2] = {a, b};
  ty_launch_desc d = {.task = t, .ndim = ty_store_ndim(out), .domain = ty_store_shape(out), .nargs = 2,
                      .args = args, .scalars = s, .scalar_bytes = sizeof s};
  REQ(rt, ty_launch(rt, &d));
}

/* mul, axpb, add: one run; axpb runs on blocks with its own context */
TEST(fuse_pointwise_user_task_between_builtins) {
  for (int cpus = 1; cpus <= 3; cpus += 2) {
    axpb_seen seen = {0, 0};
    ty_runtime *rt = req_runtime(cpus, true);
    const ty_task *t = reg_axpb(rt, &seen, TY_TASK_POINTWISE, "axpb");
    ty_store *a = plain(rt, 1, &N1, 1);
    REQ(rt, ty_flush(rt));
    ty_store *x = BS(rt, TY_OP_MUL, own(a), 2), *y = NULL;
    REQ(rt, ty_store_create(rt, TY_F64, 1, &N1, &y));
    launch_axpb(rt, t, x, y, 3, 0.5);
    ty_store_release(x);
    ty_store *z = B2(rt, TY_OP_ADD, y, own(a));
    ty_explain_entry e[4];
    int k = entries(rt, e, 4);
    const ty_explain_entry *f = find_task(e, k, "fused");
    CHECK(f != NULL);
    if (f) {
      CHECK_EQ_INT(f->fused, 3);
      CHECK_STR_CONTAINS(f->fused_ops, "mul axpb add");
    }
    CHECK_EQ_INT(ELIDED(rt), 2 * (uint64_t)N1 * 8);
    CHECK(seen.calls >= (N1 + 4095) / 4096); /* once per block (at most 4096 elements) */
    CHECK_EQ_INT(seen.bad_identity, 0);
    size_t len;
    double *va = (double *)bytes_of(rt, a, &len), *vz = (double *)bytes_of(rt, z, &len);
    int bad = 0;
    for (int64_t i = 0; i < N1; i++) {
      double w = (R(R(va[i] * 2) * 3) + 0.5) + va[i];
      bad += memcmp(&w, &vz[i], 8) != 0;
    }
    CHECK_EQ_INT(bad, 0);
    free(va), free(vz);
    ty_store_release(a), ty_store_release(z);
    ty_runtime_destroy(rt);
  }
}

/* A task without the point-wise flag, or with TY_TASK_NOFUSE, ends the run
 * that produces its input. */
TEST(fuse_stops_at_tasks_that_are_not_pointwise) {
  const unsigned flags[2] = {0, TY_TASK_POINTWISE | TY_TASK_NOFUSE};
  const char *why[2] = {"not point-wise", "its task is marked not fusable"};
  for (int c = 0; c < 2; c++) {
    axpb_seen seen = {0, 0};
    ty_runtime *rt = req_runtime(1, true);
    const ty_task *t = reg_axpb(rt, &seen, flags[c], "opaque");
    ty_store *a = input(rt, TY_F64, 1, &N1, 1), *y = NULL;
    REQ(rt, ty_flush(rt));
    ty_store *x = BS(rt, TY_OP_MUL, own(a), 2);
    ty_store *x2 = BS(rt, TY_OP_ADD, own(x), 2);
    REQ(rt, ty_store_create(rt, TY_F64, 1, &N1, &y));
    launch_axpb(rt, t, x2, y, 1, 0);
    ty_explain_entry e[4];
    int k = entries(rt, e, 4);
    const ty_explain_entry *f = find_task(e, k, "fused"), *o = find_task(e, k, "opaque");
    CHECK(f && o);
    if (f) CHECK_STR_CONTAINS(f->fuse_end, why[c]);
    if (o) CHECK_STR_CONTAINS(o->fuse_end, "not fused with");
    ty_store_release(a), ty_store_release(x), ty_store_release(x2), ty_store_release(y);
    ty_runtime_destroy(rt);
  }
}

/* A point-wise task that fails inside a run: the error names it, the run's
 * outputs read as errors, the runtime goes on. */
static int failing_cpu(ty_task_ctx *ctx) { return ty_ctx_fail(ctx, "boom at %lld", (long long)ctx->lo[0]); }

TEST(fuse_error_in_a_fused_task_names_it) {
  ty_runtime *rt = req_runtime(1, true);
  ty_task_desc d = {.name = "explodes", .cpu = failing_cpu, .flags = TY_TASK_POINTWISE};
  const ty_task *t = NULL;
  REQ(rt, ty_task_register(rt, &d, &t));
  ty_store *a = input(rt, TY_F64, 1, &N1, 1), *y = NULL;
  ty_store *x = BS(rt, TY_OP_MUL, own(a), 2);
  REQ(rt, ty_store_create(rt, TY_F64, 1, &N1, &y));
  launch_axpb(rt, t, x, y, 1, 0);
  ty_store_release(x);
  ty_status st = ty_flush(rt);
  CHECK(st == TY_ETASK);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "task 'explodes' (fused): boom at 0");
  size_t len;
  CHECK(ty_store_read(rt, y, NULL, 0) != TY_OK);
  ty_store *ok = BS(rt, TY_OP_ADD, own(a), 1);
  free(bytes_of(rt, ok, &len));
  ty_store_release(a), ty_store_release(y), ty_store_release(ok);
  ty_runtime_destroy(rt);
}

/* "lut": y = table[x mod 4], the table read whole by every block (in:broadcast) */
static int lut_cpu(ty_task_ctx *ctx) {
  const ty_tile *x = &ctx->args[0], *tab = &ctx->args[1], *y = &ctx->args[2];
  if (tab->ndim != 1 || tab->shape[0] != 4) return ty_ctx_fail(ctx, "lut: the table is not whole");
  for (int64_t i = 0; i < x->shape[0]; i++) {
    double v = *(const double *)(x->data + i * x->strides[0] * 8);
    int64_t k = ((int64_t)v % 4 + 4) % 4;
    *(double *)(y->data + i * y->strides[0] * 8) = *(const double *)(tab->data + k * tab->strides[0] * 8);
  }
  return 0;
}

/* "sumsq": acc += x*x, acc a reduction argument (the run's terminal) */
static int sumsq_cpu(ty_task_ctx *ctx) {
  const ty_tile *acc = &ctx->args[0], *x = &ctx->args[1];
  double s = 0;
  for (int64_t i = 0; i < x->shape[0]; i++) {
    double v = *(const double *)(x->data + i * x->strides[0] * 8);
    s += v * v;
  }
  *(double *)acc->data += s;
  return 0;
}

TEST(fuse_user_tasks_with_whole_and_reduction_arguments) {
  for (int fuse = 0; fuse < 2; fuse++) {
    ty_runtime *rt = req_runtime(3, fuse);
    ty_task_desc d1 = {.name = "lut", .cpu = lut_cpu, .flags = TY_TASK_POINTWISE};
    ty_task_desc d2 = {.name = "sumsq", .cpu = sumsq_cpu, .flags = TY_TASK_POINTWISE};
    const ty_task *lut = NULL, *sumsq = NULL;
    REQ(rt, ty_task_register(rt, &d1, &lut));
    REQ(rt, ty_task_register(rt, &d2, &sumsq));
    const int64_t four = 4;
    const double tv[4] = {10, 20, 30, 40};
    ty_store *tab = NULL, *a = plain(rt, 1, &N1, 5), *y = NULL, *acc = NULL, *accv = NULL;
    REQ(rt, ty_store_from_buffer(rt, TY_F64, 1, &four, tv, &tab));
    REQ(rt, ty_store_create(rt, TY_F64, 1, &N1, &y));
    REQ(rt, ty_full(rt, TY_F64, 0, NULL, 0, &acc));
    REQ(rt, ty_flush(rt));
    ty_store *x = BS(rt, TY_OP_MUL, own(a), 3);
    ty_arg args[3] = {{x, TY_PRIV_IN, TY_REDOP_NONE, TY_PROJ_ALIGNED},
                      {tab, TY_PRIV_IN, TY_REDOP_NONE, TY_PROJ_WHOLE},
                      {y, TY_PRIV_OUT, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
    ty_launch_desc ld = {.task = lut, .ndim = 1, .domain = &N1, .nargs = 3, .args = args};
    REQ(rt, ty_launch(rt, &ld));
    ty_store *z = BS(rt, TY_OP_SUB, own(y), 15);
    REQ(rt, ty_store_broadcast(rt, acc, 1, &N1, &accv));
    ty_arg rargs[2] = {{accv, TY_PRIV_REDUCE, TY_REDOP_SUM, TY_PROJ_ALIGNED},
                       {z, TY_PRIV_IN, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
    ty_launch_desc rd = {.task = sumsq, .ndim = 1, .domain = &N1, .nargs = 2, .args = rargs};
    REQ(rt, ty_launch(rt, &rd));
    ty_explain_entry e[4];
    int k = entries(rt, e, 4);
    if (fuse) {
      const ty_explain_entry *f = find_task(e, k, "fused");
      CHECK(f != NULL);
      if (f) {
        CHECK_EQ_INT(f->fused, 4);
        CHECK_STR_CONTAINS(f->fused_ops, "mul lut sub sumsq");
        CHECK_STR_CONTAINS(f->fuse_end, "reduction is terminal");
      }
    }
    size_t len;
    double *va = (double *)bytes_of(rt, a, &len), *vz = (double *)bytes_of(rt, z, &len);
    double want = 0;
    int bad = 0;
    for (int64_t i = 0; i < N1; i++) {
      double xv = va[i] * 3, w = tv[(((int64_t)xv % 4) + 4) % 4] - 15;
      bad += vz[i] != w;
      want += w * w;
    }
    CHECK_EQ_INT(bad, 0);
    ty_value v;
    REQ(rt, ty_item(rt, acc, &v));
    CHECK_NEAR(v.f, want, 1e-12);
    free(va), free(vz);
    ty_store_release(tab), ty_store_release(a), ty_store_release(y), ty_store_release(acc);
    ty_store_release(accv), ty_store_release(x), ty_store_release(z);
    ty_runtime_destroy(rt);
  }
}

/* a run whose every result is dropped: all its stores are temporaries and
 * the fused launch has no argument at all */
TEST(fuse_run_with_no_live_result) {
  ty_runtime *rt = req_runtime(3, true);
  ty_store *r = NULL;
  REQ(rt, ty_random(rt, TY_F64, 1, &N1, &r));
  ty_store *x = BS(rt, TY_OP_MUL, r, 2);
  ty_store_release(x);
  REQ(rt, ty_flush(rt));
  CHECK_EQ_INT(FUSED_RUNS(rt), 1);
  CHECK_EQ_INT(ELIDED(rt), 2 * (uint64_t)N1 * 8);
  ty_stats st;
  ty_get_stats(rt, &st);
  CHECK_EQ_INT(st.bytes_live, 0);
  ty_runtime_destroy(rt);
}

/* ---- control ------------------------------------------------------------------------------ */

/* fuse = false globally, in a scope, and as a launch option */
TEST(fuse_axis_turns_fusion_off) {
  ty_runtime *rt = req_runtime(1, false);
  ty_store *a = input(rt, TY_F64, 1, &N1, 1);
  ty_store *z = BS(rt, TY_OP_ADD, BS(rt, TY_OP_MUL, own(a), 2), 1);
  REQ(rt, ty_flush(rt));
  CHECK_EQ_INT(FUSED_RUNS(rt), 0);
  ty_store_release(z);
  ty_runtime_destroy(rt);

  rt = req_runtime(1, true);
  ty_store_release(a);
  a = input(rt, TY_F64, 1, &N1, 1);
  ty_policy off = {.set = TY_POL_FUSE, .fuse = false};
  REQ(rt, ty_scope_push(rt, &off, "scope at test.lua:3"));
  z = BS(rt, TY_OP_ADD, BS(rt, TY_OP_MUL, own(a), 2), 1);
  REQ(rt, ty_scope_pop(rt));
  ty_explain_entry e[4];
  int k = entries(rt, e, 4);
  CHECK(find_task(e, k, "fused") == NULL);
  const ty_explain_entry *m = find_task(e, k, "mul");
  CHECK(m != NULL);
  if (m) CHECK_STR_CONTAINS(m->fuse_end, "fuse = false (scope at test.lua:3)");
  ty_store_release(z);

  REQ(rt, ty_launch_options(rt, &off));
  z = BS(rt, TY_OP_ADD, BS(rt, TY_OP_MUL, own(a), 2), 1);
  REQ(rt, ty_launch_options(rt, NULL));
  REQ(rt, ty_flush(rt));
  CHECK_EQ_INT(FUSED_RUNS(rt), 0);
  ty_store_release(z);
  z = BS(rt, TY_OP_ADD, BS(rt, TY_OP_MUL, own(a), 2), 1);
  REQ(rt, ty_flush(rt));
  CHECK_EQ_INT(FUSED_RUNS(rt), 1);
  ty_store_release(z), ty_store_release(a);
  ty_runtime_destroy(rt);
}

/* a window of 4 launches: the run ends where the window did */
TEST(fuse_run_ends_when_the_window_is_full) {
  ty_runtime *rt = rt_window(1, 4);
  ty_store *a = input(rt, TY_F64, 1, &N1, 1);
  REQ(rt, ty_flush(rt));
  ty_store *x = own(a);
  for (int i = 0; i < 6; i++) x = BS(rt, TY_OP_ADD, x, 1);
  ty_explain_entry e[4];
  int k = entries(rt, e, 4);
  CHECK_EQ_INT(k, 2);
  CHECK(strcmp(e[0].task, "fused") == 0 && e[0].fused == 4);
  CHECK_STR_CONTAINS(e[0].fuse_end, "window full (4 launches)");
  CHECK(strcmp(e[1].task, "fused") == 0 && e[1].fused == 2);
  ty_store_release(x), ty_store_release(a);
  ty_runtime_destroy(rt);
}

/* a launch that touches nothing of the run (a 0-d fill) is moved before it */
TEST(fuse_moves_independent_launches_before_the_run) {
  ty_runtime *rt = req_runtime(1, true);
  ty_store *a = input(rt, TY_F64, 1, &N1, 1), *s = NULL;
  REQ(rt, ty_flush(rt));
  ty_store *x = BS(rt, TY_OP_MUL, own(a), 2);
  REQ(rt, ty_full(rt, TY_F64, 0, NULL, 7, &s)); /* another domain, independent */
  ty_store *z = BS(rt, TY_OP_ADD, x, 1);
  CHECK_EQ_INT(rt->nwindow, 3);
  ty__fuse(rt); /* what the flush does first: the window after fusion */
  CHECK_EQ_INT(rt->nwindow, 2);
  CHECK(strcmp(rt->window[0]->task->name, "fill") == 0);
  CHECK(rt->window[1]->task == ty__fused_task(rt) && rt->window[1]->fused == 2);
  ty_value v;
  REQ(rt, ty_item(rt, s, &v));
  CHECK(v.f == 7);
  ty_store_release(a), ty_store_release(s), ty_store_release(z);
  ty_runtime_destroy(rt);
}

/* chains longer than one description: several runs, same values */
static ty_store *prog_long_chain(ty_runtime *rt, const void *arg) {
  (void)arg;
  ty_store *x = input(rt, TY_F64, 1, &N1, 9);
  for (int i = 0; i < 300; i++) x = BS(rt, i % 3 == 0 ? TY_OP_MUL : i % 3 == 1 ? TY_OP_ADD : TY_OP_SUB, x, 1 + i * 0.001);
  return x;
}

TEST(fuse_cuts_runs_that_do_not_fit_one_description) {
  ty_runtime *rt = rt_window(1, 400);
  ty_store *x = prog_long_chain(rt, NULL);
  ty_explain_entry e[16];
  int k = entries(rt, e, 16);
  CHECK(k >= 3);
  bool full = false;
  for (int i = 0; i < k; i++) full |= strstr(e[i].fuse_end, "description is full") != NULL;
  CHECK(full);
  ty_store_release(x);
  ty_runtime_destroy(rt);
  same_fused_unfused(prog_long_chain, NULL, "300-op chain");
}

/* reductions at the end of runs: every kind, full and axis, both reduction
 * modes (REDUCE privates for short kept dims, OUT for long ones) */
typedef struct redcase {
  ty_reduce_op op;
  ty_dtype t;
  int axis;
  int64_t rows, cols;
} redcase;

static ty_store *prog_red(ty_runtime *rt, const void *arg) {
  const redcase *c = arg;
  int64_t shape[2] = {c->rows, c->cols};
  ty_store *a = input(rt, c->t, 2, shape, 11), *b = input(rt, c->t, 2, shape, 12);
  ty_store *x = bin(rt, TY_OP_MAXIMUM, a, b); /* NaN-free for max of specials? not needed */
  ty_store *r = red(rt, c->op, x, c->axis);
  ty_store_release(a), ty_store_release(b), ty_store_release(x);
  return r;
}

TEST(fuse_reductions_match_unfused) {
  const ty_reduce_op ops[] = {TY_RED_SUM, TY_RED_PROD, TY_RED_MIN, TY_RED_MAX, TY_RED_MEAN};
  const ty_dtype types[] = {TY_F64, TY_F32, TY_I64, TY_I32, TY_U8, TY_BOOL};
  const int64_t shapes[3][2] = {{300, 200}, {3, 20000}, {20000, 3}};
  for (int o = 0; o < 5; o++)
    for (int t = 0; t < 6; t++)
      for (int s = 0; s < 3; s++)
        for (int axis = -1; axis < 2; axis++) {
          redcase c = {ops[o], types[t], axis, shapes[s][0], shapes[s][1]};
          size_t l0, l1, l3;
          uint64_t runs = 0;
          char *ref = run_prog(1, false, prog_red, &c, &l0, NULL);
          char *f1 = run_prog(1, true, prog_red, &c, &l1, &runs);
          char *f3 = run_prog(3, true, prog_red, &c, &l3, NULL);
          CHECK(l0 == l1 && l0 == l3);
          CHECK(runs >= 1);
          ty_dtype rt_ = (c.op == TY_RED_MEAN && !ty_dtype_is_float(c.t)) ? TY_F64
                         : (c.op == TY_RED_SUM || c.op == TY_RED_PROD) && !ty_dtype_is_float(c.t) ? TY_I64 : c.t;
          size_t es = ty_dtype_size(rt_);
          bool exact = !ty_dtype_is_float(rt_) || c.op == TY_RED_MIN || c.op == TY_RED_MAX;
          int bad = 0;
          for (size_t i = 0; l0 == l1 && l0 == l3 && i < l0 / es; i++) {
            double r0 = ty__load_f64(ref + i * es, rt_), r1 = ty__load_f64(f1 + i * es, rt_), r3 = ty__load_f64(f3 + i * es, rt_);
            if (exact) {
              bad += memcmp(ref + i * es, f1 + i * es, es) != 0;
            } else if (!(isnan(r0) && isnan(r1) && isnan(r3))) {
              double tol = (c.op == TY_RED_PROD ? 1e-12 : 1e-12) * (fabs(r0) > 1 ? fabs(r0) : 1) * (rt_ == TY_F32 ? 1e7 : 1);
              bad += !(fabs(r0 - r1) <= tol && fabs(r0 - r3) <= tol) && !(isinf(r0) && r0 == r1 && r0 == r3);
            }
          }
          if (bad)
            fprintf(stderr, "%s %s shape (%lld, %lld) axis %d: %d differ\n", ty_reduce_name(c.op),
                    ty_dtype_name(c.t), (long long)c.rows, (long long)c.cols, axis, bad);
          CHECK_EQ_INT(bad, 0);
          free(ref), free(f1), free(f3);
        }
}

/* fastmath: the fused and unfused fast paths agree exactly, and stay within
 * 4 ULP of the accurate functions */
static ty_store *prog_fast(ty_runtime *rt, const void *arg) {
  const int *op = arg;
  ty_policy fast = {.set = TY_POL_FASTMATH, .fastmath = true};
  REQ(rt, ty_scope_push(rt, &fast, "fast"));
  ty_store *a = input(rt, TY_F64, 1, &N1, 3);
  ty_store *x = BS(rt, TY_OP_MUL, own(a), 0.25);
  ty_store *y = *op < TY_OP_FIRST_BINARY ? U1(rt, (ty_op)*op, x) : BS(rt, (ty_op)*op, x, 1.5);
  ty_store *z = cast(rt, y, TY_F64);
  REQ(rt, ty_scope_pop(rt));
  ty_store_release(a), ty_store_release(y);
  return z;
}

static int64_t ulps(double a, double b) {
  if (isnan(a) && isnan(b)) return 0;
  if (a == b) return 0;
  int64_t ia, ib;
  memcpy(&ia, &a, 8);
  memcpy(&ib, &b, 8);
  if ((ia < 0) != (ib < 0)) return INT64_MAX;
  return ia > ib ? ia - ib : ib - ia;
}

TEST(fuse_fastmath_within_4_ulp) {
  const int ops[] = {TY_OP_EXP, TY_OP_LOG, TY_OP_SIN, TY_OP_COS, TY_OP_TANH, TY_OP_POW};
  for (int i = 0; i < 6; i++) {
    same_fused_unfused(prog_fast, &ops[i], ty_op_name((ty_op)ops[i]));
    size_t l0, l1;
    char *fast = run_prog(1, true, prog_fast, &ops[i], &l0, NULL);
    /* the accurate result: the same program without the scope */
    ty_runtime *rt = req_runtime(1, true);
    ty_store *a = input(rt, TY_F64, 1, &N1, 3);
    ty_store *x = BS(rt, TY_OP_MUL, own(a), 0.25);
    ty_store *y = ops[i] < TY_OP_FIRST_BINARY ? U1(rt, (ty_op)ops[i], x) : BS(rt, (ty_op)ops[i], x, 1.5);
    char *acc = bytes_of(rt, y, &l1);
    CHECK(l0 == l1);
    int64_t worst = 0;
    for (size_t k = 0; k < l0 / 8; k++) {
      double f, g;
      memcpy(&f, fast + 8 * k, 8);
      memcpy(&g, acc + 8 * k, 8);
      int64_t u = ulps(f, g);
      if (fabs(g) < 1e-300 && fabs(f) < 1e-300) u = 0; /* denormal/zero region: absolute */
      if (u > worst) worst = u;
    }
    if (worst > 5) fprintf(stderr, "%s: %lld ulps\n", ty_op_name((ty_op)ops[i]), (long long)worst);
    CHECK(worst <= 5); /* 4-ULP functions vs 1-ULP ones: at most 5 apart */
    free(fast), free(acc);
    ty_store_release(a), ty_store_release(y);
    ty_runtime_destroy(rt);
  }
}

/* inputs that are transposed, strided or row-broadcast run the box path */
static ty_store *prog_layouts(ty_runtime *rt, const void *arg) {
  (void)arg;
  const int64_t shape[2] = {300, 170}, tshape[2] = {170, 300}, row = 170, big[2] = {600, 170};
  ty_store *m = input(rt, TY_F64, 2, shape, 1), *mt0 = input(rt, TY_F64, 2, tshape, 2), *r = input(rt, TY_F64, 1, &row, 3);
  ty_store *mb = input(rt, TY_F64, 2, big, 4), *mt = NULL, *ms = NULL;
  REQ(rt, ty_flush(rt));
  REQ(rt, ty_store_transpose(rt, mt0, 0, 1, &mt));
  REQ(rt, ty_store_slice(rt, mb, 0, 0, 600, 2, &ms)); /* every other row */
  ty_store *z = B2(rt, TY_OP_ADD, B2(rt, TY_OP_MUL, own(m), own(mt)), own(r));
  z = B2(rt, TY_OP_SUB, z, own(ms));
  z = U1(rt, TY_OP_EXP, BS(rt, TY_OP_MUL, z, 0.01));
  ty_store_release(m), ty_store_release(mt0), ty_store_release(r), ty_store_release(mb);
  ty_store_release(mt), ty_store_release(ms);
  return z;
}

TEST(fuse_strided_transposed_and_broadcast_inputs) {
  CHECK(same_fused_unfused(prog_layouts, NULL, "layouts") >= 1);
}

/* ---- random programs ------------------------------------------------------------------------ */

/* A random program: element-wise ops, views (slices, transposes, row
 * broadcasts), copies into views, min/max and integer reductions, stores
 * dropped as it goes (temporaries), all in one window. Deterministic in its
 * seed, so the same program runs fused and unfused; every store still held
 * at the end is read. Float sums are left out: they are not bit-identical
 * fused (docs/fusion.md). FUSE_FUZZ=n runs n seeds instead of 60 (1,500 pass,
 * also under the sanitizers), FUSE_TRACE=1 prints each program's steps. */
typedef struct rng {
  uint64_t s;
} rng;
static uint32_t rnd(rng *r, uint32_t n) {
  r->s = r->s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)((r->s >> 33) % n);
}

#define RP_MAX 48
static int random_program(ty_runtime *rt, uint64_t seed, ty_store **live) {
  rng g = {seed * 0x9e3779b97f4a7c15ULL + 7};
  const int64_t R = 37 + rnd(&g, 30), C = 64 + rnd(&g, 200), shape[2] = {R, C};
  int n = 0;
  const ty_dtype types[3] = {TY_F64, TY_I64, TY_F32};
  for (int i = 0; i < 3; i++) live[n++] = input(rt, types[rnd(&g, 3)], 2, shape, seed + (uint64_t)i);
  for (int step = 0; step < 24 && n < RP_MAX - 2; step++) {
    ty_store *a = live[rnd(&g, (uint32_t)n)], *b = live[rnd(&g, (uint32_t)n)], *out = NULL;
    const int nd = ty_store_ndim(a);
    const char *what = "?";
    switch (rnd(&g, 9)) {
    case 0: case 1: case 2: { /* binary, with broadcasting when shapes allow */
      static const ty_op ops[] = {TY_OP_ADD, TY_OP_SUB, TY_OP_MUL, TY_OP_MAXIMUM, TY_OP_MINIMUM,
                                  TY_OP_LT, TY_OP_EQ, TY_OP_DIV, TY_OP_AND};
      ty_op op = ops[rnd(&g, 9)];
      what = ty_op_name(op);
      if (ty_binary(rt, op, a, b, &out) != TY_OK) out = NULL;
      break;
    }
    case 3: { /* unary */
      static const ty_op ops[] = {TY_OP_NEG, TY_OP_ABS, TY_OP_EXP, TY_OP_SIN, TY_OP_SQRT, TY_OP_FLOOR, TY_OP_NOT};
      ty_op op = ops[rnd(&g, 7)];
      what = ty_op_name(op);
      if (ty_unary(rt, op, a, &out) != TY_OK) out = NULL;
      break;
    }
    case 4: /* a view: transposed, a slice, or a row broadcast */
      if (nd == 2 && rnd(&g, 2)) {
        if (ty_store_transpose(rt, a, 0, 1, &out) != TY_OK) out = NULL;
      } else if (nd >= 1 && ty_store_shape(a)[0] > 3) {
        int64_t len = ty_store_shape(a)[0], lo = rnd(&g, 3);
        if (ty_store_slice(rt, a, 0, lo, len - 2 + lo % 2, 1 + rnd(&g, 2), &out) != TY_OK) out = NULL;
      }
      break;
    case 5: { /* where */
      if (ty_where(rt, a, b, live[rnd(&g, (uint32_t)n)], &out) != TY_OK) out = NULL;
      break;
    }
    case 6: { /* copy into a view of another store (same shape only) */
      if (ty_copy(rt, b, a) != TY_OK) { /* shapes that do not broadcast: nothing */ }
      break;
    }
    case 7: { /* min/max (any dtype) or an integer sum */
      const ty_reduce_op ops[3] = {TY_RED_MIN, TY_RED_MAX, TY_RED_SUM};
      ty_reduce_op op = ops[rnd(&g, 3)];
      if (op == TY_RED_SUM && ty_dtype_is_float(ty_store_dtype(a))) op = TY_RED_MAX;
      int axis = nd ? (int)rnd(&g, (uint32_t)nd + 1) - 1 : -1;
      what = ty_reduce_name(op);
      if (ty_store_size(a) > 0 && ty_reduce(rt, op, a, axis, &out) != TY_OK) out = NULL;
      break;
    }
    default: /* drop a store: what the program no longer holds may become a temporary */
      if (n > 3) {
        int k = 3 + (int)rnd(&g, (uint32_t)n - 3);
        ty_store_release(live[k]);
        live[k] = live[--n];
      }
      break;
    }
    if (out && getenv("FUSE_TRACE"))
      fprintf(stderr, "step %d: store %d = %s %s (from %s)\n", step, n, what, ty_dtype_name(ty_store_dtype(out)),
              ty_dtype_name(ty_store_dtype(a)));
    if (out) live[n++] = out;
  }
  return n;
}

/* Same bytes, except that any two NaNs are equal: a min/max reduction over
 * NaNs of both signs (sqrt(-1) is -NaN on x86, NAN is +NaN) keeps the first
 * it meets, which depends on how the elements are split into pieces, fused or
 * not. */
static bool same_values(const char *a, const char *b, size_t len, ty_dtype t) {
  if (memcmp(a, b, len) == 0) return true;
  if (!ty_dtype_is_float(t)) return false;
  size_t es = ty_dtype_size(t);
  for (size_t i = 0; i < len; i += es) {
    if (memcmp(a + i, b + i, es) == 0) continue;
    double x = ty__load_f64(a + i, t), y = ty__load_f64(b + i, t);
    if (!(isnan(x) && isnan(y))) return false;
  }
  return true;
}

TEST(fuse_random_programs_match_unfused) {
  int fused_somewhere = 0;
  for (uint64_t seed = 1; seed <= (getenv("FUSE_FUZZ") ? (uint64_t)atoll(getenv("FUSE_FUZZ")) : 60); seed++) {
    char *ref[RP_MAX] = {0};
    size_t lens[RP_MAX];
    int nref = -1;
    for (int mode = 0; mode < 4; mode++) {
      /* 0: unfused 1 cpu (the reference), 1: fused 1 cpu, 2: fused 3 cpus, 3: unfused 3 cpus */
      ty_runtime *rt = req_runtime(mode >= 2 ? 3 : 1, mode == 1 || mode == 2);
      ty_store *live[RP_MAX];
      int n = random_program(rt, seed, live);
      REQ(rt, ty_flush(rt));
      fused_somewhere += mode == 1 && FUSED_RUNS(rt) > 0;
      CHECK(nref < 0 || n == nref);
      for (int i = 0; i < n; i++) {
        size_t len;
        char *got = bytes_of(rt, live[i], &len);
        if (mode == 0) {
          ref[i] = got;
          lens[i] = len;
        } else {
          bool same = i < nref && len == lens[i] && same_values(got, ref[i], len, ty_store_dtype(live[i]));
          if (!same) fprintf(stderr, "seed %llu store %d differs (mode %d)\n", (unsigned long long)seed, i, mode);
          CHECK(same);
          free(got);
        }
        ty_store_release(live[i]);
      }
      if (mode == 0) nref = n;
      ty_runtime_destroy(rt);
    }
    for (int i = 0; i < nref; i++) free(ref[i]);
  }
  CHECK(fused_somewhere > 40);
}

/* ---- compiled kernels (fused_codegen.c) -------------------------------------------------- */

/* Every op the code generator handles, each result kept (an output of the
 * run), over inputs with NaN, infinities and signed zeros; n is not a
 * multiple of the vector width (a padded tail in every piece). */
#define SINK_OUTS 40
static int kitchen_sink(ty_runtime *rt, int64_t n, ty_store **outs, int part) {
  ty_store *a = input(rt, TY_F64, 1, &n, 21), *b = input(rt, TY_F64, 1, &n, 22);
  ty_store *two = scal(rt, TY_F64, 2), *half = scal(rt, TY_F64, 0.5), *yes = NULL;
  REQ(rt, ty_scalar_i64(rt, TY_BOOL, 1, &yes));
  int k = 0;
  ty_store *x = bin(rt, TY_OP_MUL, a, half); /* a temporary feeding everything */
  if (part == 1) { /* the ufuncs of issue 18 */
    for (int op = TY_OP_TAN; op <= TY_OP_ISFINITE; op++)
      if (op != TY_OP_INVERT) outs[k++] = un(rt, (ty_op)op, x);
    const ty_op bin18[] = {TY_OP_XOR, TY_OP_ARCTAN2, TY_OP_HYPOT, TY_OP_FLOORDIV};
    for (int i = 0; i < 4; i++) outs[k++] = bin(rt, bin18[i], x, b);
    ty_store *m = bin(rt, TY_OP_LT, x, b), *m2 = bin(rt, TY_OP_GE, b, half);
    const ty_op bool18[] = {TY_OP_XOR, TY_OP_BITAND, TY_OP_BITOR, TY_OP_BITXOR};
    for (int i = 0; i < 4; i++) outs[k++] = bin(rt, bool18[i], m, m2);
    outs[k++] = un(rt, TY_OP_INVERT, m);
    outs[k++] = un(rt, TY_OP_ISNAN, m);
    outs[k++] = un(rt, TY_OP_ISFINITE, m);
    ty_store_release(a), ty_store_release(b), ty_store_release(two), ty_store_release(half);
    ty_store_release(yes), ty_store_release(x), ty_store_release(m), ty_store_release(m2);
    return k;
  }
  const ty_op un_ops[] = {TY_OP_NEG, TY_OP_EXP, TY_OP_LOG, TY_OP_SQRT, TY_OP_ABS, TY_OP_SIN,
                          TY_OP_COS, TY_OP_TANH, TY_OP_FLOOR, TY_OP_CEIL, TY_OP_NOT};
  for (int i = 0; i < 11; i++) outs[k++] = un(rt, un_ops[i], x);
  const ty_op bin_ops[] = {TY_OP_ADD, TY_OP_SUB, TY_OP_MUL, TY_OP_DIV, TY_OP_POW, TY_OP_MAXIMUM,
                           TY_OP_MINIMUM, TY_OP_LT, TY_OP_LE, TY_OP_GT, TY_OP_GE, TY_OP_EQ,
                           TY_OP_NE, TY_OP_AND, TY_OP_OR};
  for (int i = 0; i < 15; i++) outs[k++] = bin(rt, bin_ops[i], x, b);
  outs[k++] = bin(rt, TY_OP_POW, x, two); /* squares */
  ty_store *m = bin(rt, TY_OP_LT, x, b), *m2 = bin(rt, TY_OP_GE, b, half);
  outs[k++] = bin(rt, TY_OP_AND, m, m2);
  outs[k++] = bin(rt, TY_OP_OR, m, yes);
  outs[k++] = bin(rt, TY_OP_NE, m, m2);
  outs[k++] = un(rt, TY_OP_NOT, m);
  ty_store *w = NULL;
  REQ(rt, ty_where(rt, m, x, b, &w));
  outs[k++] = w;
  outs[k++] = cast(rt, m, TY_F64);
  outs[k++] = cast(rt, x, TY_BOOL);
  ty_store *f = NULL;
  REQ(rt, ty_full(rt, TY_F64, 1, &n, -1.25, &f));
  outs[k++] = B2(rt, TY_OP_ADD, f, own(x));
  ty_store_release(a), ty_store_release(b), ty_store_release(two), ty_store_release(half);
  ty_store_release(yes), ty_store_release(x), ty_store_release(m), ty_store_release(m2);
  return k;
}

/* compiled kernels give the interpreter's bytes, and the unfused ones' */
static void codegen_matches(int part) {
  const int64_t n = 100003;
  char *ref[SINK_OUTS] = {0};
  size_t lens[SINK_OUTS];
  const char *modes[3] = {"unfused", "off", "always"};
  bool compiled = false;
  for (int mode = 0; mode < 3; mode++)
    for (int cpus = 1; cpus <= 3; cpus += 2) {
      req_codegen(mode == 0 ? "off" : modes[mode]);
      ty_runtime *rt = req_runtime(cpus, mode != 0);
      ty_store *outs[SINK_OUTS];
      int k = kitchen_sink(rt, n, outs, part);
      if (mode == 2) {
        ty__fuse(rt);
        for (int i = 0; i < rt->nwindow; i++)
          if (rt->window[i]->task == ty__fused_task(rt))
            compiled |= ((const ty__fhead *)rt->window[i]->scalars)->kernel != 0;
      }
      REQ(rt, ty_flush(rt));
      if (mode > 0) CHECK_EQ_INT(FUSED_RUNS(rt), 1);
      for (int i = 0; i < k; i++) {
        size_t len;
        char *got = bytes_of(rt, outs[i], &len);
        if (!ref[i]) {
          ref[i] = got;
          lens[i] = len;
        } else {
          bool same = len == lens[i] && memcmp(got, ref[i], len) == 0;
          if (!same) fprintf(stderr, "output %d differs (%s, %d cpus)\n", i, modes[mode], cpus);
          CHECK(same);
          free(got);
        }
        ty_store_release(outs[i]);
      }
      ty_runtime_destroy(rt);
    }
  for (int i = 0; i < SINK_OUTS; i++) free(ref[i]);
  if (ty__isa_lanes()) { /* the level has generated code (isa.h) */
    CHECK(compiled); /* a compiler was found and the run was compiled */
  } else {
    (void)compiled; /* no code generation without AVX2: the interpreter ran */
  }
  unsetenv("TYCHO_CODEGEN");
}
TEST(codegen_matches_the_interpreter) { codegen_matches(0); }
TEST(codegen_matches_the_interpreter_for_the_issue_18_ufuncs) { codegen_matches(1); }

/* fastmath and Black-Scholes-like chains through compiled kernels */
static ty_store *prog_bs(ty_runtime *rt, const void *arg) {
  const int *fast = arg;
  ty_policy fm = {.set = TY_POL_FASTMATH, .fastmath = *fast != 0};
  REQ(rt, ty_launch_options(rt, &fm));
  const int64_t n = 65537;
  ty_store *S = plain(rt, 1, &n, 1), *K = plain(rt, 1, &n, 2), *T = plain(rt, 1, &n, 3);
  ty_store *sq = un(rt, TY_OP_SQRT, T);
  ty_store *d1 = B2(rt, TY_OP_DIV, B2(rt, TY_OP_ADD, U1(rt, TY_OP_LOG, bin(rt, TY_OP_DIV, S, K)), BS(rt, TY_OP_MUL, own(T), 0.065)),
                    BS(rt, TY_OP_MUL, own(sq), 0.3));
  ty_store *e = U1(rt, TY_OP_EXP, B2(rt, TY_OP_MUL, BS(rt, TY_OP_MUL, own(d1), -0.5), own(d1)));
  ty_store *g = BS(rt, TY_OP_GT, own(d1), 0), *w = NULL, *c = BS(rt, TY_OP_SUB, own(e), 1);
  REQ(rt, ty_where(rt, g, e, c, &w));
  ty_store *z = B2(rt, TY_OP_ADD, w, U1(rt, TY_OP_TANH, U1(rt, TY_OP_SIN, own(sq))));
  REQ(rt, ty_launch_options(rt, NULL));
  ty_store_release(S), ty_store_release(K), ty_store_release(T), ty_store_release(sq);
  ty_store_release(d1), ty_store_release(e), ty_store_release(g), ty_store_release(c);
  return z;
}

TEST(codegen_black_scholes_chain_matches_unfused) {
  for (int fast = 0; fast < 2; fast++) {
    size_t l0, l1;
    req_codegen("always");
    char *ref = run_prog(3, false, prog_bs, &fast, &l0, NULL);
    char *got = run_prog(3, true, prog_bs, &fast, &l1, NULL);
    CHECK(l0 == l1 && memcmp(ref, got, l0) == 0);
    free(ref), free(got);
  }
  unsetenv("TYCHO_CODEGEN");
}

static const check_case cases[] = {
    CASE(kernels_results_do_not_depend_on_vector_grouping),
    CASE(fused_equals_unfused_for_every_op_and_dtype),
    CASE(fused_equals_unfused_for_where_casts_fills_and_generators),
    CASE(fuse_chain_elides_temporaries),
    CASE(fuse_keeps_stores_the_caller_holds),
    CASE(fuse_flush_hook_turns_dropped_stores_into_temporaries),
    CASE(fuse_stops_at_reduction),
    CASE(fuse_stops_at_stencil_read),
    CASE(fuse_stops_at_transposed_read),
    CASE(fuse_stops_at_broadcast_read),
    CASE(fuse_view_aliasing_write_does_not_fuse),
    CASE(fuse_disjoint_views_of_one_storage_fuse),
    CASE(fuse_dedups_a_store_used_by_five_sub_operations),
    CASE(fuse_pointwise_user_task_between_builtins),
    CASE(fuse_stops_at_tasks_that_are_not_pointwise),
    CASE(fuse_error_in_a_fused_task_names_it),
    CASE(fuse_user_tasks_with_whole_and_reduction_arguments),
    CASE(fuse_run_with_no_live_result),
    CASE(fuse_axis_turns_fusion_off),
    CASE(fuse_run_ends_when_the_window_is_full),
    CASE(fuse_moves_independent_launches_before_the_run),
    CASE(fuse_cuts_runs_that_do_not_fit_one_description),
    CASE(fuse_reductions_match_unfused),
    CASE(fuse_fastmath_within_4_ulp),
    CASE(fuse_strided_transposed_and_broadcast_inputs),
    CASE(fuse_random_programs_match_unfused),
    CASE(codegen_matches_the_interpreter),
    CASE(codegen_matches_the_interpreter_for_the_issue_18_ufuncs),
    CASE(codegen_black_scholes_chain_matches_unfused),
};
CHECK_MAIN(cases)
