/*
 * fusion_analysis.c — what the fusion pass costs per flush (bench/fusion):
 * a window of 64 small launches (a chain of element-wise ops over 1,000 f64
 * elements, every intermediate dropped), timed in ty__fuse alone (the
 * analysis and building the fused launch) and as a whole flush with fusion on
 * and off. Built by bench/fusion against the build's libtycho.a.
 *
 *   fusion_analysis [REPS]
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* 64 launches: x = x op scalar, alternating add/mul/sub/div */
static ty_store *window64(ty_runtime *rt, ty_store *a) {
  ty_store *x = a;
  ty_store_retain(x);
  for (int k = 0; k < 64; k++) {
    ty_store *s = NULL, *y = NULL;
    ty_scalar_f64(rt, TY_F64, 1.0 + 0.001 * k, &s);
    static const ty_op ops[4] = {TY_OP_ADD, TY_OP_MUL, TY_OP_SUB, TY_OP_DIV};
    if (ty_binary(rt, ops[k % 4], x, s, &y) != TY_OK) exit(1);
    ty_store_release(s);
    ty_store_release(x);
    x = y;
  }
  return x;
}

static double median_us(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp);
  return t[n / 2] * 1e6;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 2000;
  if (reps < 3) reps = 3;
  double *t_fuse = malloc(sizeof(double) * (size_t)reps), *t_on = malloc(sizeof(double) * (size_t)reps),
         *t_off = malloc(sizeof(double) * (size_t)reps);
  for (int fuse = 0; fuse < 2; fuse++) {
    ty_config cfg = {.cpus = 1, .window = 64};
    cfg.policy.set = TY_POL_FUSE;
    cfg.policy.fuse = fuse;
    ty_runtime *rt = NULL;
    if (ty_runtime_create(&cfg, &rt) != TY_OK) return 1;
    const int64_t n = 1000;
    ty_store *a = NULL;
    ty_random(rt, TY_F64, 1, &n, &a);
    ty_flush(rt);
    for (int r = 0; r < reps; r++) {
      ty_store *x = window64(rt, a); /* 64 launches: exactly one window */
      double t0 = now();
      if (fuse) {
        ty__fuse(rt); /* the pass alone */
        t_fuse[r] = now() - t0;
      }
      ty_flush(rt);
      (fuse ? t_on : t_off)[r] = now() - t0;
      ty_store_release(x);
    }
    ty_store_release(a);
    ty_runtime_destroy(rt);
  }
  printf("fusion_analysis: window of 64 launches over 1000 f64, median of %d\n", reps);
  printf("analysis: %.2f us per flush (ty__fuse: dependence checks, dedup, description)\n",
         median_us(t_fuse, reps));
  printf("flush fused: %.2f us\n", median_us(t_on, reps));
  printf("flush unfused: %.2f us\n", median_us(t_off, reps));
  free(t_fuse);
  free(t_on);
  free(t_off);
  return 0;
}
