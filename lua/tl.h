/*
 * tl.h — what the files of the Lua binding share (tl_ names: the binding's
 * own internal prefix; everything else in the binding is static).
 *
 *   tycho_lua.c  module set-up, the runtime box, errors, argument conversions,
 *                runtime functions (flush, stats, config, memory, clock, seed)
 *   lstore.c     the store userdata: metatable, fields, indexing and views,
 *                assignment, copy/fill/astype, item/totable
 *   lops.c       element-wise operations, reductions, matmul
 *   lcreate.c    creation (zeros ... array), .npy load/save
 *   ltask.c      user tasks: tycho.task declarations, launchers, tycho.tasks
 *   lbody.c      moving a Lua body to worker states (bytecode + upvalues)
 *   lworker.c    worker states, tile accessors, running one piece
 *   lhost.c      the embedding API of tycho_lua.h (ty_lua_open, ...)
 *   lheap.c      the allocator of tycho's Lua states (ty_lua_newstate): fault
 *                injection, small-block lists, store userdata freed without __gc
 *   largs.c      argument checking of the built-ins (tl_sig, tl_args)
 *   lshape.c     numpy's shape functions: joining, splitting, scans, flips
 *   lbuild.c     stores built from shapes or like others (eye, tri, pad, ...)
 *   lmask.c      masks and positions: x[mask], x[idx], nonzero, take, put, ...
 *   lsort.c      sort, argsort, unique, searchsorted, isin
 *   lsets.c      set functions, partition, histogram, choose (built on the above)
 *   lufunc.c     numpy's other ufuncs, the operators // & | ~ << >>, constants
 *   llinalg.c    tycho.linalg (LAPACK: tycho/linalg.h) and linalg.norm
 *   lstats.c     statistics (std, var, median, quantile, nan*, cov, ...)
 *   lproducts.c  tensordot, outer, inner, vdot, kron, trace, einsum, convolve
 *
 * Invariants every file keeps:
 *  - Every C function the binding registers (module functions, methods and
 *    metamethods) has upvalue 1 = the runtime box (tl_box), so finding the
 *    runtime is one upvalue read, never a registry lookup.
 *  - A store handle returned by the C API is written straight into a store
 *    userdata ("slot") pushed BEFORE the call (tl_newslot). A Lua error is a
 *    longjmp; with this order nothing can leak: the collector releases the
 *    slot. The few raw ty_store* held across C calls (view chains) are released
 *    before any error is raised.
 *  - Every store userdata is a tl_slot (the handle, then the tag): made by
 *    tl_newslot or ty_lua_push_store only.
 *  - The binding uses only the public C API (tycho.h, task.h).
 */
#ifndef TL_H
#define TL_H

#include <lauxlib.h>
#include <lua.h>
#include <stdbool.h>
#include <stdint.h>

#include "tycho/task.h"
#include "tycho/tycho.h"

#define TL_STORE "tycho.store"     /* metatable name (and __name) of stores */
#define TL_BOX "tycho.box"         /* registry key: the runtime box */
#define TL_BOXMETA "tycho.runtime" /* metatable name of the runtime box */
#define TL_MODULE "tycho.module"   /* registry key: the module table */

typedef struct tl_tasks tl_tasks;
typedef struct tl_heap tl_heap;

/* The runtime as Lua holds it: a full userdata so its __gc can destroy an
 * owned runtime when the state closes. rt is NULL once destroyed. */
#define TL_CONSTS 8

/* lpolicy.c's per-state record (registry[&state_key]). */
typedef struct pol_state {
  lua_State *synced;   /* whose scopes the runtime's stack holds (NULL: none yet) */
  int npushed;         /* scopes this binding pushed there for it */
  int ncollected;      /* scope objects collected while open, not yet closed (lpolicy.c) */
  bool allow_bytecode; /* the loaders accept precompiled chunks */
} pol_state;

