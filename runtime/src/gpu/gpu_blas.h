/*
 * gpu_blas.h — matrix products on the GPU through cuBLAS, loaded at run
 * time (dlopen, like the driver: no link-time dependency, so binaries run
 * where cuBLAS is missing and matmul stays on the CPU there).
 *
 * Layout: tycho's matrices are row-major views with element strides; cuBLAS
 * is column-major. A row-major C = A B is the column-major C^T = B^T A^T, so
 * the product is one gemm with the operands swapped, each passed as is
 * (op N) when its rows are contiguous or transposed (op T) when its columns
 * are (a transposed view): the same layouts ty__blas_layout (kernels.h)
 * accepts on the CPU; anything else is copied to a contiguous buffer first
 * by the caller, as on the CPU.
 */
#ifndef TY_GPU_BLAS_H
#define TY_GPU_BLAS_H

#include "gpu.h"

typedef struct ty__blas {
  void *lib;
  char path[256];
  int (*Create)(void **handle);
  int (*Destroy)(void *handle);
  int (*SetStream)(void *handle, ty__CUstream s);
  int (*Dgemm)(void *handle, int ta, int tb, int m, int n, int k, const double *alpha,
               const double *A, int lda, const double *B, int ldb, const double *beta, double *C,
               int ldc);
  int (*Sgemm)(void *handle, int ta, int tb, int m, int n, int k, const float *alpha,
               const float *A, int lda, const float *B, int ldb, const float *beta, float *C,
               int ldc);
  const char *(*StatusString)(int status); /* may be NULL (cuBLAS < 11.4) */
} ty__blas;

/* Open cuBLAS: $TYCHO_LIBCUBLAS, else libcublas.so.13, .so.12, .so. */
ty_status ty__blas_load(ty__blas *b, char *why, size_t whylen);
/* The simulated GPUs' cuBLAS (gpu_sim.c): a plain gemm on the CPU, queued
 * on the handle's stream like every simulated launch (lib NULL, path "sim"). */
void ty__blas_sim(ty__blas *b);
void ty__blas_unload(ty__blas *b);

/* A handle for the current context (call with the device's context
 * current). TY_EINVAL with cuBLAS's reason (no driver: "the library was not
 * initialized"). */
ty_status ty__blas_handle(const ty__blas *b, void **handle, char *err, size_t errlen);

/* C (m x n, row stride ldc elements, columns contiguous) = A (m x k) B (k x n)
 * on `stream`, f64 or f32; A and B given by their element strides (s0 between
 * rows, s1 between columns). TY_EINVAL when a layout is not one cuBLAS takes
 * or a size exceeds int (split the product first), TY_EDTYPE for integer
 * dtypes (the caller runs those on the CPU). Asynchronous. */
ty_status ty__blas_gemm(const ty__blas *b, void *handle, ty__CUstream stream, ty_dtype t,
                        int64_t m, int64_t n, int64_t k, uint64_t A, int64_t as0, int64_t as1,
                        uint64_t B, int64_t bs0, int64_t bs1, uint64_t C, int64_t ldc, char *err,
                        size_t errlen);

#endif /* TY_GPU_BLAS_H */
