/*
 * kernels.h — CPU kernels of the built-in operations (kernels_*.c) and the
 * dtype rules of ops.c, shared with the task variants and the fused kernel
 * (fused_cpu.c), which calls the same 1-D loops block by block.
 *
 * Element-wise kernels are ty_loop1d (internal.h): n elements, ptrs[k] the
 * first element of operand k, strides[k] its BYTE stride (0: a broadcast
 * scalar). Operand 0 is always the output, the inputs follow in call order.
 * Each loop has fast paths (all operands contiguous, one input a broadcast
 * scalar) written with restrict pointers so the compiler vectorises them, and a
 * generic strided path. No loop dispatches on dtype or op per element: the
 * tables below are indexed once per run (or once per piece).
 *
 * Tables hold NULL for combinations ops.c never produces (it casts inputs to
 * the compute dtype first); a caller must check.
 */
#ifndef TY_KERNELS_H
#define TY_KERNELS_H

#include "internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ---- dtype rules (ops.c) -------------------------------------------------------- */

/* The dtype an op computes in: its inputs are cast to it first. */
ty_dtype ty__unary_compute_dtype(ty_op op, ty_dtype in);
ty_dtype ty__binary_compute_dtype_any(ty_op op, ty_dtype a, ty_dtype b);
/* Two operands of one float dtype, whatever the op: that dtype (every case
 * of ty__binary_compute_dtype_any gives it), in line (~45 instructions of a
 * small op before session 20, ~20 in a call after). */
static inline ty_dtype ty__binary_compute_dtype(ty_op op, ty_dtype a, ty_dtype b) {
  if (a == b && (a == TY_F64 || a == TY_F32)) return a;
  return ty__binary_compute_dtype_any(op, a, b);
}
/* The dtype an op writes, given its compute dtype (bool for NOT, comparisons,
 * AND, OR, XOR and the float tests; the compute dtype otherwise). */
static inline ty_dtype ty__op_out_dtype(ty_op op, ty_dtype compute) {
  switch (op) {
  case TY_OP_NOT:
  case TY_OP_LT:
  case TY_OP_LE:
  case TY_OP_GT:
  case TY_OP_GE:
  case TY_OP_EQ:
  case TY_OP_NE:
  case TY_OP_AND:
  case TY_OP_OR:
  case TY_OP_XOR:
  case TY_OP_ISNAN:
  case TY_OP_ISINF:
  case TY_OP_ISFINITE: return TY_BOOL;
  default: return compute;
  }
}

/* ---- element-wise (kernels_ew.c) -------------------------------------------------- */

/* [op][compute dtype]: ptrs = {out, in}; out has ty__op_out_dtype. */
extern const ty_loop1d ty__unary_loops[TY_NOPS][TY_NDTYPES];
/* [op][compute dtype]: ptrs = {out, a, b}; a and b have the compute dtype. */
extern const ty_loop1d ty__binary_loops[TY_NOPS][TY_NDTYPES];
/* The same tables under the `fastmath` policy axis: exp log sin cos tanh pow
 * of floats use 4-ULP vector functions (libmvec, SLEEF 3.5-ULP); every other
 * entry is the accurate table's. */
extern const ty_loop1d ty__unary_loops_fast[TY_NOPS][TY_NDTYPES];
extern const ty_loop1d ty__binary_loops_fast[TY_NOPS][TY_NDTYPES];
/* [dtype]: ptrs = {out, cond, a, b}; cond is bool (0/1), a, b, out of dtype. */
extern const ty_loop1d ty__where_loops[TY_NDTYPES];

/* ---- conversions (kernels_cast.c) --------------------------------------------------- */

/* [from][to]: ptrs = {out, in}. Float -> integer never invokes undefined
 * behaviour: NaN gives 0, values beyond the target range saturate to its
 * limits, the rest truncate toward zero (C's rule). Integer -> narrower
 * integer wraps modulo 2^bits (numpy's rule). Anything -> bool is x != 0 (NaN
 * is true). Same dtype is a copy. */
