/*
 * ops_sort.c — sort, argsort, searchsorted, isin and unique (tycho/sort.h):
 * the tasks "sort" and "searchsorted", and unique composed from them and
 * ty_compress.
 *
 *   - sort   domain (o, m, r): x viewed around the sorted axis; the axis (dim
 *            1) is never split, so a piece owns whole lines and sorts each one
 *            on its own: a stable bottom-up merge sort (insertion-sorted runs
 *            of 32, then merges; m extra elements of scratch per line). The
 *            comparison puts NaN last (numpy's). Lines are independent, so
 *            the result does not depend on the pieces. A 1-D sort is one line
 *            and so one piece today (a per-piece sort and an ordered merge is
 *            the next step).
 *   - searchsorted domain (k) over v: each element binary-searches the whole
 *            sorted store a (read WHOLE). Mode 2 (isin) says whether a holds
 *            the element.
 * unique = argsort, a gather, a "differs from its left neighbour" mask,
 * ty_compress of the values (and of the positions for return_index), and
 * searchsorted for inverse and counts.
 */
#include "internal.h"

#include "tycho/mask.h"
#include "tycho/sort.h"

#include <stdlib.h>
#include <string.h>

typedef struct sort_args {
  int32_t mode; /* 0: values; 1: positions (i64, + base) */
  int32_t pad;
  int64_t base;
} sort_args;

typedef struct search_args {
  int32_t mode; /* 0: left, 1: right, 2: isin (bool out) */
  int32_t pad;
  int64_t base;
} search_args;

#define LESS_F(x, y) ((x) < (y) || ((y) != (y) && (x) == (x))) /* NaN last */
#define LESS_I(x, y) ((x) < (y))
#define RUN 32

/* vsort_T: stable sort of a[0..n) (t: scratch of n); isort_T: the same
 * order as positions ix[0..n) into the keys k (t: scratch). */
#define SORT_FUNCS(NAME, T, LESS)                                                          \
  static void vsort_##NAME(T *a, T *t, int64_t n) {                                        \
    for (int64_t s = 0; s < n; s += RUN) {                                                 \
      const int64_t e = s + RUN < n ? s + RUN : n;                                         \
      for (int64_t i = s + 1; i < e; i++) {                                                \
        T v = a[i];                                                                        \
        int64_t j = i;                                                                     \
        while (j > s && LESS(v, a[j - 1])) { a[j] = a[j - 1]; j--; }                      \
        a[j] = v;                                                                          \
      }                                                                                    \
    }                                                                                      \
    T *src = a, *dst = t;                                                                  \
    for (int64_t w = RUN; w < n; w *= 2) {                                                 \
      for (int64_t lo = 0; lo < n; lo += 2 * w) {                                          \
        const int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n; \
        int64_t i = lo, j = mid, k = lo;                                                   \
        while (i < mid && j < hi) dst[k++] = LESS(src[j], src[i]) ? src[j++] : src[i++];   \
        while (i < mid) dst[k++] = src[i++];                                               \
        while (j < hi) dst[k++] = src[j++];                                                \
      }                                                                                    \
      T *sw = src; src = dst; dst = sw;                                                    \
    }                                                                                      \
    if (src != a) memcpy(a, src, sizeof(T) * (size_t)n);                                   \
  }                                                                                        \
  static void isort_##NAME(int64_t *ix, int64_t *t, const T *k, int64_t n) {               \
    for (int64_t s = 0; s < n; s += RUN) {                                                 \
      const int64_t e = s + RUN < n ? s + RUN : n;                                         \
      for (int64_t i = s + 1; i < e; i++) {                                                \
        int64_t v = ix[i];                                                                 \
        int64_t j = i;                                                                     \
        while (j > s && LESS(k[v], k[ix[j - 1]])) { ix[j] = ix[j - 1]; j--; }              \
        ix[j] = v;                                                                         \
      }                                                                                    \
    }                                                                                      \
    int64_t *src = ix, *dst = t;                                                           \
    for (int64_t w = RUN; w < n; w *= 2) {                                                 \
      for (int64_t lo = 0; lo < n; lo += 2 * w) {                                          \
        const int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n; \
        int64_t i = lo, j = mid, q = lo;                                                   \
        while (i < mid && j < hi) dst[q++] = LESS(k[src[j]], k[src[i]]) ? src[j++] : src[i++]; \
        while (i < mid) dst[q++] = src[i++];                                               \
        while (j < hi) dst[q++] = src[j++];                                                \
      }                                                                                    \
      int64_t *sw = src; src = dst; dst = sw;                                              \
    }                                                                                      \
    if (src != ix) memcpy(ix, src, sizeof(int64_t) * (size_t)n);                           \
  }                                                                                        \
  /* first i in [0, n) with !(a[i] < v) (left) or v < a[i] (right); a strided */           \
  static int64_t bsearch_##NAME(const T *a, int64_t st, int64_t n, T v, int right) {       \
    int64_t lo = 0, hi = n;                                                                \
    while (lo < hi) {                                                                      \
      const int64_t mid = lo + (hi - lo) / 2;                                              \
      const T x = a[mid * st];                                                             \
      if (right ? !LESS(v, x) : LESS(x, v)) lo = mid + 1;                                  \
      else hi = mid;                                                                       \
    }                                                                                      \
    return lo;                                                                             \
  }

