/*
 * gpu_kernels.c — GPUs in use: contexts, streams, pools, modules, and the
 * launches of gpu_kernels.h.
 *
 * Invariants:
 *  - every call makes its device's context current first (the driving
 *    thread may move between devices: multi-GPU pieces, task mode);
 *  - launches are asynchronous on the stream named; ordering between
 *    streams is only what ty__gpu_stream_wait adds (events), and the host
 *    waits only in ty__gpu_sync (and in cuMemFree, which the pool avoids by
 *    caching);
 *  - the built-in kernels come from fatbins embedded at build time
 *    (TYCHO_CUDA_KERNELS): sm_90 code and compute_90 PTX, which the driver
 *    JIT-compiles for newer GPUs; without them only NVRTC-generated kernels
 *    and cuBLAS are available;
 *  - on simulated GPUs (api.sim, gpu_sim.c) every module is CUDA C source:
 *    the built-in kernels' embedded text (every build has it), the fused
 *    kernels' generated text without NVRTC, and cuBLAS is the simulator's.
 */
#include "alloc.h"
#include "gpu_kernels.h"

#include "trace.h"
#include "tycho/random.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the embedded fatbins ----------------------------------------------------------- */

#ifdef TYCHO_CUDA_KERNELS
extern const unsigned char ty__cuda_fatbin_fill[], ty__cuda_fatbin_fill_end[];
extern const unsigned char ty__cuda_fatbin_reduce[], ty__cuda_fatbin_reduce_end[];
#endif

const void *ty__gpu_fatbin(const char *name, size_t *size) {
  *size = 0;
#ifdef TYCHO_CUDA_KERNELS
  if (!strcmp(name, "fill")) {
    *size = (size_t)(ty__cuda_fatbin_fill_end - ty__cuda_fatbin_fill);
    return ty__cuda_fatbin_fill;
  }
  if (!strcmp(name, "reduce")) {
    *size = (size_t)(ty__cuda_fatbin_reduce_end - ty__cuda_fatbin_reduce);
    return ty__cuda_fatbin_reduce;
  }
#else
  (void)name;
#endif
  return NULL;
}

/* ---- the embedded sources (cuda/embed_sources.cmake) ------------------------------------ */

extern const char ty__cuda_source_fill[], ty__cuda_source_reduce[];

const char *ty__gpu_kernel_source(const char *name) {
  if (!strcmp(name, "fill")) return ty__cuda_source_fill;
  if (!strcmp(name, "reduce")) return ty__cuda_source_reduce;
  return NULL;
}

/* ---- errors --------------------------------------------------------------------------- */

static ty_status cu_fail(ty__gpu *g, ty__CUresult r, const char *what, char *err, size_t errlen) {
  char e[200];
  if (err) snprintf(err, errlen, "%s: %s", what, ty__cuda_error(&g->api, r, e, sizeof e));
  return r == TY__CUDA_ERROR_OUT_OF_MEMORY ? TY_ENOMEM : TY_EINVAL;
}

#define CU(call, what)                                                                     \
  do {                                                                                     \
    ty__CUresult r_ = (call);                                                              \
    if (r_ != TY__CUDA_SUCCESS) return cu_fail(g, r_, what, err, errlen);                  \
  } while (0)

static ty_status use_dev(ty__gpu *g, int d, char *err, size_t errlen) {
  if (!g || d < 0 || d >= g->ndev) {
    if (err) snprintf(err, errlen, "GPU %d is not in use", d);
    return TY_EINVAL;
  }
  CU(g->api.CtxSetCurrent(g->dev[d].ctx), "cuCtxSetCurrent");
  return TY_OK;
}

static ty__CUstream stream_of(ty__gpu *g, int d, int s) {
  return g->dev[d].stream[(s < 0 ? 0 : s) % TY__GPU_STREAMS];
}

/* ---- the pool's device ------------------------------------------------------------------ */

static int pool_alloc(void *ud, int d, size_t bytes, uint64_t *ptr) {
  ty__gpu *g = ud;
  if (g->api.CtxSetCurrent(g->dev[d].ctx) != TY__CUDA_SUCCESS) return 1;
  ty__CUdeviceptr p = 0;
  ty__CUresult r = g->api.MemAlloc(&p, bytes);
  *ptr = p;
  return r;
}

static void pool_free(void *ud, int d, uint64_t ptr, size_t bytes) {
  ty__gpu *g = ud;
  (void)bytes;
  g->api.CtxSetCurrent(g->dev[d].ctx);
  g->api.MemFree((ty__CUdeviceptr)ptr);
}

static bool pool_event_done(void *ud, void *event) {
  ty__gpu *g = ud;
  return g->api.EventQuery((ty__CUevent)event) == TY__CUDA_SUCCESS;
}

