/*
 * lworker.c — the worker Lua states that run Lua task bodies, and what a
 * body sees in them: `ctx` and one tile accessor per store argument.
 *
 * One state per worker index of the runtime (ctx->worker, 0 .. cpus-1),
 * created lazily by the first piece that runs on that worker and reused by
 * every later piece until the binding closes. Pieces that run at the same
 * time have different workers (task.h), so a state is only ever used by one
 * thread at a time and needs no lock; the declaring (caller's) state is never
 * touched from a worker. A state holds:
 *   - the standard libraries, and a small global `tycho` (is_tile, clock,
 *     thread_clock, interrupted, worker) that `require "tycho"` also returns
 *     there;
 *   - a cache of loaded bodies: task id -> closure, valid while the task's
 *     generation matches (a redeclaration bumps it);
 *   - one reusable `ctx` table and one reusable tile record per argument
 *     position, refilled for each piece, so a tiny piece allocates nothing:
 *     the body's tiles are light userdata that encode the piece's generation,
 *     the task and the argument (tile_value), checked on every access.
 * Its stack keeps these at fixed slots (STK_*) between pieces.
 *
 * Tiles read and write with global 1-based indices (negative from the end)
 * and refuse anything outside the piece's own box: a piece that wrote
 * elsewhere would race with the piece that owns those elements. A tile is
 * valid only during its piece: a reference kept in a global is an error when
 * used afterwards, even when a later piece refills the same record (its
 * generation differs), naming the task and argument it was given for.
 *
 * Loading code: a body's load, loadfile, dofile and require take text only,
 * as in the declaring state (lpolicy.c), unless that state allows bytecode
 * (--allow-bytecode): the flag is copied into every worker by
 * tl_workers_allow_bytecode, between flushes.
 *
 * Ctrl-C: a count hook would cost ~2x on every Lua instruction (measured:
 * 1.7-2.1x on a table loop), so bodies are stopped two other ways: every tile
 * access checks ty_interrupt_pending (one atomic load), and
 * tl_workers_interrupt, called from a SIGINT handler (the shell's, or a
 * host's through ty_lua_interrupt), sets a hook on every worker state, as
 * lua.c does for its own state. A piece clears a stale hook when it starts.
 */
#include "tl.h"
#include "tycho_lua.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lualib.h>


/* Fixed stack slots of a worker state between pieces. */
enum { STK_CACHE = 1, STK_CTX, STK_TILES, STK_MSGH, STK_RUN, STK_BASE = STK_RUN };

typedef struct tile {
  bool valid;    /* inside its piece */
  bool writable; /* out, inout, reduce */
  bool whole;    /* in:broadcast: the whole store */
  int argno;     /* position among the call's arguments, for messages */
  int esize;     /* bytes of an element */
  const char *kind;
  struct tl_worker *w;
  ty_tile t;
} tile;

/* What a body holds for a store argument: a light userdata (no allocation)
 * whose value is gen:40 | task id:16 | argno:8. It is valid while the worker
 * runs the piece of that generation; a kept one is stale in any later piece,
 * even one that refills the same record (the generation would have to wrap
 * 2^40 pieces to match again). Light userdata share one metatable per state:
 * the tile metamethods, which refuse any light userdata that does not decode
 * to a live tile. The task id names the task in the message (ids of 2^16 and
 * up read as unknown). */
#define TILE_GEN_BITS 40
#define TILE_GEN_MASK ((UINT64_C(1) << TILE_GEN_BITS) - 1)
#define TILE_NO_TASK 0xffffu

struct tl_worker {
  _Atomic(lua_State *) W; /* NULL until the first piece on this worker */
  ty_runtime *rt;
  int index;
  int poll; /* tile accesses until the next ty_interrupt_pending check */
  /* the piece running (set by tl_lua_task_cpu for run_piece) */
  ty_task_ctx *ctx;
  const tl_ltask *task;
  int split; /* dim of ctx.lo / ctx.hi, 0-based */
  int64_t domain[TY_MAX_RANK];
  int ntiles;
  tile *tiles[TY_MAX_ARGS];
  uint64_t gen; /* +1 per piece, the generation tiles carry */
  char (*names)[TY_MAX_NAME]; /* per task id (ngens of them): its name, for messages */
  unsigned *gens; /* per task id: generation of the cached closure, 0: none */
  int ngens;
  bool allow_bytecode; /* load & co. accept precompiled chunks (set between flushes) */
};


/* ---- elements -------------------------------------------------------------------- */

static void push_elem(lua_State *W, const char *p, ty_dtype t) {
  switch (t) {
  case TY_F64: lua_pushnumber(W, *(const double *)p); break;
  case TY_F32: lua_pushnumber(W, *(const float *)p); break;
  case TY_I64: lua_pushinteger(W, *(const int64_t *)p); break;
  case TY_I32: lua_pushinteger(W, *(const int32_t *)p); break;
  case TY_U8: lua_pushinteger(W, *(const uint8_t *)p); break;
  case TY_BOOL: lua_pushboolean(W, *(const uint8_t *)p != 0); break;
  default: tl_pushint(W, tl_get_int(p, t), t); break; /* the dtypes added later */
  }
}


/* A u64 element of 2^63 or more reaches Lua as a float (docs/dtypes.md):
 * such a float going back into a u64 store takes the float rule (whole
 * already, saturating at 2^64 - 1), so `x[i] = x[i] + 1` keeps working
 * past 2^63. False for anything else. */
static bool u64_from_float(lua_State *W, int v, ty_dtype dt, lua_Integer *out) {
  if (dt != TY_U64 || !lua_isnumber(W, v) || lua_isinteger(W, v)) return false;
  const double f = lua_tonumber(W, v);
  if (!(f >= 9223372036854775808.0)) return false; /* NaN too */
  *out = (lua_Integer)(f >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)f);
  return true;
}

