/*
 * gpu_sim.c — simulated GPUs: the CUDA driver table (gpu.h) and the cuBLAS
 * table (gpu_blas.h) implemented on the CPU, so that the GPU code path
 * (gpu_kernels.c and what calls it) runs, and is tested, on machines
 * without a GPU (--gpus sim:N, TYCHO_GPUS=sim:N; docs/gpu.md).
 *
 * What it keeps of a real GPU, so that the mistakes a GPU punishes show up:
 *  - device memory is separate from host memory: blocks of their own,
 *    poisoned with 0xFF bytes when allocated and before they are freed (a
 *    missing copy reads NaN or -1), bounded by an arena per device
 *    (TYCHO_SIM_MEM, default 4 GiB: CUDA_ERROR_OUT_OF_MEMORY beyond it);
 *    every copy checks that its device side lies inside one live block, and
 *    a zone after each block, checked when it is freed, catches kernels
 *    that wrote past its end;
 *  - every stream is a worker thread with a FIFO queue: copies, memsets,
 *    launches, event records and waits are queued and the host call returns
 *    at once (launch parameters are copied when queued, as CUDA does), so a
 *    missing synchronisation is a wrong result when the host outruns it;
 *    StreamSynchronize, EventQuery, EventSynchronize and CtxSynchronize wait
 *    or answer as CUDA's do; H2D copies read host memory when they run, as
 *    from pinned memory. With TYCHO_SIM_LAZY=1 a stream runs only what the
 *    host waits for (a synchronisation, an event it synchronises on, a
 *    stream waiting on one of its events, cuMemFree): a missing
 *    synchronisation then reads stale data every time, not by chance;
 *  - modules are CUDA C source, compiled for the host by the system C++
 *    compiler with a shim that maps CUDA C onto C++ (gpu_sim_cc.c);
 *  - a launch walks the grid, block by block, with ONE thread per block:
 *    the kernels are grid-stride loops, and a block's shared-memory tree
 *    with one thread is the identity. Every __global__ function must take
 *    one parameter, by value (what tycho's kernels do): a wrapper generated
 *    per kernel copies it and knows its size.
 * What it cannot show: speed, warps, races between the threads of a block,
 * shared-memory sizes, the real driver's JIT.
 *
 * Invariants: one mutex (S.lock) guards every queue, counter, event mark
 * and block list; a worker runs an operation outside the lock and counts it
 * done under it (S.progress is broadcast after each), so "done == queued"
 * under the lock means the stream is idle. The driver is a process-wide
 * singleton like libcuda: tables loaded by several runtimes share its
 * devices, which exist while one table is loaded.
 */
#define _GNU_SOURCE
#include "alloc.h"
#include "gpu.h"
#include "gpu_blas.h"
#include "gpu_sim.h"
#include "internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIM_SMS 4          /* small grids: a launch walks every block on one thread */
#define SIM_ALIGN 256      /* cuMemAlloc's alignment */
#define SIM_MAGIC 0x7953494d424c4b31ULL /* "ySIMBLK1" */
#define SIM_RED 0xFD       /* the zone after each block: a write past the end changes it */
#define SIM_DEFAULT_MEM ((size_t)4 << 30)

enum {
  E_INVALID_VALUE = TY__CUDA_ERROR_INVALID_VALUE,
  E_INVALID_IMAGE = TY__CUDA_ERROR_INVALID_IMAGE,
  E_INVALID_CONTEXT = TY__CUDA_ERROR_INVALID_CONTEXT,
  E_INVALID_SOURCE = TY__CUDA_ERROR_INVALID_SOURCE,
  E_INVALID_HANDLE = TY__CUDA_ERROR_INVALID_HANDLE,
  E_NOT_FOUND = TY__CUDA_ERROR_NOT_FOUND,
  E_ILLEGAL_ADDRESS = TY__CUDA_ERROR_ILLEGAL_ADDRESS
};

/* ---- state ---------------------------------------------------------------------- */

typedef struct sim_block {
  uint64_t magic;
  size_t bytes;
  struct ty__CUctx_st *dev;
  struct sim_block *prev, *next;
} sim_block; /* the header in front of each device block (SIM_ALIGN bytes) */

/* What an event recorded: done once the stream reached it. Shared by the
 * event, the queued record and the waits queued on other streams. */
typedef struct sim_mark {
  int refs;
  bool done;
  double t;                      /* seconds, when it ran */
  struct ty__CUstream_st *stream; /* where it was queued (NULL: ran at once) */
  uint64_t seq;                  /* its place there: done once stream->done >= seq */
} sim_mark;

enum { OP_COPY, OP_SET, OP_KERNEL, OP_RECORD, OP_WAIT, OP_HOST };

struct ty__CUfunc_st { /* a module's table entry (gpu_sim.h) */
  ty__sim_kernel k;
};

typedef struct sim_op {
  int kind;
  struct sim_op *next;
  void *dst;
  const void *src;
  size_t n;
  unsigned char byte;
  const struct ty__CUfunc_st *fn;
  unsigned grid[3];
  void *params; /* kernel parameters or host-function argument (owned) */
  void (*host)(void *);
  sim_mark *mark;
} sim_op;

struct ty__CUstream_st {
  struct ty__CUctx_st *dev;
  pthread_t thread;
  pthread_cond_t work; /* an operation was queued, or stop */
  sim_op *head, *tail;
  uint64_t queued, done;
  uint64_t demand; /* lazy: run operations while done < demand */
  bool stop;
  struct ty__CUstream_st *next; /* the device's streams */
};

