/*
 * main.c — the `tycho` program as a library function (ty_shell_main, see
 * tycho_repl.h): a runtime, a Lua state bound to it, the host's setup hook,
 * and lua.c's order of work (LUA_INIT, -e/-l in order, the script, the
 * REPL). The `tycho` executable is this function with no hook (tycho.c); a
 * host builds its own shell, with its C tasks registered, the same way.
 *
 * Lifetime: the runtime is created before the state (its configuration comes
 * from the command line) and destroyed after every store the state holds has
 * been finalised. The state owns it through a sentinel userdata whose __gc
 * calls ty_runtime_destroy; the sentinel is given its finaliser before the
 * binding exists, and Lua runs finalisers in the reverse order they were
 * marked, so it runs last when the state closes. That holds however the
 * state closes: at the end of main, or inside os.exit(code, true) (busted's
 * way out), which calls lua_close and exit() without returning here. A plain
 * os.exit(code) closes nothing, as in lua.c; the state and runtime stay
 * reachable from this file's statics, so leak checkers see no leak.
 */
#include "shell.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lualib.h>

#include "tycho/dist.h"
#include "tycho_lua.h"
#include "tycho_repl.h"

#define RUNTIME_KEY "tycho.shell.runtime" /* registry key of the sentinel */

static lua_State *main_L;
static ty_runtime *main_rt; /* NULL once destroyed */

static int runtime_gc(lua_State *L) {
  ty_runtime **slot = lua_touserdata(L, 1);
  if (slot && *slot) {
    shell_set_target(NULL, NULL); /* the state is closing, the runtime dying */
    ty_runtime_destroy(*slot);
    if (*slot == main_rt) main_rt = NULL;
    *slot = NULL;
  }
  return 0;
}

/* Hand the runtime to the state (see the file comment). */
static void own_runtime(lua_State *L, ty_runtime *rt) {
  ty_runtime **slot = lua_newuserdatauv(L, sizeof *slot, 0);
  *slot = rt;
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, runtime_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, RUNTIME_KEY);
}

static int shell_rank, shell_nranks = 1;

void shell_set_ranks(int rank, int nranks) {
  shell_rank = rank;
  shell_nranks = nranks;
}

/* path with ".rank<R>" before the extension of its last component (or at its
 * end): malloc'ed, NULL when out of memory */
static char *rank_path(const char *path, int rank) {
  const char *base = strrchr(path, '/'), *dot = strrchr(base ? base + 1 : path, '.');
  size_t at = dot && dot != (base ? base + 1 : path) ? (size_t)(dot - path) : strlen(path);
  size_t cap = strlen(path) + 32;
  char *out = malloc(cap);
  if (out) snprintf(out, cap, "%.*s.rank%d%s", (int)at, path, rank, path + at);
  return out;
}

typedef struct shell_run {
  shell_options *opt;
  ty_shell_setup setup;
  void *ud;
} shell_run;

