/*
 * mpi.c — the `tycho` program under mpirun (docs/mpi.md): MPI is the
 * transport of a run on several processes (tycho/dist.h).
 *
 * Built only with MPI (TYCHO_MPI); linked into the `tycho` executable, not
 * into libtycho_repl, so host applications and the library link no MPI.
 * One binary runs with or without a launcher: MPI is initialised only when
 * the environment shows one (Open MPI's OMPI_COMM_WORLD_SIZE, the PMI and
 * PMIx variables of MPICH's hydra and of Slurm's srun); otherwise this is
 * the plain shell. Rules:
 *  - MPI_THREAD_FUNNELED: only the thread that drives the runtime (the one
 *    that flushes) calls MPI; pieces run on OpenMP workers that never do.
 *  - `print` writes from rank 0 only (TYCHO_MPI_PRINT=all: every rank). The
 *    other ranks still convert the arguments to strings (tostring may read
 *    stores, which flushes), so every rank makes the same launches.
 *  - An error is printed once. Errors are held until the shell ends; the
 *    failing ranks then wait up to WAIT_S seconds for each other
 *    (MPI_Ibarrier): if every rank failed (the same script error
 *    everywhere), rank 0 prints its message and all exit with status 1;
 *    otherwise (an error on some ranks only, the others blocked or done)
 *    each failing rank prints its message, "rank R:" first, and MPI_Abort
 *    stops the job.
 */
#include "shell.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>

#include "tycho/dist.h"
#include "tycho_repl.h"

#define WAIT_S 3                   /* failing ranks wait this long for the others */
#define CHUNK ((size_t)1 << 30)    /* bytes per rank per collective call (MPI counts are int) */

static int rank, nranks;
static char *held; /* this rank's error messages, printed at the end by one rank */

