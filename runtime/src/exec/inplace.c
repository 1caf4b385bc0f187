/*
 * inplace.c — an output written into the storage of an input that its launch
 * reads for the last time.
 *
 * `x = x + alpha * p` makes a new store for x every time; the old one dies
 * when the launch has read it. Allocated fresh (or taken from the block
 * cache, store.c), the new one is one more array in the loop's working set:
 * CG at 256 x 256 cycled through 7-8 arrays of 512 KiB an iteration where its
 * C peer updates x, r and p in place (4 arrays, 2 MiB: this machine's L2 per
 * core), and each pass read what the last one wrote from L3. So when the
 * executor prepares a launch (exec.c) that writes a store with no memory yet,
 * it gives that store the block of an input that nothing else will read: the
 * same bytes are read and then written by one pass, in cache.
 *
 * An input lends its block to an output when, at that moment:
 *  - the input is dead after this launch: its store is held only by this
 *    launch's arguments (Lua dropped it: the flush hook collected it; later
 *    launches of the window would hold it too; earlier ones were released
 *    after their wave), and its storage has no other view;
 *  - both are plain host memory: ours (not attached, not a streamed slice),
 *    no GPU copy, one rank (no split), not cancelled, the input allocated;
 *  - both views are the whole storage, contiguous from offset 0, with the
 *    same dtype, shape and storage size, aligned to the launch domain: every
 *    piece reads element i of the input and writes element i of the output
 *    at the same address;
 *  - the launch is element-wise, so element i of the output is computed from
 *    element i of the input before it is written: a built-in unary, binary,
 *    where, cast or copy, or a fused run of them (and fills and reductions)
 *    in which every sub-operation that reads the input comes at or before
 *    the first one that writes the output (a fused run writes a block
 *    sub-operation after sub-operation; a compiled one element-vector after
 *    vector in the same order, fused_codegen.c), the output is not a
 *    reduction's accumulator, and no sub-operation is a registered task or
 *    an arg reduction (their access is their own). Line-buffered runs
 *    (linebuf.c) and streamed scopes are left alone.
 * The values are the same bits: each element sees the same operations; only
 * where the result lands changes. The input keeps its data pointer until it
 * is released, which then frees nothing (ty__storage_lend, store.c).
 * TYCHO_IN_PLACE=0 turns it off.
 */
#include "internal.h"
#include "exec.h"
#include "fused.h"

static bool enabled(ty_runtime *rt) {
  if (!rt->in_place) rt->in_place = ty__env_off("TYCHO_IN_PLACE") ? -1 : 1; /* checked by runtime.c */
  return rt->in_place > 0;
}

/* A store's view: the whole storage, contiguous from offset 0. */
static bool whole_view(const ty_store *s) {
  return s->offset == 0 && ty_store_is_contiguous(s) &&
         (size_t)s->size * ty__dtype_size(s->dtype) == s->storage->nbytes && s->size > 0;
}

/* Plain host memory of ours. */
static bool plain(const ty_storage *st) {
  return !st->external && !st->sliced && !st->gpu && !st->split && !st->cancelled && !st->lent;
}

static bool same_view(const ty_store *a, const ty_store *b) {
  if (a->dtype != b->dtype || a->ndim != b->ndim || a->storage->nbytes != b->storage->nbytes)
    return false;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d] || a->strides[d] != b->strides[d]) return false;
  return true;
}

/* Argument i of l is an input that nothing reads after l. */
static bool dead_input(const ty_pending *l, int i) {
  const ty_arg *a = &l->args[i];
  const ty_store *s = a->store;
  if (a->priv != TY_PRIV_IN || a->proj != TY_PROJ_ALIGNED || !s->storage->data) return false;
  if (!plain(s->storage) || s->storage->uncharged || s->storage->refs != 1 || !whole_view(s))
    return false;
  int held = 0;
  for (int j = 0; j < l->nargs; j++) held += l->args[j].store == s;
  return s->refs == held;
}

/* Argument o of l is an output that may take an input's block. */
static bool fresh_output(const ty_pending *l, int o) {
  const ty_arg *a = &l->args[o];
  const ty_storage *st = a->store->storage;
  return a->priv == TY_PRIV_OUT && a->proj == TY_PROJ_ALIGNED && !st->data && st->uncharged &&
         plain(st) && whole_view(a->store);
}

/* The fused run's description, or NULL. */
static const ty__fhead *fused_head(const ty_runtime *rt, const ty_pending *l) {
  if (l->task != ty__fused_task(rt)) return NULL;
  const ty__fhead *h = (const ty__fhead *)l->scalars;
  if (l->scalar_bytes < sizeof *h || h->magic != TY__FUSE_MAGIC || h->bytes > l->scalar_bytes)
    return NULL;
  return h;
}

/* In fused run h, every read of argument i comes at or before the first
 * element-wise write of argument o, and no reduction touches o. */
