/*
 * ops_index.c — operations that address elements by value: bincount.
 *
 * bincount is a scatter: element i of x says which bin its count (or weight)
 * goes to, so no piece of x maps to a fixed piece of the output. It is one
 * launch over a 2-D domain (n, nbins) that the core already knows how to run
 * in parallel:
 *   - x (and the weights) are viewed as (n, nbins) with stride 0 on dim 1;
 *   - the output is viewed as (n, nbins) with stride 0 on dim 0 and passed
 *     TY_PRIV_REDUCE with TY_REDOP_SUM: each piece (a range of x, dim 1 is
 *     never split) gets a private histogram of nbins entries, starts at 0,
 *     and the runtime adds the privates into the output (which a fill launch
 *     zeroes first). A piece's work is its range of x plus nbins to combine,
 *     so nbins far above n / pieces makes the combine dominate: fine for the
 *     histograms and k-means labels bincount is for (nbins << n).
 * The variant reads the label as an integer of x's dtype, subtracts `base`
 * and skips labels outside [0, nbins) (the contract in tycho.h), so bad
 * labels cannot write out of bounds.
 */
#include "internal.h"

#include <string.h>

#define BINCOUNT_TASK "bincount"

typedef ty__bincount_args bincount_args; /* internal.h: plan/bincount_merge.c merges them */

/* Integer label of any integer (or bool) dtype; floats never reach here. */
static inline int64_t load_label(const char *p, ty_dtype t) {
  switch (t) {
  case TY_I64: return *(const int64_t *)p;
  case TY_I32: return *(const int32_t *)p;
  case TY_U8: return *(const uint8_t *)p;
  case TY_BOOL: return *(const uint8_t *)p != 0;
  default: return ty__load_i64(p, t); /* the integer dtypes added later */
  }
}

/* One typed loop per output dtype: out[x[i] - base] += w[i] (or 1). Strides
 * in elements; `os` is the output's stride along the bins. */
#define BINCOUNT_LOOP(T, ONE)                                                            \
  for (int64_t i = 0; i < n; i++) {                                                      \
    const int64_t j = load_label(x + i * xs, xt) - base;                                 \
    if (j < 0 || j >= nbins) continue;                                                   \
    ((T *)out)[j * os] += w ? ((const T *)w)[i * ws] : (T)(ONE);                          \
  }

/* One output of a merged launch (plan/bincount_merge.c) */
typedef struct bin_out {
  ty_dtype t;
  char *out;
  int64_t os;      /* elements */
  const char *w;   /* NULL: counts */
  int64_t ws;      /* elements */
} bin_out;

/* k-means' case without a dtype switch per element: i64 labels, at most
 * one count (i64, first) and then 1 .. 3 f64 weighted sums. False when the
 * outputs are otherwise. */
#define BIN_F64(k) ((double *)o[c + (k)].out)[j * o[c + (k)].os] += ((const double *)o[c + (k)].w)[i * o[c + (k)].ws]
#define BIN_KM(BODY)                                                                       \
  for (int64_t i = 0; i < n; i++) {                                                        \
    const int64_t j = x[i * xs] - base;                                                    \
    if (j < 0 || j >= nbins) continue;                                                     \
    if (cnt) cnt[j * cs] += 1;                                                             \
    BODY;                                                                                  \
  }
static bool bincount_kmeans(const bin_out *o, int nout, const int64_t *x, int64_t xs, int64_t n,
                            int64_t nbins, int64_t base) {
  const int c = o[0].t == TY_I64 && !o[0].w ? 1 : 0; /* a count first */
  const int m = nout - c;
  if (m < 1 || m > 3) return false;
  for (int k = c; k < nout; k++)
    if (o[k].t != TY_F64 || !o[k].w) return false;
  int64_t *cnt = c ? (int64_t *)o[0].out : NULL;
  const int64_t cs = o[0].os;
  switch (m) {
  case 1: BIN_KM(BIN_F64(0)) break;
  case 2: BIN_KM(BIN_F64(0); BIN_F64(1)) break;
  default: BIN_KM(BIN_F64(0); BIN_F64(1); BIN_F64(2)) break;
  }
  return true;
}

/* Several bincounts of the same labels in one pass: each label is read once
 * and added into every output. Each output's bins get their terms in the
 * order of i, as the single loop above adds them, so the sums are the same
 * bits as separate launches over the same pieces. */
