/*
 * black_scholes_omp.c — the hand-written C + OpenMP peer of bench/blackscholes.
 *
 *   black_scholes_omp [N] [iterations]
 *
 * The same options and formula as bench/black_scholes.lua and
 * black_scholes_numpy.py (inputs from a deterministic low-discrepancy
 * sequence, so all peers price identical options and their checksums agree),
 * written as one fused loop over the options: one pass over memory, no
 * temporaries. This is the "what the hardware does with no runtime" line.
 *
 * Two builds of this file:
 *  - default: glibc's scalar libm exp/log (gcc does not vectorise them without
 *    -ffast-math), `#pragma omp parallel for`;
 *  - -DUSE_SLEEF: SLEEF's 1-ULP vector exp/log (the accuracy tycho's kernels
 *    promise), hand-vectorised with GCC vector extensions, 8 lanes with
 *    AVX-512F, 4 with AVX2, 2 with SSE2.
 *
 * Prints "time: <best of iterations> s" and "checksum: <sum(call)+sum(put)>".
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef USE_SLEEF
#include <immintrin.h>
#include <sleef.h>
#endif

#define R 0.02
#define V 0.3
/* Additive recurrence constants (Roberts' R2/R3 sequences), as in the peers. */
#define ALPHA_S 0.6180339887498949
#define ALPHA_K 0.7548776662466927
#define ALPHA_T 0.5698402909980532

static const double A1 = 0.31938153, A2 = -0.356563782, A3 = 1.781477937,
                    A4 = -1.821255978, A5 = 1.330274429;
static const double RSQRT2PI = 0.39894228040143267793994605993438;

static double frac(double x) { return x - floor(x); }

__attribute__((unused)) static double cnd(double d) {
  double k = 1.0 / (fabs(d) * 0.2316419 + 1.0);
  double c = exp(d * -0.5 * d) * RSQRT2PI * (k * (k * (k * (k * (k * A5 + A4) + A3) + A2) + A1));
  return d > 0 ? 1.0 - c : c;
}

/* One option, scalar: the loop body of the libm build. */
__attribute__((unused))
static void price(double s, double x, double t, double *call, double *put) {
  double sqrt_t = sqrt(t);
  double d1 = (log(s / x) + t * (R + 0.5 * V * V)) / (sqrt_t * V);
  double d2 = d1 - sqrt_t * V;
  double c1 = cnd(d1), c2 = cnd(d2);
  double k_exp_rt = x * exp(t * -R);
  *call = s * c1 - k_exp_rt * c2;
  *put = k_exp_rt * (1.0 - c2) - s * (1.0 - c1);
}

#ifdef USE_SLEEF
#if defined(__AVX512F__)
#define W 8
#define VEXP(v) ((vd)Sleef_expd8_u10avx512f((__m512d)(v)))
#define VLOG(v) ((vd)Sleef_logd8_u10avx512f((__m512d)(v)))
#define VSQRT(v) ((vd)Sleef_sqrtd8_u05avx512f((__m512d)(v)))
#elif defined(__AVX2__)
#define W 4
#define VEXP(v) ((vd)Sleef_expd4_u10avx2((__m256d)(v)))
#define VLOG(v) ((vd)Sleef_logd4_u10avx2((__m256d)(v)))
#define VSQRT(v) ((vd)Sleef_sqrtd4_u05avx2((__m256d)(v)))
#else
#define W 2
#define VEXP(v) ((vd)Sleef_expd2_u10sse2((__m128d)(v)))
#define VLOG(v) ((vd)Sleef_logd2_u10sse2((__m128d)(v)))
#define VSQRT(v) ((vd)Sleef_sqrtd2_u05sse2((__m128d)(v)))
#endif
typedef double vd __attribute__((vector_size(W * 8)));
typedef int64_t vi __attribute__((vector_size(W * 8)));

static vd vsel(vi mask, vd a, vd b) { /* mask ? a : b, lane-wise (mask lanes are 0 or -1) */
  return (vd)(((vi)a & mask) | ((vi)b & ~mask));
}

static vd vcnd(vd d) {
  vd zero = (vd){0};
  vd absd = vsel(d < zero, -d, d);
  vd k = 1.0 / (absd * 0.2316419 + 1.0);
  vd c = VEXP(d * -0.5 * d) * RSQRT2PI * (k * (k * (k * (k * (k * A5 + A4) + A3) + A2) + A1));
  return vsel(d > zero, 1.0 - c, c);
}

