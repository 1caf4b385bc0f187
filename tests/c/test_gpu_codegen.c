/*
 * test_gpu_codegen.c — generated CUDA kernels for fused element-wise chains,
 * without a GPU: planning (dims collapsed, operands classified), structural
 * cache keys, the generated source run on the CPU (compiled as C by the
 * system compiler with a small shim: one "thread" walks the grid-stride
 * loop) against the CPU kernels of kernels_ew.c / kernels_cast.c, NVRTC
 * compiling a kernel for every op and dtype to PTX for sm_90, and the PTX
 * caches (memory, disk).
 *
 * Cases that need a tool this machine lacks (a C compiler on PATH, NVRTC)
 * report themselves skipped: exit code 77 when run alone (CTest's
 * SKIP_RETURN_CODE), and a "skip" line when the whole file runs.
 */
#include "check.h"

#include "fused.h"
#include "gpu_codegen.h"
#include "gpu_nvrtc.h"
#include "kernels.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_test_setup.h" /* SKIP */

/* ---- building IRs -------------------------------------------------------------------- */

static ty__gref ARG(int i) { return (ty__gref){TY__GREF_ARG, (uint16_t)i}; }
static ty__gref CONST(int i) { return (ty__gref){TY__GREF_CONST, (uint16_t)i}; }
static ty__gref TMP(int i) { return (ty__gref){TY__GREF_TMP, (uint16_t)i}; }

static ty__gir *ir_new(int ndim, const int64_t *shape) {
  ty__gir *ir = calloc(1, sizeof *ir);
  ir->ndim = ndim;
  for (int d = 0; d < ndim; d++) ir->shape[d] = shape[d];
  return ir;
}

/* a C-order contiguous argument over the IR's shape */
static int add_arg(ty__gir *ir, ty_dtype t, void *ptr) {
  int a = ir->nargs++;
  ir->args[a].dtype = t;
  ir->args[a].ptr = (uint64_t)(uintptr_t)ptr;
  int64_t s = 1;
  for (int d = ir->ndim - 1; d >= 0; d--) {
    ir->args[a].strides[d] = s;
    s *= ir->shape[d];
  }
  return a;
}

static int add_arg_strided(ty__gir *ir, ty_dtype t, void *ptr, const int64_t *strides) {
  int a = ir->nargs++;
  ir->args[a].dtype = t;
  ir->args[a].ptr = (uint64_t)(uintptr_t)ptr;
  for (int d = 0; d < ir->ndim; d++) ir->args[a].strides[d] = strides[d];
  return a;
}

static int add_const_f(ty__gir *ir, ty_dtype t, double v) {
  int c = ir->nconsts++;
  ir->consts[c] = (ty__gconst){t, v, (int64_t)v};
  return c;
}

static int add_tmp(ty__gir *ir, ty_dtype t) {
  int k = ir->ntmps++;
  ir->tmps[k] = t;
  return k;
}

static void add_sub(ty__gir *ir, int kind, int op, ty_dtype dt, ty_dtype dt2, ty__gref out, int nin,
                    ty__gref a, ty__gref b, ty__gref c) {
  ty__gsub *s = &ir->subs[ir->nsubs++];
  *s = (ty__gsub){(uint8_t)kind, (uint8_t)op, (uint8_t)dt, (uint8_t)dt2, (uint8_t)nin, out, {a, b, c}};
}
#define UN(ir, op, dt, out, x) add_sub(ir, TY__G_UNARY, op, dt, dt, out, 1, x, x, x)
#define BIN(ir, op, dt, out, x, y) add_sub(ir, TY__G_BINARY, op, dt, dt, out, 2, x, y, y)

/* ---- planning and keys ----------------------------------------------------------------- */

TEST(plan_collapses_and_classifies) {
  int64_t shape[3] = {4, 1, 6};
  ty__gir *ir = ir_new(3, shape);
  int out = add_arg(ir, TY_F64, NULL);
  int a = add_arg(ir, TY_F64, NULL);
  int64_t zero[3] = {0, 0, 0}, row[3] = {0, 0, 1}, tr[3] = {1, 0, 4};
  int sc = add_arg_strided(ir, TY_F64, NULL, zero);
  int rw = add_arg_strided(ir, TY_F64, NULL, row);
  int t0 = add_tmp(ir, TY_F64), t1 = add_tmp(ir, TY_F64);
  BIN(ir, TY_OP_ADD, TY_F64, TMP(t0), ARG(a), ARG(sc));
  BIN(ir, TY_OP_MUL, TY_F64, TMP(t1), TMP(t0), ARG(rw));
  UN(ir, TY_OP_EXP, TY_F64, ARG(out), TMP(t1));
  ty__gplan *p = malloc(sizeof *p);
  char err[256] = "";
  CHECK_EQ_INT(ty__gk_plan(ir, p, err, sizeof err), TY_OK);
  /* the extent-1 dim is gone; the row broadcast keeps two dims */
  CHECK_EQ_INT(p->ndim, 2);
  CHECK_EQ_INT(p->shape[0], 4);
  CHECK_EQ_INT(p->shape[1], 6);
  CHECK_EQ_INT(p->n, 24);
  CHECK_EQ_INT(p->access[out], TY__GA_CONTIG);
  CHECK_EQ_INT(p->access[a], TY__GA_CONTIG);
  CHECK_EQ_INT(p->access[sc], TY__GA_SCALAR);
  CHECK_EQ_INT(p->access[rw], TY__GA_STRIDED);
  CHECK_EQ_INT(p->rw[out], 2);
  CHECK_EQ_INT(p->rw[a], 1);
  CHECK(!p->wide);
  CHECK(p->any_strided);
  /* words: n, 2 shape, out, a, sc, rw + 2 strides */
  CHECK_EQ_INT(p->nwords, 1 + 2 + 1 + 1 + 1 + 3);
  CHECK(!strncmp(p->name, "ty_fused_", 9) && strlen(p->name) == 25);

  /* without the row broadcast everything is one contiguous run */
  ir->args[rw].strides[0] = 6;
  ir->args[rw].strides[1] = 6;
  ir->args[rw].strides[2] = 1;
  CHECK_EQ_INT(ty__gk_plan(ir, p, err, sizeof err), TY_OK);
  CHECK_EQ_INT(p->ndim, 1);
  CHECK_EQ_INT(p->access[rw], TY__GA_CONTIG);
  CHECK(!p->any_strided);
  /* a transposed input stays strided */
  ir->args[a].strides[0] = 1;
  ir->args[a].strides[2] = 4;
  (void)tr;
  CHECK_EQ_INT(ty__gk_plan(ir, p, err, sizeof err), TY_OK);
  CHECK_EQ_INT(p->ndim, 2);
  CHECK_EQ_INT(p->access[a], TY__GA_STRIDED);
  free(p);
  free(ir);
}

