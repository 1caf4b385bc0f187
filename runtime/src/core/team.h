/* team.h — tycho's own team of worker threads (core/team.c).
 *
 * The executor runs the pieces of a wave on a team: the calling thread is
 * worker 0, and threads 1..n-1 persist between waves. A waiting worker
 * spins for a short, bounded time, giving its core away (sched_yield) at
 * every turn, then sleeps on a futex. On an idle machine the next wave
 * finds it awake; on a machine shared with other work it never holds a
 * core it does not use (docs/internals.md, "The worker team"). */
#ifndef TY_TEAM_H
#define TY_TEAM_H

#include <stdbool.h>
#include <stdint.h>

typedef struct ty_team ty_team;

/* One item of a team job: item `item` of the job, run by `worker`. */
typedef void (*ty_team_fn)(void *arg, int64_t item, int worker);

/* A team of up to `threads` workers (the caller included); threads start
 * on first use and call thread_start (when not NULL) first: per-thread
 * settings such as single-threaded BLAS. NULL when out of memory. spin_us:
 * how long a waiting worker stays awake before it sleeps (< 0: the
 * default, ty__team_default_spin). */
ty_team *ty__team_new(int threads, int spin_us, void (*thread_start)(void));
void ty__team_free(ty_team *t);

/* Runs fn(arg, i, worker) for every i in [0, n) on min(threads, n) workers
 * and returns when all have run. fixed (n <= threads): item i runs on worker
 * i. Affine (not fixed, n <= threads, n <= 64): item i is worker i's, so
 * the pieces of successive waves with the same split stay on the core that
 * holds their data; item 0 runs on the caller; a worker that is asleep or
 * descheduled has its item run by another (the caller included), and one
 * on its core that has not claimed it within a few microseconds after the
 * caller's own item by the caller (team.c, AFFINE_WAIT_US). Otherwise a worker takes
 * the next item whenever it is free, and a worker that wakes after the last
 * item was taken stays out. Inside a team job (a piece that starts a job of
 * its own) the items run in the caller. */
void ty__team_for(ty_team *t, int threads, int64_t n, bool fixed, ty_team_fn fn, void *arg);

/* The calling thread's worker number inside a team job; -1 outside one. */
int ty__team_worker(void);

/* The spin time a team uses when the caller passes spin_us < 0:
 * TYCHO_SPIN_US from the environment, else the default (team.c). */
int ty__team_default_spin(void);

/* The processors this process may run on (its affinity mask; the online
 * ones where that cannot be read), counted once. */
int ty__usable_cpus(void);
/* Tests only (test_codegen_async.c): when > 0, what ty__usable_cpus says. */
extern int ty__usable_cpus_test;

#endif
