/*
 * lsets.c — numpy's set functions, partition, histogram and choose from Lua:
 * tycho.intersect1d, union1d, setdiff1d, partition, argpartition, histogram,
 * choose (module functions and store methods).
 *
 * Nothing here is a new kernel: each function checks its arguments (tl_sig,
 * so errors name it and its forms) and then calls the built-ins already in
 * the module table (unique, isin, sort, searchsorted, where, ...), so every
 * launch shows in tycho.explain() under its own task and the bits are those
 * of the parts: the same under any --cpus or mode. The launch options of a
 * call ({parallel = ...}) steer the launches of the parts (tl_args' guard).
 *
 * Positions are 1-based as everywhere in tycho: partition's kth, the
 * positions argpartition returns and choose's choice numbers (numpy's + 1).
 */
#include "tl.h"

#include <math.h>
#include <string.h>

/* Call the module's function `name` on the nargs values on top of the stack;
 * leaves nres results there. The arguments were checked by the caller, so
 * an error raised inside is memory or an interrupt. */
static void call(lua_State *L, const char *name, int nargs, int nres) {
  lua_getfield(L, LUA_REGISTRYINDEX, TL_MODULE);
  lua_getfield(L, -1, name);
  lua_remove(L, -2);
  lua_insert(L, -(nargs + 1));
  lua_call(L, nargs, nres);
}

/* Push x[key] where key is on top (a mask or a view table): the store's
 * __index, as x[key] in Lua. Replaces the key with the result. */
static void index_by(lua_State *L, int xidx) { lua_gettable(L, lua_absindex(L, xidx)); }

/* Replace the store on top with its cast to dtype t when it is another. */
static void cast_top(lua_State *L, ty_dtype t) {
  ty_store *s = *(ty_store **)lua_touserdata(L, -1);
  if (ty_store_dtype(s) == t) return;
  lua_pushstring(L, ty_dtype_name(t));
  call(L, "astype", 2, 1);
}

/* ---- sets: sorted unique 1-D results of flattened inputs ------------------- */

static const tl_sig sig_intersect1d = {
    "intersect1d", 2, 2, "", true,
    "tycho.intersect1d(a, b [, {parallel = ...}]), a:intersect1d(b): the sorted values in both"};
static const tl_sig sig_union1d = {
    "union1d", 2, 2, "", true,
    "tycho.union1d(a, b [, {parallel = ...}]), a:union1d(b): the sorted values in either"};
static const tl_sig sig_setdiff1d = {
    "setdiff1d", 2, 2, "", true,
    "tycho.setdiff1d(a, b [, {parallel = ...}]), a:setdiff1d(b): the sorted values of a not in b"};

/* intersect1d and setdiff1d: unique(a)[isin(unique(a), b)] (or its
 * negation). unique(a) is sorted and distinct, and a mask keeps order, so the
 * result is too. NaN is in nothing (isin), so intersect1d never keeps one and
 * setdiff1d always does, as numpy's. intersect1d's dtype is numpy's
 * promotion of both (its concatenation); setdiff1d keeps a's. */
static int select_unique(lua_State *L, const tl_sig *s, bool keep_in) {
  tl_args(L, s);
  ty_store *a = tl_checkstore(L, 1, s->fn, "a");
  ty_store *b = tl_checkstore(L, 2, s->fn, "b");
  ty_dtype t = keep_in ? ty_dtype_promote(ty_store_dtype(a), ty_store_dtype(b))
                       : ty_store_dtype(a);
  lua_pushvalue(L, 1);
  call(L, "unique", 1, 1);
  int ua = lua_gettop(L);
  lua_pushvalue(L, ua);
  lua_pushvalue(L, 2);
  call(L, "isin", 2, 1);
  if (!keep_in) call(L, "logical_not", 1, 1);
  index_by(L, ua);
  cast_top(L, t);
  return 1;
}
static int l_intersect1d(lua_State *L) { return select_unique(L, &sig_intersect1d, true); }
static int l_setdiff1d(lua_State *L) { return select_unique(L, &sig_setdiff1d, false); }

