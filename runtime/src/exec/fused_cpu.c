/*
 * fused_cpu.c — the CPU kernel of the task "fused": one piece of a fused run,
 * computed block by block (the description is in fused.h; the pass that
 * writes it in fuse.c).
 *
 * A piece is cut into blocks of at most block_elems() elements and every
 * sub-operation runs over a block before the next block starts, so what a
 * sub-operation writes is still in L1/L2 when the next one reads it.
 * Temporaries (block slots) exist only as one block-sized buffer each and
 * are never allocated in memory. Built-in sub-operations call the same 1-D
 * kernels as their own tasks (kernels_*.c), so a fused element-wise result is
 * bit-identical to the unfused one: same loops, same vector math, same
 * operation order per element.
 *
 * Two ways to cut a piece:
 *  - flat: when every store argument's tile collapses to one strided run over
 *    the piece (what ty__foreach would merge: contiguous tiles, 0-d inputs
 *    broadcast with stride 0, strided 1-D slices), blocks are ranges
 *    [off, off + len) of that run and each sub-operation is one call of its
 *    1-D loop: ~10 ns of dispatch per sub-operation and block;
 *  - box: otherwise (row broadcasts, transposed inputs, axis reductions,
 *    registered tasks over n-d domains) blocks are n-d boxes — whole inner
 *    dims while they fit, then a chunk of the next dim — and each
 *    sub-operation runs ty__foreach over its block; 2-D blocks of whole
 *    short rows run in column order (run_box, session 18: slots stored
 *    column by column, one 1-D call per column and sub-operation).
 *
 * Reductions (only ever the last sub-operation, fuse.c) accumulate block by
 * block into the launch's accumulator tile (a reduction private tile, or the
 * output in OUT mode). Float sums and products follow the ordered scheme of
 * kernels_reduce.c, so that a fused sum has the unfused sum's bits:
 *  - FULL (no kept dim): the piece's elements in C order go through one
 *    ty__ostream (128-element leaves, an aligned binary tree), block after
 *    block; blocks are multiples of 128 elements, so in flat mode every block
 *    starts a leaf and whole subtrees go to the pairwise function;
 *  - INNER: a row shorter than a block is whole in each block and the loop
 *    reduces it as the unfused kernel does; a longer row is cut into blocks
 *    along it, fed to a stream that ends with the row;
 *  - OUTER: the in-order loop, whatever the block's shape;
 *  - a one-piece launch whose accumulator is REDUCE walks the ordered tiles
 *    (ty__ordered_walk), as ty__reduce_variant does.
 * min, max and integer reductions accumulate block by block directly.
 * An arg reduction (argmin/argmax, fuse.c) reduces the last dim, which the
 * launch never splits and which is at most TY__FUSE_ARG_ROW long: box blocks
 * (flat mode is not used) hold whole rows, and each row is scanned at once by
 * the unfused task's loop (ties: the first index; a NaN: the first NaN), or,
 * in column order, column by column for all the block's rows (arg_cols: the
 * same rule, so the same index).
 *
 * Registered tasks (user tasks marked point-wise, the generators) run on each
 * block with a child context that holds only their own arguments, their own
 * task identity, data and scalars, and the block's box as lo/hi: a
 * point-wise task computes the same elements whatever box it is given.
 *
 * Failures. A registered task that fails takes down only what depends on
 * it (DESIGN §5; the run's other members are independent launches that
 * happened to fuse): the piece goes on with every later block, skipping the
 * failed sub-operation and each sub-operation that reads what a skipped one
 * left unwritten (a slot or an argument; a complete write by one that runs
 * makes it good again), and reports which written arguments the failures
 * reached (ty_ctx_fail_reached); the runtime cancels those only. The
 * piece's message is the failure of the first such sub-operation in
 * program order. Internal errors (no kernel, block buffers out of memory)
 * still fail the whole launch.
 *
 * Switching inside a launch (session 16). A launch fused while its kernel
 * was compiling in the background names the kernel's slot (h->pending,
 * fused_codegen.c). Its interpreted pieces of SWITCH_MIN elements or more
 * run in chunks of about SWITCH_ELEMS elements and ask the slot before each
 * chunk (an atomic load; a look into the cache directory at most every 2
 * ms); once the kernel is there, the rest of the piece runs compiled. Only
 * where the bits are the interpreter's whatever the cut: element-wise runs
 * (flat, a FLAT kernel) and 2-D runs whose reductions are min/max or
 * argmin/argmax along whole rows, cut between rows (box, a ROWS kernel:
 * each row's result is made by one side only). Runs with sums (ordered
 * streams), tasks, failures or whole-store operands never switch.
 */
#include "alloc.h"
#include "fused.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Elements per block: the block's working set — one block of every slot
 * and store argument, 8 bytes an element at most — is kept near 64 KiB
 * (this machine: 48 KiB L1d, 2 MiB L2 per core), in multiples of 128
 * elements (an ordered sum's leaf), between 512 and 4096. Black-Scholes (~10
 * slots, 5 arguments) gets 512: measured 0.060 s against 0.069 s at 1024 and
 * 0.092 s at 2048 (4M options, one thread, interpreter); a 6-op chain over 2
 * arrays gets 1536, where the block size does not matter (memory-bound). */
static int64_t block_elems(const ty__fhead *h) {
  int64_t b = (64 << 10) / (8 * ((int64_t)h->nslots + h->nargs + 1));
  b = b / TY__OLEAF * TY__OLEAF;
  return b < 512 ? 512 : b > 4096 ? 4096 : b;
}

/* Column order's longest row (fused_piece, run_box). */
#define COLS_MAX 64
#ifndef COLS_ARG_BLOCK
#define COLS_ARG_BLOCK 2048
#endif

/* A flat run down a column of a grid whose rows are a multiple of 512 bytes
 * apart (CG 256^2's edge regions, plan/regions.c: 2 KiB) puts every
 * element on a line of the same few L1 sets (64 sets of 64-byte lines: 8
 * sets at most, 1 from 4 KiB), which hold 8 lines each: a block of 512 such
 * elements is out of L1 before the next sub-operation reads it again, so
 * every sub-operation loads every line again. Blocks of PITCH_BLOCK elements
 * keep a block's lines of every operand in those sets while its
 * sub-operations run (what a compiled column kernel does with 8 rows at
 * once, fused_codegen.c's generate_col). Measured (interpreter,
 * TYCHO_CODEGEN=off, medians of alternated runs, session 27): CG 256^2
 * 0.087 -> 0.082 s a solve; six sub-operations over two strided views,
 * 4,096 elements 2 KiB apart 0.07 -> 0.06 ms, 16,384 elements 16 KiB apart
 * 0.27 -> 0.17 ms; a C loop of the edges' four sub-operations, 254
 * elements 2 KiB apart: 26 us at blocks of 254, 13 us at 8. Only up to
 * PITCH_MAX_ELEMS: at 65,536 elements 2 KiB apart the calls' cost wins
 * (0.90 -> 1.08 ms; a long constant stride is what the prefetchers follow),
 * and other strides spread over all sets (a 64-byte step: 5.3 ms at the
 * usual block against 7.0 ms at 8). Runs ending in a reduction keep their
 * blocks of whole 128-element leaves. */
#define PITCH_BLOCK 8
#define PITCH_MAX_ELEMS ((int64_t)1 << 14)

static bool pitched(const ty_task_ctx *ctx, const int64_t *flat_stride) {
  for (int a = 0; a < ctx->nargs; a++) {
    int64_t b = flat_stride[a] * (int64_t)ty__dtype_size(ctx->args[a].dtype);
    if (b < 0) b = -b;
    if (b >= 512 && b % 512 == 0) return true;
  }
  return false;
}

/* How an ordered reduction reaches its accumulator (see the top). */
enum { STREAM_NONE = 0, STREAM_PIECE, STREAM_ROWS };

/* A sub-operation resolved for this piece. */
typedef struct rsub {
  const ty__fsub *s;
  ty_loop1d fn;          /* built-ins: the 1-D loop (REDUCE: the one for its scheme) */
  const void *aux;       /* FILL: its ty__fillval */
  const ty_task *task;   /* TASK */
  ty_argloop arg;        /* ARGREDUCE: the row scan */
  const void *scalars;   /* TASK: its own packed scalars */
  int first;             /* its first operand in the piece's operand arrays */
  int stream;            /* REDUCE: STREAM_* */
  ty_loop1d feed;        /* REDUCE with a stream: feeds a run to os */
  ty__ostream *os;       /* REDUCE: its stream */
  int8_t chain;          /* a chain's head (mark_chains): the sub-operations after it in its pass */
  int8_t form;           /* a chain's link: its op and side (CH_*) */
  int8_t cpos;           /* a link: its other input, 1 or 2 */
  bool over;             /* a link: the one before wrote the place this one writes (not a slot) */
  int8_t fit;            /* a chain's head, flat: its layout fits every block (1), none (-1), ask (0) */
  bool pair;             /* a chain's head: a mul and one add or sub (pair_loops) */
  bool tail;             /* a chain's head: its last link has a form of its own and a constant */
  bool link;             /* a chain's link */
  bool dot;              /* a mul whose product only the f64 sum after it reads (mark_chains) */
} rsub;

/* An operand resolved for this piece: where its data is and how to walk it. */
typedef struct ropnd {
  char *base;      /* memory: the tile's first element; slot: its buffer; constant: its bytes */
  bool mem;        /* a store argument (offset by the block's position) */
  bool whole;      /* a WHOLE argument (a task sees the whole store) */
  int16_t ref;
  int64_t es;      /* element size */
  int64_t step;    /* flat: bytes per element of block offset (0 for slots and constants) */
  int64_t stride;  /* flat: the kernel's byte stride */
} ropnd;

/* A piece's task failures (see the top); one record for the ordered tiles
 * of a walked piece. */
typedef struct fused_fail {
  int rc;           /* the status of the first failed sub-operation; 0: none */
  int sub;          /* which one: its message is in ctx->errbuf */
  uint64_t reached; /* the written arguments the failures reached */
} fused_fail;

typedef struct piece_state {
  ty_task_ctx *ctx;
  fused_fail *fail;            /* NULL: the first failure ends the piece */
  uint8_t *failed;             /* per sub-operation: its task failed (has_task only) */
  uint8_t *skip;               /* per sub-operation: failed, or reads what a skipped one wrote */
  uint8_t *tslot;              /* per slot: a skipped sub-operation left it unwritten */
  uint64_t unavail;            /* arguments unavailable from the start (ty_reach) */
  const ty__fhead *h;
  int nd;
  int64_t P[TY_MAX_RANK]; /* the piece's extent */
  int nsub;
  rsub *rs;
  ropnd *ro;
  int64_t (*bst)[TY_MAX_RANK]; /* box: byte strides per operand and dim */
  ty_tile *tiles;              /* scratch for a task's child context */
  int max_nops;
  int64_t block;               /* elements per block (block_elems) */
  uint64_t sw_contig;          /* switching: the arrived kernel's layout */
  bool cols;                   /* box, 2-D, short whole rows: column order (see run_box) */
} piece_state;

/* A stream's result into the accumulator at acc. */
static void stream_apply(const rsub *r, char *acc) {
  ty__ordered_apply(acc, (ty_dtype)r->s->dt, (ty__redkind)r->s->op, ty__ostream_finish(r->os));
}

