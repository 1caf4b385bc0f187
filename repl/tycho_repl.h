/*
 * tycho_repl.h — the `tycho` shell as a library (libtycho_repl), for host
 * applications: open the interactive shell on their own Lua state, run a
 * script the way the shell does, or build their own `tycho` program with
 * their C tasks registered (docs/embedding.md).
 *
 * The shell handles SIGINT while it runs Lua code: Ctrl-C interrupts the
 * running statement, the runtime's flush (ty_interrupt) and the Lua task
 * bodies running on workers (ty_lua_interrupt); the host's own SIGINT
 * handler is restored afterwards. One shell at a time per process.
 */
#ifndef TYCHO_REPL_H
#define TYCHO_REPL_H

#include <lua.h>

#include "tycho/tycho.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The interactive loop (GNU readline, history in $HOME/.tycho_history) on L,
 * a state bound to a runtime (ty_lua_open or ty_lua_bind), until end of
 * input (Ctrl-D). Reads standard input line by line when it is not a
 * terminal. */
void ty_repl(lua_State *L);

/* Run a script file in L as the shell does: errors (with their traceback)
 * are printed on stderr, Ctrl-C interrupts it. 0 on success, 1 on error. */
int ty_repl_dofile(lua_State *L, const char *path);

/* Called by ty_shell_main once the runtime and the Lua state exist (the
 * global `tycho` is set) and before LUA_INIT, -e, -l, the script or the
 * REPL: register C tasks there (ty_task_register, ty_lua_declare_task).
 * Return 0, or non-zero to stop with status 1. */
typedef int (*ty_shell_setup)(lua_State *L, ty_runtime *rt, void *ud);

/* The whole `tycho` program (command line, runtime, state, script or REPL;
 * `tycho --help`). Returns the process exit status. */
int ty_shell_main(int argc, char **argv, ty_shell_setup setup, void *ud);

#ifdef __cplusplus
}
#endif
#endif /* TYCHO_REPL_H */
