/*
 * kernels_cast.c — dtype conversions as 1-D loops (ptrs = {out, in}), the 121
 * (from, to) pairs in one table; same-dtype entries are copies (memcpy when
 * both runs are contiguous).
 *
 * Conversion rules (none is undefined behaviour in C, so the sanitizer build
 * and every CPU agree):
 *  - float -> integer: NaN gives 0; values at or beyond the target's range
 *    saturate to its limits (u8: below 0 gives 0, 256 and above give 255);
 *    everything else truncates toward zero. numpy leaves these cases to the
 *    hardware (x86 gives INT_MIN); saturating is the portable choice.
 *  - integer -> narrower integer wraps modulo 2^bits, as numpy does (gcc
 *    defines the signed conversion as modulo).
 *  - anything -> bool is x != 0 (NaN is true); bool reads as 0/1.
 *  - f64 -> f32 rounds to nearest; out-of-range values become +-inf (IEEE).
 *  - u64 -> signed reads the bits modulo 2^64 (2^64 - 1 gives -1 as i64), as
 *    numpy's astype; u64 -> float rounds to nearest.
 */
#include "kernels.h"

#include <math.h>
#include <string.h>

typedef uint8_t ty_bool_t;

#define SZ(T) ((int64_t)sizeof(T))

/* The bounds are exact doubles: 2^63, 2^31, 256. Anything strictly inside
 * (-2^63 - 1, 2^63) converts without overflow after truncation. */
int64_t ty__f64_to_i64_sat(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775808.0) return INT64_MAX;
  if (v < -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}
int32_t ty__f64_to_i32_sat(double v) {
  if (v != v) return 0;
  if (v >= 2147483648.0) return INT32_MAX;
  if (v <= -2147483649.0) return INT32_MIN;
  return (int32_t)v;
}
uint8_t ty__f64_to_u8_sat(double v) {
  if (v != v) return 0;
  if (v >= 256.0) return 255;
  if (v <= -1.0) return 0;
  return (uint8_t)v;
}

/* The dtypes added later: the same rule (NaN 0, saturate, truncate). Each
 * bound is an exact double at or just past the range. */
int8_t ty__f64_to_i8_sat(double v) {
  if (v != v) return 0;
  if (v >= 127.0) return INT8_MAX;
  if (v <= -128.0) return INT8_MIN;
  return (int8_t)v;
}
int16_t ty__f64_to_i16_sat(double v) {
  if (v != v) return 0;
  if (v >= 32767.0) return INT16_MAX;
  if (v <= -32768.0) return INT16_MIN;
  return (int16_t)v;
}
uint16_t ty__f64_to_u16_sat(double v) {
  if (v != v || v <= 0) return 0;
  if (v >= 65535.0) return UINT16_MAX;
  return (uint16_t)v;
}
uint32_t ty__f64_to_u32_sat(double v) {
  if (v != v || v <= 0) return 0;
  if (v >= 4294967295.0) return UINT32_MAX;
  return (uint32_t)v;
}
uint64_t ty__f64_to_u64_sat(double v) {
  if (v != v || v <= 0) return 0;
  if (v >= 18446744073709551616.0) return UINT64_MAX;
  return (uint64_t)v;
}

#define CAST_LOOP(NAME, TI, TO, CONV)                                                  \
  static void NAME(int64_t n, char **p, const int64_t *s, const void *aux) {           \
    (void)aux;                                                                         \
    if (s[0] == SZ(TO) && s[1] == SZ(TI)) {                                            \
      TO *restrict o_ = (TO *)p[0];                                                    \
      const TI *restrict a_ = (const TI *)p[1];                                        \
      for (int64_t i = 0; i < n; i++) {                                                \
        const TI x = a_[i];                                                            \
        o_[i] = (CONV);                                                                \
      }                                                                                \
      return;                                                                          \
    }                                                                                  \
    if (s[1] == 0) { /* a broadcast scalar: convert once */                            \
      const TI x = *(const TI *)p[1];                                                  \
      const TO v = (CONV);                                                             \
      char *o_ = p[0];                                                                 \
      for (int64_t i = 0; i < n; i++, o_ += s[0]) *(TO *)o_ = v;                       \
      return;                                                                          \
    }                                                                                  \
    char *o_ = p[0];                                                                   \
    const char *a_ = p[1];                                                             \
    for (int64_t i = 0; i < n; i++, o_ += s[0], a_ += s[1]) {                          \
      const TI x = *(const TI *)a_;                                                    \
      *(TO *)o_ = (CONV);                                                              \
    }                                                                                  \
  }

