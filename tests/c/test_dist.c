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

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_RANKS = 3, N = 77357 };

typedef struct world {
  int nranks;
  pthread_barrier_t bar;
  const void *src[MAX_RANKS];
  const size_t *scounts[MAX_RANKS], *sdispls[MAX_RANKS];
  bool mismatch; /* a receive count differed from its sender's count */
  bool nonblocking;        /* the transport has ialltoallv and wait */
  int fail_post, fail_wait; /* they fail (the halo exchange): each rank's abort says so */
} world;

typedef struct rank_ctx {
  world *w;
  int rank;
  double sum, axis0_sum;
  double *z;       /* N values */
  double *col;     /* 257 column sums */
  uint64_t split;  /* stats.dist_launches */
  uint64_t bytes, messages; /* stats.dist_bytes, dist_messages */
  uint64_t chain_collectives; /* smoother: the element-wise chain's flush */
  uint64_t wait_ns;           /* stats.dist_wait_ns */
  uint64_t overlap;           /* stats.dist_overlap_pieces */
  void *recv;                 /* the halo exchange in flight (fake_ialltoallv) */
  const size_t *rcounts, *rdispls;
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

/* Posted: every rank's send buffer and counts are known; the bytes move at
 * the wait, so a piece that read a halo before it would read stale bytes. */
static int fake_ialltoallv(void *ud, const void *send, const size_t *scounts, const size_t *sdispls,
                           void *recv, const size_t *rcounts, const size_t *rdispls, void **req) {
  rank_ctx *c = ud;
  world *w = c->w;
  if (w->fail_post) return 1;
  w->src[c->rank] = send;
  w->scounts[c->rank] = scounts;
  w->sdispls[c->rank] = sdispls;
  c->recv = recv, c->rcounts = rcounts, c->rdispls = rdispls;
  pthread_barrier_wait(&w->bar);
  *req = c;
  return 0;
}

static int fake_wait(void *ud, void *req) {
  rank_ctx *c = ud;
  world *w = c->w;
  if (req != c) w->mismatch = true;
  for (int q = 0; q < w->nranks; q++) {
    if (w->scounts[q][c->rank] != c->rcounts[q]) w->mismatch = true;
    else memcpy((char *)c->recv + c->rdispls[q], (const char *)w->src[q] + w->sdispls[q][c->rank],
                c->rcounts[q]);
  }
  pthread_barrier_wait(&w->bar);
  return w->fail_wait;
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
  if (c->w->nonblocking) d.ialltoallv = fake_ialltoallv, d.wait = fake_wait;
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
  CHECK(ty_arange(rt, TY_F64, 0.25, 1e-5, N, &u) == TY_OK);
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
  /* and over its output, with the same tiling: no halo either */
  const uint64_t before = st.dist_collectives;
  ty_store *w = NULL;
  CHECK(ty_unary(rt, TY_OP_COS, v, &w) == TY_OK);
  CHECK(ty_flush(rt) == TY_OK);
  ty_store_release(w);
  ty_get_stats(rt, &st);
  c->chain_collectives = st.dist_collectives - before;
  c->wait_ns = st.dist_wait_ns;
  c->overlap = st.dist_overlap_pieces;
  c->bytes = st.dist_bytes - first;
  c->messages = st.dist_messages;
  c->split = st.dist_launches;
  CHECK(ty_reduce(rt, TY_RED_SUM, v, -1, &s) == TY_OK);
  CHECK(ty_store_read(rt, s, &c->sum, sizeof c->sum) == TY_OK);
  CHECK(ty_store_read(rt, v, c->z, N * sizeof *c->z) == TY_OK);
  ty_store *all[] = {u, in, lt, rg, v, s};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) ty_store_release(all[i]);
}

