/*
 * test_policy.c — the policy axes and partitioning: precedence of every level
 * (launch option > task trait > store hint > scopes > global > default),
 * piece counts per mode, tilings, key partitions, task mode, omp processors
 * and explain.
 */
#include "check.h"
#include "internal.h"

#include <tycho/task.h>
#include <tycho/tycho.h>

#include <omp.h>
#include <unistd.h>

static ty_runtime *make_rt_cfg(ty_config cfg) {
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&cfg, &rt) == TY_OK);
  return rt;
}

static ty_runtime *make_rt(int cpus) { return make_rt_cfg((ty_config){.cpus = cpus}); }

/* out[i] = piece index that wrote element i (records the partition) */
static int mark_task(ty_task_ctx *ctx) {
  const ty_tile *o = &ctx->args[0];
  if (o->ndim == 1) {
    for (int64_t i = 0; i < o->shape[0]; i++) ((double *)o->data)[i * o->strides[0]] = ctx->piece;
  } else {
    for (int64_t i = 0; i < o->shape[0]; i++)
      for (int64_t j = 0; j < o->shape[1]; j++)
        ((double *)o->data)[i * o->strides[0] + j * o->strides[1]] = ctx->piece;
  }
  return 0;
}

static const ty_task *reg(ty_runtime *rt, const char *name, ty_variant_fn fn, ty_policy traits) {
  const ty_task *t = NULL;
  ty_task_desc d = {.name = name, .cpu = fn, .traits = traits};
  CHECK(ty_task_register(rt, &d, &t) == TY_OK);
  return t;
}

static ty_explain_entry last_explain(ty_runtime *rt) {
  ty_explain_entry e;
  memset(&e, 0, sizeof e);
  CHECK(ty_explain(rt, 1, &e) == 1);
  return e;
}

static void launch_mark(ty_runtime *rt, const ty_task *t, ty_store *s, const ty_policy *opt) {
  ty_arg a = {s, TY_PRIV_OUT, TY_REDOP_NONE, TY_PROJ_ALIGNED};
  ty_launch_desc d = {.task = t, .ndim = ty_store_ndim(s), .domain = ty_store_shape(s),
                      .nargs = 1, .args = &a, .options = opt};
  CHECK(ty_launch(rt, &d) == TY_OK);
}

TEST(auto_mode_grades_pieces_with_bytes) {
  ty_runtime *rt = make_rt(8);
  const ty_task *t = reg(rt, "mark", mark_task, (ty_policy){0});
  int64_t sizes[] = {100, 8192, 8193, 3 * 8192, 1000000};
  int expect[] = {1, 1, 2, 3, 8};
  for (int i = 0; i < 5; i++) {
    ty_store *s;
    CHECK(ty_store_create(rt, TY_F64, 1, &sizes[i], &s) == TY_OK);
    launch_mark(rt, t, s, NULL);
    ty_explain_entry e = last_explain(rt);
    CHECK_EQ_INT(e.pieces, expect[i]);
    CHECK_STR_CONTAINS(e.why, "auto:");
    CHECK_STR_CONTAINS(e.from[TY_AXIS_MODE], "default");
    ty_store_release(s);
  }
  ty_explain_entry e = last_explain(rt);
  CHECK_STR_CONTAINS(e.why, "capped at 8 (8 processors x 1)");
  ty_runtime_destroy(rt);
}

