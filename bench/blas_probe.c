/*
 * blas_probe.c — the probes behind bench/README.md "Products: session 11"
 * (issue 19), in CPU time of the threads that do the work
 * (CLOCK_THREAD_CPUTIME_ID), which other load on a shared machine stretches
 * far less than wall time.
 *
 *   blas_probe gemv LIBSCIPY_OPENBLAS [ROUNDS]   one thread
 *     8192^2 f64 (512 MiB, advised as huge pages as numpy's and tycho's
 *     stores are): GB per CPU second of numpy's OpenBLAS dgemv (the library
 *     in bench/.venv's numpy.libs, its threads set to 1 so its time is the
 *     caller's), tycho's fixed-order dot four rows at a time
 *     (kernels_gemv.c), the same eight rows at a time, with software
 *     prefetch, with x in 2048-element blocks as OpenBLAS's dgemv_t
 *     (NBMAX), with the four rows a quarter of the matrix apart (four
 *     contiguous streams), and a read-only sum. Each variant's bits are
 *     checked against the four-row dot (each element depends on its row
 *     only). Medians of ROUNDS (default 5) rounds, variants alternating.
 *   blas_probe gemv2 LIBSCIPY_OPENBLAS [ROUNDS]  two threads, wall time
 *     (session 12) the same matrix, 10 products a sample, variants
 *     alternating: numpy's OpenBLAS dgemv on its own 2 threads, the four-row
 *     dot over 64 blocks of 128 rows taken by 2 threads as they come free
 *     (tycho's pieces), the four-row and eight-row dots over contiguous
 *     halves (OpenBLAS's split), the eight-row dot over the 64 blocks, and
 *     a read-only sum over halves. Min and median of ROUNDS (default 11)
 *     samples: the min is what an idle machine gives, the median what the
 *     load left; on a loaded machine neither ranks the variants.
 *   blas_probe gemm [N] [ROUNDS]                  OpenBLAS of the build
 *     the elements of C = A B (default 4096^3, then 2048^3, 1000^3 and three
 *     odd shapes) whose bits differ from one single-threaded call when
 *     computed on 2, 3, 4 threads, in 2/3/5/8 row blocks, in row blocks
 *     cut on multiples of 64 rows, in 2/3 column blocks; then at N the
 *     process CPU time of one call against 2, 4 and 8 row-block calls, on
 *     2 OpenMP threads.
 *   blas_probe gemm1 [N] [ROUNDS] [LIBSCIPY_OPENBLAS]  one thread
 *     (session 17) the thread CPU time of N^3 (default 2048) as one call,
 *     2/4/8 row blocks, 2 column blocks, 2 x 2 blocks and numpy's OpenBLAS
 *     (when given), and which of them change the bits.
 *   blas_probe gemm2 LIBSCIPY_OPENBLAS [N] [ROUNDS]  two threads, wall time
 *     (session 18) N^3 (default 2048) as tycho runs it (2 row blocks, one
 *     single-threaded call a thread), numpy's OpenBLAS on its 2 threads,
 *     numpy's OpenBLAS in tycho's 2 row blocks, one call on 2 OpenMP
 *     threads (the C peer) and 4 row blocks; wall and process CPU ms.
 *   blas_probe streams [ROUNDS]                  two threads, wall time
 *     (session 20) a read-only f32 sum of 1.28 GB, each thread's half read
 *     as 1, 2, 4 or 8 contiguous parts side by side, against a triad with
 *     streaming stores over the same counted bytes: the fraction of the
 *     triad's rate a read reaches with that many streams a core.
 *   blas_probe gemmpack [N] [ROUNDS] [P]          two threads (session 18)
 *     N^3 with one packing of B shared by both threads (OpenBLAS 0.3.21's
 *     exported SkylakeX kernels, k chunks as its level3.c: the bits of one
 *     call) against tycho's 2 row blocks, each packing all of B.
 *
 * Build (the peers' flags; no FMA contraction in the dot, as tycho's
 * kernels):
 *   cc -O2 -march=native -ffp-contract=off -fopenmp bench/blas_probe.c \
 *     -I/usr/include/x86_64-linux-gnu/openblas-openmp \
 *     -L/usr/lib/x86_64-linux-gnu/openblas-openmp \
 *     -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas -ldl -o blas_probe
 */
#define _GNU_SOURCE
#include <cblas.h>
#include <dlfcn.h>
#include <emmintrin.h> /* the streams probe's streaming stores */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

void openblas_set_num_threads(int num_threads);

typedef double V8 __attribute__((vector_size(64)));
typedef double V4 __attribute__((vector_size(32)));
typedef double V2 __attribute__((vector_size(16)));

