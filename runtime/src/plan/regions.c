/*
 * regions.c — shifted in-place updates of one store, cut into regions so
 * that they fuse (ty__fuse calls it before it cuts runs).
 *
 * A matrix-free Laplacian writes one store S and then updates it through
 * shifted views of itself:
 *
 *   Av = v * 4.0
 *   Av[{{2, -1}, {}}] = Av[{{2, -1}, {}}] - v[{{1, -2}, {}}]
 *   Av[{{1, -2}, {}}] = Av[{{1, -2}, {}}] - v[{{2, -1}, {}}]
 *   ...
 *
 * Each launch is element-wise over its own box of S, and the boxes differ,
 * so fusion (which needs one domain and one view per store) makes a pass
 * over S per update. Cut S's index space at every box's edges: in each
 * region every launch whose box covers it is element-wise over the same
 * sub-box, and the region's launches fuse into one pass. For the Laplacian
 * above, 9 regions (the inside and eight thin edges) replace 5 passes.
 *
 * A group is a run of consecutive launches of the window such that:
 *  - each is a built-in element-wise operation (unary, binary, where, cast,
 *    copy, constant fill) that may fuse (fuse axis on, not task mode, not
 *    streamed), every argument aligned with its domain;
 *  - each touches S through exactly one view; all those views have the same
 *    strides, and each is a box in S's index space (its offset splits into
 *    per-dim positions, rows that never wrap);
 *  - any other storage the group writes is accessed in the group through one
 *    view, by launches of one box (a temporary passed from one launch to the
 *    next); storages the group only reads may be read through any views.
 * Then every flow of data in the group stays at one position of S (a launch
 * at position p of S touches S and every written storage only at p), so
 * launches of different regions are independent and may run region after
 * region; inside a region, program order is kept. Each element sees the
 * same operations in the same order: the same bits as without the cut.
 *
 * A temporary that dies with the group (only the group's launches hold it)
 * becomes one fresh store per region, which fusion then never allocates.
 * Cut only when at least two launches write S through different boxes, S
 * has REG_MIN_ELEMS elements or more, and the regions are few.
 */
#include "alloc.h"
#include "fused.h"
#include "internal.h"
#include "regions.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum {
  REG_MIN_ELEMS = 16384, /* smaller: the edges' extra launches cost more than a pass */
  REG_MAX_GROUP = 64,    /* launches in a group */
  REG_MAX_CUTS = 9,      /* cut points per dim (8 intervals) */
  REG_MAX_REGIONS = 64,
  /* a dot product joins (sum_tail) from 4 ordered tiles of its sum: below,
   * the inside region's sum would be one tile, one piece on one processor,
   * where the Laplacian alone runs on all of them */
  REG_MIN_SUM_ELEMS = 4 * TY__ORDER_CHUNK,
};

typedef struct box {
  int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
} box;

/* A storage other than S the group touches. */
typedef struct other {
  ty_storage *stg;
  ty_store *view; /* its first view */
  int member;     /* the member it was first seen in (its box) */
  bool written;   /* some member writes it */
  bool spread;    /* read through another view or box: never written then */
  bool first_out; /* its first access writes it whole (OUT) */
} other;

typedef struct group {
  ty_storage *S;
  int nd;
  int64_t strides[TY_MAX_RANK];
  ty_pending *fill; /* a dot product's tail (sum_tail): its 0-d output's fill */
  int n;
  ty_pending *m[REG_MAX_GROUP];
  box b[REG_MAX_GROUP];
  int no, cap;
  other *o;
} group;

static bool writes(ty_privilege p) { return p != TY_PRIV_IN; }

static bool same_box(const box *a, const box *b, int nd) {
  for (int d = 0; d < nd; d++)
    if (a->lo[d] != b->lo[d] || a->hi[d] != b->hi[d]) return false;
  return true;
}

/* A built-in element-wise launch that may fuse, every argument aligned with
 * its domain (shapes equal), at least one dim. */
