/*
 * codegen_cc.h — the system compiler run for fused_codegen.c: one compile of
 * a generated source into a shared object of the kernel cache, in a child
 * process that is either waited for at once (synchronous) or polled later
 * (in the background, while the run is interpreted).
 *
 * A job compiles one or several kernels in ONE compiler process: the caller
 * gives one translation unit holding them all (fused_codegen.c renames each
 * kernel's file-scope names) and, per kernel, its target object, its own
 * source and that source's text. A compile is mostly the compiler's and the
 * linker's start (~25 ms of a ~45 ms compile of one kernel): CG 256^2's 11
 * kernels took 0.54 s of CPU one by one, 0.16 s as one unit (session 14,
 * bench/README.md). The unit is compiled into a temporary object; on success
 * each kernel's target becomes a hard link to it (the last one the object's
 * own rename), so fk-<hash>.so of every kernel of a unit is one file: a
 * process that loads several of them maps it once (the dynamic loader
 * matches the file's identity). Each kernel's source is renamed into place
 * before its object. Processes compiling the same kernel at once never see a
 * half-written file, and a job's last act is its last target's rename, so a
 * job whose targets are all there has left no temporary behind.
 *
 * Two kinds of job:
 *  - waited (synchronous): the compiler is this process's child, waited for
 *    by ty__cc_poll(j, true), which then installs the targets;
 *  - detached (background): a shell started in a process group of its own
 *    runs "cc ... && install || mark failed" in the background (the compile
 *    held until the runtime is 0.05 s old, then at the program's priority: codegen_cc.c) and
 *    exits at once, so the compile is nobody's child here: it finishes and installs
 *    its kernels in the cache even when the runtime (or the process) has
 *    ended, which is what makes the next run warm. ty__cc_poll(j, false)
 *    reaps the shell and reads the outcome from the files: every target in
 *    place (done) or <temporary>.failed (the compiler failed).
 * ty__cc_release ends a job's hold on this process: a detached job's shell
 * is reaped (it exits right after starting the compile), a waited job still
 * running is killed with its process group and reaped. Neither leaves a
 * child of this process behind.
 */
#ifndef TY_CODEGEN_CC_H
#define TY_CODEGEN_CC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A detached compile holds (sleeps) at most this long before its
 * compiler starts (seconds; codegen_cc.c says why). */
#define TY__CC_HOLD_S 0.05
/* At most this many kernels in one job. */
enum { TY__CC_MAX_KERNELS = 32 };

/* One kernel of a job: its object <dir>/fk-<hash>.so, its own source kept
 * beside it (<dir>/fk-<hash>.c) and that source's text. */
typedef struct ty__cckernel {
  const char *so, *src, *text;
  size_t len;
} ty__cckernel;

typedef struct ty__cctarget {
  char so[1200];      /* the target */
  char src[1200];     /* its source */
  char tmp_src[1300]; /* the source written: <so>.<pid>-<n>.c */
} ty__cctarget;

typedef struct ty__ccjob {
  pid_t pid;          /* the compiler (waited) or the launching shell (detached); 0 once reaped */
  bool detached;
  bool counted;       /* detached, started and not yet seen to end: in ty__cc_running */
  bool held;          /* counted, started with a hold (codegen_cc.c, held) */
  int outcome;        /* detached: the shell's failure (-1) once reaped, else 0 */
  int n;              /* kernels */
  ty__cctarget *t;    /* n targets (owned; freed when the job holds no file) */
  char tmp_so[1300];  /* the unit's object: <so of the first>.<pid>-<n>.so */
  char tmp_c[1300];   /* the unit: <so of the first>.<pid>-<n>-u.c */
  char failed[1310];  /* detached: <tmp_so>.failed, made when the compile fails */
} ty__ccjob;

/* CLOCK_MONOTONIC_COARSE in ns (~20 ns a call, 1-4 ms steps): the hold's
 * clock here and in fused_codegen.c (its polls'). */
int64_t ty__cc_now_ns(void);

/* Start compiling the unit `unit` (ulen bytes) holding the n kernels k with
 * the compiler `cc` at -O1 (codegen_cc.c says why) and the ISA level's
 * flags (isa_flags; NULL: the process's level, ty__isa_cflags: another
 * level's only in tests, test_codegen_isa.c, whose objects are never
 * loaded), linked with SLEEF and libm when `libs` (the unit calls them),
 * waited or detached; a detached one
 * holds hold_s seconds first (at most TY__CC_HOLD_S; under 1 ms: none),
 * then compiles at the program's priority. False when it
 * could not start (a file not written, nothing to spawn): nothing is left
 * behind. */
bool ty__cc_start(ty__ccjob *j, const char *cc, const ty__cckernel *k, int n, const char *unit,
                  size_t ulen, bool libs, bool detached, double hold_s, const char *isa_flags);

/* The job's state: 0 still running (never when block: a waited job is
 * waited for; block is for waited jobs only), 1 compiled (every object is in
 * place), -1 failed (the compiler's error, or it could not be waited for;
 * some targets may still be there, made by another process). Once it
 * returned 1 or -1 the job holds no process and no file. */
int ty__cc_poll(ty__ccjob *j, bool block);

/* Release a job still running (see the top), and its memory. */
void ty__cc_release(ty__ccjob *j);

/* Detached compiles this process started that no poll has yet seen end
 * and that were not released, those still in their hold left out: relaxed
 * atomic loads, any thread. The
 * executor runs waves on one worker fewer while it is not 0 and the
 * machine has no core to spare for the compiler (exec.c, cede). */
int ty__cc_running(void);

#endif /* TY_CODEGEN_CC_H */
