/*
 * exec.c — the executor: where the pieces of a launch run, and on what data.
 *
 * The window (window.c) decides what runs together (waves) and the stream
 * pass (stream.c) what runs piece by piece; both hand launches to this file,
 * which alone knows processors. For each launch it allocates the storage the
 * launch touches, asks the partitioner for a tiling over the processors of
 * the launch's kind (the processor table below), runs one point task per
 * piece and combines reduction privates. Invariants:
 *  - pieces of one launch write disjoint elements: an OUT/INOUT argument
 *    whose view has stride 0 on a dim forbids splitting that dim (partition.c),
 *    and REDUCE arguments write private tiles combined after the pieces in
 *    piece order (the same bits for any processor count);
 *  - prepare and finish run on the driving thread in program order; pieces
 *    run on workers and touch only their own result and private slots;
 *  - a launch that fails cancels what it writes with its cause (a fused run
 *    only what its failure reached: ty_ctx_fail_reached); one that reads
 *    cancelled storage is skipped and passes that cause on (a fused run runs
 *    the members that do not read it: fused_without); one that writes a
 *    whole store makes it readable again.
 */
#include "internal.h"
#include "builtins.h"
#include "codegen_cc.h"
#include "exec.h"
#include "fused.h"
#include "kernels.h"
#include "linebuf.h"
#include "prepared.h"
#include "team.h"
#include "trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool writes(ty_privilege p) { return p != TY_PRIV_IN; }

/* Whether an OUT view writes every byte of its storage although its size
 * says otherwise: its distinct elements (a broadcast dim, stride 0, counted
 * once) lie densely from the storage's start. A reduction's output viewed
 * back over its input's shape is one: k-means' argmin over rows of 10 was
 * zeroed first, 80 MB per iteration at 10M points (bench/README.md
 * "k-means memory and f32 X^T z: session 16"). */
static bool covers_storage(const ty_store *s) {
  if (s->offset != 0) return false;
  int64_t next = 1;
  for (int d = s->ndim - 1; d >= 0; d--) {
    if (s->shape[d] == 1 || s->strides[d] == 0) continue;
    if (s->strides[d] != next) return false;
    next *= s->shape[d];
  }
  return (size_t)next * ty__dtype_size(s->dtype) == s->storage->nbytes;
}

/* ---- processors ------------------------------------------------------------------ */

/* The processor kinds a piece can run on on the host, each with its memory
 * (host memory for both). A launch runs on the OpenMP kind when its task has
 * an omp variant and OpenMP processors are configured, else on CPU threads.
 * The GPU kind (exec_gpu.c) has device memory and its copies: a launch the
 * placement gives to the GPUs runs there whole. */
typedef struct proc_kind {
  const char *name;
  int (*count)(const ty_runtime *rt);   /* processors of the kind */
  int (*threads)(const ty_runtime *rt); /* threads one piece runs on */
} proc_kind;

static int cpu_count(const ty_runtime *rt) { return rt->cfg.cpus; }
static int one_thread(const ty_runtime *rt) { (void)rt; return 1; }
static int omp_count(const ty_runtime *rt) { return rt->cfg.omps; }
static int omp_threads(const ty_runtime *rt) { return rt->cfg.ompthreads; }

enum { PROC_CPU = 0, PROC_OMP };
static const proc_kind PROCS[] = {
    [PROC_CPU] = {"cpu", cpu_count, one_thread},
    [PROC_OMP] = {"omp", omp_count, omp_threads},
};

/* ---- reductions ------------------------------------------------------------------ */

static void set_identity(void *dst, ty_dtype t, ty_redop op, int64_t n) {
  size_t es = ty__dtype_size(t);
  char *p = dst;
  for (int64_t i = 0; i < n; i++, p += es) {
    switch (op) {
    case TY_REDOP_SUM: ty__store_i64(p, t, 0); break;
    case TY_REDOP_PROD: ty__store_i64(p, t, 1); break;
    case TY_REDOP_MIN:
    case TY_REDOP_MAX: {
      int64_t lo;
      uint64_t hi;
      ty_dtype_limits(t, &lo, &hi);
      if (ty_dtype_is_float(t)) ty__store_f64(p, t, op == TY_REDOP_MIN ? INFINITY : -INFINITY);
      else ty__store_i64(p, t, op == TY_REDOP_MIN ? (int64_t)hi : lo); /* u64: the bits */
      break;
    }
    default: break;
    }
  }
}

/* *acc = *acc op *v, for one element */
static void combine_one(char *acc, const char *v, ty_dtype t, ty_redop op) {
  if (ty_dtype_is_float(t)) {
    double a = ty__load_f64(acc, t), b = ty__load_f64(v, t), r = a;
    switch (op) {
    case TY_REDOP_SUM: r = a + b; break;
    case TY_REDOP_PROD: r = a * b; break;
    case TY_REDOP_MIN: r = (isnan(a) || isnan(b)) ? NAN : (b < a ? b : a); break;
    case TY_REDOP_MAX: r = (isnan(a) || isnan(b)) ? NAN : (b > a ? b : a); break;
    default: break;
    }
    ty__store_f64(acc, t, r);
  } else {
    int64_t a = ty__load_i64(acc, t), b = ty__load_i64(v, t), r = a;
    switch (op) {
    case TY_REDOP_SUM: r = (int64_t)((uint64_t)a + (uint64_t)b); break;
    case TY_REDOP_PROD: r = (int64_t)((uint64_t)a * (uint64_t)b); break;
    case TY_REDOP_MIN: r = b < a ? b : a; break;
    case TY_REDOP_MAX: r = b > a ? b : a; break;
    default: break;
    }
    if (t == TY_U64 && (op == TY_REDOP_MIN || op == TY_REDOP_MAX)) /* the bits, unsigned */
      r = ((uint64_t)b < (uint64_t)a) == (op == TY_REDOP_MIN) ? b : a;
    ty__store_i64(acc, t, r);
  }
}

ty_status ty__private_init(const ty_arg *a, int ndim, const int64_t *lo, const int64_t *hi,
                              private_tile *pt) {
  int64_t n = 1;
  for (int k = ndim - 1; k >= 0; k--) {
    if (a->store->strides[k] == 0) {
      pt->strides[k] = 0;
    } else {
      pt->strides[k] = n;
      n *= hi[k] - lo[k];
    }
  }
  pt->count = n;
  size_t es = ty__dtype_size(a->store->dtype);
  pt->buf = ty__malloc((size_t)(n ? n : 1) * es);
  if (!pt->buf) return TY_ENOMEM;
  set_identity(pt->buf, a->store->dtype, a->redop, n);
  return TY_OK;
}

