/*
 * store.c — stores, their shared storage, views, and synchronous data in/out.
 *
 * A store is a view (dtype, shape, element strides, offset) of a storage. Views
 * never copy; they share the storage, which is reference counted by its
 * stores. Storage is charged against the memory budget when it is created, so
 * an oversized store fails at the call that makes it, but is only allocated
 * (ty__storage_ensure) when a launch first writes it or a reader needs it:
 * stores that are created and never used cost no memory.
 *
 * Sizes never overflow: every shape a store or a view gets has passed
 * ty__shape_size (its non-zero dims times the element size fit int64), so
 * contiguous strides and element counts computed from it fit too; slice
 * lengths, view offsets and strided steps are checked where they are made
 * (__builtin_*_overflow), and report "<fn>: ... overflows int64".
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void ty__shape_str(int ndim, const int64_t *shape, char *buf, size_t len) {
  size_t n = 0;
  n += (size_t)snprintf(buf + n, len - n, "(");
  for (int d = 0; d < ndim && n < len; d++)
    n += (size_t)snprintf(buf + n, len - n, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (n < len) n += (size_t)snprintf(buf + n, len - n, ndim == 1 ? ",)" : ")");
}

/* ty__shape_size's overflow error, out of line: its text buffer made every
 * store creation (one an operation) save registers and a 256-byte frame. */
__attribute__((noinline)) static ty_status too_large(ty_runtime *rt, const char *what, int ndim,
                                                     const int64_t *shape, ty_dtype t) {
  char sh[256];
  ty__shape_str(ndim, shape, sh, sizeof sh);
  return ty__fail(rt, TY_ERANGE, "%s: shape %s %s is too large: its size in bytes overflows int64",
                  what, sh, ty_dtype_name(t));
}

ty_status ty__shape_size(ty_runtime *rt, const char *what, int ndim, const int64_t *shape,
                         ty_dtype t, int64_t *size) {
  if (ndim < 0 || ndim > TY_MAX_RANK)
    return ty__fail(rt, TY_ELIMIT, "%s: rank %d is out of range 0..%d", what, ndim, TY_MAX_RANK);
  if (ndim > 0 && !shape) return ty__fail(rt, TY_EINVAL, "%s: shape is missing", what);
  if ((unsigned)t >= TY_NDTYPES) return ty__fail(rt, TY_EDTYPE, "%s: unknown dtype %d", what, (int)t);
  for (int d = 0; d < ndim; d++)
    if (shape[d] < 0)
      return ty__fail(rt, TY_EINVAL, "%s: shape[%d] must be non-negative, got %lld", what, d,
                      (long long)shape[d]);
  /* The bytes of the non-zero dims must fit int64: a shape such as
   * (0, 2^62, 2^62) is empty, but its contiguous strides (which skip zero
   * dims) would still overflow, and so would a reshape of it. */
  int64_t n = 1, bytes;
  bool zero = false;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] == 0) zero = true;
    else if (__builtin_mul_overflow(n, shape[d], &n)) goto overflow;
  }
  if (__builtin_mul_overflow(n, (int64_t)ty__dtype_size(t), &bytes)) goto overflow;
  *size = zero ? 0 : n;
  return TY_OK;
overflow:
  return too_large(rt, what, ndim, shape, t);
}

/* C-order strides of a shape ty__shape_size accepted: every partial product
 * of its non-zero dims fits, so nothing here overflows. */
static void contiguous_strides(int ndim, const int64_t *shape, int64_t *strides) {
  int64_t s = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    strides[d] = s;
    s *= shape[d] ? shape[d] : 1;
  }
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NO_POOL 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define NO_POOL 1
#endif
#endif

/* The last record put in pool[*n], or NULL. */
static void *pool_pop(void **pool, int *n) {
#ifndef NO_POOL
  if (*n > 0) return pool[--*n];
#else
  (void)pool;
  (void)n;
#endif
  return NULL;
}

/* A zeroed record of `bytes` from pool[*n] or the allocator. */
static void *pool_get(void **pool, int *n, size_t bytes) {
  void *p = pool_pop(pool, n);
  if (!p) return ty__calloc(1, bytes);
  memset(p, 0, bytes);
  return p;
}

static void pool_put(void **pool, int *n, void *p) {
#ifndef NO_POOL
  if (*n < TY_POOL_SLOTS) {
    pool[(*n)++] = p;
    return;
  }
#else
  (void)pool;
  (void)n;
#endif
  free(p);
}

void ty__store_pools_free(ty_runtime *rt) {
  while (rt->npool_store > 0) free(rt->pool_store[--rt->npool_store]);
  while (rt->npool_storage > 0) free(rt->pool_storage[--rt->npool_storage]);
  while (rt->npool_line > 0) free(rt->pool_line[--rt->npool_line]);
}

static ty_storage *storage_alloc(ty_runtime *rt) {
  return pool_get(rt->pool_storage, &rt->npool_storage, sizeof(ty_storage));
}

