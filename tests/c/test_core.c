/*
 * test_core.c — the core without built-in kernels: dtypes, sizes, stores and
 * views, the window and launches with a task of the test's own, partitioning,
 * reduction privates, failures, interrupts and the memory budget.
 */
#include "check.h"
#include "internal.h"

#include <tycho/task.h>
#include <tycho/tycho.h>

static ty_runtime *make_rt(int cpus) {
  ty_config cfg = {.cpus = cpus};
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&cfg, &rt) == TY_OK);
  return rt;
}

TEST(dtype_promotion_follows_numpy) {
  CHECK(ty_dtype_promote(TY_I32, TY_F32) == TY_F64);
  CHECK(ty_dtype_promote(TY_U8, TY_F32) == TY_F32);
  CHECK(ty_dtype_promote(TY_BOOL, TY_U8) == TY_U8);
  CHECK(ty_dtype_promote(TY_U8, TY_I32) == TY_I32);
  CHECK(ty_dtype_promote(TY_I64, TY_I32) == TY_I64);
  CHECK(ty_dtype_promote(TY_F32, TY_F64) == TY_F64);
  CHECK(ty_dtype_promote(TY_I64, TY_F64) == TY_F64);
  CHECK(ty_dtype_promote(TY_BOOL, TY_BOOL) == TY_BOOL);
  ty_dtype t;
  CHECK(ty_dtype_parse("float32", &t) == TY_OK && t == TY_F32);
  CHECK(ty_dtype_parse("complex", &t) == TY_EDTYPE);
}

TEST(parse_size_accepts_units) {
  size_t b;
  CHECK(ty_parse_size("512MB", &b) == TY_OK && b == 512000000u);
  CHECK(ty_parse_size("4GiB", &b) == TY_OK && b == (size_t)4 << 30);
  CHECK(ty_parse_size("4G", &b) == TY_OK && b == (size_t)4 << 30);
  CHECK(ty_parse_size("1e9", &b) == TY_OK && b == 1000000000u);
  CHECK(ty_parse_size("100", &b) == TY_OK && b == 100);
  CHECK(ty_parse_size("-5MB", &b) == TY_EINVAL);
  CHECK(ty_parse_size("12 apples", &b) == TY_EINVAL);
  CHECK(ty_parse_size("", &b) == TY_EINVAL);
}

TEST(store_views_share_storage) {
  ty_runtime *rt = make_rt(2);
  double data[12];
  for (int i = 0; i < 12; i++) data[i] = i;
  int64_t shape[2] = {3, 4};
  ty_store *x, *row, *col, *t, *sl;
  CHECK(ty_store_from_buffer(rt, TY_F64, 2, shape, data, &x) == TY_OK);
  CHECK(ty_store_select(rt, x, 0, 1, &row) == TY_OK);
  CHECK_EQ_INT(ty_store_ndim(row), 1);
  CHECK_EQ_INT(ty_store_shape(row)[0], 4);
  ty_value v;
  int64_t i2 = 2;
  CHECK(ty_store_get(rt, row, &i2, &v) == TY_OK);
  CHECK_EQ_INT(v.f, 6);
  CHECK(ty_store_select(rt, x, 1, 3, &col) == TY_OK);
  double c[3];
  CHECK(ty_store_read(rt, col, c, sizeof c) == TY_OK);
  CHECK(c[0] == 3 && c[1] == 7 && c[2] == 11);
  CHECK(ty_store_transpose(rt, x, 0, 1, &t) == TY_OK);
  CHECK(!ty_store_is_contiguous(t));
  int64_t idx[2] = {3, 1};
  CHECK(ty_store_get(rt, t, idx, &v) == TY_OK);
  CHECK_EQ_INT(v.f, 7);
  CHECK(ty_store_slice(rt, x, 1, 1, 4, 2, &sl) == TY_OK);
  CHECK_EQ_INT(ty_store_shape(sl)[1], 2);
  double s[6];
  CHECK(ty_store_read(rt, sl, s, sizeof s) == TY_OK);
  CHECK(s[0] == 1 && s[1] == 3 && s[2] == 5 && s[3] == 7 && s[4] == 9 && s[5] == 11);
  CHECK(ty_store_same_storage(x, sl));
  ty_stats st;
  ty_get_stats(rt, &st);
  CHECK_EQ_INT(st.stores_live, 5);
  CHECK_EQ_INT(st.bytes_reserved, 96);
  ty_store_release(row);
  ty_store_release(col);
  ty_store_release(t);
  ty_store_release(sl);
  ty_store_release(x);
  ty_get_stats(rt, &st);
  CHECK_EQ_INT(st.stores_live, 0);
  CHECK_EQ_INT(st.bytes_reserved, 0);
  CHECK_EQ_INT(st.bytes_live, 0);
  ty_runtime_destroy(rt);
}

