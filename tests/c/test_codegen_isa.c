/*
 * test_codegen_isa.c — the generated code of every vector level compiles,
 * whatever level this CPU runs: the charter's machines are AVX2 (AMD EPYC)
 * and AVX-512 (Intel Xeon), and CI runs on one of them, so the AVX-512 text
 * of fused_codegen.c is never written by the rest of the suite on an AVX2
 * machine (TYCHO_ISA lowers the level, never raises it). Two bugs in it were
 * found only by hand (commits 8f3a9f4, 21d99fb: clang as TYCHO_CC had no
 * _mask sqrt and no 256-bit movnt builtin, so those units failed and ran
 * interpreted).
 *
 * Each case builds representative fused runs (element-wise with sqrt, exp,
 * pow, where and the ufuncs, bool outputs, flat and 2-D sums, min/max along
 * the rows and columns, short-row arg reductions ("across"), a grid's
 * column, streaming stores; f64, and f32 inputs cast to f64), asks for each
 * run's source at a forced level (ty__codegen_source: written, never
 * loaded from the runtime) and compiles it with ty__cc_start, the runtime's
 * own compile (its -O1, flags and link), with that level's flags
 * (-march=x86-64-v4 -mprefer-vector-width=512 for 8 lanes). The object must
 * define the kernel's entry point; it is opened RTLD_LAZY to find it (the
 * kernels define no constructor, so no AVX-512 instruction runs here).
 * Then all of a level's sources again as ONE unit, as a background compile
 * of one flush's kernels makes it (ty__codegen_unit: the preamble once,
 * each kernel's file-scope names prefixed), each entry point found under
 * its prefix: two kernels with the interleaved loop (body_lanes, a name
 * the unit did not prefix) failed such a unit at every level, so both ran
 * interpreted (found by this test, session 23).
 * gcc and, when on the PATH, clang (the cases exit 77, skipped, without it,
 * or in a build with no level of that width: -DTYCHO_NATIVE=ON). A unit
 * that does not compile is kept in ./tycho-isa-test with its diagnostics.
 */
#include "check.h"
#include "codegen_cc.h"
#include "fused.h"
#include "internal.h"
#include "req.h"

#include <tycho/tycho.h>

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define UNIT_DIR "tycho-isa-test"

/* the sources of one level: a run's name, its kernel kind and text */
typedef struct source {
  char name[48];
  uint32_t kind;
  bool stream;
  char *text;
  size_t len;
} source;

static source srcs[64];
static int nsrcs;

/* every store a case makes, released with its runtime (done) */
static ty_store *pool[256];
static int npool;

static ty_store *keep(ty_store *s) {
  if (npool < (int)(sizeof pool / sizeof pool[0])) pool[npool++] = s;
  else CHECK(!"pool full");
  return s;
}

static void done(ty_runtime *rt) {
  REQ(rt, ty_flush(rt));
  for (int i = 0; i < npool; i++) ty_store_release(pool[i]);
  npool = 0;
  ty_runtime_destroy(rt);
}

static ty_runtime *runtime(void) {
  ty_config cfg = {.cpus = 1};
  cfg.policy.set = TY_POL_FUSE;
  cfg.policy.fuse = true;
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) exit(1);
  return rt;
}

static ty_store *vec(ty_runtime *rt, ty_dtype t, int64_t n, double scale) {
  double *v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = sin((double)i * scale) * 2.0 + 0.5;
  ty_store *s = NULL, *d = NULL;
  REQ(rt, ty_store_from_buffer(rt, TY_F64, 1, &n, v, &s));
  free(v);
  if (t == TY_F64) return keep(s);
  REQ(rt, ty_cast(rt, s, t, &d));
  REQ(rt, ty_flush(rt));
  ty_store_release(s);
  return keep(d);
}

static ty_store *op1(ty_runtime *rt, ty_op op, ty_store *a) {
  ty_store *r = NULL;
  REQ(rt, ty_unary(rt, op, a, &r));
  return keep(r);
}

static ty_store *op2(ty_runtime *rt, ty_op op, ty_store *a, ty_store *b) {
  ty_store *r = NULL;
  REQ(rt, ty_binary(rt, op, a, b, &r));
  return keep(r);
}

static ty_store *num(ty_runtime *rt, double x) {
  ty_store *r = NULL;
  REQ(rt, ty_scalar_f64(rt, TY_F64, x, &r));
  return keep(r);
}