static void storage_free(ty_runtime *rt, ty_storage *st) {
  /* nearly always neither: no call to free(NULL) (~12 instructions a store) */
  if (st->cancel_why) free(st->cancel_why);
  st->cancel_why = NULL;
  if (st->split) free(st->split); /* rank-local: freeing never communicates */
  st->split = NULL;
  pool_put(rt->pool_storage, &rt->npool_storage, st);
}

/* In line: a call and its register saves were ~15 instructions of every
 * store made (one an element-wise op). */
__attribute__((always_inline)) static inline ty_store *store_alloc(ty_runtime *rt, ty_storage *st,
                                                                   ty_dtype t, int ndim,
                                                                   const int64_t *shape) {
  /* a recycled record: its head zeroed only (TY_STORE_HEAD, internal.h) */
  ty_store *s = pool_pop(rt->pool_store, &rt->npool_store);
  if (s) memset(s, 0, TY_STORE_HEAD);
  else if (!(s = ty__calloc(1, sizeof *s))) return NULL;
  s->refs = 1;
  s->id = rt->next_store_id++;
  s->rt = rt;
  s->storage = st;
  st->refs++;
  s->dtype = t;
  s->ndim = ndim;
  s->size = 1;
  for (int d = 0; d < ndim; d++) {
    s->shape[d] = shape[d];
    s->size *= shape[d]; /* the caller checked it with ty__shape_size */
  }
  ty__runtime_ref(rt);
  rt->stats.stores_live++;
  return s;
}

/* Charge nbytes against the host budget: false (nothing charged) when they
 * do not fit. */
static bool charge(ty_runtime *rt, size_t nbytes) {
  if (nbytes > rt->cfg.sysmem || rt->reserved > rt->cfg.sysmem - nbytes) return false;
  rt->reserved += nbytes;
  return true;
}

/* The error of a charge that failed; `what`: "a store of shape (4, 5) f64". */
static ty_status over_budget(ty_runtime *rt, size_t nbytes, const char *what) {
  char need[32], budget[32], used[32];
  ty_format_bytes((double)nbytes, need, sizeof need);
  ty_format_bytes((double)rt->cfg.sysmem, budget, sizeof budget);
  ty_format_bytes((double)rt->reserved, used, sizeof used);
  return ty__fail(rt, TY_ENOMEM,
                  "out of memory: %s needs %s; the host memory budget is "
                  "%s with %s in use (raise it with --sysmem, or stream the computation)",
                  what, need, budget, used);
}

/* ty__shape_size's answer for the shapes of nearly every new store (rank 0
 * to 2, no zero dim, bytes that fit int64) in ~15 instructions rather than
 * ~50 (callgrind, bench/workloads/overhead.lua); false sends anything else,
 * errors included, to the general check. */
static bool small_shape_size(int ndim, const int64_t *shape, ty_dtype t, int64_t *size) {
  int64_t n, bytes;
  if ((unsigned)t >= TY_NDTYPES) return false;
  if (ndim == 0) n = 1;
  else if (ndim == 1) n = shape[0];
  else if (ndim == 2) {
    if (shape[0] <= 0 || shape[1] <= 0 || __builtin_mul_overflow(shape[0], shape[1], &n))
      return false;
  } else {
    return false;
  }
  if (n <= 0 || __builtin_mul_overflow(n, (int64_t)ty__dtype_size(t), &bytes)) return false;
  *size = n;
  return true;
}

ty_status ty__store_new(ty_runtime *rt, ty_dtype t, int ndim, const int64_t *shape,
                        ty_store **out) {
  *out = NULL;
  int64_t size;
  if (!small_shape_size(ndim, shape, t, &size)) {
    ty_status st = ty__shape_size(rt, "ty_store_create", ndim, shape, t, &size);
    if (st != TY_OK) return st;
  }
  size_t nbytes = (size_t)size * ty__dtype_size(t);
  /* Charged when allocated (ty__storage_ensure): a store fusion or streaming
   * never allocates never counts against the budget. Refused here only when
   * it cannot fit even alone next to what is allocated now, outside a
   * streamed scope (which may never allocate it whole). */
  const bool streamed = ty__policy_memory_now(rt) > 0;
  if (!streamed && (nbytes > rt->cfg.sysmem || rt->reserved > rt->cfg.sysmem - nbytes)) {
    char what[320], sh[256];
    ty__shape_str(ndim, shape, sh, sizeof sh);
    snprintf(what, sizeof what, "a store of shape %s %s", sh, ty_dtype_name(t));
    return over_budget(rt, nbytes, what);
  }
  ty_storage *stg = storage_alloc(rt);
  ty_store *s = stg ? store_alloc(rt, stg, t, ndim, shape) : NULL;
  if (!s) {
    if (stg) storage_free(rt, stg);
    return ty__fail(rt, TY_ENOMEM, "out of memory allocating a store");
  }
  stg->nbytes = nbytes;
  stg->rt = rt;
  stg->born = rt->window_gen;
  stg->streamed = streamed;
  stg->uncharged = true;
  rt->uncharged += nbytes;
  contiguous_strides(ndim, shape, s->strides);
  *out = s;
  return TY_OK;
}

