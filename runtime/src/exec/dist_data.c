/*
 * dist_data.c — stores split among ranks (docs/mpi.md): lazy coherence.
 *
 * A large launch's pieces are split among ranks (dist.c). What they write is
 * not sent to every rank after the wave: the storage keeps a record
 * (ty__split: the view written, its domain, the tiling) from which every
 * rank knows who holds what: rank r the pieces [P*r/N, P*(r+1)/N) of the
 * view, every rank every element outside it. Rules:
 *  - A split launch that reads a split storage through a view with the
 *    record's strides (the same view, or a shifted one: a stencil's
 *    neighbours) receives only the boxes its own pieces read that other
 *    ranks hold (halos): one exchange per wave, none when nothing moves
 *    (dist_overlap.c: posted before the pieces that read no halo run).
 *    Every rank computes every send and receive list from the plan alone.
 *  - Anything else makes the storage whole first (one allgatherv per wave,
 *    or per host read): host reads (item, totable, printing, save), launches
 *    run whole on every rank (small ones, GPU launches, streamed scopes,
 *    whole-array arguments), reductions into it, a write through another
 *    view or tiling, a read through a view with other strides (transposed,
 *    strided, broadcast).
 *  - A written argument stays split when it is the only split write of its
 *    storage in the wave and the storage is ours (not attached, no GPU
 *    copy); otherwise it is exchanged after the wave (dist.c), as before.
 *    Reduction privates are always exchanged: the bits of one process.
 *  - Every rank makes the same calls in the same order: records are set and
 *    consumed by launches and host reads, which every rank makes alike.
 *    Freeing a storage drops its record, rank-local, without a message.
 */
#include "internal.h"
#include "exec.h"
#include "prepared.h"
#include "dist_halo.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* This rank cannot go on (memory, transport): it prints, all stop. */
__attribute__((noreturn, format(printf, 2, 3))) static void fail_all(ty_runtime *rt,
                                                                      const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  rt->dist.abort(rt->dist.ud, msg);
  abort(); /* the transport's abort does not return */
}

int ty__dist_first(int ndim, const int64_t *domain, const ty_tiling *t, bool by_rows, int r, int N) {
  const int P = t->pieces;
  if (r <= 0) return 0;
  if (r >= N) return P;
  if (!by_rows || ndim < 1) return (int)((int64_t)P * r / N);
  const int64_t row = ty__dist_row(domain[0], r, N); /* rank r's first row (dist_bands.c) */
  for (int p = 0; p < P; p++) {
    int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
    ty__piece_box(ndim, domain, t, p, lo, hi);
    if ((lo[0] + hi[0] - 1) / 2 >= row) return p; /* its middle row is r's or later */
  }
  return P;
}

/* The first of rank r's pieces of split storage record sp (its last is
 * first_piece(sp, r + 1, N)). */
static int first_piece(const ty__split *sp, int r, int N) {
  return ty__dist_first(sp->ndim, sp->shape, &sp->tiling, sp->by_rows, r, N);
}

/* The first of rank r's pieces of split launch pr. */
static int first_of(const prepared *pr, int r, int N) {
  return ty__dist_first(pr->l->ndim, pr->l->domain, &pr->tiling, pr->by_rows, r, N);
}

static int64_t box_elems(int ndim, const int64_t *lo, const int64_t *hi) {
  int64_t n = 1;
  for (int k = 0; k < ndim; k++) n *= hi[k] > lo[k] ? hi[k] - lo[k] : 0;
  return n;
}

char *ty__copy_view(char *data, size_t es, int64_t offset, const int64_t *strides, int ndim,
                       const int64_t *lo, const int64_t *hi, char *buf, bool pack) {
  if (box_elems(ndim, lo, hi) == 0) return buf;
  char *base = data + offset * (int64_t)es;
  if (ndim == 0) {
    if (pack) memcpy(buf, base, es);
    else memcpy(base, buf, es);
    return buf + es;
  }
  const int in = ndim - 1;
  const int64_t run = hi[in] - lo[in], stride = strides[in];
  int64_t idx[TY_MAX_RANK];
  for (int k = 0; k < ndim; k++) idx[k] = lo[k];
  for (;;) {
    int64_t off = 0;
    for (int k = 0; k < ndim; k++) off += idx[k] * strides[k];
    char *p = base + off * (int64_t)es;
    if (stride == 1) {
      if (pack) memcpy(buf, p, (size_t)run * es);
      else memcpy(p, buf, (size_t)run * es);
      buf += (size_t)run * es;
    } else {
      for (int64_t j = 0; j < run; j++, buf += es) {
        if (pack) memcpy(buf, p + j * stride * (int64_t)es, es);
        else memcpy(p + j * stride * (int64_t)es, buf, es);
      }
    }
    int k = in - 1;
    for (; k >= 0; k--) {
      if (++idx[k] < hi[k]) break;
      idx[k] = lo[k];
    }
    if (k < 0) return buf;
  }
}

