/*
 * main.c — a host application that embeds tycho (docs/embedding.md):
 *
 *   1. creates a runtime from its own configuration (and TYCHO_* variables);
 *   2. registers its C task (mc_task.c) with a signature, so scripts call it
 *      by name like any task;
 *   3. attaches one of its own buffers as a store, without a copy;
 *   4. opens a Lua state on the runtime and runs the script shipped beside it;
 *   5. reads the script's result back into its own memory and checks it;
 *   6. with -i, opens the tycho REPL on the same state.
 *
 * usage: embed_host [-i] [script.lua [samples]]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc_task.h"
#include "tycho/tycho.h"
#include "tycho_lua.h"
#include "tycho_repl.h"

#ifndef EMBED_SCRIPT
#define EMBED_SCRIPT "script.lua"
#endif

#define N 2000 /* elements: far below what the runtime splits by size */

/* Called by the runtime when the last store over the buffer is released. */
static void release_buffer(void *ud) { free(ud); }

int main(int argc, char **argv) {
  int a = 1;
  int interactive = argc > 1 && strcmp(argv[1], "-i") == 0;
  a += interactive;
  const char *script = argc > a ? argv[a] : EMBED_SCRIPT;
  long long samples = argc > a + 1 ? atoll(argv[a + 1]) : 20000;

  ty_config cfg;
  char err[256];
  if (ty_config_init(&cfg, err, sizeof err) != TY_OK) {
    fprintf(stderr, "embed_host: %s\n", err);
    return 1;
  }
  ty_runtime *rt;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) {
    fprintf(stderr, "embed_host: cannot create the runtime\n");
    return 1;
  }
  if (mc_register(rt) != TY_OK) {
    fprintf(stderr, "embed_host: %s\n", ty_errmsg(rt));
    ty_runtime_destroy(rt);
    return 1;
  }

  /* the host's own data, handed to tycho without a copy */
  double *freq = aligned_alloc(64, N * sizeof *freq);
  if (!freq) return 1;
  for (int i = 0; i < N; i++) freq[i] = 0.5 + 20.0 * i / N;
  int64_t n = N;
  ty_store *fs;
  if (ty_store_attach(rt, TY_F64, 1, &n, freq, release_buffer, freq, &fs) != TY_OK) {
    fprintf(stderr, "embed_host: %s\n", ty_errmsg(rt));
    free(freq);
    ty_runtime_destroy(rt);
    return 1;
  }

  lua_State *L = ty_lua_open(rt);
  if (!L) {
    fprintf(stderr, "embed_host: cannot open a Lua state\n");
    ty_store_release(fs);
    ty_runtime_destroy(rt);
    return 1;
  }
  ty_lua_push_store(L, fs); /* the Lua value holds its own reference */
  lua_setglobal(L, "freq");
  ty_store_release(fs);
  lua_pushinteger(L, samples);
  lua_setglobal(L, "samples");

  int ok = 0;
  if (ty_lua_dofile(L, script) != TY_OK) {
    fprintf(stderr, "embed_host: %s\n", ty_lua_errmsg(L));
  } else {
    lua_getglobal(L, "result");
    ty_store *res = ty_lua_tostore(L, -1);
    double *out = malloc(N * sizeof *out);
    if (!res || !out) {
      fprintf(stderr, "embed_host: the script left no store in `result`\n");
    } else if (ty_store_read(rt, res, out, N * sizeof *out) != TY_OK) {
      fprintf(stderr, "embed_host: %s\n", ty_errmsg(rt));
    } else {
      /* sin^2 has variance <= 1/4: a standard error of 0.5/sqrt(samples) */
      double worst = 0, bound = 6 * 0.5 / sqrt((double)samples);
      for (int i = 0; i < N; i++) {
        double e = fabs(out[i] - mc_exact(0.5 + 20.0 * i / N));
        if (e > worst) worst = e;
      }
      ok = worst <= bound;
      printf("embed_host: result read back, max error %.3g (bound %.3g): %s\n", worst, bound,
             ok ? "ok" : "FAILED");
    }
    free(out);
    lua_pop(L, 1);
  }
  if (interactive) ty_repl(L);

  lua_close(L);           /* releases the script's stores (and the buffer's) */
  ty_runtime_destroy(rt); /* after the state, as tycho_lua.h asks */
  return ok ? 0 : 1;
}