ty_status ty_store_attach(ty_runtime *rt, ty_dtype t, int ndim, const int64_t *shape, void *data,
                          void (*release)(void *ud), void *ud, ty_store **out) {
  if (!rt || !out) return TY_EINVAL;
  *out = NULL;
  int64_t size;
  ty_status st = ty__shape_size(rt, "ty_store_attach", ndim, shape, t, &size);
  if (st != TY_OK) return st;
  if (!data || ((uintptr_t)data & 7u))
    return ty__fail(rt, TY_EINVAL, "ty_store_attach: data must be a non-NULL, 8-byte aligned pointer");
  ty_storage *stg = ty__calloc(1, sizeof *stg);
  if (!stg) return ty__fail(rt, TY_ENOMEM, "out of memory attaching a buffer");
  stg->nbytes = (size_t)size * ty__dtype_size(t);
  stg->rt = rt;
  stg->data = data;
  stg->external = true;
  stg->release = release;
  stg->release_ud = ud;
  ty_store *s = store_alloc(rt, stg, t, ndim, shape);
  if (!s) {
    free(stg);
    return ty__fail(rt, TY_ENOMEM, "out of memory attaching a buffer");
  }
  contiguous_strides(ndim, shape, s->strides);
  *out = s;
  return TY_OK;
}

ty_status ty_store_create(ty_runtime *rt, ty_dtype t, int ndim, const int64_t *shape,
                          ty_store **out) {
  if (!rt || !out) return TY_EINVAL;
  return ty__store_new(rt, t, ndim, shape, out);
}

ty_status ty__store_view(ty_runtime *rt, ty_store *base, int ndim, const int64_t *shape,
                         const int64_t *strides, int64_t offset, ty_store **out) {
  *out = NULL;
  int64_t size;
  if (!small_shape_size(ndim, shape, base->dtype, &size)) { /* the ~120 views of a CG iteration: fast */
    ty_status st = ty__shape_size(rt, "view", ndim, shape, base->dtype, &size);
    if (st != TY_OK) return st;
  }
  ty_store *s = store_alloc(rt, base->storage, base->dtype, ndim, shape);
  if (!s) return ty__fail(rt, TY_ENOMEM, "out of memory allocating a view");
  for (int d = 0; d < ndim; d++) s->strides[d] = strides[d];
  s->offset = offset;
  *out = s;
  return TY_OK;
}

/* Blocks of 4 MiB and more are 2 MiB aligned and advised as huge pages
 * (transparent huge pages are "madvise" on Debian): 512x fewer page faults
 * on first touch. Freed blocks of 4 KiB and more are cached for reuse, up to
 * an eighth of the budget (4 GiB at most: a loop making a fresh 1.3 GB output
 * each time, `a = b + 3*c` over 160M f64, reuses the last one instead of
 * faulting its pages in again), and reused by exact size. */
#define TY_HUGE_MIN ((size_t)4 << 20)
#define TY_HUGE_ALIGN ((size_t)2 << 20)
#define TY_CACHE_MIN ((size_t)4 << 10)

static size_t block_bytes(size_t nbytes) {
  size_t a = nbytes >= TY_HUGE_MIN ? TY_HUGE_ALIGN : TY_ALIGN;
  size_t b = (nbytes + a - 1) / a * a;
  return b ? b : TY_ALIGN;
}

static size_t cache_cap(const ty_runtime *rt) {
  size_t cap = rt->cfg.sysmem / 8;
  return cap < ((size_t)4 << 30) ? cap : ((size_t)4 << 30);
}

void ty__cache_drop(ty_runtime *rt) {
  for (int i = 0; i < rt->ncache; i++) free(rt->cache[i].p);
  rt->ncache = 0;
  rt->cached = 0;
}

static void *block_alloc(ty_runtime *rt, size_t bytes) {
  /* a Lua number next to a store is a 0-d store: one line, every few ops */
  void *line = bytes == TY_ALIGN ? pool_pop(rt->pool_line, &rt->npool_line) : NULL;
  if (line) return line;
  for (int i = rt->ncache - 1; i >= 0; i--)
    if (rt->cache[i].bytes == bytes) {
      void *p = rt->cache[i].p;
      rt->cached -= bytes;
      rt->cache[i] = rt->cache[--rt->ncache];
      return p;
    }
  size_t align = bytes >= TY_HUGE_MIN ? TY_HUGE_ALIGN : TY_ALIGN;
  void *p = ty__aligned_alloc(align, bytes);
  if (!p && rt->ncache) { /* the cache may hold what the system lacks */
    ty__cache_drop(rt);
    p = ty__aligned_alloc(align, bytes);
  }
#ifdef MADV_HUGEPAGE
  if (p && bytes >= TY_HUGE_MIN) madvise(p, bytes, MADV_HUGEPAGE);
#endif
  return p;
}

