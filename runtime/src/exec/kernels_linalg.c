/*
 * kernels_linalg.c — the matmul kernel: one piece computes its box of C = A B.
 *
 * ops.c reduces every numpy matmul case (1-D and 2-D operands) to a 2-D
 * product over a 2-D launch domain (m, n): C is ALIGNED, A (m, k) and B (k, n)
 * are WHOLE, so a piece with box [r0, r1) x [c0, c1) computes
 * C[r0:r1, c0:c1] = A[r0:r1, :] B[:, c0:c1] and pieces never share outputs.
 * A batched product (ops_products.c) has leading batch dims on all three,
 * C (..., m, n), A (..., m, k), B (..., k, n), A and B broadcast to C's batch
 * shape (stride 0): a piece runs the 2-D kernel on each matrix of its box, so
 * each matrix's bits are those of the same 2-D product.
 *
 * Thin f64/f32 products (C one column with k <= TY__THIN_K, or C one row of
 * 2..TY__THIN_K columns) use kernels_gemv.c's fixed-order loops instead,
 * whose bits do not depend on the call, so that the gemv chain (fusion,
 * plan/fuse_gemv.c) computes them block by block with the same bits. So
 * does a matrix with contiguous rows times a contiguous vector at any k
 * (A x, issue 19): the dot of four rows at a time (eight on AVX-512) streams
 * A at the memory's bandwidth, where OpenBLAS 0.3.21's dgemv on each 128-row
 * block did not (8192^2 f64, 2 Zen 4 cores: 0.83x numpy's OpenBLAS 0.3.31,
 * bench/README "Issue 19"). And so does X^T z for a tall row-major X of
 * 2..TY__THIN_K columns (A = X^T, C one column): z^T X as ty__thin_acc, one
 * pass over X's rows in order, the bits of z X; OpenBLAS 0.3.21's sgemv
 * took 0.56 s (1.12 s of CPU) for 10 products of 10M x 32 f32 on 2 Xeon
 * cores, this 0.46 s (0.92 s) (bench/README "X^T z on the Xeon: session 14").
 * These sums (ty__thin_acc's) are f64 for f32 too, rounded once: ops.c's k
 * split gives their chunks f64 partials (C f64, A and B f32, the only mixed
 * matmul this kernel takes), summed in f64 and then converted.
 * Other f64/f32 go to OpenBLAS (cblas_dgemm/sgemm; cblas_dgemv/sgemv when C's
 * block is one column or one row, a matrix-vector product, which gemm would
 * run by packing the whole matrix) when each operand is row-major
 * or a transposed row-major matrix (ty__blas_layout; ops.c copies the others
 * to contiguous first). Integer dtypes (and any layout BLAS cannot take) use
 * an i-p-j loop, wrapping modulo 2^bits for integers like the element-wise
 * ops; it adds the k products of an element in order, whatever the box.
 *
 * Same bits for any piece count. OpenBLAS's result for an element depends on
 * the shape of the call that computes it (measured with 0.3.21 on Zen: C's
 * rows computed by 2..9 row-block calls differ in the last bits from one
 * call for most shapes, column blocks too; a call on 2 threads differs from
 * one on 1 thread). So C is computed one fixed row block at a time
 * (ty__matmul_blocks: from the shape alone), each block by one call with all
 * n columns; the partition (partition.c) cuts C into exactly these blocks,
 * and a piece that covers several (one piece: single or task mode, one
 * processor) calls BLAS once per block. A box that cuts a block (another
 * tiling: not made by the partition, handled for safety) computes the whole
 * block into a scratch buffer and copies its part. OpenBLAS runs
 * single-threaded: tycho's pieces are the parallelism, nested BLAS threads
 * would oversubscribe the cores, and its threading changes the bits.
 */
#include "alloc.h"
#include "kernels.h"

#include <cblas.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Also declared by OpenBLAS's cblas.h; repeated so that a netlib cblas.h
 * still compiles (the symbol comes from libopenblas). */
void openblas_set_num_threads(int num_threads);

