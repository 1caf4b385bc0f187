/*
 * ops_scatter.c — the bucketed scatter: x[idx] = v for a long idx into a
 * 1-D line of x (ty_put, ty_put_checked, ty_put_along with one line),
 * called by put_impl in ops_mask.c. Two launches, both in explain:
 *
 *   - put_bucket  domain (C, row bytes) over the chunks of idx: chunk c
 *                 holds positions [c*L, c*L + L) in C order (L = 65536,
 *                 fixed, so the layout never depends on the pieces). A piece
 *                 checks its chunks' positions (the first bad one of chunk
 *                 c goes to bad[c], else -1) and counting-sorts each chunk
 *                 by destination bucket into the chunk's own row of `runs`:
 *                 bucket b holds the positions [b*W, b*W + W) of the line,
 *                 W = 2^shift elements (512 KiB of x: a bucket's writes stay
 *                 in L2). A row is [ends: B u32 | pos: L u32 (position -
 *                 b*W) | val: L values (absent when v is one value)]; within
 *                 a bucket the sort is stable (index order).
 *   - put_apply   domain (1, m, 1) over x (in/out), the same pieces as any
 *                 launch over x: a piece walks its buckets, and for each
 *                 bucket the chunks in order, writing the positions inside
 *                 its range. When any bad[c] is set no piece writes (checked:
 *                 the caller reports the first bad one; unchecked: every
 *                 piece fails with the same message).
 *
 * Why: a put whose pieces own ranges of x but each read all of idx reads
 * idx and v once per piece, and its random writes miss the cache and the
 * TLB for lines of x beyond L2. Here idx and v are read once (by chunks, in
 * parallel), and each write lands in a 512 KiB window. A line that fits in
 * the last-level cache (S_DIRECT_BYTES, 16 MiB) goes to the plain put: its
 * writes hit the cache anyway, and one pass costs less than two.
 *
 * An idx longer than a segment (2^24 positions, or rows of 1/16 of the
 * memory budget) is scattered segment after segment, in index order; its
 * positions are checked first by index_check (ops_mask.c) for all segments.
 *
 * Invariant (numpy's rule, the same bits under any piece count): for each
 * destination the writes happen in index order, so the last of repeated
 * positions wins. Chunks are walked in index order and each chunk's bucket
 * keeps index order; a destination belongs to exactly one piece of x.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define S_CHUNK ((int64_t)65536) /* positions per chunk: one row, ~0.75 MiB for f64 */
#define S_MAX_BUCKETS 4096       /* a row's ends stay <= 16 KiB */
/* log2 of a bucket's bytes of x: 512 KiB, half of L2. Measured, the CPU
 * time of a 10M f64 step (bench select scatter, 20 steps): 256 KiB windows
 * +10-25%, 128 KiB +80%, 1 MiB +30%, 2 MiB +75%. */
#define S_WINDOW_BYTES 19
/* At most 2^24 positions per segment (and rows of at most 1/16 of the
 * memory budget, --sysmem): a longer idx is scattered segment after segment,
 * in index order, so the rows take at most ~200 MiB (f64) at a time. */
#define S_SEGMENT_MAX ((int64_t)1 << 24)

typedef struct scatter_args {
  int64_t k, m, base;   /* k positions into a line of m, counted from base */
  int64_t C, B, shift;  /* chunks, buckets, log2(W) */
  int64_t off_pos, off_val, row; /* a row's layout, in bytes */
  int64_t one_value;    /* v is one value (stride 0): no val section */
  int64_t checked;      /* bad positions: write nothing and succeed (the caller reports) */
  int64_t gate;         /* > 0: args[5] holds `gate` check results for all of idx */
} scatter_args;

static int64_t align64(int64_t n) { return (n + 63) & ~(int64_t)63; }

/* A line of at most this many bytes is scattered by the plain put instead
 * (TYCHO_SCATTER_DIRECT overrides; 0: always bucketed). Such a line stays
 * in the last-level cache (32 MiB on the 2-core Zen 4), so its random
 * writes are cheap, and put's one pass beats the bucketed scatter's
 * extra pass and rows. Measured, CPU time of a step at --cpus 2 (machine
 * loaded, median of 15-30), the bench's seq positions: 1M f64 4.7 ms
 * against 6.5 ms bucketed, 2M 7.6-10.6 ms against 22 ms, 4M 20-24 ms
 * against 38 ms; uniform random positions: 1M and 2M even (10-11 ms,
 * 20-25 ms), 4M 42 ms against 37-41 ms; 10M even (seq). */
