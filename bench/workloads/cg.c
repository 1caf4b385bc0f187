/* cg.c — the C+OpenMP peer of cg.lua: the Laplacian applied in the loop that
 * also computes p.Ap, the x/r updates fused with r.r, then p = r + beta p. */
#include "common.h"

static int64_t N;

static double solve(const double *b, double bnorm, double tol, int max_iters, int check,
                    double *x, double *r, double *p, double *ap, int *iters) {
  const int64_t n = N, nn = n * n;
  double rsold = 0, relres = 0;
#pragma omp parallel for reduction(+ : rsold) schedule(static)
  for (int64_t i = 0; i < nn; i++) {
    x[i] = 0;
    r[i] = b[i];
    p[i] = b[i];
    rsold += b[i] * b[i];
  }
  int it = 0;
  while (it < max_iters) {
    double pap = 0;
#pragma omp parallel for reduction(+ : pap) schedule(static)
    for (int64_t i = 0; i < n; i++) {
      const double *c = p + i * n;
      for (int64_t j = 0; j < n; j++) {
        double v = 4.0 * c[j];
        if (i > 0) v -= c[j - n];
        if (i < n - 1) v -= c[j + n];
        if (j > 0) v -= c[j - 1];
        if (j < n - 1) v -= c[j + 1];
        ap[i * n + j] = v;
        pap += c[j] * v;
      }
    }
    const double alpha = rsold / pap;
    double rsnew = 0;
#pragma omp parallel for simd reduction(+ : rsnew) schedule(static)
    for (int64_t i = 0; i < nn; i++) {
      x[i] += alpha * p[i];
      r[i] -= alpha * ap[i];
      rsnew += r[i] * r[i];
    }
    it++;
    if (it % check == 0 || it == max_iters) {
      relres = sqrt(rsnew) / bnorm;
      if (relres < tol) break;
    }
    const double beta = rsnew / rsold;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < nn; i++) p[i] = r[i] + beta * p[i];
    rsold = rsnew;
  }
  *iters = it;
  return relres;
}

int main(int argc, char **argv) {
  N = (int64_t)arg_num(argc, argv, "n", 2048);
  double tol = arg_num(argc, argv, "tol", 1e-8);
  int max_iters = (int)arg_num(argc, argv, "max_iters", 100);
  int check = (int)arg_num(argc, argv, "check", 25);
  int reps = (int)arg_num(argc, argv, "reps", 5);
  const int64_t nn = N * N;
  double *b = xmalloc(nn * 8), *x = xmalloc(nn * 8), *r = xmalloc(nn * 8), *p = xmalloc(nn * 8),
         *ap = xmalloc(nn * 8);
  double bb = 0;
#pragma omp parallel for reduction(+ : bb) schedule(static)
  for (int64_t i = 0; i < nn; i++) {
    b[i] = seq_at(i, ALPHA[0]) - 0.5;
    ap[i] = 0;
    bb += b[i] * b[i];
  }
  double relres = 0;
  int iters = 0;
  TIMED(reps, relres = solve(b, sqrt(bb), tol, max_iters, check, x, r, p, ap, &iters));
  printf("info: iterations=%d\n", iters);
  checksum(relres);
  return 0;
}
