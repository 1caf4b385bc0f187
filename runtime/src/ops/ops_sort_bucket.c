/*
 * ops_sort_bucket.c — the long 1-D value sort of the 4- and 8-byte dtypes
 * (f64 f32 i64 i32 u64 u32): a sample sort whose buckets are sorted in
 * cache. ops_sort.c calls it (ty__sort_1d_bucket) for one line of at least
 * 2 SORT_CHUNK elements; argsort and the 1- and 2-byte dtypes keep the runs
 * and merges there.
 *
 * Why: the runs-and-merges sort read and wrote all of x once per merge round
 * (6 rounds at 10M) after merge-sorting its runs; 10M f64 took 162 ms on 2
 * cores against numpy 2.4's AVX-512 quicksort at 107 ms on one. Here x
 * crosses memory three times (classify and group, gather, write) and a
 * bucket (~39K elements at 10M, 312 KiB of keys) is sorted in L2.
 *
 *   1. sort_split  (domain (B), one piece): sorts B * SB_OVERSAMPLE keys
 *      sampled at fixed positions of x and keeps B - 1 splitters (B a power
 *      of 2, from n alone). A key the sample repeats gets a bucket of its own.
 *   2. sort_group  (domain (P, C), a piece = whole chunks of C elements): each
 *      chunk of x is grouped by bucket into its row of a (P, C) scratch store,
 *      a stable counting sort. An element's bucket is the number of splitters
 *      below its key: log2(B) branch-free steps down the splitters laid out
 *      as an implicit tree (Eytzinger order), eight elements at a time so
 *      that their steps overlap (32 f64 with AVX-512: 4 chains of gathers).
 *   3. sort_count  (domain (P, B)): the size of each bucket in each row, by
 *      binary search on the grouped rows (bucket b starts at the first element
 *      whose key is above splitter b - 1).
 *   4. sort_bucket (domain (n) of the output, any pieces): a piece finds the
 *      buckets that overlap its range, gathers each from the P rows in row
 *      order, sorts it (ksort on its keys, or rsort on its values when it
 *      holds -0.0 or NaN) and writes its part; a bucket of one key is copied
 *      in row order. A bucket cut by a piece boundary is sorted by both
 *      pieces, each writing its own part.
 *
 * Keys: an order-preserving map of the values onto unsigned integers in which
 * -0.0 and 0.0 are one key and every NaN is the largest key, so the order is
 * LESS_F's (numpy's: NaN last, -0.0 == 0.0); the values' bits are kept.
 * Every step is stable and B, C, P, the sample and the splitters depend on n
 * and x alone: the result is the unique stable sort, the same bits under any
 * piece count and instruction-set level, and as the merge sort's.
 */
#include "internal.h"
#include "isa.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SB_OVERSAMPLE 32         /* sampled keys per bucket: sizes within ~20% */
#define SB_BUCKET 65536          /* elements per bucket aimed at: 512 KiB of f64, L2-resident */
#define SB_MAX_LEVELS 12         /* at most 4096 buckets (u16 ids) */
#define SB_ROW ((int64_t)1 << 18) /* elements per chunk: 2 MiB of f64 */
#define SB_MAX_ROWS 64

typedef struct sb_args {
  int64_t n, C, B;
  int32_t L, pad;
} sb_args;

static inline uint64_t key_f64(double v) {
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  if (v != v) return UINT64_MAX;
  if (v == 0) return (uint64_t)1 << 63;
  return (u >> 63) ? ~u : u | ((uint64_t)1 << 63);
}
static inline uint32_t key_f32(float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  if (v != v) return UINT32_MAX;
  if (v == 0) return (uint32_t)1 << 31;
  return (u >> 31) ? ~u : u | ((uint32_t)1 << 31);
}
static inline uint64_t key_i64(int64_t v) { return (uint64_t)v ^ ((uint64_t)1 << 63); }
static inline uint32_t key_i32(int32_t v) { return (uint32_t)v ^ ((uint32_t)1 << 31); }
static inline uint64_t key_u64(uint64_t v) { return v; }
static inline uint32_t key_u32(uint32_t v) { return v; }

/* The keys are invertible but for -0.0 (the key of 0.0) and NaN (one key):
 * a bucket without them sorts its keys alone and maps them back (unkey); a
 * bucket with them sorts the values by key (rsort). */