struct ty__CUctx_st { /* a device and its primary context */
  int ordinal;
  int retains;
  size_t used;
  sim_block *blocks;
  struct ty__CUstream_st *streams;
};

struct ty__CUevent_st {
  sim_mark *mark; /* NULL: never recorded */
  unsigned flags;
};

struct ty__CUmod_st {
  void *so;
  const ty__sim_kernel *k;
  int nk;
};

static struct {
  pthread_mutex_t lock;
  pthread_cond_t progress;
  int refs, ndev;
  size_t total;
  bool lazy; /* TYCHO_SIM_LAZY=1: streams run only what the host waits for */
  struct ty__CUctx_st dev[TY_MAX_GPUS];
} S = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, false, {{0}}};

static _Thread_local struct ty__CUctx_st *cur;
/* the detail of the last error on this thread (GetErrorString gives it) */
static _Thread_local char detail[1024];
static _Thread_local int detail_code;

static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  detail_code = code;
  return code;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void mark_release(sim_mark *m) { /* under the lock */
  if (m && --m->refs == 0) free(m);
}

/* ---- streams ---------------------------------------------------------------------- */

static void run_op(sim_op *op) {
  switch (op->kind) {
  case OP_COPY: memmove(op->dst, op->src, op->n); break;
  case OP_SET: memset(op->dst, op->byte, op->n); break;
  case OP_KERNEL: op->fn->k.run(op->params, op->grid[0], op->grid[1], op->grid[2]); break;
  case OP_HOST: op->host(op->params); break;
  default: break;
  }
}

/* Lazy streams run up to `seq` (under the lock; eager ones run anyway). */
static void demand(struct ty__CUstream_st *s, uint64_t seq) {
  if (s && seq > s->demand) {
    s->demand = seq;
    pthread_cond_signal(&s->work);
  }
}

static void wait_mark(sim_mark *m) { /* under the lock */
  while (!m->done) {
    demand(m->stream, m->seq);
    pthread_cond_wait(&S.progress, &S.lock);
  }
}

/* Run op (waits and records under the lock, work outside it), count it in
 * *done (a stream's; NULL for the default stream), tell the waiters, and
 * free it. Under the lock. */
static void retire_locked(sim_op *op, uint64_t *done) {
  if (op->kind == OP_WAIT) {
    wait_mark(op->mark);
  } else if (op->kind == OP_RECORD) {
    op->mark->t = now();
    op->mark->done = true;
  } else {
    pthread_mutex_unlock(&S.lock);
    run_op(op);
    pthread_mutex_lock(&S.lock);
  }
  mark_release(op->mark);
  if (done) (*done)++;
  pthread_cond_broadcast(&S.progress);
  free(op->params);
  free(op);
}

static void *worker(void *arg) {
  struct ty__CUstream_st *s = arg;
  pthread_mutex_lock(&S.lock);
  for (;;) {
    while (!s->stop && !(s->head && (!S.lazy || s->done < s->demand))) pthread_cond_wait(&s->work, &S.lock);
    sim_op *op = s->head;
    if (!op) break; /* stopped, and nothing left */
    s->head = op->next;
    if (!s->head) s->tail = NULL;
    retire_locked(op, &s->done);
  }
  pthread_mutex_unlock(&S.lock);
  return NULL;
}

static void wait_idle(struct ty__CUstream_st *s) { /* under the lock */
  demand(s, s->queued);
  while (s->done < s->queued) pthread_cond_wait(&S.progress, &S.lock);
}

static void wait_dev_idle(struct ty__CUctx_st *d) { /* under the lock */
  for (struct ty__CUstream_st *s = d->streams; s; s = s->next) wait_idle(s);
}

/* Queue op on s (takes it); the NULL stream runs it at once after the
 * device's other work, as the legacy default stream orders. Under the lock. */
static void enqueue_locked(struct ty__CUstream_st *s, sim_op *op) {
  if (!s) {
    if (cur) wait_dev_idle(cur);
    retire_locked(op, NULL);
    return;
  }
  op->next = NULL;
  if (s->tail) s->tail->next = op;
  else s->head = op;
  s->tail = op;
  s->queued++;
  pthread_cond_signal(&s->work);
}

static ty__CUresult enqueue(struct ty__CUstream_st *s, sim_op *op) {
  pthread_mutex_lock(&S.lock);
  enqueue_locked(s, op);
  pthread_mutex_unlock(&S.lock);
  return TY__CUDA_SUCCESS;
}

static sim_op *new_op(int kind) {
  sim_op *op = ty__calloc(1, sizeof *op);
  if (op) op->kind = kind;
  return op;
}

static ty__CUresult sim_StreamCreate(ty__CUstream *out, unsigned flags) {
  (void)flags;
  *out = NULL;
  if (!cur) return fail(E_INVALID_CONTEXT, "cuStreamCreate: no current context");
  struct ty__CUstream_st *s = ty__calloc(1, sizeof *s);
  if (!s) return TY__CUDA_ERROR_OUT_OF_MEMORY;
  s->dev = cur;
  pthread_cond_init(&s->work, NULL);
  if (pthread_create(&s->thread, NULL, worker, s) != 0) {
    pthread_cond_destroy(&s->work);
    free(s);
    return fail(TY__CUDA_ERROR_OUT_OF_MEMORY, "cuStreamCreate: no thread for the stream");
  }
  pthread_mutex_lock(&S.lock);
  s->next = cur->streams;
  cur->streams = s;
  pthread_mutex_unlock(&S.lock);
  *out = s;
  return TY__CUDA_SUCCESS;
}

