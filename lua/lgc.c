/*
 * lgc.c — stores that Lua can no longer reach count as dead when the window
 * is flushed, so that the fusion pass can elide them (temporaries).
 *
 * In `z = a*2 + b*3 + c` the stores a*2, b*3 and their sum are held by store
 * userdata that nothing references once the expression is evaluated, but Lua
 * releases unreachable userdata (frees them in tycho's own states, lheap.c;
 * finalises them elsewhere) only when its collector gets to them; until
 * then each holds a reference, the fusion pass sees a store someone may
 * still read, and writes it to memory. tl_gc_install registers a flush hook
 * (ty_set_flush_hook) that runs the collector at the start of every
 * non-empty flush, before the window is analysed:
 *  - generational mode (lua5.4's and the tycho shell's default): one
 *    LUA_GCSTEP, which is a minor collection. The window's temporaries were
 *    created since the last flush, so they are young and a minor collection
 *    releases them; its cost follows the young objects, not the heap.
 *    Measured per flush of a 20-launch window (tycho shell, 2 shared cores):
 *    inside busted (a 713 KiB heap) 5.0 us for the step against 198 us for a
 *    full collection; in a bare script (41 KiB) 4.0 us against 11.9 us
 *    (docs/fusion.md). A full collection is still taken when the binding ran
 *    one of its own during the window (see gc_hook);
 *  - incremental mode (luaL_newstate's default, so host applications): a
 *    step does not finish a cycle, so unreachable userdata may survive it;
 *    the hook runs a full collection, but only when stores were created
 *    since the last one (tl_box.gc_debt > 0), which keeps loops that flush
 *    without creating stores (reading values) cheap.
 * collectgarbage("stop") is honoured: no collection while Lua's collector is
 * stopped. The hook never runs inside a finalizer (lua_gc refuses there), and
 * is removed when the state closes (a sentinel's __gc), so a runtime that
 * outlives its state never calls into a closed state.
 *
 * The core never calls Lua: this file only registers a C hook through the
 * public API, like a host application could.
 */
#include "tl.h"
#include "tycho/dist.h"

#define TL_GCHOOK "tycho.gchook" /* registry: the sentinel (its presence says installed) */
#define TL_GC_FULL_BYTES ((uint64_t)8 << 20)

typedef struct gc_sentinel {
  ty_runtime *rt;
  lua_State *L;
  tl_box *box;        /* the runtime box (its gc_debt: store bytes created since the
                         binding's last full collection, tycho_lua.c's tl_created) */
  bool incremental;   /* the collector was found in incremental mode */
  uint64_t last_debt; /* box->gc_debt after the previous hook */
  uint64_t last_fulls; /* box->gc_fulls after the previous hook */
  bool full_before;    /* the previous hook collected fully for its own reasons */
} gc_sentinel;

