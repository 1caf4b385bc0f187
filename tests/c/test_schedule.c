/*
 * test_schedule.c — the favors on fixed graphs (a chain, a diamond, two
 * chains joined, a wide fan-out, the counterexample where unguarded merging
 * raises the peak) and on seeded random graphs.
 */
#include "check.h"
#include "schedule.h"

#include <stdint.h>
#include <stdlib.h>

/* A graph builder: edges (a -> b means b depends on a) and buffers. */
typedef struct gb {
  int n, ndeps, nbuf, nusers;
  int dep_ptr[257], dep_idx[4096];
  int64_t bytes[256];
  int user_ptr[257], user_idx[4096];
  int deps_of[256][32], ndeps_of[256];
  int users_of[256][32], nusers_of[256];
} gb;

static void gb_init(gb *g, int n) {
  memset(g, 0, sizeof *g);
  g->n = n;
}
static void gb_dep(gb *g, int from, int to) { g->deps_of[to][g->ndeps_of[to]++] = from; }
/* a buffer written by `producer` and read by the listed users */
static void gb_buf(gb *g, int64_t bytes, int producer, int nusers, const int *users) {
  int b = g->nbuf++;
  g->bytes[b] = bytes;
  g->users_of[b][g->nusers_of[b]++] = producer;
  for (int i = 0; i < nusers; i++) {
    g->users_of[b][g->nusers_of[b]++] = users[i];
    gb_dep(g, producer, users[i]);
  }
}
static ty_graph gb_build(gb *g) {
  int k = 0;
  for (int i = 0; i < g->n; i++) {
    g->dep_ptr[i] = k;
    for (int j = 0; j < g->ndeps_of[i]; j++) g->dep_idx[k++] = g->deps_of[i][j];
  }
  g->dep_ptr[g->n] = k;
  k = 0;
  for (int b = 0; b < g->nbuf; b++) {
    g->user_ptr[b] = k;
    for (int j = 0; j < g->nusers_of[b]; j++) g->user_idx[k++] = g->users_of[b][j];
  }
  g->user_ptr[g->nbuf] = k;
  return (ty_graph){g->n, g->dep_ptr, g->dep_idx, g->nbuf, g->bytes, g->user_ptr, g->user_idx};
}

static bool respects_deps(const ty_graph *g, const int *w) {
  for (int i = 0; i < g->n; i++)
    for (int k = g->dep_ptr[i]; k < g->dep_ptr[i + 1]; k++)
      if (w[g->dep_idx[k]] >= w[i]) return false;
  return true;
}

static bool contiguous(const ty_graph *g, const int *w) {
  for (int i = 1; i < g->n; i++)
    if (w[i] != w[i - 1] && w[i] != w[i - 1] + 1) return false;
  return w[0] == 0;
}

typedef struct three {
  ty_sched_stats dbg, min, max;
  int wd[256], wm[256], wx[256];
} three;

static void schedule_all(const ty_graph *g, three *t) {
  CHECK(ty__schedule(g, TY_FAVOR_DEBUG, t->wd, &t->dbg) == TY_OK);
  CHECK(ty__schedule(g, TY_FAVOR_MIN_PEAK, t->wm, &t->min) == TY_OK);
  CHECK(ty__schedule(g, TY_FAVOR_MAX_CONCURRENCY, t->wx, &t->max) == TY_OK);
}

/* The invariants every graph must keep. */
static void check_invariants(const ty_graph *g, three *t) {
  CHECK_EQ_INT(t->dbg.waves, g->n);
  CHECK_EQ_INT(t->dbg.concurrent, 0);
  CHECK(respects_deps(g, t->wd) && respects_deps(g, t->wm) && respects_deps(g, t->wx));
  CHECK_EQ_INT(t->min.peak_transient, t->dbg.peak_transient);
  CHECK(contiguous(g, t->wm));
  CHECK_EQ_INT(t->max.waves, t->max.critical_path);
  CHECK(t->max.waves <= t->min.waves && t->min.waves <= t->dbg.waves);
}

TEST(chain_runs_one_launch_per_wave_under_every_favor) {
  gb b;
  gb_init(&b, 5);
  for (int i = 0; i < 4; i++) gb_buf(&b, 100, i, 1, (int[]){i + 1});
  ty_graph g = gb_build(&b);
  three t;
  schedule_all(&g, &t);
  check_invariants(&g, &t);
  CHECK_EQ_INT(t.min.waves, 5);
  CHECK_EQ_INT(t.max.waves, 5);
  CHECK_EQ_INT(t.dbg.peak_transient, 200);
}

