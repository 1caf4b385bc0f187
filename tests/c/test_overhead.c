/*
 * test_overhead.c — the per-operation shortcuts of small-array loops
 * (bench/workloads/overhead.lua): a compiled element-wise piece run straight
 * through its kernel (fused_cpu.c, run_compiled_flat) gives the values and
 * bits of the interpreter and of unfused launches, and falls back when an
 * argument's layout is not the compiled one; the launch records a flush
 * makes come from the window's free list and go back to it (window.c,
 * fuse.c: TY__PENDING_KEEP).
 */
#include "check.h"
#include "req.h"
#include "fused.h"
#include "internal.h"
#include "regions.h"

#include <tycho/tycho.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ty_runtime *rt_make(int cpus, bool fuse, int window) {
  ty_config cfg = {.cpus = cpus, .window = window};
  cfg.policy.set = TY_POL_FUSE;
  cfg.policy.fuse = fuse;
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) {
    fprintf(stderr, "cannot create a runtime\n");
    exit(1);
  }
  return rt;
}

/* x[i] = i * 0.001 (numpy's np.arange(n) * 0.001) */
static ty_store *ramp(ty_runtime *rt, int nd, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  double *v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = (double)i * 0.001;
  ty_store *s = NULL;
  REQ(rt, ty_store_from_buffer(rt, TY_F64, nd, shape, v, &s));
  free(v);
  return s;
}

/* x = x * 0.999 + 0.001, five times (overhead.lua's loop body): ten launches */
static ty_store *chain(ty_runtime *rt, ty_store *x) {
  ty_store *a = NULL, *b = NULL;
  REQ(rt, ty_scalar_f64(rt, TY_F64, 0.999, &a));
  REQ(rt, ty_scalar_f64(rt, TY_F64, 0.001, &b));
  ty_store_retain(x);
  for (int k = 0; k < 5; k++) {
    ty_store *t = NULL, *u = NULL;
    REQ(rt, ty_binary(rt, TY_OP_MUL, x, a, &t));
    ty_store_release(x);
    REQ(rt, ty_binary(rt, TY_OP_ADD, t, b, &u));
    ty_store_release(t);
    x = u;
  }
  ty_store_release(a);
  ty_store_release(b);
  return x;
}

/* The chain over `shape` (strided: over every other element of a ramp of
 * twice the size) with `cpus` workers; its bytes, and whether the fused run
 * was compiled. */
static double *run_chain(int mode, int cpus, int nd, const int64_t *shape, bool strided,
                         size_t *len, bool *compiled) {
  req_codegen(mode == 2 ? "always" : "off");
  ty_runtime *rt = rt_make(cpus, mode != 0, 0);
  ty_store *x;
  if (strided) {
    int64_t big[TY_MAX_RANK];
    memcpy(big, shape, sizeof(int64_t) * (size_t)nd);
    big[nd - 1] *= 2;
    ty_store *r = ramp(rt, nd, big);
    REQ(rt, ty_store_slice(rt, r, nd - 1, 0, big[nd - 1], 2, &x));
    ty_store_release(r);
  } else {
    x = ramp(rt, nd, shape);
  }
  ty_store *y = chain(rt, x);
  ty_store_release(x);
  if (compiled) {
    *compiled = false;
    ty__fuse(rt);
    for (int i = 0; i < rt->nwindow; i++)
      if (rt->window[i]->task == ty__fused_task(rt))
        *compiled |= ((const ty__fhead *)rt->window[i]->scalars)->kernel != 0;
  }
  REQ(rt, ty_flush(rt));
  *len = (size_t)ty_store_size(y) * sizeof(double);
  double *v = malloc(*len);
  REQ(rt, ty_store_read(rt, y, v, *len));
  ty_store_release(y);
  ty_runtime_destroy(rt);
  unsetenv("TYCHO_CODEGEN");
  return v;
}

static bool same_bits(const double *a, const double *b, size_t len) { return memcmp(a, b, len) == 0; }