typedef struct tl_box {
  ty_runtime *rt;
  bool owned;
  tl_tasks *tasks;       /* Lua tasks and worker states of this binding (ltask.c) */
  uint64_t gc_debt;      /* store bytes created since the last full collection */
  uint64_t gc_threshold; /* gc_debt that triggers the next one (tl_created) */
  uint64_t gc_fulls;     /* full collections the binding ran (tl_collect) */
  uint64_t gc_reserved;  /* allocated store bytes after the last one (tl_created_over) */
  uint64_t gc_largest;   /* the bytes of the largest store created since the flush hook (lgc.c) */
  /* 0-d stores made for Lua numbers in `x * 0.5`, kept for the next use of the
   * same number (tl_const); read-only: no API hands them to Lua. */
  struct tl_const {
    ty_dtype dtype;
    uint64_t bits;
    ty_store *store;
  } consts[TL_CONSTS];
  unsigned consts_next; /* the entry the next miss replaces */
  bool consts_stale;    /* a flush ran while busy: tl_const_operand empties the cache first */
  bool consts_busy;     /* a C call holds a store of the cache across a possible flush */
  pol_state *pol;         /* the state's policy record once lpolicy.c opened it (tl_rt's
                             fast check: the running thread is the synced one) */
  const void *store_meta; /* the store metatable (tl_isstore's pointer test) */
  int store_meta_ref;     /* registry[store_meta_ref] is that metatable (tl_newslot_in) */
  tl_heap *heap;          /* the state's heap when store userdata have no __gc (lheap.c):
                             each slot made is adopted by it */
} tl_box;

/* ---- tycho_lua.c: runtime, errors, conversions ------------------------------ */

/* The bound runtime (upvalue 1); raises "tycho: the runtime is closed". */
ty_runtime *tl_rt(lua_State *L);

/* Raise "tycho.<fn>: <ty_errmsg>" (or "tycho: interrupted" for TY_EINTR).
 * Release C resources before calling. */
int tl_fail(lua_State *L, ty_runtime *rt, const char *fn, ty_status st);
/* Raise "tycho.<fn>: <printf message>". */
int tl_error(lua_State *L, const char *fn, const char *fmt, ...);
/* Push a malloc'd text (from the core) as a Lua string and free it, also
 * when Lua runs out of memory pushing it. */
void tl_pushtext(lua_State *L, char *text);

/* Called when a creation fails with TY_ENOMEM (attempt 0, 1, ...): attempt 0
 * runs a full collection (stores Lua can no longer reach release their
 * storage); attempt 1 flushes the window (pending launches hold references)
 * and collects again. Returns 0 when there is nothing more to try. May raise
 * (a failed flush): hold nothing outside slots when using TL_TRY.
 * A call that flushed the window on its way (a full window) and then failed
 * is not retried: the ENOMEM may be the flush's, whose launches are cancelled
 * now, and only raising it tells the script (tl_flushes counts flushes). */
int tl_reclaim(lua_State *L, ty_runtime *rt, int attempt);
uint64_t tl_flushes(ty_runtime *rt);
#define TL_TRY(L, rt, st, call)                                                       \
  do {                                                                                \
    uint64_t tl_flushes_ = tl_flushes(rt);                                            \
    (st) = (call);                                                                    \
    for (int tl_try_ = 0; (st) == TY_ENOMEM && tl_flushes(rt) == tl_flushes_ &&       \
                          tl_reclaim((L), (rt), tl_try_);                             \
         tl_try_++) {                                                                 \
      tl_flushes_ = tl_flushes(rt);                                                   \
      (st) = (call);                                                                  \
    }                                                                                 \
  } while (0)

/* Push a store userdata holding NULL; the C call that creates the store
 * writes the slot. */
ty_store **tl_newslot(lua_State *L);

/* The store userdata tl_newslot makes: the handle first (every ty_store ** of
 * the binding points at it), then a tag, the address of tl_store_tag, so
 * that telling a store from another value is a type test, a length and a
 * word compared (tl_slot_tagged) rather than a metatable fetched and
 * compared (~125 instructions, callgrind). A userdata whose tag does not
 * match (a host's ty_lua_push_store, any other userdata) takes the
 * metatable test. */
