/*
 * lmask.c — selecting by masks and positions from Lua (numpy's boolean and
 * integer-array indexing): x[mask], x[mask] = v, x[idx], x[idx] = v,
 * index tables mixing stores with integers, ranges and tycho.newaxis
 * (x[{{}, idx}], x[{idx, 2}], x[{i1, 2, i3}]: numpy's advanced indexing,
 * see adv_index) and their assignments, and the functions nonzero,
 * argwhere, where(cond), count_nonzero, any, all, take, put. The work is the
 * core's (tycho/mask.h: ops_mask.c); this file checks arguments, turns Lua's
 * 1-based positions into the core's `base` and names bad ones.
 *
 * Rules (DESIGN.md §6): names and values are numpy's, positions are 1-based
 * (negative from the end), so nonzero/argwhere return 1-based positions and
 * x[idx] takes them. An out-of-range position is an error that names the
 * first one in C order (ty_index_check: one parallel pass, it runs the
 * window; an assignment uses ty_put_checked, which writes nothing then).
 * A mask (a bool store) selects; an integer store gathers; a float store is
 * refused (numpy's IndexError).
 *
 * tl_store_index / tl_store_newindex (lstore.c) come here when the key is a
 * store or a table holding a store (tl_index_has_store).
 */
#include "tl.h"

#include "tycho/mask.h"

#include <string.h>

#define FN_INDEX "index"
#define FN_ASSIGN "assign"

static bool is_int(ty_dtype t) { return ty_dtype_is_int(t); }

/* Raise for the bad position v, entry `at` (C order) of idx, over a dim of
 * size n; entry k > 0: idx is index[k] of a table. */
static void bad_position(lua_State *L, ty_store *idx, int64_t at, int64_t v, int64_t n, int dim,
                         int k, const char *fn) {
  const char *hint = v == 0 ? " (positions start at 1; -1 is the last)" : "";
  char entry[32] = "";
  if (k > 0) snprintf(entry, sizeof entry, "index[%d]: ", k);
  if (ty_store_size(idx) == 1)
    tl_error(L, fn, "%sindex %lld is out of range for dimension %d of size %lld%s", entry,
             (long long)v, dim + 1, (long long)n, hint);
  tl_error(L, fn, "%sindex %lld (entry %lld of the index store, in C order) is out of range for "
           "dimension %d of size %lld%s", entry, (long long)v, (long long)at + 1, dim + 1,
           (long long)n, hint);
}

/* Raise naming the first position of idx outside a dim of size n (one
 * parallel pass over idx, then a read: it runs the window). */
static void check_entry(lua_State *L, ty_runtime *rt, ty_store *idx, int64_t n, int dim, int k,
                        const char *fn) {
  int64_t at = -1, v = 0;
  ty_status st = ty_index_check(rt, idx, n, 1, &at, &v);
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  if (at >= 0) bad_position(L, idx, at, v, n, dim, k, fn);
}

static void check_positions(lua_State *L, ty_runtime *rt, ty_store *idx, int64_t n, int dim,
                            const char *fn) {
  check_entry(L, rt, idx, n, dim, 0, fn);
}

/* A dense copy of s (pushed), or s itself when it is dense. */
static ty_store *dense(lua_State *L, ty_runtime *rt, ty_store *s, const char *fn) {
  if (ty_store_is_contiguous(s)) return s;
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_store_create(rt, ty_store_dtype(s), ty_store_ndim(s), ty_store_shape(s), slot));
  if (st == TY_OK) st = ty_copy(rt, *slot, s);
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  return *slot;
}

/* ---- x[mask], x[idx] -------------------------------------------------------------- */

static int push_compress(lua_State *L, ty_runtime *rt, ty_store *x, ty_store *mask, const char *fn) {
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_compress(rt, x, mask, slot));
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  tl_created(L, *slot);
  return 1;
}

static int push_take(lua_State *L, ty_runtime *rt, ty_store *x, ty_store *idx, int axis,
                     const char *fn) {
  if (ty_store_ndim(x) == 0) return tl_error(L, fn, "cannot index a 0-d store with positions");
  check_positions(L, rt, idx, ty_store_shape(x)[axis], axis, fn);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_take(rt, x, idx, axis, 1, slot));
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  tl_created(L, *slot);
  return 1;
}