/* Finishes the queued work first (CUDA returns at once and finishes it later). */
static ty__CUresult sim_StreamDestroy(ty__CUstream s) {
  if (!s) return fail(E_INVALID_HANDLE, "cuStreamDestroy: NULL stream");
  pthread_mutex_lock(&S.lock);
  wait_idle(s);
  s->stop = true;
  pthread_cond_signal(&s->work);
  for (struct ty__CUstream_st **p = &s->dev->streams; *p; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      break;
    }
  pthread_mutex_unlock(&S.lock);
  pthread_join(s->thread, NULL);
  pthread_cond_destroy(&s->work);
  free(s);
  return TY__CUDA_SUCCESS;
}

static ty__CUresult sim_StreamSynchronize(ty__CUstream s) {
  pthread_mutex_lock(&S.lock);
  if (s) wait_idle(s);
  else if (cur) wait_dev_idle(cur);
  pthread_mutex_unlock(&S.lock);
  return TY__CUDA_SUCCESS;
}

static ty__CUresult sim_CtxSynchronize(void) {
  if (!cur) return fail(E_INVALID_CONTEXT, "cuCtxSynchronize: no current context");
  pthread_mutex_lock(&S.lock);
  wait_dev_idle(cur);
  pthread_mutex_unlock(&S.lock);
  return TY__CUDA_SUCCESS;
}

/* ---- events ------------------------------------------------------------------------- */

static ty__CUresult sim_EventCreate(ty__CUevent *e, unsigned flags) {
  *e = ty__calloc(1, sizeof **e);
  if (!*e) return TY__CUDA_ERROR_OUT_OF_MEMORY;
  (*e)->flags = flags;
  return TY__CUDA_SUCCESS;
}

static ty__CUresult sim_EventDestroy(ty__CUevent e) {
  if (!e) return fail(E_INVALID_HANDLE, "cuEventDestroy: NULL event");
  pthread_mutex_lock(&S.lock);
  mark_release(e->mark);
  pthread_mutex_unlock(&S.lock);
  free(e);
  return TY__CUDA_SUCCESS;
}

static ty__CUresult sim_EventRecord(ty__CUevent e, ty__CUstream s) {
  if (!e) return fail(E_INVALID_HANDLE, "cuEventRecord: NULL event");
  sim_mark *m = ty__calloc(1, sizeof *m);
  sim_op *op = new_op(OP_RECORD);
  if (!m || !op) {
    free(m);
    free(op);
    return TY__CUDA_ERROR_OUT_OF_MEMORY;
  }
  m->refs = 2; /* the event and the queued record */
  op->mark = m;
  pthread_mutex_lock(&S.lock);
  mark_release(e->mark);
  e->mark = m;
  enqueue_locked(s, op);
  m->stream = s;
  m->seq = s ? s->queued : 0;
  pthread_mutex_unlock(&S.lock);
  return TY__CUDA_SUCCESS;
}

static ty__CUresult sim_EventQuery(ty__CUevent e) {
  if (!e) return fail(E_INVALID_HANDLE, "cuEventQuery: NULL event");
  pthread_mutex_lock(&S.lock);
  bool done = !e->mark || e->mark->done;
  pthread_mutex_unlock(&S.lock);
  return done ? TY__CUDA_SUCCESS : TY__CUDA_ERROR_NOT_READY;
}

static ty__CUresult sim_EventSynchronize(ty__CUevent e) {
  if (!e) return fail(E_INVALID_HANDLE, "cuEventSynchronize: NULL event");
  pthread_mutex_lock(&S.lock);
  if (e->mark) wait_mark(e->mark);
  pthread_mutex_unlock(&S.lock);
  return TY__CUDA_SUCCESS;
}

/* The wait is on what the event holds now (a later record does not move it). */
static ty__CUresult sim_StreamWaitEvent(ty__CUstream s, ty__CUevent e, unsigned flags) {
  (void)flags;
  if (!e) return fail(E_INVALID_HANDLE, "cuStreamWaitEvent: NULL event");
  pthread_mutex_lock(&S.lock);
  if (e->mark && !e->mark->done) {
    sim_op *op = new_op(OP_WAIT);
    if (!op) {
      pthread_mutex_unlock(&S.lock);
      return TY__CUDA_ERROR_OUT_OF_MEMORY;
    }
    op->mark = e->mark;
    op->mark->refs++;
    enqueue_locked(s, op);
  }
  pthread_mutex_unlock(&S.lock);
  return TY__CUDA_SUCCESS;
}

static ty__CUresult sim_EventElapsedTime(float *ms, ty__CUevent a, ty__CUevent b) {
  if (!a || !b) return fail(E_INVALID_HANDLE, "cuEventElapsedTime: NULL event");
  if ((a->flags | b->flags) & TY__CU_EVENT_DISABLE_TIMING)
    return fail(E_INVALID_HANDLE, "cuEventElapsedTime: an event was created without timing");
  pthread_mutex_lock(&S.lock);
  ty__CUresult r = TY__CUDA_SUCCESS;
  if (!a->mark || !b->mark) r = fail(E_INVALID_HANDLE, "cuEventElapsedTime: an event was never recorded");
  else if (!a->mark->done || !b->mark->done) r = TY__CUDA_ERROR_NOT_READY;
  else *ms = (float)((b->mark->t - a->mark->t) * 1e3);
  pthread_mutex_unlock(&S.lock);
  return r;
}

