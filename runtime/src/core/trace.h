/*
 * trace.h — recording what ran where and when (trace.c), for Chrome/Perfetto
 * trace-event JSON and an SVG timeline.
 */
#ifndef TY_TRACE_H
#define TY_TRACE_H

#include "internal.h"

typedef struct ty_trace_piece {
  double t0, t1; /* seconds since the trace started */
  int worker;
  int piece, pieces;
  int wave;
  int fused;
  uint64_t seq;
  const ty_task *task;
} ty_trace_piece;

double ty__now(void); /* monotonic seconds */
uint64_t ty__now_ns(void); /* monotonic nanoseconds */
bool ty__tracing(const ty_runtime *rt);
double ty__trace_time(const ty_runtime *rt); /* seconds since the trace started */
void ty__trace_pieces(ty_runtime *rt, const ty_trace_piece *p, int n);
void ty__trace_span(ty_runtime *rt, const char *name, double t0, double t1, int wave);
void ty__trace_counter(ty_runtime *rt, double t, int64_t transient_bytes);
/* A piece queued on GPU `device`, stream `lane` (exec_gpu.c): the host time
 * its copies and kernel took to queue (the device runs them later), then the
 * bytes copied so far (rt->stats) as a counter. */
void ty__trace_gpu_piece(ty_runtime *rt, int device, int lane, double t0, double t1, int piece,
                         int pieces, uint64_t seq, const ty_task *task);
/* A piece's time on GPU `device` (exec_gpu.c, from events recorded on its
 * stream around its copies and kernel), in trace seconds: track "GPU d
 * (device)". */
void ty__trace_gpu_device(ty_runtime *rt, int device, int lane, double t0, double t1, int piece, int pieces,
                          uint64_t seq, const char *name);
void ty__trace_free(ty_runtime *rt); /* writes pending files, frees */
/* The same, with the write's status (ty_trace_stop, plan/explain.c, flushes
 * first so that the trace holds the window's launches). */
ty_status ty__trace_finish(ty_runtime *rt);

#endif
