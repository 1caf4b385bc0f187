/*
 * stream.c — streaming under a memory budget (DESIGN.md section 4, step 3).
 *
 * Inside a scope with a `memory` budget the window is not flushed until the
 * scope ends (or a value is read). Then, after fusion, its launches run
 * "vertically": cut along one dimension of their common launch domain into
 * pieces small enough that one piece's transient stores fit the budget, every
 * launch runs on piece 1, then every launch on piece 2, ... A transient store
 * (written inside the window, reached by nothing but its launches: Lua
 * dropped it) never exists whole: each piece allocates its slice, re-strides
 * the store's views onto it, and frees it after its last use. Reductions along
 * the streamed dimension accumulate across pieces through their REDUCE
 * privilege. Stores that existed before the scope and the stores it leaves
 * behind are allocated whole and reported apart from the budget.
 *
 * Rules (checked before anything runs; explain and errors name the launch):
 *  - domain: the launches that touch the group's transients share one launch
 *    domain; others may only come before them (a reduction's initial fill)
 *    or after them;
 *  - point-wise: a store the group writes is read through the same view it
 *    is written through (no shifted, transposed or broadcast read of it), and
 *    never whole (a matmul or a broadcast task argument);
 *  - reductions along the streamed dimension accumulate (REDUCE privilege)
 *    and are not read inside the group.
 * A group whose transients fit the budget unsplit runs as it is, rules or
 * not. Strict (default): a group that must be split and breaks a rule is an
 * error at the scope's end, before anything runs. Relaxed: the window is cut
 * into the longest groups that can be streamed, each run under the budget; a
 * store that crosses a cut is allocated whole, and explain says where and why.
 */
#include "internal.h"
#include "exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How a launch of a split group runs: before the pieces, in every piece, after them. */
enum { ROLE_PRE = 0, ROLE_SPAN, ROLE_POST, DONE = 0x80 /* or-ed in once it ran */ };

enum { RULE_OK = 0, RULE_DOMAIN, RULE_WHOLE, RULE_VIEW, RULE_ACCUM, RULE_READ_RED, RULE_NODIM };

/* One storage the window touches. */
typedef struct sinfo {
  ty_storage *stg;
  int first, last;     /* launch indices of its first and last access */
  bool written;        /* some launch of the window writes it */
  bool first_out;      /* its first access is a plain OUT write */
  bool window_only;    /* only the window's launches reach it */
  bool had_data;       /* allocated before the flush: never transient (its block is kept) */
  int nstores;         /* distinct store objects of it in the window */
  /* the current group's view of it */
  bool sliced;         /* a transient that each piece allocates a slice of */
  bool whole;          /* a transient allocated whole */
  size_t row_bytes;    /* sliced: bytes per index along the streamed dim */
} sinfo;

typedef struct plan {
  int g0, g1;             /* launches [g0, g1) */
  int ndim;
  int64_t dom[TY_MAX_RANK];
  int span0, span1;       /* launches [span0, span1) are split; before/after run whole */
  int dim;                /* -1: fits unsplit */
  int64_t chunk;
  int pieces;
  size_t per_piece;       /* transient bytes of one piece (simulated peak) */
  size_t unsplit;         /* transient bytes if run unsplit (simulated peak) */
  /* the rule a group breaks, for errors and explain */
  int rule;
  int bad;                /* the launch that breaks it */
  char why[256];
} plan;

typedef struct sctx {
  ty_runtime *rt;
  ty_pending **w;
  int n;
  size_t budget;
  bool relaxed;
  sinfo *si;
  int nsi;
  int *arg_si; /* per launch, per argument: index into si (n * TY_MAX_ARGS) */
  uint8_t *role; /* per launch of the group being planned: ROLE_* */
  size_t live, peak;
} sctx;

static bool writes(ty_privilege p) { return p != TY_PRIV_IN; }

static void launch_name(const ty_pending *l, char *buf, size_t len) {
  if (l->fused)
    snprintf(buf, len, "#%llu fused (%s)", (unsigned long long)l->seq, l->fused_ops);
  else
    snprintf(buf, len, "#%llu %s", (unsigned long long)l->seq, l->task->name);
}

