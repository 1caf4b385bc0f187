/*
 * lstore.c — the store userdata: its metatable (__index, __newindex, __len,
 * __tostring, __gc, __close), fields, Torch7-style indexing into views,
 * assignment through views, the view methods (narrow expand reshape
 * transpose t), copy/fill/astype/contiguous, reading values out
 * (item, totable) and the print options tostring uses
 * (set_printoptions, get_printoptions).
 *
 * A store userdata (tl_slot, tl.h) holds one reference (ty_store *) or NULL
 * once closed (__close) or collected, then a tag that tells stores from
 * other userdata without a metatable look-up; every entry point checks for
 * NULL and raises "argument N is a closed store" rather than touching freed
 * memory.
 *
 * Indexing, 1-based and inclusive like the rest of the Lua API:
 *   x[i]                  1-D: the element (a Lua value); rank > 1: row i (a view)
 *   x[{e1, e2, ...}]      one entry per leading dim, missing trailing = whole:
 *       i                 select index i (the dim is dropped)
 *       {}                the whole dim
 *       {a} / {a, b}      the inclusive range a..b ({a} = {a, a}: dim kept)
 *       {a, b, step}      every step-th element of a..b; a negative step goes
 *                         down from a to b ({-1, 1, -1}: reversed, a view)
 *   x[mask], x[idx], x[{{}, idx}], x[{i1, i2}]: a bool or integer store in
 *                         the key selects or gathers (a copy; lmask.c)
 *   Negative numbers count from the end (-1 is the last). A range may be
 *   empty ({3, 2}) but its ends must lie in 1..n+1 / 0..n.
 * Indices are checked here against the shape, so the core never sees a bad
 * one and messages speak Lua's 1-based language.
 */
#include "tl.h"
#include "tycho/shape.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FN_INDEX "index"
#define FN_ASSIGN "assign"

/* The open store of a userdata at idx (any tycho.store, even a metamethod's). */
static ty_store *self(lua_State *L, int idx, const char *fn) {
  return tl_checkstore(L, idx, fn, idx == 1 ? "argument 1" : "argument");
}

/* ---- metamethods ---------------------------------------------------------------- */

/* Every temporary comes here once: the tag test first (tl.h), the upvalue
 * and the metatable only for an untagged store. */
static int m_gc(lua_State *L) {
  ty_store **p = tl_slot_tagged(L, 1);
  if (!p) p = tl_checkslot_in(L, lua_touserdata(L, lua_upvalueindex(1)), 1);
  ty_store_release(*p);
  *p = NULL;
  return 0;
}

static int m_tostring(lua_State *L) {
  ty_store **p = luaL_checkudata(L, 1, TL_STORE);
  if (!*p) {
    lua_pushliteral(L, "tycho.store (closed)");
    return 1;
  }
  ty_runtime *rt = tl_rt(L);
  char *text = NULL;
  ty_status st = ty_store_format(rt, *p, &text);
  if (st != TY_OK) {
    free(text);
    return tl_fail(L, rt, "tostring", st);
  }
  tl_pushtext(L, text);
  return 1;
}

static int clamp_int(int64_t v) { return v < -1 ? -1 : v > INT_MAX ? INT_MAX : (int)v; }

/* tycho.set_printoptions{...}: numpy's names, defaults and meaning; keys
 * not given keep their value. The options live in the runtime
 * (ty_set_print_options), so every store prints by them. threshold =
 * math.huge never summarises (numpy's sys.maxsize). */
static const tl_sig sig_set_printoptions = {
    "set_printoptions", 0, 0, "threshold precision linewidth edgeitems suppress", false,
    "tycho.set_printoptions{threshold = n, precision = n, linewidth = n, edgeitems = n, "
    "suppress = bool}"};
static int l_set_printoptions(lua_State *L) {
  const tl_sig *s = &sig_set_printoptions;
  tl_args(L, s);
  ty_runtime *rt = tl_rt(L);
  ty_print_options o;
  ty_get_print_options(rt, &o);
  int64_t v;
  if (lua_type(L, TL_OPTS(s)) == LUA_TTABLE &&
      lua_getfield(L, TL_OPTS(s), "threshold") == LUA_TNUMBER && !lua_isinteger(L, -1) &&
      lua_tonumber(L, -1) == HUGE_VAL) {
    o.threshold = INT64_MAX;
  } else if (tl_optint(L, s, "threshold", &v)) {
    o.threshold = v;
  }
  lua_settop(L, TL_OPTS(s));
  /* out of int's range: clamped to a value the runtime refuses with its range */
  if (tl_optint(L, s, "precision", &v)) o.precision = clamp_int(v);
  if (tl_optint(L, s, "linewidth", &v)) o.linewidth = clamp_int(v);
  if (tl_optint(L, s, "edgeitems", &v)) o.edgeitems = clamp_int(v);
  o.suppress = tl_optbool(L, s, "suppress", o.suppress);
  ty_status st = ty_set_print_options(rt, &o);
  if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  return 0;
}