/* Write the Lua value at v into p: numbers into numeric dtypes (integers
 * wrap like a C cast, as numpy's astype), booleans (or numbers, non-zero)
 * into bool. */
static void set_elem(lua_State *W, char *p, const tile *t, int v) {
  ty_dtype dt = t->t.dtype;
  int tp = lua_type(W, v);
  if (dt == TY_BOOL) {
    if (tp == LUA_TBOOLEAN) *(uint8_t *)p = (uint8_t)lua_toboolean(W, v);
    else if (tp == LUA_TNUMBER) *(uint8_t *)p = lua_tonumber(W, v) != 0;
    else luaL_error(W, "argument %d (%s): a bool element takes a boolean, got %s", t->argno,
                    t->kind, luaL_typename(W, v));
    return;
  }
  if (tp != LUA_TNUMBER)
    luaL_error(W, "argument %d (%s): a %s element takes a number, got %s", t->argno, t->kind,
               ty_dtype_name(dt), luaL_typename(W, v));
  if (dt == TY_F64) {
    *(double *)p = lua_tonumber(W, v);
    return;
  }
  if (dt == TY_F32) {
    *(float *)p = (float)lua_tonumber(W, v);
    return;
  }
  int ok = 0;
  lua_Integer i = lua_tointegerx(W, v, &ok);
  if (!ok && u64_from_float(W, v, dt, &i)) ok = 1;
  if (!ok)
    luaL_error(W, "argument %d (%s): %s is not an integer (the store is %s)", t->argno, t->kind,
               lua_tostring(W, v), ty_dtype_name(dt));
  switch (dt) {
  case TY_I64: *(int64_t *)p = i; break;
  case TY_I32: *(int32_t *)p = (int32_t)(uint32_t)i; break;
  case TY_U8: *(uint8_t *)p = (uint8_t)i; break;
  default: tl_put_int(p, dt, i); break; /* the dtypes added later: wrap */
  }
}

/* ---- tiles --------------------------------------------------------------------- */

/* Accesses between two looks at the interrupt flag: ~10 us of tile accesses,
 * so Ctrl-C stops a body at once, at no measurable cost per access. */
#define TL_POLL_EVERY 256

static void *tile_value(uint64_t gen, int task, int argno) {
  uint64_t id = task >= 0 && task < (int)TILE_NO_TASK ? (uint64_t)task : TILE_NO_TASK;
  return (void *)(uintptr_t)(((gen & TILE_GEN_MASK) << 24) | (id << 8) | (uint64_t)argno);
}

/* The parts of the light userdata at idx; false when it is not one, or its
 * argument number cannot be a tile's. */
static bool tile_parts(lua_State *W, int idx, uint64_t *gen, unsigned *task, int *argno) {
  if (lua_type(W, idx) != LUA_TLIGHTUSERDATA) return false;
  uint64_t v = (uint64_t)(uintptr_t)lua_touserdata(W, idx);
  *gen = v >> 24;
  *task = (unsigned)(v >> 8) & 0xffffu;
  *argno = (int)(v & 0xff);
  return *argno >= 1 && *argno <= TY_MAX_ARGS;
}

/* The record of a live tile at idx, or NULL (stale, or not a tile). */
static tile *live_tile(lua_State *W, const tl_worker *w, int idx) {
  uint64_t gen = 0;
  unsigned task = TILE_NO_TASK;
  int argno = 0;
  if (!tile_parts(W, idx, &gen, &task, &argno) || !w->task) return NULL;
  if (gen != (w->gen & TILE_GEN_MASK) || argno > w->task->nargs) return NULL;
  const tl_argspec *a = &w->task->args[argno - 1];
  if (a->kind == TL_SCALAR || a->slot >= w->ntiles) return NULL;
  tile *t = w->tiles[a->slot];
  return t->valid ? t : NULL;
}

static const char *task_name(const tl_worker *w, unsigned task) {
  return task != TILE_NO_TASK && (int)task < w->ngens && w->names[task][0] ? w->names[task] : "?";
}

/* Every tile function has the worker as upvalue 1. */
static tile *checktile(lua_State *W, int idx) {
  tl_worker *w = lua_touserdata(W, lua_upvalueindex(1));
  tile *t = live_tile(W, w, idx);
  if (!t) {
    uint64_t gen = 0;
    unsigned task = TILE_NO_TASK;
    int argno = 0;
    if (!tile_parts(W, idx, &gen, &task, &argno)) luaL_typeerror(W, idx, "tycho tile");
    luaL_error(W, "tile used outside the piece it was given to (task '%s', argument %d): a tile "
               "is valid only inside the piece it was given to", task_name(w, task), argno);
  }
  if (--t->w->poll <= 0) {
    t->w->poll = TL_POLL_EVERY;
    if (ty_interrupt_pending(t->w->rt)) luaL_error(W, "interrupted");
  }
  return t;
}

/* The address of element i (1-based, global) of a valid 1-D tile, or NULL
 * when i is outside it: the fast path of a[i] and a[i] = v. */
static inline char *fast1(const tile *t, lua_Integer i) {
  if (t->t.ndim != 1) return NULL;
  if (i < 0) i += t->t.gshape[0] + 1;
  uint64_t i0 = (uint64_t)(i - 1 - t->t.lo[0]);
  if (i0 >= (uint64_t)t->t.shape[0]) return NULL;
  return t->t.data + (int64_t)i0 * t->t.strides[0] * t->esize;
}

