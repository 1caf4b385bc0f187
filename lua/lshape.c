/*
 * lshape.c — numpy's shape functions (issue 17, section 2): joining and
 * splitting (concatenate stack hstack vstack split array_split), scans
 * (cumsum cumprod nancumsum nancumprod diff) and rearranging (flip roll
 * squeeze moveaxis permute_dims ravel flatten broadcast_to). Building stores
 * from shapes or like others (eye ... pad) is lbuild.c, with the helpers
 * both share in lshape.h.
 *
 * Everything here is made of launches the core already has, so explain shows
 * it and every parallel mode gives the same bits: views (slices, selects,
 * transposes, broadcasts, the negative-stride flip of tycho/shape.h), copies
 * into views of a new store (`dst[{...}] = src`) and element-wise ops; the
 * one new task is the scan (runtime/src/ops/ops_shape.c).
 *
 * Conventions (DESIGN.md §6): numpy's names and values; axes are 1-based,
 * negative from the end; positions are 1-based (split points, indices()).
 * Results that numpy returns as a list are Lua lists (split, array_split);
 * meshgrid returns one value per input, as numpy's tuple unpacks
 * (`local X, Y = tycho.meshgrid(x, y)`). Every function declares its forms
 * once in a tl_sig and calls tl_args first.
 *
 * Resources: every intermediate store lives in a slot on the Lua stack
 * (tl_newslot) before the call that makes it, so an error anywhere leaks
 * nothing (tl.h).
 */
#include "lshape.h"

#include <string.h>

#include "tycho/shape.h"

void tl_shape_open(lua_State *L, int module_index);

/* An axis of a rank-nd result that may be one past the end (stack, expand):
 * 1..nd+1 or -(nd+1)..-1 -> 0-based. */
static int new_axis(lua_State *L, int idx, const char *fn, int nd) {
  int64_t a = tl_checkint(L, idx, fn, "axis");
  if (a >= 1 && a <= nd + 1) return (int)(a - 1);
  if (a <= -1 && a >= -(nd + 1)) return (int)(nd + 1 + a);
  return tl_error(L, fn, "axis %lld is out of range for a result of rank %d (1..%d or -%d..-1)",
                  (long long)a, nd + 1, nd + 1, nd + 1);
}

/* ---- joining ------------------------------------------------------------------------------- */

/* The stores of the list at idx, pushed nowhere (the list anchors them). */
static int list_stores(lua_State *L, int idx, const tl_sig *s, ty_store **xs, int cap) {
  if (!lua_istable(L, idx))
    tl_argerror(L, s, "argument 1 must be a list of stores, got %s", tl_typename(L, idx));
  lua_Unsigned n = lua_rawlen(L, idx);
  if (n == 0) tl_argerror(L, s, "need at least one store to join");
  if (n > (lua_Unsigned)cap) tl_argerror(L, s, "at most %d stores, got %llu", cap, (unsigned long long)n);
  for (int k = 0; k < (int)n; k++) {
    lua_rawgeti(L, idx, k + 1);
    char what[32];
    snprintf(what, sizeof what, "element %d of the list", k + 1);
    xs[k] = tl_checkstore(L, -1, s->fn, what);
    lua_pop(L, 1);
  }
  return (int)n;
}

#define MAX_JOIN 4096

