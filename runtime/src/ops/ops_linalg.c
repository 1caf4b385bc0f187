/*
 * ops_linalg.c — numpy.linalg through LAPACK (tycho/linalg.h): the task
 * "linalg" and the calls that launch it.
 *
 * One launch per call, over a domain (b, W): b matrices of the stack (the
 * batch dims flattened) and W the values one matrix produces, all outputs
 * packed side by side in one row of a (b, W) store (la_layout gives each
 * output's offset and length), then, for a lone matrix, its work (la_work:
 * the copy of a that getrf factors). The pack is the launch's only output, ALIGNED
 * and never split along W, so a piece owns whole rows: whole matrices. The
 * inputs, viewed as (b or 1, rows, cols), are WHOLE: a piece reads the
 * matrices of its rows (batch 1: the same one for every row, numpy's
 * broadcast). After the launch each output is a copy of its columns of the
 * pack under its own shape (no copy when the pack holds one output and no
 * work).
 *
 * A matrix is one LAPACK call in column-major scratch (or, for solve, inv,
 * det, slogdet and cholesky, its C-order copy read as its transpose,
 * linalg_impl.h): single-threaded
 * (OpenBLAS runs on one thread, kernels_linalg.c), so the same bits for a
 * matrix whatever the pieces or --cpus, and the parallelism is the batch's;
 * except a lone large matrix, factored on --cpus threads (la_threaded).
 *
 * Routines are numpy's: getrf + getrs (gesv: solve, inv), getrf (det, slogdet), potrf
 * (cholesky), geqrf + orgqr (qr), gesdd (svd, pinv, matrix_rank), syevd
 * (eigh), gelsd (lstsq). LAPACKE's NaN check is off (LAPACKE_set_nancheck):
 * NaN inputs give NaN results as numpy's, not an argument error.
 */
#include "alloc.h"
#include "internal.h"
#include "team.h"

#include "tycho/linalg.h"

#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  LA_SOLVE = 0,
  LA_INV,
  LA_DET,
  LA_SLOGDET,
  LA_CHOLESKY,
  LA_QR,
  LA_SVD,
  LA_EIGH,
  LA_LSTSQ,
  LA_PINV,
  LA_RANK,
  LA_NOPS
};

static const char *const la_names[LA_NOPS] = {
    [LA_SOLVE] = "solve",       [LA_INV] = "inv", [LA_DET] = "det",   [LA_SLOGDET] = "slogdet",
    [LA_CHOLESKY] = "cholesky", [LA_QR] = "qr",   [LA_SVD] = "svd",   [LA_EIGH] = "eigh",
    [LA_LSTSQ] = "lstsq",       [LA_PINV] = "pinv", [LA_RANK] = "matrix_rank",
};

/* The launch's scalars. */
typedef struct la_args {
  int32_t op;
  int32_t flag;     /* qr: ty_qr_mode; svd: 1 compute_uv, 2 full; eigh: 1 vectors, 2 lower */
  int64_t m, n, k;  /* a is m x n; k: columns of b (solve, lstsq) */
  int64_t batch;    /* b: matrices in the stack (for messages) */
  double tol;       /* pinv rcond; matrix_rank tol, lstsq rcond (NaN: numpy's default) */
} la_args;

/* One matrix being computed: for the messages. */
typedef struct la_item {
  ty_task_ctx *ctx;
  const la_args *a;
  int64_t i;   /* its row in the stack, 0-based */
  int threads; /* OpenBLAS's threads for it (la_threaded: --cpus), which copy a in too */
} la_item;