extern const ty_loop1d ty__cast_loops[TY_NDTYPES][TY_NDTYPES];
/* The scalar form of the same conversions, for fill values. */
int64_t ty__f64_to_i64_sat(double v);
int32_t ty__f64_to_i32_sat(double v);
uint8_t ty__f64_to_u8_sat(double v);
int8_t ty__f64_to_i8_sat(double v);
int16_t ty__f64_to_i16_sat(double v);
uint16_t ty__f64_to_u16_sat(double v);
uint32_t ty__f64_to_u32_sat(double v);
uint64_t ty__f64_to_u64_sat(double v);

/* ---- fills and generators (kernels_fill.c) -------------------------------------------- */

/* The value a fill writes: `f` for float dtypes, `i` for integer dtypes and
 * bool (already converted: ops.c fills both fields). */
typedef struct ty__fillval {
  double f;
  int64_t i;
} ty__fillval;
/* [dtype]: ptrs = {out}; aux = const ty__fillval *. */
extern const ty_loop1d ty__fill_loops[TY_NDTYPES];

/* Packed scalars of the generator tasks. */
/* kind: a ty_random_dist (tycho/random.h); 0, TY_RANDOM_BITS, is ty_random's
 * (uniform [0, 1) for floats, raw bits for integers). a, b: UNIFORM [a, b),
 * NORMAL mean a and standard deviation b, EXPONENTIAL scale a. INTEGERS:
 * lo + [0, range), range 0 meaning 2^64. */
typedef struct ty__random_args {
  uint64_t seed, stream;
  int64_t kind;
  double a, b;
  int64_t lo;
  uint64_t range;
} ty__random_args;
typedef struct ty__arange_args {
  double start, step; /* float path: start + i*step */
  int64_t istart, istep; /* integer path, exact, when `exact` */
  int64_t exact;
} ty__arange_args;
typedef struct ty__linspace_args {
  double a, b, step;
  int64_t n;
} ty__linspace_args;

/* Variants (one piece): args[0] is the output, ALIGNED with the launch domain. */
int ty__random_variant(ty_task_ctx *ctx);
int ty__arange_variant(ty_task_ctx *ctx);
int ty__linspace_variant(ty_task_ctx *ctx);

/* ---- reductions (kernels_reduce.c) ------------------------------------------------------ */

typedef enum ty__redkind { TY__RSUM = 0, TY__RPROD, TY__RMIN, TY__RMAX, TY__NREDKIND } ty__redkind;

/* [kind][in dtype][acc dtype]: ptrs = {acc, in}. When strides[0] == 0 the run
 * is reduced into the single accumulator *acc (float sums and products: the
 * ordered scheme below, a tree over 128-element leaves, so the error grows as
 * log n); else acc[i] = acc[i] op in[i]. MIN/MAX propagate NaN. Integer sums
 * and products wrap modulo 2^64 (no undefined overflow). */
extern const ty_loop1d ty__reduce_loops[TY__NREDKIND][TY_NDTYPES][TY_NDTYPES];
/* The identity of a kind in a dtype (sum 0, prod 1, min +inf/the largest
 * value, max -inf/the smallest). */
ty__fillval ty__reduce_identity(ty__redkind kind, ty_dtype t);

/* ---- ordered float sums and products (kernels_reduce.c, partition.c) ---------------------
 *
 * Float sums and products (sum, prod, mean; f64, f32, integers summed into
 * f64) give the same bits whatever the mode, piece count or processor count,
 * fused or not. Their order is fixed by the launch's shape alone:
 *  - a launch that combines pieces (an accumulator with the REDUCE privilege)
 *    is cut by ty__ordered_tiles, or runs as one piece whose kernel walks the
 *    same tiles in the same order (ty__ordered_walk); either way the tiles'
 *    partials are added into the output in tile order;
 *  - within a tile, ty__reduce_scheme says how the accumulator is reached:
 *    FULL (no kept dim): the tile's elements in C order, cut into leaves of
 *    TY__OLEAF (the last may be short), each summed like numpy's pairwise base
 *    case, and the leaves added as a binary tree aligned to powers of two
 *    (ty__ostream); INNER (the reduced axis is the innermost dim): each
 *    output's run the same way; OUTER: each output adds its inputs one after
 *    the other in index order. */

