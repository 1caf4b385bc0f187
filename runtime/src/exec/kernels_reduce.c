/*
 * kernels_reduce.c — reduction kernels: sum, prod, min, max as 1-D
 * accumulation loops, argmin/argmax as index scans, the variants of their
 * tasks, and the ordered scheme that gives float sums and products the same
 * bits whatever the piece count.
 *
 * How a reduction launch looks (ops.c): the domain is the input's shape; the
 * output (the input's shape with the reduced axes removed) is passed as a view
 * broadcast back to the input's shape, stride 0 on the reduced axes. Either
 *  - TY_PRIV_REDUCE: every piece gets a private accumulator tile initialised to
 *    the identity and the runtime combines them in piece order (any dim may be
 *    split), or
 *  - TY_PRIV_OUT: reduced dims are never split, so the piece owns its outputs
 *    and initialises them itself (scalars.init_out).
 * In both cases the kernel sees (acc, in) with acc's byte stride 0 along a
 * reduced run and accumulates; ty__foreach decides whether the innermost run
 * reduces (acc stride 0: one accumulator) or combines element-wise (reducing
 * an outer axis: acc[i] op= in[i] over a row, which vectorises).
 *
 * Ordered float sums and products (kernels.h; docs/policy.md, "Determinism").
 * Float addition is not associative: a sum's bits depend on where it is cut
 * and in which order the parts are added. So the order of every float sum and
 * product is a function of the launch's shape alone:
 *  - tiles: a REDUCE launch is cut by ty__ordered_tiles (partition.c), or runs
 *    as one piece that walks the same tiles (ty__ordered_walk below); the
 *    tiles' partials are added in tile order either way;
 *  - leaves and tree (FULL, INNER): the elements in C order are cut into
 *    leaves of 128, each summed by numpy's pairwise base case (8 accumulators,
 *    then the remainder one by one), and the leaves are added as a binary tree
 *    aligned to powers of two: a binary counter whose levels hold 1, 2, 4, ...
 *    leaves, added from the smallest level up at the end. For 128 * 2^k
 *    elements this is numpy's pairwise sum exactly; otherwise it keeps its
 *    O(log n) error bound. A whole aligned subtree in one run (every leaf of
 *    a contiguous run but the tail) goes through the recursive pairwise
 *    function directly, so the loop runs at numpy's speed;
 *  - OUTER: each output adds its inputs one after the other in index order,
 *    also when a piece is one column wide (ty__foreach would otherwise see a
 *    reduction run and use the tree).
 * The fused kernel (fused_cpu.c) follows the same rules block by block, so
 * fused and unfused sums agree. Products use the same leaves and tree with *
 * (8 lanes per leaf). Integer sums and products wrap modulo 2^64 and min/max
 * are exact: any order gives the same bits, and they keep plain loops.
 *
 * Accuracy: f32 inputs are summed in double within a run. min/max propagate
 * NaN; argmin/argmax return the first occurrence, and the first NaN when there
 * is one (numpy's rule).
 */
#include "alloc.h"
#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef uint8_t ty_bool_t;

#define SZ(T) ((int64_t)sizeof(T))
#define LOAD(T, p, i, s) (*(const T *)((p) + (i) * (s)))

/* ---- pairwise sums and tree products ------------------------------------------------ */

/* Four whole contiguous f64 leaves (4 * TY__OLEAF elements): PAIRWISE's
 * leaves and its tree over them, ((L0 + L1) + (L2 + L3)), the same additions
 * in the same order, with four chains of vector additions in flight instead
 * of one (a leaf's 15 dependent additions bound the ordered sum: CG's dot
 * products at 2048 x 2048). */
typedef double pw_v8 __attribute__((vector_size(64)));
static double pw4_f64(const double *a) {
  pw_v8 r[4];
  for (int l = 0; l < 4; l++) memcpy(&r[l], a + l * TY__OLEAF, sizeof r[l]);
  for (int i = 8; i < TY__OLEAF; i += 8)
    for (int l = 0; l < 4; l++) {
      pw_v8 x;
      memcpy(&x, a + l * TY__OLEAF + i, sizeof x);
      r[l] += x;
    }
  double L[4];
  for (int l = 0; l < 4; l++)
    L[l] = ((r[l][0] + r[l][1]) + (r[l][2] + r[l][3])) + ((r[l][4] + r[l][5]) + (r[l][6] + r[l][7]));
  return (L[0] + L[1]) + (L[2] + L[3]);
}

/* numpy's pairwise_sum, with its exact blocking. The ordered scheme calls it
 * on one leaf (n <= 128) or on 128 * 2^k elements, where it halves exactly:
 * the aligned tree over leaves. FOUR: contiguous f64, whose four leaves at
 * once go to pw4_f64 (the same bits). */
#define PAIRWISE(NAME, TI, TW, FOUR)                                                   \
  static TW NAME(const char *p, int64_t n, int64_t s) {                                \
    if (FOUR && s == SZ(TI) && n == 4 * TY__OLEAF) return pw4_f64((const double *)p);  \
    if (n < 8) {                                                                       \
      TW r = 0;                                                                        \
      for (int64_t i = 0; i < n; i++) r += (TW)LOAD(TI, p, i, s);                      \
      return r;                                                                        \
    }                                                                                  \
    if (n <= TY__OLEAF) {                                                              \
      TW r[8];                                                                         \
      int64_t i;                                                                       \
      if (s == SZ(TI)) {                                                               \
        const TI *a_ = (const TI *)p;                                                  \
        for (int j = 0; j < 8; j++) r[j] = (TW)a_[j];                                  \
        for (i = 8; i < n - (n % 8); i += 8)                                           \
          for (int j = 0; j < 8; j++) r[j] += (TW)a_[i + j];                           \
      } else {                                                                         \
        for (int j = 0; j < 8; j++) r[j] = (TW)LOAD(TI, p, j, s);                      \
        for (i = 8; i < n - (n % 8); i += 8)                                           \
          for (int j = 0; j < 8; j++) r[j] += (TW)LOAD(TI, p, i + j, s);               \
      }                                                                                \
      TW res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));      \
      for (; i < n; i++) res += (TW)LOAD(TI, p, i, s);                                 \
      return res;                                                                      \
    }                                                                                  \
    int64_t n2 = n / 2;                                                                \
    n2 -= n2 % 8;                                                                      \
    return NAME(p, n2, s) + NAME(p + n2 * s, n - n2, s);                               \
  }
PAIRWISE(pw_f64, double, double, 1)

/* pw4_f64 and pw_f64 over the products a[i] * b[i]: each product rounded,
 * then the same additions in the same order, so the bits of pw_f64 on the
 * products stored (a mul and the sum after it in one pass: fused_cpu.c's
 * dots; -ffp-contract=off, never a fused multiply-add). */
static double pw4d_f64(const double *a, const double *b) {
  pw_v8 r[4];
  for (int l = 0; l < 4; l++) {
    pw_v8 x, y;
    memcpy(&x, a + l * TY__OLEAF, sizeof x);
    memcpy(&y, b + l * TY__OLEAF, sizeof y);
    r[l] = x * y;
  }
  for (int i = 8; i < TY__OLEAF; i += 8)
    for (int l = 0; l < 4; l++) {
      pw_v8 x, y;
      memcpy(&x, a + l * TY__OLEAF + i, sizeof x);
      memcpy(&y, b + l * TY__OLEAF + i, sizeof y);
      r[l] += x * y;
    }
  double L[4];
  for (int l = 0; l < 4; l++)
    L[l] = ((r[l][0] + r[l][1]) + (r[l][2] + r[l][3])) + ((r[l][4] + r[l][5]) + (r[l][6] + r[l][7]));
  return (L[0] + L[1]) + (L[2] + L[3]);
}

