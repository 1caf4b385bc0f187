/*
 * gpu_codegen.h — fused element-wise chains as generated CUDA kernels.
 *
 * A chain is described by a small IR (ty__gir): the store arguments of one
 * piece (dtype, element strides over the piece's domain, device address),
 * constants (Lua numbers: dtype and value), and sub-operations in program
 * order, each reading arguments, constants or temporaries and writing an
 * argument or a temporary. ty__gk_plan turns it into a plan: dims collapsed,
 * each argument classified (contiguous, a broadcast scalar, strided), the
 * index width chosen, and a STRUCTURAL key: everything that shapes the code
 * (dtypes, ops, operand classes, rank, index width, fastmath) and nothing
 * that does not (sizes, strides, addresses, constant values), so a loop that
 * runs the same chain on new data or with new constants compiles once.
 * Sizes, strides, addresses and constants travel as kernel parameters: one
 * struct of 8-byte words (ty__gk_params packs it).
 *
 * The generated kernel is one grid-stride loop; per element it loads each
 * input once (at its first use), keeps every intermediate in registers and
 * stores each written argument once, after the last sub-operation. Its
 * semantics are those of the CPU kernels (kernels_ew.c, kernels_cast.c):
 * integer arithmetic wraps, MOD is numpy's (x % 0 == 0 for integers),
 * MAXIMUM/MINIMUM propagate NaN, float -> integer casts saturate (NaN -> 0),
 * bool is one byte 0/1. NVRTC runs with --fmad=false (no contraction of
 * a*b+c into one rounding) so exact operations are bit-identical to the CPU;
 * exp log sin cos tanh pow (and tan, the inverse and hyperbolic functions,
 * exp2 log2 log10 expm1 log1p cbrt arctan2 hypot) use CUDA's libdevice
 * (1-2 ULP) where the CPU uses SLEEF (1 ULP): see docs/gpu.md for the bound.
 *
 * The source is plain enough to compile as C too (tests/c/test_gpu_codegen.c
 * runs generated kernels on the CPU, one "thread", against the CPU kernels).
 */
#ifndef TY_GPU_CODEGEN_H
#define TY_GPU_CODEGEN_H

#include "internal.h"

#include <stdbool.h>
#include <stdint.h>

#define TY__GK_MAX_CONSTS 128
#define TY__GK_MAX_TMPS 256
#define TY__GK_MAX_SUBS 512
#define TY__GK_BLOCK 256     /* threads per block: 8 warps, full occupancy at <= 64 regs */
#define TY__GK_VERSION 2     /* bump when the generated code changes: keys differ (2: f32 constants as f32 bits) */

/* An operand reference. */
typedef enum ty__grefkind { TY__GREF_ARG = 0, TY__GREF_CONST, TY__GREF_TMP } ty__grefkind;
typedef struct ty__gref {
  uint8_t kind; /* ty__grefkind */
  uint16_t idx;
} ty__gref;

typedef enum ty__gkind {
  TY__G_UNARY = 1, /* op, dt = compute dtype: out = op(in0); out dtype ty__op_out_dtype */
  TY__G_BINARY,    /* op, dt = compute dtype: out = op(in0, in1) */
  TY__G_WHERE,     /* dt = dtype of in1, in2, out: out = in0 ? in1 : in2 (in0 any dtype, != 0) */
  TY__G_CAST,      /* dt2 -> dt: out = cast(in0) (dt2 == dt: copy) */
  TY__G_FILL       /* dt: out = in0 (a constant) converted to dt */
} ty__gkind;

typedef struct ty__gsub {
  uint8_t kind; /* ty__gkind */
  uint8_t op;   /* ty_op */
  uint8_t dt, dt2;
  uint8_t nin;
  ty__gref out;
  ty__gref in[3];
} ty__gsub;

typedef struct ty__garg {
  ty_dtype dtype;
  int64_t strides[TY_MAX_RANK]; /* in elements over the IR's domain; 0: broadcast */
  uint64_t ptr;                 /* device address of the element at index 0 */
} ty__garg;

typedef struct ty__gconst {
  ty_dtype dtype;
  double f;  /* float dtypes */
  int64_t i; /* integer dtypes and bool */
} ty__gconst;

/* A full reduction that ends the chain (ty__gir.red): the value `in` of
 * every element is combined into the one element of argument `acc`, which
 * no sub-operation reads or writes. Kinds and types are reduce.cu's: sum
 * and prod of floats accumulate in double and give the input's dtype, of
 * integers and bool in wrapping unsigned 64-bit giving i64; min and max
 * keep the dtype and propagate NaN. The kernel is still ONE launch, in
 * reduce.cu's order for the same element count (ty__kred_plan): block b
 * takes elements [b per, (b+1) per) of the domain in C order, its threads
 * stride through them and combine as a shared-memory tree into
 * partials[b], and the last block to finish (an atomic counter) combines
 * the partials in block order and writes acc; or one thread walks all the
 * elements (few of them). So a fused run gives the bits of the unfused
 * reduction on the same device, the same every run. */