/* ---- what the window touches ----------------------------------------------------------- */

static ty_status survey(sctx *c) {
  ty_runtime *rt = c->rt;
  const uint64_t ep = ++rt->flush_epoch;
  c->si = ty__calloc((size_t)c->n * TY_MAX_ARGS + 1, sizeof *c->si);
  c->arg_si = ty__malloc(((size_t)c->n * TY_MAX_ARGS + 1) * sizeof *c->arg_si);
  c->role = ty__calloc((size_t)c->n + 1, 1);
  if (!c->si || !c->arg_si || !c->role) return ty__fail(rt, TY_ENOMEM, "streaming: out of memory");
  for (int i = 0; i < c->n; i++)
    for (int j = 0; j < c->w[i]->nargs; j++) {
      ty_store *x = c->w[i]->args[j].store;
      if (x->epoch != ep) {
        x->epoch = ep;
        x->wcount = 0;
      }
      x->wcount++;
    }
  for (int i = 0; i < c->n; i++) {
    const ty_pending *l = c->w[i];
    for (int j = 0; j < l->nargs; j++) {
      const ty_arg *a = &l->args[j];
      ty_storage *stg = a->store->storage;
      if (stg->epoch != ep) {
        stg->epoch = ep;
        stg->idx = c->nsi;
        c->si[c->nsi++] = (sinfo){.stg = stg, .first = i, .last = i, .window_only = true,
                                  .first_out = a->priv == TY_PRIV_OUT,
                                  .had_data = stg->data != NULL};
      }
      sinfo *s = &c->si[stg->idx];
      c->arg_si[i * TY_MAX_ARGS + j] = stg->idx;
      s->last = i;
      if (writes(a->priv)) s->written = true;
      if (a->store->refs != a->store->wcount) s->window_only = false;
    }
  }
  /* a storage is reached only through the window when its every store is */
  const uint64_t ep2 = ++rt->flush_epoch;
  for (int i = 0; i < c->n; i++)
    for (int j = 0; j < c->w[i]->nargs; j++) {
      ty_store *x = c->w[i]->args[j].store;
      if (x->epoch == ep2) continue;
      x->epoch = ep2;
      c->si[x->storage->idx].nstores++;
    }
  for (int k = 0; k < c->nsi; k++) {
    sinfo *s = &c->si[k];
    if (s->stg->refs != s->nstores || s->stg->external) s->window_only = false;
  }
  return TY_OK;
}

/* ---- planning a group ------------------------------------------------------------------- */

static bool spans(const plan *p, const ty_pending *l) {
  if (l->ndim != p->ndim) return false;
  for (int k = 0; k < p->ndim; k++)
    if (l->domain[k] != p->dom[k]) return false;
  return true;
}

static int64_t elems(const ty_pending *l) {
  int64_t e = 1;
  for (int k = 0; k < l->ndim; k++) e *= l->domain[k];
  return e;
}

static void fail_rule(sctx *c, plan *p, int rule, int bad, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
static void fail_rule(sctx *c, plan *p, int rule, int bad, const char *fmt, ...) {
  (void)c;
  if (p->rule) return; /* the first one found is the one reported */
  p->rule = rule;
  p->bad = bad;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->why, sizeof p->why, fmt, ap);
  va_end(ap);
}

/* Is storage k transient for the group [g0, g1)? */
static bool transient_in(const sinfo *s, int g0, int g1) {
  return s->window_only && s->written && s->first_out && !s->had_data && s->first >= g0 &&
         s->last < g1;
}

/* Simulated peak of transient bytes when each sliced transient holds
 * `rows` indices along the streamed dim (rows < 0: whole). */
