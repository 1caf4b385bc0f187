/*
 * tycho_lua.c — the binding's set-up and the helpers its files share:
 * luaopen_tycho / ty_lua_bind, the runtime box, turning ty_status into Lua
 * errors, converting Lua arguments (shapes, dtypes, axes, numbers next to
 * stores), and the runtime functions (flush, stats, config, memory, clock,
 * seed).
 *
 * Lua conventions at this boundary: indices and axes are 1-based and negative
 * from the end; the C API is 0-based. Every bad argument raises
 * "tycho.<fn>: <argument> ..." before anything reaches the core; failures the
 * core reports carry its ty_errmsg text (without its "ty_xxx: " prefix, which
 * names a C function the Lua user never called).
 *
 * Memory: Lua's collector sees only the few bytes of a store userdata, not its
 * storage, so left alone it lets dropped temporaries pile up: a loop making
 * 256 KiB stores allocates ~100 bytes of Lua memory per store, and Lua would
 * wait for its own heap to double. tl_created therefore counts the bytes of
 * every store created and runs a full collection when the count since the
 * last one exceeds
 *     max(bytes reserved after the last one, min(64 MiB, budget / 8),
 *         16 x the Lua heap)
 * i.e. when store memory may have doubled (Lua's own pause rule, applied to
 * store bytes), at least every 64 MiB (an eighth of a small budget), and
 * never so often that collections (whose cost follows the Lua heap) cost more
 * than a small fraction of writing the stores; and then only when the
 * allocated bytes grew by that floor since the last one (tl_created_over: a
 * launch's result holds no memory before its flush). Incremental steps
 * (LUA_GCSTEP) do not work here: lua5.4 and the shell run the collector in
 * generational mode, where a step is a minor collection; a store that is
 * still referenced at two steps (the previous value of `y` in
 * `for ... y = x * 2 end`, since every creation steps) turns old, and old
 * objects wait for a major collection that Lua's small heap never triggers.
 * A creation that fails with TY_ENOMEM collects, flushes and retries (TL_TRY).
 */
#include "tl.h"
#include "tycho_lua.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- errors ------------------------------------------------------------------ */

/* Skip a leading "ty_name: " or "ty_name(task): " of a core message. */
const char *tl_strip_prefix(const char *msg) {
  if (strncmp(msg, "ty_", 3) != 0) return msg;
  const char *p = msg + 3;
  while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_') p++;
  if (*p == '(') {
    const char *q = strchr(p, ')');
    if (q && q[1] == ':' && q[2] == ' ') return q + 3;
  }
  return (p[0] == ':' && p[1] == ' ') ? p + 2 : msg;
}

/* An interrupt (Ctrl-C in the shell: ty_interrupt) is not the function's
 * fault, so it reads "tycho: interrupted ..." whatever was called; reading a
 * value whose launch the interrupt cancelled says so too. */
int tl_fail(lua_State *L, ty_runtime *rt, const char *fn, ty_status st) {
  const char *msg = rt ? ty_errmsg(rt) : NULL;
  if (!msg || !*msg) msg = ty_status_name(st);
  msg = tl_strip_prefix(msg);
  if (st == TY_EINTR) {
    if (strncmp(msg, "interrupted", 11) == 0) return luaL_error(L, "tycho: %s", msg);
    return luaL_error(L, "tycho: interrupted (%s)", msg);
  }
  return luaL_error(L, "tycho.%s: %s", fn, msg);
}

static int push_text(lua_State *L) {
  lua_pushstring(L, lua_touserdata(L, 1));
  return 1;
}

/* The push runs protected (it allocates, and may raise "not enough memory"):
 * whatever happens the text is freed first, then the error raised. */
void tl_pushtext(lua_State *L, char *text) {
  lua_pushcfunction(L, push_text); /* a light C function and a light userdata: */
  lua_pushlightuserdata(L, text);  /* no allocation, within LUA_MINSTACK */
  int status = lua_pcall(L, 1, 1, 0);
  free(text);
  if (status != LUA_OK) lua_error(L);
}

int tl_error(lua_State *L, const char *fn, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return luaL_error(L, "tycho.%s: %s", fn, buf);
}

const char *tl_typename(lua_State *L, int idx) {
  if (luaL_testudata(L, idx, TL_STORE)) return "store";
  return luaL_typename(L, idx);
}

/* ---- the runtime box ---------------------------------------------------------- */

ty_runtime *tl_rt(lua_State *L) {
  tl_box *b = lua_touserdata(L, lua_upvalueindex(1));
  if (!b || !b->rt) luaL_error(L, "tycho: the runtime is closed");
  if (!b->pol || b->pol->synced != L) tl_policy_sync(L, b->rt); /* this thread's scopes */
  return b->rt;
}

ty_runtime *tl_rt_in_any(lua_State *L, tl_box *b) {
  if (!b || !b->rt) luaL_error(L, "tycho: the runtime is closed");
  if (!b->pol || b->pol->synced != L) tl_policy_sync(L, b->rt);
  return b->rt;
}

ty_runtime *ty_lua_runtime(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
  tl_box *b = luaL_testudata(L, -1, TL_BOXMETA);
  lua_pop(L, 1);
  return b ? b->rt : NULL;
}

/* Destroys an owned runtime when the state closes. The box is created before
 * any store, so at lua_close (finalizers run in reverse order of creation) it
 * goes last; ty_runtime_destroy is safe with live stores in any case. */