static int out_of_range(lua_State *W, const tile *t, int dim, int64_t given) {
  int64_t n = t->t.gshape[dim];
  if (t->whole || given < 1 || given > n)
    return luaL_error(W, "argument %d (%s): index %I is out of range 1..%I of dimension %d",
                      t->argno, t->kind, (lua_Integer)given, (lua_Integer)n, dim + 1);
  int64_t lo = t->t.lo[dim] + 1, hi = t->t.lo[dim] + t->t.shape[dim];
  return luaL_error(W,
                    "argument %d (%s): index %I of dimension %d is outside this piece (%I..%I): "
                    "a piece reads and writes only its own elements%s",
                    t->argno, t->kind, (lua_Integer)given, dim + 1, (lua_Integer)lo,
                    (lua_Integer)hi,
                    t->writable ? "" : "; declare the argument \"in:broadcast\" to read all of it");
}

/* Address of the element at 1-based global indices g[0..n-1]. */
static char *elem(lua_State *W, const tile *t, const int64_t *g, int n) {
  if (n != t->t.ndim)
    luaL_error(W, "argument %d (%s) has rank %d, got %d %s", t->argno, t->kind, t->t.ndim, n,
               n == 1 ? "index" : "indices");
  int64_t off = 0;
  for (int k = 0; k < n; k++) {
    int64_t i = g[k] < 0 ? g[k] + t->t.gshape[k] + 1 : g[k];
    int64_t i0 = i - 1 - t->t.lo[k];
    if (i0 < 0 || i0 >= t->t.shape[k]) out_of_range(W, t, k, i);
    off += i0 * t->t.strides[k];
  }
  return t->t.data + off * t->esize;
}

/* The 1-D fast path of a[i]. */
static char *elem1(lua_State *W, const tile *t, lua_Integer i) {
  if (t->t.ndim != 1)
    luaL_error(W, "argument %d (%s) has rank %d: index it with a[{i, j}] or a:get(i, j)", t->argno,
               t->kind, t->t.ndim);
  int64_t g = (int64_t)i;
  return elem(W, t, &g, 1);
}

static int64_t index_at(lua_State *W, const tile *t, int idx) {
  int ok = 0;
  lua_Integer i = lua_type(W, idx) == LUA_TNUMBER ? lua_tointegerx(W, idx, &ok) : 0;
  if (!ok)
    luaL_error(W, "argument %d (%s): an index must be an integer, got %s", t->argno, t->kind,
               lua_type(W, idx) == LUA_TNUMBER ? lua_tostring(W, idx) : luaL_typename(W, idx));
  return (int64_t)i;
}

/* Indices from the table at tidx ({i, j, ...}). */
static char *elem_table(lua_State *W, const tile *t, int tidx) {
  int64_t g[TY_MAX_RANK];
  lua_Unsigned n = lua_rawlen(W, tidx);
  if (n > TY_MAX_RANK) n = TY_MAX_RANK + 1;
  for (int k = 0; k < (int)n && k < TY_MAX_RANK; k++) {
    lua_rawgeti(W, tidx, k + 1);
    g[k] = index_at(W, t, -1);
    lua_pop(W, 1);
  }
  return elem(W, t, g, (int)n);
}

/* Indices from the stack, first..last. */
static char *elem_stack(lua_State *W, const tile *t, int first, int last) {
  int64_t g[TY_MAX_RANK];
  int n = last - first + 1;
  if (n > TY_MAX_RANK) n = TY_MAX_RANK + 1;
  for (int k = 0; k < n && k < TY_MAX_RANK; k++) g[k] = index_at(W, t, first + k);
  return elem(W, t, g, n < 0 ? 0 : n);
}

static void check_writable(lua_State *W, const tile *t) {
  if (!t->writable) luaL_error(W, "argument %d (%s) is read-only", t->argno, t->kind);
}

static int t_get(lua_State *W) {
  tile *t = checktile(W, 1);
  push_elem(W, elem_stack(W, t, 2, lua_gettop(W)), t->t.dtype);
  return 1;
}

static int t_set(lua_State *W) {
  tile *t = checktile(W, 1);
  int top = lua_gettop(W);
  if (top < 2) return luaL_error(W, "argument %d (%s): set needs indices and a value", t->argno,
                                 t->kind);
  check_writable(W, t);
  set_elem(W, elem_stack(W, t, 2, top - 1), t, top);
  return 0;
}

/* a:range([d]) -> first, last global index of this tile along dim d. */
static int t_range(lua_State *W) {
  tile *t = checktile(W, 1);
  lua_Integer d = luaL_optinteger(W, 2, 1);
  if (d < 1 || d > t->t.ndim)
    return luaL_error(W, "argument %d (%s): dimension %I is out of range 1..%d", t->argno,
                      t->kind, d, t->t.ndim);
  lua_pushinteger(W, (lua_Integer)(t->t.lo[d - 1] + 1));
  lua_pushinteger(W, (lua_Integer)(t->t.lo[d - 1] + t->t.shape[d - 1]));
  return 2;
}

