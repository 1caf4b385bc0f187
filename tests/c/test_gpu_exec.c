/*
 * test_gpu_exec.c — the executor's GPU path (exec_gpu.c) through the public
 * API, on simulated GPUs (--gpus sim:N): a host's C task with a GPU variant,
 * attached buffers after a flush, a host read that copies back only the view
 * it reads, placement by the target axis, and a CPU/GPU alternation with
 * lazy streams (TYCHO_SIM_LAZY=1: a stream runs only what the host waits
 * for, so a missing wait reads poisoned memory). The Lua side is
 * tests/spec/gpu_sim_spec.lua.
 */
#include "check.h"

#include "gpu_kernels.h"

#include <stdint.h>
#include <stdlib.h>

#include "tycho/task.h"
#include "tycho/tycho.h"

static ty_runtime *sim_rt(int ngpus, ty_target target) {
  ty_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.cpus = 2;
  cfg.gpus = TY_GPUS_SIM | ngpus;
  cfg.policy.set = TY_POL_TARGET;
  cfg.policy.target = target;
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&cfg, &rt) == TY_OK);
  return rt;
}

static ty_stats stats(ty_runtime *rt) {
  ty_stats s;
  ty_get_stats(rt, &s);
  return s;
}

/* ---- a C task with a GPU variant ------------------------------------------------- */

static int gpu_calls, cpu_calls, bad_device;

/* out = 2 * in + 1 over the piece */
static int twice_plus_one_cpu(ty_task_ctx *c) {
  cpu_calls++;
  const ty_tile *in = &c->args[0], *out = &c->args[1];
  for (int64_t i = 0; i < out->shape[0]; i++)
    ((double *)out->data)[i * out->strides[0]] = 2 * ((const double *)in->data)[i * in->strides[0]] + 1;
  return 0;
}

/* The same on the device: a simulated GPU's memory is host memory, so the
 * variant may touch it once its stream has run the copies queued before it
 * (a real variant would queue a kernel on ctx->stream instead). */
static int twice_plus_one_gpu(ty_task_ctx *c) {
  gpu_calls++;
  ty__gpu *g = c->rt->gpu;
  if (c->device < 0 || c->device >= g->ndev || c->stream != (void *)g->dev[c->device].stream[0])
    bad_device++;
  if (g->api.StreamSynchronize((ty__CUstream)c->stream) != TY__CUDA_SUCCESS)
    return ty_ctx_fail(c, "stream sync failed");
  return twice_plus_one_cpu(c) == 0 ? (cpu_calls--, 0) : TY_ETASK;
}

TEST(c_task_gpu_variant_runs_on_the_device) {
  ty_runtime *rt = sim_rt(2, TY_TARGET_GPU);
  ty_task_desc d;
  memset(&d, 0, sizeof d);
  d.name = "twice_plus_one";
  d.cpu = twice_plus_one_cpu;
  d.gpu = twice_plus_one_gpu;
  const ty_task *t = NULL;
  CHECK(ty_task_register(rt, &d, &t) == TY_OK);
  const int64_t n = 1 << 18;
  ty_store *x = NULL, *y = NULL;
  CHECK(ty_arange(rt, TY_F64, 0.0, 1.0, n, &x) == TY_OK);
  CHECK(ty_store_create(rt, TY_F64, 1, &n, &y) == TY_OK);
  ty_arg args[2] = {{.store = x, .priv = TY_PRIV_IN, .proj = TY_PROJ_ALIGNED},
                    {.store = y, .priv = TY_PRIV_OUT, .proj = TY_PROJ_ALIGNED}};
  ty_policy all = {.set = TY_POL_MODE, .mode = TY_MODE_ALL};
  ty_launch_desc ld = {.task = t, .ndim = 1, .domain = &n, .nargs = 2, .args = args, .options = &all};
  gpu_calls = cpu_calls = bad_device = 0;
  CHECK(ty_launch(rt, &ld) == TY_OK);
  CHECK(ty_flush(rt) == TY_OK);
  CHECK_EQ_INT(gpu_calls, 2); /* one piece per GPU */
  CHECK_EQ_INT(cpu_calls, 0);
  CHECK_EQ_INT(bad_device, 0);
  ty_explain_entry e;
  CHECK_EQ_INT(ty_explain(rt, 1, &e), 1);
  CHECK_STR_CONTAINS(e.target, "gpu");
  CHECK_EQ_INT(e.gpus, 2);
  double *h = malloc((size_t)n * sizeof *h);
  CHECK(ty_store_read(rt, y, h, (size_t)n * sizeof *h) == TY_OK);
  int wrong = 0;
  for (int64_t i = 0; i < n; i++) wrong += h[i] != 2.0 * (double)i + 1;
  CHECK_EQ_INT(wrong, 0);
  free(h);
  ty_store_release(x);
  ty_store_release(y);
  ty_runtime_destroy(rt);
}