/* The key store k of x[k]: a mask or positions. */
static void check_key(lua_State *L, ty_store *k, const char *fn) {
  ty_dtype t = ty_store_dtype(k);
  if (t != TY_BOOL && !is_int(t))
    tl_error(L, fn, "an index store must be bool (a mask) or integer (positions), got %s",
             ty_dtype_name(t));
}

bool tl_index_has_store(lua_State *L, int tidx) {
  lua_Unsigned n = lua_rawlen(L, tidx);
  bool found = false;
  for (lua_Unsigned k = 1; k <= n && !found; k++) {
    if (lua_rawgeti(L, tidx, (lua_Integer)k) == LUA_TUSERDATA) found = tl_teststore(L, -1, FN_INDEX) != NULL;
    lua_pop(L, 1);
  }
  return found;
}

/* ---- index tables with stores: numpy's advanced indexing ------------------------ */

/* x[{...}] with index stores. Stores and integers are numpy's "advanced"
 * entries: the stores' shapes broadcast together (an integer as a 0-d
 * store), and the broadcast dims stand where the advanced entries stand when
 * these are neighbours in the table, else first (numpy's rule: x[{{}, i, 2}]
 * is (3, n), x[{i, {}, 2}] and x[{{}, i, {}, 2}] put n first). The integers,
 * ranges and tycho.newaxis are applied first as a view (an integer drops its
 * dim, as broadcasting a 0-d index does); what remains is one dim of that
 * view per store. */
typedef struct adv_index {
  int ns;                     /* index stores, in table order */
  ty_store *idx[TY_MAX_RANK]; /* their positions (a 1-D mask: its nonzero) */
  int vdim[TY_MAX_RANK];      /* the dim of `view` each one indexes */
  int xdim[TY_MAX_RANK];      /* ... and of x, and its entry in the table (messages) */
  int entry[TY_MAX_RANK];
  bool checked[TY_MAX_RANK];  /* known good (a mask's positions) */
  int at;                     /* where the broadcast dims go: vdim[0], or 0 */
  ty_store *view;             /* x with the other entries applied (pushed) */
} adv_index;

/* x[{mask, {}, ...}]: the mask when it is the table's only store, at
 * index[1], and every other entry is {} (ty_compress takes it whole). */
static ty_store *mask_only(lua_State *L, int tidx, const char *fn) {
  lua_Unsigned n = lua_rawlen(L, tidx);
  ty_store *m = NULL;
  for (lua_Unsigned k = 1; k <= n; k++) {
    int tp = lua_rawgeti(L, tidx, (lua_Integer)k);
    ty_store *s = tp == LUA_TUSERDATA ? tl_teststore(L, -1, fn) : NULL;
    bool whole = tp == LUA_TTABLE && lua_rawlen(L, -1) == 0;
    lua_pop(L, 1);
    if (k == 1 && s && ty_store_dtype(s) == TY_BOOL) m = s;
    else if (!whole) return NULL;
  }
  return m;
}

/* The 1-based positions (pushed) of a 1-D mask used as entry k over a dim of
 * size n (numpy: x[{m, 2}] is x[{nonzero(m)[1], 2}]). */
static ty_store *mask_positions(lua_State *L, ty_runtime *rt, ty_store *m, int64_t n, int xdim,
                                int k, const char *fn) {
  if (ty_store_ndim(m) != 1)
    tl_error(L, fn, "index[%d] is a mask of rank %d: with other entries a mask must be 1-D "
             "(or the only entry, x[{mask}]; tycho.nonzero(mask) gives its positions)", k,
             ty_store_ndim(m));
  if (ty_store_shape(m)[0] != n)
    tl_error(L, fn, "index[%d] is a mask of length %lld, but dimension %d has size %lld", k,
             (long long)ty_store_shape(m)[0], xdim + 1, (long long)n);
  ty_store **aw = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_argwhere(rt, m, 1, aw));
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  tl_created(L, *aw);
  ty_store **col = tl_newslot(L);
  st = ty_store_select(rt, *aw, 1, 0, col);
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  return *col;
}

