/*
 * gpu_bench.c — the GPU benchmarks of bench/gpu_check.sh, run on the GPU
 * modules directly (gpu_kernels.h), so they measure the generated kernels
 * before the window's GPU path exists: device-to-device copy bandwidth (the
 * roof), STREAM triad, Black-Scholes (100M options, f32 and f64, one fused
 * kernel), the 5-point stencil on views of an (N+2)^2 grid (a fused kernel
 * on strided views, then a copy back into the grid's centre) and a fused
 * 8-op chain. Each prints the best of `reps` runs as bytes/s and as a
 * fraction of the measured copy bandwidth:
 *
 *   bench <name>: <seconds> s, <GB/s> GB/s, <percent>% of copy bandwidth
 *
 * Bytes are the minimum traffic: every input read once, every output
 * written once. `tycho_gpu_bench --probe` prints the GPUs (or why there
 * are none) and exits 0 when there is at least one, 3 otherwise.
 *
 * Not a test: timings vary; gpu_check.sh only prints them.
 */
#include "gpu_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ty__gpu *G;
static char err[4096];

#define DIE(...)                                                                           \
  do {                                                                                     \
    fprintf(stderr, "gpu_bench: " __VA_ARGS__);                                            \
    fprintf(stderr, "\n");                                                                 \
    exit(1);                                                                               \
  } while (0)

#define OK(call)                                                                           \
  do {                                                                                     \
    if ((call) != TY_OK) DIE("%s: %s", #call, err);                                        \
  } while (0)

/* every array of the benchmarks, freed before the device is closed (which
 * counts what was not freed) */
static ty__gpu_block *blocks[64];
static int nblocks;

static uint64_t dalloc(size_t bytes) {
  ty__gpu_block *b;
  if (nblocks == (int)(sizeof blocks / sizeof blocks[0])) DIE("more than %d arrays", nblocks);
  OK(ty__gpu_alloc(G, 0, bytes, 0, "benchmark array", &b, err, sizeof err));
  blocks[nblocks++] = b;
  return b->ptr;
}

/* ---- timing with events ---------------------------------------------------------------- */

typedef void (*step_fn)(void *ud);

static double best_seconds(int reps, step_fn step, void *ud) {
  ty__CUevent a, b;
  ty__CUstream s = G->dev[0].stream[0];
  if (G->api.EventCreate(&a, 0) || G->api.EventCreate(&b, 0)) DIE("cuEventCreate");
  step(ud); /* warm-up: compiles and loads kernels */
  OK(ty__gpu_sync(G, 0, 0, err, sizeof err));
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    G->api.EventRecord(a, s);
    step(ud);
    G->api.EventRecord(b, s);
    G->api.EventSynchronize(b);
    float ms = 0;
    if (G->api.EventElapsedTime(&ms, a, b)) DIE("cuEventElapsedTime");
    if (ms * 1e-3 < best) best = ms * 1e-3;
  }
  G->api.EventDestroy(a);
  G->api.EventDestroy(b);
  return best;
}

static double copy_bw;

static void report(const char *name, double seconds, double bytes) {
  double bw = bytes / seconds;
  printf("bench %s: %.6f s, %.1f GB/s, %.1f%% of copy bandwidth\n", name, seconds, bw * 1e-9,
         copy_bw > 0 ? 100.0 * bw / copy_bw : 0.0);
  fflush(stdout);
}

/* ---- building chains ------------------------------------------------------------------------ */

typedef struct bld {
  ty__gir *ir;
  ty_dtype t;
} bld;

