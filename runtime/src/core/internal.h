/*
 * internal.h — structures and helpers shared by the core's files (ty__ names).
 *
 * Ownership and threads: stores, storages and launches are created, retained
 * and released only by the thread that drives the runtime. Worker threads see
 * tiles (raw pointers) and never touch reference counts, so counts are plain
 * integers.
 */
#ifndef TY_INTERNAL_H
#define TY_INTERNAL_H

#include "alloc.h"
#include "isa.h" /* first: a kernel-set copy's names (TY__ISA_RENAME) */
#include "tycho/dist.h"
#include "tycho/task.h"
#include "tycho/tycho.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define TY_ERRLEN 2048 /* room for a Lua body's traceback */
#define TY_DEFAULT_WINDOW 64
#define TY_MAX_STREAM_WINDOW 4096 /* launches a streamed scope may defer */
#define TY_MAX_PIECES 65536       /* pieces of one launch (clamped, not an error) */
#define TY_CACHE_SLOTS 64
#define TY_ALIGN 64 /* storage alignment: one cache line, a full AVX-512 vector */

/* ty_dtype_size inlined: the flush path asks it ~1,200 times an iteration
 * of CG at 256^2 (fused_piece, store overlap, prepare, partition, views),
 * each a call into dtype.c of 7 instructions. dtype.c's public
 * ty_dtype_size returns this: the one table of sizes. */
static inline size_t ty__dtype_size(ty_dtype t) {
  static const unsigned char bytes[TY_NDTYPES] = {
      [TY_F64] = 8, [TY_F32] = 4, [TY_I64] = 8, [TY_I32] = 4, [TY_U8] = 1, [TY_BOOL] = 1,
      [TY_I8] = 1,  [TY_I16] = 2, [TY_U16] = 2, [TY_U32] = 4, [TY_U64] = 8};
  return (unsigned)t < TY_NDTYPES ? bytes[t] : 0;
}

/* Shared storage of one or more stores. Charged against the budget from
 * creation (`nbytes`), allocated lazily (`data` NULL until first needed). */
typedef struct ty_storage {
  int refs;
  size_t nbytes;
  void *data;
  bool cancelled; /* its producer failed or did not run: reading it is an error */
  ty_status cancel_status; /* the error a read gives: TY_ETASK, TY_EINTR, TY_EINVAL, ... */
  char *cancel_why;        /* the cause, named by that error (owned; NULL: not known) */
  uint64_t born;           /* rt->window_gen when made: made in the window now filling? */
  bool external;  /* attached host buffer (ty_store_attach): not ours to free */
  bool uncharged; /* made inside a streamed scope: charged when allocated, if ever */
  bool streamed;  /* made while a streamed scope was open (a refusal of that scope
                     cancels it, stream.c; one made before it keeps its values) */
  bool sliced;    /* data is a streamed piece's slice (stream.c), not a block of ours */
  bool lent;      /* its block went to another storage (exec/inplace.c): data stays readable
                     until it is released, which frees nothing */
  /* rt->window_gen of the flush in which regions.c cut its whole-store writer
   * into regions: every element gets written, so a region's OUT view needs no
   * zeroing (0: never) */
  uint64_t covered_gen;
  /* a launch of the running wave writes its new values into a second block
   * (exec/linebuf.c, double-buffering): no other may this wave */
  bool swapping;
  /* known bounds of its integer values (range.c): set by the op that made
   * it, cleared by any launch that writes it */
  bool has_range;
  int64_t range_lo, range_hi;
  void (*release)(void *ud);
  void *release_ud;
  struct ty__gstore *gpu; /* exec_gpu.c: its copies on GPUs (NULL: no GPU touched it) */
  /* several ranks (exec/dist_data.c): the split launch that wrote it last left
   * each rank only its own pieces valid (NULL: whole on this rank) */
  struct ty__split *split;
  /* scratch of the flush that last touched it (window.c's graph building) */
  uint64_t epoch;
  int idx;
  struct ty_runtime *rt;
} ty_storage;

/* A block tiling of a launch domain: tiles[d] pieces along dim d, pieces =
 * the product; piece p is the row-major multi-index over tiles. */
typedef struct ty_tiling {
  int ndim;
  int pieces;
  int tiles[TY_MAX_RANK];
} ty_tiling;

/* Which level decided an axis. Kept as numbers (and an interned scope
 * origin) and turned into text only when explain is read: resolving is on
 * the path of every launch. */
typedef enum ty_level {
  TY_FROM_DEFAULT = 0,
  TY_FROM_ENV,
  TY_FROM_CLI,
  TY_FROM_SCOPE,
  TY_FROM_HINT,
  TY_FROM_TRAIT,
  TY_FROM_OPTION
} ty_level;

typedef struct ty_origin {
  uint8_t level;     /* ty_level */
  const char *scope; /* TY_FROM_SCOPE: interned origin text */
  uint64_t store;    /* TY_FROM_HINT: the store the hint was put on */
} ty_origin;

/* Every policy axis of one launch, resolved when it was appended (scopes are
 * dynamic), with the level that decided each. A launch points at its
 * resolution (ty_pending.pol, ty_record.pol): most launches share one
 * (`shared`: the runtime's base_pol or an entry of its table of scope
 * resolutions, policy.c, alive as long as the runtime, never changed), the
 * others (a launch option, a trait, a hint) keep theirs in `own_pol`. 280
 * bytes: copying it twice a launch was ~180 instructions of ~4,500. */