static void block_free(ty_runtime *rt, void *p, size_t bytes) {
  if (!p) return;
  if (bytes == TY_ALIGN) {
    pool_put(rt->pool_line, &rt->npool_line, p);
    return;
  }
  if (bytes >= TY_CACHE_MIN && bytes <= cache_cap(rt)) {
    while (rt->ncache > 0 && (rt->ncache == TY_CACHE_SLOTS || rt->cached + bytes > cache_cap(rt))) {
      rt->cached -= rt->cache[0].bytes; /* evict the oldest */
      free(rt->cache[0].p);
      memmove(&rt->cache[0], &rt->cache[1], (size_t)(--rt->ncache) * sizeof rt->cache[0]);
    }
    rt->cache[rt->ncache].bytes = bytes;
    rt->cache[rt->ncache++].p = p;
    rt->cached += bytes;
    return;
  }
  free(p);
}

/* Computed when asked (by a flush hook, before fusion: the window is whole),
 * so flushes without a hook pay nothing. */
bool ty_flush_pressure(const ty_runtime *rt) {
  if (!rt) return false;
  /* nothing uncharged can be too much: no walk (~36 instructions a launch) */
  if (rt->uncharged <= rt->cfg.sysmem && rt->reserved <= rt->cfg.sysmem - rt->uncharged) return false;
  size_t pending = 0; /* a storage written twice counts twice: at worst one more collection */
  for (int i = 0; i < rt->nwindow; i++) {
    const ty_pending *l = rt->window[i];
    for (int j = 0; j < l->nargs; j++) {
      const ty_storage *st = l->args[j].store->storage;
      if (l->args[j].priv != TY_PRIV_IN && !st->data && st->uncharged) pending += st->nbytes;
    }
  }
  return pending > rt->cfg.sysmem || rt->reserved > rt->cfg.sysmem - pending;
}

ty_status ty__storage_ensure(ty_runtime *rt, ty_storage *st, bool zero) {
  if (st->data) return TY_OK;
  if (st->uncharged) {
    if (!charge(rt, st->nbytes)) return over_budget(rt, st->nbytes, "a store being written");
    st->uncharged = false;
    rt->uncharged -= st->nbytes;
  }
  size_t bytes = block_bytes(st->nbytes);
  void *p = block_alloc(rt, bytes);
  if (!p) {
    char need[32];
    ty_format_bytes((double)st->nbytes, need, sizeof need);
    return ty__fail(rt, TY_ENOMEM, "out of memory: the system refused %s for a store", need);
  }
  /* A storage a GPU tracks needs no zeros: its coherence (gpu_coherence.c)
   * zero-fills the bytes never written anywhere when the host acquires them,
   * and every host access acquires first. Skipping the memset matters: it
   * was a pass over the whole host buffer (~0.1 s a GB) at the first host
   * read of a store a GPU made, even of one element. Debug builds poison the
   * buffer instead, so that a host access that skips the acquire reads
   * NaNs in the tests (gpu-sim). */
  if (zero && !st->gpu) memset(p, 0, bytes);
#ifndef NDEBUG
  else if (zero)
    memset(p, 0xff, bytes);
#endif
  st->data = p;
  rt->live += st->nbytes;
  rt->stats.bytes_allocated += st->nbytes;
  if (rt->live > rt->stats.bytes_peak) rt->stats.bytes_peak = rt->live;
  return TY_OK;
}

void ty__storage_lend(ty_runtime *rt, ty_storage *from, ty_storage *to) {
  to->data = from->data;
  from->lent = true;
  if (to->uncharged) rt->uncharged -= to->nbytes;
  if (!from->uncharged) rt->uncharged += from->nbytes;
  to->uncharged = false; /* the budget's charge goes with the block */
  from->uncharged = true;
  rt->stats.bytes_in_place += to->nbytes;
}

void *ty__storage_second(ty_runtime *rt, const ty_storage *st) {
  const size_t bytes = block_bytes(st->nbytes);
  if (bytes < TY_CACHE_MIN || bytes > cache_cap(rt) || !charge(rt, st->nbytes)) return NULL;
  void *p = block_alloc(rt, bytes);
  if (!p) {
    rt->reserved -= st->nbytes;
    return NULL;
  }
  rt->live += st->nbytes;
  if (rt->live > rt->stats.bytes_peak) rt->stats.bytes_peak = rt->live;
  return p;
}

void ty__storage_take(ty_runtime *rt, ty_storage *st, void *block, bool keep) {
  if (keep) {
    void *old = st->data;
    st->data = block;
    block = old;
  }
  block_free(rt, block, block_bytes(st->nbytes));
  rt->reserved -= st->nbytes;
  rt->live -= st->nbytes;
}