#define DOT(p, q, i, s, t) (LOAD(double, p, i, s) * LOAD(double, q, i, t))
static double pwd_f64(const char *p, const char *q, int64_t n, int64_t s, int64_t t) {
  if (s == SZ(double) && t == SZ(double) && n == 4 * TY__OLEAF) return pw4d_f64((const double *)p, (const double *)q);
  if (n < 8) {
    double r = 0;
    for (int64_t i = 0; i < n; i++) r += DOT(p, q, i, s, t);
    return r;
  }
  if (n <= TY__OLEAF) {
    double r[8];
    int64_t i;
    for (int j = 0; j < 8; j++) r[j] = DOT(p, q, j, s, t);
    for (i = 8; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; j++) r[j] += DOT(p, q, i + j, s, t);
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) res += DOT(p, q, i, s, t);
    return res;
  }
  int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return pwd_f64(p, q, n2, s, t) + pwd_f64(p + n2 * s, q + n2 * t, n - n2, s, t);
}
PAIRWISE(pw_f32, float, double, 0)
PAIRWISE(pw_i64_d, int64_t, double, 0)
PAIRWISE(pw_i32_d, int32_t, double, 0)
PAIRWISE(pw_u8_d, uint8_t, double, 0)

/* The product counterpart: a leaf multiplies 8 lanes, then the remainder;
 * longer runs halve like PAIRWISE. */
#define TREEPROD(NAME, TI)                                                             \
  static double NAME(const char *p, int64_t n, int64_t s) {                            \
    if (n <= TY__OLEAF) {                                                              \
      double r[8] = {1, 1, 1, 1, 1, 1, 1, 1};                                          \
      int64_t i = 0;                                                                   \
      for (; i + 8 <= n; i += 8)                                                       \
        for (int j = 0; j < 8; j++) r[j] *= (double)LOAD(TI, p, i + j, s);             \
      double res = ((r[0] * r[1]) * (r[2] * r[3])) * ((r[4] * r[5]) * (r[6] * r[7]));  \
      for (; i < n; i++) res *= (double)LOAD(TI, p, i, s);                             \
      return res;                                                                      \
    }                                                                                  \
    int64_t n2 = n / 2;                                                                \
    n2 -= n2 % 8;                                                                      \
    return NAME(p, n2, s) * NAME(p + n2 * s, n - n2, s);                               \
  }
TREEPROD(tp_f64, double)
TREEPROD(tp_f32, float)

/* ---- the ordered stream: leaves and a binary counter ------------------------------------ */

static inline double op2(int kind, double a, double b) { return kind == TY__RSUM ? a + b : a * b; }

void ty__ostream_init(ty__ostream *os, ty__redkind kind) {
  os->nleaves = 0;
  os->kind = (int)kind;
  os->fill = 0;
}

/* Add the result of 2^g leaves; the counter's levels below g are empty. */
static void ostream_push(ty__ostream *os, int g, double v) {
  int l = g;
  while (l < 63 && ((os->nleaves >> l) & 1u)) {
    v = op2(os->kind, os->lev[l], v); /* the older half first */
    l++;
  }
  os->lev[l] = v;
  os->nleaves += UINT64_C(1) << g;
}

static double leaf_of(const ty__ostream *os) {
  const char *b = (const char *)os->leaf;
  return os->kind == TY__RSUM ? pw_f64(b, os->fill, SZ(double)) : tp_f64(b, os->fill, SZ(double));
}

/* Elements go to the partial leaf until it is full; whole leaves after it go
 * as the largest aligned subtrees that fit (2^g leaves where g is at most the
 * number of trailing zero bits of the leaf count). The partial leaf is
 * counted in a local (f): a store of os->fill per element was ~40% of
 * feed_sum_f64's time in CG at 2048 x 2048, whose blocks of rows of 2,046
 * elements leave a partial leaf at every call. */
/* ELEM: element i's value; GROUP: the result of the len elements from i */
#define OFEED_BODY(ELEM, GROUP)                                                        \
  {                                                                                    \
    ty__ostream *os = (ty__ostream *)(uintptr_t)aux;                                   \
    int64_t i = 0;                                                                     \
    if (os->fill > 0) {                                                                \
      int f = os->fill;                                                                \
      while (i < n && f < TY__OLEAF) os->leaf[f++] = (ELEM), i++;                     \
      os->fill = f;                                                                    \
      if (f < TY__OLEAF) return;                                                       \
      ostream_push(os, 0, leaf_of(os));                                                \
      os->fill = 0;                                                                    \
    }                                                                                  \
    while (n - i >= TY__OLEAF) {                                                       \
      int g = os->nleaves ? __builtin_ctzll(os->nleaves) : 62;                         \
      const int h = 63 - __builtin_clzll((unsigned long long)((n - i) / TY__OLEAF));   \
      if (g > h) g = h;                                                                \
      const int64_t len = (int64_t)TY__OLEAF << g;                                     \
      ostream_push(os, g, (GROUP));                                              \
      i += len;                                                                        \
    }                                                                                  \
    int f = os->fill;                                                                  \
    while (i < n) os->leaf[f++] = (ELEM), i++;                                        \
    os->fill = f;                                                                      \
  }
#define OFEED(NAME, TI, GROUPFN)                                                       \
  static void NAME(int64_t n, char **p, const int64_t *s, const void *aux) {           \
    const char *x = p[1];                                                              \
    const int64_t st = s[1];                                                           \
    OFEED_BODY((double)LOAD(TI, x, i, st), GROUPFN(x + i * st, len, st))             \
  }
OFEED(feed_sum_f64, double, pw_f64)
OFEED(feed_sum_f32, float, pw_f32)
OFEED(feed_sum_i64, int64_t, pw_i64_d)
OFEED(feed_sum_i32, int32_t, pw_i32_d)
OFEED(feed_sum_u8, uint8_t, pw_u8_d)
OFEED(feed_prod_f64, double, tp_f64)
OFEED(feed_prod_f32, float, tp_f32)

/* The products of operands 1 and 2 (f64), fed as feed_sum_f64 feeds them
 * stored: the same leaves and groups, so the same bits. */
void ty__ostream_feed_dot_f64(int64_t n, char **p, const int64_t *s, const void *aux) {
  const char *x = p[1], *y = p[2];
  const int64_t sx = s[1], sy = s[2];
  OFEED_BODY(DOT(x, y, i, sx, sy), pwd_f64(x + i * sx, y + i * sy, len, sx, sy))
}
/* the integer dtypes added later (i8 i16 u16 u32 u64): sums into f64 (mean) */
PAIRWISE(pw_i8_d, int8_t, double, 0)
OFEED(feed_sum_i8, int8_t, pw_i8_d)
PAIRWISE(pw_i16_d, int16_t, double, 0)
OFEED(feed_sum_i16, int16_t, pw_i16_d)
PAIRWISE(pw_u16_d, uint16_t, double, 0)
OFEED(feed_sum_u16, uint16_t, pw_u16_d)
PAIRWISE(pw_u32_d, uint32_t, double, 0)
OFEED(feed_sum_u32, uint32_t, pw_u32_d)
PAIRWISE(pw_u64_d, uint64_t, double, 0)
OFEED(feed_sum_u64, uint64_t, pw_u64_d)

const ty_loop1d ty__ostream_feeds[2][TY_NDTYPES] = {
    [TY__RSUM] = {[TY_F64] = feed_sum_f64, [TY_F32] = feed_sum_f32, [TY_I64] = feed_sum_i64,
                  [TY_I32] = feed_sum_i32, [TY_U8] = feed_sum_u8, [TY_BOOL] = feed_sum_u8,
                  [TY_I8] = feed_sum_i8, [TY_I16] = feed_sum_i16, [TY_U16] = feed_sum_u16,
                  [TY_U32] = feed_sum_u32, [TY_U64] = feed_sum_u64},
    [TY__RPROD] = {[TY_F64] = feed_prod_f64, [TY_F32] = feed_prod_f32},
};