/* a*x + exp(b) over n elements, dtype t, constant x */
static ty__gir *axpb(int64_t n, ty_dtype t, double x) {
  ty__gir *ir = ir_new(1, &n);
  add_arg(ir, t, (void *)0x1000);
  add_arg(ir, t, (void *)0x2000);
  add_arg(ir, t, (void *)0x3000);
  add_const_f(ir, t, x);
  add_tmp(ir, t);
  add_tmp(ir, t);
  BIN(ir, TY_OP_MUL, t, TMP(0), ARG(1), CONST(0));
  UN(ir, TY_OP_EXP, t, TMP(1), ARG(2));
  BIN(ir, TY_OP_ADD, t, ARG(0), TMP(0), TMP(1));
  return ir;
}

TEST(key_is_structural) {
  ty__gplan *p1 = malloc(sizeof *p1), *p2 = malloc(sizeof *p2);
  char err[256];
  ty__gir *a = axpb(1000, TY_F64, 2.5), *b = axpb(77777, TY_F64, -1.0);
  b->args[0].ptr = 0x999000; /* other addresses, sizes and constants: same kernel */
  CHECK_EQ_INT(ty__gk_plan(a, p1, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gk_plan(b, p2, err, sizeof err), TY_OK);
  CHECK_EQ_INT(p1->keylen, p2->keylen);
  CHECK(!memcmp(p1->key, p2->key, p1->keylen));
  CHECK(p1->hash == p2->hash);
  CHECK(!strcmp(p1->name, p2->name));
  char *s1 = ty__gk_source(a, p1), *s2 = ty__gk_source(b, p2);
  /* equal keys, equal sources but for the size in the leading comment */
  CHECK(strchr(s1, '\n') && strchr(s2, '\n') && !strcmp(strchr(s1, '\n'), strchr(s2, '\n')));
  free(s1);
  free(s2);

  /* what changes the code changes the key */
  ty__gir *c = axpb(1000, TY_F32, 2.5);
  CHECK_EQ_INT(ty__gk_plan(c, p2, err, sizeof err), TY_OK);
  CHECK(p1->hash != p2->hash);
  ty__gir *d = axpb(1000, TY_F64, 2.5);
  d->subs[1].op = TY_OP_LOG;
  CHECK_EQ_INT(ty__gk_plan(d, p2, err, sizeof err), TY_OK);
  CHECK(p1->hash != p2->hash);
  ty__gir *e = axpb(1000, TY_F64, 2.5);
  e->fastmath = true;
  CHECK_EQ_INT(ty__gk_plan(e, p2, err, sizeof err), TY_OK);
  CHECK(p1->hash != p2->hash);
  ty__gir *f = axpb(INT64_C(3) << 30, TY_F64, 2.5); /* 64-bit indices */
  CHECK_EQ_INT(ty__gk_plan(f, p2, err, sizeof err), TY_OK);
  CHECK(p2->wide);
  CHECK(p1->hash != p2->hash);
  ty__gir *g = axpb(1000, TY_F64, 2.5); /* a broadcast input */
  g->args[2].strides[0] = 0;
  CHECK_EQ_INT(ty__gk_plan(g, p2, err, sizeof err), TY_OK);
  CHECK_EQ_INT(p2->access[2], TY__GA_SCALAR);
  CHECK(p1->hash != p2->hash);
  free(a), free(b), free(c), free(d), free(e), free(f), free(g);
  free(p1);
  free(p2);
}

TEST(plan_rejects_what_it_cannot_generate) {
  ty__gplan *p = malloc(sizeof *p);
  char err[256];
  int64_t n = 10;
  /* a temporary read before it is written */
  ty__gir *ir = ir_new(1, &n);
  add_arg(ir, TY_F64, NULL);
  add_tmp(ir, TY_F64);
  UN(ir, TY_OP_EXP, TY_F64, ARG(0), TMP(0));
  CHECK_EQ_INT(ty__gk_plan(ir, p, err, sizeof err), TY_EINVAL);
  CHECK_STR_CONTAINS(err, "read before it is written");
  free(ir);
  /* integer true division is not a kernel (ops.c casts to f64 first) */
  ir = ir_new(1, &n);
  add_arg(ir, TY_I64, NULL);
  add_arg(ir, TY_I64, NULL);
  BIN(ir, TY_OP_DIV, TY_I64, ARG(0), ARG(1), ARG(1));
  CHECK_EQ_INT(ty__gk_plan(ir, p, err, sizeof err), TY_EDTYPE);
  CHECK_STR_CONTAINS(err, "div of i64 is not implemented");
  free(ir);
  /* an input of another dtype than the op computes in */
  ir = ir_new(1, &n);
  add_arg(ir, TY_F64, NULL);
  add_arg(ir, TY_F32, NULL);
  UN(ir, TY_OP_EXP, TY_F64, ARG(0), ARG(1));
  CHECK_EQ_INT(ty__gk_plan(ir, p, err, sizeof err), TY_EDTYPE);
  CHECK_STR_CONTAINS(err, "its input is f32");
  free(ir);
  /* a comparison writes bool, not f64 */
  ir = ir_new(1, &n);
  add_arg(ir, TY_F64, NULL);
  add_arg(ir, TY_F64, NULL);
  BIN(ir, TY_OP_LT, TY_F64, ARG(0), ARG(1), ARG(1));
  CHECK_EQ_INT(ty__gk_plan(ir, p, err, sizeof err), TY_EDTYPE);
  CHECK_STR_CONTAINS(err, "writes bool into argument 0");
  free(ir);
  /* an output broadcast along a dim: threads would race */
  ir = ir_new(1, &n);
  int64_t z = 0;
  add_arg_strided(ir, TY_F64, NULL, &z);
  add_arg(ir, TY_F64, NULL);
  UN(ir, TY_OP_EXP, TY_F64, ARG(0), ARG(1));
  CHECK_EQ_INT(ty__gk_plan(ir, p, err, sizeof err), TY_EINVAL);
  CHECK_STR_CONTAINS(err, "written but broadcast");
  free(ir);
  free(p);
}

static int count(const char *hay, const char *needle) {
  int k = 0;
  for (const char *s = strstr(hay, needle); s; s = strstr(s + 1, needle)) k++;
  return k;
}

TEST(source_loads_once_and_keeps_temporaries_in_registers) {
  int64_t n = 100;
  ty__gir *ir = ir_new(1, &n);
  add_arg(ir, TY_F64, NULL);
  add_arg(ir, TY_F64, NULL);
  add_tmp(ir, TY_F64);
  add_tmp(ir, TY_F64);
  BIN(ir, TY_OP_MUL, TY_F64, TMP(0), ARG(1), ARG(1));
  BIN(ir, TY_OP_ADD, TY_F64, TMP(1), TMP(0), ARG(1));
  BIN(ir, TY_OP_SUB, TY_F64, ARG(0), TMP(1), ARG(1));
  /* the output, read after it was written, comes from its register */
  BIN(ir, TY_OP_MUL, TY_F64, ARG(0), ARG(0), ARG(0));
  ty__gplan *p = malloc(sizeof *p);
  char err[256];
  CHECK_EQ_INT(ty__gk_plan(ir, p, err, sizeof err), TY_OK);
  CHECK_EQ_INT(p->rw[0], 2); /* never loaded */
  char *src = ty__gk_source(ir, p);
  CHECK(src != NULL);
  CHECK_EQ_INT(count(src, "a1[i]"), 1); /* one load of the input per element */
  CHECK_EQ_INT(count(src, "a0[i]"), 1); /* one store of the output */
  CHECK_STR_CONTAINS(src, "a0[i] = v3;");
  CHECK_STR_CONTAINS(src, "const double v3 = v2 * v2;");
  CHECK_STR_CONTAINS(src, "TY_GLOBAL ty_fused_");
  CHECK(!strstr(src, "#include"));
  free(src);
  free(p);
  free(ir);
}

/* ---- running generated kernels on the CPU ------------------------------------------------ */

static const char SHIM[] =
    "#include <math.h>\n"
    "#include <string.h>\n"
    "#define TY_DEV static inline\n"
    "#define TY_GLOBAL void\n"
    "static inline double ty_as_f64(long long w) { double d; memcpy(&d, &w, 8); return d; }\n"
    "#define TY_AS_F64(w) ty_as_f64(w)\n"
    "static inline float ty_as_f32(long long w) { unsigned u = (unsigned)w; float f; memcpy(&f, &u, 4); return f; }\n"
    "#define TY_AS_F32(w) ty_as_f32(w)\n"
    "#define TY_TID 0u\n"
    "#define TY_NTHREADS 1u\n"
    "static const struct { unsigned x; } blockIdx = {0}, threadIdx = {0}, blockDim = {1}, gridDim = {1};\n";

static char tmpdir[64];

static const char *workdir(void) {
  if (!tmpdir[0]) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ty_gpu_codegen_XXXXXX");
    if (!mkdtemp(tmpdir)) tmpdir[0] = 0;
  }
  return tmpdir;
}

