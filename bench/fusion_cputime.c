/*
 * fusion_cputime.c — Black-Scholes on ONE thread, timed in CPU time of that
 * thread (CLOCK_THREAD_CPUTIME_ID): tycho's fused kernels (compiled and
 * interpreted) and unfused launches against the hand-fused SLEEF loop of
 * bench/peers/black_scholes_omp.c, alternating in one process. Other load on
 * a shared machine stretches wall time but hardly this: it is bench/fusion's
 * steady measure of kernel efficiency. Built by bench/fusion against the
 * build's libtycho.a (-O3 -march=native, the peer's flags; the hand loop is
 * compiled with FMA contraction, as the peer is).
 *
 *   fusion_cputime [N] [ROUNDS]
 */
#include "internal.h"

#include <math.h>
#include <sleef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static ty_runtime *rt;

static ty_store *S_(double v) {
  ty_store *s = NULL;
  if (ty_scalar_f64(rt, TY_F64, v, &s)) exit(1);
  return s;
}
/* operations that consume (release) their store operands */
static ty_store *B2(ty_op op, ty_store *a, ty_store *b) {
  ty_store *o = NULL;
  if (ty_binary(rt, op, a, b, &o)) {
    fprintf(stderr, "%s\n", ty_errmsg(rt));
    exit(1);
  }
  ty_store_release(a);
  ty_store_release(b);
  return o;
}
static ty_store *BS(ty_op op, ty_store *a, double v) { return B2(op, a, S_(v)); }
static ty_store *SB(ty_op op, double v, ty_store *a) { return B2(op, S_(v), a); }
static ty_store *U(ty_op op, ty_store *a) {
  ty_store *o = NULL;
  if (ty_unary(rt, op, a, &o)) exit(1);
  ty_store_release(a);
  return o;
}
static ty_store *own(ty_store *a) {
  ty_store_retain(a);
  return a;
}

static const double A1 = 0.31938153, A2 = -0.356563782, A3 = 1.781477937, A4 = -1.821255978,
                    A5 = 1.330274429, RSQRT2PI = 0.39894228040143267793994605993438;

static ty_store *cnd(ty_store *d) {
  ty_store *k = SB(TY_OP_DIV, 1.0, BS(TY_OP_ADD, BS(TY_OP_MUL, U(TY_OP_ABS, own(d)), 0.2316419), 1.0));
  ty_store *p = BS(TY_OP_ADD, B2(TY_OP_MUL, own(k), BS(TY_OP_ADD, BS(TY_OP_MUL, own(k), A5), A4)), A3);
  p = BS(TY_OP_ADD, B2(TY_OP_MUL, own(k), p), A2);
  p = BS(TY_OP_ADD, B2(TY_OP_MUL, own(k), p), A1);
  p = B2(TY_OP_MUL, k, p);
  ty_store *c = B2(TY_OP_MUL, BS(TY_OP_MUL, U(TY_OP_EXP, B2(TY_OP_MUL, BS(TY_OP_MUL, own(d), -0.5), own(d))), RSQRT2PI), p);
  ty_store *w = NULL, *g = BS(TY_OP_GT, d, 0.0), *one_c = SB(TY_OP_SUB, 1.0, own(c));
  if (ty_where(rt, g, one_c, c, &w)) exit(1);
  ty_store_release(g), ty_store_release(one_c), ty_store_release(c);
  return w;
}

static void price(ty_store *S, ty_store *K, ty_store *T, ty_store **call, ty_store **put) {
  const double R = 0.02, V = 0.3;
  ty_store *sq = U(TY_OP_SQRT, own(T));
  ty_store *d1 = B2(TY_OP_DIV, B2(TY_OP_ADD, U(TY_OP_LOG, B2(TY_OP_DIV, own(S), own(K))), BS(TY_OP_MUL, own(T), R + 0.5 * V * V)),
                    BS(TY_OP_MUL, own(sq), V));
  ty_store *d2 = B2(TY_OP_SUB, own(d1), BS(TY_OP_MUL, sq, V));
  ty_store *c1 = cnd(d1), *c2 = cnd(d2);
  ty_store *ker = B2(TY_OP_MUL, own(K), U(TY_OP_EXP, BS(TY_OP_MUL, own(T), -R)));
  *call = B2(TY_OP_SUB, B2(TY_OP_MUL, own(S), own(c1)), B2(TY_OP_MUL, own(ker), own(c2)));
  *put = B2(TY_OP_SUB, B2(TY_OP_MUL, ker, SB(TY_OP_SUB, 1.0, c2)), B2(TY_OP_MUL, own(S), SB(TY_OP_SUB, 1.0, c1)));
}

/* the peer's loop body and functions (bench/peers/black_scholes_omp.c
 * -DUSE_SLEEF), 8 lanes (AVX-512) or 4 (AVX2) */
