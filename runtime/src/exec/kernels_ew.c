/*
 * kernels_ew.c — element-wise kernels: unary math, binary arithmetic,
 * comparisons, logic and `where`, as 1-D loops (see kernels.h for the calling
 * convention) in tables indexed by op and compute dtype.
 *
 * Speed: every loop has a contiguous path and, for binary ops, paths where one
 * input is a broadcast scalar (byte stride 0; the other input contiguous, or
 * strided against a scalar second input), with no calls, so the compiler
 * vectorises them for the level this copy is compiled for (the file is
 * compiled once per instruction-set level, isa.h). The pointers are not
 * restrict: an output may be written into its input's block (inplace.c), and
 * the compiler's overlap check (two compares a call) lets an output equal to
 * an input take the vector path.
 * Transcendentals (exp log sin cos tanh pow, and tan, the inverse and
 * hyperbolic functions, exp2 log2 log10 expm1 log1p cbrt arctan2 hypot) go
 * through SLEEF's 1-ULP vector functions (hypot 0.5-ULP): 8 f64 or 16 f32
 * lanes per call at avx512 (SLEEF's dispatching entry points), 4/8 at avx2,
 * scalar SLEEF at baseline; lanes past the range SLEEF's asinh acosh log1p
 * sinh cosh handle are recomputed in a wider type (VFIX_LOOP);
 * sqrt uses the hardware instruction (correctly rounded). No -ffast-math: NaN,
 * infinities and signed zeros behave as in numpy.
 *
 * Semantics that differ from plain C, all without undefined behaviour:
 *  - integer add/sub/mul/neg/abs wrap modulo 2^bits (computed in unsigned);
 *  - integer MOD follows numpy (the result has the sign of the divisor) and
 *    x % 0 == 0, INT_MIN % -1 == 0;
 *  - float MOD is numpy's: fmod, then shifted into the divisor's sign;
 *    x % 0.0 is NaN;
 *  - MAXIMUM/MINIMUM propagate NaN (numpy's maximum/minimum, not fmax);
 *  - FLOORDIV is numpy's floor_divide (integers: toward -inf, x // 0 == 0,
 *    MIN // -1 == MIN; floats: npy_divmod's snapped quotient);
 *  - shifts by a count outside [0, bits) give 0 (-1 for >> of a negative),
 *    numpy's npy_lshift/npy_rshift; << computes in unsigned;
 *  - bool is one byte 0/1 and computes as u8 (max = or, min = and).
 */
#include "kernels.h"

/* gcc only: clang does not know this pragma (-Wunknown-pragmas, an error
 * under -Werror); it takes -mprefer-vector-width=512 on the command line. */
#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC target("prefer-vector-width=512")
#endif

#include <math.h>
#include <sleef.h>
#include <string.h>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

typedef uint8_t ty_bool_t;

/* ---- vector width ------------------------------------------------------------- */

#if defined(__AVX512F__)
#define VD __m512d
#define VD_N 8
#define VD_LOAD _mm512_loadu_pd
#define VD_STORE _mm512_storeu_pd
#define VD_SQRT _mm512_sqrt_pd
#define VF __m512
#define VF_N 16
#define VF_LOAD _mm512_loadu_ps
#define VF_STORE _mm512_storeu_ps
#define VF_SQRT _mm512_sqrt_ps
#define VD_FLOOR _mm512_floor_pd
#define VD_CEIL _mm512_ceil_pd
#define VF_FLOOR _mm512_floor_ps
#define VF_CEIL _mm512_ceil_ps
#define SLEEF_D(f) Sleef_##f##d8_u10
#define SLEEF_F(f) Sleef_##f##f16_u10
#define VD_RINT(x) _mm512_roundscale_pd((x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VD_TRUNC(x) _mm512_roundscale_pd((x), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)
#define VF_RINT(x) _mm512_roundscale_ps((x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VF_TRUNC(x) _mm512_roundscale_ps((x), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)
#define HYPOT_D Sleef_hypotd8_u05
#define HYPOT_F Sleef_hypotf16_u05
#elif defined(__AVX2__)
#define VD __m256d
#define VD_N 4
#define VD_LOAD _mm256_loadu_pd
#define VD_STORE _mm256_storeu_pd
#define VD_SQRT _mm256_sqrt_pd
#define VF __m256
#define VF_N 8
#define VF_LOAD _mm256_loadu_ps
#define VF_STORE _mm256_storeu_ps
#define VF_SQRT _mm256_sqrt_ps
#define VD_FLOOR _mm256_floor_pd
#define VD_CEIL _mm256_ceil_pd
#define VF_FLOOR _mm256_floor_ps
#define VF_CEIL _mm256_ceil_ps
#define SLEEF_D(f) Sleef_##f##d4_u10
#define SLEEF_F(f) Sleef_##f##f8_u10
#define VD_RINT(x) _mm256_round_pd((x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VD_TRUNC(x) _mm256_round_pd((x), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)
#define VF_RINT(x) _mm256_round_ps((x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VF_TRUNC(x) _mm256_round_ps((x), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)
#define HYPOT_D Sleef_hypotd4_u05
#define HYPOT_F Sleef_hypotf8_u05
#else
#define VD double
#define VD_N 1
#define VD_LOAD(p) (*(p))
#define VD_STORE(p, v) (*(p) = (v))
#define VD_SQRT sqrt
#define VF float
#define VF_N 1
#define VF_LOAD(p) (*(p))
#define VF_STORE(p, v) (*(p) = (v))
#define VF_SQRT sqrtf
#define VD_FLOOR floor
#define VD_CEIL ceil
#define VF_FLOOR floorf
#define VF_CEIL ceilf
#define SLEEF_D(f) Sleef_##f##_u10
#define SLEEF_F(f) Sleef_##f##f_u10
#define VD_RINT nearbyint /* the default rounding mode: to nearest, ties to even */
#define VD_TRUNC trunc
#define VF_RINT nearbyintf
#define VF_TRUNC truncf
#define HYPOT_D Sleef_hypot_u05
#define HYPOT_F Sleef_hypotf_u05
#endif

/* Fast math (the `fastmath` policy axis): 4-ULP vector functions. glibc's
 * libmvec (the functions gcc calls for exp/log/sin/cos/pow under
 * -ffast-math; libm.so pulls it in as needed) for exp log sin cos pow, and
 * SLEEF's 3.5-ULP tanh (libmvec's tanh needs glibc 2.35). Without AVX2:
 * SLEEF's scalar 3.5-ULP functions (exp has no 3.5-ULP form: 1-ULP). */