/* ---- making a storage whole ------------------------------------------------------- */

/* Bytes of split storage sp that rank r holds (its pieces of the view). */
static size_t held_bytes(const ty__split *sp, int r, int N) {
  const size_t es = ty_dtype_size(sp->dtype);
  size_t n = 0;
  for (int q = first_piece(sp, r, N); q < first_piece(sp, r + 1, N); q++) {
    int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
    ty__piece_box(sp->ndim, sp->shape, &sp->tiling, q, lo, hi);
    n += (size_t)box_elems(sp->ndim, lo, hi) * es;
  }
  return n;
}

/* Pack (r is this rank) or unpack (another rank's) rank r's pieces. */
static char *move_held(ty_storage *stg, int r, int N, char *buf, bool pack) {
  const ty__split *sp = stg->split;
  const size_t es = ty_dtype_size(sp->dtype);
  for (int q = first_piece(sp, r, N); q < first_piece(sp, r + 1, N); q++) {
    int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
    ty__piece_box(sp->ndim, sp->shape, &sp->tiling, q, lo, hi);
    buf = ty__copy_view(stg->data, es, sp->offset, sp->strides, sp->ndim, lo, hi, buf, pack);
  }
  return buf;
}

/* One allgatherv brings every rank every piece of the n split storages
 * (the same list, in the same order, on every rank); their records go. */
static void make_whole(ty_runtime *rt, ty_storage **list, int n) {
  if (n == 0) return;
  const int N = rt->dist.nranks, me = rt->dist.rank;
  size_t counts[N], displs[N], total = 0;
  for (int r = 0; r < N; r++) {
    counts[r] = 0;
    for (int i = 0; i < n; i++) counts[r] += held_bytes(list[i]->split, r, N);
    displs[r] = total;
    total += counts[r];
  }
  char *mine = ty__malloc(counts[me] + 1), *all = ty__malloc(total + 1);
  if (!mine || !all) fail_all(rt, "rank %d: out of memory to gather %zu bytes of split stores", me, total);
  char *p = mine;
  for (int i = 0; i < n; i++) p = move_held(list[i], me, N, p, true);
  assert(p == mine + counts[me]);
  if (rt->dist.allgatherv(rt->dist.ud, mine, all, counts, displs))
    fail_all(rt, "rank %d: the transport failed (gathering split stores)", me);
  free(mine);
  rt->stats.dist_collectives++;
  rt->stats.dist_bytes += total - counts[me];
  for (int r = 0; r < N; r++) {
    if (r == me) continue;
    rt->stats.dist_messages += counts[r] > 0;
    char *q = all + displs[r];
    for (int i = 0; i < n; i++) q = move_held(list[i], r, N, q, false);
    assert(q == all + displs[r] + counts[r]);
  }
  free(all);
  for (int i = 0; i < n; i++) {
    free(list[i]->split);
    list[i]->split = NULL;
  }
}

void ty__dist_whole(ty_runtime *rt, ty_storage *stg) {
  if (rt->dist.nranks > 1 && stg && stg->split) make_whole(rt, &stg, 1);
}

enum { RANGE_COUNT = 0, RANGE_PACK, RANGE_UNPACK };

/* The elements of rank r's pieces of split storage stg that lie in its
 * element range [lo, hi): counted, packed (r: this rank) or unpacked (r:
 * another rank), row by row of each piece, in piece order. */