static int box_gc(lua_State *L) {
  tl_box *b = luaL_checkudata(L, 1, TL_BOXMETA);
  if (b->heap) tl_heap_unbind(L, b->heap); /* the stores first, while the runtime is there */
  b->heap = NULL;
  tl_tasks_close(b); /* first: an owned runtime frees the Lua tasks' records */
  tl_consts_clear(b);
  luaL_unref(L, LUA_REGISTRYINDEX, b->store_meta_ref);
  b->store_meta_ref = LUA_NOREF;
  if (b->rt && b->owned) ty_runtime_destroy(b->rt);
  b->rt = NULL;
  return 0;
}

/* The box's user value 1 is the store metatable once bound. */
static tl_box *push_box(lua_State *L, ty_runtime *rt, bool owned) {
  tl_box *b = lua_newuserdatauv(L, sizeof *b, 1);
  /* a userdata's bytes are not zeroed: every field starts at 0 (NULL,
   * false) but these (two counters once missed it, seen under ASan only) */
  memset(b, 0, sizeof *b);
  b->rt = rt;
  b->owned = owned;
  b->store_meta_ref = LUA_NOREF;
  if (luaL_newmetatable(L, TL_BOXMETA)) {
    lua_pushcfunction(L, box_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  return b;
}

/* ---- memory --------------------------------------------------------------------- */

int tl_reclaim(lua_State *L, ty_runtime *rt, int attempt) {
  if (attempt == 0) {
    tl_collect(L);
    return 1;
  }
  if (attempt == 1) {
    /* Launches in the window hold references on stores Lua has dropped. */
    ty_status st = ty_flush(rt);
    if (st != TY_OK) tl_fail(L, rt, "flush", st);
    tl_collect(L);
    return 1;
  }
  return 0;
}

uint64_t tl_flushes(ty_runtime *rt) { return ty_flush_count(rt); }

/* The store metatable comes from the registry by the box's integer
 * reference (an array read, one API call) rather than by name, whose string
 * lookup was ~130 instructions of every operation (callgrind,
 * bench/workloads/overhead.lua), or from the box's user value with a pointer
 * test (~70, three calls: the user value is open to debug.setuservalue). The
 * registry is what luaL_setmetatable trusts too; the value is a table there
 * unless debug.getregistry() replaced it (then the name's, as before). */
const char tl_store_tag = 0;

ty_store **tl_newslot_in(lua_State *L, const tl_box *b) {
  tl_slot *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->store = NULL;
  u->tag = &tl_store_tag;
  tl_heap *h = b ? b->heap : tl_heap_of(L);
  if (h) tl_heap_adopt(L, h, u);
  if (b && b->store_meta) {
    if (lua_rawgeti(L, LUA_REGISTRYINDEX, b->store_meta_ref) == LUA_TTABLE) {
      lua_setmetatable(L, -2);
      return &u->store;
    }
    lua_pop(L, 1);
  }
  luaL_setmetatable(L, TL_STORE);
  return &u->store;
}

ty_store **tl_newslot(lua_State *L) {
  const int up = lua_upvalueindex(1);
  return tl_newslot_in(L, lua_type(L, up) == LUA_TUSERDATA ? lua_touserdata(L, up) : NULL);
}

#define TL_GC_FLOOR (UINT64_C(64) << 20) /* 64 MiB */
#define TL_GC_HEAP_FACTOR 16

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

static uint64_t gc_floor(const tl_box *b) {
  return min_u64(TL_GC_FLOOR, ty_runtime_config(b->rt)->sysmem / 8);
}

void tl_collect(lua_State *L) {
  lua_gc(L, LUA_GCCOLLECT, 0);
  tl_box *b = lua_touserdata(L, lua_upvalueindex(1));
  if (!b || !b->rt) return;
  b->gc_fulls++;
  ty_stats st;
  ty_get_stats(b->rt, &st);
  uint64_t heap = (uint64_t)lua_gc(L, LUA_GCCOUNT) << 10;
  b->gc_debt = 0;
  b->gc_reserved = st.bytes_reserved;
  b->gc_threshold = max_u64(max_u64(st.bytes_reserved, gc_floor(b)), TL_GC_HEAP_FACTOR * heap);
}

void tl_created(lua_State *L, const ty_store *s) {
  tl_created_in(L, lua_touserdata(L, lua_upvalueindex(1)), s);
}

/* The debt counts every new store, but most hold no memory yet: a launch's
 * result is allocated when its flush runs it (fusion may never allocate it),
 * and a flush's hook collects first (lgc.c). So past the threshold, collect
 * only when the allocated bytes grew by the floor since the last collection;
 * else look again after another floor of new stores. Collecting at every
 * threshold was ~20 us of a full collection every ~3 iterations of the
 * stencil at 768^2 (5 intermediates of 4.5 MiB an iteration, none
 * allocated): 5% of its time. */
void tl_created_over(lua_State *L, tl_box *b) {
  if (b->gc_threshold == 0) b->gc_threshold = gc_floor(b);
  if (b->gc_debt < b->gc_threshold) return;
  if (!lua_gc(L, LUA_GCISRUNNING)) return; /* honour collectgarbage("stop") */
  ty_stats st;
  ty_get_stats(b->rt, &st);
  if (st.bytes_reserved < b->gc_reserved) b->gc_reserved = st.bytes_reserved;
  if (st.bytes_reserved - b->gc_reserved < gc_floor(b)) {
    b->gc_threshold = b->gc_debt + gc_floor(b);
    return;
  }
  tl_collect(L);
}

/* ---- argument conversions --------------------------------------------------------- */

ty_store *tl_teststore(lua_State *L, int idx, const char *fn) {
  ty_store **p = tl_slot_tagged(L, idx);
  if (!p) p = luaL_testudata(L, idx, TL_STORE);
  if (!p) return NULL;
  if (!*p) tl_error(L, fn, "argument %d is a closed store", idx);
  return *p;
}

/* The store slot at idx: tagged (tl_newslot's), or a userdata whose
 * metatable is b's store metatable (one pointer comparison), else NULL. */
static ty_store **slot_in(lua_State *L, const tl_box *b, int idx) {
  tl_slot *u = lua_touserdata(L, idx);
  if (!u) return NULL; /* not a userdata (a number next to a store): one API call */
  if (lua_rawlen(L, idx) == sizeof(tl_slot) && u->tag == &tl_store_tag) return &u->store;
  if (lua_type(L, idx) != LUA_TUSERDATA || !lua_getmetatable(L, idx)) return NULL;
  const bool is = lua_topointer(L, -1) == b->store_meta;
  lua_pop(L, 1);
  return is ? lua_touserdata(L, idx) : NULL;
}

ty_store *tl_teststore_in_any(lua_State *L, const tl_box *b, int idx, const char *fn) {
  if (!b || !b->store_meta) return tl_teststore(L, idx, fn);
  ty_store **p = slot_in(L, b, idx);
  if (!p) return NULL;
  if (!*p) tl_error(L, fn, "argument %d is a closed store", idx);
  return *p;
}

ty_store **tl_checkslot_in(lua_State *L, const tl_box *b, int idx) {
  ty_store **p = tl_slot_tagged(L, idx);
  if (p) return p;
  p = b && b->store_meta ? slot_in(L, b, idx) : NULL;
  return p ? p : luaL_checkudata(L, idx, TL_STORE);
}

ty_store *tl_checkstore(lua_State *L, int idx, const char *fn, const char *what) {
  ty_store *s = tl_teststore(L, idx, fn);
  if (!s) tl_error(L, fn, "%s must be a store, got %s", what, tl_typename(L, idx));
  return s;
}

/* "2.5", "-1", or the type name, for "got ..." messages. */
static void describe(lua_State *L, int idx, char *buf, size_t len) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    if (lua_isinteger(L, idx))
      snprintf(buf, len, "%lld", (long long)lua_tointeger(L, idx));
    else
      snprintf(buf, len, "%.14g", (double)lua_tonumber(L, idx));
  } else {
    snprintf(buf, len, "%s", tl_typename(L, idx));
  }
}