typedef struct ty_resolved {
  ty_policy p;
  ty_origin from[TY_NAXES];
  bool mode_from_hint;
  bool shared;         /* lives in the runtime; copies of a launch point at it */
  uint64_t hint_store; /* the store whose hint decided, when mode_from_hint */
} ty_resolved;

/* The resolution a copy of a launch (a fused launch, a cut, a record) points
 * at: a shared one as it is, a launch's own copied into the copy's own. */
static inline const ty_resolved *ty__pol_keep(const ty_resolved *src, ty_resolved *own) {
  if (src->shared) return src;
  *own = *src;
  return own;
}

/* Why the fusion pass ended a run or left a launch out, kept as its parts
 * and turned into text only when explain shows it (ty__fuse_note_text):
 * formatting it for every launch cost more than the decision. */
typedef enum {
  TY_NOTE_NONE,
  TY_NOTE_TEXT,     /* why */
  TY_NOTE_STOP,     /* "#seq[0] task: why" (the launch the run stopped at) */
  TY_NOTE_NOT_WITH, /* "not fused with #seq[0](-#seq[1]): why" */
  TY_NOTE_FULL,     /* "window full (n launches)" */
  TY_NOTE_FUSE_OFF, /* "not fused: fuse = false (origin)" */
  TY_NOTE_INPLACE   /* "#seq[0] task: in place, line-buffered (reads rows -n..+seq[1])" */
} ty_note_kind;

typedef struct ty_fuse_note {
  uint8_t kind;               /* ty_note_kind */
  const char *why;            /* static text */
  const struct ty_task *task; /* STOP: the launch's task; FUSE_OFF: the launch's own */
  uint64_t seq[2];
  int n;
  ty_origin origin; /* FUSE_OFF: where fuse = false came from */
} ty_fuse_note;

/* The note's text into buf ("" for none). */
void ty__fuse_note_text(const ty_fuse_note *note, char *buf, size_t len);

/* What explain remembers of a launch that ran (rendered by explain.c), in
 * a ring of TY_EXPLAIN_KEEP: the fields every launch writes (592 bytes:
 * 2.3 MiB for the ring), the texts only some launches have in a ring of
 * their own (ty_record_cold, rt->explain_cold: pages never written are never
 * touched), and the texts marked in texts rather than cleared. A launch
 * touches ~6 cache lines of its record. Records of 1.6 KiB with every text
 * cleared and the flush's figures copied in cost CG at 64 x 64 ~2% (paired,
 * bench/README "Issue 19 rows: session 33"), and its first timed step,
 * whose launches touch the ring's pages for the first time, 7.1 against
 * 6.4 ms now. */
enum { TY_REC_FUSED_OPS = 1, TY_REC_STREAM = 2, TY_REC_RANKS = 4, TY_REC_PLACE = 8 };
enum { TY_REC_STREAM_LEN = 320, TY_REC_RANKS_LEN = 128, TY_REC_PLACE_LEN = 192 };
typedef struct ty_record {
  uint64_t seq;
  const struct ty_task *task;
  const ty_resolved *pol; /* ty__pol_keep: shared, or its cold record's own_pol */
  int ndim;
  bool omp;
  bool short_dims; /* fewer pieces than wanted fit the splittable dims */
  bool banded;     /* a small band cut at its storage's rows (ty__band_partition) */
  uint8_t texts;   /* TY_REC_* bits: the texts that this launch wrote */
  int pieces;
  int processor;
  int wave, waves;
  /* how the piece count came about (partition.c) */
  int64_t bytes, raw, want;
  int procs, max_pieces;
  int ordered; /* float sum/prod/matmul: the tiles fixed by the shape (partition.c), else 0 */
  int fused;
  int gpus;            /* GPUs it ran on (exec_gpu.c); 0: the CPU */
  uint64_t key_store;  /* reused key partition of this store; 0: new */
  uint64_t flush_slot; /* its flush's figures: rt->flush_log[flush_slot % TY_EXPLAIN_KEEP] */
  uint64_t h2d, d2h, d2d; /* bytes copied for it: host to device, device to host, between devices */
  int64_t shape[TY_MAX_RANK];
  int tiles[TY_MAX_RANK];
  ty_fuse_note fuse_end;
  char fused_ops[192]; /* valid with TY_REC_FUSED_OPS */
} ty_record;

/* A record's texts that few launches write (the same index in
 * rt->explain_cold), each valid with its TY_REC_* bit. */
typedef struct ty_record_cold {
  char stream[TY_REC_STREAM_LEN]; /* how a streamed scope ran it (stream.c) */
  char ranks[TY_REC_RANKS_LEN];   /* split among ranks (dist.c): this rank's pieces */
  char place[TY_REC_PLACE_LEN];   /* why it ran where it ran, when a GPU was considered */
  ty_resolved own_pol;
} ty_record_cold;

/* records kept by a runtime for reuse (store.c); none in sanitizer builds,
 * so that a use after free is still seen. A flush frees its window's views
 * at once: CG at 256 x 256 drops ~130 an iteration (the Laplacian's
 * regions), and 64 slots sent most of them through free and calloc. A flush
 * every ~3 iterations drops ~360 views and stores at once: 256 slots still
 * sent ~67 an iteration through calloc and ~150 through free (~30k
 * instructions of ~1,377k). 1,024: at most 464 KiB of store records and
 * 144 KiB of storage records kept. */
