/*
 * lcreate.c — making stores from Lua: zeros ones full empty random arange
 * linspace array, and .npy load/save.
 *
 * Default dtypes follow numpy where Lua has the same distinction: zeros,
 * ones, empty, random and linspace make f64; full takes its value's kind
 * (integer -> i64, float -> f64, boolean -> bool); arange is i64 when every
 * number is a Lua integer, else f64; array is i64 when every element is an
 * integer, bool when every element is a boolean, else f64. A trailing dtype
 * string overrides.
 *
 * array() walks the nested table twice: first to check that it is
 * rectangular and to collect the element kinds (errors name the element by
 * its 1-based path, e.g. [2][3]), then to write a dense C-order buffer. The
 * buffer is a Lua userdata, so no error path can leak it.
 */
#include "tl.h"

#include <math.h>
#include <string.h>

static int finish(lua_State *L, ty_runtime *rt, ty_store **slot, ty_status st, const char *fn) {
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  tl_created(L, *slot);
  return 1;
}

static const tl_sig sig_zeros = {"zeros", 1, 2, "", false, "tycho.zeros(shape [, dtype])"};
static const tl_sig sig_ones = {"ones", 1, 2, "", false, "tycho.ones(shape [, dtype])"};

/* zeros/ones(shape[, dtype]) */
static int filled(lua_State *L, const char *fn, double v) {
  tl_args(L, fn[0] == 'z' ? &sig_zeros : &sig_ones);
  ty_runtime *rt = tl_rt(L);
  ty_dtype t = tl_optdtype(L, 2, fn, TY_F64);
  int64_t shape[TY_MAX_RANK];
  int ndim = tl_checkshape(L, 1, fn, shape, false, t);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_full(rt, t, ndim, shape, v, slot));
  return finish(L, rt, slot, st, fn);
}

static int l_zeros(lua_State *L) { return filled(L, "zeros", 0.0); }
static int l_ones(lua_State *L) { return filled(L, "ones", 1.0); }

static const tl_sig sig_full = {"full", 2, 3, "", false, "tycho.full(shape, value [, dtype])"};
static int l_full(lua_State *L) {
  tl_args(L, &sig_full);
  ty_runtime *rt = tl_rt(L);
  int tp = lua_type(L, 2);
  if (tp != LUA_TNUMBER && tp != LUA_TBOOLEAN)
    return tl_error(L, "full", "value must be a number or a boolean, got %s", tl_typename(L, 2));
  ty_dtype def = tp == LUA_TBOOLEAN ? TY_BOOL : lua_isinteger(L, 2) ? TY_I64 : TY_F64;
  ty_dtype t = tl_optdtype(L, 3, "full", def);
  int64_t shape[TY_MAX_RANK];
  int ndim = tl_checkshape(L, 1, "full", shape, false, t);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_store_create(rt, t, ndim, shape, slot));
  if (st != TY_OK) return tl_fail(L, rt, "full", st);
  tl_fill_value(L, rt, *slot, 2, "full"); /* exact for 64-bit integers */
  tl_created(L, *slot);
  return 1;
}

static const tl_sig sig_empty = {"empty", 1, 2, "", false, "tycho.empty(shape [, dtype])"};
static int l_empty(lua_State *L) {
  tl_args(L, &sig_empty);
  ty_runtime *rt = tl_rt(L);
  ty_dtype t = tl_optdtype(L, 2, "empty", TY_F64);
  int64_t shape[TY_MAX_RANK];
  int ndim = tl_checkshape(L, 1, "empty", shape, false, t);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_store_create(rt, t, ndim, shape, slot));
  return finish(L, rt, slot, st, "empty");
}

/* random(shape [, dtype] [, dist]): "uniform" in [0, 1) (the core's), or
 * "normal" (mean 0, variance 1) by Box-Muller from two uniform draws:
 * sqrt(-2 log(1 - u1)) cos(2 pi u2), 1 - u1 in (0, 1] so the log is finite.
 * Both are launches like any other: fused, the same bits under any --cpus.
 * tycho.random is also a table of numpy's Generator functions (lrandom.c),
 * whose __call reaches this function. */
static const tl_sig sig_random = {"random", 1, 3, "", false,
                                  "tycho.random(shape [, dtype] [, \"uniform\" | \"normal\"])"};
