/*
 * ops_products.c — numpy's products over the "matmul" task and element-wise
 * and reduction launches (tycho/products.h): batched matmul, dot, tensordot,
 * outer, inner, vdot, kron, trace.
 *
 * Batched matmul is one "matmul" launch over the domain (batch..., m, n):
 * C aligned, A (batch..., m, k) and B (batch..., k, n) read WHOLE and
 * broadcast to C's batch shape (stride 0 where an operand's batch dim is 1 or
 * missing), so no operand is copied for broadcasting. The kernel computes
 * each matrix of a piece's box as the 2-D product would (kernels_linalg.c),
 * and the partition cuts whole matrices (partition.c), so a batch's bits are
 * those of the 2-D product of its matrices, under any piece count.
 *
 * tensordot (and dot, inner for rank > 2) is a permutation of each operand
 * (a view) so that the summed axes are a's last and b's first, grouped into
 * one (m, k) and one (k, n) matrix: a view when the strides allow it (a
 * contiguous operand always does), else a copy; then one matmul and a
 * reshape of its fresh result. outer and kron are one broadcast
 * multiplication; trace a diagonal view and a sum.
 */
#include "internal.h"
#include "kernels.h"

#include "tycho/products.h"

#include <string.h>

/* ---- helpers --------------------------------------------------------------------------- */

static ty_status check_two(ty_runtime *rt, const char *fn, ty_store *a, ty_store *b,
                           ty_store **out) {
  if (!rt) return TY_EINVAL;
  if (rt->destroyed) return ty__fail(rt, TY_EINVAL, "%s: the runtime was destroyed", fn);
  if (!out) return ty__fail(rt, TY_EINVAL, "%s: out is NULL", fn);
  *out = NULL;
  if (!a || !b) return ty__fail(rt, TY_EINVAL, "%s: %s is NULL", fn, a ? "b" : "a");
  if (a->rt != rt || b->rt != rt)
    return ty__fail(rt, TY_EINVAL, "%s: %s belongs to another runtime", fn, a->rt != rt ? "a" : "b");
  return TY_OK;
}

/* x as a contiguous store: x itself (retained) or a copy. */
static ty_status dense(ty_runtime *rt, ty_store *x, ty_store **out) {
  if (ty_store_is_contiguous(x)) {
    ty_store_retain(x);
    *out = x;
    return TY_OK;
  }
  return ty_cast(rt, x, x->dtype, out);
}

/* x's elements in C order as a 1-D store (a view of x or of a copy). */
static ty_status flat(ty_runtime *rt, ty_store *x, ty_store **out) {
  ty_store *d = NULL;
  ty_status st = dense(rt, x, &d);
  if (st) return st;
  const int64_t n = x->size;
  st = ty_store_reshape(rt, d, 1, &n, out);
  ty_store_release(d);
  return st;
}

/* numpy's multiply: bool times bool is logical and (tycho's mul counts). */
static ty_status mul(ty_runtime *rt, ty_store *a, ty_store *b, ty_store **out) {
  const bool logical = a->dtype == TY_BOOL && b->dtype == TY_BOOL;
  return ty_binary(rt, logical ? TY_OP_AND : TY_OP_MUL, a, b, out);
}

/* Dims [d0, d1) of x as one dim: extent *n, stride *s. False when their
 * strides do not chain (then copy first). Extent-1 dims never block it. */
static bool group(const ty_store *x, int d0, int d1, int64_t *n, int64_t *s) {
  *n = 1;
  *s = 0;
  bool any = false;
  for (int d = d1 - 1; d >= d0; d--) {
    if (x->shape[d] == 1) continue;
    if (x->shape[d] == 0) {
      *n = 0;
      *s = 1;
      return true;
    }
    if (!any) {
      *s = x->strides[d];
      any = true;
    } else if (x->strides[d] != *s * *n) {
      return false;
    }
    *n *= x->shape[d];
  }
  return true;
}

