/*
 * lufunc.c — numpy's other element-wise functions (issue 18) from Lua: the
 * inverse and hyperbolic trigonometry, exp2/log2/log10/expm1/log1p/cbrt,
 * arctan2 and hypot, sign, rint/trunc, reciprocal, isnan/isinf/isfinite,
 * logical_xor, floor_divide, the bitwise functions and shifts (each one op of
 * the core: they fuse like tycho.exp), the functions numpy builds from those
 * (square, clip, round, nan_to_num, deg2rad/rad2deg: launches of existing
 * ops, so they fuse too), the operators // & | ~ << >> on stores, and the
 * constants pi, e, inf, nan and newaxis.
 *
 * Arguments are lops.c's (tl_unary_op, tl_binary_op): a Lua number next to a
 * store is a weak scalar, out is positional after the operands or option
 * out. A dtype an op has no kernel for (bitwise_and of f64, sign of bool) is
 * the core's TY_EDTYPE, which names the op and the dtype (numpy's
 * TypeError). Each alias (asin for arcsin ...) has its own tl_sig, so a
 * message names the function the script called.
 */
#include "tl.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* numpy's pi and e (the doubles nearest to them) */
#define TL_PI 3.141592653589793238462643383279502884
#define TL_E 2.718281828459045235360287471352662498

/* ---- one op each ------------------------------------------------------------------------ */

#define UFUNC1(name, op)                                                                  \
  static const tl_sig sig_##name = {#name, 1, 2, "out", true,                             \
                                    "tycho." #name "(x [, out] [, {out = store, "         \
                                    "parallel = ...}]), x:" #name "(...)"};                \
  static int l_##name(lua_State *L) { return tl_unary_op(L, op, &sig_##name); }
#define UFUNC2(name, op)                                                                  \
  static const tl_sig sig_##name = {#name, 2, 3, "out", true,                             \
                                    "tycho." #name "(a, b [, out] [, {out = store, "      \
                                    "parallel = ...}]), a:" #name "(b ...)"};              \
  static int l_##name(lua_State *L) { return tl_binary_op(L, op, &sig_##name); }

UFUNC1(tan, TY_OP_TAN)
UFUNC1(arcsin, TY_OP_ARCSIN)
UFUNC1(asin, TY_OP_ARCSIN)
UFUNC1(arccos, TY_OP_ARCCOS)
UFUNC1(acos, TY_OP_ARCCOS)
UFUNC1(arctan, TY_OP_ARCTAN)
UFUNC1(atan, TY_OP_ARCTAN)
UFUNC1(sinh, TY_OP_SINH)
UFUNC1(cosh, TY_OP_COSH)
UFUNC1(arcsinh, TY_OP_ARCSINH)
UFUNC1(asinh, TY_OP_ARCSINH)
UFUNC1(arccosh, TY_OP_ARCCOSH)
UFUNC1(acosh, TY_OP_ARCCOSH)
UFUNC1(arctanh, TY_OP_ARCTANH)
UFUNC1(atanh, TY_OP_ARCTANH)
UFUNC1(expm1, TY_OP_EXPM1)
UFUNC1(log1p, TY_OP_LOG1P)
UFUNC1(log2, TY_OP_LOG2)
UFUNC1(log10, TY_OP_LOG10)
UFUNC1(exp2, TY_OP_EXP2)
UFUNC1(cbrt, TY_OP_CBRT)
UFUNC1(sign, TY_OP_SIGN)
UFUNC1(rint, TY_OP_RINT)
UFUNC1(trunc, TY_OP_TRUNC)
UFUNC1(reciprocal, TY_OP_RECIPROCAL)
UFUNC1(invert, TY_OP_INVERT)
UFUNC1(bitwise_not, TY_OP_INVERT)
UFUNC1(isnan, TY_OP_ISNAN)
UFUNC1(isinf, TY_OP_ISINF)
UFUNC1(isfinite, TY_OP_ISFINITE)
UFUNC2(arctan2, TY_OP_ARCTAN2)
UFUNC2(atan2, TY_OP_ARCTAN2)
UFUNC2(hypot, TY_OP_HYPOT)
UFUNC2(floor_divide, TY_OP_FLOORDIV)
UFUNC2(remainder, TY_OP_MOD)
UFUNC2(logical_xor, TY_OP_XOR)
UFUNC2(bitwise_and, TY_OP_BITAND)
UFUNC2(bitwise_or, TY_OP_BITOR)
UFUNC2(bitwise_xor, TY_OP_BITXOR)
UFUNC2(left_shift, TY_OP_LSHIFT)
UFUNC2(right_shift, TY_OP_RSHIFT)

