/*
 * repl.c — the interactive shell: read a statement, run it, print results.
 *
 * As lua.c: a line is first compiled as "return <line>;" so that an
 * expression prints its values; otherwise as a statement, asking for more
 * lines while the compiler's error ends in "<eof>" (an incomplete chunk).
 * Errors print with a traceback and the loop goes on; Ctrl-D (end of file)
 * leaves it.
 *
 * Lines come from GNU readline's callback interface driven by select(2), not
 * from readline(): a SIGINT at the prompt must abandon the line (and any
 * continuation lines) and show a fresh prompt, which the blocking readline()
 * cannot do without longjmp. The handler only writes a byte to a self-pipe
 * that select watches, so it works whichever thread the signal lands on (the
 * runtime's OpenMP workers do not block SIGINT).
 *
 * History: $HOME/.tycho_history, read at start, appended after each entry
 * (so os.exit or a crash loses nothing), cut to HISTORY_MAX entries at the
 * end. A history file that cannot be written is reported once, not fatal.
 */
#include "shell.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#include <lauxlib.h>

#include "rewrite.h"
#include <readline/history.h>
#include <readline/readline.h>

#include "tycho_lua.h"
#include "tycho_repl.h"

#define PROMPT1 "> "
#define PROMPT2 ">> "
#define HISTORY_FILE ".tycho_history"
#define HISTORY_MAX 1000 /* entries kept in the file */
#define EOFMARK "<eof>"

/* Results of read_line besides a line. */
#define LINE_EOF 0
#define LINE_OK 1
#define LINE_INTERRUPTED 2

/* loadline's answer when the user pressed Ctrl-C: nothing to run. */
#define LOAD_NONE (-2)
#define LOAD_EOF (-1)

static int sigpipe[2] = {-1, -1};
static char *history_path;      /* malloc'd, NULL without $HOME */
static bool history_broken;     /* a write failed: stop trying */

/* ---- reading a line ------------------------------------------------------- */

static char *got_line;
static bool got_done;

static void on_line(char *line) {
  got_line = line;
  got_done = true;
  rl_callback_handler_remove();
}

static void on_sigint(int sig) {
  (void)sig;
  int saved = errno;
  if (sigpipe[1] >= 0) {
    ssize_t r = write(sigpipe[1], "", 1);
    (void)r; /* a full pipe already holds a pending interrupt */
  }
  errno = saved;
}

static void drain_sigpipe(void) {
  char buf[64];
  while (read(sigpipe[0], buf, sizeof buf) > 0) {
  }
}

/* Show `prompt` and read one line into *out (malloc'd). */
static int read_line(const char *prompt, char **out) {
  *out = NULL;
  got_line = NULL;
  got_done = false;
  fflush(stdout);
  fflush(stderr);
  rl_callback_handler_install(prompt, on_line);
  int in = fileno(rl_instream ? rl_instream : stdin);
  while (!got_done) {
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(in, &fds);
    FD_SET(sigpipe[0], &fds);
    int maxfd = in > sigpipe[0] ? in : sigpipe[0];
    int n = select(maxfd + 1, &fds, NULL, NULL, NULL);
    if (n < 0) {
      if (errno == EINTR) continue;
      rl_callback_handler_remove();
      return LINE_EOF;
    }
    if (FD_ISSET(sigpipe[0], &fds)) {
      drain_sigpipe();
      /* abandon the line: readline's own recipe for a signal in callback mode */
      rl_free_line_state();
      rl_callback_sigcleanup();
      rl_cleanup_after_signal();
      rl_callback_handler_remove();
      fputs("^C\n", stdout);
      fflush(stdout);
      return LINE_INTERRUPTED;
    }
    if (FD_ISSET(in, &fds)) rl_callback_read_char();
  }
  if (!got_line) return LINE_EOF;
  *out = got_line;
  return LINE_OK;
}

/* ---- history ------------------------------------------------------------- */