typedef struct tl_slot {
  ty_store *store;
  const void *tag;
} tl_slot;
extern const char tl_store_tag;
static inline ty_store **tl_slot_tagged(lua_State *L, int idx) {
  /* lua_touserdata is NULL for anything but a userdata, and a light
   * userdata's length is 0: two API calls rather than three */
  tl_slot *u = lua_touserdata(L, idx);
  if (!u || lua_rawlen(L, idx) != sizeof(tl_slot)) return NULL;
  return u->tag == &tl_store_tag ? &u->store : NULL;
}

/* ---- lheap.c: store userdata without __gc --------------------------------------
 * In a state made by ty_lua_newstate the allocator releases a store when Lua
 * frees its userdata's block (lheap.c explains how and why). */
/* At bind: L's heap when its store metatable may go without __gc (the
 * allocator is lheap.c's and the userdata layout was measured); NULL: keep
 * __gc. Each non-NULL return is matched by one tl_heap_unbind. */
tl_heap *tl_heap_bind(lua_State *L);
/* The heap of a state bound without __gc, else NULL (for slots made
 * without the box at hand). */
tl_heap *tl_heap_of(lua_State *L);
/* Record u, a fresh slot (store NULL) not yet given its metatable, so that
 * its store is released when Lua frees it. Raises "not enough memory". */
void tl_heap_adopt(lua_State *L, tl_heap *h, tl_slot *u);
/* The binding is going (the box's __gc at lua_close): the last one releases
 * every store still held by a userdata (leaving NULL: a closed store). */
void tl_heap_unbind(lua_State *L, tl_heap *h);

/* The forms of tl_rt, tl_newslot, tl_created and tl_const_operand for a C
 * function that already holds its box b (upvalue 1, read once: each upvalue
 * read is ~38 instructions): lops.c's operators, element-wise functions and
 * reductions. b may be NULL (tl_rt_in raises then, as tl_rt does), except
 * for tl_const_operand_in. */
ty_runtime *tl_rt_in_any(lua_State *L, tl_box *b);
/* ... in line when the runtime is open and L's scopes are synced */
static inline ty_runtime *tl_rt_in(lua_State *L, tl_box *b) {
  if (b && b->rt && b->pol && b->pol->synced == L) return b->rt;
  return tl_rt_in_any(L, b);
}
ty_store **tl_newslot_in(lua_State *L, const tl_box *b);
void tl_created_over(lua_State *L, tl_box *b);
/* ... its accounting in line; past the threshold (or none set yet),
 * tl_created_over decides on the collection */
static inline void tl_created_in(lua_State *L, tl_box *b, const ty_store *s) {
  if (!s || !b || !b->rt) return;
  const uint64_t bytes = (uint64_t)ty_store_size(s) * ty_dtype_size(ty_store_dtype(s));
  b->gc_debt += bytes;
  if (bytes > b->gc_largest) b->gc_largest = bytes;
  if (b->gc_debt >= b->gc_threshold) tl_created_over(L, b);
}
ty_store *tl_const_operand_in_any(lua_State *L, tl_box *b, int idx, const char *fn,
                                  const ty_store *peer, bool fits);
/* The constant cache's key of a float (1 and 1.0 differ). */
static inline uint64_t tl_const_float_bits(double v) {
  union {
    double d;
    uint64_t u;
  } x = {.d = v};
  return x.u ^ UINT64_C(0x9e3779b97f4a7c15);
}
/* ... in line for a float next to an f64 or f32 store (it takes the store's
 * dtype) found in the cache (type: lua_type(L, idx), which the caller read): ~30 instructions an op in the calls; anything
 * else, misses included, goes to tl_const_operand_in_any. */
