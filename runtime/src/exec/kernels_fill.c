/*
 * kernels_fill.c — kernels that write values without reading stores: fill
 * (one value), arange, linspace and random.
 *
 * Generators compute each element from its GLOBAL index (the tile's lo plus the
 * local index; C order over the whole store for random), never from a running
 * state, so the result is the same for any number or shape of pieces.
 *
 * Random numbers are counter-based (the idea of Random123's Philox, with the
 * cheaper SplitMix64 finaliser as the bijection): element i of draw `stream`
 * under `seed` is mix64(key + (i + 1) * golden), key = mix64(mix64(seed) +
 * stream * odd constant). For one key this is exactly the SplitMix64 sequence
 * (passes BigCrush); two streams overlap only if their keys lie within n
 * steps of each other, a 2^-64 * n chance. The top 53 bits give a double in
 * [0, 1); f32 takes the top 24 bits so that rounding can never produce 1.0.
 */
#include "kernels.h"
#include "tycho/random.h"

#include <math.h>
#include <string.h>

typedef uint8_t ty_bool_t;

#define SZ(T) ((int64_t)sizeof(T))

/* ---- fill ------------------------------------------------------------------------- */

#define FILL_LOOP(NAME, T, FIELD)                                                      \
  static void NAME(int64_t n, char **p, const int64_t *s, const void *aux) {           \
    const T v = (T)((const ty__fillval *)aux)->FIELD;                                  \
    if (s[0] == SZ(T)) {                                                               \
      T *restrict o_ = (T *)p[0];                                                      \
      for (int64_t i = 0; i < n; i++) o_[i] = v;                                       \
      return;                                                                          \
    }                                                                                  \
    char *o_ = p[0];                                                                   \
    for (int64_t i = 0; i < n; i++, o_ += s[0]) *(T *)o_ = v;                          \
  }
FILL_LOOP(fill_f64, double, f)
FILL_LOOP(fill_f32, float, f)
FILL_LOOP(fill_i64, int64_t, i)
FILL_LOOP(fill_i32, int32_t, i)
FILL_LOOP(fill_u8, uint8_t, i)
FILL_LOOP(fill_i16, int16_t, i)
FILL_LOOP(fill_u16, uint16_t, i)
FILL_LOOP(fill_u32, uint32_t, i)
FILL_LOOP(fill_u64, uint64_t, i)

const ty_loop1d ty__fill_loops[TY_NDTYPES] = {
    [TY_F64] = fill_f64, [TY_F32] = fill_f32, [TY_I64] = fill_i64,
    [TY_I32] = fill_i32, [TY_U8] = fill_u8,   [TY_BOOL] = fill_u8,
    [TY_I8] = fill_u8,   [TY_I16] = fill_i16, [TY_U16] = fill_u16,
    [TY_U32] = fill_u32, [TY_U64] = fill_u64, /* i8: u8's bytes (i is already in range) */
};

/* ---- element walks with global indices --------------------------------------------- */

/* Calls fn(n, out, stride_bytes, first, aux) for each innermost run of the
 * tile, where `first` is the C-order flat index, in the WHOLE store, of the
 * run's first element; consecutive elements of a run have consecutive flat
 * indices (the run is along the last dim). */
typedef void (*run_fn)(int64_t n, char *out, int64_t stride, uint64_t first, const void *aux);