static int mpi_allgatherv(void *ud, const void *mine, void *all, const size_t *counts,
                          const size_t *displs) {
  (void)ud;
  int rc[nranks], rd[nranks];
  size_t total = 0;
  for (int r = 0; r < nranks; r++) total = displs[r] + counts[r] > total ? displs[r] + counts[r] : total;
  if (total <= (size_t)INT32_MAX) {
    for (int r = 0; r < nranks; r++) rc[r] = (int)counts[r], rd[r] = (int)displs[r];
    return MPI_Allgatherv(mine, rc[rank], MPI_BYTE, all, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
  }
  /* large: rounds of at most CHUNK bytes per rank through a staging buffer */
  char *stage = malloc(CHUNK * (size_t)nranks);
  if (!stage) return 1;
  int err = 0;
  for (size_t off = 0;; off += CHUNK) {
    int any = 0, pos = 0;
    for (int r = 0; r < nranks; r++) {
      size_t left = counts[r] > off ? counts[r] - off : 0;
      rc[r] = (int)(left < CHUNK ? left : CHUNK);
      rd[r] = pos;
      pos += rc[r];
      any |= rc[r] > 0;
    }
    if (!any) break;
    err = MPI_Allgatherv((const char *)mine + (rc[rank] ? off : 0), rc[rank], MPI_BYTE, stage, rc,
                         rd, MPI_BYTE, MPI_COMM_WORLD);
    if (err) break;
    for (int r = 0; r < nranks; r++)
      if (rc[r]) memcpy((char *)all + displs[r] + off, stage + rd[r], (size_t)rc[r]);
  }
  free(stage);
  return err;
}

static int mpi_bcast(void *ud, void *buf, size_t bytes, int root) {
  (void)ud;
  for (size_t off = 0; off < bytes; off += CHUNK) {
    size_t n = bytes - off < CHUNK ? bytes - off : CHUNK;
    int err = MPI_Bcast((char *)buf + off, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
    if (err) return err;
  }
  return 0;
}

/* MPI-IO: every rank writes its part of an existing file. Every rank makes
 * the same collective calls whatever fails: the open's outcome and the
 * largest part are agreed first, the parts go in rounds of at most CHUNK
 * bytes (as many on every rank), then sync and close. */
static int mpi_write_at_all(void *ud, const char *path, uint64_t off, const void *part, size_t n,
                            char *err, size_t errlen) {
  (void)ud;
  MPI_File fh = MPI_FILE_NULL;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  unsigned long long mine[2] = {n, rc != MPI_SUCCESS}, most[2] = {0, 1};
  int arc = MPI_Allreduce(mine, most, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  if (rc == MPI_SUCCESS) rc = arc;
  if (rc == MPI_SUCCESS && most[1]) rc = MPI_ERR_FILE; /* another rank could not open it */
  if (arc == MPI_SUCCESS && !most[1]) {
    for (size_t done = 0; done < most[0]; done += CHUNK) {
      size_t k = done < n ? (n - done < CHUNK ? n - done : CHUNK) : 0;
      int wrc = MPI_File_write_at_all(fh, (MPI_Offset)(off + (k ? done : 0)),
                                      k ? (const char *)part + done : part, (int)k, MPI_BYTE,
                                      MPI_STATUS_IGNORE);
      if (rc == MPI_SUCCESS) rc = wrc;
    }
    int src = MPI_File_sync(fh);
    if (rc == MPI_SUCCESS) rc = src;
  }
  if (fh != MPI_FILE_NULL) {
    int crc = MPI_File_close(&fh);
    if (rc == MPI_SUCCESS) rc = crc;
  }
  if (rc != MPI_SUCCESS) {
    int len = 0;
    char text[MPI_MAX_ERROR_STRING];
    MPI_Error_string(rc, text, &len);
    snprintf(err, errlen, "%s", text);
  }
  return rc != MPI_SUCCESS;
}

/* An exchange in flight: its requests and their statuses (statuses of our
 * own: MPICH's MPI_STATUSES_IGNORE is an address GCC's -Wstringop-overflow
 * takes for a zero-length array). */
typedef struct exchange {
  int n;
  MPI_Request *req;
  MPI_Status *sts;
} exchange;

static void free_exchange(exchange *x) {
  free(x->req), free(x->sts), free(x);
}

/* point to point: a message per rank with bytes for it (in rounds of
 * CHUNK), all posted before any is waited for; mpi_wait waits */
static int mpi_ialltoallv(void *ud, const void *send, const size_t *scounts, const size_t *sdispls,
                          void *recv, const size_t *rcounts, const size_t *rdispls, void **out) {
  (void)ud;
  size_t nreq = 0;
  for (int r = 0; r < nranks; r++) nreq += (scounts[r] + CHUNK - 1) / CHUNK + (rcounts[r] + CHUNK - 1) / CHUNK;
  exchange *x = calloc(1, sizeof *x);
  if (x) x->req = malloc((nreq ? nreq : 1) * sizeof *x->req);
  if (x) x->sts = malloc((nreq ? nreq : 1) * sizeof *x->sts);
  if (!x || !x->req || !x->sts) {
    if (x) free_exchange(x);
    return 1;
  }
  int err = 0;
  for (int r = 0; r < nranks && !err; r++)
    for (size_t off = 0; off < rcounts[r] && !err; off += CHUNK)
      err = MPI_Irecv((char *)recv + rdispls[r] + off, (int)(rcounts[r] - off < CHUNK ? rcounts[r] - off : CHUNK),
                      MPI_BYTE, r, 7, MPI_COMM_WORLD, &x->req[x->n++]);
  for (int r = 0; r < nranks && !err; r++)
    for (size_t off = 0; off < scounts[r] && !err; off += CHUNK)
      err = MPI_Isend((const char *)send + sdispls[r] + off,
                      (int)(scounts[r] - off < CHUNK ? scounts[r] - off : CHUNK), MPI_BYTE, r, 7,
                      MPI_COMM_WORLD, &x->req[x->n++]);
  if (err) {
    free_exchange(x);
    return err;
  }
  *out = x;
  return 0;
}

static int mpi_wait(void *ud, void *req) {
  (void)ud;
  exchange *x = req;
  int err = MPI_Waitall(x->n, x->req, x->sts);
  free_exchange(x);
  return err;
}

static int mpi_alltoallv(void *ud, const void *send, const size_t *scounts, const size_t *sdispls,
                         void *recv, const size_t *rcounts, const size_t *rdispls) {
  void *x = NULL;
  int err = mpi_ialltoallv(ud, send, scounts, sdispls, recv, rcounts, rdispls, &x);
  return err ? err : mpi_wait(ud, x);
}

/* Before MPI_Abort: what this rank wrote reaches the launcher. MPI_Abort
 * kills the job at once, and a launcher that forwards output through pipes
 * (MPICH's hydra) dropped a message written just before it (seen in CI:
 * both streams empty); a buffered stdout would be lost too. */
static void before_abort(void) {
  fflush(stdout);
  fflush(stderr);
  usleep(200000);
}

static void mpi_abort(void *ud, const char *msg) {
  (void)ud;
  if (msg) {
    fprintf(stderr, SHELL_PROGNAME ": %s\n", msg);
    before_abort();
  } else {
    fflush(stdout);
    sleep(10); /* the rank that prints stops the job meanwhile */
  }
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1); /* not reached */
}

/* os.exit on several ranks: the end of the script is a check point
 * (ty_dist_finish) before the state may close (os.exit(code, true)); then
 * Lua's os.exit, whose exit() finalizes MPI (finalize_at_exit). */
static int mpi_os_exit(lua_State *L) {
  ty_runtime *rt = shell_runtime();
  if (rt) ty_dist_finish(rt);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 0);
  return 0;
}

/* print on ranks but 0: the same conversions, no output */
static int quiet_print(lua_State *L) {
  int n = lua_gettop(L);
  for (int i = 1; i <= n; i++) {
    luaL_tolstring(L, i, NULL);
    lua_pop(L, 1);
  }
  return 0;
}

static int setup(lua_State *L, ty_runtime *rt, void *ud) {
  (void)ud;
  const char *check = getenv("TYCHO_MPI_CHECK");
  const char *min = getenv("TYCHO_MPI_MIN_ELEMS");
  const char *repl = getenv("TYCHO_MPI_REPLICATED");
  ty_dist d = {
      .rank = rank,
      .nranks = nranks,
      .check = check && *check && strcmp(check, "0") != 0,
      .min_elems = min && *min ? strtoll(min, NULL, 10) : 0,
      .replicated = repl && *repl && strcmp(repl, "0") != 0,
      .allgatherv = mpi_allgatherv,
      .bcast = mpi_bcast,
      .abort = mpi_abort,
      .write_at_all = mpi_write_at_all,
      .alltoallv = mpi_alltoallv,
      .ialltoallv = mpi_ialltoallv,
      .wait = mpi_wait,
  };
  if (min && *min && d.min_elems < 1) {
    shell_message("TYCHO_MPI_MIN_ELEMS: expected a positive number of elements");
    return 1;
  }
  const char *overlap = getenv("TYCHO_MPI_OVERLAP");
  if (overlap && *overlap && strcmp(overlap, "1") != 0 && strcmp(overlap, "0") != 0) {
    shell_message("TYCHO_MPI_OVERLAP: expected '0' or '1'");
    return 1;
  }
  if (overlap && strcmp(overlap, "0") == 0) d.ialltoallv = NULL, d.wait = NULL; /* blocking */
  if (ty_set_dist(rt, &d) != TY_OK) {
    shell_message(ty_errmsg(rt));
    return 1;
  }
  const char *print = getenv("TYCHO_MPI_PRINT");
  if (print && *print && strcmp(print, "all") != 0 && strcmp(print, "0") != 0) {
    shell_message("TYCHO_MPI_PRINT: expected 'all' or '0'");
    return 1;
  }
  if (lua_getglobal(L, "os") == LUA_TTABLE) { /* os.exit: a check point first */
    if (lua_getfield(L, -1, "exit") == LUA_TFUNCTION) {
      lua_pushcclosure(L, mpi_os_exit, 1);
      lua_setfield(L, -2, "exit");
    } else {
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  if (rank != 0 && !(print && strcmp(print, "all") == 0)) {
    lua_pushcfunction(L, quiet_print);
    lua_setglobal(L, "print");
  }
  return 0;
}

static void hold(const char *msg) {
  size_t had = held ? strlen(held) : 0, n = strlen(msg);
  char *m = realloc(held, had + n + 2);
  if (!m) return;
  memcpy(m + had, msg, n);
  m[had + n] = '\n';
  m[had + n + 1] = 0;
  held = m;
}

static void print_held(bool with_rank) {
  if (!held) return;
  if (with_rank) fprintf(stderr, SHELL_PROGNAME ": rank %d: %s", rank, held);
  else fprintf(stderr, SHELL_PROGNAME ": %s", held);
  fflush(stderr);
}

/* A launcher started this process: its variables are there. */
static bool launched(void) {
  static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
    if (getenv(vars[i])) return true;
  return false;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* exit() before the end of ty_mpi_main (the script's os.exit): finalize
 * MPI, so the job ends with the script's status and no complaint. Every
 * rank must call os.exit, as every rank makes every tycho call (in check
 * mode mpi_os_exit makes it a check point). */
static void finalize_at_exit(void) {
  int done = 1;
  if (MPI_Finalized(&done) == MPI_SUCCESS && !done) {
    fflush(stdout);
    MPI_Finalize();
  }
}

int ty_mpi_main(int argc, char **argv) {
  if (!launched()) return ty_shell_main(argc, argv, NULL, NULL);
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, SHELL_PROGNAME ": MPI_Init_thread failed\n");
    return EXIT_FAILURE;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  atexit(finalize_at_exit);
  shell_set_ranks(rank, nranks);
  if (nranks > 1) shell_set_message_hook(hold);
  int status = ty_shell_main(argc, argv, nranks > 1 ? setup : NULL, NULL);
  shell_set_message_hook(NULL);
  if (status == EXIT_SUCCESS && !held) {
    MPI_Finalize();
    return status;
  }
  /* failed: did every rank? */
  MPI_Request req;
  int done = 0;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  for (double t0 = now(); !done && now() - t0 < WAIT_S;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (!done) usleep(1000);
  }
  if (done) {
    if (rank == 0) print_held(false);
    free(held);
    MPI_Finalize();
    return status == EXIT_SUCCESS ? EXIT_FAILURE : status;
  }
  print_held(true);
  free(held);
  before_abort();
  MPI_Abort(MPI_COMM_WORLD, status == EXIT_SUCCESS ? EXIT_FAILURE : status);
  return EXIT_FAILURE;
}
