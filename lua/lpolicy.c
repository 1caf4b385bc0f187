/*
 * lpolicy.c — the policy levels from Lua: scopes (tycho.parallel and the
 * `parallel<...> do` sugar), store hints (x:hint{...}), launch options of the
 * built-in functions (a trailing options table), tycho.explain, and the
 * loaders that apply the sugar (load, loadfile, dofile, require's Lua
 * searcher, and tl_loadbufferx / tl_loadfilex for the shell).
 *
 * Scopes and coroutines. The runtime keeps ONE scope stack (ty_scope_push),
 * resolved when a launch is appended; Lua has many threads that interleave.
 * A scope opened in a coroutine must steer that coroutine's launches only,
 * and must still be open when the coroutine is resumed after a yield. So the
 * binding keeps the scopes of each thread in a list (a table, in a weak-keyed
 * table indexed by the thread), and the runtime's stack holds the list of
 * ONE thread, the "synced" one. tl_policy_sync(L) — called by tl_rt, so
 * before every launch — swaps the runtime's stack to L's list when L is not
 * the synced thread (pops what this binding pushed, pushes L's scopes), at
 * most TY_MAX_SCOPES pops and pushes, and only when the thread changes.
 * Opening and closing a scope syncs first, so both act on their own thread.
 * The synced thread is anchored (the state's user value 2), so its address
 * can never be reused by a new thread while it is remembered. The check when
 * nothing changes is one registry lookup and a compare: ~20 ns (measured,
 * -O2), against microseconds for a launch.
 *
 * Scopes close on every way out: the `<close>` form by Lua's to-be-closed
 * variables (errors, break, return, goto), the closure form by a
 * to-be-closed slot of the C function (errors keep their traceback: there
 * is no pcall in between), a coroutine that dies with open scopes when it is
 * closed (coroutine.close) or collected (its list goes with it). A scope
 * closed out of order (scope:close() on an outer one) is removed where it
 * is and the runtime's stack rebuilt.
 *
 * Scopes nobody closes. What Lua holds is a proxy (SCOPE_META) of the scope
 * record that the thread's list holds, so a proxy that becomes unreachable
 * without close() is collected; its __gc marks the record (and warns, with
 * the scope's origin) but does not close it there: a finalizer runs at any
 * allocation, perhaps in the middle of an edit of a list or of the runtime's
 * stack. The marked records are closed at the next safe point (sweep: before
 * the next launch, scope or tycho._scopes), out of order when they are not
 * innermost. Opening a scope past TY_MAX_SCOPES first runs a full collection
 * and a sweep; if the stack is still full, the error names where the open
 * scopes were opened.
 *
 * Launch options: a built-in called with an options table sets them for the
 * launches of that call only (ty_launch_options); a to-be-closed guard
 * clears them when the C function returns or raises, so they never leak.
 *
 * Bytecode. The Lua VM does not verify precompiled chunks (string.dump,
 * luac): a malformed or hostile one can crash the process or corrupt its
 * memory. So every loader here loads text only and refuses a binary chunk
 * with a message naming --allow-bytecode, unless the state allows bytecode:
 * TYCHO_ALLOW_BYTECODE=1 when the binding is set up, the shell's
 * --allow-bytecode, or a host's ty_lua_allow_bytecode. The flag lives in the
 * policy state (a userdata: Lua code cannot flip it), and the worker states
 * follow it (lworker.c). Task bodies are our own dumps, loaded by lbody.c
 * with mode "b": they are not user input and are always allowed.
 */
#include "tl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rewrite.h"
#include "tycho/task.h"

#define SCOPE_META "tycho.scope"
#define GUARD_META "tycho.options_guard"

/* Also declared in tl.h once notes/integrate-SUGAR.md lands; repeated here
 * so that this file builds on its own before then. */
void tl_policy_open(lua_State *L, int module_index);
void tl_policy_sync(lua_State *L, ty_runtime *rt);
int tl_store_hint(lua_State *L);
void tl_launch_guard(lua_State *L, int slot, const ty_policy *p, const char *fn);
int tl_with_launch_options(lua_State *L, int opts_index, const char *fn);
void tl_clear_launch_options(lua_State *L);

/* ---- state --------------------------------------------------------------------- */

static const char state_key = 'S'; /* registry[&state_key] = the policy state */

/* pol_state (tl.h). User values: 1 = threads (weak keys: thread -> list of
 * its open scopes, outermost first), 2 = the synced thread (an anchor). */

/* A scope record, in its thread's list. User value 1 = the thread that
 * opened it. */
typedef struct pol_scope {
  ty_policy p;
  char origin[TY_MAX_ORIGIN];
  bool open;
  bool collected; /* its proxy was collected while it was open: sweep closes it */
} pol_scope;

/* What Lua holds (SCOPE_META): the record is its user value 1. */
typedef struct scope_proxy {
  pol_scope *rec;
} scope_proxy;

static void sweep(lua_State *L, int sidx, ty_runtime *rt);

/* Every function here has upvalue 1 = the runtime box, 2 = the state. */
#define STATE_UPV lua_upvalueindex(2)

static ty_runtime *box_rt(lua_State *L) {
  tl_box *b = lua_touserdata(L, lua_upvalueindex(1));
  return b ? b->rt : NULL;
}

/* Make the runtime's stack hold the scopes of the thread at tidx (absolute
 * indices). rt NULL (closed): only the bookkeeping. */
