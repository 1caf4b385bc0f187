/*
 * test_dist.c — runs on several ranks (exec/dist.c) without MPI: each rank
 * is a thread with a runtime of its own, and the transport (tycho/dist.h)
 * is a barrier and shared pointers. Every rank must end with the bytes a
 * single runtime computes, having split the large launches.
 */
#include "check.h"

#include <tycho/dist.h>
#include <tycho/task.h>
#include <tycho/tycho.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_RANKS = 3, N = 77357 };

typedef struct world {
  int nranks;
  pthread_barrier_t bar;
  const void *src[MAX_RANKS];
  const size_t *scounts[MAX_RANKS], *sdispls[MAX_RANKS];
  bool mismatch; /* a receive count differed from its sender's count */
} world;

typedef struct rank_ctx {
  world *w;
  int rank;
  double sum, axis0_sum;
  double *z;       /* N values */
  double *col;     /* 257 column sums */
  uint64_t split;  /* stats.dist_launches */
  uint64_t bytes, messages; /* stats.dist_bytes, dist_messages */
  char explained[128]; /* the ranks line of the first split launch's explain */
  ty_status st;
  void (*prog)(ty_runtime *rt, struct rank_ctx *c);
} rank_ctx;

static int fake_allgatherv(void *ud, const void *mine, void *all, const size_t *counts,
                           const size_t *displs) {
  rank_ctx *c = ud;
  world *w = c->w;
  w->src[c->rank] = mine;
  pthread_barrier_wait(&w->bar);
  for (int r = 0; r < w->nranks; r++) memcpy((char *)all + displs[r], w->src[r], counts[r]);
  pthread_barrier_wait(&w->bar);
  return 0;
}

static int fake_bcast(void *ud, void *buf, size_t bytes, int root) {
  rank_ctx *c = ud;
  world *w = c->w;
  if (c->rank == root) w->src[root] = buf;
  pthread_barrier_wait(&w->bar);
  if (c->rank != root) memcpy(buf, w->src[root], bytes);
  pthread_barrier_wait(&w->bar);
  return 0;
}

static int fake_alltoallv(void *ud, const void *send, const size_t *scounts, const size_t *sdispls,
                          void *recv, const size_t *rcounts, const size_t *rdispls) {
  rank_ctx *c = ud;
  world *w = c->w;
  w->src[c->rank] = send;
  w->scounts[c->rank] = scounts;
  w->sdispls[c->rank] = sdispls;
  pthread_barrier_wait(&w->bar);
  for (int q = 0; q < w->nranks; q++) {
    if (w->scounts[q][c->rank] != rcounts[q]) w->mismatch = true;
    else memcpy((char *)recv + rdispls[q], (const char *)w->src[q] + w->sdispls[q][c->rank], rcounts[q]);
  }
  pthread_barrier_wait(&w->bar);
  return 0;
}

static void fake_abort(void *ud, const char *msg) {
  (void)ud;
  fprintf(stderr, "abort: %s\n", msg ? msg : "(another rank)");
  abort();
}

/* The program every rank runs: a fused chain, a float sum, a 2-D axis sum. */
static void program(ty_runtime *rt, rank_ctx *c) {
  ty_store *x = NULL, *y = NULL, *z = NULL, *s = NULL, *r = NULL, *cs = NULL, *t = NULL;
  int64_t shape[2] = {301, 257};
  CHECK(ty_arange(rt, TY_F64, 0.5, 0.001, N, &x) == TY_OK);
  CHECK(ty_unary(rt, TY_OP_SIN, x, &y) == TY_OK);
  CHECK(ty_binary(rt, TY_OP_MUL, y, x, &z) == TY_OK);
  CHECK(ty_reduce(rt, TY_RED_SUM, z, -1, &s) == TY_OK);
  CHECK(ty_random(rt, TY_F64, 2, shape, &r) == TY_OK);
  CHECK(ty_reduce(rt, TY_RED_SUM, r, 0, &cs) == TY_OK);
  CHECK(ty_reduce(rt, TY_RED_SUM, cs, -1, &t) == TY_OK);
  CHECK(ty_store_read(rt, s, &c->sum, sizeof c->sum) == TY_OK);
  CHECK(ty_store_read(rt, t, &c->axis0_sum, sizeof c->axis0_sum) == TY_OK);
  CHECK(ty_store_read(rt, z, c->z, N * sizeof *c->z) == TY_OK);
  CHECK(ty_store_read(rt, cs, c->col, 257 * sizeof *c->col) == TY_OK);
  ty_stats st;
  ty_get_stats(rt, &st);
  c->split = st.dist_launches;
  ty_explain_entry *e = calloc(16, sizeof *e);
  int n = ty_explain(rt, 16, e);
  for (int i = 0; i < n && !c->explained[0]; i++)
    if (e[i].ranks[0]) snprintf(c->explained, sizeof c->explained, "%s", e[i].ranks);
  free(e);
  ty_store *all[] = {x, y, z, s, r, cs, t};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) ty_store_release(all[i]);
}

