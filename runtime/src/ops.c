/*
 * ops.c — the built-in operations of tycho.h ("operations (deferred
 * launches)"): argument checks, dtype rules, and the launches that implement
 * them; plus the registration of the built-in tasks.
 *
 * Every operation is one or more ordinary launches of registered tasks (one
 * task per operation: "add", "exp", "sum", "matmul", "fill", "copy", "cast",
 * "random", ...), so the window, partitioning and fusion see nothing
 * special. An operation:
 *  1. checks its arguments and fails with a message naming the function
 *     ("ty_binary: shapes (3, 4) and (5,) do not broadcast"), launching
 *     nothing;
 *  2. computes the output dtype (rules in tycho.h and below) and creates the
 *     output store;
 *  3. casts each input whose dtype differs from the compute dtype into a
 *     temporary (a "cast" launch; cheap for the 0-d stores that Lua numbers
 *     become), then passes inputs as views broadcast to the output's shape
 *     (stride 0 on broadcast dims: no copies);
 *  4. appends the launch. Temporaries and views are released at once: the
 *     launch holds its own references until it has run.
 * An empty output launches nothing. On failure nothing is returned and every
 * temporary is released.
 *
 * For fusion (fuse.c) this file also registers the task "fused" (its data:
 * fusion's per-runtime state) and says what a built-in launch computes
 * (ty__fuse_builtin), so that the fused kernel calls the same 1-D loops. The
 * `fastmath` axis reaches the op kernels through their scalar bytes
 * (pass_fastmath), fused or not.
 *
 * Reductions pass the output as a view broadcast back to the input's shape
 * (stride 0 on reduced axes) so that the launch domain is the input:
 *  - when a kept dim has at least 16 elements (OWN_MIN_KEPT), the view is OUT
 *    (reduced dims are then never split; each piece initialises and owns its
 *    outputs: no buffers, no combine step);
 *  - otherwise (full reductions, short kept dims) it is REDUCE: any dim may be
 *    split, pieces accumulate into private tiles that the runtime combines into
 *    the output, which a "fill" launch first sets to the identity. Float sums
 *    and products of this kind are "ordered" (kernels.h): cut by their shape
 *    only, so that their bits do not depend on the processors.
 */
#include "alloc.h"
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
  case TY_OP_TANH: return ty_dtype_is_float(in) ? in : TY_F64;
  default: return in; /* abs floor ceil keep integers (and bool); not reads any dtype */
  }
}

ty_dtype ty__binary_compute_dtype(ty_op op, ty_dtype a, ty_dtype b) {
  ty_dtype c = ty_dtype_promote(a, b);
  switch (op) {
  case TY_OP_ADD:
  case TY_OP_SUB:
  case TY_OP_MUL:
  case TY_OP_MOD: return c == TY_BOOL ? TY_I64 : c;
  case TY_OP_DIV:
  case TY_OP_POW: return ty_dtype_is_float(c) ? c : TY_F64;
  default: return c; /* maximum/minimum of bools stay bool (or/and), as numpy */
  }
}

ty_dtype ty__op_out_dtype(ty_op op, ty_dtype compute) {
  switch (op) {
  case TY_OP_NOT:
  case TY_OP_LT:
  case TY_OP_LE:
  case TY_OP_GT:
  case TY_OP_GE:
  case TY_OP_EQ:
  case TY_OP_NE:
  case TY_OP_AND:
  case TY_OP_OR: return TY_BOOL;
  default: return compute;
  }
}

/* ---- the built-in tasks ------------------------------------------------------------------ */

typedef struct builtins {
  const ty_task *op[TY_NOPS];
  const ty_task *reduce[TY_NREDUCE]; /* mean has none: it is sum, then div */
  const ty_task *where, *cast, *copy, *fill, *arange, *linspace, *random, *matmul;
  const ty_task *fused; /* the launches the fusion pass makes (fuse.c, fused_cpu.c) */
} builtins;