static int t_index(lua_State *W) {
  tile *t = checktile(W, 1);
  int isint = 0;
  lua_Integer i = lua_tointegerx(W, 2, &isint); /* one API call on the hot path */
  if (isint) {
    char *p = fast1(t, i);
    if (p) {
      if (t->t.dtype == TY_F64) lua_pushnumber(W, *(const double *)p);
      else push_elem(W, p, t->t.dtype);
      return 1;
    }
  }
  switch (lua_type(W, 2)) {
  case LUA_TNUMBER:
    push_elem(W, elem1(W, t, (lua_Integer)index_at(W, t, 2)), t->t.dtype);
    return 1;
  case LUA_TTABLE: push_elem(W, elem_table(W, t, 2), t->t.dtype); return 1;
  case LUA_TSTRING: {
    const char *k = lua_tostring(W, 2);
    /* upvalues 2..4: t_get, t_set, t_range, closures over the worker */
    if (strcmp(k, "get") == 0) lua_pushvalue(W, lua_upvalueindex(2));
    else if (strcmp(k, "set") == 0) lua_pushvalue(W, lua_upvalueindex(3));
    else if (strcmp(k, "range") == 0) lua_pushvalue(W, lua_upvalueindex(4));
    else if (strcmp(k, "dtype") == 0) lua_pushstring(W, ty_dtype_name(t->t.dtype));
    else if (strcmp(k, "ndim") == 0) lua_pushinteger(W, t->t.ndim);
    else if (strcmp(k, "shape") == 0) {
      lua_createtable(W, t->t.ndim, 0);
      for (int d = 0; d < t->t.ndim; d++) {
        lua_pushinteger(W, (lua_Integer)t->t.gshape[d]);
        lua_rawseti(W, -2, d + 1);
      }
    } else {
      return luaL_error(W, "argument %d (%s): no field '%s' (a tile has shape, dtype, ndim, "
                        "get, set, range)", t->argno, t->kind, k);
    }
    return 1;
  }
  default:
    return luaL_error(W, "argument %d (%s): an index must be an integer or a table {i, j, ...}, "
                      "got %s", t->argno, t->kind, luaL_typename(W, 2));
  }
}

static int t_newindex(lua_State *W) {
  tile *t = checktile(W, 1);
  check_writable(W, t);
  int isint = 0;
  lua_Integer i = lua_tointegerx(W, 2, &isint);
  if (isint) {
    char *p = fast1(t, i);
    if (p && t->t.dtype == TY_F64 && lua_type(W, 3) == LUA_TNUMBER) {
      *(double *)p = lua_tonumber(W, 3);
      return 0;
    }
    if (p) {
      set_elem(W, p, t, 3);
      return 0;
    }
  }
  switch (lua_type(W, 2)) {
  case LUA_TNUMBER: set_elem(W, elem1(W, t, (lua_Integer)index_at(W, t, 2)), t, 3); return 0;
  case LUA_TTABLE: set_elem(W, elem_table(W, t, 2), t, 3); return 0;
  default:
    return luaL_error(W, "argument %d (%s): an index must be an integer or a table {i, j, ...}, "
                      "got %s", t->argno, t->kind, luaL_typename(W, 2));
  }
}

static int t_len(lua_State *W) {
  tile *t = checktile(W, 1);
  if (t->t.ndim == 0) return luaL_error(W, "argument %d (%s) is 0-d", t->argno, t->kind);
  lua_pushinteger(W, (lua_Integer)t->t.gshape[0]);
  return 1;
}

static int t_tostring(lua_State *W) {
  tl_worker *w = lua_touserdata(W, lua_upvalueindex(1));
  const tile *t = live_tile(W, w, 1);
  if (!t) {
    uint64_t gen = 0;
    unsigned task = TILE_NO_TASK;
    int argno = 0;
    if (tile_parts(W, 1, &gen, &task, &argno) && gen <= (w->gen & TILE_GEN_MASK) && gen > 0)
      lua_pushfstring(W, "tycho.tile (outside its piece: task '%s', argument %d)",
                      task_name(w, task), argno);
    else
      lua_pushfstring(W, "userdata: %p", lua_touserdata(W, 1));
    return 1;
  }
  char shape[256];
  tl_shape_str(t->t.ndim, t->t.gshape, shape, sizeof shape);
  lua_pushfstring(W, "tycho.tile(argument %d, %s, %s, shape %s)", t->argno, t->kind,
                  ty_dtype_name(t->t.dtype), shape);
  return 1;
}

static const luaL_Reg tile_meta[] = {{"__newindex", t_newindex}, {"__len", t_len},
                                     {"__tostring", t_tostring}, {NULL, NULL}};

/* ---- reductions returned by the body ------------------------------------------------ */

static double red_f(ty_redop op, double a, double b) {
  switch (op) {
  case TY_REDOP_SUM: return a + b;
  case TY_REDOP_PROD: return a * b;
  case TY_REDOP_MIN: return (a != a || b != b) ? (a != a ? a : b) : (b < a ? b : a);
  case TY_REDOP_MAX: return (a != a || b != b) ? (a != a ? a : b) : (b > a ? b : a);
  default: return a;
  }
}

static int64_t red_i(ty_redop op, int64_t a, int64_t b) {
  switch (op) {
  case TY_REDOP_SUM: return (int64_t)((uint64_t)a + (uint64_t)b);
  case TY_REDOP_PROD: return (int64_t)((uint64_t)a * (uint64_t)b);
  case TY_REDOP_MIN: return b < a ? b : a;
  case TY_REDOP_MAX: return b > a ? b : a;
  default: return a;
  }
}

/* The body returned the value at v for reduction tile t: private = private op v.
 * Only for a tile of one distinct element (a 0-d result, or one broadcast over
 * the launch). */