#if defined(__AVX512F__)
__m512d _ZGVeN8v_exp(__m512d);
__m512d _ZGVeN8v_log(__m512d);
__m512d _ZGVeN8v_sin(__m512d);
__m512d _ZGVeN8v_cos(__m512d);
__m512d _ZGVeN8vv_pow(__m512d, __m512d);
__m512 _ZGVeN16v_expf(__m512);
__m512 _ZGVeN16v_logf(__m512);
__m512 _ZGVeN16v_sinf(__m512);
__m512 _ZGVeN16v_cosf(__m512);
__m512 _ZGVeN16vv_powf(__m512, __m512);
#define FAST_D_EXP _ZGVeN8v_exp
#define FAST_D_LOG _ZGVeN8v_log
#define FAST_D_SIN _ZGVeN8v_sin
#define FAST_D_COS _ZGVeN8v_cos
#define FAST_D_POW _ZGVeN8vv_pow
#define FAST_D_TANH Sleef_tanhd8_u35
#define FAST_F_EXP _ZGVeN16v_expf
#define FAST_F_LOG _ZGVeN16v_logf
#define FAST_F_SIN _ZGVeN16v_sinf
#define FAST_F_COS _ZGVeN16v_cosf
#define FAST_F_POW _ZGVeN16vv_powf
#define FAST_F_TANH Sleef_tanhf16_u35
#elif defined(__AVX2__)
__m256d _ZGVdN4v_exp(__m256d);
__m256d _ZGVdN4v_log(__m256d);
__m256d _ZGVdN4v_sin(__m256d);
__m256d _ZGVdN4v_cos(__m256d);
__m256d _ZGVdN4vv_pow(__m256d, __m256d);
__m256 _ZGVdN8v_expf(__m256);
__m256 _ZGVdN8v_logf(__m256);
__m256 _ZGVdN8v_sinf(__m256);
__m256 _ZGVdN8v_cosf(__m256);
__m256 _ZGVdN8vv_powf(__m256, __m256);
#define FAST_D_EXP _ZGVdN4v_exp
#define FAST_D_LOG _ZGVdN4v_log
#define FAST_D_SIN _ZGVdN4v_sin
#define FAST_D_COS _ZGVdN4v_cos
#define FAST_D_POW _ZGVdN4vv_pow
#define FAST_D_TANH Sleef_tanhd4_u35
#define FAST_F_EXP _ZGVdN8v_expf
#define FAST_F_LOG _ZGVdN8v_logf
#define FAST_F_SIN _ZGVdN8v_sinf
#define FAST_F_COS _ZGVdN8v_cosf
#define FAST_F_POW _ZGVdN8vv_powf
#define FAST_F_TANH Sleef_tanhf8_u35
#else
#define FAST_D_EXP Sleef_exp_u10
#define FAST_D_LOG Sleef_log_u35
#define FAST_D_SIN Sleef_sin_u35
#define FAST_D_COS Sleef_cos_u35
#define FAST_D_POW Sleef_pow_u10
#define FAST_D_TANH Sleef_tanh_u35
#define FAST_F_EXP Sleef_expf_u10
#define FAST_F_LOG Sleef_logf_u35
#define FAST_F_SIN Sleef_sinf_u35
#define FAST_F_COS Sleef_cosf_u35
#define FAST_F_POW Sleef_powf_u10
#define FAST_F_TANH Sleef_tanhf_u35
#endif

#define SZ(T) ((int64_t)sizeof(T))

/* ---- loop templates ------------------------------------------------------------- */

/* out = EXPR(x) */
#define UNARY_LOOP(NAME, TI, TO, EXPR)                                                 \
  static void NAME(int64_t n, char **p, const int64_t *s, const void *aux) {           \
    (void)aux;                                                                         \
    if (s[0] == SZ(TO) && s[1] == SZ(TI)) {                                            \
      TO *o_ = (TO *)p[0];                                                             \
      const TI *a_ = (const TI *)p[1];                                                 \
      for (int64_t i = 0; i < n; i++) {                                                \
        const TI x = a_[i];                                                            \
        o_[i] = (EXPR);                                                                \
      }                                                                                \
      return;                                                                          \
    }                                                                                  \
    char *o_ = p[0];                                                                   \
    const char *a_ = p[1];                                                             \
    for (int64_t i = 0; i < n; i++, o_ += s[0], a_ += s[1]) {                          \
      const TI x = *(const TI *)a_;                                                    \
      *(TO *)o_ = (EXPR);                                                              \
    }                                                                                  \
  }

/* out = EXPR(x, y); paths: both contiguous, y scalar, x scalar, strided. */
#define BINARY_LOOP(NAME, TI, TO, EXPR)                                                \
  static void NAME(int64_t n, char **p, const int64_t *s, const void *aux) {           \
    (void)aux;                                                                         \
    if (s[0] == SZ(TO)) {                                                              \
      TO *o_ = (TO *)p[0];                                                             \
      if (s[1] == SZ(TI) && s[2] == SZ(TI)) {                                          \
        const TI *a_ = (const TI *)p[1], *b_ = (const TI *)p[2];                       \
        for (int64_t i = 0; i < n; i++) {                                              \
          const TI x = a_[i], y = b_[i];                                               \
          o_[i] = (EXPR);                                                              \
        }                                                                              \
        return;                                                                        \
      }                                                                                \
      if (s[1] == SZ(TI) && s[2] == 0) {                                               \
        const TI *a_ = (const TI *)p[1];                                               \
        const TI y = *(const TI *)p[2];                                                \
        for (int64_t i = 0; i < n; i++) {                                              \
          const TI x = a_[i];                                                          \
          o_[i] = (EXPR);                                                              \
        }                                                                              \
        return;                                                                        \
      }                                                                                \
      if (s[1] == 0 && s[2] == SZ(TI)) {                                               \
        const TI x = *(const TI *)p[1];                                                \
        const TI *b_ = (const TI *)p[2];                                               \
        for (int64_t i = 0; i < n; i++) {                                              \
          const TI y = b_[i];                                                          \
          o_[i] = (EXPR);                                                              \
        }                                                                              \
        return;                                                                        \
      }                                                                                \
      if (s[2] == 0) { /* a strided column against a scalar (fused_cpu.c's column order) */ \
        const char *a_ = p[1];                                                         \
        const TI y = *(const TI *)p[2];                                                \
        for (int64_t i = 0; i < n; i++) {                                              \
          const TI x = *(const TI *)(a_ + i * s[1]);                                   \
          o_[i] = (EXPR);                                                              \
        }                                                                              \
        return;                                                                        \
      }                                                                                \
    }                                                                                  \
    char *o_ = p[0];                                                                   \
    const char *a_ = p[1], *b_ = p[2];                                                 \
    for (int64_t i = 0; i < n; i++, o_ += s[0], a_ += s[1], b_ += s[2]) {              \
      const TI x = *(const TI *)a_, y = *(const TI *)b_;                               \
      *(TO *)o_ = (EXPR);                                                              \
    }                                                                                  \
  }

/* out = VFN(x) through SLEEF/intrinsics, VN lanes at a time. The tail and
 * strided runs go through a zero-padded lane buffer (log(0) = -inf is harmless:
 * floating-point exceptions do not trap). */
#define VMATH_LOOP(NAME, T, VN, VLOAD, VSTORE, VFN)                                    \
  static void NAME(int64_t n, char **p, const int64_t *s, const void *aux) {           \
    (void)aux;                                                                         \
    int64_t i = 0;                                                                     \
    if (s[0] == SZ(T) && s[1] == SZ(T)) {                                              \
      T *o_ = (T *)p[0];                                                               \
      const T *a_ = (const T *)p[1];                                                   \
      for (; i + (VN) <= n; i += (VN)) VSTORE(o_ + i, VFN(VLOAD(a_ + i)));             \
      if (i < n) {                                                                     \
        T buf[VN];                                                                     \
        memset(buf, 0, sizeof buf);                                                    \
        memcpy(buf, a_ + i, (size_t)(n - i) * sizeof(T));                              \
        VSTORE(buf, VFN(VLOAD(buf)));                                                  \
        memcpy(o_ + i, buf, (size_t)(n - i) * sizeof(T));                              \
      }                                                                                \
      return;                                                                          \
    }                                                                                  \
    for (; i < n; i += (VN)) {                                                         \
      int64_t m = n - i < (VN) ? n - i : (VN);                                         \
      T buf[VN];                                                                       \
      memset(buf, 0, sizeof buf);                                                      \
      for (int64_t j = 0; j < m; j++) buf[j] = *(const T *)(p[1] + (i + j) * s[1]);    \
      VSTORE(buf, VFN(VLOAD(buf)));                                                    \
      for (int64_t j = 0; j < m; j++) *(T *)(p[0] + (i + j) * s[0]) = buf[j];          \
    }                                                                                  \
  }