/* ---- host memory ------------------------------------------------------------------ */

TEST(attached_buffers_hold_gpu_results_when_a_flush_returns) {
  ty_runtime *rt = sim_rt(1, TY_TARGET_GPU);
  const int64_t n = 100000;
  double *buf = malloc((size_t)n * sizeof *buf);
  for (int64_t i = 0; i < n; i++) buf[i] = (double)i;
  ty_store *a = NULL, *b = NULL;
  CHECK(ty_store_attach(rt, TY_F64, 1, &n, buf, NULL, NULL, &a) == TY_OK);
  CHECK(ty_scalar_f64(rt, TY_F64, 0.5, &b) == TY_OK);
  ty_store *p = NULL;
  CHECK(ty_binary(rt, TY_OP_MUL, a, b, &p) == TY_OK); /* on the GPU */
  CHECK(ty_copy(rt, a, p) == TY_OK);                  /* back into the attached buffer */
  CHECK(ty_flush(rt) == TY_OK);
  CHECK(stats(rt).gpu_launches >= 1);
  int wrong = 0;
  for (int64_t i = 0; i < n; i++) wrong += buf[i] != 0.5 * (double)i;
  CHECK_EQ_INT(wrong, 0);
  ty_store_release(p);
  ty_store_release(b);
  ty_store_release(a);
  ty_runtime_destroy(rt);
  free(buf);
}

TEST(a_host_read_copies_back_only_the_view_it_reads) {
  ty_runtime *rt = sim_rt(1, TY_TARGET_GPU);
  const int64_t n = 1 << 20;
  ty_store *x = NULL;
  CHECK(ty_arange(rt, TY_F64, 0.0, 1.0, n, &x) == TY_OK);
  CHECK(ty_flush(rt) == TY_OK);
  uint64_t before = stats(rt).gpu_d2h_bytes;
  ty_value v;
  int64_t at = 123456;
  CHECK(ty_store_get(rt, x, &at, &v) == TY_OK);
  CHECK(v.f == 123456.0);
  /* get reads through the store's whole view: all of it comes back once */
  CHECK(stats(rt).gpu_d2h_bytes - before == (uint64_t)n * 8);
  /* a one-element slice of a store written on the GPU again: 8 bytes */
  ty_store *y = NULL, *one = NULL;
  CHECK(ty_unary(rt, TY_OP_NEG, x, &y) == TY_OK);
  CHECK(ty_store_slice(rt, y, 0, 1000, 1001, 1, &one) == TY_OK);
  before = stats(rt).gpu_d2h_bytes;
  CHECK(ty_item(rt, one, &v) == TY_OK);
  CHECK(v.f == -1000.0);
  CHECK(stats(rt).gpu_d2h_bytes - before == 8);
  ty_store_release(y);
  ty_store_release(one);
  ty_store_release(x);
  ty_runtime_destroy(rt);
}

TEST(target_cpu_keeps_everything_on_the_host) {
  ty_runtime *rt = sim_rt(1, TY_TARGET_CPU);
  const int64_t n = 1 << 20;
  ty_store *x = NULL, *s = NULL;
  CHECK(ty_arange(rt, TY_F64, 0.0, 1.0, n, &x) == TY_OK);
  CHECK(ty_reduce(rt, TY_RED_SUM, x, -1, &s) == TY_OK);
  ty_value v;
  CHECK(ty_item(rt, s, &v) == TY_OK);
  CHECK(v.f == (double)n * (double)(n - 1) / 2);
  ty_stats st = stats(rt);
  CHECK(st.gpu_launches == 0 && st.gpu_h2d_bytes == 0 && st.gpu_d2h_bytes == 0);
  ty_store_release(s);
  ty_store_release(x);
  ty_runtime_destroy(rt);
}