#define S_DIRECT_BYTES ((int64_t)16 << 20)

static int64_t direct_bytes(void) {
  const char *s = getenv("TYCHO_SCATTER_DIRECT");
  if (s && *s) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end == 0 && v >= 0) return (int64_t)v;
  }
  return S_DIRECT_BYTES;
}

bool ty__put_bucketable(int64_t o, int64_t k, int64_t m, int64_t r, ty_dtype idx, ty_dtype x) {
  const size_t es = ty_dtype_size(x);
  return o == 1 && r == 1 && k >= S_CHUNK && m > 0 && m < ((int64_t)1 << 43) && idx == TY_I64 &&
         (es == 1 || es == 2 || es == 4 || es == 8) && m * (int64_t)es > direct_bytes();
}

/* The line position of p, or a value >= m (as unsigned) when p is bad. */
static inline uint64_t line_pos(int64_t p, int64_t m, int64_t base) {
  return (uint64_t)(p < 0 ? p + m : p - base);
}

#define BUCKET_PASS(T)                                                                   \
  {                                                                                      \
    T *val = (T *)(row + a->off_val);                                                    \
    const T *vp = (const T *)tv->data;                                                   \
    for (int64_t i = s; i < e; i++) {                                                    \
      const uint64_t j = line_pos(ip[i * is], m, base);                                  \
      const uint32_t q = ends[j >> sh]++;                                                \
      pos[q] = (uint32_t)(j & wmask);                                                    \
      val[q] = vp[i * vs];                                                               \
    }                                                                                    \
  }

static int bucket_variant(ty_task_ctx *ctx) {
  const scatter_args *a = ctx->scalars;
  const ty_tile *tr = &ctx->args[0], *tb = &ctx->args[1], *ti = &ctx->args[2], *tv = &ctx->args[3];
  const int64_t *ip = (const int64_t *)ti->data, is = ti->strides[0];
  const int64_t vs = tv->strides[1], m = a->m, base = a->base, B = a->B;
  const int sh = (int)a->shift;
  const uint64_t wmask = ((uint64_t)1 << sh) - 1;
  const size_t es = ty_dtype_size(tv->dtype);
  for (int64_t c = ctx->lo[0]; c < ctx->hi[0]; c++) {
    char *row = tr->data + (c - ctx->lo[0]) * tr->strides[0];
    int64_t *bad = (int64_t *)tb->data + (c - ctx->lo[0]) * tb->strides[0];
    uint32_t *ends = (uint32_t *)row, *pos = (uint32_t *)(row + a->off_pos);
    const int64_t s = c * S_CHUNK, e = s + S_CHUNK < a->k ? s + S_CHUNK : a->k;
    /* count per bucket; a bad position counts in bucket 0 (then nothing is
     * sorted): no early exit, so the loop has no unpredictable branch */
    memset(ends, 0, sizeof(uint32_t) * (size_t)B);
    uint64_t any = 0;
    for (int64_t i = s; i < e; i++) {
      const uint64_t j = line_pos(ip[i * is], m, base);
      const bool out = j >= (uint64_t)m;
      any |= out;
      ends[out ? 0 : j >> sh]++;
    }
    *bad = -1;
    if (any) {
      for (int64_t i = s; i < e && *bad < 0; i++)
        if (line_pos(ip[i * is], m, base) >= (uint64_t)m) *bad = i;
      continue;
    }
    uint32_t start = 0; /* ends[b] := the start of bucket b; the pass moves it to the end */
    for (int64_t b = 0; b < B; b++) {
      const uint32_t n = ends[b];
      ends[b] = start;
      start += n;
    }
    if (a->one_value) {
      for (int64_t i = s; i < e; i++) {
        const uint64_t j = line_pos(ip[i * is], m, base);
        pos[ends[j >> sh]++] = (uint32_t)(j & wmask);
      }
      continue;
    }
    switch (es) {
    case 8: BUCKET_PASS(uint64_t) break;
    case 4: BUCKET_PASS(uint32_t) break;
    case 2: BUCKET_PASS(uint16_t) break;
    default: BUCKET_PASS(uint8_t) break;
    }
  }
  return 0;
}

/* Write bucket b's positions inside [lo, hi) of the line, chunk by chunk:
 * a bucket wholly inside the piece (all but the first and last) needs no
 * range test. `one` is the single value (one_value), else a row's vals. */
