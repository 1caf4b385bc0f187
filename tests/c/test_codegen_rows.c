/*
 * test_codegen_rows.c — compiled 2-D runs (fused_codegen.c's generate2):
 * broadcast inputs (a column against a row), f64 min/max reductions along
 * either axis and whole, odd sizes that leave vector tails, NaN and
 * infinities; the results must equal the unfused launches bit for bit, on 1
 * and 3 processors. The kernels compile into ./tycho-kernel-cache.
 * Also argmin/argmax along the rows at the end of a run (fuse.c admits them
 * as the run's last launch): ties, NaN rows, -0/+0, infinities; compiled
 * and interpreted, the same indices as the unfused scan. And flat runs
 * ending in an f64 sum (generate3): the same bits as the unfused sum at
 * sizes from 1 to several ordered tiles, on 1 and 3 processors. And a
 * grid's column (generate_col) whose length leaves a partial vector.
 */
#include "check.h"
#include "req.h"
#include "fused.h"
#include "internal.h"

#include <tycho/tycho.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Fuses the window; *kind becomes the kind of the fused run's compiled
 * kernel when one was loaded (left as it is otherwise). */
static void fuse_kind(ty_runtime *rt, int *kind) {
  ty__fuse(rt);
  for (int i = 0; i < rt->nwindow; i++)
    if (rt->window[i]->task == ty__fused_task(rt)) {
      const ty__fhead *h = (const ty__fhead *)rt->window[i]->scalars;
      if (h->kernel) *kind = (int)h->kernel_kind;
    }
}

/* a column of n values and a row of m, with a NaN and infinities in them */
static ty_store *values(ty_runtime *rt, int64_t n, double scale, bool specials) {
  double *v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = sin((double)i * scale) * 10.0;
  if (specials && n > 5) {
    v[1] = NAN;
    v[3] = INFINITY;
    v[4] = -INFINITY;
  }
  ty_store *s = NULL;
  REQ(rt, ty_store_from_buffer(rt, TY_F64, 1, &n, v, &s));
  free(v);
  return s;
}

static ty_store *op2(ty_runtime *rt, ty_op op, ty_store *a, ty_store *b) {
  ty_store *r = NULL;
  REQ(rt, ty_binary(rt, op, a, b, &r));
  return r;
}

/* red(|a[:, None] - b[None, :]| * 2 + a[:, None], axis), or the 2-D value
 * itself when axis < -1 */
static double *program(int cpus, bool fuse, int64_t n, int64_t m, ty_reduce_op op, int axis,
                       bool specials, int *kind) {
  ty_config cfg = {.cpus = cpus};
  cfg.policy.set = TY_POL_FUSE;
  cfg.policy.fuse = fuse;
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) exit(1);
  ty_store *a = values(rt, n, 0.37, specials), *b = values(rt, m, 0.11, false);
  ty_store *ac, *br, *two = NULL;
  REQ(rt, ty_store_expand(rt, a, 1, &ac));
  REQ(rt, ty_store_expand(rt, b, 0, &br));
  REQ(rt, ty_scalar_f64(rt, TY_F64, 2.0, &two));
  ty_store *d = op2(rt, TY_OP_SUB, ac, br), *ab = NULL;
  REQ(rt, ty_unary(rt, TY_OP_ABS, d, &ab));
  ty_store *t = op2(rt, TY_OP_MUL, ab, two);
  ty_store *x = op2(rt, TY_OP_ADD, t, ac);
  ty_store *out = x;
  if (axis >= -1) REQ(rt, ty_reduce(rt, op, x, axis, &out));
  ty_store_release(d), ty_store_release(ab), ty_store_release(t);
  if (out != x) ty_store_release(x);
  if (fuse) fuse_kind(rt, kind);
  int64_t size = ty_store_size(out);
  double *res = malloc((size_t)size * sizeof *res);
  REQ(rt, ty_store_read(rt, out, res, (size_t)size * sizeof *res));
  ty_store_release(out), ty_store_release(a), ty_store_release(b), ty_store_release(ac),
      ty_store_release(br), ty_store_release(two);
  ty_runtime_destroy(rt);
  return res;
}

