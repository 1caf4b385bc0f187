/*
 * test_gpu_device.c — GPU discovery and the --gpus / --fbmem rules
 * (gpu_device.c), on any machine: without a driver discovery reports 0
 * GPUs and why, the toolkit's stub libcuda is recognised, a fake driver
 * table is enumerated (skipping unusable devices), and asking for more GPUs
 * than exist is a clear error. The cases named gpu_* need a real GPU and
 * report themselves skipped without one (exit code 77 when run alone:
 * CTest's SKIP_RETURN_CODE).
 */
#include "check.h"

#include "gpu.h"
#include "gpu_kernels.h"

#include <dlfcn.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_test_setup.h" /* SKIP */

TEST(gpus_option_parses) {
  int n = 99;
  char err[200] = "";
  CHECK_EQ_INT(ty_gpus_parse("all", &n, err, sizeof err), TY_OK);
  CHECK_EQ_INT(n, 0);
  CHECK_EQ_INT(ty_gpus_parse("none", &n, err, sizeof err), TY_OK);
  CHECK_EQ_INT(n, -1);
  CHECK_EQ_INT(ty_gpus_parse("0", &n, err, sizeof err), TY_OK);
  CHECK_EQ_INT(n, -1); /* --gpus 0: CPU only */
  CHECK_EQ_INT(ty_gpus_parse("2", &n, err, sizeof err), TY_OK);
  CHECK_EQ_INT(n, 2);
  CHECK_EQ_INT(ty_gpus_parse("-1", &n, err, sizeof err), TY_EINVAL);
  CHECK_STR_CONTAINS(err, "gpus must be 'all', 'none', a count in 0..16 or sim:N (N simulated GPUs, 1..16), got '-1'");
  CHECK_EQ_INT(ty_gpus_parse("17", &n, err, sizeof err), TY_EINVAL);
  CHECK_EQ_INT(ty_gpus_parse("two", &n, err, sizeof err), TY_EINVAL);
  CHECK_EQ_INT(ty_gpus_parse("", &n, err, sizeof err), TY_EINVAL);
}

