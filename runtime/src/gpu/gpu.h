/*
 * gpu.h — NVIDIA GPUs through the CUDA driver API, loaded at run time.
 *
 * tycho never links against libcuda: the driver library is opened with
 * dlopen when a runtime starts, so one binary runs on machines with and
 * without a GPU or a driver. Everything the core calls goes through a table
 * of function pointers (ty__cuda) filled by ty__cuda_load; declaring the few
 * types and constants here (their values are the CUDA ABI, stable since CUDA
 * 4) lets this file and its users compile without CUDA headers.
 *
 * Discovery never fails: with no library, a stub library (the toolkit's
 * libcuda stub returns CUDA_ERROR_STUB_LIBRARY), no device, or a driver too
 * old, it reports 0 GPUs and says why. Asking for more GPUs than exist
 * (--gpus N) is an error made by ty__gpu_select, with a message a shell can
 * print as is.
 *
 * Modules of this family (one concept per file):
 *   gpu_device.c    loading the driver, discovery, --gpus / --fbmem
 *   gpu_codegen.c   fused element-wise chains -> CUDA C (gpu_codegen.h)
 *   gpu_nvrtc.c     NVRTC at run time, PTX caches in memory and on disk
 *   gpu_coherence.c where each byte range of a storage is valid (gpu_coherence.h)
 *   gpu_alloc.c     per-device caching allocator with a budget (gpu_alloc.h)
 *   gpu_kernels.c   modules, streams and launches of the built-in kernels
 *                   (the .cu files of runtime/src/cuda, embedded as a fatbin)
 *   gpu_blas.c      matmul through cuBLAS, loaded at run time
 *   gpu_sim.c       simulated GPUs on the CPU (--gpus sim:N): this table and
 *                   cuBLAS's, for machines without a GPU (docs/gpu.md)
 */
#ifndef TY_GPU_H
#define TY_GPU_H

#include "tycho/tycho.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The public GPU declarations (ty_gpu_device, ty_gpus_parse, ty_gpus_check) are
 * in tycho.h. */

/* ---- the driver API, as much as tycho uses -------------------------------------- */

typedef int ty__CUresult; /* CUresult */
typedef int ty__CUdevice;
typedef struct ty__CUctx_st *ty__CUcontext;
typedef struct ty__CUmod_st *ty__CUmodule;
typedef struct ty__CUfunc_st *ty__CUfunction;
typedef struct ty__CUstream_st *ty__CUstream;
typedef struct ty__CUevent_st *ty__CUevent;
typedef unsigned long long ty__CUdeviceptr;

enum {
  TY__CUDA_SUCCESS = 0,
  TY__CUDA_ERROR_INVALID_VALUE = 1,
  TY__CUDA_ERROR_OUT_OF_MEMORY = 2,
  TY__CUDA_ERROR_NOT_INITIALIZED = 3,
  TY__CUDA_ERROR_STUB_LIBRARY = 34,
  TY__CUDA_ERROR_INSUFFICIENT_DRIVER = 35,
  TY__CUDA_ERROR_NO_DEVICE = 100,
  TY__CUDA_ERROR_INVALID_IMAGE = 200,
  TY__CUDA_ERROR_INVALID_CONTEXT = 201,
  TY__CUDA_ERROR_INVALID_SOURCE = 300,
  TY__CUDA_ERROR_INVALID_HANDLE = 400,
  TY__CUDA_ERROR_NOT_FOUND = 500,
  TY__CUDA_ERROR_NOT_READY = 600,
  TY__CUDA_ERROR_ILLEGAL_ADDRESS = 700
};
enum {
  TY__CU_ATTR_SMS = 16,
  TY__CU_ATTR_PCI_BUS = 33,
  TY__CU_ATTR_PCI_DEVICE = 34,
  TY__CU_ATTR_UNIFIED_ADDRESSING = 41,
  TY__CU_ATTR_PCI_DOMAIN = 50,
  TY__CU_ATTR_CC_MAJOR = 75,
  TY__CU_ATTR_CC_MINOR = 76
};
enum { TY__CU_STREAM_NON_BLOCKING = 1, TY__CU_EVENT_DISABLE_TIMING = 2 };

