/*
 * ops.c — the built-in operations of tycho.h ("operations (deferred
 * launches)"): argument checks, dtype rules, and the launches that implement
 * them. The tasks they launch are registered by builtins.c.
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
 * The `fastmath` axis reaches the op kernels through their scalar bytes
 * (TY__TASK_FASTMATH_ARG, written when the launch is appended), fused or not.
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
#include "builtins.h"
#include "fused.h"
#include "tycho/random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static ty_status new_copy(ty_runtime *rt, ty_store *x, ty_dtype t, ty_store **out);

/* Arguments of one launch that share bytes of one storage. Pieces run at
 * once and in any order, so a piece may read what another piece of the same
 * launch already wrote: `copy(x[1:-2], x[2:])` would read its own output.
 * Aligned arguments through the same view are safe (a piece reads and writes
 * only its own elements). Otherwise a read-only argument is replaced by a
 * copy made before the launch (numpy's `y[1:] = x[:-1]`), and two written
 * arguments are refused. */
ty_status ty__launch_named(ty_runtime *rt, const char *fn, const char *task, int ndim,
                           const int64_t *dom, int nargs, const ty_arg *args, const void *sc,
                           size_t scb, uint32_t nosplit) {
  const ty_task *t = ty_task_find(rt, task);
  if (!t) return ty__fail(rt, TY_ENOTFOUND, "%s: the %s task is not registered", fn, task);
  ty_launch_desc d = {.task = t, .ndim = ndim, .domain = dom, .nargs = nargs, .args = args,
                      .scalars = sc, .scalar_bytes = scb, .nosplit = nosplit};
  return ty_launch(rt, &d);
}

static ty_status resolve_overlaps(ty_runtime *rt, const ty_launch_desc *d);

ty_status ty_launch(ty_runtime *rt, const ty_launch_desc *d) {
  if (!rt || !d) return TY_EINVAL;
  if (d->nargs < 2 || d->nargs > TY_MAX_ARGS || !d->args || !d->task) return ty__window_append(rt, d);
  /* the common launch shares no storage between a written argument and
   * another one: a few pointer compares, no copy of the arguments */
  const ty_arg *a = d->args;
  for (int i = 0; i < d->nargs; i++)
    for (int j = i + 1; j < d->nargs; j++)
      if (a[i].store && a[j].store && a[i].store->storage == a[j].store->storage &&
          (a[i].priv != TY_PRIV_IN || a[j].priv != TY_PRIV_IN))
        return resolve_overlaps(rt, d);
  return ty__window_append(rt, d);
}

static ty_status resolve_overlaps(ty_runtime *rt, const ty_launch_desc *d) {
  ty_arg args[TY_MAX_ARGS];
  ty_store *copies[TY_MAX_ARGS];
  int ncopies = 0;
  const ty_arg *a = d->args;
  ty_status st = TY_OK;
  for (int i = 0; i < d->nargs && !st; i++) {
    args[i] = a[i];
    if (!a[i].store || a[i].store->rt != rt) return ty__window_append(rt, d); /* it says why */
  }
  for (int i = 0; i < d->nargs && !st; i++)
    for (int j = i + 1; j < d->nargs && !st; j++) {
      ty_store *x = a[i].store, *y = a[j].store;
      bool wx = a[i].priv != TY_PRIV_IN, wy = a[j].priv != TY_PRIV_IN;
      if (x->storage != y->storage || (!wx && !wy) || !ty__store_overlap(x, y)) continue;
      if (a[i].proj == TY_PROJ_ALIGNED && a[j].proj == TY_PROJ_ALIGNED && ty__same_view(x, y))
        continue;
      if (wx && wy)
        st = ty__fail(rt, TY_EINVAL,
                      "ty_launch(%s): store arguments %d and %d are written and overlap in memory "
                      "through different views: pass separate stores", d->task->name, i + 1, j + 1);
      else {
        int r = wx ? j : i;
        if (args[r].store != a[r].store) continue; /* copied already */
        st = new_copy(rt, a[r].store, a[r].store->dtype, &copies[ncopies]);
        if (!st) args[r].store = copies[ncopies++];
      }
    }
  if (!st) {
    if (ncopies == 0) return ty__window_append(rt, d);
    ty_launch_desc c = *d;
    c.args = args;
    st = ty__window_append(rt, &c);
  }
  for (int k = 0; k < ncopies; k++) ty__store_release(copies[k]);
  return st;
}