/* ---- memory -------------------------------------------------------------------------- */

static sim_block *header(ty__CUdeviceptr p) { return (sim_block *)(uintptr_t)(p - SIM_ALIGN); }

/* Whether [p, p + n) lies in one live block of device d. Under the lock. */
static bool inside(const struct ty__CUctx_st *d, ty__CUdeviceptr p, size_t n) {
  for (const sim_block *b = d->blocks; b; b = b->next) {
    uint64_t lo = (uint64_t)(uintptr_t)b + SIM_ALIGN;
    if (p >= lo && p - lo <= b->bytes && n <= b->bytes - (p - lo)) return true;
  }
  return false;
}

static ty__CUresult check_dev(const char *what, const struct ty__CUctx_st *d, ty__CUdeviceptr p, size_t n) {
  if (!d) return fail(E_INVALID_CONTEXT, "%s: no current context", what);
  pthread_mutex_lock(&S.lock);
  bool ok = inside(d, p, n);
  pthread_mutex_unlock(&S.lock);
  if (ok) return TY__CUDA_SUCCESS;
  return fail(E_INVALID_VALUE, "%s: [0x%llx, +%zu) is not memory allocated on simulated GPU %d", what,
              (unsigned long long)p, n, d->ordinal);
}

static ty__CUresult sim_MemGetInfo(size_t *freeb, size_t *total) {
  if (!cur) return fail(E_INVALID_CONTEXT, "cuMemGetInfo: no current context");
  pthread_mutex_lock(&S.lock);
  *total = S.total;
  *freeb = S.total - cur->used;
  pthread_mutex_unlock(&S.lock);
  return TY__CUDA_SUCCESS;
}

static ty__CUresult sim_MemAlloc(ty__CUdeviceptr *p, size_t bytes) {
  *p = 0;
  if (!cur) return fail(E_INVALID_CONTEXT, "cuMemAlloc: no current context");
  if (bytes == 0) return fail(E_INVALID_VALUE, "cuMemAlloc: 0 bytes");
  size_t rounded = (bytes + SIM_ALIGN - 1) / SIM_ALIGN * SIM_ALIGN;
  pthread_mutex_lock(&S.lock);
  bool room = rounded <= S.total - cur->used;
  if (room) cur->used += rounded;
  size_t used = cur->used, total = S.total;
  pthread_mutex_unlock(&S.lock);
  if (!room) {
    char a[32], b[32], c[32];
    ty_format_bytes((double)bytes, a, sizeof a);
    ty_format_bytes((double)used, b, sizeof b);
    ty_format_bytes((double)total, c, sizeof c);
    return fail(TY__CUDA_ERROR_OUT_OF_MEMORY, "simulated GPU %d: %s asked, %s of %s in use (TYCHO_SIM_MEM)",
                cur->ordinal, a, b, c);
  }
  sim_block *b = aligned_alloc(SIM_ALIGN, SIM_ALIGN + rounded + SIM_ALIGN);
  if (!b) {
    pthread_mutex_lock(&S.lock);
    cur->used -= rounded;
    pthread_mutex_unlock(&S.lock);
    return fail(TY__CUDA_ERROR_OUT_OF_MEMORY, "simulated GPU %d: the host has no memory for %zu bytes",
                cur->ordinal, bytes);
  }
  memset((char *)b + SIM_ALIGN, 0xFF, rounded); /* poison: f64 NaN, integers -1 */
  memset((char *)b + SIM_ALIGN + rounded, SIM_RED, SIM_ALIGN);
  b->magic = SIM_MAGIC;
  b->bytes = rounded;
  b->dev = cur;
  b->prev = NULL;
  pthread_mutex_lock(&S.lock);
  b->next = cur->blocks;
  if (b->next) b->next->prev = b;
  cur->blocks = b;
  pthread_mutex_unlock(&S.lock);
  *p = (ty__CUdeviceptr)(uintptr_t)b + SIM_ALIGN;
  return TY__CUDA_SUCCESS;
}

/* Waits for the device's work, as cuMemFree does; checks the zone after
 * the block (CUDA_ERROR_ILLEGAL_ADDRESS, also on stderr, when written). */
static ty__CUresult sim_MemFree(ty__CUdeviceptr p) {
  if (!p) return TY__CUDA_SUCCESS;
  pthread_mutex_lock(&S.lock);
  sim_block *b = NULL;
  for (int d = 0; d < TY_MAX_GPUS && !b; d++)
    for (sim_block *x = S.dev[d].blocks; x; x = x->next)
      if (x == header(p)) {
        b = x;
        break;
      }
  if (!b || b->magic != SIM_MAGIC) {
    pthread_mutex_unlock(&S.lock);
    return fail(E_INVALID_VALUE, "cuMemFree: 0x%llx is not a block allocated on a simulated GPU",
                (unsigned long long)p);
  }
  wait_dev_idle(b->dev);
  if (b->prev) b->prev->next = b->next;
  else b->dev->blocks = b->next;
  if (b->next) b->next->prev = b->prev;
  b->dev->used -= b->bytes;
  pthread_mutex_unlock(&S.lock);
  const unsigned char *red = (const unsigned char *)b + SIM_ALIGN + b->bytes;
  size_t k = 0;
  while (k < SIM_ALIGN && red[k] == SIM_RED) k++;
  int r = TY__CUDA_SUCCESS;
  if (k < SIM_ALIGN) { /* said here too: a pool frees blocks without looking at the result */
    r = fail(E_ILLEGAL_ADDRESS, "simulated GPU %d: something wrote past the end of the block 0x%llx of %zu bytes",
             b->dev->ordinal, (unsigned long long)p, b->bytes);
    fprintf(stderr, "tycho: %s\n", detail);
  }
  memset((char *)b + SIM_ALIGN, 0xFF, b->bytes);
  b->magic = 0;
  free(b);
  return r;
}

