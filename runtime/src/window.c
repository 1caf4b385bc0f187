/*
 * window.c — the window of deferred launches, and running it.
 *
 * ty_launch copies a launch description (holding a reference on each store)
 * into the window. A flush runs the window in program order: for each launch
 * it allocates the storage of the stores it touches, picks a partition, runs
 * one point task per piece on the OpenMP workers, and combines reduction
 * privates. Invariants:
 *  - launches run in the order they were appended, so every read-after-write,
 *    write-after-read and write-after-write hazard is honoured;
 *  - pieces of one launch write disjoint elements: an OUT/INOUT argument whose
 *    view has stride 0 on a dim forbids splitting that dim, and REDUCE
 *    arguments write private tiles that are combined after the pieces;
 *  - a launch that fails or is cancelled marks the storage it writes
 *    "cancelled"; launches reading cancelled storage are skipped (and cancel
 *    their own outputs), and reading it from the host is an error. The rest of
 *    the window still runs.
 */
#include "internal.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Smallest piece worth a worker: 64 KiB of the largest argument. A point task
 * costs a few microseconds to dispatch through OpenMP; 64 KiB of streaming
 * f64 work takes ~10 us on one core, so smaller pieces lose to the overhead. */
#define TY_MIN_CHUNK ((int64_t)64 << 10)

static void launch_release(ty_pending *l) {
  for (int i = 0; i < l->nargs; i++) ty_store_release(l->args[i].store);
  free(l);
}

void ty__window_drop(ty_runtime *rt) {
  for (int i = 0; i < rt->nwindow; i++) launch_release(rt->window[i]);
  rt->nwindow = 0;
}

static bool writes(ty_privilege p) { return p != TY_PRIV_IN; }

ty_status ty_launch(ty_runtime *rt, const ty_launch_desc *d) {
  if (!rt || !d) return TY_EINVAL;
  if (rt->destroyed) return ty__fail(rt, TY_EINVAL, "ty_launch: the runtime was destroyed");
  if (!d->task) return ty__fail(rt, TY_EINVAL, "ty_launch: no task");
  const char *name = d->task->name;
  if (d->ndim < 0 || d->ndim > TY_MAX_RANK)
    return ty__fail(rt, TY_ELIMIT, "ty_launch(%s): domain rank %d is out of range 0..%d", name,
                    d->ndim, TY_MAX_RANK);
  for (int k = 0; k < d->ndim; k++)
    if (d->domain[k] < 0)
      return ty__fail(rt, TY_EINVAL, "ty_launch(%s): domain[%d] is negative", name, k);
  if (d->nargs < 0 || d->nargs > TY_MAX_ARGS)
    return ty__fail(rt, TY_ELIMIT, "ty_launch(%s): %d store arguments (limit %d)", name, d->nargs,
                    TY_MAX_ARGS);
  if (d->scalar_bytes > TY_MAX_SCALAR_BYTES || (d->scalar_bytes && !d->scalars))
    return ty__fail(rt, TY_ELIMIT, "ty_launch(%s): %zu scalar bytes (limit %d)", name,
                    d->scalar_bytes, TY_MAX_SCALAR_BYTES);
  for (int i = 0; i < d->nargs; i++) {
    const ty_arg *a = &d->args[i];
    if (!a->store || a->store->rt != rt)
      return ty__fail(rt, TY_EINVAL, "ty_launch(%s): argument %d is not a store of this runtime",
                      name, i + 1);
    if (a->proj == TY_PROJ_WHOLE && a->priv != TY_PRIV_IN)
      return ty__fail(rt, TY_EINVAL, "ty_launch(%s): argument %d: a whole-store argument must be read-only",
                      name, i + 1);
    if (a->priv == TY_PRIV_REDUCE && (a->redop <= TY_REDOP_NONE || a->redop > TY_REDOP_MAX))
      return ty__fail(rt, TY_EINVAL, "ty_launch(%s): argument %d: a reduction needs an operator",
                      name, i + 1);
    if (a->proj == TY_PROJ_ALIGNED) {
      bool same = a->store->ndim == d->ndim;
      for (int k = 0; same && k < d->ndim; k++) same = a->store->shape[k] == d->domain[k];
      if (!same) {
        char s1[256], s2[256];
        ty__shape_str(a->store->ndim, a->store->shape, s1, sizeof s1);
        ty__shape_str(d->ndim, d->domain, s2, sizeof s2);
        return ty__fail(rt, TY_ESHAPE, "ty_launch(%s): argument %d has shape %s, the launch domain is %s",
                        name, i + 1, s1, s2);
      }
    }
  }
  if (rt->nwindow >= rt->cfg.window) {
    ty_status st = ty_flush(rt);
    if (st) return st;
  }
  ty_pending *l = malloc(sizeof *l);
  if (!l) return ty__fail(rt, TY_ENOMEM, "ty_launch(%s): out of memory", name);
  l->task = d->task;
  l->seq = rt->next_launch_seq++;
  l->ndim = d->ndim;
  for (int k = 0; k < d->ndim; k++) l->domain[k] = d->domain[k];
  l->nargs = d->nargs;
  for (int i = 0; i < d->nargs; i++) {
    l->args[i] = d->args[i];
    ty_store_retain(l->args[i].store);
  }
  l->scalar_bytes = d->scalar_bytes;
  if (d->scalar_bytes) memcpy(l->scalars, d->scalars, d->scalar_bytes);
  l->max_pieces = d->max_pieces;
  l->nosplit = d->nosplit;
  rt->window[rt->nwindow++] = l;
  rt->stats.launches++;
  return TY_OK;
}