/* Tiles have 65536 elements or more: a tile costs ~0.6 us of bookkeeping (a
 * 1M f64 sum on one core, data in L3: 16384-element tiles ran 12% slower than
 * one pairwise sum, 65536-element tiles 1.6%); 64 tiles at most keep 64
 * processors busy and the tile order's O(tiles) error small. */
#define TY__OLEAF 128         /* elements per leaf: numpy's pairwise block */
#define TY__ORDER_CHUNK 65536 /* elements per tile of an ordered reduction, at least */
#define TY__ORDER_MAX 64      /* tiles of an ordered launch, at most */

typedef enum ty__rscheme { TY__RS_FULL, TY__RS_INNER, TY__RS_OUTER } ty__rscheme;

/* True for the reductions that follow the ordered scheme: SUM and PROD into
 * f64 or f32. */
bool ty__reduce_ordered(ty__redkind kind, ty_dtype acc);
/* The scheme of an accumulator tile (acc: stride 0 on the reduced dims), from
 * the whole launch's shape (gshape), never from the piece's box. */
ty__rscheme ty__reduce_scheme(const ty_tile *acc);
/* The loop for an INNER or OUTER accumulator (ordered kinds; any loop of
 * ty__reduce_loops is exact for the others). */
ty_loop1d ty__reduce_loop(ty__redkind kind, ty_dtype in, ty_dtype acc, ty__rscheme scheme);

/* A FULL reduction fed run by run: a binary counter of leaf results. */
typedef struct ty__ostream {
  uint64_t nleaves; /* leaves pushed: bit l set when lev[l] holds 2^l of them */
  int kind;         /* TY__RSUM or TY__RPROD */
  int fill;         /* elements in the partial leaf */
  double lev[64];
  double leaf[TY__OLEAF];
} ty__ostream;
void ty__ostream_init(ty__ostream *os, ty__redkind kind);
/* [kind: SUM or PROD][in dtype]: ty_loop1d that feeds operand 1 (ptrs[1],
 * strides[1]) into the stream passed as aux; operand 0 is not read. */
extern const ty_loop1d ty__ostream_feeds[2][TY_NDTYPES];
/* Feeds the products of operands 1 and 2 (f64) into a SUM stream (aux): the
 * bits of feed_sum_f64 on the products stored. */
void ty__ostream_feed_dot_f64(int64_t n, char **p, const int64_t *s, const void *aux);
/* The stream's result (the identity when nothing was fed); resets it. */
double ty__ostream_finish(ty__ostream *os);
/* *acc = *acc op v in the accumulator's dtype (f64 or f32), as the loops do
 * with a run's result. */
void ty__ordered_apply(char *acc, ty_dtype t, ty__redkind kind, double v);

/* The tiling of an ordered reduction over `shape` (partition.c):
 * clamp(ceil(elements / TY__ORDER_CHUNK), 1, TY__ORDER_MAX) tiles, given to
 * the outer dims first (a dim takes as many as it is long). */
void ty__ordered_tiles(int ndim, const int64_t *shape, ty_tiling *out);
/* Runs a one-piece ordered launch as the pieces of ty__ordered_tiles over its
 * box, in order: arguments with bit k of `aligned` set are cut to each tile;
 * each accumulator (bit k of `accs`, of kind kinds[k]) gets a buffer set to
 * the identity, which `fn` fills and which is then combined into the
 * argument's tile, as the runtime combines pieces' private tiles. Returns
 * fn's first non-zero result, or a failure of its own (out of memory). */
int ty__ordered_walk(ty_task_ctx *ctx, uint64_t aligned, uint64_t accs, const uint8_t *kinds,
                     int (*fn)(ty_task_ctx *ctx, void *ud), void *ud);
/* Which ordered scheme a pending launch follows (ops.c): 0 none, 1 a float
 * reduction with a REDUCE accumulator (built-in or the last of a fused run),
 * 2 a float matmul. */
int ty__ordered_launch(const ty_pending *l);

/* Index (0-based) of the first minimum / maximum of n >= 1 elements at byte
 * stride `stride`; a NaN counts as the extreme (the first NaN wins), as numpy. */
