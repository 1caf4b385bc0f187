/*
 * lbuild.c — numpy's functions that build a store from a shape or from
 * another store (issue 17, section 2): zeros_like ones_like full_like
 * empty_like, eye identity diag tri tril triu, indices meshgrid, and
 * repetition: repeat (also tycho.rep: `repeat` is a Lua keyword) tile pad.
 *
 * Like lshape.c (whose file comment gives the conventions), everything is
 * made of existing launches: fills, copies into views of a new store (one
 * broadcast copy for repeat and tile: the result viewed with the repeated
 * axis split out), element-wise compares for the triangles. indices() gives
 * 1-based positions, as every position in tycho; meshgrid returns one value
 * per input (numpy's tuple, unpacked).
 */
#include "lshape.h"

#include <string.h>

/* ---- creation -------------------------------------------------------------------------------- */

static const tl_sig sig_zeros_like = {"zeros_like", 1, 2, "", false, "tycho.zeros_like(x [, dtype]), x:zeros_like(...)"};
static const tl_sig sig_ones_like = {"ones_like", 1, 2, "", false, "tycho.ones_like(x [, dtype]), x:ones_like(...)"};
static const tl_sig sig_empty_like = {"empty_like", 1, 2, "", false, "tycho.empty_like(x [, dtype]), x:empty_like(...)"};
static const tl_sig sig_full_like = {"full_like", 2, 3, "", false, "tycho.full_like(x, value [, dtype]), x:full_like(...)"};
/* value: 0, 1, the Lua value at vidx, or none (empty) */
static int like(lua_State *L, const tl_sig *s, int vidx, double v) {
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  int didx = vidx ? 3 : 2;
  if (vidx) {
    int tp = lua_type(L, vidx);
    if (tp != LUA_TNUMBER && tp != LUA_TBOOLEAN)
      return tl_error(L, s->fn, "value must be a number or a boolean, got %s", tl_typename(L, vidx));
  }
  ty_dtype t = tl_optdtype(L, didx, s->fn, ty_store_dtype(x));
  ty_store *res = newstore(L, rt, s->fn, t, ty_store_ndim(x), ty_store_shape(x));
  if (vidx) {
    tl_fill_value(L, rt, res, vidx, s->fn);
  } else if (v == v) {
    ty_status st;
    TL_TRY(L, rt, st, ty_fill(rt, res, v));
    if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  }
  return 1;
}
static int l_zeros_like(lua_State *L) { return like(L, &sig_zeros_like, 0, 0.0); }
static int l_ones_like(lua_State *L) { return like(L, &sig_ones_like, 0, 1.0); }
static int l_empty_like(lua_State *L) { return like(L, &sig_empty_like, 0, __builtin_nan("")); }
static int l_full_like(lua_State *L) { return like(L, &sig_full_like, 2, 0.0); }

/* The k-th diagonal of a 2-D store as a view (numpy's offset convention). */
static ty_store *diag_view(lua_State *L, ty_runtime *rt, const char *fn, ty_store *x, int64_t k) {
  if (k != 0) {
    int dim = k > 0 ? 1 : 0;
    int64_t n = ty_store_shape(x)[dim];
    int64_t start = k > 0 ? (k > n ? n : k) : (k < -n ? n : -k);
    x = slice(L, rt, fn, x, dim, start, n);
  }
  ty_store **v = newslot(L);
  CALL(L, rt, fn, ty_store_diagonal(rt, x, v));
  return *v;
}

static int64_t count_arg(lua_State *L, int idx, const char *fn, const char *what) {
  int64_t n = tl_checkint(L, idx, fn, what);
  if (n < 0) tl_error(L, fn, "%s must be non-negative, got %lld", what, (long long)n);
  return n;
}

