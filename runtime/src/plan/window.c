/*
 * window.c — the window of deferred launches, and flushing it.
 *
 * ty__window_append (behind ty_launch, ops.c) checks a launch description
 * and copies it (holding a reference on each store) into the window;
 * ty__window_append_valid copies one that is valid by construction (ops.c's
 * element-wise launches). A launch points at its policy resolution, shared
 * or its own (internal.h, ty_resolved). A flush fuses the
 * window (fuse.c), builds its dependence graph, cuts it into waves under the
 * window's favor (schedule.c) or hands it to the stream pass (stream.c), and
 * gives each wave to the executor (exec.c), which alone knows processors.
 * Invariants:
 *  - waves honour every read-after-write, write-after-read and
 *    write-after-write hazard of program order;
 *  - every launch of a flushed window is run or cancelled, then released;
 *    the rest of the window runs after a failure;
 *  - an error of a flush made to take a launch (the window was full) is kept
 *    for the next ty_flush, not given to the launch being appended.
 */
#include "internal.h"
#include "exec.h"
#include "exec_gpu.h"
#include "fuse_cache.h" /* a hit's waves */
#include "regions.h" /* TY__PENDING_KEEP */
#include "schedule.h"
#include "trace.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Launches are ~6 KiB (inline arguments and scalars); a window's worth (and
 * a few, TY__PENDING_KEEP) is kept for reuse rather than going through
 * malloc for every launch. */