/* Parse the table at tidx (holding at least one store) into *a; pushes the
 * view, the stores made from masks and a few temporaries. The positions are
 * checked by check_adv (or by the put itself). */
static void parse_adv(lua_State *L, ty_runtime *rt, int tidx, ty_store *x, const char *fn,
                      adv_index *a) {
  lua_Unsigned n = lua_rawlen(L, tidx);
  if (n > 2 * TY_MAX_RANK)
    tl_error(L, fn, "too many indices (%llu) for a store of rank %d", (unsigned long long)n,
             ty_store_ndim(x));
  luaL_checkstack(L, 4 * (int)n + 16, "tycho: too many indices");
  /* the table for the view: each store replaced by {} (a whole dim) */
  lua_createtable(L, (int)n, 0);
  int first = -1, last = -1, nadv = 0;
  for (int k = 1; k <= (int)n; k++) {
    int tp = lua_rawgeti(L, tidx, k);
    ty_store *s = tp == LUA_TUSERDATA ? tl_teststore(L, -1, fn) : NULL;
    if (s) {
      check_key(L, s, fn);
      lua_pop(L, 1);
      lua_createtable(L, 0, 0);
    }
    if (s || tp == LUA_TNUMBER) {
      first = first < 0 ? k : first;
      last = k;
      nadv++;
    }
    lua_rawseti(L, -2, k);
  }
  a->view = tl_index_view(L, x, -1, fn); /* checks the count, the integers and the ranges */
  const int64_t *xshape = ty_store_shape(x);
  int vdim = 0, xdim = 0, bnd = 0;
  int64_t bsh[TY_MAX_RANK];
  a->ns = 0;
  for (int k = 1; k <= (int)n; k++) {
    int tp = lua_rawgeti(L, tidx, k);
    ty_store *s = tp == LUA_TUSERDATA ? tl_teststore(L, -1, fn) : NULL;
    lua_pop(L, 1); /* the table holds s */
    if (tp == LUA_TLIGHTUSERDATA) { /* tycho.newaxis: a dim of the view only */
      vdim++;
      continue;
    }
    if (s) {
      const int64_t size = xshape[xdim];
      a->checked[a->ns] = ty_store_dtype(s) == TY_BOOL;
      if (a->checked[a->ns]) s = mask_positions(L, rt, s, size, xdim, k, fn);
      int nb;
      int64_t b[TY_MAX_RANK];
      if (ty_broadcast_shapes(bnd, bsh, ty_store_ndim(s), ty_store_shape(s), &nb, b) != TY_OK) {
        char s1[256], s2[256];
        tl_shape_str(bnd, bsh, s1, sizeof s1);
        tl_shape_str(ty_store_ndim(s), ty_store_shape(s), s2, sizeof s2);
        tl_error(L, fn, "index[%d] of shape %s does not broadcast with the index stores before "
                 "it (shape %s)", k, s2, s1);
      }
      bnd = nb;
      memcpy(bsh, b, sizeof(int64_t) * (size_t)nb);
      a->idx[a->ns] = s;
      a->xdim[a->ns] = xdim;
      a->entry[a->ns] = k;
      a->vdim[a->ns++] = vdim;
    }
    if (tp != LUA_TNUMBER) vdim++;
    xdim++;
  }
  a->at = last - first + 1 == nadv ? a->vdim[0] : 0;
}

/* Raise naming the first bad position of the first store that has one. */
static void check_adv(lua_State *L, ty_runtime *rt, const adv_index *a, ty_store *x,
                      const char *fn) {
  for (int i = 0; i < a->ns; i++)
    if (!a->checked[i])
      check_entry(L, rt, a->idx[i], ty_store_shape(x)[a->xdim[i]], a->xdim[i], a->entry[i], fn);
}

/* The view with the stores' dims moved to at .. at + ns - 1, in table order
 * (transposed views, pushed; nothing moves when the entries are neighbours). */
