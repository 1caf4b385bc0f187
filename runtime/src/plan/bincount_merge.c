/*
 * bincount_merge.c — bincounts of the same labels in one pass.
 *
 * k-means makes three bincounts of one label store per iteration (the
 * counts and the weights of each coordinate); each is a launch that reads
 * all the labels (ops_index.c). Before fusion, a bincount launch takes the
 * later bincounts of the same labels view (same domain, base, policy and
 * piece size) within BC_LOOKAHEAD launches as extra outputs: one pass reads
 * each label once and adds into every output. The launch keeps its
 * position, so a partner B is moved up to it; that keeps every dependence
 * when the launches in between write neither the labels' nor B's weights'
 * storage and touch B's output only to fill it (ty_full's zeroing: a launch
 * writing that storage alone), and those fills are moved up before the
 * merged launch. The pieces are the same as each launch's own (same domain,
 * policy and widest element), and each output's bins add their terms in the
 * same order, so every result has the same bits as unmerged.
 */
#include "internal.h"
#include "regions.h"

#include <stdio.h>
#include <string.h>

#define BC_LOOKAHEAD 16

static bool writes(ty_privilege p) { return p != TY_PRIV_IN; }

/* the widest aligned element: what partition.c sizes pieces by */
static size_t widest(const ty_pending *l) {
  size_t es = 1;
  for (int i = 0; i < l->nargs; i++) {
    const size_t s = ty_dtype_size(l->args[i].store->dtype);
    if (l->args[i].proj == TY_PROJ_ALIGNED && s > es) es = s;
  }
  return es;
}

static bool is_bincount(const ty_pending *l, const ty_task *bc) {
  return l->task == bc && l->scalar_bytes == sizeof(ty__bincount_args) && l->pol->p.fuse &&
         l->pol->p.memory == 0;
}

static bool compatible(const ty_pending *a, const ty_pending *b) {
  ty__bincount_args sa, sb;
  memcpy(&sa, a->scalars, sizeof sa);
  memcpy(&sb, b->scalars, sizeof sb);
  if (sb.nmore != 0 || sa.nmore >= TY__BINCOUNT_MAX || sa.base != sb.base) return false;
  if (a->ndim != b->ndim || a->nosplit != b->nosplit || a->max_pieces != b->max_pieces) return false;
  for (int d = 0; d < a->ndim; d++)
    if (a->domain[d] != b->domain[d]) return false;
  const ty_policy *pa = &a->pol->p, *pb = &b->pol->p;
  if (pa->mode != pb->mode || pa->overdecompose != pb->overdecompose || pa->min_chunk != pb->min_chunk ||
      pa->target != pb->target)
    return false;
  return ty__same_view(a->args[1].store, b->args[1].store) && widest(a) == widest(b) &&
         a->nargs + b->nargs - 1 <= TY_MAX_ARGS;
}

static bool touches(const ty_pending *l, const ty_storage *s) {
  for (int j = 0; j < l->nargs; j++)
    if (l->args[j].store->storage == s) return true;
  return false;
}

static bool writes_storage(const ty_pending *l, const ty_storage *s) {
  for (int j = 0; j < l->nargs; j++)
    if (l->args[j].store->storage == s && writes(l->args[j].priv)) return true;
  return false;
}

/* Whether b (at q) may move up to a (at i): see the header. */
static bool movable(ty_pending *const *w, int i, int q) {
  const ty_pending *a = w[i], *b = w[q];
  const ty_storage *out = b->args[0].store->storage, *x = b->args[1].store->storage;
  const ty_storage *wt = b->nargs > 2 ? b->args[2].store->storage : NULL;
  if (touches(a, out)) return false;
  for (int k = i + 1; k < q; k++) {
    const ty_pending *l = w[k];
    if (writes_storage(l, x) || (wt && writes_storage(l, wt))) return false;
    if (touches(l, out) && !(l->nargs == 1 && writes(l->args[0].priv) && l->pol->p.memory == 0)) return false;
  }
  return true;
}

/* b's arguments and scalars appended to a's; b's fills (between i and q)
 * moved before a; b dropped. Returns the new index of a. */
static int merge(ty_runtime *rt, ty_pending **w, int *n, int i, int q) {
  ty_pending *a = w[i], *b = w[q];
  const ty_storage *out = b->args[0].store->storage;
  ty__bincount_args sa, sb;
  memcpy(&sa, a->scalars, sizeof sa);
  memcpy(&sb, b->scalars, sizeof sb);
  a->args[a->nargs++] = b->args[0];
  if (sb.weighted) a->args[a->nargs++] = b->args[2];
  sa.more_weighted[sa.nmore++] = sb.weighted != 0;
  memcpy(a->scalars, &sa, sizeof sa);
  /* explain: "fused 3 launches: bincount bincount bincount" */
  a->fused = 1 + sa.nmore;
  size_t len = 0;
  for (int k = 0; k < a->fused && len + 10 < sizeof a->fused_ops; k++)
    len += (size_t)snprintf(a->fused_ops + len, sizeof a->fused_ops - len, "%sbincount", k ? " " : "");
  /* b's stores now belong to a: release only x (b's own reference) */
  ty_store *bx = b->args[1].store;
  b->nargs = 0;
  ty__pending_drop(rt, b);
  ty_store_release(bx);
  /* order: [fills of out] a [the rest between i and q] [after q] */
  int moved = 0;
  for (int k = i + 1; k < q; k++)
    if (touches(w[k], out)) moved++;
  if (moved) {
    ty_pending *tmp[BC_LOOKAHEAD];
    int nf = 0, nr = 0;
    ty_pending *rest[BC_LOOKAHEAD];
    for (int k = i + 1; k < q; k++) {
      if (touches(w[k], out)) tmp[nf++] = w[k];
      else rest[nr++] = w[k];
    }
    int at = i;
    for (int k = 0; k < nf; k++) w[at++] = tmp[k];
    w[at++] = a;
    for (int k = 0; k < nr; k++) w[at++] = rest[k];
  }
  memmove(w + q, w + q + 1, (size_t)(*n - q - 1) * sizeof *w);
  (*n)--;
  return i + moved;
}

/* The bincount task when a launch of the window runs it, else NULL: task
 * names are unique, and a scan of the window's scalar sizes costs less than
 * ty_task_find's string compares over every task, which were ~2,300
 * instructions of every flush of a small-array loop. */
static const ty_task *window_bincount(ty_pending *const *w, int n) {
  for (int i = 0; i < n; i++)
    if (w[i]->scalar_bytes == sizeof(ty__bincount_args) && strcmp(w[i]->task->name, "bincount") == 0)
      return w[i]->task;
  return NULL;
}

void ty__bincount_merge(ty_runtime *rt) {
  if (rt->nwindow < 2 || rt->dist.nranks > 1) return;
  ty_pending **w = rt->window;
  int n = rt->nwindow;
  const ty_task *bc = window_bincount(w, n);
  if (!bc) return;
  for (int i = 0; i < n; i++) {
    if (!is_bincount(w[i], bc)) continue;
    for (int q = i + 1; q < n && q <= i + BC_LOOKAHEAD;) {
      if (is_bincount(w[q], bc) && compatible(w[i], w[q]) && movable(w, i, q)) {
        i = merge(rt, w, &n, i, q);
        q = i + 1;
        continue;
      }
      q++;
    }
  }
  rt->nwindow = n;
}
