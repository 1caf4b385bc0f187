/*
 * lextra.c — built-ins beyond API v0 that the benchmark workloads (and array
 * programs like them) need: tycho.bincount and tycho.diagonal, as module
 * functions and as store methods (x:bincount(), x:diagonal()).
 *
 * tl_extra_open is called once by the module set-up (tycho_lua.c), after the
 * store metatable and the module table exist. Like every function of the
 * binding, each one here has upvalue 1 = the runtime box (tl.h), taken from
 * the registry where the set-up left it.
 *
 * numpy's semantics (DESIGN.md §6): values are data, positions are 1-based.
 * bincount counts the value 0 into position 1 of its result, as numpy's
 * counts it into index 0; to count the 1-based positions argmin returns,
 * subtract 1 first (bench/workloads/kmeans.lua). Views share storage
 * (x:diagonal() can be assigned to).
 */
#include "tl.h"

void tl_extra_open(lua_State *L, int module_index);

/* A positional argument `pos` or option `key`, not both; false when neither. */
static bool int_arg(lua_State *L, const tl_sig *s, int pos, const char *key, int64_t *out) {
  bool given = tl_optint(L, s, key, out);
  if (!lua_isnil(L, pos)) {
    if (given) return tl_argerror(L, s, "%s is given twice (argument %d and option %s)", key, pos, key);
    *out = tl_checkint(L, pos, s->fn, key);
    given = true;
  }
  return given;
}

/* tycho.bincount(x [, weights] [, minlength]): numpy's. Values are data:
 * out[v + 1] (1-based positions) counts the elements equal to v (or sums
 * their weights), v = 0, 1, ..., max(x); the length is max(max(x) + 1,
 * minlength), never less, so no value is dropped; a negative value is an
 * error. Finding max(x) and min(x) reads two values: bincount flushes the
 * window, unless x's values are known to lie in 0 .. minlength - 1 without
 * reading them (ty_store_value_range: labels = d:argmin(2) - 1 with
 * minlength = d's number of columns, or u8 labels with minlength = 256).
 * The result is i64, or f64 with weights (f32 with f32 weights). */
static const tl_sig sig_bincount = {
    "bincount", 1, 3, "minlength", true,
    "tycho.bincount(x [, weights] [, minlength] [, {minlength = n}]), x:bincount(...)"};
static int l_bincount(lua_State *L) {
  const tl_sig *s = &sig_bincount;
  const char *fn = s->fn;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, fn, "x");
  ty_store *w = NULL;
  if (lua_type(L, 2) == LUA_TNUMBER)
    return tl_argerror(L, s, "weights (argument 2) must be a store, got number (a minimum "
                       "length is argument 3 or {minlength = n}; values count from 0, as numpy's)");
  if (!lua_isnil(L, 2)) w = tl_checkstore(L, 2, fn, "weights");
  int64_t minlength = 0;
  if (int_arg(L, s, 3, "minlength", &minlength) && minlength < 0)
    return tl_error(L, fn, "minlength must be non-negative, got %lld", (long long)minlength);
  ty_dtype xt = ty_store_dtype(x);
  if (ty_dtype_is_float(xt))
    return tl_error(L, fn, "x must hold integer values (an integer dtype or bool), got %s",
                    ty_dtype_name(xt));
  if (ty_store_ndim(x) != 1) {
    char sh[256];
    tl_shape_str(ty_store_ndim(x), ty_store_shape(x), sh, sizeof sh);
    return tl_error(L, fn, "x must be 1-D, got shape %s", sh);
  }
  int64_t nbins = minlength, klo, khi;
  /* bounds known from how x was made (argmin(...) - 1 below minlength):
   * the length is minlength, no value needs reading, the window stays open */
  bool known = ty_store_value_range(x, &klo, &khi) && klo >= 0 && khi < minlength;
  if (ty_store_size(x) > 0 && !known) {
    /* the smallest and largest values: two reductions, one flush */
    ty_store **mn = tl_newslot(L), **mx = tl_newslot(L);
    ty_status st;
    TL_TRY(L, rt, st, ty_reduce(rt, TY_RED_MIN, x, -1, mn));
    if (st == TY_OK) TL_TRY(L, rt, st, ty_reduce(rt, TY_RED_MAX, x, -1, mx));
    ty_value vmin, vmax;
    if (st == TY_OK) st = ty_item(rt, *mn, &vmin);
    if (st == TY_OK) st = ty_item(rt, *mx, &vmax);
    if (st != TY_OK) return tl_fail(L, rt, fn, st);
    /* a u64's min and max are unsigned: from 2^63 their bits read negative
     * here. Such a value would need 2^63 bins (numpy refuses u64 labels);
     * before, the length wrapped and the result came back empty */
    if ((xt == TY_U64 && vmax.i < 0) || vmax.i == INT64_MAX) /* INT64_MAX + 1 bins: no int64 */
      return tl_error(L, fn, "x holds values of 2^63 - 1 or more (the largest is %llu): too "
                      "many bins to count", (unsigned long long)vmax.i);
    if (vmin.i < 0)
      return tl_error(L, fn, "x holds negative values (the smallest is %lld): bincount counts "
                      "the values 0, 1, 2, ...", (long long)vmin.i);
    if (vmax.i >= nbins) nbins = vmax.i + 1;
    lua_pop(L, 2);
  }
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_bincount(rt, x, w, 0, nbins, slot));
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  tl_created(L, *slot);
  return 1;
}