void ty__blas_init(void) { openblas_set_num_threads(1); }

/* Rows per BLAS call: at least 128 (OpenBLAS packs all of B for every call:
 * 1024^3 in 128-row calls took 4% longer than one call, in 64-row calls 19%,
 * one Zen core); a gemm (n >= 64 columns) m / 8 of them, up to 512, and
 * from 2 TY__GEMM_ROWS rows an even number of blocks of at least
 * TY__GEMM_ROWS rows (2 up to 4095 rows, 4 up to 6143), since every call
 * repacks all of B, a share of the call's work that shrinks only as its
 * rows grow (CPU time of one Xeon core, OpenBLAS
 * 0.3.21's single-threaded dgemm, medians of 5-9, against one call: 2048^3
 * in 8 row blocks +8%, 4 +6%, 2 +2%; 4096^3 in 8 +4%, in 4 or 2 within
 * +-2% of one call; bench/README "gemm blocks: session 17"). An even count
 * gives 2 processors the same work. On a machine of more cores the count
 * rises to the cores (rounded up to even) up to the m / 8 rule's count:
 * 2048^2 in 2 blocks on 2 cores (8% less CPU than 8), in 8 on 8 cores or
 * more. The machine's cores, not --cpus: the bits stay the same under any
 * --cpus on one machine (ty__gemm_cores). What 2 blocks cost against
 * numpy's OpenBLAS 0.3.31 on its 2 threads (2048^2, same dgemm_kernel
 * time): B packed twice (dgemm_itcopy +1.5% of the CPU; its threads share
 * one packing), where numpy faults in a fresh 32 MiB result each step
 * (~530 faults, ~5 ms of CPU) and tycho reuses the block (bench/README
 * "gemm against numpy: session 18"). Smaller gemms keep 8 blocks of
 * m / 8 rows, for 2-8 processors and for MPI ranks (each computes the
 * blocks of its rows). At least 2^15 / (n k) rows (32k
 * multiply-adds a call, well above a call's few microseconds, for thin
 * products such as a tall matrix times a vector); few enough for
 * TY__ORDER_MAX blocks. */
#define TY__GEMM_ROWS 1024

/* The cores a big gemm's blocks are for: the machine's online processors,
 * read once (0: not yet), at most 64. ty_set_dist sets 2 for several ranks,
 * which may run on machines of different sizes and must agree on the
 * blocks. */
static _Atomic int gemm_cores;

void ty__gemm_cores_set(int cores) { atomic_store(&gemm_cores, cores < 1 ? 1 : cores > 64 ? 64 : cores); }

int ty__gemm_cores(void) {
  int c = atomic_load(&gemm_cores);
  if (c == 0) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    c = n < 1 ? 1 : n > 64 ? 64 : (int)n;
    atomic_store(&gemm_cores, c);
  }
  return c;
}

int64_t ty__matmul_blocks(int64_t m, int64_t n, int64_t k) {
  if (m <= 1) return 1;
  const int64_t nk = n > 0 && k > 0 && n < (INT64_C(1) << 31) && k < (INT64_C(1) << 31) ? n * k : 1;
  int64_t rows = 128;
  if (n >= 64 && m >= 2 * TY__GEMM_ROWS) {
    int64_t even = 2 * (m / (2 * TY__GEMM_ROWS));
    const int64_t eighth = m / 8 < 512 ? m / 8 : 512, before = (m + eighth - 1) / eighth;
    int64_t cores = (ty__gemm_cores() + 1) / 2 * 2;
    if (cores > before) cores = before;
    if (cores > even) even = cores;
    rows = (m + even - 1) / even;
  } else if (n >= 64 && m / 8 > rows) {
    rows = m / 8 < 512 ? m / 8 : 512;
  }
  if ((INT64_C(1) << 15) / nk > rows) rows = (INT64_C(1) << 15) / nk;
  const int64_t few = (m + TY__ORDER_MAX - 1) / TY__ORDER_MAX;
  if (few > rows) rows = few;
  const int64_t b = (m + rows - 1) / rows;
  return b < 1 ? 1 : b;
}

