/* jacobi.c — the C+OpenMP peer of jacobi.lua: a row-parallel matrix-vector
 * product fused with the update, two vectors swapped each iteration. */
#include "common.h"

static void iterate(int64_t n, int iters, const double *r, const double *b, const double *d,
                    double **x_, double **y_) {
  double *x = *x_, *y = *y_;
  for (int64_t i = 0; i < n; i++) x[i] = 0;
  for (int it = 0; it < iters; it++) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
      const double *row = r + i * n;
      double s = 0;
#pragma omp simd reduction(+ : s)
      for (int64_t j = 0; j < n; j++) s += row[j] * x[j];
      y[i] = (b[i] - s) / d[i];
    }
    double *t = x;
    x = y;
    y = t;
  }
  *x_ = x, *y_ = y;
}

int main(int argc, char **argv) {
  int64_t n = (int64_t)arg_num(argc, argv, "n", 8192);
  int iters = (int)arg_num(argc, argv, "iters", 50);
  int reps = (int)arg_num(argc, argv, "reps", 5);
  double *r = xmalloc(n * n * sizeof *r), *b = xmalloc(n * sizeof *b), *d = xmalloc(n * sizeof *d);
  double *x = xmalloc(n * sizeof *x), *y = xmalloc(n * sizeof *y);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    for (int64_t j = 0; j < n; j++) r[i * n + j] = seq_at(i * n + j, ALPHA[0]);
    d[i] = r[i * n + i] + (double)n;
    r[i * n + i] = 0;
    b[i] = seq_at(i, ALPHA[1]);
  }
  TIMED(reps, iterate(n, iters, r, b, d, &x, &y));
  double sum = 0;
  for (int64_t i = 0; i < n; i++) sum += x[i];
  checksum(sum);
  return 0;
}