TEST(precedence_launch_trait_hint_scope_global) {
  ty_config cfg = {.cpus = 4};
  cfg.policy.set = TY_POL_MODE;
  cfg.policy.mode = TY_MODE_SINGLE;
  ty_runtime *rt = make_rt_cfg(cfg);
  const ty_task *plain = reg(rt, "plain", mark_task, (ty_policy){0});
  const ty_task *heavy = reg(rt, "heavy", mark_task,
                             (ty_policy){.set = TY_POL_MODE, .mode = TY_MODE_ALL});
  int64_t n = 100; /* small: auto would give one piece */
  ty_store *s, *h;
  CHECK(ty_store_create(rt, TY_F64, 1, &n, &s) == TY_OK);
  CHECK(ty_store_create(rt, TY_F64, 1, &n, &h) == TY_OK);

  launch_mark(rt, plain, s, NULL); /* global */
  ty_explain_entry e = last_explain(rt);
  CHECK_EQ_INT(e.pieces, 1);
  CHECK_STR_CONTAINS(e.from[TY_AXIS_MODE], "global TYCHO_PARALLEL");

  ty_policy all = {.set = TY_POL_MODE, .mode = TY_MODE_ALL};
  ty_policy single = {.set = TY_POL_MODE, .mode = TY_MODE_SINGLE};
  ty_policy od = {.set = TY_POL_OVERDECOMPOSE, .overdecompose = 2};
  CHECK(ty_scope_push(rt, &all, "scope at outer.lua:1") == TY_OK);
  CHECK(ty_scope_push(rt, &od, "scope at inner.lua:2") == TY_OK);
  launch_mark(rt, plain, s, NULL); /* inner scope sets overdecompose only: outer mode stays */
  e = last_explain(rt);
  CHECK_EQ_INT(e.pieces, 8);
  CHECK_STR_CONTAINS(e.from[TY_AXIS_MODE], "scope at outer.lua:1");
  CHECK_STR_CONTAINS(e.from[TY_AXIS_OVERDECOMPOSE], "scope at inner.lua:2");

  CHECK(ty_store_hint(rt, h, &single) == TY_OK); /* hint beats scopes */
  launch_mark(rt, plain, h, NULL);
  e = last_explain(rt);
  CHECK_EQ_INT(e.pieces, 1);
  CHECK_STR_CONTAINS(e.from[TY_AXIS_MODE], "hint on store #");

  launch_mark(rt, heavy, h, NULL); /* trait beats hint */
  e = last_explain(rt);
  CHECK_EQ_INT(e.pieces, 8);
  CHECK_STR_CONTAINS(e.from[TY_AXIS_MODE], "trait of task 'heavy'");

  launch_mark(rt, heavy, h, &single); /* launch option beats trait */
  e = last_explain(rt);
  CHECK_EQ_INT(e.pieces, 1);
  CHECK_STR_CONTAINS(e.from[TY_AXIS_MODE], "launch option");

  CHECK(ty_scope_pop(rt) == TY_OK);
  CHECK(ty_scope_pop(rt) == TY_OK);
  CHECK(ty_scope_pop(rt) == TY_EINVAL);
  ty_store_release(s);
  ty_store_release(h);
  ty_runtime_destroy(rt);
}

/* A scope's plain launches share one resolution (internal.h, ty_resolved):
 * computed at its first launch, the same object for equal scopes, never the
 * one of a scope popped before; hinted launches keep their own; past the
 * table's size launches resolve into their own copy, with the same result. */