/* Byte range [lo, hi) of the view in its storage; empty views give lo == hi. */
static void byte_range(const ty_store *s, int64_t *lo, int64_t *hi) {
  const int64_t es = (int64_t)ty__dtype_size(s->dtype);
  int64_t a = s->offset, b = s->offset;
  for (int d = 0; d < s->ndim; d++) {
    if (s->shape[d] == 0) {
      *lo = *hi = 0;
      return;
    }
    int64_t ext = (s->shape[d] - 1) * s->strides[d];
    if (ext > 0) b += ext;
    else a += ext;
  }
  *lo = a * es;
  *hi = (b + 1) * es;
}

bool ty__store_overlap(const ty_store *a, const ty_store *b) {
  if (a->storage != b->storage) return false;
  int64_t alo, ahi, blo, bhi;
  byte_range(a, &alo, &ahi);
  byte_range(b, &blo, &bhi);
  return alo < ahi && blo < bhi && alo < bhi && blo < ahi;
}

bool ty__same_view(const ty_store *a, const ty_store *b) {
  if (a == b) return true;
  if (a->storage != b->storage || a->ndim != b->ndim || a->offset != b->offset ||
      a->dtype != b->dtype)
    return false;
  /* a dim of extent 1 addresses one element whatever its stride */
  for (int k = 0; k < a->ndim; k++)
    if (a->shape[k] != b->shape[k] || (a->shape[k] > 1 && a->strides[k] != b->strides[k]))
      return false;
  return true;
}

void ty__cancel_storage(ty_storage *stg, ty_status cause, const char *why) {
  if (stg->cancelled) return; /* the first cause is the one named */
  stg->cancelled = true;
  stg->cancel_status = cause ? cause : TY_ETASK;
  free(stg->cancel_why);
  stg->cancel_why = why && *why ? ty__strdup(why) : NULL;
}

ty_status ty__unavailable(ty_runtime *rt, const char *fn, const ty_storage *stg) {
  const char *why = stg->cancel_why ? stg->cancel_why : "the launch producing it did not run";
  ty_status st = stg->cancel_status ? stg->cancel_status : TY_ETASK;
  if (fn) return ty__fail(rt, st, "%s: the value is unavailable: %s", fn, why);
  return ty__fail(rt, st, "the value is unavailable: %s", why);
}

static void storage_release(ty_storage *st) {
  if (--st->refs > 0) return;
  ty_runtime *rt = st->rt;
  if (st->gpu && rt->devices) rt->devices->forget(rt, st); /* an attached buffer gets its values first */
  if (st->external) {
    if (st->release) st->release(st->release_ud);
    storage_free(rt, st);
    return;
  }
  if (!st->uncharged) rt->reserved -= st->nbytes;
  else rt->uncharged -= st->nbytes;
  if (st->lent) { /* its block and its bytes live are another storage's now */
    storage_free(rt, st);
    return;
  }
  if (st->data) { /* a fused temporary never had a block: no block size to work out */
    rt->live -= st->nbytes;
    rt->stats.bytes_freed += st->nbytes;
    block_free(rt, st->data, block_bytes(st->nbytes));
  }
  storage_free(rt, st);
}

void ty_store_retain(ty_store *s) { ty__store_retain(s); }

/* The last reference's work, out of line: a launch path releases ~12
 * references an operation, nearly all of them not the last, and with this
 * inline the test-and-decrement paid the register saves of the rest. */
__attribute__((noinline)) void ty__store_free(ty_store *s) {
  ty_runtime *rt = s->rt;
  ty__store_release(s->bview);
  storage_release(s->storage);
  rt->stats.stores_live--;
  pool_put(rt->pool_store, &rt->npool_store, s); /* freed with the runtime at the latest */
  ty__runtime_unref(rt);
}

void ty_store_release(ty_store *s) { ty__store_release(s); }

char *ty__store_base(const ty_store *s) {
  return (char *)s->storage->data + s->offset * (int64_t)ty__dtype_size(s->dtype);
}

ty_dtype ty_store_dtype(const ty_store *s) { return s->dtype; }
int ty_store_ndim(const ty_store *s) { return s->ndim; }
const int64_t *ty_store_shape(const ty_store *s) { return s->shape; }
const int64_t *ty_store_strides(const ty_store *s) { return s->strides; }
int64_t ty_store_size(const ty_store *s) { return s->size; }
uint64_t ty_store_id(const ty_store *s) { return s->id; }
bool ty_store_same_storage(const ty_store *a, const ty_store *b) {
  return a->storage == b->storage;
}

bool ty_store_is_contiguous(const ty_store *s) {
  if (s->size == 0) return true;
  int64_t expect = 1;
  for (int d = s->ndim - 1; d >= 0; d--) {
    if (s->shape[d] == 1) continue;
    if (s->strides[d] != expect) return false;
    expect *= s->shape[d];
  }
  return true;
}

/* ---- views ---------------------------------------------------------------- */