TEST(view_errors_name_the_problem) {
  ty_runtime *rt = make_rt(1);
  int64_t shape[2] = {3, 4};
  ty_store *x, *v = NULL;
  CHECK(ty_store_create(rt, TY_F32, 2, shape, &x) == TY_OK);
  CHECK(ty_store_select(rt, x, 0, 3, &v) == TY_ERANGE);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "out of bounds");
  CHECK(ty_store_slice(rt, x, 2, 0, 1, 1, &v) == TY_ERANGE);
  CHECK(ty_store_slice(rt, x, 1, 2, 5, 1, &v) == TY_ERANGE);
  int64_t bad[1] = {5};
  CHECK(ty_store_reshape(rt, x, 1, bad, &v) == TY_ESHAPE);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "cannot reshape (3, 4)");
  int64_t infer[2] = {-1, 2};
  CHECK(ty_store_reshape(rt, x, 2, infer, &v) == TY_OK);
  CHECK_EQ_INT(ty_store_shape(v)[0], 6);
  ty_store_release(v);
  ty_store *t;
  CHECK(ty_store_transpose(rt, x, 0, 1, &t) == TY_OK);
  int64_t flat[1] = {12};
  CHECK(ty_store_reshape(rt, t, 1, flat, &v) == TY_EINVAL);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "not contiguous");
  ty_store_release(t);
  ty_store_release(x);
  ty_runtime_destroy(rt);
}

TEST(rank_and_overflow_limits) {
  ty_runtime *rt = make_rt(1);
  int64_t shape[TY_MAX_RANK + 1];
  for (int i = 0; i <= TY_MAX_RANK; i++) shape[i] = 1;
  ty_store *s = NULL;
  CHECK(ty_store_create(rt, TY_F64, TY_MAX_RANK, shape, &s) == TY_OK);
  ty_store *e = NULL;
  CHECK(ty_store_expand(rt, s, 0, &e) == TY_ELIMIT);
  ty_store_release(s);
  CHECK(ty_store_create(rt, TY_F64, TY_MAX_RANK + 1, shape, &s) == TY_ELIMIT);
  int64_t huge[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
  CHECK(ty_store_create(rt, TY_F64, 2, huge, &s) == TY_ERANGE);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "too large");
  int64_t neg[1] = {-1};
  CHECK(ty_store_create(rt, TY_F64, 1, neg, &s) == TY_EINVAL);
  ty_runtime_destroy(rt);
}

/* Sizes, strides, offsets and slice lengths near INT64_MAX (issue 21, item 3):
 * every shape is accepted exactly when its bytes (zero dims skipped) fit
 * int64, every slice has numpy's length, and nothing overflows on the way
 * (the sanitizer build runs this under UBSan). */
static const int64_t near_max[] = {
    0, 1, 2, 3, 6, INT64_C(1) << 31, INT64_C(1) << 32, INT64_C(1) << 62, INT64_MAX / 16,
    INT64_MAX / 8, INT64_MAX / 8 + 1, INT64_MAX / 4, INT64_MAX / 2, INT64_MAX / 2 + 1,
    INT64_MAX - 1, INT64_MAX};
#define NEAR_MAX_N ((int)(sizeof near_max / sizeof near_max[0]))

static bool bytes_fit(int ndim, const int64_t *shape, ty_dtype t) {
  __int128 n = (__int128)ty_dtype_size(t);
  for (int d = 0; d < ndim; d++) {
    if (shape[d]) n *= shape[d];
    if (n > INT64_MAX) return false;
  }
  return true;
}

