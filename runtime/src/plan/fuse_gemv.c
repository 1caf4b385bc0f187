/*
 * fuse_gemv.c — one pass over X for a vector-matrix product whose vector is
 * an element-wise function of X times a vector (logistic regression's
 * gradient, bench/workloads/logreg.lua):
 *
 *   scores = X:dot(w); predictions = 1/(1+exp(-scores)); err = y - predictions
 *   g = err:dot(X)
 *
 * After the fusion pass (fuse.c) the window holds, in a row,
 *   L1  matmul (n, 1): z = X w, a thin product (k = f <= TY__THIN_K)
 *   F   fused (n,): the element-wise chain, writing e (err) among others
 *   L3  matmul: e X, either one (1, f) launch, or ops.c's k split: a batched
 *       (c, 1, f) launch of chunks of kc = n / c rows into partials P,
 *   L3r and, when c kc < n, a (1, f) launch of the last n - c kc rows into P[c]
 * (the ordered sum over P follows, unchanged). Unfused, this reads X twice.
 * This pass replaces the launches by one launch of the task "gemv_chain"
 * (kernels_gemv.c) that makes, per chunk and per cache-sized block of rows,
 * z's rows, the run F over them and e's rows times X's, reading X once.
 *
 * Same bits: z's elements and the chunks' sums are the thin kernels' (a
 * fixed order within a row and within a chunk, matmul_2d uses them too), and
 * F runs its own kernel on each block's rows (element-wise: the same values
 * for any box); every store the launches wrote (z, e, F's other outputs, P)
 * is written with the values it had unfused.
 *
 * Conditions, else the launches stay as they are: the four (three) launches
 * adjacent, f32 or f64, CPU only (none may run on a GPU), fuse = true and
 * not task mode, not streamed, one rank; F has no reduction, no user task,
 * no in-place rows, all its arguments aligned with its domain (n,), none of
 * them X, w or P, and it writes e; the combined launch fits TY_MAX_ARGS and
 * TY_MAX_SCALAR_BYTES. explain shows the launch as task gemv_chain with
 * `fused N launches: gemv_chain matmul <F's operations> matmul`.
 */
#include "internal.h"
#include "exec_gpu.h"
#include "fused.h"
#include "kernels.h"
#include "regions.h" /* ty__pending_take, ty__pending_drop */

#include <stdio.h>
#include <string.h>

static bool plain(const ty_runtime *rt, const ty_pending *l) {
  return l->pol->p.fuse && l->pol->p.mode != TY_MODE_TASK && l->pol->p.memory == 0 &&
         !ty__gpu_may_run(rt, l);
}

static bool is_matmul(const ty_runtime *rt, const ty_pending *l) {
  (void)rt;
  return l->task->cpu == ty__matmul_variant && l->nargs == 3;
}

/* s views storage `of` with element offset off */
static bool at(const ty_store *s, const ty_store *of, int64_t off) {
  return s->storage == of->storage && s->offset == off;
}

/* F's sub-operations are element-wise only */
static bool elementwise_run(const ty_pending *f) {
  const ty__fhead *h = (const ty__fhead *)f->scalars;
  if (f->scalar_bytes < sizeof *h || h->magic != TY__FUSE_MAGIC || h->bytes > f->scalar_bytes)
    return false;
  const ty__fsub *s = ty__fsub_first(h);
  for (int k = 0; k < h->nsub; k++, s = ty__fsub_next(s))
    if (s->kind != TY__FK_UNARY && s->kind != TY__FK_BINARY && s->kind != TY__FK_WHERE &&
        s->kind != TY__FK_CAST && s->kind != TY__FK_FILL)
      return false;
  return true;
}

typedef struct chain {
  ty_pending *l1, *f, *l3, *l3r;
  int e_arg;     /* F's argument that L3 reads */
  int64_t c, kc; /* chunks of L3 (1: no split) and rows per chunk */
} chain;

