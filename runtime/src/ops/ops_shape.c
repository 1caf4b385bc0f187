/*
 * ops_shape.c — reversed views (ty_store_flip) and scans (ty_scan: cumsum,
 * cumprod), the two shape operations that views and existing launches
 * cannot compose (tycho/shape.h).
 *
 * flip is a view with a negative stride along the dim; every kernel and the
 * overlap test (store.c's byte_range) take element strides of either sign.
 *
 * A scan is the built-in task "scan": one launch whose domain is the line
 * set being scanned, never split along the scanned dim (nosplit), so each
 * piece owns whole lines and scans them in index order. An optional third
 * argument, the carry (stride 0 along the scanned dim), is the value each
 * line starts from. Its bits therefore never depend on the piece count.
 *
 * A long line (2 * TY_SCAN_BLOCK elements and more) would leave one piece
 * per line, so it is cut into blocks of TY_SCAN_BLOCK (a fixed length, not a
 * processor count) and run in four launches:
 *   1. totals: an ordered reduction (kernels.h: fixed order) of each block;
 *   2. fill the first carry with the identity;
 *   3. carries: an in-order scan of the totals, into carry[1 .. nb];
 *   4. the blocks (a view (..., nb, B, ...) of the line) scanned from their
 *      carry, split across blocks; and the tail past the last full block
 *      from carry[nb].
 * Each launch appears in explain. The scan dtype is the sum's (bool and
 * signed -> i64, unsigned -> u64, floats keep theirs; an input of another
 * dtype is cast first); integer sums and products wrap as numpy's do.
 */
#include "internal.h"
#include "tycho/shape.h"

#include <string.h>

#define SCAN_TASK "scan"

ty_status ty_store_flip(ty_runtime *rt, ty_store *s, int dim, ty_store **out) {
  if (!rt) return TY_EINVAL;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_store_flip: out is NULL");
  *out = NULL;
  if (!s) return ty__fail(rt, TY_EINVAL, "ty_store_flip: s is NULL");
  if (s->rt != rt) return ty__fail(rt, TY_EINVAL, "ty_store_flip: s belongs to another runtime");
  if (dim < 0 || dim >= s->ndim)
    return ty__fail(rt, TY_ERANGE, "ty_store_flip: dim %d is out of range for a store of rank %d",
                    dim, s->ndim);
  int64_t strides[TY_MAX_RANK];
  memcpy(strides, s->strides, sizeof strides);
  const int64_t n = s->shape[dim];
  strides[dim] = -s->strides[dim];
  const int64_t offset = n > 0 ? s->offset + (n - 1) * s->strides[dim] : s->offset;
  return ty__store_view(rt, s, s->ndim, s->shape, strides, offset, out);
}

/* scalars of the "scan" launch */
typedef struct scan_args {
  int32_t axis; /* the scanned dim of the domain */
  int32_t op;   /* ty_scan_op */
  int32_t carry; /* args = {out, x} or {out, x, carry} */
  int32_t pad;
} scan_args;

/* Integer sums and products wrap (numpy's), computed unsigned: no UB. */
#define ISUM(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
#define IPROD(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))
#define FSUM(a, b) ((a) + (b))
#define FPROD(a, b) ((a) * (b))

/* Next index of an odometer over `nd` dims of `shape` (C order); false when
 * it wraps. */
static bool next_index(int nd, const int64_t *shape, int64_t *idx) {
  for (int d = nd - 1; d >= 0; d--) {
    if (++idx[d] < shape[d]) return true;
    idx[d] = 0;
  }
  return false;
}

/* One tile: dims before the axis (outer) in C order; along the axis in
 * order; the dims after it (inner) row by row, so a scan along a leading
 * axis streams rows instead of walking columns. The last dim is the tight
 * loop. */