/* task_data of the op tasks: a pointer into this table (must outlive runtimes) */
static const int op_codes[TY_NOPS] = {
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26,
};
_Static_assert(TY_NOPS == 27, "op_codes lists every op");

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
 * axis allows the 4-ULP vector functions (see pass_fastmath) */
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
  builtins *b = ty__calloc(1, sizeof *b);
  if (!b) return ty__fail(rt, TY_ENOMEM, "out of memory registering the built-in tasks");
  rt->builtins = b;
  ty_status st = TY_OK;
  for (int op = 0; op < TY_NOPS && !st; op++)
    st = reg(rt, op_names[op], ew_variant, &op_codes[op], TY_TASK_POINTWISE, &b->op[op]);
  for (int r = 0; r < TY_NREDUCE && !st; r++) {
    if (r == TY_RED_MEAN) continue;
    bool arg = r == TY_RED_ARGMIN || r == TY_RED_ARGMAX;
    st = reg(rt, reduce_names[r], arg ? ty__argreduce_variant : ty__reduce_variant, &op_codes[r], 0,
             &b->reduce[r]);
  }
  if (!st) st = reg(rt, "where", where_variant, NULL, TY_TASK_POINTWISE, &b->where);
  if (!st) st = reg(rt, "cast", cast_variant, NULL, TY_TASK_POINTWISE, &b->cast);
  if (!st) st = reg(rt, "copy", cast_variant, NULL, TY_TASK_POINTWISE, &b->copy);
  if (!st) st = reg(rt, "fill", fill_variant, NULL, TY_TASK_POINTWISE, &b->fill);
  if (!st) st = reg(rt, "arange", ty__arange_variant, NULL, TY_TASK_POINTWISE, &b->arange);
  if (!st) st = reg(rt, "linspace", ty__linspace_variant, NULL, TY_TASK_POINTWISE, &b->linspace);
  if (!st) st = reg(rt, "random", ty__random_variant, NULL, TY_TASK_POINTWISE, &b->random);
  if (!st) st = reg(rt, "matmul", ty__matmul_variant, NULL, 0, &b->matmul);
  if (!st) {
    /* the fused launches' task: its data is fusion's state (compiled kernels, scratch) */
    ty_task_desc d = {.name = "fused", .cpu = ty__fused_variant, .data = ty__fusion_new(),
                      .release = ty__fusion_free};
    st = ty_task_register(rt, &d, &b->fused);
    if (st) ty__fusion_free((void *)d.data);
  }
  return st;
}

void ty__free_builtins(ty_runtime *rt) {
  if (!rt) return;
  free((void *)rt->builtins);
  rt->builtins = NULL;
}

static const builtins *tasks(const ty_runtime *rt) { return rt->builtins; }

const ty_task *ty__fused_task(const ty_runtime *rt) { return tasks(rt)->fused; }

bool ty__fuse_builtin(const ty_runtime *rt, const ty_pending *l, ty__fsub *o, ty__fillval *fill) {
  const builtins *b = tasks(rt);
  const ty_task *t = l->task;
  memset(o, 0, sizeof *o);
  if (l->pol.p.fastmath) o->flags |= TY__FS_FASTMATH;
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
  if (t->cpu == ty__matmul_variant && l->nargs == 3 && l->ndim == 2)
    return ty_dtype_is_float(l->args[0].store->dtype) ? 2 : 0;
  return 0;
}

/* ---- helpers --------------------------------------------------------------------------- */

static ty_status check_store(ty_runtime *rt, const char *fn, const char *what, const ty_store *s) {
  if (!s) return ty__fail(rt, TY_EINVAL, "%s: %s is NULL", fn, what);
  if (s->rt != rt) return ty__fail(rt, TY_EINVAL, "%s: %s belongs to another runtime", fn, what);
  return TY_OK;
}

static ty_status check_dtype(ty_runtime *rt, const char *fn, ty_dtype t) {
  if ((unsigned)t >= TY_NDTYPES)
    return ty__fail(rt, TY_EDTYPE, "%s: unknown dtype %d", fn, (int)t);
  return TY_OK;
}

static ty_status check_runtime(ty_runtime *rt, const char *fn) {
  if (!rt) return TY_EINVAL;
  if (rt->destroyed) return ty__fail(rt, TY_EINVAL, "%s: the runtime was destroyed", fn);
  return TY_OK;
}

static ty_status launch(ty_runtime *rt, const ty_task *task, int ndim, const int64_t *domain,
                        int nargs, const ty_arg *args, const void *scalars, size_t nbytes,
                        uint32_t nosplit) {
  ty_launch_desc d = {
      .task = task,
      .ndim = ndim,
      .domain = domain,
      .nargs = nargs,
      .args = args,
      .scalars = scalars,
      .scalar_bytes = nbytes,
      .max_pieces = 0,
      .nosplit = nosplit,
  };
  return ty_launch(rt, &d);
}

static ty_arg arg_in(ty_store *s) {
  return (ty_arg){.store = s, .priv = TY_PRIV_IN, .redop = TY_REDOP_NONE, .proj = TY_PROJ_ALIGNED};
}
static ty_arg arg_out(ty_store *s, ty_privilege p) {
  return (ty_arg){.store = s, .priv = p, .redop = TY_REDOP_NONE, .proj = TY_PROJ_ALIGNED};
}

/* OUT when `s` covers all of its storage; INOUT for a partial view, so that the
 * elements it does not write keep their value (a never-written storage is
 * then allocated zeroed rather than left uninitialised). */
static ty_privilege write_priv(const ty_store *s) {
  size_t bytes = (size_t)s->size * ty_dtype_size(s->dtype);
  return ty_store_is_contiguous(s) && bytes == s->storage->nbytes ? TY_PRIV_OUT : TY_PRIV_INOUT;
}