double ty__ostream_finish(ty__ostream *os) {
  if (os->fill > 0) {
    ostream_push(os, 0, leaf_of(os));
    os->fill = 0;
  }
  double t = os->kind == TY__RSUM ? 0.0 : 1.0;
  bool any = false;
  for (int l = 0; l < 64; l++) {
    if (!((os->nleaves >> l) & 1u)) continue;
    t = any ? op2(os->kind, os->lev[l], t) : os->lev[l]; /* smallest level first */
    any = true;
  }
  os->nleaves = 0;
  return t;
}

void ty__ordered_apply(char *acc, ty_dtype t, ty__redkind kind, double v) {
  if (t == TY_F32) {
    float *a = (float *)acc;
    *a = (float)(kind == TY__RSUM ? (double)*a + v : (double)*a * v);
  } else {
    double *a = (double *)acc;
    *a = kind == TY__RSUM ? *a + v : *a * v;
  }
}

/* One run, ordered: a single leaf directly, else through a stream. */
#define ORUN(NAME, TI, GROUP, FEED, KIND)                                              \
  static double NAME(const char *p, int64_t n, int64_t s) {                            \
    if (n <= TY__OLEAF) return GROUP(p, n, s);                                         \
    ty__ostream os;                                                                    \
    ty__ostream_init(&os, KIND);                                                       \
    char *pp[2] = {NULL, (char *)(uintptr_t)p};                                        \
    const int64_t ss[2] = {0, s};                                                      \
    FEED(n, pp, ss, &os);                                                              \
    return ty__ostream_finish(&os);                                                    \
  }
ORUN(osum_f64, double, pw_f64, feed_sum_f64, TY__RSUM)
ORUN(osum_f32, float, pw_f32, feed_sum_f32, TY__RSUM)
ORUN(osum_i64_d, int64_t, pw_i64_d, feed_sum_i64, TY__RSUM)
ORUN(osum_i32_d, int32_t, pw_i32_d, feed_sum_i32, TY__RSUM)
ORUN(osum_u8_d, uint8_t, pw_u8_d, feed_sum_u8, TY__RSUM)
ORUN(oprod_f64, double, tp_f64, feed_prod_f64, TY__RPROD)
ORUN(oprod_f32, float, tp_f32, feed_prod_f32, TY__RPROD)

/* ---- exact run reducers (integers, min/max) ------------------------------------------------ */

/* Integer sums: exact modulo 2^64, any order. */
#define ISUM(NAME, TI)                                                                 \
  static uint64_t NAME(const char *p, int64_t n, int64_t s) {                          \
    uint64_t r = 0;                                                                    \
    if (s == SZ(TI)) {                                                                 \
      const TI *a_ = (const TI *)p;                                                    \
      for (int64_t i = 0; i < n; i++) r += (uint64_t)(int64_t)a_[i];                   \
    } else {                                                                           \
      for (int64_t i = 0; i < n; i++) r += (uint64_t)(int64_t)LOAD(TI, p, i, s);       \
    }                                                                                  \
    return r;                                                                          \
  }
ISUM(isum_i64, int64_t)
ISUM(isum_i32, int32_t)
ISUM(isum_u8, uint8_t)

#define IPROD(NAME, TI)                                                                \
  static uint64_t NAME(const char *p, int64_t n, int64_t s) {                          \
    uint64_t r = 1;                                                                    \
    for (int64_t i = 0; i < n; i++) r *= (uint64_t)(int64_t)LOAD(TI, p, i, s);         \
    return r;                                                                          \
  }
IPROD(iprod_i64, int64_t)
IPROD(iprod_i32, int32_t)
IPROD(iprod_u8, uint8_t)
/* min/max: BETTER(x, m) says x replaces the running m. For floats it is also
 * true when x is NaN, and never true once m is NaN, so NaN sticks. 16 lanes
 * keep the contiguous loop vectorised. */
#define MINMAX_RUN(NAME, T, IDENT, BETTER)                                             \
  static T NAME(const char *p, int64_t n, int64_t s) {                                 \
    T lane[16];                                                                        \
    for (int j = 0; j < 16; j++) lane[j] = (IDENT);                                    \
    int64_t i = 0;                                                                     \
    if (s == SZ(T)) {                                                                  \
      const T *a_ = (const T *)p;                                                      \
      for (; i + 16 <= n; i += 16)                                                     \
        for (int j = 0; j < 16; j++) {                                                 \
          const T x = a_[i + j], m = lane[j];                                          \
          lane[j] = (BETTER) ? x : m;                                                  \
        }                                                                              \
    }                                                                                  \
    T r = (IDENT);                                                                     \
    for (int j = 0; j < 16; j++) {                                                     \
      const T x = lane[j], m = r;                                                      \
      r = (BETTER) ? x : m;                                                            \
    }                                                                                  \
    for (; i < n; i++) {                                                               \
      const T x = LOAD(T, p, i, s), m = r;                                             \
      r = (BETTER) ? x : m;                                                            \
    }                                                                                  \
    return r;                                                                          \
  }
#define FMIN_BETTER (x < m || x != x)
#define FMAX_BETTER (x > m || x != x)
#define IMIN_BETTER (x < m)
#define IMAX_BETTER (x > m)
MINMAX_RUN(min_f64, double, INFINITY, FMIN_BETTER)
MINMAX_RUN(max_f64, double, -INFINITY, FMAX_BETTER)
MINMAX_RUN(min_f32, float, INFINITY, FMIN_BETTER)
MINMAX_RUN(max_f32, float, -INFINITY, FMAX_BETTER)
MINMAX_RUN(min_i64, int64_t, INT64_MAX, IMIN_BETTER)
MINMAX_RUN(max_i64, int64_t, INT64_MIN, IMAX_BETTER)
MINMAX_RUN(min_i32, int32_t, INT32_MAX, IMIN_BETTER)
MINMAX_RUN(max_i32, int32_t, INT32_MIN, IMAX_BETTER)
MINMAX_RUN(min_u8, uint8_t, 255, IMIN_BETTER)
MINMAX_RUN(max_u8, uint8_t, 0, IMAX_BETTER)

/* ---- accumulation loops (ty_loop1d, ptrs = {acc, in}) ---------------------------------- */

/* acc[i] = acc[i] op in[i] along a row (acc stride != 0): the same for every
 * scheme. COMBINE merges x (the accumulator, TA) with y (a TW). */
#define EW_ACC(TI, TA, TW, COMBINE)                                                    \
  if (s[0] == SZ(TA) && s[1] == SZ(TI)) {                                              \
    TA *restrict o_ = (TA *)p[0];                                                      \
    const TI *restrict a_ = (const TI *)p[1];                                          \
    for (int64_t i = 0; i < n; i++) {                                                  \
      const TA x = o_[i];                                                              \
      const TW y = (TW)a_[i];                                                          \
      o_[i] = (TA)(COMBINE);                                                           \
    }                                                                                  \
    return;                                                                            \
  }                                                                                    \
  char *o_ = p[0];                                                                     \
  const char *a_ = p[1];                                                               \
  for (int64_t i = 0; i < n; i++, o_ += s[0], a_ += s[1]) {                            \
    const TA x = *(TA *)o_;                                                            \
    const TW y = (TW)*(const TI *)a_;                                                  \
    *(TA *)o_ = (TA)(COMBINE);                                                         \
  }

/* A run with acc stride 0 is reduced by RUN into a TW, then merged. */
#define ACC_LOOP(NAME, TI, TA, TW, RUN, COMBINE)                                       \
  static void NAME(int64_t n, char **p, const int64_t *s, const void *aux) {           \
    (void)aux;                                                                         \
    if (s[0] == 0) {                                                                   \
      TA *acc_ = (TA *)p[0];                                                           \
      const TA x = *acc_;                                                              \
      const TW y = RUN(p[1], n, s[1]);                                                 \
      *acc_ = (TA)(COMBINE);                                                           \
      return;                                                                          \
    }                                                                                  \
    EW_ACC(TI, TA, TW, COMBINE)                                                        \
  }