SORT_FUNCS(f64, double, LESS_F)
SORT_FUNCS(f32, float, LESS_F)
SORT_FUNCS(i64, int64_t, LESS_I)
SORT_FUNCS(i32, int32_t, LESS_I)
SORT_FUNCS(u8, uint8_t, LESS_I)

static int sort_variant(ty_task_ctx *ctx) {
  const sort_args *a = ctx->scalars;
  const ty_tile *to = &ctx->args[0], *tx = &ctx->args[1];
  const ty_dtype t = tx->dtype;
  const size_t es = ty_dtype_size(t), oes = ty_dtype_size(to->dtype);
  const int64_t m = to->shape[1];
  if (m == 0) return 0;
  char *buf = malloc(es * (size_t)m * 2);
  int64_t *ix = a->mode ? malloc(sizeof(int64_t) * (size_t)m * 2) : NULL;
  if (!buf || (a->mode && !ix)) {
    free(buf);
    free(ix);
    return ty_ctx_fail(ctx, "sort: no memory for a line of %lld elements", (long long)m);
  }
  char *tmp = buf + es * (size_t)m;
  for (int64_t o = 0; o < to->shape[0]; o++) {
    for (int64_t q = 0; q < to->shape[2]; q++) {
      const char *src = tx->data + (o * tx->strides[0] + q * tx->strides[2]) * (int64_t)es;
      const int64_t xs = tx->strides[1] * (int64_t)es;
      for (int64_t i = 0; i < m; i++) memcpy(buf + (size_t)i * es, src + i * xs, es);
      char *dst = to->data + (o * to->strides[0] + q * to->strides[2]) * (int64_t)oes;
      const int64_t os = to->strides[1] * (int64_t)oes;
      if (a->mode == 0) {
        switch (t) {
        case TY_F64: vsort_f64((double *)buf, (double *)tmp, m); break;
        case TY_F32: vsort_f32((float *)buf, (float *)tmp, m); break;
        case TY_I64: vsort_i64((int64_t *)buf, (int64_t *)tmp, m); break;
        case TY_I32: vsort_i32((int32_t *)buf, (int32_t *)tmp, m); break;
        default: vsort_u8((uint8_t *)buf, (uint8_t *)tmp, m); break;
        }
        for (int64_t i = 0; i < m; i++) memcpy(dst + i * os, buf + (size_t)i * es, es);
      } else {
        for (int64_t i = 0; i < m; i++) ix[i] = i;
        int64_t *it = ix + m;
        switch (t) {
        case TY_F64: isort_f64(ix, it, (const double *)buf, m); break;
        case TY_F32: isort_f32(ix, it, (const float *)buf, m); break;
        case TY_I64: isort_i64(ix, it, (const int64_t *)buf, m); break;
        case TY_I32: isort_i32(ix, it, (const int32_t *)buf, m); break;
        default: isort_u8(ix, it, (const uint8_t *)buf, m); break;
        }
        for (int64_t i = 0; i < m; i++) *(int64_t *)(dst + i * os) = ix[i] + a->base;
      }
    }
  }
  free(ix);
  free(buf);
  return 0;
}

