/* blas.c — the C peer of blas.lua: the limits the products are measured
 * against, in the same process.
 *   op=gemv, gemvt: the step is a STREAM triad (a = b + 3c, OpenMP, first
 *     touch by the threads) over arrays whose counted bytes (3 x 8 bytes an
 *     element, STREAM's rule) are those of the matrix, `iters` times: the
 *     time the product would take at the triad's bandwidth, so that this
 *     peer's time / tycho's is the fraction of the triad bandwidth tycho's
 *     product reaches. Multi-threaded OpenBLAS's own gemv is timed in
 *     alternation with each triad step (info: openblas_gbs=, triad_gbs=),
 *     and gives the checksum.
 *   op=gemm: the step is multi-threaded OpenBLAS dgemm/sgemm (its threads:
 *     OMP_NUM_THREADS), the same inputs.
 * Inputs as blas.lua: seq(n n, ALPHA[0]) row-major, seq(n, ALPHA[1]). */
#include "common.h"

#include <cblas.h>

static int cmp(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp);
  return t[n / 2];
}

/* A row-major rows x cols matrix of seq(rows cols, ALPHA[0]), and the vector. */
static void *matrix(int64_t rows, int64_t cols, int f32, double alpha) {
  const int64_t n = rows * cols;
  void *p = xmalloc((size_t)n * (f32 ? 4 : 8));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    if (f32) ((float *)p)[i] = (float)seq_at(i, alpha);
    else ((double *)p)[i] = seq_at(i, alpha);
  }
  return p;
}

/* y = M x (trans 0: M rows x cols) or M^T x (trans 1), one OpenBLAS call */
static void gemv(int f32, int trans, int64_t rows, int64_t cols, const void *M, const void *x,
                 void *y) {
  const enum CBLAS_TRANSPOSE op = trans ? CblasTrans : CblasNoTrans;
  if (f32)
    cblas_sgemv(CblasRowMajor, op, (int)rows, (int)cols, 1.0f, M, (int)cols, x, 1, 0.0f, y, 1);
  else
    cblas_dgemv(CblasRowMajor, op, (int)rows, (int)cols, 1.0, M, (int)cols, x, 1, 0.0, y, 1);
}

static double sum(const void *y, int64_t n, int f32) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += f32 ? ((const float *)y)[i] : ((const double *)y)[i];
  return s;
}

int main(int argc, char **argv) {
  const char *op = arg_str(argc, argv, "op", "gemv");
  const int f32 = !strcmp(arg_str(argc, argv, "dtype", "f64"), "f32");
  const int64_t n = (int64_t)arg_num(argc, argv, "n", 4096);
  const int64_t m = (int64_t)arg_num(argc, argv, "m", 500000);
  const int64_t f = (int64_t)arg_num(argc, argv, "f", 32);
  const int iters = (int)arg_num(argc, argv, "iters", 10);
  const int reps = (int)arg_num(argc, argv, "reps", 5);
  const size_t es = f32 ? 4 : 8;

  if (!strcmp(op, "gemm")) {
    void *L = matrix(n, n, f32, ALPHA[0]), *R = matrix(n, n, f32, ALPHA[1]);
    void *P = xmalloc((size_t)(n * n) * es);
    TIMED(reps, {
      if (f32)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, L,
                    (int)n, R, (int)n, 0.0f, P, (int)n);
      else
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0, L,
                    (int)n, R, (int)n, 0.0, P, (int)n);
    });
    checksum(sum(P, n * n, f32));
    return 0;
  }
  const int trans = !strcmp(op, "gemvt");
  if (!trans && strcmp(op, "gemv")) {
    fprintf(stderr, "bench: op is gemv, gemvt or gemm, got %s\n", op);
    return 1;
  }
  const int64_t rows = trans ? m : n, cols = trans ? f : n;
  void *M = matrix(rows, cols, f32, ALPHA[0]), *x = matrix(trans ? rows : cols, 1, f32, ALPHA[1]);
  void *y = xmalloc((size_t)(trans ? cols : rows) * es);
  const double mbytes = (double)(rows * cols) * (double)es;
  /* the triad's arrays: 3 x 8 bytes per element = the matrix's bytes */
  const int64_t tn = (int64_t)(mbytes / 24);
  double *a = xmalloc((size_t)tn * 8), *b = xmalloc((size_t)tn * 8), *c = xmalloc((size_t)tn * 8);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < tn; i++) a[i] = 0, b[i] = 2.0, c[i] = 1.0;
  double tb[64], tt[64];
  int nb = 0, nt = 0;
  const int warm = bench_warmup();
  for (int r = 0; r < reps + warm; r++) {
    double t0 = omp_get_wtime();
    for (int it = 0; it < iters; it++) gemv(f32, trans, rows, cols, M, x, y);
    double t1 = omp_get_wtime();
    for (int it = 0; it < iters; it++) {
#pragma omp parallel for simd schedule(static)
      for (int64_t i = 0; i < tn; i++) a[i] = b[i] + 3.0 * c[i];
    }
    double t2 = omp_get_wtime();
    if (r < warm) continue;
    if (nb < 64) tb[nb++] = t1 - t0;
    if (nt < 64) tt[nt++] = t2 - t1;
    printf("time: %.9f\n", t2 - t1);
    fflush(stdout);
  }
  printf("info: triad_gbs=%.2f\n", iters * mbytes / median(tt, nt) / 1e9);
  printf("info: openblas_gbs=%.2f\n", iters * mbytes / median(tb, nb) / 1e9);
  checksum(sum(y, trans ? cols : rows, f32));
  free(a), free(b), free(c);
  return 0;
}