static void split_stores_match_one(int nranks, bool nonblocking) {
  rank_ctx one = {.z = calloc(N, sizeof(double)), .prog = smoother};
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&(ty_config){.cpus = 2}, &rt) == TY_OK);
  smoother(rt, &one);
  ty_runtime_destroy(rt);
  world w = {.nranks = nranks, .nonblocking = nonblocking};
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
    /* the last chain's flush: the check and the vote; no halo, no exchange
     * after it (its output stays split, a built-in element-wise launch
     * fails on no data) */
    CHECK_EQ_INT((int)c[r].chain_collectives, 2);
    CHECK(c[r].wait_ns > 0); /* time in the transport's calls (barriers here) */
    /* halos posted: the edge ranks' outer pieces read none and ran while
     * they moved, each iteration but the first (a rewrite through another
     * view: blocking); blocking: none */
    if (!nonblocking) CHECK_EQ_INT((int)c[r].overlap, 0);
    else if (r == 0 || r == nranks - 1) CHECK(c[r].overlap >= ITERS - 1);
    free(c[r].z);
  }
  free(one.z);
}

TEST(dist_split_stores_two_ranks) { split_stores_match_one(2, false); }
TEST(dist_split_stores_three_ranks) { split_stores_match_one(3, false); }
TEST(dist_split_stores_overlapped_two_ranks) { split_stores_match_one(2, true); }
TEST(dist_split_stores_overlapped_three_ranks) { split_stores_match_one(3, true); }

TEST(dist_two_ranks_match_one_process) { ranks_match_one(2); }
TEST(dist_three_ranks_match_one_process) { ranks_match_one(3); }

/* A point-wise task that fails on the elements past 0.5 + N / 2 * 0.001
 * (pieces of the last rank only), fused with a launch that does not read
 * its output (y) and one that does (w): on every rank y is the one
 * process's, w and the task's output unavailable (fused_cpu.c,
 * "Failures": each rank learns what the other ranks' failures reached). */
static int fail_past_half(ty_task_ctx *c) {
  const ty_tile *x = &c->args[0], *o = &c->args[1];
  for (int64_t i = 0; i < o->shape[0]; i++) {
    const double v = ((const double *)x->data)[i * x->strides[0]];
    if (v > 0.5 + N / 2 * 0.001) return ty_ctx_fail(c, "past half at %lld", (long long)(x->lo[0] + i));
    ((double *)o->data)[i * o->strides[0]] = v;
  }
  return 0;
}

static void fused_failure(ty_runtime *rt, rank_ctx *c) {
  const ty_task *t;
  ty_task_desc d = {.name = "fail_past_half", .cpu = fail_past_half, .flags = TY_TASK_POINTWISE};
  CHECK(ty_task_register(rt, &d, &t) == TY_OK);
  ty_store *x = NULL, *r = NULL, *y = NULL, *w = NULL;
  int64_t shape[1] = {N};
  CHECK(ty_arange(rt, TY_F64, 0.5, 0.001, N, &x) == TY_OK);
  CHECK(ty_store_create(rt, TY_F64, 1, shape, &r) == TY_OK);
  ty_arg args[2] = {{x, TY_PRIV_IN, TY_REDOP_NONE, TY_PROJ_ALIGNED}, {r, TY_PRIV_OUT, TY_REDOP_NONE, TY_PROJ_ALIGNED}};
  ty_launch_desc ld = {.task = t, .ndim = 1, .domain = shape, .nargs = 2, .args = args};
  CHECK(ty_launch(rt, &ld) == TY_OK);
  CHECK(ty_unary(rt, TY_OP_SIN, x, &y) == TY_OK);
  CHECK(ty_binary(rt, TY_OP_ADD, r, y, &w) == TY_OK);
  c->st = ty_flush(rt);
  snprintf(c->explained, sizeof c->explained, "%s", ty_errmsg(rt));
  CHECK(ty_store_read(rt, y, c->z, N * sizeof *c->z) == TY_OK);
  double *tmp = malloc(N * sizeof *tmp);
  CHECK(ty_store_read(rt, r, tmp, N * sizeof *tmp) == TY_ETASK);
  CHECK(ty_store_read(rt, w, tmp, N * sizeof *tmp) == TY_ETASK);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "the value is unavailable: launch #");
  CHECK_STR_CONTAINS(ty_errmsg(rt), "past half at ");
  free(tmp);
  ty_store *all[] = {x, r, y, w};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) ty_store_release(all[i]);
}