static int search_variant(ty_task_ctx *ctx) {
  const search_args *a = ctx->scalars;
  const ty_tile *to = &ctx->args[0], *tv = &ctx->args[1], *ta = &ctx->args[2];
  const int64_t n = ta->shape[0], as = ta->strides[0], vs = tv->strides[0], os = to->strides[0];
  const int right = a->mode == 1;
  for (int64_t i = 0; i < to->shape[0]; i++) {
    int64_t p = 0;
    bool found = false;
#define SEARCH(NAME, T)                                                                   \
  {                                                                                       \
    const T v = ((const T *)tv->data)[i * vs];                                            \
    p = bsearch_##NAME((const T *)ta->data, as, n, v, right);                             \
    found = p < n && ((const T *)ta->data)[p * as] == v;                                  \
  }                                                                                       \
  break;
    switch (tv->dtype) {
    case TY_F64: SEARCH(f64, double)
    case TY_F32: SEARCH(f32, float)
    case TY_I64: SEARCH(i64, int64_t)
    case TY_I32: SEARCH(i32, int32_t)
    default: SEARCH(u8, uint8_t)
    }
#undef SEARCH
    if (a->mode == 2) ((uint8_t *)to->data)[i * os] = found;
    else ((int64_t *)to->data)[i * os] = p + a->base;
  }
  return 0;
}

ty_status ty__register_sort_ops(ty_runtime *rt) {
  ty_task_desc s = {.name = "sort", .cpu = sort_variant};
  ty_status st = ty_task_register(rt, &s, NULL);
  ty_task_desc q = {.name = "searchsorted", .cpu = search_variant};
  if (!st) st = ty_task_register(rt, &q, NULL);
  return st;
}

/* ---- calls ---------------------------------------------------------------------- */

static ty_status launch(ty_runtime *rt, const char *fn, const char *task, int ndim,
                        const int64_t *dom, int nargs, const ty_arg *args, const void *sc,
                        size_t scb, uint32_t nosplit) {
  const ty_task *t = ty_task_find(rt, task);
  if (!t) return ty__fail(rt, TY_ENOTFOUND, "%s: the %s task is not registered", fn, task);
  ty_launch_desc d = {.task = t, .ndim = ndim, .domain = dom, .nargs = nargs, .args = args,
                      .scalars = sc, .scalar_bytes = scb, .nosplit = nosplit};
  return ty_launch(rt, &d);
}

static ty_arg arg(ty_store *s, ty_privilege p, ty_projection pr) {
  return (ty_arg){.store = s, .priv = p, .redop = TY_REDOP_NONE, .proj = pr};
}

static int64_t prod(int n, const int64_t *s) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) p *= s[i];
  return p;
}

/* s's elements in C order under `shape`: a view when dense, else a copy. */
static ty_status dense(ty_runtime *rt, ty_store *s, int ndim, const int64_t *shape,
                       ty_store **out) {
  *out = NULL;
  if (ty_store_is_contiguous(s)) return ty_store_reshape(rt, s, ndim, shape, out);
  ty_store *c = NULL;
  ty_status st = ty_store_create(rt, s->dtype, s->ndim, s->shape, &c);
  if (!st) st = ty_copy(rt, c, s);
  if (!st) st = ty_store_reshape(rt, c, ndim, shape, out);
  ty_store_release(c);
  return st;
}

static ty_status check(ty_runtime *rt, const char *fn, ty_store *a, ty_store *b) {
  if (rt->destroyed) return ty__fail(rt, TY_EINVAL, "%s: the runtime was destroyed", fn);
  if (!a) return ty__fail(rt, TY_EINVAL, "%s: a store is NULL", fn);
  if (a->rt != rt || (b && b->rt != rt))
    return ty__fail(rt, TY_EINVAL, "%s: a store belongs to another runtime", fn);
  return TY_OK;
}

static ty_status sort_common(ty_runtime *rt, const char *fn, ty_store *x, int axis, int mode,
                             int64_t base, ty_store **out) {
  if (!rt) return TY_EINVAL;
  if (!out) return ty__fail(rt, TY_EINVAL, "%s: out is NULL", fn);
  *out = NULL;
  ty_status st = check(rt, fn, x, NULL);
  if (st) return st;
  if (x->ndim == 0) return ty__fail(rt, TY_ESHAPE, "%s: x is 0-d (nothing to sort along)", fn);
  if (axis < 0 || axis >= x->ndim)
    return ty__fail(rt, TY_EINVAL, "%s: axis %d is out of range for rank %d", fn, axis, x->ndim);
  const int64_t o = prod(axis, x->shape), m = x->shape[axis];
  const int64_t r = prod(x->ndim - axis - 1, x->shape + axis + 1);
  ty_store *res = NULL, *ov = NULL, *xv = NULL;
  st = ty_store_create(rt, mode ? TY_I64 : x->dtype, x->ndim, x->shape, &res);
  if (!st && o * m * r > 0) {
    const int64_t dom[3] = {o, m, r};
    st = ty_store_reshape(rt, res, 3, dom, &ov);
    if (!st) st = dense(rt, x, 3, dom, &xv);
    if (!st) {
      sort_args sa = {.mode = mode, .base = base};
      ty_arg args[2] = {arg(ov, TY_PRIV_OUT, TY_PROJ_ALIGNED), arg(xv, TY_PRIV_IN, TY_PROJ_ALIGNED)};
      st = launch(rt, fn, "sort", 3, dom, 2, args, &sa, sizeof sa, 1u << 1);
    }
  }
  ty_store_release(xv);
  ty_store_release(ov);
  if (st) {
    ty_store_release(res);
    return st;
  }
  *out = res;
  return TY_OK;
}