static int la_fail(la_item *it, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int la_fail(la_item *it, const char *fmt, ...) {
  char what[200], where[64] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (it->a->batch > 1)
    snprintf(where, sizeof where, " %lld of the stack", (long long)it->i + 1);
  return ty_ctx_fail(it->ctx, "ty_linalg_%s: matrix%s %s", la_names[it->a->op], where, what);
}

static int la_nomem(la_item *it) { return la_fail(it, "needs scratch memory: out of memory"); }

/* Work after the outputs in a lone matrix's row of the pack: the copy of a
 * that getrf factors (solve, inv, det, slogdet). In the pack, not malloc'd,
 * so that a call like the last one gets the store cache's block back, its
 * pages already faulted in (a fresh 128 MiB scratch: ~60 ms of page faults
 * of a 4096^2 solve). A stack's matrices take malloc'd scratch instead, one
 * at a time per piece, so that its pack does not double the stack's memory. */
static int64_t la_work(const la_args *g) {
  if (g->batch != 1) return 0;
  switch (g->op) {
  case LA_SOLVE: return g->k ? g->m * g->m : 0; /* no right-hand side: no launch, numpy's */
  case LA_INV:
  case LA_DET:
  case LA_SLOGDET: return g->m * g->m;
  default: return 0;
  }
}

/* The outputs of one matrix in a row of the pack: count, offsets, lengths. */
static int la_layout(const la_args *g, int64_t *off, int64_t *len) {
  const int64_t m = g->m, n = g->n, k = g->k, mn = m < n ? m : n;
  int c = 0;
  switch (g->op) {
  case LA_SOLVE: len[c++] = n * k; break;
  case LA_INV:
  case LA_CHOLESKY: len[c++] = n * n; break;
  case LA_DET:
  case LA_RANK: len[c++] = 1; break;
  case LA_SLOGDET: len[c++] = 1, len[c++] = 1; break;
  case LA_QR:
    if (g->flag == TY_QR_R) len[c++] = mn * n;
    else if (g->flag == TY_QR_COMPLETE) len[c++] = m * m, len[c++] = m * n;
    else len[c++] = m * mn, len[c++] = mn * n;
    break;
  case LA_SVD:
    if (g->flag & 1) {
      const bool full = g->flag & 2;
      len[c++] = m * (full ? m : mn), len[c++] = mn, len[c++] = (full ? n : mn) * n;
    } else {
      len[c++] = mn;
    }
    break;
  case LA_EIGH:
    len[c++] = n;
    if (g->flag & 1) len[c++] = n * n;
    break;
  case LA_LSTSQ: len[c++] = n * k, len[c++] = k, len[c++] = 1, len[c++] = mn; break;
  case LA_PINV: len[c++] = n * m; break;
  default: break;
  }
  int64_t at = 0;
  for (int j = 0; j < c; j++) off[j] = at, at += len[j];
  return c;
}

/* where la_work starts in a row: after the outputs */
static int64_t la_work_at(const la_args *g) {
  int64_t off[4], len[4];
  const int c = la_layout(g, off, len);
  return off[c - 1] + len[c - 1];
}

#define T double
#define FN(x) x##_f64
#define LA(x) LAPACKE_d##x
#define LOGT log
#define EXPT exp
#define EPST DBL_EPSILON
#define GEMM cblas_dgemm
#include "linalg_impl.h"
#undef T
#undef FN
#undef LA
#undef LOGT
#undef EXPT
#undef EPST
#undef GEMM

#define T float
#define FN(x) x##_f32
#define LA(x) LAPACKE_s##x
#define LOGT logf
#define EXPT expf
#define EPST FLT_EPSILON
#define GEMM cblas_sgemm
#include "linalg_impl.h"
#undef T
#undef FN
#undef LA
#undef LOGT
#undef EXPT
#undef EPST
#undef GEMM

/* Also declared by OpenBLAS's cblas.h (kernels_linalg.c). */
void openblas_set_num_threads(int num_threads);

/* A lone matrix (a stack of one, so one piece) with at least LA_THREADED
 * multiply-adds (m n min(m, n): 256^3, 2.5 ms on one core) is factored by
 * OpenBLAS on --cpus threads when its piece runs alone (not inside a
 * parallel region of the executor: the Lua binding flushes before and after
 * each call, so it always does). OpenBLAS's threaded LAPACK gives other bits
 * than its single-threaded one (measured with 0.3.21: gesv and potrf of
 * 1500^2 differ between 1, 2, 3 and 4 threads), so such a result is the same
 * bits for a given --cpus, not across --cpus. Every other matrix is one
 * single-threaded call: the same bits under any --cpus, mode or piece count. */
#define LA_THREADED ((int64_t)1 << 24)

static bool la_threaded(const ty_task_ctx *ctx, const la_args *g) {
  const int64_t mn = g->m < g->n ? g->m : g->n;
  return ctx->args[0].gshape[0] == 1 && ctx->rt->cfg.cpus > 1 && ty__team_worker() < 0 && !omp_in_parallel() &&
         g->m * g->n * mn >= LA_THREADED;
}

/* args: pack (b, W) OUT aligned, a (b|1, m, n) WHOLE [, b (b|1, m, k) WHOLE] */
static int linalg_variant(ty_task_ctx *ctx) {
  const la_args *g = ctx->scalars;
  const ty_tile *P = &ctx->args[0], *A = &ctx->args[1], *B = ctx->nargs > 2 ? &ctx->args[2] : NULL;
  if (la_threaded(ctx, g)) {
    openblas_set_num_threads(ctx->rt->cfg.cpus);
    la_item it = {.ctx = ctx, .a = g, .i = P->lo[0], .threads = ctx->rt->cfg.cpus};
    int st = P->dtype == TY_F64 ? item_f64(&it, A, B, (double *)P->data)
                                : item_f32(&it, A, B, (float *)P->data);
    openblas_set_num_threads(1);
    return st;
  }
  for (int64_t r = 0; r < P->shape[0]; r++) {
    la_item it = {.ctx = ctx, .a = g, .i = P->lo[0] + r, .threads = 1};
    int st;
    if (P->dtype == TY_F64) st = item_f64(&it, A, B, (double *)P->data + r * P->strides[0]);
    else st = item_f32(&it, A, B, (float *)P->data + r * P->strides[0]);
    if (st) return st;
  }
  return 0;
}

ty_status ty__register_linalg_ops(ty_runtime *rt) {
  LAPACKE_set_nancheck(0);
  ty_task_desc d = {.name = "linalg", .cpu = linalg_variant, .flags = TY_TASK_NOFUSE};
  return ty_task_register(rt, &d, NULL);
}

/* ---- calls ---------------------------------------------------------------------- */

static int64_t prod(int n, const int64_t *s) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) p *= s[i];
  return p;
}