/* After a failure: which sub-operations a block skips from now on, and the
 * written arguments the failures reached (ty__fused_taint). */
static void taint(piece_state *ps) {
  ps->fail->reached |= ty__fused_taint(ps->h, ps->unavail, ps->failed, ps->skip, ps->tslot, NULL);
}

/* Run a registered task on one block: a child context with its own arguments
 * as tiles of the block (rel: the block's position in the piece, cur: its
 * extent; bases: the block's address of each operand). A failure is
 * recorded and the piece goes on (ps->fail, see the top), or, without a
 * record, returned. */
static int run_task(piece_state *ps, int k, const int64_t *rel, const int64_t *cur,
                    char *const *bases) {
  const rsub *r = &ps->rs[k];
  ty_task_ctx *ctx = ps->ctx;
  const ty__fsub *s = r->s;
  const int64_t *domain = ty__fhead_domain(ps->h);
  for (int j = 0; j < s->nops; j++) {
    const ropnd *o = &ps->ro[r->first + j];
    ty_tile *t = &ps->tiles[j];
    if (o->whole) {
      *t = ctx->args[o->ref];
      continue;
    }
    t->data = bases[j];
    t->dtype = (ty_dtype)s->opnd[j].dtype;
    t->ndim = ps->nd;
    for (int e = 0; e < ps->nd; e++) {
      t->shape[e] = cur[e];
      t->strides[e] = ps->bst[r->first + j][e] / o->es;
      t->lo[e] = ctx->lo[e] + rel[e];
      t->gshape[e] = o->mem ? ctx->args[o->ref].gshape[e] : domain[e];
    }
  }
  ty_task_ctx child = *ctx;
  child.task = r->task;
  child.task_name = ty_task_name(r->task);
  child.task_data = ty_task_data(r->task);
  child.threads = 1;
  child.nargs = s->nops;
  child.args = ps->tiles;
  child.scalars = r->scalars;
  child.scalar_bytes = s->scalar_len;
  for (int e = 0; e < ps->nd; e++) {
    child.lo[e] = ctx->lo[e] + rel[e];
    child.hi[e] = child.lo[e] + cur[e];
  }
  char msg[TY_ERRLEN];
  msg[0] = 0;
  child.errbuf = msg;
  child.errcap = sizeof msg;
  child.reach = NULL; /* its argument numbers are not the fused launch's */
  int rc = r->task->cpu(&child);
  if (rc == 0) return 0;
  rc = rc < 0 ? rc : TY_ETASK;
  fused_fail *f = ps->fail;
  if ((!f || !f->rc || k < f->sub) && ctx->errbuf && ctx->errcap)
    snprintf(ctx->errbuf, ctx->errcap, "task '%s' (fused): %s", child.task_name,
             msg[0] ? msg : ty_status_name(rc));
  if (!f) return rc;
  if (!f->rc || k < f->sub) f->rc = rc, f->sub = k;
  ps->failed[k] = 1;
  taint(ps);
  return 0;
}

/* Resolve the description's sub-operations for this piece. */
static int resolve(piece_state *ps) {
  ty_task_ctx *ctx = ps->ctx;
  const ty__fhead *h = ps->h;
  const ty__fsub *s = ty__fsub_first(h);
  int nop = 0;
  for (int k = 0; k < ps->nsub; k++, s = ty__fsub_next(s)) {
    rsub *r = &ps->rs[k];
    memset(r, 0, sizeof *r);
    r->s = s;
    r->first = nop;
    nop += s->nops;
    const bool fast = s->flags & TY__FS_FASTMATH;
    const ty_dtype dt = (ty_dtype)s->dt, dt2 = (ty_dtype)s->dt2;
    switch (s->kind) {
    case TY__FK_UNARY: r->fn = (fast ? ty__unary_loops_fast : ty__unary_loops)[s->op][dt]; break;
    case TY__FK_BINARY: r->fn = (fast ? ty__binary_loops_fast : ty__binary_loops)[s->op][dt]; break;
    case TY__FK_WHERE: r->fn = ty__where_loops[dt]; break;
    case TY__FK_CAST: r->fn = ty__cast_loops[dt2][dt]; break;
    case TY__FK_FILL:
      r->fn = ty__fill_loops[dt];
      r->aux = (const char *)h + s->scalar_off;
      break;
    case TY__FK_REDUCE:
      r->fn = s->op < TY__NREDKIND ? ty__reduce_loops[s->op][dt2][dt] : NULL;
      if (r->fn && ty__reduce_ordered((ty__redkind)s->op, dt) && !ty__ostream_feeds[s->op][dt2])
        r->fn = NULL;
      break;
    case TY__FK_ARGREDUCE:
      r->arg = dt2 < TY_NDTYPES ? (s->op ? ty__argmax_loops : ty__argmin_loops)[dt2] : NULL;
      if (!r->arg || (s->nops != 2 && s->nops != 3) || dt != TY_I64 || ps->nd < 2 ||
          (s->nops == 3 && (s->opnd[2].dtype != dt2 || (dt2 != TY_F64 && dt2 != TY_F32))) ||
          ctx->lo[ps->nd - 1] != 0 || ps->P[ps->nd - 1] != ty__fhead_domain(h)[ps->nd - 1] ||
          ps->P[ps->nd - 1] > TY__FUSE_ARG_ROW)
        return ty_ctx_fail(ctx, "fused: arg reduction %d needs whole rows of at most %d", k + 1,
                           TY__FUSE_ARG_ROW);
      break;
    case TY__FK_TASK:
      r->task = ty_task_at(ctx->rt, s->task);
      r->scalars = (const char *)h + s->scalar_off;
      if (!r->task) return ty_ctx_fail(ctx, "fused: sub-operation %d names no task (id %d)", k + 1, (int)s->task);
      break;
    default: return ty_ctx_fail(ctx, "fused: sub-operation %d has an unknown kind %d", k + 1, s->kind);
    }
    if (s->kind != TY__FK_TASK && s->kind != TY__FK_ARGREDUCE && !r->fn)
      return ty_ctx_fail(ctx, "fused: no kernel for sub-operation %d (kind %d, op %d, %s, %s)", k + 1,
                         s->kind, s->op, ty_dtype_name(dt), ty_dtype_name(dt2));
  }
  return 0;
}

/* REDUCE in OUT mode: the piece owns its outputs and sets each distinct one
 * to the identity first (what ty__reduce_variant does). */
static void init_out(piece_state *ps, const rsub *r) {
  const ty_tile *acc = &ps->ctx->args[r->s->opnd[0].ref];
  int64_t shape[TY_MAX_RANK], st[1][TY_MAX_RANK];
  const int64_t es = (int64_t)ty__dtype_size(acc->dtype);
  for (int d = 0; d < acc->ndim; d++) {
    shape[d] = acc->strides[d] == 0 && acc->shape[d] > 0 ? 1 : acc->shape[d];
    st[0][d] = acc->strides[d] * es;
  }
  ty__fillval id = ty__reduce_identity((ty__redkind)r->s->op, acc->dtype);
  char *base = acc->data;
  ty__foreach(acc->ndim, shape, 1, &base, (const int64_t(*)[TY_MAX_RANK])st,
              ty__fill_loops[acc->dtype], &id);
}

/* Every store argument's tile collapses to one strided run over the piece:
 * returns true and sets each argument operand's flat stride. has_whole:
 * some operand is a whole-store one (else the look for one is skipped: it
 * was a quarter of fused_piece's own instructions in CG at 256^2, whose
 * Laplacian runs have ~30 operands over ~8 arguments, per ordered tile). */
static bool flat_layout(piece_state *ps, int64_t *flat_stride, bool has_whole) {
  ty_task_ctx *ctx = ps->ctx;
  for (int a = 0; a < ctx->nargs; a++) {
    const ty_tile *t = &ctx->args[a];
    int last = -1;
    bool whole_arg = false;
    for (int k = 0; k < ps->nsub && has_whole && !whole_arg; k++)
      for (int j = 0; j < ps->rs[k].s->nops; j++)
        if (ps->rs[k].s->opnd[j].ref == a && TY__FOPND_PROJ(&ps->rs[k].s->opnd[j]) == TY_PROJ_WHOLE)
          whole_arg = true;
    if (whole_arg) return false;
    for (int d = 0; d < ps->nd; d++) {
      if (ps->P[d] == 1) continue;
      if (last >= 0 && t->strides[last] != t->strides[d] * ps->P[d]) return false;
      last = d;
    }
    flat_stride[a] = last >= 0 ? t->strides[last] : 0;
  }
  return true;
}

/* Sub-operation r's operands in a flat block at element `off`: p, st. */
static inline void flat_operands(const piece_state *ps, const rsub *r, int64_t off, char **p, int64_t *st) {
  const ropnd *o = &ps->ro[r->first];
  for (int j = 0; j < r->s->nops; j++) {
    p[j] = o[j].base + off * o[j].step;
    st[j] = o[j].stride;
  }
}

/* Sub-operation r's operand bases in box mode at block position rel (dims
 * 0 .. sd moved). */
static inline void box_operands(const piece_state *ps, const rsub *r, const int64_t *rel, int sd, char **bases) {
  const ropnd *o = &ps->ro[r->first];
  for (int j = 0; j < r->s->nops; j++) {
    char *b = o[j].base;
    if (o[j].mem && !o[j].whole)
      for (int e = 0; e <= sd && e < ps->nd; e++) b += rel[e] * ps->bst[r->first + j][e];
    bases[j] = b;
  }
}

/* ---- chains of f64 arithmetic, in one pass --------------------------------------------- *
 *
 * `x + alpha * p`, `r - alpha * Ap`, `r + beta * p`, and CG's Laplacian
 * `Av = 4 * v; Av -= v_up; Av -= v_down; Av -= v_left; Av -= v_right`: an
 * f64 add, sub, mul or div (the head), then operations of one form (the
 * links: the same op, the chain's value on the same side), each reading
 * the one before's result T (a slot that nothing later reads, or the very
 * place it writes itself). The interpreter ran them as passes over the
 * block, each writing T for the next to read; one loop computes the whole
 * chain per element, in vectors as wide as a register of the level this
 * copy of the file is compiled for (GCC's vector extension; 8 lanes at
 * AVX2 ran interpreted Black-Scholes 1.8x slower than 4). The same
 * roundings in the same order (-ffp-contract=off: never a fused
 * multiply-add), so the same bits; one pass, and no slot written and read
 * again. A multiply and one add or sub after it (session 28's pairs: CG's
 * three updates) run through their own loops, which take a one-element
 * add operand too. A mul and the sum after it (a dot product) feed the
 * sum's stream the products as they are made (mark_chains, run_flat).
 * Interpreted CG 256^2 0.126 -> 0.096 s a run (one processor, paired 0.76;
 * AVX2 0.79), the stencil 2048^2 0.64, Black-Scholes (pairs only) within
 * the code layout's noise, against session 28's pairs (bench/README,
 * "Issue 19 rows: session 29"). */

/* A link's operation and side: (op << 1) | 1 when T is its second operand
 * (c op t), else t op c; the head's is its own op (a op b). Where two NaNs
 * meet, the C compiler may still order an add's or a mul's operands either
 * way: docs/fusion.md. */
enum { CH_ADD, CH_SUB, CH_MUL, CH_DIV };
#define CHAIN_MAX 8 /* sub-operations in a chain: the head and 7 links */