static ty_status check_dim(ty_runtime *rt, const char *fn, const ty_store *s, int dim) {
  if (dim < 0 || dim >= s->ndim)
    return ty__fail(rt, TY_ERANGE, "%s: dim %d is out of range for a store of rank %d", fn, dim,
                    s->ndim);
  return TY_OK;
}

/* The one error of an offset or stride that overflows int64. */
static ty_status overflow(ty_runtime *rt, const char *fn, const char *what) {
  return ty__fail(rt, TY_ERANGE, "%s: %s overflows int64", fn, what);
}

/* s's offset moved to `index` along dim, overflow-checked. */
static ty_status view_offset(ty_runtime *rt, const char *fn, const ty_store *s, int dim,
                             int64_t index, int64_t *off) {
  int64_t step;
  if (__builtin_mul_overflow(index, s->strides[dim], &step) ||
      __builtin_add_overflow(s->offset, step, off))
    return overflow(rt, fn, "the offset of the view");
  return TY_OK;
}

ty_status ty_store_slice(ty_runtime *rt, ty_store *s, int dim, int64_t start, int64_t stop,
                         int64_t step, ty_store **out) {
  ty_status st = check_dim(rt, "ty_store_slice", s, dim);
  if (st) return st;
  if (step < 1) return ty__fail(rt, TY_EINVAL, "ty_store_slice: step must be >= 1, got %lld", (long long)step);
  if (start < 0 || stop < start || stop > s->shape[dim])
    return ty__fail(rt, TY_ERANGE,
                    "ty_store_slice: range [%lld, %lld) is out of bounds for dim %d of size %lld",
                    (long long)start, (long long)stop, dim, (long long)s->shape[dim]);
  int64_t shape[TY_MAX_RANK], strides[TY_MAX_RANK];
  memcpy(shape, s->shape, sizeof shape);
  memcpy(strides, s->strides, sizeof strides);
  /* numpy's count: x[0:6:huge] has one element. (stop - start + step - 1)
   * would overflow for a step near INT64_MAX. */
  shape[dim] = stop == start ? 0 : (stop - start - 1) / step + 1;
  /* With one element or none the step is never taken: keep the stride, which
   * step * stride might not hold. With two or more, step < stop - start <=
   * the dim's extent, and the product is checked all the same. */
  if (shape[dim] > 1 && __builtin_mul_overflow(s->strides[dim], step, &strides[dim]))
    return overflow(rt, "ty_store_slice", "the stride of the view");
  int64_t off = 0;
  if ((st = view_offset(rt, "ty_store_slice", s, dim, start, &off))) return st;
  return ty__store_view(rt, s, s->ndim, shape, strides, off, out);
}

ty_status ty_store_select(ty_runtime *rt, ty_store *s, int dim, int64_t index, ty_store **out) {
  ty_status st = check_dim(rt, "ty_store_select", s, dim);
  if (st) return st;
  if (index < 0 || index >= s->shape[dim])
    return ty__fail(rt, TY_ERANGE, "ty_store_select: index %lld is out of bounds for dim %d of size %lld",
                    (long long)index, dim, (long long)s->shape[dim]);
  int64_t shape[TY_MAX_RANK], strides[TY_MAX_RANK];
  int n = 0;
  for (int d = 0; d < s->ndim; d++)
    if (d != dim) {
      shape[n] = s->shape[d];
      strides[n++] = s->strides[d];
    }
  int64_t off = 0;
  if ((st = view_offset(rt, "ty_store_select", s, dim, index, &off))) return st;
  return ty__store_view(rt, s, n, shape, strides, off, out);
}

ty_status ty_store_expand(ty_runtime *rt, ty_store *s, int dim, ty_store **out) {
  if (dim < 0 || dim > s->ndim)
    return ty__fail(rt, TY_ERANGE, "ty_store_expand: position %d is out of range 0..%d", dim, s->ndim);
  if (s->ndim >= TY_MAX_RANK)
    return ty__fail(rt, TY_ELIMIT, "ty_store_expand: a store of rank %d cannot grow (limit %d)",
                    s->ndim, TY_MAX_RANK);
  int64_t shape[TY_MAX_RANK], strides[TY_MAX_RANK];
  int n = 0;
  for (int d = 0; d <= s->ndim; d++) {
    if (d == dim) {
      shape[n] = 1;
      strides[n++] = 0;
    }
    if (d < s->ndim) {
      shape[n] = s->shape[d];
      strides[n++] = s->strides[d];
    }
  }
  return ty__store_view(rt, s, n, shape, strides, s->offset, out);
}

ty_status ty_store_transpose(ty_runtime *rt, ty_store *s, int d1, int d2, ty_store **out) {
  ty_status st = check_dim(rt, "ty_store_transpose", s, d1);
  if (!st) st = check_dim(rt, "ty_store_transpose", s, d2);
  if (st) return st;
  int64_t shape[TY_MAX_RANK], strides[TY_MAX_RANK];
  memcpy(shape, s->shape, sizeof shape);
  memcpy(strides, s->strides, sizeof strides);
  shape[d1] = s->shape[d2];
  shape[d2] = s->shape[d1];
  strides[d1] = s->strides[d2];
  strides[d2] = s->strides[d1];
  return ty__store_view(rt, s, s->ndim, shape, strides, s->offset, out);
}