/* x in dtype t, broadcast to the batch (when its own batch is neither 1 nor
 * the whole) and viewed as (b or 1, rows, cols). */
static ty_status as3d(ty_runtime *rt, ty_store *x, ty_dtype t, int nb, const int64_t *batch,
                      int64_t rows, int64_t cols, ty_store **out) {
  *out = NULL;
  ty_store *c = NULL, *d = NULL;
  ty_status st = TY_OK;
  const int xb = x->ndim - 2;
  int64_t full[TY_MAX_RANK];
  memcpy(full, batch, sizeof(int64_t) * (size_t)nb);
  full[nb] = rows, full[nb + 1] = cols;
  const int64_t own = prod(xb, x->shape), all = prod(nb, batch);
  if (x->dtype == t) {
    c = x;
    ty_store_retain(x);
  } else {
    st = ty_cast(rt, x, t, &c);
  }
  if (!st && own != 1 && own != all) { /* e.g. (2, 1, n, n) with (1, 3, n, k) */
    ty_store *v = NULL;
    st = ty_store_broadcast(rt, c, nb + 2, full, &v);
    ty_store_release(c);
    c = v;
  }
  const int64_t shape3[3] = {own == 1 ? 1 : all, rows, cols};
  if (!st && !ty_store_is_contiguous(c)) {
    st = ty_store_create(rt, t, c->ndim, c->shape, &d);
    if (!st) st = ty_copy(rt, d, c);
    ty_store_release(c);
    c = d;
  }
  if (!st) st = ty_store_reshape(rt, c, 3, shape3, out);
  ty_store_release(c);
  return st;
}

typedef struct la_out {
  int ndim;
  int64_t shape[TY_MAX_RANK]; /* after the batch dims */
  ty_dtype dtype;             /* of the result (the pack's, or i64 for a rank) */
  ty_store **dst;             /* NULL: not wanted */
} la_out;

/* The launch and the outputs: nb batch dims `batch`, inputs a and b (NULL)
 * already as3d, nout outputs in the order of la_layout. */