TEST(scope_resolution_is_shared_and_follows_push_pop) {
  ty_runtime *rt = make_rt(4);
  const ty_task *t = reg(rt, "mark", mark_task, (ty_policy){0});
  int64_t n = 100;
  ty_store *s, *h;
  CHECK(ty_store_create(rt, TY_F64, 1, &n, &s) == TY_OK);
  CHECK(ty_store_create(rt, TY_F64, 1, &n, &h) == TY_OK);
  ty_policy all = {.set = TY_POL_MODE, .mode = TY_MODE_ALL};
  ty_policy single = {.set = TY_POL_MODE, .mode = TY_MODE_SINGLE};
  CHECK(ty_store_hint(rt, h, &single) == TY_OK);

  launch_mark(rt, t, s, NULL); /* no scope: the runtime's base resolution */
  CHECK(rt->window[0]->pol == &rt->base_pol);
  CHECK(ty_scope_push(rt, &all, "scope at a.lua:1") == TY_OK);
  launch_mark(rt, t, s, NULL);
  launch_mark(rt, t, s, NULL);
  launch_mark(rt, t, h, NULL); /* the hint decides: its own */
  CHECK_EQ_INT(rt->nwindow, 4);
  const ty_resolved *a = rt->window[1]->pol;
  CHECK(a->shared && a == rt->window[2]->pol);
  CHECK(rt->window[3]->pol == &rt->window[3]->own_pol && !rt->window[3]->pol->shared);
  CHECK_EQ_INT(a->p.mode, TY_MODE_ALL);
  CHECK(ty_scope_pop(rt) == TY_OK);
  CHECK(ty_scope_push(rt, &single, "scope at b.lua:2") == TY_OK); /* same depth, new scope */
  launch_mark(rt, t, s, NULL);
  CHECK(rt->window[4]->pol != a && rt->window[4]->pol->p.mode == TY_MODE_SINGLE);
  CHECK(ty_scope_pop(rt) == TY_OK);
  CHECK(ty_scope_push(rt, &all, "scope at a.lua:1") == TY_OK); /* equal to the first */
  launch_mark(rt, t, s, NULL);
  CHECK(rt->window[5]->pol == a);
  CHECK(ty_scope_pop(rt) == TY_OK);
  CHECK_EQ_INT(rt->npol_shared, 2);

  ty_explain_entry e[6];
  CHECK(ty_explain(rt, 6, e) == 6); /* flushes: the scopes are gone, their records stay */
  const int pieces[6] = {1, 4, 4, 1, 1, 4};
  const char *mode_from[6] = {"default", "scope at a.lua:1", "scope at a.lua:1", "hint on store #",
                              "scope at b.lua:2", "scope at a.lua:1"};
  for (int i = 0; i < 6; i++) {
    CHECK_EQ_INT(e[i].pieces, pieces[i]);
    CHECK_STR_CONTAINS(e[i].from[TY_AXIS_MODE], mode_from[i]);
  }

  /* more distinct scopes than the table keeps: the same resolutions, own copies */
  for (int k = 0; k < 300; k++) {
    char origin[32];
    snprintf(origin, sizeof origin, "scope at many.lua:%d", k);
    CHECK(ty_scope_push(rt, (k & 1) ? &all : &single, origin) == TY_OK);
    launch_mark(rt, t, s, NULL);
    CHECK(ty_scope_pop(rt) == TY_OK);
  }
  CHECK_EQ_INT(rt->npol_shared, 256);
  CHECK(!rt->window[rt->nwindow - 1]->pol->shared);
  CHECK(ty_flush(rt) == TY_OK);
  CHECK(ty_explain(rt, 2, e) == 2);
  CHECK_EQ_INT(e[0].pieces, 1);
  CHECK_STR_CONTAINS(e[0].from[TY_AXIS_MODE], "scope at many.lua:298");
  CHECK_EQ_INT(e[1].pieces, 4);
  CHECK_STR_CONTAINS(e[1].from[TY_AXIS_MODE], "scope at many.lua:299");
  ty_store_release(s);
  ty_store_release(h);
  ty_runtime_destroy(rt);
}

