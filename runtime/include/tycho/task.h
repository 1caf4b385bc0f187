/*
 * tycho/task.h — tasks, their point-task context, and launches.
 *
 * A task is a named computation with a CPU variant (and optionally OpenMP and
 * GPU variants) that runs one *piece* of a launch. A launch names a task, its store arguments (each with a privilege
 * and a projection) and a packed scalar buffer, over a launch domain (a shape).
 * The runtime splits the domain into pieces and runs the variant once per
 * piece, on worker threads, possibly at the same time.
 *
 * Built-in operations (ty_binary, ty_reduce, ...) are tasks registered the same
 * way as a host application's: nothing in the core treats them specially.
 */
#ifndef TYCHO_TASK_H
#define TYCHO_TASK_H

#include "tycho/tycho.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ty_privilege {
  TY_PRIV_IN = 0,   /* read only */
  TY_PRIV_OUT,      /* write only: every element of the piece is written */
  TY_PRIV_INOUT,    /* read and write the piece's elements */
  TY_PRIV_REDUCE    /* each piece gets a private tile set to the identity of
                       `redop`; the runtime combines them into the store */
} ty_privilege;

typedef enum ty_redop {
  TY_REDOP_NONE = 0,
  TY_REDOP_SUM,
  TY_REDOP_PROD,
  TY_REDOP_MIN,
  TY_REDOP_MAX
} ty_redop;

typedef enum ty_projection {
  /* The store (usually a view made for the launch) has the launch domain's
   * shape; a piece sees the elements of its own box. A dim with stride 0 on
   * an OUT/INOUT argument is never split (pieces would write one element). */
  TY_PROJ_ALIGNED = 0,
  /* Every piece sees the whole store (read-only: TY_PRIV_IN only). */
  TY_PROJ_WHOLE
} ty_projection;

/* What a point task sees of one store argument. */
typedef struct ty_tile {
  char *data;                     /* address of the element at index lo (NULL if empty) */
  ty_dtype dtype;
  int ndim;
  int64_t shape[TY_MAX_RANK];     /* extent of this tile */
  int64_t strides[TY_MAX_RANK];   /* in elements; 0 on broadcast dims */
  int64_t lo[TY_MAX_RANK];        /* global index of the tile's first element */
  int64_t gshape[TY_MAX_RANK];    /* shape of the whole store */
} ty_tile;

typedef struct ty_task ty_task;
struct ty_reach; /* the runtime's record of what a piece's failure reached */

typedef struct ty_task_ctx {
  ty_runtime *rt;
  const ty_task *task;
  const char *task_name;
  const void *task_data;          /* ty_task_desc.data */
  int piece;                      /* 0 .. pieces-1 */
  int pieces;
  int threads;                    /* threads this piece may use (omp variants; else 1) */
  int worker;                     /* worker running this piece, 0 .. cpus-1; pieces that run
                                     at the same time have different workers (so per-worker
                                     state, e.g. an interpreter, needs no lock) */
  int ndim;                       /* launch domain */
  int64_t lo[TY_MAX_RANK];        /* this piece's box, 0-based, hi exclusive */
  int64_t hi[TY_MAX_RANK];
  int nargs;
  ty_tile *args;                  /* one per store argument, in launch order */
  const void *scalars;            /* the launch's packed scalar bytes (8-byte aligned) */
  size_t scalar_bytes;
  char *errbuf;                   /* set through ty_ctx_fail */
  size_t errcap;
  /* gpu variants only (ty_task_desc.gpu): the GPU the piece runs on (0-based;
   * -1 on the CPU) and the CUstream its work must be queued on, asynchronously
   * (the runtime orders the stream after the copies the piece needs and waits
   * for it before the host reads what the piece wrote) */
  int device;
  void *stream;
  struct ty_reach *reach; /* the runtime's (ty_ctx_fail_reached); NULL where not tracked */
} ty_task_ctx;

/* A variant returns 0 on success; on failure it calls ty_ctx_fail (or returns
 * a negative ty_status) and the launch fails with TY_ETASK and that message. */
typedef int (*ty_variant_fn)(ty_task_ctx *ctx);

