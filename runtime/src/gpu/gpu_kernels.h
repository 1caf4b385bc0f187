/*
 * gpu_kernels.h — the GPUs a runtime uses, and running work on them: one
 * context (the device's primary context, shared with cuBLAS), a few
 * streams, a caching pool (gpu_alloc.h) and the built-in kernel modules per
 * device; the fused-kernel caches (gpu_nvrtc.h) and cuBLAS (gpu_blas.h)
 * shared. Every call is asynchronous on the stream it names unless it says
 * otherwise, and returns a status with a message; nothing aborts.
 *
 * These are the entry points the window's GPU path calls (docs/gpu.md has
 * the integration plan): memory (alloc/free through the pool, the copies the
 * coherence tracker asks for), kernels (a fused chain, fill, copy, the
 * generators, reductions, matmul) and ordering (stream waits between waves,
 * synchronisation before host reads).
 *
 * The launch plans (ty__kred_plan, ty__knd_collapse) are pure functions of
 * shapes and strides, unit-tested on the CPU; everything that touches the
 * device runs on a GPU or on simulated ones (--gpus sim:N, gpu_sim.c:
 * tests/c/test_gpu_sim.c runs every entry point below there).
 */
#ifndef TY_GPU_KERNELS_H
#define TY_GPU_KERNELS_H

#include "cuda/kernels_abi.h"
#include "gpu.h"
#include "gpu_alloc.h"
#include "gpu_blas.h"
#include "gpu_codegen.h"
#include "gpu_coherence.h"
#include "gpu_nvrtc.h"
#include "internal.h"
#include "kernels.h"

#define TY__GPU_STREAMS 4 /* per device: enough for a wave's independent launches to overlap */

enum { TY__KFN_FILL = 0, TY__KFN_COPY, TY__KFN_RANDOM, TY__KFN_ARANGE, TY__KFN_LINSPACE, TY__KFN_N };
enum { TY__KRED_BLOCKS = 0, TY__KRED_FINISH, TY__KRED_THREADS, TY__KRED_N };

typedef struct ty__gpu_dev {
  int index;            /* tycho's numbering: coherence place TY__COH_DEV(index) */
  ty_gpu_device info;
  ty__CUdevice cu;
  ty__CUcontext ctx;
  int arch;             /* 10 * major + minor: 90 */
  ty__CUstream stream[TY__GPU_STREAMS];
  ty__CUmodule mod_fill, mod_reduce; /* the embedded fatbins (NULL without them) */
  ty__CUfunction fn[TY__KFN_N];
  ty__CUfunction red[TY__KRED_N][TY_NREDUCE][TY_NDTYPES];
  ty__gpu_pool pool;
  void *blas;           /* cuBLAS handle, made on first matmul */
  ty__CUevent anchor;   /* --trace: an event whose completion time is known (anchor_t) */
  double anchor_t;      /* ty__now() when it completed */
} ty__gpu_dev;

/* A piece timed on a device (--trace): events around its copies and
 * kernel on its stream, read at the end of the flush (ty__gpu_marks_take). */
typedef struct ty__gpu_timing {
  ty__CUevent a, b;
  int device, lane, piece, pieces;
  uint64_t seq;
  char name[TY_MAX_NAME];
} ty__gpu_timing;

typedef struct ty__gpu {
  ty__cuda api;
  ty__gpu_list list;
  int ndev;
  ty__gpu_dev dev[TY_MAX_GPUS];
  ty__nvrtc nv;
  bool nvrtc_ok;
  char nvrtc_why[256];
  ty__ptx_cache ptx;
  ty__blas blas;
  bool blas_ok;
  char blas_why[256];
  bool builtins_ok;     /* the fatbin was compiled in (TYCHO_CUDA_KERNELS) and loaded, or
                           the devices are simulated (their source is always in) */
  bool active;          /* ty__gpu_activate opened the devices */
  size_t fbmem;         /* the pool budget asked for (0: 90% of what is free when opened) */
  ty__gpu_timing *timings; /* --trace: pieces whose device times are not read yet */
  int ntimings, captimings;
} ty__gpu;

/* Discover the GPUs (`requested`, `fbmem` as ty__gpu_select takes them)
 * without opening them: list says what was found and selected, ndev stays 0
 * until ty__gpu_activate. A runtime probes when created and activates when
 * the first launch may run on a GPU, so a CPU-only program creates no
 * context, stream or pool. With no GPU (and none required) *out is a
 * ty__gpu whose list.why says why; TY_EINVAL when more GPUs are required
 * than exist, with the message in err. */
ty_status ty__gpu_probe_only(int requested, size_t fbmem, ty__gpu **out, char *err, size_t errlen);
/* Open the probed devices: contexts, streams, built-in kernels, pools, NVRTC
 * and cuBLAS. Idempotent; TY_EINVAL when a device cannot be opened (then
 * none is). */
ty_status ty__gpu_activate(ty__gpu *g, char *err, size_t errlen);
/* ty__gpu_probe_only, then ty__gpu_activate. */
ty_status ty__gpu_open(int requested, size_t fbmem, ty__gpu **out, char *err, size_t errlen);
/* Waits for all work, frees the pools, modules, streams and contexts. */
void ty__gpu_close(ty__gpu *g);

/* ---- memory ----------------------------------------------------------------------- */

ty_status ty__gpu_alloc(ty__gpu *g, int d, size_t bytes, int stream, const char *what,
                        ty__gpu_block **out, char *err, size_t errlen);
/* Return a block after the work queued so far on `stream` (an event guards
 * its reuse from other streams). */