/* numpy's len(range(start, stop, step)) */
static int64_t range_len(int64_t start, int64_t stop, int64_t step) {
  if (stop <= start) return 0;
  return (int64_t)(((__int128)stop - start + step - 1) / step);
}

TEST(sizes_and_steps_near_int64_max_are_checked) {
  /* a budget of INT64_MAX bytes: stores are charged when written, never here */
  ty_config cfg = {.cpus = 1, .sysmem = (size_t)INT64_MAX};
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&cfg, &rt) == TY_OK);
  const ty_dtype dts[] = {TY_F64, TY_F32, TY_I32, TY_U8};
  ty_store *empty = NULL;
  int64_t zero = 0;
  CHECK(ty_store_create(rt, TY_F64, 1, &zero, &empty) == TY_OK);
  for (int k = 0; k < 4; k++) {
    for (int i = 0; i < NEAR_MAX_N; i++)
      for (int j = 0; j < NEAR_MAX_N; j++) {
        const int64_t shapes[4][3] = {{near_max[i], near_max[j], 1},
                                      {0, near_max[i], near_max[j]},
                                      {near_max[i], 0, near_max[j]},
                                      {near_max[i], near_max[j], 2}};
        for (int v = 0; v < 4; v++) {
          ty_store *s = NULL;
          ty_status st = ty_store_create(rt, dts[k], 3, shapes[v], &s);
          if (bytes_fit(3, shapes[v], dts[k])) {
            CHECK(st == TY_OK || st == TY_ENOMEM);
          } else {
            CHECK_EQ_INT(st, TY_ERANGE);
            CHECK_STR_CONTAINS(ty_errmsg(rt), "too large: its size in bytes overflows int64");
          }
          ty_store_release(s);
          s = NULL;
          /* the reproducer: zeros({0}):reshape(0, 2^62, 2^62) */
          if (k == 0 && shapes[v][0] == 0) {
            st = ty_store_reshape(rt, empty, 3, shapes[v], &s);
            CHECK_EQ_INT(st, bytes_fit(3, shapes[v], TY_F64) ? TY_OK : TY_ERANGE);
            if (s) {
              CHECK_EQ_INT(ty_store_size(s), 0);
              ty_store_release(s);
            }
          }
        }
      }
  }
  ty_store_release(empty);

  /* slices of a 6-element store and of a u8 store of INT64_MAX elements
   * (never allocated), with steps and bounds near the limit */
  int64_t six = 6, big = INT64_MAX;
  ty_store *bases[2] = {NULL, NULL};
  CHECK(ty_store_create(rt, TY_I64, 1, &six, &bases[0]) == TY_OK);
  CHECK(ty_store_create(rt, TY_U8, 1, &big, &bases[1]) == TY_OK);
  for (int b = 0; b < 2 && bases[1]; b++) {
    int64_t n = ty_store_shape(bases[b])[0];
    const int64_t bounds[] = {0, 1, 5, 6, n / 2, n - 2, n - 1, n};
    for (int i = 0; i < 8; i++)
      for (int j = 0; j < 8; j++)
        for (int k = 1; k < NEAR_MAX_N; k++) {
          int64_t start = bounds[i], stop = bounds[j], step = near_max[k];
          if (start > n || stop > n || stop < start) continue;
          ty_store *v = NULL;
          CHECK_EQ_INT(ty_store_slice(rt, bases[b], 0, start, stop, step, &v), TY_OK);
          if (!v) continue;
          CHECK_EQ_INT(ty_store_shape(v)[0], range_len(start, stop, step));
          /* a view of the view: the last element, then every second one */
          int64_t len = ty_store_shape(v)[0];
          ty_store *w = NULL;
          if (len > 0) {
            CHECK_EQ_INT(ty_store_select(rt, v, 0, len - 1, &w), TY_OK);
            ty_store_release(w);
            w = NULL;
            CHECK_EQ_INT(ty_store_slice(rt, v, 0, 0, len, 2, &w), TY_OK);
            if (w) CHECK_EQ_INT(ty_store_shape(w)[0], range_len(0, len, 2));
            ty_store_release(w);
          }
          ty_store_release(v);
        }
  }
  /* x[{{1, 6, math.maxinteger}}] has one element, as numpy's x[0:6:huge] */
  ty_store *v = NULL;
  CHECK(ty_store_slice(rt, bases[0], 0, 0, 6, INT64_MAX, &v) == TY_OK);
  if (v) CHECK_EQ_INT(ty_store_size(v), 1);
  ty_store_release(v);
  v = NULL;
  CHECK(ty_store_slice(rt, bases[0], 0, 0, 6, INT64_MAX - 1, &v) == TY_OK);
  if (v) CHECK_EQ_INT(ty_store_size(v), 1);
  ty_store_release(v);

  /* broadcasting and reshaping the huge store: the view's bytes must fit */
  v = NULL;
  int64_t sq[2] = {INT64_MAX, 2};
  CHECK_EQ_INT(ty_store_reshape(rt, bases[1], 2, (int64_t[2]){-1, 1}, &v), TY_OK);
  ty_store *w = NULL;
  if (v) CHECK_EQ_INT(ty_store_broadcast(rt, v, 2, sq, &w), TY_ERANGE);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "ty_store_broadcast: shape (9223372036854775807, 2) u8 is too large");
  ty_store_release(v);
  v = NULL;
  CHECK_EQ_INT(ty_store_reshape(rt, bases[1], 3, (int64_t[3]){-1, 2, 2}, &v), TY_ESHAPE);
  CHECK_EQ_INT(ty_store_reshape(rt, bases[1], 2, (int64_t[2]){-1, INT64_MAX}, &v), TY_OK);
  ty_store_release(v);
  ty_store_release(bases[0]);
  ty_store_release(bases[1]);
  ty_runtime_destroy(rt);
}