static bld chain(int ndim, const int64_t *shape, ty_dtype t) {
  bld b = {calloc(1, sizeof(ty__gir)), t};
  b.ir->ndim = ndim;
  for (int d = 0; d < ndim; d++) b.ir->shape[d] = shape[d];
  return b;
}
static ty__gref arg(bld *b, uint64_t ptr, const int64_t *strides) {
  int a = b->ir->nargs++;
  b->ir->args[a].dtype = b->t;
  b->ir->args[a].ptr = ptr;
  int64_t s = 1;
  for (int d = b->ir->ndim - 1; d >= 0; d--) {
    b->ir->args[a].strides[d] = strides ? strides[d] : s;
    s *= b->ir->shape[d];
  }
  return (ty__gref){TY__GREF_ARG, (uint16_t)a};
}
static ty__gref cst(bld *b, double v) {
  int c = b->ir->nconsts++;
  b->ir->consts[c] = (ty__gconst){b->t, v, (int64_t)v};
  return (ty__gref){TY__GREF_CONST, (uint16_t)c};
}
static ty__gref tmp(bld *b, ty_dtype t) {
  int k = b->ir->ntmps++;
  b->ir->tmps[k] = t;
  return (ty__gref){TY__GREF_TMP, (uint16_t)k};
}
static ty__gref bin(bld *b, ty_op op, ty__gref x, ty__gref y) {
  ty__gref o = tmp(b, ty__op_out_dtype(op, b->t));
  b->ir->subs[b->ir->nsubs++] = (ty__gsub){TY__G_BINARY, (uint8_t)op, (uint8_t)b->t, (uint8_t)b->t, 2, o, {x, y}};
  return o;
}
static ty__gref un(bld *b, ty_op op, ty__gref x) {
  ty__gref o = tmp(b, b->t);
  b->ir->subs[b->ir->nsubs++] = (ty__gsub){TY__G_UNARY, (uint8_t)op, (uint8_t)b->t, (uint8_t)b->t, 1, o, {x}};
  return o;
}
static ty__gref where(bld *b, ty__gref c, ty__gref x, ty__gref y) {
  ty__gref o = tmp(b, b->t);
  b->ir->subs[b->ir->nsubs++] = (ty__gsub){TY__G_WHERE, 0, (uint8_t)b->t, (uint8_t)b->t, 3, o, {c, x, y}};
  return o;
}
static void put(bld *b, ty__gref out, ty__gref v) {
  b->ir->subs[b->ir->nsubs++] = (ty__gsub){TY__G_CAST, 0, (uint8_t)b->t, (uint8_t)b->t, 1, out, {v}};
}

static void run_chain(void *ud) { OK(ty__gpu_fused(G, 0, 0, (const ty__gir *)ud, err, sizeof err)); }

/* uniform [lo, hi) values into a fresh array of n elements */
static uint64_t uniform(int64_t n, ty_dtype t, double lo, double hi, uint64_t stream) {
  size_t es = ty_dtype_size(t);
  uint64_t p = dalloc((size_t)n * es);
  ty_tile tile;
  memset(&tile, 0, sizeof tile);
  tile.dtype = t;
  tile.ndim = 1;
  tile.shape[0] = n;
  tile.strides[0] = 1;
  tile.gshape[0] = n;
  ty__random_args ra = {.seed = 42, .stream = stream};
  OK(ty__gpu_generate(G, 0, 0, TY__KFN_RANDOM, &tile, p, &ra, err, sizeof err));
  bld b = chain(1, &n, t);
  ty__gref x = arg(&b, p, NULL);
  put(&b, x, bin(&b, TY_OP_ADD, bin(&b, TY_OP_MUL, x, cst(&b, hi - lo)), cst(&b, lo)));
  run_chain(b.ir);
  free(b.ir);
  return p;
}

/* ---- the benchmarks ----------------------------------------------------------------------------- */

typedef struct copy_ud {
  uint64_t dst, src;
  size_t bytes;
} copy_ud;

static void run_copy(void *ud) {
  copy_ud *c = ud;
  if (G->api.MemcpyDtoDAsync(c->dst, c->src, c->bytes, G->dev[0].stream[0])) DIE("cuMemcpyDtoDAsync");
}

static void bench_copy(void) {
  copy_ud c = {0, 0, (size_t)2 << 30};
  c.dst = dalloc(c.bytes);
  c.src = dalloc(c.bytes);
  if (G->api.MemsetD8Async(c.src, 1, c.bytes, G->dev[0].stream[0])) DIE("cuMemsetD8Async");
  double s = best_seconds(10, run_copy, &c);
  copy_bw = 2.0 * (double)c.bytes / s; /* read + write */
  report("d2d-copy (2 GiB)", s, 2.0 * (double)c.bytes);
}

static void bench_triad(int64_t n) {
  bld b = chain(1, &n, TY_F64);
  ty__gref a = arg(&b, dalloc((size_t)n * 8), NULL);
  ty__gref x = arg(&b, uniform(n, TY_F64, 0, 1, 1), NULL), y = arg(&b, uniform(n, TY_F64, 0, 1, 2), NULL);
  put(&b, a, bin(&b, TY_OP_ADD, x, bin(&b, TY_OP_MUL, cst(&b, 3.0), y)));
  char name[64];
  snprintf(name, sizeof name, "stream-triad f64 n=%lld", (long long)n);
  report(name, best_seconds(10, run_chain, b.ir), 3.0 * 8 * (double)n);
  free(b.ir);
}

