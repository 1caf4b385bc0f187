/*
 * tycho/random.h — random draws from named distributions, with an explicit
 * generator or the runtime's own.
 *
 * Every draw is counter-based: element i of a draw is a pure function of
 * (seed, stream, i), i the element's C-order flat index in the whole store,
 * so the numbers are the same under any number of processors, pieces, mode
 * or fusion. A generator is just (seed, stream); each successful draw uses
 * one stream and advances it by one, so two draws differ and a program gives
 * the same numbers on every run. The runtime's generator is the one ty_seed
 * resets (seed s, stream 0): after ty_seed(rt, s) the runtime's draws equal
 * those of a fresh generator {s, 0} making the same calls.
 *
 * These are not numpy's bit streams (numpy uses PCG64 and its own
 * transformations); the distributions are the same.
 */
#ifndef TYCHO_RANDOM_H
#define TYCHO_RANDOM_H

#include "tycho/tycho.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ty_random_dist {
  TY_RANDOM_BITS = 0,    /* ty_random's: floats uniform [0, 1), integers all bits */
  TY_RANDOM_UNIFORM,     /* floats: uniform [a, b) (a + (b - a) u, u in [0, 1)) */
  TY_RANDOM_NORMAL,      /* floats: mean a, standard deviation b (Box-Muller) */
  TY_RANDOM_EXPONENTIAL, /* floats: scale a (mean a), -a log(1 - u) */
  TY_RANDOM_INTEGERS,    /* integers: uniform on [lo, hi), unbiased (Lemire's rejection) */
  TY_RANDOM_NDIST
} ty_random_dist;

typedef struct ty_random_spec {
  ty_random_dist dist;
  double a, b;
  int64_t lo, hi; /* INTEGERS: lo < hi; both must fit the dtype (hi - 1 its largest) */
} ty_random_spec;

/* A generator: the next draw uses `stream` under `seed`. */
typedef struct ty_random_gen {
  uint64_t seed, stream;
} ty_random_gen;

/* A new store of dtype t and the given shape drawn from `spec`, with `gen`
 * (its stream advances by one on success) or, gen NULL, the runtime's
 * generator. Float distributions take f64 or f32 (computed in double, then
 * rounded); INTEGERS takes any integer dtype; BITS any dtype. Bad parameters
 * (a NaN, std < 0, scale < 0, lo >= hi, a bound outside the dtype) fail with
 * TY_EINVAL and a message naming them; nothing is drawn then. */
ty_status ty_random_draw(ty_runtime *rt, ty_dtype t, int ndim, const int64_t *shape,
                         const ty_random_spec *spec, ty_random_gen *gen, ty_store **out);

/* The runtime's generator as it stands (the next draw's seed and stream). */
ty_random_gen ty_random_state(const ty_runtime *rt);

#ifdef __cplusplus
}
#endif
#endif /* TYCHO_RANDOM_H */
