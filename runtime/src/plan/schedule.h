/*
 * schedule.h — cutting a window's launch graph into waves (schedule.c).
 *
 * Pure functions over a small graph description, so that the favors can be
 * tested on fixed and random graphs without running anything.
 */
#ifndef TY_SCHEDULE_H
#define TY_SCHEDULE_H

#include "tycho/tycho.h"

#include <stdint.h>

/* Launches 0..n-1 in program order. deps: CSR lists of earlier launches each
 * launch must follow (every hazard: read-after-write, write-after-read,
 * write-after-write). Buffers: transient stores (allocated inside the window
 * and freed inside it), each written first by `producer` and used last by
 * `last` (the launches that touch it are listed in CSR `users`). */
typedef struct ty_graph {
  int n;
  const int *dep_ptr; /* n + 1 entries */
  const int *dep_idx;
  int nbuf;
  const int64_t *buf_bytes;
  const int *user_ptr; /* nbuf + 1 entries */
  const int *user_idx; /* includes the producer */
} ty_graph;

typedef struct ty_sched_stats {
  int waves;
  int critical_path;      /* launches on the longest dependence chain */
  int widest;             /* launches in the largest wave */
  int concurrent;         /* launches in waves of two or more */
  int64_t peak_transient; /* simulated peak of transient bytes */
} ty_sched_stats;

/* Assign wave numbers (0-based, non-decreasing along every dependence) to
 * wave_of[0..n) under `favor`; fills stats. Returns TY_ENOMEM on allocation
 * failure (wave_of then holds the debug schedule). */
ty_status ty__schedule(const ty_graph *g, ty_favor favor, int *wave_of, ty_sched_stats *st);

/* Simulated peak of transient bytes: buffer b lives from the wave of its
 * first user through the wave of its last (inputs to a wave's end, outputs
 * from its start). */
int64_t ty__simulate_peak(const ty_graph *g, const int *wave_of);

#endif
