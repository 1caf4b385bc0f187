/*
 * kernels_gemv.c — thin float matrix-vector products in a fixed order of
 * operations, and the one-pass kernel of the "gemv chain" that the fusion
 * pass makes of logistic regression's gradient (plan/fuse_gemv.c):
 *
 *   z = X w;  e = chain(z, ...) (element-wise);  g = e X
 *
 * Thin products (kernels_linalg.c's matmul_2d takes them instead of BLAS):
 *  - a tall matrix times a short vector, C (m x 1) = A (m x k) B (k x 1)
 *    with k <= TY__THIN_K: element i is ty__thin_dot of row i, its k
 *    products in 8 lanes (lane l sums the products p = l mod 8 in p order)
 *    added as a fixed tree, whatever the rows around it;
 *  - a row vector times a narrow matrix, C (1 x n) = A (1 x k) B (k x n)
 *    with 2 <= n <= TY__THIN_K: element j is 0 + a_0 b_0j + a_1 b_1j + ...
 *    added in p order (ty__thin_acc carries the sums across calls, in f64
 *    for f32 too: rounded once, when stored).
 * OpenBLAS's gemv gives an element bits that depend on the call's shape;
 * these do not, so a product computed block by block inside another pass
 * has the bits of the product computed alone. Part of the kernel set
 * (compiled per instruction-set level without contraction: the same bits
 * at every level).
 *
 * The gemv chain's variant (args: P (chunks, 1, f) ALIGNED, f64 for an f32
 * X when k was split (ops.c's f64 partials), X (n, f), w
 * (f, 1), z (n, 1), then the fused run's arguments, all WHOLE; scalars: a
 * ty__gemv_chain_args, then the fused run's description): for each chunk j
 * of its box, rows [j kc, (j + 1) kc) (the last chunk to n), one block of
 * GEMV_BLOCK_BYTES of X at a time: z's rows of the block (ty__thin_dot),
 * the fused run over the block's rows (ty__fused_variant on a child
 * context), and e's rows times X's into the chunk's sums (ty__thin_acc),
 * while the block is in cache; then P[j] = the sums. Unfused, the same
 * chunk is one matmul launch of ty__thin_acc over its rows (ops.c's k
 * split), so P, and the ordered sum over it, have the same bits.
 */
#include "fused.h"
#include "kernels.h"

#include <string.h>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h> /* acc_f32's conversions and fused multiply-adds */
#endif

#define LANES 8
#define GEMV_BLOCK_BYTES (128 * 1024) /* X's rows per step: in L2 with z and e */
#define ACC_WIDTH 32                  /* columns whose sums stay in registers */

/* Lane l of a row's sum: the products p = l mod 8, in p order. The
 * contiguous rows use 8-lane vectors (GCC's vector extension: element-wise
 * IEEE operations, lowered to the level's registers), eight (WIDE) or four
 * rows at a time (w's vector loaded once for them), the products past the last whole
 * vector added to their lanes one at a time (TAIL); other layouts the same
 * sums one element at a time; then the fixed tree ((a0 + a4) + (a2 + a6)) +
 * ((a1 + a5) + (a3 + a7)), as halves added. */
#define TREE(V4, V2, av)                                                                     \
  ({                                                                                         \
    const V4 b_ = __builtin_shufflevector(av, av, 0, 1, 2, 3) +                              \
                  __builtin_shufflevector(av, av, 4, 5, 6, 7);                               \
    const V2 c_ = __builtin_shufflevector(b_, b_, 0, 1) + __builtin_shufflevector(b_, b_, 2, 3); \
    c_[0] + c_[1];                                                                           \
  })
/* The products p in [kv, k) of a contiguous row xi and w added to lanes
 * p mod 8 of av, in p order. */
#define TAIL(T, V, av, xi, kv, k, w)                                                         \
  ({                                                                                         \
    T acc_[LANES];                                                                           \
    memcpy(acc_, &(av), sizeof acc_);                                                        \
    for (int64_t p_ = (kv); p_ < (k); p_++)                                                  \
      acc_[p_ % LANES] = acc_[p_ % LANES] + (xi)[p_] * (w)[p_];                              \
    V r_;                                                                                    \
    memcpy(&r_, acc_, sizeof r_);                                                            \
    r_;                                                                                      \
  })