static bool eligible(const ty_runtime *rt, const ty_pending *l) {
  if (!l->pol->p.fuse || l->pol->p.mode == TY_MODE_TASK || l->pol->p.memory > 0 || l->ndim < 1)
    return false;
  if (l->task->omp && rt->cfg.omps > 0) return false;
  ty__fsub sub;
  ty__fillval fill;
  if (!ty__fuse_builtin(rt, l, &sub, &fill)) return false;
  if (sub.kind != TY__FK_UNARY && sub.kind != TY__FK_BINARY && sub.kind != TY__FK_WHERE &&
      sub.kind != TY__FK_CAST && sub.kind != TY__FK_FILL)
    return false;
  for (int i = 0; i < l->nargs; i++) {
    const ty_arg *a = &l->args[i];
    if (a->proj != TY_PROJ_ALIGNED || a->priv == TY_PRIV_REDUCE || a->store->ndim != l->ndim)
      return false;
    if (a->priv != TY_PRIV_OUT && a->store->storage->cancelled) return false;
    for (int d = 0; d < l->ndim; d++)
      if (a->store->shape[d] != l->domain[d]) return false;
  }
  return true;
}

/* The box of view v in S's index space: its offset split into per-dim
 * positions by the group's strides (largest first). */
static bool view_box(const group *g, const ty_store *v, box *b) {
  if (v->ndim != g->nd) return false;
  int64_t rest = v->offset;
  for (int d = 0; d < g->nd; d++) {
    if (v->strides[d] != g->strides[d]) return false;
    b->lo[d] = rest / g->strides[d];
    rest -= b->lo[d] * g->strides[d];
    b->hi[d] = b->lo[d] + v->shape[d];
  }
  return rest == 0;
}

static other *find_other(group *g, const ty_storage *stg) {
  for (int i = 0; i < g->no; i++)
    if (g->o[i].stg == stg) return &g->o[i];
  return NULL;
}

/* Adds launch l to the group; false (the group unchanged) when it does not
 * belong. */
static bool add(const ty_runtime *rt, group *g, ty_pending *l) {
  if (g->n == REG_MAX_GROUP || !eligible(rt, l)) return false;
  const ty_store *sv = NULL;
  for (int i = 0; i < l->nargs; i++) {
    const ty_store *s = l->args[i].store;
    if (s->storage != g->S) continue;
    if (sv && !ty__same_view(sv, s)) return false; /* S through two views: a stencil on S */
    sv = s;
  }
  if (!sv) return false;
  if (g->n == 0) {
    g->nd = sv->ndim;
    for (int d = 0; d < g->nd; d++) {
      g->strides[d] = sv->strides[d];
      if (g->strides[d] <= 0 || (d > 0 && g->strides[d] >= g->strides[d - 1])) return false;
    }
  }
  box b;
  if (!view_box(g, sv, &b)) return false;
  if (g->no + l->nargs > g->cap) {
    int cap = g->cap ? g->cap * 2 : 32;
    while (cap < g->no + l->nargs) cap *= 2;
    other *o = ty__realloc(g->o, (size_t)cap * sizeof *o);
    if (!o) return false;
    g->o = o;
    g->cap = cap;
  }
  /* check every argument before changing anything: a launch may name one
   * storage twice */
  const int no0 = g->no;
  other saved[TY_MAX_ARGS];
  int nsaved = 0;
  bool ok = true;
  for (int i = 0; i < l->nargs && ok; i++) {
    const ty_arg *a = &l->args[i];
    if (a->store->storage == g->S) continue;
    other *o = find_other(g, a->store->storage);
    if (!o) {
      o = &g->o[g->no++];
      *o = (other){a->store->storage, a->store, g->n, writes(a->priv), false, a->priv == TY_PRIV_OUT};
      continue;
    }
    if (o - g->o < no0 && nsaved < TY_MAX_ARGS) saved[nsaved++] = *o;
    const bool same = ty__same_view(o->view, a->store) && same_box(&g->b[o->member], &b, g->nd);
    if (!same) {
      if (o->written || writes(a->priv)) ok = false; /* data would cross positions */
      o->spread = true;
    } else if (writes(a->priv)) {
      if (o->spread) ok = false;
      o->written = true;
    }
  }
  if (!ok || nsaved == TY_MAX_ARGS) { /* undo */
    for (int k = nsaved - 1; k >= 0; k--) *find_other(g, saved[k].stg) = saved[k];
    g->no = no0;
    return false;
  }
  g->m[g->n] = l;
  g->b[g->n] = b;
  g->n++;
  return true;
}

/* Ends the group at its last launch that writes S: a launch after it only
 * reads S, and cut, its output (which outlives the group) would be written
 * region by region instead of fusing with what reads it next. */