static ty_status la_run(ty_runtime *rt, const char *fn, la_args *g, ty_dtype t, int nb,
                        const int64_t *batch, ty_store *a3, ty_store *b3, int nout, la_out *outs) {
  int64_t off[4], len[4];
  const int c = la_layout(g, off, len);
  if (c != nout) return ty__fail(rt, TY_EINVAL, "%s: %d outputs, the layout has %d", fn, nout, c);
  const int64_t B = prod(nb, batch);
  g->batch = B;
  const int64_t work = la_work(g), W = off[c - 1] + len[c - 1] + work;
  ty_store *pack = NULL;
  const int64_t dom[2] = {B, W};
  ty_status st = ty_store_create(rt, t, 2, dom, &pack);
  if (!st && B > 0 && W > 0) {
    ty_arg args[3] = {ty__arg(pack, TY_PRIV_OUT, TY_PROJ_ALIGNED), ty__arg(a3, TY_PRIV_IN, TY_PROJ_WHOLE),
                      ty__arg(b3, TY_PRIV_IN, TY_PROJ_WHOLE)};
    st = ty__launch_named(rt, fn, "linalg", 2, dom, b3 ? 3 : 2, args, g, sizeof *g, 1u << 1);
  }
  for (int j = 0; j < nout && !st; j++) {
    la_out *o = &outs[j];
    if (!o->dst) continue;
    int64_t shape[TY_MAX_RANK];
    memcpy(shape, batch, sizeof(int64_t) * (size_t)nb);
    memcpy(shape + nb, o->shape, sizeof(int64_t) * (size_t)o->ndim);
    ty_store *col = NULL, *dense = NULL, *res = NULL;
    if (c == 1 && !work) {
      dense = pack;
      ty_store_retain(pack);
    } else {
      const int64_t cshape[2] = {B, len[j]};
      st = ty_store_slice(rt, pack, 1, off[j], off[j] + len[j], 1, &col);
      if (!st) st = ty_store_create(rt, t, 2, cshape, &dense);
      if (!st) st = ty_copy(rt, dense, col);
    }
    if (!st) st = ty_store_reshape(rt, dense, nb + o->ndim, shape, &res);
    if (!st && o->dtype != t) {
      ty_store *r2 = NULL;
      st = ty_cast(rt, res, o->dtype, &r2);
      ty_store_release(res);
      res = r2;
    }
    ty_store_release(col);
    ty_store_release(dense);
    if (st) ty_store_release(res);
    else *o->dst = res;
  }
  ty_store_release(pack);
  if (st)
    for (int j = 0; j < nout; j++)
      if (outs[j].dst) {
        ty_store_release(*outs[j].dst);
        *outs[j].dst = NULL;
      }
  return st;
}

static ty_status check_a(ty_runtime *rt, const char *fn, ty_store *a, bool square) {
  if (rt->destroyed) return ty__fail(rt, TY_EINVAL, "%s: the runtime was destroyed", fn);
  if (!a) return ty__fail(rt, TY_EINVAL, "%s: a is NULL", fn);
  if (a->rt != rt) return ty__fail(rt, TY_EINVAL, "%s: a store belongs to another runtime", fn);
  if (a->ndim < 2)
    return ty__fail(rt, TY_ESHAPE, "%s: a must have at least 2 dimensions (a matrix), got %d", fn,
                    a->ndim);
  if (square && a->shape[a->ndim - 1] != a->shape[a->ndim - 2]) {
    char s[256];
    ty__shape_str(a->ndim, a->shape, s, sizeof s);
    return ty__fail(rt, TY_ESHAPE, "%s: the last 2 dimensions of a must be square, got shape %s", fn, s);
  }
  return TY_OK;
}

/* f32 stays f32 (when every operand is), everything else is f64: numpy's. */
static ty_dtype la_dtype(const ty_store *a, const ty_store *b) {
  return a->dtype == TY_F32 && (!b || b->dtype == TY_F32) ? TY_F32 : TY_F64;
}

