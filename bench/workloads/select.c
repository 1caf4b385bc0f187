/* select.c — the C+OpenMP peer of select.lua: mask compaction (per-thread
 * counts, a prefix, a parallel scatter), a parallel gather, a scatter
 * y[idx] = v (a serial loop: of repeated positions the last write wins, as
 * numpy's and tycho's, which a parallel loop would leave to a race) and a
 * sort and an argsort (qsort: serial, as a plain C program would write
 * them); a mask assignment y[x < 0.5] = 0 is a parallel loop.
 *   select op=mask|maskassign|gather|scatter|sort|argsort n=10000000 reps=5 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int64_t compress(const double *x, double *out, int64_t n, int64_t *cnt) {
  int64_t count = 0;
#pragma omp parallel
  {
    int t = omp_get_thread_num(), T = omp_get_num_threads();
    int64_t lo = n * t / T, hi = n * (t + 1) / T, c = 0;
    for (int64_t i = lo; i < hi; i++) c += x[i] < 0.5;
    cnt[t + 1] = c;
#pragma omp barrier
#pragma omp single
    {
      cnt[0] = 0;
      for (int k = 1; k <= T; k++) cnt[k] += cnt[k - 1];
    }
    int64_t o = cnt[t];
    for (int64_t i = lo; i < hi; i++)
      if (x[i] < 0.5) out[o++] = x[i];
    if (t == T - 1) count = o;
  }
  return count;
}

static void gather(const double *x, const int64_t *idx, double *out, int64_t n) {
#pragma omp parallel for
  for (int64_t i = 0; i < n; i++) out[i] = x[idx[i]];
}

static void scatter(double *y, const int64_t *idx, const double *v, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[idx[i]] = v[i];
}

typedef struct keyed {
  double key;
  int64_t at;
} keyed;

static int cmp_keyed(const void *a, const void *b) {
  const keyed *p = a, *q = b;
  return p->key < q->key ? -1 : p->key > q->key ? 1 : (p->at > q->at) - (p->at < q->at);
}

/* (key, position) pairs sorted by qsort: no indirection in the comparisons */
static void argsort(const double *x, keyed *tmp, int64_t *out, int64_t n) {
  for (int64_t i = 0; i < n; i++) tmp[i] = (keyed){x[i], i};
  qsort(tmp, (size_t)n, sizeof(keyed), cmp_keyed);
  for (int64_t i = 0; i < n; i++) out[i] = tmp[i].at;
}

static void mask_assign(const double *x, double *y, int64_t n) {
#pragma omp parallel for
  for (int64_t i = 0; i < n; i++)
    if (x[i] < 0.5) y[i] = 0;
}

static void sort(const double *x, double *out, int64_t n) {
  memcpy(out, x, sizeof(double) * (size_t)n);
  qsort(out, (size_t)n, sizeof(double), cmp);
}

int main(int argc, char **argv) {
  const char *op = arg_str(argc, argv, "op", "mask");
  const int64_t n = (int64_t)arg_num(argc, argv, "n", 10000000);
  const int reps = (int)arg_num(argc, argv, "reps", 5);
  double *x = xmalloc(sizeof(double) * (size_t)n), *out = xmalloc(sizeof(double) * (size_t)n);
  int64_t *idx = xmalloc(sizeof(int64_t) * (size_t)n);
#pragma omp parallel for
  for (int64_t i = 0; i < n; i++) {
    x[i] = seq_at(i, ALPHA[0]);
    idx[i] = (int64_t)floor(seq_at(i, ALPHA[1]) * (double)n);
  }
  int64_t count = 0;
  double sum = 0;
  if (!strcmp(op, "mask")) {
    int64_t *cnt = xmalloc(sizeof(int64_t) * (size_t)(omp_get_max_threads() + 1));
    TIMED(reps, count = compress(x, out, n, cnt));
    for (int64_t i = 0; i < count; i++) sum += out[i];
  } else if (!strcmp(op, "maskassign")) {
    memcpy(out, x, sizeof(double) * (size_t)n);
    TIMED(reps, mask_assign(x, out, n));
    for (int64_t i = 0; i < n; i++) sum += out[i];
  } else if (!strcmp(op, "argsort")) {
    keyed *tmp = xmalloc(sizeof(keyed) * (size_t)n);
    TIMED(reps, argsort(x, tmp, idx, n));
    for (int64_t i = 0; i < n; i += 1000) sum += x[idx[i]];
  } else if (!strcmp(op, "gather")) {
    TIMED(reps, gather(x, idx, out, n));
    for (int64_t i = 0; i < n; i++) sum += out[i];
  } else if (!strcmp(op, "scatter")) {
    double *v = xmalloc(sizeof(double) * (size_t)n);
#pragma omp parallel for
    for (int64_t i = 0; i < n; i++) {
      v[i] = seq_at(i, ALPHA[3]);
      out[i] = x[i];
    }
    TIMED(reps, scatter(out, idx, v, n));
    for (int64_t i = 0; i < n; i++) sum += out[i];
  } else {
    TIMED(reps, sort(x, out, n));
    for (int64_t i = 0; i < n; i += 1000) sum += out[i];
  }
  checksum(sum);
  return 0;
}