static ty_store *arrange(lua_State *L, ty_runtime *rt, const adv_index *a, const char *fn) {
  ty_store *v = a->view;
  for (int i = 0; i < a->ns; i++)
    for (int d = a->vdim[i]; d > a->at + i; d--) {
      ty_store **s = tl_newslot(L);
      ty_status st = ty_store_transpose(rt, v, d, d - 1, s);
      if (st != TY_OK) tl_fail(L, rt, fn, st);
      v = *s;
    }
  return v;
}

/* Several stores: their 0-based flat positions over v's dims at .. at+ns-1
 * (C order, broadcast; pushed), and v with those dims merged into one (*vm,
 * pushed), a view of v or of its dense copy *vd (pushed). */
static ty_store *flat_positions(lua_State *L, ty_runtime *rt, const adv_index *a, ty_store *v,
                                ty_store **vm, ty_store **vd, const char *fn) {
  const int64_t *shape = ty_store_shape(v);
  const int nd = ty_store_ndim(v), at = a->at;
  ty_store *flat = NULL;
  int64_t stride = 1;
  for (int i = a->ns - 1; i >= 0; i--) {
    ty_store *ii = a->idx[i];
    const int64_t n = shape[at + i];
    /* 0-based: i < 0 ? i + n : i - 1, then * stride */
    ty_store *zero = (lua_pushinteger(L, 0), tl_scalar(L, rt, lua_gettop(L), fn, TY_I64));
    ty_store *sn = (lua_pushinteger(L, n), tl_scalar(L, rt, lua_gettop(L), fn, TY_I64));
    ty_store *one = (lua_pushinteger(L, 1), tl_scalar(L, rt, lua_gettop(L), fn, TY_I64));
    ty_store *sd = (lua_pushinteger(L, stride), tl_scalar(L, rt, lua_gettop(L), fn, TY_I64));
    ty_store **c = tl_newslot(L), **p = tl_newslot(L), **m = tl_newslot(L), **w = tl_newslot(L),
             **ws = tl_newslot(L);
    ty_status st = ty_binary(rt, TY_OP_LT, ii, zero, c);
    if (st == TY_OK) st = ty_binary(rt, TY_OP_ADD, ii, sn, p);
    if (st == TY_OK) st = ty_binary(rt, TY_OP_SUB, ii, one, m);
    if (st == TY_OK) st = ty_where(rt, *c, *p, *m, w);
    if (st == TY_OK) st = ty_binary(rt, TY_OP_MUL, *w, sd, ws);
    if (st == TY_OK && flat) {
      ty_store **f = tl_newslot(L);
      st = ty_binary(rt, TY_OP_ADD, flat, *ws, f);
      flat = *f;
    } else {
      flat = *ws;
    }
    if (st != TY_OK) tl_fail(L, rt, fn, st);
    stride *= n;
  }
  *vd = dense(L, rt, v, fn);
  int64_t sh[TY_MAX_RANK];
  int k = 0;
  for (int d = 0; d < at; d++) sh[k++] = shape[d];
  sh[k++] = stride;
  for (int d = at + a->ns; d < nd; d++) sh[k++] = shape[d];
  ty_store **r = tl_newslot(L);
  ty_status st = ty_store_reshape(rt, *vd, k, sh, r);
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  *vm = *r;
  return flat;
}

int tl_mask_index(lua_State *L) {
  const char *fn = FN_INDEX;
  ty_store *x = tl_checkstore(L, 1, fn, "argument 1");
  ty_runtime *rt = tl_rt(L);
  ty_store *key = NULL;
  if (lua_type(L, 2) == LUA_TTABLE) {
    key = mask_only(L, 2, fn);
    if (!key) {
      adv_index a;
      parse_adv(L, rt, 2, x, fn, &a);
      check_adv(L, rt, &a, x, fn);
      ty_store *v = arrange(L, rt, &a, fn), *pos = a.idx[0], *vd = NULL;
      int64_t base = 1;
      if (a.ns > 1) {
        pos = flat_positions(L, rt, &a, v, &v, &vd, fn);
        base = 0;
      }
      ty_store **slot = tl_newslot(L);
      ty_status st;
      TL_TRY(L, rt, st, ty_take(rt, v, pos, a.at, base, slot));
      if (st != TY_OK) return tl_fail(L, rt, fn, st);
      tl_created(L, *slot);
      return 1;
    }
  } else {
    key = tl_checkstore(L, 2, fn, "index");
    check_key(L, key, fn);
  }
  if (ty_store_dtype(key) == TY_BOOL) return push_compress(L, rt, x, key, fn);
  return push_take(L, rt, x, key, 0, fn);
}