static void resync(lua_State *L, int sidx, int tidx, ty_runtime *rt) {
  pol_state *st = lua_touserdata(L, sidx);
  for (; st->npushed > 0; st->npushed--)
    if (rt) ty_scope_pop(rt);
  lua_getiuservalue(L, sidx, 1);
  lua_pushvalue(L, tidx);
  if (lua_rawget(L, -2) == LUA_TTABLE) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      pol_scope *sc = lua_touserdata(L, -1);
      /* a push only fails past TY_MAX_SCOPES, which the list never exceeds
         when this binding is the only one pushing */
      if (sc && sc->open && rt && ty_scope_push(rt, &sc->p, sc->origin) == TY_OK) st->npushed++;
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 2);
  st->synced = lua_tothread(L, tidx);
  lua_pushvalue(L, tidx);
  lua_setiuservalue(L, sidx, 2);
}

/* Sync to the running thread (state at sidx). */
static void sync_running(lua_State *L, int sidx, ty_runtime *rt) {
  pol_state *st = lua_touserdata(L, sidx);
  if (st->synced == L) return;
  lua_pushthread(L);
  resync(L, sidx, lua_gettop(L), rt);
  lua_pop(L, 1);
}

void tl_policy_sync(lua_State *L, ty_runtime *rt) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &state_key) != LUA_TUSERDATA) {
    lua_pop(L, 1);
    return;
  }
  pol_state *st = lua_touserdata(L, -1);
  if (st->synced != L) {
    luaL_checkstack(L, 6, "tycho: scopes");
    sync_running(L, lua_gettop(L), rt);
  }
  if (st->ncollected) sweep(L, lua_gettop(L), rt);
  lua_pop(L, 1);
}

/* Push the scope list of the thread at tidx (creating it when `create`), or
 * nil. */
static int push_list(lua_State *L, int sidx, int tidx, bool create) {
  lua_getiuservalue(L, sidx, 1);
  lua_pushvalue(L, tidx);
  if (lua_rawget(L, -2) != LUA_TTABLE && create) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, tidx);
    lua_pushvalue(L, -2);
    lua_rawset(L, -4);
  }
  lua_remove(L, -2);
  return lua_type(L, -1);
}

/* Close the scope record at idx: remove it from its thread's list and, when that
 * thread is the synced one, from the runtime's stack. Never raises (it runs
 * in __close). */
static void scope_close(lua_State *L, int idx, int sidx, ty_runtime *rt) {
  idx = lua_absindex(L, idx);
  pol_scope *sc = lua_touserdata(L, idx);
  if (!sc || !sc->open) return;
  sc->open = false;
  pol_state *st = lua_touserdata(L, sidx);
  lua_getiuservalue(L, idx, 1); /* the owner thread */
  int tidx = lua_gettop(L);
  lua_State *owner = lua_tothread(L, tidx);
  if (push_list(L, sidx, tidx, false) == LUA_TTABLE) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1), at = 0;
    for (lua_Integer i = n; i >= 1 && !at; i--) {
      lua_rawgeti(L, -1, i);
      if (lua_touserdata(L, -1) == sc) at = i;
      lua_pop(L, 1);
    }
    if (at) {
      for (lua_Integer i = at; i < n; i++) {
        lua_rawgeti(L, -1, i + 1);
        lua_rawseti(L, -2, i);
      }
      lua_pushnil(L);
      lua_rawseti(L, -2, n);
      if (owner == st->synced) {
        if (at == n && st->npushed == n) {
          if (rt) ty_scope_pop(rt);
          st->npushed--;
        } else {
          resync(L, sidx, tidx, rt); /* closed out of order */
        }
      }
    }
  }
  lua_settop(L, tidx - 1);
}

/* Close the records whose proxies were collected (see the file's comment):
 * every thread's list, innermost first. Never raises. */
static void sweep(lua_State *L, int sidx, ty_runtime *rt) {
  pol_state *st = lua_touserdata(L, sidx);
  if (st->ncollected == 0) return;
  st->ncollected = 0;
  sidx = lua_absindex(L, sidx);
  luaL_checkstack(L, 8, "tycho: scopes");
  lua_getiuservalue(L, sidx, 1);
  int threads = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, threads)) { /* key: thread, value: its list */
    if (lua_istable(L, -1))
      for (lua_Integer i = (lua_Integer)lua_rawlen(L, -1); i >= 1; i--) {
        lua_rawgeti(L, -1, i);
        pol_scope *sc = lua_touserdata(L, -1);
        if (sc && sc->open && sc->collected) scope_close(L, -1, sidx, rt); /* edits values only */
        lua_pop(L, 1);
      }
    lua_pop(L, 1);
  }
  lua_settop(L, threads - 1);
}

/* The record of the proxy at idx (absolute), pushed; NULL (nothing pushed)
 * when idx is not a scope. */
static pol_scope *push_record(lua_State *L, int idx) {
  if (!luaL_testudata(L, idx, SCOPE_META)) return NULL;
  lua_getiuservalue(L, idx, 1);
  pol_scope *sc = lua_touserdata(L, -1);
  if (!sc) lua_pop(L, 1);
  return sc;
}

/* __gc of a proxy: mark its record for the next sweep, and warn (Lua prints
 * warnings once `warn("@on")` or `lua -W`) with where it was opened. */
static int scope_gc(lua_State *L) {
  scope_proxy *px = luaL_testudata(L, 1, SCOPE_META);
  pol_scope *sc = px ? px->rec : NULL;
  if (!sc || !sc->open || sc->collected) return 0;
  sc->collected = true;
  ((pol_state *)lua_touserdata(L, STATE_UPV))->ncollected++;
  char msg[TY_MAX_ORIGIN + 96];
  snprintf(msg, sizeof msg, "tycho: the %s was never closed; closed when collected", sc->origin);
  lua_warning(L, msg, 0);
  return 0;
}

/* ---- tycho.parallel ------------------------------------------------------------------ */

/* A streamed scope (memory set) runs its deferred launches when it ends:
 * strict mode's errors belong to the scope's end. On an error exit (err not
 * nil) the flush's own error is dropped: the first error is the one to see. */