/* OUTER: a run with acc stride 0 is merged element by element, in order. */
#define SEQ_LOOP(NAME, TI, TA, TW, COMBINE)                                            \
  static void NAME(int64_t n, char **p, const int64_t *s, const void *aux) {           \
    (void)aux;                                                                         \
    if (s[0] == 0) {                                                                   \
      TA *acc_ = (TA *)p[0];                                                           \
      TA a = *acc_;                                                                    \
      const char *q = p[1];                                                            \
      for (int64_t i = 0; i < n; i++, q += s[1]) {                                     \
        const TA x = a;                                                                \
        const TW y = (TW)*(const TI *)q;                                               \
        a = (TA)(COMBINE);                                                             \
      }                                                                                \
      *acc_ = a;                                                                       \
      return;                                                                          \
    }                                                                                  \
    EW_ACC(TI, TA, TW, COMBINE)                                                        \
  }

/* float sums and products: ordered runs (FULL, INNER) */
ACC_LOOP(sum_f64, double, double, double, osum_f64, x + y)
ACC_LOOP(sum_f32, float, float, double, osum_f32, (double)x + y)
/* mean of ints: numpy's f64 accumulator */
ACC_LOOP(sum_i64_d, int64_t, double, double, osum_i64_d, x + y)
ACC_LOOP(sum_i32_d, int32_t, double, double, osum_i32_d, x + y)
ACC_LOOP(sum_u8_d, uint8_t, double, double, osum_u8_d, x + y)
ACC_LOOP(prod_f64_l, double, double, double, oprod_f64, x * y)
ACC_LOOP(prod_f32_l, float, float, double, oprod_f32, (double)x * y)
/* ... and in order (OUTER) */
SEQ_LOOP(seq_sum_f64, double, double, double, x + y)
SEQ_LOOP(seq_sum_f32, float, float, double, (double)x + y)
SEQ_LOOP(seq_sum_i64_d, int64_t, double, double, x + y)
SEQ_LOOP(seq_sum_i32_d, int32_t, double, double, x + y)
SEQ_LOOP(seq_sum_u8_d, uint8_t, double, double, x + y)
SEQ_LOOP(seq_prod_f64, double, double, double, x * y)
SEQ_LOOP(seq_prod_f32, float, float, double, (double)x * y)
/* integer sums and products */
ACC_LOOP(sum_i64, int64_t, int64_t, uint64_t, isum_i64, (uint64_t)x + y)
ACC_LOOP(sum_i32, int32_t, int64_t, uint64_t, isum_i32, (uint64_t)x + y)
ACC_LOOP(sum_u8, uint8_t, int64_t, uint64_t, isum_u8, (uint64_t)x + y)
ACC_LOOP(prod_i64, int64_t, int64_t, uint64_t, iprod_i64, (uint64_t)x * y)
ACC_LOOP(prod_i32, int32_t, int64_t, uint64_t, iprod_i32, (uint64_t)x * y)
ACC_LOOP(prod_u8, uint8_t, int64_t, uint64_t, iprod_u8, (uint64_t)x * y)
/* min/max keep the dtype: COMBINE is BETTER with y as the candidate */
#define MM_F_MIN ((y < x || y != y) ? y : x)
#define MM_F_MAX ((y > x || y != y) ? y : x)
#define MM_I_MIN (y < x ? y : x)
#define MM_I_MAX (y > x ? y : x)
ACC_LOOP(min_f64_l, double, double, double, min_f64, MM_F_MIN)
ACC_LOOP(max_f64_l, double, double, double, max_f64, MM_F_MAX)
ACC_LOOP(min_f32_l, float, float, float, min_f32, MM_F_MIN)
ACC_LOOP(max_f32_l, float, float, float, max_f32, MM_F_MAX)
ACC_LOOP(min_i64_l, int64_t, int64_t, int64_t, min_i64, MM_I_MIN)
ACC_LOOP(max_i64_l, int64_t, int64_t, int64_t, max_i64, MM_I_MAX)
ACC_LOOP(min_i32_l, int32_t, int32_t, int32_t, min_i32, MM_I_MIN)
ACC_LOOP(max_i32_l, int32_t, int32_t, int32_t, max_i32, MM_I_MAX)
ACC_LOOP(min_u8_l, uint8_t, uint8_t, uint8_t, min_u8, MM_I_MIN)
ACC_LOOP(max_u8_l, uint8_t, uint8_t, uint8_t, max_u8, MM_I_MAX)

/* the integer dtypes added later: the same loops, per dtype */
ORUN(osum_i8_d, int8_t, pw_i8_d, feed_sum_i8, TY__RSUM)
ACC_LOOP(sum_i8_d, int8_t, double, double, osum_i8_d, x + y)
SEQ_LOOP(seq_sum_i8_d, int8_t, double, double, x + y)
ISUM(isum_i8, int8_t)
IPROD(iprod_i8, int8_t)
ACC_LOOP(sum_i8, int8_t, int64_t, uint64_t, isum_i8, (uint64_t)x + y)
ACC_LOOP(prod_i8, int8_t, int64_t, uint64_t, iprod_i8, (uint64_t)x * y)
MINMAX_RUN(min_i8, int8_t, INT8_MAX, IMIN_BETTER)
MINMAX_RUN(max_i8, int8_t, INT8_MIN, IMAX_BETTER)
ACC_LOOP(min_i8_l, int8_t, int8_t, int8_t, min_i8, MM_I_MIN)
ACC_LOOP(max_i8_l, int8_t, int8_t, int8_t, max_i8, MM_I_MAX)
ORUN(osum_i16_d, int16_t, pw_i16_d, feed_sum_i16, TY__RSUM)
ACC_LOOP(sum_i16_d, int16_t, double, double, osum_i16_d, x + y)
SEQ_LOOP(seq_sum_i16_d, int16_t, double, double, x + y)
ISUM(isum_i16, int16_t)
IPROD(iprod_i16, int16_t)
ACC_LOOP(sum_i16, int16_t, int64_t, uint64_t, isum_i16, (uint64_t)x + y)
ACC_LOOP(prod_i16, int16_t, int64_t, uint64_t, iprod_i16, (uint64_t)x * y)
MINMAX_RUN(min_i16, int16_t, INT16_MAX, IMIN_BETTER)
MINMAX_RUN(max_i16, int16_t, INT16_MIN, IMAX_BETTER)
ACC_LOOP(min_i16_l, int16_t, int16_t, int16_t, min_i16, MM_I_MIN)
ACC_LOOP(max_i16_l, int16_t, int16_t, int16_t, max_i16, MM_I_MAX)
ORUN(osum_u16_d, uint16_t, pw_u16_d, feed_sum_u16, TY__RSUM)
ACC_LOOP(sum_u16_d, uint16_t, double, double, osum_u16_d, x + y)
SEQ_LOOP(seq_sum_u16_d, uint16_t, double, double, x + y)
ISUM(isum_u16, uint16_t)
IPROD(iprod_u16, uint16_t)
ACC_LOOP(sum_u16, uint16_t, int64_t, uint64_t, isum_u16, (uint64_t)x + y)
ACC_LOOP(prod_u16, uint16_t, int64_t, uint64_t, iprod_u16, (uint64_t)x * y)
MINMAX_RUN(min_u16, uint16_t, UINT16_MAX, IMIN_BETTER)
MINMAX_RUN(max_u16, uint16_t, 0, IMAX_BETTER)
ACC_LOOP(min_u16_l, uint16_t, uint16_t, uint16_t, min_u16, MM_I_MIN)
ACC_LOOP(max_u16_l, uint16_t, uint16_t, uint16_t, max_u16, MM_I_MAX)
ORUN(osum_u32_d, uint32_t, pw_u32_d, feed_sum_u32, TY__RSUM)
ACC_LOOP(sum_u32_d, uint32_t, double, double, osum_u32_d, x + y)
SEQ_LOOP(seq_sum_u32_d, uint32_t, double, double, x + y)
ISUM(isum_u32, uint32_t)
IPROD(iprod_u32, uint32_t)
ACC_LOOP(sum_u32, uint32_t, int64_t, uint64_t, isum_u32, (uint64_t)x + y)
ACC_LOOP(prod_u32, uint32_t, int64_t, uint64_t, iprod_u32, (uint64_t)x * y)
MINMAX_RUN(min_u32, uint32_t, UINT32_MAX, IMIN_BETTER)
MINMAX_RUN(max_u32, uint32_t, 0, IMAX_BETTER)
ACC_LOOP(min_u32_l, uint32_t, uint32_t, uint32_t, min_u32, MM_I_MIN)
ACC_LOOP(max_u32_l, uint32_t, uint32_t, uint32_t, max_u32, MM_I_MAX)
ORUN(osum_u64_d, uint64_t, pw_u64_d, feed_sum_u64, TY__RSUM)
ACC_LOOP(sum_u64_d, uint64_t, double, double, osum_u64_d, x + y)
SEQ_LOOP(seq_sum_u64_d, uint64_t, double, double, x + y)
ISUM(isum_u64, uint64_t)
IPROD(iprod_u64, uint64_t)
ACC_LOOP(sum_u64, uint64_t, int64_t, uint64_t, isum_u64, (uint64_t)x + y)
ACC_LOOP(prod_u64, uint64_t, int64_t, uint64_t, iprod_u64, (uint64_t)x * y)
MINMAX_RUN(min_u64, uint64_t, UINT64_MAX, IMIN_BETTER)
MINMAX_RUN(max_u64, uint64_t, 0, IMAX_BETTER)
ACC_LOOP(min_u64_l, uint64_t, uint64_t, uint64_t, min_u64, MM_I_MIN)
ACC_LOOP(max_u64_l, uint64_t, uint64_t, uint64_t, max_u64, MM_I_MAX)