static const ty__builtins *tasks(const ty_runtime *rt) { return rt->builtins; }

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
    ty__store_retain(s);
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
    ty__store_release(s->bview);
    s->bview = v;
  }
  ty__store_retain(v);
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
  const ty__builtins *b = tasks(rt);
  ty_arg args[2] = {arg_out(dst, write_priv(dst)), arg_in(view)};
  st = launch(rt, dst->dtype == src->dtype ? b->copy : b->cast, dst->ndim, dst->shape, 2, args,
              NULL, 0, 0);
  ty__store_release(view);
  return st;
}

/* A new store of dtype t with x's shape and values (a launch). */
static ty_status new_copy(ty_runtime *rt, ty_store *x, ty_dtype t, ty_store **out) {
  ty_store *y = NULL;
  ty_status st = ty__store_new(rt, t, x->ndim, x->shape, &y);
  if (!st) st = launch_copy(rt, y, x);
  if (st) {
    ty__store_release(y);
    return st;
  }
  *out = y;
  return TY_OK;
}

/* x in dtype t: x itself (retained) or a converted copy. */
static ty_status cast_to(ty_runtime *rt, ty_store *x, ty_dtype t, ty_store **out) {
  if (x->dtype == t) {
    ty__store_retain(x);
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
  case TY_I8: f.i = ty__f64_to_i8_sat(v); break;
  case TY_I16: f.i = ty__f64_to_i16_sat(v); break;
  case TY_U16: f.i = ty__f64_to_u16_sat(v); break;
  case TY_U32: f.i = ty__f64_to_u32_sat(v); break;
  case TY_U64: f.i = (int64_t)ty__f64_to_u64_sat(v); break; /* the bits */
  default: break;
  }
  return f;
}

/* Element-wise launch: a new output of dtype ot and shape (nd, shape); input i
 * converted to in_t[i] and broadcast. In line in its three callers (the call
 * and its register saves were ~25 instructions of a small op). */
