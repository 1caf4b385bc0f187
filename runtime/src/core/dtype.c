/*
 * dtype.c — element types: names, sizes, numpy's promotion table, and the
 * slow-path element conversions used by formatting, items and casts of single
 * values. Hot loops never call these: kernels are specialised per dtype.
 *
 * Promotion follows numpy's result_type (np.promote_types) restricted to our
 * eleven dtypes (docs/dtypes.md has the table): bool below every number; two
 * integers of one signedness give the wider; a signed and an unsigned give the
 * narrowest signed integer holding both (u8 + i8 = i16, u32 + i32 = i64) and
 * f64 when none does (u64 + any signed); a float with an integer gives f32
 * when the integer has 16 bits or fewer (f32 holds it exactly), else f64.
 */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const dtype_names[TY_NDTYPES] = {
    [TY_F64] = "f64", [TY_F32] = "f32", [TY_I64] = "i64", [TY_I32] = "i32",
    [TY_U8] = "u8",   [TY_BOOL] = "bool", [TY_I8] = "i8", [TY_I16] = "i16",
    [TY_U16] = "u16", [TY_U32] = "u32", [TY_U64] = "u64"};

const char *ty_dtype_name(ty_dtype t) {
  return (unsigned)t < TY_NDTYPES ? dtype_names[t] : "?";
}

size_t ty_dtype_size(ty_dtype t) { return ty__dtype_size(t); } /* internal.h: the sizes */

bool ty_dtype_is_float(ty_dtype t) { return t == TY_F64 || t == TY_F32; }

bool ty_dtype_is_unsigned(ty_dtype t) {
  return t == TY_U8 || t == TY_U16 || t == TY_U32 || t == TY_U64;
}

bool ty_dtype_is_int(ty_dtype t) {
  return (unsigned)t < TY_NDTYPES && t != TY_BOOL && !ty_dtype_is_float(t);
}

void ty_dtype_limits(ty_dtype t, int64_t *lo, uint64_t *hi) {
  int64_t l = 0;
  uint64_t h = 0;
  switch (t) {
  case TY_BOOL: h = 1; break;
  case TY_U8: h = UINT8_MAX; break;
  case TY_U16: h = UINT16_MAX; break;
  case TY_U32: h = UINT32_MAX; break;
  case TY_U64: h = UINT64_MAX; break;
  case TY_I8: l = INT8_MIN, h = INT8_MAX; break;
  case TY_I16: l = INT16_MIN, h = INT16_MAX; break;
  case TY_I32: l = INT32_MIN, h = INT32_MAX; break;
  case TY_I64: l = INT64_MIN, h = INT64_MAX; break;
  default: break;
  }
  *lo = l;
  *hi = h;
}

ty_status ty_dtype_parse(const char *name, ty_dtype *out) {
  static const struct {
    const char *name;
    ty_dtype t;
  } aliases[] = {{"f64", TY_F64},    {"float64", TY_F64}, {"double", TY_F64},
                 {"f32", TY_F32},    {"float32", TY_F32}, {"float", TY_F32},
                 {"i64", TY_I64},    {"int64", TY_I64},   {"i32", TY_I32},
                 {"int32", TY_I32},  {"u8", TY_U8},       {"uint8", TY_U8},
                 {"bool", TY_BOOL},  {"i8", TY_I8},       {"int8", TY_I8},
                 {"i16", TY_I16},    {"int16", TY_I16},   {"u16", TY_U16},
                 {"uint16", TY_U16}, {"u32", TY_U32},     {"uint32", TY_U32},
                 {"u64", TY_U64},    {"uint64", TY_U64}};
  if (!name) return TY_EINVAL;
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcmp(name, aliases[i].name) == 0) {
      *out = aliases[i].t;
      return TY_OK;
    }
  return TY_EDTYPE;
}

/* The integer dtype of a signedness and a size in bytes (1, 2, 4, 8). */
static ty_dtype int_of(bool is_unsigned, size_t bytes) {
  static const ty_dtype s[4] = {TY_I8, TY_I16, TY_I32, TY_I64};
  static const ty_dtype u[4] = {TY_U8, TY_U16, TY_U32, TY_U64};
  const int k = bytes == 1 ? 0 : bytes == 2 ? 1 : bytes == 4 ? 2 : 3;
  return is_unsigned ? u[k] : s[k];
}

