/*
 * lmask.c — selecting by masks and positions from Lua (numpy's boolean and
 * integer-array indexing): x[mask], x[mask] = v, x[idx], x[idx] = v,
 * x[{{}, idx}], x[{i1, i2}] (paired positions) and the functions nonzero,
 * argwhere, where(cond), count_nonzero, any, all, take, put. The work is the
 * core's (tycho/mask.h: ops_mask.c); this file checks arguments, turns Lua's
 * 1-based positions into the core's `base` and names bad ones.
 *
 * Rules (DESIGN.md §6): names and values are numpy's, positions are 1-based
 * (negative from the end), so nonzero/argwhere return 1-based positions and
 * x[idx] takes them. An out-of-range position is an error that names the
 * first one in C order (ty_index_check: one reduction, it runs the window).
 * A mask (a bool store) selects; an integer store gathers; a float store is
 * refused (numpy's IndexError).
 *
 * tl_store_index / tl_store_newindex (lstore.c) come here when the key is a
 * store or a table holding a store (tl_index_has_store).
 */
#include "tl.h"

#include "tycho/mask.h"

#include <string.h>

#define FN_INDEX "index"
#define FN_ASSIGN "assign"

static bool is_int(ty_dtype t) { return t == TY_I64 || t == TY_I32 || t == TY_U8; }

/* Raise naming the first position of idx outside a dim of size n. */
static void check_positions(lua_State *L, ty_runtime *rt, ty_store *idx, int64_t n, int dim,
                            const char *fn) {
  int64_t at = -1, v = 0;
  ty_status st = ty_index_check(rt, idx, n, 1, &at, &v);
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  if (at < 0) return;
  const char *hint = v == 0 ? " (positions start at 1; -1 is the last)" : "";
  if (ty_store_size(idx) == 1)
    tl_error(L, fn, "index %lld is out of range for dimension %d of size %lld%s", (long long)v,
             dim + 1, (long long)n, hint);
  tl_error(L, fn, "index %lld (entry %lld of the index store, in C order) is out of range for "
           "dimension %d of size %lld%s", (long long)v, (long long)at + 1, dim + 1, (long long)n,
           hint);
}

/* A dense copy of s (pushed), or s itself when it is dense. */
static ty_store *dense(lua_State *L, ty_runtime *rt, ty_store *s, const char *fn) {
  if (ty_store_is_contiguous(s)) return s;
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_store_create(rt, ty_store_dtype(s), ty_store_ndim(s), ty_store_shape(s), slot));
  if (st == TY_OK) st = ty_copy(rt, *slot, s);
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  return *slot;
}

/* ---- x[mask], x[idx] -------------------------------------------------------------- */

static int push_compress(lua_State *L, ty_runtime *rt, ty_store *x, ty_store *mask, const char *fn) {
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_compress(rt, x, mask, slot));
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  tl_created(L, *slot);
  return 1;
}

static int push_take(lua_State *L, ty_runtime *rt, ty_store *x, ty_store *idx, int axis,
                     const char *fn) {
  if (ty_store_ndim(x) == 0) return tl_error(L, fn, "cannot index a 0-d store with positions");
  check_positions(L, rt, idx, ty_store_shape(x)[axis], axis, fn);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_take(rt, x, idx, axis, 1, slot));
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  tl_created(L, *slot);
  return 1;
}

/* The key store k of x[k]: a mask or positions. */
static void check_key(lua_State *L, ty_store *k, const char *fn) {
  ty_dtype t = ty_store_dtype(k);
  if (t != TY_BOOL && !is_int(t))
    tl_error(L, fn, "an index store must be bool (a mask) or integer (positions), got %s",
             ty_dtype_name(t));
}

/* Paired positions x[{i1, ..., ij}] (stores for the first j dims): the
 * 0-based flat position over those dims, pushed; *xr: x with those dims
 * merged into one (pushed; dense). */