static size_t move_range(ty_storage *stg, int r, int N, int64_t lo, int64_t hi, char *buf,
                         int mode) {
  const ty__split *sp = stg->split;
  const size_t es = ty_dtype_size(sp->dtype);
  const int nd = sp->ndim, in = nd - 1;
  const int64_t st = sp->strides[in];
  size_t bytes = 0;
  for (int q = first_piece(sp, r, N); q < first_piece(sp, r + 1, N); q++) {
    int64_t blo[TY_MAX_RANK], bhi[TY_MAX_RANK], idx[TY_MAX_RANK];
    ty__piece_box(nd, sp->shape, &sp->tiling, q, blo, bhi);
    if (box_elems(nd, blo, bhi) == 0) continue;
    for (int k = 0; k < nd; k++) idx[k] = blo[k];
    for (;;) { /* the row at idx: n elements at p0 + j * st (st >= 1: base_coords' views) */
      int64_t p0 = sp->offset + blo[in] * st;
      for (int k = 0; k < in; k++) p0 += idx[k] * sp->strides[k];
      const int64_t n = bhi[in] - blo[in];
      int64_t j0 = lo > p0 ? (lo - p0 + st - 1) / st : 0, j1 = hi > p0 ? (hi - p0 + st - 1) / st : 0;
      if (j1 > n) j1 = n;
      if (j0 < j1) {
        bytes += (size_t)(j1 - j0) * es;
        for (int64_t j = j0; mode != RANGE_COUNT && j < j1; j++, buf += es) {
          char *e = stg->data + (p0 + j * st) * (int64_t)es;
          if (mode == RANGE_PACK) memcpy(buf, e, es);
          else memcpy(e, buf, es);
        }
      }
      int k = in - 1;
      for (; k >= 0; k--) {
        if (++idx[k] < bhi[k]) break;
        idx[k] = blo[k];
      }
      if (k < 0) break;
    }
  }
  return bytes;
}

void ty__dist_read(ty_runtime *rt, const ty_store *s, const int64_t *index) {
  ty_storage *stg = s->storage;
  if (rt->dist.nranks <= 1 || !stg->split) return;
  const ty__split *sp = stg->split;
  const int N = rt->dist.nranks, me = rt->dist.rank;
  int64_t lo, hi;
  if (index) { /* one element */
    lo = s->offset;
    for (int d = 0; d < s->ndim; d++) lo += index[d] * s->strides[d];
    hi = lo + 1;
  } else {
    uint64_t blo, bhi;
    bool dense;
    ty__store_range(s, &blo, &bhi, &dense);
    lo = (int64_t)(blo / ty_dtype_size(s->dtype));
    hi = (int64_t)((bhi + ty_dtype_size(s->dtype) - 1) / ty_dtype_size(s->dtype));
  }
  int64_t held = 1; /* elements of the split view */
  for (int k = 0; k < sp->ndim; k++) held *= sp->shape[k];
  bool strides_ok = s->dtype == sp->dtype && sp->ndim >= 1 && sp->strides[sp->ndim - 1] >= 1;
  if (!strides_ok || (hi - lo) * 4 >= held) { /* a large part: the whole store, once */
    make_whole(rt, &stg, 1);
    return;
  }
  size_t counts[N], displs[N], total = 0;
  for (int r = 0; r < N; r++) {
    counts[r] = move_range(stg, r, N, lo, hi, NULL, RANGE_COUNT);
    displs[r] = total;
    total += counts[r];
  }
  if (total == 0) return; /* the range lies outside the split view: every rank holds it */
  char *mine = ty__malloc(counts[me] + 1), *all = ty__malloc(total + 1);
  if (!mine || !all) fail_all(rt, "rank %d: out of memory to gather %zu bytes of a split store", me, total);
  move_range(stg, me, N, lo, hi, mine, RANGE_PACK);
  if (rt->dist.allgatherv(rt->dist.ud, mine, all, counts, displs))
    fail_all(rt, "rank %d: the transport failed (gathering part of a split store)", me);
  free(mine);
  rt->stats.dist_collectives++;
  rt->stats.dist_bytes += total - counts[me];
  for (int r = 0; r < N; r++) {
    if (r == me || counts[r] == 0) continue;
    rt->stats.dist_messages++;
    move_range(stg, r, N, lo, hi, all + displs[r], RANGE_UNPACK);
  }
  free(all);
}

/* A list of distinct storages, each added once, in the order first met. */
typedef struct stglist {
  ty_storage **v;
  int n, cap;
} stglist;

static void add_storage(ty_runtime *rt, stglist *s, ty_storage *stg) {
  for (int i = 0; i < s->n; i++)
    if (s->v[i] == stg) return;
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 8;
    ty_storage **v = realloc(s->v, (size_t)cap * sizeof *v);
    if (!v) fail_all(rt, "rank %d: out of memory for the split stores of a wave", rt->dist.rank);
    s->v = v, s->cap = cap;
  }
  s->v[s->n++] = stg;
}

