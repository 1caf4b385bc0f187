/*
 * fusion_peers.c — the hand-written C + OpenMP peers of bench/fusion that are
 * not Black-Scholes (that one is bench/peers/black_scholes_omp.c):
 *
 *   fusion_peers triad N ITERS    STREAM triad a[i] = b[i] + 3*c[i] (also `a = b + 3*c`)
 *   fusion_peers chain6 N ITERS   a[i] = ((((b*1.5 + c)*0.5 - b)*c) + 2)*0.25, one loop
 *
 * Arrays are first-touched by the threads that use them (static schedule),
 * the output is written in place (STREAM's rules). Compiled -O3 -march=native
 * -fopenmp by bench/fusion. Prints "time: <best> s", "checksum: <sum of a>"
 * and "bandwidth: <GB/s of compulsory bytes>" (24 bytes per element: two
 * reads and one write; write-allocate traffic is not counted, as in STREAM).
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "triad";
  int64_t n = argc > 2 ? (int64_t)atof(argv[2]) : 160000000;
  int iters = argc > 3 ? atoi(argv[3]) : 3;
  if (n < 1 || iters < 1 || (strcmp(what, "triad") && strcmp(what, "chain6"))) {
    fprintf(stderr, "usage: %s triad|chain6 [N] [iterations]\n", argv[0]);
    return 2;
  }
  double *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b),
         *c = malloc((size_t)n * sizeof *c);
  if (!a || !b || !c) {
    fprintf(stderr, "fusion_peers: out of memory for %lld elements\n", (long long)n);
    return 1;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    a[i] = 0;
    b[i] = (double)(i % 1000) * 0.001;
    c[i] = (double)(i % 777) * 0.002;
  }
  const int chain = strcmp(what, "chain6") == 0;
  double best = 1e300;
  for (int it = 0; it < iters; it++) {
    double t0 = omp_get_wtime();
    if (chain) {
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n; i++) a[i] = ((((b[i] * 1.5 + c[i]) * 0.5 - b[i]) * c[i]) + 2) * 0.25;
    } else {
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n; i++) a[i] = b[i] + 3.0 * c[i];
    }
    double dt = omp_get_wtime() - t0;
    if (dt < best) best = dt;
  }
  double sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
  for (int64_t i = 0; i < n; i++) sum += a[i];
  printf("fusion_peers %s: %lld f64, %d threads\n", what, (long long)n, omp_get_max_threads());
  printf("time: %.6f s (best of %d)\n", best, iters);
  printf("bandwidth: %.2f GB/s\n", 24.0 * (double)n / best / 1e9);
  printf("checksum: %.17g\n", sum);
  free(a);
  free(b);
  free(c);
  return 0;
}
