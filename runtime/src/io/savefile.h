/*
 * savefile.h — replacing a file safely (savefile.c), for every writer of
 * files (ty_save_npy, ty_savetxt).
 */
#ifndef TY_SAVEFILE_H
#define TY_SAVEFILE_H

#include "tycho/tycho.h"

#include <stddef.h>

/* Writes a file's content to fd; returns 0 or an errno value. */
typedef int (*ty__save_body)(int fd, void *ud);

/* Write `path` as body(fd, ud) writes it, through "<target>.tmp.XXXXXX"
 * beside the target, fsynced and renamed over it: a reader sees the old file
 * or the new one, never half of one, and on failure the old file is left as
 * it was. Symbolic links are followed (the link stays, its target gets the
 * data); a target that exists and is not a regular file is refused. Errors
 * are TY_EIO/TY_ENOMEM with a message that starts with `fn` and names path. */
ty_status ty__save_file(ty_runtime *rt, const char *fn, const char *path, ty__save_body body,
                        void *ud);

/* ty__save_file with a body that also gets the temporary file's name (the
 * ranks of a run write it together: npy_dist.c). */
typedef int (*ty__save_body_at)(int fd, const char *tmp, void *ud);
ty_status ty__save_file_at(ty_runtime *rt, const char *fn, const char *path, ty__save_body_at body,
                           void *ud);

/* write(2) all n bytes (retrying short writes and EINTR); 0 or an errno. */
int ty__write_full(int fd, const void *buf, size_t n);

#endif /* TY_SAVEFILE_H */
