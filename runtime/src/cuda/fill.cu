/*
 * fill.cu — kernels that write stores without reading other stores' values
 * through element-wise code: fill, strided copy, and the generators random,
 * arange and linspace, with the CPU's exact results (kernels_fill.c): every
 * element's value is a function of its global flat index only, and the
 * random bits are the same SplitMix64-based counter (mix64(key + (i + 1) *
 * golden)), so GPU and CPU produce identical numbers for a seed.
 *
 * arange and linspace compute numpy's values as the CPU's kernels_fill.c
 * does (see there): each product and sum rounded on its own, written with
 * the _rn intrinsics, which nvcc never contracts into an FMA, so both agree
 * on every build.
 *
 * One kernel per operation; the dtype is a parameter switched on outside
 * the loops (the branch is uniform, the loops are specialised by template).
 */
#include "common.cuh"

#include <math_constants.h>

/* ---- fill ---------------------------------------------------------------------- */

template <typename T> __device__ void fill_loop(const ty_kfill &p) {
  typedef typename ty_store_t<T>::type S;
  S *o = (S *)p.ptr;
  const bool fl = p.out.dtype == TY_K_F64 || p.out.dtype == TY_K_F32;
  const S v = fl ? (S)ty_conv<T>::from_f64(p.fval) : (S)ty_conv<T>::from_i64(p.ival);
  if (p.out.ndim == 1 && p.out.stride[0] == 1) {
    TY_GRID_LOOP(i, p.out.n) o[i] = v;
  } else {
    TY_GRID_LOOP(i, p.out.n) o[ty_offset(i, p.out.ndim, p.out.shape, p.out.stride)] = v;
  }
}

extern "C" __global__ void __launch_bounds__(TY_BLOCK) ty_k_fill(const ty_kfill p) {
  TY_DISPATCH_DTYPE(p.out.dtype, fill_loop, p)
}

/* ---- copy ---------------------------------------------------------------------- */

template <typename T> __device__ void copy_loop(const ty_kcopy &p) {
  T *d = (T *)p.dst;
  const T *s = (const T *)p.src;
  if (p.ndim == 1 && p.dst_stride[0] == 1 && p.src_stride[0] == 1) {
    TY_GRID_LOOP(i, p.n) d[i] = s[i];
  } else {
    TY_GRID_LOOP(i, p.n) {
      d[ty_offset(i, p.ndim, p.shape, p.dst_stride)] = s[ty_offset(i, p.ndim, p.shape, p.src_stride)];
    }
  }
}

extern "C" __global__ void __launch_bounds__(TY_BLOCK) ty_k_copy(const ty_kcopy p) {
  if (p.es == 8) copy_loop<unsigned long long>(p);
  else if (p.es == 4) copy_loop<unsigned>(p);
  else if (p.es == 2) copy_loop<unsigned short>(p);
  else copy_loop<ty_u8>(p);
}

/* ---- generators ------------------------------------------------------------------- */

#define GOLDEN 0x9e3779b97f4a7c15ULL

__device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* The flat index (whole store, C order) and the offset of piece element i. */
__device__ __forceinline__ void gen_index(const ty_kgen &p, long long i, long long *flat,
                                          long long *off) {
  long long f = 0, o = 0;
  for (int d = p.out.ndim - 1; d >= 0; d--) {
    long long q = d > 0 ? i / p.out.shape[d] : 0;
    long long idx = d > 0 ? i - q * p.out.shape[d] : i;
    f += (p.lo[d] + idx) * p.gstride[d];
    o += idx * p.out.stride[d];
    i = q;
  }
  *flat = f;
  *off = o;
}

/* The random value of dtype T from 64 random bits (kernels_fill.c's RANDOM_RUN). */
template <typename T> struct rnd;
template <> struct rnd<double> {
  static __device__ double v(unsigned long long r) { return (double)(long long)(r >> 11) * 0x1.0p-53; }
};
template <> struct rnd<float> {
  static __device__ float v(unsigned long long r) { return (float)(int)(r >> 40) * 0x1.0p-24f; }
};
template <> struct rnd<long long> {
  static __device__ long long v(unsigned long long r) { return (long long)r; }
};
template <> struct rnd<int> {
  static __device__ int v(unsigned long long r) { return (int)(unsigned)(r >> 32); }
};
template <> struct rnd<ty_u8> {
  static __device__ ty_u8 v(unsigned long long r) { return (ty_u8)(r >> 56); }
};
template <> struct rnd<ty_bool_tag> {
  static __device__ ty_u8 v(unsigned long long r) { return (ty_u8)(r >> 63); }
};

/* ---- distributions: kernels_fill.c's, step for step (see there) ---- */

__device__ __forceinline__ unsigned long long rbits(unsigned long long key, unsigned long long i) {
  return mix64(key + (i + 1) * GOLDEN);
}
__device__ __forceinline__ unsigned long long subkey(unsigned long long key, unsigned long long j) {
  return j ? mix64(key ^ (j * 0xd1b54a32d192ed03ULL)) : key;
}
__device__ __forceinline__ double u01(unsigned long long r) { return (double)(long long)(r >> 11) * 0x1.0p-53; }

