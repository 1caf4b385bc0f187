/*
 * lheap.c — the allocator of the Lua states tycho makes (ty_lua_newstate:
 * the `tycho` shell's and ty_lua_open's), and how their store userdata are
 * released without a finalizer.
 *
 * Three jobs, one lua_Alloc (heap_alloc, its ud a tl_heap):
 *  1. fault injection: growth consults the core's injector (as Lua's own
 *     test allocator does), so Lua's allocations and the core's share one
 *     count (docs/reliability.md);
 *  2. small blocks: freed blocks of up to 256 bytes are kept in per-size
 *     lists for the next allocations ("Lua's small blocks" below);
 *  3. stores without __gc. A finalizer costs a Lua 5.4 object ~700
 *     instructions over its life (callgrind of bench/workloads/overhead.lua,
 *     docs/internals.md session 12): lua_setmetatable moves the object to
 *     the list of finalizable objects (~125), the collection calls it
 *     (GCTM's look-up and protected call, ~300) and marks and sweeps it a
 *     second time (~250), against ~3,900 for the whole of an operation
 *     such as `x * 0.999`. In a state whose allocator is this one the store
 *     metatable has no __gc: every store userdata's block is recorded in a
 *     set of addresses (the slot set) when it is made (tl_heap_adopt), and
 *     when Lua frees a block of a store userdata's size that the set holds,
 *     the allocator releases the store in it. Lua frees a userdata's block
 *     only once nothing can reach it (no finalizer can resurrect it), with
 *     its payload as the binding left it.
 *
 * The block's layout (its size and where the payload sits in it, Lua's
 * private Udata header) is measured at bind time, not assumed: a probe
 * userdata of a store's size is made and the block Lua allocates for it is
 * noted (lua_Alloc's contract: an allocation for a new userdata has ptr ==
 * NULL and osize == LUA_TUSERDATA). If the payload does not lie in that
 * block, or the state's allocator is not this one (stock lua5.4 with
 * `require "tycho"`, a host's own state), the binding keeps the __gc
 * metamethod, as before.
 *
 * Invariants:
 *  - The set holds exactly the blocks of the live store userdata made in
 *    this state since it was bound without __gc. It holds addresses, not
 *    contents: no other block, whatever its bytes (a string of the same
 *    size), is ever taken for a store.
 *  - A store is released once: when its block is freed (and taken out of
 *    the set first), or earlier by __close or tl_heap_unbind, which leave
 *    NULL in the slot.
 *  - The release runs inside Lua's collector or lua_close; ty_store_release
 *    is plain C and never calls Lua (the core never does).
 *  - lua_close runs every finalizer before it frees any object: the runtime
 *    box's (tycho_lua.c's box_gc) releases the stores left while the
 *    runtime is still there (tl_heap_unbind), and the sentinel's, which is
 *    older and runs after it, ends the lists and puts the plain allocator
 *    back (retire); the blocks freed after that go to free().
 *  - A sentinel collected early (a script that took it out of the
 *    registry) ends the lists only; the heap stays the state's allocator
 *    until the binding is unbound, since the set must see the blocks freed.
 */
#include "tl.h"
#include "tycho_lua.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Defined by the core (runtime/src/core/alloc.c): counts one allocation and says
 * whether the injector wants it to fail, and whether it counts at all (false:
 * ty__alloc_should_fail is false and changes nothing). The internal symbols
 * the binding uses, so that Lua's allocations and the core's share one count. */
bool ty__alloc_should_fail(void);
extern atomic_bool ty__alloc_counting;

static bool lua_counts = true; /* TYCHO_FAIL_ALLOC_LUA=0: the core's allocations only */

/* lauxlib's l_alloc (realloc/free, so blocks move freely between the two)
 * with the injector consulted on growth. Lua answers a failure with an
 * emergency collection and one retry, then "not enough memory". The
 * allocator of a state whose heap could not be made, and after retire. */
static void *fault_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  if (lua_counts && (ptr == NULL || nsize > osize) && ty__alloc_should_fail()) return NULL;
  return realloc(ptr, nsize);
}

