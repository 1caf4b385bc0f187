/*
 * embed_api.c — checks of the embedding API (tycho_lua.h) as a host calls
 * it: states opened on a host's runtime, scripts and their failure statuses,
 * stores handed across, C tasks declared for Lua, and the life of Lua tasks
 * across states. Run by tests/spec/embed_spec.lua; prints "ok NAME" per
 * check that passed, "FAIL ..." otherwise, and exits 1 on any failure.
 */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "tycho/task.h"
#include "tycho/tycho.h"
#include "tycho_lua.h"

static int failures;

#define EXPECT(cond, what)                                                             \
  do {                                                                                 \
    if (cond) {                                                                        \
      printf("ok %s\n", what);                                                         \
    } else {                                                                           \
      printf("FAIL %s (%s:%d: %s)\n", what, __FILE__, __LINE__, #cond);                \
      failures++;                                                                      \
    }                                                                                  \
  } while (0)

static int twice(ty_task_ctx *c) {
  const ty_tile *x = &c->args[0], *y = &c->args[1];
  for (int64_t i = 0; i < y->shape[0]; i++)
    ((double *)y->data)[i * y->strides[0]] = 2 * ((double *)x->data)[i * x->strides[0]];
  return 0;
}

static double global_number(lua_State *L, const char *name) {
  lua_getglobal(L, name);
  double v = lua_tonumber(L, -1);
  lua_pop(L, 1);
  return v;
}

int main(void) {
  ty_config cfg;
  ty_config_init(&cfg, NULL, 0);
  cfg.cpus = 2;
  ty_runtime *rt;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) return 1;

  ty_task_desc d;
  memset(&d, 0, sizeof d);
  d.name = "twice";
  d.cpu = twice;
  EXPECT(ty_task_register(rt, &d, NULL) == TY_OK, "register a C task without a signature");

  lua_State *L = ty_lua_open(rt);
  EXPECT(L != NULL && ty_lua_runtime(L) == rt, "ty_lua_open binds the host's runtime");
  EXPECT(ty_lua_dostring(L, "assert(tycho and require('tycho') == tycho)", NULL) == TY_OK,
         "the global tycho is the module");

  /* failures: status and message */
  EXPECT(ty_lua_dostring(L, "x = = 1", "=bad") == TY_EINVAL, "a syntax error is TY_EINVAL");
  EXPECT(strstr(ty_lua_errmsg(L), "bad:1:") != NULL, "its message names the chunk and line");
  EXPECT(ty_lua_dostring(L, "local function f() error('deep') end f()", "=run") == TY_ETASK,
         "a runtime error is TY_ETASK");
  EXPECT(strstr(ty_lua_errmsg(L), "run:1: deep") && strstr(ty_lua_errmsg(L), "stack traceback"),
         "its message carries a traceback");
  EXPECT(ty_lua_dofile(L, "/nonexistent/script.lua") == TY_EIO, "a missing file is TY_EIO");
  EXPECT(ty_lua_dostring(L, "y = 1", NULL) == TY_OK && ty_lua_errmsg(L)[0] == 0,
         "success clears the message");

  /* stores across the boundary */
  double host[4] = {1, 2, 3, 4};
  ty_store *s;
  int64_t n = 4;
  ty_store_from_buffer(rt, TY_F64, 1, &n, host, &s);
  ty_lua_push_store(L, s);
  lua_setglobal(L, "hs");
  ty_store_release(s); /* the Lua value keeps its own reference */
  EXPECT(ty_lua_dostring(L, "total = tycho.sum(hs):item()", NULL) == TY_OK &&
             global_number(L, "total") == 10,
         "a pushed store is usable from Lua");
  lua_getglobal(L, "hs");
  EXPECT(ty_lua_tostore(L, -1) != NULL, "ty_lua_tostore reads a store back");
  EXPECT(ty_lua_dostring(L, "local y = hs * 2 + hs; total = y:sum():item() + (1 - hs)[4]",
                         NULL) == TY_OK && global_number(L, "total") == 27,
         "a pushed store is an operand of the operators");
  lua_pop(L, 1);
  lua_pushinteger(L, 3);
  EXPECT(ty_lua_tostore(L, -1) == NULL, "ty_lua_tostore refuses a number");
  lua_pop(L, 1);

  /* a C task declared for Lua */
  EXPECT(ty_lua_declare_task(L, "twice", "in, outt") == TY_EINVAL &&
             strstr(ty_lua_errmsg(L), "args[2] = 'outt' is not an argument kind"),
         "a bad signature is refused with a message");
  EXPECT(ty_lua_declare_task(L, "nobody", "in, out") == TY_EINVAL &&
             strstr(ty_lua_errmsg(L), "no C task of this name"),
         "an unknown C task is refused");
  EXPECT(ty_lua_declare_task(L, "twice", "in, out") == TY_OK, "ty_lua_declare_task");
  EXPECT(ty_lua_dostring(L, "t = tycho.tasks.twice(hs):sum():item()", NULL) == TY_OK &&
             global_number(L, "t") == 20,
         "the declared C task runs from Lua");

  /* Lua tasks and the life of their state */
  const char *decl =
      "inc = tycho.task{name = 'inc', args = {'inout'}, body = function(ctx, x)\n"
      "  for i = ctx.lo, ctx.hi do x[i] = x[i] + 1 end end}\n";
  EXPECT(ty_lua_dostring(L, decl, "=decl") == TY_OK, "declare a Lua task");
  double buf[3] = {0, 0, 0};
  int64_t n3 = 3;
  ty_store *q;
  ty_store_attach(rt, TY_F64, 1, &n3, buf, NULL, NULL, &q);
  ty_lua_push_store(L, q);
  lua_setglobal(L, "q");
  EXPECT(ty_lua_dostring(L, "inc(q); inc(q)", NULL) == TY_OK, "queue two launches");
  lua_close(L); /* the launches are still queued */
  EXPECT(ty_flush(rt) == TY_ETASK &&
             strstr(ty_errmsg(rt), "the Lua state that declared this task is closed"),
         "a queued launch of a closed state's Lua task fails with a message");
  EXPECT(buf[0] == 0, "and did not run");

  L = ty_lua_open(rt);
  double buf2[3] = {0, 0, 0};
  ty_store *q2; /* q's storage reads as an error now: its writer failed */
  ty_store_attach(rt, TY_F64, 1, &n3, buf2, NULL, NULL, &q2);
  ty_lua_push_store(L, q2);
  lua_setglobal(L, "q");
  EXPECT(ty_lua_dostring(L, "local _ = tycho.tasks.inc", NULL) == TY_ETASK &&
             strstr(ty_lua_errmsg(L), "is a Lua task of a closed or other Lua state"),
         "a new state cannot call the old body");
  EXPECT(ty_lua_dostring(L, decl, "=decl") == TY_OK, "a new state declares the same Lua task");
  EXPECT(ty_lua_dostring(L, "inc(q); tycho.flush()", NULL) == TY_OK && buf2[0] == 1 &&
             buf2[2] == 1,
         "and runs it");
  EXPECT(ty_lua_dostring(L, "tycho.task{name = 'inc', args = {'inout'}, "
                            "traits = {parallel = 'all'}, body = function() end}",
                         NULL) == TY_ETASK &&
             strstr(ty_lua_errmsg(L), "was declared with other traits"),
         "traits stay those of the first declaration");

  lua_State *L2 = ty_lua_open(rt);
  EXPECT(ty_lua_dostring(L2, decl, "=decl") == TY_ETASK &&
             strstr(ty_lua_errmsg(L2), "is a Lua task of another Lua state"),
         "two live states cannot share a Lua task");
  lua_close(L2);

  /* An embedder's state releases its stores without __gc (lua/lheap.c): when
   * Lua collects them, and every one left at lua_close; a host's store
   * pushed into it keeps the host's reference. */
  ty_stats st0, st1;
  ty_flush(rt);
  ty_get_stats(rt, &st0);
  lua_State *L3 = ty_lua_open(rt);
  EXPECT(ty_lua_dostring(L3, "assert(getmetatable(tycho.ones(1)).__gc == nil)", NULL) == TY_OK,
         "store userdata of ty_lua_open's state have no __gc");
  EXPECT(ty_lua_dostring(L3,
                         "local t = {}\n"
                         "for i = 1, 200 do t[i] = tycho.ones(4) * i end\n"
                         "keep, t = t[7], nil\n"
                         "collectgarbage(); collectgarbage()\n"
                         "assert(keep:sum():item() == 28)",
                         "=release") == TY_OK,
         "collected stores are released, a kept one stays");
  ty_flush(rt);
  ty_get_stats(rt, &st1);
  /* keep and up to 8 numbers in the binding's constant cache */
  EXPECT(st1.stores_live <= st0.stores_live + 1 + 8, "a collection releases what Lua dropped");
  ty_lua_push_store(L3, q2);
  lua_setglobal(L3, "hq");
  EXPECT(ty_lua_dostring(L3, "view = hq[{{2, 3}}] * 1; alias = hq", NULL) == TY_OK,
         "a host store used by the script");
  lua_close(L3);
  ty_flush(rt); /* the launch of view * 1 held its stores */
  ty_get_stats(rt, &st1);
  EXPECT(st1.stores_live == st0.stores_live, "lua_close releases every store of the state");
  EXPECT(ty_store_size(q2) == 3, "and the host's store keeps its own reference");

  /* luaopen_tycho on a ty_lua_newstate state: an owned runtime, destroyed by
   * the binding at lua_close after its stores are released (ASan checks) */
  lua_State *L4 = ty_lua_newstate();
  luaL_openlibs(L4);
  luaL_requiref(L4, "tycho", luaopen_tycho, 1);
  lua_pop(L4, 1);
  EXPECT(ty_lua_dostring(L4, "x = tycho.ones(6) * 2; v = x[{{2, 4}}]; w = v + x[{{1, 3}}]", NULL) ==
                 TY_OK &&
             ty_lua_runtime(L4) != rt,
         "a state of ty_lua_newstate with its own runtime");
  lua_close(L4);

  ty_store_release(q);
  ty_store_release(q2);
  lua_close(L);
  ty_runtime_destroy(rt);
  printf("%s\n", failures ? "FAILED" : "all ok");
  return failures ? 1 : 0;
}