static size_t simulate(const sctx *c, const plan *p, int64_t rows) {
  size_t live = 0, peak = 0;
  for (int i = p->g0; i < p->g1; i++) {
    for (int k = 0; k < c->nsi; k++) {
      const sinfo *s = &c->si[k];
      if (s->first != i || !transient_in(s, p->g0, p->g1)) continue;
      live += (s->sliced && rows >= 0) ? s->row_bytes * (size_t)rows : s->stg->nbytes;
    }
    if (live > peak) peak = live;
    for (int k = 0; k < c->nsi; k++) {
      const sinfo *s = &c->si[k];
      if (s->last != i || !transient_in(s, p->g0, p->g1)) continue;
      live -= (s->sliced && rows >= 0) ? s->row_bytes * (size_t)rows : s->stg->nbytes;
    }
  }
  return peak;
}

/* Do launches i and j touch one storage, one of them writing it? */
static bool conflict(const sctx *c, int i, int j) {
  const ty_pending *a = c->w[i], *b = c->w[j];
  for (int x = 0; x < a->nargs; x++)
    for (int y = 0; y < b->nargs; y++)
      if (c->arg_si[i * TY_MAX_ARGS + x] == c->arg_si[j * TY_MAX_ARGS + y] &&
          (writes(a->args[x].priv) || writes(b->args[y].priv)))
        return true;
  return false;
}

/* Roles: launches before the first spanning one run before the pieces, those
 * after the last one after them; one in between that does not span runs
 * before the pieces when nothing it shares storage with precedes it (a
 * reduction's initial fill), else after them when nothing that follows
 * depends on it, else it breaks the domain rule. */
static void assign_roles(sctx *c, plan *p) {
  char nm[256];
  for (int i = p->g0; i < p->g1; i++)
    c->role[i] = spans(p, c->w[i]) ? ROLE_SPAN : i < p->span0 ? ROLE_PRE : ROLE_POST;
  for (int i = p->span0 + 1; i < p->span1; i++) {
    if (c->role[i] == ROLE_SPAN) continue;
    bool pre = true, post = true;
    for (int j = p->span0; j < i && pre; j++)
      if (c->role[j] != ROLE_PRE && conflict(c, i, j)) pre = false;
    if (pre) {
      c->role[i] = ROLE_PRE;
      continue;
    }
    for (int j = i + 1; j < p->span1 && post; j++)
      if (conflict(c, i, j)) post = false;
    if (post) {
      c->role[i] = ROLE_POST;
      continue;
    }
    const ty_pending *l = c->w[i];
    char d1[128], d2[128];
    launch_name(l, nm, sizeof nm);
    ty__shape_str(l->ndim, l->domain, d1, sizeof d1);
    ty__shape_str(p->ndim, p->dom, d2, sizeof d2);
    fail_rule(c, p, RULE_DOMAIN, i,
              "launch %s has domain %s, not the streamed launches' %s, and depends on them "
              "while they depend on it", nm, d1, d2);
  }
}

