/*
 * tycho.h — the public C API of the tycho runtime.
 *
 * A runtime (`ty_runtime`) owns processors, the host memory budget, the task
 * registry and the window of deferred launches. Stores are n-d arrays that may
 * be views of shared storage. Operations on stores do not run at once: they
 * append launches to the window, which is flushed when full, when a value is
 * read (ty_store_read, ty_item, ty_save_npy, ty_store_format) or by ty_flush.
 *
 * Conventions kept by every function here:
 *  - Functions return a ty_status; TY_OK is 0 and every error is negative. On
 *    error the runtime keeps a message (ty_errmsg) and stays usable; nothing
 *    aborts, exits or longjmps.
 *  - Indices and axes are 0-based here (the Lua binding converts its 1-based
 *    conventions). Shapes are int64_t; a rank is at most TY_MAX_RANK.
 *  - A function that returns a store through `ty_store **out` hands the caller
 *    one reference; release it with ty_store_release.
 *  - One thread drives a runtime at a time (the one that created it); the
 *    runtime runs point tasks on its own worker threads.
 */
#ifndef TYCHO_H
#define TYCHO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TY_VERSION "0.1.0"
#define TY_MAX_RANK 16 /* dimensions of a store */
#define TY_MAX_ARGS 64 /* store arguments of one launch */
#define TY_MAX_SCALAR_BYTES 4096 /* packed scalar bytes of one launch */
#define TY_MAX_NAME 64 /* bytes of a task name, including the NUL */
#define TY_MAX_WINDOW 65536 /* largest window size */

typedef enum ty_status {
  TY_OK = 0,
  TY_EINVAL = -1,    /* a bad argument */
  TY_ENOMEM = -2,    /* out of memory or over the memory budget */
  TY_ERANGE = -3,    /* an index or size out of range, or an overflow */
  TY_ESHAPE = -4,    /* shapes that do not broadcast or do not match */
  TY_EDTYPE = -5,    /* a dtype the operation does not support */
  TY_EIO = -6,       /* a file could not be read or written */
  TY_ETASK = -7,     /* a task body failed */
  TY_ELIMIT = -8,    /* a documented limit was exceeded */
  TY_EINTR = -9,     /* interrupted (ty_interrupt) */
  TY_ENOTFOUND = -10 /* no such task, file or name */
} ty_status;

const char *ty_status_name(ty_status s); /* "TY_EINVAL", ... */

/* ---- dtypes --------------------------------------------------------------- */

typedef enum ty_dtype {
  TY_F64 = 0,
  TY_F32,
  TY_I64,
  TY_I32,
  TY_U8,
  TY_BOOL,
  TY_I8, /* the five below came later: appended so the values above stay */
  TY_I16,
  TY_U16,
  TY_U32,
  TY_U64,
  TY_NDTYPES
} ty_dtype;

const char *ty_dtype_name(ty_dtype t); /* "f64", ... ; "?" when out of range */
size_t ty_dtype_size(ty_dtype t);
bool ty_dtype_is_float(ty_dtype t);
bool ty_dtype_is_int(ty_dtype t);      /* i8 ... i64, u8 ... u64 (not bool) */
bool ty_dtype_is_unsigned(ty_dtype t); /* u8 u16 u32 u64 */
/* The smallest and largest value of an integer dtype or bool (0 and 1); u64's
 * largest, 2^64 - 1, is why *hi is unsigned. Floats give 0 and 0. */
void ty_dtype_limits(ty_dtype t, int64_t *lo, uint64_t *hi);
/* Accepts "f64" "float64" "double" "f32" "float32" "float" "i64" "int64"
 * "i32" "int32" "i16" "int16" "i8" "int8" "u64" "uint64" "u32" "uint32"
 * "u16" "uint16" "u8" "uint8" "bool". */
ty_status ty_dtype_parse(const char *name, ty_dtype *out);
/* numpy's result_type for two arrays of these dtypes (see docs/dtypes.md). */
ty_dtype ty_dtype_promote(ty_dtype a, ty_dtype b);
/* The dtype of a float function (sqrt, sin, arctan2, ...) of t: floats keep
 * theirs, integers of 16 bits or fewer and bool give f32 (numpy: f16 for
 * 8 bits and bool, which tycho lacks), wider integers f64. */
ty_dtype ty_dtype_float_of(ty_dtype t);

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