static inline double unkey_f64(uint64_t k) {
  const uint64_t u = (k >> 63) ? k ^ ((uint64_t)1 << 63) : ~k;
  double v;
  memcpy(&v, &u, sizeof v);
  return v;
}
static inline float unkey_f32(uint32_t k) {
  const uint32_t u = (k >> 31) ? k ^ ((uint32_t)1 << 31) : ~k;
  float v;
  memcpy(&v, &u, sizeof v);
  return v;
}
static inline int64_t unkey_i64(uint64_t k) { return (int64_t)(k ^ ((uint64_t)1 << 63)); }
static inline int32_t unkey_i32(uint32_t k) { return (int32_t)(k ^ ((uint32_t)1 << 31)); }
static inline uint64_t unkey_u64(uint64_t k) { return k; }
static inline uint32_t unkey_u32(uint32_t k) { return k; }
static inline int special_f64(double v) { return v != v || (v == 0 && signbit(v)); }
static inline int special_f32(float v) { return v != v || (v == 0 && signbit(v)); }
#define special_i64(v) 0
#define special_i32(v) 0
#define special_u64(v) 0
#define special_u32(v) 0

#define SB_SMALL 24 /* groups up to this size: insertion sort */
#define SB_DIGIT 14 /* at most 16384 groups per counting pass: 64 KiB of counts */

/* ksort_K: stable sort of the keys k[0..m), all in [lo, hi] (t: scratch of
 * m), by one counting pass on the top bits of (key - lo): up to 2^SB_DIGIT
 * groups, m / 8 to m / 4 of them, which leaves groups of ~4-8 keys on a bucket's
 * near-uniform spread; then insertion sort of the small groups and the same
 * again on larger ones, within the group's own bounds (no scan for min and
 * max below the top: each level takes >= 4 bits of the range away). Returns
 * where the sorted keys are: k, or t when !back (saves the top's copy). */
#define KSORT_FUNCS(K)                                                                       \
  static K *ksort_##K(K *k, K *t, int64_t m, K lo, K hi, int back) {                         \
    if (lo == hi) return k;                                                                  \
    if (m <= SB_SMALL) {                                                                     \
      for (int64_t i = 1; i < m; i++) {                                                      \
        const K v = k[i];                                                                    \
        int64_t j = i;                                                                       \
        while (j > 0 && v < k[j - 1]) { k[j] = k[j - 1]; j--; }                              \
        k[j] = v;                                                                            \
      }                                                                                      \
      return k;                                                                              \
    }                                                                                        \
    int db = 4;                                                                              \
    while (db < SB_DIGIT && ((int64_t)1 << (db + 2)) <= m) db++;                             \
    const K range = hi - lo;                                                                 \
    int bits = 0;                                                                            \
    while (bits < (int)(8 * sizeof(K)) && (range >> bits) != 0) bits++;                      \
    const int shift = bits > db ? bits - db : 0;                                             \
    const K mask = (K)(((K)1 << shift) - 1);                                                 \
    const int64_t G = (int64_t)(range >> shift) + 1;                                         \
    uint32_t cnt[((int64_t)1 << db) + 1]; /* VLA: <= 4 << SB_DIGIT bytes */                  \
    memset(cnt, 0, sizeof(uint32_t) * (size_t)(G + 1));                                      \
    for (int64_t i = 0; i < m; i++) cnt[((k[i] - lo) >> shift) + 1]++;                       \
    for (int64_t g = 0; g < G; g++) cnt[g + 1] += cnt[g];                                    \
    for (int64_t i = 0; i < m; i++) t[cnt[(k[i] - lo) >> shift]++] = k[i];                   \
    /* cnt[g] is now where group g + 1 starts */                                             \
    int64_t s = 0;                                                                           \
    for (int64_t g = 0; g < G; g++) {                                                        \
      const int64_t e = cnt[g];                                                              \
      if (e - s > SB_SMALL) {                                                                \
        const K glo = lo + ((K)g << shift), ghi = hi - glo < mask ? hi : glo + mask;         \
        ksort_##K(t + s, k + s, e - s, glo, ghi, 1);                                         \
      } else if (shift > 0) {                                                                \
        for (int64_t i = s + 1; i < e; i++) {                                                \
          const K v = t[i];                                                                  \
          int64_t j = i;                                                                     \
          while (j > s && v < t[j - 1]) { t[j] = t[j - 1]; j--; }                            \
          t[j] = v;                                                                          \
        }                                                                                    \
      }                                                                                      \
      s = e;                                                                                 \
    }                                                                                        \
    if (!back) return t;                                                                     \
    memcpy(k, t, sizeof(K) * (size_t)m);                                                     \
    return k;                                                                                \
  }                                                                                          \
  static void minmax_##K(const K *k, int64_t m, K *lo, K *hi) {                              \
    K a = k[0], b = k[0];                                                                    \
    for (int64_t i = 1; i < m; i++) {                                                        \
      a = k[i] < a ? k[i] : a;                                                               \
      b = k[i] > b ? k[i] : b;                                                               \
    }                                                                                        \
    *lo = a;                                                                                 \
    *hi = b;                                                                                 \
  }
