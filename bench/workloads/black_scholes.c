/* black_scholes.c — the C+OpenMP peer of black_scholes.lua: one fused loop
 * over the options (glibc libm), in f64 or f32 (dtype=f32: float math). */
#include "common.h"

#define R 0.02
#define V 0.3
#define BS(T, EXP, LOG, SQRT, FABS)                                                              \
  static void bs_##T(int64_t n, const T *s, const T *x, const T *t, T *call, T *put) {           \
    const T A1 = (T)0.31938153, A2 = (T)-0.356563782, A3 = (T)1.781477937, A4 = (T)-1.821255978, \
            A5 = (T)1.330274429, RS = (T)0.39894228040143267793994605993438;                     \
    _Pragma("omp parallel for simd schedule(static)")                                           \
    for (int64_t i = 0; i < n; i++) {                                                            \
      T sqrt_t = SQRT(t[i]);                                                                     \
      T d1 = (LOG(s[i] / x[i]) + t[i] * (T)(R + 0.5 * V * V)) / (sqrt_t * (T)V);                  \
      T d2 = d1 - sqrt_t * (T)V;                                                                 \
      T k1 = (T)1 / (FABS(d1) * (T)0.2316419 + (T)1), k2 = (T)1 / (FABS(d2) * (T)0.2316419 + (T)1); \
      T c1 = EXP(d1 * (T)-0.5 * d1) * RS * (k1 * (k1 * (k1 * (k1 * (k1 * A5 + A4) + A3) + A2) + A1)); \
      T c2 = EXP(d2 * (T)-0.5 * d2) * RS * (k2 * (k2 * (k2 * (k2 * (k2 * A5 + A4) + A3) + A2) + A1)); \
      c1 = d1 > 0 ? (T)1 - c1 : c1;                                                              \
      c2 = d2 > 0 ? (T)1 - c2 : c2;                                                              \
      T ke = x[i] * EXP(t[i] * (T)-R);                                                           \
      call[i] = s[i] * c1 - ke * c2;                                                             \
      put[i] = ke * ((T)1 - c2) - s[i] * ((T)1 - c1);                                            \
    }                                                                                            \
  }
BS(double, exp, log, sqrt, fabs)
BS(float, expf, logf, sqrtf, fabsf)

#define RUN(T)                                                                        \
  do {                                                                                \
    T *s = xmalloc(n * sizeof(T)), *x = xmalloc(n * sizeof(T)), *t = xmalloc(n * sizeof(T)); \
    T *call = xmalloc(n * sizeof(T)), *put = xmalloc(n * sizeof(T));                  \
    _Pragma("omp parallel for schedule(static)")                                     \
    for (int64_t i = 0; i < n; i++) {                                                 \
      s[i] = (T)(seq_at(i, ALPHA[0]) * 25.0 + 5.0);                                   \
      x[i] = (T)(seq_at(i, ALPHA[1]) * 99.0 + 1.0);                                   \
      t[i] = (T)(seq_at(i, ALPHA[2]) * 9.75 + 0.25);                                  \
      call[i] = put[i] = 0;                                                           \
    }                                                                                 \
    TIMED(reps, bs_##T(n, s, x, t, call, put));                                       \
    double sum = 0;                                                                   \
    _Pragma("omp parallel for reduction(+ : sum) schedule(static)")                  \
    for (int64_t i = 0; i < n; i++) sum += (double)call[i] + (double)put[i];          \
    checksum(sum);                                                                    \
  } while (0)

int main(int argc, char **argv) {
  int64_t n = (int64_t)arg_num(argc, argv, "n", 10e6);
  int reps = (int)arg_num(argc, argv, "reps", 5);
  if (!strcmp(arg_str(argc, argv, "dtype", "f64"), "f32"))
    RUN(float);
  else
    RUN(double);
  return 0;
}
