/*
 * ops_mask.c — boolean-mask selection and integer-position gathers and
 * scatters (tycho/mask.h): the tasks mask_count, mask_compress, mask_expand,
 * take, put and index_check, and the calls that launch them.
 *
 * Every task here is an ordinary launch (it shows in explain) whose pieces
 * write disjoint elements, so results are the same bits under any piece
 * count, mode or processor count:
 *   - mask_count   domain (P, CHUNK): piece = a range of chunks; writes one
 *                  count per chunk (the counts are viewed with stride 0 along
 *                  the chunk, so that dim is never split and auto mode sizes
 *                  the launch by the mask, not by the P counts);
 *   - mask_compress domain (N, w) over the output: piece = ranks [lo, hi);
 *                  it finds the chunk of rank lo in the prefix (offsets) and
 *                  walks the mask from that chunk's start (<= CHUNK extra
 *                  reads per piece);
 *   - mask_expand  domain (m, r) over the rows of x: piece = rows [lo, hi);
 *                  rank of row lo = offsets[lo / CHUNK] + the count of the
 *                  chunk's rows before lo;
 *   - take         domain (o, k, r) over the output: a gather;
 *   - put          domain (o, m, r) over x (in/out): each piece walks all of
 *                  idx in order and writes the positions inside its range,
 *                  so the last of repeated positions wins (numpy's rule)
 *                  without any ordering between pieces. A long idx into one
 *                  line (o = r = 1, >= 65536 positions) goes instead through
 *                  the bucketed scatter of ops_scatter.c (put_bucket sorts
 *                  idx by destination window, chunk by chunk; put_apply
 *                  writes each window in index order), which reads idx once;
 *   - index_check  domain (C, CHUNK) over the positions: each chunk's first
 *                  bad one (or -1); a checked put reads these (whole) and
 *                  writes nothing when one is set, so the check and the put
 *                  run in one flush and a bad position changes nothing.
 * Inputs that are not dense are copied to dense stores first (a copy
 * launch), so the kernels see at most 3-D strided tiles.
 */
#include "internal.h"

#include "tycho/mask.h"

#include <stdlib.h>
#include <string.h>

#define L_CHUNK ((int64_t)TY_MASK_CHUNK)

typedef struct count_args {
  int64_t m; /* mask elements */
} count_args;

typedef struct compress_args {
  int64_t m, P, w, base;
  int32_t mode; /* 0: values (args[3] = x as (m, w)); 1: positions (w = ndim) */
  int32_t ndim;
  int64_t shape[TY_MAX_RANK]; /* the mask's shape (positions) */
} compress_args;

typedef struct expand_args {
  int64_t m, P, r;
} expand_args;

typedef struct take_args {
  int64_t m, base, k;
  int64_t along; /* 1: idx is (o, k, r) like the output (take_along_axis / put_along_axis) */
  int64_t gate;  /* put: > 0, args[3] holds `gate` index_check results; any bad one: no write */
} take_args;

typedef struct check_args {
  int64_t k, n, base; /* k positions of a dim of size n, counted from base */
} check_args;

static inline bool nonzero_at(const char *p, ty_dtype t) {
  switch (t) {
  case TY_F64: return *(const double *)p != 0.0; /* NaN is non-zero (numpy's) */
  case TY_F32: return *(const float *)p != 0.0f;
  case TY_I64: return *(const int64_t *)p != 0;
  case TY_I32: return *(const int32_t *)p != 0;
  case TY_U8:
  case TY_BOOL: return *(const uint8_t *)p != 0;
  default: return ty__load_i64(p, t) != 0; /* the integer dtypes added later */
  }
}

static inline int64_t load_int(const char *p, ty_dtype t) {
  switch (t) {
  case TY_I64: return *(const int64_t *)p;
  case TY_I32: return *(const int32_t *)p;
  case TY_U8: return *(const uint8_t *)p;
  case TY_BOOL: return *(const uint8_t *)p != 0;
  case TY_F64: return (int64_t)*(const double *)p;
  case TY_F32: return (int64_t)*(const float *)p;
  default: return ty__load_i64(p, t); /* the integer dtypes added later */
  }
}

static inline void copy_el(char *d, const char *s, size_t es) {
  switch (es) {
  case 8: memcpy(d, s, 8); break;
  case 4: memcpy(d, s, 4); break;
  case 1: *d = *s; break;
  default: memcpy(d, s, es);
  }
}

/* A position counted from base (negative from the end) -> 0-based, or -1. */
static inline int64_t norm_pos(int64_t p, int64_t n, int64_t base) {
  if (p < 0) return p >= -n ? p + n : -1;
  p -= base;
  return p >= 0 && p < n ? p : -1;
}

/* The 1-D mask tile a piece reads whole. */
typedef struct mask_view {
  const char *p;
  int64_t stride; /* bytes */
  ty_dtype t;
  bool bytes; /* bool/u8 with stride 1: the fast path */
} mask_view;

static mask_view mask_of(const ty_tile *tm) {
  mask_view v = {.p = tm->data, .t = tm->dtype};
  v.stride = tm->strides[0] * (int64_t)ty_dtype_size(tm->dtype);
  v.bytes = (v.t == TY_BOOL || v.t == TY_U8) && v.stride == 1;
  return v;
}

static inline bool mask_at(const mask_view *v, int64_t i) {
  return v->bytes ? ((const uint8_t *)v->p)[i] != 0 : nonzero_at(v->p + i * v->stride, v->t);
}

static int64_t count_range(const mask_view *v, int64_t a, int64_t b) {
  int64_t c = 0;
  if (v->bytes) {
    const uint8_t *p = (const uint8_t *)v->p;
    for (int64_t i = a; i < b; i++) c += p[i] != 0;
    return c;
  }
  for (int64_t i = a; i < b; i++) c += nonzero_at(v->p + i * v->stride, v->t);
  return c;
}

static int count_variant(ty_task_ctx *ctx) {
  const count_args *a = ctx->scalars;
  const ty_tile *tc = &ctx->args[0];
  const mask_view mv = mask_of(&ctx->args[1]);
  int64_t *cnt = (int64_t *)tc->data;
  for (int64_t c = ctx->lo[0]; c < ctx->hi[0]; c++) {
    const int64_t s = c * L_CHUNK, e = s + L_CHUNK < a->m ? s + L_CHUNK : a->m;
    cnt[(c - ctx->lo[0]) * tc->strides[0]] = count_range(&mv, s, e);
  }
  return 0;
}

/* The chunk that holds rank r: the largest c < P with off[c] <= r (empty
 * chunks before it share its offset; the last of them is the one). */
static int64_t chunk_of_rank(const int64_t *off, int64_t P, int64_t r) {
  int64_t c0 = 0, c1 = P - 1;
  while (c0 < c1) {
    const int64_t mid = c0 + (c1 - c0 + 1) / 2;
    if (off[mid] <= r) c0 = mid;
    else c1 = mid - 1;
  }
  return c0;
}