typedef int64_t (*ty_argloop)(int64_t n, const char *p, int64_t stride);
extern const ty_argloop ty__argmin_loops[TY_NDTYPES];
extern const ty_argloop ty__argmax_loops[TY_NDTYPES];

/* Packed scalars of the reduction tasks. `kind` is a ty_reduce_op (SUM PROD
 * MIN MAX for ty__reduce_variant, ARGMIN ARGMAX for ty__argreduce_variant). */
typedef struct ty__reduce_args {
  int64_t kind;
  int64_t init_out; /* OUT mode: the piece sets its outputs to the identity first */
  int64_t axis;     /* arg reductions: the reduced axis of the domain */
} ty__reduce_args;

/* Variant of "sum" "prod" "min" "max": args = {acc (the output broadcast to the
 * domain, stride 0 on reduced dims; REDUCE or OUT), in}. */
int ty__reduce_variant(ty_task_ctx *ctx);
/* Variant of "argmin"/"argmax": args = {out i64 (stride 0 on the reduced axis,
 * OUT, so never split), in}. */
int ty__argreduce_variant(ty_task_ctx *ctx);

/* ---- linear algebra (kernels_linalg.c) ----------------------------------------------------- */

/* Whether a rows x cols matrix with element strides (s0, s1) can be handed to
 * CBLAS in row-major order: as is (trans false) or transposed (trans true),
 * with leading dimension *ld. False: copy it to contiguous first. */
bool ty__blas_layout(int64_t rows, int64_t cols, int64_t s0, int64_t s1, bool *trans,
                     int64_t *ld);
/* Variant of "matmul": args = {C (m, n) OUT aligned, A (m, k) whole, B (k, n)
 * whole}, all of the same dtype, or the same with leading batch dims on all
 * three (C (..., m, n); A and B broadcast to C's batch shape); the piece
 * computes its box of C. Floats go
 * to BLAS one row block at a time (ty__matmul_blocks): an element's bits then
 * depend on its block only, never on the piece count. */
int ty__matmul_variant(ty_task_ctx *ctx);
/* The row blocks of an ordered (float) matmul, from its shape alone: block j
 * is rows [m j / b, m (j + 1) / b) of C, one BLAS call each. ordered
 * partitions cut C into exactly these blocks (tiles (b, 1)). */
int64_t ty__matmul_blocks(int64_t m, int64_t n, int64_t k);
/* The machine's cores that ty__matmul_blocks sizes a gemm of 2048 rows or
 * more for (read once; never --cpus, so the bits do not change with it);
 * _set: tests, and ty_set_dist for several ranks (2: the shape decides). */
int ty__gemm_cores(void);
void ty__gemm_cores_set(int cores);
/* The k chunks of a float product (1: k is not split), from its shape alone:
 * ty_matmul computes chunk j (k j / c rows of B and columns of A, the last
 * chunk taking the remainder) into a partial product and adds the partials
 * in chunk order, so a thin output gets pieces and its bits no processor
 * count. */
int64_t ty__matmul_ksplit(int64_t m, int64_t n, int64_t k, bool streams);
/* Called once at registration: BLAS single-threaded (pieces are the
 * parallelism, and OpenBLAS's own threads change the bits of a product). */
void ty__blas_init(void);

/* ---- shared by the variants (ops.c) ------------------------------------------------------- */

/* Run fn over the piece: every argument's tile (all of the piece's shape, as
 * ALIGNED and REDUCE tiles are) becomes one operand with byte strides. */
void ty__run_tiles(const ty_task_ctx *ctx, ty_loop1d fn, const void *aux);

/* ---- the fused kernel (fused_cpu.c; see fused.h) --------------------------------------------- */

/* The CPU variant of the task "fused": runs the description block by block,
 * or its compiled kernel when the piece has the kernel's layout. */
int ty__fused_variant(ty_task_ctx *ctx);

/* ---- convolution (kernels_conv.c; launched by ops_convolve.c) ------------------------------------ */