/* K chunks of a float product (ops.c's ty_matmul splits k when this is > 1:
 * chunk j of A's columns times chunk j of B's rows into a partial C, the
 * partials summed in chunk order). From the shape alone, like the row
 * blocks: a thin output (X^T z for a tall X: 32 outputs, 500000-long dot
 * products) has one row block, so it ran on one core at a third of the
 * memory bandwidth. Chunks fill the room the row blocks leave under
 * TY__ORDER_MAX, each at least TY__KCHUNK_K long (a partial costs m n adds)
 * and of at least TY__KCHUNK_WORK multiply-adds (a piece's few microseconds
 * of bookkeeping; a 1M-element f32 chunk streams in ~100 us per core), and
 * all partials together TY__KCHUNK_PARTIALS elements at most. A thin
 * sum's chunks (streams: ty__thin_acc_shape) are TY__THIN_STREAMS times
 * as many and as short, and go that many to an ordered tile (partition.c's
 * matmul_tiling), whose kernel reads them side by side (ty__thin_accs): on
 * the AMD EPYC (2 cores) a core read 1.3x the bytes a second from two
 * streams as from one, 1.45x from four (bench/README.md "X^T z in
 * streams"). */
#define TY__KCHUNK_K 4096
#define TY__KCHUNK_WORK (INT64_C(1) << 20)
#define TY__KCHUNK_PARTIALS (INT64_C(1) << 22) /* elements of partials: 32 MiB of f64 */
int64_t ty__matmul_ksplit(int64_t m, int64_t n, int64_t k, bool streams) {
  if (m <= 0 || n <= 0 || k < 2 * TY__KCHUNK_K) return 1;
  int64_t c = TY__ORDER_MAX / ty__matmul_blocks(m, n, k);
  if (k / TY__KCHUNK_K < c) c = k / TY__KCHUNK_K;
  /* m n, capped (no overflow): a big output has its row blocks, and its
   * partials would cost memory (c of them) */
  const int64_t cap = TY__KCHUNK_PARTIALS;
  const int64_t mn = m < cap && n < cap && m * n < cap ? m * n : cap;
  if (cap / mn < c) c = cap / mn;
  const int64_t per = TY__KCHUNK_WORK / mn > 0 ? TY__KCHUNK_WORK / mn : 1; /* k per chunk */
  if (k / per < c) c = k / per;
  return c < 2 ? 1 : streams ? TY__THIN_STREAMS * c : c;
}

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
NAIVE_GEMM(gemm_i8, int8_t, unsigned) /* the dtypes added later; wraps as numpy */
NAIVE_GEMM(gemm_i16, int16_t, uint32_t)
NAIVE_GEMM(gemm_u16, uint16_t, uint32_t)
NAIVE_GEMM(gemm_u32, uint32_t, uint32_t)
NAIVE_GEMM(gemm_u64, uint64_t, uint64_t)

typedef void (*gemm_fn)(int64_t, int64_t, int64_t, const char *, int64_t, int64_t,
                        const char *, int64_t, int64_t, char *, int64_t, int64_t);
static const gemm_fn naive[TY_NDTYPES] = {
    [TY_F64] = gemm_f64, [TY_F32] = gemm_f32, [TY_I64] = gemm_i64,
    [TY_I32] = gemm_i32, [TY_U8] = gemm_u8,   [TY_BOOL] = gemm_u8,
    [TY_I8] = gemm_i8,   [TY_I16] = gemm_i16, [TY_U16] = gemm_u16,
    [TY_U32] = gemm_u32, [TY_U64] = gemm_u64,
};

/* A matrix times a vector (n == 1: C's block is A's rows times B's column;
 * mm == 1: a row times B) as one gemv call. gemm packs its operands into
 * buffers first: with one column that copies the whole of A for every product
 * (dgemm_oncopy took 47% of Jacobi's time, 8192^2 A, and the product ran at a
 * third of numpy's dgemv). y is zeroed first: beta = 0 does not clear a NaN in
 * every BLAS (OpenBLAS scales y by beta from 0.3.27). Like gemm, the call
 * depends only on the block, so the bits do not depend on the pieces. */
