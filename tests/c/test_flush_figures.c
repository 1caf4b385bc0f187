/*
 * test_flush_figures.c — the allocator's figures in ty_stats and per flush
 * (allocated, freed, live, peak: allocated - freed == live at every step),
 * and the flush line explain prints after each flush's launches. Only the
 * public headers are used.
 */
#include "check.h"

#include <math.h>
#include <stdlib.h>

#include "tycho/task.h"
#include "tycho/tycho.h"

enum { N = 1000, BYTES = N * 8 }; /* one f64 vector of the tests */

/* The figures of a flush that frees: an output never takes a dead input's
 * block here (TYCHO_IN_PLACE=0, read by each runtime at its first launch;
 * each test runs in its own process); in_place_keeps_the_balance below
 * counts the blocks an in-place chain reuses. */
static ty_runtime *make_rt_in_place(const char *in_place) {
  setenv("TYCHO_IN_PLACE", in_place, 1);
  ty_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.cpus = 2;
  cfg.window = 256;
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&cfg, &rt) == TY_OK);
  return rt;
}

static ty_runtime *make_rt(void) { return make_rt_in_place("0"); }

static void check_balance(ty_runtime *rt) {
  ty_stats s;
  ty_get_stats(rt, &s);
  CHECK_EQ_INT(s.bytes_allocated - s.bytes_freed, s.bytes_live);
}

/* a = full(1.0); b = sin(a); a released before the flush, so its storage is
 * freed once sin has read it: in the flush, 2 vectors allocated, 1 freed. */
static ty_store *sin_of_ones(ty_runtime *rt, ty_favor favor) {
  ty_policy p = {.set = TY_POL_FAVOR | TY_POL_FUSE, .favor = favor, .fuse = false};
  CHECK(ty_scope_push(rt, &p, "scope at test") == TY_OK);
  int64_t n = N;
  ty_store *a, *b;
  CHECK(ty_full(rt, TY_F64, 1, &n, 1.0, &a) == TY_OK);
  CHECK(ty_unary(rt, TY_OP_SIN, a, &b) == TY_OK);
  ty_store_release(a);
  CHECK(ty_scope_pop(rt) == TY_OK);
  return b;
}

TEST(bytes_freed_balances_allocated_and_live) {
  ty_runtime *rt = make_rt();
  ty_stats s;
  ty_get_stats(rt, &s);
  CHECK_EQ_INT(s.bytes_freed, 0);
  ty_store *b = sin_of_ones(rt, TY_FAVOR_MIN_PEAK);
  CHECK(ty_flush(rt) == TY_OK);
  ty_get_stats(rt, &s);
  CHECK_EQ_INT(s.bytes_allocated, 2 * BYTES);
  CHECK_EQ_INT(s.bytes_freed, BYTES);
  CHECK_EQ_INT(s.bytes_live, BYTES);
  check_balance(rt);
  /* a chain of temporaries (not fused: each is allocated): every one is
   * freed but the result */
  ty_policy nofuse = {.set = TY_POL_FUSE, .fuse = false};
  CHECK(ty_scope_push(rt, &nofuse, "scope at test") == TY_OK);
  ty_store *x = b;
  for (int i = 0; i < 5; i++) {
    ty_store *y;
    CHECK(ty_binary(rt, TY_OP_ADD, x, x, &y) == TY_OK);
    ty_store_release(x);
    x = y;
  }
  CHECK(ty_scope_pop(rt) == TY_OK);
  CHECK(ty_flush(rt) == TY_OK);
  ty_get_stats(rt, &s);
  CHECK_EQ_INT(s.bytes_allocated, 7 * BYTES);
  CHECK_EQ_INT(s.bytes_freed, 6 * BYTES);
  check_balance(rt);
  ty_store_release(x);
  ty_get_stats(rt, &s);
  CHECK_EQ_INT(s.bytes_live, 0);
  CHECK_EQ_INT(s.bytes_freed, s.bytes_allocated);
  ty_runtime_destroy(rt);
}

