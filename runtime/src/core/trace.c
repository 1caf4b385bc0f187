/*
 * trace.c — recording point tasks, flushes and waves, and writing them as
 * Chrome trace-event JSON (Perfetto, chrome://tracing) and as an SVG timeline
 * that any browser or image viewer shows.
 *
 * Events are appended on the driving thread only (window.c collects a wave's
 * piece timings in per-piece slots and hands them over after the wave), so
 * the trace needs no lock. One track (tid) per worker; flushes and waves on
 * track "runtime"; transient bytes as a counter track; the pieces queued on
 * each GPU on a track of their own ("GPU d", host time), and the bytes
 * copied between host and GPUs as a counter track.
 */
#include "alloc.h"
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

typedef enum { EV_PIECE, EV_SPAN, EV_COUNTER, EV_GPU, EV_GPU_BYTES, EV_GPU_DEV } ev_kind;

typedef struct ev {
  ev_kind kind;
  double t0, t1;
  int worker, piece, pieces, wave, fused;
  uint64_t seq;
  int64_t value;
  uint64_t h2d, d2h, d2d; /* EV_GPU_BYTES */
  char name[TY_MAX_NAME];
} ev;

#define GPU_TID0 1000     /* GPU d's track is tid GPU_TID0 + d */
#define GPU_DEV_TID0 2000 /* and its device-time track GPU_DEV_TID0 + d */

struct ty_trace {
  char *json_path, *svg_path;
  double origin;
  ev *evs;
  size_t n, cap;
  bool failed; /* out of memory: stop recording, report at stop */
};

double ty__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

uint64_t ty__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

bool ty__tracing(const ty_runtime *rt) { return rt->trace != NULL; }

double ty__trace_time(const ty_runtime *rt) {
  return rt->trace ? ty__now() - rt->trace->origin : 0;
}

static ev *push(ty_runtime *rt) {
  struct ty_trace *t = rt->trace;
  if (!t || t->failed) return NULL;
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 4096;
    ev *e = ty__realloc(t->evs, cap * sizeof *e);
    if (!e) {
      t->failed = true;
      return NULL;
    }
    t->evs = e;
    t->cap = cap;
  }
  ev *e = &t->evs[t->n++];
  memset(e, 0, sizeof *e);
  return e;
}

void ty__trace_pieces(ty_runtime *rt, const ty_trace_piece *p, int n) {
  for (int i = 0; i < n; i++) {
    ev *e = push(rt);
    if (!e) return;
    e->kind = EV_PIECE;
    e->t0 = p[i].t0;
    e->t1 = p[i].t1;
    e->worker = p[i].worker;
    e->piece = p[i].piece;
    e->pieces = p[i].pieces;
    e->wave = p[i].wave;
    e->fused = p[i].fused;
    e->seq = p[i].seq;
    snprintf(e->name, sizeof e->name, "%s", ty_task_name(p[i].task));
  }
}

void ty__trace_span(ty_runtime *rt, const char *name, double t0, double t1, int wave) {
  ev *e = push(rt);
  if (!e) return;
  e->kind = EV_SPAN;
  e->t0 = t0;
  e->t1 = t1;
  e->wave = wave;
  snprintf(e->name, sizeof e->name, "%s", name);
}

void ty__trace_counter(ty_runtime *rt, double t, int64_t bytes) {
  ev *e = push(rt);
  if (!e) return;
  e->kind = EV_COUNTER;
  e->t0 = t;
  e->value = bytes;
}

/* A span on GPU `device`'s track (lane: its stream); NULL when the trace is full. */
static ev *gpu_span(ty_runtime *rt, ev_kind kind, int device, int lane, double t0, double t1,
                    int piece, int pieces, uint64_t seq, const char *name) {
  ev *e = push(rt);
  if (!e) return NULL;
  e->kind = kind;
  e->t0 = t0;
  e->t1 = t1;
  e->worker = device;
  e->wave = lane;
  e->piece = piece;
  e->pieces = pieces;
  e->seq = seq;
  snprintf(e->name, sizeof e->name, "%s", name);
  return e;
}

void ty__trace_gpu_piece(ty_runtime *rt, int device, int lane, double t0, double t1, int piece,
                         int pieces, uint64_t seq, const ty_task *task) {
  if (!gpu_span(rt, EV_GPU, device, lane, t0, t1, piece, pieces, seq, ty_task_name(task))) return;
  ev *e = push(rt);
  if (!e) return;
  e->kind = EV_GPU_BYTES;
  e->t0 = t1;
  e->h2d = rt->stats.gpu_h2d_bytes;
  e->d2h = rt->stats.gpu_d2h_bytes;
  e->d2d = rt->stats.gpu_d2d_bytes;
}

void ty__trace_gpu_device(ty_runtime *rt, int device, int lane, double t0, double t1, int piece, int pieces,
                          uint64_t seq, const char *name) {
  gpu_span(rt, EV_GPU_DEV, device, lane, t0, t1, piece, pieces, seq, name);
}

