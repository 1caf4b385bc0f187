/*
 * dist_halo.h — the halos of a wave (docs/mpi.md): what each rank's pieces
 * read of split storages that other ranks hold. dist_data.c lists them and
 * walks them (counts, packs, unpacks); dist_overlap.c moves them.
 */
#ifndef TY_DIST_HALO_H
#define TY_DIST_HALO_H

#include "prepared.h"

/* What a rank needs of a split storage for one argument of a launch:
 *  - READ_PIECES: the boxes this rank's pieces of a split launch read (its
 *    pieces moved by the shift into the written view's coordinates);
 *  - READ_OUTSIDE: the elements of the written view that a new split write
 *    through the view at shift leaves out (every rank holds those after);
 *  - READ_ALL: the whole view at shift, read by a launch every rank runs
 *    whole (a small one: an edge row of a stencil, regions.c's cut). Every
 *    rank computes it alike, so what it writes stays valid everywhere;
 *  - READ_ROWS: as READ_PIECES, each piece's box with the argument's whole
 *    last dim (a split matmul's A: the rows of C's pieces, dist_matmul.c);
 *    after the exchange each rank's record of A is the rows of its pieces;
 *  - READ_RANGE, READ_RANGE_ALL: as READ_PIECES and READ_ALL for a view of
 *    another shape (a reshape: C.seq's 1-D vector read as a grid), by
 *    storage elements: each piece (or the whole view) needs the range from
 *    its first element to its last (range_of), met with the pieces others
 *    hold (move_range). */
enum { READ_PIECES = 0, READ_OUTSIDE, READ_ALL, READ_ROWS, READ_RANGE, READ_RANGE_ALL };
typedef struct halo {
  ty_storage *stg;
  const prepared *pr; /* the reading (or rewriting) launch: its domain and agreed tiling */
  int64_t shift[TY_MAX_RANK];
  int kind;
  int arg; /* READ_RANGE*, READ_ROWS: the reading argument of pr's launch */
} halo;

enum { WALK_COUNT = 0, WALK_PACK, WALK_UNPACK };

/* What rank q sends rank r for the reads hs, in order (dist_data.c): counts
 * the bytes, or packs them at buf (q: this rank) or unpacks them from buf
 * (r: this rank); returns the bytes. */
size_t ty__halo_walk(const halo *hs, int nh, int q, int r, int N, char *buf, int mode);

/* The halos hs (nh of them, taken: freed here) move now: blocking, or
 * posted when the transport has ialltoallv and no halo rewrites a split
 * record (READ_OUTSIDE, READ_ROWS). Returns the exchange in flight (NULL: done, or
 * nothing moved), *got the bytes this rank receives. */
ty__halos *ty__dist_halos_post(ty_runtime *rt, halo *hs, int nh, size_t *got);

#endif