/* x permuted by perm (new dim i is x's dim perm[i]): a view. */
static ty_status permute(ty_runtime *rt, ty_store *x, const int *perm, ty_store **out) {
  int64_t shape[TY_MAX_RANK], strides[TY_MAX_RANK];
  for (int i = 0; i < x->ndim; i++) {
    shape[i] = x->shape[perm[i]];
    strides[i] = x->strides[perm[i]];
  }
  return ty__store_view(rt, x, x->ndim, shape, strides, x->offset, out);
}

/* x (nb batch dims, then nr row dims, then the rest as columns) as a
 * (batch..., rows, cols) store: a view when the row dims and the column dims
 * each chain, else a view of a copy. Used by tensordot and einsum. */
ty_status ty__as_batched_matrix(ty_runtime *rt, ty_store *x, int nb, int nr, ty_store **out) {
  int64_t shape[TY_MAX_RANK], strides[TY_MAX_RANK];
  for (int d = 0; d < nb; d++) shape[d] = x->shape[d], strides[d] = x->strides[d];
  if (group(x, nb, nb + nr, &shape[nb], &strides[nb]) &&
      group(x, nb + nr, x->ndim, &shape[nb + 1], &strides[nb + 1]))
    return ty__store_view(rt, x, nb + 2, shape, strides, x->offset, out);
  ty_store *d = NULL;
  ty_status st = ty_cast(rt, x, x->dtype, &d); /* contiguous: its groups chain */
  if (st) return st;
  for (int k = 0; k < nb; k++) strides[k] = d->strides[k];
  group(d, nb, nb + nr, &shape[nb], &strides[nb]);
  group(d, nb + nr, d->ndim, &shape[nb + 1], &strides[nb + 1]);
  st = ty__store_view(rt, d, nb + 2, shape, strides, d->offset, out);
  ty_store_release(d);
  return st;
}

/* ---- batched matmul ------------------------------------------------------------------------ */

/* numpy's matmul with an operand of rank > 2: a 1-D a is a row (its dim is
 * dropped from the result), a 1-D b a column; the batch dims (all but the
 * last two) broadcast. */