/* Fuses rt's window and adds the source of each fused run at `lanes` lanes
 * (name, then #k for the k-th run); the runs no generator takes are
 * counted, not added. Returns the sources added. */
static int take(ty_runtime *rt, const char *name, int lanes, bool stream, int *skipped) {
  ty__fuse(rt);
  int added = 0, k = 0;
  for (int i = 0; i < rt->nwindow; i++) {
    if (rt->window[i]->task != ty__fused_task(rt)) continue;
    source *s = &srcs[nsrcs];
    CHECK(nsrcs < (int)(sizeof srcs / sizeof srcs[0]));
    if (nsrcs >= (int)(sizeof srcs / sizeof srcs[0])) break;
    if (!ty__codegen_source(rt->window[i], lanes, stream, &s->text, &s->len, &s->kind)) {
      ++*skipped;
      continue;
    }
    snprintf(s->name, sizeof s->name, "%s%d", name, k++);
    s->stream = stream;
    nsrcs++;
    added++;
  }
  REQ(rt, ty_flush(rt));
  return added;
}

/* The kinds of the sources added since `from`: a bit per TY__FK_* kind. */
static unsigned kinds_since(int from) {
  unsigned m = 0;
  for (int i = from; i < nsrcs; i++) m |= 1u << srcs[i].kind;
  return m;
}

/* The runs of the cases, each built on a runtime of its own (compiling
 * nothing: TYCHO_CODEGEN=off), their sources at `lanes` lanes in srcs. */