KSORT_FUNCS(uint64_t)
KSORT_FUNCS(uint32_t)

/* the dtypes of this sort, listed once for the switches: X(NAME, T, K, E) */
#define SB_TYPES(X)                                                                       \
  X(f64, double, uint64_t, TY_F64) X(f32, float, uint32_t, TY_F32)                        \
  X(i64, int64_t, uint64_t, TY_I64) X(i32, int32_t, uint32_t, TY_I32)                     \
  X(u64, uint64_t, uint64_t, TY_U64) X(u32, uint32_t, uint32_t, TY_U32)

/* The tree t[1..B) of the sorted splitters s[0..B-1) in Eytzinger order: the
 * children of t[i] are t[2i] and t[2i+1]; walking down with
 * i = 2i + (k > t[i]) for L steps ends at B + (number of splitters < k). */
static void tree_fill(const uint64_t *s, uint64_t *t, int64_t *j, int64_t i, int64_t B) {
  if (i >= B) return;
  tree_fill(s, t, j, 2 * i, B);
  t[i] = s[(*j)++];
  tree_fill(s, t, j, 2 * i + 1, B);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SB_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))
/* group_f64's classification with AVX-512, for the process's AVX-512 level
 * (ty__isa_lanes() == 8; TYCHO_ISA lowers it): keys 8 at a time, the tree
 * walk as 4 independent chains of 8 gathers (a gather's latency is ~20
 * cycles, one level of one chain); the counting and the grouping stay scalar.
 * The same buckets as the scalar walk, so the same bits. */
SB_AVX512 static __m512i key8_f64(const double *x) {
  const __m512d v = _mm512_loadu_pd(x);
  const __m512i u = _mm512_castpd_si512(v), sign = _mm512_set1_epi64((long long)((uint64_t)1 << 63));
  const __m512i ones = _mm512_set1_epi64(-1);
  const __mmask8 neg = _mm512_movepi64_mask(u);
  __m512i k = _mm512_xor_si512(u, _mm512_mask_blend_epi64(neg, sign, ones));
  k = _mm512_mask_mov_epi64(k, _mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_EQ_OQ), sign);
  return _mm512_mask_mov_epi64(k, _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q), ones);
}
SB_AVX512 static int64_t classify_f64_avx512(const double *x, int64_t len, const uint64_t *tree, int L,
                                             uint16_t *bid, int64_t *cnt) {
  const int64_t B = (int64_t)1 << L;
  const __m512i one = _mm512_set1_epi64(1), base = _mm512_set1_epi64(B);
  int64_t i = 0;
  for (; i + 32 <= len; i += 32) {
    __m512i k[4], j[4];
    for (int u = 0; u < 4; u++) {
      k[u] = key8_f64(x + i + 8 * u);
      j[u] = one;
    }
    for (int l = 0; l < L; l++)
      for (int u = 0; u < 4; u++) {
        const __m512i t = _mm512_i64gather_epi64(j[u], (const long long *)tree, 8);
        const __mmask8 gt = _mm512_cmpgt_epu64_mask(k[u], t);
        j[u] = _mm512_add_epi64(j[u], j[u]);
        j[u] = _mm512_mask_add_epi64(j[u], gt, j[u], one);
      }
    for (int u = 0; u < 4; u++)
      _mm_storeu_si128((__m128i *)(bid + i + 8 * u), _mm512_cvtepi64_epi16(_mm512_sub_epi64(j[u], base)));
    for (int u = 0; u < 32; u++) cnt[bid[i + u]]++;
  }
  return i;
}
/* k[0..l) = the keys of x[0..l); whether one is -0.0 or NaN */
SB_AVX512 static int keys_f64_avx512(const double *x, int64_t l, uint64_t *k) {
  __mmask8 sp = 0;
  int64_t i = 0;
  for (; i + 8 <= l; i += 8) {
    const __m512d v = _mm512_loadu_pd(x + i);
    const __mmask8 z = _mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_EQ_OQ);
    sp |= _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q) | (z & _mm512_movepi64_mask(_mm512_castpd_si512(v)));
    _mm512_storeu_si512(k + i, key8_f64(x + i));
  }
  int r = sp != 0;
  for (; i < l; i++) {
    r |= special_f64(x[i]);
    k[i] = key_f64(x[i]);
  }
  return r;
}
/* the least and the greatest of k[0..m), m >= 1 */
SB_AVX512 static void minmax_u64_avx512(const uint64_t *k, int64_t m, uint64_t *lo, uint64_t *hi) {
  __m512i a = _mm512_set1_epi64((long long)k[0]), b = a;
  int64_t i = 0;
  for (; i + 8 <= m; i += 8) {
    const __m512i v = _mm512_loadu_si512(k + i);
    a = _mm512_min_epu64(a, v);
    b = _mm512_max_epu64(b, v);
  }
  uint64_t x = _mm512_reduce_min_epu64(a), y = _mm512_reduce_max_epu64(b);
  for (; i < m; i++) {
    x = k[i] < x ? k[i] : x;
    y = k[i] > y ? k[i] : y;
  }
  *lo = x;
  *hi = y;
}
/* out[0..l) = the values of the keys k[0..l) (no -0.0 or NaN among them) */
SB_AVX512 static void unkeys_f64_avx512(const uint64_t *k, int64_t l, double *out) {
  const __m512i sign = _mm512_set1_epi64((long long)((uint64_t)1 << 63)), ones = _mm512_set1_epi64(-1);
  int64_t i = 0;
  for (; i + 8 <= l; i += 8) {
    const __m512i u = _mm512_loadu_si512(k + i);
    const __mmask8 pos = _mm512_movepi64_mask(u);
    _mm512_storeu_pd(out + i, _mm512_castsi512_pd(_mm512_xor_si512(u, _mm512_mask_blend_epi64(pos, ones, sign))));
  }
  for (; i < l; i++) out[i] = unkey_f64(k[i]);
}
#endif