ty_status ty__matmul_batched(ty_runtime *rt, ty_store *a, ty_store *b, ty_store **out) {
  const char *fn = "ty_matmul";
  char sa[256], sb[256];
  ty__shape_str(a->ndim, a->shape, sa, sizeof sa);
  ty__shape_str(b->ndim, b->shape, sb, sizeof sb);
  const int ba = a->ndim > 2 ? a->ndim - 2 : 0, bb = b->ndim > 2 ? b->ndim - 2 : 0;
  const int64_t m = a->ndim >= 2 ? a->shape[a->ndim - 2] : 1, k = a->shape[a->ndim - 1];
  const int64_t k2 = b->ndim >= 2 ? b->shape[b->ndim - 2] : b->shape[0];
  const int64_t n = b->ndim >= 2 ? b->shape[b->ndim - 1] : 1;
  if (k != k2)
    return ty__fail(rt, TY_ESHAPE, "%s: shapes %s and %s do not align (%lld != %lld)", fn, sa, sb,
                    (long long)k, (long long)k2);
  int nb = 0;
  int64_t batch[TY_MAX_RANK];
  if (ty_broadcast_shapes(ba, a->shape, bb, b->shape, &nb, batch))
    return ty__fail(rt, TY_ESHAPE, "%s: the batch dims of shapes %s and %s do not broadcast", fn,
                    sa, sb);
  if (nb + 2 > TY_MAX_RANK)
    return ty__fail(rt, TY_ELIMIT, "%s: the result of %s and %s has too many dims", fn, sa, sb);
  ty_dtype t = ty_dtype_promote(a->dtype, b->dtype);
  const bool logical = t == TY_BOOL; /* counted in i64, then != 0 (as ty_matmul) */
  if (logical) t = TY_I64;

  int ond = nb;
  int64_t oshape[TY_MAX_RANK];
  memcpy(oshape, batch, sizeof(int64_t) * (size_t)nb);
  if (a->ndim >= 2) oshape[ond++] = m;
  if (b->ndim >= 2) oshape[ond++] = n;
  ty_store *res = NULL, *ca = NULL, *cb = NULL, *A = NULL, *B = NULL, *C = NULL;
  ty_status st = ty__store_new(rt, t, ond, oshape, &res);
  if (st || res->size == 0) goto done;
  /* operands in dtype t; floats that BLAS cannot read as they are, copied */
  for (int i = 0; i < 2 && !st; i++) {
    ty_store *x = i ? b : a, **c = i ? &cb : &ca;
    bool trans;
    int64_t ld;
    const bool blas = x->ndim < 2 ||
                      ty__blas_layout(x->shape[x->ndim - 2], x->shape[x->ndim - 1],
                                      x->strides[x->ndim - 2], x->strides[x->ndim - 1], &trans, &ld);
    if (x->dtype != t || (ty_dtype_is_float(t) && !blas)) {
      st = ty_cast(rt, x, t, c);
    } else {
      ty_store_retain(x);
      *c = x;
    }
  }
  /* (batch..., m, k), (batch..., k, n), (batch..., m, n) views */
  for (int i = 0; i < 3 && !st; i++) {
    ty_store *x = i == 0 ? ca : i == 1 ? cb : res, **v = i == 0 ? &A : i == 1 ? &B : &C;
    const int xb = i == 0 ? ba : i == 1 ? bb : nb; /* x's batch dims */
    int64_t shape[TY_MAX_RANK], strides[TY_MAX_RANK];
    for (int d = 0; d < nb; d++) {
      const int j = xb - nb + d;
      shape[d] = batch[d];
      strides[d] = j >= 0 && x->shape[j] == batch[d] ? x->strides[j] : 0;
    }
    shape[nb] = i == 1 ? k : m;
    shape[nb + 1] = i == 0 ? k : n;
    const int64_t *xs = x->strides + xb;
    if (i == 0) { /* a: 1-D is a row */
      strides[nb] = x->ndim >= 2 ? xs[0] : 0;
      strides[nb + 1] = x->ndim >= 2 ? xs[1] : xs[0];
    } else if (i == 1) { /* b: 1-D is a column */
      strides[nb] = xs[0];
      strides[nb + 1] = x->ndim >= 2 ? xs[1] : 0;
    } else { /* res: the dims a 1-D operand dropped have stride 0 */
      strides[nb] = a->ndim >= 2 ? xs[0] : 0;
      strides[nb + 1] = b->ndim >= 2 ? xs[a->ndim >= 2 ? 1 : 0] : 0;
    }
    st = ty__store_view(rt, x, nb + 2, shape, strides, x->offset, v);
  }
  if (!st) {
    ty_arg args[3] = {
        {.store = C, .priv = TY_PRIV_OUT, .proj = TY_PROJ_ALIGNED},
        {.store = A, .priv = TY_PRIV_IN, .proj = TY_PROJ_WHOLE},
        {.store = B, .priv = TY_PRIV_IN, .proj = TY_PROJ_WHOLE},
    };
    st = ty__launch_named(rt, fn, "matmul", nb + 2, C->shape, 3, args, NULL, 0, 0);
  }
  if (!st && logical) {
    ty_store *counts = res;
    res = NULL;
    st = ty_cast(rt, counts, TY_BOOL, &res);
    ty_store_release(counts);
  }
done:
  ty_store_release(A);
  ty_store_release(B);
  ty_store_release(C);
  ty_store_release(ca);
  ty_store_release(cb);
  if (st) {
    ty_store_release(res);
    return st;
  }
  if (logical && res->dtype != TY_BOOL) { /* empty: no launch ran */
    ty_store *e = NULL;
    st = ty__store_new(rt, TY_BOOL, res->ndim, res->shape, &e);
    ty_store_release(res);
    if (st) return st;
    res = e;
  }
  *out = res;
  return TY_OK;
}

/* ---- tensordot, dot, inner, vdot ------------------------------------------------------------- */

