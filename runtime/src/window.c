/*
 * window.c — the window of deferred launches, and running it.
 *
 * ty__window_append (behind ty_launch, ops.c) copies a launch description
 * (holding a reference on each store) into the window. A flush runs the window in program order: for each launch
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
#include "schedule.h"
#include "trace.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Launches are ~6 KiB (inline arguments and scalars); a window's worth is
 * kept for reuse rather than going through malloc for every launch. */
static void launch_free(ty_runtime *rt, ty_pending *l) {
  if (rt && rt->nfree_pending < rt->cfg.window && !rt->destroyed) {
    l->args[0].store = (ty_store *)rt->free_pending;
    rt->free_pending = l;
    rt->nfree_pending++;
    return;
  }
  free(l);
}

static ty_pending *launch_alloc(ty_runtime *rt) {
  ty_pending *l = rt->free_pending;
  if (l) {
    rt->free_pending = (ty_pending *)l->args[0].store;
    rt->nfree_pending--;
    return l;
  }
  return ty__malloc(sizeof *l);
}

void ty__pending_cache_free(ty_runtime *rt) {
  while (rt->free_pending) {
    ty_pending *l = rt->free_pending;
    rt->free_pending = (ty_pending *)l->args[0].store;
    free(l);
  }
  rt->nfree_pending = 0;
}

static void launch_release(ty_pending *l) {
  ty_runtime *rt = l->nargs ? l->args[0].store->rt : NULL;
  for (int i = 0; i < l->nargs; i++) ty_store_release(l->args[i].store);
  launch_free(rt, l);
}

void ty__window_drop(ty_runtime *rt) {
  for (int i = 0; i < rt->nwindow; i++) launch_release(rt->window[i]);
  rt->nwindow = 0;
}

static bool writes(ty_privilege p) { return p != TY_PRIV_IN; }

static ty_status flush_window(ty_runtime *rt);

/* A flush the window needs before it can take a launch: what it runs was
 * launched earlier, so its error is kept for the next ty_flush (a read or an
 * explicit flush) rather than failing the launch being appended: the same
 * error surfaces at the same place whatever the window's size. */
static ty_status flush_deferring(ty_runtime *rt) {
  ty_status st = flush_window(rt);
  if (st == TY_OK || rt->flushing) return st;
  if (!rt->deferred) {
    rt->deferred = st;
    snprintf(rt->deferred_msg, sizeof rt->deferred_msg, "%s", rt->errmsg);
  }
  return TY_OK;
}