TEST(compiled_rows_match_unfused) {
  setenv("TYCHO_CACHE_DIR", "tycho-kernel-cache", 1);
  setenv("TYCHO_CODEGEN", "always", 1);
  static const int64_t sizes[][2] = {{37, 23}, {5, 130}, {64, 64}, {3, 1001}, {129, 7}};
  int compiled = 0, cases = 0;
  for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
    for (int axis = -2; axis <= 1; axis++)
      for (int op = 0; op < 2; op++)
        for (int cpus = 1; cpus <= 3; cpus += 2) {
          const int64_t n = sizes[z][0], m = sizes[z][1];
          const ty_reduce_op rop = op ? TY_RED_MAX : TY_RED_MIN;
          const bool specials = z % 2 == 0;
          int kind = -1, unused = -1;
          double *ref = program(cpus, false, n, m, rop, axis, specials, &unused);
          double *got = program(cpus, true, n, m, rop, axis, specials, &kind);
          int64_t len = axis == -2 ? n * m : axis == -1 ? 1 : axis == 0 ? m : n;
          bool same = memcmp(ref, got, (size_t)len * sizeof *ref) == 0;
          if (!same)
            fprintf(stderr, "differs: %lldx%lld axis %d %s cpus %d (kernel kind %d)\n", (long long)n,
                    (long long)m, axis, op ? "max" : "min", cpus, kind);
          CHECK(same);
          compiled += kind == TY__FK_ROWS;
          cases++;
          free(ref), free(got);
        }
  unsetenv("TYCHO_CODEGEN");
  if (ty__isa_lanes()) { /* the level has generated code (isa.h) */
    /* every 2-D case and every min/max along an axis or whole compiles */
    if (compiled != cases) fprintf(stderr, "compiled %d of %d\n", compiled, cases);
    CHECK(compiled == cases);
  } else {
    (void)compiled;
  }
}

/* rows of m: many ties, NaNs (one, two, a whole row), -0 and +0, infinities */
static double *tricky(int64_t n, int64_t m) {
  double *v = malloc((size_t)(n * m) * sizeof *v);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) {
      double x = (double)((i * 7 + j * 3) % 5) - 2.0;
      if (i % 5 == 3) x = (j % 2) ? 0.0 : -0.0;
      if (i % 7 == 5 && j == m - 1) x = -INFINITY;
      if (i % 7 == 6) x = j % 3 ? INFINITY : -INFINITY;
      if (i % 4 == 1 && j == (i / 4) % m) x = NAN;
      if (i % 6 == 2 && (j == m / 2 || j == m - 1)) x = NAN;
      if (i % 9 == 4) x = NAN;
      v[i * m + j] = x;
    }
  return v;
}

/* argmin/argmax(x * 1 + 0 * x, axis 1) over an n x m buffer; *nsub: the
 * sub-operations of the fused launch holding the arg reduction (0: none),
 * *kind its compiled kernel's kind (-1: interpreted) */