/* `s` viewed with `shape` (numpy broadcasting); `s` itself when it already has it. */
static ty_status broadcast_view(ty_runtime *rt, ty_store *s, int nd, const int64_t *shape,
                                ty_store **out) {
  bool same = s->ndim == nd;
  for (int d = 0; same && d < nd; d++) same = s->shape[d] == shape[d];
  if (same) {
    ty_store_retain(s);
    *out = s;
    return TY_OK;
  }
  if (s->ndim > 0) return ty_store_broadcast(rt, s, nd, shape, out);
  /* a number next to a store (x * 0.5): the view made for the last shape
   * serves again, as a loop asks for the same one each time */
  ty_store *v = s->bview;
  same = v && v->ndim == nd;
  for (int d = 0; same && d < nd; d++) same = v->shape[d] == shape[d];
  if (!same) {
    ty_status st = ty_store_broadcast(rt, s, nd, shape, &v);
    if (st) return st;
    ty_store_release(s->bview);
    s->bview = v;
  }
  ty_store_retain(v);
  *out = v;
  return TY_OK;
}

/* dst[...] = src (broadcast, converted to dst's dtype), one launch; src must
 * not share storage with dst (callers copy first). */
static ty_status launch_copy(ty_runtime *rt, ty_store *dst, ty_store *src) {
  if (dst->size == 0) return TY_OK;
  ty_store *view = NULL;
  ty_status st = broadcast_view(rt, src, dst->ndim, dst->shape, &view);
  if (st) return st;
  const builtins *b = tasks(rt);
  ty_arg args[2] = {arg_out(dst, write_priv(dst)), arg_in(view)};
  st = launch(rt, dst->dtype == src->dtype ? b->copy : b->cast, dst->ndim, dst->shape, 2, args,
              NULL, 0, 0);
  ty_store_release(view);
  return st;
}

/* A new store of dtype t with x's shape and values (a launch). */
static ty_status new_copy(ty_runtime *rt, ty_store *x, ty_dtype t, ty_store **out) {
  ty_store *y = NULL;
  ty_status st = ty__store_new(rt, t, x->ndim, x->shape, &y);
  if (!st) st = launch_copy(rt, y, x);
  if (st) {
    ty_store_release(y);
    return st;
  }
  *out = y;
  return TY_OK;
}

/* x in dtype t: x itself (retained) or a converted copy. */
static ty_status cast_to(ty_runtime *rt, ty_store *x, ty_dtype t, ty_store **out) {
  if (x->dtype == t) {
    ty_store_retain(x);
    *out = x;
    return TY_OK;
  }
  return new_copy(rt, x, t, out);
}

static ty_status launch_fill(ty_runtime *rt, ty_store *dst, ty__fillval v) {
  if (dst->size == 0) return TY_OK;
  ty_arg a = arg_out(dst, write_priv(dst));
  return launch(rt, tasks(rt)->fill, dst->ndim, dst->shape, 1, &a, &v, sizeof v, 0);
}

/* v converted to dtype t by the cast rules (kernels_cast.c) */
static ty__fillval fill_value(ty_dtype t, double v) {
  ty__fillval f = {v, 0};
  switch (t) {
  case TY_I64: f.i = ty__f64_to_i64_sat(v); break;
  case TY_I32: f.i = ty__f64_to_i32_sat(v); break;
  case TY_U8: f.i = ty__f64_to_u8_sat(v); break;
  case TY_BOOL: f.i = v != 0; break;
  default: break;
  }
  return f;
}

/* The fastmath axis is resolved when a launch is appended (ty_launch); an op
 * kernel learns it through its scalar bytes (a non-zero int64), so launches
 * that do not fuse honour it too. The launch just appended is the window's
 * last. */
static void pass_fastmath(ty_runtime *rt, const ty_task *task) {
  ty_pending *l = rt->nwindow > 0 ? rt->window[rt->nwindow - 1] : NULL;
  if (!l || l->task != task || l->seq + 1 != rt->next_launch_seq || !l->pol.p.fastmath ||
      l->scalar_bytes != 0)
    return;
  const int64_t one = 1;
  memcpy(l->scalars, &one, sizeof one);
  l->scalar_bytes = sizeof one;
}

/* Element-wise launch: a new output of dtype ot and shape (nd, shape); input i
 * converted to in_t[i] and broadcast. */
