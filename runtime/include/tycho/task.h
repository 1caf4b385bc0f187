/*
 * tycho/task.h — tasks, their point-task context, and launches.
 *
 * A task is a named computation with a CPU variant that runs one *piece* of a
 * launch. A launch names a task, its store arguments (each with a privilege
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

typedef struct ty_task_ctx {
  ty_runtime *rt;
  const ty_task *task;
  const char *task_name;
  const void *task_data;          /* ty_task_desc.data */
  int piece;                      /* 0 .. pieces-1 */
  int pieces;
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

/* ---- policy ------------------------------------------------------------------
 * How launches are split, scheduled and computed (DESIGN.md section 3). A
 * ty_policy sets some axes (bits in `set`) and leaves the others to the next
 * level: launch option > task trait > store hint > innermost scope > ... >
 * outer scope > global (command line > environment > built-in default). */
typedef enum ty_mode {
  TY_MODE_AUTO = 0, /* pieces grow with bytes: clamp(ceil(bytes/min_chunk), 1, procs*overdecompose) */
  TY_MODE_ALL,      /* every processor, whatever the size */
  TY_MODE_SINGLE,   /* one piece */
  TY_MODE_TASK      /* not split; independent launches go to different processors */
} ty_mode;

typedef enum ty_favor {
  TY_FAVOR_MIN_PEAK = 0, /* min-peak-memory (default) */
  TY_FAVOR_DEBUG,
  TY_FAVOR_MAX_CONCURRENCY
} ty_favor;

enum {
  TY_POL_MODE = 1u << 0,
  TY_POL_OVERDECOMPOSE = 1u << 1,
  TY_POL_MIN_CHUNK = 1u << 2,
  TY_POL_FAVOR = 1u << 3,
  TY_POL_FUSE = 1u << 4,
  TY_POL_FASTMATH = 1u << 5,
  TY_POL_MEMORY = 1u << 6,
  TY_POL_STREAM = 1u << 7
};

typedef struct ty_policy {
  unsigned set;          /* TY_POL_* bits of the fields below that this level sets */
  ty_mode mode;
  int overdecompose;     /* pieces per processor, >= 1 */
  int64_t min_chunk;     /* bytes per piece in auto mode, >= 1 */
  ty_favor favor;
  bool fuse;
  bool fastmath;
  size_t memory;         /* streaming budget in bytes */
  bool stream_relaxed;   /* false: strict */
} ty_policy;

const char *ty_mode_name(ty_mode m);     /* "auto" "all" "single" "task" */
ty_status ty_mode_parse(const char *s, ty_mode *out);
const char *ty_favor_name(ty_favor f);   /* "min-peak-memory" "debug" "max-concurrency" */
ty_status ty_favor_parse(const char *s, ty_favor *out);

/* Task flags. */
enum {
  TY_TASK_POINTWISE = 1u << 0, /* element i of each output depends only on element i of
                                  each aligned input: the task may be fused */
  TY_TASK_NOFUSE = 1u << 1     /* never fuse this task */
};

typedef struct ty_task_desc {
  const char *name;     /* unique, < TY_MAX_NAME bytes */
  ty_variant_fn cpu;    /* runs one piece on a CPU worker */
  const void *data;     /* handed to every piece as ctx->task_data; must outlive the runtime */
  ty_policy traits;     /* the task's own policy (e.g. mode = all for heavy work) */
  unsigned flags;       /* TY_TASK_* */
} ty_task_desc;

ty_status ty_task_register(ty_runtime *rt, const ty_task_desc *desc, const ty_task **out);
const ty_task *ty_task_find(const ty_runtime *rt, const char *name); /* NULL if none */
const char *ty_task_name(const ty_task *t);

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
} ty_launch_desc;

/* Append a launch to the window (flushing first if the window is full). The
 * launch holds a reference on each store until it has run. Checks: ALIGNED
 * stores have the domain's shape, WHOLE stores are TY_PRIV_IN, REDUCE has a
 * redop, counts within limits. */
ty_status ty_launch(ty_runtime *rt, const ty_launch_desc *desc);

#ifdef __cplusplus
}
#endif
#endif /* TYCHO_TASK_H */
