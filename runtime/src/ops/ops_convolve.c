/*
 * ops_convolve.c — convolve and correlate (tycho/products.h): the
 * "convolve" task and the operations that launch it.
 *
 * Both are one correlation launch: out[o] = sum_j x[o - left + j] w[j] over
 * the kernel's multi-indices j (terms whose x index falls outside x are
 * skipped). A convolution is the correlation with w = v flipped in every dim
 * (a view: negative strides, no copy). The launch domain is the output:
 * out ALIGNED, x and w read WHOLE, so a piece computes its box of outputs
 * reading the halo of x it needs, and any dim may be split.
 *
 * Same bits under any partition: every output element adds its terms in one
 * order, the kernel's multi-indices in C order, whatever its piece. The
 * kernel walks the piece's output rows (all dims but the last) in chunks of
 * ROW_CHUNK outputs; for each kernel index it adds one term to every output
 * of the chunk (an axpy along the row, vectorised when x's last stride is
 * 1), so each element's terms still come in that order.
 *
 * Modes and the numpy/scipy rules (tycho/products.h): `left` per dim is
 * w's extent - 1 (full), w's extent / 2 (same), 0 (valid). 1-D operands are
 * swapped when v is longer (numpy), and a swapped correlation is reversed (a
 * flipped view of the output); N-D operands are swapped only in valid mode,
 * when v is the larger in every dim (scipy).
 */
#include "internal.h"

#include "tycho/products.h"
#include "tycho/shape.h"

#include <stdlib.h>
#include <string.h>

#define CONVOLVE_TASK "convolve"
#define ROW_CHUNK 2048 /* outputs per accumulator chunk: 16 KiB of f64, in L1 */

typedef struct conv_args {
  int64_t left[TY_MAX_RANK];
} conv_args;

/* One output row chunk [i0, i0 + len) at output multi-index o (its leading
 * dims; o[nd - 1] is the global index of the row's first element), all
 * kernel indices in C order. acc holds len accumulators. */
#define CONV_ROW(NAME, T, TW)                                                                \
  static void NAME(const ty_tile *O, const ty_tile *X, const ty_tile *W, const int64_t *left, \
                   const int64_t *o, int64_t len, TW *acc, char *dst, int64_t ds) {           \
    const int nd = O->ndim, last = nd - 1;                                                   \
    const T *x = (const T *)X->data, *w = (const T *)W->data;                                \
    const int64_t xs = X->strides[last], ws = W->strides[last], xn = X->shape[last];         \
    const int64_t wn = W->shape[last];                                                       \
    for (int64_t i = 0; i < len; i++) acc[i] = 0;                                            \
    int64_t j[TY_MAX_RANK] = {0};                                                            \
    for (;;) {                                                                               \
      /* the leading dims of this kernel index: x's row, or skip it */                       \
      int64_t xoff = 0, woff = 0;                                                            \
      bool inside = true;                                                                    \
      for (int d = 0; d < last; d++) {                                                       \
        const int64_t xi = o[d] - left[d] + j[d];                                            \
        if (xi < 0 || xi >= X->shape[d]) inside = false;                                     \
        xoff += xi * X->strides[d];                                                          \
        woff += j[d] * W->strides[d];                                                        \
      }                                                                                      \
      if (inside) {                                                                          \
        for (int64_t jl = 0; jl < wn; jl++) {                                                \
          const TW wv = (TW)w[woff + jl * ws];                                               \
          const int64_t base = o[last] - left[last] + jl; /* x index of acc[0] */            \
          int64_t lo = -base, hi = xn - base;                                                \
          if (lo < 0) lo = 0;                                                                \
          if (hi > len) hi = len;                                                            \
          const T *xr = x + xoff + base * xs;                                                \
          if (xs == 1)                                                                       \
            for (int64_t i = lo; i < hi; i++) acc[i] = (TW)(acc[i] + (TW)xr[i] * wv);        \
          else                                                                               \
            for (int64_t i = lo; i < hi; i++) acc[i] = (TW)(acc[i] + (TW)xr[i * xs] * wv);   \
        }                                                                                    \
      }                                                                                      \
      int d = last - 1;                                                                      \
      for (; d >= 0; d--) {                                                                  \
        if (++j[d] < W->shape[d]) break;                                                     \
        j[d] = 0;                                                                            \
      }                                                                                      \
      if (d < 0) break;                                                                      \
    }                                                                                        \
    for (int64_t i = 0; i < len; i++) ((T *)dst)[i * ds] = (T)acc[i];                        \
  }
CONV_ROW(row_f64, double, double)
CONV_ROW(row_f32, float, float)
CONV_ROW(row_i64, int64_t, uint64_t)
CONV_ROW(row_i32, int32_t, uint32_t)
CONV_ROW(row_u8, uint8_t, uint8_t)
/* 16-bit products go through uint32_t: two uint16_t would multiply as int */
CONV_ROW(row_i8, int8_t, uint8_t)
CONV_ROW(row_i16, int16_t, uint32_t)
CONV_ROW(row_u16, uint16_t, uint32_t)
CONV_ROW(row_u32, uint32_t, uint32_t)
CONV_ROW(row_u64, uint64_t, uint64_t)