void ty__dist_launch_whole(ty_runtime *rt, const ty_pending *l) {
  stglist s = {0};
  for (int i = 0; i < l->nargs; i++)
    if (l->args[i].store->storage->split) add_storage(rt, &s, l->args[i].store->storage);
  make_whole(rt, s.v, s.n);
  free(s.v);
}

void ty__dist_wave_gpu(ty_runtime *rt, ty_pending **w, const int *members, int count) {
  if (!rt->devices) return;
  stglist s = {0};
  for (int m = 0; m < count; m++) {
    const ty_pending *l = w[members[m]];
    bool any = false;
    for (int i = 0; i < l->nargs && !any; i++) any = l->args[i].store->storage->split != NULL;
    char why[192];
    if (!any || !rt->devices->place(rt, l, why, sizeof why)) continue;
    for (int i = 0; i < l->nargs; i++)
      if (l->args[i].store->storage->split) add_storage(rt, &s, l->args[i].store->storage);
  }
  make_whole(rt, s.v, s.n);
  free(s.v);
}

/* ---- halos: the boxes a launch's pieces read that other ranks hold ------------------ */

/* The view (offset, shape, strides) as base coordinates b of its storage
 * seen as an array whose dim k >= 1 has strides[k-1] / strides[k] elements:
 * element i of the view is element b + i there, one to one while every
 * b[k] + shape[k] fits that extent. False when the view is not of that form
 * (strides not decreasing, not dividing, zero or negative: broadcast,
 * transposed, flipped); *rem is what is left of the offset below the last
 * stride (a strided view's phase). */
static bool base_coords(int ndim, int64_t offset, const int64_t *shape, const int64_t *strides,
                        int64_t *b, int64_t *rem) {
  if (ndim < 1) return false;
  int64_t o = offset;
  for (int k = 0; k < ndim; k++) {
    if (strides[k] < 1 || (k > 0 && (strides[k] >= strides[k - 1] || strides[k - 1] % strides[k])))
      return false;
    b[k] = o / strides[k];
    o -= b[k] * strides[k];
    if (k > 0 && b[k] + shape[k] > strides[k - 1] / strides[k]) return false;
  }
  *rem = o;
  return true;
}

/* Whether argument view s of a split launch reads split storage sp in
 * place: the same strides, so that its element i is element i + shift of
 * the written view (shift 0: the same view; else a stencil's neighbour). */
static bool shifted_view(const ty__split *sp, const ty_store *s, int ldim, int64_t *shift) {
  if (s->ndim != sp->ndim || s->ndim != ldim || s->dtype != sp->dtype) return false;
  for (int k = 0; k < s->ndim; k++)
    if (s->strides[k] != sp->strides[k]) return false;
  int64_t ba[TY_MAX_RANK], bv[TY_MAX_RANK], ra, rv;
  if (!base_coords(sp->ndim, sp->offset, sp->shape, sp->strides, bv, &rv) ||
      !base_coords(s->ndim, s->offset, s->shape, s->strides, ba, &ra) || ra != rv)
    return false;
  for (int k = 0; k < s->ndim; k++) shift[k] = ba[k] - bv[k];
  return true;
}

/* The storage elements [*lo, *hi) from the first to the last element of box
 * [blo, bhi) of view s (strides >= 0: range_view); empty for an empty box. */
static void range_of(const ty_store *s, int ndim, const int64_t *blo, const int64_t *bhi,
                     int64_t *lo, int64_t *hi) {
  *lo = *hi = s->offset;
  if (box_elems(ndim, blo, bhi) == 0) return;
  for (int k = 0; k < ndim; k++) {
    *lo += blo[k] * s->strides[k];
    *hi += (bhi[k] - 1) * s->strides[k];
  }
  *hi += 1;
}

/* Whether argument view s (launch domain of ldim dims) can read split
 * storage sp by element ranges: the same dtype, no negative stride, and a
 * record move_range can walk (its last stride >= 1). */
static bool range_view(const ty__split *sp, const ty_store *s, int ldim) {
  if (s->dtype != sp->dtype || s->ndim != ldim || sp->ndim < 1 || sp->strides[sp->ndim - 1] < 1)
    return false;
  for (int k = 0; k < s->ndim; k++)
    if (s->strides[k] < 0) return false;
  return true;
}