static const tl_sig sig_eye = {"eye", 1, 4, "", false, "tycho.eye(n [, m [, k]] [, dtype])"};
static const tl_sig sig_identity = {"identity", 1, 2, "", false, "tycho.identity(n [, dtype])"};
/* The (n, m) store with ones on diagonal k. */
static int eye(lua_State *L, ty_runtime *rt, const char *fn, int64_t n, int64_t m, int64_t k,
               ty_dtype t) {
  ty_store **res = newslot(L);
  int ri = lua_gettop(L);
  CALL(L, rt, fn, ty_full(rt, t, 2, (const int64_t[2]){n, m}, 0.0, res));
  tl_created(L, *res);
  ty_store *d = diag_view(L, rt, fn, *res, k);
  if (ty_store_size(d) > 0) {
    ty_status st;
    TL_TRY(L, rt, st, ty_fill(rt, d, 1.0));
    if (st != TY_OK) return tl_fail(L, rt, fn, st);
  }
  lua_pushvalue(L, ri);
  return 1;
}
/* (n [, m [, k]] [, dtype]): trailing arguments optional; a string ends them */
static void n_m_k_dtype(lua_State *L, const char *fn, int64_t *n, int64_t *m, int64_t *k,
                        ty_dtype *t) {
  int top = 4;
  while (top > 1 && lua_isnil(L, top)) top--;
  *t = TY_F64;
  if (top > 1 && lua_type(L, top) == LUA_TSTRING) *t = tl_optdtype(L, top--, fn, TY_F64);
  *n = count_arg(L, 1, fn, "n");
  *m = top >= 2 && !lua_isnil(L, 2) ? count_arg(L, 2, fn, "m") : *n;
  *k = top >= 3 && !lua_isnil(L, 3) ? tl_checkint(L, 3, fn, "k") : 0;
}
static int l_eye(lua_State *L) {
  tl_args(L, &sig_eye);
  ty_runtime *rt = tl_rt(L);
  int64_t n, m, k;
  ty_dtype t;
  n_m_k_dtype(L, "eye", &n, &m, &k, &t);
  return eye(L, rt, "eye", n, m, k, t);
}
static int l_identity(lua_State *L) {
  tl_args(L, &sig_identity);
  ty_runtime *rt = tl_rt(L);
  int64_t n = count_arg(L, 1, "identity", "n");
  return eye(L, rt, "identity", n, n, 0, tl_optdtype(L, 2, "identity", TY_F64));
}

static const tl_sig sig_diag = {"diag", 1, 2, "", false,
                                "tycho.diag(x [, k]), x:diag(...): 1-D x -> a 2-D store with x "
                                "on diagonal k; 2-D x -> its diagonal k (a view)"};
static int l_diag(lua_State *L) {
  const tl_sig *s = &sig_diag;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  int64_t k = lua_isnil(L, 2) ? 0 : tl_checkint(L, 2, s->fn, "k");
  if (ty_store_ndim(x) == 2) {
    diag_view(L, rt, s->fn, x, k);
    return 1;
  }
  if (ty_store_ndim(x) != 1) shape_error(L, s->fn, "x must be 1-D or 2-D", x);
  if (k < -INT64_MAX) k = -INT64_MAX; /* |k| below */
  int64_t n = size_add(L, s->fn, ty_store_shape(x)[0], k < 0 ? -k : k);
  ty_store **res = newslot(L);
  CALL(L, rt, s->fn, ty_full(rt, ty_store_dtype(x), 2, (const int64_t[2]){n, n}, 0.0, res));
  tl_created(L, *res);
  int base = lua_gettop(L);
  ty_store *d = diag_view(L, rt, s->fn, *res, k);
  copy_into(L, rt, s->fn, d, x);
  lua_settop(L, base);
  return 1;
}

/* A bool (n, m) store: j - i <= k (numpy's tri), 0-based i, j. */
static ty_store *tri_mask(lua_State *L, ty_runtime *rt, const char *fn, int64_t n, int64_t m,
                          int64_t k) {
  /* j - i lies in [-(n - 1), m - 1]: a k outside [-n, m] changes nothing, and
   * clamping it keeps i + k from wrapping */
  if (k < -n) k = -n;
  if (k > m) k = m;
  ty_store **i = newslot(L), **j = newslot(L), **ic = newslot(L), **ik = newslot(L);
  ty_store **mask = newslot(L);
  CALL(L, rt, fn, ty_arange(rt, TY_I64, 0.0, 1.0, n, i));
  CALL(L, rt, fn, ty_arange(rt, TY_I64, 0.0, 1.0, m, j));
  ty_store **iv = newslot(L);
  CALL(L, rt, fn, ty_store_expand(rt, *i, 1, iv));
  CALL(L, rt, fn, ty_scalar_i64(rt, TY_I64, k, ic));
  CALL(L, rt, fn, ty_binary(rt, TY_OP_ADD, *iv, *ic, ik)); /* i + k >= j */
  CALL(L, rt, fn, ty_binary(rt, TY_OP_GE, *ik, *j, mask));
  return *mask; /* anchored below the top */
}

