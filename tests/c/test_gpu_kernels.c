/*
 * test_gpu_kernels.c — running work on GPUs (gpu_kernels.c): launch plans
 * and the embedded fatbins on any machine; on a GPU, the kernels against
 * the CPU kernels (bit for bit where the operation is exact, within a few
 * ULPs for transcendentals and float sums), the PTX cache across launches,
 * the coherence copies, out-of-memory on a small --fbmem, and cuBLAS.
 *
 * Cases named gpu_* need a GPU: without one they run on a simulated GPU
 * (--gpus sim:1, gpu_sim.c: the same entry points, kernels compiled for the
 * host), and without a host C++ compiler either they print why and are
 * skipped (exit code 77 when run alone: CTest's SKIP_RETURN_CODE).
 */
#include "check.h"
#include "gpu_test_setup.h"

#include "gpu_kernels.h"
#include "gpu_sim.h"
#include "tycho/random.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- plans, on any machine ------------------------------------------------------------ */

TEST(collapse_merges_what_every_operand_walks_contiguously) {
  int64_t shape[4] = {3, 1, 4, 5}, st[2][TY_MAX_RANK] = {{20, 99, 5, 1}, {20, 7, 5, 1}};
  CHECK_EQ_INT(ty__knd_collapse(4, shape, 2, st), 1);
  CHECK_EQ_INT(shape[0], 60);
  CHECK_EQ_INT(st[0][0], 1);
  /* a transposed second operand keeps the dims apart */
  int64_t shape2[2] = {4, 5}, st2[2][TY_MAX_RANK] = {{5, 1}, {1, 4}};
  CHECK_EQ_INT(ty__knd_collapse(2, shape2, 2, st2), 2);
  /* inner blocks of grids stacked without gaps: the two outer dims merge, the rows stay */
  int64_t shape3[3] = {2, 4, 4}, st3[1][TY_MAX_RANK] = {{24, 6, 1}};
  CHECK_EQ_INT(ty__knd_collapse(3, shape3, 1, st3), 2);
  CHECK_EQ_INT(shape3[0], 8);
  CHECK_EQ_INT(st3[0][0], 6);
  int64_t one[2] = {1, 1}, st4[1][TY_MAX_RANK] = {{3, 1}};
  CHECK_EQ_INT(ty__knd_collapse(2, one, 1, st4), 0);
}

TEST(reduction_plans) {
  ty_kred p;
  int v;
  unsigned gx, gy;
  /* a full sum of 10^6 contiguous elements on 132 SMs: blocks, 244 chunks of >= 4096 */
  int64_t n = 1000000, s1 = 1, z = 0;
  ty__kred_plan(1, &n, &s1, &z, 132, &p, &v, &gx, &gy);
  CHECK_EQ_INT(v, TY__KRED_BLOCKS);
  CHECK_EQ_INT(p.nout, 1);
  CHECK_EQ_INT(p.nred, n);
  CHECK_EQ_INT(p.ondim, 0);
  CHECK_EQ_INT(p.rndim, 1);
  CHECK_EQ_INT(p.chunks, 244);
  CHECK_EQ_INT(gx, 244);
  CHECK_EQ_INT(gy, 1);
  /* a full reduction of a 2-D contiguous matrix is one run too */
  int64_t sh[2] = {1000, 500}, in[2] = {500, 1}, all0[2] = {0, 0};
  ty__kred_plan(2, sh, in, all0, 132, &p, &v, &gx, &gy);
  CHECK_EQ_INT(p.rndim, 1);
  CHECK_EQ_INT(p.nred, 500000);
  /* rows (reduce axis 1): a block per row */
  int64_t rows_out[2] = {1, 0};
  ty__kred_plan(2, sh, in, rows_out, 132, &p, &v, &gx, &gy);
  CHECK_EQ_INT(v, TY__KRED_BLOCKS);
  CHECK_EQ_INT(p.nout, 1000);
  CHECK_EQ_INT(p.nred, 500);
  CHECK_EQ_INT(p.chunks, 1);
  CHECK_EQ_INT(gy, 1000);
  CHECK_EQ_INT(p.ostride_in[0], 500);
  CHECK_EQ_INT(p.ostride_out[0], 1);
  CHECK_EQ_INT(p.rstride[0], 1);
  /* a leading axis of a wide matrix: a thread per column (coalesced) */
  int64_t wide[2] = {64, 100000}, win[2] = {100000, 1}, cols_out[2] = {0, 1};
  ty__kred_plan(2, wide, win, cols_out, 132, &p, &v, &gx, &gy);
  CHECK_EQ_INT(v, TY__KRED_THREADS);
  CHECK_EQ_INT(p.nout, 100000);
  CHECK_EQ_INT(p.rstride[0], 100000);
  /* few elements per output: threads */
  int64_t tall[2] = {1000000, 8}, tin[2] = {8, 1};
  ty__kred_plan(2, tall, tin, rows_out, 132, &p, &v, &gx, &gy);
  CHECK_EQ_INT(v, TY__KRED_THREADS);
  CHECK_EQ_INT(gx, (1000000 + 255) / 256);
}

TEST(fatbins_are_embedded_when_built_with_nvcc) {
  size_t nf = 0, nr = 0;
  const unsigned char *f = ty__gpu_fatbin("fill", &nf), *r = ty__gpu_fatbin("reduce", &nr);
  if (!f) SKIP("built without nvcc (TYCHO_CUDA=OFF or no CUDA toolkit)");
  CHECK(nf > 4096 && r && nr > 4096);
  /* the fatbin header's magic, 0xBA55ED50 */
  CHECK(f[0] == 0x50 && f[1] == 0xED && f[2] == 0x55 && f[3] == 0xBA);
  CHECK(r[0] == 0x50 && r[1] == 0xED && r[2] == 0x55 && r[3] == 0xBA);
  CHECK(((uintptr_t)f & 63) == 0);
  size_t n0;
  CHECK(ty__gpu_fatbin("nothing", &n0) == NULL && n0 == 0);
}

