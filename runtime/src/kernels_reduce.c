/*
 * kernels_reduce.c — reduction kernels: sum, prod, min, max as 1-D
 * accumulation loops, argmin/argmax as index scans, and the variants of their
 * tasks.
 *
 * How a reduction launch looks (ops.c): the domain is the input's shape; the
 * output (the input's shape with the reduced axes removed) is passed as a view
 * broadcast back to the input's shape, stride 0 on the reduced axes. Either
 *  - TY_PRIV_REDUCE: every piece gets a private accumulator tile initialised to
 *    the identity and the runtime combines them (any dim may be split), or
 *  - TY_PRIV_OUT: reduced dims are never split, so the piece owns its outputs
 *    and initialises them itself (scalars.init_out).
 * In both cases the kernel sees (acc, in) with acc's byte stride 0 along a
 * reduced run and accumulates; ty__foreach decides whether the innermost run
 * reduces (acc stride 0: one accumulator) or combines element-wise (reducing
 * an outer axis: acc[i] op= in[i] over a row, which vectorises).
 *
 * Accuracy: float sums use numpy's pairwise summation (8 accumulators over
 * blocks of 128, halves added recursively: error O(log n) ulps); f32 inputs are
 * summed in double within a run. Products use 8 accumulators. Integer sums and
 * products wrap modulo 2^64 (computed in unsigned, no undefined overflow).
 * min/max propagate NaN; argmin/argmax return the first occurrence, and the
 * first NaN when there is one (numpy's rule).
 */
#include "kernels.h"

#include <math.h>

typedef uint8_t ty_bool_t;

#define SZ(T) ((int64_t)sizeof(T))
#define LOAD(T, p, i, s) (*(const T *)((p) + (i) * (s)))

/* ---- run reducers: the whole run into one value ----------------------------------- */

/* numpy's pairwise_sum: exact same blocking, so a contiguous 1-D sum in one
 * piece matches numpy bit for bit. */
#define PW_BLOCK 128
#define PAIRWISE(NAME, TI, TW)                                                         \
  static TW NAME(const char *p, int64_t n, int64_t s) {                                \
    if (n < 8) {                                                                       \
      TW r = 0;                                                                        \
      for (int64_t i = 0; i < n; i++) r += (TW)LOAD(TI, p, i, s);                      \
      return r;                                                                        \
    }                                                                                  \
    if (n <= PW_BLOCK) {                                                               \
      TW r[8];                                                                         \
      int64_t i;                                                                       \
      if (s == SZ(TI)) {                                                               \
        const TI *a_ = (const TI *)p;                                                  \
        for (int j = 0; j < 8; j++) r[j] = (TW)a_[j];                                  \
        for (i = 8; i < n - (n % 8); i += 8)                                           \
          for (int j = 0; j < 8; j++) r[j] += (TW)a_[i + j];                           \
      } else {                                                                         \
        for (int j = 0; j < 8; j++) r[j] = (TW)LOAD(TI, p, j, s);                      \
        for (i = 8; i < n - (n % 8); i += 8)                                           \
          for (int j = 0; j < 8; j++) r[j] += (TW)LOAD(TI, p, i + j, s);               \
      }                                                                                \
      TW res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));      \
      for (; i < n; i++) res += (TW)LOAD(TI, p, i, s);                                 \
      return res;                                                                      \
    }                                                                                  \
    int64_t n2 = n / 2;                                                                \
    n2 -= n2 % 8;                                                                      \
    return NAME(p, n2, s) + NAME(p + n2 * s, n - n2, s);                               \
  }
PAIRWISE(pw_f64, double, double)
PAIRWISE(pw_f32, float, double)
PAIRWISE(pw_i64_d, int64_t, double)
PAIRWISE(pw_i32_d, int32_t, double)
PAIRWISE(pw_u8_d, uint8_t, double)

/* Integer sums: exact modulo 2^64, any order. */
#define ISUM(NAME, TI)                                                                 \
  static uint64_t NAME(const char *p, int64_t n, int64_t s) {                          \
    uint64_t r = 0;                                                                    \
    if (s == SZ(TI)) {                                                                 \
      const TI *a_ = (const TI *)p;                                                    \
      for (int64_t i = 0; i < n; i++) r += (uint64_t)(int64_t)a_[i];                   \
    } else {                                                                           \
      for (int64_t i = 0; i < n; i++) r += (uint64_t)(int64_t)LOAD(TI, p, i, s);       \
    }                                                                                  \
    return r;                                                                          \
  }