/* Push the concatenation of xs along axis (0-based; all of rank nd >= 1). */
static ty_store *concat(lua_State *L, ty_runtime *rt, const char *fn, ty_store **xs, int n,
                        int axis) {
  const int nd = ty_store_ndim(xs[0]);
  int64_t shape[TY_MAX_RANK];
  memcpy(shape, ty_store_shape(xs[0]), sizeof(int64_t) * (size_t)nd);
  ty_dtype t = ty_store_dtype(xs[0]);
  shape[axis] = 0;
  for (int k = 0; k < n; k++) {
    const int64_t *sk = ty_store_shape(xs[k]);
    if (ty_store_ndim(xs[k]) != nd)
      tl_error(L, fn, "all stores must have the same rank: store 1 has %d dimensions, store %d "
               "has %d", nd, k + 1, ty_store_ndim(xs[k]));
    for (int d = 0; d < nd; d++)
      if (d != axis && sk[d] != ty_store_shape(xs[0])[d]) {
        char a[256], b[256];
        tl_shape_str(nd, ty_store_shape(xs[0]), a, sizeof a);
        tl_shape_str(nd, sk, b, sizeof b);
        tl_error(L, fn, "shapes must match except along axis %d: store 1 has shape %s, store %d "
                 "has %s", axis + 1, a, k + 1, b);
      }
    shape[axis] = size_add(L, fn, shape[axis], sk[axis]);
    if (k) t = ty_dtype_promote(t, ty_store_dtype(xs[k]));
  }
  ty_store *res = newstore(L, rt, fn, t, nd, shape);
  int64_t at = 0;
  for (int k = 0; k < n; k++) {
    int64_t len = ty_store_shape(xs[k])[axis];
    if (len == 0 || ty_store_size(xs[k]) == 0) {
      at += len;
      continue;
    }
    ty_store *dst = slice(L, rt, fn, res, axis, at, at + len);
    copy_into(L, rt, fn, dst, xs[k]);
    lua_pop(L, 1);
    at += len;
  }
  return res;
}

static const tl_sig sig_concatenate = {"concatenate", 1, 2, "", false,
                                       "tycho.concatenate({x1, x2, ...} [, axis = 1])"};
static int l_concatenate(lua_State *L) {
  const tl_sig *s = &sig_concatenate;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *xs[MAX_JOIN];
  int n = list_stores(L, 1, s, xs, MAX_JOIN);
  int nd = ty_store_ndim(xs[0]);
  if (nd == 0) return tl_error(L, s->fn, "0-d stores cannot be concatenated (use stack)");
  int axis = lua_isnil(L, 2) ? 0 : tl_checkaxis(L, 2, s->fn, "axis", nd);
  concat(L, rt, s->fn, xs, n, axis);
  return 1;
}

/* Push each store of xs with a new axis at `axis`, then join them there. */
static int stack_at(lua_State *L, ty_runtime *rt, const char *fn, ty_store **xs, int n, int axis) {
  const int nd = ty_store_ndim(xs[0]);
  luaL_checkstack(L, n + 8, fn);
  for (int k = 0; k < n; k++) {
    if (ty_store_ndim(xs[k]) != nd ||
        memcmp(ty_store_shape(xs[k]), ty_store_shape(xs[0]), sizeof(int64_t) * (size_t)nd)) {
      char a[256], b[256];
      tl_shape_str(nd, ty_store_shape(xs[0]), a, sizeof a);
      tl_shape_str(ty_store_ndim(xs[k]), ty_store_shape(xs[k]), b, sizeof b);
      tl_error(L, fn, "all stores must have the same shape: store 1 has %s, store %d has %s", a,
               k + 1, b);
    }
  }
  for (int k = 0; k < n; k++) {
    ty_store **v = newslot(L);
    CALL(L, rt, fn, ty_store_expand(rt, xs[k], axis, v));
    xs[k] = *v;
  }
  concat(L, rt, fn, xs, n, axis);
  return 1;
}

static const tl_sig sig_stack = {"stack", 1, 2, "", false, "tycho.stack({x1, x2, ...} [, axis = 1])"};
static int l_stack(lua_State *L) {
  const tl_sig *s = &sig_stack;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *xs[MAX_JOIN];
  int n = list_stores(L, 1, s, xs, MAX_JOIN);
  int nd = ty_store_ndim(xs[0]);
  if (nd >= TY_MAX_RANK) return tl_error(L, s->fn, "the result would have more than %d dimensions", TY_MAX_RANK);
  int axis = lua_isnil(L, 2) ? 0 : new_axis(L, 2, s->fn, nd);
  return stack_at(L, rt, s->fn, xs, n, axis);
}

