/* test_team.c — the executor's worker team (runtime/src/core/team.c): every
 * item runs exactly once, on a worker in range; fixed jobs put item i on
 * worker i; affine jobs (as many items as workers) run each item once and
 * item 0 on the caller; a job started inside a job runs in its caller; the team works
 * with no spinning, with long spinning, and with more items than workers;
 * freeing a team whose workers sleep or spin returns. */
#include "check.h"
#include "team.h"

#include <stdatomic.h>

typedef struct counts {
  _Atomic int ran[4096];
  _Atomic int worker_of[4096];
  int threads;
  _Atomic int bad_worker;
} counts;

static void count_item(void *arg, int64_t item, int worker) {
  counts *c = arg;
  atomic_fetch_add(&c->ran[item], 1);
  atomic_store(&c->worker_of[item], worker);
  if (worker < 0 || worker >= c->threads || ty__team_worker() != worker)
    atomic_fetch_add(&c->bad_worker, 1);
}

static counts *fresh(int threads) {
  counts *c = calloc(1, sizeof *c);
  c->threads = threads;
  return c;
}

/* runs `jobs` jobs of n items each and checks every item ran once per job */
static void run_jobs(ty_team *t, int threads, int64_t n, bool fixed, int jobs) {
  counts *c = fresh(threads);
  for (int j = 0; j < jobs; j++) ty__team_for(t, threads, n, fixed, count_item, c);
  for (int64_t i = 0; i < n; i++) CHECK_EQ_INT(atomic_load(&c->ran[i]), jobs);
  CHECK_EQ_INT(atomic_load(&c->bad_worker), 0);
  if (fixed)
    for (int64_t i = 0; i < n; i++) CHECK_EQ_INT(atomic_load(&c->worker_of[i]), i);
  free(c);
}

TEST(team_dynamic_every_item_once) {
  ty_team *t = ty__team_new(4, 50, NULL);
  CHECK(t != NULL);
  run_jobs(t, 4, 1000, false, 200);
  run_jobs(t, 2, 7, false, 500);
  run_jobs(t, 4, 1, false, 100); /* one item: the caller runs it */
  run_jobs(t, 3, 4096, false, 20);
  CHECK_EQ_INT(ty__team_worker(), -1);
  ty__team_free(t);
}

static _Atomic int started;
static void count_start(void) { atomic_fetch_add(&started, 1); }

TEST(team_workers_run_the_start_hook_once) {
  ty_team *t = ty__team_new(4, 50, count_start);
  /* fixed jobs: worker k must run item k, so it started (and ran the hook) */
  run_jobs(t, 2, 2, true, 20); /* one worker started */
  CHECK_EQ_INT(atomic_load(&started), 1);
  run_jobs(t, 4, 4, true, 20); /* two more */
  CHECK_EQ_INT(atomic_load(&started), 3);
  run_jobs(t, 4, 100, false, 20); /* none new */
  ty__team_free(t);
  CHECK_EQ_INT(atomic_load(&started), 3);
}

TEST(team_fixed_item_on_its_worker) {
  ty_team *t = ty__team_new(4, 50, NULL);
  run_jobs(t, 4, 4, true, 500);
  run_jobs(t, 4, 2, true, 500);
  run_jobs(t, 3, 3, true, 300);
  ty__team_free(t);
}

/* n == threads, not fixed: every item once, item 0 always on the caller
 * (a late worker's item may go to the caller or to another worker) */
static void run_affine(ty_team *t, int threads, int jobs) {
  counts *c = fresh(threads);
  _Atomic int away = 0;
  for (int j = 0; j < jobs; j++) {
    ty__team_for(t, threads, threads, false, count_item, c);
    if (atomic_load(&c->worker_of[0]) != 0) atomic_fetch_add(&away, 1);
  }
  for (int i = 0; i < threads; i++) CHECK_EQ_INT(atomic_load(&c->ran[i]), jobs);
  CHECK_EQ_INT(atomic_load(&c->bad_worker), 0);
  CHECK_EQ_INT(atomic_load(&away), 0);
  free(c);
}