/* union1d: unique(concatenate({ravel(a), ravel(b)})), numpy's definition;
 * NaNs count as one value (unique's). */
static int l_union1d(lua_State *L) {
  const tl_sig *s = &sig_union1d;
  tl_args(L, s);
  tl_checkstore(L, 1, s->fn, "a");
  tl_checkstore(L, 2, s->fn, "b");
  lua_createtable(L, 2, 0);
  for (int i = 1; i <= 2; i++) {
    lua_pushvalue(L, i);
    call(L, "ravel", 1, 1);
    lua_rawseti(L, -2, i);
  }
  call(L, "concatenate", 1, 1);
  call(L, "unique", 1, 1);
  return 1;
}

/* ---- partition: a full stable sort is a valid partition -------------------- */

static const tl_sig sig_partition = {
    "partition", 2, 3, "axis", true,
    "tycho.partition(x, kth | {kths} [, axis] [, {axis = k, parallel = ...}]), "
    "x:partition(...) (kth 1-based, negative from the end; default: the last axis)"};
static const tl_sig sig_argpartition = {
    "argpartition", 2, 3, "axis", true,
    "tycho.argpartition(x, kth | {kths} [, axis] [, {axis = k, parallel = ...}]), "
    "x:argpartition(...) (kth 1-based, negative from the end; default: the last axis)"};

static void check_kth(lua_State *L, const tl_sig *s, int idx, int64_t n) {
  int64_t k = tl_checkint(L, idx, s->fn, "kth");
  if (k == 0 || k > n || k < -n)
    tl_argerror(L, s, "kth %lld is out of range for an axis of length %lld (1..%lld or "
                "-%lld..-1)", (long long)k, (long long)n, (long long)n, (long long)n);
}

/* numpy's contract: the element at position kth is the one a sort puts
 * there, the smaller ones before it, the larger after. Sorting the whole
 * axis (stable, NaN last) keeps it for every kth at once, so tycho returns
 * the sorted order: one answer, the same bits under any piece count. */
static int partition_like(lua_State *L, const tl_sig *s, bool positions) {
  tl_args(L, s);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  int64_t ax = -1;
  bool has_opt = tl_optint(L, s, "axis", &ax);
  if (!lua_isnil(L, 3)) {
    if (has_opt) tl_argerror(L, s, "axis is given twice (argument 3 and option axis)");
    ax = tl_checkint(L, 3, s->fn, "axis");
  }
  int nd = ty_store_ndim(x);
  if (nd == 0) tl_error(L, s->fn, "x is 0-d (nothing to partition along)");
  int64_t a = ax < 0 ? ax + nd + 1 : ax;
  if (a < 1 || a > nd)
    tl_error(L, s->fn, "axis %lld is out of range for a store of rank %d", (long long)ax, nd);
  int64_t n = ty_store_shape(x)[a - 1];
  if (lua_istable(L, 2)) {
    lua_Integer len = (lua_Integer)lua_rawlen(L, 2);
    if (len == 0) tl_argerror(L, s, "kth is an empty list");
    for (lua_Integer i = 1; i <= len; i++) {
      lua_rawgeti(L, 2, i);
      check_kth(L, s, lua_gettop(L), n);
      lua_pop(L, 1);
    }
  } else if (lua_isnil(L, 2)) {
    tl_argerror(L, s, "kth is missing");
  } else {
    check_kth(L, s, 2, n);
  }
  lua_pushvalue(L, 1);
  lua_pushinteger(L, a);
  call(L, positions ? "argsort" : "sort", 2, 1);
  return 1;
}
static int l_partition(lua_State *L) { return partition_like(L, &sig_partition, false); }
static int l_argpartition(lua_State *L) { return partition_like(L, &sig_argpartition, true); }

/* ---- histogram ---------------------------------------------------------------- */

static const tl_sig sig_histogram = {
    "histogram", 2, 2, "range", true,
    "tycho.histogram(x, bins [, {range = {lo, hi}, parallel = ...}]), x:histogram(...): "
    "returns counts (i64), edges (f64); bins an integer or increasing edges (store or list)"};

