/*
 * complete.c — tab completion in the REPL: globals, fields, methods.
 *
 * The word before the cursor is an identifier chain: "pri", "tycho.ze",
 * "x:su". Everything up to the last '.' or ':' is resolved from the globals
 * with raw reads only (no __index function is ever called: completing must
 * not run user code or fail); the last part is matched against the names
 * the resolved value offers:
 *   - its own string keys when it is a table;
 *   - through its metatable: the keys of __index when that is a table
 *     (followed up to MAX_DEPTH levels: strings, classes, store methods);
 *     when __index is a function, the metatable's own names that do not
 *     start with "__" and the keys of a __methods table if there is one
 *     (bindings that dispatch fields in C keep their methods there).
 * After ':' only functions are offered. A bare word also matches the Lua
 * keywords. A unique match gets "(" when it is a function and "." when it
 * is a table, so TAB can go on down a chain.
 *
 * The Lua work runs under lua_pcall: a memory error gives no matches.
 */
#include "shell.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <readline/readline.h>

#define MAX_DEPTH 8         /* __index tables followed */
#define MAX_CANDIDATES 4096 /* names offered for one TAB */

typedef struct cand {
  char *name; /* the full replacement: prefix + separator + name */
  char kind;  /* 'f' function, 't' table, 'k' keyword, 'o' other */
} cand;

typedef struct request {
  const char *text;  /* the word being completed */
  size_t prefix_len; /* bytes of text up to and including the last separator */
  cand *v;
  size_t n, cap;
} request;

static lua_State *comp_L;
static size_t display_prefix; /* prefix_len of the last completion */

static const char *const keywords[] = {"and",   "break",  "do",       "else", "elseif", "end",
                                       "false", "for",    "function", "goto", "if",     "in",
                                       "local", "nil",    "not",      "or",   "repeat", "return",
                                       "then",  "true",   "until",    "while"};

static bool is_identifier(const char *s, size_t len) {
  if (len == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
  for (size_t i = 1; i < len; i++)
    if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) return false;
  return true;
}

/* Add prefix + name unless it is there already; raises on memory errors. */
static void add(lua_State *L, request *rq, const char *name, char kind) {
  const char *partial = rq->text + rq->prefix_len;
  size_t plen = strlen(partial);
  if (strncmp(name, partial, plen) != 0) return;
  size_t nlen = strlen(name);
  for (size_t i = 0; i < rq->n; i++)
    if (strcmp(rq->v[i].name + rq->prefix_len, name) == 0) return;
  if (rq->n == MAX_CANDIDATES) return;
  if (rq->n == rq->cap) {
    size_t cap = rq->cap ? rq->cap * 2 : 64;
    cand *v = realloc(rq->v, cap * sizeof *v);
    if (!v) luaL_error(L, "not enough memory");
    rq->v = v;
    rq->cap = cap;
  }
  char *full = malloc(rq->prefix_len + nlen + 1);
  if (!full) luaL_error(L, "not enough memory");
  memcpy(full, rq->text, rq->prefix_len);
  memcpy(full + rq->prefix_len, name, nlen + 1);
  rq->v[rq->n].name = full;
  rq->v[rq->n].kind = kind;
  rq->n++;
}

static char kind_of(lua_State *L, int idx) {
  switch (lua_type(L, idx)) {
    case LUA_TFUNCTION: return 'f';
    case LUA_TTABLE: return 't';
    default: return 'o';
  }
}

/* The identifier keys of the table at idx. */
static void table_names(lua_State *L, request *rq, int idx, bool methods) {
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    size_t len;
    if (lua_type(L, -2) == LUA_TSTRING) {
      const char *k = lua_tolstring(L, -2, &len);
      char kind = kind_of(L, -1);
      if (is_identifier(k, len) && (!methods || kind == 'f')) add(L, rq, k, kind);
    }
    lua_pop(L, 1);
  }
}

/* The names the value at idx offers (see the file comment). */
static void value_names(lua_State *L, request *rq, int idx, bool methods, int depth) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) == LUA_TTABLE) table_names(L, rq, idx, methods);
  if (depth >= MAX_DEPTH || !lua_getmetatable(L, idx)) return;
  int mt = lua_gettop(L);
  lua_pushliteral(L, "__index");
  int t = lua_rawget(L, mt);
  if (t == LUA_TTABLE) {
    value_names(L, rq, -1, methods, depth + 1);
  } else if (t == LUA_TFUNCTION) {
    lua_pushnil(L);
    while (lua_next(L, mt)) {
      size_t len;
      if (lua_type(L, -2) == LUA_TSTRING) {
        const char *k = lua_tolstring(L, -2, &len);
        char kind = kind_of(L, -1);
        if (is_identifier(k, len) && strncmp(k, "__", 2) != 0 && (!methods || kind == 'f'))
          add(L, rq, k, kind);
      }
      lua_pop(L, 1);
    }
    lua_pushliteral(L, "__methods");
    if (lua_rawget(L, mt) == LUA_TTABLE) table_names(L, rq, -1, methods);
    lua_pop(L, 1);
  }
  lua_settop(L, mt - 1);
}