static bool have_cc(void) {
  static int have = -1;
  if (have < 0) have = system("cc --version >/dev/null 2>&1") == 0;
  return have == 1;
}

typedef void (*emul_fn)(const long long *words);

/* Compile the plan's source as C and return its entry (the handle leaks:
 * tests are short processes). */
static emul_fn emulate(const ty__gir *ir, const ty__gplan *p) {
  static int serial;
  char *src = ty__gk_source(ir, p);
  if (!src || !workdir()[0]) return NULL;
  char cpath[256], sopath[256], cmd[800];
  snprintf(cpath, sizeof cpath, "%s/k%d.c", workdir(), serial);
  snprintf(sopath, sizeof sopath, "%s/k%d.so", workdir(), serial++);
  FILE *f = fopen(cpath, "w");
  if (!f) return NULL;
  fprintf(f, "%s\n%s\nvoid ty_emul(const long long *w) {\n  struct ty_params p;\n"
             "  memcpy(&p, w, sizeof p);\n  %s(p);\n}\n",
          SHIM, src, p->name);
  fclose(f);
  free(src);
  /* -ffp-contract=off: as NVRTC's --fmad=false */
  snprintf(cmd, sizeof cmd, "cc -std=gnu11 -O1 -ffp-contract=off -fPIC -shared -w -o %s %s -lm",
           sopath, cpath);
  if (system(cmd) != 0) return NULL;
  void *h = dlopen(sopath, RTLD_NOW | RTLD_LOCAL);
  if (!h) return NULL;
  return (emul_fn)(uintptr_t)dlsym(h, "ty_emul");
}

static bool run_emulated(const ty__gir *ir) {
  ty__gplan *p = malloc(sizeof *p);
  char err[256] = "";
  bool ok = ty__gk_plan(ir, p, err, sizeof err) == TY_OK;
  if (!ok) fprintf(stderr, "plan: %s\n", err);
  emul_fn fn = ok ? emulate(ir, p) : NULL;
  if (fn) {
    long long words[TY__GK_MAX_WORDS];
    ty__gk_params(ir, p, (int64_t *)words);
    fn(words);
  }
  free(p);
  return fn != NULL;
}

/* Test values: specials first. */
#define NV 16
static const double F_VALS[NV] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 7.25,
                                  -7.25, 1e300, -1e-300, INFINITY, -INFINITY, NAN, 2.0, 123.456};
static const int64_t I_VALS[NV] = {0, 1, -1, 7, -7, 3, -3, INT64_MIN, INT64_MAX, 2, 100, -100,
                                   5, 255, 256, -129};

static void fill_vals(ty_dtype t, void *dst, int n, int shift) {
  for (int i = 0; i < n; i++) {
    int k = (i / NV + i * shift) % NV;
    char *p = (char *)dst + (size_t)i * ty_dtype_size(t);
    if (ty_dtype_is_float(t)) ty__store_f64(p, t, F_VALS[(i + k) % NV]);
    else if (t == TY_BOOL) *(uint8_t *)p = (uint8_t)((i + k) & 1);
    else if (t == TY_U8) *(uint8_t *)p = (uint8_t)I_VALS[(i + k) % NV];
    else if (t == TY_I32) *(int32_t *)p = (int32_t)(I_VALS[(i + k) % NV] == INT64_MIN ? INT32_MIN : I_VALS[(i + k) % NV] == INT64_MAX ? INT32_MAX : I_VALS[(i + k) % NV]);
    else *(int64_t *)p = I_VALS[(i + k) % NV];
  }
}

