/*
 * fused_codegen.c — compiled kernels for fused runs: C source generated from a
 * run's description, compiled by the system compiler into a shared object
 * cached on disk by the run's structure, and loaded (the approach PyTorch
 * Inductor takes on CPU).
 *
 * Why: the block interpreter (fused_cpu.c) keeps intermediates in L1 but still
 * loads and stores every intermediate once per sub-operation; on
 * Black-Scholes (62 sub-operations) it measured 1.40-1.50x the time of a
 * hand-fused SLEEF loop (one thread, CPU time, bench/fusion), above the 1.3x
 * the issue asks. Generated code keeps every intermediate in a vector
 * register: 1.05-1.15x (docs/fusion.md has the figures).
 *
 * What is compiled: runs whose sub-operations are all f64/bool element-wise
 * built-ins (arithmetic, exp log sin cos tanh sqrt pow, abs floor ceil neg,
 * maximum minimum, comparisons, and/or/not, where, f64/bool casts, fills;
 * the ufuncs of issue 18 but the integer-only bitwise ones)
 * and whose store arguments are f64 or bool, contiguous or one broadcast
 * element (ty_fk: one flat loop). Runs over a 2-D domain whose arguments are
 * each contiguous along the rows or one element per row (a column against a
 * row: a[:, None] - b[None, :]), possibly ending in an f64 min or max
 * reduction along either axis or whole, or in an f64 argmin/argmax along the
 * rows, compile to ty_fk2 (a loop over rows; generate2; a run one element
 * wide, a grid's column, gathers W rows at once: generate_col). A flat run ending
 * in an f64 sum compiles its terms to ty_fk3 (generate3), which the
 * interpreter's ordered stream adds. Anything else (integers, f32, mod,
 * casts to integers, products, sums along an axis, registered tasks, other
 * strided views) runs in the interpreter.
 * The kernel's layout assumption (which arguments are contiguous) is recorded
 * in the description; a piece whose tiles do not match it runs in the
 * interpreter.
 *
 * Results are bit-identical to the interpreter's and the unfused kernels':
 * the generated code calls the same SLEEF / libmvec functions on the same
 * vector width, the same hardware sqrt/floor/ceil, computes + - * / per
 * element in IEEE double without contraction (-ffp-contract=off), pads tails
 * with zeros as the kernels do, and isolates sin/cos lanes the same way
 * (kernels_ew.c). test_fuse.c compares the two paths. One exception: where
 * two NaNs meet in a commutative operation, x86 keeps the first operand's
 * and the compiler may order the operands either way, in the kernels and
 * here, so the NaN's sign bit may differ (test_codegen_async.c).
 *
 * When: TYCHO_CODEGEN=auto (default) compiles a run's structure when its
 * launch has at least 2^16 elements, at first sight (in the background; when
 * compiles are waited for, at its second sight or at once from 2^22
 * elements: a compile costs ~0.1-0.3 s, once per structure per machine
 * thanks to the disk cache), and a smaller one of at least 128 elements at
 * its 8th sight; `always` compiles at first sight (any size), `off` never.
 * A kernel already in the disk cache is loaded at first sight.
 * TYCHO_CACHE_DIR (default $XDG_CACHE_HOME/tycho or
 * ~/.cache/tycho) holds fk-<hash>.so and its source; TYCHO_CC (default cc)
 * is the compiler. Any failure (no compiler, no writable directory, a
 * compile error) quietly leaves the run to the interpreter.
 *
 * Compiles never stall the run: a new kernel is queued, and at the end of
 * the fusion pass every kernel queued so far starts compiling in the
 * background in ONE compiler process (codegen_cc.c: a detached compiler
 * process for one translation unit of all of them; at most CG_MAX_JOBS at
 * once, the queue waits for a free one), and the run it was queued for, and
 * every run of the structure until it is done, goes to the interpreter (fused_cpu.c), which
 * gives the same bits; the first sight after it is done loads the kernel
 * (the switch), and a long launch interpreting meanwhile takes it between
 * two chunks (its slot, ty__fslot_kernel; fused_cpu.c). A compile still
 * running when the runtime ends goes on and installs its kernel in the disk
 * cache, so the next run is warm.
 * TYCHO_CODEGEN_WAIT=1 (the default under `always`, for tests and
 * benchmarks) waits for each compile instead, as before.
 *
 * The in-memory table of loaded kernels is part of the data of the task
 * "fused" (ty__fusion, ops.c), so it belongs to its runtime and is freed
 * with it.
 */
#define _GNU_SOURCE
#include "alloc.h"
#include "codegen_cc.h"
#include "fused.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The vector ISA generated code is written for: the process's level
 * (isa.h), so that a compiled kernel calls the SLEEF / libmvec functions of
 * the width the interpreter's kernels use (same bits), and the compiler gets
 * that level's flags (ty__isa_cflags), never more than the level: a process
 * held to a lower level (TYCHO_ISA, an emulated older CPU) gets code that
 * runs where it runs. The baseline level has no generated code. */
typedef struct cg_isa {
  int w;             /* f64 lanes; 0: no code generation */
  const char *macro; /* what the compiler defines for the level */
  const char *suf;   /* SLEEF's width suffix */
  const char *mvec;  /* libmvec's name prefix */
} cg_isa;

/* The level a test forces for the source it asks for (ty__codegen_source),
 * as f64 lanes; -1: the process's level (ty__isa_lanes), always outside
 * that call. Per thread: a test's forced level never reaches a runtime
 * generating on another thread. */
static _Thread_local int forced_lanes = -1;

static cg_isa cg_isa_now(void) {
  switch (forced_lanes >= 0 ? forced_lanes : ty__isa_lanes()) {
  case 8: return (cg_isa){8, "__AVX512F__", "d8", "_ZGVeN8"};
  case 4: return (cg_isa){4, "__AVX2__", "d4", "_ZGVdN4"};
  default: return (cg_isa){0, "", "", ""};
  }
}
#define CG_W (cg_isa_now().w)
#define CG_ISA (cg_isa_now().macro)
#define CG_SUF (cg_isa_now().suf)
#define CG_MVEC (cg_isa_now().mvec)

#define CG_MIN_ELEMS ((int64_t)1 << 16)
#define CG_EAGER_ELEMS ((int64_t)1 << 22)
/* Smaller runs are compiled too once their structure came back CG_SMALL_HOT
 * times (a loop), from CG_SMALL_MIN elements: found by the structure key
 * below, such a run costs no source text per flush, and the compiled loop
 * replaces one pass over the block per sub-operation. 128, not 256: the
 * edges of CG's 256 x 256 Laplacian regions (254 elements, plan/regions.c)
 * ran interpreted, ~35k of its ~1,070k instructions an iteration. */
#define CG_SMALL_MIN ((int64_t)128)
#define CG_SMALL_HOT 8
/* Below this many elements a run compiled in the background (not waited
 * for) is compiled from its structure's CG_SMALL_HOT-th sight too, not its
 * first: a one-off run (a program's set-up, the first iteration's) does not
 * pay for its compile, a loop's run comes back within its first flushes.
 * An interpreted run of 2^18 elements costs at most ~0.5 ms more than its
 * kernel's (the interpreter takes 1.5-3.5x), 7 of them less than the
 * kernel's share of a unit's compile (~17 ms fixed, tens of ms per kernel:
 * bench/README.md, "Cold start, a cheaper link and a shorter nice"). CG
 * 256^2 (65,536 elements): of its 11 kernels compiled at first sight, the
 * set-up's and the first iteration's ran 1-3 times a process (session 19,
 * bench/README.md "Cold start, loops first"). */
#define CG_HOT_ELEMS ((int64_t)1 << 18)
#define CG_MAX_PRE 1024 /* structure keys remembered */
/* A run of this many elements or more certainly amortises its compile (the
 * interpreter takes 1.5-3.5x the kernel's time; k-means 10M's 100M-element
 * rows 3.3x, and their kernels compile in 0.11-0.13 s of CPU), so its
 * kernel is compiled at once (codegen_cc.c: no hold), ahead of the queue, in a compile slot of its own when both
 * others are busy. */
#define CG_URGENT_ELEMS ((int64_t)1 << 25)
/* A structure of a run of CG_HOT_ELEMS or more first seen CG_LATE_NS after
 * the runtime's first compile started (a later phase: a chain cut elsewhere
 * at a step's or a checksum's end) is not compiled at first sight but once
 * its runs interpreted so far come to CG_LATE_ELEMS elements (an urgent run
 * at once); one still short of that when the runtime ends compiles then,
 * for the next run. Rent, then buy: what its runs have already cost the
 * interpreter (~1.3 ns of CPU an element more than the kernel: the stencil
 * 2048^2, 2.46 s interpreted against 1.41 s warm for 800M elements) is then
 * about what its compile takes from the run's cores (a unit of one kernel,
 * 50-60 ms of compiler CPU), the run of an urgent kernel. A program's
 * first kernels (its set-up's, its loop's: seen within CG_LATE_NS of its
 * first compile) compile at first sight as before. The stencil 2048^2 (4M
 * elements) compiled 5 kernels in 3 units, the last two (0.12 s of
 * compiler CPU, at nice 0 beside the run) for 3 chains cut at a step's
 * end, first seen 0.3-0.7 s in and 4-8 times in all (bench/README.md,
 * "Cold start, rent then buy: session 20"). */
#define CG_LATE_NS ((int64_t)100000000)
#define CG_LATE_ELEMS CG_URGENT_ELEMS

/* A kernel on its way (fused.h): made when its compile is queued, published
 * when loaded, by the pass (job_done) or by an interpreted piece that found
 * its object in the cache directory first (ty__fslot_kernel). Never moved
 * or freed before the runtime ends: launch descriptions point at it. */
enum { SLOT_WAITING = 0, SLOT_LOOKING, SLOT_DONE };
struct ty__fslot {
  uint64_t fn;        /* the entry point once loaded (atomic, release/acquire); 0 */
  int state;          /* SLOT_* (atomic): DONE when loaded or failed (nobody looks again) */
  int64_t next_look;  /* when a piece may look into the directory next (ns, atomic) */
  uint32_t kind;      /* the kernel's signature and layout (its source's) */
  uint64_t contig;
  uint64_t hash;
  void *handle;       /* what a piece loaded (dlclose'd with the table) */
  char so[1200];
};

typedef struct cg_entry {
  uint64_t hash;
  uint32_t seen;
  bool failed;
  uint32_t kind;      /* its entry point: ty_fk, ty_fk2 (TY__FK_ROWS), ty_fk3 (TY__FK_SUM) or
                         ty_fk4 (TY__FK_ROWSUM) */
  ty__fused_kernel fn;
  void *handle;
  int job;            /* 1 + the slot of its compile while in flight; 0: none */
  bool queued;        /* waiting in the queue for a compile, its source kept: */
  char *text;
  size_t len;
  bool urgent;        /* a run of CG_URGENT_ELEMS or more wants it */
  int64_t elems;      /* its largest run's elements (ty__codegen_start's hold) */
  bool deferred;      /* late (CG_LATE_NS), not compiled yet: text kept for the runtime's end */
  ty__fslot *slot;    /* made when queued (fused.h), or NULL */
} cg_entry;

/* A run's structure (its key: what generate and generate2 read of it, the
 * constants' values excepted) and what came of it, so that a run seen before
 * finds its kernel without writing its source again. */
typedef struct cg_pre {
  uint64_t hash;
  unsigned char *key;
  size_t len;
  uint32_t seen;
  bool late;      /* first seen CG_LATE_NS after the first compile started */
  int64_t interp; /* elements of its runs so far (a late one's: CG_LATE_ELEMS) */
  int entry;      /* index in ty__codegen.e; -1: no kernel for it; -2: not generated yet */
  uint32_t kind;  /* what generation gave: TY__FK_FLAT or TY__FK_ROWS */
  uint64_t contig;
} cg_pre;

/* Compiles running at once in the background (each a compiler process,
 * compiling the kernels queued when it started: codegen_cc.h), and the
 * kernels waiting for one. */
#define CG_MAX_JOBS 2
#define CG_SLOTS (CG_MAX_JOBS + 1) /* the last one for urgent compiles only */
#define CG_QUEUE_MAX 64

typedef struct cg_job {
  ty__ccjob cc;
  int n;
  int ent[TY__CC_MAX_KERNELS]; /* its kernels: indices in ty__codegen.e */
} cg_job;

enum { CG_NT_OFF, CG_NT_AUTO, CG_NT_ALWAYS }; /* TYCHO_NT_STORES (nt_mode_of_env) */
static int nt_mode_of_env(void);

struct ty__codegen {
  int mode; /* 0 off, 1 auto, 2 always */
  int nt_mode;  /* streaming stores: CG_NT_OFF, CG_NT_AUTO, CG_NT_ALWAYS */
  int64_t llc;  /* the last-level cache's bytes (ty__llc_bytes; 0 unknown) */
  bool wait;    /* wait for each compile (TYCHO_CODEGEN_WAIT; default: under always) */
  int jobs, max_jobs; /* compiles in flight, and the bound */
  cg_job *slot[CG_SLOTS];    /* the compiles in flight (NULL: a free slot) */
  int queue[CG_QUEUE_MAX];   /* kernels (indices in e) waiting for a compile, first seen first */
  int nqueue;
  char *pre_text;            /* the preamble's text, its length (made once) */
  size_t pre_len;
  int64_t next_poll;  /* when to poll them next (ns, CLOCK_MONOTONIC_COARSE) */
  int64_t born;       /* when this table was made (ns, CLOCK_MONOTONIC_COARSE): hold_for */
  int64_t first_job;  /* when its first background compile started (ns; 0: none yet) */
  bool dir_made;      /* the cache directory exists (made once) */
  char dir[1024];
  char cc[256];
  cg_entry *e;
  int n, cap;
  cg_pre *pre;
  int npre, cap_pre;
  ty_sbuf key; /* scratch for the key being looked up */
};

ty__codegen *ty__codegen_new(void) {
  ty__codegen *cg = ty__calloc(1, sizeof *cg);
  if (!cg) return NULL;
  const char *m = getenv("TYCHO_CODEGEN");
  cg->mode = 1;
  if (m && (!strcmp(m, "off") || !strcmp(m, "0") || !strcmp(m, "false"))) cg->mode = 0;
  if (m && (!strcmp(m, "always") || !strcmp(m, "on") || !strcmp(m, "1") || !strcmp(m, "true")))
    cg->mode = 2;
  if (CG_W == 0) cg->mode = 0;
  const char *w = getenv("TYCHO_CODEGEN_WAIT");
  cg->wait = w && *w ? strcmp(w, "0") && strcmp(w, "off") && strcmp(w, "false") : cg->mode == 2;
  cg->max_jobs = CG_MAX_JOBS;
  cg->born = ty__cc_now_ns();
  cg->nt_mode = nt_mode_of_env();
  cg->llc = ty__llc_bytes();
  const char *d = getenv("TYCHO_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
  if (d && *d) snprintf(cg->dir, sizeof cg->dir, "%s", d);
  else if (x && *x) snprintf(cg->dir, sizeof cg->dir, "%s/tycho", x);
  else if (h && *h) snprintf(cg->dir, sizeof cg->dir, "%s/.cache/tycho", h);
  else snprintf(cg->dir, sizeof cg->dir, "/tmp/tycho-cache-%ld", (long)getuid());
  const char *cc = getenv("TYCHO_CC");
  snprintf(cg->cc, sizeof cg->cc, "%s", cc && *cc ? cc : "cc");
  return cg;
}

static cg_job *start_queued(ty__codegen *cg);

void ty__codegen_free(ty__codegen *cg) {
  if (!cg) return;
  /* kernels still queued start compiling now, for the next run (they
   * finish on their own, like the compiles in flight: codegen_cc.h), and so
   * do the deferred ones (CG_LATE_NS) */
  for (int i = 0; i < cg->n; i++) {
    cg_entry *e = &cg->e[i];
    if (!e->deferred || !e->text || e->queued || e->job || e->fn || e->failed) continue;
    if (cg->nqueue >= CG_QUEUE_MAX) break;
    e->deferred = false;
    e->queued = true;
    cg->queue[cg->nqueue++] = i;
  }
  for (cg_job *j; cg->nqueue > 0 && (j = start_queued(cg));) {
    ty__cc_release(&j->cc);
    free(j);
  }
  for (int s = 0; s < CG_SLOTS; s++)
    if (cg->slot[s]) {
      ty__cc_release(&cg->slot[s]->cc);
      free(cg->slot[s]);
    }
  for (int i = 0; i < cg->n; i++) {
    free(cg->e[i].text);
    if (cg->e[i].handle) dlclose(cg->e[i].handle);
    if (cg->e[i].slot && cg->e[i].slot->handle) dlclose(cg->e[i].slot->handle);
    free(cg->e[i].slot);
  }
  free(cg->e);
  free(cg->pre_text);
  for (int i = 0; i < cg->npre; i++) free(cg->pre[i].key);
  free(cg->pre);
  free(cg->key.p);
  free(cg);
}

/* ---- source text --------------------------------------------------------------------- */

/* printf into buf, truncating (vsnprintf: no truncation warnings for the
 * expression buffers, which are sized for any expression generated) */
static void fmt(char *buf, size_t cap, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *buf, size_t cap, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, cap, f, ap);
  va_end(ap);
}

