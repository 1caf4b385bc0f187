/*
 * runtime.c — the runtime object: configuration (defaults < environment <
 * explicit config), the last error message, statistics, and its lifetime.
 *
 * Lifetime: a runtime is reference counted. The owner holds one reference
 * (dropped by ty_runtime_destroy) and every live store holds one, so a host
 * (or Lua's collector, which finalises in no useful order) may destroy the
 * runtime before its last stores: their memory stays valid until released.
 */
#include "internal.h"
#include "team.h"
#include "trace.h"
#include "exec_gpu.h"
#include "gpu_kernels.h"
#include "linebuf.h"

#include <errno.h>
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_int(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || errno || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

ty_status ty_config_init(ty_config *cfg, char *err, size_t errlen) {
  memset(cfg, 0, sizeof *cfg);
  ty_status st = TY_OK;
  const char *v;
  long n;
  if ((v = getenv("TYCHO_CPUS")) && *v) {
    if (parse_int(v, 1, 4096, &n) == 0)
      cfg->cpus = (int)n;
    else {
      if (err) snprintf(err, errlen, "TYCHO_CPUS must be an integer in 1..4096, got '%s'", v);
      st = TY_EINVAL;
    }
  }
  if ((v = getenv("TYCHO_ISA")) && *v) {
    char msg[160];
    if (ty_isa_parse(v, msg, sizeof msg) == TY_OK)
      cfg->isa = v;
    else {
      if (err) snprintf(err, errlen, "TYCHO_ISA: %s", msg);
      st = TY_EINVAL;
    }
  }
  if ((v = getenv("TYCHO_WINDOW")) && *v) {
    if (parse_int(v, 1, TY_MAX_WINDOW, &n) == 0)
      cfg->window = (int)n;
    else {
      if (err)
        snprintf(err, errlen, "TYCHO_WINDOW must be an integer in 1..%d, got '%s'",
                 TY_MAX_WINDOW, v);
      st = TY_EINVAL;
    }
  }
  if ((v = getenv("TYCHO_OMPS")) && *v) {
    if (parse_int(v, 0, 4096, &n) == 0)
      cfg->omps = (int)n;
    else {
      if (err) snprintf(err, errlen, "TYCHO_OMPS must be an integer in 0..4096, got '%s'", v);
      st = TY_EINVAL;
    }
  }
  if ((v = getenv("TYCHO_OMPTHREADS")) && *v) {
    if (parse_int(v, 1, 4096, &n) == 0)
      cfg->ompthreads = (int)n;
    else {
      if (err) snprintf(err, errlen, "TYCHO_OMPTHREADS must be an integer in 1..4096, got '%s'", v);
      st = TY_EINVAL;
    }
  }
  /* read where they are used (core/team.c, ops/ops_scatter.c); checked here
   * so that a bad value is an error, not the default in silence */
  if ((v = getenv("TYCHO_SPIN_US")) && *v && parse_int(v, 0, 1000000, &n) != 0) {
    if (err) snprintf(err, errlen, "TYCHO_SPIN_US must be an integer in 0..1000000, got '%s'", v);
    st = TY_EINVAL;
  }
  if ((v = getenv("TYCHO_FUSE_CACHE")) && *v && parse_int(v, 0, 1, &n) != 0) { /* plan/fuse_cache.c */
    if (err) snprintf(err, errlen, "TYCHO_FUSE_CACHE must be 0 or 1, got '%s'", v);
    st = TY_EINVAL;
  }
  if ((v = getenv("TYCHO_WINDOW_CUT")) && *v && parse_int(v, 0, 1, &n) != 0) { /* plan/window.c */
    if (err) snprintf(err, errlen, "TYCHO_WINDOW_CUT must be 0 or 1, got '%s'", v);
    st = TY_EINVAL;
  }
  if ((v = getenv("TYCHO_CEDE")) && *v && parse_int(v, 0, 1, &n) != 0) { /* exec/exec.c */
    if (err) snprintf(err, errlen, "TYCHO_CEDE must be 0 or 1, got '%s'", v);
    st = TY_EINVAL;
  }
  if ((v = getenv("TYCHO_IN_PLACE")) && *v && parse_int(v, 0, 1, &n) != 0) { /* exec/inplace.c */
    if (err) snprintf(err, errlen, "TYCHO_IN_PLACE must be 0 or 1, got '%s'", v);
    st = TY_EINVAL;
  }
  if ((v = getenv("TYCHO_DOUBLE_BUFFER")) && *v && parse_int(v, 0, 1, &n) != 0) { /* exec/linebuf.c */
    if (err) snprintf(err, errlen, "TYCHO_DOUBLE_BUFFER must be 0 or 1, got '%s'", v);
    st = TY_EINVAL;
  }
  if ((v = getenv("TYCHO_SCATTER_DIRECT")) && *v && parse_int(v, 0, LONG_MAX, &n) != 0) {
    if (err) snprintf(err, errlen, "TYCHO_SCATTER_DIRECT must be a number of bytes >= 0, got '%s'", v);
    st = TY_EINVAL;
  }
  if ((v = getenv("TYCHO_NT_STORES")) && *v && strcmp(v, "auto") != 0 && parse_int(v, 0, 1, &n) != 0) {
    if (err) snprintf(err, errlen, "TYCHO_NT_STORES must be 0, 1 or auto, got '%s'", v); /* exec/fused_codegen.c */
    st = TY_EINVAL;
  }
  if ((v = getenv("TYCHO_LLC_BYTES")) && *v && parse_int(v, 1, LONG_MAX, &n) != 0) { /* exec/fused_codegen.c */
    if (err) snprintf(err, errlen, "TYCHO_LLC_BYTES must be a number of bytes >= 1, got '%s'", v);
    st = TY_EINVAL;
  }
  static const struct {
    const char *env, *key;
  } axes[] = {{"TYCHO_PARALLEL", "parallel"}, {"TYCHO_OVERDECOMPOSE", "overdecompose"},
              {"TYCHO_MIN_CPU_CHUNK", "min_chunk"}, {"TYCHO_FAVOR", "favor"},
              {"TYCHO_FUSE", "fuse"}, {"TYCHO_FASTMATH", "fastmath"},
              {"TYCHO_STREAM_MEMORY", "memory"}, {"TYCHO_STREAM", "stream"},
              {"TYCHO_TARGET", "target"}};
  for (size_t i = 0; i < sizeof axes / sizeof axes[0]; i++) {
    if (!(v = getenv(axes[i].env)) || !*v) continue;
    char why[200];
    if (ty_policy_set(&cfg->policy, axes[i].key, v, why, sizeof why) != TY_OK) {
      if (err) snprintf(err, errlen, "%s: %s", axes[i].env, why);
      st = TY_EINVAL;
    }
  }
  if ((v = getenv("TYCHO_GPUS")) && *v) {
    char why[200];
    if (ty_gpus_parse(v, &cfg->gpus, why, sizeof why) != TY_OK) {
      if (err) snprintf(err, errlen, "TYCHO_GPUS: %s", why);
      st = TY_EINVAL;
    }
  }
  if ((v = getenv("TYCHO_FBMEM")) && *v) {
    size_t b;
    if (ty_parse_size(v, &b) == TY_OK && b > 0)
      cfg->fbmem = b;
    else {
      if (err) snprintf(err, errlen, "TYCHO_FBMEM must be a size such as 8GiB, got '%s'", v);
      st = TY_EINVAL;
    }
  }
  if ((v = getenv("TYCHO_EXPLAIN")) && *v) cfg->explain = strcmp(v, "0") != 0;
  if ((v = getenv("TYCHO_TIMING")) && *v) cfg->timing = strcmp(v, "0") != 0;
  if ((v = getenv("TYCHO_SYSMEM")) && *v) {
    size_t b;
    if (ty_parse_size(v, &b) == TY_OK && b > 0)
      cfg->sysmem = b;
    else {
      if (err) snprintf(err, errlen, "TYCHO_SYSMEM must be a size such as 512MB or 4GiB, got '%s'", v);
      st = TY_EINVAL;
    }
  }
  return st;
}

static size_t physical_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return (size_t)4 << 30;
  return (size_t)pages * (size_t)page;
}

