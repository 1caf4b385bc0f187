/*
 * fill.cu — kernels that write stores without reading other stores' values
 * through element-wise code: fill, strided copy, and the generators random,
 * arange and linspace, with the CPU's exact results (kernels_fill.c): every
 * element's value is a function of its global flat index only, and the
 * random bits are the same SplitMix64-based counter (mix64(key + (i + 1) *
 * golden)), so GPU and CPU produce identical numbers for a seed.
 *
 * arange and linspace compute start + i*step as ONE fused multiply-add, as
 * the CPU's kernels_fill.c does with an explicit fma() at every
 * instruction-set level, so both agree on every build.
 *
 * One kernel per operation; the dtype is a parameter switched on outside
 * the loops (the branch is uniform, the loops are specialised by template).
 */
#include "common.cuh"

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

template <typename T> __device__ void random_loop(const ty_kgen &p) {
  typedef typename ty_store_t<T>::type S;
  S *o = (S *)p.ptr;
  TY_GRID_LOOP(i, p.out.n) {
    long long flat, off;
    gen_index(p, i, &flat, &off);
    o[off] = rnd<T>::v(mix64(p.key + (unsigned long long)(flat + 1) * GOLDEN));
  }
}

template <typename T> __device__ void arange_loop(const ty_kgen &p) {
  typedef typename ty_store_t<T>::type S;
  S *o = (S *)p.ptr;
  TY_GRID_LOOP(i, p.out.n) {
    long long flat, off;
    gen_index(p, i, &flat, &off);
    if (p.exact)
      o[off] = (S)ty_conv<T>::from_i64(
          (long long)((unsigned long long)p.istart + (unsigned long long)flat * (unsigned long long)p.istep));
    else
      o[off] = (S)ty_conv<T>::from_f64(fma((double)flat, p.step, p.start));
  }
}

template <typename T> __device__ void linspace_loop(const ty_kgen &p) {
  typedef typename ty_store_t<T>::type S;
  S *o = (S *)p.ptr;
  TY_GRID_LOOP(i, p.out.n) {
    long long flat, off;
    gen_index(p, i, &flat, &off);
    /* numpy: start + i*step, and the last point is exactly b */
    double v = (flat == p.last) ? p.b : fma((double)flat, p.step, p.start);
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