static void combine_return(lua_State *W, tile *t, ty_redop op, int v) {
  if (lua_isnil(W, v)) return;
  for (int k = 0; k < t->t.ndim; k++)
    if (t->t.strides[k] != 0 && t->t.shape[k] > 1)
      luaL_error(W, "argument %d (%s): the body returned a value for a reduction whose piece has "
                 "several elements; accumulate into it instead (r[i] = r[i] + v)",
                 t->argno, t->kind);
  if (!t->t.data) return; /* an empty piece */
  char *p = t->t.data;
  int tp = lua_type(W, v);
  if (tp != LUA_TNUMBER && tp != LUA_TBOOLEAN)
    luaL_error(W, "argument %d (%s): the body returned %s for a reduction, not a number",
               t->argno, t->kind, luaL_typename(W, v));
  ty_dtype dt = t->t.dtype;
  if (dt == TY_F64 || dt == TY_F32) {
    double a = dt == TY_F64 ? *(double *)p : *(float *)p;
    double r = red_f(op, a, lua_tonumber(W, v));
    if (dt == TY_F64) *(double *)p = r;
    else *(float *)p = (float)r;
    return;
  }
  int64_t b;
  if (tp == LUA_TBOOLEAN) {
    b = lua_toboolean(W, v);
  } else {
    int ok = 0;
    b = (int64_t)lua_tointegerx(W, v, &ok);
    lua_Integer u;
    if (!ok && u64_from_float(W, v, dt, &u)) ok = 1, b = (int64_t)u;
    if (!ok)
      luaL_error(W, "argument %d (%s): the body returned %s for an integer reduction", t->argno,
                 t->kind, lua_tostring(W, v));
  }
  switch (dt) {
  case TY_I64: *(int64_t *)p = red_i(op, *(int64_t *)p, b); break;
  case TY_I32: *(int32_t *)p = (int32_t)red_i(op, *(int32_t *)p, b); break;
  case TY_U8: *(uint8_t *)p = (uint8_t)red_i(op, *(uint8_t *)p, b); break;
  case TY_BOOL: *(uint8_t *)p = red_i(op, *(uint8_t *)p, b != 0) != 0; break;
  case TY_U64: /* min/max compare the bits unsigned */
    if (op == TY_REDOP_MIN || op == TY_REDOP_MAX) {
      const uint64_t a = (uint64_t)tl_get_int(p, dt), ub = (uint64_t)b;
      tl_put_int(p, dt, (int64_t)((ub < a) == (op == TY_REDOP_MIN) ? ub : a));
    } else {
      tl_put_int(p, dt, red_i(op, tl_get_int(p, dt), b));
    }
    break;
  default: tl_put_int(p, dt, red_i(op, tl_get_int(p, dt), b)); break;
  }
}

/* ---- running a piece --------------------------------------------------------------- */

static tile *tile_for(lua_State *W, tl_worker *w, int slot) {
  while (w->ntiles <= slot) {
    tile *t = lua_newuserdatauv(W, sizeof *t, 0);
    memset(t, 0, sizeof *t);
    t->w = w;
    lua_rawseti(W, STK_TILES, w->ntiles + 1); /* anchored for the state's life */
    w->tiles[w->ntiles++] = t;
  }
  return w->tiles[slot];
}

static void push_scalar(lua_State *W, const ty_task_ctx *c, int k) {
  switch (ty_lua_scalar_kind(c, k)) {
  case TY_LUA_SCALAR_F64: lua_pushnumber(W, ty_lua_scalar_f64(c, k)); break;
  case TY_LUA_SCALAR_I64: lua_pushinteger(W, ty_lua_scalar_i64(c, k)); break;
  case TY_LUA_SCALAR_BOOL: lua_pushboolean(W, ty_lua_scalar_i64(c, k) != 0); break;
  case TY_LUA_SCALAR_STR: lua_pushstring(W, ty_lua_scalar_str(c, k)); break;
  default: lua_pushnil(W); break;
  }
}

static void set_int(lua_State *W, int t, const char *k, int64_t v) {
  lua_pushinteger(W, (lua_Integer)v);
  lua_setfield(W, t, k);
}

/* Runs protected, with (cache, ctx, tiles, worker) as arguments at the
 * STK_* positions. */
static int run_piece(lua_State *W) {
  tl_worker *w = lua_touserdata(W, 4);
  const tl_ltask *t = w->task;
  ty_task_ctx *c = w->ctx;
  if (t->id >= w->ngens) {
    int n = t->id + 16;
    unsigned *g = realloc(w->gens, (size_t)n * sizeof *g);
    if (g) w->gens = g;
    char(*names)[TY_MAX_NAME] = g ? realloc(w->names, (size_t)n * sizeof *names) : NULL;
    if (!names) return luaL_error(W, "out of memory");
    w->names = names;
    memset(g + w->ngens, 0, (size_t)(n - w->ngens) * sizeof *g);
    memset(names + w->ngens, 0, (size_t)(n - w->ngens) * sizeof *names);
    w->ngens = n;
  }
  if (w->gens[t->id] != t->gen) {
    snprintf(w->names[t->id], sizeof w->names[t->id], "%s", t->name);
    tl_body_push(W, t->body);
    lua_pushvalue(W, -1);
    lua_rawseti(W, STK_CACHE, t->id + 1);
    w->gens[t->id] = t->gen;
  } else {
    lua_rawgeti(W, STK_CACHE, t->id + 1);
  }
  int fn = lua_gettop(W);

  int d = w->split;
  set_int(W, STK_CTX, "piece", c->piece + 1);
  set_int(W, STK_CTX, "pieces", c->pieces);
  set_int(W, STK_CTX, "lo", c->ndim ? c->lo[d] + 1 : 1);
  set_int(W, STK_CTX, "hi", c->ndim ? c->hi[d] : 1);
  set_int(W, STK_CTX, "dim", c->ndim ? d + 1 : 0);
  set_int(W, STK_CTX, "ndim", c->ndim);
  lua_pushvalue(W, STK_CTX);

  luaL_checkstack(W, t->nargs + 4, "too many task arguments");
  w->gen++;
  for (int k = 0; k < t->nargs; k++) {
    const tl_argspec *a = &t->args[k];
    if (a->kind == TL_SCALAR) {
      push_scalar(W, c, a->slot);
      continue;
    }
    tile *tl = tile_for(W, w, a->slot);
    tl->t = c->args[a->slot];
    tl->esize = (int)ty_dtype_size(tl->t.dtype);
    tl->valid = true;
    tl->writable = a->kind == TL_OUT || a->kind == TL_INOUT || a->kind == TL_REDUCE;
    tl->whole = a->kind == TL_WHOLE;
    tl->argno = k + 1;
    tl->kind = a->text;
    lua_pushlightuserdata(W, tile_value(w->gen, t->id, k + 1));
  }
  lua_call(W, 1 + t->nargs, LUA_MULTRET);

  /* returned values go to the reduction arguments, in order */
  int nret = lua_gettop(W) - fn + 1, r = 0;
  for (int k = 0; k < t->nargs && r < nret; k++)
    if (t->args[k].kind == TL_REDUCE) combine_return(W, w->tiles[t->args[k].slot], t->args[k].redop,
                                                     fn + r++);
  return 0;
}