static void build(int lanes) {
  setenv("TYCHO_CODEGEN", "off", 1);
  nsrcs = 0;
  int skipped = 0;
  const int64_t n = 1003; /* not a multiple of the vector width: tails */
  /* element-wise: where, sqrt, exp, pow (array and constant exponents:
   * pow_flags' squaring), the SLEEF and libm ufuncs, the rounding builtins,
   * floor_divide's helper; streaming and not */
  for (int stream = 0; stream < 2; stream++) {
    ty_runtime *rt = runtime();
    ty_store *x = vec(rt, TY_F64, n, 0.37), *y = vec(rt, TY_F64, n, 0.11), *h = num(rt, 0.5), *two = num(rt, 2.0);
    ty_store *c = op2(rt, TY_OP_GT, x, h), *sq = op1(rt, TY_OP_SQRT, op1(rt, TY_OP_ABS, x));
    ty_store *ex = op1(rt, TY_OP_EXP, y), *pw = op2(rt, TY_OP_POW, op1(rt, TY_OP_ABS, y), x);
    ty_store *p2 = op2(rt, TY_OP_POW, x, two), *w = NULL;
    REQ(rt, ty_where(rt, c, op2(rt, TY_OP_MUL, sq, ex), op2(rt, TY_OP_ADD, pw, p2), &w));
    keep(w);
    static const ty_op un[] = {TY_OP_LOG,   TY_OP_SIN,   TY_OP_COS,   TY_OP_TANH,  TY_OP_FLOOR,
                               TY_OP_CEIL,  TY_OP_RINT,  TY_OP_TRUNC, TY_OP_SIGN,  TY_OP_SINH,
                               TY_OP_COSH,  TY_OP_ARCTAN, TY_OP_CBRT,  TY_OP_EXPM1, TY_OP_LOG1P,
                               TY_OP_EXP2,  TY_OP_TAN,   TY_OP_ARCSINH};
    ty_store *acc = w;
    for (size_t i = 0; i < sizeof un / sizeof un[0]; i++) acc = op2(rt, TY_OP_ADD, acc, op1(rt, un[i], x));
    ty_store *fd = op2(rt, TY_OP_FLOORDIV, acc, y);
    ty_store *at = op2(rt, TY_OP_ARCTAN2, fd, y), *hy = op2(rt, TY_OP_HYPOT, at, x);
    op2(rt, TY_OP_MAXIMUM, hy, op2(rt, TY_OP_MINIMUM, x, y));
    const int from = nsrcs;
    CHECK(take(rt, stream ? "ew_nt" : "ew", lanes, stream, &skipped) >= 1);
    CHECK(kinds_since(from) & (1u << TY__FK_FLAT));
    done(rt);
  }
  /* f32: no generated code (fused_codegen.c: f64 and bool arguments
   * only), at any level: the interpreter runs it */
  {
    ty_runtime *rt = runtime();
    ty_store *f = vec(rt, TY_F32, n, 0.23), *g = vec(rt, TY_F32, n, 0.41), *fx = NULL;
    REQ(rt, ty_cast(rt, op2(rt, TY_OP_ADD, op1(rt, TY_OP_SQRT, f), op2(rt, TY_OP_MUL, f, g)), TY_F64, &fx));
    keep(fx);
    op2(rt, TY_OP_MUL, op1(rt, TY_OP_EXP, fx), fx);
    const int before = skipped;
    CHECK_EQ_INT(take(rt, "f32", lanes, false, &skipped), 0);
    CHECK(skipped > before); /* it fused, and has no source */
    done(rt);
  }
  /* bool outputs: comparisons, and/or/xor/not, isnan */
  {
    ty_runtime *rt = runtime();
    ty_store *x = vec(rt, TY_F64, n, 0.37), *y = vec(rt, TY_F64, n, 0.11), *fx = vec(rt, TY_F64, n, 0.23);
    ty_store *a = op2(rt, TY_OP_LT, x, fx), *b = op2(rt, TY_OP_GE, y, x);
    op2(rt, TY_OP_XOR, op2(rt, TY_OP_AND, a, b), op2(rt, TY_OP_OR, op1(rt, TY_OP_NOT, a),
                                                                   op1(rt, TY_OP_ISNAN, fx)));
    op2(rt, TY_OP_MUL, fx, y);
    CHECK(take(rt, "bool", lanes, false, &skipped) >= 1);
    done(rt);
  }
  /* a flat sum (generate3), streaming an output beside it */
  for (int stream = 0; stream < 2; stream++) {
    ty_runtime *rt = runtime();
    ty_store *x = vec(rt, TY_F64, n, 0.37), *y = vec(rt, TY_F64, n, 0.11), *s = num(rt, 1.5), *sum = NULL;
    REQ(rt, ty_flush(rt));
    ty_store *t = op2(rt, TY_OP_MUL, op1(rt, TY_OP_EXP, op2(rt, TY_OP_MUL, x, s)), y);
    ty_store *u = op2(rt, TY_OP_SUB, t, x);
    REQ(rt, ty_reduce(rt, TY_RED_SUM, u, -1, &sum));
    keep(sum);
    const int from = nsrcs;
    CHECK(take(rt, stream ? "sum_nt" : "sum", lanes, stream, &skipped) >= 1);
    CHECK(kinds_since(from) & (1u << TY__FK_SUM));
    done(rt);
  }
  /* rows: |a[:, None] - b[None, :]| * 2 + sqrt(a[:, None]), then min/max
   * along each axis and whole, and the 2-D value itself */
  for (int axis = -2; axis <= 1; axis++) {
    ty_runtime *rt = runtime();
    ty_store *a = vec(rt, TY_F64, 37, 0.37), *b = vec(rt, TY_F64, 45, 0.11), *two = num(rt, 2.0);
    ty_store *ac = NULL, *br = NULL, *out = NULL;
    REQ(rt, ty_store_expand(rt, a, 1, &ac));
    keep(ac);
    REQ(rt, ty_store_expand(rt, b, 0, &br));
    keep(br);
    ty_store *d = op1(rt, TY_OP_ABS, op2(rt, TY_OP_SUB, ac, br));
    ty_store *x = op2(rt, TY_OP_ADD, op2(rt, TY_OP_MUL, d, two), op1(rt, TY_OP_SQRT, op1(rt, TY_OP_ABS, ac)));
    if (axis >= -1) {
      REQ(rt, ty_reduce(rt, axis == 0 ? TY_RED_MAX : TY_RED_MIN, x, axis, &out));
      keep(out);
    }
    const int from = nsrcs;
    char name[32];
    snprintf(name, sizeof name, "rows%d_", axis + 2);
    CHECK(take(rt, name, lanes, false, &skipped) >= 1);
    CHECK(kinds_since(from) & (1u << TY__FK_ROWS));
    done(rt);
  }
  /* arg reductions along rows: short rows (across, W rows at once) and long
   * ones (the row kernel) */
  static const int64_t widths[] = {10, 23, 100};
  for (size_t q = 0; q < sizeof widths / sizeof widths[0]; q++) {
    ty_runtime *rt = runtime();
    const int64_t r = 37, m = widths[q], shape[2] = {r, m};
    double *v = malloc((size_t)(r * m) * sizeof *v);
    for (int64_t i = 0; i < r * m; i++) v[i] = cos((double)i * 0.7);
    ty_store *x = NULL, *one = num(rt, 1.0), *out = NULL;
    REQ(rt, ty_store_from_buffer(rt, TY_F64, 2, shape, v, &x));
    keep(x);
    free(v);
    ty_store *y = op2(rt, TY_OP_ADD, op2(rt, TY_OP_MUL, x, one), op1(rt, TY_OP_SQRT, op1(rt, TY_OP_ABS, x)));
    REQ(rt, ty_reduce(rt, q % 2 ? TY_RED_ARGMAX : TY_RED_ARGMIN, y, 1, &out));
    keep(out);
    const int from = nsrcs;
    char name[32];
    snprintf(name, sizeof name, "arg%lld_", (long long)m);
    CHECK(take(rt, name, lanes, false, &skipped) >= 1);
    CHECK(kinds_since(from) & (1u << TY__FK_ROWS));
    if (m <= 32) CHECK(strstr(srcs[nsrcs - 1].text, "across") != NULL);
    done(rt);
  }
  /* a grid's column (generate_col), then a 2-D region of the grid summed
   * (generate4: rows of the grid, not one flat run) */
  {
    ty_runtime *rt = runtime();
    ty_store *a = vec(rt, TY_F64, 131, 0.37), *b = vec(rt, TY_F64, 67, 0.11), *s = num(rt, 1.5);
    ty_store *ac = NULL, *br = NULL, *col = NULL, *reg = NULL, *sum = NULL;
    REQ(rt, ty_store_expand(rt, a, 1, &ac));
    keep(ac);
    REQ(rt, ty_store_expand(rt, b, 0, &br));
    keep(br);
    ty_store *grid = op2(rt, TY_OP_SUB, ac, br);
    REQ(rt, ty_flush(rt));
    REQ(rt, ty_store_slice(rt, grid, 1, 1, 2, 1, &col));
    keep(col);
    op2(rt, TY_OP_MUL, op1(rt, TY_OP_EXP, op2(rt, TY_OP_MUL, col, s)), col);
    int from = nsrcs;
    CHECK(take(rt, "col", lanes, false, &skipped) >= 1);
    CHECK(kinds_since(from) & (1u << TY__FK_ROWS));
    ty_store *r0 = NULL;
    REQ(rt, ty_store_slice(rt, grid, 0, 1, 130, 1, &r0));
    keep(r0);
    REQ(rt, ty_store_slice(rt, r0, 1, 1, 66, 1, &reg));
    keep(reg);
    ty_store *u = op2(rt, TY_OP_ADD, op2(rt, TY_OP_MUL, reg, reg), op1(rt, TY_OP_SQRT, op1(rt, TY_OP_ABS, reg)));
    REQ(rt, ty_reduce(rt, TY_RED_SUM, u, -1, &sum));
    keep(sum);
    from = nsrcs;
    CHECK(take(rt, "rowsum", lanes, false, &skipped) >= 1);
    CHECK(kinds_since(from) & (1u << TY__FK_ROWSUM));
    done(rt);
  }
  /* long arithmetic chains (no call out): the interleaved body_lanes, two
   * kernels of it to share a unit (compile_all) */
  for (int k = 0; k < 2; k++) {
    ty_runtime *rt = runtime();
    ty_store *x = vec(rt, TY_F64, n, 0.37), *y = vec(rt, TY_F64, n, 0.11), *c = num(rt, 1.5 + k), *r = x;
    for (int i = 0; i < 10 + 2 * k; i++) r = op2(rt, TY_OP_ADD, op2(rt, TY_OP_MUL, r, y), c);
    const int from = nsrcs;
    CHECK(take(rt, "lanes", lanes, false, &skipped) >= 1);
    CHECK(nsrcs > from && strstr(srcs[nsrcs - 1].text, "body_lanes(") != NULL);
    done(rt);
  }
  unsetenv("TYCHO_CODEGEN");
  /* every kernel signature, and streaming stores in the streaming ones */
  unsigned all = kinds_since(0);
  CHECK(all == ((1u << TY__FK_FLAT) | (1u << TY__FK_ROWS) | (1u << TY__FK_SUM) | (1u << TY__FK_ROWSUM)));
  for (int i = 0; i < nsrcs; i++)
    if (srcs[i].stream && srcs[i].kind == TY__FK_FLAT) CHECK(strstr(srcs[i].text, "stn(") != NULL);
  if (getenv("TEST_CODEGEN_ISA_LIST")) /* by hand: what the cases generate */
    for (int i = 0; i < nsrcs; i++)
      fprintf(stderr, "%s kind %u %zu bytes%s%s%s%s%s\n", srcs[i].name, srcs[i].kind, srcs[i].len,
              strstr(srcs[i].text, "stn(") ? " stn" : "", strstr(srcs[i].text, "vsqrt(") ? " sqrt" : "",
              strstr(srcs[i].text, "Sleef_pow") ? " pow" : "", strstr(srcs[i].text, "vrint(") ? " rint" : "",
              strstr(srcs[i].text, "across") ? " across" : "");
  if (skipped) fprintf(stderr, "%d fused runs without a generated kernel\n", skipped);
}

