/*
 * fused.h — the description of a fused launch, shared by the fusion pass
 * (fuse.c, which writes it), the built-in task table (ops.c, which says what
 * a built-in launch does) and the kernel that runs it (fused_cpu.c).
 *
 * A fused launch is an ordinary launch of the task "fused": nothing in the
 * core but fuse.c knows it is special. Its store arguments are the stores of
 * the run's launches, deduplicated (a store, or an identical view of it, that
 * five sub-operations use is passed once); its packed scalar bytes are this
 * description:
 *
 *   ty__fhead | ty__fsub + its operands | ty__fsub + ... | scalar area
 *
 * every record 8-byte aligned, all offsets from the start of the scalar bytes
 * (which the core keeps 8-byte aligned), the whole within
 * TY_MAX_SCALAR_BYTES (the pass cuts runs that would not fit).
 *
 * An operand names either a store argument of the fused launch (ref >= 0) or
 * a block slot (ref < 0): a temporary that only this run produces and reads,
 * which lives one block at a time in a buffer of the kernel and is never
 * allocated in memory. Operands of a sub-operation are in the order of its
 * original launch's arguments (built-ins: the output first).
 */
#ifndef TY_FUSED_H
#define TY_FUSED_H

#include "kernels.h"

#define TY__FUSE_MAGIC 0x55465954u /* "TYFU" */
#define TY__FUSE_VERSION 1


typedef enum ty__fkind {
  TY__FK_UNARY = 1, /* op: ty_op; dt: compute dtype; {out, in} */
  TY__FK_BINARY,    /* op: ty_op; dt: compute dtype; {out, a, b} */
  TY__FK_WHERE,     /* dt: dtype of a, b, out; {out, cond (bool), a, b} */
  TY__FK_CAST,      /* dt2 -> dt; {out, in} (copy: dt2 == dt) */
  TY__FK_FILL,      /* dt; scalars: a ty__fillval; {out} */
  TY__FK_REDUCE,    /* op: ty__redkind; dt: acc dtype; dt2: input dtype; {acc, in} */
  TY__FK_TASK,      /* a registered task run on each block with a child context */
  TY__FK_ARGREDUCE  /* op: 0 argmin, 1 argmax; dt: i64; dt2: input dtype; {out, in}; the
                       reduced axis is the domain's last, at most TY__FUSE_ARG_ROW long
                       (so a block always holds whole rows); scalars: none */
} ty__fkind;

/* Longest row an arg reduction may fuse over: the smallest block (fused_cpu.c,
 * 512 elements) holds whole rows, so the interpreter scans each row at once. */
#define TY__FUSE_ARG_ROW 512

typedef struct ty__fhead {
  uint32_t magic;
  uint16_t version;
  uint16_t nsub;     /* sub-operations, in program order */
  uint16_t nargs;    /* store arguments of the fused launch */
  uint16_t nslots;   /* block slots (temporaries never allocated) */
  uint16_t nconsts;  /* inlined 0-d inputs (Lua numbers), 8 bytes each */
  uint16_t ndim;     /* the launch domain follows the header: ndim int64 */
  uint32_t bytes;    /* the whole description */
  uint32_t first;    /* offset of the first sub-operation record */
  uint32_t consts;   /* offset of the constants */
  uint32_t kernel_kind; /* TY__FK_FLAT (ty__fused_kernel), TY__FK_ROWS (ty__fused_kernel2),
                           TY__FK_SUM (ty__fused_kernel3) or TY__FK_ROWSUM (ty__fused_kernel4) */
  uint64_t kernel;   /* a compiled kernel for the run (fused_codegen.c), or 0 */
  uint64_t contig;   /* its layout: bit k set when argument k is contiguous, clear
                        when it is one broadcast element */
  uint64_t pending;  /* no kernel yet but one compiling: its ty__fslot (fused_codegen.c),
                        which the interpreter asks between chunks (fused_cpu.c), or 0 */
  /* what every piece asks of the sub-operations (ty__fhead_summary: fuse.c
   * fills it when it builds the description, and fused_cpu.c reads it instead
   * of walking them, ~50 instructions an element-wise op of a 64-op run);
   * valid when its flags have TY__FH_SUMMARY */
  struct ty__fsummary {
    uint16_t nops;     /* operands of all the sub-operations */
    uint16_t max_nops; /* the most of one */
    uint16_t nreduce;  /* REDUCE sub-operations */
    uint16_t flags;    /* TY__FH_* */
  } sum;
} ty__fhead;