static void runtime_free(ty_runtime *rt);

ty_status ty_runtime_create(const ty_config *cfg, ty_runtime **out) {
  *out = NULL;
  ty_config c = {0};
  if (cfg) c = *cfg;
  if (c.cpus < 0 || c.cpus > 4096) return TY_EINVAL;
  if (c.window < 0 || c.window > TY_MAX_WINDOW) return TY_EINVAL;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores < 1) cores = 1;
  if (c.cpus == 0) c.cpus = (int)cores;
  if (c.omps < 0 || c.omps > 4096 || c.ompthreads < 0 || c.ompthreads > 4096) return TY_EINVAL;
  if (c.omps > 0 && c.ompthreads == 0) c.ompthreads = cores / c.omps > 0 ? (int)(cores / c.omps) : 1;
  if (c.omps > 0) omp_set_max_active_levels(2); /* pieces on groups, threads inside */
  /* 80%: leave room for the interpreter, the OS and memory outside stores */
  if (c.sysmem == 0) c.sysmem = physical_memory() / 10 * 8;
  if (c.window == 0) c.window = TY_DEFAULT_WINDOW;
  /* the kernels' level is the process's (isa.c): fixed now if not yet */
  if (ty__isa_select(c.isa) != 0) return TY_EINVAL;
  c.isa = ty_isa();

  ty_runtime *rt = ty__calloc(1, sizeof *rt);
  if (!rt) return TY_ENOMEM;
  rt->refs = 1;
  rt->finalize = runtime_free; /* the last store reference frees it (core/store.c) */
  rt->cfg = c;
  ty_print_options_default(&rt->print);
  rt->next_store_id = 1;
  rt->next_launch_seq = 1;
  rt->seed = 0x7963686f; /* "ycho": any fixed default keeps runs reproducible */
  if (c.timing) ty_set_timing(rt, true);
  atomic_init(&rt->interrupt, 0);
  rt->window = ty__calloc((size_t)c.window, sizeof *rt->window);
  rt->window_cap = c.window;
  rt->explain = ty__calloc(TY_EXPLAIN_KEEP, sizeof *rt->explain);
  rt->explain_cold = ty__calloc(TY_EXPLAIN_KEEP, sizeof *rt->explain_cold);
  rt->flush_log = ty__calloc(TY_EXPLAIN_KEEP, sizeof *rt->flush_log);
  if (!rt->window || !rt->explain || !rt->explain_cold || !rt->flush_log) {
    free(rt->window);
    free(rt->explain);
    free(rt->flush_log);
    free(rt->explain_cold);
    free(rt);
    return TY_ENOMEM;
  }
  char gerr[320];
  /* discovery only: contexts, streams and pools wait for a launch that may run on a GPU */
  ty_status st = ty__gpu_probe_only(c.gpus, c.fbmem, &rt->gpu, gerr, sizeof gerr);
  if (st != TY_OK) { /* more GPUs asked for than exist: ty_gpus_check says so */
    free(rt->window);
    free(rt->explain);
    free(rt->flush_log);
    free(rt->explain_cold);
    free(rt);
    return st;
  }
  rt->devices = &ty__gpu_devices; /* the executor's GPU processors (gpu/exec_gpu.c) */
  st = ty__register_builtins(rt);
  if (st == TY_OK) st = ty__register_index_ops(rt);
  if (st == TY_OK) st = ty__register_shape_ops(rt);
  if (st == TY_OK) st = ty__register_mask_ops(rt);
  if (st == TY_OK) st = ty__register_sort_ops(rt);
  if (st == TY_OK) st = ty__register_sort_bucket_ops(rt);
  if (st == TY_OK) st = ty__register_scatter_ops(rt);
  if (st == TY_OK) st = ty__register_linalg_ops(rt);
  if (st == TY_OK) st = ty__register_convolve_ops(rt);
  if (st != TY_OK) {
    ty__free_builtins(rt);
    for (int i = 0; i < rt->ntasks; i++) ty__task_free(rt->tasks[i]);
    free(rt->tasks);
    if (rt->gpu) ty__gpu_close(rt->gpu);
    free(rt->explain);
    free(rt->flush_log);
    free(rt->explain_cold);
    free(rt->window);
    free(rt);
    return st;
  }
  *out = rt;
  return TY_OK;
}