static void gc_hook(void *ud) {
  gc_sentinel *s = ud;
  lua_State *L = s->L;
  /* the constant cache lives for one window (its launches hold what they
   * use): emptied now, so that fusion finds its numbers dead like any
   * temporary, or by the next use when a C call holds one of its stores
   * (a flush inside that call's retry) */
  if (s->box && s->box->consts_busy) s->box->consts_stale = true;
  else if (s->box) tl_consts_clear(s->box);
  /* -1 inside a finalizer (lua_gc refuses there), 0 after collectgarbage("stop") */
  const int running = lua_gc(L, LUA_GCISRUNNING);
  if (running < 0) return;
  /* no stack operations here: L is the main thread, which may be suspended
   * in a resume while a coroutine flushes */
  uint64_t *debt = s->box ? &s->box->gc_debt : NULL;
  if (s->rt && ty_flush_pressure(s->rt)) {
    /* what the window would allocate does not fit the budget: release all
     * that Lua dropped first, even with the collector stopped (stores are
     * charged when allocated; this is where a creation used to collect) */
    lua_gc(L, LUA_GCCOLLECT, 0);
    if (debt) *debt = 0;
    s->last_debt = 0;
    return;
  }
  if (running == 0) return;
  if (s->rt && ty_nranks(s->rt) > 1) {
    /* several ranks (docs/mpi.md): what a minor collection finalises
     * depends on the rank's own allocations, and fusion must find the same
     * stores dead on every rank; after a full one they are the unreachable
     * ones, which the script decides */
    lua_gc(L, LUA_GCCOLLECT, 0);
    if (debt) *debt = 0;
    s->last_debt = 0;
    return;
  }
  if (!s->incremental) {
    /* LUA_GCGEN returns the mode the collector was in and, when it was
     * generational already, changes nothing. */
    if (lua_gc(L, LUA_GCGEN, 0, 0) == LUA_GCGEN) {
      /* A full collection during the window (tl_created runs one every
       * ~64 MiB of new stores, when the allocated bytes grew by 64 MiB
       * too; or the script's collectgarbage(), or Lua's own major
       * collection) made the intermediates that were live then old, and a
       * minor collection leaves old objects, which the fusion pass then
       * finds referenced and writes. So collect fully when the binding ran
       * one (it counts them), when the byte count went down, or when the
       * window made a store of 8 MiB or more (one such intermediate written
       * costs more than a full collection, ~0.1-2 ms); otherwise a minor
       * collection. Measured: nearest 16384^2 after collectgarbage() wrote
       * two 2 GiB intermediates (6.3 s against 0.06 s) when only the byte
       * count was looked at. It was the window's bytes (8 MiB in all), not
       * its largest store, until the binding stopped collecting fully every
       * 64 MiB of new stores (tycho_lua.c's tl_created_over): CG at 256^2
       * (~20 MiB of new stores a flush, 512 KiB each) then collected fully
       * at every flush, ~20 us a flush of ~2.7 iterations, 8% of its time
       * (bench/README.md "Issue 19 rows: session 33"; before, collecting
       * fully less often was slower, as the binding's collections made the
       * loop's live stores old: "cg 65K host path per flush: session
       * 17"). That is still the price of a full collection, now paid once
       * rather than at every flush: the stores live at it turn old, and
       * once dead a minor collection keeps them until the next full one,
       * so CG's next iteration allocates its three loop-carried results
       * anew instead of in place (tests/spec/reduced_temporary_dies_spec.lua
       * counts 1.25 grids an iteration over 12 after one full collection
       * at the first flush, 1.0 without). */
      const bool full_ran = s->box && s->box->gc_fulls != s->last_fulls;
      if (s->box) s->last_fulls = s->box->gc_fulls;
      const bool big = full_ran || (debt && *debt < s->last_debt) ||
                       (s->box && s->box->gc_largest >= TL_GC_FULL_BYTES);
      if (s->box) s->box->gc_largest = 0;
      /* The flush after a full collection collects fully too (full_before):
       * what the script still held at that one (k-means' n x k distances,
       * a local of its step) survived it and is old now, so a minor
       * collection would keep it until tl_created's next full collection,
       * and the fusion pass, finding it referenced, writes it: kmeans 10M
       * points, k = 10, 1068 -> 305 MiB written per step (bench/README.md
       * "k-means memory and f32 X^T z: session 16"). Only one such
       * follow-up: it does not arm another. */
      const bool follow = s->full_before;
      s->full_before = big;
      if (big || follow) {
        lua_gc(L, LUA_GCCOLLECT, 0);
        if (debt) *debt = 0;
      } else {
        /* even for small stores: skipping the step when a window made less
         * than 256 KiB was measured slower (4.0 against 1.6 us per op on
         * 1,000 elements): allocating, writing and later finalising the
         * intermediates costs more than the step */
        lua_gc(L, LUA_GCSTEP, 0);
      }
      s->last_debt = debt ? *debt : 0;
      return;
    }
    /* It was incremental: entering generational mode was a full collection
     * (finalizers ran); the incremental mode is put back and remembered. */
    lua_gc(L, LUA_GCINC, 0, 0, 0);
    s->incremental = true;
  } else {
    if (debt && *debt == 0) return; /* no store created since the last full collection */
    lua_gc(L, LUA_GCCOLLECT, 0);
  }
  if (debt) *debt = 0;
  s->last_debt = 0;
}

/* At lua_close: remove the hook, unless the runtime box was finalised first
 * (an owned runtime is destroyed then). The sentinel is made after the box,
 * so it is finalised before it (Lua finalises in reverse order). */
static int sentinel_gc(lua_State *L) {
  gc_sentinel *s = lua_touserdata(L, 1);
  if (!s || !s->rt) return 0;
  if (!s->box || s->box->rt == s->rt) ty_set_flush_hook(s->rt, NULL, NULL);
  s->rt = NULL;
  return 0;
}

void tl_gc_install(lua_State *L, ty_runtime *rt) {
  if (!rt) return;
  /* a previous installation's sentinel must not remove this hook later */
  lua_getfield(L, LUA_REGISTRYINDEX, TL_GCHOOK);
  gc_sentinel *old = lua_touserdata(L, -1);
  if (old) old->rt = NULL;
  lua_pop(L, 1);
  gc_sentinel *s = lua_newuserdatauv(L, sizeof *s, 0);
  s->rt = rt;
  /* the main thread: the one that may have called us (a coroutine running
   * require "tycho") can be collected long before the state closes */
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  s->L = lua_tothread(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
  s->box = luaL_testudata(L, -1, TL_BOXMETA); /* lives until lua_close, as the sentinel */
  lua_pop(L, 1);
  s->incremental = false;
  s->last_debt = 0;
  s->last_fulls = s->box ? s->box->gc_fulls : 0; /* a userdata's bytes are not zeroed */
  s->full_before = false;
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, sentinel_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, TL_GCHOOK);
  ty_set_flush_hook(rt, gc_hook, s); /* a userdata never moves */
}
