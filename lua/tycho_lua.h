/*
 * tycho_lua.h — the Lua 5.4 binding of the tycho runtime, and what a host
 * application needs to script a runtime from Lua (docs/embedding.md).
 *
 * Two ways in:
 *  - `require "tycho"` from stock lua5.4 loads tycho.so, whose luaopen_tycho
 *    creates a runtime from the TYCHO_* environment variables (ty_config_init)
 *    and owns it: the runtime is destroyed when the Lua state is closed.
 *  - A host (the `tycho` shell, an application) creates the runtime itself and
 *    calls ty_lua_open (a new state) or ty_lua_bind (a state of its own); the
 *    runtime is not owned and must outlive the state.
 *
 * Either way the module table is recorded in package.loaded.tycho, so a later
 * `require "tycho"` returns the same table, and one Lua state drives at most
 * one runtime.
 *
 * Functions here that return a ty_status leave a message for
 * ty_lua_errmsg(L) when they fail; none raises a Lua error into the host.
 */
#ifndef TYCHO_LUA_H
#define TYCHO_LUA_H

#include <stdint.h>
#include <string.h>

#include <lua.h>

#include "tycho/task.h"
#include "tycho/tycho.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The `require "tycho"` entry point: pushes the module table. Creates and owns
 * a runtime unless one is already bound to L (then returns that module). */
int luaopen_tycho(lua_State *L);

/* Bind an existing runtime (not owned: must outlive L) to L; pushes the module
 * table and records it in package.loaded.tycho. Returns 1 (values pushed). */
int ty_lua_bind(lua_State *L, ty_runtime *rt);

/* The runtime bound to L, or NULL when none is (or it was closed). */
ty_runtime *ty_lua_runtime(lua_State *L);

/* ---- embedding ---------------------------------------------------------------- */

/* A new Lua state with the standard libraries and the global `tycho` bound to
 * rt (not owned). NULL when out of memory. Close it with lua_close before
 * ty_runtime_destroy(rt). */
lua_State *ty_lua_open(ty_runtime *rt);

/* A new Lua state, as luaL_newstate makes it (no libraries opened), whose
 * allocator takes part in the core's fault injection (ty_fault_fail_alloc):
 * an allocation that grows a block counts as one and fails when the injector
 * says so, as Lua's own test allocator does (shrinking never fails: Lua
 * assumes it cannot). For fault-injection runs (docs/reliability.md), the
 * first call in a process reads TYCHO_FAIL_ALLOC=k (arm the injector: the
 * k-th allocation from here on fails) and TYCHO_ALLOC_COUNT=1 (print the
 * allocations counted on standard error at exit); TYCHO_FAIL_ALLOC_LUA=0
 * leaves the Lua state's allocations out of the count (the core's only).
 * The `tycho` shell and ty_lua_open make their states here. Freed blocks of
 * up to 256 bytes are kept in per-size lists for the state's next
 * allocations (lheap.c, "Lua's small blocks"; not in sanitizer builds);
 * a sentinel in the registry frees them at lua_close. Once tycho is bound
 * to such a state, its store userdata have no __gc: the allocator releases
 * a store when Lua frees its userdata (lheap.c), which spares Lua's costly
 * finalizers; so do not replace this state's allocator (lua_setallocf)
 * after binding: stores would then leak. NULL when out of memory. */
lua_State *ty_lua_newstate(void);

/* Allow (1) or refuse (0) precompiled Lua chunks in L's loaders (load,
 * loadfile, dofile, require) and in its task workers; -1 only asks. Returns
 * the previous setting. Refused by default: the Lua VM does not verify
 * bytecode (TYCHO_ALLOW_BYTECODE=1 allows it when the binding is set up). */
int ty_lua_allow_bytecode(lua_State *L, int allow);

/* Run a script file / a string in L, as the shell does (a failure carries the
 * traceback). TY_OK; TY_EIO (the file cannot be read), TY_EINVAL (a syntax
 * error), TY_ENOMEM, TY_EINTR (interrupted) or TY_ETASK (the script raised an
 * error), with the message in ty_lua_errmsg. */
ty_status ty_lua_dofile(lua_State *L, const char *path);
ty_status ty_lua_dostring(lua_State *L, const char *code, const char *chunkname);

/* The message of the last failure of a ty_lua_* function on L ("" if none);
 * valid until the next call. */
const char *ty_lua_errmsg(lua_State *L);

/* Push a store (a host's, e.g. from ty_store_attach) as a Lua value: the
 * value holds its own reference, the caller keeps its own. */
