/*
 * llinalg.c — tycho.linalg from Lua: numpy.linalg's solve, inv, det,
 * slogdet, cholesky, qr, svd, eigh, eigvalsh, lstsq, pinv, matrix_rank
 * (tycho/linalg.h, ops_linalg.c: LAPACK) and norm (composed of the
 * element-wise ops and reductions, and svd for the 2-norms, so its vector
 * and Frobenius forms fuse and partition like any reduction).
 *
 * A call runs at once: it flushes the window before its launch (so that
 * the launch runs alone: a lone large matrix then uses every core) and
 * after it, so that a singular or not positive definite matrix raises
 * here, naming the function
 * ("tycho.linalg.solve: matrix is singular (U(2,2) is exactly zero)"), and
 * not at a later read. Arguments follow numpy's positions and keyword names
 * (as options: tycho.linalg.svd(a, {full_matrices = false})); lstsq's rank
 * is a Lua integer, numpy's int.
 *
 * norm is written in Lua (the chunk below), called after its arguments
 * passed tl_args here, so that no argument is silently ignored.
 */
#include "tl.h"

#include "tycho/linalg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define FN(name) "linalg." name

/* Raise the failure of a linalg call. A message of the core that names the
 * function ("... ty_linalg_solve: matrix is singular ...", also inside a
 * task failure) reads "tycho.linalg.solve: matrix is singular ...". */
static int fail(lua_State *L, ty_runtime *rt, const char *fn, ty_status st) {
  const char *msg = ty_errmsg(rt);
  const char *at = msg ? strstr(msg, "ty_linalg_") : NULL;
  if (st == TY_EINTR || !at) return tl_fail(L, rt, fn, st);
  at += strlen("ty_linalg_");
  const size_t n = strcspn(at, ":");
  if (!at[n]) return tl_fail(L, rt, fn, st);
  const char *rest = at + n + 1;
  while (*rest == ' ') rest++;
  char name[32];
  snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), at);
  return luaL_error(L, "tycho.linalg.%s: %s", name, rest);
}

/* Before the call: run the window, so that the launch runs alone in its
 * wave (a lone large matrix then uses every core: ops_linalg.c). */
static void start(lua_State *L, const char *fn) {
  ty_runtime *rt = tl_rt(L);
  ty_status st = ty_flush(rt);
  if (st != TY_OK) tl_fail(L, rt, fn, st);
}

/* After the call: run the window (the errors of LAPACK are raised here). */
static void finish(lua_State *L, ty_runtime *rt, const char *fn, ty_status st, int nout) {
  if (st == TY_OK) st = ty_flush(rt);
  if (st != TY_OK) fail(L, rt, fn, st);
  for (int i = nout; i >= 1; i--) tl_created(L, *(ty_store **)lua_touserdata(L, -i));
}

/* The value at position `pos` or option `key` (not both): its stack index,
 * or 0 when neither is given. */
static int pos_or_opt(lua_State *L, const tl_sig *s, int pos, const char *key) {
  int opt = 0;
  if (lua_type(L, TL_OPTS(s)) == LUA_TTABLE) {
    lua_getfield(L, TL_OPTS(s), key);
    if (!lua_isnil(L, -1)) opt = lua_gettop(L);
    else lua_pop(L, 1);
  }
  if (!lua_isnil(L, pos)) {
    if (opt) tl_argerror(L, s, "%s is given twice (argument %d and option %s)", key, pos, key);
    return pos;
  }
  return opt;
}

#define SIG(name, min, max, opts, forms) \
  static const tl_sig sig_##name = {FN(#name), min, max, opts, true, forms}

SIG(solve, 2, 2, "", "tycho.linalg.solve(a, b)");
SIG(inv, 1, 1, "", "tycho.linalg.inv(a)");
SIG(det, 1, 1, "", "tycho.linalg.det(a)");
SIG(slogdet, 1, 1, "", "tycho.linalg.slogdet(a): returns sign, logdet");
SIG(cholesky, 1, 1, "", "tycho.linalg.cholesky(a) (the lower factor)");
SIG(qr, 1, 2, "mode",
    "tycho.linalg.qr(a [, mode]) (mode \"reduced\" (default), \"complete\" or \"r\"): returns q, r "
    "(r alone for mode \"r\")");
SIG(svd, 1, 3, "full_matrices compute_uv",
    "tycho.linalg.svd(a [, full_matrices [, compute_uv]]) or with options {full_matrices = bool, "
    "compute_uv = bool}: returns u, s, vh (s alone when compute_uv is false)");