static bool toint(lua_State *L, int idx, int64_t *out) {
  int ok = 0;
  if (lua_type(L, idx) != LUA_TNUMBER) return false;
  lua_Integer v = lua_tointegerx(L, idx, &ok);
  *out = (int64_t)v;
  return ok != 0;
}

int64_t tl_checkint(lua_State *L, int idx, const char *fn, const char *what) {
  int64_t v = 0;
  if (!toint(L, idx, &v)) {
    char got[64];
    describe(L, idx, got, sizeof got);
    tl_error(L, fn, "%s must be an integer, got %s", what, got);
  }
  return v;
}

void tl_shape_str(int ndim, const int64_t *shape, char *buf, size_t len) {
  size_t n = 0;
  n += (size_t)snprintf(buf + n, len - n, "(");
  for (int d = 0; d < ndim && n < len; d++)
    n += (size_t)snprintf(buf + n, len - n, d ? ", %" PRId64 : "%" PRId64, shape[d]);
  if (n < len) n += (size_t)snprintf(buf + n, len - n, ndim == 1 ? ",)" : ")");
}

/* One shape entry at the top of the stack. */
static int64_t shape_entry(lua_State *L, int idx, const char *fn, const char *what,
                           bool allow_infer) {
  int64_t v = 0;
  if (!toint(L, idx, &v) || v < (allow_infer ? -1 : 0)) {
    char got[64];
    describe(L, idx, got, sizeof got);
    tl_error(L, fn, "%s must be a non-negative integer%s, got %s", what,
             allow_infer ? " (or -1)" : "", got);
  }
  return v;
}

int tl_checkshape(lua_State *L, int idx, const char *fn, int64_t *shape, bool allow_infer,
                  ty_dtype t) {
  int ndim = 0;
  if (lua_type(L, idx) == LUA_TNUMBER) {
    shape[0] = shape_entry(L, idx, fn, "shape", allow_infer);
    ndim = 1;
  } else if (lua_istable(L, idx)) {
    lua_Unsigned n = lua_rawlen(L, idx);
    if (n > TY_MAX_RANK)
      tl_error(L, fn, "shape has %llu dimensions, at most %d are supported",
               (unsigned long long)n, TY_MAX_RANK);
    for (int k = 0; k < (int)n; k++) {
      char what[32];
      snprintf(what, sizeof what, "shape[%d]", k + 1);
      lua_rawgeti(L, idx, k + 1);
      shape[k] = shape_entry(L, -1, fn, what, allow_infer);
      lua_pop(L, 1);
    }
    ndim = (int)n;
  } else {
    tl_error(L, fn, "shape must be a table of integers or an integer, got %s",
             tl_typename(L, idx));
  }
  /* Refuse sizes whose bytes overflow int64 here, with the shape in the
   * message; the core checks again against the budget. */
  int infer = 0;
  uint64_t bytes = ty_dtype_size(t);
  bool overflow = false;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 0) {
      if (++infer > 1) tl_error(L, fn, "shape may contain -1 only once");
      continue;
    }
    /* zero dims are skipped, as the core does: (0, 2^62, 2^62) is refused */
    if (shape[d] && __builtin_mul_overflow(bytes, (uint64_t)shape[d], &bytes)) overflow = true;
  }
  if (overflow || bytes > (uint64_t)INT64_MAX) {
    char buf[400];
    tl_shape_str(ndim, shape, buf, sizeof buf);
    tl_error(L, fn, "shape %s %s is too large: its size in bytes overflows int64", buf,
             ty_dtype_name(t));
  }
  return ndim;
}