TEST(budget_refuses_oversized_store) {
  ty_config cfg = {.cpus = 1, .sysmem = 1 << 20};
  ty_runtime *rt;
  CHECK(ty_runtime_create(&cfg, &rt) == TY_OK);
  int64_t shape[2] = {1024, 1024};
  ty_store *s = NULL;
  CHECK(ty_store_create(rt, TY_F64, 2, shape, &s) == TY_ENOMEM);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "(1024, 1024) f64 needs 8.0 MiB");
  CHECK_STR_CONTAINS(ty_errmsg(rt), "budget is 1.0 MiB");
  int64_t small[1] = {1000};
  CHECK(ty_store_create(rt, TY_F64, 1, small, &s) == TY_OK);
  ty_store_release(s);
  ty_runtime_destroy(rt);
}

TEST(broadcast_shapes_numpy_rules) {
  int64_t a[2] = {3, 1}, b[1] = {4}, out[TY_MAX_RANK];
  int n;
  CHECK(ty_broadcast_shapes(2, a, 1, b, &n, out) == TY_OK);
  CHECK(n == 2 && out[0] == 3 && out[1] == 4);
  int64_t c[1] = {5};
  CHECK(ty_broadcast_shapes(2, a, 1, c, &n, out) == TY_OK);
  int64_t d[2] = {3, 4};
  CHECK(ty_broadcast_shapes(2, d, 1, c, &n, out) == TY_ESHAPE);
}

/* A task of the test's own: out = in * k + piece marker check. Records which
 * pieces ran to check partitioning. */
static int scale_task(ty_task_ctx *ctx) {
  const ty_tile *in = &ctx->args[0], *out = &ctx->args[1];
  double k;
  memcpy(&k, ctx->scalars, sizeof k);
  if (in->ndim != 1) return ty_ctx_fail(ctx, "expected 1-D");
  for (int64_t i = 0; i < in->shape[0]; i++)
    ((double *)out->data)[i * out->strides[0]] = ((double *)in->data)[i * in->strides[0]] * k;
  return 0;
}