/* numpy's atleast_1d / atleast_2d as views: 0-d -> (1,) / (1, 1), (n,) -> (1, n). */
static ty_store *atleast(lua_State *L, ty_runtime *rt, const char *fn, ty_store *x, int rank) {
  while (ty_store_ndim(x) < rank) {
    ty_store **v = newslot(L);
    CALL(L, rt, fn, ty_store_expand(rt, x, 0, v));
    x = *v;
  }
  return x;
}

static const tl_sig sig_hstack = {"hstack", 1, 1, "", false, "tycho.hstack({x1, x2, ...})"};
static const tl_sig sig_vstack = {"vstack", 1, 1, "", false, "tycho.vstack({x1, x2, ...})"};
static int hvstack(lua_State *L, const tl_sig *s, bool v) {
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *xs[MAX_JOIN];
  int n = list_stores(L, 1, s, xs, MAX_JOIN);
  luaL_checkstack(L, 2 * n + 8, s->fn);
  for (int k = 0; k < n; k++) xs[k] = atleast(L, rt, s->fn, xs[k], v ? 2 : 1);
  int axis = v ? 0 : (ty_store_ndim(xs[0]) == 1 ? 0 : 1);
  concat(L, rt, s->fn, xs, n, axis);
  return 1;
}
static int l_hstack(lua_State *L) { return hvstack(L, &sig_hstack, false); }
static int l_vstack(lua_State *L) { return hvstack(L, &sig_vstack, true); }

/* ---- splitting ----------------------------------------------------------------------------- */

static const tl_sig sig_split = {
    "split", 2, 3, "", false,
    "tycho.split(x, sections | {p1, p2, ...} [, axis = 1]), x:split(...): a list of views; "
    "p are the 1-based positions where a new part begins"};
static const tl_sig sig_array_split = {
    "array_split", 2, 3, "", false,
    "tycho.array_split(x, sections | {p1, p2, ...} [, axis = 1]), x:array_split(...): a list "
    "of views; sections need not divide the length"};
static int split(lua_State *L, const tl_sig *s, bool equal) {
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  int nd = ty_store_ndim(x);
  if (nd == 0) return tl_error(L, s->fn, "x must have at least one dimension, got a 0-d store");
  int axis = lua_isnil(L, 3) ? 0 : tl_checkaxis(L, 3, s->fn, "axis", nd);
  const int64_t n = ty_store_shape(x)[axis];
  lua_newtable(L);
  int out = lua_gettop(L);
  if (lua_type(L, 2) == LUA_TNUMBER) {
    int64_t k = tl_checkint(L, 2, s->fn, "sections");
    if (k < 1) return tl_error(L, s->fn, "sections must be at least 1, got %lld", (long long)k);
    if (equal && n % k)
      return tl_error(L, s->fn, "%lld sections do not divide axis %d of length %lld equally "
                      "(array_split allows it)", (long long)k, axis + 1, (long long)n);
    if (k > 1 << 20) return tl_error(L, s->fn, "at most %d sections, got %lld", 1 << 20, (long long)k);
    const int64_t each = n / k, extra = n % k; /* the first `extra` parts get one more */
    int64_t at = 0;
    for (int64_t i = 0; i < k; i++) {
      int64_t len = each + (i < extra);
      slice(L, rt, s->fn, x, axis, at, at + len);
      lua_rawseti(L, out, i + 1);
      at += len;
    }
    return 1;
  }
  if (!lua_istable(L, 2))
    return tl_argerror(L, s, "argument 2 must be a number of sections or a list of positions, "
                       "got %s", tl_typename(L, 2));
  lua_Unsigned m = lua_rawlen(L, 2);
  int64_t prev = 0;
  for (lua_Unsigned i = 0; i <= m; i++) {
    int64_t stop = n;
    if (i < m) {
      lua_rawgeti(L, 2, (lua_Integer)i + 1);
      char what[40];
      snprintf(what, sizeof what, "position %d", (int)i + 1);
      int64_t p = tl_checkint(L, -1, s->fn, what);
      lua_pop(L, 1);
      if (p == 0)
        return tl_error(L, s->fn, "position %d is 0: positions start at 1 (a part begins at "
                        "element p)", (int)i + 1);
      stop = p > 0 ? p - 1 : n + p; /* numpy's index, 0-based */
      if (stop < 0) stop = 0;
      if (stop > n) stop = n;
    }
    int64_t a = prev < stop ? prev : stop;
    slice(L, rt, s->fn, x, axis, a, stop);
    lua_rawseti(L, out, (lua_Integer)i + 1);
    if (stop > prev) prev = stop;
  }
  return 1;
}
static int l_split(lua_State *L) { return split(L, &sig_split, true); }
static int l_array_split(lua_State *L) { return split(L, &sig_array_split, false); }