#define APPLY(T)                                                                         \
  {                                                                                      \
    T *xp = (T *)tx->data;                                                               \
    const T one = a->one_value ? *(const T *)tv->data : 0;                               \
    for (int64_t b = b0; b <= b1; b++) {                                                 \
      const int64_t w0 = b << sh, d = w0 - lo;                                           \
      const bool whole = w0 >= lo && w0 + ((int64_t)1 << sh) <= hi && xs == 1;           \
      for (int64_t c = 0; c < a->C; c++) {                                               \
        const char *row = rows + c * a->row;                                             \
        const uint32_t *ends = (const uint32_t *)row;                                    \
        const uint32_t *pos = (const uint32_t *)(row + a->off_pos);                      \
        const T *val = (const T *)(row + a->off_val);                                    \
        const uint32_t q0 = b ? ends[b - 1] : 0, q1 = ends[b];                           \
        if (whole && a->one_value) {                                                     \
          for (uint32_t q = q0; q < q1; q++) xp[d + pos[q]] = one;                       \
        } else if (whole) {                                                              \
          for (uint32_t q = q0; q < q1; q++) xp[d + pos[q]] = val[q];                    \
        } else {                                                                         \
          for (uint32_t q = q0; q < q1; q++) {                                           \
            const int64_t t = d + pos[q];                                                \
            if (t >= 0 && t < hi - lo) xp[t * xs] = a->one_value ? one : val[q];         \
          }                                                                              \
        }                                                                                \
      }                                                                                  \
    }                                                                                    \
  }

static int apply_variant(ty_task_ctx *ctx) {
  const scatter_args *a = ctx->scalars;
  const ty_tile *tx = &ctx->args[0], *ti = &ctx->args[3], *tv = &ctx->args[4];
  const char *rows = ctx->args[1].data;
  const int64_t *bad = (const int64_t *)ctx->args[2].data;
  const int64_t *all = a->gate ? (const int64_t *)ctx->args[5].data : NULL;
  for (int64_t c = 0; c < a->gate; c++)
    if (all[c] >= 0) return 0; /* a position of another segment is bad (checked) */
  for (int64_t c = 0; c < a->C; c++) {
    if (bad[c] < 0) continue;
    if (a->checked) return 0; /* nothing is written; the caller names bad[c] */
    return ty_ctx_fail(ctx, "put: index %lld is out of range for a dimension of size %lld",
                       (long long)((const int64_t *)ti->data)[bad[c] * ti->strides[0]],
                       (long long)a->m);
  }
  const int64_t lo = ctx->lo[1], hi = ctx->hi[1], xs = tx->strides[1];
  if (hi <= lo) return 0;
  const int sh = (int)a->shift;
  const int64_t b0 = lo >> sh, b1 = (hi - 1) >> sh;
  switch (ty_dtype_size(tx->dtype)) {
  case 8: APPLY(uint64_t) break;
  case 4: APPLY(uint32_t) break;
  case 2: APPLY(uint16_t) break;
  default: APPLY(uint8_t) break;
  }
  return 0;
}

ty_status ty__register_scatter_ops(ty_runtime *rt) {
  static const struct {
    const char *name;
    ty_variant_fn fn;
  } tasks[] = {{"put_bucket", bucket_variant}, {"put_apply", apply_variant}};
  for (size_t i = 0; i < sizeof tasks / sizeof tasks[0]; i++) {
    ty_task_desc d = {.name = tasks[i].name, .cpu = tasks[i].fn};
    ty_status st = ty_task_register(rt, &d, NULL);
    if (st) return st;
  }
  return TY_OK;
}

static int64_t segment_len(const ty_runtime *rt, size_t es) {
  int64_t n = (int64_t)(rt->cfg.sysmem / 16 / (4 + es)) / S_CHUNK * S_CHUNK;
  return n < S_CHUNK ? S_CHUNK : n > S_SEGMENT_MAX ? S_SEGMENT_MAX : n;
}

int64_t ty__put_segments(const ty_runtime *rt, int64_t k, ty_dtype x) {
  const int64_t n = segment_len(rt, ty_dtype_size(x));
  return (k + n - 1) / n;
}

