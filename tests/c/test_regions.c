/*
 * test_regions.c — shifted in-place updates of one store cut into regions
 * (plan/regions.c): CG's matrix-free Laplacian, written with views as
 * bench/workloads/cg.lua writes it,
 *
 *   Av = v * 4;  Av[1:, :] -= v[:-1, :];  Av[:-1, :] -= v[1:, :];
 *                Av[:, 1:] -= v[:, :-1];  Av[:, :-1] -= v[:, 1:]
 *
 * gives the bits of the same operations in program order (each element sees
 * the same subtractions in the same order), on 1 and 3 processors, cut or
 * not; the cut launches of one region share one view per position of a
 * storage (no two distinct stores of the window are the same view); groups
 * without two writers through different boxes (CG's whole-store updates)
 * are left as they are; a dot product after the Laplacian (p.Ap, from
 * 512^2: regions.c's REG_MIN_SUM_ELEMS) sums into the regions with the same
 * bits on any number of processors; the left and right edges are cut at the
 * grid's row split over the processors, and on 2 processors the regions
 * share one wave whose pieces run on the worker holding their rows.
 */
#include "check.h"
#include "req.h"
#include "fused.h"
#include "internal.h"
#include "isa.h"
#include "regions.h"

#include <tycho/tycho.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* v[i][j]: distinct, not exactly representable sums (frac((k + 0.5) * phi)) */
static double *grid(int64_t n) {
  double *v = malloc((size_t)(n * n) * sizeof *v);
  for (int64_t k = 0; k < n * n; k++) {
    const double u = ((double)k + 0.5) * 0.6180339887498949;
    v[k] = u - floor(u) - 0.5;
  }
  return v;
}

/* cg.lua's laplacian, element by element in its order */
static void laplacian_ref(const double *v, int64_t n, double *av) {
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      double x = v[i * n + j] * 4.0;
      if (i > 0) x -= v[(i - 1) * n + j];
      if (i < n - 1) x -= v[(i + 1) * n + j];
      if (j > 0) x -= v[i * n + j - 1];
      if (j < n - 1) x -= v[i * n + j + 1];
      av[i * n + j] = x;
    }
}

/* s[r0:r1, c0:c1] */
static ty_store *box_view(ty_runtime *rt, ty_store *s, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  ty_store *a = NULL, *b = NULL;
  REQ(rt, ty_store_slice(rt, s, 0, r0, r1, 1, &a));
  REQ(rt, ty_store_slice(rt, a, 1, c0, c1, 1, &b));
  ty_store_release(a);
  return b;
}

/* dst[d] = dst[d] - src[s] (cg.lua's `Av[..] = Av[..] - v[..]`) */
static void sub_into(ty_runtime *rt, ty_store *av, ty_store *v, int64_t n, const int64_t d[4], const int64_t s[4]) {
  ty_store *dr = box_view(rt, av, d[0], n + d[1], d[2], n + d[3]);
  ty_store *dw = box_view(rt, av, d[0], n + d[1], d[2], n + d[3]);
  ty_store *sr = box_view(rt, v, s[0], n + s[1], s[2], n + s[3]);
  ty_store *t = NULL;
  REQ(rt, ty_binary(rt, TY_OP_SUB, dr, sr, &t));
  REQ(rt, ty_copy(rt, dw, t));
  ty_store_release(t);
  ty_store_release(dr);
  ty_store_release(dw);
  ty_store_release(sr);
}

/* Av = laplacian(v), deferred */
static ty_store *laplacian(ty_runtime *rt, ty_store *v, int64_t n) {
  ty_store *four = NULL, *av = NULL;
  REQ(rt, ty_scalar_f64(rt, TY_F64, 4.0, &four));
  REQ(rt, ty_binary(rt, TY_OP_MUL, v, four, &av));
  ty_store_release(four);
  static const int64_t rows_lo[4] = {1, 0, 0, 0}, rows_hi[4] = {0, -1, 0, 0};
  static const int64_t cols_lo[4] = {0, 0, 1, 0}, cols_hi[4] = {0, 0, 0, -1};
  sub_into(rt, av, v, n, rows_lo, rows_hi);
  sub_into(rt, av, v, n, rows_hi, rows_lo);
  sub_into(rt, av, v, n, cols_lo, cols_hi);
  sub_into(rt, av, v, n, cols_hi, cols_lo);
  return av;
}