/* The `target` axis: which processors a launch runs on. */
typedef enum ty_target {
  TY_TARGET_AUTO = 0, /* a GPU when one is in use, the launch has a GPU kernel and it is
                         large (1 MiB) or its data is already there; else the CPU */
  TY_TARGET_CPU,
  TY_TARGET_GPU       /* a GPU whenever the launch has a GPU kernel */
} ty_target;

enum {
  TY_POL_MODE = 1u << 0,
  TY_POL_OVERDECOMPOSE = 1u << 1,
  TY_POL_MIN_CHUNK = 1u << 2,
  TY_POL_FAVOR = 1u << 3,
  TY_POL_FUSE = 1u << 4,
  TY_POL_FASTMATH = 1u << 5,
  TY_POL_MEMORY = 1u << 6,
  TY_POL_STREAM = 1u << 7,
  TY_POL_TARGET = 1u << 8
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
  ty_target target;      /* where launches run: auto (by size and data), cpu, gpu */
} ty_policy;

const char *ty_mode_name(ty_mode m);     /* "auto" "all" "single" "task" */
ty_status ty_mode_parse(const char *s, ty_mode *out);
const char *ty_target_name(ty_target t);  /* "auto" "cpu" "gpu" */
ty_status ty_target_parse(const char *s, ty_target *out);
const char *ty_favor_name(ty_favor f);   /* "min-peak-memory" "debug" "max-concurrency" */
ty_status ty_favor_parse(const char *s, ty_favor *out);

typedef struct ty_runtime ty_runtime;
typedef struct ty_store ty_store;

/* ---- the runtime ------------------------------------------------------------ */

/* ---- GPUs ------------------------------------------------------------------ */
#define TY_GPU_API 1
#define TY_MAX_GPUS 16

/* One GPU as discovered at start. */
typedef struct ty_gpu_device {
  int ordinal;            /* CUDA device number */
  char name[128];         /* "NVIDIA H200" */
  int cc_major, cc_minor; /* compute capability (9.0 for Hopper) */
  int sms;                /* streaming multiprocessors */
  size_t total_mem;       /* bytes of device memory */
  size_t free_mem;        /* bytes free when discovered */
  size_t fbmem;           /* the budget of tycho's pool on it (--fbmem) */
  int pci_domain, pci_bus, pci_device;
} ty_gpu_device;

/* Simulated GPUs (docs/gpu.md): `gpus` = TY_GPUS_SIM | N asks for N GPUs
 * simulated on the CPU (1 <= N <= TY_MAX_GPUS), to run the GPU code path
 * on machines without one. */
#define TY_GPUS_SIM 0x10000

/* "all" (every device found: the default), "none" or "0" (CPU only), a
 * positive count N (exactly N: the runtime fails to start when fewer exist),
 * or "sim:N" (N simulated GPUs). *out: 0 all, -1 none, N, TY_GPUS_SIM | N.
 * TY_EINVAL with a message in err otherwise. */
ty_status ty_gpus_parse(const char *text, int *out, char *err, size_t errlen);
/* Whether a runtime asking for `gpus` GPUs (as ty_gpus_parse gives it) with
 * pool budget `fbmem` (0: default) can start: TY_EINVAL with the message a
 * shell prints ("--gpus 2: only 1 GPU was found (0: NVIDIA H200, 139.8 GiB)").
 * ty_runtime_create cannot return a message, so a shell calls this first. */
ty_status ty_gpus_check(int gpus, size_t fbmem, char *err, size_t errlen);

typedef struct ty_config {
  int cpus;       /* CPU processors; 0: the number of cores. May exceed the cores. */
  int omps;       /* OpenMP processors (groups of ompthreads threads); 0: none */
  int ompthreads; /* threads per OpenMP processor; 0: cores / omps */
  size_t sysmem;  /* host store budget in bytes; 0: 80% of physical memory */
  int window;     /* launches deferred before a flush; 0: the default (64) */
  int gpus;       /* GPUs: 0 every device found (none without a driver), N > 0 exactly N
                     (creation fails when fewer exist), -1 none, TY_GPUS_SIM | N: N
                     simulated GPUs. --gpus / TYCHO_GPUS */
  size_t fbmem;   /* device pool budget per GPU; 0: 90% of its free memory. --fbmem /
                     TYCHO_FBMEM */
  ty_policy policy;    /* the global level of every policy axis (unset: built-in default) */
  unsigned policy_cli; /* TY_POL_* bits of `policy` that came from a command line
                          (explain says "global --parallel" rather than "TYCHO_PARALLEL") */
  bool explain;        /* print what was decided for each launch to stderr as it runs
                          (tycho --explain, TYCHO_EXPLAIN=1) */
  bool timing;         /* time each flush's phases for ty_stats's *_ns figures (tycho
                          --stats, TYCHO_TIMING=1, ty_set_timing) */
  const char *isa;     /* a ceiling on the CPU kernels' instruction set (ty_isa): "auto"
                          (the CPU's best), "avx512", "avx2", "baseline"; NULL: no
                          preference (TYCHO_ISA, else the best). --isa / TYCHO_ISA */
} ty_config;

