/* stream.c — STREAM triad, the C+OpenMP peer of stream.lua: one loop, the
 * arrays first-touched by the threads that use them (static schedule). */
#include "common.h"

static double best_triad(int64_t n, int reps, double **out) {
  double *a = xmalloc(n * sizeof *a), *b = xmalloc(n * sizeof *b), *c = xmalloc(n * sizeof *c);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    b[i] = 2.0; /* STREAM's constants: a = 5 */
    c[i] = 1.0;
    a[i] = 0;
  }
  double best = 1e300;
  for (int r = 0; r <= reps; r++) {
    double t0 = omp_get_wtime();
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) a[i] = b[i] + 3.0 * c[i];
    double t = omp_get_wtime() - t0;
    if (r > 0) {
      if (t < best) best = t;
      if (!out) continue;
      printf("time: %.9f\n", t);
    }
  }
  free(b), free(c);
  if (out) *out = a; else free(a);
  return best;
}

int main(int argc, char **argv) {
  int64_t n = (int64_t)arg_num(argc, argv, "n", 160e6);
  int reps = (int)arg_num(argc, argv, "reps", 5);
  const char *sweep = arg_str(argc, argv, "sweep", "");
  if (*sweep) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", sweep);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ","))
    {
      int64_t n1 = (int64_t)atof(t);
      int r = (int)(10000000 / (n1 > 0 ? n1 : 1));
      r = r > 1000 ? 1000 : r; /* small sizes: best of more triads, as stream.lua */
      printf("sweep: %s %.9f\n", t, best_triad(n1, r > reps ? r : reps, NULL));
    }
    checksum(0);
    return 0;
  }
  double *a;
  best_triad(n, reps, &a);
  double sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
  for (int64_t i = 0; i < n; i++) sum += a[i];
  checksum(sum);
  free(a);
  return 0;
}