ty_dtype tl_optdtype(lua_State *L, int idx, const char *fn, ty_dtype def) {
  if (lua_isnoneornil(L, idx)) return def;
  if (lua_type(L, idx) != LUA_TSTRING)
    tl_error(L, fn, "dtype must be a string, got %s", tl_typename(L, idx));
  const char *name = lua_tostring(L, idx);
  ty_dtype t;
  if (ty_dtype_parse(name, &t) != TY_OK)
    tl_error(L, fn, "unknown dtype '%s' (expected f64, f32, i64, i32, i16, i8, u64, u32, u16, u8 or bool)", name);
  return t;
}

int tl_checkaxis(lua_State *L, int idx, const char *fn, const char *what, int ndim) {
  int64_t a = tl_checkint(L, idx, fn, what);
  if (ndim == 0) tl_error(L, fn, "%s %lld is out of range: the store is 0-d", what, (long long)a);
  if (a >= 1 && a <= ndim) return (int)(a - 1);
  if (a <= -1 && a >= -ndim) return (int)(ndim + a);
  return tl_error(L, fn, "%s %lld is out of range for a store of rank %d (1..%d or -%d..-1)",
                  what, (long long)a, ndim, ndim, ndim);
}

void tl_pushvalue(lua_State *L, const ty_value *v) {
  switch (v->dtype) {
  case TY_F64:
  case TY_F32: lua_pushnumber(L, (lua_Number)v->f); break;
  case TY_BOOL: lua_pushboolean(L, v->i != 0); break;
  default: tl_pushint(L, v->i, v->dtype); break;
  }
}

int64_t tl_get_int(const char *p, ty_dtype t) {
  switch (t) {
  case TY_I8: { int8_t v; memcpy(&v, p, 1); return v; }
  case TY_I16: { int16_t v; memcpy(&v, p, 2); return v; }
  case TY_I32: { int32_t v; memcpy(&v, p, 4); return v; }
  case TY_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
  case TY_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
  case TY_U8:
  case TY_BOOL: return (unsigned char)*p;
  default: { int64_t v; memcpy(&v, p, 8); return v; } /* i64, u64's bits */
  }
}

void tl_pushint(lua_State *L, int64_t v, ty_dtype t) {
  if (t == TY_U64 && v < 0) lua_pushnumber(L, (lua_Number)(uint64_t)v);
  else lua_pushinteger(L, (lua_Integer)v);
}

void tl_put_int(char *p, ty_dtype t, int64_t v) {
  switch (ty_dtype_size(t)) {
  case 1: { uint8_t w = (uint8_t)v; memcpy(p, &w, 1); break; }
  case 2: { uint16_t w = (uint16_t)v; memcpy(p, &w, 2); break; }
  case 4: { uint32_t w = (uint32_t)v; memcpy(p, &w, 4); break; }
  default: memcpy(p, &v, 8); break;
  }
}

/* tl_weak_dtype of a number already read: isint, and v when it is one. */
static ty_dtype weak_number(bool isint, lua_Integer v, bool has_peer, ty_dtype peer) {
  if (!has_peer) return isint ? TY_I64 : TY_F64;
  if (ty_dtype_is_float(peer)) return peer;
  if (!isint) return TY_F64;
  if (peer == TY_BOOL || peer == TY_I64) return TY_I64;
  int64_t lo;
  uint64_t hi;
  ty_dtype_limits(peer, &lo, &hi);
  if (v >= lo && (v < 0 || (uint64_t)v <= hi)) return peer;
  return peer == TY_U64 ? TY_F64 : TY_I64; /* numpy 1's u64 + negative: f64 */
}

ty_dtype tl_weak_dtype(lua_State *L, int idx, bool has_peer, ty_dtype peer) {
  if (lua_type(L, idx) == LUA_TBOOLEAN) return TY_BOOL;
  bool isint = lua_isinteger(L, idx);
  return weak_number(isint, isint ? lua_tointeger(L, idx) : 0, has_peer, peer);
}

void tl_check_int_fits(lua_State *L, const char *fn, lua_Integer v, ty_dtype t) {
  if (!ty_dtype_is_int(t) || t == TY_I64) return;
  int64_t lo;
  uint64_t hi;
  ty_dtype_limits(t, &lo, &hi);
  if (v < lo || (v >= 0 && (uint64_t)v > hi))
    tl_error(L, fn, "the integer %lld is out of range for %s (%lld..%llu)", (long long)v,
             ty_dtype_name(t), (long long)lo, (unsigned long long)hi);
}

ty_store *tl_scalar(lua_State *L, ty_runtime *rt, int idx, const char *fn, ty_dtype t) {
  ty_store **slot = tl_newslot(L);
  ty_status st;
  if (lua_type(L, idx) == LUA_TBOOLEAN) {
    int64_t v = lua_toboolean(L, idx);
    TL_TRY(L, rt, st, ty_scalar_i64(rt, t, v, slot));
  } else if (lua_isinteger(L, idx)) {
    int64_t v = (int64_t)lua_tointeger(L, idx);
    TL_TRY(L, rt, st, ty_scalar_i64(rt, t, v, slot));
  } else {
    double v = (double)lua_tonumber(L, idx);
    TL_TRY(L, rt, st, ty_scalar_f64(rt, t, v, slot));
  }
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  return *slot;
}