static void trim(const ty_runtime *rt, group *g, ty_pending **w) {
  int last = -1;
  for (int k = 0; k < g->n; k++)
    for (int i = 0; i < g->m[k]->nargs; i++)
      if (g->m[k]->args[i].store->storage == g->S && writes(g->m[k]->args[i].priv)) last = k;
  if (last == g->n - 1) return;
  g->n = g->no = 0; /* the others table again, for the launches kept */
  for (int k = 0; k <= last; k++) add(rt, g, w[k]);
}

/* A dot product of S with another store right after the group's last
 * writer of S: `t = v * S` (a built-in element-wise launch reading S and
 * writing t, add's rules), the fill of a 0-d store R, `R += sum(t)` (a whole
 * sum with R REDUCE, over t's view and domain). The product and the sum
 * join the group, the sum as its last member over the product's box, and
 * the fill stays whole, emitted right before the first region's sum (it
 * touches only R, which no member touches; emit): each region then sums its
 * own part of t into R, in the fused
 * run that computes S there (CG's p.Ap in the Laplacian's pass). The sum's
 * order changes from the whole t's tree to region after region, each region
 * its own ordered tree, all fixed by the shapes: other bits, the same on any
 * number of processors. n: launches of the window from the group's start.
 * False (the group unchanged) when the tail is not there. */
static bool sum_tail(const ty_runtime *rt, group *g, ty_pending **w, int n) {
  if (g->n < 1 || g->n + 3 > n || g->n + 2 > REG_MAX_GROUP) return false;
  ty_pending *mul = w[g->n], *fill = w[g->n + 1], *red = w[g->n + 2];
  ty__fsub sub;
  ty__fillval fv;
  /* the fill: a 0-d store that no member touches, set to +0 (the sum's
   * identity: emit relies on it) */
  static const ty__fillval zero = {0, 0};
  if (!ty__fuse_builtin(rt, fill, &sub, &fv) || sub.kind != TY__FK_FILL || fill->ndim != 0 ||
      fill->args[0].store->ndim != 0 || memcmp(&fv, &zero, sizeof fv) != 0)
    return false;
  ty_storage *R = fill->args[0].store->storage;
  if (R == g->S || find_other(g, R)) return false;
  /* the sum: R REDUCE (stride 0 everywhere), the input aligned */
  if (!ty__fuse_builtin(rt, red, &sub, &fv) || sub.kind != TY__FK_REDUCE || sub.op != TY__RSUM ||
      (sub.flags & TY__FS_INIT_OUT) || red->nargs != 2 || red->ndim != g->nd ||
      !red->pol->p.fuse || red->pol->p.mode == TY_MODE_TASK || red->pol->p.memory > 0 ||
      (red->task->omp && rt->cfg.omps > 0))
    return false;
  const ty_arg *acc = &red->args[0], *in = &red->args[1];
  if (acc->priv != TY_PRIV_REDUCE || acc->store->storage != R ||
      acc->store->offset != fill->args[0].store->offset || acc->proj != TY_PROJ_ALIGNED ||
      in->priv != TY_PRIV_IN || in->proj != TY_PROJ_ALIGNED || in->store->storage->cancelled)
    return false;
  int64_t elems = 1;
  for (int d = 0; d < g->nd; d++) {
    if (acc->store->strides[d] != 0 || acc->store->shape[d] != red->domain[d]) return false;
    elems *= red->domain[d];
  }
  if (elems < REG_MIN_SUM_ELEMS) return false;
  /* the product: reads S (add checks it), writes t, a storage new to the
   * group that only the sum reads next */
  const ty_storage *t = in->store->storage;
  if (mul->nargs < 2 || mul->args[0].priv != TY_PRIV_OUT || !ty__same_view(mul->args[0].store, in->store) ||
      t == R || t == g->S || find_other(g, t))
    return false;
  for (int i = 1; i < mul->nargs; i++)
    if (mul->args[i].store->storage == t || mul->args[i].store->storage == R) return false;
  for (int d = 0; d < g->nd; d++)
    if (mul->domain[d] != red->domain[d]) return false;
  const int n0 = g->n;
  if (!add(rt, g, mul)) return false;
  g->m[g->n] = red;
  g->b[g->n] = g->b[n0];
  g->n++;
  g->fill = fill;
  return true;
}

/* Two of S's writers in the group write it through different boxes: the
 * group may be cut. Most groups (every whole-store update of a CG
 * iteration) are not, and need neither trim nor sum_tail. */