/* Whether w[i..] starts a chain; fills *ch. */
static bool match(const ty_runtime *rt, ty_pending **w, int i, int n, chain *ch) {
  if (i + 2 >= n) return false;
  ty_pending *l1 = w[i], *f = w[i + 1], *l3 = w[i + 2];
  if (!is_matmul(rt, l1) || l1->ndim != 2 || l1->domain[1] != 1 || !plain(rt, l1)) return false;
  const ty_store *X = l1->args[1].store, *W = l1->args[2].store, *Z = l1->args[0].store;
  const ty_dtype t = Z->dtype;
  const int64_t nr = l1->domain[0], fe = X->ndim == 2 ? X->shape[1] : 0;
  if ((t != TY_F32 && t != TY_F64) || X->ndim != 2 || fe < 2 || fe > TY__THIN_K || nr < 2 ||
      l1->args[1].proj != TY_PROJ_WHOLE || l1->args[2].proj != TY_PROJ_WHOLE)
    return false;
  /* F */
  if (f->task != ty__fused_task(rt) || f->ndim != 1 || f->domain[0] != nr || f->lb_arg ||
      !plain(rt, f) || f->nargs + 4 > TY_MAX_ARGS ||
      f->scalar_bytes + sizeof(ty__gemv_chain_args) > TY_MAX_SCALAR_BYTES || !elementwise_run(f))
    return false;
  /* L3: e X, split or not */
  /* its output f64 for an f32 chain: ops.c's f64 partials of a split k */
  const ty_dtype pt = l3->args[0].store->dtype;
  if (!is_matmul(rt, l3) || !plain(rt, l3) || (pt != t && !(t == TY_F32 && pt == TY_F64)))
    return false;
  const ty_store *A = l3->args[1].store, *B = l3->args[2].store;
  int64_t c, kc;
  if (l3->ndim == 3 && l3->domain[1] == 1 && l3->domain[2] == fe && A->ndim == 3 &&
      B->ndim == 3) {
    c = l3->domain[0];
    kc = A->shape[2];
    if (B->shape[1] != kc || B->strides[0] != kc * B->strides[1] ||
        A->strides[0] != kc * A->strides[2] || c * kc > nr)
      return false;
  } else if (l3->ndim == 2 && l3->domain[0] == 1 && l3->domain[1] == fe && A->ndim == 2 &&
             B->ndim == 2 && A->shape[1] == nr) {
    c = 1;
    kc = nr;
  } else {
    return false;
  }
  const int ad = A->ndim - 1, bd = B->ndim - 2; /* A's k dim, B's row dim */
  if (!at(B, X, X->offset) || B->strides[bd] != X->strides[0] || B->strides[bd + 1] != X->strides[1])
    return false;
  /* e: the argument of F that L3's A is a view of */
  int e_arg = -1;
  for (int a = 0; a < f->nargs; a++) {
    const ty_arg *fa = &f->args[a];
    const ty_store *s = fa->store;
    if (fa->proj != TY_PROJ_ALIGNED || fa->priv == TY_PRIV_REDUCE) return false;
    if (s->storage == X->storage || s->storage == W->storage ||
        s->storage == l3->args[0].store->storage)
      return false;
    /* z through its own view only: a block's rows of F read the rows of z
     * the block has made (a reversed or shifted z would read rows not made) */
    if (s->storage == Z->storage && (s->offset != Z->offset || s->strides[0] != Z->strides[0]))
      return false;
    if (fa->priv != TY_PRIV_IN && s->ndim == 1 && at(A, s, s->offset) &&
        A->strides[ad] == s->strides[0] && s->dtype == t)
      e_arg = a;
  }
  if (e_arg < 0) return false;
  ch->l3r = NULL;
  if (c * kc < nr) { /* the remainder's launch */
    if (i + 3 >= n) return false;
    ty_pending *r = w[i + 3];
    const ty_store *P = l3->args[0].store, *Ar = r->args[1].store, *Br = r->args[2].store;
    const ty_store *Cr = r->args[0].store, *E = f->args[e_arg].store;
    const int64_t rest = nr - c * kc;
    if (!is_matmul(rt, r) || !plain(rt, r) || r->ndim != 2 || r->domain[0] != 1 ||
        r->domain[1] != fe || Ar->ndim != 2 || Ar->shape[1] != rest || Br->ndim != 2 ||
        !at(Ar, E, E->offset + c * kc * E->strides[0]) || Ar->strides[1] != E->strides[0] ||
        !at(Br, X, X->offset + c * kc * X->strides[0]) || Br->strides[0] != X->strides[0] ||
        Br->strides[1] != X->strides[1] || Cr->ndim != 2 ||
        !at(Cr, P, P->offset + c * P->strides[0]) || Cr->strides[1] != P->strides[2])
      return false;
    ch->l3r = r;
  }
  ch->l1 = l1, ch->f = f, ch->l3 = l3, ch->e_arg = e_arg, ch->c = c, ch->kc = kc;
  return true;
}

