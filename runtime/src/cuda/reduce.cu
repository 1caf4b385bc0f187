/*
 * reduce.cu — sum, prod, min, max, argmin, argmax over any set of axes
 * (ty_kred, kernels_abi.h: an outer space of output elements, a reduced
 * space per output), with the CPU's types and rules (kernels_reduce.c):
 *  - sum/prod of floats accumulate in double (f32 inputs too) and keep the
 *    input's dtype; of integers and bool in unsigned 64-bit (wrapping, no
 *    undefined overflow), giving i64;
 *  - min/max keep the dtype and propagate NaN;
 *  - argmin/argmax give the first index (C order over the reduced space) of
 *    the extreme, the first NaN when there is one.
 * Exact kinds (integer sums and products, min, max, argmin, argmax) give
 * the CPU's results bit for bit; float sums and products add in another
 * order (a tree: error O(log n) ulps, like the CPU's pairwise sum, not the
 * same bits).
 *
 * Three kernels per (kind, dtype):
 *   blocks   a block (or `chunks` blocks) per output element, threads stride
 *            over its reduced elements, then a shared-memory tree: for few
 *            outputs with many inputs each (full reductions, rows);
 *   finish   one thread per output combines the chunks' partials in order;
 *   threads  one thread per output walks its reduced elements: for many
 *            outputs with few inputs each (reducing a leading axis, where
 *            neighbouring threads read neighbouring elements).
 * The launcher (gpu_kernels.c) chooses.
 */
#include "common.cuh"

#include <math_constants.h>

/* ---- the kinds ------------------------------------------------------------------- */

template <typename T> struct num {
  typedef typename ty_store_t<T>::type S;
  static const bool is_float = false;
};
template <> struct num<double> {
  typedef double S;
  static const bool is_float = true;
};
template <> struct num<float> {
  typedef float S;
  static const bool is_float = true;
};

/* sum and prod: the accumulator and output types */
template <typename T> struct arith {
  typedef unsigned long long A;
  typedef long long O;
  static __device__ A lift(typename num<T>::S x) { return (A)(long long)x; }
  static __device__ A from_out(O o) { return (A)o; }
  static __device__ O to_out(A a) { return (O)a; }
};
template <> struct arith<double> {
  typedef double A;
  typedef double O;
  static __device__ A lift(double x) { return x; }
  static __device__ A from_out(O o) { return o; }
  static __device__ O to_out(A a) { return a; }
};
template <> struct arith<float> {
  typedef double A;
  typedef float O;
  static __device__ A lift(float x) { return (double)x; }
  static __device__ A from_out(O o) { return (double)o; }
  static __device__ O to_out(A a) { return (float)a; }
};

template <typename T> struct KSum {
  typedef typename num<T>::S S;
  typedef typename arith<T>::A A;
  typedef typename arith<T>::O O;
  static __device__ A identity() { return (A)0; }
  static __device__ A lift(S x, long long) { return arith<T>::lift(x); }
  static __device__ A combine(A a, A b) { return a + b; }
  static __device__ void put(O *o, A a, int accumulate) {
    *o = arith<T>::to_out(accumulate ? combine(arith<T>::from_out(*o), a) : a);
  }
};

template <typename T> struct KProd {
  typedef typename num<T>::S S;
  typedef typename arith<T>::A A;
  typedef typename arith<T>::O O;
  static __device__ A identity() { return (A)1; }
  static __device__ A lift(S x, long long) { return arith<T>::lift(x); }
  static __device__ A combine(A a, A b) { return a * b; }
  static __device__ void put(O *o, A a, int accumulate) {
    *o = arith<T>::to_out(accumulate ? combine(arith<T>::from_out(*o), a) : a);
  }
};

/* the extremes of a dtype, as the identities of min and max */
template <typename T> struct lim;
template <> struct lim<double> {
  static __device__ double lo() { return -CUDART_INF; }
  static __device__ double hi() { return CUDART_INF; }
};
template <> struct lim<float> {
  static __device__ float lo() { return -CUDART_INF_F; }
  static __device__ float hi() { return CUDART_INF_F; }
};
template <> struct lim<long long> {
  static __device__ long long lo() { return -9223372036854775807LL - 1; }
  static __device__ long long hi() { return 9223372036854775807LL; }
};
template <> struct lim<int> {
  static __device__ int lo() { return -2147483647 - 1; }
  static __device__ int hi() { return 2147483647; }
};
template <> struct lim<ty_u8> {
  static __device__ ty_u8 lo() { return 0; }
  static __device__ ty_u8 hi() { return 255; }
};
template <> struct lim<ty_bool_tag> {
  static __device__ ty_u8 lo() { return 0; }
  static __device__ ty_u8 hi() { return 1; }
};

/* min (MAX = false) and max: NaN sticks */
template <typename T, bool MAX> struct KExt {
  typedef typename num<T>::S S;
  typedef S A;
  typedef S O;
  static __device__ A identity() { return MAX ? lim<T>::lo() : lim<T>::hi(); }
  static __device__ A lift(S x, long long) { return x; }
  static __device__ A combine(A a, A b) {
    if (num<T>::is_float) {
      if (a != a) return a;
      if (b != b) return b;
    }
    return MAX ? (b > a ? b : a) : (b < a ? b : a);
  }
  static __device__ void put(O *o, A a, int accumulate) { *o = accumulate ? combine(*o, a) : a; }
};

/* argmin / argmax: (value, index); index -1 is "nothing yet" */
template <typename S> struct vi {
  S v;
  long long i;
};