static int l_random(lua_State *L) {
  const char *fn = "random";
  tl_args(L, &sig_random);
  ty_runtime *rt = tl_rt(L);
  ty_dtype t = tl_optdtype(L, 2, fn, TY_F64);
  bool normal = false;
  if (!lua_isnil(L, 3)) {
    if (lua_type(L, 3) != LUA_TSTRING)
      return tl_argerror(L, &sig_random, "dist must be a string, got %s", tl_typename(L, 3));
    const char *d = lua_tostring(L, 3);
    normal = strcmp(d, "normal") == 0;
    if (!normal && strcmp(d, "uniform") != 0)
      return tl_error(L, fn, "unknown distribution '%s' (expected \"uniform\": [0, 1), or "
                      "\"normal\": mean 0, variance 1)", d);
  }
  if (!ty_dtype_is_float(t))
    return tl_error(L, fn, "dtype must be f64 or f32, got %s", ty_dtype_name(t));
  int64_t shape[TY_MAX_RANK];
  int ndim = tl_checkshape(L, 1, fn, shape, false, t);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_random(rt, t, ndim, shape, slot));
  if (st != TY_OK || !normal) return finish(L, rt, slot, st, fn);
  ty_store *u1 = *slot, *u2;
  slot = tl_newslot(L);
  TL_TRY(L, rt, st, ty_random(rt, t, ndim, shape, slot));
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  u2 = *slot;
  lua_pushnumber(L, 1.0);
  ty_store *one = tl_scalar(L, rt, lua_gettop(L), fn, t);
  lua_pushnumber(L, -2.0);
  ty_store *m2 = tl_scalar(L, rt, lua_gettop(L), fn, t);
  lua_pushnumber(L, 6.283185307179586);
  ty_store *tau = tl_scalar(L, rt, lua_gettop(L), fn, t);
  /* r = sqrt(-2 log(1 - u1)); c = cos(tau u2); r * c */
  ty_store **a = tl_newslot(L);
  TL_TRY(L, rt, st, ty_binary(rt, TY_OP_SUB, one, u1, a));
  ty_store **b = tl_newslot(L);
  if (st == TY_OK) TL_TRY(L, rt, st, ty_unary(rt, TY_OP_LOG, *a, b));
  ty_store **c = tl_newslot(L);
  if (st == TY_OK) TL_TRY(L, rt, st, ty_binary(rt, TY_OP_MUL, m2, *b, c));
  ty_store **r = tl_newslot(L);
  if (st == TY_OK) TL_TRY(L, rt, st, ty_unary(rt, TY_OP_SQRT, *c, r));
  ty_store **e = tl_newslot(L);
  if (st == TY_OK) TL_TRY(L, rt, st, ty_binary(rt, TY_OP_MUL, tau, u2, e));
  ty_store **f = tl_newslot(L);
  if (st == TY_OK) TL_TRY(L, rt, st, ty_unary(rt, TY_OP_COS, *e, f));
  ty_store **z = tl_newslot(L);
  if (st == TY_OK) TL_TRY(L, rt, st, ty_binary(rt, TY_OP_MUL, *r, *f, z));
  return finish(L, rt, z, st, fn);
}

/* Elements of a 1-D store of dtype t (the byte size must fit int64). */
static void check_count(lua_State *L, const char *fn, double count, ty_dtype t) {
  if (!(count <= (double)(INT64_MAX / (int64_t)ty_dtype_size(t))))
    tl_error(L, fn, "%.17g elements of %s are too many: the size in bytes overflows", count,
             ty_dtype_name(t));
}

/* arange(stop) | arange(start, stop[, step]) [, dtype]: numpy's, stop exclusive. */
static const tl_sig sig_arange = {"arange", 1, 4, "", false,
                                  "tycho.arange(stop | start, stop [, step] [, dtype])"};