ty_status ty__window_append(ty_runtime *rt, const ty_launch_desc *d) {
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
  if (d->options && (((d->options->set & TY_POL_MODE) && (unsigned)d->options->mode > TY_MODE_TASK) ||
                     ((d->options->set & TY_POL_OVERDECOMPOSE) && d->options->overdecompose < 1) ||
                     ((d->options->set & TY_POL_MIN_CHUNK) && d->options->min_chunk < 1)))
    return ty__fail(rt, TY_EINVAL, "ty_launch(%s): invalid launch options", name);
  ty_resolved pol;
  ty__policy_resolve(rt, d->task, d->args, d->nargs, d->options, &pol);
  /* a window is scheduled under one favor and streamed under one budget: a
   * change of either flushes it. A streamed scope is not flushed when the
   * window is full: the window grows, up to TY_MAX_STREAM_WINDOW launches. */
  if (rt->nwindow > 0 && (rt->window[0]->pol.p.favor != pol.p.favor ||
                          rt->window[0]->pol.p.memory != pol.p.memory ||
                          rt->window[0]->pol.p.stream_relaxed != pol.p.stream_relaxed)) {
    ty_status st = flush_deferring(rt);
    if (st) return st;
  }
  if (rt->nwindow >= (pol.p.memory > 0 ? rt->window_cap : rt->cfg.window)) {
    ty_status st = TY_OK;
    if (pol.p.memory > 0 && rt->window_cap < TY_MAX_STREAM_WINDOW) {
      int cap = rt->window_cap * 2 < TY_MAX_STREAM_WINDOW ? rt->window_cap * 2 : TY_MAX_STREAM_WINDOW;
      ty_pending **nw = ty__realloc(rt->window, (size_t)cap * sizeof *nw);
      if (nw) {
        rt->window = nw;
        rt->window_cap = cap;
      } else {
        st = flush_deferring(rt); /* no memory to grow: stream what is there */
      }
    } else {
      st = flush_deferring(rt);
    }
    if (st) return st;
  }
  ty_pending *l = launch_alloc(rt);
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
  l->fused = 0;
  l->fused_ops[0] = 0;
  l->fuse_end[0] = 0;
  l->fop = 0;
  l->origin[0] = 0;
  if (d->origin) snprintf(l->origin, sizeof l->origin, "%s", d->origin);
  l->pol = pol;
  if (l->pol.mode_from_hint) {
    /* what a hinted store drives is split like it (the hint's axes travel) */
    const ty_store *src = NULL;
    for (int i = 0; i < d->nargs && !src; i++)
      if (d->args[i].store->id == l->pol.hint_store) src = d->args[i].store;
    for (int i = 0; src && i < d->nargs; i++) {
      ty_store *s = d->args[i].store;
      if (writes(d->args[i].priv) && d->args[i].proj == TY_PROJ_ALIGNED && !s->has_hint) {
        s->has_hint = true;
        s->hint = src->hint;
        s->hint_from = src->hint_from;
      }
    }
  }
  rt->window[rt->nwindow++] = l;
  rt->stats.launches++;
  return TY_OK;
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
  pt->buf = ty__malloc((size_t)(n ? n : 1) * es);
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

/* A launch made ready to run: storage allocated, partition chosen, buffers
 * for results and reduction privates. prepare and finish run on the driving
 * thread; pieces run on workers and touch only their own slots. */
typedef struct prepared {
  ty_pending *l;
  ty_tiling tiling;
  bool skip; /* reads cancelled storage: nothing runs, outputs are cancelled */
  bool omp;  /* runs the task's omp variant on OpenMP processors */
  int threads;
  private_tile *privates;
  piece_result *results;
  ty_record *explain;
  bool empty; /* the domain has no element: no piece runs a body */
  /* streamed runs (ty__run_box): the box's corner, added to every piece's */
  bool boxed;
  int64_t origin[TY_MAX_RANK];
  piece_result one; /* last: prepare clears what comes before (its 2 KiB message is
                       written by run_piece before anyone reads it) */
} prepared;

void ty__cancel_outputs(ty_pending *l, ty_status cause, const char *why) {
  for (int i = 0; i < l->nargs; i++)
    if (writes(l->args[i].priv)) ty__cancel_storage(l->args[i].store->storage, cause, why);
}

/* A launch that did not run because an input is unavailable passes that
 * input's cause on to what it writes. */
static void cancel_skipped(ty_pending *l) {
  for (int i = 0; i < l->nargs; i++) {
    const ty_storage *in = l->args[i].store->storage;
    if (l->args[i].priv != TY_PRIV_OUT && in->cancelled) {
      char *why = in->cancel_why ? ty__strdup(in->cancel_why) : NULL; /* in may be an output too */
      ty__cancel_outputs(l, in->cancel_status, why);
      free(why);
      return;
    }
  }
}

/* A launch that ran: what it wrote whole is readable again (a failed or
 * refused earlier producer no longer matters); a partial write leaves the
 * rest unavailable. */
static void uncancel_outputs(ty_pending *l) {
  for (int i = 0; i < l->nargs; i++) {
    const ty_arg *a = &l->args[i];
    ty_storage *stg = a->store->storage;
    if (!stg->cancelled || a->priv != TY_PRIV_OUT || a->proj != TY_PROJ_ALIGNED) continue;
    if ((size_t)a->store->size * ty_dtype_size(a->store->dtype) != stg->nbytes ||
        !ty_store_is_contiguous(a->store))
      continue;
    stg->cancelled = false;
    free(stg->cancel_why);
    stg->cancel_why = NULL;
  }
}

static ty_status prepare(ty_runtime *rt, ty_pending *l, prepared *pr) {
  memset(pr, 0, offsetof(prepared, one));
  pr->l = l;
  pr->one.failed = 0;
  pr->one.msg[0] = 0;
  pr->results = &pr->one;
  pr->tiling.pieces = 1;
  for (int i = 0; i < l->nargs; i++) {
    const ty_arg *a = &l->args[i];
    if (a->priv != TY_PRIV_OUT && a->store->storage->cancelled) {
      pr->skip = true; /* poisoned input: the error surfaces when it is read */
      return TY_OK;
    }
  }
  for (int i = 0; i < l->nargs; i++) {
    const ty_arg *a = &l->args[i];
    /* an OUT view that does not cover its storage leaves the rest unwritten:
     * zero it, so never-written elements read as 0 */
    bool whole = (size_t)a->store->size * ty_dtype_size(a->store->dtype) == a->store->storage->nbytes;
    ty_status st = ty__storage_ensure(rt, a->store->storage, a->priv != TY_PRIV_OUT || !whole);
    if (st) return st;
  }
  pr->omp = l->task->omp && rt->cfg.omps > 0;
  pr->threads = pr->omp ? rt->cfg.ompthreads : 1;
  int procs = pr->omp ? rt->cfg.omps : rt->cfg.cpus;

  ty_record *e = ty__explain_next(rt);
  pr->explain = e;
  e->seq = l->seq;
  e->task = l->task;
  e->ndim = l->ndim;
  for (int k = 0; k < l->ndim; k++) e->shape[k] = l->domain[k];
  e->omp = pr->omp;
  e->pol = l->pol;
  if (l->fused || l->fuse_end[0]) {
    e->fused = l->fused;
    ty__strlcpy(e->fused_ops, l->fused_ops, sizeof e->fused_ops);
    ty__strlcpy(e->fuse_end, l->fuse_end, sizeof e->fuse_end);
  }
  ty__partition(l, procs, &pr->tiling, e);
  for (int k = 0; k < l->ndim; k++) pr->empty |= l->domain[k] == 0;
  e->pieces = pr->tiling.pieces;
  for (int k = 0; k < l->ndim; k++) e->tiles[k] = pr->tiling.tiles[k];

  int pieces = pr->tiling.pieces;
  bool has_reduce = false;
  for (int i = 0; i < l->nargs; i++) has_reduce |= l->args[i].priv == TY_PRIV_REDUCE;
  if (has_reduce) {
    pr->privates = ty__calloc((size_t)pieces * (size_t)l->nargs, sizeof *pr->privates);
    if (!pr->privates)
      return ty__fail(rt, TY_ENOMEM, "%s: out of memory for reduction buffers", l->task->name);
  }
  if (pieces > 1) {
    pr->results = ty__calloc((size_t)pieces, sizeof *pr->results);
    if (!pr->results) {
      pr->results = &pr->one;
      return ty__fail(rt, TY_ENOMEM, "%s: out of memory", l->task->name);
    }
  }
  return TY_OK;
}

static void run_piece(ty_runtime *rt, prepared *pr, int piece, int worker) {
  const ty_pending *l = pr->l;
  if (pr->empty) return; /* a task body never sees an empty domain */
  piece_result *res = &pr->results[piece];
  int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
  ty_tile tiles[TY_MAX_ARGS];
  ty__piece_box(l->ndim, l->domain, &pr->tiling, piece, lo, hi);
  for (int k = 0; pr->boxed && k < l->ndim; k++) {
    lo[k] += pr->origin[k];
    hi[k] += pr->origin[k];
  }
  for (int i = 0; i < l->nargs; i++) {
    private_tile *pt = NULL;
    if (l->args[i].priv == TY_PRIV_REDUCE) {
      pt = &pr->privates[(size_t)piece * (size_t)l->nargs + (size_t)i];
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
      .pieces = pr->tiling.pieces,
      .threads = pr->threads,
      .worker = worker,
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
  int rc = pr->omp ? l->task->omp(&ctx) : l->task->cpu(&ctx);
  if (rc != 0) {
    res->failed = rc < 0 ? rc : TY_ETASK;
    if (!res->msg[0]) snprintf(res->msg, sizeof res->msg, "%s", ty_status_name(res->failed));
  }
}

/* Run every piece of one prepared launch, in parallel when it has several. */
static void run_pieces(ty_runtime *rt, prepared *pr) {
  int pieces = pr->tiling.pieces;
  if (pieces == 1) {
    run_piece(rt, pr, 0, omp_in_parallel() ? omp_get_thread_num() : 0);
    return;
  }
  int procs = pr->omp ? rt->cfg.omps : rt->cfg.cpus;
  int threads = pieces < procs ? pieces : procs;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int i = 0; i < pieces; i++) run_piece(rt, pr, i, omp_get_thread_num());
}

static ty_status finish(ty_runtime *rt, prepared *pr, ty_status st) {
  ty_pending *l = pr->l;
  int pieces = pr->tiling.pieces;
  if (!pr->skip && st == TY_OK) {
    rt->stats.pieces += (uint64_t)pieces;
    for (int i = 0; i < pieces; i++)
      if (pr->results[i].failed) {
        st = ty__fail(rt, pr->results[i].failed == TY_ENOMEM ? TY_ENOMEM : TY_ETASK,
                      "task '%s' failed in piece %d of %d: %s%s%s%s", l->task->name, i + 1, pieces,
                      pr->results[i].msg, l->origin[0] ? " (launched at " : "", l->origin,
                      l->origin[0] ? ")" : "");
        break;
      }
  }
  if (pr->privates) {
    for (int piece = 0; piece < pieces; piece++) {
      int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
      ty__piece_box(l->ndim, l->domain, &pr->tiling, piece, lo, hi);
      for (int k = 0; pr->boxed && k < l->ndim; k++) {
        lo[k] += pr->origin[k];
        hi[k] += pr->origin[k];
      }
      for (int i = 0; i < l->nargs; i++) {
        private_tile *pt = &pr->privates[(size_t)piece * (size_t)l->nargs + (size_t)i];
        if (pt->buf && st == TY_OK) private_combine(&l->args[i], l->ndim, lo, hi, pt);
        free(pt->buf);
      }
    }
    free(pr->privates);
  }
  if (pr->results != &pr->one) free(pr->results);
  if (pr->skip) {
    cancel_skipped(l);
  } else if (st) {
    char why[TY_ERRLEN + 64];
    snprintf(why, sizeof why, "launch #%llu failed: %s", (unsigned long long)l->seq,
             rt->errmsg);
    ty__cancel_outputs(l, st, why);
  } else if (!pr->boxed) {
    uncancel_outputs(l);
    /* the stores this launch wrote remember its tiling (their key partition) */
    for (int i = 0; i < l->nargs; i++) {
      ty_store *s = l->args[i].store;
      if (writes(l->args[i].priv) && l->args[i].proj == TY_PROJ_ALIGNED) {
        s->has_key = true;
        s->key = pr->tiling;
      }
    }
  }
  return st;
}

static ty_status run_launch(ty_runtime *rt, ty_pending *l) {
  prepared pr;
  ty_status st = prepare(rt, l, &pr);
  if (st == TY_OK && !pr.skip) run_pieces(rt, &pr);
  return finish(rt, &pr, st);
}

ty_status ty__run_box(ty_runtime *rt, ty_pending *l, int dim, int64_t lo, int64_t hi, bool record,
                      const char *note) {
  const bool boxed = dim >= 0 && dim < l->ndim;
  const int64_t whole = boxed ? l->domain[dim] : 0;
  if (boxed) l->domain[dim] = hi - lo; /* partition the box, run it in global coordinates */
  uint64_t before = rt->nexplained;
  prepared pr;
  ty_status st = prepare(rt, l, &pr);
  pr.boxed = boxed;
  if (boxed) pr.origin[dim] = lo;
  if (st == TY_OK && !pr.skip) run_pieces(rt, &pr);
  st = finish(rt, &pr, st);
  if (boxed) l->domain[dim] = whole;
  if (rt->nexplained > before) {
    if (!record) {
      rt->nexplained = before; /* one record per launch, from its first box */
    } else {
      ty_record *e = &rt->explain[(rt->nexplained - 1) % TY_EXPLAIN_KEEP];
      for (int k = 0; k < l->ndim; k++) e->shape[k] = l->domain[k];
      snprintf(e->stream, sizeof e->stream, "%s", note ? note : "");
    }
  }
  return st;
}


/* ---- the launch graph and waves ------------------------------------------------- */

/* Scratch arrays of the graph, kept in the runtime between flushes. */
typedef struct graph_space {
  int *dep_ptr, *dep_idx, *mark;
  int64_t *buf_bytes;
  int *user_ptr, *user_idx;
  ty_storage **storages;
  int *last_writer, *reader_head, *reader_next, *reader_launch, *nstores, *buf_of;
  bool *window_only;
  ty_store **stores;
} graph_space;

static void graph_free(graph_space *gs) {
  free(gs->dep_ptr);
  free(gs->dep_idx);
  free(gs->mark);
  free(gs->buf_bytes);
  free(gs->user_ptr);
  free(gs->user_idx);
  free(gs->storages);
  free(gs->last_writer);
  free(gs->reader_head);
  free(gs->reader_next);
  free(gs->reader_launch);
  free(gs->nstores);
  free(gs->buf_of);
  free(gs->window_only);
  free(gs->stores);
}

/* Appends dependence j -> i once; false when out of memory. */
static bool add_dep(graph_space *gs, int *k, size_t *cap, int j, int i) {
  if (i < 0 || gs->mark[i] == j) return true;
  if ((size_t)*k == *cap) {
    size_t ncap = *cap * 2;
    int *d = ty__realloc(gs->dep_idx, ncap * sizeof *d);
    if (!d) return false;
    gs->dep_idx = d;
    *cap = ncap;
  }
  gs->mark[i] = j;
  gs->dep_idx[(*k)++] = i;
  return true;
}

/* Dependences, in one pass over the arguments: a launch follows the last
 * writer of each storage it touches and, when it writes, every reader since
 * (views of one storage count as overlapping). Transient buffers: storage
 * not allocated before the flush and held only by the window's launches, so
 * it is allocated and freed inside the window. */
static ty_status build_graph(ty_runtime *rt, ty_pending **w, int n, graph_space *gs, ty_graph *g) {
  memset(gs, 0, sizeof *gs);
  int nargs = 0;
  for (int i = 0; i < n; i++) nargs += w[i]->nargs;
  size_t na = (size_t)nargs + 1, nn = (size_t)n + 1;
  gs->dep_ptr = ty__malloc(nn * sizeof(int));
  size_t dep_cap = 2 * na;
  gs->dep_idx = ty__malloc(dep_cap * sizeof(int));
  gs->mark = ty__malloc(nn * sizeof(int));
  gs->buf_bytes = ty__malloc(na * sizeof(int64_t));
  gs->user_ptr = ty__malloc((na + 1) * sizeof(int));
  gs->user_idx = ty__malloc(na * sizeof(int));
  gs->storages = ty__malloc(na * sizeof(ty_storage *));
  gs->last_writer = ty__malloc(na * sizeof(int));
  gs->reader_head = ty__malloc(na * sizeof(int));
  gs->reader_next = ty__malloc(na * sizeof(int));
  gs->reader_launch = ty__malloc(na * sizeof(int));
  gs->nstores = ty__calloc(na, sizeof(int));
  gs->buf_of = ty__malloc(na * sizeof(int));
  gs->window_only = ty__malloc(na * sizeof(bool));
  gs->stores = ty__malloc(na * sizeof(ty_store *));
  if (!gs->dep_ptr || !gs->dep_idx || !gs->mark || !gs->buf_bytes || !gs->user_ptr ||
      !gs->user_idx || !gs->storages || !gs->last_writer || !gs->reader_head ||
      !gs->reader_next || !gs->reader_launch || !gs->nstores || !gs->buf_of ||
      !gs->window_only || !gs->stores) {
    graph_free(gs);
    return TY_ENOMEM;
  }
  uint64_t epoch = ++rt->flush_epoch;
  int nts = 0, nstores = 0, k = 0, nreaders = 0;
  for (int i = 0; i < n; i++) gs->mark[i] = -1;
  for (int j = 0; j < n; j++) {
    gs->dep_ptr[j] = k;
    for (int a = 0; a < w[j]->nargs; a++) {
      const ty_arg *arg = &w[j]->args[a];
      ty_store *s = arg->store;
      ty_storage *st = s->storage;
      if (st->epoch != epoch) {
        st->epoch = epoch;
        st->idx = nts;
        gs->storages[nts] = st;
        gs->last_writer[nts] = -1;
        gs->reader_head[nts] = -1;
        gs->window_only[nts] = true;
        nts++;
      }
      if (s->epoch != epoch) {
        s->epoch = epoch;
        s->wcount = 0;
        gs->stores[nstores++] = s;
        gs->nstores[st->idx]++;
      }
      s->wcount++;
      int t = st->idx;
      bool ok = add_dep(gs, &k, &dep_cap, j, gs->last_writer[t]);
      if (writes(arg->priv))
        for (int r = gs->reader_head[t]; ok && r >= 0; r = gs->reader_next[r])
          if (gs->reader_launch[r] != j) ok = add_dep(gs, &k, &dep_cap, j, gs->reader_launch[r]);
      if (!ok) {
        graph_free(gs);
        return TY_ENOMEM;
      }
    }
    /* after all its arguments: record j as writer / reader */
    for (int a = 0; a < w[j]->nargs; a++) {
      const ty_arg *arg = &w[j]->args[a];
      int t = arg->store->storage->idx;
      if (writes(arg->priv)) {
        gs->last_writer[t] = j;
        gs->reader_head[t] = -1;
      } else if (gs->reader_head[t] < 0 || gs->reader_launch[gs->reader_head[t]] != j) {
        gs->reader_launch[nreaders] = j;
        gs->reader_next[nreaders] = gs->reader_head[t];
        gs->reader_head[t] = nreaders++;
      }
    }
  }
  gs->dep_ptr[n] = k;
  for (int x = 0; x < nstores; x++)
    if (gs->stores[x]->refs != gs->stores[x]->wcount) gs->window_only[gs->stores[x]->storage->idx] = false;
  int nbuf = 0;
  for (int t = 0; t < nts; t++) {
    ty_storage *st = gs->storages[t];
    bool transient = !st->data && !st->external && gs->window_only[t] && st->refs == gs->nstores[t];
    gs->buf_of[t] = transient ? nbuf : -1;
    if (transient) gs->buf_bytes[nbuf++] = (int64_t)st->nbytes;
  }
  /* users of each buffer, in program order (CSR by counting) */
  for (int b = 0; b <= nbuf; b++) gs->user_ptr[b] = 0;
  for (int i = 0; i < n; i++) gs->mark[i] = -1;
  int *count = gs->reader_next; /* reuse: nbuf <= nts entries */
  for (int b = 0; b < nbuf; b++) count[b] = 0;
  for (int j = 0; j < n; j++)
    for (int a = 0; a < w[j]->nargs; a++) {
      int b = gs->buf_of[w[j]->args[a].store->storage->idx];
      if (b >= 0 && (a == 0 || gs->buf_of[w[j]->args[a - 1].store->storage->idx] != b)) count[b]++;
    }
  /* duplicates within one launch are harmless for liveness; exact counts below */
  int u = 0;
  for (int b = 0; b < nbuf; b++) {
    gs->user_ptr[b] = u;
    u += count[b];
    count[b] = gs->user_ptr[b];
  }
  gs->user_ptr[nbuf] = u;
  for (int j = 0; j < n; j++)
    for (int a = 0; a < w[j]->nargs; a++) {
      int b = gs->buf_of[w[j]->args[a].store->storage->idx];
      if (b >= 0 && (a == 0 || gs->buf_of[w[j]->args[a - 1].store->storage->idx] != b))
        gs->user_idx[count[b]++] = j;
    }
  *g = (ty_graph){n, gs->dep_ptr, gs->dep_idx, nbuf, gs->buf_bytes, gs->user_ptr, gs->user_idx};
  return TY_OK;
}

typedef struct slot {
  prepared *pr;
  int piece;
} slot;

static void note_error(ty_runtime *rt, ty_status st, ty_status *first, char *msg, size_t len) {
  if (st && *first == TY_OK) {
    *first = st;
    snprintf(msg, len, "%s", rt->errmsg);
  }
}

/* Run one wave: prepare its launches (program order), run all their pieces
 * together, finish them (program order). */
static void run_wave(ty_runtime *rt, ty_pending **w, const int *members, int count, int wave,
                     int nwaves, ty_status *first, char *firstmsg, size_t msglen) {
  /* most waves are small: their bookkeeping lives on the stack */
  prepared prs_local[8];
  ty_status sts_local[8];
  bool local = count <= 8;
  prepared *prs = local ? prs_local : ty__calloc((size_t)count, sizeof *prs);
  ty_status *sts = local ? sts_local : ty__calloc((size_t)count, sizeof *sts);
  if (!prs || !sts) { /* degrade to one launch at a time */
    free(prs);
    free(sts);
    for (int m = 0; m < count; m++) note_error(rt, run_launch(rt, w[members[m]]), first, firstmsg, msglen);
    return;
  }
  int total = 0;
  bool any_omp = false;
  for (int m = 0; m < count; m++) {
    sts[m] = prepare(rt, w[members[m]], &prs[m]);
    if (sts[m] == TY_OK && !prs[m].skip) {
      total += prs[m].tiling.pieces;
      any_omp |= prs[m].omp;
    }
  }
  bool tracing = ty__tracing(rt);
  double t0 = tracing ? ty__trace_time(rt) : 0;
  slot *slots = total > 1 ? ty__malloc((size_t)total * sizeof *slots) : NULL;
  ty_trace_piece *tp = tracing && total ? ty__calloc((size_t)total, sizeof *tp) : NULL;
  if (total == 1 && tp) { /* one point task: run it here, timed */
    for (int m = 0; m < count; m++)
      if (sts[m] == TY_OK && !prs[m].skip) {
        int worker = omp_in_parallel() ? omp_get_thread_num() : 0;
        tp[0].t0 = ty__trace_time(rt);
        run_piece(rt, &prs[m], 0, worker);
        tp[0].t1 = ty__trace_time(rt);
        tp[0] = (ty_trace_piece){tp[0].t0, tp[0].t1, worker, 0, 1, wave, prs[m].l->fused,
                                 prs[m].l->seq, prs[m].l->task};
      }
  } else if (total == 1 || (total > 1 && (!slots || any_omp))) {
    for (int m = 0; m < count; m++)
      if (sts[m] == TY_OK && !prs[m].skip) run_pieces(rt, &prs[m]);
    free(tp);
    tp = NULL;
  } else if (total > 1) {
    int t = 0;
    for (int m = 0; m < count; m++)
      if (sts[m] == TY_OK && !prs[m].skip)
        for (int p = 0; p < prs[m].tiling.pieces; p++) slots[t++] = (slot){&prs[m], p};
    int threads = total < rt->cfg.cpus ? total : rt->cfg.cpus;
    bool rec = tp != NULL;
    /* as many slots as threads: slot k runs on worker k (deterministic, task
     * mode's round-robin); more slots: whoever is free takes the next */
    if (total <= threads) {
#pragma omp parallel for num_threads(threads) schedule(static, 1)
      for (int k = 0; k < total; k++) {
        int worker = omp_get_thread_num();
        if (rec) tp[k].t0 = ty__trace_time(rt);
        run_piece(rt, slots[k].pr, slots[k].piece, worker);
        if (rec) tp[k].t1 = ty__trace_time(rt), tp[k].worker = worker;
        if (slots[k].pr->explain && slots[k].pr->tiling.pieces == 1)
          slots[k].pr->explain->processor = worker;
      }
    } else {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
      for (int k = 0; k < total; k++) {
        int worker = omp_get_thread_num();
        if (rec) tp[k].t0 = ty__trace_time(rt);
        run_piece(rt, slots[k].pr, slots[k].piece, worker);
        if (rec) tp[k].t1 = ty__trace_time(rt), tp[k].worker = worker;
        if (slots[k].pr->explain && slots[k].pr->tiling.pieces == 1)
          slots[k].pr->explain->processor = worker;
      }
    }
    if (tp)
      for (int k = 0; k < total; k++) {
        tp[k].piece = slots[k].piece;
        tp[k].pieces = slots[k].pr->tiling.pieces;
        tp[k].wave = wave;
        tp[k].fused = slots[k].pr->l->fused;
        tp[k].seq = slots[k].pr->l->seq;
        tp[k].task = slots[k].pr->l->task;
      }
  }
  if (tracing) {
    if (tp) ty__trace_pieces(rt, tp, total);
    char name[32];
    snprintf(name, sizeof name, "wave %d", wave);
    ty__trace_span(rt, name, t0, ty__trace_time(rt), wave);
  }
  free(tp);
  free(slots);
  for (int m = 0; m < count; m++) {
    if (prs[m].explain) {
      prs[m].explain->wave = wave;
      prs[m].explain->waves = nwaves;
    }
    note_error(rt, finish(rt, &prs[m], sts[m]), first, firstmsg, msglen);
  }
  if (!local) {
    free(prs);
    free(sts);
  }
}

void ty_set_flush_hook(ty_runtime *rt, void (*hook)(void *ud), void *ud) {
  rt->flush_hook = hook;
  rt->flush_hook_ud = ud;
}

void ty_last_flush_stats(const ty_runtime *rt, ty_flush_stats *out) { *out = rt->last_flush; }

/* Run the window; then report the first error: a deferred one (from an
 * earlier flush, see flush_deferring) before this flush's own. */
ty_status ty_flush(ty_runtime *rt) {
  if (!rt) return TY_EINVAL;
  if (rt->flushing) return ty__fail(rt, TY_EINVAL, "ty_flush: called while the window is running");
  ty_status st = flush_window(rt);
  if (rt->deferred) {
    st = rt->deferred;
    rt->deferred = TY_OK;
    ty__fail(rt, st, "%s", rt->deferred_msg);
  }
  return st;
}

static ty_status flush_window(ty_runtime *rt) {
  if (rt->nwindow == 0) return TY_OK;
  rt->flushing = true;
  double flush_t0 = ty__tracing(rt) ? ty__trace_time(rt) : 0;
  /* the allocator's figures of this flush: deltas of the run's counters, and
   * its own peak counted from the bytes live now (the run's peak comes back
   * at the end) */
  const uint64_t alloc0 = rt->stats.bytes_allocated, freed0 = rt->stats.bytes_freed;
  const uint64_t peak0 = rt->stats.bytes_peak;
  rt->stats.bytes_peak = rt->live;
  if (rt->flush_hook) rt->flush_hook(rt->flush_hook_ud);
  rt->stats.flushes++;
  uint64_t explained = rt->nexplained;
  ty__fuse(rt);
  ty_status first = TY_OK;
  char firstmsg[TY_ERRLEN] = "";
  int n = rt->nwindow;
  ty_pending **w = rt->window;

  /* schedule into waves under the window's favor (one favor per window);
   * without memory for the graph, run one launch per wave */
  ty_favor favor = w[0]->pol.p.favor;
  int *wave_of = ty__malloc((size_t)n * sizeof *wave_of);
  int *members = ty__malloc((size_t)n * sizeof *members);
  graph_space gs;
  ty_graph g;
  ty_sched_stats ss = {.waves = n, .critical_path = n, .widest = 1};
  ty_flush_stats sf = {0};
  bool streamed = n > 0 && w[0]->pol.p.memory > 0;
  if (streamed) {
    /* a streamed scope: launches run piece by piece, in program order */
    first = ty__stream_run(rt, w, n, &sf, firstmsg, sizeof firstmsg);
    for (int i = 0; i < n; i++) {
      launch_release(w[i]);
      w[i] = NULL;
    }
  } else if (wave_of && members && build_graph(rt, w, n, &gs, &g) == TY_OK) {
    if (ty__schedule(&g, favor, wave_of, &ss) != TY_OK) ss.waves = n;
    graph_free(&gs);
  } else if (wave_of) {
    for (int i = 0; i < n; i++) wave_of[i] = i;
  }
  bool interrupted = false;
  for (int wave = 0; !streamed && wave < ss.waves; wave++) { /* streamed: figures as debug's */
    if (atomic_exchange(&rt->interrupt, 0)) {
      interrupted = true;
      break;
    }
    int one = wave, *mem = &one, count = 1;
    if (wave_of && members) {
      mem = members;
      count = 0;
      for (int i = 0; i < n; i++)
        if (wave_of[i] == wave) mem[count++] = i;
    }
    if (ty__tracing(rt)) ty__trace_counter(rt, ty__trace_time(rt), (int64_t)rt->live);
    run_wave(rt, w, mem, count, wave, ss.waves, &first, firstmsg, sizeof firstmsg);
    for (int m = 0; m < count; m++) {
      launch_release(w[mem[m]]);
      w[mem[m]] = NULL;
    }
  }
  if (interrupted) {
    int cancelled = 0;
    for (int j = 0; j < n; j++)
      if (w[j]) {
        ty__cancel_outputs(w[j], TY_EINTR, "interrupted: the launch producing it was cancelled");
        launch_release(w[j]);
        w[j] = NULL;
        cancelled++;
      }
    first = TY_EINTR;
    snprintf(firstmsg, sizeof firstmsg, "interrupted: %d of %d launches were cancelled", cancelled, n);
  }
  free(wave_of);
  free(members);
  rt->nwindow = 0;
  rt->flushing = false;
  rt->last_flush = (ty_flush_stats){n, ss.waves, ss.critical_path, ss.widest, ss.concurrent,
                                    ss.peak_transient, ty_favor_name(favor), sf.stream_budget,
                                    sf.stream_groups, sf.stream_pieces, sf.stream_peak,
                                    sf.stream_outputs, rt->stats.flushes, rt->stats.bytes_peak,
                                    rt->stats.bytes_allocated - alloc0,
                                    rt->stats.bytes_freed - freed0, rt->live};
  if (peak0 > rt->stats.bytes_peak) rt->stats.bytes_peak = peak0;
  /* explain shows every launch with the figures of its flush */
  uint64_t stamp = rt->nexplained - explained > TY_EXPLAIN_KEEP ? rt->nexplained - TY_EXPLAIN_KEEP
                                                                 : explained;
  for (; stamp < rt->nexplained; stamp++) rt->explain[stamp % TY_EXPLAIN_KEEP].flush = rt->last_flush;
  rt->stats.waves += (uint64_t)ss.waves;
  rt->stats.concurrent_launches += (uint64_t)ss.concurrent;
  if ((uint64_t)ss.widest > rt->stats.widest_wave) rt->stats.widest_wave = (uint64_t)ss.widest;
  if ((uint64_t)ss.critical_path > rt->stats.critical_path)
    rt->stats.critical_path = (uint64_t)ss.critical_path;
  if (ss.peak_transient > 0 && (uint64_t)ss.peak_transient > rt->stats.peak_transient)
    rt->stats.peak_transient = (uint64_t)ss.peak_transient;
  rt->stats.launches_run += rt->nexplained - explained;
  if (ty__tracing(rt)) {
    ty__trace_counter(rt, ty__trace_time(rt), (int64_t)rt->live);
    ty__trace_span(rt, "flush", flush_t0, ty__trace_time(rt), -1);
  }
  if (rt->cfg.explain) ty__explain_print(rt, explained, stderr);
  if (first) ty__fail(rt, first, "%s", firstmsg);
  return first;
}
