/*
 * exec_gpu.c — the GPU processors of the executor (exec_gpu.h).
 *
 * A launch placed on the GPUs runs in two phases on the driving thread:
 *  1. plan: the kernel it needs (a fused chain or an element-wise built-in as
 *     one generated kernel, a generator, a reduction, a matmul), its pieces
 *     (one per device at most: the partitioner with the devices as
 *     processors) and a block on each piece's device for every storage the
 *     piece touches. Nothing has changed yet, so a failure here (device
 *     memory full) sends the launch back to the CPU unharmed;
 *  2. run: per piece, the coherence tracker says which bytes must be copied
 *     to the device (from the host, from another device, or zeros for bytes
 *     never written), the copies and then the kernel are queued on the
 *     device's stream. Nothing waits.
 * The host waits only when it reads (ty__storage_host).
 */
#include "exec_gpu.h"

#include "builtins.h"
#include "fused.h"
#include "gpu_kernels.h"
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per storage a GPU touched: where its bytes are valid, and its block on
 * each device (the whole storage: pieces of one store share it). */
typedef struct ty__gstore {
  ty__coh_obj coh;
  ty__gpu_block *blk[TY_MAX_GPUS];
  ty_storage *stg;
  uint64_t used;  /* rt->gpu_clock when a launch last touched it: the least recent goes first */
  struct ty__gstore *prev, *next; /* the runtime's list (flush end: attached buffers) */
} ty__gstore;

/* A launch smaller than this stays on the CPU under target=auto unless its
 * data already lives on a GPU: copying it and launching a kernel costs more
 * than the CPU's few microseconds. */
#define TY__GPU_AUTO_BYTES ((int64_t)1 << 20)

enum { GK_NONE = 0, GK_IR, GK_GEN, GK_RED, GK_MATMUL, GK_TASK };

static bool writes(ty_privilege p) { return p != TY_PRIV_IN; }

static int64_t store_bytes(const ty_store *s) {
  return s->size * (int64_t)ty_dtype_size(s->dtype);
}

/* ---- what runs where -------------------------------------------------------------- */

typedef struct gk_plan {
  int kind;
  struct {           /* GK_IR from a built-in: what it computes (ty__fsub's fields) */
    uint8_t kind, op, dt, dt2, flags;
  } sub;
  ty__fillval fill;
  bool fused;        /* GK_IR: the task "fused" (its description is the IR) */
  bool fused_red;    /* GK_IR, fused: it ends in a full reduction (one piece) */
  int gen;           /* GK_GEN: TY__KFN_RANDOM / ARANGE / LINSPACE */
  ty_reduce_op red;  /* GK_RED */
  bool accumulate;
} gk_plan;

static ty_dtype red_out_dtype(ty_reduce_op op, ty_dtype in) {
  switch (op) {
  case TY_RED_SUM:
  case TY_RED_PROD: return ty_dtype_is_float(in) ? in : TY_I64;
  case TY_RED_ARGMIN:
  case TY_RED_ARGMAX: return TY_I64;
  default: return in;
  }
}

/* A fused run whose last sub-operation is a reduction: k->fused_red, and
 * whether it adds into its accumulator (a REDUCE argument). Which
 * reductions the kernel does is gpu_codegen.c's to say (ty__gk_from_fused). */
static void fused_reduction(const ty_pending *l, gk_plan *k) {
  const ty__fhead *h = (const ty__fhead *)l->scalars;
  if (l->scalar_bytes < sizeof *h || h->magic != TY__FUSE_MAGIC || h->bytes > l->scalar_bytes) return;
  const ty__fsub *s = ty__fsub_first(h), *last = NULL;
  for (int i = 0; i < h->nsub; i++, s = ty__fsub_next(s)) last = s;
  if (!last || last->kind != TY__FK_REDUCE || last->nops != 2) return;
  k->fused_red = true;
  k->accumulate = TY__FOPND_PRIV(&last->opnd[0]) == TY_PRIV_REDUCE && !(last->flags & TY__FS_INIT_OUT);
}

bool ty__gpu_fuses_reduce(const ty_runtime *rt, const ty_pending *l) {
  const ty__builtins *b = rt->builtins;
  ty__reduce_args ra;
  if (l->nargs != 2 || l->scalar_bytes != sizeof ra) return false;
  memcpy(&ra, l->scalars, sizeof ra);
  if (ra.kind < TY_RED_SUM || ra.kind > TY_RED_MAX || l->task != b->reduce[ra.kind]) return false;
  const ty_arg *out = &l->args[0], *in = &l->args[1];
  if (out->proj != TY_PROJ_ALIGNED || in->proj != TY_PROJ_ALIGNED ||
      out->store->dtype != red_out_dtype((ty_reduce_op)ra.kind, in->store->dtype) ||
      strcmp(ty__gk_ctype(in->store->dtype), "?") == 0)
    return false;
  for (int d = 0; d < l->ndim; d++) /* one output element: stride 0 along every dim */
    if (l->domain[d] > 1 && out->store->strides[d] != 0) return false;
  return true;
}