static void fused_failure_ranks(int nranks) {
  rank_ctx one = {.z = calloc(N, sizeof(double)), .prog = fused_failure};
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&(ty_config){.cpus = 2}, &rt) == TY_OK);
  fused_failure(rt, &one);
  ty_runtime_destroy(rt);
  CHECK_EQ_INT(one.st, TY_ETASK);
  world w = {.nranks = nranks};
  pthread_barrier_init(&w.bar, NULL, (unsigned)nranks);
  rank_ctx c[MAX_RANKS];
  pthread_t th[MAX_RANKS];
  for (int r = 0; r < nranks; r++) {
    c[r] = (rank_ctx){.w = &w, .rank = r, .z = calloc(N, sizeof(double)), .prog = fused_failure};
    CHECK(pthread_create(&th[r], NULL, rank_main, &c[r]) == 0);
  }
  for (int r = 0; r < nranks; r++) pthread_join(th[r], NULL);
  pthread_barrier_destroy(&w.bar);
  for (int r = 0; r < nranks; r++) {
    CHECK_EQ_INT(c[r].st, TY_ETASK);
    CHECK_STR_CONTAINS(c[r].explained, "task 'fused' failed in piece ");
    CHECK_STR_CONTAINS(c[r].explained, "task 'fail_past_half' (fused): past half at ");
    CHECK(memcmp(c[r].z, one.z, N * sizeof(double)) == 0); /* y: the same bits */
    free(c[r].z);
  }
  free(one.z);
}

TEST(dist_fused_failure_keeps_independent_results) {
  fused_failure_ranks(2);
  fused_failure_ranks(3);
}

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

/* ---- saving and loading .npy on several ranks (io/npy_dist.c) ------------------ */

/* The collective write: each rank writes its part into the existing file. */
static int fake_write_at_all(void *ud, const char *path, uint64_t off, const void *part, size_t n,
                             char *err, size_t errlen) {
  rank_ctx *c = ud;
  int fd = open(path, O_WRONLY | O_CLOEXEC), e = 0;
  if (fd < 0 || (n && pwrite(fd, part, n, (off_t)off) != (ssize_t)n)) e = 1;
  if (fd >= 0) close(fd);
  if (e) snprintf(err, errlen, "fake write failed");
  pthread_barrier_wait(&c->w->bar);
  return e;
}

static char save_dir[64];

/* What every rank (and one process) saves: a 2-D float64 store, a 0-d one,
 * one with fewer rows than ranks, an empty one; then loads one back, a
 * missing file and a directory. */
typedef struct io_result {
  ty_status missing, to_dir, saved;
  char missing_msg[256], to_dir_msg[256];
  double back[5];
} io_result;