#define SCAN_TILE(NAME, T, OP)                                                                \
  static void NAME(const ty_tile *to, const ty_tile *tx, const ty_tile *tc, int ax) {        \
    const int nd = to->ndim;                                                                  \
    const int64_t n = to->shape[ax];                                                          \
    int64_t oshape[TY_MAX_RANK], ishape[TY_MAX_RANK], oi[TY_MAX_RANK], ii[TY_MAX_RANK];       \
    int no = 0, ni = 0;                                                                       \
    for (int d = 0; d < ax; d++) oshape[no++] = to->shape[d];                                 \
    for (int d = ax + 1; d < nd; d++) ishape[ni++] = to->shape[d];                            \
    for (int d = 0; d < nd; d++)                                                              \
      if (to->shape[d] == 0) return;                                                          \
    memset(oi, 0, sizeof oi);                                                                 \
    const int64_t so = to->strides[ax], sx = tx->strides[ax];                                 \
    do {                                                                                      \
      int64_t oo = 0, ox = 0, oc = 0;                                                         \
      for (int d = 0; d < ax; d++) {                                                          \
        oo += oi[d] * to->strides[d];                                                         \
        ox += oi[d] * tx->strides[d];                                                         \
        if (tc) oc += oi[d] * tc->strides[d];                                                 \
      }                                                                                       \
      T *o = (T *)to->data + oo;                                                              \
      const T *x = (const T *)tx->data + ox;                                                  \
      const T *c = tc ? (const T *)tc->data + oc : NULL;                                      \
      if (ni == 0) { /* one line */                                                           \
        T acc = c ? OP(c[0], x[0]) : x[0];                                                    \
        o[0] = acc;                                                                           \
        for (int64_t i = 1; i < n; i++) {                                                     \
          acc = OP(acc, x[i * sx]);                                                           \
          o[i * so] = acc;                                                                    \
        }                                                                                     \
        continue;                                                                             \
      }                                                                                       \
      const int last = nd - 1;                                                                \
      const int64_t m = to->shape[last];                                                      \
      const int64_t lo = to->strides[last], lx = tx->strides[last];                           \
      const int64_t lc = tc ? tc->strides[last] : 0;                                          \
      for (int64_t i = 0; i < n; i++) {                                                       \
        memset(ii, 0, sizeof ii);                                                             \
        do { /* rows of the inner dims but the last */                                        \
          int64_t ro = i * so, rx = i * sx, rc = 0;                                           \
          for (int k = 0; k < ni - 1; k++) {                                                  \
            ro += ii[k] * to->strides[ax + 1 + k];                                            \
            rx += ii[k] * tx->strides[ax + 1 + k];                                            \
            if (tc) rc += ii[k] * tc->strides[ax + 1 + k];                                    \
          }                                                                                   \
          T *orow = o + ro;                                                                   \
          const T *xrow = x + rx;                                                             \
          if (i > 0) {                                                                        \
            const T *prev = orow - so;                                                        \
            for (int64_t j = 0; j < m; j++) orow[j * lo] = OP(prev[j * lo], xrow[j * lx]);    \
          } else if (c) {                                                                     \
            const T *crow = c + rc;                                                           \
            for (int64_t j = 0; j < m; j++) orow[j * lo] = OP(crow[j * lc], xrow[j * lx]);    \
          } else {                                                                            \
            for (int64_t j = 0; j < m; j++) orow[j * lo] = xrow[j * lx];                      \
          }                                                                                   \
        } while (next_index(ni - 1, ishape, ii));                                             \
      }                                                                                       \
    } while (next_index(no, oshape, oi));                                                     \
  }

SCAN_TILE(scan_sum_f64, double, FSUM)
SCAN_TILE(scan_prod_f64, double, FPROD)
SCAN_TILE(scan_sum_f32, float, FSUM)
SCAN_TILE(scan_prod_f32, float, FPROD)
SCAN_TILE(scan_sum_i64, int64_t, ISUM)
SCAN_TILE(scan_prod_i64, int64_t, IPROD)

static int scan_variant(ty_task_ctx *ctx) {
  const scan_args *a = ctx->scalars;
  const ty_tile *to = &ctx->args[0], *tx = &ctx->args[1];
  const ty_tile *tc = a->carry ? &ctx->args[2] : NULL;
  const bool sum = a->op == TY_SCAN_SUM;
  switch (to->dtype) {
  case TY_F64: (sum ? scan_sum_f64 : scan_prod_f64)(to, tx, tc, a->axis); break;
  case TY_F32: (sum ? scan_sum_f32 : scan_prod_f32)(to, tx, tc, a->axis); break;
  case TY_I64:
  case TY_U64: /* the same bits modulo 2^64 */
    (sum ? scan_sum_i64 : scan_prod_i64)(to, tx, tc, a->axis);
    break;
  default:
    return ty_ctx_fail(ctx, "scan: no kernel for dtype %s", ty_dtype_name(to->dtype));
  }
  return 0;
}