/* What kernel launch l needs; GK_NONE with the reason when there is none. */
static int classify(const ty_runtime *rt, const ty_pending *l, gk_plan *k, char *why, size_t len) {
  const ty__builtins *b = rt->builtins;
  const ty_task *t = l->task;
  memset(k, 0, sizeof *k);
  if (t->gpu) return k->kind = GK_TASK; /* a host's C task with its own GPU variant */
  for (int i = 0; i < l->nargs; i++) /* the dtypes added later (i8 ...) run on the CPU */
    if (l->args[i].store->dtype >= TY__GPU_NDTYPES) {
      snprintf(why, len, "%s has no GPU kernel yet", ty_dtype_name(l->args[i].store->dtype));
      return GK_NONE;
    }
  if (t == b->fused) {
    k->fused = true;
    fused_reduction(l, k);
    return k->kind = GK_IR;
  }
  if (t == b->random || t == b->arange || t == b->linspace) {
    size_t want = t == b->random ? sizeof(ty__random_args)
                  : t == b->arange ? sizeof(ty__arange_args) : sizeof(ty__linspace_args);
    if (l->nargs != 1 || l->scalar_bytes != want || l->args[0].proj != TY_PROJ_ALIGNED) {
      snprintf(why, len, "this form of %s has no GPU kernel", t->name);
      return GK_NONE;
    }
    k->gen = t == b->random ? TY__KFN_RANDOM : t == b->arange ? TY__KFN_ARANGE : TY__KFN_LINSPACE;
    return k->kind = GK_GEN;
  }
  for (int r = 0; r < TY_NREDUCE; r++) {
    if (t != b->reduce[r] || !t) continue;
    ty__reduce_args ra;
    if (l->nargs != 2 || l->scalar_bytes != sizeof ra) break;
    memcpy(&ra, l->scalars, sizeof ra);
    if (ra.kind < 0 || ra.kind >= TY_NREDUCE || ra.kind == TY_RED_MEAN) break;
    const ty_arg *out = &l->args[0], *in = &l->args[1];
    if (out->proj != TY_PROJ_ALIGNED || in->proj != TY_PROJ_ALIGNED ||
        out->store->dtype != red_out_dtype((ty_reduce_op)ra.kind, in->store->dtype)) {
      snprintf(why, len, "%s into %s has no GPU kernel", t->name, ty_dtype_name(out->store->dtype));
      return GK_NONE;
    }
    k->red = (ty_reduce_op)ra.kind;
    k->accumulate = out->priv == TY_PRIV_REDUCE && !ra.init_out;
    return k->kind = GK_RED;
  }
  if (t == b->matmul) {
    /* 2-D, or batched: (batch..., m, n) = (batch..., m, k) (batch..., k, n),
     * one cuBLAS call per matrix (ops_products.c) */
    const int nd = l->ndim;
    if (l->nargs != 3 || nd < 2) goto none;
    const ty_store *C = l->args[0].store, *A = l->args[1].store, *B = l->args[2].store;
    ty_dtype dt = C->dtype;
    bool trans;
    int64_t ld;
    if (dt != TY_F64 && dt != TY_F32) {
      snprintf(why, len, "matmul of %s: cuBLAS multiplies f64 and f32 only (integer and bool products run on "
                         "the CPU)", ty_dtype_name(dt));
      return GK_NONE;
    }
    if (A->dtype != dt || B->dtype != dt) {
      snprintf(why, len, "matmul of %s and %s into %s: cuBLAS takes one dtype for all three (mixed products, "
                         "such as f32 summed in f64, run on the CPU)",
               ty_dtype_name(A->dtype), ty_dtype_name(B->dtype), ty_dtype_name(dt));
      return GK_NONE;
    }
    if (A->ndim != nd || B->ndim != nd || C->ndim != nd ||
        l->args[0].proj != TY_PROJ_ALIGNED || (C->shape[nd - 1] > 1 && C->strides[nd - 1] != 1) ||
        (C->shape[nd - 2] > 1 && C->strides[nd - 2] < C->shape[nd - 1]) ||
        !ty__blas_layout(A->shape[nd - 2], A->shape[nd - 1], A->strides[nd - 2], A->strides[nd - 1], &trans,
                         &ld) ||
        !ty__blas_layout(B->shape[nd - 2], B->shape[nd - 1], B->strides[nd - 2], B->strides[nd - 1], &trans,
                         &ld)) {
      snprintf(why, len, "matmul: only operands in BLAS layouts run on a GPU");
      return GK_NONE;
    }
    return k->kind = GK_MATMUL;
  }
  ty__fsub fs;
  if (ty__fuse_builtin(rt, l, &fs, &k->fill)) {
    k->sub.kind = fs.kind;
    k->sub.op = fs.op;
    k->sub.dt = fs.dt;
    k->sub.dt2 = fs.dt2;
    k->sub.flags = fs.flags;
    switch (k->sub.kind) {
    case TY__FK_UNARY:
    case TY__FK_BINARY:
    case TY__FK_WHERE:
    case TY__FK_CAST:
    case TY__FK_FILL:
      for (int i = 0; i < l->nargs; i++)
        if (l->args[i].proj != TY_PROJ_ALIGNED || l->args[i].priv == TY_PRIV_REDUCE) goto none;
      return k->kind = GK_IR;
    default: break;
    }
  }
none:
  snprintf(why, len, "task '%s' has no GPU kernel", t->name);
  return GK_NONE;
}

static bool data_on_gpu(const ty_pending *l) {
  for (int i = 0; i < l->nargs; i++) {
    const ty_storage *stg = l->args[i].store->storage;
    if (stg->gpu && !ty__coh_valid(&stg->gpu->coh, 0, stg->nbytes, TY__COH_HOST)) return true;
  }
  return false;
}

bool ty__gpu_may_run(const ty_runtime *rt, const ty_pending *l) {
  return rt->gpu && rt->gpu->list.count > 0 && l->pol->p.target != TY_TARGET_CPU;
}

bool ty__gpu_place(ty_runtime *rt, const ty_pending *l, char *why, size_t whylen) {
  why[0] = 0;
  const ty__gpu *g = rt->gpu;
  ty_target target = l->pol->p.target;
  if (target == TY_TARGET_CPU) return false;
  if (!g || g->list.count == 0) {
    if (target == TY_TARGET_GPU) snprintf(why, whylen, "target=gpu, but no GPU is in use: %s", g ? g->list.why : "none");
    return false;
  }
  gk_plan k;
  char reason[160];
  if (classify(rt, l, &k, reason, sizeof reason) == GK_NONE) {
    snprintf(why, whylen, "ran on the CPU: %s", reason);
    return false;
  }
  if (target == TY_TARGET_GPU) {
    snprintf(why, whylen, "target=gpu");
    return true;
  }
  int64_t bytes = 0;
  for (int i = 0; i < l->nargs; i++) bytes += store_bytes(l->args[i].store);
  if (data_on_gpu(l)) {
    snprintf(why, whylen, "target=auto: its data is on a GPU");
    return true;
  }
  if (bytes >= TY__GPU_AUTO_BYTES) {
    snprintf(why, whylen, "target=auto: %lld bytes, at least %lld", (long long)bytes,
             (long long)TY__GPU_AUTO_BYTES);
    return true;
  }
  return false;
}

/* ---- storages on devices -------------------------------------------------------------- */

