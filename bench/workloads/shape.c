/* shape.c — cumsum over rows and flat, then concatenate: the C+OpenMP peer
 * of shape.lua. Rows scan in parallel (one thread per row, in order within
 * it); the flat scan is two passes over per-thread chunks (totals, then
 * scans from the carries); the join is two parallel copies. */
#include "common.h"

static void step(const double *x, double *c, double *j, double *f, double *tot, int64_t n,
                 int64_t rows, int64_t cols) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    double acc = 0;
    for (int64_t k = 0; k < cols; k++) c[r * cols + k] = acc += x[r * cols + k];
  }
#pragma omp parallel
  {
    int t = omp_get_thread_num(), T = omp_get_num_threads();
    int64_t lo = n * t / T, hi = n * (t + 1) / T;
    double s = 0;
    for (int64_t i = lo; i < hi; i++) s += x[i];
    tot[t + 1] = s;
#pragma omp barrier
#pragma omp single
    {
      tot[0] = 0;
      for (int k = 1; k <= T; k++) tot[k] += tot[k - 1];
    }
    double acc = tot[t];
    for (int64_t i = lo; i < hi; i++) f[i] = acc += x[i];
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) j[i] = x[i], j[n + i] = c[i];
}

int main(int argc, char **argv) {
  int64_t n = (int64_t)arg_num(argc, argv, "n", 10e6);
  int reps = (int)arg_num(argc, argv, "reps", 5);
  int64_t rows = (int64_t)arg_num(argc, argv, "rows", 4), cols = n / rows;
  n = rows * cols;
  double *x = xmalloc(n * sizeof *x), *c = xmalloc(n * sizeof *c);
  double *j = xmalloc(2 * n * sizeof *j), *f = xmalloc(n * sizeof *f);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) x[i] = seq_at(i, ALPHA[0]), c[i] = j[i] = j[n + i] = f[i] = 0;
  int nt = omp_get_max_threads();
  double *tot = xmalloc((nt + 1) * sizeof *tot);
  TIMED(reps, step(x, c, j, f, tot, n, rows, cols));
  double s = 0;
  for (int64_t k = 0; k < cols; k++) s += j[2 * n - cols + k];
  checksum(s + f[n - 1]);
  free(x), free(c), free(j), free(f), free(tot);
  return 0;
}