/* r * range = hi:lo in 64-bit halves (the CPU uses unsigned __int128) */
__device__ __forceinline__ unsigned long long mul128(unsigned long long a, unsigned long long b,
                                                    unsigned long long *lo) {
  const unsigned long long a0 = a & 0xffffffffULL, a1 = a >> 32, b0 = b & 0xffffffffULL, b1 = b >> 32;
  const unsigned long long p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const unsigned long long mid = (p00 >> 32) + (p01 & 0xffffffffULL) + (p10 & 0xffffffffULL);
  *lo = (mid << 32) | (p00 & 0xffffffffULL);
  return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

__device__ unsigned long long bounded(unsigned long long key, unsigned long long i, unsigned long long range) {
  const unsigned long long r = rbits(key, i);
  if (range == 0) return r;
  unsigned long long lo, hi = mul128(r, range, &lo);
  if (lo < range) {
    const unsigned long long floor = (0 - range) % range;
    for (unsigned long long j = 1; lo < floor && j < 64; j++) hi = mul128(rbits(subkey(key, j), i), range, &lo);
  }
  return hi;
}

__device__ double draw_float(const ty_kgen &p, unsigned long long i) {
  const double u = u01(rbits(p.key, i));
  if (p.rkind == TY_K_RAND_UNIFORM) return fma(p.rb - p.ra, u, p.ra);
  if (p.rkind == TY_K_RAND_NORMAL) {
    const double u2 = u01(rbits(subkey(p.key, 1), i));
    const double z = sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * u2);
    return fma(p.rb, z, p.ra);
  }
  return p.ra * -log(1.0 - u);
}

/* A float draw into dtype T; uniform's value that rounded up to hi becomes the
 * largest below it. Only f64 and f32 are drawn (ops.c checks). */
template <typename T> struct dist_store {
  static __device__ typename ty_store_t<T>::type v(double x, const ty_kgen &p) {
    (void)p;
    return (typename ty_store_t<T>::type)ty_conv<T>::from_f64(x);
  }
};
template <> struct dist_store<double> {
  static __device__ double v(double x, const ty_kgen &p) {
    return p.rkind == TY_K_RAND_UNIFORM && p.rb > p.ra && x >= p.rb ? nextafter(p.rb, -CUDART_INF) : x;
  }
};
template <> struct dist_store<float> {
  static __device__ float v(double x, const ty_kgen &p) {
    const float f = (float)x, fb = (float)p.rb;
    return p.rkind == TY_K_RAND_UNIFORM && p.rb > p.ra && f >= fb ? nextafterf(fb, -CUDART_INF_F) : f;
  }
};

template <typename T> __device__ void random_loop(const ty_kgen &p) {
  typedef typename ty_store_t<T>::type S;
  S *o = (S *)p.ptr;
  TY_GRID_LOOP(i, p.out.n) {
    long long flat, off;
    gen_index(p, i, &flat, &off);
    const unsigned long long f = (unsigned long long)flat;
    if (p.rkind == TY_K_RAND_BITS)
      o[off] = rnd<T>::v(rbits(p.key, f));
    else if (p.rkind == TY_K_RAND_INTEGERS)
      o[off] = (S)ty_conv<T>::from_i64((long long)((unsigned long long)p.rlo + bounded(p.key, f, p.rrange)));
    else
      o[off] = dist_store<T>::v(draw_float(p, f), p);
  }
}

template <typename T> __device__ void arange_loop(const ty_kgen &p) {
  typedef typename ty_store_t<T>::type S;
  S *o = (S *)p.ptr;
  TY_GRID_LOOP(i, p.out.n) {
    long long flat, off;
    gen_index(p, i, &flat, &off);
    if (p.exact) {
      o[off] = (S)ty_conv<T>::from_i64(
          (long long)((unsigned long long)p.istart + (unsigned long long)flat * (unsigned long long)p.istep));
    } else if (p.out.dtype == TY_K_F32) { /* numpy's FLOAT_fill: in float */
      const float x0 = (float)p.start, x1 = (float)__dadd_rn(p.start, p.step);
      const float v = flat == 0 ? x0 : flat == 1 ? x1 : __fadd_rn(x0, __fmul_rn((float)flat, __fsub_rn(x1, x0)));
      o[off] = (S)ty_conv<T>::from_f64((double)v);
    } else { /* numpy's DOUBLE_fill */
      const double x1 = __dadd_rn(p.start, p.step);
      const double v = flat == 0 ? p.start : flat == 1 ? x1
                     : __dadd_rn(p.start, __dmul_rn((double)flat, __dsub_rn(x1, p.start)));
      o[off] = (S)ty_conv<T>::from_f64(v);
    }
  }
}

template <typename T> __device__ void linspace_loop(const ty_kgen &p) {
  typedef typename ty_store_t<T>::type S;
  S *o = (S *)p.ptr;
  TY_GRID_LOOP(i, p.out.n) {
    long long flat, off;
    gen_index(p, i, &flat, &off);
    /* numpy: i*step + start, the last point exactly b; (i / div) * delta
     * + start when the step underflows to 0 */
    double v = (flat == p.last) ? p.b
             : (p.step == 0 && p.last > 0)
                 ? __dadd_rn(__dmul_rn(__ddiv_rn((double)flat, (double)p.last), __dsub_rn(p.b, p.start)), p.start)
                 : __dadd_rn(__dmul_rn((double)flat, p.step), p.start);
    o[off] = (S)ty_conv<T>::from_f64(v);
  }
}

extern "C" __global__ void __launch_bounds__(TY_BLOCK) ty_k_random(const ty_kgen p) {
  TY_DISPATCH_DTYPE(p.out.dtype, random_loop, p)
}
extern "C" __global__ void __launch_bounds__(TY_BLOCK) ty_k_arange(const ty_kgen p) {
  TY_DISPATCH_DTYPE(p.out.dtype, arange_loop, p)
}
extern "C" __global__ void __launch_bounds__(TY_BLOCK) ty_k_linspace(const ty_kgen p) {
  TY_DISPATCH_DTYPE(p.out.dtype, linspace_loop, p)
}