/* The storage elements [*lo, *hi) that rank r's pieces of split launch pr
 * read through view s: from the first element of any of its pieces to the
 * last (the pieces of a rank are consecutive in row-major order: whole rows
 * of a grid cut 3 x 2 among 3 ranks, or of a 4 x 300 x 500 block cut 4 x 2
 * x 1, one range whatever their bounding box). */
static void rank_range(const prepared *pr, const ty_store *s, int r, int N, int64_t *lo,
                       int64_t *hi) {
  const ty_pending *l = pr->l;
  int64_t plo[TY_MAX_RANK], phi[TY_MAX_RANK];
  bool any = false;
  *lo = *hi = s->offset;
  for (int p = first_of(pr, r, N); p < first_of(pr, r + 1, N); p++) {
    ty__piece_box(l->ndim, l->domain, &pr->tiling, p, plo, phi);
    if (box_elems(l->ndim, plo, phi) == 0) continue;
    int64_t a, b;
    range_of(s, l->ndim, plo, phi, &a, &b);
    if (!any || a < *lo) *lo = a;
    if (!any || b > *hi) *hi = b;
    any = true;
  }
}

/* Whether the ranks' pieces of launch pr read view s by ranges without
 * sending much twice: their ranges together no longer than 9/8 of the
 * whole view's (a grid cut by rows: each rank's rows, once; cut by columns
 * among ranks: each rank's range spans nearly the whole view, and the
 * storage goes whole instead). */
static bool ranges_fit(const prepared *pr, const ty_store *s, int N) {
  const ty_pending *l = pr->l;
  int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK], a, b, sum = 0;
  for (int r = 0; r < N; r++) {
    rank_range(pr, s, r, N, &a, &b);
    sum += b - a;
  }
  for (int k = 0; k < l->ndim; k++) lo[k] = 0, hi[k] = l->domain[k];
  range_of(s, l->ndim, lo, hi, &a, &b);
  return sum <= (b - a) + (b - a) / 8;
}

/* Box a minus box b, as at most 2 * nd disjoint boxes (out: lo then hi per
 * box), in a fixed order: along each dim k the slabs below and above b,
 * within b's range on the dims before k. */
static int box_minus(int nd, const int64_t *alo, const int64_t *ahi, const int64_t *blo,
                     const int64_t *bhi, int64_t (*out)[2][TY_MAX_RANK]) {
  int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
  int n = 0;
  for (int k = 0; k < nd; k++) lo[k] = alo[k], hi[k] = ahi[k];
  for (int k = 0; k < nd; k++) {
    if (hi[k] <= lo[k]) return n;
    const int64_t cut[2][2] = {{lo[k], blo[k] < hi[k] ? blo[k] : hi[k]}, {bhi[k] > lo[k] ? bhi[k] : lo[k], hi[k]}};
    for (int side = 0; side < 2; side++) {
      if (cut[side][1] <= cut[side][0]) continue;
      for (int j = 0; j < nd; j++) out[n][0][j] = lo[j], out[n][1][j] = hi[j];
      out[n][0][k] = cut[side][0];
      out[n][1][k] = cut[side][1];
      n++;
    }
    lo[k] = lo[k] > blo[k] ? lo[k] : blo[k]; /* what is left lies within b along k */
    hi[k] = hi[k] < bhi[k] ? hi[k] : bhi[k];
  }
  return n;
}

/* What rank q sends rank r for the reads hs, in order: for READ_PIECES,
 * each of r's pieces of the reading launch (its box moved by the shift into
 * the written view's coordinates) met with each of q's pieces of the
 * written view; for READ_OUTSIDE and READ_ALL, each of q's pieces less, or
 * met with, the view at shift (the same for every r). Counts the bytes, or
 * packs (q: this rank) or unpacks (r: this rank) them. Within one read the
 * boxes are disjoint (r's pieces are, q's pieces are). */