/* lua.c's message handler: the message and a traceback. */
static int msgh(lua_State *W) {
  const char *msg = lua_tostring(W, 1);
  if (!msg) {
    if (luaL_callmeta(W, 1, "__tostring") && lua_type(W, -1) == LUA_TSTRING)
      msg = lua_tostring(W, -1);
    else
      msg = lua_pushfstring(W, "(error object is a %s value)", luaL_typename(W, 1));
  }
  luaL_traceback(W, W, msg, 1);
  return 1;
}

/* Copy msg into buf without the traceback's lines for C frames ("\t[C]: in
 * ..."): the tile accessors, error() and run_piece say nothing the reader of
 * a body's error needs, and ctx->errbuf is small. */
static void trim_traceback(const char *msg, char *buf, size_t len) {
  size_t n = 0;
  const char *p = msg;
  while (*p && n + 1 < len) {
    const char *nl = strchr(p, '\n');
    size_t l = nl ? (size_t)(nl - p) + 1 : strlen(p);
    bool c_frame = p != msg && strncmp(p, "\t[C]:", 5) == 0;
    if (!c_frame) {
      size_t m = l < len - 1 - n ? l : len - 1 - n;
      memcpy(buf + n, p, m);
      n += m;
    }
    p += l;
  }
  while (n > 0 && buf[n - 1] == '\n') n--;
  buf[n] = 0;
}

static void stop_hook(lua_State *W, lua_Debug *ar) {
  (void)ar;
  lua_sethook(W, NULL, 0, 0);
  luaL_error(W, "interrupted");
}

/* ---- loading code in a worker --------------------------------------------------------- */

/* Lua's own refusal of a binary chunk in a text-only mode (ldo.c's checkmode). */
#define BINARY_REFUSED "attempt to load a binary chunk"

/* `mode` without 'b' when the worker refuses bytecode (buf holds it). */
static const char *text_mode(const tl_worker *w, const char *mode, char *buf) {
  if (w->allow_bytecode || !strchr(mode, 'b')) return mode;
  size_t n = 0;
  for (const char *p = mode; *p && n < 3; p++)
    if (*p != 'b') buf[n++] = *p;
  buf[n] = '\0';
  return buf;
}

/* The message at idx, when it is Lua's refusal we caused, names the flag. */
static void explain_refusal(lua_State *W, int idx, const char *what) {
  idx = lua_absindex(W, idx);
  const char *msg = lua_tostring(W, idx);
  if (!msg || !strstr(msg, BINARY_REFUSED)) return;
  lua_pushfstring(W, "%s: precompiled Lua bytecode is refused: the Lua VM does not verify it, "
                  "and a bad chunk can crash the process (run tycho with --allow-bytecode, or "
                  "set TYCHO_ALLOW_BYTECODE=1, to load it)", what);
  lua_replace(W, idx);
}

/* load(chunk [, name [, mode [, env]]]): the base library's, upvalue 2. */
static int w_load(lua_State *W) {
  const tl_worker *w = lua_touserdata(W, lua_upvalueindex(1));
  const char *mode = luaL_optstring(W, 3, "bt");
  char buf[4];
  const char *eff = text_mode(w, mode, buf);
  int n = lua_gettop(W) < 3 ? 3 : lua_gettop(W);
  lua_settop(W, n);
  lua_pushstring(W, eff);
  lua_replace(W, 3);
  lua_pushvalue(W, lua_upvalueindex(2));
  lua_insert(W, 1);
  lua_call(W, n, LUA_MULTRET);
  if (eff != mode && lua_isnil(W, 1) && lua_gettop(W) >= 2) explain_refusal(W, 2, "load");
  return lua_gettop(W);
}

/* luaL_loadfilex with the worker's mode; the message on failure. */
static int load_file(lua_State *W, const tl_worker *w, const char *fname, const char *mode) {
  char buf[4];
  const char *eff = text_mode(w, mode ? mode : "bt", buf);
  int st = luaL_loadfilex(W, fname, eff);
  if (st != LUA_OK && eff == buf) explain_refusal(W, -1, fname ? fname : "stdin");
  return st;
}

/* loadfile([filename [, mode [, env]]]) */
static int w_loadfile(lua_State *W) {
  const tl_worker *w = lua_touserdata(W, lua_upvalueindex(1));
  const char *fname = luaL_optstring(W, 1, NULL);
  const char *mode = luaL_optstring(W, 2, NULL);
  int env = !lua_isnone(W, 3) ? 3 : 0;
  if (load_file(W, w, fname, mode) != LUA_OK) {
    luaL_pushfail(W);
    lua_insert(W, -2);
    return 2;
  }
  if (env) {
    lua_pushvalue(W, env);
    if (!lua_setupvalue(W, -2, 1)) lua_pop(W, 1);
  }
  return 1;
}