ty_status ty_sort(ty_runtime *rt, ty_store *x, int axis, ty_store **out) {
  return sort_common(rt, "ty_sort", x, axis, 0, 0, out);
}

ty_status ty_argsort(ty_runtime *rt, ty_store *x, int axis, int64_t base, ty_store **out) {
  return sort_common(rt, "ty_argsort", x, axis, 1, base, out);
}

/* v's elements searched in the 1-D a, both in their promoted dtype. */
static ty_status search(ty_runtime *rt, const char *fn, ty_store *a, ty_store *v, int mode,
                        int64_t base, ty_store **out) {
  if (!rt) return TY_EINVAL;
  if (!out) return ty__fail(rt, TY_EINVAL, "%s: out is NULL", fn);
  *out = NULL;
  ty_status st = check(rt, fn, a, v);
  if (st) return st;
  if (!v) return ty__fail(rt, TY_EINVAL, "%s: a store is NULL", fn);
  if (a->ndim != 1)
    return ty__fail(rt, TY_ESHAPE, "%s: the sorted store must be 1-D, got %d dimensions", fn, a->ndim);
  ty_dtype t = ty_dtype_promote(a->dtype, v->dtype);
  if (t == TY_BOOL) t = TY_U8;
  ty_store *ac = NULL, *vc = NULL, *vd = NULL, *res = NULL, *ov = NULL;
  const int64_t k = v->size;
  st = ty_store_create(rt, mode == 2 ? TY_BOOL : TY_I64, v->ndim, v->shape, &res);
  if (!st && k > 0) {
    if (a->dtype == t) {
      ac = a;
      ty_store_retain(a);
    } else {
      st = ty_cast(rt, a, t, &ac);
    }
    if (!st) {
      if (v->dtype == t) {
        vc = v;
        ty_store_retain(v);
      } else {
        st = ty_cast(rt, v, t, &vc);
      }
    }
    if (!st) st = dense(rt, vc, 1, &k, &vd);
    if (!st) st = ty_store_reshape(rt, res, 1, &k, &ov);
    if (!st) {
      search_args sa = {.mode = mode, .base = base};
      ty_arg args[3] = {arg(ov, TY_PRIV_OUT, TY_PROJ_ALIGNED), arg(vd, TY_PRIV_IN, TY_PROJ_ALIGNED),
                        arg(ac, TY_PRIV_IN, TY_PROJ_WHOLE)};
      st = launch(rt, fn, "searchsorted", 1, &k, 3, args, &sa, sizeof sa, 0);
    }
  }
  ty_store_release(ov);
  ty_store_release(vd);
  ty_store_release(vc);
  ty_store_release(ac);
  if (st) {
    ty_store_release(res);
    return st;
  }
  *out = res;
  return TY_OK;
}

ty_status ty_searchsorted(ty_runtime *rt, ty_store *a, ty_store *v, bool right, int64_t base,
                          ty_store **out) {
  return search(rt, "ty_searchsorted", a, v, right ? 1 : 0, base, out);
}

ty_status ty_isin(ty_runtime *rt, ty_store *x, ty_store *test, ty_store **out) {
  const char *fn = "ty_isin";
  if (!rt) return TY_EINVAL;
  if (!out) return ty__fail(rt, TY_EINVAL, "%s: out is NULL", fn);
  *out = NULL;
  ty_status st = check(rt, fn, x, test);
  if (st) return st;
  if (!test) return ty__fail(rt, TY_EINVAL, "%s: test is NULL", fn);
  const int64_t n = test->size;
  ty_store *flat = NULL, *sorted = NULL;
  st = dense(rt, test, 1, &n, &flat);
  if (!st && n > 0) st = ty_sort(rt, flat, 0, &sorted);
  if (!st && n == 0) st = ty_full(rt, TY_BOOL, x->ndim, x->shape, 0, out);
  else if (!st) st = search(rt, fn, sorted, x, 2, 0, out);
  ty_store_release(sorted);
  ty_store_release(flat);
  return st;
}