/* The value of x[...] = v as a store (a number becomes a 0-d store of x's
 * dtype, exact for 64-bit integers). */
static ty_store *value_of(lua_State *L, ty_runtime *rt, ty_store *x, int vidx, const char *fn) {
  ty_store *v = tl_teststore(L, vidx, fn);
  if (v) return v;
  int tp = lua_type(L, vidx);
  if (tp != LUA_TNUMBER && tp != LUA_TBOOLEAN)
    tl_error(L, fn, "value must be a number, a boolean or a store, got %s", tl_typename(L, vidx));
  return tl_scalar(L, rt, vidx, fn, ty_store_dtype(x));
}

/* x[i] = v along axis through ty_put_checked (x dense or not: the core
 * copies); a bad position writes nothing and is named (as dim `dim` of
 * index[k] when k > 0). */
static void put_axis(lua_State *L, ty_runtime *rt, ty_store *x, ty_store *idx, int axis,
                     ty_store *v, int dim, int k, const char *fn) {
  if (ty_store_ndim(x) == 0) tl_error(L, fn, "cannot index a 0-d store with positions");
  int64_t at = -1, bad = 0;
  ty_status st;
  TL_TRY(L, rt, st, ty_put_checked(rt, x, idx, axis, 1, v, &at, &bad));
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  if (at >= 0) bad_position(L, idx, at, bad, ty_store_shape(x)[axis], dim, k, fn);
}

int tl_mask_newindex(lua_State *L) {
  const char *fn = FN_ASSIGN;
  lua_settop(L, 3);
  ty_store *x = tl_checkstore(L, 1, fn, "argument 1");
  ty_runtime *rt = tl_rt(L);
  ty_store *key = NULL;
  ty_status st;
  if (lua_type(L, 2) == LUA_TTABLE) {
    key = mask_only(L, 2, fn);
    if (!key) {
      adv_index a;
      parse_adv(L, rt, 2, x, fn, &a);
      ty_store *val = value_of(L, rt, x, 3, fn);
      ty_store *v = arrange(L, rt, &a, fn); /* a view of x */
      if (a.ns == 1) { /* checked by the put */
        put_axis(L, rt, v, a.idx[0], a.at, val, a.xdim[0], a.entry[0], fn);
        return 0;
      } else {
        check_adv(L, rt, &a, x, fn);
        ty_store *vm = NULL, *vd = NULL;
        ty_store *flat = flat_positions(L, rt, &a, v, &vm, &vd, fn);
        TL_TRY(L, rt, st, ty_put(rt, vm, flat, a.at, 0, val));
        if (st == TY_OK && vd != v) st = ty_copy(rt, v, vd); /* v was not dense: back from the copy */
      }
      if (st != TY_OK) return tl_fail(L, rt, fn, st);
      return 0;
    }
  } else {
    key = tl_checkstore(L, 2, fn, "index");
    check_key(L, key, fn);
  }
  ty_store *val = value_of(L, rt, x, 3, fn);
  if (ty_store_dtype(key) == TY_BOOL) {
    TL_TRY(L, rt, st, ty_mask_assign(rt, x, key, val));
    if (st != TY_OK) return tl_fail(L, rt, fn, st);
    return 0;
  }
  put_axis(L, rt, x, key, 0, val, 0, 0, fn);
  return 0;
}

/* ---- functions ------------------------------------------------------------------- */

static const tl_sig sig_argwhere = {"argwhere", 1, 1, "", true,
                                    "tycho.argwhere(x [, {parallel = ...}]), x:argwhere()"};
static int l_argwhere(lua_State *L) {
  tl_args(L, &sig_argwhere);
  ty_store *x = tl_checkstore(L, 1, "argwhere", "x");
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_argwhere(rt, x, 1, slot));
  if (st != TY_OK) return tl_fail(L, rt, "argwhere", st);
  tl_created(L, *slot);
  return 1;
}

