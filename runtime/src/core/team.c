/* team.c — the executor's worker threads (see team.h).
 *
 * One job at a time. The caller publishes the job while the team is
 * closed, opens it, bumps `gen` and wakes sleepers. A worker joins a job by
 * adding itself to `state` while its OPEN bit is set, and reads the job only
 * after it joined; the caller, when its own share is done, clears OPEN and
 * waits until every joined worker has left. So a worker that wakes late
 * either joins in time or stays out, and never reads a job being rewritten.
 *
 * Waiting (a worker for the next job, the caller for the last worker):
 * check, pause, and every few turns sched_yield(), for at most spin_us
 * microseconds; then sleep on a futex. sched_yield() is what keeps a shared
 * machine usable: on an idle core it returns at once, so a spinning worker
 * still catches the next wave within a microsecond or two; on a core other
 * processes want, it hands the core over, and a yield that comes back late
 * (another process ran) ends the spin: the thread sleeps. libgomp's default spin (no yield,
 * ~300,000 turns) made CG on 65K unknowns 25x slower beside other work
 * (README, "On a machine shared with other work").
 *
 * Affine jobs (as many items as workers: a wave of pieces == processors)
 * give item k to worker k, claimed once per job through the `taken` bits.
 * Successive waves split the same way (key partitions, ordered halves), so
 * piece k reads what piece k wrote, in its own core's L2: at cg 256^2 a
 * piece that changed cores made the next update 2.5x slower. Dynamic
 * claiming let a spinning worker take piece 0 first in ~5% of waves on an
 * idle machine, swapping both halves. Item 0 is the caller's. After its own
 * item a worker takes the items of workers asleep or descheduled (their
 * beat is stale) at once; the caller also takes, after AFFINE_WAIT_US,
 * those of workers on their cores that have not claimed them. */
#define _GNU_SOURCE
#include "team.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

enum { OPEN = 1u << 31 };

/* How long a waiting thread stays awake (microseconds): long enough to
 * span the gap between the waves of one flush and between the flushes of a
 * small-launch loop, short enough not to matter beside other work (the
 * measurements are in bench/README.md, "The worker team"). */
enum { DEFAULT_SPIN_US = 200 };

/* A sched_yield() that took longer than this ran another process: the core
 * is wanted, and the waiting thread goes to sleep at once. An idle core
 * returns from it in a microsecond or two. */
enum { BUSY_YIELD_US = 50 };

/* Beside busy processes one late yield per wait was not enough: every wait
 * still spun until its yield came back late, and CG 65K (bench/loaded,
 * session 18) took 0.13-0.21 s a step by default against 0.03-0.07 s with
 * TYCHO_SPIN_US=0. So BUSY_EVENTS late yields of the team, each within
 * BUSY_WINDOW_US of the one before, make every wait sleep at once for the
 * next BUSY_HOLD_US. Beside 2 busy processes ~8% of the waits' yields came
 * back late (one every ~3 ms); on the idle machine 13 of 32,000 (one every
 * ~25 ms, the VM's own interruptions), which one late yield alone would
 * turn into slower waves for most of the run. */
enum { BUSY_EVENTS = 3, BUSY_WINDOW_US = 10000, BUSY_HOLD_US = 20000 };

/* Beside processes that stay busy, every hold ended in a spin that had to
 * find the load again: three late yields, each a time slice of the other
 * process (1.4 ms a yield beside a busy loop on the Zen 4's kernel 6.18),
 * every 20 ms. So a hold that begins within BUSY_REARM_US of the end of the
 * last one is twice as long, up to BUSY_HOLD_MAX_US; one that begins later
 * is BUSY_HOLD_US again. An idle machine's rare late yields (the VM's own
 * interruptions) never come three to a window twice in a row. */
enum { BUSY_REARM_US = 20000, BUSY_HOLD_MAX_US = 640000 };

/* How long the caller waits for an awake worker to claim its item of an
 * affine job before it runs the item itself. A worker on its core claims
 * within a microsecond or two of the job's publication, long before the
 * caller's own item is done; one that has not claimed by then was
 * descheduled (or is in its yield). Waiting is cheaper than moving the item:
 * the next wave's piece k reads what piece k wrote, and 256 KiB written on
 * the other core cost 2.5x to update (13k -> 32k cycles, bench/README.md
 * "cg 65K kernels on 2 processors: session 17"). */
enum { AFFINE_WAIT_US = 10 };

/* A worker whose beat (stamped every 32 checks of its spin, ~2 us on its
 * core, and cleared while it yields) is older than this was descheduled. */
enum { BEAT_STALE_US = 8 };

typedef struct job {
  ty_team_fn fn;
  void *arg;
  int64_t n;
  int threads; /* workers 0..threads-1 take part */
  bool fixed;
  bool affine; /* one item a worker: item k is worker k's (see ty__team_for) */
  uint32_t gen;
} job;