/* The rules that do not depend on the dimension; marks sliced transients. */
static void check_common(sctx *c, plan *p) {
  char nm[256];
  /* the domain: the biggest launch's */
  int64_t best = -1;
  for (int i = p->g0; i < p->g1; i++)
    if (elems(c->w[i]) > best) {
      best = elems(c->w[i]);
      p->ndim = c->w[i]->ndim;
      memcpy(p->dom, c->w[i]->domain, sizeof p->dom);
    }
  p->span0 = p->g1;
  p->span1 = p->g0;
  for (int i = p->g0; i < p->g1; i++)
    if (spans(p, c->w[i])) {
      if (i < p->span0) p->span0 = i;
      p->span1 = i + 1;
    }
  for (int k = 0; k < c->nsi; k++) {
    sinfo *s = &c->si[k];
    s->sliced = s->whole = false;
    if (!transient_in(s, p->g0, p->g1)) continue;
    s->whole = true;
  }
  /* sliced transients: written and read only by spanning launches, through
   * one full view (no broadcast dim) */
  for (int k = 0; k < c->nsi; k++) {
    sinfo *s = &c->si[k];
    if (!s->whole) continue;
    bool ok = s->first >= p->span0 && s->last < p->span1;
    const ty_store *ref = NULL;
    for (int i = s->first; ok && i <= s->last; i++) {
      const ty_pending *l = c->w[i];
      for (int j = 0; ok && j < l->nargs; j++) {
        if (c->arg_si[i * TY_MAX_ARGS + j] != k) continue;
        const ty_store *x = l->args[j].store;
        if (!spans(p, l) || l->args[j].proj != TY_PROJ_ALIGNED) ok = false;
        else if (!ref) ref = x;
        else if (!ty__same_view(ref, x)) ok = false;
        for (int d = 0; ok && d < x->ndim; d++) ok = x->strides[d] != 0 || x->shape[d] == 1;
      }
    }
    if (ok && ref) {
      s->sliced = true;
      s->whole = false;
      s->row_bytes = s->stg->nbytes; /* divided by the dim's extent once it is chosen */
    }
  }
  assign_roles(c, p);
  for (int i = p->g0; i < p->g1; i++) {
    const ty_pending *l = c->w[i];
    launch_name(l, nm, sizeof nm);
    for (int j = 0; j < l->nargs; j++) {
      const sinfo *s = &c->si[c->arg_si[i * TY_MAX_ARGS + j]];
      const ty_store *x = l->args[j].store;
      if (!s->written || !spans(p, l)) continue;
      if (l->args[j].proj == TY_PROJ_WHOLE)
        fail_rule(c, p, RULE_WHOLE, i,
                  "launch %s reads store #%llu whole (not point-wise) while the scope writes it",
                  nm, (unsigned long long)x->id);
    }
  }
  /* point-wise: every spanning access of a written storage, before or after
   * the write in program order, is through the view of its first spanning
   * write or shares no byte with it. A read of x[1:-2] before a write of
   * x[2:] would otherwise read, in piece 2, what piece 1 already wrote. */
  for (int k = 0; k < c->nsi; k++) {
    const sinfo *s = &c->si[k];
    if (!s->written) continue;
    const ty_store *ref = NULL;
    for (int i = p->span0; i < p->span1 && !ref; i++) {
      const ty_pending *l = c->w[i];
      if (!spans(p, l)) continue;
      for (int j = 0; j < l->nargs && !ref; j++)
        if (c->arg_si[i * TY_MAX_ARGS + j] == k && l->args[j].proj == TY_PROJ_ALIGNED &&
            writes(l->args[j].priv))
          ref = l->args[j].store;
    }
    for (int i = p->span0; ref && i < p->span1; i++) {
      const ty_pending *l = c->w[i];
      if (!spans(p, l)) continue;
      for (int j = 0; j < l->nargs; j++) {
        if (c->arg_si[i * TY_MAX_ARGS + j] != k || l->args[j].proj != TY_PROJ_ALIGNED) continue;
        const ty_store *x = l->args[j].store;
        if (ty__same_view(ref, x) || !ty__store_overlap(ref, x)) continue;
        launch_name(l, nm, sizeof nm);
        fail_rule(c, p, RULE_VIEW, i,
                  "launch %s %s store #%llu through another view than the scope writes it "
                  "(shifted, transposed or broadcast): not point-wise",
                  nm, writes(l->args[j].priv) ? "writes" : "reads", (unsigned long long)x->id);
      }
    }
  }
}

/* The rules along dim d; RULE_OK or the rule broken (message in *p). */
static int check_dim(sctx *c, plan *p, int d) {
  char nm[256];
  for (int i = p->span0; i < p->span1; i++) {
    const ty_pending *l = c->w[i];
    if (!spans(p, l)) continue;
    for (int j = 0; j < l->nargs; j++) {
      const ty_arg *a = &l->args[j];
      if (!writes(a->priv) || a->proj != TY_PROJ_ALIGNED || a->store->strides[d] != 0) continue;
      const sinfo *s = &c->si[c->arg_si[i * TY_MAX_ARGS + j]];
      launch_name(l, nm, sizeof nm);
      if (a->priv != TY_PRIV_REDUCE) {
        fail_rule(c, p, RULE_ACCUM, i,
                  "launch %s reduces along dim %d into store #%llu without accumulating "
                  "(an arg-reduction, or a reduction that initialises its output)",
                  nm, d + 1, (unsigned long long)a->store->id);
        return RULE_ACCUM;
      }
      if (s->last > i && s->last < p->g1) {
        char n2[256];
        launch_name(c->w[s->last], n2, sizeof n2);
        fail_rule(c, p, RULE_READ_RED, s->last,
                  "launch %s reads store #%llu, a reduction along the streamed dim %d by launch %s, "
                  "inside the scope", n2, (unsigned long long)a->store->id, d + 1, nm);
        return RULE_READ_RED;
      }
    }
  }
  return RULE_OK;
}