TEST(hint_travels_to_outputs) {
  ty_runtime *rt = make_rt(4);
  const ty_task *t = reg(rt, "copyish", mark_task, (ty_policy){0});
  int64_t n = 64;
  ty_store *params, *result;
  CHECK(ty_store_create(rt, TY_F64, 1, &n, &params) == TY_OK);
  CHECK(ty_store_create(rt, TY_F64, 1, &n, &result) == TY_OK);
  ty_policy all = {.set = TY_POL_MODE, .mode = TY_MODE_ALL};
  CHECK(ty_store_hint(rt, params, &all) == TY_OK);
  /* a launch writing result with params aligned */
  ty_arg args[2] = {{result, TY_PRIV_OUT, TY_REDOP_NONE, TY_PROJ_ALIGNED},
                    {params, TY_PRIV_IN, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
  ty_launch_desc d = {.task = t, .ndim = 1, .domain = &n, .nargs = 2, .args = args};
  CHECK(ty_launch(rt, &d) == TY_OK);
  CHECK(result->has_hint);
  launch_mark(rt, t, result, NULL);
  ty_explain_entry e = last_explain(rt);
  CHECK_EQ_INT(e.pieces, 4);
  char want[64];
  snprintf(want, sizeof want, "hint on store #%llu", (unsigned long long)ty_store_id(params));
  CHECK_STR_CONTAINS(e.from[TY_AXIS_MODE], want);
  ty_store_release(params);
  ty_store_release(result);
  ty_runtime_destroy(rt);
}

/* A near-tie (within 1/16) goes to the outer dim: 200 x 201 is cut by rows,
 * as the 202 x 202 grid it is a view of would be (partition.c). */
TEST(tiling_near_tie_cuts_rows) {
  ty_runtime *rt = make_rt(2);
  const ty_task *t = reg(rt, "mark", mark_task, (ty_policy){0});
  ty_policy all = {.set = TY_POL_MODE, .mode = TY_MODE_ALL};
  int64_t shape[2] = {200, 201};
  ty_store *s;
  CHECK(ty_store_create(rt, TY_F64, 2, shape, &s) == TY_OK);
  launch_mark(rt, t, s, &all);
  ty_explain_entry e = last_explain(rt);
  CHECK_EQ_INT(e.pieces, 2);
  CHECK_EQ_INT(e.tiles[0], 2);
  CHECK_EQ_INT(e.tiles[1], 1);
  ty_store_release(s);
  /* a clearly longer inner dim still takes the factor */
  int64_t wide[2] = {200, 240};
  CHECK(ty_store_create(rt, TY_F64, 2, wide, &s) == TY_OK);
  launch_mark(rt, t, s, &all);
  e = last_explain(rt);
  CHECK_EQ_INT(e.tiles[0], 1);
  CHECK_EQ_INT(e.tiles[1], 2);
  ty_store_release(s);
  ty_runtime_destroy(rt);
}

TEST(tiling_factors_towards_square_tiles) {
  ty_runtime *rt = make_rt(6);
  const ty_task *t = reg(rt, "mark", mark_task, (ty_policy){0});
  ty_policy all = {.set = TY_POL_MODE, .mode = TY_MODE_ALL};
  int64_t shape[2] = {600, 400};
  ty_store *s;
  CHECK(ty_store_create(rt, TY_F64, 2, shape, &s) == TY_OK);
  launch_mark(rt, t, s, &all);
  ty_explain_entry e = last_explain(rt);
  CHECK_EQ_INT(e.pieces, 6);
  CHECK_EQ_INT(e.tiles[0], 3); /* 3 first to the longer dim, then 2: 200x200 tiles */
  CHECK_EQ_INT(e.tiles[1], 2);
  /* every element written once, by the piece owning its tile */
  double *buf = malloc(600 * 400 * sizeof *buf);
  CHECK(ty_store_read(rt, s, buf, 600 * 400 * sizeof *buf) == TY_OK);
  CHECK_EQ_INT(buf[0], 0);
  CHECK_EQ_INT(buf[399], 1);
  CHECK_EQ_INT(buf[200 * 400], 2);
  CHECK_EQ_INT(buf[599 * 400 + 399], 5);
  free(buf);
  ty_store_release(s);
  ty_runtime_destroy(rt);
}

TEST(prime_piece_counts_and_short_dims_fall_back) {
  ty_runtime *rt = make_rt(7);
  const ty_task *t = reg(rt, "mark", mark_task, (ty_policy){0});
  ty_policy all = {.set = TY_POL_MODE, .mode = TY_MODE_ALL};
  int64_t shape[2] = {3, 2}; /* 7 pieces cannot fit: 7 is prime and both dims are short */
  ty_store *s;
  CHECK(ty_store_create(rt, TY_F64, 2, shape, &s) == TY_OK);
  launch_mark(rt, t, s, &all);
  ty_explain_entry e = last_explain(rt);
  CHECK_EQ_INT(e.pieces, 1);
  CHECK_STR_CONTAINS(e.why, "1 fit the splittable dims");
  int64_t n = 70;
  ty_store *v;
  CHECK(ty_store_create(rt, TY_F64, 1, &n, &v) == TY_OK);
  launch_mark(rt, t, v, &all);
  e = last_explain(rt);
  CHECK_EQ_INT(e.pieces, 7);
  ty_store_release(s);
  ty_store_release(v);
  ty_runtime_destroy(rt);
}

TEST(key_partition_reused_only_when_it_fits) {
  ty_runtime *rt = make_rt(4);
  const ty_task *t = reg(rt, "mark", mark_task, (ty_policy){0});
  int64_t shape[2] = {64, 64};
  ty_store *s;
  CHECK(ty_store_create(rt, TY_F64, 2, shape, &s) == TY_OK);
  /* first writer: all 4 pieces with overdecompose 1 -> 2x2 */
  ty_policy all = {.set = TY_POL_MODE, .mode = TY_MODE_ALL};
  launch_mark(rt, t, s, &all);
  ty_explain_entry e = last_explain(rt);
  CHECK_STR_CONTAINS(e.partition, "new");
  CHECK_EQ_INT(e.tiles[0], 2);
  CHECK_EQ_INT(e.tiles[1], 2);
  launch_mark(rt, t, s, &all); /* same piece count: reuse */
  e = last_explain(rt);
  CHECK_STR_CONTAINS(e.partition, "key partition of store #");
  ty_policy od = {.set = TY_POL_MODE | TY_POL_OVERDECOMPOSE, .mode = TY_MODE_ALL, .overdecompose = 2};
  launch_mark(rt, t, s, &od); /* 8 pieces: the key partition does not satisfy it */
  e = last_explain(rt);
  CHECK_STR_CONTAINS(e.partition, "new");
  CHECK_EQ_INT(e.pieces, 8);
  ty_store_release(s);
  ty_runtime_destroy(rt);
}

/* Records the worker and the time window of each launch. */
typedef struct task_log {
  int worker;
  double t0, t1;
} task_log;

static int sleepy_task(ty_task_ctx *ctx) {
  double idx;
  memcpy(&idx, ctx->scalars, sizeof idx);
  task_log *log = *(task_log **)((const char *)ctx->scalars + 8);
  task_log *me = &log[(int)idx];
  me->worker = ctx->worker;
  me->t0 = omp_get_wtime();
  usleep(50000);
  me->t1 = omp_get_wtime();
  ((double *)ctx->args[0].data)[0] = idx;
  return 0;
}

TEST(task_mode_runs_independent_launches_at_once) {
  ty_runtime *rt = make_rt(4);
  const ty_task *t = reg(rt, "sleepy", sleepy_task, (ty_policy){0});
  task_log log[4];
  memset(log, 0, sizeof log);
  ty_store *outs[4];
  int64_t one = 1;
  ty_policy task = {.set = TY_POL_MODE, .mode = TY_MODE_TASK};
  CHECK(ty_scope_push(rt, &task, "scope at test") == TY_OK);
  for (int i = 0; i < 4; i++) {
    CHECK(ty_store_create(rt, TY_F64, 1, &one, &outs[i]) == TY_OK);
    unsigned char sc[16];
    double idx = i;
    task_log *p = log;
    memcpy(sc, &idx, 8);
    memcpy(sc + 8, &p, sizeof p);
    ty_arg a = {outs[i], TY_PRIV_OUT, TY_REDOP_NONE, TY_PROJ_ALIGNED};
    ty_launch_desc d = {.task = t, .ndim = 1, .domain = &one, .nargs = 1, .args = &a,
                        .scalars = sc, .scalar_bytes = sizeof sc};
    CHECK(ty_launch(rt, &d) == TY_OK);
  }
  CHECK(ty_scope_pop(rt) == TY_OK);
  CHECK(ty_flush(rt) == TY_OK);
  /* four distinct workers, and all four running at the same moment */
  for (int i = 0; i < 4; i++)
    for (int j = i + 1; j < 4; j++) {
      CHECK(log[i].worker != log[j].worker);
      CHECK(log[i].t0 < log[j].t1 && log[j].t0 < log[i].t1);
    }
  ty_explain_entry es[4];
  CHECK_EQ_INT(ty_explain(rt, 4, es), 4);
  for (int i = 0; i < 4; i++) {
    CHECK_EQ_INT(es[i].pieces, 1);
    CHECK_EQ_INT(es[i].processor, i);
  }
  for (int i = 0; i < 4; i++) {
    ty_value v;
    CHECK(ty_item(rt, outs[i], &v) == TY_OK);
    CHECK_EQ_INT(v.f, i);
    ty_store_release(outs[i]);
  }
  ty_runtime_destroy(rt);
}

static int inc_task(ty_task_ctx *ctx) {
  double *p = (double *)ctx->args[0].data;
  p[0] += 1;
  return 0;
}

TEST(task_mode_keeps_dependent_launches_in_order) {
  ty_runtime *rt = make_rt(4);
  const ty_task *t = reg(rt, "inc", inc_task, (ty_policy){0});
  ty_policy task = {.set = TY_POL_MODE, .mode = TY_MODE_TASK};
  int64_t one = 1;
  ty_store *s;
  CHECK(ty_scope_push(rt, &task, "scope") == TY_OK);
  CHECK(ty_store_create(rt, TY_F64, 1, &one, &s) == TY_OK);
  for (int i = 0; i < 10; i++) {
    ty_arg a = {s, TY_PRIV_INOUT, TY_REDOP_NONE, TY_PROJ_ALIGNED};
    ty_launch_desc d = {.task = t, .ndim = 1, .domain = &one, .nargs = 1, .args = &a};
    CHECK(ty_launch(rt, &d) == TY_OK);
  }
  CHECK(ty_scope_pop(rt) == TY_OK);
  ty_value v;
  CHECK(ty_item(rt, s, &v) == TY_OK);
  CHECK_EQ_INT(v.f, 10);
  ty_store_release(s);
  ty_runtime_destroy(rt);
}

static int omp_task(ty_task_ctx *ctx) {
  const ty_tile *o = &ctx->args[0];
  int used = 0;
#pragma omp parallel num_threads(ctx->threads) reduction(max : used)
  used = omp_get_num_threads();
  for (int64_t i = 0; i < o->shape[0]; i++) ((double *)o->data)[i * o->strides[0]] = used;
  return 0;
}

TEST(omp_processors_run_omp_variants_with_threads) {
  ty_runtime *rt = make_rt_cfg((ty_config){.cpus = 2, .omps = 2, .ompthreads = 2});
  const ty_task *t = NULL;
  ty_task_desc d = {.name = "omp_fill", .cpu = mark_task, .omp = omp_task,
                    .traits = {.set = TY_POL_MODE, .mode = TY_MODE_ALL}};
  CHECK(ty_task_register(rt, &d, &t) == TY_OK);
  int64_t n = 10;
  ty_store *s;
  CHECK(ty_store_create(rt, TY_F64, 1, &n, &s) == TY_OK);
  launch_mark(rt, t, s, NULL);
  ty_explain_entry e = last_explain(rt);
  CHECK(strcmp(e.target, "omp") == 0);
  CHECK_EQ_INT(e.pieces, 2);
  double buf[10];
  CHECK(ty_store_read(rt, s, buf, sizeof buf) == TY_OK);
  CHECK_EQ_INT(buf[0], 2);
  CHECK_EQ_INT(buf[9], 2);
  ty_store_release(s);
  ty_runtime_destroy(rt);
}

TEST(policy_set_parses_and_rejects) {
  ty_policy p = {0};
  char err[256];
  CHECK(ty_policy_set(&p, "parallel", "all", err, sizeof err) == TY_OK);
  CHECK(p.mode == TY_MODE_ALL && (p.set & TY_POL_MODE));
  CHECK(ty_policy_set(&p, "min_chunk", "1MiB", err, sizeof err) == TY_OK);
  CHECK_EQ_INT(p.min_chunk, 1 << 20);
  CHECK(ty_policy_set(&p, "fuse", "off", err, sizeof err) == TY_OK);
  CHECK(!p.fuse);
  CHECK(ty_policy_set(&p, "favor", "max-concurrency", err, sizeof err) == TY_OK);
  CHECK(ty_policy_set(&p, "parallel", "most", err, sizeof err) == TY_EINVAL);
  CHECK_STR_CONTAINS(err, "auto, all, single, task");
  CHECK(ty_policy_set(&p, "colour", "red", err, sizeof err) == TY_EINVAL);
  CHECK_STR_CONTAINS(err, "unknown policy key 'colour'");
  CHECK(ty_policy_set(&p, "overdecompose", "0", err, sizeof err) == TY_EINVAL);
}

TEST(explain_text_names_levels) {
  ty_runtime *rt = make_rt(2);
  const ty_task *t = reg(rt, "mark", mark_task, (ty_policy){0});
  int64_t n = 1 << 20;
  ty_store *s;
  CHECK(ty_store_create(rt, TY_F64, 1, &n, &s) == TY_OK);
  launch_mark(rt, t, s, NULL);
  char *text = NULL;
  CHECK(ty_explain_text(rt, 1, &text) == TY_OK);
  CHECK_STR_CONTAINS(text, "mark");
  CHECK_STR_CONTAINS(text, "(1048576,)");
  CHECK_STR_CONTAINS(text, "auto: 8.0 MiB / 64.0 KiB min chunk -> 128 pieces, capped at 2");
  CHECK_STR_CONTAINS(text, "mode=auto (default)");
  free(text);
  ty_store_release(s);
  ty_runtime_destroy(rt);
}

static const check_case cases[] = {
    CASE(auto_mode_grades_pieces_with_bytes),
    CASE(precedence_launch_trait_hint_scope_global),
    CASE(scope_resolution_is_shared_and_follows_push_pop),
    CASE(hint_travels_to_outputs),
    CASE(tiling_factors_towards_square_tiles),
    CASE(tiling_near_tie_cuts_rows),
    CASE(prime_piece_counts_and_short_dims_fall_back),
    CASE(key_partition_reused_only_when_it_fits),
    CASE(task_mode_runs_independent_launches_at_once),
    CASE(task_mode_keeps_dependent_launches_in_order),
    CASE(omp_processors_run_omp_variants_with_threads),
    CASE(policy_set_parses_and_rejects),
    CASE(explain_text_names_levels),
};
CHECK_MAIN(cases)
