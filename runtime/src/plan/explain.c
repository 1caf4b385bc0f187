/*
 * explain.c — the record of what the runtime decided for each launch that
 * ran, and why: a ring of the last TY_EXPLAIN_KEEP launches (internal.h),
 * filled at flush time when a launch is partitioned. When a flush ends, its
 * figures (waves, concurrency, simulated and real memory) go to the slot of
 * rt->flush_log its records point at: the text shows them once, after the
 * flush's last launch.
 */
#include "internal.h"
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fmt_bytes(int64_t b, char *buf, size_t len) { ty_format_bytes((double)b, buf, len); }

/* The reader's view of a record: every text composed here, not on the
 * launch path. */
static void render(const ty_runtime *rt, const ty_record *r, ty_explain_entry *e) {
  memset(e, 0, sizeof *e);
  e->seq = r->seq;
  snprintf(e->task, sizeof e->task, "%s", ty_task_name(r->task));
  e->ndim = r->ndim;
  for (int k = 0; k < r->ndim; k++) {
    e->shape[k] = r->shape[k];
    e->tiles[k] = r->tiles[k];
  }
  e->target = r->gpus ? "gpu" : r->omp ? "omp" : "cpu";
  e->gpus = r->gpus;
  snprintf(e->place, sizeof e->place, "%s", ty__record_shown(rt, r, TY_REC_PLACE));
  e->h2d = r->h2d;
  e->d2h = r->d2h;
  e->d2d = r->d2d;
  e->policy = r->pol->p;
  for (int a = 0; a < TY_NAXES; a++)
    ty__origin_text(&r->pol->from[a], a, r->task, e->from[a], sizeof e->from[a]);
  e->pieces = r->pieces;
  e->processor = r->processor;
  e->wave = r->wave;
  e->waves = r->waves;
  const ty_policy *p = &r->pol->p;
  char b1[32], b2[32];
  switch (p->mode) {
  case TY_MODE_SINGLE: snprintf(e->why, sizeof e->why, "single: one piece"); break;
  case TY_MODE_TASK:
    snprintf(e->why, sizeof e->why, "task: one piece, beside independent launches");
    break;
  case TY_MODE_ALL:
    snprintf(e->why, sizeof e->why, "all: %d processors x overdecompose %d -> %lld pieces",
             r->procs, p->overdecompose, (long long)r->procs * p->overdecompose);
    break;
  default: {
    fmt_bytes(r->bytes, b1, sizeof b1);
    fmt_bytes(p->min_chunk, b2, sizeof b2);
    int64_t cap = (int64_t)r->procs * p->overdecompose;
    if (r->raw > cap)
      snprintf(e->why, sizeof e->why,
               "auto: %s / %s min chunk -> %lld pieces, capped at %lld (%d processors x %d)", b1,
               b2, (long long)r->raw, (long long)cap, r->procs, p->overdecompose);
    else
      snprintf(e->why, sizeof e->why, "auto: %s / %s min chunk -> %lld piece%s", b1, b2,
               (long long)r->raw, r->raw == 1 ? "" : "s");
  }
  }
  if (r->gpus)
    snprintf(e->why, sizeof e->why, "gpu: %d piece%s on %d GPU%s", r->pieces, r->pieces == 1 ? "" : "s",
             r->gpus, r->gpus == 1 ? "" : "s");
  else if (r->ordered > 1 && r->pieces > 1)
    snprintf(e->why, sizeof e->why,
             "ordered: %d pieces fixed by the shape (the same bits on any processors)", r->pieces);
  size_t n = strlen(e->why);
  if (r->ordered > 1 && r->pieces <= 1)
    n += (size_t)snprintf(e->why + n, sizeof e->why - n, "; walks %d ordered tiles", r->ordered);
  if (r->max_pieces > 0 && r->want == r->max_pieces && r->raw > r->max_pieces)
    n += (size_t)snprintf(e->why + n, sizeof e->why - n, "; the task allows %d", r->max_pieces);
  if (r->banded && n < sizeof e->why)
    n += (size_t)snprintf(e->why + n, sizeof e->why - n, "; cut at its storage's rows -> %d pieces", r->pieces);
  if (r->short_dims && n < sizeof e->why)
    snprintf(e->why + n, sizeof e->why - n, "; %d fit the splittable dims", r->pieces);
  if (r->key_store)
    snprintf(e->partition, sizeof e->partition, "key partition of store #%llu",
             (unsigned long long)r->key_store);
  else
    snprintf(e->partition, sizeof e->partition, "new");
  e->fused = r->fused;
  snprintf(e->fused_ops, sizeof e->fused_ops, "%s", r->texts & TY_REC_FUSED_OPS ? r->fused_ops : "");
  ty__fuse_note_text(&r->fuse_end, e->fuse_end, sizeof e->fuse_end);
  snprintf(e->stream, sizeof e->stream, "%s", ty__record_shown(rt, r, TY_REC_STREAM));
  snprintf(e->ranks, sizeof e->ranks, "%s", ty__record_shown(rt, r, TY_REC_RANKS));
  e->flush = *ty__record_flush(rt, r);
}