static bool shifted_writers(const group *g) {
  int first_writer = -1;
  for (int k = 0; k < g->n; k++) {
    const ty_pending *l = g->m[k];
    bool w = false;
    for (int i = 0; i < l->nargs; i++) w |= l->args[i].store->storage == g->S && writes(l->args[i].priv);
    if (!w) continue;
    if (first_writer < 0) first_writer = k;
    else if (!same_box(&g->b[first_writer], &g->b[k], g->nd)) return true;
  }
  return false;
}

/* Worth cutting: two boxes at least among S's writers, rows that never
 * wrap, enough elements, few cuts. Fills the cut points. */
static bool worth_cutting(const group *g, int64_t cuts[][REG_MAX_CUTS], int *ncuts) {
  if (g->n < 2 || !shifted_writers(g)) return false;
  int64_t ext[TY_MAX_RANK] = {0}, elems = 1;
  for (int k = 0; k < g->n; k++)
    for (int d = 0; d < g->nd; d++)
      if (g->b[k].hi[d] > ext[d]) ext[d] = g->b[k].hi[d];
  for (int d = 0; d < g->nd; d++) {
    elems *= ext[d];
    if (d > 0 && g->strides[d - 1] < g->strides[d] * ext[d]) return false; /* rows would wrap */
  }
  if (elems < REG_MIN_ELEMS) return false;
  int64_t regions = 1;
  for (int d = 0; d < g->nd; d++) {
    int nc = 0;
    for (int k = 0; k < g->n; k++) {
      const int64_t v2[2] = {g->b[k].lo[d], g->b[k].hi[d]};
      for (int e = 0; e < 2; e++) {
        int at = 0;
        while (at < nc && cuts[d][at] < v2[e]) at++;
        if (at < nc && cuts[d][at] == v2[e]) continue;
        if (nc == REG_MAX_CUTS) return false;
        memmove(&cuts[d][at + 1], &cuts[d][at], (size_t)(nc - at) * sizeof cuts[d][0]);
        cuts[d][at] = v2[e];
        nc++;
      }
    }
    ncuts[d] = nc;
    regions *= nc - 1;
  }
  return regions <= REG_MAX_REGIONS;
}

/* A written storage whose only holders are the group's launches, first
 * written whole: one fresh store per region replaces it. */
static bool dies_in_group(const group *g, const other *o) {
  if (!o->written || !o->first_out || o->spread || o->stg->external || o->stg->refs != 1) return false;
  const ty_store *s = o->view;
  if (s->offset != 0 || (size_t)s->size * ty__dtype_size(s->dtype) != o->stg->nbytes) return false;
  int held = 0;
  for (int k = 0; k < g->n; k++)
    for (int i = 0; i < g->m[k]->nargs; i++) held += g->m[k]->args[i].store == s;
  return held == s->refs;
}

/* A member writing its whole storage (OUT) is cut into views that together
 * cover it: the storage is marked for this flush, so that a region's view
 * is not zeroed first (exec.c zeroes a storage an OUT view leaves partly
 * unwritten). */
static void covered_mark(const ty_runtime *rt, const ty_pending *l, bool on) {
  const ty_arg *a = &l->args[0];
  const ty_store *s = a->store;
  if (a->priv == TY_PRIV_OUT && s->offset == 0 && !s->storage->data &&
      (size_t)s->size * ty__dtype_size(s->dtype) == s->storage->nbytes)
    s->storage->covered_gen = on ? rt->window_gen : 0;
}

static void covered_marks(const ty_runtime *rt, const group *g, bool on) {
  for (int k = 0; k < g->n; k++) covered_mark(rt, g->m[k], on);
}

typedef struct emitted {
  ty_pending **l;
  int n, cap;
} emitted;

static bool push(emitted *e, ty_pending *l) {
  if (e->n == e->cap) {
    int cap = e->cap ? e->cap * 2 : 64;
    ty_pending **nl = ty__realloc(e->l, (size_t)cap * sizeof *nl);
    if (!nl) return false;
    e->l = nl;
    e->cap = cap;
  }
  e->l[e->n++] = l;
  return true;
}

/* The views a region's launches share: members reading and writing one
 * position of a storage through one view get one store, not one each (CG's
 * Laplacian with p.Ap at 256^2: 99 -> 51 views an iteration, each a
 * store_alloc and a free). The launches hold the references; the table
 * only borrows them, for one region. */
enum { REG_MAX_VIEWS = 32 };
typedef struct shared_views {
  int n;
  ty_store *v[REG_MAX_VIEWS];
} shared_views;

/* The region's view of s's storage at offset off (the region's shape, s's
 * strides), NULL when none yet. */
