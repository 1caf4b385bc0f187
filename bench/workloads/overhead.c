/* overhead.c — the C peers of overhead.lua.
 *  mode=ops: the 10 element-wise ops as 10 loops over n elements (no threads:
 *    nobody splits 1,000 elements across cores by hand), a fresh output each.
 *  mode=curve: `#pragma omp parallel for` of y = exp(x) over S elements,
 *    "curve: <S> <seconds per loop> <threads>", the same curve as tycho's. */
#include "common.h"

static void ops(int64_t n, int loops, const double *x0, double *bufs[2], double **res) {
  const double *x = x0;
  int k = 0;
  for (int l = 0; l < loops * 5; l++) {
    double *t = bufs[k];
    for (int64_t i = 0; i < n; i++) t[i] = x[i] * 0.999;
    double *u = bufs[k ^ 1];
    for (int64_t i = 0; i < n; i++) u[i] = t[i] + 0.001;
    x = u;
    k ^= 1;
    __asm__ volatile("" ::: "memory"); /* keep the ops separate passes */
  }
  *res = (double *)x;
}

int main(int argc, char **argv) {
  const char *mode = arg_str(argc, argv, "mode", "ops");
  int reps = (int)arg_num(argc, argv, "reps", 5);
  if (!strcmp(mode, "curve")) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", arg_str(argc, argv, "sizes", "1000"));
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
      int64_t s = (int64_t)atof(t);
      double *x = xmalloc(s * 8), *y = xmalloc(s * 8);
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < s; i++) x[i] = seq_at(i, ALPHA[0]), y[i] = 0;
      int64_t k = 20000000 / s;
      if (k < 64) k = 64;
      if (k > 20000) k = 20000;
      double best = 1e300;
      for (int r = 0; r <= 3; r++) {
        double t0 = omp_get_wtime();
        for (int64_t j = 0; j < k; j++) {
#pragma omp parallel for schedule(static)
          for (int64_t i = 0; i < s; i++) y[i] = exp(x[i]);
        }
        double dt = (omp_get_wtime() - t0) / (double)k;
        if (r > 0 && dt < best) best = dt;
      }
      printf("curve: %lld %.9f %d\n", (long long)s, best, omp_get_max_threads());
      free(x), free(y);
    }
    checksum(0);
    return 0;
  }
  int64_t n = (int64_t)arg_num(argc, argv, "n", 1000);
  int loops = (int)arg_num(argc, argv, "loops", 2000);
  double *x0 = xmalloc(n * 8), *bufs[2] = {xmalloc(n * 8), xmalloc(n * 8)}, *res = x0;
  for (int64_t i = 0; i < n; i++) x0[i] = seq_at(i, ALPHA[0]);
  TIMED(reps, ops(n, loops, x0, bufs, &res));
  double sum = 0;
  for (int64_t i = 0; i < n; i++) sum += res[i];
  printf("info: ops=%d\n", 10 * loops);
  checksum(sum);
  return 0;
}