static void *rank_main(void *arg) {
  rank_ctx *c = arg;
  ty_runtime *rt = NULL;
  c->st = ty_runtime_create(&(ty_config){.cpus = 2}, &rt);
  if (c->st) return NULL;
  ty_dist d = {.rank = c->rank,
               .nranks = c->w->nranks,
               .check = true,
               .min_elems = 1000,
               .ud = c,
               .allgatherv = fake_allgatherv,
               .bcast = fake_bcast,
               .abort = fake_abort,
               .alltoallv = fake_alltoallv};
  c->st = ty_set_dist(rt, &d);
  if (c->st == TY_OK) c->prog(rt, c);
  ty_runtime_destroy(rt);
  return NULL;
}

static void ranks_match_one(int nranks) {
  rank_ctx one = {.z = calloc(N, sizeof(double)), .col = calloc(257, sizeof(double)), .prog = program};
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&(ty_config){.cpus = 2}, &rt) == TY_OK);
  program(rt, &one);
  ty_runtime_destroy(rt);

  world w = {.nranks = nranks};
  pthread_barrier_init(&w.bar, NULL, (unsigned)nranks);
  rank_ctx c[MAX_RANKS];
  pthread_t th[MAX_RANKS];
  for (int r = 0; r < nranks; r++) {
    c[r] = (rank_ctx){.w = &w, .rank = r, .z = calloc(N, sizeof(double)),
                      .col = calloc(257, sizeof(double)), .prog = program};
    CHECK(pthread_create(&th[r], NULL, rank_main, &c[r]) == 0);
  }
  for (int r = 0; r < nranks; r++) pthread_join(th[r], NULL);
  pthread_barrier_destroy(&w.bar);
  for (int r = 0; r < nranks; r++) {
    CHECK_EQ_INT(c[r].st, TY_OK);
    CHECK(memcmp(&c[r].sum, &one.sum, sizeof one.sum) == 0); /* the same bits */
    CHECK(memcmp(&c[r].axis0_sum, &one.axis0_sum, sizeof one.sum) == 0);
    CHECK(memcmp(c[r].z, one.z, N * sizeof(double)) == 0);
    CHECK(memcmp(c[r].col, one.col, 257 * sizeof(double)) == 0);
    CHECK(c[r].split >= 2); /* the fused chain and sum, the random draw and axis sum */
    char want[64];
    snprintf(want, sizeof want, "split among %d ranks, pieces ", nranks);
    CHECK_STR_CONTAINS(c[r].explained, want);
    snprintf(want, sizeof want, " here (rank %d); ", r);
    CHECK_STR_CONTAINS(c[r].explained, want);
    CHECK_STR_CONTAINS(c[r].explained, "the wave's exchange brought ");
    free(c[r].z);
    free(c[r].col);
  }
  CHECK_EQ_INT(one.split, 0);
  CHECK(one.explained[0] == 0);
  free(one.z);
  free(one.col);
}

/* Split stores (dist_data.c): a 1-D 3-point smoother in place over views
 * of one store (halos of one element per rank boundary), an element-wise
 * chain (nothing moves), then reads. */
