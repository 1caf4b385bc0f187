/*
 * kernels_conv.c — the CPU variant of the "convolve" task (ops_convolve.c
 * launches it): out[o] = sum_j x[o - left + j] w[j] over the kernel's
 * multi-indices j, skipping the terms whose x index falls outside x. Part
 * of the kernel set, so it is compiled once per instruction-set level
 * (isa.h) without floating-point contraction: a level changes no bits.
 *
 * Same bits under any partition and level: every output element adds its
 * terms in one order, the kernel's multi-indices in C order, starting from
 * 0, whatever its piece. The variant walks the piece's output rows (all
 * dims but the last) in chunks of ROW_CHUNK outputs, with one accumulator
 * per output of the chunk (the output row itself when it is contiguous and
 * a float: the accumulator has the output's type). For each kernel row (the leading dims of j):
 *  - the outputs whose every tap along the last dim reads inside x (the
 *    interior, when x's last stride is 1 and the dtype is a float) go in
 *    blocks of BLOCK: the block's accumulators stay in registers across the
 *    row's taps, so a tap costs one load of x, a multiply and an add (the
 *    row form below reloaded and stored the accumulators at every tap;
 *    1-D "same" with 5 taps ran at 1/5 of numpy's speed);
 *  - the outputs near the ends of x take the row form: one tap at a time
 *    over the chunk, skipping what falls outside.
 * Both add an output's terms in the same order, so the split is invisible.
 */
#include "kernels.h"

#include <stdlib.h>

#define ROW_CHUNK 2048 /* outputs per accumulator chunk: 16 KiB of f64, in L1 */

/* Outputs per register block: 8 vector registers of accumulators at the
 * level's width (an add's latency is 4 cycles on 2 ports: 8 in flight). */
#if defined(__AVX512F__)
#define BLOCK_BYTES 512
#elif defined(__AVX2__)
#define BLOCK_BYTES 256
#else
#define BLOCK_BYTES 128
#endif

/* The interior taps of one kernel row for n outputs: acc[i] += x[i + jl] *
 * w[jl * ws] for jl = 0 .. wn - 1 in order; x contiguous. */
#define CONV_TAPS(NAME, T)                                                                   \
  static void NAME(T *restrict acc, const T *restrict x, const T *restrict w, int64_t ws,    \
                   int64_t wn, int64_t n) {                                                  \
    enum { B = BLOCK_BYTES / (int)sizeof(T) };                                               \
    int64_t i = 0;                                                                           \
    for (; i + B <= n; i += B) {                                                             \
      T a[B];                                                                                \
      for (int k = 0; k < B; k++) a[k] = acc[i + k];                                         \
      for (int64_t jl = 0; jl < wn; jl++) {                                                  \
        const T wv = w[jl * ws];                                                             \
        const T *xp = x + i + jl;                                                            \
        for (int k = 0; k < B; k++) a[k] = a[k] + xp[k] * wv;                                \
      }                                                                                      \
      for (int k = 0; k < B; k++) acc[i + k] = a[k];                                         \
    }                                                                                        \
    for (; i < n; i++) {                                                                     \
      T a = acc[i];                                                                          \
      for (int64_t jl = 0; jl < wn; jl++) a = a + x[i + jl] * w[jl * ws];                    \
      acc[i] = a;                                                                            \
    }                                                                                        \
  }
CONV_TAPS(taps_f64, double)
CONV_TAPS(taps_f32, float)

/* One output row chunk [i0, i0 + len) at output multi-index o (its leading
 * dims; o[nd - 1] is the global index of the row's first element), all
 * kernel indices in C order. acc holds len accumulators. TAPS is the
 * interior's block form, or NULL (the row form everywhere). */
