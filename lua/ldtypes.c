/*
 * ldtypes.c — numpy's dtype introspection: tycho.iinfo(dtype) and
 * tycho.finfo(dtype) (tables with numpy's field names), and
 * tycho.promote_types(a, b) / tycho.result_type(...) (numpy's promotion
 * table, ty_dtype_promote; docs/dtypes.md).
 *
 * A dtype argument is a dtype name ("i8", "uint16", ...) or a store (its
 * dtype). Values come from the C API (ty_dtype_limits) and <float.h>, so
 * they are what the kernels use. iinfo(u64).max, 2^64 - 1, holds in no Lua
 * integer: it is the float 2^64 (1.8446744073709552e19), as a u64 element
 * above 2^63 - 1 reaches Lua (docs/dtypes.md).
 */
#include "tl.h"

#include <float.h>
#include <stdio.h>
#include <math.h>

/* A dtype name or a store at idx, as its dtype; raises naming `what`. */
static ty_dtype check_dtype_arg(lua_State *L, int idx, const char *fn, const char *what) {
  ty_store *s = tl_teststore(L, idx, fn);
  if (s) return ty_store_dtype(s);
  if (lua_type(L, idx) != LUA_TSTRING)
    return (ty_dtype)tl_error(L, fn, "%s must be a dtype name or a store, got %s", what,
                              tl_typename(L, idx));
  return tl_optdtype(L, idx, fn, TY_F64);
}

static void set_int(lua_State *L, const char *k, lua_Integer v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}

static void set_num(lua_State *L, const char *k, double v) {
  lua_pushnumber(L, (lua_Number)v);
  lua_setfield(L, -2, k);
}

static void set_str(lua_State *L, const char *k, const char *v) {
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

/* tycho.iinfo(dtype): {bits, min, max, kind = "i" | "u", dtype} */
static int l_iinfo(lua_State *L) {
  if (lua_gettop(L) != 1)
    return tl_error(L, "iinfo", "expected one argument (a dtype name or a store), got %d",
                    lua_gettop(L));
  ty_dtype t = check_dtype_arg(L, 1, "iinfo", "dtype");
  if (!ty_dtype_is_int(t))
    return tl_error(L, "iinfo", "%s is not an integer dtype (i8 i16 i32 i64 u8 u16 u32 u64)",
                    ty_dtype_name(t));
  int64_t lo;
  uint64_t hi;
  ty_dtype_limits(t, &lo, &hi);
  lua_createtable(L, 0, 5);
  set_int(L, "bits", (lua_Integer)(8 * ty_dtype_size(t)));
  set_int(L, "min", (lua_Integer)lo);
  if (hi > (uint64_t)INT64_MAX) set_num(L, "max", (double)hi); /* u64: 2^64 as a float */
  else set_int(L, "max", (lua_Integer)hi);
  set_str(L, "kind", ty_dtype_is_unsigned(t) ? "u" : "i");
  set_str(L, "dtype", ty_dtype_name(t));
  return 1;
}

/* tycho.finfo(dtype): numpy's finfo fields, computed from <float.h> as numpy
 * derives them (precision = floor(-log10(eps)), resolution = 10^-precision
 * in the dtype). */
static int l_finfo(lua_State *L) {
  if (lua_gettop(L) != 1)
    return tl_error(L, "finfo", "expected one argument (a dtype name or a store), got %d",
                    lua_gettop(L));
  ty_dtype t = check_dtype_arg(L, 1, "finfo", "dtype");
  if (!ty_dtype_is_float(t))
    return tl_error(L, "finfo", "%s is not a float dtype (f64 or f32)", ty_dtype_name(t));
  const bool d = t == TY_F64;
  const double eps = d ? DBL_EPSILON : FLT_EPSILON;
  const int nmant = (d ? DBL_MANT_DIG : FLT_MANT_DIG) - 1, bits = d ? 64 : 32;
  const int precision = (int)floor(-log10(eps));
  const double res = pow(10.0, -precision);
  lua_createtable(L, 0, 18);
  set_int(L, "bits", bits);
  set_num(L, "eps", eps);
  set_num(L, "epsneg", eps / 2);
  set_num(L, "tiny", d ? DBL_MIN : FLT_MIN);
  set_num(L, "smallest_normal", d ? DBL_MIN : FLT_MIN);
  set_num(L, "smallest_subnormal", d ? DBL_TRUE_MIN : FLT_TRUE_MIN);
  set_num(L, "max", d ? DBL_MAX : FLT_MAX);
  set_num(L, "min", d ? -DBL_MAX : -FLT_MAX);
  set_num(L, "resolution", d ? res : (double)(float)res);
  set_int(L, "precision", precision);
  set_int(L, "maxexp", d ? DBL_MAX_EXP : FLT_MAX_EXP);
  set_int(L, "minexp", (d ? DBL_MIN_EXP : FLT_MIN_EXP) - 1);
  set_int(L, "nmant", nmant);
  set_int(L, "nexp", bits - nmant - 1);
  set_int(L, "iexp", bits - nmant - 1);
  set_int(L, "machep", -nmant);
  set_int(L, "negep", -nmant - 1);
  set_str(L, "dtype", ty_dtype_name(t));
  return 1;
}

/* tycho.promote_types(a, b): numpy's promote_types, a dtype name */
static int l_promote_types(lua_State *L) {
  if (lua_gettop(L) != 2)
    return tl_error(L, "promote_types", "expected two dtypes, got %d arguments", lua_gettop(L));
  ty_dtype a = check_dtype_arg(L, 1, "promote_types", "argument 1");
  ty_dtype b = check_dtype_arg(L, 2, "promote_types", "argument 2");
  lua_pushstring(L, ty_dtype_name(ty_dtype_promote(a, b)));
  return 1;
}

/* tycho.result_type(...): the promotion of every argument (dtype names or
 * stores; Lua numbers are refused: their rule depends on the operation's
 * other operand, docs/dtypes.md) */
static int l_result_type(lua_State *L) {
  int n = lua_gettop(L);
  if (n < 1) return tl_error(L, "result_type", "expected at least one dtype or store");
  ty_dtype r = check_dtype_arg(L, 1, "result_type", "argument 1");
  for (int i = 2; i <= n; i++) {
    char what[32];
    snprintf(what, sizeof what, "argument %d", i);
    r = ty_dtype_promote(r, check_dtype_arg(L, i, "result_type", what));
  }
  lua_pushstring(L, ty_dtype_name(r));
  return 1;
}

static const luaL_Reg dtype_funcs[] = {{"iinfo", l_iinfo},
                                       {"finfo", l_finfo},
                                       {"promote_types", l_promote_types},
                                       {"result_type", l_result_type},
                                       {NULL, NULL}};

void tl_dtypes_open(lua_State *L, int module_index) {
  module_index = lua_absindex(L, module_index);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
  int box = lua_gettop(L);
  lua_pushvalue(L, module_index);
  lua_pushvalue(L, box);
  luaL_setfuncs(L, dtype_funcs, 1);
  lua_pop(L, 2); /* module copy, box */
}