/* With outputs in place (exec/inplace.c): sin writes over the ones it reads
 * last, each add of the chain over its dead input: one vector allocated in
 * all, none freed until the last is released, and the balance holds. */
TEST(in_place_keeps_the_balance) {
  ty_runtime *rt = make_rt_in_place("1");
  ty_store *b = sin_of_ones(rt, TY_FAVOR_MIN_PEAK);
  CHECK(ty_flush(rt) == TY_OK);
  ty_stats s;
  ty_get_stats(rt, &s);
  CHECK_EQ_INT(s.bytes_allocated, BYTES);
  CHECK_EQ_INT(s.bytes_freed, 0);
  CHECK_EQ_INT(s.bytes_in_place, BYTES);
  check_balance(rt);
  ty_policy nofuse = {.set = TY_POL_FUSE, .fuse = false};
  CHECK(ty_scope_push(rt, &nofuse, "scope at test") == TY_OK);
  ty_store *x = b;
  for (int i = 0; i < 5; i++) {
    ty_store *y;
    CHECK(ty_binary(rt, TY_OP_ADD, x, x, &y) == TY_OK); /* x in both arguments, then dropped */
    ty_store_release(x);
    x = y;
  }
  CHECK(ty_scope_pop(rt) == TY_OK);
  CHECK(ty_flush(rt) == TY_OK);
  ty_get_stats(rt, &s);
  CHECK_EQ_INT(s.bytes_allocated, BYTES);
  CHECK_EQ_INT(s.bytes_freed, 0);
  CHECK_EQ_INT(s.bytes_in_place, 6 * BYTES);
  check_balance(rt);
  double v[N];
  CHECK(ty_store_read(rt, x, v, sizeof v) == TY_OK); /* sin(1) doubled five times */
  CHECK(v[0] == v[N - 1] && fabs(v[0] - 32.0 * sin(1.0)) < 1e-13);
  ty_store_release(x);
  ty_get_stats(rt, &s);
  CHECK_EQ_INT(s.bytes_live, 0);
  CHECK_EQ_INT(s.bytes_freed, BYTES);
  ty_runtime_destroy(rt);
}

TEST(flush_figures_count_the_allocator_within_the_flush) {
  ty_runtime *rt = make_rt();
  int64_t big_n = 50 * N;
  ty_store *big;
  CHECK(ty_full(rt, TY_F64, 1, &big_n, 2.0, &big) == TY_OK);
  CHECK(ty_flush(rt) == TY_OK);
  ty_store_release(big); /* freed between flushes: no flush counts it */
  ty_stats s0, s1;
  ty_get_stats(rt, &s0);
  CHECK_EQ_INT(s0.bytes_peak, 50 * BYTES);
  CHECK_EQ_INT(s0.bytes_live, 0);

  ty_store *keep;
  int64_t one = 1;
  CHECK(ty_full(rt, TY_F64, 1, &one, 0.0, &keep) == TY_OK); /* 8 live bytes across the flush */
  CHECK(ty_flush(rt) == TY_OK);
  ty_store *b = sin_of_ones(rt, TY_FAVOR_DEBUG);
  ty_get_stats(rt, &s0);
  CHECK(ty_flush(rt) == TY_OK);
  ty_get_stats(rt, &s1);
  ty_flush_stats f;
  ty_last_flush_stats(rt, &f);
  CHECK_EQ_INT(f.flush, s1.flushes);
  CHECK_EQ_INT(f.flush, 3);
  CHECK(strcmp(f.favor, "debug") == 0);
  CHECK_EQ_INT(f.launches, 2);
  CHECK_EQ_INT(f.waves, 2);
  CHECK_EQ_INT(f.bytes_allocated, 2 * BYTES);
  CHECK_EQ_INT(f.bytes_freed, BYTES);
  CHECK_EQ_INT(f.bytes_live, 8 + BYTES);
  CHECK_EQ_INT(f.bytes_live, s0.bytes_live + f.bytes_allocated - f.bytes_freed);
  CHECK_EQ_INT(f.bytes_allocated, s1.bytes_allocated - s0.bytes_allocated);
  CHECK_EQ_INT(f.bytes_freed, s1.bytes_freed - s0.bytes_freed);
  /* its own peak (8 + both vectors while sin runs), not the run's */
  CHECK_EQ_INT(f.bytes_peak, 8 + 2 * BYTES);
  CHECK_EQ_INT(s1.bytes_peak, 50 * BYTES);
  check_balance(rt);
  ty_store_release(b);
  ty_store_release(keep);
  ty_runtime_destroy(rt);
}