static ty_store *shared_find(const shared_views *sv, const ty_store *s, int nd, int64_t off) {
  for (int i = 0; i < sv->n; i++) {
    const ty_store *v = sv->v[i];
    if (v->storage != s->storage || v->offset != off || v->dtype != s->dtype) continue;
    bool same = true;
    for (int d = 0; d < nd && same; d++) same = v->strides[d] == s->strides[d];
    if (same) return (ty_store *)v;
  }
  return NULL;
}

/* Member k's launch over region r (inside its box); fresh[] holds the
 * region's stores for the temporaries, views the region's views so far.
 * NULL when out of memory. */
static ty_pending *cut(ty_runtime *rt, const group *g, int k, const box *r, ty_store **fresh,
                       const bool *dies, bool single, shared_views *views) {
  const ty_pending *l = g->m[k];
  const box *b = &g->b[k];
  ty_pending *p = ty__pending_take(rt);
  if (!p) return NULL;
  /* the launch as far as it is used: its arguments and scalar bytes, not
   * the whole ~6 KiB (a CG iteration cuts ~55 launches: 2% of its
   * instructions at 256 x 256 were this copy) */
  memcpy(p, l, offsetof(ty_pending, args) + (size_t)l->nargs * sizeof l->args[0]);
  p->scalar_bytes = l->scalar_bytes;
  memcpy(p->scalars, l->scalars, l->scalar_bytes);
  memcpy(&p->max_pieces, &l->max_pieces, offsetof(ty_pending, own_pol) - offsetof(ty_pending, max_pieces));
  p->pol = ty__pol_keep(l->pol, &p->own_pol);
  if (single) p->max_pieces = 1;
  int64_t shape[TY_MAX_RANK];
  for (int d = 0; d < g->nd; d++) p->domain[d] = shape[d] = r->hi[d] - r->lo[d];
  for (int i = 0; i < l->nargs; i++) {
    ty_store *s = l->args[i].store, *ns = NULL;
    other *o = s->storage == g->S ? NULL : find_other((group *)g, s->storage);
    const int oi = o ? (int)(o - g->o) : -1;
    if (oi >= 0 && dies[oi]) {
      if (!fresh[oi] && ty__store_new(rt, s->dtype, g->nd, shape, &fresh[oi]) != TY_OK) fresh[oi] = NULL;
      ns = fresh[oi];
      if (ns) ty__store_retain(ns);
    } else {
      int64_t off = s->offset;
      for (int d = 0; d < g->nd; d++) off += (r->lo[d] - b->lo[d]) * s->strides[d];
      ns = shared_find(views, s, g->nd, off);
      if (ns) {
        ty__store_retain(ns);
      } else if (ty__store_view(rt, s, g->nd, shape, s->strides, off, &ns) != TY_OK) {
        ns = NULL;
      } else if (views->n < REG_MAX_VIEWS) {
        views->v[views->n++] = ns;
      }
    }
    if (!ns) { /* give back what this launch holds so far */
      for (int j = 0; j < i; j++) ty__store_release(p->args[j].store);
      p->nargs = 0;
      ty__pending_drop(rt, p);
      return NULL;
    }
    p->args[i].store = ns;
  }
  return p;
}

/* Appends the group's launches cut into regions to e (and to made, the
 * launches this pass created); false (nothing appended, the group
 * untouched) when memory runs out. */