static bool transcendental(ty_op op) {
  return op == TY_OP_EXP || op == TY_OP_LOG || op == TY_OP_SIN || op == TY_OP_COS ||
         op == TY_OP_TANH || op == TY_OP_POW || (op >= TY_OP_TAN && op <= TY_OP_CBRT) ||
         op == TY_OP_ARCTAN2 || op == TY_OP_HYPOT;
}

static int64_t ulps(double a, double b, ty_dtype t) {
  if (t == TY_F32) {
    float x = (float)a, y = (float)b;
    int32_t i, j;
    memcpy(&i, &x, 4);
    memcpy(&j, &y, 4);
    if (i < 0) i = INT32_MIN - i;
    if (j < 0) j = INT32_MIN - j;
    return i > j ? (int64_t)i - j : (int64_t)j - i;
  }
  int64_t i, j;
  memcpy(&i, &a, 8);
  memcpy(&j, &b, 8);
  if (i < 0) i = INT64_MIN - i;
  if (j < 0) j = INT64_MIN - j;
  return i > j ? i - j : j - i;
}

/* Element k of the generated result equals the CPU's: bit for bit (NaN as
 * NaN), within `tol` ULPs for transcendentals. */
static int compare(const char *what, ty_dtype t, const void *got, const void *want, int n, int tol) {
  int bad = 0;
  size_t es = ty_dtype_size(t);
  for (int i = 0; i < n; i++) {
    const char *g = (const char *)got + (size_t)i * es, *w = (const char *)want + (size_t)i * es;
    if (ty_dtype_is_float(t)) {
      double a = ty__load_f64(g, t), b = ty__load_f64(w, t);
      if (isnan(a) && isnan(b)) continue;
      if (!memcmp(g, w, es)) continue;
      if (tol && !isnan(a) && !isnan(b) && ulps(a, b, t) <= tol) continue;
      if (bad++ < 3) fprintf(stderr, "  %s[%d]: generated %.17g, cpu %.17g\n", what, i, a, b);
    } else if (memcmp(g, w, es)) {
      if (bad++ < 3)
        fprintf(stderr, "  %s[%d]: generated %lld, cpu %lld\n", what, i,
                (long long)ty__load_i64(g, t), (long long)ty__load_i64(w, t));
    }
  }
  return bad;
}

/* Every unary and binary op of one compute dtype, one kernel with one output
 * per op, against the CPU tables. n = NV*NV elements: every pair of test
 * values meets in a binary op. */
static void ops_of_dtype(ty_dtype t) {
  const int n = NV * NV;
  int64_t shape = n;
  ty__gir *ir = ir_new(1, &shape);
  size_t es = ty_dtype_size(t);
  char *x = calloc((size_t)n, es), *y = calloc((size_t)n, es);
  for (int i = 0; i < n; i++) {
    char *px = x + (size_t)i * es, *py = y + (size_t)i * es;
    int a = i % NV, b = i / NV;
    if (ty_dtype_is_float(t)) {
      ty__store_f64(px, t, F_VALS[a]);
      ty__store_f64(py, t, F_VALS[b]);
    } else if (t == TY_BOOL) {
      *(uint8_t *)px = (uint8_t)(a & 1);
      *(uint8_t *)py = (uint8_t)(b & 1);
    } else {
      ty__store_i64(px, t, I_VALS[a]);
      ty__store_i64(py, t, I_VALS[b]);
    }
  }
  int ax = add_arg(ir, t, x), ay = add_arg(ir, t, y);
  struct {
    int op, arg;
    char *got, *want;
    ty_dtype out;
  } outs[TY_NOPS];
  int nout = 0;
  for (int op = 0; op < TY_NOPS; op++) {
    bool bin = op >= TY_OP_FIRST_BINARY;
    if (!(bin ? ty__binary_loops[op][t] : ty__unary_loops[op][t])) continue;
    ty_dtype od = ty__op_out_dtype((ty_op)op, t);
    char *got = calloc((size_t)n, ty_dtype_size(od)), *want = calloc((size_t)n, ty_dtype_size(od));
    int ao = add_arg(ir, od, got);
    if (bin) BIN(ir, op, t, ARG(ao), ARG(ax), ARG(ay));
    else UN(ir, op, t, ARG(ao), ARG(ax));
    char *ptrs[3] = {want, x, y};
    int64_t strides[3] = {(int64_t)ty_dtype_size(od), (int64_t)es, (int64_t)es};
    (bin ? ty__binary_loops[op][t] : ty__unary_loops[op][t])(n, ptrs, strides, NULL);
    outs[nout++] = (typeof(outs[0])){op, ao, got, want, od};
  }
  if (!run_emulated(ir)) {
    CHECK(!"generated kernel did not compile as C");
  } else {
    for (int k = 0; k < nout; k++) {
      char what[64];
      snprintf(what, sizeof what, "%s %s", ty_op_name((ty_op)outs[k].op), ty_dtype_name(t));
      int bad = compare(what, outs[k].out, outs[k].got, outs[k].want, n,
                        transcendental((ty_op)outs[k].op) ? 2 : 0);
      if (bad) fprintf(stderr, "%s: %d of %d elements differ\n", what, bad, n);
      CHECK_EQ_INT(bad, 0);
    }
  }
  for (int k = 0; k < nout; k++) {
    free(outs[k].got);
    free(outs[k].want);
  }
  free(x);
  free(y);
  free(ir);
}

TEST(generated_ops_match_cpu_kernels) {
  if (!have_cc()) SKIP("no C compiler (cc) to run generated kernels on the CPU");
  for (int t = 0; t < TY__GPU_NDTYPES; t++) ops_of_dtype((ty_dtype)t);
}

