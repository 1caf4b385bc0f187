/*
 * sbuf.c — a growable text buffer: appends double the capacity as needed
 * (starting at 4 KiB), so rendering a table of n rows costs O(n) copies.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for n more bytes (and a terminator); false (failed set) when the
 * allocator refuses. */
static bool grow(ty_sbuf *b, size_t n) {
  size_t cap = (b->cap ? b->cap * 2 : 4096) + n;
  char *q = ty__realloc(b->p, cap);
  if (!q) {
    b->failed = true;
    return false;
  }
  b->p = q;
  b->cap = cap;
  return true;
}

void ty__sb_printf(ty_sbuf *b, const char *fmt, ...) {
  if (b->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->failed = true;
      return;
    }
    if (b->p && b->len + (size_t)n < b->cap) {
      b->len += (size_t)n;
      return;
    }
    if (!grow(b, (size_t)n)) return;
  }
}

void ty__sb_append(ty_sbuf *b, const void *p, size_t n) {
  if (b->failed || (b->len + n >= b->cap && !grow(b, n))) return;
  memcpy(b->p + b->len, p, n);
  b->len += n;
}

void ty__strlcpy(char *dst, const char *src, size_t cap) {
  size_t n = strnlen(src, cap - 1);
  memcpy(dst, src, n);
  dst[n] = 0;
}