int ty_gpu_count(const ty_runtime *rt) { return rt && rt->gpu ? rt->gpu->list.count : 0; }

ty_status ty_gpu_info(const ty_runtime *rt, int i, ty_gpu_device *out) {
  if (!rt || !out || i < 0 || i >= ty_gpu_count(rt)) return TY_ERANGE;
  *out = rt->gpu->list.dev[i];
  return TY_OK;
}

const char *ty_gpu_status(const ty_runtime *rt) {
  return rt && rt->gpu ? rt->gpu->list.why : "GPUs not probed";
}

static void runtime_free(ty_runtime *rt) {
  ty__team_free(rt->team);
  ty__linebuf_free(rt);
  if (rt->gpu) ty__gpu_close(rt->gpu);
  ty__cache_drop(rt);
  ty__pending_cache_free(rt);
  ty__origins_free(rt);
  ty__policy_shared_free(rt);
  ty__free_builtins(rt);
  for (int i = 0; i < rt->ntasks; i++) ty__task_free(rt->tasks[i]);
  free(rt->tasks);
  free(rt->window);
  free(rt->explain);
  free(rt->flush_log);
  free(rt->explain_cold);
  ty__store_pools_free(rt);
  ty__in_place_free(rt);
  free(rt);
}

/* Called by store.c when a store (holding a runtime reference) goes away. */
void ty_runtime_destroy(ty_runtime *rt) {
  if (!rt || rt->destroyed) return;
  rt->destroyed = true;
  ty__window_drop(rt);
  ty__trace_free(rt); /* a trace still recording is written now */
  ty__runtime_unref(rt);
}