static void free_sources(void) {
  for (int i = 0; i < nsrcs; i++) free(srcs[i].text);
  nsrcs = 0;
}

static bool on_path(const char *cc) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", cc);
  return system(cmd) == 0;
}

static const char *entry_of(uint32_t kind) {
  switch (kind) {
  case TY__FK_ROWS: return "ty_fk2";
  case TY__FK_SUM: return "ty_fk3";
  case TY__FK_ROWSUM: return "ty_fk4";
  default: return "ty_fk";
  }
}

/* Compiles every source of srcs as ONE unit, as a background compile of the
 * kernels queued by one flush does (ty__codegen_unit); each kernel's entry
 * point is there under its prefix. */
static void compile_unit(const char *cc, int lanes, const char *flags) {
  uint64_t hash[TY__CC_MAX_KERNELS];
  char *text[TY__CC_MAX_KERNELS];
  size_t len[TY__CC_MAX_KERNELS];
  const int n = nsrcs < TY__CC_MAX_KERNELS ? nsrcs : TY__CC_MAX_KERNELS;
  for (int i = 0; i < n; i++) {
    hash[i] = 0x1000u + (uint64_t)i;
    text[i] = srcs[i].text;
    len[i] = srcs[i].len;
  }
  char *u = NULL;
  size_t ulen = 0;
  CHECK(ty__codegen_unit(lanes, hash, text, len, n, &u, &ulen));
  if (!u) return;
  char so[1200], src[1200];
  snprintf(so, sizeof so, UNIT_DIR "/%.32s-%d-unit.so", cc, lanes);
  snprintf(src, sizeof src, UNIT_DIR "/%.32s-%d-unit.c", cc, lanes);
  ty__ccjob j;
  const ty__cckernel k = {so, src, u, ulen};
  CHECK(ty__cc_start(&j, cc, &k, 1, u, ulen, true, false, 0, flags));
  const bool built = ty__cc_poll(&j, true) == 1;
  void *h = built ? dlopen(so, RTLD_LAZY | RTLD_LOCAL) : NULL;
  int found = 0;
  for (int i = 0; h && i < n; i++) {
    char name[64];
    snprintf(name, sizeof name, "k%016llx_%s", (unsigned long long)hash[i], entry_of(srcs[i].kind));
    found += dlsym(h, name) != NULL;
  }
  if (h) dlclose(h);
  if (found != n) {
    FILE *f = fopen(src, "w");
    if (f) fwrite(u, 1, ulen, f), fclose(f);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s -O1 %s -ffp-contract=off -fno-math-errno -fPIC -c -o /dev/null %s 2>&1 | head -30",
             cc, flags, src);
    fprintf(stderr, "%s, %d lanes: the unit of %d kernels %s (%d entry points); %s\n", cc, lanes, n,
            built ? "compiled" : "does not compile", found, cmd);
    if (system(cmd) != 0) fprintf(stderr, "(could not run the compiler again)\n");
  } else {
    unlink(so);
    unlink(src);
  }
  CHECK_EQ_INT(found, n);
  free(u);
}