static const tl_sig sig_tri = {"tri", 1, 4, "", false, "tycho.tri(n [, m [, k]] [, dtype])"};
static int l_tri(lua_State *L) {
  const tl_sig *s = &sig_tri;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  int64_t n, m, k;
  ty_dtype t;
  n_m_k_dtype(L, s->fn, &n, &m, &k, &t);
  ty_store *mask = tri_mask(L, rt, s->fn, n, m, k);
  copy_of(L, rt, s->fn, mask, t);
  return 1;
}

static const tl_sig sig_tril = {"tril", 1, 2, "", false, "tycho.tril(x [, k]), x:tril(...)"};
static const tl_sig sig_triu = {"triu", 1, 2, "", false, "tycho.triu(x [, k]), x:triu(...)"};
static int trilu(lua_State *L, const tl_sig *s, bool lower) {
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  int64_t k = lua_isnil(L, 2) ? 0 : tl_checkint(L, 2, s->fn, "k");
  int nd = ty_store_ndim(x);
  if (nd < 2) shape_error(L, s->fn, "x must have at least 2 dimensions", x);
  const int64_t *sh = ty_store_shape(x);
  ty_store *mask = tri_mask(L, rt, s->fn, sh[nd - 2], sh[nd - 1], lower || k == INT64_MIN ? k : k - 1);
  ty_store **zero = newslot(L), **res = newslot(L);
  CALL(L, rt, s->fn, ty_scalar_i64(rt, ty_store_dtype(x), 0, zero));
  if (lower) CALL(L, rt, s->fn, ty_where(rt, mask, x, *zero, res));
  else CALL(L, rt, s->fn, ty_where(rt, mask, *zero, x, res));
  tl_created(L, *res);
  if (ty_store_dtype(*res) != ty_store_dtype(x)) copy_of(L, rt, s->fn, *res, ty_store_dtype(x));
  return 1;
}
static int l_tril(lua_State *L) { return trilu(L, &sig_tril, true); }
static int l_triu(lua_State *L) { return trilu(L, &sig_triu, false); }

static const tl_sig sig_indices = {"indices", 1, 2, "", false,
                                   "tycho.indices(shape [, dtype]): 1-based positions, shape "
                                   "(#shape, ...)"};
static int l_indices(lua_State *L) {
  const tl_sig *s = &sig_indices;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_dtype t = tl_optdtype(L, 2, s->fn, TY_I64);
  int64_t shape[TY_MAX_RANK + 1];
  int nd = tl_checkshape(L, 1, s->fn, shape + 1, false, t);
  if (nd >= TY_MAX_RANK) return tl_error(L, s->fn, "the result would have more than %d dimensions", TY_MAX_RANK);
  shape[0] = nd;
  ty_store *res = newstore(L, rt, s->fn, t, nd + 1, shape);
  int base = lua_gettop(L);
  for (int d = 0; d < nd; d++) {
    ty_store **r = newslot(L), **rv = newslot(L), **dst = newslot(L);
    CALL(L, rt, s->fn, ty_arange(rt, t, 1.0, 1.0, shape[1 + d], r));
    int64_t vs[TY_MAX_RANK];
    for (int e = 0; e < nd; e++) vs[e] = e == d ? shape[1 + d] : 1;
    CALL(L, rt, s->fn, ty_store_reshape(rt, *r, nd, vs, rv));
    CALL(L, rt, s->fn, ty_store_select(rt, res, 0, d, dst));
    copy_into(L, rt, s->fn, *dst, *rv);
    lua_settop(L, base);
  }
  return 1;
}

