/*
 * ops_sort.c — sort, argsort, searchsorted, isin and unique (tycho/sort.h):
 * the tasks "sort" and "searchsorted", and unique composed from them and
 * ty_compress.
 *
 *   - sort   domain (o, m, r): x viewed around the sorted axis; the axis (dim
 *            1) is never split, so a piece owns whole lines and sorts each one
 *            on its own: a stable bottom-up merge sort (insertion-sorted runs
 *            of 32, then merges; m extra elements of scratch per line;
 *            argsort sorts (key, position) pairs so that merges read in order). The
 *            comparison puts NaN last (numpy's). Lines are independent, so
 *            the result does not depend on the pieces. One long line (a 1-D
 *            sort of >= 2 SORT_CHUNK elements) is not this task: its values
 *            of a 4- or 8-byte dtype go to the sample sort of
 *            ops_sort_bucket.c, the rest (argsort, 1- and 2-byte dtypes) to
 *            the runs and merges below (sort_1d).
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

/* vsort_T: stable sort of a[0..n) (t: scratch of n); psort_T: the same for
 * (key, position) pairs; argsort_line_T: one line's positions + base. */
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
  typedef struct pair_##NAME {                                                             \
    T k;                                                                                   \
    int64_t i;                                                                             \
  } pair_##NAME;                                                                           \
  /* argsort: (key, position) pairs sorted by key, so merges read memory in order */       \
  static void psort_##NAME(pair_##NAME *a, pair_##NAME *t, int64_t n) {                    \
    for (int64_t s = 0; s < n; s += RUN) {                                                 \
      const int64_t e = s + RUN < n ? s + RUN : n;                                         \
      for (int64_t i = s + 1; i < e; i++) {                                                \
        pair_##NAME v = a[i];                                                              \
        int64_t j = i;                                                                     \
        while (j > s && LESS(v.k, a[j - 1].k)) { a[j] = a[j - 1]; j--; }                  \
        a[j] = v;                                                                          \
      }                                                                                    \
    }                                                                                      \
    pair_##NAME *src = a, *dst = t;                                                        \
    for (int64_t w = RUN; w < n; w *= 2) {                                                 \
      for (int64_t lo = 0; lo < n; lo += 2 * w) {                                          \
        const int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n; \
        int64_t i = lo, j = mid, q = lo;                                                   \
        while (i < mid && j < hi) dst[q++] = LESS(src[j].k, src[i].k) ? src[j++] : src[i++]; \
        while (i < mid) dst[q++] = src[i++];                                               \
        while (j < hi) dst[q++] = src[j++];                                                \
      }                                                                                    \
      pair_##NAME *sw = src; src = dst; dst = sw;                                          \
    }                                                                                      \
    if (src != a) memcpy(a, src, sizeof(pair_##NAME) * (size_t)n);                         \
  }                                                                                        \
  static void argsort_line_##NAME(const char *src, int64_t xs, char *dst, int64_t os,      \
                                  int64_t m, int64_t base, void *scratch) {                \
    pair_##NAME *p = scratch, *t = p + m;                                                  \
    for (int64_t i = 0; i < m; i++) {                                                      \
      memcpy(&p[i].k, src + i * xs, sizeof(T));                                            \
      p[i].i = i;                                                                          \
    }                                                                                      \
    psort_##NAME(p, t, m);                                                                 \
    for (int64_t i = 0; i < m; i++) *(int64_t *)(dst + i * os) = p[i].i + base;            \
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
/* the integer dtypes added later, listed once for the switches below */
#define EXT_INTS(X)                                                                        \
  X(i8, int8_t, TY_I8) X(i16, int16_t, TY_I16) X(u16, uint16_t, TY_U16)                    \
  X(u32, uint32_t, TY_U32) X(u64, uint64_t, TY_U64)
#define X(NAME, T, E) SORT_FUNCS(NAME, T, LESS_I)
EXT_INTS(X)
#undef X

/* ---- the 1-D parallel sort: sorted runs, then rounds of pairwise merges ---------
 *
 * A long single line (a 1-D sort) is cut into P chunks of C elements (P and
 * C depend on n only). "sort_runs" (domain (P, C), a piece = whole chunks)
 * sorts each chunk into a scratch store; then each round of "sort_merge"
 * (domain (n) over a fresh output, any pieces) merges neighbouring runs of
 * w chunks into runs of 2w. A piece that writes outputs [lo, hi) of a pair
 * of runs finds where its part starts in each run by binary search on the
 * merge path (co-rank), so pieces never depend on each other. Ties take the
 * left run first: the merges are stable, and a stable sort has one answer,
 * so every piece count gives the same bits as the one-line sort. argsort
 * carries (key, position) in two stores; positions get + base in the last
 * round. */

typedef struct runs_args {
  int64_t n, C;
  int32_t mode, pad;
} runs_args;

typedef struct merge_args {
  int64_t n, W; /* run width in elements */
  int32_t mode, last;
  int64_t base;
} merge_args;

#define MERGE_FUNCS(NAME, T, LESS)                                                         \
  /* co-rank: how many of the first d merged elements come from L */                      \
  static int64_t corank_##NAME(const T *L, int64_t nl, const T *R, int64_t nr, int64_t d) {  \
    int64_t lo = d > nr ? d - nr : 0, hi = d < nl ? d : nl;                                \
    while (lo < hi) {                                                                      \
      const int64_t i = lo + (hi - lo) / 2, k = d - i;                                     \
      if (k > 0 && !LESS(R[k - 1], L[i])) lo = i + 1;                                      \
      else hi = i;                                                                         \
    }                                                                                      \
    return lo;                                                                             \
  }                                                                                        \
  static void merge_piece_##NAME(const T *key, const int64_t *pos, T *okey, int64_t *opos,  \
                                 const merge_args *a, int64_t lo, int64_t hi) {            \
    int64_t q = lo;                                                                        \
    while (q < hi) {                                                                       \
      const int64_t ps = q / (2 * a->W) * (2 * a->W);                                      \
      const int64_t mid = ps + a->W < a->n ? ps + a->W : a->n;                             \
      const int64_t pe = ps + 2 * a->W < a->n ? ps + 2 * a->W : a->n;                      \
      const int64_t end = pe < hi ? pe : hi;                                               \
      const T *L = key + ps, *R = key + mid;                                               \
      const int64_t nl = mid - ps, nr = pe - mid;                                          \
      int64_t i = corank_##NAME(L, nl, R, nr, q - ps), k = q - ps - i;                     \
      for (; q < end; q++) {                                                               \
        const bool right = i >= nl || (k < nr && LESS(R[k], L[i]));                        \
        const int64_t from = right ? mid + k++ : ps + i++;                                 \
        okey[q - lo] = key[from];                                                          \
        if (opos) opos[q - lo] = pos[from] + (a->last ? a->base : 0);                      \
      }                                                                                    \
    }                                                                                      \
  }

