/*
 * codegen_cc.c — compile jobs of fused_codegen.c (codegen_cc.h): the system
 * compiler in a child process, started here, then waited for or polled.
 *
 * No thread: the driving thread that plans a flush starts a job and, at its
 * later flushes, asks whether it is done (waitpid with WNOHANG, ~1 us), so
 * the job's state is only ever touched by that thread.
 */
#define _GNU_SOURCE
#include "isa.h"

#include "codegen_cc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ty__cc_running's count (codegen_cc.h): started detached jobs not yet
 * polled done or failed, nor released. */
static int running;
/* Of those, the ones started with a hold (held), and when the last hold
 * ends (held_until, ns, CLOCK_MONOTONIC_COARSE): until then they take no
 * core and ty__cc_running leaves them out. */
static int held;
static int64_t held_until;

int64_t ty__cc_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool write_file(const char *path, const char *data, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, data + off, len - off);
    if (w <= 0) {
      close(fd);
      return false;
    }
    off += (size_t)w;
  }
  return close(fd) == 0;
}

static void remove_temporaries(ty__ccjob *j) {
  unlink(j->tmp_c);
  unlink(j->tmp_so);
  for (int i = 0; i < j->n; i++) unlink(j->t[i].tmp_src);
}

static void free_targets(ty__ccjob *j) {
  free(j->t);
  j->t = NULL;
  j->n = 0;
}

/* The detached job's shell: the compile in the background, then the
 * installs (or the failure mark); $1 the unit's object, $2 the unit, $3 the
 * failure mark, $4 the kernels n, then n triples (source written, source,
 * object), then the compiler's argv. The compile runs in a subshell that
 * shifts the triples away; the install links each object to the unit's
 * (the last one is the rename of the unit's object itself, the job's last
 * act), each source renamed first.
 *
 * The compile holds first: $5 seconds of sleep (the caller's hold_s, at
 * most TY__CC_HOLD_S: what is left of the runtime's first TY__CC_HOLD_S,
 * fused_codegen.c hold_for), then runs at the program's own priority. A
 * compile at the program's priority takes a core from a short run that
 * ends before the compile does (2 cores: the cold 768^2 stencil, 0.1-0.3 s,
 * a median 0.48 s at nice 0 against 0.23 s at nice 19, session 14), and its
 * kernel is for the next run anyway; the programs the hold is for
 * (bench/coldstart --quick: 0.05-0.07 s processes) end about when it does.
 * Until session 23 the first try ran at nice 19 instead, stopped by
 * timeout(1) at the cap (0.5 s, 0.2 s from session 14, 0.05 s from session
 * 18) and run again at the program's priority. A compile takes 0.04-0.13 s
 * of CPU (gcc 12, -O1, a unit of 1-8 kernels), so a niced try capped at
 * what is left of 0.05 s never finished: its work was lost, the restart
 * (timeout's kill, a new shell and compiler) came 15-20 ms after the cap,
 * and while it ran the executor ceded a core to it (exec.c, cede) that it
 * mostly could not use beside the other niced try. Cold CG 256^2's two
 * niced units of session 22 started again at nice 0 only at 0.064-0.073 s
 * of the process (bench/README.md, "Cold CG, a hold instead of a niced
 * try: session 23"). A held compile takes no CPU, is not counted by
 * ty__cc_running until its hold ends (the executor keeps every worker
 * meanwhile), and starts at the program's priority when the hold ends;
 * on a loaded machine it cannot starve, as a niced one for good would
 * (load 25 on 2 cores: at nice 10 the 2048^2 stencil never switched in
 * its 10 s). Without sleep(1) the compile starts at once. A job for a run
 * of 2^25 elements or more (urgent, fused_codegen.c) has no hold ($5 =
 * 0): its run certainly amortises the compile (session 16,
 * bench/README.md). */