enum { TY__FH_SUMMARY = 1u << 0, TY__FH_TASK = 1u << 1, TY__FH_ARGREDUCE = 1u << 2, TY__FH_WHOLE = 1u << 3 };

/* A compiled fused run: n elements of a flat piece; args[k] is argument k's
 * first element, desc the description (its constants and fill values). */
typedef void (*ty__fused_kernel)(int64_t n, char *const *args, const char *desc);
/* A compiled 2-D run (fused_codegen.c's generate2): n0 rows of n1 elements;
 * args[k] is argument k's first element, os[k] its byte stride between rows;
 * each argument is contiguous along a row or one element per row, as the
 * layout bits say. */
typedef void (*ty__fused_kernel2)(int64_t n0, int64_t n1, char *const *args, const int64_t *os,
                                  const char *desc);
/* A compiled flat run that ends in an f64 sum (generate3): the values the sum
 * reads, for n elements, into out (contiguous f64); the caller feeds them to
 * the sum's ordered stream as the interpreter does, so the bits are its. */
typedef void (*ty__fused_kernel3)(int64_t n, char *const *args, const char *desc, char *out);
/* A compiled 2-D run that ends in an f64 sum (generate4): n0 rows of n1 as
 * ty__fused_kernel2, the values the sum reads into out in C order. */
typedef void (*ty__fused_kernel4)(int64_t n0, int64_t n1, char *const *args, const int64_t *os,
                                  const char *desc, char *out);
enum { TY__FK_FLAT = 0, TY__FK_ROWS = 1, TY__FK_SUM = 2, TY__FK_ROWSUM = 3 };

/* Operand references. */
#define TY__FREF_CONST 0x4000 /* ref - TY__FREF_CONST: a constant (one element, read-only) */
#define TY__FREF_SLOT(i) ((int16_t)(-1 - (i)))
#define TY__FREF_IS_SLOT(r) ((r) < 0)
#define TY__FREF_IS_CONST(r) ((r) >= TY__FREF_CONST)

/* One operand of a sub-operation: 4 bytes, so that a binary op is a 32-byte
 * record and a 60-launch chain (Black-Scholes) fits in 2 KiB. */
typedef struct ty__fopnd {
  int16_t ref;   /* >= 0: store argument; slot (< 0); constant (>= TY__FREF_CONST) */
  uint8_t dtype; /* the operand's dtype */
  uint8_t bits;  /* privilege (2 bits) | projection << 2 | redop << 3 */
} ty__fopnd;

#define TY__FOPND_PRIV(o) ((ty_privilege)((o)->bits & 3u))
#define TY__FOPND_PROJ(o) ((ty_projection)(((o)->bits >> 2) & 1u))
#define TY__FOPND_REDOP(o) ((ty_redop)(((o)->bits >> 3) & 7u))

enum { TY__FS_FASTMATH = 1u << 0, TY__FS_INIT_OUT = 1u << 1 };

typedef struct ty__fsub {
  uint16_t size;       /* bytes of the record with its operands (a multiple of 8) */
  uint8_t kind;        /* ty__fkind */
  uint8_t op;          /* ty_op (UNARY, BINARY), ty__redkind (REDUCE), 0/1 (ARGREDUCE) */
  uint8_t dt, dt2;     /* see ty__fkind */
  uint8_t flags;       /* TY__FS_* */
  uint8_t nops;
  int32_t task;        /* TASK: the task's id (ty_task_at) */
  uint16_t scalar_off; /* the sub-operation's own packed scalars (8-byte aligned) */
  uint16_t scalar_len;
  ty__fopnd opnd[];    /* nops operands */
} ty__fsub;

_Static_assert(sizeof(ty__fhead) % 8 == 0, "records stay 8-byte aligned");
_Static_assert(sizeof(ty__fsub) == 16, "sub-operation records are 16 bytes + operands");
_Static_assert(sizeof(ty__fopnd) == 4, "operands are 4 bytes");
_Static_assert(TY_MAX_SCALAR_BYTES <= 65535, "offsets fit 16 bits");

