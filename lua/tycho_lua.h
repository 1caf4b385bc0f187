/*
 * tycho_lua.h — the Lua 5.4 binding of the tycho runtime.
 *
 * Two ways in:
 *  - `require "tycho"` from stock lua5.4 loads tycho.so, whose luaopen_tycho
 *    creates a runtime from the TYCHO_* environment variables (ty_config_init)
 *    and owns it: the runtime is destroyed when the Lua state is closed.
 *  - A host (the `tycho` shell, an application) creates the runtime itself and
 *    calls ty_lua_bind; the runtime is not owned and must outlive the state.
 *
 * Either way the module table is recorded in package.loaded.tycho, so a later
 * `require "tycho"` returns the same table, and one Lua state drives at most
 * one runtime.
 */
#ifndef TYCHO_LUA_H
#define TYCHO_LUA_H

#include <lua.h>

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

#ifdef __cplusplus
}
#endif
#endif /* TYCHO_LUA_H */