/* lua.c's pmain, run in protected mode. */
static int pmain(lua_State *L) {
  shell_run *run = lua_touserdata(L, 1);
  shell_options *opt = run->opt;
  char **argv = opt->argv;
  luaL_checkversion(L);
  if (opt->flags & SHELL_HAS_V) shell_print_version(stdout);
  if (opt->flags & SHELL_HAS_NOENV) { /* tell the package library to ignore LUA_PATH... */
    lua_pushboolean(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
  }
  luaL_openlibs(L);
  own_runtime(L, main_rt);

  int top = lua_gettop(L);
  ty_lua_bind(L, main_rt); /* pushes the module, sets package.loaded.tycho */
  lua_settop(L, top + 1);
  lua_setglobal(L, "tycho");
  /* the command line and the environment (unless -E) decide, not the
     binding's own reading of TYCHO_ALLOW_BYTECODE */
  ty_lua_allow_bytecode(L, opt->allow_bytecode);

  if (run->setup && run->setup(L, main_rt, run->ud) != 0) {
    shell_message("the host's setup failed");
    return 0;
  }
  shell_create_arg_table(L, argv, opt->argc, opt->script);
  lua_gc(L, LUA_GCRESTART);
  lua_gc(L, LUA_GCGEN, 0, 0); /* as lua.c 5.4: most temporaries die young */
  if (!(opt->flags & SHELL_HAS_NOENV) && shell_handle_luainit(L) != LUA_OK) return 0;
  if (opt->flags & SHELL_HAS_W) lua_warning(L, "@on", 0);
  for (int i = 0; i < opt->nactions; i++) {
    const shell_action *a = &opt->actions[i];
    int status = a->kind == 'e' ? shell_dostring(L, a->text, "=(command line)")
                                : shell_dolibrary(L, a->text);
    if (status != LUA_OK) return 0;
  }
  if (opt->script < opt->argc && shell_handle_script(L, argv + opt->script) != LUA_OK) return 0;
  if (opt->flags & SHELL_HAS_I) {
    shell_repl(L);
  } else if (opt->script == opt->argc && !(opt->flags & (SHELL_HAS_E | SHELL_HAS_V))) {
    if (isatty(STDIN_FILENO))
      shell_repl(L);
    else if (shell_dofile(L, NULL) != LUA_OK) /* piped input is a script */
      return 0;
  }
  lua_pushboolean(L, 1);
  return 1;
}

int ty_shell_main(int argc, char **argv, ty_shell_setup setup, void *ud) {
  shell_options opt;
  shell_run run = {&opt, setup, ud};
  switch (shell_parse_options(argc, argv, &opt)) {
    case SHELL_PARSE_RUN: break;
    case SHELL_PARSE_DONE: shell_free_options(&opt); return EXIT_SUCCESS;
    case SHELL_PARSE_FAIL: shell_free_options(&opt); return EXIT_FAILURE;
  }

  if (opt.cfg.gpus > 0 || opt.cfg.fbmem > 0) { /* say why before creating the runtime */
    char err[512];
    if (ty_gpus_check(opt.cfg.gpus, opt.cfg.fbmem, err, sizeof err) != TY_OK) {
      fprintf(stderr, SHELL_PROGNAME ": %s\n", err);
      shell_free_options(&opt);
      return EXIT_FAILURE;
    }
  }
  if (opt.stats) opt.cfg.timing = true; /* the figures at exit say where the time went */
  ty_status st = ty_runtime_create(&opt.cfg, &main_rt);
  if (st == TY_OK && (opt.trace || opt.trace_svg)) {
    if (!opt.trace) {
      fprintf(stderr, SHELL_PROGNAME ": --trace-svg needs --trace FILE as well\n");
      ty_runtime_destroy(main_rt);
      main_rt = NULL;
      shell_free_options(&opt);
      return EXIT_FAILURE;
    }
    char *trace = NULL, *svg = NULL; /* one file per rank */
    if (shell_nranks > 1) {
      trace = rank_path(opt.trace, shell_rank);
      svg = opt.trace_svg ? rank_path(opt.trace_svg, shell_rank) : NULL;
    }
    st = ty_trace_start(main_rt, trace ? trace : opt.trace, svg ? svg : opt.trace_svg);
    free(trace);
    free(svg);
    if (st != TY_OK) {
      fprintf(stderr, SHELL_PROGNAME ": --trace: %s\n", ty_errmsg(main_rt));
      ty_runtime_destroy(main_rt);
      main_rt = NULL;
      shell_free_options(&opt);
      return EXIT_FAILURE;
    }
  }
  if (st != TY_OK) {
    fprintf(stderr, SHELL_PROGNAME ": cannot create the runtime (%s)\n", ty_status_name(st));
    shell_free_options(&opt);
    return EXIT_FAILURE;
  }
  main_L = ty_lua_newstate();
  if (main_L == NULL) {
    fprintf(stderr, SHELL_PROGNAME ": cannot create the Lua state: not enough memory\n");
    ty_runtime_destroy(main_rt);
    shell_free_options(&opt);
    return EXIT_FAILURE;
  }
  shell_set_target(main_L, main_rt);
  lua_gc(main_L, LUA_GCSTOP); /* no collections while the libraries load */
  lua_pushcfunction(main_L, pmain);
  lua_pushlightuserdata(main_L, &run);
  int status = lua_pcall(main_L, 1, 1, 0);
  int ok = lua_toboolean(main_L, -1);
  shell_report(main_L, status);
  if (ok && status == LUA_OK && main_rt) ty_dist_finish(main_rt); /* under mpirun: docs/mpi.md */

  if (opt.stats && main_rt) { /* the figures of the whole run, before the state closes */
    char *text = NULL;
    ty_flush(main_rt);
    if (ty_stats_format(main_rt, opt.stats_format ? opt.stats_format : "text", &text) == TY_OK) {
      fputs(text, stderr);
      free(text);
    }
  }
  lua_State *L = main_L;
  shell_set_target(NULL, NULL);
  main_L = NULL;
  lua_close(L); /* finalises the stores, then the sentinel destroys main_rt */
  if (main_rt) ty_runtime_destroy(main_rt); /* pmain failed before own_runtime */
  main_rt = NULL;
  shell_free_options(&opt);
  return (ok && status == LUA_OK) ? EXIT_SUCCESS : EXIT_FAILURE;
}