static ty_status ew_launch(ty_runtime *rt, const ty_task *task, ty_dtype ot, int nd,
                           const int64_t *shape, int nin, ty_store *const *ins,
                           const ty_dtype *in_t, ty_store **out) {
  ty_store *res = NULL;
  ty_status st = ty__store_new(rt, ot, nd, shape, &res);
  if (st) return st;
  if (res->size > 0) {
    ty_store *conv[3] = {NULL, NULL, NULL}, *views[3] = {NULL, NULL, NULL};
    ty_arg args[4];
    args[0] = arg_out(res, TY_PRIV_OUT);
    for (int i = 0; i < nin && !st; i++) {
      st = cast_to(rt, ins[i], in_t[i], &conv[i]);
      if (!st) st = broadcast_view(rt, conv[i], nd, shape, &views[i]);
      if (!st) args[i + 1] = arg_in(views[i]);
    }
    if (!st) st = launch(rt, task, nd, shape, nin + 1, args, NULL, 0, 0);
    if (!st) pass_fastmath(rt, task);
    for (int i = 0; i < nin; i++) {
      ty_store_release(views[i]);
      ty_store_release(conv[i]);
    }
    if (st) {
      ty_store_release(res);
      return st;
    }
  }
  *out = res;
  return TY_OK;
}

static ty_status no_broadcast(ty_runtime *rt, const char *fn, const ty_store *a,
                              const ty_store *b) {
  char sa[256], sb[256];
  ty__shape_str(a->ndim, a->shape, sa, sizeof sa);
  ty__shape_str(b->ndim, b->shape, sb, sizeof sb);
  return ty__fail(rt, TY_ESHAPE, "%s: shapes %s and %s do not broadcast", fn, sa, sb);
}

/* ---- element-wise ------------------------------------------------------------------------ */

ty_status ty_unary(ty_runtime *rt, ty_op op, ty_store *a, ty_store **out) {
  ty_status st = check_runtime(rt, "ty_unary");
  if (st) return st;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_unary: out is NULL");
  *out = NULL;
  if ((unsigned)op >= TY_OP_FIRST_BINARY)
    return ty__fail(rt, TY_EINVAL, "ty_unary: op %d (%s) is not a unary operation", (int)op,
                    ty_op_name(op));
  if ((st = check_store(rt, "ty_unary", "a", a))) return st;
  const ty_dtype ct = ty__unary_compute_dtype(op, a->dtype);
  return ew_launch(rt, tasks(rt)->op[op], ty__op_out_dtype(op, ct), a->ndim, a->shape, 1, &a,
                   &ct, out);
}

ty_status ty_binary(ty_runtime *rt, ty_op op, ty_store *a, ty_store *b, ty_store **out) {
  ty_status st = check_runtime(rt, "ty_binary");
  if (st) return st;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_binary: out is NULL");
  *out = NULL;
  if ((unsigned)op >= TY_NOPS || op < TY_OP_FIRST_BINARY)
    return ty__fail(rt, TY_EINVAL, "ty_binary: op %d (%s) is not a binary operation", (int)op,
                    ty_op_name(op));
  if ((st = check_store(rt, "ty_binary", "a", a))) return st;
  if ((st = check_store(rt, "ty_binary", "b", b))) return st;
  int nd;
  int64_t shape[TY_MAX_RANK];
  if (ty_broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &nd, shape))
    return no_broadcast(rt, "ty_binary", a, b);
  const ty_dtype ct = ty__binary_compute_dtype(op, a->dtype, b->dtype);
  ty_store *ins[2] = {a, b};
  const ty_dtype in_t[2] = {ct, ct};
  return ew_launch(rt, tasks(rt)->op[op], ty__op_out_dtype(op, ct), nd, shape, 2, ins, in_t, out);
}

ty_status ty_where(ty_runtime *rt, ty_store *cond, ty_store *a, ty_store *b, ty_store **out) {
  ty_status st = check_runtime(rt, "ty_where");
  if (st) return st;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_where: out is NULL");
  *out = NULL;
  if ((st = check_store(rt, "ty_where", "cond", cond))) return st;
  if ((st = check_store(rt, "ty_where", "a", a))) return st;
  if ((st = check_store(rt, "ty_where", "b", b))) return st;
  int nd1, nd;
  int64_t s1[TY_MAX_RANK], shape[TY_MAX_RANK];
  if (ty_broadcast_shapes(cond->ndim, cond->shape, a->ndim, a->shape, &nd1, s1))
    return no_broadcast(rt, "ty_where", cond, a);
  if (ty_broadcast_shapes(nd1, s1, b->ndim, b->shape, &nd, shape)) {
    char sa[256], sb[256], sc[256];
    ty__shape_str(cond->ndim, cond->shape, sc, sizeof sc);
    ty__shape_str(a->ndim, a->shape, sa, sizeof sa);
    ty__shape_str(b->ndim, b->shape, sb, sizeof sb);
    return ty__fail(rt, TY_ESHAPE, "ty_where: shapes %s, %s and %s do not broadcast", sc, sa, sb);
  }
  const ty_dtype ot = ty_dtype_promote(a->dtype, b->dtype);
  ty_store *ins[3] = {cond, a, b};
  const ty_dtype in_t[3] = {TY_BOOL, ot, ot};
  return ew_launch(rt, tasks(rt)->where, ot, nd, shape, 3, ins, in_t, out);
}