void ty_lua_push_store(lua_State *L, ty_store *s);
/* The store at idx (borrowed: valid while the value is), or NULL when the
 * value is not an open store. */
ty_store *ty_lua_tostore(lua_State *L, int idx);

/* Make the C task `name` (ty_task_register) callable from Lua as
 * tycho.tasks[name] with this argument signature: comma-separated kinds in
 * call order, the grammar of tycho.task's `args`: "in", "in:broadcast",
 * "out", "out:f32", "inout", "reduce:+" ("*", "min", "max", optional
 * ":dtype"), "scalar", "scalar:f64" / ":i64" / ":bool" / ":string".
 * Example: ty_lua_declare_task(L, "heavy_sim", "in, out, scalar:i64"). */
ty_status ty_lua_declare_task(lua_State *L, const char *name, const char *args);

/* For SIGINT handlers. ty_lua_interrupter is called in normal context (it
 * reads L); ty_lua_interrupt is async-signal-safe: it calls ty_interrupt on
 * the runtime and makes every Lua task body now running stop with
 * "interrupted" (bodies also stop at their next tile access). */
typedef struct ty_lua_interrupter ty_lua_interrupter;
const ty_lua_interrupter *ty_lua_interrupter_get(lua_State *L);
void ty_lua_interrupt(const ty_lua_interrupter *h);

/* ---- scalars of a launch made from Lua ----------------------------------------
 * A launch from Lua packs its scalar arguments (declared "scalar...") into
 * ctx->scalars, in declaration order:
 *   bytes 0..7          int64 n, the number of scalars
 *   bytes 8+8k..        scalar k: double (F64), int64 (I64, BOOL as 0/1), or
 *                       for STR the int64 byte offset of its NUL-terminated
 *                       text inside ctx->scalars
 *   byte 8+8n+k         the kind of scalar k (TY_LUA_SCALAR_*)
 *   then the strings.
 * A C task reads them with the helpers below (k counts from 0; a k out of
 * range reads 0 / NULL). */
enum { TY_LUA_SCALAR_F64 = 1, TY_LUA_SCALAR_I64 = 2, TY_LUA_SCALAR_BOOL = 3, TY_LUA_SCALAR_STR = 4 };

static inline int ty_lua_nscalars(const ty_task_ctx *ctx) {
  int64_t n = 0;
  if (ctx->scalar_bytes >= 8) memcpy(&n, ctx->scalars, 8);
  return (int)n;
}

static inline int ty_lua_scalar_kind(const ty_task_ctx *ctx, int k) {
  int n = ty_lua_nscalars(ctx);
  if (k < 0 || k >= n) return 0;
  return ((const unsigned char *)ctx->scalars)[8 + 8 * (size_t)n + (size_t)k];
}

static inline double ty_lua_scalar_f64(const ty_task_ctx *ctx, int k) {
  int kind = ty_lua_scalar_kind(ctx, k);
  const char *p = (const char *)ctx->scalars + 8 + 8 * (size_t)k;
  if (kind == TY_LUA_SCALAR_F64) {
    double d;
    memcpy(&d, p, 8);
    return d;
  }
  if (kind == TY_LUA_SCALAR_I64 || kind == TY_LUA_SCALAR_BOOL) {
    int64_t i;
    memcpy(&i, p, 8);
    return (double)i;
  }
  return 0.0;
}

static inline int64_t ty_lua_scalar_i64(const ty_task_ctx *ctx, int k) {
  int kind = ty_lua_scalar_kind(ctx, k);
  const char *p = (const char *)ctx->scalars + 8 + 8 * (size_t)k;
  if (kind == TY_LUA_SCALAR_I64 || kind == TY_LUA_SCALAR_BOOL) {
    int64_t i;
    memcpy(&i, p, 8);
    return i;
  }
  if (kind == TY_LUA_SCALAR_F64) {
    double d;
    memcpy(&d, p, 8);
    return (d > -9.2e18 && d < 9.2e18) ? (int64_t)d : 0; /* NaN and overflow: 0 */
  }
  return 0;
}

static inline const char *ty_lua_scalar_str(const ty_task_ctx *ctx, int k) {
  if (ty_lua_scalar_kind(ctx, k) != TY_LUA_SCALAR_STR) return NULL;
  int64_t off;
  memcpy(&off, (const char *)ctx->scalars + 8 + 8 * (size_t)k, 8);
  return (const char *)ctx->scalars + off;
}

#ifdef __cplusplus
}
#endif
#endif /* TYCHO_LUA_H */