/* Lua calls __bnot (like __unm) with the operand twice: the second is not an out. */
static int m_bnot(lua_State *L) {
  lua_settop(L, 1);
  return l_invert(L);
}

/* ---- built from other ops ------------------------------------------------------------------ */

#define CALL(L, rt, fn, call)                                                             \
  do {                                                                                    \
    ty_status st_;                                                                        \
    TL_TRY(L, rt, st_, call);                                                             \
    if (st_ != TY_OK) tl_fail(L, rt, fn, st_);                                            \
  } while (0)

/* A 0-d store of dtype t holding v (anchored in a slot on the stack). */
static ty_store *scalar(lua_State *L, ty_runtime *rt, const char *fn, ty_dtype t, double v) {
  ty_store **slot = tl_newslot(L);
  CALL(L, rt, fn, ty_scalar_f64(rt, t, v, slot));
  return *slot;
}

/* The dtype of x's float results (ty_dtype_float_of). */
static ty_dtype float_of(const ty_store *x) { return ty_dtype_float_of(ty_store_dtype(x)); }

/* x * x: numpy's square (bool * bool is i64 here, as bool + bool). */
static const tl_sig sig_square = {"square", 1, 2, "out", true,
                                  "tycho.square(x [, out] [, {out = store, parallel = ...}]), "
                                  "x:square(...)"};
static int l_square(lua_State *L) {
  const tl_sig *s = &sig_square;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_operand(L, 1, s->fn, NULL);
  int from;
  ty_store *out = tl_out_arg(L, s, 2, &from);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_binary(rt, TY_OP_MUL, x, x, slot));
  return tl_finish_out(L, rt, slot, st, s, out, from);
}

/* x * k in x's float dtype: numpy's deg2rad is x * (pi / 180), rad2deg
 * x * (180 / pi), the constant computed in the dtype (npy_deg2radf: in
 * float), so f32 has its own. */
static int scaled(lua_State *L, const tl_sig *s, double k64, float k32) {
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_operand(L, 1, s->fn, NULL);
  int from;
  ty_store *out = tl_out_arg(L, s, 2, &from);
  const ty_dtype t = float_of(x);
  ty_store *ks = scalar(L, rt, s->fn, t, t == TY_F32 ? (double)k32 : k64);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_binary(rt, TY_OP_MUL, x, ks, slot));
  return tl_finish_out(L, rt, slot, st, s, out, from);
}
#define SCALED(name, k64, k32)                                                            \
  static const tl_sig sig_##name = {#name, 1, 2, "out", true,                             \
                                    "tycho." #name "(x [, out] [, {out = store, "         \
                                    "parallel = ...}]), x:" #name "(...)"};                \
  static int l_##name(lua_State *L) { return scaled(L, &sig_##name, k64, k32); }
SCALED(deg2rad, TL_PI / 180.0, (float)TL_PI / 180.0f)
SCALED(radians, TL_PI / 180.0, (float)TL_PI / 180.0f)
SCALED(rad2deg, 180.0 / TL_PI, 180.0f / (float)TL_PI)
SCALED(degrees, 180.0 / TL_PI, 180.0f / (float)TL_PI)

/* A bound of clip (argument idx): a store, a number (weak next to x) or nil
 * (NULL: no bound on that side). */