typedef struct worker_start {
  struct ty_team *team;
  int index;
  uint32_t gen0; /* the gen before the job it was started for */
} worker_start;

struct ty_team {
  int cap;     /* workers the team may have, the caller included */
  void (*thread_start)(void);
  int started; /* threads running: workers 1..started */
  int spin_us;
  pthread_t *threads;
  worker_start *starts;
  _Atomic uint32_t gen;      /* bumped once per job; workers sleep on it */
  _Atomic uint32_t sleepers; /* workers asleep on gen */
  _Atomic uint32_t state;    /* OPEN | the number of workers inside the job */
  _Atomic uint32_t done;     /* fixed jobs: items the workers finished */
  _Atomic int64_t next;      /* the next item to take */
  _Atomic uint32_t *claimed; /* fixed jobs: the gen in which worker k last ran its item */
  _Atomic uint32_t *asleep;  /* worker k sleeps on the futex (or has not started) */
  _Atomic int64_t *beat;     /* worker k's last sign of being on its core (now_us) */
  _Atomic uint64_t taken;    /* affine jobs: bit k, item k was claimed */
  _Atomic bool quit;
  _Atomic int64_t busy_last;  /* now_us of the team's last late yield */
  _Atomic int busy_events;    /* late yields in a row, each within BUSY_WINDOW_US */
  _Atomic int64_t busy_until; /* waits before this now_us sleep at once */
  _Atomic int64_t busy_hold;  /* the last hold's length (0: none yet) */
  job job; /* written while the team is closed and empty */
};

static _Thread_local int tl_worker = -1;

int ty__team_worker(void) { return tl_worker; }

int ty__team_default_spin(void) {
  const char *s = getenv("TYCHO_SPIN_US");
  if (s && *s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*end == 0 && v >= 0 && v <= 1000000) return (int)v;
  }
  return DEFAULT_SPIN_US;
}

int ty__usable_cpus_test;

int ty__usable_cpus(void) {
  static int cached; /* 0: not counted yet; racing threads count the same */
  if (ty__usable_cpus_test > 0) return ty__usable_cpus_test;
  int n = __atomic_load_n(&cached, __ATOMIC_RELAXED);
  if (n > 0) return n;
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
  if (n < 1) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
#endif
  if (n < 1) n = 1;
  __atomic_store_n(&cached, n, __ATOMIC_RELAXED);
  return n;
}

static void futex_wait(_Atomic uint32_t *word, uint32_t seen) {
#ifdef __linux__
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
#else
  (void)word, (void)seen;
  sched_yield();
#endif
}

static void futex_wake(_Atomic uint32_t *word, int count) {
#ifdef __linux__
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
#else
  (void)word, (void)count;
#endif
}

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* Whether job number a comes after b (gens wrap around). */
static bool after(uint32_t a, uint32_t b) { return (int32_t)(a - b) > 0; }

/* Spins (yielding) until *word comes after v or (when want_eq) *word == v,
 * for at most spin_us. True when the condition holds. A worker's spin
 * stamps *beat every 32 checks (a few microseconds on its core) and clears
 * it while it yields. */
/* A yield of the team came back late at `back`: counts towards the hold. */
static void note_busy(ty_team *t, double back) {
  const int64_t b = (int64_t)back;
  const int64_t prev = atomic_exchange_explicit(&t->busy_last, b, memory_order_relaxed);
  int n = b - prev <= BUSY_WINDOW_US ? atomic_fetch_add_explicit(&t->busy_events, 1, memory_order_relaxed) + 1 : 1;
  if (n == 1) atomic_store_explicit(&t->busy_events, 1, memory_order_relaxed);
  if (n >= BUSY_EVENTS) {
    const int64_t last_end = atomic_load_explicit(&t->busy_until, memory_order_relaxed);
    int64_t hold = atomic_load_explicit(&t->busy_hold, memory_order_relaxed);
    hold = hold > 0 && b - last_end <= BUSY_REARM_US ? hold * 2 : BUSY_HOLD_US;
    if (hold > BUSY_HOLD_MAX_US) hold = BUSY_HOLD_MAX_US;
    atomic_store_explicit(&t->busy_hold, hold, memory_order_relaxed);
    atomic_store_explicit(&t->busy_until, b + hold, memory_order_relaxed);
    atomic_store_explicit(&t->busy_events, 0, memory_order_relaxed);
  }
}