ISUM(isum_i64, int64_t)
ISUM(isum_i32, int32_t)
ISUM(isum_u8, uint8_t)

#define FPROD(NAME, TI, TW)                                                            \
  static TW NAME(const char *p, int64_t n, int64_t s) {                                \
    TW r[8] = {1, 1, 1, 1, 1, 1, 1, 1};                                                \
    int64_t i = 0;                                                                     \
    for (; i + 8 <= n; i += 8)                                                         \
      for (int j = 0; j < 8; j++) r[j] *= (TW)LOAD(TI, p, i + j, s);                   \
    TW res = ((r[0] * r[1]) * (r[2] * r[3])) * ((r[4] * r[5]) * (r[6] * r[7]));      \
    for (; i < n; i++) res *= (TW)LOAD(TI, p, i, s);                                   \
    return res;                                                                        \
  }
FPROD(prod_f64, double, double)
FPROD(prod_f32, float, double)

#define IPROD(NAME, TI)                                                                \
  static uint64_t NAME(const char *p, int64_t n, int64_t s) {                          \
    uint64_t r = 1;                                                                    \
    for (int64_t i = 0; i < n; i++) r *= (uint64_t)(int64_t)LOAD(TI, p, i, s);         \
    return r;                                                                          \
  }
IPROD(iprod_i64, int64_t)
IPROD(iprod_i32, int32_t)
IPROD(iprod_u8, uint8_t)

/* min/max: BETTER(x, m) says x replaces the running m. For floats it is also
 * true when x is NaN, and never true once m is NaN, so NaN sticks. 16 lanes
 * keep the contiguous loop vectorised. */
#define MINMAX_RUN(NAME, T, IDENT, BETTER)                                             \
  static T NAME(const char *p, int64_t n, int64_t s) {                                 \
    T lane[16];                                                                        \
    for (int j = 0; j < 16; j++) lane[j] = (IDENT);                                    \
    int64_t i = 0;                                                                     \
    if (s == SZ(T)) {                                                                  \
      const T *a_ = (const T *)p;                                                      \
      for (; i + 16 <= n; i += 16)                                                     \
        for (int j = 0; j < 16; j++) {                                                 \
          const T x = a_[i + j], m = lane[j];                                          \
          lane[j] = (BETTER) ? x : m;                                                  \
        }                                                                              \
    }                                                                                  \
    T r = (IDENT);                                                                     \
    for (int j = 0; j < 16; j++) {                                                     \
      const T x = lane[j], m = r;                                                      \
      r = (BETTER) ? x : m;                                                            \
    }                                                                                  \
    for (; i < n; i++) {                                                               \
      const T x = LOAD(T, p, i, s), m = r;                                             \
      r = (BETTER) ? x : m;                                                            \
    }                                                                                  \
    return r;                                                                          \
  }
#define FMIN_BETTER (x < m || x != x)
#define FMAX_BETTER (x > m || x != x)
#define IMIN_BETTER (x < m)
#define IMAX_BETTER (x > m)
MINMAX_RUN(min_f64, double, INFINITY, FMIN_BETTER)
MINMAX_RUN(max_f64, double, -INFINITY, FMAX_BETTER)
MINMAX_RUN(min_f32, float, INFINITY, FMIN_BETTER)
MINMAX_RUN(max_f32, float, -INFINITY, FMAX_BETTER)
MINMAX_RUN(min_i64, int64_t, INT64_MAX, IMIN_BETTER)
MINMAX_RUN(max_i64, int64_t, INT64_MIN, IMAX_BETTER)
MINMAX_RUN(min_i32, int32_t, INT32_MAX, IMIN_BETTER)
MINMAX_RUN(max_i32, int32_t, INT32_MIN, IMAX_BETTER)
MINMAX_RUN(min_u8, uint8_t, 255, IMIN_BETTER)
MINMAX_RUN(max_u8, uint8_t, 0, IMAX_BETTER)

/* ---- accumulation loops (ty_loop1d, ptrs = {acc, in}) ---------------------------------- */

