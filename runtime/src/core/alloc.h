/*
 * alloc.h — the core's allocation functions (alloc.c). Every allocation of
 * the runtime goes through them so that fault injection (ty_fault_fail_alloc)
 * reaches all of them; memory is released with plain free().
 */
#ifndef TY_ALLOC_H
#define TY_ALLOC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

void *ty__malloc(size_t n);
void *ty__calloc(size_t n, size_t size);
void *ty__realloc(void *p, size_t n);
char *ty__strdup(const char *s);
void *ty__aligned_alloc(size_t align, size_t n);
int ty__posix_memalign(void **p, size_t align, size_t n);
/* Counts one allocation; true when the injector says it must fail (for
 * allocators outside this file: device pools, Lua states of the shell). */
bool ty__alloc_should_fail(void);
/* Whether the injector counts (armed once): false, ty__alloc_should_fail is
 * false and changes nothing (lheap.c's fast path reads it, relaxed). */
extern atomic_bool ty__alloc_counting;

#endif /* TY_ALLOC_H */
