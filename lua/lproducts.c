/*
 * lproducts.c — numpy's products and convolutions from Lua (tycho/products.h):
 * tycho.tensordot, outer, inner, vdot, kron, trace, einsum, convolve,
 * correlate (tycho.matmul and tycho.dot are lops.c's). x:trace() is also a
 * store method, as numpy's ndarray.trace.
 *
 * Axes are 1-based (negative from the end) and converted here; the core does
 * the shapes, dtypes and launches. Each function takes an options table with
 * the launch keys ({parallel = ...}) for the launches of its call.
 */
#include "tl.h"

#include "tycho/products.h"

#include <string.h>

static const tl_sig sig_tensordot = {
    "tensordot", 2, 3, "", true,
    "tycho.tensordot(a, b [, axes = 2 | {axes_a, axes_b}] [, {parallel = ...}]) (axes_a and "
    "axes_b: an axis or a list of axes, 1-based)"};
static const tl_sig sig_outer = {"outer", 2, 2, "", true,
                                 "tycho.outer(a, b [, {parallel = ...}])"};
static const tl_sig sig_inner = {"inner", 2, 2, "", true,
                                 "tycho.inner(a, b [, {parallel = ...}])"};
static const tl_sig sig_vdot = {"vdot", 2, 2, "", true, "tycho.vdot(a, b [, {parallel = ...}])"};
static const tl_sig sig_kron = {"kron", 2, 2, "", true, "tycho.kron(a, b [, {parallel = ...}])"};
static const tl_sig sig_trace = {
    "trace", 1, 4, "", true,
    "tycho.trace(a [, offset = 0 [, axis1 = 1 [, axis2 = 2]]] [, {parallel = ...}]), a:trace(...)"};
static const tl_sig sig_einsum = {
    "einsum", 2, 1 + TY_EINSUM_MAX_OPERANDS, "", true,
    "tycho.einsum(spec, a [, b [, c]] [, {parallel = ...}]), e.g. tycho.einsum(\"bij,bjk->bik\", "
    "x, y)"};
static const tl_sig sig_convolve = {
    "convolve", 2, 3, "", true,
    "tycho.convolve(a, v [, mode = \"full\" | \"same\" | \"valid\"] [, {parallel = ...}])"};
static const tl_sig sig_correlate = {
    "correlate", 2, 3, "", true,
    "tycho.correlate(a, v [, mode = \"valid\" | \"same\" | \"full\"] [, {parallel = ...}])"};

typedef ty_status (*binary_fn)(ty_runtime *, ty_store *, ty_store *, ty_store **);

/* a and b: stores or numbers (0-d stores of the dtype next to the other). */
static int two(lua_State *L, const tl_sig *s, binary_fn f) {
  tl_args(L, s);
  ty_store *a = tl_teststore(L, 1, s->fn), *b = tl_teststore(L, 2, s->fn);
  if (!a) a = tl_operand(L, 1, s->fn, b);
  if (!b) b = tl_operand(L, 2, s->fn, a);
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, f(rt, a, b, slot));
  if (st) return tl_fail(L, rt, s->fn, st);
  return 1;
}
static int l_outer(lua_State *L) { return two(L, &sig_outer, ty_outer); }
static int l_inner(lua_State *L) { return two(L, &sig_inner, ty_inner); }
static int l_vdot(lua_State *L) { return two(L, &sig_vdot, ty_vdot); }
static int l_kron(lua_State *L) { return two(L, &sig_kron, ty_kron); }

/* One side of tensordot's axes: an axis or a list of them (1-based). */
static int axes_list(lua_State *L, int idx, const tl_sig *s, const char *what, int ndim,
                     int *axes) {
  if (lua_type(L, idx) != LUA_TTABLE) {
    axes[0] = tl_checkaxis(L, idx, s->fn, what, ndim);
    return 1;
  }
  const int n = (int)lua_rawlen(L, idx);
  if (n > TY_MAX_RANK) tl_argerror(L, s, "%s lists %d axes (at most %d)", what, n, TY_MAX_RANK);
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, idx, i + 1);
    axes[i] = tl_checkaxis(L, lua_gettop(L), s->fn, what, ndim);
    lua_pop(L, 1);
  }
  return n;
}