static void pool_event_release(void *ud, void *event) {
  ty__gpu *g = ud;
  g->api.EventDestroy((ty__CUevent)event);
}

/* ---- opening ------------------------------------------------------------------------------- */

static const char *red_names[TY_NREDUCE] = {
    [TY_RED_SUM] = "sum", [TY_RED_PROD] = "prod", [TY_RED_MIN] = "min", [TY_RED_MAX] = "max",
    [TY_RED_ARGMIN] = "argmin", [TY_RED_ARGMAX] = "argmax"};
static const char *dt_names[TY__GPU_NDTYPES] = {"f64", "f32", "i64", "i32", "u8", "bool"};
static const char *variant_names[TY__KRED_N] = {"blocks", "finish", "threads"};

static ty_status load_builtins(ty__gpu *g, ty__gpu_dev *dv, char *err, size_t errlen) {
  size_t nf = 0, nr = 0;
  const void *ff = ty__gpu_fatbin("fill", &nf), *fr = ty__gpu_fatbin("reduce", &nr);
  if (g->api.sim) { /* the simulator compiles the source */
    ff = ty__gpu_kernel_source("fill");
    fr = ty__gpu_kernel_source("reduce");
  }
  if (!ff || !fr) return TY_OK; /* built without nvcc: generated kernels only */
  CU(g->api.ModuleLoadData(&dv->mod_fill, ff), "loading the fill kernels");
  CU(g->api.ModuleLoadData(&dv->mod_reduce, fr), "loading the reduction kernels");
  static const char *const fill_names[TY__KFN_N] = {"ty_k_fill", "ty_k_copy", "ty_k_random",
                                                    "ty_k_arange", "ty_k_linspace"};
  for (int k = 0; k < TY__KFN_N; k++)
    CU(g->api.ModuleGetFunction(&dv->fn[k], dv->mod_fill, fill_names[k]), fill_names[k]);
  for (int v = 0; v < TY__KRED_N; v++)
    for (int op = 0; op < TY_NREDUCE; op++) {
      if (!red_names[op]) continue;
      for (int t = 0; t < TY__GPU_NDTYPES; t++) {
        char name[64];
        snprintf(name, sizeof name, "ty_k_red_%s_%s_%s", variant_names[v], red_names[op], dt_names[t]);
        CU(g->api.ModuleGetFunction(&dv->red[v][op][t], dv->mod_reduce, name), "a reduction kernel");
      }
    }
  g->builtins_ok = true;
  return TY_OK;
}

ty_status ty__gpu_probe_only(int requested, size_t fbmem, ty__gpu **out, char *err, size_t errlen) {
  *out = NULL;
  ty__gpu *g = ty__calloc(1, sizeof *g);
  if (!g) {
    if (err) snprintf(err, errlen, "out of memory");
    return TY_ENOMEM;
  }
  ty_status st = ty__gpu_probe(&g->api, requested, fbmem, &g->list, err, errlen);
  if (st) {
    free(g);
    return st;
  }
  g->fbmem = fbmem;
  *out = g;
  return TY_OK;
}

ty_status ty__gpu_open(int requested, size_t fbmem, ty__gpu **out, char *err, size_t errlen) {
  ty_status st = ty__gpu_probe_only(requested, fbmem, out, err, errlen);
  if (st == TY_OK && (st = ty__gpu_activate(*out, err, errlen)) != TY_OK) *out = NULL;
  return st;
}

