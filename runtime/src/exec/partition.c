/*
 * partition.c — choosing how a launch is split: the piece count from the
 * resolved `mode` axis, then a block tiling of the launch domain.
 *
 * Rules:
 *  - auto: pieces = clamp(ceil(bytes / min_chunk), 1, procs * overdecompose),
 *    graded with size (bytes: the aligned arguments' over the domain, plus a
 *    matmul's whole operands); all: procs * overdecompose; single and task: 1.
 *  - A dim may be split unless the launch forbids it (nosplit), it is shorter
 *    than 2, or an OUT/INOUT aligned argument has stride 0 on it (pieces
 *    would write the same elements).
 *  - The piece count is factored over the splittable dims towards square-ish
 *    tiles: each prime factor, largest first, goes to the dim whose current
 *    tile is longest (the outer dim on ties and near-ties, within 1/16,
 *    which keeps tiles contiguous; on several ranks a 2894 x 2895 view is
 *    then cut by rows like the 2896 x 2896 grid it lies in, not by columns,
 *    so that ranks hold the same rows of both: exec/dist_data.c). A
 *    factor no dim can take is dropped: fewer pieces, never a failure. There
 *    is no cap on prime factors.
 *  - Bands (ty__band_partition, called by exec.c on one rank): a small 2-D
 *    launch over most rows of a storage that the processors split by rows
 *    is cut by rows into one piece per processor, at the storage's split.
 *  - Key partitions: when an aligned argument's store has a key partition
 *    (its last writer's tiling) of the same shape and the same piece count,
 *    on splittable dims only, that tiling is reused.
 *  - Ordered launches (ty__ordered_launch: float sums and products that
 *    combine pieces, float matmul) get a tiling fixed by their shape, so that
 *    their bits do not depend on the processors: a reduction the tiles of
 *    ty__ordered_tiles, a matmul the row blocks of ty__matmul_blocks (and
 *    whole matrices of a batched one); a whole f64 sum or product of one tile
 *    the two halves of its tree (ordered_halves), same bits. When
 *    the mode asks for one piece (single, task, one processor, a small
 *    launch) they run as one piece, whose kernel walks the same tiles in the
 *    same order. So `all`, `overdecompose` and min_chunk only decide between
 *    one piece and the fixed tiling for them; no key partition is reused.
 */
#include "internal.h"
#include "kernels.h"

#include <stdio.h>
#include <string.h>

void ty__piece_box(int ndim, const int64_t *domain, const ty_tiling *t, int piece, int64_t *lo,
                   int64_t *hi) {
  int rest = piece;
  for (int d = ndim - 1; d >= 0; d--) {
    int n = t->tiles[d] > 0 ? t->tiles[d] : 1;
    int k = rest % n;
    rest /= n;
    lo[d] = domain[d] * k / n;
    hi[d] = domain[d] * (k + 1) / n;
  }
}

static uint32_t splittable_dims(const ty_pending *l) {
  uint32_t ok = 0;
  for (int k = 0; k < l->ndim; k++)
    if (l->domain[k] >= 2 && !((l->nosplit >> k) & 1u)) ok |= 1u << k;
  for (int i = 0; i < l->nargs; i++) {
    const ty_arg *a = &l->args[i];
    if (a->proj != TY_PROJ_ALIGNED || a->priv == TY_PRIV_IN || a->priv == TY_PRIV_REDUCE) continue;
    for (int k = 0; k < l->ndim; k++)
      if (a->store->strides[k] == 0) ok &= ~(1u << k);
  }
  return ok;
}

static int largest_prime_factor(int n) {
  int f = 1;
  for (int p = 2; (long)p * p <= n; p++)
    while (n % p == 0) {
      f = p;
      n /= p;
    }
  return n > 1 ? n : f;
}

void ty__ordered_tiles(int ndim, const int64_t *shape, ty_tiling *out) {
  int64_t n = 1;
  for (int k = 0; k < ndim; k++) n *= shape[k];
  int64_t want = (n + TY__ORDER_CHUNK - 1) / TY__ORDER_CHUNK;
  if (want > TY__ORDER_MAX) want = TY__ORDER_MAX;
  out->ndim = ndim;
  out->pieces = 1;
  for (int k = 0; k < ndim; k++) out->tiles[k] = 1;
  for (int k = 0; k < ndim && want > 1; k++) {
    if (shape[k] < 2) continue;
    const int64_t t = want < shape[k] ? want : shape[k];
    out->tiles[k] = (int)t;
    out->pieces *= (int)t;
    want = (want + t - 1) / t;
  }
}