/* store[box] op= private, over the dims with non-zero store stride */
static void private_combine(const ty_arg *a, int ndim, const int64_t *lo, const int64_t *hi,
                            const private_tile *pt) {
  const ty_store *s = a->store;
  size_t es = ty__dtype_size(s->dtype);
  char *base = ty__store_base(s);
  int64_t idx[TY_MAX_RANK];
  for (int k = 0; k < ndim; k++) {
    idx[k] = lo[k];
    if (hi[k] <= lo[k]) return;
  }
  for (;;) {
    int64_t so = 0, po = 0;
    for (int k = 0; k < ndim; k++) {
      so += idx[k] * s->strides[k];
      po += (idx[k] - lo[k]) * pt->strides[k];
    }
    combine_one(base + so * (int64_t)es, (const char *)pt->buf + po * (int64_t)es, s->dtype, a->redop);
    /* advance over dims with a non-zero stride only (the others alias) */
    int k = ndim - 1;
    for (; k >= 0; k--) {
      if (s->strides[k] == 0) continue;
      if (++idx[k] < hi[k]) break;
      idx[k] = lo[k];
    }
    if (k < 0) break;
  }
}

/* ---- execution ---------------------------------------------------------------------- */

static void make_tile(const ty_arg *a, int ndim, const int64_t *lo, const int64_t *hi,
                      const private_tile *pt, ty_tile *t) {
  const ty_store *s = a->store;
  size_t es = ty__dtype_size(s->dtype);
  t->dtype = s->dtype;
  t->ndim = s->ndim;
  for (int k = 0; k < s->ndim; k++) t->gshape[k] = s->shape[k];
  if (a->proj == TY_PROJ_WHOLE) {
    t->data = ty__store_base(s);
    for (int k = 0; k < s->ndim; k++) {
      t->shape[k] = s->shape[k];
      t->strides[k] = s->strides[k];
      t->lo[k] = 0;
    }
    return;
  }
  int64_t off = 0;
  for (int k = 0; k < ndim; k++) {
    t->shape[k] = hi[k] - lo[k];
    t->lo[k] = lo[k];
    t->strides[k] = pt ? pt->strides[k] : s->strides[k];
    off += lo[k] * s->strides[k];
  }
  t->data = pt ? pt->buf : ty__store_base(s) + off * (int64_t)es;
}

void ty__cancel_outputs(ty_pending *l, ty_status cause, const char *why) {
  for (int i = 0; i < l->nargs; i++)
    if (writes(l->args[i].priv)) ty__cancel_storage(l->args[i].store->storage, cause, why);
}

/* The written arguments (bit i: argument i) a failed launch's failure
 * reached: every one, unless each failed piece said which (ty_ctx_fail_reached:
 * a fused run whose failing sub-operation others do not depend on). A
 * line-buffered in-place run commits its rows all or nothing: every one. */
static uint64_t reached_args(const prepared *pr) {
  uint64_t reached = 0;
  if (pr->l->lb_arg) return ~UINT64_C(0);
  for (int i = 0; i < pr->tiling.pieces; i++) {
    const piece_result *res = &pr->results[i];
    if (!res->failed) continue;
    if (!res->reach.partial) return ~UINT64_C(0);
    reached |= res->reach.args;
  }
  return reached;
}

/* A launch that did not run because an input is unavailable passes that
 * input's cause on to what it writes. */
static void cancel_skipped(ty_pending *l) {
  for (int i = 0; i < l->nargs; i++) {
    const ty_storage *in = l->args[i].store->storage;
    if (l->args[i].priv != TY_PRIV_OUT && in->cancelled) {
      char *why = in->cancel_why ? ty__strdup(in->cancel_why) : NULL; /* in may be an output too */
      ty__cancel_outputs(l, in->cancel_status, why);
      free(why);
      return;
    }
  }
}

/* A launch that ran: what it wrote whole is readable again (a failed or
 * refused earlier producer no longer matters); a partial write leaves the
 * rest unavailable. reached: the written arguments its failure reached;
 * rewritten: INOUT arguments of a fused run that were unavailable and that a
 * later member wrote whole (fused_without). */
static void uncancel_outputs(ty_pending *l, uint64_t reached, uint64_t rewritten) {
  for (int i = 0; i < l->nargs; i++) {
    const ty_arg *a = &l->args[i];
    ty_storage *stg = a->store->storage;
    const bool out = a->priv == TY_PRIV_OUT || (a->priv == TY_PRIV_INOUT && ((rewritten >> i) & 1u));
    if (!stg->cancelled || !out || a->proj != TY_PROJ_ALIGNED) continue;
    bool lost = false; /* its storage, through this or another argument, failed */
    for (int j = 0; j < l->nargs && reached; j++)
      lost |= ((reached >> j) & 1u) && writes(l->args[j].priv) && l->args[j].store->storage == stg;
    if (lost) continue;
    if ((size_t)a->store->size * ty__dtype_size(a->store->dtype) != stg->nbytes ||
        !ty_store_is_contiguous(a->store))
      continue;
    stg->cancelled = false;
    free(stg->cancel_why);
    stg->cancel_why = NULL;
  }
}

/* The launch's explain record, with what is known before it runs. */
static ty_record *new_record(ty_runtime *rt, const ty_pending *l) {
  ty_record *e = ty__explain_next(rt);
  e->seq = l->seq;
  e->task = l->task;
  e->ndim = l->ndim;
  for (int k = 0; k < l->ndim; k++) e->shape[k] = l->domain[k];
  e->pol = ty__pol_keep(l->pol, &ty__record_cold(rt, e)->own_pol);
  if (l->fused || l->fuse_end.kind) {
    e->fused = l->fused;
    ty__strlcpy(e->fused_ops, l->fused_ops, sizeof e->fused_ops);
    e->texts |= TY_REC_FUSED_OPS;
    e->fuse_end = l->fuse_end;
  }
  return e;
}

/* Before CPU pieces touch host memory: what a GPU wrote last comes back.
 * Reads first: a store both read and overwritten is read as it was. */
static ty_status host_copies(ty_runtime *rt, const ty_pending *l) {
  for (int n = 0; n < 2 * l->nargs; n++) {
    const ty_arg *a = &l->args[n % l->nargs];
    ty_storage *stg = a->store->storage;
    if (!stg->gpu || !rt->devices || (n < l->nargs) != (a->priv == TY_PRIV_IN)) continue;
    uint64_t lo, hi;
    bool dense;
    ty__store_range(a->store, &lo, &hi, &dense);
    int access = a->priv == TY_PRIV_IN ? TY__HOST_READ
                 : a->priv == TY_PRIV_OUT && dense && a->proj == TY_PROJ_ALIGNED ? TY__HOST_DISCARD
                                                                                 : TY__HOST_WRITE;
    ty_status st = rt->devices->host(rt, stg, lo, hi, access);
    if (st) return st;
  }
  return TY_OK;
}