/* On failure the devices opened so far are closed and g is freed. */
ty_status ty__gpu_activate(ty__gpu *g, char *err, size_t errlen) {
  ty_status st = TY_OK;
  if (g->active || g->list.count == 0) return TY_OK; /* a CPU-only runtime: nothing to open */
  g->active = true;
  for (int i = 0; i < g->list.count; i++) {
    ty__gpu_dev *dv = &g->dev[i];
    dv->index = i;
    dv->info = g->list.dev[i];
    dv->arch = dv->info.cc_major * 10 + dv->info.cc_minor;
    ty__CUresult r = g->api.DeviceGet(&dv->cu, dv->info.ordinal);
    if (r == TY__CUDA_SUCCESS) r = g->api.DevicePrimaryCtxRetain(&dv->ctx, dv->cu);
    g->ndev = dv->ctx ? i + 1 : i; /* close releases what was retained */
    if (r == TY__CUDA_SUCCESS) r = g->api.CtxSetCurrent(dv->ctx);
    if (r != TY__CUDA_SUCCESS) {
      char what[160];
      snprintf(what, sizeof what, "opening GPU %d (%.100s)", dv->info.ordinal, dv->info.name);
      st = cu_fail(g, r, what, err, errlen);
      ty__gpu_close(g);
      return st;
    }
    size_t freeb = 0, total = 0;
    if (g->api.MemGetInfo(&freeb, &total) == TY__CUDA_SUCCESS) {
      dv->info.free_mem = freeb;
      if (!g->fbmem) dv->info.fbmem = freeb / 10 * 9; /* now that the context exists */
    }
    for (int s = 0; s < TY__GPU_STREAMS; s++)
      if ((r = g->api.StreamCreate(&dv->stream[s], TY__CU_STREAM_NON_BLOCKING)) != TY__CUDA_SUCCESS) {
        ty__gpu_close(g);
        if (err) snprintf(err, errlen, "cuStreamCreate failed on GPU %d", i);
        return TY_EINVAL;
      }
    if ((st = load_builtins(g, dv, err, errlen)) != TY_OK) {
      ty__gpu_close(g);
      return st;
    }
    ty__dev_ops ops = {g, pool_alloc, pool_free, pool_event_done, pool_event_release};
    ty__gpu_pool_init(&dv->pool, i, dv->info.name, dv->info.fbmem, &ops);
  }
  if (g->api.sim) { /* generated kernels go to the simulator as source; its cuBLAS */
    snprintf(g->nvrtc_why, sizeof g->nvrtc_why, "simulated GPUs compile CUDA C with the host compiler");
    ty__ptx_cache_init(&g->ptx, NULL, "");
    g->ptx.source = true;
    ty__blas_sim(&g->blas);
    g->blas_ok = true;
    return TY_OK;
  }
  g->nvrtc_ok = ty__nvrtc_load(&g->nv, NULL, g->nvrtc_why, sizeof g->nvrtc_why) == TY_OK;
  ty__ptx_cache_init(&g->ptx, &g->nv, NULL);
  g->blas_ok = ty__blas_load(&g->blas, g->blas_why, sizeof g->blas_why) == TY_OK;
  return TY_OK;
}

void ty__gpu_close(ty__gpu *g) {
  if (!g) return;
  for (int k = 0; k < g->ntimings; k++) { /* a trace stopped before they were read */
    const ty__gpu_timing *t = &g->timings[k];
    if (g->api.CtxSetCurrent(g->dev[t->device].ctx) != TY__CUDA_SUCCESS) continue;
    g->api.EventDestroy(t->a);
    g->api.EventDestroy(t->b);
  }
  free(g->timings);
  for (int i = 0; i < g->ndev; i++) {
    ty__gpu_dev *dv = &g->dev[i];
    if (g->api.CtxSetCurrent(dv->ctx) != TY__CUDA_SUCCESS) continue;
    g->api.CtxSynchronize();
    if (dv->anchor) g->api.EventDestroy(dv->anchor);
    if (dv->blas && g->blas_ok) g->blas.Destroy(dv->blas);
    int leaked = dv->pool.ops.alloc ? ty__gpu_pool_destroy(&dv->pool) : 0;
    if (leaked) fprintf(stderr, "tycho: %d GPU blocks were not freed on device %d\n", leaked, i);
    /* modules loaded from the PTX cache */
    for (size_t k = 0; k < g->ptx.cap; k++) {
      ty__ptx_entry *e = g->ptx.slots ? g->ptx.slots[k] : NULL;
      if (e && e->module[i]) g->api.ModuleUnload((ty__CUmodule)e->module[i]);
    }
    if (dv->mod_fill) g->api.ModuleUnload(dv->mod_fill);
    if (dv->mod_reduce) g->api.ModuleUnload(dv->mod_reduce);
    for (int s = 0; s < TY__GPU_STREAMS; s++)
      if (dv->stream[s]) g->api.StreamDestroy(dv->stream[s]);
    g->api.DevicePrimaryCtxRelease(dv->cu);
  }
  ty__ptx_cache_free(&g->ptx);
  if (g->nvrtc_ok) ty__nvrtc_unload(&g->nv);
  if (g->blas_ok) ty__blas_unload(&g->blas);
  ty__cuda_unload(&g->api);
  free(g);
}

/* ---- memory ------------------------------------------------------------------------------- */

ty_status ty__gpu_alloc(ty__gpu *g, int d, size_t bytes, int stream, const char *what,
                        ty__gpu_block **out, char *err, size_t errlen) {
  ty_status st = use_dev(g, d, err, errlen);
  if (st) return st;
  return ty__gpu_pool_alloc(&g->dev[d].pool, bytes, (uintptr_t)stream_of(g, d, stream), what, out,
                            err, errlen);
}