static ty_store *paired_flat(lua_State *L, ty_runtime *rt, ty_store *x, int j, ty_store **idx,
                             ty_store **xr, ty_store **xdense, const char *fn) {
  const int64_t *shape = ty_store_shape(x);
  int nd = ty_store_ndim(x);
  ty_store *flat = NULL;
  int64_t stride = 1;
  for (int d = j - 1; d >= 0; d--) {
    check_positions(L, rt, idx[d], shape[d], d, fn);
    ty_store *ii = idx[d];
    /* 0-based: i < 0 ? i + n : i - 1, then * stride */
    ty_store *zero = (lua_pushinteger(L, 0), tl_scalar(L, rt, lua_gettop(L), fn, TY_I64));
    ty_store *n = (lua_pushinteger(L, shape[d]), tl_scalar(L, rt, lua_gettop(L), fn, TY_I64));
    ty_store *one = (lua_pushinteger(L, 1), tl_scalar(L, rt, lua_gettop(L), fn, TY_I64));
    ty_store *sd = (lua_pushinteger(L, stride), tl_scalar(L, rt, lua_gettop(L), fn, TY_I64));
    ty_store **c = tl_newslot(L), **a = tl_newslot(L), **b = tl_newslot(L), **w = tl_newslot(L),
             **ws = tl_newslot(L);
    ty_status st = ty_binary(rt, TY_OP_LT, ii, zero, c);
    if (st == TY_OK) st = ty_binary(rt, TY_OP_ADD, ii, n, a);
    if (st == TY_OK) st = ty_binary(rt, TY_OP_SUB, ii, one, b);
    if (st == TY_OK) st = ty_where(rt, *c, *a, *b, w);
    if (st == TY_OK) st = ty_binary(rt, TY_OP_MUL, *w, sd, ws);
    if (st == TY_OK && flat) {
      ty_store **f = tl_newslot(L);
      st = ty_binary(rt, TY_OP_ADD, flat, *ws, f);
      flat = *f;
    } else {
      flat = *ws;
    }
    if (st != TY_OK) tl_fail(L, rt, fn, st);
    stride *= shape[d];
  }
  ty_store *xd = dense(L, rt, x, fn);
  if (xdense) *xdense = xd;
  int64_t sh[TY_MAX_RANK];
  sh[0] = stride;
  for (int d = j; d < nd; d++) sh[1 + d - j] = shape[d];
  ty_store **r = tl_newslot(L);
  ty_status st = ty_store_reshape(rt, xd, 1 + nd - j, sh, r);
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  *xr = *r;
  return flat;
}

bool tl_index_has_store(lua_State *L, int tidx) {
  lua_Unsigned n = lua_rawlen(L, tidx);
  bool found = false;
  for (lua_Unsigned k = 1; k <= n && !found; k++) {
    if (lua_rawgeti(L, tidx, (lua_Integer)k) == LUA_TUSERDATA) found = tl_teststore(L, -1, FN_INDEX) != NULL;
    lua_pop(L, 1);
  }
  return found;
}

/* What x[{...}] with stores asks: one store at position `axis` (the others
 * {}), or stores at positions 1..j (paired). Leaves the entries on the
 * stack; returns the count of stores and fills idx[]. */
static int parse_adv(lua_State *L, int tidx, ty_store *x, const char *fn, ty_store **idx,
                     int *axis) {
  lua_Unsigned n = lua_rawlen(L, tidx);
  int nd = ty_store_ndim(x), ns = 0, last = -1;
  if (n > (lua_Unsigned)nd)
    tl_error(L, fn, "too many indices (%llu) for a store of rank %d", (unsigned long long)n, nd);
  luaL_checkstack(L, (int)n + 8, "tycho: too many indices");
  for (int k = 0; k < (int)n; k++) {
    int tp = lua_rawgeti(L, tidx, k + 1);
    ty_store *s = tp == LUA_TUSERDATA ? tl_teststore(L, -1, fn) : NULL;
    if (s) {
      check_key(L, s, fn);
      if (ns && last != k - 1)
        tl_error(L, fn, "index stores must be at neighbouring positions (index[%d] and index[%d])",
                 last + 1, k + 1);
      idx[ns++] = s;
      *axis = ns == 1 ? k : *axis;
      last = k;
    } else if (!(tp == LUA_TTABLE && lua_rawlen(L, -1) == 0)) {
      tl_error(L, fn, "with an index store, the other entries must be {} (a whole dimension); "
               "index[%d] is %s (take a view first: x[{...}][{...}])", k + 1, tl_typename(L, -1));
    }
  }
  if (ns > 1 && *axis != 0)
    tl_error(L, fn, "paired index stores must start at index[1] (got index[%d])", *axis + 1);
  for (int i = 0; i < ns; i++)
    if (ty_store_dtype(idx[i]) == TY_BOOL && (ns > 1 || *axis != 0))
      tl_error(L, fn, "a mask in an index table must be its only entry, at index[1] (x[{mask}])");
  return ns;
}