static bool blas_gemv(ty_dtype t, int64_t mm, int64_t n, int64_t k, const char *a, const ty_tile *B,
                      bool ta, bool tb, int64_t lda, int64_t ldb, char *c, int64_t ldc) {
  const int64_t es = (int64_t)ty_dtype_size(t);
  const char *mat, *vec;
  int64_t rows, cols, ldm, incx, incy;
  bool trans;
  if (n == 1) { /* y (mm) = A (mm x k) x, x = B's column */
    mat = a, vec = B->data, ldm = lda, trans = ta;
    rows = ta ? k : mm, cols = ta ? mm : k;
    incx = tb ? 1 : ldb, incy = ldc;
  } else if (mm == 1) { /* y (n) = B^T (n x k) x, x = A's row */
    mat = B->data, vec = a, ldm = ldb, trans = !tb;
    rows = tb ? n : k, cols = tb ? k : n;
    incx = ta ? lda : 1, incy = 1;
  } else {
    return false;
  }
  const int64_t ny = n == 1 ? mm : n;
  if (incy == 1) /* one call: a memset per element was 7% of logreg's X w */
    memset(c, 0, (size_t)(ny * es));
  else
    for (int64_t i = 0; i < ny; i++) memset(c + i * incy * es, 0, (size_t)es);
  const enum CBLAS_TRANSPOSE op = trans ? CblasTrans : CblasNoTrans;
  if (t == TY_F64)
    cblas_dgemv(CblasRowMajor, op, (int)rows, (int)cols, 1.0, (const double *)mat, (int)ldm,
                (const double *)vec, (int)incx, 0.0, (double *)c, (int)incy);
  else
    cblas_sgemv(CblasRowMajor, op, (int)rows, (int)cols, 1.0f, (const float *)mat, (int)ldm,
                (const float *)vec, (int)incx, 0.0f, (float *)c, (int)incy);
  return true;
}

/* One BLAS call: rows [r0, r0 + mm) of C, all n columns, into c (leading
 * dimension ldc). */
static void blas_rows(ty_dtype t, int64_t r0, int64_t mm, int64_t n, int64_t k, const ty_tile *A,
                      const ty_tile *B, bool ta, bool tb, int64_t lda, int64_t ldb, char *c,
                      int64_t ldc) {
  const int64_t es = (int64_t)ty_dtype_size(t);
  const char *a = A->data + r0 * A->strides[0] * es;
  if (blas_gemv(t, mm, n, k, a, B, ta, tb, lda, ldb, c, ldc)) return;
  const enum CBLAS_TRANSPOSE opa = ta ? CblasTrans : CblasNoTrans;
  const enum CBLAS_TRANSPOSE opb = tb ? CblasTrans : CblasNoTrans;
  if (t == TY_F64)
    cblas_dgemm(CblasRowMajor, opa, opb, (int)mm, (int)n, (int)k, 1.0, (const double *)a, (int)lda,
                (const double *)B->data, (int)ldb, 0.0, (double *)c, (int)ldc);
  else
    cblas_sgemm(CblasRowMajor, opa, opb, (int)mm, (int)n, (int)k, 1.0f, (const float *)a, (int)lda,
                (const float *)B->data, (int)ldb, 0.0f, (float *)c, (int)ldc);
}

/* A thin sum (kernels_gemv.c's ty__thin_acc) of one 2-D box: C's n
 * elements (at stride cs elements from c) are sum_i e[i es] X[i, j] over
 * all `rows` of k. */
typedef struct thin_sum {
  const char *e, *X;
  char *c;
  int64_t rows, n, es, x0, x1, cs;
} thin_sum;

/* X^T z with X a tall row-major matrix of <= TY__THIN_K columns (A = X^T:
 * A's rows are X's columns, contiguous along A's first axis): C's m
 * elements are the box's columns of z^T X, one pass over X's rows
 * (OpenBLAS's sgemv on Intel read it at 0.6 of the triad's bandwidth,
 * bench/README.md); or z^T X itself (C one row). False: neither. */