static const tl_sig sig_meshgrid = {"meshgrid", 0, TY_MAX_RANK, "indexing", false,
                                    "tycho.meshgrid(x1, x2, ... [, {indexing = \"xy\" | \"ij\"}]): "
                                    "one store per input"};
static int l_meshgrid(lua_State *L) {
  const tl_sig *s = &sig_meshgrid;
  int n = tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  bool xy = true;
  if (lua_istable(L, TL_OPTS(s))) {
    lua_getfield(L, TL_OPTS(s), "indexing");
    if (!lua_isnil(L, -1)) {
      const char *ix = lua_tostring(L, -1);
      if (!ix || (strcmp(ix, "xy") && strcmp(ix, "ij")))
        return tl_argerror(L, s, "option indexing must be \"xy\" or \"ij\"");
      xy = ix[0] == 'x';
    }
    lua_pop(L, 1);
  }
  int64_t shape[TY_MAX_RANK];
  ty_store *xs[TY_MAX_RANK];
  for (int k = 0; k < n; k++) {
    char what[24];
    snprintf(what, sizeof what, "x%d", k + 1);
    xs[k] = tl_checkstore(L, k + 1, s->fn, what);
    shape[k] = ty_store_size(xs[k]);
  }
  if (xy && n >= 2) {
    int64_t t = shape[0];
    shape[0] = shape[1];
    shape[1] = t;
  }
  luaL_checkstack(L, 4 * n + 8, s->fn);
  int first = lua_gettop(L) + 1;
  for (int k = 0; k < n; k++) {
    ty_store *res = newstore(L, rt, s->fn, ty_store_dtype(xs[k]), n, shape);
    int base = lua_gettop(L);
    int at = xy && n >= 2 && k < 2 ? 1 - k : k; /* the dim x_k runs along */
    int64_t vs[TY_MAX_RANK];
    for (int e = 0; e < n; e++) vs[e] = e == at ? shape[at] : 1;
    ty_store *flat = ravel(L, rt, s->fn, xs[k]);
    ty_store *v = reshape(L, rt, s->fn, flat, n, vs);
    copy_into(L, rt, s->fn, res, v);
    lua_settop(L, base);
  }
  return lua_gettop(L) - first + 1;
}

/* ---- repetition ------------------------------------------------------------------------------ */

static const tl_sig sig_repeat = {"repeat", 2, 3, "", false,
                                  "tycho[\"repeat\"](x, repeats | {r1, r2, ...} | counts_store [, axis]), "
                                  "tycho.rep(...), x:rep(...): no axis = over the elements in C "
                                  "order (1-D)"};