/* The entry points, by the names libcuda exports (the _v2 forms are the
 * ones cuda.h maps the plain names to since CUDA 4 / 12.8). */
typedef struct ty__cuda {
  void *lib;          /* dlopen handle; NULL for a table filled by hand (tests) */
  char path[256];     /* what was opened ("sim": the simulator) */
  bool sim;           /* the simulated GPUs of gpu_sim.c: modules are CUDA C source */
  ty__CUresult (*Init)(unsigned flags);
  ty__CUresult (*DriverGetVersion)(int *version);
  ty__CUresult (*GetErrorName)(ty__CUresult r, const char **s);
  ty__CUresult (*GetErrorString)(ty__CUresult r, const char **s);
  ty__CUresult (*DeviceGetCount)(int *n);
  ty__CUresult (*DeviceGet)(ty__CUdevice *d, int ordinal);
  ty__CUresult (*DeviceGetName)(char *name, int len, ty__CUdevice d);
  ty__CUresult (*DeviceGetAttribute)(int *v, int attr, ty__CUdevice d);
  ty__CUresult (*DeviceTotalMem)(size_t *bytes, ty__CUdevice d);
  /* used once a device is in use (gpu_kernels.c, gpu_alloc backends) */
  ty__CUresult (*DevicePrimaryCtxRetain)(ty__CUcontext *c, ty__CUdevice d);
  ty__CUresult (*DevicePrimaryCtxRelease)(ty__CUdevice d);
  ty__CUresult (*CtxSetCurrent)(ty__CUcontext c);
  ty__CUresult (*CtxSynchronize)(void);
  ty__CUresult (*MemGetInfo)(size_t *free_bytes, size_t *total);
  ty__CUresult (*MemAlloc)(ty__CUdeviceptr *p, size_t bytes);
  ty__CUresult (*MemFree)(ty__CUdeviceptr p);
  ty__CUresult (*MemHostRegister)(void *p, size_t bytes, unsigned flags);
  ty__CUresult (*MemHostUnregister)(void *p);
  ty__CUresult (*MemcpyHtoDAsync)(ty__CUdeviceptr dst, const void *src, size_t bytes, ty__CUstream s);
  ty__CUresult (*MemcpyDtoHAsync)(void *dst, ty__CUdeviceptr src, size_t bytes, ty__CUstream s);
  ty__CUresult (*MemcpyDtoDAsync)(ty__CUdeviceptr dst, ty__CUdeviceptr src, size_t bytes,
                                  ty__CUstream s);
  ty__CUresult (*MemcpyPeerAsync)(ty__CUdeviceptr dst, ty__CUcontext dctx, ty__CUdeviceptr src,
                                  ty__CUcontext sctx, size_t bytes, ty__CUstream s);
  ty__CUresult (*MemsetD8Async)(ty__CUdeviceptr dst, unsigned char v, size_t n, ty__CUstream s);
  ty__CUresult (*StreamCreate)(ty__CUstream *s, unsigned flags);
  ty__CUresult (*StreamDestroy)(ty__CUstream s);
  ty__CUresult (*StreamSynchronize)(ty__CUstream s);
  ty__CUresult (*StreamWaitEvent)(ty__CUstream s, ty__CUevent e, unsigned flags);
  ty__CUresult (*EventCreate)(ty__CUevent *e, unsigned flags);
  ty__CUresult (*EventDestroy)(ty__CUevent e);
  ty__CUresult (*EventRecord)(ty__CUevent e, ty__CUstream s);
  ty__CUresult (*EventQuery)(ty__CUevent e);
  ty__CUresult (*EventSynchronize)(ty__CUevent e);
  ty__CUresult (*EventElapsedTime)(float *ms, ty__CUevent a, ty__CUevent b);
  ty__CUresult (*ModuleLoadData)(ty__CUmodule *m, const void *image);
  ty__CUresult (*ModuleUnload)(ty__CUmodule m);
  ty__CUresult (*ModuleGetFunction)(ty__CUfunction *f, ty__CUmodule m, const char *name);
  ty__CUresult (*LaunchKernel)(ty__CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                               unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                               ty__CUstream s, void **params, void **extra);
} ty__cuda;