/* Compiles every source of srcs with cc at the level of `lanes` lanes, as
 * the runtime compiles a unit of one kernel; each object defines its entry
 * point. */
static void compile_all(const char *cc, int lanes) {
  const char *flags = ty__isa_cflags_of(lanes);
  if (!flags || (strcmp(cc, "gcc") && !on_path(cc))) {
    fprintf(stderr, "skipped: %s\n", flags ? "compiler not found" : "no level of that width in this build");
    exit(77);
  }
  build(lanes);
  mkdir(UNIT_DIR, 0755);
  int ok = 0;
  for (int i = 0; i < nsrcs; i++) {
    const source *s = &srcs[i];
    char so[1200], src[1200];
    snprintf(so, sizeof so, UNIT_DIR "/%.32s-%d-%.47s.so", cc, lanes, s->name);
    snprintf(src, sizeof src, UNIT_DIR "/%.32s-%d-%.47s.c", cc, lanes, s->name);
    CHECK(strstr(s->text, lanes == 8 ? "#ifndef __AVX512F__" : "#ifndef __AVX2__") != NULL);
    CHECK(strstr(s->text, flags) != NULL); /* "compiled with": the cache key */
    ty__ccjob j;
    const ty__cckernel k = {so, src, s->text, s->len};
    CHECK(ty__cc_start(&j, cc, &k, 1, s->text, s->len, true, false, 0, flags));
    const bool built = ty__cc_poll(&j, true) == 1;
    void *h = built ? dlopen(so, RTLD_LAZY | RTLD_LOCAL) : NULL;
    void *fn = h ? dlsym(h, entry_of(s->kind)) : NULL;
    if (h) dlclose(h);
    if (!fn) {
      /* keep the source, and the compiler's diagnostics beside it */
      FILE *f = fopen(src, "w");
      if (f) fwrite(s->text, 1, s->len, f), fclose(f);
      char cmd[4096];
      snprintf(cmd, sizeof cmd, "%s -O1 %s -ffp-contract=off -fno-math-errno -fPIC -c -o /dev/null %s 2>&1 | head -30",
               cc, flags, src);
      fprintf(stderr, "%s, %d lanes: %s (kind %u) %s; %s\n", cc, lanes, s->name, s->kind,
              built ? "has no entry point" : "does not compile", cmd);
      if (system(cmd) != 0) fprintf(stderr, "(could not run the compiler again)\n");
    } else {
      unlink(so);
      unlink(src);
      ok++;
    }
  }
  if (ok != nsrcs) fprintf(stderr, "%s, %d lanes: %d of %d units compiled\n", cc, lanes, ok, nsrcs);
  CHECK_EQ_INT(ok, nsrcs);
  compile_unit(cc, lanes, flags);
  free_sources();
}