/* sin and cos: SLEEF picks its argument reduction for a whole vector (a fast
 * one when every lane is small, a slower one otherwise) and the two may
 * differ in the last bit for small lanes, so a lane's result would depend on
 * its neighbours, i.e. on where a piece or a block starts. A vector with any
 * lane at or beyond TRIG_SMALL (or NaN) is therefore computed lane by lane,
 * each lane alone in a zero vector: every element gets the reduction its own
 * value selects, whatever the grouping (15 is at most SLEEF's fast-path
 * bound: 15 for f64, 125 for f32). */
#define TRIG_SMALL 15.0
#define VTRIG_LOOP(NAME, T, VN, VLOAD, VSTORE, VFN)                                    \
  static inline void NAME##_vec(T *o_, const T *a_) {                                  \
    int big = 0;                                                                       \
    for (int j = 0; j < (VN); j++) big += !(a_[j] < (T)TRIG_SMALL && a_[j] > -(T)TRIG_SMALL); \
    if (!big) {                                                                        \
      VSTORE(o_, VFN(VLOAD(a_)));                                                      \
      return;                                                                          \
    }                                                                                  \
    for (int j = 0; j < (VN); j++) {                                                   \
      T lane[VN], r[VN];                                                               \
      memset(lane, 0, sizeof lane);                                                    \
      lane[j] = a_[j];                                                                 \
      VSTORE(r, VFN(VLOAD(lane)));                                                     \
      o_[j] = r[j];                                                                    \
    }                                                                                  \
  }                                                                                    \
  VEC_LOOP(NAME, T, VN)

/* The 1-D loop over NAME##_vec (VN elements, o_ may be a_): whole vectors in
 * place, the tail and strided runs through a zero-padded lane buffer. */
#define VEC_LOOP(NAME, T, VN)                                                          \
  static void NAME(int64_t n, char **p, const int64_t *s, const void *aux) {           \
    (void)aux;                                                                         \
    int64_t i = 0;                                                                     \
    if (s[0] == SZ(T) && s[1] == SZ(T)) {                                              \
      T *o_ = (T *)p[0];                                                               \
      const T *a_ = (const T *)p[1];                                                   \
      for (; i + (VN) <= n; i += (VN)) NAME##_vec(o_ + i, a_ + i);                     \
    }                                                                                  \
    for (; i < n; i += (VN)) {                                                         \
      int64_t m = n - i < (VN) ? n - i : (VN);                                         \
      T buf[VN], out[VN];                                                              \
      memset(buf, 0, sizeof buf);                                                      \
      for (int64_t j = 0; j < m; j++) buf[j] = *(const T *)(p[1] + (i + j) * s[1]);    \
      NAME##_vec(out, buf);                                                            \
      for (int64_t j = 0; j < m; j++) *(T *)(p[0] + (i + j) * s[0]) = out[j];          \
    }                                                                                  \
  }

/* out = VFN(x, y), both possibly strided or scalar. */
#define VMATH2_LOOP(NAME, T, VN, VLOAD, VSTORE, VFN)                                   \
  static void NAME(int64_t n, char **p, const int64_t *s, const void *aux) {           \
    (void)aux;                                                                         \
    int64_t i = 0;                                                                     \
    if (s[0] == SZ(T) && s[1] == SZ(T) && s[2] == SZ(T)) {                             \
      T *o_ = (T *)p[0];                                                               \
      const T *a_ = (const T *)p[1], *b_ = (const T *)p[2];                            \
      for (; i + (VN) <= n; i += (VN)) VSTORE(o_ + i, VFN(VLOAD(a_ + i), VLOAD(b_ + i))); \
    }                                                                                  \
    for (; i < n; i += (VN)) {                                                         \
      int64_t m = n - i < (VN) ? n - i : (VN);                                         \
      T x[VN], y[VN];                                                                  \
      memset(x, 0, sizeof x);                                                          \
      memset(y, 0, sizeof y);                                                          \
      for (int64_t j = 0; j < m; j++) {                                                \
        x[j] = *(const T *)(p[1] + (i + j) * s[1]);                                    \
        y[j] = *(const T *)(p[2] + (i + j) * s[2]);                                    \
      }                                                                                \
      VSTORE(x, VFN(VLOAD(x), VLOAD(y)));                                              \
      for (int64_t j = 0; j < m; j++) *(T *)(p[0] + (i + j) * s[0]) = x[j];            \
    }                                                                                  \
  }

/* ---- unary --------------------------------------------------------------------- */

VMATH_LOOP(exp_f64, double, VD_N, VD_LOAD, VD_STORE, SLEEF_D(exp))
VMATH_LOOP(log_f64, double, VD_N, VD_LOAD, VD_STORE, SLEEF_D(log))
VTRIG_LOOP(sin_f64, double, VD_N, VD_LOAD, VD_STORE, SLEEF_D(sin))
VTRIG_LOOP(cos_f64, double, VD_N, VD_LOAD, VD_STORE, SLEEF_D(cos))
VMATH_LOOP(tanh_f64, double, VD_N, VD_LOAD, VD_STORE, SLEEF_D(tanh))
VMATH_LOOP(sqrt_f64, double, VD_N, VD_LOAD, VD_STORE, VD_SQRT)
VMATH_LOOP(exp_f32, float, VF_N, VF_LOAD, VF_STORE, SLEEF_F(exp))
VMATH_LOOP(log_f32, float, VF_N, VF_LOAD, VF_STORE, SLEEF_F(log))
VTRIG_LOOP(sin_f32, float, VF_N, VF_LOAD, VF_STORE, SLEEF_F(sin))
VTRIG_LOOP(cos_f32, float, VF_N, VF_LOAD, VF_STORE, SLEEF_F(cos))
VMATH_LOOP(tanh_f32, float, VF_N, VF_LOAD, VF_STORE, SLEEF_F(tanh))
VMATH_LOOP(sqrt_f32, float, VF_N, VF_LOAD, VF_STORE, VF_SQRT)

/* fastmath */
VMATH_LOOP(exp_f64_fast, double, VD_N, VD_LOAD, VD_STORE, FAST_D_EXP)
VMATH_LOOP(log_f64_fast, double, VD_N, VD_LOAD, VD_STORE, FAST_D_LOG)
VTRIG_LOOP(sin_f64_fast, double, VD_N, VD_LOAD, VD_STORE, FAST_D_SIN)
VTRIG_LOOP(cos_f64_fast, double, VD_N, VD_LOAD, VD_STORE, FAST_D_COS)
VMATH_LOOP(tanh_f64_fast, double, VD_N, VD_LOAD, VD_STORE, FAST_D_TANH)
VMATH_LOOP(exp_f32_fast, float, VF_N, VF_LOAD, VF_STORE, FAST_F_EXP)
VMATH_LOOP(log_f32_fast, float, VF_N, VF_LOAD, VF_STORE, FAST_F_LOG)
VTRIG_LOOP(sin_f32_fast, float, VF_N, VF_LOAD, VF_STORE, FAST_F_SIN)
VTRIG_LOOP(cos_f32_fast, float, VF_N, VF_LOAD, VF_STORE, FAST_F_COS)
VMATH_LOOP(tanh_f32_fast, float, VF_N, VF_LOAD, VF_STORE, FAST_F_TANH)