TEST(opening_without_a_driver_gives_a_cpu_only_runtime) {
  setenv("TYCHO_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  ty__gpu *g = NULL;
  char err[512] = "";
  CHECK_EQ_INT(ty__gpu_open(0, 0, &g, err, sizeof err), TY_OK);
  CHECK(g != NULL);
  if (g) {
    CHECK_EQ_INT(g->ndev, 0);
    CHECK_STR_CONTAINS(g->list.why, "could not be loaded");
    /* every entry point refuses cleanly */
    ty__gpu_block *b;
    CHECK_EQ_INT(ty__gpu_alloc(g, 0, 100, 0, "x", &b, err, sizeof err), TY_EINVAL);
    CHECK_STR_CONTAINS(err, "GPU 0 is not in use");
    ty__gpu_close(g);
  }
  CHECK_EQ_INT(ty__gpu_open(2, 0, &g, err, sizeof err), TY_EINVAL);
  CHECK(g == NULL);
  CHECK_STR_CONTAINS(err, "--gpus 2: no GPU was found");
  unsetenv("TYCHO_LIBCUDA");
}

TEST(cublas_without_a_driver_fails_cleanly) {
  ty__blas b;
  char why[256];
  if (ty__blas_load(&b, why, sizeof why) != TY_OK) SKIP("%s", why);
  char err[256] = "";
  ty__cuda api;
  if (ty__cuda_load(&api, NULL, why, sizeof why) == TY_OK) {
    ty__cuda_unload(&api); /* a driver is present: only the dtype refusal below applies */
  } else {
    void *h = (void *)1;
    CHECK(ty__blas_handle(&b, &h, err, sizeof err) != TY_OK);
    CHECK(h == NULL);
    CHECK_STR_CONTAINS(err, "cublasCreate failed");
  }
  /* integers are refused before cuBLAS is asked (no handle needed) */
  CHECK_EQ_INT(ty__blas_gemm(&b, NULL, NULL, TY_I64, 2, 2, 2, 0, 2, 1, 0, 2, 1, 0, 2, err, sizeof err),
               TY_EDTYPE);
  ty__blas_unload(&b);
}

/* ---- the built-in kernels, emulated on the CPU ------------------------------------------------ *
 *
 * fill.cu and reduce.cu compiled as host C++ (a shim maps __global__ etc. away
 * and gives each "block" one thread), driven through the REAL launchers of
 * gpu_kernels.c by a fake driver table whose device memory is host memory and
 * whose cuLaunchKernel walks the grid block by block. This checks the launch
 * plans, the parameter structs and the kernels' arithmetic against the CPU
 * kernels without a GPU; what it cannot check is the GPU itself (threads,
 * shared memory, the real driver). */

static const char EMU_SHIM[] =
    "#include <math.h>\n#include <string.h>\n"
    "#define __global__\n#define __device__\n#define __forceinline__ inline\n"
    "#define __launch_bounds__(x)\n#define __shared__ static\n#define __syncthreads() ((void)0)\n"
    TY__SIM_RN_SHIM /* the GPU's _rn intrinsics, rounded one by one (-ffp-contract=off) */
    "struct ty_emu_dim { unsigned x, y, z; };\n"
    "static ty_emu_dim blockIdx, threadIdx, blockDim = {1, 1, 1}, gridDim = {1, 1, 1};\n"
    "extern \"C\" void ty_emu_set(unsigned bx, unsigned by, unsigned gx, unsigned gy) {\n"
    "  blockIdx.x = bx; blockIdx.y = by; gridDim.x = gx; gridDim.y = gy;\n}\n";

enum { EMU_FILL, EMU_COPY, EMU_GEN, EMU_RED };
typedef struct emu_fn {
  void (*host)(void);
  void (*set)(unsigned, unsigned, unsigned, unsigned);
  int kind;
} emu_fn;

static ty__CUresult emu_launch(ty__CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shmem, ty__CUstream s, void **params,
                               void **extra) {
  (void)gz, (void)bx, (void)by, (void)bz, (void)shmem, (void)s, (void)extra;
  const emu_fn *e = (const emu_fn *)f;
  if (!e || !e->host) return 500; /* CUDA_ERROR_NOT_FOUND */
  for (unsigned y = 0; y < gy; y++)
    for (unsigned x = 0; x < gx; x++) {
      e->set(x, y, gx, gy);
      switch (e->kind) {
      case EMU_FILL: ((void (*)(ty_kfill))(void *)e->host)(*(const ty_kfill *)params[0]); break;
      case EMU_COPY: ((void (*)(ty_kcopy))(void *)e->host)(*(const ty_kcopy *)params[0]); break;
      case EMU_GEN: ((void (*)(ty_kgen))(void *)e->host)(*(const ty_kgen *)params[0]); break;
      default: ((void (*)(ty_kred))(void *)e->host)(*(const ty_kred *)params[0]); break;
      }
    }
  return 0;
}
static ty__CUresult emu_ok_ctx(ty__CUcontext c) { (void)c; return 0; }
static ty__CUresult emu_dtod(ty__CUdeviceptr d, ty__CUdeviceptr s, size_t n, ty__CUstream st) {
  (void)st;
  memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
  return 0;
}
static ty__CUresult emu_ev_create(ty__CUevent *e, unsigned f) { (void)f; *e = (ty__CUevent)(uintptr_t)1; return 0; }
static ty__CUresult emu_ev_record(ty__CUevent e, ty__CUstream s) { (void)e, (void)s; return 0; }
static ty__CUresult emu_ev_destroy(ty__CUevent e) { (void)e; return 0; }
static int emu_alloc(void *ud, int dev, size_t bytes, uint64_t *ptr) {
  (void)ud, (void)dev;
  void *p = calloc(1, bytes);
  *ptr = (uint64_t)(uintptr_t)p;
  return p ? 0 : 2;
}
static void emu_free(void *ud, int dev, uint64_t ptr, size_t bytes) {
  (void)ud, (void)dev, (void)bytes;
  free((void *)(uintptr_t)ptr);
}
static bool emu_done(void *ud, void *ev) { (void)ud, (void)ev; return true; }

static emu_fn emu_fns[TY__KFN_N], emu_red[TY__KRED_N][TY_NREDUCE][TY_NDTYPES];

/* Whether a host C++ compiler is there, but a .cu did not compile with it:
 * the emulated tests then fail rather than skip (fill.cu's _rn intrinsics,
 * missing from the shim, once made them skip silently). */
static bool emu_broken;

/* Compile a .cu of runtime/src/cuda for the host; NULL when that fails. */
static void *emu_compile(const char *cu) {
  const char *me = __FILE__, *cut = strstr(me, "tests/c/test_gpu_kernels.c");
  if (!cut || system("c++ --version >/dev/null 2>&1") != 0) return NULL;
  emu_broken = true; /* until it loads */
  char root[512], dir[64] = "/tmp/ty_gpu_emu_XXXXXX", cmd[2048], path[600];
  snprintf(root, sizeof root, "%.*s", (int)(cut - me), me);
  if (!mkdtemp(dir)) return NULL;
  snprintf(path, sizeof path, "%s/shim.h", dir);
  FILE *f = fopen(path, "w");
  if (!f) return NULL;
  fputs(EMU_SHIM, f);
  fclose(f);
  snprintf(path, sizeof path, "%s/math_constants.h", dir);
  f = fopen(path, "w");
  if (!f) return NULL;
  fputs("#define CUDART_INF HUGE_VAL\n#define CUDART_INF_F HUGE_VALF\n", f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "c++ -std=c++17 -O0 -ffp-contract=off -w -fPIC -shared -x c++ -include %s/shim.h -I%s "
           "-I%sruntime/src/cuda -o %s/%s.so %sruntime/src/cuda/%s.cu",
           dir, dir, root, dir, cu, root, cu);
  if (system(cmd) != 0) return NULL;
  snprintf(path, sizeof path, "%s/%s.so", dir, cu);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  emu_broken = !h;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return h;
}

/* A fake ty__gpu whose one device runs the emulated kernels. */
static ty__gpu *emu_gpu(char *why, size_t len) {
  void *hf = emu_compile("fill"), *hr = hf ? emu_compile("reduce") : NULL;
  if (!hf || !hr) {
    snprintf(why, len, emu_broken ? "c++ did not compile the CUDA kernels for the host (above)"
                                  : "no host C++ compiler (c++) to emulate the CUDA kernels");
    return NULL;
  }
  emu_broken = false;
  ty__gpu *g = calloc(1, sizeof *g);
  g->ndev = 1;
  g->builtins_ok = true;
  g->api.CtxSetCurrent = emu_ok_ctx;
  g->api.LaunchKernel = emu_launch;
  g->api.MemcpyDtoDAsync = emu_dtod;
  g->api.EventCreate = emu_ev_create;
  g->api.EventRecord = emu_ev_record;
  g->api.EventDestroy = emu_ev_destroy;
  ty__gpu_dev *dv = &g->dev[0];
  dv->info.sms = 4; /* small grids: the emulation walks every block */
  snprintf(dv->info.name, sizeof dv->info.name, "emulated");
  ty__dev_ops ops = {NULL, emu_alloc, emu_free, emu_done, NULL};
  ty__gpu_pool_init(&dv->pool, 0, "emulated", (size_t)1 << 30, &ops);
  void (*setf)(unsigned, unsigned, unsigned, unsigned), (*setr)(unsigned, unsigned, unsigned, unsigned);
  *(void **)&setf = dlsym(hf, "ty_emu_set");
  *(void **)&setr = dlsym(hr, "ty_emu_set");
  static const char *const fill_names[TY__KFN_N] = {"ty_k_fill", "ty_k_copy", "ty_k_random", "ty_k_arange",
                                                    "ty_k_linspace"};
  static const int kinds[TY__KFN_N] = {EMU_FILL, EMU_COPY, EMU_GEN, EMU_GEN, EMU_GEN};
  for (int k = 0; k < TY__KFN_N; k++) {
    emu_fns[k] = (emu_fn){NULL, setf, kinds[k]};
    *(void **)&emu_fns[k].host = dlsym(hf, fill_names[k]);
    dv->fn[k] = (ty__CUfunction)&emu_fns[k];
  }
  static const char *const rn[TY_NREDUCE] = {"sum", "prod", "min", "max", NULL, "argmin", "argmax"};
  static const char *const vn[TY__KRED_N] = {"blocks", "finish", "threads"};
  static const char *const dn[TY_NDTYPES] = {"f64", "f32", "i64", "i32", "u8", "bool"};
  for (int v = 0; v < TY__KRED_N; v++)
    for (int op = 0; op < TY_NREDUCE; op++)
      for (int t = 0; t < TY__GPU_NDTYPES && rn[op]; t++) {
        char name[64];
        snprintf(name, sizeof name, "ty_k_red_%s_%s_%s", vn[v], rn[op], dn[t]);
        emu_red[v][op][t] = (emu_fn){NULL, setr, EMU_RED};
        *(void **)&emu_red[v][op][t].host = dlsym(hr, name);
        dv->red[v][op][t] = (ty__CUfunction)&emu_red[v][op][t];
      }
  return g;
}

static void emu_close(ty__gpu *g) {
  CHECK_EQ_INT(ty__gpu_pool_destroy(&g->dev[0].pool), 0);
  free(g);
}

/* Whether this build's CPU arange computes start + i*step as one FMA: the
 * GPU kernels always do, and kernels_fill.c calls fma() at every
 * instruction-set level, so this holds on every build (kept as a check). */
static bool cpu_arange_is_fma(void) {
  const double start = 0.1, step = 0.3;
  for (int64_t i = 1; i < 100000; i++) {
    volatile double prod = (double)i * step;
    double plain = start + prod, fused = fma((double)i, step, start);
    if (plain == fused) continue;
    double v = 0;
    ty_tile tile;
    memset(&tile, 0, sizeof tile);
    tile.dtype = TY_F64;
    tile.ndim = 1;
    tile.shape[0] = 1;
    tile.strides[0] = 1;
    tile.lo[0] = i;
    tile.gshape[0] = i + 1;
    tile.data = (char *)&v;
    ty__arange_args aa = {start, step, 0, 0, 0};
    ty_task_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.args = &tile;
    ctx.nargs = 1;
    ctx.scalars = &aa;
    ty__arange_variant(&ctx);
    return v == fused;
  }
  return true;
}

static void emu_gen_case(ty__gpu *g, int kind, ty_dtype t, const void *args) {
  char err[512];
  /* rows 2..6 of a 7 x 45 store, written through a view with a row gap */
  size_t es = ty_dtype_size(t);
  enum { ROWS = 5, COLS = 45, LD = 50 };
  ty_tile tile;
  memset(&tile, 0, sizeof tile);
  tile.dtype = t;
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
  CHECK_EQ_INT(ty__gpu_generate(g, 0, 0, kind, &tile, (uint64_t)(uintptr_t)got, args, err, sizeof err), TY_OK);
  bool float_path = kind == TY__KFN_LINSPACE || (kind == TY__KFN_ARANGE && !((const ty__arange_args *)args)->exact);
  if (float_path && !cpu_arange_is_fma()) {
    static bool said;
    if (!said) printf("note: this build's CPU arange/linspace do not use an FMA: float-path values not compared\n");
    said = true;
  } else if (memcmp(got, want, ROWS * LD * es)) {
    fprintf(stderr, "generator %d, %s: differs from the CPU\n", kind, ty_dtype_name(t));
    CHECK(!"generated values equal the CPU's");
  }
  free(want);
  free(got);
}

TEST(builtin_kernels_emulated_match_cpu_generators_fill_copy) {
  char why[256];
  ty__gpu *g = emu_gpu(why, sizeof why);
  CHECK(!emu_broken); /* c++ is there: fill.cu and reduce.cu must compile */
  if (!g) SKIP("%s", why);
  char err[512];
  for (int t = 0; t < TY__GPU_NDTYPES; t++) {
    ty__random_args ra = {.seed = 2024, .stream = 3};
    emu_gen_case(g, TY__KFN_RANDOM, (ty_dtype)t, &ra);
    /* the distributions of tycho/random.h: float ones on f64/f32, integers
     * on i64/i32/u8 (a range that rejects often, and 2^64) */
    if (ty_dtype_is_float((ty_dtype)t)) {
      ty__random_args du = {.seed = 7, .stream = 1, .kind = TY_RANDOM_UNIFORM, .a = -2.0, .b = 3.0};
      ty__random_args dn = {.seed = 7, .stream = 2, .kind = TY_RANDOM_NORMAL, .a = 1.5, .b = 0.25};
      ty__random_args de = {.seed = 7, .stream = 3, .kind = TY_RANDOM_EXPONENTIAL, .a = 2.0};
      ty__random_args d1 = {.seed = 7, .stream = 4, .kind = TY_RANDOM_UNIFORM, .a = 1.0, .b = 1.0 + 0x1.0p-50};
      emu_gen_case(g, TY__KFN_RANDOM, (ty_dtype)t, &du);
      emu_gen_case(g, TY__KFN_RANDOM, (ty_dtype)t, &dn);
      emu_gen_case(g, TY__KFN_RANDOM, (ty_dtype)t, &de);
      emu_gen_case(g, TY__KFN_RANDOM, (ty_dtype)t, &d1);
    } else if (t != TY_BOOL) {
      ty__random_args di = {.seed = 7, .stream = 5, .kind = TY_RANDOM_INTEGERS, .lo = -5, .range = 11};
      ty__random_args dr = {.seed = 7, .stream = 6, .kind = TY_RANDOM_INTEGERS, .lo = 0,
                            .range = (UINT64_C(1) << 63) + 12345};
      ty__random_args dw = {.seed = 7, .stream = 7, .kind = TY_RANDOM_INTEGERS, .lo = INT64_MIN, .range = 0};
      emu_gen_case(g, TY__KFN_RANDOM, (ty_dtype)t, &di);
      emu_gen_case(g, TY__KFN_RANDOM, (ty_dtype)t, &dr);
      emu_gen_case(g, TY__KFN_RANDOM, (ty_dtype)t, &dw);
    }
    ty__arange_args ai = {0, 0, -7, 3, 1}, af = {0.1, 0.3, 0, 0, 0};
    emu_gen_case(g, TY__KFN_ARANGE, (ty_dtype)t, &ai);
    emu_gen_case(g, TY__KFN_ARANGE, (ty_dtype)t, &af);
    ty__linspace_args la = {-1.0, 300.0, 301.0 / 999, 1000};
    emu_gen_case(g, TY__KFN_LINSPACE, (ty_dtype)t, &la);
  }
  /* fill a strided column block, copy it transposed */
  enum { R = 20, C = 30 };
  double *a = calloc(R * C, 8), *b = calloc(R * C, 8);
  int64_t sh[2] = {R, 3}, st[2] = {C, 1};
  CHECK_EQ_INT(ty__gpu_fill(g, 0, 0, TY_F64, 2, sh, st, (uint64_t)(uintptr_t)(a + 5), (ty__fillval){-1.5, -1},
                            err, sizeof err), TY_OK);
  int64_t tsh[2] = {C, R}, dst[2] = {R, 1}, src[2] = {1, C};
  CHECK_EQ_INT(ty__gpu_copy(g, 0, 0, 2, tsh, (uint64_t)(uintptr_t)b, dst, (uint64_t)(uintptr_t)a, src, 8, err,
                            sizeof err), TY_OK);
  int bad = 0;
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      double w = (j >= 5 && j < 8) ? -1.5 : 0.0;
      bad += a[i * C + j] != w || b[j * R + i] != w;
    }
  CHECK_EQ_INT(bad, 0);
  /* a contiguous copy goes to the copy engine (cuMemcpyDtoDAsync) */
  int64_t one[1] = {R * C}, s1[1] = {1};
  memset(b, 0, R * C * 8);
  CHECK_EQ_INT(ty__gpu_copy(g, 0, 0, 1, one, (uint64_t)(uintptr_t)b, s1, (uint64_t)(uintptr_t)a, s1, 8, err,
                            sizeof err), TY_OK);
  CHECK(!memcmp(a, b, R * C * 8));
  /* fill of every dtype through a 1-D strided view */
  for (int t = 0; t < TY__GPU_NDTYPES; t++) {
    size_t es = ty_dtype_size((ty_dtype)t);
    char *buf = calloc(64, es);
    int64_t n[1] = {16}, s2[1] = {4};
    ty__fillval v = {ty_dtype_is_float((ty_dtype)t) ? 2.5 : 0, 7};
    if (t == TY_BOOL) v.i = 1;
    CHECK_EQ_INT(ty__gpu_fill(g, 0, 0, (ty_dtype)t, 1, n, s2, (uint64_t)(uintptr_t)buf, v, err, sizeof err), TY_OK);
    for (int i = 0; i < 64; i++) {
      double x = ty__load_f64(buf + i * es, (ty_dtype)t);
      double w = i % 4 ? 0 : ty_dtype_is_float((ty_dtype)t) ? 2.5 : t == TY_BOOL ? 1 : 7;
      if (x != w) bad++;
    }
    free(buf);
  }
  CHECK_EQ_INT(bad, 0);
  free(a);
  free(b);
  emu_close(g);
}

