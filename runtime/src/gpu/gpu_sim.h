/*
 * gpu_sim.h — between the simulated GPUs' driver (gpu_sim.c) and their
 * compiler of modules (gpu_sim_cc.c). The entry points the rest of tycho
 * uses are in gpu.h (ty__sim_load) and gpu_blas.h (ty__blas_sim).
 */
#ifndef TY_GPU_SIM_H
#define TY_GPU_SIM_H

#include "gpu.h"

#include <stddef.h>

/* One kernel of a compiled module: the exported table ty_sim_kernels (its
 * length in ty_sim_nkernels, a zero entry after the last) holds one per
 * __global__ function of one by-value parameter. run(params, gx, gy, gz)
 * walks the grid, one thread per block; size is the parameter's sizeof. */
typedef struct ty__sim_kernel {
  const char *name;
  void (*run)(const void *params, unsigned gx, unsigned gy, unsigned gz);
  unsigned long size;
} ty__sim_kernel;

/* CUDA's correctly rounded intrinsics (fill.cu's arange and linspace) as
 * host C++: each operation rounded on its own (the host compiles with
 * -ffp-contract=off), as on a GPU. In the simulator's shim (gpu_sim_cc.c)
 * and in test_gpu_kernels.c's emulation of the built-in kernels. */
#define TY__SIM_RN_SHIM                                                          \
  "static inline double __dadd_rn(double a, double b) { return a + b; }\n"     \
  "static inline double __dsub_rn(double a, double b) { return a - b; }\n"     \
  "static inline double __dmul_rn(double a, double b) { return a * b; }\n"     \
  "static inline double __ddiv_rn(double a, double b) { return a / b; }\n"     \
  "static inline float __fadd_rn(float a, float b) { return a + b; }\n"        \
  "static inline float __fsub_rn(float a, float b) { return a - b; }\n"        \
  "static inline float __fmul_rn(float a, float b) { return a * b; }\n"

/* Compile the CUDA C text `src` for the host (or find it in the cache) and
 * dlopen it: 0 and *so, or TY__CUDA_ERROR_INVALID_SOURCE (the compiler
 * failed: its name and first lines in why) / TY__CUDA_ERROR_INVALID_IMAGE
 * (dlopen failed). Safe from several threads. */
int ty__sim_compile(const char *src, void **so, char *why, size_t whylen);

#endif /* TY_GPU_SIM_H */