static ty__CUresult sim_MemHostRegister(void *p, size_t bytes, unsigned flags) {
  (void)p, (void)bytes, (void)flags;
  return TY__CUDA_SUCCESS;
}
static ty__CUresult sim_MemHostUnregister(void *p) {
  (void)p;
  return TY__CUDA_SUCCESS;
}

static ty__CUresult copy_op(ty__CUstream s, void *dst, const void *src, size_t n) {
  if (n == 0) return TY__CUDA_SUCCESS;
  sim_op *op = new_op(OP_COPY);
  if (!op) return TY__CUDA_ERROR_OUT_OF_MEMORY;
  op->dst = dst;
  op->src = src;
  op->n = n;
  return enqueue(s, op);
}

static struct ty__CUctx_st *dev_of(ty__CUstream s) { return s ? s->dev : cur; }

/* From pageable host memory, as CUDA's: the source is copied to a staging
 * buffer before the call returns (the caller may write it at once); the
 * transfer to the device runs in stream order. */
static ty__CUresult sim_MemcpyHtoDAsync(ty__CUdeviceptr dst, const void *src, size_t n, ty__CUstream s) {
  ty__CUresult r = check_dev("cuMemcpyHtoDAsync", dev_of(s), dst, n);
  if (r || n == 0) return r;
  void *stage = malloc(n);
  sim_op *op = stage ? new_op(OP_COPY) : NULL;
  if (!op) {
    free(stage);
    return TY__CUDA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(stage, src, n);
  op->dst = (void *)(uintptr_t)dst;
  op->src = stage;
  op->n = n;
  op->params = stage; /* freed after the copy ran */
  return enqueue(s, op);
}

static ty__CUresult sim_MemcpyDtoHAsync(void *dst, ty__CUdeviceptr src, size_t n, ty__CUstream s) {
  ty__CUresult r = check_dev("cuMemcpyDtoHAsync", dev_of(s), src, n);
  return r ? r : copy_op(s, dst, (const void *)(uintptr_t)src, n);
}

static ty__CUresult sim_MemcpyDtoDAsync(ty__CUdeviceptr dst, ty__CUdeviceptr src, size_t n, ty__CUstream s) {
  ty__CUresult r = check_dev("cuMemcpyDtoDAsync (destination)", dev_of(s), dst, n);
  if (!r) r = check_dev("cuMemcpyDtoDAsync (source)", dev_of(s), src, n);
  return r ? r : copy_op(s, (void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
}

static ty__CUresult sim_MemcpyPeerAsync(ty__CUdeviceptr dst, ty__CUcontext dctx, ty__CUdeviceptr src,
                                        ty__CUcontext sctx, size_t n, ty__CUstream s) {
  ty__CUresult r = check_dev("cuMemcpyPeerAsync (destination)", dctx, dst, n);
  if (!r) r = check_dev("cuMemcpyPeerAsync (source)", sctx, src, n);
  return r ? r : copy_op(s, (void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
}

static ty__CUresult sim_MemsetD8Async(ty__CUdeviceptr dst, unsigned char v, size_t n, ty__CUstream s) {
  ty__CUresult r = check_dev("cuMemsetD8Async", dev_of(s), dst, n);
  if (r || n == 0) return r;
  sim_op *op = new_op(OP_SET);
  if (!op) return TY__CUDA_ERROR_OUT_OF_MEMORY;
  op->dst = (void *)(uintptr_t)dst;
  op->byte = v;
  op->n = n;
  return enqueue(s, op);
}

/* ---- devices and contexts ---------------------------------------------------------------- */

static const char *const err_names[][2] = {
    {"CUDA_SUCCESS", "no error"},
    {"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {"CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
};

static const char *err_name(ty__CUresult r, const char **text) {
  *text = NULL;
  if (r >= 0 && r < 4) {
    *text = err_names[r][1];
    return err_names[r][0];
  }
  switch (r) {
  case E_INVALID_IMAGE: *text = "device kernel image is invalid"; return "CUDA_ERROR_INVALID_IMAGE";
  case E_INVALID_CONTEXT: *text = "invalid device context"; return "CUDA_ERROR_INVALID_CONTEXT";
  case E_INVALID_SOURCE: *text = "device kernel source is invalid"; return "CUDA_ERROR_INVALID_SOURCE";
  case E_INVALID_HANDLE: *text = "invalid resource handle"; return "CUDA_ERROR_INVALID_HANDLE";
  case E_NOT_FOUND: *text = "named symbol not found"; return "CUDA_ERROR_NOT_FOUND";
  case E_ILLEGAL_ADDRESS: *text = "an illegal memory access was encountered"; return "CUDA_ERROR_ILLEGAL_ADDRESS";
  case TY__CUDA_ERROR_NO_DEVICE: *text = "no CUDA-capable device is detected"; return "CUDA_ERROR_NO_DEVICE";
  case TY__CUDA_ERROR_NOT_READY: *text = "device not ready"; return "CUDA_ERROR_NOT_READY";
  default: return NULL;
  }
}

static ty__CUresult sim_GetErrorName(ty__CUresult r, const char **s) {
  const char *text;
  *s = err_name(r, &text);
  return *s ? TY__CUDA_SUCCESS : E_INVALID_VALUE;
}

/* The detail of this thread's last error when it is the one asked about. */
static ty__CUresult sim_GetErrorString(ty__CUresult r, const char **s) {
  err_name(r, s);
  if (r == detail_code && detail[0]) *s = detail;
  return *s ? TY__CUDA_SUCCESS : E_INVALID_VALUE;
}

static ty__CUresult sim_Init(unsigned flags) { return flags ? E_INVALID_VALUE : TY__CUDA_SUCCESS; }
static ty__CUresult sim_DriverGetVersion(int *v) {
  *v = 13000; /* the driver API it mimics */
  return TY__CUDA_SUCCESS;
}

static ty__CUresult sim_DeviceGetCount(int *n) {
  pthread_mutex_lock(&S.lock);
  *n = S.ndev;
  pthread_mutex_unlock(&S.lock);
  return TY__CUDA_SUCCESS;
}

static bool valid_ordinal(int d) {
  pthread_mutex_lock(&S.lock);
  bool ok = d >= 0 && d < S.ndev;
  pthread_mutex_unlock(&S.lock);
  return ok;
}

static ty__CUresult sim_DeviceGet(ty__CUdevice *d, int ordinal) {
  if (!valid_ordinal(ordinal)) return fail(E_INVALID_VALUE, "cuDeviceGet: no simulated GPU %d", ordinal);
  *d = ordinal;
  return TY__CUDA_SUCCESS;
}

static ty__CUresult sim_DeviceGetName(char *name, int len, ty__CUdevice d) {
  if (!valid_ordinal(d)) return fail(E_INVALID_VALUE, "cuDeviceGetName: no simulated GPU %d", d);
  snprintf(name, (size_t)len, "tycho simulated GPU %d", d);
  return TY__CUDA_SUCCESS;
}

static ty__CUresult sim_DeviceGetAttribute(int *v, int attr, ty__CUdevice d) {
  if (!valid_ordinal(d)) return fail(E_INVALID_VALUE, "cuDeviceGetAttribute: no simulated GPU %d", d);
  switch (attr) {
  case TY__CU_ATTR_CC_MAJOR: *v = 9; break;
  case TY__CU_ATTR_CC_MINOR: *v = 0; break;
  case TY__CU_ATTR_SMS: *v = SIM_SMS; break;
  case TY__CU_ATTR_PCI_DOMAIN: *v = 0; break;
  case TY__CU_ATTR_PCI_BUS: *v = 0x40 + d; break; /* distinct, as real devices' */
  case TY__CU_ATTR_PCI_DEVICE: *v = 0; break;
  case TY__CU_ATTR_UNIFIED_ADDRESSING: *v = 1; break;
  default: return fail(E_INVALID_VALUE, "cuDeviceGetAttribute: attribute %d is not simulated", attr);
  }
  return TY__CUDA_SUCCESS;
}

static ty__CUresult sim_DeviceTotalMem(size_t *bytes, ty__CUdevice d) {
  if (!valid_ordinal(d)) return fail(E_INVALID_VALUE, "cuDeviceTotalMem: no simulated GPU %d", d);
  pthread_mutex_lock(&S.lock);
  *bytes = S.total;
  pthread_mutex_unlock(&S.lock);
  return TY__CUDA_SUCCESS;
}

static ty__CUresult sim_DevicePrimaryCtxRetain(ty__CUcontext *c, ty__CUdevice d) {
  if (!valid_ordinal(d)) return fail(E_INVALID_VALUE, "cuDevicePrimaryCtxRetain: no simulated GPU %d", d);
  pthread_mutex_lock(&S.lock);
  S.dev[d].retains++;
  pthread_mutex_unlock(&S.lock);
  *c = &S.dev[d];
  return TY__CUDA_SUCCESS;
}

static ty__CUresult sim_DevicePrimaryCtxRelease(ty__CUdevice d) {
  if (d < 0 || d >= TY_MAX_GPUS) return fail(E_INVALID_VALUE, "cuDevicePrimaryCtxRelease: device %d", d);
  pthread_mutex_lock(&S.lock);
  if (S.dev[d].retains > 0) S.dev[d].retains--;
  pthread_mutex_unlock(&S.lock);
  return TY__CUDA_SUCCESS;
}

static ty__CUresult sim_CtxSetCurrent(ty__CUcontext c) {
  cur = c;
  return TY__CUDA_SUCCESS;
}

/* ---- modules (compiled by gpu_sim_cc.c) ----------------------------------------------------- */

static ty__CUresult sim_ModuleLoadData(ty__CUmodule *m, const void *image) {
  *m = NULL;
  const unsigned char *u = image;
  const char *text = image;
  if (!image) return fail(E_INVALID_VALUE, "cuModuleLoadData: NULL image");
  if ((u[0] == 0x50 && u[1] == 0xED && u[2] == 0x55 && u[3] == 0xBA) || (u[0] == 0x7f && u[1] == 'E') ||
      !strncmp(text, ".version", 8) || strstr(text, "\n.version ") || strstr(text, "\n.target sm_"))
    return fail(E_INVALID_IMAGE, "a simulated GPU runs CUDA C source, not a fatbin, cubin or PTX");
  void *so;
  char why[sizeof detail];
  ty__CUresult r = ty__sim_compile(text, &so, why, sizeof why);
  if (r) return fail(r, "%s", why);
  const ty__sim_kernel *k = dlsym(so, "ty_sim_kernels");
  const int *nk = dlsym(so, "ty_sim_nkernels");
  struct ty__CUmod_st *mod = ty__calloc(1, sizeof *mod);
  if (!k || !nk || !mod) {
    free(mod);
    dlclose(so);
    return fail(E_INVALID_IMAGE, "a simulated module without its kernel table");
  }
  mod->so = so;
  mod->k = k;
  mod->nk = *nk;
  *m = mod;
  return TY__CUDA_SUCCESS;
}

/* Waits until no stream of any device runs (a kernel of the module may). */
static ty__CUresult sim_ModuleUnload(ty__CUmodule m) {
  if (!m) return fail(E_INVALID_HANDLE, "cuModuleUnload: NULL module");
  pthread_mutex_lock(&S.lock);
  for (int d = 0; d < TY_MAX_GPUS; d++) wait_dev_idle(&S.dev[d]);
  pthread_mutex_unlock(&S.lock);
  dlclose(m->so);
  free(m);
  return TY__CUDA_SUCCESS;
}

static ty__CUresult sim_ModuleGetFunction(ty__CUfunction *f, ty__CUmodule m, const char *name) {
  *f = NULL;
  if (!m) return fail(E_INVALID_HANDLE, "cuModuleGetFunction: NULL module");
  for (int i = 0; i < m->nk; i++)
    if (!strcmp(m->k[i].name, name)) {
      *f = (ty__CUfunction)(uintptr_t)&m->k[i]; /* an entry is the function (one field) */
      return TY__CUDA_SUCCESS;
    }
  return fail(E_NOT_FOUND,
              "no kernel %s in the module (a simulated GPU runs __global__ functions of one by-value "
              "parameter)",
              name);
}

static ty__CUresult sim_LaunchKernel(ty__CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                     unsigned by, unsigned bz, unsigned shmem, ty__CUstream s, void **params,
                                     void **extra) {
  (void)bx, (void)by, (void)bz, (void)shmem;
  if (!f) return fail(E_INVALID_HANDLE, "cuLaunchKernel: NULL function");
  if (extra || !params || !params[0])
    return fail(E_INVALID_VALUE, "cuLaunchKernel %s: the simulator takes kernelParams with one parameter",
                f->k.name);
  if (gx == 0 || gy == 0 || gz == 0) return fail(E_INVALID_VALUE, "cuLaunchKernel %s: empty grid", f->k.name);
  sim_op *op = new_op(OP_KERNEL);
  void *p = ty__malloc(f->k.size ? f->k.size : 1);
  if (!op || !p) {
    free(op);
    free(p);
    return TY__CUDA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(p, params[0], f->k.size); /* now, as CUDA copies parameters at the launch */
  op->fn = f;
  op->params = p;
  op->grid[0] = gx;
  op->grid[1] = gy;
  op->grid[2] = gz;
  return enqueue(s, op);
}

/* ---- loading ------------------------------------------------------------------------------- */

ty_status ty__sim_load(ty__cuda *api, int ndev, char *why, size_t whylen) {
  memset(api, 0, sizeof *api);
  if (ndev < 1 || ndev > TY_MAX_GPUS) {
    if (why) snprintf(why, whylen, "sim:%d: the simulator has 1..%d GPUs", ndev, TY_MAX_GPUS);
    return TY_EINVAL;
  }
  size_t total = SIM_DEFAULT_MEM;
  const char *v = getenv("TYCHO_SIM_MEM");
  if (v && *v && (ty_parse_size(v, &total) != TY_OK || total < ((size_t)1 << 20))) {
    if (why) snprintf(why, whylen, "TYCHO_SIM_MEM must be a size of at least 1MiB such as 4GiB, got '%s'", v);
    return TY_EINVAL;
  }
  pthread_mutex_lock(&S.lock);
  if (S.refs++ == 0) {
    for (int d = 0; d < TY_MAX_GPUS; d++) S.dev[d].ordinal = d;
    S.total = total;
    const char *lz = getenv("TYCHO_SIM_LAZY");
    S.lazy = lz && *lz && strcmp(lz, "0") != 0;
  }
  if (ndev > S.ndev) S.ndev = ndev; /* devices other tables use stay */
  pthread_mutex_unlock(&S.lock);
  snprintf(api->path, sizeof api->path, "sim");
  api->sim = true;
  api->Init = sim_Init;
  api->DriverGetVersion = sim_DriverGetVersion;
  api->GetErrorName = sim_GetErrorName;
  api->GetErrorString = sim_GetErrorString;
  api->DeviceGetCount = sim_DeviceGetCount;
  api->DeviceGet = sim_DeviceGet;
  api->DeviceGetName = sim_DeviceGetName;
  api->DeviceGetAttribute = sim_DeviceGetAttribute;
  api->DeviceTotalMem = sim_DeviceTotalMem;
  api->DevicePrimaryCtxRetain = sim_DevicePrimaryCtxRetain;
  api->DevicePrimaryCtxRelease = sim_DevicePrimaryCtxRelease;
  api->CtxSetCurrent = sim_CtxSetCurrent;
  api->CtxSynchronize = sim_CtxSynchronize;
  api->MemGetInfo = sim_MemGetInfo;
  api->MemAlloc = sim_MemAlloc;
  api->MemFree = sim_MemFree;
  api->MemHostRegister = sim_MemHostRegister;
  api->MemHostUnregister = sim_MemHostUnregister;
  api->MemcpyHtoDAsync = sim_MemcpyHtoDAsync;
  api->MemcpyDtoHAsync = sim_MemcpyDtoHAsync;
  api->MemcpyDtoDAsync = sim_MemcpyDtoDAsync;
  api->MemcpyPeerAsync = sim_MemcpyPeerAsync;
  api->MemsetD8Async = sim_MemsetD8Async;
  api->StreamCreate = sim_StreamCreate;
  api->StreamDestroy = sim_StreamDestroy;
  api->StreamSynchronize = sim_StreamSynchronize;
  api->StreamWaitEvent = sim_StreamWaitEvent;
  api->EventCreate = sim_EventCreate;
  api->EventDestroy = sim_EventDestroy;
  api->EventRecord = sim_EventRecord;
  api->EventQuery = sim_EventQuery;
  api->EventSynchronize = sim_EventSynchronize;
  api->EventElapsedTime = sim_EventElapsedTime;
  api->ModuleLoadData = sim_ModuleLoadData;
  api->ModuleUnload = sim_ModuleUnload;
  api->ModuleGetFunction = sim_ModuleGetFunction;
  api->LaunchKernel = sim_LaunchKernel;
  return TY_OK;
}

void ty__sim_unload(void) {
  pthread_mutex_lock(&S.lock);
  if (S.refs > 0 && --S.refs == 0) S.ndev = 0;
  pthread_mutex_unlock(&S.lock);
}

/* ---- cuBLAS on the CPU ---------------------------------------------------------------------- */

typedef struct sim_blas {
  ty__CUstream stream;
} sim_blas;

/* One column-major gemm as cuBLAS defines it, the k terms added in order. */
typedef struct gemm_args {
  bool f64;
  int ta, tb, m, n, k, lda, ldb, ldc;
  double alpha, beta;
  const void *A, *B;
  void *C;
} gemm_args;

#define GEMM(T)                                                                                   \
  do {                                                                                            \
    const T *A = a->A, *B = a->B;                                                                 \
    T *C = a->C, alpha = (T)a->alpha, beta = (T)a->beta;                                          \
    for (int j = 0; j < a->n; j++)                                                                \
      for (int i = 0; i < a->m; i++) {                                                            \
        T s = 0;                                                                                  \
        for (int p = 0; p < a->k; p++) {                                                          \
          T x = a->ta ? A[p + (size_t)i * a->lda] : A[i + (size_t)p * a->lda];                    \
          T y = a->tb ? B[j + (size_t)p * a->ldb] : B[p + (size_t)j * a->ldb];                    \
          s += x * y;                                                                             \
        }                                                                                         \
        T *c = &C[i + (size_t)j * a->ldc];                                                        \
        *c = beta != 0 ? alpha * s + beta * *c : alpha * s; /* beta 0: C is not read */           \
      }                                                                                           \
  } while (0)

static void gemm_run(void *arg) {
  const gemm_args *a = arg;
  if (a->f64) GEMM(double);
  else GEMM(float);
}

static int blas_create(void **h) {
  *h = ty__calloc(1, sizeof(sim_blas));
  return *h ? 0 : 3; /* CUBLAS_STATUS_ALLOC_FAILED */
}
static int blas_destroy(void *h) {
  free(h);
  return 0;
}
static int blas_set_stream(void *h, ty__CUstream s) {
  ((sim_blas *)h)->stream = s;
  return 0;
}

static int gemm_queue(void *h, bool f64, int ta, int tb, int m, int n, int k, double alpha, const void *A,
                      int lda, const void *B, int ldb, double beta, void *C, int ldc) {
  gemm_args *a = ty__malloc(sizeof *a);
  sim_op *op = new_op(OP_HOST);
  if (!a || !op) {
    free(a);
    free(op);
    return 3;
  }
  *a = (gemm_args){f64, ta, tb, m, n, k, lda, ldb, ldc, alpha, beta, A, B, C};
  op->host = gemm_run;
  op->params = a;
  enqueue(((sim_blas *)h)->stream, op);
  return 0;
}

static int blas_dgemm(void *h, int ta, int tb, int m, int n, int k, const double *alpha, const double *A,
                      int lda, const double *B, int ldb, const double *beta, double *C, int ldc) {
  return gemm_queue(h, true, ta, tb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc);
}

static int blas_sgemm(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *A,
                      int lda, const float *B, int ldb, const float *beta, float *C, int ldc) {
  return gemm_queue(h, false, ta, tb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc);
}

void ty__blas_sim(ty__blas *b) {
  memset(b, 0, sizeof *b);
  snprintf(b->path, sizeof b->path, "sim");
  b->Create = blas_create;
  b->Destroy = blas_destroy;
  b->SetStream = blas_set_stream;
  b->Dgemm = blas_dgemm;
  b->Sgemm = blas_sgemm;
}
