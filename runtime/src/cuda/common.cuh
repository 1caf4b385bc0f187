/*
 * common.cuh — device helpers shared by the built-in kernels: n-d offsets,
 * the dtype conversions of kernels_cast.c, and the grid-stride loop.
 *
 * Conversions must match the CPU bit for bit (tests compare GPU results
 * with CPU ones exactly), so they are the same formulas: saturating float
 * -> integer (NaN -> 0), wrapping integer narrowing, x != 0 for bool.
 */
#ifndef TY_CUDA_COMMON_CUH
#define TY_CUDA_COMMON_CUH

#include "kernels_abi.h"

typedef unsigned char ty_u8;

#define TY_BLOCK TY_K_BLOCK

/* Offset (elements) of the i-th element (C order) of a walk. */
__device__ __forceinline__ long long ty_offset(long long i, int ndim, const long long *shape,
                                               const long long *stride) {
  if (ndim == 1) return i * stride[0];
  long long off = 0;
  for (int d = ndim - 1; d > 0; d--) {
    long long q = i / shape[d];
    off += (i - q * shape[d]) * stride[d];
    i = q;
  }
  return ndim > 0 ? off + i * stride[0] : 0;
}

#define TY_GRID_LOOP(i, n)                                                                 \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n);            \
       i += (long long)gridDim.x * blockDim.x)

__device__ __forceinline__ long long ty_sat_i64(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775808.0) return 9223372036854775807LL;
  if (v < -9223372036854775808.0) return -9223372036854775807LL - 1;
  return (long long)v;
}
__device__ __forceinline__ int ty_sat_i32(double v) {
  if (v != v) return 0;
  if (v >= 2147483648.0) return 2147483647;
  if (v <= -2147483649.0) return -2147483647 - 1;
  return (int)v;
}
__device__ __forceinline__ ty_u8 ty_sat_u8(double v) {
  if (v != v) return 0;
  if (v >= 256.0) return 255;
  if (v <= -1.0) return 0;
  return (ty_u8)v;
}

/* A double (float path) or an int64 (exact path) into dtype T, by the CPU's rules. */
template <typename T> struct ty_conv;
template <> struct ty_conv<double> {
  static __device__ double from_f64(double v) { return v; }
  static __device__ double from_i64(long long v) { return (double)v; }
};
template <> struct ty_conv<float> {
  static __device__ float from_f64(double v) { return (float)v; }
  static __device__ float from_i64(long long v) { return (float)v; }
};
template <> struct ty_conv<long long> {
  static __device__ long long from_f64(double v) { return ty_sat_i64(v); }
  static __device__ long long from_i64(long long v) { return v; }
};
template <> struct ty_conv<int> {
  static __device__ int from_f64(double v) { return ty_sat_i32(v); }
  static __device__ int from_i64(long long v) { return (int)(unsigned)(unsigned long long)v; }
};
template <> struct ty_conv<ty_u8> {
  static __device__ ty_u8 from_f64(double v) { return ty_sat_u8(v); }
  static __device__ ty_u8 from_i64(long long v) { return (ty_u8)v; }
};
/* bool: a distinct tag type over the same byte */
struct ty_bool_tag {};
template <> struct ty_conv<ty_bool_tag> {
  static __device__ ty_u8 from_f64(double v) { return (ty_u8)(v != 0); }
  static __device__ ty_u8 from_i64(long long v) { return (ty_u8)(v != 0); }
};
template <typename T> struct ty_store_t { typedef T type; };
template <> struct ty_store_t<ty_bool_tag> { typedef ty_u8 type; };

/* Run F<T> for a dtype code (the switch is outside every loop). */
#define TY_DISPATCH_DTYPE(dtype, F, ...)                                                   \
  switch (dtype) {                                                                         \
  case TY_K_F64: F<double>(__VA_ARGS__); break;                                            \
  case TY_K_F32: F<float>(__VA_ARGS__); break;                                             \
  case TY_K_I64: F<long long>(__VA_ARGS__); break;                                         \
  case TY_K_I32: F<int>(__VA_ARGS__); break;                                               \
  case TY_K_U8: F<ty_u8>(__VA_ARGS__); break;                                              \
  default: F<ty_bool_tag>(__VA_ARGS__); break;                                             \
  }

#endif /* TY_CUDA_COMMON_CUH */
