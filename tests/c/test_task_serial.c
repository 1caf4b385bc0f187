/*
 * test_task_serial.c — a C task's results equal a serial loop over the same
 * data, bit for bit, for 1, 2, 3 and 8 processors (issue 3): an aligned
 * in/out/inout launch over a 2-D domain split across every processor, an
 * in:broadcast (whole) argument, and an integer reduction (exact in any
 * order). Only the public headers are used.
 */
#include "check.h"

#include <stdint.h>

#include "tycho/task.h"
#include "tycho/tycho.h"

#define R 37
#define C 29

static ty_runtime *make_rt(int cpus) {
  ty_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.cpus = cpus;
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&cfg, &rt) == TY_OK);
  return rt;
}

/* element (i, j) of a 2-D tile, global indices */
static double *at(const ty_tile *t, int64_t i, int64_t j) {
  return (double *)t->data + (i - t->lo[0]) * t->strides[0] + (j - t->lo[1]) * t->strides[1];
}

/* out y = x * w[j] + sin(i) (w whole), inout z += y, reduce:+ n (i64) counts
 * the elements with y > 0 */
static int body(ty_task_ctx *c) {
  const ty_tile *x = &c->args[0], *w = &c->args[1], *y = &c->args[2], *z = &c->args[3];
  const ty_tile *n = &c->args[4];
  if (w->shape[0] != C || w->lo[0] != 0) return ty_ctx_fail(c, "w is not whole");
  for (int64_t i = c->lo[0]; i < c->hi[0]; i++)
    for (int64_t j = c->lo[1]; j < c->hi[1]; j++) {
      double v = *at(x, i, j) * ((double *)w->data)[j * w->strides[0]] + (double)(i % 7) * 0.125;
      *at(y, i, j) = v;
      *at(z, i, j) += v;
      if (v > 0) ((int64_t *)n->data)[0] += 1;
    }
  return 0;
}

TEST(c_task_equals_a_serial_loop_for_1_2_3_8_cpus) {
  /* the inputs, and the serial computation */
  static double x0[R * C], w0[C], z0[R * C], ywant[R * C], zwant[R * C];
  int64_t nwant = 0;
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      x0[i * C + j] = (double)((i * 31 + j * 17) % 23) - 11.5;
      z0[i * C + j] = (double)(i - j) / 8;
    }
  for (int j = 0; j < C; j++) w0[j] = (double)(j % 5) - 2.0 + 1.0 / (j + 1);
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      double v = x0[i * C + j] * w0[j] + (double)(i % 7) * 0.125;
      ywant[i * C + j] = v;
      zwant[i * C + j] = z0[i * C + j] + v;
      if (v > 0) nwant++;
    }

  int cpus[4] = {1, 2, 3, 8};
  for (int k = 0; k < 4; k++) {
    ty_runtime *rt = make_rt(cpus[k]);
    ty_task_desc d;
    memset(&d, 0, sizeof d);
    d.name = "serial_check";
    d.cpu = body;
    d.traits.set = TY_POL_MODE;
    d.traits.mode = TY_MODE_ALL;
    const ty_task *t = NULL;
    CHECK(ty_task_register(rt, &d, &t) == TY_OK);
    int64_t shape[2] = {R, C}, wshape[1] = {C};
    ty_store *x, *w, *y, *z, *n, *nview;
    CHECK(ty_store_from_buffer(rt, TY_F64, 2, shape, x0, &x) == TY_OK);
    CHECK(ty_store_from_buffer(rt, TY_F64, 1, wshape, w0, &w) == TY_OK);
    CHECK(ty_store_from_buffer(rt, TY_F64, 2, shape, z0, &z) == TY_OK);
    CHECK(ty_store_create(rt, TY_F64, 2, shape, &y) == TY_OK);
    CHECK(ty_full(rt, TY_I64, 0, NULL, 0.0, &n) == TY_OK);
    CHECK(ty_store_broadcast(rt, n, 2, shape, &nview) == TY_OK); /* the 0-d sum over the domain */
    ty_arg args[5] = {{x, TY_PRIV_IN, TY_REDOP_NONE, TY_PROJ_ALIGNED},
                      {w, TY_PRIV_IN, TY_REDOP_NONE, TY_PROJ_WHOLE},
                      {y, TY_PRIV_OUT, TY_REDOP_NONE, TY_PROJ_ALIGNED},
                      {z, TY_PRIV_INOUT, TY_REDOP_NONE, TY_PROJ_ALIGNED},
                      {nview, TY_PRIV_REDUCE, TY_REDOP_SUM, TY_PROJ_ALIGNED}};
    ty_launch_desc ld;
    memset(&ld, 0, sizeof ld);
    ld.task = t;
    ld.ndim = 2;
    ld.domain = shape;
    ld.nargs = 5;
    ld.args = args;
    ty_stats before, after;
    CHECK(ty_flush(rt) == TY_OK); /* the stores' own launches first */
    ty_get_stats(rt, &before);
    CHECK(ty_launch(rt, &ld) == TY_OK || (fprintf(stderr, "%s\n", ty_errmsg(rt)), 0));
    CHECK(ty_flush(rt) == TY_OK);
    ty_get_stats(rt, &after);
    /* the trait split it across every processor */
    CHECK_EQ_INT((int)(after.pieces - before.pieces), cpus[k]);
    static double yo[R * C], zo[R * C];
    CHECK(ty_store_read(rt, y, yo, sizeof yo) == TY_OK);
    CHECK(ty_store_read(rt, z, zo, sizeof zo) == TY_OK);
    CHECK(memcmp(yo, ywant, sizeof yo) == 0);
    CHECK(memcmp(zo, zwant, sizeof zo) == 0);
    ty_value v;
    CHECK(ty_item(rt, n, &v) == TY_OK);
    CHECK_EQ_INT(v.i, nwant);
    ty_store_release(x);
    ty_store_release(w);
    ty_store_release(y);
    ty_store_release(z);
    ty_store_release(nview);
    ty_store_release(n);
    ty_runtime_destroy(rt);
  }
}

static const check_case cases[] = {
    CASE(c_task_equals_a_serial_loop_for_1_2_3_8_cpus),
};
CHECK_MAIN(cases)