TEST(explain_prints_each_flush_after_its_launches) {
  ty_runtime *rt = make_rt();
  ty_store *b = sin_of_ones(rt, TY_FAVOR_DEBUG);
  CHECK(ty_flush(rt) == TY_OK);
  /* two independent chains joined: max-concurrency runs them side by side */
  ty_policy p = {.set = TY_POL_FAVOR | TY_POL_FUSE, .favor = TY_FAVOR_MAX_CONCURRENCY, .fuse = false};
  CHECK(ty_scope_push(rt, &p, "scope at test") == TY_OK);
  ty_store *c, *d, *e;
  CHECK(ty_unary(rt, TY_OP_COS, b, &c) == TY_OK);
  CHECK(ty_unary(rt, TY_OP_EXP, b, &d) == TY_OK);
  CHECK(ty_binary(rt, TY_OP_ADD, c, d, &e) == TY_OK);
  CHECK(ty_scope_pop(rt) == TY_OK);
  ty_store_release(c);
  ty_store_release(d);
  CHECK(ty_flush(rt) == TY_OK);

  ty_explain_entry es[8];
  CHECK_EQ_INT(ty_explain(rt, 8, es), 5);
  for (int i = 0; i < 2; i++) {
    CHECK_EQ_INT(es[i].flush.flush, 1);
    CHECK(strcmp(es[i].flush.favor, "debug") == 0);
  }
  ty_flush_stats last;
  ty_last_flush_stats(rt, &last);
  for (int i = 2; i < 5; i++) {
    CHECK_EQ_INT(es[i].flush.flush, 2);
    CHECK(memcmp(&es[i].flush, &last, sizeof last) == 0);
  }
  CHECK_EQ_INT(last.launches, 3);
  CHECK_EQ_INT(last.waves, 2);
  CHECK_EQ_INT(last.critical_path, 2);
  CHECK_EQ_INT(last.widest, 2);
  CHECK_EQ_INT(last.concurrent, 2);
  CHECK_EQ_INT(last.bytes_allocated, 3 * BYTES);
  CHECK_EQ_INT(last.bytes_freed, 2 * BYTES);

  char *text = NULL;
  CHECK(ty_explain_text(rt, 8, &text) == TY_OK);
  CHECK_STR_CONTAINS(text,
                     "\nflush 1 (favor debug): 2 launches in 2 waves, critical path 2, widest 1, "
                     "0 concurrent (0%), transient peak ");
  CHECK_STR_CONTAINS(text, "; allocator peak 15.6 KiB, allocated 15.6 KiB, freed 7.8 KiB, live 7.8 KiB\n");
  CHECK_STR_CONTAINS(text,
                     "\nflush 2 (favor max-concurrency): 3 launches in 2 waves, critical path 2, "
                     "widest 2, 2 concurrent (67%), transient peak ");
  CHECK_STR_CONTAINS(text, "allocated 23.4 KiB, freed 15.6 KiB, live 15.6 KiB\n");
  /* each flush line comes after its own launches and before the next's */
  const char *f1 = strstr(text, "\nflush 1 "), *f2 = strstr(text, "\nflush 2 ");
  const char *cos = strstr(text, " cos "), *sin = strstr(text, " sin ");
  CHECK(f1 && f2 && cos && sin && sin < f1 && f1 < cos && cos < f2);
  free(text);
  ty_store_release(b);
  ty_store_release(e);
  ty_runtime_destroy(rt);
}