static ty__gstore *gstore_of(ty_runtime *rt, ty_storage *stg) {
  if (stg->gpu) return stg->gpu;
  ty__gstore *gs = ty__calloc(1, sizeof *gs);
  if (!gs) return NULL;
  /* everything written so far was written on the host; never written: zeros */
  ty__coh_init(&gs->coh, stg->nbytes, stg->data ? 1u << TY__COH_HOST : 0);
  gs->stg = stg;
  gs->next = rt->gstores;
  if (gs->next) gs->next->prev = gs;
  rt->gstores = gs;
  stg->gpu = gs;
  return gs;
}

void ty__storage_gpu_free(ty_runtime *rt, ty_storage *stg) {
  ty__gstore *gs = stg->gpu;
  if (!gs) return;
  if (stg->external && stg->data && !stg->cancelled)
    (void)ty__storage_host(rt, stg, 0, stg->nbytes, TY__HOST_READ);
  (void)ty__gpu_join(rt); /* the spine then follows every use of the blocks */
  for (int d = 0; d < TY_MAX_GPUS; d++)
    if (gs->blk[d]) ty__gpu_free(rt->gpu, d, gs->blk[d], 0);
  ty__coh_free(&gs->coh);
  if (gs->prev) gs->prev->next = gs->next;
  else rt->gstores = gs->next;
  if (gs->next) gs->next->prev = gs->prev;
  free(gs);
  stg->gpu = NULL;
}

static void dev_bases(const ty__gstore *gs, uint64_t *base) {
  for (int d = 0; d < TY_MAX_GPUS; d++) base[d] = gs->blk[d] ? gs->blk[d]->ptr : 0;
}

/* ---- streams: the lanes of a wave ----------------------------------------------------------
 *
 * Launch m of a wave runs on stream m % TY__GPU_STREAMS of its GPUs (its
 * lane), so independent launches overlap. Stream 0 is the device's spine:
 * at every join (the start of a wave, a host access, a free, the end of a
 * flush) it waits for the other streams that got work since the last join,
 * and a stream other than 0 waits for the spine before its first work after
 * a join. Everything an earlier wave did is then ordered before everything a
 * later wave does, with events only: no stream and no host waits for a
 * whole device. */
static const uint8_t ALL_LANES = (uint8_t)(((1u << TY__GPU_STREAMS) - 1) & ~1u);

/* Before queuing work on stream `lane` of device d. */
static ty_status lane_use(ty_runtime *rt, int d, int lane, char *err, size_t errlen) {
  ty__gpu *g = rt->gpu;
  uint8_t bit = (uint8_t)(1u << lane);
  if (lane == 0) {
    rt->gpu_behind[d] = ALL_LANES; /* the others must wait for this work */
    return TY_OK;
  }
  if (rt->gpu_behind[d] & bit) {
    ty_status st = ty__gpu_stream_wait(g, d, lane, d, 0, err, errlen);
    if (st) return st;
    rt->gpu_behind[d] &= (uint8_t)~bit;
  }
  rt->gpu_used[d] |= bit;
  return TY_OK;
}

/* The spine of device d waits for every lane used since the last join. */
static ty_status lane_join(ty_runtime *rt, int d, char *err, size_t errlen) {
  for (int s = 1; s < TY__GPU_STREAMS && rt->gpu_used[d]; s++) {
    if (!(rt->gpu_used[d] & (1u << s))) continue;
    ty_status st = ty__gpu_stream_wait(rt->gpu, d, 0, d, s, err, errlen);
    if (st) return st;
    rt->gpu_used[d] &= (uint8_t)~(1u << s);
    rt->gpu_behind[d] = ALL_LANES;
  }
  return TY_OK;
}

ty_status ty__gpu_join(ty_runtime *rt) {
  if (!rt->gpu || !rt->gpu->active) return TY_OK;
  char err[512] = "";
  for (int d = 0; d < rt->gpu->ndev; d++) {
    ty_status st = lane_join(rt, d, err, sizeof err);
    if (st) return ty__fail(rt, st, "ordering GPU %d's streams: %s", d, err);
  }
  return TY_OK;
}

static void count_copy(ty_runtime *rt, ty_record *e, const ty__coh_copy *c) {
  uint64_t n = c->hi - c->lo;
  if (c->src < 0) return; /* zero fills are not transfers */
  if (c->dst == TY__COH_HOST) {
    rt->stats.gpu_d2h_bytes += n;
    if (e) e->d2h += n;
  } else if (c->src == TY__COH_HOST) {
    rt->stats.gpu_h2d_bytes += n;
    if (e) e->h2d += n;
  } else {
    rt->stats.gpu_d2d_bytes += n;
    if (e) e->d2d += n;
  }
}

/* Queue copies for place `place` of storage gs on device streams. Copies
 * between devices order both streams around them: the destination waits
 * for the source's writes, the source's later writes wait for the copy. */
static ty_status run_copies(ty_runtime *rt, ty__gstore *gs, const ty__coh_copies *cp, int lane,
                            ty_record *e, bool *to_host, char *err, size_t errlen) {
  ty__gpu *g = rt->gpu;
  uint64_t base[TY_MAX_GPUS];
  dev_bases(gs, base);
  for (int i = 0; i < cp->n; i++) {
    const ty__coh_copy *c = &cp->v[i];
    int d = c->dst - 1, s = c->src - 1;
    ty_status st;
    if ((c->src == TY__COH_HOST || c->dst == TY__COH_HOST) && !gs->stg->data) {
      /* valid on the host means written there, and a host read allocates first */
      snprintf(err, errlen, "internal: a store's bytes on the host have no host buffer");
      return TY_EINVAL;
    }
    /* the source's bytes were written by an earlier wave (on its spine since
     * the join) or by another piece of this launch (on the same lane there);
     * its later writes wait for this copy on the spine */
    if (c->src >= 1 && c->dst >= 1 && (st = ty__gpu_stream_wait(g, d, lane, s, 0, err, errlen))) return st;
    if (c->src >= 1 && c->dst >= 1 && lane != 0 && (rt->gpu_used[s] & (1u << lane)) &&
        (st = ty__gpu_stream_wait(g, d, lane, s, lane, err, errlen)))
      return st;
    if ((st = ty__gpu_copy_run(g, c, gs->stg->data, base, c->dst >= 1 ? lane : 0, err, errlen))) return st;
    if (c->src >= 1 && c->dst >= 1) {
      if ((st = ty__gpu_stream_wait(g, s, 0, d, lane, err, errlen))) return st;
      rt->gpu_behind[s] = ALL_LANES;
    }
    if (c->dst == TY__COH_HOST && c->src >= 1) to_host[s] = true;
    count_copy(rt, e, c);
  }
  return TY_OK;
}