static int compress_variant(ty_task_ctx *ctx) {
  const compress_args *a = ctx->scalars;
  const ty_tile *to = &ctx->args[0];
  const mask_view mv = mask_of(&ctx->args[1]);
  const int64_t *off = (const int64_t *)ctx->args[2].data; /* dense, P + 1 entries */
  const int64_t lo = ctx->lo[0], hi = ctx->hi[0];
  int64_t c = chunk_of_rank(off, a->P, lo);
  int64_t rank = off[c], i = c * L_CHUNK;
  const size_t oes = ty_dtype_size(to->dtype);
  const int64_t os0 = to->strides[0] * (int64_t)oes, os1 = to->strides[1] * (int64_t)oes;
  if (a->mode == 0) {
    const ty_tile *tx = &ctx->args[3];
    const int64_t xs0 = tx->strides[0] * (int64_t)oes, xs1 = tx->strides[1] * (int64_t)oes;
    const int64_t w = a->w;
    for (; rank < hi && i < a->m; i++) {
      if (!mask_at(&mv, i)) continue;
      if (rank >= lo) {
        char *d = to->data + (rank - lo) * os0;
        const char *s = tx->data + i * xs0;
        if (w == 1) copy_el(d, s, oes);
        else
          for (int64_t j = 0; j < w; j++) copy_el(d + j * os1, s + j * xs1, oes);
      }
      rank++;
    }
    return 0;
  }
  /* positions: unravel i over the mask's shape */
  for (; rank < hi && i < a->m; i++) {
    if (!mask_at(&mv, i)) continue;
    if (rank >= lo) {
      char *d = to->data + (rank - lo) * os0;
      int64_t rest = i;
      for (int k = a->ndim - 1; k >= 0; k--) {
        const int64_t n = a->shape[k];
        *(int64_t *)(d + k * os1) = rest % n + a->base;
        rest /= n;
      }
    }
    rank++;
  }
  return 0;
}

static int expand_variant(ty_task_ctx *ctx) {
  const expand_args *a = ctx->scalars;
  const ty_tile *tt = &ctx->args[0], *tv = &ctx->args[3];
  const mask_view mv = mask_of(&ctx->args[1]);
  const int64_t *off = (const int64_t *)ctx->args[2].data;
  const int64_t lo = ctx->lo[0], hi = ctx->hi[0], r = a->r;
  const int64_t c = lo / L_CHUNK;
  int64_t rank = off[c] + count_range(&mv, c * L_CHUNK, lo);
  const size_t es = ty_dtype_size(tt->dtype);
  const int64_t ts0 = tt->strides[0] * (int64_t)es, ts1 = tt->strides[1] * (int64_t)es;
  const int64_t vs0 = tv->strides[0] * (int64_t)es, vs1 = tv->strides[1] * (int64_t)es;
  for (int64_t i = lo; i < hi; i++) {
    char *d = tt->data + (i - lo) * ts0;
    if (mask_at(&mv, i)) {
      if (rank >= off[a->P])
        return ty_ctx_fail(ctx, "mask_expand: more true elements than values (%lld)",
                           (long long)off[a->P]);
      const char *s = tv->data + rank * vs0;
      for (int64_t j = 0; j < r; j++) copy_el(d + j * ts1, s + j * vs1, es);
      rank++;
    } else {
      for (int64_t j = 0; j < r; j++) memset(d + j * ts1, 0, es);
    }
  }
  return 0;
}

#define GATHER(T)                                                                          \
  for (int64_t o = 0; o < to->shape[0]; o++) {                                             \
    const int64_t *ip = (const int64_t *)ti->data + o * ti->strides[0];                    \
    const int64_t is = ti->strides[1], os = to->strides[1], xs = tx->strides[1];           \
    const T *xp = (const T *)tx->data + (ctx->lo[0] + o) * tx->strides[0];                 \
    T *op = (T *)to->data + o * to->strides[0];                                            \
    const int64_t m = a->m, base = a->base, n = to->shape[1];                              \
    for (int64_t q = 0; q < n; q++) {                                                      \
      const int64_t p = ip[q * is];                                                        \
      const int64_t j = p < 0 ? p + m : p - base;                                          \
      if ((uint64_t)j >= (uint64_t)m || (p >= 0 && p < base))                              \
        return ty_ctx_fail(ctx, "take: index %lld is out of range for a dimension of size %lld", \
                           (long long)p, (long long)m);                                    \
      op[q * os] = xp[j * xs];                                                             \
    }                                                                                      \
  }

static int take_variant(ty_task_ctx *ctx) {
  const take_args *a = ctx->scalars;
  const ty_tile *to = &ctx->args[0], *ti = &ctx->args[1], *tx = &ctx->args[2];
  const size_t es = ty_dtype_size(to->dtype), ies = ty_dtype_size(ti->dtype);
  const int64_t r = to->shape[2];
  if (a->along) { /* one position per output element */
    for (int64_t o = 0; o < to->shape[0]; o++)
      for (int64_t q = 0; q < to->shape[1]; q++)
        for (int64_t z = 0; z < r; z++) {
          const int64_t p = load_int(
              ti->data + (o * ti->strides[0] + q * ti->strides[1] + z * ti->strides[2]) * (int64_t)ies,
              ti->dtype);
          const int64_t j = norm_pos(p, a->m, a->base);
          if (j < 0)
            return ty_ctx_fail(ctx, "take: index %lld is out of range for a dimension of size %lld",
                               (long long)p, (long long)a->m);
          copy_el(to->data + (o * to->strides[0] + q * to->strides[1] + z * to->strides[2]) * (int64_t)es,
                  tx->data + ((ctx->lo[0] + o) * tx->strides[0] + j * tx->strides[1] +
                              (ctx->lo[2] + z) * tx->strides[2]) * (int64_t)es,
                  es);
        }
    return 0;
  }
  if (r == 1 && ti->dtype == TY_I64) {
    /* the common gather: one element per position, typed loops with no
     * per-element dispatch, so the random loads of x overlap */
    switch (es) {
    case 8: GATHER(uint64_t) break;
    case 4: GATHER(uint32_t) break;
    case 1: GATHER(uint8_t) break;
    default: break;
    }
    if (es == 8 || es == 4 || es == 1) return 0;
  }
  for (int64_t o = 0; o < to->shape[0]; o++) {
    for (int64_t q = 0; q < to->shape[1]; q++) {
      const int64_t p = load_int(ti->data + (o * ti->strides[0] + q * ti->strides[1]) * (int64_t)ies,
                                 ti->dtype);
      const int64_t j = norm_pos(p, a->m, a->base);
      if (j < 0)
        return ty_ctx_fail(ctx, "take: index %lld is out of range for a dimension of size %lld",
                           (long long)p, (long long)a->m);
      const char *s = tx->data + ((ctx->lo[0] + o) * tx->strides[0] + j * tx->strides[1]) * (int64_t)es;
      char *d = to->data + (o * to->strides[0] + q * to->strides[1]) * (int64_t)es;
      if (r == 1) copy_el(d, s, es);
      else
        for (int64_t z = 0; z < r; z++)
          copy_el(d + z * to->strides[2] * (int64_t)es, s + z * tx->strides[2] * (int64_t)es, es);
    }
  }
  return 0;
}