__attribute__((always_inline)) static inline ty_status
ew_launch(ty_runtime *rt, const ty_task *task, ty_dtype ot, int nd, const int64_t *shape, int nin,
          ty_store *const *ins, const ty_dtype *in_t, ty_store **out) {
  ty_store *res = NULL;
  ty_status st = ty__store_new(rt, ot, nd, shape, &res);
  if (st) return st;
  if (res->size > 0) {
    ty_store *conv[3] = {NULL, NULL, NULL}, *views[3] = {NULL, NULL, NULL};
    ty_arg args[4];
    args[0] = arg_out(res, TY_PRIV_OUT);
    for (int i = 0; i < nin && !st; i++) {
      /* of its type and the domain's shape: the caller's reference will do */
      bool same = ins[i]->dtype == in_t[i] && ins[i]->ndim == nd;
      for (int k = 0; same && k < nd; k++) same = ins[i]->shape[k] == shape[k];
      if (same) {
        args[i + 1] = arg_in(ins[i]);
        continue;
      }
      /* of its type (a number next to a store): viewed as it is, no cast held;
       * the view its 0-d store holds for this shape (broadcast_view) serves
       * without a reference of ours (its store's keeps it until the launch
       * takes its own) */
      ty_store *src = ins[i];
      ty_store *v = src->ndim == 0 && src->dtype == in_t[i] ? src->bview : NULL;
      same = v && v->ndim == nd;
      for (int k = 0; same && k < nd; k++) same = v->shape[k] == shape[k];
      if (same) {
        args[i + 1] = arg_in(v);
        continue;
      }
      if (src->dtype != in_t[i] && !(st = new_copy(rt, src, in_t[i], &conv[i]))) src = conv[i];
      if (!st) st = broadcast_view(rt, src, nd, shape, &views[i]);
      if (!st) args[i + 1] = arg_in(views[i]);
    }
    /* valid by construction: res is new (nothing else can alias it), the
     * inputs are stores of rt (the callers checked) viewed to the domain */
    if (!st) st = ty__window_append_ew(rt, task, nd, shape, nin + 1, args);
    for (int i = 0; i < nin; i++) {
      ty__store_release(views[i]);
      ty__store_release(conv[i]);
    }
    if (st) {
      ty__store_release(res);
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

/* An op without a kernel for the dtype (bitwise on floats, sign of bool):
 * numpy's TypeError, said before anything is launched. */
static ty_status no_loop(ty_runtime *rt, ty_op op, ty_dtype t) {
  const bool floats = ty__unary_loops[op][TY_F64] || ty__binary_loops[op][TY_F64];
  return ty__fail(rt, TY_EDTYPE, "%s is not supported for dtype %s (it takes %s only, as numpy's)",
                  ty_op_name(op), ty_dtype_name(t),
                  floats ? "numeric stores" : "integer and bool stores");
}

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
  if (!ty__unary_loops[op][ct]) return no_loop(rt, op, a->dtype);
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
  int64_t common[TY_MAX_RANK];
  /* The common cases skip the general rule (~40 instructions an op): a 0-d
   * operand (a number next to a store) or two operands of one shape take
   * the other's, or the common, shape; the domain is then that operand's
   * shape itself (the caller holds it; no copy, ~20 instructions). */
  const ty_store *dom = b->ndim == 0 ? a : a->ndim == 0 ? b : NULL;
  if (!dom && a->ndim == b->ndim &&
      memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) == 0)
    dom = a;
  const int64_t *shape = common;
  if (dom) {
    nd = dom->ndim;
    shape = dom->shape;
  } else if (ty_broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &nd, common)) {
    return no_broadcast(rt, "ty_binary", a, b);
  }
  const ty_dtype ct = ty__binary_compute_dtype(op, a->dtype, b->dtype);
  if (!ty__binary_loops[op][ct]) return no_loop(rt, op, ct);
  ty_store *ins[2] = {a, b};
  const ty_dtype in_t[2] = {ct, ct};
  st = ew_launch(rt, tasks(rt)->op[op], ty__op_out_dtype(op, ct), nd, shape, 2, ins, in_t, out);
  /* labels - 1 keeps known bounds (range.c; both known, else nothing) */
  if (!st && a->storage->has_range && b->storage->has_range) ty__range_binary(op, a, b, *out);
  return st;
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
  st = new_copy(rt, a, t, out);
  if (!st) ty__range_copy(a, *out);
  return st;
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
  ty__store_release(tmp);
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
    ty__store_release(s);
    return st;
  }
  *out = s;
  return TY_OK;
}

static bool is_int_dtype(ty_dtype t) { return ty_dtype_is_int(t); }

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
      ty__store_release(s);
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
      ty__store_release(s);
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
static ty_status random_draw(ty_runtime *rt, const char *fn, ty_dtype t, int ndim,
                             const int64_t *shape, const ty_random_spec *spec, ty_random_gen *gen,
                             ty_store **out);
ty_status ty_random(ty_runtime *rt, ty_dtype t, int ndim, const int64_t *shape, ty_store **out) {
  const ty_random_spec bits = {.dist = TY_RANDOM_BITS};
  return random_draw(rt, "ty_random", t, ndim, shape, &bits, NULL, out);
}

/* The parameter checks of ty_random_draw (tycho/random.h); the kernels
 * (kernels_fill.c, cuda/fill.cu) trust what passes. */