static ty_store *from(ty_runtime *rt, const double *v, int64_t n) {
  const int64_t shape[2] = {n, n};
  ty_store *s = NULL;
  REQ(rt, ty_store_from_buffer(rt, TY_F64, 2, shape, v, &s));
  REQ(rt, ty_flush(rt)); /* the window holds the Laplacian only */
  return s;
}

/* The Laplacian of the grid (and v.Av when dot), read back */
static double *run(int cpus, bool fuse, int64_t n, bool dot, double *pap) {
  ty_runtime *rt = req_runtime(cpus, fuse);
  double *v = grid(n);
  ty_store *s = from(rt, v, n);
  ty_store *av = laplacian(rt, s, n), *prod = NULL, *sum = NULL;
  if (dot) {
    REQ(rt, ty_binary(rt, TY_OP_MUL, s, av, &prod));
    REQ(rt, ty_reduce(rt, TY_RED_SUM, prod, -1, &sum));
    ty_store_release(prod);
  }
  double *out = malloc((size_t)(n * n) * sizeof *out);
  REQ(rt, ty_store_read(rt, av, out, (size_t)(n * n) * sizeof *out));
  if (dot) {
    REQ(rt, ty_store_read(rt, sum, pap, sizeof *pap));
    ty_store_release(sum);
  }
  ty_store_release(av);
  ty_store_release(s);
  ty_runtime_destroy(rt);
  free(v);
  return out;
}

/* 256^2 (65,536 elements: cut, 9 regions) and 64^2 (not cut: below
 * REG_MIN_ELEMS), fused and not, on 1 and 3 processors: the reference's bits */
TEST(laplacian_regions_give_the_reference_bits) {
  static const int64_t sizes[2] = {256, 64};
  for (int z = 0; z < 2; z++) {
    const int64_t n = sizes[z];
    double *v = grid(n), *ref = malloc((size_t)(n * n) * sizeof *ref);
    laplacian_ref(v, n, ref);
    for (int cpus = 1; cpus <= 3; cpus += 2)
      for (int fuse = 0; fuse < 2; fuse++) {
        double *got = run(cpus, fuse, n, false, NULL);
        CHECK(memcmp(got, ref, (size_t)(n * n) * sizeof *got) == 0);
        free(got);
      }
    free(ref);
    free(v);
  }
}

/* The window's distinct stores that are the same view of one array: 0 once
 * a region's launches share their views (before: each cut launch made its
 * own). The constant 4's broadcast views are left out: regions of one
 * shape (the corners) each make theirs. */
static int duplicate_views(const ty_runtime *rt) {
  int dup = 0;
  for (int i = 0; i < rt->nwindow; i++)
    for (int a = 0; a < rt->window[i]->nargs; a++)
      for (int k = i; k < rt->nwindow; k++)
        for (int b = k == i ? a + 1 : 0; b < rt->window[k]->nargs; b++) {
          const ty_store *x = rt->window[i]->args[a].store, *y = rt->window[k]->args[b].store;
          dup += x != y && x->storage->nbytes > sizeof(double) && ty__same_view(x, y);
        }
  return dup;
}

TEST(region_launches_share_views) {
  const int64_t n = 256;
  ty_runtime *rt = req_runtime(1, true);
  double *v = grid(n);
  ty_store *s = from(rt, v, n);
  ty_store *av = laplacian(rt, s, n);
  const int before = rt->nwindow;
  ty__regions_cut(rt);
  /* 9 regions: the inside runs all 5 launches (10 with the copies), each
   * edge fewer */
  CHECK(rt->nwindow > before);
  CHECK_EQ_INT(duplicate_views(rt), 0);
  double *got = malloc((size_t)(n * n) * sizeof *got), *ref = malloc((size_t)(n * n) * sizeof *ref);
  REQ(rt, ty_store_read(rt, av, got, (size_t)(n * n) * sizeof *got));
  laplacian_ref(v, n, ref);
  CHECK(memcmp(got, ref, (size_t)(n * n) * sizeof *got) == 0);
  free(got);
  free(ref);
  free(v);
  ty_store_release(av);
  ty_store_release(s);
  ty_runtime_destroy(rt);
}