static int convolve_variant(ty_task_ctx *ctx) {
  const conv_args *ca = ctx->scalars;
  const ty_tile *O = &ctx->args[0], *X = &ctx->args[1], *W = &ctx->args[2];
  const int nd = O->ndim, last = nd - 1;
  if (ctx->nargs != 3 || nd < 1 || X->ndim != nd || W->ndim != nd || X->dtype != O->dtype ||
      W->dtype != O->dtype || ctx->scalar_bytes != sizeof *ca)
    return ty_ctx_fail(ctx, "convolve: bad arguments");
  for (int d = 0; d < nd; d++)
    if (O->shape[d] == 0) return 0;
  const ty_dtype t = O->dtype;
  const int64_t es = (int64_t)ty_dtype_size(t);
  uint64_t *acc = ty__malloc(ROW_CHUNK * sizeof(uint64_t)); /* 8 bytes: any dtype's TW */
  if (!acc) return ty_ctx_fail(ctx, "convolve: out of memory for a row of accumulators");
  int64_t r[TY_MAX_RANK] = {0}; /* index within the piece's box */
  for (;;) {
    int64_t o[TY_MAX_RANK], doff = 0;
    for (int d = 0; d < last; d++) {
      o[d] = O->lo[d] + r[d];
      doff += r[d] * O->strides[d];
    }
    for (int64_t i0 = 0; i0 < O->shape[last]; i0 += ROW_CHUNK) {
      const int64_t len = O->shape[last] - i0 < ROW_CHUNK ? O->shape[last] - i0 : ROW_CHUNK;
      o[last] = O->lo[last] + i0;
      char *dst = O->data + (doff + i0 * O->strides[last]) * es;
      const int64_t ds = O->strides[last];
      switch (t) {
      case TY_F64: row_f64(O, X, W, ca->left, o, len, (double *)acc, dst, ds); break;
      case TY_F32: row_f32(O, X, W, ca->left, o, len, (float *)acc, dst, ds); break;
      case TY_I64: row_i64(O, X, W, ca->left, o, len, (uint64_t *)acc, dst, ds); break;
      case TY_I32: row_i32(O, X, W, ca->left, o, len, (uint32_t *)acc, dst, ds); break;
      case TY_U8: row_u8(O, X, W, ca->left, o, len, (uint8_t *)acc, dst, ds); break;
      case TY_I8: row_i8(O, X, W, ca->left, o, len, (uint8_t *)acc, dst, ds); break;
      case TY_I16: row_i16(O, X, W, ca->left, o, len, (uint32_t *)acc, dst, ds); break;
      case TY_U16: row_u16(O, X, W, ca->left, o, len, (uint32_t *)acc, dst, ds); break;
      case TY_U32: row_u32(O, X, W, ca->left, o, len, (uint32_t *)acc, dst, ds); break;
      case TY_U64: row_u64(O, X, W, ca->left, o, len, (uint64_t *)acc, dst, ds); break;
      default:
        free(acc);
        return ty_ctx_fail(ctx, "convolve: no kernel for dtype %s", ty_dtype_name(t));
      }
    }
    int d = last - 1;
    for (; d >= 0; d--) {
      if (++r[d] < O->shape[d]) break;
      r[d] = 0;
    }
    if (d < 0) break;
  }
  free(acc);
  return 0;
}

ty_status ty__register_convolve_ops(ty_runtime *rt) {
  /* no signature: conv_args is not a binding's scalar list */
  ty_task_desc d = {.name = CONVOLVE_TASK, .cpu = convolve_variant};
  return ty_task_register(rt, &d, NULL);
}

ty_status ty_conv_mode_parse(const char *s, ty_conv_mode *out) {
  if (!s || !out) return TY_EINVAL;
  if (!strcmp(s, "full")) *out = TY_CONV_FULL;
  else if (!strcmp(s, "same")) *out = TY_CONV_SAME;
  else if (!strcmp(s, "valid")) *out = TY_CONV_VALID;
  else return TY_EINVAL;
  return TY_OK;
}

/* Whether every extent of a is >= v's. */
static bool covers(const ty_store *a, const ty_store *v) {
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] < v->shape[d]) return false;
  return true;
}

/* x flipped in every dim (a view). */
static ty_status flip_all(ty_runtime *rt, ty_store *x, ty_store **out) {
  ty_store_retain(x);
  for (int d = 0; d < x->ndim; d++) {
    ty_store *f = NULL;
    ty_status st = ty_store_flip(rt, x, d, &f);
    ty_store_release(x);
    if (st) return st;
    x = f;
  }
  *out = x;
  return TY_OK;
}