static inline ty_store *tl_const_operand_typed_in(lua_State *L, tl_box *b, int idx, const char *fn,
                                                  const ty_store *peer, bool fits, int type) {
  if (peer && b->rt && !b->consts_stale && type == LUA_TNUMBER && !lua_isinteger(L, idx)) {
    const ty_dtype t = ty_store_dtype(peer);
    const uint64_t bits = t == TY_F64 || t == TY_F32 ? tl_const_float_bits(lua_tonumber(L, idx)) : 0;
    for (int i = 0; bits && i < TL_CONSTS; i++) {
      const struct tl_const *c = &b->consts[i];
      if (c->store && c->dtype == t && c->bits == bits) {
        b->consts_busy = false; /* a call that raised left it set */
        return c->store;
      }
    }
  }
  return tl_const_operand_in_any(L, b, idx, fn, peer, fits);
}
/* ... where the caller has not read the value's type (lua_type) yet */
static inline ty_store *tl_const_operand_in(lua_State *L, tl_box *b, int idx, const char *fn,
                                            const ty_store *peer, bool fits) {
  return tl_const_operand_typed_in(L, b, idx, fn, peer, fits, lua_type(L, idx));
}
/* After a store with fresh storage is created: account its bytes and run a
 * full collection when the bytes created since the last one exceed the
 * threshold (see tycho_lua.c), so that loops of temporaries Lua no longer
 * reaches are released before they fill the memory budget. */
void tl_created(lua_State *L, const ty_store *s);
/* Full collection now (and restart the accounting of tl_created). */
void tl_collect(lua_State *L);

/* The store at idx, or NULL when the value is not a store; raises when it is a
 * closed store ("tycho.<fn>: argument <n> is a closed store"). */
ty_store *tl_teststore(lua_State *L, int idx, const char *fn);
/* The store at idx or raise "tycho.<fn>: <what> must be a store, got <type>". */
ty_store *tl_checkstore(lua_State *L, int idx, const char *fn, const char *what);
/* A store or a Lua number/boolean at idx; a number becomes a 0-d store of the
 * weak-scalar dtype next to `peer` (may be NULL) and replaces the value at idx
 * on the stack (so it stays anchored). */
ty_store *tl_operand(lua_State *L, int idx, const char *fn, const ty_store *peer);
/* tl_teststore for a function whose upvalue 1 is the box b: the metatable is
 * compared by pointer (no registry lookup). */
ty_store *tl_teststore_in_any(lua_State *L, const tl_box *b, int idx, const char *fn);
/* ... in line for an operator's operands (~25 instructions an op in the
 * calls): a value that is no userdata (a number) and an open tagged store
 * are answered here, anything else by tl_teststore_in_any. */
static inline ty_store *tl_teststore_in(lua_State *L, const tl_box *b, int idx, const char *fn) {
  if (b && b->store_meta) {
    const tl_slot *u = lua_touserdata(L, idx);
    if (!u) return NULL;
    if (lua_rawlen(L, idx) == sizeof(tl_slot) && u->tag == &tl_store_tag && u->store) return u->store;
  }
  return tl_teststore_in_any(L, b, idx, fn);
}
/* luaL_checkudata(L, idx, TL_STORE) for such a function. */
ty_store **tl_checkslot_in(lua_State *L, const tl_box *b, int idx);
/* tl_operand for a number next to a store (peer), idx holding no store: the
 * 0-d store comes from the box's constant cache and is owned by it, so
 * nothing is allocated when a loop reuses its numbers. Valid until the next
 * tl_const_operand call: at most one per C call. tl_const_operand_in's
 * `fits`: an integer must fit peer's dtype too (tl_check_int_fits), checked
 * on the one read of the value (lops.c's arithmetic). */
ty_store *tl_const_operand(lua_State *L, int idx, const char *fn, const ty_store *peer);
/* Release the constant cache (before the runtime goes). */
void tl_consts_clear(tl_box *b);
/* The dtype a Lua number at idx takes next to a store of dtype `peer`:
 * integer with integer/bool store -> the store's dtype (bool -> i64, and i64
 * when the number does not fit); float with integer store -> f64; anything
 * with a float store -> the store's dtype. has_peer false: i64 / f64. */