static void history_open(void) {
  using_history();
  const char *home = getenv("HOME");
  if (!home || !*home) return;
  size_t n = strlen(home) + sizeof HISTORY_FILE + 1;
  history_path = malloc(n);
  if (!history_path) return;
  snprintf(history_path, n, "%s/%s", home, HISTORY_FILE);
  if (read_history(history_path) == ENOENT) {
    /* missing: create it now, so that each entry can be appended later */
    int e = write_history(history_path);
    if (e != 0) {
      fprintf(stderr, SHELL_PROGNAME ": cannot write history file %s: %s\n", history_path,
              strerror(e));
      history_broken = true;
    }
  }
}

static void history_add(const char *line) {
  if (!line || !*line) return;
  HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
  if (last && strcmp(last->line, line) == 0) return; /* no immediate repeats */
  add_history(line);
  if (!history_path || history_broken) return;
  int e = append_history(1, history_path);
  if (e != 0) {
    fprintf(stderr, SHELL_PROGNAME ": cannot write history file %s: %s\n", history_path,
            strerror(e));
    history_broken = true;
  }
}

static void history_close(void) {
  if (history_path && !history_broken) history_truncate_file(history_path, HISTORY_MAX);
  free(history_path);
  history_path = NULL;
  clear_history();
}

/* ---- the loop (lua.c's, read through read_line) --------------------------- */

/* _PROMPT / _PROMPT2 when they are strings, as lua.c. Pushes the prompt. */
static const char *push_prompt(lua_State *L, bool first) {
  lua_getglobal(L, first ? "_PROMPT" : "_PROMPT2");
  const char *p = lua_tostring(L, -1);
  if (p == NULL) {
    lua_pop(L, 1);
    p = lua_pushstring(L, first ? PROMPT1 : PROMPT2);
  }
  return p;
}

/* Read a line and push it; LINE_OK, LINE_EOF or LINE_INTERRUPTED. */
static int pushline(lua_State *L, bool first) {
  char *b;
  const char *prompt = push_prompt(L, first);
  int r = read_line(prompt, &b);
  lua_pop(L, 1);
  if (r != LINE_OK) return r;
  size_t l = strlen(b);
  if (l > 0 && b[l - 1] == '\n') b[--l] = '\0';
  if (first && b[0] == '=') /* 5.2 compatibility, as lua.c */
    lua_pushfstring(L, "return %s", b + 1);
  else
    lua_pushlstring(L, b, l);
  free(b);
  return LINE_OK;
}

/* Is the syntax error on top of the stack an incomplete chunk? Pops it then. */
static bool incomplete(lua_State *L, int status) {
  if (status == LUA_ERRSYNTAX) {
    size_t lmsg;
    const char *msg = lua_tolstring(L, -1, &lmsg);
    size_t mark = sizeof EOFMARK - 1;
    if (lmsg >= mark && strcmp(msg + lmsg - mark, EOFMARK) == 0) {
      lua_pop(L, 1);
      return true;
    }
  }
  return false;
}

/* Compile the line on top as "return <line>;". On success the chunk replaces
 * nothing: it is pushed above the line. */
static int addreturn(lua_State *L) {
  const char *line = lua_tostring(L, -1);
  const char *retline = lua_pushfstring(L, "return %s;", line);
  int status = tl_loadbufferx(L, retline, strlen(retline), "=stdin", NULL);
  if (status == LUA_OK) {
    lua_remove(L, -2); /* the "return" text */
    history_add(line);
  } else {
    lua_pop(L, 2); /* the error and the "return" text */
  }
  return status;
}

/* Add continuation lines to the line at index 1 until it compiles or fails
 * for a reason other than its end. */
static int multiline(lua_State *L) {
  for (;;) {
    size_t len;
    const char *line = lua_tolstring(L, 1, &len);
    int status = tl_loadbufferx(L, line, len, "=stdin", NULL);
    if (!incomplete(L, status)) {
      history_add(line);
      return status;
    }
    int r = pushline(L, false);
    if (r == LINE_INTERRUPTED) return LOAD_NONE;
    if (r == LINE_EOF) {
      /* end of input inside a statement: compile once more for the message */
      history_add(line);
      return tl_loadbufferx(L, line, len, "=stdin", NULL);
    }
    lua_pushliteral(L, "\n");
    lua_insert(L, -2);
    lua_concat(L, 3);
  }
}