/* Zero the config, then apply the environment: TYCHO_CPUS, TYCHO_OMPS,
 * TYCHO_OMPTHREADS, TYCHO_SYSMEM, TYCHO_WINDOW, and the policy axes
 * TYCHO_PARALLEL, TYCHO_OVERDECOMPOSE, TYCHO_MIN_CPU_CHUNK, TYCHO_FAVOR,
 * TYCHO_FUSE, TYCHO_FASTMATH, TYCHO_STREAM_MEMORY, TYCHO_STREAM, and TYCHO_ISA
 * (the kernels' instruction set, ty_isa), TYCHO_EXPLAIN and TYCHO_TIMING. Returns
 * TY_EINVAL (config left with defaults for the bad field) when a variable
 * does not parse; `err` (may be NULL) gets a message. */
ty_status ty_config_init(ty_config *cfg, char *err, size_t errlen);
/* Set one policy axis from text, as the command line and the environment
 * spell it: key "parallel" (auto|all|single|task), "overdecompose" (>= 1),
 * "min_chunk" (a size), "favor" (debug|min-peak-memory|max-concurrency),
 * "fuse" / "fastmath" (true|false|on|off|1|0), "memory" (a size), "stream"
 * (strict|relaxed). TY_EINVAL with a message in err for a bad key or value. */
ty_status ty_policy_set(ty_policy *p, const char *key, const char *value, char *err,
                        size_t errlen);

/* "512MB" "4GiB" "1e9" "100" (bytes). K/M/G/T are powers of 1000 with B,
 * powers of 1024 with iB or alone ("4G" = 4 GiB). */
ty_status ty_parse_size(const char *text, size_t *out);
/* "1.5 GiB" style rendering into buf. */
void ty_format_bytes(double bytes, char *buf, size_t len);

/* The instruction set the CPU kernels run with: "avx512" (x86-64-v4),
 * "avx2" (x86-64-v3) or "baseline" (x86-64-v2); "native" in a build made
 * with -DTYCHO_NATIVE=ON. A property of the process: fixed by the first
 * runtime created (config.isa) or by the first kernel run, whichever comes
 * first, as the best level the CPU supports lowered by the ceiling; a later
 * runtime that asks for another level fails to start (TY_EINVAL). */
const char *ty_isa(void);
/* The best level this CPU supports in this build. */
const char *ty_isa_best(void);
/* The levels this build has kernels for, lowest first: "baseline avx2 avx512"
 * (or "native"). */
const char *ty_isa_levels(void);
/* TY_OK when `text` names a level or "auto"; TY_EINVAL with a message. */
ty_status ty_isa_parse(const char *text, char *err, size_t errlen);

ty_status ty_runtime_create(const ty_config *cfg, ty_runtime **out);
/* Flushes nothing: pending launches are dropped. Stores still referenced keep
 * the runtime's memory alive until they are released. */
void ty_runtime_destroy(ty_runtime *rt);
const ty_config *ty_runtime_config(const ty_runtime *rt); /* resolved values */
/* GPUs the runtime uses (0 without a driver or device, or with gpus = -1).
 * Launches do not run on them yet (docs/gpu.md): discovery and the modules
 * below the window are in place. */
int ty_gpu_count(const ty_runtime *rt);
ty_status ty_gpu_info(const ty_runtime *rt, int i, ty_gpu_device *out);
/* "1 GPU (driver 13.0)" or why there is none. */
const char *ty_gpu_status(const ty_runtime *rt);
const char *ty_errmsg(const ty_runtime *rt); /* message of the last failure */
/* Async-signal-safe: ask the flush in progress (or the next) to stop at the
 * next launch boundary; it fails with TY_EINTR and its remaining launches are
 * cancelled (their outputs read as an error). */
