/*
 * savefile.c — replacing a file safely (savefile.h): the rules every writer
 * of files follows (ty_save_npy, ty_savetxt).
 *
 * The content goes to "<target>.tmp.XXXXXX" beside the target, is fsynced
 * and renamed over it, so a reader sees the old file or the new one, never
 * half of one; on any failure the temporary is removed and the old file is
 * untouched. The rename replaces whatever the name is, so the target is
 * looked at first (resolve_target): a symbolic link is followed to the file
 * it names (dangling or not, as open(2) would), which is replaced there, so
 * the link stays a link and its target gets the data, as numpy's save does;
 * a target that exists and is not a regular file (a device, a FIFO, a socket,
 * a directory) is refused, so saving to /dev/null as root never replaces
 * /dev/null. A replaced file keeps its permission bits.
 */
#define _GNU_SOURCE /* mkostemp, strndup */
#include "savefile.h"

#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ty__write_full(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    size_t chunk = n > (1u << 30) ? (1u << 30) : n;
    ssize_t w = write(fd, p, chunk);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* The process umask without changing it (umask() sets while it reads, a race
 * with other threads creating files): Linux reports it in /proc/self/status
 * since 4.7. 022 when unknown. */
static mode_t current_umask(void) {
  mode_t m = 022;
  FILE *f = fopen("/proc/self/status", "re");
  if (!f) return m;
  char line[256];
  while (fgets(line, sizeof line, f)) {
    unsigned v;
    if (sscanf(line, "Umask: %o", &v) == 1) {
      m = (mode_t)v;
      break;
    }
  }
  fclose(f);
  return m;
}

/* After the rename, make the directory entry durable too (best effort: some
 * file systems refuse fsync on a directory). */
static void fsync_parent(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : ty__strdup(".");
  if (!dir) return;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  free(dir);
}

/* 40 links, as Linux's own limit on a path walk (MAXSYMLINKS) */
#define MAX_LINK_HOPS 40

static const char *file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

/* The name the save replaces: `path` with symbolic links followed (a relative
 * link is read against the link's own directory). *out is malloc'ed; *mode
 * is the existing regular file's mode, or 0 when there is none yet. Refuses
 * a target that exists and is not a regular file. */
static ty_status resolve_target(ty_runtime *rt, const char *fn, const char *path, char **out,
                                mode_t *mode) {
  char *cur = ty__strdup(path);
  if (!cur) return ty__fail(rt, TY_ENOMEM, "%s: out of memory", fn);
  *out = NULL;
  *mode = 0;
  for (int hop = 0;; hop++) {
    struct stat sb;
    if (lstat(cur, &sb) != 0) {
      if (errno == ENOENT) break; /* a new file (a dangling link's target too) */
      int e = errno;
      ty_status st = ty__fail(rt, TY_EIO, "%s: cannot write '%s': %s", fn, path, strerror(e));
      free(cur);
      return st;
    }
    if (!S_ISLNK(sb.st_mode)) {
      if (!S_ISREG(sb.st_mode)) {
        ty_status st;
        if (strcmp(cur, path) == 0)
          st = ty__fail(rt, TY_EIO, "%s: cannot write '%s': it is %s, not a regular file "
                        "(save replaces regular files only)", fn, path, file_kind(sb.st_mode));
        else
          st = ty__fail(rt, TY_EIO, "%s: cannot write '%s': it links to '%s', which is "
                        "%s, not a regular file (save replaces regular files only)", fn, path, cur,
                        file_kind(sb.st_mode));
        free(cur);
        return st;
      }
      *mode = sb.st_mode & 0777; /* not set-id bits: a data file gets none */
      break;
    }
    if (hop == MAX_LINK_HOPS) {
      free(cur);
      return ty__fail(rt, TY_EIO, "%s: cannot write '%s': more than %d symbolic links "
                      "in a row", fn, path, MAX_LINK_HOPS);
    }
    /* st_size is the link's length; 0 on some pseudo file systems */
    size_t cap = sb.st_size > 0 ? (size_t)sb.st_size + 1 : 4096;
    char *link = ty__malloc(cap);
    ssize_t n = link ? readlink(cur, link, cap) : -1;
    if (n < 0 || (size_t)n >= cap) {
      int e = n < 0 && link ? errno : ENAMETOOLONG;
      free(link);
      free(cur);
      return ty__fail(rt, link ? TY_EIO : TY_ENOMEM, "%s: cannot follow the link '%s': %s",
                      fn, path, link ? strerror(e) : "out of memory");
    }
    link[n] = '\0';
    char *next = link;
    const char *slash = strrchr(cur, '/');
    if (link[0] != '/' && slash) { /* relative to the link's directory */
      size_t dlen = (size_t)(slash - cur) + 1;
      next = ty__malloc(dlen + (size_t)n + 1);
      if (next) {
        memcpy(next, cur, dlen);
        memcpy(next + dlen, link, (size_t)n + 1);
      }
      free(link);
      if (!next) {
        free(cur);
        return ty__fail(rt, TY_ENOMEM, "%s: out of memory", fn);
      }
    }
    free(cur);
    cur = next;
  }
  *out = cur;
  return TY_OK;
}

static ty_status save(ty_runtime *rt, const char *fn, const char *path, ty__save_body body,
                      ty__save_body_at body_at, void *ud) {
  char *target = NULL;
  mode_t mode = 0;
  ty_status st = resolve_target(rt, fn, path, &target, &mode);
  if (st) return st;
  size_t plen = strlen(target);
  char *tmpl = ty__malloc(plen + sizeof ".tmp.XXXXXX");
  if (!tmpl) {
    free(target);
    return ty__fail(rt, TY_ENOMEM, "%s: out of memory", fn);
  }
  memcpy(tmpl, target, plen);
  memcpy(tmpl + plen, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
  int fd = mkostemp(tmpl, O_CLOEXEC);
  if (fd < 0) {
    st = ty__fail(rt, TY_EIO, "%s: cannot create a temporary file beside '%s': %s", fn, path,
                  strerror(errno));
    free(tmpl);
    free(target);
    return st;
  }
  const char *step = "write";
  int e = 0;
  /* mkstemp makes the file 0600; give it the replaced file's mode, or the
   * one open(O_CREAT, 0666) would */
  if (fchmod(fd, mode ? mode : 0666 & ~current_umask()) != 0) {
    e = errno;
    step = "chmod";
  }
  if (!e) e = body ? body(fd, ud) : body_at(fd, tmpl, ud);
  if (!e && fsync(fd) != 0) {
    e = errno;
    step = "fsync";
  }
  if (close(fd) != 0 && !e) {
    e = errno;
    step = "close";
  }
  if (!e && rename(tmpl, target) != 0) {
    e = errno;
    step = "rename";
  }
  if (e) {
    unlink(tmpl);
    st = ty__fail(rt, TY_EIO, "%s: cannot write '%s' (%s): %s", fn, path, step, strerror(e));
  } else {
    fsync_parent(target);
  }
  free(tmpl);
  free(target);
  return st;
}

ty_status ty__save_file(ty_runtime *rt, const char *fn, const char *path, ty__save_body body,
                        void *ud) {
  return save(rt, fn, path, body, NULL, ud);
}

ty_status ty__save_file_at(ty_runtime *rt, const char *fn, const char *path, ty__save_body_at body,
                           void *ud) {
  return save(rt, fn, path, NULL, body, ud);
}
