/*
 * fake_libcuda.c — a CUDA driver library that has one device and no GPU,
 * for tests that load the driver the way a runtime does (TYCHO_LIBCUDA).
 *
 * Every entry point tycho loads succeeds; device memory is host memory.
 * Counters say what a runtime asked for, so a test can check that creating
 * a runtime and running a CPU-only program opens no context, stream or
 * module (issue 16: a CPU-only program pays nothing for GPU support).
 */
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

int fake_cuda_ctx_retains, fake_cuda_streams, fake_cuda_modules, fake_cuda_allocs;

static int ctx_token, mod_token, fn_token, ev_token;

#define OK return 0
CUresult cuInit(unsigned f) { return f ? 1 : 0; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; OK; }
CUresult cuGetErrorName(CUresult r, const char **s) { (void)r; *s = "CUDA_ERROR_FAKE"; OK; }
CUresult cuGetErrorString(CUresult r, const char **s) { (void)r; *s = "fake driver"; OK; }
CUresult cuDeviceGetCount(int *n) { *n = 1; OK; }
CUresult cuDeviceGet(int *d, int i) { *d = i; OK; }
CUresult cuDeviceGetName(char *s, int len, int d) {
  (void)d;
  strncpy(s, "fake GPU", (size_t)len);
  OK;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
  (void)d;
  switch (attr) {
  case 75: *v = 9; break; /* compute capability 9.0 */
  case 76: *v = 0; break;
  case 16: *v = 4; break; /* SMs */
  default: *v = 1; break;
  }
  OK;
}
CUresult cuDeviceTotalMem_v2(size_t *b, int d) { (void)d; *b = (size_t)1 << 30; OK; }
CUresult cuDevicePrimaryCtxRetain(void **c, int d) {
  (void)d;
  fake_cuda_ctx_retains++;
  *c = &ctx_token;
  OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; fake_cuda_ctx_retains--; OK; }
CUresult cuCtxSetCurrent(void *c) { (void)c; OK; }
CUresult cuCtxSynchronize(void) { OK; }
CUresult cuMemGetInfo_v2(size_t *f, size_t *t) { *f = *t = (size_t)1 << 30; OK; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  void *m = calloc(1, n ? n : 1);
  if (!m) return 2;
  fake_cuda_allocs++;
  *p = (CUdeviceptr)(size_t)m;
  OK;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  free((void *)(size_t)p);
  fake_cuda_allocs--;
  OK;
}
CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned f) { (void)p, (void)n, (void)f; OK; }
CUresult cuMemHostUnregister(void *p) { (void)p; OK; }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, void *st) {
  (void)st;
  memcpy((void *)(size_t)d, s, n);
  OK;
}
CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st) {
  (void)st;
  memcpy(d, (const void *)(size_t)s, n);
  OK;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void *st) {
  (void)st;
  memmove((void *)(size_t)d, (const void *)(size_t)s, n);
  OK;
}
CUresult cuMemcpyPeerAsync(CUdeviceptr d, void *dc, CUdeviceptr s, void *sc, size_t n, void *st) {
  (void)dc, (void)sc, (void)st;
  memmove((void *)(size_t)d, (const void *)(size_t)s, n);
  OK;
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *st) {
  (void)st;
  memset((void *)(size_t)d, v, n);
  OK;
}
CUresult cuStreamCreate(void **s, unsigned f) {
  (void)f;
  fake_cuda_streams++;
  *s = malloc(1);
  return *s ? 0 : 2;
}
CUresult cuStreamDestroy_v2(void *s) {
  fake_cuda_streams--;
  free(s);
  OK;
}
CUresult cuStreamSynchronize(void *s) { (void)s; OK; }
CUresult cuStreamWaitEvent(void *s, void *e, unsigned f) { (void)s, (void)e, (void)f; OK; }
CUresult cuEventCreate(void **e, unsigned f) { (void)f; *e = &ev_token; OK; }
CUresult cuEventDestroy_v2(void *e) { (void)e; OK; }
CUresult cuEventRecord(void *e, void *s) { (void)e, (void)s; OK; }
CUresult cuEventQuery(void *e) { (void)e; OK; }
CUresult cuEventSynchronize(void *e) { (void)e; OK; }
CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) { (void)a, (void)b; *ms = 0; OK; }
CUresult cuModuleLoadData(void **m, const void *img) {
  (void)img;
  fake_cuda_modules++;
  *m = &mod_token;
  OK;
}
CUresult cuModuleUnload(void *m) { (void)m; fake_cuda_modules--; OK; }
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  (void)m, (void)name;
  *f = &fn_token;
  OK;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned sh, void *s, void **p, void **e) {
  (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)sh, (void)s, (void)p,
      (void)e;
  return 500; /* no kernel runs here */
}