void ty_interrupt(ty_runtime *rt);
/* Forget an interrupt nobody consumed (a shell calls it before each statement). */
void ty_interrupt_clear(ty_runtime *rt);
/* True while an interrupt is pending (async-signal-safe; long-running task
 * bodies poll it to stop early). */
bool ty_interrupt_pending(const ty_runtime *rt);
/* Set the seed of tycho's random generator (counter-based: the same numbers
 * on every run and any number of processors). */
void ty_seed(ty_runtime *rt, uint64_t seed);

typedef struct ty_stats {
  uint64_t launches;        /* launches appended to the window */
  uint64_t flushes;         /* non-empty flushes */
  uint64_t pieces;          /* point tasks run */
  uint64_t bytes_allocated; /* cumulative bytes of store storage allocated */
  uint64_t bytes_live;      /* storage allocated now */
  uint64_t bytes_peak;      /* highest bytes_live */
  uint64_t bytes_reserved;  /* bytes charged against the budget (live stores) */
  uint64_t stores_live;     /* store handles alive */
  uint64_t launches_run;    /* launches that ran after fusion (fused runs count once) */
  uint64_t fused_runs;      /* fused launches made */
  uint64_t fused_launches;  /* launches that went into fused runs */
  uint64_t fused_compiled;  /* fused runs given a compiled kernel (the others, and pieces
                               whose layout the kernel does not fit, run in the interpreter) */
  uint64_t bytes_elided;    /* bytes of temporaries never allocated thanks to fusion */
  uint64_t waves;           /* waves run */
  uint64_t concurrent_launches; /* launches that ran in a wave of two or more */
  uint64_t widest_wave;     /* most launches in one wave */
  uint64_t critical_path;   /* longest dependence chain of any flush */
  uint64_t peak_transient;  /* highest simulated transient bytes of any flush */
  uint64_t stream_groups;   /* streamed groups run (memory axis) */
  uint64_t stream_pieces;   /* pieces they ran in */
  uint64_t stream_peak;     /* most transient bytes a streamed group held at once */
  uint64_t bytes_freed;     /* cumulative bytes of store storage freed: always
                               bytes_allocated - bytes_freed == bytes_live */
  uint64_t gpu_launches;    /* launches run on GPUs */
  uint64_t gpu_h2d_bytes;   /* bytes copied host to device */
  uint64_t gpu_d2h_bytes;   /* bytes copied device to host */
  uint64_t gpu_d2d_bytes;   /* bytes copied between devices */
  uint64_t gpu_evictions;   /* stores' device copies given up to make room (their bytes
                               valid only there copied to the host first) */
  uint64_t dist_launches;   /* launches whose pieces were split among ranks (docs/mpi.md) */
  uint64_t dist_bytes;      /* bytes this rank received from the others for them */
  uint64_t dist_collectives; /* collective calls this rank made (votes, exchanges, checks) */
  uint64_t fused_inplace;   /* fused runs that write a store in place while reading it through
                               row-shifted views, line-buffered (docs/fusion.md) */
  uint64_t dist_messages;   /* messages of store data this rank received: a halo from one rank, or
                               one rank's part of a gather (votes and failure records not counted) */
  uint64_t dist_wait_ns;    /* nanoseconds this rank spent in the transport's collective calls:
                               waiting for the other ranks and moving the bytes */
  uint64_t dist_overlap_pieces; /* pieces this rank ran while its wave's halos were in flight
                                   (they read none; the others ran after the wait) */
  uint64_t fuse_cache_hits; /* flushes whose fusion decision was replayed: the window had the
                               structure of one decided before (docs/fusion.md, TYCHO_FUSE_CACHE) */
  uint64_t bytes_in_place;  /* bytes of outputs written into the storage of an input their launch
                               read for the last time, not allocated (docs/scheduling.md) */
  uint64_t fused_switched;  /* pieces of interpreted fused runs that took their kernel when its
                               background compile ended mid-launch (docs/fusion.md) */
  uint64_t waves_ceded;     /* waves (and launches run alone) given one worker fewer than the
                               cores, left to a background compile (docs/internals.md) */
  uint64_t copies_folded;   /* copies of interpreted fused runs dropped, their producer writing
                               the assigned view itself; one per copy and piece (docs/fusion.md) */
  uint64_t mul_add_pairs;   /* an f64 mul and the add or sub after it, run by the interpreter
                               as one pass; one per pair and piece (docs/fusion.md) */
  uint64_t chained_ops;     /* f64 arithmetic the interpreter ran in the pass of the operation
                               before it (a chain); one per link and piece (docs/fusion.md) */
  uint64_t waves_backwards; /* waves swept last piece first: a wave over a storage of 4 MiB or
                               more in the opposite direction from the last one over it, so it
                               starts on what is still in cache (docs/internals.md) */
  uint64_t double_buffered; /* in-place runs (fused_inplace) run double-buffered: computed into a
                               second block that became the store's (docs/fusion.md) */
  /* Where the time went (docs/scheduling.md, "Where the time went"), with
   * timing on (ty_set_timing; 0 otherwise), in nanoseconds of wall time: */
  uint64_t timed_ns;    /* since timing was turned on (to when it was turned off) */
  uint64_t flush_ns;    /* of it, inside flushes; the rest is the program's own (the script) */
  uint64_t collect_ns;  /* of flush_ns: the binding's flush hook (Lua's collector) */
  uint64_t fuse_ns;     /* the fusion pass (its cache, the region cut, gemv chains) */
  uint64_t schedule_ns; /* cutting the window into waves */
  uint64_t tasks_ns;    /* the point tasks: each wave from its first piece's start to its last
                           piece's end (a streamed box's pieces likewise) */
  uint64_t launch_ns;   /* the rest of flush_ns: preparing and finishing each launch (its
                           outputs' memory, partition, explain record) and releasing it */
} ty_stats;
void ty_get_stats(const ty_runtime *rt, ty_stats *out);
/* Time the flushes' phases (ty_stats's *_ns figures): true starts the figures
 * from zero (when timing was off), false stops adding to them. Off by default
 * (about ten clock reads a flush and two a wave); tycho --stats and
 * TYCHO_TIMING=1 turn it on. Returns whether timing was on before. */
