/*
 * test_dist_owner.c — which rank runs which pieces of a split launch
 * (ty__dist_first, exec/dist_data.c): contiguous ranges by piece number,
 * and for ordered launches (a dot product's bands, fixed by the shape) by
 * rows: each band goes to the rank whose rows of a vector cut evenly by
 * rows hold its middle row, also where the rank count does not divide the
 * band count.
 */
#include "check.h"

#include "internal.h"
#include "kernels.h"
#include "prepared.h"

/* firsts[r] for r = 0..N of a launch over domain with tiling t. */
static void firsts(int ndim, const int64_t *domain, const ty_tiling *t, bool by_rows, int N,
                   int *out) {
  for (int r = 0; r <= N; r++) out[r] = ty__dist_first(ndim, domain, t, by_rows, r, N);
}

TEST(pieces_by_number) {
  const int64_t dom[2] = {100, 10};
  ty_tiling t = {.ndim = 2, .pieces = 6, .tiles = {3, 2}};
  int f[5];
  firsts(2, dom, &t, false, 3, f);
  CHECK_EQ_INT(f[0], 0);
  CHECK_EQ_INT(f[1], 2);
  CHECK_EQ_INT(f[2], 4);
  CHECK_EQ_INT(f[3], 6);
  firsts(2, dom, &t, false, 4, f); /* 6 pieces among 4 ranks: 1, 2, 1, 2 */
  CHECK_EQ_INT(f[1], 1);
  CHECK_EQ_INT(f[2], 3);
  CHECK_EQ_INT(f[3], 4);
}

TEST(bands_by_rows) {
  /* CG's 2896 x 2896 grid: 64 bands of 45.25 rows; 3 ranks hold rows
   * [0, 965), [965, 1930), [1930, 2896). By number the bands would split
   * 0-20, 21-41, 42-63 (band 42 starts at row 1900, 30 rows early); by rows
   * band 42 (middle row 1922) stays on rank 1 and band 43 (1945-1990) goes
   * to rank 2: at most half a band from a neighbour. */
  const int64_t grid[2] = {2896, 2896};
  ty_tiling t = {.ndim = 2, .pieces = 1, .tiles = {1, 1}};
  ty__ordered_tiles(2, grid, &t);
  CHECK_EQ_INT(t.pieces, 64);
  CHECK_EQ_INT(t.tiles[0], 64);
  int f[4];
  firsts(2, grid, &t, true, 3, f);
  CHECK_EQ_INT(f[0], 0);
  CHECK_EQ_INT(f[1], 21);
  CHECK_EQ_INT(f[2], 43);
  CHECK_EQ_INT(f[3], 64);
  firsts(2, grid, &t, false, 3, f);
  CHECK_EQ_INT(f[2], 42);
  /* a rank count dividing the bands: the same as by number */
  int g[5], h[5];
  firsts(2, grid, &t, true, 4, g);
  firsts(2, grid, &t, false, 4, h);
  for (int r = 0; r <= 4; r++) CHECK_EQ_INT(g[r], h[r]);
  /* 4 bands of 125 rows, 3 ranks (rows from 166 and 333): the middle rows
   * 62, 187, 312, 437 go to ranks 0, 1, 1, 2 (by number: 0, 1, 2, 2) */
  const int64_t small[2] = {500, 400};
  ty__ordered_tiles(2, small, &t);
  CHECK_EQ_INT(t.pieces, 4);
  firsts(2, small, &t, true, 3, f);
  CHECK_EQ_INT(f[1], 1);
  CHECK_EQ_INT(f[2], 3);
  CHECK_EQ_INT(f[3], 4);
  /* more ranks than bands: some ranks run none */
  int e[9];
  firsts(2, small, &t, true, 8, e);
  for (int r = 0; r < 8; r++) CHECK(e[r] <= e[r + 1]);
  CHECK_EQ_INT(e[8], 4);
}

TEST(rank_rows_on_band_edges) {
  /* rank r's first row of 2896 rows: an edge of the 64 bands (45.25 rows)
   * near 2896 r / N (exec/dist_bands.c): 3 ranks from bands 21 and 43 */
  CHECK_EQ_INT(ty__dist_row(2896, 0, 3), 0);
  CHECK_EQ_INT(ty__dist_row(2896, 1, 3), 950);  /* band 21: 2896 * 21 / 64 */
  CHECK_EQ_INT(ty__dist_row(2896, 2, 3), 1945); /* band 43 */
  CHECK_EQ_INT(ty__dist_row(2896, 3, 3), 2896);
  CHECK_EQ_INT(ty__dist_row(2896, 1, 2), 1448); /* 2 and 4 ranks: the even rows */
  CHECK_EQ_INT(ty__dist_row(2896, 3, 4), 2172);
  CHECK_EQ_INT(ty__dist_row(50, 1, 3), 16); /* under 64 rows: even */
  CHECK_EQ_INT(ty__dist_row(6400, 1, 12), 533); /* 12 ranks: even (bands would unbalance them) */
  CHECK_EQ_INT(ty__dist_row(6400, 1, 16), 400); /* 16 divides 64: even is a band edge */
  /* the 64 bands of a dot product over the grid and 128 row tiles of an
   * element-wise launch (a multiple of 64: an edge at every rank's first
   * row) give each rank the same rows */
  const int64_t grid[2] = {2896, 2896};
  ty_tiling bands = {.ndim = 2, .pieces = 64, .tiles = {64, 1}};
  ty_tiling rows = {.ndim = 2, .pieces = 128, .tiles = {128, 1}};
  for (int r = 0; r <= 3; r++) {
    int64_t lo[2], hi[2];
    const int fb = ty__dist_first(2, grid, &bands, true, r, 3);
    const int fr = ty__dist_first(2, grid, &rows, true, r, 3);
    CHECK_EQ_INT(fr, 2 * fb);
    if (r == 0 || r == 3) continue;
    ty__piece_box(2, grid, &rows, fr, lo, hi);
    CHECK_EQ_INT(lo[0], ty__dist_row(2896, r, 3));
  }
  CHECK(ty__dist_rows_only(2, &rows));
  ty_tiling cols = {.ndim = 2, .pieces = 6, .tiles = {3, 2}};
  CHECK(!ty__dist_rows_only(2, &cols));
}

static const check_case cases[] = {
    CASE(pieces_by_number),
    CASE(bands_by_rows),
    CASE(rank_rows_on_band_edges),
};
CHECK_MAIN(cases)