TEST(generated_casts_match_cpu_kernels) {
  if (!have_cc()) SKIP("no C compiler (cc) to run generated kernels on the CPU");
  const int n = 4 * NV;
  int64_t shape = n;
  ty__gir *ir = ir_new(1, &shape);
  char *in[TY_NDTYPES], *got[TY_NDTYPES][TY_NDTYPES], *want[TY_NDTYPES][TY_NDTYPES];
  static const double extra[] = {1e19, -1e19, 3e9, -3e9, 255.5, 256.0, -0.5, -1.0, 2147483647.5,
                                 -2147483648.5, 9.3e18, -9.3e18, 0.999, 1e-310, 65.7, -65.7};
  for (int f = 0; f < TY__GPU_NDTYPES; f++) {
    size_t es = ty_dtype_size((ty_dtype)f);
    in[f] = calloc((size_t)n, es);
    fill_vals((ty_dtype)f, in[f], n, 1);
    if (ty_dtype_is_float((ty_dtype)f))
      for (int i = 0; i < NV; i++) ty__store_f64(in[f] + (size_t)(n - NV + i) * es, (ty_dtype)f, extra[i]);
    if (f == TY_BOOL) in[f][3] = 7; /* a non-canonical true byte */
    add_arg(ir, (ty_dtype)f, in[f]);
  }
  for (int f = 0; f < TY__GPU_NDTYPES; f++)
    for (int t = 0; t < TY__GPU_NDTYPES; t++) {
      size_t es = ty_dtype_size((ty_dtype)t);
      got[f][t] = calloc((size_t)n, es);
      want[f][t] = calloc((size_t)n, es);
      int ao = add_arg(ir, (ty_dtype)t, got[f][t]);
      add_sub(ir, TY__G_CAST, 0, (ty_dtype)t, (ty_dtype)f, ARG(ao), 1, ARG(f), ARG(f), ARG(f));
      char *ptrs[2] = {want[f][t], in[f]};
      int64_t strides[2] = {(int64_t)es, (int64_t)ty_dtype_size((ty_dtype)f)};
      ty__cast_loops[f][t](n, ptrs, strides, NULL);
    }
  CHECK(run_emulated(ir));
  for (int f = 0; f < TY__GPU_NDTYPES; f++)
    for (int t = 0; t < TY__GPU_NDTYPES; t++) {
      char what[64];
      snprintf(what, sizeof what, "cast %s -> %s", ty_dtype_name((ty_dtype)f), ty_dtype_name((ty_dtype)t));
      int bad = compare(what, (ty_dtype)t, got[f][t], want[f][t], n, 0);
      if (bad) fprintf(stderr, "%s: %d differ\n", what, bad);
      CHECK_EQ_INT(bad, 0);
      free(got[f][t]);
      free(want[f][t]);
    }
  for (int f = 0; f < TY__GPU_NDTYPES; f++) free(in[f]);
  free(ir);
}

/* Black-Scholes' call price on a 2-D domain with a row-broadcast rate, a
 * transposed strike, scalar constants, temporaries, where and a comparison:
 * every access class, against the same chain run op by op on the CPU. */
TEST(generated_chain_matches_unfused_cpu) {
  if (!have_cc()) SKIP("no C compiler (cc) to run generated kernels on the CPU");
  enum { R = 37, C = 53 };
  int64_t shape[2] = {R, C};
  double *S = malloc(sizeof(double) * R * C), *KT = malloc(sizeof(double) * C * R),
         *rate = malloc(sizeof(double) * C), *out = calloc(R * C, sizeof(double)),
         *want = calloc(R * C, sizeof(double));
  for (int i = 0; i < R * C; i++) S[i] = 5 + 25 * ((i * 0.6180339887) - (int)(i * 0.6180339887));
  for (int i = 0; i < R * C; i++) KT[i] = 1 + 99 * ((i * 0.7548776662) - (int)(i * 0.7548776662));
  for (int j = 0; j < C; j++) rate[j] = 0.01 + 0.001 * j;
  ty__gir *ir = ir_new(2, shape);
  int aout = add_arg(ir, TY_F64, out), aS = add_arg(ir, TY_F64, S);
  int64_t kst[2] = {1, R}, rst[2] = {0, 1};
  int aK = add_arg_strided(ir, TY_F64, KT, kst), ar = add_arg_strided(ir, TY_F64, rate, rst);
  int c_half = add_const_f(ir, TY_F64, 0.5), c_zero = add_const_f(ir, TY_F64, 0.0),
      c_one = add_const_f(ir, TY_F64, 1.0);
  int t[8];
  for (int k = 0; k < 7; k++) t[k] = add_tmp(ir, TY_F64);
  t[7] = add_tmp(ir, TY_BOOL);
  /* d = log(S / K) + rate * 0.5 ; c = exp(-d*d*0.5) ; out = where(d > 0, 1 - c, c) * S */
  BIN(ir, TY_OP_DIV, TY_F64, TMP(t[0]), ARG(aS), ARG(aK));
  UN(ir, TY_OP_LOG, TY_F64, TMP(t[1]), TMP(t[0]));
  BIN(ir, TY_OP_MUL, TY_F64, TMP(t[2]), ARG(ar), CONST(c_half));
  BIN(ir, TY_OP_ADD, TY_F64, TMP(t[1]), TMP(t[1]), TMP(t[2]));
  BIN(ir, TY_OP_MUL, TY_F64, TMP(t[3]), TMP(t[1]), TMP(t[1]));
  BIN(ir, TY_OP_MUL, TY_F64, TMP(t[3]), TMP(t[3]), CONST(c_half));
  UN(ir, TY_OP_NEG, TY_F64, TMP(t[3]), TMP(t[3]));
  UN(ir, TY_OP_EXP, TY_F64, TMP(t[4]), TMP(t[3]));
  BIN(ir, TY_OP_GT, TY_F64, TMP(t[7]), TMP(t[1]), CONST(c_zero));
  BIN(ir, TY_OP_SUB, TY_F64, TMP(t[5]), CONST(c_one), TMP(t[4]));
  add_sub(ir, TY__G_WHERE, 0, TY_F64, TY_F64, TMP(t[6]), 3, TMP(t[7]), TMP(t[5]), TMP(t[4]));
  BIN(ir, TY_OP_MUL, TY_F64, ARG(aout), TMP(t[6]), ARG(aS));
  CHECK(run_emulated(ir));
  /* the same, op by op through the CPU tables, element by element */
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      double s = S[i * C + j], k = KT[j * R + i], r = rate[j], a, b, c, d, e;
      uint8_t g;
      char *p2[3];
      int64_t z[3] = {0, 0, 0};
#define B2(op, o, x, y) (p2[0] = (char *)&o, p2[1] = (char *)&x, p2[2] = (char *)&y, ty__binary_loops[op][TY_F64](1, p2, z, NULL))
#define U1(op, o, x) (p2[0] = (char *)&o, p2[1] = (char *)&x, ty__unary_loops[op][TY_F64](1, p2, z, NULL))
      double half = 0.5, zero = 0.0, one = 1.0;
      B2(TY_OP_DIV, a, s, k);
      U1(TY_OP_LOG, b, a);
      B2(TY_OP_MUL, c, r, half);
      B2(TY_OP_ADD, b, b, c);
      B2(TY_OP_MUL, d, b, b);
      B2(TY_OP_MUL, d, d, half);
      U1(TY_OP_NEG, d, d);
      U1(TY_OP_EXP, e, d);
      B2(TY_OP_GT, g, b, zero);
      B2(TY_OP_SUB, a, one, e);
      double w = g ? a : e;
      B2(TY_OP_MUL, want[i * C + j], w, s);
#undef B2
#undef U1
    }
  /* log and exp: libm in the emulation vs SLEEF: a few ULPs through the chain */
  int bad = 0;
  for (int i = 0; i < R * C; i++)
    if (fabs(out[i] - want[i]) > 1e-14 * fabs(want[i]) + 1e-300) {
      if (bad++ < 3) fprintf(stderr, "  [%d] %.17g vs %.17g\n", i, out[i], want[i]);
    }
  CHECK_EQ_INT(bad, 0);
  free(S), free(KT), free(rate), free(out), free(want), free(ir);
}

