/*
 * gpu_coherence.c — the segment tracker of gpu_coherence.h.
 *
 * Every operation is split, visit, merge: split the segments at the range's
 * ends (so the range is a run of whole segments), visit them in order
 * (emitting copies, updating masks), then merge equal neighbours back. The
 * array is sorted by lo; an operation costs O(segments) with two memmoves
 * at most for the splits. A storage written piece by piece by CPUs and GPUs
 * alternately has about as many segments as pieces (8-64), not elements.
 */
#include "alloc.h"
#include "gpu_coherence.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

void ty__coh_init(ty__coh_obj *o, uint64_t size, ty__cohmask initial) {
  o->size = size;
  o->one = (ty__coh_seg){0, initial};
  o->seg = &o->one;
  o->nseg = 1;
  o->cap = 1;
}

void ty__coh_free(ty__coh_obj *o) {
  if (o->seg != &o->one) free(o->seg);
  o->seg = &o->one;
  o->nseg = o->cap = 1;
  o->one = (ty__coh_seg){0, 0};
}

static uint64_t seg_end(const ty__coh_obj *o, int i) {
  return i + 1 < o->nseg ? o->seg[i + 1].lo : o->size;
}

/* Room for `extra` more segments. */
static bool reserve(ty__coh_obj *o, int extra) {
  if (o->nseg + extra <= o->cap) return true;
  int ncap = o->cap * 2 > o->nseg + extra ? o->cap * 2 : o->nseg + extra + 4;
  ty__coh_seg *n = ty__malloc((size_t)ncap * sizeof *n);
  if (!n) return false;
  memcpy(n, o->seg, (size_t)o->nseg * sizeof *n);
  if (o->seg != &o->one) free(o->seg);
  o->seg = n;
  o->cap = ncap;
  return true;
}

/* The segment holding byte `off` (off < size). */
static int find(const ty__coh_obj *o, uint64_t off) {
  int lo = 0, hi = o->nseg - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (o->seg[mid].lo <= off) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/* Make `off` (0 < off < size) the start of a segment; returns its index.
 * Room for one more segment must have been reserved. */
static int split(ty__coh_obj *o, uint64_t off) {
  int i = find(o, off);
  if (o->seg[i].lo == off) return i;
  memmove(&o->seg[i + 2], &o->seg[i + 1], (size_t)(o->nseg - i - 1) * sizeof *o->seg);
  o->seg[i + 1] = (ty__coh_seg){off, o->seg[i].valid};
  o->nseg++;
  return i + 1;
}

static void merge(ty__coh_obj *o) {
  int k = 0;
  for (int i = 1; i < o->nseg; i++) {
    if (o->seg[i].valid == o->seg[k].valid) continue;
    o->seg[++k] = o->seg[i];
  }
  o->nseg = k + 1;
}

static bool push_copy(ty__coh_copies *c, int src, int dst, uint64_t lo, uint64_t hi) {
  if (!c) return true;
  c->bytes[src + 1][dst] += hi - lo;
  if (c->n > 0) { /* extend the previous copy when it continues it */
    ty__coh_copy *p = &c->v[c->n - 1];
    if (p->src == src && p->dst == dst && p->hi == lo) {
      p->hi = hi;
      return true;
    }
  }
  if (c->n == c->cap) {
    int ncap = c->cap ? c->cap * 2 : 16;
    ty__coh_copy *n = ty__realloc(c->v, (size_t)ncap * sizeof *n);
    if (!n) {
      c->bytes[src + 1][dst] -= hi - lo;
      return false;
    }
    c->v = n;
    c->cap = ncap;
  }
  c->v[c->n++] = (ty__coh_copy){src, dst, lo, hi};
  return true;
}

/* Where a copy to `dst` comes from: the host, else the lowest valid device,
 * else -1 (never written: zeros). */
static int source(ty__cohmask valid, int dst) {
  valid &= ~(1u << dst);
  if (valid & (1u << TY__COH_HOST)) return TY__COH_HOST;
  if (!valid) return -1;
  return __builtin_ctz(valid);
}

ty_status ty__coh_acquire(ty__coh_obj *o, uint64_t lo, uint64_t hi, int place,
                          ty__cohaccess access, ty__coh_copies *out) {
  if (place < 0 || place >= TY__COH_PLACES || lo > hi || hi > o->size) return TY_ERANGE;
  if (lo == hi) return TY_OK;
  if (!reserve(o, 2)) return TY_ENOMEM;
  int first = lo > 0 ? split(o, lo) : 0;
  int last = hi < o->size ? split(o, hi) : o->nseg; /* one past */
  const ty__cohmask me = 1u << place;
  int ncopies_before = out ? out->n : 0;
  /* copies first, masks after: out of memory leaves the state as it was
   * (the splits are undone by the merge) */
  if (access != TY__COH_DISCARD)
    for (int i = first; i < last; i++) {
      const ty__coh_seg *s = &o->seg[i];
      if (s->valid & me) continue;
      if (!push_copy(out, source(s->valid, place), place, s->lo, seg_end(o, i))) {
        out->n = ncopies_before; /* the byte totals may count the dropped copies: stats only */
        merge(o);
        return TY_ENOMEM;
      }
    }
  for (int i = first; i < last; i++)
    o->seg[i].valid = access == TY__COH_READ ? o->seg[i].valid | me : me;
  merge(o);
  return TY_OK;
}

ty_status ty__coh_evict(ty__coh_obj *o, int place, ty__coh_copies *out) {
  if (place <= TY__COH_HOST || place >= TY__COH_PLACES) return TY_ERANGE;
  const ty__cohmask me = 1u << place;
  for (int i = 0; i < o->nseg; i++) {
    ty__coh_seg *s = &o->seg[i];
    if (s->valid == me) {
      if (!push_copy(out, place, TY__COH_HOST, s->lo, seg_end(o, i))) return TY_ENOMEM;
      s->valid = 1u << TY__COH_HOST;
    } else {
      s->valid &= ~me;
    }
  }
  merge(o);
  return TY_OK;
}

bool ty__coh_valid(const ty__coh_obj *o, uint64_t lo, uint64_t hi, int place) {
  if (lo >= hi) return true;
  if (hi > o->size || place < 0 || place >= TY__COH_PLACES) return false;
  for (int i = find(o, lo); i < o->nseg && o->seg[i].lo < hi; i++)
    if (!(o->seg[i].valid & (1u << place))) return false;
  return true;
}

ty__cohmask ty__coh_at(const ty__coh_obj *o, uint64_t off) {
  return off < o->size ? o->seg[find(o, off)].valid : 0;
}

ty__cohmask ty__coh_places(const ty__coh_obj *o) {
  ty__cohmask m = 0;
  for (int i = 0; i < o->nseg; i++) m |= o->seg[i].valid;
  return m;
}

void ty__coh_copies_reset(ty__coh_copies *c) { c->n = 0; }

void ty__coh_copies_free(ty__coh_copies *c) {
  free(c->v);
  memset(c, 0, sizeof *c);
}

void ty__coh_tile_range(int ndim, const int64_t *shape, const int64_t *strides, int64_t offset,
                        size_t es, uint64_t *lo, uint64_t *hi, bool *dense) {
  ty__tile_range(ndim, shape, strides, offset, es, lo, hi, dense);
}