#define CONV_ROW(NAME, T, TW, TAPS)                                                          \
  static void NAME(const ty_tile *O, const ty_tile *X, const ty_tile *W, const int64_t *left, \
                   const int64_t *o, int64_t len, TW *acc, char *dst, int64_t ds) {           \
    const int nd = O->ndim, last = nd - 1;                                                   \
    const T *x = (const T *)X->data, *w = (const T *)W->data;                                \
    const int64_t xs = X->strides[last], ws = W->strides[last], xn = X->shape[last];         \
    const int64_t wn = W->shape[last];                                                       \
    const int64_t base0 = o[last] - left[last]; /* x index of acc[0]'s first tap */          \
    /* the interior: outputs i with base0 + i >= 0 and base0 + i + wn <= xn */               \
    int64_t ilo = -base0, ihi = xn - wn + 1 - base0;                                         \
    if (ilo < 0) ilo = 0;                                                                    \
    if (ihi > len) ihi = len;                                                                \
    void (*taps)(TW *, const T *, const T *, int64_t, int64_t, int64_t) = TAPS;              \
    if (!taps || xs != 1 || ihi <= ilo) ilo = ihi = 0; /* the row form everywhere */         \
    for (int64_t i = 0; i < len; i++) acc[i] = 0;                                            \
    int64_t j[TY_MAX_RANK] = {0};                                                            \
    for (;;) {                                                                               \
      /* the leading dims of this kernel index: x's row, or skip it */                       \
      int64_t xoff = 0, woff = 0;                                                            \
      bool inside = true;                                                                    \
      for (int d = 0; d < last; d++) {                                                       \
        const int64_t xi = o[d] - left[d] + j[d];                                            \
        if (xi < 0 || xi >= X->shape[d]) inside = false;                                     \
        xoff += xi * X->strides[d];                                                          \
        woff += j[d] * W->strides[d];                                                        \
      }                                                                                      \
      if (inside) {                                                                          \
        if (ihi > ilo) taps(acc + ilo, x + xoff + base0 + ilo, w + woff, ws, wn, ihi - ilo);  \
        for (int64_t jl = 0; jl < wn; jl++) {                                                \
          const TW wv = (TW)w[woff + jl * ws];                                               \
          const int64_t base = base0 + jl; /* x index of acc[0] */                           \
          int64_t lo = -base, hi = xn - base;                                                \
          if (lo < 0) lo = 0;                                                                \
          if (hi > len) hi = len;                                                            \
          const T *xr = x + xoff + base * xs;                                                \
          /* [lo, hi) less the interior [ilo, ihi), which the block form did */              \
          int64_t cut_lo = ilo > lo ? ilo : lo, cut_hi = ihi < hi ? ihi : hi;                \
          if (cut_hi <= cut_lo) cut_lo = cut_hi = hi;                                        \
          for (int part = 0; part < 2; part++) {                                             \
            const int64_t a = part ? cut_hi : lo, b = part ? hi : cut_lo;                    \
            if (xs == 1)                                                                     \
              for (int64_t i = a; i < b; i++) acc[i] = (TW)(acc[i] + (TW)xr[i] * wv);        \
            else                                                                             \
              for (int64_t i = a; i < b; i++) acc[i] = (TW)(acc[i] + (TW)xr[i * xs] * wv);   \
          }                                                                                  \
        }                                                                                    \
      }                                                                                      \
      int d = last - 1;                                                                      \
      for (; d >= 0; d--) {                                                                  \
        if (++j[d] < W->shape[d]) break;                                                     \
        j[d] = 0;                                                                            \
      }                                                                                      \
      if (d < 0) break;                                                                      \
    }                                                                                        \
    if ((void *)acc != (void *)dst) /* else the row accumulated in place */                 \
      for (int64_t i = 0; i < len; i++) ((T *)dst)[i * ds] = (T)acc[i];                      \
  }