/* t + c, c + t, t - c, c - t: a pair's add in its own order */
enum { PAIR_ADD_TC, PAIR_ADD_CT, PAIR_SUB_TC, PAIR_SUB_CT };

#define PAIR_LOOP(FORM, AX, BX, CX)                                                    \
  for (int64_t i = 0; i < n; i++) {                                                    \
    const double t_ = (AX) * (BX), c_ = (CX);                                          \
    o[i] = FORM == PAIR_ADD_TC ? t_ + c_ : FORM == PAIR_ADD_CT ? c_ + t_               \
         : FORM == PAIR_SUB_TC ? t_ - c_ : c_ - t_;                                    \
  }
/* the layouts: A or B one element (not both), C one element or not */
#define PAIR_LAYOUTS(FORM)                                                             \
  if (a_one && c_one) { PAIR_LOOP(FORM, a0, b[i], c0) }                                \
  else if (a_one) { PAIR_LOOP(FORM, a0, b[i], c[i]) }                                  \
  else if (b_one && c_one) { PAIR_LOOP(FORM, a[i], b0, c0) }                           \
  else if (b_one) { PAIR_LOOP(FORM, a[i], b0, c[i]) }                                  \
  else if (c_one) { PAIR_LOOP(FORM, a[i], b[i], c0) }                                  \
  else { PAIR_LOOP(FORM, a[i], b[i], c[i]) }

/* not in line: inlined into chain_sweep_run, the AVX2 copy ran interpreted
 * Black-Scholes 5% slower (paired, 9 rounds) */
static __attribute__((noinline)) void pair_loops(int form, int64_t n, double *o, const double *a, bool a_one, const double *b,
                       bool b_one, const double *c, bool c_one) {
  const double a0 = *a, b0 = *b, c0 = *c;
  switch (form) {
  case PAIR_ADD_TC: PAIR_LAYOUTS(PAIR_ADD_TC) break;
  case PAIR_ADD_CT: PAIR_LAYOUTS(PAIR_ADD_CT) break;
  case PAIR_SUB_TC: PAIR_LAYOUTS(PAIR_SUB_TC) break;
  default: PAIR_LAYOUTS(PAIR_SUB_CT) break;
  }
}
#undef PAIR_LAYOUTS
#undef PAIR_LOOP

/* a vector register of the level this copy is compiled for, any alignment */
#if defined(__AVX512F__)
#define CHAIN_LANES 8
#elif defined(__AVX__)
#define CHAIN_LANES 4
#else
#define CHAIN_LANES 2
#endif
typedef double chain_vec __attribute__((vector_size(8 * CHAIN_LANES), aligned(8)));

#define CHAIN_OP(OP, X, Y) \
  ((OP) == CH_ADD ? (X) + (Y) : (OP) == CH_SUB ? (X) - (Y) : (OP) == CH_MUL ? (X) * (Y) : (X) / (Y))

/* R = X op Y in vectors (a statement: no vector crosses a call, whose ABI
 * would differ between the ISA levels) */
#define CHAIN_VOP(R, OP, X, Y)                                                         \
  switch (OP) {                                                                        \
  case CH_ADD: R = (X) + (Y); break;                                                   \
  case CH_SUB: R = (X) - (Y); break;                                                   \
  case CH_MUL: R = (X) * (Y); break;                                                   \
  default: R = (X) / (Y); break;                                                       \
  }

/* A sweep's operands: the chain's output O (contiguous) and its inputs,
 * the head's two then each link's other one, each contiguous or one
 * element (one[i]); and, from chain_fits, their byte strides in the block
 * (chain_rows moves along them). */
typedef struct chain_sweep {
  double *o;
  const double *in[CHAIN_MAX + 1];
  bool one[CHAIN_MAX + 1];
  const int64_t *ost, *ist[CHAIN_MAX + 1];
} chain_sweep;

/* A chain's operands in a block: sub-operation k + i's operand j at
 * p[i][j], its byte strides (one per dim of the block) at st[i][j]. */
typedef struct chain_block {
  char *p[CHAIN_MAX][3];
  const int64_t *st[CHAIN_MAX][3];
} chain_block;

/* The chain over n elements into o: the head's op (CH_*) on in[0] and
 * in[1] (one[j]: one element, read from a vector of its value), then each
 * link's form on in[2 .. nl + 1], contiguous. Only chains whose links have
 * one form (mark_chains): a loop that chose the operation of each link for
 * each vector took 5-10% longer on CG's Laplacian, and a mix of
 * operations over Black-Scholes' blocks (in L1) was no faster than the
 * separate passes, 8 operations a chain and 4 vectors at a time
 * included. */
static void chain_loop(int64_t n, double *o, const double *const *in, const bool *one, int head, int form, int nl,
                       int tail) {
  const int nin = nl + 2, nu = tail >= 0 ? nin - 1 : nin; /* the one-form links' inputs: 2 .. nu - 1 */
  double bc[2][CHAIN_LANES]; /* one-element inputs of the head, in every lane */
  const double *p[2];
  int64_t inc[2];
  for (int j = 0; j < 2; j++) {
    p[j] = in[j];
    inc[j] = CHAIN_LANES;
    if (one[j]) {
      for (int l = 0; l < CHAIN_LANES; l++) bc[j][l] = in[j][0];
      p[j] = bc[j];
      inc[j] = 0;
    }
  }
  const double *c[CHAIN_MAX + 1];
  for (int j = 2; j < nin; j++) c[j] = in[j];
  const double tc = tail >= 0 ? in[nin - 1][0] : 0; /* the tail's constant */
  chain_vec tv;
  for (int l = 0; l < CHAIN_LANES; l++) tv[l] = tc;
  const int top = tail >> 1;
  int64_t i = 0;
#define CHAIN_UNIFORM(EXPR, TAIL)                                                      \
  for (; i + CHAIN_LANES <= n; i += CHAIN_LANES) {                                     \
    const chain_vec a = *(const chain_vec *)p[0], b = *(const chain_vec *)p[1];        \
    chain_vec t;                                                                       \
    CHAIN_VOP(t, head, a, b)                                                           \
    p[0] += inc[0];                                                                    \
    p[1] += inc[1];                                                                    \
    for (int j = 2; j < nu; j++) {                                                     \
      const chain_vec u = *(const chain_vec *)(c[j] + i);                              \
      t = EXPR;                                                                        \
    }                                                                                  \
    TAIL *(chain_vec *)(o + i) = t;                                                    \
  }
#define CHAIN_TAIL                                                                     \
  if (tail & 1) { CHAIN_VOP(t, top, tv, t) }                                           \
  else { CHAIN_VOP(t, top, t, tv) }
#define CHAIN_FORMS(TAIL)                                                              \
  switch (form) {                                                                      \
  case CH_ADD << 1: CHAIN_UNIFORM(t + u, TAIL) break;                                  \
  case CH_ADD << 1 | 1: CHAIN_UNIFORM(u + t, TAIL) break;                              \
  case CH_SUB << 1: CHAIN_UNIFORM(t - u, TAIL) break;                                  \
  case CH_SUB << 1 | 1: CHAIN_UNIFORM(u - t, TAIL) break;                              \
  case CH_MUL << 1: CHAIN_UNIFORM(t * u, TAIL) break;                                  \
  case CH_MUL << 1 | 1: CHAIN_UNIFORM(u * t, TAIL) break;                              \
  case CH_DIV << 1: CHAIN_UNIFORM(t / u, TAIL) break;                                  \
  default: CHAIN_UNIFORM(u / t, TAIL) break;                                           \
  }
  if (tail >= 0) {
    CHAIN_FORMS(CHAIN_TAIL)
  } else {
    CHAIN_FORMS()
  }
#undef CHAIN_FORMS
#undef CHAIN_TAIL
#undef CHAIN_UNIFORM
  const int op = form >> 1;
  for (; i < n; i++) {
    double t = CHAIN_OP(head, in[0][one[0] ? 0 : i], in[1][one[1] ? 0 : i]);
    for (int j = 2; j < nu; j++) t = form & 1 ? CHAIN_OP(op, c[j][i], t) : CHAIN_OP(op, t, c[j][i]);
    if (tail >= 0) t = tail & 1 ? CHAIN_OP(top, tc, t) : CHAIN_OP(top, t, tc);
    o[i] = t;
  }
}
#undef CHAIN_OP
#undef CHAIN_VOP

/* Whether the loops take a chain with these one-element inputs (one[]:
 * the head's two, then the links'): a pair's, any but both of the mul's;
 * chain_loop's, contiguous links of one form (the tail's: a constant). */
static bool chain_takes(const piece_state *ps, int k, const bool *one) {
  const rsub *h = &ps->rs[k];
  if (h->pair) return !(one[0] && one[1]);
  for (int j = 2; j < h->chain + 2 - h->tail; j++)
    if (one[j]) return false;
  return true;
}

/* Runs the chain headed by sub-operation k over a sweep of n elements. */
static void chain_sweep_run(const piece_state *ps, int k, int64_t n, double *o, const double *const *in,
                            const bool *one) {
  const rsub *h = &ps->rs[k];
  const int f = ps->rs[k + 1].form;
  if (h->pair)
    pair_loops((f >> 1 == CH_SUB ? PAIR_SUB_TC : PAIR_ADD_TC) + (f & 1), n, o, in[0], one[0], in[1], one[1], in[2],
               one[2]);
  else
    chain_loop(n, o, in, one, h->s->op - TY_OP_ADD, f, h->chain, h->tail ? ps->rs[k + h->chain].form : -1);
}

/* The bytes [lo, hi) an operand covers in a block of extent cur (nd dims,
 * byte strides bst, first element at p). */
static void block_span(const char *p, int nd, const int64_t *cur, const int64_t *bst, const char **lo,
                       const char **hi) {
  int64_t a = 0, b = 0;
  for (int e = 0; e < nd; e++) {
    const int64_t d = (cur[e] - 1) * bst[e];
    if (d < 0) a += d;
    else b += d;
  }
  *lo = p + a;
  *hi = p + b + 8;
}

/* Whether the chain headed by sub-operation k may run as one loop over a
 * block (nd dims of extent cur; a flat block or a row: nd 1) whose
 * operands are at p[i][j] (sub-operation k + i, operand j) with byte
 * strides st[i][j][e]: O, the last link's output, contiguous along the
 * last dim; each input read from memory contiguous there or one element
 * (stride 0), and either O's very elements (the same first element and
 * strides) where no sub-operation of the chain wrote O before it (each
 * pass read element i before writing element i), or apart from O in the
 * whole block (the passes read a block's inputs before writing its output,
 * and O after an earlier one wrote all of it; one loop reads element i of
 * each only before writing element i). Fills w with the block's first
 * elements. */
