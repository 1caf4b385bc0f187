/*
 * record.c — the ring of explain records (internal.h's ty_record): the
 * executors take one per launch they run; plan/explain.c renders them.
 */
#include "internal.h"

#include <string.h>

ty_record *ty__explain_next(ty_runtime *rt) {
  ty_record *r = &rt->explain[rt->nexplained++ % TY_EXPLAIN_KEEP];
  r->processor = -1;
  r->wave = r->waves = 0;
  r->fused = 0;
  r->fuse_end.kind = TY_NOTE_NONE;
  r->texts = 0; /* no text written yet; the texts themselves are left as they are */
  r->gpus = 0;  /* a reused record must not keep another launch's placement */
  r->h2d = r->d2h = r->d2d = 0;
  /* its flush fills this slot when it ends (plan/window.c); outside a flush, none */
  r->flush_slot = rt->flushing ? rt->nflush_log : UINT64_MAX;
  return r;
}

ty_record_cold *ty__record_cold(const ty_runtime *rt, const ty_record *r) {
  return &rt->explain_cold[r - rt->explain];
}

/* The cold text of a TY_REC_* bit. */
static char *cold_text(ty_record_cold *c, unsigned bit) {
  return bit == TY_REC_STREAM ? c->stream : bit == TY_REC_RANKS ? c->ranks : c->place;
}

char *ty__record_text(ty_runtime *rt, ty_record *r, unsigned bit) {
  char *t = cold_text(ty__record_cold(rt, r), bit);
  if (!(r->texts & bit)) {
    t[0] = 0;
    r->texts |= (uint8_t)bit;
  }
  return t;
}

const char *ty__record_shown(const ty_runtime *rt, const ty_record *r, unsigned bit) {
  return r->texts & bit ? cold_text(ty__record_cold(rt, r), bit) : "";
}

const ty_flush_stats *ty__record_flush(const ty_runtime *rt, const ty_record *r) {
  static const ty_flush_stats none;
  if (r->flush_slot >= rt->nflush_log || rt->nflush_log - r->flush_slot > TY_EXPLAIN_KEEP) return &none;
  return &rt->flush_log[r->flush_slot % TY_EXPLAIN_KEEP];
}

void ty__fuse_note_text(const ty_fuse_note *note, char *buf, size_t len) {
  char origin[TY_MAX_ORIGIN];
  switch (note->kind) {
  case TY_NOTE_TEXT: snprintf(buf, len, "%s", note->why); break;
  case TY_NOTE_STOP:
    snprintf(buf, len, "#%llu %s: %s", (unsigned long long)note->seq[0], ty_task_name(note->task),
             note->why);
    break;
  case TY_NOTE_NOT_WITH:
    if (note->seq[1] != note->seq[0])
      snprintf(buf, len, "not fused with #%llu-#%llu: %s", (unsigned long long)note->seq[0],
               (unsigned long long)note->seq[1], note->why);
    else
      snprintf(buf, len, "not fused with #%llu: %s", (unsigned long long)note->seq[0], note->why);
    break;
  case TY_NOTE_FULL: snprintf(buf, len, "window full (%d launches)", note->n); break;
  case TY_NOTE_INPLACE:
    snprintf(buf, len, "#%llu %s: in place, line-buffered (reads rows -%d..+%llu)",
             (unsigned long long)note->seq[0], ty_task_name(note->task), note->n,
             (unsigned long long)note->seq[1]);
    break;
  case TY_NOTE_FUSE_OFF:
    ty__origin_text(&note->origin, TY_AXIS_FUSE, note->task, origin, sizeof origin);
    snprintf(buf, len, "not fused: fuse = false (%s)", origin);
    break;
  default:
    if (len) buf[0] = 0;
  }
}
