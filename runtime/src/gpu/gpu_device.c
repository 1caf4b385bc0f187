/*
 * gpu_device.c — loading the CUDA driver at run time, discovering devices,
 * and the --gpus / --fbmem rules.
 *
 * Invariants:
 *  - nothing here links against CUDA: libcuda is opened with dlopen and its
 *    entry points looked up by name (gpu.h), so a binary built with or
 *    without nvcc starts on a machine without a driver;
 *  - discovery never fails: the answer is a list (possibly empty) and, when
 *    empty, the reason, which tycho.config() and the --gpus error show;
 *  - a table is either fully loaded (every entry point present and cuInit
 *    succeeded) or unloaded (lib NULL, entry points NULL).
 */
#include "gpu.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- --gpus ------------------------------------------------------------------- */

ty_status ty_gpus_parse(const char *text, int *out, char *err, size_t errlen) {
  if (!text || !out) return TY_EINVAL;
  if (!strcmp(text, "all") || !strcmp(text, "auto")) {
    *out = 0;
    return TY_OK;
  }
  if (!strcmp(text, "none") || !strcmp(text, "off")) {
    *out = -1;
    return TY_OK;
  }
  bool sim = !strncmp(text, "sim:", 4);
  const char *num = sim ? text + 4 : text;
  char *end = (char *)num;
  errno = 0;
  long v = *num >= '0' && *num <= '9' ? strtol(num, &end, 10) : -1;
  if (v >= (sim ? 1 : 0) && v <= TY_MAX_GPUS && !*end && !errno) {
    /* "--gpus 0" means no GPU, as users expect */
    *out = sim ? TY_GPUS_SIM | (int)v : v == 0 ? -1 : (int)v;
    return TY_OK;
  }
  if (err)
    snprintf(err, errlen,
             "gpus must be 'all', 'none', a count in 0..%d or sim:N (N simulated GPUs, 1..%d), got '%s'",
             TY_MAX_GPUS, TY_MAX_GPUS, text);
  return TY_EINVAL;
}

/* ---- loading ---------------------------------------------------------------------- */

static const char *error_name(ty__CUresult r) {
  switch (r) {
  case TY__CUDA_SUCCESS: return "CUDA_SUCCESS";
  case TY__CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
  case TY__CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
  case TY__CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
  case TY__CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY";
  case TY__CUDA_ERROR_INSUFFICIENT_DRIVER: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
  case TY__CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
  case TY__CUDA_ERROR_NOT_READY: return "CUDA_ERROR_NOT_READY";
  default: return NULL;
  }
}

const char *ty__cuda_error(const ty__cuda *api, ty__CUresult r, char *buf, size_t len) {
  const char *name = NULL, *text = NULL;
  /* a stub library answers cuGetErrorName with an error and no name */
  if (api && api->GetErrorName && api->GetErrorName(r, &name) != TY__CUDA_SUCCESS) name = NULL;
  if (api && api->GetErrorString && api->GetErrorString(r, &text) != TY__CUDA_SUCCESS) text = NULL;
  if (!name) name = error_name(r);
  if (!text && r == TY__CUDA_ERROR_STUB_LIBRARY)
    text = "the CUDA toolkit's stub libcuda was loaded instead of the driver";
  if (!text && r == TY__CUDA_ERROR_NO_DEVICE) text = "no CUDA-capable device is detected";
  snprintf(buf, len, "%s (%d)%s%s", name ? name : "CUDA error", r, text ? ": " : "", text ? text : "");
  return buf;
}

void ty__cuda_unload(ty__cuda *api) {
  if (!api) return;
  if (api->lib) dlclose(api->lib);
  if (api->sim) ty__sim_unload();
  memset(api, 0, sizeof *api);
}

/* Looks `name` up (the first of up to two spellings that exists). */
static void *sym(void *lib, const char *name, const char *alt) {
  void *p = dlsym(lib, name);
  if (!p && alt) p = dlsym(lib, alt);
  return p;
}