/* ---- scans --------------------------------------------------------------------------------- */

static const tl_sig sig_cumsum = {"cumsum", 1, 2, "", true,
                                  "tycho.cumsum(x [, axis]), x:cumsum(...): no axis = over the "
                                  "elements in C order (1-D)"};
static const tl_sig sig_cumprod = {"cumprod", 1, 2, "", true,
                                   "tycho.cumprod(x [, axis]), x:cumprod(...)"};
static const tl_sig sig_nancumsum = {"nancumsum", 1, 2, "", true,
                                     "tycho.nancumsum(x [, axis]), x:nancumsum(...): NaN counts as 0"};
static const tl_sig sig_nancumprod = {"nancumprod", 1, 2, "", true,
                                      "tycho.nancumprod(x [, axis]), x:nancumprod(...): NaN counts as 1"};
static int scan(lua_State *L, const tl_sig *s, ty_scan_op op, bool nan) {
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  int axis = lua_isnil(L, 2) ? -1 : tl_checkaxis(L, 2, s->fn, "axis", ty_store_ndim(x));
  if (nan && ty_dtype_is_float(ty_store_dtype(x))) {
    /* where(x != x, identity, x): two element-wise launches, fused */
    ty_store **isnan = newslot(L), **id = newslot(L), **clean = newslot(L);
    CALL(L, rt, s->fn, ty_binary(rt, TY_OP_NE, x, x, isnan));
    CALL(L, rt, s->fn, ty_scalar_f64(rt, ty_store_dtype(x), op == TY_SCAN_SUM ? 0.0 : 1.0, id));
    CALL(L, rt, s->fn, ty_where(rt, *isnan, *id, x, clean));
    tl_created(L, *clean);
    x = *clean;
  }
  ty_store **slot = newslot(L);
  CALL(L, rt, s->fn, ty_scan(rt, op, x, axis, slot));
  tl_created(L, *slot);
  return 1;
}
static int l_cumsum(lua_State *L) { return scan(L, &sig_cumsum, TY_SCAN_SUM, false); }
static int l_cumprod(lua_State *L) { return scan(L, &sig_cumprod, TY_SCAN_PROD, false); }
static int l_nancumsum(lua_State *L) { return scan(L, &sig_nancumsum, TY_SCAN_SUM, true); }
static int l_nancumprod(lua_State *L) { return scan(L, &sig_nancumprod, TY_SCAN_PROD, true); }

static const tl_sig sig_diff = {"diff", 1, 3, "", true,
                                "tycho.diff(x [, n = 1 [, axis = -1]]), x:diff(...)"};
static int l_diff(lua_State *L) {
  const tl_sig *s = &sig_diff;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  int nd = ty_store_ndim(x);
  int64_t n = lua_isnil(L, 2) ? 1 : tl_checkint(L, 2, s->fn, "n");
  if (n < 0) return tl_error(L, s->fn, "n must be non-negative, got %lld", (long long)n);
  if (nd == 0) return tl_error(L, s->fn, "x must have at least one dimension, got a 0-d store");
  int axis = lua_isnil(L, 3) ? nd - 1 : tl_checkaxis(L, 3, s->fn, "axis", nd);
  const bool is_bool = ty_store_dtype(x) == TY_BOOL;
  lua_pushvalue(L, 1);
  for (int64_t k = 0; k < n; k++) {
    int64_t len = ty_store_shape(x)[axis];
    if (len == 0) break;
    ty_store *hi = slice(L, rt, s->fn, x, axis, 1, len);
    ty_store *lo = slice(L, rt, s->fn, x, axis, 0, len - 1);
    ty_store **d = newslot(L);
    CALL(L, rt, s->fn, ty_binary(rt, is_bool ? TY_OP_NE : TY_OP_SUB, hi, lo, d));
    tl_created(L, *d);
    x = *d;
    lua_replace(L, -4); /* the difference replaces the store it came from */
    lua_pop(L, 2);
  }
  return 1;
}