CONV_ROW(row_f64, double, double, taps_f64)
CONV_ROW(row_f32, float, float, taps_f32)
CONV_ROW(row_i64, int64_t, uint64_t, NULL)
CONV_ROW(row_i32, int32_t, uint32_t, NULL)
CONV_ROW(row_u8, uint8_t, uint8_t, NULL)
/* 16-bit products go through uint32_t: two uint16_t would multiply as int */
CONV_ROW(row_i8, int8_t, uint8_t, NULL)
CONV_ROW(row_i16, int16_t, uint32_t, NULL)
CONV_ROW(row_u16, uint16_t, uint32_t, NULL)
CONV_ROW(row_u32, uint32_t, uint32_t, NULL)
CONV_ROW(row_u64, uint64_t, uint64_t, NULL)

int ty__convolve_variant(ty_task_ctx *ctx) {
  const ty__conv_args *ca = ctx->scalars;
  const ty_tile *O = &ctx->args[0], *X = &ctx->args[1], *W = &ctx->args[2];
  const int nd = O->ndim, last = nd - 1;
  if (ctx->nargs != 3 || nd < 1 || X->ndim != nd || W->ndim != nd || X->dtype != O->dtype ||
      W->dtype != O->dtype || ctx->scalar_bytes != sizeof *ca)
    return ty_ctx_fail(ctx, "convolve: bad arguments");
  for (int d = 0; d < nd; d++)
    if (O->shape[d] == 0) return 0;
  const ty_dtype t = O->dtype;
  const int64_t es = (int64_t)ty_dtype_size(t);
  uint64_t *acc = ty__malloc(ROW_CHUNK * sizeof(uint64_t)); /* 8 bytes: any dtype's TW */
  if (!acc) return ty_ctx_fail(ctx, "convolve: out of memory for a row of accumulators");
  int64_t r[TY_MAX_RANK] = {0}; /* index within the piece's box */
  for (;;) {
    int64_t o[TY_MAX_RANK], doff = 0;
    for (int d = 0; d < last; d++) {
      o[d] = O->lo[d] + r[d];
      doff += r[d] * O->strides[d];
    }
    for (int64_t i0 = 0; i0 < O->shape[last]; i0 += ROW_CHUNK) {
      const int64_t len = O->shape[last] - i0 < ROW_CHUNK ? O->shape[last] - i0 : ROW_CHUNK;
      o[last] = O->lo[last] + i0;
      char *dst = O->data + (doff + i0 * O->strides[last]) * es;
      const int64_t ds = O->strides[last];
      /* a contiguous float row accumulates in place (the accumulator's type is its own) */
      void *in_place = ds == 1 ? (void *)dst : (void *)acc;
      switch (t) {
      case TY_F64: row_f64(O, X, W, ca->left, o, len, in_place, dst, ds); break;
      case TY_F32: row_f32(O, X, W, ca->left, o, len, in_place, dst, ds); break;
      case TY_I64: row_i64(O, X, W, ca->left, o, len, (uint64_t *)acc, dst, ds); break;
      case TY_I32: row_i32(O, X, W, ca->left, o, len, (uint32_t *)acc, dst, ds); break;
      case TY_U8: row_u8(O, X, W, ca->left, o, len, (uint8_t *)acc, dst, ds); break;
      case TY_I8: row_i8(O, X, W, ca->left, o, len, (uint8_t *)acc, dst, ds); break;
      case TY_I16: row_i16(O, X, W, ca->left, o, len, (uint32_t *)acc, dst, ds); break;
      case TY_U16: row_u16(O, X, W, ca->left, o, len, (uint32_t *)acc, dst, ds); break;
      case TY_U32: row_u32(O, X, W, ca->left, o, len, (uint32_t *)acc, dst, ds); break;
      case TY_U64: row_u64(O, X, W, ca->left, o, len, (uint64_t *)acc, dst, ds); break;
      default:
        free(acc);
        return ty_ctx_fail(ctx, "convolve: no kernel for dtype %s", ty_dtype_name(t));
      }
    }
    int d = last - 1;
    for (; d >= 0; d--) {
      if (++r[d] < O->shape[d]) break;
      r[d] = 0;
    }
    if (d < 0) break;
  }
  free(acc);
  return 0;
}
