/*
 * bench/workloads/common.h — what every C+OpenMP peer of a workload shares:
 * key=value arguments, the deterministic input sequence, the timing
 * protocol of common.lua (a warm-up step, then `reps` timed steps, each
 * printing `time: <s>`, then `checksum: <x>`).
 *
 * These programs are the machine's practical limit: one fused loop per
 * step, first-touch by the threads that use the data, -O3 -march=native.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double ALPHA[6] = {0.6180339887498949, 0.7548776662466927, 0.5698402909980532,
                                0.4142135623730950, 0.7320508075688772, 0.2360679774997897};

/* frac((i + 0.5) * alpha), exactly as the Lua and Python peers compute it */
static inline double seq_at(int64_t i, double alpha) {
  double u = ((double)i + 0.5) * alpha;
  return u - floor(u);
}

/* The value of key=value in argv, or def. */
static inline double arg_num(int argc, char **argv, const char *key, double def) {
  size_t k = strlen(key);
  for (int i = 1; i < argc; i++)
    if (!strncmp(argv[i], key, k) && argv[i][k] == '=') return atof(argv[i] + k + 1);
  return def;
}
static inline const char *arg_str(int argc, char **argv, const char *key, const char *def) {
  size_t k = strlen(key);
  for (int i = 1; i < argc; i++)
    if (!strncmp(argv[i], key, k) && argv[i][k] == '=') return argv[i] + k + 1;
  return def;
}

static inline void *xmalloc(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 64)) {
    fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
    exit(1);
  }
  return p;
}

/* A warm-up step unless BENCH_WARMUP=0 (bench/run sets it where one step
 * is minutes long: CG to 1e-8 at 4M unknowns). */
static inline int bench_warmup(void) {
  const char *w = getenv("BENCH_WARMUP");
  return !(w && !strcmp(w, "0"));
}

/* TIMED(reps, statements...): variadic so that a block with commas fits */
#define TIMED(reps, ...)                                                 \
  do {                                                                   \
    if (bench_warmup()) { __VA_ARGS__; }                                 \
    for (int rep_ = 0; rep_ < (reps); rep_++) {                          \
      double t0_ = omp_get_wtime();                                      \
      __VA_ARGS__;                                                       \
      printf("time: %.9f\n", omp_get_wtime() - t0_);                     \
      fflush(stdout);                                                    \
    }                                                                    \
  } while (0)

static inline void checksum(double v) { printf("checksum: %.17g\n", v); }

#endif