/* dofile([filename]) */
static int w_dofile(lua_State *W) {
  const tl_worker *w = lua_touserdata(W, lua_upvalueindex(1));
  const char *fname = luaL_optstring(W, 1, NULL);
  lua_settop(W, 1);
  if (load_file(W, w, fname, NULL) != LUA_OK) return lua_error(W);
  lua_call(W, 0, LUA_MULTRET);
  return lua_gettop(W) - 1;
}

/* package.searchers[2]: Lua files along package.path (as loadlib.c's). */
static int w_searcher(lua_State *W) {
  const tl_worker *w = lua_touserdata(W, lua_upvalueindex(1));
  const char *name = luaL_checkstring(W, 1);
  lua_settop(W, 1);
  luaL_getsubtable(W, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(W, -1, "package") != LUA_TTABLE) return luaL_error(W, "'package' is not a table");
  lua_getfield(W, -1, "searchpath");
  lua_pushvalue(W, 1);
  if (lua_getfield(W, -3, "path") != LUA_TSTRING)
    return luaL_error(W, "'package.path' must be a string");
  lua_call(W, 2, 2);
  if (lua_isnil(W, -2)) return 1; /* the "no file ..." message */
  lua_pop(W, 1);
  const char *filename = lua_tostring(W, -1);
  if (load_file(W, w, filename, NULL) == LUA_OK) {
    lua_pushstring(W, filename);
    return 2;
  }
  return luaL_error(W, "error loading module '%s' from file '%s':\n\t%s", name, filename,
                    lua_tostring(W, -1));
}

/* Replace the loaders of a fresh worker state (the global table on top). */
static void install_loaders(lua_State *W, tl_worker *w) {
  int top = lua_gettop(W);
  lua_pushlightuserdata(W, w);
  lua_getfield(W, -2, "load");
  lua_pushcclosure(W, w_load, 2);
  lua_setfield(W, -2, "load");
  lua_pushlightuserdata(W, w);
  lua_pushcclosure(W, w_loadfile, 1);
  lua_setfield(W, -2, "loadfile");
  lua_pushlightuserdata(W, w);
  lua_pushcclosure(W, w_dofile, 1);
  lua_setfield(W, -2, "dofile");
  luaL_getsubtable(W, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(W, -1, "package") == LUA_TTABLE &&
      lua_getfield(W, -1, "searchers") == LUA_TTABLE) {
    lua_pushlightuserdata(W, w);
    lua_pushcclosure(W, w_searcher, 1);
    lua_rawseti(W, -2, 2);
  }
  lua_settop(W, top);
}

/* ---- the worker's globals ------------------------------------------------------------ */

/* A tile, live or stale: a light userdata that decodes to a piece this
 * worker has run. */
static int w_is_tile(lua_State *W) {
  tl_worker *w = lua_touserdata(W, lua_upvalueindex(1));
  uint64_t gen = 0;
  unsigned task = TILE_NO_TASK;
  int argno = 0;
  lua_pushboolean(W, tile_parts(W, 1, &gen, &task, &argno) && gen > 0 &&
                         gen <= (w->gen & TILE_GEN_MASK));
  return 1;
}

/* tycho.clock() in a worker: the same clock as the caller's tycho.clock. */
static int w_clock(lua_State *W) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(W, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
  return 1;
}

/* tycho.thread_clock(): CPU seconds of the worker's thread (what a piece
 * computed, whatever else the machine was doing). */
static int w_thread_clock(lua_State *W) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  lua_pushnumber(W, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
  return 1;
}

static int w_interrupted(lua_State *W) {
  tl_worker *w = lua_touserdata(W, lua_upvalueindex(1));
  lua_pushboolean(W, ty_interrupt_pending(w->rt));
  return 1;
}

/* ctx:range(d) / ctx.range(d): first, last index of this piece along launch dim d. */
static int ctx_range(lua_State *W) {
  tl_worker *w = lua_touserdata(W, lua_upvalueindex(1));
  int arg = lua_istable(W, 1) ? 2 : 1;
  const ty_task_ctx *c = w->ctx;
  if (!c) return luaL_error(W, "ctx.range: no piece is running");
  lua_Integer d = luaL_optinteger(W, arg, 1);
  if (d < 1 || d > c->ndim)
    return luaL_error(W, "ctx.range: dimension %I is out of range 1..%d", d, c->ndim);
  lua_pushinteger(W, (lua_Integer)(c->lo[d - 1] + 1));
  lua_pushinteger(W, (lua_Integer)c->hi[d - 1]);
  return 2;
}

