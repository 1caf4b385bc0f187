/*
 * prepared.h — a launch as the executor holds it while it runs (exec.c),
 * shared with the distributed part of the executor (dist.c), which splits
 * its pieces among ranks and brings back what the other ranks' pieces wrote.
 */
#ifndef TY_PREPARED_H
#define TY_PREPARED_H

#include "internal.h"

/* A REDUCE argument's private tile for one piece: the piece's box, compact
 * over the dims where the store has a non-zero stride (the distinct elements
 * the piece can touch), stride 0 elsewhere. */
typedef struct private_tile {
  void *buf;
  int64_t count;
  int64_t strides[TY_MAX_RANK];
} private_tile;

typedef struct piece_result {
  int failed; /* 0 ok; else a ty_status */
  struct ty_reach reach; /* what the failure reached (ty_ctx_fail_reached) */
  char msg[TY_ERRLEN];
} piece_result;

enum { TY__PRIV_LOCAL = 8 }; /* private tiles kept inside a prepared launch */

/* A launch made ready to run: storage allocated, partition chosen, buffers
 * for results and reduction privates. prepare and finish run on the driving
 * thread; pieces run on workers and touch only their own slots. */
typedef struct prepared {
  ty_pending *l;
  ty_tiling tiling;
  bool skip; /* reads cancelled storage: nothing runs, outputs are cancelled */
  bool omp;  /* runs the task's omp variant on OpenMP processors */
  bool gpu;  /* ran on GPUs (exec_gpu.c): queued there by prepare, no CPU piece */
  int threads;
  private_tile *privates; /* priv_local, or allocated when pieces x args pass its size */
  piece_result *results;
  ty_record *explain;
  bool empty; /* the domain has no element: no piece runs a body */
  /* streamed runs (ty__exec_box): the box's corner, added to every piece's */
  bool boxed;
  int64_t origin[TY_MAX_RANK];
  /* the pieces this rank runs, [first, last): all of them but on several
   * ranks (dist.c), where a large launch's pieces are split among them */
  int first, last;
  bool dist; /* its pieces are split among ranks: finish sees the others' */
  uint64_t xmask; /* dist: the written arguments exchanged (bit i: argument i) */
  /* line-buffered in place (linebuf.c): rows next to a neighbour piece,
   * lb_rows of lb_row bytes per piece, written back by finish */
  char *lb_held;
  int64_t lb_rows;
  size_t lb_row;
  /* double-buffered in place (linebuf.c): a second block of W's storage,
   * which the pieces write W's new values into, at W's offsets, and the
   * rest of the storage after their rows; finish makes it the storage's */
  char *lb_swap;
  /* another launch of the wave touches W's storage: finish, after every
   * piece of the wave, copies the bytes outside W (what that launch wrote
   * there included), not W's pieces */
  bool lb_gaps_late;
  uint64_t lazy;  /* dist: the written arguments left split (dist_data.c), not exchanged */
  bool by_rows;   /* dist: pieces go to ranks by rows (ty__dist_first), not by number */
  /* a fused run with inputs a failed launch left unavailable (prepare):
   * those arguments, and the written ones that depend on them (cancelled
   * in finish with the inputs' cause); the rest runs */
  uint64_t unavail, unavail_reached;
  piece_result one; /* last: prepare clears what comes before (its 2 KiB message is
                       written by run_piece before anyone reads it) */
  /* the privates of a small reduction (a one-piece sum of a few arguments:
   * CG's dot products at 64 x 64), so that it costs no calloc; prepare
   * clears the entries it uses */
  private_tile priv_local[TY__PRIV_LOCAL];
} prepared;

/* pr->privates, freed unless it is pr->priv_local. */
void ty__privates_free(prepared *pr);


/* A wave too small to share among workers: each of its launches that runs
 * here is one piece of a built-in whose time follows its bytes
 * (TY__TASK_BYTES_BOUND, not on OpenMP processors), and their bytes together
 * (as the partitioner counts them, explain's bytes) are within the smallest
 * min_chunk among them, the size under which one launch stays one piece.
 * ty__exec_wave then runs its pieces on the flushing thread. */
bool ty__tiny_wave(const prepared *prs, const ty_status *sts, int count);

/* A REDUCE argument's private tile for the piece over box [lo, hi): its
 * strides and a buffer holding the operator's identity. */
ty_status ty__private_init(const ty_arg *a, int ndim, const int64_t *lo, const int64_t *hi,
                           private_tile *pt);

/* The processors a launch is cut for on several ranks: those of every rank
 * (each gets its share), but this rank's alone for a float sum or product
 * whose tiling is not fixed by its shape (a user task's reduce:+), so that
 * its pieces, hence its bits, are those of one process. */
int ty__dist_procs(const ty_runtime *rt, const ty_pending *l, int procs);

/* Several ranks (rt->dist.nranks > 1): before the pieces of a wave run,
 * the ranks agree on each large launch's tiling and split its pieces
 * (pr->first, pr->last); after they ran, every rank receives what the
 * others' pieces wrote and their reduction privates and failures, so that
 * finish sees every piece as a single process would. A failure the ranks
 * cannot agree on (one rank could not prepare a launch) stops them all. */