static bool thin_sum_of(const ty_tile *C, const ty_tile *A, const ty_tile *B, thin_sum *s) {
  const int64_t es = (int64_t)ty_dtype_size(A->dtype);
  const int64_t M = C->gshape[0], N = C->gshape[1], k = A->shape[1];
  if (N == 1 && M >= 2 && M <= TY__THIN_K && A->strides[0] == 1 && C->shape[1] == 1) {
    *s = (thin_sum){B->data, A->data + C->lo[0] * es, C->data, k, C->shape[0],
                    B->strides[0], A->strides[1], 1, C->strides[0]};
    return true;
  }
  if (M == 1 && N >= 2 && N <= TY__THIN_K) {
    *s = (thin_sum){A->data, B->data + C->lo[1] * B->strides[1] * es, C->data, k, C->shape[1],
                    A->strides[1], B->strides[0], B->strides[1], C->strides[1]};
    return true;
  }
  return false;
}

static void thin_sum_put(const char *g, const thin_sum *s, ty_dtype ct) {
  const int64_t cs = (int64_t)ty_dtype_size(ct);
  for (int64_t j = 0; j < s->n; j++) ty__thin_put(g, j, ct, s->c + j * s->cs * cs);
}

/* C's rows of one column each a ty__thin_dot: k <= TY__THIN_K, or any k
 * when A's rows and B's column are contiguous. */
static bool thin_dots(const ty_tile *C, const ty_tile *A, const ty_tile *B) {
  const int64_t k = A->shape[1];
  return C->dtype == A->dtype && C->gshape[1] == 1 && C->gshape[0] >= 2 &&
         (k <= TY__THIN_K || (A->strides[1] == 1 && B->strides[0] == 1));
}

/* A thin float product (kernels_gemv.c) in its fixed order instead of
 * BLAS: thin dots or a thin sum. False: not thin. */
static bool thin(const ty_tile *C, const ty_tile *A, const ty_tile *B) {
  const ty_dtype t = A->dtype, ct = C->dtype; /* ct f64 with t f32: the f64 partials */
  if (thin_dots(C, A, B)) {
    const int64_t es = (int64_t)ty_dtype_size(t), rows = C->shape[0];
    const char *a = A->data + C->lo[0] * A->strides[0] * es;
    /* swept backwards (kernels.h): blocks of BACK_ROWS, last first; each
     * row's bits are its own (kernels_gemv.c), whatever rows it runs with */
    enum { BACK_ROWS = 32 };
    const int64_t step = ty__piece_backwards ? BACK_ROWS : rows;
    for (int64_t hi = rows; hi > 0; hi -= step) {
      const int64_t lo = hi > step ? hi - step : 0;
      ty__thin_dot(t, hi - lo, A->shape[1], a + lo * A->strides[0] * es, A->strides[0],
                   A->strides[1], B->data, B->strides[0], C->data + lo * C->strides[0] * es,
                   C->strides[0]);
    }
    return true;
  }
  thin_sum s;
  if (!thin_sum_of(C, A, B, &s)) return false;
  _Alignas(64) char g[TY__THIN_K * sizeof(double)];
  memset(g, 0, (size_t)s.n * sizeof(double));
  ty__thin_acc(t, s.rows, s.n, s.e, s.es, s.X, s.x0, s.x1, g);
  thin_sum_put(g, &s, ct);
  return true;
}

/* s consecutive matrices of a batched product (ops.c's k split: chunks of
 * one thin sum) as one ty__thin_accs, when all are thin sums of one shape
 * and not thin dots (thin()'s first case). False: compute them one by one. */