/* x = x + a * p; r = r - a * q (a CG step's whole-store updates): every
 * launch writes its store through one box, nothing to cut, the window stays
 * the same launches */
TEST(whole_store_updates_are_not_cut) {
  const int64_t n = 256;
  ty_runtime *rt = req_runtime(1, true);
  double *v = grid(n);
  ty_store *x = from(rt, v, n), *p = from(rt, v, n), *r = from(rt, v, n), *q = from(rt, v, n);
  ty_store *a = NULL, *t = NULL, *x2 = NULL, *t2 = NULL, *r2 = NULL;
  REQ(rt, ty_scalar_f64(rt, TY_F64, 0.25, &a));
  REQ(rt, ty_binary(rt, TY_OP_MUL, a, p, &t));
  REQ(rt, ty_binary(rt, TY_OP_ADD, x, t, &x2));
  REQ(rt, ty_binary(rt, TY_OP_MUL, a, q, &t2));
  REQ(rt, ty_binary(rt, TY_OP_SUB, r, t2, &r2));
  const int before = rt->nwindow;
  ty_pending *w[64];
  CHECK(before > 0 && before <= 64);
  memcpy(w, rt->window, (size_t)before * sizeof *w);
  ty__regions_cut(rt);
  CHECK_EQ_INT(rt->nwindow, before);
  CHECK(memcmp(w, rt->window, (size_t)before * sizeof *w) == 0);
  double *gx = malloc((size_t)(n * n) * sizeof *gx), *gr = malloc((size_t)(n * n) * sizeof *gr);
  REQ(rt, ty_store_read(rt, x2, gx, (size_t)(n * n) * sizeof *gx));
  REQ(rt, ty_store_read(rt, r2, gr, (size_t)(n * n) * sizeof *gr));
  int bad = 0;
  for (int64_t k = 0; k < n * n; k++) bad += gx[k] != v[k] + 0.25 * v[k] || gr[k] != v[k] - 0.25 * v[k];
  CHECK_EQ_INT(bad, 0);
  free(gx);
  free(gr);
  ty_store *all[] = {a, t, x2, t2, r2, x, p, r, q};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) ty_store_release(all[k]);
  free(v);
  ty_runtime_destroy(rt);
}

/* p.Ap summed region by region at 512^2 (sum_tail): the Laplacian keeps its
 * bits, the sum is the reference's to rounding and the same bits on 1, 2
 * and 3 processors */
TEST(laplacian_dot_same_bits_on_any_cpus) {
  const int64_t n = 512;
  double *v = grid(n), *ref = malloc((size_t)(n * n) * sizeof *ref);
  laplacian_ref(v, n, ref);
  double want = 0;
  for (int64_t k = 0; k < n * n; k++) want += v[k] * ref[k];
  double first = 0;
  for (int cpus = 1; cpus <= 3; cpus++) {
    double pap = 0;
    double *got = run(cpus, true, n, true, &pap);
    CHECK(memcmp(got, ref, (size_t)(n * n) * sizeof *got) == 0);
    CHECK_NEAR(pap, want, 1e-11);
    if (cpus == 1) first = pap;
    else CHECK(memcmp(&pap, &first, sizeof pap) == 0);
    free(got);
  }
  free(ref);
  free(v);
}

/* A run one element wide (a grid's column, CG's left and right edges:
 * fused_codegen.c, generate_col): 61 rows (a partial vector at the end at
 * W = 4 and 8), f64 and bool sub-operations, a write back through the
 * strided column; compiled (TYCHO_CODEGEN=always) and interpreted (off), on
 * 1 and 3 processors: the same bytes, and compiled when asked. */