/* ---- Lua's small blocks ----------------------------------------------------------------
 *
 * The main state's allocator keeps freed blocks of up to LB_MAX bytes in
 * per-size lists (16-byte classes) and hands them out again before asking
 * malloc. Why: Lua frees in bursts (a collection sweeps hundreds of
 * temporaries' userdata and index tables at once) and glibc's per-thread
 * cache holds 7 blocks a size, so the rest went through _int_free and came
 * back through _int_malloc: CG at 256^2 made ~90 Lua allocations and ~100
 * frees an iteration at ~350 instructions each (~45k of ~1,333k).
 *
 * Invariants: a list of class c holds malloc blocks whose usable size
 * (malloc_usable_size) is at least LB_STEP * (c + 1), so a block taken from
 * it holds any size of its class, and free() and realloc() stay valid on
 * every block. A block is filed by its usable size, not by Lua's size:
 * blocks Lua made before this allocator was installed (luaL_newstate's) are
 * malloc blocks of their exact size. A list holds at most LB_KEEP blocks
 * (LB_KEEP * 2,176 bytes = 2.1 MiB over the 16 classes, at most).
 * Shrinking never fails (Lua assumes it cannot). Sanitizer builds keep no
 * blocks, so that a use after free is seen; nor do C libraries other than
 * glibc. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || !defined(__GLIBC__)
#define LB_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LB_OFF 1
#endif
#endif

#ifndef LB_OFF
#include <malloc.h> /* malloc_usable_size */
#endif

enum { LB_STEP = 16, LB_CLASSES = 16, LB_MAX = LB_STEP * LB_CLASSES, LB_KEEP = 1024 };

struct tl_heap {
  bool keep;          /* the lists are in use (not in sanitizer builds, nor after the sentinel) */
  bool sentinel_gone; /* the sentinel's finalizer ran */
  bool probe;         /* note the next userdata block (tl_heap_bind) */
  int nbound;         /* bindings without __gc on this state (tl_heap_bind - tl_heap_unbind) */
  size_t slot_size;   /* the block size of a store userdata; 0: not measured (yet) */
  size_t slot_off;    /* where its payload (the tl_slot) starts in the block */
  void *probe_block;
  size_t probe_size;
  /* the slot set: block addresses, open addressing with linear probing,
   * at most half full, 0 = empty; deletion shifts back (no tombstones) */
  uintptr_t *keys;
  size_t cap; /* a power of two, or 0 */
  size_t n;
  unsigned shift; /* 64 - log2(cap) */
  void *head[LB_CLASSES]; /* free blocks, linked through their first word */
  int nfree[LB_CLASSES];
};

#ifndef LB_OFF
static int lb_class(size_t size) { return size ? (int)((size - 1) / LB_STEP) : 0; }

static void *lb_take(tl_heap *h, size_t size) {
  int c = lb_class(size);
  void *p = h->head[c];
  if (p) {
    h->head[c] = *(void **)p;
    h->nfree[c]--;
    return p;
  }
  return malloc((size_t)(c + 1) * LB_STEP);
}

/* Files p under class c (its usable size is at least LB_STEP * (c + 1)). */
static void lb_file(tl_heap *h, void *p, int c) {
  if (c < 0 || h->nfree[c] >= LB_KEEP) {
    free(p);
    return;
  }
  *(void **)p = h->head[c];
  h->head[c] = p;
  h->nfree[c]++;
}

/* Files p under the largest class its usable size holds. */
static void lb_give(tl_heap *h, void *p) {
  size_t cap = malloc_usable_size(p);
  lb_file(h, p, cap >= LB_MAX ? LB_CLASSES - 1 : (int)(cap / LB_STEP) - 1);
}

/* A growth or shrink of a block (ptr, osize) with the lists in use. */
static void *lb_resize(tl_heap *h, void *ptr, size_t osize, size_t nsize) {
  /* with ptr, osize is the block's size (without, it names an object type) */
  if (osize <= LB_MAX) {
    if (nsize <= osize || nsize <= malloc_usable_size(ptr)) return ptr;
    void *q = nsize <= LB_MAX ? lb_take(h, nsize) : malloc(nsize);
    if (!q) return NULL; /* a growth: Lua collects and retries */
    memcpy(q, ptr, osize);
    lb_give(h, ptr);
    return q;
  }
  if (nsize <= LB_MAX) { /* a large block shrinks to a small one */
    void *q = realloc(ptr, nsize);
    return q ? q : ptr;
  }
  return realloc(ptr, nsize);
}
#endif

static void lb_clear(tl_heap *h) {
  h->keep = false;
  for (int c = 0; c < LB_CLASSES; c++)
    while (h->head[c]) {
      void *p = h->head[c];
      h->head[c] = *(void **)p;
      free(p);
    }
  memset(h->nfree, 0, sizeof h->nfree);
}

/* ---- the slot set ---------------------------------------------------------------------- */

static size_t set_home(const tl_heap *h, uintptr_t k) {
  return (size_t)(((uint64_t)k >> 4) * UINT64_C(0x9E3779B97F4A7C15) >> h->shift);
}

static void set_place(tl_heap *h, uintptr_t k) {
  size_t m = h->cap - 1, i = set_home(h, k);
  while (h->keys[i]) i = (i + 1) & m;
  h->keys[i] = k;
}