bool ty_set_timing(ty_runtime *rt, bool on);
/* ty_stats.flushes alone (a binding asks it around every call). */
uint64_t ty_flush_count(const ty_runtime *rt);

/* Run everything in the window. */
ty_status ty_flush(ty_runtime *rt);
/* Called on the driving thread when a non-empty flush starts, before anything
 * is analysed: a binding with a garbage collector releases the stores it can
 * no longer reach there, so that they count as dead (temporaries). The hook
 * may release stores; it must not append launches or flush. NULL removes it. */
void ty_set_flush_hook(ty_runtime *rt, void (*hook)(void *ud), void *ud);
/* Inside the hook: true when the stores the window would allocate do not fit
 * the host budget next to what is allocated (stores are charged when
 * allocated, not when created). A binding then releases all it can, even
 * with its collector stopped, so that temporaries are not allocated. */
bool ty_flush_pressure(const ty_runtime *rt);

/* ---- fault injection (testing) ----------------------------------------------
 * Every allocation the core makes is counted from the first call of
 * ty_fault_fail_alloc on; after ty_fault_fail_alloc(k) the k-th one from then
 * on fails (once), and the operation that made it returns TY_ENOMEM. k = 0
 * disarms (and restarts the count). Process-wide; for tests and fault-injection runs
 * (see docs/reliability.md), never needed by applications. */
void ty_fault_fail_alloc(long k);
long ty_fault_alloc_count(void); /* allocations counted since the last arming */
long ty_fault_failures(void);    /* allocations failed on purpose, in all */
/* On the calling thread only: its next allocation of min_bytes or more fails
 * (once); 0 disarms. For a test that runs several runtimes on threads and
 * fails one of them (test_dist's ranks). */
void ty_fault_fail_alloc_here(size_t min_bytes);

/* ---- stores ----------------------------------------------------------------- */

/* A new store with fresh storage, charged against the budget now and
 * allocated when first written. Its elements are unspecified until written
 * (they read as zero). ndim may be 0 (a scalar). */
ty_status ty_store_create(ty_runtime *rt, ty_dtype t, int ndim, const int64_t *shape,
                          ty_store **out);
void ty_store_retain(ty_store *s);
void ty_store_release(ty_store *s); /* NULL is fine */