static int l_repeat(lua_State *L) {
  const tl_sig *s = &sig_repeat;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  int axis = 0;
  if (lua_isnil(L, 3)) x = ravel(L, rt, s->fn, x);
  else axis = tl_checkaxis(L, 3, s->fn, "axis", ty_store_ndim(x));
  const int nd = ty_store_ndim(x);
  const int64_t n = ty_store_shape(x)[axis];
  int64_t shape[TY_MAX_RANK + 1];
  memcpy(shape, ty_store_shape(x), sizeof(int64_t) * (size_t)nd);
  if (lua_type(L, 2) == LUA_TNUMBER) {
    int64_t r = count_arg(L, 2, s->fn, "repeats");
    if (nd >= TY_MAX_RANK) return tl_error(L, s->fn, "x has too many dimensions");
    shape[axis] = size_mul(L, s->fn, n, r);
    ty_store *res = newstore(L, rt, s->fn, ty_store_dtype(x), nd, shape);
    int top = lua_gettop(L);
    if (ty_store_size(res) > 0) {
      /* res viewed as (..., n, r, ...) gets x (..., n, 1, ...) broadcast: one copy */
      int64_t split[TY_MAX_RANK + 1];
      int k = 0;
      for (int d = 0; d < nd; d++) {
        split[k++] = d == axis ? n : shape[d];
        if (d == axis) split[k++] = r;
      }
      ty_store *rv = reshape(L, rt, s->fn, res, nd + 1, split);
      ty_store **xv = newslot(L);
      CALL(L, rt, s->fn, ty_store_expand(rt, x, axis + 1, xv));
      copy_into(L, rt, s->fn, rv, *xv);
    }
    lua_settop(L, top);
    return 1;
  }
  ty_store *counts = tl_teststore(L, 2, s->fn);
  if (counts) { /* a 1-D integer store of counts, as numpy's array: its values */
    if (ty_store_ndim(counts) != 1 || ty_dtype_is_float(ty_store_dtype(counts)))
      shape_error(L, s->fn, "repeats given as a store must be 1-D with an integer dtype", counts);
    lua_getfield(L, 2, "totable");
    lua_pushvalue(L, 2);
    lua_call(L, 1, 1);
    lua_replace(L, 2);
  }
  if (!lua_istable(L, 2))
    return tl_argerror(L, s, "repeats must be a count or a list of counts, got %s",
                       tl_typename(L, 2));
  if ((int64_t)lua_rawlen(L, 2) != n)
    return tl_error(L, s->fn, "repeats has %llu counts for an axis of length %lld",
                    (unsigned long long)lua_rawlen(L, 2), (long long)n);
  int64_t total = 0;
  for (int64_t i = 0; i < n; i++) {
    lua_rawgeti(L, 2, (lua_Integer)i + 1);
    total = size_add(L, s->fn, total, count_arg(L, -1, s->fn, "each count"));
    lua_pop(L, 1);
  }
  shape[axis] = total;
  ty_store *res = newstore(L, rt, s->fn, ty_store_dtype(x), nd, shape);
  int top = lua_gettop(L);
  int64_t at = 0;
  for (int64_t i = 0; i < n; i++) { /* one broadcast copy per element with a count */
    lua_rawgeti(L, 2, (lua_Integer)i + 1);
    int64_t c = lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (c == 0) continue;
    if (ty_store_size(res) > 0)
      copy_into(L, rt, s->fn, slice(L, rt, s->fn, res, axis, at, at + c),
                slice(L, rt, s->fn, x, axis, i, i + 1));
    lua_settop(L, top);
    at += c;
  }
  return 1;
}

static const tl_sig sig_tile = {"tile", 2, 2, "", false, "tycho.tile(x, reps | {r1, r2, ...}), x:tile(...)"};
static int l_tile(lua_State *L) {
  const tl_sig *s = &sig_tile;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  int64_t reps[TY_MAX_RANK];
  int nr = tl_checkshape(L, 2, s->fn, reps, false, TY_U8);
  int xd = ty_store_ndim(x), nd = nr > xd ? nr : xd;
  if (2 * nd > TY_MAX_RANK)
    return tl_error(L, s->fn, "tile works on results of at most %d dimensions", TY_MAX_RANK / 2);
  int64_t r[TY_MAX_RANK], xs[TY_MAX_RANK], il[TY_MAX_RANK], out[TY_MAX_RANK];
  for (int d = 0; d < nd; d++) {
    r[d] = d < nd - nr ? 1 : reps[d - (nd - nr)];
    xs[d] = d < nd - xd ? 1 : ty_store_shape(x)[d - (nd - xd)];
    il[2 * d] = r[d];
    il[2 * d + 1] = xs[d];
    out[d] = size_mul(L, s->fn, r[d], xs[d]);
  }
  /* res as (r1, s1, r2, s2, ...) gets x as (1, s1, 1, s2, ...) broadcast: one copy */
  ty_store *res = newstore(L, rt, s->fn, ty_store_dtype(x), 2 * nd, il);
  int top = lua_gettop(L);
  ty_store *xv = x;
  while (ty_store_ndim(xv) < nd) {
    ty_store **v = newslot(L);
    CALL(L, rt, s->fn, ty_store_expand(rt, xv, 0, v));
    xv = *v;
  }
  for (int d = 0; d < nd; d++) {
    ty_store **v = newslot(L);
    CALL(L, rt, s->fn, ty_store_expand(rt, xv, 2 * d, v));
    xv = *v;
  }
  if (ty_store_size(res) > 0) copy_into(L, rt, s->fn, res, xv);
  lua_settop(L, top);
  reshape(L, rt, s->fn, res, nd, out);
  return 1;
}

static const tl_sig sig_pad = {"pad", 2, 2, "mode constant_values", false,
                               "tycho.pad(x, width | {before, after} | {{b1, a1}, {b2, a2}, ...} "
                               "[, {mode = \"constant\" | \"edge\" | \"wrap\", constant_values = v}]), "
                               "x:pad(...)"};
