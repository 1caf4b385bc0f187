/*
 * linebuf.c — one pass for a fused launch that writes a store in place while
 * it reads the same store through views shifted by a few rows:
 *
 *   center[{}] = (center + north + east + west + south) * 0.2
 *
 * numpy's semantics compute the whole right side before the write. Two
 * passes keep them (a fused pass into a temporary, then a copy: 48 bytes a
 * point for the 5-point stencil); the C stencil double-buffers (24 bytes).
 * Here the fusion pass (fuse.c) lets the copy join the run as its last
 * member, with an argument of its own for the written view W
 * (ty_pending.lb_arg), and this file runs the pieces so that no read sees a
 * value written by the launch:
 *
 *  - pieces split dim 0 only (the fused launch keeps the other dims whole);
 *  - computing row i reads rows i - up .. i + dn of W (the read views'
 *    shifts, checked by ty__linebuf_reach; shifts inside a row are free);
 *  - a piece computes its rows in order, C at a time, into a ring of two
 *    chunks of C >= up rows (the kernel's W tile points into the ring, the
 *    other tiles at memory), and copies chunk k - 1 to W once chunk k is
 *    computed: every row that reads chunk k - 1's old values (up rows on at
 *    most) has been computed by then;
 *  - a piece's first dn rows are read by the piece before it, and its last
 *    up rows by the piece after it, which may run at the same time: those
 *    rows go to a buffer of the launch (`held`) that finish copies to W once
 *    every piece ran. The domain's first and last rows have no neighbour
 *    piece on their outer side and are written in place.
 *
 * Every element is computed by the same kernel (compiled or interpreted)
 * from the same old values and copied bit for bit: the two-pass result's
 * bits, for any piece count. Memory traffic: one pass's reads and one write
 * of W (24 bytes a point for the stencil, as the C stencil's double buffer);
 * the ring (2 x 128 KiB, kept per worker) stays in L2. Copying it back cost
 * ~30% of the quick stencil's time (perf); non-temporal stores for the copy
 * (no read for ownership) were tried at 4096^2 and took 45% more CPU time.
 *
 * Double-buffering removes the copy where it can (may_swap): the pieces
 * write W's new values into a second block of W's storage, at W's offsets
 * (every other tile, the shifted reads of W among them, reads the first
 * block, which no piece writes), and each piece then copies the bytes of
 * the storage between its rows (the grid's edge columns), in cache; finish
 * makes the second block the storage's and gives the first back to the
 * block cache, from which the next iteration takes it again (store.c,
 * ty__storage_second / ty__storage_take). Every view of the storage reads
 * its data through the storage, so the grid, `center` and the shifted views
 * all see the new block. That is the C stencil's traffic and memory: two
 * grids while the launch runs. It applies when W's rows are dense runs,
 * the bytes outside W are at most a quarter of W's, the storage is plain
 * host memory of ours (not attached, no GPU copy, not split among ranks, not
 * streamed), no GPU is in use, the launch runs on one rank, no other
 * argument writes that storage, and the second block fits the budget and
 * the block cache (an eighth of the budget: a fresh block every iteration
 * would fault its pages in every time). When another launch of the same
 * wave touches the storage (it may write bytes outside W while the pieces
 * run), finish copies the bytes between the rows instead, after the wave
 * (lb_gaps_late). A failure gives the second block back (the launch's
 * outputs are then unavailable, as line-buffered: exec.c cancels them).
 * The values are the line buffer's bits (the same kernel, the same old
 * values). Quick stencil (768^2, 20 iterations, 2 cores, Zen 2): 4.2 ms a
 * step with the ring, 2.8 ms double-buffered, C 2.4 ms.
 * TYCHO_DOUBLE_BUFFER=0 keeps the line buffer.
 */
#include "alloc.h"
#include "linebuf.h"
#include "prepared.h"

#include <stdlib.h>
#include <string.h>

/* A chunk is about this many bytes of W (at least `up` rows, at least one):
 * one kernel call computes it, and a call costs ~2,400 instructions of
 * setup (fused_cpu.c): at 32 KiB (5 rows of the quick stencil's 768) that
 * was a quarter of the compiled kernel's own work, at 128 KiB (21 rows)
 * ~6%. The ring is two chunks: 256 KiB, in L2. */
enum { LB_CHUNK_BYTES = 128 << 10 };

static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

/* Elements of one row (dims 1 ..) of a box of this shape. */
static int64_t row_elems(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 1; d < ndim; d++) n *= shape[d];
  return n;
}