TEST(avx512_sources_compile_gcc) { compile_all("gcc", 8); }
TEST(avx512_sources_compile_clang) { compile_all("clang", 8); }
TEST(avx2_sources_compile_gcc) { compile_all("gcc", 4); }
TEST(avx2_sources_compile_clang) { compile_all("clang", 4); }

/* the baseline level has no generated code: no source at 0 lanes */
TEST(baseline_writes_no_source) {
  setenv("TYCHO_CODEGEN", "off", 1);
  ty_runtime *rt = runtime();
  ty_store *x = vec(rt, TY_F64, 1000, 0.37), *y = op2(rt, TY_OP_ADD, op1(rt, TY_OP_SQRT, x), x);
  ty__fuse(rt);
  int fused = 0;
  for (int i = 0; i < rt->nwindow; i++)
    if (rt->window[i]->task == ty__fused_task(rt)) {
      char *text = NULL;
      size_t len = 0;
      uint32_t kind = 0;
      fused++;
      CHECK(!ty__codegen_source(rt->window[i], 0, false, &text, &len, &kind));
      CHECK(text == NULL);
      CHECK(!ty__codegen_source(rt->window[i], 16, false, &text, &len, &kind)); /* no such level */
      CHECK(ty__codegen_source(rt->window[i], 4, false, &text, &len, &kind));
      CHECK(text && strstr(text, "#define W 4\n"));
      free(text);
      if (ty__isa_cflags_of(8)) {
        CHECK(ty__codegen_source(rt->window[i], 8, false, &text, &len, &kind));
        CHECK(text && strstr(text, "#define W 8\n") && strstr(text, "_ZGVeN8"));
        free(text);
      }
    }
  CHECK(fused == 1);
  REQ(rt, ty_flush(rt));
  ty_store_release(x), ty_store_release(y);
  ty_runtime_destroy(rt);
  unsetenv("TYCHO_CODEGEN");
}

static const check_case cases[] = {
    CASE(avx512_sources_compile_gcc),
    CASE(avx512_sources_compile_clang),
    CASE(avx2_sources_compile_gcc),
    CASE(avx2_sources_compile_clang),
    CASE(baseline_writes_no_source),
};
CHECK_MAIN(cases)
