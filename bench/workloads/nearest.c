/* nearest.c — the C+OpenMP peer of nearest.lua: the minimum is taken as the
 * distances are computed, so no n x m matrix is ever stored. */
#include "common.h"

static void nearest(int64_t n, int64_t m, const double *a, const double *b, double *d) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    double best = INFINITY;
#pragma omp simd reduction(min : best)
    for (int64_t j = 0; j < m; j++) {
      double v = fabs(a[i] - b[j]);
      best = v < best ? v : best;
    }
    d[i] = best;
  }
}

int main(int argc, char **argv) {
  int64_t n = (int64_t)arg_num(argc, argv, "n", 16384), m = (int64_t)arg_num(argc, argv, "m", 16384);
  int reps = (int)arg_num(argc, argv, "reps", 5);
  double *a = xmalloc(n * 8), *b = xmalloc(m * 8), *d = xmalloc(n * 8);
  for (int64_t i = 0; i < n; i++) a[i] = seq_at(i, ALPHA[0]);
  for (int64_t j = 0; j < m; j++) b[j] = seq_at(j, ALPHA[1]);
  TIMED(reps, nearest(n, m, a, b, d));
  double sum = 0;
  for (int64_t i = 0; i < n; i++) sum += d[i];
  checksum(sum);
  return 0;
}