/* Generated source goes into the core's growable text buffer (sbuf.c). */
#define put ty__sb_printf
typedef ty_sbuf sbuf;

/* Types and helpers of every generated file. vd: CG_W doubles; vm: lane
 * masks (-1 true, 0 false), what GCC's vector comparisons give. */
static void preamble(sbuf *b) {
  put(b, "/* tycho: a fused run compiled by runtime/src/exec/fused_codegen.c */\n");
  /* Passes that change nothing in the generated kernels but cost compile
   * CPU: gcc 12 at -O1 gives the same assembly without them for 18 of the
   * 19 units of eight bench programs (the 19th, k-means' row argmin: its
   * spill slots renumbered, as many instructions), in 10% fewer cc1
   * instructions for CG 256^2's three units (CCP alone ~8%; a cc1's fixed
   * start is ~57M of a unit's 190-250M). A pragma, not flags: clang
   * ignores it (under -w), where unknown -f flags fail its compile; flags
   * would save 14% (bench/README.md, session 21). */
  put(b, "#pragma GCC optimize (\"no-tree-ccp\", \"no-tree-bit-ccp\", \"no-dse\", \"no-ipa-pure-const\", "
         "\"no-ipa-reference\", \"no-if-conversion2\", \"no-compare-elim\")\n");
  put(b, "#ifndef %s\n#error \"tycho: this kernel needs the runtime's vector ISA (%s)\"\n#endif\n", CG_ISA, CG_ISA);
  /* the flags are part of the text, so of the cache key (fk-<hash>.so) */
  put(b, "/* compiled with: %s */\n", forced_lanes >= 0 ? ty__isa_cflags_of(forced_lanes) : ty__isa_cflags());
  put(b, "typedef long long i64;\ntypedef unsigned char u8;\n");
  put(b, "typedef double vd __attribute__((vector_size(%d)));\n", CG_W * 8);
  put(b, "typedef i64 vm __attribute__((vector_size(%d)));\n", CG_W * 8);
  put(b, "#define W %d\n", CG_W);
  static const char *const sleef[] = {"exp", "log", "sin", "cos", "tanh"};
  for (int i = 0; i < 5; i++) put(b, "vd Sleef_%s%s_u10(vd);\n", sleef[i], CG_SUF);
  put(b, "vd Sleef_pow%s_u10(vd, vd);\nvd Sleef_tanh%s_u35(vd);\n", CG_SUF, CG_SUF);
  /* the ufuncs of issue 18 (kernels_ew.c): the same SLEEF functions, the
   * same wider-type recomputation of lanes past SLEEF's bounds (fixl) */
  static const char *const sleef2[] = {"tan",   "asin",  "acos",  "atan", "sinh",
                                       "cosh",  "asinh", "acosh", "atanh", "expm1",
                                       "log1p", "log2",  "log10", "exp2", "cbrt"};
  for (int i = 0; i < 15; i++) put(b, "vd Sleef_%s%s_u10(vd);\n", sleef2[i], CG_SUF);
  put(b, "vd Sleef_atan2%s_u10(vd, vd);\nvd Sleef_hypot%s_u05(vd, vd);\n", CG_SUF, CG_SUF);
  put(b, "long double sinhl(long double);\nlong double coshl(long double);\n"
         "long double asinhl(long double);\nlong double acoshl(long double);\n"
         "long double log1pl(long double);\n"
         "double fmod(double, double);\ndouble floor(double);\ndouble copysign(double, double);\n");
  static const char *const mvec[] = {"exp", "log", "sin", "cos"};
  for (int i = 0; i < 4; i++) put(b, "vd %sv_%s(vd);\n", CG_MVEC, mvec[i]);
  put(b, "vd %svv_pow(vd, vd);\n", CG_MVEC);
  put(b,
      "static inline vd ld(const char *p) { vd v; __builtin_memcpy(&v, p, sizeof v); return v; }\n"
      "static inline void st(char *p, vd v) { __builtin_memcpy(p, &v, sizeof v); }\n"
      "static inline vd bc(double x) { return (vd){0} + x; }\n"
      "static inline vm bcm(int t) { return (vm){0} - (i64)(t != 0); }\n"
      "static inline vm ldm(const char *p) { vm m; for (int j = 0; j < W; j++) m[j] = -(i64)(p[j] != 0); return m; }\n"
      "static inline void stm(char *p, vm m) { for (int j = 0; j < W; j++) p[j] = (char)(m[j] & 1); }\n"
      "static inline vd sel(vm m, vd a, vd b) { return (vd)((m & (vm)a) | (~m & (vm)b)); }\n"
      "static inline vd vabs(vd x) { return (vd)((vm)x & (vm){0} + 0x7fffffffffffffffLL); }\n"
      "static inline vd m2d(vm m) { return sel(m, bc(1.0), bc(0.0)); }\n");
  if (CG_W == 8)
    put(b, "#ifdef __clang__\n" /* clang (as TYCHO_CC) has no _mask form of it */
           "static inline vd vsqrt(vd x) { return __builtin_ia32_sqrtpd512(x, 4); }\n"
           "#else\n"
           "static inline vd vsqrt(vd x) { return __builtin_ia32_sqrtpd512_mask(x, x, (unsigned char)-1, 4); }\n"
           "#endif\n"
           "static inline vd vfloor(vd x) { return __builtin_ia32_rndscalepd_mask(x, 1, x, (unsigned char)-1, 4); }\n"
           "static inline vd vceil(vd x) { return __builtin_ia32_rndscalepd_mask(x, 2, x, (unsigned char)-1, 4); }\n");
  else
    put(b, "static inline vd vsqrt(vd x) { return __builtin_ia32_sqrtpd256(x); }\n"
           "static inline vd vfloor(vd x) { return __builtin_ia32_roundpd256(x, 1); }\n"
           "static inline vd vceil(vd x) { return __builtin_ia32_roundpd256(x, 2); }\n");
  if (CG_W == 8)
    put(b, "static inline vd vrint(vd x) { return __builtin_ia32_rndscalepd_mask(x, 8, x, (unsigned char)-1, 4); }\n"
           "static inline vd vtrunc(vd x) { return __builtin_ia32_rndscalepd_mask(x, 11, x, (unsigned char)-1, 4); }\n");
  else
    put(b, "static inline vd vrint(vd x) { return __builtin_ia32_roundpd256(x, 8); }\n"
           "static inline vd vtrunc(vd x) { return __builtin_ia32_roundpd256(x, 11); }\n");
  put(b,
      "static inline vd fixl(vd r, vd x, double big, long double (*f)(long double)) {\n"
      "  for (int j = 0; j < W; j++) if (__builtin_fabs(x[j]) > big) r[j] = (double)f((long double)x[j]);\n"
      "  return r;\n"
      "}\n"
      "static inline vd vsign(vd x) { return sel(x > bc(0.0), bc(1.0), sel(x < bc(0.0), bc(-1.0), sel(x == bc(0.0), bc(0.0), x))); }\n"
      "static inline double fdiv1(double a, double b) {\n"
      "  if (!b) return a / b;\n"
      "  double mod = fmod(a, b), div = (a - mod) / b;\n"
      "  if (mod) { if ((b < 0) != (mod < 0)) div -= 1; }\n"
      "  if (!div) return copysign(0, a / b);\n"
      "  double f = floor(div);\n"
      "  if (div - f > 0.5) f += 1;\n"
      "  return f;\n"
      "}\n"
      "static inline vd vfdiv(vd x, vd y) { vd r; for (int j = 0; j < W; j++) r[j] = fdiv1(x[j], y[j]); return r; }\n");
  /* sin/cos: lane isolation as in kernels_ew.c (TRIG_SMALL) */
  put(b,
      "static inline vd trig(vd (*f)(vd), vd x) {\n"
      "  int big = 0;\n"
      "  for (int j = 0; j < W; j++) big += !(x[j] < 15.0 && x[j] > -15.0);\n"
      "  if (!big) return f(x);\n"
      "  vd r;\n"
      "  for (int j = 0; j < W; j++) { vd l = (vd){0}; l[j] = x[j]; r[j] = f(l)[j]; }\n"
      "  return r;\n"
      "}\n");
}

/* The C expression type of an operand's dtype: 'd' f64, 'm' bool. */
static char vtype(ty_dtype t) { return t == TY_F64 ? 'd' : t == TY_BOOL ? 'm' : 0; }

typedef struct gen {
  sbuf *b;
  const ty__fhead *h;
  const ty_pending *f;
  uint64_t contig;    /* args read/written as W contiguous elements */
  uint64_t nt;        /* args stored once, at the body's end, with stn (nt_args) */
  uint64_t late;      /* args stored once, at the body's end, with st (late_args) */
  char argv_[TY_MAX_ARGS][16]; /* the variable holding an argument's current value */
  char slotv[512][16];
  int npow;
  bool ok;
} gen;

/* An operand's value as an expression (declaring a load when needed). */
static void operand(gen *g, const ty__fopnd *o, char *out, size_t len) {
  const ty_dtype t = (ty_dtype)o->dtype;
  if (TY__FREF_IS_CONST(o->ref)) {
    unsigned off = g->h->consts + 8u * (unsigned)(o->ref - TY__FREF_CONST);
    /* f64 constants are copied into a local array at entry (K), which the
     * compiler keeps in registers: the stores of the loop cannot alias it */
    if (t == TY_F64) fmt(out, len, "bc(K[%d])", o->ref - TY__FREF_CONST);
    else fmt(out, len, "bcm(*(const u8 *)(D + %u))", off);
  } else if (TY__FREF_IS_SLOT(o->ref)) {
    int s = -1 - o->ref;
    if (s >= 512 || !g->slotv[s][0]) {
      g->ok = false;
      fmt(out, len, "0");
      return;
    }
    fmt(out, len, "%s", g->slotv[s]);
  } else {
    int k = o->ref;
    if (!g->argv_[k][0]) {
      bool c = (g->contig >> k) & 1u;
      fmt(g->argv_[k], sizeof g->argv_[k], "a%d", k);
      if (t == TY_F64 && c) put(g->b, "  vd a%d = ld(p[%d]);\n", k, k);
      else if (t == TY_F64) put(g->b, "  vd a%d = bc(Bc[%d]);\n", k, k); /* read at entry */
      else if (c) put(g->b, "  vm a%d = ldm(p[%d]);\n", k, k);
      else put(g->b, "  vm a%d = bcm(*(const u8 *)p[%d]);\n", k, k);
    }
    fmt(out, len, "%s", g->argv_[k]);
  }
}

/* A value as the other type: bool operands of f64 ops (and/or/not read
 * "x != 0"). */
static void as_mask(char t, const char *x, char *out, size_t len) {
  if (t == 'm') fmt(out, len, "%s", x);
  else fmt(out, len, "(%s != 0)", x);
}