MERGE_FUNCS(f64, double, LESS_F)
MERGE_FUNCS(f32, float, LESS_F)
MERGE_FUNCS(i64, int64_t, LESS_I)
MERGE_FUNCS(i32, int32_t, LESS_I)
MERGE_FUNCS(u8, uint8_t, LESS_I)
#define X(NAME, T, E) MERGE_FUNCS(NAME, T, LESS_I)
EXT_INTS(X)
#undef X

/* args: keys out (P, C), [positions out (P, C)], x WHOLE (n, dense) */
static int runs_variant(ty_task_ctx *ctx) {
  const runs_args *a = ctx->scalars;
  const ty_tile *tk = &ctx->args[0], *tp = a->mode ? &ctx->args[1] : NULL;
  const ty_tile *tx = &ctx->args[a->mode ? 2 : 1];
  const ty_dtype t = tx->dtype;
  const size_t es = ty_dtype_size(t);
  char *buf = malloc((a->mode ? 16 : es) * (size_t)a->C * 2);
  if (!buf) return ty_ctx_fail(ctx, "sort: no memory for a run of %lld elements", (long long)a->C);
  for (int64_t c = ctx->lo[0]; c < ctx->hi[0]; c++) {
    const int64_t s0 = c * a->C, len = s0 + a->C < a->n ? a->C : a->n - s0;
    const char *src = tx->data + s0 * (int64_t)es;
    char *dk = tk->data + (c - ctx->lo[0]) * tk->strides[0] * (int64_t)es;
    if (a->mode) {
      int64_t *dp = (int64_t *)tp->data + (c - ctx->lo[0]) * tp->strides[0];
      /* positions first (as argsort_line), then the keys in the same order */
      switch (t) {
#define ARUN(NAME, TT)                                                                     \
  {                                                                                        \
    pair_##NAME *pp = (pair_##NAME *)buf;                                                  \
    for (int64_t i = 0; i < len; i++) {                                                    \
      memcpy(&pp[i].k, src + i * (int64_t)es, sizeof(TT));                                 \
      pp[i].i = s0 + i;                                                                    \
    }                                                                                      \
    psort_##NAME(pp, pp + len, len);                                                       \
    for (int64_t i = 0; i < len; i++) {                                                    \
      ((TT *)dk)[i] = pp[i].k;                                                             \
      dp[i] = pp[i].i;                                                                     \
    }                                                                                      \
  }                                                                                        \
  break;
      case TY_F64: ARUN(f64, double)
      case TY_F32: ARUN(f32, float)
      case TY_I64: ARUN(i64, int64_t)
      case TY_I32: ARUN(i32, int32_t)
#define X(NAME, T, E) case E: ARUN(NAME, T)
      EXT_INTS(X)
#undef X
      default: ARUN(u8, uint8_t)
#undef ARUN
      }
      continue;
    }
    memcpy(buf, src, es * (size_t)len);
    char *tmp = buf + es * (size_t)a->C;
    switch (t) {
    case TY_F64: vsort_f64((double *)buf, (double *)tmp, len); break;
    case TY_F32: vsort_f32((float *)buf, (float *)tmp, len); break;
    case TY_I64: vsort_i64((int64_t *)buf, (int64_t *)tmp, len); break;
    case TY_I32: vsort_i32((int32_t *)buf, (int32_t *)tmp, len); break;
#define X(NAME, T, E) case E: vsort_##NAME((T *)buf, (T *)tmp, len); break;
    EXT_INTS(X)
#undef X
    default: vsort_u8((uint8_t *)buf, (uint8_t *)tmp, len); break;
    }
    memcpy(dk, buf, es * (size_t)len);
  }
  free(buf);
  return 0;
}