UNARY_LOOP(neg_f64, double, double, -x)
UNARY_LOOP(neg_f32, float, float, -x)
UNARY_LOOP(neg_i64, int64_t, int64_t, (int64_t)(0 - (uint64_t)x))
UNARY_LOOP(neg_i32, int32_t, int32_t, (int32_t)(0 - (uint32_t)x))
UNARY_LOOP(neg_u8, uint8_t, uint8_t, (uint8_t)(0 - x))

UNARY_LOOP(abs_f64, double, double, fabs(x))
UNARY_LOOP(abs_f32, float, float, fabsf(x))
UNARY_LOOP(abs_i64, int64_t, int64_t, x < 0 ? (int64_t)(0 - (uint64_t)x) : x)
UNARY_LOOP(abs_i32, int32_t, int32_t, x < 0 ? (int32_t)(0 - (uint32_t)x) : x)
UNARY_LOOP(ident_u8, uint8_t, uint8_t, x) /* abs/floor/ceil of u8 and bool */
UNARY_LOOP(ident_i64, int64_t, int64_t, x)
UNARY_LOOP(ident_i32, int32_t, int32_t, x)

/* gcc does not vectorise floor() without -fno-trapping-math: use the
 * rounding instructions directly (exact, like floor/ceil). */
VMATH_LOOP(floor_f64, double, VD_N, VD_LOAD, VD_STORE, VD_FLOOR)
VMATH_LOOP(floor_f32, float, VF_N, VF_LOAD, VF_STORE, VF_FLOOR)
VMATH_LOOP(ceil_f64, double, VD_N, VD_LOAD, VD_STORE, VD_CEIL)
VMATH_LOOP(ceil_f32, float, VF_N, VF_LOAD, VF_STORE, VF_CEIL)

UNARY_LOOP(not_f64, double, ty_bool_t, (ty_bool_t)(x == 0))
UNARY_LOOP(not_f32, float, ty_bool_t, (ty_bool_t)(x == 0))
UNARY_LOOP(not_i64, int64_t, ty_bool_t, (ty_bool_t)(x == 0))
UNARY_LOOP(not_i32, int32_t, ty_bool_t, (ty_bool_t)(x == 0))
UNARY_LOOP(not_u8, uint8_t, ty_bool_t, (ty_bool_t)(x == 0))

/* ---- numpy's other unary ufuncs (issue 18) ------------------------------------------ */

/* SLEEF's asinh, acosh and log1p return inf above a bound (f64: 1.34e154,
 * 1.34e154, 1e307; f32: 1.84e19, 1.84e19, 1e38) and its sinh/cosh overflow
 * early (f64 past 709, true overflow 710.48; f32 past 88.5, 89.4): those lanes
 * (beyond the slightly lower bounds below, and inf) are recomputed alone in
 * the next wider type (long double for f64) and rounded once: within 1 ULP,
 * and a lane's result still depends on its own value only. */
#define VFIX_LOOP(NAME, T, VN, VLOAD, VSTORE, VFN, FIX)                                \
  static inline void NAME##_vec(T *o_, const T *a_) {                                  \
    T r[VN];                                                                           \
    VSTORE(r, VFN(VLOAD(a_)));                                                         \
    for (int j = 0; j < (VN); j++) o_[j] = FIX(a_[j], r[j]);                           \
  }                                                                                    \
  VEC_LOOP(NAME, T, VN)
#define FIX_ABS_D(F, BIG)                                                              \
  static inline double fix_##F##_d(double x, double r) {                               \
    return fabs(x) > (BIG) ? (double)F##l((long double)x) : r;                         \
  }
#define FIX_ABS_F(F, BIG)                                                              \
  static inline float fix_##F##_f(float x, float r) {                                  \
    return fabsf(x) > (BIG) ? (float)F((double)x) : r;                                 \
  }