static bool chain_fits(const piece_state *ps, int k, int L, int nd, const int64_t *cur, const chain_block *b,
                       chain_sweep *w) {
  if (L < 1 || L >= CHAIN_MAX) return false;
  const int64_t *so = b->st[L][0];
  if (so[nd - 1] != 8) return false;
  const char *olo, *ohi;
  block_span(b->p[L][0], nd, cur, so, &olo, &ohi);
  w->o = (double *)b->p[L][0];
  w->ost = so;
  bool written = false;
  for (int i = 0; i <= L; i++) {
    const rsub *r = &ps->rs[k + i];
    if (i > 0 && r->over) written = true;
    for (int j = 1; j <= 2; j++) {
      if (i > 0 && j != r->cpos) continue; /* the link's T: the chain's value */
      const int x = i == 0 ? j - 1 : i + 1;
      const int64_t *s = b->st[i][j];
      const char *q = b->p[i][j];
      if (s[nd - 1] != 0 && s[nd - 1] != 8) return false;
      bool same = q == b->p[L][0];
      for (int e = 0; e < nd && same; e++) same = s[e] == so[e];
      if (same) {
        if (written) return false;
      } else {
        const char *lo, *hi;
        block_span(q, nd, cur, s, &lo, &hi);
        if (!(hi <= olo || ohi <= lo)) return false;
      }
      w->in[x] = (const double *)q;
      w->one[x] = s[nd - 1] == 0;
      w->ist[x] = s;
    }
  }
  return chain_takes(ps, k, w->one);
}

/* The chain over a block of several rows (nd dims of extent cur), which
 * chain_fits took: one sweep a row. */
static void chain_rows(const piece_state *ps, int k, int nd, const int64_t *cur, const chain_sweep *w) {
  const int nin = ps->rs[k].chain + 2;
  int64_t idx[TY_MAX_RANK] = {0};
  const double *in[CHAIN_MAX + 1];
  for (;;) {
    int64_t off = 0;
    for (int e = 0; e < nd - 1; e++) off += idx[e] * w->ost[e];
    double *o = (double *)((char *)w->o + off);
    for (int x = 0; x < nin; x++) {
      off = 0;
      for (int e = 0; e < nd - 1; e++) off += idx[e] * w->ist[x][e];
      in[x] = (const double *)((const char *)w->in[x] + off);
    }
    chain_sweep_run(ps, k, cur[nd - 1], o, in, w->one);
    int e = nd - 2;
    for (; e >= 0; e--) {
      if (++idx[e] < cur[e]) break;
      idx[e] = 0;
    }
    if (e < 0) return;
  }
}

/* Whether chain_fits' verdict on a flat piece's first block holds for
 * every block: each input and the output move by the same step from block
 * to block (or one of them is a slot, or a constant, which no store
 * overlaps), so where they lie from each other does not change, and the
 * first block is the longest. */
static bool chain_stable(const piece_state *ps, int k) {
  const rsub *h = &ps->rs[k];
  const ropnd *oo = &ps->ro[ps->rs[k + h->chain].first];
  for (int i = 0; i <= h->chain; i++) {
    const rsub *r = &ps->rs[k + i];
    for (int j = 1; j <= 2; j++) {
      const ropnd *q = &ps->ro[r->first + j];
      if ((i == 0 || j == r->cpos) && q->mem && oo->mem && q->step != oo->step) return false;
    }
  }
  return true;
}

/* The chain headed by sub-operation k over a flat block of n elements at
 * element off; false (nothing run) when the layout is not the loop's. The
 * first block's verdict stands for the piece's other blocks where
 * chain_stable (rsub.fit): the look at every block's layout was 3% of
 * interpreted Black-Scholes' time. */
static bool chain_flat(piece_state *ps, int k, int64_t n, int64_t off) {
  rsub *h = &ps->rs[k];
  if (h->fit < 0) return false;
  const int L = h->chain;
  if (h->fit > 0) { /* the places only */
    const double *in[CHAIN_MAX + 1];
    bool one[CHAIN_MAX + 1];
    const ropnd *oo = &ps->ro[ps->rs[k + L].first];
    for (int i = 0; i <= L; i++) {
      const rsub *r = &ps->rs[k + i];
      for (int j = 1; j <= 2; j++) {
        if (i > 0 && j != r->cpos) continue;
        const ropnd *q = &ps->ro[r->first + j];
        const int x = i == 0 ? j - 1 : i + 1;
        in[x] = (const double *)(q->base + off * q->step);
        one[x] = q->stride == 0;
      }
    }
    chain_sweep_run(ps, k, n, (double *)(oo->base + off * oo->step), in, one);
    return true;
  }
  chain_block b;
  int64_t st[CHAIN_MAX][3];
  for (int i = 0; i <= L; i++) { /* flat_operands' (every chain op has 3) */
    const ropnd *o = &ps->ro[ps->rs[k + i].first];
    for (int j = 0; j < 3; j++) {
      b.p[i][j] = o[j].base + off * o[j].step;
      st[i][j] = o[j].stride;
      b.st[i][j] = &st[i][j];
    }
  }
  chain_sweep w;
  const bool ok = chain_fits(ps, k, L, 1, &n, &b, &w);
  if (off == 0 && chain_stable(ps, k)) h->fit = ok ? 1 : -1;
  if (!ok) return false;
  chain_sweep_run(ps, k, n, w.o, w.in, w.one);
  return true;
}

/* Likewise over a box block at rel (dims 0 .. sd moved) of extent cur: one
 * sweep a row. */
static bool chain_box(const piece_state *ps, int k, const int64_t *rel, int sd, const int64_t *cur) {
  chain_block b;
  const int L = ps->rs[k].chain;
  for (int i = 0; i <= L; i++) {
    const rsub *r = &ps->rs[k + i];
    box_operands(ps, r, rel, sd, b.p[i]);
    for (int j = 0; j < 3; j++) b.st[i][j] = ps->bst[r->first + j];
  }
  chain_sweep w;
  if (!chain_fits(ps, k, L, ps->nd, cur, &b, &w)) return false;
  chain_rows(ps, k, ps->nd, cur, &w);
  return true;
}

/* An f64 add, sub, mul or div of three f64 operands. */
static bool chain_op(const ty__fsub *s) {
  if (s->kind != TY__FK_BINARY || s->nops != 3 || s->dt != TY_F64 ||
      (s->op != TY_OP_ADD && s->op != TY_OP_SUB && s->op != TY_OP_MUL && s->op != TY_OP_DIV))
    return false;
  for (int j = 0; j < 3; j++)
    if (s->opnd[j].dtype != TY_F64) return false;
  return true;
}

/* Operands x and y (indices into ps->ro) are the same place walked the same
 * way: one slot, or two views of a store that resolve to the same elements
 * (CG's Laplacian writes Av through one view and reads it through another). */
static bool same_place(const piece_state *ps, int x, int y) {
  const ropnd *a = &ps->ro[x], *b = &ps->ro[y];
  if (a->ref != b->ref && !(a->mem && b->mem)) return false;
  if (TY__FREF_IS_CONST(a->ref) || a->whole || b->whole) return false;
  return a->base == b->base && a->step == b->step && a->stride == b->stride &&
         memcmp(ps->bst[x], ps->bst[y], (size_t)ps->nd * sizeof ps->bst[0][0]) == 0; /* dims past nd: unset */
}

/* Whether sub-operation k + 1 chains onto k (see mark_chains): its T
 * position (1 or 2), and *over: it writes k's output place itself; 0: no. */
static int links(const piece_state *ps, int k, bool *over) {
  const int m = ps->rs[k].first, a = ps->rs[k + 1].first;
  const bool in1 = same_place(ps, m, a + 1), in2 = same_place(ps, m, a + 2);
  if (in1 == in2) return 0;
  *over = same_place(ps, m, a);
  if (*over) return in1 ? 1 : 2;
  const int16_t t = ps->ro[m].ref;
  if (!TY__FREF_IS_SLOT(t)) return 0;
  for (int j = k + 2; j < ps->nsub; j++) { /* a slot, dead after the link */
    const rsub *r = &ps->rs[j];
    bool writes = false;
    for (int i = 0; i < r->s->nops; i++) {
      if (ps->ro[r->first + i].ref != t) continue;
      if (TY__FOPND_PRIV(&r->s->opnd[i]) != TY_PRIV_OUT) return 0;
      writes = true;
    }
    if (writes) break;
  }
  return in1 ? 1 : 2;
}

/* A link's form: its op, and the side the chain's value is on (tpos, links'
 * answer: 2 when it is the second operand). */
static int8_t link_form(const rsub *ra, int tpos) {
  return (int8_t)(((ra->s->op - TY_OP_ADD) << 1) | (tpos == 2));
}

/* ra becomes a link of the chain before it (tpos and over: links' answers). */
static void set_link(rsub *ra, int tpos, bool over) {
  ra->form = link_form(ra, tpos);
  ra->link = true;
  ra->cpos = (int8_t)(3 - tpos);
  ra->over = over;
}

/* Marks chains (rsub.chain, .pair, .form, .cpos, .over): from an f64 add,
 * sub, mul or div, each next sub-operation that is one too, of the first
 * link's form, and reads the one before's output T as exactly one of its
 * inputs, where T is either a slot that no later sub-operation reads before
 * writing it again, or the same place (same_place) the next one writes.
 * After elide_copies (its folded copies change outputs); not with tasks or
 * failures (their skips name sub-operations by index). */
static void mark_chains(piece_state *ps) {
  uint64_t linked = 0, pairs = 0;
  for (int k = 0; k < ps->nsub; k++) {
    ps->rs[k].chain = ps->rs[k].fit = 0;
    ps->rs[k].pair = ps->rs[k].tail = ps->rs[k].link = ps->rs[k].dot = false;
  }
  for (int k = 0; k + 1 < ps->nsub; k++) {
    rsub *h = &ps->rs[k];
    if (!chain_op(h->s)) continue;
    int n = 0, tpos;
    bool over;
    while (n + 1 < CHAIN_MAX && k + n + 1 < ps->nsub && chain_op(ps->rs[k + n + 1].s) &&
           (tpos = links(ps, k + n, &over)) != 0) {
      rsub *ra = &ps->rs[k + n + 1];
      if (n > 0 && link_form(ra, tpos) != ps->rs[k + 1].form) break; /* one form a chain (chain_loop) */
      set_link(ra, tpos, over);
      n++;
    }
    if (!n) continue;
    const int f1 = ps->rs[k + 1].form >> 1;
    h->pair = n == 1 && h->s->op == TY_OP_MUL && (f1 == CH_ADD || f1 == CH_SUB);
    /* two operations other than a pair (Black-Scholes' `mul div`, `mul
     * mul`): their two passes over a block in L1 are as fast with AVX-512
     * and faster with AVX2 (interpreted Black-Scholes 2.4% faster without
     * such chains) and at the baseline level (2.8%) */
    if (n == 1 && !h->pair) {
      for (int j = 1; j <= n; j++) ps->rs[k + j].link = false;
      continue;
    }
    /* a tail: after two links or more, one of another form whose other
     * operand is a constant (the stencil's `* 0.2` after its additions) */
    if (n >= 2 && n + 1 < CHAIN_MAX && k + n + 1 < ps->nsub && chain_op(ps->rs[k + n + 1].s) &&
        (tpos = links(ps, k + n, &over)) != 0 && TY__FREF_IS_CONST(ps->ro[ps->rs[k + n + 1].first + 3 - tpos].ref)) {
      rsub *ra = &ps->rs[k + n + 1];
      set_link(ra, tpos, over);
      h->tail = ra->form != ps->rs[k + 1].form;
      n++;
    }
    h->chain = (int8_t)n;
    linked += (uint64_t)n;
    pairs += h->s->op == TY_OP_MUL && (f1 == CH_ADD || f1 == CH_SUB);
    k += n; /* the links are no heads */
  }
  /* a dot: an f64 mul whose product (a slot) only the sum after it, the
   * run's last sub-operation, reads; its products go to the sum's stream
   * as they are made (ty__ostream_feed_dot_f64: the bits of the products
   * stored and fed: the stream's leaves and groups do not depend on how
   * the elements arrive, run by run) */
  const int m = ps->nsub - 2;
  if (m >= 0) {
    rsub *rm = &ps->rs[m], *rr = &ps->rs[m + 1];
    const int16_t t = ps->ro[rm->first].ref;
    if (chain_op(rm->s) && rm->s->op == TY_OP_MUL && !rm->chain && !rm->link && rr->s->kind == TY__FK_REDUCE &&
        rr->stream == STREAM_PIECE && rr->s->nops == 2 && rr->feed == ty__ostream_feeds[TY__RSUM][TY_F64] &&
        TY__FREF_IS_SLOT(t) && ps->ro[rr->first + 1].ref == t && ps->ro[rr->first].ref != t) {
      rm->dot = true;
      linked++;
    }
  }
  if (linked) __atomic_fetch_add(&ps->ctx->rt->chained_ops, linked, __ATOMIC_RELAXED);
  if (pairs) __atomic_fetch_add(&ps->ctx->rt->mul_add_pairs, pairs, __ATOMIC_RELAXED);
}