/* The scalars of the task "convolve": per dim, how far the first output's
 * first tap lies before x's start (w's extent - 1, / 2 or 0 by mode). */
typedef struct ty__conv_args {
  int64_t left[TY_MAX_RANK];
} ty__conv_args;

/* The CPU variant of "convolve": out ALIGNED, x and w read WHOLE. */
int ty__convolve_variant(ty_task_ctx *ctx);

/* True on the thread running a piece of a wave swept last piece first
 * (exec.c, sweep_backwards): a kernel free to take its rows in any order
 * (matmul's rows of A x) takes them last first too, starting on the rows
 * the previous sweep read last (Jacobi 2048^2: 0.96x the time of its
 * pieces' rows in order, bench/README.md "Jacobi's sweeps: session 36").
 * Only the order changes: the same bits. */
extern _Thread_local bool ty__piece_backwards;

/* ---- thin products and the gemv chain (kernels_gemv.c; fusion: plan/fuse_gemv.c) ------------- */

/* The widest side of a thin product: C (m x 1) = A (m x k) B with k <= it,
 * or C (1 x n) = A (1 x k) B with 2 <= n <= it (kernels_gemv.c). */
#define TY__THIN_K 256
/* z[i zs] = X's row i (element strides x0, x1) . w (stride ws), i < rows,
 * in a fixed order (8 lanes, a fixed tree): bits independent of the rows
 * around it. t is TY_F64 or TY_F32. */
void ty__thin_dot(ty_dtype t, int64_t rows, int64_t k, const char *X, int64_t x0, int64_t x1,
                  const char *w, int64_t ws, char *z, int64_t zs);
/* g[j] += e[i es] X[i, j] for the rows i < rows in order, j < n; e and X
 * in dtype t (TY_F64 or TY_F32), g contiguous doubles for both: f32's
 * products are exact in f64 and summed there, rounded once when the sums are
 * stored (ty__thin_put): 10M x 32 X^T z summed in f32 was 5.2e-5 off in
 * norm, 5.0e-3 in its worst element (cancellation). */
void ty__thin_acc(ty_dtype t, int64_t rows, int64_t n, const char *e, int64_t es, const char *X,
                  int64_t x0, int64_t x1, char *g);
/* A thin sum's k chunks read side by side (ops.c's k split makes this many
 * times the chunks, partition.c puts this many in a tile). */
#define TY__THIN_STREAMS 4
/* s (<= TY__THIN_STREAMS) ty__thin_acc sums of the same shape at once (e[i]
 * X[i] into g[i]), with their bits: streams of X read side by side give a
 * core more reads in flight (bench/README.md "X^T z in streams"). */
void ty__thin_accs(ty_dtype t, int s, int64_t rows, int64_t n, const char *const *e, int64_t es,
                   const char *const *X, int64_t x0, int64_t x1, char *const *g);
/* ty__thin_acc's sum g[j] stored at dst as dtype t (f64, or f32 rounded once). */
static inline void ty__thin_put(const char *g, int64_t j, ty_dtype t, char *dst) {
  double v;
  memcpy(&v, g + j * (int64_t)sizeof v, sizeof v);
  if (t == TY_F64) {
    memcpy(dst, &v, sizeof v);
  } else {
    const float f = (float)v;
    memcpy(dst, &f, sizeof f);
  }
}
/* Whether a float matmul C (m, n) = A (m, k) B (k, n) of dtype t is one
 * kernels_linalg.c computes with ty__thin_acc (X^T z: n == 1, A's rows
 * contiguous along m; z^T X: m == 1): for f32 its k-split partials are
 * then f64 (ops.c), so the sum over all of k is rounded once. a0 is A's
 * stride along m. */
static inline bool ty__thin_acc_shape(ty_dtype t, int64_t m, int64_t n, int64_t a0) {
  return (t == TY_F64 || t == TY_F32) &&
         ((n == 1 && m >= 2 && m <= TY__THIN_K && a0 == 1) || (m == 1 && n >= 2 && n <= TY__THIN_K));
}
/* The scalars of the task "gemv_chain", before the fused run's description. */
typedef struct ty__gemv_chain_args {
  int64_t kc;    /* rows per chunk (the last chunk runs to the end) */
  int32_t e_arg; /* the argument holding e, the vector the sums read */
  int32_t pad;
} ty__gemv_chain_args;
/* The CPU variant of "gemv_chain" (kernels_gemv.c's header). */
int ty__gemv_chain_variant(ty_task_ctx *ctx);