/* nonzero(x): a table of ndim 1-D i64 stores (the columns of argwhere). */
static int nonzero(lua_State *L, const char *fn) {
  ty_store *x = tl_checkstore(L, 1, fn, "x");
  ty_runtime *rt = tl_rt(L);
  int nd = ty_store_ndim(x);
  if (nd == 0)
    return tl_error(L, fn, "x is 0-d (numpy refuses nonzero of a 0-d array: use "
                    "tycho.nonzero(x:reshape(1)) or tycho.argwhere(x))");
  ty_store **aw = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_argwhere(rt, x, 1, aw));
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  tl_created(L, *aw);
  int awi = lua_gettop(L);
  lua_createtable(L, nd, 0);
  for (int d = 0; d < nd; d++) {
    ty_store **col = tl_newslot(L);
    st = ty_store_select(rt, *(ty_store **)lua_touserdata(L, awi), 1, d, col);
    if (st != TY_OK) return tl_fail(L, rt, fn, st);
    lua_rawseti(L, -2, d + 1);
  }
  return 1;
}

static const tl_sig sig_nonzero = {"nonzero", 1, 1, "", true,
                                   "tycho.nonzero(x [, {parallel = ...}]), x:nonzero()"};
static int l_nonzero(lua_State *L) {
  tl_args(L, &sig_nonzero);
  return nonzero(L, "nonzero");
}

int tl_where_nonzero(lua_State *L) { return nonzero(L, "where"); }

/* count_nonzero / any / all: sums of x != 0 (or x == 0) through tycho.sum,
 * so axes, keepdims and empty stores behave as sum's (numpy's any of an
 * empty array is false, all is true). */
static int count_based(lua_State *L, const tl_sig *s, ty_op test, ty_op verdict) {
  int given = tl_args(L, s);
  (void)given;
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  ty_runtime *rt = tl_rt(L);
  lua_pushinteger(L, 0);
  ty_store *zero = tl_scalar(L, rt, lua_gettop(L), s->fn, ty_store_dtype(x));
  ty_store **b = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_binary(rt, test, x, zero, b));
  if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  int bi = lua_gettop(L);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_MODULE);
  lua_getfield(L, -1, "sum");
  lua_pushvalue(L, bi);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, TL_OPTS(s));
  lua_call(L, 3, 1);
  if (verdict == TY_NOPS) return 1;
  ty_store *cnt = tl_checkstore(L, -1, s->fn, "count");
  ty_store *z2 = (lua_pushinteger(L, 0), tl_scalar(L, rt, lua_gettop(L), s->fn, TY_I64));
  ty_store **r = tl_newslot(L);
  TL_TRY(L, rt, st, ty_binary(rt, verdict, cnt, z2, r));
  if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  tl_created(L, *r);
  return 1;
}

#define AXES_FORMS(name)                                                                    \
  "tycho." name "(x [, axis | {axes}] [, {keepdims = bool, parallel = ...}]), x:" name "(...)"
static const tl_sig sig_count_nonzero = {"count_nonzero", 1, 2, "keepdims", true,
                                         AXES_FORMS("count_nonzero")};
static const tl_sig sig_any = {"any", 1, 2, "keepdims", true, AXES_FORMS("any")};
static const tl_sig sig_all = {"all", 1, 2, "keepdims", true, AXES_FORMS("all")};
static int l_count_nonzero(lua_State *L) { return count_based(L, &sig_count_nonzero, TY_OP_NE, TY_NOPS); }
static int l_any(lua_State *L) { return count_based(L, &sig_any, TY_OP_NE, TY_OP_GT); }
static int l_all(lua_State *L) { return count_based(L, &sig_all, TY_OP_EQ, TY_OP_EQ); }