static int run_flat(piece_state *ps, int64_t n) {
  char *p[TY_MAX_ARGS];
  int64_t st[TY_MAX_ARGS];
  for (int64_t off = 0; off < n; off += ps->block) {
    const int64_t len = n - off < ps->block ? n - off : ps->block;
    for (int k = 0; k < ps->nsub; k++) {
      rsub *r = &ps->rs[k];
      if (ps->skip && ps->skip[k]) continue;
      if (r->chain && chain_flat(ps, k, len, off)) {
        k += r->chain;
        continue;
      }
      flat_operands(ps, r, off, p, st);
      if (r->dot) { /* with the sum after it (mark_chains) */
        ty__ostream_feed_dot_f64(len, p, st, ps->rs[k + 1].os);
        k++;
        continue;
      }
      switch (r->s->kind) {
      case TY__FK_REDUCE:
        if (r->stream) r->feed(len, p, st, r->os);
        else r->fn(len, p, st, NULL);
        break;
      case TY__FK_TASK: {
        /* flat mode has a task only over a 0-d or 1-D domain */
        int64_t rel[1] = {off}, cur[1] = {len};
        int rc = run_task(ps, k, rel, cur, p);
        if (rc) return rc;
        break;
      }
      default: r->fn(len, p, st, r->aux); break;
      }
    }
    if (off + len >= n) break;
  }
  return 0;
}

/* A flat piece whose run ends in an f64 sum, compiled (ty_fk3): block by
 * block, the kernel writes the values the sum reads into a buffer, which is
 * fed to the sum's stream as run_flat feeds its slot: the same blocks, the
 * same values, the same calls, so the same bits. */
static void run_flat_sum(piece_state *ps, int64_t n, const rsub *r, ty__fused_kernel3 fn) {
  _Alignas(64) char buf[4096 * 8];
  const ty_task_ctx *ctx = ps->ctx;
  const ropnd *acc = &ps->ro[r->first];
  char *a[TY_MAX_ARGS];
  int64_t es[TY_MAX_ARGS];
  for (int k = 0; k < ctx->nargs; k++)
    es[k] = ((ps->h->contig >> k) & 1u) ? (int64_t)ty__dtype_size(ctx->args[k].dtype) : 0;
  for (int64_t off = 0; off < n; off += ps->block) {
    const int64_t len = n - off < ps->block ? n - off : ps->block;
    for (int k = 0; k < ctx->nargs; k++) a[k] = ctx->args[k].data + off * es[k];
    fn(len, a, (const char *)ps->h, buf);
    char *p[2] = {acc->base + off * acc->step, buf};
    const int64_t st[2] = {acc->stride, 8};
    r->feed(len, p, st, r->os);
  }
}

/* A 2-D piece whose run ends in an f64 sum, compiled (ty_fk4): blocks of
 * whole rows (a row longer than a block: pieces of it), whose values the
 * kernel writes to a buffer in C order, fed to the sum's stream: the values
 * and their order of the interpreter, so the same bits. */
static void run_rows_sum(piece_state *ps, const rsub *r, ty__fused_kernel4 fn) {
  _Alignas(64) char buf[4096 * 8];
  const ty_task_ctx *ctx = ps->ctx;
  const ropnd *acc = &ps->ro[r->first];
  const int64_t n0 = ps->P[0], n1 = ps->P[1], B = ps->block;
  char *a[TY_MAX_ARGS];
  int64_t os[TY_MAX_ARGS], es[TY_MAX_ARGS];
  for (int k = 0; k < ctx->nargs; k++) {
    const ty_tile *t = &ctx->args[k];
    const int64_t sz = (int64_t)ty__dtype_size(t->dtype);
    os[k] = t->strides[0] * sz;
    es[k] = ((ps->h->contig >> k) & 1u) ? sz : 0;
  }
  const int64_t rows = n1 >= B ? 1 : B / n1;
  for (int64_t i = 0; i < n0; i += rows) {
    const int64_t nr = n0 - i < rows ? n0 - i : rows;
    for (int64_t j = 0; j < n1; j += B) {
      const int64_t len = n1 - j < B ? n1 - j : B;
      for (int k = 0; k < ctx->nargs; k++) a[k] = ctx->args[k].data + i * os[k] + j * es[k];
      fn(nr, len, a, os, (const char *)ps->h, buf);
      char *p[2] = {acc->base, buf};
      const int64_t st[2] = {acc->stride, 8};
      r->feed(nr * len, p, st, r->os);
    }
  }
}

/* The best value of a row whose arg reduction is i, as the unfused min/max
 * along the row gives it (kernels_reduce.c: NaN sticks, a later NaN
 * replaces it, so a row with NaN gives its last NaN; otherwise the first
 * best element, which is element i). */
static void best_value(char *o, const char *in, int64_t n, int64_t step, int64_t i, ty_dtype t) {
  if (t == TY_F64) {
    double v = *(const double *)(in + i * step);
    for (int64_t j = n - 1; v != v && j >= 0; j--) {
      const double x = *(const double *)(in + j * step);
      if (x != x) {
        v = x;
        break;
      }
    }
    *(double *)o = v;
  } else {
    float v = *(const float *)(in + i * step);
    for (int64_t j = n - 1; v != v && j >= 0; j--) {
      const float x = *(const float *)(in + j * step);
      if (x != x) {
        v = x;
        break;
      }
    }
    *(float *)o = v;
  }
}

/* An arg reduction over a box block: rows along the last dim, whole in the
 * block (see the top); one output element per row, and with a third operand
 * the row's best value (fuse.c's pair: dist:min(2) after dist:argmin(2)). */
static void arg_rows(const rsub *r, int nd, const int64_t *cur, char *const *bases,
                     const int64_t (*bst)[TY_MAX_RANK]) {
  const int64_t n = cur[nd - 1], step = bst[1][nd - 1];
  const bool best = r->s->nops == 3;
  int64_t idx[TY_MAX_RANK] = {0};
  for (;;) {
    char *o = bases[0], *v = best ? bases[2] : NULL;
    const char *in = bases[1];
    for (int e = 0; e < nd - 1; e++) {
      o += idx[e] * bst[0][e];
      in += idx[e] * bst[1][e];
      if (best) v += idx[e] * bst[2][e];
    }
    const int64_t i = r->arg(n, in, step);
    *(int64_t *)o = i;
    if (best) best_value(v, in, n, step, i, (ty_dtype)r->s->dt2);
    int e = nd - 2;
    for (; e >= 0; e--) {
      if (++idx[e] < cur[e]) break;
      idx[e] = 0;
    }
    if (e < 0) return;
  }
}

/* An arg reduction over a column-order block (ps->cols): the rows' running
 * best and its index are kept for up to ARGC_ROWS rows at a time and each
 * column updates them all (a loop over rows that vectorises), instead of
 * one scan call per short row. Column 0 starts each row and a later column
 * wins only when strictly better: the row scan's rule (ties: the first
 * index), so the same index, and the running best is then that element
 * (best_value's result for a row without NaN). A row holding a NaN is
 * scanned again by the row loop and best_value, whose rules then decide.
 * f64/f32 only (false: not done). */
#define ARGC_ROWS 256
#define ARG_COLS(NAME, T, NT)                                                            \
  static inline __attribute__((always_inline)) void NAME##_at(                         \
      bool max, int64_t m, int64_t n, const char *in, int64_t s0, int64_t s1, T *mv,   \
      int64_t *bi, NT *nan) {                                                          \
    for (int64_t i = 0; i < m; i++) {                                                  \
      const T x = *(const T *)(in + i * s0);                                           \
      mv[i] = x;                                                                       \
      bi[i] = 0;                                                                       \
      nan[i] = x != x;                                                                 \
    }                                                                                  \
    for (int64_t j = 1; j < n; j++) {                                                  \
      const char *c = in + j * s1;                                                     \
      if (max)                                                                         \
        for (int64_t i = 0; i < m; i++) {                                              \
          const T x = *(const T *)(c + i * s0);                                        \
          const bool w = x > mv[i];                                                    \
          bi[i] = w ? j : bi[i];                                                       \
          mv[i] = w ? x : mv[i];                                                       \
          nan[i] |= x != x;                                                            \
        }                                                                              \
      else                                                                             \
        for (int64_t i = 0; i < m; i++) {                                              \
          const T x = *(const T *)(c + i * s0);                                        \
          const bool w = x < mv[i];                                                    \
          bi[i] = w ? j : bi[i];                                                       \
          mv[i] = w ? x : mv[i];                                                       \
          nan[i] |= x != x;                                                            \
        }                                                                              \
    }                                                                                  \
  }                                                                                    \
  static void NAME(const rsub *r, const int64_t *cur, char *const *bases,              \
                   const int64_t (*bst)[TY_MAX_RANK]) {                                \
    const bool max = r->s->op != 0, best = r->s->nops == 3;                            \
    const int64_t n = cur[1], s0 = bst[1][0], s1 = bst[1][1], so = bst[0][0];          \
    const int64_t vs = best ? bst[2][0] : 0;                                           \
    T mv[ARGC_ROWS];                                                                   \
    int64_t bi[ARGC_ROWS];                                                             \
    NT nan[ARGC_ROWS]; /* as wide as T: the tail of a vector loop is short */          \
    for (int64_t i0 = 0; i0 < cur[0]; i0 += ARGC_ROWS) {                               \
      const int64_t m = cur[0] - i0 < ARGC_ROWS ? cur[0] - i0 : ARGC_ROWS;             \
      const char *in = bases[1] + i0 * s0;                                             \
      if (s0 == (int64_t)sizeof(T)) NAME##_at(max, m, n, in, (int64_t)sizeof(T), s1, mv, bi, nan); \
      else NAME##_at(max, m, n, in, s0, s1, mv, bi, nan);                              \
      char *o = bases[0] + i0 * so, *v = best ? bases[2] + i0 * vs : NULL;             \
      for (int64_t i = 0; i < m; i++) {                                                \
        if (nan[i]) {                                                                  \
          const char *row = in + i * s0;                                               \
          const int64_t k = r->arg(n, row, s1);                                        \
          *(int64_t *)(o + i * so) = k;                                                \
          if (best) best_value(v + i * vs, row, n, s1, k, (ty_dtype)r->s->dt2);        \
        } else {                                                                       \
          *(int64_t *)(o + i * so) = bi[i];                                            \
          if (best) *(T *)(v + i * vs) = mv[i];                                        \
        }                                                                              \
      }                                                                                \
    }                                                                                  \
  }
