/*
 * fuse_cache.c — the fusion pass's decision, remembered per window structure.
 *
 * A program's loop body makes the same window thousands of times: the same
 * tasks on the same shapes, the same views, the same stores shared between
 * the same launches. The fusion pass (fuse.c) decides the same groups every
 * time, at ~2,000 instructions a launch. Here the decision is kept under the
 * window's structure and, when the structure comes again, replayed: the
 * fused launches are copied from the ones made last time, with this
 * window's stores, constants, sequence numbers and policies put in.
 *
 * The structure (the key) is everything the pass reads, launch by launch:
 * task, launch number relative to the window's first, domain, partitioning
 * policy, max pieces, unsplit dims, scalars, a "matmul k=" origin; and per
 * argument: privilege, projection, reduction operator, dtype, the view
 * (offset, shape, strides), the storage's size, which earlier argument has
 * the same store object and the same storage (the aliasing pattern), the
 * reference counts of store and storage (what makes a temporary), and the
 * storage's state (allocated, cancelled, attached, split, valid on the host:
 * what makes a constant). A hit compares the whole key, never the hash only;
 * any difference decides afresh. Streamed windows, and windows holding a
 * fused launch or a launch with a note already, are not remembered.
 *
 * The key is of the window before regions.c's cut, which reads nothing the
 * key does not hold (the storage's validity on the host is in it for the
 * one-element views a cut may make): the cut is recorded with the decision
 * (as window indices) and a hit replays it (ty__regions_replay) before the
 * decision, without looking for groups or a second key for the cut window
 * (CG at 256^2: ~31k instructions an iteration of ~1,010k).
 *
 * Better, a miss that cut records a plan beside the decision (fc_src,
 * fc_cref, fc_group's d* fields: the fused launches' members, arguments and
 * constants in the window as it came, from regions.c's `from`/`fresh`), and
 * a hit builds the fused launches from the uncut window (replay_plan): only
 * the region views and temporaries they take are made, one per distinct
 * store of the cut (the cut's sharing), never the cut's ~55 launch records
 * an iteration of CG at 256^2 nor the views and temporaries fusion elides
 * (ty__fuse 82k -> 40k instructions an iteration). No plan (a launch of the
 * cut kept unfused) or no memory for it: the cut is replayed, as above.
 *
 * What a replay does not copy but takes from this window: each fused
 * launch's store arguments, constants (the values of the Lua numbers), launch
 * number, policy (its origins), and the notes' launch numbers; a kernel not
 * compiled last time is asked for again (fused_codegen.c may have it now).
 * The statistics count as the pass would. TYCHO_FUSE_CACHE=0 turns the
 * cache off (runtime.c checks the value at start).
 *
 * FC_SLOTS windows are kept, the oldest replaced first; a kept decision
 * holds no store (its template's arguments are not retained). A miss costs
 * the key and the recording (~800 instructions a launch more than the pass
 * alone, windows of 14 small launches): after FC_COLD misses in a row only
 * one window in FC_COLD_EVERY is looked up (and remembered), until a hit.
 */
#include "fuse_cache.h"

#include "alloc.h"
#include "exec_gpu.h"
#include "regions.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define FC_SLOTS 64
#define FC_COLD 64      /* misses in a row that make the cache cold */
#define FC_COLD_EVERY 8 /* when cold: one window in 8 is looked up */
#define TAIL offsetof(ty_pending, max_pieces) /* a launch's fields after its description */
/* ... up to its own resolution, which a replay does not copy (ty__pol_keep) */
#define TAIL_LEN (offsetof(ty_pending, own_pol) - TAIL)

/* A store a planned hit gives the fused launches (fc_group.dargs): argument
 * j of launch u of the window as it came, as it is (FS_ORIG), a view of its
 * storage (FS_VIEW: a region's view, as regions.c's cut makes it), or a new
 * store of its dtype (FS_FRESH: a region's temporary). */
enum { FS_ORIG, FS_VIEW, FS_FRESH };
typedef struct fc_src {
  int kind, u, j, nd;
  int64_t off;
  int64_t shape[TY_MAX_RANK], strides[TY_MAX_RANK];
} fc_src;

/* A constant's value, planned: element `off` of the storage of argument j of
 * launch u of the window as it came (in that argument's dtype). */
typedef struct fc_cref {
  int u, j;
  int64_t off;
} fc_cref;

/* One launch of a remembered window's result. */
typedef struct fc_group {
  int orig;          /* >= 0: launch `orig` of the window, unchanged; -1: a fused launch */
  ty_fuse_note note; /* orig's note, launch numbers relative to the window's first */
  /* a fused launch */
  /* the launch as built, without its unused description bytes: bytes
   * [0, head) of the ty_pending, then its fields from max_pieces on (the
   * arguments' stores are those of the window it was decided in, not held) */
  unsigned char *tmpl;
  size_t head;
  int *members;      /* window indices, program order */
  int nm;
  uint32_t *args;    /* argument a: launch args[a] >> 8, its argument args[a] & 255 */
  uint32_t *consts;  /* constant c read from there, too */
  int nconst;
  uint64_t elided;
  /* the plan (fc_entry.plan): in the window as it came, before the cut */
  int ou;          /* orig's launch there */
  int *dmem;       /* the members' launches there (those they were cut from) */
  int *dargs;      /* argument a: fc_entry.src[dargs[a]] */
  fc_cref *dconst; /* constant c */
} fc_group;