/* One sub-operation: "vX v<k> = expr;", then its output is recorded. */
static void sub(gen *g, const ty__fsub *s, int k) {
  char x[96] = "", y[96] = "", z[96] = "", e[512] = "";
  char rt = 0; /* result type */
  const int nops = s->nops;
  if (nops < 1 || nops > 4) {
    g->ok = false;
    return;
  }
  const ty_dtype dt = (ty_dtype)s->dt;
  const bool fast = s->flags & TY__FS_FASTMATH;
  char xt = nops > 1 ? vtype((ty_dtype)s->opnd[1].dtype) : 0;
  char yt = nops > 2 ? vtype((ty_dtype)s->opnd[2].dtype) : 0;
  for (int j = 0; j < nops; j++)
    if (!vtype((ty_dtype)s->opnd[j].dtype)) {
      g->ok = false;
      return;
    }
  if (nops > 1) operand(g, &s->opnd[1], x, sizeof x);
  if (nops > 2) operand(g, &s->opnd[2], y, sizeof y);
  if (nops > 3) operand(g, &s->opnd[3], z, sizeof z);
  switch (s->kind) {
  case TY__FK_UNARY:
    if (dt == TY_F64 && xt == 'd') {
      rt = 'd';
      switch ((ty_op)s->op) {
      case TY_OP_NEG: fmt(e, sizeof e, "-%s", x); break;
      case TY_OP_EXP: fmt(e, sizeof e, fast ? "%sv_exp(%s)" : "Sleef_exp%s_u10(%s)", fast ? CG_MVEC : CG_SUF, x); break;
      case TY_OP_LOG: fmt(e, sizeof e, fast ? "%sv_log(%s)" : "Sleef_log%s_u10(%s)", fast ? CG_MVEC : CG_SUF, x); break;
      case TY_OP_SIN: fmt(e, sizeof e, fast ? "trig(%sv_sin, %s)" : "trig(Sleef_sin%s_u10, %s)", fast ? CG_MVEC : CG_SUF, x); break;
      case TY_OP_COS: fmt(e, sizeof e, fast ? "trig(%sv_cos, %s)" : "trig(Sleef_cos%s_u10, %s)", fast ? CG_MVEC : CG_SUF, x); break;
      case TY_OP_TANH: fmt(e, sizeof e, "Sleef_tanh%s_%s(%s)", CG_SUF, fast ? "u35" : "u10", x); break;
      case TY_OP_SQRT: fmt(e, sizeof e, "vsqrt(%s)", x); break;
      case TY_OP_ABS: fmt(e, sizeof e, "vabs(%s)", x); break;
      case TY_OP_FLOOR: fmt(e, sizeof e, "vfloor(%s)", x); break;
      case TY_OP_CEIL: fmt(e, sizeof e, "vceil(%s)", x); break;
      case TY_OP_NOT: rt = 'm'; fmt(e, sizeof e, "(%s == 0)", x); break;
      case TY_OP_TAN: fmt(e, sizeof e, "trig(Sleef_tan%s_u10, %s)", CG_SUF, x); break;
      case TY_OP_ARCSIN: fmt(e, sizeof e, "Sleef_asin%s_u10(%s)", CG_SUF, x); break;
      case TY_OP_ARCCOS: fmt(e, sizeof e, "Sleef_acos%s_u10(%s)", CG_SUF, x); break;
      case TY_OP_ARCTAN: fmt(e, sizeof e, "Sleef_atan%s_u10(%s)", CG_SUF, x); break;
      case TY_OP_ARCTANH: fmt(e, sizeof e, "Sleef_atanh%s_u10(%s)", CG_SUF, x); break;
      case TY_OP_EXPM1: fmt(e, sizeof e, "Sleef_expm1%s_u10(%s)", CG_SUF, x); break;
      case TY_OP_LOG2: fmt(e, sizeof e, "Sleef_log2%s_u10(%s)", CG_SUF, x); break;
      case TY_OP_LOG10: fmt(e, sizeof e, "Sleef_log10%s_u10(%s)", CG_SUF, x); break;
      case TY_OP_EXP2: fmt(e, sizeof e, "Sleef_exp2%s_u10(%s)", CG_SUF, x); break;
      case TY_OP_CBRT: fmt(e, sizeof e, "Sleef_cbrt%s_u10(%s)", CG_SUF, x); break;
      /* the bounds of kernels_ew.c's FIX_ABS_D */
      case TY_OP_SINH: fmt(e, sizeof e, "fixl(Sleef_sinh%s_u10(%s), %s, 709.0, sinhl)", CG_SUF, x, x); break;
      case TY_OP_COSH: fmt(e, sizeof e, "fixl(Sleef_cosh%s_u10(%s), %s, 709.0, coshl)", CG_SUF, x, x); break;
      case TY_OP_ARCSINH: fmt(e, sizeof e, "fixl(Sleef_asinh%s_u10(%s), %s, 1e154, asinhl)", CG_SUF, x, x); break;
      case TY_OP_ARCCOSH: fmt(e, sizeof e, "fixl(Sleef_acosh%s_u10(%s), %s, 1e154, acoshl)", CG_SUF, x, x); break;
      case TY_OP_LOG1P: fmt(e, sizeof e, "fixl(Sleef_log1p%s_u10(%s), %s, 1e306, log1pl)", CG_SUF, x, x); break;
      case TY_OP_SIGN: fmt(e, sizeof e, "vsign(%s)", x); break;
      case TY_OP_RINT: fmt(e, sizeof e, "vrint(%s)", x); break;
      case TY_OP_TRUNC: fmt(e, sizeof e, "vtrunc(%s)", x); break;
      case TY_OP_RECIPROCAL: fmt(e, sizeof e, "bc(1.0) / %s", x); break;
      case TY_OP_ISNAN: rt = 'm'; fmt(e, sizeof e, "(%s != %s)", x, x); break;
      case TY_OP_ISINF: rt = 'm'; fmt(e, sizeof e, "((%s == bc(__builtin_inf())) | (%s == bc(-__builtin_inf())))", x, x); break;
      case TY_OP_ISFINITE: rt = 'm'; fmt(e, sizeof e, "((%s - %s) == 0)", x, x); break;
      default: g->ok = false;
      }
    } else if (dt == TY_BOOL && xt == 'm') {
      rt = 'm';
      switch ((ty_op)s->op) {
      case TY_OP_NOT:
      case TY_OP_INVERT: fmt(e, sizeof e, "~%s", x); break;
      case TY_OP_ABS:
      case TY_OP_FLOOR:
      case TY_OP_CEIL:
      case TY_OP_RINT:
      case TY_OP_TRUNC: fmt(e, sizeof e, "%s", x); break;
      case TY_OP_ISNAN:
      case TY_OP_ISINF: fmt(e, sizeof e, "bcm(0)"); break;
      case TY_OP_ISFINITE: fmt(e, sizeof e, "bcm(1)"); break;
      default: g->ok = false;
      }
    } else {
      g->ok = false;
    }
    break;
  case TY__FK_BINARY: {
    char mx[128], my[128];
    as_mask(xt, x, mx, sizeof mx);
    as_mask(yt, y, my, sizeof my);
    if (dt == TY_F64 && xt == 'd' && yt == 'd') {
      rt = 'd';
      switch ((ty_op)s->op) {
      case TY_OP_ADD: fmt(e, sizeof e, "%s + %s", x, y); break;
      case TY_OP_SUB: fmt(e, sizeof e, "%s - %s", x, y); break;
      case TY_OP_MUL: fmt(e, sizeof e, "%s * %s", x, y); break;
      case TY_OP_DIV: fmt(e, sizeof e, "%s / %s", x, y); break;
      case TY_OP_POW: {
        /* the kernels square when the exponent is one broadcast element equal
         * to 2 (checked per call, as they do per run) */
        const ty__fopnd *o = &s->opnd[2];
        bool scalar = TY__FREF_IS_CONST(o->ref) || (o->ref >= 0 && !((g->contig >> o->ref) & 1u));
        char pw[32];
        fmt(pw, sizeof pw, fast ? "%svv_pow" : "Sleef_pow%s_u10", fast ? CG_MVEC : CG_SUF);
        if (scalar) {
          int q = g->npow++;
          fmt(e, sizeof e, "sq[%d] ? %s * %s : %s(%s, %s)", q, x, x, pw, x, y); /* sq: set at entry */
        } else {
          fmt(e, sizeof e, "%s(%s, %s)", pw, x, y);
        }
        break;
      }
      case TY_OP_MAXIMUM: fmt(e, sizeof e, "sel((%s >= %s) | (%s != %s), %s, %s)", x, y, x, x, x, y); break;
      case TY_OP_MINIMUM: fmt(e, sizeof e, "sel((%s <= %s) | (%s != %s), %s, %s)", x, y, x, x, x, y); break;
      case TY_OP_LT: rt = 'm'; fmt(e, sizeof e, "(%s < %s)", x, y); break;
      case TY_OP_LE: rt = 'm'; fmt(e, sizeof e, "(%s <= %s)", x, y); break;
      case TY_OP_GT: rt = 'm'; fmt(e, sizeof e, "(%s > %s)", x, y); break;
      case TY_OP_GE: rt = 'm'; fmt(e, sizeof e, "(%s >= %s)", x, y); break;
      case TY_OP_EQ: rt = 'm'; fmt(e, sizeof e, "(%s == %s)", x, y); break;
      case TY_OP_NE: rt = 'm'; fmt(e, sizeof e, "(%s != %s)", x, y); break;
      case TY_OP_AND: rt = 'm'; fmt(e, sizeof e, "(%s & %s)", mx, my); break;
      case TY_OP_OR: rt = 'm'; fmt(e, sizeof e, "(%s | %s)", mx, my); break;
      case TY_OP_XOR: rt = 'm'; fmt(e, sizeof e, "(%s ^ %s)", mx, my); break;
      case TY_OP_ARCTAN2: fmt(e, sizeof e, "Sleef_atan2%s_u10(%s, %s)", CG_SUF, x, y); break;
      case TY_OP_HYPOT: fmt(e, sizeof e, "Sleef_hypot%s_u05(%s, %s)", CG_SUF, x, y); break;
      case TY_OP_FLOORDIV: fmt(e, sizeof e, "vfdiv(%s, %s)", x, y); break;
      default: g->ok = false;
      }
    } else if (dt == TY_BOOL && xt == 'm' && yt == 'm') {
      rt = 'm';
      switch ((ty_op)s->op) {
      case TY_OP_MAXIMUM:
      case TY_OP_OR: fmt(e, sizeof e, "(%s | %s)", x, y); break;
      case TY_OP_MINIMUM:
      case TY_OP_AND:
      case TY_OP_BITAND: fmt(e, sizeof e, "(%s & %s)", x, y); break;
      case TY_OP_XOR:
      case TY_OP_BITXOR: fmt(e, sizeof e, "(%s ^ %s)", x, y); break;
      case TY_OP_BITOR: fmt(e, sizeof e, "(%s | %s)", x, y); break;
      case TY_OP_LT: fmt(e, sizeof e, "(~%s & %s)", x, y); break;
      case TY_OP_LE: fmt(e, sizeof e, "(~%s | %s)", x, y); break;
      case TY_OP_GT: fmt(e, sizeof e, "(%s & ~%s)", x, y); break;
      case TY_OP_GE: fmt(e, sizeof e, "(%s | ~%s)", x, y); break;
      case TY_OP_EQ: fmt(e, sizeof e, "~(%s ^ %s)", x, y); break;
      case TY_OP_NE: fmt(e, sizeof e, "(%s ^ %s)", x, y); break;
      default: g->ok = false;
      }
    } else {
      g->ok = false;
    }
    break;
  }
  case TY__FK_WHERE:
    if (xt != 'm') g->ok = false;
    else if (dt == TY_F64 && yt == 'd') rt = 'd', fmt(e, sizeof e, "sel(%s, %s, %s)", x, y, z);
    else if (dt == TY_BOOL && yt == 'm') rt = 'm', fmt(e, sizeof e, "((%s & %s) | (~%s & %s))", x, y, x, z);
    else g->ok = false;
    break;
  case TY__FK_CAST:
    if (s->dt2 == s->dt) rt = xt, fmt(e, sizeof e, "%s", x);
    else if (dt == TY_F64 && xt == 'm') rt = 'd', fmt(e, sizeof e, "m2d(%s)", x);
    else if (dt == TY_BOOL && xt == 'd') rt = 'm', fmt(e, sizeof e, "(%s != 0)", x);
    else g->ok = false;
    break;
  case TY__FK_FILL:
    /* ty__fillval: f (double) then i (int64) */
    if (dt == TY_F64) rt = 'd', fmt(e, sizeof e, "bc(*(const double *)(D + %u))", (unsigned)s->scalar_off);
    else if (dt == TY_BOOL) rt = 'm', fmt(e, sizeof e, "bcm(*(const i64 *)(D + %u) != 0)", (unsigned)s->scalar_off + 8u);
    else g->ok = false;
    break;
  default: g->ok = false;
  }
  if (!g->ok) return;
  if (rt != vtype((ty_dtype)s->opnd[0].dtype)) {
    g->ok = false;
    return;
  }
  put(g->b, "  v%c v%d = %s;\n", rt, k, e);
  const ty__fopnd *o = &s->opnd[0];
  if (TY__FREF_IS_SLOT(o->ref)) {
    int sl = -1 - o->ref;
    if (sl >= 512) g->ok = false;
    else fmt(g->slotv[sl], sizeof g->slotv[sl], "v%d", k);
  } else if (o->ref >= 0) {
    bool c = (g->contig >> o->ref) & 1u;
    if (!c) { /* a broadcast output would be written by every lane: interpreter */
      g->ok = false;
      return;
    }
    if (!(((g->nt | g->late) >> o->ref) & 1u))
      put(g->b, rt == 'd' ? "  st(p[%d], v%d);\n" : "  stm(p[%d], v%d);\n", o->ref, k);
    fmt(g->argv_[o->ref], sizeof g->argv_[o->ref], "v%d", k);
  } else {
    g->ok = false;
  }
}

/* The squaring flags of pow sub-operations whose exponent is one element
 * (the kernels square when it is 2): "sq[q] = <exponent> == 2.0;", the
 * exponent read from the constants or from `base`[k] (the argument's
 * address: a[k] for a flat run, the row's ra[k] for a 2-D one). */
static void pow_flags(sbuf *b, const ty__fhead *h, uint64_t c, const char *indent, const char *base) {
  int q = 0;
  const ty__fsub *s = ty__fsub_first(h);
  for (int k = 0; k < h->nsub; k++, s = ty__fsub_next(s)) {
    if (s->kind != TY__FK_BINARY || s->op != TY_OP_POW || s->dt != TY_F64) continue;
    const ty__fopnd *o = &s->opnd[2];
    if (TY__FREF_IS_CONST(o->ref))
      put(b, "%ssq[%d] = *(const double *)(D + %u) == 2.0;\n", indent, q++,
          h->consts + 8u * (unsigned)(o->ref - TY__FREF_CONST));
    else if (o->ref >= 0 && !((c >> o->ref) & 1u))
      put(b, "%ssq[%d] = *(const double *)%s[%d] == 2.0;\n", indent, q++, base, o->ref);
  }
}

/* The layout of a flat run's store arguments: bit k of *contig when argument
 * k is contiguous, clear when it is one broadcast element; false for any
 * other view or dtype. Argument acc (>= 0: a sum's accumulator, generate3)
 * is never touched by the kernel: an f64 REDUCE argument. */
static bool flat_args(const ty_pending *f, int acc, uint64_t *contig) {
  uint64_t c = 0;
  for (int k = 0; k < f->nargs; k++) {
    const ty_arg *a = &f->args[k];
    const ty_store *s = a->store;
    if (k == acc) {
      if (a->priv != TY_PRIV_REDUCE || s->dtype != TY_F64) return false;
      continue;
    }
    if (!vtype(s->dtype) || a->proj != TY_PROJ_ALIGNED || a->priv == TY_PRIV_REDUCE) return false;
    bool zero = true;
    for (int d = 0; d < s->ndim; d++) zero &= s->shape[d] <= 1 || s->strides[d] == 0;
    if (ty_store_is_contiguous(s) && !zero) c |= UINT64_C(1) << k;
    else if (!zero) return false;
  }
  *contig = c;
  return true;
}

/* Streaming stores (docs/fusion.md "Streaming stores"). A run that streams
 * more than the last-level cache holds reads back what it writes from memory
 * in the next pass anyway; an argument it only writes (OUT: the whole view,
 * nothing read first) is then stored with non-temporal stores, which skip
 * reading each line before writing it (a plain store of a fresh element
 * moves 16 bytes, a streaming one 8). When the run's data fits the cache,
 * streaming costs: the next pass reads from memory what it would have found
 * in the cache (CG 4M on a 480 MiB L3: 1.9 -> 2.8 s, bench/README.md). So a
 * run streams (nt_stream) from CG_NT_ELEMS elements and only when its
 * footprint (the bytes of its arguments' views, each storage once) exceeds
 * the last-level cache (ty__llc_bytes: TYCHO_LLC_BYTES, else the system's;
 * unknown: from CG_NT_ELEMS alone). CG 4M's runs are 0.07-0.53 of a 480 MiB
 * L3 and lose with streaming; STREAM's triad at 160M (7.6x) gains; a triad
 * whose output is never read again gains from ~0.5x too, but a run cannot
 * tell whether its output is read again, so the bound is the cache. The
 * choice is part of the structure key, so the kernel found for a run was
 * generated for its choice. The body keeps such an argument's value in a
 * register and stores it once, at its end (stn); so no other argument may
 * be a view of the same storage (the structure key records which arguments
 * share one). stn streams only at a vector-aligned address and with nt set
 * (the vector loop; the zero-padded partial vectors pass 0): elsewhere it
 * is st. The entry points align the first such argument by running a
 * partial vector first, and end with a store fence. The values stored are
 * the same: only how they reach memory changes. TYCHO_NT_STORES=0 turns it
 * off, 1 streams from CG_NT_ELEMS whatever the cache, auto (the default)
 * asks the cache. */
#define CG_NT_ELEMS ((int64_t)1 << 21)

/* A size in bytes from sysfs ("491520K", "32M", "1024"), or 0. */
static int64_t sysfs_size(const char *path) {
  FILE *fp = fopen(path, "r");
  if (!fp) return 0;
  char buf[64] = {0};
  const bool got = fgets(buf, sizeof buf, fp) != NULL;
  fclose(fp);
  if (!got) return 0;
  char *end;
  long long v = strtoll(buf, &end, 10);
  if (v <= 0) return 0;
  if (*end == 'K') v <<= 10;
  else if (*end == 'M') v <<= 20;
  else if (*end == 'G') v <<= 30;
  return v;
}

/* The last-level cache's bytes: TYCHO_LLC_BYTES (runtime.c checks it), else
 * sysconf's level-3 size, else the largest cache of cpu0 in sysfs; 0 when
 * unknown. */
int64_t ty__llc_bytes(void) {
  const char *v = getenv("TYCHO_LLC_BYTES");
  if (v && *v) {
    char *end;
    long long n = strtoll(v, &end, 10);
    if (*end == 0 && n > 0) return n;
  }
#ifdef _SC_LEVEL3_CACHE_SIZE
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) return l3;
#endif
  int64_t best = 0;
  for (int i = 0; i < 8; i++) {
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    int64_t s = sysfs_size(path);
    if (s > best) best = s;
  }
  return best;
}

/* TYCHO_NT_STORES: 0 off, 1 from CG_NT_ELEMS whatever the cache, unset or
 * auto: by the cache. runtime.c accepts a whole number in 0..1 or "auto";
 * this reads a whole number the same way (strtol). */
static int nt_mode_of_env(void) {
  const char *v = getenv("TYCHO_NT_STORES");
  if (!v || !*v) return CG_NT_AUTO;
  char *end;
  long n = strtol(v, &end, 10);
  if (end == v || *end) return CG_NT_AUTO;
  return n == 0 ? CG_NT_OFF : CG_NT_ALWAYS;
}

/* Whether run f streams its fresh f64 outputs (see above). */
static bool nt_stream(const ty__codegen *cg, const ty_pending *f) {
  if (cg->nt_mode == CG_NT_OFF) return false;
  int64_t elems = 1;
  for (int d = 0; d < f->ndim; d++) elems *= f->domain[d];
  if (elems < CG_NT_ELEMS) return false;
  if (cg->nt_mode == CG_NT_ALWAYS || cg->llc <= 0) return true;
  int64_t bytes = 0;
  for (int k = 0; k < f->nargs; k++) {
    const ty_store *s = f->args[k].store;
    bool first = true; /* each storage once: the largest of its views */
    for (int j = 0; j < f->nargs && first; j++) {
      const ty_store *o = f->args[j].store;
      if (j != k && o->storage == s->storage)
        first = o->size < s->size || (o->size == s->size && j > k);
    }
    if (first) bytes += s->size * (int64_t)ty_dtype_size(s->dtype);
  }
  return bytes > cg->llc;
}

/* The arguments stored with stn: contiguous f64 OUT arguments of a run that
 * streams, each the only view of its storage among the arguments. */
static uint64_t nt_args(const ty_pending *f, uint64_t c, int acc, bool stream) {
  if (!stream) return 0;
  uint64_t m = 0;
  for (int k = 0; k < f->nargs; k++) {
    const ty_arg *a = &f->args[k];
    if (k == acc || !((c >> k) & 1u) || a->priv != TY_PRIV_OUT || a->store->dtype != TY_F64) continue;
    bool alone = true;
    for (int j = 0; j < f->nargs && alone; j++) alone = j == k || f->args[j].store->storage != a->store->storage;
    if (alone) m |= UINT64_C(1) << k;
  }
  return m;
}

/* Arguments written by several sub-operations (the Laplacian's regions:
 * `Av = v * 4; Av = Av - v(shifted)` four times, one argument written five
 * times) keep their value in a register, as every later sub-operation reads
 * it there, and are stored once, at the body's end: one store an element
 * instead of five (CG 256^2: the stencil pass 0.40 -> 0.35 s of 2000
 * iterations' CPU time, bench/README.md). Only an argument that is the only
 * view of its storage among the arguments (the structure key records which
 * share one): no other argument's load can see the stores that are dropped.
 * An output written over a dead input (exec/inplace.c) is not a view of
 * the input's storage, but the input is read only before the output is
 * first written, so storing later changes nothing there either. */