ty_status ty_tensordot(ty_runtime *rt, ty_store *a, ty_store *b, int n, const int *axes_a,
                       const int *axes_b, ty_store **out) {
  const char *fn = "ty_tensordot";
  ty_status st = check_two(rt, fn, a, b, out);
  if (st) return st;
  char sa[256], sb[256];
  ty__shape_str(a->ndim, a->shape, sa, sizeof sa);
  ty__shape_str(b->ndim, b->shape, sb, sizeof sb);
  if (n < 0 || n > a->ndim || n > b->ndim)
    return ty__fail(rt, TY_EINVAL, "%s: %d summed axes for shapes %s and %s", fn, n, sa, sb);
  if (n > 0 && (!axes_a || !axes_b)) return ty__fail(rt, TY_EINVAL, "%s: axes are NULL", fn);
  bool used_a[TY_MAX_RANK] = {false}, used_b[TY_MAX_RANK] = {false};
  int ax[TY_MAX_RANK], bx[TY_MAX_RANK];
  for (int i = 0; i < n; i++) {
    ax[i] = axes_a[i] < 0 ? axes_a[i] + a->ndim : axes_a[i];
    bx[i] = axes_b[i] < 0 ? axes_b[i] + b->ndim : axes_b[i];
    if (ax[i] < 0 || ax[i] >= a->ndim || bx[i] < 0 || bx[i] >= b->ndim)
      return ty__fail(rt, TY_EINVAL, "%s: axis pair %d (%d, %d) is out of range for shapes %s and %s",
                      fn, i, axes_a[i], axes_b[i], sa, sb);
    if (used_a[ax[i]] || used_b[bx[i]])
      return ty__fail(rt, TY_EINVAL, "%s: an axis is summed twice (pair %d)", fn, i);
    used_a[ax[i]] = used_b[bx[i]] = true;
    if (a->shape[ax[i]] != b->shape[bx[i]])
      return ty__fail(rt, TY_ESHAPE,
                      "%s: shapes %s and %s do not align (%lld != %lld)", fn, sa, sb,
                      (long long)a->shape[ax[i]], (long long)b->shape[bx[i]]);
  }
  const int fa = a->ndim - n, fb = b->ndim - n;
  if (fa + fb > TY_MAX_RANK)
    return ty__fail(rt, TY_ELIMIT, "%s: the result of %s and %s has too many dims", fn, sa, sb);
  /* a as (a's free dims, summed dims), b as (summed dims, b's free dims) */
  int pa[TY_MAX_RANK], pb[TY_MAX_RANK], na = 0, nbb = n;
  int64_t oshape[TY_MAX_RANK];
  int ond = 0;
  for (int d = 0; d < a->ndim; d++)
    if (!used_a[d]) pa[na++] = d, oshape[ond++] = a->shape[d];
  for (int i = 0; i < n; i++) pa[na + i] = ax[i], pb[i] = bx[i];
  for (int d = 0; d < b->ndim; d++)
    if (!used_b[d]) pb[nbb++] = d, oshape[ond++] = b->shape[d];
  ty_store *va = NULL, *vb = NULL, *ma = NULL, *mb = NULL, *prod = NULL, *res = NULL;
  st = permute(rt, a, pa, &va);
  if (!st) st = permute(rt, b, pb, &vb);
  if (!st) st = ty__as_batched_matrix(rt, va, 0, fa, &ma);
  if (!st) st = ty__as_batched_matrix(rt, vb, 0, n, &mb);
  if (!st) st = ty_matmul(rt, ma, mb, &prod); /* fresh and contiguous: reshape is a view */
  if (!st) st = ty_store_reshape(rt, prod, ond, oshape, &res);
  ty_store_release(va);
  ty_store_release(vb);
  ty_store_release(ma);
  ty_store_release(mb);
  ty_store_release(prod);
  if (st) return st;
  *out = res;
  return TY_OK;
}

/* A tensordot failure's message under the caller's name. */
static ty_status renamed(ty_runtime *rt, const char *fn, ty_status st) {
  const char *msg = ty_errmsg(rt);
  if (!st || strncmp(msg, "ty_tensordot", 12) != 0) return st;
  char rest[512];
  ty__strlcpy(rest, msg + 12, sizeof rest); /* the message buffer is rewritten */
  return ty__fail(rt, st, "%s%s", fn, rest);
}