/* x[idx[i]] = v[i] for the positions inside the piece, in order */
#define SCATTER(T)                                                                         \
  {                                                                                        \
    const int64_t *ip = (const int64_t *)ti->data;                                         \
    const int64_t is = ti->strides[0], xs0 = tx->strides[0], xs1 = tx->strides[1];         \
    const int64_t vs0 = tv->strides[0], vs1 = tv->strides[1], m = a->m, base = a->base;    \
    T *xp = (T *)tx->data;                                                                 \
    const T *vp = (const T *)tv->data;                                                     \
    for (int64_t i = 0; i < a->k; i++) {                                                   \
      const int64_t p = ip[i * is];                                                        \
      const int64_t j = p < 0 ? p + m : p - base;                                          \
      if ((uint64_t)j >= (uint64_t)m || (p >= 0 && p < base))                              \
        return ty_ctx_fail(ctx, "put: index %lld is out of range for a dimension of size %lld", \
                           (long long)p, (long long)m);                                    \
      if (j < lo1 || j >= hi1) continue;                                                   \
      for (int64_t o = 0; o < tx->shape[0]; o++)                                           \
        xp[o * xs0 + (j - lo1) * xs1] = vp[(ctx->lo[0] + o) * vs0 + i * vs1];              \
    }                                                                                      \
  }

/* The same for one row (o == 1), without a branch on the piece's range: a
 * position outside it writes to `sink` instead. Every piece walks all of idx,
 * and half the positions or more fall outside each piece at random, so a
 * branch there would be mispredicted half the time (measured: 2x slower). */
#define SCATTER1(T)                                                                        \
  {                                                                                        \
    const int64_t *ip = (const int64_t *)ti->data;                                         \
    const int64_t is = ti->strides[0], xs1 = tx->strides[1], vs1 = tv->strides[1];         \
    const int64_t m = a->m, base = a->base, len = hi1 - lo1;                               \
    T *xp = (T *)tx->data, sink;                                                           \
    const T *vp = (const T *)tv->data + ctx->lo[0] * tv->strides[0];                       \
    for (int64_t i = 0; i < a->k; i++) {                                                   \
      const int64_t p = ip[i * is];                                                        \
      const int64_t j = p < 0 ? p + m : p - base;                                          \
      if ((uint64_t)j >= (uint64_t)m || (p >= 0 && p < base))                              \
        return ty_ctx_fail(ctx, "put: index %lld is out of range for a dimension of size %lld", \
                           (long long)p, (long long)m);                                    \
      const uint64_t u = (uint64_t)(j - lo1);                                              \
      T *d = u < (uint64_t)len ? xp + (int64_t)u * xs1 : &sink;                            \
      *d = vp[i * vs1];                                                                    \
    }                                                                                      \
    (void)sink;                                                                            \
  }

static int put_variant(ty_task_ctx *ctx) {
  const take_args *a = ctx->scalars;
  const ty_tile *tx = &ctx->args[0], *ti = &ctx->args[1], *tv = &ctx->args[2];
  const size_t es = ty_dtype_size(tx->dtype), ies = ty_dtype_size(ti->dtype);
  const int64_t lo1 = ctx->lo[1], hi1 = ctx->hi[1], r = tx->shape[2];
  if (a->gate > 0) { /* a position is bad: write nothing (the caller reports it) */
    const int64_t *bad = (const int64_t *)ctx->args[3].data;
    for (int64_t c = 0; c < a->gate; c++)
      if (bad[c] >= 0) return 0;
  }
  if (a->along) { /* idx and v are (o, k, r): each (o, z) line walks its k positions in order */
    for (int64_t o = 0; o < tx->shape[0]; o++)
      for (int64_t z = 0; z < r; z++) {
        const int64_t go = ctx->lo[0] + o, gz = ctx->lo[2] + z;
        for (int64_t q = 0; q < a->k; q++) {
          const int64_t p = load_int(
              ti->data + (go * ti->strides[0] + q * ti->strides[1] + gz * ti->strides[2]) * (int64_t)ies,
              ti->dtype);
          const int64_t j = norm_pos(p, a->m, a->base);
          if (j < 0)
            return ty_ctx_fail(ctx, "put: index %lld is out of range for a dimension of size %lld",
                               (long long)p, (long long)a->m);
          if (j < lo1 || j >= hi1) continue;
          copy_el(tx->data + (o * tx->strides[0] + (j - lo1) * tx->strides[1] + z * tx->strides[2]) * (int64_t)es,
                  tv->data + (go * tv->strides[0] + q * tv->strides[1] + gz * tv->strides[2]) * (int64_t)es,
                  es);
        }
      }
    return 0;
  }
  if (r == 1 && tx->shape[0] == 1 && ti->dtype == TY_I64 && (es == 8 || es == 4 || es == 1)) {
    switch (es) {
    case 8: SCATTER1(uint64_t) break;
    case 4: SCATTER1(uint32_t) break;
    default: SCATTER1(uint8_t) break;
    }
    return 0;
  }
  if (r == 1 && ti->dtype == TY_I64 && (es == 8 || es == 4 || es == 1)) {
    switch (es) {
    case 8: SCATTER(uint64_t) break;
    case 4: SCATTER(uint32_t) break;
    default: SCATTER(uint8_t) break;
    }
    return 0;
  }
  for (int64_t i = 0; i < a->k; i++) {
    const int64_t p = load_int(ti->data + i * ti->strides[0] * (int64_t)ies, ti->dtype);
    const int64_t j = norm_pos(p, a->m, a->base);
    if (j < 0)
      return ty_ctx_fail(ctx, "put: index %lld is out of range for a dimension of size %lld",
                         (long long)p, (long long)a->m);
    if (j < lo1 || j >= hi1) continue;
    for (int64_t o = 0; o < tx->shape[0]; o++) {
      char *d = tx->data + (o * tx->strides[0] + (j - lo1) * tx->strides[1]) * (int64_t)es;
      const char *s = tv->data + ((ctx->lo[0] + o) * tv->strides[0] + i * tv->strides[1]) * (int64_t)es;
      for (int64_t z = 0; z < r; z++)
        copy_el(d + z * tx->strides[2] * (int64_t)es, s + z * tv->strides[2] * (int64_t)es, es);
    }
  }
  return 0;
}

/* Per chunk of TY_MASK_CHUNK positions: the flat position of its first bad
 * one, or -1. An OR over the chunk first (no early exit, so it vectorizes);
 * only a chunk with a bad position is walked again. */
