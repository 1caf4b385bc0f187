/* regions.h — cutting shifted in-place updates into regions (regions.c). */
#ifndef TY_REGIONS_H
#define TY_REGIONS_H

#include "internal.h"

/* Cuts each group of the window's launches that updates one store through
 * shifted views into per-region launches, which fusion then fuses region by
 * region. The window may grow (rt->window, rt->nwindow, rt->window_cap).
 * Out of memory: the window stays as it was. */
void ty__regions_cut(ty_runtime *rt);

/* A window's cut as indices into the window (which launches formed each
 * group, its boxes and cut points): the fusion cache keeps it with the
 * decision made for the cut window, and replays it on a window of the same
 * structure (fuse_cache.c) without looking for groups again. */
typedef struct ty__cut_group ty__cut_group;
typedef struct ty__cut_rec {
  int ng;
  ty__cut_group *g;
  /* the cut window's launch i: from[i] >= 0, launch from[i] of the window as
   * it came; -1 - u, a launch cut from launch u, whose argument j is a fresh
   * region temporary when bit j of fresh[i] is set, else a view of u's
   * argument j's storage (fuse_cache.c builds a hit's fused launches from
   * these without cutting) */
  int nfrom;
  int *from;
  uint64_t *fresh;
  bool fail; /* not recorded (out of memory, or a group left uncut for lack of it) */
} ty__cut_rec;

/* ty__regions_cut, recording the cut into rec (emptied first). */
void ty__regions_cut_rec(ty_runtime *rt, ty__cut_rec *rec);
/* The cut recorded in rec, on a window of the structure it was recorded on:
 * false (the window as it was) when memory runs out. */
bool ty__regions_replay(ty_runtime *rt, const ty__cut_rec *rec);
void ty__cut_rec_free(ty__cut_rec *rec);
/* What the recorded cut does besides making launches: marks the storages
 * that its regions' views of a whole OUT store cover (exec.c then does not
 * zero them), on window w of the recorded structure. */
void ty__regions_marks(ty_runtime *rt, const ty__cut_rec *rec, ty_pending *const *w);

/* Launch records the free list (rt->free_pending) keeps for reuse
 * (window.c, fuse.c): two windows' worth and a few: a flush holds the
 * window's launches while it makes the fused launches and the region cuts
 * (CG's stencil: dozens), and a full window's flush keeps its tail for the
 * next window. With a window's worth only, every flush of a full window
 * malloc'd and freed one ~6 KiB record (~140 instructions an operation of
 * bench/workloads/overhead.lua); with a window and 8, CG at 64^2 still
 * malloc'd and freed ~4 an iteration (~13k instructions with glibc's
 * consolidation, of ~281k). CG at 256^2 cuts its stencil into 9 regions, ~57
 * records an iteration, ~160 a flush beside the window's 64: with two
 * windows and 8 it malloc'd and freed ~40 an iteration (~12k instructions).
 * Only records a flush needed at once are kept: at most 264 of 6,472 bytes
 * (1.6 MiB) at the default window of 64. */
#define TY__PENDING_KEEP(rt) (4 * (rt)->cfg.window + 8)

/* Launch records from the window's free list (fuse.c). */
ty_pending *ty__pending_take(ty_runtime *rt);
/* Releases a launch's store references and gives its record back. */
void ty__pending_drop(ty_runtime *rt, ty_pending *l);
/* The same, in line: a hit of the fusion cache drops every member of the
 * window (one an operation; the call and its register saves were ~20
 * instructions of each, fuse_cache.c's replay). fuse.c's pending_free's
 * protocol: records linked through args[0].store. */
static inline void ty__pending_drop_in(ty_runtime *rt, ty_pending *l) {
  for (int i = 0; i < l->nargs; i++) ty__store_release(l->args[i].store);
  if (rt->nfree_pending < TY__PENDING_KEEP(rt) && !rt->destroyed) {
    l->args[0].store = (ty_store *)rt->free_pending;
    rt->free_pending = l;
    rt->nfree_pending++;
    return;
  }
  free(l);
}

#endif
