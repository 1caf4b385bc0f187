/*
 * gpu_nvrtc.c — NVRTC loaded at run time, and the PTX caches (gpu_nvrtc.h).
 *
 * Disk cache layout: one file per (kernel, arch), <dir>/<name>.sm<arch>.ptx,
 * whose first line is a header holding the cache format, NVRTC's version,
 * the arch and the whole key in hex; a file is used only when that line is
 * exactly the one expected (a 64-bit name collision, another NVRTC or a
 * truncated file is a miss, and the file is rewritten). Files are written
 * to a temporary name and renamed, so concurrent processes never read half
 * a file. The in-memory table is open addressing on the key's hash, at most
 * half full.
 */
#include "alloc.h"
#include "gpu_nvrtc.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DISK_FORMAT 1

/* ---- loading ------------------------------------------------------------------- */

void ty__nvrtc_unload(ty__nvrtc *nv) {
  if (!nv) return;
  if (nv->lib) dlclose(nv->lib);
  memset(nv, 0, sizeof *nv);
}

ty_status ty__nvrtc_load(ty__nvrtc *nv, const char *path, char *why, size_t whylen) {
  memset(nv, 0, sizeof *nv);
  static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  const char *env = getenv("TYCHO_LIBNVRTC");
  if (!path && env && *env) path = env;
  void *lib = NULL;
  const char *e = NULL;
  if (path) {
    dlerror();
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib) e = dlerror();
    snprintf(nv->path, sizeof nv->path, "%s", path);
  } else {
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) {
      dlerror();
      lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
      if (!lib && !e) e = dlerror();
      snprintf(nv->path, sizeof nv->path, "%s", names[i]);
    }
  }
  if (!lib) {
    if (why)
      snprintf(why, whylen, "NVRTC could not be loaded (CUDA toolkit's libnvrtc): %s",
               e ? e : "not found");
    return TY_ENOTFOUND;
  }
  nv->lib = lib;
  const char *missing = NULL;
#define LOAD(field, name)                                                               \
  do {                                                                                  \
    *(void **)&nv->field = dlsym(lib, name);                                            \
    if (!nv->field && !missing) missing = name;                                         \
  } while (0)
  LOAD(Version, "nvrtcVersion");
  LOAD(CreateProgram, "nvrtcCreateProgram");
  LOAD(CompileProgram, "nvrtcCompileProgram");
  LOAD(GetPTXSize, "nvrtcGetPTXSize");
  LOAD(GetPTX, "nvrtcGetPTX");
  LOAD(GetProgramLogSize, "nvrtcGetProgramLogSize");
  LOAD(GetProgramLog, "nvrtcGetProgramLog");
  LOAD(DestroyProgram, "nvrtcDestroyProgram");
  LOAD(GetErrorString, "nvrtcGetErrorString");
#undef LOAD
  if (missing || nv->Version(&nv->major, &nv->minor) != 0) {
    if (why) snprintf(why, whylen, "%s: %s missing or failing", nv->path, missing ? missing : "nvrtcVersion");
    ty__nvrtc_unload(nv);
    return TY_ENOTFOUND;
  }
  return TY_OK;
}

ty_status ty__nvrtc_compile(const ty__nvrtc *nv, const char *src, const char *name, int arch,
                            bool fmad, char **ptx, size_t *ptxlen, char *err, size_t errlen) {
  *ptx = NULL;
  *ptxlen = 0;
  if (!nv || !nv->lib) {
    if (err) snprintf(err, errlen, "NVRTC is not loaded");
    return TY_ENOTFOUND;
  }
  char archopt[48], file[64];
  snprintf(archopt, sizeof archopt, "--gpu-architecture=compute_%d", arch);
  snprintf(file, sizeof file, "%s.cu", name);
  /* --fmad=false: a*b+c is two roundings, as on the CPU (bit-identical
   * results for exact operations); fastmath allows the contraction */
  const char *opts[] = {archopt, fmad ? "--fmad=true" : "--fmad=false", "-default-device"};
  void *prog = NULL;
  int r = nv->CreateProgram(&prog, src, file, 0, NULL, NULL);
  if (r != 0) {
    if (err) snprintf(err, errlen, "nvrtcCreateProgram(%s): %s", name, nv->GetErrorString(r));
    return r == 1 ? TY_ENOMEM : TY_EINVAL; /* NVRTC_ERROR_OUT_OF_MEMORY = 1 */
  }
  r = nv->CompileProgram(prog, (int)(sizeof opts / sizeof opts[0]), opts);
  if (r != 0) {
    size_t n = 0;
    char *log = NULL;
    if (nv->GetProgramLogSize(prog, &n) == 0 && n > 0 && (log = ty__malloc(n + 1))) {
      if (nv->GetProgramLog(prog, log) != 0) log[0] = 0;
      log[n] = 0;
    }
    if (err)
      snprintf(err, errlen, "NVRTC could not compile %s: %s\n%s", name, nv->GetErrorString(r),
               log ? log : "");
    free(log);
    nv->DestroyProgram(&prog);
    return TY_EINVAL;
  }
  size_t n = 0;
  char *p = NULL;
  if (nv->GetPTXSize(prog, &n) != 0 || !(p = ty__malloc(n + 1)) || nv->GetPTX(prog, p) != 0) {
    free(p);
    nv->DestroyProgram(&prog);
    if (err) snprintf(err, errlen, "NVRTC: no PTX for %s", name);
    return TY_ENOMEM;
  }
  p[n] = 0;
  nv->DestroyProgram(&prog);
  *ptx = p;
  *ptxlen = strlen(p); /* the size counts the terminating NUL */
  return TY_OK;
}

