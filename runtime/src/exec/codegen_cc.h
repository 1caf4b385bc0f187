/*
 * codegen_cc.h — the system compiler run for fused_codegen.c: one compile of
 * a generated source into a shared object of the kernel cache, in a child
 * process that is either waited for at once (synchronous) or polled later
 * (in the background, while the run is interpreted).
 *
 * A job writes the source to a temporary file next to its target, compiles
 * it into a temporary object and on success renames both into place:
 * processes compiling the same kernel at once never see a half-written file.
 *
 * Two kinds of job:
 *  - waited (synchronous): the compiler is this process's child, waited for
 *    by ty__cc_poll(j, true);
 *  - detached (background): a shell started in a process group of its own
 *    runs "cc ... && mv ... || mark failed" in the background (the compile
 *    niced first, at the program's priority after 0.5 s: codegen_cc.c) and
 *    exits at once, so the compile is nobody's child here: it finishes and installs
 *    its kernel in the cache even when the runtime (or the process) has
 *    ended, which is what makes the next run warm. ty__cc_poll(j, false)
 *    reaps the shell and reads the outcome from the files: the object in
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

typedef struct ty__ccjob {
  pid_t pid;          /* the compiler (waited) or the launching shell (detached); 0 once reaped */
  bool detached;
  int outcome;        /* detached: the shell's failure (-1) once reaped, else 0 */
  char so[1200];      /* the target: <dir>/fk-<hash>.so */
  char src[1200];     /* its source, kept beside it: <dir>/fk-<hash>.c */
  char tmp_so[1300];  /* the temporaries: <so>.<pid>-<n>.so and .c */
  char tmp_src[1300];
  char failed[1310];  /* detached: <tmp_so>.failed, made when the compile fails */
} ty__ccjob;

/* Start compiling `text` into `so` (its source kept as `src`) with the
 * compiler `cc` and the level's flags, waited or detached. False when it
 * could not start (a file not written, nothing to spawn): nothing is left
 * behind. */
bool ty__cc_start(ty__ccjob *j, const char *cc, const char *so, const char *src, const char *text,
                  size_t len, bool detached);

/* The job's state: 0 still running (never when block: a waited job is
 * waited for; block is for waited jobs only), 1 compiled (the object is in
 * place), -1 failed (the compiler's error, or it could not be waited for).
 * Once it returned 1 or -1 the job holds no process and no file. */
int ty__cc_poll(ty__ccjob *j, bool block);

/* Release a job still running (see the top). */
void ty__cc_release(ty__ccjob *j);

#endif /* TY_CODEGEN_CC_H */