ty_status ty_cast(ty_runtime *rt, ty_store *a, ty_dtype t, ty_store **out) {
  ty_status st = check_runtime(rt, "ty_cast");
  if (st) return st;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_cast: out is NULL");
  *out = NULL;
  if ((st = check_store(rt, "ty_cast", "a", a))) return st;
  if ((st = check_dtype(rt, "ty_cast", t))) return st;
  return new_copy(rt, a, t, out);
}

/* ---- writes into existing stores ------------------------------------------------------------- */

ty_status ty_fill(ty_runtime *rt, ty_store *dst, double v) {
  ty_status st = check_runtime(rt, "ty_fill");
  if (st) return st;
  if ((st = check_store(rt, "ty_fill", "dst", dst))) return st;
  return launch_fill(rt, dst, fill_value(dst->dtype, v));
}

ty_status ty_copy(ty_runtime *rt, ty_store *dst, ty_store *src) {
  ty_status st = check_runtime(rt, "ty_copy");
  if (st) return st;
  if ((st = check_store(rt, "ty_copy", "dst", dst))) return st;
  if ((st = check_store(rt, "ty_copy", "src", src))) return st;
  int nd;
  int64_t shape[TY_MAX_RANK];
  bool ok = ty_broadcast_shapes(src->ndim, src->shape, dst->ndim, dst->shape, &nd, shape) == TY_OK &&
            nd == dst->ndim;
  for (int d = 0; ok && d < nd; d++) ok = shape[d] == dst->shape[d];
  if (!ok) {
    char ss[256], sd[256];
    ty__shape_str(src->ndim, src->shape, ss, sizeof ss);
    ty__shape_str(dst->ndim, dst->shape, sd, sizeof sd);
    return ty__fail(rt, TY_ESHAPE, "ty_copy: shape %s does not broadcast to %s", ss, sd);
  }
  if (dst->size == 0) return TY_OK;
  if (!ty_store_same_storage(dst, src)) return launch_copy(rt, dst, src);
  /* overlapping (or possibly overlapping) views: through a temporary */
  ty_store *tmp = NULL;
  st = new_copy(rt, src, dst->dtype, &tmp);
  if (!st) st = launch_copy(rt, dst, tmp);
  ty_store_release(tmp);
  return st;
}

/* ---- creation ------------------------------------------------------------------------------ */

ty_status ty_full(ty_runtime *rt, ty_dtype t, int ndim, const int64_t *shape, double v,
                  ty_store **out) {
  ty_status st = check_runtime(rt, "ty_full");
  if (st) return st;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_full: out is NULL");
  *out = NULL;
  if ((st = check_dtype(rt, "ty_full", t))) return st;
  ty_store *s = NULL;
  if ((st = ty__store_new(rt, t, ndim, shape, &s))) return st;
  if ((st = launch_fill(rt, s, fill_value(t, v)))) {
    ty_store_release(s);
    return st;
  }
  *out = s;
  return TY_OK;
}

static bool is_int_dtype(ty_dtype t) { return t == TY_I64 || t == TY_I32 || t == TY_U8; }

/* |v| < 2^62 and integral: exact in int64, with room for the products of
 * start + i*step to wrap rather than overflow the double test itself */
static bool integral(double v) { return v == floor(v) && fabs(v) < 4611686018427387904.0; }

ty_status ty_arange(ty_runtime *rt, ty_dtype t, double start, double step, int64_t n,
                    ty_store **out) {
  ty_status st = check_runtime(rt, "ty_arange");
  if (st) return st;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_arange: out is NULL");
  *out = NULL;
  if ((st = check_dtype(rt, "ty_arange", t))) return st;
  if (n < 0) return ty__fail(rt, TY_EINVAL, "ty_arange: n must be non-negative, got %lld", (long long)n);
  ty_store *s = NULL;
  if ((st = ty__store_new(rt, t, 1, &n, &s))) return st;
  if (n > 0) {
    ty__arange_args a = {.start = start, .step = step, .istart = 0, .istep = 0, .exact = 0};
    if (is_int_dtype(t) && integral(start) && integral(step)) {
      a.exact = 1;
      a.istart = (int64_t)start;
      a.istep = (int64_t)step;
    }
    ty_arg arg = arg_out(s, TY_PRIV_OUT);
    st = launch(rt, tasks(rt)->arange, 1, &n, 1, &arg, &a, sizeof a, 0);
    if (st) {
      ty_store_release(s);
      return st;
    }
  }
  *out = s;
  return TY_OK;
}

