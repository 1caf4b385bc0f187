/*
 * ops_index.c — operations that address elements by value: bincount.
 * (Placeholder until the bench helper lands the real implementation.)
 */
#include "internal.h"

ty_status ty__register_index_ops(ty_runtime *rt) {
  (void)rt;
  return TY_OK;
}

ty_status ty_bincount(ty_runtime *rt, ty_store *x, ty_store *weights, int64_t base, int64_t nbins,
                      ty_store **out) {
  (void)x, (void)weights, (void)base, (void)nbins, (void)out;
  return ty__fail(rt, TY_EINVAL, "ty_bincount: not implemented yet");
}