ty_dtype tl_weak_dtype(lua_State *L, int idx, bool has_peer, ty_dtype peer);
/* A Lua integer v going into (or next to, in arithmetic) a store of dtype t
 * must fit it, as numpy 2 requires of Python integers: raises "tycho.<fn>:
 * the integer 300 is out of range for u8 (0..255)" when t is an integer dtype narrower than i64 and v
 * does not fit. Other dtypes take any Lua integer. */
void tl_check_int_fits(lua_State *L, const char *fn, lua_Integer v, ty_dtype t);

/* An integer argument (floats with an integral value are accepted); raises
 * "tycho.<fn>: <what> must be an integer, got <value>". */
int64_t tl_checkint(lua_State *L, int idx, const char *fn, const char *what);
/* A shape: a table of non-negative integers or one integer (1-D). Writes up
 * to TY_MAX_RANK entries and returns ndim. allow_infer: one entry may be -1
 * (reshape). Refuses shapes whose bytes for dtype `t` would overflow. */
int tl_checkshape(lua_State *L, int idx, const char *fn, int64_t *shape, bool allow_infer,
                  ty_dtype t);
/* A dtype name at idx, or def when the argument is none/nil. */
ty_dtype tl_optdtype(lua_State *L, int idx, const char *fn, ty_dtype def);
/* A 1-based (or negative) axis of a rank-ndim store -> 0-based. */
int tl_checkaxis(lua_State *L, int idx, const char *fn, const char *what, int ndim);
/* "store" for a store, else luaL_typename (for "got <type>" messages). */
const char *tl_typename(lua_State *L, int idx);
/* "(3, 4)" into buf. */
void tl_shape_str(int ndim, const int64_t *shape, char *buf, size_t len);
/* Push one element: integer for integer dtypes, boolean for bool; a u64
 * above 2^63 - 1 (no Lua integer holds it) as the nearest float. */
void tl_pushvalue(lua_State *L, const ty_value *v);
/* The integer element at p of integer dtype t (or bool), sign- or
 * zero-extended; u64 gives its bits. tl_pushint pushes such a value as
 * tl_pushvalue does; tl_put_int stores v's low bits (wraps, as numpy). */
int64_t tl_get_int(const char *p, ty_dtype t);
void tl_pushint(lua_State *L, int64_t v, ty_dtype t);
void tl_put_int(char *p, ty_dtype t, int64_t v);
/* Push a Lua number or boolean as a 0-d store of dtype t; returns it. The
 * integer path keeps all 64 bits. */
ty_store *tl_scalar(lua_State *L, ty_runtime *rt, int idx, const char *fn, ty_dtype t);
/* Fill dst with the Lua number/boolean at idx (exact for 64-bit integers). */
void tl_fill_value(lua_State *L, ty_runtime *rt, ty_store *dst, int idx, const char *fn);

/* Strip a leading "ty_name: " or "ty_name(...): " of a core message. */
const char *tl_strip_prefix(const char *msg);

/* ---- argument checking (largs.c) -------------------------------------------- */

/* What a built-in accepts, declared once next to it and used for every check
 * and message: positional arguments min..max, then an optional trailing
 * options table whose keys are `opts` (space-separated; "" for none) and,
 * when `launch` is set, the policy keys (parallel, fuse, ...), which steer the
 * launches of this call only. `forms` is what an error shows the user. */
typedef struct tl_sig {
  const char *fn;    /* "sum": messages read "tycho.sum: ..." */
  int min, max;      /* positional arguments (x of x:sum() is argument 1) */
  const char *opts;  /* option keys of the function itself */
  bool launch;       /* the policy keys are accepted too */
  const char *forms; /* "tycho.sum(x [, axis | {axes}] [, {keepdims = bool}]), x:sum(...)" */
} tl_sig;

