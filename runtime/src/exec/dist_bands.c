/*
 * dist_bands.c — rank boundaries on the band edges of ordered reductions
 * (docs/mpi.md): a dot product of split vectors reads only its own rows.
 *
 * An ordered float reduction (CG's dot products) has a tiling fixed by its
 * shape: bands of rows, at most TY__ORDER_MAX (64), for the bits of one
 * process. Its bands go to ranks by rows (ty__dist_first). If a rank's rows
 * of the vectors it reads end inside a band, the rank computing that band
 * reads the rest from its neighbour, every iteration (CG at 2896 x 2896 on
 * 3 ranks: 15 rows of 23 KiB per vector read). Rules:
 *  - Rank r's first row of a launch over D rows (ty__dist_row) is the first
 *    row of the first of 64 equal bands of the D rows ([D j / 64,
 *    D (j + 1) / 64)) whose middle row is in rank r's even share [D r / N,
 *    ...): an edge of the 64 bands near D r / N (within 1/128 of D), the
 *    same for every launch over D rows. Under 64 rows, and above 8 ranks
 *    when N does not divide 64: D r / N. Moving a boundary to a band edge
 *    unbalances the ranks' rows by up to 1/128 of D: 2% of a share at 3
 *    ranks, 6% at 8, but 37% at 48 (where whole bands would give some
 *    ranks two bands and others one) and some ranks nothing above 64; there
 *    a band straddling two ranks reads up to half a band instead.
 *  - Pieces go to ranks by rows (their middle row) for ordered launches and
 *    for every split launch cut by rows only (ty__dist_rows_only).
 *  - A split launch that is not ordered and is cut for the processors of
 *    every rank is cut by rows only on several ranks (ty__dist_band_tiling;
 *    4 pieces of a square grid were 2 x 2, so 4 ranks held quarters, and a
 *    vector read as the grid, or a dot product's bands, needed half of each
 *    rank's rows from another rank: 6 MB an iteration of CG at 1000 x 1000).
 *    A launch with fewer rows than pieces (a 4 x 300 x 500 reshape in 6)
 *    cuts each row in the same number of tiles along dim 1: in row-major
 *    order every piece, and every rank's pieces, are one range of the
 *    storage (1 x 2 x 3 tiles gave each rank parts of all 4 rows, and a
 *    vector read as that shape was made whole).
 *    When it is as large as a reduction of 64 bands over its shape (64 x
 *    65536 elements and more, 64 bands of rows), its T row tiles are a
 *    multiple of 64 / g, where g divides 64 and every rank's first band, so
 *    that every rank's first row is a tile edge; T at least the pieces it
 *    had (the processors are still used). 64 / g is 2 at 2 ranks, 4 at 4,
 *    64 at 3: each tile holds 65536 elements or more, so that the pieces
 *    cost little. Element-wise launches do not depend on their tiling, so
 *    the bits stay those of one process.
 * Then the rows a rank holds of a vector written by an element-wise launch
 * are whole bands of a dot product over the same rows (64 bands: any grid
 * of 64 x 65536 elements or more): the product reads nothing from a
 * neighbour. Fewer bands (a smaller reduction) straddle by half a band at
 * most, as before; views a row smaller than the grid (CG's Laplacian) by a
 * row at most.
 */
#include "internal.h"
#include "kernels.h"
#include "prepared.h"

#include <assert.h>

/* The first of the 64 bands of D >= 64 rows whose middle row is rank r's
 * even share's or later (r in [1, N)). */
static int64_t first_band(int64_t D, int r, int N) {
  const int64_t even = D * r / N;
  for (int64_t j = 0; j < TY__ORDER_MAX; j++) {
    const int64_t lo = D * j / TY__ORDER_MAX, hi = D * (j + 1) / TY__ORDER_MAX;
    if ((lo + hi - 1) / 2 >= even) return j;
  }
  return TY__ORDER_MAX;
}

/* Whether N ranks' rows start on band edges: a rank's share moves by half a
 * band (1/128 of the rows) at most, 1/16 of its share or less up to 8 ranks;
 * when N divides 64 the even shares are band edges already. */
static bool on_edges(int N) { return N <= 8 || TY__ORDER_MAX % N == 0; }

int64_t ty__dist_row(int64_t D, int r, int N) {
  if (r <= 0) return 0;
  if (r >= N) return D;
  if (D < TY__ORDER_MAX || !on_edges(N)) return D * r / N;
  return D * first_band(D, r, N) / TY__ORDER_MAX;
}

bool ty__dist_rows_only(int ndim, const ty_tiling *t) {
  if (ndim < 1) return false;
  for (int k = 1; k < ndim; k++)
    if (t->tiles[k] > 1) return false;
  return true;
}

static int64_t gcd(int64_t a, int64_t b) {
  while (b) {
    const int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Whether dim k of launch l may be cut: not forbidden, and no written
 * aligned argument repeats it (stride 0). */
static bool splittable(const ty_pending *l, int k) {
  if (l->ndim <= k || l->domain[k] < 2 || ((l->nosplit >> k) & 1u)) return false;
  for (int i = 0; i < l->nargs; i++) {
    const ty_arg *a = &l->args[i];
    if (a->proj == TY_PROJ_ALIGNED && a->priv != TY_PRIV_IN && a->priv != TY_PRIV_REDUCE &&
        a->store->strides[k] == 0)
      return false;
  }
  return true;
}

void ty__dist_band_tiling(const ty_runtime *rt, const ty_pending *l, ty_tiling *t) {
  const int N = rt->dist.nranks;
  if (N < 2 || t->pieces < 2 || ty__ordered_launch(l) || !splittable(l, 0)) return;
  int64_t elems = 1;
  for (int k = 0; k < l->ndim; k++) elems *= l->domain[k];
  if (elems < rt->dist.min_elems) return; /* run whole on every rank */
  if (ty__dist_procs(rt, l, 1) != N) return; /* a float sum of no fixed tiling: one rank's cut */
  const int64_t D = l->domain[0];
  int64_t T = t->pieces;
  ty_tiling bands; /* a dot product over the same shape: 64 bands of rows? */
  ty__ordered_tiles(l->ndim, l->domain, &bands);
  if (on_edges(N) && bands.tiles[0] == TY__ORDER_MAX && D >= TY__ORDER_MAX) {
    int64_t g = TY__ORDER_MAX; /* divides 64 and every rank's first band */
    for (int r = 1; r < N; r++) g = gcd(g, first_band(D, r, N));
    const int64_t step = TY__ORDER_MAX / g;
    T = (T + step - 1) / step * step;
  }
  int64_t t1 = 1; /* fewer rows than pieces (4 x 300 x 500 in 6): each row cut in t1 */
  if (T > D) {
    t1 = (T + D - 1) / D;
    T = D * t1;
    if (!splittable(l, 1) || t1 > l->domain[1]) return;
  }
  if (T > TY_MAX_PIECES || (l->max_pieces > 0 && T > l->max_pieces)) return;
  t->pieces = (int)T;
  t->tiles[0] = (int)(T / t1);
  for (int k = 1; k < l->ndim; k++) t->tiles[k] = 1;
  t->tiles[1 % l->ndim] *= (int)t1; /* t1 is 1 for a 1-D launch */
  assert(t1 == 1 || (l->ndim >= 2 && t->tiles[0] == D)); /* each row cut alike */
}