/* how many of the first elements a vector classification did (0: none) */
#if defined(__x86_64__) && defined(__GNUC__)
#define CLASSIFY_FAST(E, x, len, tree, L, bid, off)                                       \
  (E == TY_F64 && ty__isa_lanes() == 8                                                       \
       ? classify_f64_avx512((const double *)(const void *)(x), len, (const uint64_t *)(const void *)(tree), L, bid, off) \
       : 0)
#define VEC_F64(E) (E == TY_F64 && ty__isa_lanes() == 8)
#define KEYS_F64(x, l, k) keys_f64_avx512((const double *)(const void *)(x), l, (uint64_t *)(void *)(k))
#define MINMAX_U64(k, m, lo, hi) minmax_u64_avx512((const uint64_t *)(const void *)(k), m, (uint64_t *)(void *)(lo), (uint64_t *)(void *)(hi))
#define UNKEYS_F64(k, l, out) unkeys_f64_avx512((const uint64_t *)(const void *)(k), l, (double *)(void *)(out))
#else
#define CLASSIFY_FAST(E, x, len, tree, L, bid, off) 0
#define VEC_F64(E) 0
#define KEYS_F64(x, l, k) 0
#define UNKEYS_F64(k, l, out) ((void)0)
#define MINMAX_U64(k, m, lo, hi) ((void)0)
#endif