/* the normal CDF of black_scholes.lua (Abramowitz-Stegun) */
static ty__gref cnd(bld *b, ty__gref d) {
  const double A1 = 0.31938153, A2 = -0.356563782, A3 = 1.781477937, A4 = -1.821255978, A5 = 1.330274429;
  const double RSQRT2PI = 0.39894228040143267793994605993438;
  ty__gref k = bin(b, TY_OP_DIV, cst(b, 1.0),
                   bin(b, TY_OP_ADD, bin(b, TY_OP_MUL, un(b, TY_OP_ABS, d), cst(b, 0.2316419)), cst(b, 1.0)));
  ty__gref poly = bin(b, TY_OP_ADD, bin(b, TY_OP_MUL, k, cst(b, A5)), cst(b, A4));
  poly = bin(b, TY_OP_ADD, bin(b, TY_OP_MUL, k, poly), cst(b, A3));
  poly = bin(b, TY_OP_ADD, bin(b, TY_OP_MUL, k, poly), cst(b, A2));
  poly = bin(b, TY_OP_ADD, bin(b, TY_OP_MUL, k, poly), cst(b, A1));
  poly = bin(b, TY_OP_MUL, k, poly);
  ty__gref e = un(b, TY_OP_EXP, bin(b, TY_OP_MUL, bin(b, TY_OP_MUL, d, cst(b, -0.5)), d));
  ty__gref c = bin(b, TY_OP_MUL, bin(b, TY_OP_MUL, e, cst(b, RSQRT2PI)), poly);
  ty__gref pos = bin(b, TY_OP_GT, d, cst(b, 0.0));
  return where(b, pos, bin(b, TY_OP_SUB, cst(b, 1.0), c), c);
}

static void bench_black_scholes(int64_t n, ty_dtype t) {
  const double R = 0.02, V = 0.3;
  bld b = chain(1, &n, t);
  size_t es = ty_dtype_size(t);
  ty__gref call = arg(&b, dalloc((size_t)n * es), NULL), putv = arg(&b, dalloc((size_t)n * es), NULL);
  ty__gref S = arg(&b, uniform(n, t, 5, 30, 3), NULL), K = arg(&b, uniform(n, t, 1, 100, 4), NULL),
           T = arg(&b, uniform(n, t, 0.25, 10, 5), NULL);
  ty__gref sqrt_t = un(&b, TY_OP_SQRT, T);
  ty__gref d1 = bin(&b, TY_OP_DIV,
                    bin(&b, TY_OP_ADD, un(&b, TY_OP_LOG, bin(&b, TY_OP_DIV, S, K)),
                        bin(&b, TY_OP_MUL, T, cst(&b, R + 0.5 * V * V))),
                    bin(&b, TY_OP_MUL, sqrt_t, cst(&b, V)));
  ty__gref d2 = bin(&b, TY_OP_SUB, d1, bin(&b, TY_OP_MUL, sqrt_t, cst(&b, V)));
  ty__gref c1 = cnd(&b, d1), c2 = cnd(&b, d2);
  ty__gref kexp = bin(&b, TY_OP_MUL, K, un(&b, TY_OP_EXP, bin(&b, TY_OP_MUL, T, cst(&b, -R))));
  put(&b, call, bin(&b, TY_OP_SUB, bin(&b, TY_OP_MUL, S, c1), bin(&b, TY_OP_MUL, kexp, c2)));
  put(&b, putv,
      bin(&b, TY_OP_SUB, bin(&b, TY_OP_MUL, kexp, bin(&b, TY_OP_SUB, cst(&b, 1.0), c2)),
          bin(&b, TY_OP_MUL, S, bin(&b, TY_OP_SUB, cst(&b, 1.0), c1))));
  char name[64];
  snprintf(name, sizeof name, "black-scholes %s n=%lld (%d ops)", ty_dtype_name(t), (long long)n, b.ir->nsubs);
  report(name, best_seconds(5, run_chain, b.ir), 5.0 * (double)es * (double)n);
  free(b.ir);
}

typedef struct stencil_ud {
  ty__gir *ir;
  int64_t shape[2], dst[2], src[2];
  uint64_t center, tmp;
  int iters;
} stencil_ud;

static void run_stencil(void *ud) {
  stencil_ud *s = ud;
  for (int i = 0; i < s->iters; i++) {
    OK(ty__gpu_fused(G, 0, 0, s->ir, err, sizeof err));
    OK(ty__gpu_copy(G, 0, 0, 2, s->shape, s->center, s->dst, s->tmp, s->src, 8, err, sizeof err));
  }
}