/* tycho.get_printoptions(): the table set_printoptions takes, every key set. */
static const tl_sig sig_get_printoptions = {"get_printoptions", 0, 0, "", false,
                                            "tycho.get_printoptions()"};
static int l_get_printoptions(lua_State *L) {
  tl_args(L, &sig_get_printoptions);
  ty_print_options o;
  ty_get_print_options(tl_rt(L), &o);
  lua_createtable(L, 0, 5);
  if (o.threshold == INT64_MAX)
    lua_pushnumber(L, HUGE_VAL);
  else
    lua_pushinteger(L, (lua_Integer)o.threshold);
  lua_setfield(L, -2, "threshold");
  lua_pushinteger(L, o.precision);
  lua_setfield(L, -2, "precision");
  lua_pushinteger(L, o.linewidth);
  lua_setfield(L, -2, "linewidth");
  lua_pushinteger(L, o.edgeitems);
  lua_setfield(L, -2, "edgeitems");
  lua_pushboolean(L, o.suppress);
  lua_setfield(L, -2, "suppress");
  return 1;
}

static int m_len(lua_State *L) {
  ty_store *s = self(L, 1, "len");
  if (ty_store_ndim(s) == 0) return tl_error(L, "len", "a 0-d store has no length");
  lua_pushinteger(L, (lua_Integer)ty_store_shape(s)[0]);
  return 1;
}

/* ---- indexing -------------------------------------------------------------------- */

/* " (indices start at 1; -1 is the last)" after a message about index 0. */
static const char *zero_hint(int64_t i) {
  return i == 0 ? " (indices start at 1: x[1] is the first, x[-1] the last)" : "";
}

/* 1-based or negative index of a dim of size n -> 0-based, or -1 when out of
 * range. */
static int64_t norm_index(int64_t i, int64_t n) {
  i = i < 0 ? i + n : i - 1; /* never overflows: n >= 0 */
  return (i >= 0 && i < n) ? i : -1;
}

typedef struct index_entry {
  bool newaxis;  /* tycho.newaxis: a new dim of size 1 here (numpy's None) */
  bool select;   /* drop the dim at `start` */
  int64_t start; /* 0-based */
  int64_t stop;  /* exclusive */
  int64_t step;
} index_entry;

static int64_t entry_int(lua_State *L, int idx, const char *fn, int k) {
  if (lua_isinteger(L, idx)) return (int64_t)lua_tointeger(L, idx); /* the common case: no name to format */
  char what[48];
  snprintf(what, sizeof what, "index[%d]", k);
  return tl_checkint(L, idx, fn, what);
}

/* Parse x[{...}] (table at tidx) against s's shape into entries (at most
 * 2 * TY_MAX_RANK: a dim or tycho.newaxis each); returns how many. Raises on
 * any bad entry; holds no C resources. */