SIG(eigh, 1, 2, "UPLO", "tycho.linalg.eigh(a [, UPLO]) (UPLO \"L\" (default) or \"U\"): returns w, v");
SIG(eigvalsh, 1, 2, "UPLO", "tycho.linalg.eigvalsh(a [, UPLO]) (UPLO \"L\" (default) or \"U\")");
SIG(lstsq, 2, 3, "rcond",
    "tycho.linalg.lstsq(a, b [, rcond]) (rcond nil: eps * max(m, n)): returns x, residuals, rank, s");
SIG(pinv, 1, 2, "rcond", "tycho.linalg.pinv(a [, rcond]) (default 1e-15)");
SIG(matrix_rank, 1, 2, "tol", "tycho.linalg.matrix_rank(a [, tol]) (tol nil: S.max() * max(M, N) * eps)");
SIG(norm, 1, 4, "ord axis keepdims",
    "tycho.linalg.norm(x [, ord [, axis [, keepdims]]]) or with options {ord = ..., axis = k | {k1, "
    "k2}, keepdims = bool}; ord nil, a number, math.huge, -math.huge, \"fro\" or \"nuc\"");

static int l_solve(lua_State *L) {
  const tl_sig *s = &sig_solve;
  tl_args(L, s);
  start(L, s->fn);
  ty_store *a = tl_checkstore(L, 1, s->fn, "a"), *b = tl_checkstore(L, 2, s->fn, "b");
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_linalg_solve(rt, a, b, slot));
  finish(L, rt, s->fn, st, 1);
  return 1;
}

/* inv, det, cholesky: one store in, one out */
static int one(lua_State *L, const tl_sig *s, ty_status (*f)(ty_runtime *, ty_store *, ty_store **)) {
  tl_args(L, s);
  start(L, s->fn);
  ty_store *a = tl_checkstore(L, 1, s->fn, "a");
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, f(rt, a, slot));
  finish(L, rt, s->fn, st, 1);
  return 1;
}
static int l_inv(lua_State *L) { return one(L, &sig_inv, ty_linalg_inv); }
static int l_det(lua_State *L) { return one(L, &sig_det, ty_linalg_det); }
static int l_cholesky(lua_State *L) { return one(L, &sig_cholesky, ty_linalg_cholesky); }

static int l_slogdet(lua_State *L) {
  const tl_sig *s = &sig_slogdet;
  tl_args(L, s);
  start(L, s->fn);
  ty_store *a = tl_checkstore(L, 1, s->fn, "a");
  ty_runtime *rt = tl_rt(L);
  ty_store **sign = tl_newslot(L), **logdet = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_linalg_slogdet(rt, a, sign, logdet));
  finish(L, rt, s->fn, st, 2);
  return 2;
}

static int l_qr(lua_State *L) {
  const tl_sig *s = &sig_qr;
  tl_args(L, s);
  start(L, s->fn);
  ty_store *a = tl_checkstore(L, 1, s->fn, "a");
  int m = pos_or_opt(L, s, 2, "mode");
  ty_qr_mode mode = TY_QR_REDUCED;
  if (m) {
    const char *t = lua_type(L, m) == LUA_TSTRING ? lua_tostring(L, m) : NULL;
    if (t && strcmp(t, "reduced") == 0) mode = TY_QR_REDUCED;
    else if (t && strcmp(t, "complete") == 0) mode = TY_QR_COMPLETE;
    else if (t && strcmp(t, "r") == 0) mode = TY_QR_R;
    else tl_argerror(L, s, "mode must be \"reduced\", \"complete\" or \"r\", got %s", luaL_tolstring(L, m, NULL));
  }
  ty_runtime *rt = tl_rt(L);
  ty_store **q = mode == TY_QR_R ? NULL : tl_newslot(L), **r = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_linalg_qr(rt, a, mode, q, r));
  finish(L, rt, s->fn, st, q ? 2 : 1);
  return q ? 2 : 1;
}

static bool bool_arg(lua_State *L, const tl_sig *s, int pos, const char *key, bool def) {
  int i = pos_or_opt(L, s, pos, key);
  if (!i) return def;
  if (!lua_isboolean(L, i)) tl_argerror(L, s, "%s must be a boolean, got %s", key, tl_typename(L, i));
  return lua_toboolean(L, i);
}

