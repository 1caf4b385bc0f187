/*
 * ltextio.c — tycho.loadtxt and tycho.savetxt (numpy's), over the core's
 * ty_loadtxt / ty_savetxt (tycho/textio.h).
 *
 * Options come as a table with numpy's names. Two differences from numpy,
 * both Lua's: usecols counts columns from 1 (-1 is the last, as numpy's),
 * and `comments = false` turns comments off (numpy's None). savetxt's fmt
 * may be a table of per-column formats, joined by the delimiter as numpy
 * joins a list.
 */
#include "tl.h"
#include "tycho/textio.h"

#include <string.h>

/* Option `key` as a string (absent: def); false gives NULL when allowed. */
static const char *opt_string(lua_State *L, const tl_sig *s, const char *key, const char *def,
                              bool allow_false) {
  if (!lua_istable(L, TL_OPTS(s))) return def;
  int tp = lua_getfield(L, TL_OPTS(s), key);
  const char *v = def;
  if (tp == LUA_TSTRING) v = lua_tostring(L, -1); /* anchored by the options table */
  else if (tp == LUA_TBOOLEAN && !lua_toboolean(L, -1) && allow_false) v = NULL;
  else if (tp != LUA_TNIL)
    tl_argerror(L, s, "option %s must be a string%s, got %s", key, allow_false ? " or false" : "",
                tl_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

static const tl_sig sig_loadtxt = {
    "loadtxt", 1, 1, "delimiter skiprows dtype usecols comments max_rows ndmin", false,
    "tycho.loadtxt(path [, {delimiter = \",\", skiprows = n, dtype = \"f64\", usecols = k | {k, ...}, "
    "comments = \"#\" | false, max_rows = n, ndmin = 0 | 1 | 2}])"};
static int l_loadtxt(lua_State *L) {
  const tl_sig *s = &sig_loadtxt;
  tl_args(L, s);
  if (lua_type(L, 1) != LUA_TSTRING)
    return tl_argerror(L, s, "path must be a string, got %s", tl_typename(L, 1));
  const char *path = lua_tostring(L, 1);
  ty_loadtxt_opts o;
  ty_loadtxt_defaults(&o);
  const char *d = opt_string(L, s, "delimiter", NULL, true);
  if (d && strlen(d) != 1)
    return tl_argerror(L, s, "option delimiter must be one character, got \"%s\"", d);
  o.delimiter = d ? d[0] : 0;
  o.comments = opt_string(L, s, "comments", "#", true);
  int64_t v;
  if (tl_optint(L, s, "skiprows", &v)) o.skiprows = v;
  if (tl_optint(L, s, "max_rows", &v)) {
    if (v < 0) return tl_argerror(L, s, "option max_rows must be >= 0, got %lld", (long long)v);
    o.max_rows = v;
  }
  if (tl_optint(L, s, "ndmin", &v)) {
    if (v < 0 || v > 2) return tl_argerror(L, s, "option ndmin must be 0, 1 or 2, got %lld", (long long)v);
    o.ndmin = (int)v;
  }
  if (lua_istable(L, TL_OPTS(s))) {
    lua_getfield(L, TL_OPTS(s), "dtype");
    o.dtype = tl_optdtype(L, -1, s->fn, TY_F64);
    lua_pop(L, 1);
    int tp = lua_getfield(L, TL_OPTS(s), "usecols");
    if (tp != LUA_TNIL) {
      int n = tp == LUA_TTABLE ? (int)lua_rawlen(L, -1) : 1;
      if (tp != LUA_TTABLE && tp != LUA_TNUMBER)
        return tl_argerror(L, s, "option usecols must be an integer or a table of them, got %s",
                           tl_typename(L, -1));
      int64_t *cols = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *cols, 0);
      for (int k = 0; k < n; k++) {
        if (tp == LUA_TTABLE) lua_rawgeti(L, -2, k + 1);
        else lua_pushvalue(L, -2);
        int64_t c = tl_checkint(L, -1, s->fn, "usecols entry");
        lua_pop(L, 1);
        if (c == 0) return tl_argerror(L, s, "usecols counts from 1 (or -1 for the last column), got 0");
        cols[k] = c > 0 ? c - 1 : c;
      }
      o.usecols = cols;
      o.nusecols = n;
      lua_insert(L, -2); /* keep the userdata below, anchored on the stack */
    }
    lua_pop(L, 1);
  }
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_loadtxt(rt, path, &o, slot));
  if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  tl_created(L, *slot);
  return 1;
}