static uint64_t late_args(const ty_pending *f, const ty__fhead *h, uint64_t c, uint64_t nt) {
  int writes[TY_MAX_ARGS] = {0};
  const ty__fsub *s = ty__fsub_first(h);
  for (int k = 0; k < h->nsub; k++, s = ty__fsub_next(s))
    if (s->kind >= TY__FK_UNARY && s->kind <= TY__FK_FILL && s->nops > 0 && s->opnd[0].ref >= 0 &&
        !TY__FREF_IS_CONST(s->opnd[0].ref) && s->opnd[0].ref < f->nargs)
      writes[s->opnd[0].ref]++;
  uint64_t m = 0;
  for (int k = 0; k < f->nargs; k++) {
    if (writes[k] < 2 || !((c >> k) & 1u) || ((nt >> k) & 1u) || !vtype(f->args[k].store->dtype)) continue;
    bool alone = true;
    for (int j = 0; j < f->nargs && alone; j++) alone = j == k || f->args[j].store->storage != f->args[k].store->storage;
    if (alone) m |= UINT64_C(1) << k;
  }
  return m;
}

/* The body's end: each late argument's last value, stored once. */
static void late_stores(gen *g) {
  for (int k = 0; k < g->f->nargs; k++)
    if ((g->late >> k) & 1u) {
      if (!g->argv_[k][0]) g->ok = false; /* never written: cannot happen (late_args counts writes) */
      else put(g->b, vtype(g->f->args[k].store->dtype) == 'd' ? "  st(p[%d], %s);\n" : "  stm(p[%d], %s);\n", k,
               g->argv_[k]);
    }
}

/* The first stn argument (its alignment decides the partial vector run
 * first), or -1. */
static int nt_first(uint64_t nt) { return nt ? __builtin_ctzll(nt) : -1; }

/* clang (as TYCHO_CC) has no __builtin_ia32_movntpd256/512: its generic
 * non-temporal store gives the same instruction (vmovntpd) there. */
static void nt_helper(sbuf *b) {
  put(b, "static inline void stn(char *p, vd v, int nt) {\n"
         "  if (nt && !((unsigned long)p & (sizeof(vd) - 1)))\n"
         "#ifdef __clang__\n"
         "    __builtin_nontemporal_store(v, (vd *)p);\n"
         "#else\n"
         "    __builtin_ia32_movntpd%d((double *)p, v);\n"
         "#endif\n"
         "  else st(p, v);\n}\n",
      CG_W * 64);
}

/* The body's end: each stn argument's last value, stored once. */
static void nt_stores(gen *g) {
  for (int k = 0; k < g->f->nargs; k++)
    if ((g->nt >> k) & 1u) {
      if (!g->argv_[k][0]) g->ok = false; /* an OUT argument the run never wrote */
      else put(g->b, "  stn(p[%d], %s, nt);\n", k, g->argv_[k]);
    }
}

/* The body's head: one vector of W elements; p[k] is argument k's address
 * (o: where a summed run stores the values its sum reads; nt: stn's flag,
 * with streamed arguments). */
static void flat_body_head(sbuf *b, bool sum, uint64_t nt) {
  if (nt) nt_helper(b);
  put(b, "static inline void body(char *const *p, const char *D, const int *sq, const double *K,\n"
         "                        const double *Bc%s%s) {\n  (void)D; (void)sq; (void)K; (void)Bc;\n",
      sum ? ", char *o" : "", nt ? ", int nt" : "");
}

/* A flat run's partial vector: the m elements at i through zero-padded
 * copies (the tail; with streamed arguments, also the head that aligns the
 * first of them). */
static void flat_part(sbuf *b, const ty_pending *f, uint64_t c, int acc, uint64_t nt) {
  const bool sum = acc >= 0;
  for (int k = 0; k < f->nargs; k++) {
    if (!((c >> k) & 1u)) {
      put(b, "    p[%d] = a[%d];\n", k, k);
      continue;
    }
    int es = (int)ty_dtype_size(f->args[k].store->dtype);
    put(b, "    char t%d[W * %d] __attribute__((aligned(64))) = {0};\n", k, es);
    put(b, "    __builtin_memcpy(t%d, a[%d] + i * %d, (unsigned long)m * %d);\n    p[%d] = t%d;\n", k, k, es, es, k, k);
  }
  if (sum) put(b, "    char to[W * 8] __attribute__((aligned(64)));\n    body(p, D, sq, K, Bc, to%s);\n", nt ? ", 0" : "");
  else put(b, "    body(p, D, sq, K, Bc%s);\n", nt ? ", 0" : "");
  for (int k = 0; k < f->nargs; k++)
    if (((c >> k) & 1u) && f->args[k].priv != TY_PRIV_IN) {
      int es = (int)ty_dtype_size(f->args[k].store->dtype);
      put(b, "    __builtin_memcpy(a[%d] + i * %d, t%d, (unsigned long)m * %d);\n", k, es, k, es);
    }
  if (sum) put(b, "    __builtin_memcpy(o + i * 8, to, (unsigned long)m * 8);\n");
}

/* Independent vectors a flat run's loop interleaves (body_lanes). A run's
 * sub-operations are most often one chain, each needing the one before: at
 * one vector an iteration, overhead.lua's 64-operation window (x * 0.999 +
 * 0.001, 32 times) waits ~3 cycles an operation for the previous result,
 * and the out-of-order core overlaps few iterations of 64 dependent
 * operations. On the AMD EPYC (Zen 3, KVM) the run's kernel took 97-104 ns
 * an operation of 1,000 elements at one vector an iteration, 75 at two
 * interleaved and 54-56 at four (a C copy, -ffp-contract=off, thread CPU
 * time; bench/README.md "Task overhead: session 19"). Up to CG_LANES_MAX,
 * as many as fit the level's vector registers (lanes_for): two vector units
 * with a 3-cycle latency keep six or more chains busy; on the Zen 2
 * overhead.lua ran 5% faster at eight than at four (bench/README.md "Issue
 * 19 rows: session 30"). */
#define CG_LANES_MAX 8
/* Lanes only for a run of at least this many sub-operations: a short chain
 * already overlaps across iterations in the out-of-order window, and the
 * lanes write the body once more a lane (overhead.lua's source 6 -> 15 KB
 * at four lanes, its compile 0.05 -> 0.10 s of CPU; 39 KB at eight with the
 * asm), which a cold start pays (CG's updates are 2-6 sub-operations: their
 * compiles stay as they were). */
#define CG_LANES_MIN_SUBS 16

/* Line s (n bytes) of a flat body as lane u of body_lanes: "p[" becomes
 * "p[u][" and each value (v<k>, a<k>) v<k>_<u>; numbers and every other
 * name are copied as they are. */
static void lane_line(sbuf *b, const char *s, size_t n, int u) {
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    const char ch = s[i];
    if (ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')) {
      bool number = ch >= '0' && ch <= '9', digits = true;
      while (j < n && (s[j] == '_' || (s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z') ||
                       (s[j] >= '0' && s[j] <= '9') || (number && s[j] == '.')))
        j++;
      for (size_t k = i + 1; k < j; k++) digits &= s[k] >= '0' && s[k] <= '9';
      ty__sb_append(b, s + i, j - i);
      if (!number && j - i > 1 && digits && (ch == 'v' || ch == 'a')) put(b, "_%d", u);
      else if (j - i == 1 && ch == 'p' && j < n && s[j] == '[') put(b, "[%d]", u);
      i = j;
    } else {
      ty__sb_append(b, s + i, 1);
      i++;
    }
  }
}

/* The lanes body_lanes gives the body t (one statement a line): the most,
 * from CG_LANES_MAX down to 2, whose copies of the most values the body
 * holds at once (v<k>, a<k> defined on one line and read on a later one)
 * and its constants (K[j], Bc[j]) fit the level's vector registers (16 with
 * AVX2, 32 with AVX-512), so that the interleaved lanes do not spill; 0
 * where two do not fit (such a body has chains enough of its own). */
static int lanes_for(const char *t) {
  enum { NV = 512 };
  int def[2][NV], last[2][NV], nconst = 0, nline = 0;
  bool kc[2][NV] = {{false}};
  for (int w = 0; w < 2; w++)
    for (int k = 0; k < NV; k++) def[w][k] = last[w][k] = -1;
  for (const char *l = t; *l; l = strchr(l, '\n') + 1, nline++) {
    const char *e = strchr(l, '\n');
    /* the line's first value is the one it defines after "vd " or "vm " */
    bool first = strncmp(l, "  vd ", 5) == 0 || strncmp(l, "  vm ", 5) == 0;
    for (const char *c = l; c < e; c++) {
      if (c > l && (c[-1] == '_' || (c[-1] >= 'a' && c[-1] <= 'z') || (c[-1] >= 'A' && c[-1] <= 'Z') ||
                    (c[-1] >= '0' && c[-1] <= '9')))
        continue; /* inside a name */
      if (c[0] == 'K' || (c[0] == 'B' && c[1] == 'c')) {
        const int w = c[0] == 'B', at = w ? 2 : 1;
        if (c[at] != '[') continue;
        const int j = atoi(c + at + 1);
        if (j < 0 || j >= NV) return 0;
        nconst += !kc[w][j];
        kc[w][j] = true;
        continue;
      }
      if ((c[0] != 'v' && c[0] != 'a') || c[1] < '0' || c[1] > '9') continue;
      const char *d = c + 1;
      while (*d >= '0' && *d <= '9') d++;
      if (*d == '_' || (*d >= 'a' && *d <= 'z') || (*d >= 'A' && *d <= 'Z')) continue; /* another name */
      const int w = c[0] == 'a', k = atoi(c + 1);
      if (k >= NV) return 0;
      if (first) def[w][k] = nline;
      else last[w][k] = nline;
      first = false;
    }
  }
  /* from line def + 1 to line last, a value is held */
  int *live = calloc((size_t)nline + 2, sizeof *live), most = 0;
  if (!live) return 0;
  for (int w = 0; w < 2; w++)
    for (int k = 0; k < NV; k++)
      if (def[w][k] >= 0 && last[w][k] > def[w][k]) {
        live[def[w][k] + 1]++;
        live[last[w][k] + 1]--;
      }
  for (int i = 1, held = 0; i <= nline; i++) {
    held += live[i];
    if (held > most) most = held;
  }
  free(live);
  const int regs = CG_W == 8 ? 32 : 16;
  for (int lanes = CG_LANES_MAX; lanes >= 2; lanes /= 2)
    if (lanes * most + nconst <= regs) return lanes;
  return 0;
}

/* body_lanes: lanes_for's count of vectors an iteration, lane u's arguments
 * at p[u][k], each statement of the body (b's text from at to end, one
 * statement a line) written once a lane before the next statement, so that
 * the compiler's code and the core see independent chains. Each element
 * still goes through the same operations in the same order: the same bits.
 * Lanes are disjoint W-element blocks, so a statement's store in one lane
 * never meets a load of another (arguments are the same storage or
 * disjoint, as for one vector). 0 (no body_lanes) when a statement is not
 * one line or the body calls out (SLEEF, libmvec, the per-lane helpers): a
 * call clobbers every vector register, so the lanes would spill around it
 * rather than overlap.
 * gcc's temporary expression replacement (TER, on from -O1) rebuilds each
 * lane's chain as one expression tree and so lays the lanes out one after
 * the other again. Each value a lane defines passes through an empty asm
 * (`__asm__("" : "+v"(v))`: it stays in its vector register, and no
 * expression TER could fold into the next), so the statements keep their
 * interleaved order. Until session 30 ty_fk was compiled with
 * optimize("no-tree-ter") instead; gcc then inlined nothing into it (the
 * options differed), and body_lanes, compiled with TER, ran the lanes one
 * after the other: overhead.lua's step 0.86x with the asm at four lanes
 * (bench/README.md "Issue 19 rows: session 30"). */
static int body_lanes(sbuf *b, size_t at, size_t end, int nargs1, uint64_t nt) {
  const size_t n = end - at;
  char *t = malloc(n + 1);
  if (!t) return 0;
  memcpy(t, b->p + at, n);
  t[n] = 0;
  const char *mvec = CG_MVEC;
  bool ok = n > 0 && t[n - 1] == '\n' && !strstr(t, "Sleef_") && !strstr(t, "trig(") && !strstr(t, "fixl(") &&
            !strstr(t, "vfdiv(") && !(mvec && *mvec && strstr(t, mvec));
  for (const char *l = t; ok && *l; l = strchr(l, '\n') + 1) {
    const char *e = strchr(l, '\n');
    ok = e > l && e[-1] == ';';
  }
  const int lanes = ok ? lanes_for(t) : 0;
  if (lanes) {
    put(b, "static inline void body_lanes(char *(*p)[%d], const char *D, const int *sq, const double *K,\n"
           "                              const double *Bc%s) {\n  (void)D; (void)sq; (void)K; (void)Bc;\n",
        nargs1, nt ? ", int nt" : "");
    for (const char *l = t; *l; l = strchr(l, '\n') + 1) {
      const char *e = strchr(l, '\n');
      int k = -1; /* the value the line defines ("  vd v<k> = ...;"), kept in its place by an asm */
      if (sscanf(l, " v%*[dm] v%d =", &k) != 1) k = -1;
      for (int u = 0; u < lanes; u++) lane_line(b, l, (size_t)(e + 1 - l), u);
      for (int u = 0; k >= 0 && u < lanes; u++) put(b, "  __asm__(\"\" : \"+v\"(v%d_%d));\n", k, u);
    }
    put(b, "}\n\n");
  }
  free(t);
  return lanes;
}

/* A flat run's entry point: pow squaring flags, then the vector loop and a
 * zero-padded tail; ty_fk, or ty_fk3 when acc >= 0 (a sum's accumulator,
 * not an argument of the loop; the values go to o). With streamed
 * arguments (nt), a partial vector first up to the first one's alignment. */
static void flat_entry(sbuf *b, const ty_pending *f, const ty__fhead *h, uint64_t c, int npow, int acc,
                       uint64_t nt, int lanes) {
  const bool sum = acc >= 0;
  if (sum) put(b, "void ty_fk3(i64 n, char *const *a, const char *D, char *o) {\n  int sq[%d];\n", npow + 1);
  else
    put(b, "void ty_fk(i64 n, char *const *a, const char *D) {\n  int sq[%d];\n", npow + 1);
  pow_flags(b, h, c, "  ", "a");
  put(b, "  double K[%d], Bc[%d];\n", h->nconsts + 1, f->nargs + 1);
  put(b, "  __builtin_memcpy(K, D + %u, %u);\n", h->consts, 8u * h->nconsts);
  for (int k = 0; k < f->nargs; k++)
    if (k != acc && !((c >> k) & 1u) && f->args[k].store->dtype == TY_F64)
      put(b, "  Bc[%d] = *(const double *)a[%d];\n", k, k);
  put(b, "  char *p[%d];\n  i64 i = 0;\n", f->nargs + 1);
  /* the arguments' addresses in locals: read through `a` inside the loop,
   * every store of the body (a char pointer may alias a[]) made the
   * compiler reload each one per vector (CG's update loop: 21 -> 12
   * instructions a vector) */
  for (int k = 0; k < f->nargs; k++) put(b, "  char *const a%d_ = a[%d];\n", k, k);
  if (nt) {
    put(b, "  i64 hd = (i64)((-(unsigned long)a[%d] & (sizeof(vd) - 1)) / 8);\n", nt_first(nt));
    put(b, "  if (hd > n || ((unsigned long)a[%d] & 7)) hd = 0;\n  if (hd > 0) {\n    i64 m = hd;\n", nt_first(nt));
    flat_part(b, f, c, acc, nt);
    put(b, "    i = hd;\n  }\n");
  }
  if (lanes) {
    put(b, "  char *pl[%d][%d];\n  for (; i + %d * W <= n; i += %d * W) {\n", lanes, f->nargs + 1, lanes, lanes);
    for (int u = 0; u < lanes; u++)
      for (int k = 0; k < f->nargs; k++) {
        if ((c >> k) & 1u)
          put(b, "    pl[%d][%d] = a%d_ + (i + %d * W) * %d;\n", u, k, k, u, (int)ty_dtype_size(f->args[k].store->dtype));
        else put(b, "    pl[%d][%d] = a%d_;\n", u, k, k);
      }
    put(b, "    body_lanes(pl, D, sq, K, Bc%s);\n  }\n", nt ? ", 1" : "");
  }
  put(b, "  for (; i + W <= n; i += W) {\n");
  for (int k = 0; k < f->nargs; k++) {
    if ((c >> k) & 1u) put(b, "    p[%d] = a%d_ + i * %d;\n", k, k, (int)ty_dtype_size(f->args[k].store->dtype));
    else put(b, "    p[%d] = a%d_;\n", k, k);
  }
  put(b, "    body(p, D, sq, K, Bc%s%s);\n  }\n  if (i < n) {\n    i64 m = n - i;\n", sum ? ", o + i * 8" : "",
      nt ? ", 1" : "");
  flat_part(b, f, c, acc, nt);
  put(b, "  }\n");
  if (nt) put(b, "  __builtin_ia32_sfence();\n");
  put(b, "}\n");
}

