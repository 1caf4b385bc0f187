/*
 * record.c — the ring of explain records (internal.h's ty_record): the
 * executors take one per launch they run; plan/explain.c renders them.
 */
#include "internal.h"

#include <string.h>

ty_record *ty__explain_next(ty_runtime *rt) {
  ty_record *r = &rt->explain[rt->nexplained++ % TY_EXPLAIN_KEEP];
  r->processor = -1;
  r->wave = r->waves = 0;
  r->fused = 0;
  r->fused_ops[0] = 0;
  r->fuse_end[0] = 0;
  r->stream[0] = 0;
  r->ranks[0] = 0;
  r->gpus = 0; /* a reused record must not keep another launch's placement */
  r->place[0] = 0;
  r->h2d = r->d2h = r->d2d = 0;
  memset(&r->flush, 0, sizeof r->flush); /* stamped when its flush ends (plan/window.c) */
  return r;
}
