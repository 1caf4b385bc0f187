/*
 * kernels_linalg.c — the matmul kernel: one piece computes its box of C = A B.
 *
 * ops.c reduces every numpy matmul case (1-D and 2-D operands) to a 2-D
 * product over a 2-D launch domain (m, n): C is ALIGNED, A (m, k) and B (k, n)
 * are WHOLE, so a piece with box [r0, r1) x [c0, c1) computes
 * C[r0:r1, c0:c1] = A[r0:r1, :] B[:, c0:c1] and pieces never share outputs.
 *
 * f64/f32 go to OpenBLAS (cblas_dgemm/sgemm) when each operand is row-major
 * or a transposed row-major matrix (ty__blas_layout; ops.c copies the others
 * to contiguous first). OpenBLAS runs single-threaded: tycho's pieces are the
 * parallelism, one per processor, and nested BLAS threads would oversubscribe
 * the cores. Integer dtypes (and any layout BLAS cannot take) use an i-p-j
 * loop, wrapping modulo 2^bits for integers like the element-wise ops.
 */
#include "kernels.h"

#include <cblas.h>
#include <limits.h>
#include <string.h>

/* Also declared by OpenBLAS's cblas.h; repeated so that a netlib cblas.h
 * still compiles (the symbol comes from libopenblas). */
void openblas_set_num_threads(int num_threads);

void ty__blas_init(void) { openblas_set_num_threads(1); }

bool ty__blas_layout(int64_t rows, int64_t cols, int64_t s0, int64_t s1, bool *trans,
                     int64_t *ld) {
  if (rows <= 0 || cols <= 0) {
    *trans = false;
    *ld = cols > 1 ? cols : 1;
    return true;
  }
  /* row-major: (i, j) at i*ld + j, ld >= cols */
  if ((s1 == 1 || cols == 1) && (rows == 1 || s0 >= cols)) {
    *trans = false;
    *ld = rows == 1 ? cols : s0;
    return true;
  }
  /* the transpose of a row-major cols x rows matrix: (i, j) at j*ld + i */
  if ((s0 == 1 || rows == 1) && (cols == 1 || s1 >= rows)) {
    *trans = true;
    *ld = cols == 1 ? rows : s1;
    return true;
  }
  return false;
}

/* C (m x n) = A (m x k) B (k x n), element strides, any layout. */
#define NAIVE_GEMM(NAME, T, TW)                                                        \
  static void NAME(int64_t m, int64_t n, int64_t k, const char *a, int64_t a0, int64_t a1, \
                   const char *b, int64_t b0, int64_t b1, char *c, int64_t c0, int64_t c1) { \
    const T *A = (const T *)a, *B = (const T *)b;                                      \
    T *C = (T *)c;                                                                     \
    for (int64_t i = 0; i < m; i++) {                                                  \
      T *ci = C + i * c0;                                                              \
      for (int64_t j = 0; j < n; j++) ci[j * c1] = 0;                                  \
      for (int64_t p = 0; p < k; p++) {                                                \
        const TW av = (TW)A[i * a0 + p * a1];                                          \
        const T *bp = B + p * b0;                                                      \
        for (int64_t j = 0; j < n; j++)                                                \
          ci[j * c1] = (T)((TW)ci[j * c1] + av * (TW)bp[j * b1]);                      \
      }                                                                                \
    }                                                                                  \
  }
NAIVE_GEMM(gemm_f64, double, double)
NAIVE_GEMM(gemm_f32, float, float)
NAIVE_GEMM(gemm_i64, int64_t, uint64_t)
NAIVE_GEMM(gemm_i32, int32_t, uint32_t)
NAIVE_GEMM(gemm_u8, uint8_t, unsigned)

typedef void (*gemm_fn)(int64_t, int64_t, int64_t, const char *, int64_t, int64_t,
                        const char *, int64_t, int64_t, char *, int64_t, int64_t);
static const gemm_fn naive[TY_NDTYPES] = {
    [TY_F64] = gemm_f64, [TY_F32] = gemm_f32, [TY_I64] = gemm_i64,
    [TY_I32] = gemm_i32, [TY_U8] = gemm_u8,   [TY_BOOL] = gemm_u8,
};

int ty__matmul_variant(ty_task_ctx *ctx) {
  const ty_tile *C = &ctx->args[0], *A = &ctx->args[1], *B = &ctx->args[2];
  const ty_dtype t = C->dtype;
  if (C->ndim != 2 || A->ndim != 2 || B->ndim != 2 || A->dtype != t || B->dtype != t)
    return ty_ctx_fail(ctx, "matmul: operands must be 2-D of one dtype");
  const int64_t es = (int64_t)ty_dtype_size(t);
  const int64_t m = C->shape[0], n = C->shape[1], k = A->shape[1];
  if (m == 0 || n == 0) return 0;
  const char *a = A->data + C->lo[0] * A->strides[0] * es; /* rows of this piece */
  const char *b = B->data + C->lo[1] * B->strides[1] * es; /* columns of this piece */
  char *c = C->data;

  if (t == TY_F64 || t == TY_F32) {
    bool ta, tb, tc;
    int64_t lda, ldb, ldc;
    bool ok = ty__blas_layout(m, k, A->strides[0], A->strides[1], &ta, &lda) &&
              ty__blas_layout(k, n, B->strides[0], B->strides[1], &tb, &ldb) &&
              ty__blas_layout(m, n, C->strides[0], C->strides[1], &tc, &ldc) && !tc &&
              m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && lda <= INT_MAX &&
              ldb <= INT_MAX && ldc <= INT_MAX && k > 0;
    if (ok) {
      const enum CBLAS_TRANSPOSE opa = ta ? CblasTrans : CblasNoTrans;
      const enum CBLAS_TRANSPOSE opb = tb ? CblasTrans : CblasNoTrans;
      if (t == TY_F64)
        cblas_dgemm(CblasRowMajor, opa, opb, (int)m, (int)n, (int)k, 1.0, (const double *)a,
                    (int)lda, (const double *)b, (int)ldb, 0.0, (double *)c, (int)ldc);
      else
        cblas_sgemm(CblasRowMajor, opa, opb, (int)m, (int)n, (int)k, 1.0f, (const float *)a,
                    (int)lda, (const float *)b, (int)ldb, 0.0f, (float *)c, (int)ldc);
      return 0;
    }
  }
  naive[t](m, n, k, a, A->strides[0], A->strides[1], b, B->strides[0], B->strides[1], c,
           C->strides[0], C->strides[1]);
  return 0;
}