/* A float matmul's fixed tiling: C's rows in the blocks of
 * ty__matmul_blocks and, for a batched product (C (..., m, n)), the batch dims
 * cut into at most TY__ORDER_MAX / blocks tiles, outer dims first. A batch
 * tile holds whole matrices, so the kernel's calls (and bits) are those of
 * one piece. */
static void matmul_tiling(const ty_pending *l, ty_tiling *t) {
  const int nd = l->ndim;
  const ty_store *a = l->args[1].store;
  const int64_t kk = a->ndim >= 2 ? a->shape[a->ndim - 1] : 1;
  const int64_t b = ty__matmul_blocks(l->domain[nd - 2], l->domain[nd - 1], kk);
  t->tiles[nd - 2] = (int)b;
  t->pieces = (int)b;
  int64_t room = TY__ORDER_MAX / b;
  /* a thin sum's k chunks (ops.c's k split), TY__THIN_STREAMS to a tile
   * (ty__matmul_ksplit) */
  const int64_t streams = (l->domain[0] + TY__THIN_STREAMS - 1) / TY__THIN_STREAMS;
  if (nd == 3 && ty__thin_acc_shape(a->dtype, l->domain[1], l->domain[2], a->strides[1]) &&
      streams < room)
    room = streams;
  for (int d = 0; d < nd - 2 && room > 1; d++) {
    const int64_t n = l->domain[d] < room ? l->domain[d] : room;
    if (n < 1) continue;
    t->tiles[d] = (int)n;
    t->pieces *= (int)n;
    room /= n;
  }
}

/* A matmul's work is its operands, not its output: a matrix times a vector
 * writes m elements and reads m k. Counting only C (the domain) made a
 * 4096^2 f64 product one piece (32 KiB of output), on one core. The WHOLE
 * operands' bytes are added to C's for the auto piece count. */
static int64_t matmul_operand_bytes(const ty_pending *l) {
  int64_t bytes = 0;
  for (int i = 1; i < l->nargs; i++) {
    const ty_store *s = l->args[i].store;
    if (l->args[i].proj == TY_PROJ_WHOLE) bytes += s->size * (int64_t)ty__dtype_size(s->dtype);
  }
  return bytes;
}

/* A whole f64 sum or product of one ordered tile (at most TY__ORDER_CHUNK
 * elements: CG's dot products at 256 x 256) would run on one processor. Its
 * tree splits in two without changing a bit: the stream over L leaves
 * (kernels_reduce.c) is S1 op S2, where S1 is the first 2^h leaves (2^h the
 * largest power of two below L, a complete subtree) and S2 the stream of the
 * rest, and the runtime combines two private tiles as (id op S1) op (id op
 * S2), which is id op (S1 op S2) also for zeros of either sign and NaNs (an
 * f64 accumulator: an f32 one would round each half). So the launch takes
 * two pieces when halving its first dim longer than 1 cuts the elements,
 * in C order, at 128 * 2^h; the halves are fixed by the shape, and the
 * result is the one piece's on any number of processors. */
static bool ordered_halves(const ty_pending *l, uint32_t allowed, ty_tiling *t) {
  for (int i = 0; i < l->nargs; i++) {
    const ty_arg *a = &l->args[i];
    if (a->priv != TY_PRIV_REDUCE) continue;
    if (a->store->dtype != TY_F64 || (a->redop != TY_REDOP_SUM && a->redop != TY_REDOP_PROD))
      return false;
    for (int k = 0; k < l->ndim; k++)
      if (l->domain[k] > 1 && a->store->strides[k] != 0) return false; /* kept dims: not whole */
  }
  int d = 0;
  while (d < l->ndim && l->domain[d] < 2) d++;
  if (d == l->ndim || !((allowed >> d) & 1u) || l->domain[d] % 2 != 0) return false;
  int64_t n = 1, inner = 1;
  for (int k = 0; k < l->ndim; k++) n *= l->domain[k];
  for (int k = d + 1; k < l->ndim; k++) inner *= l->domain[k];
  const int64_t leaves = (n + TY__OLEAF - 1) / TY__OLEAF;
  if (leaves < 2) return false;
  int64_t half = 1; /* the largest power of two below `leaves` */
  while (half * 2 < leaves) half *= 2;
  if (l->domain[d] / 2 * inner != half * TY__OLEAF) return false;
  t->tiles[d] = 2;
  t->pieces = 2;
  return true;
}

