/*
 * gpu_coherence.h — where the valid copy of each byte of a storage lives.
 *
 * A storage may have a copy in host memory and one on each GPU. Its bytes
 * are tracked as segments (sorted, covering [0, size)), each with the set of
 * places holding a valid copy of it: bit 0 the host, bit 1 + k device k.
 * Launches acquire byte ranges (a piece's tile, a whole store) at the place
 * they run, and the tracker answers which copies must run first:
 *
 *   READ        the place needs valid data; afterwards it holds a copy too.
 *   READWRITE   the same copies; afterwards ONLY this place is valid (the
 *               other copies are stale). Also what a write that does not
 *               cover every byte of its range (a strided tile) must use.
 *   DISCARD     every byte of the range is overwritten: no copies at all;
 *               afterwards only this place is valid.
 *
 * A segment valid nowhere has never been written: it reads as zeros (the
 * core's rule), so it gets a zero-fill rather than a copy (src -1), at any
 * place, the host included (the caller may skip it for a buffer it knows is
 * zeroed). Copies come from the host when it is valid there, else from the
 * lowest-numbered device that is; neighbouring segments with the same source
 * and target are one copy.
 *
 * Invariants: segments are sorted, non-empty, cover [0, size), and two
 * neighbours never have the same mask (they are merged), so the number of
 * segments is bounded by the number of distinct ranges last written.
 *
 * Pure bookkeeping: no CUDA, no threads (the driving thread calls it while
 * preparing launches); the caller owns one ty__coh_obj per storage.
 */
#ifndef TY_GPU_COHERENCE_H
#define TY_GPU_COHERENCE_H

#include "tycho/tycho.h"

#include <stdbool.h>
#include <stdint.h>

#define TY__COH_HOST 0
#define TY__COH_DEV(k) (1 + (k))
#define TY__COH_PLACES 17 /* the host and up to 16 GPUs (TY_MAX_GPUS) */

typedef uint32_t ty__cohmask; /* bit p: place p holds a valid copy */

typedef enum ty__cohaccess {
  TY__COH_READ = 1,
  TY__COH_READWRITE = 3,
  TY__COH_DISCARD = 4
} ty__cohaccess;

typedef struct ty__coh_seg {
  uint64_t lo; /* the segment is [lo, next segment's lo) */
  ty__cohmask valid;
} ty__coh_seg;

typedef struct ty__coh_obj {
  uint64_t size;
  int nseg, cap;
  ty__coh_seg *seg;  /* points at `one` until a second segment is needed */
  ty__coh_seg one;
} ty__coh_obj;

/* A copy to run before the launch: bytes [lo, hi) from place src (-1: fill
 * with zeros) to place dst. */
typedef struct ty__coh_copy {
  int src, dst;
  uint64_t lo, hi;
} ty__coh_copy;

typedef struct ty__coh_copies {
  ty__coh_copy *v;
  int n, cap;
  uint64_t bytes[TY__COH_PLACES + 1][TY__COH_PLACES]; /* [src + 1][dst]: totals, for stats */
} ty__coh_copies;

/* A storage of `size` bytes whose valid copies are `initial` (0: never
 * written, e.g. a new store; 1 << TY__COH_HOST: host data, e.g. a store
 * made from a buffer). No allocation. */
void ty__coh_init(ty__coh_obj *o, uint64_t size, ty__cohmask initial);
void ty__coh_free(ty__coh_obj *o);

/* Bytes [lo, hi) at `place` (see the header comment). Copies are appended
 * to *out in ascending order of lo. TY_ERANGE for a range outside the
 * storage or a bad place, TY_ENOMEM (nothing changed) when out of memory. */
ty_status ty__coh_acquire(ty__coh_obj *o, uint64_t lo, uint64_t hi, int place,
                          ty__cohaccess access, ty__coh_copies *out);

/* Before freeing place's copy (eviction, or the device copy of a store
 * being released to the host): bytes valid only there are copied to the
 * host, then the place holds nothing. */
ty_status ty__coh_evict(ty__coh_obj *o, int place, ty__coh_copies *out);

/* Whether every byte of [lo, hi) is valid at place. */
bool ty__coh_valid(const ty__coh_obj *o, uint64_t lo, uint64_t hi, int place);
/* The mask of the byte at `off`. */
ty__cohmask ty__coh_at(const ty__coh_obj *o, uint64_t off);
/* Places holding any byte of the storage (to know which device copies exist). */
ty__cohmask ty__coh_places(const ty__coh_obj *o);

void ty__coh_copies_reset(ty__coh_copies *c); /* n = 0, totals kept */
void ty__coh_copies_free(ty__coh_copies *c);

/* The byte range a tile touches in its storage: elements `offset` +
 * sum(i[d] * strides[d]) for i in the box `shape`, each `es` bytes.
 * *dense: the range holds no byte the tile does not touch (a write of the
 * tile may then DISCARD). An empty box gives lo == hi. */
void ty__coh_tile_range(int ndim, const int64_t *shape, const int64_t *strides, int64_t offset,
                        size_t es, uint64_t *lo, uint64_t *hi, bool *dense);

#endif /* TY_GPU_COHERENCE_H */