/* ---- rearranging --------------------------------------------------------------------------- */

/* Axes given as one axis or a list of axes (argument idx) into seen[]; none
 * given: all. */
static void axes_arg(lua_State *L, int idx, const char *fn, int nd, bool *seen) {
  memset(seen, 0, sizeof(bool) * TY_MAX_RANK);
  if (lua_isnil(L, idx)) {
    for (int d = 0; d < nd; d++) seen[d] = true;
  } else if (lua_istable(L, idx)) {
    lua_Unsigned m = lua_rawlen(L, idx);
    for (lua_Unsigned i = 1; i <= m; i++) {
      lua_rawgeti(L, idx, (lua_Integer)i);
      int d = tl_checkaxis(L, -1, fn, "axis", nd);
      if (seen[d]) tl_error(L, fn, "axis %d is repeated", d + 1);
      seen[d] = true;
      lua_pop(L, 1);
    }
  } else {
    seen[tl_checkaxis(L, idx, fn, "axis", nd)] = true;
  }
}

static const tl_sig sig_flip = {"flip", 1, 2, "", false,
                                "tycho.flip(x [, axis | {axes}]), x:flip(...): a view; no axis = all"};
static int l_flip(lua_State *L) {
  const tl_sig *s = &sig_flip;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  int nd = ty_store_ndim(x);
  bool seen[TY_MAX_RANK];
  axes_arg(L, 2, s->fn, nd, seen);
  lua_pushvalue(L, 1);
  if (nd == 0) { /* numpy's flip of a 0-d array is itself; a view here too */
    ty_store **v = newslot(L);
    CALL(L, rt, s->fn, ty_store_broadcast(rt, x, 0, NULL, v));
    return 1;
  }
  for (int d = 0; d < nd; d++) {
    if (!seen[d]) continue;
    ty_store **v = newslot(L);
    CALL(L, rt, s->fn, ty_store_flip(rt, x, d, v));
    x = *v;
  }
  return 1;
}

static const tl_sig sig_roll = {"roll", 2, 3, "", false,
                                "tycho.roll(x, shift | {shifts} [, axis | {axes}]), x:roll(...): "
                                "no axis = over the elements in C order, shape kept"};
/* One integer or a list of them at idx into v (at most TY_MAX_RANK); returns
 * the count, -1 for a single integer. */