static int parse_index(lua_State *L, int tidx, const char *fn, const ty_store *s,
                       index_entry *e) {
  int ndim = ty_store_ndim(s);
  const int64_t *shape = ty_store_shape(s);
  lua_Unsigned n = lua_rawlen(L, tidx);
  int nnew = 0, nsel = 0;
  for (lua_Unsigned k = 1; k <= n && k <= 2 * TY_MAX_RANK; k++) {
    int tp = lua_rawgeti(L, tidx, (lua_Integer)k);
    nnew += tp == LUA_TLIGHTUSERDATA && lua_touserdata(L, -1) == (void *)&tl_newaxis;
    nsel += tp == LUA_TNUMBER;
    lua_pop(L, 1);
  }
  if (n > (lua_Unsigned)(ndim + nnew) || n > 2 * TY_MAX_RANK)
    tl_error(L, fn, "too many indices (%llu) for a store of rank %d",
             (unsigned long long)(n - (lua_Unsigned)nnew), ndim);
  if (ndim - nsel + nnew > TY_MAX_RANK)
    tl_error(L, fn, "the view would have %d dimensions, more than the %d supported",
             ndim - nsel + nnew, TY_MAX_RANK);
  for (int k = 0, d = 0; k < (int)n; k++, d++) {
    int tp = lua_rawgeti(L, tidx, k + 1);
    if (tp == LUA_TLIGHTUSERDATA && lua_touserdata(L, -1) == (void *)&tl_newaxis) {
      e[k] = (index_entry){.newaxis = true};
      d--; /* addresses no dim of s */
      lua_pop(L, 1);
      continue;
    }
    int64_t size = shape[d];
    if (tp == LUA_TNUMBER) {
      int64_t i = entry_int(L, -1, fn, k + 1);
      int64_t i0 = norm_index(i, size);
      if (i0 < 0)
        tl_error(L, fn, "index[%d] = %lld is out of range for dimension %d of size %lld%s", k + 1,
                 (long long)i, d + 1, (long long)size, zero_hint(i));
      e[k] = (index_entry){.select = true, .start = i0, .stop = i0 + 1, .step = 1};
    } else if (tp == LUA_TTABLE) {
      lua_Unsigned m = lua_rawlen(L, -1);
      if (m > 3)
        tl_error(L, fn, "index[%d] must be {}, {i}, {first, last} or {first, last, step}, got a "
                 "table of %llu entries", k + 1, (unsigned long long)m);
      int64_t a = 1, b = size, step = 1;
      if (m >= 1) {
        lua_rawgeti(L, -1, 1);
        a = b = entry_int(L, -1, fn, k + 1);
        lua_pop(L, 1);
      }
      if (m >= 2) {
        lua_rawgeti(L, -1, 2);
        b = entry_int(L, -1, fn, k + 1);
        lua_pop(L, 1);
      }
      if (m >= 3) {
        lua_rawgeti(L, -1, 3);
        step = entry_int(L, -1, fn, k + 1);
        lua_pop(L, 1);
        if (step == 0)
          tl_error(L, fn, "index[%d]: step must be a non-zero integer, got 0", k + 1);
      }
      int64_t ra = m ? (a < 0 ? a + size + 1 : a) : 1;
      int64_t rb = m ? (b < 0 ? b + size + 1 : b) : size;
      if (step < 0) { /* a..b downwards: a..b upwards of the dim reversed (flip) */
        if (ra < 0 || ra > size || rb < 1 || rb - 1 > size || rb - 1 > ra) /* no size + 1 */
          tl_error(L, fn, "index[%d] = {%lld, %lld, %lld} is out of range for dimension %d of "
                   "size %lld (a negative step goes from first down to last)%s", k + 1,
                   (long long)a, (long long)b, (long long)step, d + 1, (long long)size,
                   zero_hint(a == 0 || b == 0 ? 0 : 1));
        e[k] = (index_entry){.start = size - ra, .stop = size - (rb - 1), .step = step};
        lua_pop(L, 1);
        continue;
      }
      if (ra < 1 || ra - 1 > size || rb > size || rb < ra - 1) /* size + 1 may overflow */
        tl_error(L, fn, "index[%d] = {%lld, %lld} is out of range for dimension %d of size %lld%s",
                 k + 1, (long long)a, (long long)b, d + 1, (long long)size,
                 zero_hint(a == 0 || b == 0 ? 0 : 1));
      e[k] = (index_entry){.start = ra - 1, .stop = rb, .step = step};
    } else {
      tl_error(L, fn, "index[%d] must be an integer, a range table or tycho.newaxis, got %s", k + 1,
               tl_typename(L, -1));
    }
    lua_pop(L, 1);
  }
  return (int)n;
}

/* Apply parsed entries: a chain of selects and slices. Every intermediate view
 * is released here, so a failure leaves nothing behind. */
static ty_status apply_index(ty_runtime *rt, ty_store *s, int n, const index_entry *e,
                             ty_store **out) {
  ty_store *cur = s;
  ty_store_retain(cur);
  int dim = 0; /* dim of `cur` that entry k addresses */
  for (int k = 0; k < n; k++) {
    const int64_t size = e[k].newaxis ? 1 : ty_store_shape(cur)[dim];
    ty_store *next = NULL;
    ty_status st = TY_OK;
    if (e[k].newaxis) {
      st = ty_store_expand(rt, cur, dim++, &next);
    } else if (e[k].select) {
      st = ty_store_select(rt, cur, dim, e[k].start, &next);
    } else if (e[k].start == 0 && e[k].stop == size && e[k].step == 1) {
      dim++;
      continue;
    } else if (e[k].step < 0) {
      ty_store *flipped = NULL;
      st = ty_store_flip(rt, cur, dim, &flipped);
      if (st == TY_OK)
        st = ty_store_slice(rt, flipped, dim, e[k].start, e[k].stop, -e[k].step, &next);
      ty_store_release(flipped);
      dim++;
    } else {
      st = ty_store_slice(rt, cur, dim, e[k].start, e[k].stop, e[k].step, &next);
      dim++;
    }
    ty_store_release(cur);
    if (st != TY_OK) return st;
    cur = next;
  }
  *out = cur;
  return TY_OK;
}