int ty_explain(ty_runtime *rt, int n, ty_explain_entry *out) {
  if (!rt || n <= 0 || !out) return 0;
  ty_flush(rt); /* an error here is reported by the flush's own caller path */
  uint64_t have = rt->nexplained < TY_EXPLAIN_KEEP ? rt->nexplained : TY_EXPLAIN_KEEP;
  uint64_t take = (uint64_t)n < have ? (uint64_t)n : have;
  for (uint64_t i = 0; i < take; i++)
    render(rt, &rt->explain[(rt->nexplained - take + i) % TY_EXPLAIN_KEEP], &out[i]);
  /* launches run in waves, not always in program order: report them by
   * flush, then launch number (insertion sort: n is small and nearly sorted) */
  for (uint64_t i = 1; i < take; i++) {
    ty_explain_entry e = out[i];
    uint64_t j = i;
    while (j > 0 && (out[j - 1].flush.flush > e.flush.flush ||
                     (out[j - 1].flush.flush == e.flush.flush && out[j - 1].seq > e.seq))) {
      out[j] = out[j - 1];
      j--;
    }
    out[j] = e;
  }
  return (int)take;
}

static void format_header(ty_sbuf *b) {
  ty__sb_printf(b, "%-6s %-12s %-16s %-6s %6s %-10s  %s\n", "launch", "task", "shape", "target",
            "pieces", "tiling", "why");
}

static void format_entry(ty_sbuf *b, const ty_explain_entry *e) {
  char shape[128], tiling[96];
  ty__shape_str(e->ndim, e->shape, shape, sizeof shape);
  size_t t = 0;
  tiling[0] = 0;
  for (int d = 0; d < e->ndim && t < sizeof tiling; d++)
    t += (size_t)snprintf(tiling + t, sizeof tiling - t, d ? "x%d" : "%d", e->tiles[d]);
  if (e->ndim == 0) snprintf(tiling, sizeof tiling, "-");
  ty__sb_printf(b, "#%-5llu %-12s %-16s %-6s %6d %-10s  %s\n", (unsigned long long)e->seq, e->task,
            shape, e->target, e->pieces, tiling, e->why);
  char chunk[32];
  ty_format_bytes((double)e->policy.min_chunk, chunk, sizeof chunk);
  ty__sb_printf(b, "       mode=%s (%s), overdecompose=%d (%s), min_chunk=%s (%s), favor=%s (%s)",
            ty_mode_name(e->policy.mode), e->from[TY_AXIS_MODE], e->policy.overdecompose,
            e->from[TY_AXIS_OVERDECOMPOSE], chunk, e->from[TY_AXIS_MIN_CHUNK],
            ty_favor_name(e->policy.favor), e->from[TY_AXIS_FAVOR]);
  if (strcmp(e->partition, "new") != 0 && e->partition[0]) ty__sb_printf(b, ", reused %s", e->partition);
  if (e->processor >= 0) ty__sb_printf(b, ", ran on %s %d", e->gpus ? "GPU" : "processor", e->processor);
  if (e->waves > 0) ty__sb_printf(b, ", wave %d of %d", e->wave + 1, e->waves);
  ty__sb_printf(b, "\n");
  if (e->fused) ty__sb_printf(b, "       fused %d launches: %s\n", e->fused, e->fused_ops);
  if (e->fuse_end[0]) ty__sb_printf(b, "       fusion: %s\n", e->fuse_end);
  if (e->stream[0]) ty__sb_printf(b, "       streaming: %s\n", e->stream);
  if (e->ranks[0]) ty__sb_printf(b, "       ranks: %s\n", e->ranks);
  if (e->place[0] || e->h2d || e->d2h || e->d2d) {
    char h2d[32], d2h[32], d2d[32];
    ty_format_bytes((double)e->h2d, h2d, sizeof h2d);
    ty_format_bytes((double)e->d2h, d2h, sizeof d2h);
    ty_format_bytes((double)e->d2d, d2d, sizeof d2d);
    ty__sb_printf(b, "       placement: %s", e->place[0] ? e->place : "-");
    if (e->gpus) ty__sb_printf(b, " (%d GPU%s)", e->gpus, e->gpus == 1 ? "" : "s");
    if (e->h2d || e->d2h || e->d2d)
      ty__sb_printf(b, "; copied %s to GPU, %s to host, %s between GPUs", h2d, d2h, d2d);
    ty__sb_printf(b, "\n");
  }
}