ty_store *tl_operand(lua_State *L, int idx, const char *fn, const ty_store *peer) {
  ty_store *s = tl_teststore(L, idx, fn);
  if (s) return s;
  int tp = lua_type(L, idx);
  if (tp != LUA_TNUMBER && tp != LUA_TBOOLEAN)
    tl_error(L, fn, "argument %d must be a store or a number, got %s", idx, tl_typename(L, idx));
  ty_runtime *rt = tl_rt(L);
  ty_dtype t = tl_weak_dtype(L, idx, peer != NULL, peer ? ty_store_dtype(peer) : TY_F64);
  s = tl_scalar(L, rt, idx, fn, t);
  lua_replace(L, idx);
  return s;
}

void tl_consts_clear(tl_box *b) {
  if (!b) return;
  b->consts_stale = false;
  for (int i = 0; i < TL_CONSTS; i++) {
    ty_store_release(b->consts[i].store);
    b->consts[i].store = NULL;
  }
}

ty_store *tl_const_operand(lua_State *L, int idx, const char *fn, const ty_store *peer) {
  tl_box *b = lua_touserdata(L, lua_upvalueindex(1));
  if (!b) return tl_operand(L, idx, fn, peer);
  return tl_const_operand_in(L, b, idx, fn, peer, false);
}

/* The value is read from the stack once (a type test, an integer test and
 * the number): its dtype, the cache key and the 0-d store come from it. */
ty_store *tl_const_operand_in_any(lua_State *L, tl_box *b, int idx, const char *fn,
                                  const ty_store *peer, bool fits) {
  int tp = lua_type(L, idx);
  if ((tp != LUA_TNUMBER && tp != LUA_TBOOLEAN) || !b->rt)
    return tl_operand(L, idx, fn, peer); /* its errors */
  b->consts_busy = false; /* a call that raised left it set */
  if (b->consts_stale) tl_consts_clear(b);
  const bool isfloat = tp == LUA_TNUMBER && !lua_isinteger(L, idx);
  lua_Integer iv = 0;
  double fv = 0;
  uint64_t bits;
  ty_dtype t;
  if (tp == LUA_TBOOLEAN) {
    iv = lua_toboolean(L, idx);
    bits = (uint64_t)iv;
    t = TY_BOOL;
  } else if (isfloat) {
    fv = (double)lua_tonumber(L, idx);
    bits = tl_const_float_bits(fv);
    t = weak_number(false, 0, peer != NULL, peer ? ty_store_dtype(peer) : TY_F64);
  } else {
    iv = lua_tointeger(L, idx);
    if (fits && peer) tl_check_int_fits(L, fn, iv, ty_store_dtype(peer));
    bits = (uint64_t)iv;
    t = weak_number(true, iv, peer != NULL, peer ? ty_store_dtype(peer) : TY_F64);
  }
  for (int i = 0; i < TL_CONSTS; i++) {
    const struct tl_const *c = &b->consts[i];
    if (c->store && c->dtype == t && c->bits == bits) return c->store;
  }
  ty_store *fresh = NULL;
  ty_status st = isfloat ? ty_scalar_f64(b->rt, t, fv, &fresh)
                         : ty_scalar_i64(b->rt, t, (int64_t)iv, &fresh);
  if (st != TY_OK) return tl_operand(L, idx, fn, peer); /* the usual path, its retries */
  struct tl_const *c = &b->consts[b->consts_next];
  b->consts_next = (b->consts_next + 1) % TL_CONSTS;
  ty_store_release(c->store);
  c->dtype = t;
  c->bits = bits;
  c->store = fresh;
  return fresh;
}

/* 2^53: integers above it do not survive the double that ty_fill takes. */
#define TL_EXACT_DOUBLE (INT64_C(1) << 53)

void tl_fill_value(lua_State *L, ty_runtime *rt, ty_store *dst, int idx, const char *fn) {
  ty_status st;
  int tp = lua_type(L, idx);
  if (tp == LUA_TBOOLEAN) {
    st = ty_fill(rt, dst, lua_toboolean(L, idx) ? 1.0 : 0.0);
  } else if (tp == LUA_TNUMBER) {
    ty_dtype t = ty_store_dtype(dst);
    if (lua_isinteger(L, idx) && !ty_dtype_is_float(t)) {
      lua_Integer v = lua_tointeger(L, idx);
      tl_check_int_fits(L, fn, v, t); /* never saturated or wrapped silently */
      if (v > TL_EXACT_DOUBLE || v < -TL_EXACT_DOUBLE) {
        ty_store *src = tl_scalar(L, rt, idx, fn, TY_I64);
        st = ty_copy(rt, dst, src);
        lua_pop(L, 1);
        if (st != TY_OK) tl_fail(L, rt, fn, st);
        return;
      }
    }
    st = ty_fill(rt, dst, (double)lua_tonumber(L, idx));
  } else {
    tl_error(L, fn, "value must be a number or a boolean, got %s", tl_typename(L, idx));
    return;
  }
  if (st != TY_OK) tl_fail(L, rt, fn, st);
}

/* ---- runtime functions ---------------------------------------------------------- */