ARG_COLS(arg_cols_f64, double, int64_t)
ARG_COLS(arg_cols_f32, float, int32_t)

static bool arg_cols(const rsub *r, const int64_t *cur, char *const *bases,
                     const int64_t (*bst)[TY_MAX_RANK]) {
  switch ((ty_dtype)r->s->dt2) {
  case TY_F64: arg_cols_f64(r, cur, bases, bst); return true;
  case TY_F32: arg_cols_f32(r, cur, bases, bst); return true;
  default: return false;
  }
}

static int run_box(piece_state *ps) {
  const int nd = ps->nd;
  /* the block: whole inner dims while they fit, then a chunk of dim sd */
  int64_t prod = 1;
  int sd = nd - 1;
  while (sd >= 0 && prod * ps->P[sd] <= ps->block) prod *= ps->P[sd--];
  const int64_t chunk = sd >= 0 ? (ps->block / prod > 0 ? ps->block / prod : 1) : 1;
  int64_t rel[TY_MAX_RANK] = {0}, cur[TY_MAX_RANK];
  char *bases[TY_MAX_ARGS];
  int64_t st[TY_MAX_ARGS];
  for (;;) {
    for (int e = 0; e < nd; e++)
      cur[e] = e < sd ? 1 : e == sd ? (ps->P[e] - rel[e] < chunk ? ps->P[e] - rel[e] : chunk) : ps->P[e];
    /* a block of one row (a chunk of the last dim, or one whole row): its
     * element-wise sub-operations call their loop once, as in flat mode,
     * not through ty__foreach (~200 instructions a call: a 2-D stencil's
     * rows spent a quarter of their time there) */
    bool one_row = nd >= 1;
    for (int e = 0; e < nd - 1 && one_row; e++) one_row = cur[e] == 1;
    for (int k = 0; k < ps->nsub; k++) {
      rsub *r = &ps->rs[k];
      if (ps->skip && ps->skip[k]) continue;
      const int nops = r->s->nops;
      box_operands(ps, r, rel, sd, bases);
      const int64_t(*bst)[TY_MAX_RANK] = (const int64_t(*)[TY_MAX_RANK])&ps->bst[r->first];
      switch (r->s->kind) {
      case TY__FK_REDUCE:
        if (r->stream) {
          ty__foreach(nd, cur, nops, bases, bst, r->feed, r->os);
          /* a row cut along dim sd ends with its last block */
          if (r->stream == STREAM_ROWS && rel[sd] + cur[sd] >= ps->P[sd]) stream_apply(r, bases[0]);
        } else {
          ty__foreach(nd, cur, nops, bases, bst, r->fn, NULL);
        }
        break;
      case TY__FK_TASK: {
        int rc = run_task(ps, k, rel, cur, bases);
        if (rc) return rc;
        break;
      }
      case TY__FK_ARGREDUCE:
        if (!(ps->cols && cur[0] > 1 && arg_cols(r, cur, bases, bst))) arg_rows(r, nd, cur, bases, bst);
        break;
      default:
        if (r->dot) { /* with the sum after it (mark_chains): the block in C order, as the sum reads it */
          ty__foreach(nd, cur, nops, bases, bst, ty__ostream_feed_dot_f64, ps->rs[k + 1].os);
          k++;
          break;
        }
        if (r->chain && !(ps->cols && cur[0] > 1) && chain_box(ps, k, rel, sd, cur)) {
          k += r->chain; /* with the sub-operations after it, in one pass (mark_chains) */
          break;
        }
        if (ps->cols && cur[0] > 1) {
          /* column order: one call per column of the block, down its rows */
          for (int j = 0; j < nops; j++) st[j] = bst[j][0];
          for (int64_t c = 0; c < cur[1]; c++) {
            char *cb[TY_MAX_ARGS];
            for (int j = 0; j < nops; j++) cb[j] = bases[j] + c * bst[j][1];
            r->fn(cur[0], cb, st, r->aux);
          }
        } else if (one_row) {
          for (int j = 0; j < nops; j++) st[j] = bst[j][nd - 1];
          r->fn(cur[nd - 1], bases, st, r->aux);
        } else {
          ty__foreach(nd, cur, nops, bases, bst, r->fn, r->aux);
        }
        break;
      }
    }
    /* next block: odometer over dims sd .. 0, dim sd by chunks */
    int e = sd;
    for (; e >= 0; e--) {
      rel[e] += e == sd ? chunk : 1;
      if (rel[e] < ps->P[e]) break;
      rel[e] = 0;
    }
    if (e < 0) return 0;
  }
}

/* A compiled element-wise run (no reduction, task or arg reduction, no
 * whole-store operand) over a piece whose arguments are each flat with the
 * layout it was compiled for: the kernel takes the arguments' addresses
 * only, so none of fused_piece's per-operand bookkeeping is made (it was
 * about half of the instructions of a 1,000-element piece of 64 operations,
 * bench/workloads/overhead.lua). The same call and bits as fused_piece's
 * flat compiled path; false (nothing run) when the layout differs. */
static bool run_compiled_flat(ty_task_ctx *ctx, const ty__fhead *h, const int64_t *P, int nd,
                              int64_t n) {
  char *bases[TY_MAX_ARGS];
  for (int a = 0; a < ctx->nargs; a++) {
    const ty_tile *t = &ctx->args[a];
    int last = -1;
    for (int d = 0; d < nd; d++) { /* flat_layout's test */
      if (P[d] == 1) continue;
      if (last >= 0 && t->strides[last] != t->strides[d] * P[d]) return false;
      last = d;
    }
    if ((last >= 0 ? t->strides[last] : 0) != (((h->contig >> a) & 1u) ? 1 : 0)) return false;
    bases[a] = t->data;
  }
  ty__fused_kernel fn;
  memcpy(&fn, &h->kernel, sizeof fn);
  fn(n, bases, (const char *)h);
  return true;
}

/* ---- switching inside a launch (see the top) ---------------------------------------- */

/* 2^18 elements: ~0.2-2 ms of interpreter, so the check (an atomic load) is
 * free and a kernel that arrives mid-launch waits for at most one chunk. */
#define SWITCH_ELEMS ((int64_t)1 << 18)
#define SWITCH_MIN ((int64_t)1 << 16)

/* The pending kernel of signature `want` when it has come (its layout in
 * ps->sw_contig; the caller checks that the piece fits it), else NULL. */
static ty__fused_kernel switch_kernel(piece_state *ps, int64_t done, uint32_t want) {
  uint32_t kind = 0;
  uint64_t contig = 0;
  ty__fslot *slot = (ty__fslot *)(uintptr_t)ps->h->pending;
  ty__fused_kernel fn = ty__fslot_kernel(slot, done, &kind, &contig);
  if (!fn || kind != want) return NULL;
  ps->sw_contig = contig;
  return fn;
}

static void count_switch(piece_state *ps) {
  __atomic_fetch_add(&ps->ctx->rt->fused_switched, 1, __ATOMIC_RELAXED);
}

/* Move the memory operands' bases by `by` units of their flat step (flat)
 * or of their stride along dim 0 (box). */
static void shift_bases(piece_state *ps, int64_t by, bool flat) {
  for (int k = 0; k < ps->nsub; k++)
    for (int j = 0; j < ps->rs[k].s->nops; j++) {
      ropnd *o = &ps->ro[ps->rs[k].first + j];
      if (flat) o->base += by * o->step; /* 0 for slots and constants */
      else if (o->mem && !o->whole) o->base += by * ps->bst[ps->rs[k].first + j][0];
    }
}

/* An element-wise flat piece in chunks (run_flat on each, its operands'
 * bases moved to the chunk), the rest compiled once the kernel has come. */
static int run_flat_switching(piece_state *ps, int64_t n, const int64_t *flat_stride) {
  const ty_task_ctx *ctx = ps->ctx;
  const int64_t chunk = (SWITCH_ELEMS + ps->block - 1) / ps->block * ps->block;
  int rc = 0;
  for (int64_t off = 0; off < n && rc == 0; off += chunk) {
    ty__fused_kernel fn = switch_kernel(ps, off, TY__FK_FLAT);
    bool fits = fn != NULL;
    for (int a = 0; a < ctx->nargs && fits; a++) fits = flat_stride[a] == (int64_t)((ps->sw_contig >> a) & 1u);
    if (fits) {
      char *bases[TY_MAX_ARGS];
      for (int a = 0; a < ctx->nargs; a++)
        bases[a] = ctx->args[a].data + off * flat_stride[a] * (int64_t)ty__dtype_size(ctx->args[a].dtype);
      fn(n - off, bases, (const char *)ps->h);
      count_switch(ps);
      return 0;
    }
    shift_bases(ps, off, true);
    rc = run_flat(ps, n - off < chunk ? n - off : chunk);
    shift_bases(ps, -off, true);
  }
  return rc;
}

/* A 2-D box piece in chunks of whole rows (run_box on each: P[0] and the
 * memory operands' bases moved to the chunk; a multiple of a block's rows,
 * so the blocks are run_box's over the whole piece), the remaining rows
 * compiled (a ROWS kernel) once the kernel has come. */
static int run_rows_switching(piece_state *ps) {
  const ty_task_ctx *ctx = ps->ctx;
  const int64_t P0 = ps->P[0], P1 = ps->P[1];
  const int64_t brows = P1 >= ps->block ? 1 : ps->block / P1;
  int64_t rows = SWITCH_ELEMS / P1;
  rows = rows < brows ? brows : (rows + brows - 1) / brows * brows;
  int rc = 0;
  for (int64_t r0 = 0; r0 < P0 && rc == 0; r0 += rows) {
    ty__fused_kernel fn = switch_kernel(ps, r0 * P1, TY__FK_ROWS);
    bool fits = fn != NULL;
    for (int a = 0; a < ctx->nargs && fits; a++) {
      const ty_tile *t = &ctx->args[a];
      fits = t->ndim == 2 && (P1 == 1 || t->strides[1] == (int64_t)((ps->sw_contig >> a) & 1u));
    }
    if (fits) {
      int64_t os[TY_MAX_ARGS];
      char *bases[TY_MAX_ARGS];
      for (int a = 0; a < ctx->nargs; a++) {
        const ty_tile *t = &ctx->args[a];
        os[a] = t->strides[0] * (int64_t)ty__dtype_size(t->dtype);
        bases[a] = t->data + r0 * os[a];
      }
      ty__fused_kernel2 fn2;
      memcpy(&fn2, &fn, sizeof fn2);
      fn2(P0 - r0, P1, bases, os, (const char *)ps->h);
      count_switch(ps);
      return 0;
    }
    shift_bases(ps, r0, false);
    ps->P[0] = P0 - r0 < rows ? P0 - r0 : rows;
    rc = run_box(ps);
    ps->P[0] = P0;
    shift_bases(ps, -r0, false);
  }
  return rc;
}

/* When this interpreted piece may switch (see the top): runs it, *rc its
 * status, and returns true. */