ty_status ty_linspace(ty_runtime *rt, ty_dtype t, double a, double b, int64_t n, ty_store **out) {
  ty_status st = check_runtime(rt, "ty_linspace");
  if (st) return st;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_linspace: out is NULL");
  *out = NULL;
  if ((st = check_dtype(rt, "ty_linspace", t))) return st;
  if (n < 0)
    return ty__fail(rt, TY_EINVAL, "ty_linspace: n must be non-negative, got %lld", (long long)n);
  ty_store *s = NULL;
  if ((st = ty__store_new(rt, t, 1, &n, &s))) return st;
  if (n > 0) {
    ty__linspace_args la = {.a = a, .b = b, .step = n > 1 ? (b - a) / (double)(n - 1) : 0, .n = n};
    ty_arg arg = arg_out(s, TY_PRIV_OUT);
    st = launch(rt, tasks(rt)->linspace, 1, &n, 1, &arg, &la, sizeof la, 0);
    if (st) {
      ty_store_release(s);
      return st;
    }
  }
  *out = s;
  return TY_OK;
}

/* Float dtypes: uniform [0, 1). Integer dtypes: uniform over all their values
 * (random bits); bool: a fair coin. Each call uses the next stream of the
 * runtime's seed, so ty_seed(rt, s) followed by the same calls gives the same
 * numbers whatever the number of processors. */
ty_status ty_random(ty_runtime *rt, ty_dtype t, int ndim, const int64_t *shape, ty_store **out) {
  ty_status st = check_runtime(rt, "ty_random");
  if (st) return st;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_random: out is NULL");
  *out = NULL;
  if ((st = check_dtype(rt, "ty_random", t))) return st;
  ty_store *s = NULL;
  if ((st = ty__store_new(rt, t, ndim, shape, &s))) return st;
  /* the stream is used up only by a call that succeeds: a retry after an
   * error (out of memory) draws the numbers the first try would have */
  ty__random_args a = {.seed = rt->seed, .stream = rt->random_calls};
  if (s->size > 0) {
    ty_arg arg = arg_out(s, TY_PRIV_OUT);
    st = launch(rt, tasks(rt)->random, ndim, s->shape, 1, &arg, &a, sizeof a, 0);
    if (st) {
      ty_store_release(s);
      return st;
    }
  }
  rt->random_calls++;
  *out = s;
  return TY_OK;
}

/* ---- reductions ------------------------------------------------------------------------------ */

/* Kept length from which an axis reduction owns its outputs (OUT). */
#define OWN_MIN_KEPT 16

/* The output broadcast back to the input's shape: stride 0 on reduced dims. */
static ty_status reduced_view(ty_runtime *rt, ty_store *res, const ty_store *in, int axis,
                              ty_store **out) {
  int64_t strides[TY_MAX_RANK];
  int od = 0;
  for (int d = 0; d < in->ndim; d++)
    strides[d] = (axis < 0 || d == axis) ? 0 : res->strides[od++];
  return ty__store_view(rt, res, in->ndim, in->shape, strides, res->offset, out);
}

static ty_status reduce_basic(ty_runtime *rt, ty_reduce_op op, ty_store *a, int axis,
                              ty_store *res) {
  const ty__redkind kind = op == TY_RED_SUM    ? TY__RSUM
                           : op == TY_RED_PROD ? TY__RPROD
                           : op == TY_RED_MIN  ? TY__RMIN
                                               : TY__RMAX;
  if (!ty__reduce_loops[kind][a->dtype][res->dtype])
    return ty__fail(rt, TY_EDTYPE, "ty_reduce: %s from %s to %s is not supported",
                    reduce_names[op], ty_dtype_name(a->dtype), ty_dtype_name(res->dtype));
  const ty__fillval id = ty__reduce_identity(kind, res->dtype);
  if (a->size == 0) return launch_fill(rt, res, id); /* sum 0, prod 1 */

  /* OUT when a kept dim is long enough to give many processors a piece. A
   * fixed length, not the processor count: OUT and REDUCE add in different
   * orders, and a float sum must not depend on the processors (kernels.h) */
  bool own = false;
  for (int d = 0; axis >= 0 && d < a->ndim; d++)
    if (d != axis && a->shape[d] >= OWN_MIN_KEPT) own = true;
  ty_status st = TY_OK;
  if (!own) st = launch_fill(rt, res, id);
  ty_store *view = NULL;
  if (!st) st = reduced_view(rt, res, a, axis, &view);
  if (st) return st;
  static const ty_redop redops[TY__NREDKIND] = {
      [TY__RSUM] = TY_REDOP_SUM, [TY__RPROD] = TY_REDOP_PROD,
      [TY__RMIN] = TY_REDOP_MIN, [TY__RMAX] = TY_REDOP_MAX};
  ty_arg args[2] = {arg_out(view, own ? TY_PRIV_OUT : TY_PRIV_REDUCE), arg_in(a)};
  if (!own) args[0].redop = redops[kind];
  ty__reduce_args ra = {.kind = kind, .init_out = own, .axis = axis};
  st = launch(rt, tasks(rt)->reduce[op], a->ndim, a->shape, 2, args, &ra, sizeof ra, 0);
  ty_store_release(view);
  return st;
}