#define SB_FUNCS(NAME, T, K, E)                                                              \
  /* stable LSD radix sort of a[0..m) by key (t: scratch of m) */                           \
  static void rsort_##NAME(T *a, T *t, int64_t m) {                                          \
    enum { D = sizeof(K) };                                                                  \
    if (m <= 16) {                                                                           \
      for (int64_t i = 1; i < m; i++) {                                                      \
        const T v = a[i];                                                                    \
        const K k = key_##NAME(v);                                                           \
        int64_t j = i;                                                                       \
        while (j > 0 && k < key_##NAME(a[j - 1])) { a[j] = a[j - 1]; j--; }                  \
        a[j] = v;                                                                            \
      }                                                                                      \
      return;                                                                                \
    }                                                                                        \
    int64_t cnt[D][256];                                                                     \
    memset(cnt, 0, sizeof cnt);                                                              \
    K all = (K)~(K)0, any = 0;                                                               \
    for (int64_t i = 0; i < m; i++) {                                                        \
      const K k = key_##NAME(a[i]);                                                          \
      all &= k;                                                                              \
      any |= k;                                                                              \
      for (int d = 0; d < D; d++) cnt[d][(k >> (8 * d)) & 255]++;                            \
    }                                                                                        \
    const K diff = all ^ any; /* the bits on which the keys differ */                        \
    T *src = a, *dst = t;                                                                    \
    for (int d = 0; d < D; d++) {                                                            \
      if (!((diff >> (8 * d)) & 255)) continue;                                              \
      int64_t off[256], sum = 0;                                                             \
      for (int b = 0; b < 256; b++) {                                                        \
        off[b] = sum;                                                                        \
        sum += cnt[d][b];                                                                    \
      }                                                                                      \
      for (int64_t i = 0; i < m; i++) {                                                      \
        const T v = src[i];                                                                  \
        dst[off[(key_##NAME(v) >> (8 * d)) & 255]++] = v;                                    \
      }                                                                                      \
      T *sw = src;                                                                           \
      src = dst;                                                                             \
      dst = sw;                                                                              \
    }                                                                                        \
    if (src != a) memcpy(a, src, sizeof(T) * (size_t)m);                                     \
  }                                                                                          \
  /* row[0..len) = x[0..len) grouped by bucket (stable); bid: scratch of len */              \
  static void group_##NAME(const T *x, int64_t len, T *row, const K *tree, int L,            \
                           uint16_t *bid, int64_t *off) {                                    \
    const int64_t B = (int64_t)1 << L;                                                       \
    memset(off, 0, sizeof(int64_t) * (size_t)B);                                             \
    int64_t i = CLASSIFY_FAST(E, x, len, tree, L, bid, off);                              \
    for (; i + 8 <= len; i += 8) {                                                           \
      K k[8];                                                                                \
      uint32_t j[8];                                                                         \
      for (int u = 0; u < 8; u++) {                                                          \
        k[u] = key_##NAME(x[i + u]);                                                         \
        j[u] = 1;                                                                            \
      }                                                                                      \
      for (int l = 0; l < L; l++)                                                            \
        for (int u = 0; u < 8; u++) j[u] = 2 * j[u] + (k[u] > tree[j[u]]);                   \
      for (int u = 0; u < 8; u++) {                                                          \
        bid[i + u] = (uint16_t)(j[u] - B);                                                   \
        off[j[u] - B]++;                                                                     \
      }                                                                                      \
    }                                                                                        \
    for (; i < len; i++) {                                                                   \
      const K k = key_##NAME(x[i]);                                                          \
      uint32_t j = 1;                                                                        \
      for (int l = 0; l < L; l++) j = 2 * j + (k > tree[j]);                                 \
      bid[i] = (uint16_t)(j - B);                                                            \
      off[j - B]++;                                                                          \
    }                                                                                        \
    int64_t sum = 0;                                                                         \
    for (int64_t b = 0; b < B; b++) {                                                        \
      const int64_t c = off[b];                                                              \
      off[b] = sum;                                                                          \
      sum += c;                                                                              \
    }                                                                                        \
    for (i = 0; i < len; i++) row[off[bid[i]]++] = x[i];                                     \
  }                                                                                          \
  /* first q in [p, len) whose key is above s (row grouped by bucket) */                     \
  static int64_t above_##NAME(const T *row, int64_t p, int64_t len, uint64_t s) {            \
    while (p < len) {                                                                        \
      const int64_t mid = p + (len - p) / 2;                                                 \
      if ((uint64_t)key_##NAME(row[mid]) > s) len = mid;                                     \
      else p = mid + 1;                                                                      \
    }                                                                                        \
    return p;                                                                                \
  }                                                                                          \
  /* one bucket: its P segments (row c from at[c * B], len[c * hs]) gathered   \
   * in row order, sorted, and its elements [skip, skip + cnt) written to out; \
   * w: scratch of 2 m */                                                                    \
  static void bucket_##NAME(const char *rows, int64_t rs, const int64_t *at, int64_t B,        \
                            const int64_t *len, int64_t hs, int64_t P, int64_t m, void *w,     \
                            T *out, int64_t skip, int64_t cnt) {                             \
    K *k = w, *t = k + m;                                                                    \
    int sp = 0;                                                                              \
    int64_t q = 0;                                                                           \
    for (int64_t c = 0; c < P; c++) {                                                        \
      const T *src = (const T *)(rows + c * rs) + at[c * B];                                 \
      const int64_t l = len[c * hs];                                                         \
      if (VEC_F64(E)) {                                                                      \
        sp |= KEYS_F64(src, l, k + q);                                                       \
        q += l;                                                                              \
        continue;                                                                            \
      }                                                                                      \
      for (int64_t i = 0; i < l; i++) {                                                      \
        sp |= special_##NAME(src[i]);                                                        \
        k[q++] = key_##NAME(src[i]);                                                         \
      }                                                                                      \
    }                                                                                        \
    if (!sp && m <= (int64_t)UINT32_MAX) { /* ksort counts in 32 bits */                     \
      K klo, khi;                                                                            \
      if (VEC_F64(E)) MINMAX_U64(k, m, &klo, &khi);                                           \
      else minmax_##K(k, m, &klo, &khi);                                                     \
      const K *r = ksort_##K(k, t, m, klo, khi, 0); /* k or t */                             \
      if (VEC_F64(E)) UNKEYS_F64(r + skip, cnt, out);                                        \
      else                                                                                   \
        for (int64_t i = 0; i < cnt; i++) out[i] = unkey_##NAME(r[skip + i]);                \
      return;                                                                                \
    }                                                                                        \
    T *v = w;                                                                                \
    q = 0;                                                                                   \
    for (int64_t c = 0; c < P; c++) {                                                        \
      memcpy(v + q, (const T *)(rows + c * rs) + at[c * B], sizeof(T) * (size_t)len[c * hs]);  \
      q += len[c * hs];                                                                      \
    }                                                                                        \
    rsort_##NAME(v, v + m, m);                                                               \
    memcpy(out, v + skip, sizeof(T) * (size_t)cnt);                                          \
  }

SB_FUNCS(f64, double, uint64_t, TY_F64)
SB_FUNCS(f32, float, uint32_t, TY_F32)
SB_FUNCS(i64, int64_t, uint64_t, TY_I64)
SB_FUNCS(i32, int32_t, uint32_t, TY_I32)
SB_FUNCS(u64, uint64_t, uint64_t, TY_U64)
SB_FUNCS(u32, uint32_t, uint32_t, TY_U32)

/* splitmix64: the sample's fixed pseudo-random offsets */
static uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15u;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* args: splitters out (B) u64, x WHOLE. One piece. Sample j is at a fixed
 * pseudo-random place in the j-th of S equal strides of x. */
static int split_variant(ty_task_ctx *ctx) {
  const sb_args *a = ctx->scalars;
  const ty_tile *ts = &ctx->args[0], *tx = &ctx->args[1];
  const size_t es = ty_dtype_size(tx->dtype);
  const int64_t S = a->B * SB_OVERSAMPLE < a->n ? a->B * SB_OVERSAMPLE : a->n;
  char *buf = malloc(es * (size_t)S * 2);
  if (!buf) return ty_ctx_fail(ctx, "sort: no memory for a sample of %lld elements", (long long)S);
  for (int64_t j = 0; j < S; j++) {
    const int64_t lo = j * a->n / S, hi = (j + 1) * a->n / S;
    const int64_t at = lo + (int64_t)(mix((uint64_t)j) % (uint64_t)(hi - lo));
    memcpy(buf + (size_t)j * es, tx->data + at * (int64_t)es, es);
  }
  uint64_t *s = (uint64_t *)ts->data;
  switch (tx->dtype) {
#define X(NAME, T, K, E)                                                                   \
  case E: {                                                                                \
    T *v = (T *)buf;                                                                       \
    rsort_##NAME(v, v + S, S);                                                             \
    for (int64_t b = 1; b < a->B; b++) s[b - 1] = key_##NAME(v[b * S / a->B]);            \
  } break;
    SB_TYPES(X)
#undef X
  default: break;
  }
  /* a key repeated among the splitters gets a bucket of its own: the first of
   * the run becomes key - 1, so the next bucket, (key - 1, key], holds only
   * that key (sort_bucket copies it in row order, without sorting) */
  for (int64_t b = 0; b + 1 < a->B - 1; b++)
    if (s[b] == s[b + 1] && s[b] > 0 && (b == 0 || s[b - 1] < s[b] - 1)) s[b] = s[b] - 1;
  s[a->B - 1] = UINT64_MAX; /* not a splitter: the store's last element */
  free(buf);
  return 0;
}

/* args: rows out (P, C), x WHOLE, splitters WHOLE (B) */
static int group_variant(ty_task_ctx *ctx) {
  const sb_args *a = ctx->scalars;
  const ty_tile *tr = &ctx->args[0], *tx = &ctx->args[1], *ts = &ctx->args[2];
  const size_t es = ty_dtype_size(tx->dtype);
  const int64_t B = a->B;
  uint64_t *tree = malloc(sizeof(uint64_t) * (size_t)B * 2 + sizeof(int64_t) * (size_t)B +
                          sizeof(uint16_t) * (size_t)a->C);
  if (!tree) return ty_ctx_fail(ctx, "sort: no memory to group a chunk of %lld elements", (long long)a->C);
  uint64_t *t32 = tree + B; /* the tree again, as 4-byte keys for the 4-byte dtypes */
  int64_t *off = (int64_t *)(t32 + B);
  uint16_t *bid = (uint16_t *)(off + B);
  int64_t j = 0;
  tree[0] = 0;
  tree_fill((const uint64_t *)ts->data, tree, &j, 1, B);
  uint32_t *tk32 = (uint32_t *)t32;
  for (int64_t i = 0; i < B; i++) tk32[i] = (uint32_t)tree[i];
  for (int64_t c = ctx->lo[0]; c < ctx->hi[0]; c++) {
    const int64_t s0 = c * a->C, len = s0 + a->C < a->n ? a->C : a->n - s0;
    const char *src = tx->data + s0 * (int64_t)es;
    char *row = tr->data + (c - ctx->lo[0]) * tr->strides[0] * (int64_t)es;
    switch (tx->dtype) {
#define X(NAME, T, K, E)                                                                   \
  case E:                                                                                  \
    group_##NAME((const T *)src, len, (T *)row, sizeof(K) == 8 ? (const K *)tree : (const K *)tk32, \
                 a->L, bid, off);                                                          \
    break;
      SB_TYPES(X)
#undef X
    default: break;
    }
  }
  free(tree);
  return 0;
}

