/*
 * gpu_alloc.c — the caching device allocator of gpu_alloc.h.
 *
 * Invariants (checked by assert in debug builds):
 *  - in_use is the sum of the class sizes of the blocks handed out, cached
 *    the sum over the free lists; in_use + cached is what the device holds
 *    for the pool and never exceeds the budget after an alloc returns;
 *  - a free list holds blocks of its class only, most recently freed first
 *    (their memory is likeliest to be in L2 still, and on the same stream).
 */
#include "alloc.h"
#include "gpu_alloc.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ty__gpu_size_class(size_t bytes, size_t *class_bytes) {
  if (bytes <= TY__GPU_MIN_BLOCK) {
    *class_bytes = TY__GPU_MIN_BLOCK;
    return 0;
  }
  /* bytes in (2^k, 2^(k+1)]: eight steps of 2^(k-3) */
  int k = 63 - __builtin_clzll((unsigned long long)(bytes - 1));
  size_t base = (size_t)1 << k, step = base >> 3;
  size_t j = (bytes - base + step - 1) / step; /* 1..8 */
  *class_bytes = base + j * step;              /* may wrap to 0 only for bytes > 2^63 */
  return (k - 9) * 8 + (int)j;
}

void ty__gpu_pool_init(ty__gpu_pool *p, int dev, const char *name, size_t budget,
                       const ty__dev_ops *ops) {
  memset(p, 0, sizeof *p);
  p->dev = dev;
  snprintf(p->name, sizeof p->name, "%s", name ? name : "GPU");
  p->budget = budget;
  p->ops = *ops;
}

static void give_back(ty__gpu_pool *p, ty__gpu_block *b) {
  if (b->event && p->ops.event_release) p->ops.event_release(p->ops.ud, b->event);
  p->ops.free(p->ops.ud, p->dev, b->ptr, b->bytes);
  p->device_frees++;
  p->cached -= b->bytes;
  free(b);
}

/* Give cached blocks back, largest classes first (one big block frees more
 * room than many small ones), until at most `keep` bytes stay cached. */
void ty__gpu_pool_trim(ty__gpu_pool *p, size_t keep) {
  for (int c = TY__GPU_CLASSES - 1; c >= 0 && p->cached > keep; c--)
    while (p->free_list[c] && p->cached > keep) {
      ty__gpu_block *b = p->free_list[c];
      p->free_list[c] = b->next;
      give_back(p, b);
    }
}

int ty__gpu_pool_destroy(ty__gpu_pool *p) {
  ty__gpu_pool_trim(p, 0);
  assert(p->cached == 0);
  return p->live;
}

static bool ready(const ty__gpu_pool *p, const ty__gpu_block *b, uintptr_t stream) {
  return b->stream == stream || !b->event || !p->ops.event_done ||
         p->ops.event_done(p->ops.ud, b->event);
}

static void human(size_t bytes, char *buf, size_t len) { ty_format_bytes((double)bytes, buf, len); }

static ty_status oom(ty__gpu_pool *p, size_t bytes, const char *what, bool device, char *err,
                     size_t errlen) {
  if (err) {
    char need[32], used[32], budget[32];
    human(bytes, need, sizeof need);
    human(p->in_use, used, sizeof used);
    human(p->budget, budget, sizeof budget);
    if (device)
      snprintf(err, errlen,
               "out of GPU memory on device %d (%s): %s needs %s and the device has no more "
               "(the pool holds %s in %d blocks; other processes may use the rest); set a memory "
               "budget to stream the computation (tycho.parallel{memory = ...}, --stream-memory) "
               "or use fewer or smaller stores",
               p->dev, p->name, what ? what : "an allocation", need, used, p->live);
    else
      snprintf(err, errlen,
               "out of GPU memory on device %d (%s): %s needs %s but %s of the %s pool "
               "(--fbmem) are in use by %d blocks; set a memory budget to stream the "
               "computation (tycho.parallel{memory = ...}, --stream-memory) or raise --fbmem",
               p->dev, p->name, what ? what : "an allocation", need, used, budget, p->live);
  }
  return TY_ENOMEM;
}

ty_status ty__gpu_pool_alloc(ty__gpu_pool *p, size_t bytes, uintptr_t stream, const char *what,
                             ty__gpu_block **out, char *err, size_t errlen) {
  *out = NULL;
  if (bytes == 0) {
    if (err) snprintf(err, errlen, "a GPU allocation of 0 bytes");
    return TY_EINVAL;
  }
  size_t size;
  int cls = ty__gpu_size_class(bytes, &size);
  if (size < bytes || cls >= TY__GPU_CLASSES) return oom(p, bytes, what, false, err, errlen);
  p->allocs++;
  /* a cached block of the class that this stream may use now */
  for (ty__gpu_block **pp = &p->free_list[cls]; *pp; pp = &(*pp)->next) {
    ty__gpu_block *b = *pp;
    if (!ready(p, b, stream)) continue;
    *pp = b->next;
    if (b->event && p->ops.event_release) p->ops.event_release(p->ops.ud, b->event);
    b->event = NULL;
    b->next = NULL;
    b->stream = stream;
    b->asked = bytes;
    p->cached -= size;
    p->in_use += size;
    p->live++;
    p->hits++;
    *out = b;
    return TY_OK;
  }
  if (size > p->budget || p->in_use > p->budget - size) return oom(p, bytes, what, false, err, errlen);
  /* room within the budget: give back cached blocks as needed */
  if (p->in_use + p->cached + size > p->budget) ty__gpu_pool_trim(p, p->budget - p->in_use - size);
  ty__gpu_block *b = ty__calloc(1, sizeof *b);
  if (!b) {
    if (err) snprintf(err, errlen, "out of host memory for a GPU block");
    return TY_ENOMEM;
  }
  int rc = p->ops.alloc(p->ops.ud, p->dev, size, &b->ptr);
  if (rc != 0 && p->cached > 0) { /* the device is fuller than the budget says: free our cache */
    ty__gpu_pool_trim(p, 0);
    rc = p->ops.alloc(p->ops.ud, p->dev, size, &b->ptr);
  }
  if (rc != 0) {
    free(b);
    p->device_failures++;
    return oom(p, bytes, what, true, err, errlen);
  }
  p->device_allocs++;
  b->bytes = size;
  b->asked = bytes;
  b->cls = cls;
  b->stream = stream;
  p->in_use += size;
  p->live++;
  if (p->in_use + p->cached > p->peak) p->peak = p->in_use + p->cached;
  assert(p->in_use + p->cached <= p->budget);
  *out = b;
  return TY_OK;
}

void ty__gpu_pool_free(ty__gpu_pool *p, ty__gpu_block *b, uintptr_t stream, void *event) {
  if (!b) return;
  assert(p->in_use >= b->bytes && p->live > 0);
  p->in_use -= b->bytes;
  p->live--;
  b->stream = stream;
  b->event = event;
  b->next = p->free_list[b->cls];
  p->free_list[b->cls] = b;
  p->cached += b->bytes;
}