typedef struct fc_entry {
  uint64_t hash;
  uint64_t *key;
  size_t len; /* words; 0: the slot is free */
  fc_group *g;
  int ng;
  ty__cut_rec cut; /* regions.c's cut of the window, replayed before the decision */
  /* plan: a hit builds the fused launches straight from the window as it
   * came (replay_plan), without the cut's launches, views and temporaries */
  bool plan;
  int seq_u; /* the launch there whose number the notes are relative to */
  fc_src *src;
  int nsrc;
  /* the waves flush_window gave the window a hit made: a later hit skips
   * the graph and ty__schedule (one pointer: the cache's 64 entries stay
   * small, under the 8 KiB allocation test_dist's fault injector fails) */
  struct fc_waves *waves;
} fc_entry;

/* ty__fcache_keep_waves: launch k of the window after fusion in wave
 * wave_of[k], for n launches, favor and host-only as flush_window had them. */
typedef struct fc_waves {
  int n, favor;
  bool host;
  ty_sched_stats ss;
  int wave_of[];
} fc_waves;

typedef struct fc_ptr {
  const void *p;
  uint32_t gen;
  uint32_t v;
} fc_ptr;

typedef struct fcache {
  fc_entry e[FC_SLOTS];
  int next; /* the slot replaced next */
  /* this flush */
  uint64_t *key;
  size_t klen, kcap;
  uint64_t hash;
  ty_pending **orig; /* the window as it came (the pass reorders it) */
  int norig, cap_orig;
  fc_ptr *tab;       /* launch -> its index in the window */
  size_t tcap;
  uint32_t gen;
  bool recording, rec_fail;
  bool indexed;      /* the window's launches are in tab (recording only) */
  uint64_t ep;       /* the flush epoch the key marked stores and storages with */
  int misses;        /* windows looked up in a row without a hit (at most FC_COLD) */
  unsigned skipped;  /* windows since the cache went cold */
  fc_group *rg;      /* fused launches built, in order */
  int nrg, cap_rg;
  ty__cut_rec cut;   /* this flush's cut (recording only) */
  bool plan;         /* this recording makes a plan (a cut was made and recorded) */
  fc_src *rs;        /* the plan's stores so far */
  const ty_store **rsp; /* ... the cut window's store each stands for */
  int nrs, cap_rs;
  fc_entry *hit;        /* the entry this flush's window was replayed from ... */
  uint64_t hit_flush;   /* ... in flush number hit_flush (rt->stats.flushes) */
} fcache;

static void group_free(fc_group *g) {
  free(g->dmem);
  free(g->dargs);
  free(g->dconst);
  free(g->tmpl);
  free(g->members);
  free(g->args);
  free(g->consts);
}

static void entry_free(fc_entry *e) {
  for (int i = 0; i < e->ng; i++) group_free(&e->g[i]);
  free(e->g);
  free(e->key);
  ty__cut_rec_free(&e->cut);
  free(e->src);
  free(e->waves);
  memset(e, 0, sizeof *e);
}

static void rec_clear(fcache *c) {
  for (int i = 0; i < c->nrg; i++) group_free(&c->rg[i]);
  c->nrg = 0;
  c->nrs = 0;
  c->recording = c->rec_fail = c->plan = false;
}

static void fcache_free(void *p) {
  fcache *c = p;
  if (!c) return;
  for (int i = 0; i < FC_SLOTS; i++) entry_free(&c->e[i]);
  rec_clear(c);
  ty__cut_rec_free(&c->cut);
  free(c->rs);
  free(c->rsp);
  free(c->rg);
  free(c->key);
  free(c->orig);
  free(c->tab);
  free(c);
}

/* The cache of state, made at first use; NULL when TYCHO_FUSE_CACHE=0 or
 * out of memory. */
static fcache *cache_of(ty__fusion *state) {
  if (state->fcache) return state->fcache;
  if (state->fcache_off) return NULL;
  if (ty__env_off("TYCHO_FUSE_CACHE")) {
    state->fcache_off = true;
    return NULL;
  }
  fcache *c = ty__calloc(1, sizeof *c);
  if (!c) return NULL;
  state->fcache = c;
  state->fcache_free = fcache_free;
  return c;
}

/* ---- the key ------------------------------------------------------------------------------- */

static bool key_grow(fcache *c, size_t need) {
  if (c->klen + need <= c->kcap) return true;
  size_t cap = c->kcap ? c->kcap : 256;
  while (cap < c->klen + need) cap *= 2;
  uint64_t *k = ty__realloc(c->key, cap * sizeof *k);
  if (!k) return false;
  c->key = k;
  c->kcap = cap;
  return true;
}

static size_t ptr_hash(const void *p, size_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x & (cap - 1);
}

