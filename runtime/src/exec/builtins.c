/*
 * builtins.c — the registry of the built-in tasks: one task per operation
 * ("add", "exp", "sum", "matmul", "fill", "copy", "cast", "random", ...),
 * registered like user tasks when a runtime is created, with their names,
 * their dtype rules and their CPU variants (the 1-D loops of kernels_*.c
 * over a piece's tiles).
 *
 * The layers above look built-ins up here, never in ops.c: the operations
 * (ops.c) launch them; fusion (fuse.c) asks what a launch computes
 * (ty__fuse_builtin) so that the fused kernel calls the same 1-D loops, and
 * launches the task "fused" (its data: fusion's per-runtime state); the
 * partitioner asks which launches are "ordered" (ty__ordered_launch: cut by
 * their shape only, so that their bits do not depend on the processors).
 */
#include "alloc.h"
#include "builtins.h"
#include "fused.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ---------------------------------------------------------------------- */

static const char *const op_names[TY_NOPS] = {
    [TY_OP_NEG] = "neg",         [TY_OP_EXP] = "exp",         [TY_OP_LOG] = "log",
    [TY_OP_SQRT] = "sqrt",       [TY_OP_ABS] = "abs",         [TY_OP_SIN] = "sin",
    [TY_OP_COS] = "cos",         [TY_OP_TANH] = "tanh",       [TY_OP_FLOOR] = "floor",
    [TY_OP_CEIL] = "ceil",       [TY_OP_NOT] = "not",         [TY_OP_ADD] = "add",
    [TY_OP_SUB] = "sub",         [TY_OP_MUL] = "mul",         [TY_OP_DIV] = "div",
    [TY_OP_MOD] = "mod",         [TY_OP_POW] = "pow",         [TY_OP_MAXIMUM] = "maximum",
    [TY_OP_MINIMUM] = "minimum", [TY_OP_LT] = "lt",           [TY_OP_LE] = "le",
    [TY_OP_GT] = "gt",           [TY_OP_GE] = "ge",           [TY_OP_EQ] = "eq",
    [TY_OP_NE] = "ne",           [TY_OP_AND] = "and",         [TY_OP_OR] = "or",
    [TY_OP_TAN] = "tan",         [TY_OP_ARCSIN] = "arcsin",   [TY_OP_ARCCOS] = "arccos",
    [TY_OP_ARCTAN] = "arctan",   [TY_OP_SINH] = "sinh",       [TY_OP_COSH] = "cosh",
    [TY_OP_ARCSINH] = "arcsinh", [TY_OP_ARCCOSH] = "arccosh", [TY_OP_ARCTANH] = "arctanh",
    [TY_OP_EXPM1] = "expm1",     [TY_OP_LOG1P] = "log1p",     [TY_OP_LOG2] = "log2",
    [TY_OP_LOG10] = "log10",     [TY_OP_EXP2] = "exp2",       [TY_OP_CBRT] = "cbrt",
    [TY_OP_SIGN] = "sign",       [TY_OP_RINT] = "rint",       [TY_OP_TRUNC] = "trunc",
    [TY_OP_RECIPROCAL] = "reciprocal", [TY_OP_INVERT] = "invert", [TY_OP_ISNAN] = "isnan",
    [TY_OP_ISINF] = "isinf",     [TY_OP_ISFINITE] = "isfinite", [TY_OP_XOR] = "xor",
    [TY_OP_ARCTAN2] = "arctan2", [TY_OP_HYPOT] = "hypot",     [TY_OP_FLOORDIV] = "floor_divide",
    [TY_OP_BITAND] = "bitwise_and", [TY_OP_BITOR] = "bitwise_or", [TY_OP_BITXOR] = "bitwise_xor",
    [TY_OP_LSHIFT] = "left_shift", [TY_OP_RSHIFT] = "right_shift",
};

static const char *const reduce_names[TY_NREDUCE] = {
    [TY_RED_SUM] = "sum",       [TY_RED_PROD] = "prod",     [TY_RED_MIN] = "min",
    [TY_RED_MAX] = "max",       [TY_RED_MEAN] = "mean",     [TY_RED_ARGMIN] = "argmin",
    [TY_RED_ARGMAX] = "argmax",
};

const char *ty_op_name(ty_op op) { return (unsigned)op < TY_NOPS ? op_names[op] : "?"; }
const char *ty_reduce_name(ty_reduce_op op) {
  return (unsigned)op < TY_NREDUCE ? reduce_names[op] : "?";
}

/* ---- dtype rules ---------------------------------------------------------------------- */

