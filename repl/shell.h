/*
 * shell.h — what the files of the `tycho` executable share.
 *
 * The shell is Lua 5.4's lua.c reshaped around a tycho runtime:
 *   options.c   the command line (tycho's long options, lua.c's short ones)
 *               and the configuration it resolves (command line > TYCHO_*
 *               environment > defaults);
 *   runner.c    running chunks: message handler with traceback, the SIGINT
 *               hook that interrupts Lua and the runtime, scripts, -e, -l;
 *   repl.c      the interactive loop on GNU readline, with history;
 *   complete.c  tab completion of globals, fields and methods;
 *   main.c      ty_shell_main: the runtime and the Lua state, and the order
 *               they die in;
 *   tycho.c     the executable's main.
 * Together (but tycho.c) they are libtycho_repl, whose public face is
 * tycho_repl.h.
 *
 * Cross-file names here start with shell_; everything else is static. The
 * shell drives the runtime only through the public API (tycho/tycho.h) and
 * the binding (tycho_lua.h), as any host application would.
 */
#ifndef TYCHO_SHELL_H
#define TYCHO_SHELL_H

#include <stdbool.h>
#include <stdio.h>

#include <lua.h>

#include "tycho/tycho.h"

#define SHELL_PROGNAME "tycho"

/* ---- options.c ------------------------------------------------------------- */

/* Flags of the command line that matter before any Lua code runs. */
enum {
  SHELL_HAS_E = 1,     /* -e: some code to run, so no REPL by default */
  SHELL_HAS_I = 2,     /* -i: REPL after the script */
  SHELL_HAS_V = 4,     /* -v: print the version (and no REPL by default) */
  SHELL_HAS_NOENV = 8, /* -E: ignore LUA_* and TYCHO_* variables */
  SHELL_HAS_W = 16     /* -W: warnings on */
};

/* One -e or -l, run in command-line order before the script. */
typedef struct shell_action {
  char kind;        /* 'e' or 'l' */
  const char *text; /* the code, or the module spec ("mod" or "name=mod") */
} shell_action;

typedef struct shell_options {
  int argc;
  char **argv;
  int flags;              /* SHELL_HAS_* */
  int script;             /* argv index of the script; argc when there is none */
  shell_action *actions;  /* malloc'd, nactions entries */
  int nactions;
  ty_config cfg;          /* resolved configuration for ty_runtime_create */
  const char *trace;      /* --trace FILE: Chrome trace-event JSON of the run */
  const char *trace_svg;  /* --trace-svg FILE: the same as an SVG timeline */
  bool stats;             /* --stats: print the figures at exit (stderr) */
  const char *stats_format; /* --stats-format text|json|csv */
  bool allow_bytecode;    /* --allow-bytecode or TYCHO_ALLOW_BYTECODE: load precompiled chunks */
} shell_options;

typedef enum shell_parse {
  SHELL_PARSE_RUN = 0,  /* go on and run */
  SHELL_PARSE_DONE,     /* --help or --version printed: exit 0 */
  SHELL_PARSE_FAIL      /* a message is on stderr: exit 1 */
} shell_parse;

shell_parse shell_parse_options(int argc, char **argv, shell_options *opt);
void shell_free_options(shell_options *opt);
void shell_print_version(FILE *f);


/* ---- policy_opts.c ----------------------------------------------------------- */

/* The policy and processor options (--parallel MODE ... --explain): 1 when
 * `name` (without "--") takes a value, 0 for a flag, -1 when it is not one
 * of them; apply one to cfg (0, or -1 with a message in err); print their
 * --help lines. */
int ty_shell_policy_arity(const char *name);
int ty_shell_policy_option(const char *opt, const char *value, ty_config *cfg, char *err,
                           size_t len);
void ty_shell_policy_help(FILE *f);

/* ---- runner.c -------------------------------------------------------------- */

/* The state and runtime that a SIGINT should interrupt (rt may be NULL). */
void shell_set_target(lua_State *L, ty_runtime *rt);
ty_runtime *shell_runtime(void);
lua_State *shell_state(void);
/* Program name put in front of error messages; NULL for none (the REPL).
 * Returns the previous one. */
const char *shell_set_progname(const char *name);
void shell_message(const char *msg);
/* Messages go to hook instead of stderr (NULL: stderr again): under
 * mpirun, mpi.c decides which rank prints them. */
void shell_set_message_hook(void (*hook)(const char *msg));
/* Under mpirun (mpi.c): this process's rank of nranks. With nranks > 1,
 * --trace and --trace-svg files get the rank before their extension
 * (trace.json: trace.rank1.json), one file per rank. */
void shell_set_ranks(int rank, int nranks);
/* Print the error on top of the stack (and pop it) when status != LUA_OK. */
int shell_report(lua_State *L, int status);
/* lua_pcall with a traceback handler and the interrupting SIGINT handler. */
int shell_docall(lua_State *L, int narg, int nres);
int shell_dofile(lua_State *L, const char *name); /* NULL: stdin */
int shell_dostring(lua_State *L, const char *s, const char *chunkname);
int shell_dolibrary(lua_State *L, const char *spec);
int shell_handle_script(lua_State *L, char **argv);
int shell_handle_luainit(lua_State *L);
void shell_create_arg_table(lua_State *L, char **argv, int argc, int script);

/* ---- repl.c / complete.c --------------------------------------------------- */

void shell_repl(lua_State *L);
void shell_completion_install(lua_State *L);

#endif /* TYCHO_SHELL_H */