/* An index argument: a store, or a Lua integer (a 0-d i64 store). */
static ty_store *positions_arg(lua_State *L, ty_runtime *rt, const tl_sig *s, int idx) {
  ty_store *p = tl_teststore(L, idx, s->fn);
  if (!p && lua_isinteger(L, idx)) return tl_scalar(L, rt, idx, s->fn, TY_I64);
  if (!p) tl_argerror(L, s, "indices (argument %d) must be an integer store or an integer, got %s",
                      idx, tl_typename(L, idx));
  if (!is_int(ty_store_dtype(p)))
    tl_argerror(L, s, "indices must have an integer dtype, got %s", ty_dtype_name(ty_store_dtype(p)));
  return p;
}

/* x flattened in C order (pushed: a view of x, or of a dense copy, *xdense). */
static ty_store *flat_of(lua_State *L, ty_runtime *rt, ty_store *x, ty_store **xdense,
                         const char *fn) {
  ty_store *xd = dense(L, rt, x, fn);
  if (xdense) *xdense = xd;
  int64_t n = ty_store_size(x);
  ty_store **f = tl_newslot(L);
  ty_status st = ty_store_reshape(rt, xd, 1, &n, f);
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  return *f;
}

static const tl_sig sig_take = {"take", 2, 3, "axis", true,
                                "tycho.take(x, indices [, axis] [, {axis = k, parallel = ...}]), "
                                "x:take(indices [, axis])"};
static int l_take(lua_State *L) {
  const tl_sig *s = &sig_take;
  tl_args(L, s);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  ty_runtime *rt = tl_rt(L);
  ty_store *idx = positions_arg(L, rt, s, 2);
  int64_t ax = 0;
  bool has_opt = tl_optint(L, s, "axis", &ax);
  if (!lua_isnil(L, 3) && has_opt) return tl_argerror(L, s, "axis is given twice");
  if (!lua_isnil(L, 3) || has_opt) {
    if (!has_opt) ax = tl_checkint(L, 3, s->fn, "axis");
    int nd = ty_store_ndim(x);
    int64_t a = ax < 0 ? ax + nd + 1 : ax;
    if (a < 1 || a > nd)
      return tl_error(L, s->fn, "axis %lld is out of range for a store of rank %d", (long long)ax, nd);
    return push_take(L, rt, x, idx, (int)a - 1, s->fn);
  }
  return push_take(L, rt, flat_of(L, rt, x, NULL, s->fn), idx, 0, s->fn); /* numpy: flattened */
}

/* numpy's put: the values, flattened, are repeated as necessary (or cut) to
 * one per position, in C order of the positions: v.flat[k % v.size]. A
 * single value is left for ty_put to broadcast. */
static ty_store *cyclic_values(lua_State *L, ty_runtime *rt, ty_store *v, ty_store *idx,
                               const char *fn) {
  int64_t nv = ty_store_size(v), ni = ty_store_size(idx);
  if (nv == 1 || ni == 0 || (nv == ni && ty_store_ndim(v) == ty_store_ndim(idx))) return v;
  if (nv == 0) tl_error(L, fn, "values is empty, but %lld positions are given", (long long)ni);
  ty_store *vf = flat_of(L, rt, v, NULL, fn);
  ty_store **pos = tl_newslot(L), **period = tl_newslot(L), **k = tl_newslot(L);
  ty_store **vals = tl_newslot(L), **shaped = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_arange(rt, TY_I64, 0, 1, ni, pos));
  if (st == TY_OK) TL_TRY(L, rt, st, ty_full(rt, TY_I64, 0, NULL, (double)nv, period));
  if (st == TY_OK) TL_TRY(L, rt, st, ty_binary(rt, TY_OP_MOD, *pos, *period, k));
  if (st == TY_OK) TL_TRY(L, rt, st, ty_take(rt, vf, *k, 0, 0, vals));
  if (st == TY_OK)
    TL_TRY(L, rt, st, ty_store_reshape(rt, *vals, ty_store_ndim(idx), ty_store_shape(idx), shaped));
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  return *shaped;
}

static const tl_sig sig_put = {"put", 3, 3, "", true,
                               "tycho.put(x, indices, values [, {parallel = ...}]), "
                               "x:put(indices, values)"};