/* RUN reduces a run into a TW; COMBINE merges x (the accumulator, TA) with y
 * (a TW: a run's result or one converted input element). */
#define ACC_LOOP(NAME, TI, TA, TW, RUN, COMBINE)                                       \
  static void NAME(int64_t n, char **p, const int64_t *s, const void *aux) {           \
    (void)aux;                                                                         \
    if (s[0] == 0) {                                                                   \
      TA *acc_ = (TA *)p[0];                                                           \
      const TA x = *acc_;                                                              \
      const TW y = RUN(p[1], n, s[1]);                                                 \
      *acc_ = (TA)(COMBINE);                                                           \
      return;                                                                          \
    }                                                                                  \
    if (s[0] == SZ(TA) && s[1] == SZ(TI)) {                                            \
      TA *restrict o_ = (TA *)p[0];                                                    \
      const TI *restrict a_ = (const TI *)p[1];                                        \
      for (int64_t i = 0; i < n; i++) {                                                \
        const TA x = o_[i];                                                            \
        const TW y = (TW)a_[i];                                                        \
        o_[i] = (TA)(COMBINE);                                                         \
      }                                                                                \
      return;                                                                          \
    }                                                                                  \
    char *o_ = p[0];                                                                   \
    const char *a_ = p[1];                                                             \
    for (int64_t i = 0; i < n; i++, o_ += s[0], a_ += s[1]) {                          \
      const TA x = *(TA *)o_;                                                          \
      const TW y = (TW)*(const TI *)a_;                                                \
      *(TA *)o_ = (TA)(COMBINE);                                                       \
    }                                                                                  \
  }

/* sums */
ACC_LOOP(sum_f64, double, double, double, pw_f64, x + y)
ACC_LOOP(sum_f32, float, float, double, pw_f32, (double)x + y)
ACC_LOOP(sum_i64, int64_t, int64_t, uint64_t, isum_i64, (uint64_t)x + y)
ACC_LOOP(sum_i32, int32_t, int64_t, uint64_t, isum_i32, (uint64_t)x + y)
ACC_LOOP(sum_u8, uint8_t, int64_t, uint64_t, isum_u8, (uint64_t)x + y)
/* integer sums into f64 (mean of integers, like numpy's float accumulator) */
ACC_LOOP(sum_i64_d, int64_t, double, double, pw_i64_d, x + y)
ACC_LOOP(sum_i32_d, int32_t, double, double, pw_i32_d, x + y)
ACC_LOOP(sum_u8_d, uint8_t, double, double, pw_u8_d, x + y)
/* products */
ACC_LOOP(prod_f64_l, double, double, double, prod_f64, x * y)
ACC_LOOP(prod_f32_l, float, float, double, prod_f32, (double)x * y)
ACC_LOOP(prod_i64, int64_t, int64_t, uint64_t, iprod_i64, (uint64_t)x * y)
ACC_LOOP(prod_i32, int32_t, int64_t, uint64_t, iprod_i32, (uint64_t)x * y)
ACC_LOOP(prod_u8, uint8_t, int64_t, uint64_t, iprod_u8, (uint64_t)x * y)
/* min/max keep the dtype: COMBINE is BETTER with y as the candidate */
#define MM_F_MIN ((y < x || y != y) ? y : x)
#define MM_F_MAX ((y > x || y != y) ? y : x)
#define MM_I_MIN (y < x ? y : x)
#define MM_I_MAX (y > x ? y : x)
ACC_LOOP(min_f64_l, double, double, double, min_f64, MM_F_MIN)
ACC_LOOP(max_f64_l, double, double, double, max_f64, MM_F_MAX)
ACC_LOOP(min_f32_l, float, float, float, min_f32, MM_F_MIN)
ACC_LOOP(max_f32_l, float, float, float, max_f32, MM_F_MAX)
ACC_LOOP(min_i64_l, int64_t, int64_t, int64_t, min_i64, MM_I_MIN)
ACC_LOOP(max_i64_l, int64_t, int64_t, int64_t, max_i64, MM_I_MAX)
ACC_LOOP(min_i32_l, int32_t, int32_t, int32_t, min_i32, MM_I_MIN)
ACC_LOOP(max_i32_l, int32_t, int32_t, int32_t, max_i32, MM_I_MAX)
ACC_LOOP(min_u8_l, uint8_t, uint8_t, uint8_t, min_u8, MM_I_MIN)
ACC_LOOP(max_u8_l, uint8_t, uint8_t, uint8_t, max_u8, MM_I_MAX)