int tl_mask_index(lua_State *L) {
  const char *fn = FN_INDEX;
  ty_store *x = tl_checkstore(L, 1, fn, "argument 1");
  ty_runtime *rt = tl_rt(L);
  ty_store *idx[TY_MAX_RANK];
  int axis = 0, ns = 1;
  if (lua_type(L, 2) == LUA_TTABLE) {
    ns = parse_adv(L, 2, x, fn, idx, &axis);
  } else {
    idx[0] = tl_checkstore(L, 2, fn, "index");
    check_key(L, idx[0], fn);
  }
  if (ty_store_dtype(idx[0]) == TY_BOOL) return push_compress(L, rt, x, idx[0], fn);
  if (ns == 1) return push_take(L, rt, x, idx[0], axis, fn);
  ty_store *xr = NULL;
  ty_store *flat = paired_flat(L, rt, x, ns, idx, &xr, NULL, fn);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_take(rt, xr, flat, 0, 0, slot));
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  tl_created(L, *slot);
  return 1;
}

/* The value of x[...] = v as a store (a number becomes a 0-d store of x's
 * dtype, exact for 64-bit integers). */
static ty_store *value_of(lua_State *L, ty_runtime *rt, ty_store *x, int vidx, const char *fn) {
  ty_store *v = tl_teststore(L, vidx, fn);
  if (v) return v;
  int tp = lua_type(L, vidx);
  if (tp != LUA_TNUMBER && tp != LUA_TBOOLEAN)
    tl_error(L, fn, "value must be a number, a boolean or a store, got %s", tl_typename(L, vidx));
  return tl_scalar(L, rt, vidx, fn, ty_store_dtype(x));
}

/* x[i] = v along axis through ty_put (x dense or not: the core copies). */
static void put_axis(lua_State *L, ty_runtime *rt, ty_store *x, ty_store *idx, int axis,
                     ty_store *v, const char *fn) {
  if (ty_store_ndim(x) == 0) tl_error(L, fn, "cannot index a 0-d store with positions");
  check_positions(L, rt, idx, ty_store_shape(x)[axis], axis, fn);
  ty_status st;
  TL_TRY(L, rt, st, ty_put(rt, x, idx, axis, 1, v));
  if (st != TY_OK) tl_fail(L, rt, fn, st);
}

int tl_mask_newindex(lua_State *L) {
  const char *fn = FN_ASSIGN;
  lua_settop(L, 3);
  ty_store *x = tl_checkstore(L, 1, fn, "argument 1");
  ty_runtime *rt = tl_rt(L);
  ty_store *idx[TY_MAX_RANK];
  int axis = 0, ns = 1;
  if (lua_type(L, 2) == LUA_TTABLE) {
    ns = parse_adv(L, 2, x, fn, idx, &axis);
  } else {
    idx[0] = tl_checkstore(L, 2, fn, "index");
    check_key(L, idx[0], fn);
  }
  ty_store *v = value_of(L, rt, x, 3, fn);
  ty_status st;
  if (ty_store_dtype(idx[0]) == TY_BOOL) {
    TL_TRY(L, rt, st, ty_mask_assign(rt, x, idx[0], v));
    if (st != TY_OK) return tl_fail(L, rt, fn, st);
    return 0;
  }
  if (ns == 1) {
    put_axis(L, rt, x, idx[0], axis, v, fn);
    return 0;
  }
  ty_store *xr = NULL, *xd = NULL;
  ty_store *flat = paired_flat(L, rt, x, ns, idx, &xr, &xd, fn);
  TL_TRY(L, rt, st, ty_put(rt, xr, flat, 0, 0, v));
  if (st == TY_OK && xd != x) st = ty_copy(rt, x, xd); /* x was not dense: back from the copy */
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  return 0;
}

/* ---- functions ------------------------------------------------------------------- */