static double *column_run(const char *mode, int cpus, bool *compiled) {
  req_codegen(mode);
  ty_runtime *rt = req_runtime(cpus, true);
  const int64_t n = 64;
  double *v = grid(n);
  ty_store *s = from(rt, v, n);
  ty_store *c1 = box_view(rt, s, 0, 61, 5, 6), *c2 = box_view(rt, s, 2, 63, 7, 8), *dst = box_view(rt, s, 1, 62, 9, 10);
  ty_store *half = NULL, *t = NULL, *u = NULL, *m = NULL, *w = NULL;
  REQ(rt, ty_scalar_f64(rt, TY_F64, 0.5, &half));
  REQ(rt, ty_binary(rt, TY_OP_MUL, c1, c2, &t));
  REQ(rt, ty_binary(rt, TY_OP_SUB, t, half, &u));
  REQ(rt, ty_binary(rt, TY_OP_GT, c1, c2, &m));
  REQ(rt, ty_where(rt, m, u, c2, &w));
  REQ(rt, ty_copy(rt, dst, w));
  *compiled = false;
  ty__fuse(rt);
  for (int i = 0; i < rt->nwindow; i++)
    if (rt->window[i]->task == ty__fused_task(rt) && rt->window[i]->ndim == 2 && rt->window[i]->domain[1] == 1)
      *compiled |= ((const ty__fhead *)rt->window[i]->scalars)->kernel != 0;
  REQ(rt, ty_flush(rt));
  double *out = malloc((size_t)(n * n + 61) * sizeof *out);
  REQ(rt, ty_store_read(rt, s, out, (size_t)(n * n) * sizeof *out));
  REQ(rt, ty_store_read(rt, u, out + n * n, 61 * sizeof *out));
  ty_store *all[] = {c1, c2, dst, half, t, u, m, w, s};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) ty_store_release(all[k]);
  ty_runtime_destroy(rt);
  unsetenv("TYCHO_CODEGEN");
  free(v);
  return out;
}

TEST(column_runs_compile_with_the_interpreters_bits) {
  bool compiled = false;
  double *ref = column_run("off", 1, &compiled);
  CHECK(!compiled);
  /* the column was written: row 1 of column 9 is where(...) of rows 0 and 2 */
  const double *v0 = grid(64);
  const double a = v0[0 * 64 + 5], b = v0[2 * 64 + 7];
  CHECK(ref[1 * 64 + 9] == (a > b ? a * b - 0.5 : b));
  free((void *)v0);
  for (int cpus = 1; cpus <= 3; cpus += 2) {
    double *got = column_run("always", cpus, &compiled);
    if (ty__isa_lanes() >= 4) CHECK(compiled); /* no generated code at the baseline ISA */
    CHECK(memcmp(got, ref, (size_t)(64 * 64 + 61) * sizeof *got) == 0);
    free(got);
  }
  free(ref);
}

/* The left and right edges at 256^2 (254 x 1 runs, 2 KiB: one piece by
 * min_chunk) are cut at the grid's row split on 2 processors, so each
 * processor updates the rows it holds (partition.c, ty__band_partition);
 * the top and bottom rows (1 x 254) stay one piece; the reference's bits. */
TEST(edge_columns_cut_at_the_storage_rows) {
  const int64_t n = 256;
  ty_runtime *rt = req_runtime(2, true);
  double *v = grid(n), *ref = malloc((size_t)(n * n) * sizeof *ref);
  laplacian_ref(v, n, ref);
  ty_store *s = from(rt, v, n);
  ty_store *av = laplacian(rt, s, n);
  double *got = malloc((size_t)(n * n) * sizeof *got);
  REQ(rt, ty_store_read(rt, av, got, (size_t)(n * n) * sizeof *got));
  CHECK(memcmp(got, ref, (size_t)(n * n) * sizeof *got) == 0);
  ty_explain_entry *e = calloc(32, sizeof *e);
  const int ne = ty_explain(rt, 32, e);
  int cols = 0, rows = 0;
  for (int k = 0; k < ne; k++) {
    if (e[k].ndim != 2) continue;
    if (e[k].shape[0] == n - 2 && e[k].shape[1] == 1) {
      cols++;
      CHECK_EQ_INT(e[k].pieces, 2);
      CHECK_EQ_INT(e[k].tiles[0], 2);
      CHECK(strstr(e[k].why, "cut at its storage's rows") != NULL);
    } else if (e[k].shape[0] == 1 && e[k].shape[1] == n - 2) {
      rows++;
      CHECK_EQ_INT(e[k].pieces, 1);
    }
  }
  CHECK(cols >= 1 && rows >= 1);
  free(e);
  free(got);
  free(ref);
  free(v);
  ty_store_release(av);
  ty_store_release(s);
  ty_runtime_destroy(rt);
}