static void price_block(const double *s_, const double *x_, const double *t_, double *call,
                        double *put) {
  vd s, x, t;
  __builtin_memcpy(&s, s_, sizeof s);
  __builtin_memcpy(&x, x_, sizeof x);
  __builtin_memcpy(&t, t_, sizeof t);
  vd sqrt_t = VSQRT(t);
  vd d1 = (VLOG(s / x) + t * (R + 0.5 * V * V)) / (sqrt_t * V);
  vd d2 = d1 - sqrt_t * V;
  vd c1 = vcnd(d1), c2 = vcnd(d2);
  vd k_exp_rt = x * VEXP(t * -R);
  vd c = s * c1 - k_exp_rt * c2;
  vd p = k_exp_rt * (1.0 - c2) - s * (1.0 - c1);
  __builtin_memcpy(call, &c, sizeof c);
  __builtin_memcpy(put, &p, sizeof p);
}

static void price_sleef(double s, double x, double t, double *call, double *put) {
  /* the tail: SLEEF's scalar 1-ULP functions, same formula */
  double sqrt_t = sqrt(t);
  double d1 = (Sleef_log_u10(s / x) + t * (R + 0.5 * V * V)) / (sqrt_t * V);
  double d2 = d1 - sqrt_t * V;
  double c[2];
  for (int j = 0; j < 2; j++) {
    double d = j ? d2 : d1;
    double k = 1.0 / (fabs(d) * 0.2316419 + 1.0);
    double v = Sleef_exp_u10(d * -0.5 * d) * RSQRT2PI *
               (k * (k * (k * (k * (k * A5 + A4) + A3) + A2) + A1));
    c[j] = d > 0 ? 1.0 - v : v;
  }
  double k_exp_rt = x * Sleef_exp_u10(t * -R);
  *call = s * c[0] - k_exp_rt * c[1];
  *put = k_exp_rt * (1.0 - c[1]) - s * (1.0 - c[0]);
}
#endif

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? (int64_t)atof(argv[1]) : 10000000;
  int iterations = argc > 2 ? atoi(argv[2]) : 1;
  if (n < 1 || iterations < 1) {
    fprintf(stderr, "usage: %s [N >= 1] [iterations >= 1]\n", argv[0]);
    return 2;
  }
  double *s = malloc(n * sizeof *s), *x = malloc(n * sizeof *x), *t = malloc(n * sizeof *t);
  double *call = malloc(n * sizeof *call), *put = malloc(n * sizeof *put);
  if (!s || !x || !t || !call || !put) {
    fprintf(stderr, "black_scholes_omp: out of memory for %lld options\n", (long long)n);
    return 1;
  }
  /* Inputs first-touched by the threads that price them (static schedule). */
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    double u = (double)i + 0.5;
    s[i] = frac(u * ALPHA_S) * 25.0 + 5.0;
    x[i] = frac(u * ALPHA_K) * 99.0 + 1.0;
    t[i] = frac(u * ALPHA_T) * 9.75 + 0.25;
  }

  double best = 1e300;
  for (int it = 0; it < iterations; it++) {
    double t0 = omp_get_wtime();
#ifdef USE_SLEEF
    int64_t nv = n / W * W;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nv; i += W) price_block(s + i, x + i, t + i, call + i, put + i);
    for (int64_t i = nv; i < n; i++) price_sleef(s[i], x[i], t[i], call + i, put + i);
#else
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) price(s[i], x[i], t[i], call + i, put + i);
#endif
    double dt = omp_get_wtime() - t0;
    if (dt < best) best = dt;
  }

  double sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
  for (int64_t i = 0; i < n; i++) sum += call[i] + put[i];
  printf("black_scholes_omp: %lld options, f64, %d threads, %s\n", (long long)n,
         omp_get_max_threads(),
#ifdef USE_SLEEF
         "SLEEF 1-ULP vector math"
#else
         "glibc libm"
#endif
  );
  printf("time: %.6f s (best of %d)\n", best, iterations);
  printf("options/s: %.4g\n", n / best);
  printf("checksum: %.17g\n", sum);
  free(s); free(x); free(t); free(call); free(put);
  return 0;
}