/* Same-dtype copy: memcpy for contiguous runs, else element by element. */
#define COPY_LOOP(NAME, T)                                                             \
  static void NAME(int64_t n, char **p, const int64_t *s, const void *aux) {           \
    (void)aux;                                                                         \
    if (s[0] == SZ(T) && s[1] == SZ(T)) {                                              \
      memmove(p[0], p[1], (size_t)n * sizeof(T));                                      \
      return;                                                                          \
    }                                                                                  \
    char *o_ = p[0];                                                                   \
    const char *a_ = p[1];                                                             \
    for (int64_t i = 0; i < n; i++, o_ += s[0], a_ += s[1]) *(T *)o_ = *(const T *)a_; \
  }

COPY_LOOP(copy_8, uint64_t)
COPY_LOOP(copy_4, uint32_t)
COPY_LOOP(copy_2, uint16_t)
COPY_LOOP(copy_1, uint8_t)

/* from f64 */
CAST_LOOP(f64_f32, double, float, (float)x)
CAST_LOOP(f64_i64, double, int64_t, ty__f64_to_i64_sat(x))
CAST_LOOP(f64_i32, double, int32_t, ty__f64_to_i32_sat(x))
CAST_LOOP(f64_u8, double, uint8_t, ty__f64_to_u8_sat(x))
CAST_LOOP(f64_b, double, ty_bool_t, (ty_bool_t)(x != 0))
/* from f32 (every f32 is exact in f64, so the f64 rules apply) */
CAST_LOOP(f32_f64, float, double, (double)x)
CAST_LOOP(f32_i64, float, int64_t, ty__f64_to_i64_sat(x))
CAST_LOOP(f32_i32, float, int32_t, ty__f64_to_i32_sat(x))
CAST_LOOP(f32_u8, float, uint8_t, ty__f64_to_u8_sat(x))
CAST_LOOP(f32_b, float, ty_bool_t, (ty_bool_t)(x != 0))
/* from i64 */
CAST_LOOP(i64_f64, int64_t, double, (double)x)
CAST_LOOP(i64_f32, int64_t, float, (float)x)
CAST_LOOP(i64_i32, int64_t, int32_t, (int32_t)(uint32_t)(uint64_t)x)
CAST_LOOP(i64_u8, int64_t, uint8_t, (uint8_t)x)
CAST_LOOP(i64_b, int64_t, ty_bool_t, (ty_bool_t)(x != 0))
/* from i32 */
CAST_LOOP(i32_f64, int32_t, double, (double)x)
CAST_LOOP(i32_f32, int32_t, float, (float)x)
CAST_LOOP(i32_i64, int32_t, int64_t, (int64_t)x)
CAST_LOOP(i32_u8, int32_t, uint8_t, (uint8_t)x)
CAST_LOOP(i32_b, int32_t, ty_bool_t, (ty_bool_t)(x != 0))
/* from u8 */
CAST_LOOP(u8_f64, uint8_t, double, (double)x)
CAST_LOOP(u8_f32, uint8_t, float, (float)x)
CAST_LOOP(u8_i64, uint8_t, int64_t, (int64_t)x)
CAST_LOOP(u8_i32, uint8_t, int32_t, (int32_t)x)
CAST_LOOP(u8_b, uint8_t, ty_bool_t, (ty_bool_t)(x != 0))
/* from bool: normalised to 0/1 whatever byte is stored */
CAST_LOOP(b_f64, ty_bool_t, double, (double)(x != 0))
CAST_LOOP(b_f32, ty_bool_t, float, (float)(x != 0))
CAST_LOOP(b_i64, ty_bool_t, int64_t, (int64_t)(x != 0))
CAST_LOOP(b_i32, ty_bool_t, int32_t, (int32_t)(x != 0))
CAST_LOOP(b_u8, ty_bool_t, uint8_t, (uint8_t)(x != 0))

/* the pairs with the dtypes added later (i8 i16 u16 u32 u64): an integer
 * target wraps (through its unsigned type, so no conversion is
 * implementation-defined), a float source saturates */