ty_dtype ty__unary_compute_dtype(ty_op op, ty_dtype in) {
  switch (op) {
  case TY_OP_NEG: return in == TY_BOOL ? TY_I64 : in;
  case TY_OP_EXP:
  case TY_OP_LOG:
  case TY_OP_SQRT:
  case TY_OP_SIN:
  case TY_OP_COS:
  case TY_OP_TANH:
  case TY_OP_TAN:
  case TY_OP_ARCSIN:
  case TY_OP_ARCCOS:
  case TY_OP_ARCTAN:
  case TY_OP_SINH:
  case TY_OP_COSH:
  case TY_OP_ARCSINH:
  case TY_OP_ARCCOSH:
  case TY_OP_ARCTANH:
  case TY_OP_EXPM1:
  case TY_OP_LOG1P:
  case TY_OP_LOG2:
  case TY_OP_LOG10:
  case TY_OP_EXP2:
  case TY_OP_CBRT: return ty_dtype_float_of(in);
  case TY_OP_RECIPROCAL: return in == TY_BOOL ? TY_I64 : in;
  /* abs floor ceil rint trunc sign invert keep integers (and bool: sign has
   * no bool kernel); not isnan isinf isfinite read any dtype */
  default: return in;
  }
}

ty_dtype ty__binary_compute_dtype_any(ty_op op, ty_dtype a, ty_dtype b) {
  ty_dtype c = ty_dtype_promote(a, b);
  switch (op) {
  case TY_OP_ADD:
  case TY_OP_SUB:
  case TY_OP_MUL:
  case TY_OP_MOD:
  case TY_OP_FLOORDIV:
  case TY_OP_LSHIFT:
  case TY_OP_RSHIFT: return c == TY_BOOL ? TY_I64 : c;
  case TY_OP_DIV: /* true division of integers is f64 in numpy too */
  case TY_OP_POW: return ty_dtype_is_float(c) ? c : TY_F64;
  case TY_OP_ARCTAN2: /* numpy's first float loop both cast to safely: i16 with u16 is f32 */
  case TY_OP_HYPOT: return ty_dtype_promote(ty_dtype_float_of(a), ty_dtype_float_of(b));
  default: return c; /* maximum/minimum of bools stay bool (or/and), as numpy */
  }
}

/* ---- the built-in tasks ------------------------------------------------------------------ */

/* task_data of the op tasks: a pointer into this table (must outlive runtimes) */
static const int op_codes[TY_NOPS] = {
    0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
    21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41,
    42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58,
};
_Static_assert(TY_NOPS == 59, "op_codes lists every op");

void ty__run_tiles(const ty_task_ctx *ctx, ty_loop1d fn, const void *aux) {
  char *base[TY_MAX_ARGS];
  int64_t st[TY_MAX_ARGS][TY_MAX_RANK];
  const ty_tile *t0 = &ctx->args[0];
  for (int k = 0; k < ctx->nargs; k++) {
    const ty_tile *t = &ctx->args[k];
    const int64_t es = (int64_t)ty_dtype_size(t->dtype);
    base[k] = t->data;
    for (int d = 0; d < t0->ndim; d++) st[k][d] = t->strides[d] * es;
  }
  ty__foreach(t0->ndim, t0->shape, ctx->nargs, base, (const int64_t(*)[TY_MAX_RANK])st, fn,
              aux);
}

/* "neg" ... "or": args = {out, in} or {out, a, b}, inputs in the compute dtype;
 * scalars: empty, or an int64 that is non-zero when the launch's fastmath
 * axis allows the 4-ULP vector functions (TY__TASK_FASTMATH_ARG) */
static int ew_variant(ty_task_ctx *ctx) {
  const int op = *(const int *)ctx->task_data;
  const ty_dtype t = ctx->args[1].dtype;
  int64_t fast = 0;
  if (ctx->scalar_bytes >= sizeof fast) memcpy(&fast, ctx->scalars, sizeof fast);
  ty_loop1d fn = op < TY_OP_FIRST_BINARY ? (fast ? ty__unary_loops_fast : ty__unary_loops)[op][t]
                                         : (fast ? ty__binary_loops_fast : ty__binary_loops)[op][t];
  if (!fn) return ty_ctx_fail(ctx, "%s: no kernel for dtype %s", ctx->task_name, ty_dtype_name(t));
  ty__run_tiles(ctx, fn, NULL);
  return 0;
}