/* p's value, or `v` (then remembered) when p is new. */
static uint32_t ptr_first(fcache *c, const void *p, uint32_t v) {
  size_t i = ptr_hash(p, c->tcap);
  while (c->tab[i].gen == c->gen) {
    if (c->tab[i].p == p) return c->tab[i].v;
    i = (i + 1) & (c->tcap - 1);
  }
  c->tab[i] = (fc_ptr){.p = p, .gen = c->gen, .v = v};
  return v;
}

static bool ptr_find(fcache *c, const void *p, uint32_t *v) {
  if (!c->indexed) { /* the launches: wanted when a decision is recorded only */
    for (int i = 0; i < c->norig; i++) ptr_first(c, c->orig[i], (uint32_t)i);
    c->indexed = true;
  }
  size_t i = ptr_hash(p, c->tcap);
  while (c->tab[i].gen == c->gen) {
    if (c->tab[i].p == p) return *v = c->tab[i].v, true;
    i = (i + 1) & (c->tcap - 1);
  }
  return false;
}

static bool one_element(const ty_store *s) {
  for (int d = 0; d < s->ndim; d++)
    if (s->shape[d] > 1 && s->strides[d] != 0) return false;
  return true;
}

/* The launch table has room for twice n launches (a power of two, at least
 * 64); a table made anew is empty for any gen from 1. */
static bool table_fit(fcache *c, int n) {
  size_t cap = c->tcap > 64 ? c->tcap : 64;
  while (cap < 2 * (size_t)n) cap *= 2;
  if (cap <= c->tcap) return true;
  fc_ptr *t = ty__calloc(cap, sizeof *t);
  if (!t) return false;
  free(c->tab);
  c->tab = t;
  c->tcap = cap;
  c->gen = 1;
  return true;
}

/* The window's launches into c->orig (c->norig of them). */
static bool copy_window(fcache *c, const ty_runtime *rt) {
  const int n = rt->nwindow;
  if (n > c->cap_orig) {
    ty_pending **o = ty__realloc(c->orig, (size_t)n * sizeof *o);
    if (!o) return false;
    c->orig = o;
    c->cap_orig = n;
  }
  memcpy(c->orig, rt->window, (size_t)n * sizeof *c->orig);
  c->norig = n;
  return true;
}

/* The window's key into c->key; false when the window is not remembered. */
static bool make_key(fcache *c, ty_runtime *rt, bool full, int n0) {
  const int n = rt->nwindow;
  const ty_task *fused = ty__fused_task(rt);
  /* the launch table (filled when a decision is recorded): twice the launches */
  if (!table_fit(c, n)) return false;
  if (++c->gen == 0) {
    memset(c->tab, 0, c->tcap * sizeof *c->tab);
    c->gen = 1;
  }
  if (!copy_window(c, rt)) return false;
  c->klen = 0;
  if (!key_grow(c, 2)) return false;
  c->key[c->klen++] = (uint64_t)n | (uint64_t)n0 << 32;
  c->key[c->klen++] = full;
  const uint64_t seq0 = rt->window[0]->seq;
  /* where each store and storage was first seen: the flush scratch of
   * window.c and stream.c (epoch, then wcount / idx), under an epoch of our
   * own */
  const uint64_t ep = c->ep = ++rt->flush_epoch;
  /* the hash: the launches' tasks and counts only (cheap); a hit compares
   * the whole key */
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
  for (int i = 0; i < n; i++) {
    const ty_pending *l = rt->window[i];
    const ty_policy *p = &l->pol->p;
    /* not remembered (checked here, not in a walk of its own: ~11
     * instructions a launch; what was marked and copied so far is scratch) */
    if (l->task == fused || l->fuse_end.kind || p->memory > 0) return false;
    const bool mm = l->origin[0] == 'm' && strncmp(l->origin, "matmul k=", 9) == 0;
    const size_t olen = mm ? strlen(l->origin) : 0;
    const size_t sw = (l->scalar_bytes + 7) / 8, ow = (olen + 7) / 8;
    if (!key_grow(c, 8 + (size_t)l->ndim + sw + ow + (size_t)l->nargs * (7 + 2 * TY_MAX_RANK))) return false;
    uint64_t *k = c->key + c->klen;
    const uint64_t w = (uint64_t)(uint32_t)l->nargs | (uint64_t)(uint32_t)l->ndim << 16 |
                       (uint64_t)l->scalar_bytes << 32;
    h = (h ^ (uint64_t)(uintptr_t)l->task ^ w) * 0xff51afd7ed558ccdULL;
    *k++ = (uint64_t)(uintptr_t)l->task;
    *k++ = l->seq - seq0;
    *k++ = w;
    *k++ = (uint64_t)(uint32_t)l->max_pieces | (uint64_t)l->nosplit << 32;
    *k++ = (uint64_t)p->mode | (uint64_t)p->target << 8 | (uint64_t)p->fuse << 16 |
           (uint64_t)p->fastmath << 17 | (uint64_t)olen << 24 | (uint64_t)(uint32_t)p->overdecompose << 32;
    *k++ = (uint64_t)p->min_chunk;
    for (int d = 0; d < l->ndim; d++) *k++ = (uint64_t)l->domain[d];
    if (sw) {
      k[sw - 1] = 0;
      memcpy(k, l->scalars, l->scalar_bytes);
      k += sw;
    }
    if (ow) {
      k[ow - 1] = 0;
      memcpy(k, l->origin, olen);
      k += ow;
    }
    for (int j = 0; j < l->nargs; j++) {
      const ty_arg *a = &l->args[j];
      const uint32_t here = (uint32_t)i << 8 | (uint32_t)j;
      *k++ = (uint64_t)a->priv | (uint64_t)a->proj << 4 | (uint64_t)a->redop << 8;
      /* the store object seen before: its view and state are the same (the
       * index says so); else the view, and the storage unless seen before */
      ty_store *s = a->store;
      if (s->epoch != ep) s->epoch = ep, s->wcount = (int)here;
      const uint32_t first = (uint32_t)s->wcount;
      *k++ = first;
      if (first != here) continue;
      ty_storage *st = s->storage;
      if (st->epoch != ep) st->epoch = ep, st->idx = (int)here;
      const uint32_t sfirst = (uint32_t)st->idx;
      const bool one = one_element(s);
      *k++ = (uint64_t)s->dtype | (uint64_t)(uint32_t)s->ndim << 8 | (uint64_t)one << 16 |
             (uint64_t)(one && st->data && ty__storage_host_valid(st, 0, st->nbytes)) << 17 |
             (uint64_t)(uint32_t)s->refs << 32;
      *k++ = (uint64_t)s->offset;
      for (int d = 0; d < s->ndim; d++) *k++ = (uint64_t)s->shape[d];
      for (int d = 0; d < s->ndim; d++) *k++ = (uint64_t)s->strides[d];
      *k++ = sfirst;
      if (sfirst != here) continue;
      *k++ = (uint64_t)(st->data != NULL) | (uint64_t)st->cancelled << 1 | (uint64_t)st->external << 2 |
             (uint64_t)(st->split != NULL) << 3 |
             (uint64_t)(st->data && ty__storage_host_valid(st, 0, st->nbytes)) << 4 |
             (uint64_t)(uint32_t)st->refs << 32;
      *k++ = (uint64_t)st->nbytes;
    }
    c->klen = (size_t)(k - c->key);
  }
  c->hash = h ^ c->klen;
  c->indexed = false;
  return true;
}