static int index_check_variant(ty_task_ctx *ctx) {
  const check_args *a = ctx->scalars;
  const ty_tile *tb = &ctx->args[0], *ti = &ctx->args[1];
  int64_t *bad = (int64_t *)tb->data;
  const ty_dtype t = ti->dtype;
  const int64_t is = ti->strides[0], ies = (int64_t)ty_dtype_size(t);
  const int64_t n = a->n, base = a->base;
  for (int64_t c = ctx->lo[0]; c < ctx->hi[0]; c++) {
    const int64_t s = c * L_CHUNK, e = s + L_CHUNK < a->k ? s + L_CHUNK : a->k;
    bool any = false;
    if (t == TY_I64 && is == 1) {
      const int64_t *ip = (const int64_t *)ti->data;
      uint64_t acc = 0;
      for (int64_t i = s; i < e; i++) {
        const int64_t p = ip[i];
        const int64_t j = p < 0 ? p + n : p - base;
        acc |= (uint64_t)((uint64_t)j >= (uint64_t)n) | (uint64_t)(p >= 0 && p < base);
      }
      any = acc != 0;
    } else {
      any = true; /* other dtypes: the walk below decides */
    }
    int64_t first = -1;
    for (int64_t i = s; any && i < e && first < 0; i++)
      if (norm_pos(load_int(ti->data + i * is * ies, t), n, base) < 0) first = i;
    bad[(c - ctx->lo[0]) * tb->strides[0]] = first;
  }
  return 0;
}

ty_status ty__register_mask_ops(ty_runtime *rt) {
  /* no signatures: packed scalars, not callable by name from a binding */
  static const struct {
    const char *name;
    ty_variant_fn fn;
  } tasks[] = {{"mask_count", count_variant},
               {"mask_compress", compress_variant},
               {"mask_expand", expand_variant},
               {"take", take_variant},
               {"put", put_variant},
               {"index_check", index_check_variant}};
  for (size_t i = 0; i < sizeof tasks / sizeof tasks[0]; i++) {
    ty_task_desc d = {.name = tasks[i].name, .cpu = tasks[i].fn};
    ty_status st = ty_task_register(rt, &d, NULL);
    if (st) return st;
  }
  return TY_OK;
}

/* ---- helpers ------------------------------------------------------------------- */


/* A view of s's elements in C order under `shape` (same size): s itself
 * reshaped when dense, else a dense copy of dtype t (s's when t < 0). */
static ty_status dense(ty_runtime *rt, ty_store *s, int ndim, const int64_t *shape, int t,
                       ty_store **out) {
  *out = NULL;
  if (ty_store_is_contiguous(s) && (t < 0 || (ty_dtype)t == s->dtype))
    return ty_store_reshape(rt, s, ndim, shape, out);
  ty_store *c = NULL;
  ty_status st = ty_store_create(rt, t < 0 ? s->dtype : (ty_dtype)t, s->ndim, s->shape, &c);
  if (!st) st = ty_copy(rt, c, s);
  if (!st) st = ty_store_reshape(rt, c, ndim, shape, out);
  ty_store_release(c);
  return st;
}

static int64_t prod(int n, const int64_t *s) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) p *= s[i];
  return p;
}

/* Count the true elements of the dense 1-D mask fm (m elements) per chunk
 * and return their ordered prefix as a dense (P + 1) i64 store (*offs) and
 * the total *n. Runs the window (reads the P counts). */
static ty_status mask_offsets(ty_runtime *rt, const char *fn, ty_store *fm, int64_t m,
                              int64_t *P_out, ty_store **offs, int64_t *n) {
  *offs = NULL;
  *n = 0;
  const int64_t P = (m + L_CHUNK - 1) / L_CHUNK;
  *P_out = P;
  int64_t *buf = ty__malloc(sizeof(int64_t) * (size_t)(P + 1));
  if (!buf) return ty__fail(rt, TY_ENOMEM, "%s: no memory for %lld chunk counts", fn, (long long)P);
  buf[0] = 0;
  ty_store *counts = NULL, *cv = NULL;
  ty_status st = TY_OK;
  if (P > 0) {
    st = ty_store_create(rt, TY_I64, 1, &P, &counts);
    const int64_t dom[2] = {P, L_CHUNK};
    if (!st)
      st = ty__store_view(rt, counts, 2, dom, (const int64_t[2]){counts->strides[0], 0},
                          counts->offset, &cv);
    if (!st) {
      ty_arg args[2] = {ty__arg(cv, TY_PRIV_OUT, TY_PROJ_ALIGNED), ty__arg(fm, TY_PRIV_IN, TY_PROJ_WHOLE)};
      count_args ca = {.m = m};
      st = ty__launch_named(rt, fn, "mask_count", 2, dom, 2, args, &ca, sizeof ca, 1u << 1);
    }
    if (!st) st = ty_store_read(rt, counts, buf + 1, sizeof(int64_t) * (size_t)P);
    for (int64_t c = 1; !st && c <= P; c++) buf[c] += buf[c - 1]; /* the ordered prefix */
  }
  ty_store_release(cv);
  ty_store_release(counts);
  if (!st) {
    const int64_t np = P + 1;
    st = ty_store_from_buffer(rt, TY_I64, 1, &np, buf, offs);
    *n = buf[P];
  }
  free(buf);
  return st;
}

static ty_status check_rt(ty_runtime *rt, const char *fn, ty_store *a, ty_store *b) {
  if (rt->destroyed) return ty__fail(rt, TY_EINVAL, "%s: the runtime was destroyed", fn);
  if (a->rt != rt || (b && b->rt != rt))
    return ty__fail(rt, TY_EINVAL, "%s: a store belongs to another runtime", fn);
  return TY_OK;
}

/* mask's shape must be x's leading dims. */
static ty_status check_mask_shape(ty_runtime *rt, const char *fn, ty_store *x, ty_store *mask) {
  if (mask->ndim <= x->ndim &&
      !memcmp(mask->shape, x->shape, sizeof(int64_t) * (size_t)mask->ndim))
    return TY_OK;
  char a[256], b[256];
  ty__shape_str(mask->ndim, mask->shape, a, sizeof a);
  ty__shape_str(x->ndim, x->shape, b, sizeof b);
  return ty__fail(rt, TY_ESHAPE,
                  "%s: a mask of shape %s does not match the store's shape %s (a boolean mask "
                  "has the shape of the store or of its leading dims)", fn, a, b);
}

/* The shared part of compress and argwhere. mode 0: values of x (m rows of
 * r); mode 1: positions in mask's shape. */