size_t ty__halo_walk(const halo *hs, int nh, int q, int r, int N, char *buf, int mode) {
  size_t bytes = 0;
  for (int h = 0; h < nh; h++) {
    const ty__split *sp = hs[h].stg->split;
    const ty_pending *l = hs[h].pr->l;
    const ty_tiling *lt = &hs[h].pr->tiling;
    const int nd = sp->ndim;
    const size_t es = ty_dtype_size(sp->dtype);
    if (hs[h].kind == READ_RANGE_ALL || hs[h].kind == READ_RANGE) {
      const ty_store *s = l->args[hs[h].arg].store;
      int64_t lo, hi;
      if (hs[h].kind == READ_RANGE) {
        rank_range(hs[h].pr, s, r, N, &lo, &hi);
      } else {
        int64_t vlo[TY_MAX_RANK], vhi[TY_MAX_RANK];
        for (int k = 0; k < l->ndim; k++) vlo[k] = 0, vhi[k] = l->domain[k];
        range_of(s, l->ndim, vlo, vhi, &lo, &hi);
      }
      const size_t n = move_range(hs[h].stg, q, N, lo, hi, buf,
                                  mode == WALK_COUNT ? RANGE_COUNT : mode == WALK_PACK ? RANGE_PACK : RANGE_UNPACK);
      bytes += n;
      if (mode != WALK_COUNT) buf += n;
      continue;
    }
    if (hs[h].kind != READ_PIECES && hs[h].kind != READ_ROWS) { /* q's pieces of the old view, less (or met with) the view */
      int64_t nlo[TY_MAX_RANK], nhi[TY_MAX_RANK], parts[2 * TY_MAX_RANK][2][TY_MAX_RANK];
      for (int k = 0; k < nd; k++) nlo[k] = hs[h].shift[k], nhi[k] = hs[h].shift[k] + l->domain[k];
      for (int v = first_piece(sp, q, N); v < first_piece(sp, q + 1, N); v++) {
        int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
        ty__piece_box(nd, sp->shape, &sp->tiling, v, lo, hi);
        int np = 1;
        if (hs[h].kind == READ_OUTSIDE) {
          np = box_minus(nd, lo, hi, nlo, nhi, parts);
        } else {
          for (int k = 0; k < nd; k++) {
            parts[0][0][k] = lo[k] > nlo[k] ? lo[k] : nlo[k];
            parts[0][1][k] = hi[k] < nhi[k] ? hi[k] : nhi[k];
          }
        }
        for (int b = 0; b < np; b++) {
          const size_t n = (size_t)box_elems(nd, parts[b][0], parts[b][1]) * es;
          bytes += n;
          if (mode != WALK_COUNT && n)
            buf = ty__copy_view(hs[h].stg->data, es, sp->offset, sp->strides, nd, parts[b][0],
                                parts[b][1], buf, mode == WALK_PACK);
        }
      }
      continue;
    }
    for (int p = first_of(hs[h].pr, r, N); p < first_of(hs[h].pr, r + 1, N); p++) {
      int64_t alo[TY_MAX_RANK], ahi[TY_MAX_RANK];
      ty__piece_box(l->ndim, l->domain, lt, p, alo, ahi);
      if (hs[h].kind == READ_ROWS) ty__dist_rows_box(l, hs[h].arg, alo, ahi);
      for (int k = 0; k < nd; k++) alo[k] += hs[h].shift[k], ahi[k] += hs[h].shift[k];
      for (int v = first_piece(sp, q, N); v < first_piece(sp, q + 1, N); v++) {
        int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
        ty__piece_box(nd, sp->shape, &sp->tiling, v, lo, hi);
        for (int k = 0; k < nd; k++) {
          lo[k] = lo[k] > alo[k] ? lo[k] : alo[k];
          hi[k] = hi[k] < ahi[k] ? hi[k] : ahi[k];
        }
        const size_t n = (size_t)box_elems(nd, lo, hi) * es;
        if (n == 0) continue;
        bytes += n;
        if (mode != WALK_COUNT)
          buf = ty__copy_view(hs[h].stg->data, es, sp->offset, sp->strides, nd, lo, hi, buf,
                              mode == WALK_PACK);
      }
    }
  }
  return bytes;
}

/* ---- a wave ------------------------------------------------------------------------- */

/* The record a split launch leaves on the storage of written argument a. */
static ty__split record_of(const prepared *pr, const ty_arg *a) {
  const ty_store *s = a->store;
  ty__split sp = {.ndim = pr->l->ndim, .dtype = s->dtype, .offset = s->offset, .tiling = pr->tiling,
                  .by_rows = pr->by_rows};
  for (int k = 0; k < sp.ndim; k++) {
    sp.shape[k] = pr->l->domain[k];
    sp.strides[k] = s->strides[k];
  }
  return sp;
}