static ty_status reduce_arg(ty_runtime *rt, ty_reduce_op op, ty_store *a, int axis,
                            ty_store *res) {
  ty_status st = TY_OK;
  ty_store *src = NULL, *flat = NULL, *view = NULL;
  if (axis < 0 && a->ndim == 0) /* the index of a scalar's only element */
    return launch_fill(rt, res, (ty__fillval){0, 0});
  if (axis < 0) {
    /* over everything: the C-order index, so scan a flat contiguous copy */
    if (ty_store_is_contiguous(a)) {
      ty_store_retain(a);
      src = a;
    } else {
      st = new_copy(rt, a, a->dtype, &src);
    }
    if (!st) st = ty_store_reshape(rt, src, 1, &a->size, &flat);
    axis = 0;
  } else {
    ty_store_retain(a);
    flat = a;
  }
  if (!st) st = reduced_view(rt, res, flat, axis, &view);
  if (!st) {
    ty_arg args[2] = {arg_out(view, TY_PRIV_OUT), arg_in(flat)};
    ty__reduce_args ra = {.kind = op, .init_out = 0, .axis = axis};
    st = launch(rt, tasks(rt)->reduce[op], flat->ndim, flat->shape, 2, args, &ra, sizeof ra,
                1u << axis);
  }
  ty_store_release(view);
  ty_store_release(flat);
  ty_store_release(src);
  return st;
}

ty_status ty_reduce(ty_runtime *rt, ty_reduce_op op, ty_store *a, int axis, ty_store **out) {
  ty_status st = check_runtime(rt, "ty_reduce");
  if (st) return st;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_reduce: out is NULL");
  *out = NULL;
  if ((unsigned)op >= TY_NREDUCE)
    return ty__fail(rt, TY_EINVAL, "ty_reduce: unknown reduction %d", (int)op);
  if ((st = check_store(rt, "ty_reduce", "a", a))) return st;
  if (axis < -1 || axis >= a->ndim)
    return ty__fail(rt, TY_ERANGE, "ty_reduce: axis %d is out of range for a %d-D store", axis,
                    a->ndim);
  const int64_t count = axis < 0 ? a->size : a->shape[axis];
  const bool needs_data = op == TY_RED_MIN || op == TY_RED_MAX || op == TY_RED_ARGMIN ||
                          op == TY_RED_ARGMAX;
  if (needs_data && count == 0) {
    char sh[256];
    ty__shape_str(a->ndim, a->shape, sh, sizeof sh);
    if (axis < 0)
      return ty__fail(rt, TY_EINVAL, "ty_reduce: %s of an empty store (shape %s) is undefined",
                      reduce_names[op], sh);
    return ty__fail(rt, TY_EINVAL, "ty_reduce: %s over axis %d of length 0 (shape %s) is undefined",
                    reduce_names[op], axis, sh);
  }

  int ond = 0;
  int64_t oshape[TY_MAX_RANK];
  for (int d = 0; axis >= 0 && d < a->ndim; d++)
    if (d != axis) oshape[ond++] = a->shape[d];
  const bool is_float = ty_dtype_is_float(a->dtype);
  ty_dtype ot;
  switch (op) {
  case TY_RED_SUM:
  case TY_RED_PROD: ot = is_float ? a->dtype : TY_I64; break;
  case TY_RED_MEAN: ot = is_float ? a->dtype : TY_F64; break;
  case TY_RED_ARGMIN:
  case TY_RED_ARGMAX: ot = TY_I64; break;
  default: ot = a->dtype; break;
  }

  ty_store *res = NULL;
  if ((st = ty__store_new(rt, ot, ond, oshape, &res))) return st;
  if (res->size > 0) {
    if (op == TY_RED_MEAN) {
      /* sum (ints straight into f64), then divide by the count: 0/0 = NaN */
      ty_store *sum = res, *n = NULL, *mean = NULL;
      st = reduce_basic(rt, TY_RED_SUM, a, axis, sum);
      if (!st) st = ty_scalar_f64(rt, ot, (double)count, &n);
      if (!st) st = ty_binary(rt, TY_OP_DIV, sum, n, &mean);
      ty_store_release(n);
      ty_store_release(sum);
      res = mean;
    } else if (op == TY_RED_ARGMIN || op == TY_RED_ARGMAX) {
      st = reduce_arg(rt, op, a, axis, res);
    } else {
      st = reduce_basic(rt, op, a, axis, res);
    }
  }
  if (st) {
    ty_store_release(res);
    return st;
  }
  *out = res;
  return TY_OK;
}

/* ---- matmul ---------------------------------------------------------------------------------- */

/* x (1-D or 2-D, dtype t) as a (rows, cols) view; a 1-D x becomes a row
 * (as_row) or a column. Floats that BLAS cannot take as they are are copied. */