/* Eight rows at a time where 32 vector registers hold the eight sums
 * (AVX-512): on two threads over 64 row blocks it streamed 8192^2 f64
 * 11-14% faster than four rows at a time (medians, bench/blas_probe.c gemv2,
 * bench/README.md "Products: session 12"); each row's bits are the same
 * either way (its lanes and tree are its own). */
#if defined(__AVX512F__)
#define WIDE 1
#else
#define WIDE 0
#endif
/* Lanes 0-3 and 4-7 as two halves (V4) where the level's registers are
 * narrower than the 8 lanes (f64 below AVX-512: 64 bytes against AVX2's 32):
 * as one 8-lane vector, which no register holds, GCC 12 kept the four rows'
 * sums on the stack, each stored as two halves and reloaded whole (a store
 * it cannot forward) every step: the AVX2 dot of 4096^2 f64 took 1.3x
 * the AVX-512 one's CPU time (issue 19, bench/README.md "AVX2 gemv:
 * session 13").
 * Each lane adds the same products in the same order: the same bits. */
#if defined(__AVX512F__)
#define REG_BYTES 64
#elif defined(__AVX__)
#define REG_BYTES 32
#else
#define REG_BYTES 16
#endif
#define SPLIT(T) (LANES * sizeof(T) > REG_BYTES)
/* the halves lo, hi as one 8-lane vector (after the loop; a memcpy of
 * their addresses would keep them on the stack too) */
