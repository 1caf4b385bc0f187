/*
 * test_gpu_sim.c — the simulated GPUs (--gpus sim:N, gpu_sim.c) through the
 * real entry points of gpu_kernels.h: discovery, poisoned device memory,
 * the coherence copies in every direction, the built-in kernels and a fused
 * chain against the CPU (bit for bit where the operation is exact), matmul,
 * ordering within and between streams, asynchrony (and lazy streams, which
 * make a missing synchronisation certain to read stale data),
 * out-of-memory, and a small "executor" round trip on two devices (a
 * template for exec.c).
 *
 * Needs the host C++ compiler (c++, or TYCHO_CXX): without one every case
 * that launches a kernel is skipped (exit 77 when run alone). The compiled
 * kernels are cached (TYCHO_CACHE_DIR, else ~/.cache/tycho/sim): the first
 * run compiles reduce.cu (~4 s).
 */
#include "check.h"
#include "gpu_test_setup.h"

#include "gpu_kernels.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Open n simulated GPUs (fbmem 0: the default pool). */
static ty__gpu *open_sim(int n, size_t fbmem) {
  ty__gpu *g = NULL;
  char err[1024] = "";
  ty_status st = ty__gpu_open(TY_GPUS_SIM | n, fbmem, &g, err, sizeof err);
  if (st != TY_OK) fprintf(stderr, "open sim:%d: %s\n", n, err);
  CHECK_EQ_INT(st, TY_OK);
  if (g) {
    CHECK_EQ_INT(g->ndev, n);
    CHECK(g->builtins_ok);
  }
  return g;
}

static uint64_t upload(ty__gpu *g, int d, const void *host, size_t bytes, ty__gpu_block **blk) {
  char err[512];
  if (ty__gpu_alloc(g, d, bytes, 0, "test buffer", blk, err, sizeof err) != TY_OK) {
    fprintf(stderr, "%s\n", err);
    return 0;
  }
  uint64_t base[TY_MAX_GPUS] = {0};
  base[d] = (*blk)->ptr;
  ty__coh_copy c = {host ? TY__COH_HOST : -1, TY__COH_DEV(d), 0, bytes};
  ty_status st = ty__gpu_copy_run(g, &c, (void *)host, base, 0, err, sizeof err);
  if (st) fprintf(stderr, "%s\n", err);
  CHECK_EQ_INT(st, TY_OK);
  return (*blk)->ptr;
}

static void download(ty__gpu *g, int d, void *host, uint64_t dev, size_t bytes) {
  char err[512];
  uint64_t base[TY_MAX_GPUS] = {0};
  base[d] = dev;
  ty__coh_copy c = {TY__COH_DEV(d), TY__COH_HOST, 0, bytes};
  ty_status st = ty__gpu_copy_run(g, &c, host, base, 0, err, sizeof err);
  if (st) fprintf(stderr, "%s\n", err);
  CHECK_EQ_INT(st, TY_OK);
  CHECK_EQ_INT(ty__gpu_sync(g, d, 0, err, sizeof err), TY_OK);
}

/* ---- selection and discovery ------------------------------------------------------------ */

TEST(gpus_parse_accepts_sim_n) {
  int v = 0;
  char err[256];
  CHECK_EQ_INT(ty_gpus_parse("sim:2", &v, err, sizeof err), TY_OK);
  CHECK_EQ_INT(v, TY_GPUS_SIM | 2);
  CHECK_EQ_INT(ty_gpus_parse("sim:16", &v, err, sizeof err), TY_OK);
  CHECK_EQ_INT(v, TY_GPUS_SIM | 16);
  CHECK_EQ_INT(ty_gpus_parse("2", &v, err, sizeof err), TY_OK);
  CHECK_EQ_INT(v, 2);
  CHECK_EQ_INT(ty_gpus_parse("0", &v, err, sizeof err), TY_OK);
  CHECK_EQ_INT(v, -1);
  static const char *const bad[] = {"sim:0", "sim:17", "sim:", "sim", "sim:1x", "sim:-1", "-1", "17", "x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = 0;
    CHECK_EQ_INT(ty_gpus_parse(bad[i], &v, err, sizeof err), TY_EINVAL);
    CHECK_STR_CONTAINS(err, "sim:N");
  }
}

TEST(sim_devices_are_discovered_as_simulated) {
  ty__gpu *g = NULL;
  char err[1024] = "";
  CHECK_EQ_INT(ty__gpu_probe_only(TY_GPUS_SIM | 2, (size_t)64 << 20, &g, err, sizeof err), TY_OK);
  if (!g) return;
  CHECK_EQ_INT(g->list.count, 2);
  CHECK(g->api.sim);
  CHECK_EQ_INT(g->ndev, 0); /* probed, not opened */
  CHECK_STR_CONTAINS(g->list.why, "2 simulated GPUs");
  for (int i = 0; i < 2; i++) {
    const ty_gpu_device *d = &g->list.dev[i];
    char name[64];
    snprintf(name, sizeof name, "tycho simulated GPU %d", i);
    CHECK(!strcmp(d->name, name));
    CHECK_EQ_INT(d->cc_major, 9);
    CHECK_EQ_INT(d->cc_minor, 0);
    CHECK_EQ_INT(d->sms, 4);
    CHECK_EQ_INT(d->total_mem, (size_t)4 << 30);
    CHECK_EQ_INT(d->fbmem, (size_t)64 << 20);
  }
  CHECK(g->list.dev[0].pci_bus != g->list.dev[1].pci_bus);
  char text[512];
  ty__gpu_describe(&g->list, text, sizeof text);
  CHECK_STR_CONTAINS(text, "gpu 1: tycho simulated GPU 1, cc 9.0, 4 SMs, 4.0 GiB (pool 64.0 MiB)");
  ty__gpu_close(g);
  /* a pool larger than the simulated memory is refused, as on a GPU */
  CHECK_EQ_INT(ty_gpus_check(TY_GPUS_SIM | 1, (size_t)8 << 30, err, sizeof err), TY_EINVAL);
  CHECK_STR_CONTAINS(err, "--fbmem 8.0 GiB: more than the 4.0 GiB of GPU 0 (tycho simulated GPU 0)");
  CHECK_EQ_INT(ty_gpus_check(TY_GPUS_SIM | 17, 0, err, sizeof err), TY_EINVAL);
  /* the simulated memory is TYCHO_SIM_MEM */
  setenv("TYCHO_SIM_MEM", "256MiB", 1);
  CHECK_EQ_INT(ty__gpu_probe_only(TY_GPUS_SIM | 1, 0, &g, err, sizeof err), TY_OK);
  if (g) {
    CHECK_EQ_INT(g->list.dev[0].total_mem, (size_t)256 << 20);
    ty__gpu_close(g);
  }
  setenv("TYCHO_SIM_MEM", "lots", 1);
  CHECK_EQ_INT(ty__gpu_probe_only(TY_GPUS_SIM | 1, 0, &g, err, sizeof err), TY_EINVAL);
  CHECK_STR_CONTAINS(err, "TYCHO_SIM_MEM must be a size");
  unsetenv("TYCHO_SIM_MEM");
}