static bool emit(ty_runtime *rt, const group *g, int64_t cuts[][REG_MAX_CUTS], const int *ncuts,
                 emitted *e, emitted *made) {
  const int n0 = e->n, m0 = made->n;
  ty_store **fresh = ty__calloc((size_t)g->no + 1, sizeof *fresh);
  bool *dies = ty__calloc((size_t)g->no + 1, sizeof *dies);
  bool ok = fresh && dies;
  for (int i = 0; ok && i < g->no; i++) dies[i] = dies_in_group(g, &g->o[i]);
  /* the regions in order, the largest the sum covers first when a dot
   * product ends the group (sum_tail): its sum may be split into pieces,
   * added into the 0-d output one by one, which gives one piece's bits only
   * while the output holds the fill's 0; the other regions' launches then
   * run as one piece each (max_pieces 1). */
  box regs[REG_MAX_REGIONS];
  int nregs = 0, idx[TY_MAX_RANK] = {0};
  for (;;) {
    box *r = &regs[nregs++];
    for (int d = 0; d < g->nd; d++) {
      r->lo[d] = cuts[d][idx[d]];
      r->hi[d] = cuts[d][idx[d] + 1];
    }
    int d = g->nd - 1;
    while (d >= 0 && ++idx[d] == ncuts[d] - 1) idx[d--] = 0;
    if (d < 0) break;
  }
  if (g->fill) { /* the largest region the sum covers (its box: the last member's) */
    const box *sb = &g->b[g->n - 1];
    int big = 0;
    int64_t most = -1;
    for (int j = 0; j < nregs; j++) {
      bool inside = true;
      for (int d = 0; d < g->nd && inside; d++)
        inside = regs[j].lo[d] >= sb->lo[d] && regs[j].hi[d] <= sb->hi[d];
      if (!inside) continue;
      int64_t el = 1;
      for (int d = 0; d < g->nd; d++) el *= regs[j].hi[d] - regs[j].lo[d];
      if (el > most) most = el, big = j;
    }
    const box first = regs[big];
    memmove(&regs[1], &regs[0], (size_t)big * sizeof regs[0]);
    regs[0] = first;
  }
  covered_marks(rt, g, true);
  for (int j = 0; ok && j < nregs; j++) {
    const box r = regs[j];
    const bool single = g->fill && j > 0;
    shared_views views = {0};
    for (int k = 0; ok && k < g->n; k++) {
      bool inside = true;
      for (int d = 0; d < g->nd && inside; d++)
        inside = r.lo[d] >= g->b[k].lo[d] && r.hi[d] <= g->b[k].hi[d];
      if (!inside) continue;
      /* the dot product's fill, kept whole, right before the first region's
       * sum: fusion moves it before the run, which the sum then joins (the
       * fill's 0-d view ends a run the sum's view of its store would join) */
      if (g->fill && j == 0 && k == g->n - 1 && !push(e, g->fill)) {
        ok = false;
        break;
      }
      ty_pending *p = cut(rt, g, k, &r, fresh, dies, single, &views);
      ok = p != NULL;
      if (ok && !push(made, p)) {
        ty__pending_drop(rt, p);
        ok = false;
      } else if (ok && !push(e, p)) {
        made->n--;
        ty__pending_drop(rt, p);
        ok = false;
      }
    }
    for (int i = 0; fresh && i < g->no; i++) { /* the region's launches hold them */
      ty__store_release(fresh[i]);
      fresh[i] = NULL;
    }
  }
  free(fresh);
  free(dies);
  if (!ok) covered_marks(rt, g, false);
  if (!ok) {
    while (made->n > m0) ty__pending_drop(rt, made->l[--made->n]);
    e->n = n0;
    return false;
  }
  return true;
}

/* Undoes a cut that could not finish: the launches made are dropped, the
 * window stays as it was. */
static void rollback(ty_runtime *rt, emitted *made) {
  for (int k = 0; k < made->n; k++) ty__pending_drop(rt, made->l[k]);
}

/* A group as recorded: window indices in place of pointers. */
typedef struct rec_other {
  int vi, vj; /* its first view: argument vj of launch vi of the window */
  int member;
  bool written, spread, first_out;
} rec_other;

struct ty__cut_group {
  int at, len;      /* the window's launches [at, at + len) it replaced */
  int fill;         /* the window index of the dot product's fill, -1 none */
  int nd, n, no;
  int64_t strides[TY_MAX_RANK];
  int m[REG_MAX_GROUP];
  box b[REG_MAX_GROUP];
  rec_other *o;
  int64_t cuts[TY_MAX_RANK][REG_MAX_CUTS];
  int ncuts[TY_MAX_RANK];
};

void ty__cut_rec_free(ty__cut_rec *rec) {
  for (int k = 0; k < rec->ng; k++) free(rec->g[k].o);
  free(rec->g);
  free(rec->from);
  free(rec->fresh);
  rec->g = NULL;
  rec->from = NULL;
  rec->fresh = NULL;
  rec->ng = rec->nfrom = 0;
  rec->fail = false;
}

static int window_index(ty_pending *const *w, int n, const ty_pending *l) {
  for (int i = 0; i < n; i++)
    if (w[i] == l) return i;
  return -1;
}