/* Every reduction kind of every dtype over all elements, each axis and two
 * axes of a (37, 300, 5) store (threads, blocks, chunked blocks + finish),
 * against the CPU's reduction loops: integers, min, max and arg reductions
 * exactly; float sums within their error bound. */
TEST(builtin_kernels_emulated_match_cpu_reductions) {
  char why[256];
  ty__gpu *g = emu_gpu(why, sizeof why);
  CHECK(!emu_broken); /* c++ is there: fill.cu and reduce.cu must compile */
  if (!g) SKIP("%s", why);
  char err[512];
  enum { A = 37, B = 300, C = 5, N = A * B * C };
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
    for (int k = 0; k < 6; k++) {
      ty_reduce_op op = ops[k];
      if (op == TY_RED_PROD && dt != TY_BOOL) continue; /* overflow makes order matter; bool: exact */
      bool arg = op == TY_RED_ARGMIN || op == TY_RED_ARGMAX;
      ty_dtype od = arg ? TY_I64 : (op == TY_RED_SUM || op == TY_RED_PROD) && !ty_dtype_is_float(dt) ? TY_I64 : dt;
      size_t os = ty_dtype_size(od);
      for (int o = 0; o < 5; o++) {
        const int64_t *ost = out_strides[o];
        if (arg && o != 0 && o != 2) continue; /* argmin/argmax: all, or one axis */
        int nout = 1;
        for (int d = 0; d < 3; d++) nout *= ost[d] ? (int)shape[d] : 1;
        char *got = calloc(nout + 1, os);
        CHECK_EQ_INT(ty__gpu_reduce(g, 0, 0, op, dt, 3, shape, (uint64_t)(uintptr_t)x, in, (uint64_t)(uintptr_t)got,
                                    ost, false, err, sizeof err), TY_OK);
        /* reference: walk the domain; output index from ost */
        double *facc = calloc(nout, sizeof(double)), *fabs_sum = calloc(nout, sizeof(double));
        int64_t *iacc = calloc(nout, 8), *best = calloc(nout, 8), *cnt = calloc(nout, 8);
        bool *isnan_ = calloc(nout, 1);
        for (int i = 0; i < nout; i++) {
          facc[i] = op == TY_RED_PROD ? 1 : op == TY_RED_MIN ? INFINITY : op == TY_RED_MAX ? -INFINITY : 0;
          iacc[i] = op == TY_RED_PROD ? 1 : op == TY_RED_MIN ? INT64_MAX : op == TY_RED_MAX ? INT64_MIN : 0;
          best[i] = -1;
        }
        for (int a0 = 0; a0 < A; a0++)
          for (int b0 = 0; b0 < B; b0++)
            for (int c0 = 0; c0 < C; c0++) {
              int oi = (int)(a0 * ost[0] + b0 * ost[1] + c0 * ost[2]);
              int64_t r = cnt[oi]++; /* index in the reduced space, C order */
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
          else if (!ty_dtype_is_float(od)) ok = ty__load_i64(gp, od) == ((op == TY_RED_SUM || op == TY_RED_PROD) ? iacc[i] : ty__load_i64((const char *)&iacc[i], TY_I64));
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
    free(x);
  }
  emu_close(g);
}

/* ---- on a GPU ------------------------------------------------------------------------------- */

static ty__gpu *G;
static char gpu_why[512];

/* A real GPU, else a simulated one when a host C++ compiler exists. */
static ty_status open_gpu(size_t fbmem, ty__gpu **g, char *why, size_t len) {
  if (ty__gpu_open(0, fbmem, g, why, len) != TY_OK) *g = NULL;
  else if ((*g)->ndev == 0) {
    snprintf(why, len, "%s", (*g)->list.why);
    ty__gpu_close(*g);
    *g = NULL;
  }
  if (*g) return TY_OK;
  if (!have_cxx()) return TY_ENOTFOUND; /* no simulator either: why says so */
  if (ty__gpu_open(TY_GPUS_SIM | 1, fbmem, g, why, len) != TY_OK) *g = NULL;
  else printf("note: no GPU, running on a simulated one (sim:1)\n");
  return *g ? TY_OK : TY_ENOTFOUND;
}

static bool gpu(void) {
  static bool tried;
  if (!tried) {
    tried = true;
    open_gpu(0, &G, gpu_why, sizeof gpu_why);
  }
  return G != NULL;
}

/* device buffer with host data */
static uint64_t upload(const void *host, size_t bytes, ty__gpu_block **blk) {
  char err[512];
  if (ty__gpu_alloc(G, 0, bytes, 0, "test buffer", blk, err, sizeof err) != TY_OK) {
    fprintf(stderr, "%s\n", err);
    return 0;
  }
  uint64_t base[1] = {(*blk)->ptr};
  ty__coh_copy c = {host ? TY__COH_HOST : -1, TY__COH_DEV(0), 0, bytes};
  if (ty__gpu_copy_run(G, &c, (void *)host, base, 0, err, sizeof err) != TY_OK) fprintf(stderr, "%s\n", err);
  return (*blk)->ptr;
}

static void download(void *host, uint64_t dev, size_t bytes) {
  char err[512];
  uint64_t base[1] = {dev};
  ty__coh_copy c = {TY__COH_DEV(0), TY__COH_HOST, 0, bytes};
  CHECK_EQ_INT(ty__gpu_copy_run(G, &c, host, base, 0, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gpu_sync(G, 0, 0, err, sizeof err), TY_OK);
}

static int64_t ulps(double a, double b, ty_dtype t) {
  if (isnan(a) && isnan(b)) return 0;
  if (isnan(a) || isnan(b)) return INT64_MAX;
  if (t == TY_F32) {
    float x = (float)a, y = (float)b;
    int32_t i, j;
    memcpy(&i, &x, 4);
    memcpy(&j, &y, 4);
    if (i < 0) i = INT32_MIN - i;
    if (j < 0) j = INT32_MIN - j;
    return i > j ? (int64_t)i - j : (int64_t)j - i;
  }
  int64_t i, j;
  memcpy(&i, &a, 8);
  memcpy(&j, &b, 8);
  if (i < 0) i = INT64_MIN - i;
  if (j < 0) j = INT64_MIN - j;
  return i > j ? i - j : j - i;
}

#define NV 16
static const double F_VALS[NV] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 7.25,
                                  -7.25, 1e300, -1e-300, INFINITY, -INFINITY, NAN, 2.0, 123.456};
static const int64_t I_VALS[NV] = {0, 1, -1, 7, -7, 3, -3, INT64_MIN, INT64_MAX, 2, 100, -100,
                                   5, 255, 256, -129};

/* Every op of every dtype in one generated kernel per dtype, against the CPU
 * tables: exact ops bit for bit, transcendentals within 4 ULPs (CUDA's
 * libdevice, 1-2 ULP, against SLEEF's 1 ULP). */
TEST(gpu_fused_ops_match_cpu) {
  if (!gpu()) SKIP("no GPU: %s", gpu_why);
  const int n = NV * NV;
  char err[4096];
  for (int ti = 0; ti < TY__GPU_NDTYPES; ti++) {
    ty_dtype t = (ty_dtype)ti;
    size_t es = ty_dtype_size(t);
    char *x = calloc(n, es), *y = calloc(n, es);
    for (int i = 0; i < n; i++) {
      if (ty_dtype_is_float(t)) {
        ty__store_f64(x + i * es, t, F_VALS[i % NV]);
        ty__store_f64(y + i * es, t, F_VALS[i / NV]);
      } else if (t == TY_BOOL) {
        x[i] = (char)(i & 1);
        y[i] = (char)((i / NV) & 1);
      } else {
        ty__store_i64(x + i * es, t, I_VALS[i % NV]);
        ty__store_i64(y + i * es, t, I_VALS[i / NV]);
      }
    }
    ty__gpu_block *bx, *by, *bo[TY_NOPS];
    ty__gir *ir = calloc(1, sizeof *ir);
    ir->ndim = 1;
    ir->shape[0] = n;
    ir->nargs = 2;
    ir->args[0] = (ty__garg){t, {1}, upload(x, n * es, &bx)};
    ir->args[1] = (ty__garg){t, {1}, upload(y, n * es, &by)};
    int ops[TY_NOPS], nops = 0;
    for (int op = 0; op < TY_NOPS; op++) {
      bool bin = op >= TY_OP_FIRST_BINARY;
      if (!(bin ? ty__binary_loops[op][t] : ty__unary_loops[op][t])) continue;
      ty_dtype od = ty__op_out_dtype((ty_op)op, t);
      int a = ir->nargs++;
      ir->args[a] = (ty__garg){od, {1}, upload(NULL, n * ty_dtype_size(od), &bo[nops])};
      ir->subs[ir->nsubs++] = (ty__gsub){bin ? TY__G_BINARY : TY__G_UNARY, (uint8_t)op, (uint8_t)t, (uint8_t)t,
                                         (uint8_t)(bin ? 2 : 1), {TY__GREF_ARG, (uint16_t)a},
                                         {{TY__GREF_ARG, 0}, {TY__GREF_ARG, 1}}};
      ops[nops++] = op;
    }
    ty_status st = ty__gpu_fused(G, 0, 0, ir, err, sizeof err);
    if (st) fprintf(stderr, "%s\n", err);
    CHECK_EQ_INT(st, TY_OK);
    for (int k = 0; k < nops; k++) {
      int op = ops[k];
      bool bin = op >= TY_OP_FIRST_BINARY;
      ty_dtype od = ty__op_out_dtype((ty_op)op, t);
      size_t os = ty_dtype_size(od);
      char *got = calloc(n, os), *want = calloc(n, os);
      download(got, ir->args[2 + k].ptr, n * os);
      char *ptrs[3] = {want, x, y};
      int64_t strides[3] = {(int64_t)os, (int64_t)es, (int64_t)es};
      (bin ? ty__binary_loops[op][t] : ty__unary_loops[op][t])(n, ptrs, strides, NULL);
      bool approx = op == TY_OP_EXP || op == TY_OP_LOG || op == TY_OP_SIN || op == TY_OP_COS ||
                    op == TY_OP_TANH || op == TY_OP_POW || (op >= TY_OP_TAN && op <= TY_OP_CBRT) ||
                    op == TY_OP_ARCTAN2 || op == TY_OP_HYPOT;
      int bad = 0;
      for (int i = 0; i < n; i++) {
        const char *g = got + i * os, *w = want + i * os;
        bool ok;
        if (ty_dtype_is_float(od)) {
          double a = ty__load_f64(g, od), b = ty__load_f64(w, od);
          ok = (isnan(a) && isnan(b)) || !memcmp(g, w, os) || (approx && ulps(a, b, od) <= 4);
          if (!ok && bad < 3)
            fprintf(stderr, "  %s %s [%d]: gpu %.17g cpu %.17g\n", ty_op_name((ty_op)op), ty_dtype_name(t), i, a, b);
        } else {
          ok = !memcmp(g, w, os);
          if (!ok && bad < 3)
            fprintf(stderr, "  %s %s [%d]: gpu %lld cpu %lld\n", ty_op_name((ty_op)op), ty_dtype_name(t), i,
                    (long long)ty__load_i64(g, od), (long long)ty__load_i64(w, od));
        }
        bad += !ok;
      }
      CHECK_EQ_INT(bad, 0);
      free(got);
      free(want);
      ty__gpu_free(G, 0, bo[k], 0);
    }
    ty__gpu_free(G, 0, bx, 0);
    ty__gpu_free(G, 0, by, 0);
    free(ir);
    free(x);
    free(y);
  }
}

/* y = x * c + 1 twice with different constants and sizes: one compile */
TEST(gpu_fused_kernel_compiles_once_per_structure) {
  if (!gpu()) SKIP("no GPU: %s", gpu_why);
  char err[2048];
  uint64_t compiles0 = G->ptx.compiles + G->ptx.disk_hits;
  for (int rep = 0; rep < 2; rep++) {
    int n = rep ? 100000 : 1000;
    double c = rep ? -2.0 : 3.0;
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    for (int i = 0; i < n; i++) x[i] = i * 0.5;
    ty__gpu_block *bx, *by;
    ty__gir *ir = calloc(1, sizeof *ir);
    ir->ndim = 1;
    ir->shape[0] = n;
    ir->nargs = 2;
    ir->args[0] = (ty__garg){TY_F64, {1}, upload(NULL, n * 8, &by)};
    ir->args[1] = (ty__garg){TY_F64, {1}, upload(x, n * 8, &bx)};
    ir->nconsts = 2;
    ir->consts[0] = (ty__gconst){TY_F64, c, 0};
    ir->consts[1] = (ty__gconst){TY_F64, 1.0, 0};
    ir->ntmps = 1;
    ir->tmps[0] = TY_F64;
    ir->nsubs = 2;
    ir->subs[0] = (ty__gsub){TY__G_BINARY, TY_OP_MUL, TY_F64, TY_F64, 2, {TY__GREF_TMP, 0}, {{TY__GREF_ARG, 1}, {TY__GREF_CONST, 0}}};
    ir->subs[1] = (ty__gsub){TY__G_BINARY, TY_OP_ADD, TY_F64, TY_F64, 2, {TY__GREF_ARG, 0}, {{TY__GREF_TMP, 0}, {TY__GREF_CONST, 1}}};
    CHECK_EQ_INT(ty__gpu_fused(G, 0, 0, ir, err, sizeof err), TY_OK);
    download(y, ir->args[0].ptr, n * 8);
    int bad = 0;
    for (int i = 0; i < n; i++) bad += y[i] != x[i] * c + 1.0;
    CHECK_EQ_INT(bad, 0);
    ty__gpu_free(G, 0, bx, 0);
    ty__gpu_free(G, 0, by, 0);
    free(ir);
    free(x);
    free(y);
  }
  CHECK_EQ_INT(G->ptx.compiles + G->ptx.disk_hits - compiles0, 1);
  CHECK(G->ptx.hits >= 1);
}

TEST(gpu_random_is_the_cpus) {
  if (!gpu()) SKIP("no GPU: %s", gpu_why);
  char err[512];
  for (int ti = 0; ti < TY__GPU_NDTYPES; ti++) {
    ty_dtype t = (ty_dtype)ti;
    size_t es = ty_dtype_size(t);
    /* piece rows 3..9 of a 10 x 37 store: flat indices from 3*37 */
    ty_tile tile;
    memset(&tile, 0, sizeof tile);
    tile.dtype = t;
    tile.ndim = 2;
    tile.shape[0] = 7;
    tile.shape[1] = 37;
    tile.strides[0] = 37;
    tile.strides[1] = 1;
    tile.lo[0] = 3;
    tile.gshape[0] = 10;
    tile.gshape[1] = 37;
    size_t bytes = 7 * 37 * es;
    char *want = calloc(1, bytes), *got = calloc(1, bytes);
    tile.data = want;
    ty__random_args ra = {.seed = 12345, .stream = 7};
    ty_task_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.args = &tile;
    ctx.nargs = 1;
    ctx.scalars = &ra;
    ctx.scalar_bytes = sizeof ra;
    ty__random_variant(&ctx);
    ty__gpu_block *b;
    uint64_t p = upload(NULL, bytes, &b);
    CHECK_EQ_INT(ty__gpu_generate(G, 0, 0, TY__KFN_RANDOM, &tile, p, &ra, err, sizeof err), TY_OK);
    download(got, p, bytes);
    CHECK(!memcmp(got, want, bytes));
    ty__gpu_free(G, 0, b, 0);
    free(want);
    free(got);
  }
}

TEST(gpu_fill_copy_arange_linspace) {
  if (!gpu()) SKIP("no GPU: %s", gpu_why);
  char err[512];
  enum { R = 50, C = 40 };
  ty__gpu_block *b, *b2;
  uint64_t p = upload(NULL, R * C * 8, &b), p2 = upload(NULL, R * C * 8, &b2);
  /* fill a column view with 2.5, then copy the transpose of the whole */
  int64_t colshape[2] = {R, 1}, colstr[2] = {C, 1};
  CHECK_EQ_INT(ty__gpu_fill(G, 0, 0, TY_F64, 2, colshape, colstr, p + 3 * 8, (ty__fillval){2.5, 2}, err, sizeof err),
               TY_OK);
  int64_t tshape[2] = {C, R}, dst[2] = {R, 1}, src[2] = {1, C};
  CHECK_EQ_INT(ty__gpu_copy(G, 0, 0, 2, tshape, p2, dst, p, src, 8, err, sizeof err), TY_OK);
  double *h = calloc(R * C, 8);
  download(h, p2, R * C * 8);
  int bad = 0;
  for (int j = 0; j < C; j++)
    for (int i = 0; i < R; i++) bad += h[j * R + i] != (j == 3 ? 2.5 : 0.0);
  CHECK_EQ_INT(bad, 0);
  /* arange and linspace against the CPU variants */
  for (int kind = TY__KFN_ARANGE; kind <= TY__KFN_LINSPACE; kind++) {
    ty_tile tile;
    memset(&tile, 0, sizeof tile);
    tile.dtype = TY_F64;
    tile.ndim = 1;
    tile.shape[0] = 1000;
    tile.strides[0] = 1;
    tile.lo[0] = 500;
    tile.gshape[0] = 1500;
    double *want = calloc(1000, 8), *got = calloc(1000, 8);
    tile.data = (char *)want;
    ty__arange_args aa = {0.1, 0.3, 0, 0, 0};
    ty__linspace_args la = {-1.0, 7.0, 8.0 / 1499, 1500};
    ty_task_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.args = &tile;
    ctx.nargs = 1;
    ctx.scalars = kind == TY__KFN_ARANGE ? (const void *)&aa : (const void *)&la;
    if (kind == TY__KFN_ARANGE) ty__arange_variant(&ctx);
    else ty__linspace_variant(&ctx);
    CHECK_EQ_INT(ty__gpu_generate(G, 0, 0, kind, &tile, p, ctx.scalars, err, sizeof err), TY_OK);
    download(got, p, 8000);
    if (cpu_arange_is_fma()) {
      CHECK(!memcmp(got, want, 8000));
    } else { /* the CPU build rounds twice: within an ulp */
      int bad = 0;
      for (int i = 0; i < 1000; i++) bad += fabs(got[i] - want[i]) > 1e-15 * (fabs(want[i]) + 8);
      CHECK_EQ_INT(bad, 0);
    }
    free(want);
    free(got);
  }
  ty__gpu_free(G, 0, b, 0);
  ty__gpu_free(G, 0, b2, 0);
  free(h);
}

/* sum/prod/min/max/argmin/argmax of a (300, 257) i64 and f64 matrix, over
 * all elements and each axis, against plain loops */
TEST(gpu_reductions_match_cpu) {
  if (!gpu()) SKIP("no GPU: %s", gpu_why);
  char err[512];
  enum { R = 300, C = 257 };
  int64_t *xi = malloc(R * C * 8);
  double *xf = malloc(R * C * 8);
  for (int i = 0; i < R * C; i++) {
    xi[i] = (int64_t)((i * 2654435761u) % 1000) - 500;
    xf[i] = (double)xi[i] * 0.25 + 1e-3 * (i % 7);
  }
  xf[12345] = NAN;
  ty__gpu_block *bi, *bf, *bo;
  uint64_t pi = upload(xi, R * C * 8, &bi), pf = upload(xf, R * C * 8, &bf), po = upload(NULL, R * 8 * 2, &bo);
  int64_t shape[2] = {R, C}, in[2] = {C, 1};
  static const ty_reduce_op ops[] = {TY_RED_SUM, TY_RED_PROD, TY_RED_MIN, TY_RED_MAX, TY_RED_ARGMIN, TY_RED_ARGMAX};
  for (int axis = -1; axis < 2; axis++) {
    int nout = axis < 0 ? 1 : axis == 0 ? C : R;
    int64_t out[2] = {axis == 0 || axis < 0 ? 0 : 1, axis == 1 || axis < 0 ? 0 : 1};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
      for (int f = 0; f < 2; f++) {
        ty_reduce_op op = ops[k];
        ty_dtype t = f ? TY_F64 : TY_I64;
        /* a float product of these overflows, and inf * 0 makes the result
         * depend on the order: products of floats are checked below */
        if (f && op == TY_RED_PROD) continue;
        CHECK_EQ_INT(ty__gpu_reduce(G, 0, 0, op, t, 2, shape, f ? pf : pi, in, po, out, false, err, sizeof err), TY_OK);
        int64_t got[R > C ? R : C];
        download(got, po, (size_t)nout * 8);
        for (int o = 0; o < nout; o++) {
          /* the reference: walk the reduced elements in C order */
          int cnt = axis < 0 ? R * C : axis == 0 ? R : C;
          double fs = op == TY_RED_PROD ? 1 : 0, fe = 0, fabs_sum = 0;
          uint64_t is = op == TY_RED_PROD ? 1 : 0;
          int64_t ie = 0, arg = -1;
          bool nan = false;
          for (int r = 0; r < cnt; r++) {
            int idx = axis < 0 ? r : axis == 0 ? r * C + o : o * C + r;
            double v = xf[idx];
            int64_t w = xi[idx];
            if (f) {
              if (op == TY_RED_SUM) fs += v, fabs_sum += fabs(v);
              else if (op == TY_RED_PROD) fs *= v;
              else if (!nan) {
                bool better = arg < 0 || isnan(v) ||
                              ((op == TY_RED_MIN || op == TY_RED_ARGMIN) ? v < fe : v > fe);
                if (better) fe = v, arg = r;
                if (isnan(v)) nan = true;
              }
            } else {
              if (op == TY_RED_SUM) is += (uint64_t)w;
              else if (op == TY_RED_PROD) is *= (uint64_t)w;
              else {
                bool better = arg < 0 || ((op == TY_RED_MIN || op == TY_RED_ARGMIN) ? w < ie : w > ie);
                if (better) ie = w, arg = r;
              }
            }
          }
          if (op == TY_RED_ARGMIN || op == TY_RED_ARGMAX) {
            CHECK_EQ_INT(got[o], arg);
          } else if (!f) {
            CHECK_EQ_INT(got[o], (op == TY_RED_SUM || op == TY_RED_PROD) ? (int64_t)is : ie);
          } else {
            double g;
            memcpy(&g, &got[o], 8);
            double want = (op == TY_RED_SUM || op == TY_RED_PROD) ? fs : fe;
            if (isnan(want)) CHECK(isnan(g));
            else if (op == TY_RED_SUM) CHECK(fabs(g - want) <= 1e-12 * fabs_sum); /* both orders' error bound */
            else CHECK(g == want);
          }
        }
      }
    }
  }
  /* a float product that stays finite: 1 + small */
  for (int i = 0; i < R * C; i++) xf[i] = 1.0 + 1e-5 * sin((double)i);
  ty__gpu_free(G, 0, bf, 0);
  pf = upload(xf, R * C * 8, &bf);
  int64_t all[2] = {0, 0};
  CHECK_EQ_INT(ty__gpu_reduce(G, 0, 0, TY_RED_PROD, TY_F64, 2, shape, pf, in, po, all, false, err, sizeof err), TY_OK);
  double gp, wp = 1;
  download(&gp, po, 8);
  for (int i = 0; i < R * C; i++) wp *= xf[i];
  CHECK_NEAR(gp, wp, 1e-11);
  ty__gpu_free(G, 0, bi, 0);
  ty__gpu_free(G, 0, bf, 0);
  ty__gpu_free(G, 0, bo, 0);
  free(xi);
  free(xf);
}

TEST(gpu_matmul_through_cublas) {
  if (!gpu()) SKIP("no GPU: %s", gpu_why);
  if (!G->blas_ok) SKIP("%s", G->blas_why);
  char err[512];
  enum { M = 33, K = 17, N = 29 };
  double *a = malloc(M * K * 8), *bt = malloc(N * K * 8), *c = calloc(M * N, 8);
  for (int i = 0; i < M * K; i++) a[i] = (i % 13) * 0.5 - 3;
  for (int i = 0; i < N * K; i++) bt[i] = (i % 7) * 0.25 - 1;
  ty__gpu_block *ba, *bb, *bc;
  uint64_t pa = upload(a, M * K * 8, &ba), pb = upload(bt, N * K * 8, &bb), pc = upload(NULL, M * N * 8, &bc);
  /* B given as the transposed view of bt (N x K): strides (1, K) */
  CHECK_EQ_INT(ty__gpu_matmul(G, 0, 0, TY_F64, M, N, K, pa, K, 1, pb, 1, K, pc, N, err, sizeof err), TY_OK);
  download(c, pc, M * N * 8);
  int bad = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int k = 0; k < K; k++) s += a[i * K + k] * bt[j * K + k];
      bad += fabs(c[i * N + j] - s) > 1e-12 * (1 + fabs(s));
    }
  CHECK_EQ_INT(bad, 0);
  ty__gpu_free(G, 0, ba, 0);
  ty__gpu_free(G, 0, bb, 0);
  ty__gpu_free(G, 0, bc, 0);
  free(a);
  free(bt);
  free(c);
}