ty_status ty__register_shape_ops(ty_runtime *rt) {
  /* no signature: the packed scalars (scan_args) are not a binding's scalar
   * list, so the task is not callable by name */
  ty_task_desc d = {.name = SCAN_TASK, .cpu = scan_variant};
  return ty_task_register(rt, &d, NULL);
}

/* out = scan of x along `axis` (all three of the domain's shape, carry with
 * stride 0 along it, or NULL); one launch, never split along the axis. */
static ty_status scan_launch(ty_runtime *rt, ty_scan_op op, ty_store *out, ty_store *x,
                             ty_store *carry, int axis) {
  const ty_task *task = ty_task_find(rt, SCAN_TASK);
  if (!task) return ty__fail(rt, TY_ENOTFOUND, "ty_scan: the scan task is not registered");
  if (out->size == 0) return TY_OK;
  ty_arg args[3] = {
      {.store = out, .priv = TY_PRIV_OUT, .redop = TY_REDOP_NONE, .proj = TY_PROJ_ALIGNED},
      {.store = x, .priv = TY_PRIV_IN, .redop = TY_REDOP_NONE, .proj = TY_PROJ_ALIGNED},
      {.store = carry, .priv = TY_PRIV_IN, .redop = TY_REDOP_NONE, .proj = TY_PROJ_ALIGNED},
  };
  scan_args sa = {.axis = axis, .op = op, .carry = carry != NULL, .pad = 0};
  ty_launch_desc d = {.task = task,
                      .ndim = out->ndim,
                      .domain = out->shape,
                      .nargs = carry ? 3 : 2,
                      .args = args,
                      .scalars = &sa,
                      .scalar_bytes = sizeof sa,
                      .nosplit = 1u << axis};
  return ty_launch(rt, &d);
}

/* The view of s with dim `axis` (length >= nb * B) cut into (nb, B): rank + 1. */
static ty_status blocked_view(ty_runtime *rt, ty_store *s, int axis, int64_t nb, int64_t B,
                              ty_store **out) {
  int64_t shape[TY_MAX_RANK], strides[TY_MAX_RANK];
  int k = 0;
  for (int d = 0; d < s->ndim; d++) {
    if (d == axis) {
      shape[k] = nb;
      strides[k++] = B * s->strides[d];
      shape[k] = B;
      strides[k++] = s->strides[d];
    } else {
      shape[k] = s->shape[d];
      strides[k++] = s->strides[d];
    }
  }
  return ty__store_view(rt, s, k, shape, strides, s->offset, out);
}

/* The long-line scheme of the file comment: src and res have a line of
 * n >= 2 * B elements along axis. */
