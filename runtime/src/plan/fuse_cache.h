/*
 * fuse_cache.h — the fusion pass's decisions, remembered per window
 * structure (fuse_cache.c) and replayed when the same structure comes again.
 */
#ifndef TY_FUSE_CACHE_H
#define TY_FUSE_CACHE_H

#include "fused.h"
#include "schedule.h"

/* A window's launches as decided before: true when rt->window was replaced
 * by the remembered decision (the fusion pass is done). false: decide, and
 * the decision is remembered (ty__fcache_built for each fused launch made,
 * then ty__fcache_done). full and n0 as ty__fuse has them. cut: regions.c's
 * cut is made first (the window's key is taken before it, and a hit replays
 * the cut recorded with the decision). */
bool ty__fcache_replay(ty_runtime *rt, ty__fusion *state, bool full, int n0, bool cut);

/* build(): fused launch f was made of members m[0..n-1] (program order);
 * constant c of its description was read from argument cj[c] of member
 * ck[c]; elided: the bytes its temporaries did not allocate. */
void ty__fcache_built(ty__fusion *state, const ty_pending *f, ty_pending *const *m, int n,
                      const int16_t *ck, const int16_t *cj, int nconst, uint64_t elided);

/* The pass is over: remember its decision (rt->window now holds it). */
void ty__fcache_done(ty_runtime *rt, ty__fusion *state);

/* fuse.c: f->fused_ops from its members' names ("[compiled]" when h->kernel). */
void ty__fuse_names(ty_pending *f, ty_pending *const *m, int n);

/* The waves of a window replayed from the cache (a hit in this flush): the
 * window after fusion is then the same launches on the same pattern of
 * stores as at the decision's earlier hits, so its graph and schedule are
 * too. flush_window keeps them after it schedules a hit's window
 * (ty__fcache_keep_waves: n launches, favor, whether build_graph saw a
 * host-only window) and, at the next hit of the same structure, takes them
 * (ty__fcache_waves: true when wave_of[0..n) and *ss were filled, for the
 * same n, favor and host_only). Debug builds compare them with a fresh
 * schedule (window.c). */
bool ty__fcache_waves(ty_runtime *rt, int n, int favor, bool host_only, int *wave_of,
                      ty_sched_stats *ss);
void ty__fcache_keep_waves(ty_runtime *rt, int n, int favor, bool host_only, const int *wave_of,
                           const ty_sched_stats *ss);

#endif /* TY_FUSE_CACHE_H */