const ty_config *ty_runtime_config(const ty_runtime *rt) { return &rt->cfg; }

void ty_interrupt(ty_runtime *rt) {
  if (rt) atomic_store(&rt->interrupt, 1);
}

void ty_interrupt_clear(ty_runtime *rt) {
  if (rt) atomic_store(&rt->interrupt, 0);
}

bool ty_interrupt_pending(const ty_runtime *rt) {
  return rt && atomic_load(&((ty_runtime *)rt)->interrupt) != 0;
}

void ty_seed(ty_runtime *rt, uint64_t seed) {
  rt->seed = seed;
  rt->random_calls = 0;
}

bool ty_set_timing(ty_runtime *rt, bool on) {
  if (!rt || on == rt->timing) return rt && rt->timing;
  rt->timing = on;
  if (on) {
    rt->stats.flush_ns = rt->stats.collect_ns = rt->stats.fuse_ns = 0;
    rt->stats.schedule_ns = rt->stats.tasks_ns = 0;
    rt->timing_t0 = ty__now_ns();
  } else {
    rt->timing_t1 = ty__now_ns();
  }
  return !on;
}

void ty_get_stats(const ty_runtime *rt, ty_stats *out) {
  *out = rt->stats;
  if (rt->timing_t0) {
    out->timed_ns = (rt->timing ? ty__now_ns() : rt->timing_t1) - rt->timing_t0;
    const uint64_t parts = out->collect_ns + out->fuse_ns + out->schedule_ns + out->tasks_ns;
    out->launch_ns = out->flush_ns > parts ? out->flush_ns - parts : 0;
  }
  out->fused_switched = __atomic_load_n(&rt->fused_switched, __ATOMIC_RELAXED);
  out->copies_folded = __atomic_load_n(&rt->copies_folded, __ATOMIC_RELAXED);
  out->mul_add_pairs = __atomic_load_n(&rt->mul_add_pairs, __ATOMIC_RELAXED);
  out->chained_ops = __atomic_load_n(&rt->chained_ops, __ATOMIC_RELAXED);
  out->bytes_live = rt->live;
  out->bytes_reserved = rt->reserved;
}

uint64_t ty_flush_count(const ty_runtime *rt) { return rt->stats.flushes; }

/* ---- stats rendering ---------------------------------------------------------------- */