#define TY_POOL_SLOTS 1024

/* The fields every launch's path reads (window append, the fusion cache's
 * key, prepare, release) come first and are what a recycled record gets
 * zeroed (TY_STORE_HEAD, 80 bytes; shape[0] shares their second cache
 * line); shape and strides are written up to ndim by whoever makes the
 * store and never read beyond it; the key tiling and the hint (128 bytes)
 * are read only under has_key / has_hint. 464 bytes in all. The old layout
 * was zeroed whole (472 bytes): ~60 instructions and 8 lines touched a
 * store, of bench/workloads/overhead.lua's ~3,250 instructions an
 * operation, and lines a CG iteration misses between waves. */
struct ty_store {
  int refs;
  ty_dtype dtype;
  int ndim;
  int wcount; /* scratch of the flush that last touched it (window.c): references held by
                 that flush's launches */
  uint64_t id;
  struct ty_runtime *rt;
  ty_storage *storage;
  int64_t size;
  int64_t offset; /* in elements, from storage->data */
  uint64_t epoch; /* ... and that flush */
  /* a 0-d store's broadcast view to the last shape asked (ops.c), held */
  struct ty_store *bview;
  bool has_key; /* key below is set */
  bool has_hint; /* hint and hint_from below are set */
  int64_t shape[TY_MAX_RANK];
  int64_t strides[TY_MAX_RANK]; /* in elements */
  /* key partition: the tiling its last writer used over this store's shape */
  ty_tiling key;
  /* hint (ty_store_hint, or inherited from a hinted launch that wrote it) */
  ty_policy hint;
  uint64_t hint_from; /* id of the store the hint was put on */
};
#define TY_STORE_HEAD offsetof(struct ty_store, shape)

/* Internal task flags (beside task.h's TY_TASK_*): a built-in op kernel
 * learns its launch's fastmath axis through its scalar bytes, a non-zero
 * int64 that window.c writes when the axis allows the 4-ULP functions, so
 * launches that do not fuse honour it too. */
#define TY__TASK_FASTMATH_ARG (1u << 16)
/* A built-in whose time follows the bytes it touches (element-wise ops,
 * reductions, where, cast, copy, fill, fused runs): a wave of such launches
 * small enough runs on the flushing thread (exec.c, tiny_wave). */
#define TY__TASK_BYTES_BOUND (1u << 17)

struct ty_task {
  char name[TY_MAX_NAME];
  ty_variant_fn cpu;
  ty_variant_fn omp;
  ty_variant_fn gpu; /* stored, not called yet (task.h) */
  const void *data;
  ty_policy traits;
  unsigned flags;
  char *signature;
  void (*release)(void *data);
  int id;
};

/* One deferred launch: a copy of its ty_launch_desc holding references. */
typedef struct ty_pending {
  const ty_task *task;
  uint64_t seq; /* launch number, from 1 */
  int ndim;
  int64_t domain[TY_MAX_RANK];
  int nargs;
  ty_arg args[TY_MAX_ARGS];
  size_t scalar_bytes;
  _Alignas(8) unsigned char scalars[TY_MAX_SCALAR_BYTES];
  int max_pieces;
  uint32_t nosplit;
  const ty_resolved *pol; /* shared, or own_pol (ty__pol_keep) */
  /* set by the fusion pass on the launches it makes (and on the launch a run
   * stopped at), copied into the explain entry */
  int fused;
  char fused_ops[192];
  ty_fuse_note fuse_end;
  int8_t fop; /* the fusion pass's class of the launch (fuse.c), 0 until it asks */
  /* a fused launch written in place, line-buffered (fuse.c, exec/linebuf.c):
   * argument lb_arg - 1 is written while its storage is read through views
   * reaching lb_up rows back and lb_dn rows on along dim 0; 0: an ordinary one */
  int8_t lb_arg, lb_up, lb_dn;
  char origin[TY_MAX_ORIGIN]; /* ty_launch_desc.origin, or "" */
  /* last: the fusion cache's templates and the cuts of regions.c copy the
   * fields before it */
  ty_resolved own_pol;
} ty_pending;

typedef struct ty_scope {
  ty_policy policy;
  const char *origin; /* interned */
  /* the resolution of a launch in this scope (innermost) that no option,
   * trait or hint touches, once computed: shared (policy.c), NULL until then */
  const ty_resolved *plain;
} ty_scope;

struct ty_runtime {
  int refs;       /* 1 for the owner + 1 per live store */
  void (*finalize)(ty_runtime *rt); /* runtime.c's teardown, when refs reach 0 */
  bool destroyed; /* ty_runtime_destroy was called */
  ty_config cfg;
  ty_print_options print; /* ty_store_format's layout (format.c) */
  char errmsg[TY_ERRLEN];
  /* The error of a flush that a launch's append made (the window was full):
   * not the appending call's fault, so it waits for the next ty_flush (a
   * read, tycho.flush) and is returned there. */
  uint64_t window_gen; /* +1 when a flush starts: the window that fills now is number window_gen */
  ty_status deferred;
  char deferred_msg[TY_ERRLEN];

  /* tasks */
  ty_task **tasks;
  int ntasks, cap_tasks;

