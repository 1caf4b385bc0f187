/*
 * gpu_alloc.h — a caching allocator of device memory, one pool per GPU.
 *
 * cuMemAlloc costs 10-100 us and cuMemFree synchronises the device, so
 * array programs, which allocate the same sizes every iteration, keep freed
 * blocks for reuse. Sizes are rounded up to classes (8 per power of two
 * above 512 bytes: at most 12.5% waste) and a freed block goes to its
 * class's free list. The pool's budget (--fbmem) bounds the bytes it holds
 * from the device, in use plus cached: when a new block would exceed it,
 * cached blocks are given back first; when blocks in use alone exceed it,
 * the allocation fails with a message that names the store and suggests
 * streaming.
 *
 * Streams: a block freed while kernels on its stream may still use it is
 * reusable at once on that stream (stream order protects it) and on other
 * streams only once the event recorded at the free has completed.
 *
 * The device is behind function pointers (ty__dev_ops), so this logic is
 * unit-tested with a fake device on the CPU; gpu_kernels.c supplies the
 * CUDA ones. The driving thread owns the pools (no locks).
 */
#ifndef TY_GPU_ALLOC_H
#define TY_GPU_ALLOC_H

#include "tycho/tycho.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TY__GPU_MIN_BLOCK 512
#define TY__GPU_CLASSES 448 /* 512 B, then 8 classes per octave up to 2^64 */

typedef struct ty__dev_ops {
  void *ud;
  /* 0 and *ptr set, or non-zero when the device has no memory left */
  int (*alloc)(void *ud, int dev, size_t bytes, uint64_t *ptr);
  void (*free)(void *ud, int dev, uint64_t ptr, size_t bytes);
  /* Whether the work recorded in `event` has completed (NULL ops: always). */
  bool (*event_done)(void *ud, void *event);
  void (*event_release)(void *ud, void *event); /* may be NULL */
} ty__dev_ops;

typedef struct ty__gpu_block {
  uint64_t ptr;
  size_t bytes;     /* the class size, what the pool holds for it */
  size_t asked;     /* what the caller asked for */
  int cls;
  uintptr_t stream; /* the stream that used it last */
  void *event;      /* set at free: pending work of `stream` on it (NULL: none) */
  struct ty__gpu_block *next;
} ty__gpu_block;

typedef struct ty__gpu_pool {
  int dev;
  char name[128];  /* the device, for messages */
  size_t budget;
  size_t in_use;   /* bytes of blocks handed out (class sizes) */
  size_t cached;   /* bytes of free blocks kept */
  size_t peak;     /* highest in_use + cached */
  int live;        /* blocks handed out */
  uint64_t allocs, hits, device_allocs, device_frees, device_failures;
  ty__dev_ops ops;
  ty__gpu_block *free_list[TY__GPU_CLASSES];
} ty__gpu_pool;

/* The class of a request and its size in bytes. */
int ty__gpu_size_class(size_t bytes, size_t *class_bytes);

void ty__gpu_pool_init(ty__gpu_pool *p, int dev, const char *name, size_t budget,
                       const ty__dev_ops *ops);
/* Gives every cached block back; blocks still in use are the caller's leak
 * (returned: how many). */
int ty__gpu_pool_destroy(ty__gpu_pool *p);

/* A block of at least `bytes` for use on `stream`. `what` names what it is
 * for ("store #12 (4096, 4096) f64"), for the out-of-memory message.
 * TY_ENOMEM with a message in err; TY_EINVAL for 0 bytes. */
ty_status ty__gpu_pool_alloc(ty__gpu_pool *p, size_t bytes, uintptr_t stream, const char *what,
                             ty__gpu_block **out, char *err, size_t errlen);
/* Return a block: `event` (may be NULL) completes when the work queued on
 * `stream` up to now, which may use the block, has run; the pool owns it
 * from here (event_release). */
void ty__gpu_pool_free(ty__gpu_pool *p, ty__gpu_block *b, uintptr_t stream, void *event);
/* Give cached blocks back to the device until at most `keep` bytes stay. */
void ty__gpu_pool_trim(ty__gpu_pool *p, size_t keep);

#endif /* TY_GPU_ALLOC_H */