/* One segment: positions [s0, s0 + k) of line, values of v3 alike. */
static ty_status segment(ty_runtime *rt, const char *fn, ty_store *xv, ty_store *line, ty_store *v3,
                         int64_t s0, int64_t k, const scatter_args *proto, ty_store *gate,
                         ty_store **bad) {
  scatter_args sa = *proto;
  const int64_t es = (int64_t)ty_dtype_size(xv->dtype);
  sa.k = k;
  sa.C = (k + S_CHUNK - 1) / S_CHUNK;
  sa.gate = gate ? gate->shape[0] : 0;
  sa.off_pos = align64(4 * sa.B);
  sa.off_val = sa.off_pos + align64(4 * S_CHUNK);
  sa.row = sa.off_val + (sa.one_value ? 0 : align64(es * S_CHUNK));
  ty_store *runs = NULL, *bv = NULL, *ls = NULL, *vs = NULL;
  const int64_t dom[2] = {sa.C, sa.row};
  ty_status st = ty__store_view(rt, line, 1, &k, line->strides, line->offset + s0 * line->strides[0], &ls);
  if (!st)
    st = ty__store_view(rt, v3, 3, (const int64_t[3]){1, k, 1}, v3->strides,
                        v3->offset + s0 * v3->strides[1], &vs);
  if (!st) st = ty_store_create(rt, TY_U8, 2, dom, &runs);
  if (!st) st = ty_store_create(rt, TY_I64, 1, &sa.C, bad);
  if (!st) /* one entry per chunk, stride 0 along the row: that dim is never split */
    st = ty__store_view(rt, *bad, 2, dom, (const int64_t[2]){(*bad)->strides[0], 0}, (*bad)->offset,
                        &bv);
  if (!st) {
    ty_arg args[4] = {ty__arg(runs, TY_PRIV_OUT, TY_PROJ_ALIGNED), ty__arg(bv, TY_PRIV_OUT, TY_PROJ_ALIGNED),
                      ty__arg(ls, TY_PRIV_IN, TY_PROJ_WHOLE), ty__arg(vs, TY_PRIV_IN, TY_PROJ_WHOLE)};
    st = ty__launch_named(rt, fn, "put_bucket", 2, dom, 4, args, &sa, sizeof sa, 1u << 1);
  }
  if (!st) {
    const int64_t xdom[3] = {1, xv->shape[1], 1};
    ty_arg args[6] = {ty__arg(xv, TY_PRIV_INOUT, TY_PROJ_ALIGNED), ty__arg(runs, TY_PRIV_IN, TY_PROJ_WHOLE),
                      ty__arg(*bad, TY_PRIV_IN, TY_PROJ_WHOLE), ty__arg(ls, TY_PRIV_IN, TY_PROJ_WHOLE),
                      ty__arg(vs, TY_PRIV_IN, TY_PROJ_WHOLE), ty__arg(gate, TY_PRIV_IN, TY_PROJ_WHOLE)};
    st = ty__launch_named(rt, fn, "put_apply", 3, xdom, gate ? 6 : 5, args, &sa, sizeof sa, 1u << 2);
  }
  ty_store *all[] = {bv, runs, vs, ls};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ty_store_release(all[i]);
  if (st) {
    ty_store_release(*bad);
    *bad = NULL;
  }
  return st;
}

ty_status ty__put_bucketed(ty_runtime *rt, const char *fn, ty_store *xv, ty_store *iv,
                           ty_store *v3, int64_t base, bool checked, ty_store *gate,
                           ty_store **bad) {
  if (bad) *bad = NULL;
  const int64_t m = xv->shape[1], k = iv->size;
  const int64_t es = (int64_t)ty_dtype_size(xv->dtype);
  int shift = S_WINDOW_BYTES - (es == 8 ? 3 : es == 4 ? 2 : es == 2 ? 1 : 0);
  while (((m - 1) >> shift) + 1 > S_MAX_BUCKETS) shift++;
  const scatter_args proto = {.m = m, .base = base, .shift = shift, .B = ((m - 1) >> shift) + 1,
                              .one_value = v3->strides[1] == 0, .checked = checked};
  ty_store *line = NULL;
  const int64_t n = segment_len(rt, (size_t)es);
  ty_status st = ty_store_reshape(rt, iv, 1, &k, &line); /* along: iv is (1, k, 1) */
  for (int64_t s0 = 0; !st && s0 < k; s0 += n) {
    ty_store *b = NULL;
    st = segment(rt, fn, xv, line, v3, s0, k - s0 < n ? k - s0 : n, &proto, gate, &b);
    if (!st && bad && !*bad) *bad = b; /* one segment: its chunks' results */
    else ty_store_release(b);
  }
  ty_store_release(line);
  if (st && bad) {
    ty_store_release(*bad);
    *bad = NULL;
  }
  return st;
}