static int l_tensordot(lua_State *L) {
  const tl_sig *s = &sig_tensordot;
  tl_args(L, s);
  ty_store *a = tl_checkstore(L, 1, s->fn, "a");
  ty_store *b = tl_checkstore(L, 2, s->fn, "b");
  const int na = ty_store_ndim(a), nb = ty_store_ndim(b);
  int n, ax[TY_MAX_RANK], bx[TY_MAX_RANK];
  if (lua_isnoneornil(L, 3) || lua_type(L, 3) == LUA_TNUMBER) {
    const int64_t k = lua_isnoneornil(L, 3) ? 2 : tl_checkint(L, 3, s->fn, "axes");
    if (k < 0 || k > na || k > nb)
      return tl_argerror(L, s, "axes = %lld: a has %d dims and b %d", (long long)k, na, nb);
    n = (int)k;
    for (int i = 0; i < n; i++) ax[i] = na - n + i, bx[i] = i;
  } else if (lua_type(L, 3) == LUA_TTABLE && lua_rawlen(L, 3) == 2) {
    lua_rawgeti(L, 3, 1);
    lua_rawgeti(L, 3, 2);
    const int top = lua_gettop(L);
    n = axes_list(L, top - 1, s, "axes_a", na, ax);
    const int m = axes_list(L, top, s, "axes_b", nb, bx);
    if (m != n) return tl_argerror(L, s, "axes_a lists %d axes and axes_b %d", n, m);
    lua_pop(L, 2);
  } else {
    return tl_argerror(L, s, "axes must be an integer or a pair {axes_a, axes_b}, got %s",
                       tl_typename(L, 3));
  }
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_tensordot(rt, a, b, n, ax, bx, slot));
  if (st) return tl_fail(L, rt, s->fn, st);
  return 1;
}

static int l_trace(lua_State *L) {
  const tl_sig *s = &sig_trace;
  tl_args(L, s);
  ty_store *a = tl_checkstore(L, 1, s->fn, "a");
  const int nd = ty_store_ndim(a);
  if (nd < 2) return tl_error(L, s->fn, "a must have at least 2 dims, got %d", nd);
  const int64_t offset = lua_isnoneornil(L, 2) ? 0 : tl_checkint(L, 2, s->fn, "offset");
  const int ax1 = lua_isnoneornil(L, 3) ? 0 : tl_checkaxis(L, 3, s->fn, "axis1", nd);
  const int ax2 = lua_isnoneornil(L, 4) ? 1 : tl_checkaxis(L, 4, s->fn, "axis2", nd);
  if (ax1 == ax2) return tl_error(L, s->fn, "axis1 and axis2 are the same axis (%d)", ax1 + 1);
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_trace(rt, a, offset, ax1, ax2, slot));
  if (st) return tl_fail(L, rt, s->fn, st);
  return 1;
}

static int l_einsum(lua_State *L) {
  const tl_sig *s = &sig_einsum;
  const int n = tl_args(L, s);
  if (lua_type(L, 1) != LUA_TSTRING)
    return tl_argerror(L, s, "spec must be a string, got %s", tl_typename(L, 1));
  const char *spec = lua_tostring(L, 1);
  ty_store *ops[TY_EINSUM_MAX_OPERANDS];
  int nops = 0;
  for (int i = 2; i <= n; i++) {
    if (lua_isnil(L, i)) return tl_argerror(L, s, "operand %d is nil", i - 1);
    ops[nops++] = tl_operand(L, i, s->fn, NULL);
  }
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_einsum(rt, spec, nops, ops, slot));
  if (st) return tl_fail(L, rt, s->fn, st);
  return 1;
}

static int conv(lua_State *L, const tl_sig *s, ty_conv_mode def,
                ty_status (*f)(ty_runtime *, ty_store *, ty_store *, ty_conv_mode, ty_store **)) {
  tl_args(L, s);
  ty_store *a = tl_checkstore(L, 1, s->fn, "a");
  ty_store *v = tl_checkstore(L, 2, s->fn, "v");
  ty_conv_mode mode = def;
  if (!lua_isnoneornil(L, 3)) {
    const char *m = lua_type(L, 3) == LUA_TSTRING ? lua_tostring(L, 3) : NULL;
    if (!m || ty_conv_mode_parse(m, &mode))
      return tl_argerror(L, s, "mode must be \"full\", \"same\" or \"valid\", got %s",
                         m ? m : tl_typename(L, 3));
  }
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, f(rt, a, v, mode, slot));
  if (st) return tl_fail(L, rt, s->fn, st);
  return 1;
}
static int l_convolve(lua_State *L) { return conv(L, &sig_convolve, TY_CONV_FULL, ty_convolve); }
static int l_correlate(lua_State *L) {
  return conv(L, &sig_correlate, TY_CONV_VALID, ty_correlate);
}

static const luaL_Reg products_funcs[] = {
    {"tensordot", l_tensordot}, {"outer", l_outer},       {"inner", l_inner},
    {"vdot", l_vdot},           {"kron", l_kron},         {"trace", l_trace},
    {"einsum", l_einsum},       {"convolve", l_convolve}, {"correlate", l_correlate},
    {NULL, NULL}};
static const luaL_Reg products_methods[] = {{"trace", l_trace}, {NULL, NULL}};

/* Adds the functions to the module table and trace to the store methods. */
void tl_products_open(lua_State *L, int module_index) {
  module_index = lua_absindex(L, module_index);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
  int box = lua_gettop(L);
  lua_pushvalue(L, module_index);
  lua_pushvalue(L, box);
  luaL_setfuncs(L, products_funcs, 1);
  lua_pop(L, 1);
  luaL_getmetatable(L, TL_STORE);
  if (lua_getfield(L, -1, "__methods") == LUA_TTABLE) {
    lua_pushvalue(L, box);
    luaL_setfuncs(L, products_methods, 1);
  }
  lua_pop(L, 3);
}