/* ---- NVRTC -------------------------------------------------------------------------------- */

static ty__nvrtc nv;
static bool nv_tried, nv_ok;
static char nv_why[256];

static bool nvrtc(void) {
  if (!nv_tried) {
    nv_tried = true;
    nv_ok = ty__nvrtc_load(&nv, NULL, nv_why, sizeof nv_why) == TY_OK;
  }
  return nv_ok;
}

/* one kernel per compute dtype holding every op of that dtype */
static ty__gir *all_ops(ty_dtype t) {
  int64_t n = 1000;
  ty__gir *ir = ir_new(1, &n);
  int ax = add_arg(ir, t, NULL), ay = add_arg(ir, t, NULL);
  for (int op = 0; op < TY_NOPS; op++) {
    bool bin = op >= TY_OP_FIRST_BINARY;
    if (!(bin ? ty__binary_loops[op][t] : ty__unary_loops[op][t])) continue;
    int ao = add_arg(ir, ty__op_out_dtype((ty_op)op, t), NULL);
    if (bin) BIN(ir, op, t, ARG(ao), ARG(ax), ARG(ay));
    else UN(ir, op, t, ARG(ao), ARG(ax));
  }
  return ir;
}

TEST(nvrtc_compiles_every_op_and_dtype_for_sm90) {
  if (!nvrtc()) SKIP("%s", nv_why);
  ty__gplan *p = malloc(sizeof *p);
  char err[4096];
  for (int t = 0; t <= TY__GPU_NDTYPES; t++) {
    ty__gir *ir;
    if (t < TY__GPU_NDTYPES) {
      ir = all_ops((ty_dtype)t);
    } else { /* every cast, and a strided 64-bit-index kernel */
      int64_t shape[2] = {INT64_C(1) << 16, INT64_C(1) << 16};
      ir = ir_new(2, shape);
      int64_t tr[2] = {1, INT64_C(1) << 16};
      for (int f = 0; f < TY__GPU_NDTYPES; f++) add_arg_strided(ir, (ty_dtype)f, NULL, tr);
      for (int f = 0; f < TY__GPU_NDTYPES; f++)
        for (int to = 0; to < TY__GPU_NDTYPES; to++) {
          int ao = add_arg(ir, (ty_dtype)to, NULL);
          add_sub(ir, TY__G_CAST, 0, (ty_dtype)to, (ty_dtype)f, ARG(ao), 1, ARG(f), ARG(f), ARG(f));
        }
    }
    CHECK_EQ_INT(ty__gk_plan(ir, p, err, sizeof err), TY_OK);
    char *src = ty__gk_source(ir, p), *ptx = NULL;
    size_t len = 0;
    ty_status st = ty__nvrtc_compile(&nv, src, p->name, 90, false, &ptx, &len, err, sizeof err);
    if (st) fprintf(stderr, "%s\n%s\n", err, src);
    CHECK_EQ_INT(st, TY_OK);
    char entry[64];
    snprintf(entry, sizeof entry, ".entry %s(", p->name);
    CHECK_STR_CONTAINS(ptx, ".target sm_90");
    CHECK_STR_CONTAINS(ptx, entry);
    CHECK(len > 1000 && len == strlen(ptx));
    if (t == TY__GPU_NDTYPES) CHECK(p->wide);
    free(ptx);
    free(src);
    free(ir);
  }
  free(p);
}

/* a*b + c: two roundings by default (as the CPU), one FMA under fastmath */
TEST(nvrtc_contracts_multiply_add_only_under_fastmath) {
  if (!nvrtc()) SKIP("%s", nv_why);
  ty__gplan *p = malloc(sizeof *p);
  char err[2048];
  for (int fast = 0; fast < 2; fast++) {
    int64_t n = 100;
    ty__gir *ir = ir_new(1, &n);
    for (int a = 0; a < 4; a++) add_arg(ir, TY_F64, NULL);
    add_tmp(ir, TY_F64);
    BIN(ir, TY_OP_MUL, TY_F64, TMP(0), ARG(1), ARG(2));
    BIN(ir, TY_OP_ADD, TY_F64, ARG(0), TMP(0), ARG(3));
    ir->fastmath = fast;
    CHECK_EQ_INT(ty__gk_plan(ir, p, err, sizeof err), TY_OK);
    char *src = ty__gk_source(ir, p), *ptx = NULL;
    size_t len;
    CHECK_EQ_INT(ty__nvrtc_compile(&nv, src, p->name, 90, fast, &ptx, &len, err, sizeof err), TY_OK);
    if (ptx) {
      bool fma = strstr(ptx, "fma.rn.f64") != NULL, mul = strstr(ptx, "mul.rn.f64") != NULL;
      CHECK(fma == (fast != 0));
      CHECK(mul == (fast == 0));
    }
    free(ptx);
    free(src);
    free(ir);
  }
  free(p);
}

TEST(nvrtc_reports_compile_errors) {
  if (!nvrtc()) SKIP("%s", nv_why);
  char err[4096], *ptx = NULL;
  size_t len;
  CHECK_EQ_INT(ty__nvrtc_compile(&nv, "extern \"C\" __global__ void k() { undefined_thing(); }",
                                 "k", 90, false, &ptx, &len, err, sizeof err),
               TY_EINVAL);
  CHECK(ptx == NULL);
  CHECK_STR_CONTAINS(err, "NVRTC could not compile k");
  CHECK_STR_CONTAINS(err, "undefined_thing");
}