static void io_program(ty_runtime *rt, const char *tag, io_result *res) {
  char path[128];
  ty_store *r = NULL, *s0 = NULL, *one_row = NULL, *empty = NULL, *back = NULL;
  int64_t shape[2] = {301, 257}, row[2] = {1, 5}, none[1] = {0};
  CHECK(ty_random(rt, TY_F64, 2, shape, &r) == TY_OK);
  CHECK(ty_full(rt, TY_I32, 0, NULL, 7, &s0) == TY_OK);
  CHECK(ty_arange(rt, TY_F64, 1, 1, 5, &one_row) == TY_OK);
  ty_store *v = NULL;
  CHECK(ty_store_reshape(rt, one_row, 2, row, &v) == TY_OK);
  CHECK(ty_store_create(rt, TY_F32, 1, none, &empty) == TY_OK);
  const char *names[] = {"r", "s0", "row", "empty"};
  ty_store *all[] = {r, s0, v, empty};
  res->saved = TY_OK;
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/%s_%s.npy", save_dir, tag, names[i]);
    ty_status st = ty_save_npy(rt, path, all[i]);
    if (st) res->saved = st;
  }
  snprintf(path, sizeof path, "%s/%s_row.npy", save_dir, tag);
  CHECK(ty_load_npy(rt, path, &back) == TY_OK);
  CHECK(ty_store_read(rt, back, res->back, sizeof res->back) == TY_OK);
  ty_store *none_back = NULL;
  snprintf(path, sizeof path, "%s/no_such_file.npy", save_dir);
  res->missing = ty_load_npy(rt, path, &none_back);
  snprintf(res->missing_msg, sizeof res->missing_msg, "%s", ty_errmsg(rt));
  CHECK(none_back == NULL);
  res->to_dir = ty_save_npy(rt, save_dir, r);
  snprintf(res->to_dir_msg, sizeof res->to_dir_msg, "%s", ty_errmsg(rt));
  ty_store *rel[] = {r, s0, one_row, v, empty, back};
  for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) ty_store_release(rel[i]);
}

typedef struct io_rank {
  rank_ctx c;
  io_result res;
} io_rank;

static void *io_rank_main(void *arg) {
  io_rank *ir = arg;
  rank_ctx *c = &ir->c;
  ty_runtime *rt = NULL;
  c->st = ty_runtime_create(&(ty_config){.cpus = 2}, &rt);
  if (c->st) return NULL;
  ty_dist d = {.rank = c->rank, .nranks = c->w->nranks, .check = true, .min_elems = 1000,
               .ud = c, .allgatherv = fake_allgatherv, .bcast = fake_bcast, .abort = fake_abort,
               .write_at_all = fake_write_at_all};
  c->st = ty_set_dist(rt, &d);
  char tag[16];
  snprintf(tag, sizeof tag, "np%d", c->w->nranks);
  if (c->st == TY_OK) io_program(rt, tag, &ir->res);
  ty_runtime_destroy(rt);
  return NULL;
}

static bool same_file(const char *a, const char *b) {
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  bool same = fa && fb;
  for (int x = 0, y = 0; same && (x != EOF || y != EOF);) {
    x = fgetc(fa);
    y = fgetc(fb);
    same = x == y;
  }
  if (fa) fclose(fa);
  if (fb) fclose(fb);
  return same;
}

static void save_matches_one(int nranks) {
  snprintf(save_dir, sizeof save_dir, "/tmp/tycho-test-dist-%d", (int)getpid());
  mkdir(save_dir, 0700);
  io_result one = {0};
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&(ty_config){.cpus = 2}, &rt) == TY_OK);
  io_program(rt, "one", &one);
  ty_runtime_destroy(rt);
  CHECK_EQ_INT(one.saved, TY_OK);

  world w = {.nranks = nranks};
  pthread_barrier_init(&w.bar, NULL, (unsigned)nranks);
  io_rank ir[MAX_RANKS];
  pthread_t th[MAX_RANKS];
  for (int r = 0; r < nranks; r++) {
    ir[r] = (io_rank){.c = {.w = &w, .rank = r}};
    CHECK(pthread_create(&th[r], NULL, io_rank_main, &ir[r]) == 0);
  }
  for (int r = 0; r < nranks; r++) pthread_join(th[r], NULL);
  pthread_barrier_destroy(&w.bar);
  const char *names[] = {"r", "s0", "row", "empty"};
  for (int i = 0; i < 4; i++) {
    char a[128], b[128];
    snprintf(a, sizeof a, "%s/one_%s.npy", save_dir, names[i]);
    snprintf(b, sizeof b, "%s/np%d_%s.npy", save_dir, nranks, names[i]);
    CHECK(same_file(a, b)); /* byte for byte */
    unlink(b);
    unlink(a);
  }
  for (int r = 0; r < nranks; r++) {
    io_result *x = &ir[r].res;
    CHECK_EQ_INT(ir[r].c.st, TY_OK);
    CHECK_EQ_INT(x->saved, TY_OK);
    for (int k = 0; k < 5; k++) CHECK(x->back[k] == k + 1);
    /* every rank fails alike, with the message of one process */
    CHECK_EQ_INT(x->missing, one.missing);
    CHECK_EQ_INT(x->missing, TY_ENOTFOUND);
    CHECK(strcmp(x->missing_msg, one.missing_msg) == 0);
    CHECK_EQ_INT(x->to_dir, TY_EIO);
    CHECK(strcmp(x->to_dir_msg, one.to_dir_msg) == 0);
    CHECK_STR_CONTAINS(x->to_dir_msg, "it is a directory, not a regular file");
  }
  CHECK(rmdir(save_dir) == 0); /* no temporary file left behind */
}