static int ints_arg(lua_State *L, const tl_sig *s, int idx, const char *what, int64_t *v) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    v[0] = tl_checkint(L, idx, s->fn, what);
    return -1;
  }
  if (!lua_istable(L, idx))
    tl_argerror(L, s, "%s must be an integer or a list of integers, got %s", what,
                tl_typename(L, idx));
  lua_Unsigned m = lua_rawlen(L, idx);
  if (m > TY_MAX_RANK) tl_argerror(L, s, "%s lists more than %d entries", what, TY_MAX_RANK);
  for (int i = 0; i < (int)m; i++) {
    lua_rawgeti(L, idx, i + 1);
    v[i] = tl_checkint(L, -1, s->fn, what);
    lua_pop(L, 1);
  }
  return (int)m;
}
static int l_roll(lua_State *L) {
  const tl_sig *s = &sig_roll;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  const int nd = ty_store_ndim(x);
  int64_t shape[TY_MAX_RANK], shifts[TY_MAX_RANK], axes[TY_MAX_RANK], k[TY_MAX_RANK] = {0};
  memcpy(shape, ty_store_shape(x), sizeof(int64_t) * (size_t)nd);
  int ns = ints_arg(L, s, 2, "shift", shifts);
  ty_store *src = x;
  if (lua_isnil(L, 3)) {
    if (ns != -1) return tl_argerror(L, s, "a list of shifts needs a list of axes");
    src = ravel(L, rt, s->fn, x);
    axes[0] = 0;
    k[0] = shifts[0];
  } else {
    int na;
    if (lua_type(L, 3) == LUA_TNUMBER) { /* one axis, 1-based */
      axes[0] = tl_checkaxis(L, 3, s->fn, "axis", nd);
      na = -1;
    } else {
      int64_t raw[TY_MAX_RANK];
      na = ints_arg(L, s, 3, "axis", raw);
      for (int i = 0; i < na; i++) {
        lua_pushinteger(L, raw[i]);
        axes[i] = tl_checkaxis(L, -1, s->fn, "axis", nd);
        lua_pop(L, 1);
      }
    }
    /* numpy broadcasts one shift over several axes and one axis over several shifts */
    int m = ns > na ? ns : na;
    if (ns >= 0 && na >= 0 && ns != na)
      return tl_argerror(L, s, "%d shifts for %d axes", ns, na);
    if (m < 0) m = 1;
    for (int i = 0; i < m; i++) { /* summed modulo the length: no overflow */
      const int d = (int)axes[na < 0 ? 0 : i];
      const int64_t n = shape[d];
      if (n > 0) k[d] = (int64_t)(((__int128)k[d] + shifts[ns < 0 ? 0 : i] % n) % n);
    }
  }
  const int rd = ty_store_ndim(src);
  const int64_t *sh = ty_store_shape(src);
  ty_store *res = newstore(L, rt, s->fn, ty_store_dtype(x), rd, sh);
  const int top = lua_gettop(L);
  if (ty_store_size(src) > 0) {
    int dims[TY_MAX_RANK], m = 0;
    for (int d = 0; d < rd; d++) {
      k[d] = (int64_t)((((__int128)k[d] % sh[d]) + sh[d]) % sh[d]);
      if (k[d]) dims[m++] = d;
    }
    /* 2^m block copies: along each rolled dim, res[k:] = src[:n-k] and res[:k] = src[n-k:] */
    for (unsigned mask = 0; mask < (1u << m); mask++) {
      ty_store *dst = res, *from = src;
      for (int i = 0; i < m; i++) {
        const int d = dims[i];
        const int64_t n = sh[d], kd = k[d];
        if (mask & (1u << i)) {
          dst = slice(L, rt, s->fn, dst, d, 0, kd);
          from = slice(L, rt, s->fn, from, d, n - kd, n);
        } else {
          dst = slice(L, rt, s->fn, dst, d, kd, n);
          from = slice(L, rt, s->fn, from, d, 0, n - kd);
        }
      }
      copy_into(L, rt, s->fn, dst, from);
      lua_settop(L, top);
    }
  }
  ty_store **v = newslot(L); /* x's shape (and a fresh slot on top) */
  CALL(L, rt, s->fn, ty_store_reshape(rt, res, nd, shape, v));
  return 1;
}

static const tl_sig sig_squeeze = {"squeeze", 1, 2, "", false,
                                   "tycho.squeeze(x [, axis | {axes}]), x:squeeze(...): a view"};
static int l_squeeze(lua_State *L) {
  const tl_sig *s = &sig_squeeze;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  int nd = ty_store_ndim(x);
  bool seen[TY_MAX_RANK];
  bool given = !lua_isnil(L, 2);
  if (nd == 0 && !given) memset(seen, 0, sizeof seen);
  else axes_arg(L, 2, s->fn, nd, seen);
  int64_t shape[TY_MAX_RANK];
  int k = 0;
  for (int d = 0; d < nd; d++) {
    if (seen[d] && ty_store_shape(x)[d] != 1) {
      if (given)
        return tl_error(L, s->fn, "axis %d has length %lld: only axes of length 1 can be "
                        "squeezed", d + 1, (long long)ty_store_shape(x)[d]);
      seen[d] = false;
    }
    if (!seen[d]) shape[k++] = ty_store_shape(x)[d];
  }
  lua_pushvalue(L, 1);
  for (int d = nd - 1; d >= 0; d--) { /* selects from the end keep the lower dims' numbers */
    if (!seen[d]) continue;
    ty_store **v = newslot(L);
    CALL(L, rt, s->fn, ty_store_select(rt, x, d, 0, v));
    x = *v;
  }
  (void)shape;
  return 1;
}