static const tl_sig sig_flush = {"flush", 0, 0, "", false, "tycho.flush()"};
static int l_flush(lua_State *L) {
  tl_args(L, &sig_flush);
  ty_runtime *rt = tl_rt(L);
  ty_status st = ty_flush(rt);
  tl_consts_clear(lua_touserdata(L, lua_upvalueindex(1))); /* also after an empty window */
  if (st != TY_OK) tl_fail(L, rt, "flush", st);
  return 0;
}

static void setint(lua_State *L, const char *k, uint64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

static const tl_sig sig_stats = {"stats", 0, 0, "", false, "tycho.stats()"};
static int l_stats(lua_State *L) {
  tl_args(L, &sig_stats);
  ty_stats s;
  ty_get_stats(tl_rt(L), &s);
  tl_box *b = lua_touserdata(L, lua_upvalueindex(1));
  lua_createtable(L, 0, 26);
  setint(L, "lua_tasks", b->tasks ? (uint64_t)b->tasks->ntasks : 0);
  setint(L, "lua_workers", b->tasks ? (uint64_t)tl_workers_open(b->tasks) : 0);
  setint(L, "launches", s.launches);
  setint(L, "flushes", s.flushes);
  setint(L, "pieces", s.pieces);
  setint(L, "bytes_allocated", s.bytes_allocated);
  setint(L, "bytes_freed", s.bytes_freed);
  setint(L, "bytes_live", s.bytes_live);
  setint(L, "bytes_peak", s.bytes_peak);
  setint(L, "bytes_reserved", s.bytes_reserved);
  setint(L, "stores_live", s.stores_live);
  setint(L, "launches_run", s.launches_run);
  setint(L, "fused_runs", s.fused_runs);
  setint(L, "fused_launches", s.fused_launches);
  setint(L, "fused_compiled", s.fused_compiled);
  setint(L, "fused_switched", s.fused_switched);
  setint(L, "copies_folded", s.copies_folded);
  setint(L, "mul_add_pairs", s.mul_add_pairs);
  setint(L, "chained_ops", s.chained_ops);
  setint(L, "double_buffered", s.double_buffered);
  setint(L, "waves_ceded", s.waves_ceded);
  setint(L, "waves_backwards", s.waves_backwards);
  setint(L, "fused_inplace", s.fused_inplace);
  setint(L, "fuse_cache_hits", s.fuse_cache_hits);
  setint(L, "bytes_in_place", s.bytes_in_place);
  setint(L, "bytes_elided", s.bytes_elided);
  setint(L, "waves", s.waves);
  setint(L, "concurrent_launches", s.concurrent_launches);
  /* as stats_text's: concurrent launches over launches run (0 before any) */
  lua_pushnumber(L, s.launches_run ? (double)s.concurrent_launches / (double)s.launches_run : 0);
  lua_setfield(L, -2, "concurrent_fraction");
  setint(L, "widest_wave", s.widest_wave);
  setint(L, "critical_path", s.critical_path);
  setint(L, "peak_transient", s.peak_transient);
  setint(L, "stream_groups", s.stream_groups);
  setint(L, "stream_pieces", s.stream_pieces);
  setint(L, "stream_peak", s.stream_peak);
  setint(L, "gpu_launches", s.gpu_launches);
  setint(L, "gpu_h2d_bytes", s.gpu_h2d_bytes);
  setint(L, "gpu_d2h_bytes", s.gpu_d2h_bytes);
  setint(L, "gpu_d2d_bytes", s.gpu_d2d_bytes);
  setint(L, "gpu_evictions", s.gpu_evictions);
  setint(L, "dist_launches", s.dist_launches);
  setint(L, "dist_bytes", s.dist_bytes);
  setint(L, "dist_collectives", s.dist_collectives);
  setint(L, "dist_messages", s.dist_messages);
  setint(L, "dist_wait_ns", s.dist_wait_ns);
  setint(L, "dist_overlap_pieces", s.dist_overlap_pieces);
  /* where the time went, with tycho.timing(true) or --stats (0 otherwise) */
  setint(L, "timed_ns", s.timed_ns);
  setint(L, "flush_ns", s.flush_ns);
  setint(L, "collect_ns", s.collect_ns);
  setint(L, "fuse_ns", s.fuse_ns);
  setint(L, "schedule_ns", s.schedule_ns);
  setint(L, "tasks_ns", s.tasks_ns);
  setint(L, "launch_ns", s.launch_ns);
  /* the last flush: how it was cut into waves */
  ty_flush_stats f;
  ty_last_flush_stats(tl_rt(L), &f);
  lua_createtable(L, 0, 14);
  lua_pushstring(L, f.favor ? f.favor : "none");
  lua_setfield(L, -2, "favor");
  setint(L, "flush", f.flush);
  setint(L, "launches", (uint64_t)f.launches);
  setint(L, "waves", (uint64_t)f.waves);
  setint(L, "critical_path", (uint64_t)f.critical_path);
  setint(L, "widest", (uint64_t)f.widest);
  setint(L, "concurrent", (uint64_t)f.concurrent);
  lua_pushnumber(L, f.launches > 0 ? (double)f.concurrent / f.launches : 0);
  lua_setfield(L, -2, "concurrent_fraction");
  setint(L, "peak_transient", (uint64_t)f.peak_transient);
  setint(L, "bytes_peak", f.bytes_peak);
  setint(L, "bytes_allocated", f.bytes_allocated);
  setint(L, "bytes_freed", f.bytes_freed);
  setint(L, "bytes_live", f.bytes_live);
  if (f.stream_budget > 0) { /* a streamed scope: its budget, pieces and peak */
    setint(L, "stream_budget", (uint64_t)f.stream_budget);
    setint(L, "stream_groups", (uint64_t)f.stream_groups);
    setint(L, "stream_pieces", (uint64_t)f.stream_pieces);
    setint(L, "stream_peak", (uint64_t)f.stream_peak);
    setint(L, "stream_outputs", (uint64_t)f.stream_outputs);
  }
  lua_setfield(L, -2, "last_flush");
  return 1;
}

/* tycho.stats_text([format]): the figures as text, json or csv (the shell's
 * --stats prints it at exit). */
static const tl_sig sig_stats_text = {"stats_text", 0, 1, "", false, "tycho.stats_text([\"text\" | \"json\" | \"csv\"])"};
static int l_stats_text(lua_State *L) {
  tl_args(L, &sig_stats_text);
  const char *fmt = luaL_optstring(L, 1, "text");
  char *out = NULL;
  ty_runtime *rt = tl_rt(L);
  if (ty_stats_format(rt, fmt, &out) != TY_OK) return luaL_error(L, "tycho.stats_text: %s", ty_errmsg(rt));
  tl_pushtext(L, out);
  return 1;
}

/* tycho.trace_start(path [, svg_path]) / tycho.trace_stop() */
static const tl_sig sig_trace_start = {"trace_start", 1, 2, "", false, "tycho.trace_start(path [, svg_path])"};
static int l_trace_start(lua_State *L) {
  tl_args(L, &sig_trace_start);
  const char *path = luaL_checkstring(L, 1);
  const char *svg = luaL_optstring(L, 2, NULL);
  ty_runtime *rt = tl_rt(L);
  if (ty_trace_start(rt, path, svg) != TY_OK) return luaL_error(L, "tycho.trace_start: %s", ty_errmsg(rt));
  return 0;
}

static const tl_sig sig_trace_stop = {"trace_stop", 0, 0, "", false, "tycho.trace_stop()"};
static int l_trace_stop(lua_State *L) {
  tl_args(L, &sig_trace_stop);
  ty_runtime *rt = tl_rt(L);
  if (ty_trace_stop(rt) != TY_OK) return luaL_error(L, "tycho.trace_stop: %s", ty_errmsg(rt));
  return 0;
}

static const tl_sig sig_config = {"config", 0, 0, "", false, "tycho.config()"};
static int l_config(lua_State *L) {
  tl_args(L, &sig_config);
  const ty_config *c = ty_runtime_config(tl_rt(L));
  lua_createtable(L, 0, 4);
  setint(L, "cpus", (uint64_t)c->cpus);
  setint(L, "sysmem", c->sysmem);
  setint(L, "window", (uint64_t)c->window);
  setint(L, "omps", (uint64_t)c->omps);
  setint(L, "ompthreads", (uint64_t)c->ompthreads);
  {
    ty_runtime *rt = tl_rt(L);
    int n = ty_gpu_count(rt);
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
      ty_gpu_device d;
      if (ty_gpu_info(rt, i, &d) != TY_OK) continue;
      lua_createtable(L, 0, 5);
      lua_pushstring(L, d.name);
      lua_setfield(L, -2, "name");
      setint(L, "memory", d.total_mem);
      setint(L, "pool", d.fbmem);
      setint(L, "sms", (uint64_t)d.sms);
      lua_pushfstring(L, "%d.%d", d.cc_major, d.cc_minor);
      lua_setfield(L, -2, "cc");
      lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "gpus");
    lua_pushstring(L, ty_gpu_status(rt));
    lua_setfield(L, -2, "gpu_status");
  }
  lua_pushstring(L, TY_VERSION);
  lua_setfield(L, -2, "version");
  lua_pushstring(L, ty_isa()); /* the kernels' instruction set */
  lua_setfield(L, -2, "isa");
  lua_pushstring(L, ty_isa_best());
  lua_setfield(L, -2, "isa_best");
  return 1;
}