/* Integer sums and products accumulate modulo 2^64 in int64_t: the same bits
 * serve an i64 and a u64 accumulator (numpy sums unsigned dtypes into u64). */
const ty_loop1d ty__reduce_loops[TY__NREDKIND][TY_NDTYPES][TY_NDTYPES] = {
    [TY__RSUM] =
        {
            [TY_F64] = {[TY_F64] = sum_f64},
            [TY_F32] = {[TY_F32] = sum_f32},
            [TY_I64] = {[TY_I64] = sum_i64, [TY_F64] = sum_i64_d},
            [TY_I32] = {[TY_I64] = sum_i32, [TY_F64] = sum_i32_d},
            [TY_U8] = {[TY_I64] = sum_u8, [TY_U64] = sum_u8, [TY_F64] = sum_u8_d},
            [TY_BOOL] = {[TY_I64] = sum_u8, [TY_F64] = sum_u8_d},
            [TY_I8] = {[TY_I64] = sum_i8, [TY_U64] = sum_i8, [TY_F64] = sum_i8_d},
            [TY_I16] = {[TY_I64] = sum_i16, [TY_U64] = sum_i16, [TY_F64] = sum_i16_d},
            [TY_U16] = {[TY_I64] = sum_u16, [TY_U64] = sum_u16, [TY_F64] = sum_u16_d},
            [TY_U32] = {[TY_I64] = sum_u32, [TY_U64] = sum_u32, [TY_F64] = sum_u32_d},
            [TY_U64] = {[TY_I64] = sum_u64, [TY_U64] = sum_u64, [TY_F64] = sum_u64_d},
        },
    [TY__RPROD] =
        {
            [TY_F64] = {[TY_F64] = prod_f64_l},
            [TY_F32] = {[TY_F32] = prod_f32_l},
            [TY_I64] = {[TY_I64] = prod_i64},
            [TY_I32] = {[TY_I64] = prod_i32},
            [TY_U8] = {[TY_I64] = prod_u8, [TY_U64] = prod_u8},
            [TY_BOOL] = {[TY_I64] = prod_u8},
            [TY_I8] = {[TY_I64] = prod_i8, [TY_U64] = prod_i8},
            [TY_I16] = {[TY_I64] = prod_i16, [TY_U64] = prod_i16},
            [TY_U16] = {[TY_I64] = prod_u16, [TY_U64] = prod_u16},
            [TY_U32] = {[TY_I64] = prod_u32, [TY_U64] = prod_u32},
            [TY_U64] = {[TY_I64] = prod_u64, [TY_U64] = prod_u64},
        },
    [TY__RMIN] =
        {
            [TY_F64] = {[TY_F64] = min_f64_l},
            [TY_F32] = {[TY_F32] = min_f32_l},
            [TY_I64] = {[TY_I64] = min_i64_l},
            [TY_I32] = {[TY_I32] = min_i32_l},
            [TY_U8] = {[TY_U8] = min_u8_l},
            [TY_BOOL] = {[TY_BOOL] = min_u8_l},
            [TY_I8] = {[TY_I8] = min_i8_l},
            [TY_I16] = {[TY_I16] = min_i16_l},
            [TY_U16] = {[TY_U16] = min_u16_l},
            [TY_U32] = {[TY_U32] = min_u32_l},
            [TY_U64] = {[TY_U64] = min_u64_l},
        },
    [TY__RMAX] =
        {
            [TY_F64] = {[TY_F64] = max_f64_l},
            [TY_F32] = {[TY_F32] = max_f32_l},
            [TY_I64] = {[TY_I64] = max_i64_l},
            [TY_I32] = {[TY_I32] = max_i32_l},
            [TY_U8] = {[TY_U8] = max_u8_l},
            [TY_BOOL] = {[TY_BOOL] = max_u8_l},
            [TY_I8] = {[TY_I8] = max_i8_l},
            [TY_I16] = {[TY_I16] = max_i16_l},
            [TY_U16] = {[TY_U16] = max_u16_l},
            [TY_U32] = {[TY_U32] = max_u32_l},
            [TY_U64] = {[TY_U64] = max_u64_l},
        },
};

/* OUTER loops of the ordered kinds */
static const ty_loop1d seq_loops[2][TY_NDTYPES][TY_NDTYPES] = {
    [TY__RSUM] =
        {
            [TY_F64] = {[TY_F64] = seq_sum_f64},
            [TY_F32] = {[TY_F32] = seq_sum_f32},
            [TY_I64] = {[TY_F64] = seq_sum_i64_d},
            [TY_I32] = {[TY_F64] = seq_sum_i32_d},
            [TY_U8] = {[TY_F64] = seq_sum_u8_d},
            [TY_BOOL] = {[TY_F64] = seq_sum_u8_d},
            [TY_I8] = {[TY_F64] = seq_sum_i8_d},
            [TY_I16] = {[TY_F64] = seq_sum_i16_d},
            [TY_U16] = {[TY_F64] = seq_sum_u16_d},
            [TY_U32] = {[TY_F64] = seq_sum_u32_d},
            [TY_U64] = {[TY_F64] = seq_sum_u64_d},
        },
    [TY__RPROD] =
        {
            [TY_F64] = {[TY_F64] = seq_prod_f64},
            [TY_F32] = {[TY_F32] = seq_prod_f32},
        },
};

bool ty__reduce_ordered(ty__redkind kind, ty_dtype acc) {
  return (kind == TY__RSUM || kind == TY__RPROD) && (acc == TY_F64 || acc == TY_F32);
}