static ty_store *bound(lua_State *L, const tl_sig *s, int idx, const char *what, ty_store *x) {
  if (lua_isnil(L, idx)) return NULL;
  ty_store *b = tl_teststore(L, idx, s->fn);
  if (b) return b;
  if (lua_type(L, idx) != LUA_TNUMBER)
    tl_argerror(L, s, "%s must be a store, a number or nil, got %s", what, tl_typename(L, idx));
  if (lua_isinteger(L, idx)) tl_check_int_fits(L, s->fn, lua_tointeger(L, idx), ty_store_dtype(x));
  return tl_operand(L, idx, s->fn, x);
}

/* numpy's clip: minimum(hi, maximum(lo, x)), in that operand order so that a
 * tie gives the bound (clip(-0.0, 0.0, 1) is 0.0) and NaN in x or in a bound
 * propagates, as numpy's _NPY_CLIP. */
static const tl_sig sig_clip = {"clip", 2, 4, "out", true,
                                "tycho.clip(x, lo, hi [, out] [, {out = store, parallel = ...}]), "
                                "x:clip(lo, hi ...): lo or hi nil for no bound on that side"};
static int l_clip(lua_State *L) {
  const tl_sig *s = &sig_clip;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_operand(L, 1, s->fn, NULL);
  int from;
  ty_store *out = tl_out_arg(L, s, 4, &from);
  ty_store *lo = bound(L, s, 2, "lo", x), *hi = bound(L, s, 3, "hi", x);
  if (!lo && !hi) return tl_argerror(L, s, "lo and hi are both nil: give at least one bound");
  ty_store **slot = NULL, *cur = x;
  ty_status st = TY_OK;
  if (lo) {
    slot = tl_newslot(L);
    TL_TRY(L, rt, st, ty_binary(rt, TY_OP_MAXIMUM, lo, cur, slot));
    if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
    cur = *slot;
  }
  if (hi) {
    slot = tl_newslot(L);
    TL_TRY(L, rt, st, ty_binary(rt, TY_OP_MINIMUM, hi, cur, slot));
  }
  return tl_finish_out(L, rt, slot, st, s, out, from);
}

/* numpy's power_of_ten (multiarray/calculation.c): exact below 1e9, then
 * multiplied up one factor of 10 at a time (the same roundings). */
static double power_of_ten(int64_t n) {
  static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8};
  if (n < 9) return p10[n];
  double r = 1e9;
  while (n-- > 9 && r < INFINITY) r *= 10.0;
  return r;
}

/* numpy's round/around: rint for decimals = 0; otherwise x * 10^d rounded
 * half to even and divided back (x / 10^-d and multiplied for d < 0), the
 * factor in x's dtype. Integers and bool come back unchanged for d >= 0 and
 * go through f64 and back for d < 0 (exact up to 2^53), as numpy's. */
static int round_(lua_State *L, const tl_sig *s) {
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_operand(L, 1, s->fn, NULL);
  int64_t d = lua_isnil(L, 2) ? 0 : tl_checkint(L, 2, s->fn, "decimals");
  if (d > 400 || d < -400) d = d > 0 ? 400 : -400; /* 10^400 is inf already: the same values */
  int from;
  ty_store *out = tl_out_arg(L, s, 3, &from);
  const ty_dtype t = ty_store_dtype(x);
  const bool fl = ty_dtype_is_float(t);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  if (d == 0 || (!fl && d > 0)) {
    TL_TRY(L, rt, st, ty_unary(rt, TY_OP_RINT, x, slot));
    return tl_finish_out(L, rt, slot, st, s, out, from);
  }
  ty_store *v = x;
  if (!fl) {
    CALL(L, rt, s->fn, ty_cast(rt, x, TY_F64, slot));
    v = *slot;
    slot = tl_newslot(L);
  }
  ty_store *f = scalar(L, rt, s->fn, fl ? t : TY_F64, power_of_ten(d > 0 ? d : -d));
  ty_store **y = slot, **r = tl_newslot(L), **z = tl_newslot(L);
  CALL(L, rt, s->fn, ty_binary(rt, d > 0 ? TY_OP_MUL : TY_OP_DIV, v, f, y));
  CALL(L, rt, s->fn, ty_unary(rt, TY_OP_RINT, *y, r));
  TL_TRY(L, rt, st, ty_binary(rt, d > 0 ? TY_OP_DIV : TY_OP_MUL, *r, f, z));
  if (st == TY_OK && !fl) {
    ty_store *zf = *z;
    z = tl_newslot(L);
    TL_TRY(L, rt, st, ty_cast(rt, zf, t, z));
  }
  return tl_finish_out(L, rt, z, st, s, out, from);
}
static const tl_sig sig_round = {"round", 1, 3, "out", true,
                                 "tycho.round(x [, decimals = 0] [, out] [, {out = store, "
                                 "parallel = ...}]), x:round(...): half to even, as numpy's"};