/* A row's last element's distance from its first, in elements. */
static int64_t row_span(const ty_store *w) {
  int64_t ext = 0;
  for (int d = 1; d < w->ndim; d++) ext += (w->shape[d] - 1) * w->strides[d];
  return ext;
}

bool ty__linebuf_target(const ty_store *w, int ndim, const int64_t *domain) {
  if (ndim < 2 || w->ndim != ndim || domain[0] < 2) return false;
  for (int d = 0; d < ndim; d++) {
    if (w->shape[d] != domain[d] || w->shape[d] < 1) return false;
    if (w->shape[d] > 1 && w->strides[d] <= 0) return false;
  }
  return w->strides[0] > row_span(w);
}

bool ty__linebuf_reach(const ty_store *w, const ty_store *r, int *up, int *dn) {
  if (r->storage != w->storage || r->dtype != w->dtype || r->ndim != w->ndim) return false;
  for (int d = 0; d < w->ndim; d++)
    if (r->shape[d] != w->shape[d] || (w->shape[d] > 1 && r->strides[d] != w->strides[d])) return false;
  /* row i of R spans elements [delta + i*s0, delta + i*s0 + ext] of W's
   * (from W's first), row j of W [j*s0, j*s0 + ext]: they meet when
   * delta - ext <= (j - i)*s0 <= delta + ext */
  const int64_t s0 = w->strides[0], ext = row_span(w), delta = r->offset - w->offset;
  const int64_t far = (TY__LB_REACH + 1) * s0 + ext;
  if (delta > far || delta < -far) return false;
  const int64_t lo = ceil_div(delta - ext, s0), hi = floor_div(delta + ext, s0);
  if (-lo > TY__LB_REACH || hi > TY__LB_REACH) return false;
  if (-lo > *up) *up = (int)-lo;
  if (hi > *dn) *dn = (int)hi;
  return true;
}

bool ty__linebuf_fits(const ty_store *w, int ndim, const int64_t *domain, int up) {
  const double row = (double)row_elems(ndim, domain) * (double)ty_dtype_size(w->dtype);
  return 2.0 * (up > 1 ? up : 1) * row <= (double)TY__LB_MAX_RING;
}

/* The rows of piece [a, b) that a neighbour reads: [a, *top) for the piece
 * before, [*bot, b) for the piece after (empty at the domain's ends
 * [d0, d1)). */
static void held_rows(int64_t a, int64_t b, int64_t d0, int64_t d1, int up, int dn, int64_t *top,
                      int64_t *bot) {
  *top = a > d0 ? (a + dn < b ? a + dn : b) : a;
  *bot = b < d1 ? (b - up > *top ? b - up : *top) : b;
}

/* Copy one dense row (dims 1 ..) to a strided view's row at dst. */
static void put_row(char *dst, int nd, const int64_t *shape, const int64_t *strides, size_t es,
                    const char *src) {
  const int64_t n = shape[nd - 1], s = strides[nd - 1];
  if (nd == 2 && (s == 1 || n == 1)) { /* a 2-D view's row: one run */
    memcpy(dst, src, (size_t)n * es);
    return;
  }
  int64_t idx[TY_MAX_RANK] = {0};
  for (;;) {
    char *p = dst;
    for (int d = 1; d < nd - 1; d++) p += idx[d] * strides[d] * (int64_t)es;
    if (s == 1 || n == 1) {
      memcpy(p, src, (size_t)n * es);
    } else {
      for (int64_t j = 0; j < n; j++) memcpy(p + j * s * (int64_t)es, src + j * (int64_t)es, es);
    }
    src += n * (int64_t)es;
    int d = nd - 2;
    for (; d >= 1; d--) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
    if (d < 1) return;
  }
}

/* A worker's row buffer: kept between launches, as a fresh 256 KiB block
 * is an mmap and 64 zeroed pages each time (9% of the quick stencil's
 * time). Entry k belongs to worker k, which alone grows it. */
struct ty__lbring {
  char *p;
  size_t cap;
};

void ty__linebuf_free(ty_runtime *rt) {
  for (int k = 0; k < rt->lb_nrings; k++) free(rt->lb_rings[k].p);
  free(rt->lb_rings);
  rt->lb_rings = NULL;
  rt->lb_nrings = 0;
}

/* W: the view the launch writes in place. */
static ty_store *written(const prepared *pr) { return pr->l->args[pr->l->lb_arg - 1].store; }

