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
 * by identity first, so they cannot return element-wise stores. `a < b` on
 * stores raises and names a:lt(b); `a == b` stays Lua's identity test.
 *
 * Arguments follow numpy (each function's tl_sig lists its forms): ufuncs
 * and dot take out (positional after the operands, or {out = o}); reductions
 * take one axis or a list of axes and {keepdims = true, out = o}. Anything
 * else raises (largs.c).
 *
 * Reductions take a 1-based (or negative) axis; argmin/argmax return 1-based
 * indices (the core's 0-based result + 1), so x[x:argmax():item()] is the
 * maximum of a 1-D x.
 */
#include "tl.h"

#include "tycho/products.h"

#include <string.h>

/* numpy's casting = "same_kind" for out: bool < integers < floats, any size
 * within a kind (an f64 result may go into an f32 out, not into an i64 one). */
static int kind(ty_dtype t) { return t == TY_BOOL ? 0 : ty_dtype_is_float(t) ? 2 : 1; }

/* The out store: argument `pos` (0: the function has no positional out) or
 * option out; never both. *from says where it is, for finish to return it:
 * its stack index, or 0 for the options table. */
static ty_store *out_arg(lua_State *L, const tl_sig *s, int pos, int *from) {
  ty_store *o = NULL;
  *from = 0;
  if (pos && !lua_isnil(L, pos)) {
    o = tl_teststore(L, pos, s->fn);
    if (!o) tl_argerror(L, s, "argument %d (out) must be a store, got %s", pos, tl_typename(L, pos));
    *from = pos;
  }
  ty_store *opt = tl_optstore(L, s, "out");
  if (o && opt) tl_argerror(L, s, "out is given twice (argument %d and option out)", pos);
  return o ? o : opt;
}

/* Every result here is a fresh store: TL_TRY retries after freeing memory,
 * tl_created charges the collector with its bytes. With out, the result is
 * copied into it (checked: the same shape, a same_kind dtype) and out is
 * returned, as numpy does; the fresh store is then unreachable and fusion
 * elides it. */
static int finish_out(lua_State *L, tl_box *bx, ty_runtime *rt, ty_store **slot, ty_status st,
                      const tl_sig *s, ty_store *out, int from) {
  if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  if (!out) {
    tl_created_in(L, bx, *slot);
    return 1;
  }
  const ty_store *r = *slot;
  int nd = ty_store_ndim(r);
  if (nd != ty_store_ndim(out) ||
      memcmp(ty_store_shape(r), ty_store_shape(out), sizeof(int64_t) * (size_t)nd) != 0) {
    char a[200], b[200];
    tl_shape_str(ty_store_ndim(out), ty_store_shape(out), a, sizeof a);
    tl_shape_str(nd, ty_store_shape(r), b, sizeof b);
    return tl_error(L, s->fn, "out has shape %s, the result has shape %s", a, b);
  }
  ty_dtype rt_ = ty_store_dtype(r), ot = ty_store_dtype(out);
  if (kind(rt_) > kind(ot))
    return tl_error(L, s->fn, "cannot write the %s result into out of dtype %s (numpy's "
                    "same_kind casting)", ty_dtype_name(rt_), ty_dtype_name(ot));
  st = ty_copy(rt, out, *slot);
  if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  if (from) lua_pushvalue(L, from);
  else lua_getfield(L, TL_OPTS(s), "out");
  return 1;
}

static int finish(lua_State *L, tl_box *bx, ty_runtime *rt, ty_store **slot, ty_status st,
                  const char *fn) {
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  tl_created_in(L, bx, *slot);
  return 1;
}

static int unary(lua_State *L, ty_op op, const tl_sig *s) {
  tl_args(L, s);
  tl_box *bx = lua_touserdata(L, lua_upvalueindex(1));
  ty_runtime *rt = tl_rt_in(L, bx);
  ty_store *a = tl_operand(L, 1, s->fn, NULL);
  int from;
  ty_store *out = out_arg(L, s, 2, &from);
  ty_store **slot = tl_newslot_in(L, bx);
  ty_status st;
  TL_TRY(L, rt, st, ty_unary(rt, op, a, slot));
  return finish_out(L, bx, rt, slot, st, s, out, from);
}

/* A Lua integer next to an integer store narrower than i64 in arithmetic (not a comparison,
 * which compares exactly in i64, nor and/or) must fit the store's dtype, as
 * numpy 2 requires (docs/dtypes.md). */
static bool weak_int_op(ty_op op) { return !(op >= TY_OP_LT && op <= TY_OP_OR) && op != TY_OP_XOR; }

static void check_weak_int(lua_State *L, ty_op op, const char *fn, int idx, const ty_store *peer) {
  if (!peer || !lua_isinteger(L, idx) || !weak_int_op(op)) return;
  tl_check_int_fits(L, fn, lua_tointeger(L, idx), ty_store_dtype(peer));
}

static int binary(lua_State *L, ty_op op, const tl_sig *s) {
  const char *fn = s->fn;
  tl_args(L, s);
  tl_box *bx = lua_touserdata(L, lua_upvalueindex(1));
  ty_runtime *rt = tl_rt_in(L, bx);
  ty_store *a0 = tl_teststore_in(L, bx, 1, fn), *b0 = tl_teststore_in(L, bx, 2, fn);
  if (!a0) check_weak_int(L, op, fn, 1, b0);
  if (!b0) check_weak_int(L, op, fn, 2, a0);
  int from = 0;
  ty_store *out = lua_isnil(L, 3) && lua_isnil(L, TL_OPTS(s)) ? NULL : out_arg(L, s, 3, &from);
  /* a number next to a store comes from the constant cache (one per call) */
  ty_store *a = a0 ? a0 : b0 ? tl_const_operand_in(L, bx, 1, fn, b0, false) : tl_operand(L, 1, fn, NULL);
  ty_store *b = b0 ? b0 : a0 ? tl_const_operand_in(L, bx, 2, fn, a0, false) : tl_operand(L, 2, fn, NULL);
  ty_store **slot = tl_newslot_in(L, bx);
  ty_status st;
  bx->consts_busy = !a0 || !b0; /* held across TL_TRY's flushes */
  TL_TRY(L, rt, st, ty_binary(rt, op, a, b, slot));
  bx->consts_busy = false;
  return finish_out(L, bx, rt, slot, st, s, out, from);
}

/* An arithmetic operator on stores (`x * 0.5`, `a + b`): Lua calls the
 * metamethod with exactly the two operands, so there is no out and no
 * options to look for; the operands are taken as binary() takes them. A
 * call of the metamethod with other arguments goes through binary(). */
static int meta_binary(lua_State *L, ty_op op, const tl_sig *s) {
  tl_box *bx = lua_touserdata(L, lua_upvalueindex(1)); /* the one upvalue read (tl.h, _in) */
  if (lua_gettop(L) != 2 || !bx) return binary(L, op, s);
  const char *fn = s->fn;
  ty_runtime *rt = tl_rt_in(L, bx);
  ty_store *a0 = tl_teststore_in(L, bx, 1, fn);
  /* after a store, the type of operand 2 tells a number (`x * 0.5`) without
   * the userdata test, and the constant cache takes it (~25 instructions) */
  const int t2 = a0 ? lua_type(L, 2) : LUA_TNONE;
  ty_store *b0 = t2 == LUA_TNUMBER ? NULL : tl_teststore_in(L, bx, 2, fn);
  /* a number next to a store: its integer checked as binary() checks it,
   * on the constant cache's one read of the value (~25 instructions) */
  const bool fits = weak_int_op(op);
  ty_store *a = a0 ? a0 : b0 ? tl_const_operand_in(L, bx, 1, fn, b0, fits) : tl_operand(L, 1, fn, NULL);
  ty_store *b = b0   ? b0
                : a0 ? tl_const_operand_typed_in(L, bx, 2, fn, a0, fits, t2)
                     : tl_operand(L, 2, fn, NULL);
  ty_store **slot = tl_newslot_in(L, bx);
  ty_status st;
  bx->consts_busy = !a0 || !b0; /* held across TL_TRY's flushes */
  TL_TRY(L, rt, st, ty_binary(rt, op, a, b, slot));
  bx->consts_busy = false;
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  tl_created_in(L, bx, *slot);
  return 1;
}

/* where(cond, a, b): numbers for a or b are weak next to the other. */
static const tl_sig sig_where = {"where", 1, 3, "", true,
                                 "tycho.where(cond, a, b [, {parallel = ...}]), "
                                 "tycho.where(cond) (= tycho.nonzero(cond))"};
static int op_where(lua_State *L) {
  if (tl_args(L, &sig_where) == 1) return tl_where_nonzero(L); /* lmask.c */
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
  return finish(L, lua_touserdata(L, lua_upvalueindex(1)), rt, slot, st, "where");
}

/* The axes argument (2) of a reduction into red[]: nil (all), an axis or a
 * list of distinct axes ({1, 2}; argmin/argmax take one axis, as numpy's).
 * Returns how many axes are reduced. */
static int reduce_axes(lua_State *L, const tl_sig *s, ty_reduce_op op, int ndim, bool *red) {
  memset(red, 0, sizeof(bool) * TY_MAX_RANK);
  int tp = lua_type(L, 2);
  if (tp == LUA_TNIL) {
    for (int d = 0; d < ndim; d++) red[d] = true;
    return ndim;
  }
  if (tp == LUA_TNUMBER) {
    red[tl_checkaxis(L, 2, s->fn, "axis", ndim)] = true;
    return 1;
  }
  const bool arg = op == TY_RED_ARGMIN || op == TY_RED_ARGMAX;
  if (tp != LUA_TTABLE || arg)
    return tl_argerror(L, s, "axis must be an integer, got %s%s%s", tl_typename(L, 2),
                       arg ? "" : " (several axes: a list such as {1, 2})",
                       op == TY_RED_MIN   ? " (tycho.minimum is the element-wise minimum)"
                       : op == TY_RED_MAX ? " (tycho.maximum is the element-wise maximum)"
                                          : "");
  lua_Unsigned n = lua_rawlen(L, 2);
  if (n == 0) /* no reduction would run: the result slot stayed empty (a crash with keepdims) */
    return tl_argerror(L, s, "the list of axes is empty (numpy's axis=() reduces nothing: use x:copy())");
  int count = 0;
  for (lua_Unsigned k = 1; k <= n; k++) {
    char what[32];
    snprintf(what, sizeof what, "axis[%d]", (int)k);
    lua_rawgeti(L, 2, (lua_Integer)k);
    int d = tl_checkaxis(L, -1, s->fn, what, ndim);
    lua_pop(L, 1);
    if (red[d]) return tl_error(L, s->fn, "axis %d is given twice", d + 1);
    red[d] = true;
    count++;
  }
  return count;
}

/* A reduction's or a product's operands are often temporaries, as in
 * `(p * Ap):sum()`, and their slots are registers of the calling Lua
 * function, free once the call returns but not cleared: while a metamethod
 * of that function runs, Lua marks its registers up to its frame's top,
 * dead ones included. So the temporary stayed referenced until the register
 * was reused, and a flush made meanwhile (the window filled in `r - alpha *
 * Ap`) found it held and wrote it: CG 4M's t = p * Ap, 32 MiB, in one
 * iteration of five (docs/fusion.md, "A CG iteration"). The first nargs slots
 * are cleared on return; the nres results above them stay. */
static int consumed(lua_State *L, int nargs, int nres) {
  for (int i = 1; i <= nargs && i <= lua_gettop(L) - nres; i++) {
    lua_pushnil(L);
    lua_replace(L, i);
  }
  return nres;
}

/* x:sum(axis | {axes}, {keepdims = true, out = o}). Several axes are reduced
 * one at a time, highest first (each a reduction of the core, so the bits do
 * not depend on --cpus, mode or fusion); all the axes of x is the reduction
 * over everything (x:sum({1, 2}) is x:sum() to the bit). keepdims reshapes
 * the (fresh, contiguous) result. mean over several axes is the mean of
 * means: equal groups, so the same value up to rounding. */
static int reduce(lua_State *L, ty_reduce_op op, const tl_sig *s) {
  const char *fn = s->fn;
  tl_args(L, s);
  tl_box *bx = lua_touserdata(L, lua_upvalueindex(1));
  ty_runtime *rt = tl_rt_in(L, bx);
  ty_store *a = tl_operand(L, 1, fn, NULL);
  const int ndim = ty_store_ndim(a);
  const int64_t *shape = ty_store_shape(a);
  bool red[TY_MAX_RANK];
  int nred = reduce_axes(L, s, op, ndim, red);
  const bool all = nred == ndim;
  bool keepdims = tl_optbool(L, s, "keepdims", false);
  int from;
  ty_store *out = out_arg(L, s, 0, &from);
  /* Said here so that the axis in the message is Lua's (1-based). */
  if (op != TY_RED_SUM && op != TY_RED_PROD && op != TY_RED_MEAN) {
    char sh[400];
    tl_shape_str(ndim, shape, sh, sizeof sh);
    if (all && ty_store_size(a) == 0)
      return tl_error(L, fn, "the store is empty (shape %s): %s is undefined", sh, fn);
    for (int d = 0; d < ndim; d++)
      if (red[d] && shape[d] == 0)
        return tl_error(L, fn, "axis %d has length 0 (shape %s): %s is undefined", d + 1, sh, fn);
  }
  luaL_checkstack(L, TY_MAX_RANK + 4, "tycho: too many axes");
  ty_store **slot = tl_newslot_in(L, bx);
  ty_status st;
  if (all) {
    TL_TRY(L, rt, st, ty_reduce(rt, op, a, -1, slot));
  } else {
    ty_store *cur = a;
    st = TY_OK;
    bool first = true;
    for (int d = ndim - 1; d >= 0 && st == TY_OK; d--) {
      if (!red[d]) continue;
      if (!first) slot = tl_newslot_in(L, bx);
      TL_TRY(L, rt, st, ty_reduce(rt, op, cur, d, slot));
      cur = *slot;
      first = false;
    }
  }
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  if (op == TY_RED_ARGMIN || op == TY_RED_ARGMAX) {
    lua_pushinteger(L, 1);
    ty_store *one = tl_scalar(L, rt, lua_gettop(L), fn, TY_I64);
    ty_store *idx0 = *slot;
    slot = tl_newslot_in(L, bx);
    TL_TRY(L, rt, st, ty_binary(rt, TY_OP_ADD, idx0, one, slot));
    if (st != TY_OK) return tl_fail(L, rt, fn, st);
  }
  if (keepdims) {
    int64_t kshape[TY_MAX_RANK];
    for (int d = 0; d < ndim; d++) kshape[d] = red[d] ? 1 : shape[d];
    ty_store *r = *slot;
    slot = tl_newslot_in(L, bx);
    st = ty_store_reshape(rt, r, ndim, kshape, slot);
  }
  return consumed(L, 1, finish_out(L, bx, rt, slot, st, s, out, from));
}

static const tl_sig sig_dot = {"dot", 2, 3, "out", true,
                               "tycho.dot(a, b [, out] [, {out = store, parallel = ...}]), a:dot(b ...)"};
static const tl_sig sig_matmul = {
    "matmul", 2, 3, "out", true,
    "tycho.matmul(a, b [, out] [, {out = store, parallel = ...}]), a:matmul(b ...)"};

static int matmul(lua_State *L, const tl_sig *s) {
  const char *fn = s->fn;
  tl_args(L, s);
  ty_store *a = tl_checkstore(L, 1, fn, "argument 1");
  ty_store *b = tl_checkstore(L, 2, fn, "argument 2");
  int from;
  ty_store *out = out_arg(L, s, 3, &from);
  tl_box *bx = lua_touserdata(L, lua_upvalueindex(1));
  ty_runtime *rt = tl_rt_in(L, bx);
  ty_store **slot = tl_newslot_in(L, bx);
  ty_status st;
  TL_TRY(L, rt, st, s == &sig_dot ? ty_dot(rt, a, b, slot) : ty_matmul(rt, a, b, slot));
  return consumed(L, 2, finish_out(L, bx, rt, slot, st, s, out, from));
}

/* One tl_sig per function: its accepted forms, in every message. */
#define UNARY(name, op)                                                                   \
  static const tl_sig sig_##name = {#name, 1, 2, "out", true,                             \
                                    "tycho." #name "(x [, out] [, {out = store, "         \
                                    "parallel = ...}]), x:" #name "(...)"};                \
  static int op_##name(lua_State *L) { return unary(L, op, &sig_##name); }
#define BINARY(name, op)                                                                  \
  static const tl_sig sig_##name = {#name, 2, 3, "out", true,                             \
                                    "tycho." #name "(a, b [, out] [, {out = store, "      \
                                    "parallel = ...}]), a:" #name "(b ...)"};              \
  static int op_##name(lua_State *L) { return binary(L, op, &sig_##name); }
#define REDUCE(name, op)                                                                  \
  static const tl_sig sig_##name = {#name, 1, 2, "keepdims out", true,                    \
                                    "tycho." #name "(x [, axis | {axes}] [, {keepdims = " \
                                    "bool, out = store, parallel = ...}]), x:" #name       \
                                    "(...)"};                                             \
  static int op_##name(lua_State *L) { return reduce(L, op, &sig_##name); }
#define ARGREDUCE(name, op)                                                               \
  static const tl_sig sig_##name = {#name, 1, 2, "keepdims out", true,                    \
                                    "tycho." #name "(x [, axis] [, {keepdims = bool, "    \
                                    "out = store, parallel = ...}]), x:" #name "(...)"};   \
  static int op_##name(lua_State *L) { return reduce(L, op, &sig_##name); }

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
ARGREDUCE(argmin, TY_RED_ARGMIN)
ARGREDUCE(argmax, TY_RED_ARGMAX)

static int op_dot(lua_State *L) { return matmul(L, &sig_dot); }
static int op_matmul(lua_State *L) { return matmul(L, &sig_matmul); }

static int m_add(lua_State *L) { return meta_binary(L, TY_OP_ADD, &sig_add); }
static int m_sub(lua_State *L) { return meta_binary(L, TY_OP_SUB, &sig_sub); }
static int m_mul(lua_State *L) { return meta_binary(L, TY_OP_MUL, &sig_mul); }
static int m_div(lua_State *L) { return meta_binary(L, TY_OP_DIV, &sig_div); }
static int m_mod(lua_State *L) { return meta_binary(L, TY_OP_MOD, &sig_mod); }
static int m_pow(lua_State *L) { return meta_binary(L, TY_OP_POW, &sig_pow); }

/* Lua calls __unm with the operand twice: the second is not an out. */
static int m_unm(lua_State *L) {
  lua_settop(L, 1);
  return op_neg(L);
}

/* Lua turns __lt/__le into a boolean, so stores cannot answer them
 * element-wise; say what to use instead of a "attempt to compare" error. */
static int m_compare(lua_State *L) {
  return luaL_error(L, "tycho: stores cannot be compared with <, <=, > or >= (Lua needs a "
                    "boolean): use a:lt(b), a:le(b), a:gt(b), a:ge(b), element-wise bool stores");
}

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
const luaL_Reg tl_ops_meta[] = {{"__add", m_add}, {"__sub", m_sub}, {"__mul", m_mul},
                                {"__div", m_div}, {"__mod", m_mod}, {"__pow", m_pow},
                                {"__unm", m_unm}, {"__lt", m_compare},
                                {"__le", m_compare}, {NULL, NULL}};

/* lufunc.c's ufuncs take their arguments the same way. */
int tl_unary_op(lua_State *L, ty_op op, const tl_sig *s) { return unary(L, op, s); }
int tl_binary_op(lua_State *L, ty_op op, const tl_sig *s) { return binary(L, op, s); }
ty_store *tl_out_arg(lua_State *L, const tl_sig *s, int pos, int *from) {
  return out_arg(L, s, pos, from);
}
int tl_finish_out(lua_State *L, ty_runtime *rt, ty_store **slot, ty_status st, const tl_sig *s,
                  ty_store *out, int from) {
  return finish_out(L, lua_touserdata(L, lua_upvalueindex(1)), rt, slot, st, s, out, from);
}
