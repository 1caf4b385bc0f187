/*
 * dist.h — one program on several processes (docs/mpi.md).
 *
 * Every process (rank) runs the same script with its own runtime; the
 * runtimes agree on the plan (the same launches, fused and tiled the same
 * way), each runs the pieces it owns of a large launch, and they exchange
 * what other ranks' pieces need of what those pieces wrote (halos), and
 * whole stores before the host reads them, so that every value read holds
 * the same bytes on every rank, the bytes a single process computes. The core links no transport:
 * the host installs one (the `tycho` shell installs MPI's, repl/mpi.c) as
 * this table of collective operations. Every rank calls them in the same
 * order; none is called when nranks is 1.
 */
#ifndef TYCHO_DIST_H
#define TYCHO_DIST_H

#include "tycho/tycho.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ty_dist {
  int rank;   /* 0 .. nranks-1 */
  int nranks; /* >= 1 */
  /* Check mode (TYCHO_MPI_CHECK=1): every flush compares a hash of its
   * launches across ranks and stops on the first difference. */
  bool check;
  /* Launches over fewer elements than this run whole on every rank, with
   * no communication (0: the default, 131072: 1 MiB of float64). */
  int64_t min_elems;
  /* Every store whole on every rank after each wave (the first version's
   * scheme: what split launches wrote goes to every rank at once) instead
   * of split stores with halos (TYCHO_MPI_REPLICATED=1; for comparison). */
  bool replicated;
  void *ud;
  /* Rank r's counts[r] bytes (at `mine` on rank r) land at all + displs[r]
   * on every rank; counts and displs are the same on every rank. 0, or
   * nonzero when the transport failed. */
  int (*allgatherv)(void *ud, const void *mine, void *all, const size_t *counts,
                    const size_t *displs);
  /* bytes at buf on rank root land at buf on every rank. */
  int (*bcast)(void *ud, void *buf, size_t bytes, int root);
  /* Stop every rank. msg (non-NULL): print it, then stop all; NULL: another
   * rank prints (it was seen to fail): wait to be stopped. Never returns. */
  void (*abort)(void *ud, const char *msg);
  /* Optional: a file written by the ranks together (ty_save_npy; NULL:
   * each rank writes the whole file alone). Every rank calls it with the
   * same path, an existing file: rank r writes its n bytes at `part` to
   * [off, off + n) (n may be 0); the file is synced and closed when it
   * returns. 0, or nonzero with a message in err (errlen bytes). */
  int (*write_at_all)(void *ud, const char *path, uint64_t off, const void *part, size_t n,
                      char *err, size_t errlen);
  /* Optional (NULL: a split store is made whole instead, by allgatherv):
   * each rank sends scounts[q] bytes at send + sdispls[q] to rank q and
   * receives rcounts[q] bytes from rank q at recv + rdispls[q]; a count of
   * 0 is no message. Every rank calls it; the counts match pair by pair.
   * Brings the halos of split stores (docs/mpi.md). */
  int (*alltoallv)(void *ud, const void *send, const size_t *scounts, const size_t *sdispls,
                   void *recv, const size_t *rcounts, const size_t *rdispls);
  /* Optional, both or neither, with alltoallv (NULL: alltoallv, blocking):
   * the same exchange in two halves, so that a wave's pieces that read no
   * halo run while the bytes move. ialltoallv posts it and sets *req; until
   * wait(ud, *req) returned, the caller leaves the bytes at send and the
   * four count arrays as they are and does not read recv. Every rank calls
   * both, in the same order as the other calls, and waits for an exchange
   * before its next call of the table. 0, or nonzero when the transport
   * failed (then no wait). */
  int (*ialltoallv)(void *ud, const void *send, const size_t *scounts, const size_t *sdispls,
                    void *recv, const size_t *rcounts, const size_t *rdispls, void **req);
  int (*wait)(void *ud, void *req);
} ty_dist;

/* Install the transport before the first launch (copied; ud must outlive
 * the runtime). TY_EINVAL when the table is incomplete or launches exist. */
ty_status ty_set_dist(ty_runtime *rt, const ty_dist *d);
/* The script ended on this rank (the tycho shell calls it once, after a
 * script that did not fail, or in os.exit): in check mode the ranks meet
 * once more, so a rank still flushing stops every rank with "control
 * diverged" instead of waiting for ever. Nothing otherwise. */
void ty_dist_finish(ty_runtime *rt);
/* This process's rank (0 without a transport) and the ranks (1 without). */
int ty_rank(const ty_runtime *rt);
int ty_nranks(const ty_runtime *rt);

#ifdef __cplusplus
}
#endif
#endif