/* The common case: one input a, outputs described by outs. */
static ty_status la_one(ty_runtime *rt, const char *fn, la_args *g, ty_store *a, bool square,
                        int nout, la_out *outs) {
  if (!rt) return TY_EINVAL;
  for (int j = 0; j < nout; j++)
    if (outs[j].dst) *outs[j].dst = NULL;
  ty_status st = check_a(rt, fn, a, square);
  if (st) return st;
  const int nb = a->ndim - 2;
  const ty_dtype t = la_dtype(a, NULL);
  g->m = a->shape[nb], g->n = a->shape[nb + 1];
  for (int j = 0; j < nout; j++)
    if (outs[j].dtype == TY_NDTYPES) outs[j].dtype = t;
  ty_store *a3 = NULL;
  st = as3d(rt, a, t, nb, a->shape, g->m, g->n, &a3);
  if (!st) st = la_run(rt, fn, g, t, nb, a->shape, a3, NULL, nout, outs);
  ty_store_release(a3);
  return st;
}

#define OUT0(p) {.ndim = 0, .dtype = TY_NDTYPES, .dst = (p)}
#define OUT1(p, x) {.ndim = 1, .shape = {(x)}, .dtype = TY_NDTYPES, .dst = (p)}
#define OUT2(p, x, y) {.ndim = 2, .shape = {(x), (y)}, .dtype = TY_NDTYPES, .dst = (p)}

/* dim -k of a (0 when a is NULL or has fewer dims: check_a says why later) */
static int64_t last(const ty_store *a, int k) { return a && a->ndim >= k ? a->shape[a->ndim - k] : 0; }

ty_status ty_linalg_inv(ty_runtime *rt, ty_store *a, ty_store **out) {
  la_args g = {.op = LA_INV};
  la_out o[1] = {OUT2(out, last(a, 1), last(a, 1))};
  if (!out) return rt ? ty__fail(rt, TY_EINVAL, "ty_linalg_inv: out is NULL") : TY_EINVAL;
  return la_one(rt, "ty_linalg_inv", &g, a, true, 1, o);
}

ty_status ty_linalg_det(ty_runtime *rt, ty_store *a, ty_store **out) {
  la_args g = {.op = LA_DET};
  la_out o[1] = {OUT0(out)};
  if (!out) return rt ? ty__fail(rt, TY_EINVAL, "ty_linalg_det: out is NULL") : TY_EINVAL;
  return la_one(rt, "ty_linalg_det", &g, a, true, 1, o);
}

ty_status ty_linalg_slogdet(ty_runtime *rt, ty_store *a, ty_store **sign, ty_store **logdet) {
  la_args g = {.op = LA_SLOGDET};
  la_out o[2] = {OUT0(sign), OUT0(logdet)};
  if (!sign || !logdet)
    return rt ? ty__fail(rt, TY_EINVAL, "ty_linalg_slogdet: an output is NULL") : TY_EINVAL;
  return la_one(rt, "ty_linalg_slogdet", &g, a, true, 2, o);
}

ty_status ty_linalg_cholesky(ty_runtime *rt, ty_store *a, ty_store **out) {
  la_args g = {.op = LA_CHOLESKY};
  la_out o[1] = {OUT2(out, last(a, 1), last(a, 1))};
  if (!out) return rt ? ty__fail(rt, TY_EINVAL, "ty_linalg_cholesky: out is NULL") : TY_EINVAL;
  return la_one(rt, "ty_linalg_cholesky", &g, a, true, 1, o);
}

ty_status ty_linalg_qr(ty_runtime *rt, ty_store *a, ty_qr_mode mode, ty_store **q, ty_store **r) {
  const char *fn = "ty_linalg_qr";
  if (!rt) return TY_EINVAL;
  if (!r || (mode != TY_QR_R && !q)) return ty__fail(rt, TY_EINVAL, "%s: an output is NULL", fn);
  if ((unsigned)mode > TY_QR_R) return ty__fail(rt, TY_EINVAL, "%s: unknown mode %d", fn, (int)mode);
  const int64_t m = last(a, 2), n = last(a, 1), k = m < n ? m : n;
  la_args g = {.op = LA_QR, .flag = (int32_t)mode};
  if (mode == TY_QR_R) {
    la_out o[1] = {OUT2(r, k, n)};
    return la_one(rt, fn, &g, a, false, 1, o);
  }
  const int64_t qc = mode == TY_QR_COMPLETE ? m : k;
  la_out o[2] = {OUT2(q, m, qc), OUT2(r, qc, n)};
  return la_one(rt, fn, &g, a, false, 2, o);
}

