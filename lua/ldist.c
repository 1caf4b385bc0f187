/*
 * ldist.c — tycho.rank() and tycho.nranks(): where this process stands in
 * a run on several processes (docs/mpi.md). Ranks count from 0, as MPI's
 * and mpirun's do; without a transport (no mpirun, or a build without MPI)
 * the rank is 0 of 1.
 */
#include "tl.h"

#include "tycho/dist.h"

static const tl_sig sig_rank = {"rank", 0, 0, "", false, "tycho.rank()"};
static int l_rank(lua_State *L) {
  tl_args(L, &sig_rank);
  lua_pushinteger(L, ty_rank(tl_rt(L)));
  return 1;
}

static const tl_sig sig_nranks = {"nranks", 0, 0, "", false, "tycho.nranks()"};
static int l_nranks(lua_State *L) {
  tl_args(L, &sig_nranks);
  lua_pushinteger(L, ty_nranks(tl_rt(L)));
  return 1;
}

static const luaL_Reg dist_funcs[] = {{"rank", l_rank}, {"nranks", l_nranks}, {NULL, NULL}};

void tl_dist_open(lua_State *L, int module_index) {
  module_index = lua_absindex(L, module_index);
  lua_pushvalue(L, module_index);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX); /* upvalue 1 of each: the runtime box */
  luaL_setfuncs(L, dist_funcs, 1);
  lua_pop(L, 1);
}