static int l_arange(lua_State *L) {
  static const char *const names1[] = {"stop"};
  static const char *const names3[] = {"start", "stop", "step"};
  int n = tl_args(L, &sig_arange);
  ty_runtime *rt = tl_rt(L);
  bool has_dtype = n >= 1 && lua_type(L, n) == LUA_TSTRING;
  ty_dtype t = has_dtype ? tl_optdtype(L, n, "arange", TY_F64) : TY_F64;
  if (has_dtype) n--;
  if (n < 1 || n > 3)
    return tl_error(L, "arange", "expected arange(stop), arange(start, stop) or "
                    "arange(start, stop, step), got %d arguments", n);
  bool allint = true;
  for (int k = 1; k <= n; k++) {
    if (lua_type(L, k) != LUA_TNUMBER)
      return tl_error(L, "arange", "%s must be a number, got %s",
                      n == 1 ? names1[0] : names3[k - 1], tl_typename(L, k));
    allint = allint && lua_isinteger(L, k);
  }
  if (!has_dtype) t = allint ? TY_I64 : TY_F64;
  int64_t count;
  double start_d, step_d;
  if (allint) {
    int64_t start = n == 1 ? 0 : lua_tointeger(L, 1);
    int64_t stop = lua_tointeger(L, n == 1 ? 1 : 2);
    int64_t step = n == 3 ? lua_tointeger(L, 3) : 1;
    if (step == 0) return tl_error(L, "arange", "step must not be zero");
    __int128 diff = (__int128)stop - start, c;
    if (step > 0) c = diff <= 0 ? 0 : (diff + step - 1) / step;
    else c = diff >= 0 ? 0 : (diff + step + 1) / step;
    check_count(L, "arange", (double)c, t);
    count = (int64_t)c;
    start_d = (double)start;
    step_d = (double)step;
  } else {
    double start = n == 1 ? 0.0 : lua_tonumber(L, 1);
    double stop = lua_tonumber(L, n == 1 ? 1 : 2);
    double step = n == 3 ? lua_tonumber(L, 3) : 1.0;
    if (step == 0) return tl_error(L, "arange", "step must not be zero");
    if (!isfinite(start) || !isfinite(stop) || !isfinite(step))
      return tl_error(L, "arange", "start, stop and step must be finite");
    double c = ceil((stop - start) / step);
    if (!(c > 0)) c = 0;
    check_count(L, "arange", c, t);
    count = (int64_t)c;
    start_d = start;
    step_d = step;
  }
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_arange(rt, t, start_d, step_d, count, slot));
  return finish(L, rt, slot, st, "arange");
}

static double checknumber(lua_State *L, int idx, const char *fn, const char *what) {
  if (lua_type(L, idx) != LUA_TNUMBER)
    tl_error(L, fn, "%s must be a number, got %s", what, tl_typename(L, idx));
  return (double)lua_tonumber(L, idx);
}

/* linspace(a, b, n[, dtype]): n points from a to b inclusive. */
static const tl_sig sig_linspace = {"linspace", 3, 4, "", false,
                                    "tycho.linspace(start, stop, num [, dtype])"};
static int l_linspace(lua_State *L) {
  tl_args(L, &sig_linspace);
  ty_runtime *rt = tl_rt(L);
  double a = checknumber(L, 1, "linspace", "start");
  double b = checknumber(L, 2, "linspace", "stop");
  int64_t n = tl_checkint(L, 3, "linspace", "num");
  ty_dtype t = tl_optdtype(L, 4, "linspace", TY_F64);
  if (n < 0) return tl_error(L, "linspace", "num must be a non-negative integer, got %lld", (long long)n);
  check_count(L, "linspace", (double)n, t);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_linspace(rt, t, a, b, n, slot));
  return finish(L, rt, slot, st, "linspace");
}

/* ---- array(nested_table[, dtype]) ------------------------------------------------ */

typedef struct walk {
  int ndim;
  int64_t shape[TY_MAX_RANK];
  int64_t path[TY_MAX_RANK]; /* 1-based position being visited at each depth */
  bool has_float, has_int, has_bool;
} walk;

static void path_str(const walk *w, int depth, char *buf, size_t len) {
  size_t n = 0;
  buf[0] = '\0';
  for (int d = 0; d <= depth && n < len; d++)
    n += (size_t)snprintf(buf + n, len - n, "[%lld]", (long long)w->path[d]);
}