/* args: keys out (n), [positions out (n)], keys in WHOLE, [positions in WHOLE] */
static int merge_variant(ty_task_ctx *ctx) {
  const merge_args *a = ctx->scalars;
  const int np = a->mode ? 2 : 1;
  const ty_tile *ok = &ctx->args[0], *op = a->mode ? &ctx->args[1] : NULL;
  const ty_tile *ik = &ctx->args[np], *ip = a->mode ? &ctx->args[np + 1] : NULL;
  const int64_t lo = ctx->lo[0], hi = ctx->hi[0];
  int64_t *opos = op ? (int64_t *)op->data : NULL;
  const int64_t *ipos = ip ? (const int64_t *)ip->data : NULL;
  switch (ik->dtype) {
  case TY_F64: merge_piece_f64((const double *)ik->data, ipos, (double *)ok->data, opos, a, lo, hi); break;
  case TY_F32: merge_piece_f32((const float *)ik->data, ipos, (float *)ok->data, opos, a, lo, hi); break;
  case TY_I64: merge_piece_i64((const int64_t *)ik->data, ipos, (int64_t *)ok->data, opos, a, lo, hi); break;
  case TY_I32: merge_piece_i32((const int32_t *)ik->data, ipos, (int32_t *)ok->data, opos, a, lo, hi); break;
#define X(NAME, T, E)                                                                      \
  case E: merge_piece_##NAME((const T *)ik->data, ipos, (T *)ok->data, opos, a, lo, hi); break;
  EXT_INTS(X)
#undef X
  default: merge_piece_u8((const uint8_t *)ik->data, ipos, (uint8_t *)ok->data, opos, a, lo, hi); break;
  }
  return 0;
}