/* ---- partitioning ------------------------------------------------------------ */

typedef struct plan {
  int pieces;
  int dim; /* split dim, -1 when one piece */
} plan;

/* Pieces grow with bytes (one per TY_MIN_CHUNK of the largest argument), up to
 * one per processor, and split the outermost dim that is long enough (whole
 * rows keep tiles contiguous), else the longest splittable dim. */
static plan choose_partition(const ty_runtime *rt, const ty_pending *l) {
  plan p = {1, -1};
  int64_t elems = 1;
  for (int k = 0; k < l->ndim; k++) elems *= l->domain[k];
  if (elems <= 1) return p;
  size_t es = 1;
  for (int i = 0; i < l->nargs; i++) {
    size_t s = ty_dtype_size(l->args[i].store->dtype);
    if (l->args[i].proj == TY_PROJ_ALIGNED && s > es) es = s;
  }
  int64_t want = (elems * (int64_t)es + TY_MIN_CHUNK - 1) / TY_MIN_CHUNK;
  if (want > rt->cfg.cpus) want = rt->cfg.cpus;
  if (l->max_pieces > 0 && want > l->max_pieces) want = l->max_pieces;
  if (want <= 1) return p;

  uint32_t forbidden = l->nosplit;
  for (int i = 0; i < l->nargs; i++) {
    const ty_arg *a = &l->args[i];
    if (a->proj != TY_PROJ_ALIGNED || a->priv == TY_PRIV_IN || a->priv == TY_PRIV_REDUCE) continue;
    for (int k = 0; k < l->ndim; k++)
      if (a->store->strides[k] == 0 && l->domain[k] > 1) forbidden |= 1u << k;
  }
  int best = -1;
  for (int k = 0; k < l->ndim; k++) {
    if ((forbidden >> k) & 1u || l->domain[k] < 2) continue;
    if (l->domain[k] >= want) {
      best = k;
      break;
    }
    if (best < 0 || l->domain[k] > l->domain[best]) best = k;
  }
  if (best < 0) return p;
  p.dim = best;
  p.pieces = (int)(l->domain[best] < want ? l->domain[best] : want);
  return p;
}

static void piece_box(const ty_pending *l, plan p, int piece, int64_t *lo, int64_t *hi) {
  for (int k = 0; k < l->ndim; k++) {
    lo[k] = 0;
    hi[k] = l->domain[k];
  }
  if (p.dim >= 0) {
    int64_t n = l->domain[p.dim];
    lo[p.dim] = n * piece / p.pieces;
    hi[p.dim] = n * (piece + 1) / p.pieces;
  }
}