/* Plan the group [g0, g1): fits unsplit, or a dim and a chunk, or a rule
 * broken (p->rule). TY_ENOMEM when even one index is over the budget. */
static ty_status plan_group(sctx *c, int g0, int g1, plan *p) {
  memset(p, 0, sizeof *p);
  p->g0 = g0;
  p->g1 = g1;
  p->dim = -1;
  p->pieces = 1;
  check_common(c, p);
  p->unsplit = simulate(c, p, -1);
  p->per_piece = p->unsplit;
  if (p->unsplit <= c->budget) {
    p->rule = RULE_OK; /* nothing to split: rules do not matter */
    return TY_OK;
  }
  if (p->rule) return TY_OK;
  /* the dim: legal, then the most pieces possible (finest grain); ties to the
   * outermost. Save the first dim's failure for the message. */
  plan failed = *p;
  int best = -1;
  for (int d = 0; d < p->ndim; d++) {
    if (p->dom[d] <= 1) continue;
    plan t = *p;
    if (check_dim(c, &t, d) != RULE_OK) {
      if (!failed.rule) failed = t;
      continue;
    }
    if (best < 0 || p->dom[d] > p->dom[best]) best = d;
  }
  if (best < 0) {
    *p = failed;
    if (!p->rule)
      fail_rule(c, p, RULE_NODIM, p->span0,
                "no dimension of the domain can be split (every dim has length 1)");
    return TY_OK;
  }
  p->dim = best;
  for (int k = 0; k < c->nsi; k++)
    if (c->si[k].sliced) c->si[k].row_bytes = c->si[k].stg->nbytes / (size_t)p->dom[best];
  size_t one = simulate(c, p, 1);
  if (one > c->budget) {
    char b1[32], b2[32];
    ty_format_bytes((double)c->budget, b1, sizeof b1);
    ty_format_bytes((double)one, b2, sizeof b2);
    return ty__fail(c->rt, TY_ENOMEM,
                    "streaming: the memory budget %s is too small: one index of dim %d (of %lld) "
                    "needs %s of transient stores; the smallest budget that works is %s",
                    b1, best + 1, (long long)p->dom[best], b2, b2);
  }
  /* the biggest chunk that fits, then pieces of equal size */
  int64_t lo = 1, hi = p->dom[best];
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (simulate(c, p, mid) <= c->budget) lo = mid;
    else hi = mid - 1;
  }
  int64_t pieces = (p->dom[best] + lo - 1) / lo;
  p->chunk = (p->dom[best] + pieces - 1) / pieces;
  p->pieces = (int)((p->dom[best] + p->chunk - 1) / p->chunk);
  p->per_piece = simulate(c, p, p->chunk);
  return TY_OK;
}

/* ---- running a group -------------------------------------------------------------------- */