static int scope_end(lua_State *L, bool raise) {
  pol_scope *sc = push_record(L, 1);
  if (!sc) return 0;
  bool streamed = sc->open && (sc->p.set & TY_POL_MEMORY) && sc->p.memory > 0;
  ty_runtime *rt = box_rt(L);
  scope_close(L, -1, STATE_UPV, rt);
  lua_pop(L, 1);
  if (streamed && rt) {
    /* a full collection first: the scope's temporaries must count as dead,
     * or streaming would have to allocate them whole (a minor step may
     * leave some, e.g. after an error unwound an earlier statement) */
    if (lua_gc(L, LUA_GCISRUNNING) > 0) lua_gc(L, LUA_GCCOLLECT);
    ty_status s = ty_flush(rt);
    if (s != TY_OK && raise) return tl_fail(L, rt, "parallel", s);
  }
  return 0;
}

static int scope_gc_close(lua_State *L) { return scope_end(L, lua_isnoneornil(L, 2)); }

static int scope_tostring(lua_State *L) {
  luaL_checkudata(L, 1, SCOPE_META);
  pol_scope *sc = push_record(L, 1);
  if (!sc) return luaL_error(L, "tycho.scope: no record");
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "tycho.scope{");
  const char *sep = "";
  char v[96];
  for (int axis = 0; axis < TY_NAXES; axis++) {
    if (!(sc->p.set & (1u << axis))) continue;
    switch (axis) {
    case TY_AXIS_MODE: snprintf(v, sizeof v, "%s", ty_mode_name(sc->p.mode)); break;
    case TY_AXIS_OVERDECOMPOSE: snprintf(v, sizeof v, "%d", sc->p.overdecompose); break;
    case TY_AXIS_MIN_CHUNK: snprintf(v, sizeof v, "%lld", (long long)sc->p.min_chunk); break;
    case TY_AXIS_FAVOR: snprintf(v, sizeof v, "%s", ty_favor_name(sc->p.favor)); break;
    case TY_AXIS_FUSE: snprintf(v, sizeof v, "%s", sc->p.fuse ? "true" : "false"); break;
    case TY_AXIS_FASTMATH: snprintf(v, sizeof v, "%s", sc->p.fastmath ? "true" : "false"); break;
    case TY_AXIS_MEMORY: snprintf(v, sizeof v, "%llu", (unsigned long long)sc->p.memory); break;
    case TY_AXIS_TARGET: snprintf(v, sizeof v, "%s", ty_target_name(sc->p.target)); break;
    default: snprintf(v, sizeof v, "%s", sc->p.stream_relaxed ? "relaxed" : "strict"); break;
    }
    luaL_addstring(&b, sep);
    luaL_addstring(&b, ty_axis_name(axis));
    luaL_addchar(&b, '=');
    luaL_addstring(&b, v);
    sep = ", ";
  }
  luaL_addstring(&b, "} (");
  luaL_addstring(&b, sc->origin);
  luaL_addstring(&b, sc->open ? ")" : ", closed)");
  luaL_pushresult(&b);
  return 1;
}

/* The origin explain shows: "scope at file.lua:12" from the caller's line. */
static void caller_origin(lua_State *L, char *buf, size_t len) {
  luaL_where(L, 1); /* "file.lua:12: " or "" */
  size_t n;
  const char *w = lua_tolstring(L, -1, &n);
  if (n >= 2 && w[n - 2] == ':' && w[n - 1] == ' ') n -= 2;
  if (n)
    snprintf(buf, len, "scope at %.*s", (int)n, w);
  else
    snprintf(buf, len, "scope");
  lua_pop(L, 1);
}

static int parallel_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  return lua_gettop(L) - (int)ctx; /* fn's results; the scope at ctx closes on return */
}

/* The error past TY_MAX_SCOPES, naming where the running thread's open
 * scopes were opened (runs of one origin counted once). */
static int too_deep(lua_State *L, int sidx) {
  luaL_Buffer b;
  lua_pushthread(L);
  int tidx = lua_gettop(L);
  push_list(L, sidx, tidx, false);
  int list = lua_gettop(L);
  luaL_buffinit(L, &b);
  if (lua_istable(L, list)) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, list);
    const char *prev = NULL;
    int run = 0, shown = 0;
    for (lua_Integer i = 1; i <= n + 1; i++) {
      const pol_scope *sc = NULL;
      if (i <= n) {
        lua_rawgeti(L, list, i);
        sc = lua_touserdata(L, -1);
        lua_pop(L, 1); /* the list keeps it */
      }
      if (sc && prev && strcmp(sc->origin, prev) == 0) {
        run++;
        continue;
      }
      if (prev && shown < 8) {
        char item[TY_MAX_ORIGIN + 32];
        snprintf(item, sizeof item, "%s%s", shown ? ", " : "", prev);
        luaL_addstring(&b, item);
        if (run > 1) {
          snprintf(item, sizeof item, " (x%d)", run);
          luaL_addstring(&b, item);
        }
        shown++;
      } else if (prev && shown == 8) {
        luaL_addstring(&b, ", ...");
        shown++;
      }
      prev = sc ? sc->origin : NULL;
      run = 1;
    }
  }
  luaL_pushresult(&b);
  return tl_error(L, "parallel", "scopes nest %d deep at most; open now: %s. A scope stays open "
                  "until it is closed: declare it <close>, call scope:close(), or use "
                  "tycho.parallel(opts, fn)", TY_MAX_SCOPES, lua_tostring(L, -1));
}

/* tycho.parallel(opts [, fn [, origin]]) */
static const tl_sig sig_parallel = {
    "parallel", 1, 3, "", false,
    "tycho.parallel(policy) (a scope to close), tycho.parallel(policy, fn [, origin])"};