void ty__gpu_free(ty__gpu *g, int d, ty__gpu_block *b, int stream) {
  if (!b || use_dev(g, d, NULL, 0) != TY_OK) return;
  ty__CUstream s = stream_of(g, d, stream);
  ty__CUevent ev = NULL;
  if (g->api.EventCreate(&ev, TY__CU_EVENT_DISABLE_TIMING) != TY__CUDA_SUCCESS ||
      g->api.EventRecord(ev, s) != TY__CUDA_SUCCESS) {
    /* no event: wait for the stream rather than risk reuse under running work */
    if (ev) g->api.EventDestroy(ev);
    ev = NULL;
    g->api.StreamSynchronize(s);
  }
  ty__gpu_pool_free(&g->dev[d].pool, b, (uintptr_t)s, ev);
}

ty_status ty__gpu_copy_run(ty__gpu *g, const ty__coh_copy *c, void *host_base,
                           const uint64_t *dev_base, int stream, char *err, size_t errlen) {
  size_t n = (size_t)(c->hi - c->lo);
  if (c->dst == TY__COH_HOST) {
    char *h = (char *)host_base + c->lo;
    if (c->src < 0) {
      memset(h, 0, n);
      return TY_OK;
    }
    int d = c->src - 1;
    ty_status st = use_dev(g, d, err, errlen);
    if (st) return st;
    CU(g->api.MemcpyDtoHAsync(h, dev_base[d] + c->lo, n, stream_of(g, d, stream)), "copying to the host");
    return TY_OK;
  }
  int d = c->dst - 1;
  ty_status st = use_dev(g, d, err, errlen);
  if (st) return st;
  ty__CUstream s = stream_of(g, d, stream);
  if (c->src < 0) {
    CU(g->api.MemsetD8Async(dev_base[d] + c->lo, 0, n, s), "zeroing device memory");
  } else if (c->src == TY__COH_HOST) {
    CU(g->api.MemcpyHtoDAsync(dev_base[d] + c->lo, (const char *)host_base + c->lo, n, s),
       "copying to the GPU");
  } else {
    int e = c->src - 1;
    CU(g->api.MemcpyPeerAsync(dev_base[d] + c->lo, g->dev[d].ctx, dev_base[e] + c->lo, g->dev[e].ctx, n, s),
       "copying between GPUs");
  }
  return TY_OK;
}

/* ---- ordering ---------------------------------------------------------------------------- */

