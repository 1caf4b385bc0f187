/*
 * lops.c — element-wise operations, reductions and matmul from Lua: the
 * module functions (tycho.exp(x)), the same functions as methods (x:exp()),
 * and the arithmetic metamethods (+ - * / % ^ and unary -).
 *
 * A Lua number next to a store is a "weak" scalar (tl_weak_dtype): it takes
 * the store's dtype where that loses nothing numpy would keep, so
 * `f32_store * 2.5` stays f32 and `i32_store + 1` stays i32, while
 * `i64_store * 0.5` becomes f64. It becomes a 0-d store and the C API's
 * broadcasting does the rest.
 *
 * Comparisons are functions and methods only (lt le gt ge eq ne): Lua 5.4
 * turns the result of __lt/__le into a boolean and __eq compares userdata
 * by identity first, so they cannot return element-wise stores.
 *
 * Reductions take a 1-based (or negative) axis; argmin/argmax return 1-based
 * indices (the core's 0-based result + 1), so x[x:argmax():item()] is the
 * maximum of a 1-D x.
 */
#include "tl.h"

/* Every result here is a fresh store: TL_TRY retries after freeing memory,
 * tl_created charges the collector with its bytes. */
static int finish(lua_State *L, ty_runtime *rt, ty_store **slot, ty_status st, const char *fn) {
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  tl_created(L, *slot);
  return 1;
}

static int unary(lua_State *L, ty_op op, const char *fn) {
  tl_launch_options(L, 1, 1, fn);
  ty_runtime *rt = tl_rt(L);
  ty_store *a = tl_operand(L, 1, fn, NULL);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_unary(rt, op, a, slot));
  return finish(L, rt, slot, st, fn);
}

/* A Lua integer next to an i32 or u8 store in arithmetic (not a comparison,
 * which compares exactly in i64, nor and/or) must fit the store's dtype, as
 * numpy 2 requires (docs/dtypes.md). */
static void check_weak_int(lua_State *L, ty_op op, const char *fn, int idx, const ty_store *peer) {
  if (!peer || !lua_isinteger(L, idx) || (op >= TY_OP_LT && op <= TY_OP_OR)) return;
  tl_check_int_fits(L, fn, lua_tointeger(L, idx), ty_store_dtype(peer));
}

static int binary(lua_State *L, ty_op op, const char *fn) {
  tl_launch_options(L, 2, 2, fn);
  ty_runtime *rt = tl_rt(L);
  tl_box *bx = lua_touserdata(L, lua_upvalueindex(1));
  ty_store *a0 = tl_teststore_in(L, bx, 1, fn), *b0 = tl_teststore_in(L, bx, 2, fn);
  if (!a0) check_weak_int(L, op, fn, 1, b0);
  if (!b0) check_weak_int(L, op, fn, 2, a0);
  /* a number next to a store comes from the constant cache (one per call) */
  ty_store *a = a0 ? a0 : b0 ? tl_const_operand(L, 1, fn, b0) : tl_operand(L, 1, fn, NULL);
  ty_store *b = b0 ? b0 : a0 ? tl_const_operand(L, 2, fn, a0) : tl_operand(L, 2, fn, NULL);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  if (bx) bx->consts_busy = !a0 || !b0; /* held across TL_TRY's flushes */
  TL_TRY(L, rt, st, ty_binary(rt, op, a, b, slot));
  if (bx) bx->consts_busy = false;
  return finish(L, rt, slot, st, fn);
}

/* where(cond, a, b): numbers for a or b are weak next to the other. */
static int op_where(lua_State *L) {
  tl_launch_options(L, 3, 3, "where");
  ty_runtime *rt = tl_rt(L);
  ty_store *cond = tl_operand(L, 1, "where", NULL);
  ty_store *a0 = tl_teststore(L, 2, "where"), *b0 = tl_teststore(L, 3, "where");
  if (!a0) check_weak_int(L, TY_OP_ADD, "where", 2, b0);
  if (!b0) check_weak_int(L, TY_OP_ADD, "where", 3, a0);
  ty_store *a = a0 ? a0 : tl_operand(L, 2, "where", b0);
  ty_store *b = b0 ? b0 : tl_operand(L, 3, "where", a0);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_where(rt, cond, a, b, slot));
  return finish(L, rt, slot, st, "where");
}