static bool double_buffer_on(ty_runtime *rt) {
  if (!rt->double_buffer) /* checked by runtime.c */
    rt->double_buffer = ty__env_off("TYCHO_DOUBLE_BUFFER") ? -1 : 1;
  return rt->double_buffer > 0;
}

/* W's rows are dense runs: dims 1 .. row-major with the innermost stride 1.
 * With rows that do not interleave (ty__linebuf_target), the bytes of the
 * storage outside W are the gaps between them. */
static bool dense_rows(const ty_store *w) {
  int64_t st = 1;
  for (int d = w->ndim - 1; d >= 1; d--) {
    if (w->shape[d] > 1 && w->strides[d] != st) return false;
    st *= w->shape[d];
  }
  return true;
}

/* The launch may double-buffer W's storage (see the file's comment). */
static bool may_swap(ty_runtime *rt, const prepared *pr) {
  const ty_pending *l = pr->l;
  const ty_arg *wa = &l->args[l->lb_arg - 1];
  const ty_store *w = wa->store;
  const ty_storage *stg = w->storage;
  if (!double_buffer_on(rt) || rt->dist.nranks > 1 || ty_gpu_count(rt) > 0 || pr->boxed ||
      l->pol->p.memory > 0 || pr->unavail || pr->empty || pr->omp)
    return false;
  if (!stg->data || stg->external || stg->sliced || stg->gpu || stg->split || stg->cancelled ||
      stg->lent || stg->uncharged || stg->swapping || !dense_rows(w))
    return false;
  for (int i = 0; i < l->nargs; i++)
    if (&l->args[i] != wa && l->args[i].priv != TY_PRIV_IN && l->args[i].store->storage == stg)
      return false;
  const size_t wbytes = (size_t)w->size * ty_dtype_size(w->dtype);
  return wbytes <= stg->nbytes && (stg->nbytes - wbytes) * 4 <= wbytes;
}

ty_status ty__linebuf_prepare(ty_runtime *rt, prepared *pr) {
  const ty_pending *l = pr->l;
  pr->lb_swap = NULL;
  if (may_swap(rt, pr) && (pr->lb_swap = ty__storage_second(rt, written(pr)->storage))) {
    written(pr)->storage->swapping = true;
    pr->lb_held = NULL;
    return TY_OK;
  }
  const int workers = rt->cfg.cpus > rt->cfg.omps ? rt->cfg.cpus : rt->cfg.omps;
  if (rt->lb_nrings < workers) { /* on the driving thread: no piece runs now */
    struct ty__lbring *r = ty__realloc(rt->lb_rings, (size_t)workers * sizeof *r);
    if (!r) return ty__fail(rt, TY_ENOMEM, "%s: out of memory for row buffers", l->task->name);
    memset(r + rt->lb_nrings, 0, (size_t)(workers - rt->lb_nrings) * sizeof *r);
    rt->lb_rings = r;
    rt->lb_nrings = workers;
  }
  const ty_store *w = l->args[l->lb_arg - 1].store;
  pr->lb_rows = l->lb_up + l->lb_dn;
  pr->lb_row = (size_t)row_elems(l->ndim, l->domain) * ty_dtype_size(w->dtype);
  pr->lb_held = NULL;
  if (pr->tiling.pieces < 2 || pr->lb_rows == 0 || pr->empty) return TY_OK;
  const size_t n = (size_t)pr->tiling.pieces * (size_t)pr->lb_rows * pr->lb_row;
  pr->lb_held = ty__malloc(n);
  if (!pr->lb_held)
    return ty__fail(rt, TY_ENOMEM, "%s: out of memory for %zu bytes of rows held in place", l->task->name, n);
  return TY_OK;
}

/* Copy the bytes of W's storage that follow W's rows [a, b) (up to the next
 * row, or the storage's end after the last), and those before row 0 when a
 * is 0, from its block into the second one. */
static void copy_gaps(const prepared *pr, int64_t a, int64_t b) {
  const ty_store *w = written(pr);
  const size_t es = ty_dtype_size(w->dtype), nbytes = w->storage->nbytes;
  const size_t off = (size_t)w->offset * es, s0 = (size_t)w->strides[0] * es;
  const size_t run = (size_t)row_elems(w->ndim, w->shape) * es;
  const char *from = w->storage->data;
  if (a == 0) memcpy(pr->lb_swap, from, off);
  for (int64_t r = a; r < b; r++) {
    const size_t at = off + (size_t)r * s0 + run, next = r + 1 < w->shape[0] ? at - run + s0 : nbytes;
    memcpy(pr->lb_swap + at, from + at, next - at);
  }
}