/* A fused run some of whose inputs a failed launch left unavailable: when
 * some of its sub-operations do not depend on them and it runs on CPU
 * workers, it runs without the others (fused_cpu.c, "Failures"), so that
 * independent launches that fused with dependent ones keep their results
 * (on CPU workers: a GPU's generated kernel cannot skip a sub-operation);
 * pr->unavail_reached: the written arguments it leaves unavailable. False:
 * skip it whole, as any launch with an unavailable input. */
static bool fused_without(ty_runtime *rt, prepared *pr) {
  const ty_pending *l = pr->l;
  if (!rt->builtins || l->task != rt->builtins->fused || l->lb_arg || rt->dist.nranks > 1) return false;
  const ty__fhead *h = (const ty__fhead *)l->scalars;
  uint8_t scratch[1024];
  if (l->scalar_bytes < sizeof *h || h->magic != TY__FUSE_MAGIC || h->bytes > l->scalar_bytes ||
      (size_t)h->nsub + h->nslots > sizeof scratch)
    return false;
  int nrun;
  pr->unavail_reached = ty__fused_taint(h, pr->unavail, NULL, scratch, scratch + h->nsub, &nrun);
  return nrun > 0;
}

/* lane: the launch's index in its wave (its stream on GPUs); -1: no GPU */
static ty_status prepare(ty_runtime *rt, ty_pending *l, prepared *pr, int lane) {
  memset(pr, 0, offsetof(prepared, one));
  pr->l = l;
  pr->one.failed = 0;
  pr->one.reach = (struct ty_reach){false, 0, 0};
  pr->one.msg[0] = 0;
  pr->results = &pr->one;
  pr->tiling.pieces = 1;
  for (int i = 0; i < l->nargs; i++) {
    const ty_arg *a = &l->args[i];
    if (a->priv != TY_PRIV_OUT && a->store->storage->cancelled) pr->unavail |= UINT64_C(1) << i;
  }
  char place[192] = "";
  if (pr->unavail && !fused_without(rt, pr)) {
    pr->skip = true; /* poisoned input: the error surfaces when it is read */
    return TY_OK;
  }
  ty_record *e = NULL;
  if (!pr->unavail && lane >= 0 && rt->devices && rt->devices->place(rt, l, place, sizeof place)) {
    e = pr->explain = new_record(rt, l);
    bool fallback;
    ty_status st = rt->devices->run(rt, l, lane, e, &fallback, place, sizeof place);
    ty__strlcpy(ty__record_text(rt, e, TY_REC_PLACE), place, TY_REC_PLACE_LEN);
    if (!fallback) {
      pr->gpu = true;
      pr->tiling.pieces = 0; /* nothing left for CPU workers */
      return st;
    }
  } else if (!pr->unavail && lane < 0 && rt->devices && rt->devices->place(rt, l, place, sizeof place)) {
    /* a streamed chunk the GPUs gave back (ty__exec_box): why, from there */
    e = pr->explain = new_record(rt, l);
    ty__strlcpy(ty__record_text(rt, e, TY_REC_PLACE), rt->chunk_why, TY_REC_PLACE_LEN);
  } else if (place[0]) {
    e = pr->explain = new_record(rt, l);
    ty__strlcpy(ty__record_text(rt, e, TY_REC_PLACE), place, TY_REC_PLACE_LEN);
  } else if (pr->unavail && rt->devices) {
    e = pr->explain = new_record(rt, l);
    ty__strlcpy(ty__record_text(rt, e, TY_REC_PLACE),
                "ran on the CPU: it skips the operations that read inputs a failed launch left unavailable",
                TY_REC_PLACE_LEN);
  }
  ty__in_place(rt, l);
  for (int i = 0; i < l->nargs; i++) {
    const ty_arg *a = &l->args[i];
    /* an OUT view that does not cover its storage leaves the rest unwritten:
     * zero it, so never-written elements read as 0 */
    bool whole = (size_t)a->store->size * ty__dtype_size(a->store->dtype) == a->store->storage->nbytes ||
                 covers_storage(a->store) ||
                 (a->store->storage->covered_gen != 0 &&
                  a->store->storage->covered_gen == rt->window_gen);
    ty_status st = ty__storage_ensure(rt, a->store->storage, a->priv != TY_PRIV_OUT || !whole);
    if (st) return st;
  }
  ty_status hst = host_copies(rt, l);
  if (hst) return hst;
  pr->omp = l->task->omp && rt->cfg.omps > 0;
  const proc_kind *kind = &PROCS[pr->omp ? PROC_OMP : PROC_CPU];
  pr->threads = kind->threads(rt);
  int procs = kind->count(rt);
  if (rt->dist.nranks > 1) procs = ty__dist_procs(rt, l, procs);

  if (!e) e = pr->explain = new_record(rt, l);
  e->omp = pr->omp;
  ty__partition(l, procs, &pr->tiling, e);
  /* a small band of a row-split storage: on the processors holding its rows */
  if (lane >= 0 && rt->dist.nranks <= 1 && !pr->omp && !l->lb_arg)
    e->banded = ty__band_partition(l, procs, &pr->tiling);
  if (rt->dist.nranks > 1) ty__dist_band_tiling(rt, l, &pr->tiling); /* rank edges on bands */
  for (int k = 0; k < l->ndim; k++) pr->empty |= l->domain[k] == 0;
  e->pieces = pr->tiling.pieces;
  for (int k = 0; k < l->ndim; k++) e->tiles[k] = pr->tiling.tiles[k];

  int pieces = pr->tiling.pieces;
  pr->last = pieces; /* every piece, unless ranks split them (dist.c) */
  bool has_reduce = false;
  for (int i = 0; i < l->nargs; i++) has_reduce |= l->args[i].priv == TY_PRIV_REDUCE;
  if (has_reduce) {
    const size_t nprivates = (size_t)pieces * (size_t)l->nargs;
    if (nprivates <= TY__PRIV_LOCAL) {
      memset(pr->priv_local, 0, nprivates * sizeof *pr->priv_local);
      pr->privates = pr->priv_local;
    } else {
      pr->privates = ty__calloc(nprivates, sizeof *pr->privates);
    }
    if (!pr->privates)
      return ty__fail(rt, TY_ENOMEM, "%s: out of memory for reduction buffers", l->task->name);
  }
  if (pieces > 1) {
    /* each slot is 2 KiB of message: clear what is read before a failure
     * writes it (failed, reach), not the whole message (CG 256^2: ~25 KiB
     * an iteration) */
    pr->results = ty__malloc((size_t)pieces * sizeof *pr->results);
    for (int i = 0; pr->results && i < pieces; i++) {
      pr->results[i].failed = 0;
      pr->results[i].reach = (struct ty_reach){0};
      pr->results[i].msg[0] = '\0';
    }
    if (!pr->results) {
      pr->results = &pr->one;
      return ty__fail(rt, TY_ENOMEM, "%s: out of memory", l->task->name);
    }
  }
  if (l->lb_arg) return ty__linebuf_prepare(rt, pr);
  return TY_OK;
}