static inline const int64_t *ty__fhead_domain(const ty__fhead *h) {
  return (const int64_t *)(h + 1);
}
static inline const ty__fsub *ty__fsub_first(const ty__fhead *h) {
  return (const ty__fsub *)((const char *)h + h->first);
}
static inline const ty__fsub *ty__fsub_next(const ty__fsub *s) {
  return (const ty__fsub *)((const char *)s + s->size);
}

/* h's summary of its sub-operations (ty__fhead.sum), from a walk of them. */
static inline struct ty__fsummary ty__fhead_summary(const ty__fhead *h) {
  unsigned nops = 0, max_nops = 0, nreduce = 0, flags = TY__FH_SUMMARY;
  const ty__fsub *s = ty__fsub_first(h);
  for (int k = 0; k < h->nsub; k++, s = ty__fsub_next(s)) {
    nops += s->nops;
    if (s->nops > max_nops) max_nops = s->nops;
    if (s->kind == TY__FK_TASK) flags |= TY__FH_TASK;
    if (s->kind == TY__FK_ARGREDUCE) flags |= TY__FH_ARGREDUCE;
    nreduce += s->kind == TY__FK_REDUCE;
    for (int j = 0; j < s->nops; j++)
      if (TY__FOPND_PROJ(&s->opnd[j]) == TY_PROJ_WHOLE) flags |= TY__FH_WHOLE;
  }
  return (struct ty__fsummary){.nops = (uint16_t)nops, .max_nops = (uint16_t)max_nops,
                               .nreduce = (uint16_t)nreduce, .flags = (uint16_t)flags};
}

/* The walk behind a fused run's partial failures (fused_cpu.c, "Failures"):
 * the sub-operations in program order, with the places (arguments, slots)
 * whose values are unavailable: from the start the arguments in `unavail`
 * (inputs a failed launch left unavailable). A sub-operation whose task
 * failed (failed[k], or failed NULL) or that reads or reduces into such a
 * place is skipped (skip[k] = 1) and what it writes becomes unavailable; one
 * that runs makes what it writes available again (blocks are independent,
 * so one walk holds for every block). tslot: h->nslots bytes of scratch.
 * Returns the arguments unavailable at the end; *nrun: how many run. */
static inline uint64_t ty__fused_taint(const ty__fhead *h, uint64_t unavail, const uint8_t *failed,
                                       uint8_t *skip, uint8_t *tslot, int *nrun) {
  uint64_t args = unavail;
  int run = 0;
  for (int i = 0; i < h->nslots; i++) tslot[i] = 0;
  const ty__fsub *s = ty__fsub_first(h);
  for (int k = 0; k < h->nsub; k++, s = ty__fsub_next(s)) {
    bool t = failed && failed[k];
    for (int j = 0; j < s->nops && !t; j++) {
      const int ref = s->opnd[j].ref;
      if (TY__FOPND_PRIV(&s->opnd[j]) == TY_PRIV_OUT || TY__FREF_IS_CONST(ref)) continue;
      t = TY__FREF_IS_SLOT(ref) ? tslot[-1 - ref] : (args >> ref) & 1u;
    }
    skip[k] = t;
    run += !t;
    for (int j = 0; j < s->nops; j++) {
      const int ref = s->opnd[j].ref;
      if (TY__FOPND_PRIV(&s->opnd[j]) == TY_PRIV_IN || TY__FREF_IS_CONST(ref)) continue;
      if (TY__FREF_IS_SLOT(ref)) tslot[-1 - ref] = t;
      else if (t) args |= UINT64_C(1) << ref;
      else args &= ~(UINT64_C(1) << ref); /* written again, from good inputs */
    }
  }
  if (nrun) *nrun = run;
  return args;
}

/* What a pending launch of a built-in task computes (ops.c), as a sub-
 * operation without operands: kind, op, dtypes and, for fills, the value
 * (written to *fill). False when the launch is not a built-in the fused
 * kernel implements itself (user tasks, generators, matmul, arg reductions). */
bool ty__fuse_builtin(const ty_runtime *rt, const ty_pending *l, ty__fsub *out, ty__fillval *fill);
/* The task "fused" (registered with the built-ins, ops.c). */
const ty_task *ty__fused_task(const ty_runtime *rt);
/* The task "gemv_chain" (plan/fuse_gemv.c makes its launches). */
const ty_task *ty__gemv_chain_task(const ty_runtime *rt);