ty__rscheme ty__reduce_scheme(const ty_tile *acc) {
  int last = -1;
  bool kept = false;
  for (int d = 0; d < acc->ndim; d++) {
    if (acc->gshape[d] <= 1) continue;
    last = d;
    kept |= acc->strides[d] != 0;
  }
  if (!kept) return TY__RS_FULL;
  return acc->strides[last] == 0 ? TY__RS_INNER : TY__RS_OUTER;
}

ty_loop1d ty__reduce_loop(ty__redkind kind, ty_dtype in, ty_dtype acc, ty__rscheme scheme) {
  if (scheme == TY__RS_OUTER && ty__reduce_ordered(kind, acc)) return seq_loops[kind][in][acc];
  return ty__reduce_loops[kind][in][acc];
}

ty__fillval ty__reduce_identity(ty__redkind kind, ty_dtype t) {
  ty__fillval v = {0, 0};
  switch (kind) {
  case TY__RSUM: break;
  case TY__RPROD: v.f = 1, v.i = 1; break;
  case TY__RMIN:
  case TY__RMAX: {
    int64_t lo;
    uint64_t hi;
    ty_dtype_limits(t, &lo, &hi);
    v.f = kind == TY__RMIN ? INFINITY : -INFINITY;
    v.i = kind == TY__RMIN ? (int64_t)hi : lo; /* u64's largest: its bits */
    break;
  }
  default: break;
  }
  return v;
}

/* ---- walking the ordered tiles in one piece ------------------------------------------------ */

/* acc[i] = acc[i] op tmp[i], as the runtime combines a private tile (window.c:
 * in double, stored in the dtype); aux: {kind, dtype}. */
typedef struct combine_aux {
  ty__redkind kind;
  ty_dtype t;
} combine_aux;

static void combine_loop(int64_t n, char **p, const int64_t *s, const void *aux) {
  const combine_aux *c = aux;
  char *o = p[0];
  const char *v = p[1];
  for (int64_t i = 0; i < n; i++, o += s[0], v += s[1])
    ty__store_f64(o, c->t, op2(c->kind, ty__load_f64(o, c->t), ty__load_f64(v, c->t)));
}

int ty__ordered_walk(ty_task_ctx *ctx, uint64_t aligned, uint64_t accs, const uint8_t *kinds,
                     int (*fn)(ty_task_ctx *ctx, void *ud), void *ud) {
  const int nd = ctx->ndim;
  int64_t shape[TY_MAX_RANK];
  for (int d = 0; d < nd; d++) shape[d] = ctx->hi[d] - ctx->lo[d];
  ty_tiling t;
  ty__ordered_tiles(nd, shape, &t);
  if (t.pieces <= 1) return fn(ctx, ud);

  /* one buffer per accumulator, as large as its distinct elements in the box */
  size_t off[TY_MAX_ARGS], total = 0;
  for (int k = 0; k < ctx->nargs; k++) {
    off[k] = total;
    if (!((accs >> k) & 1u)) continue;
    int64_t cnt = 1;
    for (int d = 0; d < nd; d++)
      if (ctx->args[k].strides[d] != 0) cnt *= shape[d];
    total += ((size_t)cnt * ty_dtype_size(ctx->args[k].dtype) + 63) / 64 * 64;
  }
  _Alignas(64) char local[1024];
  char *mem = total <= sizeof local ? local : ty__aligned_alloc(64, total);
  if (!mem)
    return ty_ctx_fail(ctx, "%s: out of memory for %zu bytes of partial sums", ctx->task_name,
                       total);

  ty_tile tiles[TY_MAX_ARGS];
  int rc = 0;
  for (int piece = 0; piece < t.pieces && rc == 0; piece++) {
    int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
    ty__piece_box(nd, shape, &t, piece, lo, hi);
    ty_task_ctx sub = *ctx;
    sub.args = tiles;
    for (int d = 0; d < nd; d++) {
      sub.lo[d] = ctx->lo[d] + lo[d];
      sub.hi[d] = ctx->lo[d] + hi[d];
    }
    for (int k = 0; k < ctx->nargs; k++) {
      ty_tile *tt = &tiles[k];
      *tt = ctx->args[k];
      if (!((aligned >> k) & 1u)) continue;
      const int64_t es = (int64_t)ty_dtype_size(tt->dtype);
      int64_t o = 0;
      for (int d = 0; d < nd; d++) {
        o += lo[d] * tt->strides[d];
        tt->shape[d] = hi[d] - lo[d];
        tt->lo[d] += lo[d];
      }
      tt->data += o * es;
      if (!((accs >> k) & 1u)) continue;
      /* a private tile: compact over the dims the accumulator is not broadcast on */
      int64_t cnt = 1;
      for (int d = nd - 1; d >= 0; d--) {
        if (ctx->args[k].strides[d] == 0) {
          tt->strides[d] = 0;
        } else {
          tt->strides[d] = cnt;
          cnt *= tt->shape[d];
        }
      }
      tt->data = mem + off[k];
      const double id = kinds[k] == TY__RSUM ? 0.0 : 1.0;
      for (int64_t i = 0; i < cnt; i++) ty__store_f64(tt->data + i * es, tt->dtype, id);
    }
    rc = fn(&sub, ud);
    for (int k = 0; rc == 0 && k < ctx->nargs; k++) {
      if (!((accs >> k) & 1u)) continue;
      const ty_tile *acc = &ctx->args[k], *tmp = &tiles[k];
      const int64_t es = (int64_t)ty_dtype_size(acc->dtype);
      int64_t region[TY_MAX_RANK], st[2][TY_MAX_RANK], o = 0;
      for (int d = 0; d < nd; d++) {
        region[d] = acc->strides[d] == 0 ? 1 : hi[d] - lo[d];
        o += lo[d] * acc->strides[d];
        st[0][d] = acc->strides[d] * es;
        st[1][d] = tmp->strides[d] * es;
      }
      char *base[2] = {acc->data + o * es, tmp->data};
      const combine_aux ca = {(ty__redkind)kinds[k], acc->dtype};
      ty__foreach(nd, region, 2, base, (const int64_t(*)[TY_MAX_RANK])st, combine_loop, &ca);
    }
  }
  if (mem != local) free(mem);
  return rc;
}

/* ---- the sum/prod/min/max variant ---------------------------------------------------------- */

/* Rows of at most this many elements take the short-row kernels below. */
#define SHORT_ROW 32

/* min/max along a short innermost axis of a 2-D tile, such as the distances
 * of k-means' points to 10 centroids. Row by row through the loop table, each
 * row is one call with a 16-lane setup and a data-dependent branch per
 * element (5x slower than a pass over memory, measured at 10 columns). Here
 * one call covers the tile and the running value is selected without a
 * branch (minsd/maxsd), NaN noted on the side: a row holding one is scanned
 * again with the NaN rule. Each output sees its row's elements in order from
 * its accumulator, as MINMAX_RUN's tail loop does below 16 elements and then
 * ACC_LOOP's merge, so the bits are equal (NaN sticks, ties and signed zeros
 * keep the earlier element; tests/c/test_short_rows.c). */
#define SHORT_MM(NAME, T, CMP, ISNAN)                                                  \
  static void NAME(int64_t rows, int64_t n, const char *p, int64_t s0, int64_t s1,    \
                   char *acc, int64_t sa) {                                            \
    for (int64_t i = 0; i < rows; i++) {                                               \
      const char *q = p + i * s0;                                                      \
      T *o = (T *)(acc + i * sa);                                                      \
      T m = *o;                                                                        \
      bool nan = false;                                                                \
      for (int64_t j = 0; j < n; j++) {                                                \
        const T x = LOAD(T, q, j, s1);                                                 \
        m = x CMP m ? x : m; /* minsd/maxsd: no branch */                              \
        nan |= ISNAN;                                                                  \
      }                                                                                \
      if (nan) { /* the rule with NaN: the row loop's, in order */                     \
        m = *o;                                                                        \
        for (int64_t j = 0; j < n; j++) {                                              \
          const T x = LOAD(T, q, j, s1);                                               \
          if (x CMP m || x != x) m = x;                                                \
        }                                                                              \
      }                                                                                \
      *o = m;                                                                          \
    }                                                                                  \
  }