/* The whole file for a fused launch; false when the run is not supported. */
static bool generate(const ty_pending *f, sbuf *b, uint64_t *contig, bool stream) {
  const ty__fhead *h = (const ty__fhead *)f->scalars;
  uint64_t c = 0;
  if (!flat_args(f, -1, &c)) return false;
  *contig = c;
  preamble(b);
  gen g = {.b = b, .h = h, .f = f, .contig = c, .nt = nt_args(f, c, -1, stream), .ok = true};
  g.late = late_args(f, h, c, g.nt);
  flat_body_head(b, false, g.nt);
  const size_t body_at = b->len;
  const ty__fsub *s = ty__fsub_first(h);
  for (int k = 0; k < h->nsub && g.ok; k++, s = ty__fsub_next(s)) {
    if (s->kind == TY__FK_REDUCE || s->kind == TY__FK_TASK || s->kind == TY__FK_ARGREDUCE) return false;
    sub(&g, s, k);
  }
  late_stores(&g);
  nt_stores(&g);
  if (!g.ok || b->failed) return false;
  const size_t body_end = b->len;
  put(b, "}\n\n");
  const int lanes = h->nsub >= CG_LANES_MIN_SUBS ? body_lanes(b, body_at, body_end, f->nargs + 1, g.nt) : 0;
  flat_entry(b, f, h, c, g.npow, -1, g.nt, lanes);
  return !b->failed;
}

/* Short rows of an arg reduction, W rows at once (issue 19): lane l of every
 * vector is row r + l, and a loop over the row's elements keeps each lane's
 * best value and index in registers, so no row pays a setup, a masked tail
 * and a scalar scan of its own (k-means' rows of 10 centroids). The scan is
 * argmin_short_f64's, lane by lane: a strict comparison keeps the first
 * index; a row with a NaN gives its first NaN's index and (the min/max
 * value) its last NaN, as the scan after the row kernel does. Rows of at
 * most CG_ACROSS_ROW elements: longer ones measured faster along the row
 * (docs/fusion.md). Runs with a pow are left to the row kernel (its squaring
 * flag reads the exponent per row). */
#define CG_ACROSS_ROW 32

static bool across_ok(const ty_pending *f, const ty__fhead *h) {
  if (f->domain[1] > CG_ACROSS_ROW) return false;
  const ty__fsub *s = ty__fsub_first(h);
  for (int k = 0; k < h->nsub; k++, s = ty__fsub_next(s))
    if (s->kind == TY__FK_BINARY && s->op == TY_OP_POW) return false;
  return true;
}

/* across(n0, a, os, D): the whole blocks of W rows of a piece whose rows are
 * n1 = domain[1] long; returns the rows done (the rest go to rows()). Every
 * argument but the outputs aacc, vacc is read (written) W lanes at a time
 * from (to) t<k>: element j of each of the W rows (c: varies along the row),
 * or each row's one element (gathered once per block). */
static bool across_rows(const ty_pending *f, const ty__fsub *ared, uint64_t c, int aacc, int vacc, sbuf *b) {
  const ty__fhead *h = (const ty__fhead *)f->scalars;
  const long long n1 = (long long)f->domain[1];
  const int w = CG_W;
  uint64_t cx = 0;
  for (int k = 0; k < f->nargs; k++)
    if (k != aacc && k != vacc) cx |= UINT64_C(1) << k;
  gen g = {.b = b, .h = h, .f = f, .contig = cx, .ok = true};
  put(b, "static inline vd body_x(char *const *p, const char *D, const int *sq, const double *K,\n"
         "                        const double *Bc) {\n  (void)D; (void)sq; (void)K; (void)Bc;\n");
  const ty__fsub *s = ty__fsub_first(h);
  char rin[96] = "bc(0)";
  for (int k = 0; k < h->nsub && g.ok; k++, s = ty__fsub_next(s)) {
    if (s == ared) operand(&g, &s->opnd[1], rin, sizeof rin);
    else sub(&g, s, k);
  }
  if (!g.ok) return false;
  put(b, "  return %s;\n}\n\n", rin);
  /* the lanes are written out (no loop over W for the compiler to keep),
   * the strides are locals (no store can change them) */
  put(b, "static inline __attribute__((always_inline)) i64 across(i64 n0, char *const *a, const i64 *os, "
         "const char *D) {\n");
  put(b, "  double K[%d], Bc[1] = {0};\n  int sq[1] = {0};\n  char *p[%d];\n", h->nconsts + 1, f->nargs + 1);
  put(b, "  __builtin_memcpy(K, D + %u, %u);\n", h->consts, 8u * h->nconsts);
  for (int k = 0; k < f->nargs; k++) put(b, "  const i64 o%d = os[%d];\n", k, k);
  for (int k = 0; k < f->nargs; k++)
    if (k != aacc && k != vacc)
      put(b, "  char t%d[W * %d] __attribute__((aligned(64)));\n  p[%d] = t%d;\n", k,
          (int)ty_dtype_size(f->args[k].store->dtype), k, k);
  put(b, "  i64 r = 0;\n  for (; r + W <= n0; r += W) {\n");
  for (int k = 0; k < f->nargs; k++) put(b, "    char *b%d = a[%d] + r * o%d;\n", k, k, k);
  for (int k = 0; k < f->nargs; k++) { /* each row's one element, once per block */
    if (k == aacc || k == vacc || ((c >> k) & 1u)) continue;
    int es = (int)ty_dtype_size(f->args[k].store->dtype);
    if (es == 8) {
      put(b, "    st(t%d, (vd){", k);
      for (int l = 0; l < w; l++) put(b, "%s*(const double *)(b%d + %d * o%d)", l ? ", " : "", k, l, k);
      put(b, "});\n");
    } else {
      for (int l = 0; l < w; l++) put(b, "    __builtin_memcpy(t%d + %d, b%d + %d * o%d, %d);\n", k, l * es, k, l, k, es);
    }
  }
  put(b, "    vd m = bc(0), ln = bc(0);\n    vm best = (vm){0}, fn = (vm){0} - 1;\n");
  /* The loop over the row's elements is unrolled whole with 4 lanes (AVX2)
   * and not with 8 (AVX-512). Measured on the Zen 4 (k-means 10M, k = 10,
   * warm, medians of alternated runs, session 27): with AVX2 kernels the
   * rolled loop took 0.117 s a step against 0.099 s unrolled; with AVX-512
   * ones 0.112 against 0.117 s (one worker: 0.207 against 0.208 s), and the
   * unrolled unit cost 0.07-0.12 s of compiler CPU against 0.04-0.06 s, the
   * compile a cold run waits for (bench/README "k-means' compile:
   * session 27"). At -O1 GCC honours only a whole unroll (a count below the
   * trip count unrolls nothing). */
  if (w < 8) put(b, "#pragma GCC unroll %lld\n", n1);
  put(b, "    for (i64 j = 0; j < %lld; j++) {\n", n1);
  for (int k = 0; k < f->nargs; k++) { /* element j of each row */
    if (k == aacc || k == vacc || !((c >> k) & 1u) || f->args[k].priv == TY_PRIV_OUT) continue;
    int es = (int)ty_dtype_size(f->args[k].store->dtype);
    if (es == 8) { /* a row shared by every row (stride 0: k-means' centroid norms): one broadcast */
      put(b, "      if (!o%d) st(t%d, bc(*(const double *)(b%d + j * 8)));\n      else st(t%d, (vd){", k, k, k, k);
      for (int l = 0; l < w; l++) put(b, "%s*(const double *)(b%d + %d * o%d + j * 8)", l ? ", " : "", k, l, k);
      put(b, "});\n");
    } else {
      for (int l = 0; l < w; l++)
        put(b, "      __builtin_memcpy(t%d + %d, b%d + %d * o%d + j * %d, %d);\n", k, l * es, k, l, k, es, es);
    }
  }
  put(b, "      vd v = body_x(p, D, sq, K, Bc);\n");
  for (int k = 0; k < f->nargs; k++) { /* written arguments: each lane to its row */
    if (k == aacc || k == vacc || !((c >> k) & 1u) || f->args[k].priv == TY_PRIV_IN) continue;
    int es = (int)ty_dtype_size(f->args[k].store->dtype);
    if (es == 8) {
      put(b, "      {\n        vd y = ld(t%d);\n", k);
      for (int l = 0; l < w; l++) put(b, "        *(double *)(b%d + %d * o%d + j * 8) = y[%d];\n", k, l, k, l);
      put(b, "      }\n");
    } else {
      for (int l = 0; l < w; l++)
        put(b, "      __builtin_memcpy(b%d + %d * o%d + j * %d, t%d + %d, %d);\n", k, l, k, es, k, l * es, es);
    }
  }
  /* j == 0 takes every lane (m = the row's first value, best = 0) */
  put(b, "      vm bt = (v %s m) | bcm(j == 0), isn = v != v;\n", ared->op ? ">" : "<");
  put(b, "      best = (bt & ((vm){0} + j)) | (~bt & best);\n      m = sel(bt, v, m);\n");
  put(b, "      vm fnn = isn & (fn < 0);\n      fn = (fnn & ((vm){0} + j)) | (~fnn & fn);\n");
  put(b, "      ln = sel(isn, v, ln);\n    }\n");
  put(b, "    vm nan = fn >= 0;\n    best = (nan & fn) | (~nan & best);\n");
  for (int l = 0; l < w; l++) put(b, "    *(i64 *)(b%d + %d * o%d) = best[%d];\n", aacc, l, aacc, l);
  if (vacc >= 0) {
    put(b, "    m = sel(nan, ln, m);\n");
    for (int l = 0; l < w; l++) put(b, "    *(double *)(b%d + %d * o%d) = m[%d];\n", vacc, l, vacc, l);
  }
  put(b, "  }\n  return r;\n}\n\n");
  return !b->failed;
}

/* A row's partial vector (ty_fk2, ty_fk4): its m elements at i, with m
 * below W. tail_mask names the lanes (tm: a vector compare with AVX2's 4
 * lanes; mk: a byte with AVX-512's 8); an f64 argument is then read with one
 * masked load (lanes past m read as 0, nothing past the row touched, faults
 * of masked lanes suppressed) stored whole, so the body's load is forwarded
 * from one store (element stores read back as a vector stall ~15 cycles:
 * k-means' rows of 10 spent a seventh of the row kernel there), and written
 * back with one masked store; other sizes go element by element through a
 * zeroed buffer. The same values either way. The element loops were also
 * most of what a row kernel cost to compile: CG's Laplacian kernel (ty_fk4)
 * 39 -> 33 ms of compiler CPU with masked f64 loads and stores, and CG
 * 256^2's row kernel ran 4.8% fewer instructions (session 27, bench/README
 * "k-means' compile: session 27", its last paragraph). */
static void tail_mask(sbuf *b) {
  if (CG_W == 4) put(b, "      vm tm = (vm){0, 1, 2, 3} < ((vm){0} + m);\n      (void)tm;\n");
  if (CG_W == 8) put(b, "      const unsigned char mk = (unsigned char)((1u << m) - 1);\n      (void)mk;\n");
}

/* t<k> := the tail of argument k (es bytes an element) at ra[k] + i * es. */
static void tail_load(sbuf *b, int k, int es) {
  if (es == 8 && (CG_W == 4 || CG_W == 8)) {
    put(b, "      char t%d[W * 8] __attribute__((aligned(64)));\n", k);
    if (CG_W == 4) put(b, "      st(t%d, __builtin_ia32_maskloadpd256((const vd *)(ra[%d] + i * 8), tm));\n", k, k);
    else put(b, "      st(t%d, __builtin_ia32_loadupd512_mask((const double *)(ra[%d] + i * 8), (vd){0}, mk));\n", k, k);
    return;
  }
  put(b, "      char t%d[W * %d] __attribute__((aligned(64))) = {0};\n", k, es);
  put(b, "      for (int j = 0; j < W; j++) if (j < m) __builtin_memcpy(t%d + j * %d, ra[%d] + (i + j) * %d, %d);\n",
      k, es, k, es, es);
}

/* The tail's m elements of buffer `from` (es bytes each) to `to`, an
 * expression of the element at i (its address is `to + j * es`). */
static void tail_store(sbuf *b, const char *to, const char *from, int es) {
  if (es == 8 && CG_W == 4) {
    put(b, "      __builtin_ia32_maskstorepd256((vd *)(%s), tm, ld(%s));\n", to, from);
    return;
  }
  if (es == 8 && CG_W == 8) {
    put(b, "      __builtin_ia32_storeupd512_mask((double *)(%s), ld(%s), mk);\n", to, from);
    return;
  }
  put(b, "      for (int j = 0; j < W; j++) if (j < m) __builtin_memcpy(%s + j * %d, %s + j * %d, %d);\n", to, es,
      from, es, es);
}

/* Each written argument's tail (contiguous: bit k of c) back from t<k>. */
static void tail_store_args(sbuf *b, const ty_pending *f, uint64_t c) {
  for (int k = 0; k < f->nargs; k++)
    if (((c >> k) & 1u) && f->args[k].priv != TY_PRIV_IN) {
      const int es = (int)ty_dtype_size(f->args[k].store->dtype);
      char to[48], from[16];
      snprintf(to, sizeof to, "ra[%d] + i * %d", k, es);
      snprintf(from, sizeof from, "t%d", k);
      tail_store(b, to, from, es);
    }
}

/* A 2-D run (ty_fk2): rows of a piece, each argument contiguous along the
 * inner dim (bit k of *contig) or one element per row (stride 0 there), any
 * byte stride between rows (os[k] at run time). The last sub-operation may be
 * an f64 min or max reduction: into one accumulator per row (its inner stride
 * 0: along the inner dim, a vector accumulator reduced at the row's end) or
 * into a row of accumulators (inner stride 1: along the outer dim). Min/max
 * are order-independent (NaN sticks as in kernels_reduce.c), so the result
 * is the interpreter's, up to the sign of a zero result when both -0 and +0
 * occur. Sums stay with the interpreter (their order is fixed there).
 *
 * Or the last sub-operation is an f64 argmin/argmax along the rows (i64
 * output, one element per row; rows of at most TY__FUSE_ARG_ROW): the row's
 * values go to a buffer on the stack and are scanned as argmin_short_f64
 * scans them (kernels_reduce.c: a strict comparison keeps the first index,
 * no branch per element; a row with a NaN gives its first NaN), so the index
 * is the unfused one. Lane-wise best values and indices merged at the row's
 * end measured slower on rows of 10 (the merge's branches). Rows of at most
 * CG_ACROSS_ROW go W at a time through across() instead, the lanes being
 * rows (above). */
static bool generate_col(const ty_pending *f, sbuf *b, uint64_t *contig);