/* args: counts out (P, B) i64, rows WHOLE (P, C), splitters WHOLE (B) */
static int count_variant(ty_task_ctx *ctx) {
  const sb_args *a = ctx->scalars;
  const ty_tile *th = &ctx->args[0], *tr = &ctx->args[1], *ts = &ctx->args[2];
  const size_t es = ty_dtype_size(tr->dtype);
  const uint64_t *s = (const uint64_t *)ts->data;
  for (int64_t c = ctx->lo[0]; c < ctx->hi[0]; c++) {
    const int64_t s0 = c * a->C, len = s0 + a->C < a->n ? a->C : a->n - s0;
    const char *row = tr->data + c * tr->strides[0] * (int64_t)es;
    int64_t *h = (int64_t *)th->data + (c - ctx->lo[0]) * th->strides[0];
    int64_t p = 0;
    for (int64_t b = 1; b < a->B; b++) {
      int64_t q = p;
      switch (tr->dtype) {
#define X(NAME, T, K, E) case E: q = above_##NAME((const T *)row, p, len, s[b - 1]); break;
        SB_TYPES(X)
#undef X
      default: break;
      }
      h[(b - 1) * th->strides[1]] = q - p;
      p = q;
    }
    h[(a->B - 1) * th->strides[1]] = len - p;
  }
  return 0;
}