static double thread_cpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double process_cpu(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

static double frac(double x) { return x - __builtin_floor(x); }

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* ---- gemv ---------------------------------------------------------------- */

enum { K = 8192, M = 8192 };
static double *A, *X, *Y;

/* kernels_gemv.c's tree: ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)) */
static double tree(V8 a) {
  const V4 b = __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
  const V2 c = __builtin_shufflevector(b, b, 0, 1) + __builtin_shufflevector(b, b, 2, 3);
  return c[0] + c[1];
}

/* R rows at a time, `apart` rows between them (1: adjacent), PF bytes of
 * software prefetch ahead (0: none), x in KB-element blocks (K: whole) with
 * the lanes kept between blocks: every variant gives each row the bits of
 * the four-row dot. */
static void dot_rows(int R, int64_t apart, int pf, int64_t kb) {
  V8 acc[8];
  for (int64_t g = 0; g < M / R; g++) {
    const int64_t i0 = apart == 1 ? g * R : g; /* rows i0 + r * apart */
    for (int r = 0; r < R; r++) acc[r] = (V8){0};
    for (int64_t k0 = 0; k0 < K; k0 += kb)
      for (int64_t p = k0; p < k0 + kb; p += 8) {
        V8 w;
        memcpy(&w, X + p, sizeof w);
        for (int r = 0; r < R; r++) {
          const double *row = A + (i0 + r * apart) * K;
          if (pf) __builtin_prefetch(row + p + pf / 8, 0, 0);
          V8 a;
          memcpy(&a, row + p, sizeof a);
          acc[r] = acc[r] + a * w;
        }
      }
    for (int r = 0; r < R; r++) Y[i0 + r * apart] = tree(acc[r]);
  }
}

/* x in 2048-element blocks over all rows (OpenBLAS's dgemv_t order of
 * traversal), the lanes of every row kept in memory between blocks. */
static void dot_kblocks(void) {
  V8 *acc = aligned_alloc(64, (size_t)M * sizeof(V8));
  for (int64_t i = 0; i < M; i++) acc[i] = (V8){0};
  for (int64_t k0 = 0; k0 < K; k0 += 2048)
    for (int64_t i = 0; i < M; i += 4)
      for (int64_t p = k0; p < k0 + 2048; p += 8) {
        V8 w, a;
        memcpy(&w, X + p, sizeof w);
        for (int r = 0; r < 4; r++) {
          memcpy(&a, A + (i + r) * K + p, sizeof a);
          acc[i + r] = acc[i + r] + a * w;
        }
      }
  for (int64_t i = 0; i < M; i++) Y[i] = tree(acc[i]);
  free(acc);
}

static void read_sum(void) {
  V8 a = {0}, b = {0};
  for (int64_t i = 0; i < (int64_t)M * K; i += 16) {
    V8 x;
    memcpy(&x, A + i, sizeof x);
    a = a + x;
    memcpy(&x, A + i + 8, sizeof x);
    b = b + x;
  }
  Y[0] = tree(a + b);
}

typedef void (*gemv64_fn)(int, int, int64_t, int64_t, double, const double *, int64_t,
                          const double *, int64_t, double, double *, int64_t);
static gemv64_fn np_dgemv;

enum { NUMPY, DOT4, DOT8, DOT4_PF256, DOT4_PF512, DOT4_KBLOCKS, DOT4_APART, SUM, NV };
static const char *gemv_names[NV] = {"numpy OpenBLAS dgemv", "dot, 4 rows (tycho)",
                                     "dot, 8 rows", "dot, 4 rows, prefetch 256 B",
                                     "dot, 4 rows, prefetch 512 B", "dot, x in 2048-blocks",
                                     "dot, 4 rows M/4 apart", "read-only sum"};

static void gemv_variant(int v) {
  switch (v) {
  case NUMPY: np_dgemv(101, 111, M, K, 1.0, A, K, X, 1, 0.0, Y, 1); break; /* row-major, N */
  case DOT4: dot_rows(4, 1, 0, K); break;
  case DOT8: dot_rows(8, 1, 0, K); break;
  case DOT4_PF256: dot_rows(4, 1, 256, K); break;
  case DOT4_PF512: dot_rows(4, 1, 512, K); break;
  case DOT4_KBLOCKS: dot_kblocks(); break;
  case DOT4_APART: dot_rows(4, M / 4, 0, K); break;
  default: read_sum(); break;
  }
}

static int probe_gemv(const char *lib, int rounds) {
  void *h = dlopen(lib, RTLD_NOW);
  if (!h) return fprintf(stderr, "blas_probe: %s\n", dlerror()), 1;
  np_dgemv = (gemv64_fn)dlsym(h, "scipy_cblas_dgemv64_");
  void (*set_threads)(int) = (void (*)(int))dlsym(h, "scipy_openblas_set_num_threads64_");
  if (!np_dgemv || !set_threads) return fprintf(stderr, "blas_probe: not scipy-openblas\n"), 1;
  set_threads(1);
  const size_t bytes = (size_t)M * K * sizeof(double);
  A = aligned_alloc(2 << 20, bytes);
  X = aligned_alloc(64, K * sizeof(double));
  Y = aligned_alloc(64, M * sizeof(double));
  if (!A || !X || !Y) return fprintf(stderr, "blas_probe: out of memory\n"), 1;
  madvise(A, bytes, MADV_HUGEPAGE);
  for (int64_t i = 0; i < (int64_t)M * K; i++) A[i] = frac((double)i * 0.6180339887498949 + 0.31);
  for (int64_t i = 0; i < K; i++) X[i] = frac((double)i * 0.7548776662466927 + 0.38);
  double *ref = malloc(M * sizeof(double)), rate[NV][64];
  dot_rows(4, 1, 0, K);
  memcpy(ref, Y, M * sizeof(double));
  for (int v = DOT8; v < SUM; v++) {
    gemv_variant(v);
    if (memcmp(ref, Y, M * sizeof(double)))
      return fprintf(stderr, "blas_probe: %s changed the bits\n", gemv_names[v]), 1;
  }
  if (rounds > 64) rounds = 64;
  for (int r = 0; r < rounds; r++)
    for (int v = 0; v < NV; v++) {
      const double t0 = thread_cpu();
      for (int j = 0; j < 3; j++) gemv_variant(v);
      rate[v][r] = 3.0 * (double)bytes / (thread_cpu() - t0) / 1e9;
    }
  printf("gemv 8192^2 f64, one thread, GB per CPU second (median of %d):\n", rounds);
  for (int v = 0; v < NV; v++) {
    qsort(rate[v], (size_t)rounds, sizeof(double), by_value);
    printf("  %-28s %5.1f\n", gemv_names[v], rate[v][rounds / 2]);
  }
  free(ref);
  return 0;
}

/* ---- gemm ---------------------------------------------------------------- */

static long differ(const double *a, const double *b, long n) {
  long d = 0;
  for (long i = 0; i < n; i++) d += memcmp(a + i, b + i, sizeof *a) != 0;
  return d;
}

/* C's rows in nb blocks (edges cut down to multiples of `align` rows when
 * align > 1), one single-threaded call each, on `threads` OpenMP threads. */
static void row_blocks(int m, int n, int k, const double *a, const double *b, double *c, int nb,
                       int align, int threads) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int j = 0; j < nb; j++) {
    long b0 = (long)m * j / nb, b1 = (long)m * (j + 1) / nb;
    if (align > 1) {
      b0 = b0 / align * align;
      b1 = j == nb - 1 ? m : b1 / align * align;
    }
    if (b1 > b0)
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(b1 - b0), n, k, 1.0, a + b0 * k,
                  k, b, n, 0.0, c + b0 * n, n);
  }
}