CAST_LOOP(f64_i8, double, int8_t, ty__f64_to_i8_sat(x))
CAST_LOOP(f64_i16, double, int16_t, ty__f64_to_i16_sat(x))
CAST_LOOP(f64_u16, double, uint16_t, ty__f64_to_u16_sat(x))
CAST_LOOP(f64_u32, double, uint32_t, ty__f64_to_u32_sat(x))
CAST_LOOP(f64_u64, double, uint64_t, ty__f64_to_u64_sat(x))
CAST_LOOP(f32_i8, float, int8_t, ty__f64_to_i8_sat(x))
CAST_LOOP(f32_i16, float, int16_t, ty__f64_to_i16_sat(x))
CAST_LOOP(f32_u16, float, uint16_t, ty__f64_to_u16_sat(x))
CAST_LOOP(f32_u32, float, uint32_t, ty__f64_to_u32_sat(x))
CAST_LOOP(f32_u64, float, uint64_t, ty__f64_to_u64_sat(x))
CAST_LOOP(i64_i8, int64_t, int8_t, (int8_t)(uint8_t)(uint64_t)x)
CAST_LOOP(i64_i16, int64_t, int16_t, (int16_t)(uint16_t)(uint64_t)x)
CAST_LOOP(i64_u16, int64_t, uint16_t, (uint16_t)x)
CAST_LOOP(i64_u32, int64_t, uint32_t, (uint32_t)x)
CAST_LOOP(i64_u64, int64_t, uint64_t, (uint64_t)x)
CAST_LOOP(i32_i8, int32_t, int8_t, (int8_t)(uint8_t)(uint64_t)x)
CAST_LOOP(i32_i16, int32_t, int16_t, (int16_t)(uint16_t)(uint64_t)x)
CAST_LOOP(i32_u16, int32_t, uint16_t, (uint16_t)x)
CAST_LOOP(i32_u32, int32_t, uint32_t, (uint32_t)x)
CAST_LOOP(i32_u64, int32_t, uint64_t, (uint64_t)x)
CAST_LOOP(u8_i8, uint8_t, int8_t, (int8_t)(uint8_t)(uint64_t)x)
CAST_LOOP(u8_i16, uint8_t, int16_t, (int16_t)(uint16_t)(uint64_t)x)
CAST_LOOP(u8_u16, uint8_t, uint16_t, (uint16_t)x)
CAST_LOOP(u8_u32, uint8_t, uint32_t, (uint32_t)x)
CAST_LOOP(u8_u64, uint8_t, uint64_t, (uint64_t)x)
CAST_LOOP(b_i8, ty_bool_t, int8_t, (int8_t)(x != 0))
CAST_LOOP(b_i16, ty_bool_t, int16_t, (int16_t)(x != 0))
CAST_LOOP(b_u16, ty_bool_t, uint16_t, (uint16_t)(x != 0))
CAST_LOOP(b_u32, ty_bool_t, uint32_t, (uint32_t)(x != 0))
CAST_LOOP(b_u64, ty_bool_t, uint64_t, (uint64_t)(x != 0))
CAST_LOOP(i8_f64, int8_t, double, (double)x)
CAST_LOOP(i8_f32, int8_t, float, (float)x)
CAST_LOOP(i8_i64, int8_t, int64_t, (int64_t)x)
CAST_LOOP(i8_i32, int8_t, int32_t, (int32_t)(uint32_t)(uint64_t)x)
CAST_LOOP(i8_u8, int8_t, uint8_t, (uint8_t)x)
CAST_LOOP(i8_b, int8_t, ty_bool_t, (ty_bool_t)(x != 0))
CAST_LOOP(i8_i16, int8_t, int16_t, (int16_t)(uint16_t)(uint64_t)x)
CAST_LOOP(i8_u16, int8_t, uint16_t, (uint16_t)x)
CAST_LOOP(i8_u32, int8_t, uint32_t, (uint32_t)x)
CAST_LOOP(i8_u64, int8_t, uint64_t, (uint64_t)x)
CAST_LOOP(i16_f64, int16_t, double, (double)x)
CAST_LOOP(i16_f32, int16_t, float, (float)x)
CAST_LOOP(i16_i64, int16_t, int64_t, (int64_t)x)
CAST_LOOP(i16_i32, int16_t, int32_t, (int32_t)(uint32_t)(uint64_t)x)
CAST_LOOP(i16_u8, int16_t, uint8_t, (uint8_t)x)
CAST_LOOP(i16_b, int16_t, ty_bool_t, (ty_bool_t)(x != 0))
CAST_LOOP(i16_i8, int16_t, int8_t, (int8_t)(uint8_t)(uint64_t)x)
CAST_LOOP(i16_u16, int16_t, uint16_t, (uint16_t)x)
CAST_LOOP(i16_u32, int16_t, uint32_t, (uint32_t)x)
CAST_LOOP(i16_u64, int16_t, uint64_t, (uint64_t)x)
CAST_LOOP(u16_f64, uint16_t, double, (double)x)
CAST_LOOP(u16_f32, uint16_t, float, (float)x)
CAST_LOOP(u16_i64, uint16_t, int64_t, (int64_t)x)
CAST_LOOP(u16_i32, uint16_t, int32_t, (int32_t)(uint32_t)(uint64_t)x)
CAST_LOOP(u16_u8, uint16_t, uint8_t, (uint8_t)x)
CAST_LOOP(u16_b, uint16_t, ty_bool_t, (ty_bool_t)(x != 0))
CAST_LOOP(u16_i8, uint16_t, int8_t, (int8_t)(uint8_t)(uint64_t)x)
CAST_LOOP(u16_i16, uint16_t, int16_t, (int16_t)(uint16_t)(uint64_t)x)
CAST_LOOP(u16_u32, uint16_t, uint32_t, (uint32_t)x)
CAST_LOOP(u16_u64, uint16_t, uint64_t, (uint64_t)x)
CAST_LOOP(u32_f64, uint32_t, double, (double)x)
CAST_LOOP(u32_f32, uint32_t, float, (float)x)
CAST_LOOP(u32_i64, uint32_t, int64_t, (int64_t)x)
CAST_LOOP(u32_i32, uint32_t, int32_t, (int32_t)(uint32_t)(uint64_t)x)
CAST_LOOP(u32_u8, uint32_t, uint8_t, (uint8_t)x)
CAST_LOOP(u32_b, uint32_t, ty_bool_t, (ty_bool_t)(x != 0))
CAST_LOOP(u32_i8, uint32_t, int8_t, (int8_t)(uint8_t)(uint64_t)x)
CAST_LOOP(u32_i16, uint32_t, int16_t, (int16_t)(uint16_t)(uint64_t)x)
CAST_LOOP(u32_u16, uint32_t, uint16_t, (uint16_t)x)
CAST_LOOP(u32_u64, uint32_t, uint64_t, (uint64_t)x)
CAST_LOOP(u64_f64, uint64_t, double, (double)x)
CAST_LOOP(u64_f32, uint64_t, float, (float)x)
CAST_LOOP(u64_i64, uint64_t, int64_t, (int64_t)x)
CAST_LOOP(u64_i32, uint64_t, int32_t, (int32_t)(uint32_t)(uint64_t)x)
CAST_LOOP(u64_u8, uint64_t, uint8_t, (uint8_t)x)
CAST_LOOP(u64_b, uint64_t, ty_bool_t, (ty_bool_t)(x != 0))
CAST_LOOP(u64_i8, uint64_t, int8_t, (int8_t)(uint8_t)(uint64_t)x)
CAST_LOOP(u64_i16, uint64_t, int16_t, (int16_t)(uint16_t)(uint64_t)x)
CAST_LOOP(u64_u16, uint64_t, uint16_t, (uint16_t)x)
CAST_LOOP(u64_u32, uint64_t, uint32_t, (uint32_t)x)

