/*
 * gpu_codegen.c — fused element-wise chains to CUDA C (see gpu_codegen.h).
 *
 * Invariants:
 *  - the key holds exactly what the source depends on: two IRs with equal
 *    keys generate byte-identical sources (the source is a function of the
 *    key), so a cache keyed by it never returns a wrong kernel;
 *  - every (op, dtype) combination accepted is one the CPU tables
 *    (kernels.h) implement, with the same semantics; anything else is
 *    refused at plan time, never miscompiled;
 *  - the generated text has no #include (NVRTC has no system headers) and
 *    compiles as C with the emulation shim of the tests.
 */
#include "alloc.h"
#include "gpu_codegen.h"

#include "fused.h"
#include "gpu_nvrtc.h"
#include "kernels.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Kernel parameters: CUDA 12.1+ on Volta and later accepts 32764 bytes. */
#define MAX_PARAM_BYTES 32000

const char *ty__gk_ctype(ty_dtype t) {
  switch (t) {
  case TY_F64: return "double";
  case TY_F32: return "float";
  case TY_I64: return "long long";
  case TY_I32: return "int";
  case TY_U8:
  case TY_BOOL: return "unsigned char";
  case TY_I8: return "signed char";
  case TY_I16: return "short";
  case TY_U16: return "unsigned short";
  case TY_U32: return "unsigned int";
  case TY_U64: return "unsigned long long";
  default: return "?";
  }
}

/* ---- validation ------------------------------------------------------------------- */

static ty_status fail(char *err, size_t len, ty_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static ty_status fail(char *err, size_t len, ty_status st, const char *fmt, ...) {
  if (err && len) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
  }
  return st;
}

/* The dtype of a value a sub-operation reads, or -1 when the reference is
 * out of range or a temporary not yet written. */
static int ref_dtype(const ty__gir *ir, const bool *tmp_set, ty__gref r) {
  switch (r.kind) {
  case TY__GREF_ARG: return r.idx < ir->nargs ? (int)ir->args[r.idx].dtype : -1;
  case TY__GREF_CONST: return r.idx < ir->nconsts ? (int)ir->consts[r.idx].dtype : -1;
  case TY__GREF_TMP: return r.idx < ir->ntmps && tmp_set[r.idx] ? (int)ir->tmps[r.idx] : -1;
  default: return -1;
  }
}

static const char *kind_name(int k) {
  switch (k) {
  case TY__G_UNARY: return "unary";
  case TY__G_BINARY: return "binary";
  case TY__G_WHERE: return "where";
  case TY__G_CAST: return "cast";
  case TY__G_FILL: return "fill";
  default: return "?";
  }
}

/* The dtype a sub-operation writes, or a failure. */
static ty_status check_sub(const ty__gir *ir, const bool *tmp_set, int k, ty_dtype *out_dt,
                           char *err, size_t len) {
  const ty__gsub *s = &ir->subs[k];
  int want_in = s->kind == TY__G_UNARY || s->kind == TY__G_CAST || s->kind == TY__G_FILL ? 1
                : s->kind == TY__G_BINARY                                                ? 2
                : s->kind == TY__G_WHERE                                                 ? 3
                                                                                         : -1;
  if (want_in < 0) return fail(err, len, TY_EINVAL, "sub-operation %d: unknown kind %d", k, s->kind);
  if (s->nin != want_in)
    return fail(err, len, TY_EINVAL, "sub-operation %d (%s): %d inputs, expected %d", k,
                kind_name(s->kind), s->nin, want_in);
  if (s->dt >= TY_NDTYPES || s->dt2 >= TY_NDTYPES)
    return fail(err, len, TY_EDTYPE, "sub-operation %d: bad dtype", k);
  if (s->dt >= TY__GPU_NDTYPES || s->dt2 >= TY__GPU_NDTYPES)
    return fail(err, len, TY_EDTYPE, "sub-operation %d: %s has no generated GPU code yet", k,
                ty_dtype_name((ty_dtype)(s->dt >= TY__GPU_NDTYPES ? s->dt : s->dt2)));
  int in_dt[3];
  for (int j = 0; j < s->nin; j++) {
    in_dt[j] = ref_dtype(ir, tmp_set, s->in[j]);
    if (in_dt[j] < 0)
      return fail(err, len, TY_EINVAL, "sub-operation %d (%s): input %d refers to %s %d, %s", k,
                  kind_name(s->kind), j,
                  s->in[j].kind == TY__GREF_ARG ? "argument" : s->in[j].kind == TY__GREF_CONST ? "constant" : "temporary",
                  s->in[j].idx,
                  s->in[j].kind == TY__GREF_TMP ? "read before it is written (or out of range)" : "out of range");
  }
  ty_dtype dt = (ty_dtype)s->dt, res = dt;
  switch (s->kind) {
  case TY__G_UNARY:
    if (s->op >= TY_OP_FIRST_BINARY || !ty__unary_loops[s->op][dt])
      return fail(err, len, TY_EDTYPE, "sub-operation %d: unary %s of %s is not implemented", k,
                  ty_op_name((ty_op)s->op), ty_dtype_name(dt));
    if (in_dt[0] != (int)dt)
      return fail(err, len, TY_EDTYPE, "sub-operation %d: %s computes in %s, its input is %s", k,
                  ty_op_name((ty_op)s->op), ty_dtype_name(dt), ty_dtype_name((ty_dtype)in_dt[0]));
    res = ty__op_out_dtype((ty_op)s->op, dt);
    break;
  case TY__G_BINARY:
    if (s->op < TY_OP_FIRST_BINARY || s->op >= TY_NOPS || !ty__binary_loops[s->op][dt])
      return fail(err, len, TY_EDTYPE, "sub-operation %d: binary %s of %s is not implemented", k,
                  ty_op_name((ty_op)s->op), ty_dtype_name(dt));
    for (int j = 0; j < 2; j++)
      if (in_dt[j] != (int)dt)
        return fail(err, len, TY_EDTYPE, "sub-operation %d: %s computes in %s, input %d is %s", k,
                    ty_op_name((ty_op)s->op), ty_dtype_name(dt), j,
                    ty_dtype_name((ty_dtype)in_dt[j]));
    res = ty__op_out_dtype((ty_op)s->op, dt);
    break;
  case TY__G_WHERE:
    if (in_dt[1] != (int)dt || in_dt[2] != (int)dt)
      return fail(err, len, TY_EDTYPE, "sub-operation %d: where of %s with inputs %s and %s", k,
                  ty_dtype_name(dt), ty_dtype_name((ty_dtype)in_dt[1]),
                  ty_dtype_name((ty_dtype)in_dt[2]));
    break;
  case TY__G_CAST:
    if (in_dt[0] != (int)s->dt2)
      return fail(err, len, TY_EDTYPE, "sub-operation %d: cast from %s of a %s input", k,
                  ty_dtype_name((ty_dtype)s->dt2), ty_dtype_name((ty_dtype)in_dt[0]));
    break;
  case TY__G_FILL:
    if (s->in[0].kind != TY__GREF_CONST)
      return fail(err, len, TY_EINVAL, "sub-operation %d: fill needs a constant", k);
    break;
  }
  *out_dt = res;
  return TY_OK;
}

/* The reduction at the end (ty__gred): its kind, the dtypes of its value
 * and accumulator (reduce.cu's rules), an accumulator no sub-operation
 * uses. Marks the value's argument read. */
