/*
 * ops_convolve.c — convolve and correlate (tycho/products.h): the
 * "convolve" task and the operations that launch it (its CPU variant,
 * per instruction-set level, is in exec/kernels_conv.c).
 *
 * Both are one correlation launch: out[o] = sum_j x[o - left + j] w[j] over
 * the kernel's multi-indices j (terms whose x index falls outside x are
 * skipped). A convolution is the correlation with w = v flipped in every dim
 * (a view: negative strides, no copy). The launch domain is the output:
 * out ALIGNED, x and w read WHOLE, so a piece computes its box of outputs
 * reading the halo of x it needs, and any dim may be split.
 *
 * Same bits under any partition and level: every output element adds its
 * terms in one order, the kernel's multi-indices in C order, whatever its
 * piece (kernels_conv.c says how the variant keeps it).
 *
 * Modes and the numpy/scipy rules (tycho/products.h): `left` per dim is
 * w's extent - 1 (full), w's extent / 2 (same), 0 (valid). 1-D operands are
 * swapped when v is longer (numpy), and a swapped correlation is reversed (a
 * flipped view of the output); N-D operands are swapped only in valid mode,
 * when v is the larger in every dim (scipy).
 */
#include "internal.h"
#include "kernels.h"

#include "tycho/products.h"
#include "tycho/shape.h"

#include <string.h>

#define CONVOLVE_TASK "convolve"

ty_status ty__register_convolve_ops(ty_runtime *rt) {
  /* no signature: ty__conv_args is not a binding's scalar list */
  ty_task_desc d = {.name = CONVOLVE_TASK, .cpu = ty__convolve_variant};
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
  ty__conv_args ca;
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