static ty_status launch_scale(ty_runtime *rt, const ty_task *t, ty_store *in, ty_store *out,
                              double k) {
  ty_arg args[2] = {{in, TY_PRIV_IN, TY_REDOP_NONE, TY_PROJ_ALIGNED},
                    {out, TY_PRIV_OUT, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
  ty_launch_desc d = {.task = t, .ndim = 1, .domain = ty_store_shape(in), .nargs = 2,
                      .args = args, .scalars = &k, .scalar_bytes = sizeof k};
  return ty_launch(rt, &d);
}

TEST(launches_are_deferred_until_read) {
  ty_runtime *rt = make_rt(3);
  const ty_task *t;
  ty_task_desc desc = {.name = "test_scale", .cpu = scale_task};
  CHECK(ty_task_register(rt, &desc, &t) == TY_OK);
  CHECK(ty_task_register(rt, &desc, NULL) == TY_EINVAL);
  CHECK(ty_task_find(rt, "test_scale") == t);
  enum { N = 100000 };
  double *data = malloc(N * sizeof *data);
  for (int i = 0; i < N; i++) data[i] = i;
  int64_t shape[1] = {N};
  ty_store *a, *b, *c;
  CHECK(ty_store_from_buffer(rt, TY_F64, 1, shape, data, &a) == TY_OK);
  CHECK(ty_store_create(rt, TY_F64, 1, shape, &b) == TY_OK);
  CHECK(ty_store_create(rt, TY_F64, 1, shape, &c) == TY_OK);
  CHECK(launch_scale(rt, t, a, b, 2.0) == TY_OK);
  CHECK(launch_scale(rt, t, b, c, 3.0) == TY_OK);
  ty_stats st;
  ty_get_stats(rt, &st);
  CHECK_EQ_INT(st.launches, 2);
  CHECK_EQ_INT(st.flushes, 0);
  CHECK(ty_store_read(rt, c, data, N * sizeof *data) == TY_OK);
  int bad = 0;
  for (int i = 0; i < N; i++) bad += data[i] != 6.0 * i;
  CHECK_EQ_INT(bad, 0);
  ty_get_stats(rt, &st);
  CHECK_EQ_INT(st.flushes, 1);
  /* 800 KB per launch at 64 KiB per piece, capped at 3 processors */
  CHECK_EQ_INT(st.pieces, 6);
  free(data);
  ty_store_release(a);
  ty_store_release(b);
  ty_store_release(c);
  ty_runtime_destroy(rt);
}

TEST(window_flushes_when_full) {
  ty_config cfg = {.cpus = 2, .window = 4};
  ty_runtime *rt;
  CHECK(ty_runtime_create(&cfg, &rt) == TY_OK);
  const ty_task *t;
  ty_task_desc desc = {.name = "test_scale", .cpu = scale_task};
  CHECK(ty_task_register(rt, &desc, &t) == TY_OK);
  double one = 1;
  ty_store *a;
  int64_t shape[1] = {1};
  CHECK(ty_store_from_buffer(rt, TY_F64, 1, shape, &one, &a) == TY_OK);
  for (int i = 0; i < 10; i++) CHECK(launch_scale(rt, t, a, a, 2.0) == TY_OK);
  ty_stats st;
  ty_get_stats(rt, &st);
  CHECK_EQ_INT(st.flushes, 2);
  ty_value v;
  CHECK(ty_item(rt, a, &v) == TY_OK);
  CHECK_EQ_INT(v.f, 1024);
  ty_store_release(a);
  ty_runtime_destroy(rt);
}

/* Sums its input into a REDUCE argument that is a 0-d store broadcast to the
 * domain (all strides 0): the private tile is a single element. */
static int sum_task(ty_task_ctx *ctx) {
  const ty_tile *in = &ctx->args[0], *acc = &ctx->args[1];
  double s = 0;
  for (int64_t i = 0; i < in->shape[0]; i++) s += ((double *)in->data)[i * in->strides[0]];
  *(double *)acc->data += s;
  return 0;
}

TEST(reduce_privilege_combines_pieces) {
  for (int cpus = 1; cpus <= 8; cpus++) {
    ty_runtime *rt = make_rt(cpus);
    const ty_task *t;
    ty_task_desc desc = {.name = "test_sum", .cpu = sum_task};
    CHECK(ty_task_register(rt, &desc, &t) == TY_OK);
    enum { N = 50001 };
    double *data = malloc(N * sizeof *data);
    for (int i = 0; i < N; i++) data[i] = i;
    int64_t shape[1] = {N};
    ty_store *a, *r, *rv;
    CHECK(ty_store_from_buffer(rt, TY_F64, 1, shape, data, &a) == TY_OK);
    CHECK(ty_scalar_f64(rt, TY_F64, 10.0, &r) == TY_OK);
    CHECK(ty_store_broadcast(rt, r, 1, shape, &rv) == TY_OK);
    ty_arg args[2] = {{a, TY_PRIV_IN, TY_REDOP_NONE, TY_PROJ_ALIGNED},
                      {rv, TY_PRIV_REDUCE, TY_REDOP_SUM, TY_PROJ_ALIGNED}};
    ty_launch_desc d = {.task = t, .ndim = 1, .domain = shape, .nargs = 2, .args = args};
    CHECK(ty_launch(rt, &d) == TY_OK);
    ty_value v;
    CHECK(ty_item(rt, r, &v) == TY_OK);
    CHECK_EQ_INT(v.f, 10.0 + (double)N * (N - 1) / 2);
    ty_stats st;
    ty_get_stats(rt, &st);
    CHECK_EQ_INT(st.pieces, cpus < 7 ? cpus : 7); /* 400 KB / 64 KiB = 7 pieces at most */
    free(data);
    ty_store_release(rv);
    ty_store_release(r);
    ty_store_release(a);
    ty_runtime_destroy(rt);
  }
}

static int failing_task(ty_task_ctx *ctx) {
  if (ctx->piece == ctx->pieces - 1) return ty_ctx_fail(ctx, "bad value at %d", 42);
  return 0;
}

TEST(task_failure_names_task_and_keeps_window) {
  ty_runtime *rt = make_rt(2);
  const ty_task *t, *f;
  ty_task_desc desc = {.name = "test_scale", .cpu = scale_task}, fdesc = {.name = "test_fail", .cpu = failing_task};
  CHECK(ty_task_register(rt, &desc, &t) == TY_OK);
  CHECK(ty_task_register(rt, &fdesc, &f) == TY_OK);
  double one = 1;
  int64_t shape[1] = {1};
  ty_store *a, *b, *c;
  CHECK(ty_store_from_buffer(rt, TY_F64, 1, shape, &one, &a) == TY_OK);
  CHECK(ty_store_create(rt, TY_F64, 1, shape, &b) == TY_OK);
  CHECK(ty_store_create(rt, TY_F64, 1, shape, &c) == TY_OK);
  ty_arg fargs[1] = {{b, TY_PRIV_OUT, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
  ty_launch_desc fd = {.task = f, .ndim = 1, .domain = shape, .nargs = 1, .args = fargs};
  CHECK(ty_launch(rt, &fd) == TY_OK);
  CHECK(launch_scale(rt, t, a, c, 5.0) == TY_OK); /* independent: still runs */
  CHECK(ty_flush(rt) == TY_ETASK);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "task 'test_fail' failed in piece 1 of 1: bad value at 42");
  ty_value v;
  CHECK(ty_item(rt, c, &v) == TY_OK);
  CHECK_EQ_INT(v.f, 5);
  /* the failed launch's output is unavailable, and the error names why */
  CHECK(ty_item(rt, b, &v) == TY_ETASK);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "the value is unavailable: launch #1 failed: task 'test_fail' "
                                    "failed in piece 1 of 1: bad value at 42");
  ty_store_release(a);
  ty_store_release(b);
  ty_store_release(c);
  ty_runtime_destroy(rt);
}

TEST(interrupt_cancels_rest_of_window) {
  ty_runtime *rt = make_rt(2);
  const ty_task *t;
  ty_task_desc desc = {.name = "test_scale", .cpu = scale_task};
  CHECK(ty_task_register(rt, &desc, &t) == TY_OK);
  double one = 1;
  int64_t shape[1] = {1};
  ty_store *a, *b;
  CHECK(ty_store_from_buffer(rt, TY_F64, 1, shape, &one, &a) == TY_OK);
  CHECK(ty_store_create(rt, TY_F64, 1, shape, &b) == TY_OK);
  CHECK(launch_scale(rt, t, a, b, 2.0) == TY_OK);
  ty_interrupt(rt);
  CHECK(ty_flush(rt) == TY_EINTR);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "interrupted");
  ty_value v;
  CHECK(ty_item(rt, b, &v) == TY_EINTR);
  CHECK(ty_item(rt, a, &v) == TY_OK); /* runtime still usable */
  CHECK_EQ_INT(v.f, 1);
  ty_store_release(a);
  ty_store_release(b);
  ty_runtime_destroy(rt);
}

TEST(runtime_destroy_before_stores) {
  ty_runtime *rt = make_rt(1);
  ty_store *s;
  CHECK(ty_scalar_i64(rt, TY_I32, 7, &s) == TY_OK);
  ty_runtime_destroy(rt);
  CHECK_EQ_INT(ty_store_size(s), 1);
  ty_store_release(s); /* frees the runtime; ASan checks there is no leak or use after free */
}

TEST(launch_checks_arguments) {
  ty_runtime *rt = make_rt(1);
  const ty_task *t;
  ty_task_desc desc = {.name = "test_scale", .cpu = scale_task};
  CHECK(ty_task_register(rt, &desc, &t) == TY_OK);
  int64_t s3[1] = {3}, s4[1] = {4};
  ty_store *a, *b;
  CHECK(ty_store_create(rt, TY_F64, 1, s3, &a) == TY_OK);
  CHECK(ty_store_create(rt, TY_F64, 1, s4, &b) == TY_OK);
  CHECK(launch_scale(rt, t, a, b, 1.0) == TY_ESHAPE);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "argument 2 has shape (4,), the launch domain is (3,)");
  ty_arg args[1] = {{a, TY_PRIV_OUT, TY_REDOP_NONE, TY_PROJ_WHOLE}};
  ty_launch_desc d = {.task = t, .ndim = 1, .domain = s3, .nargs = 1, .args = args};
  CHECK(ty_launch(rt, &d) == TY_EINVAL);
  ty_task_desc longname = {
      .name = "a_task_name_that_is_much_longer_than_the_sixty_three_bytes_we_allow_",
      .cpu = scale_task};
  CHECK(ty_task_register(rt, &longname, NULL) == TY_ELIMIT);
  ty_store_release(a);
  ty_store_release(b);
  ty_runtime_destroy(rt);
}


