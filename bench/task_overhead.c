/*
 * task_overhead.c — the runner of bench/task_overhead.lua: the tycho shell
 * (ty_shell_main) with one tiny C task registered, so the script can time a
 * C task's launches next to a Lua task's.
 *
 *   tiny_c   inout x (i64): x[first element of the piece] += 1
 */
#include <string.h>

#include "tycho/task.h"
#include "tycho_repl.h"

static int tiny_c(ty_task_ctx *c) {
  ((int64_t *)c->args[0].data)[0] += 1;
  return 0;
}

static int setup(lua_State *L, ty_runtime *rt, void *ud) {
  (void)L;
  (void)ud;
  ty_task_desc d;
  memset(&d, 0, sizeof d);
  d.name = "tiny_c";
  d.cpu = tiny_c;
  d.signature = "inout";
  if (ty_task_register(rt, &d, NULL) != TY_OK) return 1;
  d.name = "tiny_c_all"; /* the same, split across every processor */
  d.traits.set = TY_POL_MODE;
  d.traits.mode = TY_MODE_ALL;
  return ty_task_register(rt, &d, NULL) != TY_OK;
}

int main(int argc, char **argv) { return ty_shell_main(argc, argv, setup, NULL); }
