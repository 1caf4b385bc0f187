/*
 * npy_dist.c — .npy files on several ranks (docs/mpi.md, tycho/dist.h).
 *
 * Stores are replicated: every rank holds the bytes of the whole file.
 * Saving: rank 0 makes the temporary file beside the target and writes the
 * header; every rank then writes its share of the rows, rows
 * [R*r/N, R*(r+1)/N) of R, with the transport's collective write
 * (MPI_File_write_at_all in the tycho shell), and rank 0 fsyncs and renames
 * it over the target (savefile.c: the old file or the new one, never half,
 * and only regular files are replaced). The file is the one a single
 * process writes, byte for byte. Loading: every rank reads the whole file
 * (each needs all of it), then the ranks agree on the outcome, so a file
 * one rank cannot read fails on every rank alike.
 *
 * Every step that can fail on one rank ends in an agreement (a broadcast
 * from rank 0, or an allgather of statuses), so the ranks return the same
 * status and message and the script goes on identically; a transport
 * failure stops every rank (dist.abort).
 */
#include "npy_dist.h"

#include "exec.h"
#include "internal.h"
#include "savefile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What rank 0 tells the others: 0 and the temporary file's name, or a
 * failure and its message. */
typedef struct announce {
  int32_t st;
  char text[TY_ERRLEN + 4096]; /* a message, or a path (PATH_MAX) */
} announce;

/* Stop every rank with msg (the transport's abort never returns). */
__attribute__((noreturn)) static void stop(ty_runtime *rt, const char *msg) {
  rt->dist.abort(rt->dist.ud, msg);
  abort();
}

__attribute__((noreturn)) static void transport_failed(ty_runtime *rt, const char *what) {
  char msg[128];
  snprintf(msg, sizeof msg, "rank %d: the transport failed (%s)", rt->dist.rank, what);
  stop(rt, msg);
}

static void bcast0(ty_runtime *rt, announce *a) {
  if (rt->dist.bcast(rt->dist.ud, a, sizeof *a, 0)) transport_failed(rt, "broadcast");
  rt->stats.dist_collectives++;
}

/* Every rank's code; the lowest failing rank (or -1) and its message in
 * *why (broadcast from that rank). */
static int agree(ty_runtime *rt, int32_t code, const char *msg, announce *why) {
  const int N = rt->dist.nranks;
  size_t *counts = ty__malloc((size_t)N * 2 * sizeof *counts), *displs = counts + N;
  int32_t *codes = ty__malloc((size_t)N * sizeof *codes);
  if (!counts || !codes) stop(rt, "out of memory on a rank (a collective save or load)");
  for (int r = 0; r < N; r++) counts[r] = sizeof code, displs[r] = sizeof code * (size_t)r;
  if (rt->dist.allgatherv(rt->dist.ud, &code, codes, counts, displs))
    transport_failed(rt, "allgather");
  rt->stats.dist_collectives++;
  int who = -1;
  for (int r = 0; r < N && who < 0; r++)
    if (codes[r]) who = r;
  free(counts);
  free(codes);
  if (who < 0) return -1;
  if (rt->dist.rank == who) {
    why->st = code;
    snprintf(why->text, sizeof why->text, "%s", msg);
  }
  if (rt->dist.bcast(rt->dist.ud, why, sizeof *why, who)) transport_failed(rt, "broadcast");
  rt->stats.dist_collectives++;
  return who;
}

typedef struct save_job {
  ty_runtime *rt;
  const char *path, *hdr;
  size_t hn;
  const char *data;
  size_t nbytes;
  int64_t rows;
  ty_status local;  /* this rank has no data to write: it fails the save */
  bool started;     /* rank 0: the temporary exists and the others know its name */
  announce failure; /* set when the collective write failed on some rank */
} save_job;

/* The collective write of this rank's rows, then the agreement on it:
 * 0, or EIO with the status and message in j->failure. */
