/*
 * range.c — known bounds of a storage's integer values, without reading them.
 *
 * bincount's length is max(x) + 1 (at least minlength): finding max(x) reads
 * a value, which flushes the window and so materialises everything still live
 * in it (k-means' n x k distances). Often the bounds are known from how x was
 * made: argmin along an axis of length K gives 0..K-1 (core, 0-based), adding
 * a scalar shifts them. A storage keeps such bounds:
 *   - set by the op that made it, on a fresh storage nothing else wrote
 *     (ty__range_set): a scalar made from a number, an arg reduction, the
 *     sum or difference of two ranged operands, an integer cast;
 *   - cleared by every launch that writes it, whatever the view
 *     (ty__range_clear, from window.c's append), so a later write never
 *     leaves stale bounds; attached host buffers never get bounds;
 *   - read through any view of the storage: a view holds a subset.
 * Unknown is always safe: bincount then flushes and reads max(x), as before.
 */
#include "internal.h"

void ty__range_set(ty_store *s, int64_t lo, int64_t hi) {
  ty_storage *stg = s ? s->storage : NULL;
  if (!stg || stg->external || lo > hi || !ty_dtype_is_int(s->dtype)) return;
  int64_t tlo;
  uint64_t thi;
  ty_dtype_limits(s->dtype, &tlo, &thi);
  if (lo < tlo || (hi >= 0 && (uint64_t)hi > thi)) return; /* would have wrapped */
  stg->has_range = true;
  stg->range_lo = lo;
  stg->range_hi = hi;
}

/* The bounds a storage's op left (false: none). */
static bool known(const ty_store *s, int64_t *lo, int64_t *hi) {
  if (!s || !s->storage || !s->storage->has_range) return false;
  *lo = s->storage->range_lo;
  *hi = s->storage->range_hi;
  return true;
}

void ty__range_scalar(ty_store *s) {
  if (!s || s->ndim != 0 || !s->storage || !s->storage->data || !ty_dtype_is_int(s->dtype)) return;
  int64_t v = ty__load_i64((const char *)s->storage->data + s->offset * (int64_t)ty_dtype_size(s->dtype),
                           s->dtype);
  if (ty_dtype_is_unsigned(s->dtype) && v < 0) return; /* a u64 past INT64_MAX */
  ty__range_set(s, v, v);
}

void ty__range_binary(ty_op op, const ty_store *a, const ty_store *b, ty_store *out) {
  int64_t alo, ahi, blo, bhi, lo, hi;
  if (!known(a, &alo, &ahi) || !known(b, &blo, &bhi)) return;
  switch (op) {
  case TY_OP_ADD:
    if (__builtin_add_overflow(alo, blo, &lo) || __builtin_add_overflow(ahi, bhi, &hi)) return;
    break;
  case TY_OP_SUB:
    if (__builtin_sub_overflow(alo, bhi, &lo) || __builtin_sub_overflow(ahi, blo, &hi)) return;
    break;
  case TY_OP_MAXIMUM:
    lo = alo > blo ? alo : blo;
    hi = ahi > bhi ? ahi : bhi;
    break;
  case TY_OP_MINIMUM:
    lo = alo < blo ? alo : blo;
    hi = ahi < bhi ? ahi : bhi;
    break;
  default: return;
  }
  ty__range_set(out, lo, hi);
}

void ty__range_copy(const ty_store *a, ty_store *out) {
  int64_t lo, hi;
  if (known(a, &lo, &hi)) ty__range_set(out, lo, hi);
}

bool ty_store_value_range(const ty_store *s, int64_t *lo, int64_t *hi) {
  if (!s || !lo || !hi || !(ty_dtype_is_int(s->dtype) || s->dtype == TY_BOOL)) return false;
  int64_t tlo;
  uint64_t thi;
  ty_dtype_limits(s->dtype, &tlo, &thi);
  *lo = tlo;
  *hi = thi > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)thi;
  int64_t klo, khi;
  if (known(s, &klo, &khi)) {
    if (klo > *lo) *lo = klo;
    if (khi < *hi) *hi = khi;
  }
  return true;
}