/* ---- the caches ------------------------------------------------------------------ */

static void default_dir(char *buf, size_t len) {
  const char *v = getenv("TYCHO_CACHE_DIR");
  if (v && (!strcmp(v, "off") || !*v)) {
    buf[0] = 0;
  } else if (v) {
    snprintf(buf, len, "%s/ptx", v);
  } else if ((v = getenv("XDG_CACHE_HOME")) && *v) {
    snprintf(buf, len, "%s/tycho/ptx", v);
  } else if ((v = getenv("HOME")) && *v) {
    snprintf(buf, len, "%s/.cache/tycho/ptx", v);
  } else {
    buf[0] = 0;
  }
}

void ty__ptx_cache_init(ty__ptx_cache *c, const ty__nvrtc *nv, const char *dir) {
  memset(c, 0, sizeof *c);
  c->nv = nv;
  if (dir) snprintf(c->dir, sizeof c->dir, "%s", dir);
  else default_dir(c->dir, sizeof c->dir);
}

static void entry_free(ty__ptx_entry *e) {
  if (!e) return;
  free(e->key);
  free(e->ptx);
  free(e);
}

void ty__ptx_cache_free(ty__ptx_cache *c) {
  for (size_t i = 0; i < c->cap; i++) entry_free(c->slots[i]);
  free(c->slots);
  c->slots = NULL;
  c->cap = c->count = 0;
}

static bool same(const ty__ptx_entry *e, const uint8_t *key, size_t keylen, uint64_t hash, int arch) {
  return e->hash == hash && e->arch == arch && e->keylen == keylen && !memcmp(e->key, key, keylen);
}

static ty__ptx_entry *find(const ty__ptx_cache *c, const uint8_t *key, size_t keylen, uint64_t hash,
                           int arch) {
  if (!c->cap) return NULL;
  size_t mask = c->cap - 1;
  for (size_t i = (size_t)(hash ^ (uint64_t)arch) & mask;; i = (i + 1) & mask) {
    ty__ptx_entry *e = c->slots[i];
    if (!e) return NULL;
    if (same(e, key, keylen, hash, arch)) return e;
  }
}

static bool insert(ty__ptx_cache *c, ty__ptx_entry *e) {
  if ((c->count + 1) * 2 > c->cap) {
    size_t ncap = c->cap ? c->cap * 2 : 64;
    ty__ptx_entry **ns = ty__calloc(ncap, sizeof *ns);
    if (!ns) return false;
    for (size_t i = 0; i < c->cap; i++) {
      ty__ptx_entry *x = c->slots[i];
      if (!x) continue;
      size_t j = (size_t)(x->hash ^ (uint64_t)x->arch) & (ncap - 1);
      while (ns[j]) j = (j + 1) & (ncap - 1);
      ns[j] = x;
    }
    free(c->slots);
    c->slots = ns;
    c->cap = ncap;
  }
  size_t j = (size_t)(e->hash ^ (uint64_t)e->arch) & (c->cap - 1);
  while (c->slots[j]) j = (j + 1) & (c->cap - 1);
  c->slots[j] = e;
  c->count++;
  return true;
}