/* A piece of a double-buffered launch: the whole box in one call, W's tile
 * moved to the second block (the other tiles, W's storage among them, read
 * the first); then the gaps after its rows, in cache. */
static int swap_piece(prepared *pr, ty_task_ctx *ctx, ty_variant_fn body) {
  const int w = pr->l->lb_arg - 1;
  const char *base = written(pr)->storage->data; /* the first block, which no piece writes */
  ty_tile tiles[TY_MAX_ARGS];
  memcpy(tiles, ctx->args, (size_t)ctx->nargs * sizeof *tiles);
  if (tiles[w].data) tiles[w].data = pr->lb_swap + (tiles[w].data - base);
  ty_task_ctx child = *ctx;
  child.args = tiles;
  const int rc = body(&child);
  if (rc == 0 && !pr->lb_gaps_late) copy_gaps(pr, ctx->lo[0], ctx->hi[0]);
  return rc;
}

int ty__linebuf_piece(prepared *pr, ty_task_ctx *ctx, ty_variant_fn body) {
  if (pr->lb_swap) return swap_piece(pr, ctx, body);
  const ty_pending *l = pr->l;
  const int nd = ctx->ndim, w = l->lb_arg - 1, up = l->lb_up, dn = l->lb_dn;
  for (int d = 1; d < nd; d++)
    if (ctx->hi[d] - ctx->lo[d] != l->domain[d])
      return ty_ctx_fail(ctx, "line-buffered launch: piece %d splits dim %d", ctx->piece + 1, d + 1);
  const int64_t a = ctx->lo[0], b = ctx->hi[0];
  const int64_t d0 = pr->boxed ? pr->origin[0] : 0, d1 = d0 + l->domain[0];
  int64_t top, bot;
  held_rows(a, b, d0, d1, up, dn, &top, &bot);
  const size_t rowb = pr->lb_row;
  char *held = pr->lb_held ? pr->lb_held + (size_t)ctx->piece * (size_t)pr->lb_rows * rowb : NULL;
  if (!held && (top > a || bot < b))
    return ty_ctx_fail(ctx, "line-buffered launch: piece %d has no buffer for its edge rows", ctx->piece + 1);
  int64_t C = (int64_t)(LB_CHUNK_BYTES / (rowb ? rowb : 1));
  if (C < up) C = up;
  if (C < 1) C = 1;
  if (C > b - a) C = b - a; /* one chunk: nothing is written before the piece's end */
  const size_t ring_bytes = ((size_t)(2 * C) * rowb + 63) / 64 * 64;
  if (ctx->worker < 0 || ctx->worker >= ctx->rt->lb_nrings)
    return ty_ctx_fail(ctx, "line-buffered launch: worker %d has no row buffer", ctx->worker);
  struct ty__lbring *mine = &ctx->rt->lb_rings[ctx->worker];
  if (mine->cap < ring_bytes) {
    free(mine->p);
    mine->cap = 0;
    mine->p = ty__aligned_alloc(64, ring_bytes ? ring_bytes : 64);
    if (!mine->p) {
      ty_ctx_fail(ctx, "line-buffered launch: out of memory for a %zu-byte row buffer", ring_bytes);
      return TY_ENOMEM;
    }
    mine->cap = ring_bytes;
  }
  char *ring = mine->p;
  const ty_tile *W = &ctx->args[w];
  const size_t es = ty_dtype_size(W->dtype);
  ty_tile tiles[TY_MAX_ARGS];
  int64_t row_bytes[TY_MAX_ARGS]; /* bytes from one row of a tile to the next */
  for (int i = 0; i < ctx->nargs; i++)
    row_bytes[i] = ctx->args[i].strides[0] * (int64_t)ty_dtype_size(ctx->args[i].dtype);
  ty_task_ctx child = *ctx;
  child.args = tiles;
  int rc = 0;
  int64_t prev = -1; /* the first row of the chunk waiting in the ring, or -1 */
  char *prev_half = NULL;
  for (int64_t r0 = a, k = 0; r0 < b && rc == 0; r0 += C, k++) {
    const int64_t n = b - r0 < C ? b - r0 : C;
    char *half = ring + (size_t)(k & 1) * (size_t)C * rowb;
    for (int i = 0; i < ctx->nargs; i++) {
      ty_tile *t = &tiles[i];
      *t = ctx->args[i];
      if (l->args[i].proj == TY_PROJ_WHOLE) continue;
      t->shape[0] = n;
      t->lo[0] = r0;
      if (i == w) { /* dense rows in the ring */
        t->data = half;
        int64_t st = 1;
        for (int d = nd - 1; d >= 0; d--) {
          t->strides[d] = st;
          st *= t->shape[d];
        }
      } else if (t->data) {
        t->data += (r0 - a) * row_bytes[i];
      }
    }
    child.lo[0] = r0;
    child.hi[0] = r0 + n;
    rc = body(&child);
    if (rc == 0 && prev >= 0) {
      /* chunk k is computed: chunk k - 1's old values are read no more */
      for (int64_t i = prev; i < r0; i++) {
        const char *src = prev_half + (size_t)(i - prev) * rowb;
        if (i < top) memcpy(held + (size_t)(i - a) * rowb, src, rowb);
        else if (i >= bot) memcpy(held + (size_t)(top - a + i - bot) * rowb, src, rowb);
        else put_row(W->data + (i - a) * W->strides[0] * (int64_t)es, nd, W->shape, W->strides, es, src);
      }
    }
    prev = r0;
    prev_half = half;
  }
  for (int64_t i = prev; rc == 0 && prev >= 0 && i < b; i++) { /* the last chunk */
    const char *src = prev_half + (size_t)(i - prev) * rowb;
    if (i < top) memcpy(held + (size_t)(i - a) * rowb, src, rowb);
    else if (i >= bot) memcpy(held + (size_t)(top - a + i - bot) * rowb, src, rowb);
    else put_row(W->data + (i - a) * W->strides[0] * (int64_t)es, nd, W->shape, W->strides, es, src);
  }
  return rc;
}