#if defined(__AVX512F__)
#define W 8
#define VEXP(v) ((vd)Sleef_expd8_u10avx512f((__m512d)(v)))
#define VLOG(v) ((vd)Sleef_logd8_u10avx512f((__m512d)(v)))
#define VSQRT(v) ((vd)Sleef_sqrtd8_u05avx512f((__m512d)(v)))
#else
#define W 4
#define VEXP(v) ((vd)Sleef_expd4_u10avx2((__m256d)(v)))
#define VLOG(v) ((vd)Sleef_logd4_u10avx2((__m256d)(v)))
#define VSQRT(v) ((vd)Sleef_sqrtd4_u05avx2((__m256d)(v)))
#endif
typedef double vd __attribute__((vector_size(W * 8)));
typedef int64_t vi __attribute__((vector_size(W * 8)));
static vd vsel(vi m, vd a, vd b) { return (vd)(((vi)a & m) | ((vi)b & ~m)); }
static vd vcnd(vd d) {
  vd z = (vd){0}, ad = vsel(d < z, -d, d), k = 1.0 / (ad * 0.2316419 + 1.0);
  vd c = VEXP(d * -0.5 * d) * RSQRT2PI * (k * (k * (k * (k * (k * A5 + A4) + A3) + A2) + A1));
  return vsel(d > z, 1.0 - c, c);
}
static void hand(const double *s_, const double *x_, const double *t_, double *call, double *put, int64_t n) {
  for (int64_t i = 0; i + W <= n; i += W) {
    vd s, x, t;
    memcpy(&s, s_ + i, sizeof s), memcpy(&x, x_ + i, sizeof x), memcpy(&t, t_ + i, sizeof t);
    vd st = VSQRT(t), d1 = (VLOG(s / x) + t * (0.02 + 0.5 * 0.3 * 0.3)) / (st * 0.3), d2 = d1 - st * 0.3;
    vd c1 = vcnd(d1), c2 = vcnd(d2), ke = x * VEXP(t * -0.02);
    vd c = s * c1 - ke * c2, p = ke * (1.0 - c2) - s * (1.0 - c1);
    memcpy(call + i, &c, sizeof c), memcpy(put + i, &p, sizeof p);
  }
}

static double frac(double x) { return x - floor(x); }

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? (int64_t)atof(argv[1]) : 4000000;
  int rounds = argc > 2 ? atoi(argv[2]) : 7;
  n = n / W * W;
  double *s = malloc(sizeof(double) * (size_t)n), *x = malloc(sizeof(double) * (size_t)n),
         *t = malloc(sizeof(double) * (size_t)n), *c = malloc(sizeof(double) * (size_t)n),
         *p = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    double u = (double)i + 0.5;
    s[i] = frac(u * 0.6180339887498949) * 25.0 + 5.0;
    x[i] = frac(u * 0.7548776662466927) * 99.0 + 1.0;
    t[i] = frac(u * 0.5698402909980532) * 9.75 + 0.25;
    c[i] = p[i] = 0;
  }
  static const char *const names[3] = {"fused (compiled)", "fused (interpreter)", "unfused"};
  double best[4] = {1e300, 1e300, 1e300, 1e300};
  ty_runtime *rts[3];
  for (int m = 0; m < 3; m++) {
    setenv("TYCHO_CODEGEN", m == 0 ? "always" : "off", 1);
    ty_config cfg = {.cpus = 1, .sysmem = (size_t)64 << 30};
    cfg.policy.set = TY_POL_FUSE;
    cfg.policy.fuse = m != 2;
    if (ty_runtime_create(&cfg, &rts[m])) return 1;
  }
  ty_store *in[3][3];
  for (int m = 0; m < 3; m++) {
    rt = rts[m];
    ty_store_from_buffer(rt, TY_F64, 1, &n, s, &in[m][0]);
    ty_store_from_buffer(rt, TY_F64, 1, &n, x, &in[m][1]);
    ty_store_from_buffer(rt, TY_F64, 1, &n, t, &in[m][2]);
  }
  double sums[4] = {0};
  for (int r = 0; r <= rounds; r++) { /* round 0: warm-up (page faults, compiling) */
    for (int m = 0; m < 3; m++) {
      rt = rts[m];
      ty_store *call, *put;
      double t0 = cpu_now();
      price(in[m][0], in[m][1], in[m][2], &call, &put);
      ty_flush(rt);
      double dt = cpu_now() - t0;
      if (r > 0 && dt < best[m]) best[m] = dt;
      ty_value v;
      ty_store *sm = NULL;
      ty_reduce(rt, TY_RED_SUM, call, -1, &sm);
      ty_item(rt, sm, &v);
      sums[m] = v.f;
      ty_store_release(sm), ty_store_release(call), ty_store_release(put);
    }
    double t0 = cpu_now();
    hand(s, x, t, c, p, n);
    double dt = cpu_now() - t0;
    if (r > 0 && dt < best[3]) best[3] = dt;
    sums[3] = 0;
    for (int64_t i = 0; i < n; i++) sums[3] += c[i];
  }
  printf("fusion_cputime: Black-Scholes, %lld f64 options, one thread, CPU time, best of %d\n",
         (long long)n, rounds);
  for (int m = 0; m < 3; m++)
    printf("tycho %-20s %.4f s  %.2fx the hand loop  (sum of calls %.10g)\n", names[m], best[m],
           best[m] / best[3], sums[m]);
  printf("hand-fused SLEEF loop      %.4f s  1.00x            (sum of calls %.10g)\n", best[3], sums[3]);
  for (int m = 0; m < 3; m++) {
    for (int k = 0; k < 3; k++) ty_store_release(in[m][k]);
    ty_runtime_destroy(rts[m]);
  }
  free(s), free(x), free(t), free(c), free(p);
  return 0;
}