static int l_svd(lua_State *L) {
  const tl_sig *s = &sig_svd;
  tl_args(L, s);
  start(L, s->fn);
  ty_store *a = tl_checkstore(L, 1, s->fn, "a");
  bool full = bool_arg(L, s, 2, "full_matrices", true), uv = bool_arg(L, s, 3, "compute_uv", true);
  ty_runtime *rt = tl_rt(L);
  ty_store **u = uv ? tl_newslot(L) : NULL, **sv = tl_newslot(L), **vh = uv ? tl_newslot(L) : NULL;
  ty_status st;
  TL_TRY(L, rt, st, ty_linalg_svd(rt, a, full, u, sv, vh));
  finish(L, rt, s->fn, st, uv ? 3 : 1);
  return uv ? 3 : 1;
}

static bool uplo_arg(lua_State *L, const tl_sig *s) {
  int i = pos_or_opt(L, s, 2, "UPLO");
  if (!i) return true;
  const char *t = lua_type(L, i) == LUA_TSTRING ? lua_tostring(L, i) : NULL;
  if (t && (strcmp(t, "L") == 0 || strcmp(t, "U") == 0)) return t[0] == 'L';
  return tl_argerror(L, s, "UPLO must be \"L\" or \"U\", got %s", luaL_tolstring(L, i, NULL));
}

static int l_eigh(lua_State *L) {
  const tl_sig *s = &sig_eigh;
  tl_args(L, s);
  start(L, s->fn);
  ty_store *a = tl_checkstore(L, 1, s->fn, "a");
  bool lower = uplo_arg(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store **w = tl_newslot(L), **v = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_linalg_eigh(rt, a, lower, w, v));
  finish(L, rt, s->fn, st, 2);
  return 2;
}

static int l_eigvalsh(lua_State *L) {
  const tl_sig *s = &sig_eigvalsh;
  tl_args(L, s);
  start(L, s->fn);
  ty_store *a = tl_checkstore(L, 1, s->fn, "a");
  bool lower = uplo_arg(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store **w = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_linalg_eigh(rt, a, lower, w, NULL));
  finish(L, rt, s->fn, st, 1);
  return 1;
}

/* A number at position pos or option key; def when neither (or nil). */
static double num_arg(lua_State *L, const tl_sig *s, int pos, const char *key, double def) {
  int i = pos_or_opt(L, s, pos, key);
  if (!i) return def;
  if (!lua_isnumber(L, i) || lua_type(L, i) != LUA_TNUMBER)
    tl_argerror(L, s, "%s must be a number, got %s", key, tl_typename(L, i));
  return lua_tonumber(L, i);
}

static int l_lstsq(lua_State *L) {
  const tl_sig *s = &sig_lstsq;
  tl_args(L, s);
  start(L, s->fn);
  ty_store *a = tl_checkstore(L, 1, s->fn, "a"), *b = tl_checkstore(L, 2, s->fn, "b");
  double rcond = num_arg(L, s, 3, "rcond", NAN);
  ty_runtime *rt = tl_rt(L);
  int top = lua_gettop(L);
  ty_store **x = tl_newslot(L), **res = tl_newslot(L), **rank = tl_newslot(L), **sv = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_linalg_lstsq(rt, a, b, rcond, x, res, rank, sv));
  finish(L, rt, s->fn, st, 4);
  ty_value r;
  st = ty_item(rt, *rank, &r);
  if (st != TY_OK) return fail(L, rt, s->fn, st);
  const int64_t m = ty_store_shape(a)[0], n = ty_store_shape(a)[1];
  if (r.i < n || m <= n) { /* numpy: no residuals then, an empty store */
    ty_store *e = NULL;
    int64_t zero = 0;
    st = ty_store_create(rt, ty_store_dtype(*res), 1, &zero, &e);
    if (st != TY_OK) return fail(L, rt, s->fn, st);
    ty_store_release(*res);
    *res = e;
  }
  lua_pushinteger(L, (lua_Integer)r.i);
  lua_replace(L, top + 3);
  return 4;
}

static int l_pinv(lua_State *L) {
  const tl_sig *s = &sig_pinv;
  tl_args(L, s);
  start(L, s->fn);
  ty_store *a = tl_checkstore(L, 1, s->fn, "a");
  double rcond = num_arg(L, s, 2, "rcond", 1e-15);
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_linalg_pinv(rt, a, rcond, slot));
  finish(L, rt, s->fn, st, 1);
  return 1;
}