static ty_arg arg(ty_store *s, ty_privilege priv, ty_projection proj) {
  ty_store_retain(s);
  return (ty_arg){.store = s, .priv = priv, .redop = TY_REDOP_NONE, .proj = proj};
}

/* The launch of the task gemv_chain for ch, or NULL (no memory: the
 * launches stay). */
static ty_pending *build(ty_runtime *rt, const chain *ch) {
  const ty_pending *l1 = ch->l1, *f = ch->f, *l3 = ch->l3;
  ty_store *P3 = l3->args[0].store, *sums = NULL;
  const int64_t fe = l1->args[1].store->shape[1];
  const int64_t nb = ch->c + (ch->l3r != NULL);
  if (l3->ndim == 3 && !ch->l3r) {
    sums = P3;
    ty_store_retain(sums);
  } else { /* P with its remainder matrix, or the (1, f) result as (1, 1, f) */
    const int64_t shape[3] = {nb, 1, fe};
    const int64_t strides[3] = {l3->ndim == 3 ? P3->strides[0] : 0, 0, P3->strides[P3->ndim - 1]};
    if (ty__store_view(rt, P3, 3, shape, strides, P3->offset, &sums)) return NULL;
  }
  ty_pending *g = ty__pending_take(rt);
  if (!g) {
    ty_store_release(sums);
    return NULL;
  }
  memcpy(g, l3, sizeof *g);
  g->pol = ty__pol_keep(l3->pol, &g->own_pol);
  g->task = ty__gemv_chain_task(rt);
  g->seq = l1->seq;
  g->ndim = 3;
  g->domain[0] = nb, g->domain[1] = 1, g->domain[2] = fe;
  g->args[0] = (ty_arg){.store = sums, .priv = TY_PRIV_OUT, .redop = TY_REDOP_NONE,
                        .proj = TY_PROJ_ALIGNED};
  g->args[1] = arg(l1->args[1].store, TY_PRIV_IN, TY_PROJ_WHOLE);
  g->args[2] = arg(l1->args[2].store, TY_PRIV_IN, TY_PROJ_WHOLE);
  g->args[3] = arg(l1->args[0].store, TY_PRIV_OUT, TY_PROJ_WHOLE);
  for (int a = 0; a < f->nargs; a++) g->args[4 + a] = arg(f->args[a].store, f->args[a].priv, TY_PROJ_WHOLE);
  g->nargs = 4 + f->nargs;
  const ty__gemv_chain_args ga = {.kc = ch->kc, .e_arg = 4 + ch->e_arg};
  memcpy(g->scalars, &ga, sizeof ga);
  memcpy(g->scalars + sizeof ga, f->scalars, f->scalar_bytes);
  g->scalar_bytes = sizeof ga + f->scalar_bytes;
  g->fop = 0;
  g->lb_arg = g->lb_up = g->lb_dn = 0;
  g->fused = f->fused + 2 + (ch->l3r != NULL);
  char ops[sizeof g->fused_ops - 16]; /* room for the two names */
  ty__strlcpy(ops, f->fused_ops, sizeof ops);
  snprintf(g->fused_ops, sizeof g->fused_ops, "matmul %s matmul", ops);
  g->fuse_end = (ty_fuse_note){.kind = TY_NOTE_TEXT,
                               .why = "gemv chain: X w, the run and e X in one pass over X"};
  return g;
}

void ty__fuse_gemv(ty_runtime *rt) {
  if (rt->dist.nranks > 1 || rt->nwindow < 3) return;
  ty_pending **w = rt->window;
  const int n = rt->nwindow;
  int o = 0;
  for (int i = 0; i < n;) {
    chain ch;
    ty_pending *g = match(rt, w, i, n, &ch) ? build(rt, &ch) : NULL;
    if (!g) {
      w[o++] = w[i++];
      continue;
    }
    const int used = ch.l3r ? 4 : 3;
    for (int k = 0; k < used; k++) ty__pending_drop(rt, w[i + k]);
    w[o++] = g;
    i += used;
    rt->stats.fused_launches += (uint64_t)used - 1;
  }
  rt->nwindow = o;
}