static bool thin_group(int s, const ty_tile *C, const ty_tile *A, const ty_tile *B) {
  const ty_dtype t = A[0].dtype, ct = C[0].dtype;
  if ((t != TY_F32 && t != TY_F64) || (ct != TY_F32 && ct != TY_F64)) return false;
  thin_sum u[TY__THIN_STREAMS];
  for (int i = 0; i < s; i++)
    if (A[i].dtype != t || C[i].dtype != ct || thin_dots(&C[i], &A[i], &B[i]) ||
        !thin_sum_of(&C[i], &A[i], &B[i], &u[i]) || u[i].rows != u[0].rows || u[i].n != u[0].n ||
        u[i].es != u[0].es || u[i].x0 != u[0].x0 || u[i].x1 != u[0].x1)
      return false;
  _Alignas(64) char g[TY__THIN_STREAMS][TY__THIN_K * sizeof(double)];
  const char *e[TY__THIN_STREAMS], *X[TY__THIN_STREAMS];
  char *gp[TY__THIN_STREAMS];
  for (int i = 0; i < s; i++) {
    memset(g[i], 0, (size_t)u[i].n * sizeof(double));
    e[i] = u[i].e, X[i] = u[i].X, gp[i] = g[i];
  }
  ty__thin_accs(t, s, u[0].rows, u[0].n, e, u[0].es, X, u[0].x0, u[0].x1, gp);
  for (int i = 0; i < s; i++) thin_sum_put(g[i], &u[i], ct);
  return true;
}

/* C's box of one matrix product; all three tiles 2-D. */
static int matmul_2d(ty_task_ctx *ctx, const ty_tile *C, const ty_tile *A, const ty_tile *B) {
  const ty_dtype t = C->dtype;
  const int64_t es = (int64_t)ty_dtype_size(t);
  const int64_t m = C->shape[0], n = C->shape[1], k = A->shape[1];
  if (m == 0 || n == 0) return 0;

  if ((t == TY_F64 || t == TY_F32) && thin(C, A, B)) return 0;
  if (A->dtype != t) /* f64 partials of f32 (ops.c) are thin sums only */
    return ty_ctx_fail(ctx, "matmul: %s operands into %s partials must be a thin product",
                       ty_dtype_name(A->dtype), ty_dtype_name(t));
  if (t == TY_F64 || t == TY_F32) {
    /* the whole of A and B, and C's rows with all its columns */
    const int64_t M = C->gshape[0], N = C->gshape[1];
    bool ta, tb, tc;
    int64_t lda, ldb, ldc;
    bool ok = ty__blas_layout(M, k, A->strides[0], A->strides[1], &ta, &lda) &&
              ty__blas_layout(k, N, B->strides[0], B->strides[1], &tb, &ldb) &&
              ty__blas_layout(M, N, C->strides[0], C->strides[1], &tc, &ldc) && !tc &&
              M <= INT_MAX && N <= INT_MAX && k <= INT_MAX && lda <= INT_MAX &&
              ldb <= INT_MAX && ldc <= INT_MAX && k > 0 && B->shape[1] == N;
    if (ok) {
      const int64_t r0 = C->lo[0], r1 = r0 + m, c0 = C->lo[1];
      const int64_t nb = ty__matmul_blocks(M, N, k);
      char *scratch = NULL;
      for (int64_t j = r0 * nb / M; j < nb; j++) {
        int64_t b0 = M * j / nb, b1 = M * (j + 1) / nb;
        if (b1 <= r0) continue;
        if (b0 >= r1) break;
        if (b0 >= r0 && b1 <= r1 && c0 == 0 && n == N) { /* the block is ours whole */
          blas_rows(t, b0, b1 - b0, N, k, A, B, ta, tb, lda, ldb,
                    C->data + (b0 - r0) * C->strides[0] * es, ldc);
          continue;
        }
        if (!scratch) {
          const int64_t rows = (M + nb - 1) / nb + 1;
          scratch = ty__malloc((size_t)(rows * N * es));
          if (!scratch) return ty_ctx_fail(ctx, "matmul: out of memory for a block of C");
        }
        blas_rows(t, b0, b1 - b0, N, k, A, B, ta, tb, lda, ldb, scratch, N);
        const int64_t lo = b0 > r0 ? b0 : r0, hi = b1 < r1 ? b1 : r1;
        for (int64_t i = lo; i < hi; i++) {
          const char *src = scratch + ((i - b0) * N + c0) * es;
          char *dst = C->data + (i - r0) * C->strides[0] * es;
          for (int64_t jj = 0; jj < n; jj++)
            memcpy(dst + jj * C->strides[1] * es, src + jj * es, (size_t)es);
        }
      }
      free(scratch);
      return 0;
    }
  }
  const char *a = A->data + C->lo[0] * A->strides[0] * es; /* rows of this piece */
  const char *b = B->data + C->lo[1] * B->strides[1] * es; /* columns of this piece */
  naive[t](m, n, k, a, A->strides[0], A->strides[1], b, B->strides[0], B->strides[1], C->data,
           C->strides[0], C->strides[1]);
  return 0;
}

