/*
 * tycho/mask.h — selecting elements by a boolean mask and by integer
 * positions: numpy's x[mask], nonzero/argwhere, x[mask] = v, take and put.
 *
 * Results whose size depends on the data (x[mask], argwhere) are computed in
 * two launches with a read between them, so these calls run the window:
 *   1. "mask_count": the mask is cut into chunks of TY_MASK_CHUNK elements in
 *      C order; each piece counts the non-zero elements of its chunks;
 *   2. the host reads the counts (one i64 per chunk) and takes their ordered
 *      prefix: chunk c's first true element has rank offsets[c];
 *   3. "mask_compress" is a launch over the OUTPUT: a piece that writes ranks
 *      [lo, hi) finds the chunk holding rank lo by binary search in the
 *      offsets and walks the mask from there. Pieces never share an output
 *      element, so the result is the same bits under any piece count.
 * x[mask] = v with one value per true element ("mask_expand") is the inverse
 * walk over the rows of x, followed by a where() into x.
 *
 * Positions in and out are counted from `base` (0 for C callers, 1 for the
 * Lua binding); a negative position counts from the end (-1 is the last).
 */
#ifndef TYCHO_MASK_H
#define TYCHO_MASK_H

#include "tycho/tycho.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TY_MASK_CHUNK 4096 /* mask elements counted per chunk (4 KiB of a bool mask) */

/* x[mask]: mask (any dtype, non-zero = true) has the shape of x's leading
 * mask->ndim dims; the result is (N,) + x.shape[mask->ndim:], the selected
 * elements (or sub-arrays) in C order, N the number of true elements. */
ty_status ty_compress(ty_runtime *rt, ty_store *x, ty_store *mask, ty_store **out);

/* numpy's argwhere: an (N, ndim) i64 store, row i the position of the i-th
 * non-zero element of x in C order, each coordinate + base. A 0-d x gives
 * (N, 0). */
ty_status ty_argwhere(ty_runtime *rt, ty_store *x, int64_t base, ty_store **out);

/* x[mask] = v (mask as in ty_compress). v broadcasts either to
 * x.shape[mask->ndim:] (every selected element/sub-array gets it) or to
 * (N,) + x.shape[mask->ndim:] (one per true element, in C order); it is
 * cast to x's dtype. */
ty_status ty_mask_assign(ty_runtime *rt, ty_store *x, ty_store *mask, ty_store *v);

/* Whether every entry of the integer store idx is a position of a dim of
 * size n (base..n-1+base, or -n..-1). *bad_at is -1 when all are, else the C-order
 * (0-based, flat) position of the first bad entry and *bad_value its value.
 * Runs the window (it reads one result). */
ty_status ty_index_check(ty_runtime *rt, ty_store *idx, int64_t n, int64_t base, int64_t *bad_at,
                         int64_t *bad_value);

/* numpy's take along `axis` (0-based): out = x.shape[:axis] + idx.shape +
 * x.shape[axis+1:], out[..., i, ...] = x[..., idx[i], ...]. A bad position
 * fails the launch (check with ty_index_check first for a message that
 * names the first one). */
ty_status ty_take(ty_runtime *rt, ty_store *x, ty_store *idx, int axis, int64_t base,
                  ty_store **out);

/* The inverse: x[..., idx[i], ...] = v[..., i, ...] along `axis`, v broadcast
 * to x.shape[:axis] + idx.shape + x.shape[axis+1:] and cast to x's dtype.
 * A position given twice keeps the last write (numpy's), whatever the
 * pieces: each piece owns a range of x and writes its positions in index
 * order (a long idx into one line is first sorted by destination, stably,
 * in parallel: tasks put_bucket and put_apply). */
ty_status ty_put(ty_runtime *rt, ty_store *x, ty_store *idx, int axis, int64_t base,
                 ty_store *v);

/* ty_put with its positions checked in the same pass of the window: when
 * one is bad nothing is written, *bad_at is the C-order (0-based, flat)
 * position of the first bad entry and *bad_value its value (else -1 and 0).
 * The check is one parallel launch ("index_check") whose result gates the
 * put's pieces; the call runs the window (it reads that result). */
ty_status ty_put_checked(ty_runtime *rt, ty_store *x, ty_store *idx, int axis, int64_t base,
                         ty_store *v, int64_t *bad_at, int64_t *bad_value);

/* numpy's take_along_axis / put_along_axis: idx has x's rank; along
 * `axis` it holds positions (k of them), its other dims broadcast against
 * x's. take: out[..., i, ...] = x[..., idx[..., i, ...], ...], of the
 * broadcast shape with k along axis. put: x[..., idx[..., i, ...], ...] =
 * v[..., i, ...] (v broadcast to that shape, cast to x's dtype; of
 * repeated positions on one line the last write wins). */
ty_status ty_take_along(ty_runtime *rt, ty_store *x, ty_store *idx, int axis, int64_t base,
                        ty_store **out);
ty_status ty_put_along(ty_runtime *rt, ty_store *x, ty_store *idx, int axis, int64_t base,
                       ty_store *v);

#ifdef __cplusplus
}
#endif
#endif /* TYCHO_MASK_H */
