/* logreg.c — the C+OpenMP peer of logreg.lua: one pass over X per iteration
 * (the score, the sigmoid and the gradient row by row), per-thread gradients
 * summed after. */
#include "common.h"

#define LOGREG(T, EXP)                                                                     \
  static void run_##T(int64_t n, int f, int iters, const T *X, const T *y, T *w) {         \
    for (int k = 0; k < f; k++) w[k] = 0;                                                  \
    for (int it = 0; it < iters; it++) {                                                   \
      T grad[256] = {0};                                                                   \
      _Pragma("omp parallel")                                                             \
      {                                                                                    \
        T g[256] = {0};                                                                    \
        _Pragma("omp for schedule(static)")                                               \
        for (int64_t i = 0; i < n; i++) {                                                  \
          const T *row = X + i * f;                                                        \
          T s = 0;                                                                         \
          _Pragma("omp simd reduction(+ : s)")                                            \
          for (int k = 0; k < f; k++) s += row[k] * w[k];                                  \
          T e = y[i] - (T)1 / ((T)1 + EXP(-s));                                            \
          _Pragma("omp simd")                                                             \
          for (int k = 0; k < f; k++) g[k] += e * row[k];                                  \
        }                                                                                  \
        _Pragma("omp critical")                                                           \
        for (int k = 0; k < f; k++) grad[k] += g[k];                                       \
      }                                                                                    \
      for (int k = 0; k < f; k++) w[k] += (T)1e-5 * grad[k];                               \
    }                                                                                      \
  }
LOGREG(float, expf)
LOGREG(double, exp)

#define MAIN(T)                                                                 \
  do {                                                                          \
    T *X = xmalloc(n * f * sizeof(T)), *y = xmalloc(n * sizeof(T)), w[256];     \
    _Pragma("omp parallel for schedule(static)")                               \
    for (int64_t i = 0; i < n; i++) {                                           \
      for (int k = 0; k < f; k++) X[i * f + k] = (T)(seq_at(i * f + k, ALPHA[0]) - 0.5); \
      y[i] = (T)floor(seq_at(i, ALPHA[1]) * 2.0);                               \
    }                                                                           \
    TIMED(reps, run_##T(n, f, iters, X, y, w));                                 \
    double sum = 0;                                                             \
    for (int k = 0; k < f; k++) sum += (double)w[k];                            \
    checksum(sum);                                                              \
  } while (0)

int main(int argc, char **argv) {
  int64_t n = (int64_t)arg_num(argc, argv, "n", 10e6);
  int f = (int)arg_num(argc, argv, "f", 32);
  int iters = (int)arg_num(argc, argv, "iters", 10);
  int reps = (int)arg_num(argc, argv, "reps", 5);
  if (f < 1 || f > 256) {
    fprintf(stderr, "logreg: f must be in 1..256\n");
    return 2;
  }
  if (!strcmp(arg_str(argc, argv, "dtype", "f32"), "f64"))
    MAIN(double);
  else
    MAIN(float);
  return 0;
}