/* A compiled chunk on the stack (LUA_OK), an error message, LOAD_NONE after
 * Ctrl-C or LOAD_EOF at the end of input. */
static int loadline(lua_State *L) {
  lua_settop(L, 0);
  int r = pushline(L, true);
  if (r == LINE_EOF) return LOAD_EOF;
  if (r == LINE_INTERRUPTED) return LOAD_NONE;
  int status = addreturn(L);
  if (status != LUA_OK) status = multiline(L);
  if (status == LOAD_NONE) {
    lua_settop(L, 0);
    return LOAD_NONE;
  }
  lua_remove(L, 1); /* the line */
  return status;
}

/* Print the values on the stack with the global print (tostring on each:
 * stores render through their __tostring, which flushes, so Ctrl-C must be
 * able to interrupt it: shell_docall, not a bare lua_pcall). */
static void print_results(lua_State *L) {
  int n = lua_gettop(L);
  if (n == 0) return;
  luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
  lua_getglobal(L, "print");
  lua_insert(L, 1);
  if (shell_docall(L, n, 0) != LUA_OK) {
    const char *msg = lua_pushfstring(L, "error calling 'print' (%s)", lua_tostring(L, -1));
    shell_message(msg);
    lua_pop(L, 2);
  }
}

static void banner(void) {
  ty_runtime *rt = shell_runtime();
  fprintf(stdout, SHELL_PROGNAME " %s (%s)", TY_VERSION, LUA_RELEASE);
  if (rt) {
    const ty_config *c = ty_runtime_config(rt);
    char mem[32];
    ty_format_bytes((double)c->sysmem, mem, sizeof mem);
    fprintf(stdout, "  %d cpus, sysmem %s", c->cpus, mem);
  }
  fputs("; Ctrl-D exits\n", stdout);
  fflush(stdout);
}

static bool open_sigpipe(void) {
  if (pipe(sigpipe) != 0) return false;
  for (int i = 0; i < 2; i++) {
    fcntl(sigpipe[i], F_SETFL, fcntl(sigpipe[i], F_GETFL) | O_NONBLOCK);
    fcntl(sigpipe[i], F_SETFD, FD_CLOEXEC);
  }
  return true;
}

void shell_repl(lua_State *L) {
  if (!open_sigpipe()) {
    shell_message("cannot start the interactive shell: pipe failed");
    return;
  }
  if (isatty(STDIN_FILENO)) banner();
  const char *oldprog = shell_set_progname(NULL);
  rl_readline_name = SHELL_PROGNAME; /* for $if tycho in ~/.inputrc */
  rl_catch_signals = 0;              /* SIGINT is ours (on_sigint) */
  shell_completion_install(L);
  history_open();

  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, &old);

  int status;
  while ((status = loadline(L)) != LOAD_EOF) {
    if (status == LOAD_NONE) continue;
    if (status == LUA_OK) status = shell_docall(L, 0, LUA_MULTRET);
    if (status == LUA_OK)
      print_results(L);
    else
      shell_report(L, status);
    drain_sigpipe(); /* a Ctrl-C that interrupted the statement is spent */
  }
  lua_settop(L, 0);
  fputs("\n", stdout);
  fflush(stdout);

  sigaction(SIGINT, &old, NULL);
  history_close();
  shell_set_progname(oldprog);
  close(sigpipe[0]);
  close(sigpipe[1]);
  sigpipe[0] = sigpipe[1] = -1;
}

/* ---- for hosts (tycho_repl.h) ----------------------------------------------- */

void ty_repl(lua_State *L) {
  lua_State *oldL = shell_state();
  ty_runtime *oldrt = shell_runtime();
  shell_set_target(L, ty_lua_runtime(L));
  shell_repl(L);
  shell_set_target(oldL, oldrt);
}

int ty_repl_dofile(lua_State *L, const char *path) {
  lua_State *oldL = shell_state();
  ty_runtime *oldrt = shell_runtime();
  shell_set_target(L, ty_lua_runtime(L));
  int status = shell_dofile(L, path);
  shell_set_target(oldL, oldrt);
  return status == LUA_OK ? 0 : 1;
}
