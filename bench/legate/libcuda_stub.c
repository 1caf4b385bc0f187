/*
 * libcuda_stub.c — a CUDA driver library (libcuda.so.1) for a machine with
 * no NVIDIA driver, so that the PyPI build of Legate/cuPyNumeric loads and
 * runs its CPU variants there.
 *
 * The nvidia-cupynumeric wheels are one build with CUDA: liblegate.so,
 * librealm and libcupynumeric.so are linked against libcuda.so.1, which only
 * an NVIDIA driver installs, so `import cupynumeric` fails with
 * "libcuda.so.1: cannot open shared object file" on a CPU-only machine.
 * This stub plays the driver of a machine without GPUs: cuInit and every
 * entry point answer CUDA_ERROR_NO_DEVICE (100); Realm's CUDA module then
 * reports that it cannot discover CUDA resources and Legate runs on CPUs
 * (bench/run passes `--gpus 0`). Realm looks entry points up through
 * cuGetProcAddress, so that hands out the few real functions below and a
 * catch-all that returns CUDA_ERROR_NO_DEVICE for any other name (whatever
 * its arguments: on x86-64 a callee may ignore them).
 *
 * Built by bench/run into <build>/bench/cudastub/ and put on
 * LD_LIBRARY_PATH for the cuPyNumeric peer only, and only when no real
 * libcuda.so.1 is found. Never used by tycho.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

typedef int CUresult;
#define NO_DEVICE 100

static CUresult no_device(void) { return NO_DEVICE; }

CUresult cuInit(unsigned flags) { (void)flags; return NO_DEVICE; }
CUresult cuDriverGetVersion(int *v) { if (v) *v = 13000; return 0; }
CUresult cuDeviceGetCount(int *n) { if (n) *n = 0; return NO_DEVICE; }
CUresult cuGetErrorName(CUresult e, const char **s) {
  (void)e;
  if (s) *s = "CUDA_ERROR_NO_DEVICE";
  return 0;
}
CUresult cuGetErrorString(CUresult e, const char **s) {
  (void)e;
  if (s) *s = "no CUDA-capable device is detected (bench/legate/libcuda_stub.c)";
  return 0;
}
CUresult cuMemFreeHost(void *p) { (void)p; return NO_DEVICE; }
CUresult cuMemFree_v2(unsigned long long p) { (void)p; return NO_DEVICE; }

static void *lookup(const char *name) {
  static const char *const own[] = {"cuInit", "cuDriverGetVersion", "cuDeviceGetCount",
                                    "cuGetErrorName", "cuGetErrorString", NULL};
  for (int i = 0; own[i]; i++)
    if (!strcmp(name, own[i])) {
      void *f = dlsym(RTLD_DEFAULT, name);
      if (f) return f;
    }
  return (void *)no_device;
}

CUresult cuGetProcAddress(const char *name, void **fn, int version, unsigned long long flags) {
  (void)version, (void)flags;
  if (fn) *fn = lookup(name);
  return 0;
}
CUresult cuGetProcAddress_v2(const char *name, void **fn, int version, unsigned long long flags,
                             int *status) {
  (void)version, (void)flags;
  if (status) *status = 0;
  if (fn) *fn = lookup(name);
  return 0;
}