ty_status ty_stats_format(ty_runtime *rt, const char *format, char **out) {
  *out = NULL;
  ty_stats s;
  ty_get_stats(rt, &s);
  ty_flush_stats f = rt->last_flush;
  double frac = s.launches_run ? (double)s.concurrent_launches / (double)s.launches_run : 0;
  double ffrac = f.launches > 0 ? (double)f.concurrent / (double)f.launches : 0;
  static const char *const names[] = {
      "launches", "launches_run", "fused_runs", "fused_launches", "fused_compiled", "flushes", "pieces", "waves",
      "critical_path", "widest_wave", "concurrent_launches", "bytes_allocated", "bytes_freed",
      "bytes_live", "bytes_peak", "bytes_reserved", "bytes_elided", "peak_transient",
      "stores_live", "stream_groups", "stream_pieces", "stream_peak", "gpu_launches",
      "gpu_h2d_bytes", "gpu_d2h_bytes", "gpu_d2d_bytes", "gpu_evictions", "dist_launches",
      "dist_bytes", "dist_collectives", "fused_inplace", "dist_messages", "dist_wait_ns",
      "dist_overlap_pieces", "fuse_cache_hits", "bytes_in_place", "fused_switched", "waves_ceded",
      "copies_folded", "mul_add_pairs", "chained_ops", "double_buffered", "waves_backwards", "timed_ns", "flush_ns",
      "collect_ns", "fuse_ns", "schedule_ns", "tasks_ns", "launch_ns"};
  uint64_t vals[] = {s.launches, s.launches_run, s.fused_runs, s.fused_launches, s.fused_compiled, s.flushes,
                     s.pieces, s.waves, s.critical_path, s.widest_wave, s.concurrent_launches,
                     s.bytes_allocated, s.bytes_freed, s.bytes_live, s.bytes_peak,
                     s.bytes_reserved, s.bytes_elided, s.peak_transient, s.stores_live,
                     s.stream_groups, s.stream_pieces, s.stream_peak, s.gpu_launches,
                     s.gpu_h2d_bytes, s.gpu_d2h_bytes, s.gpu_d2d_bytes, s.gpu_evictions,
                     s.dist_launches, s.dist_bytes, s.dist_collectives, s.fused_inplace, s.dist_messages,
                     s.dist_wait_ns, s.dist_overlap_pieces, s.fuse_cache_hits,
                     s.bytes_in_place, s.fused_switched, s.waves_ceded, s.copies_folded,
                     s.mul_add_pairs, s.chained_ops, s.double_buffered, s.waves_backwards, s.timed_ns, s.flush_ns,
                     s.collect_ns, s.fuse_ns, s.schedule_ns, s.tasks_ns, s.launch_ns};
  enum { N = sizeof vals / sizeof vals[0] };
  size_t cap = 4096, len = 0;
  char *b = ty__malloc(cap);
  if (!b) return ty__fail(rt, TY_ENOMEM, "stats: out of memory");
#define PUT(...) (len += (size_t)snprintf(b + len, len < cap ? cap - len : 0, __VA_ARGS__))
  if (format && strcmp(format, "json") == 0) {
    PUT("{");
    for (int i = 0; i < N; i++) PUT("%s\"%s\": %llu", i ? ", " : "", names[i], (unsigned long long)vals[i]);
    PUT(", \"concurrent_fraction\": %.4f, \"last_flush\": {\"flush\": %llu, \"favor\": \"%s\", "
        "\"launches\": %d, \"waves\": %d, \"critical_path\": %d, \"widest\": %d, "
        "\"concurrent\": %d, \"concurrent_fraction\": %.4f, \"peak_transient\": %lld, "
        "\"bytes_peak\": %llu, \"bytes_allocated\": %llu, \"bytes_freed\": %llu, "
        "\"bytes_live\": %llu}}\n",
        frac, (unsigned long long)f.flush, f.favor ? f.favor : "none", f.launches, f.waves,
        f.critical_path, f.widest, f.concurrent, ffrac, (long long)f.peak_transient,
        (unsigned long long)f.bytes_peak, (unsigned long long)f.bytes_allocated,
        (unsigned long long)f.bytes_freed, (unsigned long long)f.bytes_live);
  } else if (format && strcmp(format, "csv") == 0) {
    PUT("name,value\n");
    for (int i = 0; i < N; i++) PUT("%s,%llu\n", names[i], (unsigned long long)vals[i]);
    PUT("concurrent_fraction,%.4f\n", frac);
  } else if (!format || strcmp(format, "text") == 0) {
    char live[32], peak[32], alloc[32], freed[32], tpeak[32], elided[32];
    ty_format_bytes((double)s.bytes_live, live, sizeof live);
    ty_format_bytes((double)s.bytes_peak, peak, sizeof peak);
    ty_format_bytes((double)s.bytes_allocated, alloc, sizeof alloc);
    ty_format_bytes((double)s.bytes_freed, freed, sizeof freed);
    ty_format_bytes((double)s.peak_transient, tpeak, sizeof tpeak);
    ty_format_bytes((double)s.bytes_elided, elided, sizeof elided);
    PUT("tycho stats\n");
    PUT("  launches        %llu appended, %llu run after fusion (%llu fused runs of %llu launches, "
        "%llu compiled, %llu in place (%llu double-buffered), %llu pieces switched, %llu copies folded, "
        "%llu mul-add pairs, %llu ops chained)\n",
        (unsigned long long)s.launches, (unsigned long long)s.launches_run,
        (unsigned long long)s.fused_runs, (unsigned long long)s.fused_launches,
        (unsigned long long)s.fused_compiled, (unsigned long long)s.fused_inplace,
        (unsigned long long)s.double_buffered,
        (unsigned long long)s.fused_switched, (unsigned long long)s.copies_folded,
        (unsigned long long)s.mul_add_pairs, (unsigned long long)s.chained_ops);
    PUT("  flushes         %llu, point tasks %llu\n", (unsigned long long)s.flushes,
        (unsigned long long)s.pieces);
    PUT("  waves           %llu, critical path %llu, widest wave %llu\n", (unsigned long long)s.waves,
        (unsigned long long)s.critical_path, (unsigned long long)s.widest_wave);
    PUT("  concurrent      %llu launches ran in waves of two or more (%.0f%%)\n",
        (unsigned long long)s.concurrent_launches, frac * 100);
    if (s.waves_backwards)
      PUT("  backwards       %llu waves swept last piece first, starting on what the last one left in cache\n",
          (unsigned long long)s.waves_backwards);
    if (s.waves_ceded)
      PUT("  ceded           %llu waves ran on one worker fewer beside a background compile\n",
          (unsigned long long)s.waves_ceded);
    PUT("  memory          peak %s (allocator), transient peak %s (simulated), live %s\n", peak,
        tpeak, live);
    PUT("  allocated       %s in all, %s freed, %s of temporaries elided\n", alloc, freed, elided);
    if (s.timed_ns) { /* shares of the wall time timed (docs/scheduling.md) */
      const double t = (double)s.timed_ns, out = s.timed_ns > s.flush_ns ? (double)(s.timed_ns - s.flush_ns) : 0;
      PUT("  time            %.3f s timed: %.0f%% in flushes (tasks %.0f%%, launching %.0f%%, fusion "
          "%.0f%%, collector %.0f%%, scheduling %.0f%%), %.0f%% outside them (the program)\n",
          t * 1e-9, 100 * (double)s.flush_ns / t, 100 * (double)s.tasks_ns / t, 100 * (double)s.launch_ns / t,
          100 * (double)s.fuse_ns / t, 100 * (double)s.collect_ns / t, 100 * (double)s.schedule_ns / t,
          100 * out / t);
    }
    if (s.stream_groups) {
      char speak[32];
      ty_format_bytes((double)s.stream_peak, speak, sizeof speak);
      PUT("  streaming       %llu groups in %llu pieces, transient peak %s\n",
          (unsigned long long)s.stream_groups, (unsigned long long)s.stream_pieces, speak);
    }
    if (s.gpu_launches || s.gpu_d2h_bytes) {
      char h2d[32], d2h[32], d2d[32];
      ty_format_bytes((double)s.gpu_h2d_bytes, h2d, sizeof h2d);
      ty_format_bytes((double)s.gpu_d2h_bytes, d2h, sizeof d2h);
      ty_format_bytes((double)s.gpu_d2d_bytes, d2d, sizeof d2d);
      PUT("  gpu             %llu launches; copied %s to GPUs, %s to the host, %s between GPUs; "
          "%llu evictions\n",
          (unsigned long long)s.gpu_launches, h2d, d2h, d2d, (unsigned long long)s.gpu_evictions);
    }
    if (rt->dist.nranks > 1) {
      char got[32];
      ty_format_bytes((double)s.dist_bytes, got, sizeof got);
      PUT("  ranks           rank %d of %d: %llu launches split, %s received in %llu messages, "
          "%llu collectives, %.3f s in them; %llu pieces ran while halos moved\n",
          rt->dist.rank, rt->dist.nranks, (unsigned long long)s.dist_launches, got,
          (unsigned long long)s.dist_messages, (unsigned long long)s.dist_collectives,
          (double)s.dist_wait_ns * 1e-9, (unsigned long long)s.dist_overlap_pieces);
    }
  } else {
    free(b);
    return ty__fail(rt, TY_EINVAL, "stats: format must be text, json or csv, got '%s'", format);
  }
#undef PUT
  if (len >= cap) { /* cannot happen with these fields; keep the text whole anyway */
    free(b);
    return ty__fail(rt, TY_ENOMEM, "stats: text too long");
  }
  *out = b;
  return TY_OK;
}