static int64_t pad_entry(lua_State *L, int idx, const tl_sig *s) {
  int64_t v = tl_checkint(L, idx, s->fn, "pad width");
  if (v < 0) tl_error(L, s->fn, "pad widths must be non-negative, got %lld", (long long)v);
  return v;
}
static int l_pad(lua_State *L) {
  const tl_sig *s = &sig_pad;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  const int nd = ty_store_ndim(x);
  int64_t before[TY_MAX_RANK], after[TY_MAX_RANK];
  /* width forms: n; {b, a}; {{b1, a1}, ...} (one pair per axis) */
  if (lua_type(L, 2) == LUA_TNUMBER) {
    int64_t w = pad_entry(L, 2, s);
    for (int d = 0; d < nd; d++) before[d] = after[d] = w;
  } else if (lua_istable(L, 2)) {
    lua_rawgeti(L, 2, 1);
    bool pairs = lua_istable(L, -1);
    lua_pop(L, 1);
    if (!pairs) {
      lua_Unsigned m = lua_rawlen(L, 2);
      if (m != 1 && m != 2) return tl_argerror(L, s, "width {before, after} has 2 entries, got %llu", (unsigned long long)m);
      lua_rawgeti(L, 2, 1);
      lua_rawgeti(L, 2, (lua_Integer)m);
      int64_t b = pad_entry(L, -2, s), a = pad_entry(L, -1, s);
      lua_pop(L, 2);
      for (int d = 0; d < nd; d++) before[d] = b, after[d] = a;
    } else {
      if (lua_rawlen(L, 2) != (lua_Unsigned)nd)
        return tl_error(L, s->fn, "width lists %llu pairs for a store of rank %d",
                        (unsigned long long)lua_rawlen(L, 2), nd);
      for (int d = 0; d < nd; d++) {
        lua_rawgeti(L, 2, d + 1);
        if (!lua_istable(L, -1) || lua_rawlen(L, -1) != 2)
          return tl_argerror(L, s, "width entry %d must be {before, after}", d + 1);
        lua_rawgeti(L, -1, 1);
        lua_rawgeti(L, -2, 2);
        before[d] = pad_entry(L, -2, s);
        after[d] = pad_entry(L, -1, s);
        lua_pop(L, 3);
      }
    }
  } else {
    return tl_argerror(L, s, "width must be a number or a table, got %s", tl_typename(L, 2));
  }
  int mode = 0; /* 0 constant, 1 edge, 2 wrap */
  int cv = 0;   /* stack index of constant_values */
  if (lua_istable(L, TL_OPTS(s))) {
    lua_getfield(L, TL_OPTS(s), "mode");
    if (!lua_isnil(L, -1)) {
      const char *m = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
      if (!strcmp(m, "constant")) mode = 0;
      else if (!strcmp(m, "edge")) mode = 1;
      else if (!strcmp(m, "wrap")) mode = 2;
      else return tl_argerror(L, s, "option mode must be \"constant\", \"edge\" or \"wrap\"");
    }
    lua_getfield(L, TL_OPTS(s), "constant_values");
    if (!lua_isnil(L, -1)) {
      int tp = lua_type(L, -1);
      if (tp != LUA_TNUMBER && tp != LUA_TBOOLEAN)
        return tl_argerror(L, s, "option constant_values must be a number, got %s", tl_typename(L, -1));
      if (mode != 0) return tl_argerror(L, s, "constant_values goes with mode \"constant\"");
      cv = lua_gettop(L);
    }
  }
  int64_t shape[TY_MAX_RANK];
  for (int d = 0; d < nd; d++) {
    const int64_t n = ty_store_shape(x)[d];
    if (mode != 0 && n == 0 && before[d] + after[d] > 0)
      return tl_error(L, s->fn, "cannot pad axis %d of length 0 in mode \"%s\"", d + 1,
                      mode == 1 ? "edge" : "wrap");
    shape[d] = size_add(L, s->fn, size_add(L, s->fn, n, before[d]), after[d]);
  }
  ty_store *res = newstore(L, rt, s->fn, ty_store_dtype(x), nd, shape);
  int top = lua_gettop(L);
  if (mode == 0) {
    if (cv) tl_fill_value(L, rt, res, cv, s->fn);
    else {
      ty_status st;
      TL_TRY(L, rt, st, ty_fill(rt, res, 0.0));
      if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
    }
  }
  if (ty_store_size(x) > 0) {
    ty_store *mid = res;
    for (int d = 0; d < nd; d++) mid = slice(L, rt, s->fn, mid, d, before[d], before[d] + ty_store_shape(x)[d]);
    copy_into(L, rt, s->fn, mid, x);
  }
  lua_settop(L, top);
  if (mode != 0 && ty_store_size(res) > 0) {
    /* axis by axis over the whole padded store: corners come from the axes before */
    for (int d = 0; d < nd; d++) {
      const int64_t n = ty_store_shape(x)[d], b = before[d], a = after[d];
      if (mode == 1) { /* edge: the first and last element, broadcast */
        if (b) copy_into(L, rt, s->fn, slice(L, rt, s->fn, res, d, 0, b),
                         slice(L, rt, s->fn, res, d, b, b + 1));
        if (a) copy_into(L, rt, s->fn, slice(L, rt, s->fn, res, d, b + n, b + n + a),
                         slice(L, rt, s->fn, res, d, b + n - 1, b + n));
        lua_settop(L, top);
        continue;
      }
      /* wrap: in whole periods of n from the centre outwards, so a pad
       * wider than the axis repeats it (numpy's); one copy per period */
      for (int64_t hi = b; hi > 0; hi -= n) {
        const int64_t lo = hi - n > 0 ? hi - n : 0;
        copy_into(L, rt, s->fn, slice(L, rt, s->fn, res, d, lo, hi),
                  slice(L, rt, s->fn, res, d, b + n - (hi - lo), b + n));
        lua_settop(L, top);
      }
      for (int64_t lo = b + n; lo < b + n + a; lo += n) {
        const int64_t hi = lo + n < b + n + a ? lo + n : b + n + a;
        copy_into(L, rt, s->fn, slice(L, rt, s->fn, res, d, lo, hi),
                  slice(L, rt, s->fn, res, d, b, b + (hi - lo)));
        lua_settop(L, top);
      }
      lua_settop(L, top);
    }
  }
  return 1;
}