/* The matrix at batch index idx (global, nb dims) of a tile whose last two
 * dims are the matrix, as a 2-D tile. */
static ty_tile matrix_of(const ty_tile *x, int nb, const int64_t *idx) {
  ty_tile m = *x;
  const int64_t es = (int64_t)ty_dtype_size(x->dtype);
  int64_t off = 0;
  for (int d = 0; d < nb; d++) off += (idx[d] - x->lo[d]) * x->strides[d];
  m.data = x->data ? x->data + off * es : NULL;
  m.ndim = 2;
  for (int d = 0; d < 2; d++) {
    m.shape[d] = x->shape[nb + d];
    m.strides[d] = x->strides[nb + d];
    m.lo[d] = x->lo[nb + d];
    m.gshape[d] = x->gshape[nb + d];
  }
  return m;
}

int ty__matmul_variant(ty_task_ctx *ctx) {
  const ty_tile *C = &ctx->args[0], *A = &ctx->args[1], *B = &ctx->args[2];
  const ty_dtype t = C->dtype;
  const int nd = C->ndim;
  /* f32 operands into f64 partials: ops.c's k split of a thin sum */
  const bool partials = t == TY_F64 && A->dtype == TY_F32 && B->dtype == TY_F32;
  if (ctx->nargs != 3 || nd < 2 || A->ndim != nd || B->ndim != nd ||
      ((A->dtype != t || B->dtype != t) && !partials) || (unsigned)t >= TY_NDTYPES || !naive[t])
    return ty_ctx_fail(ctx, "matmul: operands must be of one supported dtype and rank >= 2");
  if (nd == 2) return matmul_2d(ctx, C, A, B);
  /* every matrix of the box, batch indices in C order */
  const int nb = nd - 2;
  int64_t idx[TY_MAX_RANK];
  for (int d = 0; d < nb; d++) {
    if (C->shape[d] == 0) return 0;
    idx[d] = C->lo[d];
  }
  for (;;) {
    const ty_tile c = matrix_of(C, nb, idx), a = matrix_of(A, nb, idx), b = matrix_of(B, nb, idx);
    const int64_t left = nb == 1 ? C->lo[0] + C->shape[0] - idx[0] : 0;
    if (left >= 2 && c.shape[0] > 0 && c.shape[1] > 0) {
      /* the next matrices too, if they are chunks of a thin sum */
      const int s = left < TY__THIN_STREAMS ? (int)left : TY__THIN_STREAMS;
      ty_tile cs[TY__THIN_STREAMS], as[TY__THIN_STREAMS], bs[TY__THIN_STREAMS];
      for (int i = 0; i < s; i++) {
        const int64_t j = idx[0] + i;
        cs[i] = matrix_of(C, nb, &j), as[i] = matrix_of(A, nb, &j), bs[i] = matrix_of(B, nb, &j);
      }
      if (thin_group(s, cs, as, bs)) {
        idx[0] += s;
        if (idx[0] < C->lo[0] + C->shape[0]) continue;
        return 0;
      }
    }
    const int rc = matmul_2d(ctx, &c, &a, &b);
    if (rc) return rc;
    int d = nb - 1;
    for (; d >= 0; d--) {
      if (++idx[d] < C->lo[d] + C->shape[d]) break;
      idx[d] = C->lo[d];
    }
    if (d < 0) return 0;
  }
}