/* Push the view x[{...}] of the store s (table at tidx). */
static ty_store *push_view(lua_State *L, ty_runtime *rt, ty_store *s, int tidx,
                           const char *fn) {
  index_entry e[2 * TY_MAX_RANK];
  int n = parse_index(L, tidx, fn, s, e);
  ty_store **slot = tl_newslot(L);
  ty_status st = apply_index(rt, s, n, e, slot);
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  return *slot;
}

ty_store *tl_index_view(lua_State *L, ty_store *s, int tidx, const char *fn) {
  return push_view(L, tl_rt(L), s, lua_absindex(L, tidx), fn);
}

/* Push x[i]'s row view (rank > 1) of the store s (number at kidx). */
static ty_store *push_row(lua_State *L, ty_runtime *rt, ty_store *s, int kidx,
                          const char *fn) {
  int64_t i0 = -1;
  int64_t i = tl_checkint(L, kidx, fn, "index");
  if (ty_store_ndim(s) == 0) tl_error(L, fn, "cannot index a 0-d store (use x:item())");
  int64_t size = ty_store_shape(s)[0];
  if ((i0 = norm_index(i, size)) < 0)
    tl_error(L, fn, "index %lld is out of range for dimension 1 of size %lld%s", (long long)i,
             (long long)size, zero_hint(i));
  ty_store **slot = tl_newslot(L);
  ty_status st = ty_store_select(rt, s, 0, i0, slot);
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  return *slot;
}

static void push_shape(lua_State *L, const ty_store *s) {
  int ndim = ty_store_ndim(s);
  const int64_t *shape = ty_store_shape(s);
  lua_createtable(L, ndim, 0);
  for (int d = 0; d < ndim; d++) {
    lua_pushinteger(L, (lua_Integer)shape[d]);
    lua_rawseti(L, -2, d + 1);
  }
}

#define FIELDS "shape, dtype, ndim, size, nbytes, itemsize, T"

/* x.T: numpy's, every axis reversed (a view; x itself below 2-D). */
static void push_T(lua_State *L, ty_store *s) {
  int nd = ty_store_ndim(s);
  if (nd < 2) {
    lua_pushvalue(L, 1);
    return;
  }
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_store *cur = s;
  ty_store_retain(cur);
  for (int d = 0; d < nd / 2; d++) {
    ty_store *next = NULL;
    ty_status st = ty_store_transpose(rt, cur, d, nd - 1 - d, &next);
    ty_store_release(cur);
    if (st != TY_OK) tl_fail(L, rt, "T", st);
    cur = next;
  }
  *slot = cur;
}

/* A field, or an error naming the fields and the method table: a misspelt
 * name fails here, not later as "attempt to perform arithmetic on a nil
 * value". Only the miss path of __index comes here (methods are found
 * first), so operations pay nothing for it. */
static int field(lua_State *L, const char *k) {
  ty_store **p = luaL_checkudata(L, 1, TL_STORE);
  bool known = !strcmp(k, "shape") || !strcmp(k, "dtype") || !strcmp(k, "ndim") ||
               !strcmp(k, "size") || !strcmp(k, "nbytes") || !strcmp(k, "itemsize") ||
               !strcmp(k, "T");
  if (!known)
    return tl_error(L, FN_INDEX, "store has no field or method '%s' (fields: " FIELDS
                    "; methods: the functions of tycho that take a store, e.g. x:sum(), "
                    "x:reshape(...); README \"A tour of the Lua API\")", k);
  if (!*p) return tl_error(L, FN_INDEX, "field '%s' of a closed store", k);
  ty_store *s = *p;
  size_t item = ty_dtype_size(ty_store_dtype(s));
  if (!strcmp(k, "shape")) push_shape(L, s);
  else if (!strcmp(k, "dtype")) lua_pushstring(L, ty_dtype_name(ty_store_dtype(s)));
  else if (!strcmp(k, "ndim")) lua_pushinteger(L, ty_store_ndim(s));
  else if (!strcmp(k, "size")) lua_pushinteger(L, (lua_Integer)ty_store_size(s));
  else if (!strcmp(k, "nbytes")) lua_pushinteger(L, (lua_Integer)(ty_store_size(s) * (int64_t)item));
  else if (!strcmp(k, "itemsize")) lua_pushinteger(L, (lua_Integer)item);
  else push_T(L, s);
  return 1;
}