static const char detach_script[] =
    "tso=$1 tc=$2 fail=$3 n=$4 hold=$5; shift 5\n"
    "( [ \"$hold\" = 0 ] || sleep \"$hold\"\n"
    "  if ( shift $((3 * n)); \"$@\" ); then\n"
    "    rm -f \"$tc\"; bad=\n"
    "    while [ \"$n\" -gt 1 ]; do\n"
    "      mv -f \"$1\" \"$2\"; ln -f \"$tso\" \"$3.$$\" && mv -f \"$3.$$\" \"$3\" || { rm -f \"$3.$$\"; bad=1; }\n"
    "      shift 3; n=$((n - 1))\n"
    "    done\n"
    "    mv -f \"$1\" \"$2\"; mv -f \"$tso\" \"$3\" || bad=1\n"
    "    [ -z \"$bad\" ] || { rm -f \"$tso\"; : > \"$fail\"; }\n"
    "  else\n"
    "    rm -f \"$tso\" \"$tc\"\n"
    "    while [ \"$n\" -gt 0 ]; do rm -f \"$1\"; shift 3; n=$((n - 1)); done\n"
    "    : > \"$fail\"\n"
    "  fi ) </dev/null >/dev/null 2>&1 &\n";

/* Every unit compiles at -O1 (since session 17; before, -O2 below
 * TY__CC_O1_BYTES = 8 KiB of source, -O1 from it, since session 13). -O1 takes
 * 19% less compiler CPU than -O2 over the four cold programs' 10 units
 * (1.32 against 1.63 s, gcc 12), CPU a cold run's background compile takes
 * from the run's cores; its kernels run no slower: callgrind (AVX2, warm,
 * quick sizes) counts 1.5% fewer instructions in Black-Scholes' kernels,
 * as many in the stencil's, 1.2% fewer in CG's and 9% fewer in nearest's,
 * and warm AVX-512 runs took no more user time (Black-Scholes 10M, CG 256^2,
 * stencil 2048^2; the same checksums: -ffp-contract=off and no fast-math at
 * either level, so the same bits). Session 13's 7.5% more instructions at
 * -O1 in Black-Scholes' kernels no longer holds for today's generated code
 * (bench/README.md, session 17). One level also lets kernels of any size
 * share a unit (CG 256^2's 8.4 KB kernel compiled alone before). The
 * k-means row kernels (11-12 KB): 0.21-0.26 s of CPU at -O2 against
 * 0.11-0.13 s at -O1 (session 13). */
#define CC_LEVEL "-O1"