/* "where": args = {out, cond (bool), a, b} */
static int where_variant(ty_task_ctx *ctx) {
  ty__run_tiles(ctx, ty__where_loops[ctx->args[0].dtype], NULL);
  return 0;
}

/* "cast" and "copy": args = {out, in} */
static int cast_variant(ty_task_ctx *ctx) {
  ty__run_tiles(ctx, ty__cast_loops[ctx->args[1].dtype][ctx->args[0].dtype], NULL);
  return 0;
}

/* "fill": args = {out}; scalars: a ty__fillval */
static int fill_variant(ty_task_ctx *ctx) {
  ty__run_tiles(ctx, ty__fill_loops[ctx->args[0].dtype], ctx->scalars);
  return 0;
}

/* Element-wise tasks (ops, where, cast, copy, fill) are TY_TASK_POINTWISE:
 * output element i reads only element i of each aligned input, which is what
 * lets the fusion pass chain their 1-D loops block by block. The generators
 * (random, arange, linspace) are point-wise too: element i depends on its
 * global index only, which a block's tile carries (lo, gshape), so the fused
 * kernel runs them block by block with a child context. Reductions and
 * matmul are not (reductions fuse as the last launch of a run: fuse.c). */
static ty_status reg(ty_runtime *rt, const char *name, ty_variant_fn fn, const void *data,
                     unsigned flags, const ty_task **out) {
  ty_task_desc d = {.name = name, .cpu = fn, .data = data, .flags = flags};
  return ty_task_register(rt, &d, out);
}

ty_status ty__register_builtins(ty_runtime *rt) {
  ty__blas_init();
  ty__builtins *b = ty__calloc(1, sizeof *b);
  if (!b) return ty__fail(rt, TY_ENOMEM, "out of memory registering the built-in tasks");
  rt->builtins = b;
  ty_status st = TY_OK;
  for (int op = 0; op < TY_NOPS && !st; op++)
    st = reg(rt, op_names[op], ew_variant, &op_codes[op], TY_TASK_POINTWISE | TY__TASK_FASTMATH_ARG | TY__TASK_BYTES_BOUND,
             &b->op[op]);
  for (int r = 0; r < TY_NREDUCE && !st; r++) {
    if (r == TY_RED_MEAN) continue;
    bool arg = r == TY_RED_ARGMIN || r == TY_RED_ARGMAX;
    st = reg(rt, reduce_names[r], arg ? ty__argreduce_variant : ty__reduce_variant, &op_codes[r], TY__TASK_BYTES_BOUND,
             &b->reduce[r]);
  }
  if (!st) st = reg(rt, "where", where_variant, NULL, TY_TASK_POINTWISE | TY__TASK_BYTES_BOUND, &b->where);
  if (!st) st = reg(rt, "cast", cast_variant, NULL, TY_TASK_POINTWISE | TY__TASK_BYTES_BOUND, &b->cast);
  if (!st) st = reg(rt, "copy", cast_variant, NULL, TY_TASK_POINTWISE | TY__TASK_BYTES_BOUND, &b->copy);
  if (!st) st = reg(rt, "fill", fill_variant, NULL, TY_TASK_POINTWISE | TY__TASK_BYTES_BOUND, &b->fill);
  if (!st) st = reg(rt, "arange", ty__arange_variant, NULL, TY_TASK_POINTWISE, &b->arange);
  if (!st) st = reg(rt, "linspace", ty__linspace_variant, NULL, TY_TASK_POINTWISE, &b->linspace);
  if (!st) st = reg(rt, "random", ty__random_variant, NULL, TY_TASK_POINTWISE, &b->random);
  if (!st) st = reg(rt, "matmul", ty__matmul_variant, NULL, 0, &b->matmul);
  if (!st) {
    /* the fused launches' task: its data is fusion's state (compiled kernels, scratch) */
    ty_task_desc d = {.name = "fused", .cpu = ty__fused_variant, .data = ty__fusion_new(),
                      .release = ty__fusion_free, .flags = TY__TASK_BYTES_BOUND};
    st = ty_task_register(rt, &d, &b->fused);
    if (st) ty__fusion_free((void *)d.data);
  }
  if (!st) st = reg(rt, "gemv_chain", ty__gemv_chain_variant, NULL, TY_TASK_NOFUSE, &b->gemv_chain);
  return st;
}

void ty__free_builtins(ty_runtime *rt) {
  if (!rt) return;
  free((void *)rt->builtins);
  rt->builtins = NULL;
}

static const ty__builtins *tasks(const ty_runtime *rt) { return rt->builtins; }

const ty_task *ty__fused_task(const ty_runtime *rt) { return tasks(rt)->fused; }