static int64_t *arg_program(int cpus, bool fuse, int64_t n, int64_t m, ty_reduce_op op,
                            int *nsub, int *kind) {
  ty_config cfg = {.cpus = cpus};
  cfg.policy.set = TY_POL_FUSE;
  cfg.policy.fuse = fuse;
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) exit(1);
  double *v = tricky(n, m);
  const int64_t shape[2] = {n, m};
  ty_store *x = NULL, *one = NULL, *zero = NULL, *out = NULL;
  REQ(rt, ty_store_from_buffer(rt, TY_F64, 2, shape, v, &x));
  free(v);
  REQ(rt, ty_scalar_f64(rt, TY_F64, 1.0, &one));
  REQ(rt, ty_scalar_f64(rt, TY_F64, 0.0, &zero));
  ty_store *a = op2(rt, TY_OP_MUL, x, one), *z = op2(rt, TY_OP_MUL, x, zero);
  ty_store *y = op2(rt, TY_OP_ADD, a, z); /* -0 + -0 stays -0; NaN stays NaN */
  ty_store_release(a), ty_store_release(z);
  REQ(rt, ty_reduce(rt, op, y, 1, &out));
  ty_store_release(y);
  *nsub = 0;
  if (fuse) {
    ty__fuse(rt);
    for (int i = 0; i < rt->nwindow; i++)
      if (rt->window[i]->task == ty__fused_task(rt)) {
        const ty__fhead *h = (const ty__fhead *)rt->window[i]->scalars;
        const ty__fsub *s = ty__fsub_first(h);
        for (int k = 0; k < h->nsub; k++, s = ty__fsub_next(s))
          if (s->kind == TY__FK_ARGREDUCE) {
            *nsub = h->nsub;
            *kind = h->kernel ? (int)h->kernel_kind : -1;
          }
      }
  }
  int64_t *res = malloc((size_t)n * sizeof *res);
  REQ(rt, ty_store_read(rt, out, res, (size_t)n * sizeof *res));
  ty_store_release(out), ty_store_release(x), ty_store_release(one), ty_store_release(zero);
  ty_runtime_destroy(rt);
  return res;
}

TEST(fused_argmin_rows_match_unfused) {
  setenv("TYCHO_CACHE_DIR", "tycho-kernel-cache", 1);
  /* m = 513 is longer than a fused arg reduction may be: it stays unfused */
  static const int64_t sizes[][2] = {{37, 10}, {5, 23}, {129, 7}, {64, 2}, {3, 512}, {4, 513}};
  int compiled = 0, fused = 0, cases = 0;
  for (int cg = 0; cg < 2; cg++) {
    setenv("TYCHO_CODEGEN", cg ? "always" : "off", 1);
    for (size_t q = 0; q < sizeof sizes / sizeof sizes[0]; q++)
      for (int op = 0; op < 2; op++)
        for (int cpus = 1; cpus <= 3; cpus += 2) {
          const int64_t n = sizes[q][0], m = sizes[q][1];
          const ty_reduce_op rop = op ? TY_RED_ARGMAX : TY_RED_ARGMIN;
          int nsub = 0, kind = -1, unused = 0, ukind = -1;
          int64_t *ref = arg_program(cpus, false, n, m, rop, &unused, &ukind);
          int64_t *got = arg_program(cpus, true, n, m, rop, &nsub, &kind);
          bool same = memcmp(ref, got, (size_t)n * sizeof *ref) == 0;
          if (!same)
            for (int64_t i = 0; i < n; i++)
              if (ref[i] != got[i])
                fprintf(stderr, "%lldx%lld %s cpus %d codegen %d kind %d: row %lld: %lld, unfused %lld\n",
                        (long long)n, (long long)m, op ? "argmax" : "argmin", cpus, cg, kind,
                        (long long)i, (long long)got[i], (long long)ref[i]);
          CHECK(same);
          /* the reference itself: row 4 is all NaN (index 0); row 3 holds -0 and
           * +0 only (argmin and argmax: the first, 0) */
          if (n > 4) CHECK(ref[4] == 0 && ref[3] == 0);
          CHECK(nsub == (m <= TY__FUSE_ARG_ROW ? 4 : 0));
          fused += nsub > 0;
          compiled += kind == TY__FK_ROWS;
          cases++;
          free(ref), free(got);
        }
  }
  unsetenv("TYCHO_CODEGEN");
  CHECK(fused == cases * 5 / 6);
  if (ty__isa_lanes()) { /* the level has generated code (isa.h) */
    /* with codegen on, every fused case compiles */
    if (compiled != cases * 5 / 12) fprintf(stderr, "compiled %d of %d\n", compiled, cases * 5 / 12);
    CHECK(compiled == cases * 5 / 12);
  } else {
    (void)compiled;
  }
}