/* Protected set-up of a new worker state; leaves the STK_* values. */
static int setup(lua_State *W) {
  tl_worker *w = lua_touserdata(W, 1);
  lua_settop(W, 0);
  luaL_openlibs(W);
  lua_pushglobaltable(W);
  install_loaders(W, w);
  lua_pop(W, 1);
  /* the metatable of every light userdata in this state: the tiles' */
  lua_pushlightuserdata(W, NULL);
  lua_createtable(W, 0, 6);
  lua_pushlightuserdata(W, w);
  luaL_setfuncs(W, tile_meta, 1);
  lua_pushlightuserdata(W, w);
  lua_pushlightuserdata(W, w);
  lua_pushcclosure(W, t_get, 1);
  lua_pushlightuserdata(W, w);
  lua_pushcclosure(W, t_set, 1);
  lua_pushlightuserdata(W, w);
  lua_pushcclosure(W, t_range, 1);
  lua_pushcclosure(W, t_index, 4);
  lua_setfield(W, -2, "__index");
  lua_pushboolean(W, 0);
  lua_setfield(W, -2, "__metatable"); /* getmetatable(tile) is false: no tampering */
  lua_setmetatable(W, -2);
  lua_pop(W, 1);

  lua_createtable(W, 0, 3); /* the worker's `tycho` */
  lua_pushlightuserdata(W, w);
  lua_pushcclosure(W, w_is_tile, 1);
  lua_setfield(W, -2, "is_tile");
  lua_pushcfunction(W, w_clock);
  lua_setfield(W, -2, "clock");
  lua_pushcfunction(W, w_thread_clock);
  lua_setfield(W, -2, "thread_clock");
  lua_pushlightuserdata(W, w);
  lua_pushcclosure(W, w_interrupted, 1);
  lua_setfield(W, -2, "interrupted");
  lua_pushinteger(W, w->index + 1);
  lua_setfield(W, -2, "worker");
  lua_pushstring(W, TY_VERSION);
  lua_setfield(W, -2, "version");
  luaL_getsubtable(W, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_pushvalue(W, -2);
  lua_setfield(W, -2, "tycho");
  lua_pop(W, 1);
  lua_setglobal(W, "tycho");

  lua_newtable(W); /* STK_CACHE */
  lua_createtable(W, 0, 8); /* STK_CTX */
  lua_pushlightuserdata(W, w);
  lua_pushcclosure(W, ctx_range, 1);
  lua_setfield(W, -2, "range");
  set_int(W, STK_CTX, "worker", w->index + 1);
  lua_newtable(W); /* STK_TILES */
  lua_pushcfunction(W, msgh);
  lua_pushcfunction(W, run_piece);
  return STK_BASE;
}

static lua_State *worker_open(tl_worker *w) {
  lua_State *W = luaL_newstate();
  if (!W) return NULL;
  lua_pushcfunction(W, setup);
  lua_pushlightuserdata(W, w);
  if (lua_pcall(W, 1, STK_BASE, 0) != LUA_OK) {
    lua_close(W);
    return NULL;
  }
  atomic_store(&w->W, W);
  return W;
}

/* The split dim of a piece: the first dim where its box is not the whole
 * domain (dim 0 when the launch is one piece). */
static int split_dim(const ty_task_ctx *c, const int64_t *domain) {
  for (int k = 0; k < c->ndim; k++)
    if (c->lo[k] != 0 || c->hi[k] != domain[k]) return k;
  return 0;
}

int tl_lua_task_cpu(ty_task_ctx *ctx) {
  tl_ltask *t = (tl_ltask *)ctx->task_data;
  tl_tasks *ts = t ? t->owner : NULL;
  if (!ts || !t->body) return ty_ctx_fail(ctx, "the Lua state that declared this task is closed");
  if (ctx->worker < 0 || ctx->worker >= ts->nworkers)
    return ty_ctx_fail(ctx, "worker %d is out of range 0..%d", ctx->worker, ts->nworkers - 1);
  tl_worker *w = &ts->workers[ctx->worker];
  lua_State *W = atomic_load(&w->W);
  if (!W && !(W = worker_open(w)))
    return ty_ctx_fail(ctx, "cannot create a Lua state for worker %d: out of memory", ctx->worker);
  lua_sethook(W, NULL, 0, 0); /* a stale interrupt hook from an earlier flush */
  if (ty_interrupt_pending(w->rt)) return ty_ctx_fail(ctx, "interrupted");

  /* the launch domain: the global shape of any aligned argument */
  const int64_t *domain = ctx->hi;
  for (int k = 0; k < t->nargs; k++) {
    tl_argkind kind = t->args[k].kind;
    if (kind != TL_SCALAR && kind != TL_WHOLE) {
      domain = ctx->args[t->args[k].slot].gshape;
      break;
    }
  }
  w->ctx = ctx;
  w->task = t;
  w->split = split_dim(ctx, domain);
  lua_pushvalue(W, STK_RUN);
  lua_pushvalue(W, STK_CACHE);
  lua_pushvalue(W, STK_CTX);
  lua_pushvalue(W, STK_TILES);
  lua_pushlightuserdata(W, w);
  int st = lua_pcall(W, 4, 0, STK_MSGH);
  for (int i = 0; i < w->ntiles; i++) w->tiles[i]->valid = false;
  w->ctx = NULL;
  w->task = NULL;
  if (st != LUA_OK) {
    const char *msg = lua_tostring(W, -1);
    char buf[4096];
    trim_traceback(msg ? msg : "(error object is not a string)", buf, sizeof buf);
    ty_ctx_fail(ctx, "%s", buf);
    lua_settop(W, STK_BASE);
    return TY_ETASK;
  }
  lua_settop(W, STK_BASE);
  return 0;
}

/* ---- the pool ---------------------------------------------------------------------- */

tl_worker *tl_workers_new(int n, ty_runtime *rt) {
  tl_worker *w = calloc((size_t)(n > 0 ? n : 1), sizeof *w);
  if (!w) return NULL;
  for (int i = 0; i < n; i++) {
    atomic_init(&w[i].W, NULL);
    w[i].rt = rt;
    w[i].index = i;
  }
  return w;
}

void tl_workers_free(tl_worker *w, int n) {
  if (!w) return;
  for (int i = 0; i < n; i++) {
    lua_State *W = atomic_load(&w[i].W);
    if (W) lua_close(W);
    free(w[i].gens);
    free(w[i].names);
  }
  free(w);
}

int tl_workers_open(const tl_tasks *ts) {
  int n = 0;
  for (int i = 0; i < ts->nworkers; i++) n += atomic_load(&ts->workers[i].W) != NULL;
  return n;
}

void tl_workers_allow_bytecode(const tl_tasks *ts, bool allow) {
  for (int i = 0; i < ts->nworkers; i++) ts->workers[i].allow_bytecode = allow;
}

void tl_workers_interrupt(const tl_tasks *ts) {
  for (int i = 0; i < ts->nworkers; i++) {
    lua_State *W = atomic_load(&ts->workers[i].W);
    if (W) lua_sethook(W, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
  }
}