static ty_status conv(ty_runtime *rt, const char *fn, ty_store *a, ty_store *v, ty_conv_mode mode,
                      bool correlate, ty_store **out) {
  if (!rt) return TY_EINVAL;
  if (rt->destroyed) return ty__fail(rt, TY_EINVAL, "%s: the runtime was destroyed", fn);
  if (!out) return ty__fail(rt, TY_EINVAL, "%s: out is NULL", fn);
  *out = NULL;
  if (!a || !v) return ty__fail(rt, TY_EINVAL, "%s: %s is NULL", fn, a ? "v" : "a");
  if (a->rt != rt || v->rt != rt)
    return ty__fail(rt, TY_EINVAL, "%s: %s belongs to another runtime", fn, a->rt != rt ? "a" : "v");
  if ((unsigned)mode > TY_CONV_VALID)
    return ty__fail(rt, TY_EINVAL, "%s: unknown mode %d", fn, (int)mode);
  char sa[256], sv[256];
  ty__shape_str(a->ndim, a->shape, sa, sizeof sa);
  ty__shape_str(v->ndim, v->shape, sv, sizeof sv);
  if (a->ndim < 1 || a->ndim != v->ndim)
    return ty__fail(rt, TY_ESHAPE, "%s: a and v must have the same number of dims (>= 1), got %s and %s",
                    fn, sa, sv);
  if (a->size == 0 || v->size == 0)
    return ty__fail(rt, TY_ESHAPE, "%s: %s cannot be empty (shape %s)", fn, a->size ? "v" : "a",
                    a->size ? sv : sa);
  const int nd = a->ndim;
  bool swap = false;
  if (nd == 1) {
    swap = v->shape[0] > a->shape[0];
  } else if (mode == TY_CONV_VALID) {
    if (!covers(a, v) && !covers(v, a))
      return ty__fail(rt, TY_ESHAPE,
                      "%s: in valid mode one operand must be at least as large as the other in "
                      "every dim, got %s and %s", fn, sa, sv);
    swap = !covers(a, v);
  }
  ty_store *x = swap ? v : a, *k = swap ? a : v;
  const bool reverse = swap && correlate;
  ty_dtype t = ty_dtype_promote(a->dtype, v->dtype);
  const bool logical = t == TY_BOOL; /* counted in i64, then != 0 */
  if (logical) t = TY_I64;
  conv_args ca;
  memset(&ca, 0, sizeof ca);
  int64_t oshape[TY_MAX_RANK];
  for (int d = 0; d < nd; d++) {
    const int64_t nx = x->shape[d], nw = k->shape[d];
    switch (mode) {
    case TY_CONV_FULL: oshape[d] = nx + nw - 1, ca.left[d] = nw - 1; break;
    case TY_CONV_SAME: oshape[d] = nx, ca.left[d] = nw / 2; break;
    case TY_CONV_VALID: oshape[d] = nx - nw + 1, ca.left[d] = 0; break;
    }
  }
  ty_store *res = NULL, *cx = NULL, *ck = NULL, *w = NULL, *ov = NULL;
  ty_status st = ty__store_new(rt, t, nd, oshape, &res);
  if (!st) st = x->dtype == t ? (ty_store_retain(x), cx = x, TY_OK) : ty_cast(rt, x, t, &cx);
  if (!st) st = k->dtype == t ? (ty_store_retain(k), ck = k, TY_OK) : ty_cast(rt, k, t, &ck);
  if (!st) {
    if (correlate) {
      ty_store_retain(ck);
      w = ck;
    } else {
      st = flip_all(rt, ck, &w);
    }
  }
  if (!st) {
    if (reverse) {
      st = flip_all(rt, res, &ov);
    } else {
      ty_store_retain(res);
      ov = res;
    }
  }
  if (!st) {
    ty_arg args[3] = {
        {.store = ov, .priv = TY_PRIV_OUT, .proj = TY_PROJ_ALIGNED},
        {.store = cx, .priv = TY_PRIV_IN, .proj = TY_PROJ_WHOLE},
        {.store = w, .priv = TY_PRIV_IN, .proj = TY_PROJ_WHOLE},
    };
    st = ty__launch_named(rt, fn, CONVOLVE_TASK, nd, oshape, 3, args, &ca, sizeof ca, 0);
  }
  ty_store_release(ov);
  ty_store_release(w);
  ty_store_release(cx);
  ty_store_release(ck);
  return ty__logical_result(rt, st, logical, res, out);
}

ty_status ty_convolve(ty_runtime *rt, ty_store *a, ty_store *v, ty_conv_mode mode,
                      ty_store **out) {
  return conv(rt, "ty_convolve", a, v, mode, false, out);
}

ty_status ty_correlate(ty_runtime *rt, ty_store *a, ty_store *v, ty_conv_mode mode,
                       ty_store **out) {
  return conv(rt, "ty_correlate", a, v, mode, true, out);
}