/* A finite number from option range's table (at idx) entry i. */
static double range_entry(lua_State *L, const tl_sig *s, int idx, int i) {
  lua_rawgeti(L, idx, i);
  if (lua_type(L, -1) != LUA_TNUMBER)
    tl_argerror(L, s, "option range must be {lo, hi} (two numbers), got %s at %d",
                tl_typename(L, -1), i);
  double v = lua_tonumber(L, -1);
  lua_pop(L, 1);
  return v;
}

/* A number from a 0-d store on top (popped). */
static double pop_number(lua_State *L) {
  call(L, "item", 1, 1);
  double v = lua_isboolean(L, -1) ? (double)lua_toboolean(L, -1) : lua_tonumber(L, -1);
  lua_pop(L, 1);
  return v;
}

/* Equal bins: numpy's edges, np.linspace(lo, hi, n + 1): edge i is
 * i * ((hi - lo) / n) + lo, the last exactly hi. Built as a Lua list then a
 * store, so the bits are numpy's (the product is kept apart from the sum:
 * no fused multiply-add). */
static void push_equal_edges(lua_State *L, double lo, double hi, int64_t n) {
  double step = (hi - lo) / (double)n;
  lua_createtable(L, (int)(n + 1), 0);
  for (int64_t i = 0; i <= n; i++) {
    volatile double p = (double)i * step;
    lua_pushnumber(L, i == n ? hi : p + lo);
    lua_rawseti(L, -2, i + 1);
  }
  lua_pushstring(L, "f64");
  call(L, "array", 2, 1);
}

/* Counts by sorting: with xs = sort(x) (NaN last), the elements in
 * [e_i, e_i+1) are searchsorted(xs, e_i+1, left) - searchsorted(xs, e_i,
 * left), and the last bin is closed: its upper count is searchsorted(..,
 * right). That is numpy's rule for values on an edge (its own path for
 * explicit edges); values outside [e_1, e_last] and NaN are not counted. The
 * equal-bin path of numpy computes a bin by arithmetic and then corrects it
 * against the same edges, so it counts the same. Cost: one sort of x. */