/* A record keeps its own flush's figures and only its own texts while the
 * ring goes round: a fused run first (its record has fused ops), then more
 * one-launch flushes than the ring keeps, then a flush of 3. Each kept
 * entry shows 1 launch (3 for the last flush's), flush numbers in order, and
 * no fused ops: the fused record's slot was reused by a launch without. */
TEST(each_record_keeps_its_flush_and_its_texts_round_the_ring) {
  ty_runtime *rt = make_rt();
  int64_t n = N;
  ty_store *a, *b, *c;
  CHECK(ty_full(rt, TY_F64, 1, &n, 1.0, &a) == TY_OK);
  CHECK(ty_unary(rt, TY_OP_SIN, a, &b) == TY_OK);
  CHECK(ty_unary(rt, TY_OP_COS, b, &c) == TY_OK);
  ty_store_release(b);
  CHECK(ty_flush(rt) == TY_OK);
  ty_explain_entry first;
  CHECK_EQ_INT(ty_explain(rt, 1, &first), 1);
  CHECK(first.fused >= 2 && strstr(first.fused_ops, "cos") != NULL);
  ty_store_release(c);
  for (int i = 0; i < TY_EXPLAIN_KEEP; i++) {
    CHECK(ty_unary(rt, TY_OP_EXP, a, &b) == TY_OK);
    CHECK(ty_flush(rt) == TY_OK);
    ty_store_release(b);
  }
  ty_policy p = {.set = TY_POL_FAVOR | TY_POL_FUSE, .favor = TY_FAVOR_DEBUG, .fuse = false};
  CHECK(ty_scope_push(rt, &p, "scope at test") == TY_OK);
  CHECK(ty_unary(rt, TY_OP_SIN, a, &b) == TY_OK);
  CHECK(ty_unary(rt, TY_OP_COS, b, &c) == TY_OK);
  ty_store *d;
  CHECK(ty_unary(rt, TY_OP_EXP, c, &d) == TY_OK);
  CHECK(ty_scope_pop(rt) == TY_OK);
  CHECK(ty_flush(rt) == TY_OK);
  ty_flush_stats last;
  ty_last_flush_stats(rt, &last);
  CHECK_EQ_INT(last.launches, 3);

  ty_explain_entry *es = calloc(TY_EXPLAIN_KEEP, sizeof *es);
  CHECK(es != NULL);
  CHECK_EQ_INT(ty_explain(rt, TY_EXPLAIN_KEEP, es), TY_EXPLAIN_KEEP);
  for (int i = 0; i < TY_EXPLAIN_KEEP; i++) {
    const bool in_last = i >= TY_EXPLAIN_KEEP - 3;
    CHECK_EQ_INT(es[i].flush.launches, in_last ? 3 : 1);
    CHECK_EQ_INT(es[i].flush.flush, in_last ? last.flush : last.flush - (uint64_t)(TY_EXPLAIN_KEEP - 3 - i));
    CHECK_EQ_INT(es[i].fused, 0);
    CHECK(es[i].fused_ops[0] == 0);
  }
  CHECK(memcmp(&es[TY_EXPLAIN_KEEP - 1].flush, &last, sizeof last) == 0);
  free(es);
  ty_store_release(a);
  ty_store_release(b);
  ty_store_release(c);
  ty_store_release(d);
  ty_runtime_destroy(rt);
}

static const check_case cases[] = {
    CASE(bytes_freed_balances_allocated_and_live),
    CASE(in_place_keeps_the_balance),
    CASE(flush_figures_count_the_allocator_within_the_flush),
    CASE(explain_prints_each_flush_after_its_launches),
    CASE(each_record_keeps_its_flush_and_its_texts_round_the_ring),
};
CHECK_MAIN(cases)
