/*
 * req.h — REQ(rt, expr): a tycho call a test cannot go on without; on an
 * error it prints the call, the status and the runtime's message, and exits.
 */
#ifndef TY_TEST_REQ_H
#define TY_TEST_REQ_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

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

#endif /* TY_TEST_REQ_H */