typedef struct ty__gred {
  bool on;
  uint8_t kind;     /* ty__redkind: SUM PROD MIN MAX */
  uint8_t acc_dt;   /* the accumulator argument's dtype */
  bool accumulate;  /* acc = acc op result (a REDUCE argument); else acc = result */
  uint16_t acc;     /* the argument it writes */
  ty__gref in;      /* the value reduced (argument, constant or temporary) */
} ty__gred;

typedef struct ty__gir {
  int ndim;
  int64_t shape[TY_MAX_RANK];
  int nargs;
  ty__garg args[TY_MAX_ARGS];
  int nconsts;
  ty__gconst consts[TY__GK_MAX_CONSTS];
  int ntmps;
  ty_dtype tmps[TY__GK_MAX_TMPS];
  ty__gred red;  /* a full reduction at the end, or red.on false */
  int nsubs;
  ty__gsub subs[TY__GK_MAX_SUBS];
  bool fastmath; /* allow FMA contraction (--fmad=true): the `fastmath` policy axis */
} ty__gir;

/* How the kernel reaches an argument. */
typedef enum ty__gaccess {
  TY__GA_UNUSED = 0,
  TY__GA_CONTIG,  /* element i of the collapsed domain: ptr[i] */
  TY__GA_SCALAR,  /* strides all 0: one element (read once, before the loop) */
  TY__GA_STRIDED  /* ptr[sum idx[d] * stride[d]] over the collapsed dims */
} ty__gaccess;

typedef struct ty__gplan {
  int ndim;                      /* collapsed rank (0 for a single element) */
  int64_t shape[TY_MAX_RANK];
  int64_t n;                     /* elements; 0: nothing to launch */
  uint8_t access[TY_MAX_ARGS];   /* ty__gaccess */
  uint8_t rw[TY_MAX_ARGS];       /* bit 0 read, bit 1 written */
  int64_t strides[TY_MAX_ARGS][TY_MAX_RANK]; /* collapsed, in elements */
  bool any_strided;
  bool wide;                     /* 64-bit indices (n or an offset beyond 2^31) */
  int nwords;                    /* kernel parameter words */
  uint64_t hash;                 /* FNV-1a of the key */
  size_t keylen;
  uint8_t key[4096];             /* the structural key (see above) */
  char name[32];                 /* "ty_fused_<16 hex digits>" */
} ty__gplan;

/* Validate the IR and plan it. TY_EINVAL / TY_EDTYPE / TY_ELIMIT with a
 * message in err (a combination the kernels do not implement, a temporary
 * read before it is written, an output with a broadcast dim, ...). */
ty_status ty__gk_plan(const ty__gir *ir, ty__gplan *plan, char *err, size_t errlen);

/* The CUDA C source of the plan's kernel (malloc'd, free() it); NULL when
 * out of memory. The kernel is `extern "C" __global__ void <plan->name>
 * (const struct ty_params p)`, p.w[0 .. plan->nwords). */
char *ty__gk_source(const ty__gir *ir, const ty__gplan *plan);

/* Kernel parameters: words[0 .. plan->nwords) (room for TY__GK_MAX_WORDS).
 * With a reduction the last five words are the accumulator's address, then
 * four the launcher writes: elements per block (`per`), 1 when one thread
 * walks them all (`seq`, a one-block grid), the device addresses of the
 * partials (one 8-byte word per block) and of a 4-byte counter that is
 * zero before the launch (the kernel leaves it zero); the last two are
 * unused with one block. */
#define TY__GK_MAX_WORDS (7 + TY_MAX_RANK + TY_MAX_ARGS * (1 + TY_MAX_RANK) + TY__GK_MAX_CONSTS)
void ty__gk_params(const ty__gir *ir, const ty__gplan *plan, int64_t *words);

/* Grid size for `sms` multiprocessors: enough blocks to cover n (up to 32
 * resident blocks of 256 threads per SM, the grid-stride loop does the rest). */
unsigned ty__gk_grid(const ty__gplan *plan, int sms);

/* The IR of one piece of a fused launch (fused.h): `scalars` its packed
 * description, `shape` the piece's extent, tiles[k] argument k's tile (its
 * strides; data ignored), devptr[k] the device address of tile k's first
 * element. A last sub-operation that reduces the whole domain into one
 * element (sum prod min max) becomes ir->red. TY_EDTYPE when the run holds
 * something the generated kernel does not do (a reduction along axes, a
 * registered task, a whole-store argument): run it as separate kernels
 * then. */
ty_status ty__gk_from_fused(const void *scalars, size_t scalar_bytes, int ndim,
                            const int64_t *shape, int nargs, const ty_tile *tiles,
                            const uint64_t *devptr, ty__gir *ir, char *err, size_t errlen);

/* The compiled kernel of a plan for compute capability `arch` (90 for 9.0):
 * through the PTX caches of gpu_nvrtc.h, generating the source only on a
 * miss. */
struct ty__ptx_cache;
struct ty__ptx_entry;
ty_status ty__gk_kernel(struct ty__ptx_cache *cache, const ty__gir *ir, const ty__gplan *plan,
                        int arch, struct ty__ptx_entry **out, char *err, size_t errlen);

/* C type and short name of a dtype in generated code ("double", "f64"). */
const char *ty__gk_ctype(ty_dtype t);

#endif /* TY_GPU_CODEGEN_H */