SHORT_MM(short_min_f64, double, <, x != x)
SHORT_MM(short_max_f64, double, >, x != x)
SHORT_MM(short_min_f32, float, <, x != x)
SHORT_MM(short_max_f32, float, >, x != x)
SHORT_MM(short_min_i64, int64_t, <, false)
SHORT_MM(short_max_i64, int64_t, >, false)
SHORT_MM(short_min_i32, int32_t, <, false)
SHORT_MM(short_max_i32, int32_t, >, false)
SHORT_MM(short_min_u8, uint8_t, <, false)
SHORT_MM(short_max_u8, uint8_t, >, false)

SHORT_MM(short_min_i8, int8_t, <, false)
SHORT_MM(short_max_i8, int8_t, >, false)
SHORT_MM(short_min_i16, int16_t, <, false)
SHORT_MM(short_max_i16, int16_t, >, false)
SHORT_MM(short_min_u16, uint16_t, <, false)
SHORT_MM(short_max_u16, uint16_t, >, false)
SHORT_MM(short_min_u32, uint32_t, <, false)
SHORT_MM(short_max_u32, uint32_t, >, false)
SHORT_MM(short_min_u64, uint64_t, <, false)
SHORT_MM(short_max_u64, uint64_t, >, false)

typedef void (*short_mm_fn)(int64_t, int64_t, const char *, int64_t, int64_t, char *, int64_t);
static const short_mm_fn short_mm[2][TY_NDTYPES] = {
    {[TY_F64] = short_min_f64, [TY_F32] = short_min_f32, [TY_I64] = short_min_i64,
     [TY_I32] = short_min_i32, [TY_U8] = short_min_u8, [TY_BOOL] = short_min_u8,
     [TY_I8] = short_min_i8, [TY_I16] = short_min_i16, [TY_U16] = short_min_u16,
     [TY_U32] = short_min_u32, [TY_U64] = short_min_u64},
    {[TY_F64] = short_max_f64, [TY_F32] = short_max_f32, [TY_I64] = short_max_i64,
     [TY_I32] = short_max_i32, [TY_U8] = short_max_u8, [TY_BOOL] = short_max_u8,
     [TY_I8] = short_max_i8, [TY_I16] = short_max_i16, [TY_U16] = short_max_u16,
     [TY_U32] = short_max_u32, [TY_U64] = short_max_u64},
};

static bool reduce_short_rows(ty__redkind kind, const ty_tile *acc, const ty_tile *in) {
  if ((kind != TY__RMIN && kind != TY__RMAX) || acc->dtype != in->dtype || acc->ndim != 2 ||
      in->ndim != 2 || acc->strides[1] != 0 || acc->strides[0] == 0)
    return false;
  const int64_t rows = in->shape[0], n = in->shape[1];
  if (n > SHORT_ROW || n < 1 || rows < 2) return false;
  const int64_t es = (int64_t)ty_dtype_size(in->dtype);
  short_mm[kind == TY__RMIN ? 0 : 1][in->dtype](rows, n, in->data, in->strides[0] * es,
                                                in->strides[1] * es, acc->data,
                                                acc->strides[0] * es);
  return true;
}

/* One piece (or one ordered tile of a walked piece). */
static int reduce_box(ty_task_ctx *ctx, void *ud) {
  (void)ud;
  const ty__reduce_args *a = ctx->scalars;
  const ty_tile *acc = &ctx->args[0], *in = &ctx->args[1];
  const ty__redkind kind = (ty__redkind)a->kind;
  if (!ty__reduce_ordered(kind, acc->dtype)) {
    if (!reduce_short_rows(kind, acc, in))
      ty__run_tiles(ctx, ty__reduce_loops[kind][in->dtype][acc->dtype], NULL);
    return 0;
  }
  const ty__rscheme sc = ty__reduce_scheme(acc);
  if (sc == TY__RS_FULL) {
    ty__ostream os;
    ty__ostream_init(&os, kind);
    ty__run_tiles(ctx, ty__ostream_feeds[kind][in->dtype], &os);
    ty__ordered_apply(acc->data, acc->dtype, kind, ty__ostream_finish(&os));
    return 0;
  }
  ty__run_tiles(ctx, ty__reduce_loop(kind, in->dtype, acc->dtype, sc), NULL);
  return 0;
}

int ty__reduce_variant(ty_task_ctx *ctx) {
  const ty__reduce_args *a = ctx->scalars;
  const ty_tile *acc = &ctx->args[0], *in = &ctx->args[1];
  const ty__redkind kind = (ty__redkind)a->kind;
  ty_loop1d fn = ty__reduce_loops[kind][in->dtype][acc->dtype];
  const bool ordered = ty__reduce_ordered(kind, acc->dtype);
  if (!fn || (ordered && !ty__ostream_feeds[kind][in->dtype]))
    return ty_ctx_fail(ctx, "%s: no kernel from %s to %s", ctx->task_name,
                       ty_dtype_name(in->dtype), ty_dtype_name(acc->dtype));
  if (a->init_out) {
    /* OUT mode: this piece owns its outputs; set each once to the identity
     * (extent 1 on the reduced dims, where the stride is 0) */
    int64_t shape[TY_MAX_RANK], st[1][TY_MAX_RANK];
    const int64_t es = (int64_t)ty_dtype_size(acc->dtype);
    for (int d = 0; d < acc->ndim; d++) {
      shape[d] = acc->strides[d] == 0 && acc->shape[d] > 0 ? 1 : acc->shape[d];
      st[0][d] = acc->strides[d] * es;
    }
    ty__fillval id = ty__reduce_identity(kind, acc->dtype);
    char *base = acc->data;
    ty__foreach(acc->ndim, shape, 1, &base, (const int64_t(*)[TY_MAX_RANK])st,
                ty__fill_loops[acc->dtype], &id);
    return reduce_box(ctx, NULL);
  }
  /* a REDUCE accumulator in one piece: the ordered tiles, in order */
  if (ordered && ctx->pieces == 1) {
    const uint8_t kinds[2] = {(uint8_t)kind, 0};
    return ty__ordered_walk(ctx, 3u, 1u, kinds, reduce_box, NULL);
  }
  return reduce_box(ctx, NULL);
}

/* ---- argmin / argmax ------------------------------------------------------------------------ */

#define ARG_FLOAT(NAME, T, CMP)                                                        \
  static int64_t NAME(int64_t n, const char *p, int64_t s) {                           \
    T m = LOAD(T, p, 0, s);                                                            \
    if (m != m) return 0;                                                              \
    int64_t best = 0;                                                                  \
    for (int64_t i = 1; i < n; i++) {                                                  \
      const T x = LOAD(T, p, i, s);                                                    \
      if (x != x) return i;                                                            \
      if (x CMP m) m = x, best = i;                                                     \
    }                                                                                  \
    return best;                                                                       \
  }
#define ARG_INT(NAME, T, CMP)                                                          \
  static int64_t NAME(int64_t n, const char *p, int64_t s) {                           \
    T m = LOAD(T, p, 0, s);                                                            \
    int64_t best = 0;                                                                  \
    for (int64_t i = 1; i < n; i++) {                                                  \
      const T x = LOAD(T, p, i, s);                                                    \
      if (x CMP m) m = x, best = i;                                                    \
    }                                                                                  \
    return best;                                                                       \
  }