static int sort_variant(ty_task_ctx *ctx) {
  const sort_args *a = ctx->scalars;
  const ty_tile *to = &ctx->args[0], *tx = &ctx->args[1];
  const ty_dtype t = tx->dtype;
  const size_t es = ty_dtype_size(t), oes = ty_dtype_size(to->dtype);
  const int64_t m = to->shape[1];
  if (m == 0) return 0;
  /* values: 2 lines of T; positions: 2 lines of 16-byte pairs */
  char *buf = malloc((a->mode ? 16 : es) * (size_t)m * 2);
  if (!buf) return ty_ctx_fail(ctx, "sort: no memory for a line of %lld elements", (long long)m);
  char *tmp = buf + es * (size_t)m;
  const int64_t xs = tx->strides[1] * (int64_t)es, os = to->strides[1] * (int64_t)oes;
  for (int64_t o = 0; o < to->shape[0]; o++) {
    for (int64_t q = 0; q < to->shape[2]; q++) {
      const char *src = tx->data + (o * tx->strides[0] + q * tx->strides[2]) * (int64_t)es;
      char *dst = to->data + (o * to->strides[0] + q * to->strides[2]) * (int64_t)oes;
      if (a->mode) {
        switch (t) {
        case TY_F64: argsort_line_f64(src, xs, dst, os, m, a->base, buf); break;
        case TY_F32: argsort_line_f32(src, xs, dst, os, m, a->base, buf); break;
        case TY_I64: argsort_line_i64(src, xs, dst, os, m, a->base, buf); break;
        case TY_I32: argsort_line_i32(src, xs, dst, os, m, a->base, buf); break;
#define X(NAME, T, E) case E: argsort_line_##NAME(src, xs, dst, os, m, a->base, buf); break;
        EXT_INTS(X)
#undef X
        default: argsort_line_u8(src, xs, dst, os, m, a->base, buf); break;
        }
        continue;
      }
      for (int64_t i = 0; i < m; i++) memcpy(buf + (size_t)i * es, src + i * xs, es);
      switch (t) {
      case TY_F64: vsort_f64((double *)buf, (double *)tmp, m); break;
      case TY_F32: vsort_f32((float *)buf, (float *)tmp, m); break;
      case TY_I64: vsort_i64((int64_t *)buf, (int64_t *)tmp, m); break;
      case TY_I32: vsort_i32((int32_t *)buf, (int32_t *)tmp, m); break;
#define X(NAME, T, E) case E: vsort_##NAME((T *)buf, (T *)tmp, m); break;
      EXT_INTS(X)
#undef X
      default: vsort_u8((uint8_t *)buf, (uint8_t *)tmp, m); break;
      }
      for (int64_t i = 0; i < m; i++) memcpy(dst + i * os, buf + (size_t)i * es, es);
    }
  }
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
#define X(NAME, T, E) case E: SEARCH(NAME, T)
    EXT_INTS(X)
#undef X
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
  ty_task_desc r = {.name = "sort_runs", .cpu = runs_variant};
  if (!st) st = ty_task_register(rt, &r, NULL);
  ty_task_desc m = {.name = "sort_merge", .cpu = merge_variant};
  if (!st) st = ty_task_register(rt, &m, NULL);
  return st;
}

/* ---- calls ---------------------------------------------------------------------- */


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


#define SORT_CHUNK ((int64_t)1 << 16) /* 64Ki elements per run at least: 512 KiB of f64 */
#define SORT_MAX_RUNS 64

/* The 1-D sort of the dense (n) store xd into *out (dtype of x, or i64
 * positions + base): sort_runs, then log2(P) rounds of sort_merge. */