ty_status ty__gpu_stream_wait(ty__gpu *g, int dw, int sw, int ds, int ss, char *err, size_t errlen) {
  if (dw == ds && (sw % TY__GPU_STREAMS) == (ss % TY__GPU_STREAMS)) return TY_OK; /* stream order */
  ty_status st = use_dev(g, ds, err, errlen);
  if (st) return st;
  ty__CUevent ev;
  CU(g->api.EventCreate(&ev, TY__CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  ty__CUresult r = g->api.EventRecord(ev, stream_of(g, ds, ss));
  if (r == TY__CUDA_SUCCESS && (st = use_dev(g, dw, err, errlen)) == TY_OK)
    r = g->api.StreamWaitEvent(stream_of(g, dw, sw), ev, 0);
  g->api.EventDestroy(ev); /* released once the wait is satisfied */
  if (st) return st;
  if (r != TY__CUDA_SUCCESS) return cu_fail(g, r, "ordering streams", err, errlen);
  return TY_OK;
}

ty_status ty__gpu_sync(ty__gpu *g, int d, int s, char *err, size_t errlen) {
  for (int i = d < 0 ? 0 : d; i < (d < 0 ? g->ndev : d + 1); i++) {
    ty_status st = use_dev(g, i, err, errlen);
    if (st) return st;
    for (int k = s < 0 ? 0 : s % TY__GPU_STREAMS; k < (s < 0 ? TY__GPU_STREAMS : s % TY__GPU_STREAMS + 1); k++)
      CU(g->api.StreamSynchronize(g->dev[i].stream[k]), "waiting for the GPU");
  }
  return TY_OK;
}

/* ---- device time (--trace) ------------------------------------------------------------------- */

ty__CUevent ty__gpu_mark(ty__gpu *g, int d, int s) {
  if (use_dev(g, d, NULL, 0) != TY_OK) return NULL;
  ty__gpu_dev *dv = &g->dev[d];
  ty__CUstream st = stream_of(g, d, s);
  if (!dv->anchor) { /* once per device: an event the host dates by waiting for it */
    ty__CUevent an = NULL;
    if (g->api.EventCreate(&an, 0) != TY__CUDA_SUCCESS) return NULL;
    if (g->api.EventRecord(an, st) != TY__CUDA_SUCCESS || g->api.EventSynchronize(an) != TY__CUDA_SUCCESS) {
      g->api.EventDestroy(an);
      return NULL;
    }
    dv->anchor_t = ty__now();
    dv->anchor = an;
  }
  ty__CUevent ev = NULL;
  if (g->api.EventCreate(&ev, 0) != TY__CUDA_SUCCESS) return NULL;
  if (g->api.EventRecord(ev, st) != TY__CUDA_SUCCESS) {
    g->api.EventDestroy(ev);
    return NULL;
  }
  return ev;
}

bool ty__gpu_mark_times(ty__gpu *g, int d, ty__CUevent a, ty__CUevent b, double *t0, double *t1) {
  if (use_dev(g, d, NULL, 0) != TY_OK) return false;
  const ty__gpu_dev *dv = &g->dev[d];
  float ma = 0, mb = 0;
  bool ok = dv->anchor && g->api.EventSynchronize(b) == TY__CUDA_SUCCESS &&
            g->api.EventElapsedTime(&ma, dv->anchor, a) == TY__CUDA_SUCCESS &&
            g->api.EventElapsedTime(&mb, dv->anchor, b) == TY__CUDA_SUCCESS;
  g->api.EventDestroy(a);
  if (b != a) g->api.EventDestroy(b);
  if (!ok) return false;
  *t0 = dv->anchor_t + ma * 1e-3;
  *t1 = dv->anchor_t + (mb > ma ? mb : ma) * 1e-3;
  return true;
}

/* ---- launches -------------------------------------------------------------------------------- */

static unsigned grid_for(const ty__gpu_dev *dv, long long n) {
  long long blocks = (n + TY_K_BLOCK - 1) / TY_K_BLOCK;
  long long cap = (long long)(dv->info.sms > 0 ? dv->info.sms : 1) * 32;
  if (blocks > cap) blocks = cap;
  return blocks < 1 ? 1u : (unsigned)blocks;
}

static ty_status launch(ty__gpu *g, int d, int stream, ty__CUfunction fn, unsigned gx, unsigned gy,
                        void *params, const char *what, char *err, size_t errlen) {
  void *args[1] = {params};
  CU(g->api.LaunchKernel(fn, gx, gy, 1, TY_K_BLOCK, 1, 1, 0, stream_of(g, d, stream), args, NULL),
     what);
  return TY_OK;
}

static ty_status need_builtins(ty__gpu *g, char *err, size_t errlen) {
  if (g->builtins_ok) return TY_OK;
  if (err) snprintf(err, errlen, "this tycho was built without nvcc: no built-in GPU kernels");
  return TY_ENOTFOUND;
}

ty_status ty__gpu_fused(ty__gpu *g, int d, int stream, const ty__gir *ir, char *err, size_t errlen) {
  ty_status st = use_dev(g, d, err, errlen);
  if (st) return st;
  if (!g->nvrtc_ok && !g->api.sim) {
    if (err) snprintf(err, errlen, "fused GPU kernels need NVRTC: %s", g->nvrtc_why);
    return TY_ENOTFOUND;
  }
  ty__gplan *plan = ty__malloc(sizeof *plan);
  int64_t *words = ty__malloc(TY__GK_MAX_WORDS * sizeof *words);
  if (!plan || !words) {
    free(plan);
    free(words);
    if (err) snprintf(err, errlen, "out of memory");
    return TY_ENOMEM;
  }
  ty__ptx_entry *e = NULL;
  st = ty__gk_plan(ir, plan, err, errlen);
  /* a reduction writes its accumulator even over no elements (the identity) */
  const bool run = st == TY_OK && (plan->n > 0 || ir->red.on);
  if (run) st = ty__gk_kernel(&g->ptx, ir, plan, g->dev[d].arch, &e, err, errlen);
  if (st == TY_OK && run && !e->function[d]) {
    ty__CUmodule m = NULL;
    ty__CUfunction f = NULL;
    ty__CUresult r = g->api.ModuleLoadData(&m, e->ptx);
    if (r == TY__CUDA_SUCCESS) r = g->api.ModuleGetFunction(&f, m, e->name);
    if (r != TY__CUDA_SUCCESS) {
      if (m) g->api.ModuleUnload(m);
      st = cu_fail(g, r, "loading a fused kernel", err, errlen);
    } else {
      e->module[d] = m;
      e->function[d] = f;
    }
  }
  unsigned grid = ty__gk_grid(plan, g->dev[d].info.sms);
  ty__gpu_block *scratch = NULL;
  if (st == TY_OK && run) {
    ty__gk_params(ir, plan, words);
    if (ir->red.on) {
      /* reduce.cu's plan for this element count (a full reduction), so the
       * fused run adds in the order the reduction alone would: `chunks`
       * blocks of `per` elements each, or one thread walking all of them */
      int64_t n = plan->n, one = 1, zero = 0;
      ty_kred kp;
      int variant;
      unsigned gx, gy;
      ty__kred_plan(1, &n, &one, &zero, g->dev[d].info.sms, &kp, &variant, &gx, &gy);
      const bool seq = variant == TY__KRED_THREADS;
      grid = seq ? 1 : gx;
      words[plan->nwords - 4] = seq ? n : (n + grid - 1) / grid;
      words[plan->nwords - 3] = seq;
    }
    if (ir->red.on && grid > 1) { /* partials, one 8-byte word per block, then the counter at zero */
      st = ty__gpu_alloc(g, d, (size_t)grid * 8 + 8, stream, "reduction partials", &scratch, err, errlen);
      if (st == TY_OK) {
        words[plan->nwords - 2] = (int64_t)scratch->ptr;
        words[plan->nwords - 1] = (int64_t)(scratch->ptr + (uint64_t)grid * 8);
        ty__CUresult r = g->api.MemsetD8Async(scratch->ptr + (uint64_t)grid * 8, 0, 8, stream_of(g, d, stream));
        if (r != TY__CUDA_SUCCESS) st = cu_fail(g, r, "zeroing a reduction's counter", err, errlen);
      }
    }
  }
  if (st == TY_OK && run) {
    void *args[1] = {words};
    ty__CUresult r = g->api.LaunchKernel((ty__CUfunction)e->function[d], grid, 1, 1, TY__GK_BLOCK, 1, 1, 0,
                                         stream_of(g, d, stream), args, NULL);
    if (r != TY__CUDA_SUCCESS) st = cu_fail(g, r, "launching a fused kernel", err, errlen);
  }
  if (scratch) ty__gpu_free(g, d, scratch, stream);
  free(plan);
  free(words);
  return st;
}

int ty__knd_collapse(int ndim, int64_t *shape, int nsets, int64_t (*strides)[TY_MAX_RANK]) {
  int nd = 0;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] == 1) continue;
    shape[nd] = shape[d];
    for (int k = 0; k < nsets; k++) strides[k][nd] = strides[k][d];
    nd++;
  }
  for (int d = nd - 2; d >= 0; d--) {
    bool merge = true;
    for (int k = 0; k < nsets && merge; k++) merge = strides[k][d] == strides[k][d + 1] * shape[d + 1];
    if (!merge) continue;
    shape[d] *= shape[d + 1];
    for (int k = 0; k < nsets; k++) strides[k][d] = strides[k][d + 1];
    for (int e = d + 1; e < nd - 1; e++) {
      shape[e] = shape[e + 1];
      for (int k = 0; k < nsets; k++) strides[k][e] = strides[k][e + 1];
    }
    nd--;
  }
  return nd;
}