TEST(dist_save_two_ranks_same_bytes) { save_matches_one(2); }
TEST(dist_save_three_ranks_same_bytes) { save_matches_one(3); }

/* ---- a rank out of memory for a wave's bookkeeping (exec.c's fallback) -------- */

enum { WAVE = 10 };

typedef struct oom_rank {
  rank_ctx c;
  bool arm;          /* fail this rank's wave bookkeeping */
  bool stopped;      /* its abort was called */
  char said[512];    /* the message it printed ("" when another rank prints) */
  double y[WAVE][3]; /* the first values of each launch's output */
  sem_t *done;       /* posted when the rank ends or stops */
} oom_rank;

/* The rank stops here, as MPI_Abort would stop it: it says it stopped and
 * waits for ever, so what it holds stays reachable (its thread lives until
 * the test process exits). */
static void oom_abort(void *ud, const char *msg) {
  oom_rank *o = ud;
  o->stopped = true;
  snprintf(o->said, sizeof o->said, "%s", msg ? msg : "");
  sem_post(o->done);
  for (;;) pause();
}

static int oom_allgatherv(void *ud, const void *mine, void *all, const size_t *counts,
                          const size_t *displs) {
  return fake_allgatherv(&((oom_rank *)ud)->c, mine, all, counts, displs);
}

static int oom_bcast(void *ud, void *buf, size_t bytes, int root) {
  return fake_bcast(&((oom_rank *)ud)->c, buf, bytes, root);
}

static void *oom_rank_main(void *arg) {
  oom_rank *o = arg;
  ty_config cfg = {.cpus = 2};
  CHECK(ty_policy_set(&cfg.policy, "fuse", "false", NULL, 0) == TY_OK); /* ten launches, not one */
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&cfg, &rt) == TY_OK);
  ty_dist d = {.rank = o->c.rank, .nranks = o->c.w->nranks, .check = true, .min_elems = 1000,
               .ud = o, .allgatherv = oom_allgatherv, .bcast = oom_bcast, .abort = oom_abort};
  CHECK(ty_set_dist(rt, &d) == TY_OK);
  ty_store *x = NULL, *y[WAVE];
  CHECK(ty_arange(rt, TY_F64, 0, 1, N, &x) == TY_OK);
  CHECK(ty_flush(rt) == TY_OK); /* x exists: the next wave allocates only its outputs */
  /* WAVE independent launches over x: one wave, more than exec.c keeps on its stack */
  const ty_op ops[WAVE] = {TY_OP_SIN, TY_OP_COS, TY_OP_EXP, TY_OP_SQRT, TY_OP_TANH,
                           TY_OP_NEG, TY_OP_ABS, TY_OP_EXP2, TY_OP_LOG1P, TY_OP_ARCTAN};
  for (int i = 0; i < WAVE; i++) CHECK(ty_unary(rt, ops[i], x, &y[i]) == TY_OK);
  if (o->arm) ty_fault_fail_alloc_here(8 * 1024); /* the wave's prepared launches: 20 KiB */
  CHECK(ty_flush(rt) == TY_OK);
  ty_fault_fail_alloc_here(0);
  for (int i = 0; i < WAVE; i++) {
    ty_store *head = NULL;
    CHECK(ty_store_slice(rt, y[i], 0, 0, 3, 1, &head) == TY_OK);
    CHECK(ty_store_read(rt, head, o->y[i], sizeof o->y[i]) == TY_OK);
    ty_store_release(head);
    ty_store_release(y[i]);
  }
  ty_store_release(x);
  ty_runtime_destroy(rt);
  sem_post(o->done);
  return NULL;
}