TEST(discovery_without_a_driver_reports_zero_and_why) {
  ty__cuda api;
  char why[320] = "";
  CHECK_EQ_INT(ty__cuda_load(&api, "/nonexistent/libcuda.so.1", why, sizeof why), TY_ENOTFOUND);
  CHECK(api.lib == NULL && api.Init == NULL);
  CHECK_STR_CONTAINS(why, "/nonexistent/libcuda.so.1 could not be loaded");
  ty__gpu_list l;
  ty__gpu_discover(&api, why, &l);
  CHECK_EQ_INT(l.count, 0);
  CHECK_EQ_INT(l.driver_version, 0);
  CHECK_STR_CONTAINS(l.why, "could not be loaded");
  ty__gpu_discover(NULL, NULL, &l);
  CHECK_EQ_INT(l.count, 0);
  CHECK_STR_CONTAINS(l.why, "no CUDA driver");
  /* the whole probe never fails when GPUs are optional */
  setenv("TYCHO_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  ty__gpu_list use;
  char err[512] = "";
  CHECK_EQ_INT(ty__gpu_probe(&api, 0, 0, &use, err, sizeof err), TY_OK);
  CHECK_EQ_INT(use.count, 0);
  CHECK_STR_CONTAINS(use.why, "could not be loaded");
  CHECK(api.lib == NULL);
  char line[512];
  ty__gpu_describe(&use, line, sizeof line);
  CHECK_STR_CONTAINS(line, "gpus: none (/nonexistent/libcuda.so.1 could not be loaded");
  /* ... but asking for one is an error that says why there is none */
  CHECK_EQ_INT(ty__gpu_probe(&api, 1, 0, &use, err, sizeof err), TY_EINVAL);
  CHECK_STR_CONTAINS(err, "--gpus 1: no GPU was found: /nonexistent/libcuda.so.1 could not be loaded");
  /* the check a shell makes before creating its runtime */
  CHECK_EQ_INT(ty_gpus_check(0, 0, err, sizeof err), TY_OK);
  CHECK_EQ_INT(ty_gpus_check(3, 0, err, sizeof err), TY_EINVAL);
  CHECK_STR_CONTAINS(err, "--gpus 3: no GPU was found");
  /* and --gpus none does not even look */
  CHECK_EQ_INT(ty__gpu_probe(&api, -1, 0, &use, err, sizeof err), TY_OK);
  CHECK_STR_CONTAINS(use.why, "none requested");
  unsetenv("TYCHO_LIBCUDA");
}

/* The toolkit ships a libcuda stub (for linking); loading it is not a driver. */
TEST(stub_libcuda_is_recognised) {
  static const char *const paths[] = {"/usr/local/cuda/lib64/stubs/libcuda.so",
                                      "/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so"};
  const char *stub = NULL;
  for (size_t i = 0; i < sizeof paths / sizeof paths[0] && !stub; i++)
    if (access(paths[i], R_OK) == 0) stub = paths[i];
  if (!stub) SKIP("no CUDA toolkit stub libcuda.so here");
  ty__cuda api;
  char why[320] = "";
  CHECK_EQ_INT(ty__cuda_load(&api, stub, why, sizeof why), TY_EINVAL);
  CHECK_STR_CONTAINS(why, "cuInit failed: CUDA_ERROR_STUB_LIBRARY (34)");
  CHECK(api.lib == NULL);
}

/* ---- a fake driver ------------------------------------------------------------------ */

static const struct {
  const char *name;
  int major, minor, sms;
  size_t mem;
  int fail; /* the name query fails */
} fake_devs[] = {
    {"NVIDIA H200", 9, 0, 132, (size_t)150754820096ULL, 0},
    {"Tesla K80", 3, 7, 13, (size_t)12 << 30, 0},
    {"NVIDIA A100-SXM4-80GB", 8, 0, 108, (size_t)85899345920ULL, 0},
    {"broken", 9, 0, 1, 1, 1},
};
static int fake_ndev = 4;

static ty__CUresult f_init(unsigned f) { return f ? 1 : 0; }
static ty__CUresult f_version(int *v) { *v = 13000; return 0; }
static ty__CUresult f_count(int *n) { *n = fake_ndev; return 0; }
static ty__CUresult f_get(ty__CUdevice *d, int i) { *d = i; return 0; }
static ty__CUresult f_name(char *s, int len, ty__CUdevice d) {
  if (fake_devs[d].fail) return 999; /* CUDA_ERROR_UNKNOWN */
  snprintf(s, (size_t)len, "%s", fake_devs[d].name);
  return 0;
}
static ty__CUresult f_attr(int *v, int attr, ty__CUdevice d) {
  switch (attr) {
  case TY__CU_ATTR_CC_MAJOR: *v = fake_devs[d].major; return 0;
  case TY__CU_ATTR_CC_MINOR: *v = fake_devs[d].minor; return 0;
  case TY__CU_ATTR_SMS: *v = fake_devs[d].sms; return 0;
  case TY__CU_ATTR_PCI_BUS: *v = 0x18 + d; return 0;
  default: return 1;
  }
}
static ty__CUresult f_mem(size_t *b, ty__CUdevice d) { *b = fake_devs[d].mem; return 0; }

static void fake_api(ty__cuda *api) {
  memset(api, 0, sizeof *api);
  api->Init = f_init;
  api->DriverGetVersion = f_version;
  api->DeviceGetCount = f_count;
  api->DeviceGet = f_get;
  api->DeviceGetName = f_name;
  api->DeviceGetAttribute = f_attr;
  api->DeviceTotalMem = f_mem;
}

TEST(fake_driver_devices_are_enumerated) {
  ty__cuda api;
  fake_api(&api);
  ty__gpu_list l;
  ty__gpu_discover(&api, NULL, &l);
  CHECK_EQ_INT(l.count, 2); /* the K80 is too old, the broken one fails */
  CHECK_EQ_INT(l.driver_version, 13000);
  CHECK(!strcmp(l.dev[0].name, "NVIDIA H200"));
  CHECK_EQ_INT(l.dev[0].ordinal, 0);
  CHECK_EQ_INT(l.dev[0].cc_major, 9);
  CHECK_EQ_INT(l.dev[0].cc_minor, 0);
  CHECK_EQ_INT(l.dev[0].sms, 132);
  CHECK(l.dev[0].total_mem == (size_t)150754820096ULL);
  CHECK_EQ_INT(l.dev[0].pci_bus, 0x18);
  CHECK_EQ_INT(l.dev[0].pci_domain, -1); /* attribute not answered: unknown */
  CHECK(!strcmp(l.dev[1].name, "NVIDIA A100-SXM4-80GB"));
  CHECK_EQ_INT(l.dev[1].ordinal, 2);
  CHECK_STR_CONTAINS(l.why, "2 GPUs (driver 13.0); skipped device 3");
  /* all of them unusable */
  fake_ndev = 2;
  ty__gpu_list one;
  ty__gpu_discover(&api, NULL, &one);
  CHECK_EQ_INT(one.count, 1);
  fake_ndev = 0;
  ty__gpu_discover(&api, NULL, &one);
  CHECK_EQ_INT(one.count, 0);
  CHECK_STR_CONTAINS(one.why, "the CUDA driver (13.0) reports no device");
  fake_ndev = 4;
}

TEST(more_gpus_than_found_is_a_clear_error) {
  ty__cuda api;
  fake_api(&api);
  ty__gpu_list found, use;
  ty__gpu_discover(&api, NULL, &found);
  char err[512] = "";
  CHECK_EQ_INT(ty__gpu_select(&found, 4, 0, &use, err, sizeof err), TY_EINVAL);
  CHECK_STR_CONTAINS(err, "--gpus 4: only 2 GPUs were found (0: NVIDIA H200, 140.4 GiB; 2: NVIDIA A100-SXM4-80GB, 80.0 GiB)");
  CHECK_EQ_INT(use.count, 0);
  /* exactly one: the first */
  CHECK_EQ_INT(ty__gpu_select(&found, 1, 0, &use, err, sizeof err), TY_OK);
  CHECK_EQ_INT(use.count, 1);
  CHECK(use.dev[0].fbmem == found.dev[0].total_mem / 10 * 9);
  /* all, with a pool budget */
  CHECK_EQ_INT(ty__gpu_select(&found, 0, (size_t)8 << 30, &use, err, sizeof err), TY_OK);
  CHECK_EQ_INT(use.count, 2);
  CHECK(use.dev[1].fbmem == (size_t)8 << 30);
  char line[512];
  ty__gpu_describe(&use, line, sizeof line);
  CHECK_STR_CONTAINS(line, "gpu 0: NVIDIA H200, cc 9.0, 132 SMs, 140.4 GiB (pool 8.0 GiB)\ngpu 2: NVIDIA A100");
  /* a budget larger than a device */
  CHECK_EQ_INT(ty__gpu_select(&found, 0, (size_t)100 << 30, &use, err, sizeof err), TY_EINVAL);
  CHECK_STR_CONTAINS(err, "--fbmem 100.0 GiB: more than the 80.0 GiB of GPU 2 (NVIDIA A100-SXM4-80GB)");
  /* none */
  CHECK_EQ_INT(ty__gpu_select(&found, -1, 0, &use, err, sizeof err), TY_OK);
  CHECK_EQ_INT(use.count, 0);
  CHECK_EQ_INT(ty__gpu_select(&found, 99, 0, &use, err, sizeof err), TY_EINVAL);
}

/* ---- on a real GPU ---------------------------------------------------------------------- */

TEST(gpu_discovery_finds_the_devices) {
  ty__cuda api;
  char why[320] = "";
  if (ty__cuda_load(&api, NULL, why, sizeof why) != TY_OK) SKIP("no GPU: %s", why);
  ty__gpu_list l;
  ty__gpu_discover(&api, NULL, &l);
  if (l.count == 0) {
    ty__cuda_unload(&api);
    SKIP("no GPU: %s", l.why);
  }
  for (int i = 0; i < l.count; i++) {
    printf("  gpu %d: %s cc %d.%d, %d SMs, %zu bytes\n", l.dev[i].ordinal, l.dev[i].name,
           l.dev[i].cc_major, l.dev[i].cc_minor, l.dev[i].sms, l.dev[i].total_mem);
    CHECK(l.dev[i].name[0] != 0);
    CHECK(l.dev[i].cc_major >= 6);
    CHECK(l.dev[i].sms > 0);
    CHECK(l.dev[i].total_mem > ((size_t)1 << 30));
  }
  CHECK(l.driver_version >= 11000);
  ty__cuda_unload(&api);
}

/* ---- a fake driver library, loaded as a runtime loads libcuda ------------------------- */

/* The fake library's counter `name` (the runtime opened the same file). */
static int fake_counter(const char *lib, const char *name) {
  void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  int *p = h ? (int *)dlsym(h, name) : NULL;
  int v = p ? *p : -1;
  if (h) dlclose(h);
  return v;
}

TEST(runtime_opens_no_gpu_context_until_a_gpu_launch) {
  const char *lib = getenv("TY_FAKE_LIBCUDA");
  if (!lib) SKIP("TY_FAKE_LIBCUDA is not set (run through ctest)");
  setenv("TYCHO_LIBCUDA", lib, 1);
  ty_config cfg = {.cpus = 2}; /* --gpus all, the default */
  ty_runtime *rt = NULL;
  CHECK_EQ_INT(ty_runtime_create(&cfg, &rt), TY_OK);
  CHECK_EQ_INT(ty_gpu_count(rt), 1); /* found and selected ... */
  CHECK_EQ_INT(fake_counter(lib, "fake_cuda_ctx_retains"), 0); /* ... but not opened */
  CHECK_EQ_INT(fake_counter(lib, "fake_cuda_streams"), 0);
  CHECK_EQ_INT(fake_counter(lib, "fake_cuda_modules"), 0);
  /* a CPU program: still nothing opened */
  int64_t shape[1] = {1000};
  ty_store *x = NULL, *s = NULL;
  CHECK_EQ_INT(ty_full(rt, TY_F64, 1, shape, 2.0, &x), TY_OK);
  CHECK_EQ_INT(ty_reduce(rt, TY_RED_SUM, x, -1, &s), TY_OK);
  ty_value v;
  CHECK_EQ_INT(ty_item(rt, s, &v), TY_OK);
  CHECK(v.f == 2000.0);
  CHECK_EQ_INT(fake_counter(lib, "fake_cuda_ctx_retains"), 0);
  CHECK_EQ_INT(fake_counter(lib, "fake_cuda_streams"), 0);
  ty_store_release(x);
  ty_store_release(s);
  ty_runtime_destroy(rt);
  /* activation opens the device: a context and the streams, released on close */
  ty__gpu *g = NULL;
  char err[320] = "";
  CHECK_EQ_INT(ty__gpu_probe_only(0, 0, &g, err, sizeof err), TY_OK);
  CHECK_EQ_INT(g->list.count, 1);
  CHECK_EQ_INT(g->ndev, 0);
  CHECK_EQ_INT(ty__gpu_activate(g, err, sizeof err), TY_OK);
  CHECK_EQ_INT(g->ndev, 1);
  CHECK_EQ_INT(fake_counter(lib, "fake_cuda_ctx_retains"), 1);
  CHECK(fake_counter(lib, "fake_cuda_streams") > 0);
  CHECK_EQ_INT(ty__gpu_activate(g, err, sizeof err), TY_OK); /* idempotent */
  CHECK_EQ_INT(fake_counter(lib, "fake_cuda_ctx_retains"), 1);
  ty__gpu_close(g);
  unsetenv("TYCHO_LIBCUDA");
}

static const check_case cases[] = {
    CASE(gpus_option_parses),
    CASE(discovery_without_a_driver_reports_zero_and_why),
    CASE(stub_libcuda_is_recognised),
    CASE(fake_driver_devices_are_enumerated),
    CASE(more_gpus_than_found_is_a_clear_error),
    CASE(gpu_discovery_finds_the_devices),
    CASE(runtime_opens_no_gpu_context_until_a_gpu_launch),
};

int main(int argc, char **argv) {
  int rc = check_run(argc, argv, cases, sizeof cases / sizeof cases[0]);
  return rc == 0 && argc > 1 && skipped ? 77 : rc;
}