static int reduce(lua_State *L, ty_reduce_op op, const char *fn) {
  tl_launch_options(L, 1, 2, fn);
  ty_runtime *rt = tl_rt(L);
  ty_store *a = tl_operand(L, 1, fn, NULL);
  int axis = -1;
  if (!lua_isnil(L, 2)) {
    if (lua_type(L, 2) != LUA_TNUMBER)
      return tl_error(L, fn, "axis must be an integer, got %s%s", tl_typename(L, 2),
                      op == TY_RED_MIN   ? " (tycho.minimum is the element-wise minimum)"
                      : op == TY_RED_MAX ? " (tycho.maximum is the element-wise maximum)"
                                         : "");
    axis = tl_checkaxis(L, 2, fn, "axis", ty_store_ndim(a));
  }
  /* Said here so that the axis in the message is Lua's (1-based). */
  if (op != TY_RED_SUM && op != TY_RED_PROD && op != TY_RED_MEAN &&
      (axis < 0 ? ty_store_size(a) == 0 : ty_store_shape(a)[axis] == 0)) {
    char sh[400];
    tl_shape_str(ty_store_ndim(a), ty_store_shape(a), sh, sizeof sh);
    if (axis < 0) return tl_error(L, fn, "the store is empty (shape %s): %s is undefined", sh, fn);
    return tl_error(L, fn, "axis %d has length 0 (shape %s): %s is undefined", axis + 1, sh, fn);
  }
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_reduce(rt, op, a, axis, slot));
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  if (op == TY_RED_ARGMIN || op == TY_RED_ARGMAX) {
    lua_pushinteger(L, 1);
    ty_store *one = tl_scalar(L, rt, lua_gettop(L), fn, TY_I64);
    ty_store *idx0 = *slot;
    slot = tl_newslot(L);
    TL_TRY(L, rt, st, ty_binary(rt, TY_OP_ADD, idx0, one, slot));
  }
  return finish(L, rt, slot, st, fn);
}

static int matmul(lua_State *L, const char *fn) {
  tl_launch_options(L, 2, 2, fn);
  ty_store *a = tl_checkstore(L, 1, fn, "argument 1");
  ty_store *b = tl_checkstore(L, 2, fn, "argument 2");
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_matmul(rt, a, b, slot));
  return finish(L, rt, slot, st, fn);
}

#define UNARY(name, op) \
  static int op_##name(lua_State *L) { return unary(L, op, #name); }
#define BINARY(name, op) \
  static int op_##name(lua_State *L) { return binary(L, op, #name); }
#define REDUCE(name, op) \
  static int op_##name(lua_State *L) { return reduce(L, op, #name); }

UNARY(neg, TY_OP_NEG)
UNARY(exp, TY_OP_EXP)
UNARY(log, TY_OP_LOG)
UNARY(sqrt, TY_OP_SQRT)
UNARY(abs, TY_OP_ABS)
UNARY(sin, TY_OP_SIN)
UNARY(cos, TY_OP_COS)
UNARY(tanh, TY_OP_TANH)
UNARY(floor, TY_OP_FLOOR)
UNARY(ceil, TY_OP_CEIL)
UNARY(logical_not, TY_OP_NOT)
BINARY(add, TY_OP_ADD)
BINARY(sub, TY_OP_SUB)
BINARY(mul, TY_OP_MUL)
BINARY(div, TY_OP_DIV)
BINARY(mod, TY_OP_MOD)
BINARY(pow, TY_OP_POW)
BINARY(maximum, TY_OP_MAXIMUM)
BINARY(minimum, TY_OP_MINIMUM)
BINARY(lt, TY_OP_LT)
BINARY(le, TY_OP_LE)
BINARY(gt, TY_OP_GT)
BINARY(ge, TY_OP_GE)
BINARY(eq, TY_OP_EQ)
BINARY(ne, TY_OP_NE)
BINARY(logical_and, TY_OP_AND)
BINARY(logical_or, TY_OP_OR)
REDUCE(sum, TY_RED_SUM)
REDUCE(prod, TY_RED_PROD)
REDUCE(min, TY_RED_MIN)
REDUCE(max, TY_RED_MAX)
REDUCE(mean, TY_RED_MEAN)
REDUCE(argmin, TY_RED_ARGMIN)
REDUCE(argmax, TY_RED_ARGMAX)

static int op_dot(lua_State *L) { return matmul(L, "dot"); }
static int op_matmul(lua_State *L) { return matmul(L, "matmul"); }

#define OPS_FUNCS                                                                         \
  {"neg", op_neg}, {"exp", op_exp}, {"log", op_log}, {"sqrt", op_sqrt}, {"abs", op_abs},       \
  {"sin", op_sin}, {"cos", op_cos}, {"tanh", op_tanh}, {"floor", op_floor}, {"ceil", op_ceil}, \
  {"logical_not", op_logical_not}, {"add", op_add}, {"sub", op_sub}, {"mul", op_mul},         \
  {"div", op_div}, {"mod", op_mod}, {"pow", op_pow}, {"maximum", op_maximum},                 \
  {"minimum", op_minimum}, {"lt", op_lt}, {"le", op_le}, {"gt", op_gt}, {"ge", op_ge},         \
  {"eq", op_eq}, {"ne", op_ne}, {"logical_and", op_logical_and},                              \
  {"logical_or", op_logical_or}, {"sum", op_sum}, {"prod", op_prod}, {"min", op_min},          \
  {"max", op_max}, {"mean", op_mean}, {"argmin", op_argmin}, {"argmax", op_argmax},            \
  {"dot", op_dot}, {"matmul", op_matmul}

const luaL_Reg tl_ops_funcs[] = {OPS_FUNCS, {"where", op_where}, {NULL, NULL}};
const luaL_Reg tl_ops_methods[] = {OPS_FUNCS, {NULL, NULL}};
const luaL_Reg tl_ops_meta[] = {{"__add", op_add}, {"__sub", op_sub}, {"__mul", op_mul},
                                {"__div", op_div}, {"__mod", op_mod}, {"__pow", op_pow},
                                {"__unm", op_neg}, {NULL, NULL}};