static const luaL_Reg build_funcs[] = {
    {"zeros_like", l_zeros_like}, {"ones_like", l_ones_like},
    {"full_like", l_full_like}, {"empty_like", l_empty_like},
    {"eye", l_eye}, {"identity", l_identity},
    {"diag", l_diag}, {"tri", l_tri},
    {"tril", l_tril}, {"triu", l_triu},
    {"indices", l_indices}, {"meshgrid", l_meshgrid},
    {"repeat", l_repeat}, {"rep", l_repeat},
    {"tile", l_tile}, {"pad", l_pad},
    {NULL, NULL}};

/* Functions whose first argument is a store are methods too. */
static const luaL_Reg build_methods[] = {
    {"zeros_like", l_zeros_like}, {"ones_like", l_ones_like},
    {"full_like", l_full_like}, {"empty_like", l_empty_like},
    {"diag", l_diag}, {"tril", l_tril},
    {"triu", l_triu}, {"rep", l_repeat},
    {"tile", l_tile}, {"pad", l_pad},
    {NULL, NULL}};

/* Adds the functions to the module table and the methods to the store
 * metatable's method table (__methods), like tl_extra_open. */
void tl_build_open(lua_State *L, int module_index) {
  module_index = lua_absindex(L, module_index);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
  int box = lua_gettop(L);
  lua_pushvalue(L, module_index);
  lua_pushvalue(L, box);
  luaL_setfuncs(L, build_funcs, 1);
  lua_pop(L, 1);
  luaL_getmetatable(L, TL_STORE);
  if (lua_getfield(L, -1, "__methods") == LUA_TTABLE) {
    lua_pushvalue(L, box);
    luaL_setfuncs(L, build_methods, 1);
  }
  lua_pop(L, 3); /* __methods, metatable, box */
}