ty_status ty__cuda_load(ty__cuda *api, const char *path, char *why, size_t whylen) {
  memset(api, 0, sizeof *api);
  if (!path) {
    const char *env = getenv("TYCHO_LIBCUDA");
    path = env && *env ? env : "libcuda.so.1";
  }
  snprintf(api->path, sizeof api->path, "%s", path);
  dlerror();
  /* NODELETE: the CUDA libraries register atexit handlers and thread-local
   * state that must outlive a dlclose (unloading them is a known crash), and
   * their C++ runtime's pools stay reachable (no false leak reports) */
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!lib) {
    const char *e = dlerror();
    if (why)
      snprintf(why, whylen, "%s could not be loaded (no NVIDIA driver installed?): %s", path,
               e ? e : "unknown error");
    return TY_ENOTFOUND;
  }
  api->lib = lib;
  const char *missing = NULL;
#define LOAD(field, name, alt)                                                           \
  do {                                                                                   \
    *(void **)&api->field = sym(lib, name, alt);                                         \
    if (!api->field && !missing) missing = name;                                         \
  } while (0)
  LOAD(Init, "cuInit", NULL);
  LOAD(DriverGetVersion, "cuDriverGetVersion", NULL);
  LOAD(GetErrorName, "cuGetErrorName", NULL);
  LOAD(GetErrorString, "cuGetErrorString", NULL);
  LOAD(DeviceGetCount, "cuDeviceGetCount", NULL);
  LOAD(DeviceGet, "cuDeviceGet", NULL);
  LOAD(DeviceGetName, "cuDeviceGetName", NULL);
  LOAD(DeviceGetAttribute, "cuDeviceGetAttribute", NULL);
  LOAD(DeviceTotalMem, "cuDeviceTotalMem_v2", NULL);
  LOAD(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL);
  LOAD(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
  LOAD(CtxSetCurrent, "cuCtxSetCurrent", NULL);
  LOAD(CtxSynchronize, "cuCtxSynchronize", NULL);
  LOAD(MemGetInfo, "cuMemGetInfo_v2", NULL);
  LOAD(MemAlloc, "cuMemAlloc_v2", NULL);
  LOAD(MemFree, "cuMemFree_v2", NULL);
  LOAD(MemHostRegister, "cuMemHostRegister_v2", "cuMemHostRegister");
  LOAD(MemHostUnregister, "cuMemHostUnregister", NULL);
  LOAD(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", NULL);
  LOAD(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", NULL);
  LOAD(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", NULL);
  LOAD(MemcpyPeerAsync, "cuMemcpyPeerAsync", NULL);
  LOAD(MemsetD8Async, "cuMemsetD8Async", NULL);
  LOAD(StreamCreate, "cuStreamCreate", NULL);
  LOAD(StreamDestroy, "cuStreamDestroy_v2", "cuStreamDestroy");
  LOAD(StreamSynchronize, "cuStreamSynchronize", NULL);
  LOAD(StreamWaitEvent, "cuStreamWaitEvent", NULL);
  LOAD(EventCreate, "cuEventCreate", NULL);
  LOAD(EventDestroy, "cuEventDestroy_v2", "cuEventDestroy");
  LOAD(EventRecord, "cuEventRecord", NULL);
  LOAD(EventQuery, "cuEventQuery", NULL);
  LOAD(EventSynchronize, "cuEventSynchronize", NULL);
  LOAD(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
  LOAD(ModuleLoadData, "cuModuleLoadData", NULL);
  LOAD(ModuleUnload, "cuModuleUnload", NULL);
  LOAD(ModuleGetFunction, "cuModuleGetFunction", NULL);
  LOAD(LaunchKernel, "cuLaunchKernel", NULL);
#undef LOAD
  if (missing) {
    if (why)
      snprintf(why, whylen, "%s has no %s: the NVIDIA driver is too old (CUDA 11 or later needed)",
               path, missing);
    ty__cuda_unload(api);
    return TY_ENOTFOUND;
  }
  ty__CUresult r = api->Init(0);
  if (r != TY__CUDA_SUCCESS) {
    char e[200];
    if (why) snprintf(why, whylen, "cuInit failed: %s", ty__cuda_error(api, r, e, sizeof e));
    ty__cuda_unload(api);
    return TY_EINVAL;
  }
  return TY_OK;
}

/* ---- discovery ------------------------------------------------------------------------ */

static void human(size_t bytes, char *buf, size_t len) { ty_format_bytes((double)bytes, buf, len); }

void ty__gpu_discover(const ty__cuda *api, const char *load_why, ty__gpu_list *out) {
  memset(out, 0, sizeof *out);
  if (!api || !api->Init) {
    snprintf(out->why, sizeof out->why, "%s", load_why && *load_why ? load_why : "no CUDA driver");
    return;
  }
  char e[200];
  if (api->DriverGetVersion(&out->driver_version) != TY__CUDA_SUCCESS) out->driver_version = 0;
  int n = 0;
  ty__CUresult r = api->DeviceGetCount(&n);
  if (r != TY__CUDA_SUCCESS) {
    snprintf(out->why, sizeof out->why, "cuDeviceGetCount failed: %s",
             ty__cuda_error(api, r, e, sizeof e));
    return;
  }
  if (n <= 0) {
    snprintf(out->why, sizeof out->why, "the CUDA driver (%d.%d) reports no device",
             out->driver_version / 1000, out->driver_version % 1000 / 10);
    return;
  }
  int skipped = 0;
  char skip_why[256] = "";
  for (int i = 0; i < n && out->count < TY_MAX_GPUS; i++) {
    ty__CUdevice d;
    ty_gpu_device g;
    memset(&g, 0, sizeof g);
    g.ordinal = i;
    r = api->DeviceGet(&d, i);
    if (r == TY__CUDA_SUCCESS) r = api->DeviceGetName(g.name, (int)sizeof g.name, d);
    if (r == TY__CUDA_SUCCESS) r = api->DeviceGetAttribute(&g.cc_major, TY__CU_ATTR_CC_MAJOR, d);
    if (r == TY__CUDA_SUCCESS) r = api->DeviceGetAttribute(&g.cc_minor, TY__CU_ATTR_CC_MINOR, d);
    if (r == TY__CUDA_SUCCESS) r = api->DeviceGetAttribute(&g.sms, TY__CU_ATTR_SMS, d);
    if (r == TY__CUDA_SUCCESS) r = api->DeviceTotalMem(&g.total_mem, d);
    if (r != TY__CUDA_SUCCESS) {
      skipped++;
      snprintf(skip_why, sizeof skip_why, "device %d: %s", i, ty__cuda_error(api, r, e, sizeof e));
      continue;
    }
    g.name[sizeof g.name - 1] = 0;
    /* PCI location is informative only */
    if (api->DeviceGetAttribute(&g.pci_domain, TY__CU_ATTR_PCI_DOMAIN, d)) g.pci_domain = -1;
    if (api->DeviceGetAttribute(&g.pci_bus, TY__CU_ATTR_PCI_BUS, d)) g.pci_bus = -1;
    if (api->DeviceGetAttribute(&g.pci_device, TY__CU_ATTR_PCI_DEVICE, d)) g.pci_device = -1;
    if (g.cc_major < 6) {
      skipped++;
      snprintf(skip_why, sizeof skip_why, "device %d (%.100s) has compute capability %d.%d, tycho needs 6.0",
               i, g.name, g.cc_major, g.cc_minor);
      continue;
    }
    /* free memory needs a context; discovery must not create one (it costs
     * ~100 ms and ~300 MB per device), so it starts as the total and the
     * runtime refreshes it once the device's context exists */
    g.free_mem = g.total_mem;
    out->dev[out->count++] = g;
  }
  if (out->count == 0)
    snprintf(out->why, sizeof out->why, "%d device%s found but none usable: %s", n, n == 1 ? "" : "s",
             skip_why);
  else
    snprintf(out->why, sizeof out->why, "%d GPU%s (driver %d.%d)%s%s", out->count,
             out->count == 1 ? "" : "s", out->driver_version / 1000,
             out->driver_version % 1000 / 10, skipped ? "; skipped " : "", skipped ? skip_why : "");
}

ty_status ty__gpu_select(const ty__gpu_list *found, int requested, size_t fbmem,
                         ty__gpu_list *use, char *err, size_t errlen) {
  memset(use, 0, sizeof *use);
  use->driver_version = found->driver_version;
  if (requested < -1 || requested > TY_MAX_GPUS) {
    if (err) snprintf(err, errlen, "--gpus %d: must be 'all', 'none' or 0..%d", requested, TY_MAX_GPUS);
    return TY_EINVAL;
  }
  if (requested == -1) {
    snprintf(use->why, sizeof use->why, "none requested (--gpus none)");
    return TY_OK;
  }
  if (requested > found->count) {
    if (err) {
      if (found->count == 0) {
        snprintf(err, errlen, "--gpus %d: no GPU was found: %s", requested, found->why);
      } else {
        char list[256] = "";
        size_t k = 0;
        for (int i = 0; i < found->count && k < sizeof list; i++) {
          char mem[32];
          human(found->dev[i].total_mem, mem, sizeof mem);
          int w = snprintf(list + k, sizeof list - k, "%s%d: %s, %s", i ? "; " : "",
                           found->dev[i].ordinal, found->dev[i].name, mem);
          if (w < 0) break;
          k += (size_t)w;
        }
        snprintf(err, errlen, "--gpus %d: only %d GPU%s %s found (%s)", requested, found->count,
                 found->count == 1 ? "" : "s", found->count == 1 ? "was" : "were", list);
      }
    }
    return TY_EINVAL;
  }
  int n = requested == 0 ? found->count : requested;
  for (int i = 0; i < n; i++) {
    ty_gpu_device g = found->dev[i];
    if (fbmem > g.total_mem) {
      if (err) {
        char a[32], b[32];
        human(fbmem, a, sizeof a);
        human(g.total_mem, b, sizeof b);
        snprintf(err, errlen, "--fbmem %s: more than the %s of GPU %d (%s)", a, b, g.ordinal, g.name);
      }
      return TY_EINVAL;
    }
    /* 90%: the context, cuBLAS workspaces and NVRTC modules live outside the pool */
    g.fbmem = fbmem ? fbmem : g.free_mem / 10 * 9;
    use->dev[use->count++] = g;
  }
  snprintf(use->why, sizeof use->why, "%s", found->why);
  return TY_OK;
}

ty_status ty__gpu_probe(ty__cuda *api, int requested, size_t fbmem, ty__gpu_list *use,
                        char *err, size_t errlen) {
  char why[320] = "";
  ty__gpu_list found;
  memset(api, 0, sizeof *api);
  if (requested == -1) {
    memset(use, 0, sizeof *use);
    snprintf(use->why, sizeof use->why, "none requested (--gpus none)");
    return TY_OK;
  }
  int sim = requested > 0 && (requested & TY_GPUS_SIM) ? requested & ~TY_GPUS_SIM : 0;
  if (sim) {
    ty_status ls = ty__sim_load(api, sim, why, sizeof why);
    if (ls != TY_OK) {
      memset(use, 0, sizeof *use);
      if (err) snprintf(err, errlen, "--gpus sim:%d: %s", sim, why);
      return ls;
    }
    ty__gpu_discover(api, why, &found);
    snprintf(found.why, sizeof found.why, "%d simulated GPU%s (on the CPU: --gpus sim:%d, docs/gpu.md)",
             sim, sim == 1 ? "" : "s", sim);
    requested = sim;
  } else {
    ty_status ls = ty__cuda_load(api, NULL, why, sizeof why);
    ty__gpu_discover(ls == TY_OK ? api : NULL, why, &found);
  }
  ty_status st = ty__gpu_select(&found, requested, fbmem, use, err, errlen);
  if (st != TY_OK || use->count == 0) ty__cuda_unload(api);
  return st;
}

ty_status ty_gpus_check(int gpus, size_t fbmem, char *err, size_t errlen) {
  ty__cuda api;
  ty__gpu_list use;
  ty_status st = ty__gpu_probe(&api, gpus, fbmem, &use, err, errlen);
  ty__cuda_unload(&api);
  return st;
}

void ty__gpu_describe(const ty__gpu_list *l, char *buf, size_t len) {
  if (!len) return;
  buf[0] = 0;
  if (l->count == 0) {
    snprintf(buf, len, "gpus: none (%s)", l->why);
    return;
  }
  size_t k = 0;
  for (int i = 0; i < l->count && k < len; i++) {
    const ty_gpu_device *g = &l->dev[i];
    char mem[32], pool[32];
    human(g->total_mem, mem, sizeof mem);
    human(g->fbmem, pool, sizeof pool);
    int w = snprintf(buf + k, len - k, "%sgpu %d: %s, cc %d.%d, %d SMs, %s (pool %s)", i ? "\n" : "",
                     g->ordinal, g->name, g->cc_major, g->cc_minor, g->sms, mem, pool);
    if (w < 0) break;
    k += (size_t)w;
  }
}