/* __index: methods first (upvalue 2), then fields, then numbers and tables. */
int tl_store_index(lua_State *L) {
  int tp = lua_type(L, 2);
  if (tp == LUA_TSTRING) {
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(2)) != LUA_TNIL) return 1;
    return field(L, lua_tostring(L, 2));
  }
  ty_store *s = self(L, 1, FN_INDEX);
  ty_runtime *rt = tl_rt(L);
  if (tp == LUA_TNUMBER) {
    if (ty_store_ndim(s) == 1) {
      int64_t i = tl_checkint(L, 2, FN_INDEX, "index");
      int64_t size = ty_store_shape(s)[0];
      int64_t i0 = norm_index(i, size);
      if (i0 < 0)
        return tl_error(L, FN_INDEX, "index %lld is out of range for dimension 1 of size %lld%s",
                        (long long)i, (long long)size, zero_hint(i));
      ty_value v;
      ty_status st = ty_store_get(rt, s, &i0, &v);
      if (st != TY_OK) return tl_fail(L, rt, FN_INDEX, st);
      tl_pushvalue(L, &v);
      return 1;
    }
    push_row(L, rt, s, 2, FN_INDEX);
    return 1;
  }
  if (tp == LUA_TTABLE) {
    if (tl_index_has_store(L, 2)) return tl_mask_index(L);
    push_view(L, rt, s, 2, FN_INDEX);
    return 1;
  }
  if (tp == LUA_TUSERDATA && tl_teststore(L, 2, FN_INDEX)) return tl_mask_index(L); /* lmask.c */
  if (tp == LUA_TLIGHTUSERDATA && lua_touserdata(L, 2) == (void *)&tl_newaxis) {
    lua_createtable(L, 1, 0); /* x[tycho.newaxis] is x[{tycho.newaxis}], as numpy's x[None] */
    lua_pushvalue(L, 2);
    lua_rawseti(L, -2, 1);
    push_view(L, rt, s, lua_gettop(L), FN_INDEX);
    return 1;
  }
  return tl_error(L, FN_INDEX, "a store is indexed by an integer, a table, a store or a method name, got %s",
                  tl_typename(L, 2));
}

/* dst[...] = the value at vidx: a store (broadcast, cast) or a number. */
static void assign(lua_State *L, ty_runtime *rt, ty_store *dst, int vidx, const char *fn) {
  ty_store *src = tl_teststore(L, vidx, fn);
  if (src) {
    ty_status st = ty_copy(rt, dst, src);
    if (st != TY_OK) tl_fail(L, rt, fn, st);
    return;
  }
  int tp = lua_type(L, vidx);
  if (tp != LUA_TNUMBER && tp != LUA_TBOOLEAN)
    tl_error(L, fn, "value must be a number, a boolean or a store, got %s", tl_typename(L, vidx));
  tl_fill_value(L, rt, dst, vidx, fn);
}

int tl_store_newindex(lua_State *L) {
  lua_settop(L, 3);
  ty_store *s = self(L, 1, FN_ASSIGN);
  ty_runtime *rt = tl_rt(L);
  ty_store *dst;
  switch (lua_type(L, 2)) {
  case LUA_TNUMBER: dst = push_row(L, rt, s, 2, FN_ASSIGN); break;
  case LUA_TTABLE:
    if (tl_index_has_store(L, 2)) return tl_mask_newindex(L);
    dst = push_view(L, rt, s, 2, FN_ASSIGN);
    break;
  case LUA_TUSERDATA:
    if (tl_teststore(L, 2, FN_ASSIGN)) return tl_mask_newindex(L); /* lmask.c */
    return tl_error(L, FN_ASSIGN, "a store is indexed by an integer, a table or a store, got %s",
                    tl_typename(L, 2));
  case LUA_TSTRING:
    return tl_error(L, FN_ASSIGN, "cannot set field '%s' of a store", lua_tostring(L, 2));
  default:
    return tl_error(L, FN_ASSIGN, "a store is indexed by an integer or a table, got %s",
                    tl_typename(L, 2));
  }
  assign(L, rt, dst, 3, FN_ASSIGN);
  return 0;
}