#define JOIN(lo, hi) __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7)
#define THIN_DOT(NAME, T, V, V4, V2)                                                         \
  static void NAME(int64_t rows, int64_t k, const T *restrict X, int64_t x0, int64_t x1,     \
                   const T *restrict w, int64_t ws, T *restrict z, int64_t zs) {             \
    const int64_t kv = x1 == 1 && ws == 1 ? k / LANES * LANES : 0;                           \
    int64_t i = 0;                                                                           \
    for (; WIDE && kv > 0 && i + 8 <= rows; i += 8) {                                        \
      V a[8] = {{0}};                                                                        \
      for (int64_t p = 0; p < kv; p += LANES) {                                              \
        V wv, x;                                                                             \
        memcpy(&wv, w + p, sizeof wv);                                                       \
        for (int r = 0; r < 8; r++) {                                                        \
          memcpy(&x, X + (i + r) * x0 + p, sizeof x);                                        \
          a[r] = a[r] + x * wv;                                                              \
        }                                                                                    \
      }                                                                                      \
      for (int r = 0; r < 8; r++) {                                                          \
        if (kv < k) a[r] = TAIL(T, V, a[r], X + (i + r) * x0, kv, k, w);                     \
        z[(i + r) * zs] = TREE(V4, V2, a[r]);                                                \
      }                                                                                      \
    }                                                                                        \
    for (; kv > 0 && i + 4 <= rows; i += 4) {                                                \
      const T *r0 = X + i * x0, *r1 = r0 + x0, *r2 = r1 + x0, *r3 = r2 + x0;                 \
      V a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};                                              \
      if (SPLIT(T)) {                                                                        \
        V4 l0 = {0}, l1 = {0}, l2 = {0}, l3 = {0}, h0 = {0}, h1 = {0}, h2 = {0}, h3 = {0};   \
        for (int64_t p = 0; p < kv; p += LANES) {                                            \
          V4 wl, wh, x;                                                                      \
          memcpy(&wl, w + p, sizeof wl);                                                     \
          memcpy(&wh, w + p + LANES / 2, sizeof wh);                                         \
          memcpy(&x, r0 + p, sizeof x);                                                      \
          l0 = l0 + x * wl;                                                                  \
          memcpy(&x, r0 + p + LANES / 2, sizeof x);                                          \
          h0 = h0 + x * wh;                                                                  \
          memcpy(&x, r1 + p, sizeof x);                                                      \
          l1 = l1 + x * wl;                                                                  \
          memcpy(&x, r1 + p + LANES / 2, sizeof x);                                          \
          h1 = h1 + x * wh;                                                                  \
          memcpy(&x, r2 + p, sizeof x);                                                      \
          l2 = l2 + x * wl;                                                                  \
          memcpy(&x, r2 + p + LANES / 2, sizeof x);                                          \
          h2 = h2 + x * wh;                                                                  \
          memcpy(&x, r3 + p, sizeof x);                                                      \
          l3 = l3 + x * wl;                                                                  \
          memcpy(&x, r3 + p + LANES / 2, sizeof x);                                          \
          h3 = h3 + x * wh;                                                                  \
        }                                                                                    \
        a0 = JOIN(l0, h0), a1 = JOIN(l1, h1), a2 = JOIN(l2, h2), a3 = JOIN(l3, h3);            \
      } else {                                                                               \
        for (int64_t p = 0; p < kv; p += LANES) {                                            \
          V wv, x;                                                                           \
          memcpy(&wv, w + p, sizeof wv);                                                     \
          memcpy(&x, r0 + p, sizeof x);                                                      \
          a0 = a0 + x * wv;                                                                  \
          memcpy(&x, r1 + p, sizeof x);                                                      \
          a1 = a1 + x * wv;                                                                  \
          memcpy(&x, r2 + p, sizeof x);                                                      \
          a2 = a2 + x * wv;                                                                  \
          memcpy(&x, r3 + p, sizeof x);                                                      \
          a3 = a3 + x * wv;                                                                  \
        }                                                                                    \
      }                                                                                      \
      if (kv < k) {                                                                          \
        a0 = TAIL(T, V, a0, r0, kv, k, w);                                                   \
        a1 = TAIL(T, V, a1, r1, kv, k, w);                                                   \
        a2 = TAIL(T, V, a2, r2, kv, k, w);                                                   \
        a3 = TAIL(T, V, a3, r3, kv, k, w);                                                   \
      }                                                                                      \
      z[i * zs] = TREE(V4, V2, a0);                                                          \
      z[(i + 1) * zs] = TREE(V4, V2, a1);                                                    \
      z[(i + 2) * zs] = TREE(V4, V2, a2);                                                    \
      z[(i + 3) * zs] = TREE(V4, V2, a3);                                                    \
    }                                                                                        \
    for (; i < rows; i++) {                                                                  \
      const T *xi = X + i * x0;                                                              \
      V av = {0};                                                                            \
      for (int64_t p = 0; p < kv; p += LANES) {                                              \
        V xv, wv;                                                                            \
        memcpy(&xv, xi + p, sizeof xv);                                                      \
        memcpy(&wv, w + p, sizeof wv);                                                       \
        av = av + xv * wv;                                                                   \
      }                                                                                      \
      if (kv < k) { /* the products past the last whole vector */                          \
        T acc[LANES];                                                                        \
        memcpy(acc, &av, sizeof acc);                                                        \
        for (int64_t p = kv; p < k; p++)                                                     \
          acc[p % LANES] = acc[p % LANES] + xi[p * x1] * w[p * ws];                          \
        memcpy(&av, acc, sizeof av);                                                         \
      }                                                                                      \
      z[i * zs] = TREE(V4, V2, av);                                                          \
    }                                                                                        \
  }
typedef double v8_f64 __attribute__((vector_size(8 * sizeof(double))));
typedef double v4_f64 __attribute__((vector_size(4 * sizeof(double))));
typedef double v2_f64 __attribute__((vector_size(2 * sizeof(double))));
typedef float v8_f32 __attribute__((vector_size(8 * sizeof(float))));
typedef float v4_f32 __attribute__((vector_size(4 * sizeof(float))));
typedef float v2_f32 __attribute__((vector_size(2 * sizeof(float))));
THIN_DOT(dot_f64, double, v8_f64, v4_f64, v2_f64)
THIN_DOT(dot_f32, float, v8_f32, v4_f32, v2_f32)