/* Call FIRST. For a function with options, the options table is the last
 * argument when it is a table at a position past `min` that is past `max` or
 * not a list (an empty table is an empty options table). Raises
 * "tycho.<fn>: ..." with the accepted forms on too many arguments (trailing
 * nils do not count) and on an unknown option key; a missing argument is left
 * to the function's own check, which names it. Leaves the stack at max + 2
 * slots: 1..max the positional arguments (nil-padded), max + 1 the options
 * table or nil, max + 2 the to-be-closed launch guard when launch options
 * were given (then never lua_settop below max + 2), else nil. Returns the
 * count of positional arguments given. */
int tl_args(lua_State *L, const tl_sig *s);
#define TL_OPTS(s) ((s)->max + 1)
/* Raise "tycho.<fn>: <message>; accepted: <forms>". */
int tl_argerror(lua_State *L, const tl_sig *s, const char *fmt, ...);
/* Option `key` of the options table (tl_args): absent/nil gives def; a
 * value of another type raises naming the key. */
bool tl_optbool(lua_State *L, const tl_sig *s, const char *key, bool def);
bool tl_optint(lua_State *L, const tl_sig *s, const char *key, int64_t *out);
/* The store given as option `key` (NULL when absent); pushes nothing. */
ty_store *tl_optstore(lua_State *L, const tl_sig *s, const char *key);

/* ---- user tasks (ltask.c, lbody.c, lworker.c) ---------------------------------- */

/* What a declared argument is. */
typedef enum tl_argkind {
  TL_IN = 0,   /* aligned, read-only */
  TL_OUT,      /* aligned, written */
  TL_INOUT,    /* aligned, read and written */
  TL_REDUCE,   /* a private tile per piece, combined by the runtime */
  TL_WHOLE,    /* "in:broadcast": every piece reads the whole store */
  TL_SCALAR    /* a Lua value passed by value in the launch's scalar bytes */
} tl_argkind;

/* Declared scalar types (scalar:f64 ...); TL_SC_ANY keeps the Lua type. */
enum { TL_SC_ANY = 0, TL_SC_F64, TL_SC_I64, TL_SC_BOOL, TL_SC_STR };

typedef struct tl_argspec {
  tl_argkind kind;
  ty_redop redop; /* TL_REDUCE */
  int dtype;      /* TL_OUT / TL_REDUCE: dtype of a store made for an omitted argument, -1: f64 */
  int sctype;     /* TL_SCALAR: TL_SC_* */
  int slot;       /* index among the store arguments (ctx->args) or among the scalars */
  char text[24];  /* as declared, normalised: "in", "reduce:+", "scalar:i64", ... */
} tl_argspec;

#define TL_MAX_TASK_ARGS TY_MAX_ARGS
typedef struct tl_body tl_body;

/* A task declared through this binding: a Lua task (body != NULL) or a C
 * task given a signature from Lua. A Lua task's record is the core task's
 * `data` and lives as long as the runtime; when the state closes it loses its
 * body and owner (launches still queued fail with a message), and a later
 * state bound to the same runtime adopts it when it declares the name again.
 * Redeclaring flushes the window first, so no queued launch ever runs a body
 * other than the one it was launched with. */
typedef struct tl_ltask {
  tl_tasks *owner;
  const ty_task *task;
  char name[TY_MAX_NAME];
  int id;        /* index in owner->tasks */
  unsigned gen;  /* 1, then +1 per redeclaration: worker caches compare it */
  bool lua;      /* a Lua task: the record is the runtime's (freed by its release) */
  tl_body *body; /* NULL: a C task, or a Lua task whose state is closed */
  int nargs, nstores, nscalars;
  tl_argspec args[TL_MAX_TASK_ARGS];
  char sig[512]; /* "in, out, scalar" for messages */
  ty_policy traits;
  unsigned flags;
} tl_ltask;

typedef struct tl_worker tl_worker;