ty_status ty_dot(ty_runtime *rt, ty_store *a, ty_store *b, ty_store **out) {
  ty_status st = check_two(rt, "ty_dot", a, b, out);
  if (st) return st;
  if (a->ndim == 0 || b->ndim == 0) return mul(rt, a, b, out);
  if (a->ndim <= 2 && b->ndim <= 2) return ty_matmul(rt, a, b, out);
  const int ax = a->ndim - 1, bx = b->ndim >= 2 ? b->ndim - 2 : 0;
  return renamed(rt, "ty_dot", ty_tensordot(rt, a, b, 1, &ax, &bx, out));
}

ty_status ty_inner(ty_runtime *rt, ty_store *a, ty_store *b, ty_store **out) {
  ty_status st = check_two(rt, "ty_inner", a, b, out);
  if (st) return st;
  if (a->ndim == 0 || b->ndim == 0) return mul(rt, a, b, out);
  const int ax = a->ndim - 1, bx = b->ndim - 1;
  return renamed(rt, "ty_inner", ty_tensordot(rt, a, b, 1, &ax, &bx, out));
}

ty_status ty_vdot(ty_runtime *rt, ty_store *a, ty_store *b, ty_store **out) {
  ty_status st = check_two(rt, "ty_vdot", a, b, out);
  if (st) return st;
  if (a->size != b->size) {
    char sa[256], sb[256];
    ty__shape_str(a->ndim, a->shape, sa, sizeof sa);
    ty__shape_str(b->ndim, b->shape, sb, sizeof sb);
    return ty__fail(rt, TY_ESHAPE, "ty_vdot: shapes %s and %s have different sizes (%lld != %lld)",
                    sa, sb, (long long)a->size, (long long)b->size);
  }
  ty_store *fa = NULL, *fb = NULL;
  st = flat(rt, a, &fa);
  if (!st) st = flat(rt, b, &fb);
  if (!st) st = ty_matmul(rt, fa, fb, out);
  ty_store_release(fa);
  ty_store_release(fb);
  return st;
}

/* ---- outer, kron ----------------------------------------------------------------------------- */

ty_status ty_outer(ty_runtime *rt, ty_store *a, ty_store *b, ty_store **out) {
  ty_status st = check_two(rt, "ty_outer", a, b, out);
  if (st) return st;
  ty_store *fa = NULL, *fb = NULL, *va = NULL, *vb = NULL;
  const int64_t shape[2] = {a->size, b->size};
  st = flat(rt, a, &fa);
  if (!st) st = flat(rt, b, &fb);
  if (!st)
    st = ty__store_view(rt, fa, 2, shape, (const int64_t[2]){fa->strides[0], 0}, fa->offset, &va);
  if (!st)
    st = ty__store_view(rt, fb, 2, shape, (const int64_t[2]){0, fb->strides[0]}, fb->offset, &vb);
  if (!st) st = mul(rt, va, vb, out);
  ty_store_release(fa);
  ty_store_release(fb);
  ty_store_release(va);
  ty_store_release(vb);
  return st;
}

/* out viewed as (a0, b0, a1, b1, ...) is a[i0, i1, ...] * b[j0, j1, ...]:
 * one broadcast multiplication into a fresh store, reshaped to
 * (a0 b0, a1 b1, ...). */