/* Records a failure message (printf-style); returns TY_ETASK. */
int ty_ctx_fail(ty_task_ctx *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* After a failure: it reached only the written arguments in `args` (bit i:
 * argument i); the others were written completely and keep their values
 * (by default a failure reaches every written argument). The task "fused"
 * says so when a sub-operation fails, so that only the sub-operations that
 * depend on it lose their outputs (docs/fusion.md, "Failures"). May be
 * called several times (the union is kept); a no-op where ctx->reach is NULL. */
void ty_ctx_fail_reached(ty_task_ctx *ctx, uint64_t args);

/* Task flags. */
enum {
  TY_TASK_POINTWISE = 1u << 0, /* element i of each output depends only on element i of
                                  each aligned input: the task may be fused */
  TY_TASK_NOFUSE = 1u << 1     /* never fuse this task */
};

typedef struct ty_task_desc {
  const char *name;     /* unique, < TY_MAX_NAME bytes */
  ty_variant_fn cpu;    /* runs one piece on a CPU worker */
  ty_variant_fn omp;    /* optional: runs one piece on an OpenMP processor, a group of
                           ctx->threads threads (use `#pragma omp parallel
                           num_threads(ctx->threads)` inside) */
  const void *data;     /* handed to every piece as ctx->task_data; must outlive the runtime */
  ty_policy traits;     /* the task's own policy (e.g. mode = all for heavy work) */
  unsigned flags;       /* TY_TASK_* */
  const char *signature;        /* e.g. "in, out, scalar:f64": lets a binding call the task by
                                   name (copied; NULL: none). The core only keeps it. */
  void (*release)(void *data);  /* called with `data` when the runtime is freed (may be NULL) */
  /* optional: the variant for a GPU. It receives the same context as the cpu
   * variant with every ctx->args[k].data a device pointer (strides in
   * elements, as on the CPU) on GPU ctx->device, and queues its kernels on
   * ctx->stream without waiting. Used when the launch's target places it on
   * a GPU (docs/gpu.md, "Execution"); its pieces are spread over the GPUs
   * like the built-ins' (one piece when an argument is REDUCE). The cpu
   * variant still runs it where the target is the CPU. Last in the struct so
   * that positional initialisers written before it existed keep working. */
  ty_variant_fn gpu;
} ty_task_desc;

ty_status ty_task_register(ty_runtime *rt, const ty_task_desc *desc, const ty_task **out);
const ty_task *ty_task_find(const ty_runtime *rt, const char *name); /* NULL if none */
const char *ty_task_name(const ty_task *t);
const char *ty_task_signature(const ty_task *t); /* NULL when none */
const void *ty_task_data(const ty_task *t);
unsigned ty_task_flags(const ty_task *t);
const ty_policy *ty_task_traits(const ty_task *t);
ty_variant_fn ty_task_gpu(const ty_task *t); /* its gpu variant, NULL when none */
/* The i-th registered task (0-based) or NULL: to list them. */
const ty_task *ty_task_at(const ty_runtime *rt, int i);

typedef struct ty_arg {
  ty_store *store;
  ty_privilege priv;
  ty_redop redop;       /* for TY_PRIV_REDUCE */
  ty_projection proj;
} ty_arg;

typedef struct ty_launch_desc {
  const ty_task *task;
  int ndim;                        /* launch domain */
  const int64_t *domain;
  int nargs;                       /* <= TY_MAX_ARGS */
  const ty_arg *args;
  const void *scalars;             /* copied; <= TY_MAX_SCALAR_BYTES */
  size_t scalar_bytes;
  int max_pieces;                  /* 0: no limit; 1: one piece */
  uint32_t nosplit;                /* bit d set: never split domain dim d */
  const ty_policy *options;        /* per-launch policy (the most specific level), or NULL */
  const char *origin;              /* where the launch was made ("run.lua:12"), named by the
                                      error if it fails; NULL: none. Copied (TY_MAX_ORIGIN) */
} ty_launch_desc;

/* Append a launch to the window (flushing first if the window is full). The
 * launch holds a reference on each store until it has run. Checks: ALIGNED
 * stores have the domain's shape, WHOLE stores are TY_PRIV_IN, REDUCE has a
 * redop, counts within limits. Arguments that share memory: a read-only
 * argument overlapping a written one through another view (or read WHOLE) is
 * read from a copy made first, so pieces never see each other's writes; two
 * written arguments overlapping through different views are TY_EINVAL. The
 * same view passed ALIGNED twice is left as it is. */
ty_status ty_launch(ty_runtime *rt, const ty_launch_desc *desc);

/* ---- policy levels --------------------------------------------------------------- */

#define TY_MAX_SCOPES 64
#define TY_MAX_ORIGIN 96 /* bytes of an origin text, including the NUL */

/* Open a policy scope (innermost wins, field by field over outer scopes):
 * every launch appended until the matching pop resolves its axes through
 * it. `origin` says where it was opened ("scope at script.lua:12"). Scopes
 * nest up to TY_MAX_SCOPES. */
ty_status ty_scope_push(ty_runtime *rt, const ty_policy *p, const char *origin);
/* Close the innermost scope (TY_EINVAL when none is open). */
ty_status ty_scope_pop(ty_runtime *rt);
int ty_scope_depth(const ty_runtime *rt);

/* Launch options for every launch appended until the next call (NULL clears
 * them): the "launch option" level, for bindings whose built-in functions
 * take an options table. A ty_launch_desc's own options win over these. */
ty_status ty_launch_options(ty_runtime *rt, const ty_policy *p);

/* A store hint: launches with an aligned argument on this store (or on a
 * store computed from it by such a launch) take these axes unless the launch
 * or its task says otherwise. A hint with set == 0 removes it. */
ty_status ty_store_hint(ty_runtime *rt, ty_store *s, const ty_policy *p);

/* ---- explain -------------------------------------------------------------------- */

enum { TY_AXIS_MODE = 0, TY_AXIS_OVERDECOMPOSE, TY_AXIS_MIN_CHUNK, TY_AXIS_FAVOR, TY_AXIS_FUSE,
       TY_AXIS_FASTMATH, TY_AXIS_MEMORY, TY_AXIS_STREAM, TY_AXIS_TARGET, TY_NAXES };
const char *ty_axis_name(int axis); /* "mode", "overdecompose", ... */

/* The figures of one flush: how its window was cut into waves and what the
 * allocator did while it ran. ty_last_flush_stats gives the last one, every
 * explain entry the one its launch ran in. */
typedef struct ty_flush_stats {
  int launches;           /* launches run (after fusion) */
  int waves;
  int critical_path;
  int widest;             /* launches in the widest wave */
  int concurrent;         /* launches that ran in a wave of two or more */
  int64_t peak_transient; /* simulated peak of transient bytes */
  const char *favor;
  /* a streamed scope's flush (0 otherwise): its budget, the groups and pieces
   * it ran in, the peak of transient bytes allocated at once (within the
   * budget), and the bytes of the stores it wrote that outlive it */
  int64_t stream_budget;
  int stream_groups;
  int stream_pieces;
  int64_t stream_peak;
  int64_t stream_outputs;
  /* which flush (ty_stats.flushes when it ran: 1 is the first) and the host
   * allocator from its start (the flush hook's releases included) to its
   * end: the highest bytes live at once, bytes allocated and freed, and bytes
   * live at its end (live at its start + allocated - freed) */
  uint64_t flush;
  uint64_t bytes_peak;
  uint64_t bytes_allocated;
  uint64_t bytes_freed;
  uint64_t bytes_live;
} ty_flush_stats;

/* What the runtime decided for one launch, and why. */
typedef struct ty_explain_entry {
  uint64_t seq;                          /* launch number */
  char task[TY_MAX_NAME];
  int ndim;
  int64_t shape[TY_MAX_RANK];            /* launch domain */
  const char *target;                    /* "cpu", "omp" or "gpu" */
  ty_policy policy;                      /* every axis resolved */
  char from[TY_NAXES][TY_MAX_ORIGIN];    /* which level decided each axis */
  int pieces;
  int tiles[TY_MAX_RANK];                /* pieces per dim (the tiling) */
  int processor;                         /* one-piece launches: the processor it ran on; else -1 */
  int wave;                              /* the wave of its flush it ran in (0-based) */
  int waves;                             /* waves of that flush */
  char why[192];                         /* how the piece count came about */
  char partition[TY_MAX_ORIGIN];         /* "new" or "key partition of store #7" */
  int fused;                             /* launches fused into this one (0: not fused) */
  char fused_ops[192];                   /* "mul add exp ..." when fused */
  char fuse_end[TY_MAX_ORIGIN];          /* why the fused run (or fusion) stopped here */
  char stream[320];                      /* streamed scopes: pieces, transient bytes, budget */
  char ranks[128];                       /* split among ranks: this rank's pieces, bytes received */
  ty_flush_stats flush;                  /* the figures of the flush it ran in */
  int gpus;                              /* GPUs its pieces ran on (target "gpu"); 0: none */
  char place[192];                       /* why it ran where it ran, when a GPU was considered */
  uint64_t h2d, d2h, d2d;                /* bytes copied for it: to a GPU, to the host, between GPUs */
} ty_explain_entry;

#define TY_EXPLAIN_KEEP 4096 /* launches remembered */

/* Flushes, then copies the last min(n, remembered) launches, oldest first
 * (by flush, then launch number), into out (an array of n entries); returns
 * how many. */
int ty_explain(ty_runtime *rt, int n, ty_explain_entry *out);
/* The same as a text table (malloc'd; free() it): one launch per line (two
 * to four with its policy, fusion and streaming), and after the last launch
 * of each flush a line of that flush's figures:
 *   flush 3 (favor max-concurrency): 9 launches in 4 waves, critical path 4,
 *   widest 3, 6 concurrent (67%), transient peak 23.4 KiB (simulated);
 *   allocator peak 31.3 KiB, allocated 31.3 KiB, freed 23.4 KiB, live 7.8 KiB
 * (one line in the output). Entries are ordered by flush, then launch. */
ty_status ty_explain_text(ty_runtime *rt, int n, char **out);

/* ---- trace ---------------------------------------------------------------------- */

/* Record every point task, flush and wave from now on; ty_trace_stop (or
 * destroying the runtime) writes a Chrome trace-event JSON file at json_path
 * (open it in Perfetto or chrome://tracing) and, when svg_path is not NULL,
 * an SVG timeline. Files are written atomically. */
ty_status ty_trace_start(ty_runtime *rt, const char *json_path, const char *svg_path);
ty_status ty_trace_stop(ty_runtime *rt);

/* The figures of the last flush and of the whole run, and a rendering of them. */
void ty_last_flush_stats(const ty_runtime *rt, ty_flush_stats *out);
/* format: "text", "json" or "csv"; *out is malloc'd. */
ty_status ty_stats_format(ty_runtime *rt, const char *format, char **out);

#ifdef __cplusplus
}
#endif
#endif /* TYCHO_TASK_H */