ty_status ty_linalg_svd(ty_runtime *rt, ty_store *a, bool full_matrices, ty_store **u,
                        ty_store **s, ty_store **vh) {
  const char *fn = "ty_linalg_svd";
  if (!rt) return TY_EINVAL;
  if (!s || (u && !vh)) return ty__fail(rt, TY_EINVAL, "%s: an output is NULL", fn);
  const int64_t m = last(a, 2), n = last(a, 1), k = m < n ? m : n;
  la_args g = {.op = LA_SVD, .flag = (u ? 1 : 0) | (full_matrices ? 2 : 0)};
  if (!u) {
    la_out o[1] = {OUT1(s, k)};
    return la_one(rt, fn, &g, a, false, 1, o);
  }
  la_out o[3] = {OUT2(u, m, full_matrices ? m : k), OUT1(s, k), OUT2(vh, full_matrices ? n : k, n)};
  return la_one(rt, fn, &g, a, false, 3, o);
}

ty_status ty_linalg_eigh(ty_runtime *rt, ty_store *a, bool lower, ty_store **w, ty_store **v) {
  const char *fn = "ty_linalg_eigh";
  if (!rt) return TY_EINVAL;
  if (!w) return ty__fail(rt, TY_EINVAL, "%s: w is NULL", fn);
  const int64_t n = last(a, 1);
  la_args g = {.op = LA_EIGH, .flag = (v ? 1 : 0) | (lower ? 2 : 0)};
  la_out o[2] = {OUT1(w, n), OUT2(v, n, n)};
  return la_one(rt, fn, &g, a, true, v ? 2 : 1, o);
}

ty_status ty_linalg_pinv(ty_runtime *rt, ty_store *a, double rcond, ty_store **out) {
  if (!rt) return TY_EINVAL;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_linalg_pinv: out is NULL");
  la_args g = {.op = LA_PINV, .tol = rcond};
  la_out o[1] = {OUT2(out, last(a, 1), last(a, 2))};
  return la_one(rt, "ty_linalg_pinv", &g, a, false, 1, o);
}

ty_status ty_linalg_matrix_rank(ty_runtime *rt, ty_store *a, double tol, ty_store **out) {
  if (!rt) return TY_EINVAL;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_linalg_matrix_rank: out is NULL");
  la_args g = {.op = LA_RANK, .tol = tol};
  la_out o[1] = {{.ndim = 0, .dtype = TY_I64, .dst = out}};
  return la_one(rt, "ty_linalg_matrix_rank", &g, a, false, 1, o);
}

/* a (..., m, n) and b (..., m, k) or a stack of vectors b (..., m): the
 * batch broadcast, b as3d with k columns. */
static ty_status two(ty_runtime *rt, const char *fn, ty_store *a, ty_store *b, bool square,
                     bool vec, int *nb, int64_t *batch, ty_dtype *t, ty_store **a3, ty_store **b3,
                     int64_t *k) {
  ty_status st = check_a(rt, fn, a, square);
  if (st) return st;
  if (!b) return ty__fail(rt, TY_EINVAL, "%s: b is NULL", fn);
  if (b->rt != rt) return ty__fail(rt, TY_EINVAL, "%s: a store belongs to another runtime", fn);
  const int64_t m = last(a, 2);
  const int bm = vec ? b->ndim - 1 : b->ndim - 2; /* b's batch dims */
  if (bm < 0)
    return ty__fail(rt, TY_ESHAPE,
                    "%s: b must have %d dimensions (a stack of vectors, numpy's rule) or at least 2 "
                    "(matrices), got %d", fn, a->ndim - 1, b->ndim);
  const int64_t bm_rows = b->shape[bm];
  *k = vec ? 1 : b->shape[b->ndim - 1];
  if (bm_rows != m) {
    char sa[256], sb[256];
    ty__shape_str(a->ndim, a->shape, sa, sizeof sa);
    ty__shape_str(b->ndim, b->shape, sb, sizeof sb);
    return ty__fail(rt, TY_ESHAPE, "%s: shapes %s and %s do not align (%lld rows != %lld)", fn, sa,
                    sb, (long long)m, (long long)bm_rows);
  }
  st = ty_broadcast_shapes(a->ndim - 2, a->shape, bm, b->shape, nb, batch);
  if (st) {
    char sa[256], sb[256];
    ty__shape_str(a->ndim - 2, a->shape, sa, sizeof sa);
    ty__shape_str(bm, b->shape, sb, sizeof sb);
    return ty__fail(rt, TY_ESHAPE, "%s: the stacks %s and %s do not broadcast", fn, sa, sb);
  }
  *t = la_dtype(a, b);
  ty_store *bv = NULL;
  if (vec) {
    st = ty_store_expand(rt, b, b->ndim, &bv);
  } else {
    bv = b;
    ty_store_retain(b);
  }
  if (!st) st = as3d(rt, a, *t, *nb, batch, m, last(a, 1), a3);
  if (!st) st = as3d(rt, bv, *t, *nb, batch, m, *k, b3);
  ty_store_release(bv);
  return st;
}