bool ty__cc_start(ty__ccjob *j, const char *cc, const ty__cckernel *k, int n, const char *unit,
                  size_t ulen, bool libs, bool detached, double hold_s, const char *isa_flags) {
  /* unique temporaries: this process's id and a count (runtimes of one
   * process may compile the same kernel at once) */
  static unsigned seq;
  const unsigned q = __atomic_fetch_add(&seq, 1u, __ATOMIC_RELAXED);
  memset(j, 0, sizeof *j);
  j->detached = detached;
  if (n < 1 || n > TY__CC_MAX_KERNELS) return false;
  j->t = calloc((size_t)n, sizeof *j->t);
  if (!j->t) return false;
  j->n = n;
  snprintf(j->tmp_so, sizeof j->tmp_so, "%s.%ld-%u.so", k[0].so, (long)getpid(), q);
  snprintf(j->tmp_c, sizeof j->tmp_c, "%s.%ld-%u-u.c", k[0].so, (long)getpid(), q);
  snprintf(j->failed, sizeof j->failed, "%s.failed", j->tmp_so);
  bool ok = write_file(j->tmp_c, unit, ulen);
  for (int i = 0; i < n; i++) {
    ty__cctarget *t = &j->t[i];
    snprintf(t->so, sizeof t->so, "%s", k[i].so);
    snprintf(t->src, sizeof t->src, "%s", k[i].src);
    snprintf(t->tmp_src, sizeof t->tmp_src, "%s.%ld-%u.c", k[i].so, (long)getpid(), q);
    ok = ok && write_file(t->tmp_src, k[i].text, k[i].len);
  }
  if (!ok) {
    remove_temporaries(j);
    free_targets(j);
    return false;
  }
  /* [sh -c script tycho-cc tmp_so tmp_c failed n (tmp_src src so)...] cc -O1
   * <the ISA level's flags> ... -nostdlib -w -o tmp_so tmp_c [-lsleef -lm] -lgcc */
  char flags[256];
  snprintf(flags, sizeof flags, "%s", isa_flags ? isa_flags : ty__isa_cflags());
  char nbuf[16], hold[16];
  snprintf(nbuf, sizeof nbuf, "%d", n);
  /* sleep(1) takes a decimal hold; under 1 ms: none ("0") */
  if (hold_s >= 0.001) snprintf(hold, sizeof hold, "%.3f", hold_s < TY__CC_HOLD_S ? hold_s : TY__CC_HOLD_S);
  else snprintf(hold, sizeof hold, "0");
  char *argv[64 + 3 * TY__CC_MAX_KERNELS];
  int a = 0;
  if (detached) {
    const char *pre[] = {"/bin/sh",  "-c",      detach_script, "tycho-cc", j->tmp_so,
                         j->tmp_c,   j->failed, nbuf,          hold};
    for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++) argv[a++] = (char *)pre[i];
    for (int i = 0; i < n; i++) {
      argv[a++] = j->t[i].tmp_src;
      argv[a++] = j->t[i].src;
      argv[a++] = j->t[i].so;
    }
  }
  argv[a++] = (char *)cc;
  argv[a++] = CC_LEVEL;
  const int a0 = a;
  for (char *save = NULL, *t = strtok_r(flags, " ", &save); t && a - a0 < 24; t = strtok_r(NULL, " ", &save))
    argv[a++] = t;
  /* -nostdlib: no crt files, libc or libgcc_s in the link, which was 15-17
   * ms of a unit's 35-110 ms of compiler CPU (the driver's link of CG's
   * 14 KB unit: 17 ms, 7 ms without them, 4 ms without -lsleef -lm too;
   * the 9 units of the four cold programs: 510-530 ms of CPU in all, 443-446
   * ms with -nostdlib; gcc 12, session 18, bench/README.md). The kernels
   * define no constructor and no exception table the crt files would
   * register; what they call from libc (memcpy) resolves at dlopen in the
   * process, which always has libc loaded, in the global scope (even a Lua
   * module opened RTLD_LOCAL: libc is the interpreter's dependency), and
   * libm's own dependency on libc is there besides. -lsleef -lm stay: the
   * kernel's SLEEF and libmvec calls must not depend on the global scope.
   * -lgcc (static, no cost measured) for any helper the compiler might
   * call. A unit that calls neither (CG's and the stencil's: additions,
   * products, sums; memcpy their only undefined symbol) links without
   * them: 7-9 ms of the link's CPU against 13-17 ms (CG 256^2's three
   * units; session 20, bench/README.md). */
  const char *rest[] = {"-ffp-contract=off", "-fno-math-errno", "-fPIC", "-shared", "-nostdlib", "-w",
                        "-o", j->tmp_so, j->tmp_c, "-lsleef", "-lm", "-lgcc"};
  for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++)
    if (libs || (strcmp(rest[i], "-lsleef") && strcmp(rest[i], "-lm"))) argv[a++] = (char *)rest[i];
  argv[a] = NULL;
  /* no input, its output discarded, none of this process's other files
   * (a detached compile must not hold a caller's pipe open), a process
   * group of its own (ty__cc_release; and a terminal's Ctrl-C, meant for
   * this program, does not stop a detached compile) */
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  if (posix_spawn_file_actions_init(&fa) != 0) {
    remove_temporaries(j);
    free_targets(j);
    return false;
  }
  if (posix_spawnattr_init(&at) != 0) {
    posix_spawn_file_actions_destroy(&fa);
    remove_temporaries(j);
    free_targets(j);
    return false;
  }
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
  posix_spawnattr_setpgroup(&at, 0);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if (rc != 0) {
    remove_temporaries(j);
    free_targets(j);
    return false;
  }
  j->pid = pid;
  if (detached) {
    j->counted = true;
    __atomic_fetch_add(&running, 1, __ATOMIC_RELAXED);
    if (strcmp(hold, "0")) {
      const int64_t until = ty__cc_now_ns() + (int64_t)(atof(hold) * 1e9);
      j->held = true;
      __atomic_fetch_add(&held, 1, __ATOMIC_RELAXED);
      for (int64_t u = __atomic_load_n(&held_until, __ATOMIC_RELAXED);
           u < until && !__atomic_compare_exchange_n(&held_until, &u, until, false, __ATOMIC_RELAXED,
                                                     __ATOMIC_RELAXED);) {
      }
    }
  }
  return true;
}