ty_dtype ty_store_dtype(const ty_store *s);
int ty_store_ndim(const ty_store *s);
const int64_t *ty_store_shape(const ty_store *s);
const int64_t *ty_store_strides(const ty_store *s); /* in elements; 0 on broadcast dims */
int64_t ty_store_size(const ty_store *s);            /* number of elements */
uint64_t ty_store_id(const ty_store *s);             /* unique per runtime, from 1 */
bool ty_store_is_contiguous(const ty_store *s);      /* C order, no gaps */
bool ty_store_same_storage(const ty_store *a, const ty_store *b);
/* Bounds every element of an integer or bool store is known to lie in,
 * without reading it (no flush): the dtype's limits, narrowed by how the
 * store was made (argmin/argmax along an axis of length K: 0..K-1; a scalar
 * added or subtracted shifts them; any later write forgets them). False for
 * float dtypes. */
bool ty_store_value_range(const ty_store *s, int64_t *lo, int64_t *hi);

/* Views: no copy, the result shares storage with `s`. */
/* Elements [start, stop) with `step` >= 1 along dim; start <= stop. */
ty_status ty_store_slice(ty_runtime *rt, ty_store *s, int dim, int64_t start, int64_t stop,
                         int64_t step, ty_store **out);
/* Index `index` of dim, removing the dimension. */
ty_status ty_store_select(ty_runtime *rt, ty_store *s, int dim, int64_t index, ty_store **out);
/* A new axis of size 1 before position dim (0..ndim): numpy's None. */
ty_status ty_store_expand(ty_runtime *rt, ty_store *s, int dim, ty_store **out);
/* Swap two dims. */
ty_status ty_store_transpose(ty_runtime *rt, ty_store *s, int d1, int d2, ty_store **out);
/* Same elements in C order under a new shape; one entry may be -1 (inferred).
 * Only for contiguous stores (TY_EINVAL otherwise: copy first). */
ty_status ty_store_reshape(ty_runtime *rt, ty_store *s, int ndim, const int64_t *shape,
                           ty_store **out);
/* The diagonal of a 2-D store as a 1-D view (length min(rows, cols)). */
ty_status ty_store_diagonal(ty_runtime *rt, ty_store *s, ty_store **out);
/* numpy broadcast_to: stride 0 on dims that grow from 1, new leading dims. */
ty_status ty_store_broadcast(ty_runtime *rt, ty_store *s, int ndim, const int64_t *shape,
                             ty_store **out);
/* The broadcast shape of two shapes (numpy rules) or TY_ESHAPE. */
ty_status ty_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                              int64_t *out);

/* Data in and out (synchronous). Buffers are C-order, dense, of the store's
 * dtype (bool is one byte, 0 or 1). */
ty_status ty_store_from_buffer(ty_runtime *rt, ty_dtype t, int ndim, const int64_t *shape,
                               const void *data, ty_store **out);
ty_status ty_store_read(ty_runtime *rt, ty_store *s, void *dst, size_t dstlen);
/* A store over the caller's own buffer, without a copy: `data` holds the
 * shape's elements densely in C order (64-byte alignment is best, 8 is
 * required) and must stay valid until `release(ud)` is called, when the last
 * store or view of it is released (release may be NULL). Not charged against
 * the budget. Reads of the buffer by the host must follow ty_flush. */
ty_status ty_store_attach(ty_runtime *rt, ty_dtype t, int ndim, const int64_t *shape, void *data,
                          void (*release)(void *ud), void *ud, ty_store **out);
/* A 0-d store holding v converted to t, written at once. */
ty_status ty_scalar_f64(ty_runtime *rt, ty_dtype t, double v, ty_store **out);
ty_status ty_scalar_i64(ty_runtime *rt, ty_dtype t, int64_t v, ty_store **out);

typedef struct ty_value {
  ty_dtype dtype;
  double f;  /* the value for float dtypes (and a copy for the others) */
  int64_t i; /* the value for integer and bool dtypes */
} ty_value;
/* The single element of a store of size 1 (any rank). */
ty_status ty_item(ty_runtime *rt, ty_store *s, ty_value *out);
/* One element by 0-based index (ndim entries). */
ty_status ty_store_get(ty_runtime *rt, ty_store *s, const int64_t *index, ty_value *out);

/* numpy-like rendering: the values as numpy's str() prints them under the
 * runtime's print options (summarised with "..." beyond `threshold`
 * elements), then a line "tycho.store(shape=(2, 2), dtype=f64)"; see
 * format.c. `*out` is malloc'd, free() it. */