/* tycho.diagonal(x [, offset [, axis1, axis2]]): numpy's, for a 2-D x, as a
 * 1-D view (no copy; x:diagonal():fill(0) writes x). offset k > 0 is above
 * the main diagonal (x[i][i + k]), k < 0 below; an offset past the edge gives
 * an empty view. axis1, axis2 = 2, 1 takes the diagonal of the transpose. */
static const tl_sig sig_diagonal = {
    "diagonal", 1, 4, "offset axis1 axis2", false,
    "tycho.diagonal(x [, offset [, axis1, axis2]] [, {offset = k, axis1 = 1, axis2 = 2}]), "
    "x:diagonal(...)"};
static int l_diagonal(lua_State *L) {
  const tl_sig *s = &sig_diagonal;
  const char *fn = s->fn;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, fn, "x");
  if (ty_store_ndim(x) != 2) {
    char sh[256];
    tl_shape_str(ty_store_ndim(x), ty_store_shape(x), sh, sizeof sh);
    return tl_error(L, fn, "x must be 2-D, got shape %s", sh);
  }
  int64_t k = 0, a1 = 1, a2 = 2;
  int_arg(L, s, 2, "offset", &k);
  bool h1 = int_arg(L, s, 3, "axis1", &a1), h2 = int_arg(L, s, 4, "axis2", &a2);
  if (h1 != h2) return tl_argerror(L, s, "axis1 and axis2 go together");
  a1 = a1 < 0 ? a1 + 3 : a1;
  a2 = a2 < 0 ? a2 + 3 : a2;
  if (a1 < 1 || a1 > 2 || a2 < 1 || a2 > 2 || a1 == a2)
    return tl_error(L, fn, "axis1 and axis2 must be two different axes of the 2-D store "
                    "(1, 2 or 2, 1; negative from the end)");
  ty_store *cur = x;
  if (a1 == 2) { /* the diagonal of the transpose */
    ty_store **t = tl_newslot(L);
    ty_status st = ty_store_transpose(rt, x, 0, 1, t);
    if (st != TY_OK) return tl_fail(L, rt, fn, st);
    cur = *t;
  }
  if (k != 0) { /* k > 0: drop the first k columns; k < 0: the first -k rows */
    int dim = k > 0 ? 1 : 0;
    int64_t n = ty_store_shape(cur)[dim];
    int64_t start = k > 0 ? (k > n ? n : k) : (k < -n ? n : -k); /* no -INT64_MIN */
    ty_store **v = tl_newslot(L);
    ty_status st = ty_store_slice(rt, cur, dim, start, n, 1, v);
    if (st != TY_OK) return tl_fail(L, rt, fn, st);
    cur = *v;
  }
  ty_store **slot = tl_newslot(L);
  ty_status st = ty_store_diagonal(rt, cur, slot);
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  return 1;
}

static const luaL_Reg extra_funcs[] = {
    {"bincount", l_bincount}, {"diagonal", l_diagonal}, {NULL, NULL}};

/* Adds the functions to the module table at module_index and, as methods, to
 * the store metatable's method table (__methods). */
void tl_extra_open(lua_State *L, int module_index) {
  module_index = lua_absindex(L, module_index);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
  int box = lua_gettop(L);
  lua_pushvalue(L, module_index);
  lua_pushvalue(L, box);
  luaL_setfuncs(L, extra_funcs, 1);
  lua_pop(L, 1);
  luaL_getmetatable(L, TL_STORE);
  if (lua_getfield(L, -1, "__methods") == LUA_TTABLE) {
    lua_pushvalue(L, box);
    luaL_setfuncs(L, extra_funcs, 1);
  }
  lua_pop(L, 3); /* __methods, metatable, box */
}
