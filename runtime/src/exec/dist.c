/*
 * dist.c — the executor on several ranks (docs/mpi.md): which rank runs
 * which pieces of a launch, and bringing back what the other ranks wrote.
 *
 * Every rank runs the same script, so the same launches reach the same
 * window, are fused and scheduled into the same waves. What split launches
 * write stays with the rank that wrote it where it can (dist_data.c: split
 * stores, halos); the rest is exchanged after the wave. Rules:
 *  - Ownership comes from the plan alone: a launch over at least
 *    dist.min_elems elements with P >= 2 pieces gives rank r the pieces
 *    [P*r/N, P*(r+1)/N) of N ranks, in the tiling's row-major order; an
 *    ordered launch's (a dot product's bands) go by rows instead, to the
 *    rank holding their rows in a vector cut by rows (ty__dist_first).
 *    Smaller launches run whole on every rank and communicate nothing.
 *  - Before such launches run, the ranks vote (one allgather per wave):
 *    every rank sends each large launch's sequence number, state (runs,
 *    skipped, on GPUs), tiling and the store ids it writes. A rank that could
 *    not prepare one stops all ranks with its message; a different launch or
 *    state is control that diverged and stops them too. Rank 0's tiling is
 *    used everywhere: the tiling can depend on whether Lua's collector has
 *    finalised a temporary (fuse.c writes a store Lua still holds; a
 *    store's size weighs in the piece count), which is rank-local.
 *  - The stores exchanged are the written ones every rank has as an
 *    argument (a store one rank writes and another elided is unreachable
 *    from Lua on both: nobody reads it again), in order of store id.
 *  - After the pieces ran (one allgatherv per wave), every rank holds every
 *    piece's reduction privates and failure (and the output tiles that do
 *    not stay split: xmask), and finish
 *    combines privates in piece order on every rank: the bits of one
 *    process, never an MPI reduction on floats. The first failed piece's
 *    message comes from its owner, so every rank raises the same error.
 *    A wave whose split launches move nothing after it (outputs left split,
 *    no reduction) and cannot fail on their data (built-in element-wise
 *    launches and fused runs of them) makes no exchange: one collective
 *    (the vote) per wave; a piece that fails anyway (out of memory, an
 *    internal error) stops every rank, as any rank-local failure does.
 */
#include "internal.h"
#include "builtins.h"
#include "exec.h"
#include "fused.h"
#include "kernels.h"
#include "linebuf.h"
#include "prepared.h"
#include "trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 128 Ki elements: 1 MiB of float64; below it a launch's pieces cost less
 * than the messages that would bring them back. */
#define TY__DIST_MIN_ELEMS 131072

/* ---- the transport, timed: rt->dist's calls go through these --------------------- */

static void waited(ty_runtime *rt, double t0) {
  rt->stats.dist_wait_ns += (uint64_t)((ty__now() - t0) * 1e9);
}

static int timed_allgatherv(void *ud, const void *mine, void *all, const size_t *counts,
                            const size_t *displs) {
  ty_runtime *rt = ud;
  double t0 = ty__now();
  int rc = rt->transport.allgatherv(rt->transport.ud, mine, all, counts, displs);
  waited(rt, t0);
  return rc;
}

static int timed_bcast(void *ud, void *buf, size_t bytes, int root) {
  ty_runtime *rt = ud;
  double t0 = ty__now();
  int rc = rt->transport.bcast(rt->transport.ud, buf, bytes, root);
  waited(rt, t0);
  return rc;
}

static void timed_abort(void *ud, const char *msg) {
  ty_runtime *rt = ud;
  rt->transport.abort(rt->transport.ud, msg);
}

static int timed_write_at_all(void *ud, const char *path, uint64_t off, const void *part, size_t n,
                              char *err, size_t errlen) {
  ty_runtime *rt = ud;
  double t0 = ty__now();
  int rc = rt->transport.write_at_all(rt->transport.ud, path, off, part, n, err, errlen);
  waited(rt, t0);
  return rc;
}

static int timed_alltoallv(void *ud, const void *send, const size_t *scounts,
                           const size_t *sdispls, void *recv, const size_t *rcounts,
                           const size_t *rdispls) {
  ty_runtime *rt = ud;
  double t0 = ty__now();
  int rc = rt->transport.alltoallv(rt->transport.ud, send, scounts, sdispls, recv, rcounts, rdispls);
  waited(rt, t0);
  return rc;
}