/* The fixed tiling of an ordered launch, or one piece when its dims cannot
 * all be split as the tiling needs (the kernel then walks the tiles). */
static void ordered_partition(const ty_pending *l, int kind, uint32_t allowed, ty_tiling *out) {
  ty_tiling t = {.ndim = l->ndim, .pieces = 1};
  for (int k = 0; k < l->ndim; k++) t.tiles[k] = 1;
  if (kind == 2) { /* matmul: C (..., m, n) = A (..., m, k) B; A is argument 1 */
    matmul_tiling(l, &t);
  } else {
    ty__ordered_tiles(l->ndim, l->domain, &t);
    if (t.pieces == 1 && !ordered_halves(l, allowed, &t)) return;
  }
  bool ok = l->nosplit == 0 && (l->max_pieces <= 0 || t.pieces <= l->max_pieces);
  for (int k = 0; k < l->ndim && ok; k++) ok = t.tiles[k] == 1 || ((allowed >> k) & 1u);
  if (ok) *out = t;
}

/* A small launch over a band of most rows of a large 2-D storage: the
 * Laplacian's left and right edges at 256^2 are 254 x 1 views of 256 x 256
 * stores, 2 KiB, one piece by min_chunk. The storage's own launches split
 * it by rows over the processors (factor_tiles prefers the outer dim, and
 * key partitions keep that), and affine waves keep piece k on worker k; an
 * edge run whole on one processor read and wrote lines of the other's rows,
 * and the next waves on that processor fetched them back (cg 256^2 at
 * --cpus 2: the kernels' CPU time 4,900 -> 3,900 samples with the edges cut,
 * bench/README.md "cg 65K kernels on 2 processors: session 17"). So such a
 * launch is cut by rows into `procs` pieces; the view's rows sit in the
 * storage's middle (254 of 256), so an even cut of the view falls on the
 * storage's even cut, within a row. Conditions: mode auto with
 * overdecompose 1 and one piece from min_chunk (want <= 1), not ordered, no
 * reduction, dim 0 splittable with at least 16 rows a piece, every written
 * aligned argument a row-major view (row stride >= its row) of a storage
 * of at least procs * min_chunk bytes whose rows at that stride the view
 * covers to 1/8. True when it cut. */
bool ty__band_partition(const ty_pending *l, int procs, ty_tiling *out) {
  const ty_policy *p = &l->pol->p;
  if (procs < 2 || l->ndim != 2 || p->mode != TY_MODE_AUTO || p->overdecompose != 1 ||
      out->pieces != 1 || l->nosplit || (l->max_pieces > 0 && l->max_pieces < procs) ||
      procs > TY_MAX_PIECES || l->domain[0] < 16 * (int64_t)procs || ty__ordered_launch(l) ||
      !(splittable_dims(l) & 1u))
    return false;
  bool written = false;
  for (int i = 0; i < l->nargs; i++) {
    const ty_arg *a = &l->args[i];
    if (a->priv == TY_PRIV_REDUCE) return false;
    if (a->proj != TY_PROJ_ALIGNED || a->priv == TY_PRIV_IN) continue;
    const ty_store *s = a->store;
    const int64_t es = (int64_t)ty__dtype_size(s->dtype);
    const int64_t elems = (int64_t)s->storage->nbytes / es;
    if (s->strides[0] < 2 || s->strides[0] < s->shape[1] || s->strides[1] < 0 ||
        (int64_t)s->storage->nbytes < procs * p->min_chunk)
      return false;
    const int64_t rows = elems / s->strides[0];
    if (rows < l->domain[0] || l->domain[0] * 8 < rows * 7) return false;
    written = true;
  }
  if (!written) return false;
  out->tiles[0] = procs;
  out->tiles[1] = 1;
  out->pieces = procs;
  return true;
}