static oom_rank oom[MAX_RANKS];

/* Run the ranks until each ended or stopped; the stopped ones are left
 * waiting (joined: the ones that ended). */
static void run_oom(int nranks, const bool *arm) {
  static world w;
  static sem_t done;
  w = (world){.nranks = nranks};
  pthread_barrier_init(&w.bar, NULL, (unsigned)nranks);
  sem_init(&done, 0, 0);
  pthread_t th[MAX_RANKS];
  for (int r = 0; r < nranks; r++) {
    oom[r] = (oom_rank){.c = {.w = &w, .rank = r}, .arm = arm[r], .done = &done};
    CHECK(pthread_create(&th[r], NULL, oom_rank_main, &oom[r]) == 0);
  }
  for (int r = 0; r < nranks; r++) sem_wait(&done);
  for (int r = 0; r < nranks; r++)
    if (!oom[r].stopped) pthread_join(th[r], NULL);
    else pthread_detach(th[r]);
}

/* One rank could not hold the wave: every rank stops, that rank saying why,
 * instead of the others waiting in the vote for ever. */
TEST(dist_one_rank_out_of_memory_for_a_wave_stops_all) {
  run_oom(2, (bool[]){false, true});
  CHECK(oom[0].stopped && oom[1].stopped);
  CHECK(oom[0].said[0] == 0); /* rank 1 prints, once */
  CHECK_STR_CONTAINS(oom[1].said, "rank 1: launch #");
  CHECK_STR_CONTAINS(oom[1].said,
                     "could not start: out of memory for the bookkeeping of a wave of 10 launches");
}

/* Every rank refused the wave: all run it one launch at a time, whole, and
 * get the values of one process. */
TEST(dist_every_rank_out_of_memory_for_a_wave_goes_on) {
  long failed = ty_fault_failures();
  run_oom(2, (bool[]){true, true});
  CHECK_EQ_INT(ty_fault_failures() - failed, 2); /* each rank's wave bookkeeping */
  for (int r = 0; r < 2; r++) {
    CHECK(!oom[r].stopped);
    CHECK_NEAR(oom[r].y[0][1], sin(1.0), 1e-12);
    CHECK_NEAR(oom[r].y[1][2], cos(2.0), 1e-12);
    CHECK_NEAR(oom[r].y[7][2], 4.0, 1e-12);
    CHECK(memcmp(oom[r].y, oom[0].y, sizeof oom[0].y) == 0);
  }
}

/* ---- a failed halo exchange (dist_overlap.c) ----------------------------------- */

typedef struct failed_rank {
  rank_ctx c; /* first: the fake transport's ud */
  bool stopped;
  char said[256];
  sem_t *done;
} failed_rank;

/* As oom_abort: the rank says what it printed and waits for ever. */
static void failed_abort(void *ud, const char *msg) {
  failed_rank *f = ud;
  f->stopped = true;
  snprintf(f->said, sizeof f->said, "%s", msg ? msg : "");
  sem_post(f->done);
  for (;;) pause();
}

static void *failed_rank_main(void *arg) {
  failed_rank *f = arg;
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&(ty_config){.cpus = 2}, &rt) == TY_OK);
  ty_dist d = {.rank = f->c.rank, .nranks = f->c.w->nranks, .check = true, .min_elems = 1000,
               .ud = &f->c, .allgatherv = fake_allgatherv, .bcast = fake_bcast,
               .abort = failed_abort, .alltoallv = fake_alltoallv,
               .ialltoallv = fake_ialltoallv, .wait = fake_wait};
  CHECK(ty_set_dist(rt, &d) == TY_OK);
  smoother(rt, &f->c);
  ty_runtime_destroy(rt);
  sem_post(f->done);
  return NULL;
}