static int timed_ialltoallv(void *ud, const void *send, const size_t *scounts,
                            const size_t *sdispls, void *recv, const size_t *rcounts,
                            const size_t *rdispls, void **req) {
  ty_runtime *rt = ud;
  double t0 = ty__now();
  int rc = rt->transport.ialltoallv(rt->transport.ud, send, scounts, sdispls, recv, rcounts,
                                    rdispls, req);
  waited(rt, t0);
  return rc;
}

static int timed_wait(void *ud, void *req) {
  ty_runtime *rt = ud;
  double t0 = ty__now();
  int rc = rt->transport.wait(rt->transport.ud, req);
  waited(rt, t0);
  return rc;
}

ty_status ty_set_dist(ty_runtime *rt, const ty_dist *d) {
  if (!rt || !d) return TY_EINVAL;
  if (d->nranks < 1 || d->rank < 0 || d->rank >= d->nranks)
    return ty__fail(rt, TY_EINVAL, "ty_set_dist: rank %d of %d ranks", d->rank, d->nranks);
  if (d->nranks > 1 && (!d->allgatherv || !d->bcast || !d->abort))
    return ty__fail(rt, TY_EINVAL, "ty_set_dist: the table needs allgatherv, bcast and abort");
  if (!d->ialltoallv != !d->wait || (d->ialltoallv && !d->alltoallv))
    return ty__fail(rt, TY_EINVAL, "ty_set_dist: ialltoallv and wait go together, with alltoallv");
  if (rt->nwindow > 0)
    return ty__fail(rt, TY_EINVAL, "ty_set_dist: launches are waiting in the window");
  rt->dist = rt->transport = *d;
  if (d->nranks > 1) ty__gemm_cores_set(2); /* ranks agree on a gemm's blocks, whatever their machines */
  if (rt->dist.min_elems <= 0) rt->dist.min_elems = TY__DIST_MIN_ELEMS;
  if (d->nranks > 1) { /* the same calls, timed (ty_stats.dist_wait_ns) */
    rt->dist.ud = rt;
    rt->dist.allgatherv = timed_allgatherv;
    rt->dist.bcast = timed_bcast;
    rt->dist.abort = timed_abort;
    rt->dist.write_at_all = d->write_at_all ? timed_write_at_all : NULL;
    rt->dist.alltoallv = d->alltoallv ? timed_alltoallv : NULL;
    rt->dist.ialltoallv = d->ialltoallv ? timed_ialltoallv : NULL;
    rt->dist.wait = d->wait ? timed_wait : NULL;
  }
  return TY_OK;
}

int ty_rank(const ty_runtime *rt) { return rt && rt->dist.nranks > 1 ? rt->dist.rank : 0; }
int ty_nranks(const ty_runtime *rt) { return rt && rt->dist.nranks > 1 ? rt->dist.nranks : 1; }