/* ---- reductions ------------------------------------------------------------------ */

static void set_identity(void *dst, ty_dtype t, ty_redop op, int64_t n) {
  size_t es = ty_dtype_size(t);
  char *p = dst;
  for (int64_t i = 0; i < n; i++, p += es) {
    switch (op) {
    case TY_REDOP_SUM: ty__store_i64(p, t, 0); break;
    case TY_REDOP_PROD: ty__store_i64(p, t, 1); break;
    case TY_REDOP_MIN:
      if (ty_dtype_is_float(t)) ty__store_f64(p, t, INFINITY);
      else ty__store_i64(p, t, t == TY_I64 ? INT64_MAX : t == TY_I32 ? INT32_MAX : t == TY_U8 ? 255 : 1);
      break;
    case TY_REDOP_MAX:
      if (ty_dtype_is_float(t)) ty__store_f64(p, t, -INFINITY);
      else ty__store_i64(p, t, t == TY_I64 ? INT64_MIN : t == TY_I32 ? INT32_MIN : 0);
      break;
    default: break;
    }
  }
}

/* *acc = *acc op *v, for one element */
static void combine_one(char *acc, const char *v, ty_dtype t, ty_redop op) {
  if (ty_dtype_is_float(t)) {
    double a = ty__load_f64(acc, t), b = ty__load_f64(v, t), r = a;
    switch (op) {
    case TY_REDOP_SUM: r = a + b; break;
    case TY_REDOP_PROD: r = a * b; break;
    case TY_REDOP_MIN: r = (isnan(a) || isnan(b)) ? NAN : (b < a ? b : a); break;
    case TY_REDOP_MAX: r = (isnan(a) || isnan(b)) ? NAN : (b > a ? b : a); break;
    default: break;
    }
    ty__store_f64(acc, t, r);
  } else {
    int64_t a = ty__load_i64(acc, t), b = ty__load_i64(v, t), r = a;
    switch (op) {
    case TY_REDOP_SUM: r = (int64_t)((uint64_t)a + (uint64_t)b); break;
    case TY_REDOP_PROD: r = (int64_t)((uint64_t)a * (uint64_t)b); break;
    case TY_REDOP_MIN: r = b < a ? b : a; break;
    case TY_REDOP_MAX: r = b > a ? b : a; break;
    default: break;
    }
    ty__store_i64(acc, t, r);
  }
}

/* A REDUCE argument's private tile for one piece: the piece's box, compact
 * over the dims where the store has a non-zero stride (the distinct elements
 * the piece can touch), stride 0 elsewhere. */
typedef struct private_tile {
  void *buf;
  int64_t count;
  int64_t strides[TY_MAX_RANK];
} private_tile;

static ty_status private_init(const ty_arg *a, int ndim, const int64_t *lo, const int64_t *hi,
                              private_tile *pt) {
  int64_t n = 1;
  for (int k = ndim - 1; k >= 0; k--) {
    if (a->store->strides[k] == 0) {
      pt->strides[k] = 0;
    } else {
      pt->strides[k] = n;
      n *= hi[k] - lo[k];
    }
  }
  pt->count = n;
  size_t es = ty_dtype_size(a->store->dtype);
  pt->buf = malloc((size_t)(n ? n : 1) * es);
  if (!pt->buf) return TY_ENOMEM;
  set_identity(pt->buf, a->store->dtype, a->redop, n);
  return TY_OK;
}

/* store[box] op= private, over the dims with non-zero store stride */
static void private_combine(const ty_arg *a, int ndim, const int64_t *lo, const int64_t *hi,
                            const private_tile *pt) {
  const ty_store *s = a->store;
  size_t es = ty_dtype_size(s->dtype);
  char *base = ty__store_base(s);
  int64_t idx[TY_MAX_RANK];
  for (int k = 0; k < ndim; k++) {
    idx[k] = lo[k];
    if (hi[k] <= lo[k]) return;
  }
  for (;;) {
    int64_t so = 0, po = 0;
    for (int k = 0; k < ndim; k++) {
      so += idx[k] * s->strides[k];
      po += (idx[k] - lo[k]) * pt->strides[k];
    }
    combine_one(base + so * (int64_t)es, (const char *)pt->buf + po * (int64_t)es, s->dtype, a->redop);
    /* advance over dims with a non-zero stride only (the others alias) */
    int k = ndim - 1;
    for (; k >= 0; k--) {
      if (s->strides[k] == 0) continue;
      if (++idx[k] < hi[k]) break;
      idx[k] = lo[k];
    }
    if (k < 0) break;
  }
}