static ty_status sort_1d(ty_runtime *rt, const char *fn, ty_store *xd, int mode, int64_t base,
                         ty_store **out) {
  const int64_t n = xd->size;
  int64_t P = (n + SORT_CHUNK - 1) / SORT_CHUNK;
  if (P > SORT_MAX_RUNS) P = SORT_MAX_RUNS;
  const int64_t C = (n + P - 1) / P, PC = P * C;
  ty_store *k0 = NULL, *p0 = NULL, *kv = NULL, *pv = NULL, *k1 = NULL, *p1 = NULL;
  ty_status st = ty_store_create(rt, xd->dtype, 1, &PC, &k0);
  if (!st && mode) st = ty_store_create(rt, TY_I64, 1, &PC, &p0);
  const int64_t dom[2] = {P, C};
  if (!st) st = ty_store_reshape(rt, k0, 2, dom, &kv);
  if (!st && mode) st = ty_store_reshape(rt, p0, 2, dom, &pv);
  if (!st) {
    runs_args ra = {.n = n, .C = C, .mode = mode};
    ty_arg args[3] = {ty__arg(kv, TY_PRIV_OUT, TY_PROJ_ALIGNED), ty__arg(pv, TY_PRIV_OUT, TY_PROJ_ALIGNED),
                      ty__arg(xd, TY_PRIV_IN, TY_PROJ_WHOLE)};
    if (!mode) args[1] = args[2];
    st = ty__launch_named(rt, fn, "sort_runs", 2, dom, mode ? 3 : 2, args, &ra, sizeof ra, 1u << 1);
  }
  ty_store_release(kv);
  ty_store_release(pv);
  for (int64_t w = C; !st && w < n; w *= 2) {
    const bool last = 2 * w >= n;
    st = ty_store_create(rt, xd->dtype, 1, &n, &k1);
    if (!st && mode) st = ty_store_create(rt, TY_I64, 1, &n, &p1);
    if (!st) {
      merge_args ma = {.n = n, .W = w, .mode = mode, .last = last, .base = base};
      ty_arg args[4] = {ty__arg(k1, TY_PRIV_OUT, TY_PROJ_ALIGNED), ty__arg(p1, TY_PRIV_OUT, TY_PROJ_ALIGNED),
                        ty__arg(k0, TY_PRIV_IN, TY_PROJ_WHOLE), ty__arg(p0, TY_PRIV_IN, TY_PROJ_WHOLE)};
      if (!mode) args[1] = args[2];
      st = ty__launch_named(rt, fn, "sort_merge", 1, &n, mode ? 4 : 2, args, &ma, sizeof ma, 0);
    }
    ty_store_release(k0);
    ty_store_release(p0);
    k0 = k1;
    p0 = p1;
    k1 = p1 = NULL;
  }
  if (!st && P == 1 && mode) { /* one run: its positions still need + base */
    ty_store *b = NULL, *r = NULL;
    st = ty_scalar_i64(rt, TY_I64, base, &b);
    if (!st) st = ty_binary(rt, TY_OP_ADD, p0, b, &r);
    ty_store_release(b);
    ty_store_release(p0);
    p0 = r;
  }
  ty_store *res = mode ? p0 : k0;
  ty_store *other = mode ? k0 : p0;
  ty_store_release(other);
  if (st) {
    ty_store_release(res);
    return st;
  }
  if (res->size != n) { /* P == 1 with padding cannot happen (C == n), but keep the shape */
    ty_store *v = NULL;
    st = ty_store_slice(rt, res, 0, 0, n, 1, &v);
    ty_store_release(res);
    if (st) return st;
    res = v;
  }
  *out = res;
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
  if (o == 1 && r == 1 && m >= 2 * SORT_CHUNK) { /* one long line: runs and merges */
    ty_store *xd = NULL, *flat = NULL;
    st = dense(rt, x, 1, &m, &xd);
    if (!st && !mode && ty__sort_bucketable(x->dtype)) st = ty__sort_1d_bucket(rt, fn, xd, &flat);
    else if (!st) st = sort_1d(rt, fn, xd, mode, base, &flat);
    if (!st) st = ty_store_reshape(rt, flat, x->ndim, x->shape, out);
    ty_store_release(flat);
    ty_store_release(xd);
    return st;
  }
  st = ty_store_create(rt, mode ? TY_I64 : x->dtype, x->ndim, x->shape, &res);
  if (!st && o * m * r > 0) {
    const int64_t dom[3] = {o, m, r};
    st = ty_store_reshape(rt, res, 3, dom, &ov);
    if (!st) st = dense(rt, x, 3, dom, &xv);
    if (!st) {
      sort_args sa = {.mode = mode, .base = base};
      ty_arg args[2] = {ty__arg(ov, TY_PRIV_OUT, TY_PROJ_ALIGNED), ty__arg(xv, TY_PRIV_IN, TY_PROJ_ALIGNED)};
      st = ty__launch_named(rt, fn, "sort", 3, dom, 2, args, &sa, sizeof sa, 1u << 1);
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
      ty_arg args[3] = {ty__arg(ov, TY_PRIV_OUT, TY_PROJ_ALIGNED), ty__arg(vd, TY_PRIV_IN, TY_PROJ_ALIGNED),
                        ty__arg(ac, TY_PRIV_IN, TY_PROJ_WHOLE)};
      st = ty__launch_named(rt, fn, "searchsorted", 1, &k, 3, args, &sa, sizeof sa, 0);
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