struct tl_tasks {
  ty_runtime *rt;
  int nworkers;       /* the runtime's cpus: ctx->worker is below it */
  tl_worker *workers; /* states created lazily, each used by one thread at a time */
  tl_ltask **tasks;
  int ntasks, cap;
};

/* lbody.c: capture the Lua function at idx (raises "tycho.<fn>: ..." on a
 * refused upvalue); free; push a loaded copy in a worker state (raises only
 * memory errors, run it protected). */
tl_body *tl_body_capture(lua_State *L, int idx, const char *fn);
void tl_body_free(tl_body *b);
void tl_body_push(lua_State *W, const tl_body *b);

/* lworker.c */
tl_worker *tl_workers_new(int n, ty_runtime *rt); /* NULL on out of memory */
void tl_workers_free(tl_worker *w, int n); /* closes their states */
int tl_workers_open(const tl_tasks *ts);   /* states created so far */
/* Worker states load precompiled chunks only when allowed (lpolicy.c's switch). */
void tl_workers_allow_bytecode(const tl_tasks *ts, bool allow);
/* The cpu variant of every Lua task. */
int tl_lua_task_cpu(ty_task_ctx *ctx);
/* Async-signal-safe: make every running body stop with "interrupted". */
void tl_workers_interrupt(const tl_tasks *ts);

/* ltask.c: set up the module's task functions (tycho.task, tycho.tasks) and
 * the binding's task state; close it (box __gc, before an owned runtime is
 * destroyed). */
void tl_tasks_open(lua_State *L, int mod, int box);
void tl_tasks_close(tl_box *b);
/* Push a table of the comma-separated kinds of a signature string. */
void tl_push_signature_args(lua_State *L, const char *sig);
/* Declare a task (the core of tycho.task): name, args (table at args_idx),
 * traits (table or nil), body (function or nil). Pushes the launcher. */
void tl_task_declare(lua_State *L, const char *name, int args_idx, int traits_idx,
                     int body_idx);
/* A policy table ({parallel = "all", overdecompose = 2, ...}: the keys of
 * ty_policy_set) at idx into *p (fields it sets are added to p->set).
 * `flags` non-NULL also accepts the task flags pointwise / fusable. Raises
 * "tycho.<fn>: <what>: ..." naming the bad key or value. */
void tl_checkpolicy(lua_State *L, int idx, const char *fn, const char *what, ty_policy *p,
                    unsigned *flags);

/* ---- policy levels from Lua (lpolicy.c) ------------------------------------- */

/* Module set-up: tycho.parallel, tycho.explain, tycho.hint, x:hint (added to
 * the store methods), tycho._scopes, tycho._rewrite; replaces load, loadfile,
 * dofile and package.searchers[2] with versions that apply the
 * `parallel<...> do` rewrite. Call once, in the driving state only (never in
 * a worker state), after the store metatable and the module table exist. */
void tl_policy_open(lua_State *L, int module_index);
/* Make the runtime's scope stack the running coroutine's (cheap when it
 * already is): tl_rt calls it, so every launch sees its own thread's scopes. */
void tl_policy_sync(lua_State *L, ty_runtime *rt);
/* x:hint{parallel = "all"} (a store method; upvalue 1 = the box). */
int tl_store_hint(lua_State *L);
/* Install a to-be-closed guard at `slot` (an existing stack slot, above the
 * arguments) and set *p as the launch options of every launch this C call
 * makes; the guard clears them when the function returns or raises. */
void tl_launch_guard(lua_State *L, int slot, const ty_policy *p, const char *fn);
/* The raw pair (no guard): set the launch options from the table at
 * opts_index (nil: none, returns 0) / clear them. Every path must clear. */
int tl_with_launch_options(lua_State *L, int opts_index, const char *fn);
void tl_clear_launch_options(lua_State *L);