static bool run_switching(piece_state *ps, int64_t n, bool flat, const int64_t *flat_stride, bool has_task,
                          bool has_whole, int *rc) {
  const ty__fhead *h = ps->h;
  if (!h->pending || h->kernel || n < SWITCH_MIN || has_task || has_whole || ps->skip) return false;
  if (!flat && (ps->nd != 2 || ps->P[1] <= 0)) return false;
  for (int k = 0; k < ps->nsub; k++) {
    const rsub *r = &ps->rs[k];
    if (r->s->kind == TY__FK_ARGREDUCE && flat) return false;
    if (r->s->kind != TY__FK_REDUCE) continue;
    /* min/max along the rows only: each row's accumulator is its own */
    const int acc = r->s->opnd[0].ref;
    if (flat || r->stream != STREAM_NONE || acc < 0 || TY__FREF_IS_CONST(acc)) return false;
    if (r->s->op != TY__RMIN && r->s->op != TY__RMAX) return false;
    const ty_tile *t = &ps->ctx->args[acc];
    if (t->ndim != 2 || t->strides[1] != 0 || (t->strides[0] == 0 && ps->P[0] > 1)) return false;
  }
  *rc = flat ? run_flat_switching(ps, n, flat_stride) : run_rows_switching(ps);
  return true;
}

/* ---- copies folded into their producer (interpreter only) ------------------------- */

/* The bytes argument t's tile spans in this piece: [*lo, *hi) (store.c's
 * ty__tile_range, from the tile's first element). */
static void arg_span(const ty_tile *t, uintptr_t *lo, uintptr_t *hi) {
  uint64_t l, h;
  bool dense;
  ty__tile_range(t->ndim, t->shape, t->strides, 0, ty__dtype_size(t->dtype), &l, &h, &dense);
  *lo = (uintptr_t)t->data + (uintptr_t)l;
  *hi = (uintptr_t)t->data + (uintptr_t)h;
}

/* Store operand ref touches memory of argument a (its own ref included). */
static bool touches(const ty_task_ctx *ctx, int ref, int a) {
  if (ref < 0 || TY__FREF_IS_CONST(ref)) return false;
  if (ref == a) return true;
  uintptr_t l0, h0, l1, h1;
  arg_span(&ctx->args[a], &l0, &h0);
  arg_span(&ctx->args[ref], &l1, &h1);
  return l0 < h1 && l1 < h0;
}

/* Where a view of a store is assigned (`A[view] = B - C`), the run holds
 * the value in a slot and then copies the slot into the argument: a block
 * written and read once more, and for a 2-D view a second call per row
 * (cg 256²'s Laplacian: a copy after each of its four shifted
 * subtractions). Here the producer writes the argument itself and the copy
 * is dropped, when nothing can tell: the producer is an element-wise
 * built-in writing the slot in the argument's dtype; no sub-operation
 * between the two touches the argument's memory or reads the slot; no
 * later one reads the slot before writing it again; and each store input
 * of the producer is the argument's own view (element i read before
 * element i is written, as the loops do in place) or memory apart from
 * it. Same values as the copy, so the same bits. Not with tasks or
 * failures (their skips name sub-operations by index) nor whole-store
 * operands. */
static void elide_copies(piece_state *ps) {
  const ty_task_ctx *ctx = ps->ctx;
  int kept = 0;
  for (int m = 0; m < ps->nsub; m++) {
    rsub *rm = &ps->rs[m];
    const ty__fsub *c = rm->s;
    bool drop = false;
    if (c->kind == TY__FK_CAST && c->dt == c->dt2 && c->nops == 2 && TY__FREF_IS_SLOT(c->opnd[1].ref) &&
        c->opnd[0].ref >= 0 && !TY__FREF_IS_CONST(c->opnd[0].ref) && c->opnd[0].ref < ctx->nargs &&
        c->opnd[0].dtype == c->opnd[1].dtype) {
      const int a = c->opnd[0].ref, slot = c->opnd[1].ref;
      int k = -1;
      bool ok = true;
      /* back to the slot's producer: kept entries only (a dropped copy
       * wrote its argument through its producer, which is kept) */
      for (int j = kept - 1; j >= 0 && ok && k < 0; j--) {
        const ty__fsub *s = ps->rs[j].s;
        const bool ew = s->kind == TY__FK_UNARY || s->kind == TY__FK_BINARY || s->kind == TY__FK_WHERE ||
                        s->kind == TY__FK_CAST || s->kind == TY__FK_FILL;
        const int16_t out = ps->ro[ps->rs[j].first].ref;
        if (ew && out == slot) {
          k = j;
          ok = s->opnd[0].dtype == c->opnd[0].dtype;
          for (int i = 1; i < s->nops && ok; i++)
            ok = s->opnd[i].ref == a || !touches(ctx, s->opnd[i].ref, a);
          break;
        }
        for (int i = 0; i < s->nops && ok; i++) {
          const int16_t ref = ps->ro[ps->rs[j].first + i].ref;
          ok = ref != slot && !touches(ctx, ref, a);
        }
      }
      /* no later reader of the slot before it is written again */
      for (int j = m + 1; j < ps->nsub && ok && k >= 0; j++) {
        const ty__fsub *s = ps->rs[j].s;
        bool writes = false;
        for (int i = 0; i < s->nops && ok; i++) {
          if (s->opnd[i].ref != slot) continue;
          if (TY__FOPND_PRIV(&s->opnd[i]) == TY_PRIV_OUT) writes = true;
          else ok = false;
        }
        if (writes) break;
      }
      if (ok && k >= 0) {
        const rsub *rk = &ps->rs[k];
        ps->ro[rk->first] = ps->ro[rm->first];
        memcpy(ps->bst[rk->first], ps->bst[rm->first], sizeof ps->bst[0]);
        drop = true;
      }
    }
    if (!drop) ps->rs[kept++] = *rm;
  }
  if (kept < ps->nsub)
    __atomic_fetch_add(&ps->ctx->rt->copies_folded, (uint64_t)(ps->nsub - kept), __ATOMIC_RELAXED);
  ps->nsub = kept;
}