  /* window */
  ty_pending **window;
  int nwindow;
  int window_cap; /* cfg.window; grown up to TY_MAX_STREAM_WINDOW in streamed scopes */
  bool flushing;
  int8_t window_cut; /* window.c, TYCHO_WINDOW_CUT: 0 not read yet, 1 on, -1 off */
  int8_t in_place;   /* exec/inplace.c, TYCHO_IN_PLACE: 0 not read yet, 1 on, -1 off */
  int8_t double_buffer; /* exec/linebuf.c, TYCHO_DOUBLE_BUFFER: 0 not read yet, 1 on, -1 off */
  struct ty__inplace_memo *inplace_memo; /* exec/inplace.c: its answers for recent fused runs */
  uint64_t flush_epoch;
  ty_pending *free_pending; /* launches kept for reuse (linked through args[0].store) */
  int nfree_pending;
  void (*flush_hook)(void *ud);
  void *flush_hook_ud;
  atomic_int interrupt;

  /* memory */
  size_t reserved;   /* bytes charged against cfg.sysmem */
  size_t uncharged;  /* bytes of the storages not charged yet (ty_storage.uncharged):
                        what ty_flush_pressure's walk of the window can find at most */
  size_t live;       /* bytes allocated now */
  /* freed large blocks kept for reuse (store.c): array programs allocate the
   * same sizes every iteration, and a fresh 80 MB block costs ~20k page
   * faults, more than the arithmetic done on it */
  struct {
    size_t bytes;
    void *p;
  } cache[TY_CACHE_SLOTS];
  int ncache;
  size_t cached;
  ty_stats stats;
  /* ty_set_timing: phases timed into stats.*_ns while on; timed_ns runs from
   * timing_t0 to now (or to timing_t1 once turned off) */
  bool timing;
  uint64_t timing_t0, timing_t1;
  uint64_t fused_switched; /* stats.fused_switched, counted by the pieces (atomic: fused_cpu.c) */
  uint64_t copies_folded;  /* stats.copies_folded, likewise */
  uint64_t mul_add_pairs;  /* stats.mul_add_pairs, likewise */
  uint64_t chained_ops;    /* stats.chained_ops, likewise */
  uint64_t next_store_id;
  uint64_t next_launch_seq;

  /* launch options of ty_launch_options, applied to launches without their own */
  bool has_launch_options;
  /* the resolution of a launch that no option, trait, hint or scope touches
   * (the configuration and the defaults: fixed at creation), once computed */
  ty_resolved base_pol;
  bool have_base_pol;
  bool any_hint; /* a store was ever given a hint (ty_store_hint): launches look for them */
  /* the scopes' plain resolutions (ty_scope.plain), each once, kept until the
   * runtime goes (launches and explain records point at them) */
  ty_resolved **pol_shared;
  int npol_shared;
  /* freed store and storage records kept for the next ones (store.c): a
   * script's chain of small operations makes and drops several per launch */
  void *pool_store[TY_POOL_SLOTS], *pool_storage[TY_POOL_SLOTS];
  int npool_store, npool_storage;
  void *pool_line[TY_POOL_SLOTS]; /* one-line data blocks (0-d stores: Lua numbers) */
  int npool_line;
  ty_policy launch_options;

  /* policy scopes, innermost last */
  ty_scope scopes[TY_MAX_SCOPES];
  int nscopes;

  /* explain: a ring of the last TY_EXPLAIN_KEEP launches run, and the
   * figures of the last TY_EXPLAIN_KEEP flushes that ran launches (each
   * record's flush_slot): nflush_log is the slot the running flush fills */
  ty_record *explain;
  ty_record_cold *explain_cold;
  uint64_t nexplained;
  ty_flush_stats *flush_log;
  uint64_t nflush_log;
  /* interned scope origins (policy.c), freed with the runtime */
  char **origins;
  int norigins, cap_origins;

  /* scheduling figures of the last flush (window.c), trace (trace.c) */
  ty_flush_stats last_flush;
  struct ty_trace *trace;
  struct ty__gpu *gpu; /* gpu_kernels.c: devices, pools, streams (NULL: none probed) */
  const struct ty__devices *devices; /* the GPU executor's entry points (NULL: none) */
  char chunk_why[192]; /* exec.c: why the GPUs gave a streamed chunk back to the CPU */
  struct ty_team *team; /* the CPU workers (core/team.c), started by the first split launch */
  /* exec.c: the last sweeps of homed waves, by their largest storage
   * (sweep_backwards), a ring */
  struct {
    const void *key;
    bool backwards;
  } sweeps[8];
  unsigned sweep_next;
  struct ty__lbring *lb_rings; /* exec/linebuf.c: each worker's row buffer, kept between launches */
  int lb_nrings;
  struct ty__gstore *gstores; /* exec_gpu.c: the storages a GPU touched */
  uint64_t gpu_turn;          /* exec_gpu.c: the next GPU of a task-mode launch */
  uint64_t gpu_clock;         /* exec_gpu.c: launches' touches of stores, for eviction */
  uint8_t gpu_used[TY_MAX_GPUS];   /* exec_gpu.c: streams but 0 with work since the last join */
  uint8_t gpu_behind[TY_MAX_GPUS]; /* exec_gpu.c: streams not yet ordered after stream 0 */

  /* random */
  uint64_t seed;
  uint64_t random_calls;