/* On 2 processors the Laplacian's regions at 256^2 (512 KiB grids: boxes
 * are compared from 128 KiB, plan/window.c) run in one wave, and the pieces
 * in each half of the grid's rows run together, on one worker (exec.c,
 * home_slots): a worker runs the pieces of its half (the inside's and both
 * edges' piece 0, or piece 1), then what is left of the other's (the
 * trace's workers: all of one half's before any of the other's); the
 * reference's bits. test_waves.c checks the order within a half. */
TEST(laplacian_regions_share_a_wave_by_rows) {
  const int64_t n = 256;
  ty_runtime *rt = req_runtime(2, true);
  double *v = grid(n), *ref = malloc((size_t)(n * n) * sizeof *ref);
  laplacian_ref(v, n, ref);
  ty_store *s = from(rt, v, n);
  char dir[] = "/tmp/tycho_regions_XXXXXX", json[64];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(json, sizeof json, "%s/t.json", dir);
  REQ(rt, ty_trace_start(rt, json, NULL));
  ty_store *av = laplacian(rt, s, n);
  REQ(rt, ty_flush(rt));
  ty_flush_stats fs;
  ty_last_flush_stats(rt, &fs);
  CHECK_EQ_INT(fs.waves, 1);
  CHECK_EQ_INT(fs.widest, fs.launches);
  CHECK(fs.launches >= 4);
  REQ(rt, ty_trace_stop(rt));
  double *got = malloc((size_t)(n * n) * sizeof *got);
  REQ(rt, ty_store_read(rt, av, got, (size_t)(n * n) * sizeof *got));
  CHECK(memcmp(got, ref, (size_t)(n * n) * sizeof *got) == 0);
  FILE *f = fopen(json, "r");
  CHECK(f != NULL);
  char line[512];
  int halves = 0;
  /* per worker (tid 1, 2) and piece: the first and the last start */
  double first[2][2] = {{1e300, 1e300}, {1e300, 1e300}}, last[2][2] = {{-1, -1}, {-1, -1}};
  while (f && fgets(line, sizeof line, f)) {
    const char *t = strstr(line, "\"tid\":"), *p = strstr(line, "\"piece\":");
    int worker, piece, pieces;
    double ts;
    if (!strstr(line, "\"cat\":\"task\"") || !t || !p ||
        sscanf(t, "\"tid\":%d,\"ts\":%lf", &worker, &ts) != 2 ||
        sscanf(p, "\"piece\":%d,\"pieces\":%d", &piece, &pieces) != 2 || pieces != 2 || worker < 1 ||
        worker > 2)
      continue;
    halves++;
    double *lo = &first[worker - 1][piece], *hi = &last[worker - 1][piece];
    *lo = ts < *lo ? ts : *lo;
    *hi = ts > *hi ? ts : *hi;
  }
  if (f) fclose(f);
  CHECK_EQ_INT(halves, 6); /* the inside and the two edge columns, 2 pieces each */
  /* a worker that ran pieces of both halves ran one half's, then the other's */
  for (int w = 0; w < 2; w++)
    CHECK(last[w][0] < first[w][1] || last[w][1] < first[w][0]);
  unlink(json);
  rmdir(dir);
  free(got);
  free(ref);
  free(v);
  ty_store_release(av);
  ty_store_release(s);
  ty_runtime_destroy(rt);
}

/* The Laplacian of s and p.Ap (*sum), launched */
static ty_store *laplacian_pap(ty_runtime *rt, ty_store *s, int64_t n, ty_store **sum) {
  ty_store *av = laplacian(rt, s, n), *prod = NULL;
  REQ(rt, ty_binary(rt, TY_OP_MUL, s, av, &prod));
  REQ(rt, ty_reduce(rt, TY_RED_SUM, prod, -1, sum));
  ty_store_release(prod);
  return av;
}

/* laplacian_pap's results: the reference's Laplacian, and the first
 * window's p.Ap bits (rep 0 sets *first); both released */