static void col_blocks(int m, int n, int k, const double *a, const double *b, double *c, int nb) {
  for (int j = 0; j < nb; j++) {
    const long b0 = (long)n * j / nb, b1 = (long)n * (j + 1) / nb;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, (int)(b1 - b0), k, 1.0, a, k, b + b0,
                n, 0.0, c + b0, n);
  }
}

static void one_call(int m, int n, int k, const double *a, const double *b, double *c, int threads) {
  openblas_set_num_threads(threads);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, k, b, n, 0.0, c, n);
  openblas_set_num_threads(1);
}

static int probe_gemm(int big, int rounds) {
  const int shapes[][3] = {{big, big, big}, {2048, 2048, 2048}, {1000, 1000, 1000},
                           {1023, 777, 1531}, {3000, 500, 2500}, {517, 3001, 700}};
  const int nb[4] = {2, 3, 5, 8};
  printf("gemm: elements whose bits differ from one single-threaded call\n");
  for (int s = 0; s < 6; s++) {
    const int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
    double *a = malloc(sizeof(double) * (size_t)m * (size_t)k);
    double *b = malloc(sizeof(double) * (size_t)k * (size_t)n);
    double *ref = malloc(sizeof(double) * (size_t)m * (size_t)n);
    double *c = malloc(sizeof(double) * (size_t)m * (size_t)n);
    if (!a || !b || !ref || !c) return fprintf(stderr, "blas_probe: out of memory\n"), 1;
    for (long i = 0; i < (long)m * k; i++) a[i] = frac((i + 0.5) * 0.6180339887498949) - 0.3;
    for (long i = 0; i < (long)k * n; i++) b[i] = frac((i + 0.5) * 0.7548776662466927) - 0.4;
    const long mn = (long)m * n;
    one_call(m, n, k, a, b, ref, 1);
    printf("  %dx%dx%d:", m, n, k);
    for (int t = 2; t <= 4; t++) {
      one_call(m, n, k, a, b, c, t);
      printf(" %d threads %ld,", t, differ(ref, c, mn));
    }
    for (int i = 0; i < 4; i++) {
      row_blocks(m, n, k, a, b, c, nb[i], 1, 1);
      printf(" %d row blocks %ld,", nb[i], differ(ref, c, mn));
    }
    for (int i = 0; i < 4; i++) {
      row_blocks(m, n, k, a, b, c, nb[i], 64, 1);
      printf(" %d on 64s %ld,", nb[i], differ(ref, c, mn));
    }
    for (int i = 0; i < 2; i++) {
      col_blocks(m, n, k, a, b, c, nb[i]);
      printf(" %d column blocks %ld%s", nb[i], differ(ref, c, mn), i ? "\n" : ",");
    }
    fflush(stdout);
    if (s == 0) { /* CPU time at the big size, on 2 threads */
      double cpu[4][64];
      if (rounds > 64) rounds = 64;
      for (int r = 0; r < rounds; r++)
        for (int v = 0; v < 4; v++) {
          const double t0 = process_cpu();
          if (v == 0)
            one_call(m, n, k, a, b, c, 2);
          else
            row_blocks(m, n, k, a, b, c, 1 << v, 1, 2);
          cpu[v][r] = process_cpu() - t0;
        }
      printf("  CPU seconds on 2 threads (median of %d):", rounds);
      for (int v = 0; v < 4; v++) {
        qsort(cpu[v], (size_t)rounds, sizeof(double), by_value);
        if (v)
          printf(" %d row blocks %.2f", 1 << v, cpu[v][rounds / 2]);
        else
          printf(" one call %.2f", cpu[v][rounds / 2]);
      }
      printf("\n");
    }
    free(a), free(b), free(ref), free(c);
  }
  return 0;
}