/* A double-buffered launch's end: the second block becomes the storage's
 * when `ok` (its pieces copied the gaps between W's rows, or they are
 * copied now: lb_gaps_late); else it is given back. */
static void swap_finish(prepared *pr, bool ok) {
  ty_storage *stg = written(pr)->storage;
  stg->swapping = false;
  if (ok && pr->lb_gaps_late) copy_gaps(pr, 0, written(pr)->shape[0]);
  if (ok) stg->rt->stats.double_buffered++;
  ty__storage_take(stg->rt, stg, pr->lb_swap, ok);
  pr->lb_swap = NULL;
}

void ty__linebuf_wave(prepared *prs, int count) {
  for (int m = 0; m < count; m++) {
    if (!prs[m].lb_swap) continue;
    const ty_storage *stg = written(&prs[m])->storage;
    for (int k = 0; k < count && !prs[m].lb_gaps_late; k++)
      for (int i = 0; k != m && prs[k].l && i < prs[k].l->nargs; i++)
        if (prs[k].l->args[i].store->storage == stg) {
          prs[m].lb_gaps_late = true;
          break;
        }
  }
}

void ty__linebuf_finish(prepared *pr, bool ok) {
  if (pr->lb_swap) {
    swap_finish(pr, ok);
    return;
  }
  if (!pr->lb_held) return;
  const ty_pending *l = pr->l;
  if (ok && !pr->empty) {
    const ty_store *w = l->args[l->lb_arg - 1].store;
    const size_t es = ty_dtype_size(w->dtype), rowb = pr->lb_row;
    const int nd = l->ndim;
    const int64_t d0 = pr->boxed ? pr->origin[0] : 0, d1 = d0 + l->domain[0];
    char *base = ty__store_base(w);
    for (int p = pr->first; p < pr->last; p++) {
      int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK], shape[TY_MAX_RANK];
      ty__piece_box(nd, l->domain, &pr->tiling, p, lo, hi);
      for (int d = 0; pr->boxed && d < nd; d++) {
        lo[d] += pr->origin[d];
        hi[d] += pr->origin[d];
      }
      int64_t off = 0;
      for (int d = 0; d < nd; d++) {
        shape[d] = hi[d] - lo[d];
        off += (d ? lo[d] : 0) * w->strides[d];
      }
      int64_t top, bot;
      held_rows(lo[0], hi[0], d0, d1, l->lb_up, l->lb_dn, &top, &bot);
      const char *held = pr->lb_held + (size_t)p * (size_t)pr->lb_rows * rowb;
      for (int64_t i = lo[0]; i < hi[0]; i++) {
        if (i >= top && i < bot) continue;
        const int64_t slot = i < top ? i - lo[0] : top - lo[0] + i - bot;
        put_row(base + (off + i * w->strides[0]) * (int64_t)es, nd, shape, w->strides, es,
                held + (size_t)slot * rowb);
      }
    }
  }
  free(pr->lb_held);
  pr->lb_held = NULL;
}
