/* linalg.c — the C peer of linalg.lua: LAPACKE_dgesv / dpotrf on OpenBLAS
 * (its threads: OMP_NUM_THREADS), the same matrix (S + S^T) / 2 + n I. Each
 * step copies a first (LAPACK factors in place), as tycho and numpy do. */
#include "common.h"

#include <lapacke.h>
#include <string.h>

static void step(int64_t n, int chol, const double *a, const double *b, double *w, double *x,
                 lapack_int *piv) {
  memcpy(w, a, (size_t)(n * n) * sizeof *w);
  if (chol) {
    if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', (lapack_int)n, w, (lapack_int)n) != 0) exit(1);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = i + 1; j < n; j++) w[i * n + j] = 0;
  } else {
    memcpy(x, b, (size_t)n * sizeof *x);
    if (LAPACKE_dgesv(LAPACK_ROW_MAJOR, (lapack_int)n, 1, w, (lapack_int)n, piv, x, 1) != 0) exit(1);
  }
}

int main(int argc, char **argv) {
  int64_t n = (int64_t)arg_num(argc, argv, "n", 4096);
  int reps = (int)arg_num(argc, argv, "reps", 5);
  const char *op = arg_str(argc, argv, "op", "solve");
  int chol = strcmp(op, "cholesky") == 0;
  double *a = xmalloc((size_t)(n * n) * sizeof *a), *w = xmalloc((size_t)(n * n) * sizeof *w);
  double *b = xmalloc((size_t)n * sizeof *b), *x = xmalloc((size_t)n * sizeof *x);
  lapack_int *piv = xmalloc((size_t)n * sizeof *piv);
  for (int64_t i = 0; i < n; i++) {
    for (int64_t j = 0; j < n; j++)
      a[i * n + j] = 0.5 * (seq_at(i * n + j, ALPHA[0]) + seq_at(j * n + i, ALPHA[0]));
    a[i * n + i] += (double)n;
    b[i] = seq_at(i, ALPHA[1]);
  }
  TIMED(reps, step(n, chol, a, b, w, x, piv));
  double sum = 0;
  if (chol)
    for (int64_t i = 0; i < n * n; i++) sum += w[i];
  else
    for (int64_t i = 0; i < n; i++) sum += x[i];
  checksum(sum);
  return 0;
}