static const tl_sig sig_memory = {"memory", 0, 0, "", false, "tycho.memory()"};
static int l_memory(lua_State *L) {
  tl_args(L, &sig_memory);
  ty_runtime *rt = tl_rt(L);
  ty_stats s;
  ty_get_stats(rt, &s);
  lua_createtable(L, 0, 4);
  setint(L, "live", s.bytes_live);
  setint(L, "peak", s.bytes_peak);
  setint(L, "reserved", s.bytes_reserved);
  setint(L, "budget", ty_runtime_config(rt)->sysmem);
  return 1;
}

static const tl_sig sig_clock = {"clock", 0, 0, "", false, "tycho.clock()"};
static int l_clock(lua_State *L) {
  tl_args(L, &sig_clock);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
  return 1;
}

/* tycho.timing(on): time the flushes' phases for tycho.stats()'s *_ns
 * figures (true starts them from zero, false stops them); the previous
 * setting back */
static const tl_sig sig_timing = {"timing", 1, 1, "", false, "tycho.timing(on)"};
static int l_timing(lua_State *L) {
  tl_args(L, &sig_timing);
  luaL_checktype(L, 1, LUA_TBOOLEAN);
  lua_pushboolean(L, ty_set_timing(tl_rt(L), lua_toboolean(L, 1)));
  return 1;
}

static const tl_sig sig_seed = {"seed", 1, 1, "", false, "tycho.seed(n)"};
static int l_seed(lua_State *L) {
  tl_args(L, &sig_seed);
  ty_runtime *rt = tl_rt(L);
  int64_t n = tl_checkint(L, 1, "seed", "seed");
  ty_seed(rt, (uint64_t)n);
  return 0;
}