static void walk_flat(const ty_tile *t, run_fn fn, const void *aux) {
  const int64_t es = (int64_t)ty_dtype_size(t->dtype);
  if (t->ndim == 0) {
    fn(1, t->data, es, 0, aux);
    return;
  }
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] == 0) return;
  int64_t gstride[TY_MAX_RANK]; /* C-order element strides of the whole store */
  int64_t g = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    gstride[d] = g;
    g *= t->gshape[d];
  }
  const int last = t->ndim - 1;
  int64_t idx[TY_MAX_RANK] = {0};
  for (;;) {
    int64_t flat = 0, off = 0;
    for (int d = 0; d < t->ndim; d++) {
      flat += (t->lo[d] + idx[d]) * gstride[d];
      off += idx[d] * t->strides[d];
    }
    fn(t->shape[last], t->data + off * es, t->strides[last] * es, (uint64_t)flat, aux);
    int d = last - 1;
    for (; d >= 0; d--) {
      if (++idx[d] < t->shape[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

/* ---- random ------------------------------------------------------------------------ */

#define GOLDEN 0x9e3779b97f4a7c15ULL

static inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static inline uint64_t random_key(uint64_t seed, uint64_t stream) {
  return mix64(mix64(seed) + stream * 0xd1b54a32d192ed03ULL);
}

static inline uint64_t random_bits(uint64_t key, uint64_t index) {
  return mix64(key + (index + 1) * GOLDEN);
}

double ty__random_u01(uint64_t seed, uint64_t stream, uint64_t index) {
  return (double)(random_bits(random_key(seed, stream), index) >> 11) * 0x1.0p-53;
}

/* One loop per dtype; the contiguous form vectorises (AVX-512DQ has 64-bit
 * multiplies and int64 -> double conversion). Integer dtypes get uniformly
 * distributed bits over their whole range, bool a fair coin. */
#define RANDOM_RUN(NAME, T, EXPR)                                                      \
  static void NAME(int64_t n, char *out, int64_t stride, uint64_t first, const void *aux) { \
    const uint64_t key = *(const uint64_t *)aux;                                       \
    if (stride == SZ(T)) {                                                             \
      T *restrict o_ = (T *)out;                                                       \
      for (int64_t i = 0; i < n; i++) {                                                \
        const uint64_t r = random_bits(key, first + (uint64_t)i);                      \
        o_[i] = (EXPR);                                                                \
      }                                                                                \
      return;                                                                          \
    }                                                                                  \
    for (int64_t i = 0; i < n; i++, out += stride) {                                   \
      const uint64_t r = random_bits(key, first + (uint64_t)i);                        \
      *(T *)out = (EXPR);                                                              \
    }                                                                                  \
  }
RANDOM_RUN(random_f64, double, (double)(int64_t)(r >> 11) * 0x1.0p-53)
RANDOM_RUN(random_f32, float, (float)(int32_t)(r >> 40) * 0x1.0p-24f)
RANDOM_RUN(random_i64, int64_t, (int64_t)r)
RANDOM_RUN(random_i32, int32_t, (int32_t)(uint32_t)(r >> 32))
RANDOM_RUN(random_u8, uint8_t, (uint8_t)(r >> 56))
RANDOM_RUN(random_b, ty_bool_t, (ty_bool_t)(r >> 63))
RANDOM_RUN(random_16, uint16_t, (uint16_t)(r >> 48))
RANDOM_RUN(random_u32, uint32_t, (uint32_t)(r >> 32))

static const run_fn random_runs[TY_NDTYPES] = {
    [TY_F64] = random_f64, [TY_F32] = random_f32, [TY_I64] = random_i64,
    [TY_I32] = random_i32, [TY_U8] = random_u8,   [TY_BOOL] = random_b,
    /* the bits of the same width (i8 is u8's bytes read signed, ...) */
    [TY_I8] = random_u8,   [TY_I16] = random_16,  [TY_U16] = random_16,
    [TY_U32] = random_u32, [TY_U64] = random_i64,
};

/* ---- distributions (tycho/random.h; cuda/fill.cu computes the same) -------------- *
 *
 * An element may need more than one 64-bit draw (Box-Muller takes two, a
 * rejected integer another): draw j of element i is random_bits(subkey(key,
 * j), i), so every element still depends on (seed, stream, i) only. Sums
 * that feed a product are written as fma() so that the GPU, which contracts
 * a*b + c into an FMA by default, gives the same bits; log, cos and sqrt come
 * from the platform's libm here and CUDA's there (both within 1-2 ulp, so a
 * GPU's normal and exponential draws may differ from the CPU's in the last
 * bits; uniform and integers are bit-identical). */

static inline uint64_t subkey(uint64_t key, uint64_t j) {
  return j ? mix64(key ^ (j * 0xd1b54a32d192ed03ULL)) : key;
}

static inline double u01(uint64_t r) { return (double)(int64_t)(r >> 11) * 0x1.0p-53; }

/* Lemire's multiply-shift: r * range = hi:lo (128 bits); hi is uniform on
 * [0, range) once draws with lo < 2^64 mod range are rejected. A rejection
 * happens with probability < range / 2^64; after 64 in a row (never seen:
 * 2^-64 at worst) the last is kept. range 0 means 2^64: the bits as they are. */
static inline uint64_t bounded(uint64_t key, uint64_t i, uint64_t range) {
  uint64_t r = random_bits(key, i);
  if (range == 0) return r;
  unsigned __int128 m = (unsigned __int128)r * range;
  if ((uint64_t)m < range) {
    const uint64_t floor = (0 - range) % range;
    for (uint64_t j = 1; (uint64_t)m < floor && j < 64; j++)
      m = (unsigned __int128)random_bits(subkey(key, j), i) * range;
  }
  return (uint64_t)(m >> 64);
}

static double draw_float(const ty__random_args *a, uint64_t key, uint64_t i) {
  const double u = u01(random_bits(key, i));
  switch (a->kind) {
  case TY_RANDOM_UNIFORM: return fma(a->b - a->a, u, a->a);
  case TY_RANDOM_NORMAL: {
    /* 1 - u in (0, 1]: the log is finite */
    const double u2 = u01(random_bits(subkey(key, 1), i));
    const double z = sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * u2);
    return fma(a->b, z, a->a);
  }
  default: return a->a * -log(1.0 - u); /* TY_RANDOM_EXPONENTIAL */
  }
}

typedef struct dist_aux {
  const ty__random_args *a;
  uint64_t key;
  ty_dtype t;
} dist_aux;

/* Uniform's a + (b - a) u can round up to b; numpy's interval is half-open,
 * so such a value becomes the largest one below b (in the output dtype). */
static void dist_run(int64_t n, char *out, int64_t stride, uint64_t first, const void *aux) {
  const dist_aux *d = aux;
  const ty__random_args *a = d->a;
  for (int64_t k = 0; k < n; k++, out += stride) {
    const uint64_t i = first + (uint64_t)k;
    if (a->kind == TY_RANDOM_INTEGERS) {
      const int64_t v = (int64_t)((uint64_t)a->lo + bounded(d->key, i, a->range));
      if (d->t == TY_I64) *(int64_t *)out = v;
      else if (d->t == TY_I32) *(int32_t *)out = (int32_t)v;
      else if (d->t == TY_U8) *(uint8_t *)out = (uint8_t)v;
      else ty__store_i64(out, d->t, v); /* the dtypes added later */
      continue;
    }
    const double v = draw_float(a, d->key, i);
    const bool clamp = a->kind == TY_RANDOM_UNIFORM && a->b > a->a;
    if (d->t == TY_F64) {
      *(double *)out = clamp && v >= a->b ? nextafter(a->b, -INFINITY) : v;
    } else {
      const float f = (float)v, fb = (float)a->b;
      *(float *)out = clamp && f >= fb ? nextafterf(fb, -INFINITY) : f;
    }
  }
}

int ty__random_variant(ty_task_ctx *ctx) {
  const ty__random_args *a = ctx->scalars;
  const ty_tile *t = &ctx->args[0];
  const uint64_t key = random_key(a->seed, a->stream);
  if (a->kind == TY_RANDOM_BITS) {
    walk_flat(t, random_runs[t->dtype], &key);
  } else {
    const dist_aux d = {a, key, t->dtype};
    walk_flat(t, dist_run, &d);
  }
  return 0;
}

/* ---- arange and linspace --------------------------------------------------------------- */

/* Values are produced in blocks of 1024 (8 KiB on the stack) as double, as
 * exact int64 for integer aranges, or as float for f32 ones, then converted
 * (or copied) by the cast loops (the rules of kernels_cast.c). */
#define GEN_BLOCK 1024

static void put_block(const ty_tile *t, ty_dtype from, int64_t i0, int64_t m, int64_t st,
                      void *buf) {
  char *p[2] = {t->data + i0 * st, buf};
  const int64_t s[2] = {st, (int64_t)ty_dtype_size(from)};
  ty__cast_loops[from][t->dtype](m, p, s, NULL);
}

/* numpy's values, bit for bit (numpy/core/src/multiarray: PyArray_Arange
 * and the dtype's `fill`; numpy/core/function_base.py: linspace), each
 * product and sum rounded on its own (the kernel set is compiled without
 * contraction, -ffp-contract=off; cuda/fill.cu computes the same):
 *  - arange: x[0] = start, x[1] = start + step, and from i = 2 on
 *    start + i * delta with delta = x[1] - start, in the output's float
 *    type (f32: in float, as numpy's FLOAT_fill, its start and x[1] the f64
 *    values rounded to f32);
 *  - linspace: start + i * step with step = (b - a) / (n - 1), the last
 *    point exactly b; when that step underflows to 0, (i / div) * delta.
 * One fused multiply-add (the earlier formula) is closer to i * step + start
 * but not numpy's: linspace(-1, 1, 7)'s middle point was -5.6e-17, not 0,
 * and 52 of linspace(-5, 5, 101)'s 101 points differed in the last bit
 * (found by tests/robust/api_fuzz.lua, seed 60467). */
static inline double arange_f64(const ty__arange_args *a, int64_t g) {
  const double x1 = a->start + a->step;
  if (g == 0) return a->start;
  if (g == 1) return x1;
  return a->start + (double)g * (x1 - a->start);
}

static inline float arange_f32(const ty__arange_args *a, int64_t g) {
  const float x0 = (float)a->start, x1 = (float)(a->start + a->step);
  if (g == 0) return x0;
  if (g == 1) return x1;
  return x0 + (float)g * (x1 - x0);
}

int ty__arange_variant(ty_task_ctx *ctx) {
  const ty__arange_args *a = ctx->scalars;
  const ty_tile *t = &ctx->args[0];
  const int64_t es = (int64_t)ty_dtype_size(t->dtype);
  const int64_t n = t->shape[0], lo = t->lo[0], st = t->strides[0] * es;
  for (int64_t i0 = 0; i0 < n; i0 += GEN_BLOCK) {
    int64_t m = n - i0 < GEN_BLOCK ? n - i0 : GEN_BLOCK;
    if (a->exact) {
      /* integer dtype, integral start and step: exact in int64 (wrapping) */
      int64_t buf[GEN_BLOCK];
      for (int64_t j = 0; j < m; j++)
        buf[j] = (int64_t)((uint64_t)a->istart + (uint64_t)(lo + i0 + j) * (uint64_t)a->istep);
      put_block(t, TY_I64, i0, m, st, buf);
    } else if (t->dtype == TY_F32) {
      float buf[GEN_BLOCK];
      for (int64_t j = 0; j < m; j++) buf[j] = arange_f32(a, lo + i0 + j);
      put_block(t, TY_F32, i0, m, st, buf);
    } else {
      double buf[GEN_BLOCK];
      for (int64_t j = 0; j < m; j++) buf[j] = arange_f64(a, lo + i0 + j);
      put_block(t, TY_F64, i0, m, st, buf);
    }
  }
  return 0;
}

int ty__linspace_variant(ty_task_ctx *ctx) {
  const ty__linspace_args *a = ctx->scalars;
  const ty_tile *t = &ctx->args[0];
  const int64_t es = (int64_t)ty_dtype_size(t->dtype);
  const int64_t n = t->shape[0], lo = t->lo[0], st = t->strides[0] * es;
  const double div = (double)(a->n - 1), delta = a->b - a->a;
  double buf[GEN_BLOCK];
  for (int64_t i0 = 0; i0 < n; i0 += GEN_BLOCK) {
    int64_t m = n - i0 < GEN_BLOCK ? n - i0 : GEN_BLOCK;
    for (int64_t j = 0; j < m; j++) {
      const int64_t g = lo + i0 + j;
      if (g == a->n - 1 && a->n > 1) buf[j] = a->b; /* the last point is exactly b */
      else if (a->step == 0 && a->n > 1) buf[j] = (double)g / div * delta + a->a;
      else buf[j] = (double)g * a->step + a->a;
    }
    put_block(t, TY_F64, i0, m, st, buf);
  }
  return 0;
}