void ty__privates_free(prepared *pr) {
  if (pr->privates != pr->priv_local) free(pr->privates);
  pr->privates = NULL;
}

static void run_piece(ty_runtime *rt, prepared *pr, int piece, int worker) {
  const ty_pending *l = pr->l;
  if (pr->empty) return; /* a task body never sees an empty domain */
  piece_result *res = &pr->results[piece];
  int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
  ty_tile tiles[TY_MAX_ARGS];
  ty__piece_box(l->ndim, l->domain, &pr->tiling, piece, lo, hi);
  for (int k = 0; pr->boxed && k < l->ndim; k++) {
    lo[k] += pr->origin[k];
    hi[k] += pr->origin[k];
  }
  for (int i = 0; i < l->nargs; i++) {
    private_tile *pt = NULL;
    if (l->args[i].priv == TY_PRIV_REDUCE) {
      pt = &pr->privates[(size_t)piece * (size_t)l->nargs + (size_t)i];
      if (ty__private_init(&l->args[i], l->ndim, lo, hi, pt) != TY_OK) {
        res->failed = TY_ENOMEM;
        snprintf(res->msg, sizeof res->msg, "out of memory for a reduction buffer");
        return;
      }
    }
    make_tile(&l->args[i], l->ndim, lo, hi, pt, &tiles[i]);
  }
  ty_task_ctx ctx = {
      .rt = rt,
      .task = l->task,
      .task_name = l->task->name,
      .task_data = l->task->data,
      .piece = piece,
      .pieces = pr->tiling.pieces,
      .threads = pr->threads,
      .worker = worker,
      .ndim = l->ndim,
      .nargs = l->nargs,
      .args = tiles,
      .scalars = l->scalars,
      .scalar_bytes = l->scalar_bytes,
      .errbuf = res->msg,
      .errcap = sizeof res->msg,
      .device = -1,
      .reach = &res->reach,
  };
  for (int k = 0; k < l->ndim; k++) {
    ctx.lo[k] = lo[k];
    ctx.hi[k] = hi[k];
  }
  res->msg[0] = 0;
  res->reach.unavailable = pr->unavail;
  int rc = pr->omp      ? l->task->omp(&ctx)
           : l->lb_arg ? ty__linebuf_piece(pr, &ctx, l->task->cpu)
                       : l->task->cpu(&ctx);
  if (rc != 0) {
    res->failed = rc < 0 ? rc : TY_ETASK;
    if (!res->msg[0]) snprintf(res->msg, sizeof res->msg, "%s", ty_status_name(res->failed));
  }
}

/* The runtime's worker team, started on the first launch with several
 * pieces (NULL when out of memory: pieces then run one after another). */
static ty_team *team(ty_runtime *rt) {
  if (!rt->team) {
    int cap = rt->cfg.cpus > rt->cfg.omps ? rt->cfg.cpus : rt->cfg.omps;
    /* OpenBLAS (its OpenMP build) takes its thread count from the calling
     * thread: one per piece, as on the flushing thread (builtins.c) */
    rt->team = ty__team_new(cap, -1, ty__blas_init);
  }
  return rt->team;
}

/* The worker running this code: the team's number inside a team job, else
 * 0 (the thread that flushes). */
static int this_worker(void) {
  int w = ty__team_worker();
  return w < 0 ? 0 : w;
}

typedef struct launch_job {
  ty_runtime *rt;
  prepared *pr;
  int first; /* this rank's first piece (dist.c) */
} launch_job;

static void run_one(void *arg, int64_t item, int worker) {
  launch_job *j = arg;
  run_piece(j->rt, j->pr, j->first + (int)item, worker);
}

/* Cede a core to the compiler: while a background compile of this process
 * runs (codegen_cc.h, ty__cc_running) and a short wave would keep every
 * core this process may use busy, it runs on one worker fewer, so the
 * compiler gets a core instead of preempting a worker mid-wave, which the
 * other workers then wait for at the wave's end. Cold CG 256^2 on 2 cores
 * (idle, session 21): 1.43x the warm wall time for 1.07x its CPU, 1746
 * voluntary and 771 involuntary context switches a process against 426 and
 * 22 warm (its waves are under CEDE_BYTES: 2,000-2,700 of its 16,198 cede
 * while it compiles). Short: at most CEDE_BYTES (explain's bytes, the
 * wave's launches together), under 1 ms of one core, a small part of a
 * compile (50-100 ms), so a wave does not keep the core idle long after
 * the compile ended. A long wave keeps every worker: a Black-Scholes 10M wave ceded at its start ran on one worker to
 * its end although its kernel arrived inside it (cold 1.17-1.50 s against
 * 0.95-1.04 s, bench/README.md, "Cold start, a core ceded: session 22").
 * The pieces and their order stay the same, only fewer workers run them:
 * the same bits. TYCHO_CEDE=0 turns it off (read once a process). */
#define CEDE_BYTES ((int64_t)8 << 20)

static bool cede_on(void) {
  static int on = -1; /* racing threads read the same environment */
  int v = __atomic_load_n(&on, __ATOMIC_RELAXED);
  if (v < 0) {
    v = !ty__env_off("TYCHO_CEDE");
    __atomic_store_n(&on, v, __ATOMIC_RELAXED);
  }
  return v;
}

/* The workers for a wave of `bytes` (-1: unknown) that would run on
 * `threads`: one fewer when it cedes (counted in stats.waves_ceded). */
static int cede(ty_runtime *rt, int threads, int64_t bytes) {
  if (threads < 2 || bytes < 0 || bytes > CEDE_BYTES || ty__cc_running() == 0 ||
      threads < ty__usable_cpus() || !cede_on())
    return threads;
  rt->stats.waves_ceded++;
  return threads - 1;
}

/* A launch's bytes as the partitioner counted them; -1 when not known. */
static int64_t launch_bytes(const prepared *pr) { return pr->explain ? pr->explain->bytes : -1; }

/* Run every piece of one prepared launch, in parallel when it has several. */
static void run_pieces(ty_runtime *rt, prepared *pr) {
  int first = pr->first, pieces = pr->last - pr->first; /* this rank's */
  if (pieces <= 0) return; /* it ran on GPUs, or on other ranks */
  if (pieces == 1) {
    run_piece(rt, pr, first, this_worker());
    return;
  }
  int procs = pr->omp ? rt->cfg.omps
                      : cede(rt, pieces < rt->cfg.cpus ? pieces : rt->cfg.cpus, launch_bytes(pr));
  launch_job job = {rt, pr, first};
  ty__team_for(team(rt), procs, pieces, false, run_one, &job);
}