/* sum(((x * s + y) * y - x)), s a 0-d store: a flat run ending in an f64
 * sum (generate3, ty_fk3), or the same through a strided view of x (step
 * 2: not compiled, interpreted). *kind: the compiled kernel's kind, -1 none. */
static double sum_program(int cpus, bool fuse, int64_t n, bool strided, int *kind) {
  ty_config cfg = {.cpus = cpus};
  cfg.policy.set = TY_POL_FUSE;
  cfg.policy.fuse = fuse;
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) exit(1);
  ty_store *x = NULL, *y = values(rt, n, 0.11, false), *s = NULL;
  if (strided) {
    ty_store *big = values(rt, 2 * n, 0.37, false);
    REQ(rt, ty_store_slice(rt, big, 0, 0, 2 * n, 2, &x));
    ty_store_release(big);
  } else {
    x = values(rt, n, 0.37, false);
  }
  REQ(rt, ty_scalar_f64(rt, TY_F64, 1.5, &s));
  REQ(rt, ty_flush(rt));
  ty_store *t1 = op2(rt, TY_OP_MUL, x, s), *t2 = op2(rt, TY_OP_ADD, t1, y);
  ty_store *t3 = op2(rt, TY_OP_MUL, t2, y), *t4 = op2(rt, TY_OP_SUB, t3, x), *out = NULL;
  REQ(rt, ty_reduce(rt, TY_RED_SUM, t4, -1, &out));
  ty_store_release(t1), ty_store_release(t2), ty_store_release(t3), ty_store_release(t4);
  *kind = -1;
  if (fuse) fuse_kind(rt, kind);
  double res = 0;
  REQ(rt, ty_store_read(rt, out, &res, sizeof res));
  ty_store_release(out), ty_store_release(x), ty_store_release(y), ty_store_release(s);
  ty_runtime_destroy(rt);
  return res;
}

TEST(compiled_sums_match_unfused) {
  setenv("TYCHO_CACHE_DIR", "tycho-kernel-cache", 1);
  setenv("TYCHO_CODEGEN", "always", 1);
  /* one element, a vector tail, a leaf and one more, many blocks, several
   * ordered tiles (65,536 elements each) */
  static const int64_t sizes[] = {1, 7, 129, 1000, 4097, 70000, 300001};
  int compiled = 0, cases = 0;
  for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
    for (int strided = 0; strided < 2; strided++)
      for (int cpus = 1; cpus <= 3; cpus += 2) {
        int kind = -1, unused = -1;
        const double ref = sum_program(cpus, false, sizes[z], strided, &unused);
        const double got = sum_program(cpus, true, sizes[z], strided, &kind);
        const bool same = memcmp(&ref, &got, sizeof ref) == 0;
        if (!same)
          fprintf(stderr, "sum differs: n %lld%s cpus %d (kernel kind %d): %.17g, unfused %.17g\n",
                  (long long)sizes[z], strided ? " strided" : "", cpus, kind, got, ref);
        CHECK(same);
        /* numpy: float(((x * 1.5 + y) * y - x).sum()) */
        if (sizes[z] == 1000 && !strided) CHECK(fabs(ref - 50069.642877263956) < 1e-9);
        if (!strided) {
          compiled += kind == TY__FK_SUM;
          cases++;
        } else {
          CHECK(kind != TY__FK_FLAT && kind != TY__FK_ROWS); /* nothing but the sum kernel compiles */
        }
      }
  unsetenv("TYCHO_CODEGEN");
  if (ty__isa_lanes()) {
    if (compiled != cases) fprintf(stderr, "sums compiled %d of %d\n", compiled, cases);
    CHECK(compiled == cases);
  } else {
    (void)compiled;
  }
}

/* A grid's column (n x 1, row stride 3) through an element-wise chain,
 * ((c * 1.5 + c) * c - c) (generate_col, ty_fk2: W rows a pass and the
 * last n % W through the same body), then sum(y * y + y) of the result (a
 * flat run ending in a sum, generate3). n is never a multiple of the
 * vector width. *kinds: the column run's kernel kind, then the sum's (-1
 * none); res[0..n) the column, res[n] the sum. */