/* Doubles the set (1,024 entries at first: 8 KiB). False when out of memory. */
static bool set_grow(tl_heap *h) {
  size_t ncap = h->cap ? h->cap * 2 : 1024;
  uintptr_t *nk = calloc(ncap, sizeof *nk);
  if (!nk) return false;
  uintptr_t *old = h->keys;
  size_t ocap = h->cap;
  h->keys = nk;
  h->cap = ncap;
  h->shift = 64;
  for (size_t c = ncap; c > 1; c >>= 1) h->shift--;
  for (size_t i = 0; i < ocap; i++)
    if (old[i]) set_place(h, old[i]);
  free(old);
  return true;
}

/* Takes k out of the set; false when it is not there (any other block). */
static bool set_remove(tl_heap *h, uintptr_t k) {
  size_t m = h->cap - 1, i = set_home(h, k);
  for (; h->keys[i] != k; i = (i + 1) & m)
    if (!h->keys[i]) return false;
  /* shift back the entries after the hole that may sit in it: an entry at j
   * whose home is at least as far from j as the hole is */
  for (size_t j = (i + 1) & m; h->keys[j]; j = (j + 1) & m)
    if (((j - set_home(h, h->keys[j])) & m) >= ((j - i) & m)) {
      h->keys[i] = h->keys[j];
      i = j;
    }
  h->keys[i] = 0;
  h->n--;
  return true;
}

static tl_slot *slot_of(const tl_heap *h, uintptr_t block) {
  return (tl_slot *)(block + h->slot_off);
}

/* ---- the allocator ----------------------------------------------------------------------- */

/* Every allocation and free of the state but the two below: with the slot
 * set, the lists and the injector in line, heap_alloc saved and restored the
 * registers they use on each call (~30 instructions an operation of
 * bench/workloads/overhead.lua, a userdata made and one freed). */
__attribute__((noinline)) static void *heap_any(tl_heap *h, void *ptr, size_t osize, size_t nsize) {
  if (nsize == 0) {
#ifndef LB_OFF
    if (ptr && osize <= LB_MAX && h->keep) {
      lb_give(h, ptr);
      return NULL;
    }
#endif
    free(ptr);
    return NULL;
  }
  if (lua_counts && (ptr == NULL || nsize > osize) && ty__alloc_should_fail()) return NULL;
  if (ptr == NULL) {
#ifndef LB_OFF
    void *p = nsize <= LB_MAX && h->keep ? lb_take(h, nsize) : malloc(nsize);
#else
    void *p = malloc(nsize);
#endif
    if (h->probe && osize == LUA_TUSERDATA && p) {
      h->probe = false;
      h->probe_block = p;
      h->probe_size = nsize;
    }
    return p;
  }
#ifndef LB_OFF
  if (h->keep) return lb_resize(h, ptr, osize, nsize);
#endif
  return realloc(ptr, nsize);
}

/* A block of a store userdata's size freed: the store's, released, when the
 * set holds it; otherwise heap_any's. */
__attribute__((noinline)) static void *heap_free_sized(tl_heap *h, void *ptr, size_t osize) {
  if (!set_remove(h, (uintptr_t)ptr)) return heap_any(h, ptr, osize, 0);
  tl_slot *u = slot_of(h, (uintptr_t)ptr);
  assert(u->tag == &tl_store_tag);
  ty_store_release(u->store);
#ifndef LB_OFF
  /* a slot's block came from lb_take (made after the bind, and the lists
   * are in use from heap_install until lb_clear): its class is its size's,
   * without malloc_usable_size (~20 instructions an op) */
  if (h->keep && osize <= LB_MAX) {
    lb_file(h, ptr, lb_class(osize));
    return NULL;
  }
#endif
  return heap_any(h, ptr, osize, 0);
}

static void *heap_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  tl_heap *h = ud;
  if (nsize == 0 && ptr && osize == h->slot_size && h->n) return heap_free_sized(h, ptr, osize);
#ifndef LB_OFF
  /* a new small block from its list, when the injector does not count and
   * no probe waits for it (heap_any's answer, without its call) */
  if (ptr == NULL && nsize - 1 < LB_MAX && h->keep && !h->probe &&
      !atomic_load_explicit(&ty__alloc_counting, memory_order_relaxed)) {
    const int c = lb_class(nsize);
    void *p = h->head[c];
    if (p) {
      h->head[c] = *(void **)p;
      h->nfree[c]--;
      return p;
    }
  }
#endif
  return heap_any(h, ptr, osize, nsize);
}