static int released;
static void on_release(void *ud) { released += *(int *)ud; }

TEST(attach_uses_host_buffer_without_copy) {
  ty_runtime *rt = make_rt(2);
  _Alignas(64) double buf[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  int token = 7;
  released = 0;
  ty_store *a, *row;
  CHECK(ty_store_attach(rt, TY_F64, 2, shape, buf, on_release, &token, &a) == TY_OK);
  CHECK(ty_store_select(rt, a, 0, 1, &row) == TY_OK);
  ty_value v;
  int64_t i = 2;
  CHECK(ty_store_get(rt, row, &i, &v) == TY_OK);
  CHECK_EQ_INT(v.f, 6);
  buf[5] = 60; /* no copy: the store sees the host's write */
  CHECK(ty_store_get(rt, row, &i, &v) == TY_OK);
  CHECK_EQ_INT(v.f, 60);
  ty_stats st;
  ty_get_stats(rt, &st);
  CHECK_EQ_INT(st.bytes_reserved, 0);
  ty_store_release(a);
  CHECK_EQ_INT(released, 0); /* the view still holds it */
  ty_store_release(row);
  CHECK_EQ_INT(released, 7);
  CHECK(ty_store_attach(rt, TY_F64, 2, shape, (char *)buf + 1, NULL, NULL, &a) == TY_EINVAL);
  ty_runtime_destroy(rt);
}

static const check_case cases[] = {
    CASE(dtype_promotion_follows_numpy),
    CASE(parse_size_accepts_units),
    CASE(store_views_share_storage),
    CASE(view_errors_name_the_problem),
    CASE(rank_and_overflow_limits),
    CASE(sizes_and_steps_near_int64_max_are_checked),
    CASE(budget_refuses_oversized_store),
    CASE(broadcast_shapes_numpy_rules),
    CASE(launches_are_deferred_until_read),
    CASE(window_flushes_when_full),
    CASE(reduce_privilege_combines_pieces),
    CASE(task_failure_names_task_and_keeps_window),
    CASE(interrupt_cancels_rest_of_window),
    CASE(runtime_destroy_before_stores),
    CASE(launch_checks_arguments),
    CASE(attach_uses_host_buffer_without_copy),
};
CHECK_MAIN(cases)
