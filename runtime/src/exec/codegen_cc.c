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
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

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
  unlink(j->tmp_src);
  unlink(j->tmp_so);
}

/* The detached job's shell: the compile in the background, then the renames
 * (or the failure mark); $1..$5 the paths, the rest the compiler's argv.
 *
 * The compile starts at the lowest priority (nice 19) and, when it is not
 * done within CC_NICE_S seconds, is stopped and run again at the program's
 * own priority. At nice 0 a compile takes a core from a short run that will
 * end before the compile does (2 cores: the cold 768^2 stencil, 0.1-0.3 s,
 * a median 0.48 s at nice 0 against 0.23 s at nice 19), and the kernel is
 * for the next run anyway; niced for good, it starves on a loaded machine
 * (load 25 on 2 cores: at nice 10 the 2048^2 stencil never switched in its
 * 10 s, 11.1-11.4 s in all, against 8.5-9.7 s at nice 0). The cap bounds
 * that: a long run switches at most CC_NICE_S later than at nice 0. On an
 * idle core a compile takes 0.06-0.12 s (gcc 12, a Black-Scholes or stencil
 * kernel), so an unloaded niced compile finishes well within the cap.
 * timeout(1) signals its own process group (the compiler and what it
 * started); without timeout or nice the first try fails and the second
 * runs as before. A failing compiler fails twice. */
#define CC_NICE_S "0.5"
static const char detach_script[] =
    "so=$1 src=$2 tso=$3 tsrc=$4 fail=$5; shift 5\n"
    "( { timeout " CC_NICE_S " nice -n 19 \"$@\" || \"$@\"; } &&\n"
    "  mv -f \"$tso\" \"$so\" && { mv -f \"$tsrc\" \"$src\"; :; } || : > \"$fail\"\n"
    "  rm -f \"$tso\" \"$tsrc\" ) </dev/null >/dev/null 2>&1 &\n";

/* The optimisation level by the source's size. A compile of a small kernel
 * is mostly the compiler's and the linker's start (a Black-Scholes, stencil
 * or CG kernel of 4-7 KB: 0.03-0.05 s of CPU at -O2, 0.02-0.04 s at -O1), so -O2
 * costs ~0.01 s there; a large one (the k-means row kernels, 11-12 KB) takes
 * 0.21-0.26 s at -O2 against 0.11-0.13 s at -O1, CPU a cold run's
 * background compile takes from the run, and its -O1 kernels run no slower
 * (callgrind: 11% fewer instructions in k-means' kernels; the same
 * checksums). At -O1 the Black-Scholes kernels run 7.5% more instructions,
 * so small sources keep -O2 (session 13, bench/README.md). The level follows
 * from the source, so a cache key (the source's hash) stands for one level. */
enum { CC_O1_BYTES = 8192 };

bool ty__cc_start(ty__ccjob *j, const char *cc, const char *so, const char *src, const char *text,
                  size_t len, bool detached) {
  /* unique temporaries: this process's id and a count (runtimes of one
   * process may compile the same kernel at once) */
  static unsigned seq;
  const unsigned n = __atomic_fetch_add(&seq, 1u, __ATOMIC_RELAXED);
  j->pid = 0;
  j->detached = detached;
  j->outcome = 0;
  snprintf(j->so, sizeof j->so, "%s", so);
  snprintf(j->src, sizeof j->src, "%s", src);
  snprintf(j->tmp_src, sizeof j->tmp_src, "%s.%ld-%u.c", so, (long)getpid(), n);
  snprintf(j->tmp_so, sizeof j->tmp_so, "%s.%ld-%u.so", so, (long)getpid(), n);
  snprintf(j->failed, sizeof j->failed, "%s.failed", j->tmp_so);
  if (!write_file(j->tmp_src, text, len)) {
    unlink(j->tmp_src);
    return false;
  }
  /* [sh -c script tycho-cc so src tmp_so tmp_src failed] cc -O2 (-O1 for a
   * large source) <the ISA level's flags> ... -o tmp_so tmp_src -lsleef -lm */
  char flags[256];
  snprintf(flags, sizeof flags, "%s", ty__isa_cflags());
  char *argv[48];
  int k = 0;
  if (detached) {
    const char *pre[] = {"/bin/sh", "-c", detach_script, "tycho-cc", j->so, j->src, j->tmp_so,
                         j->tmp_src, j->failed};
    for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++) argv[k++] = (char *)pre[i];
  }
  argv[k++] = (char *)cc;
  argv[k++] = len >= CC_O1_BYTES ? "-O1" : "-O2";
  for (char *save = NULL, *t = strtok_r(flags, " ", &save); t && k < 28; t = strtok_r(NULL, " ", &save))
    argv[k++] = t;
  const char *rest[] = {"-ffp-contract=off", "-fno-math-errno", "-fPIC", "-shared", "-w", "-o",
                        j->tmp_so, j->tmp_src, "-lsleef", "-lm"};
  for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++) argv[k++] = (char *)rest[i];
  argv[k] = NULL;
  /* no input, its output discarded, none of this process's other files
   * (a detached compile must not hold a caller's pipe open), a process
   * group of its own (ty__cc_release; and a terminal's Ctrl-C, meant for
   * this program, does not stop a detached compile) */
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  if (posix_spawn_file_actions_init(&fa) != 0) {
    unlink(j->tmp_src);
    return false;
  }
  if (posix_spawnattr_init(&at) != 0) {
    posix_spawn_file_actions_destroy(&fa);
    unlink(j->tmp_src);
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
    return false;
  }
  j->pid = pid;
  return true;
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

int ty__cc_poll(ty__ccjob *j, bool block) {
  int status = 0;
  if (j->detached) {
    /* the shell exits as soon as the compile is started; a shell reaped by
     * someone else (status -1) tells nothing: the files will */
    if (j->pid > 0 && reap(j, false, &status) && status != -1 && !exited_ok(status)) j->outcome = -1;
    if (access(j->so, R_OK) == 0) {
      unlink(j->failed);
      if (j->pid > 0) reap(j, true, &status); /* the shell, about to exit if not gone */
      return 1;
    }
    if (j->outcome < 0 && j->pid == 0) {
      remove_temporaries(j); /* the shell failed: no compile runs */
      return -1;
    }
    if (access(j->failed, F_OK) == 0) {
      unlink(j->failed);
      if (j->pid > 0) reap(j, true, &status);
      return -1;
    }
    return 0;
  }
  if (j->pid <= 0) return -1;
  if (!reap(j, block, &status)) return 0;
  bool ok = exited_ok(status) && rename(j->tmp_so, j->so) == 0;
  if (ok) rename(j->tmp_src, j->src);
  remove_temporaries(j);
  return ok ? 1 : -1;
}

void ty__cc_release(ty__ccjob *j) {
  if (j->pid <= 0) return;
  int status;
  if (j->detached) { /* the compile goes on, nobody's child here */
    reap(j, true, &status);
    return;
  }
  kill(-j->pid, SIGKILL); /* the group: cc and what it started */
  kill(j->pid, SIGKILL);  /* in case it had not made its group yet */
  reap(j, true, &status);
  remove_temporaries(j);
}