ty_status ty_kron(ty_runtime *rt, ty_store *a, ty_store *b, ty_store **out) {
  ty_status st = check_two(rt, "ty_kron", a, b, out);
  if (st) return st;
  const int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
  if (nd == 0) return mul(rt, a, b, out);
  if (2 * nd > TY_MAX_RANK)
    return ty__fail(rt, TY_ELIMIT, "ty_kron: operands of %d dims (at most %d)", nd,
                    TY_MAX_RANK / 2);
  int64_t shape[TY_MAX_RANK], sa[TY_MAX_RANK], sb[TY_MAX_RANK], oshape[TY_MAX_RANK];
  for (int d = 0; d < nd; d++) {
    const int ja = d - (nd - a->ndim), jb = d - (nd - b->ndim);
    const int64_t ea = ja >= 0 ? a->shape[ja] : 1, eb = jb >= 0 ? b->shape[jb] : 1;
    shape[2 * d] = ea;
    shape[2 * d + 1] = eb;
    sa[2 * d] = ja >= 0 ? a->strides[ja] : 0;
    sa[2 * d + 1] = 0;
    sb[2 * d] = 0;
    sb[2 * d + 1] = jb >= 0 ? b->strides[jb] : 0;
    if (eb != 0 && ea > INT64_MAX / eb)
      return ty__fail(rt, TY_ERANGE, "ty_kron: the result's dim %d (%lld x %lld) is too large", d,
                      (long long)ea, (long long)eb);
    oshape[d] = ea * eb;
  }
  int64_t size;
  if ((st = ty__shape_size(rt, "ty_kron", nd, oshape, ty_dtype_promote(a->dtype, b->dtype), &size)))
    return st;
  ty_store *va = NULL, *vb = NULL, *prod = NULL;
  st = ty__store_view(rt, a, 2 * nd, shape, sa, a->offset, &va);
  if (!st) st = ty__store_view(rt, b, 2 * nd, shape, sb, b->offset, &vb);
  if (!st) st = mul(rt, va, vb, &prod);
  if (!st) st = ty_store_reshape(rt, prod, nd, oshape, out);
  ty_store_release(va);
  ty_store_release(vb);
  ty_store_release(prod);
  return st;
}

/* ---- trace ----------------------------------------------------------------------------------- */

ty_status ty_trace(ty_runtime *rt, ty_store *a, int64_t offset, int axis1, int axis2,
                   ty_store **out) {
  const char *fn = "ty_trace";
  if (!rt) return TY_EINVAL;
  if (rt->destroyed) return ty__fail(rt, TY_EINVAL, "%s: the runtime was destroyed", fn);
  if (!out) return ty__fail(rt, TY_EINVAL, "%s: out is NULL", fn);
  *out = NULL;
  if (!a) return ty__fail(rt, TY_EINVAL, "%s: a is NULL", fn);
  if (a->rt != rt) return ty__fail(rt, TY_EINVAL, "%s: a belongs to another runtime", fn);
  if (a->ndim < 2)
    return ty__fail(rt, TY_ESHAPE, "%s: a must have at least 2 dims, got %d", fn, a->ndim);
  const int d1 = axis1 < 0 ? axis1 + a->ndim : axis1, d2 = axis2 < 0 ? axis2 + a->ndim : axis2;
  if (d1 < 0 || d1 >= a->ndim || d2 < 0 || d2 >= a->ndim)
    return ty__fail(rt, TY_EINVAL, "%s: axes (%d, %d) are out of range for %d dims", fn, axis1,
                    axis2, a->ndim);
  if (d1 == d2) return ty__fail(rt, TY_EINVAL, "%s: axis1 and axis2 are the same axis (%d)", fn, d1);
  /* the other dims, then the diagonal */
  int64_t shape[TY_MAX_RANK], strides[TY_MAX_RANK];
  int nd = 0;
  for (int d = 0; d < a->ndim; d++)
    if (d != d1 && d != d2) shape[nd] = a->shape[d], strides[nd++] = a->strides[d];
  const int64_t n1 = a->shape[d1], n2 = a->shape[d2];
  int64_t len, off = a->offset;
  if (offset >= 0) {
    len = offset >= n2 ? 0 : (n1 < n2 - offset ? n1 : n2 - offset);
    if (len > 0) off += offset * a->strides[d2];
  } else {
    len = offset <= -n1 ? 0 : (n1 + offset < n2 ? n1 + offset : n2); /* no -INT64_MIN */
    if (len > 0) off -= offset * a->strides[d1];
  }
  shape[nd] = len;
  strides[nd++] = a->strides[d1] + a->strides[d2];
  ty_store *diag = NULL;
  ty_status st = ty__store_view(rt, a, nd, shape, strides, off, &diag);
  if (!st) st = ty_reduce(rt, TY_RED_SUM, diag, nd - 1, out);
  ty_store_release(diag);
  return st;
}