static ty_status random_check(ty_runtime *rt, const char *fn, ty_dtype t, const ty_random_spec *sp,
                              ty__random_args *a) {
  switch (sp->dist) {
  case TY_RANDOM_BITS: return TY_OK;
  case TY_RANDOM_UNIFORM:
  case TY_RANDOM_NORMAL:
  case TY_RANDOM_EXPONENTIAL:
    if (!ty_dtype_is_float(t))
      return ty__fail(rt, TY_EDTYPE, "%s: this distribution draws f64 or f32, not %s", fn,
                      ty_dtype_name(t));
    if (!isfinite(sp->a) || (sp->dist != TY_RANDOM_EXPONENTIAL && !isfinite(sp->b)))
      return ty__fail(rt, TY_EINVAL, "%s: the parameters must be finite numbers, got %g and %g", fn,
                      sp->a, sp->b);
    if (sp->dist == TY_RANDOM_UNIFORM && !isfinite(sp->b - sp->a))
      return ty__fail(rt, TY_EINVAL, "%s: the range [%g, %g) is too wide (hi - lo overflows)", fn,
                      sp->a, sp->b);
    if (sp->dist == TY_RANDOM_NORMAL && sp->b < 0)
      return ty__fail(rt, TY_EINVAL, "%s: the standard deviation must be >= 0, got %g", fn, sp->b);
    if (sp->dist == TY_RANDOM_EXPONENTIAL && sp->a < 0)
      return ty__fail(rt, TY_EINVAL, "%s: the scale must be >= 0, got %g", fn, sp->a);
    a->a = sp->a;
    a->b = sp->b;
    return TY_OK;
  case TY_RANDOM_INTEGERS: {
    int64_t lo = 0, hi = 0;
    uint64_t uhi = 0;
    ty_dtype_limits(t, &lo, &uhi);
    hi = uhi > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)uhi; /* u64: bounds are int64 */
    if (!ty_dtype_is_int(t))
      return ty__fail(rt, TY_EDTYPE, "%s: integers draw an integer dtype (i64 ... u8), not %s",
                      fn, ty_dtype_name(t));
    if (sp->lo >= sp->hi)
      return ty__fail(rt, TY_EINVAL, "%s: low (%lld) must be less than high (%lld)", fn,
                      (long long)sp->lo, (long long)sp->hi);
    if (sp->lo < lo || sp->hi - 1 > hi)
      return ty__fail(rt, TY_EINVAL, "%s: [%lld, %lld) is out of range for %s (%lld..%lld)", fn,
                      (long long)sp->lo, (long long)sp->hi, ty_dtype_name(t), (long long)lo,
                      (long long)hi);
    a->lo = sp->lo;
    a->range = (uint64_t)sp->hi - (uint64_t)sp->lo;
    return TY_OK;
  }
  default: return ty__fail(rt, TY_EINVAL, "%s: unknown distribution %d", fn, (int)sp->dist);
  }
}

static ty_status random_draw(ty_runtime *rt, const char *fn, ty_dtype t, int ndim, const int64_t *shape,
                          const ty_random_spec *spec, ty_random_gen *gen, ty_store **out) {
  ty_status st = check_runtime(rt, fn);
  if (st) return st;
  if (!out || !spec) return ty__fail(rt, TY_EINVAL, "%s: out or spec is NULL", fn);
  *out = NULL;
  if ((st = check_dtype(rt, fn, t))) return st;
  ty__random_args a = {.seed = gen ? gen->seed : rt->seed,
                       .stream = gen ? gen->stream : rt->random_calls,
                       .kind = (int64_t)spec->dist};
  if ((st = random_check(rt, fn, t, spec, &a))) return st;
  ty_store *s = NULL;
  if ((st = ty__store_new(rt, t, ndim, shape, &s))) return st;
  /* the stream is used up only by a call that succeeds: a retry after an
   * error (out of memory) draws the numbers the first try would have */
  if (s->size > 0) {
    ty_arg arg = arg_out(s, TY_PRIV_OUT);
    st = launch(rt, tasks(rt)->random, ndim, s->shape, 1, &arg, &a, sizeof a, 0);
    if (st) {
      ty__store_release(s);
      return st;
    }
  }
  if (gen) gen->stream++;
  else rt->random_calls++;
  *out = s;
  return TY_OK;
}

ty_status ty_random_draw(ty_runtime *rt, ty_dtype t, int ndim, const int64_t *shape,
                         const ty_random_spec *spec, ty_random_gen *gen, ty_store **out) {
  return random_draw(rt, "ty_random_draw", t, ndim, shape, spec, gen, out);
}

