/*
 * test_ctask.c — the C task API as a host application uses it: registering
 * tasks (signature, data, release, traits), launching them with every
 * privilege and projection, scalars, reductions, failures, host buffers, and
 * many tiny launches. Only the public headers are used.
 */
#include "check.h"

#include <stdint.h>

#include "tycho/task.h"
#include "tycho/tycho.h"

static ty_runtime *make_rt(int cpus) {
  ty_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.cpus = cpus;
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&cfg, &rt) == TY_OK);
  return rt;
}

static const ty_task *reg(ty_runtime *rt, const char *name, ty_variant_fn fn, ty_mode mode,
                          const char *sig) {
  ty_task_desc d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.cpu = fn;
  d.signature = sig;
  if (mode != TY_MODE_AUTO) {
    d.traits.set = TY_POL_MODE;
    d.traits.mode = mode;
  }
  const ty_task *t = NULL;
  CHECK(ty_task_register(rt, &d, &t) == TY_OK);
  return t;
}

static ty_status launch(ty_runtime *rt, const ty_task *t, ty_store *domain_store, int nargs,
                        const ty_arg *args, const void *scalars, size_t nbytes) {
  ty_launch_desc d;
  memset(&d, 0, sizeof d);
  d.task = t;
  d.ndim = ty_store_ndim(domain_store);
  d.domain = ty_store_shape(domain_store);
  d.nargs = nargs;
  d.args = args;
  d.scalars = scalars;
  d.scalar_bytes = nbytes;
  return ty_launch(rt, &d);
}

static ty_store *vec(ty_runtime *rt, int64_t n, double start) {
  ty_store *s = NULL;
  CHECK(ty_arange(rt, TY_F64, start, 1.0, n, &s) == TY_OK);
  return s;
}

static double *D(const ty_tile *t, int64_t i) { return (double *)t->data + i * t->strides[0]; }

/* ---- variants ------------------------------------------------------------------- */

typedef struct axpy_scalars {
  double a;
  int64_t pad;
} axpy_scalars;

/* z = a*x + y, checking the context on the way */
static int axpy(ty_task_ctx *c) {
  if (c->nargs != 3 || c->ndim != 1 || c->scalar_bytes != sizeof(axpy_scalars))
    return ty_ctx_fail(c, "bad context");
  if (c->worker < 0 || c->worker >= ty_runtime_config(c->rt)->cpus)
    return ty_ctx_fail(c, "worker %d out of range", c->worker);
  const axpy_scalars *s = c->scalars;
  const ty_tile *x = &c->args[0], *y = &c->args[1], *z = &c->args[2];
  if (x->lo[0] != c->lo[0] || z->shape[0] != c->hi[0] - c->lo[0]) return ty_ctx_fail(c, "bad box");
  for (int64_t i = 0; i < z->shape[0]; i++) *D(z, i) = s->a * *D(x, i) + *D(y, i);
  return 0;
}

static int scale2(ty_task_ctx *c) {
  for (int64_t i = 0; i < c->args[0].shape[0]; i++) *D(&c->args[0], i) *= 2;
  return 0;
}

/* y[i] = sum of the whole (WHOLE) x, minus x[i] */
static int others(ty_task_ctx *c) {
  const ty_tile *x = &c->args[0], *y = &c->args[1];
  if (x->shape[0] != x->gshape[0] || x->lo[0] != 0) return ty_ctx_fail(c, "not whole");
  double s = 0;
  for (int64_t i = 0; i < x->shape[0]; i++) s += *D(x, i);
  for (int64_t i = 0; i < y->shape[0]; i++) *D(y, i) = s - *D(x, y->lo[0] + i);
  return 0;
}

/* private r (one element, broadcast) op= x[i] for each op's argument */
static int reduce4(ty_task_ctx *c) {
  const ty_tile *x = &c->args[0];
  for (int k = 1; k <= 4; k++) {
    const ty_tile *r = &c->args[k];
    if (r->strides[0] != 0) return ty_ctx_fail(c, "private of argument %d is not 1 element", k);
  }
  for (int64_t i = 0; i < x->shape[0]; i++) {
    double v = *D(x, i);
    *D(&c->args[1], 0) += v;
    *D(&c->args[2], 0) *= v;
    if (v < *D(&c->args[3], 0)) *D(&c->args[3], 0) = v;
    if (v > *D(&c->args[4], 0)) *D(&c->args[4], 0) = v;
  }
  return 0;
}