/* "// tycho-ptx 1 nvrtc 13.0 sm_90 key 0a1b...\n" (malloc'd) */
static char *disk_header(const ty__ptx_cache *c, const uint8_t *key, size_t keylen, int arch) {
  size_t len = 96 + 2 * keylen;
  char *h = ty__malloc(len);
  if (!h) return NULL;
  int w = snprintf(h, len, "// tycho-ptx %d nvrtc %d.%d sm_%d key ", DISK_FORMAT,
                   c->nv ? c->nv->major : 0, c->nv ? c->nv->minor : 0, arch);
  static const char hex[] = "0123456789abcdef";
  char *p = h + w;
  for (size_t i = 0; i < keylen; i++) {
    *p++ = hex[key[i] >> 4];
    *p++ = hex[key[i] & 15];
  }
  *p++ = '\n';
  *p = 0;
  return h;
}

static void disk_path(const ty__ptx_cache *c, const char *name, int arch, char *buf, size_t len) {
  snprintf(buf, len, "%s/%s.sm%d.ptx", c->dir, name, arch);
}

/* mkdir -p */
static int make_dirs(const char *dir) {
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s", dir);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
  return 0;
}

/* The PTX of a valid file (malloc'd), or NULL. */
static char *disk_read(const ty__ptx_cache *c, const char *path, const char *header, size_t *ptxlen) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long size = ftell(f);
    size_t hl = strlen(header);
    if (size > (long)hl && fseek(f, 0, SEEK_SET) == 0 && (buf = ty__malloc((size_t)size + 1))) {
      if (fread(buf, 1, (size_t)size, f) != (size_t)size || memcmp(buf, header, hl) != 0) {
        free(buf);
        buf = NULL;
      } else {
        buf[size] = 0;
        memmove(buf, buf + hl, (size_t)size - hl + 1);
        *ptxlen = (size_t)size - hl;
      }
    }
  }
  fclose(f);
  (void)c;
  return buf;
}

static bool disk_write(const char *path, const char *header, const char *ptx, size_t ptxlen) {
  char tmp[700];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) return false;
  bool ok = fwrite(header, 1, strlen(header), f) == strlen(header) &&
            fwrite(ptx, 1, ptxlen, f) == ptxlen;
  ok = (fclose(f) == 0) && ok;
  if (ok) ok = rename(tmp, path) == 0;
  if (!ok) remove(tmp);
  return ok;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

ty_status ty__ptx_cache_get(ty__ptx_cache *c, const uint8_t *key, size_t keylen, uint64_t hash,
                            const char *name, int arch, bool fmad, ty__src_fn gen,
                            const void *ud, ty__ptx_entry **out, char *err, size_t errlen) {
  *out = find(c, key, keylen, hash, arch);
  if (*out) {
    c->hits++;
    return TY_OK;
  }
  ty__ptx_entry *e = ty__calloc(1, sizeof *e);
  if (!e || !(e->key = ty__malloc(keylen ? keylen : 1))) {
    free(e);
    if (err) snprintf(err, errlen, "out of memory for a kernel cache entry");
    return TY_ENOMEM;
  }
  e->hash = hash;
  e->arch = arch;
  e->keylen = keylen;
  memcpy(e->key, key, keylen);
  snprintf(e->name, sizeof e->name, "%s", name);

  char path[600];
  char *header = c->dir[0] && !c->source ? disk_header(c, key, keylen, arch) : NULL;
  if (header) {
    disk_path(c, name, arch, path, sizeof path);
    e->ptx = disk_read(c, path, header, &e->ptxlen);
    if (e->ptx) c->disk_hits++;
  }
  if (!e->ptx) {
    char *src = gen(ud);
    if (!src) {
      free(header);
      entry_free(e);
      if (err) snprintf(err, errlen, "out of memory generating %s", name);
      return TY_ENOMEM;
    }
    double t0 = now();
    ty_status st = TY_OK;
    if (c->source) { /* the simulator compiles it when loaded */
      e->ptx = src;
      e->ptxlen = strlen(src);
      src = NULL;
    } else {
      st = ty__nvrtc_compile(c->nv, src, name, arch, fmad, &e->ptx, &e->ptxlen, err, errlen);
    }
    c->compile_seconds += now() - t0;
    free(src);
    if (st) {
      free(header);
      entry_free(e);
      return st;
    }
    c->compiles++;
    if (header && (make_dirs(c->dir) != 0 || !disk_write(path, header, e->ptx, e->ptxlen)))
      c->disk_errors++; /* a read-only home is not an error: memory still caches */
  }
  free(header);
  if (!insert(c, e)) {
    entry_free(e);
    if (err) snprintf(err, errlen, "out of memory for the kernel cache");
    return TY_ENOMEM;
  }
  *out = e;
  return TY_OK;
}