static const tl_sig sig_around = {"around", 1, 3, "out", true,
                                  "tycho.around(x [, decimals = 0] [, out] [, {out = store, "
                                  "parallel = ...}]), x:around(...): half to even, as numpy's"};
static int l_round(lua_State *L) { return round_(L, &sig_round); }
static int l_around(lua_State *L) { return round_(L, &sig_around); }

/* Replacement `key` of nan_to_num: positional argument idx or option key (not
 * both), a number; def when neither is given. */
static double replacement(lua_State *L, const tl_sig *s, int idx, const char *key, double def) {
  const int top = lua_gettop(L);
  if (lua_istable(L, TL_OPTS(s))) lua_getfield(L, TL_OPTS(s), key);
  else lua_pushnil(L);
  const bool pos = !lua_isnil(L, idx), opt = !lua_isnil(L, -1);
  if (pos && opt) tl_argerror(L, s, "%s is given twice (argument %d and option %s)", key, idx, key);
  const int at = pos ? idx : top + 1;
  double v = def;
  if (pos || opt) {
    if (lua_type(L, at) != LUA_TNUMBER)
      tl_argerror(L, s, "%s must be a number, got %s", key, tl_typename(L, at));
    v = lua_tonumber(L, at);
  }
  lua_settop(L, top);
  return v;
}

/* numpy's nan_to_num: NaN -> nan (0), +inf -> posinf (the dtype's largest
 * finite value), -inf -> neginf (its lowest); integers and bool are copied.
 * Three where launches over masks of x: one fused run. */
static const tl_sig sig_nan_to_num = {
    "nan_to_num", 1, 4, "nan posinf neginf", true,
    "tycho.nan_to_num(x [, nan = 0 [, posinf [, neginf]]] [, {nan = v, posinf = v, neginf = v, "
    "parallel = ...}]), x:nan_to_num(...): posinf/neginf default to the dtype's largest and "
    "lowest finite values"};
static int l_nan_to_num(lua_State *L) {
  const tl_sig *s = &sig_nan_to_num;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_operand(L, 1, s->fn, NULL);
  const ty_dtype t = ty_store_dtype(x);
  const double big = t == TY_F32 ? FLT_MAX : DBL_MAX;
  const double vnan = replacement(L, s, 2, "nan", 0.0);
  const double vpos = replacement(L, s, 3, "posinf", big);
  const double vneg = replacement(L, s, 4, "neginf", -big);
  ty_store **slot = tl_newslot(L);
  if (!ty_dtype_is_float(t)) {
    CALL(L, rt, s->fn, ty_cast(rt, x, t, slot));
    tl_created(L, *slot);
    return 1;
  }
  ty_store *sn = scalar(L, rt, s->fn, t, vnan), *sp = scalar(L, rt, s->fn, t, vpos);
  ty_store *sm = scalar(L, rt, s->fn, t, vneg), *pinf = scalar(L, rt, s->fn, t, INFINITY);
  ty_store *ninf = scalar(L, rt, s->fn, t, -INFINITY);
  ty_store **m1 = slot, **r1 = tl_newslot(L), **m2 = tl_newslot(L), **r2 = tl_newslot(L);
  ty_store **m3 = tl_newslot(L), **r3 = tl_newslot(L);
  CALL(L, rt, s->fn, ty_unary(rt, TY_OP_ISNAN, x, m1));
  CALL(L, rt, s->fn, ty_where(rt, *m1, sn, x, r1));
  CALL(L, rt, s->fn, ty_binary(rt, TY_OP_EQ, x, pinf, m2));
  CALL(L, rt, s->fn, ty_where(rt, *m2, sp, *r1, r2));
  CALL(L, rt, s->fn, ty_binary(rt, TY_OP_EQ, x, ninf, m3));
  CALL(L, rt, s->fn, ty_where(rt, *m3, sm, *r2, r3));
  tl_created(L, *r3);
  return 1;
}