TEST(team_affine_every_item_once_item_0_on_the_caller) {
  ty_team *t = ty__team_new(4, 50, NULL);
  run_affine(t, 2, 500);
  run_affine(t, 4, 500);
  run_affine(t, 3, 300);
  ty__team_free(t);
  t = ty__team_new(3, 0, NULL); /* workers asleep: the caller takes their items */
  run_affine(t, 3, 300);
  ty__team_free(t);
}

TEST(team_without_spinning_sleeps_and_wakes) {
  ty_team *t = ty__team_new(3, 0, NULL); /* every wait goes to the futex */
  run_jobs(t, 3, 3, true, 300);
  run_jobs(t, 3, 100, false, 300);
  ty__team_free(t);
}

TEST(team_alternates_job_kinds) {
  ty_team *t = ty__team_new(4, 20, NULL);
  counts *c = fresh(4), *d = fresh(4); /* one per kind: an item of one job never runs in another */
  for (int j = 0; j < 300; j++) {
    ty__team_for(t, 4, 4, true, count_item, c);
    ty__team_for(t, 2 + j % 3, 9, false, count_item, d);
  }
  for (int i = 0; i < 4; i++) CHECK_EQ_INT(atomic_load(&c->ran[i]), 300);
  for (int i = 4; i < 9; i++) CHECK_EQ_INT(atomic_load(&c->ran[i]), 0);
  for (int i = 0; i < 9; i++) CHECK_EQ_INT(atomic_load(&d->ran[i]), 300);
  CHECK_EQ_INT(atomic_load(&c->bad_worker), 0);
  CHECK_EQ_INT(atomic_load(&d->bad_worker), 0);
  free(c);
  free(d);
  ty__team_free(t);
}

typedef struct nest {
  ty_team *t;
  counts *inner;
  _Atomic int outer_ran;
} nest;

static void outer_item(void *arg, int64_t item, int worker) {
  nest *n = arg;
  (void)item;
  atomic_fetch_add(&n->outer_ran, 1);
  /* a job inside a job: its items run here, as this worker */
  ty__team_for(n->t, 4, 5, false, count_item, n->inner);
  CHECK_EQ_INT(ty__team_worker(), worker);
}

TEST(team_job_inside_a_job_runs_in_its_caller) {
  ty_team *t = ty__team_new(4, 50, NULL);
  nest n = {t, fresh(4), 0};
  ty__team_for(t, 4, 8, false, outer_item, &n);
  CHECK_EQ_INT(atomic_load(&n.outer_ran), 8);
  for (int i = 0; i < 5; i++) CHECK_EQ_INT(atomic_load(&n.inner->ran[i]), 8);
  CHECK_EQ_INT(atomic_load(&n.inner->bad_worker), 0);
  free(n.inner);
  ty__team_free(t);
}

TEST(team_one_thread_and_no_team_run_in_the_caller) {
  counts *c = fresh(1);
  ty__team_for(NULL, 4, 10, false, count_item, c); /* no team (out of memory) */
  ty_team *t = ty__team_new(1, 50, NULL);
  ty__team_for(t, 1, 10, false, count_item, c);
  for (int i = 0; i < 10; i++) CHECK_EQ_INT(atomic_load(&c->ran[i]), 2);
  for (int i = 0; i < 10; i++) CHECK_EQ_INT(atomic_load(&c->worker_of[i]), 0);
  CHECK_EQ_INT(atomic_load(&c->bad_worker), 0);
  free(c);
  ty__team_free(t);
}

TEST(team_free_while_workers_wait) {
  for (int spin = 0; spin <= 1000; spin += 1000) {
    ty_team *t = ty__team_new(4, spin, NULL);
    run_jobs(t, 4, 16, false, 3);
    ty__team_free(t); /* workers spinning (1000 us) or asleep (0) */
  }
  ty__team_free(ty__team_new(4, 50, NULL)); /* never started */
}

static const check_case cases[] = {
    CASE(team_dynamic_every_item_once),   CASE(team_fixed_item_on_its_worker),
    CASE(team_workers_run_the_start_hook_once), CASE(team_affine_every_item_once_item_0_on_the_caller),
    CASE(team_without_spinning_sleeps_and_wakes), CASE(team_alternates_job_kinds),
    CASE(team_job_inside_a_job_runs_in_its_caller),
    CASE(team_one_thread_and_no_team_run_in_the_caller), CASE(team_free_while_workers_wait),
};
CHECK_MAIN(cases)