static ty_status check_red(const ty__gir *ir, const bool *tmp_set, const bool *arg_written, uint8_t *rw,
                           char *err, size_t len) {
  const ty__gred *r = &ir->red;
  if (r->kind >= TY__NREDKIND) return fail(err, len, TY_EINVAL, "reduction: unknown kind %d", r->kind);
  if (r->acc >= ir->nargs) return fail(err, len, TY_EINVAL, "reduction: accumulator %d out of range", r->acc);
  if (rw[r->acc] || (r->in.kind == TY__GREF_ARG && r->in.idx == r->acc))
    return fail(err, len, TY_EINVAL, "reduction: its accumulator (argument %d) is used by the chain", r->acc);
  int in = ref_dtype(ir, tmp_set, r->in);
  if (in < 0) return fail(err, len, TY_EINVAL, "reduction: its input refers to nothing written");
  ty_dtype acc = ir->args[r->acc].dtype;
  bool arith = r->kind == TY__RSUM || r->kind == TY__RPROD;
  ty_dtype want = !arith ? (ty_dtype)in : ty_dtype_is_float((ty_dtype)in) ? (ty_dtype)in : TY_I64;
  if (acc != want || r->acc_dt != acc || strcmp(ty__gk_ctype((ty_dtype)in), "?") == 0)
    return fail(err, len, TY_EDTYPE, "reduction of %s into %s has no generated kernel",
                ty_dtype_name((ty_dtype)in), ty_dtype_name(acc));
  if (r->in.kind == TY__GREF_ARG && !arg_written[r->in.idx]) rw[r->in.idx] |= 1;
  return TY_OK;
}

/* ---- planning ------------------------------------------------------------------------- */

typedef struct keybuf {
  uint8_t *p;
  size_t n, cap;
  bool over;
} keybuf;

static void kput(keybuf *k, unsigned v) {
  if (k->n >= k->cap) {
    k->over = true;
    return;
  }
  k->p[k->n++] = (uint8_t)v;
}
static void kref(keybuf *k, ty__gref r) {
  kput(k, r.kind);
  kput(k, r.idx & 0xff);
  kput(k, r.idx >> 8);
}

