/*
 * largs.c — argument checking of the built-ins: nothing a caller passes is
 * silently ignored.
 *
 * Each built-in declares what it accepts once, in a tl_sig next to its code
 * (positional count, its own option keys, whether the policy keys steer its
 * launches, and the forms shown to the user), and calls tl_args first. Every
 * count and option key is checked here, so all functions speak the same
 * language:
 *
 *   tycho.sum: argument 3 is not accepted (got true; options go in a
 *   trailing table, e.g. {keepdims = true}); accepted: tycho.sum(x [, axis |
 *   {axes}] [, {keepdims = bool, out = store, parallel = ...}]), x:sum(...)
 *
 * Options are numpy's keyword arguments (DESIGN.md §6): the last argument,
 * when it is a table past the required positions that is not a list. A list
 * there is positional (x:sum({1, 2}): axes), so a function whose argument
 * may be a list still tells the two apart; `{}` reads as empty options.
 *
 * Cost: the common call (no options table) is a lua_gettop, one type test
 * and a lua_settop, within the noise of a launch (bench/workloads/overhead.lua).
 */
#include "tl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The policy keys, as ty_policy_set lists them when it refuses a key
 * ("unknown policy key '?' (valid: parallel, ..., stream)"): the list stays
 * in one place, policy.c. */
static void policy_keys(char *buf, size_t len) {
  char err[300];
  ty_policy probe;
  memset(&probe, 0, sizeof probe);
  ty_policy_set(&probe, "?", "", err, sizeof err);
  const char *v = strstr(err, "(valid: ");
  if (!v) {
    snprintf(buf, len, "parallel, ...");
    return;
  }
  v += 8;
  size_t n = strcspn(v, ")");
  snprintf(buf, len, "%.*s", (int)n, v);
}

int tl_argerror(lua_State *L, const tl_sig *s, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return luaL_error(L, "tycho.%s: %s; accepted: %s", s->fn, buf, s->forms);
}

/* Is `key` one of the space-separated words of `list`? */
static bool has_word(const char *list, const char *key, size_t klen) {
  for (const char *p = list; p && *p;) {
    while (*p == ' ') p++;
    const char *e = p;
    while (*e && *e != ' ') e++;
    if ((size_t)(e - p) == klen && klen && memcmp(p, key, klen) == 0) return true;
    p = e;
  }
  return false;
}

/* "a, b and the policy keys ..." for the unknown-key message. */
static void accepted_keys(const tl_sig *s, char *buf, size_t len) {
  size_t n = 0;
  buf[0] = '\0';
  for (const char *p = s->opts; p && *p && n < len;) {
    while (*p == ' ') p++;
    const char *e = p;
    while (*e && *e != ' ') e++;
    if (e > p) n += (size_t)snprintf(buf + n, len - n, "%s%.*s", n ? ", " : "", (int)(e - p), p);
    p = e;
  }
  if (s->launch && n < len) {
    char keys[200];
    policy_keys(keys, sizeof keys);
    n += (size_t)snprintf(buf + n, len - n, "%sthe policy keys %s", n ? "; " : "", keys);
  }
  if (n == 0) snprintf(buf, len, "none");
}

/* Policy value as ty_policy_set spells it ("all", "true", "2", "64KiB"). */
static void policy_text(lua_State *L, const tl_sig *s, const char *key, char *text, size_t len) {
  switch (lua_type(L, -1)) {
  case LUA_TSTRING: snprintf(text, len, "%s", lua_tostring(L, -1)); break;
  case LUA_TBOOLEAN: snprintf(text, len, "%s", lua_toboolean(L, -1) ? "true" : "false"); break;
  case LUA_TNUMBER:
    if (lua_isinteger(L, -1)) snprintf(text, len, "%lld", (long long)lua_tointeger(L, -1));
    else snprintf(text, len, "%.17g", (double)lua_tonumber(L, -1));
    break;
  default:
    tl_argerror(L, s, "option %s must be a string, number or boolean, got %s", key,
                tl_typename(L, -1));
  }
}

/* Check the options table at idx; fills *p with its policy keys. */
static void check_options(lua_State *L, const tl_sig *s, int idx, ty_policy *p) {
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      tl_argerror(L, s, "option keys must be names, got a %s key", tl_typename(L, -2));
    size_t klen;
    const char *key = lua_tolstring(L, -2, &klen);
    if (!has_word(s->opts, key, klen)) {
      char err[300], keys[400];
      if (!s->launch) {
        accepted_keys(s, keys, sizeof keys);
        tl_argerror(L, s, "unknown option '%s' (options: %s)", key, keys);
      }
      /* an unknown key is said first, whatever its value */
      ty_policy probe;
      memset(&probe, 0, sizeof probe);
      if (ty_policy_set(&probe, key, "", err, sizeof err) != TY_OK &&
          strncmp(err, "unknown policy key", 18) == 0) {
        accepted_keys(s, keys, sizeof keys);
        tl_argerror(L, s, "unknown option '%s' (options: %s)", key, keys);
      }
      char text[64];
      policy_text(L, s, key, text, sizeof text);
      if (ty_policy_set(p, key, text, err, sizeof err) != TY_OK) {
        if (strncmp(err, "unknown policy key", 18) == 0) {
          accepted_keys(s, keys, sizeof keys);
          tl_argerror(L, s, "unknown option '%s' (options: %s)", key, keys);
        }
        tl_error(L, s->fn, "options: %s", err);
      }
    }
    lua_pop(L, 1);
  }
}