/* ---- replay -------------------------------------------------------------------------------- */

/* A note's launch numbers: relative (-seq0) when kept, absolute (+seq0) when replayed. */
static ty_fuse_note note_shift(ty_fuse_note n, uint64_t seq0, bool keep) {
  const uint64_t d = keep ? (uint64_t)0 - seq0 : seq0;
  if (n.kind == TY_NOTE_STOP || n.kind == TY_NOTE_INPLACE) n.seq[0] += d;
  if (n.kind == TY_NOTE_NOT_WITH) n.seq[0] += d, n.seq[1] += d;
  return n;
}

/* Launch l of the window, kept as it is by group g: its note, if any. */
static ty_pending *kept_launch(const fc_group *g, ty_pending *l, uint64_t seq0) {
  if (g->note.kind) {
    l->fuse_end = note_shift(g->note, seq0, false);
    if (g->note.kind == TY_NOTE_FUSE_OFF) l->fuse_end.origin = l->pol->from[TY_AXIS_FUSE];
  }
  return l;
}

/* Fused launch x of group g from its template, numbered and under the
 * policy of its first member m0 (arguments and constants: the caller's). */
static void from_template(ty_pending *x, const fc_group *g, const ty_pending *m0, uint64_t seq0) {
  memcpy(x, g->tmpl, g->head);
  memcpy((char *)x + TAIL, g->tmpl + g->head, TAIL_LEN);
  x->seq = m0->seq;
  x->pol = ty__pol_keep(m0->pol, &x->own_pol);
  x->fuse_end = note_shift(x->fuse_end, seq0, false);
}

/* The run's figures for a replayed fused launch x (head h) of group g. */
static void count_fused(ty_runtime *rt, const fc_group *g, const ty_pending *x, const ty__fhead *h) {
  rt->stats.fused_runs++;
  rt->stats.fused_launches += (uint64_t)g->nm;
  rt->stats.fused_compiled += h->kernel != 0;
  rt->stats.fused_inplace += x->lb_arg != 0;
  rt->stats.bytes_elided += g->elided;
}

/* A replayed fused launch x (head h) of group g not compiled last time:
 * perhaps now. Its members are in[mem[k]]; a kernel found is kept in the
 * group's template for later replays. */