/* Open the driver: `path` if not NULL, else $TYCHO_LIBCUDA if set, else
 * "libcuda.so.1" (the name the driver installs; "libcuda.so" exists only
 * with the toolkit's stubs or development links). Fills every entry point
 * and calls cuInit(0). TY_ENOTFOUND (no library, or a symbol missing: a
 * driver older than CUDA 11) or TY_EINVAL (cuInit failed: stub library, no
 * device, kernel module not loaded, driver/library mismatch) with the
 * reason in `why`; the table is then unloaded. */
ty_status ty__cuda_load(ty__cuda *api, const char *path, char *why, size_t whylen);
void ty__cuda_unload(ty__cuda *api);
/* "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory" into buf; works on a table
 * that failed to load (the code alone). */
const char *ty__cuda_error(const ty__cuda *api, ty__CUresult r, char *buf, size_t len);

/* The simulated GPUs (gpu_sim.c): fills every entry point with the
 * simulator's (lib NULL, path "sim", sim true) and makes `ndev` devices
 * (1..TY_MAX_GPUS) exist: "tycho simulated GPU <i>", cc 9.0, 4 SMs,
 * $TYCHO_SIM_MEM (default 4 GiB) of memory each. The simulator is one per
 * process, like the driver: devices exist while a table is loaded (the most
 * any loaded table asked for). ty__cuda_unload undoes it. TY_EINVAL with
 * the reason for a bad ndev or TYCHO_SIM_MEM. */
ty_status ty__sim_load(ty__cuda *api, int ndev, char *why, size_t whylen);
void ty__sim_unload(void); /* what ty__cuda_unload calls for a simulated table */

/* ---- discovery ------------------------------------------------------------------ */

typedef struct ty__gpu_list {
  int count;                      /* devices found (0 when none or no driver) */
  int driver_version;             /* 13000 for CUDA 13.0; 0 without a driver */
  ty_gpu_device dev[TY_MAX_GPUS];
  char why[320];                  /* count == 0: the reason; else a summary */
} ty__gpu_list;

/* Enumerate the devices of a loaded table (api NULL or not loaded: 0 GPUs
 * with `load_why` as the reason). Devices beyond TY_MAX_GPUS are ignored,
 * devices below compute capability 6.0 are skipped (the generated kernels
 * and the fatbin need 64-bit atomics and unified addressing), and an error
 * on one device skips it: the rest stay usable. */
void ty__gpu_discover(const ty__cuda *api, const char *load_why, ty__gpu_list *out);

/* The devices a runtime uses: `requested` as ty_gpus_parse gives it (0
 * all, -1 none, N exactly N; TY_GPUS_SIM | N: ty__gpu_probe only), `fbmem` the pool budget per device in bytes
 * (0: 90% of its free memory; more than its total memory is an error).
 * TY_EINVAL when N > found->count, with a message that says how many
 * exist and why there are not more, e.g.
 *   "--gpus 2: only 1 GPU was found (0: NVIDIA H200, 139.8 GiB)"
 *   "--gpus 1: no GPU was found: libcuda.so.1 could not be loaded (...)" */
ty_status ty__gpu_select(const ty__gpu_list *found, int requested, size_t fbmem,
                         ty__gpu_list *use, char *err, size_t errlen);

/* Load, discover and select in one call (what ty_runtime_create does);
 * requested TY_GPUS_SIM | N loads the simulator (ty__sim_load) instead of
 * libcuda:
 * on success `api` stays loaded when use->count > 0 (unload it with
 * ty__cuda_unload) and is unloaded otherwise. */
ty_status ty__gpu_probe(ty__cuda *api, int requested, size_t fbmem, ty__gpu_list *use,
                        char *err, size_t errlen);

/* One line per device for tycho.config() / --version:
 * "gpu 0: NVIDIA H200, cc 9.0, 132 SMs, 139.8 GiB (pool 125.8 GiB)",
 * or "gpus: none (<why>)". */
void ty__gpu_describe(const ty__gpu_list *l, char *buf, size_t len);

#endif /* TY_GPU_H */