const ty_loop1d ty__reduce_loops[TY__NREDKIND][TY_NDTYPES][TY_NDTYPES] = {
    [TY__RSUM] =
        {
            [TY_F64] = {[TY_F64] = sum_f64},
            [TY_F32] = {[TY_F32] = sum_f32},
            [TY_I64] = {[TY_I64] = sum_i64, [TY_F64] = sum_i64_d},
            [TY_I32] = {[TY_I64] = sum_i32, [TY_F64] = sum_i32_d},
            [TY_U8] = {[TY_I64] = sum_u8, [TY_F64] = sum_u8_d},
            [TY_BOOL] = {[TY_I64] = sum_u8, [TY_F64] = sum_u8_d},
        },
    [TY__RPROD] =
        {
            [TY_F64] = {[TY_F64] = prod_f64_l},
            [TY_F32] = {[TY_F32] = prod_f32_l},
            [TY_I64] = {[TY_I64] = prod_i64},
            [TY_I32] = {[TY_I64] = prod_i32},
            [TY_U8] = {[TY_I64] = prod_u8},
            [TY_BOOL] = {[TY_I64] = prod_u8},
        },
    [TY__RMIN] =
        {
            [TY_F64] = {[TY_F64] = min_f64_l},
            [TY_F32] = {[TY_F32] = min_f32_l},
            [TY_I64] = {[TY_I64] = min_i64_l},
            [TY_I32] = {[TY_I32] = min_i32_l},
            [TY_U8] = {[TY_U8] = min_u8_l},
            [TY_BOOL] = {[TY_BOOL] = min_u8_l},
        },
    [TY__RMAX] =
        {
            [TY_F64] = {[TY_F64] = max_f64_l},
            [TY_F32] = {[TY_F32] = max_f32_l},
            [TY_I64] = {[TY_I64] = max_i64_l},
            [TY_I32] = {[TY_I32] = max_i32_l},
            [TY_U8] = {[TY_U8] = max_u8_l},
            [TY_BOOL] = {[TY_BOOL] = max_u8_l},
        },
};

ty__fillval ty__reduce_identity(ty__redkind kind, ty_dtype t) {
  ty__fillval v = {0, 0};
  switch (kind) {
  case TY__RSUM: break;
  case TY__RPROD: v.f = 1, v.i = 1; break;
  case TY__RMIN:
    v.f = INFINITY;
    v.i = t == TY_I64 ? INT64_MAX : t == TY_I32 ? INT32_MAX : t == TY_U8 ? 255 : 1;
    break;
  case TY__RMAX:
    v.f = -INFINITY;
    v.i = t == TY_I64 ? INT64_MIN : t == TY_I32 ? INT32_MIN : 0;
    break;
  default: break;
  }
  return v;
}

/* ---- the sum/prod/min/max variant ---------------------------------------------------------- */

int ty__reduce_variant(ty_task_ctx *ctx) {
  const ty__reduce_args *a = ctx->scalars;
  const ty_tile *acc = &ctx->args[0], *in = &ctx->args[1];
  const ty__redkind kind = (ty__redkind)a->kind;
  ty_loop1d fn = ty__reduce_loops[kind][in->dtype][acc->dtype];
  if (!fn)
    return ty_ctx_fail(ctx, "%s: no kernel from %s to %s", ctx->task_name,
                       ty_dtype_name(in->dtype), ty_dtype_name(acc->dtype));
  if (a->init_out) {
    /* OUT mode: this piece owns its outputs; set each once to the identity
     * (extent 1 on the reduced dims, where the stride is 0) */
    int64_t shape[TY_MAX_RANK], st[1][TY_MAX_RANK];
    const int64_t es = (int64_t)ty_dtype_size(acc->dtype);
    for (int d = 0; d < acc->ndim; d++) {
      shape[d] = acc->strides[d] == 0 && acc->shape[d] > 0 ? 1 : acc->shape[d];
      st[0][d] = acc->strides[d] * es;
    }
    ty__fillval id = ty__reduce_identity(kind, acc->dtype);
    char *base = acc->data;
    ty__foreach(acc->ndim, shape, 1, &base, (const int64_t(*)[TY_MAX_RANK])st,
                ty__fill_loops[acc->dtype], &id);
  }
  ty__run_tiles(ctx, fn, NULL);
  return 0;
}