static bool spin(ty_team *t, _Atomic uint32_t *word, uint32_t v, bool want_eq,
                 _Atomic int64_t *beat) {
  double deadline = -1;
  for (;;) {
    for (int i = 0; i < 32; i++) {
      uint32_t cur = atomic_load_explicit(word, memory_order_acquire);
      if (want_eq ? cur == v : after(cur, v)) return true;
      relax();
    }
    double t_now = now_us();
    if (beat) atomic_store_explicit(beat, (int64_t)t_now, memory_order_relaxed);
    if (deadline < 0) {
      deadline = t_now + t->spin_us;
      if (t_now < (double)atomic_load_explicit(&t->busy_until, memory_order_relaxed)) return false;
    }
    if (t_now >= deadline) return false;
    /* inside the yield another process may run: not on its core then */
    if (beat) atomic_store_explicit(beat, 0, memory_order_relaxed);
    sched_yield();
    double back = now_us();
    if (beat) atomic_store_explicit(beat, (int64_t)back, memory_order_relaxed);
    /* another process ran meanwhile: the core is wanted, stop spinning */
    if (back - t_now > BUSY_YIELD_US) {
      note_busy(t, back);
      return false;
    }
  }
}

/* The caller's wait: until *word == want. The last worker to make it so
 * wakes the caller. */
static void wait_equal(ty_team *t, _Atomic uint32_t *word, uint32_t want) {
  if (spin(t, word, want, true, NULL)) return;
  for (;;) {
    uint32_t v = atomic_load(word);
    if (v == want) return;
    futex_wait(word, v);
  }
}

/* A worker's wait for a job after gen `seen`; returns the new gen. `seen`
 * may be one ahead of t->gen: the caller opens a job before it bumps gen, so
 * a worker can join it (and take its gen) first. Waiting for a gen that
 * comes after, not for any other gen, keeps that worker from joining the
 * same job again. */
static uint32_t wait_job(ty_team *t, int me, uint32_t seen) {
  if (!spin(t, &t->gen, seen, false, &t->beat[me])) {
    atomic_store(&t->asleep[me], 1);
    atomic_fetch_add(&t->sleepers, 1);
    for (;;) {
      uint32_t g = atomic_load(&t->gen);
      if (after(g, seen)) break;
      futex_wait(&t->gen, g);
    }
    atomic_fetch_sub(&t->sleepers, 1);
    atomic_store_explicit(&t->beat[me], (int64_t)now_us(), memory_order_relaxed);
    atomic_store(&t->asleep[me], 0);
  }
  return atomic_load(&t->gen);
}

/* Claims item k of an affine job; true for the one claimer. */
static bool claim(ty_team *t, int64_t k) {
  const uint64_t bit = UINT64_C(1) << k;
  return !(atomic_fetch_or_explicit(&t->taken, bit, memory_order_acq_rel) & bit);
}

/* Whether worker k is on its core now: awake, and stamped its beat within
 * BEAT_STALE_US. One the OS has descheduled stops stamping. */
static bool on_core(const ty_team *t, int64_t k, double t_now) {
  return !atomic_load(&t->asleep[k]) &&
         t_now - (double)atomic_load_explicit(&t->beat[k], memory_order_relaxed) < BEAT_STALE_US;
}

/* After its own item, a worker's share of an affine job: the items of
 * workers not on their cores (asleep, descheduled), which it takes at once;
 * the caller (me == 0) also takes those of workers on their cores that have
 * not claimed them within AFFINE_WAIT_US, and is the only one that does, so
 * every item runs. Item 0 is the caller's: it claims it before anything
 * else. With more workers than cores (--cpus 4 on 2) a running worker thus
 * takes a descheduled one's item, as dynamic claiming did. */
static void take_others(ty_team *t, const job *j, int me) {
  double deadline = -1; /* the caller's one wait for all the late workers */
  for (int64_t k = 1; k < j->n; k++) {
    const uint64_t bit = UINT64_C(1) << k;
    if (k == me) continue;
    for (int turn = 0; !(atomic_load_explicit(&t->taken, memory_order_acquire) & bit); turn++) {
      if (turn % 32 == 0) {
        double t_now = now_us();
        if (!on_core(t, k, t_now)) break;
        if (me != 0) goto next; /* on its core: it takes its own */
        if (deadline < 0) deadline = t_now + AFFINE_WAIT_US;
        if (t_now >= deadline) break;
      }
      relax();
    }
    if (claim(t, k)) j->fn(j->arg, k, me);
  next:;
  }
}

static void take_items(ty_team *t, const job *j, int me) {
  for (;;) {
    int64_t i = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
    if (i >= j->n) return;
    j->fn(j->arg, i, me);
  }
}