static void late_kernel(ty__fusion *state, const fc_group *g, ty_pending *x, ty__fhead *h,
                        ty_pending *const *in, const int *mem) {
  ty__fused_kernel fn = ty__codegen_kernel(state->cg, x, &h->contig, &h->kernel_kind, &h->pending);
  memcpy(&h->kernel, &fn, sizeof fn);
  if (!fn) return;
  ty_pending *mm[64];
  ty_pending **mp = g->nm <= 64 ? mm : ty__malloc((size_t)g->nm * sizeof *mp);
  if (mp) {
    for (int k = 0; k < g->nm; k++) mp[k] = in[mem[k]];
    ty__fuse_names(x, mp, g->nm);
    if (mp != mm) free(mp);
    /* later replays take the kernel as it is */
    memcpy(g->tmpl + offsetof(ty_pending, scalars), h, sizeof *h);
    memcpy(g->tmpl + g->head + (offsetof(ty_pending, fused_ops) - TAIL), x->fused_ops,
           sizeof x->fused_ops);
  } else { /* no names to give it: the interpreter runs it this time */
    h->kernel = 0;
    h->contig = 0;
    h->kernel_kind = TY__FK_FLAT;
  }
}

static bool replay(fcache *c, ty_runtime *rt, ty__fusion *state, const fc_entry *e) {
  ty_pending *const *in = c->orig;
  const uint64_t seq0 = in[0]->seq;
  /* the fused launches first: out of memory, nothing has changed */
  ty_pending *fs[64], **f = e->ng <= 64 ? fs : ty__malloc((size_t)e->ng * sizeof *f);
  if (!f) return false;
  int nf = 0;
  for (int i = 0; i < e->ng; i++) {
    if (e->g[i].orig >= 0) continue;
    if (!(f[nf] = ty__pending_take(rt))) {
      for (int k = 0; k < nf; k++) f[k]->nargs = 0, ty__pending_drop(rt, f[k]);
      if (f != fs) free(f);
      return false;
    }
    nf++;
  }
  nf = 0;
  for (int i = 0; i < e->ng; i++) {
    const fc_group *g = &e->g[i];
    if (g->orig >= 0) {
      rt->window[i] = kept_launch(g, in[g->orig], seq0);
      continue;
    }
    ty_pending *x = f[nf++];
    from_template(x, g, in[g->members[0]], seq0);
    for (int a = 0; a < x->nargs; a++) {
      x->args[a].store = in[g->args[a] >> 8]->args[g->args[a] & 255].store;
      ty__store_retain(x->args[a].store);
    }
    ty__fhead *h = (ty__fhead *)x->scalars;
    for (int k = 0; k < g->nconst; k++) {
      const ty_store *s = in[g->consts[k] >> 8]->args[g->consts[k] & 255].store;
      uint64_t v = 0;
      memcpy(&v, ty__store_base(s), ty__dtype_size(s->dtype));
      memcpy(x->scalars + h->consts + 8 * (size_t)k, &v, 8);
    }
    if (!h->kernel) late_kernel(state, g, x, h, in, g->members); /* as build() asks */
    count_fused(rt, g, x, h);
    rt->window[i] = x;
  }
  /* the members go (their stores were retained by the fused launches) */
  for (int i = 0; i < e->ng; i++)
    for (int k = 0; k < e->g[i].nm; k++) ty__pending_drop_in(rt, in[e->g[i].members[k]]);
  rt->nwindow = e->ng;
  rt->stats.fuse_cache_hits++;
  if (f != fs) free(f);
  return true;
}

/* A hit with a plan (e->plan; c->orig: the window as it came, uncut): the
 * fused launches straight from the window, with the region views and
 * temporaries they take as arguments made here (the cut's other views,
 * temporaries and ~55 launch records an iteration of CG at 256^2 are never
 * made), and the cut's marks (ty__regions_marks). The same launches, stores
 * and references as the cut and replay() give. False, nothing changed, when
 * memory runs out or the result does not fit the window. */