static void check_pap(ty_runtime *rt, ty_store *av, ty_store *sum, int64_t n, const double *ref, double *got,
                      int rep, double *first) {
  double pap = 0;
  REQ(rt, ty_store_read(rt, av, got, (size_t)(n * n) * sizeof *got));
  REQ(rt, ty_store_read(rt, sum, &pap, sizeof pap));
  CHECK(memcmp(got, ref, (size_t)(n * n) * sizeof *got) == 0);
  if (rep == 0) *first = pap;
  else CHECK(memcmp(&pap, first, sizeof pap) == 0);
  ty_store_release(sum);
  ty_store_release(av);
}

/* The same window again (the fusion cache keys it before the cut and a hit
 * replays the cut it recorded: fuse_cache.c, ty__regions_replay): the
 * Laplacian with p.Ap at 512^2, 4 times in one runtime, on 1 and 3
 * processors: later windows hit the cache, and every one gives the first's
 * bits (the Laplacian's: the reference's). */
TEST(repeated_cut_window_replays_with_the_same_bits) {
  const int64_t n = 512;
  double *v = grid(n), *ref = malloc((size_t)(n * n) * sizeof *ref), *got = malloc((size_t)(n * n) * sizeof *got);
  laplacian_ref(v, n, ref);
  for (int cpus = 1; cpus <= 3; cpus += 2) {
    ty_runtime *rt = req_runtime(cpus, true);
    ty_store *s = from(rt, v, n);
    double first = 0;
    for (int rep = 0; rep < 4; rep++) {
      ty_store *sum = NULL, *av = laplacian_pap(rt, s, n, &sum);
      check_pap(rt, av, sum, n, ref, got, rep, &first);
    }
    CHECK(rt->stats.fuse_cache_hits >= 2);
    ty_store_release(s);
    ty_runtime_destroy(rt);
  }
  free(got);
  free(ref);
  free(v);
}

/* A hit of the fusion cache on a cut window builds the fused launches from
 * the window as it came (fuse_cache.c replay_plan): it makes only the views
 * and temporaries the fused launches take, fewer stores than the miss that
 * cut the window (CG at 256^2: ~51 views and ~36 temporaries an iteration),
 * with the same bits as the miss and the reference */
TEST(cut_window_hit_makes_only_the_fused_launches_stores) {
  const int64_t n = 512;
  double *v = grid(n), *ref = malloc((size_t)(n * n) * sizeof *ref), *got = malloc((size_t)(n * n) * sizeof *got);
  laplacian_ref(v, n, ref);
  ty_runtime *rt = req_runtime(2, true);
  ty_store *s = from(rt, v, n);
  double first = 0;
  uint64_t made[3] = {0};
  for (int rep = 0; rep < 3; rep++) {
    ty_store *sum = NULL, *av = laplacian_pap(rt, s, n, &sum);
    const uint64_t ids = rt->next_store_id, hits = rt->stats.fuse_cache_hits;
    REQ(rt, ty_flush(rt));
    made[rep] = rt->next_store_id - ids;
    CHECK(rt->stats.fuse_cache_hits == hits + (rep > 0));
    check_pap(rt, av, sum, n, ref, got, rep, &first);
  }
  CHECK(made[1] > 0 && made[1] < made[0]);
  CHECK(made[2] == made[1]);
  ty_store_release(s);
  ty_runtime_destroy(rt);
  free(got);
  free(ref);
  free(v);
}

/* A hit on a cut window whose allocations fail, each in turn (its plan's
 * views, temporaries and launch records, then the cut it falls back to):
 * the flush gives TY_OK with the reference bits or TY_ENOMEM, and the next
 * window gives the reference bits again; the sanitizer build checks that
 * nothing leaks */