static int l_histogram(lua_State *L) {
  const tl_sig *s = &sig_histogram;
  tl_args(L, s);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  if (ty_store_dtype(x) == TY_BOOL) { /* numpy converts it to u8 (with a warning) */
    lua_pushvalue(L, 1);
    lua_pushstring(L, "u8");
    call(L, "astype", 2, 1);
    lua_replace(L, 1);
    x = *(ty_store **)lua_touserdata(L, 1);
  }
  bool has_range = false;
  double lo = 0, hi = 1;
  if (lua_istable(L, TL_OPTS(s))) {
    lua_getfield(L, TL_OPTS(s), "range");
    if (!lua_isnil(L, -1)) {
      if (!lua_istable(L, -1) || lua_rawlen(L, -1) != 2)
        tl_argerror(L, s, "option range must be {lo, hi} (two numbers), got %s",
                    tl_typename(L, -1));
      has_range = true;
      lo = range_entry(L, s, lua_gettop(L), 1);
      hi = range_entry(L, s, lua_gettop(L), 2);
      if (!isfinite(lo) || !isfinite(hi))
        tl_argerror(L, s, "option range {%g, %g} is not finite", lo, hi);
      if (lo > hi) tl_argerror(L, s, "option range {%g, %g}: lo must not exceed hi", lo, hi);
    }
    lua_pop(L, 1);
  }
  int64_t nbins = 0;
  if (lua_type(L, 2) == LUA_TNUMBER) {
    nbins = tl_checkint(L, 2, s->fn, "bins");
    if (nbins < 1)
      tl_argerror(L, s, "bins must be positive, got %lld", (long long)nbins);
    if (nbins > ((int64_t)1 << 26))
      tl_argerror(L, s, "bins %lld is more than 2^26 equal bins", (long long)nbins);
    if (!has_range && ty_store_size(x) > 0) {
      lua_pushvalue(L, 1);
      call(L, "min", 1, 1);
      lo = pop_number(L);
      lua_pushvalue(L, 1);
      call(L, "max", 1, 1);
      hi = pop_number(L);
      if (!isfinite(lo) || !isfinite(hi))
        tl_error(L, s->fn, "the range of x, [%g, %g], is not finite: give option range",
                 lo, hi);
    }
    if (lo == hi) { /* numpy's: one unit wide around the value */
      lo -= 0.5;
      hi += 0.5;
    }
    push_equal_edges(L, lo, hi, nbins);
  } else if (lua_istable(L, 2) || tl_teststore(L, 2, s->fn)) {
    if (has_range)
      tl_argerror(L, s, "option range applies to a bin count, not to edges (numpy ignores "
                  "it; tycho refuses it)");
    lua_pushvalue(L, 2);
    if (lua_istable(L, 2)) {
      lua_pushstring(L, "f64");
      call(L, "array", 2, 1);
    }
    ty_store *e = *(ty_store **)lua_touserdata(L, -1);
    if (ty_store_ndim(e) != 1 || ty_store_size(e) < 2)
      tl_argerror(L, s, "bins as edges must be 1-D with at least 2 edges (one bin), got %d-d "
                  "of %lld",
                  ty_store_ndim(e), (long long)ty_store_size(e));
    if (ty_store_dtype(e) == TY_BOOL) tl_argerror(L, s, "bins as edges must be numbers");
    cast_top(L, TY_F64);
    int ei = lua_gettop(L);
    lua_pushvalue(L, ei);
    call(L, "diff", 1, 1);
    lua_pushinteger(L, 0);
    call(L, "lt", 2, 1);
    call(L, "any", 1, 1);
    call(L, "item", 1, 1);
    bool down = lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (down) tl_argerror(L, s, "bins must increase monotonically, when edges");
  } else {
    tl_argerror(L, s, "bins must be an integer, a list or a store of edges, got %s",
                tl_typename(L, 2));
  }
  int edges = lua_gettop(L);
  int64_t ne = ty_store_size(*(ty_store **)lua_touserdata(L, edges));
  /* xs: the sorted flat x */
  lua_pushvalue(L, 1);
  call(L, "ravel", 1, 1);
  call(L, "sort", 1, 1);
  int xs = lua_gettop(L);
  /* cum = searchsorted(xs, edges, left) with its last entry taken "right" */
  lua_pushvalue(L, xs);
  lua_pushvalue(L, edges);
  call(L, "searchsorted", 2, 1);
  int cl = lua_gettop(L);
  lua_createtable(L, 2, 0);
  lua_pushvalue(L, cl);
  lua_createtable(L, 1, 0);
  lua_createtable(L, 2, 0);
  lua_pushinteger(L, 1);
  lua_rawseti(L, -2, 1);
  lua_pushinteger(L, ne - 1);
  lua_rawseti(L, -2, 2);
  lua_rawseti(L, -2, 1); /* {{1, ne - 1}} */
  index_by(L, -2);
  lua_remove(L, -2);
  lua_rawseti(L, -2, 1);
  lua_pushvalue(L, xs);
  lua_pushvalue(L, edges);
  lua_createtable(L, 1, 0);
  lua_createtable(L, 1, 0);
  lua_pushinteger(L, -1);
  lua_rawseti(L, -2, 1);
  lua_rawseti(L, -2, 1); /* {{-1}}: the last edge, kept 1-D */
  index_by(L, -2);
  lua_remove(L, -2);
  lua_pushstring(L, "right");
  call(L, "searchsorted", 3, 1);
  lua_rawseti(L, -2, 2);
  call(L, "concatenate", 1, 1);
  call(L, "diff", 1, 1);
  cast_top(L, TY_I64);
  lua_pushvalue(L, edges);
  return 2;
}

/* ---- choose --------------------------------------------------------------------- */