ty_dtype ty_dtype_promote(ty_dtype a, ty_dtype b) {
  if (a == b) return a;
  if (a == TY_BOOL) return b;
  if (b == TY_BOOL) return a;
  bool fa = ty_dtype_is_float(a), fb = ty_dtype_is_float(b);
  if (fa && fb) return TY_F64; /* f32 + f64 */
  if (fa || fb) {
    ty_dtype f = fa ? a : b, i = fa ? b : a;
    if (f == TY_F64) return TY_F64;
    /* f32 with an integer: exact for integers of 16 bits or fewer */
    return ty_dtype_size(i) <= 2 ? TY_F32 : TY_F64;
  }
  const bool ua = ty_dtype_is_unsigned(a), ub = ty_dtype_is_unsigned(b);
  const size_t sa = ty_dtype_size(a), sb = ty_dtype_size(b);
  if (ua == ub) return sa >= sb ? a : b;
  const size_t su = ua ? sa : sb, ss = ua ? sb : sa;
  if (ss > su) return ua ? b : a; /* the signed one holds the unsigned */
  return su == 8 ? TY_F64 : int_of(false, 2 * su);
}

ty_dtype ty_dtype_float_of(ty_dtype t) {
  if (ty_dtype_is_float(t)) return t;
  return (unsigned)t < TY_NDTYPES && ty_dtype_size(t) <= 2 ? TY_F32 : TY_F64;
}

const char *ty_status_name(ty_status s) {
  switch (s) {
  case TY_OK: return "TY_OK";
  case TY_EINVAL: return "TY_EINVAL";
  case TY_ENOMEM: return "TY_ENOMEM";
  case TY_ERANGE: return "TY_ERANGE";
  case TY_ESHAPE: return "TY_ESHAPE";
  case TY_EDTYPE: return "TY_EDTYPE";
  case TY_EIO: return "TY_EIO";
  case TY_ETASK: return "TY_ETASK";
  case TY_ELIMIT: return "TY_ELIMIT";
  case TY_EINTR: return "TY_EINTR";
  case TY_ENOTFOUND: return "TY_ENOTFOUND";
  }
  return "TY_E?";
}

double ty__load_f64(const void *p, ty_dtype t) {
  switch (t) {
  case TY_F64: return *(const double *)p;
  case TY_F32: return *(const float *)p;
  case TY_I64: return (double)*(const int64_t *)p;
  case TY_I32: return *(const int32_t *)p;
  case TY_U8: return *(const uint8_t *)p;
  case TY_BOOL: return *(const uint8_t *)p != 0;
  case TY_I8: return *(const int8_t *)p;
  case TY_I16: return *(const int16_t *)p;
  case TY_U16: return *(const uint16_t *)p;
  case TY_U32: return *(const uint32_t *)p;
  case TY_U64: return (double)*(const uint64_t *)p;
  default: return 0;
  }
}

/* Float -> integer without undefined behaviour: NaN gives 0, out-of-range
 * values saturate. */