static int l_parallel(lua_State *L) {
  const char *fn = "parallel";
  tl_args(L, &sig_parallel);
  ty_policy p;
  memset(&p, 0, sizeof p);
  if (!lua_istable(L, 1))
    return tl_error(L, fn, "options must be a table such as {mode = \"all\"}, got %s",
                    tl_typename(L, 1));
  tl_checkpolicy(L, 1, fn, "options", &p, NULL);
  bool has_fn = !lua_isnoneornil(L, 2);
  if (has_fn && lua_type(L, 2) != LUA_TFUNCTION && !luaL_getmetafield(L, 2, "__call"))
    return tl_error(L, fn, "argument 2 must be a function, got %s", tl_typename(L, 2));
  char origin[TY_MAX_ORIGIN];
  if (lua_type(L, 3) == LUA_TSTRING)
    snprintf(origin, sizeof origin, "%s", lua_tostring(L, 3));
  else if (!lua_isnoneornil(L, 3))
    return tl_error(L, fn, "origin must be a string, got %s", tl_typename(L, 3));
  else
    caller_origin(L, origin, sizeof origin);
  lua_settop(L, 2);
  ty_runtime *rt = tl_rt(L);
  int sidx = lua_upvalueindex(2);
  lua_pushvalue(L, sidx); /* 3: the state */
  sidx = 3;
  sync_running(L, sidx, rt);
  sweep(L, sidx, rt);
  if (ty_scope_depth(rt) >= TY_MAX_SCOPES) {
    /* scopes nobody closed may be waiting for the collector */
    lua_gc(L, LUA_GCCOLLECT);
    sweep(L, sidx, rt);
    if (ty_scope_depth(rt) >= TY_MAX_SCOPES) return too_deep(L, sidx);
  }

  pol_scope *sc = lua_newuserdatauv(L, sizeof *sc, 1); /* 4: the record */
  sc->p = p;
  snprintf(sc->origin, sizeof sc->origin, "%s", origin);
  sc->open = false;
  sc->collected = false;
  lua_pushthread(L);
  lua_setiuservalue(L, 4, 1);
  scope_proxy *px = lua_newuserdatauv(L, sizeof *px, 1); /* 5: the proxy */
  px->rec = sc;
  lua_pushvalue(L, 4);
  lua_setiuservalue(L, 5, 1);
  luaL_setmetatable(L, SCOPE_META);
  lua_replace(L, 4); /* the proxy at 4, the record held by it */
  lua_pushthread(L); /* 5 */
  push_list(L, sidx, 5, true); /* 6 */
  /* listed first (growing the list may raise): the runtime gets nothing
     that the list would not know about */
  lua_Integer at = (lua_Integer)lua_rawlen(L, 6) + 1;
  lua_getiuservalue(L, 4, 1);
  lua_rawseti(L, 6, at);
  ty_status s = ty_scope_push(rt, &p, origin);
  if (s != TY_OK) {
    lua_pushnil(L);
    lua_rawseti(L, 6, at);
    return tl_fail(L, rt, fn, s);
  }
  sc->open = true;
  ((pol_state *)lua_touserdata(L, sidx))->npushed++;
  lua_settop(L, 4);
  lua_remove(L, 3); /* the scope at 3 */
  if (!has_fn) return 1;
  /* the closure form: the scope is a to-be-closed slot of this call, so it
     closes when fn returns, raises, or its coroutine is closed; fn may
     yield (lua_callk) */
  lua_toclose(L, 3);
  lua_pushvalue(L, 2);
  lua_callk(L, 0, LUA_MULTRET, 3, parallel_k);
  return parallel_k(L, LUA_OK, 3);
}

/* scope:close(): the same as leaving its block (idempotent). */
static int scope_close_method(lua_State *L) {
  luaL_checkudata(L, 1, SCOPE_META);
  return scope_end(L, true);
}

/* tycho._scopes(): the origins of the running thread's open scopes
 * (outermost first) and the depth of the runtime's scope stack. A debugging
 * aid. */
static int l_scopes(lua_State *L) {
  ty_runtime *rt = tl_rt(L);
  lua_settop(L, 0);
  lua_pushvalue(L, STATE_UPV); /* 1 */
  sync_running(L, 1, rt);
  sweep(L, 1, rt);
  lua_pushthread(L); /* 2 */
  lua_newtable(L);   /* 3 */
  if (push_list(L, 1, 2, false) == LUA_TTABLE) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, 4);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, 4, i);
      pol_scope *sc = lua_touserdata(L, -1);
      lua_pushstring(L, sc->origin);
      lua_rawseti(L, 3, i);
      lua_pop(L, 1);
    }
  }
  lua_settop(L, 3);
  lua_pushinteger(L, ty_scope_depth(rt));
  return 2;
}

/* ---- hints and launch options -------------------------------------------------------- */

/* x:hint{parallel = "all"} / tycho.hint(x, opts): launches aligned with x (and
 * with what they compute from it) follow these axes. x:hint() or
 * x:hint{} removes the hint. Returns x. */
static const tl_sig sig_hint = {"hint", 2, 2, "", false,
                                "tycho.hint(x, policy), x:hint(policy), x:hint{} (removes it)"};
int tl_store_hint(lua_State *L) {
  const char *fn = "hint";
  tl_args(L, &sig_hint);
  ty_store *s = tl_checkstore(L, 1, fn, "argument 1");
  ty_policy p;
  memset(&p, 0, sizeof p);
  if (!lua_isnoneornil(L, 2)) {
    if (!lua_istable(L, 2))
      return tl_error(L, fn, "options must be a table such as {parallel = \"all\"}, got %s",
                      tl_typename(L, 2));
    tl_checkpolicy(L, 2, fn, "options", &p, NULL);
  }
  ty_runtime *rt = tl_rt(L);
  ty_status st = ty_store_hint(rt, s, &p);
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  lua_settop(L, 1);
  return 1;
}

