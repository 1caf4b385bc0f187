/*
 * lsort.c — sorting from Lua: tycho.sort, argsort, unique, searchsorted,
 * isin (module functions and store methods). The work is the core's
 * (tycho/sort.h: ops_sort.c); this file checks arguments and speaks
 * 1-based positions: argsort, unique's index and inverse, and searchsorted
 * return positions counting from 1 (searchsorted's n + 1 is "after the
 * last"), numpy's + 1.
 *
 * Order is numpy's: ascending, NaN last, stable (argsort gives numpy's
 * kind="stable" positions). The default axis is the last (-1), as numpy's.
 */
#include "tl.h"

#include "tycho/sort.h"

#include <string.h>

/* Axis argument `pos` or option axis (not both); default the last. */
static int axis_arg(lua_State *L, const tl_sig *s, int pos, ty_store *x) {
  int64_t ax = -1;
  bool has_opt = tl_optint(L, s, "axis", &ax);
  if (!lua_isnil(L, pos)) {
    if (has_opt) tl_argerror(L, s, "axis is given twice (argument %d and option axis)", pos);
    ax = tl_checkint(L, pos, s->fn, "axis");
  }
  int nd = ty_store_ndim(x);
  if (nd == 0) tl_error(L, s->fn, "x is 0-d (nothing to sort along)");
  int64_t a = ax < 0 ? ax + nd + 1 : ax;
  if (a < 1 || a > nd)
    tl_error(L, s->fn, "axis %lld is out of range for a store of rank %d", (long long)ax, nd);
  return (int)a - 1;
}

static const tl_sig sig_sort = {"sort", 1, 2, "axis", true,
                                "tycho.sort(x [, axis] [, {axis = k, parallel = ...}]), "
                                "x:sort(...) (default: the last axis)"};
static const tl_sig sig_argsort = {"argsort", 1, 2, "axis", true,
                                   "tycho.argsort(x [, axis] [, {axis = k, parallel = ...}]), "
                                   "x:argsort(...) (default: the last axis)"};

static int sort_like(lua_State *L, const tl_sig *s, bool positions) {
  tl_args(L, s);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  int axis = axis_arg(L, s, 2, x);
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  if (positions) TL_TRY(L, rt, st, ty_argsort(rt, x, axis, 1, slot));
  else TL_TRY(L, rt, st, ty_sort(rt, x, axis, slot));
  if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  tl_created(L, *slot);
  return 1;
}
static int l_sort(lua_State *L) { return sort_like(L, &sig_sort, false); }
static int l_argsort(lua_State *L) { return sort_like(L, &sig_argsort, true); }

static const tl_sig sig_unique = {
    "unique", 1, 1, "return_index return_inverse return_counts", true,
    "tycho.unique(x [, {return_index = bool, return_inverse = bool, return_counts = bool, "
    "parallel = ...}]), "
    "x:unique(...): returns values [, index] [, inverse] [, counts]"};
static int l_unique(lua_State *L) {
  const tl_sig *s = &sig_unique;
  tl_args(L, s);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  bool ri = tl_optbool(L, s, "return_index", false);
  bool rv = tl_optbool(L, s, "return_inverse", false);
  bool rc = tl_optbool(L, s, "return_counts", false);
  ty_runtime *rt = tl_rt(L);
  int top = lua_gettop(L);
  ty_store **vals = tl_newslot(L);
  ty_store **idx = ri ? tl_newslot(L) : NULL;
  ty_store **inv = rv ? tl_newslot(L) : NULL;
  ty_store **cnt = rc ? tl_newslot(L) : NULL;
  ty_status st;
  TL_TRY(L, rt, st, ty_unique(rt, x, 1, vals, idx, inv, cnt));
  if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  for (int i = top + 1; i <= lua_gettop(L); i++) tl_created(L, *(ty_store **)lua_touserdata(L, i));
  return lua_gettop(L) - top;
}

/* A store argument, or a Lua number made a 0-d store next to `peer`. */
static ty_store *values_arg(lua_State *L, const tl_sig *s, int idx, const ty_store *peer) {
  ty_store *v = tl_teststore(L, idx, s->fn);
  if (v) return v;
  int tp = lua_type(L, idx);
  if (tp != LUA_TNUMBER && tp != LUA_TBOOLEAN)
    tl_argerror(L, s, "argument %d must be a store or a number, got %s", idx, tl_typename(L, idx));
  return tl_operand(L, idx, s->fn, peer);
}

static const tl_sig sig_searchsorted = {
    "searchsorted", 2, 3, "side", true,
    "tycho.searchsorted(a, v [, side] [, {side = \"left\" | \"right\", parallel = ...}]), "
    "a:searchsorted(v ...)"};
static int l_searchsorted(lua_State *L) {
  const tl_sig *s = &sig_searchsorted;
  tl_args(L, s);
  ty_store *a = tl_checkstore(L, 1, s->fn, "a");
  ty_store *v = values_arg(L, s, 2, a);
  const char *side = NULL;
  if (lua_istable(L, TL_OPTS(s))) {
    lua_getfield(L, TL_OPTS(s), "side");
    if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING)
      return tl_argerror(L, s, "option side must be \"left\" or \"right\", got %s",
                         tl_typename(L, -1));
    side = lua_tostring(L, -1); /* NULL when nil; anchored by the options table */
  }
  if (!lua_isnil(L, 3)) {
    if (side) return tl_argerror(L, s, "side is given twice (argument 3 and option side)");
    if (lua_type(L, 3) != LUA_TSTRING)
      return tl_argerror(L, s, "side (argument 3) must be \"left\" or \"right\", got %s", tl_typename(L, 3));
    side = lua_tostring(L, 3);
  }
  bool right = false;
  if (side && !strcmp(side, "right")) right = true;
  else if (side && strcmp(side, "left"))
    return tl_argerror(L, s, "side must be \"left\" or \"right\", got \"%s\"", side);
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_searchsorted(rt, a, v, right, 1, slot));
  if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  tl_created(L, *slot);
  return 1;
}

static const tl_sig sig_isin = {"isin", 2, 2, "", true,
                                "tycho.isin(x, test [, {parallel = ...}]), x:isin(test)"};
static int l_isin(lua_State *L) {
  const tl_sig *s = &sig_isin;
  tl_args(L, s);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  ty_store *t = values_arg(L, s, 2, x);
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_isin(rt, x, t, slot));
  if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  tl_created(L, *slot);
  return 1;
}

static const luaL_Reg sort_funcs[] = {{"sort", l_sort},
                                      {"argsort", l_argsort},
                                      {"unique", l_unique},
                                      {"searchsorted", l_searchsorted},
                                      {"isin", l_isin},
                                      {NULL, NULL}};

/* Adds the functions to the module table and, as methods, to the store
 * metatable's method table (as tl_extra_open). */
void tl_sort_open(lua_State *L, int module_index) {
  module_index = lua_absindex(L, module_index);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
  int box = lua_gettop(L);
  lua_pushvalue(L, module_index);
  lua_pushvalue(L, box);
  luaL_setfuncs(L, sort_funcs, 1);
  lua_pop(L, 1);
  luaL_getmetatable(L, TL_STORE);
  if (lua_getfield(L, -1, "__methods") == LUA_TTABLE) {
    lua_pushvalue(L, box);
    luaL_setfuncs(L, sort_funcs, 1);
  }
  lua_pop(L, 3);
}