ty_status ty__storage_host(ty_runtime *rt, ty_storage *stg, uint64_t lo, uint64_t hi, int access) {
  ty__gstore *gs = stg->gpu;
  if (!gs || hi <= lo) return TY_OK;
  if (access == TY__HOST_READ && ty__coh_valid(&gs->coh, lo, hi, TY__COH_HOST)) return TY_OK;
  ty__coh_copies cp = {0};
  ty__cohaccess a = access == TY__HOST_READ ? TY__COH_READ
                    : access == TY__HOST_DISCARD ? TY__COH_DISCARD : TY__COH_READWRITE;
  ty_status st = ty__coh_acquire(&gs->coh, lo, hi, TY__COH_HOST, a, &cp);
  if (st) {
    ty__coh_copies_free(&cp);
    return ty__fail(rt, st, "out of memory tracking where a store's bytes live");
  }
  bool waited[TY_MAX_GPUS] = {false};
  char err[512] = "";
  st = ty__gpu_join(rt); /* what the lanes wrote is on the spines */
  if (st == TY_OK) st = run_copies(rt, gs, &cp, 0, NULL, waited, err, sizeof err);
  for (int d = 0; st == TY_OK && d < TY_MAX_GPUS; d++)
    if (waited[d]) st = ty__gpu_sync(rt->gpu, d, 0, err, sizeof err);
  ty__coh_copies_free(&cp);
  if (st) return ty__fail(rt, st, "copying a store from a GPU: %s", err);
  return TY_OK;
}

bool ty__storage_host_valid(const ty_storage *stg, uint64_t lo, uint64_t hi) {
  return !stg->gpu || hi <= lo || ty__coh_valid(&stg->gpu->coh, lo, hi, TY__COH_HOST);
}

/* --trace: the device times of the pieces timed since the last flush end,
 * as trace events (this waits for their last events). */
static void trace_device_times(ty_runtime *rt) {
  ty__gpu *g = rt->gpu;
  const double origin = ty__tracing(rt) ? ty__now() - ty__trace_time(rt) : 0;
  for (int k = 0; k < g->ntimings; k++) {
    const ty__gpu_timing *t = &g->timings[k];
    double t0, t1;
    if (ty__gpu_mark_times(g, t->device, t->a, t->b, &t0, &t1) && ty__tracing(rt))
      ty__trace_gpu_device(rt, t->device, t->lane, t0 - origin, t1 - origin, t->piece, t->pieces, t->seq,
                           t->name);
  }
  g->ntimings = 0;
}

/* Remember piece p's events a, b (NULL: not timed). */
static void add_timing(ty_runtime *rt, const ty_pending *l, int d, int lane, int p, int pieces, ty__CUevent a,
                       ty__CUevent b) {
  ty__gpu *g = rt->gpu;
  if (a && b && g->ntimings == g->captimings) {
    int cap = g->captimings ? 2 * g->captimings : 64;
    ty__gpu_timing *v = ty__realloc(g->timings, (size_t)cap * sizeof *v);
    if (v) g->timings = v, g->captimings = cap;
  }
  if (!a || !b || g->ntimings == g->captimings) { /* not timed: the trace goes without */
    double t0, t1;
    if (a || b) (void)ty__gpu_mark_times(g, d, a ? a : b, b ? b : a, &t0, &t1);
    return;
  }
  ty__gpu_timing *t = &g->timings[g->ntimings++];
  *t = (ty__gpu_timing){a, b, d, lane, p, pieces, l->seq, ""};
  snprintf(t->name, sizeof t->name, "%s", ty_task_name(l->task));
}

ty_status ty__gpu_flush_end(ty_runtime *rt) {
  ty_status jst = ty__gpu_join(rt);
  if (jst) return jst;
  if (rt->gpu && rt->gpu->ntimings) trace_device_times(rt);
  for (ty__gstore *gs = rt->gstores; gs; gs = gs->next) {
    ty_storage *stg = gs->stg;
    if (!stg->external || !stg->data || stg->cancelled) continue;
    ty_status st = ty__storage_host(rt, stg, 0, stg->nbytes, TY__HOST_READ);
    if (st) return st;
  }
  return TY_OK;
}

/* ---- running a launch ------------------------------------------------------------------- */

/* Argument i of piece box [lo, hi): its tile (data NULL), its byte range
 * in its storage and whether the tile covers that range. */
static void piece_tile(const ty_arg *a, int ndim, const int64_t *lo, const int64_t *hi, ty_tile *t,
                       int64_t *elem_off, uint64_t *blo, uint64_t *bhi, bool *dense) {
  const ty_store *s = a->store;
  memset(t, 0, sizeof *t);
  t->dtype = s->dtype;
  t->ndim = s->ndim;
  for (int k = 0; k < s->ndim; k++) t->gshape[k] = s->shape[k];
  int64_t off = s->offset;
  if (a->proj == TY_PROJ_WHOLE) {
    for (int k = 0; k < s->ndim; k++) {
      t->shape[k] = s->shape[k];
      t->strides[k] = s->strides[k];
    }
  } else {
    for (int k = 0; k < ndim; k++) {
      t->shape[k] = hi[k] - lo[k];
      t->lo[k] = lo[k];
      t->strides[k] = s->strides[k];
      off += lo[k] * s->strides[k];
    }
  }
  *elem_off = off;
  ty__coh_tile_range(t->ndim, t->shape, t->strides, off, ty_dtype_size(s->dtype), blo, bhi, dense);
}

static void store_name(const ty_store *s, char *buf, size_t len) {
  char sh[128];
  ty__shape_str(s->ndim, s->shape, sh, sizeof sh);
  snprintf(buf, len, "store #%llu %s %s", (unsigned long long)s->id, sh, ty_dtype_name(s->dtype));
}