static const tl_sig sig_savetxt = {
    "savetxt", 2, 2, "fmt delimiter newline header footer comments", false,
    "tycho.savetxt(path, x [, {fmt = \"%.18e\" | {fmt, ...}, delimiter = \" \", newline = \"\\n\", "
    "header = \"\", footer = \"\", comments = \"# \"}]), x:savetxt(path [, {...}])"};
static int l_savetxt(lua_State *L) {
  const tl_sig *s = &sig_savetxt;
  tl_args(L, s);
  if (luaL_testudata(L, 1, TL_STORE) && lua_type(L, 2) == LUA_TSTRING) { /* x:savetxt(path) */
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_replace(L, 1);
    lua_replace(L, 2);
  }
  if (lua_type(L, 1) != LUA_TSTRING)
    return tl_argerror(L, s, "path must be a string, got %s", tl_typename(L, 1));
  const char *path = lua_tostring(L, 1);
  ty_store *x = tl_checkstore(L, 2, s->fn, "x");
  ty_savetxt_opts o;
  ty_savetxt_defaults(&o);
  o.delimiter = opt_string(L, s, "delimiter", o.delimiter, false);
  o.newline = opt_string(L, s, "newline", o.newline, false);
  o.header = opt_string(L, s, "header", o.header, false);
  o.footer = opt_string(L, s, "footer", o.footer, false);
  o.comments = opt_string(L, s, "comments", o.comments, false);
  if (lua_istable(L, TL_OPTS(s))) {
    int tp = lua_getfield(L, TL_OPTS(s), "fmt");
    if (tp == LUA_TTABLE) { /* numpy: delimiter.join(fmt) */
      int ft = lua_gettop(L);
      lua_Integer n = (lua_Integer)lua_rawlen(L, ft);
      for (lua_Integer k = 1; k <= n; k++) {
        if (lua_rawgeti(L, ft, k) != LUA_TSTRING)
          return tl_argerror(L, s, "option fmt[%lld] must be a string, got %s", (long long)k,
                             tl_typename(L, -1));
        lua_pop(L, 1);
      }
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      for (lua_Integer k = 1; k <= n; k++) {
        if (k > 1) luaL_addstring(&b, o.delimiter);
        lua_rawgeti(L, ft, k);
        luaL_addvalue(&b);
      }
      luaL_pushresult(&b);
      o.fmt = lua_tostring(L, -1);
      lua_insert(L, ft); /* keep the joined string below the table, anchored */
    } else if (tp == LUA_TSTRING) {
      o.fmt = lua_tostring(L, -1);
    } else if (tp != LUA_TNIL) {
      return tl_argerror(L, s, "option fmt must be a string or a table of strings, got %s",
                         tl_typename(L, -1));
    }
    lua_pop(L, 1);
  }
  ty_runtime *rt = tl_rt(L);
  ty_status st = ty_savetxt(rt, path, x, &o);
  if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  return 0;
}

static const luaL_Reg textio_funcs[] = {{"loadtxt", l_loadtxt}, {"savetxt", l_savetxt}, {NULL, NULL}};

void tl_textio_open(lua_State *L, int module_index) {
  module_index = lua_absindex(L, module_index);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
  int box = lua_gettop(L);
  lua_pushvalue(L, module_index);
  lua_pushvalue(L, box);
  luaL_setfuncs(L, textio_funcs, 1);
  lua_pop(L, 1);
  luaL_getmetatable(L, TL_STORE);
  if (lua_getfield(L, -1, "__methods") == LUA_TTABLE) {
    lua_pushvalue(L, box);
    lua_pushcclosure(L, l_savetxt, 1);
    lua_setfield(L, -2, "savetxt");
  }
  lua_pop(L, 3);
}