/* Apply the permutation perm (result dim i is x's dim perm[i]) by swaps. */
static int permute(lua_State *L, ty_runtime *rt, const char *fn, ty_store *x, const int *perm) {
  int nd = ty_store_ndim(x), cur[TY_MAX_RANK]; /* cur[i]: x's dim now at i */
  for (int d = 0; d < nd; d++) cur[d] = d;
  lua_pushnil(L);
  bool any = false;
  for (int i = 0; i < nd; i++) {
    if (cur[i] == perm[i]) continue;
    int j = i + 1;
    while (cur[j] != perm[i]) j++;
    ty_store **v = newslot(L);
    CALL(L, rt, fn, ty_store_transpose(rt, x, i, j, v));
    x = *v;
    int t = cur[i];
    cur[i] = cur[j];
    cur[j] = t;
    any = true;
  }
  if (!any) { /* the identity permutation: a view of x all the same (any strides) */
    ty_store **v = newslot(L);
    CALL(L, rt, fn, ty_store_broadcast(rt, x, nd, ty_store_shape(x), v));
  }
  return 1;
}

static const tl_sig sig_permute = {"permute_dims", 1, 2, "", false,
                                   "tycho.permute_dims(x [, {axes}]), tycho.permute(...), "
                                   "x:permute(...): a view; no axes = reversed"};
static int l_permute(lua_State *L) {
  const tl_sig *s = &sig_permute;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  int nd = ty_store_ndim(x), perm[TY_MAX_RANK];
  if (lua_isnil(L, 2)) {
    for (int d = 0; d < nd; d++) perm[d] = nd - 1 - d;
  } else {
    if (!lua_istable(L, 2))
      return tl_argerror(L, s, "axes must be a list of axes, got %s", tl_typename(L, 2));
    if (lua_rawlen(L, 2) != (lua_Unsigned)nd)
      return tl_error(L, s->fn, "axes must list each of the %d axes once, got %llu entries", nd,
                      (unsigned long long)lua_rawlen(L, 2));
    bool seen[TY_MAX_RANK] = {false};
    for (int i = 0; i < nd; i++) {
      lua_rawgeti(L, 2, i + 1);
      perm[i] = tl_checkaxis(L, -1, s->fn, "axis", nd);
      if (seen[perm[i]]) return tl_error(L, s->fn, "axis %d is repeated", perm[i] + 1);
      seen[perm[i]] = true;
      lua_pop(L, 1);
    }
  }
  return permute(L, rt, s->fn, x, perm);
}

static const tl_sig sig_moveaxis = {"moveaxis", 3, 3, "", false,
                                    "tycho.moveaxis(x, source, destination), x:moveaxis(...): "
                                    "a view; axes or lists of axes"};
static int l_moveaxis(lua_State *L) {
  const tl_sig *s = &sig_moveaxis;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  int nd = ty_store_ndim(x), src[TY_MAX_RANK], dst[TY_MAX_RANK], m = 0;
  bool tab = lua_istable(L, 2);
  if (tab != lua_istable(L, 3))
    return tl_argerror(L, s, "source and destination must both be axes or both lists");
  if (tab) {
    m = (int)lua_rawlen(L, 2);
    if (m != (int)lua_rawlen(L, 3) || m > nd)
      return tl_error(L, s->fn, "source and destination must list the same number of axes");
    for (int i = 0; i < m; i++) {
      lua_rawgeti(L, 2, i + 1);
      src[i] = tl_checkaxis(L, -1, s->fn, "source", nd);
      lua_rawgeti(L, 3, i + 1);
      dst[i] = tl_checkaxis(L, -1, s->fn, "destination", nd);
      lua_pop(L, 2);
    }
  } else {
    m = 1;
    src[0] = tl_checkaxis(L, 2, s->fn, "source", nd);
    dst[0] = tl_checkaxis(L, 3, s->fn, "destination", nd);
  }
  int perm[TY_MAX_RANK];
  bool used_src[TY_MAX_RANK] = {false}, used_dst[TY_MAX_RANK] = {false};
  for (int i = 0; i < m; i++) {
    if (used_src[src[i]] || used_dst[dst[i]])
      return tl_error(L, s->fn, "repeated axis in source or destination");
    used_src[src[i]] = used_dst[dst[i]] = true;
    perm[dst[i]] = src[i];
  }
  int next = 0; /* the other axes keep their order */
  for (int d = 0; d < nd; d++) {
    if (used_dst[d]) continue;
    while (used_src[next]) next++;
    perm[d] = next++;
  }
  return permute(L, rt, s->fn, x, perm);
}