ty_random_gen ty_random_state(const ty_runtime *rt) {
  ty_random_gen g = {0, 0};
  if (rt) g = (ty_random_gen){rt->seed, rt->random_calls};
  return g;
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

/* A whole reduction of fewer elements than four ordered tiles (CG's dot
 * products at 64 x 64 and 256 x 256) sets its new 0-d output to the
 * identity here, on the calling thread, instead of launching a fill: no
 * launch, no planning for 8 bytes. The output is new, so no launch of the
 * window touches it yet, and the reduction then adds into the same +0 (or
 * 1, or +-inf) the fill would have written: the same bits. Larger ones keep
 * the fill launch: their cost is the elements, and the region cut
 * (plan/regions.c, sum_tail) joins a fill and a sum of 4 tiles or more
 * (REG_MIN_SUM_ELEMS) into the Laplacian's pass. */
#define SMALL_WHOLE_REDUCE (4 * TY__ORDER_CHUNK)

static ty_status identity_now(ty_runtime *rt, ty_store *res, ty__fillval id) {
  ty_status st = ty__storage_ensure(rt, res->storage, false);
  if (st) return st;
  char *base = ty__store_base(res);
  ty__fill_loops[res->dtype](1, &base, (const int64_t[]){0}, &id);
  return TY_OK;
}

static ty_status reduce_basic(ty_runtime *rt, ty_reduce_op op, ty_store *a, int axis,
                              ty_store *res) {
  const ty__redkind kind = op == TY_RED_SUM    ? TY__RSUM
                           : op == TY_RED_PROD ? TY__RPROD
                           : op == TY_RED_MIN  ? TY__RMIN
                                               : TY__RMAX;
  if (!ty__reduce_loops[kind][a->dtype][res->dtype])
    return ty__fail(rt, TY_EDTYPE, "ty_reduce: %s from %s to %s is not supported",
                    ty_reduce_name(op), ty_dtype_name(a->dtype), ty_dtype_name(res->dtype));
  const ty__fillval id = ty__reduce_identity(kind, res->dtype);
  if (a->size == 0) return launch_fill(rt, res, id); /* sum 0, prod 1 */

  /* OUT when a kept dim is long enough to give many processors a piece. A
   * fixed length, not the processor count: OUT and REDUCE add in different
   * orders, and a float sum must not depend on the processors (kernels.h) */
  bool own = false;
  for (int d = 0; axis >= 0 && d < a->ndim; d++)
    if (d != axis && a->shape[d] >= OWN_MIN_KEPT) own = true;
  ty_status st = TY_OK;
  if (!own && axis < 0 && a->size < SMALL_WHOLE_REDUCE) st = identity_now(rt, res, id);
  else if (!own) st = launch_fill(rt, res, id);
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
  ty__store_release(view);
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
      ty__store_retain(a);
      src = a;
    } else {
      st = new_copy(rt, a, a->dtype, &src);
    }
    if (!st) st = ty_store_reshape(rt, src, 1, &a->size, &flat);
    axis = 0;
  } else {
    ty__store_retain(a);
    flat = a;
  }
  if (!st) st = reduced_view(rt, res, flat, axis, &view);
  if (!st) {
    ty_arg args[2] = {arg_out(view, TY_PRIV_OUT), arg_in(flat)};
    ty__reduce_args ra = {.kind = op, .init_out = 0, .axis = axis};
    st = launch(rt, tasks(rt)->reduce[op], flat->ndim, flat->shape, 2, args, &ra, sizeof ra,
                1u << axis);
  }
  ty__store_release(view);
  ty__store_release(flat);
  ty__store_release(src);
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
                      ty_reduce_name(op), sh);
    return ty__fail(rt, TY_EINVAL, "ty_reduce: %s over axis %d of length 0 (shape %s) is undefined",
                    ty_reduce_name(op), axis, sh);
  }

  int ond = 0;
  int64_t oshape[TY_MAX_RANK];
  for (int d = 0; axis >= 0 && d < a->ndim; d++)
    if (d != axis) oshape[ond++] = a->shape[d];
  const bool is_float = ty_dtype_is_float(a->dtype);
  ty_dtype ot;
  switch (op) {
  case TY_RED_SUM:
  case TY_RED_PROD: /* numpy: unsigned dtypes sum into u64, the others into i64 */
    ot = is_float ? a->dtype : ty_dtype_is_unsigned(a->dtype) ? TY_U64 : TY_I64;
    break;
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
      ty__store_release(n);
      ty__store_release(sum);
      res = mean;
    } else if (op == TY_RED_ARGMIN || op == TY_RED_ARGMAX) {
      st = reduce_arg(rt, op, a, axis, res);
      if (!st) ty__range_set(res, 0, count - 1); /* bincount's length without a flush */
    } else {
      st = reduce_basic(rt, op, a, axis, res);
    }
  }
  if (st) {
    ty__store_release(res);
    return st;
  }
  *out = res;
  return TY_OK;
}