/* 1-D (one piece of 1,000 elements, overhead.lua's), 2-D (64^2, cg's
 * quick size, cut into pieces of rows on 3 cpus), contiguous and strided:
 * compiled = interpreter = unfused, to the bit, on 1 and 3 cpus. */
TEST(compiled_piece_matches_the_interpreter_and_unfused) {
  const int64_t n1[1] = {1000}, n2[2] = {64, 64};
  for (int strided = 0; strided < 2; strided++)
    for (int nd = 1; nd <= 2; nd++)
      for (int cpus = 1; cpus <= 3; cpus += 2) {
        const int64_t *shape = nd == 1 ? n1 : n2;
        size_t l0, l1, l2;
        bool compiled = false;
        double *unfused = run_chain(0, cpus, nd, shape, strided, &l0, NULL);
        double *interp = run_chain(1, cpus, nd, shape, strided, &l1, NULL);
        double *comp = run_chain(2, cpus, nd, shape, strided, &l2, &compiled);
        CHECK(l0 == l1 && l0 == l2);
        CHECK(same_bits(unfused, interp, l0));
        CHECK(same_bits(unfused, comp, l0));
        if (ty__isa_lanes() && !strided) CHECK(compiled); /* the kernel was there to take */
        free(unfused), free(interp), free(comp);
      }
}

/* The values, from numpy (x = np.arange(1000) * 0.001; five times
 * x = x * 0.999 + 0.001; and the same over x[::2] of a ramp of 2,000). */
TEST(compiled_piece_values_are_numpys) {
  const int64_t n = 1000, h = 500;
  size_t len;
  bool compiled;
  double *v = run_chain(2, 1, 1, &n, false, &len, &compiled);
  CHECK(v[0] == 0x1.470679bc38d8ep-8);  /* 0.004990009995001 */
  CHECK(v[1] == 0x1.883bf919fc5fdp-8);  /* 0.005985019985005999 */
  CHECK(v[999] == 0x1.ff7d95014478fp-1); /* 0.999004990009995 */
  free(v);
  v = run_chain(2, 1, 1, &h, true, &len, &compiled);
  CHECK(v[0] == 0x1.470679bc38d8ep-8);
  CHECK(v[1] == 0x1.c9717877bfe6dp-8);   /* 0.006980029975010999 */
  CHECK(v[499] == 0x1.fefb2a0288f1ep-1); /* 0.99800998001999 */
  free(v);
}

/* A flush of a full window keeps the record of the fused launch it makes:
 * after each cycle (a window of the chain, flushed) the free list holds the
 * window's records and the fused one, never more than TY__PENDING_KEEP, so
 * a later cycle allocates no record. */
TEST(flush_keeps_the_fused_launch_record) {
  req_codegen("off");
  const int window = 10;
  ty_runtime *rt = rt_make(1, true, window);
  const int64_t n = 100;
  ty_store *x = ramp(rt, 1, &n);
  REQ(rt, ty_flush(rt));
  for (int cycle = 0; cycle < 4; cycle++) {
    ty_store *y = chain(rt, x); /* ten launches: the window is full */
    ty_store_release(x);
    x = y;
    CHECK_EQ_INT(rt->nwindow, window);
    REQ(rt, ty_flush(rt));
    CHECK_EQ_INT(rt->nfree_pending, window + 1);
    CHECK(rt->nfree_pending <= TY__PENDING_KEEP(rt));
  }
  double v[100];
  REQ(rt, ty_store_read(rt, x, v, sizeof v));
  /* numpy: x = np.arange(100) * 0.001, then x = x * 0.999 + 0.001 twenty times */
  CHECK(v[0] == 0x1.4495ec69d7988p-6);  /* 0.019811135170465316 */
  CHECK(v[99] == 0x1.de9dee25ebc35p-4); /* 0.11684983278858925 */
  ty_store_release(x);
  ty_runtime_destroy(rt);
  unsetenv("TYCHO_CODEGEN");
}

static const check_case cases[] = {
    CASE(compiled_piece_matches_the_interpreter_and_unfused),
    CASE(compiled_piece_values_are_numpys),
    CASE(flush_keeps_the_fused_launch_record),
};
CHECK_MAIN(cases)