static ty_status scan_blocked(ty_runtime *rt, ty_scan_op op, ty_store *src, ty_store *res,
                              int axis) {
  const int64_t B = TY_SCAN_BLOCK, n = src->shape[axis], nb = n / B, tail = n - nb * B;
  ty_store *xm = NULL, *rm = NULL, *tot = NULL, *car = NULL, *c0 = NULL, *c1 = NULL, *cm = NULL;
  ty_store *xt = NULL, *rt_ = NULL, *ct = NULL;
  ty_status st = blocked_view(rt, src, axis, nb, B, &xm);
  if (!st) st = blocked_view(rt, res, axis, nb, B, &rm);
  /* 1. block totals, (..., nb, ...) */
  if (!st) st = ty_reduce(rt, op == TY_SCAN_SUM ? TY_RED_SUM : TY_RED_PROD, xm, axis + 1, &tot);
  /* 2, 3. carries (..., nb + 1, ...): the identity, then the totals' scan */
  if (!st) {
    int64_t shape[TY_MAX_RANK];
    memcpy(shape, src->shape, sizeof shape);
    shape[axis] = nb + 1;
    st = ty__store_new(rt, res->dtype, src->ndim, shape, &car);
  }
  if (!st) st = ty_store_slice(rt, car, axis, 0, 1, 1, &c0);
  if (!st) st = ty_fill(rt, c0, op == TY_SCAN_SUM ? 0.0 : 1.0);
  if (!st) st = ty_store_slice(rt, car, axis, 1, nb + 1, 1, &c1);
  if (!st) st = scan_launch(rt, op, c1, tot, NULL, axis);
  /* 4. the blocks, each from carry[b] (stride 0 along the block) */
  if (!st) {
    int64_t shape[TY_MAX_RANK], strides[TY_MAX_RANK];
    int k = 0;
    for (int d = 0; d < car->ndim; d++) {
      shape[k] = d == axis ? nb : car->shape[d];
      strides[k++] = car->strides[d];
      if (d == axis) {
        shape[k] = B;
        strides[k++] = 0;
      }
    }
    st = ty__store_view(rt, car, k, shape, strides, car->offset, &cm);
  }
  if (!st) st = scan_launch(rt, op, rm, xm, cm, axis + 1);
  /* the tail from carry[nb] */
  if (!st && tail > 0) {
    st = ty_store_slice(rt, src, axis, nb * B, n, 1, &xt);
    if (!st) st = ty_store_slice(rt, res, axis, nb * B, n, 1, &rt_);
    if (!st) {
      int64_t strides[TY_MAX_RANK];
      memcpy(strides, car->strides, sizeof strides);
      strides[axis] = 0;
      st = ty__store_view(rt, car, xt->ndim, xt->shape, strides,
                          car->offset + nb * car->strides[axis], &ct);
    }
    if (!st) st = scan_launch(rt, op, rt_, xt, ct, axis);
  }
  ty_store *all[] = {xm, rm, tot, car, c0, c1, cm, xt, rt_, ct};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ty_store_release(all[i]);
  return st;
}

ty_status ty_scan(ty_runtime *rt, ty_scan_op op, ty_store *a, int axis, ty_store **out) {
  if (!rt) return TY_EINVAL;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_scan: out is NULL");
  *out = NULL;
  if (rt->destroyed) return ty__fail(rt, TY_EINVAL, "ty_scan: the runtime was destroyed");
  if (!a) return ty__fail(rt, TY_EINVAL, "ty_scan: a is NULL");
  if (a->rt != rt) return ty__fail(rt, TY_EINVAL, "ty_scan: a belongs to another runtime");
  if (op != TY_SCAN_SUM && op != TY_SCAN_PROD)
    return ty__fail(rt, TY_EINVAL, "ty_scan: unknown scan %d", (int)op);
  if (axis < -1 || axis >= a->ndim)
    return ty__fail(rt, TY_ERANGE, "ty_scan: axis %d is out of range for a %d-D store", axis,
                    a->ndim);
  const ty_dtype ot = ty_dtype_is_float(a->dtype)      ? a->dtype
                      : ty_dtype_is_unsigned(a->dtype) ? TY_U64 /* numpy's, as sum */
                                                       : TY_I64;
  ty_store *src = NULL, *flat = NULL, *res = NULL;
  ty_status st = TY_OK;
  /* the input in the scan dtype; over all elements: a C-order 1-D view */
  if (a->dtype != ot || (axis < 0 && !ty_store_is_contiguous(a))) {
    st = ty_cast(rt, a, ot, &src);
  } else {
    ty_store_retain(a);
    src = a;
  }
  if (!st && axis < 0) {
    st = ty_store_reshape(rt, src, 1, &src->size, &flat);
    axis = 0;
  } else if (!st) {
    ty_store_retain(src);
    flat = src;
  }
  if (!st) st = ty__store_new(rt, ot, flat->ndim, flat->shape, &res);
  if (!st && res->size > 0) {
    /* blocks need a rank more than the input: at TY_MAX_RANK, lines run whole */
    if (flat->shape[axis] >= 2 * (int64_t)TY_SCAN_BLOCK && flat->ndim < TY_MAX_RANK)
      st = scan_blocked(rt, op, flat, res, axis);
    else st = scan_launch(rt, op, res, flat, NULL, axis);
  }
  ty_store_release(flat);
  ty_store_release(src);
  if (st) {
    ty_store_release(res);
    return st;
  }
  *out = res;
  return TY_OK;
}