/* ---- matmul ---------------------------------------------------------------------------------- */

void ty__matrix_dims(const ty_store *c, bool as_row, int64_t shape[2], int64_t strides[2]) {
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
}

/* x (1-D or 2-D, dtype t) as a (rows, cols) view; a 1-D x becomes a row
 * (as_row) or a column. Floats that BLAS cannot take as they are are copied. */
static ty_status matrix_view(ty_runtime *rt, ty_store *x, ty_dtype t, bool as_row,
                             ty_store **out) {
  ty_store *c = NULL, *v = NULL;
  ty_status st = cast_to(rt, x, t, &c);
  if (st) return st;
  int64_t shape[2], strides[2];
  ty__matrix_dims(c, as_row, shape, strides);
  bool trans;
  int64_t ld;
  if (ty_dtype_is_float(t) && !ty__blas_layout(shape[0], shape[1], strides[0], strides[1], &trans, &ld)) {
    ty_store *dense = NULL;
    st = new_copy(rt, c, t, &dense);
    ty__store_release(c);
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
  ty__store_release(c);
  if (st) return st;
  *out = v;
  return TY_OK;
}

/* The end of a product computed in integers for bool operands (matmul,
 * convolve): the counts become bool, as numpy's logical product; on an
 * error res is released and the error returned. */
ty_status ty__logical_result(ty_runtime *rt, ty_status st, bool logical, ty_store *res, ty_store **out) {
  if (!st && logical) {
    ty_store *counts = res;
    res = NULL;
    st = ty_cast(rt, counts, TY_BOOL, &res);
    ty__store_release(counts);
  }
  if (st) {
    ty__store_release(res);
    return st;
  }
  *out = res;
  return TY_OK;
}

/* C = A B (2-D views) with k cut into c chunks (ty__matmul_ksplit), for a
 * thin output that one row block would leave on one core: chunk j, A's
 * columns and B's rows [j kc, (j + 1) kc) with kc = k / c, is one matrix of a
 * batched "matmul" launch into the partials P (c, m, n); the last r = k - c kc
 * rows, when there are any, a 2-D launch into P's extra matrix c; then C is
 * P's sum over its first axis, in chunk order (an ordered reduction). Every
 * step is fixed by the shape, so the bits are too. An f32 thin sum (X^T z,
 * z^T X: ty__thin_acc_shape) has f64 partials, summed in f64 and converted
 * once: 10M x 32 f32, worst relative error 5.0e-3 -> 5.2e-8. */
static ty_status matmul_ksplit(ty_runtime *rt, ty_store *C, ty_store *A, ty_store *B, int64_t c) {
  const int64_t m = C->shape[0], n = C->shape[1], k = A->shape[1];
  const int64_t kc = k / c, r = k - c * kc;
  const int64_t pshape[3] = {c + (r > 0), m, n};
  const bool wide = C->dtype == TY_F32 && ty__thin_acc_shape(C->dtype, m, n, A->strides[0]);
  ty_store *P = NULL, *S = NULL, *v[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
  ty_status st = ty__store_new(rt, wide ? TY_F64 : C->dtype, 3, pshape, &P);
  if (!st) { /* the chunks: A (c, m, kc), B (c, kc, n), P's first c matrices */
    const int64_t as[3] = {kc * A->strides[1], A->strides[0], A->strides[1]};
    const int64_t bs[3] = {kc * B->strides[0], B->strides[0], B->strides[1]};
    const int64_t ash[3] = {c, m, kc}, bsh[3] = {c, kc, n}, psh[3] = {c, m, n};
    st = ty__store_view(rt, A, 3, ash, as, A->offset, &v[0]);
    if (!st) st = ty__store_view(rt, B, 3, bsh, bs, B->offset, &v[1]);
    if (!st) st = ty__store_view(rt, P, 3, psh, P->strides, P->offset, &v[2]);
  }
  if (!st) {
    ty_arg args[3] = {arg_out(v[2], TY_PRIV_OUT), arg_in(v[0]), arg_in(v[1])};
    args[1].proj = TY_PROJ_WHOLE;
    args[2].proj = TY_PROJ_WHOLE;
    st = launch(rt, tasks(rt)->matmul, 3, v[2]->shape, 3, args, NULL, 0, 0);
  }
  if (!st && r > 0) { /* the remainder: A (m, r), B (r, n) into P[c] */
    const int64_t ash[2] = {m, r}, bsh[2] = {r, n}, psh[2] = {m, n};
    st = ty__store_view(rt, A, 2, ash, A->strides, A->offset + c * kc * A->strides[1], &v[3]);
    if (!st)
      st = ty__store_view(rt, B, 2, bsh, B->strides, B->offset + c * kc * B->strides[0], &v[4]);
    if (!st)
      st = ty__store_view(rt, P, 2, psh, P->strides + 1, P->offset + c * P->strides[0], &v[5]);
    if (!st) {
      ty_arg args[3] = {arg_out(v[5], TY_PRIV_OUT), arg_in(v[3]), arg_in(v[4])};
      args[1].proj = TY_PROJ_WHOLE;
      args[2].proj = TY_PROJ_WHOLE;
      st = launch(rt, tasks(rt)->matmul, 2, psh, 3, args, NULL, 0, 0);
    }
  }
  if (!st && wide) {
    st = ty__store_new(rt, TY_F64, 2, C->shape, &S);
    if (!st) st = reduce_basic(rt, TY_RED_SUM, P, 0, S);
    if (!st) st = launch_copy(rt, C, S);
  } else if (!st) {
    st = reduce_basic(rt, TY_RED_SUM, P, 0, C);
  }
  for (int i = 0; i < 6; i++) ty__store_release(v[i]);
  ty__store_release(P);
  ty__store_release(S);
  return st;
}

ty_status ty_matmul(ty_runtime *rt, ty_store *a, ty_store *b, ty_store **out) {
  ty_status st = check_runtime(rt, "ty_matmul");
  if (st) return st;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_matmul: out is NULL");
  *out = NULL;
  if ((st = check_store(rt, "ty_matmul", "a", a))) return st;
  if ((st = check_store(rt, "ty_matmul", "b", b))) return st;
  if (a->ndim < 1 || b->ndim < 1)
    return ty__fail(rt, TY_ESHAPE, "ty_matmul: operands must be at least 1-D, got %d-D and %d-D",
                    a->ndim, b->ndim);
  if (a->ndim > 2 || b->ndim > 2) return ty__matmul_batched(rt, a, b, out); /* ops_products.c */
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
  if (!logical && ty__matmul_ew_fits(t, k)) { /* a short inner dim: ops_matmul_ew.c */
    st = ty__matmul_ew(rt, a, b, t, res);
    return ty__logical_result(rt, st, false, res, out);
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
  const bool streams = A && ty__thin_acc_shape(t, m, n, A->strides[0]);
  const int64_t chunks = ty_dtype_is_float(t) ? ty__matmul_ksplit(m, n, k, streams) : 1;
  if (!st && chunks > 1) {
    st = matmul_ksplit(rt, C, A, Bm, chunks);
  } else if (!st) {
    ty_arg args[3] = {arg_out(C, TY_PRIV_OUT), arg_in(A), arg_in(Bm)};
    args[1].proj = TY_PROJ_WHOLE;
    args[2].proj = TY_PROJ_WHOLE;
    const int64_t domain[2] = {m, n};
    st = launch(rt, tasks(rt)->matmul, 2, domain, 3, args, NULL, 0, 0);
  }
  ty__store_release(A);
  ty__store_release(Bm);
  ty__store_release(C);
  return ty__logical_result(rt, st, logical, res, out);
}