int ty__cc_running(void) {
  int r = __atomic_load_n(&running, __ATOMIC_RELAXED);
  const int h = __atomic_load_n(&held, __ATOMIC_RELAXED);
  if (h > 0 && ty__cc_now_ns() < __atomic_load_n(&held_until, __ATOMIC_RELAXED)) r -= h;
  return r > 0 ? r : 0;
}

/* j ended (or is no longer this process's to watch): out of the count. */
static void uncount(ty__ccjob *j) {
  if (!j->counted) return;
  j->counted = false;
  __atomic_fetch_sub(&running, 1, __ATOMIC_RELAXED);
  if (j->held) __atomic_fetch_sub(&held, 1, __ATOMIC_RELAXED);
  j->held = false;
}

/* Reap j's process: blocking or not; false while it runs. *status its
 * status, or -1 when it could not be waited for (reaped by someone else:
 * an embedder's SIGCHLD handling). */
static bool reap(ty__ccjob *j, bool block, int *status) {
  pid_t r;
  while ((r = waitpid(j->pid, status, block ? 0 : WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r == 0) return false;
  if (r < 0) *status = -1;
  j->pid = 0;
  return true;
}

static bool exited_ok(int status) { return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0; }

/* Every target in place (the last one first: it is installed last). */
static bool all_installed(const ty__ccjob *j) {
  for (int i = j->n - 1; i >= 0; i--)
    if (access(j->t[i].so, R_OK) != 0) return false;
  return true;
}

/* A waited job's install: each object a link to the unit's, the last one
 * its rename; each source renamed first. False when one failed. */
static bool install(ty__ccjob *j) {
  bool ok = true;
  for (int i = 0; i < j->n; i++) {
    ty__cctarget *t = &j->t[i];
    rename(t->tmp_src, t->src);
    if (i == j->n - 1) {
      ok = rename(j->tmp_so, t->so) == 0 && ok;
      break;
    }
    char ln[1320];
    snprintf(ln, sizeof ln, "%s.%ld.ln", t->so, (long)getpid());
    unlink(ln);
    if (link(j->tmp_so, ln) != 0 || rename(ln, t->so) != 0) {
      unlink(ln);
      ok = false;
    }
  }
  return ok;
}

int ty__cc_poll(ty__ccjob *j, bool block) {
  int status = 0;
  if (j->detached) {
    /* the shell exits as soon as the compile is started; a shell reaped by
     * someone else (status -1) tells nothing: the files will */
    if (j->pid > 0 && reap(j, false, &status) && status != -1 && !exited_ok(status)) j->outcome = -1;
    if (all_installed(j)) {
      uncount(j);
      unlink(j->failed);
      if (j->pid > 0) reap(j, true, &status); /* the shell, about to exit if not gone */
      free_targets(j);
      return 1;
    }
    if (j->outcome < 0 && j->pid == 0) {
      uncount(j);
      remove_temporaries(j); /* the shell failed: no compile runs */
      free_targets(j);
      return -1;
    }
    if (access(j->failed, F_OK) == 0) {
      uncount(j);
      unlink(j->failed);
      if (j->pid > 0) reap(j, true, &status);
      free_targets(j);
      return -1;
    }
    return 0;
  }
  if (j->pid <= 0) {
    free_targets(j);
    return -1;
  }
  if (!reap(j, block, &status)) return 0;
  bool ok = exited_ok(status) && install(j);
  remove_temporaries(j);
  free_targets(j);
  return ok ? 1 : -1;
}

void ty__cc_release(ty__ccjob *j) {
  uncount(j);
  if (j->pid > 0) {
    int status;
    if (j->detached) { /* the compile goes on, nobody's child here */
      reap(j, true, &status);
    } else {
      kill(-j->pid, SIGKILL); /* the group: cc and what it started */
      kill(j->pid, SIGKILL);  /* in case it had not made its group yet */
      reap(j, true, &status);
      remove_temporaries(j);
    }
  }
  free_targets(j);
}