/* The smoother on 2 ranks whose transport fails in the first halo
 * exchange, when posting it or in its wait: every rank stops, saying so. */
static void run_failed(world *w, failed_rank *f, int post, int wait) {
  static sem_t done;
  *w = (world){.nranks = 2, .nonblocking = true, .fail_post = post, .fail_wait = wait};
  pthread_barrier_init(&w->bar, NULL, 2);
  sem_init(&done, 0, 0);
  pthread_t th[2];
  for (int r = 0; r < 2; r++) {
    f[r] = (failed_rank){.c = {.w = w, .rank = r, .z = calloc(N, sizeof(double)), .prog = smoother},
                         .done = &done};
    CHECK(pthread_create(&th[r], NULL, failed_rank_main, &f[r]) == 0);
  }
  for (int r = 0; r < 2; r++) sem_wait(&done);
  for (int r = 0; r < 2; r++)
    if (!f[r].stopped) pthread_join(th[r], NULL);
    else pthread_detach(th[r]);
}

TEST(dist_failed_halo_exchange_stops_every_rank) {
  static world w[2];
  static failed_rank posted[2], waited[2];
  run_failed(&w[0], posted, 1, 0);
  run_failed(&w[1], waited, 0, 1);
  CHECK(posted[0].stopped && posted[1].stopped && waited[0].stopped && waited[1].stopped);
  CHECK_STR_CONTAINS(posted[0].said, "rank 0: the transport failed (posting the halo exchange)");
  CHECK_STR_CONTAINS(posted[1].said, "rank 1: the transport failed (posting the halo exchange)");
  CHECK_STR_CONTAINS(waited[0].said, "rank 0: the transport failed (halo exchange)");
  CHECK_STR_CONTAINS(waited[1].said, "rank 1: the transport failed (halo exchange)");
}

TEST(dist_set_checks_the_nonblocking_pair) {
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&(ty_config){.cpus = 1}, &rt) == TY_OK);
  ty_dist d = {.rank = 0, .nranks = 2, .allgatherv = fake_allgatherv, .bcast = fake_bcast,
               .abort = fake_abort, .alltoallv = fake_alltoallv, .ialltoallv = fake_ialltoallv};
  CHECK_EQ_INT(ty_set_dist(rt, &d), TY_EINVAL); /* no wait */
  CHECK_STR_CONTAINS(ty_errmsg(rt), "ty_set_dist: ialltoallv and wait go together, with alltoallv");
  d.wait = fake_wait, d.alltoallv = NULL;
  CHECK_EQ_INT(ty_set_dist(rt, &d), TY_EINVAL); /* no alltoallv */
  d.alltoallv = fake_alltoallv;
  CHECK_EQ_INT(ty_set_dist(rt, &d), TY_OK);
  ty_runtime_destroy(rt);
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CASE(dist_two_ranks_match_one_process),
      CASE(dist_three_ranks_match_one_process),
      CASE(dist_set_checks_its_table),
      CASE(dist_fused_failure_keeps_independent_results),
      CASE(dist_save_two_ranks_same_bytes),
      CASE(dist_save_three_ranks_same_bytes),
      CASE(dist_one_rank_out_of_memory_for_a_wave_stops_all),
      CASE(dist_every_rank_out_of_memory_for_a_wave_goes_on),
      CASE(dist_split_stores_two_ranks),
      CASE(dist_split_stores_three_ranks),
      CASE(dist_split_stores_overlapped_two_ranks),
      CASE(dist_split_stores_overlapped_three_ranks),
      CASE(dist_failed_halo_exchange_stops_every_rank),
      CASE(dist_set_checks_the_nonblocking_pair),
  };
  return check_run(argc, argv, cases, sizeof cases / sizeof *cases);
}