/* run_pieces, its time counted in stats.tasks_ns when timing is on */
static void timed_pieces(ty_runtime *rt, prepared *pr) {
  const uint64_t t0 = rt->timing ? ty__now_ns() : 0;
  run_pieces(rt, pr);
  if (rt->timing) rt->stats.tasks_ns += ty__now_ns() - t0;
}

static ty_status finish(ty_runtime *rt, prepared *pr, ty_status st) {
  ty_pending *l = pr->l;
  int pieces = pr->tiling.pieces;
  /* the written arguments the launch's failure reached: all of them when it
   * did not start; when pieces failed, what they said (reached_args) */
  uint64_t reached = st ? ~UINT64_C(0) : pr->unavail_reached;
  if (!pr->skip && !pr->gpu && st == TY_OK) {
    rt->stats.pieces += (uint64_t)pieces;
    for (int i = 0; i < pieces; i++)
      if (pr->results[i].failed) {
        st = ty__fail(rt, pr->results[i].failed == TY_ENOMEM ? TY_ENOMEM : TY_ETASK,
                      "task '%s' failed in piece %d of %d: %s%s%s%s", l->task->name, i + 1, pieces,
                      pr->results[i].msg, l->origin[0] ? " (launched at " : "", l->origin,
                      l->origin[0] ? ")" : "");
        reached = reached_args(pr) | pr->unavail_reached;
        break;
      }
  }
  if (pr->lb_held || pr->lb_swap) ty__linebuf_finish(pr, st == TY_OK && !pr->skip && !pr->gpu);
  if (pr->privates) {
    for (int piece = 0; piece < pieces; piece++) {
      int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
      ty__piece_box(l->ndim, l->domain, &pr->tiling, piece, lo, hi);
      for (int k = 0; pr->boxed && k < l->ndim; k++) {
        lo[k] += pr->origin[k];
        hi[k] += pr->origin[k];
      }
      for (int i = 0; i < l->nargs; i++) {
        private_tile *pt = &pr->privates[(size_t)piece * (size_t)l->nargs + (size_t)i];
        if (pt->buf && !((reached >> i) & 1u)) private_combine(&l->args[i], l->ndim, lo, hi, pt);
        free(pt->buf);
      }
    }
    ty__privates_free(pr);
  }
  if (pr->results != &pr->one) free(pr->results);
  if (pr->skip) {
    cancel_skipped(l);
    return st;
  }
  if (pr->unavail) { /* fused_without: what read unavailable inputs, with their cause */
    const ty_storage *in = NULL;
    for (int i = 0; i < l->nargs && !in; i++)
      if ((pr->unavail >> i) & 1u) in = l->args[i].store->storage;
    char *why = in->cancel_why ? ty__strdup(in->cancel_why) : NULL; /* in may be an output too */
    const ty_status cause = in->cancel_status;
    for (int i = 0; i < l->nargs; i++)
      if (writes(l->args[i].priv) && ((pr->unavail_reached >> i) & 1u))
        ty__cancel_storage(l->args[i].store->storage, cause, why);
    free(why);
  }
  if (st) {
    char why[TY_ERRLEN + 64];
    snprintf(why, sizeof why, "launch #%llu failed: %s", (unsigned long long)l->seq,
             rt->errmsg);
    for (int i = 0; i < l->nargs; i++)
      if (writes(l->args[i].priv) && ((reached >> i) & 1u))
        ty__cancel_storage(l->args[i].store->storage, st, why);
    if (reached == ~UINT64_C(0)) return st;
  }
  /* what the launch wrote, all of it or what its failure did not reach */
  const uint64_t rewritten = pr->unavail & ~reached;
  if (!pr->boxed && pr->gpu) {
    uncancel_outputs(l, reached, rewritten);
  } else if (!pr->boxed) {
    uncancel_outputs(l, reached, rewritten);
    /* the stores this launch wrote remember its tiling (their key partition) */
    for (int i = 0; i < l->nargs; i++) {
      ty_store *s = l->args[i].store;
      if (writes(l->args[i].priv) && l->args[i].proj == TY_PROJ_ALIGNED && !((reached >> i) & 1u)) {
        s->has_key = true;
        s->key = pr->tiling;
      }
    }
  }
  return st;
}

static ty_status exec_launch(ty_runtime *rt, ty_pending *l) {
  prepared pr;
  if (rt->dist.nranks > 1) ty__dist_launch_whole(rt, l); /* runs whole on every rank */
  ty_status st = prepare(rt, l, &pr, 0);
  if (st == TY_OK && !pr.skip) timed_pieces(rt, &pr);
  return finish(rt, &pr, st);
}

ty_status ty__exec_box(ty_runtime *rt, ty_pending *l, int dim, int64_t lo, int64_t hi, bool record,
                      const char *note) {
  const bool boxed = dim >= 0 && dim < l->ndim;
  const int64_t whole = boxed ? l->domain[dim] : 0;
  uint64_t before = rt->nexplained;
  ty_status st;
  char place[192] = "";
  rt->chunk_why[0] = 0;
  if (rt->dist.nranks > 1) ty__dist_launch_whole(rt, l); /* runs whole on every rank */
  if (rt->devices && rt->devices->place(rt, l, place, sizeof place)) {
    /* on a GPU: the chunk staged through device memory (exec_gpu.c) */
    ty_record *e = new_record(rt, l);
    bool fallback = false;
    st = rt->devices->run_chunk(rt, l, boxed ? dim : -1, lo, hi, e, &fallback, place, sizeof place);
    if (!fallback) {
      char *why = ty__record_text(rt, e, TY_REC_PLACE);
      if (snprintf(why, TY_REC_PLACE_LEN, "%s; a streamed chunk, staged through GPU memory", place) >=
          TY_REC_PLACE_LEN)
        why[TY_REC_PLACE_LEN - 1] = 0; /* cut (a long reason) */
      if (!record) {
        rt->nexplained = before;
      } else {
        snprintf(ty__record_text(rt, e, TY_REC_STREAM), TY_REC_STREAM_LEN, "%s", note ? note : "");
      }
      return st;
    }
    rt->nexplained = before; /* the CPU's record below says why */
    ty__strlcpy(rt->chunk_why, place, sizeof rt->chunk_why);
  }
  if (boxed) l->domain[dim] = hi - lo; /* partition the box, run it in global coordinates */
  prepared pr;
  st = prepare(rt, l, &pr, -1); /* streamed pieces are host slices */
  pr.boxed = boxed;
  if (boxed) pr.origin[dim] = lo;
  if (st == TY_OK && !pr.skip) timed_pieces(rt, &pr);
  st = finish(rt, &pr, st);
  if (boxed) l->domain[dim] = whole;
  if (rt->nexplained > before) {
    if (!record) {
      rt->nexplained = before; /* one record per launch, from its first box */
    } else {
      ty_record *e = &rt->explain[(rt->nexplained - 1) % TY_EXPLAIN_KEEP];
      for (int k = 0; k < l->ndim; k++) e->shape[k] = l->domain[k];
      snprintf(ty__record_text(rt, e, TY_REC_STREAM), TY_REC_STREAM_LEN, "%s", note ? note : "");
    }
  }
  return st;
}


