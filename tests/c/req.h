/*
 * req.h — REQ(rt, expr): a tycho call a test cannot go on without; on an
 * error it prints the call, the status and the runtime's message, and exits.
 */
#ifndef TY_TEST_REQ_H
#define TY_TEST_REQ_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <tycho/tycho.h>

#define REQ(rt, expr)                                                                  \
  do {                                                                                 \
    ty_status req_ = (expr);                                                           \
    if (req_ != TY_OK) {                                                               \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #expr,          \
              ty_status_name(req_), ty_errmsg(rt));                                    \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

/* A runtime on `cpus` processors with fusion on or off; exits when it
 * cannot be made. */
static inline ty_runtime *req_runtime(int cpus, bool fuse) {
  ty_config cfg = {.cpus = cpus};
  cfg.policy.set = TY_POL_FUSE;
  cfg.policy.fuse = fuse;
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) {
    fprintf(stderr, "cannot create a runtime\n");
    exit(1);
  }
  return rt;
}

/* Compiled kernels in ./tycho-kernel-cache (the test's working directory),
 * TYCHO_CODEGEN = mode ("always", "off", ...) for runtimes made after it. */
static inline void req_codegen(const char *mode) {
  static char cache_dir[1024];
  if (!cache_dir[0]) {
    char cwd[900];
    if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, "/tmp");
    snprintf(cache_dir, sizeof cache_dir, "%s/tycho-kernel-cache", cwd);
  }
  setenv("TYCHO_CACHE_DIR", cache_dir, 1);
  setenv("TYCHO_CODEGEN", mode, 1);
}

#endif /* TY_TEST_REQ_H */