/* One piece, or one ordered tile of a walked piece. */
/* ud: the piece's fused_fail record, or NULL */
static int fused_piece(ty_task_ctx *ctx, void *ud) {
  const ty__fhead *h = ctx->scalars;
  piece_state ps = {.ctx = ctx, .h = h, .nd = ctx->ndim, .nsub = h->nsub};
  int64_t n = 1;
  for (int d = 0; d < ps.nd; d++) {
    ps.P[d] = ctx->hi[d] - ctx->lo[d];
    n *= ps.P[d];
  }
  if (n <= 0) return 0;

  /* one allocation: sub-operations, operands, strides, task tiles, slots */
  /* the description's summary, as fuse.c made it (or made now) */
  const struct ty__fsummary sm = h->sum.flags & TY__FH_SUMMARY ? h->sum : ty__fhead_summary(h);
  const int nops = sm.nops, max_nops = sm.max_nops, nreduce = sm.nreduce;
  const bool has_task = sm.flags & TY__FH_TASK, has_arg = sm.flags & TY__FH_ARGREDUCE,
             has_whole = sm.flags & TY__FH_WHOLE;
  /* inputs a failed launch left unavailable: the sub-operations that read
   * them are skipped (see the top), in the interpreter */
  const uint64_t unavail = ctx->reach && ud ? ctx->reach->unavailable : 0;
  if (h->kernel && nreduce == 0 && !has_task && !unavail && !has_arg && !has_whole &&
      !(h->kernel_kind == TY__FK_ROWS && ps.nd == 2) && run_compiled_flat(ctx, h, ps.P, ps.nd, n))
    return 0;
  ps.block = block_elems(h);
  /* an arg reduction over short rows (column order, below; its run has no
   * other reduction, so the block does not change a bit): longer columns,
   * fewer calls (k-means 1M, interpreter: 0.031 s a step, against 0.035 s at
   * 512 and 0.035 s at 4096); not with a compiled kernel, which needs no
   * slots (their larger allocation, malloc'ed past the 64 KiB on the stack,
   * made warm k-means 10M 5-10% slower) */
  if (!h->kernel && has_arg && ps.nd == 2 && !has_task && !has_whole && ps.P[1] <= COLS_MAX && ps.block < COLS_ARG_BLOCK)
    ps.block = COLS_ARG_BLOCK;
  /* element-wise runs: a row of up to 4096 elements is never cut (a row cut
   * in two is two short calls per sub-operation; reductions keep blocks of
   * whole 128-element leaves) */
  if (nreduce == 0 && !has_arg && ps.nd >= 2 && ps.P[ps.nd - 1] > ps.block && ps.P[ps.nd - 1] <= 4096)
    ps.block = ps.P[ps.nd - 1];
  const int64_t slot_elems = n < ps.block ? n : ps.block;
  const size_t slot_bytes = ((size_t)slot_elems * 8 + 63) / 64 * 64;
  size_t off_rs = 0;
  size_t off_ro = off_rs + (size_t)h->nsub * sizeof(rsub);
  size_t off_bst = (off_ro + (size_t)nops * sizeof(ropnd) + 63) / 64 * 64;
  size_t off_tiles = off_bst + (size_t)nops * sizeof *ps.bst;
  size_t off_os = (off_tiles + (size_t)(has_task ? max_nops : 0) * sizeof(ty_tile) + 7) / 8 * 8;
  size_t off_flags = off_os + (size_t)nreduce * sizeof(ty__ostream);
  const bool partial = (has_task || unavail) && ud;
  size_t off_slots = (off_flags + (partial ? 2 * (size_t)h->nsub + h->nslots : 0) + 63) / 64 * 64;
  size_t total = off_slots + (size_t)h->nslots * slot_bytes;
  /* most pieces need no allocation (up to 8 slots of a full block) */
  _Alignas(64) char local[65536]; /* slots of 1,024 f64 elements: 8 of them */
  char *mem = total <= sizeof local ? local : ty__aligned_alloc(64, (total + 63) / 64 * 64);
  if (!mem) { /* an out-of-memory error, not a task failure */
    ty_ctx_fail(ctx, "fused: out of memory for %zu bytes of block buffers", total);
    return TY_ENOMEM;
  }
  ps.rs = (rsub *)(mem + off_rs);
  ps.ro = (ropnd *)(mem + off_ro);
  ps.bst = (int64_t(*)[TY_MAX_RANK])(mem + off_bst);
  ps.tiles = (ty_tile *)(mem + off_tiles);
  ps.max_nops = max_nops;
  char *slots = mem + off_slots;
  ty__ostream *os = (ty__ostream *)(mem + off_os);
  if (partial) { /* a task's failure skips what depends on it (see the top) */
    ps.fail = ud;
    ps.unavail = unavail;
    ps.failed = (uint8_t *)(mem + off_flags);
    ps.skip = ps.failed + h->nsub;
    ps.tslot = ps.skip + h->nsub;
    memset(ps.failed, 0, 2 * (size_t)h->nsub);
    if (unavail) ty__fused_taint(h, unavail, ps.failed, ps.skip, ps.tslot, NULL);
  }

  int rc = resolve(&ps);
  int64_t flat_stride[TY_MAX_ARGS];
  const bool flat = rc == 0 && (!has_task || ps.nd <= 1) && !has_arg && flat_layout(&ps, flat_stride, has_whole);

  /* block shape of box mode, for the slots' dense strides */
  int64_t bshape[TY_MAX_RANK];
  int sd = ps.nd - 1; /* box mode: blocks cut dim sd, inner dims are whole */
  {
    int64_t prod = 1;
    while (sd >= 0 && prod * ps.P[sd] <= ps.block) prod *= ps.P[sd--];
    const int64_t chunk = sd >= 0 ? (ps.block / prod > 0 ? ps.block / prod : 1) : 1;
    for (int e = 0; e < ps.nd; e++) bshape[e] = e < sd ? 1 : e == sd ? chunk : ps.P[e];
  }
  /* column order (run_box): 2-D blocks of whole rows, each row at most
   * COLS_MAX long and no longer than the block has rows (k-means' distance
   * rows: (~50 x 10) blocks); slots are then stored column by column */
  ps.cols = rc == 0 && !flat && ps.nd == 2 && sd <= 0 && !has_task && !has_whole && ps.P[1] >= 2 &&
            ps.P[1] <= COLS_MAX && bshape[0] >= ps.P[1];

  for (int k = 0; rc == 0 && k < ps.nsub; k++) {
    rsub *r = &ps.rs[k];
    for (int j = 0; j < r->s->nops; j++) {
      const ty__fopnd *od = &r->s->opnd[j];
      ropnd *o = &ps.ro[r->first + j];
      int64_t *bst = ps.bst[r->first + j];
      memset(o, 0, sizeof *o);
      o->ref = od->ref;
      o->es = (int64_t)ty__dtype_size((ty_dtype)od->dtype);
      if (TY__FREF_IS_CONST(od->ref)) {
        o->base = (char *)h + h->consts + 8 * (od->ref - TY__FREF_CONST);
        for (int e = 0; e < ps.nd; e++) bst[e] = 0;
      } else if (TY__FREF_IS_SLOT(od->ref)) {
        o->base = slots + (size_t)(-1 - od->ref) * slot_bytes;
        o->stride = o->es;
        int64_t g = o->es;
        if (ps.cols) { /* column by column */
          bst[0] = g;
          bst[1] = g * bshape[0];
        } else {
          for (int e = ps.nd - 1; e >= 0; e--) {
            bst[e] = g;
            g *= bshape[e];
          }
        }
      } else {
        const ty_tile *t = &ctx->args[od->ref];
        o->mem = true;
        o->whole = TY__FOPND_PROJ(od) == TY_PROJ_WHOLE;
        o->base = t->data;
        if (flat) o->step = o->stride = flat_stride[od->ref] * o->es;
        for (int e = 0; e < ps.nd; e++) bst[e] = e < t->ndim ? t->strides[e] * o->es : 0;
      }
    }
    if (r->s->kind == TY__FK_REDUCE) {
      r->os = os++;
      const int acc = r->s->opnd[0].ref;
      const ty__redkind kind = (ty__redkind)r->s->op;
      if (acc >= 0 && !TY__FREF_IS_CONST(acc) && ty__reduce_ordered(kind, (ty_dtype)r->s->dt)) {
        /* the scheme of the launch, as ty__reduce_variant's (kernels_reduce.c) */
        const ty_tile *t = &ctx->args[acc];
        const ty__rscheme sc = ty__reduce_scheme(t);
        int ax = -1; /* INNER: the reduced axis, the last dim longer than 1 */
        for (int e = 0; e < t->ndim; e++)
          if (t->gshape[e] > 1) ax = e;
        r->fn = ty__reduce_loop(kind, (ty_dtype)r->s->dt2, (ty_dtype)r->s->dt, sc);
        r->feed = ty__ostream_feeds[kind][r->s->dt2];
        if (sc == TY__RS_FULL || (sc == TY__RS_INNER && flat && flat_stride[acc] == 0))
          r->stream = STREAM_PIECE; /* every element of the piece into one accumulator */
        else if (sc == TY__RS_INNER && !flat && sd == ax && ps.P[ax] > 1)
          r->stream = STREAM_ROWS; /* rows longer than a block */
        if (r->stream) ty__ostream_init(r->os, kind);
      }
      if (r->s->flags & TY__FS_INIT_OUT) init_out(&ps, r);
    }
  }
  /* the compiled kernel, when this piece has its layout */
  bool compiled = false;
  if (rc == 0 && h->kernel && h->kernel_kind == TY__FK_ROWS && ps.nd == 2 && !has_task && !unavail) {
    /* a compiled 2-D run: every argument contiguous along the rows or one
     * element per row, as when it was compiled (reductions: min/max only,
     * initialised above) */
    compiled = true;
    int64_t os[TY_MAX_ARGS];
    char *bases[TY_MAX_ARGS];
    for (int a = 0; a < ctx->nargs && compiled; a++) {
      const ty_tile *t = &ctx->args[a];
      compiled = t->ndim == 2 && (ps.P[1] == 1 || t->strides[1] == (((h->contig >> a) & 1u) ? 1 : 0));
      os[a] = t->ndim == 2 ? t->strides[0] * (int64_t)ty__dtype_size(t->dtype) : 0;
      bases[a] = t->data;
    }
    if (compiled) {
      ty__fused_kernel2 fn;
      memcpy(&fn, &h->kernel, sizeof fn);
      fn(ps.P[0], ps.P[1], bases, os, (const char *)h);
    }
  } else if (rc == 0 && flat && h->kernel && nreduce == 0 && !unavail) {
    compiled = true;
    for (int a = 0; a < ctx->nargs && compiled; a++)
      compiled = flat_stride[a] == (((h->contig >> a) & 1u) ? 1 : 0);
    if (compiled) {
      char *bases[TY_MAX_ARGS];
      for (int a = 0; a < ctx->nargs; a++) bases[a] = ctx->args[a].data;
      ty__fused_kernel fn;
      memcpy(&fn, &h->kernel, sizeof fn);
      fn(n, bases, (const char *)h);
    }
  }
  bool summed = false; /* compiled up to a sum that the stream below finishes */
  if (rc == 0 && !compiled && !unavail && flat && h->kernel && h->kernel_kind == TY__FK_SUM && nreduce == 1 &&
      ps.block <= 4096) {
    const rsub *r = &ps.rs[ps.nsub - 1];
    summed = r->s->kind == TY__FK_REDUCE && r->stream == STREAM_PIECE;
    const int acc = r->s->opnd[0].ref;
    for (int a = 0; a < ctx->nargs && summed; a++)
      summed = a == acc || flat_stride[a] == (((h->contig >> a) & 1u) ? 1 : 0);
    if (summed) {
      ty__fused_kernel3 fn;
      memcpy(&fn, &h->kernel, sizeof fn);
      run_flat_sum(&ps, n, r, fn);
    }
  }
  if (rc == 0 && !compiled && !summed && !unavail && h->kernel && h->kernel_kind == TY__FK_ROWSUM && ps.nd == 2 &&
      nreduce == 1 && !has_task && !has_arg && ps.block <= 4096) {
    /* a compiled 2-D run ending in a sum, with the layout it was compiled for */
    const rsub *r = &ps.rs[ps.nsub - 1];
    summed = r->s->kind == TY__FK_REDUCE && r->stream == STREAM_PIECE;
    const int acc = r->s->opnd[0].ref;
    for (int a = 0; a < ctx->nargs && summed; a++) {
      const ty_tile *t = &ctx->args[a];
      summed = a == acc || (t->ndim == 2 && (ps.P[1] == 1 || t->strides[1] == (((h->contig >> a) & 1u) ? 1 : 0)));
    }
    if (summed) {
      ty__fused_kernel4 fn;
      memcpy(&fn, &h->kernel, sizeof fn);
      run_rows_sum(&ps, r, fn);
    }
  }
  if (rc == 0 && !compiled && !summed && flat && nreduce == 0 && !has_task && n <= PITCH_MAX_ELEMS &&
      pitched(ctx, flat_stride))
    ps.block = PITCH_BLOCK;
  if (rc == 0 && !compiled && !summed && !has_task && !has_whole && !ps.skip) {
    elide_copies(&ps);
    mark_chains(&ps);
  }
  if (rc == 0 && !compiled && !summed && !run_switching(&ps, n, flat, flat_stride, has_task, has_whole, &rc))
    rc = flat ? run_flat(&ps, n) : run_box(&ps);
  for (int k = 0; rc == 0 && !compiled && k < ps.nsub; k++) {
    rsub *r = &ps.rs[k];
    if (r->s->kind == TY__FK_REDUCE && r->stream == STREAM_PIECE && !(ps.skip && ps.skip[k]))
      stream_apply(r, ps.ro[r->first].base);
  }
  if (mem != local) free(mem);
  return rc;
}

static int fused_walk(ty_task_ctx *ctx, fused_fail *fail);

int ty__fused_variant(ty_task_ctx *ctx) {
  const ty__fhead *h = ctx->scalars;
  if (ctx->scalar_bytes < sizeof *h || h->magic != TY__FUSE_MAGIC || h->version != TY__FUSE_VERSION ||
      h->bytes > ctx->scalar_bytes || h->nargs != ctx->nargs || h->ndim != ctx->ndim)
    return ty_ctx_fail(ctx, "fused: the launch's description is not a fused run");
  fused_fail fail = {0, 0, 0};
  int rc = fused_walk(ctx, ctx->reach ? &fail : NULL);
  if (rc == 0 && fail.rc) {
    ty_ctx_fail_reached(ctx, fail.reached);
    return fail.rc;
  }
  return rc;
}

/* The piece: one call of fused_piece, or its ordered tiles (below). */
static int fused_walk(ty_task_ctx *ctx, fused_fail *fail) {
  const ty__fhead *h = ctx->scalars;
  /* no REDUCE sub-operation (the head's summary says so): no accumulator to
   * look for (~30 instructions an op of a 64-op element-wise run) */
  if (ctx->pieces > 1 || ((h->sum.flags & TY__FH_SUMMARY) && h->sum.nreduce == 0))
    return fused_piece(ctx, fail);
  /* one piece: an ordered reduction into a REDUCE accumulator walks the
   * ordered tiles, as it would run with several pieces (ty__ordered_walk) */
  _Static_assert(TY_MAX_ARGS <= 64, "argument masks are 64 bits");
  uint64_t whole = 0, accs = 0;
  uint8_t kinds[TY_MAX_ARGS] = {0};
  const ty__fsub *s = ty__fsub_first(h);
  for (int k = 0; k < h->nsub; k++, s = ty__fsub_next(s))
    for (int j = 0; j < s->nops; j++) {
      const ty__fopnd *o = &s->opnd[j];
      if (o->ref < 0 || TY__FREF_IS_CONST(o->ref) || o->ref >= ctx->nargs) continue;
      if (TY__FOPND_PROJ(o) == TY_PROJ_WHOLE) whole |= UINT64_C(1) << o->ref;
      if (s->kind == TY__FK_REDUCE && j == 0 && TY__FOPND_PRIV(o) == TY_PRIV_REDUCE &&
          ty__reduce_ordered((ty__redkind)s->op, (ty_dtype)s->dt)) {
        accs |= UINT64_C(1) << o->ref;
        kinds[o->ref] = s->op;
      }
    }
  if (!accs) return fused_piece(ctx, fail);
  const uint64_t all = ctx->nargs >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << ctx->nargs) - 1;
  return ty__ordered_walk(ctx, all & ~whole, accs, kinds, fused_piece, fail);
}