static void *worker_main(void *p) {
  const worker_start *ws = p;
  ty_team *t = ws->team;
  const int me = ws->index;
  uint32_t seen = ws->gen0; /* the job it was started for may be out already */
  if (t->thread_start) t->thread_start();
  atomic_store(&t->asleep[me], 0);
  for (;;) {
    seen = wait_job(t, me, seen);
    if (atomic_load(&t->quit)) return NULL;
    uint32_t s = atomic_load(&t->state);
    bool joined = false;
    while ((s & OPEN) && !joined)
      joined = atomic_compare_exchange_weak(&t->state, &s, s + 1);
    if (!joined) continue;
    job j = t->job;
    seen = j.gen; /* this job is done for this worker, whichever gen woke it */
    if (me < j.threads) {
      tl_worker = me;
      if (j.affine) {
        if (me < j.n && claim(t, me)) j.fn(j.arg, me, me);
        take_others(t, &j, me);
      } else if (!j.fixed) {
        take_items(t, &j, me);
      } else if (me < j.n && atomic_exchange(&t->claimed[me], j.gen) != j.gen) {
        /* exactly once per job, even if this worker joined it twice */
        j.fn(j.arg, me, me);
        if (atomic_fetch_add(&t->done, 1) + 1 == (uint32_t)(j.n - 1)) futex_wake(&t->done, 1);
      }
      tl_worker = -1;
    }
    if (atomic_fetch_sub(&t->state, 1) - 1 == 0) futex_wake(&t->state, 1);
  }
}

ty_team *ty__team_new(int threads, int spin_us, void (*thread_start)(void)) {
  if (threads < 1) threads = 1;
  ty_team *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->cap = threads;
  t->thread_start = thread_start;
  t->spin_us = spin_us < 0 ? ty__team_default_spin() : spin_us;
  t->threads = calloc((size_t)threads, sizeof *t->threads);
  t->starts = calloc((size_t)threads, sizeof *t->starts);
  t->claimed = calloc((size_t)threads, sizeof *t->claimed);
  t->asleep = calloc((size_t)threads, sizeof *t->asleep);
  t->beat = calloc((size_t)threads, sizeof *t->beat);
  if (!t->threads || !t->starts || !t->claimed || !t->asleep || !t->beat) {
    ty__team_free(t);
    return NULL;
  }
  for (int k = 0; k < threads; k++) atomic_init(&t->asleep[k], 1); /* not started */
  return t;
}

void ty__team_free(ty_team *t) {
  if (!t) return;
  atomic_store(&t->quit, true);
  atomic_fetch_add(&t->gen, 1);
  futex_wake(&t->gen, INT_MAX);
  for (int i = 1; i <= t->started; i++) pthread_join(t->threads[i], NULL);
  free(t->threads);
  free(t->starts);
  free((void *)t->claimed);
  free((void *)t->asleep);
  free((void *)t->beat);
  free(t);
}

/* Starts workers up to `want` (the caller counts as one); returns how many
 * of them a job can have (fewer than `want` when a thread did not start). */
static int start_workers(ty_team *t, int want) {
  if (want > t->cap) want = t->cap;
  while (t->started + 1 < want) {
    int k = t->started + 1;
    t->starts[k] = (worker_start){t, k, atomic_load(&t->gen)};
    if (pthread_create(&t->threads[k], NULL, worker_main, &t->starts[k]) != 0) break;
    t->started = k;
  }
  return want < t->started + 1 ? want : t->started + 1;
}

void ty__team_for(ty_team *t, int threads, int64_t n, bool fixed, ty_team_fn fn, void *arg) {
  if (n <= 0) return;
  int w = threads < n ? threads : (int)n;
  if (t && w > 1 && tl_worker < 0) w = start_workers(t, w);
  if (!t || w <= 1 || tl_worker >= 0 || (fixed && n > w)) {
    int me = tl_worker >= 0 ? tl_worker : 0;
    int outer = tl_worker;
    tl_worker = me;
    for (int64_t i = 0; i < n; i++) fn(arg, i, me);
    tl_worker = outer;
    return;
  }
  uint32_t gen = atomic_load(&t->gen) + 1;
  const bool affine = !fixed && n == w && n <= 64;
  t->job = (job){fn, arg, n, w, fixed, affine, gen};
  atomic_store(&t->done, 0);
  atomic_store(&t->next, fixed ? n : 0);
  atomic_store(&t->taken, 0);
  atomic_store_explicit(&t->state, OPEN, memory_order_release);
  atomic_store(&t->gen, gen);
  if (atomic_load(&t->sleepers)) futex_wake(&t->gen, INT_MAX);
  tl_worker = 0;
  if (fixed) {
    fn(arg, 0, 0);
    wait_equal(t, &t->done, (uint32_t)(n - 1));
  } else if (affine) {
    job j = t->job;
    if (claim(t, 0)) fn(arg, 0, 0);
    take_others(t, &j, 0);
  } else {
    job j = t->job;
    take_items(t, &j, 0);
  }
  atomic_fetch_and(&t->state, ~(uint32_t)OPEN);
  wait_equal(t, &t->state, 0);
  tl_worker = -1;
}
