/*
 * builtins.h — the built-in tasks of a runtime (builtins.c), as the
 * operations (ops.c, ops_index.c) launch them.
 */
#ifndef TY_BUILTINS_H
#define TY_BUILTINS_H

#include "internal.h"

typedef struct ty__builtins {
  const ty_task *op[TY_NOPS];
  const ty_task *reduce[TY_NREDUCE]; /* mean has none: it is sum, then div */
  const ty_task *where, *cast, *copy, *fill, *arange, *linspace, *random, *matmul;
  const ty_task *fused; /* the launches the fusion pass makes (fuse.c, fused_cpu.c) */
  const ty_task *gemv_chain; /* z = X w, a fused run, e X in one pass (fuse_gemv.c, kernels_gemv.c) */
} ty__builtins;

#endif