const ty_loop1d ty__cast_loops[TY_NDTYPES][TY_NDTYPES] = {
    /* columns in dtype order: f64 f32 i64 i32 u8 bool i8 i16 u16 u32 u64 */
    [TY_F64] = {copy_8, f64_f32, f64_i64, f64_i32, f64_u8, f64_b,
               f64_i8, f64_i16, f64_u16, f64_u32, f64_u64},
    [TY_F32] = {f32_f64, copy_4, f32_i64, f32_i32, f32_u8, f32_b,
               f32_i8, f32_i16, f32_u16, f32_u32, f32_u64},
    [TY_I64] = {i64_f64, i64_f32, copy_8, i64_i32, i64_u8, i64_b,
               i64_i8, i64_i16, i64_u16, i64_u32, i64_u64},
    [TY_I32] = {i32_f64, i32_f32, i32_i64, copy_4, i32_u8, i32_b,
               i32_i8, i32_i16, i32_u16, i32_u32, i32_u64},
    [TY_U8] = {u8_f64, u8_f32, u8_i64, u8_i32, copy_1, u8_b,
               u8_i8, u8_i16, u8_u16, u8_u32, u8_u64},
    [TY_BOOL] = {b_f64, b_f32, b_i64, b_i32, b_u8, copy_1,
               b_i8, b_i16, b_u16, b_u32, b_u64},
    [TY_I8] = {i8_f64, i8_f32, i8_i64, i8_i32, i8_u8, i8_b,
               copy_1, i8_i16, i8_u16, i8_u32, i8_u64},
    [TY_I16] = {i16_f64, i16_f32, i16_i64, i16_i32, i16_u8, i16_b,
               i16_i8, copy_2, i16_u16, i16_u32, i16_u64},
    [TY_U16] = {u16_f64, u16_f32, u16_i64, u16_i32, u16_u8, u16_b,
               u16_i8, u16_i16, copy_2, u16_u32, u16_u64},
    [TY_U32] = {u32_f64, u32_f32, u32_i64, u32_i32, u32_u8, u32_b,
               u32_i8, u32_i16, u32_u16, copy_4, u32_u64},
    [TY_U64] = {u64_f64, u64_f32, u64_i64, u64_i32, u64_u8, u64_b,
               u64_i8, u64_i16, u64_u16, u64_u32, copy_8},
};