static int guard_close(lua_State *L) {
  ty_runtime **rt = lua_touserdata(L, 1);
  if (rt && *rt) ty_launch_options(*rt, NULL);
  return 0;
}

int tl_with_launch_options(lua_State *L, int opts_index, const char *fn) {
  if (lua_isnoneornil(L, opts_index)) return 0;
  ty_policy p;
  memset(&p, 0, sizeof p);
  tl_checkpolicy(L, opts_index, fn, "options", &p, NULL);
  ty_runtime *rt = tl_rt(L);
  ty_status st = ty_launch_options(rt, &p);
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  return 1;
}

void tl_clear_launch_options(lua_State *L) {
  tl_box *b = lua_touserdata(L, lua_upvalueindex(1));
  if (b && b->rt) ty_launch_options(b->rt, NULL);
}

/* See tl.h. The guard is a to-be-closed slot: from the moment it is marked,
 * any way out of the calling C function (return or error) clears the
 * options, so they never leak into later launches. */
void tl_launch_guard(lua_State *L, int slot, const ty_policy *p, const char *fn) {
  ty_runtime *rt = tl_rt(L);
  ty_runtime **g = lua_newuserdatauv(L, sizeof *g, 0);
  *g = rt;
  luaL_setmetatable(L, GUARD_META);
  lua_replace(L, slot);
  lua_toclose(L, slot);
  ty_status st = ty_launch_options(rt, p);
  if (st != TY_OK) tl_fail(L, rt, fn, st);
}

/* ---- explain --------------------------------------------------------------------------- */

static void set_str(lua_State *L, const char *k, const char *v) {
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

static void set_int(lua_State *L, const char *k, lua_Integer v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}

static void push_ints(lua_State *L, int n, const int64_t *v) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)v[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

static void push_entry(lua_State *L, const ty_explain_entry *e) {
  lua_createtable(L, 0, 24);
  set_int(L, "seq", (lua_Integer)e->seq);
  set_str(L, "task", e->task);
  push_ints(L, e->ndim, e->shape);
  lua_setfield(L, -2, "shape");
  set_str(L, "target", e->target ? e->target : "cpu");
  set_int(L, "pieces", e->pieces);
  int64_t tiles[TY_MAX_RANK];
  for (int d = 0; d < e->ndim; d++) tiles[d] = e->tiles[d];
  push_ints(L, e->ndim, tiles);
  lua_setfield(L, -2, "tiling");
  set_str(L, "why", e->why);
  set_str(L, "partition", e->partition);
  if (e->processor >= 0) set_int(L, "processor", e->processor);
  set_int(L, "wave", e->wave + 1); /* 1-based, like everything Lua sees */
  set_int(L, "waves", e->waves);
  set_str(L, "mode", ty_mode_name(e->policy.mode));
  set_int(L, "overdecompose", e->policy.overdecompose);
  set_int(L, "min_chunk", (lua_Integer)e->policy.min_chunk);
  set_str(L, "favor", ty_favor_name(e->policy.favor));
  lua_pushboolean(L, e->policy.fuse);
  lua_setfield(L, -2, "fuse");
  lua_pushboolean(L, e->policy.fastmath);
  lua_setfield(L, -2, "fastmath");
  set_int(L, "memory", (lua_Integer)e->policy.memory);
  set_str(L, "stream", e->policy.stream_relaxed ? "relaxed" : "strict");
  set_str(L, "target_axis", ty_target_name(e->policy.target));
  lua_createtable(L, 0, TY_NAXES);
  for (int axis = 0; axis < TY_NAXES; axis++) set_str(L, ty_axis_name(axis), e->from[axis]);
  lua_setfield(L, -2, "from");
  set_int(L, "fused", e->fused);
  set_str(L, "fused_ops", e->fused_ops);
  set_str(L, "fuse_end", e->fuse_end);
  set_str(L, "streaming", e->stream);
  set_int(L, "gpus", e->gpus);
  set_str(L, "placement", e->place);
  set_int(L, "h2d_bytes", (lua_Integer)e->h2d);
  set_int(L, "d2h_bytes", (lua_Integer)e->d2h);
  set_int(L, "d2d_bytes", (lua_Integer)e->d2d);
  set_int(L, "flush", (lua_Integer)e->flush.flush); /* its figures: the object's flushes */
}

/* One flush's figures, the same as tycho.stats().last_flush's. */
static void push_flush(lua_State *L, const ty_flush_stats *f) {
  lua_createtable(L, 0, 13);
  set_int(L, "flush", (lua_Integer)f->flush);
  set_str(L, "favor", f->favor ? f->favor : "none");
  set_int(L, "launches", f->launches);
  set_int(L, "waves", f->waves);
  set_int(L, "critical_path", f->critical_path);
  set_int(L, "widest", f->widest);
  set_int(L, "concurrent", f->concurrent);
  lua_pushnumber(L, f->launches > 0 ? (double)f->concurrent / f->launches : 0);
  lua_setfield(L, -2, "concurrent_fraction");
  set_int(L, "peak_transient", (lua_Integer)f->peak_transient);
  set_int(L, "bytes_peak", (lua_Integer)f->bytes_peak);
  set_int(L, "bytes_allocated", (lua_Integer)f->bytes_allocated);
  set_int(L, "bytes_freed", (lua_Integer)f->bytes_freed);
  set_int(L, "bytes_live", (lua_Integer)f->bytes_live);
}

static int explain_tostring(lua_State *L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  return 1;
}

/* tycho.explain([n]): the last n launches (default 10), oldest first; prints
 * as explain's table. Each entry's `flush` numbers the flush it ran in; the
 * object's `flushes` lists the figures of those flushes, oldest first. */
static const tl_sig sig_explain = {"explain", 0, 1, "", false, "tycho.explain([n])"};
static int l_explain(lua_State *L) {
  const char *fn = "explain";
  tl_args(L, &sig_explain);
  int64_t n = 10;
  if (!lua_isnoneornil(L, 1)) {
    n = tl_checkint(L, 1, fn, "n");
    if (n < 1) return tl_error(L, fn, "n must be a positive integer, got %lld", (long long)n);
  }
  if (n > TY_EXPLAIN_KEEP) n = TY_EXPLAIN_KEEP;
  ty_runtime *rt = tl_rt(L);
  ty_status st = ty_flush(rt);
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  /* entries in a userdata: no error path can leak them */
  ty_explain_entry *es = lua_newuserdatauv(L, (size_t)n * sizeof *es, 0);
  int k = ty_explain(rt, (int)n, es);
  char *text = NULL;
  /* the window is empty after the flush above, so the text is of the same k */
  st = k > 0 ? ty_explain_text(rt, k, &text) : TY_OK;
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  if (text) {
    lua_pushstring(L, text);
    free(text);
  } else {
    lua_pushliteral(L, "(no launches yet)\n");
  }
  int tidx = lua_gettop(L);
  lua_createtable(L, k, 0);
  lua_createtable(L, 0, 0);
  for (int i = 0, nf = 0; i < k; i++) {
    push_entry(L, &es[i]);
    lua_rawseti(L, -3, i + 1);
    /* entries come by flush: a flush's figures once, after its last launch */
    if (es[i].flush.flush && (i + 1 == k || es[i + 1].flush.flush != es[i].flush.flush)) {
      push_flush(L, &es[i].flush);
      lua_rawseti(L, -2, ++nf);
    }
  }
  lua_setfield(L, -2, "flushes");
  lua_createtable(L, 0, 2);
  lua_pushvalue(L, tidx);
  lua_pushcclosure(L, explain_tostring, 1);
  lua_setfield(L, -2, "__tostring");
  lua_pushliteral(L, "tycho.explain");
  lua_setfield(L, -2, "__name");
  lua_setmetatable(L, -2);
  return 1;
}

/* ---- loaders ----------------------------------------------------------------------------- */

/* TYCHO_ALLOW_BYTECODE: 1, on, true or yes allow; anything else (unset
 * included) refuses. */
static bool env_allows_bytecode(void) {
  const char *v = getenv("TYCHO_ALLOW_BYTECODE");
  return v && (strcmp(v, "1") == 0 || strcmp(v, "on") == 0 || strcmp(v, "true") == 0 ||
               strcmp(v, "yes") == 0);
}

/* The state's switch; a state without the binding follows the environment. */
static bool bytecode_allowed(lua_State *L) {
  bool allow;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &state_key) == LUA_TUSERDATA)
    allow = ((pol_state *)lua_touserdata(L, -1))->allow_bytecode;
  else
    allow = env_allows_bytecode();
  lua_pop(L, 1);
  return allow;
}