static int rm_rf(const char *dir) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd);
}

TEST(ptx_cache_hits_in_memory_then_on_disk) {
  if (!nvrtc()) SKIP("%s", nv_why);
  char dir[256];
  snprintf(dir, sizeof dir, "/tmp/ty_gpu_ptx_XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  char sub[300];
  snprintf(sub, sizeof sub, "%s/cache/ptx", dir); /* created on first write */
  ty__ptx_cache c;
  ty__ptx_cache_init(&c, &nv, sub);
  ty__gplan *p = malloc(sizeof *p);
  char err[2048];
  ty__gir *a = axpb(1000, TY_F32, 2.0), *b = axpb(5000, TY_F32, -3.0);
  CHECK_EQ_INT(ty__gk_plan(a, p, err, sizeof err), TY_OK);
  ty__ptx_entry *e1 = NULL, *e2 = NULL, *e3 = NULL;
  CHECK_EQ_INT(ty__gk_kernel(&c, a, p, 90, &e1, err, sizeof err), TY_OK);
  CHECK_EQ_INT(c.compiles, 1);
  CHECK_EQ_INT(c.hits, 0);
  CHECK_EQ_INT(c.disk_errors, 0);
  /* a loop's next iteration: other size and constant, same kernel, no compile */
  CHECK_EQ_INT(ty__gk_plan(b, p, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gk_kernel(&c, b, p, 90, &e2, err, sizeof err), TY_OK);
  CHECK(e1 == e2);
  CHECK_EQ_INT(c.compiles, 1);
  CHECK_EQ_INT(c.hits, 1);
  /* another arch is another entry */
  CHECK_EQ_INT(ty__gk_kernel(&c, b, p, 80, &e3, err, sizeof err), TY_OK);
  CHECK(e3 != e1);
  CHECK_STR_CONTAINS(e3->ptx, ".target sm_80");
  CHECK_EQ_INT(c.compiles, 2);
  ty__ptx_cache_free(&c);

  /* a new process (a new cache) finds it on disk */
  ty__ptx_cache_init(&c, &nv, sub);
  CHECK_EQ_INT(ty__gk_kernel(&c, a, p, 90, &e1, err, sizeof err), TY_OK);
  CHECK_EQ_INT(c.compiles, 0);
  CHECK_EQ_INT(c.disk_hits, 1);
  CHECK_STR_CONTAINS(e1->ptx, p->name);
  CHECK(strncmp(e1->ptx, "// tycho-ptx", 12) != 0); /* the header is stripped */
  ty__ptx_cache_free(&c);

  /* a damaged file is a miss, and is rewritten */
  char path[600];
  snprintf(path, sizeof path, "%s/%s.sm90.ptx", sub, p->name);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (f) {
    fputs("// tycho-ptx 1 garbage\n", f);
    fclose(f);
  }
  ty__ptx_cache_init(&c, &nv, sub);
  CHECK_EQ_INT(ty__gk_kernel(&c, a, p, 90, &e1, err, sizeof err), TY_OK);
  CHECK_EQ_INT(c.compiles, 1);
  CHECK_EQ_INT(c.disk_hits, 0);
  ty__ptx_cache_free(&c);
  ty__ptx_cache_init(&c, &nv, sub);
  CHECK_EQ_INT(ty__gk_kernel(&c, a, p, 90, &e1, err, sizeof err), TY_OK);
  CHECK_EQ_INT(c.disk_hits, 1);
  ty__ptx_cache_free(&c);

  /* no disk cache at all */
  ty__ptx_cache_init(&c, &nv, "");
  CHECK_EQ_INT(ty__gk_kernel(&c, a, p, 90, &e1, err, sizeof err), TY_OK);
  CHECK_EQ_INT(c.compiles, 1);
  ty__ptx_cache_free(&c);
  free(a), free(b), free(p);
  CHECK_EQ_INT(rm_rf(dir), 0);
}

/* ---- from the fusion pass's description ------------------------------------------------------ */

TEST(ir_from_fused_description) {
  /* exp(x * 3.0) into argument 0, through one block slot, as fuse.c writes it */
  _Alignas(8) unsigned char buf[512];
  memset(buf, 0, sizeof buf);
  ty__fhead *h = (ty__fhead *)buf;
  h->magic = TY__FUSE_MAGIC;
  h->version = TY__FUSE_VERSION;
  h->nsub = 2;
  h->nargs = 2;
  h->nslots = 1;
  h->nconsts = 1;
  h->ndim = 1;
  ((int64_t *)(h + 1))[0] = 64;
  h->first = (uint32_t)(sizeof *h + 8);
  ty__fsub *s0 = (ty__fsub *)(buf + h->first);
  s0->size = (uint16_t)(sizeof *s0 + 3 * sizeof(ty__fopnd) + 4);
  s0->kind = TY__FK_BINARY;
  s0->op = TY_OP_MUL;
  s0->dt = s0->dt2 = TY_F64;
  s0->nops = 3;
  s0->opnd[0] = (ty__fopnd){TY__FREF_SLOT(0), TY_F64, TY_PRIV_OUT};
  s0->opnd[1] = (ty__fopnd){1, TY_F64, TY_PRIV_IN};
  s0->opnd[2] = (ty__fopnd){TY__FREF_CONST + 0, TY_F64, TY_PRIV_IN};
  ty__fsub *s1 = (ty__fsub *)((char *)s0 + s0->size);
  s1->size = (uint16_t)(sizeof *s1 + 2 * sizeof(ty__fopnd));
  s1->kind = TY__FK_UNARY;
  s1->op = TY_OP_EXP;
  s1->dt = s1->dt2 = TY_F64;
  s1->nops = 2;
  s1->opnd[0] = (ty__fopnd){0, TY_F64, TY_PRIV_OUT};
  s1->opnd[1] = (ty__fopnd){TY__FREF_SLOT(0), TY_F64, TY_PRIV_IN};
  h->consts = (uint32_t)((char *)s1 + s1->size - (char *)buf);
  double three = 3.0;
  memcpy(buf + h->consts, &three, 8);
  h->bytes = h->consts + 8;

  ty_tile tiles[2];
  memset(tiles, 0, sizeof tiles);
  for (int a = 0; a < 2; a++) {
    tiles[a].dtype = TY_F64;
    tiles[a].ndim = 1;
    tiles[a].shape[0] = 64;
    tiles[a].strides[0] = 1;
  }
  uint64_t dev[2] = {0xA000, 0xB000};
  int64_t shape = 64;
  ty__gir *ir = malloc(sizeof *ir);
  char err[256] = "";
  CHECK_EQ_INT(ty__gk_from_fused(buf, h->bytes, 1, &shape, 2, tiles, dev, ir, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ir->nsubs, 2);
  CHECK_EQ_INT(ir->ntmps, 1);
  CHECK_EQ_INT(ir->nconsts, 1);
  CHECK(ir->consts[0].f == 3.0);
  CHECK(ir->args[1].ptr == 0xB000);
  CHECK_EQ_INT(ir->subs[0].out.kind, TY__GREF_TMP);
  CHECK_EQ_INT(ir->subs[0].in[1].kind, TY__GREF_CONST);
  CHECK_EQ_INT(ir->subs[1].out.kind, TY__GREF_ARG);
  ty__gplan *p = malloc(sizeof *p);
  CHECK_EQ_INT(ty__gk_plan(ir, p, err, sizeof err), TY_OK);
  char *src = ty__gk_source(ir, p);
  CHECK_STR_CONTAINS(src, "const double v0 = x1 * c0;");
  CHECK_STR_CONTAINS(src, "const double v1 = exp(v0);");
  free(src);
  /* fastmath only when every sub-operation allowed it: an exact launch fused
   * with a fastmath one stays exact (no fma contraction, no approximations) */
  CHECK(!ir->fastmath);
  s0->flags |= TY__FS_FASTMATH;
  CHECK_EQ_INT(ty__gk_from_fused(buf, h->bytes, 1, &shape, 2, tiles, dev, ir, err, sizeof err), TY_OK);
  CHECK(!ir->fastmath);
  s1->flags |= TY__FS_FASTMATH;
  CHECK_EQ_INT(ty__gk_from_fused(buf, h->bytes, 1, &shape, 2, tiles, dev, ir, err, sizeof err), TY_OK);
  CHECK(ir->fastmath);
  /* a reduction is not generated: the caller runs the run another way */
  s1->kind = TY__FK_REDUCE;
  CHECK_EQ_INT(ty__gk_from_fused(buf, h->bytes, 1, &shape, 2, tiles, dev, ir, err, sizeof err), TY_EDTYPE);
  CHECK_STR_CONTAINS(err, "reduction");
  free(p);
  free(ir);
}

/* A chain ending in a full reduction (ty__gred): every kind x dtype, adding
 * into the accumulator or not, compiles to sm_90 PTX (shared memory, the
 * block tree, atomicAdd on the last-block counter); an accumulator the
 * chain also uses, or of the wrong dtype, is refused. */
TEST(nvrtc_compiles_fused_reductions) {
  ty__gplan *p = malloc(sizeof *p);
  char err[4096];
  const ty_dtype dts[] = {TY_F64, TY_F32, TY_I64, TY_I32, TY_U8, TY_BOOL};
  int64_t n = 1000, zero[1] = {0};
  { /* refusals, on any machine */
    ty__gir *ir = ir_new(1, &n);
    int ax = add_arg(ir, TY_F64, NULL), aa = add_arg_strided(ir, TY_F64, NULL, zero);
    ir->red = (ty__gred){true, TY__RSUM, TY_F64, false, (uint16_t)ax, ARG(ax)};
    CHECK_EQ_INT(ty__gk_plan(ir, p, err, sizeof err), TY_EINVAL);
    CHECK_STR_CONTAINS(err, "accumulator");
    ir->red = (ty__gred){true, TY__RSUM, TY_I64, false, (uint16_t)aa, ARG(ax)};
    CHECK_EQ_INT(ty__gk_plan(ir, p, err, sizeof err), TY_EDTYPE);
    CHECK_STR_CONTAINS(err, "reduction of f64 into f64");
    free(ir);
  }
  if (!nvrtc()) {
    free(p);
    SKIP("%s", nv_why);
  }
  for (int kind = 0; kind < TY__NREDKIND; kind++)
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
      for (int accumulate = 0; accumulate < 2; accumulate++) {
        const ty_dtype t = dts[di];
        const ty_dtype at = (kind == TY__RSUM || kind == TY__RPROD) && !ty_dtype_is_float(t) ? TY_I64 : t;
        ty__gir *ir = ir_new(1, &n);
        int ax = add_arg(ir, t, NULL), aa = add_arg_strided(ir, at, NULL, zero);
        ir->nsubs = 0;
        ir->red = (ty__gred){true, (uint8_t)kind, (uint8_t)at, accumulate == 1, (uint16_t)aa, ARG(ax)};
        ty_status st = ty__gk_plan(ir, p, err, sizeof err);
        if (st) fprintf(stderr, "%s\n", err);
        CHECK_EQ_INT(st, TY_OK);
        char *src = ty__gk_source(ir, p), *ptx = NULL;
        size_t len = 0;
        st = ty__nvrtc_compile(&nv, src, p->name, 90, false, &ptx, &len, err, sizeof err);
        if (st) fprintf(stderr, "%s\n%s\n", err, src);
        CHECK_EQ_INT(st, TY_OK);
        if (ptx) {
          CHECK_STR_CONTAINS(ptx, "atom.global");
          CHECK_STR_CONTAINS(ptx, "bar.sync");
        }
        free(ptx);
        free(src);
        free(ir);
      }
  free(p);
}

static const check_case cases[] = {
    CASE(nvrtc_compiles_fused_reductions),
    CASE(plan_collapses_and_classifies),
    CASE(key_is_structural),
    CASE(plan_rejects_what_it_cannot_generate),
    CASE(source_loads_once_and_keeps_temporaries_in_registers),
    CASE(generated_ops_match_cpu_kernels),
    CASE(generated_casts_match_cpu_kernels),
    CASE(generated_chain_matches_unfused_cpu),
    CASE(nvrtc_compiles_every_op_and_dtype_for_sm90),
    CASE(nvrtc_contracts_multiply_add_only_under_fastmath),
    CASE(nvrtc_reports_compile_errors),
    CASE(ptx_cache_hits_in_memory_then_on_disk),
    CASE(ir_from_fused_description),
};

int main(int argc, char **argv) {
  int rc = check_run(argc, argv, cases, sizeof cases / sizeof cases[0]);
  if (tmpdir[0]) rm_rf(tmpdir);
  if (nv_ok) ty__nvrtc_unload(&nv);
  /* a single case that was skipped: CTest's SKIP_RETURN_CODE */
  return rc == 0 && argc > 1 && skipped ? 77 : rc;
}
