/*
 * gpu_blas.c — cuBLAS loaded at run time, and one row-major gemm
 * (gpu_blas.h). No state beyond the loaded table: handles belong to the
 * device they were made on (gpu_kernels.c keeps one per device).
 */
#include "gpu_blas.h"

#include "kernels.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ty__blas_unload(ty__blas *b) {
  if (!b) return;
  if (b->lib) dlclose(b->lib);
  memset(b, 0, sizeof *b);
}

ty_status ty__blas_load(ty__blas *b, char *why, size_t whylen) {
  memset(b, 0, sizeof *b);
  static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
  const char *env = getenv("TYCHO_LIBCUBLAS");
  const char *e = NULL;
  void *lib = NULL;
  if (env && *env) {
    lib = dlopen(env, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib) e = dlerror();
    snprintf(b->path, sizeof b->path, "%s", env);
  } else {
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) {
      dlerror();
      lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
      if (!lib && !e) e = dlerror();
      snprintf(b->path, sizeof b->path, "%s", names[i]);
    }
  }
  if (!lib) {
    if (why) snprintf(why, whylen, "cuBLAS could not be loaded: %s", e ? e : "not found");
    return TY_ENOTFOUND;
  }
  b->lib = lib;
  *(void **)&b->Create = dlsym(lib, "cublasCreate_v2");
  *(void **)&b->Destroy = dlsym(lib, "cublasDestroy_v2");
  *(void **)&b->SetStream = dlsym(lib, "cublasSetStream_v2");
  *(void **)&b->Dgemm = dlsym(lib, "cublasDgemm_v2");
  *(void **)&b->Sgemm = dlsym(lib, "cublasSgemm_v2");
  *(void **)&b->StatusString = dlsym(lib, "cublasGetStatusString");
  if (!b->Create || !b->Destroy || !b->SetStream || !b->Dgemm || !b->Sgemm) {
    if (why) snprintf(why, whylen, "%s lacks the cuBLAS v2 entry points", b->path);
    ty__blas_unload(b);
    return TY_ENOTFOUND;
  }
  return TY_OK;
}

static const char *status_text(const ty__blas *b, int s) {
  if (b->StatusString) return b->StatusString(s);
  return s == 1 ? "CUBLAS_STATUS_NOT_INITIALIZED" : s == 3 ? "CUBLAS_STATUS_ALLOC_FAILED" : "cuBLAS error";
}

ty_status ty__blas_handle(const ty__blas *b, void **handle, char *err, size_t errlen) {
  *handle = NULL;
  if (!b || !b->Create) {
    if (err) snprintf(err, errlen, "cuBLAS is not loaded");
    return TY_ENOTFOUND;
  }
  int s = b->Create(handle);
  if (s != 0) {
    *handle = NULL;
    if (err) snprintf(err, errlen, "cublasCreate failed: %s (%d)", status_text(b, s), s);
    return s == 3 ? TY_ENOMEM : TY_EINVAL;
  }
  return TY_OK;
}

ty_status ty__blas_gemm(const ty__blas *b, void *handle, ty__CUstream stream, ty_dtype t,
                        int64_t m, int64_t n, int64_t k, uint64_t A, int64_t as0, int64_t as1,
                        uint64_t B, int64_t bs0, int64_t bs1, uint64_t C, int64_t ldc, char *err,
                        size_t errlen) {
  if (t != TY_F64 && t != TY_F32) {
    if (err) snprintf(err, errlen, "matmul of %s: cuBLAS multiplies floats only", ty_dtype_name(t));
    return TY_EDTYPE;
  }
  bool ta, tb;
  int64_t lda, ldb;
  if (!ty__blas_layout(m, k, as0, as1, &ta, &lda) || !ty__blas_layout(k, n, bs0, bs1, &tb, &ldb)) {
    if (err) snprintf(err, errlen, "matmul: an operand's layout is not one cuBLAS takes (copy it first)");
    return TY_EINVAL;
  }
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX) {
    if (err) snprintf(err, errlen, "matmul: sizes beyond 2^31 (split the product)");
    return TY_EINVAL;
  }
  if (m == 0 || n == 0) return TY_OK;
  int s = b->SetStream(handle, stream);
  /* column-major C^T (n x m) = B^T (n x k) A^T (k x m): B first. A row-major
   * operand is its transpose in column-major: op N; a transposed view: op T.
   * k == 0 gives C = 0 (beta 0, cuBLAS writes C). */
  const int opa = ta ? 1 : 0, opb = tb ? 1 : 0;
  int lda_ = (int)(lda > 0 ? lda : 1), ldb_ = (int)(ldb > 0 ? ldb : 1);
  if (s == 0) {
    if (t == TY_F64) {
      const double one = 1.0, zero = 0.0;
      s = b->Dgemm(handle, opb, opa, (int)n, (int)m, (int)k, &one, (const double *)(uintptr_t)B, ldb_,
                   (const double *)(uintptr_t)A, lda_, &zero, (double *)(uintptr_t)C, (int)ldc);
    } else {
      const float one = 1.0f, zero = 0.0f;
      s = b->Sgemm(handle, opb, opa, (int)n, (int)m, (int)k, &one, (const float *)(uintptr_t)B, ldb_,
                   (const float *)(uintptr_t)A, lda_, &zero, (float *)(uintptr_t)C, (int)ldc);
    }
  }
  if (s != 0) {
    if (err) snprintf(err, errlen, "cuBLAS gemm failed: %s (%d)", status_text(b, s), s);
    return TY_EINVAL;
  }
  return TY_OK;
}