static int l_put(lua_State *L) {
  const tl_sig *s = &sig_put;
  tl_args(L, s);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  ty_runtime *rt = tl_rt(L);
  ty_store *idx = positions_arg(L, rt, s, 2);
  ty_store *v = value_of(L, rt, x, 3, s->fn);
  v = cyclic_values(L, rt, v, idx, s->fn);
  ty_store *xd = NULL;
  ty_store *f = flat_of(L, rt, x, &xd, s->fn);
  put_axis(L, rt, f, idx, 0, v, 0, 0, s->fn);
  if (xd != x) { /* x was not dense: put went into a copy */
    ty_status st = ty_copy(rt, x, xd);
    if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  }
  lua_settop(L, 1);
  return 1;
}

/* An axis argument (1-based, negative from the end) of a store of rank nd. */
static int axis_of(lua_State *L, const tl_sig *s, int pos, int nd) {
  if (lua_isnil(L, pos)) tl_argerror(L, s, "axis (argument %d) is required", pos);
  int64_t ax = tl_checkint(L, pos, s->fn, "axis");
  int64_t a = ax < 0 ? ax + nd + 1 : ax;
  if (a < 1 || a > nd)
    tl_error(L, s->fn, "axis %lld is out of range for a store of rank %d", (long long)ax, nd);
  return (int)a - 1;
}

static const tl_sig sig_take_along = {
    "take_along_axis", 3, 3, "", true,
    "tycho.take_along_axis(x, indices, axis [, {parallel = ...}]), x:take_along_axis(indices, axis)"};
static int l_take_along(lua_State *L) {
  const tl_sig *s = &sig_take_along;
  tl_args(L, s);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  ty_runtime *rt = tl_rt(L);
  ty_store *idx = positions_arg(L, rt, s, 2);
  if (ty_store_ndim(x) == 0) return tl_error(L, s->fn, "x is 0-d (it has no axis)");
  int axis = axis_of(L, s, 3, ty_store_ndim(x));
  check_positions(L, rt, idx, ty_store_shape(x)[axis], axis, s->fn);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_take_along(rt, x, idx, axis, 1, slot));
  if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  tl_created(L, *slot);
  return 1;
}

static const tl_sig sig_put_along = {
    "put_along_axis", 4, 4, "", true,
    "tycho.put_along_axis(x, indices, values, axis [, {parallel = ...}]), "
    "x:put_along_axis(indices, values, axis)"};
static int l_put_along(lua_State *L) {
  const tl_sig *s = &sig_put_along;
  tl_args(L, s);
  ty_store *x = tl_checkstore(L, 1, s->fn, "x");
  ty_runtime *rt = tl_rt(L);
  ty_store *idx = positions_arg(L, rt, s, 2);
  ty_store *v = value_of(L, rt, x, 3, s->fn);
  if (ty_store_ndim(x) == 0) return tl_error(L, s->fn, "x is 0-d (it has no axis)");
  int axis = axis_of(L, s, 4, ty_store_ndim(x));
  check_positions(L, rt, idx, ty_store_shape(x)[axis], axis, s->fn);
  ty_status st;
  TL_TRY(L, rt, st, ty_put_along(rt, x, idx, axis, 1, v));
  if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  lua_settop(L, 1);
  return 1;
}

static const luaL_Reg mask_funcs[] = {
    {"take_along_axis", l_take_along}, {"put_along_axis", l_put_along},
    {"argwhere", l_argwhere}, {"nonzero", l_nonzero}, {"count_nonzero", l_count_nonzero},
    {"any", l_any},           {"all", l_all},         {"take", l_take},
    {"put", l_put},           {NULL, NULL}};

/* Adds the functions to the module table and, as methods, to the store
 * metatable's method table (as tl_extra_open). */
void tl_mask_open(lua_State *L, int module_index) {
  module_index = lua_absindex(L, module_index);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
  int box = lua_gettop(L);
  lua_pushvalue(L, module_index);
  lua_pushvalue(L, box);
  luaL_setfuncs(L, mask_funcs, 1);
  lua_pop(L, 1);
  luaL_getmetatable(L, TL_STORE);
  if (lua_getfield(L, -1, "__methods") == LUA_TTABLE) {
    lua_pushvalue(L, box);
    luaL_setfuncs(L, mask_funcs, 1);
  }
  lua_pop(L, 3);
}