/* ---- views ----------------------------------------------------------------------- */

/* narrow(x, dim, start, len): elements start .. start+len-1 of dim. */
static const tl_sig sig_narrow = {"narrow", 4, 4, "", false, "tycho.narrow(x, dim, start, len), x:narrow(dim, start, len)"};
static int l_narrow(lua_State *L) {
  tl_args(L, &sig_narrow);
  ty_store *s = self(L, 1, "narrow");
  ty_runtime *rt = tl_rt(L);
  int ndim = ty_store_ndim(s);
  int dim = tl_checkaxis(L, 2, "narrow", "dim", ndim);
  int64_t size = ty_store_shape(s)[dim];
  int64_t start = tl_checkint(L, 3, "narrow", "start");
  int64_t len = tl_checkint(L, 4, "narrow", "len");
  int64_t s1 = start < 0 ? start + size + 1 : start;
  if (s1 < 1 || s1 - 1 > size) /* size + 1 may overflow */
    return tl_error(L, "narrow", "start %lld is out of range for dimension %d of size %lld",
                    (long long)start, dim + 1, (long long)size);
  if (len < 0 || len > size - (s1 - 1))
    return tl_error(L, "narrow", "len %lld is out of range: dimension %d has %lld elements from %lld",
                    (long long)len, dim + 1, (long long)(size - (s1 - 1)), (long long)s1);
  ty_store **slot = tl_newslot(L);
  ty_status st = ty_store_slice(rt, s, dim, s1 - 1, s1 - 1 + len, 1, slot);
  if (st != TY_OK) return tl_fail(L, rt, "narrow", st);
  return 1;
}

/* expand(x, dim): a new axis of size 1 before position dim (1..ndim+1;
 * negative: -1 appends after the last). */
static const tl_sig sig_expand = {"expand", 2, 2, "", false, "tycho.expand(x, dim), x:expand(dim)"};
static int l_expand(lua_State *L) {
  tl_args(L, &sig_expand);
  ty_store *s = self(L, 1, "expand");
  ty_runtime *rt = tl_rt(L);
  int ndim = ty_store_ndim(s);
  int64_t d = tl_checkint(L, 2, "expand", "dim");
  int64_t d0 = d > 0 ? d - 1 : d + ndim + 1;
  if (d == 0 || d0 < 0 || d0 > ndim)
    return tl_error(L, "expand", "dim %lld is out of range for a store of rank %d (1..%d or -%d..-1)",
                    (long long)d, ndim, ndim + 1, ndim + 1);
  if (ndim >= TY_MAX_RANK)
    return tl_error(L, "expand", "the store already has %d dimensions, the most supported",
                    TY_MAX_RANK);
  ty_store **slot = tl_newslot(L);
  ty_status st = ty_store_expand(rt, s, (int)d0, slot);
  if (st != TY_OK) return tl_fail(L, rt, "expand", st);
  return 1;
}

/* reshape(x, shape) or reshape(x, d1, d2, ...); one entry may be -1. */
static const tl_sig sig_reshape = {"reshape", 2, 1 + TY_MAX_RANK, "", false, "tycho.reshape(x, shape), tycho.reshape(x, d1, d2, ...), x:reshape(...)"};
static int l_reshape(lua_State *L) {
  if (lua_gettop(L) > 1 + TY_MAX_RANK)
    return tl_error(L, "reshape", "shape has %d dimensions, at most %d are supported",
                    lua_gettop(L) - 1, TY_MAX_RANK);
  int npos = tl_args(L, &sig_reshape);
  if (npos > 2 && lua_type(L, 2) == LUA_TTABLE)
    return tl_argerror(L, &sig_reshape, "argument 3 is not accepted after a shape table (the "
                       "shape is a table or the dimensions, not both)");
  ty_store *s = self(L, 1, "reshape");
  ty_runtime *rt = tl_rt(L);
  int64_t shape[TY_MAX_RANK];
  int ndim;
  if (npos <= 2) {
    ndim = tl_checkshape(L, 2, "reshape", shape, true, ty_store_dtype(s));
  } else {
    int n = npos - 1;
    lua_createtable(L, n, 0);
    for (int k = 0; k < n; k++) {
      lua_pushvalue(L, k + 2);
      lua_rawseti(L, -2, k + 1);
    }
    ndim = tl_checkshape(L, lua_gettop(L), "reshape", shape, true, ty_store_dtype(s));
  }
  if (!ty_store_is_contiguous(s))
    return tl_error(L, "reshape", "the store is not contiguous (a transposed or sliced view): "
                    "use x:copy():reshape(...)");
  ty_store **slot = tl_newslot(L);
  ty_status st = ty_store_reshape(rt, s, ndim, shape, slot);
  if (st != TY_OK) return tl_fail(L, rt, "reshape", st);
  return 1;
}

