/*
 * exec.h — the executor (exec.c): runs launches' pieces on processors.
 *
 * Called by the window (waves) and the stream pass (boxes); calls only down
 * (stores, partition, explain records, trace). Every launch given to it is
 * run or cancelled; the caller releases it.
 */
#ifndef TY_EXEC_H
#define TY_EXEC_H

#include "internal.h"

/* Run the launches w[members[0 .. count)] as one wave: prepare them in
 * program order, run all their pieces together, finish them in program
 * order. The first error (status and message) goes to *first / msg unless
 * one is there already. */
void ty__exec_wave(ty_runtime *rt, ty_pending **w, const int *members, int count, int wave,
                   int nwaves, ty_status *first, char *msg, size_t msglen);

/* Run launch l restricted to [lo, hi) along dim, its pieces in global
 * coordinates; dim < 0 runs the whole domain. The explain record is kept
 * when `record`, with `note` as its streaming line. */
ty_status ty__exec_box(ty_runtime *rt, ty_pending *l, int dim, int64_t lo, int64_t hi, bool record,
                       const char *note);

/* Check mode on several ranks (dist.c): compare a hash of the n launches
 * of a flush across ranks; a difference stops every rank with "control
 * diverged at launch #N on rank R" and both launches described. */
void ty__dist_check(ty_runtime *rt, ty_pending **w, int n);
/* Check mode: a step that is not a flush but makes collectives (a save, a
 * load, the end of the script: `what` says which, "saves a .npy file") meets
 * the other ranks' check points, so a rank that flushes more often than the
 * others stops with "control diverged on rank R: ..." instead of waiting. */
void ty__dist_check_mark(ty_runtime *rt, const char *what);

/* Several ranks: before host code reads storage stg, the pieces other
 * ranks hold come back (dist_data.c; one collective, on every rank in the
 * same order, like the read itself). Nothing when it is whole. */
void ty__dist_whole(ty_runtime *rt, ty_storage *stg);
/* The same for a host read of view s (index: of its element at index
 * alone): when it spans less than a quarter of the split view (an element,
 * a short slice), only the elements in its range come back and the storage
 * stays split; otherwise it is made whole. */
void ty__dist_read(ty_runtime *rt, const ty_store *s, const int64_t *index);

/* Before launch l's storage is allocated: a fresh output of an element-wise
 * launch takes the block of an input that nothing reads after l (inplace.c;
 * TYCHO_IN_PLACE=0: never). */
void ty__in_place(ty_runtime *rt, ty_pending *l);

#endif
