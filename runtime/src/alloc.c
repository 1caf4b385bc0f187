/*
 * alloc.c — the core's allocation functions, with a fault injector.
 *
 * Every allocation of the runtime goes through ty__malloc and friends, so a
 * test can make the k-th one fail (ty_fault_fail_alloc; the shell arms it
 * from TYCHO_FAIL_ALLOC=k) and check that the failure
 * becomes an out-of-memory error, the runtime stays usable and nothing leaks.
 * The counter is process-wide: fault injection is a testing tool, and a test
 * drives one runtime at a time.
 */
#include "alloc.h"

#include "tycho/tycho.h"

#include <errno.h>
#include <stdatomic.h>

#include <stdlib.h>
#include <string.h>

static atomic_long alloc_count; /* allocations since the injector was armed */
static atomic_long fail_at;     /* 0: off; k: the k-th allocation fails */
static atomic_long failures;    /* allocations failed on purpose */

void ty_fault_fail_alloc(long k) {
  atomic_store(&alloc_count, 0);
  atomic_store(&fail_at, k > 0 ? k : 0);
}

long ty_fault_alloc_count(void) { return atomic_load(&alloc_count); }

long ty_fault_failures(void) { return atomic_load(&failures); }

bool ty__alloc_should_fail(void) {
  long k = atomic_load_explicit(&fail_at, memory_order_relaxed);
  long n = atomic_fetch_add_explicit(&alloc_count, 1, memory_order_relaxed) + 1;
  if (k == 0 || n != k) return false;
  atomic_fetch_add(&failures, 1);
  return true;
}

void *ty__malloc(size_t n) { return ty__alloc_should_fail() ? NULL : malloc(n); }

void *ty__calloc(size_t n, size_t size) {
  return ty__alloc_should_fail() ? NULL : calloc(n, size);
}

void *ty__realloc(void *p, size_t n) { return ty__alloc_should_fail() ? NULL : realloc(p, n); }

char *ty__strdup(const char *s) { return ty__alloc_should_fail() ? NULL : strdup(s); }

void *ty__aligned_alloc(size_t align, size_t n) {
  return ty__alloc_should_fail() ? NULL : aligned_alloc(align, n);
}

int ty__posix_memalign(void **p, size_t align, size_t n) {
  if (ty__alloc_should_fail()) return ENOMEM;
  return posix_memalign(p, align, n);
}