static bool same_record(const ty__split *a, const ty__split *b) {
  if (a->ndim != b->ndim || a->dtype != b->dtype || a->offset != b->offset ||
      a->tiling.pieces != b->tiling.pieces || a->by_rows != b->by_rows)
    return false;
  for (int k = 0; k < a->ndim; k++)
    if (a->shape[k] != b->shape[k] || a->strides[k] != b->strides[k] ||
        a->tiling.tiles[k] != b->tiling.tiles[k])
      return false;
  return true;
}

static bool runs_split(const prepared *pr, ty_status st) { return st == TY_OK && pr->dist && !pr->skip; }

/* Written argument i of split launch pr may stay split: ours, aligned, no
 * stride 0 (each element written by one piece). */
static bool may_stay_split(const prepared *pr, int i) {
  const ty_arg *a = &pr->l->args[i];
  const ty_storage *stg = a->store->storage;
  if (a->priv == TY_PRIV_IN || a->priv == TY_PRIV_REDUCE || a->proj != TY_PROJ_ALIGNED ||
      stg->external || stg->gpu || stg->sliced || !stg->data || a->store->ndim != pr->l->ndim)
    return false;
  for (int k = 0; k < pr->l->ndim; k++)
    if (a->store->strides[k] == 0 && pr->l->domain[k] > 1) return false;
  return true;
}

typedef struct read_at {
  int m, i, kind;
} read_at;

static void add_read(ty_runtime *rt, read_at **reads, int *n, int *cap, int m, int i, int kind) {
  if (*n == *cap) {
    *cap = *cap ? 2 * *cap : 8;
    read_at *v = realloc(*reads, (size_t)*cap * sizeof *v);
    if (!v) fail_all(rt, "rank %d: out of memory for the halos of a wave", rt->dist.rank);
    *reads = v;
  }
  (*reads)[(*n)++] = (read_at){m, i, kind};
}