ty_status ty_store_format(ty_runtime *rt, ty_store *s, char **out);

/* numpy's print options (np.set_printoptions), one set per runtime. */
typedef struct ty_print_options {
  int64_t threshold; /* summarise stores with more elements than this (1000);
                        INT64_MAX: never */
  int precision;     /* at most this many fractional digits of a float (8),
                        0 .. TY_PRINT_MAX_PRECISION */
  int linewidth;     /* characters per line (75), >= 1 */
  int edgeitems;     /* items shown at each end of a summarised dim (3), >= 1 */
  bool suppress;     /* fixed-point unless a value is >= 1e8; values below the
                        precision print as 0 (false) */
} ty_print_options;
#define TY_PRINT_MAX_PRECISION 100
/* numpy's defaults: 1000, 8, 75, 3, false. */
void ty_print_options_default(ty_print_options *o);
/* TY_EINVAL (options unchanged) when a field is out of its range. */
ty_status ty_set_print_options(ty_runtime *rt, const ty_print_options *o);
void ty_get_print_options(ty_runtime *rt, ty_print_options *o);

/* .npy files (format 1.0-3.0, C or Fortran order on load, C order on save).
 * save writes a temporary file beside `path`, fsyncs it and renames it. */
ty_status ty_load_npy(ty_runtime *rt, const char *path, ty_store **out);
ty_status ty_save_npy(ty_runtime *rt, const char *path, ty_store *s);

/* ---- operations (deferred launches) ------------------------------------------ */

typedef enum ty_op {
  /* unary: float dtypes keep theirs, integers compute in f64 except neg abs
   * floor ceil, which keep integer dtypes (bool -> i64 for neg). */
  TY_OP_NEG = 0,
  TY_OP_EXP,
  TY_OP_LOG,
  TY_OP_SQRT,
  TY_OP_ABS,
  TY_OP_SIN,
  TY_OP_COS,
  TY_OP_TANH,
  TY_OP_FLOOR,
  TY_OP_CEIL,
  TY_OP_NOT, /* logical not, -> bool */
  /* numpy's ufuncs of issue 18. Floats keep their dtype, integers and bool
   * compute in f64 (SLEEF's 1-ULP functions; tan like sin/cos): */
  TY_OP_TAN,
  TY_OP_ARCSIN,
  TY_OP_ARCCOS,
  TY_OP_ARCTAN,
  TY_OP_SINH,
  TY_OP_COSH,
  TY_OP_ARCSINH,
  TY_OP_ARCCOSH,
  TY_OP_ARCTANH,
  TY_OP_EXPM1,
  TY_OP_LOG1P,
  TY_OP_LOG2,
  TY_OP_LOG10,
  TY_OP_EXP2,
  TY_OP_CBRT,
  /* keep the dtype (no bool for sign; rint/trunc keep integers, as floor) */
  TY_OP_SIGN,       /* -1, 0, 1; NaN stays NaN; sign(-0.0) = 0.0 */
  TY_OP_RINT,       /* round half to even */
  TY_OP_TRUNC,
  TY_OP_RECIPROCAL, /* 1/x; integers: 1/x truncated (1/0 = 0); bool -> i64 */
  TY_OP_INVERT,     /* bitwise not of integers, logical not of bool; no floats */
  TY_OP_ISNAN,      /* -> bool, any dtype */
  TY_OP_ISINF,
  TY_OP_ISFINITE,
  /* binary arithmetic: dtype = promote(a, b); bool,bool -> i64. DIV: true
   * division (integers -> f64). POW: always float (like Lua's ^). MOD:
   * numpy's (sign of the divisor); integer division or modulo by 0 gives 0. */
  TY_OP_ADD,
  TY_OP_SUB,
  TY_OP_MUL,
  TY_OP_DIV,
  TY_OP_MOD,
  TY_OP_POW,
  TY_OP_MAXIMUM, /* NaN propagates */
  TY_OP_MINIMUM,
  /* comparisons -> bool, computed in promote(a, b) */
  TY_OP_LT,
  TY_OP_LE,
  TY_OP_GT,
  TY_OP_GE,
  TY_OP_EQ,
  TY_OP_NE,
  TY_OP_AND, /* logical, -> bool */
  TY_OP_OR,
  /* issue 18 */
  TY_OP_XOR,      /* logical, -> bool */
  TY_OP_ARCTAN2,  /* float, as POW */
  TY_OP_HYPOT,
  TY_OP_FLOORDIV, /* numpy's floor_divide, dtypes as MOD; integer x // 0 == 0 */
  TY_OP_BITAND,   /* integers and bool (bool stays bool); no floats */
  TY_OP_BITOR,
  TY_OP_BITXOR,
  TY_OP_LSHIFT,   /* integers, bool -> i64; a shift by a negative or >= the */
  TY_OP_RSHIFT,   /* width gives 0 (-1 for >> of a negative), as numpy */
  TY_NOPS
} ty_op;