static int fail_piece2(ty_task_ctx *c) {
  if (c->piece == 1) return ty_ctx_fail(c, "no piece 2 today (%d of %d)", c->piece + 1, c->pieces);
  for (int64_t i = 0; i < c->args[1].shape[0]; i++) *D(&c->args[1], i) = *D(&c->args[0], i);
  return 0;
}

static int bump(ty_task_ctx *c) {
  ((int64_t *)c->args[0].data)[0] += 1;
  return 0;
}

/* ---- tests ----------------------------------------------------------------------- */

TEST(c_task_in_out_inout_and_scalars) {
  ty_runtime *rt = make_rt(3);
  const ty_task *t = reg(rt, "axpy", axpy, TY_MODE_ALL, "in, in, out, scalar:f64");
  const ty_task *s2 = reg(rt, "scale2", scale2, TY_MODE_ALL, "inout");
  ty_store *x = vec(rt, 100, 0), *y = vec(rt, 100, 1), *z = NULL;
  int64_t n = 100;
  CHECK(ty_store_create(rt, TY_F64, 1, &n, &z) == TY_OK);
  ty_arg args[3] = {{x, TY_PRIV_IN, TY_REDOP_NONE, TY_PROJ_ALIGNED},
                    {y, TY_PRIV_IN, TY_REDOP_NONE, TY_PROJ_ALIGNED},
                    {z, TY_PRIV_OUT, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
  axpy_scalars sc = {2.5, 0};
  CHECK(launch(rt, t, z, 3, args, &sc, sizeof sc) == TY_OK);
  ty_arg a1[1] = {{z, TY_PRIV_INOUT, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
  CHECK(launch(rt, s2, z, 1, a1, NULL, 0) == TY_OK);
  double out[100];
  CHECK(ty_store_read(rt, z, out, sizeof out) == TY_OK);
  for (int i = 0; i < 100; i++) CHECK_NEAR(out[i], 2 * (2.5 * i + (i + 1)), 0);
  CHECK(strcmp(ty_task_signature(t), "in, in, out, scalar:f64") == 0);
  CHECK(ty_task_find(rt, "axpy") == t);
  ty_store_release(x);
  ty_store_release(y);
  ty_store_release(z);
  ty_runtime_destroy(rt);
}

TEST(c_task_whole_argument_is_seen_by_every_piece) {
  ty_runtime *rt = make_rt(4);
  const ty_task *t = reg(rt, "others", others, TY_MODE_ALL, "in:broadcast, out");
  ty_store *x = vec(rt, 40, 1), *y = NULL;
  int64_t n = 40;
  CHECK(ty_store_create(rt, TY_F64, 1, &n, &y) == TY_OK);
  ty_arg args[2] = {{x, TY_PRIV_IN, TY_REDOP_NONE, TY_PROJ_WHOLE},
                    {y, TY_PRIV_OUT, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
  CHECK(launch(rt, t, y, 2, args, NULL, 0) == TY_OK);
  double out[40];
  CHECK(ty_store_read(rt, y, out, sizeof out) == TY_OK);
  for (int i = 0; i < 40; i++) CHECK_NEAR(out[i], 820.0 - (i + 1), 0);
  ty_store_release(x);
  ty_store_release(y);
  ty_runtime_destroy(rt);
}

TEST(c_task_reductions_combine_pieces_into_the_store) {
  ty_runtime *rt = make_rt(3);
  const ty_task *t = reg(rt, "reduce4", reduce4, TY_MODE_ALL, NULL);
  ty_store *x = vec(rt, 10, 1); /* 1..10 */
  double init[4] = {100, 2, 0.5, 3}; /* combined too: store = store op privates */
  ty_store *r[4], *view[4];
  ty_arg args[5] = {{x, TY_PRIV_IN, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
  ty_redop ops[4] = {TY_REDOP_SUM, TY_REDOP_PROD, TY_REDOP_MIN, TY_REDOP_MAX};
  for (int k = 0; k < 4; k++) {
    CHECK(ty_scalar_f64(rt, TY_F64, init[k], &r[k]) == TY_OK);
    int64_t n = 10;
    CHECK(ty_store_broadcast(rt, r[k], 1, &n, &view[k]) == TY_OK);
    args[k + 1] = (ty_arg){view[k], TY_PRIV_REDUCE, ops[k], TY_PROJ_ALIGNED};
  }
  CHECK(launch(rt, t, x, 5, args, NULL, 0) == TY_OK);
  ty_value v;
  double want[4] = {155, 2 * 3628800.0, 0.5, 10};
  for (int k = 0; k < 4; k++) {
    CHECK(ty_item(rt, r[k], &v) == TY_OK);
    CHECK_NEAR(v.f, want[k], 1e-12);
    ty_store_release(view[k]);
    ty_store_release(r[k]);
  }
  ty_store_release(x);
  ty_runtime_destroy(rt);
}

TEST(c_task_results_identical_for_1_2_3_8_cpus) {
  double ref[997];
  int cpus[4] = {1, 2, 3, 8};
  for (int c = 0; c < 4; c++) {
    ty_runtime *rt = make_rt(cpus[c]);
    const ty_task *t = reg(rt, "axpy", axpy, TY_MODE_ALL, NULL);
    ty_store *x = NULL, *y = NULL, *z = NULL;
    int64_t n = 997;
    CHECK(ty_linspace(rt, TY_F64, -1, 1, n, &x) == TY_OK);
    CHECK(ty_unary(rt, TY_OP_SIN, x, &y) == TY_OK);
    CHECK(ty_store_create(rt, TY_F64, 1, &n, &z) == TY_OK);
    ty_arg args[3] = {{x, TY_PRIV_IN, TY_REDOP_NONE, TY_PROJ_ALIGNED},
                      {y, TY_PRIV_IN, TY_REDOP_NONE, TY_PROJ_ALIGNED},
                      {z, TY_PRIV_OUT, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
    axpy_scalars sc = {1.0 / 3.0, 0};
    CHECK(launch(rt, t, z, 3, args, &sc, sizeof sc) == TY_OK);
    double out[997];
    CHECK(ty_store_read(rt, z, out, sizeof out) == TY_OK);
    if (c == 0) memcpy(ref, out, sizeof ref);
    else CHECK(memcmp(ref, out, sizeof ref) == 0);
    ty_store_release(x);
    ty_store_release(y);
    ty_store_release(z);
    ty_runtime_destroy(rt);
  }
}

TEST(c_task_failure_names_task_and_piece_and_keeps_the_window) {
  ty_runtime *rt = make_rt(3);
  const ty_task *f = reg(rt, "fail2", fail_piece2, TY_MODE_ALL, NULL);
  const ty_task *s2 = reg(rt, "scale2", scale2, TY_MODE_ALL, NULL);
  ty_store *x = vec(rt, 30, 0), *y = NULL, *w = vec(rt, 30, 0);
  int64_t n = 30;
  CHECK(ty_store_create(rt, TY_F64, 1, &n, &y) == TY_OK);
  ty_arg args[2] = {{x, TY_PRIV_IN, TY_REDOP_NONE, TY_PROJ_ALIGNED},
                    {y, TY_PRIV_OUT, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
  CHECK(launch(rt, f, y, 2, args, NULL, 0) == TY_OK);
  ty_arg a1[1] = {{w, TY_PRIV_INOUT, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
  CHECK(launch(rt, s2, w, 1, a1, NULL, 0) == TY_OK);
  CHECK(ty_flush(rt) == TY_ETASK);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "task 'fail2' failed in piece 2 of 3: no piece 2 today (2 of 3)");
  double out[30];
  CHECK(ty_store_read(rt, w, out, sizeof out) == TY_OK); /* the other launch ran */
  CHECK_NEAR(out[29], 58, 0);
  CHECK(ty_store_read(rt, y, out, sizeof out) != TY_OK); /* the failed output reads as an error */
  CHECK(ty_store_read(rt, x, out, sizeof out) == TY_OK); /* the runtime goes on */
  ty_store_release(x);
  ty_store_release(y);
  ty_store_release(w);
  ty_runtime_destroy(rt);
}

static int released;
static void count_release(void *ud) { released += *(int *)ud; }

TEST(c_task_data_is_released_with_the_runtime) {
  released = 0;
  static int one = 1;
  ty_runtime *rt = make_rt(2);
  ty_task_desc d;
  memset(&d, 0, sizeof d);
  d.name = "with_data";
  d.cpu = scale2;
  d.data = &one;
  d.release = count_release;
  const ty_task *t = NULL;
  CHECK(ty_task_register(rt, &d, &t) == TY_OK);
  CHECK(ty_task_data(t) == &one);
  CHECK(ty_task_signature(t) == NULL);
  CHECK(ty_task_register(rt, &d, NULL) == TY_EINVAL); /* names are unique */
  CHECK_STR_CONTAINS(ty_errmsg(rt), "already exists");
  CHECK_EQ_INT(released, 0);
  ty_runtime_destroy(rt);
  CHECK_EQ_INT(released, 1);
}

TEST(c_task_on_an_attached_host_buffer) {
  released = 0;
  static int one = 1;
  ty_runtime *rt = make_rt(3);
  const ty_task *s2 = reg(rt, "scale2", scale2, TY_MODE_ALL, NULL);
  double *buf = aligned_alloc(64, 64 * sizeof *buf);
  for (int i = 0; i < 64; i++) buf[i] = i;
  int64_t n = 64;
  ty_store *s = NULL, *half = NULL;
  CHECK(ty_store_attach(rt, TY_F64, 1, &n, buf, count_release, &one, &s) == TY_OK);
  CHECK(ty_store_slice(rt, s, 0, 32, 64, 1, &half) == TY_OK);
  ty_arg a1[1] = {{half, TY_PRIV_INOUT, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
  CHECK(launch(rt, s2, half, 1, a1, NULL, 0) == TY_OK);
  CHECK(ty_flush(rt) == TY_OK);
  CHECK_NEAR(buf[31], 31, 0); /* written in place, no copy */
  CHECK_NEAR(buf[32], 64, 0);
  CHECK_NEAR(buf[63], 126, 0);
  ty_store_release(s);
  CHECK_EQ_INT(released, 0); /* the view still holds the buffer */
  ty_store_release(half);
  CHECK_EQ_INT(released, 1);
  free(buf);
  ty_runtime_destroy(rt);
}

TEST(thousands_of_tiny_c_launches_leak_nothing) {
  ty_runtime *rt = make_rt(2);
  const ty_task *t = reg(rt, "bump", bump, TY_MODE_AUTO, "inout");
  ty_stats before, after;
  ty_get_stats(rt, &before);
  ty_store *c = NULL;
  CHECK(ty_scalar_i64(rt, TY_I64, 0, &c) == TY_OK);
  ty_arg a1[1] = {{c, TY_PRIV_INOUT, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
  for (int i = 0; i < 5000; i++) CHECK(launch(rt, t, c, 1, a1, NULL, 0) == TY_OK);
  ty_value v;
  CHECK(ty_item(rt, c, &v) == TY_OK);
  CHECK_EQ_INT(v.i, 5000);
  ty_store_release(c);
  ty_get_stats(rt, &after);
  CHECK_EQ_INT(after.stores_live, before.stores_live);
  CHECK_EQ_INT(after.bytes_live, before.bytes_live);
  CHECK(after.launches - before.launches >= 5000);
  ty_runtime_destroy(rt);
}

TEST(c_task_traits_and_options_reach_the_policy) {
  ty_runtime *rt = make_rt(3);
  const ty_task *t = reg(rt, "scale2", scale2, TY_MODE_ALL, NULL);
  CHECK(ty_task_traits(t)->mode == TY_MODE_ALL && (ty_task_traits(t)->set & TY_POL_MODE));
  ty_store *x = vec(rt, 12, 0);
  ty_arg a1[1] = {{x, TY_PRIV_INOUT, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
  CHECK(launch(rt, t, x, 1, a1, NULL, 0) == TY_OK);
  ty_policy opt;
  memset(&opt, 0, sizeof opt);
  opt.set = TY_POL_MODE;
  opt.mode = TY_MODE_SINGLE;
  ty_launch_desc d;
  memset(&d, 0, sizeof d);
  d.task = t;
  d.ndim = 1;
  d.domain = ty_store_shape(x);
  d.nargs = 1;
  d.args = a1;
  d.options = &opt;
  CHECK(ty_launch(rt, &d) == TY_OK);
  ty_explain_entry e[2];
  CHECK_EQ_INT(ty_explain(rt, 2, e), 2);
  CHECK_STR_CONTAINS(e[0].from[TY_AXIS_MODE], "trait of task 'scale2'");
  CHECK_STR_CONTAINS(e[1].from[TY_AXIS_MODE], "launch option");
  CHECK(e[1].policy.mode == TY_MODE_SINGLE);
  ty_store_release(x);
  ty_runtime_destroy(rt);
}

/* A gpu variant that would receive device pointers: never called today (no
 * GPU path for tasks yet); counted so the test sees it. */
static int gpu_calls;
static int gpu_scale2(ty_task_ctx *c) {
  gpu_calls++;
  return ty_ctx_fail(c, "gpu variant called for piece %d", c->piece);
}

TEST(c_task_gpu_variant_is_stored_and_the_cpu_variant_runs) {
  ty_runtime *rt = make_rt(3);
  ty_task_desc d;
  memset(&d, 0, sizeof d);
  d.name = "scale2_gpu";
  d.cpu = scale2;
  d.gpu = gpu_scale2;
  d.traits.set = TY_POL_MODE;
  d.traits.mode = TY_MODE_ALL; /* 3 pieces */
  const ty_task *with = NULL, *without;
  CHECK(ty_task_register(rt, &d, &with) == TY_OK);
  CHECK(ty_task_gpu(with) == gpu_scale2);
  without = reg(rt, "scale2_cpu", scale2, TY_MODE_ALL, NULL);
  CHECK(ty_task_gpu(without) == NULL);
  CHECK(ty_task_gpu(ty_task_find(rt, "scale2_gpu")) == gpu_scale2);
  /* a gpu variant alone is refused: the cpu variant is required */
  d.name = "gpu_only";
  d.cpu = NULL;
  CHECK(ty_task_register(rt, &d, NULL) == TY_EINVAL);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "task 'gpu_only' has no cpu variant");
  CHECK(ty_task_find(rt, "gpu_only") == NULL);

  ty_store *x = vec(rt, 12, 0), *y = vec(rt, 12, 0);
  ty_arg ax[1] = {{x, TY_PRIV_INOUT, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
  ty_arg ay[1] = {{y, TY_PRIV_INOUT, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
  gpu_calls = 0;
  CHECK(launch(rt, with, x, 1, ax, NULL, 0) == TY_OK);
  CHECK(launch(rt, without, y, 1, ay, NULL, 0) == TY_OK);
  CHECK(ty_flush(rt) == TY_OK);
  double hx[12], hy[12];
  CHECK(ty_store_read(rt, x, hx, sizeof hx) == TY_OK);
  CHECK(ty_store_read(rt, y, hy, sizeof hy) == TY_OK);
  for (int i = 0; i < 12; i++) {
    CHECK(hx[i] == 2.0 * i);
    CHECK(hy[i] == 2.0 * i);
  }
  ty_explain_entry e[2];
  CHECK_EQ_INT(ty_explain(rt, 2, e), 2);
  CHECK_EQ_INT(e[0].pieces, 3);
  CHECK(strcmp(e[0].target, "cpu") == 0);
  /* without a GPU the cpu variant runs every piece (today it does with one
   * too: the window runs tasks on CPU workers) */
  if (ty_gpu_count(rt) == 0) CHECK_EQ_INT(gpu_calls, 0);
  ty_store_release(x);
  ty_store_release(y);
  ty_runtime_destroy(rt);
}

static const check_case cases[] = {
    CASE(c_task_in_out_inout_and_scalars),
    CASE(c_task_whole_argument_is_seen_by_every_piece),
    CASE(c_task_reductions_combine_pieces_into_the_store),
    CASE(c_task_results_identical_for_1_2_3_8_cpus),
    CASE(c_task_failure_names_task_and_piece_and_keeps_the_window),
    CASE(c_task_data_is_released_with_the_runtime),
    CASE(c_task_on_an_attached_host_buffer),
    CASE(thousands_of_tiny_c_launches_leak_nothing),
    CASE(c_task_traits_and_options_reach_the_policy),
    CASE(c_task_gpu_variant_is_stored_and_the_cpu_variant_runs),
};
CHECK_MAIN(cases)