/* numpy: a 0-d or 1-D x has rank 1 unless every element is 0. */
static int l_matrix_rank(lua_State *L) {
  const tl_sig *s = &sig_matrix_rank;
  tl_args(L, s);
  start(L, s->fn);
  ty_store *a = tl_checkstore(L, 1, s->fn, "A");
  double tol = num_arg(L, s, 2, "tol", NAN);
  ty_runtime *rt = tl_rt(L);
  ty_status st;
  if (ty_store_ndim(a) < 2) {
    ty_store *z = NULL, *nz = NULL, *any = NULL;
    ty_value v = {0};
    st = ty_scalar_i64(rt, TY_I64, 0, &z);
    if (!st) st = ty_binary(rt, TY_OP_NE, a, z, &nz);
    if (!st) st = ty_reduce(rt, TY_RED_MAX, nz, -1, &any);
    if (!st && ty_store_size(a) > 0) st = ty_item(rt, any, &v);
    ty_store_release(z);
    ty_store_release(nz);
    ty_store_release(any);
    if (st) return fail(L, rt, s->fn, st);
    lua_pushinteger(L, ty_store_size(a) > 0 && v.i ? 1 : 0);
    return 1;
  }
  ty_store **slot = tl_newslot(L);
  TL_TRY(L, rt, st, ty_linalg_matrix_rank(rt, a, tol, slot));
  finish(L, rt, s->fn, st, 1);
  return 1;
}

/* norm: checked here, computed by the Lua function in upvalue 2 with (x,
 * ord, axes (a list of 1-based axes, or nil), keepdims). */
static int l_norm(lua_State *L) {
  const tl_sig *s = &sig_norm;
  tl_args(L, s);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  const int nd = ty_store_ndim(x);
  int oi = pos_or_opt(L, s, 2, "ord"), ai = pos_or_opt(L, s, 3, "axis");
  bool keep = bool_arg(L, s, 4, "keepdims", false);
  if (oi && lua_type(L, oi) != LUA_TNUMBER &&
      !(lua_type(L, oi) == LUA_TSTRING &&
        (strcmp(lua_tostring(L, oi), "fro") == 0 || strcmp(lua_tostring(L, oi), "nuc") == 0)))
    tl_argerror(L, s, "ord must be a number, \"fro\" or \"nuc\", got %s", luaL_tolstring(L, oi, NULL));
  lua_pushvalue(L, lua_upvalueindex(2));
  lua_pushvalue(L, 1);
  if (oi) lua_pushvalue(L, oi);
  else lua_pushnil(L);
  if (ai) {
    int k = 0;
    int64_t ax[2];
    if (lua_type(L, ai) == LUA_TTABLE) {
      k = (int)luaL_len(L, ai);
      if (k < 1 || k > 2) tl_argerror(L, s, "axis must be one axis or a list of 2, got %d", k);
      for (int j = 0; j < k; j++) {
        lua_geti(L, ai, j + 1);
        ax[j] = tl_checkint(L, -1, s->fn, "axis");
        lua_pop(L, 1);
      }
    } else {
      k = 1;
      ax[0] = tl_checkint(L, ai, s->fn, "axis");
    }
    lua_createtable(L, k, 0);
    for (int j = 0; j < k; j++) {
      int64_t a = ax[j] < 0 ? ax[j] + nd + 1 : ax[j];
      if (a < 1 || a > nd)
        tl_error(L, s->fn, "axis %lld is out of range for a store of rank %d", (long long)ax[j], nd);
      lua_pushinteger(L, a);
      lua_rawseti(L, -2, j + 1);
    }
    if (k == 2) {
      lua_geti(L, -1, 1);
      lua_geti(L, -2, 2);
      if (lua_rawequal(L, -1, -2)) tl_error(L, s->fn, "duplicate axes given");
      lua_pop(L, 2);
    }
  } else {
    lua_pushnil(L);
  }
  lua_pushboolean(L, keep);
  lua_call(L, 4, 1);
  return 1;
}

/* norm's arithmetic: numpy's linalg.norm, with x, ord, axes (1-based list
 * or nil) and keepdims checked by l_norm. Integer x is computed in f64. */