static ty_status compress(ty_runtime *rt, const char *fn, ty_store *x, ty_store *mask, int mode,
                          int64_t base, ty_store **out) {
  const int k = mask->ndim;
  const int64_t m = mask->size;
  const int64_t r = mode == 0 ? prod(x->ndim - k, x->shape + k) : k;
  ty_store *fm = NULL, *offs = NULL, *res = NULL, *xv = NULL, *ov = NULL;
  int64_t P = 0, n = 0;
  ty_status st = dense(rt, mask, 1, &m, -1, &fm);
  if (!st) st = mask_offsets(rt, fn, fm, m, &P, &offs, &n);
  int64_t oshape[TY_MAX_RANK];
  int ond;
  oshape[0] = n;
  if (mode == 0) {
    ond = 1 + x->ndim - k;
    for (int d = k; d < x->ndim; d++) oshape[1 + d - k] = x->shape[d];
  } else {
    ond = 2;
    oshape[1] = k;
  }
  if (!st) st = ty_store_create(rt, mode == 0 ? x->dtype : TY_I64, ond, oshape, &res);
  if (!st && n > 0 && r > 0) {
    const int64_t dom[2] = {n, r};
    st = ty_store_reshape(rt, res, 2, dom, &ov);
    if (!st && mode == 0) st = dense(rt, x, 2, (const int64_t[2]){m, r}, -1, &xv);
    if (!st) {
      compress_args ca = {.m = m, .P = P, .w = r, .base = base, .mode = mode, .ndim = k};
      for (int d = 0; d < k; d++) ca.shape[d] = mask->shape[d];
      ty_arg args[4] = {ty__arg(ov, TY_PRIV_OUT, TY_PROJ_ALIGNED), ty__arg(fm, TY_PRIV_IN, TY_PROJ_WHOLE),
                        ty__arg(offs, TY_PRIV_IN, TY_PROJ_WHOLE), ty__arg(xv, TY_PRIV_IN, TY_PROJ_WHOLE)};
      st = ty__launch_named(rt, fn, "mask_compress", 2, dom, mode == 0 ? 4 : 3, args, &ca, sizeof ca,
                  1u << 1);
    }
  }
  ty_store_release(ov);
  ty_store_release(xv);
  ty_store_release(offs);
  ty_store_release(fm);
  if (st) {
    ty_store_release(res);
    return st;
  }
  *out = res;
  return TY_OK;
}

ty_status ty_compress(ty_runtime *rt, ty_store *x, ty_store *mask, ty_store **out) {
  if (!rt) return TY_EINVAL;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_compress: out is NULL");
  *out = NULL;
  if (!x || !mask) return ty__fail(rt, TY_EINVAL, "ty_compress: a store is NULL");
  ty_status st = check_rt(rt, "ty_compress", x, mask);
  if (!st) st = check_mask_shape(rt, "ty_compress", x, mask);
  if (!st) st = compress(rt, "ty_compress", x, mask, 0, 0, out);
  return st;
}

ty_status ty_argwhere(ty_runtime *rt, ty_store *x, int64_t base, ty_store **out) {
  if (!rt) return TY_EINVAL;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_argwhere: out is NULL");
  *out = NULL;
  if (!x) return ty__fail(rt, TY_EINVAL, "ty_argwhere: x is NULL");
  ty_status st = check_rt(rt, "ty_argwhere", x, NULL);
  if (!st) st = compress(rt, "ty_argwhere", x, x, 1, base, out);
  return st;
}

/* mask viewed with x's rank: trailing dims of size 1 (stride 0). */
static ty_status mask_as_x(ty_runtime *rt, ty_store *mask, int nd, ty_store **out) {
  int64_t sh[TY_MAX_RANK], str[TY_MAX_RANK];
  for (int d = 0; d < nd; d++) {
    sh[d] = d < mask->ndim ? mask->shape[d] : 1;
    str[d] = d < mask->ndim ? mask->strides[d] : 0;
  }
  return ty__store_view(rt, mask, nd, sh, str, mask->offset, out);
}

/* x = where(mask, src, x), src of x's shape or broadcasting to it. */
static ty_status where_into(ty_runtime *rt, ty_store *x, ty_store *mask, ty_store *src) {
  ty_store *me = NULL, *res = NULL;
  ty_status st = mask_as_x(rt, mask, x->ndim, &me);
  if (!st) st = ty_where(rt, me, src, x, &res);
  if (!st) st = ty_copy(rt, x, res);
  ty_store_release(res);
  ty_store_release(me);
  return st;
}

ty_status ty_mask_assign(ty_runtime *rt, ty_store *x, ty_store *mask, ty_store *v) {
  const char *fn = "ty_mask_assign";
  if (!rt) return TY_EINVAL;
  if (!x || !mask || !v) return ty__fail(rt, TY_EINVAL, "%s: a store is NULL", fn);
  ty_status st = check_rt(rt, fn, x, mask);
  if (!st && v->rt != rt) st = ty__fail(rt, TY_EINVAL, "%s: v belongs to another runtime", fn);
  if (!st) st = check_mask_shape(rt, fn, x, mask);
  if (st) return st;
  const int k = mask->ndim, rnd = x->ndim - k;
  const int64_t *rest = x->shape + k;
  /* v broadcasts to the selected sub-arrays: one where(), no count */
  int bnd;
  int64_t bsh[TY_MAX_RANK];
  if (v->ndim <= rnd && !ty_broadcast_shapes(v->ndim, v->shape, rnd, rest, &bnd, bsh) &&
      bnd == rnd && !memcmp(bsh, rest, sizeof(int64_t) * (size_t)rnd))
    return where_into(rt, x, mask, v);
  /* one value (or sub-array) per true element */
  const int64_t m = mask->size, r = prod(rnd, rest);
  ty_store *fm = NULL, *offs = NULL, *vv = NULL, *vd = NULL, *tmp = NULL, *tx = NULL;
  int64_t P = 0, n = 0;
  st = dense(rt, mask, 1, &m, -1, &fm);
  if (!st) st = mask_offsets(rt, fn, fm, m, &P, &offs, &n);
  int64_t vsh[TY_MAX_RANK];
  vsh[0] = n;
  for (int d = 0; d < rnd; d++) vsh[1 + d] = rest[d];
  if (!st && (ty_broadcast_shapes(v->ndim, v->shape, rnd + 1, vsh, &bnd, bsh) || bnd != rnd + 1 ||
              memcmp(bsh, vsh, sizeof(int64_t) * (size_t)(rnd + 1)))) {
    char a[256], b[256];
    ty__shape_str(v->ndim, v->shape, a, sizeof a);
    ty__shape_str(rnd + 1, vsh, b, sizeof b);
    st = ty__fail(rt, TY_ESHAPE,
                  "%s: cannot assign values of shape %s to the %lld selected elements (shape %s)",
                  fn, a, (long long)n, b);
  }
  if (!st) st = ty_store_create(rt, x->dtype, rnd + 1, vsh, &vv);
  if (!st && vv->size > 0) st = ty_copy(rt, vv, v); /* broadcast and cast */
  if (!st) st = ty_store_reshape(rt, vv, 2, (const int64_t[2]){n, r}, &vd);
  if (!st) st = ty_store_create(rt, x->dtype, 2, (const int64_t[2]){m, r}, &tmp);
  if (!st && m * r > 0 && n > 0) {
    const int64_t dom[2] = {m, r};
    expand_args ea = {.m = m, .P = P, .r = r};
    ty_arg args[4] = {ty__arg(tmp, TY_PRIV_OUT, TY_PROJ_ALIGNED), ty__arg(fm, TY_PRIV_IN, TY_PROJ_WHOLE),
                      ty__arg(offs, TY_PRIV_IN, TY_PROJ_WHOLE), ty__arg(vd, TY_PRIV_IN, TY_PROJ_WHOLE)};
    st = ty__launch_named(rt, fn, "mask_expand", 2, dom, 4, args, &ea, sizeof ea, 1u << 1);
    if (!st) st = ty_store_reshape(rt, tmp, x->ndim, x->shape, &tx);
    if (!st) st = where_into(rt, x, mask, tx);
  }
  ty_store_release(tx);
  ty_store_release(tmp);
  ty_store_release(vd);
  ty_store_release(vv);
  ty_store_release(offs);
  ty_store_release(fm);
  return st;
}