static int transpose(lua_State *L, const char *fn, bool explicit_dims) {
  ty_store *s = self(L, 1, fn);
  ty_runtime *rt = tl_rt(L);
  int ndim = ty_store_ndim(s);
  int d1 = 0, d2 = 1;
  if (explicit_dims && (!lua_isnoneornil(L, 2) || !lua_isnoneornil(L, 3))) {
    d1 = tl_checkaxis(L, 2, fn, "dim1", ndim);
    d2 = tl_checkaxis(L, 3, fn, "dim2", ndim);
  } else if (ndim < 2) {
    lua_settop(L, 1); /* numpy: .T of a 0-d or 1-D array is itself */
    return 1;
  }
  ty_store **slot = tl_newslot(L);
  ty_status st = ty_store_transpose(rt, s, d1, d2, slot);
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  return 1;
}

static const tl_sig sig_transpose = {"transpose", 1, 3, "", false,
                                     "tycho.transpose(x [, dim1, dim2]), x:transpose(...)"};
static const tl_sig sig_t = {"t", 1, 1, "", false, "tycho.t(x), x:t()"};
static int l_transpose(lua_State *L) {
  tl_args(L, &sig_transpose);
  return transpose(L, "transpose", true);
}
static int l_t(lua_State *L) {
  tl_args(L, &sig_t);
  return transpose(L, "t", false);
}

/* ---- copies and writes ------------------------------------------------------------ */

/* A fresh store of s's shape and dtype t holding s's values. */
static int copy_as(lua_State *L, ty_store *s, ty_dtype t, const char *fn) {
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_store_create(rt, t, ty_store_ndim(s), ty_store_shape(s), slot));
  if (st == TY_OK) st = ty_copy(rt, *slot, s);
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  tl_created(L, *slot);
  return 1;
}

static const tl_sig sig_copy = {"copy", 1, 1, "", false, "tycho.copy(x), x:copy()"};
static int l_copy(lua_State *L) {
  tl_args(L, &sig_copy);
  ty_store *s = self(L, 1, "copy");
  return copy_as(L, s, ty_store_dtype(s), "copy");
}

static const tl_sig sig_astype = {"astype", 2, 2, "", false, "tycho.astype(x, dtype), x:astype(dtype)"};
static int l_astype(lua_State *L) {
  tl_args(L, &sig_astype);
  ty_store *s = self(L, 1, "astype");
  if (lua_isnoneornil(L, 2)) return tl_error(L, "astype", "dtype must be a string, got no value");
  ty_dtype t = tl_optdtype(L, 2, "astype", TY_F64);
  ty_runtime *rt = tl_rt(L);
  if (t == ty_store_dtype(s)) return copy_as(L, s, t, "astype"); /* numpy: astype copies */
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_cast(rt, s, t, slot));
  if (st != TY_OK) return tl_fail(L, rt, "astype", st);
  tl_created(L, *slot);
  return 1;
}

static const tl_sig sig_contiguous = {"contiguous", 1, 1, "", false, "tycho.contiguous(x), x:contiguous()"};
static int l_contiguous(lua_State *L) {
  tl_args(L, &sig_contiguous);
  ty_store *s = self(L, 1, "contiguous");
  if (ty_store_is_contiguous(s)) {
    lua_settop(L, 1);
    return 1;
  }
  return copy_as(L, s, ty_store_dtype(s), "contiguous");
}

/* fill(x, v): in place; returns x. */
static const tl_sig sig_fill = {"fill", 2, 2, "", false, "tycho.fill(x, value), x:fill(value)"};
static int l_fill(lua_State *L) {
  tl_args(L, &sig_fill);
  ty_store *s = self(L, 1, "fill");
  ty_runtime *rt = tl_rt(L);
  lua_settop(L, 2);
  tl_fill_value(L, rt, s, 2, "fill");
  lua_settop(L, 1);
  return 1;
}