static ty_status ir_of_builtin(const gk_plan *k, const ty_pending *l, int ndim, const int64_t *shape,
                               const ty_tile *tiles, const uint64_t *ptr, ty__gir *ir) {
  memset(ir, 0, offsetof(ty__gir, subs));
  ir->ndim = ndim;
  for (int d = 0; d < ndim; d++) ir->shape[d] = shape[d];
  ir->nargs = l->nargs;
  for (int a = 0; a < l->nargs; a++) {
    ir->args[a].dtype = tiles[a].dtype;
    ir->args[a].ptr = ptr[a];
    for (int d = 0; d < ndim; d++) ir->args[a].strides[d] = tiles[a].strides[d];
  }
  ty__gsub *g = &ir->subs[0];
  memset(g, 0, sizeof *g);
  ir->nsubs = 1;
  ir->fastmath = (k->sub.flags & TY__FS_FASTMATH) != 0;
  g->op = k->sub.op;
  g->dt = k->sub.dt;
  g->dt2 = k->sub.dt2;
  g->out = (ty__gref){TY__GREF_ARG, 0};
  switch (k->sub.kind) {
  case TY__FK_UNARY: g->kind = TY__G_UNARY; g->nin = 1; break;
  case TY__FK_BINARY: g->kind = TY__G_BINARY; g->nin = 2; break;
  case TY__FK_WHERE: g->kind = TY__G_WHERE; g->nin = 3; break;
  case TY__FK_CAST: g->kind = TY__G_CAST; g->nin = 1; break;
  case TY__FK_FILL:
    g->kind = TY__G_FILL;
    g->nin = 1;
    ir->nconsts = 1;
    ir->consts[0] = (ty__gconst){(ty_dtype)k->sub.dt, k->fill.f, k->fill.i};
    g->in[0] = (ty__gref){TY__GREF_CONST, 0};
    return TY_OK;
  default: return TY_EDTYPE;
  }
  for (int j = 0; j < g->nin; j++) g->in[j] = (ty__gref){TY__GREF_ARG, (uint16_t)(j + 1)};
  return TY_OK;
}

/* C = A B on device d: one cuBLAS gemm per matrix of C's leading (batch)
 * dims, in C order (A and B broadcast along them with stride 0). */
static ty_status run_matmul(ty__gpu *g, int d, int lane, int ndim, const ty_tile *tiles, const uint64_t *ptr,
                            char *err, size_t errlen) {
  const ty_tile *C = &tiles[0], *A = &tiles[1], *B = &tiles[2];
  const int nb = ndim - 2, r = nb, c = nb + 1;
  const uint64_t es = ty_dtype_size(C->dtype);
  int64_t idx[TY_MAX_RANK] = {0};
  for (int k = 0; k < nb; k++)
    if (C->shape[k] == 0) return TY_OK;
  for (;;) {
    int64_t oc = 0, oa = 0, ob = 0;
    for (int k = 0; k < nb; k++) {
      oc += idx[k] * C->strides[k];
      oa += idx[k] * A->strides[k];
      ob += idx[k] * B->strides[k];
    }
    ty_status st = ty__gpu_matmul(g, d, lane, C->dtype, C->shape[r], C->shape[c], A->shape[c],
                                  ptr[1] + (uint64_t)oa * es, A->strides[r], A->strides[c],
                                  ptr[2] + (uint64_t)ob * es, B->strides[r], B->strides[c],
                                  ptr[0] + (uint64_t)oc * es, C->shape[r] > 1 ? C->strides[r] : C->shape[c],
                                  err, errlen);
    if (st) return st;
    int k = nb - 1;
    for (; k >= 0; k--) {
      if (++idx[k] < C->shape[k]) break;
      idx[k] = 0;
    }
    if (k < 0) return TY_OK;
  }
}

/* The kernel of one piece on device d, its arguments at device addresses ptr. */
static ty_status run_kernel(ty_runtime *rt, const gk_plan *k, ty_pending *l, int d, int lane, int ndim,
                            const int64_t *lo, const int64_t *hi, const ty_tile *tiles,
                            const uint64_t *ptr, ty__gir *ir, char *err, size_t errlen) {
  ty__gpu *g = rt->gpu;
  int64_t shape[TY_MAX_RANK];
  for (int i = 0; i < ndim; i++) shape[i] = hi[i] - lo[i];
  ty_status st;
  switch (k->kind) {
  case GK_IR:
    st = k->fused ? ty__gk_from_fused(l->scalars, l->scalar_bytes, ndim, shape, l->nargs, tiles, ptr, ir,
                                      err, errlen)
                  : ir_of_builtin(k, l, ndim, shape, tiles, ptr, ir);
    return st ? st : ty__gpu_fused(g, d, lane, ir, err, errlen);
  case GK_GEN: return ty__gpu_generate(g, d, lane, k->gen, &tiles[0], ptr[0], l->scalars, err, errlen);
  case GK_RED:
    return ty__gpu_reduce(g, d, lane, k->red, tiles[1].dtype, ndim, shape, ptr[1], tiles[1].strides, ptr[0],
                          tiles[0].strides, k->accumulate, err, errlen);
  case GK_MATMUL: return run_matmul(g, d, lane, ndim, tiles, ptr, err, errlen);
  case GK_TASK: {
    ty_tile dt[TY_MAX_ARGS];
    char msg[512] = "";
    ty_task_ctx ctx = {.rt = rt, .task = l->task, .task_name = l->task->name,
                       .task_data = l->task->data, .piece = 0, .pieces = 1, .threads = 1,
                       .ndim = ndim, .nargs = l->nargs, .args = dt, .scalars = l->scalars,
                       .scalar_bytes = l->scalar_bytes, .errbuf = msg, .errcap = sizeof msg,
                       .device = d, .stream = g->dev[d].stream[lane]};
    for (int i = 0; i < ndim; i++) {
      ctx.lo[i] = lo[i];
      ctx.hi[i] = hi[i];
    }
    for (int i = 0; i < l->nargs; i++) {
      dt[i] = tiles[i];
      dt[i].data = (char *)(uintptr_t)ptr[i];
    }
    if (g->api.CtxSetCurrent(g->dev[d].ctx) != TY__CUDA_SUCCESS) {
      snprintf(err, errlen, "cuCtxSetCurrent failed");
      return TY_EINVAL;
    }
    int rc = l->task->gpu(&ctx);
    if (rc == 0) return TY_OK;
    snprintf(err, errlen, "%s", msg[0] ? msg : ty_status_name(rc < 0 ? rc : TY_ETASK));
    return TY_ETASK;
  }
  default: return TY_EINVAL;
  }
}