#define TY_OP_FIRST_BINARY TY_OP_ADD
const char *ty_op_name(ty_op op); /* "add", "exp", ... */

ty_status ty_unary(ty_runtime *rt, ty_op op, ty_store *a, ty_store **out);
/* Broadcasting by numpy's rules. */
ty_status ty_binary(ty_runtime *rt, ty_op op, ty_store *a, ty_store *b, ty_store **out);
/* cond ? a : b, element-wise with broadcasting; cond of any dtype (non-zero). */
ty_status ty_where(ty_runtime *rt, ty_store *cond, ty_store *a, ty_store *b, ty_store **out);
ty_status ty_cast(ty_runtime *rt, ty_store *a, ty_dtype t, ty_store **out);

typedef enum ty_reduce_op {
  TY_RED_SUM = 0, /* bool/int -> i64, floats keep theirs */
  TY_RED_PROD,    /* same dtypes as sum */
  TY_RED_MIN,     /* keeps the dtype; NaN propagates */
  TY_RED_MAX,
  TY_RED_MEAN,    /* ints -> f64 */
  TY_RED_ARGMIN,  /* -> i64, 0-based, first occurrence */
  TY_RED_ARGMAX,
  TY_NREDUCE
} ty_reduce_op;
const char *ty_reduce_name(ty_reduce_op op);
/* axis -1: over all elements (a 0-d result); otherwise over that axis (the
 * result has ndim-1 dims). Reducing an empty store: sum 0, prod 1, mean NaN,
 * min/max/argmin/argmax TY_EINVAL. */
ty_status ty_reduce(ty_runtime *rt, ty_reduce_op op, ty_store *a, int axis, ty_store **out);

/* Matrix product with numpy's matmul rules (1-D x 1-D is the dot product, a
 * 0-d store; operands of rank > 2 are stacks of matrices whose batch dims
 * broadcast, ops_products.c). Floats through BLAS. */
ty_status ty_matmul(ty_runtime *rt, ty_store *a, ty_store *b, ty_store **out);

/* Histogram of an integer 1-D store x: out[j] = the number of i with
 * x[i] == base + j (or the sum of weights[i], a 1-D store of x's length, when
 * weights is not NULL), j in [0, nbins); other values are ignored. The result
 * is i64 without weights, f64 with them (f32 for f32 weights). numpy's bincount
 * with minlength = nbins; a binding with 1-based labels passes base = 1. */
ty_status ty_bincount(ty_runtime *rt, ty_store *x, ty_store *weights, int64_t base, int64_t nbins,
                      ty_store **out);

/* Write into an existing store or view (launches). */
ty_status ty_fill(ty_runtime *rt, ty_store *dst, double v);
/* dst[...] = src, src broadcast to dst's shape and cast to its dtype; safe
 * when src and dst overlap. */
ty_status ty_copy(ty_runtime *rt, ty_store *dst, ty_store *src);

/* Creation (launches that fill a new store). */
ty_status ty_full(ty_runtime *rt, ty_dtype t, int ndim, const int64_t *shape, double v,
                  ty_store **out);
/* start + i*step for i in [0, n). */
ty_status ty_arange(ty_runtime *rt, ty_dtype t, double start, double step, int64_t n,
                    ty_store **out);
/* n points from a to b inclusive (n == 1: just a). */
ty_status ty_linspace(ty_runtime *rt, ty_dtype t, double a, double b, int64_t n,
                      ty_store **out);
/* Uniform [0, 1) for float dtypes; each call draws a fresh stream. */
ty_status ty_random(ty_runtime *rt, ty_dtype t, int ndim, const int64_t *shape,
                    ty_store **out);

#ifdef __cplusplus
}
#endif
#endif /* TYCHO_H */
