/*
 * tycho/shape.h — shape operations of the core that composition of the
 * views and launches of tycho.h cannot express: reversed views (flip) and
 * scans (cumulative sums and products). Same conventions as tycho.h: 0-based
 * axes, ty_status results, one reference handed back through `out`.
 */
#ifndef TYCHO_SHAPE_H
#define TYCHO_SHAPE_H

#include "tycho/tycho.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The elements of `s` in reverse order along dim: a view (negative stride),
 * no copy; writing it writes `s`. */
ty_status ty_store_flip(ty_runtime *rt, ty_store *s, int dim, ty_store **out);

typedef enum ty_scan_op {
  TY_SCAN_SUM = 0, /* cumsum: bool/int -> i64 (wrapping), floats keep theirs */
  TY_SCAN_PROD     /* cumprod: same dtypes */
} ty_scan_op;

/* Inclusive scan along `axis` (-1: over the elements in C order, giving a
 * 1-D result), numpy's cumsum / cumprod. The combination order depends only
 * on the shape, never on processors, mode or fusion: a line shorter than
 * 2 * TY_SCAN_BLOCK is scanned in order; a longer one is cut into blocks of
 * TY_SCAN_BLOCK, each block's total comes from an ordered reduction, an
 * in-order scan of the totals gives each block its carry, and each block is
 * scanned in order from its carry. NaN propagates (nancumsum is a where()
 * before it). */
#define TY_SCAN_BLOCK 65536
ty_status ty_scan(ty_runtime *rt, ty_scan_op op, ty_store *a, int axis, ty_store **out);

#ifdef __cplusplus
}
#endif
#endif /* TYCHO_SHAPE_H */