static void make_knd(ty_knd *w, ty_dtype t, int ndim, const int64_t *shape, const int64_t *strides) {
  memset(w, 0, sizeof *w);
  int64_t sh[TY_MAX_RANK], st[1][TY_MAX_RANK];
  long long n = 1;
  for (int k = 0; k < ndim; k++) {
    sh[k] = shape[k];
    st[0][k] = strides[k];
    n *= shape[k];
  }
  w->ndim = ty__knd_collapse(ndim, sh, 1, st);
  w->n = n;
  w->dtype = (int)t;
  for (int k = 0; k < w->ndim; k++) {
    w->shape[k] = sh[k];
    w->stride[k] = st[0][k];
  }
}

ty_status ty__gpu_fill(ty__gpu *g, int d, int stream, ty_dtype t, int ndim, const int64_t *shape,
                       const int64_t *strides, uint64_t ptr, ty__fillval v, char *err, size_t errlen) {
  ty_status st = use_dev(g, d, err, errlen);
  if (st || (st = need_builtins(g, err, errlen))) return st;
  ty_kfill p;
  memset(&p, 0, sizeof p);
  make_knd(&p.out, t, ndim, shape, strides);
  if (p.out.n == 0) return TY_OK;
  p.ptr = ptr;
  p.ival = v.i;
  p.fval = v.f;
  return launch(g, d, stream, g->dev[d].fn[TY__KFN_FILL], grid_for(&g->dev[d], p.out.n), 1, &p, "fill",
                err, errlen);
}