/* ---- one level's entry points (kernels_table.c, isa.h) ---------------------------------------- */

typedef struct ty__kernels {
  const ty_loop1d (*unary_loops)[TY_NDTYPES];
  const ty_loop1d (*unary_loops_fast)[TY_NDTYPES];
  const ty_loop1d (*binary_loops)[TY_NDTYPES];
  const ty_loop1d (*binary_loops_fast)[TY_NDTYPES];
  const ty_loop1d *where_loops;
  const ty_loop1d (*cast_loops)[TY_NDTYPES];
  const ty_loop1d *fill_loops;
  const ty_loop1d (*reduce_loops)[TY_NDTYPES][TY_NDTYPES];
  const ty_argloop *argmin_loops;
  const ty_argloop *argmax_loops;
  ty_variant_fn reduce_variant, argreduce_variant, random_variant, arange_variant,
      linspace_variant, fused_variant, convolve_variant, gemv_chain_variant;
  void (*thin_dot)(ty_dtype, int64_t, int64_t, const char *, int64_t, int64_t, const char *,
                   int64_t, char *, int64_t);
  void (*thin_acc)(ty_dtype, int64_t, int64_t, const char *, int64_t, const char *, int64_t,
                   int64_t, char *);
  void (*thin_accs)(ty_dtype, int, int64_t, int64_t, const char *const *, int64_t,
                    const char *const *, int64_t, int64_t, char *const *);
} ty__kernels;

/* The table of the level this process runs with (isa.c; chosen at the first
 * call, or by the first runtime's config). Once chosen it is a load in line
 * (ty__kern_now; the call was ~15 instructions of every element-wise launch,
 * whose loop test reads it); before, ty__kern_choose chooses and returns it. */
extern _Atomic(const ty__kernels *) ty__kern_now;
const ty__kernels *ty__kern_choose(void);
static inline const ty__kernels *ty__kern(void) {
  const ty__kernels *k = atomic_load_explicit(&ty__kern_now, memory_order_acquire);
  return k ? k : ty__kern_choose();
}

/* Outside the kernel set, the hot entry points are the chosen level's: a
 * variant registered through these macros is the one its address is compared
 * with (ops.c, fuse.c), since the level never changes in a process. Inside
 * it (TY__ISA_KERNEL), a file calls its own level's copy. */
#ifndef TY__ISA_KERNEL
#define ty__unary_loops (ty__kern()->unary_loops)
#define ty__unary_loops_fast (ty__kern()->unary_loops_fast)
#define ty__binary_loops (ty__kern()->binary_loops)
#define ty__binary_loops_fast (ty__kern()->binary_loops_fast)
#define ty__where_loops (ty__kern()->where_loops)
#define ty__cast_loops (ty__kern()->cast_loops)
#define ty__fill_loops (ty__kern()->fill_loops)
#define ty__reduce_loops (ty__kern()->reduce_loops)
#define ty__argmin_loops (ty__kern()->argmin_loops)
#define ty__argmax_loops (ty__kern()->argmax_loops)
#define ty__reduce_variant (ty__kern()->reduce_variant)
#define ty__argreduce_variant (ty__kern()->argreduce_variant)
#define ty__random_variant (ty__kern()->random_variant)
#define ty__arange_variant (ty__kern()->arange_variant)
#define ty__linspace_variant (ty__kern()->linspace_variant)
#define ty__fused_variant (ty__kern()->fused_variant)
#define ty__convolve_variant (ty__kern()->convolve_variant)
#define ty__gemv_chain_variant (ty__kern()->gemv_chain_variant)
#define ty__thin_dot (ty__kern()->thin_dot)
#define ty__thin_acc (ty__kern()->thin_acc)
#define ty__thin_accs (ty__kern()->thin_accs)
#endif

#endif /* TY_KERNELS_H */