/* Allow (1) or refuse (0) precompiled chunks in L's loaders and its worker
 * states; -1 only asks. Returns the previous setting. Call it between
 * flushes, from the thread that drives L. */
int ty_lua_allow_bytecode(lua_State *L, int allow) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &state_key) != LUA_TUSERDATA) {
    lua_pop(L, 1);
    return env_allows_bytecode();
  }
  pol_state *st = lua_touserdata(L, -1);
  lua_pop(L, 1);
  int was = st->allow_bytecode;
  if (allow >= 0) {
    st->allow_bytecode = allow != 0;
    lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
    tl_box *b = luaL_testudata(L, -1, TL_BOXMETA);
    if (b && b->tasks) tl_workers_allow_bytecode(b->tasks, st->allow_bytecode);
    lua_pop(L, 1);
  }
  return was;
}

/* The refusal, as the loaders report it: "x.luac: precompiled ...". */
static void refuse_bytecode(const char *name, char *err, size_t errlen) {
  const char *what = "binary string chunk";
  if (name && (name[0] == '@' || name[0] == '=')) what = name + 1;
  snprintf(err, errlen,
           "%s: precompiled Lua bytecode is refused: the Lua VM does not verify it, and a bad "
           "chunk can crash the process (run tycho with --allow-bytecode, or set "
           "TYCHO_ALLOW_BYTECODE=1, to load it)", what);
}

/* Load a text or binary chunk without raising: on a rewrite error, nothing
 * is pushed and the message is in err (LUA_ERRSYNTAX / LUA_ERRMEM);
 * otherwise luaL_loadbufferx's results (err empty). */
static int load_quiet(lua_State *L, const char *buf, size_t len, const char *name,
                      const char *mode, char *err, size_t errlen) {
  err[0] = '\0';
  /* binary chunks pass unchanged when allowed; a mode without 't' gets Lua's
     own refusal of text */
  if (len > 0 && buf[0] == LUA_SIGNATURE[0]) {
    if ((!mode || strchr(mode, 'b')) && !bytecode_allowed(L)) {
      refuse_bytecode(name, err, errlen);
      return LUA_ERRSYNTAX;
    }
    return luaL_loadbufferx(L, buf, len, name, mode);
  }
  if (mode && !strchr(mode, 't')) return luaL_loadbufferx(L, buf, len, name, mode);
  char *out = NULL;
  size_t outlen = 0;
  int r = tl_rewrite(buf, len, name, &out, &outlen, err, errlen);
  if (r == TL_REWRITE_SAME) return luaL_loadbufferx(L, buf, len, name, mode);
  if (r == TL_REWRITE_ERROR) return LUA_ERRSYNTAX;
  if (r == TL_REWRITE_NOMEM) return LUA_ERRMEM;
  int status = luaL_loadbufferx(L, out, outlen, name, mode); /* protected: never raises */
  free(out);
  return status;
}

