/*
 * lshape.h — what lshape.c and lbuild.c share: making intermediate stores
 * in slots on the Lua stack (tl.h's rule: a slot is pushed before the call
 * that fills it, so an error leaks nothing) and raising on failure.
 */
#ifndef LSHAPE_H
#define LSHAPE_H

#include "tl.h"

/* lbuild.c's functions into the module table and the store methods. */
void tl_build_open(lua_State *L, int module_index);

/* tl_newslot with room for it: these functions push many slots. */
static inline ty_store **newslot(lua_State *L) {
  luaL_checkstack(L, 4, "tycho: too many intermediate stores");
  return tl_newslot(L);
}

/* Run a core call writing into a slot made just before; raise on failure. */
#define CALL(L, rt, fn, call)                                                                 \
  do {                                                                                        \
    ty_status st_;                                                                            \
    TL_TRY(L, rt, st_, call);                                                                 \
    if (st_ != TY_OK) tl_fail(L, rt, fn, st_);                                                \
  } while (0)

/* A new view or store in a fresh slot. */
static inline ty_store *slice(lua_State *L, ty_runtime *rt, const char *fn, ty_store *x, int dim,
                       int64_t a, int64_t b) {
  ty_store **v = newslot(L);
  CALL(L, rt, fn, ty_store_slice(rt, x, dim, a, b, 1, v));
  return *v;
}
static inline ty_store *newstore(lua_State *L, ty_runtime *rt, const char *fn, ty_dtype t, int nd,
                          const int64_t *shape) {
  ty_store **v = newslot(L);
  CALL(L, rt, fn, ty_store_create(rt, t, nd, shape, v));
  tl_created(L, *v);
  return *v;
}
static inline ty_store *reshape(lua_State *L, ty_runtime *rt, const char *fn, ty_store *x, int nd,
                         const int64_t *shape) {
  ty_store **v = newslot(L);
  CALL(L, rt, fn, ty_store_reshape(rt, x, nd, shape, v));
  return *v;
}
/* A contiguous copy (fresh storage). */
static inline ty_store *copy_of(lua_State *L, ty_runtime *rt, const char *fn, ty_store *x, ty_dtype t) {
  ty_store **v = newslot(L);
  CALL(L, rt, fn, ty_cast(rt, x, t, v));
  tl_created(L, *v);
  return *v;
}
static inline void copy_into(lua_State *L, ty_runtime *rt, const char *fn, ty_store *dst,
                      ty_store *src) {
  ty_status st;
  TL_TRY(L, rt, st, ty_copy(rt, dst, src));
  if (st != TY_OK) tl_fail(L, rt, fn, st);
}
/* x as a C-order 1-D store: a view when contiguous, else a copy. */
static inline ty_store *ravel(lua_State *L, ty_runtime *rt, const char *fn, ty_store *x) {
  int64_t n = ty_store_size(x);
  if (!ty_store_is_contiguous(x)) x = copy_of(L, rt, fn, x, ty_store_dtype(x));
  return reshape(L, rt, fn, x, 1, &n);
}

static inline void shape_error(lua_State *L, const char *fn, const char *what, const ty_store *x) {
  char sh[256];
  tl_shape_str(ty_store_ndim(x), ty_store_shape(x), sh, sizeof sh);
  tl_error(L, fn, "%s, got shape %s", what, sh);
}

/* a + b and a * b of non-negative sizes, or raise naming the function: a
 * broadcast view may have dims near INT64_MAX (overflow is undefined). */
static inline int64_t size_add(lua_State *L, const char *fn, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) tl_error(L, fn, "the result would be too large");
  return r;
}
static inline int64_t size_mul(lua_State *L, const char *fn, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) tl_error(L, fn, "the result would be too large");
  return r;
}

#endif /* LSHAPE_H */