/* Whether bucket b can hold one key only: (s[b - 1], s[b]] with
 * s[b] = s[b - 1] + 1 (bucket 0 is [0, s[0]]). */
static bool one_key(const uint64_t *s, int64_t b, int64_t B) {
  if (b == B - 1) return false;
  return b == 0 ? s[0] == 0 : s[b] - s[b - 1] == 1;
}

/* args: out (n), rows WHOLE (P, C), counts WHOLE (P, B), splitters WHOLE (B) */
static int bucket_variant(ty_task_ctx *ctx) {
  const sb_args *a = ctx->scalars;
  const ty_tile *to = &ctx->args[0], *tr = &ctx->args[1], *th = &ctx->args[2];
  const uint64_t *sp = (const uint64_t *)ctx->args[3].data;
  const size_t es = ty_dtype_size(to->dtype);
  const int64_t B = a->B, P = th->shape[0], lo = ctx->lo[0], hi = ctx->hi[0];
  const int64_t *h = (const int64_t *)th->data;
  /* at[c * B + b]: where bucket b starts in row c; g[b]: where it starts in the output */
  int64_t *at = malloc(sizeof(int64_t) * (size_t)(P * B + B + 1));
  if (!at) return ty_ctx_fail(ctx, "sort: no memory for %lld bucket counts", (long long)(P * B));
  int64_t *g = at + P * B;
  for (int64_t b = 0; b <= B; b++) g[b] = 0;
  for (int64_t c = 0; c < P; c++) {
    int64_t sum = 0;
    for (int64_t b = 0; b < B; b++) {
      const int64_t k = h[c * th->strides[0] + b * th->strides[1]];
      at[c * B + b] = sum;
      sum += k;
      g[b + 1] += k;
    }
  }
  for (int64_t b = 0; b < B; b++) g[b + 1] += g[b];
  int64_t b0 = 0, maxm = 0;
  while (b0 < B && g[b0 + 1] <= lo) b0++;
  for (int64_t b = b0; b < B && g[b] < hi; b++)
    if (g[b + 1] - g[b] > maxm && !one_key(sp, b, B)) maxm = g[b + 1] - g[b];
  char *buf = malloc(es * (size_t)maxm * 2 + 1);
  if (!buf) {
    free(at);
    return ty_ctx_fail(ctx, "sort: no memory for a bucket of %lld elements", (long long)maxm);
  }
  for (int64_t b = b0; b < B && g[b] < hi; b++) {
    const int64_t m = g[b + 1] - g[b];
    if (m == 0) continue;
    const int64_t from = g[b] > lo ? g[b] : lo, end = g[b + 1] < hi ? g[b + 1] : hi;
    const int64_t rs = tr->strides[0] * (int64_t)es;
    if (one_key(sp, b, B)) { /* equal keys: the stable order is the rows' order */
      int64_t k = g[b];
      for (int64_t c = 0; c < P && k < end; c++) {
        const int64_t len = h[c * th->strides[0] + b * th->strides[1]];
        const int64_t f = from > k ? from : k, e = end < k + len ? end : k + len;
        if (f < e)
          memcpy(to->data + (f - lo) * (int64_t)es, tr->data + c * rs + (at[c * B + b] + f - k) * (int64_t)es,
                 (size_t)(e - f) * es);
        k += len;
      }
      continue;
    }
    switch (to->dtype) {
#define X(NAME, T, K, E)                                                                   \
  case E:                                                                                  \
    bucket_##NAME(tr->data, rs, at + b, B, h + b * th->strides[1], th->strides[0], P, m, buf, \
                  (T *)to->data + (from - lo), from - g[b], end - from);                   \
    break;
      SB_TYPES(X)
#undef X
    default: break;
    }
  }
  free(buf);
  free(at);
  return 0;
}

