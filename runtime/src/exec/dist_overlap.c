/*
 * dist_overlap.c — the halo exchange of a wave, overlapped with the pieces
 * that read no halo (docs/mpi.md).
 *
 * dist_data.c lists what this rank's pieces read that other ranks hold
 * (halos); here they move. Every rank computes every send and receive
 * count from the plan alone; one exchange per wave, none when no rank
 * sends. With the transport's non-blocking pair (tycho/dist.h: ialltoallv,
 * wait) the exchange is posted before the wave's pieces run: exec.c runs
 * the pieces that read no halo (interior pieces: their boxes, moved by
 * each read's shift, meet no other rank's pieces) while it is in flight,
 * waits, and runs the others after the halos are unpacked. Without the
 * pair, or when a halo rewrites a split record (READ_OUTSIDE: the records
 * change before the pieces run, the unpacking walks the old ones; READ_ROWS:
 * a matmul's A takes the record of its pieces' rows after the unpacking), the
 * exchange is blocking, before the pieces, as before.
 */
#include "internal.h"
#include "dist_halo.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

struct ty__halos {
  halo *hs;
  int nh;
  char *send, *recv;
  void *req;         /* the transport's exchange in flight */
  size_t counts[];   /* 4N: received from rank q, counts[q] bytes at recv + counts[N + q];
                        sent to rank r, counts[2N + r] bytes at send + counts[3N + r] */
};

/* This rank cannot go on (memory, transport): it prints, all stop. */
__attribute__((noreturn, format(printf, 2, 3))) static void stop(ty_runtime *rt,
                                                                  const char *fmt, ...) {
  char msg[160];
  int n = snprintf(msg, sizeof msg, "rank %d: ", rt->dist.rank);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
  va_end(ap);
  rt->dist.abort(rt->dist.ud, msg);
  abort(); /* the transport's abort does not return */
}

static void free_halos(ty__halos *x) {
  free(x->hs);
  free(x->send);
  free(x->recv);
  free(x);
}

/* A split matmul's A (READ_ROWS): once its rows have moved, each rank holds
 * the rows of its pieces (dist_matmul.c), whether or not any moved. */
static void rows_records(const halo *hs, int nh) {
  for (int h = 0; h < nh; h++) {
    ty__split sp;
    if (hs[h].kind == READ_ROWS && hs[h].stg->split &&
        ty__dist_rows_record(hs[h].pr, hs[h].arg, hs[h].stg->split, &sp))
      *hs[h].stg->split = sp;
  }
}

/* Unpack what every rank sent, count it; x is freed. */
static void unpack(ty_runtime *rt, ty__halos *x) {
  const int N = rt->dist.nranks, me = rt->dist.rank;
  for (int q = 0; q < N; q++) {
    const size_t n = x->counts[q];
    if (n == 0) continue;
    const size_t moved = ty__halo_walk(x->hs, x->nh, q, me, N, x->recv + x->counts[N + q], WALK_UNPACK);
    assert(moved == n); /* the records walked are those counted when posting */
    (void)moved;
    rt->stats.dist_bytes += n;
    rt->stats.dist_messages++;
  }
  rt->stats.dist_collectives++;
  rows_records(x->hs, x->nh);
  free_halos(x);
}

ty__halos *ty__dist_halos_post(ty_runtime *rt, halo *hs, int nh, size_t *got) {
  const int N = rt->dist.nranks, me = rt->dist.rank;
  *got = 0;
  bool any = false, overlap = rt->dist.ialltoallv != NULL;
  for (int q = 0; q < N && !any; q++)
    for (int r = 0; r < N && !any; r++)
      any = q != r && ty__halo_walk(hs, nh, q, r, N, NULL, WALK_COUNT) > 0;
  /* a write through another view changes the record after posting; the
   * unpacking walks the records, so that wave's exchange is blocking */
  for (int h = 0; h < nh; h++) overlap &= hs[h].kind != READ_OUTSIDE && hs[h].kind != READ_ROWS;
  if (!any) {
    rows_records(hs, nh);
    free(hs);
    return NULL;
  }
  ty__halos *x = ty__malloc(sizeof *x + 4 * (size_t)N * sizeof(size_t));
  if (!x) stop(rt, "out of memory for the halos of a wave");
  *x = (ty__halos){.hs = hs, .nh = nh};
  size_t stot = 0, rtot = 0;
  size_t *rc = x->counts, *rd = rc + N, *sc = rd + N, *sd = sc + N; /* kept until the wait */
  for (int r = 0; r < N; r++) {
    sc[r] = r == me ? 0 : ty__halo_walk(hs, nh, me, r, N, NULL, WALK_COUNT);
    rc[r] = r == me ? 0 : ty__halo_walk(hs, nh, r, me, N, NULL, WALK_COUNT);
    sd[r] = stot, rd[r] = rtot;
    stot += sc[r], rtot += rc[r];
  }
  x->send = ty__malloc(stot + 1);
  x->recv = ty__malloc(rtot + 1);
  if (!x->send || !x->recv) stop(rt, "out of memory for halos of %zu bytes", stot + rtot);
  for (int r = 0; r < N; r++)
    if (sc[r]) ty__halo_walk(hs, nh, me, r, N, x->send + sd[r], WALK_PACK);
  *got = rtot;
  if (overlap) {
    if (rt->dist.ialltoallv(rt->dist.ud, x->send, sc, sd, x->recv, rc, rd, &x->req))
      stop(rt, "the transport failed (posting the halo exchange)");
    return x;
  }
  if (rt->dist.alltoallv(rt->dist.ud, x->send, sc, sd, x->recv, rc, rd))
    stop(rt, "the transport failed (halo exchange)");
  unpack(rt, x);
  return NULL;
}

void ty__dist_halos_wait(ty_runtime *rt, ty__halos *x) {
  if (!x) return;
  if (rt->dist.wait(rt->dist.ud, x->req)) stop(rt, "the transport failed (halo exchange)");
  unpack(rt, x);
}

bool ty__dist_piece_waits(const ty_runtime *rt, const ty__halos *x, const prepared *pr, int p) {
  if (!x) return false;
  const int N = rt->dist.nranks, me = rt->dist.rank;
  for (int h = 0; h < x->nh; h++) {
    const halo *hs = &x->hs[h];
    if (hs->pr != pr) continue;
    if (hs->kind != READ_PIECES) return true; /* ranges, whole views: all its pieces wait */
    const ty__split *sp = hs->stg->split;
    const ty_pending *l = pr->l;
    int64_t alo[TY_MAX_RANK], ahi[TY_MAX_RANK];
    ty__piece_box(l->ndim, l->domain, &pr->tiling, p, alo, ahi);
    for (int k = 0; k < sp->ndim; k++) alo[k] += hs->shift[k], ahi[k] += hs->shift[k];
    for (int q = 0; q < N; q++) {
      if (q == me) continue;
      const int v1 = ty__dist_first(sp->ndim, sp->shape, &sp->tiling, sp->by_rows, q + 1, N);
      for (int v = ty__dist_first(sp->ndim, sp->shape, &sp->tiling, sp->by_rows, q, N); v < v1; v++) {
        int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
        ty__piece_box(sp->ndim, sp->shape, &sp->tiling, v, lo, hi);
        bool meets = true;
        for (int k = 0; k < sp->ndim; k++)
          meets &= (lo[k] > alo[k] ? lo[k] : alo[k]) < (hi[k] < ahi[k] ? hi[k] : ahi[k]);
        if (meets) return true;
      }
    }
  }
  return false;
}