/* ---- execution ---------------------------------------------------------------------- */

static void make_tile(const ty_arg *a, int ndim, const int64_t *lo, const int64_t *hi,
                      const private_tile *pt, ty_tile *t) {
  const ty_store *s = a->store;
  size_t es = ty_dtype_size(s->dtype);
  t->dtype = s->dtype;
  t->ndim = s->ndim;
  for (int k = 0; k < s->ndim; k++) t->gshape[k] = s->shape[k];
  if (a->proj == TY_PROJ_WHOLE) {
    t->data = ty__store_base(s);
    for (int k = 0; k < s->ndim; k++) {
      t->shape[k] = s->shape[k];
      t->strides[k] = s->strides[k];
      t->lo[k] = 0;
    }
    return;
  }
  int64_t off = 0;
  for (int k = 0; k < ndim; k++) {
    t->shape[k] = hi[k] - lo[k];
    t->lo[k] = lo[k];
    t->strides[k] = pt ? pt->strides[k] : s->strides[k];
    off += lo[k] * s->strides[k];
  }
  t->data = pt ? pt->buf : ty__store_base(s) + off * (int64_t)es;
}

typedef struct piece_result {
  int failed; /* 0 ok; else a ty_status */
  char msg[TY_ERRLEN];
} piece_result;

static void run_piece(ty_runtime *rt, const ty_pending *l, plan p, int piece,
                      private_tile *privates, piece_result *res) {
  int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
  ty_tile tiles[TY_MAX_ARGS];
  piece_box(l, p, piece, lo, hi);
  for (int i = 0; i < l->nargs; i++) {
    private_tile *pt = NULL;
    if (l->args[i].priv == TY_PRIV_REDUCE) {
      pt = &privates[(size_t)piece * (size_t)l->nargs + (size_t)i];
      if (private_init(&l->args[i], l->ndim, lo, hi, pt) != TY_OK) {
        res->failed = TY_ENOMEM;
        snprintf(res->msg, sizeof res->msg, "out of memory for a reduction buffer");
        return;
      }
    }
    make_tile(&l->args[i], l->ndim, lo, hi, pt, &tiles[i]);
  }
  ty_task_ctx ctx = {
      .rt = rt,
      .task = l->task,
      .task_name = l->task->name,
      .task_data = l->task->data,
      .piece = piece,
      .pieces = p.pieces,
      .worker = omp_in_parallel() ? omp_get_thread_num() : 0,
      .ndim = l->ndim,
      .nargs = l->nargs,
      .args = tiles,
      .scalars = l->scalars,
      .scalar_bytes = l->scalar_bytes,
      .errbuf = res->msg,
      .errcap = sizeof res->msg,
  };
  for (int k = 0; k < l->ndim; k++) {
    ctx.lo[k] = lo[k];
    ctx.hi[k] = hi[k];
  }
  res->msg[0] = 0;
  int rc = l->task->cpu(&ctx);
  if (rc != 0) {
    res->failed = rc < 0 ? rc : TY_ETASK;
    if (!res->msg[0]) snprintf(res->msg, sizeof res->msg, "%s", ty_status_name(res->failed));
  }
}

static void cancel_outputs(ty_pending *l) {
  for (int i = 0; i < l->nargs; i++)
    if (writes(l->args[i].priv)) l->args[i].store->storage->cancelled = true;
}