  /* built-in tasks, filled by ty__register_builtins (builtins.c, builtins.h) */
  const struct ty__builtins *builtins;

  /* the other ranks of a run on several processes (exec/dist.c); nranks 0: none */
  ty_dist dist;
  ty_dist transport; /* the table given to ty_set_dist: dist's calls time it (dist.c) */
};

/* Processors with memory of their own (GPUs: gpu/exec_gpu.c), as the
 * executor and host code reach them: runtime.c installs the table
 * (rt->devices) when it probes the GPUs, so that the layers below name no
 * GPU function. place: whether launch l runs there (why: for explain); run:
 * run it there on stream `lane` (*fallback: it could not, nothing changed);
 * join: order every stream after what was queued so far; host: before host
 * code reads (TY__HOST_READ), updates (TY__HOST_WRITE) or overwrites every
 * byte of (TY__HOST_DISCARD) bytes [lo, hi) of a storage's host memory;
 * forget: a storage is being freed. */
enum { TY__HOST_READ = 0, TY__HOST_WRITE, TY__HOST_DISCARD };
typedef struct ty__devices {
  bool (*place)(ty_runtime *rt, const struct ty_pending *l, char *why, size_t whylen);
  ty_status (*run)(ty_runtime *rt, struct ty_pending *l, int lane, struct ty_record *e, bool *fallback,
                   char *why, size_t whylen);
  ty_status (*join)(ty_runtime *rt);
  /* one chunk of a streamed scope: the launch over [lo, hi) along dim (-1:
   * its whole domain), staged through device memory (exec_gpu.c) */
  ty_status (*run_chunk)(ty_runtime *rt, struct ty_pending *l, int dim, int64_t lo, int64_t hi,
                         struct ty_record *e, bool *fallback, char *why, size_t whylen);
  ty_status (*host)(ty_runtime *rt, ty_storage *stg, uint64_t lo, uint64_t hi, int access);
  void (*forget)(ty_runtime *rt, ty_storage *stg);
} ty__devices;

/* The byte range a strided box touches (elements offset + sum i[d] *
 * strides[d], es bytes each): [lo, hi); *dense when it touches every byte
 * of it (store.c). */
void ty__tile_range(int ndim, const int64_t *shape, const int64_t *strides, int64_t offset, size_t es,
                    uint64_t *lo, uint64_t *hi, bool *dense);
/* The byte range of a store's view in its storage. */
void ty__store_range(const ty_store *s, uint64_t *lo, uint64_t *hi, bool *dense);

/* Runtime references held by stores (core/store.c; the last one calls
 * rt->finalize), in line: one of each a store, ~6 instructions in calls. */
static inline void ty__runtime_ref(ty_runtime *rt) { rt->refs++; }
static inline void ty__runtime_unref(ty_runtime *rt) {
  if (--rt->refs == 0) rt->finalize(rt);
}

/* ty_store_retain and ty_store_release in line, for the core's own paths:
 * a small operation takes and drops ~12 references (its arguments in the
 * launch, the fused launch, the views of ops.c), each an out-of-line call
 * of ~5 instructions plus the caller's saved registers (~70 instructions
 * an operation of bench/workloads/overhead.lua). The last reference's work
 * stays out of line (store.c). NULL is fine for both. */
void ty__store_free(ty_store *s);
static inline void ty__store_retain(ty_store *s) {
  if (s) s->refs++;
}
static inline void ty__store_release(ty_store *s) {
  if (s && --s->refs <= 0) ty__store_free(s);
}
/* Free every block kept for reuse (store.c). */
void ty__cache_drop(ty_runtime *rt);
/* Free the store and storage records kept for reuse (store.c). */
void ty__store_pools_free(ty_runtime *rt);
/* Frees what exec/inplace.c keeps of the fused runs it saw (runtime destroy). */
void ty__in_place_free(ty_runtime *rt);

/* A growable text buffer (sbuf.c) for the texts the core renders: explain
 * tables, traces, stats. An allocation failure sets `failed` and later
 * appends do nothing; the caller checks it once at the end. */
typedef struct ty_sbuf {
  char *p;
  size_t len, cap;
  bool failed;
} ty_sbuf;
/* Append n bytes (not text: no terminator is written). */
void ty__sb_append(ty_sbuf *b, const void *p, size_t n);
/* Copy the string src into dst (cap bytes, cap > 0), cut to fit and always
 * terminated: the explain texts on the launch path, without printf. */