static int bincount_many(ty_task_ctx *ctx, const bincount_args *a) {
  bin_out o[TY__BINCOUNT_MAX + 1];
  const int nout = 1 + a->nmore;
  const ty_tile *tx = &ctx->args[1];
  const int64_t n = tx->shape[0], nbins = ctx->args[0].shape[1], base = a->base;
  const ty_dtype xt = tx->dtype;
  const char *x = tx->data;
  const int64_t xs = tx->strides[0] * (int64_t)ty_dtype_size(xt);
  for (int k = 0, at = 0; k < nout; k++) { /* out at `at`, then its weights if any */
    const bool weighted = k == 0 ? a->weighted != 0 : a->more_weighted[k - 1] != 0;
    const ty_tile *to = &ctx->args[at], *tw = weighted ? &ctx->args[k == 0 ? 2 : at + 1] : NULL;
    if (to->dtype != TY_I64 && to->dtype != TY_F64 && to->dtype != TY_F32)
      return ty_ctx_fail(ctx, "bincount: no kernel for output dtype %s", ty_dtype_name(to->dtype));
    o[k] = (bin_out){.t = to->dtype,
                     .out = to->data,
                     .os = to->strides[1],
                     .w = tw ? tw->data : NULL,
                     .ws = tw ? tw->strides[0] : 0};
    at = (k == 0 ? 2 : at + 1) + (weighted ? 1 : 0);
  }
  if (n == 0 || nbins == 0) return 0;
  if (xt == TY_I64 && bincount_kmeans(o, nout, (const int64_t *)x, xs / 8, n, nbins, base)) return 0;
  for (int64_t i = 0; i < n; i++) {
    const int64_t j = load_label(x + i * xs, xt) - base;
    if (j < 0 || j >= nbins) continue;
    for (int k = 0; k < nout; k++) {
      const bin_out *b = &o[k];
      switch (b->t) {
      case TY_I64: ((int64_t *)b->out)[j * b->os] += b->w ? ((const int64_t *)b->w)[i * b->ws] : 1; break;
      case TY_F64: ((double *)b->out)[j * b->os] += b->w ? ((const double *)b->w)[i * b->ws] : 1.0; break;
      default: ((float *)b->out)[j * b->os] += b->w ? ((const float *)b->w)[i * b->ws] : 1.0f; break;
      }
    }
  }
  return 0;
}

static int bincount_variant(ty_task_ctx *ctx) {
  const bincount_args *a = ctx->scalars;
  if (a->nmore > 0) return bincount_many(ctx, a);
  const ty_tile *to = &ctx->args[0], *tx = &ctx->args[1];
  const ty_tile *tw = a->weighted ? &ctx->args[2] : NULL;
  const int64_t n = tx->shape[0], nbins = to->shape[1], base = a->base;
  const ty_dtype xt = tx->dtype;
  const size_t xes = ty_dtype_size(xt);
  const char *x = tx->data;
  const int64_t xs = tx->strides[0] * (int64_t)xes; /* bytes: labels of any width */
  char *out = to->data;
  const int64_t os = to->strides[1];
  const char *w = tw ? tw->data : NULL;
  const int64_t ws = tw ? tw->strides[0] : 0;
  if (n == 0 || nbins == 0) return 0;
  switch (to->dtype) {
  case TY_I64: BINCOUNT_LOOP(int64_t, 1) break;
  case TY_F64: BINCOUNT_LOOP(double, 1.0) break;
  case TY_F32: BINCOUNT_LOOP(float, 1.0f) break;
  default:
    return ty_ctx_fail(ctx, "bincount: no kernel for output dtype %s", ty_dtype_name(to->dtype));
  }
  return 0;
}

ty_status ty__register_index_ops(ty_runtime *rt) {
  /* no signature: the packed scalars (bincount_args) are not a binding's
   * scalar list, so the task is not callable by name */
  ty_task_desc d = {.name = BINCOUNT_TASK, .cpu = bincount_variant};
  return ty_task_register(rt, &d, NULL);
}

static bool is_label_dtype(ty_dtype t) {
  return ty_dtype_is_int(t) || t == TY_BOOL;
}