/* Point every view of sliced storage k at a fresh slice [lo, hi) along dim. */
static ty_status slice_alloc(sctx *c, const plan *p, int k, int64_t lo, int64_t hi, int64_t (*saved)[TY_MAX_RANK + 1]) {
  sinfo *s = &c->si[k];
  size_t bytes = s->row_bytes * (size_t)(hi - lo);
  void *buf = ty__aligned_alloc(TY_ALIGN, (bytes + TY_ALIGN - 1) / TY_ALIGN * TY_ALIGN);
  if (!buf) return ty__fail(c->rt, TY_ENOMEM, "streaming: out of memory for a piece of %zu bytes", bytes);
  s->stg->data = buf;
  s->stg->sliced = true;
  c->live += bytes;
  if (c->live > c->peak) c->peak = c->live;
  c->rt->live += bytes;
  c->rt->stats.bytes_allocated += bytes;
  if (c->rt->live > c->rt->stats.bytes_peak) c->rt->stats.bytes_peak = c->rt->live;
  for (int i = s->first; i <= s->last; i++) {
    ty_pending *l = c->w[i];
    for (int j = 0; j < l->nargs; j++) {
      if (c->arg_si[i * TY_MAX_ARGS + j] != k) continue;
      ty_store *x = l->args[j].store;
      if (x->epoch != c->rt->flush_epoch) { /* first time this group: keep its layout */
        x->epoch = c->rt->flush_epoch;
        memcpy(saved[i * TY_MAX_ARGS + j], x->strides, sizeof x->strides[0] * TY_MAX_RANK);
        saved[i * TY_MAX_ARGS + j][TY_MAX_RANK] = x->offset;
        x->wcount = i * TY_MAX_ARGS + j; /* where it was saved */
      }
      int64_t st = 1;
      for (int d = x->ndim - 1; d >= 0; d--) {
        x->strides[d] = st;
        st *= d == p->dim ? hi - lo : x->shape[d];
      }
      x->offset = -lo * x->strides[p->dim];
    }
  }
  return TY_OK;
}

static void slice_free(sctx *c, int k, int64_t rows) {
  sinfo *s = &c->si[k];
  if (!s->stg->sliced) return;
  size_t bytes = s->row_bytes * (size_t)rows;
  free(s->stg->data);
  s->stg->data = NULL;
  s->stg->sliced = false;
  c->live -= bytes;
  c->rt->live -= bytes;
  c->rt->stats.bytes_freed += bytes;
}

/* Put the views of sliced storages back as they were (their storage is gone:
 * only the window's launches, about to be released, still hold them). */
static void restore_views(sctx *c, const plan *p, int64_t (*saved)[TY_MAX_RANK + 1]) {
  for (int i = p->g0; i < p->g1; i++) {
    ty_pending *l = c->w[i];
    for (int j = 0; j < l->nargs; j++) {
      ty_store *x = l->args[j].store;
      if (x->epoch != c->rt->flush_epoch || x->wcount != i * TY_MAX_ARGS + j) continue;
      memcpy(x->strides, saved[i * TY_MAX_ARGS + j], sizeof x->strides[0] * TY_MAX_RANK);
      x->offset = saved[i * TY_MAX_ARGS + j][TY_MAX_RANK];
      x->epoch = 0;
    }
  }
}

static void fmt_bytes(size_t b, char *buf, size_t len) { ty_format_bytes((double)b, buf, len); }

/* What launches [i0, i1) would write reads as an error naming `why` (they did
 * not run, or not to the end). With `keep_existing` (nothing of the scope
 * ran), storage that held data before the scope keeps it: a refused scope
 * changes nothing. */
static void cancel_range(ty_runtime *rt, ty_pending **w, int i0, int i1, const uint8_t *role,
                         ty_status st, const char *fmt, const char *cause, bool keep_existing) {
  char why[TY_ERRLEN + 128];
  snprintf(why, sizeof why, fmt, cause);
  for (int i = i0; i < i1; i++) {
    if (role && (role[i] & DONE)) continue;
    const ty_pending *l = w[i];
    for (int j = 0; j < l->nargs; j++) {
      ty_storage *stg = l->args[j].store->storage;
      /* it existed before the scope: it holds values, or was made in an
       * earlier window, or outside any streamed scope (an `empty` store
       * made just before it, in the same window, which no launch wrote yet) */
      bool existed = stg->data || stg->born + 1 < rt->window_gen || !stg->streamed;
      if (!writes(l->args[j].priv) || (keep_existing && existed)) continue;
      ty__cancel_storage(stg, st, why);
    }
  }
}

