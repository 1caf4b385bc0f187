/*
 * read.c — host reads of stores: each flushes the window first, checks that
 * the store's value is available (its producer did not fail), and makes its
 * bytes valid in host memory (a GPU may hold the newest copy: rt->devices).
 */
#include "internal.h"
#include "exec.h"

#include <stdio.h>
#include <string.h>

/* Flush, then make sure the store's storage can be read on the host (of
 * its element at index alone, when index is not NULL). */
static ty_status prepare_read(ty_runtime *rt, ty_store *s, const int64_t *index) {
  ty_status st = ty_flush(rt);
  if (st) return st;
  ty__dist_read(rt, s, index); /* several ranks: what others hold of the view */
  if (s->storage->cancelled) return ty__unavailable(rt, NULL, s->storage);
  st = ty__storage_ensure(rt, s->storage, true);
  if (st || !s->storage->gpu) return st;
  uint64_t lo, hi;
  bool dense;
  ty__store_range(s, &lo, &hi, &dense);
  return rt->devices ? rt->devices->host(rt, s->storage, lo, hi, TY__HOST_READ) : TY_OK;
}

ty_status ty_store_read(ty_runtime *rt, ty_store *s, void *dst, size_t dstlen) {
  size_t need = (size_t)s->size * ty__dtype_size(s->dtype);
  if (dstlen < need)
    return ty__fail(rt, TY_EINVAL, "ty_store_read: buffer of %zu bytes is smaller than the %zu needed",
                    dstlen, need);
  ty_status st = prepare_read(rt, s, NULL);
  if (st) return st;
  ty__gather(s, dst);
  return TY_OK;
}

static void value_at(const ty_store *s, const char *p, ty_value *out) {
  out->dtype = s->dtype;
  out->f = ty__load_f64(p, s->dtype);
  out->i = ty__load_i64(p, s->dtype);
}

ty_status ty_item(ty_runtime *rt, ty_store *s, ty_value *out) {
  if (s->size != 1) {
    char sh[256];
    ty__shape_str(s->ndim, s->shape, sh, sizeof sh);
    return ty__fail(rt, TY_ESHAPE, "item: the store has shape %s (%lld elements), not one element",
                    sh, (long long)s->size);
  }
  ty_status st = prepare_read(rt, s, NULL);
  if (st) return st;
  value_at(s, ty__store_base(s), out);
  return TY_OK;
}

ty_status ty_store_get(ty_runtime *rt, ty_store *s, const int64_t *index, ty_value *out) {
  int64_t off = 0;
  for (int d = 0; d < s->ndim; d++) {
    if (index[d] < 0 || index[d] >= s->shape[d])
      return ty__fail(rt, TY_ERANGE, "get: index %lld is out of bounds for dim %d of size %lld",
                      (long long)index[d], d, (long long)s->shape[d]);
    off += index[d] * s->strides[d];
  }
  ty_status st = prepare_read(rt, s, index);
  if (st) return st;
  value_at(s, ty__store_base(s) + off * (int64_t)ty__dtype_size(s->dtype), out);
  return TY_OK;
}
