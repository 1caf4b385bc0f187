/*
 * schedule.c — the `favor` axis: how a flushed window is cut into waves,
 * launches that run at the same time between barriers.
 *
 *  - debug: one launch per wave, program order; the memory baseline.
 *  - min-peak-memory: walk program order and put each launch in the current
 *    wave when it depends on nothing there and the simulated peak of
 *    transient bytes stays equal to debug's; otherwise open a new wave. The
 *    guard matters: merging a producer with an unrelated launch can keep two
 *    big temporaries alive at once (IREE's version lacks it). Waves stay
 *    contiguous runs of program order.
 *  - max-concurrency: as late as possible: a launch goes one wave before its
 *    earliest consumer (sinks in the last wave), so the waves equal the
 *    longest dependence chain; ties follow program order, so it is
 *    deterministic. Uses more transient memory.
 */
#include "alloc.h"
#include "schedule.h"

#include <stdlib.h>
#include <string.h>

int64_t ty__simulate_peak(const ty_graph *g, const int *wave_of) {
  int nw = 0;
  for (int i = 0; i < g->n; i++)
    if (wave_of[i] + 1 > nw) nw = wave_of[i] + 1;
  if (nw == 0 || g->nbuf == 0) return 0;
  /* min-peak-memory calls this once per launch of the window: a window's
   * waves (at most its launches, 64 by default) fit on the stack */
  int64_t delta_local[129];
  int64_t *delta = nw < 129 ? delta_local : ty__malloc(((size_t)nw + 1) * sizeof *delta);
  if (!delta) return -1;
  memset(delta, 0, ((size_t)nw + 1) * sizeof *delta);
  for (int b = 0; b < g->nbuf; b++) {
    int lo = nw, hi = -1;
    for (int k = g->user_ptr[b]; k < g->user_ptr[b + 1]; k++) {
      int w = wave_of[g->user_idx[k]];
      if (w < lo) lo = w;
      if (w > hi) hi = w;
    }
    if (hi < 0) continue;
    delta[lo] += g->buf_bytes[b];
    delta[hi + 1] -= g->buf_bytes[b];
  }
  int64_t live = 0, peak = 0;
  for (int w = 0; w < nw; w++) {
    live += delta[w];
    if (live > peak) peak = live;
  }
  if (delta != delta_local) free(delta);
  return peak;
}

static int critical_path(const ty_graph *g, int *level) {
  int longest = 0;
  for (int i = 0; i < g->n; i++) {
    int l = 0;
    for (int k = g->dep_ptr[i]; k < g->dep_ptr[i + 1]; k++)
      if (level[g->dep_idx[k]] + 1 > l) l = level[g->dep_idx[k]] + 1;
    level[i] = l;
    if (l + 1 > longest) longest = l + 1;
  }
  return longest;
}

static void fill_stats(const ty_graph *g, const int *wave_of, int cp, ty_sched_stats *st) {
  memset(st, 0, sizeof *st);
  st->critical_path = cp;
  int nw = 0;
  for (int i = 0; i < g->n; i++)
    if (wave_of[i] + 1 > nw) nw = wave_of[i] + 1;
  st->waves = nw;
  int *count = ty__calloc((size_t)nw + 1, sizeof *count);
  if (count) {
    for (int i = 0; i < g->n; i++) count[wave_of[i]]++;
    for (int w = 0; w < nw; w++) {
      if (count[w] > st->widest) st->widest = count[w];
      if (count[w] > 1) st->concurrent += count[w];
    }
    free(count);
  }
  st->peak_transient = ty__simulate_peak(g, wave_of);
}

ty_status ty__schedule(const ty_graph *g, ty_favor favor, int *wave_of, ty_sched_stats *st) {
  int n = g->n;
  for (int i = 0; i < n; i++) wave_of[i] = i;
  int *level = ty__malloc((size_t)(n ? n : 1) * sizeof *level);
  if (!level) {
    fill_stats(g, wave_of, n, st);
    return TY_ENOMEM;
  }
  int cp = critical_path(g, level);
  ty_status status = TY_OK;
  if (favor == TY_FAVOR_MIN_PEAK && n > 1) {
    int64_t debug_peak = ty__simulate_peak(g, wave_of);
    int wave = 0, start = 0; /* the current wave holds launches start..i-1 */
    for (int i = 1; i < n; i++) {
      bool independent = true;
      for (int k = g->dep_ptr[i]; k < g->dep_ptr[i + 1] && independent; k++)
        independent = g->dep_idx[k] < start;
      if (independent) {
        /* tentatively: i joins the wave, later launches one per wave */
        for (int j = i; j < n; j++) wave_of[j] = wave + (j - i);
        if (ty__simulate_peak(g, wave_of) <= debug_peak) continue;
      }
      wave++;
      start = i;
      for (int j = i; j < n; j++) wave_of[j] = wave + (j - i);
    }
  } else if (favor == TY_FAVOR_MAX_CONCURRENCY && n > 1) {
    /* as late as possible: one wave before the earliest consumer */
    for (int i = 0; i < n; i++) wave_of[i] = cp - 1;
    for (int i = n - 1; i >= 0; i--)
      for (int k = g->dep_ptr[i]; k < g->dep_ptr[i + 1]; k++) {
        int d = g->dep_idx[k];
        if (wave_of[i] - 1 < wave_of[d]) wave_of[d] = wave_of[i] - 1;
      }
  }
  free(level);
  fill_stats(g, wave_of, cp, st);
  return status;
}