/* ---- interrupts ----------------------------------------------------------------------------- */

TEST(an_interrupted_flush_cancels_gpu_outputs_and_the_runtime_goes_on) {
  ty_runtime *rt = sim_rt(2, TY_TARGET_GPU);
  const int64_t n = 1 << 18;
  ty_store *x = NULL, *y = NULL;
  CHECK(ty_arange(rt, TY_F64, 0.0, 1.0, n, &x) == TY_OK);
  CHECK(ty_flush(rt) == TY_OK); /* x lives on the GPUs */
  CHECK(ty_unary(rt, TY_OP_NEG, x, &y) == TY_OK);
  ty_interrupt(rt);
  CHECK_EQ_INT(ty_flush(rt), TY_EINTR);
  ty_value v;
  int64_t at = 5;
  CHECK(ty_store_get(rt, y, &at, &v) != TY_OK); /* its launch was cancelled */
  CHECK_STR_CONTAINS(ty_errmsg(rt), "unavailable");
  ty_store *z = NULL, *s = NULL;
  CHECK(ty_unary(rt, TY_OP_NEG, x, &z) == TY_OK);
  CHECK(ty_reduce(rt, TY_RED_SUM, z, -1, &s) == TY_OK);
  CHECK(ty_item(rt, s, &v) == TY_OK);
  CHECK(v.f == -(double)n * (double)(n - 1) / 2);
  ty_store_release(s);
  ty_store_release(z);
  ty_store_release(y);
  ty_store_release(x);
  ty_runtime_destroy(rt);
}

/* ---- lazy streams: a missing wait would read poison ----------------------------------------- */

TEST(cpu_and_gpu_launches_alternate_under_lazy_streams) {
  setenv("TYCHO_SIM_LAZY", "1", 1);
  ty_runtime *rt = sim_rt(2, TY_TARGET_AUTO);
  const int64_t n = 1 << 18;
  ty_store *x = NULL;
  CHECK(ty_arange(rt, TY_F64, 0.0, 1.0, n, &x) == TY_OK);
  double want0 = 0;
  for (int k = 0; k < 6; k++) {
    ty_policy on = {.set = TY_POL_TARGET, .target = k % 2 ? TY_TARGET_CPU : TY_TARGET_GPU};
    CHECK(ty_launch_options(rt, &on) == TY_OK);
    ty_store *c = NULL, *y = NULL, *z = NULL;
    CHECK(ty_scalar_f64(rt, TY_F64, 1.5, &c) == TY_OK);
    CHECK(ty_binary(rt, TY_OP_MUL, x, c, &y) == TY_OK);
    CHECK(ty_binary(rt, TY_OP_ADD, y, c, &z) == TY_OK);
    ty_store_release(x);
    ty_store_release(y);
    ty_store_release(c);
    x = z;
    want0 = want0 * 1.5 + 1.5;
    if (k == 2) CHECK(ty_flush(rt) == TY_OK); /* a flush in the middle, too */
  }
  CHECK(ty_launch_options(rt, NULL) == TY_OK);
  double *h = malloc((size_t)n * sizeof *h);
  CHECK(ty_store_read(rt, x, h, (size_t)n * sizeof *h) == TY_OK);
  CHECK(h[0] == want0);
  int wrong = 0;
  for (int64_t i = 0; i < n; i++) {
    double w = (double)i;
    for (int k = 0; k < 6; k++) w = w * 1.5 + 1.5;
    wrong += h[i] != w;
  }
  CHECK_EQ_INT(wrong, 0);
  CHECK(stats(rt).gpu_launches >= 3);
  free(h);
  ty_store_release(x);
  ty_runtime_destroy(rt);
  unsetenv("TYCHO_SIM_LAZY");
}

static const check_case cases[] = {
      CASE(c_task_gpu_variant_runs_on_the_device),
      CASE(attached_buffers_hold_gpu_results_when_a_flush_returns),
      CASE(a_host_read_copies_back_only_the_view_it_reads),
      CASE(target_cpu_keeps_everything_on_the_host),
      CASE(an_interrupted_flush_cancels_gpu_outputs_and_the_runtime_goes_on),
      CASE(cpu_and_gpu_launches_alternate_under_lazy_streams),
};
CHECK_MAIN(cases)