ty_status ty_linalg_solve(ty_runtime *rt, ty_store *a, ty_store *b, ty_store **out) {
  const char *fn = "ty_linalg_solve";
  if (!rt) return TY_EINVAL;
  if (!out) return ty__fail(rt, TY_EINVAL, "%s: out is NULL", fn);
  *out = NULL;
  const bool vec = a && b && b->ndim == a->ndim - 1;
  int nb = 0;
  int64_t batch[TY_MAX_RANK], k = 0;
  ty_dtype t = TY_F64;
  ty_store *a3 = NULL, *b3 = NULL;
  ty_status st = two(rt, fn, a, b, true, vec, &nb, batch, &t, &a3, &b3, &k);
  if (!st) {
    const int64_t n = last(a, 1);
    la_args g = {.op = LA_SOLVE, .m = n, .n = n, .k = k};
    la_out o[1] = {vec ? (la_out)OUT1(out, n) : (la_out)OUT2(out, n, k)};
    o[0].dtype = t;
    st = la_run(rt, fn, &g, t, nb, batch, a3, b3, 1, o);
  }
  ty_store_release(a3);
  ty_store_release(b3);
  return st;
}

ty_status ty_linalg_lstsq(ty_runtime *rt, ty_store *a, ty_store *b, double rcond, ty_store **x,
                          ty_store **residuals, ty_store **rank, ty_store **s) {
  const char *fn = "ty_linalg_lstsq";
  if (!rt) return TY_EINVAL;
  if (!x || !residuals || !rank || !s) return ty__fail(rt, TY_EINVAL, "%s: an output is NULL", fn);
  *x = *residuals = *rank = *s = NULL;
  if (a && a->ndim != 2)
    return ty__fail(rt, TY_ESHAPE, "%s: a must be 2-D, got %d dimensions", fn, a->ndim);
  if (b && b->ndim != 1 && b->ndim != 2)
    return ty__fail(rt, TY_ESHAPE, "%s: b must be 1-D or 2-D, got %d dimensions", fn, b->ndim);
  const bool vec = b && b->ndim == 1;
  int nb = 0;
  int64_t batch[TY_MAX_RANK], k = 0;
  ty_dtype t = TY_F64;
  ty_store *a3 = NULL, *b3 = NULL;
  ty_status st = two(rt, fn, a, b, false, vec, &nb, batch, &t, &a3, &b3, &k);
  if (!st) {
    const int64_t m = last(a, 2), n = last(a, 1), mn = m < n ? m : n;
    la_args g = {.op = LA_LSTSQ, .m = m, .n = n, .k = k, .tol = rcond};
    la_out o[4] = {vec ? (la_out)OUT1(x, n) : (la_out)OUT2(x, n, k), OUT1(residuals, k), OUT0(rank),
                   OUT1(s, mn)};
    for (int j = 0; j < 4; j++) o[j].dtype = t;
    o[2].dtype = TY_I64;
    st = la_run(rt, fn, &g, t, nb, batch, a3, b3, 4, o);
  }
  ty_store_release(a3);
  ty_store_release(b3);
  return st;
}