ARG_FLOAT(argmin_f64, double, <)
ARG_FLOAT(argmax_f64, double, >)
ARG_FLOAT(argmin_f32, float, <)
ARG_FLOAT(argmax_f32, float, >)
ARG_INT(argmin_i64, int64_t, <)
ARG_INT(argmax_i64, int64_t, >)
ARG_INT(argmin_i32, int32_t, <)
ARG_INT(argmax_i32, int32_t, >)
ARG_INT(argmin_u8, uint8_t, <)
ARG_INT(argmax_u8, uint8_t, >)

ARG_INT(argmin_i8, int8_t, <)
ARG_INT(argmax_i8, int8_t, >)
ARG_INT(argmin_i16, int16_t, <)
ARG_INT(argmax_i16, int16_t, >)
ARG_INT(argmin_u16, uint16_t, <)
ARG_INT(argmax_u16, uint16_t, >)
ARG_INT(argmin_u32, uint32_t, <)
ARG_INT(argmax_u32, uint32_t, >)
ARG_INT(argmin_u64, uint64_t, <)
ARG_INT(argmax_u64, uint64_t, >)

const ty_argloop ty__argmin_loops[TY_NDTYPES] = {
    [TY_F64] = argmin_f64, [TY_F32] = argmin_f32, [TY_I64] = argmin_i64,
    [TY_I32] = argmin_i32, [TY_U8] = argmin_u8,   [TY_BOOL] = argmin_u8,
    [TY_I8] = argmin_i8,   [TY_I16] = argmin_i16, [TY_U16] = argmin_u16,
    [TY_U32] = argmin_u32, [TY_U64] = argmin_u64,
};
const ty_argloop ty__argmax_loops[TY_NDTYPES] = {
    [TY_F64] = argmax_f64, [TY_F32] = argmax_f32, [TY_I64] = argmax_i64,
    [TY_I32] = argmax_i32, [TY_U8] = argmax_u8,   [TY_BOOL] = argmax_u8,
    [TY_I8] = argmax_i8,   [TY_I16] = argmax_i16, [TY_U16] = argmax_u16,
    [TY_U32] = argmax_u32, [TY_U64] = argmax_u64,
};

/* argmin/argmax of short rows (at most SHORT_ROW elements, innermost axis):
 * the running best and its index are selected without branches (minsd and
 * cmov; the winner's column is data-dependent, so the row loop's branches
 * mispredict ~2 times a row: 45 ns a row of 10 measured, against 5 here).
 * Column 0 starts the row and a later column wins only when strictly better,
 * as in the row loop (ties: the first index). A row holding a NaN is scanned
 * again by the row loop, whose rule (the first NaN) then decides. */
#define ARG_SHORT(NAME, T, CMP, ISNAN)                                                 \
  static void NAME(int64_t rows, int64_t n, const char *p, int64_t s0, int64_t s1,    \
                   int64_t *out, int64_t so, ty_argloop scan) {                        \
    for (int64_t i = 0; i < rows; i++) {                                               \
      const char *q = p + i * s0;                                                      \
      T m = LOAD(T, q, 0, s1);                                                         \
      T x = m;                                                                         \
      bool nan = ISNAN;                                                                \
      int64_t best = 0;                                                                \
      for (int64_t j = 1; j < n; j++) {                                                \
        x = LOAD(T, q, j, s1);                                                         \
        best = x CMP m ? j : best;                                                     \
        m = x CMP m ? x : m;                                                           \
        nan |= ISNAN;                                                                  \
      }                                                                                \
      out[i * so] = nan ? scan(n, q, s1) : best;                                       \
    }                                                                                  \
  }
ARG_SHORT(argmin_short_f64, double, <, x != x)
ARG_SHORT(argmax_short_f64, double, >, x != x)
ARG_SHORT(argmin_short_f32, float, <, x != x)
ARG_SHORT(argmax_short_f32, float, >, x != x)
ARG_SHORT(argmin_short_i64, int64_t, <, false)
ARG_SHORT(argmax_short_i64, int64_t, >, false)
ARG_SHORT(argmin_short_i32, int32_t, <, false)
ARG_SHORT(argmax_short_i32, int32_t, >, false)
ARG_SHORT(argmin_short_u8, uint8_t, <, false)
ARG_SHORT(argmax_short_u8, uint8_t, >, false)

ARG_SHORT(argmin_short_i8, int8_t, <, false)
ARG_SHORT(argmax_short_i8, int8_t, >, false)
ARG_SHORT(argmin_short_i16, int16_t, <, false)
ARG_SHORT(argmax_short_i16, int16_t, >, false)
ARG_SHORT(argmin_short_u16, uint16_t, <, false)
ARG_SHORT(argmax_short_u16, uint16_t, >, false)
ARG_SHORT(argmin_short_u32, uint32_t, <, false)
ARG_SHORT(argmax_short_u32, uint32_t, >, false)
ARG_SHORT(argmin_short_u64, uint64_t, <, false)
ARG_SHORT(argmax_short_u64, uint64_t, >, false)

typedef void (*arg_short_fn)(int64_t, int64_t, const char *, int64_t, int64_t, int64_t *,
                             int64_t, ty_argloop);
static const arg_short_fn arg_short[2][TY_NDTYPES] = {
    {[TY_F64] = argmin_short_f64, [TY_F32] = argmin_short_f32, [TY_I64] = argmin_short_i64,
     [TY_I32] = argmin_short_i32, [TY_U8] = argmin_short_u8, [TY_BOOL] = argmin_short_u8,
     [TY_I8] = argmin_short_i8, [TY_I16] = argmin_short_i16, [TY_U16] = argmin_short_u16,
     [TY_U32] = argmin_short_u32, [TY_U64] = argmin_short_u64},
    {[TY_F64] = argmax_short_f64, [TY_F32] = argmax_short_f32, [TY_I64] = argmax_short_i64,
     [TY_I32] = argmax_short_i32, [TY_U8] = argmax_short_u8, [TY_BOOL] = argmax_short_u8,
     [TY_I8] = argmax_short_i8, [TY_I16] = argmax_short_i16, [TY_U16] = argmax_short_u16,
     [TY_U32] = argmax_short_u32, [TY_U64] = argmax_short_u64},
};

/* One scan per output element along the reduced axis (never split, so the
 * tile spans it whole and indices are relative to 0). */
int ty__argreduce_variant(ty_task_ctx *ctx) {
  const ty__reduce_args *a = ctx->scalars;
  const ty_tile *out = &ctx->args[0], *in = &ctx->args[1];
  const int axis = (int)a->axis, nd = in->ndim;
  ty_argloop fn = (a->kind == TY_RED_ARGMIN ? ty__argmin_loops : ty__argmax_loops)[in->dtype];
  const int64_t ein = (int64_t)ty_dtype_size(in->dtype), eout = (int64_t)sizeof(int64_t);
  if (axis < 0 || axis >= nd || in->shape[axis] == 0 || in->lo[axis] != 0)
    return ty_ctx_fail(ctx, "%s: axis %d is not whole in this piece", ctx->task_name, axis);
  for (int d = 0; d < nd; d++)
    if (in->shape[d] == 0) return 0;
  const int64_t n = in->shape[axis], step = in->strides[axis] * ein;
  if (nd == 2 && axis == 1 && n <= SHORT_ROW) {
    arg_short[a->kind == TY_RED_ARGMIN ? 0 : 1][in->dtype](
        in->shape[0], n, in->data, in->strides[0] * ein, step, (int64_t *)out->data,
        out->strides[0], fn);
    return 0;
  }
  int64_t idx[TY_MAX_RANK] = {0};
  for (;;) {
    int64_t oin = 0, oout = 0;
    for (int d = 0; d < nd; d++) {
      oin += idx[d] * in->strides[d];
      oout += idx[d] * out->strides[d];
    }
    *(int64_t *)(out->data + oout * eout) = fn(n, in->data + oin * ein, step);
    int d = nd - 1;
    for (; d >= 0; d--) {
      if (d == axis) continue;
      if (++idx[d] < in->shape[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return 0;
  }
}