TEST(diamond_runs_its_middle_together) {
  gb b;
  gb_init(&b, 4); /* 0 -> {1, 2} -> 3 */
  gb_buf(&b, 100, 0, 2, (int[]){1, 2});
  gb_buf(&b, 10, 1, 1, (int[]){3});
  gb_buf(&b, 10, 2, 1, (int[]){3});
  ty_graph g = gb_build(&b);
  three t;
  schedule_all(&g, &t);
  check_invariants(&g, &t);
  CHECK_EQ_INT(t.max.waves, 3);
  CHECK_EQ_INT(t.wx[1], t.wx[2]);
  CHECK_EQ_INT(t.min.waves, 3); /* 1 and 2 merge without raising the peak */
  CHECK_EQ_INT(t.max.concurrent, 2);
}

TEST(two_chains_joined) {
  gb b;
  gb_init(&b, 7); /* a: 0 -> 1 -> 2, b: 3 -> 4 -> 5, 6 joins 2 and 5 */
  gb_buf(&b, 50, 0, 1, (int[]){1});
  gb_buf(&b, 50, 1, 1, (int[]){2});
  gb_buf(&b, 50, 3, 1, (int[]){4});
  gb_buf(&b, 50, 4, 1, (int[]){5});
  gb_buf(&b, 8, 2, 1, (int[]){6});
  gb_buf(&b, 8, 5, 1, (int[]){6});
  ty_graph g = gb_build(&b);
  three t;
  schedule_all(&g, &t);
  check_invariants(&g, &t);
  CHECK_EQ_INT(t.max.waves, 4);
  CHECK_EQ_INT(t.max.widest, 2);
  CHECK(t.max.peak_transient > t.dbg.peak_transient); /* concurrency costs memory */
}

TEST(wide_fan_out) {
  gb b;
  gb_init(&b, 10); /* 0 feeds 1..8, all feed 9 */
  gb_buf(&b, 8, 0, 8, (int[]){1, 2, 3, 4, 5, 6, 7, 8});
  for (int i = 1; i <= 8; i++) gb_buf(&b, 8, i, 1, (int[]){9});
  ty_graph g = gb_build(&b);
  three t;
  schedule_all(&g, &t);
  check_invariants(&g, &t);
  CHECK_EQ_INT(t.max.waves, 3);
  CHECK_EQ_INT(t.max.widest, 8);
}

TEST(guard_stops_a_merge_that_raises_the_peak) {
  /* 0 makes big A, 1 consumes A (A dies), 2 makes big B, 3 consumes B. 1 and 2
   * are independent: merging them keeps A and B alive at once. */
  gb b;
  gb_init(&b, 4);
  gb_buf(&b, 1000, 0, 1, (int[]){1});
  gb_buf(&b, 1000, 2, 1, (int[]){3});
  ty_graph g = gb_build(&b);
  three t;
  schedule_all(&g, &t);
  check_invariants(&g, &t);
  CHECK_EQ_INT(t.dbg.peak_transient, 1000);
  CHECK(t.wm[1] != t.wm[2]); /* the guard refused */
  int merged[4] = {0, 1, 1, 2}; /* what unguarded merging would do */
  CHECK_EQ_INT(ty__simulate_peak(&g, merged), 2000);
  CHECK_EQ_INT(t.max.peak_transient, 2000); /* max-concurrency pays it */
}

static uint64_t rng_state;
static uint32_t rnd(uint32_t n) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(rng_state >> 33) % n;
}

TEST(random_graphs_keep_every_invariant) {
  for (int seed = 1; seed <= 300; seed++) {
    rng_state = (uint64_t)seed;
    gb b;
    int n = 2 + (int)rnd(40);
    gb_init(&b, n);
    for (int i = 0; i + 1 < n; i++) {
      int nusers = (int)rnd(3);
      int users[3], u = 0;
      for (int k = 0; k < nusers; k++) {
        int to = i + 1 + (int)rnd((uint32_t)(n - i - 1));
        bool dup = false;
        for (int j = 0; j < u; j++) dup |= users[j] == to;
        if (!dup) users[u++] = to;
      }
      if (u && b.nbuf < 200) gb_buf(&b, 1 + rnd(1000), i, u, users);
      else if (rnd(2) && i > 0) gb_dep(&b, (int)rnd((uint32_t)i), i); /* a WAR/WAW hazard */
    }
    ty_graph g = gb_build(&b);
    three t;
    schedule_all(&g, &t);
    check_invariants(&g, &t);
  }
}

static const check_case cases[] = {
    CASE(chain_runs_one_launch_per_wave_under_every_favor),
    CASE(diamond_runs_its_middle_together),
    CASE(two_chains_joined),
    CASE(wide_fan_out),
    CASE(guard_stops_a_merge_that_raises_the_peak),
    CASE(random_graphs_keep_every_invariant),
};
CHECK_MAIN(cases)