static bool fused_order_ok(const ty__fhead *h, int i, int o) {
  int first_write = -1, last_read = -1;
  const ty__fsub *s = ty__fsub_first(h);
  for (int k = 0; k < h->nsub; k++, s = ty__fsub_next(s)) {
    const bool reduce = s->kind == TY__FK_REDUCE;
    for (int q = 0; q < s->nops; q++) {
      const ty__fopnd *op = &s->opnd[q];
      if (op->ref == o) {
        if (reduce || TY__FOPND_PROJ(op) != TY_PROJ_ALIGNED) return false;
        if (TY__FOPND_PRIV(op) != TY_PRIV_IN && first_write < 0) first_write = k;
      }
      if (op->ref == i) {
        if (TY__FOPND_PRIV(op) != TY_PRIV_IN || TY__FOPND_PROJ(op) != TY_PROJ_ALIGNED) return false;
        last_read = k;
      }
    }
  }
  return first_write >= 0 && last_read <= first_write;
}

/* Fused run h has no registered task and no arg reduction. */
static bool fused_elementwise(const ty__fhead *h) {
  const ty__fsub *s = ty__fsub_first(h);
  for (int k = 0; k < h->nsub; k++, s = ty__fsub_next(s))
    if (s->kind == TY__FK_TASK || s->kind == TY__FK_ARGREDUCE) return false;
  return true;
}

/* The launch is element-wise as a whole: a built-in element-wise task, or
 * a fused run (h, its description, or NULL) fused_elementwise accepts. */
static bool elementwise(const ty_runtime *rt, const ty_pending *l, const ty__fhead *h) {
  if (h) return fused_elementwise(h);
  if (l->task == ty__fused_task(rt)) return false; /* a description it cannot read */
  ty__fsub sub;
  ty__fillval fill;
  if (!ty__fuse_builtin(rt, l, &sub, &fill)) return false;
  return sub.kind == TY__FK_UNARY || sub.kind == TY__FK_BINARY || sub.kind == TY__FK_WHERE ||
         sub.kind == TY__FK_CAST;
}

/* The answers that depend on a fused run's description alone
 * (fused_elementwise, fused_order_ok), kept for the last MEMO_N descriptions
 * seen, compared byte for byte: a loop's flushes replay the same few
 * (plan/fuse_cache.c), and the two walks over every sub-operation were
 * ~2,500 instructions of a 64-launch flush (~40 an operation of
 * bench/workloads/overhead.lua); the compare is ~330. */
#define MEMO_N 8

typedef struct memo_entry {
  unsigned char *desc; /* a copy of the description (bytes; cap allocated) */
  uint32_t bytes, cap;
  bool elem;           /* fused_elementwise */
  int i, o;            /* the last pair fused_order_ok answered (-1: none) */
  bool ok;
} memo_entry;

struct ty__inplace_memo {
  memo_entry e[MEMO_N];
  int next; /* the entry a miss replaces */
};

void ty__in_place_free(ty_runtime *rt) {
  if (!rt->inplace_memo) return;
  for (int k = 0; k < MEMO_N; k++) free(rt->inplace_memo->e[k].desc);
  free(rt->inplace_memo);
  rt->inplace_memo = NULL;
}

/* h's entry, made on a miss; NULL when memory runs out (the caller walks). */
static memo_entry *memo_of(ty_runtime *rt, const ty__fhead *h) {
  struct ty__inplace_memo *c = rt->inplace_memo;
  if (!c && !(c = rt->inplace_memo = ty__calloc(1, sizeof *c))) return NULL;
  for (int k = 0; k < MEMO_N; k++) {
    memo_entry *e = &c->e[k];
    if (e->bytes == h->bytes && memcmp(e->desc, h, h->bytes) == 0) return e;
  }
  memo_entry *e = &c->e[c->next];
  if (e->cap < h->bytes) {
    unsigned char *p = ty__malloc(h->bytes);
    if (!p) return NULL;
    free(e->desc);
    e->desc = p;
    e->cap = h->bytes;
  }
  c->next = (c->next + 1) % MEMO_N;
  memcpy(e->desc, h, h->bytes);
  e->bytes = h->bytes;
  e->elem = fused_elementwise(h);
  e->i = e->o = -1;
  return e;
}

/* fused_order_ok through h's entry m (may be NULL) */
static bool order_ok(memo_entry *m, const ty__fhead *h, int i, int o) {
  if (m && m->i == i && m->o == o) return m->ok;
  const bool ok = fused_order_ok(h, i, o);
  if (m) {
    m->i = i;
    m->o = o;
    m->ok = ok;
  }
  return ok;
}

void ty__in_place(ty_runtime *rt, ty_pending *l) {
  if (l->lb_arg || l->pol->p.memory > 0 || rt->dist.nranks > 1 || !enabled(rt)) return;
  bool out = false;
  for (int o = 0; o < l->nargs && !out; o++) out = fresh_output(l, o);
  if (!out) return;
  const ty__fhead *h = fused_head(rt, l);
  memo_entry *m = h ? memo_of(rt, h) : NULL;
  if (m ? !m->elem : !elementwise(rt, l, h)) return;
  for (int o = 0; o < l->nargs; o++) {
    if (!fresh_output(l, o)) continue;
    for (int i = 0; i < l->nargs; i++) {
      if (i == o || !dead_input(l, i) || !same_view(l->args[i].store, l->args[o].store)) continue;
      if (h ? !order_ok(m, h, i, o) : o != 0) continue; /* a built-in writes argument 0 */
      ty__storage_lend(rt, l->args[i].store->storage, l->args[o].store->storage);
      break;
    }
  }
}