/* g[j] += e_i X[i, j] for the rows i in order; ACC_WIDTH columns at a time,
 * their sums in registers across the rows (the order per column is the
 * same whatever the width). The sums are doubles for both dtypes: an f32
 * product is exact in f64 (24 + 24 bits of significand), so f32's sums
 * differ from the exact ones by f64's rounding only, and contraction
 * cannot change them. 10M x 32 f32 X^T z (bench/README.md "k-means memory
 * and f32 X^T z: session 16"), worst element's relative error: 5.0e-3
 * summed in f32, 5.2e-8 now. */
#define THIN_ACC(NAME, T)                                                                    \
  static void NAME(int64_t rows, int64_t n, const T *restrict e, int64_t es,                 \
                   const T *restrict X, int64_t x0, int64_t x1, double *restrict g) {        \
    int64_t j0 = 0;                                                                          \
    for (; j0 + ACC_WIDTH <= n && x1 == 1; j0 += ACC_WIDTH) {                                \
      double a[ACC_WIDTH];                                                                   \
      for (int j = 0; j < ACC_WIDTH; j++) a[j] = g[j0 + j];                                  \
      for (int64_t i = 0; i < rows; i++) {                                                   \
        const double ei = e[i * es];                                                         \
        const T *xi = X + i * x0 + j0;                                                       \
        for (int j = 0; j < ACC_WIDTH; j++) a[j] = a[j] + ei * (double)xi[j];                \
      }                                                                                      \
      for (int j = 0; j < ACC_WIDTH; j++) g[j0 + j] = a[j];                                  \
    }                                                                                        \
    for (int64_t i = 0; i < rows && j0 < n; i++) {                                           \
      const double ei = e[i * es];                                                           \
      const T *xi = X + i * x0;                                                              \
      for (int64_t j = j0; j < n; j++) g[j] = g[j] + ei * (double)xi[j * x1];                \
    }                                                                                        \
  }
THIN_ACC(acc_f64, double)
THIN_ACC(acc_wide_f32, float)
/* f32 in whole registers of doubles: each row's floats converted from
 * memory (vcvtps2pd) and added times e_i by a fused multiply-add, whose one
 * rounding is acc_wide_f32's (the product is exact): its bits, in fewer
 * instructions. Per row of 32 (one thread, 2 shared Xeon cores, in L2): f32
 * sums 1.4 ns, f64 multiply and add 3.0 ns, this 2.6 ns; GCC 12 vectorised
 * the scalar form with a load and an extract for every upper half, and
 * __builtin_convertvector with 2-lane conversions. Without AVX2 and FMA:
 * acc_wide_f32. */
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#if defined(__AVX512F__)
typedef __m512d vd_reg;
#define CVT_LOAD(p) _mm512_cvtps_pd(_mm256_loadu_ps(p))
#define FMADD _mm512_fmadd_pd
#define SET1 _mm512_set1_pd
#else
typedef __m256d vd_reg;
#define CVT_LOAD(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
#define FMADD _mm256_fmadd_pd
#define SET1 _mm256_set1_pd
#endif
#define DLANES ((int)(sizeof(vd_reg) / sizeof(double)))
/* Rows read ahead (software prefetch; the bits do not change): X^T z
 * streams X once, and on the AMD EPYC (Zen 3, 2 cores) the profile's
 * samples sat on the first load of each cache line. 16 rows ahead (2 KiB of
 * a 32-column f32 X) took this loop alone over 10M x 32 from 130-151 ms of
 * CPU to 103-124 ms; inside tycho, at load 15-19, no change showed
 * (bench/README.md "X^T z and gemm on the EPYC: session 19"). */