ty_status ty_bincount(ty_runtime *rt, ty_store *x, ty_store *weights, int64_t base, int64_t nbins,
                      ty_store **out) {
  if (!rt) return TY_EINVAL;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_bincount: out is NULL");
  *out = NULL;
  if (rt->destroyed) return ty__fail(rt, TY_EINVAL, "ty_bincount: the runtime was destroyed");
  if (!x) return ty__fail(rt, TY_EINVAL, "ty_bincount: x is NULL");
  if (x->rt != rt) return ty__fail(rt, TY_EINVAL, "ty_bincount: x belongs to another runtime");
  if (weights && weights->rt != rt)
    return ty__fail(rt, TY_EINVAL, "ty_bincount: weights belong to another runtime");
  if (x->ndim != 1)
    return ty__fail(rt, TY_ESHAPE, "ty_bincount: x must be 1-D, got %d dimensions", x->ndim);
  if (!is_label_dtype(x->dtype))
    return ty__fail(rt, TY_EDTYPE, "ty_bincount: x must have an integer dtype, got %s",
                    ty_dtype_name(x->dtype));
  if (nbins < 0)
    return ty__fail(rt, TY_EINVAL, "ty_bincount: nbins must be non-negative, got %lld",
                    (long long)nbins);
  ty_dtype ot = TY_I64;
  if (weights) {
    if (weights->ndim != 1 || weights->shape[0] != x->shape[0])
      return ty__fail(rt, TY_ESHAPE,
                      "ty_bincount: weights must be 1-D of x's length %lld, got %d-D of %lld",
                      (long long)x->shape[0], weights->ndim,
                      (long long)(weights->ndim ? weights->shape[0] : 1));
    ot = weights->dtype == TY_F32 ? TY_F32 : TY_F64;
  }
  /* the launch domain (n, nbins) must have a size (and bytes) that fit */
  if (nbins > 0 && x->shape[0] > (INT64_MAX / 16) / nbins)
    return ty__fail(rt, TY_ERANGE, "ty_bincount: %lld labels x %lld bins is too large a domain",
                    (long long)x->shape[0], (long long)nbins);
  const ty_task *task = ty_task_find(rt, BINCOUNT_TASK);
  if (!task) return ty__fail(rt, TY_ENOTFOUND, "ty_bincount: the bincount task is not registered");

  ty_store *res = NULL, *w = NULL, *ov = NULL, *xv = NULL, *wv = NULL;
  ty_status st = ty_full(rt, ot, 1, &nbins, 0.0, &res);
  const int64_t n = x->shape[0];
  if (!st && n > 0 && nbins > 0) {
    const int64_t dom[2] = {n, nbins};
    if (weights) {
      if (weights->dtype == ot) {
        ty_store_retain(weights);
        w = weights;
      } else {
        st = ty_cast(rt, weights, ot, &w);
      }
    }
    if (!st) st = ty__store_view(rt, res, 2, dom, (const int64_t[2]){0, res->strides[0]}, res->offset, &ov);
    if (!st) st = ty__store_view(rt, x, 2, dom, (const int64_t[2]){x->strides[0], 0}, x->offset, &xv);
    if (!st && w)
      st = ty__store_view(rt, w, 2, dom, (const int64_t[2]){w->strides[0], 0}, w->offset, &wv);
    if (!st) {
      ty_arg args[3] = {
          {.store = ov, .priv = TY_PRIV_REDUCE, .redop = TY_REDOP_SUM, .proj = TY_PROJ_ALIGNED},
          {.store = xv, .priv = TY_PRIV_IN, .redop = TY_REDOP_NONE, .proj = TY_PROJ_ALIGNED},
          {.store = wv, .priv = TY_PRIV_IN, .redop = TY_REDOP_NONE, .proj = TY_PROJ_ALIGNED},
      };
      bincount_args ba = {.base = base, .weighted = wv != NULL};
      ty_launch_desc d = {.task = task,
                          .ndim = 2,
                          .domain = dom,
                          .nargs = wv ? 3 : 2,
                          .args = args,
                          .scalars = &ba,
                          .scalar_bytes = sizeof ba,
                          .nosplit = 1u << 1}; /* pieces are ranges of x, never of the bins */
      st = ty_launch(rt, &d);
    }
  }
  ty_store_release(wv);
  ty_store_release(xv);
  ty_store_release(ov);
  ty_store_release(w);
  if (st) {
    ty_store_release(res);
    return st;
  }
  *out = res;
  return TY_OK;
}
