/*
 * alloc.c — the core's allocation functions, with a fault injector.
 *
 * Every allocation of the runtime goes through ty__malloc and friends, so a
 * test can make the k-th one fail (ty_fault_fail_alloc; the shell arms it
 * from TYCHO_FAIL_ALLOC=k) and check that the failure
 * becomes an out-of-memory error, the runtime stays usable and nothing leaks.
 * The counter is process-wide: fault injection is a testing tool, and a test
 * drives one runtime at a time.
 *
 * One failure is what a caller must survive; TYCHO_FAIL_ALLOC_BURST=n (read
 * when the injector is armed) makes the n allocations from the k-th on fail,
 * which defeats a single retry (an emergency collection in Lua, the binding's
 * collect-and-retry) and so reaches the paths behind it: what a C function
 * holds when Lua raises "not enough memory", for instance.
 */
#include "alloc.h"

#include "tycho/tycho.h"

#include <errno.h>
#include <stdatomic.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Counting starts at the first ty_fault_fail_alloc (k = 0 counts without
 * failing): until then an allocation costs one relaxed load, not a shared
 * read-modify-write (every Lua allocation of the shell comes here too: CG at
 * 256^2 spent ~10 us an iteration, 4% of its CPU time, on the counter). */
atomic_bool ty__alloc_counting; /* alloc.h: read by the Lua heap's fast path too */
static atomic_long alloc_count; /* allocations since the injector was armed */
static atomic_long fail_at;     /* 0: off; k: the k-th allocation fails */
static atomic_long burst = 1;   /* ... and the burst - 1 after it */
static atomic_long failures;    /* allocations failed on purpose */

void ty_fault_fail_alloc(long k) {
  const char *b = getenv("TYCHO_FAIL_ALLOC_BURST");
  long n = b ? strtol(b, NULL, 10) : 1;
  atomic_store(&burst, n > 1 ? n : 1);
  atomic_store(&alloc_count, 0);
  atomic_store(&fail_at, k > 0 ? k : 0);
  atomic_store(&ty__alloc_counting, true);
}

long ty_fault_alloc_count(void) { return atomic_load(&alloc_count); }

long ty_fault_failures(void) { return atomic_load(&failures); }

#if defined(__SANITIZE_ADDRESS__)
void __sanitizer_print_stack_trace(void);
#else
#include <execinfo.h>
#endif

/* TYCHO_FAIL_ALLOC_TRACE=1: say where the failure was injected (symbolised
 * in sanitizer builds), to find the caller that mishandled it. */
static void trace_failure(long n) {
  const char *t = getenv("TYCHO_FAIL_ALLOC_TRACE");
  if (!t || !*t || strcmp(t, "0") == 0) return;
  fprintf(stderr, "tycho: fault injection: allocation %ld fails, called from:\n", n);
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_print_stack_trace();
#else
  void *frames[48];
  backtrace_symbols_fd(frames, backtrace(frames, 48), 2);
#endif
}

bool ty__alloc_should_fail(void) {
  if (!atomic_load_explicit(&ty__alloc_counting, memory_order_relaxed)) return false;
  long k = atomic_load_explicit(&fail_at, memory_order_relaxed);
  long n = atomic_fetch_add_explicit(&alloc_count, 1, memory_order_relaxed) + 1;
  if (k == 0 || n < k || n >= k + atomic_load_explicit(&burst, memory_order_relaxed)) return false;
  atomic_fetch_add(&failures, 1);
  trace_failure(n);
  return true;
}

static _Thread_local size_t here_min; /* ty_fault_fail_alloc_here: 0, or the size that fails */

void ty_fault_fail_alloc_here(size_t min_bytes) { here_min = min_bytes; }

/* The calling thread's armed injector: the first allocation of here_min
 * bytes or more fails. */
static bool here_fails(size_t n) {
  if (here_min == 0 || n < here_min) return false;
  here_min = 0;
  atomic_fetch_add(&failures, 1);
  return true;
}

void *ty__malloc(size_t n) { return here_fails(n) || ty__alloc_should_fail() ? NULL : malloc(n); }

void *ty__calloc(size_t n, size_t size) {
  size_t bytes = size && n > SIZE_MAX / size ? SIZE_MAX : n * size;
  return here_fails(bytes) || ty__alloc_should_fail() ? NULL : calloc(n, size);
}

void *ty__realloc(void *p, size_t n) {
  return here_fails(n) || ty__alloc_should_fail() ? NULL : realloc(p, n);
}

char *ty__strdup(const char *s) { return ty__alloc_should_fail() ? NULL : strdup(s); }

void *ty__aligned_alloc(size_t align, size_t n) {
  return ty__alloc_should_fail() ? NULL : aligned_alloc(align, n);
}

int ty__posix_memalign(void **p, size_t align, size_t n) {
  if (ty__alloc_should_fail()) return ENOMEM;
  return posix_memalign(p, align, n);
}