static const tl_sig sig_is_store = {"is_store", 1, 1, "", false, "tycho.is_store(value)"};
static int l_is_store(lua_State *L) {
  tl_args(L, &sig_is_store);
  lua_pushboolean(L, luaL_testudata(L, 1, TL_STORE) != NULL);
  return 1;
}

static const luaL_Reg runtime_funcs[] = {
    {"flush", l_flush},   {"stats", l_stats}, {"config", l_config},
    {"memory", l_memory}, {"clock", l_clock}, {"seed", l_seed}, {"timing", l_timing},
    {"is_store", l_is_store}, {"stats_text", l_stats_text},
    {"trace_start", l_trace_start}, {"trace_stop", l_trace_stop}, {NULL, NULL}};

/* ---- binding ---------------------------------------------------------------------- */

/* t[...] = functions of reg, each with upvalue 1 = the box at `box`. */
static void setfuncs(lua_State *L, int t, int box, const luaL_Reg *reg) {
  lua_pushvalue(L, t);
  lua_pushvalue(L, box);
  luaL_setfuncs(L, reg, 1);
  lua_pop(L, 1);
}

/* The box is at the top of the stack; leaves the module table there instead. */
static int bind(lua_State *L) {
  int box = lua_gettop(L);
  lua_pushvalue(L, box);
  lua_setfield(L, LUA_REGISTRYINDEX, TL_BOX);
  tl_gc_install(L, ((tl_box *)lua_touserdata(L, box))->rt);

  /* Methods: x:exp() is tycho.exp(x); the table is kept in the metatable as
   * __methods so the shell can complete method names. */
  lua_newtable(L);
  int methods = lua_gettop(L);
  setfuncs(L, methods, box, tl_store_methods);
  setfuncs(L, methods, box, tl_ops_methods);
  setfuncs(L, methods, box, tl_create_methods);

  luaL_newmetatable(L, TL_STORE); /* sets __name = "tycho.store" */
  int meta = lua_gettop(L);
  tl_box *bm = lua_touserdata(L, box);
  bm->store_meta = lua_topointer(L, meta);
  lua_pushvalue(L, meta);
  lua_setiuservalue(L, box, 1); /* keeps it with the box */
  lua_pushvalue(L, meta);
  bm->store_meta_ref = luaL_ref(L, LUA_REGISTRYINDEX); /* for tl_newslot_in */
  setfuncs(L, meta, box, tl_store_meta);
  setfuncs(L, meta, box, tl_ops_meta);
  /* Without __gc where the allocator releases stores (lheap.c); removed
   * before any store userdata takes this metatable (Lua decides whether an
   * object has a finalizer when its metatable is set). */
  tl_box *bx = lua_touserdata(L, box);
  if (!bx->heap && (bx->heap = tl_heap_bind(L)) != NULL) {
    lua_pushnil(L);
    lua_setfield(L, meta, "__gc");
  }
  lua_pushvalue(L, box);
  lua_pushvalue(L, methods);
  lua_pushcclosure(L, tl_store_index, 2);
  lua_setfield(L, meta, "__index");
  lua_pushvalue(L, box);
  lua_pushcclosure(L, tl_store_newindex, 1);
  lua_setfield(L, meta, "__newindex");
  lua_pushvalue(L, methods);
  lua_setfield(L, meta, "__methods");
  lua_pop(L, 1); /* meta */

  lua_newtable(L);
  int mod = lua_gettop(L);
  setfuncs(L, mod, box, runtime_funcs);
  setfuncs(L, mod, box, tl_store_funcs);
  setfuncs(L, mod, box, tl_ops_funcs);
  setfuncs(L, mod, box, tl_create_funcs);
  tl_extra_open(L, mod);
  tl_shape_open(L, mod);
  tl_mask_open(L, mod);
  tl_sort_open(L, mod);
  tl_sets_open(L, mod);
  tl_ufunc_open(L, mod);
  tl_linalg_open(L, mod);
  tl_stats_open(L, mod);
  tl_random_open(L, mod);
  tl_textio_open(L, mod);
  tl_dtypes_open(L, mod);
  tl_products_open(L, mod);
  tl_dist_open(L, mod);
  lua_pushstring(L, TY_VERSION);
  lua_setfield(L, mod, "version");
  tl_tasks_open(L, mod, box);
  tl_policy_open(L, mod);

  lua_pushvalue(L, mod);
  lua_setfield(L, LUA_REGISTRYINDEX, TL_MODULE);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_pushvalue(L, mod);
  lua_setfield(L, -2, "tycho");
  lua_pop(L, 1);

  lua_replace(L, box); /* the module where the box was */
  lua_settop(L, box);
  return 1;
}

int ty_lua_bind(lua_State *L, ty_runtime *rt) {
  push_box(L, rt, false);
  return bind(L);
}

int luaopen_tycho(lua_State *L) {
  if (ty_lua_runtime(L)) {
    lua_getfield(L, LUA_REGISTRYINDEX, TL_MODULE);
    return 1;
  }
  ty_config cfg;
  char err[256] = "";
  if (ty_config_init(&cfg, err, sizeof err) != TY_OK)
    return luaL_error(L, "tycho: %s", err[0] ? err : "a TYCHO_* environment variable is invalid");
  tl_box *b = push_box(L, NULL, true);
  ty_status st = ty_runtime_create(&cfg, &b->rt);
  if (st != TY_OK)
    return luaL_error(L, "tycho: cannot create the runtime (%s)", ty_status_name(st));
  return bind(L);
}