/* One line of a flush's figures, after its last launch. */
static void format_flush(ty_sbuf *b, const ty_flush_stats *f) {
  if (f->flush == 0) return; /* its flush has not ended */
  char tpeak[32], peak[32], alloc[32], freed[32], live[32];
  ty_format_bytes((double)f->peak_transient, tpeak, sizeof tpeak);
  ty_format_bytes((double)f->bytes_peak, peak, sizeof peak);
  ty_format_bytes((double)f->bytes_allocated, alloc, sizeof alloc);
  ty_format_bytes((double)f->bytes_freed, freed, sizeof freed);
  ty_format_bytes((double)f->bytes_live, live, sizeof live);
  double pct = f->launches > 0 ? 100.0 * f->concurrent / f->launches : 0;
  ty__sb_printf(b,
                "flush %llu (favor %s): %d launch%s in %d wave%s, critical path %d, widest %d, "
                "%d concurrent (%.0f%%), transient peak %s (simulated); allocator peak %s, "
                "allocated %s, freed %s, live %s\n",
                (unsigned long long)f->flush, f->favor ? f->favor : "none", f->launches,
                f->launches == 1 ? "" : "es", f->waves, f->waves == 1 ? "" : "s",
                f->critical_path, f->widest, f->concurrent, pct, tpeak, peak, alloc, freed, live);
}

ty_status ty_explain_text(ty_runtime *rt, int n, char **out) {
  *out = NULL;
  if (n <= 0) n = TY_EXPLAIN_KEEP;
  ty_explain_entry *es = ty__calloc((size_t)n, sizeof *es);
  if (!es) return ty__fail(rt, TY_ENOMEM, "explain: out of memory");
  int k = ty_explain(rt, n, es);
  ty_sbuf b = {0};
  format_header(&b);
  for (int i = 0; i < k; i++) {
    format_entry(&b, &es[i]);
    if (i + 1 == k || es[i + 1].flush.flush != es[i].flush.flush) format_flush(&b, &es[i].flush);
  }
  free(es);
  if (b.failed) {
    free(b.p);
    return ty__fail(rt, TY_ENOMEM, "explain: out of memory");
  }
  *out = b.p;
  return TY_OK;
}

void ty__explain_print(ty_runtime *rt, uint64_t since, FILE *out) {
  if (rt->nexplained - since > TY_EXPLAIN_KEEP) since = rt->nexplained - TY_EXPLAIN_KEEP;
  if (since == rt->nexplained) return;
  ty_sbuf b = {0};
  if (since == 0) format_header(&b);
  for (uint64_t i = since; i < rt->nexplained; i++) {
    ty_explain_entry e;
    render(rt, &rt->explain[i % TY_EXPLAIN_KEEP], &e);
    format_entry(&b, &e);
  }
  format_flush(&b, &rt->last_flush); /* called as a flush ends: these were its launches */
  if (!b.failed && b.p) fputs(b.p, out);
  free(b.p);
}

ty_status ty_trace_stop(ty_runtime *rt) {
  if (!rt || !rt->trace) return rt ? ty__fail(rt, TY_EINVAL, "trace: no trace is being recorded") : TY_EINVAL;
  ty_status st = ty_flush(rt); /* the trace holds the window's launches */
  ty_status w = ty__trace_finish(rt);
  return st ? st : w;
}