/* A store alternately written by the CPU and the GPU: only stale pieces move. */
TEST(gpu_coherence_round_trip) {
  if (!gpu()) SKIP("no GPU: %s", gpu_why);
  char err[512];
  enum { N = 8192 };
  double *h = malloc(N * 8);
  for (int i = 0; i < N; i++) h[i] = i;
  ty__coh_obj o;
  ty__coh_copies c = {0};
  ty__coh_init(&o, N * 8, 1u << TY__COH_HOST);
  ty__gpu_block *b;
  CHECK_EQ_INT(ty__gpu_alloc(G, 0, N * 8, 0, "x", &b, err, sizeof err), TY_OK);
  uint64_t base[1] = {b->ptr};
  /* the GPU doubles every element in place */
  CHECK_EQ_INT(ty__coh_acquire(&o, 0, N * 8, TY__COH_DEV(0), TY__COH_READWRITE, &c), TY_OK);
  for (int k = 0; k < c.n; k++) CHECK_EQ_INT(ty__gpu_copy_run(G, &c.v[k], h, base, 0, err, sizeof err), TY_OK);
  ty__gir *ir = calloc(1, sizeof *ir);
  ir->ndim = 1;
  ir->shape[0] = N;
  ir->nargs = 1;
  ir->args[0] = (ty__garg){TY_F64, {1}, b->ptr};
  ir->nsubs = 1;
  ir->subs[0] = (ty__gsub){TY__G_BINARY, TY_OP_ADD, TY_F64, TY_F64, 2, {TY__GREF_ARG, 0}, {{TY__GREF_ARG, 0}, {TY__GREF_ARG, 0}}};
  CHECK_EQ_INT(ty__gpu_fused(G, 0, 0, ir, err, sizeof err), TY_OK);
  /* the host reads the second half only */
  ty__coh_copies_reset(&c);
  CHECK_EQ_INT(ty__coh_acquire(&o, N * 4, N * 8, TY__COH_HOST, TY__COH_READ, &c), TY_OK);
  CHECK_EQ_INT(c.n, 1);
  for (int k = 0; k < c.n; k++) CHECK_EQ_INT(ty__gpu_copy_run(G, &c.v[k], h, base, 0, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gpu_sync(G, 0, 0, err, sizeof err), TY_OK);
  CHECK(h[N / 2] == N);          /* doubled */
  CHECK(h[N - 1] == 2.0 * (N - 1));
  CHECK(h[1] == 1.0);            /* stale on the host, not copied */
  ty__coh_copies_free(&c);
  ty__coh_free(&o);
  ty__gpu_free(G, 0, b, 0);
  free(ir);
  free(h);
}

TEST(gpu_small_fbmem_runs_out_with_a_message) {
  ty__gpu *g = NULL;
  char err[1024] = "";
  if (open_gpu((size_t)64 << 20, &g, err, sizeof err) != TY_OK) SKIP("no GPU: %s", err);
  ty__gpu_block *a, *b;
  CHECK_EQ_INT(ty__gpu_alloc(g, 0, (size_t)48 << 20, 0, "store #1 (6291456,) f64", &a, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty__gpu_alloc(g, 0, (size_t)48 << 20, 0, "store #2 (6291456,) f64", &b, err, sizeof err), TY_ENOMEM);
  CHECK_STR_CONTAINS(err, "store #2 (6291456,) f64 needs 48.0 MiB");
  CHECK_STR_CONTAINS(err, "--fbmem");
  ty__gpu_free(g, 0, a, 0);
  ty__gpu_close(g);
}

/* Element i of the fused-reduction test's input in dtype t (kind: what it
 * feeds; products stay near 1 so they neither overflow nor vanish). */
static void red_input(char *x, int64_t i, ty_dtype t, ty__redkind kind) {
  if (t == TY_BOOL) x[0] = (char)(i % 3 == 0);
  else if (ty_dtype_is_float(t))
    ty__store_f64(x, t, kind == TY__RPROD ? 1.0 + (double)(i % 7 - 3) / 4096.0 : (double)((i * 7919) % 1000) / 8.0 - 60.0);
  else ty__store_i64(x, t, t == TY_U8 ? (i * 7919) % 256 : (i * 7919) % 201 - 100);
}

/* A fused chain ending in a full reduction (ty__gred) is one kernel: every
 * kind x dtype against a host loop over x + x (f: x * 0.5 first; bool: x):
 * exact kinds bit for bit, float sums and products within a relative 1e-12
 * (f64) / 1e-6 (f32); an accumulating run adds into the old value; a NaN
 * sticks in min and max; two runs give the same bits. On a real GPU this
 * exercises the block tree, __syncthreads and the last-block counter. */
TEST(gpu_fused_reduction_is_one_kernel_and_matches_cpu) {
  if (!gpu()) SKIP("no GPU: %s", gpu_why);
  const int64_t n = 50021;
  const ty_dtype dts[] = {TY_F64, TY_F32, TY_I64, TY_I32, TY_U8, TY_BOOL};
  char err[4096];
  for (int kind = 0; kind < TY__NREDKIND; kind++)
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
      for (int acc_mode = 0; acc_mode < 2; acc_mode++) {
        const ty_dtype t = dts[di];
        const bool fl = ty_dtype_is_float(t), arith = kind == TY__RSUM || kind == TY__RPROD;
        const ty_dtype at = arith && !fl ? TY_I64 : t;
        const size_t es = ty_dtype_size(t), as = ty_dtype_size(at);
        char *x = malloc((size_t)n * es);
        for (int64_t i = 0; i < n; i++) red_input(x + i * es, i, t, (ty__redkind)kind);
        if (fl && kind >= TY__RMIN && acc_mode) ty__store_f64(x + 777 * es, t, NAN);
        /* the chain: v = x + x (floats: x * 0.5 first; bool: v = x); reduce v */
        ty__gir *ir = calloc(1, sizeof *ir);
        ty__gpu_block *bx, *ba;
        ir->ndim = 1;
        ir->shape[0] = n;
        ir->nargs = 2;
        ir->args[0] = (ty__garg){t, {1}, upload(x, (size_t)n * es, &bx)};
        char init[8] = {0};
        if (fl) ty__store_f64(init, at, 5.0);
        else ty__store_i64(init, at, t == TY_BOOL && !arith ? 1 : 5);
        ir->args[1] = (ty__garg){at, {0}, upload(init, as, &ba)};
        ir->ntmps = 2;
        ir->tmps[0] = ir->tmps[1] = t;
        if (t == TY_BOOL) {
          ir->subs[ir->nsubs++] = (ty__gsub){TY__G_CAST, 0, (uint8_t)t, (uint8_t)t, 1, {TY__GREF_TMP, 1},
                                             {{TY__GREF_ARG, 0}}};
        } else {
          ty__gref src = {TY__GREF_ARG, 0};
          if (fl) {
            ir->nconsts = 1;
            ir->consts[0] = (ty__gconst){t, 0.5, 0};
            ir->subs[ir->nsubs++] = (ty__gsub){TY__G_BINARY, TY_OP_MUL, (uint8_t)t, (uint8_t)t, 2,
                                               {TY__GREF_TMP, 0}, {{TY__GREF_ARG, 0}, {TY__GREF_CONST, 0}}};
            src = (ty__gref){TY__GREF_TMP, 0};
          }
          ir->subs[ir->nsubs++] = (ty__gsub){TY__G_BINARY, TY_OP_ADD, (uint8_t)t, (uint8_t)t, 2,
                                             {TY__GREF_TMP, 1}, {src, src}};
        }
        ir->red = (ty__gred){true, (uint8_t)kind, (uint8_t)at, acc_mode == 1, 1, {TY__GREF_TMP, 1}};
        /* the host's answer, from the same values */
        long double fs = kind == TY__RPROD ? 1 : 0;
        uint64_t is = kind == TY__RPROD ? 1 : 0;
        double ext = NAN;
        int64_t iext = 0;
        bool nan = false;
        for (int64_t i = 0; i < n; i++) {
          double v = 0;
          int64_t iv = 0;
          if (fl) {
            double h = ty__load_f64(x + i * es, t);
            if (t == TY_F32) v = (double)((float)((float)h * 0.5f) + (float)((float)h * 0.5f));
            else v = h * 0.5 + h * 0.5;
          } else if (t == TY_BOOL) {
            iv = x[i] != 0;
          } else {
            iv = ty__load_i64(x + i * es, t);
            iv = t == TY_U8 ? (uint8_t)(iv + iv) : t == TY_I32 ? (int32_t)(uint32_t)(2 * (uint32_t)iv) : 2 * iv;
          }
          if (fl) {
            nan |= v != v;
            fs = kind == TY__RPROD ? fs * v : fs + v;
            if (i == 0 || (kind == TY__RMIN ? v < ext : v > ext)) ext = v;
          } else {
            is = kind == TY__RPROD ? is * (uint64_t)iv : is + (uint64_t)iv;
            if (i == 0 || (kind == TY__RMIN ? iv < iext : iv > iext)) iext = iv;
          }
        }
        char got[8] = {0};
        for (int rep = 0; rep < 2; rep++) {
          if (rep) { /* the same start again */
            ty__gpu_free(G, 0, ba, 0);
            ir->args[1].ptr = upload(init, as, &ba);
          }
          ty_status st = ty__gpu_fused(G, 0, 0, ir, err, sizeof err);
          if (st) fprintf(stderr, "%s\n", err);
          CHECK_EQ_INT(st, TY_OK);
          char now[8] = {0};
          download(now, ir->args[1].ptr, as);
          if (rep) CHECK(memcmp(now, got, as) == 0); /* deterministic */
          memcpy(got, now, as);
        }
        const char *what = kind == TY__RSUM ? "sum" : kind == TY__RPROD ? "prod" : kind == TY__RMIN ? "min" : "max";
        if (fl) {
          double g = ty__load_f64(got, at), w;
          if (arith) {
            w = (double)fs;
            if (acc_mode) w = kind == TY__RPROD ? w * 5 : w + 5;
            if (t == TY_F32) w = (float)w;
            double tol = (t == TY_F32 ? 1e-6 : 1e-12) * fabs(w);
            if (!(fabs(g - w) <= tol)) fprintf(stderr, "  %s %s acc=%d: gpu %.17g, host %.17g\n", what,
                                              ty_dtype_name(t), acc_mode, g, w);
            CHECK(fabs(g - w) <= tol);
          } else {
            w = nan ? NAN : ext;
            if (acc_mode && !nan) w = kind == TY__RMIN ? (5 < w ? 5 : w) : (5 > w ? 5 : w);
            if (!((isnan(g) && isnan(w)) || g == w))
              fprintf(stderr, "  %s %s acc=%d: gpu %.17g, host %.17g\n", what, ty_dtype_name(t), acc_mode, g, w);
            CHECK((isnan(g) && isnan(w)) || g == w);
          }
        } else {
          int64_t g = t == TY_BOOL && !arith ? (unsigned char)got[0] : ty__load_i64(got, at);
          int64_t w = arith ? (int64_t)is : iext, start = t == TY_BOOL && !arith ? 1 : 5;
          if (acc_mode)
            w = kind == TY__RSUM ? (int64_t)((uint64_t)w + 5) : kind == TY__RPROD ? (int64_t)((uint64_t)w * 5)
              : kind == TY__RMIN ? (start < w ? start : w) : (start > w ? start : w);
          if (g != w) fprintf(stderr, "  %s %s acc=%d: gpu %lld, host %lld\n", what, ty_dtype_name(t), acc_mode,
                              (long long)g, (long long)w);
          CHECK_EQ_INT(g, w);
        }
        ty__gpu_free(G, 0, bx, 0);
        ty__gpu_free(G, 0, ba, 0);
        free(ir);
        free(x);
      }
}

/* The fused kernel adds in reduce.cu's order for the same element count:
 * a fused float sum or product gives the bits of ty__gpu_reduce on the same
 * device (few elements: one thread walks them; many: chunks of blocks). */
TEST(gpu_fused_reduction_has_the_bits_of_the_reduction_alone) {
  if (!gpu()) SKIP("no GPU: %s", gpu_why);
  char err[4096];
  const int64_t sizes[] = {5, 31, 1000, 300007, 2000003};
  const ty_dtype dts[] = {TY_F64, TY_F32};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
    for (int di = 0; di < 2; di++)
      for (int kind = TY__RSUM; kind <= TY__RPROD; kind++) {
        const int64_t n = sizes[si];
        const ty_dtype t = dts[di];
        const size_t es = ty_dtype_size(t);
        char *x = malloc((size_t)n * es);
        for (int64_t i = 0; i < n; i++)
          ty__store_f64(x + i * es, t, kind == TY__RPROD ? 1.0 + (double)(i % 11 - 5) / 8192.0 : sin((double)i) * 100);
        ty__gpu_block *bx, *b1, *b2;
        const char zero8[8] = {0};
        uint64_t px = upload(x, (size_t)n * es, &bx), p1 = upload(zero8, es, &b1), p2 = upload(zero8, es, &b2);
        ty__gir *ir = calloc(1, sizeof *ir);
        ir->ndim = 1;
        ir->shape[0] = n;
        ir->nargs = 2;
        ir->args[0] = (ty__garg){t, {1}, px};
        ir->args[1] = (ty__garg){t, {0}, p1};
        ir->red = (ty__gred){true, (uint8_t)kind, (uint8_t)t, false, 1, {TY__GREF_ARG, 0}};
        ty_status st = ty__gpu_fused(G, 0, 0, ir, err, sizeof err);
        if (st) fprintf(stderr, "%s\n", err);
        CHECK_EQ_INT(st, TY_OK);
        int64_t one = 1, zs = 0;
        st = ty__gpu_reduce(G, 0, 0, kind == TY__RSUM ? TY_RED_SUM : TY_RED_PROD, t, 1, &n, px, &one, p2, &zs, false,
                            err, sizeof err);
        if (st) fprintf(stderr, "%s\n", err);
        CHECK_EQ_INT(st, TY_OK);
        char g1[8] = {0}, g2[8] = {0};
        download(g1, p1, es);
        download(g2, p2, es);
        if (memcmp(g1, g2, es))
          fprintf(stderr, "  %s %s n=%lld: fused %.17g, alone %.17g\n", kind == TY__RSUM ? "sum" : "prod",
                  ty_dtype_name(t), (long long)n, ty__load_f64(g1, t), ty__load_f64(g2, t));
        CHECK(memcmp(g1, g2, es) == 0);
        ty__gpu_free(G, 0, bx, 0);
        ty__gpu_free(G, 0, b1, 0);
        ty__gpu_free(G, 0, b2, 0);
        free(ir);
        free(x);
      }
}

static const check_case cases[] = {
    CASE(collapse_merges_what_every_operand_walks_contiguously),
    CASE(reduction_plans),
    CASE(fatbins_are_embedded_when_built_with_nvcc),
    CASE(opening_without_a_driver_gives_a_cpu_only_runtime),
    CASE(cublas_without_a_driver_fails_cleanly),
    CASE(builtin_kernels_emulated_match_cpu_generators_fill_copy),
    CASE(builtin_kernels_emulated_match_cpu_reductions),
    CASE(gpu_fused_ops_match_cpu),
    CASE(gpu_fused_kernel_compiles_once_per_structure),
    CASE(gpu_fused_reduction_is_one_kernel_and_matches_cpu),
    CASE(gpu_fused_reduction_has_the_bits_of_the_reduction_alone),
    CASE(gpu_random_is_the_cpus),
    CASE(gpu_fill_copy_arange_linspace),
    CASE(gpu_reductions_match_cpu),
    CASE(gpu_matmul_through_cublas),
    CASE(gpu_coherence_round_trip),
    CASE(gpu_small_fbmem_runs_out_with_a_message),
};

int main(int argc, char **argv) {
  int rc = check_run(argc, argv, cases, sizeof cases / sizeof cases[0]);
  if (G) ty__gpu_close(G);
  return rc == 0 && argc > 1 && skipped ? 77 : rc;
}
