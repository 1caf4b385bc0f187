/*
 * tycho/sort.h — sorting and what is built on it: sort, argsort, unique,
 * searchsorted, isin (numpy's).
 *
 * Order: ascending, NaN last (numpy's); sorts are stable, so equal values
 * keep their order (argsort gives numpy's kind="stable" answer) and the
 * result is the same bits under any piece count. Positions are counted from
 * `base` (0 for C callers, 1 for the Lua binding).
 */
#ifndef TYCHO_SORT_H
#define TYCHO_SORT_H

#include "tycho/tycho.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x sorted along `axis` (0-based), a new store of x's shape and dtype. */
ty_status ty_sort(ty_runtime *rt, ty_store *x, int axis, ty_store **out);
/* The positions (i64, + base) that sort x along `axis`. */
ty_status ty_argsort(ty_runtime *rt, ty_store *x, int axis, int64_t base, ty_store **out);

/* For each element of v: where it goes in the sorted 1-D store a (numpy's
 * searchsorted; i64 of v's shape, + base): the first such position (right
 * false) or the last (right true). Both are compared in their promoted dtype. */
ty_status ty_searchsorted(ty_runtime *rt, ty_store *a, ty_store *v, bool right, int64_t base,
                          ty_store **out);

/* numpy's isin: a bool store of x's shape, true where the element equals one
 * of test's (NaN equals nothing). */
ty_status ty_isin(ty_runtime *rt, ty_store *x, ty_store *test, ty_store **out);

/* numpy's unique over the flattened x: the sorted distinct values (NaNs
 * count as one value, numpy's equal_nan) and, for each non-NULL pointer,
 * the position of each value's first occurrence in x (+ base), the position
 * of each element of x in the values (+ base; 1-D, x flattened) and each
 * value's count. Runs the window (the number of values is data). */
ty_status ty_unique(ty_runtime *rt, ty_store *x, int64_t base, ty_store **values,
                    ty_store **index, ty_store **inverse, ty_store **counts);

#ifdef __cplusplus
}
#endif
#endif /* TYCHO_SORT_H */