/* Puts the plain allocator back and frees the heap: its lists, its set. */
static void retire(lua_State *L, tl_heap *h) {
  lua_setallocf(L, fault_alloc, NULL);
  lb_clear(h);
  free(h->keys);
  free(h);
}

/* The sentinel's __gc: lua_close (or a script that took it out of the
 * registry) ends the lists; the heap goes too unless a binding still needs
 * its set. */
static int sentinel_gc(lua_State *L) {
  void *ud;
  if (lua_getallocf(L, &ud) != heap_alloc) return 0;
  tl_heap *h = ud;
  lb_clear(h);
  h->sentinel_gone = true;
  if (h->nbound == 0) retire(L, h);
  return 0;
}

static int make_sentinel(lua_State *L) {
  lua_newuserdatauv(L, 0, 0);
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, sentinel_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushliteral(L, "tycho.lua_blocks");
  lua_setfield(L, -2, "__name");
  lua_setmetatable(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, (void *)&make_sentinel);
  return 0;
}

/* Gives L the heap (when out of memory, L keeps fault_alloc). */
static void heap_install(lua_State *L) {
  tl_heap *h = calloc(1, sizeof *h);
  if (!h) return;
#ifndef LB_OFF
  h->keep = true;
#endif
  lua_setallocf(L, heap_alloc, h);
  lua_pushcfunction(L, make_sentinel);
  if (lua_pcall(L, 0, 0, 0) != LUA_OK) { /* its blocks are malloc blocks: free() takes them */
    lua_pop(L, 1);
    retire(L, h);
  }
}

/* ---- what the binding asks -------------------------------------------------------------- */

tl_heap *tl_heap_bind(lua_State *L) {
  void *ud;
  if (lua_getallocf(L, &ud) != heap_alloc) return NULL;
  tl_heap *h = ud;
  if (h->sentinel_gone) return NULL; /* the lists are gone: nor would it be freed */
  if (!h->slot_size) {
    h->probe_block = NULL;
    h->probe = true;
    const char *u = lua_newuserdatauv(L, sizeof(tl_slot), 0);
    h->probe = false;
    const char *b = h->probe_block;
    if (b && u >= b && u + sizeof(tl_slot) <= b + h->probe_size) {
      h->slot_off = (size_t)(u - b);
      h->slot_size = h->probe_size;
    }
    lua_pop(L, 1);
  }
  if (!h->slot_size) return NULL;
  h->nbound++;
  return h;
}

tl_heap *tl_heap_of(lua_State *L) {
  void *ud;
  if (lua_getallocf(L, &ud) != heap_alloc) return NULL;
  tl_heap *h = ud;
  return h->nbound > 0 ? h : NULL;
}

void tl_heap_adopt(lua_State *L, tl_heap *h, tl_slot *u) {
  if ((h->n + 1) * 2 > h->cap && !set_grow(h)) {
    luaL_error(L, "not enough memory");
    return;
  }
  set_place(h, (uintptr_t)u - h->slot_off);
  h->n++;
}

void tl_heap_unbind(lua_State *L, tl_heap *h) {
  if (--h->nbound > 0) return;
  for (size_t i = 0; i < h->cap; i++)
    if (h->keys[i]) {
      tl_slot *u = slot_of(h, h->keys[i]);
      ty_store_release(u->store);
      u->store = NULL;
      h->keys[i] = 0;
    }
  h->n = 0;
  if (h->sentinel_gone) retire(L, h);
}

/* ---- the states ---------------------------------------------------------------------------- */

static void report_alloc_count(void) {
  fprintf(stderr, "tycho: fault injection: %ld allocations counted, %ld failed on purpose\n",
          ty_fault_alloc_count(), ty_fault_failures());
}

lua_State *ty_lua_newstate(void) {
  static bool env_read; /* once per process: a second state must not re-arm */
  if (!env_read) {
    env_read = true;
    const char *k = getenv("TYCHO_FAIL_ALLOC");
    const char *count = getenv("TYCHO_ALLOC_COUNT");
    const char *lua = getenv("TYCHO_FAIL_ALLOC_LUA");
    lua_counts = !(lua && strcmp(lua, "0") == 0);
    if ((k && *k) || (count && *count && strcmp(count, "0") != 0)) {
      ty_fault_fail_alloc(k ? strtol(k, NULL, 10) : 0); /* also restarts the count */
      if (count && *count && strcmp(count, "0") != 0) atexit(report_alloc_count);
    }
  }
  /* luaL_newstate's panic and warning functions (static in lauxlib), then
   * this allocator for everything from here on */
  lua_State *L = luaL_newstate();
  if (L) lua_setallocf(L, fault_alloc, NULL);
  if (L) heap_install(L);
  return L;
}