static ty_status run_group(sctx *c, plan *p, int group, int groups, const char *cut,
                           int64_t (*saved)[TY_MAX_RANK + 1], char *msg, size_t cap) {
  ty_runtime *rt = c->rt;
  char note[512], bud[32], per[32], whole[32];
  fmt_bytes(c->budget, bud, sizeof bud);
  fmt_bytes(p->per_piece, per, sizeof per);
  fmt_bytes(p->unsplit, whole, sizeof whole);
  char gname[48] = "";
  if (groups > 1) snprintf(gname, sizeof gname, "group %d of %d: ", group + 1, groups);
  if (p->dim < 0)
    snprintf(note, sizeof note, "%sfits the budget unsplit (transient %s <= %s)%s%s", gname, whole,
             bud, cut[0] ? "; " : "", cut);
  else
    snprintf(note, sizeof note, "%s%d pieces of %lld along dim %d (of %lld); transient %s per "
             "piece (unsplit %s), budget %s%s%s", gname, p->pieces, (long long)p->chunk, p->dim + 1,
             (long long)p->dom[p->dim], per, whole, bud, cut[0] ? "; " : "", cut);
  ty_status st = TY_OK;
  size_t whole_bytes = 0; /* transients allocated whole count as live throughout */
  for (int k = 0; k < c->nsi; k++)
    if (c->si[k].whole) whole_bytes += c->si[k].stg->nbytes;
  c->live += whole_bytes;
  if (c->live > c->peak) c->peak = c->live;
  if (p->dim < 0) {
    for (int i = p->g0; i < p->g1 && !st; i++)
      if (!(st = ty__exec_box(rt, c->w[i], -1, 0, 0, true, note))) c->role[i] |= DONE;
  } else {
    ++rt->flush_epoch; /* marks the views slice_alloc saved */
    for (int i = p->g0; i < p->g1 && !st; i++)
      if (c->role[i] == ROLE_PRE && !(st = ty__exec_box(rt, c->w[i], -1, 0, 0, true, note)))
        c->role[i] |= DONE;
    for (int piece = 0; piece < p->pieces && !st; piece++) {
      int64_t lo = (int64_t)piece * p->chunk;
      int64_t hi = lo + p->chunk < p->dom[p->dim] ? lo + p->chunk : p->dom[p->dim];
      if (atomic_exchange(&rt->interrupt, 0)) {
        st = ty__fail(rt, TY_EINTR, "interrupted in piece %d of %d of a streamed scope",
                      piece + 1, p->pieces);
        break;
      }
      for (int i = p->span0; i < p->span1 && !st; i++) {
        if (c->role[i] != ROLE_SPAN) continue;
        for (int k = 0; k < c->nsi && !st; k++)
          if (c->si[k].sliced && c->si[k].first == i) st = slice_alloc(c, p, k, lo, hi, saved);
        if (!st) st = ty__exec_box(rt, c->w[i], p->dim, lo, hi, piece == 0, note);
        for (int k = 0; k < c->nsi; k++)
          if (c->si[k].sliced && (c->si[k].last == i || st)) slice_free(c, k, hi - lo);
      }
    }
    restore_views(c, p, saved);
    for (int i = p->span0; i < p->span1 && !st; i++)
      if (c->role[i] == ROLE_SPAN) c->role[i] |= DONE;
    for (int i = p->g0; i < p->g1 && !st; i++)
      if (c->role[i] == ROLE_POST && !(st = ty__exec_box(rt, c->w[i], -1, 0, 0, true, note)))
        c->role[i] |= DONE;
    rt->stats.stream_pieces += (uint64_t)p->pieces;
  }
  c->live -= whole_bytes;
  if (st && !msg[0]) snprintf(msg, cap, "%s", rt->errmsg);
  if (st) /* what did not complete reads as an error */
    cancel_range(rt, c->w, p->g0, p->g1, c->role, st, "a streamed scope stopped before it was written: %s",
                 msg, false);
  rt->stats.stream_groups++;
  return st;
}

/* ---- the pass --------------------------------------------------------------------------- */