/* ---- integer positions --------------------------------------------------------- */

static bool int_dtype(ty_dtype t) { return ty_dtype_is_int(t); }

/* Launch index_check over fi, the k positions (dense, 1-D) of a dim of size
 * n: *bad (new, C = ceil(k / CHUNK) entries) holds each chunk's first bad
 * flat position or -1. One pass over the positions, in parallel. */
static ty_status launch_check(ty_runtime *rt, const char *fn, ty_store *fi, int64_t k, int64_t n,
                              int64_t base, ty_store **bad) {
  const int64_t C = (k + L_CHUNK - 1) / L_CHUNK;
  ty_store *bv = NULL;
  ty_status st = ty_store_create(rt, TY_I64, 1, &C, bad);
  const int64_t dom[2] = {C, L_CHUNK};
  if (!st) /* stride 0 along the chunk: that dim is never split (as mask_count) */
    st = ty__store_view(rt, *bad, 2, dom, (const int64_t[2]){(*bad)->strides[0], 0},
                        (*bad)->offset, &bv);
  if (!st) {
    check_args ca = {.k = k, .n = n, .base = base};
    ty_arg args[2] = {ty__arg(bv, TY_PRIV_OUT, TY_PROJ_ALIGNED), ty__arg(fi, TY_PRIV_IN, TY_PROJ_WHOLE)};
    st = ty__launch_named(rt, fn, "index_check", 2, dom, 2, args, &ca, sizeof ca, 1u << 1);
  }
  ty_store_release(bv);
  if (st) {
    ty_store_release(*bad);
    *bad = NULL;
  }
  return st;
}

/* Read launch_check's result (runs the window): the first bad position of fi
 * in C order (*bad_at, -1 when none) and its value. */
static ty_status first_bad(ty_runtime *rt, const char *fn, ty_store *bad, ty_store *fi,
                           int64_t *bad_at, int64_t *bad_value) {
  const int64_t C = bad->shape[0];
  int64_t *buf = ty__malloc(sizeof(int64_t) * (size_t)C);
  if (!buf) return ty__fail(rt, TY_ENOMEM, "%s: no memory for %lld chunk results", fn, (long long)C);
  ty_status st = ty_store_read(rt, bad, buf, sizeof(int64_t) * (size_t)C);
  for (int64_t c = 0; !st && c < C && *bad_at < 0; c++) *bad_at = buf[c];
  free(buf);
  if (!st && *bad_at >= 0) {
    ty_value v = {0};
    st = ty_store_get(rt, fi, bad_at, &v);
    *bad_value = v.i;
  }
  return st;
}

ty_status ty_index_check(ty_runtime *rt, ty_store *idx, int64_t n, int64_t base, int64_t *bad_at,
                         int64_t *bad_value) {
  const char *fn = "ty_index_check";
  if (!rt) return TY_EINVAL;
  if (!idx || !bad_at || !bad_value) return ty__fail(rt, TY_EINVAL, "%s: NULL argument", fn);
  *bad_at = -1;
  *bad_value = 0;
  ty_status st = check_rt(rt, fn, idx, NULL);
  if (st) return st;
  if (!int_dtype(idx->dtype))
    return ty__fail(rt, TY_EDTYPE, "%s: positions must have an integer dtype, got %s", fn,
                    ty_dtype_name(idx->dtype));
  const int64_t k = idx->size;
  if (k == 0) return TY_OK;
  ty_store *fi = NULL, *bad = NULL;
  st = dense(rt, idx, 1, &k, -1, &fi);
  if (!st) st = launch_check(rt, fn, fi, k, n, base, &bad);
  if (!st) st = first_bad(rt, fn, bad, fi, bad_at, bad_value);
  ty_store_release(bad);
  ty_store_release(fi);
  return st;
}

/* x as (o, m, r) around axis; idx as (k), or (along) of x's rank. */
static ty_status take_check(ty_runtime *rt, const char *fn, ty_store *x, ty_store *idx, int axis,
                            bool along) {
  ty_status st = check_rt(rt, fn, x, idx);
  if (st) return st;
  if (x->ndim == 0) return ty__fail(rt, TY_ESHAPE, "%s: x is 0-d (it has no axis to index)", fn);
  if (axis < 0 || axis >= x->ndim)
    return ty__fail(rt, TY_EINVAL, "%s: axis %d is out of range for rank %d", fn, axis, x->ndim);
  if (!int_dtype(idx->dtype))
    return ty__fail(rt, TY_EDTYPE, "%s: positions must have an integer dtype, got %s", fn,
                    ty_dtype_name(idx->dtype));
  if (!along && x->ndim - 1 + idx->ndim > TY_MAX_RANK)
    return ty__fail(rt, TY_ELIMIT, "%s: the result would have rank %d (at most %d)", fn,
                    x->ndim - 1 + idx->ndim, TY_MAX_RANK);
  if (along && idx->ndim != x->ndim)
    return ty__fail(rt, TY_ESHAPE, "%s: the positions must have x's rank %d, got rank %d", fn,
                    x->ndim, idx->ndim);
  return TY_OK;
}

/* The indexed shape (*sh, returns its rank): take's x.shape[:axis] +
 * idx.shape + x.shape[axis+1:]; along: x's and idx's dims broadcast, except
 * `axis`, which is idx's. */
static ty_status indexed_shape(ty_runtime *rt, const char *fn, ty_store *x, ty_store *idx, int axis,
                               bool along, int64_t *sh, int *nd) {
  ty_status st = take_check(rt, fn, x, idx, axis, along);
  if (st) return st;
  *nd = 0;
  if (!along) {
    for (int d = 0; d < axis; d++) sh[(*nd)++] = x->shape[d];
    for (int d = 0; d < idx->ndim; d++) sh[(*nd)++] = idx->shape[d];
    for (int d = axis + 1; d < x->ndim; d++) sh[(*nd)++] = x->shape[d];
    return TY_OK;
  }
  *nd = x->ndim;
  for (int d = 0; d < x->ndim; d++) {
    const int64_t a = x->shape[d], b = idx->shape[d];
    if (d == axis) sh[d] = b;
    else if (a == b || b == 1) sh[d] = a;
    else if (a == 1) sh[d] = b;
    else {
      char s1[256], s2[256];
      ty__shape_str(x->ndim, x->shape, s1, sizeof s1);
      ty__shape_str(idx->ndim, idx->shape, s2, sizeof s2);
      return ty__fail(rt, TY_ESHAPE, "%s: positions of shape %s do not broadcast against x's "
                      "shape %s (outside the axis)", fn, s2, s1);
    }
  }
  return TY_OK;
}