typedef struct slot {
  prepared *pr;
  int piece;
} slot;

/* A wave's pieces as one team job: slot k is item k. */
typedef struct wave_job {
  ty_runtime *rt;
  slot *slots;
  ty_trace_piece *tp; /* per-slot times, when tracing */
} wave_job;

static void run_slot(void *arg, int64_t item, int worker) {
  wave_job *j = arg;
  slot *sl = &j->slots[item];
  if (j->tp) j->tp[item].t0 = ty__trace_time(j->rt);
  run_piece(j->rt, sl->pr, sl->piece, worker);
  if (j->tp) j->tp[item].t1 = ty__trace_time(j->rt), j->tp[item].worker = worker;
  if (sl->pr->explain && sl->pr->tiling.pieces == 1) sl->pr->explain->processor = worker;
}

/* ---- homes: a wave of more pieces than workers ------------------------------------ */

/* The workers whose shares of the storages it writes piece `piece` of pr
 * touches, *lo..*hi: a storage split evenly by position among `workers`,
 * each written aligned argument at the middle of the elements the piece's
 * box spans (its read ones when it writes none: a reduction). False when it
 * has none. */
static bool piece_homes(const prepared *pr, int piece, int workers, int *lo_home, int *hi_home) {
  const ty_pending *l = pr->l;
  int64_t lo[TY_MAX_RANK], hi[TY_MAX_RANK];
  ty__piece_box(l->ndim, l->domain, &pr->tiling, piece, lo, hi);
  for (int k = 0; k < l->ndim; k++)
    if (hi[k] <= lo[k]) return false;
  *lo_home = workers;
  *hi_home = -1;
  for (int pass = 0; pass < 2 && *hi_home < 0; pass++)
    for (int i = 0; i < l->nargs; i++) {
      const ty_arg *a = &l->args[i];
      const ty_store *s = a->store;
      if (a->proj != TY_PROJ_ALIGNED || a->priv == TY_PRIV_REDUCE || (pass == 0) != writes(a->priv) ||
          s->ndim != l->ndim)
        continue;
      const int64_t elems = (int64_t)(s->storage->nbytes / ty__dtype_size(s->dtype));
      if (elems < 1) continue;
      int64_t first = s->offset, last = s->offset;
      for (int k = 0; k < l->ndim; k++) {
        const int64_t a0 = lo[k] * s->strides[k], a1 = (hi[k] - 1) * s->strides[k];
        first += a0 < a1 ? a0 : a1;
        last += a0 < a1 ? a1 : a0;
      }
      int h = (int)((double)(first + last) / 2 / (double)elems * workers);
      h = h < 0 ? 0 : h >= workers ? workers - 1 : h;
      *lo_home = h < *lo_home ? h : *lo_home;
      *hi_home = h > *hi_home ? h : *hi_home;
    }
  return *hi_home >= 0;
}

/* A wave with more pieces than workers on one storage's regions (CG's
 * Laplacian at 256^2: the inside's 2 pieces, 2 edge columns cut at the
 * grid's row split, the top and bottom rows, the corners) runs each piece
 * on its home: the worker whose share of the storage it touches (the
 * storage split evenly by position, as the processors' launches over it
 * split it by rows and affine waves keep piece k on worker k). Claimed
 * dynamically, a piece moved its rows to the other core's L2 and the next
 * wave fetched them back: one wave for these regions was 8-15% slower than
 * one wave a region (bench/README.md "cg 65K in one wave: session 18"). A
 * piece touching several workers' shares (one launch for the top and the
 * bottom rows, the 4 corners) goes, after the others, to the least loaded
 * of them; a piece counts its bytes plus 4 KiB (a fused run of 20
 * sub-operations on one element takes ~1.3 us), and a worker other than the
 * caller starts LATE_BYTES behind: it claims its item 0.2-0.3 us after the
 * caller starts its own, and its small pieces ran slower (cg 256^2,
 * traced: an edge column 1.29 us against 0.91). With one of CG's two each,
 * the worker's share ended ~2 us after the caller's; with both on the
 * caller, the caller's ends ~0.9 us after the worker's. The slots are ordered by
 * home, starts[k]..starts[k+1] worker k's; a worker done with its share
 * claims what is left of the others' from their ends (run_home), which
 * balances a launch of more pieces than workers (an ordered tiling,
 * overdecompose: CG 2048^2's inside is 64 pieces of 32 MiB grids). Each
 * worker then sweeps one contiguous share instead of every other piece:
 * Jacobi's product of a 2048^2 f64 matrix (32 MiB, 16 pieces; 16 MiB of L3
 * on the Zen 2) took 0.84x the time of its pieces claimed in launch order
 * (paired, 9-21 rounds); other rows 0.96-1.02x (bench/README.md "Issue 19
 * rows: session 32"). False
 * (dynamic claiming) when a piece has no place, or the homes are uneven:
 * some worker's share passes 5/4 of the mean (a wave of whole small stores
 * has every home in the middle). */
static bool home_slots(slot *slots, int total, int workers, int *starts) {
  enum { MAX_HOMED = 64, LATE_BYTES = 8192 };
  if (workers < 2 || total > MAX_HOMED || workers > MAX_HOMED) return false;
  slot sorted[MAX_HOMED];
  int home[MAX_HOMED], lo[MAX_HOMED], hi[MAX_HOMED];
  int64_t load[MAX_HOMED] = {0}, weight[MAX_HOMED], sum = 0, most = 0;
  for (int k = 0; k < total; k++) {
    const prepared *pr = slots[k].pr;
    if (!pr->explain || pr->boxed ||
        !piece_homes(pr, slots[k].piece, workers, &lo[k], &hi[k]))
      return false;
    weight[k] = pr->explain->bytes / pr->tiling.pieces + 4096;
    home[k] = lo[k];
    if (lo[k] == hi[k]) load[home[k]] += weight[k];
    sum += weight[k];
  }
  for (int k = 1; k < workers; k++) load[k] += LATE_BYTES;
  for (int k = 0; k < total; k++)
    if (lo[k] != hi[k]) { /* spans several shares: the least loaded of them */
      for (int h = lo[k] + 1; h <= hi[k]; h++)
        if (load[h] < load[home[k]]) home[k] = h;
      load[home[k]] += weight[k];
    }
  for (int k = 1; k < workers; k++) load[k] -= LATE_BYTES;
  for (int k = 0; k < workers; k++) most = load[k] > most ? load[k] : most;
  if (most * workers * 4 > sum * 5) return false;
  for (int k = 0; k <= workers; k++) starts[k] = 0;
  for (int k = 0; k < total; k++) starts[home[k] + 1]++;
  for (int k = 0; k < workers; k++) starts[k + 1] += starts[k];
  int at[MAX_HOMED + 1];
  memcpy(at, starts, sizeof(int) * (size_t)(workers + 1));
  for (int k = 0; k < total; k++) sorted[at[home[k]]++] = slots[k];
  memcpy(slots, sorted, sizeof(slot) * (size_t)total);
  return true;
}