static bool replay_plan(fcache *c, ty_runtime *rt, ty__fusion *state, const fc_entry *e) {
  ty_pending *const *in = c->orig;
  const int n = c->norig;
  if (e->ng > rt->window_cap) return false;
  ty_store *ss[64], **st = e->nsrc <= 64 ? ss : ty__malloc((size_t)e->nsrc * sizeof *st);
  ty_pending *fs[64], **f = e->ng <= 64 ? fs : ty__malloc((size_t)e->ng * sizeof *f);
  bool kb[256], *keep = n <= 256 ? kb : ty__malloc((size_t)n * sizeof *keep);
  int made = 0, nf = 0;
  bool ok = st && f && keep;
  for (; ok && made < e->nsrc; made++) {
    const fc_src *r = &e->src[made];
    ty_store *base = in[r->u]->args[r->j].store;
    if (r->kind == FS_ORIG) st[made] = base;
    else if (r->kind == FS_VIEW)
      ok = ty__store_view(rt, base, r->nd, r->shape, r->strides, r->off, &st[made]) == TY_OK;
    else ok = ty__store_new(rt, base->dtype, r->nd, r->shape, &st[made]) == TY_OK;
  }
  if (!ok && made > 0) made--; /* the one that failed holds nothing */
  for (int i = 0; ok && i < e->ng; i++)
    if (e->g[i].orig < 0 && !(f[nf++] = ty__pending_take(rt))) nf--, ok = false;
  if (!ok) {
    for (int k = 0; k < nf; k++) f[k]->nargs = 0, ty__pending_drop(rt, f[k]);
    for (int k = 0; k < made; k++)
      if (e->src[k].kind != FS_ORIG) ty__store_release(st[k]);
    if (st != ss) free(st);
    if (f != fs) free(f);
    if (keep != kb) free(keep);
    return false;
  }
  ty__regions_marks(rt, &e->cut, in);
  memset(keep, 0, (size_t)n * sizeof *keep);
  const uint64_t seq0 = in[e->seq_u]->seq;
  nf = 0;
  for (int i = 0; i < e->ng; i++) {
    const fc_group *g = &e->g[i];
    if (g->orig >= 0) {
      keep[g->ou] = true;
      rt->window[i] = kept_launch(g, in[g->ou], seq0);
      continue;
    }
    ty_pending *x = f[nf++];
    from_template(x, g, in[g->dmem[0]], seq0);
    for (int a = 0; a < x->nargs; a++) {
      x->args[a].store = st[g->dargs[a]];
      ty__store_retain(x->args[a].store);
    }
    ty__fhead *h = (ty__fhead *)x->scalars;
    for (int k = 0; k < g->nconst; k++) {
      const ty_store *s = in[g->dconst[k].u]->args[g->dconst[k].j].store;
      const size_t es = ty__dtype_size(s->dtype);
      uint64_t v = 0;
      memcpy(&v, (const char *)s->storage->data + g->dconst[k].off * (int64_t)es, es);
      memcpy(x->scalars + h->consts + 8 * (size_t)k, &v, 8);
    }
    if (!h->kernel) late_kernel(state, g, x, h, in, g->dmem); /* as replay() asks */
    count_fused(rt, g, x, h);
    rt->window[i] = x;
  }
  /* the stores made here are the fused launches' now; the window's launches
   * not kept go (the cut's and the pass's members) */
  for (int k = 0; k < made; k++)
    if (e->src[k].kind != FS_ORIG) ty__store_release(st[k]);
  for (int u = 0; u < n; u++)
    if (!keep[u]) ty__pending_drop(rt, in[u]);
  rt->nwindow = e->ng;
  rt->stats.fuse_cache_hits++;
  if (st != ss) free(st);
  if (f != fs) free(f);
  if (keep != kb) free(keep);
  return true;
}

/* The window after the cut is the one the pass sees: c->orig, and (when
 * stamp) its stores marked with their first argument, as make_key marks
 * them, for ty__fcache_built. */
static bool take_orig(fcache *c, ty_runtime *rt, bool stamp) {
  const int n = rt->nwindow;
  if (!copy_window(c, rt)) return false;
  c->indexed = false;
  if (!stamp) return true; /* a replay: no launch table wanted */
  if (!table_fit(c, n)) return false; /* the launch table, for the cut window's launches */
  const uint64_t ep = c->ep = ++rt->flush_epoch;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < rt->window[i]->nargs; j++) {
      ty_store *s = rt->window[i]->args[j].store;
      if (s->epoch != ep) s->epoch = ep, s->wcount = i << 8 | j;
    }
  return true;
}

bool ty__fcache_replay(ty_runtime *rt, ty__fusion *state, bool full, int n0, bool cut) {
  fcache *c = cache_of(state);
  if (!c) {
    if (cut) ty__regions_cut(rt);
    return false;
  }
  rec_clear(c);
  /* a program whose windows never repeat (FC_COLD misses in a row) pays the
   * key and the recording on one window in FC_COLD_EVERY only, until one hits;
   * the key is of the window before regions.c's cut, which a hit replays */
  if ((c->misses >= FC_COLD && ++c->skipped % FC_COLD_EVERY != 0) || !make_key(c, rt, full, n0)) {
    if (cut) ty__regions_cut(rt);
    return false;
  }
  for (int i = 0; i < FC_SLOTS; i++) {
    const fc_entry *e = &c->e[i];
    if (e->len == c->klen && e->hash == c->hash && memcmp(e->key, c->key, c->klen * sizeof *c->key) == 0) {
      c->misses = 0;
      c->hit = (fc_entry *)e;
      c->hit_flush = rt->stats.flushes;
      if (cut && e->plan && replay_plan(c, rt, state, e)) return true;
      c->hit_flush = 0;
      if (cut && !ty__regions_replay(rt, &e->cut)) { /* out of memory: the window as it came */
        ty__regions_cut(rt);
        return false;
      }
      if (!take_orig(c, rt, false)) return false;
      if (!replay(c, rt, state, e)) return false;
      /* a plan that failed (out of memory) made the window otherwise: its
       * waves are not the plan's */
      if (!(cut && e->plan)) c->hit_flush = rt->stats.flushes;
      return true;
    }
  }
  if (c->misses < FC_COLD) c->misses++;
  ty__cut_rec_free(&c->cut);
  if (cut) ty__regions_cut_rec(rt, &c->cut);
  if (c->cut.fail || !take_orig(c, rt, true)) return false;
  c->recording = true;
  c->plan = cut && c->cut.ng > 0 && c->cut.from && c->cut.nfrom == c->norig;
  return false;
}