void ty__strlcpy(char *dst, const char *src, size_t cap);
void ty__sb_printf(ty_sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Record a message (printf-style) and return `status`. */
ty_status ty__fail(ty_runtime *rt, ty_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Store internals (store.c). */
ty_status ty__store_new(ty_runtime *rt, ty_dtype t, int ndim, const int64_t *shape,
                        ty_store **out); /* same as ty_store_create */
ty_status ty__store_view(ty_runtime *rt, ty_store *base, int ndim, const int64_t *shape,
                         const int64_t *strides, int64_t offset, ty_store **out);
/* Make sure storage is allocated (zeroed if `zero`). */
ty_status ty__storage_ensure(ty_runtime *rt, ty_storage *st, bool zero);
/* to, not allocated nor charged yet, takes from's block and its charge
 * against the budget (exec/inplace.c): the bytes live stay the same, neither
 * allocated nor freed */
void ty__storage_lend(ty_runtime *rt, ty_storage *from, ty_storage *to);
/* Double-buffering (exec/linebuf.c): a second block for st's bytes, charged
 * against the budget and counted live like a store's; NULL when it does not
 * fit the budget, is smaller than a page or larger than the block cache
 * keeps (its old block is reused from there the next time: a fresh one
 * would fault its pages in again every time), or the system refuses it. */
void *ty__storage_second(ty_runtime *rt, const ty_storage *st);
/* keep: `block` (from ty__storage_second) becomes st's data and st's old
 * block is released; else `block` is. Neither is counted as allocated or
 * freed: the bytes live go back to what they were. */
void ty__storage_take(ty_runtime *rt, ty_storage *st, void *block, bool keep);
/* Address of the store's element at index 0 (storage must be allocated). */
char *ty__store_base(const ty_store *s);
/* "(4096, 4096) f64" */
void ty__shape_str(int ndim, const int64_t *shape, char *buf, size_t len);
/* Element count of a shape, TY_ERANGE on overflow of int64 or of bytes. */
ty_status ty__shape_size(ty_runtime *rt, const char *what, int ndim, const int64_t *shape,
                         ty_dtype t, int64_t *size);
/* Copy a store's elements into a dense C-order buffer (storage allocated). */
void ty__gather(const ty_store *s, void *dst);

/* The dtypes with GPU kernels and generated GPU code: the first six (f64 ...
 * bool). Launches touching the dtypes added later (i8 ... u64) run on the
 * CPU (exec_gpu.c says why in explain). */
#define TY__GPU_NDTYPES TY_I8

/* Elements as numbers (dtype-dispatched; for slow paths, formatting, items). */
double ty__load_f64(const void *p, ty_dtype t);
int64_t ty__load_i64(const void *p, ty_dtype t);
void ty__store_f64(void *p, ty_dtype t, double v);
void ty__store_i64(void *p, ty_dtype t, int64_t v);

/* Known bounds of a storage's integer values (range.c): set on a fresh
 * result by the op that made it, cleared by every launch writing it. */
void ty__range_set(ty_store *s, int64_t lo, int64_t hi);
static inline void ty__range_clear(ty_store *s) { /* in line: every launch, each written store */
  if (s && s->storage) s->storage->has_range = false;
}
void ty__range_scalar(ty_store *s); /* a 0-d store just written from a number */
void ty__range_binary(ty_op op, const ty_store *a, const ty_store *b, ty_store *out);
void ty__range_copy(const ty_store *a, ty_store *out); /* a cast or copy of a */

/* Free a task and its data (task.c). */
void ty__task_free(ty_task *t);

/* Built-in tasks and their kernels (ops.c and kernels_*.c). */
ty_status ty__register_builtins(ty_runtime *rt);
ty_status ty__register_index_ops(ty_runtime *rt); /* ops_index.c: bincount, ... */
ty_status ty__register_shape_ops(ty_runtime *rt); /* ops_shape.c: scan */
ty_status ty__register_mask_ops(ty_runtime *rt);  /* ops_mask.c: masks, take, put */
ty_status ty__register_sort_ops(ty_runtime *rt);  /* ops_sort.c: sort, searchsorted */
ty_status ty__register_sort_bucket_ops(ty_runtime *rt); /* ops_sort_bucket.c */
ty_status ty__register_scatter_ops(ty_runtime *rt); /* ops_scatter.c: bucketed put */
ty_status ty__register_linalg_ops(ty_runtime *rt); /* ops_linalg.c: LAPACK */
ty_status ty__register_convolve_ops(ty_runtime *rt); /* ops_convolve.c: convolve, correlate */
/* ty_matmul with an operand of 3 or more dims (ops_products.c). */
ty_status ty__matmul_batched(ty_runtime *rt, ty_store *a, ty_store *b, ty_store **out);
/* A float product with inner dim k <= TY__MATMUL_EW_K as element-wise
 * multiply-adds in p order, into res (ops_matmul_ew.c). */
#define TY__MATMUL_EW_K 8
bool ty__matmul_ew_fits(ty_dtype t, int64_t k);
/* A 2-D store's shape and strides as they are; a 1-D one's as a row (1, n)
 * or a column (n, 1) with stride 0 on the added dim (ops.c). */
void ty__matrix_dims(const ty_store *c, bool as_row, int64_t shape[2], int64_t strides[2]);
ty_status ty__matmul_ew(ty_runtime *rt, ty_store *a, ty_store *b, ty_dtype t, ty_store *res);
/* x (nb batch dims, nr row dims, then column dims) as (batch..., rows, cols):
 * a view when the strides allow, else a view of a copy (ops_products.c). */
ty_status ty__as_batched_matrix(ty_runtime *rt, ty_store *x, int nb, int nr, ty_store **out);
void ty__free_builtins(ty_runtime *rt);

/* Policy (policy.c): resolve every axis of a launch being appended. Returns
 * a shared resolution (no option, trait or hint touches the launch: the
 * runtime's or its innermost scope's) or `own`, filled in. */
const ty_resolved *ty__policy_resolve_any(ty_runtime *rt, const ty_task *task, const ty_arg *args,
                                          int nargs, const ty_policy *options, ty_resolved *own);
/* ... in line for the commonest launch: no option, trait, hint or scope
 * anywhere, the runtime's (~25 instructions a launch in a call). */
static inline const ty_resolved *ty__policy_resolve(ty_runtime *rt, const ty_task *task,
                                                    const ty_arg *args, int nargs,
                                                    const ty_policy *options, ty_resolved *own) {
  if (!options && !rt->has_launch_options && !task->traits.set && !rt->any_hint &&
      rt->nscopes == 0 && rt->have_base_pol)
    return &rt->base_pol;
  return ty__policy_resolve_any(rt, task, args, nargs, options, own);
}
/* Frees the shared resolutions (runtime teardown). */
void ty__policy_shared_free(ty_runtime *rt);
/* Built-in defaults of the axes. */
void ty__policy_defaults(ty_policy *p);

/* Partitioning (partition.c): the tiling of a launch on `procs` processors,
 * with the reasons written to the explain entry. */
void ty__partition(const ty_pending *l, int procs, ty_tiling *out, ty_record *r);
bool ty__band_partition(const ty_pending *l, int procs, ty_tiling *out); /* partition.c */
/* The box of piece `piece` (lo inclusive, hi exclusive). */
void ty__piece_box(int ndim, const int64_t *domain, const ty_tiling *t, int piece, int64_t *lo,
                   int64_t *hi);

/* Interned origin text (policy.c): equal texts give one pointer that lives
 * as long as the runtime. */
const char *ty__intern(ty_runtime *rt, const char *text);
void ty__origins_free(ty_runtime *rt);
void ty__origin_text(const ty_origin *o, int axis, const struct ty_task *task, char *buf, size_t len);

/* Explain records (core/record.c): the next record of the ring (its texts
 * unmarked); plan/explain.c renders them. */
ty_record *ty__explain_next(ty_runtime *rt);
/* The figures of a record's flush (all zero while it runs, or when gone). */
const ty_flush_stats *ty__record_flush(const ty_runtime *rt, const ty_record *r);
/* A record's cold part (r must be of rt's ring). */
ty_record_cold *ty__record_cold(const ty_runtime *rt, const ty_record *r);
/* A text of a record, to write (bit: TY_REC_STREAM, _RANKS or _PLACE; its
 * room: TY_REC_*_LEN): marked as written, and empty when this launch had
 * not written it yet. */
char *ty__record_text(ty_runtime *rt, ty_record *r, unsigned bit);
/* ... to read: "" when this launch did not write it. */
const char *ty__record_shown(const ty_runtime *rt, const ty_record *r, unsigned bit);
/* Print the entries recorded since `since` (a value of rt->nexplained). */
void ty__explain_print(ty_runtime *rt, uint64_t since, FILE *out);

/* The memory axis in force for a store created now (innermost scope, else
 * global; 0: no streaming): inside a streamed scope a store is charged against
 * the host budget only when allocated, since streaming may never allocate it. */
static inline size_t ty__policy_memory_now(const ty_runtime *rt) {
  for (int i = rt->nscopes - 1; i >= 0; i--)
    if (rt->scopes[i].policy.set & TY_POL_MEMORY) return rt->scopes[i].policy.memory;
  return (rt->cfg.policy.set & TY_POL_MEMORY) ? rt->cfg.policy.memory : 0;
}

/* Streaming (stream.c): run the window w[0 .. n) of a streamed scope piece by
 * piece under its memory budget (the launches' memory axis), after fusion.
 * Every launch is run or cancelled; the caller releases them. The first
 * error's message goes to msg, the streaming figures to fs. */
ty_status ty__stream_run(ty_runtime *rt, ty_pending **w, int n, ty_flush_stats *fs, char *msg,
                         size_t cap);
/* Mark what launch l writes as unreadable: its run failed (cause TY_ETASK,
 * ...), was interrupted (TY_EINTR) or was refused before it ran; `why` is the
 * cause a later read names ("launch #12 'boom' failed: ..."). A storage keeps
 * its first cause. Skipped launches pass on the cause of the input that
 * made them skip. */
void ty__cancel_outputs(ty_pending *l, ty_status cause, const char *why);
/* What a failed piece's failure reached (ty_ctx_fail_reached): partial false,
 * every written argument; true, the written arguments in args only. In:
 * unavailable, the arguments a failed launch left unavailable, for the task
 * "fused" to run without them (exec.c, prepare). */
struct ty_reach {
  bool partial;
  uint64_t args;
  uint64_t unavailable;
};
void ty__cancel_storage(ty_storage *stg, ty_status cause, const char *why);
/* Do two views of one storage share a byte (by the byte ranges they span)? */
bool ty__store_overlap(const ty_store *a, const ty_store *b);
/* The same elements in the same order: storage, dtype, offset, shape, and the
 * strides of the dims longer than 1. */
bool ty__same_view(const ty_store *a, const ty_store *b);
/* The error for reading a cancelled storage: "<fn>: the value is
 * unavailable: <cause>", with the cause's status. */
ty_status ty__unavailable(ty_runtime *rt, const char *fn, const ty_storage *stg);

/* Launch the registered task named `task` (ops.c), for operations kept in
 * files of their own (ops_mask.c, ops_sort.c); `fn` names the operation in
 * the error when the task is missing. */
ty_status ty__launch_named(ty_runtime *rt, const char *fn, const char *task, int ndim,
                           const int64_t *dom, int nargs, const ty_arg *args, const void *sc,
                           size_t scb, uint32_t nosplit);
/* ops_sort_bucket.c: whether the long 1-D value sort takes dtype t (the 4-
 * and 8-byte ones); that sort of the dense 1-D store xd into a new *out. */
bool ty__sort_bucketable(ty_dtype t);
ty_status ty__sort_1d_bucket(ty_runtime *rt, const char *fn, ty_store *xd, ty_store **out);
/* ops_scatter.c: whether a put of k positions into x as (o, m, r) goes
 * through the bucketed scatter; how many segments it takes (one pass over
 * each); the scatter itself: xv (1, m, 1) in/out, iv the k dense positions,
 * v3 the (1, k, 1) values. A bad position fails the launch, or (checked)
 * writes nothing: with one segment *bad (new) holds each chunk's first bad
 * flat position or -1; with more, the caller checks all of idx first and
 * passes that result as `gate` (bad NULL). */
bool ty__put_bucketable(int64_t o, int64_t k, int64_t m, int64_t r, ty_dtype idx, ty_dtype x);
int64_t ty__put_segments(const ty_runtime *rt, int64_t k, ty_dtype x);
ty_status ty__put_bucketed(ty_runtime *rt, const char *fn, ty_store *xv, ty_store *iv,
                           ty_store *v3, int64_t base, bool checked, ty_store *gate,
                           ty_store **bad);
/* A product computed in integer counts for bool operands becomes bool
 * (ops.c); on an error res is released. Returns st or the cast's status. */
ty_status ty__logical_result(ty_runtime *rt, ty_status st, bool logical, ty_store *res, ty_store **out);
/* An on/off switch read where it is used (TYCHO_FUSE_CACHE, TYCHO_WINDOW_CUT,
 * TYCHO_IN_PLACE, TYCHO_DOUBLE_BUFFER, TYCHO_CEDE): off when the variable holds a whole number equal to 0,
 * as ty_config_init reads it (which refuses anything but 0 or 1 at start). */
static inline bool ty__env_off(const char *name) {
  const char *v = getenv(name);
  char *end;
  return v && *v && strtol(v, &end, 10) == 0 && *end == 0;
}

static inline ty_arg ty__arg(ty_store *s, ty_privilege p, ty_projection pr) {
  return (ty_arg){.store = s, .priv = p, .redop = TY_REDOP_NONE, .proj = pr};
}

/* Append a launch to the window (window.c): ty_launch after the arguments
 * that overlap were resolved (ops.c). Checks the description. */
ty_status ty__window_append(ty_runtime *rt, const ty_launch_desc *d);
/* The same for a description that passes ty_launch's checks by construction
 * (live stores of rt, aligned ones of the domain's shape, no overlap
 * between a written argument and another, valid options): ops.c. */
ty_status ty__window_append_valid(ty_runtime *rt, const ty_launch_desc *d);
/* ... for an element-wise launch: no scalars, options, origin or limits;
 * args[0] its only written argument, a store just made (no known range) */
ty_status ty__window_append_ew(ty_runtime *rt, const ty_task *task, int ndim, const int64_t *domain,
                               int nargs, const ty_arg *args);

/* Fusion (fuse.c): rewrite rt->window[0 .. rt->nwindow) in place, replacing
 * fusible runs by fused launches (nwindow may shrink). Runs at the start of a
 * flush, after the flush hook. */
void ty__fuse(ty_runtime *rt);
/* After it (fuse_gemv.c): z = X w, a fused element-wise run and e X over
 * the same X become one launch that reads X once (the gemv chain). */
void ty__fuse_gemv(ty_runtime *rt);

/* bincount's scalars (ops_index.c). A launch of several bincounts of the same
 * labels (plan/bincount_merge.c) has args {out, x, [w]} and then, for each
 * of `nmore` merged ones, {out_k, [w_k]} (weighted[k] says whether w_k is
 * there); one pass over the labels adds into every output. */
#define TY__BINCOUNT_MAX 8
typedef struct ty__bincount_args {
  int64_t base;
  int32_t weighted; /* the first output's: args = {out, x} or {out, x, weights} */
  int32_t nmore;    /* merged outputs after the first */
  uint8_t more_weighted[TY__BINCOUNT_MAX];
} ty__bincount_args;

/* Merge bincounts of the same labels in rt->window into one launch each
 * (plan/bincount_merge.c); runs before ty__fuse. */
void ty__bincount_merge(ty_runtime *rt);

/* Window (window.c). */
void ty__window_drop(ty_runtime *rt); /* release every pending launch */
void ty__pending_cache_free(ty_runtime *rt);

/* Counter-based random numbers (kernels): value of element `index` of draw
 * `stream` under `seed`, uniform in [0, 1) with 53 random bits. */
double ty__random_u01(uint64_t seed, uint64_t stream, uint64_t index);

/* n-d iteration (iter.c): call `fn` on every innermost run of the box. Each
 * operand k has a base pointer and byte strides; dims that are contiguous for
 * all operands are collapsed first so `fn` sees the longest runs. */
typedef void (*ty_loop1d)(int64_t n, char **ptrs, const int64_t *strides, const void *aux);
void ty__foreach(int ndim, const int64_t *shape, int nops, char *const *base,
                 const int64_t (*strides)[TY_MAX_RANK], ty_loop1d fn, const void *aux);

#endif /* TY_INTERNAL_H */