/* The table at the top is at `depth`; check it and everything below. */
static void check_rect(lua_State *L, walk *w, int depth) {
  luaL_checkstack(L, 3, "tycho.array: nesting too deep");
  int64_t n = (int64_t)lua_rawlen(L, -1);
  char path[TY_MAX_RANK * 24];
  if (n != w->shape[depth]) {
    path_str(w, depth - 1, path, sizeof path);
    tl_error(L, "array", "the table is not rectangular: %s has %lld elements, expected %lld",
             path, (long long)n, (long long)w->shape[depth]);
  }
  for (int64_t i = 1; i <= n; i++) {
    w->path[depth] = i;
    int tp = lua_rawgeti(L, -1, (lua_Integer)i);
    if (depth + 1 < w->ndim) {
      if (tp != LUA_TTABLE) {
        path_str(w, depth, path, sizeof path);
        tl_error(L, "array", "the table is not rectangular: element %s is a %s, expected a "
                 "table of %lld elements", path, tl_typename(L, -1),
                 (long long)w->shape[depth + 1]);
      }
      check_rect(L, w, depth + 1);
    } else if (tp == LUA_TNUMBER) {
      if (lua_isinteger(L, -1)) w->has_int = true;
      else w->has_float = true;
    } else if (tp == LUA_TBOOLEAN) {
      w->has_bool = true;
    } else {
      path_str(w, depth, path, sizeof path);
      if (tp == LUA_TTABLE)
        tl_error(L, "array", "the table is not rectangular: element %s is a table, expected a "
                 "number", path);
      tl_error(L, "array", "element %s must be a number or a boolean, got %s", path,
               tl_typename(L, -1));
    }
    lua_pop(L, 1);
  }
}

/* Float to integer as the core's casts do (kernels_cast.c): NaN gives 0,
 * values beyond the target's range saturate, the rest truncate. A Lua integer
 * must fit the dtype (tl_check_int_fits), as numpy 2 requires. None of it is
 * undefined behaviour in C. */
static int64_t sat_i64(double d) {
  if (d != d) return 0;
  if (d >= 9223372036854775808.0) return INT64_MAX;
  if (d < -9223372036854775808.0) return INT64_MIN;
  return (int64_t)d;
}

static int64_t sat_range(double d, double lo, double hi) {
  if (d != d) return 0;
  if (d <= lo) return (int64_t)lo;
  if (d >= hi) return (int64_t)hi;
  return (int64_t)d;
}

/* Write the Lua number/boolean at the top into p as dtype t. */
static void put_elem(lua_State *L, char *p, ty_dtype t) {
  bool is_float = lua_type(L, -1) == LUA_TNUMBER && !lua_isinteger(L, -1);
  double d = 0;
  int64_t i = 0;
  if (lua_type(L, -1) == LUA_TBOOLEAN) {
    i = lua_toboolean(L, -1);
    d = (double)i;
  } else if (is_float) {
    d = (double)lua_tonumber(L, -1);
    i = sat_i64(d);
  } else {
    i = (int64_t)lua_tointeger(L, -1);
    d = (double)i;
    tl_check_int_fits(L, "array", i, t);
  }
  switch (t) {
  case TY_F64: memcpy(p, &d, 8); break;
  case TY_F32: { float f = (float)d; memcpy(p, &f, 4); break; }
  case TY_I64: memcpy(p, &i, 8); break;
  case TY_I32: {
    int32_t v = is_float ? (int32_t)sat_range(d, -2147483648.0, 2147483647.0)
                         : (int32_t)(uint32_t)(uint64_t)i;
    memcpy(p, &v, 4);
    break;
  }
  case TY_U8:
    *(unsigned char *)p = is_float ? (unsigned char)sat_range(d, 0.0, 255.0)
                                   : (unsigned char)(uint64_t)i;
    break;
  case TY_BOOL: *p = is_float ? (d != 0) : (i != 0); break;
  default: { /* the integer dtypes added later: floats saturate, integers fit */
    int64_t lo;
    uint64_t hi;
    ty_dtype_limits(t, &lo, &hi);
    if (is_float && t == TY_U64) /* beyond int64: saturate in unsigned */
      i = d != d || d <= 0 ? 0 : d >= 18446744073709551616.0 ? -1 : (int64_t)(uint64_t)d;
    else if (is_float)
      i = sat_range(d, (double)lo, (double)hi);
    tl_put_int(p, t, i);
    break;
  }
  }
}

static void fill_buffer(lua_State *L, const walk *w, int depth, char *buf, ty_dtype t,
                        int64_t *pos) {
  size_t es = ty_dtype_size(t);
  for (int64_t i = 1; i <= w->shape[depth]; i++) {
    lua_rawgeti(L, -1, (lua_Integer)i);
    if (depth + 1 < w->ndim) fill_buffer(L, w, depth + 1, buf, t, pos);
    else put_elem(L, buf + (size_t)(*pos)++ * es, t);
    lua_pop(L, 1);
  }
}

static const tl_sig sig_array = {"array", 1, 2, "", false,
                                 "tycho.array(nested_table | number | boolean [, dtype])"};