ty_status ty_unique(ty_runtime *rt, ty_store *x, int64_t base, ty_store **values,
                    ty_store **index, ty_store **inverse, ty_store **counts) {
  const char *fn = "ty_unique";
  if (!rt) return TY_EINVAL;
  if (!values) return ty__fail(rt, TY_EINVAL, "%s: values is NULL", fn);
  *values = NULL;
  if (index) *index = NULL;
  if (inverse) *inverse = NULL;
  if (counts) *counts = NULL;
  ty_status st = check(rt, fn, x, NULL);
  if (st) return st;
  const int64_t n = x->size, n1 = n > 0 ? n - 1 : 0;
  ty_store *flat = NULL, *perm = NULL, *sorted = NULL, *flags = NULL, *head = NULL, *tail = NULL,
           *s_hi = NULL, *s_lo = NULL, *ne = NULL, *nan_hi = NULL, *nan_lo = NULL, *both = NULL,
           *nb = NULL, *keep = NULL, *vals = NULL, *idx0 = NULL, *bs = NULL, *l = NULL, *r = NULL;
  st = dense(rt, x, 1, &n, &flat);
  if (!st && n == 0) {
    const int64_t z = 0;
    st = ty_store_create(rt, x->dtype, 1, &z, &vals);
    if (!st && index) st = ty_store_create(rt, TY_I64, 1, &z, index);
    if (!st && inverse) st = ty_store_create(rt, TY_I64, 1, &z, inverse);
    if (!st && counts) st = ty_store_create(rt, TY_I64, 1, &z, counts);
    goto done;
  }
  if (!st) st = ty_argsort(rt, flat, 0, 0, &perm);
  if (!st) st = ty_take(rt, flat, perm, 0, 0, &sorted);
  /* flags[0] = true; flags[i] = sorted[i] != sorted[i - 1] unless both are NaN */
  if (!st) st = ty_store_create(rt, TY_BOOL, 1, &n, &flags);
  if (!st) st = ty_store_slice(rt, flags, 0, 0, 1, 1, &head);
  if (!st) st = ty_fill(rt, head, 1);
  if (!st && n > 1) {
    st = ty_store_slice(rt, flags, 0, 1, n, 1, &tail);
    if (!st) st = ty_store_slice(rt, sorted, 0, 1, n, 1, &s_hi);
    if (!st) st = ty_store_slice(rt, sorted, 0, 0, n1, 1, &s_lo);
    if (!st) st = ty_binary(rt, TY_OP_NE, s_hi, s_lo, &ne);
    if (!st && ty_dtype_is_float(x->dtype)) {
      st = ty_binary(rt, TY_OP_NE, s_hi, s_hi, &nan_hi);
      if (!st) st = ty_binary(rt, TY_OP_NE, s_lo, s_lo, &nan_lo);
      if (!st) st = ty_binary(rt, TY_OP_AND, nan_hi, nan_lo, &both);
      if (!st) st = ty_unary(rt, TY_OP_NOT, both, &nb);
      if (!st) st = ty_binary(rt, TY_OP_AND, ne, nb, &keep);
    }
    if (!st) st = ty_copy(rt, tail, keep ? keep : ne);
  }
  if (!st) st = ty_compress(rt, sorted, flags, &vals);
  if (!st && index) {
    st = ty_compress(rt, perm, flags, &idx0);
    if (!st) st = ty_scalar_i64(rt, TY_I64, base, &bs);
    if (!st) st = ty_binary(rt, TY_OP_ADD, idx0, bs, index);
  }
  if (!st && inverse) st = search(rt, fn, vals, flat, 0, base, inverse);
  if (!st && counts) {
    st = search(rt, fn, sorted, vals, 0, 0, &l);
    if (!st) st = search(rt, fn, sorted, vals, 1, 0, &r);
    if (!st) st = ty_binary(rt, TY_OP_SUB, r, l, counts);
  }
done:;
  ty_store *all[] = {flat, perm, sorted, flags, head, tail, s_hi, s_lo, ne, nan_hi, nan_lo, both,
                     nb, keep, idx0, bs, l, r};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ty_store_release(all[i]);
  if (st) {
    ty_store_release(vals);
    if (index) { ty_store_release(*index); *index = NULL; }
    if (inverse) { ty_store_release(*inverse); *inverse = NULL; }
    if (counts) { ty_store_release(*counts); *counts = NULL; }
    return st;
  }
  *values = vals;
  return TY_OK;
}