/* ---- registration tables (NULL-terminated) ---------------------------------- */
extern const luaL_Reg tl_store_funcs[], tl_store_methods[], tl_store_meta[];
extern const luaL_Reg tl_ops_funcs[], tl_ops_methods[], tl_ops_meta[];
extern const luaL_Reg tl_create_funcs[], tl_create_methods[];
/* lops.c's argument handling of element-wise functions, for lufunc.c: x (a
 * store or number) [, out] / a, b [, out] with numpy's weak scalars; the out
 * argument at pos or option out; the result (in *slot) written into out. */
int tl_unary_op(lua_State *L, ty_op op, const tl_sig *s);
int tl_binary_op(lua_State *L, ty_op op, const tl_sig *s);
ty_store *tl_out_arg(lua_State *L, const tl_sig *s, int pos, int *from);
int tl_finish_out(lua_State *L, ty_runtime *rt, ty_store **slot, ty_status st, const tl_sig *s,
                  ty_store *out, int from);
/* tycho.newaxis (a light userdata of this address): in x[{...}], a new dim
 * of size 1 (numpy's None; lstore.c reads it, lufunc.c publishes it). */
extern const char tl_newaxis;
/* lufunc.c: numpy's other ufuncs (tan ... right_shift, clip, round), the
 * operators // & | ~ << >>, and the constants pi e inf nan newaxis. */
void tl_ufunc_open(lua_State *L, int module_index);
/* lextra.c: bincount, diagonal (module functions and store methods). */
void tl_extra_open(lua_State *L, int module_index);
/* lshape.c (and lbuild.c through it): numpy's shape functions, likewise. */
void tl_shape_open(lua_State *L, int module_index);
/* lmask.c: x[mask], x[idx] (tl_store_index/newindex come here when the key
 * is a store or a table holding one), nonzero, argwhere, count_nonzero,
 * any, all, take, put; tl_where_nonzero is tycho.where(cond). */
void tl_mask_open(lua_State *L, int module_index);
bool tl_index_has_store(lua_State *L, int tidx);
int tl_mask_index(lua_State *L);
int tl_mask_newindex(lua_State *L);
/* lstore.c: push the view x[{...}] of s (integers, ranges, tycho.newaxis;
 * the table at tidx holds no store) and return it; raises on a bad entry. */
ty_store *tl_index_view(lua_State *L, ty_store *s, int tidx, const char *fn);
int tl_where_nonzero(lua_State *L);
/* lsort.c: sort, argsort, unique, searchsorted, isin. */
void tl_sort_open(lua_State *L, int module_index);
/* lsets.c: intersect1d, union1d, setdiff1d, partition, argpartition, histogram, choose. */
void tl_sets_open(lua_State *L, int module_index);
/* llinalg.c: the tycho.linalg table. */
void tl_linalg_open(lua_State *L, int module_index);
/* lstats.c: std, var, median, quantile, average, ptp, the nan forms, cov, corrcoef. */
void tl_stats_open(lua_State *L, int module_index);
/* lrandom.c: tycho.random becomes a table (still callable) of numpy's
 * Generator functions, and tycho.random.generator(seed). */
void tl_random_open(lua_State *L, int module_index);
/* ltextio.c: tycho.loadtxt, tycho.savetxt and x:savetxt. */
void tl_textio_open(lua_State *L, int module_index);
/* iinfo finfo promote_types result_type (ldtypes.c) */
void tl_dtypes_open(lua_State *L, int module_index);
/* lproducts.c: tensordot, outer, inner, vdot, kron, trace, einsum, convolve, correlate. */
void tl_products_open(lua_State *L, int module_index);
/* ldist.c: tycho.rank, tycho.nranks. */
void tl_dist_open(lua_State *L, int module_index);
/* lgc.c: run Lua's collector at the start of every non-empty flush, so that
 * stores Lua no longer reaches count as dead and fusion elides them. Call once
 * per state after the runtime box exists. */
void tl_gc_install(lua_State *L, ty_runtime *rt);
/* __index and __newindex of stores (upvalue 2: the methods table). */
int tl_store_index(lua_State *L);
int tl_store_newindex(lua_State *L);

#endif /* TL_H */