int tl_loadbufferx(lua_State *L, const char *buf, size_t len, const char *name, const char *mode) {
  char err[512];
  int status = load_quiet(L, buf, len, name, mode, err, sizeof err);
  if (status != LUA_OK && err[0]) lua_pushstring(L, err);
  return status;
}

/* The whole of f in a malloc'd buffer; NULL on a read error or out of memory
 * (errno says which). */
static char *read_all(FILE *f, size_t *len) {
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  if (!buf) return NULL;
  for (;;) {
    if (n == cap) {
      char *q = cap < (SIZE_MAX >> 1) ? realloc(buf, cap * 2) : NULL;
      if (!q) {
        free(buf);
        errno = ENOMEM;
        return NULL;
      }
      buf = q;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    int e = errno;
    free(buf);
    errno = e ? e : EIO;
    return NULL;
  }
  *len = n;
  return buf;
}

/* luaL_loadfilex with the rewrite (see rewrite.h). Messages as Lua's:
 * "cannot open x.lua: No such file or directory". */
int tl_loadfilex(lua_State *L, const char *filename, const char *mode) {
  int fnameindex = lua_gettop(L) + 1;
  FILE *f;
  if (filename == NULL) {
    lua_pushliteral(L, "=stdin");
    f = stdin;
  } else {
    lua_pushfstring(L, "@%s", filename);
    f = fopen(filename, "r");
    if (!f) {
      const char *serr = strerror(errno);
      lua_pushfstring(L, "cannot open %s: %s", filename, serr);
      lua_remove(L, fnameindex);
      return LUA_ERRFILE;
    }
  }
  size_t len = 0;
  char *buf = read_all(f, &len);
  int e = errno;
  if (filename) fclose(f);
  if (!buf) {
    if (e == ENOMEM) {
      lua_settop(L, fnameindex - 1);
      lua_pushliteral(L, "not enough memory");
      return LUA_ERRMEM;
    }
    const char *serr = strerror(e);
    lua_pushfstring(L, "cannot read %s: %s", lua_tostring(L, fnameindex) + 1, serr);
    lua_remove(L, fnameindex);
    return LUA_ERRFILE;
  }
  /* as luaL_loadfilex: skip a UTF-8 BOM, and a first line starting with '#'
     (its newline stays, so the line numbers do) */
  size_t at = 0;
  if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) at = 3;
  if (at < len && buf[at] == '#') {
    while (at < len && buf[at] != '\n') at++;
    /* a binary chunk after the comment starts after the newline */
    if (at + 1 < len && buf[at + 1] == LUA_SIGNATURE[0]) at++;
  }
  char err[512];
  int status = load_quiet(L, buf + at, len - at, lua_tostring(L, fnameindex), mode, err, sizeof err);
  free(buf);
  if (status != LUA_OK && err[0]) lua_pushstring(L, err);
  lua_remove(L, fnameindex);
  return status;
}

/* base library's load_aux: set env as the first upvalue, or return fail, msg. */
static int load_aux(lua_State *L, int status, int envidx) {
  if (status == LUA_OK) {
    if (envidx != 0) {
      lua_pushvalue(L, envidx);
      if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
    }
    return 1;
  }
  luaL_pushfail(L);
  lua_insert(L, -2);
  return 2;
}

/* Concatenate what the reader function at 1 returns, until nil or "". */
static int read_pieces(lua_State *L) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (;;) {
    lua_pushvalue(L, 1);
    lua_call(L, 0, 1);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      break;
    }
    if (!lua_isstring(L, -1)) return luaL_error(L, "reader function must return a string");
    if (lua_rawlen(L, -1) == 0) {
      lua_pop(L, 1);
      break;
    }
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  return 1;
}

/* load(chunk [, chunkname [, mode [, env]]]), as the base library's. */
static int l_load(lua_State *L) {
  size_t l;
  const char *s = lua_tolstring(L, 1, &l);
  const char *mode = luaL_optstring(L, 3, "bt");
  int env = !lua_isnone(L, 4) ? 4 : 0;
  int status;
  if (s != NULL) {
    const char *chunkname = luaL_optstring(L, 2, s);
    status = tl_loadbufferx(L, s, l, chunkname, mode);
  } else {
    const char *chunkname = luaL_optstring(L, 2, "=(load)");
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_pushcfunction(L, read_pieces);
    lua_pushvalue(L, 1);
    status = lua_pcall(L, 1, 1, 0); /* a reader's error is load's (nil, msg) */
    if (status == LUA_OK) {
      s = lua_tolstring(L, -1, &l);
      status = tl_loadbufferx(L, s, l, chunkname, mode);
      lua_remove(L, -2);
    }
  }
  return load_aux(L, status, env);
}

/* loadfile([filename [, mode [, env]]]) */
static int l_loadfile(lua_State *L) {
  const char *fname = luaL_optstring(L, 1, NULL);
  const char *mode = luaL_optstring(L, 2, NULL);
  int env = !lua_isnone(L, 3) ? 3 : 0;
  int status = tl_loadfilex(L, fname, mode);
  return load_aux(L, status, env);
}

static int dofile_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  (void)ctx;
  return lua_gettop(L) - 1;
}

/* dofile([filename]) */
static int l_dofile(lua_State *L) {
  const char *fname = luaL_optstring(L, 1, NULL);
  lua_settop(L, 1);
  if (tl_loadfilex(L, fname, NULL) != LUA_OK) return lua_error(L);
  lua_callk(L, 0, LUA_MULTRET, 0, dofile_k);
  return dofile_k(L, 0, 0);
}

/* package.searchers[2]: Lua files along package.path, loaded with the
 * rewrite (messages as loadlib.c's searcher_Lua). */