ty__halos *ty__dist_wave_data(ty_runtime *rt, prepared *prs, const ty_status *sts, int count) {
  if (rt->dist.replicated) return NULL; /* exchanged after the wave: no record is ever made */
  /* which written arguments stay split: the only split write of their storage */
  stglist written = {0}, twice = {0};
  for (int m = 0; m < count; m++) {
    if (!runs_split(&prs[m], sts[m])) continue;
    for (int i = 0; i < prs[m].l->nargs; i++) {
      if (!((prs[m].xmask >> i) & 1u) || prs[m].l->args[i].priv == TY_PRIV_REDUCE) continue;
      ty_storage *stg = prs[m].l->args[i].store->storage;
      int had = written.n;
      add_storage(rt, &written, stg);
      if (written.n == had) add_storage(rt, &twice, stg);
    }
  }
  for (int m = 0; m < count; m++) {
    prs[m].lazy = 0;
    if (!runs_split(&prs[m], sts[m])) continue;
    for (int i = 0; i < prs[m].l->nargs; i++) {
      if (!((prs[m].xmask >> i) & 1u) || !may_stay_split(&prs[m], i)) continue;
      bool dup = false;
      for (int t = 0; t < twice.n && !dup; t++) dup = twice.v[t] == prs[m].l->args[i].store->storage;
      if (!dup) prs[m].lazy |= (uint64_t)1 << i;
    }
  }
  free(written.v);
  free(twice.v);

  /* what each launch needs of the split storages it touches */
  stglist whole = {0};
  int nreads = 0, cap = 0;
  read_at *reads = NULL;
  for (int m = 0; m < count; m++) {
    const prepared *pr = &prs[m];
    const ty_pending *l = pr->l;
    for (int i = 0; i < l->nargs; i++) {
      const ty_arg *a = &l->args[i];
      ty_storage *stg = a->store->storage;
      if (!stg->split) continue;
      bool ok = false; /* read or written in place, without making it whole */
      if (runs_split(pr, sts[m]) && a->proj == TY_PROJ_ALIGNED) {
        if (a->priv == TY_PRIV_IN) {
          int64_t shift[TY_MAX_RANK];
          if (rt->dist.alltoallv && shifted_view(stg->split, a->store, l->ndim, shift)) {
            ok = true;
            add_read(rt, &reads, &nreads, &cap, m, i, READ_PIECES);
          } else if (rt->dist.alltoallv && range_view(stg->split, a->store, l->ndim) &&
                     ranges_fit(pr, a->store, rt->dist.nranks)) { /* another shape: by element ranges */
            ok = true;
            add_read(rt, &reads, &nreads, &cap, m, i, READ_RANGE);
          }
        } else if ((pr->lazy >> i) & 1u) {
          ty__split sp = record_of(pr, a);
          int64_t shift[TY_MAX_RANK];
          if (same_record(&sp, stg->split)) { /* rewritten as it was split: its own pieces */
            ok = true;
          } else if (rt->dist.alltoallv && shifted_view(stg->split, a->store, l->ndim, shift)) {
            /* split again through another view or tiling: each rank gets what
             * its new pieces hold of others' old ones (as a read) and what
             * the new view leaves out of the old one (every rank holds it) */
            ok = true;
            add_read(rt, &reads, &nreads, &cap, m, i, READ_PIECES);
            add_read(rt, &reads, &nreads, &cap, m, i, READ_OUTSIDE);
          }
        }
      } else if (runs_split(pr, sts[m]) && ty__dist_rows_arg(l, i)) {
        /* a split matmul's A: the rows of its pieces (dist_matmul.c) */
        int64_t shift[TY_MAX_RANK];
        ok = rt->dist.alltoallv && shifted_view(stg->split, a->store, l->ndim, shift);
        if (ok) add_read(rt, &reads, &nreads, &cap, m, i, READ_ROWS);
      } else if (!pr->dist && a->proj == TY_PROJ_ALIGNED && a->priv != TY_PRIV_REDUCE) {
        /* run whole on every rank: it needs the whole view it reads; what it
         * writes, every rank writes alike (an OUT view needs nothing) */
        int64_t shift[TY_MAX_RANK];
        int kind = READ_ALL;
        ok = rt->dist.alltoallv && shifted_view(stg->split, a->store, l->ndim, shift);
        if (!ok && rt->dist.alltoallv && range_view(stg->split, a->store, l->ndim))
          ok = true, kind = READ_RANGE_ALL; /* another shape: the view's element range */
        if (ok && a->priv != TY_PRIV_OUT) add_read(rt, &reads, &nreads, &cap, m, i, kind);
      }
      if (!ok) add_storage(rt, &whole, stg);
    }
  }
  make_whole(rt, whole.v, whole.n);
  free(whole.v);

  /* halos of the reads whose storage is still split */
  halo *hs = nreads ? ty__malloc((size_t)nreads * sizeof *hs) : NULL;
  if (nreads && !hs) fail_all(rt, "rank %d: out of memory for the halos of a wave", rt->dist.rank);
  int nh = 0;
  for (int k = 0; k < nreads; k++) {
    const prepared *pr = &prs[reads[k].m];
    const ty_store *s = pr->l->args[reads[k].i].store;
    if (!s->storage->split) continue;
    hs[nh].stg = s->storage;
    hs[nh].pr = pr;
    hs[nh].kind = reads[k].kind;
    hs[nh].arg = reads[k].i;
    if (reads[k].kind < READ_RANGE) shifted_view(s->storage->split, s, pr->l->ndim, hs[nh].shift);
    nh++;
  }
  size_t got = 0;
  ty__halos *moving = ty__dist_halos_post(rt, hs, nh, &got);
  free(reads);

  /* the written arguments left split: their records, no exchange after the wave */
  for (int m = 0; m < count; m++) {
    prepared *pr = &prs[m];
    if (!pr->lazy) continue;
    pr->xmask &= ~pr->lazy;
    for (int i = 0; i < pr->l->nargs; i++) {
      if (!((pr->lazy >> i) & 1u)) continue;
      ty_storage *stg = pr->l->args[i].store->storage;
      if (!stg->split) stg->split = ty__malloc(sizeof *stg->split);
      if (!stg->split) fail_all(rt, "rank %d: out of memory for a split store's record", rt->dist.rank);
      *stg->split = record_of(pr, &pr->l->args[i]);
    }
    ty_record *e = pr->explain;
    char *ranks = e ? ty__record_text(rt, e, TY_REC_RANKS) : NULL;
    size_t len = e ? strlen(ranks) : 0;
    if (e && len + 1 < TY_REC_RANKS_LEN) {
      char b[32];
      ty_format_bytes((double)got, b, sizeof b);
      snprintf(ranks + len, TY_REC_RANKS_LEN - len, "; output kept split, halos %s", b);
    }
  }
  return moving;
}