static void bench_stencil(int64_t N, int iters) {
  int64_t W = N + 2;
  uint64_t grid = uniform(W * W, TY_F64, -273.15, 40, 6), tmpbuf = dalloc((size_t)(N * N) * 8);
  int64_t shape[2] = {N, N}, view[2] = {W, 1};
  bld b = chain(2, shape, TY_F64);
  ty__gref out = arg(&b, tmpbuf, NULL);
  ty__gref c = arg(&b, grid + (uint64_t)(W + 1) * 8, view), no = arg(&b, grid + 1 * 8, view),
           so = arg(&b, grid + (uint64_t)(2 * W + 1) * 8, view), we = arg(&b, grid + (uint64_t)W * 8, view),
           ea = arg(&b, grid + (uint64_t)(W + 2) * 8, view);
  ty__gref sum = bin(&b, TY_OP_ADD, bin(&b, TY_OP_ADD, bin(&b, TY_OP_ADD, bin(&b, TY_OP_ADD, c, no), ea), we), so);
  put(&b, out, bin(&b, TY_OP_MUL, sum, cst(&b, 0.2)));
  stencil_ud s = {b.ir, {N, N}, {W, 1}, {N, 1}, grid + (uint64_t)(W + 1) * 8, tmpbuf, iters};
  char name[64];
  snprintf(name, sizeof name, "stencil N=%lld (%d iterations)", (long long)N, iters);
  /* per iteration: the grid read once, tmp written, read, the centre written */
  report(name, best_seconds(3, run_stencil, &s), 4.0 * 8 * (double)(N * N) * iters);
  free(b.ir);
}

static void bench_chain8(int64_t n) {
  bld b = chain(1, &n, TY_F64);
  ty__gref y = arg(&b, dalloc((size_t)n * 8), NULL), x = arg(&b, uniform(n, TY_F64, 0, 1, 7), NULL);
  /* 8 ops: ((((x*1.5 + 2) * x - 0.5) / 3 + x) * 0.25 - 1) then max(., 0) */
  ty__gref v = bin(&b, TY_OP_MUL, x, cst(&b, 1.5));
  v = bin(&b, TY_OP_ADD, v, cst(&b, 2.0));
  v = bin(&b, TY_OP_MUL, v, x);
  v = bin(&b, TY_OP_SUB, v, cst(&b, 0.5));
  v = bin(&b, TY_OP_DIV, v, cst(&b, 3.0));
  v = bin(&b, TY_OP_ADD, v, x);
  v = bin(&b, TY_OP_MUL, v, cst(&b, 0.25));
  v = bin(&b, TY_OP_MAXIMUM, bin(&b, TY_OP_SUB, v, cst(&b, 1.0)), cst(&b, 0.0));
  put(&b, y, v);
  char name[64];
  snprintf(name, sizeof name, "fused 8-op chain f64 n=%lld", (long long)n);
  report(name, best_seconds(10, run_chain, b.ir), 2.0 * 8 * (double)n);
  free(b.ir);
}

int main(int argc, char **argv) {
  bool probe = argc > 1 && !strcmp(argv[1], "--probe");
  ty_status st = ty__gpu_open(probe ? 0 : 1, 0, &G, err, sizeof err);
  if (st != TY_OK || !G || G->ndev == 0) {
    printf("gpu_bench: no GPU: %s\n", st != TY_OK ? err : G->list.why);
    return 3;
  }
  char line[1024];
  ty__gpu_describe(&G->list, line, sizeof line);
  printf("%s\n", line);
  printf("nvrtc: %s; cublas: %s; built-in kernels: %s\n",
         G->nvrtc_ok ? "loaded" : G->nvrtc_why, G->blas_ok ? "loaded" : G->blas_why,
         G->builtins_ok ? "embedded" : "absent (built without nvcc)");
  if (probe) return 0;
  if (!G->nvrtc_ok) DIE("NVRTC is needed for the fused kernels: %s", G->nvrtc_why);
  int64_t scale = argc > 1 ? atoll(argv[1]) : 1; /* divide sizes (quick runs) */
  if (scale < 1) scale = 1;
  bench_copy();
  bench_triad(160000000 / scale);
  bench_black_scholes(100000000 / scale, TY_F32);
  bench_black_scholes(100000000 / scale, TY_F64);
  bench_stencil(16384 / scale, 10);
  bench_chain8(200000000 / scale);
  printf("kernel cache: %llu compiled (%.2f s in NVRTC), %llu from disk, %llu hits\n",
         (unsigned long long)G->ptx.compiles, G->ptx.compile_seconds,
         (unsigned long long)G->ptx.disk_hits, (unsigned long long)G->ptx.hits);
  OK(ty__gpu_sync(G, 0, 0, err, sizeof err));
  while (nblocks > 0) ty__gpu_free(G, 0, blocks[--nblocks], 0);
  ty__gpu_close(G);
  return 0;
}