/* Records group g (cut at window index at, len launches) into rec. */
static void record(ty__cut_rec *rec, ty_pending *const *w, int n, int at, int len, const group *g,
                   int64_t cuts[][REG_MAX_CUTS], const int *ncuts) {
  if (rec->fail) return;
  ty__cut_group *ng = ty__realloc(rec->g, (size_t)(rec->ng + 1) * sizeof *ng);
  if (!ng) return (void)(rec->fail = true);
  rec->g = ng;
  ty__cut_group *r = &rec->g[rec->ng];
  r->o = ty__malloc(((size_t)g->no + 1) * sizeof *r->o);
  if (!r->o) return (void)(rec->fail = true);
  rec->ng++;
  r->at = at;
  r->len = len;
  r->fill = g->fill ? window_index(w, n, g->fill) : -1;
  r->nd = g->nd;
  r->n = g->n;
  r->no = g->no;
  memcpy(r->strides, g->strides, sizeof r->strides);
  memcpy(r->cuts, cuts, sizeof r->cuts);
  memcpy(r->ncuts, ncuts, sizeof r->ncuts);
  bool ok = !g->fill || r->fill >= 0;
  for (int k = 0; k < g->n && ok; k++) {
    r->m[k] = window_index(w, n, g->m[k]);
    r->b[k] = g->b[k];
    ok = r->m[k] >= 0;
  }
  for (int k = 0; k < g->no && ok; k++) {
    const other *o = &g->o[k];
    const ty_pending *l = g->m[o->member];
    int j = 0;
    while (j < l->nargs && l->args[j].store != o->view) j++;
    ok = j < l->nargs;
    r->o[k] = (rec_other){r->m[o->member], j, o->member, o->written, o->spread, o->first_out};
  }
  if (!ok) rec->fail = true;
}

/* Where each launch of the cut window (out) came from, into rec (before the
 * cut's members are dropped): a launch cut from member u has u's sequence
 * number (cut copies it), and the window's numbers are distinct. */
static void record_from(ty__cut_rec *rec, ty_pending *const *w, int n, const emitted *out) {
  if (rec->fail) return;
  rec->from = ty__malloc(((size_t)out->n + 1) * sizeof *rec->from);
  rec->fresh = ty__calloc((size_t)out->n + 1, sizeof *rec->fresh);
  if (!rec->from || !rec->fresh) return (void)(rec->fail = true);
  rec->nfrom = out->n;
  int u = 0;
  for (int x = 0; x < out->n; x++) {
    const ty_pending *l = out->l[x];
    int k = 0;
    for (; k < n && w[(u + k) % n]->seq != l->seq; k++) {
    }
    if (k == n) return (void)(rec->fail = true);
    u = (u + k) % n;
    if (w[u] == l) {
      rec->from[x] = u;
      continue;
    }
    if (l->task != w[u]->task || l->nargs != w[u]->nargs) return (void)(rec->fail = true);
    rec->from[x] = -1 - u;
    for (int j = 0; j < l->nargs; j++)
      if (l->args[j].store->storage != w[u]->args[j].store->storage) rec->fresh[x] |= (uint64_t)1 << j;
  }
}

void ty__regions_marks(ty_runtime *rt, const ty__cut_rec *rec, ty_pending *const *w) {
  for (int k = 0; k < rec->ng; k++) {
    const ty__cut_group *r = &rec->g[k];
    for (int i = 0; i < r->n; i++) covered_mark(rt, w[r->m[i]], true);
  }
}

/* Group g as recorded in r, on window w. */
static bool rebuild(group *g, ty_pending *const *w, const ty__cut_group *r) {
  if (r->no > g->cap) {
    other *o = ty__realloc(g->o, (size_t)r->no * sizeof *o);
    if (!o) return false;
    g->o = o;
    g->cap = r->no;
  }
  g->S = w[r->m[0]]->args[0].store->storage;
  g->nd = r->nd;
  memcpy(g->strides, r->strides, sizeof g->strides);
  g->fill = r->fill >= 0 ? w[r->fill] : NULL;
  g->n = r->n;
  for (int k = 0; k < r->n; k++) {
    g->m[k] = w[r->m[k]];
    g->b[k] = r->b[k];
  }
  g->no = r->no;
  for (int k = 0; k < r->no; k++) {
    const rec_other *o = &r->o[k];
    ty_store *v = w[o->vi]->args[o->vj].store;
    g->o[k] = (other){v->storage, v, o->member, o->written, o->spread, o->first_out};
  }
  return true;
}

/* The cut: found (from NULL; recorded into rec unless NULL), or replayed
 * from `from`. False when a replay could not finish (the window as it was). */