static const tl_sig sig_choose = {
    "choose", 2, 2, "", true,
    "tycho.choose(idx, {c1, c2, ...} [, {parallel = ...}]), idx:choose({...}): "
    "c[idx] element-wise; idx an integer store of choice numbers 1..#choices"};

/* numpy's choose (mode "raise"): out = choices[idx] element by element,
 * idx and the choices broadcast together, dtype their promotion (numbers
 * weak). A choice number is a position in the list, so 1-based (numpy's + 1).
 * Built as where(idx == k, c_k, ...) from the last choice down: #choices
 * element-wise launches (fusable), after one min/max read of idx (a flush)
 * that refuses a number out of 1..#choices. */
static int l_choose(lua_State *L) {
  const tl_sig *s = &sig_choose;
  tl_args(L, s);
  ty_store *idx = tl_teststore(L, 1, s->fn);
  if (!idx)
    tl_argerror(L, s, "idx must be an integer store, got %s", tl_typename(L, 1));
  ty_dtype it = ty_store_dtype(idx);
  if (it == TY_BOOL || ty_dtype_is_float(it))
    tl_argerror(L, s, "idx must have an integer dtype, got %s", ty_dtype_name(it));
  if (!lua_istable(L, 2) || tl_teststore(L, 2, s->fn))
    tl_argerror(L, s, "choices must be a list of stores or numbers, got %s",
                tl_typename(L, 2));
  lua_Integer n = (lua_Integer)lua_rawlen(L, 2);
  if (n == 0) tl_argerror(L, s, "choices is an empty list");
  for (lua_Integer k = 1; k <= n; k++) {
    int tp = lua_rawgeti(L, 2, k);
    if (tp != LUA_TNUMBER && tp != LUA_TBOOLEAN && !tl_teststore(L, -1, s->fn))
      tl_argerror(L, s, "choices[%lld] must be a store or a number, got %s", (long long)k,
                  tl_typename(L, -1));
    lua_pop(L, 1);
  }
  if (ty_store_size(idx) > 0) {
    lua_pushvalue(L, 1);
    call(L, "min", 1, 1);
    call(L, "item", 1, 1);
    lua_Integer mn = lua_tointeger(L, -1);
    lua_pushvalue(L, 1);
    call(L, "max", 1, 1);
    call(L, "item", 1, 1);
    lua_Integer mx = lua_tointeger(L, -1);
    lua_pop(L, 2);
    if (mn < 1 || mx > n)
      tl_error(L, s->fn, "choice %lld is out of range for %lld choices (1..%lld)",
               (long long)(mn < 1 ? mn : mx), (long long)n, (long long)n);
  }
  lua_rawgeti(L, 2, n); /* the running result: broadcast by the first where */
  for (lua_Integer k = n; k >= 1; k--) {
    lua_pushvalue(L, 1);
    lua_pushinteger(L, k);
    call(L, "eq", 2, 1);
    lua_rawgeti(L, 2, k);
    lua_pushvalue(L, -3);
    call(L, "where", 3, 1);
    lua_remove(L, -2);
  }
  return 1;
}

static const luaL_Reg sets_funcs[] = {{"intersect1d", l_intersect1d},
                                      {"union1d", l_union1d},
                                      {"setdiff1d", l_setdiff1d},
                                      {"partition", l_partition},
                                      {"argpartition", l_argpartition},
                                      {"histogram", l_histogram},
                                      {"choose", l_choose},
                                      {NULL, NULL}};

/* Adds the functions to the module table and, as methods, to the store
 * metatable's method table (as tl_extra_open). */
void tl_sets_open(lua_State *L, int module_index) {
  module_index = lua_absindex(L, module_index);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
  int box = lua_gettop(L);
  lua_pushvalue(L, module_index);
  lua_pushvalue(L, box);
  luaL_setfuncs(L, sets_funcs, 1);
  lua_pop(L, 1);
  luaL_getmetatable(L, TL_STORE);
  if (lua_getfield(L, -1, "__methods") == LUA_TTABLE) {
    lua_pushvalue(L, box);
    luaL_setfuncs(L, sets_funcs, 1);
  }
  lua_pop(L, 3);
}
