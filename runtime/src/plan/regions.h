/* regions.h — cutting shifted in-place updates into regions (regions.c). */
#ifndef TY_REGIONS_H
#define TY_REGIONS_H

#include "internal.h"

/* Cuts each group of the window's launches that updates one store through
 * shifted views into per-region launches, which fusion then fuses region by
 * region. The window may grow (rt->window, rt->nwindow, rt->window_cap).
 * Out of memory: the window stays as it was. */
void ty__regions_cut(ty_runtime *rt);

/* Launch records the free list (rt->free_pending) keeps for reuse
 * (window.c, fuse.c): a window's worth, and a few more for the fused
 * launches a flush makes while the window's launches are still held; with a
 * window's worth only, every flush of a full window malloc'd and freed one
 * ~6 KiB record (~140 instructions an operation of
 * bench/workloads/overhead.lua). */
#define TY__PENDING_KEEP(rt) ((rt)->cfg.window + 8)

/* Launch records from the window's free list (fuse.c). */
ty_pending *ty__pending_take(ty_runtime *rt);
/* Releases a launch's store references and gives its record back. */
void ty__pending_drop(ty_runtime *rt, ty_pending *l);

#endif