static double *column_program(int cpus, bool fuse, int64_t n, int kinds[2]) {
  ty_config cfg = {.cpus = cpus};
  cfg.policy.set = TY_POL_FUSE;
  cfg.policy.fuse = fuse;
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) exit(1);
  ty_store *a = values(rt, n, 0.37, n > 5), *b = values(rt, 3, 0.11, false);
  ty_store *ac = NULL, *br = NULL, *s = NULL, *col = NULL;
  REQ(rt, ty_store_expand(rt, a, 1, &ac));
  REQ(rt, ty_store_expand(rt, b, 0, &br));
  ty_store *grid = op2(rt, TY_OP_SUB, ac, br);
  REQ(rt, ty_store_slice(rt, grid, 1, 1, 2, 1, &col));
  REQ(rt, ty_scalar_f64(rt, TY_F64, 1.5, &s));
  REQ(rt, ty_flush(rt));
  ty_store *t1 = op2(rt, TY_OP_MUL, col, s), *t2 = op2(rt, TY_OP_ADD, t1, col);
  ty_store *t3 = op2(rt, TY_OP_MUL, t2, col), *y = op2(rt, TY_OP_SUB, t3, col);
  kinds[0] = kinds[1] = -1;
  for (int part = 0; part < 2; part++) {
    if (part == 1) {
      ty_store *yy = op2(rt, TY_OP_MUL, y, y), *z = op2(rt, TY_OP_ADD, yy, y), *sum = NULL;
      REQ(rt, ty_reduce(rt, TY_RED_SUM, z, -1, &sum));
      ty_store_release(yy), ty_store_release(z), ty_store_release(s);
      s = sum;
    }
    if (fuse) fuse_kind(rt, &kinds[part]);
    REQ(rt, ty_flush(rt));
  }
  double *res = malloc((size_t)(n + 1) * sizeof *res);
  REQ(rt, ty_store_read(rt, y, res, (size_t)n * sizeof *res));
  REQ(rt, ty_store_read(rt, s, res + n, sizeof *res));
  ty_store_release(t1), ty_store_release(t2), ty_store_release(t3), ty_store_release(y);
  ty_store_release(s), ty_store_release(col), ty_store_release(grid), ty_store_release(ac);
  ty_store_release(br), ty_store_release(a), ty_store_release(b);
  ty_runtime_destroy(rt);
  return res;
}

TEST(compiled_column_tails_match_unfused) {
  setenv("TYCHO_CACHE_DIR", "tycho-kernel-cache", 1);
  setenv("TYCHO_CODEGEN", "always", 1);
  static const int64_t sizes[] = {1, 3, 5, 7, 130, 257, 1027};
  int columns = 0, cases = 0;
  for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
    for (int cpus = 1; cpus <= 3; cpus += 2) {
      const int64_t n = sizes[z];
      int kinds[2], unused[2];
      double *ref = column_program(cpus, false, n, unused);
      double *got = column_program(cpus, true, n, kinds);
      const bool same = memcmp(ref, got, (size_t)(n + 1) * sizeof *ref) == 0;
      if (!same)
        fprintf(stderr, "column differs: n %lld cpus %d (kernel kinds %d, %d)\n", (long long)n, cpus, kinds[0],
                kinds[1]);
      CHECK(same);
      columns += kinds[0] == TY__FK_ROWS;
      cases++;
      free(ref), free(got);
    }
  unsetenv("TYCHO_CODEGEN");
  if (ty__isa_lanes()) {
    if (columns != cases) fprintf(stderr, "columns compiled %d of %d\n", columns, cases);
    CHECK(columns == cases);
  } else {
    (void)columns;
  }
}

static const check_case cases[] = {
    CASE(compiled_rows_match_unfused),
    CASE(fused_argmin_rows_match_unfused),
    CASE(compiled_sums_match_unfused),
    CASE(compiled_column_tails_match_unfused),
};
CHECK_MAIN(cases)