static const tl_sig sig_argwhere = {"argwhere", 1, 1, "", true,
                                    "tycho.argwhere(x [, {parallel = ...}]), x:argwhere()"};
static int l_argwhere(lua_State *L) {
  tl_args(L, &sig_argwhere);
  ty_store *x = tl_checkstore(L, 1, "argwhere", "x");
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_argwhere(rt, x, 1, slot));
  if (st != TY_OK) return tl_fail(L, rt, "argwhere", st);
  tl_created(L, *slot);
  return 1;
}

/* nonzero(x): a table of ndim 1-D i64 stores (the columns of argwhere). */
static int nonzero(lua_State *L, const char *fn) {
  ty_store *x = tl_checkstore(L, 1, fn, "x");
  ty_runtime *rt = tl_rt(L);
  int nd = ty_store_ndim(x);
  if (nd == 0)
    return tl_error(L, fn, "x is 0-d (numpy refuses nonzero of a 0-d array: use "
                    "tycho.nonzero(x:reshape(1)) or tycho.argwhere(x))");
  ty_store **aw = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_argwhere(rt, x, 1, aw));
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  tl_created(L, *aw);
  int awi = lua_gettop(L);
  lua_createtable(L, nd, 0);
  for (int d = 0; d < nd; d++) {
    ty_store **col = tl_newslot(L);
    st = ty_store_select(rt, *(ty_store **)lua_touserdata(L, awi), 1, d, col);
    if (st != TY_OK) return tl_fail(L, rt, fn, st);
    lua_rawseti(L, -2, d + 1);
  }
  return 1;
}

static const tl_sig sig_nonzero = {"nonzero", 1, 1, "", true,
                                   "tycho.nonzero(x [, {parallel = ...}]), x:nonzero()"};
static int l_nonzero(lua_State *L) {
  tl_args(L, &sig_nonzero);
  return nonzero(L, "nonzero");
}

int tl_where_nonzero(lua_State *L) { return nonzero(L, "where"); }

/* count_nonzero / any / all: sums of x != 0 (or x == 0) through tycho.sum,
 * so axes, keepdims and empty stores behave as sum's (numpy's any of an
 * empty array is false, all is true). */
static int count_based(lua_State *L, const tl_sig *s, ty_op test, ty_op verdict) {
  int given = tl_args(L, s);
  (void)given;
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  ty_runtime *rt = tl_rt(L);
  lua_pushinteger(L, 0);
  ty_store *zero = tl_scalar(L, rt, lua_gettop(L), s->fn, ty_store_dtype(x));
  ty_store **b = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_binary(rt, test, x, zero, b));
  if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  int bi = lua_gettop(L);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_MODULE);
  lua_getfield(L, -1, "sum");
  lua_pushvalue(L, bi);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, TL_OPTS(s));
  lua_call(L, 3, 1);
  if (verdict == TY_NOPS) return 1;
  ty_store *cnt = tl_checkstore(L, -1, s->fn, "count");
  ty_store *z2 = (lua_pushinteger(L, 0), tl_scalar(L, rt, lua_gettop(L), s->fn, TY_I64));
  ty_store **r = tl_newslot(L);
  TL_TRY(L, rt, st, ty_binary(rt, verdict, cnt, z2, r));
  if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  tl_created(L, *r);
  return 1;
}

#define AXES_FORMS(name)                                                                    \
  "tycho." name "(x [, axis | {axes}] [, {keepdims = bool, parallel = ...}]), x:" name "(...)"
static const tl_sig sig_count_nonzero = {"count_nonzero", 1, 2, "keepdims", true,
                                         AXES_FORMS("count_nonzero")};
static const tl_sig sig_any = {"any", 1, 2, "keepdims", true, AXES_FORMS("any")};
static const tl_sig sig_all = {"all", 1, 2, "keepdims", true, AXES_FORMS("all")};
static int l_count_nonzero(lua_State *L) { return count_based(L, &sig_count_nonzero, TY_OP_NE, TY_NOPS); }
static int l_any(lua_State *L) { return count_based(L, &sig_any, TY_OP_NE, TY_OP_GT); }
static int l_all(lua_State *L) { return count_based(L, &sig_all, TY_OP_EQ, TY_OP_EQ); }