void ty__gpu_free(ty__gpu *g, int d, ty__gpu_block *b, int stream);
/* Run one copy of the coherence tracker on stream `stream` of the device
 * that is its destination (or its source for a copy to the host):
 * host_base is the storage's host buffer, dev_base[k] its address on device
 * k (0: none). Device-to-host copies must be followed by ty__gpu_sync
 * before the host reads. */
ty_status ty__gpu_copy_run(ty__gpu *g, const ty__coh_copy *c, void *host_base,
                           const uint64_t *dev_base, int stream, char *err, size_t errlen);

/* ---- ordering ------------------------------------------------------------------------ */

/* Stream (dw, sw) waits for the work queued so far on (ds, ss): the edge
 * between two waves, or between launches of one wave on different streams,
 * without a device-wide synchronisation. */
ty_status ty__gpu_stream_wait(ty__gpu *g, int dw, int sw, int ds, int ss, char *err, size_t errlen);
/* Wait on the host: stream s of device d (s -1: all its streams; d -1: all devices). */
ty_status ty__gpu_sync(ty__gpu *g, int d, int s, char *err, size_t errlen);

/* ---- kernels ---------------------------------------------------------------------------- */

/* A fused element-wise chain (its IR's addresses are device k's). */
ty_status ty__gpu_fused(ty__gpu *g, int d, int stream, const ty__gir *ir, char *err, size_t errlen);

/* Drop extent-1 dims and merge dims contiguous for every stride set
 * (nsets of them): the walk the kernels do is then as flat as it can be.
 * Returns the new rank; shape and strides are rewritten in place. */
int ty__knd_collapse(int ndim, int64_t *shape, int nsets, int64_t (*strides)[TY_MAX_RANK]);

ty_status ty__gpu_fill(ty__gpu *g, int d, int stream, ty_dtype t, int ndim, const int64_t *shape,
                       const int64_t *strides, uint64_t ptr, ty__fillval v, char *err, size_t errlen);
/* Same-dtype copy between two views of the same box (element size es). */
ty_status ty__gpu_copy(ty__gpu *g, int d, int stream, int ndim, const int64_t *shape, uint64_t dst,
                       const int64_t *dst_strides, uint64_t src, const int64_t *src_strides,
                       size_t es, char *err, size_t errlen);
/* random / arange / linspace (TY__KFN_RANDOM ...) into a tile: `t` gives
 * dtype, shape, strides, lo, gshape (its data is ignored: ptr is the
 * device address of its first element); args: the task's packed scalars
 * (ty__random_args / ty__arange_args / ty__linspace_args). */
ty_status ty__gpu_generate(ty__gpu *g, int d, int stream, int kind, const ty_tile *t, uint64_t ptr,
                           const void *args, char *err, size_t errlen);

/* Reduction launch plan: the domain `shape`, the input's strides, the
 * output's strides over the same domain (0 on the reduced dims: the
 * launch convention of kernels_reduce.c). Fills p (addresses left 0) and
 * chooses a variant for `sms` multiprocessors: *variant TY__KRED_THREADS or
 * TY__KRED_BLOCKS (p->chunks > 1: a finish pass and a partials buffer of
 * p->nout * p->chunks * 16 bytes), grid in gx, gy. */
void ty__kred_plan(int ndim, const int64_t *shape, const int64_t *in_strides,
                   const int64_t *out_strides, int sms, ty_kred *p, int *variant, unsigned *gx,
                   unsigned *gy);
/* Device time (--trace). ty__gpu_mark records a timing event on stream s
 * of device d (NULL when it cannot: the trace goes without); the first on
 * a device also records and waits for an anchor, whose completion the
 * host clock (ty__now) dates. ty__gpu_mark_times waits for b and gives the
 * host-clock seconds at which a and b completed (false when unknown), and
 * destroys both (a == b: the one). */
ty__CUevent ty__gpu_mark(ty__gpu *g, int d, int s);
bool ty__gpu_mark_times(ty__gpu *g, int d, ty__CUevent a, ty__CUevent b, double *t0, double *t1);

/* op: SUM PROD MIN MAX ARGMIN ARGMAX (MEAN is sum then divide); t the input
 * dtype; the output has the CPU's dtype (sum/prod: i64 for integers and
 * bool; argmin/argmax: i64). accumulate: out = out op result (a REDUCE
 * argument), else out = result. */
ty_status ty__gpu_reduce(ty__gpu *g, int d, int stream, ty_reduce_op op, ty_dtype t, int ndim,
                         const int64_t *shape, uint64_t in, const int64_t *in_strides,
                         uint64_t out, const int64_t *out_strides, bool accumulate, char *err,
                         size_t errlen);

/* C = A B (f64/f32) through cuBLAS on the device; strides in elements. */
ty_status ty__gpu_matmul(ty__gpu *g, int d, int stream, ty_dtype t, int64_t m, int64_t n,
                         int64_t k, uint64_t A, int64_t as0, int64_t as1, uint64_t B, int64_t bs0,
                         int64_t bs1, uint64_t C, int64_t ldc, char *err, size_t errlen);

/* The embedded fatbins (cuda/CMakeLists.txt); NULL, 0 when built without nvcc. */
const void *ty__gpu_fatbin(const char *name, size_t *size);
/* The built-in kernels' CUDA C, one self-contained NUL-terminated text per
 * module ("fill", "reduce"; NULL for another name), in every build: what
 * simulated GPUs load (cuda/embed_sources.cmake). */
const char *ty__gpu_kernel_source(const char *name);

#endif /* TY_GPU_KERNELS_H */