/* ---- gemm on one thread: the cost of blocks ------------------------------ */

typedef void (*gemm64_fn)(int, int, int, int64_t, int64_t, int64_t, double, const double *,
                          int64_t, const double *, int64_t, double, double *, int64_t);

/* C = A B (n x n) in rb x cb blocks, one single-threaded call each */
static void grid_calls(int n, const double *a, const double *b, double *c, int rb, int cb) {
  for (int i = 0; i < rb; i++)
    for (int j = 0; j < cb; j++) {
      const long r0 = (long)n * i / rb, r1 = (long)n * (i + 1) / rb;
      const long c0 = (long)n * j / cb, c1 = (long)n * (j + 1) / cb;
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(r1 - r0), (int)(c1 - c0), n,
                  1.0, a + r0 * n, n, b + c0, n, 0.0, c + r0 * n + c0, n);
    }
}

/* session 17: the thread CPU time of C = A B (n^3) as one single-threaded
 * call against 2/4/8 row-block calls, 2 column blocks and 2 x 2 blocks
 * (each call packs all of its B), and numpy's OpenBLAS (one thread) when
 * its library is given; variants alternate, medians and mins of ROUNDS,
 * and the elements whose bits differ from one call's. */
static int probe_gemm1(int n, int rounds, const char *lib) {
  enum { GV = 7 };
  static const int grids[GV - 1][2] = {{1, 1}, {2, 1}, {4, 1}, {8, 1}, {1, 2}, {2, 2}};
  gemm64_fn np_dgemm = NULL;
  if (lib) {
    void *h = dlopen(lib, RTLD_NOW);
    if (!h) return fprintf(stderr, "blas_probe: %s\n", dlerror()), 1;
    np_dgemm = (gemm64_fn)dlsym(h, "scipy_cblas_dgemm64_");
    void (*set_threads)(int) = (void (*)(int))dlsym(h, "scipy_openblas_set_num_threads64_");
    if (!np_dgemm || !set_threads) return fprintf(stderr, "blas_probe: not scipy-openblas\n"), 1;
    set_threads(1);
  }
  openblas_set_num_threads(1);
  const long nn = (long)n * n;
  double *a = malloc(sizeof(double) * (size_t)nn), *b = malloc(sizeof(double) * (size_t)nn);
  double *c = malloc(sizeof(double) * (size_t)nn), *ref = malloc(sizeof(double) * (size_t)nn);
  if (!a || !b || !c || !ref) return fprintf(stderr, "blas_probe: out of memory\n"), 1;
  for (long i = 0; i < nn; i++) a[i] = frac((i + 0.5) * 0.6180339887498949) - 0.3;
  for (long i = 0; i < nn; i++) b[i] = frac((i + 0.5) * 0.7548776662466927) - 0.4;
  grid_calls(n, a, b, ref, 1, 1);
  const int nv = np_dgemm ? GV : GV - 1;
  double t[GV][64];
  long diff[GV];
  if (rounds > 64) rounds = 64;
  printf("gemm %d^3, one thread, CPU ms (median / min of %d):\n", n, rounds);
  for (int r = 0; r < rounds; r++)
    for (int v = 0; v < nv; v++) {
      const double t0 = thread_cpu();
      if (v < GV - 1)
        grid_calls(n, a, b, c, grids[v][0], grids[v][1]);
      else
        np_dgemm(101, 111, 111, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
      t[v][r] = thread_cpu() - t0;
      if (r == 0) diff[v] = differ(ref, c, nn);
    }
  for (int v = 0; v < nv; v++) {
    qsort(t[v], (size_t)rounds, sizeof(double), by_value);
    if (v < GV - 1)
      printf("  %d x %d blocks", grids[v][0], grids[v][1]);
    else
      printf("  numpy's OpenBLAS");
    printf(": %.1f / %.1f ms (%+.1f%% of one call's median), %ld elements differ from one call\n",
           1e3 * t[v][rounds / 2], 1e3 * t[v][0],
           100.0 * (t[v][rounds / 2] / t[0][rounds / 2] - 1.0), diff[v]);
  }
  free(a), free(b), free(c), free(ref);
  return 0;
}

/* ---- gemm on two threads, wall time (session 18) ------------------------ */

/* C = A B (n^3) on 2 threads, variants alternating, a pause of 300 ms
 * before each (numpy's OpenBLAS threads spin ~0.1 s after a call; the
 * pause keeps that spin and OpenMP's out of the next variant's figures):
 * wall ms and process CPU ms, min and median of ROUNDS. The operands and
 * C are advised as huge pages (numpy's and tycho's stores are) and C is
 * reused (tycho's block cache). */
enum { G_TYCHO, G_NUMPY, G_NUMPY_BLOCKS, G_ONE_CALL, G_BLOCKS4, GW };
static const char *g_names[GW] = {"2 row blocks, 1 a thread (tycho)", "numpy's, one call, 2 threads",
                                  "numpy's, 2 row blocks, 1 a thread",
                                  "one call, 2 OpenMP threads (C peer)",
                                  "4 row blocks, 2 threads"};

static void gemm2_variant(int v, int n, const double *a, const double *b, double *c,
                          gemm64_fn np_dgemm, void (*np_threads)(int)) {
  if (v == G_TYCHO) {
    row_blocks(n, n, n, a, b, c, 2, 1, 2);
  } else if (v == G_BLOCKS4) {
    row_blocks(n, n, n, a, b, c, 4, 1, 2);
  } else if (v == G_ONE_CALL) {
    one_call(n, n, n, a, b, c, 2);
  } else if (v == G_NUMPY) {
    np_threads(2);
    np_dgemm(101, 111, 111, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
  } else {
    np_threads(1);
#pragma omp parallel for schedule(static, 1) num_threads(2)
    for (int j = 0; j < 2; j++) {
      const long r0 = (long)n * j / 2, r1 = (long)n * (j + 1) / 2;
      np_dgemm(101, 111, 111, r1 - r0, n, n, 1.0, a + r0 * n, n, b, n, 0.0, c + r0 * n, n);
    }
  }
}

static int probe_gemm2(int n, int rounds, const char *lib) {
  void *h = dlopen(lib, RTLD_NOW);
  if (!h) return fprintf(stderr, "blas_probe: %s\n", dlerror()), 1;
  gemm64_fn np_dgemm = (gemm64_fn)dlsym(h, "scipy_cblas_dgemm64_");
  void (*np_threads)(int) = (void (*)(int))dlsym(h, "scipy_openblas_set_num_threads64_");
  if (!np_dgemm || !np_threads) return fprintf(stderr, "blas_probe: not scipy-openblas\n"), 1;
  openblas_set_num_threads(1);
  const size_t bytes = (size_t)n * n * sizeof(double);
  double *a = aligned_alloc(2 << 20, bytes), *b = aligned_alloc(2 << 20, bytes);
  double *c = aligned_alloc(2 << 20, bytes), *ref = malloc(bytes);
  if (!a || !b || !c || !ref) return fprintf(stderr, "blas_probe: out of memory\n"), 1;
  madvise(a, bytes, MADV_HUGEPAGE), madvise(b, bytes, MADV_HUGEPAGE), madvise(c, bytes, MADV_HUGEPAGE);
  for (long i = 0; i < (long)n * n; i++) a[i] = frac((i + 0.5) * 0.6180339887498949) - 0.3;
  for (long i = 0; i < (long)n * n; i++) b[i] = frac((i + 0.5) * 0.7548776662466927) - 0.4;
  row_blocks(n, n, n, a, b, ref, 2, 1, 1);
  double w[GW][64], u[GW][64];
  long diff[GW];
  if (rounds > 64) rounds = 64;
  for (int r = 0; r < rounds; r++)
    for (int v = 0; v < GW; v++) {
      const struct timespec pause = {0, 300000000};
      nanosleep(&pause, NULL);
      const double t0 = omp_get_wtime(), c0 = process_cpu();
      gemm2_variant(v, n, a, b, c, np_dgemm, np_threads);
      w[v][r] = omp_get_wtime() - t0, u[v][r] = process_cpu() - c0;
      if (r == 0) diff[v] = differ(ref, c, (long)n * n);
    }
  printf("gemm %d^3, two threads, wall / process CPU ms (%d rounds):\n", n, rounds);
  for (int v = 0; v < GW; v++) {
    qsort(w[v], (size_t)rounds, sizeof(double), by_value);
    qsort(u[v], (size_t)rounds, sizeof(double), by_value);
    printf("  %-36s wall min %6.1f median %6.1f, CPU min %6.1f median %6.1f; %ld elements differ "
           "from tycho's\n",
           g_names[v], 1e3 * w[v][0], 1e3 * w[v][rounds / 2], 1e3 * u[v][0], 1e3 * u[v][rounds / 2],
           diff[v]);
  }
  free(a), free(b), free(c), free(ref);
  return 0;
}

/* ---- gemm with one packing of B (session 18) ------------------------------ */

/* C = A B (n^3, row-major) on 2 threads the way numpy's threaded OpenBLAS
 * shares its packing: all of B packed once (the threads halve it), then
 * each thread its half of C's rows, over OpenBLAS 0.3.21's exported
 * SkylakeX kernels (dgemm_itcopy/oncopy/kernel_SKYLAKEX; column-major view:
 * OpenBLAS's A is our B, its B our A), with level3.c's k chunks of Q = 384
 * so that the bits are those of one call. P: the packed blocks' rows. */
typedef int (*pack_fn)(long, long, const double *, long, double *);
typedef int (*kern_fn)(long, long, long, double, double *, double *, double *, long);

static void gemm_shared(int n, long P, const double *a, const double *b, double *c, double *packed,
                        double *sb[2], pack_fn itcopy, pack_fn oncopy, kern_fn kernel) {
  enum { Q = 384, UM = 16 };
  long ls[64], ml[64];
  int nc = 0;
  for (long l = 0, m; l < n && nc < 64; l += m) { /* level3.c's min_l */
    m = n - l;
    if (m >= 2 * Q) m = Q;
    else if (m > Q) m = ((m / 2 + UM - 1) / UM) * UM;
    ls[nc] = l, ml[nc++] = m;
  }
  const int nib = (int)((n + P - 1) / P);
#pragma omp parallel num_threads(2)
  {
    const int t = omp_get_thread_num();
    for (int w = t; w < nc * nib; w += 2) { /* block (j, i) at ls[j] n + i P ml[j] */
      const int j = w / nib, i = w % nib;
      const long is = (long)i * P, mi = n - is < P ? n - is : P;
      itcopy(ml[j], mi, b + is + ls[j] * n, n, packed + ls[j] * n + is * ml[j]);
    }
    const long r0 = (long)n * t / 2, rows = (long)n * (t + 1) / 2 - r0;
    memset(c + r0 * n, 0, sizeof(double) * (size_t)(rows * n));
#pragma omp barrier
    for (int j = 0; j < nc; j++) {
      oncopy(ml[j], rows, a + ls[j] + r0 * n, n, sb[t]);
      for (int i = 0; i < nib; i++) {
        const long is = (long)i * P, mi = n - is < P ? n - is : P;
        kernel(mi, rows, ml[j], 1.0, packed + ls[j] * n + is * ml[j], sb[t], c + is + r0 * n, n);
      }
    }
  }
}

static int probe_gemmpack(int n, int rounds, long P) {
  pack_fn itcopy = (pack_fn)dlsym(RTLD_DEFAULT, "dgemm_itcopy_SKYLAKEX");
  pack_fn oncopy = (pack_fn)dlsym(RTLD_DEFAULT, "dgemm_oncopy_SKYLAKEX");
  kern_fn kernel = (kern_fn)dlsym(RTLD_DEFAULT, "dgemm_kernel_SKYLAKEX");
  if (!itcopy || !oncopy || !kernel)
    return fprintf(stderr, "blas_probe: no SkylakeX kernels in this OpenBLAS\n"), 1;
  openblas_set_num_threads(1);
  const size_t bytes = (size_t)n * n * sizeof(double), sbb = bytes / 2 + 384 * 64 * sizeof(double);
  double *a = aligned_alloc(2 << 20, bytes), *b = aligned_alloc(2 << 20, bytes);
  double *c = aligned_alloc(2 << 20, bytes), *ref = malloc(bytes), *packed = aligned_alloc(2 << 20, bytes);
  double *sb[2] = {aligned_alloc(4096, sbb), aligned_alloc(4096, sbb)};
  if (!a || !b || !c || !ref || !packed || !sb[0] || !sb[1])
    return fprintf(stderr, "blas_probe: out of memory\n"), 1;
  madvise(a, bytes, MADV_HUGEPAGE), madvise(b, bytes, MADV_HUGEPAGE), madvise(c, bytes, MADV_HUGEPAGE);
  madvise(packed, bytes, MADV_HUGEPAGE);
  for (long i = 0; i < (long)n * n; i++) a[i] = frac((i + 0.5) * 0.6180339887498949) - 0.3;
  for (long i = 0; i < (long)n * n; i++) b[i] = frac((i + 0.5) * 0.7548776662466927) - 0.4;
  one_call(n, n, n, a, b, ref, 1);
  gemm_shared(n, P, a, b, c, packed, sb, itcopy, oncopy, kernel);
  printf("gemm %d^3, one packing of B (P = %ld): %ld elements differ from one call\n", n, P,
         differ(ref, c, (long)n * n));
  double w[2][64], u[2][64];
  if (rounds > 64) rounds = 64;
  for (int r = 0; r < rounds; r++)
    for (int v = 0; v < 2; v++) {
      const struct timespec pause = {0, 200000000};
      nanosleep(&pause, NULL);
      const double t0 = omp_get_wtime(), c0 = process_cpu();
      if (v) gemm_shared(n, P, a, b, c, packed, sb, itcopy, oncopy, kernel);
      else row_blocks(n, n, n, a, b, c, 2, 1, 2);
      w[v][r] = omp_get_wtime() - t0, u[v][r] = process_cpu() - c0;
    }
  for (int v = 0; v < 2; v++) {
    qsort(w[v], (size_t)rounds, sizeof(double), by_value);
    qsort(u[v], (size_t)rounds, sizeof(double), by_value);
    printf("  %-30s wall min %6.1f median %6.1f, CPU min %6.1f median %6.1f ms\n",
           v ? "one packing of B, shared" : "2 row blocks (tycho)", 1e3 * w[v][0],
           1e3 * w[v][rounds / 2], 1e3 * u[v][0], 1e3 * u[v][rounds / 2]);
  }
  free(a), free(b), free(c), free(ref), free(packed), free(sb[0]), free(sb[1]);
  return 0;
}

/* ---- gemv on two threads, wall time ------------------------------------- */

/* rows [r0, r1) of y = A x, R rows at a time (the four-row dot's bits) */
static void dot_range(int R, int64_t r0, int64_t r1) {
  V8 acc[8];
  for (int64_t i = r0; i < r1; i += R) {
    for (int r = 0; r < R; r++) acc[r] = (V8){0};
    for (int64_t p = 0; p < K; p += 8) {
      V8 w;
      memcpy(&w, X + p, sizeof w);
      for (int r = 0; r < R; r++) {
        V8 a;
        memcpy(&a, A + (i + r) * K + p, sizeof a);
        acc[r] = acc[r] + a * w;
      }
    }
    for (int r = 0; r < R; r++) Y[i + r] = tree(acc[r]);
  }
}

enum { W_NUMPY, W_BLOCKS4, W_HALVES4, W_BLOCKS8, W_HALVES8, W_SUM, WV };
static const char *w_names[WV] = {"numpy OpenBLAS dgemv, 2 threads", "dot 4 rows, 64 blocks (tycho)",
                                  "dot 4 rows, halves", "dot 8 rows, 64 blocks",
                                  "dot 8 rows, halves", "read-only sum, halves"};

static void gemv2_variant(int v) {
  if (v == W_NUMPY) {
    np_dgemv(101, 111, M, K, 1.0, A, K, X, 1, 0.0, Y, 1);
  } else if (v == W_BLOCKS4 || v == W_BLOCKS8) {
    const int R = v == W_BLOCKS4 ? 4 : 8;
#pragma omp parallel for schedule(dynamic, 1) num_threads(2)
    for (int b = 0; b < 64; b++) dot_range(R, b * (M / 64), (b + 1) * (M / 64));
  } else {
#pragma omp parallel num_threads(2)
    {
      const int t = omp_get_thread_num();
      const int64_t r0 = t * (M / 2), r1 = r0 + M / 2;
      if (v == W_SUM) {
        V8 a = {0};
        for (int64_t i = r0 * K; i < r1 * K; i += 8) {
          V8 x;
          memcpy(&x, A + i, sizeof x);
          a = a + x;
        }
        Y[t] = tree(a);
      } else {
        dot_range(v == W_HALVES4 ? 4 : 8, r0, r1);
      }
    }
  }
}

static int probe_gemv2(const char *lib, int rounds) {
  void *h = dlopen(lib, RTLD_NOW);
  if (!h) return fprintf(stderr, "blas_probe: %s\n", dlerror()), 1;
  np_dgemv = (gemv64_fn)dlsym(h, "scipy_cblas_dgemv64_");
  void (*set_threads)(int) = (void (*)(int))dlsym(h, "scipy_openblas_set_num_threads64_");
  if (!np_dgemv || !set_threads) return fprintf(stderr, "blas_probe: not scipy-openblas\n"), 1;
  set_threads(2);
  const size_t bytes = (size_t)M * K * sizeof(double);
  A = aligned_alloc(2 << 20, bytes);
  X = aligned_alloc(64, K * sizeof(double));
  Y = aligned_alloc(64, M * sizeof(double));
  if (!A || !X || !Y) return fprintf(stderr, "blas_probe: out of memory\n"), 1;
  madvise(A, bytes, MADV_HUGEPAGE);
#pragma omp parallel for schedule(static) num_threads(2)
  for (int64_t i = 0; i < (int64_t)M * K; i++) A[i] = frac((double)i * 0.6180339887498949 + 0.31);
  for (int64_t i = 0; i < K; i++) X[i] = frac((double)i * 0.7548776662466927 + 0.38);
  double *ref = malloc(M * sizeof(double)), t[WV][64];
  dot_range(4, 0, M);
  memcpy(ref, Y, M * sizeof(double));
  for (int v = W_BLOCKS4; v < W_SUM; v++) {
    gemv2_variant(v);
    if (memcmp(ref, Y, M * sizeof(double)))
      return fprintf(stderr, "blas_probe: %s changed the bits\n", w_names[v]), 1;
  }
  gemv2_variant(W_NUMPY);
  gemv2_variant(W_SUM);
  if (rounds > 64) rounds = 64;
  for (int r = 0; r < rounds; r++)
    for (int v = 0; v < WV; v++) {
      const double t0 = omp_get_wtime();
      for (int j = 0; j < 10; j++) gemv2_variant(v);
      t[v][r] = omp_get_wtime() - t0;
    }
  printf("gemv 8192^2 f64, two threads, 10 products a sample (%d samples):\n", rounds);
  for (int v = 0; v < WV; v++) {
    qsort(t[v], (size_t)rounds, sizeof(double), by_value);
    printf("  %-34s min %6.1f ms (%5.1f GB/s), median %6.1f ms (%5.1f GB/s)\n", w_names[v],
           1e3 * t[v][0], 10.0 * (double)bytes / t[v][0] / 1e9, 1e3 * t[v][rounds / 2],
           10.0 * (double)bytes / t[v][rounds / 2] / 1e9);
  }
  free(ref);
  return 0;
}

/* ---- streams ------------------------------------------------------------- */

/* A read-only sum of 1.28 GB of f32 (X^T z's 10M x 32 X) on 2 OpenMP
 * threads, each thread's half read as S contiguous parts side by side
 * (S = 1, 2, 4, 8), against a STREAM triad with streaming stores over the
 * same counted bytes (24 an element): how many streams a core needs to
 * read at the machine's rate (session 20, "X^T z in two streams"). */
typedef float F8 __attribute__((vector_size(32)));

static float sum_streams(const float *x, size_t n, int S) {
  F8 acc[8] = {0};
  const size_t part = n / (size_t)S / 64 * 64;
  for (size_t i = 0; i < part; i += 32)
    for (int s = 0; s < S; s++) {
      const F8 *p = (const F8 *)(x + (size_t)s * part + i);
      acc[s] += (p[0] + p[1]) + (p[2] + p[3]);
    }
  F8 t = acc[0];
  for (int s = 1; s < 8; s++) t += acc[s];
  return t[0] + t[7];
}

static double wall(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int probe_streams(int rounds) {
  const size_t n = 320000000, tn = n * 4 / 24 / 2 * 2, huge = 2 << 20;
  float *x = aligned_alloc(huge, (n * 4 + huge - 1) / huge * huge);
  double *a = aligned_alloc(huge, (tn * 8 + huge - 1) / huge * huge);
  double *b = aligned_alloc(huge, (tn * 8 + huge - 1) / huge * huge);
  double *c = aligned_alloc(huge, (tn * 8 + huge - 1) / huge * huge);
  if (!x || !a || !b || !c) return fprintf(stderr, "blas_probe: out of memory\n"), 1;
  madvise(x, n * 4, MADV_HUGEPAGE);
  madvise(a, tn * 8, MADV_HUGEPAGE), madvise(b, tn * 8, MADV_HUGEPAGE), madvise(c, tn * 8, MADV_HUGEPAGE);
  for (size_t i = 0; i < n; i++) x[i] = (float)(i & 1023);
  for (size_t i = 0; i < tn; i++) a[i] = 0, b[i] = 1, c[i] = 2;
  enum { NS = 5 };
  static const int streams[NS - 1] = {1, 2, 4, 8};
  double best[NS];
  for (int v = 0; v < NS; v++) best[v] = 1e30;
  volatile float sink = 0;
  for (int r = 0; r < rounds; r++)
    for (int v = 0; v < NS; v++) {
      const double t0 = wall();
      if (v < NS - 1) {
        float tot = 0;
#pragma omp parallel num_threads(2) reduction(+ : tot)
        {
          const size_t half = n / 2;
          tot += sum_streams(x + (size_t)omp_get_thread_num() * half, half, streams[v]);
        }
        sink += tot;
      } else {
#pragma omp parallel for num_threads(2) schedule(static)
        for (size_t i = 0; i < tn; i += 2)
          _mm_stream_pd(a + i, _mm_add_pd(_mm_load_pd(b + i), _mm_mul_pd(_mm_set1_pd(3.0), _mm_load_pd(c + i))));
      }
      const double t = wall() - t0;
      if (t < best[v]) best[v] = t;
    }
  printf("read 1.28 GB f32 on 2 threads, min of %d rounds (variants alternating):\n", rounds);
  for (int v = 0; v < NS - 1; v++)
    printf("  %d stream(s) a thread  %7.1f ms  %5.1f GB/s  %.2f of the triad\n", streams[v],
           1e3 * best[v], (double)n * 4 / best[v] / 1e9, best[NS - 1] / best[v]);
  printf("  triad, streaming stores %7.1f ms  %5.1f GB/s (24 B an element)\n", 1e3 * best[NS - 1],
         (double)n * 4 / best[NS - 1] / 1e9);
  free(x), free(a), free(b), free(c);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 3 && !strcmp(argv[1], "gemv")) return probe_gemv(argv[2], argc > 3 ? atoi(argv[3]) : 5);
  if (argc >= 3 && !strcmp(argv[1], "gemv2"))
    return probe_gemv2(argv[2], argc > 3 ? atoi(argv[3]) : 11);
  if (argc >= 2 && !strcmp(argv[1], "gemm"))
    return probe_gemm(argc > 2 ? atoi(argv[2]) : 4096, argc > 3 ? atoi(argv[3]) : 3);
  if (argc >= 2 && !strcmp(argv[1], "gemm1"))
    return probe_gemm1(argc > 2 ? atoi(argv[2]) : 2048, argc > 3 ? atoi(argv[3]) : 5,
                       argc > 4 ? argv[4] : NULL);
  if (argc >= 3 && !strcmp(argv[1], "gemm2"))
    return probe_gemm2(argc > 3 ? atoi(argv[3]) : 2048, argc > 4 ? atoi(argv[4]) : 5, argv[2]);
  if (argc >= 2 && !strcmp(argv[1], "streams")) return probe_streams(argc > 2 ? atoi(argv[2]) : 7);
  if (argc >= 2 && !strcmp(argv[1], "gemmpack"))
    return probe_gemmpack(argc > 2 ? atoi(argv[2]) : 2048, argc > 3 ? atoi(argv[3]) : 7,
                          argc > 4 ? atol(argv[4]) : 192);
  fprintf(stderr, "usage: blas_probe gemv|gemv2 LIBSCIPY_OPENBLAS [ROUNDS] | gemm [N] [ROUNDS] | "
                  "gemm1 [N] [ROUNDS] [LIBSCIPY_OPENBLAS] | gemm2 LIBSCIPY_OPENBLAS [N] [ROUNDS] | "
                  "gemmpack [N] [ROUNDS] [P] | streams [ROUNDS]\n");
  return 2;
}