/* Write to path.tmp.XXXXXX, fsync, rename. */
static ty_status write_atomic(ty_runtime *rt, const char *path, const char *data, size_t len) {
  size_t n = strlen(path) + 16;
  char *tmp = ty__malloc(n);
  if (!tmp) return ty__fail(rt, TY_ENOMEM, "trace: out of memory");
  snprintf(tmp, n, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    free(tmp);
    return ty__fail(rt, TY_EIO, "trace: cannot write '%s'", path);
  }
  mode_t mask = umask(0); /* mkstemp makes 0600: give the file the usual mode */
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  size_t off = 0;
  bool ok = true;
  while (ok && off < len) {
    ssize_t w = write(fd, data + off, len - off);
    if (w <= 0) ok = false;
    else off += (size_t)w;
  }
  ok = ok && fsync(fd) == 0;
  ok = (close(fd) == 0) && ok;
  if (ok) ok = rename(tmp, path) == 0;
  if (!ok) unlink(tmp);
  free(tmp);
  return ok ? TY_OK : ty__fail(rt, TY_EIO, "trace: cannot write '%s'", path);
}

/* Task names are identifiers; escape anyway so the JSON stays valid. */
static void json_str(ty_sbuf *b, const char *s) {
  ty__sb_printf(b, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') ty__sb_printf(b, "\\%c", c);
    else if (c < 0x20) ty__sb_printf(b, "\\u%04x", c);
    else ty__sb_printf(b, "%c", c);
  }
  ty__sb_printf(b, "\"");
}