static int64_t f64_to_i64(double v) {
  if (isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

int64_t ty__load_i64(const void *p, ty_dtype t) {
  switch (t) {
  case TY_F64: return f64_to_i64(*(const double *)p);
  case TY_F32: return f64_to_i64(*(const float *)p);
  case TY_I64: return *(const int64_t *)p;
  case TY_I32: return *(const int32_t *)p;
  case TY_U8: return *(const uint8_t *)p;
  case TY_BOOL: return *(const uint8_t *)p != 0;
  case TY_I8: return *(const int8_t *)p;
  case TY_I16: return *(const int16_t *)p;
  case TY_U16: return *(const uint16_t *)p;
  case TY_U32: return *(const uint32_t *)p;
  case TY_U64: return (int64_t)*(const uint64_t *)p; /* the bits: above 2^63 reads negative */
  default: return 0;
  }
}

void ty__store_i64(void *p, ty_dtype t, int64_t v) {
  switch (t) {
  case TY_F64: *(double *)p = (double)v; break;
  case TY_F32: *(float *)p = (float)v; break;
  case TY_I64: *(int64_t *)p = v; break;
  case TY_I32: *(int32_t *)p = (int32_t)(uint32_t)v; break; /* wraps like numpy */
  case TY_U8: *(uint8_t *)p = (uint8_t)v; break;
  case TY_BOOL: *(uint8_t *)p = v != 0; break;
  case TY_I8: *(int8_t *)p = (int8_t)(uint8_t)v; break;
  case TY_I16: *(int16_t *)p = (int16_t)(uint16_t)v; break;
  case TY_U16: *(uint16_t *)p = (uint16_t)v; break;
  case TY_U32: *(uint32_t *)p = (uint32_t)v; break;
  case TY_U64: *(uint64_t *)p = (uint64_t)v; break;
  default: break;
  }
}

void ty__store_f64(void *p, ty_dtype t, double v) {
  switch (t) {
  case TY_F64: *(double *)p = v; break;
  case TY_F32: *(float *)p = (float)v; break;
  case TY_BOOL: *(uint8_t *)p = v != 0; break;
  case TY_I32: /* saturate to the target's range, as casts do */
    *(int32_t *)p = isnan(v) ? 0 : v >= 2147483647.0 ? INT32_MAX : v <= -2147483648.0 ? INT32_MIN : (int32_t)v;
    break;
  case TY_U8: *(uint8_t *)p = isnan(v) || v <= 0 ? 0 : v >= 255 ? 255 : (uint8_t)v; break;
  case TY_I8: *(int8_t *)p = isnan(v) ? 0 : v >= 127 ? 127 : v <= -128 ? -128 : (int8_t)v; break;
  case TY_I16:
    *(int16_t *)p = isnan(v) ? 0 : v >= 32767 ? 32767 : v <= -32768 ? -32768 : (int16_t)v;
    break;
  case TY_U16: *(uint16_t *)p = isnan(v) || v <= 0 ? 0 : v >= 65535 ? 65535 : (uint16_t)v; break;
  case TY_U32:
    *(uint32_t *)p = isnan(v) || v <= 0 ? 0 : v >= 4294967295.0 ? UINT32_MAX : (uint32_t)v;
    break;
  case TY_U64:
    *(uint64_t *)p = isnan(v) || v <= 0                 ? 0
                     : v >= 18446744073709551615.0 ? UINT64_MAX
                                                   : (uint64_t)v;
    break;
  default: ty__store_i64(p, t, f64_to_i64(v)); break;
  }
}

ty_status ty_parse_size(const char *text, size_t *out) {
  if (!text) return TY_EINVAL;
  while (isspace((unsigned char)*text)) text++;
  if (!*text || *text == '-') return TY_EINVAL;
  errno = 0;
  char *end;
  double v = strtod(text, &end);
  if (end == text || errno || !(v >= 0) || isinf(v)) return TY_EINVAL;
  while (isspace((unsigned char)*end)) end++;
  static const struct {
    const char *suffix;
    double mult;
  } units[] = {{"", 1},          {"b", 1},          {"k", 1024.0},       {"kib", 1024.0},
               {"kb", 1e3},      {"m", 1048576.0},  {"mib", 1048576.0},  {"mb", 1e6},
               {"g", 1073741824.0}, {"gib", 1073741824.0}, {"gb", 1e9},
               {"t", 1099511627776.0}, {"tib", 1099511627776.0}, {"tb", 1e12}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcasecmp(end, units[i].suffix) == 0) {
      double bytes = v * units[i].mult;
      if (bytes >= 18446744073709551615.0) return TY_ERANGE;
      *out = (size_t)bytes;
      return TY_OK;
    }
  }
  return TY_EINVAL;
}

void ty_format_bytes(double bytes, char *buf, size_t len) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    u++;
  }
  if (u == 0)
    snprintf(buf, len, "%.0f B", bytes);
  else
    snprintf(buf, len, "%.1f %s", bytes, units[u]);
}