/* The device of a one-piece launch: task mode deals launches out in turn
 * (independent launches then run on different GPUs); otherwise the device
 * that already holds the most of the bytes it touches (no copies), the
 * first on a tie. */
static int one_piece_device(ty_runtime *rt, const ty_pending *l, int ndev) {
  if (l->pol->p.mode == TY_MODE_TASK) return (int)(rt->gpu_turn++ % (uint64_t)ndev);
  int best = 0;
  uint64_t most = 0;
  for (int d = 0; d < ndev; d++) {
    uint64_t have = 0;
    for (int i = 0; i < l->nargs; i++) {
      const ty_storage *stg = l->args[i].store->storage;
      uint64_t lo, hi;
      bool dense;
      ty__store_range(l->args[i].store, &lo, &hi, &dense);
      if (stg->gpu && hi > lo && ty__coh_valid(&stg->gpu->coh, lo, hi, TY__COH_DEV(d))) have += hi - lo;
    }
    if (have > most) most = have, best = d;
  }
  return best;
}

static bool touched_by(const ty_pending *l, const ty_storage *stg) {
  for (int i = 0; i < l->nargs; i++)
    if (l->args[i].store->storage == stg) return true;
  return false;
}

/* Make room on device d: the block of the storage least recently used by a
 * launch (and not by l) goes, its bytes valid only there copied to the host
 * first. False when no block can go (none left, or the host buffer cannot
 * be had). */
static bool evict_one(ty_runtime *rt, const ty_pending *l, int d, ty_record *e) {
  ty__gstore *victim = NULL;
  for (ty__gstore *gs = rt->gstores; gs; gs = gs->next)
    if (gs->blk[d] && !touched_by(l, gs->stg) && (!victim || gs->used < victim->used)) victim = gs;
  if (!victim) return false;
  ty_storage *stg = victim->stg;
  ty__coh_copies cp = {0};
  char err[512] = "";
  bool waited[TY_MAX_GPUS] = {false};
  /* zeros where never written, as a host buffer is */
  ty_status st = stg->data || stg->cancelled ? TY_OK : ty__storage_ensure(rt, stg, true);
  if (st == TY_OK) st = ty__gpu_join(rt);
  if (st == TY_OK && !stg->cancelled) st = ty__coh_evict(&victim->coh, TY__COH_DEV(d), &cp);
  if (st == TY_OK) st = run_copies(rt, victim, &cp, 0, e, waited, err, sizeof err);
  if (st == TY_OK && waited[d]) st = ty__gpu_sync(rt->gpu, d, 0, err, sizeof err);
  if (st == TY_OK) {
    rt->stats.gpu_evictions++;
    ty__gpu_free(rt->gpu, d, victim->blk[d], 0);
    victim->blk[d] = NULL;
  }
  ty__coh_copies_free(&cp);
  return st == TY_OK;
}

/* The GPUs are open (opened now at the first launch that may run there);
 * false with the reason in why when they cannot be. */
static bool gpus_open(ty__gpu *g, char *why, size_t whylen) {
  char err[1024] = "";
  if (!g->active && ty__gpu_activate(g, err, sizeof err) != TY_OK) {
    snprintf(why, whylen, "the GPUs could not be opened: %s", err);
    return false;
  }
  if (g->ndev == 0) {
    snprintf(why, whylen, "no GPU is open");
    return false;
  }
  return true;
}