/* ---- argmin / argmax ------------------------------------------------------------------------ */

#define ARG_FLOAT(NAME, T, CMP)                                                        \
  static int64_t NAME(int64_t n, const char *p, int64_t s) {                           \
    T m = LOAD(T, p, 0, s);                                                            \
    if (m != m) return 0;                                                              \
    int64_t best = 0;                                                                  \
    for (int64_t i = 1; i < n; i++) {                                                  \
      const T x = LOAD(T, p, i, s);                                                    \
      if (x != x) return i;                                                            \
      if (x CMP m) m = x, best = i;                                                     \
    }                                                                                  \
    return best;                                                                       \
  }
#define ARG_INT(NAME, T, CMP)                                                          \
  static int64_t NAME(int64_t n, const char *p, int64_t s) {                           \
    T m = LOAD(T, p, 0, s);                                                            \
    int64_t best = 0;                                                                  \
    for (int64_t i = 1; i < n; i++) {                                                  \
      const T x = LOAD(T, p, i, s);                                                    \
      if (x CMP m) m = x, best = i;                                                    \
    }                                                                                  \
    return best;                                                                       \
  }
ARG_FLOAT(argmin_f64, double, <)
ARG_FLOAT(argmax_f64, double, >)
ARG_FLOAT(argmin_f32, float, <)
ARG_FLOAT(argmax_f32, float, >)
ARG_INT(argmin_i64, int64_t, <)
ARG_INT(argmax_i64, int64_t, >)
ARG_INT(argmin_i32, int32_t, <)
ARG_INT(argmax_i32, int32_t, >)
ARG_INT(argmin_u8, uint8_t, <)
ARG_INT(argmax_u8, uint8_t, >)

const ty_argloop ty__argmin_loops[TY_NDTYPES] = {
    [TY_F64] = argmin_f64, [TY_F32] = argmin_f32, [TY_I64] = argmin_i64,
    [TY_I32] = argmin_i32, [TY_U8] = argmin_u8,   [TY_BOOL] = argmin_u8,
};
const ty_argloop ty__argmax_loops[TY_NDTYPES] = {
    [TY_F64] = argmax_f64, [TY_F32] = argmax_f32, [TY_I64] = argmax_i64,
    [TY_I32] = argmax_i32, [TY_U8] = argmax_u8,   [TY_BOOL] = argmax_u8,
};

/* One scan per output element along the reduced axis (never split, so the
 * tile spans it whole and indices are relative to 0). */
int ty__argreduce_variant(ty_task_ctx *ctx) {
  const ty__reduce_args *a = ctx->scalars;
  const ty_tile *out = &ctx->args[0], *in = &ctx->args[1];
  const int axis = (int)a->axis, nd = in->ndim;
  ty_argloop fn = (a->kind == TY_RED_ARGMIN ? ty__argmin_loops : ty__argmax_loops)[in->dtype];
  const int64_t ein = (int64_t)ty_dtype_size(in->dtype), eout = (int64_t)sizeof(int64_t);
  if (axis < 0 || axis >= nd || in->shape[axis] == 0 || in->lo[axis] != 0)
    return ty_ctx_fail(ctx, "%s: axis %d is not whole in this piece", ctx->task_name, axis);
  for (int d = 0; d < nd; d++)
    if (in->shape[d] == 0) return 0;
  const int64_t n = in->shape[axis], step = in->strides[axis] * ein;
  int64_t idx[TY_MAX_RANK] = {0};
  for (;;) {
    int64_t oin = 0, oout = 0;
    for (int d = 0; d < nd; d++) {
      oin += idx[d] * in->strides[d];
      oout += idx[d] * out->strides[d];
    }
    *(int64_t *)(out->data + oout * eout) = fn(n, in->data + oin * ein, step);
    int d = nd - 1;
    for (; d >= 0; d--) {
      if (d == axis) continue;
      if (++idx[d] < in->shape[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return 0;
  }
}