static bool generate2(const ty_pending *f, sbuf *b, uint64_t *contig) {
  const ty__fhead *h = (const ty__fhead *)f->scalars;
  if (f->ndim != 2 || f->domain[1] < 1) return false;
  if (f->domain[1] == 1) return generate_col(f, b, contig);
  /* the reduction, if any: the last sub-operation */
  const ty__fsub *s = ty__fsub_first(h), *red = NULL, *ared = NULL;
  for (int k = 0; k < h->nsub; k++, s = ty__fsub_next(s)) {
    if (s->kind == TY__FK_TASK) return false;
    if (s->kind == TY__FK_ARGREDUCE) {
      if (k != h->nsub - 1 || s->dt != TY_I64 || s->dt2 != TY_F64 || (s->nops != 2 && s->nops != 3) ||
          s->opnd[0].ref < 0 || TY__FREF_IS_CONST(s->opnd[0].ref))
        return false;
      if (s->nops == 3 && (s->opnd[2].ref < 0 || TY__FREF_IS_CONST(s->opnd[2].ref) ||
                           s->opnd[2].dtype != TY_F64))
        return false;
      ared = s;
    }
    if (s->kind == TY__FK_REDUCE) {
      if (k != h->nsub - 1 || (s->op != TY__RMIN && s->op != TY__RMAX) || s->dt != TY_F64 ||
          s->dt2 != TY_F64 || s->nops != 2 || s->opnd[0].ref < 0 || TY__FREF_IS_CONST(s->opnd[0].ref))
        return false;
      red = s;
    }
  }
  const int acc = red ? red->opnd[0].ref : -1, aacc = ared ? ared->opnd[0].ref : -1;
  const int vacc = ared && ared->nops == 3 ? ared->opnd[2].ref : -1; /* its best values */
  if (ared && f->domain[1] > TY__FUSE_ARG_ROW) return false; /* rv below: 4 KiB at most */
  uint64_t c = 0;
  for (int k = 0; k < f->nargs; k++) {
    const ty_arg *a = &f->args[k];
    const ty_store *st = a->store;
    if (k == aacc || k == vacc) { /* the arg reduction's outputs: one element per row, written */
      if (st->dtype != (k == aacc ? TY_I64 : TY_F64) || a->priv != TY_PRIV_OUT ||
          a->proj != TY_PROJ_ALIGNED || st->ndim != 2 || st->strides[1] != 0)
        return false;
      continue;
    }
    if (!vtype(st->dtype) || a->proj != TY_PROJ_ALIGNED || st->ndim != 2) return false;
    if (a->priv == TY_PRIV_REDUCE && k != acc) return false;
    if (k == acc && st->dtype != TY_F64) return false;
    if (st->strides[1] == 1) c |= UINT64_C(1) << k;
    else if (st->strides[1] != 0) return false;
  }
  *contig = c;
  const bool rowacc = red && !((c >> acc) & 1u); /* one accumulator per row */
  preamble(b);
  gen g = {.b = b, .h = h, .f = f, .contig = c, .ok = true};
  g.late = late_args(f, h, c, 0);
  put(b, "static inline vd body(char *const *p, const char *D, const int *sq, const double *K,\n"
         "                      const double *Bc) {\n  (void)D; (void)sq; (void)K; (void)Bc;\n");
  s = ty__fsub_first(h);
  char rin[96] = "bc(0)";
  for (int k = 0; k < h->nsub && g.ok; k++, s = ty__fsub_next(s)) {
    if (s == red || s == ared) {
      if (vtype((ty_dtype)s->opnd[1].dtype) != 'd') return false;
      operand(&g, &s->opnd[1], rin, sizeof rin);
    } else {
      sub(&g, s, k);
    }
  }
  late_stores(&g);
  if (!g.ok) return false;
  put(b, "  return %s;\n}\n\n", rin);
  const char *better = red && red->op == TY__RMAX ? "(%s > %s) | (%s != %s)" : "(%s < %s) | (%s != %s)";
  const char *ident = red && red->op == TY__RMAX ? "-__builtin_inf()" : "__builtin_inf()";
  if (red) {
    /* m := v op m, lane by lane (vectors) and one element (scalars) */
    put(b, "static inline vd comb(vd v, vd m) { return sel(");
    put(b, better, "v", "m", "v", "v");
    put(b, ", v, m); }\nstatic inline double comb1(double v, double m) { return (");
    put(b, better, "v", "m", "v", "v");
    put(b, ") ? v : m; }\n");
  }
  /* An arg reduction's rows are whole and short (at most 512: fuse.c), and
   * rv is sized by the row length already: the rows go through an inlined
   * copy with the length a constant (k-means' 10: the loops unrolled, the
   * tail's mask fixed), another length through the general copy. */
  if (ared)
    put(b, "static inline __attribute__((always_inline)) void rows(i64 n0, i64 n1, char *const *a, "
           "const i64 *os, const char *D) {\n");
  else
    put(b, "void ty_fk2(i64 n0, i64 n1, char *const *a, const i64 *os, const char *D) {\n");
  put(b, "  double K[%d], Bc[%d];\n  int sq[%d];\n  char *ra[%d], *p[%d];\n", h->nconsts + 1,
      f->nargs + 1, g.npow + 1, f->nargs + 1, f->nargs + 1);
  put(b, "  __builtin_memcpy(K, D + %u, %u);\n", h->consts, 8u * h->nconsts);
  put(b, "  for (i64 r = 0; r < n0; r++) {\n");
  for (int k = 0; k < f->nargs; k++) put(b, "    ra[%d] = a[%d] + r * os[%d];\n", k, k, k);
  for (int k = 0; k < f->nargs; k++)
    if (!((c >> k) & 1u) && f->args[k].store->dtype == TY_F64 && k != acc && k != vacc)
      put(b, "    Bc[%d] = *(const double *)ra[%d];\n", k, k);
  pow_flags(b, h, c, "    ", "ra");
  if (rowacc) {
    /* four accumulators: one would make the loop wait on its latency */
    put(b, "    vd acc = bc(%s), acc1 = acc, acc2 = acc, acc3 = acc;\n    i64 i = 0;\n", ident);
    put(b, "    for (; i + 4 * W <= n1; i += 4 * W) {\n");
    for (int u = 0; u < 4; u++) {
      for (int k = 0; k < f->nargs; k++) {
        if ((c >> k) & 1u)
          put(b, "      p[%d] = ra[%d] + (i + %d * W) * %d;\n", k, k, u, (int)ty_dtype_size(f->args[k].store->dtype));
        else
          put(b, "      p[%d] = ra[%d];\n", k, k);
      }
      put(b, "      acc%s = comb(body(p, D, sq, K, Bc), acc%s);\n", u ? (const char *[]){"", "1", "2", "3"}[u] : "",
          u ? (const char *[]){"", "1", "2", "3"}[u] : "");
    }
    put(b, "    }\n    acc = comb(acc1, comb(acc2, comb(acc3, acc)));\n");
  } else {
    put(b, "    i64 i = 0;\n");
  }
  if (ared) /* the row's values, padded to whole vectors */
    put(b, "    double rv[%lld] __attribute__((aligned(64)));\n", (long long)((f->domain[1] + CG_W - 1) / CG_W * CG_W));
  put(b, "    for (; i + W <= n1; i += W) {\n");
  for (int k = 0; k < f->nargs; k++) {
    if ((c >> k) & 1u) put(b, "      p[%d] = ra[%d] + i * %d;\n", k, k, (int)ty_dtype_size(f->args[k].store->dtype));
    else put(b, "      p[%d] = ra[%d];\n", k, k);
  }
  put(b, "      vd v = body(p, D, sq, K, Bc);\n");
  if (rowacc) put(b, "      acc = comb(v, acc);\n");
  else if (red) put(b, "      st(p[%d], comb(v, ld(p[%d])));\n", acc, acc);
  else if (ared) put(b, "      st((char *)(rv + i), v);\n");
  else put(b, "      (void)v;\n");
  put(b, "    }\n    if (i < n1) {\n      i64 m = n1 - i;\n");
  tail_mask(b);
  for (int k = 0; k < f->nargs; k++) {
    if (!((c >> k) & 1u)) {
      put(b, "      p[%d] = ra[%d];\n", k, k);
      continue;
    }
    /* a row's tail is short (k-means: 2 of 10): element copies over a fixed
     * W or masked loads, not a memcpy call of m bytes (6.5% of k-means' time
     * went to the call) */
    tail_load(b, k, (int)ty_dtype_size(f->args[k].store->dtype));
    put(b, "      p[%d] = t%d;\n", k, k);
  }
  put(b, "      vd v = body(p, D, sq, K, Bc);\n");
  if (red) { /* lanes past the row's end must not count */
    put(b, "      for (int j = (int)m; j < W; j++) v[j] = %s;\n", ident);
    if (rowacc) put(b, "      acc = comb(v, acc);\n");
    else put(b, "      st(p[%d], comb(v, ld(p[%d])));\n", acc, acc);
  } else if (ared) {
    put(b, "      st((char *)(rv + i), v);\n");
  } else {
    put(b, "      (void)v;\n");
  }
  tail_store_args(b, f, c);
  put(b, "    }\n");
  if (rowacc) {
    put(b, "    double x = *(const double *)ra[%d];\n", acc);
    put(b, "    for (int j = 0; j < W; j++) x = comb1(acc[j], x);\n");
    put(b, "    *(double *)ra[%d] = x;\n", acc);
  }
  if (ared) { /* argmin_short_f64's scan (kernels_reduce.c): no branch per element */
    const char *cmp = ared->op ? ">" : "<";
    put(b, "    double m = rv[0];\n    i64 best = 0;\n    int nan = m != m;\n");
    put(b, "    for (i64 j = 1; j < n1; j++) {\n      double x = rv[j];\n");
    put(b, "      best = x %s m ? j : best;\n      m = x %s m ? x : m;\n      nan |= x != x;\n    }\n", cmp, cmp);
    put(b, "    if (nan) for (best = 0; rv[best] == rv[best]; best++) {}\n");
    put(b, "    *(i64 *)ra[%d] = best;\n", aacc);
    if (vacc >= 0) /* the unfused min/max's value: the best element, or the row's last NaN */
      put(b, "    if (nan) for (best = n1 - 1; rv[best] == rv[best]; best--) {}\n"
             "    *(double *)ra[%d] = rv[best];\n", vacc);
  }
  put(b, "  }\n}\n");
  if (ared && across_ok(f, h)) { /* whole blocks of W short rows at once, the rest by rows() */
    put(b, "\n");
    if (!across_rows(f, ared, c, aacc, vacc, b)) return false;
    put(b, "void ty_fk2(i64 n0, i64 n1, char *const *a, const i64 *os, const char *D) {\n"
           "  if (n1 != %lld) {\n    rows(n0, n1, a, os, D);\n    return;\n  }\n"
           "  i64 r = across(n0, a, os, D);\n  if (r == n0) return;\n  char *ar[%d];\n"
           "  for (int k = 0; k < %d; k++) ar[k] = a[k] + r * os[k];\n  rows(n0 - r, %lld, ar, os, D);\n}\n",
        (long long)f->domain[1], f->nargs + 1, f->nargs, (long long)f->domain[1]);
  } else if (ared) {
    put(b, "\nvoid ty_fk2(i64 n0, i64 n1, char *const *a, const i64 *os, const char *D) {\n"
           "  if (n1 == %lld) rows(n0, %lld, a, os, D);\n  else rows(n0, n1, a, os, D);\n}\n",
        (long long)f->domain[1], (long long)f->domain[1]);
  }
  return !b->failed;
}

/* A 2-D run one element wide (n1 == 1: a column of a grid, CG's left and
 * right edge regions): W rows at once, each argument's elements gathered
 * into a vector by its row stride and the written ones scattered back, one
 * pass for the whole run. The row kernel would run a masked tail per row
 * (66 instructions a row at W = 4) and the interpreter a strided pass per
 * sub-operation. Element-wise runs only, without pow (whose squaring flag
 * the kernels read per row); the entry is ty_fk2's, so the caller (which
 * takes any layout for a piece one element wide) needs nothing new. */
/* W rows (m < 0: written out, one statement a row) or the last m of a
 * column: gather, body, scatter; the arguments' addresses and strides in
 * locals (a[] and os[] read inside the loop are reloaded after every
 * store). Written out, a full vector costs ~2 instructions an argument and
 * row at W = 4; a loop of W per argument measured ~45 a row. */
static void col_part(sbuf *b, const ty_pending *f, bool full) {
  for (int k = 0; k < f->nargs; k++) {
    const int es = (int)ty_dtype_size(f->args[k].store->dtype);
    put(b, "    char t%d[W * %d] __attribute__((aligned(64)))%s;\n", k, es, full ? "" : " = {0}");
    put(b, "    const char *s%d = a%d_ + r * o%d_;\n", k, k, k);
    if (full)
      for (int j = 0; j < CG_W; j++) put(b, "    __builtin_memcpy(t%d + %d, s%d + %d * o%d_, %d);\n", k, j * es, k, j, k, es);
    else
      put(b, "    for (int j = 0; j < m; j++) __builtin_memcpy(t%d + j * %d, s%d + j * o%d_, %d);\n", k, es, k, k, es);
    put(b, "    p[%d] = t%d;\n", k, k);
  }
  put(b, "    body(p, D, sq, K, Bc);\n");
  for (int k = 0; k < f->nargs; k++)
    if (f->args[k].priv != TY_PRIV_IN) {
      const int es = (int)ty_dtype_size(f->args[k].store->dtype);
      if (full)
        for (int j = 0; j < CG_W; j++)
          put(b, "    __builtin_memcpy((char *)s%d + %d * o%d_, t%d + %d, %d);\n", k, j, k, k, j * es, es);
      else
        put(b, "    for (int j = 0; j < m; j++) __builtin_memcpy((char *)s%d + j * o%d_, t%d + j * %d, %d);\n", k, k,
            k, es, es);
    }
}

static bool generate_col(const ty_pending *f, sbuf *b, uint64_t *contig) {
  const ty__fhead *h = (const ty__fhead *)f->scalars;
  const ty__fsub *s = ty__fsub_first(h);
  for (int k = 0; k < h->nsub; k++, s = ty__fsub_next(s))
    if (s->kind == TY__FK_REDUCE || s->kind == TY__FK_TASK || s->kind == TY__FK_ARGREDUCE ||
        (s->kind == TY__FK_BINARY && s->op == TY_OP_POW))
      return false;
  uint64_t c = 0;
  for (int k = 0; k < f->nargs; k++) {
    const ty_arg *a = &f->args[k];
    if (!vtype(a->store->dtype) || a->proj != TY_PROJ_ALIGNED || a->priv == TY_PRIV_REDUCE || a->store->ndim != 2)
      return false;
    c |= UINT64_C(1) << k;
  }
  *contig = c;
  preamble(b);
  put(b, "/* one element wide */\n");
  gen g = {.b = b, .h = h, .f = f, .contig = c, .ok = true};
  g.late = late_args(f, h, c, 0);
  flat_body_head(b, false, 0);
  s = ty__fsub_first(h);
  for (int k = 0; k < h->nsub && g.ok; k++, s = ty__fsub_next(s)) sub(&g, s, k);
  late_stores(&g);
  if (!g.ok) return false;
  put(b, "}\n\n");
  put(b, "void ty_fk2(i64 n0, i64 n1, char *const *a, const i64 *os, const char *D) {\n");
  put(b, "  double K[%d], Bc[1];\n  int sq[1];\n  char *p[%d];\n  (void)n1;\n", h->nconsts + 1, f->nargs + 1);
  put(b, "  __builtin_memcpy(K, D + %u, %u);\n", h->consts, 8u * h->nconsts);
  for (int k = 0; k < f->nargs; k++) put(b, "  char *const a%d_ = a[%d];\n  const i64 o%d_ = os[%d];\n", k, k, k, k);
  put(b, "  i64 r = 0;\n  for (; r + W <= n0; r += W) {\n");
  col_part(b, f, true);
  put(b, "  }\n  if (r < n0) {\n    const int m = (int)(n0 - r);\n");
  col_part(b, f, false);
  put(b, "  }\n}\n");
  return !b->failed;
}

/* The last sub-operation of a run that ends in an f64 sum with nothing but
 * element-wise sub-operations before it (ty_fk3, ty_fk4), or NULL. */
static const ty__fsub *sum_tail_of(const ty__fhead *h) {
  const ty__fsub *last = ty__fsub_first(h);
  for (int k = 0; k + 1 < h->nsub; k++) {
    if (last->kind == TY__FK_REDUCE || last->kind == TY__FK_TASK || last->kind == TY__FK_ARGREDUCE) return NULL;
    last = ty__fsub_next(last);
  }
  if (last->kind != TY__FK_REDUCE || last->op != TY__RSUM || last->dt != TY_F64 || last->dt2 != TY_F64 ||
      last->nops != 2 || last->opnd[0].ref < 0 || TY__FREF_IS_CONST(last->opnd[0].ref) ||
      last->opnd[1].dtype != TY_F64)
    return NULL;
  return last;
}

/* The body of a run ending in a sum: the sub-operations before the sum, then
 * the value the sum reads stored to out; *npow: the body's pow slots. */
static bool sum_body(const ty_pending *f, const ty__fhead *h, const ty__fsub *last, uint64_t c, uint64_t nt,
                     sbuf *b, int *npow) {
  preamble(b);
  gen g = {.b = b, .h = h, .f = f, .contig = c, .nt = nt, .ok = true};
  g.late = late_args(f, h, c, nt);
  flat_body_head(b, true, nt);
  const ty__fsub *s = ty__fsub_first(h);
  for (int k = 0; k + 1 < h->nsub && g.ok; k++, s = ty__fsub_next(s)) sub(&g, s, k);
  char x[96];
  operand(&g, &last->opnd[1], x, sizeof x);
  late_stores(&g);
  nt_stores(&g);
  if (!g.ok) return false;
  put(b, "  st(o, %s);\n}\n\n", x);
  *npow = g.npow;
  return true;
}

/* A flat run ending in an f64 sum (ty_fk3): the sub-operations before the
 * sum as in generate, then the value the sum reads stored to out; the caller
 * (fused_cpu.c) calls it block by block and feeds each block to the sum's
 * ordered stream, the interpreter's own call on the same values, so the sum
 * keeps its bits. The sum's accumulator is an argument the kernel never
 * touches. */
static bool generate3(const ty_pending *f, sbuf *b, uint64_t *contig, bool stream) {
  const ty__fhead *h = (const ty__fhead *)f->scalars;
  if (h->nsub < 2) return false;
  const ty__fsub *last = sum_tail_of(h);
  if (!last) return false;
  const int acc = last->opnd[0].ref;
  uint64_t c = 0;
  if (!flat_args(f, acc, &c)) return false;
  *contig = c;
  int npow = 0;
  const uint64_t nt = nt_args(f, c, acc, stream);
  if (!sum_body(f, h, last, c, nt, b, &npow)) return false;
  flat_entry(b, f, h, c, npow, acc, nt, 0);
  return !b->failed;
}