ty_status ty__gpu_run(ty_runtime *rt, ty_pending *l, int lane, ty_record *e, bool *fallback,
                      char *why, size_t whylen) {
  lane %= TY__GPU_STREAMS;
  *fallback = false;
  ty__gpu *g = rt->gpu;
  char err[1024] = "";
  gk_plan k;
  if (classify(rt, l, &k, why, whylen) == GK_NONE) {
    *fallback = true;
    return TY_OK;
  }
  if (!gpus_open(g, why, whylen)) {
    *fallback = true;
    return TY_OK;
  }
  /* phase 1: pieces, and a block on each piece's device for what it touches */
  ty_tiling tiling = {.ndim = l->ndim, .pieces = 1};
  for (int i = 0; i < l->ndim; i++) tiling.tiles[i] = 1;
  bool reduces = false;
  for (int i = 0; i < l->nargs; i++) reduces |= l->args[i].priv == TY_PRIV_REDUCE;
  if (((k.kind == GK_IR && !k.fused_red) || k.kind == GK_GEN || (k.kind == GK_TASK && !reduces)) &&
      g->ndev > 1)
    ty__partition(l, g->ndev, &tiling, e);
  int pieces = tiling.pieces;
  const int first = pieces == 1 ? one_piece_device(rt, l, g->ndev) : 0;
  for (int p = 0; p < pieces; p++) {
    int d = (first + p) % g->ndev;
    for (int i = 0; i < l->nargs; i++) {
      ty_storage *stg = l->args[i].store->storage;
      ty__gstore *gs = gstore_of(rt, stg);
      if (!gs) return ty__fail(rt, TY_ENOMEM, "%s: out of memory", l->task->name);
      gs->used = ++rt->gpu_clock;
      if (gs->blk[d] || stg->nbytes == 0) continue;
      char what[200];
      store_name(l->args[i].store, what, sizeof what);
      /* a full pool gives up the least recently used stores first */
      while (ty__gpu_alloc(g, d, stg->nbytes, 0, what, &gs->blk[d], err, sizeof err) != TY_OK) {
        if (!evict_one(rt, l, d, e)) {
          snprintf(why, whylen, "ran on the CPU: %s", err);
          *fallback = true;
          return TY_OK;
        }
      }
    }
  }
  ty__gir *ir = k.kind == GK_IR ? ty__malloc(sizeof *ir) : NULL;
  if (k.kind == GK_IR && !ir) return ty__fail(rt, TY_ENOMEM, "%s: out of memory", l->task->name);
  /* a fused run the generated kernel cannot do goes back now, before anything changed */
  if (k.fused) {
    int64_t lo[TY_MAX_RANK] = {0}, hi[TY_MAX_RANK];
    ty_tile tiles[TY_MAX_ARGS];
    uint64_t ptr[TY_MAX_ARGS] = {0}, blo, bhi;
    int64_t off;
    bool dense;
    for (int i = 0; i < l->ndim; i++) hi[i] = l->domain[i];
    for (int i = 0; i < l->nargs; i++) piece_tile(&l->args[i], l->ndim, lo, hi, &tiles[i], &off, &blo, &bhi, &dense);
    if (ty__gk_from_fused(l->scalars, l->scalar_bytes, l->ndim, hi, l->nargs, tiles, ptr, ir, err,
                          sizeof err) != TY_OK) {
      snprintf(why, whylen, "ran on the CPU: fused run: %s", err);
      free(ir);
      *fallback = true;
      return TY_OK;
    }
  }
  /* phase 2: per piece, copies in, then the kernel */
  ty__coh_copies cp = {0};
  ty_status st = TY_OK;
  bool empty = false;
  for (int i = 0; i < l->ndim; i++) empty |= l->domain[i] == 0;
  for (int p = 0; p < pieces && st == TY_OK && !empty; p++) {
    int d = (first + p) % g->ndev;
    int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
    ty__piece_box(l->ndim, l->domain, &tiling, p, lo, hi);
    ty_tile tiles[TY_MAX_ARGS];
    uint64_t ptr[TY_MAX_ARGS];
    const double t0 = ty__tracing(rt) ? ty__trace_time(rt) : 0;
    if ((st = lane_use(rt, d, lane, err, sizeof err))) {
      st = ty__fail(rt, st, "%s: ordering GPU %d's streams: %s", l->task->name, d, err);
      break;
    }
    ty__CUevent mark0 = ty__tracing(rt) ? ty__gpu_mark(g, d, lane) : NULL; /* device time */
    /* reads first, then writes: a store both read and written is read as it was */
    for (int pass = 0; pass < 2 && st == TY_OK; pass++)
      for (int i = 0; i < l->nargs && st == TY_OK; i++) {
        const ty_arg *a = &l->args[i];
        if ((pass == 0) == writes(a->priv)) continue;
        ty_storage *stg = a->store->storage;
        ty__gstore *gs = stg->gpu;
        int64_t off;
        uint64_t blo, bhi;
        bool dense;
        piece_tile(a, l->ndim, lo, hi, &tiles[i], &off, &blo, &bhi, &dense);
        ptr[i] = (gs->blk[d] ? gs->blk[d]->ptr : 0) + (uint64_t)off * ty_dtype_size(a->store->dtype);
        ty__cohaccess acc = a->priv == TY_PRIV_IN ? TY__COH_READ
                            : (a->priv == TY_PRIV_OUT && dense && !((k.kind == GK_RED || k.fused_red) &&
                                                                       k.accumulate))
                                ? TY__COH_DISCARD
                                : TY__COH_READWRITE;
        if (bhi <= blo) continue;
        ty__coh_copies_reset(&cp);
        if ((st = ty__coh_acquire(&gs->coh, blo, bhi, TY__COH_DEV(d), acc, &cp))) {
          st = ty__fail(rt, st, "%s: out of memory tracking device copies", l->task->name);
          break;
        }
        bool unused[TY_MAX_GPUS];
        if ((st = run_copies(rt, gs, &cp, lane, e, unused, err, sizeof err)))
          st = ty__fail(rt, st, "%s: copying to GPU %d: %s", l->task->name, d, err);
      }
    if (st == TY_OK && (st = run_kernel(rt, &k, l, d, lane, l->ndim, lo, hi, tiles, ptr, ir, err, sizeof err)))
      st = ty__fail(rt, st, "task '%s' failed on GPU %d: %s%s%s%s", l->task->name, d, err,
                    l->origin[0] ? " (launched at " : "", l->origin, l->origin[0] ? ")" : "");
    if (ty__tracing(rt)) {
      ty__trace_gpu_piece(rt, d, lane, t0, ty__trace_time(rt), p, pieces, l->seq, l->task);
      add_timing(rt, l, d, lane, p, pieces, mark0, mark0 ? ty__gpu_mark(g, d, lane) : NULL);
    }
  }
  ty__coh_copies_free(&cp);
  free(ir);
  if (e) {
    e->pieces = pieces;
    for (int i = 0; i < l->ndim; i++) e->tiles[i] = tiling.tiles[i];
    e->gpus = pieces < g->ndev ? pieces : g->ndev;
    e->processor = pieces == 1 ? first : -1; /* the GPU of a one-piece launch */
  }
  rt->stats.gpu_launches++;
  rt->stats.pieces += (uint64_t)pieces;
  return st;
}

/* ---- streamed chunks ---------------------------------------------------------------- */

/* Copy [blo, bhi) of a staged argument between its host buffer and its
 * block on device d (base: the block's address minus blo), on stream 0. */
static ty_status stage_copy(ty_runtime *rt, int d, ty_storage *stg, uint64_t base, uint64_t blo,
                            uint64_t bhi, bool in, ty_record *e, char *err, size_t errlen) {
  ty__coh_copy c = {in ? TY__COH_HOST : TY__COH_DEV(d), in ? TY__COH_DEV(d) : TY__COH_HOST, blo, bhi};
  uint64_t bases[TY_MAX_GPUS] = {0};
  bases[d] = base;
  ty_status st = ty__gpu_copy_run(rt->gpu, &c, stg->data, bases, 0, err, errlen);
  if (st == TY_OK) count_copy(rt, e, &c);
  return st;
}