static ty_status matrix_view(ty_runtime *rt, ty_store *x, ty_dtype t, bool as_row,
                             ty_store **out) {
  ty_store *c = NULL, *v = NULL;
  ty_status st = cast_to(rt, x, t, &c);
  if (st) return st;
  int64_t shape[2], strides[2];
  if (c->ndim == 2) {
    shape[0] = c->shape[0], shape[1] = c->shape[1];
    strides[0] = c->strides[0], strides[1] = c->strides[1];
  } else if (as_row) {
    shape[0] = 1, shape[1] = c->shape[0];
    strides[0] = 0, strides[1] = c->strides[0];
  } else {
    shape[0] = c->shape[0], shape[1] = 1;
    strides[0] = c->strides[0], strides[1] = 0;
  }
  bool trans;
  int64_t ld;
  if (ty_dtype_is_float(t) && !ty__blas_layout(shape[0], shape[1], strides[0], strides[1], &trans, &ld)) {
    ty_store *dense = NULL;
    st = new_copy(rt, c, t, &dense);
    ty_store_release(c);
    if (st) return st;
    c = dense; /* contiguous now */
    if (c->ndim == 2) {
      strides[0] = c->strides[0], strides[1] = c->strides[1];
    } else if (as_row) {
      strides[1] = c->strides[0];
    } else {
      strides[0] = c->strides[0];
    }
  }
  st = ty__store_view(rt, c, 2, shape, strides, c->offset, &v);
  ty_store_release(c);
  if (st) return st;
  *out = v;
  return TY_OK;
}

ty_status ty_matmul(ty_runtime *rt, ty_store *a, ty_store *b, ty_store **out) {
  ty_status st = check_runtime(rt, "ty_matmul");
  if (st) return st;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_matmul: out is NULL");
  *out = NULL;
  if ((st = check_store(rt, "ty_matmul", "a", a))) return st;
  if ((st = check_store(rt, "ty_matmul", "b", b))) return st;
  if (a->ndim < 1 || a->ndim > 2 || b->ndim < 1 || b->ndim > 2)
    return ty__fail(rt, TY_ESHAPE, "ty_matmul: operands must be 1-D or 2-D, got %d-D and %d-D",
                    a->ndim, b->ndim);
  const int64_t m = a->ndim == 2 ? a->shape[0] : 1, k = a->shape[a->ndim - 1];
  const int64_t k2 = b->shape[0], n = b->ndim == 2 ? b->shape[1] : 1;
  if (k != k2) {
    char sa[256], sb[256];
    ty__shape_str(a->ndim, a->shape, sa, sizeof sa);
    ty__shape_str(b->ndim, b->shape, sb, sizeof sb);
    return ty__fail(rt, TY_ESHAPE, "ty_matmul: shapes %s and %s do not align (%lld != %lld)", sa,
                    sb, (long long)k, (long long)k2);
  }
  ty_dtype t = ty_dtype_promote(a->dtype, b->dtype);
  /* bool with bool is bool, as numpy's: true where any product is, i.e. the
   * i64 count of true products is non-zero (k < 2^63 cannot overflow it) */
  const bool logical = t == TY_BOOL;
  if (logical) t = TY_I64;

  int ond = 0;
  int64_t oshape[2];
  if (a->ndim == 2) oshape[ond++] = m;
  if (b->ndim == 2) oshape[ond++] = n;
  ty_store *res = NULL;
  if ((st = ty__store_new(rt, logical && (m == 0 || n == 0) ? TY_BOOL : t, ond, oshape, &res)))
    return st;
  if (res->size == 0) {
    *out = res;
    return TY_OK;
  }
  ty_store *A = NULL, *Bm = NULL, *C = NULL;
  st = matrix_view(rt, a, t, true, &A);
  if (!st) st = matrix_view(rt, b, t, false, &Bm);
  if (!st) {
    /* res as (m, n): stride 0 on the extent-1 dims a vector operand dropped */
    const int64_t cshape[2] = {m, n};
    int64_t cstr[2] = {0, 0};
    if (ond == 2) cstr[0] = res->strides[0], cstr[1] = res->strides[1];
    else if (ond == 1 && a->ndim == 2) cstr[0] = res->strides[0];
    else if (ond == 1) cstr[1] = res->strides[0];
    st = ty__store_view(rt, res, 2, cshape, cstr, res->offset, &C);
  }
  if (!st) {
    ty_arg args[3] = {arg_out(C, TY_PRIV_OUT), arg_in(A), arg_in(Bm)};
    args[1].proj = TY_PROJ_WHOLE;
    args[2].proj = TY_PROJ_WHOLE;
    const int64_t domain[2] = {m, n};
    st = launch(rt, tasks(rt)->matmul, 2, domain, 3, args, NULL, 0, 0);
  }
  ty_store_release(A);
  ty_store_release(Bm);
  ty_store_release(C);
  if (!st && logical) {
    ty_store *counts = res;
    res = NULL;
    st = ty_cast(rt, counts, TY_BOOL, &res);
    ty_store_release(counts);
  }
  if (st) {
    ty_store_release(res);
    return st;
  }
  *out = res;
  return TY_OK;
}