ty_status ty__stream_run(ty_runtime *rt, ty_pending **w, int n, ty_flush_stats *fs, char *msg,
                         size_t cap) {
  sctx c = {.rt = rt, .w = w, .n = n, .budget = w[0]->pol->p.memory,
            .relaxed = w[0]->pol->p.stream_relaxed};
  msg[0] = 0;
  int64_t (*saved)[TY_MAX_RANK + 1] = NULL;
  plan *plans = NULL;
  char (*cuts)[160] = NULL;
  int ngroups = 0;
  ty_status st = survey(&c);
  if (!st) {
    saved = ty__malloc((size_t)n * TY_MAX_ARGS * sizeof *saved);
    plans = ty__malloc((size_t)n * sizeof *plans);
    cuts = ty__calloc((size_t)n, sizeof *cuts);
    if (!saved || !plans || !cuts) st = ty__fail(rt, TY_ENOMEM, "streaming: out of memory");
  }
  /* plan everything before running anything */
  for (int g0 = 0; !st && g0 < n;) {
    plan p;
    if ((st = plan_group(&c, g0, n, &p))) break;
    if (p.rule && !c.relaxed) {
      char bud[32];
      fmt_bytes(c.budget, bud, sizeof bud);
      st = ty__fail(rt, TY_EINVAL,
                    "streamed scope (memory=%s, strict): %s (use stream=\"relaxed\" to cut the "
                    "scope into streamable groups)", bud, p.why);
      break;
    }
    if (p.rule) { /* relaxed: the longest streamable prefix */
      plan best = {0}, why = p;
      bool have = false;
      for (int g1 = g0 + 1; g1 < n && !st; g1++) {
        plan t;
        if ((st = plan_group(&c, g0, g1, &t))) break;
        if (t.rule) {
          why = t;
          break;
        }
        best = t;
        have = true;
      }
      if (st) break;
      if (!have) { /* even one launch breaks a rule: it runs alone, unsplit */
        if ((st = plan_group(&c, g0, g0 + 1, &best))) break;
        best.dim = -1;
        best.pieces = 1;
      }
      snprintf(cuts[ngroups], sizeof cuts[ngroups], "cut before launch %llu: %.120s",
               (unsigned long long)w[best.g1 < n ? best.g1 : n - 1]->seq, why.why);
      p = best;
    }
    plans[ngroups++] = p;
    g0 = p.g1;
  }
  if (st) {
    if (!msg[0]) snprintf(msg, cap, "%s", rt->errmsg);
    cancel_range(rt, w, 0, n, NULL, st, "its streamed scope was refused before anything ran: %s", msg,
                 true);
  }
  for (int g = 0; !st && g < ngroups; g++) {
    /* the stores' classification (transient, sliced, roles) is per group and
     * planning later groups overwrote it: plan this one again (the same
     * result), keeping the split decided above (a relaxed group may have been
     * forced unsplit) */
    const plan *p = &plans[g];
    plan fresh;
    plan_group(&c, p->g0, p->g1, &fresh);
    fresh.dim = p->dim;
    fresh.chunk = p->chunk;
    fresh.pieces = p->pieces;
    fresh.per_piece = p->per_piece;
    st = run_group(&c, &fresh, g, ngroups, cuts[g], saved, msg, cap);
    if (st)
      for (int h = g + 1; h < ngroups; h++)
        cancel_range(rt, w, plans[h].g0, plans[h].g1, NULL, st,
                     "a streamed scope stopped before it was written: %s", msg, false);
  }
  /* figures */
  size_t outputs = 0;
  for (int k = 0; k < c.nsi; k++)
    if (c.si[k].written && !c.si[k].window_only) outputs += c.si[k].stg->nbytes;
  if (c.peak > rt->stats.stream_peak) rt->stats.stream_peak = c.peak;
  fs->stream_budget = (int64_t)c.budget;
  fs->stream_groups = ngroups;
  int pieces = 0;
  for (int g = 0; g < ngroups; g++) pieces += plans[g].pieces;
  fs->stream_pieces = pieces;
  fs->stream_peak = (int64_t)c.peak;
  fs->stream_outputs = (int64_t)outputs;
  free(saved);
  free(plans);
  free(cuts);
  free(c.si);
  free(c.arg_si);
  free(c.role);
  return st;
}