ty_status ty_store_diagonal(ty_runtime *rt, ty_store *s, ty_store **out) {
  if (s->ndim != 2)
    return ty__fail(rt, TY_ESHAPE, "ty_store_diagonal: the store has rank %d, not 2", s->ndim);
  int64_t n = s->shape[0] < s->shape[1] ? s->shape[0] : s->shape[1];
  int64_t stride;
  if (__builtin_add_overflow(s->strides[0], s->strides[1], &stride))
    return overflow(rt, "ty_store_diagonal", "the stride of the view");
  return ty__store_view(rt, s, 1, &n, &stride, s->offset, out);
}

ty_status ty_store_reshape(ty_runtime *rt, ty_store *s, int ndim, const int64_t *shape,
                           ty_store **out) {
  if (ndim < 0 || ndim > TY_MAX_RANK)
    return ty__fail(rt, TY_ELIMIT, "ty_store_reshape: rank %d is out of range 0..%d", ndim, TY_MAX_RANK);
  int64_t sh[TY_MAX_RANK];
  int infer = -1;
  for (int d = 0; d < ndim; d++) {
    sh[d] = shape[d];
    if (shape[d] == -1) {
      if (infer >= 0) return ty__fail(rt, TY_EINVAL, "ty_store_reshape: only one dim may be -1");
      infer = d;
    } else if (shape[d] < 0) {
      return ty__fail(rt, TY_EINVAL, "ty_store_reshape: shape[%d] must be non-negative, got %lld",
                      d, (long long)shape[d]);
    }
  }
  /* The new shape must be one a store could have, zero dims or not: (0, 2^62,
   * 2^62) holds no element, but its strides would overflow. With a -1, the
   * known dims are checked first (as if it were 1), then the whole shape. */
  if (infer >= 0) sh[infer] = 1;
  int64_t known;
  ty_status st = ty__shape_size(rt, "ty_store_reshape", ndim, sh, s->dtype, &known);
  if (st != TY_OK) return st;
  if (infer >= 0) {
    if (known == 0 || s->size % known)
      return ty__fail(rt, TY_ESHAPE, "ty_store_reshape: cannot infer dim %d: %lld elements do not divide by %lld",
                      infer, (long long)s->size, (long long)known);
    sh[infer] = s->size / known;
    if ((st = ty__shape_size(rt, "ty_store_reshape", ndim, sh, s->dtype, &known))) return st;
  }
  if (known != s->size) {
    char a[256], b[256];
    ty__shape_str(s->ndim, s->shape, a, sizeof a);
    ty__shape_str(ndim, sh, b, sizeof b);
    return ty__fail(rt, TY_ESHAPE, "ty_store_reshape: cannot reshape %s (%lld elements) into %s",
                    a, (long long)s->size, b);
  }
  if (!ty_store_is_contiguous(s))
    return ty__fail(rt, TY_EINVAL, "ty_store_reshape: the store is not contiguous (copy it first)");
  int64_t strides[TY_MAX_RANK];
  contiguous_strides(ndim, sh, strides);
  return ty__store_view(rt, s, ndim, sh, strides, s->offset, out);
}

ty_status ty_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                              int64_t *out) {
  int n = na > nb ? na : nb;
  if (n > TY_MAX_RANK) return TY_ELIMIT;
  for (int i = 0; i < n; i++) {
    int ia = na - n + i, ib = nb - n + i;
    int64_t ea = ia >= 0 ? a[ia] : 1, eb = ib >= 0 ? b[ib] : 1;
    if (ea == eb || eb == 1)
      out[i] = ea;
    else if (ea == 1)
      out[i] = eb;
    else
      return TY_ESHAPE;
  }
  *nout = n;
  return TY_OK;
}

ty_status ty_store_broadcast(ty_runtime *rt, ty_store *s, int ndim, const int64_t *shape,
                             ty_store **out) {
  if (ndim < s->ndim || ndim > TY_MAX_RANK) goto bad;
  int64_t size;
  ty_status st = ty__shape_size(rt, "ty_store_broadcast", ndim, shape, s->dtype, &size);
  if (st != TY_OK) return st;
  int64_t strides[TY_MAX_RANK];
  for (int i = 0; i < ndim; i++) {
    int j = s->ndim - ndim + i;
    if (j < 0) {
      strides[i] = 0;
    } else if (s->shape[j] == shape[i]) {
      strides[i] = s->strides[j];
    } else if (s->shape[j] == 1) {
      strides[i] = 0;
    } else {
      goto bad;
    }
  }
  return ty__store_view(rt, s, ndim, shape, strides, s->offset, out);
bad:;
  char a[256], b[256];
  ty__shape_str(s->ndim, s->shape, a, sizeof a);
  ty__shape_str(ndim, shape, b, sizeof b);
  return ty__fail(rt, TY_ESHAPE, "cannot broadcast shape %s to %s", a, b);
}