/* A 2-D run ending in an f64 sum (ty_fk4): generate3's body over rows, as
 * generate2 walks them (each argument contiguous along the rows or one
 * element per row, any byte stride between rows). The values the sum reads
 * go to out in C order, n1 per row; the caller (fused_cpu.c) feeds them to
 * the sum's ordered stream as the interpreter would: the same bits. A
 * region of CG's Laplacian with p.Ap (plan/regions.c, sum_tail) is such a
 * run: its views are rows of the grid, not one flat run. */
static bool rows_sum_args(const ty_pending *f, int acc, uint64_t *contig) {
  uint64_t c = 0;
  for (int k = 0; k < f->nargs; k++) {
    const ty_arg *a = &f->args[k];
    const ty_store *st = a->store;
    if (k == acc) {
      if (a->priv != TY_PRIV_REDUCE || st->dtype != TY_F64) return false;
      continue;
    }
    if (!vtype(st->dtype) || a->proj != TY_PROJ_ALIGNED || a->priv == TY_PRIV_REDUCE || st->ndim != 2)
      return false;
    if (st->strides[1] == 1) c |= UINT64_C(1) << k;
    else if (st->strides[1] != 0) return false;
  }
  *contig = c;
  return true;
}

/* A row's partial vector in ty_fk4: the m elements at i through
 * zero-padded copies (the row's tail; with streamed arguments, also its
 * head that aligns the first of them). */
static void rows_sum_part(sbuf *b, const ty_pending *f, uint64_t c, uint64_t nt) {
  tail_mask(b);
  for (int k = 0; k < f->nargs; k++) {
    if (!((c >> k) & 1u)) {
      put(b, "      p[%d] = ra[%d];\n", k, k);
      continue;
    }
    tail_load(b, k, (int)ty_dtype_size(f->args[k].store->dtype));
    put(b, "      p[%d] = t%d;\n", k, k);
  }
  put(b, "      char to[W * 8] __attribute__((aligned(64)));\n      body(p, D, sq, K, Bc, to%s);\n", nt ? ", 0" : "");
  tail_store_args(b, f, c);
  tail_store(b, "ro + i * 8", "to", 8);
}

static bool generate4(const ty_pending *f, sbuf *b, uint64_t *contig, bool stream) {
  const ty__fhead *h = (const ty__fhead *)f->scalars;
  if (f->ndim != 2 || h->nsub < 2) return false;
  const ty__fsub *last = sum_tail_of(h);
  if (!last) return false;
  const int acc = last->opnd[0].ref;
  uint64_t c = 0;
  if (!rows_sum_args(f, acc, &c)) return false;
  *contig = c;
  int npow = 0;
  const uint64_t nt = nt_args(f, c, acc, stream);
  if (!sum_body(f, h, last, c, nt, b, &npow)) return false;
  put(b, "void ty_fk4(i64 n0, i64 n1, char *const *a, const i64 *os, const char *D, char *o) {\n");
  put(b, "  double K[%d], Bc[%d];\n  int sq[%d];\n  char *ra[%d], *p[%d];\n", h->nconsts + 1,
      f->nargs + 1, npow + 1, f->nargs + 1, f->nargs + 1);
  put(b, "  __builtin_memcpy(K, D + %u, %u);\n", h->consts, 8u * h->nconsts);
  put(b, "  for (i64 r = 0; r < n0; r++) {\n    char *ro = o + r * n1 * 8;\n");
  for (int k = 0; k < f->nargs; k++) put(b, "    ra[%d] = a[%d] + r * os[%d];\n", k, k, k);
  for (int k = 0; k < f->nargs; k++)
    if (k != acc && !((c >> k) & 1u) && f->args[k].store->dtype == TY_F64)
      put(b, "    Bc[%d] = *(const double *)ra[%d];\n", k, k);
  pow_flags(b, h, c, "    ", "ra");
  put(b, "    i64 i = 0;\n");
  if (nt) {
    put(b, "    i64 hd = (i64)((-(unsigned long)ra[%d] & (sizeof(vd) - 1)) / 8);\n", nt_first(nt));
    put(b, "    if (hd > n1 || ((unsigned long)ra[%d] & 7)) hd = 0;\n    if (hd > 0) {\n      i64 m = hd;\n",
        nt_first(nt));
    rows_sum_part(b, f, c, nt);
    put(b, "      i = hd;\n    }\n");
  }
  put(b, "    for (; i + W <= n1; i += W) {\n");
  for (int k = 0; k < f->nargs; k++) {
    if ((c >> k) & 1u) put(b, "      p[%d] = ra[%d] + i * %d;\n", k, k, (int)ty_dtype_size(f->args[k].store->dtype));
    else put(b, "      p[%d] = ra[%d];\n", k, k);
  }
  put(b, "      body(p, D, sq, K, Bc, ro + i * 8%s);\n    }\n    if (i < n1) {\n      i64 m = n1 - i;\n", nt ? ", 1" : "");
  rows_sum_part(b, f, c, nt);
  put(b, "    }\n  }\n");
  if (nt) put(b, "  __builtin_ia32_sfence();\n");
  put(b, "}\n");
  return !b->failed;
}

/* ---- compile, cache, load -------------------------------------------------------------- */

static uint64_t fnv1a(const char *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

static int mkdirs(const char *path) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
      *p = '/';
    }
  return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static cg_entry *lookup(ty__codegen *cg, uint64_t hash) {
  for (int i = 0; i < cg->n; i++)
    if (cg->e[i].hash == hash) return &cg->e[i];
  if (cg->n == cg->cap) {
    int cap = cg->cap ? 2 * cg->cap : 16;
    cg_entry *e = ty__realloc(cg->e, (size_t)cap * sizeof *e);
    if (!e) return NULL;
    cg->e = e;
    cg->cap = cap;
  }
  cg_entry *e = &cg->e[cg->n++];
  memset(e, 0, sizeof *e);
  e->hash = hash;
  return e;
}

static void so_path(const ty__codegen *cg, uint64_t hash, char *so, size_t cap, const char *ext) {
  snprintf(so, cap, "%s/fk-%016llx.%s", cg->dir, (unsigned long long)hash, ext);
}

/* Open a compiled object and find its entry point: k<hash>_ty_fk... (the
 * name a unit gives it: unit()), or ty_fk... (an object compiled alone
 * before session 14); false when it cannot be loaded (e->fn stays NULL). */
static void *open_entry(const char *so, uint64_t hash, uint32_t kind, void **handle) {
  *handle = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!*handle) return NULL;
  static const char *const entry[] = {"ty_fk", "ty_fk2", "ty_fk3", "ty_fk4"};
  const char *name = entry[kind < 4 ? kind : 0];
  char own[64];
  snprintf(own, sizeof own, "k%016llx_%s", (unsigned long long)hash, name);
  void *sym = dlsym(*handle, own);
  if (!sym) sym = dlsym(*handle, name);
  if (!sym) {
    dlclose(*handle);
    *handle = NULL;
  }
  return sym;
}

static bool open_so(cg_entry *e, const char *so) {
  void *sym = open_entry(so, e->hash, e->kind, &e->handle);
  if (!sym) return false;
  memcpy(&e->fn, &sym, sizeof e->fn);
  return true;
}

void (*ty__fslot_test_hook)(int64_t done);

ty__fused_kernel ty__fslot_kernel(ty__fslot *s, int64_t done, uint32_t *kind, uint64_t *contig) {
  if (ty__fslot_test_hook) ty__fslot_test_hook(done);
  uint64_t fn = __atomic_load_n(&s->fn, __ATOMIC_ACQUIRE);
  if (!fn) {
    if (__atomic_load_n(&s->state, __ATOMIC_RELAXED) != SLOT_WAITING) return NULL;
    const int64_t now = ty__cc_now_ns();
    if (now < __atomic_load_n(&s->next_look, __ATOMIC_RELAXED)) return NULL;
    int w = SLOT_WAITING;
    if (!__atomic_compare_exchange_n(&s->state, &w, SLOT_LOOKING, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
      return NULL;
    __atomic_store_n(&s->next_look, now + 2000000, __ATOMIC_RELAXED);
    int next = SLOT_WAITING;
    if (access(s->so, R_OK) == 0) { /* installed whole (a rename: codegen_cc.h) */
      void *h = NULL, *sym = open_entry(s->so, s->hash, s->kind, &h);
      if (sym) {
        s->handle = h; /* only the looking thread writes it, once */
        memcpy(&fn, &sym, sizeof fn);
        __atomic_store_n(&s->fn, fn, __ATOMIC_RELEASE);
      }
      next = SLOT_DONE; /* loaded, or not loadable: the pass's job_done marks it failed */
    }
    int l = SLOT_LOOKING; /* unless the pass has published meanwhile */
    __atomic_compare_exchange_n(&s->state, &l, next, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
    if (!fn) return NULL;
  }
  *kind = s->kind;
  *contig = s->contig;
  ty__fused_kernel k;
  memcpy(&k, &fn, sizeof k);
  return k;
}

/* A finished or failed job: load what it made for each of its kernels, or
 * mark a kernel failed (its runs stay with the interpreter, as when no
 * compiler is found). A failed job's kernel may still be there, installed
 * by another process: it is loaded. */
static void job_done(ty__codegen *cg, cg_job *j) {
  for (int i = 0; i < j->n; i++) {
    cg_entry *e = &cg->e[j->ent[i]];
    char so[1200];
    so_path(cg, e->hash, so, sizeof so, "so");
    e->job = 0;
    if (!open_so(e, so)) e->failed = true;
    if (e->slot) { /* published for the launches interpreting meanwhile */
      uint64_t fn = 0;
      memcpy(&fn, &e->fn, sizeof e->fn);
      if (fn && !__atomic_load_n(&e->slot->fn, __ATOMIC_ACQUIRE))
        __atomic_store_n(&e->slot->fn, fn, __ATOMIC_RELEASE);
      __atomic_store_n(&e->slot->state, SLOT_DONE, __ATOMIC_RELEASE);
    }
  }
  for (int s = 0; s < CG_SLOTS; s++)
    if (cg->slot[s] == j) {
      cg->slot[s] = NULL;
      cg->jobs--;
    }
  free(j);
}

/* Poll every compile in flight (a kernel whose structure does not come back
 * is still reaped, and loaded for when it does), at most every
 * CG_POLL_NS: a loop of small flushes (CG: thousands a second) would
 * otherwise spend ~3 system calls per flush and job on it. */
#define CG_POLL_NS 2000000
static void poll_jobs(ty__codegen *cg) {
  const int64_t now = ty__cc_now_ns();
  if (now < cg->next_poll) return;
  cg->next_poll = now + CG_POLL_NS;
  for (int s = 0; s < CG_SLOTS; s++)
    if (cg->slot[s] && ty__cc_poll(&cg->slot[s]->cc, false)) job_done(cg, cg->slot[s]);
}

/* The kernel is in the disk cache (a run before this one compiled it). */
static bool cached(const ty__codegen *cg, const cg_entry *e) {
  char so[1200];
  so_path(cg, e->hash, so, sizeof so, "so");
  return access(so, R_OK) == 0;
}

/* The file-scope names a kernel's source defines after the preamble (the
 * generators above): renamed per kernel in a unit. A name missing here
 * fails every unit of two kernels that define it, and all its kernels run
 * interpreted: body_lanes (two flat runs of 16+ arithmetic sub-operations
 * in one flush) and comb1 (two min/max row reductions) until session 23,
 * found by test_codegen_isa.c, which compiles such units. */
static const char *const cg_names[] = {"body",   "body_x", "body_lanes", "across", "comb",  "comb1",
                                       "rows",   "stn",    "ty_fk",      "ty_fk2", "ty_fk3", "ty_fk4"};

/* The preamble's text (the same in every source of this process). */
static bool preamble_text(ty__codegen *cg) {
  if (cg->pre_text) return true;
  sbuf b = {0};
  preamble(&b);
  if (b.failed) {
    free(b.p);
    return false;
  }
  cg->pre_text = b.p;
  cg->pre_len = b.len;
  return true;
}

/* A source that starts with the preamble can share a unit with others. */
static bool joins(ty__codegen *cg, const char *text, size_t len) {
  return preamble_text(cg) && len >= cg->pre_len && memcmp(text, cg->pre_text, cg->pre_len) == 0;
}

/* Whether a kernel's source calls SLEEF or libm (the preamble's
 * declarations, and its helpers that call them: fixl, vfdiv), so that its
 * unit links them (codegen_cc.c); a source without the preamble: yes. */
static bool calls_libs(ty__codegen *cg, const char *text, size_t len) {
  if (!joins(cg, text, len)) return true;
  const char *const names[] = {"Sleef_", CG_MVEC, "fixl", "vfdiv", "fmod", "copysign",
                               "sinhl", "coshl", "asinhl", "acoshl", "log1pl"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (memmem(text + cg->pre_len, len - cg->pre_len, names[i], strlen(names[i]))) return true;
  return false;
}

/* The translation unit of n kernels (one compiler process for all:
 * codegen_cc.h): the preamble once (when n > 1: every source starts with
 * it), then each kernel's own text with its file-scope names prefixed by
 * k<hash>_ (its entry point k<hash>_ty_fk..., which open_so finds). The
 * kernels' code is the same as compiled alone: each is its own functions
 * under -ffp-contract=off, so the same bits (test_codegen_async.c). */
static bool unit(const char *pre, size_t pre_len, const uint64_t *hash, char *const *text, const size_t *len,
                 int n, sbuf *u) {
  const size_t skip = n > 1 ? pre_len : 0;
  if (n > 1) ty__sb_append(u, pre, skip);
  const int nn = (int)(sizeof cg_names / sizeof cg_names[0]);
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < nn; k++)
      put(u, "#define %s k%016llx_%s\n", cg_names[k], (unsigned long long)hash[i], cg_names[k]);
    ty__sb_append(u, text[i] + skip, len[i] - skip);
    for (int k = 0; k < nn; k++) put(u, "#undef %s\n", cg_names[k]);
  }
  return !u->failed;
}

/* How long a compile starting now holds before its compiler starts
 * (codegen_cc.c), in seconds: none for an urgent one (CG_URGENT_ELEMS),
 * else what is left of TY__CC_HOLD_S since the table was made (its
 * runtime's start; CG_HOLD_NS). The hold is for a program that ends before
 * its compiles would pay off (their kernels are for its next run); a
 * program that has already run TY__CC_HOLD_S seconds is not such a short
 * one (until session 17 a compile queued later was niced for the whole
 * cap: cold CG 256^2 started its later kernels' compiles 0.2 s after their
 * first sight, bench/README.md, "Cold start, nice by age and -O1: session
 * 17"). */
static double hold_for(const ty__codegen *cg, bool urgent) {
  if (urgent) return 0;
  return TY__CC_HOLD_S - (double)(ty__cc_now_ns() - cg->born) * 1e-9;
}

/* Start one compile of the kernels ent[0..n) (their sources text[]); NULL
 * when it could not start. */
static cg_job *start(ty__codegen *cg, const int *ent, char *const *text, const size_t *len, int n,
                     bool detached) {
  cg_job *j = ty__malloc(sizeof *j);
  if (!j) return NULL;
  char so[TY__CC_MAX_KERNELS][1200], src[TY__CC_MAX_KERNELS][1200];
  ty__cckernel k[TY__CC_MAX_KERNELS];
  uint64_t hash[TY__CC_MAX_KERNELS] = {0};
  for (int i = 0; i < n; i++) {
    hash[i] = cg->e[ent[i]].hash;
    so_path(cg, hash[i], so[i], sizeof so[i], "so");
    so_path(cg, hash[i], src[i], sizeof src[i], "c");
    k[i] = (ty__cckernel){so[i], src[i], text[i], len[i]};
    j->ent[i] = ent[i];
  }
  j->n = n;
  bool urgent = false, libs = false;
  for (int i = 0; i < n; i++) {
    urgent |= cg->e[ent[i]].urgent;
    libs = libs || calls_libs(cg, text[i], len[i]);
  }
  sbuf u = {0};
  const bool ok = unit(cg->pre_text, cg->pre_len, hash, text, len, n, &u) &&
                  ty__cc_start(&j->cc, cg->cc, k, n, u.p, u.len, libs, detached, hold_for(cg, urgent), NULL);
  free(u.p);
  if (!ok) {
    free(j);
    return NULL;
  }
  for (int i = 0; i < n; i++) cg->e[ent[i]].job = -1; /* in flight (the caller gives the slot) */
  return j;
}

/* Start one compile of queued kernels: the first one queued and every
 * other that shares its preamble, up to
 * TY__CC_MAX_KERNELS; they leave the queue. NULL when the queue is empty or
 * the compile could not start (its kernels are marked failed). */
static cg_job *start_queued(ty__codegen *cg) {
  if (cg->nqueue == 0) return NULL;
  /* urgent kernels first (CG_URGENT_ELEMS), in the order queued */
  for (int q = 1, u = cg->e[cg->queue[0]].urgent; q < cg->nqueue; q++)
    if (cg->e[cg->queue[q]].urgent) {
      const int x = cg->queue[q];
      memmove(&cg->queue[u + 1], &cg->queue[u], (size_t)(q - u) * sizeof cg->queue[0]);
      cg->queue[u++] = x;
    }
  int ent[TY__CC_MAX_KERNELS] = {0}, n = 0, left = 0;
  char *text[TY__CC_MAX_KERNELS] = {0};
  size_t len[TY__CC_MAX_KERNELS] = {0};
  const cg_entry *e0 = &cg->e[cg->queue[0]];
  const bool shared = joins(cg, e0->text, e0->len);
  for (int q = 0; q < cg->nqueue; q++) {
    cg_entry *e = &cg->e[cg->queue[q]];
    const bool take = q == 0 || (shared && n < TY__CC_MAX_KERNELS && joins(cg, e->text, e->len));
    if (!take) {
      cg->queue[left++] = cg->queue[q];
      continue;
    }
    ent[n] = cg->queue[q];
    text[n] = e->text;
    len[n++] = e->len;
  }
  cg->nqueue = left;
  cg_job *j = start(cg, ent, text, len, n, true);
  for (int i = 0; i < n; i++) {
    cg_entry *e = &cg->e[ent[i]];
    e->queued = false;
    free(e->text);
    e->text = NULL;
    if (!j) e->failed = true;
  }
  return j;
}

/* The hold (codegen_cc.c says why): a compile queued in the runtime's first
 * TY__CC_HOLD_S waits that long before the compiler starts, then runs at
 * the program's priority. Kernels of short runs (under CG_HOT_ELEMS: a
 * loop of small flushes, whose passes come back within milliseconds) wait
 * in the queue itself, so that every kernel queued in the hold goes into
 * the one unit formed at its end; a queue holding a kernel of a longer run (a launch may interpret for
 * longer than the hold, and no pass would start its compile meanwhile)
 * starts its compile at once, which then sleeps what is left of the hold
 * (ty__cc_start, hold_for). Cold CG 256^2 (65,536-element runs) queued a
 * unit of 1 kernel at 0.008 s and one of 4 at 0.012 s, both niced until
 * the 0.05 s cap and restarted; its last 3 kernels waited for a slot until
 * the first unit ended at 0.13-0.20 s, all done at 0.25-0.30 s. Held, its 8
 * kernels start at 0.05 s as one unit (bench/README.md, "Cold CG, a hold
 * instead of a niced try: session 23": two units of 4 side by side, the
 * queue shared out over the free slots, measured no faster). */
#define CG_HOLD_NS ((int64_t)(TY__CC_HOLD_S * 1e9))

void ty__codegen_start(ty__codegen *cg) {
  if (!cg || cg->nqueue == 0) return;
  if (cg->jobs) poll_jobs(cg);
  /* in the runtime's first TY__CC_HOLD_S, kernels of short runs only wait
   * in the queue (see above) */
  bool big = false;
  for (int q = 0; q < cg->nqueue && !big; q++)
    big = cg->e[cg->queue[q]].elems >= CG_HOT_ELEMS || cg->e[cg->queue[q]].urgent;
  if (!big && ty__cc_now_ns() - cg->born < CG_HOLD_NS) return;
  for (int s = 0; s < CG_SLOTS && cg->nqueue > 0; s++) {
    if (cg->slot[s]) continue;
    /* the last slot: urgent kernels only (start_queued puts them first) */
    bool urgent = false;
    for (int q = 0; q < cg->nqueue && !urgent; q++) urgent = cg->e[cg->queue[q]].urgent;
    if (s == CG_MAX_JOBS && !urgent) break;
    cg_job *j = start_queued(cg);
    if (!j) continue;
    if (!cg->first_job) cg->first_job = ty__cc_now_ns();
    cg->slot[s] = j;
    cg->jobs++;
    for (int i = 0; i < j->n; i++) cg->e[j->ent[i]].job = s + 1;
  }
}

/* Make e's kernel: load fk-<hash>.so from the cache directory when it is
 * there, else compile it (source b): waited for at once (TYCHO_CODEGEN_WAIT),
 * or queued, to start in the background with the other kernels queued by
 * the end of the fusion pass (ty__codegen_start). A kernel not waited for
 * leaves e->fn NULL: the run is interpreted, and a later sight of the
 * structure finds the kernel once its compile is done (poll_jobs). At most
 * cg->max_jobs compiles run at once and CG_QUEUE_MAX kernels wait; past
 * that, nothing is queued now, not even a look into the disk cache (a later
 * sight tries again). */
static void begin(ty__codegen *cg, cg_entry *e, const sbuf *b, uint32_t kind, uint64_t contig) {
  char so[1200];
  if (!cg->wait && cg->nqueue >= CG_QUEUE_MAX) return;
  e->kind = kind;
  if (!cg->dir_made && mkdirs(cg->dir) != 0) {
    e->failed = true;
    return;
  }
  cg->dir_made = true;
  so_path(cg, e->hash, so, sizeof so, "so");
  if (access(so, R_OK) == 0) {
    if (!open_so(e, so)) e->failed = true;
    return;
  }
  if (cg->wait) {
    const int ent = (int)(e - cg->e);
    char *text = b->p;
    cg_job *j = start(cg, &ent, &text, &b->len, 1, false);
    if (!j) {
      e->failed = true;
      return;
    }
    ty__cc_poll(&j->cc, true);
    job_done(cg, j);
    return;
  }
  if (!e->slot && (e->slot = ty__calloc(1, sizeof *e->slot))) {
    e->slot->kind = kind;
    e->slot->contig = contig;
    e->slot->hash = e->hash;
    snprintf(e->slot->so, sizeof e->slot->so, "%s", so);
  }
  free(e->text);
  e->deferred = false;
  e->text = ty__malloc(b->len);
  if (!e->text) return;
  memcpy(e->text, b->p, b->len);
  e->len = b->len;
  e->queued = true;
  cg->queue[cg->nqueue++] = (int)(e - cg->e);
}

/* A hash of the key 8 bytes at a time (fnv1a, a byte at a time, cost ~5
 * instructions per byte: 15,000 per flush of a 64-launch run). */
static uint64_t key_hash(const char *p, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdULL;
    h ^= h >> 29;
  }
  uint64_t w = 0;
  memcpy(&w, p + i, n - i);
  h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 32);
}