/* s (rank nd) broadcast to sh except along `axis` (kept), as a dense
 * (o, n, r) store. */
static ty_status along_dense(ty_runtime *rt, ty_store *s, int axis, const int64_t *sh,
                             ty_store **out) {
  const int nd = s->ndim;
  int64_t bsh[TY_MAX_RANK], bst[TY_MAX_RANK];
  for (int d = 0; d < nd; d++) {
    bsh[d] = d == axis ? s->shape[d] : sh[d];
    bst[d] = (s->shape[d] == 1 && bsh[d] != 1) ? 0 : s->strides[d];
  }
  ty_store *bv = NULL;
  ty_status st = ty__store_view(rt, s, nd, bsh, bst, s->offset, &bv);
  const int64_t dom[3] = {prod(axis, bsh), bsh[axis], prod(nd - axis - 1, bsh + axis + 1)};
  if (!st) st = dense(rt, bv, 3, dom, -1, out);
  ty_store_release(bv);
  return st;
}

/* Merge dims [a, b) of s into one (size *n, stride *stride), or false when
 * their elements are not evenly spaced (each dim's stride is the next one's
 * times its size; dims of size 1 fit anywhere). */
static bool merge_dims(const ty_store *s, int a, int b, int64_t *n, int64_t *stride) {
  *n = 1;
  *stride = 0;
  int64_t next = -1; /* the stride the next dim to the left must have */
  for (int d = b - 1; d >= a; d--) {
    if (s->shape[d] == 1) continue;
    if (next >= 0 && s->strides[d] != next) return false;
    if (next < 0) *stride = s->strides[d];
    *n *= s->shape[d];
    next = s->strides[d] * s->shape[d];
  }
  return true;
}

/* s as an (o, m, r) view around axis without a copy (*out; NULL when its
 * dims do not merge, or for writing when a dim is broadcast). A column of a
 * matrix, x[{{}, 2}], is one: x[{i, 2}] gathers and scatters in place. */
static ty_status view3(ty_runtime *rt, ty_store *s, int axis, bool writing, ty_store **out) {
  *out = NULL;
  int64_t o, so, r, sr;
  if (!merge_dims(s, 0, axis, &o, &so) || !merge_dims(s, axis + 1, s->ndim, &r, &sr)) return TY_OK;
  for (int d = 0; writing && d < s->ndim; d++)
    if (s->strides[d] == 0 && s->shape[d] > 1) return TY_OK;
  return ty__store_view(rt, s, 3, (const int64_t[3]){o, s->shape[axis], r},
                        (const int64_t[3]){so, s->strides[axis], sr}, s->offset, out);
}

/* The (o, k, r) domain of a take or put over the indexed shape sh (rank nd):
 * o and r are x's dims around axis, k the positions' (all of idx's dims for
 * take, one for along). */
static void take_domain(int nd, const int64_t *sh, int axis, int kd, int64_t *dom) {
  dom[0] = prod(axis, sh);
  dom[1] = prod(kd, sh + axis);
  dom[2] = prod(nd - axis - kd, sh + axis + kd);
}

/* The positions as the launch reads them: take's (k) dense, seen as (o, k, r)
 * with stride 0 outside k when `as3`; along's (o, k, r) dense, broadcast. */
static ty_status positions_of(ty_runtime *rt, ty_store *idx, int axis, bool along,
                              const int64_t *sh, const int64_t *dom, bool as3, ty_store **iv,
                              ty_store **i3) {
  if (along) {
    ty_status st = along_dense(rt, idx, axis, sh, i3);
    if (!st) {
      *iv = *i3;
      ty_store_retain(*iv);
    }
    return st;
  }
  ty_status st = dense(rt, idx, 1, &dom[1], -1, iv);
  if (!st && as3)
    st = ty__store_view(rt, *iv, 3, dom, (const int64_t[3]){0, (*iv)->strides[0], 0}, (*iv)->offset, i3);
  return st;
}

/* ty_take and ty_take_along: one "take" launch over the output as (o, k, r),
 * reading x whole as (o, m, r). */
static ty_status take_impl(ty_runtime *rt, const char *fn, ty_store *x, ty_store *idx, int axis,
                           int64_t base, bool along, ty_store **out) {
  if (!rt) return TY_EINVAL;
  if (!out) return ty__fail(rt, TY_EINVAL, "%s: out is NULL", fn);
  *out = NULL;
  if (!x || !idx) return ty__fail(rt, TY_EINVAL, "%s: a store is NULL", fn);
  int64_t sh[TY_MAX_RANK], dom[3];
  int nd = 0;
  ty_status st = indexed_shape(rt, fn, x, idx, axis, along, sh, &nd);
  if (st) return st;
  take_domain(nd, sh, axis, along ? 1 : idx->ndim, dom);
  const int64_t m = x->shape[axis];
  ty_store *res = NULL, *ov = NULL, *xv = NULL, *iv = NULL, *i3 = NULL;
  st = ty_store_create(rt, x->dtype, nd, sh, &res);
  if (!st && dom[0] * dom[1] * dom[2] > 0) {
    st = ty_store_reshape(rt, res, 3, dom, &ov);
    if (!st && along) st = along_dense(rt, x, axis, sh, &xv);
    if (!st && !along) st = view3(rt, x, axis, false, &xv);
    if (!st && !along && !xv) st = dense(rt, x, 3, (const int64_t[3]){dom[0], m, dom[2]}, -1, &xv);
    if (!st) st = positions_of(rt, idx, axis, along, sh, dom, true, &iv, &i3);
    if (!st) {
      take_args ta = {.m = m, .base = base, .k = dom[1], .along = along};
      ty_arg args[3] = {ty__arg(ov, TY_PRIV_OUT, TY_PROJ_ALIGNED), ty__arg(i3, TY_PRIV_IN, TY_PROJ_ALIGNED),
                        ty__arg(xv, TY_PRIV_IN, TY_PROJ_WHOLE)};
      st = ty__launch_named(rt, fn, "take", 3, dom, 3, args, &ta, sizeof ta, 1u << 2);
    }
  }
  ty_store *all[] = {i3, iv, xv, ov};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ty_store_release(all[i]);
  if (st) {
    ty_store_release(res);
    return st;
  }
  *out = res;
  return TY_OK;
}

ty_status ty_take(ty_runtime *rt, ty_store *x, ty_store *idx, int axis, int64_t base,
                  ty_store **out) {
  return take_impl(rt, "ty_take", x, idx, axis, base, false, out);
}

ty_status ty_take_along(ty_runtime *rt, ty_store *x, ty_store *idx, int axis, int64_t base,
                        ty_store **out) {
  return take_impl(rt, "ty_take_along", x, idx, axis, base, true, out);
}