static int l_array(lua_State *L) {
  tl_args(L, &sig_array);
  ty_runtime *rt = tl_rt(L);
  int tp = lua_type(L, 1);
  walk w = {0};
  if (tp == LUA_TNUMBER || tp == LUA_TBOOLEAN) { /* a 0-d store */
    w.has_bool = tp == LUA_TBOOLEAN;
    w.has_int = tp == LUA_TNUMBER && lua_isinteger(L, 1);
    w.has_float = tp == LUA_TNUMBER && !w.has_int;
  } else if (tp != LUA_TTABLE) {
    return tl_error(L, "array", "argument 1 must be a table (nested for more dimensions), got %s",
                    tl_typename(L, 1));
  } else {
    /* The shape follows the first elements down. */
    luaL_checkstack(L, TY_MAX_RANK + 4, "tycho.array: nesting too deep");
    lua_pushvalue(L, 1);
    while (lua_type(L, -1) == LUA_TTABLE) {
      if (w.ndim == TY_MAX_RANK)
        return tl_error(L, "array", "the table is nested more than %d deep (at most %d "
                        "dimensions)", TY_MAX_RANK, TY_MAX_RANK);
      int64_t n = (int64_t)lua_rawlen(L, -1);
      w.shape[w.ndim++] = n;
      if (n == 0) break;
      lua_rawgeti(L, -1, 1);
    }
    lua_settop(L, 2);
    lua_pushvalue(L, 1);
    check_rect(L, &w, 0);
    lua_settop(L, 2);
  }
  ty_dtype def = w.has_float ? TY_F64 : w.has_int ? TY_I64 : w.has_bool ? TY_BOOL : TY_F64;
  ty_dtype t = tl_optdtype(L, 2, "array", def);
  int64_t size = 1;
  for (int d = 0; d < w.ndim; d++) size *= w.shape[d]; /* the elements exist: no overflow */
  size_t bytes = (size_t)size * ty_dtype_size(t);
  char *buf = lua_newuserdatauv(L, bytes ? bytes : 1, 0);
  if (w.ndim == 0) {
    lua_pushvalue(L, 1);
    put_elem(L, buf, t);
    lua_pop(L, 1);
  } else {
    int64_t pos = 0;
    lua_pushvalue(L, 1);
    fill_buffer(L, &w, 0, buf, t, &pos);
    lua_pop(L, 1);
  }
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_store_from_buffer(rt, t, w.ndim, w.shape, buf, slot));
  return finish(L, rt, slot, st, "array");
}

/* ---- .npy ------------------------------------------------------------------------- */

static const char *checkpath(lua_State *L, int idx, const char *fn) {
  if (lua_type(L, idx) != LUA_TSTRING)
    tl_error(L, fn, "path must be a string, got %s", tl_typename(L, idx));
  return lua_tostring(L, idx);
}

static const tl_sig sig_load = {"load", 1, 1, "", false, "tycho.load(path)"};
static int l_load(lua_State *L) {
  tl_args(L, &sig_load);
  ty_runtime *rt = tl_rt(L);
  const char *path = checkpath(L, 1, "load");
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_load_npy(rt, path, slot));
  return finish(L, rt, slot, st, "load");
}

/* tycho.save(path, x) or x:save(path). */
static const tl_sig sig_save = {"save", 2, 2, "", false, "tycho.save(path, x), x:save(path)"};
static int l_save(lua_State *L) {
  tl_args(L, &sig_save);
  ty_runtime *rt = tl_rt(L);
  lua_settop(L, 2);
  if (luaL_testudata(L, 1, TL_STORE) && lua_type(L, 2) == LUA_TSTRING) lua_rotate(L, 1, 1);
  const char *path = checkpath(L, 1, "save");
  ty_store *s = tl_checkstore(L, 2, "save", "argument 2");
  ty_status st = ty_save_npy(rt, path, s);
  if (st != TY_OK) return tl_fail(L, rt, "save", st);
  return 0;
}

const luaL_Reg tl_create_funcs[] = {
    {"zeros", l_zeros},   {"ones", l_ones},         {"full", l_full},   {"empty", l_empty},
    {"random", l_random}, {"arange", l_arange},     {"linspace", l_linspace},
    {"array", l_array},   {"load", l_load},         {"save", l_save},   {NULL, NULL}};
const luaL_Reg tl_create_methods[] = {{"save", l_save}, {NULL, NULL}};