ty_status ty__register_sort_bucket_ops(ty_runtime *rt) {
  ty_task_desc d[4] = {{.name = "sort_split", .cpu = split_variant},
                       {.name = "sort_group", .cpu = group_variant},
                       {.name = "sort_count", .cpu = count_variant},
                       {.name = "sort_bucket", .cpu = bucket_variant}};
  ty_status st = TY_OK;
  for (int i = 0; !st && i < 4; i++) st = ty_task_register(rt, &d[i], NULL);
  return st;
}

bool ty__sort_bucketable(ty_dtype t) {
  switch (t) {
#define X(NAME, T, K, E) case E:
    SB_TYPES(X)
#undef X
    return true;
  default: return false;
  }
}

/* The sorted values of the dense 1-D store xd (n >= 2) into *out. */
ty_status ty__sort_1d_bucket(ty_runtime *rt, const char *fn, ty_store *xd, ty_store **out) {
  *out = NULL;
  const int64_t n = xd->size;
  int L = 1;
  while (L < SB_MAX_LEVELS && ((int64_t)1 << L) * SB_BUCKET < n) L++;
  const int64_t B = (int64_t)1 << L;
  int64_t P = (n + SB_ROW - 1) / SB_ROW;
  if (P > SB_MAX_ROWS) P = SB_MAX_ROWS;
  const int64_t C = (n + P - 1) / P;
  const sb_args sa = {.n = n, .C = C, .B = B, .L = L};
  ty_store *split = NULL, *rows = NULL, *counts = NULL, *res = NULL;
  const int64_t rdom[2] = {P, C}, cdom[2] = {P, B};
  ty_status st = ty_store_create(rt, TY_U64, 1, &B, &split);
  if (!st) {
    ty_arg args[2] = {ty__arg(split, TY_PRIV_OUT, TY_PROJ_ALIGNED), ty__arg(xd, TY_PRIV_IN, TY_PROJ_WHOLE)};
    st = ty__launch_named(rt, fn, "sort_split", 1, &B, 2, args, &sa, sizeof sa, 1u << 0);
  }
  if (!st) st = ty_store_create(rt, xd->dtype, 2, rdom, &rows);
  if (!st) {
    ty_arg args[3] = {ty__arg(rows, TY_PRIV_OUT, TY_PROJ_ALIGNED), ty__arg(xd, TY_PRIV_IN, TY_PROJ_WHOLE),
                      ty__arg(split, TY_PRIV_IN, TY_PROJ_WHOLE)};
    st = ty__launch_named(rt, fn, "sort_group", 2, rdom, 3, args, &sa, sizeof sa, 1u << 1);
  }
  if (!st) st = ty_store_create(rt, TY_I64, 2, cdom, &counts);
  if (!st) {
    ty_arg args[3] = {ty__arg(counts, TY_PRIV_OUT, TY_PROJ_ALIGNED), ty__arg(rows, TY_PRIV_IN, TY_PROJ_WHOLE),
                      ty__arg(split, TY_PRIV_IN, TY_PROJ_WHOLE)};
    st = ty__launch_named(rt, fn, "sort_count", 2, cdom, 3, args, &sa, sizeof sa, 1u << 1);
  }
  if (!st) st = ty_store_create(rt, xd->dtype, 1, &n, &res);
  if (!st) {
    ty_arg args[4] = {ty__arg(res, TY_PRIV_OUT, TY_PROJ_ALIGNED), ty__arg(rows, TY_PRIV_IN, TY_PROJ_WHOLE),
                      ty__arg(counts, TY_PRIV_IN, TY_PROJ_WHOLE), ty__arg(split, TY_PRIV_IN, TY_PROJ_WHOLE)};
    st = ty__launch_named(rt, fn, "sort_bucket", 1, &n, 4, args, &sa, sizeof sa, 0);
  }
  ty_store_release(split);
  ty_store_release(rows);
  ty_store_release(counts);
  if (st) {
    ty_store_release(res);
    return st;
  }
  *out = res;
  return TY_OK;
}
