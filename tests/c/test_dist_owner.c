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

static const check_case cases[] = {
    CASE(pieces_by_number),
    CASE(bands_by_rows),
};
CHECK_MAIN(cases)