const ty_task *ty__gemv_chain_task(const ty_runtime *rt) { return tasks(rt)->gemv_chain; }

bool ty__fuse_builtin(const ty_runtime *rt, const ty_pending *l, ty__fsub *o, ty__fillval *fill) {
  const ty__builtins *b = tasks(rt);
  const ty_task *t = l->task;
  memset(o, 0, sizeof *o);
  if (l->pol->p.fastmath) o->flags |= TY__FS_FASTMATH;
  if (t->cpu == ew_variant && l->nargs >= 2) {
    const int op = *(const int *)t->data;
    const ty_dtype dt = l->args[1].store->dtype;
    const bool unary = op < TY_OP_FIRST_BINARY;
    if (l->nargs != (unary ? 2 : 3)) return false;
    if (!(unary ? ty__unary_loops : ty__binary_loops)[op][dt]) return false;
    o->kind = unary ? TY__FK_UNARY : TY__FK_BINARY;
    o->op = (uint8_t)op;
    o->dt = (uint8_t)dt;
    return true;
  }
  if (t == b->where && l->nargs == 4) {
    o->kind = TY__FK_WHERE;
    o->dt = (uint8_t)l->args[0].store->dtype;
    return l->args[1].store->dtype == TY_BOOL;
  }
  if ((t == b->cast || t == b->copy) && l->nargs == 2) {
    o->kind = TY__FK_CAST;
    o->dt = (uint8_t)l->args[0].store->dtype;
    o->dt2 = (uint8_t)l->args[1].store->dtype;
    return true;
  }
  if (t == b->fill && l->nargs == 1 && l->scalar_bytes == sizeof *fill) {
    o->kind = TY__FK_FILL;
    o->dt = (uint8_t)l->args[0].store->dtype;
    memcpy(fill, l->scalars, sizeof *fill);
    return true;
  }
  for (int r = TY_RED_SUM; r <= TY_RED_MAX; r++) {
    if (t != b->reduce[r] || l->nargs != 2 || l->scalar_bytes != sizeof(ty__reduce_args))
      continue;
    ty__reduce_args ra;
    memcpy(&ra, l->scalars, sizeof ra);
    const ty_dtype acc = l->args[0].store->dtype, in = l->args[1].store->dtype;
    if (ra.kind < 0 || ra.kind >= TY__NREDKIND || !ty__reduce_loops[ra.kind][in][acc]) return false;
    o->kind = TY__FK_REDUCE;
    o->op = (uint8_t)ra.kind;
    o->dt = (uint8_t)acc;
    o->dt2 = (uint8_t)in;
    if (ra.init_out) o->flags |= TY__FS_INIT_OUT;
    return true;
  }
  return false;
}

/* A fused run whose last sub-operation is an ordered reduction into a REDUCE
 * accumulator (the run then combines pieces). */
static bool fused_ordered(const ty_pending *l) {
  const ty__fhead *h = (const ty__fhead *)l->scalars;
  if (l->scalar_bytes < sizeof *h || h->magic != TY__FUSE_MAGIC || h->bytes > l->scalar_bytes)
    return false;
  const ty__fsub *s = ty__fsub_first(h);
  for (int k = 0; k < h->nsub; k++, s = ty__fsub_next(s))
    if (s->kind == TY__FK_REDUCE && s->nops == 2 && TY__FOPND_PRIV(&s->opnd[0]) == TY_PRIV_REDUCE &&
        ty__reduce_ordered((ty__redkind)s->op, (ty_dtype)s->dt))
      return true;
  return false;
}

int ty__ordered_launch(const ty_pending *l) {
  const ty_task *t = l->task;
  if (t->cpu == ty__reduce_variant && l->nargs == 2 && l->scalar_bytes == sizeof(ty__reduce_args)) {
    ty__reduce_args ra;
    memcpy(&ra, l->scalars, sizeof ra);
    return l->args[0].priv == TY_PRIV_REDUCE && ra.kind >= 0 && ra.kind < TY__NREDKIND &&
           ty__reduce_ordered((ty__redkind)ra.kind, l->args[0].store->dtype);
  }
  if (t->cpu == ty__fused_variant) return fused_ordered(l);
  if (t->cpu == ty__matmul_variant && l->nargs == 3 && l->ndim >= 2)
    return ty_dtype_is_float(l->args[0].store->dtype) ? 2 : 0;
  if (t->cpu == ty__gemv_chain_variant) return 2; /* tiled as the matmul of its sums */
  return 0;
}
