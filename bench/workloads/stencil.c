/* stencil.c — the C+OpenMP peer of stencil.lua: two grids (the Jacobi
 * update reads the old values), one fused loop per iteration, swap. */
#include "common.h"

/* `iters` Jacobi iterations from *g into *h and back (swapping). */
static void iterate(int64_t n, int iters, double **g_, double **h_) {
  const int64_t w = n + 2;
  double *g = *g_, *h = *h_;
  for (int it = 0; it < iters; it++) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 1; i <= n; i++) {
      const double *c = g + i * w, *up = c - w, *dn = c + w;
      double *o = h + i * w;
#pragma omp simd
      for (int64_t j = 1; j <= n; j++) o[j] = (c[j] + up[j] + c[j + 1] + c[j - 1] + dn[j]) * 0.2;
    }
    double *t = g;
    g = h;
    h = t;
  }
  *g_ = g, *h_ = h;
}

int main(int argc, char **argv) {
  int64_t n = (int64_t)arg_num(argc, argv, "n", 8192);
  int iters = (int)arg_num(argc, argv, "iters", 50);
  int reps = (int)arg_num(argc, argv, "reps", 5);
  int64_t w = n + 2;
  double *g = xmalloc(w * w * sizeof *g), *h = xmalloc(w * w * sizeof *h);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < w; i++)
    for (int64_t j = 0; j < w; j++) {
      double v = 0;
      if (j == 0 || j == w - 1 || i == w - 1) v = -273.15;
      if (i == 0) v = 40.0;
      g[i * w + j] = h[i * w + j] = v;
    }
  TIMED(reps, iterate(n, iters, &g, &h));
  double sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
  for (int64_t i = 1; i <= n; i++)
    for (int64_t j = 1; j <= n; j++) sum += g[i * w + j];
  checksum(sum / ((double)n * n));
  free(g), free(h);
  return 0;
}