/* Raw v[key] following __index tables; pushes the value (nil when unknown). */
static void raw_index(lua_State *L, int idx, const char *key, size_t len, int depth) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) == LUA_TTABLE) {
    lua_pushlstring(L, key, len);
    if (lua_rawget(L, idx) != LUA_TNIL) return;
    lua_pop(L, 1);
  }
  if (depth < MAX_DEPTH && lua_getmetatable(L, idx)) {
    lua_pushliteral(L, "__index");
    if (lua_rawget(L, -2) == LUA_TTABLE) {
      raw_index(L, -1, key, len, depth + 1);
      lua_replace(L, -3);
      lua_pop(L, 1);
      return;
    }
    lua_pop(L, 2);
  }
  lua_pushnil(L);
}

/* The protected part: fill the request. Argument: the request. */
static int collect(lua_State *L) {
  request *rq = lua_touserdata(L, 1);
  const char *text = rq->text;
  const char *sep = NULL;
  for (const char *p = text; *p; p++)
    if (*p == '.' || *p == ':') sep = p;
  lua_pushglobaltable(L);
  if (!sep) {
    rq->prefix_len = 0;
    value_names(L, rq, -1, false, 0);
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++) add(L, rq, keywords[i], 'k');
    return 0;
  }
  /* resolve the chain before the last separator: identifiers joined by '.' */
  const char *seg = text;
  while (seg < sep) {
    const char *end = seg;
    while (end < sep && *end != '.' && *end != ':') end++;
    if (end < sep && *end == ':') return 0; /* a method call's result: unknown */
    if (!is_identifier(seg, (size_t)(end - seg))) return 0;
    raw_index(L, -1, seg, (size_t)(end - seg), 0);
    lua_remove(L, -2);
    if (lua_isnil(L, -1)) return 0;
    seg = end + 1;
  }
  rq->prefix_len = (size_t)(sep - text) + 1;
  value_names(L, rq, -1, *sep == ':', 0);
  return 0;
}

static int cmp_cand(const void *a, const void *b) {
  return strcmp(((const cand *)a)->name, ((const cand *)b)->name);
}

/* Show the matches without their common "a.b." prefix. */
static void display(char **matches, int n, int max_length) {
  char **shown = malloc((size_t)(n + 2) * sizeof *shown);
  if (!shown) return;
  for (int i = 0; i <= n; i++) {
    size_t len = strlen(matches[i]);
    shown[i] = matches[i] + (len >= display_prefix ? display_prefix : len);
  }
  shown[n + 1] = NULL;
  rl_display_match_list(shown, n, max_length - (int)display_prefix);
  rl_forced_update_display();
  free(shown);
}

static char **complete(const char *text, int start, int end) {
  (void)start;
  (void)end;
  rl_attempted_completion_over = 1; /* never fall back to file names */
  rl_completion_append_character = '\0';
  lua_State *L = comp_L;
  if (!L) return NULL;
  request rq = {.text = text};
  int top = lua_gettop(L);
  lua_pushcfunction(L, collect);
  lua_pushlightuserdata(L, &rq);
  int status = lua_pcall(L, 1, 0, 0);
  lua_settop(L, top);
  char **out = NULL;
  if (status == LUA_OK && rq.n > 0) out = malloc((rq.n + 2) * sizeof *out);
  if (!out) {
    for (size_t i = 0; i < rq.n; i++) free(rq.v[i].name);
    free(rq.v);
    return NULL;
  }
  qsort(rq.v, rq.n, sizeof *rq.v, cmp_cand);
  display_prefix = rq.prefix_len;
  if (rq.n == 1) {
    const char *suffix = rq.v[0].kind == 'f' ? "(" : rq.v[0].kind == 't' ? "." : "";
    size_t len = strlen(rq.v[0].name);
    out[0] = realloc(rq.v[0].name, len + 2);
    if (!out[0]) out[0] = rq.v[0].name; /* realloc failure leaves the original */
    else strcpy(out[0] + len, suffix);
    out[1] = NULL;
  } else {
    /* out[0]: the longest common prefix, which readline substitutes */
    size_t lcd = strlen(rq.v[0].name);
    for (size_t i = 1; i < rq.n; i++) {
      size_t j = 0;
      while (j < lcd && rq.v[i].name[j] == rq.v[0].name[j]) j++;
      lcd = j;
    }
    out[0] = malloc(lcd + 1);
    if (!out[0]) {
      for (size_t i = 0; i < rq.n; i++) free(rq.v[i].name);
      free(rq.v);
      free(out);
      return NULL;
    }
    memcpy(out[0], rq.v[0].name, lcd);
    out[0][lcd] = '\0';
    for (size_t i = 0; i < rq.n; i++) out[i + 1] = rq.v[i].name;
    out[rq.n + 1] = NULL;
  }
  free(rq.v);
  return out;
}

void shell_completion_install(lua_State *L) {
  comp_L = L;
  rl_attempted_completion_function = complete;
  rl_completion_display_matches_hook = display;
  /* '.' and ':' are not breaks: "tycho.ze" is one word */
  rl_completer_word_break_characters = " \t\n\"\\'`@$><=;|&{}()[]+-*/%^~#,";
}