static const char norm_src[] =
    "local tycho = ...\n"
    "local inf = math.huge\n"
    "local function keep(r, x, axes)\n"
    "  local shape = x.shape\n"
    "  for _, a in ipairs(axes) do shape[a] = 1 end\n"
    "  return r:reshape(shape)\n"
    "end\n"
    "local function svals(x, r, c)\n"
    "  local nd = x.ndim\n"
    "  local y = tycho.moveaxis(x, {r, c}, {nd - 1, nd})\n"
    "  return tycho.linalg.svd(y, {compute_uv = false})\n"
    "end\n"
    "return function(x, ord, axes, keepdims)\n"
    "  local dt = x.dtype\n"
    "  if dt ~= 'f64' and dt ~= 'f32' then x = x:astype('f64') end\n"
    "  local nd = x.ndim\n"
    "  if axes == nil then\n"
    "    if ord == nil or (ord == 'fro' and nd == 2) or (ord == 2 and nd == 1) then\n"
    "      local r = tycho.sqrt((x * x):sum())\n"
    "      if keepdims then local s = {} for i = 1, nd do s[i] = 1 end r = r:reshape(s) end\n"
    "      return r\n"
    "    end\n"
    "    if nd == 1 then axes = {1} elseif nd == 2 then axes = {1, 2}\n"
    "    else error('tycho.linalg.norm: improper number of dimensions to norm (' .. nd .. '): give axis', 0) end\n"
    "  end\n"
    "  local r\n"
    "  if #axes == 1 then\n"
    "    local a = axes[1]\n"
    "    if type(ord) == 'string' then error('tycho.linalg.norm: invalid norm order \"' .. ord .. '\" for vectors', 0) end\n"
    "    if ord == nil or ord == 2 then r = tycho.sqrt((x * x):sum(a))\n"
    "    elseif ord == inf then r = tycho.abs(x):max(a)\n"
    "    elseif ord == -inf then r = tycho.abs(x):min(a)\n"
    "    elseif ord == 0 then r = tycho.ne(x, 0):sum(a):astype(x.dtype)\n"
    "    elseif ord == 1 then r = tycho.abs(x):sum(a)\n"
    "    else r = (tycho.abs(x) ^ ord):sum(a) ^ (1 / ord) end\n"
    "  else\n"
    "    local ra, ca = axes[1], axes[2]\n"
    "    if ord == 2 then r = svals(x, ra, ca):max(-1)\n"
    "    elseif ord == -2 then r = svals(x, ra, ca):min(-1)\n"
    "    elseif ord == 'nuc' then r = svals(x, ra, ca):sum(-1)\n"
    "    elseif ord == nil or ord == 'fro' then r = tycho.sqrt((x * x):sum({ra, ca}))\n"
    "    elseif ord == 1 or ord == -1 then\n"
    "      if ca > ra then ca = ca - 1 end\n"
    "      local s = tycho.abs(x):sum(ra)\n"
    "      r = ord == 1 and s:max(ca) or s:min(ca)\n"
    "    elseif ord == inf or ord == -inf then\n"
    "      if ra > ca then ra = ra - 1 end\n"
    "      local s = tycho.abs(x):sum(ca)\n"
    "      r = ord == inf and s:max(ra) or s:min(ra)\n"
    "    else error('tycho.linalg.norm: invalid norm order ' .. tostring(ord) .. ' for matrices', 0) end\n"
    "  end\n"
    "  if keepdims then r = keep(r, x, axes) end\n"
    "  return r\n"
    "end\n";

static const luaL_Reg linalg_funcs[] = {
    {"solve", l_solve},     {"inv", l_inv},       {"det", l_det},
    {"slogdet", l_slogdet}, {"cholesky", l_cholesky}, {"qr", l_qr},
    {"svd", l_svd},         {"eigh", l_eigh},     {"eigvalsh", l_eigvalsh},
    {"lstsq", l_lstsq},     {"pinv", l_pinv},     {"matrix_rank", l_matrix_rank},
    {"norm", l_norm},       {NULL, NULL}};

/* tycho.linalg: a table of the functions (upvalue 1 the box, 2 the norm
 * function of the chunk). */
void tl_linalg_open(lua_State *L, int module_index) {
  module_index = lua_absindex(L, module_index);
  lua_newtable(L);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
  if (luaL_loadbuffer(L, norm_src, sizeof norm_src - 1, "=tycho.linalg.norm") != LUA_OK) lua_error(L);
  lua_pushvalue(L, module_index);
  lua_call(L, 1, 1);
  luaL_setfuncs(L, linalg_funcs, 2);
  lua_setfield(L, module_index, "linalg");
}