/* ---- values out -------------------------------------------------------------------- */

static const tl_sig sig_item = {"item", 1, 1, "", false, "tycho.item(x), x:item()"};
static int l_item(lua_State *L) {
  tl_args(L, &sig_item);
  ty_store *s = self(L, 1, "item");
  ty_runtime *rt = tl_rt(L);
  if (ty_store_size(s) != 1) {
    char buf[400];
    tl_shape_str(ty_store_ndim(s), ty_store_shape(s), buf, sizeof buf);
    return tl_error(L, "item", "the store has %lld elements (shape %s), item needs exactly 1",
                    (long long)ty_store_size(s), buf);
  }
  ty_value v;
  ty_status st = ty_item(rt, s, &v);
  if (st != TY_OK) return tl_fail(L, rt, "item", st);
  tl_pushvalue(L, &v);
  return 1;
}

static void push_elem(lua_State *L, const char *p, ty_dtype t) {
  switch (t) {
  case TY_F64: { double v; memcpy(&v, p, 8); lua_pushnumber(L, v); break; }
  case TY_F32: { float v; memcpy(&v, p, 4); lua_pushnumber(L, (lua_Number)v); break; }
  case TY_I64: { int64_t v; memcpy(&v, p, 8); lua_pushinteger(L, (lua_Integer)v); break; }
  case TY_I32: { int32_t v; memcpy(&v, p, 4); lua_pushinteger(L, v); break; }
  case TY_U8: lua_pushinteger(L, (unsigned char)*p); break;
  case TY_BOOL: lua_pushboolean(L, *p != 0); break;
  default: tl_pushint(L, tl_get_int(p, t), t); break; /* the dtypes added later */
  }
}

/* Nested tables of dims d.. from the dense buffer, advancing *pos. */
static void build_table(lua_State *L, const char *buf, ty_dtype t, int ndim,
                        const int64_t *shape, int d, int64_t *pos) {
  size_t es = ty_dtype_size(t);
  luaL_checkstack(L, 4, "tycho.totable: nesting too deep");
  int64_t n = shape[d];
  lua_createtable(L, n > INT32_MAX ? INT32_MAX : (int)n, 0);
  for (int64_t i = 0; i < n; i++) {
    if (d == ndim - 1) push_elem(L, buf + (size_t)(*pos)++ * es, t);
    else build_table(L, buf, t, ndim, shape, d + 1, pos);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

static const tl_sig sig_totable = {"totable", 1, 1, "", false, "tycho.totable(x), x:totable()"};
static int l_totable(lua_State *L) {
  tl_args(L, &sig_totable);
  ty_store *s = self(L, 1, "totable");
  ty_runtime *rt = tl_rt(L);
  ty_dtype t = ty_store_dtype(s);
  size_t bytes = (size_t)ty_store_size(s) * ty_dtype_size(t);
  /* The buffer is a userdata: collected even if a later push raises. */
  char *buf = lua_newuserdatauv(L, bytes ? bytes : 1, 0);
  ty_status st = ty_store_read(rt, s, buf, bytes);
  if (st != TY_OK) return tl_fail(L, rt, "totable", st);
  if (ty_store_ndim(s) == 0) {
    push_elem(L, buf, t);
    return 1;
  }
  int64_t pos = 0;
  build_table(L, buf, t, ty_store_ndim(s), ty_store_shape(s), 0, &pos);
  return 1;
}

/* ---- registration ------------------------------------------------------------------ */

#define STORE_FUNCS                                                                        \
  {"narrow", l_narrow}, {"expand", l_expand}, {"reshape", l_reshape},                     \
  {"transpose", l_transpose}, {"t", l_t}, {"copy", l_copy}, {"astype", l_astype},          \
  {"contiguous", l_contiguous}, {"fill", l_fill}, {"item", l_item}, {"totable", l_totable}

const luaL_Reg tl_store_funcs[] = {STORE_FUNCS,
                                   {"set_printoptions", l_set_printoptions},
                                   {"get_printoptions", l_get_printoptions},
                                   {NULL, NULL}};
const luaL_Reg tl_store_methods[] = {STORE_FUNCS, {NULL, NULL}};
const luaL_Reg tl_store_meta[] = {{"__gc", m_gc},
                                  {"__close", m_gc},
                                  {"__tostring", m_tostring},
                                  {"__len", m_len},
                                  {NULL, NULL}};