const char tl_newaxis = 0;

/* ---- registration ------------------------------------------------------------------------ */

#define R(name) {#name, l_##name}
static const luaL_Reg ufunc_funcs[] = {
    R(tan),         R(arcsin),      R(asin),        R(arccos),      R(acos),
    R(arctan),      R(atan),        R(sinh),        R(cosh),        R(arcsinh),
    R(asinh),       R(arccosh),     R(acosh),       R(arctanh),     R(atanh),
    R(expm1),       R(log1p),       R(log2),        R(log10),       R(exp2),
    R(cbrt),        R(sign),        R(rint),        R(trunc),       R(reciprocal),
    R(invert),      R(bitwise_not), R(isnan),       R(isinf),       R(isfinite),
    R(arctan2),     R(atan2),       R(hypot),       R(floor_divide), R(remainder),
    R(logical_xor), R(bitwise_and), R(bitwise_or),  R(bitwise_xor), R(left_shift),
    R(right_shift), R(square),      R(deg2rad),     R(radians),     R(rad2deg),
    R(degrees),     R(clip),        R(round),       R(around),      R(nan_to_num),
    {NULL, NULL}};
static const luaL_Reg ufunc_meta[] = {{"__idiv", l_floor_divide}, {"__band", l_bitwise_and},
                                      {"__bor", l_bitwise_or},    {"__bxor", l_bitwise_xor},
                                      {"__bnot", m_bnot},         {"__shl", l_left_shift},
                                      {"__shr", l_right_shift},   {NULL, NULL}};

/* Adds the functions and constants to the module table, the functions as
 * methods to the store metatable's method table (as tl_sets_open) and the
 * operators to the metatable. */
void tl_ufunc_open(lua_State *L, int module_index) {
  module_index = lua_absindex(L, module_index);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
  int box = lua_gettop(L);
  lua_pushvalue(L, module_index);
  lua_pushvalue(L, box);
  luaL_setfuncs(L, ufunc_funcs, 1);
  lua_pushnumber(L, TL_PI);
  lua_setfield(L, -2, "pi");
  lua_pushnumber(L, TL_E);
  lua_setfield(L, -2, "e");
  lua_pushnumber(L, INFINITY);
  lua_setfield(L, -2, "inf");
  lua_pushnumber(L, NAN); /* a positive quiet NaN, as numpy's (Lua's 0/0 is -nan on x86) */
  lua_setfield(L, -2, "nan");
  lua_pushlightuserdata(L, (void *)&tl_newaxis);
  lua_setfield(L, -2, "newaxis");
  lua_pop(L, 1);
  luaL_getmetatable(L, TL_STORE);
  lua_pushvalue(L, box);
  luaL_setfuncs(L, ufunc_meta, 1);
  if (lua_getfield(L, -1, "__methods") == LUA_TTABLE) {
    lua_pushvalue(L, box);
    luaL_setfuncs(L, ufunc_funcs, 1);
  }
  lua_pop(L, 3);
}