/* Stop every rank; rank `who` prints the message, the others wait for it. */
__attribute__((noreturn, format(printf, 3, 4))) static void stop_all(ty_runtime *rt, int who,
                                                                      const char *fmt, ...) {
  if (rt->dist.rank != who) rt->dist.abort(rt->dist.ud, NULL);
  char msg[TY_ERRLEN + 256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  rt->dist.abort(rt->dist.ud, msg);
  abort(); /* the transport's abort does not return */
}

/* One allgather of n bytes per rank; a transport failure stops all. (Not
 * inlined: GCC then takes the VLAs for uninitialised.) */
__attribute__((noinline)) static void gather_same(ty_runtime *rt, const void *mine, void *all,
                                                  size_t n) {
  const int N = rt->dist.nranks;
  size_t counts[N], displs[N];
  for (int r = 0; r < N; r++) counts[r] = n, displs[r] = n * (size_t)r;
  if (rt->dist.allgatherv(rt->dist.ud, mine, all, counts, displs))
    stop_all(rt, rt->dist.rank, "rank %d: the transport failed (allgather)", rt->dist.rank);
  rt->stats.dist_collectives++;
}

int ty__dist_procs(const ty_runtime *rt, const ty_pending *l, int procs) {
  const int all = procs * rt->dist.nranks;
  if (ty__ordered_launch(l)) return all; /* its tiling is fixed by its shape */
  for (int i = 0; i < l->nargs; i++) {
    const ty_arg *a = &l->args[i];
    if (a->priv == TY_PRIV_REDUCE && ty_dtype_is_float(a->store->dtype) &&
        (a->redop == TY_REDOP_SUM || a->redop == TY_REDOP_PROD))
      return procs;
  }
  return all;
}

static int64_t domain_elems(const ty_pending *l) {
  int64_t n = 1;
  for (int k = 0; k < l->ndim; k++) n *= l->domain[k];
  return n;
}

/* What a rank says of one large launch before it runs. */
enum { VOTE_RUNS = 0, VOTE_SKIPPED, VOTE_GPU };
typedef struct vote {
  uint64_t seq;
  int32_t status; /* this rank's prepare */
  int32_t state;
  int32_t pieces;
  int32_t nw;
  int32_t tiles[TY_MAX_RANK];
  uint64_t views[TY_MAX_ARGS]; /* its written aligned arguments (view_hash) */
} vote;

static bool exchanged(const ty_arg *a) {
  return a->priv != TY_PRIV_IN && a->proj == TY_PROJ_ALIGNED;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* An argument as every rank sees it: privilege, dtype and view (not the
 * store's id: a rank may make stores the others do not, a print's). */
static uint64_t view_hash(uint64_t h, const ty_arg *a) {
  const ty_store *s = a->store;
  int32_t kind[5] = {(int32_t)a->priv, (int32_t)a->proj, (int32_t)a->redop, (int32_t)s->dtype,
                     s->ndim};
  h = fnv(h, kind, sizeof kind);
  h = fnv(h, &s->offset, sizeof s->offset);
  h = fnv(h, &s->storage->nbytes, sizeof s->storage->nbytes);
  h = fnv(h, s->shape, (size_t)s->ndim * sizeof *s->shape);
  return fnv(h, s->strides, (size_t)s->ndim * sizeof *s->strides);
}

/* Rank 0's tiling replaces this rank's: results and privates are resized. */
static void retile(ty_runtime *rt, prepared *pr, const vote *v0) {
  bool same = pr->tiling.pieces == v0->pieces;
  for (int k = 0; same && k < pr->l->ndim; k++) same = pr->tiling.tiles[k] == v0->tiles[k];
  if (same) return;
  ty_pending *l = pr->l;
  const int pieces = v0->pieces;
  if (pr->results != &pr->one) free(pr->results);
  pr->results = ty__calloc((size_t)pieces, sizeof *pr->results);
  bool reduces = pr->privates != NULL;
  if (reduces) {
    ty__privates_free(pr);
    pr->privates = ty__calloc((size_t)pieces * (size_t)l->nargs, sizeof *pr->privates);
  }
  if (!pr->results || (reduces && !pr->privates))
    stop_all(rt, rt->dist.rank, "rank %d: out of memory for launch #%llu", rt->dist.rank,
             (unsigned long long)l->seq);
  pr->tiling.pieces = pieces;
  for (int k = 0; k < l->ndim; k++) pr->tiling.tiles[k] = v0->tiles[k];
  if (l->lb_arg) { /* in place, line-buffered: the held rows of rank 0's pieces */
    free(pr->lb_held);
    pr->lb_held = NULL;
    if (ty__linebuf_prepare(rt, pr) != TY_OK)
      stop_all(rt, rt->dist.rank, "rank %d: %s", rt->dist.rank, rt->errmsg);
  }
  if (pr->explain) {
    pr->explain->pieces = pieces;
    for (int k = 0; k < l->ndim; k++) pr->explain->tiles[k] = v0->tiles[k];
  }
}

/* Gather every rank's votes on the nbig large launches ls of a wave (mine:
 * this rank's) into all, rank by rank; stop every rank when they differ. */
static void vote_compare(ty_runtime *rt, const vote *mine, vote *all, int nbig,
                         const ty_pending *const *ls) {
  const int N = rt->dist.nranks;
  gather_same(rt, mine, all, (size_t)nbig * sizeof *mine);
  for (int r = 0; r < N; r++)
    for (int k = 0; k < nbig; k++) {
      const vote *v = &all[(size_t)r * (size_t)nbig + (size_t)k], *v0 = &all[k];
      if (v->status != v0->status) { /* rank-local: the lowest failed rank says why */
        int who = v0->status ? 0 : r;
        stop_all(rt, who, "rank %d: launch #%llu (%s) could not start: %s", who,
                 (unsigned long long)v->seq, ls[k]->task->name, rt->errmsg);
      }
      if (v->seq != v0->seq || v->state != v0->state || v->nw != v0->nw ||
          memcmp(v->views, v0->views, (size_t)v0->nw * sizeof *v0->views))
        stop_all(rt, 0, "control diverged at launch #%llu on rank %d: rank 0 runs launch #%llu "
                 "(state %d, %d outputs), rank %d launch #%llu (state %d, %d outputs)",
                 (unsigned long long)v0->seq, r, (unsigned long long)v0->seq, v0->state, v0->nw, r,
                 (unsigned long long)v->seq, v->state, v->nw);
    }
}

/* The views a launch writes, as the vote compares them. */
static void vote_views(vote *v, const ty_pending *l) {
  for (int i = 0; i < l->nargs; i++)
    if (exchanged(&l->args[i])) v->views[v->nw++] = view_hash(14695981039346656037ull, &l->args[i]);
}

void ty__dist_wave_refused(ty_runtime *rt, ty_pending **w, const int *members, int count) {
  const int N = rt->dist.nranks, me = rt->dist.rank;
  int nbig = 0;
  for (int m = 0; m < count; m++) nbig += domain_elems(w[members[m]]) >= rt->dist.min_elems;
  if (nbig == 0) return; /* the others make no collective for this wave either */
  vote mine[nbig]; /* no heap: this rank is out of it */
  const ty_pending *ls[nbig];
  vote *all = ty__calloc((size_t)nbig * (size_t)N, sizeof *all);
  if (!all) stop_all(rt, me, "rank %d: out of memory for the vote of a wave", me);
  memset(mine, 0, sizeof mine);
  for (int m = 0, k = 0; m < count; m++) {
    const ty_pending *l = w[members[m]];
    if (domain_elems(l) < rt->dist.min_elems) continue;
    ls[k] = l;
    mine[k].seq = l->seq;
    mine[k].status = TY_ENOMEM;
    vote_views(&mine[k++], l);
  }
  ty__fail(rt, TY_ENOMEM, "out of memory for the bookkeeping of a wave of %d launches", count);
  vote_compare(rt, mine, all, nbig, ls); /* returns when every rank refused the wave */
  free(all);
}

void ty__dist_wave_begin(ty_runtime *rt, prepared *prs, const ty_status *sts, int count) {
  const int N = rt->dist.nranks, me = rt->dist.rank;
  int big[count], nbig = 0;
  for (int m = 0; m < count; m++)
    if (domain_elems(prs[m].l) >= rt->dist.min_elems) big[nbig++] = m;
  if (nbig == 0) return; /* small launches: every rank runs them whole */
  vote *mine = ty__calloc((size_t)nbig, sizeof *mine);
  vote *all = ty__calloc((size_t)nbig * (size_t)N, sizeof *all);
  if (!mine || !all) stop_all(rt, me, "rank %d: out of memory for the vote of a wave", me);
  for (int k = 0; k < nbig; k++) {
    const prepared *pr = &prs[big[k]];
    vote *v = &mine[k];
    v->seq = pr->l->seq;
    v->status = sts[big[k]];
    v->state = pr->skip ? VOTE_SKIPPED : pr->gpu ? VOTE_GPU : VOTE_RUNS;
    v->pieces = pr->tiling.pieces;
    for (int d = 0; d < pr->l->ndim; d++) v->tiles[d] = pr->tiling.tiles[d];
    vote_views(v, pr->l);
  }
  const ty_pending *ls[nbig];
  for (int k = 0; k < nbig; k++) ls[k] = prs[big[k]].l;
  vote_compare(rt, mine, all, nbig, ls);
  free(mine);
  for (int k = 0; k < nbig; k++) {
    prepared *pr = &prs[big[k]];
    const vote *v0 = &all[k];
    if (v0->status || v0->state != VOTE_RUNS || v0->pieces < 2) continue; /* fails alike */
    retile(rt, pr, v0);
    const ty_pending *l = pr->l;
    pr->xmask = 0;
    for (int i = 0; i < l->nargs; i++)
      if (exchanged(&l->args[i])) pr->xmask |= (uint64_t)1 << i;
    pr->dist = true;
    rt->stats.dist_launches++;
    /* its bands, or rows, where their rows are (dist_bands.c) */
    pr->by_rows = ty__ordered_launch(l) != 0 || ty__dist_rows_only(l->ndim, &pr->tiling);
    pr->first = ty__dist_first(l->ndim, l->domain, &pr->tiling, pr->by_rows, me, N);
    pr->last = ty__dist_first(l->ndim, l->domain, &pr->tiling, pr->by_rows, me + 1, N);
    if (pr->explain)
      snprintf(ty__record_text(rt, pr->explain, TY_REC_RANKS), TY_REC_RANKS_LEN, "split among %d ranks, pieces %d-%d here (rank %d)",
               N, pr->first + 1, pr->last, me);
  }
  free(all);
}

/* ---- the exchange after the pieces ran -------------------------------------------- */

/* The exchanged arguments of a launch, in argument order (the same on
 * every rank: the vote compared them). */
static int exchange_order(const prepared *pr, int *order) {
  int n = 0;
  for (int i = 0; i < pr->l->nargs; i++)
    if ((pr->xmask >> i) & 1u) order[n++] = i;
  return n;
}

/* Elements of argument a that piece box [lo, hi) sends: its box, or its
 * reduction private (the dims where the store has a non-zero stride). */
static int64_t piece_elems(const ty_arg *a, int ndim, const int64_t *lo, const int64_t *hi) {
  int64_t n = 1;
  for (int k = 0; k < ndim; k++)
    if (a->priv != TY_PRIV_REDUCE || a->store->strides[k] != 0) n *= hi[k] - lo[k];
  return n;
}

/* Copy the box [lo, hi) of store s to buf (pack) or back (unpack). */
static void copy_box(const ty_store *s, int ndim, const int64_t *lo, const int64_t *hi, char *buf,
                     bool pack) {
  ty__copy_view(s->storage->data, ty_dtype_size(s->dtype), s->offset, s->strides, ndim, lo, hi, buf,
                pack);
}

typedef struct failure {
  int32_t piece; /* this rank's first failed piece of the launch, -1: none */
  int32_t code;
  uint64_t reached; /* the written arguments its failed pieces reached (the
                       union of ty_ctx_fail_reached; all ones: every one) */
} failure;

/* Launch k's failure record of the rank whose bytes start at `from` (a
 * rank's bytes may start anywhere: the ranks before it sent any count). */
static failure failure_of(const char *from, int k) {
  failure f;
  memcpy(&f, from + (size_t)k * sizeof f, sizeof f);
  return f;
}

/* The first of rank r's pieces of split launch pr. */
static int first_of(const prepared *pr, int r, int N) {
  return ty__dist_first(pr->l->ndim, pr->l->domain, &pr->tiling, pr->by_rows, r, N);
}

/* Bytes rank r sends for launch pr's pieces (not its failure record). */
static size_t rank_bytes(const ty_runtime *rt, const prepared *pr, const int *order, int nx, int r) {
  const ty_pending *l = pr->l;
  const int N = rt->dist.nranks;
  size_t n = 0;
  for (int p = first_of(pr, r, N); p < first_of(pr, r + 1, N); p++) {
    int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
    ty__piece_box(l->ndim, l->domain, &pr->tiling, p, lo, hi);
    for (int x = 0; x < nx; x++) {
      const ty_arg *a = &l->args[order[x]];
      n += (size_t)piece_elems(a, l->ndim, lo, hi) * ty_dtype_size(a->store->dtype);
    }
  }
  return n;
}

/* Pack (rank r == me) or unpack (another rank's) the pieces of r. */
static char *move_pieces(ty_runtime *rt, prepared *pr, const int *order, int nx, int r, char *buf,
                         bool pack) {
  ty_pending *l = pr->l;
  const int N = rt->dist.nranks;
  for (int p = first_of(pr, r, N); p < first_of(pr, r + 1, N); p++) {
    int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
    ty__piece_box(l->ndim, l->domain, &pr->tiling, p, lo, hi);
    for (int x = 0; x < nx; x++) {
      const int i = order[x];
      const ty_arg *a = &l->args[i];
      const size_t bytes = (size_t)piece_elems(a, l->ndim, lo, hi) * ty_dtype_size(a->store->dtype);
      if (a->priv != TY_PRIV_REDUCE) {
        copy_box(a->store, l->ndim, lo, hi, buf, pack);
      } else {
        private_tile *pt = &pr->privates[(size_t)p * (size_t)l->nargs + (size_t)i];
        if (pack) {
          if (pt->buf) memcpy(buf, pt->buf, bytes);
          else memset(buf, 0, bytes); /* its piece failed: the launch fails */
        } else {
          free(pt->buf);
          if (ty__private_init(a, l->ndim, lo, hi, pt) != TY_OK)
            stop_all(rt, rt->dist.rank, "rank %d: out of memory for a reduction buffer",
                     rt->dist.rank);
          memcpy(pt->buf, buf, bytes);
        }
      }
      buf += bytes;
    }
  }
  return buf;
}

/* A built-in element-wise task or generator: its pieces fail only where
 * the runtime cannot go on (no kernel for a dtype), never on the data. */
static bool builtin_pointwise(const ty_runtime *rt, const ty_task *t) {
  const ty__builtins *b = rt->builtins;
  if (!b || !(t->flags & TY_TASK_POINTWISE)) return false;
  for (int op = 0; op < TY_NOPS; op++)
    if (t == b->op[op]) return true;
  return t == b->where || t == b->cast || t == b->copy || t == b->fill || t == b->arange ||
         t == b->linspace || t == b->random;
}

/* Whether a piece of launch l can fail on its data or its box (a user
 * task's error, an arg reduction's rows): then every rank must learn which
 * piece failed first. Built-in element-wise launches and fused runs of them
 * fail only on an internal error or out of memory. */
static bool may_fail(const ty_runtime *rt, const ty_pending *l) {
  if (builtin_pointwise(rt, l->task)) return false;
  if (!rt->builtins || l->task != rt->builtins->fused) return true;
  const ty__fhead *h = (const ty__fhead *)l->scalars;
  if (l->scalar_bytes < sizeof *h || h->magic != TY__FUSE_MAGIC || h->bytes > l->scalar_bytes)
    return true;
  const ty__fsub *s = ty__fsub_first(h);
  for (int k = 0; k < h->nsub; k++, s = ty__fsub_next(s)) {
    if (s->kind == TY__FK_ARGREDUCE) return true;
    if (s->kind == TY__FK_TASK) {
      const ty_task *t = ty_task_at(rt, s->task);
      if (!t || !builtin_pointwise(rt, t)) return true;
    }
  }
  return false;
}

/* A wave whose split launches exchange nothing (their outputs stay split,
 * no reduction) and cannot fail on their data makes no exchange: a piece
 * that fails anyway (out of memory) stops every rank with its message. */
static bool exchange_needed(ty_runtime *rt, prepared *prs, const int *dist, int nd) {
  for (int k = 0; k < nd; k++)
    if (prs[dist[k]].xmask || may_fail(rt, prs[dist[k]].l)) return true;
  for (int k = 0; k < nd; k++) {
    const prepared *pr = &prs[dist[k]];
    for (int q = pr->first; q < pr->last; q++)
      if (pr->results[q].failed)
        stop_all(rt, rt->dist.rank, "rank %d: launch #%llu (%s) failed in piece %d of %d: %s",
                 rt->dist.rank, (unsigned long long)pr->l->seq, pr->l->task->name, q + 1,
                 pr->tiling.pieces, pr->results[q].msg);
  }
  return false;
}

void ty__dist_wave_end(ty_runtime *rt, prepared *prs, const ty_status *sts, int count) {
  const int N = rt->dist.nranks, me = rt->dist.rank;
  int dist[count], nd = 0;
  for (int m = 0; m < count; m++)
    if (prs[m].dist && sts[m] == TY_OK) dist[nd++] = m;
  if (nd == 0 || !exchange_needed(rt, prs, dist, nd)) return;
  /* a launch written in place, line-buffered, holds rows of its pieces that
   * finish would write: written now, so that the exchange sends them */
  for (int k = 0; k < nd; k++)
    if (prs[dist[k]].lb_held && prs[dist[k]].xmask) ty__linebuf_finish(&prs[dist[k]], true);
  int (*orders)[TY_MAX_ARGS] = ty__malloc((size_t)nd * sizeof *orders);
  int *nxs = ty__malloc((size_t)nd * sizeof *nxs);
  size_t *counts = ty__malloc((size_t)N * 2 * sizeof *counts), *displs = counts + N;
  if (!orders || !nxs || !counts) stop_all(rt, me, "rank %d: out of memory for an exchange", me);
  const size_t head = (size_t)nd * sizeof(failure);
  size_t total = 0;
  for (int k = 0; k < nd; k++) nxs[k] = exchange_order(&prs[dist[k]], orders[k]);
  for (int r = 0; r < N; r++) {
    counts[r] = head;
    for (int k = 0; k < nd; k++) counts[r] += rank_bytes(rt, &prs[dist[k]], orders[k], nxs[k], r);
    displs[r] = total;
    total += counts[r];
  }
  char *mine = ty__malloc(counts[me]), *all = ty__malloc(total);
  if (!mine || !all) stop_all(rt, me, "rank %d: out of memory for an exchange of %zu bytes", me, total);
  failure *f = (failure *)mine;
  char *p = mine + head;
  for (int k = 0; k < nd; k++) {
    prepared *pr = &prs[dist[k]];
    f[k] = (failure){-1, 0, 0};
    for (int q = pr->first; q < pr->last; q++) {
      const piece_result *res = &pr->results[q];
      if (!res->failed) continue;
      if (f[k].piece < 0) f[k].piece = q, f[k].code = res->failed;
      f[k].reached |= res->reach.partial ? res->reach.args : ~UINT64_C(0);
    }
    p = move_pieces(rt, pr, orders[k], nxs[k], me, p, true);
  }
  if (rt->dist.allgatherv(rt->dist.ud, mine, all, counts, displs))
    stop_all(rt, me, "rank %d: the transport failed (exchange of %zu bytes)", me, total);
  rt->stats.dist_collectives++;
  rt->stats.dist_bytes += total - counts[me];
  for (int r = 0; r < N; r++) rt->stats.dist_messages += r != me && counts[r] > head; /* store data */
  for (int k = 0; k < nd; k++) { /* explain: what the exchange of this wave brought */
    ty_record *e = prs[dist[k]].explain;
    char *ranks = e ? ty__record_text(rt, e, TY_REC_RANKS) : NULL;
    size_t len = e ? strlen(ranks) : 0;
    char got[32];
    ty_format_bytes((double)(total - counts[me]), got, sizeof got);
    if (e && len + 1 < TY_REC_RANKS_LEN)
      snprintf(ranks + len, TY_REC_RANKS_LEN - len, "; the wave's exchange brought %s", got);
  }
  free(mine);
  for (int r = 0; r < N; r++) {
    if (r == me) continue;
    char *q = all + displs[r] + head;
    for (int k = 0; k < nd; k++) {
      prepared *pr = &prs[dist[k]];
      const failure fr = failure_of(all + displs[r], k);
      if (fr.piece >= 0) {
        pr->results[fr.piece].failed = fr.code;
        pr->results[fr.piece].reach = (struct ty_reach){fr.reached != ~UINT64_C(0), fr.reached, 0};
      }
      q = move_pieces(rt, pr, orders[k], nxs[k], r, q, false);
    }
  }
  /* the first failed piece of each launch: every rank gets its owner's message */
  for (int k = 0; k < nd; k++) {
    prepared *pr = &prs[dist[k]];
    int first = -1, owner = -1;
    for (int r = 0; r < N; r++) {
      const failure fr = failure_of(all + displs[r], k);
      if (fr.piece >= 0 && (first < 0 || fr.piece < first)) first = fr.piece, owner = r;
    }
    if (first >= 0 &&
        rt->dist.bcast(rt->dist.ud, pr->results[first].msg, sizeof pr->results[first].msg, owner))
      stop_all(rt, me, "rank %d: the transport failed (broadcast)", me);
    if (first >= 0) rt->stats.dist_collectives++;
  }
  free(all);
  free(orders);
  free(nxs);
  free(counts);
}

/* ---- check mode: the launch streams compared ------------------------------------- */

/* What makes a launch the same launch on every rank: its task, domain,
 * arguments (views, privileges) and scalars. */
static uint64_t launch_hash(const ty_pending *l) {
  uint64_t h = 14695981039346656037ull;
  h = fnv(h, l->task->name, strlen(l->task->name));
  h = fnv(h, &l->ndim, sizeof l->ndim);
  h = fnv(h, l->domain, (size_t)l->ndim * sizeof *l->domain);
  for (int i = 0; i < l->nargs; i++) h = view_hash(h, &l->args[i]);
  return fnv(h, l->scalars, l->scalar_bytes);
}

static void describe(const ty_pending *l, char *buf, size_t len) {
  char shape[192];
  ty__shape_str(l->ndim, l->domain, shape, sizeof shape);
  int n = snprintf(buf, len, "'%s' over %s with %d arguments", l->task->name, shape, l->nargs);
  if (l->origin[0] && n > 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, " (at %s)", l->origin);
}

/* A check point's count word: a flush's launch count, or MARK for a step
 * that is not a flush (ty__dist_check_mark). */
#define MARK ((uint64_t)1 << 63)

/* One rank differs from rank 0 and one of them is at a mark (a save, the
 * end of the script) rather than a flush: each says what it is doing. */
__attribute__((noreturn)) static void check_mark_differs(ty_runtime *rt, const uint64_t *sums,
                                                         ty_pending **w, int n, const char *mark) {
  const int N = rt->dist.nranks, me = rt->dist.rank;
  enum { DESC = 512 };
  char desc[DESC] = "", *descs = ty__malloc((size_t)N * DESC);
  if (!descs) stop_all(rt, me, "rank %d: out of memory for the check of a flush", me);
  if (mark || n == 0) {
    snprintf(desc, sizeof desc, "%s", mark ? mark : "flushes nothing");
  } else {
    char first[DESC - 64];
    describe(w[0], first, sizeof first);
    snprintf(desc, sizeof desc, "flushes %d launch%s, the first %s", n, n == 1 ? "" : "es", first);
  }
  gather_same(rt, desc, descs, DESC);
  int who = 1;
  while (who < N - 1 && sums[2 * who] == sums[0] && sums[2 * who + 1] == sums[1]) who++;
  if (me == 0)
    stop_all(rt, 0, "control diverged on rank %d: rank 0 %s; rank %d %s (a rank that flushes "
             "more often than the others: check mode, docs/mpi.md)", who, descs, who,
             descs + (size_t)who * DESC);
  stop_all(rt, 0, "control diverged");
}

/* The check point of a flush (mark NULL: the n launches at w) or of a mark. */
static void check_point(ty_runtime *rt, ty_pending **w, int n, const char *mark) {
  const int N = rt->dist.nranks, me = rt->dist.rank;
  enum { DESC = 512 };
  uint64_t sum[2] = {(uint64_t)n, 0}, *sums = ty__malloc((size_t)N * sizeof sum);
  uint64_t *hs = ty__malloc(((size_t)n + 1) * sizeof *hs);
  if (!sums || !hs) stop_all(rt, me, "rank %d: out of memory for the check of a flush", me);
  if (mark) sum[0] = MARK, sum[1] = fnv(0, mark, strlen(mark));
  for (int i = 0; i < n; i++) {
    hs[i] = launch_hash(w[i]);
    sum[1] = fnv(sum[1], &hs[i], sizeof hs[i]);
  }
  gather_same(rt, sum, sums, sizeof sum);
  bool same = true, marks = false;
  for (int r = 1; r < N && same; r++) same = sums[2 * r] == sums[0] && sums[2 * r + 1] == sums[1];
  for (int r = 0; r < N; r++) marks |= (sums[2 * r] & MARK) != 0;
  if (same) {
    free(sums);
    free(hs);
    return;
  }
  if (marks) check_mark_differs(rt, sums, w, n, mark);
  /* where: every rank's hashes, then the first launch where a rank differs from rank 0 */
  size_t counts[N], displs[N], total = 0;
  for (int r = 0; r < N; r++) {
    counts[r] = (size_t)sums[2 * r] * sizeof *hs;
    displs[r] = total;
    total += counts[r];
  }
  uint64_t *allh = ty__malloc(total + 1);
  if (!allh || rt->dist.allgatherv(rt->dist.ud, hs, allh, counts, displs))
    stop_all(rt, me, "rank %d: the check of a flush failed (memory or transport)", me);
  rt->stats.dist_collectives++;
  int at = -1, who = -1;
  const uint64_t n0 = sums[0];
  for (int r = 1; r < N && who < 0; r++) {
    const uint64_t nr = sums[2 * r], *h0 = allh, *hr = allh + displs[r] / sizeof *hs;
    for (uint64_t i = 0; i < (n0 > nr ? n0 : nr); i++)
      if (i >= n0 || i >= nr || h0[i] != hr[i]) {
        at = (int)i, who = r;
        break;
      }
  }
  /* both sides of the difference, as each rank sees its own launch */
  char desc[DESC] = "", *descs = ty__malloc((size_t)N * DESC);
  if (!descs) stop_all(rt, me, "rank %d: out of memory for the check of a flush", me);
  if (at >= 0 && at < n) describe(w[at], desc, sizeof desc);
  else if (at >= 0) snprintf(desc, sizeof desc, "no launch (the flush ends after %d)", n);
  gather_same(rt, desc, descs, DESC);
  unsigned long long seq = at >= 0 && (uint64_t)at < n0 && me == 0 ? w[at]->seq : 0;
  if (me == 0)
    stop_all(rt, 0, "control diverged at launch #%llu on rank %d: rank 0 runs %s; rank %d runs %s",
             seq, who, descs, who, descs + (size_t)who * DESC);
  stop_all(rt, 0, "control diverged");
}

void ty__dist_check(ty_runtime *rt, ty_pending **w, int n) { check_point(rt, w, n, NULL); }

void ty__dist_check_mark(ty_runtime *rt, const char *what) {
  if (rt->dist.nranks > 1 && rt->dist.check) check_point(rt, NULL, 0, what);
}

void ty_dist_finish(ty_runtime *rt) {
  if (rt) ty__dist_check_mark(rt, "ends the script");
}