/* Factor `want` over the allowed dims; returns the pieces actually placed. */
static int factor_tiles(const ty_pending *l, uint32_t allowed, int want, int *tiles) {
  for (int k = 0; k < l->ndim; k++) tiles[k] = 1;
  int placed = 1;
  while (want > 1) {
    int f = largest_prime_factor(want);
    want /= f;
    int best = -1;
    double best_extent = 0;
    for (int k = 0; k < l->ndim; k++) {
      if (!((allowed >> k) & 1u)) continue;
      if ((int64_t)tiles[k] * f > l->domain[k]) continue;
      double extent = (double)l->domain[k] / tiles[k];
      if (extent > best_extent * (best < 0 ? 1.0 : 1.0625)) {
        best_extent = extent;
        best = k;
      }
    }
    if (best < 0) continue; /* no dim can take this factor: fewer pieces */
    tiles[best] *= f;
    placed *= f;
  }
  return placed;
}

void ty__partition(const ty_pending *l, int procs, ty_tiling *out, ty_record *r) {
  const ty_policy *p = &l->pol->p;
  out->ndim = l->ndim;
  out->pieces = 1;
  for (int k = 0; k < l->ndim; k++) out->tiles[k] = 1;
  r->key_store = 0;
  r->short_dims = false;
  r->ordered = 0;
  r->banded = false;

  int64_t elems = 1;
  for (int k = 0; k < l->ndim; k++) elems *= l->domain[k];
  size_t es = 1;
  for (int i = 0; i < l->nargs; i++) {
    size_t s = ty__dtype_size(l->args[i].store->dtype);
    if (l->args[i].proj == TY_PROJ_ALIGNED && s > es) es = s;
  }
  int64_t bytes = elems * (int64_t)es;
  if (l->task->cpu == ty__matmul_variant || l->task->cpu == ty__gemv_chain_variant)
    bytes += matmul_operand_bytes(l); /* the gemv chain reads its X whole too */
  int64_t cap = (int64_t)procs * p->overdecompose;
  int64_t want = 1, raw = 1;
  switch (p->mode) {
  case TY_MODE_SINGLE:
  case TY_MODE_TASK: break;
  case TY_MODE_ALL: want = cap; break;
  case TY_MODE_AUTO:
  default:
    raw = (bytes + p->min_chunk - 1) / p->min_chunk;
    if (raw < 1) raw = 1;
    want = raw < cap ? raw : cap;
  }
  if (l->max_pieces > 0 && want > l->max_pieces) want = l->max_pieces;
  /* each piece has ~2 KiB of bookkeeping while it runs (its error buffer) */
  if (want > TY_MAX_PIECES) want = TY_MAX_PIECES;
  r->bytes = bytes;
  r->raw = raw;
  r->want = want;
  r->procs = procs;
  r->max_pieces = l->max_pieces;
  const int ordered = ty__ordered_launch(l);
  if (ordered && elems > 1) { /* the tiles a one-piece run walks, for explain */
    ty_tiling t = {.ndim = l->ndim, .pieces = 1};
    for (int k = 0; k < l->ndim; k++) t.tiles[k] = 1;
    if (ordered == 2) {
      matmul_tiling(l, &t);
    } else {
      ty__ordered_tiles(l->ndim, l->domain, &t);
    }
    r->ordered = t.pieces;
  }
  if (want <= 1) return;
  if (elems <= 1) { /* nothing to split */
    r->short_dims = true;
    return;
  }

  uint32_t allowed = splittable_dims(l);
  if (ordered) {
    ordered_partition(l, ordered, allowed, out);
    if (r->ordered == 1 && out->pieces == 2) r->ordered = 2; /* the two halves of one tile */
    return;
  }
  /* reuse a key partition that fits exactly */
  for (int i = 0; i < l->nargs; i++) {
    const ty_arg *a = &l->args[i];
    const ty_store *s = a->store;
    if (a->proj != TY_PROJ_ALIGNED || !s->has_key || s->key.pieces != want ||
        s->key.ndim != l->ndim)
      continue;
    bool fits = true;
    for (int k = 0; k < l->ndim && fits; k++)
      fits = s->key.tiles[k] == 1 || ((allowed >> k) & 1u);
    if (!fits) continue;
    *out = s->key;
    r->key_store = s->id;
    return;
  }
  int tiles[TY_MAX_RANK];
  int placed = factor_tiles(l, allowed, (int)want, tiles);
  for (int k = 0; k < l->ndim; k++) out->tiles[k] = tiles[k];
  out->pieces = placed;
  r->short_dims = placed < want;
}