/* ---- memory and copies ------------------------------------------------------------------- */

TEST(device_memory_is_poisoned_and_copies_run_every_way) {
  if (!have_cxx()) SKIP("no host C++ compiler");
  ty__gpu *g = open_sim(2, 0);
  if (!g) return;
  char err[512];
  enum { N = 1000 };
  double *h = malloc(N * 8), *back = malloc(N * 8);
  for (int i = 0; i < N; i++) h[i] = i * 0.5;
  ty__gpu_block *b0, *b1;
  CHECK_EQ_INT(ty__gpu_alloc(g, 0, N * 8, 0, "x on 0", &b0, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gpu_alloc(g, 1, N * 8, 0, "x on 1", &b1, err, sizeof err), TY_OK);
  uint64_t base[2] = {b0->ptr, b1->ptr};
  CHECK(b0->ptr % 256 == 0 && b1->ptr % 256 == 0);
  /* fresh device memory reads as NaN: a missing copy shows */
  ty__coh_copy c = {TY__COH_DEV(0), TY__COH_HOST, 0, N * 8};
  CHECK_EQ_INT(ty__gpu_copy_run(g, &c, back, base, 0, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gpu_sync(g, 0, 0, err, sizeof err), TY_OK);
  int nan = 0;
  for (int i = 0; i < N; i++) nan += isnan(back[i]);
  CHECK_EQ_INT(nan, N);
  /* host -> 0, 0 -> 1 (peer), 1 -> host */
  c = (ty__coh_copy){TY__COH_HOST, TY__COH_DEV(0), 0, N * 8};
  CHECK_EQ_INT(ty__gpu_copy_run(g, &c, h, base, 1, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gpu_stream_wait(g, 1, 0, 0, 1, err, sizeof err), TY_OK);
  c = (ty__coh_copy){TY__COH_DEV(0), TY__COH_DEV(1), 0, N * 8};
  CHECK_EQ_INT(ty__gpu_copy_run(g, &c, h, base, 0, err, sizeof err), TY_OK);
  c = (ty__coh_copy){TY__COH_DEV(1), TY__COH_HOST, 0, N * 8};
  CHECK_EQ_INT(ty__gpu_copy_run(g, &c, back, base, 0, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gpu_sync(g, 1, 0, err, sizeof err), TY_OK);
  CHECK(!memcmp(back, h, N * 8));
  /* zeros into a device range (a never-written store), then its bytes to the host */
  c = (ty__coh_copy){-1, TY__COH_DEV(1), 80, 160};
  CHECK_EQ_INT(ty__gpu_copy_run(g, &c, h, base, 0, err, sizeof err), TY_OK);
  c = (ty__coh_copy){TY__COH_DEV(1), TY__COH_HOST, 0, N * 8};
  CHECK_EQ_INT(ty__gpu_copy_run(g, &c, back, base, 0, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gpu_sync(g, -1, -1, err, sizeof err), TY_OK);
  int bad = 0;
  for (int i = 0; i < N; i++) bad += back[i] != (i >= 10 && i < 20 ? 0.0 : i * 0.5);
  CHECK_EQ_INT(bad, 0);
  /* zeros into the host */
  c = (ty__coh_copy){-1, TY__COH_HOST, 0, 16};
  CHECK_EQ_INT(ty__gpu_copy_run(g, &c, back, base, 0, err, sizeof err), TY_OK);
  CHECK(back[0] == 0 && back[1] == 0 && back[2] == 1.0);
  /* a host address is not device memory: the copy is refused, with why */
  uint64_t wrong[2] = {(uint64_t)(uintptr_t)h, 0};
  c = (ty__coh_copy){TY__COH_HOST, TY__COH_DEV(0), 0, 64};
  CHECK_EQ_INT(ty__gpu_copy_run(g, &c, back, wrong, 0, err, sizeof err), TY_EINVAL);
  CHECK_STR_CONTAINS(err, "is not memory allocated on simulated GPU 0");
  /* so is a range past the end of a block */
  c = (ty__coh_copy){TY__COH_HOST, TY__COH_DEV(0), 0, b0->bytes + 8};
  double *big = calloc(b0->bytes + 8, 1);
  CHECK_EQ_INT(ty__gpu_copy_run(g, &c, big, base, 0, err, sizeof err), TY_EINVAL);
  free(big);
  ty__gpu_free(g, 0, b0, 0);
  ty__gpu_free(g, 1, b1, 0);
  /* a kernel writing past the end of a block is found when the block is freed */
  ty__CUdeviceptr p = 0;
  CHECK_EQ_INT(g->api.CtxSetCurrent(g->dev[0].ctx), TY__CUDA_SUCCESS);
  CHECK_EQ_INT(g->api.MemAlloc(&p, 1000), TY__CUDA_SUCCESS);
  int64_t n = 1, s1 = 1;
  CHECK_EQ_INT(ty__gpu_fill(g, 0, 0, TY_I64, 1, &n, &s1, p + 1024, (ty__fillval){0, 1}, err, sizeof err), TY_OK);
  ty__CUresult r = g->api.MemFree(p);
  CHECK_EQ_INT(r, 700);
  CHECK_STR_CONTAINS(ty__cuda_error(&g->api, r, err, sizeof err), "wrote past the end of the block");
  ty__gpu_close(g);
  free(h);
  free(back);
}

TEST(out_of_memory_on_a_small_budget) {
  if (!have_cxx()) SKIP("no host C++ compiler");
  ty__gpu *g = open_sim(1, (size_t)64 << 20);
  if (!g) return;
  char err[1024];
  ty__gpu_block *a, *b;
  CHECK_EQ_INT(ty__gpu_alloc(g, 0, (size_t)48 << 20, 0, "store #1 (6291456,) f64", &a, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gpu_alloc(g, 0, (size_t)48 << 20, 0, "store #2 (6291456,) f64", &b, err, sizeof err),
               TY_ENOMEM);
  CHECK_STR_CONTAINS(err, "store #2 (6291456,) f64 needs 48.0 MiB");
  ty__gpu_free(g, 0, a, 0);
  /* the simulated memory itself (TYCHO_SIM_MEM) runs out as a GPU's does */
  ty__CUdeviceptr p = 0;
  CHECK_EQ_INT(g->api.CtxSetCurrent(g->dev[0].ctx), TY__CUDA_SUCCESS);
  ty__CUresult r = g->api.MemAlloc(&p, (size_t)5 << 30);
  CHECK_EQ_INT(r, TY__CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_STR_CONTAINS(ty__cuda_error(&g->api, r, err, sizeof err), "simulated GPU 0: 5.0 GiB asked");
  size_t fr = 0, total = 0;
  CHECK_EQ_INT(g->api.MemGetInfo(&fr, &total), TY__CUDA_SUCCESS);
  CHECK_EQ_INT(total, (size_t)4 << 30);
  CHECK(fr <= total && total - fr >= ((size_t)48 << 20)); /* the pool keeps the freed block */
  ty__gpu_close(g);
}

/* ---- the built-in kernels --------------------------------------------------------------------- */

static void gen_case(ty__gpu *g, int kind, ty_dtype t, const void *args) {
  char err[512];
  size_t es = ty_dtype_size(t);
  enum { ROWS = 5, COLS = 45, LD = 50 };
  ty_tile tile;
  memset(&tile, 0, sizeof tile);
  tile.dtype = t;
  /* random: rows 2..6 of a 7 x 45 store through a view with a row gap;
   * arange, linspace (1-D): elements 100.. of 1000 */
  tile.ndim = kind == TY__KFN_RANDOM ? 2 : 1;
  if (tile.ndim == 2) {
    tile.shape[0] = ROWS, tile.shape[1] = COLS, tile.strides[0] = LD, tile.strides[1] = 1;
    tile.lo[0] = 2, tile.gshape[0] = 7, tile.gshape[1] = COLS;
  } else {
    tile.shape[0] = ROWS * COLS, tile.strides[0] = 1, tile.lo[0] = 100, tile.gshape[0] = 1000;
  }
  char *want = calloc(ROWS * LD, es), *got = calloc(ROWS * LD, es);
  tile.data = want;
  ty_task_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.args = &tile;
  ctx.nargs = 1;
  ctx.scalars = args;
  if (kind == TY__KFN_RANDOM) ty__random_variant(&ctx);
  else if (kind == TY__KFN_ARANGE) ty__arange_variant(&ctx);
  else ty__linspace_variant(&ctx);
  ty__gpu_block *b;
  uint64_t p = upload(g, 0, want, ROWS * LD * es, &b); /* the gaps keep the CPU's zeros */
  /* poison the elements the kernel writes first: they must all be written */
  CHECK_EQ_INT(ty__gpu_fill(g, 0, 0, t, tile.ndim, tile.shape, tile.strides, p, (ty__fillval){NAN, 99}, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gpu_generate(g, 0, 0, kind, &tile, p, args, err, sizeof err), TY_OK);
  download(g, 0, got, p, ROWS * LD * es);
  if (memcmp(got, want, ROWS * LD * es)) {
    fprintf(stderr, "generator %d, %s: differs from the CPU\n", kind, ty_dtype_name(t));
    CHECK(!"generated values equal the CPU's");
  }
  ty__gpu_free(g, 0, b, 0);
  free(want);
  free(got);
}

TEST(fill_copy_and_generators_match_cpu) {
  if (!have_cxx()) SKIP("no host C++ compiler");
  ty__gpu *g = open_sim(1, 0);
  if (!g) return;
  char err[512];
  for (int t = 0; t < TY__GPU_NDTYPES; t++) {
    ty__random_args ra = {.seed = 2024, .stream = 3};
    gen_case(g, TY__KFN_RANDOM, (ty_dtype)t, &ra);
    ty__arange_args ai = {0, 0, -7, 3, 1}, af = {0.1, 0.3, 0, 0, 0};
    gen_case(g, TY__KFN_ARANGE, (ty_dtype)t, &ai);
    gen_case(g, TY__KFN_ARANGE, (ty_dtype)t, &af);
    ty__linspace_args la = {-1.0, 300.0, 301.0 / 999, 1000};
    gen_case(g, TY__KFN_LINSPACE, (ty_dtype)t, &la);
  }
  /* fill a strided column block, copy it transposed, copy it whole (the copy engine) */
  enum { R = 20, C = 30 };
  double *a = calloc(R * C, 8), *b = calloc(R * C, 8);
  ty__gpu_block *ba, *bb, *bc;
  uint64_t pa = upload(g, 0, a, R * C * 8, &ba), pb = upload(g, 0, NULL, R * C * 8, &bb);
  uint64_t pc = upload(g, 0, NULL, R * C * 8, &bc);
  int64_t sh[2] = {R, 3}, st[2] = {C, 1};
  CHECK_EQ_INT(ty__gpu_fill(g, 0, 0, TY_F64, 2, sh, st, pa + 5 * 8, (ty__fillval){-1.5, -1}, err, sizeof err), TY_OK);
  int64_t tsh[2] = {C, R}, dst[2] = {R, 1}, src[2] = {1, C}, one[1] = {R * C}, s1[1] = {1};
  CHECK_EQ_INT(ty__gpu_copy(g, 0, 0, 2, tsh, pb, dst, pa, src, 8, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gpu_copy(g, 0, 0, 1, one, pc, s1, pa, s1, 8, err, sizeof err), TY_OK);
  download(g, 0, a, pc, R * C * 8);
  download(g, 0, b, pb, R * C * 8);
  int bad = 0;
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      double w = (j >= 5 && j < 8) ? -1.5 : 0.0;
      bad += a[i * C + j] != w || b[j * R + i] != w;
    }
  CHECK_EQ_INT(bad, 0);
  ty__gpu_free(g, 0, ba, 0);
  ty__gpu_free(g, 0, bb, 0);
  ty__gpu_free(g, 0, bc, 0);
  free(a);
  free(b);
  ty__gpu_close(g);
}

/* Every reduction of every dtype over all elements, each axis and two axes
 * of a (13, 300, 5) store (threads, blocks, and chunked blocks with the
 * finish pass: 19500 elements give 4 chunks), against plain loops. */
TEST(reductions_match_cpu) {
  if (!have_cxx()) SKIP("no host C++ compiler");
  ty__gpu *g = open_sim(1, 0);
  if (!g) return;
  char err[512];
  enum { A = 13, B = 300, C = 5, N = A * B * C };
  int64_t shape[3] = {A, B, C}, in[3] = {B * C, C, 1};
  static const int64_t out_strides[5][3] = {{0, 0, 0}, {0, C, 1}, {C, 0, 1}, {B, 1, 0}, {0, 1, 0}};
  static const ty_reduce_op ops[6] = {TY_RED_SUM, TY_RED_PROD, TY_RED_MIN, TY_RED_MAX, TY_RED_ARGMIN, TY_RED_ARGMAX};
  for (int t = 0; t < TY__GPU_NDTYPES; t++) {
    ty_dtype dt = (ty_dtype)t;
    size_t es = ty_dtype_size(dt);
    char *x = malloc(N * es);
    for (int i = 0; i < N; i++) {
      int64_t v = (int64_t)((i * 2654435761u) % 201) - 100;
      if (dt == TY_U8) v = (v + 100) % 256;
      if (dt == TY_BOOL) v = v > 0;
      if (ty_dtype_is_float(dt)) ty__store_f64(x + i * es, dt, (double)v * 0.125 + (i % 3) * 1e-3);
      else ty__store_i64(x + i * es, dt, v);
    }
    if (ty_dtype_is_float(dt)) ty__store_f64(x + 4321 * es, dt, NAN);
    ty__gpu_block *bx, *bo;
    uint64_t px = upload(g, 0, x, N * es, &bx), po = upload(g, 0, NULL, (size_t)A * B * 8, &bo);
    for (int k = 0; k < 6; k++) {
      ty_reduce_op op = ops[k];
      if (op == TY_RED_PROD && dt != TY_BOOL && dt != TY_I64) continue; /* float overflow: order matters */
      bool arg = op == TY_RED_ARGMIN || op == TY_RED_ARGMAX;
      ty_dtype od = arg ? TY_I64 : (op == TY_RED_SUM || op == TY_RED_PROD) && !ty_dtype_is_float(dt) ? TY_I64 : dt;
      size_t os = ty_dtype_size(od);
      for (int o = 0; o < 5; o++) {
        const int64_t *ost = out_strides[o];
        if (arg && o != 0 && o != 2) continue; /* argmin/argmax: all, or one axis */
        int nout = 1;
        for (int d = 0; d < 3; d++) nout *= ost[d] ? (int)shape[d] : 1;
        char *got = calloc(nout, os);
        CHECK_EQ_INT(ty__gpu_reduce(g, 0, 0, op, dt, 3, shape, px, in, po, ost, false, err, sizeof err), TY_OK);
        download(g, 0, got, po, (size_t)nout * os);
        double *facc = calloc(nout, 8), *fabs_sum = calloc(nout, 8);
        int64_t *iacc = calloc(nout, 8), *best = calloc(nout, 8), *cnt = calloc(nout, 8);
        bool *isnan_ = calloc(nout, 1);
        for (int i = 0; i < nout; i++) {
          facc[i] = op == TY_RED_MIN ? INFINITY : op == TY_RED_MAX ? -INFINITY : 0;
          iacc[i] = op == TY_RED_PROD ? 1 : op == TY_RED_MIN ? INT64_MAX : op == TY_RED_MAX ? INT64_MIN : 0;
          best[i] = -1;
        }
        for (int a0 = 0; a0 < A; a0++)
          for (int b0 = 0; b0 < B; b0++)
            for (int c0 = 0; c0 < C; c0++) {
              int oi = (int)(a0 * ost[0] + b0 * ost[1] + c0 * ost[2]);
              int64_t r = cnt[oi]++;
              const char *p = x + ((size_t)(a0 * B + b0) * C + c0) * es;
              if (ty_dtype_is_float(dt)) {
                double v = ty__load_f64(p, dt);
                if (op == TY_RED_SUM) facc[oi] += v, fabs_sum[oi] += fabs(v);
                else if (!isnan_[oi]) {
                  bool lt = op == TY_RED_MIN || op == TY_RED_ARGMIN;
                  if (isnan(v) || best[oi] < 0 || (lt ? v < facc[oi] : v > facc[oi])) facc[oi] = v, best[oi] = r;
                  if (isnan(v)) isnan_[oi] = true;
                }
              } else {
                int64_t v = ty__load_i64(p, dt);
                if (op == TY_RED_SUM) iacc[oi] = (int64_t)((uint64_t)iacc[oi] + (uint64_t)v);
                else if (op == TY_RED_PROD) iacc[oi] = (int64_t)((uint64_t)iacc[oi] * (uint64_t)v);
                else {
                  bool lt = op == TY_RED_MIN || op == TY_RED_ARGMIN;
                  if (best[oi] < 0 || (lt ? v < iacc[oi] : v > iacc[oi])) iacc[oi] = v, best[oi] = r;
                }
              }
            }
        int bad = 0;
        for (int i = 0; i < nout; i++) {
          const char *gp = got + i * os;
          bool ok;
          if (arg) ok = ty__load_i64(gp, TY_I64) == best[i];
          else if (!ty_dtype_is_float(od)) ok = ty__load_i64(gp, od) == iacc[i];
          else {
            double v = ty__load_f64(gp, od), w = facc[i];
            if (op == TY_RED_SUM && dt == TY_F32) w = (double)(float)w;
            ok = (isnan(v) && isnan(w)) || v == w ||
                 (op == TY_RED_SUM && fabs(v - w) <= (dt == TY_F32 ? 1e-6 : 1e-12) * (fabs_sum[i] + 1));
          }
          if (!ok && bad++ < 3)
            fprintf(stderr, "  %s %s out-strides #%d [%d]: got %g\n", ty_reduce_name(op), ty_dtype_name(dt), o, i,
                    ty__load_f64(gp, od));
        }
        CHECK_EQ_INT(bad, 0);
        free(got), free(facc), free(fabs_sum), free(iacc), free(best), free(cnt), free(isnan_);
      }
    }
    ty__gpu_free(g, 0, bx, 0);
    ty__gpu_free(g, 0, bo, 0);
    free(x);
  }
  ty__gpu_close(g);
}

/* ---- a fused chain, matmul ------------------------------------------------------------------- */

/* out = x > 1 ? x * 3 + (double)y : x over a (R, C) domain whose x is the
 * transposed view of a (C, R) buffer (strided) and y an i32 row broadcast
 * down the columns. */
static ty__gir *chain(int R, int C, uint64_t out, uint64_t x, uint64_t y) {
  ty__gir *ir = calloc(1, sizeof *ir);
  ir->ndim = 2;
  ir->shape[0] = R;
  ir->shape[1] = C;
  ir->nargs = 3;
  ir->args[0] = (ty__garg){TY_F64, {C, 1}, out};
  ir->args[1] = (ty__garg){TY_F64, {1, R}, x};
  ir->args[2] = (ty__garg){TY_I32, {0, 1}, y};
  ir->nconsts = 2;
  ir->consts[0] = (ty__gconst){TY_F64, 3.0, 0};
  ir->consts[1] = (ty__gconst){TY_F64, 1.0, 0};
  ir->ntmps = 4;
  ir->tmps[0] = TY_F64, ir->tmps[1] = TY_F64, ir->tmps[2] = TY_F64, ir->tmps[3] = TY_BOOL;
  ir->nsubs = 5;
  ir->subs[0] = (ty__gsub){TY__G_CAST, 0, TY_F64, TY_I32, 1, {TY__GREF_TMP, 0}, {{TY__GREF_ARG, 2}}};
  ir->subs[1] = (ty__gsub){TY__G_BINARY, TY_OP_MUL, TY_F64, TY_F64, 2, {TY__GREF_TMP, 1}, {{TY__GREF_ARG, 1}, {TY__GREF_CONST, 0}}};
  ir->subs[2] = (ty__gsub){TY__G_BINARY, TY_OP_ADD, TY_F64, TY_F64, 2, {TY__GREF_TMP, 2}, {{TY__GREF_TMP, 1}, {TY__GREF_TMP, 0}}};
  ir->subs[3] = (ty__gsub){TY__G_BINARY, TY_OP_GT, TY_F64, TY_F64, 2, {TY__GREF_TMP, 3}, {{TY__GREF_ARG, 1}, {TY__GREF_CONST, 1}}};
  ir->subs[4] = (ty__gsub){TY__G_WHERE, 0, TY_F64, TY_F64, 3, {TY__GREF_ARG, 0},
                           {{TY__GREF_TMP, 3}, {TY__GREF_TMP, 2}, {TY__GREF_ARG, 1}}};
  return ir;
}

TEST(fused_chain_matches_cpu_and_compiles_once) {
  if (!have_cxx()) SKIP("no host C++ compiler");
  ty__gpu *g = open_sim(1, 0);
  if (!g) return;
  char err[4096];
  for (int rep = 0; rep < 2; rep++) {
    int R = rep ? 77 : 40, C = rep ? 130 : 33;
    double *x = malloc((size_t)R * C * 8), *out = malloc((size_t)R * C * 8);
    int32_t *y = malloc((size_t)C * 4);
    for (int i = 0; i < R * C; i++) x[i] = (i % 17) * 0.37 - 2.0;
    for (int j = 0; j < C; j++) y[j] = j * 7 - 100;
    ty__gpu_block *bx, *by, *bo;
    uint64_t px = upload(g, 0, x, (size_t)R * C * 8, &bx), py = upload(g, 0, y, (size_t)C * 4, &by);
    uint64_t po = upload(g, 0, NULL, (size_t)R * C * 8, &bo);
    ty__gir *ir = chain(R, C, po, px, py);
    ty_status st = ty__gpu_fused(g, 0, 0, ir, err, sizeof err);
    if (st) fprintf(stderr, "%s\n", err);
    CHECK_EQ_INT(st, TY_OK);
    download(g, 0, out, po, (size_t)R * C * 8);
    int bad = 0;
    for (int i = 0; i < R; i++)
      for (int j = 0; j < C; j++) {
        double xv = x[j * R + i];
        volatile double prod = xv * 3.0; /* two roundings, as the kernel (no contraction) */
        double want = xv > 1.0 ? prod + (double)y[j] : xv;
        bad += memcmp(&out[i * C + j], &want, 8) != 0;
      }
    CHECK_EQ_INT(bad, 0);
    ty__gpu_free(g, 0, bx, 0);
    ty__gpu_free(g, 0, by, 0);
    ty__gpu_free(g, 0, bo, 0);
    free(ir);
    free(x);
    free(y);
    free(out);
  }
  CHECK_EQ_INT(g->ptx.compiles, 1); /* one structure, two sizes */
  CHECK_EQ_INT(g->ptx.hits, 1);
  ty__gpu_close(g);
}

TEST(matmul_matches_a_reference) {
  if (!have_cxx()) SKIP("no host C++ compiler");
  ty__gpu *g = open_sim(1, 0);
  if (!g) return;
  CHECK(g->blas_ok);
  char err[512];
  enum { M = 33, K = 17, N = 29 };
  for (int f = 0; f < 2; f++) {
    ty_dtype t = f ? TY_F32 : TY_F64;
    size_t es = ty_dtype_size(t);
    char *a = malloc(M * K * es), *bt = malloc(N * K * es), *c = malloc(M * N * es);
    for (int i = 0; i < M * K; i++) ty__store_f64(a + i * es, t, (i % 13) * 0.5 - 3);
    for (int i = 0; i < N * K; i++) ty__store_f64(bt + i * es, t, (i % 7) * 0.25 - 1);
    ty__gpu_block *ba, *bb, *bc;
    uint64_t pa = upload(g, 0, a, M * K * es, &ba), pb = upload(g, 0, bt, N * K * es, &bb);
    uint64_t pc = upload(g, 0, NULL, M * N * es, &bc);
    /* B given as the transposed view of bt (N x K): strides (1, K) */
    CHECK_EQ_INT(ty__gpu_matmul(g, 0, 0, t, M, N, K, pa, K, 1, pb, 1, K, pc, N, err, sizeof err), TY_OK);
    download(g, 0, c, pc, M * N * es);
    int bad = 0;
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        double s = 0;
        for (int k = 0; k < K; k++) s += ty__load_f64(a + (i * K + k) * es, t) * ty__load_f64(bt + (j * K + k) * es, t);
        double got = ty__load_f64(c + (i * N + j) * es, t);
        bad += fabs(got - s) > (f ? 1e-5 : 1e-12) * (1 + fabs(s));
      }
    CHECK_EQ_INT(bad, 0);
    ty__gpu_free(g, 0, ba, 0);
    ty__gpu_free(g, 0, bb, 0);
    ty__gpu_free(g, 0, bc, 0);
    free(a);
    free(bt);
    free(c);
  }
  CHECK_EQ_INT(ty__gpu_matmul(g, 0, 0, TY_I64, 2, 2, 2, 0, 2, 1, 0, 2, 1, 0, 2, err, sizeof err), TY_EDTYPE);
  ty__gpu_close(g);
}

/* ---- ordering and asynchrony ---------------------------------------------------------------- */

/* Stream 1 uploads, stream 2 waits for it (ty__gpu_stream_wait) and reduces;
 * only stream 2 is synchronised. Repeated: each round's data differ. */
TEST(streams_are_ordered_by_stream_wait) {
  if (!have_cxx()) SKIP("no host C++ compiler");
  ty__gpu *g = open_sim(1, 0);
  if (!g) return;
  char err[512];
  enum { N = 1 << 18 };
  int64_t *x = malloc(N * 8), sum = 0;
  ty__gpu_block *bx, *bo;
  CHECK_EQ_INT(ty__gpu_alloc(g, 0, N * 8, 1, "x", &bx, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gpu_alloc(g, 0, 8, 2, "sum", &bo, err, sizeof err), TY_OK);
  uint64_t base[1] = {bx->ptr};
  int64_t n = N, s1 = 1, z = 0;
  for (int round = 0; round < 4; round++) {
    for (int i = 0; i < N; i++) x[i] = i % 1000 + round;
    ty__coh_copy c = {TY__COH_HOST, TY__COH_DEV(0), 0, N * 8};
    CHECK_EQ_INT(ty__gpu_copy_run(g, &c, x, base, 1, err, sizeof err), TY_OK);
    CHECK_EQ_INT(ty__gpu_stream_wait(g, 0, 2, 0, 1, err, sizeof err), TY_OK);
    CHECK_EQ_INT(ty__gpu_reduce(g, 0, 2, TY_RED_SUM, TY_I64, 1, &n, bx->ptr, &s1, bo->ptr, &z, false, err, sizeof err),
                 TY_OK);
    uint64_t ob[1] = {bo->ptr};
    ty__coh_copy d = {TY__COH_DEV(0), TY__COH_HOST, 0, 8};
    CHECK_EQ_INT(ty__gpu_copy_run(g, &d, &sum, ob, 2, err, sizeof err), TY_OK);
    CHECK_EQ_INT(ty__gpu_sync(g, 0, 2, err, sizeof err), TY_OK);
    /* sum of i % 1000 over 2^18 = 262 full cycles of 499500 + 0..143 */
    CHECK_EQ_INT(sum, 262LL * 499500 + 143 * 144 / 2 + (int64_t)round * N);
    /* the next round's host writes follow the upload: stream 1 is done */
    CHECK_EQ_INT(ty__gpu_sync(g, 0, 1, err, sizeof err), TY_OK);
  }
  ty__gpu_free(g, 0, bx, 1);
  ty__gpu_free(g, 0, bo, 2);
  ty__gpu_close(g);
  free(x);
}

/* A kernel that spins until the host sets a flag: everything queued after
 * it on its stream waits, and the host sees that (deterministically). */
static const char SPIN_SRC[] =
    "struct spin_params { int *flag; unsigned long long n; };\n"
    "extern \"C\" __global__ void spin(const spin_params p) {\n"
    "  while (!__atomic_load_n(p.flag, __ATOMIC_ACQUIRE)) {}\n"
    "}\n";

TEST(host_calls_return_before_the_work_runs) {
  if (!have_cxx()) SKIP("no host C++ compiler");
  ty__gpu *g = open_sim(1, 0);
  if (!g) return;
  char err[1024];
  ty__cuda *api = &g->api;
  ty__CUmodule m = NULL;
  ty__CUfunction f = NULL;
  ty__CUresult r = api->ModuleLoadData(&m, SPIN_SRC);
  if (r) fprintf(stderr, "%s\n", ty__cuda_error(api, r, err, sizeof err));
  CHECK_EQ_INT(r, TY__CUDA_SUCCESS);
  CHECK_EQ_INT(api->ModuleGetFunction(&f, m, "spin"), TY__CUDA_SUCCESS);
  ty__CUfunction none;
  r = api->ModuleGetFunction(&none, m, "absent");
  CHECK_EQ_INT(r, 500);
  CHECK_STR_CONTAINS(ty__cuda_error(api, r, err, sizeof err), "no kernel absent in the module");
  int flag = 0;
  struct {
    int *flag;
    unsigned long long n;
  } params = {&flag, 1};
  enum { N = 512 };
  int64_t *h = malloc(N * 8);
  for (int i = 0; i < N; i++) h[i] = i;
  ty__gpu_block *b;
  uint64_t p = upload(g, 0, h, N * 8, &b);
  void *args[1] = {&params};
  ty__CUstream s = g->dev[0].stream[0];
  CHECK_EQ_INT(api->LaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL), TY__CUDA_SUCCESS);
  params.flag = NULL; /* parameters were copied at the launch */
  /* a fill, then a copy to the host, queued behind the spinning kernel */
  int64_t n = N, s1 = 1;
  CHECK_EQ_INT(ty__gpu_fill(g, 0, 0, TY_I64, 1, &n, &s1, p, (ty__fillval){0, -5}, err, sizeof err), TY_OK);
  uint64_t base[1] = {p};
  ty__coh_copy c = {TY__COH_DEV(0), TY__COH_HOST, 0, N * 8};
  CHECK_EQ_INT(ty__gpu_copy_run(g, &c, h, base, 0, err, sizeof err), TY_OK);
  ty__CUevent ev;
  CHECK_EQ_INT(api->EventCreate(&ev, 0), TY__CUDA_SUCCESS);
  CHECK_EQ_INT(api->EventRecord(ev, s), TY__CUDA_SUCCESS);
  /* nothing ran: without a synchronisation the host still sees its old data */
  CHECK_EQ_INT(h[7], 7);
  CHECK_EQ_INT(api->EventQuery(ev), TY__CUDA_ERROR_NOT_READY);
  __atomic_store_n(&flag, 1, __ATOMIC_RELEASE);
  CHECK_EQ_INT(api->EventSynchronize(ev), TY__CUDA_SUCCESS);
  CHECK_EQ_INT(api->EventQuery(ev), TY__CUDA_SUCCESS);
  int bad = 0;
  for (int i = 0; i < N; i++) bad += h[i] != -5;
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(api->EventDestroy(ev), TY__CUDA_SUCCESS);
  /* timing events measure wall time */
  ty__CUevent e0, e1;
  float ms = -1;
  CHECK_EQ_INT(api->EventCreate(&e0, 0), TY__CUDA_SUCCESS);
  CHECK_EQ_INT(api->EventCreate(&e1, 0), TY__CUDA_SUCCESS);
  CHECK_EQ_INT(api->EventRecord(e0, s), TY__CUDA_SUCCESS);
  CHECK_EQ_INT(api->EventRecord(e1, s), TY__CUDA_SUCCESS);
  CHECK_EQ_INT(api->EventSynchronize(e1), TY__CUDA_SUCCESS);
  CHECK_EQ_INT(api->EventElapsedTime(&ms, e0, e1), TY__CUDA_SUCCESS);
  CHECK(ms >= 0 && ms < 10000);
  api->EventDestroy(e0);
  api->EventDestroy(e1);
  ty__gpu_free(g, 0, b, 0);
  CHECK_EQ_INT(api->ModuleUnload(m), TY__CUDA_SUCCESS);
  ty__gpu_close(g);
  free(h);
}

/* TYCHO_SIM_LAZY=1: streams run only what the host waits for, so a read
 * without ty__gpu_sync sees stale data every time. */
TEST(lazy_streams_make_a_missing_sync_certain) {
  if (!have_cxx()) SKIP("no host C++ compiler");
  setenv("TYCHO_SIM_LAZY", "1", 1);
  ty__gpu *g = open_sim(1, 0);
  unsetenv("TYCHO_SIM_LAZY");
  if (!g) return;
  char err[512];
  enum { N = 4096 };
  int64_t *h = malloc(N * 8), *back = malloc(N * 8);
  for (int i = 0; i < N; i++) h[i] = i, back[i] = -7;
  ty__gpu_block *b;
  CHECK_EQ_INT(ty__gpu_alloc(g, 0, N * 8, 0, "x", &b, err, sizeof err), TY_OK);
  uint64_t base[1] = {b->ptr};
  ty__coh_copy up = {TY__COH_HOST, TY__COH_DEV(0), 0, N * 8}, down = {TY__COH_DEV(0), TY__COH_HOST, 0, N * 8};
  int64_t n = N, tail = N - 100, s1 = 1, z = 0;
  CHECK_EQ_INT(ty__gpu_copy_run(g, &up, h, base, 0, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gpu_fill(g, 0, 0, TY_I64, 1, &tail, &s1, b->ptr + 8 * 100, (ty__fillval){0, 5}, err, sizeof err),
               TY_OK);
  CHECK_EQ_INT(ty__gpu_copy_run(g, &down, back, base, 0, err, sizeof err), TY_OK);
  /* no synchronisation: nothing ran, the host buffer is as it was */
  int stale = 0;
  for (int i = 0; i < N; i++) stale += back[i] == -7;
  CHECK_EQ_INT(stale, N);
  CHECK_EQ_INT(ty__gpu_sync(g, 0, 0, err, sizeof err), TY_OK);
  int bad = 0;
  for (int i = 0; i < N; i++) bad += back[i] != (i < 100 ? i : 5);
  CHECK_EQ_INT(bad, 0);
  /* a stream waiting on another makes that one run: stream 1 reduces what stream 2 filled */
  ty__gpu_block *bo;
  CHECK_EQ_INT(ty__gpu_alloc(g, 0, 8, 1, "sum", &bo, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gpu_fill(g, 0, 2, TY_I64, 1, &n, &s1, b->ptr, (ty__fillval){0, 3}, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gpu_stream_wait(g, 0, 1, 0, 2, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gpu_reduce(g, 0, 1, TY_RED_SUM, TY_I64, 1, &n, b->ptr, &s1, bo->ptr, &z, false, err, sizeof err),
               TY_OK);
  int64_t sum = 0;
  uint64_t ob[1] = {bo->ptr};
  ty__coh_copy d1 = {TY__COH_DEV(0), TY__COH_HOST, 0, 8};
  CHECK_EQ_INT(ty__gpu_copy_run(g, &d1, &sum, ob, 1, err, sizeof err), TY_OK);
  CHECK_EQ_INT(sum, 0);
  CHECK_EQ_INT(ty__gpu_sync(g, 0, 1, err, sizeof err), TY_OK); /* only stream 1 */
  CHECK_EQ_INT(sum, 3 * N);
  ty__gpu_free(g, 0, b, 0);
  ty__gpu_free(g, 0, bo, 1);
  ty__gpu_close(g);
  free(h);
  free(back);
}

TEST(compile_errors_name_the_compiler) {
  if (!have_cxx()) SKIP("no host C++ compiler");
  ty__gpu *g = open_sim(1, 0);
  if (!g) return;
  char err[2048];
  ty__CUmodule m = NULL;
  ty__CUresult r =
      g->api.ModuleLoadData(&m, "extern \"C\" __global__ void k(const int p) { undefined_thing(p); }\n");
  CHECK_EQ_INT(r, 300);
  CHECK(m == NULL);
  ty__cuda_error(&g->api, r, err, sizeof err);
  CHECK_STR_CONTAINS(err, "failed (the simulated GPU compiles CUDA C for the host)");
  CHECK_STR_CONTAINS(err, "undefined_thing");
  /* PTX is not what a simulated GPU loads */
  r = g->api.ModuleLoadData(&m, "//\n.version 8.0\n.target sm_90\n");
  CHECK_EQ_INT(r, 200);
  CHECK_STR_CONTAINS(ty__cuda_error(&g->api, r, err, sizeof err), "runs CUDA C source");
  ty__gpu_close(g);
}

/* ---- a mini executor: what exec.c will do ------------------------------------------------------- *
 *
 * A store of N f64 on the host, split in two halves, one per simulated GPU:
 * each device acquires its half (the coherence tracker says what to copy),
 * runs y = 2 x + 1 in place as a fused kernel, and the host reads the whole
 * store back (copies from both devices, then a sync of each). */
static void mini_executor(bool lazy) {
  if (lazy) setenv("TYCHO_SIM_LAZY", "1", 1);
  ty__gpu *g = open_sim(2, 0);
  unsetenv("TYCHO_SIM_LAZY");
  if (!g) return;
  char err[2048];
  enum { N = 10000 };
  const uint64_t bytes = N * 8, half = bytes / 2;
  double *h = malloc(bytes);
  for (int i = 0; i < N; i++) h[i] = i;
  ty__coh_obj o;
  ty__coh_copies cp = {0};
  ty__coh_init(&o, bytes, 1u << TY__COH_HOST);
  /* one device allocation per device, the store's image there (dev_base) */
  ty__gpu_block *blk[2];
  uint64_t dev_base[TY_MAX_GPUS] = {0};
  for (int d = 0; d < 2; d++) {
    CHECK_EQ_INT(ty__gpu_alloc(g, d, bytes, 0, "store #1 (10000,) f64", &blk[d], err, sizeof err), TY_OK);
    dev_base[d] = blk[d]->ptr;
  }
  for (int d = 0; d < 2; d++) {
    uint64_t lo = d * half, hi = lo + half;
    ty__coh_copies_reset(&cp);
    CHECK_EQ_INT(ty__coh_acquire(&o, lo, hi, TY__COH_DEV(d), TY__COH_READWRITE, &cp), TY_OK);
    CHECK_EQ_INT(cp.n, 1); /* host -> device d, its half */
    for (int k = 0; k < cp.n; k++)
      CHECK_EQ_INT(ty__gpu_copy_run(g, &cp.v[k], h, dev_base, 0, err, sizeof err), TY_OK);
    /* the piece's fused kernel on the same stream: ordered after its copy */
    ty__gir *ir = calloc(1, sizeof *ir);
    ir->ndim = 1;
    ir->shape[0] = N / 2;
    ir->nargs = 1;
    ir->args[0] = (ty__garg){TY_F64, {1}, dev_base[d] + lo};
    ir->nconsts = 2;
    ir->consts[0] = (ty__gconst){TY_F64, 2.0, 0};
    ir->consts[1] = (ty__gconst){TY_F64, 1.0, 0};
    ir->ntmps = 1;
    ir->tmps[0] = TY_F64;
    ir->nsubs = 2;
    ir->subs[0] = (ty__gsub){TY__G_BINARY, TY_OP_MUL, TY_F64, TY_F64, 2, {TY__GREF_TMP, 0}, {{TY__GREF_ARG, 0}, {TY__GREF_CONST, 0}}};
    ir->subs[1] = (ty__gsub){TY__G_BINARY, TY_OP_ADD, TY_F64, TY_F64, 2, {TY__GREF_ARG, 0}, {{TY__GREF_TMP, 0}, {TY__GREF_CONST, 1}}};
    ty_status st = ty__gpu_fused(g, d, 0, ir, err, sizeof err);
    if (st) fprintf(stderr, "%s\n", err);
    CHECK_EQ_INT(st, TY_OK);
    free(ir);
  }
  /* the host reads everything: one copy from each device, then wait for both */
  ty__coh_copies_reset(&cp);
  CHECK_EQ_INT(ty__coh_acquire(&o, 0, bytes, TY__COH_HOST, TY__COH_READ, &cp), TY_OK);
  CHECK_EQ_INT(cp.n, 2);
  for (int k = 0; k < cp.n; k++) CHECK_EQ_INT(ty__gpu_copy_run(g, &cp.v[k], h, dev_base, 0, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gpu_sync(g, -1, -1, err, sizeof err), TY_OK);
  int bad = 0;
  for (int i = 0; i < N; i++) bad += h[i] != 2.0 * i + 1;
  CHECK_EQ_INT(bad, 0);
  CHECK(ty__coh_valid(&o, 0, bytes, TY__COH_HOST));
  for (int d = 0; d < 2; d++) ty__gpu_free(g, d, blk[d], 0);
  ty__coh_copies_free(&cp);
  ty__coh_free(&o);
  ty__gpu_close(g);
  free(h);
}

/* eagerly, and with lazy streams (only what is waited for runs) */
TEST(mini_executor_two_devices) {
  if (!have_cxx()) SKIP("no host C++ compiler");
  mini_executor(false);
  mini_executor(true);
}

static const check_case cases[] = {
    CASE(gpus_parse_accepts_sim_n),
    CASE(sim_devices_are_discovered_as_simulated),
    CASE(device_memory_is_poisoned_and_copies_run_every_way),
    CASE(out_of_memory_on_a_small_budget),
    CASE(fill_copy_and_generators_match_cpu),
    CASE(reductions_match_cpu),
    CASE(fused_chain_matches_cpu_and_compiles_once),
    CASE(matmul_matches_a_reference),
    CASE(streams_are_ordered_by_stream_wait),
    CASE(host_calls_return_before_the_work_runs),
    CASE(lazy_streams_make_a_missing_sync_certain),
    CASE(compile_errors_name_the_compiler),
    CASE(mini_executor_two_devices),
};

int main(int argc, char **argv) {
  int rc = check_run(argc, argv, cases, sizeof cases / sizeof cases[0]);
  return rc == 0 && argc > 1 && skipped ? 77 : rc;
}