/* The run's structure key into cg->key: the domain, each argument's dtype,
 * access and layout, and the description without the constants' values. */
static bool structure_key(ty__codegen *cg, const ty_pending *f, bool stream) {
  sbuf *b = &cg->key;
  b->len = 0;
  b->failed = false;
  const ty__fhead *h = (const ty__fhead *)f->scalars;
  const int32_t head[6] = {f->ndim, f->nargs, h->nsub, h->nslots, h->nconsts, h->ndim};
  ty__sb_append(b, head, sizeof head);
  ty__sb_append(b, f->domain, sizeof f->domain[0] * (size_t)f->ndim);
  for (int k = 0; k < f->nargs; k++) {
    const ty_arg *a = &f->args[k];
    const ty_store *st = a->store;
    const int32_t ak[6] = {(int32_t)st->dtype, (int32_t)a->priv, (int32_t)a->proj, (int32_t)a->redop,
                           st->ndim, ty_store_is_contiguous(st)};
    ty__sb_append(b, ak, sizeof ak);
    ty__sb_append(b, st->shape, sizeof st->shape[0] * (size_t)st->ndim);
    ty__sb_append(b, st->strides, sizeof st->strides[0] * (size_t)st->ndim);
    int32_t same = k; /* the first argument on the same storage (nt_args reads it) */
    for (int j = 0; j < k; j++)
      if (f->args[j].store->storage == st->storage) {
        same = j;
        break;
      }
    ty__sb_append(b, &same, sizeof same);
  }
  if (h->consts < sizeof *h || h->consts > f->scalar_bytes) return false;
  ty__sb_append(b, (const char *)f->scalars + sizeof *h, h->consts - sizeof *h);
  const unsigned char nt = stream; /* nt_stream's choice: the kernel's stores */
  ty__sb_append(b, &nt, 1);
  return !b->failed;
}

/* The remembered structure of f, added when new (NULL: no key, or the table
 * is full). */
static cg_pre *pre_find(ty__codegen *cg, const ty_pending *f, bool stream) {
  if (!structure_key(cg, f, stream)) return NULL;
  const uint64_t hash = key_hash(cg->key.p, cg->key.len);
  for (int i = 0; i < cg->npre; i++) {
    cg_pre *p = &cg->pre[i];
    if (p->hash == hash && p->len == cg->key.len && memcmp(p->key, cg->key.p, p->len) == 0) return p;
  }
  if (cg->npre >= CG_MAX_PRE) return NULL;
  if (cg->npre == cg->cap_pre) {
    int cap = cg->cap_pre ? 2 * cg->cap_pre : 16;
    cg_pre *q = ty__realloc(cg->pre, (size_t)cap * sizeof *q);
    if (!q) return NULL;
    cg->pre = q;
    cg->cap_pre = cap;
  }
  unsigned char *key = ty__malloc(cg->key.len);
  if (!key) return NULL;
  memcpy(key, cg->key.p, cg->key.len);
  cg_pre *p = &cg->pre[cg->npre++];
  *p = (cg_pre){.hash = hash, .key = key, .len = cg->key.len, .entry = -2};
  return p;
}

/* The source of f's kernel into b (empty), its layout and kind: the first
 * of the generators that takes f. False (b freed, *contig 0, *kind
 * TY__FK_FLAT) when none does. */
static bool write_source(const ty_pending *f, sbuf *b, uint64_t *contig, uint32_t *kind, bool stream) {
  *kind = TY__FK_FLAT;
  if (generate(f, b, contig, stream)) return true;
  free(b->p);
  *b = (sbuf){0};
  *kind = TY__FK_ROWS;
  if (generate2(f, b, contig)) return true;
  free(b->p);
  *b = (sbuf){0};
  *kind = TY__FK_SUM;
  if (generate3(f, b, contig, stream)) return true;
  free(b->p);
  *b = (sbuf){0};
  *kind = TY__FK_ROWSUM;
  if (generate4(f, b, contig, stream)) return true;
  free(b->p);
  *b = (sbuf){0};
  *contig = 0;
  *kind = TY__FK_FLAT;
  return false;
}

bool ty__codegen_source(const ty_pending *f, int lanes, bool stream, char **text, size_t *len,
                        uint32_t *kind) {
  *text = NULL;
  *len = 0;
  *kind = TY__FK_FLAT;
  if (lanes < 0 || !ty__isa_cflags_of(lanes)) return false;
  forced_lanes = lanes;
  sbuf b = {0};
  uint64_t contig = 0;
  const bool ok = CG_W != 0 && write_source(f, &b, &contig, kind, stream) && !b.failed;
  forced_lanes = -1;
  if (!ok) {
    free(b.p);
    *kind = TY__FK_FLAT;
    return false;
  }
  *text = b.p;
  *len = b.len;
  return true;
}

bool ty__codegen_unit(int lanes, const uint64_t *hash, char *const *text, const size_t *len, int n, char **out,
                      size_t *outlen) {
  *out = NULL;
  *outlen = 0;
  if (n < 1 || lanes < 0 || !ty__isa_cflags_of(lanes)) return false;
  forced_lanes = lanes;
  sbuf pre = {0}, u = {0};
  bool ok = CG_W != 0;
  if (ok) preamble(&pre);
  forced_lanes = -1;
  for (int i = 0; ok && i < n; i++) ok = !pre.failed && len[i] >= pre.len && !memcmp(text[i], pre.p, pre.len);
  ok = ok && unit(pre.p, pre.len, hash, text, len, n, &u);
  free(pre.p);
  if (!ok) {
    free(u.p);
    return false;
  }
  *out = u.p;
  *outlen = u.len;
  return true;
}

ty__fused_kernel ty__codegen_kernel(ty__codegen *cg, const ty_pending *f, uint64_t *contig,
                                    uint32_t *kind, uint64_t *pending) {
  *contig = 0;
  *kind = TY__FK_FLAT;
  *pending = 0;
  if (!cg || cg->mode == 0) return NULL;
  int64_t elems = 1;
  for (int d = 0; d < f->ndim; d++) elems *= f->domain[d];
  const bool small = cg->mode == 1 && elems < CG_MIN_ELEMS;
  if (small && elems < CG_SMALL_MIN) return NULL;
  if (cg->jobs) poll_jobs(cg);
  const bool stream = nt_stream(cg, f);
  cg_pre *p = pre_find(cg, f, stream);
  /* under CG_HOT_ELEMS, compiled in the background: not before the
   * structure's CG_SMALL_HOT-th sight, but loaded from the cache at once */
  const bool later = cg->mode == 1 && !cg->wait && !small && elems < CG_HOT_ELEMS && p &&
                     p->seen + 1 < CG_SMALL_HOT;
  if (p && p->seen == 0)
    p->late = cg->mode == 1 && !cg->wait && cg->first_job && ty__cc_now_ns() - cg->first_job > CG_LATE_NS;
  /* from CG_HOT_ELEMS, first seen late: not before CG_LATE_ELEMS elements */
  bool rent = false;
  if (p && p->late && elems >= CG_HOT_ELEMS && elems < CG_URGENT_ELEMS) {
    rent = p->interp < CG_LATE_ELEMS;
    p->interp += elems;
  }
  if (p) {
    p->seen++;
    if (p->entry == -1) return NULL;
    if (p->entry >= 0) {
      cg_entry *e = &cg->e[p->entry];
      if (e->job || e->queued) { /* compiling: the interpreter runs it meanwhile */
        e->urgent |= elems >= CG_URGENT_ELEMS; /* a queued kernel starts sooner */
        *pending = (uint64_t)(uintptr_t)e->slot;
        return NULL;
      }
      /* no room in the queue: no source text until there is some */
      if (!e->fn && !e->failed && !cg->wait && cg->nqueue >= CG_QUEUE_MAX) return NULL;
      if (e->fn) {
        *contig = p->contig;
        *kind = p->kind;
        return e->fn;
      }
      if (e->failed || (rent && e->deferred)) return NULL; /* deferred: its source is kept */
    }
    if (small && p->seen < CG_SMALL_HOT) return NULL;
  } else if (small) {
    return NULL;
  }
  sbuf b = {0};
  if (!write_source(f, &b, contig, kind, stream)) {
    if (p) p->entry = -1;
    return NULL;
  }
  uint64_t hash = fnv1a(b.p, b.len) ^ (uint64_t)b.len * 0x9e3779b97f4a7c15ULL;
  cg_entry *e = lookup(cg, hash);
  ty__fused_kernel fn = NULL;
  if (e && p) {
    p->entry = (int)(e - cg->e);
    p->kind = *kind;
    p->contig = *contig;
  }
  if (e && !e->failed) {
    e->seen++;
    /* in the background a compile costs the run nothing: at first sight;
     * waited for, at the second (a one-off expression never waits) or at
     * once from CG_EAGER_ELEMS */
    const bool want = !later && !rent &&
                      (cg->mode == 2 || small || !cg->wait || e->seen >= 2 || elems >= CG_EAGER_ELEMS);
    e->urgent |= elems >= CG_URGENT_ELEMS;
    if (elems > e->elems) e->elems = elems;
    if (!e->fn && !e->job && !e->queued && (want || cached(cg, e))) begin(cg, e, &b, *kind, *contig);
    if (rent && !e->fn && !e->job && !e->queued && !e->failed && !e->text && (e->text = ty__malloc(b.len))) {
      memcpy(e->text, b.p, b.len); /* for the runtime's end (ty__codegen_free) */
      e->len = b.len;
      e->deferred = true;
    }
    fn = e->fn;
    if (!fn && (e->job || e->queued)) *pending = (uint64_t)(uintptr_t)e->slot;
  }
  free(b.p);
  if (!fn) *contig = 0, *kind = TY__FK_FLAT;
  return fn;
}

/* Fusion's state in a runtime (fused.h): the task "fused"'s data, made with
 * the built-ins (builtins.c) and used by the fusion pass (plan/fuse.c). */
ty__fusion *ty__fusion_new(void) {
  ty__fusion *s = ty__calloc(1, sizeof *s);
  if (s) s->cg = ty__codegen_new();
  return s;
}

void ty__fusion_free(void *state) {
  ty__fusion *s = state;
  if (!s) return;
  ty__codegen_free(s->cg);
  free(s->scratch);
  if (s->fcache_free) s->fcache_free(s->fcache);
  free(s);
}
