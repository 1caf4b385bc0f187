/*
 * npy_dist.h — .npy files on several ranks (npy_dist.c, docs/mpi.md).
 */
#ifndef TY_NPY_DIST_H
#define TY_NPY_DIST_H

#include "tycho/tycho.h"

#include <stddef.h>
#include <stdint.h>

/* Save on every rank together (rt->dist.write_at_all is set, nranks > 1):
 * rank 0 makes the temporary file beside `path` (savefile.c's rules) and
 * writes the header (hn bytes at hdr), every rank writes its rows of the
 * nbytes of C-order data (rows: the length of dim 0, 0 for a 0-d store)
 * with one collective write, and rank 0 renames the file over `path`.
 * Every rank returns the same status and message. local: this rank could
 * not gather the data (its message in ty_errmsg): every rank fails with it. */
ty_status ty__save_npy_ranks(ty_runtime *rt, const char *path, const char *hdr, size_t hn,
                             const void *data, size_t nbytes, int64_t rows, ty_status local);

/* A load on several ranks (each read the file): the ranks agree. When a
 * rank failed, every rank fails with the message of the lowest such rank
 * (*out, if loaded here, is released). st: this rank's status. */
ty_status ty__load_npy_agree(ty_runtime *rt, ty_status st, ty_store **out);

#endif /* TY_NPY_DIST_H */