/* A few words on what the extra argument is, for the message. */
static void describe_extra(lua_State *L, const tl_sig *s, int idx, char *buf, size_t len) {
  int tp = lua_type(L, idx);
  const char *hint = "";
  if (tp == LUA_TBOOLEAN && has_word(s->opts, "keepdims", 8))
    hint = lua_toboolean(L, idx) ? "; options go in a trailing table, e.g. {keepdims = true}"
                                 : "; options go in a trailing table, e.g. {keepdims = false}";
  else if (tp == LUA_TBOOLEAN || tp == LUA_TSTRING)
    hint = *s->opts || s->launch ? "; options go in a trailing table {key = value}" : "";
  if (tp == LUA_TNUMBER && lua_isinteger(L, idx))
    snprintf(buf, len, "%lld%s", (long long)lua_tointeger(L, idx), hint);
  else if (tp == LUA_TNUMBER)
    snprintf(buf, len, "%.14g%s", (double)lua_tonumber(L, idx), hint);
  else if (tp == LUA_TSTRING)
    snprintf(buf, len, "\"%.40s\"%s", lua_tostring(L, idx), hint);
  else if (tp == LUA_TBOOLEAN)
    snprintf(buf, len, "%s%s", lua_toboolean(L, idx) ? "true" : "false", hint);
  else
    snprintf(buf, len, "a %s%s", tl_typename(L, idx), hint);
}

int tl_args(lua_State *L, const tl_sig *s) {
  int top = lua_gettop(L), npos = top, opts = 0;
  if (top > s->min && (s->launch || *s->opts) && lua_type(L, top) == LUA_TTABLE &&
      (top > s->max || lua_rawlen(L, top) == 0)) {
    opts = top;
    npos = top - 1;
  }
  while (npos > s->max && lua_isnil(L, npos)) npos--; /* f(x, nil): as if not given */
  if (npos > s->max) {
    char what[160];
    describe_extra(L, s, s->max + 1, what, sizeof what);
    if (s->max == 0) tl_argerror(L, s, "takes no arguments (argument 1 is %s)", what);
    tl_argerror(L, s, "argument %d is not accepted (got %s)", s->max + 1, what);
  }
  /* Fewer than min: the function's own check of the first missing argument
   * names it ("argument 2 must be a store or a number, got nil"). */
  if (!opts) {
    lua_settop(L, s->max + 2);
    return npos;
  }
  ty_policy p;
  memset(&p, 0, sizeof p);
  check_options(L, s, opts, &p);
  lua_settop(L, s->max + 2);
  if (opts != s->max + 1) {
    lua_pushvalue(L, opts);
    lua_replace(L, s->max + 1);
    lua_pushnil(L);
    lua_replace(L, opts);
  }
  if (s->launch && p.set) tl_launch_guard(L, s->max + 2, &p, s->fn);
  return npos;
}

/* Push option key's value (nil when there is no options table). */
static int opt_get(lua_State *L, const tl_sig *s, const char *key) {
  if (lua_type(L, TL_OPTS(s)) != LUA_TTABLE) {
    lua_pushnil(L);
    return LUA_TNIL;
  }
  lua_pushstring(L, key);
  return lua_rawget(L, TL_OPTS(s));
}

bool tl_optbool(lua_State *L, const tl_sig *s, const char *key, bool def) {
  int tp = opt_get(L, s, key);
  bool v = tp == LUA_TNIL ? def : lua_toboolean(L, -1);
  if (tp != LUA_TNIL && tp != LUA_TBOOLEAN)
    tl_argerror(L, s, "option %s must be true or false, got %s", key, tl_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

bool tl_optint(lua_State *L, const tl_sig *s, const char *key, int64_t *out) {
  if (opt_get(L, s, key) == LUA_TNIL) {
    lua_pop(L, 1);
    return false;
  }
  char what[64];
  snprintf(what, sizeof what, "option %s", key);
  *out = tl_checkint(L, -1, s->fn, what);
  lua_pop(L, 1);
  return true;
}

ty_store *tl_optstore(lua_State *L, const tl_sig *s, const char *key) {
  if (opt_get(L, s, key) == LUA_TNIL) {
    lua_pop(L, 1);
    return NULL;
  }
  ty_store **p = luaL_testudata(L, -1, TL_STORE);
  if (!p) tl_argerror(L, s, "option %s must be a store, got %s", key, tl_typename(L, -1));
  if (!*p) tl_error(L, s->fn, "option %s is a closed store", key);
  ty_store *st = *p;
  lua_pop(L, 1); /* still anchored by the options table */
  return st;
}