/* v as the (o, k, r) values of a put into x (*v3): v itself reshaped when it
 * has the indexed shape sh, x's dtype and C order; a stride-0 view of a
 * single value; else a broadcast, cast copy. */
static ty_status put_values(ty_runtime *rt, ty_store *x, ty_store *v, int nd, const int64_t *sh,
                            const int64_t *d3, ty_store **v3) {
  if (v->dtype == x->dtype && v->ndim == nd && ty_store_is_contiguous(v) &&
      !memcmp(v->shape, sh, sizeof(int64_t) * (size_t)nd))
    return ty_store_reshape(rt, v, 3, d3, v3);
  if (v->dtype == x->dtype && v->size == 1)
    return ty__store_view(rt, v, 3, d3, (const int64_t[3]){0, 0, 0}, v->offset, v3);
  ty_store *vv = NULL;
  ty_status st = ty_store_create(rt, x->dtype, nd, sh, &vv);
  if (!st) st = ty_copy(rt, vv, v);
  if (!st) st = ty_store_reshape(rt, vv, 3, d3, v3);
  ty_store_release(vv);
  return st;
}

/* ty_put, ty_put_checked and ty_put_along: one "put" launch over x as
 * (o, m, r) (in place when x is dense, else into a copy written back).
 * checked (bad_at): an index_check launch first, whose result gates the
 * put's pieces (a bad position: nothing is written), read after both are
 * queued: one flush, one parallel pass over idx to check. */
static ty_status put_impl(ty_runtime *rt, const char *fn, ty_store *x, ty_store *idx, int axis,
                          int64_t base, bool along, ty_store *v, int64_t *bad_at,
                          int64_t *bad_value) {
  if (!rt) return TY_EINVAL;
  if (!x || !idx || !v) return ty__fail(rt, TY_EINVAL, "%s: a store is NULL", fn);
  int64_t sh[TY_MAX_RANK], dom[3];
  int nd = 0;
  ty_status st = indexed_shape(rt, fn, x, idx, axis, along, sh, &nd);
  if (!st && v->rt != rt) st = ty__fail(rt, TY_EINVAL, "%s: v belongs to another runtime", fn);
  if (st) return st;
  for (int d = 0; along && d < nd; d++)
    if (d != axis && sh[d] != x->shape[d]) {
      char s1[256], s2[256];
      ty__shape_str(x->ndim, x->shape, s1, sizeof s1);
      ty__shape_str(idx->ndim, idx->shape, s2, sizeof s2);
      return ty__fail(rt, TY_ESHAPE, "%s: positions of shape %s would grow x's shape %s", fn, s2, s1);
    }
  int bnd;
  int64_t bsh[TY_MAX_RANK];
  if (ty_broadcast_shapes(v->ndim, v->shape, nd, sh, &bnd, bsh) || bnd != nd ||
      memcmp(bsh, sh, sizeof(int64_t) * (size_t)nd)) {
    char a[256], b[256];
    ty__shape_str(v->ndim, v->shape, a, sizeof a);
    ty__shape_str(nd, sh, b, sizeof b);
    return ty__fail(rt, TY_ESHAPE, "%s: values of shape %s do not broadcast to the indexed shape %s",
                    fn, a, b);
  }
  take_domain(nd, sh, axis, along ? 1 : idx->ndim, dom);
  const int64_t m = x->shape[axis], o = dom[0], k = dom[1], r = dom[2];
  if (k == 0) return TY_OK;
  ty_store *v3 = NULL, *iv = NULL, *i3 = NULL, *work = NULL, *xv = NULL, *bad = NULL;
  st = positions_of(rt, idx, axis, along, sh, dom, false, &iv, &i3);
  /* a long idx into one line: the bucketed scatter (ops_scatter.c); in one
   * segment it checks the positions itself, else index_check gates it */
  const bool bucketed = !st && ty__put_bucketable(o, k, m, r, iv->dtype, x->dtype);
  const bool one_pass = bucketed && ty__put_segments(rt, k, x->dtype) == 1;
  if (!st && bad_at && !one_pass) st = launch_check(rt, fn, iv, k, m, base, &bad);
  bool direct = true; /* x written in place (a view of it), else a copy written back */
  if (!st && o * r > 0 && m > 0) {
    st = put_values(rt, x, v, nd, sh, dom, &v3);
    if (!st) st = view3(rt, x, axis, true, &xv);
    if (!st && !xv) {
      direct = false;
      st = ty_store_create(rt, x->dtype, x->ndim, x->shape, &work);
      if (!st) st = ty_copy(rt, work, x);
      if (!st) st = ty_store_reshape(rt, work, 3, (const int64_t[3]){o, m, r}, &xv);
    }
    const int64_t xdom[3] = {o, m, r};
    if (!st && bucketed) {
      st = ty__put_bucketed(rt, fn, xv, iv, v3, base, bad_at != NULL, bad, one_pass ? &bad : NULL);
    } else if (!st) {
      take_args ta = {.m = m, .base = base, .k = k, .along = along, .gate = bad ? bad->shape[0] : 0};
      ty_arg args[4] = {ty__arg(xv, TY_PRIV_INOUT, TY_PROJ_ALIGNED), ty__arg(iv, TY_PRIV_IN, TY_PROJ_WHOLE),
                        ty__arg(v3, TY_PRIV_IN, TY_PROJ_WHOLE), ty__arg(bad, TY_PRIV_IN, TY_PROJ_WHOLE)};
      st = ty__launch_named(rt, fn, "put", 3, xdom, bad ? 4 : 3, args, &ta, sizeof ta, 1u << 2);
    }
    if (!st && !direct) st = ty_copy(rt, x, work);
  }
  if (!st && bad_at) st = first_bad(rt, fn, bad, iv, bad_at, bad_value);
  ty_store *all[] = {bad, xv, work, i3, iv, v3};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ty_store_release(all[i]);
  return st;
}

ty_status ty_put(ty_runtime *rt, ty_store *x, ty_store *idx, int axis, int64_t base,
                 ty_store *v) {
  return put_impl(rt, "ty_put", x, idx, axis, base, false, v, NULL, NULL);
}

ty_status ty_put_checked(ty_runtime *rt, ty_store *x, ty_store *idx, int axis, int64_t base,
                         ty_store *v, int64_t *bad_at, int64_t *bad_value) {
  if (!rt) return TY_EINVAL;
  if (!bad_at || !bad_value) return ty__fail(rt, TY_EINVAL, "ty_put_checked: NULL argument");
  *bad_at = -1;
  *bad_value = 0;
  return put_impl(rt, "ty_put_checked", x, idx, axis, base, false, v, bad_at, bad_value);
}

ty_status ty_put_along(ty_runtime *rt, ty_store *x, ty_store *idx, int axis, int64_t base,
                       ty_store *v) {
  return put_impl(rt, "ty_put_along", x, idx, axis, base, true, v, NULL, NULL);
}