FIX_ABS_D(asinh, 1e154)
FIX_ABS_D(acosh, 1e154)
FIX_ABS_D(log1p, 1e306)
FIX_ABS_D(sinh, 709.0)
FIX_ABS_D(cosh, 709.0)
FIX_ABS_F(asinh, 1e19f)
FIX_ABS_F(acosh, 1e19f)
FIX_ABS_F(log1p, 1e37f)
FIX_ABS_F(sinh, 88.0f)
FIX_ABS_F(cosh, 88.0f)
#define SLEEF_FIXED(NAME)                                                              \
  VFIX_LOOP(NAME##_f64, double, VD_N, VD_LOAD, VD_STORE, SLEEF_D(NAME), fix_##NAME##_d) \
  VFIX_LOOP(NAME##_f32, float, VF_N, VF_LOAD, VF_STORE, SLEEF_F(NAME), fix_##NAME##_f)

/* SLEEF's 1-ULP functions; tan picks its argument reduction per vector like
 * sin/cos, so it isolates lanes the same way (VTRIG_LOOP). The others have
 * no vector-wide branch: a lane's result depends on its own value only. */
#define SLEEF_UNARY(NAME)                                                              \
  VMATH_LOOP(NAME##_f64, double, VD_N, VD_LOAD, VD_STORE, SLEEF_D(NAME))               \
  VMATH_LOOP(NAME##_f32, float, VF_N, VF_LOAD, VF_STORE, SLEEF_F(NAME))
VTRIG_LOOP(tan_f64, double, VD_N, VD_LOAD, VD_STORE, SLEEF_D(tan))
VTRIG_LOOP(tan_f32, float, VF_N, VF_LOAD, VF_STORE, SLEEF_F(tan))
SLEEF_UNARY(asin)
SLEEF_UNARY(acos)
SLEEF_UNARY(atan)
SLEEF_FIXED(sinh)
SLEEF_FIXED(cosh)
SLEEF_FIXED(asinh)
SLEEF_FIXED(acosh)
SLEEF_UNARY(atanh)
SLEEF_UNARY(expm1)
SLEEF_FIXED(log1p)
SLEEF_UNARY(log2)
SLEEF_UNARY(log10)
SLEEF_UNARY(exp2)
SLEEF_UNARY(cbrt)

/* exact: the rounding instructions (nearbyint/trunc at baseline) */
VMATH_LOOP(rint_f64, double, VD_N, VD_LOAD, VD_STORE, VD_RINT)
VMATH_LOOP(rint_f32, float, VF_N, VF_LOAD, VF_STORE, VF_RINT)
VMATH_LOOP(trunc_f64, double, VD_N, VD_LOAD, VD_STORE, VD_TRUNC)
VMATH_LOOP(trunc_f32, float, VF_N, VF_LOAD, VF_STORE, VF_TRUNC)

/* numpy's sign: NaN stays NaN, both zeros give +0 */
UNARY_LOOP(sign_f64, double, double, x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x)
UNARY_LOOP(sign_f32, float, float, x > 0 ? 1.0f : x < 0 ? -1.0f : x == 0 ? 0.0f : x)
UNARY_LOOP(sign_i64, int64_t, int64_t, (int64_t)(x > 0) - (int64_t)(x < 0))
UNARY_LOOP(sign_i32, int32_t, int32_t, (int32_t)(x > 0) - (int32_t)(x < 0))
UNARY_LOOP(sign_u8, uint8_t, uint8_t, (uint8_t)(x > 0))

/* integers: numpy computes 1.0/x and converts (1/2 -> 0); 1/0 is 0 here,
 * as x // 0 (numpy gives the minimum integer with a warning) */
UNARY_LOOP(recip_f64, double, double, 1.0 / x)
UNARY_LOOP(recip_f32, float, float, 1.0f / x)
UNARY_LOOP(recip_i64, int64_t, int64_t, x == 1 ? 1 : x == -1 ? -1 : 0)
UNARY_LOOP(recip_i32, int32_t, int32_t, x == 1 ? 1 : x == -1 ? -1 : 0)
UNARY_LOOP(recip_u8, uint8_t, uint8_t, (uint8_t)(x == 1))

UNARY_LOOP(invert_i64, int64_t, int64_t, ~x)
UNARY_LOOP(invert_i32, int32_t, int32_t, ~x)
UNARY_LOOP(invert_u8, uint8_t, uint8_t, (uint8_t)~x)
/* invert of bool is not_u8 (numpy: ~True == False) */

#define CLASSIFY(NAME, FEXPR, IVAL)                                                    \
  UNARY_LOOP(NAME##_f64, double, ty_bool_t, (ty_bool_t)(FEXPR))                        \
  UNARY_LOOP(NAME##_f32, float, ty_bool_t, (ty_bool_t)(FEXPR))                         \
  UNARY_LOOP(NAME##_i64, int64_t, ty_bool_t, ((void)x, (ty_bool_t)(IVAL)))             \
  UNARY_LOOP(NAME##_i32, int32_t, ty_bool_t, ((void)x, (ty_bool_t)(IVAL)))             \
  UNARY_LOOP(NAME##_u8, uint8_t, ty_bool_t, ((void)x, (ty_bool_t)(IVAL)))
CLASSIFY(isnan, x != x, 0)
CLASSIFY(isinf, x == INFINITY || x == -INFINITY, 0)
CLASSIFY(isfinite, x - x == 0, 1)

/* ---- binary arithmetic ----------------------------------------------------------- */

#define ARITH_FLOAT(NAME, OP)                                                          \
  BINARY_LOOP(NAME##_f64, double, double, x OP y)                                      \
  BINARY_LOOP(NAME##_f32, float, float, x OP y)
#define ARITH_INT(NAME, OP)                                                            \
  BINARY_LOOP(NAME##_i64, int64_t, int64_t, (int64_t)((uint64_t)x OP(uint64_t) y))     \
  BINARY_LOOP(NAME##_i32, int32_t, int32_t, (int32_t)((uint32_t)x OP(uint32_t) y))     \
  BINARY_LOOP(NAME##_u8, uint8_t, uint8_t, (uint8_t)((unsigned)x OP(unsigned) y))

ARITH_FLOAT(add, +)
ARITH_FLOAT(sub, -)
ARITH_FLOAT(mul, *)
ARITH_FLOAT(div, /)
ARITH_INT(add, +)
ARITH_INT(sub, -)
ARITH_INT(mul, *)

/* numpy's float remainder (npy_divmod): fmod, moved into the divisor's sign;
 * an exact zero takes the divisor's sign too. */
static inline double mod_f64(double a, double b) {
  double m = fmod(a, b);
  if (b == 0) return m; /* NaN */
  if (m != 0) {
    if ((b < 0) != (m < 0)) m += b;
  } else {
    m = copysign(0.0, b);
  }
  return m;
}
static inline float mod_f32(float a, float b) {
  float m = fmodf(a, b);
  if (b == 0) return m;
  if (m != 0) {
    if ((b < 0) != (m < 0)) m += b;
  } else {
    m = copysignf(0.0f, b);
  }
  return m;
}
/* b == -1 is answered without dividing: INT_MIN % -1 traps on x86. */
static inline int64_t mod_i64(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}
static inline int32_t mod_i32(int32_t a, int32_t b) {
  if (b == 0 || b == -1) return 0;
  int32_t m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

BINARY_LOOP(mod_f64_loop, double, double, mod_f64(x, y))
BINARY_LOOP(mod_f32_loop, float, float, mod_f32(x, y))
BINARY_LOOP(mod_i64_loop, int64_t, int64_t, mod_i64(x, y))
BINARY_LOOP(mod_i32_loop, int32_t, int32_t, mod_i32(x, y))
BINARY_LOOP(mod_u8_loop, uint8_t, uint8_t, (uint8_t)(y ? x % y : 0))

/* pow: x*x when the exponent is the scalar 2 (exact, and the common square);
 * SLEEF's 1-ULP pow otherwise. */
VMATH2_LOOP(pow_f64_sleef, double, VD_N, VD_LOAD, VD_STORE, SLEEF_D(pow))
VMATH2_LOOP(pow_f32_sleef, float, VF_N, VF_LOAD, VF_STORE, SLEEF_F(pow))
BINARY_LOOP(square_f64, double, double, ((void)y, x * x))
BINARY_LOOP(square_f32, float, float, ((void)y, x * x))

/* NAME: pow with a scalar exponent of exactly 2 as SQUARE, else GENERAL */
#define POW_LOOP(NAME, T, SQUARE, GENERAL)                                       \
  static void NAME(int64_t n, char **p, const int64_t *s, const void *aux) {     \
    if (s[2] == 0 && *(const T *)p[2] == (T)2)                                   \
      SQUARE(n, p, s, aux);                                                      \
    else                                                                         \
      GENERAL(n, p, s, aux);                                                     \
  }
POW_LOOP(pow_f64, double, square_f64, pow_f64_sleef)
POW_LOOP(pow_f32, float, square_f32, pow_f32_sleef)

VMATH2_LOOP(pow_f64_fastv, double, VD_N, VD_LOAD, VD_STORE, FAST_D_POW)
VMATH2_LOOP(pow_f32_fastv, float, VF_N, VF_LOAD, VF_STORE, FAST_F_POW)
POW_LOOP(pow_f64_fast, double, square_f64, pow_f64_fastv)
POW_LOOP(pow_f32_fast, float, square_f32, pow_f32_fastv)

/* NaN-propagating, and maximum(a, b) returns a on ties (numpy's rule). */
BINARY_LOOP(maximum_f64, double, double, (x >= y || x != x) ? x : y)
BINARY_LOOP(maximum_f32, float, float, (x >= y || x != x) ? x : y)
BINARY_LOOP(minimum_f64, double, double, (x <= y || x != x) ? x : y)
BINARY_LOOP(minimum_f32, float, float, (x <= y || x != x) ? x : y)
#define MINMAX_INT(T, SUF)                                                             \
  BINARY_LOOP(maximum_##SUF, T, T, x > y ? x : y)                                      \
  BINARY_LOOP(minimum_##SUF, T, T, x < y ? x : y)
MINMAX_INT(int64_t, i64)
MINMAX_INT(int32_t, i32)
MINMAX_INT(uint8_t, u8)

/* ---- comparisons and logic --------------------------------------------------------- */

#define COMPARE_ALL(NAME, EXPR)                                                        \
  BINARY_LOOP(NAME##_f64, double, ty_bool_t, (ty_bool_t)(EXPR))                        \
  BINARY_LOOP(NAME##_f32, float, ty_bool_t, (ty_bool_t)(EXPR))                         \
  BINARY_LOOP(NAME##_i64, int64_t, ty_bool_t, (ty_bool_t)(EXPR))                       \
  BINARY_LOOP(NAME##_i32, int32_t, ty_bool_t, (ty_bool_t)(EXPR))                       \
  BINARY_LOOP(NAME##_u8, uint8_t, ty_bool_t, (ty_bool_t)(EXPR))

COMPARE_ALL(lt, x < y)
COMPARE_ALL(le, x <= y)
COMPARE_ALL(gt, x > y)
COMPARE_ALL(ge, x >= y)
COMPARE_ALL(eq, x == y)
COMPARE_ALL(ne, x != y)
COMPARE_ALL(and, (x != 0) & (y != 0))
COMPARE_ALL(or, (x != 0) | (y != 0))
COMPARE_ALL(xor, (x != 0) ^ (y != 0))

/* ---- numpy's other binary ufuncs (issue 18) ------------------------------------------- */

VMATH2_LOOP(atan2_f64, double, VD_N, VD_LOAD, VD_STORE, SLEEF_D(atan2))
VMATH2_LOOP(atan2_f32, float, VF_N, VF_LOAD, VF_STORE, SLEEF_F(atan2))
VMATH2_LOOP(hypot_f64, double, VD_N, VD_LOAD, VD_STORE, HYPOT_D) /* 0.5 ULP */
VMATH2_LOOP(hypot_f32, float, VF_N, VF_LOAD, VF_STORE, HYPOT_F)

/* numpy's float floor_divide (npy_floor_divide, npy_divmod): the quotient of
 * a - fmod(a, b), moved down when the remainder's sign differs from b's,
 * snapped to the nearest integer; x // 0 is x / 0. Every step is exact or
 * one IEEE operation, so any vector width gives the same bits. */
#define FLOORDIV_FLOAT(SUF, T, FMOD, FLOOR, COPYSIGN)                                  \
  static inline T fdiv_##SUF(T a, T b) {                                           \
    if (!b) return a / b;                                                              \
    T mod = FMOD(a, b);                                                                \
    T div = (a - mod) / b;                                                             \
    if (mod) {                                                                         \
      if ((b < 0) != (mod < 0)) div -= 1;                                              \
    }                                                                                  \
    if (!div) return COPYSIGN(0, a / b);                                               \
    T f = FLOOR(div);                                                                  \
    if (div - f > (T)0.5) f += 1;                                                      \
    return f;                                                                          \
  }
FLOORDIV_FLOAT(f64, double, fmod, floor, copysign)
FLOORDIV_FLOAT(f32, float, fmodf, floorf, copysignf)
/* integers: toward -inf; x // 0 == 0 and MIN // -1 == MIN, as numpy */
#define FLOORDIV_INT(SUF, T, MIN)                                                      \
  static inline T fdiv_##SUF(T a, T b) {                                           \
    if (b == 0) return 0;                                                              \
    if (b == -1) return a == MIN ? MIN : -a;                                           \
    T q = a / b;                                                                       \
    if (((a > 0) != (b > 0)) && q * b != a) q -= 1;                                    \
    return q;                                                                          \
  }
FLOORDIV_INT(i64, int64_t, INT64_MIN)
FLOORDIV_INT(i32, int32_t, INT32_MIN)
BINARY_LOOP(floordiv_f64, double, double, fdiv_f64(x, y))
BINARY_LOOP(floordiv_f32, float, float, fdiv_f32(x, y))
BINARY_LOOP(floordiv_i64, int64_t, int64_t, fdiv_i64(x, y))
BINARY_LOOP(floordiv_i32, int32_t, int32_t, fdiv_i32(x, y))
BINARY_LOOP(floordiv_u8, uint8_t, uint8_t, (uint8_t)(y ? x / y : 0))

/* bitwise: integers; bool goes through the logical loops (0/1 out) */
#define BITWISE(NAME, OP)                                                              \
  BINARY_LOOP(NAME##_i64, int64_t, int64_t, x OP y)                                    \
  BINARY_LOOP(NAME##_i32, int32_t, int32_t, x OP y)                                    \
  BINARY_LOOP(NAME##_u8, uint8_t, uint8_t, (uint8_t)(x OP y))
BITWISE(bitand, &)
BITWISE(bitor, |)
BITWISE(bitxor, ^)

/* numpy's npy_lshift/npy_rshift: a count outside [0, bits) shifts every bit
 * out (0, or -1 for >> of a negative); << computes in unsigned (wraps) */
BINARY_LOOP(lshift_i64, int64_t, int64_t, (uint64_t)y < 64 ? (int64_t)((uint64_t)x << y) : 0)
BINARY_LOOP(lshift_i32, int32_t, int32_t, (uint32_t)y < 32 ? (int32_t)((uint32_t)x << y) : 0)
BINARY_LOOP(lshift_u8, uint8_t, uint8_t, y < 8 ? (uint8_t)(x << y) : 0)
BINARY_LOOP(rshift_i64, int64_t, int64_t, (uint64_t)y < 64 ? x >> y : x < 0 ? -1 : 0)
BINARY_LOOP(rshift_i32, int32_t, int32_t, (uint32_t)y < 32 ? x >> y : x < 0 ? -1 : 0)
BINARY_LOOP(rshift_u8, uint8_t, uint8_t, y < 8 ? (uint8_t)(x >> y) : 0)

/* ---- where -------------------------------------------------------------------------- */

#define WHERE_LOOP(NAME, T)                                                            \
  static void NAME(int64_t n, char **p, const int64_t *s, const void *aux) {           \
    (void)aux;                                                                         \
    if (s[0] == SZ(T) && s[1] == 1 && s[2] == SZ(T) && s[3] == SZ(T)) {                \
      T *o_ = (T *)p[0];                                                               \
      const ty_bool_t *c_ = (const ty_bool_t *)p[1];                                   \
      const T *a_ = (const T *)p[2], *b_ = (const T *)p[3];                            \
      for (int64_t i = 0; i < n; i++) o_[i] = c_[i] ? a_[i] : b_[i];                   \
      return;                                                                          \
    }                                                                                  \
    char *o_ = p[0];                                                                   \
    const char *c_ = p[1], *a_ = p[2], *b_ = p[3];                                     \
    for (int64_t i = 0; i < n; i++, o_ += s[0], c_ += s[1], a_ += s[2], b_ += s[3])    \
      *(T *)o_ = *(const ty_bool_t *)c_ ? *(const T *)a_ : *(const T *)b_;             \
  }
WHERE_LOOP(where_f64, double)
WHERE_LOOP(where_f32, float)
WHERE_LOOP(where_i64, int64_t)
WHERE_LOOP(where_i32, int32_t)
WHERE_LOOP(where_u8, uint8_t)

/* ---- the integer dtypes added later: i8 i16 u16 u32 u64 ------------------------------ *
 *
 * The same semantics as i64/i32/u8 above, generated per dtype. Arithmetic
 * computes in uint64_t and keeps the low bits, so nothing relies on C's
 * promotion of narrow types to int (u16 * u16 would overflow an int). */
#define WRAP(T, UT, E) ((T)(UT)(E))
#define EXT_ANY(SUF, T, UT)                                                            \
  UNARY_LOOP(neg_##SUF, T, T, WRAP(T, UT, 0 - (uint64_t)x))                            \
  UNARY_LOOP(ident_##SUF, T, T, x)                                                     \
  UNARY_LOOP(not_##SUF, T, ty_bool_t, (ty_bool_t)(x == 0))                             \
  UNARY_LOOP(invert_##SUF, T, T, WRAP(T, UT, ~(uint64_t)x))                            \
  UNARY_LOOP(isnan_##SUF, T, ty_bool_t, ((void)x, (ty_bool_t)0))                       \
  UNARY_LOOP(isinf_##SUF, T, ty_bool_t, ((void)x, (ty_bool_t)0))                       \
  UNARY_LOOP(isfinite_##SUF, T, ty_bool_t, ((void)x, (ty_bool_t)1))                    \
  BINARY_LOOP(add_##SUF, T, T, WRAP(T, UT, (uint64_t)x + (uint64_t)y))                 \
  BINARY_LOOP(sub_##SUF, T, T, WRAP(T, UT, (uint64_t)x - (uint64_t)y))                 \
  BINARY_LOOP(mul_##SUF, T, T, WRAP(T, UT, (uint64_t)x * (uint64_t)y))                 \
  MINMAX_INT(T, SUF)                                                                   \
  BINARY_LOOP(lt_##SUF, T, ty_bool_t, (ty_bool_t)(x < y))                              \
  BINARY_LOOP(le_##SUF, T, ty_bool_t, (ty_bool_t)(x <= y))                             \
  BINARY_LOOP(gt_##SUF, T, ty_bool_t, (ty_bool_t)(x > y))                              \
  BINARY_LOOP(ge_##SUF, T, ty_bool_t, (ty_bool_t)(x >= y))                             \
  BINARY_LOOP(eq_##SUF, T, ty_bool_t, (ty_bool_t)(x == y))                             \
  BINARY_LOOP(ne_##SUF, T, ty_bool_t, (ty_bool_t)(x != y))                             \
  BINARY_LOOP(and_##SUF, T, ty_bool_t, (ty_bool_t)((x != 0) & (y != 0)))               \
  BINARY_LOOP(or_##SUF, T, ty_bool_t, (ty_bool_t)((x != 0) | (y != 0)))                \
  BINARY_LOOP(xor_##SUF, T, ty_bool_t, (ty_bool_t)((x != 0) ^ (y != 0)))               \
  BINARY_LOOP(bitand_##SUF, T, T, (T)(x & y))                                          \
  BINARY_LOOP(bitor_##SUF, T, T, (T)(x | y))                                           \
  BINARY_LOOP(bitxor_##SUF, T, T, (T)(x ^ y))                                          \
  WHERE_LOOP(where_##SUF, T)

/* signed: numpy's modulo and floor division (as mod_i64, fdiv_i64); shifts
 * by a negative count or >= bits shift everything out */
#define EXT_SIGNED(SUF, T, UT, BITS, MIN)                                              \
  EXT_ANY(SUF, T, UT)                                                                  \
  FLOORDIV_INT(SUF, T, MIN)                                                            \
  static inline T imod_##SUF(T a, T b) {                                               \
    if (b == 0 || b == -1) return 0;                                                   \
    T m = (T)(a % b);                                                                  \
    if (m != 0 && ((m < 0) != (b < 0))) m = (T)(m + b);                                \
    return m;                                                                          \
  }                                                                                    \
  UNARY_LOOP(abs_##SUF, T, T, x < 0 ? WRAP(T, UT, 0 - (uint64_t)x) : x)               \
  UNARY_LOOP(sign_##SUF, T, T, (T)((x > 0) - (x < 0)))                                 \
  UNARY_LOOP(recip_##SUF, T, T, (T)(x == 1 ? 1 : x == -1 ? -1 : 0))                   \
  BINARY_LOOP(modx_##SUF, T, T, imod_##SUF(x, y))                                      \
  BINARY_LOOP(floordiv_##SUF, T, T, fdiv_##SUF(x, y))                                  \
  BINARY_LOOP(lshift_##SUF, T, T, (UT)y < BITS ? WRAP(T, UT, (uint64_t)x << y) : 0)   \
  BINARY_LOOP(rshift_##SUF, T, T, (UT)y < BITS ? (T)(x >> y) : x < 0 ? -1 : 0)

#define EXT_UNSIGNED(SUF, T, BITS)                                                     \
  EXT_ANY(SUF, T, T)                                                                   \
  UNARY_LOOP(abs_##SUF, T, T, x)                                                       \
  UNARY_LOOP(sign_##SUF, T, T, (T)(x > 0))                                             \
  UNARY_LOOP(recip_##SUF, T, T, (T)(x == 1))                                           \
  BINARY_LOOP(modx_##SUF, T, T, (T)(y ? x % y : 0))                                    \
  BINARY_LOOP(floordiv_##SUF, T, T, (T)(y ? x / y : 0))                                \
  BINARY_LOOP(lshift_##SUF, T, T, y < BITS ? (T)((uint64_t)x << y) : 0)                \
  BINARY_LOOP(rshift_##SUF, T, T, y < BITS ? (T)(x >> y) : 0)

EXT_SIGNED(i8, int8_t, uint8_t, 8, INT8_MIN)
EXT_SIGNED(i16, int16_t, uint16_t, 16, INT16_MIN)
EXT_UNSIGNED(u16, uint16_t, 16)
EXT_UNSIGNED(u32, uint32_t, 32)
EXT_UNSIGNED(u64, uint64_t, 64)

/* ---- tables ------------------------------------------------------------------------ */

/* the added integer dtypes' entries of a row */
#define EXT(NAME)                                                                      \
  [TY_I8] = NAME##_i8, [TY_I16] = NAME##_i16, [TY_U16] = NAME##_u16,                   \
  [TY_U32] = NAME##_u32, [TY_U64] = NAME##_u64
#define ALL5(NAME)                                                                     \
  { [TY_F64] = NAME##_f64, [TY_F32] = NAME##_f32, [TY_I64] = NAME##_i64,               \
    [TY_I32] = NAME##_i32, [TY_U8] = NAME##_u8, [TY_BOOL] = NAME##_u8, EXT(NAME) }
#define FLOATS(NAME) { [TY_F64] = NAME##_f64, [TY_F32] = NAME##_f32 }

#define UNARY_TABLE(EXP, LOG, SIN, COS, TANH)                                          \
  {                                                                                    \
    [TY_OP_NEG] = {[TY_F64] = neg_f64, [TY_F32] = neg_f32, [TY_I64] = neg_i64,         \
                   [TY_I32] = neg_i32, [TY_U8] = neg_u8, EXT(neg)},                    \
    [TY_OP_EXP] = EXP, [TY_OP_LOG] = LOG, [TY_OP_SQRT] = FLOATS(sqrt),                 \
    [TY_OP_ABS] = {[TY_F64] = abs_f64, [TY_F32] = abs_f32, [TY_I64] = abs_i64,         \
                   [TY_I32] = abs_i32, [TY_U8] = ident_u8, [TY_BOOL] = ident_u8,       \
                   EXT(abs)},                                                          \
    [TY_OP_SIN] = SIN, [TY_OP_COS] = COS, [TY_OP_TANH] = TANH,                         \
    [TY_OP_FLOOR] = {[TY_F64] = floor_f64, [TY_F32] = floor_f32, [TY_I64] = ident_i64, \
                     [TY_I32] = ident_i32, [TY_U8] = ident_u8, [TY_BOOL] = ident_u8,   \
                     EXT(ident)},                                                      \
    [TY_OP_CEIL] = {[TY_F64] = ceil_f64, [TY_F32] = ceil_f32, [TY_I64] = ident_i64,    \
                    [TY_I32] = ident_i32, [TY_U8] = ident_u8, [TY_BOOL] = ident_u8,    \
                    EXT(ident)},                                                       \
    [TY_OP_NOT] = ALL5(not),                                                           \
    [TY_OP_TAN] = FLOATS(tan), [TY_OP_ARCSIN] = FLOATS(asin),                          \
    [TY_OP_ARCCOS] = FLOATS(acos), [TY_OP_ARCTAN] = FLOATS(atan),                      \
    [TY_OP_SINH] = FLOATS(sinh), [TY_OP_COSH] = FLOATS(cosh),                          \
    [TY_OP_ARCSINH] = FLOATS(asinh), [TY_OP_ARCCOSH] = FLOATS(acosh),                  \
    [TY_OP_ARCTANH] = FLOATS(atanh), [TY_OP_EXPM1] = FLOATS(expm1),                    \
    [TY_OP_LOG1P] = FLOATS(log1p), [TY_OP_LOG2] = FLOATS(log2),                        \
    [TY_OP_LOG10] = FLOATS(log10), [TY_OP_EXP2] = FLOATS(exp2),                        \
    [TY_OP_CBRT] = FLOATS(cbrt),                                                       \
    [TY_OP_SIGN] = {[TY_F64] = sign_f64, [TY_F32] = sign_f32, [TY_I64] = sign_i64,     \
                    [TY_I32] = sign_i32, [TY_U8] = sign_u8, EXT(sign)},                \
    [TY_OP_RINT] = {[TY_F64] = rint_f64, [TY_F32] = rint_f32, [TY_I64] = ident_i64,    \
                    [TY_I32] = ident_i32, [TY_U8] = ident_u8, [TY_BOOL] = ident_u8,    \
                    EXT(ident)},                                                       \
    [TY_OP_TRUNC] = {[TY_F64] = trunc_f64, [TY_F32] = trunc_f32, [TY_I64] = ident_i64, \
                     [TY_I32] = ident_i32, [TY_U8] = ident_u8, [TY_BOOL] = ident_u8,   \
                     EXT(ident)},                                                      \
    [TY_OP_RECIPROCAL] = {[TY_F64] = recip_f64, [TY_F32] = recip_f32,                  \
                          [TY_I64] = recip_i64, [TY_I32] = recip_i32, [TY_U8] = recip_u8, \
                          EXT(recip)},                                                 \
    [TY_OP_INVERT] = {[TY_I64] = invert_i64, [TY_I32] = invert_i32,                    \
                      [TY_U8] = invert_u8, [TY_BOOL] = not_u8, EXT(invert)},           \
    [TY_OP_ISNAN] = ALL5(isnan), [TY_OP_ISINF] = ALL5(isinf),                          \
    [TY_OP_ISFINITE] = ALL5(isfinite),                                                 \
  }
#define FLOATS_FAST(NAME) { [TY_F64] = NAME##_f64_fast, [TY_F32] = NAME##_f32_fast }

const ty_loop1d ty__unary_loops[TY_NOPS][TY_NDTYPES] =
    UNARY_TABLE(FLOATS(exp), FLOATS(log), FLOATS(sin), FLOATS(cos), FLOATS(tanh));
const ty_loop1d ty__unary_loops_fast[TY_NOPS][TY_NDTYPES] =
    UNARY_TABLE(FLOATS_FAST(exp), FLOATS_FAST(log), FLOATS_FAST(sin), FLOATS_FAST(cos),
                FLOATS_FAST(tanh));

#define BINARY_TABLE(POW)                                                              \
  {                                                                                    \
    [TY_OP_ADD] = {[TY_F64] = add_f64, [TY_F32] = add_f32, [TY_I64] = add_i64,         \
                   [TY_I32] = add_i32, [TY_U8] = add_u8, EXT(add)},                    \
    [TY_OP_SUB] = {[TY_F64] = sub_f64, [TY_F32] = sub_f32, [TY_I64] = sub_i64,         \
                   [TY_I32] = sub_i32, [TY_U8] = sub_u8, EXT(sub)},                    \
    [TY_OP_MUL] = {[TY_F64] = mul_f64, [TY_F32] = mul_f32, [TY_I64] = mul_i64,         \
                   [TY_I32] = mul_i32, [TY_U8] = mul_u8, EXT(mul)},                    \
    [TY_OP_DIV] = FLOATS(div),                                                         \
    [TY_OP_MOD] = {[TY_F64] = mod_f64_loop, [TY_F32] = mod_f32_loop, [TY_I64] = mod_i64_loop, \
                   [TY_I32] = mod_i32_loop, [TY_U8] = mod_u8_loop, EXT(modx)},         \
    [TY_OP_POW] = POW,                                                                 \
    [TY_OP_MAXIMUM] = ALL5(maximum),                                                   \
    [TY_OP_MINIMUM] = ALL5(minimum),                                                   \
    [TY_OP_LT] = ALL5(lt),                                                             \
    [TY_OP_LE] = ALL5(le),                                                             \
    [TY_OP_GT] = ALL5(gt),                                                             \
    [TY_OP_GE] = ALL5(ge),                                                             \
    [TY_OP_EQ] = ALL5(eq),                                                             \
    [TY_OP_NE] = ALL5(ne),                                                             \
    [TY_OP_AND] = ALL5(and),                                                           \
    [TY_OP_OR] = ALL5(or),                                                             \
    [TY_OP_XOR] = ALL5(xor),                                                           \
    [TY_OP_ARCTAN2] = FLOATS(atan2),                                                   \
    [TY_OP_HYPOT] = FLOATS(hypot),                                                     \
    [TY_OP_FLOORDIV] = {[TY_F64] = floordiv_f64, [TY_F32] = floordiv_f32,              \
                        [TY_I64] = floordiv_i64, [TY_I32] = floordiv_i32,              \
                        [TY_U8] = floordiv_u8, EXT(floordiv)},                         \
    [TY_OP_BITAND] = {[TY_I64] = bitand_i64, [TY_I32] = bitand_i32,                    \
                      [TY_U8] = bitand_u8, [TY_BOOL] = and_u8, EXT(bitand)},           \
    [TY_OP_BITOR] = {[TY_I64] = bitor_i64, [TY_I32] = bitor_i32, [TY_U8] = bitor_u8,   \
                     [TY_BOOL] = or_u8, EXT(bitor)},                                   \
    [TY_OP_BITXOR] = {[TY_I64] = bitxor_i64, [TY_I32] = bitxor_i32,                    \
                      [TY_U8] = bitxor_u8, [TY_BOOL] = xor_u8, EXT(bitxor)},           \
    [TY_OP_LSHIFT] = {[TY_I64] = lshift_i64, [TY_I32] = lshift_i32, [TY_U8] = lshift_u8, \
    EXT(lshift)},                                                                      \
    [TY_OP_RSHIFT] = {[TY_I64] = rshift_i64, [TY_I32] = rshift_i32, [TY_U8] = rshift_u8, \
    EXT(rshift)},                                                                      \
  }

const ty_loop1d ty__binary_loops[TY_NOPS][TY_NDTYPES] = BINARY_TABLE(FLOATS(pow));
const ty_loop1d ty__binary_loops_fast[TY_NOPS][TY_NDTYPES] = BINARY_TABLE(FLOATS_FAST(pow));

const ty_loop1d ty__where_loops[TY_NDTYPES] = ALL5(where);