static void launch_free(ty_runtime *rt, ty_pending *l) {
  if (rt && rt->nfree_pending < TY__PENDING_KEEP(rt) && !rt->destroyed) {
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
    if (rt->free_pending) __builtin_prefetch(&rt->free_pending->args[0].store); /* fuse.c's pending_alloc */
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
  for (int i = 0; i < l->nargs; i++) ty__store_release(l->args[i].store);
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

/* A launch whose every output is 0-d (a whole reduction, scalar arithmetic):
 * what follows it that reads its value cannot share its pass, so a fused
 * group ends there. */
static bool scalar_result(const ty_pending *l) {
  bool out = false;
  for (int i = 0; i < l->nargs; i++)
    if (writes(l->args[i].priv)) {
      if (l->args[i].store->ndim != 0) return false;
      out = true;
    }
  return out;
}

/* A launch that writes storage which existed before it: made before the
 * window began to fill, or holding values already (a store made from host
 * data). That is an assignment into a store the program holds (`center[{}]
 * = ...`, `x[i] = v`), the end of a statement, where the temporaries of the
 * expression before it have been read; a temporary the window makes has
 * no memory until the flush runs it. Two O(1) tests of a written
 * argument: scanning the launches before it for a write of the same
 * storage as well cost overhead.lua 20% (its windows are full and have no
 * cut). */
static bool writes_held(const ty_runtime *rt, const ty_pending *l) {
  for (int a = 0; a < l->nargs; a++) {
    const ty_storage *stg = l->args[a].store->storage;
    if (writes(l->args[a].priv) && (stg->born < rt->window_gen || stg->data)) return true;
  }
  return false;
}

/* The cut of a full window: after the last scalar result of its second
 * half; without one, after the last write of held storage there; else none
 * (n). */
static int window_cut_at(const ty_runtime *rt) {
  const int n = rt->nwindow;
  for (int j = n - 1; j >= n / 2; j--)
    if (scalar_result(rt->window[j])) return j + 1;
  for (int j = n - 1; j >= n / 2; j--)
    if (writes_held(rt, rt->window[j])) return j + 1;
  return n;
}

/* A flush made because the window is full runs the prefix that ends at the
 * cut (window_cut_at) and keeps the rest (appended after it, in program
 * order) for the next window. A loop body with a dot product (CG) then
 * flushes at the same place of its iteration every time: its stencil group
 * is not cut by where the window happened to fill, and each window has the
 * structure of the one before (the fusion cache replays it). A body without
 * one flushes after an assignment: the stencil's `center[{}] = (...) * 0.2`
 * stays one line-buffered pass instead of an expression run into a
 * temporary in one window and its copy in the next. TYCHO_WINDOW_CUT=0: the
 * whole window. */
static ty_status flush_full(ty_runtime *rt) {
  const int n = rt->nwindow;
  if (!rt->window_cut) rt->window_cut = ty__env_off("TYCHO_WINDOW_CUT") ? -1 : 1; /* checked by runtime.c */
  const int cut = rt->window_cut > 0 ? window_cut_at(rt) : n;
  if (cut == n) return flush_deferring(rt);
  const int rest = n - cut;
  ty_pending *local[64];
  ty_pending **held = rest <= 64 ? local : ty__malloc((size_t)rest * sizeof *held);
  if (!held) return flush_deferring(rt);
  memcpy(held, rt->window + cut, (size_t)rest * sizeof *held);
  rt->nwindow = cut;
  ty_status st = flush_deferring(rt); /* the window's array may be a new one after it */
  memcpy(rt->window, held, (size_t)rest * sizeof *held);
  rt->nwindow = rest;
  if (held != local) free(held);
  return st;
}

/* Everything ty_launch promises to check of a description from outside. */
static ty_status check_launch(ty_runtime *rt, const ty_launch_desc *d) {
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
  return TY_OK;
}

ty_status ty__window_append(ty_runtime *rt, const ty_launch_desc *d) {
  ty_status st = check_launch(rt, d);
  return st ? st : ty__window_append_valid(rt, d);
}

/* The checks above cost ~130 instructions of a small operation's ~4,400;
 * ops.c's element-wise launches (a new output store, inputs viewed to the
 * domain's shape) pass them by construction and come here directly, through
 * ty__window_append_ew: this body in line there, without the description's
 * scalars, options, origin and limits (~30 instructions an op to fill the
 * description and test them). */
__attribute__((always_inline)) static inline ty_status append_valid(ty_runtime *rt,
                                                                   const ty_launch_desc *d,
                                                                   bool fresh_out) {
  const char *name = d->task->name;
  /* a write forgets the bounds its store's op left (range.c); an
   * element-wise launch writes only its new output (fresh_out), whose
   * storage was made without any (~25 instructions an op) */
  if (!fresh_out)
    for (int i = 0; i < d->nargs; i++)
      if (writes(d->args[i].priv)) ty__range_clear(d->args[i].store);
  /* resolved into a scratch copy when it is the launch's own: the launch
   * record is taken after the flushes below */
  ty_resolved own;
  const ty_resolved *pol = ty__policy_resolve(rt, d->task, d->args, d->nargs, d->options, &own);
  /* a window is scheduled under one favor and streamed under one budget: a
   * change of either flushes it. A streamed scope is not flushed when the
   * window is full: the window grows, up to TY_MAX_STREAM_WINDOW launches. */
  const ty_resolved *pol0 = rt->nwindow > 0 ? rt->window[0]->pol : NULL;
  if (pol0 && pol0 != pol && (pol0->p.favor != pol->p.favor || pol0->p.memory != pol->p.memory ||
                              pol0->p.stream_relaxed != pol->p.stream_relaxed)) {
    ty_status st = flush_deferring(rt);
    if (st) return st;
  }
  if (rt->nwindow >= (pol->p.memory > 0 ? rt->window_cap : rt->cfg.window)) {
    ty_status st = TY_OK;
    if (pol->p.memory > 0 && rt->window_cap < TY_MAX_STREAM_WINDOW) {
      int cap = rt->window_cap * 2 < TY_MAX_STREAM_WINDOW ? rt->window_cap * 2 : TY_MAX_STREAM_WINDOW;
      ty_pending **nw = ty__realloc(rt->window, (size_t)cap * sizeof *nw);
      if (nw) {
        rt->window = nw;
        rt->window_cap = cap;
      } else {
        st = flush_deferring(rt); /* no memory to grow: stream what is there */
      }
    } else {
      st = flush_full(rt);
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
    ty__store_retain(l->args[i].store);
  }
  l->scalar_bytes = d->scalar_bytes;
  if (d->scalar_bytes) memcpy(l->scalars, d->scalars, d->scalar_bytes);
  if ((d->task->flags & TY__TASK_FASTMATH_ARG) && pol->p.fastmath && l->scalar_bytes == 0) {
    const int64_t one = 1;
    memcpy(l->scalars, &one, sizeof one);
    l->scalar_bytes = sizeof one;
  }
  l->max_pieces = d->max_pieces;
  l->nosplit = d->nosplit;
  l->fused = 0;
  l->fused_ops[0] = 0;
  l->fuse_end.kind = TY_NOTE_NONE;
  l->fop = 0;
  l->lb_arg = 0;
  l->origin[0] = 0;
  if (d->origin) snprintf(l->origin, sizeof l->origin, "%s", d->origin);
  l->pol = ty__pol_keep(pol, &l->own_pol);
  if (l->pol->mode_from_hint) {
    /* what a hinted store drives is split like it (the hint's axes travel) */
    const ty_store *src = NULL;
    for (int i = 0; i < d->nargs && !src; i++)
      if (d->args[i].store->id == l->pol->hint_store) src = d->args[i].store;
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

ty_status ty__window_append_valid(ty_runtime *rt, const ty_launch_desc *d) {
  return append_valid(rt, d, false);
}

ty_status ty__window_append_ew(ty_runtime *rt, const ty_task *task, int ndim, const int64_t *domain,
                               int nargs, const ty_arg *args) {
  const ty_launch_desc d = {.task = task, .ndim = ndim, .domain = domain, .nargs = nargs, .args = args};
  return append_valid(rt, &d, true);
}

/* ---- the launch graph and waves ------------------------------------------------- */

/* Scratch arrays of the graph, kept in the runtime between flushes. */
typedef struct graph_space {
  int *dep_ptr, *dep_idx, *mark;
  int64_t *buf_bytes;
  int *user_ptr, *user_idx;
  ty_storage **storages;
  int *last_writer, *reader_head, *reader_next, *reader_launch, *nstores, *buf_of;
  int *writer_next, *writer_launch, *nwriters; /* last_writer: the head of a writer set */
  bool *writer_total; /* a write every later access follows (total_write, or the set was full) */
  const ty_arg **writer_arg;
  bool host_only; /* no launch may run on a GPU, one rank: no_hazard applies */
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
  free(gs->writer_arg); /* one block with writer_next, writer_launch, nwriters, writer_total */
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

/* The box of view v in its storage's row-major index space: per-dim
 * positions from its offset (largest stride first) and the remainder below
 * the last stride. False unless the strides fall strictly and each row of
 * the view stays inside the stride above it: then an element's position is
 * unique (mixed radix), and two views with the same strides and remainder
 * share an element only if their boxes meet. */
static bool view_box(const ty_store *v, int64_t *lo, int64_t *rem) {
  int64_t o = v->offset;
  for (int d = 0; d < v->ndim; d++) {
    const int64_t sd = v->strides[d];
    if (sd <= 0 || (d > 0 && sd >= v->strides[d - 1]) || v->shape[d] < 1) return false;
    lo[d] = o / sd;
    o -= lo[d] * sd;
    if (d > 0 && (lo[d] + v->shape[d]) * sd > v->strides[d - 1]) return false;
  }
  *rem = o;
  return v->ndim > 0 && o >= 0;
}

/* Boxes are looked at in storages of 128 KiB or more: from there on
 * (REG_MIN_ELEMS f64 elements) plan/regions.c cuts shifted updates into
 * regions, and their launches share one wave, whose pieces the executor
 * runs on the worker holding their rows (exec.c, home_slots). Below,
 * comparing them cost ~3% of CG 64 x 64's instructions. At 1 MiB before
 * the homes, CG 256 x 256's regions in one wave, their pieces claimed by
 * whichever worker was free, were 8-15% slower than one wave a region
 * (bench/README.md "cg 65K in one wave: session 18"). */
enum { BOX_MIN_BYTES = 1 << 17 };

/* View v is its whole storage in C order: every other non-empty view of the
 * storage meets it. The common case (element-wise launches), checked first:
 * it needs no boxes. */
static bool whole(const ty_store *v) {
  if (v->offset != 0 || (size_t)v->size * ty__dtype_size(v->dtype) != v->storage->nbytes) return false;
  int64_t st = 1;
  for (int d = v->ndim - 1; d >= 0; d--) {
    if (v->shape[d] != 1 && v->strides[d] != st) return false;
    st *= v->shape[d];
  }
  return true;
}

/* Views u and v of one storage as boxes of one index space (the same rank,
 * element size, strides and remainder): their positions. */
static bool boxes_of(const ty_store *u, const ty_store *v, int64_t *ulo, int64_t *vlo) {
  if (u->ndim != v->ndim || ty__dtype_size(u->dtype) != ty__dtype_size(v->dtype)) return false;
  for (int d = 0; d < u->ndim; d++)
    if (u->strides[d] != v->strides[d]) return false;
  int64_t urem, vrem;
  return view_box(u, ulo, &urem) && view_box(v, vlo, &vrem) && urem == vrem;
}

/* Two accesses of one storage that may share a wave: reductions of one
 * operator into one store, whose private tiles the executor combines in
 * program order at the end of the wave (exec.c, finish, member after
 * member), or any two through boxes that are apart (the edge regions of
 * CG's Laplacian, plan/regions.c: at 2048 x 2048 they were 8 waves of one
 * piece an iteration, now they share the inside's wave). Not with GPUs or
 * several ranks, whose executors order a wave otherwise. */
static bool no_hazard(const graph_space *gs, const ty_arg *a, const ty_arg *b) {
  if (!gs->host_only) return false;
  if (a->priv == TY_PRIV_REDUCE && b->priv == TY_PRIV_REDUCE && a->redop == b->redop &&
      a->store->dtype == b->store->dtype)
    return true;
  if (a->store->storage->nbytes < BOX_MIN_BYTES || a->store == b->store || whole(a->store) ||
      whole(b->store))
    return false;
  int64_t alo[TY_MAX_RANK], blo[TY_MAX_RANK];
  if (!boxes_of(a->store, b->store, alo, blo)) return false;
  for (int d = 0; d < a->store->ndim; d++)
    if (alo[d] + a->store->shape[d] <= blo[d] || blo[d] + b->store->shape[d] <= alo[d]) return true;
  return false;
}

/* Write a has no access apart from it (no_hazard is false with anything:
 * it is no box, or the whole storage): what follows it follows everything
 * it followed. */
static bool total_write(const graph_space *gs, const ty_arg *a) {
  int64_t lo[TY_MAX_RANK], rem;
  return !gs->host_only ||
         (a->priv != TY_PRIV_REDUCE && (a->store->storage->nbytes < BOX_MIN_BYTES || whole(a->store) ||
                                        !view_box(a->store, lo, &rem)));
}

/* Every access apart from write a is apart from the earlier write w too
 * (w's box inside a's): once a follows w, w may leave the writer set. */
static bool covers(const ty_arg *a, const ty_arg *w) {
  int64_t alo[TY_MAX_RANK], wlo[TY_MAX_RANK];
  if (a->priv == TY_PRIV_REDUCE || !boxes_of(a->store, w->store, alo, wlo)) return false;
  for (int d = 0; d < a->store->ndim; d++)
    if (wlo[d] < alo[d] || wlo[d] + w->store->shape[d] > alo[d] + a->store->shape[d]) return false;
  return true;
}

enum { WRITER_SET_MAX = 16 }; /* writes of one storage kept apart in a window */

/* After launch j's accesses: its write of storage t through arg a joins t's
 * writer set, the writes that a later access may have to follow (each
 * access follows those it is not apart from). The writes j followed and
 * covers leave it. A total write, or one that finds the set full (it is
 * made to follow them all and every later access follows it), replaces the
 * set and the readers of t (it followed them all); otherwise the readers
 * stay: a later write apart from j must still follow them. */
static bool note_write(graph_space *gs, int *k, size_t *cap, int j, int t, const ty_arg *a, int entry) {
  bool total = total_write(gs, a);
  if (!total && gs->nwriters[t] >= WRITER_SET_MAX) {
    for (int e = gs->last_writer[t]; e >= 0; e = gs->writer_next[e])
      if (gs->writer_launch[e] != j && !add_dep(gs, k, cap, j, gs->writer_launch[e])) return false;
    total = true;
  }
  int keep = -1, n = 0;
  for (int e = gs->last_writer[t]; e >= 0;) {
    const int next = gs->writer_next[e];
    bool kept = gs->writer_launch[e] == j;
    if (!kept && !total) /* it stays unless j follows it (add_dep's mark) and covers it */
      kept = gs->mark[gs->writer_launch[e]] != j || !covers(a, gs->writer_arg[e]);
    if (kept) {
      gs->writer_next[e] = keep; /* kept (the order of the set does not matter) */
      keep = e;
      n++;
    }
    e = next;
  }
  gs->nwriters[t] = n;
  if (total) gs->reader_head[t] = -1;
  gs->writer_launch[entry] = j;
  gs->writer_arg[entry] = a;
  gs->writer_total[entry] = total;
  gs->writer_next[entry] = keep;
  gs->last_writer[t] = entry;
  gs->nwriters[t]++;
  return true;
}

/* No launch of the window may run on a GPU, one rank, no storage with a GPU
 * copy: no_hazard applies. */
static bool window_host_only(const ty_runtime *rt, ty_pending *const *w, int n) {
  bool host = rt->dist.nranks <= 1 && !rt->gstores;
  for (int j = 0; j < n && host; j++) host = !ty__gpu_may_run(rt, w[j]);
  return host;
}

/* Dependences, in one pass over the arguments: a launch follows each writer
 * of a storage it touches since the last write that followed them all
 * (unless no_hazard) and, when it writes, every reader since (views of one
 * storage count as overlapping for readers). Transient buffers: storage
 * not allocated before the flush and held only by the window's launches, so
 * it is allocated and freed inside the window. */
static ty_status build_graph(ty_runtime *rt, ty_pending **w, int n, bool host_only, graph_space *gs,
                             ty_graph *g) {
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
  /* the writer sets in one block (a flush of CG 64 x 64 is ~2k instructions) */
  gs->writer_arg = ty__malloc(na * (sizeof(const ty_arg *) + 3 * sizeof(int) + sizeof(bool)));
  if (gs->writer_arg) {
    gs->writer_next = (int *)(gs->writer_arg + na);
    gs->writer_launch = gs->writer_next + na;
    gs->nwriters = gs->writer_launch + na;
    gs->writer_total = (bool *)(gs->nwriters + na);
  }
  if (!gs->writer_arg || !gs->dep_ptr || !gs->dep_idx || !gs->mark || !gs->buf_bytes || !gs->user_ptr ||
      !gs->user_idx || !gs->storages || !gs->last_writer || !gs->reader_head ||
      !gs->reader_next || !gs->reader_launch || !gs->nstores || !gs->buf_of ||
      !gs->window_only || !gs->stores) {
    graph_free(gs);
    return TY_ENOMEM;
  }
  gs->host_only = host_only;
  uint64_t epoch = ++rt->flush_epoch;
  int nts = 0, nstores = 0, k = 0, nreaders = 0, nentries = 0;
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
        gs->nwriters[nts] = 0;
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
      bool ok = true;
      for (int e = gs->last_writer[t]; ok && e >= 0; e = gs->writer_next[e])
        if (gs->writer_launch[e] != j && (gs->writer_total[e] || !no_hazard(gs, gs->writer_arg[e], arg)))
          ok = add_dep(gs, &k, &dep_cap, j, gs->writer_launch[e]);
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
        if (!note_write(gs, &k, &dep_cap, j, t, arg, nentries++)) {
          graph_free(gs);
          return TY_ENOMEM;
        }
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

/* The waves of window w (n launches) under favor into wave_of and *ss; the
 * debug schedule (one launch a wave, ss as it was) without memory for the
 * graph. A window the fusion cache replayed takes the waves kept with its
 * decision (fuse_cache.h), which debug builds check against a fresh graph. */
static void schedule_window(ty_runtime *rt, ty_pending **w, int n, ty_favor favor, int *wave_of,
                            ty_sched_stats *ss) {
  const bool host = window_host_only(rt, w, n);
  graph_space gs;
  ty_graph g;
  if (ty__fcache_waves(rt, n, (int)favor, host, wave_of, ss)) {
#ifndef NDEBUG
    int *fresh = ty__malloc((size_t)n * sizeof *fresh);
    ty_sched_stats fs;
    if (fresh && build_graph(rt, w, n, host, &gs, &g) == TY_OK) {
      if (ty__schedule(&g, favor, fresh, &fs) == TY_OK) {
        assert(memcmp(fresh, wave_of, (size_t)n * sizeof *fresh) == 0);
        assert(fs.waves == ss->waves && fs.critical_path == ss->critical_path);
        /* the figures that need memory of their own (fill_stats, the peak's
         * simulation) are left out when an allocation failed, either time */
        if (fs.widest > 0 && ss->widest > 0 && fs.peak_transient >= 0 && ss->peak_transient >= 0)
          assert(fs.widest == ss->widest && fs.concurrent == ss->concurrent &&
                 fs.peak_transient == ss->peak_transient);
      }
      graph_free(&gs);
    }
    free(fresh);
#endif
    return;
  }
  if (build_graph(rt, w, n, host, &gs, &g) != TY_OK) {
    for (int i = 0; i < n; i++) wave_of[i] = i;
    return;
  }
  if (ty__schedule(&g, favor, wave_of, ss) != TY_OK) ss->waves = n;
  else ty__fcache_keep_waves(rt, n, (int)favor, host, wave_of, ss);
  graph_free(&gs);
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

/* Nanoseconds since *t, which becomes now. */
static uint64_t phase_ns(uint64_t *t) {
  const uint64_t now = ty__now_ns(), d = now - *t;
  *t = now;
  return d;
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
  /* where the time goes (ty_set_timing): each phase's end is the next's start */
  const bool timing = rt->timing;
  const uint64_t tm0 = timing ? ty__now_ns() : 0;
  uint64_t tm = tm0;
  if (rt->flush_hook) {
    rt->flush_hook(rt->flush_hook_ud);
    if (timing) rt->stats.collect_ns += phase_ns(&tm);
  }
  if (rt->dist.nranks > 1 && rt->dist.check) ty__dist_check(rt, rt->window, rt->nwindow);
  rt->stats.flushes++;
  rt->window_gen++; /* storage made from now on belongs to the next window */
  uint64_t explained = rt->nexplained;
  ty__bincount_merge(rt); /* before fusion: bincounts of the same labels in one pass */
  ty__fuse(rt);
  ty__fuse_gemv(rt);
  if (timing) rt->stats.fuse_ns += phase_ns(&tm);
  ty_status first = TY_OK;
  char firstmsg[TY_ERRLEN] = "";
  int n = rt->nwindow;
  ty_pending **w = rt->window;

  /* schedule into waves under the window's favor (one favor per window);
   * without memory for the graph, run one launch per wave */
  ty_favor favor = w[0]->pol->p.favor;
  int *wave_of = ty__malloc((size_t)n * sizeof *wave_of);
  int *members = ty__malloc((size_t)n * sizeof *members);
  ty_sched_stats ss = {.waves = n, .critical_path = n, .widest = 1};
  ty_flush_stats sf = {0};
  bool streamed = n > 0 && w[0]->pol->p.memory > 0;
  if (streamed) {
    /* a streamed scope: launches run piece by piece, in program order */
    first = ty__stream_run(rt, w, n, &sf, firstmsg, sizeof firstmsg);
    for (int i = 0; i < n; i++) {
      launch_release(w[i]);
      w[i] = NULL;
    }
  } else if (wave_of && members) {
    schedule_window(rt, w, n, favor, wave_of, &ss);
  } else if (wave_of) {
    for (int i = 0; i < n; i++) wave_of[i] = i;
  }
  if (timing && !streamed) rt->stats.schedule_ns += phase_ns(&tm);
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
    ty__exec_wave(rt, w, mem, count, wave, ss.waves, &first, firstmsg, sizeof firstmsg);
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
  /* explain shows every launch with the figures of its flush: its records
   * point at this slot (ty__explain_next) */
  if (rt->nexplained > explained) rt->flush_log[rt->nflush_log++ % TY_EXPLAIN_KEEP] = rt->last_flush;
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
  if (rt->gstores) { /* attached buffers hold their values when a flush returns */
    ty_status gst = ty__gpu_flush_end(rt);
    if (gst && !first) {
      first = gst;
      snprintf(firstmsg, sizeof firstmsg, "%s", rt->errmsg);
    }
  }
  if (rt->cfg.explain) ty__explain_print(rt, explained, stderr);
  if (timing) rt->stats.flush_ns += ty__now_ns() - tm0;
  if (first) ty__fail(rt, first, "%s", firstmsg);
  return first;
}