enum { ITERS = 6 };
static void smoother(ty_runtime *rt, rank_ctx *c) {
  ty_store *u = NULL, *in = NULL, *lt = NULL, *rg = NULL, *v = NULL, *s = NULL;
  CHECK(ty_arange(rt, TY_F64, 0.25, 0.75, N, &u) == TY_OK);
  CHECK(ty_store_slice(rt, u, 0, 1, N - 1, 1, &in) == TY_OK);
  CHECK(ty_store_slice(rt, u, 0, 0, N - 2, 1, &lt) == TY_OK);
  CHECK(ty_store_slice(rt, u, 0, 2, N, 1, &rg) == TY_OK);
  CHECK(ty_flush(rt) == TY_OK);
  ty_stats st;
  uint64_t first = 0; /* the first copy into `in` rewrites u through another view: made whole */
  for (int it = 0; it < ITERS; it++) {
    if (it == 1) {
      ty_get_stats(rt, &st);
      first = st.dist_bytes;
    }
    ty_store *a = NULL, *b = NULL, *m = NULL;
    CHECK(ty_binary(rt, TY_OP_ADD, lt, rg, &a) == TY_OK);
    CHECK(ty_binary(rt, TY_OP_ADD, a, in, &b) == TY_OK);
    CHECK(ty_binary(rt, TY_OP_MUL, b, in, &m) == TY_OK);
    CHECK(ty_copy(rt, in, m) == TY_OK);
    CHECK(ty_flush(rt) == TY_OK);
    ty_store_release(a);
    ty_store_release(b);
    ty_store_release(m);
  }
  /* an element-wise chain over the split store: read in place */
  CHECK(ty_unary(rt, TY_OP_SIN, u, &v) == TY_OK);
  CHECK(ty_flush(rt) == TY_OK);
  ty_get_stats(rt, &st);
  c->bytes = st.dist_bytes - first;
  c->messages = st.dist_messages;
  c->split = st.dist_launches;
  CHECK(ty_reduce(rt, TY_RED_SUM, v, -1, &s) == TY_OK);
  CHECK(ty_store_read(rt, s, &c->sum, sizeof c->sum) == TY_OK);
  CHECK(ty_store_read(rt, v, c->z, N * sizeof *c->z) == TY_OK);
  ty_store *all[] = {u, in, lt, rg, v, s};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) ty_store_release(all[i]);
}

static void split_stores_match_one(int nranks) {
  rank_ctx one = {.z = calloc(N, sizeof(double)), .prog = smoother};
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&(ty_config){.cpus = 2}, &rt) == TY_OK);
  smoother(rt, &one);
  ty_runtime_destroy(rt);
  world w = {.nranks = nranks};
  pthread_barrier_init(&w.bar, NULL, (unsigned)nranks);
  rank_ctx c[MAX_RANKS];
  pthread_t th[MAX_RANKS];
  for (int r = 0; r < nranks; r++) {
    c[r] = (rank_ctx){.w = &w, .rank = r, .z = calloc(N, sizeof(double)), .prog = smoother};
    CHECK(pthread_create(&th[r], NULL, rank_main, &c[r]) == 0);
  }
  for (int r = 0; r < nranks; r++) pthread_join(th[r], NULL);
  pthread_barrier_destroy(&w.bar);
  CHECK(!w.mismatch); /* every rank computed the same send and receive lists */
  for (int r = 0; r < nranks; r++) {
    CHECK_EQ_INT(c[r].st, TY_OK);
    CHECK(memcmp(&c[r].sum, &one.sum, sizeof one.sum) == 0);
    CHECK(memcmp(c[r].z, one.z, N * sizeof(double)) == 0);
    CHECK(c[r].split >= ITERS);
    /* halos only: a few elements per rank boundary and launch, far from
     * the replicated scheme's (nranks-1)/nranks of each output */
    CHECK(c[r].bytes > 0);
    CHECK(c[r].bytes < (uint64_t)ITERS * 64 * 8 * (uint64_t)nranks);
    CHECK(c[r].messages > 0);
    free(c[r].z);
  }
  free(one.z);
}

TEST(dist_split_stores_two_ranks) { split_stores_match_one(2); }
TEST(dist_split_stores_three_ranks) { split_stores_match_one(3); }

TEST(dist_two_ranks_match_one_process) { ranks_match_one(2); }
TEST(dist_three_ranks_match_one_process) { ranks_match_one(3); }

TEST(dist_set_checks_its_table) {
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&(ty_config){.cpus = 1}, &rt) == TY_OK);
  CHECK_EQ_INT(ty_rank(rt), 0);
  CHECK_EQ_INT(ty_nranks(rt), 1);
  CHECK_EQ_INT(ty_set_dist(rt, &(ty_dist){.rank = 2, .nranks = 2}), TY_EINVAL);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "ty_set_dist: rank 2 of 2 ranks");
  CHECK_EQ_INT(ty_set_dist(rt, &(ty_dist){.rank = 0, .nranks = 2}), TY_EINVAL);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "needs allgatherv, bcast and abort");
  CHECK_EQ_INT(ty_set_dist(rt, &(ty_dist){.rank = 0, .nranks = 1}), TY_OK);
  CHECK_EQ_INT(ty_nranks(rt), 1);
  ty_runtime_destroy(rt);
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CASE(dist_two_ranks_match_one_process),
      CASE(dist_three_ranks_match_one_process),
      CASE(dist_set_checks_its_table),
      CASE(dist_split_stores_two_ranks),
      CASE(dist_split_stores_three_ranks),
  };
  return check_run(argc, argv, cases, sizeof cases / sizeof *cases);
}