#define ACC_AHEAD 16
static void acc_f32(int64_t rows, int64_t n, const float *restrict e, int64_t es,
                    const float *restrict X, int64_t x0, int64_t x1, double *restrict g) {
  int64_t j0 = 0;
  for (; j0 + ACC_WIDTH <= n && x1 == 1; j0 += ACC_WIDTH) {
    vd_reg a[ACC_WIDTH / DLANES];
    memcpy(a, g + j0, sizeof a);
    const int64_t ahead = rows > ACC_AHEAD ? rows - ACC_AHEAD : 0;
    for (int64_t i = 0; i < rows; i++) {
      const vd_reg ei = SET1((double)e[i * es]);
      const float *xi = X + i * x0 + j0;
      if (i < ahead) { /* both cache lines of the row ACC_AHEAD rows on */
        __builtin_prefetch(xi + ACC_AHEAD * x0);
        __builtin_prefetch(xi + ACC_AHEAD * x0 + ACC_WIDTH - 1);
      }
      for (int q = 0; q < ACC_WIDTH / DLANES; q++) a[q] = FMADD(ei, CVT_LOAD(xi + q * DLANES), a[q]);
    }
    memcpy(g + j0, a, sizeof a);
  }
  if (j0 < n) acc_wide_f32(rows, n - j0, e, es, X + j0 * x1, x0, x1, g + j0);
}
/* acc_f32 on S matrices of contiguous rows at once, each sum with its own
 * registers (the same operations in the same order: the same bits). With
 * 4 on AVX2 some sums live on the stack: the loop waits on memory anyway. */
#define ACC_STREAMS 1
#define ACCS_F32(NAME, S)                                                                    \
  static void NAME(int64_t rows, int64_t n, const float *const *e, int64_t es,               \
                   const float *const *X, int64_t x0, double *const *g) {                    \
    int64_t j0 = 0;                                                                          \
    for (; j0 + ACC_WIDTH <= n; j0 += ACC_WIDTH) {                                           \
      vd_reg a[S][ACC_WIDTH / DLANES];                                                       \
      for (int s = 0; s < S; s++) memcpy(a[s], g[s] + j0, sizeof a[s]);                      \
      for (int64_t i = 0; i < rows; i++)                                                     \
        for (int s = 0; s < S; s++) {                                                        \
          const vd_reg ei = SET1((double)e[s][i * es]);                                      \
          const float *xi = X[s] + i * x0 + j0;                                              \
          for (int q = 0; q < ACC_WIDTH / DLANES; q++)                                       \
            a[s][q] = FMADD(ei, CVT_LOAD(xi + q * DLANES), a[s][q]);                         \
        }                                                                                    \
      for (int s = 0; s < S; s++) memcpy(g[s] + j0, a[s], sizeof a[s]);                      \
    }                                                                                        \
    for (int s = 0; s < S && j0 < n; s++)                                                    \
      acc_wide_f32(rows, n - j0, e[s], es, X[s] + j0, x0, 1, g[s] + j0);                     \
  }
ACCS_F32(acc2_f32, 2)
ACCS_F32(acc4_f32, 4)
#else
#define acc_f32 acc_wide_f32
#define ACC_STREAMS 0
#endif

void ty__thin_dot(ty_dtype t, int64_t rows, int64_t k, const char *X, int64_t x0, int64_t x1,
                  const char *w, int64_t ws, char *z, int64_t zs) {
  if (t == TY_F64)
    dot_f64(rows, k, (const double *)X, x0, x1, (const double *)w, ws, (double *)z, zs);
  else
    dot_f32(rows, k, (const float *)X, x0, x1, (const float *)w, ws, (float *)z, zs);
}

void ty__thin_acc(ty_dtype t, int64_t rows, int64_t n, const char *e, int64_t es, const char *X,
                  int64_t x0, int64_t x1, char *g) {
  if (t == TY_F64)
    acc_f64(rows, n, (const double *)e, es, (const double *)X, x0, x1, (double *)g);
  else
    acc_f32(rows, n, (const float *)e, es, (const float *)X, x0, x1, (double *)g);
}

void ty__thin_accs(ty_dtype t, int s, int64_t rows, int64_t n, const char *const *e, int64_t es,
                   const char *const *X, int64_t x0, int64_t x1, char *const *g) {
#if ACC_STREAMS
  if (t == TY_F32 && x1 == 1 && (s == 2 || s == 4)) {
    const float *fe[4], *fx[4];
    double *fg[4];
    for (int i = 0; i < s; i++)
      fe[i] = (const float *)e[i], fx[i] = (const float *)X[i], fg[i] = (double *)g[i];
    (s == 2 ? acc2_f32 : acc4_f32)(rows, n, fe, es, fx, x0, fg);
    return;
  }
#endif
  for (int i = 0; i < s; i++) ty__thin_acc(t, rows, n, e[i], es, X[i], x0, x1, g[i]);
}