static void write_json(const struct ty_trace *t, ty_sbuf *b) {
  ty__sb_printf(b, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  ty__sb_printf(b, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"tycho\"}}");
  int maxw = -1;
  for (size_t i = 0; i < t->n; i++)
    if (t->evs[i].kind == EV_PIECE && t->evs[i].worker > maxw) maxw = t->evs[i].worker;
  ty__sb_printf(b, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"runtime\"}}");
  for (int w = 0; w <= maxw; w++)
    ty__sb_printf(b, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"processor %d\"}}",
            w + 1, w);
  unsigned gpus = 0, devs = 0; /* bit d: GPU d has events (queued; device time) */
  for (size_t i = 0; i < t->n; i++) {
    if (t->evs[i].kind == EV_GPU && t->evs[i].worker < 32) gpus |= 1u << t->evs[i].worker;
    if (t->evs[i].kind == EV_GPU_DEV && t->evs[i].worker < 32) devs |= 1u << t->evs[i].worker;
  }
  for (int d = 0; d < 32; d++) {
    if (gpus & (1u << d))
      ty__sb_printf(b, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"GPU %d (queued)\"}}",
                    GPU_TID0 + d, d);
    if (devs & (1u << d))
      ty__sb_printf(b, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"GPU %d (device)\"}}",
                    GPU_DEV_TID0 + d, d);
  }
  for (size_t i = 0; i < t->n; i++) {
    const ev *e = &t->evs[i];
    switch (e->kind) {
    case EV_PIECE:
      ty__sb_printf(b, ",\n{\"name\":");
      json_str(b, e->name);
      ty__sb_printf(b, ",\"cat\":\"task\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                 "\"args\":{\"launch\":%llu,\"piece\":%d,\"pieces\":%d,\"wave\":%d,\"fused\":%d}}",
              e->worker + 1, e->t0 * 1e6, (e->t1 - e->t0) * 1e6, (unsigned long long)e->seq,
              e->piece, e->pieces, e->wave, e->fused);
      break;
    case EV_SPAN:
      ty__sb_printf(b, ",\n{\"name\":");
      json_str(b, e->name);
      ty__sb_printf(b, ",\"cat\":\"runtime\",\"ph\":\"X\",\"pid\":1,\"tid\":0,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"wave\":%d}}",
              e->t0 * 1e6, (e->t1 - e->t0) * 1e6, e->wave);
      break;
    case EV_COUNTER:
      ty__sb_printf(b, ",\n{\"name\":\"transient bytes\",\"ph\":\"C\",\"pid\":1,\"ts\":%.3f,\"args\":{\"bytes\":%lld}}",
              e->t0 * 1e6, (long long)e->value);
      break;
    case EV_GPU:
    case EV_GPU_DEV: { /* a piece on a GPU's stream, or its kernel's device time */
      const bool dev = e->kind == EV_GPU_DEV;
      ty__sb_printf(b, ",\n{\"name\":");
      json_str(b, e->name);
      ty__sb_printf(b, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                       "\"args\":{\"launch\":%llu,\"piece\":%d,\"pieces\":%d,\"gpu\":%d,\"stream\":%d}}",
                    dev ? "gpu-device" : "gpu", (dev ? GPU_DEV_TID0 : GPU_TID0) + e->worker, e->t0 * 1e6,
                    (e->t1 - e->t0) * 1e6, (unsigned long long)e->seq, e->piece, e->pieces, e->worker,
                    e->wave);
      break;
    }
    case EV_GPU_BYTES:
      ty__sb_printf(b, ",\n{\"name\":\"gpu bytes copied\",\"ph\":\"C\",\"pid\":1,\"ts\":%.3f,"
                       "\"args\":{\"host to gpu\":%llu,\"gpu to host\":%llu,\"between gpus\":%llu}}",
                    e->t0 * 1e6, (unsigned long long)e->h2d, (unsigned long long)e->d2h,
                    (unsigned long long)e->d2d);
      break;
    }
  }
  ty__sb_printf(b, "\n]}\n");
}

static unsigned name_hue(const char *s) {
  unsigned h = 2166136261u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h % 360;
}

static void write_svg(const struct ty_trace *t, ty_sbuf *b) {
  int maxw = 0;
  double end = 1e-9;
  for (size_t i = 0; i < t->n; i++) {
    const ev *e = &t->evs[i];
    if (e->kind == EV_PIECE && e->worker > maxw) maxw = e->worker;
    if ((e->kind == EV_PIECE || e->kind == EV_SPAN) && e->t1 > end) end = e->t1;
  }
  const int left = 110, width = 1000, lane = 28, top = 40;
  int height = top + (maxw + 2) * lane + 40;
  double sx = width / end;
  ty__sb_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"11\">\n",
          left + width + 20, height);
  ty__sb_printf(b, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  ty__sb_printf(b, "<text x=\"10\" y=\"20\" font-size=\"14\">tycho trace: %.3f ms</text>\n", end * 1e3);
  ty__sb_printf(b, "<text x=\"10\" y=\"%d\">runtime</text>\n", top + lane / 2 + 4);
  for (int w = 0; w <= maxw; w++)
    ty__sb_printf(b, "<text x=\"10\" y=\"%d\">processor %d</text>\n", top + (w + 1) * lane + lane / 2 + 4, w);
  for (size_t i = 0; i < t->n; i++) {
    const ev *e = &t->evs[i];
    if (e->kind != EV_PIECE && e->kind != EV_SPAN) continue; /* the JSON has GPU tracks */
    double x = left + e->t0 * sx, w = (e->t1 - e->t0) * sx;
    if (w < 0.5) w = 0.5;
    if (e->kind == EV_SPAN) {
      bool wave = strncmp(e->name, "wave", 4) == 0;
      ty__sb_printf(b, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" stroke=\"#888\" stroke-width=\"0.3\"><title>",
              x, top + (wave ? lane / 2 : 2), w, wave ? lane / 2 - 2 : lane / 2 - 2, wave ? "#ddd" : "#bbb");
      ty__sb_printf(b, "%s</title></rect>\n", e->name);
    } else {
      ty__sb_printf(b, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"hsl(%u,60%%,60%%)\"><title>%s #%llu piece %d/%d wave %d</title></rect>\n",
              x, top + (e->worker + 1) * lane + 2, w, lane - 4, name_hue(e->name), e->name,
              (unsigned long long)e->seq, e->piece + 1, e->pieces, e->wave);
    }
  }
  ty__sb_printf(b, "<text x=\"%d\" y=\"%d\">0</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.3f ms</text>\n",
          left, height - 15, left + width, height - 15, end * 1e3);
  ty__sb_printf(b, "</svg>\n");
}

static ty_status trace_write(ty_runtime *rt, struct ty_trace *t) {
  ty_status st = TY_OK;
  if (t->failed) return ty__fail(rt, TY_ENOMEM, "trace: out of memory while recording");
  ty_sbuf b = {0};
  write_json(t, &b);
  if (b.failed) st = ty__fail(rt, TY_ENOMEM, "trace: out of memory");
  else st = write_atomic(rt, t->json_path, b.p, b.len);
  free(b.p);
  if (st == TY_OK && t->svg_path) {
    ty_sbuf s = {0};
    write_svg(t, &s);
    if (s.failed) st = ty__fail(rt, TY_ENOMEM, "trace: out of memory");
    else st = write_atomic(rt, t->svg_path, s.p, s.len);
    free(s.p);
  }
  return st;
}

static void trace_destroy(struct ty_trace *t) {
  free(t->json_path);
  free(t->svg_path);
  free(t->evs);
  free(t);
}

ty_status ty_trace_start(ty_runtime *rt, const char *json_path, const char *svg_path) {
  if (!rt || !json_path || !*json_path) return TY_EINVAL;
  if (rt->trace) return ty__fail(rt, TY_EINVAL, "trace: a trace is already being recorded");
  struct ty_trace *t = ty__calloc(1, sizeof *t);
  if (!t || !(t->json_path = ty__strdup(json_path)) || (svg_path && !(t->svg_path = ty__strdup(svg_path)))) {
    if (t) trace_destroy(t);
    return ty__fail(rt, TY_ENOMEM, "trace: out of memory");
  }
  t->origin = ty__now();
  rt->trace = t;
  return TY_OK;
}

ty_status ty__trace_finish(ty_runtime *rt) {
  if (!rt->trace) return TY_OK;
  struct ty_trace *t = rt->trace;
  rt->trace = NULL;
  ty_status w = trace_write(rt, t);
  trace_destroy(t);
  return w;
}

void ty__trace_free(ty_runtime *rt) { (void)ty__trace_finish(rt); }