/* Whether a homed wave sweeps its shares last piece first: the opposite of
 * the last homed wave over the same largest storage (the argument with the
 * most bytes), else first to last. A product that reads the same matrix
 * every iteration (Jacobi's R x) then starts where the previous one ended,
 * on the rows still in the last-level cache: swept in one direction each
 * time, a matrix larger than that cache misses on every line (a ring
 * evicts each line before its next use). Jacobi 2048^2 (32 MiB of f64, 16
 * pieces; 16 MiB of L3 on the Zen 2): bench/README.md "Jacobi's sweeps:
 * session 36". A piece swept backwards runs with ty__piece_backwards set
 * (kernels.h), so that a product takes its own rows last first too. The
 * pieces and what each computes are the same, only their order changes:
 * the same bits. Only over a storage of SWEEP_MIN_BYTES or more, past a
 * core's L2: CG 256^2's waves (vectors of 512 KiB, in the workers' L2s)
 * took 1.02x their time when every other one was swept backwards, the
 * order of their small edge pieces changed (paired, 9 rounds). */
#define SWEEP_MIN_BYTES ((int64_t)4 << 20)
static bool sweep_backwards(ty_runtime *rt, const prepared *prs, const ty_status *sts,
                            int count) {
  enum { SWEEPS = sizeof rt->sweeps / sizeof rt->sweeps[0] };
  int64_t bytes = 0;
  for (int m = 0; m < count; m++)
    if (sts[m] == TY_OK && !prs[m].skip) bytes += launch_bytes(&prs[m]);
  if (bytes < SWEEP_MIN_BYTES) return false; /* the common case: no storage is that large */
  const void *key = NULL;
  int64_t most = 0;
  for (int m = 0; m < count; m++)
    for (int i = 0; sts[m] == TY_OK && !prs[m].skip && i < prs[m].l->nargs; i++) {
      const ty_storage *s = prs[m].l->args[i].store->storage;
      if ((int64_t)s->nbytes > most) most = (int64_t)s->nbytes, key = s;
    }
  if (most < SWEEP_MIN_BYTES) return false;
  for (unsigned i = 0; i < SWEEPS; i++)
    if (rt->sweeps[i].key == key) {
      rt->sweeps[i].backwards = !rt->sweeps[i].backwards;
      rt->stats.waves_backwards += rt->sweeps[i].backwards;
      return rt->sweeps[i].backwards;
    }
  rt->sweeps[rt->sweep_next % SWEEPS].key = key;
  rt->sweeps[rt->sweep_next++ % SWEEPS].backwards = false;
  return false;
}

_Thread_local bool ty__piece_backwards;

typedef struct home_job {
  wave_job *wave;
  int workers;
  bool backwards; /* each share last piece first, the others' taken from the front */
  /* worker k's share still to claim: slots [low 32 bits, high 32 bits) (atomic) */
  uint64_t left[64];
} home_job;

/* The first slot left in share k (its owner's, in order) or the last (a
 * worker done with its own: the owner goes on from the front); -1: none. */