void ty__dist_wave_begin(ty_runtime *rt, prepared *prs, const ty_status *sts, int count);
void ty__dist_wave_end(ty_runtime *rt, prepared *prs, const ty_status *sts, int count);
/* A wave this rank runs one launch at a time (out of memory for its
 * bookkeeping, exec.c) still takes part in the vote, as refused: when
 * another rank runs it, every rank stops with this rank's message; when
 * every rank refused it, all run it one launch at a time, whole. */
void ty__dist_wave_refused(ty_runtime *rt, ty_pending **w, const int *members, int count);

/* The first of rank r's pieces (rank r + 1's first ends them) among the
 * pieces of tiling t of a launch over domain, of N ranks: [P*r/N, P*(r+1)/N)
 * in piece order, or with by_rows (ordered launches: their tiling is fixed
 * by the shape, a reduction's bands) the pieces whose middle row (dim 0) is
 * in [D*r/N, D*(r+1)/N), the rows rank r holds of a vector that split
 * launches cut evenly by rows: a band of a dot product is computed where
 * its rows are, at any rank count (docs/mpi.md). */
int ty__dist_first(int ndim, const int64_t *domain, const ty_tiling *t, bool by_rows, int r, int N);

/* A storage split among ranks (dist_data.c): the view of it that a split
 * launch wrote (offset, strides, its domain as shape) and that launch's
 * tiling; rank r holds valid its pieces (ty__dist_first) of it and every
 * element outside the view. Every rank computes the same record. */
typedef struct ty__split {
  int ndim;
  ty_dtype dtype;
  int64_t offset;
  int64_t shape[TY_MAX_RANK];
  int64_t strides[TY_MAX_RANK];
  ty_tiling tiling;
  bool by_rows; /* the launch's pieces went to ranks by rows (ty__dist_first) */
} ty__split;

/* Rank boundaries on band edges (dist_bands.c): rank r's first row of a
 * launch over D rows (an edge of 64 bands of them near D r / N); whether a
 * tiling cuts rows only (its pieces go to ranks by rows); a split launch's
 * tiling made of row tiles with an edge at every rank's first row. */
int64_t ty__dist_row(int64_t D, int r, int N);
bool ty__dist_rows_only(int ndim, const ty_tiling *t);
void ty__dist_band_tiling(const ty_runtime *rt, const ty_pending *l, ty_tiling *t);

/* A split matmul's operands (dist_matmul.c): whether argument i of launch
 * l is read by the rows of l's pieces (a matmul's A: C's rows, all of its
 * columns) rather than whole; the box it reads for the piece box [lo, hi)
 * of l (the last dim replaced); the record of its storage once each rank
 * received the rows of its pieces (false: keep the old one). */
bool ty__dist_rows_arg(const ty_pending *l, int i);
void ty__dist_rows_box(const ty_pending *l, int i, int64_t *lo, int64_t *hi);
bool ty__dist_rows_record(const prepared *pr, int i, const ty__split *old, ty__split *out);

/* Copy the box [lo, hi) of the view (offset, strides, in elements of es
 * bytes) of `data` to buf (pack) or from buf into the view; returns the end
 * of buf's part (elements in C order of the box). */
char *ty__copy_view(char *data, size_t es, int64_t offset, const int64_t *strides, int ndim,
                    const int64_t *lo, const int64_t *hi, char *buf, bool pack);

/* Several ranks, before the pieces of a wave run and after the vote split
 * them (dist.c): decide which written arguments stay split (pr->lazy) and
 * which are exchanged after the wave (pr->xmask), make whole the split
 * storages a launch cannot read in place, and bring each rank the boxes its
 * pieces read that other ranks hold (halos), as every rank computes them:
 * at once, or posted (returned: the pieces that read no halo run while it
 * moves, ty__dist_halos_wait before the others; NULL when nothing is in
 * flight). */
typedef struct ty__halos ty__halos;
ty__halos *ty__dist_wave_data(ty_runtime *rt, prepared *prs, const ty_status *sts, int count);
/* The halo exchange that ty__dist_wave_data left in flight (dist_overlap.c):
 * piece p of pr must wait for it (it reads a halo: a box other ranks hold;
 * false for every piece when x is NULL), and the wait, which unpacks the
 * halos and frees x (nothing when NULL). A failed transport stops all. */
bool ty__dist_piece_waits(const ty_runtime *rt, const ty__halos *x, const prepared *pr, int p);
void ty__dist_halos_wait(ty_runtime *rt, ty__halos *x);
/* Before the wave's launches are prepared: a launch the GPUs will run
 * reads and writes host memory whole, so its split storages are made whole. */
void ty__dist_wave_gpu(ty_runtime *rt, ty_pending **w, const int *members, int count);
/* Every split storage launch l touches is made whole (a launch run whole on
 * every rank: streamed, or one at a time). */
void ty__dist_launch_whole(ty_runtime *rt, const ty_pending *l);

#endif
