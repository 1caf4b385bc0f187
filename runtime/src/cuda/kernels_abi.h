/*
 * kernels_abi.h — the parameters of the built-in CUDA kernels (the .cu
 * files of this directory), shared by the kernels and by their launchers in
 * gpu_kernels.c, which is plain C compiled without CUDA headers. Every
 * struct is passed BY VALUE as the kernel's first parameter, so its layout
 * is the ABI: only 8-byte fields (and pairs of ints), no pointers to host
 * memory, and the total under CUDA's 4 KiB parameter limit.
 *
 * Element strides, never byte strides; indices are C order.
 */
#ifndef TY_CUDA_KERNELS_ABI_H
#define TY_CUDA_KERNELS_ABI_H

#define TY_K_RANK 16  /* = TY_MAX_RANK */
#define TY_K_BLOCK 256 /* threads per block of every built-in kernel */

/* dtype codes: the values of ty_dtype (tycho.h) */
enum { TY_K_F64 = 0, TY_K_F32, TY_K_I64, TY_K_I32, TY_K_U8, TY_K_BOOL };

/* An n-d walk over `n` elements of a box `shape`: element i (C order) is at
 * sum(idx[d] * stride[d]). */
typedef struct ty_knd {
  long long n;
  int ndim, dtype;
  long long shape[TY_K_RANK];
  long long stride[TY_K_RANK];
} ty_knd;

/* fill: every element of `out` = value (ival for integer dtypes and bool,
 * fval for floats; already converted by the host, as kernels_fill.c). */
typedef struct ty_kfill {
  ty_knd out;
  unsigned long long ptr;
  long long ival;
  double fval;
} ty_kfill;

/* copy: dst[i] = src[i] over the same box, same element size `es` (1, 4, 8). */
typedef struct ty_kcopy {
  long long n;
  int ndim, es;
  long long shape[TY_K_RANK];
  long long dst_stride[TY_K_RANK];
  long long src_stride[TY_K_RANK];
  unsigned long long dst, src;
} ty_kcopy;

/* Generators (random, arange, linspace): element idx of the piece has the
 * C-order flat index sum((lo[d] + idx[d]) * gstride[d]) in the whole store,
 * the only input of its value, so any split gives the same numbers. */
typedef struct ty_kgen {
  ty_knd out;
  long long lo[TY_K_RANK];
  long long gstride[TY_K_RANK];
  unsigned long long ptr;
  unsigned long long key;  /* random: the stream's key (kernels_fill.c's random_key) */
  double start, step;      /* arange (float path), linspace: a, step */
  long long istart, istep; /* arange, exact integer path */
  long long exact;         /* arange: integer path */
  long long last;          /* linspace: n - 1 (its point is exactly `b`), -1: none */
  double b;                /* linspace */
  long long rkind;         /* random: the distribution (tycho/random.h's ty_random_dist) */
  double ra, rb;           /* random: its parameters (kernels.h's ty__random_args) */
  long long rlo;           /* random integers: lo + [0, rrange) */
  unsigned long long rrange;
} ty_kgen;

enum { TY_K_GEN_RANDOM = 0, TY_K_GEN_ARANGE, TY_K_GEN_LINSPACE };
/* rkind: tycho/random.h's ty_random_dist (gpu_kernels.c asserts they agree) */
enum { TY_K_RAND_BITS = 0, TY_K_RAND_UNIFORM, TY_K_RAND_NORMAL, TY_K_RAND_EXPONENTIAL, TY_K_RAND_INTEGERS };

/* Reductions. The input's index space is split into an outer space (one
 * output element each) and a reduced space; both are walked in C order.
 * Output element o is at sum(oidx[d] * ostride_out[d]) in `out`; its inputs
 * at sum(oidx[d] * ostride_in[d]) + sum(ridx[e] * rstride[e]) in `in`. */
typedef struct ty_kred {
  long long nout, nred;
  int ondim, rndim;
  long long oshape[TY_K_RANK], ostride_in[TY_K_RANK], ostride_out[TY_K_RANK];
  long long rshape[TY_K_RANK], rstride[TY_K_RANK];
  unsigned long long in, out, partials;
  int accumulate; /* 1: out = out op result (a REDUCE privilege); 0: out = result */
  int chunks;     /* blocks per output element; > 1: partials, then the finish kernel */
} ty_kred;

#endif /* TY_CUDA_KERNELS_ABI_H */