/* An index argument: a store, or a Lua integer (a 0-d i64 store). */
static ty_store *positions_arg(lua_State *L, ty_runtime *rt, const tl_sig *s, int idx) {
  ty_store *p = tl_teststore(L, idx, s->fn);
  if (!p && lua_isinteger(L, idx)) return tl_scalar(L, rt, idx, s->fn, TY_I64);
  if (!p) tl_argerror(L, s, "indices (argument %d) must be an integer store or an integer, got %s",
                      idx, tl_typename(L, idx));
  if (!is_int(ty_store_dtype(p)))
    tl_argerror(L, s, "indices must have an integer dtype, got %s", ty_dtype_name(ty_store_dtype(p)));
  return p;
}

/* x flattened in C order (pushed: a view of x, or of a dense copy, *xdense). */
static ty_store *flat_of(lua_State *L, ty_runtime *rt, ty_store *x, ty_store **xdense,
                         const char *fn) {
  ty_store *xd = dense(L, rt, x, fn);
  if (xdense) *xdense = xd;
  int64_t n = ty_store_size(x);
  ty_store **f = tl_newslot(L);
  ty_status st = ty_store_reshape(rt, xd, 1, &n, f);
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  return *f;
}

static const tl_sig sig_take = {"take", 2, 3, "axis", true,
                                "tycho.take(x, indices [, axis] [, {axis = k, parallel = ...}]), "
                                "x:take(indices [, axis])"};
static int l_take(lua_State *L) {
  const tl_sig *s = &sig_take;
  tl_args(L, s);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  ty_runtime *rt = tl_rt(L);
  ty_store *idx = positions_arg(L, rt, s, 2);
  int64_t ax = 0;
  bool has_opt = tl_optint(L, s, "axis", &ax);
  if (!lua_isnil(L, 3) && has_opt) return tl_argerror(L, s, "axis is given twice");
  if (!lua_isnil(L, 3) || has_opt) {
    if (!has_opt) ax = tl_checkint(L, 3, s->fn, "axis");
    int nd = ty_store_ndim(x);
    int64_t a = ax < 0 ? ax + nd + 1 : ax;
    if (a < 1 || a > nd)
      return tl_error(L, s->fn, "axis %lld is out of range for a store of rank %d", (long long)ax, nd);
    return push_take(L, rt, x, idx, (int)a - 1, s->fn);
  }
  return push_take(L, rt, flat_of(L, rt, x, NULL, s->fn), idx, 0, s->fn); /* numpy: flattened */
}

/* numpy's put: the values, flattened, are repeated as necessary (or cut) to
 * one per position, in C order of the positions: v.flat[k % v.size]. A
 * single value is left for ty_put to broadcast. */
static ty_store *cyclic_values(lua_State *L, ty_runtime *rt, ty_store *v, ty_store *idx,
                               const char *fn) {
  int64_t nv = ty_store_size(v), ni = ty_store_size(idx);
  if (nv == 1 || ni == 0 || (nv == ni && ty_store_ndim(v) == ty_store_ndim(idx))) return v;
  if (nv == 0) tl_error(L, fn, "values is empty, but %lld positions are given", (long long)ni);
  ty_store *vf = flat_of(L, rt, v, NULL, fn);
  ty_store **pos = tl_newslot(L), **period = tl_newslot(L), **k = tl_newslot(L);
  ty_store **vals = tl_newslot(L), **shaped = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_arange(rt, TY_I64, 0, 1, ni, pos));
  if (st == TY_OK) TL_TRY(L, rt, st, ty_full(rt, TY_I64, 0, NULL, (double)nv, period));
  if (st == TY_OK) TL_TRY(L, rt, st, ty_binary(rt, TY_OP_MOD, *pos, *period, k));
  if (st == TY_OK) TL_TRY(L, rt, st, ty_take(rt, vf, *k, 0, 0, vals));
  if (st == TY_OK)
    TL_TRY(L, rt, st, ty_store_reshape(rt, *vals, ty_store_ndim(idx), ty_store_shape(idx), shaped));
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  return *shaped;
}

static const tl_sig sig_put = {"put", 3, 3, "", true,
                               "tycho.put(x, indices, values [, {parallel = ...}]), "
                               "x:put(indices, values)"};