static bool cut_window(ty_runtime *rt, const ty__cut_rec *from, ty__cut_rec *rec) {
  const int n = rt->nwindow;
  ty_pending **w = rt->window;
  emitted out = {0}, made = {0}, gone = {0};
  group g; /* m and b are filled as launches join (not zeroed: 10 KB a flush) */
  g.S = NULL, g.nd = g.n = g.no = g.cap = 0, g.o = NULL;
  bool ok = true, copying = false; /* copying: out holds the window up to i */
  int gi = 0;                        /* from: the next recorded group */
  for (int i = 0; i < n && ok;) {
    /* a group starts with a launch writing a large enough store */
    const ty_pending *l = w[i];
    int len = 0, same_s = 1;
    int64_t cuts[TY_MAX_RANK][REG_MAX_CUTS];
    int ncuts[TY_MAX_RANK];
    bool cut_it = false;
    if (from) {
      if (gi < from->ng && from->g[gi].at == i) {
        const ty__cut_group *r = &from->g[gi++];
        ok = rebuild(&g, w, r);
        memcpy(cuts, r->cuts, sizeof cuts);
        memcpy(ncuts, r->ncuts, sizeof ncuts);
        cut_it = ok;
      }
    } else if (l->nargs > 0 && writes(l->args[0].priv) && l->args[0].store->size >= REG_MIN_ELEMS / 4 &&
               l->args[0].store->storage->nbytes >= REG_MIN_ELEMS * ty__dtype_size(l->args[0].store->dtype)) {
      g.S = l->args[0].store->storage;
      g.n = g.no = 0;
      while (i + g.n < n && add(rt, &g, w[i + g.n])) {
      }
      g.fill = NULL;
      const bool shifted = shifted_writers(&g); /* trim keeps every writer */
      if (shifted) {
        trim(rt, &g, w + i);
        sum_tail(rt, &g, w + i, n - i);
      }
      cut_it = shifted && worth_cutting(&g, cuts, ncuts);
      if (!cut_it) {
        /* not cut: a group starting at a later member that writes S again
         * would be this one's tail, not worth it either (a loop of in-place
         * updates through one view would otherwise cost n^2 tries) */
        while (same_s < g.n && g.m[same_s]->args[0].store->storage == g.S && writes(g.m[same_s]->args[0].priv))
          same_s++;
      }
    }
    if (cut_it) {
      for (int k = 0; !copying && k < i && ok; k++) ok = push(&out, w[k]);
      copying = ok;
      const int n0 = out.n;
      if (ok && emit(rt, &g, cuts, ncuts, &out, &made)) {
        for (int k = 0; k < g.n && ok; k++) ok = push(&gone, g.m[k]);
        len = g.n + (g.fill != NULL);
        if (rec) record(rec, w, n, i, len, &g, cuts, ncuts);
      } else {
        out.n = n0;
        if (from) ok = false; /* the window would not be the recorded one */
        if (rec) rec->fail = true;
      }
    }
    if (len == 0) {
      len = same_s;
      for (int k = 0; copying && k < len && ok; k++) ok = push(&out, w[i + k]);
    }
    i += len;
  }
  if (from && gi != from->ng) ok = false;
  if (ok && made.n && rec) record_from(rec, w, n, &out); /* before the window may move */
  free(g.o);
  if (ok && made.n && out.n > rt->window_cap) {
    ty_pending **nw = out.n <= TY_MAX_STREAM_WINDOW ? ty__realloc(rt->window, (size_t)out.n * sizeof *nw) : NULL;
    if (nw) {
      rt->window = nw;
      rt->window_cap = out.n;
    } else {
      ok = false;
    }
  }
  if (!ok) rollback(rt, &made);
  if (!ok && rec) rec->fail = true;
  if (ok && made.n) {
    memcpy(rt->window, out.l, (size_t)out.n * sizeof *out.l);
    rt->nwindow = out.n;
    for (int k = 0; k < gone.n; k++) ty__pending_drop(rt, gone.l[k]);
  }
  free(out.l);
  free(made.l);
  free(gone.l);
  return ok;
}

void ty__regions_cut(ty_runtime *rt) { cut_window(rt, NULL, NULL); }

void ty__regions_cut_rec(ty_runtime *rt, ty__cut_rec *rec) {
  ty__cut_rec_free(rec);
  cut_window(rt, NULL, rec);
}

bool ty__regions_replay(ty_runtime *rt, const ty__cut_rec *rec) {
  return rec->ng == 0 || cut_window(rt, rec, NULL);
}