static int write_rows(save_job *j, const char *tmp) {
  ty_runtime *rt = j->rt;
  const int N = rt->dist.nranks, me = rt->dist.rank;
  uint64_t lo = 0, hi = me == 0 ? j->nbytes : 0; /* a 0-d store: rank 0 writes it */
  if (j->rows > 0) {
    const uint64_t row = j->nbytes / (uint64_t)j->rows;
    lo = row * (uint64_t)(j->rows * me / N);
    hi = row * (uint64_t)(j->rows * (me + 1) / N);
  }
  if (j->local) lo = hi = 0; /* it writes nothing, and says why below */
  char err[TY_ERRLEN / 2] = "";
  int e = rt->dist.write_at_all(rt->dist.ud, tmp, j->hn + lo, j->data ? j->data + lo : NULL,
                                (size_t)(hi - lo), err, sizeof err);
  char msg[TY_ERRLEN];
  if (j->local)
    snprintf(msg, sizeof msg, "%s (on rank %d)", ty_errmsg(rt), me), e = 1;
  else
    snprintf(msg, sizeof msg, "ty_save_npy: cannot write '%s' (collective write, rank %d): %s",
             j->path, me, err[0] ? err : "failed");
  if (agree(rt, j->local ? (int32_t)j->local : e ? (int32_t)TY_EIO : 0, msg, &j->failure) < 0)
    return 0;
  return EIO;
}

/* Rank 0's body of the save (savefile.c made the temporary file). */
static int rank0_body(int fd, const char *tmp, void *ud) {
  save_job *j = ud;
  int e = ty__write_full(fd, j->hdr, j->hn);
  if (e) return e; /* the others learn it after ty__save_file_at */
  announce a = {0, ""};
  snprintf(a.text, sizeof a.text, "%s", tmp);
  if (strlen(tmp) >= sizeof a.text) return ENAMETOOLONG;
  j->started = true;
  bcast0(j->rt, &a);
  return write_rows(j, tmp);
}

ty_status ty__save_npy_ranks(ty_runtime *rt, const char *path, const char *hdr, size_t hn,
                             const void *data, size_t nbytes, int64_t rows, ty_status local) {
  char why[TY_ERRLEN];
  snprintf(why, sizeof why, "%s", local ? ty_errmsg(rt) : "");
  if (local) ty__fail(rt, local, "%s", why);
  save_job j = {rt, path, hdr, hn, data, nbytes, rows, local, false, {0, ""}};
  announce *a = ty__malloc(sizeof *a);
  if (!a) /* every rank has the same memory for this to fail on: the usual case */
    stop(rt, "ty_save_npy: out of memory on a rank");
  ty_status st = TY_OK;
  if (rt->dist.rank == 0) {
    st = local ? local : ty__save_file_at(rt, "ty_save_npy", path, rank0_body, &j);
    if (j.failure.st) st = ty__fail(rt, (ty_status)j.failure.st, "%s", j.failure.text);
    a->st = st;
    snprintf(a->text, sizeof a->text, "%s", st ? ty_errmsg(rt) : "");
    bcast0(rt, a); /* no temporary (phase 1 failed), or the outcome */
    free(a);
    return st;
  }
  bcast0(rt, a); /* the temporary's name, or why there is none */
  if (a->st == TY_OK) {
    char *tmp = ty__strdup(a->text);
    if (!tmp) stop(rt, "ty_save_npy: out of memory on a rank");
    write_rows(&j, tmp);
    free(tmp);
    bcast0(rt, a); /* rank 0's outcome: its rename */
  }
  if (a->st) st = ty__fail(rt, (ty_status)a->st, "%s", a->text);
  free(a);
  return st;
}

ty_status ty__load_npy_agree(ty_runtime *rt, ty_status st, ty_store **out) {
  announce *why = ty__malloc(sizeof *why);
  if (!why) stop(rt, "ty_load_npy: out of memory on a rank");
  int who = agree(rt, (int32_t)st, st ? ty_errmsg(rt) : "", why);
  if (who >= 0) {
    if (*out) ty_store_release(*out);
    *out = NULL;
    if (st) st = ty__fail(rt, (ty_status)why->st, "%s", why->text);
    else st = ty__fail(rt, (ty_status)why->st, "%s (on rank %d)", why->text, who);
  }
  free(why);
  return st;
}