static ty_status run_launch(ty_runtime *rt, ty_pending *l) {
  for (int i = 0; i < l->nargs; i++) {
    const ty_arg *a = &l->args[i];
    if (a->priv != TY_PRIV_OUT && a->store->storage->cancelled) {
      cancel_outputs(l);
      return TY_OK; /* poisoned input: the error surfaces when it is read */
    }
  }
  for (int i = 0; i < l->nargs; i++) {
    const ty_arg *a = &l->args[i];
    ty_status st = ty__storage_ensure(rt, a->store->storage, a->priv != TY_PRIV_OUT);
    if (st) {
      cancel_outputs(l);
      return st;
    }
  }
  plan p = choose_partition(rt, l);
  bool has_reduce = false;
  for (int i = 0; i < l->nargs; i++) has_reduce |= l->args[i].priv == TY_PRIV_REDUCE;
  private_tile *privates = NULL;
  if (has_reduce) {
    privates = calloc((size_t)p.pieces * (size_t)l->nargs, sizeof *privates);
    if (!privates) {
      cancel_outputs(l);
      return ty__fail(rt, TY_ENOMEM, "%s: out of memory for reduction buffers", l->task->name);
    }
  }
  piece_result one, *results = &one;
  if (p.pieces > 1) {
    results = malloc((size_t)p.pieces * sizeof *results);
    if (!results) {
      free(privates);
      cancel_outputs(l);
      return ty__fail(rt, TY_ENOMEM, "%s: out of memory", l->task->name);
    }
  }
  for (int i = 0; i < p.pieces; i++) results[i].failed = 0;
  if (p.pieces == 1) {
    run_piece(rt, l, p, 0, privates, &results[0]);
  } else {
    int threads = p.pieces < rt->cfg.cpus ? p.pieces : rt->cfg.cpus;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int i = 0; i < p.pieces; i++) run_piece(rt, l, p, i, privates, &results[i]);
  }
  rt->stats.pieces += (uint64_t)p.pieces;

  ty_status st = TY_OK;
  for (int i = 0; i < p.pieces; i++)
    if (results[i].failed) {
      st = ty__fail(rt, results[i].failed == TY_ENOMEM ? TY_ENOMEM : TY_ETASK,
                    "task '%s' failed in piece %d of %d: %s", l->task->name, i + 1, p.pieces,
                    results[i].msg);
      break;
    }
  if (privates) {
    for (int piece = 0; piece < p.pieces; piece++) {
      int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
      piece_box(l, p, piece, lo, hi);
      for (int i = 0; i < l->nargs; i++) {
        private_tile *pt = &privates[(size_t)piece * (size_t)l->nargs + (size_t)i];
        if (pt->buf && st == TY_OK) private_combine(&l->args[i], l->ndim, lo, hi, pt);
        free(pt->buf);
      }
    }
    free(privates);
  }
  if (results != &one) free(results);
  if (st) cancel_outputs(l);
  return st;
}

ty_status ty_flush(ty_runtime *rt) {
  if (!rt) return TY_EINVAL;
  if (rt->flushing) return ty__fail(rt, TY_EINVAL, "ty_flush: called while the window is running");
  if (rt->nwindow == 0) return TY_OK;
  rt->flushing = true;
  rt->stats.flushes++;
  ty_status first = TY_OK;
  char firstmsg[TY_ERRLEN] = "";
  int n = rt->nwindow, i = 0;
  for (; i < n; i++) {
    if (atomic_exchange(&rt->interrupt, 0)) break;
    ty_pending *l = rt->window[i];
    ty_status st = run_launch(rt, l);
    if (st && first == TY_OK) {
      first = st;
      snprintf(firstmsg, sizeof firstmsg, "%s", rt->errmsg);
    }
    launch_release(l);
    rt->window[i] = NULL;
  }
  if (i < n) {
    for (int j = i; j < n; j++) {
      cancel_outputs(rt->window[j]);
      launch_release(rt->window[j]);
      rt->window[j] = NULL;
    }
    first = TY_EINTR;
    snprintf(firstmsg, sizeof firstmsg, "interrupted: %d of %d launches were cancelled", n - i, n);
  }
  rt->nwindow = 0;
  rt->flushing = false;
  if (first) ty__fail(rt, first, "%s", firstmsg);
  return first;
}