static int l_searcher_lua(lua_State *L) {
  luaL_checkstring(L, 1);
  lua_settop(L, 1);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_getfield(L, -1, "package"); /* package */
  if (!lua_istable(L, -1)) return luaL_error(L, "'package' is not a table");
  int pkg = lua_gettop(L);
  lua_getfield(L, pkg, "searchpath");
  lua_pushvalue(L, 1);
  if (lua_getfield(L, pkg, "path") != LUA_TSTRING)
    return luaL_error(L, "'package.path' must be a string");
  lua_call(L, 2, 2);
  if (lua_isnil(L, -2)) return 1; /* not found: the "no file ..." message */
  lua_pop(L, 1);
  const char *filename = lua_tostring(L, -1);
  if (tl_loadfilex(L, filename, NULL) == LUA_OK) {
    lua_pushstring(L, filename);
    return 2;
  }
  return luaL_error(L, "error loading module '%s' from file '%s':\n\t%s", lua_tostring(L, 1),
                    filename, lua_tostring(L, -1));
}

/* tycho._rewrite(src [, chunkname]): the plain Lua the loaders compile for
 * src, or nil and the message. A debugging aid. */
static int l_rewrite(lua_State *L) {
  size_t len;
  const char *src = luaL_checklstring(L, 1, &len);
  const char *name = luaL_optstring(L, 2, "=(rewrite)");
  char *out = NULL, err[512];
  size_t outlen = 0;
  int r = tl_rewrite(src, len, name, &out, &outlen, err, sizeof err);
  if (r == TL_REWRITE_SAME) {
    lua_settop(L, 1);
    return 1;
  }
  if (r != TL_REWRITE_DONE) {
    luaL_pushfail(L);
    lua_pushstring(L, err);
    return 2;
  }
  luaL_Buffer b; /* copied through a buffer: a memory error cannot leak `out` */
  char *dst = luaL_buffinitsize(L, &b, outlen);
  memcpy(dst, out, outlen);
  free(out);
  luaL_pushresultsize(&b, outlen);
  return 1;
}

/* ---- set-up ------------------------------------------------------------------------------- */

static const luaL_Reg module_funcs[] = {{"parallel", l_parallel},
                                        {"explain", l_explain},
                                        {"hint", tl_store_hint},
                                        {"_scopes", l_scopes},
                                        {"_rewrite", l_rewrite},
                                        {NULL, NULL}};

void tl_policy_open(lua_State *L, int module_index) {
  int mod = lua_absindex(L, module_index);
  int top = lua_gettop(L);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX); /* top+1: the box */
  int box = top + 1;

  /* the state, once per Lua state */
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &state_key) != LUA_TUSERDATA) {
    lua_pop(L, 1);
    pol_state *st = lua_newuserdatauv(L, sizeof *st, 2);
    st->synced = NULL;
    st->npushed = 0;
    st->ncollected = 0; /* a userdata's bytes are not zeroed */
    st->allow_bytecode = env_allows_bytecode();
    lua_newtable(L); /* threads, weak keys: a dead thread takes its scopes with it */
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_setiuservalue(L, -2, 1);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &state_key);
  }
  int state = top + 2;
  tl_box *bx = luaL_testudata(L, box, TL_BOXMETA); /* the worker states follow the loaders */
  if (bx) bx->pol = lua_touserdata(L, state); /* anchored in the registry: never moves */
  if (bx && bx->tasks)
    tl_workers_allow_bytecode(bx->tasks, ((pol_state *)lua_touserdata(L, state))->allow_bytecode);

  /* scope objects */
  if (luaL_newmetatable(L, SCOPE_META)) {
    int meta = lua_gettop(L);
    lua_pushvalue(L, box);
    lua_pushvalue(L, state);
    lua_pushcclosure(L, scope_gc_close, 2);
    lua_setfield(L, meta, "__close");
    lua_pushvalue(L, box);
    lua_pushvalue(L, state);
    lua_pushcclosure(L, scope_gc, 2);
    lua_setfield(L, meta, "__gc");
    lua_pushcfunction(L, scope_tostring);
    lua_setfield(L, meta, "__tostring");
    lua_createtable(L, 0, 1);
    lua_pushvalue(L, box);
    lua_pushvalue(L, state);
    lua_pushcclosure(L, scope_close_method, 2);
    lua_setfield(L, -2, "close");
    lua_setfield(L, meta, "__index");
  }
  lua_pop(L, 1);
  if (luaL_newmetatable(L, GUARD_META)) {
    lua_pushcfunction(L, guard_close);
    lua_setfield(L, -2, "__close");
  }
  lua_pop(L, 1);

  /* module functions, upvalues (box, state) */
  lua_pushvalue(L, mod);
  lua_pushvalue(L, box);
  lua_pushvalue(L, state);
  luaL_setfuncs(L, module_funcs, 2);
  lua_settop(L, state);

  /* x:hint{...}: a store method (upvalue 1: the box, like every method) */
  if (luaL_getmetatable(L, TL_STORE) == LUA_TTABLE &&
      lua_getfield(L, -1, "__methods") == LUA_TTABLE) {
    lua_pushvalue(L, box);
    lua_pushvalue(L, state);
    lua_pushcclosure(L, tl_store_hint, 2);
    lua_setfield(L, -2, "hint");
  }
  lua_settop(L, state);

  /* the loaders */
  lua_pushglobaltable(L);
  lua_pushcfunction(L, l_load);
  lua_setfield(L, -2, "load");
  lua_pushcfunction(L, l_loadfile);
  lua_setfield(L, -2, "loadfile");
  lua_pushcfunction(L, l_dofile);
  lua_setfield(L, -2, "dofile");
  lua_pop(L, 1);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, "package") == LUA_TTABLE &&
      lua_getfield(L, -1, "searchers") == LUA_TTABLE) {
    lua_pushcfunction(L, l_searcher_lua);
    lua_rawseti(L, -2, 2);
  }
  lua_settop(L, top);
}
