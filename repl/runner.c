/*
 * runner.c — running Lua chunks the way lua.c does, with a runtime beside.
 *
 * Every chunk (script, -e, -l, LUA_INIT, REPL line) runs through
 * shell_docall: a protected call whose message handler appends a traceback,
 * with SIGINT turned into an "interrupted!" error. A signal handler may not
 * touch a Lua state, so (as lua.c's laction) it only sets a count hook that
 * raises the error at the next instruction; it also calls ty_interrupt so
 * that a flush in progress stops at its next launch boundary (the binding
 * then raises the runtime's error). A second SIGINT before the hook runs
 * kills the process (lua.c does the same): the way out of a long C call
 * that never returns to Lua.
 *
 * Invariant: outside shell_docall neither the hook this file sets nor the
 * runtime's interrupt request is pending, so an interrupt never leaks into
 * the next chunk.
 */
#include "shell.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "rewrite.h"

#include "tycho_lua.h"

static lua_State *volatile target_L;
static ty_runtime *volatile target_rt;
/* Stops Lua task bodies on workers too; read in the handler, set in
 * shell_docall (it reads the state, which a handler must not). */
static const ty_lua_interrupter *volatile target_intr;
static volatile sig_atomic_t interrupted;
static struct sigaction saved_sigint;
static const char *progname = SHELL_PROGNAME;

void shell_set_target(lua_State *L, ty_runtime *rt) {
  target_intr = NULL;
  target_L = L;
  target_rt = rt;
}

ty_runtime *shell_runtime(void) { return target_rt; }
lua_State *shell_state(void) { return target_L; }

const char *shell_set_progname(const char *name) {
  const char *old = progname;
  progname = name;
  return old;
}

static void (*message_hook)(const char *msg);

void shell_set_message_hook(void (*hook)(const char *msg)) { message_hook = hook; }

void shell_message(const char *msg) {
  if (message_hook) {
    message_hook(msg);
    return;
  }
  if (progname) fprintf(stderr, "%s: ", progname);
  fprintf(stderr, "%s\n", msg);
  fflush(stderr);
}

int shell_report(lua_State *L, int status) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    shell_message(msg ? msg : "(error object is not a string)");
    lua_pop(L, 1);
  }
  return status;
}

/* The hook set by the signal handler: raise the error from inside Lua. */
static void lstop(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted!");
}

static void laction(int sig) {
  signal(sig, SIG_DFL); /* a second SIGINT before the hook fires kills */
  interrupted = 1;
  if (target_intr) ty_lua_interrupt(target_intr); /* ty_interrupt + task bodies */
  else if (target_rt) ty_interrupt(target_rt);
  if (target_L) lua_sethook(target_L, lstop, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

/* lua.c's msghandler: a string message gets a traceback; another value its
 * __tostring or a note of its type. */
static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

int shell_docall(lua_State *L, int narg, int nres) {
  int base = lua_gettop(L) - narg;
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = laction;
  sigemptyset(&sa.sa_mask);
  interrupted = 0;
  target_intr = target_L && target_rt ? ty_lua_interrupter_get(target_L) : NULL;
  if (target_rt) ty_interrupt_clear(target_rt); /* a stale one is not for this chunk */
  sigaction(SIGINT, &sa, &saved_sigint);
  int status = lua_pcall(L, narg, nres, base);
  sigaction(SIGINT, &saved_sigint, NULL);
  if (interrupted) {
    /* the error may have come from the runtime (ty_interrupt) before the hook
       ran, or from the hook before any flush: let neither reach the next
       chunk (or a __tostring that flushes while the REPL prints) */
    lua_sethook(L, NULL, 0, 0);
    if (target_rt) ty_interrupt_clear(target_rt);
    interrupted = 0;
  }
  lua_remove(L, base);
  return status;
}

static int dochunk(lua_State *L, int status) {
  if (status == LUA_OK) status = shell_docall(L, 0, 0);
  return shell_report(L, status);
}

int shell_dofile(lua_State *L, const char *name) { return dochunk(L, tl_loadfilex(L, name, NULL)); }

int shell_dostring(lua_State *L, const char *s, const char *chunkname) {
  return dochunk(L, tl_loadbufferx(L, s, strlen(s), chunkname, NULL));
}

/* -l mod: global mod = require "mod"; -l g=mod: global g = require "mod". */
int shell_dolibrary(lua_State *L, const char *spec) {
  const char *eq = strchr(spec, '=');
  const char *mod = eq ? eq + 1 : spec;
  lua_getglobal(L, "require");
  lua_pushstring(L, mod);
  int status = shell_docall(L, 1, 1);
  if (status == LUA_OK) {
    if (eq)
      lua_pushlstring(L, spec, (size_t)(eq - spec));
    else
      lua_pushstring(L, spec);
    lua_insert(L, -2);
    lua_setglobal(L, lua_tostring(L, -2));
    lua_pop(L, 1);
  }
  return shell_report(L, status);
}

/* lua.c's createargtable: the script at index 0, its arguments at 1..n, the
 * interpreter and the options before it at negative indices. Without a
 * script, the interpreter is at 0. */
void shell_create_arg_table(lua_State *L, char **argv, int argc, int script) {
  if (script == argc) script = 0;
  int narg = argc - (script + 1);
  lua_createtable(L, narg > 0 ? narg : 0, script + 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

/* Push arg[1..#arg]: the script's `...`. */
static int pushargs(lua_State *L) {
  if (lua_getglobal(L, "arg") != LUA_TTABLE) luaL_error(L, "'arg' is not a table");
  int n = (int)luaL_len(L, -1);
  luaL_checkstack(L, n + 3, "too many arguments to script");
  int i;
  for (i = 1; i <= n; i++) lua_rawgeti(L, -i, i);
  lua_remove(L, -i);
  return n;
}

/* The script at argv[0] ("-" is stdin unless it follows "--"); luaL_loadfile
 * skips a first line starting with '#', so `tycho /usr/bin/busted` works. */
int shell_handle_script(lua_State *L, char **argv) {
  const char *fname = argv[0];
  if (strcmp(fname, "-") == 0 && strcmp(argv[-1], "--") != 0) fname = NULL;
  int status = tl_loadfilex(L, fname, NULL);
  if (status == LUA_OK) {
    int n = pushargs(L);
    status = shell_docall(L, n, LUA_MULTRET);
  }
  return shell_report(L, status);
}

/* LUA_INIT_5_4 (or LUA_INIT): code to run first, or @file. */
int shell_handle_luainit(lua_State *L) {
  const char *name = "=LUA_INIT_" LUA_VERSION_MAJOR "_" LUA_VERSION_MINOR;
  const char *init = getenv(name + 1);
  if (init == NULL) {
    name = "=LUA_INIT";
    init = getenv(name + 1);
  }
  if (init == NULL) return LUA_OK;
  if (init[0] == '@') return shell_dofile(L, init + 1);
  return shell_dostring(L, init, name);
}
