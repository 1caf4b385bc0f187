/* kmeans.c — the C+OpenMP peer of kmeans.lua: one pass over the points per
 * iteration (distances by the same formula, argmin, per-thread sums and
 * counts), centroids updated after. */
#include "common.h"

#define KMAX 64

static double iterate(int64_t n, int k, int iters, const double *x, const double *dots,
                      double *c) {
  double dsum = 0;
  for (int j = 0; j < k; j++) {
    c[2 * j] = seq_at(j, ALPHA[3]);
    c[2 * j + 1] = seq_at(j, ALPHA[4]);
  }
  for (int it = 0; it < iters; it++) {
    double cd[KMAX], sx[KMAX] = {0}, sy[KMAX] = {0}, cnt[KMAX] = {0};
    for (int j = 0; j < k; j++) cd[j] = c[2 * j] * c[2 * j] + c[2 * j + 1] * c[2 * j + 1];
    dsum = 0;
#pragma omp parallel reduction(+ : dsum)
    {
      double lx[KMAX] = {0}, ly[KMAX] = {0}, lc[KMAX] = {0};
#pragma omp for schedule(static)
      for (int64_t i = 0; i < n; i++) {
        const double px = x[2 * i], py = x[2 * i + 1];
        double best = dots[i] + cd[0] - (px * c[0] + py * c[1]) * 2.0;
        int lab = 0;
        for (int j = 1; j < k; j++) {
          double dj = dots[i] + cd[j] - (px * c[2 * j] + py * c[2 * j + 1]) * 2.0;
          if (dj < best) best = dj, lab = j;
        }
        lx[lab] += px;
        ly[lab] += py;
        lc[lab] += 1;
        dsum += best;
      }
#pragma omp critical
      for (int j = 0; j < k; j++) sx[j] += lx[j], sy[j] += ly[j], cnt[j] += lc[j];
    }
    for (int j = 0; j < k; j++) {
      double m = cnt[j] > 1 ? cnt[j] : 1;
      c[2 * j] = sx[j] / m;
      c[2 * j + 1] = sy[j] / m;
    }
  }
  return dsum;
}

int main(int argc, char **argv) {
  int64_t n = (int64_t)arg_num(argc, argv, "n", 10e6);
  int k = (int)arg_num(argc, argv, "k", 10);
  int iters = (int)arg_num(argc, argv, "iters", 10);
  int reps = (int)arg_num(argc, argv, "reps", 5);
  if (k < 1 || k > KMAX) return fprintf(stderr, "kmeans: k must be in 1..%d\n", KMAX), 2;
  double *x = xmalloc(n * 2 * sizeof *x), *dots = xmalloc(n * sizeof *dots), c[2 * KMAX];
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    x[2 * i] = seq_at(i, ALPHA[0]);
    x[2 * i + 1] = seq_at(i, ALPHA[1]);
    dots[i] = x[2 * i] * x[2 * i] + x[2 * i + 1] * x[2 * i + 1];
  }
  double dsum = 0;
  TIMED(reps, dsum = iterate(n, k, iters, x, dots, c));
  double sum = 0;
  for (int j = 0; j < 2 * k; j++) sum += c[j];
  checksum(sum + dsum / (double)n);
  return 0;
}