/* Its CPU variant, ty__fused_variant, is declared in kernels.h (it is
 * compiled once per instruction-set level, isa.h). */

/* Compiled kernels (fused_codegen.c): a table per runtime. */
typedef struct ty__codegen ty__codegen;
ty__codegen *ty__codegen_new(void);
void ty__codegen_free(ty__codegen *cg);
/* The last-level cache's bytes as compiled runs see it: TYCHO_LLC_BYTES,
 * else the system's; 0 when unknown (streaming stores, docs/fusion.md). */
int64_t ty__llc_bytes(void);

/* Fusion's state in a runtime: the data of the task "fused" (ops.c), freed
 * with the runtime. The pass's scratch memory is kept between flushes. */
typedef struct ty__fusion {
  ty__codegen *cg;
  void *scratch;
  size_t scratch_cap;
  /* the fusion pass's remembered decisions (plan/fuse_cache.c), freed by its own function */
  void *fcache;
  void (*fcache_free)(void *fcache);
  bool fcache_off; /* TYCHO_FUSE_CACHE=0 */
} ty__fusion;
ty__fusion *ty__fusion_new(void);
void ty__fusion_free(void *state);
/* The kernel for fused launch f (its description written), or NULL: not
 * supported, not worth it yet, still compiling (in the background), or no
 * compiler. *contig gets its layout, *kind its signature (a
 * ty__fused_kernel2 when TY__FK_ROWS: cast it). Runs on the driving thread
 * (it may start a compile, or wait for one under TYCHO_CODEGEN_WAIT=1). */
ty__fused_kernel ty__codegen_kernel(ty__codegen *cg, const ty_pending *f, uint64_t *contig,
                                    uint32_t *kind, uint64_t *pending);
/* A kernel on its way: when ty__codegen_kernel gives no kernel because the
 * run's is compiling in the background, *pending gets the address of its
 * slot (0 otherwise), which lives as long as the runtime. A long
 * interpreted launch asks it between chunks and runs the rest compiled
 * once it is loaded (fused_cpu.c, "Switching inside a launch").
 * ty__fslot_kernel: the kernel (its signature in *kind, layout in *contig)
 * or NULL while it compiles or when it failed; any thread. An atomic load,
 * and at most every 2 ms (per slot, one thread at a time) a look into the
 * cache directory, which loads the kernel when its object is there.
 * done: the elements of the piece interpreted so far (the test hook's). */
typedef struct ty__fslot ty__fslot;
ty__fused_kernel ty__fslot_kernel(ty__fslot *s, int64_t done, uint32_t *kind, uint64_t *contig);
/* Tests only (test_codegen_async.c): called at each ty__fslot_kernel first. */
extern void (*ty__fslot_test_hook)(int64_t done);
/* Tests only (test_codegen_isa.c): the source ty__codegen_kernel would write
 * for f at the level of `lanes` f64 lanes (8: AVX-512, 4: AVX2) whatever the
 * CPU runs, with streaming stores when stream; nothing is compiled, loaded
 * or run, so a test can compile the text of a level the CPU lacks. *text
 * (malloc'ed, *len bytes) and *kind (TY__FK_*) set; false when no
 * generator takes f, or the level of that many lanes has no generated code
 * (0: the baseline) or is not in this build (isa.h). */
bool ty__codegen_source(const ty_pending *f, int lanes, bool stream, char **text, size_t *len,
                        uint32_t *kind);
/* Tests only: the translation unit of the n sources text[] (each written by
 * ty__codegen_source at `lanes` lanes) as a background compile makes it
 * (one unit, codegen_cc.h): the preamble once, then each kernel with its
 * file-scope names prefixed by k<hash[i] in 16 hex digits>_ (its entry
 * point k..._ty_fk...). *out malloc'ed; false when a source does not start
 * with the level's preamble. */
bool ty__codegen_unit(int lanes, const uint64_t *hash, char *const *text, const size_t *len, int n, char **out,
                      size_t *outlen);

/* Start compiling, in one compiler process per free slot, the kernels that
 * ty__codegen_kernel queued (in the background): called at the end of the
 * fusion pass, so that every new kernel of a flush shares one compile. */
void ty__codegen_start(ty__codegen *cg);

#endif /* TY_FUSED_H */