ty_status ty__gpu_copy(ty__gpu *g, int d, int stream, int ndim, const int64_t *shape, uint64_t dst,
                       const int64_t *dst_strides, uint64_t src, const int64_t *src_strides,
                       size_t es, char *err, size_t errlen) {
  ty_status st = use_dev(g, d, err, errlen);
  if (st || (st = need_builtins(g, err, errlen))) return st;
  ty_kcopy p;
  memset(&p, 0, sizeof p);
  int64_t sh[TY_MAX_RANK], strides[2][TY_MAX_RANK];
  long long n = 1;
  for (int k = 0; k < ndim; k++) {
    sh[k] = shape[k];
    strides[0][k] = dst_strides[k];
    strides[1][k] = src_strides[k];
    n *= shape[k];
  }
  if (n == 0) return TY_OK;
  p.ndim = ty__knd_collapse(ndim, sh, 2, strides);
  p.n = n;
  p.es = (int)es;
  for (int k = 0; k < p.ndim; k++) {
    p.shape[k] = sh[k];
    p.dst_stride[k] = strides[0][k];
    p.src_stride[k] = strides[1][k];
  }
  p.dst = dst;
  p.src = src;
  /* one contiguous run: the copy engine does it */
  if (p.ndim <= 1 && (p.ndim == 0 || (p.dst_stride[0] == 1 && p.src_stride[0] == 1))) {
    CU(g->api.MemcpyDtoDAsync(dst, src, (size_t)n * es, stream_of(g, d, stream)), "copy");
    return TY_OK;
  }
  return launch(g, d, stream, g->dev[d].fn[TY__KFN_COPY], grid_for(&g->dev[d], n), 1, &p, "copy", err,
                errlen);
}

/* kernels_fill.c's key of a random stream */
static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

ty_status ty__gpu_generate(ty__gpu *g, int d, int stream, int kind, const ty_tile *t, uint64_t ptr,
                           const void *args, char *err, size_t errlen) {
  ty_status st = use_dev(g, d, err, errlen);
  if (st || (st = need_builtins(g, err, errlen))) return st;
  ty_kgen p;
  memset(&p, 0, sizeof p);
  long long n = 1;
  p.out.ndim = t->ndim;
  p.out.dtype = (int)t->dtype;
  long long gs = 1;
  for (int k = t->ndim - 1; k >= 0; k--) {
    p.out.shape[k] = t->shape[k];
    p.out.stride[k] = t->strides[k];
    p.lo[k] = t->lo[k];
    p.gstride[k] = gs;
    gs *= t->gshape[k];
    n *= t->shape[k];
  }
  p.out.n = n;
  if (n == 0) return TY_OK;
  p.ptr = ptr;
  p.last = -1;
  int fn;
  if (kind == TY__KFN_RANDOM) {
    const ty__random_args *a = args;
    p.key = mix64(mix64(a->seed) + a->stream * 0xd1b54a32d192ed03ULL);
    _Static_assert((int)TY_K_RAND_BITS == (int)TY_RANDOM_BITS &&
                       (int)TY_K_RAND_UNIFORM == (int)TY_RANDOM_UNIFORM &&
                       (int)TY_K_RAND_NORMAL == (int)TY_RANDOM_NORMAL &&
                       (int)TY_K_RAND_EXPONENTIAL == (int)TY_RANDOM_EXPONENTIAL &&
                       (int)TY_K_RAND_INTEGERS == (int)TY_RANDOM_INTEGERS,
                   "fill.cu's distribution kinds are tycho/random.h's");
    p.rkind = a->kind;
    p.ra = a->a;
    p.rb = a->b;
    p.rlo = a->lo;
    p.rrange = a->range;
    fn = TY__KFN_RANDOM;
  } else if (kind == TY__KFN_ARANGE) {
    const ty__arange_args *a = args;
    p.start = a->start;
    p.step = a->step;
    p.istart = a->istart;
    p.istep = a->istep;
    p.exact = a->exact;
    fn = TY__KFN_ARANGE;
  } else if (kind == TY__KFN_LINSPACE) {
    const ty__linspace_args *a = args;
    p.start = a->a;
    p.step = a->step;
    p.b = a->b;
    p.last = a->n > 1 ? a->n - 1 : -1;
    fn = TY__KFN_LINSPACE;
  } else {
    if (err) snprintf(err, errlen, "unknown generator %d", kind);
    return TY_EINVAL;
  }
  return launch(g, d, stream, g->dev[d].fn[fn], grid_for(&g->dev[d], n), 1, &p, "generator", err, errlen);
}

