/*
 * mc_task.c — a C task whose cost is not proportional to its input: for each
 * element a of its input it estimates the integral of sin(a x)^2 over [0, 1]
 * with `samples` Monte Carlo draws. 2,000 inputs (16 KB) are far below the
 * size at which the runtime splits a launch by itself, yet each costs tens
 * of microseconds, so the task declares the trait parallel = all: its pieces
 * go to every processor whatever the input size.
 *
 * The draws come from a counter-based generator keyed by (element, sample),
 * so the result is the same for any number of pieces or processors.
 */
#include "mc_task.h"

#include <math.h>
#include <string.h>

#include "tycho/task.h"
#include "tycho_lua.h" /* the scalar helpers: scalars come packed by the Lua binding */

/* splitmix64: a good 64-bit mix, used as a counter-based generator. */
static uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15u;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static int mc_cpu(ty_task_ctx *ctx) {
  if (ctx->ndim != 1) return ty_ctx_fail(ctx, "mc_integral takes 1-D stores");
  const ty_tile *in = &ctx->args[0], *out = &ctx->args[1];
  if (in->dtype != TY_F64 || out->dtype != TY_F64)
    return ty_ctx_fail(ctx, "mc_integral takes f64 stores, got %s and %s",
                       ty_dtype_name(in->dtype), ty_dtype_name(out->dtype));
  int64_t samples = ty_lua_scalar_i64(ctx, 0);
  if (samples < 1) return ty_ctx_fail(ctx, "samples must be positive, got %lld", (long long)samples);
  for (int64_t i = 0; i < out->shape[0]; i++) {
    if ((i & 63) == 0 && ty_interrupt_pending(ctx->rt)) return ty_ctx_fail(ctx, "interrupted");
    double a = ((const double *)in->data)[i * in->strides[0]];
    uint64_t key = mix((uint64_t)(in->lo[0] + i)); /* the global element index */
    double acc = 0;
    for (int64_t s = 0; s < samples; s++) {
      double x = (double)(mix(key + (uint64_t)s) >> 11) * 0x1.0p-53; /* uniform [0, 1) */
      double v = sin(a * x);
      acc += v * v;
    }
    ((double *)out->data)[i * out->strides[0]] = acc / (double)samples;
  }
  return 0;
}

double mc_exact(double a) { return 0.5 - sin(2 * a) / (4 * a); }

ty_status mc_register(ty_runtime *rt) {
  ty_task_desc d;
  memset(&d, 0, sizeof d);
  d.name = "mc_integral";
  d.cpu = mc_cpu;
  d.signature = "in, out, scalar:i64"; /* callable from Lua as tycho.tasks.mc_integral */
  d.traits.set = TY_POL_MODE;
  d.traits.mode = TY_MODE_ALL; /* its work is not proportional to its data */
  return ty_task_register(rt, &d, NULL);
}