template <typename T, bool MAX> struct KArg {
  typedef typename num<T>::S S;
  typedef vi<S> A;
  typedef long long O;
  static __device__ A identity() {
    A a;
    a.v = (S)0;
    a.i = -1;
    return a;
  }
  static __device__ A lift(S x, long long i) {
    A a;
    a.v = x;
    a.i = i;
    return a;
  }
  /* the better of two candidates; ties and NaNs go to the lower index, so
   * the result does not depend on the order of combination */
  static __device__ A combine(A a, A b) {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    if (num<T>::is_float) {
      bool na = a.v != a.v, nb = b.v != b.v;
      if (na || nb) {
        if (na && nb) return a.i < b.i ? a : b;
        return na ? a : b;
      }
    }
    if (a.v == b.v) return a.i < b.i ? a : b;
    return (MAX ? b.v > a.v : b.v < a.v) ? b : a;
  }
  static __device__ void put(O *o, A a, int) { *o = a.i; }
};

/* ---- the kernels -------------------------------------------------------------------- */

template <class K> __device__ void red_blocks(const ty_kred &p) {
  typedef typename K::A A;
  __shared__ A sh[TY_BLOCK];
  const typename K::S *in = (const typename K::S *)p.in;
  const long long per = (p.nred + p.chunks - 1) / p.chunks;
  for (long long o = blockIdx.y; o < p.nout; o += gridDim.y) {
    const long long base = ty_offset(o, p.ondim, p.oshape, p.ostride_in);
    const long long lo = (long long)blockIdx.x * per;
    const long long hi = lo + per < p.nred ? lo + per : p.nred;
    A acc = K::identity();
    if (p.rndim == 1) {
      const long long s = p.rstride[0];
      for (long long r = lo + threadIdx.x; r < hi; r += blockDim.x)
        acc = K::combine(acc, K::lift(in[base + r * s], r));
    } else {
      for (long long r = lo + threadIdx.x; r < hi; r += blockDim.x)
        acc = K::combine(acc, K::lift(in[base + ty_offset(r, p.rndim, p.rshape, p.rstride)], r));
    }
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) sh[threadIdx.x] = K::combine(sh[threadIdx.x], sh[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      if (p.chunks == 1)
        K::put((typename K::O *)p.out + ty_offset(o, p.ondim, p.oshape, p.ostride_out), sh[0],
               p.accumulate);
      else
        ((A *)p.partials)[o * p.chunks + blockIdx.x] = sh[0];
    }
    __syncthreads();
  }
}

template <class K> __device__ void red_finish(const ty_kred &p) {
  typedef typename K::A A;
  const A *part = (const A *)p.partials;
  TY_GRID_LOOP(o, p.nout) {
    A acc = K::identity();
    for (int c = 0; c < p.chunks; c++) acc = K::combine(acc, part[o * p.chunks + c]);
    K::put((typename K::O *)p.out + ty_offset(o, p.ondim, p.oshape, p.ostride_out), acc, p.accumulate);
  }
}

template <class K> __device__ void red_threads(const ty_kred &p) {
  typedef typename K::A A;
  const typename K::S *in = (const typename K::S *)p.in;
  TY_GRID_LOOP(o, p.nout) {
    const long long base = ty_offset(o, p.ondim, p.oshape, p.ostride_in);
    A acc = K::identity();
    for (long long r = 0; r < p.nred; r++)
      acc = K::combine(acc, K::lift(in[base + ty_offset(r, p.rndim, p.rshape, p.rstride)], r));
    K::put((typename K::O *)p.out + ty_offset(o, p.ondim, p.oshape, p.ostride_out), acc, p.accumulate);
  }
}

#define TY_RED_KERNELS(NAME, K)                                                             \
  extern "C" __global__ void __launch_bounds__(TY_BLOCK) ty_k_red_blocks_##NAME(const ty_kred p) { \
    red_blocks<K>(p);                                                                       \
  }                                                                                         \
  extern "C" __global__ void __launch_bounds__(TY_BLOCK) ty_k_red_finish_##NAME(const ty_kred p) { \
    red_finish<K>(p);                                                                       \
  }                                                                                         \
  extern "C" __global__ void __launch_bounds__(TY_BLOCK) ty_k_red_threads_##NAME(const ty_kred p) { \
    red_threads<K>(p);                                                                      \
  }

#define TY_RED_DTYPES(KIND, K)                                                              \
  TY_RED_KERNELS(KIND##_f64, K<double>)                                                     \
  TY_RED_KERNELS(KIND##_f32, K<float>)                                                      \
  TY_RED_KERNELS(KIND##_i64, K<long long>)                                                  \
  TY_RED_KERNELS(KIND##_i32, K<int>)                                                        \
  TY_RED_KERNELS(KIND##_u8, K<ty_u8>)                                                       \
  TY_RED_KERNELS(KIND##_bool, K<ty_bool_tag>)

template <typename T> using KMin = KExt<T, false>;
template <typename T> using KMax = KExt<T, true>;
template <typename T> using KArgmin = KArg<T, false>;
template <typename T> using KArgmax = KArg<T, true>;

TY_RED_DTYPES(sum, KSum)
TY_RED_DTYPES(prod, KProd)
TY_RED_DTYPES(min, KMin)
TY_RED_DTYPES(max, KMax)
TY_RED_DTYPES(argmin, KArgmin)
TY_RED_DTYPES(argmax, KArgmax)