TEST(cut_window_hit_fails_cleanly_under_allocation_faults) {
  const int64_t n = 256;
  double *v = grid(n), *ref = malloc((size_t)(n * n) * sizeof *ref), *got = malloc((size_t)(n * n) * sizeof *got);
  laplacian_ref(v, n, ref);
  for (long k = 1; k < 4000; k++) {
    ty_runtime *rt = req_runtime(2, true);
    ty_store *s = from(rt, v, n);
    bool injected = false;
    for (int rep = 0; rep < 3; rep++) {
      ty_store *av = laplacian(rt, s, n);
      const long before = ty_fault_failures();
      if (rep == 1) ty_fault_fail_alloc(k);
      const ty_status st = ty_flush(rt);
      ty_fault_fail_alloc(0);
      if (rep == 1) injected = ty_fault_failures() != before;
      CHECK(st == TY_OK || (rep == 1 && st == TY_ENOMEM));
      if (st == TY_OK) {
        REQ(rt, ty_store_read(rt, av, got, (size_t)(n * n) * sizeof *got));
        CHECK(memcmp(got, ref, (size_t)(n * n) * sizeof *got) == 0);
      }
      ty_store_release(av);
    }
    CHECK(rt->stats.fuse_cache_hits >= 1);
    ty_store_release(s);
    ty_runtime_destroy(rt);
    if (!injected) break; /* past the hit's last allocation */
  }
  free(got);
  free(ref);
  free(v);
}

/* The flush figures of the Laplacian with p.Ap at 256^2 (several waves: the
 * sum is not in the regions' wave there) and then x += p, 4 windows in one
 * runtime, with the fusion cache and without: the same every time. From the
 * second hit on, flush_window takes the waves kept with the decision
 * (fuse_cache.h, ty__fcache_waves) instead of a graph and ty__schedule;
 * builds with asserts compare them with a fresh schedule at every hit. */
TEST(cached_hit_waves_are_the_scheduled_waves) {
  const int64_t n = 256;
  double *v = grid(n);
  ty_flush_stats figs[2][5];
  for (int cache = 0; cache < 2; cache++) {
    if (!cache) setenv("TYCHO_FUSE_CACHE", "0", 1);
    ty_runtime *rt = req_runtime(2, true); /* the cache reads it at its first window */
    ty_store *s = from(rt, v, n), *x = from(rt, v, n);
    for (int rep = 0; rep < 5; rep++) {
      ty_store *av = laplacian(rt, s, n), *prod = NULL, *sum = NULL, *nx = NULL;
      REQ(rt, ty_binary(rt, TY_OP_MUL, s, av, &prod));
      REQ(rt, ty_reduce(rt, TY_RED_SUM, prod, -1, &sum));
      REQ(rt, ty_binary(rt, TY_OP_ADD, x, av, &nx));
      ty_store_release(prod);
      ty_store_release(x);
      x = nx;
      REQ(rt, ty_flush(rt));
      ty_last_flush_stats(rt, &figs[cache][rep]);
      ty_store_release(sum);
      ty_store_release(av);
    }
    unsetenv("TYCHO_FUSE_CACHE");
    CHECK_EQ_INT((int)rt->stats.fuse_cache_hits, (cache ? 4 : 0));
    ty_store_release(x);
    ty_store_release(s);
    ty_runtime_destroy(rt);
  }
  CHECK(figs[0][0].waves > 1);
  for (int rep = 0; rep < 5; rep++) {
    const ty_flush_stats *a = &figs[0][rep], *b = &figs[1][rep];
    CHECK_EQ_INT(a->launches, b->launches);
    CHECK_EQ_INT(a->waves, b->waves);
    CHECK_EQ_INT(a->critical_path, b->critical_path);
    CHECK_EQ_INT(a->widest, b->widest);
    CHECK_EQ_INT(a->concurrent, b->concurrent);
    CHECK(a->peak_transient == b->peak_transient);
    CHECK_EQ_INT(a->waves, figs[0][0].waves);
  }
  free(v);
}

static const check_case cases[] = {
    CASE(edge_columns_cut_at_the_storage_rows),
    CASE(laplacian_regions_share_a_wave_by_rows),
    CASE(laplacian_regions_give_the_reference_bits),
    CASE(region_launches_share_views),
    CASE(whole_store_updates_are_not_cut),
    CASE(laplacian_dot_same_bits_on_any_cpus),
    CASE(column_runs_compile_with_the_interpreters_bits),
    CASE(repeated_cut_window_replays_with_the_same_bits),
    CASE(cut_window_hit_makes_only_the_fused_launches_stores),
    CASE(cut_window_hit_fails_cleanly_under_allocation_faults),
    CASE(cached_hit_waves_are_the_scheduled_waves),
};
CHECK_MAIN(cases)