ty_status ty__gpu_run_chunk(ty_runtime *rt, ty_pending *l, int dim, int64_t lo_, int64_t hi_, ty_record *e,
                            bool *fallback, char *why, size_t whylen) {
  *fallback = false;
  ty__gpu *g = rt->gpu;
  char err[1024] = "";
  gk_plan k;
  if (classify(rt, l, &k, why, whylen) == GK_NONE) {
    *fallback = true;
    return TY_OK;
  }
  bool aligned = true;
  for (int i = 0; i < l->nargs; i++) {
    aligned &= l->args[i].proj == TY_PROJ_ALIGNED && l->args[i].priv != TY_PRIV_REDUCE;
    if (l->args[i].priv != TY_PRIV_OUT && l->args[i].store->storage->cancelled) {
      *fallback = true; /* a poisoned input: the CPU path skips it, and its error surfaces when read */
      why[0] = 0;
      return TY_OK;
    }
  }
  if (!((k.kind == GK_IR && !k.fused_red) || k.kind == GK_GEN) || !aligned) {
    snprintf(why, whylen, "ran on the CPU: in a streamed scope, GPUs run the element-wise chunks (fused chains, "
                          "element-wise built-ins, generators); '%s' is not one", l->task->name);
    *fallback = true;
    return TY_OK;
  }
  if (!gpus_open(g, why, whylen)) {
    *fallback = true;
    return TY_OK;
  }
  int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
  bool empty = false;
  for (int i = 0; i < l->ndim; i++) {
    lo[i] = dim == i ? lo_ : 0;
    hi[i] = dim == i ? hi_ : l->domain[i];
    empty |= hi[i] <= lo[i];
  }
  if (empty) return TY_OK;
  ty__gir *ir = k.kind == GK_IR ? ty__malloc(sizeof *ir) : NULL;
  if (k.kind == GK_IR && !ir) return ty__fail(rt, TY_ENOMEM, "%s: out of memory", l->task->name);
  /* the chunk's tiles, the bytes they span, and a block of that size each */
  const int d = 0;
  ty_tile tiles[TY_MAX_ARGS];
  uint64_t ptr[TY_MAX_ARGS], blo[TY_MAX_ARGS], bhi[TY_MAX_ARGS];
  ty__gpu_block *blk[TY_MAX_ARGS] = {NULL};
  bool dense[TY_MAX_ARGS];
  ty_status st = TY_OK;
  for (int i = 0; i < l->nargs && !*fallback && st == TY_OK; i++) {
    const ty_arg *a = &l->args[i];
    int64_t off;
    piece_tile(a, l->ndim, lo, hi, &tiles[i], &off, &blo[i], &bhi[i], &dense[i]);
    const bool whole = (size_t)a->store->size * ty_dtype_size(a->store->dtype) == a->store->storage->nbytes;
    if ((st = ty__storage_ensure(rt, a->store->storage, a->priv != TY_PRIV_OUT || !whole))) break;
    if (bhi[i] <= blo[i]) {
      ptr[i] = 0;
      continue;
    }
    char what[200];
    store_name(a->store, what, sizeof what);
    if (ty__gpu_alloc(g, d, bhi[i] - blo[i], 0, what, &blk[i], err, sizeof err) != TY_OK) {
      snprintf(why, whylen, "ran on the CPU: a streamed chunk does not fit GPU %d: %s", d, err);
      *fallback = true;
      break;
    }
    ptr[i] = blk[i]->ptr - blo[i] + (uint64_t)off * ty_dtype_size(a->store->dtype);
  }
  if (st == TY_OK && !*fallback && k.fused) {
    int64_t shape[TY_MAX_RANK];
    for (int i = 0; i < l->ndim; i++) shape[i] = hi[i] - lo[i];
    if (ty__gk_from_fused(l->scalars, l->scalar_bytes, l->ndim, shape, l->nargs, tiles, ptr, ir, err,
                          sizeof err) != TY_OK) {
      snprintf(why, whylen, "ran on the CPU: fused run: %s", err);
      *fallback = true;
    }
  }
  if (st == TY_OK && !*fallback) {
    /* the host holds every byte the chunk reads; what it writes, the device
     * copies no longer hold (stream 0 after every lane's earlier work) */
    if ((st = ty__gpu_join(rt)) == TY_OK) st = lane_use(rt, d, 0, err, sizeof err);
    for (int i = 0; i < l->nargs && st == TY_OK; i++)
      if (bhi[i] > blo[i])
        st = ty__storage_host(rt, l->args[i].store->storage, blo[i], bhi[i],
                              writes(l->args[i].priv) ? TY__HOST_WRITE : TY__HOST_READ);
    const double t0 = ty__tracing(rt) ? ty__trace_time(rt) : 0;
    /* in: what the kernel reads, and the gaps of a strided output (the copy
     * back writes its whole span) */
    for (int i = 0; i < l->nargs && st == TY_OK; i++) {
      const ty_arg *a = &l->args[i];
      if (bhi[i] > blo[i] && (a->priv != TY_PRIV_OUT || !dense[i]) &&
          (st = stage_copy(rt, d, a->store->storage, blk[i]->ptr - blo[i], blo[i], bhi[i], true, e, err, sizeof err)))
        st = ty__fail(rt, st, "%s: copying a streamed chunk to GPU %d: %s", l->task->name, d, err);
    }
    if (st == TY_OK && (st = run_kernel(rt, &k, l, d, 0, l->ndim, lo, hi, tiles, ptr, ir, err, sizeof err)))
      st = ty__fail(rt, st, "task '%s' failed on GPU %d: %s%s%s%s", l->task->name, d, err,
                    l->origin[0] ? " (launched at " : "", l->origin, l->origin[0] ? ")" : "");
    for (int i = 0; i < l->nargs && st == TY_OK; i++) {
      const ty_arg *a = &l->args[i];
      if (bhi[i] > blo[i] && writes(a->priv) &&
          (st = stage_copy(rt, d, a->store->storage, blk[i]->ptr - blo[i], blo[i], bhi[i], false, e, err, sizeof err)))
        st = ty__fail(rt, st, "%s: copying a streamed chunk from GPU %d: %s", l->task->name, d, err);
    }
    /* the host's bytes are final before the streamer goes on (and may free
     * a transient's slice) */
    if (st == TY_OK && (st = ty__gpu_sync(g, d, 0, err, sizeof err)))
      st = ty__fail(rt, st, "%s: waiting for GPU %d: %s", l->task->name, d, err);
    if (ty__tracing(rt)) ty__trace_gpu_piece(rt, d, 0, t0, ty__trace_time(rt), 0, 1, l->seq, l->task);
  }
  for (int i = 0; i < l->nargs; i++)
    if (blk[i]) ty__gpu_free(g, d, blk[i], 0);
  free(ir);
  if (*fallback) return TY_OK;
  if (e) {
    e->pieces = 1;
    for (int i = 0; i < l->ndim; i++) e->tiles[i] = 1;
    e->gpus = 1;
    e->processor = d;
  }
  rt->stats.gpu_launches++;
  rt->stats.pieces++;
  return st;
}

const ty__devices ty__gpu_devices = {ty__gpu_place, ty__gpu_run, ty__gpu_join, ty__gpu_run_chunk,
                                     ty__storage_host, ty__storage_gpu_free};