static int l_put(lua_State *L) {
  const tl_sig *s = &sig_put;
  tl_args(L, s);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  ty_runtime *rt = tl_rt(L);
  ty_store *idx = positions_arg(L, rt, s, 2);
  ty_store *v = value_of(L, rt, x, 3, s->fn);
  v = cyclic_values(L, rt, v, idx, s->fn);
  ty_store *xd = NULL;
  ty_store *f = flat_of(L, rt, x, &xd, s->fn);
  put_axis(L, rt, f, idx, 0, v, s->fn);
  if (xd != x) { /* x was not dense: put went into a copy */
    ty_status st = ty_copy(rt, x, xd);
    if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  }
  lua_settop(L, 1);
  return 1;
}

/* An axis argument (1-based, negative from the end) of a store of rank nd. */
static int axis_of(lua_State *L, const tl_sig *s, int pos, int nd) {
  if (lua_isnil(L, pos)) tl_argerror(L, s, "axis (argument %d) is required", pos);
  int64_t ax = tl_checkint(L, pos, s->fn, "axis");
  int64_t a = ax < 0 ? ax + nd + 1 : ax;
  if (a < 1 || a > nd)
    tl_error(L, s->fn, "axis %lld is out of range for a store of rank %d", (long long)ax, nd);
  return (int)a - 1;
}

static const tl_sig sig_take_along = {
    "take_along_axis", 3, 3, "", true,
    "tycho.take_along_axis(x, indices, axis [, {parallel = ...}]), x:take_along_axis(indices, axis)"};
static int l_take_along(lua_State *L) {
  const tl_sig *s = &sig_take_along;
  tl_args(L, s);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  ty_runtime *rt = tl_rt(L);
  ty_store *idx = positions_arg(L, rt, s, 2);
  if (ty_store_ndim(x) == 0) return tl_error(L, s->fn, "x is 0-d (it has no axis)");
  int axis = axis_of(L, s, 3, ty_store_ndim(x));
  check_positions(L, rt, idx, ty_store_shape(x)[axis], axis, s->fn);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_take_along(rt, x, idx, axis, 1, slot));
  if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  tl_created(L, *slot);
  return 1;
}

static const tl_sig sig_put_along = {
    "put_along_axis", 4, 4, "", true,
    "tycho.put_along_axis(x, indices, values, axis [, {parallel = ...}]), "
    "x:put_along_axis(indices, values, axis)"};
static int l_put_along(lua_State *L) {
  const tl_sig *s = &sig_put_along;
  tl_args(L, s);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  ty_runtime *rt = tl_rt(L);
  ty_store *idx = positions_arg(L, rt, s, 2);
  ty_store *v = value_of(L, rt, x, 3, s->fn);
  if (ty_store_ndim(x) == 0) return tl_error(L, s->fn, "x is 0-d (it has no axis)");
  int axis = axis_of(L, s, 4, ty_store_ndim(x));
  check_positions(L, rt, idx, ty_store_shape(x)[axis], axis, s->fn);
  ty_status st;
  TL_TRY(L, rt, st, ty_put_along(rt, x, idx, axis, 1, v));
  if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  lua_settop(L, 1);
  return 1;
}

static const luaL_Reg mask_funcs[] = {
    {"take_along_axis", l_take_along}, {"put_along_axis", l_put_along},
    {"argwhere", l_argwhere}, {"nonzero", l_nonzero}, {"count_nonzero", l_count_nonzero},
    {"any", l_any},           {"all", l_all},         {"take", l_take},
    {"put", l_put},           {NULL, NULL}};

/* Adds the functions to the module table and, as methods, to the store
 * metatable's method table (as tl_extra_open). */
void tl_mask_open(lua_State *L, int module_index) {
  module_index = lua_absindex(L, module_index);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
  int box = lua_gettop(L);
  lua_pushvalue(L, module_index);
  lua_pushvalue(L, box);
  luaL_setfuncs(L, mask_funcs, 1);
  lua_pop(L, 1);
  luaL_getmetatable(L, TL_STORE);
  if (lua_getfield(L, -1, "__methods") == LUA_TTABLE) {
    lua_pushvalue(L, box);
    luaL_setfuncs(L, mask_funcs, 1);
  }
  lua_pop(L, 3);
}
