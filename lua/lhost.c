/*
 * lhost.c — the embedding API of tycho_lua.h: what a host application calls
 * to script its runtime (open a state, run files and strings, hand stores
 * across, declare its C tasks for Lua, interrupt).
 *
 * None of these functions lets a Lua error escape into the host: each runs
 * its Lua work under lua_pcall and turns a failure into a ty_status with the
 * message kept in the registry (ty_lua_errmsg). Scripts run with lua.c's
 * message handler, so a failure carries its traceback.
 */
#include "tl.h"
#include "rewrite.h"
#include "tycho_lua.h"

#include <string.h>

#include <lualib.h>

#define TL_LASTERR "tycho.lasterror" /* registry key: message of the last failure */

static void set_error(lua_State *L, const char *msg) {
  lua_pushstring(L, msg ? msg : "");
  lua_setfield(L, LUA_REGISTRYINDEX, TL_LASTERR);
}

const char *ty_lua_errmsg(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, TL_LASTERR);
  const char *msg = lua_tostring(L, -1); /* the registry keeps the string alive */
  lua_pop(L, 1);
  return msg ? msg : "";
}

/* Pop the error on top and keep it; map a Lua status to a ty_status. */
static ty_status lua_failure(lua_State *L, int status) {
  const char *msg = lua_tostring(L, -1);
  if (!msg) msg = "(error object is not a string)";
  set_error(L, msg);
  lua_pop(L, 1);
  switch (status) {
  case LUA_ERRSYNTAX: return TY_EINVAL;
  case LUA_ERRMEM: return TY_ENOMEM;
  case LUA_ERRFILE: return TY_EIO;
  default: return strstr(msg, "interrupted") ? TY_EINTR : TY_ETASK;
  }
}

static int open_state(lua_State *L) {
  ty_runtime *rt = lua_touserdata(L, 1);
  luaL_openlibs(L);
  ty_lua_bind(L, rt);
  lua_setglobal(L, "tycho");
  return 0;
}

lua_State *ty_lua_open(ty_runtime *rt) {
  if (!rt) return NULL;
  lua_State *L = ty_lua_newstate();
  if (!L) return NULL;
  lua_pushcfunction(L, open_state);
  lua_pushlightuserdata(L, rt);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
    lua_close(L);
    return NULL;
  }
  set_error(L, "");
  return L;
}

/* lua.c's message handler. */
static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* Run the chunk on top (status of loading it given). */
static ty_status run_chunk(lua_State *L, int status) {
  if (status != LUA_OK) return lua_failure(L, status);
  int base = lua_gettop(L);
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  status = lua_pcall(L, 0, 0, base);
  lua_remove(L, base);
  if (status != LUA_OK) return lua_failure(L, status);
  set_error(L, "");
  return TY_OK;
}

ty_status ty_lua_dofile(lua_State *L, const char *path) {
  if (!L || !path) return TY_EINVAL;
  return run_chunk(L, tl_loadfilex(L, path, NULL));
}

ty_status ty_lua_dostring(lua_State *L, const char *code, const char *chunkname) {
  if (!L || !code) return TY_EINVAL;
  return run_chunk(L, tl_loadbufferx(L, code, strlen(code), chunkname ? chunkname : "=(host)", NULL));
}

/* ---- stores ------------------------------------------------------------------------ */

void ty_lua_push_store(lua_State *L, ty_store *s) {
  tl_slot *u = lua_newuserdatauv(L, sizeof *u, 0); /* tagged, as tl_newslot's (tl.h) */
  u->store = NULL;
  u->tag = &tl_store_tag;
  tl_heap *h = tl_heap_of(L);
  if (h) tl_heap_adopt(L, h, u);
  u->store = s;
  if (s) ty_store_retain(s);
  luaL_setmetatable(L, TL_STORE);
}

ty_store *ty_lua_tostore(lua_State *L, int idx) {
  ty_store **p = luaL_testudata(L, idx, TL_STORE);
  return p ? *p : NULL;
}

/* ---- C tasks ------------------------------------------------------------------------- */

/* Protected: (name, args string) -> tl_task_declare with the args split at
 * commas. Runs as a closure with the box as upvalue 1, like every binding
 * function. */
static int declare(lua_State *L) {
  const char *name = lua_tostring(L, 1);
  tl_push_signature_args(L, lua_tostring(L, 2)); /* 3 */
  lua_pushnil(L);                                /* 4: traits */
  lua_pushnil(L);                                /* 5: body */
  tl_task_declare(L, name, 3, 4, 5);
  return 0;
}

ty_status ty_lua_declare_task(lua_State *L, const char *name, const char *args) {
  if (!L || !name || !args) return TY_EINVAL;
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
  if (!luaL_testudata(L, -1, TL_BOXMETA)) {
    lua_pop(L, 1);
    set_error(L, "ty_lua_declare_task: no runtime is bound to this Lua state");
    return TY_EINVAL;
  }
  lua_pushcclosure(L, declare, 1);
  lua_pushstring(L, name);
  lua_pushstring(L, args);
  int status = lua_pcall(L, 2, 0, 0);
  if (status != LUA_OK) {
    ty_status st = lua_failure(L, status);
    return st == TY_ETASK ? TY_EINVAL : st;
  }
  set_error(L, "");
  return TY_OK;
}

/* ---- interrupts ---------------------------------------------------------------------- */

struct ty_lua_interrupter {
  tl_tasks tasks; /* never instantiated: the handle is the binding's tl_tasks */
};

const ty_lua_interrupter *ty_lua_interrupter_get(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
  tl_box *b = luaL_testudata(L, -1, TL_BOXMETA);
  lua_pop(L, 1);
  return b && b->rt ? (const ty_lua_interrupter *)b->tasks : NULL;
}

void ty_lua_interrupt(const ty_lua_interrupter *h) {
  if (!h) return;
  const tl_tasks *ts = (const tl_tasks *)h;
  ty_interrupt(ts->rt);
  tl_workers_interrupt(ts);
}