void ty__kred_plan(int ndim, const int64_t *shape, const int64_t *in_strides,
                   const int64_t *out_strides, int sms, ty_kred *p, int *variant, unsigned *gx,
                   unsigned *gy) {
  memset(p, 0, sizeof *p);
  int64_t osh[TY_MAX_RANK], ost[2][TY_MAX_RANK], rsh[TY_MAX_RANK], rst[1][TY_MAX_RANK];
  int on = 0, rn = 0;
  long long nout = 1, nred = 1;
  for (int k = 0; k < ndim; k++) {
    if (out_strides[k] == 0 && shape[k] != 1) {
      rsh[rn] = shape[k];
      rst[0][rn++] = in_strides[k];
      nred *= shape[k];
    } else {
      osh[on] = shape[k];
      ost[0][on] = in_strides[k];
      ost[1][on++] = out_strides[k];
      nout *= shape[k];
    }
  }
  on = ty__knd_collapse(on, osh, 2, ost);
  rn = ty__knd_collapse(rn, rsh, 1, rst);
  p->nout = nout;
  p->nred = nred;
  p->ondim = on;
  p->rndim = rn;
  for (int k = 0; k < on; k++) {
    p->oshape[k] = osh[k];
    p->ostride_in[k] = ost[0][k];
    p->ostride_out[k] = ost[1][k];
  }
  for (int k = 0; k < rn; k++) {
    p->rshape[k] = rsh[k];
    p->rstride[k] = rst[0][k];
  }
  p->chunks = 1;
  if (sms < 1) sms = 1;
  /* many outputs whose neighbours are neighbours in memory (reducing a
   * leading axis), or too few inputs each to fill a block: a thread each */
  bool coalesced = on > 0 && p->ostride_in[on - 1] == 1;
  if (nred <= 32 || (nout >= (long long)sms * 256 && coalesced)) {
    *variant = TY__KRED_THREADS;
    long long blocks = (nout + TY_K_BLOCK - 1) / TY_K_BLOCK;
    long long cap = (long long)sms * 32;
    *gx = (unsigned)(blocks < 1 ? 1 : blocks > cap ? cap : blocks);
    *gy = 1;
    return;
  }
  /* a block per output; split outputs over `chunks` blocks until ~4 blocks
   * per SM are busy, each still reading >= 4096 elements */
  *variant = TY__KRED_BLOCKS;
  long long want = ((long long)sms * 4 + nout - 1) / nout;
  long long most = nred / 4096;
  long long chunks = want < most ? want : most;
  if (chunks < 1) chunks = 1;
  if (chunks > 65535) chunks = 65535;
  p->chunks = (int)chunks;
  *gx = (unsigned)chunks;
  *gy = (unsigned)(nout < 65535 ? nout : 65535);
}

ty_status ty__gpu_reduce(ty__gpu *g, int d, int stream, ty_reduce_op op, ty_dtype t, int ndim,
                         const int64_t *shape, uint64_t in, const int64_t *in_strides,
                         uint64_t out, const int64_t *out_strides, bool accumulate, char *err,
                         size_t errlen) {
  ty_status st = use_dev(g, d, err, errlen);
  if (st || (st = need_builtins(g, err, errlen))) return st;
  if ((unsigned)op >= TY_NREDUCE || !red_names[op] || (unsigned)t >= TY__GPU_NDTYPES) {
    if (err) snprintf(err, errlen, "reduction %d of %s has no GPU kernel (mean is sum, then divide)", (int)op,
                      ty_dtype_name(t));
    return TY_EINVAL;
  }
  ty_kred p;
  int variant;
  unsigned gx, gy;
  ty__kred_plan(ndim, shape, in_strides, out_strides, g->dev[d].info.sms, &p, &variant, &gx, &gy);
  if (p.nout == 0) return TY_OK;
  p.in = in;
  p.out = out;
  p.accumulate = accumulate;
  if (p.nred == 0) { /* nothing to reduce: the identity (sum 0, prod 1; ops.c refuses min/max) */
    variant = TY__KRED_THREADS;
    p.chunks = 1;
  }
  ty__gpu_block *partials = NULL;
  if (variant == TY__KRED_BLOCKS && p.chunks > 1) {
    st = ty__gpu_alloc(g, d, (size_t)p.nout * (size_t)p.chunks * 16, stream, "reduction partials",
                       &partials, err, errlen);
    if (st) return st;
    p.partials = partials->ptr;
  }
  st = launch(g, d, stream, g->dev[d].red[variant][op][t], gx, gy, &p, "reduction", err, errlen);
  if (st == TY_OK && partials)
    st = launch(g, d, stream, g->dev[d].red[TY__KRED_FINISH][op][t], grid_for(&g->dev[d], p.nout), 1, &p,
                "reduction (finish)", err, errlen);
  if (partials) ty__gpu_free(g, d, partials, stream);
  return st;
}

ty_status ty__gpu_matmul(ty__gpu *g, int d, int stream, ty_dtype t, int64_t m, int64_t n,
                         int64_t k, uint64_t A, int64_t as0, int64_t as1, uint64_t B, int64_t bs0,
                         int64_t bs1, uint64_t C, int64_t ldc, char *err, size_t errlen) {
  ty_status st = use_dev(g, d, err, errlen);
  if (st) return st;
  if (!g->blas_ok) {
    if (err) snprintf(err, errlen, "%s", g->blas_why);
    return TY_ENOTFOUND;
  }
  if (!g->dev[d].blas && (st = ty__blas_handle(&g->blas, &g->dev[d].blas, err, errlen))) return st;
  return ty__blas_gemm(&g->blas, g->dev[d].blas, stream_of(g, d, stream), t, m, n, k, A, as0, as1, B, bs0,
                       bs1, C, ldc, err, errlen);
}