/* ---- data in and out ---------------------------------------------------------- */

/* Dense C-order copy of a strided store, by runs along the last dim. */
void ty__gather(const ty_store *s, void *dst) {
  size_t es = ty__dtype_size(s->dtype);
  if (s->size == 0) return;
  const char *base = ty__store_base(s);
  char *out = dst;
  if (s->ndim == 0) {
    memcpy(out, base, es);
    return;
  }
  int last = s->ndim - 1;
  int64_t idx[TY_MAX_RANK] = {0};
  int64_t n = s->shape[last], stride = s->strides[last];
  for (;;) {
    const char *p = base;
    for (int d = 0; d < last; d++) p += idx[d] * s->strides[d] * (int64_t)es;
    if (stride == 1) {
      memcpy(out, p, (size_t)n * es);
    } else {
      for (int64_t i = 0; i < n; i++) memcpy(out + i * (int64_t)es, p + i * stride * (int64_t)es, es);
    }
    out += n * (int64_t)es;
    int d = last - 1;
    while (d >= 0 && ++idx[d] == s->shape[d]) idx[d--] = 0;
    if (d < 0) break;
  }
}

ty_status ty_store_from_buffer(ty_runtime *rt, ty_dtype t, int ndim, const int64_t *shape,
                               const void *data, ty_store **out) {
  ty_store *s;
  ty_status st = ty__store_new(rt, t, ndim, shape, &s);
  if (st) return st;
  st = ty__storage_ensure(rt, s->storage, false);
  if (st) {
    ty_store_release(s);
    return st;
  }
  size_t bytes = (size_t)s->size * ty__dtype_size(t);
  if (bytes) memcpy(s->storage->data, data, bytes);
  if (t == TY_BOOL) {
    uint8_t *b = s->storage->data;
    for (int64_t i = 0; i < s->size; i++) b[i] = b[i] != 0;
  }
  *out = s;
  return TY_OK;
}

static ty_status scalar_new(ty_runtime *rt, ty_dtype t, ty_store **out) {
  ty_store *s;
  ty_status st = ty__store_new(rt, t, 0, NULL, &s);
  if (st) return st;
  st = ty__storage_ensure(rt, s->storage, true);
  if (st) {
    ty_store_release(s);
    return st;
  }
  *out = s;
  return TY_OK;
}

ty_status ty_scalar_f64(ty_runtime *rt, ty_dtype t, double v, ty_store **out) {
  ty_status st = scalar_new(rt, t, out);
  if (!st) {
    ty__store_f64((*out)->storage->data, t, v);
    ty__range_scalar(*out);
  }
  return st;
}

ty_status ty_scalar_i64(ty_runtime *rt, ty_dtype t, int64_t v, ty_store **out) {
  ty_status st = scalar_new(rt, t, out);
  if (!st) {
    ty__store_i64((*out)->storage->data, t, v);
    ty__range_scalar(*out);
  }
  return st;
}


void ty__tile_range(int ndim, const int64_t *shape, const int64_t *strides, int64_t offset, size_t es,
                     uint64_t *lo, uint64_t *hi, bool *dense) {
  int64_t mn = offset, mx = offset;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] == 0) {
      *lo = *hi = (uint64_t)offset * es;
      *dense = true;
      return;
    }
    int64_t reach = strides[d] * (shape[d] - 1);
    if (reach < 0) mn += reach;
    else mx += reach;
  }
  *lo = (uint64_t)mn * es;
  *hi = (uint64_t)(mx + 1) * es;
  /* dense: the distinct elements touched fill [mn, mx]. Sort the dims that
   * move (extent > 1, stride != 0) by |stride|; they tile the range without
   * gaps when each stride equals the product of the extents below it. */
  int64_t st[TY_MAX_RANK], ex[TY_MAX_RANK];
  int m = 0;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] == 1 || strides[d] == 0) continue;
    st[m] = strides[d] < 0 ? -strides[d] : strides[d];
    ex[m++] = shape[d];
  }
  for (int i = 1; i < m; i++) /* insertion sort: m <= 16 */
    for (int j = i; j > 0 && st[j] < st[j - 1]; j--) {
      int64_t t = st[j];
      st[j] = st[j - 1];
      st[j - 1] = t;
      t = ex[j];
      ex[j] = ex[j - 1];
      ex[j - 1] = t;
    }
  int64_t expect = 1;
  bool ok = true;
  for (int i = 0; i < m && ok; i++) {
    ok = st[i] == expect;
    expect *= ex[i];
  }
  *dense = ok;
}

void ty__store_range(const ty_store *s, uint64_t *lo, uint64_t *hi, bool *dense) {
  ty__tile_range(s->ndim, s->shape, s->strides, s->offset, ty__dtype_size(s->dtype), lo, hi, dense);
}