static int claim(home_job *h, int k, bool first) {
  uint64_t v = __atomic_load_n(&h->left[k], __ATOMIC_RELAXED);
  for (;;) {
    const uint32_t lo = (uint32_t)v, hi = (uint32_t)(v >> 32);
    if (lo >= hi) return -1;
    const uint64_t nv = first ? v + 1 : v - (UINT64_C(1) << 32);
    if (__atomic_compare_exchange_n(&h->left[k], &v, nv, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return first ? (int)lo : (int)hi - 1;
  }
}

/* Item k runs worker k's share first to last, then the others' last first
 * (a worker the OS keeps waiting holds up only the piece it runs); swept
 * backwards, its share last to first and the others' first first. */
static void run_home(void *arg, int64_t item, int worker) {
  home_job *h = arg;
  for (int d = 0; d < h->workers; d++) {
    const int k = (int)((item + d) % h->workers);
    int i;
    while ((i = claim(h, k, (d == 0) != h->backwards)) >= 0) {
      ty__piece_backwards = h->backwards;
      run_slot(h->wave, i, worker);
      ty__piece_backwards = false;
    }
  }
}

static void note_error(ty_runtime *rt, ty_status st, ty_status *first, char *msg, size_t len) {
  if (st && *first == TY_OK) {
    *first = st;
    snprintf(msg, len, "%s", rt->errmsg);
  }
}

/* prepared.h: its pieces run one after another on the flushing thread
 * (waking a worker for a few microseconds of work costs more than the
 * work: cg at 64^2 has waves of two 32 KiB launches). Each piece computes
 * what it would on any worker, so the bits are the same; explain's
 * processor is the flushing thread's for them. */
bool ty__tiny_wave(const prepared *prs, const ty_status *sts, int count) {
  int64_t bytes = 0, chunk = INT64_MAX;
  for (int m = 0; m < count; m++) {
    const prepared *pr = &prs[m];
    if (sts[m] != TY_OK || pr->skip || pr->gpu || pr->last - pr->first == 0) continue;
    if (pr->omp || pr->tiling.pieces != 1 || !pr->explain ||
        !(pr->l->task->flags & TY__TASK_BYTES_BOUND))
      return false;
    bytes += pr->explain->bytes;
    if (pr->l->pol->p.min_chunk < chunk) chunk = pr->l->pol->p.min_chunk;
  }
  return bytes <= chunk;
}

void ty__exec_wave(ty_runtime *rt, ty_pending **w, const int *members, int count, int wave,
                     int nwaves, ty_status *first, char *firstmsg, size_t msglen) {
  /* most waves are small: their bookkeeping lives on the stack */
  prepared prs_local[8];
  ty_status sts_local[8];
  bool local = count <= 8;
  prepared *prs = local ? prs_local : ty__calloc((size_t)count, sizeof *prs);
  ty_status *sts = local ? sts_local : ty__calloc((size_t)count, sizeof *sts);
  if (!prs || !sts) { /* degrade to one launch at a time */
    free(prs);
    free(sts);
    if (rt->dist.nranks > 1) ty__dist_wave_refused(rt, w, members, count); /* the others vote */
    for (int m = 0; m < count; m++) note_error(rt, exec_launch(rt, w[members[m]]), first, firstmsg, msglen);
    return;
  }
  int total = 0;
  bool any_omp = false;
  /* on GPUs, what earlier waves queued on any stream comes before this wave */
  if (rt->gstores && rt->devices) note_error(rt, rt->devices->join(rt), first, firstmsg, msglen);
  if (rt->dist.nranks > 1) ty__dist_wave_gpu(rt, w, members, count);
  for (int m = 0; m < count; m++) {
    sts[m] = prepare(rt, w[members[m]], &prs[m], m);
  }
  if (count > 1) ty__linebuf_wave(prs, count);
  ty__halos *halos = NULL; /* several ranks: halos in flight while the wave runs */
  if (rt->dist.nranks > 1) {
    ty__dist_wave_begin(rt, prs, sts, count);
    halos = ty__dist_wave_data(rt, prs, sts, count);
  }
  for (int m = 0; m < count; m++) {
    if (sts[m] == TY_OK && !prs[m].skip) {
      total += prs[m].last - prs[m].first;
      any_omp |= prs[m].omp;
    }
  }
  bool tracing = ty__tracing(rt);
  double t0 = tracing ? ty__trace_time(rt) : 0;
  const uint64_t tasks0 = rt->timing ? ty__now_ns() : 0;
  /* a small wave's slots live on the stack too (cg at 64^2: waves of two) */
  slot slots_local[16];
  slot *slots = total > 16 ? ty__malloc((size_t)total * sizeof *slots)
                : total > 1 ? slots_local : NULL;
  ty_trace_piece *tp = tracing && total ? ty__calloc((size_t)total, sizeof *tp) : NULL;
  if (halos && (total <= 1 || !slots || any_omp)) { /* no pieces to run meanwhile */
    ty__dist_halos_wait(rt, halos);
    halos = NULL;
  }
  if (total == 1 && tp) { /* one point task: run it here, timed */
    for (int m = 0; m < count; m++)
      if (sts[m] == TY_OK && !prs[m].skip && !prs[m].gpu && prs[m].last > prs[m].first) {
        int worker = this_worker();
        tp[0].t0 = ty__trace_time(rt);
        run_piece(rt, &prs[m], prs[m].first, worker);
        tp[0].t1 = ty__trace_time(rt);
        tp[0] = (ty_trace_piece){tp[0].t0, tp[0].t1, worker, prs[m].first,
                                 prs[m].tiling.pieces, wave, prs[m].l->fused, prs[m].l->seq,
                                 prs[m].l->task};
      }
  } else if (total == 1 || (total > 1 && (!slots || any_omp))) {
    for (int m = 0; m < count; m++)
      if (sts[m] == TY_OK && !prs[m].skip) run_pieces(rt, &prs[m]);
    free(tp);
    tp = NULL;
  } else if (total > 1) {
    /* with halos in flight, the pieces that read none first (early), the
     * others after the wait (dist_overlap.c); without, one round */
    int t = 0, early = total;
    for (int later = 0; later < (halos ? 2 : 1); later++) {
      for (int m = 0; m < count; m++)
        if (sts[m] == TY_OK && !prs[m].skip)
          for (int p = prs[m].first; p < prs[m].last; p++)
            if (ty__dist_piece_waits(rt, halos, &prs[m], p) == (later == 1))
              slots[t++] = (slot){&prs[m], p};
      if (!later) early = t;
    }
    int threads = total < rt->cfg.cpus ? total : rt->cfg.cpus;
    /* task mode's point tasks, as many as threads: slot k runs on worker k
     * (its round-robin, which explain reports); otherwise whoever is free
     * takes the next slot, so a worker the OS keeps waiting does not hold
     * the wave up */
    bool points = true;
    for (int k = 0; k < total; k++)
      points &= slots[k].pr->tiling.pieces == 1 && slots[k].pr->l->pol->p.mode == TY_MODE_TASK;
    const bool fixed = points && total <= threads;
    if (!fixed && ty__tiny_wave(prs, sts, count)) threads = 1; /* no worker is woken */
    else if (!fixed) {
      int64_t bytes = 0;
      for (int m = 0; m < count && bytes >= 0; m++)
        if (sts[m] == TY_OK && !prs[m].skip && !prs[m].gpu && prs[m].last > prs[m].first)
          bytes = launch_bytes(&prs[m]) < 0 ? -1 : bytes + launch_bytes(&prs[m]);
      threads = cede(rt, threads, bytes);
    }
    if (halos && (fixed || early == 0)) { /* none to run meanwhile, or slots fixed to workers */
      ty__dist_halos_wait(rt, halos);
      halos = NULL;
      early = total;
    }
    wave_job job = {rt, slots, tp};
    int n = early < threads ? early : threads;
    int starts[65];
    if (!fixed && !halos && total > threads && home_slots(slots, total, threads, starts)) {
      /* an affine job: item k, worker k's pieces */
      home_job hj = {&job, threads, sweep_backwards(rt, prs, sts, count), {0}};
      for (int k = 0; k < threads; k++) hj.left[k] = (uint64_t)starts[k] | (uint64_t)starts[k + 1] << 32;
      ty__team_for(team(rt), threads, threads, false, run_home, &hj);
    } else {
      ty__team_for(n > 1 ? team(rt) : NULL, n, early, fixed, run_slot, &job);
    }
    if (halos) {
      rt->stats.dist_overlap_pieces += (uint64_t)early;
      ty__dist_halos_wait(rt, halos);
      job = (wave_job){rt, slots + early, tp ? tp + early : NULL};
      n = total - early < threads ? total - early : threads;
      ty__team_for(n > 1 ? team(rt) : NULL, n, total - early, false, run_slot, &job);
    }
    if (tp)
      for (int k = 0; k < total; k++) {
        tp[k].piece = slots[k].piece;
        tp[k].pieces = slots[k].pr->tiling.pieces;
        tp[k].wave = wave;
        tp[k].fused = slots[k].pr->l->fused;
        tp[k].seq = slots[k].pr->l->seq;
        tp[k].task = slots[k].pr->l->task;
      }
  }
  if (rt->timing) rt->stats.tasks_ns += ty__now_ns() - tasks0;
  if (tracing) {
    if (tp) ty__trace_pieces(rt, tp, total);
    char name[32];
    snprintf(name, sizeof name, "wave %d", wave);
    ty__trace_span(rt, name, t0, ty__trace_time(rt), wave);
  }
  free(tp);
  if (slots != slots_local) free(slots);
  if (rt->dist.nranks > 1) ty__dist_wave_end(rt, prs, sts, count);
  for (int m = 0; m < count; m++) {
    if (prs[m].explain) {
      prs[m].explain->wave = wave;
      prs[m].explain->waves = nwaves;
    }
    note_error(rt, finish(rt, &prs[m], sts[m]), first, firstmsg, msglen);
  }
  if (!local) {
    free(prs);
    free(sts);
  }
}