static uint64_t fnv1a(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

ty_status ty__gk_plan(const ty__gir *ir, ty__gplan *plan, char *err, size_t errlen) {
  memset(plan, 0, offsetof(ty__gplan, key));
  plan->keylen = 0;
  if (ir->ndim < 0 || ir->ndim > TY_MAX_RANK)
    return fail(err, errlen, TY_ELIMIT, "rank %d is out of range 0..%d", ir->ndim, TY_MAX_RANK);
  if (ir->nargs < 0 || ir->nargs > TY_MAX_ARGS || ir->nconsts < 0 ||
      ir->nconsts > TY__GK_MAX_CONSTS || ir->ntmps < 0 || ir->ntmps > TY__GK_MAX_TMPS ||
      ir->nsubs < (ir->red.on ? 0 : 1) || ir->nsubs > TY__GK_MAX_SUBS)
    return fail(err, errlen, TY_ELIMIT,
                "%d arguments, %d constants, %d temporaries, %d sub-operations (limits %d, %d, %d, 1..%d)",
                ir->nargs, ir->nconsts, ir->ntmps, ir->nsubs, TY_MAX_ARGS, TY__GK_MAX_CONSTS,
                TY__GK_MAX_TMPS, TY__GK_MAX_SUBS);
  for (int a = 0; a < ir->nargs; a++)
    if ((unsigned)ir->args[a].dtype >= TY_NDTYPES)
      return fail(err, errlen, TY_EDTYPE, "argument %d: bad dtype", a);
  for (int c = 0; c < ir->nconsts; c++)
    if ((unsigned)ir->consts[c].dtype >= TY_NDTYPES)
      return fail(err, errlen, TY_EDTYPE, "constant %d: bad dtype", c);
  for (int t = 0; t < ir->ntmps; t++)
    if ((unsigned)ir->tmps[t] >= TY_NDTYPES)
      return fail(err, errlen, TY_EDTYPE, "temporary %d: bad dtype", t);

  /* check every sub-operation in program order; note reads and writes */
  bool tmp_set[TY__GK_MAX_TMPS] = {false};
  bool arg_written[TY_MAX_ARGS] = {false};
  for (int k = 0; k < ir->nsubs; k++) {
    const ty__gsub *s = &ir->subs[k];
    ty_dtype res = TY_F64;
    ty_status st = check_sub(ir, tmp_set, k, &res, err, errlen);
    if (st) return st;
    for (int j = 0; j < s->nin; j++)
      if (s->in[j].kind == TY__GREF_ARG && !arg_written[s->in[j].idx]) plan->rw[s->in[j].idx] |= 1;
    if (s->out.kind == TY__GREF_ARG) {
      if (s->out.idx >= ir->nargs)
        return fail(err, errlen, TY_EINVAL, "sub-operation %d: output argument %d out of range", k, s->out.idx);
      if (ir->args[s->out.idx].dtype != res)
        return fail(err, errlen, TY_EDTYPE, "sub-operation %d: writes %s into argument %d of dtype %s", k,
                    ty_dtype_name(res), s->out.idx, ty_dtype_name(ir->args[s->out.idx].dtype));
      plan->rw[s->out.idx] |= 2;
      arg_written[s->out.idx] = true;
    } else if (s->out.kind == TY__GREF_TMP) {
      if (s->out.idx >= ir->ntmps)
        return fail(err, errlen, TY_EINVAL, "sub-operation %d: temporary %d out of range", k, s->out.idx);
      if (ir->tmps[s->out.idx] != res)
        return fail(err, errlen, TY_EDTYPE, "sub-operation %d: writes %s into temporary %d of dtype %s", k,
                    ty_dtype_name(res), s->out.idx, ty_dtype_name(ir->tmps[s->out.idx]));
      tmp_set[s->out.idx] = true;
    } else {
      return fail(err, errlen, TY_EINVAL, "sub-operation %d: cannot write a constant", k);
    }
  }
  if (ir->red.on) {
    ty_status st = check_red(ir, tmp_set, arg_written, plan->rw, err, errlen);
    if (st) return st;
  }

  /* collapse: drop extent-1 dims, merge neighbours contiguous for every used argument */
  int64_t n = 1;
  for (int d = 0; d < ir->ndim; d++) {
    if (ir->shape[d] < 0) return fail(err, errlen, TY_EINVAL, "shape[%d] is negative", d);
    if (ir->shape[d] && n > INT64_MAX / ir->shape[d])
      return fail(err, errlen, TY_ERANGE, "the domain has more than 2^63 elements");
    n *= ir->shape[d];
  }
  plan->n = n;
  int nd = 0;
  for (int d = 0; d < ir->ndim; d++) {
    if (ir->shape[d] == 1) continue;
    plan->shape[nd] = ir->shape[d];
    for (int a = 0; a < ir->nargs; a++) plan->strides[a][nd] = ir->args[a].strides[d];
    nd++;
  }
  for (int d = nd - 2; d >= 0 && n > 0; d--) {
    bool merge = true;
    for (int a = 0; a < ir->nargs && merge; a++)
      if (plan->rw[a]) merge = plan->strides[a][d] == plan->strides[a][d + 1] * plan->shape[d + 1];
    if (!merge) continue;
    plan->shape[d] *= plan->shape[d + 1];
    for (int a = 0; a < ir->nargs; a++) plan->strides[a][d] = plan->strides[a][d + 1];
    for (int e = d + 1; e < nd - 1; e++) {
      plan->shape[e] = plan->shape[e + 1];
      for (int a = 0; a < ir->nargs; a++) plan->strides[a][e] = plan->strides[a][e + 1];
    }
    nd--;
  }
  plan->ndim = nd;

  /* classify; offsets bound the index width */
  bool wide = n > (INT64_C(1) << 30);
  for (int a = 0; a < ir->nargs; a++) {
    if (!plan->rw[a]) {
      plan->access[a] = TY__GA_UNUSED;
      continue;
    }
    bool zero = true, contig = true;
    int64_t expect = 1, reach = 0;
    for (int d = nd - 1; d >= 0; d--) {
      int64_t s = plan->strides[a][d];
      zero &= s == 0;
      contig &= s == expect;
      expect *= plan->shape[d];
      int64_t as = s < 0 ? -s : s;
      if (as > (INT64_C(1) << 40) || plan->shape[d] > (INT64_C(1) << 40)) wide = true;
      else reach += as * (plan->shape[d] - 1);
      if (plan->shape[d] > 1 && s == 0 && (plan->rw[a] & 2))
        return fail(err, errlen, TY_EINVAL,
                    "argument %d is written but broadcast (stride 0) along a dim of extent %lld: "
                    "elements would be written by several threads",
                    a, (long long)plan->shape[d]);
    }
    if (reach >= (INT64_C(1) << 31)) wide = true;
    if (zero && !(plan->rw[a] & 2))
      plan->access[a] = TY__GA_SCALAR;
    else if (contig || nd == 0)
      plan->access[a] = TY__GA_CONTIG;
    else {
      plan->access[a] = TY__GA_STRIDED;
      plan->any_strided = true;
    }
  }
  plan->wide = wide;

  /* parameter words: n, [shape], per argument its address [and strides], constants */
  int w = 1 + (plan->any_strided ? nd : 0);
  for (int a = 0; a < ir->nargs; a++)
    if (plan->access[a]) w += 1 + (plan->access[a] == TY__GA_STRIDED ? nd : 0);
  w += ir->nconsts;
  if (ir->red.on) w += 5; /* acc, per, seq, partials, counter */
  plan->nwords = w;
  if ((size_t)w * 8 > MAX_PARAM_BYTES)
    return fail(err, errlen, TY_ELIMIT, "%d bytes of kernel parameters (limit %d): too many strided arguments",
                w * 8, MAX_PARAM_BYTES);

  /* the structural key */
  keybuf k = {plan->key, 0, sizeof plan->key, false};
  kput(&k, TY__GK_VERSION);
  kput(&k, (unsigned)ir->fastmath | (unsigned)plan->wide << 1);
  kput(&k, (unsigned)nd);
  kput(&k, (unsigned)ir->nargs);
  for (int a = 0; a < ir->nargs; a++) {
    kput(&k, ir->args[a].dtype);
    kput(&k, plan->access[a] | (unsigned)plan->rw[a] << 4);
  }
  kput(&k, (unsigned)ir->nconsts);
  for (int c = 0; c < ir->nconsts; c++) kput(&k, ir->consts[c].dtype);
  kput(&k, (unsigned)ir->ntmps & 0xff);
  kput(&k, (unsigned)ir->ntmps >> 8);
  for (int t = 0; t < ir->ntmps; t++) kput(&k, ir->tmps[t]);
  for (int s = 0; s < ir->nsubs; s++) {
    const ty__gsub *x = &ir->subs[s];
    kput(&k, x->kind);
    kput(&k, x->op);
    kput(&k, x->dt);
    kput(&k, x->dt2);
    kref(&k, x->out);
    for (int j = 0; j < x->nin; j++) kref(&k, x->in[j]);
  }
  kput(&k, ir->red.on);
  if (ir->red.on) {
    kput(&k, ir->red.kind | (unsigned)ir->red.accumulate << 4);
    kput(&k, ir->red.acc_dt);
    kput(&k, ir->red.acc & 0xff);
    kput(&k, ir->red.acc >> 8);
    kref(&k, ir->red.in);
  }
  if (k.over)
    return fail(err, errlen, TY_ELIMIT, "the chain is too long for one generated kernel (%d sub-operations)",
                ir->nsubs);
  plan->keylen = k.n;
  plan->hash = fnv1a(plan->key, k.n);
  snprintf(plan->name, sizeof plan->name, "ty_fused_%016llx", (unsigned long long)plan->hash);
  return TY_OK;
}

/* ---- parameters ------------------------------------------------------------------------- */

void ty__gk_params(const ty__gir *ir, const ty__gplan *plan, int64_t *words) {
  int w = 0;
  words[w++] = plan->n;
  if (plan->any_strided)
    for (int d = 0; d < plan->ndim; d++) words[w++] = plan->shape[d];
  for (int a = 0; a < ir->nargs; a++) {
    if (!plan->access[a]) continue;
    words[w++] = (int64_t)ir->args[a].ptr;
    if (plan->access[a] == TY__GA_STRIDED)
      for (int d = 0; d < plan->ndim; d++) words[w++] = plan->strides[a][d];
  }
  for (int c = 0; c < ir->nconsts; c++) {
    const ty__gconst *x = &ir->consts[c];
    if (x->dtype == TY_F32) {
      /* the f32 value's bits (the kernel reads them as they are: converting
       * an f64 word there was a cvt.f32.f64 per constant per element, which
       * runs at 1/8 of the f32 rate and made Black-Scholes f32 compute-bound) */
      float f = (float)x->f;
      uint32_t u;
      memcpy(&u, &f, 4);
      words[w++] = (int64_t)u;
    } else if (ty_dtype_is_float(x->dtype)) {
      double f = x->f;
      memcpy(&words[w++], &f, 8);
    } else {
      words[w++] = x->i;
    }
  }
  if (ir->red.on) {
    words[w++] = (int64_t)ir->args[ir->red.acc].ptr;
    for (int k = 0; k < 4; k++) words[w++] = 0; /* per, seq, partials, counter: the launcher's */
  }
}

unsigned ty__gk_grid(const ty__gplan *plan, int sms) {
  int64_t blocks = (plan->n + TY__GK_BLOCK - 1) / TY__GK_BLOCK;
  int64_t cap = (int64_t)(sms > 0 ? sms : 1) * 32;
  if (blocks > cap) blocks = cap;
  return blocks < 1 ? 1u : (unsigned)blocks;
}

/* ---- source ------------------------------------------------------------------------------ */

/* Growable text. */
typedef struct sbuf {
  char *p;
  size_t n, cap;
  bool oom;
} sbuf;

static void emit(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void emit(sbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    if (w < 0) {
      b->oom = true;
      return;
    }
    if ((size_t)w < b->cap - b->n) {
      b->n += (size_t)w;
      return;
    }
    size_t ncap = b->cap * 2 + (size_t)w;
    char *np = ty__realloc(b->p, ncap);
    if (!np) {
      b->oom = true;
      return;
    }
    b->p = np;
    b->cap = ncap;
  }
}

/* Helpers every kernel may use; the same formulas as kernels_ew.c and
 * kernels_cast.c. The block between #ifndef TY_DEV and #endif is what a
 * host compiler replaces (tests' emulation). */
static const char PRELUDE[] =
    "#ifndef TY_DEV\n"
    "#define TY_DEV static __device__ __forceinline__\n"
    "#define TY_GLOBAL extern \"C\" __global__ void __launch_bounds__(256)\n"
    "#define TY_AS_F64(w) __longlong_as_double(w)\n"
    "#define TY_AS_F32(w) __uint_as_float((unsigned)(w))\n"
    "#define TY_TID ((unsigned)blockIdx.x * (unsigned)blockDim.x + (unsigned)threadIdx.x)\n"
    "#define TY_NTHREADS ((unsigned)gridDim.x * (unsigned)blockDim.x)\n"
    "#endif\n"
    "TY_DEV double ty_mod_f64(double a, double b) {\n"
    "  double m = fmod(a, b);\n"
    "  if (b == 0) return m;\n"
    "  if (m != 0) { if ((b < 0) != (m < 0)) m += b; } else m = copysign(0.0, b);\n"
    "  return m;\n"
    "}\n"
    "TY_DEV float ty_mod_f32(float a, float b) {\n"
    "  float m = fmodf(a, b);\n"
    "  if (b == 0) return m;\n"
    "  if (m != 0) { if ((b < 0) != (m < 0)) m += b; } else m = copysignf(0.0f, b);\n"
    "  return m;\n"
    "}\n"
    "TY_DEV long long ty_mod_i64(long long a, long long b) {\n"
    "  if (b == 0 || b == -1) return 0;\n"
    "  long long m = a % b;\n"
    "  if (m != 0 && ((m < 0) != (b < 0))) m += b;\n"
    "  return m;\n"
    "}\n"
    "TY_DEV int ty_mod_i32(int a, int b) {\n"
    "  if (b == 0 || b == -1) return 0;\n"
    "  int m = a % b;\n"
    "  if (m != 0 && ((m < 0) != (b < 0))) m += b;\n"
    "  return m;\n"
    "}\n"
    "TY_DEV unsigned char ty_mod_u8(unsigned char a, unsigned char b) {\n"
    "  return (unsigned char)(b ? a % b : 0);\n"
    "}\n"
    "TY_DEV double ty_pow_f64(double x, double y) { return y == 2.0 ? x * x : pow(x, y); }\n"
    "TY_DEV float ty_pow_f32(float x, float y) { return y == 2.0f ? x * x : powf(x, y); }\n"
    /* numpy's floor_divide (kernels_ew.c) */
    "TY_DEV double ty_floordiv_f64(double a, double b) {\n"
    "  if (!b) return a / b;\n"
    "  double mod = fmod(a, b), div = (a - mod) / b;\n"
    "  if (mod) { if ((b < 0) != (mod < 0)) div -= 1; }\n"
    "  if (!div) return copysign(0.0, a / b);\n"
    "  double f = floor(div);\n"
    "  if (div - f > 0.5) f += 1;\n"
    "  return f;\n"
    "}\n"
    "TY_DEV float ty_floordiv_f32(float a, float b) {\n"
    "  if (!b) return a / b;\n"
    "  float mod = fmodf(a, b), div = (a - mod) / b;\n"
    "  if (mod) { if ((b < 0) != (mod < 0)) div -= 1; }\n"
    "  if (!div) return copysignf(0.0f, a / b);\n"
    "  float f = floorf(div);\n"
    "  if (div - f > 0.5f) f += 1;\n"
    "  return f;\n"
    "}\n"
    "TY_DEV long long ty_floordiv_i64(long long a, long long b) {\n"
    "  if (b == 0) return 0;\n"
    "  if (b == -1) return a == -9223372036854775807LL - 1 ? a : -a;\n"
    "  long long q = a / b;\n"
    "  if (((a > 0) != (b > 0)) && q * b != a) q -= 1;\n"
    "  return q;\n"
    "}\n"
    "TY_DEV int ty_floordiv_i32(int a, int b) {\n"
    "  if (b == 0) return 0;\n"
    "  if (b == -1) return a == -2147483647 - 1 ? a : -a;\n"
    "  int q = a / b;\n"
    "  if (((a > 0) != (b > 0)) && q * b != a) q -= 1;\n"
    "  return q;\n"
    "}\n"
    "TY_DEV unsigned char ty_floordiv_u8(unsigned char a, unsigned char b) {\n"
    "  return (unsigned char)(b ? a / b : 0);\n"
    "}\n"
    "TY_DEV long long ty_sat_i64(double v) {\n"
    "  if (v != v) return 0;\n"
    "  if (v >= 9223372036854775808.0) return 9223372036854775807LL;\n"
    "  if (v < -9223372036854775808.0) return -9223372036854775807LL - 1;\n"
    "  return (long long)v;\n"
    "}\n"
    "TY_DEV int ty_sat_i32(double v) {\n"
    "  if (v != v) return 0;\n"
    "  if (v >= 2147483648.0) return 2147483647;\n"
    "  if (v <= -2147483649.0) return -2147483647 - 1;\n"
    "  return (int)v;\n"
    "}\n"
    "TY_DEV unsigned char ty_sat_u8(double v) {\n"
    "  if (v != v) return 0;\n"
    "  if (v >= 256.0) return 255;\n"
    "  if (v <= -1.0) return 0;\n"
    "  return (unsigned char)v;\n"
    "}\n";

/* Expression of a unary op on x of compute dtype dt (check_sub accepted it). */
static void unary_expr(sbuf *b, ty_op op, ty_dtype dt, const char *x) {
  bool f64 = dt == TY_F64, f32 = dt == TY_F32;
  const char *sfx = f32 ? "f" : "";
  switch (op) {
  case TY_OP_NEG:
    if (f64 || f32) emit(b, "-%s", x);
    else if (dt == TY_I64) emit(b, "(long long)(0ULL - (unsigned long long)%s)", x);
    else if (dt == TY_I32) emit(b, "(int)(0U - (unsigned)%s)", x);
    else emit(b, "(unsigned char)(0 - %s)", x);
    break;
  case TY_OP_EXP: emit(b, "exp%s(%s)", sfx, x); break;
  case TY_OP_LOG: emit(b, "log%s(%s)", sfx, x); break;
  case TY_OP_SQRT: emit(b, "sqrt%s(%s)", sfx, x); break;
  case TY_OP_SIN: emit(b, "sin%s(%s)", sfx, x); break;
  case TY_OP_COS: emit(b, "cos%s(%s)", sfx, x); break;
  case TY_OP_TANH: emit(b, "tanh%s(%s)", sfx, x); break;
  case TY_OP_ABS:
    if (f64 || f32) emit(b, "fabs%s(%s)", sfx, x);
    else if (dt == TY_I64) emit(b, "(%s < 0 ? (long long)(0ULL - (unsigned long long)%s) : %s)", x, x, x);
    else if (dt == TY_I32) emit(b, "(%s < 0 ? (int)(0U - (unsigned)%s) : %s)", x, x, x);
    else emit(b, "%s", x);
    break;
  case TY_OP_FLOOR:
    if (f64 || f32) emit(b, "floor%s(%s)", sfx, x);
    else emit(b, "%s", x);
    break;
  case TY_OP_CEIL:
    if (f64 || f32) emit(b, "ceil%s(%s)", sfx, x);
    else emit(b, "%s", x);
    break;
  case TY_OP_NOT: emit(b, "(unsigned char)(%s == 0)", x); break;
  case TY_OP_TAN: emit(b, "tan%s(%s)", sfx, x); break;
  case TY_OP_ARCSIN: emit(b, "asin%s(%s)", sfx, x); break;
  case TY_OP_ARCCOS: emit(b, "acos%s(%s)", sfx, x); break;
  case TY_OP_ARCTAN: emit(b, "atan%s(%s)", sfx, x); break;
  case TY_OP_SINH: emit(b, "sinh%s(%s)", sfx, x); break;
  case TY_OP_COSH: emit(b, "cosh%s(%s)", sfx, x); break;
  case TY_OP_ARCSINH: emit(b, "asinh%s(%s)", sfx, x); break;
  case TY_OP_ARCCOSH: emit(b, "acosh%s(%s)", sfx, x); break;
  case TY_OP_ARCTANH: emit(b, "atanh%s(%s)", sfx, x); break;
  case TY_OP_EXPM1: emit(b, "expm1%s(%s)", sfx, x); break;
  case TY_OP_LOG1P: emit(b, "log1p%s(%s)", sfx, x); break;
  case TY_OP_LOG2: emit(b, "log2%s(%s)", sfx, x); break;
  case TY_OP_LOG10: emit(b, "log10%s(%s)", sfx, x); break;
  case TY_OP_EXP2: emit(b, "exp2%s(%s)", sfx, x); break;
  case TY_OP_CBRT: emit(b, "cbrt%s(%s)", sfx, x); break;
  case TY_OP_SIGN:
    if (f64 || f32)
      emit(b, "(%s > 0 ? 1.0%s : %s < 0 ? -1.0%s : %s == 0 ? 0.0%s : %s)", x, sfx, x, sfx, x, sfx, x);
    else if (dt == TY_I64) emit(b, "((long long)(%s > 0) - (long long)(%s < 0))", x, x);
    else if (dt == TY_I32) emit(b, "((int)(%s > 0) - (int)(%s < 0))", x, x);
    else emit(b, "(unsigned char)(%s > 0)", x);
    break;
  case TY_OP_RINT: /* to nearest, ties to even (CUDA's rint; C's in the default mode) */
    if (f64 || f32) emit(b, "rint%s(%s)", sfx, x);
    else emit(b, "%s", x);
    break;
  case TY_OP_TRUNC:
    if (f64 || f32) emit(b, "trunc%s(%s)", sfx, x);
    else emit(b, "%s", x);
    break;
  case TY_OP_RECIPROCAL:
    if (f64 || f32) emit(b, "1.0%s / %s", sfx, x);
    else if (dt == TY_U8) emit(b, "(unsigned char)(%s == 1)", x);
    else emit(b, "(%s)(%s == 1 ? 1 : %s == -1 ? -1 : 0)", ty__gk_ctype(dt), x, x);
    break;
  case TY_OP_INVERT:
    if (dt == TY_BOOL) emit(b, "(unsigned char)(%s == 0)", x);
    else emit(b, "(%s)~%s", ty__gk_ctype(dt), x);
    break;
  /* x - x: 0 when finite, NaN for inf and NaN (no INFINITY without headers) */
  case TY_OP_ISNAN: emit(b, (f64 || f32) ? "(unsigned char)(%s != %s)" : "(unsigned char)0", x, x); break;
  case TY_OP_ISINF:
    if (f64 || f32) emit(b, "(unsigned char)((%s == %s) & (%s - %s != %s - %s))", x, x, x, x, x, x);
    else emit(b, "(unsigned char)0");
    break;
  case TY_OP_ISFINITE:
    if (f64 || f32) emit(b, "(unsigned char)(%s - %s == 0)", x, x);
    else emit(b, "(unsigned char)1");
    break;
  default: emit(b, "0 /* ? */"); break;
  }
}

static void binary_expr(sbuf *b, ty_op op, ty_dtype dt, const char *x, const char *y) {
  bool fl = dt == TY_F64 || dt == TY_F32;
  const char *arith = op == TY_OP_ADD ? "+" : op == TY_OP_SUB ? "-" : "*";
  switch (op) {
  case TY_OP_ADD:
  case TY_OP_SUB:
  case TY_OP_MUL:
    if (fl) emit(b, "%s %s %s", x, arith, y);
    else if (dt == TY_I64)
      emit(b, "(long long)((unsigned long long)%s %s (unsigned long long)%s)", x, arith, y);
    else if (dt == TY_I32) emit(b, "(int)((unsigned)%s %s (unsigned)%s)", x, arith, y);
    else emit(b, "(unsigned char)((unsigned)%s %s (unsigned)%s)", x, arith, y);
    break;
  case TY_OP_DIV: emit(b, "%s / %s", x, y); break;
  case TY_OP_MOD: emit(b, "ty_mod_%s(%s, %s)", ty_dtype_name(dt == TY_BOOL ? TY_U8 : dt), x, y); break;
  case TY_OP_POW: emit(b, "ty_pow_%s(%s, %s)", ty_dtype_name(dt), x, y); break;
  case TY_OP_MAXIMUM:
    if (fl) emit(b, "((%s >= %s || %s != %s) ? %s : %s)", x, y, x, x, x, y);
    else emit(b, "(%s > %s ? %s : %s)", x, y, x, y);
    break;
  case TY_OP_MINIMUM:
    if (fl) emit(b, "((%s <= %s || %s != %s) ? %s : %s)", x, y, x, x, x, y);
    else emit(b, "(%s < %s ? %s : %s)", x, y, x, y);
    break;
  case TY_OP_LT: emit(b, "(unsigned char)(%s < %s)", x, y); break;
  case TY_OP_LE: emit(b, "(unsigned char)(%s <= %s)", x, y); break;
  case TY_OP_GT: emit(b, "(unsigned char)(%s > %s)", x, y); break;
  case TY_OP_GE: emit(b, "(unsigned char)(%s >= %s)", x, y); break;
  case TY_OP_EQ: emit(b, "(unsigned char)(%s == %s)", x, y); break;
  case TY_OP_NE: emit(b, "(unsigned char)(%s != %s)", x, y); break;
  case TY_OP_AND: emit(b, "(unsigned char)((%s != 0) & (%s != 0))", x, y); break;
  case TY_OP_OR: emit(b, "(unsigned char)((%s != 0) | (%s != 0))", x, y); break;
  case TY_OP_XOR: emit(b, "(unsigned char)((%s != 0) ^ (%s != 0))", x, y); break;
  case TY_OP_ARCTAN2: emit(b, "atan2%s(%s, %s)", dt == TY_F32 ? "f" : "", x, y); break;
  case TY_OP_HYPOT: emit(b, "hypot%s(%s, %s)", dt == TY_F32 ? "f" : "", x, y); break;
  case TY_OP_FLOORDIV: emit(b, "ty_floordiv_%s(%s, %s)", ty_dtype_name(dt), x, y); break;
  case TY_OP_BITAND:
  case TY_OP_BITOR:
  case TY_OP_BITXOR: {
    const char *o = op == TY_OP_BITAND ? "&" : op == TY_OP_BITOR ? "|" : "^";
    if (dt == TY_BOOL) emit(b, "(unsigned char)((%s != 0) %s (%s != 0))", x, o, y);
    else emit(b, "(%s)(%s %s %s)", ty__gk_ctype(dt), x, o, y);
    break;
  }
  /* numpy's npy_lshift/npy_rshift: counts outside [0, bits) shift every bit out */
  case TY_OP_LSHIFT:
    if (dt == TY_I64)
      emit(b, "((unsigned long long)%s < 64 ? (long long)((unsigned long long)%s << %s) : 0LL)", y, x, y);
    else if (dt == TY_I32) emit(b, "((unsigned)%s < 32u ? (int)((unsigned)%s << %s) : 0)", y, x, y);
    else emit(b, "(%s < 8 ? (unsigned char)(%s << %s) : (unsigned char)0)", y, x, y);
    break;
  case TY_OP_RSHIFT:
    if (dt == TY_I64)
      emit(b, "((unsigned long long)%s < 64 ? %s >> %s : %s < 0 ? -1LL : 0LL)", y, x, y, x);
    else if (dt == TY_I32) emit(b, "((unsigned)%s < 32u ? %s >> %s : %s < 0 ? -1 : 0)", y, x, y, x);
    else emit(b, "(%s < 8 ? (unsigned char)(%s >> %s) : (unsigned char)0)", y, x, y);
    break;
  default: emit(b, "0 /* ? */"); break;
  }
}

/* The rules of kernels_cast.c. */
static void cast_expr(sbuf *b, ty_dtype from, ty_dtype to, const char *x) {
  bool ffl = from == TY_F64 || from == TY_F32;
  if (from == to) {
    emit(b, "%s", x);
  } else if (to == TY_BOOL) {
    emit(b, "(unsigned char)(%s != 0)", x);
  } else if (from == TY_BOOL) {
    emit(b, "(%s)(%s != 0)", ty__gk_ctype(to), x);
  } else if (ffl && (to == TY_I64 || to == TY_I32 || to == TY_U8)) {
    emit(b, "ty_sat_%s((double)%s)", ty_dtype_name(to), x);
  } else if (from == TY_I64 && to == TY_I32) {
    emit(b, "(int)(unsigned)(unsigned long long)%s", x);
  } else {
    /* float <-> float, integer -> float, widening and u8 narrowing: C's conversion */
    emit(b, "(%s)%s", ty__gk_ctype(to), x);
  }
}

/* Name of a value as text: "x3", "v12", "c0", "s5". */
typedef struct vname {
  char s[16];
} vname;

/* ---- the reduction at the end (ty__gred) -------------------------------------------------- */

/* The accumulator's C type: reduce.cu's (double for float sums and
 * products, f32 too; unsigned 64-bit for integer ones; the value's own
 * type for min and max). */
static const char *red_atype(const ty__gred *r, ty_dtype in) {
  if (r->kind == TY__RMIN || r->kind == TY__RMAX) return ty__gk_ctype(in);
  return ty_dtype_is_float(in) ? "double" : "unsigned long long";
}

/* The identity of the reduction, as an expression of its accumulator type. */
static void red_identity(sbuf *b, const ty__gred *r, ty_dtype in) {
  const bool max = r->kind == TY__RMAX;
  switch (r->kind) {
  case TY__RSUM: emit(b, ty_dtype_is_float(in) ? "0.0" : "0ULL"); return;
  case TY__RPROD: emit(b, ty_dtype_is_float(in) ? "1.0" : "1ULL"); return;
  default: break;
  }
  switch (in) { /* min: the largest value, max: the smallest */
  case TY_F64: emit(b, "TY_AS_F64(%s)", max ? "(long long)0xFFF0000000000000ULL" : "0x7FF0000000000000LL"); return;
  case TY_F32: emit(b, "(float)TY_AS_F64(%s)", max ? "(long long)0xFFF0000000000000ULL" : "0x7FF0000000000000LL"); return;
  case TY_I64: emit(b, max ? "(-9223372036854775807LL - 1)" : "9223372036854775807LL"); return;
  case TY_I32: emit(b, max ? "(-2147483647 - 1)" : "2147483647"); return;
  case TY_BOOL: emit(b, max ? "(unsigned char)0" : "(unsigned char)1"); return;
  default: emit(b, max ? "(unsigned char)0" : "(unsigned char)255"); return;
  }
}

/* ty_rcomb(a, b) and ty_rlift(x): combining two partial results (NaN
 * sticks in min and max, as on the CPU) and one element's value. */
static void red_helpers(sbuf *b, const ty__gred *r, ty_dtype in) {
  const char *A = red_atype(r, in), *T = ty__gk_ctype(in);
  const bool fl = ty_dtype_is_float(in);
  emit(b, "TY_DEV %s ty_rlift(%s x) { return ", A, T);
  if (r->kind == TY__RMIN || r->kind == TY__RMAX) emit(b, "x; }\n");
  else emit(b, fl ? "(double)x; }\n" : "(unsigned long long)(long long)x; }\n");
  emit(b, "TY_DEV %s ty_rcomb(%s a, %s b) {\n", A, A, A);
  switch (r->kind) {
  case TY__RSUM: emit(b, "  return a + b;\n"); break;
  case TY__RPROD: emit(b, "  return a * b;\n"); break;
  default:
    if (fl) emit(b, "  if (a != a) return a;\n  if (b != b) return b;\n");
    emit(b, "  return b %s a ? b : a;\n", r->kind == TY__RMAX ? ">" : "<");
  }
  emit(b, "}\n");
}

/* After the loop: the block's tree; one block writes the result, several
 * their partials, and the last to finish combines them in block order (as
 * reduce.cu's finish pass does). */
static void red_finish(sbuf *b, const ty__gred *r, ty_dtype in, ty_dtype acc) {
  const char *A = red_atype(r, in), *O = ty__gk_ctype(acc);
  emit(b, "  __shared__ %s ty_sh[%d];\n  __shared__ unsigned ty_last;\n", A, TY__GK_BLOCK);
  emit(b, "  ty_sh[threadIdx.x] = ty_r;\n"
          "  __syncthreads();\n"
          "  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {\n"
          "    if (threadIdx.x < s) ty_sh[threadIdx.x] = ty_rcomb(ty_sh[threadIdx.x], ty_sh[threadIdx.x + s]);\n"
          "    __syncthreads();\n"
          "  }\n"
          "  if (gridDim.x > 1) {\n"
          "    if (threadIdx.x == 0) {\n"
          "      ty_part[blockIdx.x] = ty_sh[0];\n"
          "      __threadfence();\n"
          "      ty_last = atomicAdd(ty_count, 1u) == gridDim.x - 1;\n"
          "    }\n"
          "    __syncthreads();\n"
          "    if (!ty_last || threadIdx.x != 0) return;\n"
          "    __threadfence();\n"
          "    ty_r = ");
  red_identity(b, r, in);
  emit(b, ";\n    for (unsigned k = 0; k < gridDim.x; k++) ty_r = ty_rcomb(ty_r, ((volatile %s *)ty_part)[k]);\n"
          "    *ty_count = 0;\n"
          "  } else {\n"
          "    if (threadIdx.x != 0) return;\n"
          "    ty_r = ty_sh[0];\n"
          "  }\n", A);
  if (r->accumulate) emit(b, "  ty_acc[0] = (%s)ty_rcomb((%s)ty_acc[0], ty_r);\n", O, A);
  else emit(b, "  ty_acc[0] = (%s)ty_r;\n", O);
}

char *ty__gk_source(const ty__gir *ir, const ty__gplan *plan) {
  sbuf b = {ty__malloc(8192), 0, 8192, false};
  if (!b.p) return NULL;
  const int nd = plan->ndim;
  const char *IDX = plan->wide ? "long long" : "int";
  const char *UIDX = plan->wide ? "unsigned long long" : "unsigned";

  /* nothing here may depend on sizes: equal keys give equal texts (the
   * simulated GPUs cache compiled modules by their text) */
  emit(&b, "/* tycho fused kernel %s: %d sub-operations (rank %d%s) */\n", plan->name, ir->nsubs, nd,
       plan->wide ? ", 64-bit indices" : "");
  emit(&b, "%s", PRELUDE);
  const ty__gred *red = ir->red.on ? &ir->red : NULL;
  const ty_dtype red_in = !red                              ? TY_F64
                         : red->in.kind == TY__GREF_ARG   ? ir->args[red->in.idx].dtype
                         : red->in.kind == TY__GREF_CONST ? ir->consts[red->in.idx].dtype
                                                          : ir->tmps[red->in.idx];
  if (red) red_helpers(&b, red, red_in);
  emit(&b, "struct ty_params { long long w[%d]; };\n", plan->nwords);
  emit(&b, "TY_GLOBAL %s(const struct ty_params p) {\n", plan->name);

  /* unpack the parameters */
  int w = 0;
  emit(&b, "  const %s n = (%s)p.w[%d];\n", IDX, IDX, w++);
  if (plan->any_strided) /* the outermost extent is implied by n */
    for (int d = 0; d < nd; d++, w++)
      if (d > 0) emit(&b, "  const %s sh%d = (%s)p.w[%d];\n", UIDX, d, UIDX, w);
  for (int a = 0; a < ir->nargs; a++) {
    if (!plan->access[a]) continue;
    const char *ct = ty__gk_ctype(ir->args[a].dtype);
    emit(&b, "  %s%s *a%d = (%s%s *)p.w[%d];\n", plan->rw[a] & 2 ? "" : "const ", ct, a,
         plan->rw[a] & 2 ? "" : "const ", ct, w++);
    if (plan->access[a] == TY__GA_STRIDED)
      for (int d = 0; d < nd; d++) emit(&b, "  const %s st%d_%d = (%s)p.w[%d];\n", IDX, a, d, IDX, w++);
    if (plan->access[a] == TY__GA_SCALAR) emit(&b, "  const %s s%d = a%d[0];\n", ct, a, a);
  }
  for (int c = 0; c < ir->nconsts; c++) {
    ty_dtype t = ir->consts[c].dtype;
    if (t == TY_F32)
      emit(&b, "  const float c%d = TY_AS_F32(p.w[%d]);\n", c, w++);
    else if (ty_dtype_is_float(t))
      emit(&b, "  const %s c%d = (%s)TY_AS_F64(p.w[%d]);\n", ty__gk_ctype(t), c, ty__gk_ctype(t), w++);
    else
      emit(&b, "  const %s c%d = (%s)p.w[%d];\n", ty__gk_ctype(t), c, ty__gk_ctype(t), w++);
  }
  if (red) {
    const char *A = red_atype(red, red_in);
    emit(&b, "  %s *ty_acc = (%s *)p.w[%d];\n", ty__gk_ctype((ty_dtype)red->acc_dt),
         ty__gk_ctype((ty_dtype)red->acc_dt), w++);
    emit(&b, "  const %s ty_per = (%s)p.w[%d];\n", IDX, IDX, w++);
    emit(&b, "  const int ty_seq = (int)p.w[%d];\n", w++);
    emit(&b, "  %s *ty_part = (%s *)p.w[%d];\n", A, A, w++);
    emit(&b, "  unsigned *ty_count = (unsigned *)p.w[%d];\n", w++);
    emit(&b, "  %s ty_r = ", A); /* not r: the index decomposition uses it */
    red_identity(&b, red, red_in);
    emit(&b, ";\n");
  }

  /* the loop; with a reduction, reduce.cu's order: block b takes elements
   * [b per, (b+1) per), its threads stride through them (one thread walks
   * them all when ty_seq) */
  if (red) {
    emit(&b, "  const %s ty_lo = (%s)blockIdx.x * ty_per;\n"
             "  const %s ty_hi = ty_seq && threadIdx.x ? ty_lo : ty_lo + ty_per < n ? ty_lo + ty_per : n;\n"
             "  for (%s i = ty_lo + (ty_seq ? 0 : (%s)threadIdx.x); i < ty_hi; i += ty_seq ? 1 : (%s)blockDim.x) {\n",
         IDX, IDX, IDX, IDX, IDX, IDX);
  } else if (plan->wide)
    emit(&b, "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
             "       i += (long long)gridDim.x * blockDim.x) {\n");
  else
    emit(&b, "  for (int i = (int)TY_TID; i < n; i += (int)TY_NTHREADS) {\n");
  if (plan->any_strided) {
    emit(&b, "    %s r = (%s)i;\n", UIDX, UIDX);
    for (int d = nd - 1; d > 0; d--)
      emit(&b, "    const %s j%d = (%s)(r %% sh%d); r /= sh%d;\n", IDX, d, IDX, d, d);
    emit(&b, "    const %s j0 = (%s)r;\n", IDX, IDX);
    for (int a = 0; a < ir->nargs; a++) {
      if (plan->access[a] != TY__GA_STRIDED) continue;
      emit(&b, "    const %s o%d = ", IDX, a);
      for (int d = 0; d < nd; d++) emit(&b, "%sj%d * st%d_%d", d ? " + " : "", d, a, d);
      emit(&b, ";\n");
    }
  }

  /* current value of each argument and temporary */
  vname cur_arg[TY_MAX_ARGS], cur_tmp[TY__GK_MAX_TMPS];
  bool has_arg[TY_MAX_ARGS] = {false};
  for (int a = 0; a < ir->nargs; a++)
    if (plan->access[a] == TY__GA_SCALAR) {
      snprintf(cur_arg[a].s, sizeof cur_arg[a].s, "s%d", a);
      has_arg[a] = true;
    }
  for (int k = 0; k < ir->nsubs; k++) {
    const ty__gsub *s = &ir->subs[k];
    vname in[3];
    for (int j = 0; j < s->nin; j++) {
      ty__gref r = s->in[j];
      if (r.kind == TY__GREF_CONST) {
        snprintf(in[j].s, sizeof in[j].s, "c%d", r.idx);
      } else if (r.kind == TY__GREF_TMP) {
        in[j] = cur_tmp[r.idx];
      } else {
        if (!has_arg[r.idx]) { /* first read: load it */
          int a = r.idx;
          snprintf(cur_arg[a].s, sizeof cur_arg[a].s, "x%d", a);
          char offs[16];
          if (plan->access[a] == TY__GA_STRIDED) snprintf(offs, sizeof offs, "o%d", a);
          else snprintf(offs, sizeof offs, "%s", nd == 0 ? "0" : "i");
          emit(&b, "    const %s x%d = a%d[%s];\n", ty__gk_ctype(ir->args[a].dtype), a, a, offs);
          has_arg[a] = true;
        }
        in[j] = cur_arg[r.idx];
      }
    }
    ty_dtype dt = (ty_dtype)s->dt;
    ty_dtype res = s->kind == TY__G_UNARY || s->kind == TY__G_BINARY ? ty__op_out_dtype((ty_op)s->op, dt) : dt;
    emit(&b, "    const %s v%d = ", ty__gk_ctype(res), k);
    switch (s->kind) {
    case TY__G_UNARY: unary_expr(&b, (ty_op)s->op, dt, in[0].s); break;
    case TY__G_BINARY: binary_expr(&b, (ty_op)s->op, dt, in[0].s, in[1].s); break;
    case TY__G_WHERE: emit(&b, "%s ? %s : %s", in[0].s, in[1].s, in[2].s); break;
    case TY__G_CAST: cast_expr(&b, (ty_dtype)s->dt2, dt, in[0].s); break;
    case TY__G_FILL: cast_expr(&b, ir->consts[s->in[0].idx].dtype, dt, in[0].s); break;
    }
    emit(&b, ";\n");
    vname v;
    snprintf(v.s, sizeof v.s, "v%d", k);
    if (s->out.kind == TY__GREF_TMP) {
      cur_tmp[s->out.idx] = v;
    } else {
      cur_arg[s->out.idx] = v;
      has_arg[s->out.idx] = true;
    }
  }
  if (red) { /* this element's value into the thread's partial result */
    ty__gref r = red->in;
    char val[24];
    if (r.kind == TY__GREF_CONST) snprintf(val, sizeof val, "c%d", r.idx);
    else if (r.kind == TY__GREF_TMP) snprintf(val, sizeof val, "%s", cur_tmp[r.idx].s);
    else if (has_arg[r.idx]) snprintf(val, sizeof val, "%s", cur_arg[r.idx].s);
    else { /* an argument no sub-operation read: load it */
      char offs[16];
      if (plan->access[r.idx] == TY__GA_STRIDED) snprintf(offs, sizeof offs, "o%d", r.idx);
      else snprintf(offs, sizeof offs, "%s", nd == 0 ? "0" : "i");
      snprintf(val, sizeof val, "x%d", r.idx);
      emit(&b, "    const %s x%d = a%d[%s];\n", ty__gk_ctype(ir->args[r.idx].dtype), r.idx, r.idx, offs);
    }
    emit(&b, "    ty_r = ty_rcomb(ty_r, ty_rlift(%s));\n", val);
  }
  /* store what was written, once */
  for (int a = 0; a < ir->nargs; a++) {
    if (!(plan->rw[a] & 2)) continue;
    char offs[16];
    if (plan->access[a] == TY__GA_STRIDED) snprintf(offs, sizeof offs, "o%d", a);
    else snprintf(offs, sizeof offs, "%s", nd == 0 ? "0" : "i");
    emit(&b, "    a%d[%s] = %s;\n", a, offs, cur_arg[a].s);
  }
  emit(&b, "  }\n");
  if (red) red_finish(&b, red, red_in, (ty_dtype)red->acc_dt);
  emit(&b, "}\n");
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

typedef struct gen_ud {
  const ty__gir *ir;
  const ty__gplan *plan;
} gen_ud;

static char *gen_source(const void *ud) {
  const gen_ud *g = ud;
  return ty__gk_source(g->ir, g->plan);
}

ty_status ty__gk_kernel(struct ty__ptx_cache *cache, const ty__gir *ir, const ty__gplan *plan,
                        int arch, struct ty__ptx_entry **out, char *err, size_t errlen) {
  gen_ud g = {ir, plan};
  return ty__ptx_cache_get(cache, plan->key, plan->keylen, plan->hash, plan->name, arch,
                           ir->fastmath, gen_source, &g, out, err, errlen);
}

/* ---- from a fused launch ---------------------------------------------------------------- */

#if TY__FUSE_VERSION == 1
/* The last sub-operation s of a fused run, a reduction, as ir->red: only a
 * full one (its accumulator one element, stride 0 along every dim of the
 * piece) of a value the chain computed or an argument. */
static ty_status red_from_fused(const ty__fhead *h, const ty__fsub *s, int ndim, const int64_t *shape,
                                const ty_tile *tiles, const int *slot_tmp, ty__gir *ir, char *err,
                                size_t errlen) {
  (void)h;
  if (s->nops != 2) return fail(err, errlen, TY_EINVAL, "a reduction with %d operands", s->nops);
  const ty__fopnd *acc = &s->opnd[0], *in = &s->opnd[1];
  if (TY__FOPND_PROJ(acc) == TY_PROJ_WHOLE || TY__FOPND_PROJ(in) == TY_PROJ_WHOLE ||
      TY__FREF_IS_SLOT(acc->ref) || TY__FREF_IS_CONST(acc->ref) || acc->ref >= ir->nargs)
    return fail(err, errlen, TY_EDTYPE, "a reduction into a temporary or a whole store: not generated");
  for (int d = 0; d < ndim; d++)
    if (shape[d] > 1 && tiles[acc->ref].strides[d] != 0)
      return fail(err, errlen, TY_EDTYPE, "a reduction along some axes only: not generated");
  ty__gred *r = &ir->red;
  if (TY__FREF_IS_SLOT(in->ref)) {
    const int slot = -1 - in->ref;
    if (slot >= TY__GK_MAX_TMPS || slot_tmp[slot] < 0)
      return fail(err, errlen, TY_EINVAL, "the reduction reads temporary %d before it is written", slot);
    r->in = (ty__gref){TY__GREF_TMP, (uint16_t)slot_tmp[slot]};
  } else if (TY__FREF_IS_CONST(in->ref)) {
    return fail(err, errlen, TY_EDTYPE, "a reduction of a constant: not generated");
  } else {
    r->in = (ty__gref){TY__GREF_ARG, (uint16_t)in->ref};
  }
  r->on = true;
  r->kind = s->op;
  r->acc_dt = s->dt;
  r->acc = (uint16_t)acc->ref;
  r->accumulate = TY__FOPND_PRIV(acc) == TY_PRIV_REDUCE && !(s->flags & TY__FS_INIT_OUT);
  return TY_OK;
}
#endif

ty_status ty__gk_from_fused(const void *scalars, size_t scalar_bytes, int ndim,
                            const int64_t *shape, int nargs, const ty_tile *tiles,
                            const uint64_t *devptr, ty__gir *ir, char *err, size_t errlen) {
#if TY__FUSE_VERSION == 1
  const ty__fhead *h = scalars;
  if (!h || scalar_bytes < sizeof *h || h->magic != TY__FUSE_MAGIC || h->bytes > scalar_bytes)
    return fail(err, errlen, TY_EINVAL, "not a fused launch description");
  if (h->nargs != nargs || ndim < 0 || ndim > TY_MAX_RANK)
    return fail(err, errlen, TY_EINVAL, "the description has %d arguments, the launch %d", h->nargs, nargs);
  memset(ir, 0, offsetof(ty__gir, subs));
  ir->ndim = ndim;
  for (int d = 0; d < ndim; d++) ir->shape[d] = shape[d];
  ir->nargs = nargs;
  for (int a = 0; a < nargs; a++) {
    ir->args[a].dtype = tiles[a].dtype;
    ir->args[a].ptr = devptr ? devptr[a] : 0;
    if (tiles[a].ndim != ndim)
      return fail(err, errlen, TY_EDTYPE, "argument %d is not aligned with the domain", a);
    for (int d = 0; d < ndim; d++) ir->args[a].strides[d] = tiles[a].strides[d];
  }
  if (h->nslots > TY__GK_MAX_TMPS || h->nconsts > TY__GK_MAX_CONSTS || h->nsub > TY__GK_MAX_SUBS)
    return fail(err, errlen, TY_ELIMIT, "the fused run is too large for one generated kernel");
  /* block slots are reused by the CPU interpreter for values of different
   * dtypes; every write of a slot becomes a new temporary of its own dtype */
  int slot_tmp[TY__GK_MAX_TMPS];
  for (int i = 0; i < TY__GK_MAX_TMPS; i++) slot_tmp[i] = -1;
  ir->ntmps = 0;
  ir->nconsts = h->nconsts;
  bool const_seen[TY__GK_MAX_CONSTS] = {false};
  const ty__fsub *s = ty__fsub_first(h);
  int nsub = h->nsub;
  for (int k = 0; k < h->nsub; k++, s = ty__fsub_next(s)) {
    if (s->kind == TY__FK_REDUCE && k == h->nsub - 1 && k > 0) {
      ty_status st = red_from_fused(h, s, ndim, shape, tiles, slot_tmp, ir, err, errlen);
      if (st) return st;
      nsub = k;
      break;
    }
    ty__gsub *g = &ir->subs[k];
    memset(g, 0, sizeof *g);
    g->op = s->op;
    g->dt = s->dt;
    g->dt2 = s->dt2;
    switch (s->kind) {
    case TY__FK_UNARY: g->kind = TY__G_UNARY; break;
    case TY__FK_BINARY: g->kind = TY__G_BINARY; break;
    case TY__FK_WHERE: g->kind = TY__G_WHERE; break;
    case TY__FK_CAST: g->kind = TY__G_CAST; break;
    case TY__FK_FILL: g->kind = TY__G_FILL; break;
    default:
      return fail(err, errlen, TY_EDTYPE, "sub-operation %d is a %s: not generated", k,
                  s->kind == TY__FK_REDUCE ? "reduction" : "registered task");
    }
    if (s->nops < 1 || s->nops > 4)
      return fail(err, errlen, TY_EINVAL, "sub-operation %d has %d operands", k, s->nops);
    ty__gref refs[4];
    for (int n = 1; n <= s->nops; n++) {
      const int j = n % s->nops; /* inputs first, the output (operand 0) last */
      const ty__fopnd *o = &s->opnd[j];
      if (TY__FOPND_PROJ(o) == TY_PROJ_WHOLE)
        return fail(err, errlen, TY_EDTYPE, "sub-operation %d reads a whole store: not generated", k);
      if (TY__FREF_IS_SLOT(o->ref)) {
        int slot = -1 - o->ref;
        if (slot >= TY__GK_MAX_TMPS)
          return fail(err, errlen, TY_ELIMIT, "the fused run is too large for one generated kernel");
        if (j == 0) {
          if (ir->ntmps >= TY__GK_MAX_TMPS)
            return fail(err, errlen, TY_ELIMIT, "the fused run is too large for one generated kernel");
          slot_tmp[slot] = ir->ntmps;
          ir->tmps[ir->ntmps++] = (ty_dtype)o->dtype;
        } else if (slot_tmp[slot] < 0) {
          return fail(err, errlen, TY_EINVAL, "sub-operation %d reads temporary %d before it is written",
                      k, slot);
        }
        refs[j] = (ty__gref){TY__GREF_TMP, (uint16_t)slot_tmp[slot]};
      } else if (TY__FREF_IS_CONST(o->ref)) {
        int c = o->ref - TY__FREF_CONST;
        if (c >= ir->nconsts) return fail(err, errlen, TY_EINVAL, "constant %d out of range", c);
        refs[j] = (ty__gref){TY__GREF_CONST, (uint16_t)c};
        if (!const_seen[c]) {
          const char *p = (const char *)h + h->consts + 8 * (size_t)c;
          ty_dtype t = (ty_dtype)o->dtype;
          ir->consts[c].dtype = t;
          if (ty_dtype_is_float(t)) ir->consts[c].f = ty__load_f64(p, t);
          else ir->consts[c].i = ty__load_i64(p, t);
          const_seen[c] = true;
        }
      } else {
        refs[j] = (ty__gref){TY__GREF_ARG, (uint16_t)o->ref};
      }
    }
    if (g->kind == TY__G_FILL) {
      /* the CPU fill takes its value from the sub-operation's scalars */
      if (s->scalar_len < sizeof(ty__fillval) || ir->nconsts >= TY__GK_MAX_CONSTS)
        return fail(err, errlen, TY_EINVAL, "sub-operation %d: fill without a value", k);
      ty__fillval fv;
      memcpy(&fv, (const char *)h + s->scalar_off, sizeof fv);
      int c = ir->nconsts++;
      ir->consts[c].dtype = (ty_dtype)s->dt;
      ir->consts[c].f = fv.f;
      ir->consts[c].i = fv.i;
      const_seen[c] = true;
      refs[1] = (ty__gref){TY__GREF_CONST, (uint16_t)c};
      g->out = refs[0];
      g->in[0] = refs[1];
      g->nin = 1;
      continue;
    }
    g->out = refs[0];
    g->nin = (uint8_t)(s->nops - 1);
    for (int j = 1; j < s->nops; j++) g->in[j - 1] = refs[j];
  }
  ir->nsubs = nsub;
  /* fastmath permits, it does not require: the kernel contracts and
   * approximates only when every launch of the run allowed it (fusion does
   * not compare the flag, and one exact launch must stay exact) */
  ir->fastmath = h->nsub > 0;
  s = ty__fsub_first(h);
  for (int k = 0; k < h->nsub; k++, s = ty__fsub_next(s))
    if (!(s->flags & TY__FS_FASTMATH)) ir->fastmath = false;
  return TY_OK;
#else
  (void)scalars, (void)scalar_bytes, (void)ndim, (void)shape, (void)nargs, (void)tiles,
      (void)devptr, (void)ir;
  return fail(err, errlen, TY_EDTYPE, "fused description version %d is not known to gpu_codegen.c",
              TY__FUSE_VERSION);
#endif
}