/* Rows [r0, r1) of a WHOLE 1-D tile of the fused run, as its ALIGNED tile
 * for a piece with that box would be. */
static ty_tile rows_of(const ty_tile *x, int64_t r0, int64_t r1) {
  ty_tile t = *x;
  t.data = x->data + r0 * x->strides[0] * (int64_t)ty_dtype_size(x->dtype);
  t.shape[0] = r1 - r0;
  t.lo[0] = r0;
  return t;
}

int ty__gemv_chain_variant(ty_task_ctx *ctx) {
  const ty__gemv_chain_args *ga = ctx->scalars;
  if (ctx->nargs < 5 || ctx->scalar_bytes < sizeof *ga || ctx->ndim != 3)
    return ty_ctx_fail(ctx, "gemv chain: the launch is not a gemv chain");
  const ty_tile *P = &ctx->args[0], *X = &ctx->args[1], *W = &ctx->args[2], *Z = &ctx->args[3];
  const ty_dtype t = X->dtype, pt = P->dtype; /* pt: f64 partials of f32 (ops.c's k split) */
  const int64_t es = (int64_t)ty_dtype_size(t), ps = (int64_t)ty_dtype_size(pt);
  const int64_t n = X->gshape[0], f = X->gshape[1], nb = P->gshape[0], kc = ga->kc;
  const int nf = ctx->nargs - 4; /* the fused run's arguments */
  if ((t != TY_F64 && t != TY_F32) || (pt != t && pt != TY_F64) || X->ndim != 2 || P->ndim != 3 ||
      f > TY__THIN_K ||
      ga->e_arg < 4 || ga->e_arg >= ctx->nargs || nf > TY_MAX_ARGS || kc < 1)
    return ty_ctx_fail(ctx, "gemv chain: unexpected operands");
  const ty_tile *E = &ctx->args[ga->e_arg];
  int64_t block = GEMV_BLOCK_BYTES / (f * es);
  if (block < 64) block = 64;
  ty_tile sub[TY_MAX_ARGS];
  ty_task_ctx child = *ctx;
  child.task = ty__fused_task(ctx->rt);
  child.task_name = "fused";
  child.task_data = ty_task_data(child.task);
  child.ndim = 1;
  child.nargs = nf;
  child.args = sub;
  child.scalars = (const char *)ctx->scalars + sizeof *ga;
  child.scalar_bytes = ctx->scalar_bytes - sizeof *ga;
  _Alignas(64) char g[TY__THIN_K * 8];
  for (int64_t j = P->lo[0]; j < P->lo[0] + P->shape[0]; j++) {
    const int64_t r0 = j * kc, r1 = j == nb - 1 ? n : r0 + kc;
    memset(g, 0, (size_t)f * sizeof(double));
    for (int64_t b0 = r0; b0 < r1; b0 += block) {
      const int64_t b1 = b0 + block < r1 ? b0 + block : r1;
      const char *xb = X->data + b0 * X->strides[0] * es;
      ty__thin_dot(t, b1 - b0, f, xb, X->strides[0], X->strides[1], W->data, W->strides[0],
                   Z->data + b0 * Z->strides[0] * es, Z->strides[0]);
      for (int a = 0; a < nf; a++) sub[a] = rows_of(&ctx->args[4 + a], b0, b1);
      child.lo[0] = b0;
      child.hi[0] = b1;
      const int rc = ty__fused_variant(&child);
      if (rc) return rc;
      ty__thin_acc(t, b1 - b0, f, E->data + b0 * E->strides[0] * es, E->strides[0], xb,
                   X->strides[0], X->strides[1], g);
    }
    char *pj = P->data + (j - P->lo[0]) * P->strides[0] * ps;
    for (int64_t c = P->lo[2]; c < P->lo[2] + P->shape[2]; c++)
      ty__thin_put(g, c, pt, pj + (c - P->lo[2]) * P->strides[2] * ps);
  }
  return 0;
}