static const tl_sig sig_ravel = {"ravel", 1, 1, "", false,
                                 "tycho.ravel(x), x:ravel(): 1-D, a view when x is contiguous"};
static int l_ravel(lua_State *L) {
  tl_args(L, &sig_ravel);
  ty_runtime *rt = tl_rt(L);
  ravel(L, rt, "ravel", tl_checkstore(L, 1, "ravel", "x"));
  return 1;
}
static const tl_sig sig_flatten = {"flatten", 1, 1, "", false,
                                   "tycho.flatten(x), x:flatten(): a 1-D copy"};
static int l_flatten(lua_State *L) {
  tl_args(L, &sig_flatten);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, "flatten", "x");
  int64_t n = ty_store_size(x);
  reshape(L, rt, "flatten", copy_of(L, rt, "flatten", x, ty_store_dtype(x)), 1, &n);
  return 1;
}

static const tl_sig sig_broadcast_to = {"broadcast_to", 2, 2, "", false,
                                        "tycho.broadcast_to(x, shape), x:broadcast_to(shape): a view"};
static int l_broadcast_to(lua_State *L) {
  const tl_sig *s = &sig_broadcast_to;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  int64_t shape[TY_MAX_RANK];
  int nd = tl_checkshape(L, 2, s->fn, shape, false, ty_store_dtype(x));
  ty_store **v = newslot(L);
  CALL(L, rt, s->fn, ty_store_broadcast(rt, x, nd, shape, v));
  return 1;
}

/* The functions; from FIRST_METHOD on, those whose first argument is a
 * store, which are methods too (the joiners take a list of stores first). */
static const luaL_Reg shape_funcs[] = {
    {"concatenate", l_concatenate}, {"stack", l_stack},
    {"hstack", l_hstack}, {"vstack", l_vstack},
    {"split", l_split}, {"array_split", l_array_split},
    {"cumsum", l_cumsum}, {"cumprod", l_cumprod},
    {"nancumsum", l_nancumsum}, {"nancumprod", l_nancumprod},
    {"diff", l_diff}, {"flip", l_flip},
    {"roll", l_roll}, {"squeeze", l_squeeze},
    {"permute_dims", l_permute}, {"permute", l_permute},
    {"moveaxis", l_moveaxis}, {"ravel", l_ravel},
    {"flatten", l_flatten}, {"broadcast_to", l_broadcast_to},
    {NULL, NULL}};
enum { FIRST_METHOD = 4 }; /* "split" */

/* Adds the functions to the module table and the methods to the store
 * metatable's method table (__methods), like tl_extra_open. */
void tl_shape_open(lua_State *L, int module_index) {
  module_index = lua_absindex(L, module_index);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
  int box = lua_gettop(L);
  lua_pushvalue(L, module_index);
  lua_pushvalue(L, box);
  luaL_setfuncs(L, shape_funcs, 1);
  lua_pop(L, 1);
  luaL_getmetatable(L, TL_STORE);
  if (lua_getfield(L, -1, "__methods") == LUA_TTABLE) {
    lua_pushvalue(L, box);
    luaL_setfuncs(L, shape_funcs + FIRST_METHOD, 1);
  }
  lua_pop(L, 3); /* __methods, metatable, box */
  tl_build_open(L, module_index);
}
