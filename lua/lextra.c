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
 * Lua conventions kept: labels are 1-based (label 1 counts into bin 1, the
 * first element of the result, so the labels argmin/argmax return can be
 * counted directly); views share storage (x:diagonal() can be assigned to).
 */
#include "tl.h"

void tl_extra_open(lua_State *L, int module_index);

/* tycho.bincount(x [, weights] [, nbins]): out[j] = how many i have x[i] == j
 * (or the sum of their weights), j = 1..nbins; labels outside 1..nbins are
 * ignored. nbins defaults to the largest label (0 for an empty x). The
 * result is i64, or f64 with weights (f32 with f32 weights). */
static int l_bincount(lua_State *L) {
  const char *fn = "bincount";
  lua_settop(L, 3);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, fn, "x");
  ty_store *w = NULL;
  int nbins_idx = 3;
  if (lua_type(L, 2) == LUA_TNUMBER) { /* bincount(x, nbins) */
    if (!lua_isnil(L, 3))
      return tl_error(L, fn, "weights (argument 2) must be a store, got number");
    nbins_idx = 2;
  } else if (!lua_isnil(L, 2)) {
    w = tl_checkstore(L, 2, fn, "weights");
  }
  ty_dtype xt = ty_store_dtype(x);
  if (xt == TY_F64 || xt == TY_F32)
    return tl_error(L, fn, "x must hold integer labels (i64, i32, u8 or bool), got %s",
                    ty_dtype_name(xt));
  if (ty_store_ndim(x) != 1) {
    char sh[256];
    tl_shape_str(ty_store_ndim(x), ty_store_shape(x), sh, sizeof sh);
    return tl_error(L, fn, "x must be 1-D, got shape %s", sh);
  }
  int64_t nbins;
  if (!lua_isnil(L, nbins_idx)) {
    nbins = tl_checkint(L, nbins_idx, fn, "nbins");
    if (nbins < 0) return tl_error(L, fn, "nbins must be non-negative, got %lld", (long long)nbins);
  } else if (ty_store_size(x) == 0) {
    nbins = 0;
  } else {
    /* the largest label: a reduction and a read (this flushes the window) */
    ty_store **mx = tl_newslot(L);
    ty_status st = ty_reduce(rt, TY_RED_MAX, x, -1, mx);
    ty_value v;
    if (st == TY_OK) st = ty_item(rt, *mx, &v);
    if (st != TY_OK) return tl_fail(L, rt, fn, st);
    nbins = v.i > 0 ? v.i : 0;
    lua_pop(L, 1);
  }
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_bincount(rt, x, w, 1, nbins, slot));
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  tl_created(L, *slot);
  return 1;
}

/* tycho.diagonal(x): the diagonal of a 2-D store as a 1-D view (no copy),
 * length min(rows, cols); x:diagonal():fill(0) zeroes it in place. */
static int l_diagonal(lua_State *L) {
  lua_settop(L, 1);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, "diagonal", "x");
  if (ty_store_ndim(x) != 2) {
    char sh[256];
    tl_shape_str(ty_store_ndim(x), ty_store_shape(x), sh, sizeof sh);
    return tl_error(L, "diagonal", "x must be 2-D, got shape %s", sh);
  }
  ty_store **slot = tl_newslot(L);
  ty_status st = ty_store_diagonal(rt, x, slot);
  if (st != TY_OK) return tl_fail(L, rt, "diagonal", st);
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