/* ---- recording ----------------------------------------------------------------------------- */

/* The plan's store for argument j of the cut window's launch ci, which is s:
 * its index in c->rs, -1 when out of memory. */
static int plan_src(fcache *c, const ty_store *s, int ci, int j) {
  for (int k = 0; k < c->nrs; k++)
    if (c->rsp[k] == s) return k;
  if (c->nrs == c->cap_rs) {
    int cap = c->cap_rs ? 2 * c->cap_rs : 64;
    fc_src *r = ty__realloc(c->rs, (size_t)cap * sizeof *r);
    if (r) c->rs = r;
    const ty_store **p = r ? ty__realloc(c->rsp, (size_t)cap * sizeof *p) : NULL;
    if (!p) return -1;
    c->rsp = p;
    c->cap_rs = cap;
  }
  fc_src *r = &c->rs[c->nrs];
  memset(r, 0, sizeof *r);
  const int fr = c->cut.from[ci];
  r->j = j;
  if (fr >= 0) {
    r->kind = FS_ORIG;
    r->u = fr;
  } else {
    r->kind = (c->cut.fresh[ci] >> j) & 1 ? FS_FRESH : FS_VIEW;
    r->u = -1 - fr;
    r->nd = s->ndim;
    r->off = s->offset;
    for (int d = 0; d < s->ndim; d++) r->shape[d] = s->shape[d], r->strides[d] = s->strides[d];
  }
  c->rsp[c->nrs] = s;
  return c->nrs++;
}

/* Fused launch f's plan (group g, recorded on the cut window): its members,
 * arguments and constants in the window as it came. c->plan goes false when
 * it cannot be planned. */
static void plan_group(fcache *c, fc_group *g, const ty_pending *f, ty_pending *const *m,
                       const int16_t *ck, const int16_t *cj) {
  const int *from = c->cut.from;
  g->dmem = ty__malloc(((size_t)g->nm + 1) * sizeof *g->dmem);
  g->dargs = ty__malloc(((size_t)f->nargs + 1) * sizeof *g->dargs);
  g->dconst = ty__malloc(((size_t)g->nconst + 1) * sizeof *g->dconst);
  if (!g->dmem || !g->dargs || !g->dconst) return (void)(c->plan = false);
  for (int k = 0; k < g->nm; k++) {
    const int fr = from[g->members[k]];
    g->dmem[k] = fr >= 0 ? fr : -1 - fr;
  }
  for (int a = 0; a < f->nargs; a++) {
    const int ci = (int)(g->args[a] >> 8);
    if (ci >= c->cut.nfrom || (g->dargs[a] = plan_src(c, f->args[a].store, ci, (int)(g->args[a] & 255))) < 0)
      return (void)(c->plan = false);
  }
  for (int k = 0; k < g->nconst; k++) {
    const int ci = (int)(g->consts[k] >> 8), j = (int)(g->consts[k] & 255), fr = from[ci];
    if (fr < 0 && ((c->cut.fresh[ci] >> j) & 1)) return (void)(c->plan = false); /* never: no values */
    g->dconst[k] = (fc_cref){fr >= 0 ? fr : -1 - fr, j, m[ck[k]]->args[cj[k]].store->offset};
  }
}

void ty__fcache_built(ty__fusion *state, const ty_pending *f, ty_pending *const *m, int n,
                      const int16_t *ck, const int16_t *cj, int nconst, uint64_t elided) {
  fcache *c = state ? state->fcache : NULL;
  if (!c || !c->recording || c->rec_fail) return;
  if (c->nrg == c->cap_rg) {
    int cap = c->cap_rg ? 2 * c->cap_rg : 16;
    fc_group *g = ty__realloc(c->rg, (size_t)cap * sizeof *g);
    if (!g) return (void)(c->rec_fail = true);
    c->rg = g;
    c->cap_rg = cap;
  }
  fc_group *g = &c->rg[c->nrg];
  memset(g, 0, sizeof *g);
  g->orig = -1;
  g->nm = n;
  g->nconst = nconst;
  g->elided = elided;
  g->head = offsetof(ty_pending, scalars) + f->scalar_bytes;
  g->tmpl = ty__malloc(g->head + TAIL_LEN);
  g->members = ty__malloc((size_t)n * sizeof *g->members);
  g->args = ty__malloc(((size_t)f->nargs + 1) * sizeof *g->args);
  g->consts = ty__malloc(((size_t)nconst + 1) * sizeof *g->consts);
  c->nrg++; /* freed by rec_clear from here on */
  if (!g->tmpl || !g->members || !g->args || !g->consts) return (void)(c->rec_fail = true);
  memcpy(g->tmpl, f, g->head);
  memcpy(g->tmpl + g->head, (const char *)f + TAIL, TAIL_LEN);
  const ty_fuse_note end = note_shift(f->fuse_end, c->orig[0]->seq, true);
  memcpy(g->tmpl + g->head + (offsetof(ty_pending, fuse_end) - TAIL), &end, sizeof end);
  uint32_t v;
  for (int k = 0; k < n; k++) {
    if (!ptr_find(c, m[k], &v) || v >= (uint32_t)c->norig || c->orig[v] != m[k])
      return (void)(c->rec_fail = true);
    g->members[k] = (int)v;
  }
  for (int a = 0; a < f->nargs; a++) {
    const ty_store *s = f->args[a].store;
    if (s->epoch != c->ep) return (void)(c->rec_fail = true);
    g->args[a] = (uint32_t)s->wcount;
  }
  for (int k = 0; k < nconst; k++) {
    if (ck[k] < 0 || ck[k] >= n) return (void)(c->rec_fail = true);
    g->consts[k] = (uint32_t)g->members[ck[k]] << 8 | (uint32_t)cj[k];
  }
  if (c->plan) plan_group(c, g, f, m, ck, cj);
}

void ty__fcache_done(ty_runtime *rt, ty__fusion *state) {
  fcache *c = state ? state->fcache : NULL;
  if (!c || !c->recording) return;
  const ty_task *fused = ty__fused_task(rt);
  const int n = rt->nwindow;
  fc_group *g = c->rec_fail ? NULL : ty__calloc((size_t)n + 1, sizeof *g);
  uint64_t *key = g ? ty__malloc(c->klen * sizeof *key) : NULL;
  bool ok = key != NULL;
  int built = 0;
  for (int i = 0; i < n && ok; i++) {
    const ty_pending *l = rt->window[i];
    if (l->task == fused) {
      if (built == c->nrg) ok = false;
      else g[i] = c->rg[built++]; /* taken over: no longer the recording's */
      continue;
    }
    uint32_t v;
    if (!ptr_find(c, l, &v) || v >= (uint32_t)c->norig || c->orig[v] != l) {
      ok = false;
      break;
    }
    g[i].orig = (int)v;
    g[i].note = note_shift(l->fuse_end, c->orig[0]->seq, true);
    if (c->plan) {
      g[i].ou = c->cut.from[v];
      if (g[i].ou < 0) c->plan = false; /* a launch of the cut kept as it is */
    }
  }
  ok = ok && built == c->nrg;
  if (!ok) {
    /* the groups taken over are still the recording's: rec_clear frees them */
    free(g);
    free(key);
    rec_clear(c);
    return;
  }
  fc_src *src = c->plan ? ty__malloc(((size_t)c->nrs + 1) * sizeof *src) : NULL;
  const bool plan = src != NULL;
  if (plan) memcpy(src, c->rs, (size_t)c->nrs * sizeof *src);
  const int nsrc = c->nrs, seq_u = plan ? (c->cut.from[0] >= 0 ? c->cut.from[0] : -1 - c->cut.from[0]) : 0;
  c->nrg = 0;
  rec_clear(c);
  fc_entry *e = &c->e[c->next];
  c->next = (c->next + 1) % FC_SLOTS;
  entry_free(e);
  memcpy(key, c->key, c->klen * sizeof *key);
  *e = (fc_entry){.hash = c->hash, .key = key, .len = c->klen, .g = g, .ng = n, .cut = c->cut,
                  .plan = plan, .seq_u = seq_u, .src = src, .nsrc = plan ? nsrc : 0};
  c->cut = (ty__cut_rec){0};
}

/* ---- the waves ----------------------------------------------------------------------------- */

/* The entry this flush's window was replayed from, or NULL (a miss, the
 * cache off, a window of one launch that ty__fuse passed by). Flush numbers
 * start at 1: hit_flush 0 is no hit. */
static fc_entry *hit_of(ty_runtime *rt) {
  const ty__fusion *state = (const ty__fusion *)ty_task_data(ty__fused_task(rt));
  const fcache *c = state ? state->fcache : NULL;
  return c && c->hit_flush == rt->stats.flushes && c->hit ? c->hit : NULL;
}

bool ty__fcache_waves(ty_runtime *rt, int n, int favor, bool host_only, int *wave_of,
                      ty_sched_stats *ss) {
  const fc_entry *e = hit_of(rt);
  const fc_waves *v = e ? e->waves : NULL;
  if (!v || v->n != n || v->favor != favor || v->host != host_only) return false;
  memcpy(wave_of, v->wave_of, (size_t)n * sizeof *wave_of);
  *ss = v->ss;
  return true;
}

void ty__fcache_keep_waves(ty_runtime *rt, int n, int favor, bool host_only, const int *wave_of,
                           const ty_sched_stats *ss) {
  fc_entry *e = hit_of(rt);
  if (!e || n < 1) return;
  fc_waves *v = e->waves;
  if (!v || v->n != n) {
    v = ty__realloc(v, sizeof *v + (size_t)n * sizeof *v->wave_of);
    if (!v) return;
    e->waves = v;
  }
  memcpy(v->wave_of, wave_of, (size_t)n * sizeof *wave_of);
  v->n = n;
  v->favor = favor;
  v->host = host_only;
  v->ss = *ss;
}
