/*
 * gpu_sim_cc.c — CUDA C compiled for the host, the modules of the simulated
 * GPUs (gpu_sim.c, gpu_sim.h).
 *
 * A module's source gets a shim in front that maps CUDA C onto C++
 * (__global__, __device__ away; __shared__ and blockIdx, threadIdx,
 * blockDim, gridDim `static thread_local`: several stream threads run
 * kernels at once) and, behind it, a wrapper per kernel: the kernels are
 * found by preprocessing the text once with __global__ as a marker (tycho's
 * reduce.cu makes its kernels with macros), and each one-parameter kernel
 * gets a function that walks a grid with one thread per block, plus its
 * parameter's size, listed in the exported table ty_sim_kernels.
 *
 * Compiled with the host C++ compiler (TYCHO_CXX, else $CXX, else c++) and
 * -O2 -ffp-contract=off (no contraction: exact operations give the CPU
 * kernels' bits), cached as <cache>/sim/sim-<hash>.so where the hash covers
 * the shim, the wrappers, the flags, the compiler's name and the source;
 * files are written under unique temporary names and renamed, so processes
 * compiling the same module at once never load half a file.
 */
#define _GNU_SOURCE
#include "alloc.h"
#include "gpu_sim.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dlfcn.h>
#include <unistd.h>

extern char **environ;

/* Maps CUDA C onto C++ for the host. TY_SIM_SCAN (the preprocessing pass
 * that finds the kernels) marks each __global__. */
static const char SHIM[] =
    "/* tycho simulated GPU: CUDA C compiled for the host (runtime/src/gpu/gpu_sim.c) */\n"
    "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n"
    "#ifdef TY_SIM_SCAN\n#define __global__ TY_SIM_KERNEL\n#else\n#define __global__\n#endif\n"
    "#define __device__\n#define __host__\n#define __forceinline__ inline\n"
    "#define __launch_bounds__(...)\n#define __restrict__\n"
    "#define __shared__ static thread_local\n#define __syncthreads() ((void)0)\n"
    /* blocks run one after the other on the stream's thread: plain is atomic */
    "#define __threadfence() ((void)0)\n"
    "static inline unsigned atomicAdd(unsigned *p, unsigned v) { unsigned o = *p; *p = o + v; return o; }\n"
    "#define CUDART_INF HUGE_VAL\n#define CUDART_INF_F HUGE_VALF\n"
    "#define CUDART_NAN NAN\n#define CUDART_NAN_F NAN\n"
    "struct ty_sim_dim { unsigned x, y, z; };\n"
    "static thread_local ty_sim_dim blockIdx, threadIdx, blockDim, gridDim;\n"
    "static inline double __longlong_as_double(long long w) { double d; memcpy(&d, &w, 8); return d; }\n"
    "static inline long long __double_as_longlong(double d) { long long w; memcpy(&w, &d, 8); return w; }\n"
    "static inline float __uint_as_float(unsigned w) { float f; memcpy(&f, &w, 4); return f; }\n"
    TY__SIM_RN_SHIM /* rounded one by one (-ffp-contract=off below), as on a GPU */
    "#line 1 \"kernel.cu\"\n";

/* Runs a one-parameter kernel over a grid, one thread per block. */
static const char WRAPPERS[] =
    "\n/* the simulator's entry points (gpu_sim.c) */\n"
    "template <class A> static void ty_sim_grid(void (*f)(A), const void *p, unsigned gx, unsigned gy,\n"
    "                                           unsigned gz) {\n"
    "  gridDim = {gx, gy, gz};\n  blockDim = {1, 1, 1};\n  threadIdx = {0, 0, 0};\n"
    "  for (unsigned z = 0; z < gz; z++)\n    for (unsigned y = 0; y < gy; y++)\n"
    "      for (unsigned x = 0; x < gx; x++) {\n        blockIdx = {x, y, z};\n"
    "        f(*(const A *)p);\n      }\n}\n"
    "template <class A> static constexpr unsigned long ty_sim_size(void (*)(A)) { return sizeof(A); }\n"
    "struct ty_sim_kernel {\n  const char *name;\n"
    "  void (*run)(const void *, unsigned, unsigned, unsigned);\n  unsigned long size;\n};\n";

/* -fvisibility=hidden: a module exports its table only. Its template
 * functions' static locals (__shared__ arrays) would otherwise be
 * STB_GNU_UNIQUE symbols, bound process-wide across modules loaded
 * RTLD_LOCAL: another module's (or a test's emulation's) of the same name. */
static const char CXXFLAGS[] = "-std=c++17 -O2 -ffp-contract=off -fvisibility=hidden -fPIC -shared -w";

static const char *compiler(void) {
  const char *c = getenv("TYCHO_CXX");
  if (!c || !*c) c = getenv("CXX");
  return c && *c ? c : "c++";
}

/* fused_codegen.c's directory, and sim/ in it; "" when TYCHO_CACHE_DIR=off. */
static void cache_dir(char *buf, size_t len) {
  const char *d = getenv("TYCHO_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
  if (d && !strcmp(d, "off")) buf[0] = 0;
  else if (d && *d) snprintf(buf, len, "%s/sim", d);
  else if (x && *x) snprintf(buf, len, "%s/tycho/sim", x);
  else if (h && *h) snprintf(buf, len, "%s/.cache/tycho/sim", h);
  else snprintf(buf, len, "/tmp/tycho-cache-%ld/sim", (long)getuid());
}

static int mkdirs(const char *path) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
      *p = '/';
    }
  return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static bool write_file(const char *path, const char *a, size_t na, const char *b, size_t nb) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(a, 1, na, f) == na && fwrite(b, 1, nb, f) == nb;
  return (fclose(f) == 0) && ok;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  long size = -1;
  if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (buf = ty__malloc((size_t)size + 1))) {
    if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
      free(buf);
      buf = NULL;
    } else {
      buf[size] = 0;
      *len = (size_t)size;
    }
  }
  fclose(f);
  return buf;
}

/* Runs the compiler: argv[0] is it; its output goes to `log`. */
static bool run_compiler(char *const argv[], const char *log) {
  posix_spawn_file_actions_t fa;
  if (posix_spawn_file_actions_init(&fa) != 0) return false;
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    FILE *f = fopen(log, "w");
    if (f) {
      fprintf(f, "%s could not be started: %s\n", argv[0], strerror(rc));
      fclose(f);
    }
    return false;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* The compiler's first lines as the reason. */
static int compile_failed(const char *what, const char *log, char *why, size_t whylen) {
  size_t n = 0;
  char *text = read_file(log, &n);
  if (text) {
    int lines = 0;
    for (size_t i = 0; i < n; i++)
      if (text[i] == '\n' && ++lines == 8) {
        text[i] = 0;
        break;
      }
  }
  snprintf(why, whylen, "%s %s failed (the simulated GPU compiles CUDA C for the host): %s", compiler(), what,
           text && *text ? text : "no output");
  free(text);
  return TY__CUDA_ERROR_INVALID_SOURCE;
}

static bool is_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Appends to `out` the wrapper and table entry of every one-parameter
 * kernel in the preprocessed text `pp`; *nk counts them. */
static void wrap_kernels(const char *pp, ty_sbuf *out, int *nk) {
  ty_sbuf table = {0};
  static const char MARK[] = "TY_SIM_KERNEL";
  *nk = 0;
  for (const char *p = strstr(pp, MARK); p; p = strstr(p, MARK)) {
    p += sizeof MARK - 1;
    const char *paren = strchr(p, '(');
    if (!paren) break;
    const char *e = paren;
    while (e > p && (e[-1] == ' ' || e[-1] == '\n' || e[-1] == '\t')) e--;
    const char *s = e;
    while (s > p && is_ident(s[-1])) s--;
    /* one parameter: something between the parentheses, no comma at depth 1 */
    int depth = 0, commas = 0;
    bool any = false;
    const char *q = paren;
    for (; *q; q++) {
      if (*q == '(' || *q == '<' || *q == '[') depth++;
      else if (*q == ')' || *q == '>' || *q == ']') {
        if (--depth == 0) break;
      } else if (*q == ',' && depth == 1) commas++;
      else if (*q != ' ' && *q != '\n' && *q != '\t') any = true;
    }
    if (s == e || !any || commas) continue;
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(e - s), s);
    char key[140];
    snprintf(key, sizeof key, "{\"%s\",", name);
    if (table.p && strstr(table.p, key)) continue; /* a declaration, then the definition */
    ty__sb_printf(out,
                  "static void ty_sim_run_%d(const void *p, unsigned gx, unsigned gy, unsigned gz) {\n"
                  "  ty_sim_grid(%s, p, gx, gy, gz);\n}\n",
                  *nk, name);
    ty__sb_printf(&table, "  {\"%s\", ty_sim_run_%d, ty_sim_size(%s)},\n", name, *nk, name);
    ++*nk;
  }
  ty__sb_printf(out,
                "extern \"C\" __attribute__((visibility(\"default\"))) const ty_sim_kernel ty_sim_kernels[] = "
                "{\n%s  {0, 0, 0}};\n",
                table.p ? table.p : "");
  ty__sb_printf(out, "extern \"C\" __attribute__((visibility(\"default\"))) const int ty_sim_nkernels = %d;\n", *nk);
  free(table.p);
}

static uint64_t fnv(uint64_t h, const char *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

int ty__sim_compile(const char *src, void **so, char *why, size_t whylen) {
  *so = NULL;
  static atomic_uint serial;
  const char *cxx = compiler();
  uint64_t h = 0xcbf29ce484222325ULL;
  h = fnv(h, SHIM, sizeof SHIM);
  h = fnv(h, WRAPPERS, sizeof WRAPPERS);
  h = fnv(h, CXXFLAGS, sizeof CXXFLAGS);
  h = fnv(h, cxx, strlen(cxx) + 1);
  h = fnv(h, src, strlen(src));
  char dir[1024], tmpdir[64] = "";
  cache_dir(dir, sizeof dir);
  if (!dir[0] || mkdirs(dir) != 0) { /* no cache: a private directory, removed after */
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tycho-sim-XXXXXX");
    if (!mkdtemp(tmpdir)) {
      snprintf(why, whylen, "no directory to compile a simulated kernel in");
      return TY__CUDA_ERROR_INVALID_SOURCE;
    }
    snprintf(dir, sizeof dir, "%s", tmpdir);
  }
  char so_path[1100], base[1200], cu[1210], ii[1210], tso[1210], log[1210];
  snprintf(so_path, sizeof so_path, "%s/sim-%016llx.so", dir, (unsigned long long)h);
  int r = 0;
  if (access(so_path, R_OK) != 0) {
    /* unique temporaries, then rename: processes and threads compiling the
     * same kernel at once never see half a file */
    snprintf(base, sizeof base, "%s.%ld.%u", so_path, (long)getpid(), atomic_fetch_add(&serial, 1));
    snprintf(cu, sizeof cu, "%s.cc", base);
    snprintf(ii, sizeof ii, "%s.ii", base);
    snprintf(tso, sizeof tso, "%s.so", base);
    snprintf(log, sizeof log, "%s.log", base);
    char *pp = NULL;
    size_t ppn = 0;
    ty_sbuf text = {0};
    ty__sb_printf(&text, "%s%s", SHIM, src);
    if (!write_file(cu, text.p ? text.p : "", text.len, "", 0)) {
      r = TY__CUDA_ERROR_INVALID_SOURCE;
      snprintf(why, whylen, "cannot write %s: %s", cu, strerror(errno));
    } else {
      char *scan[] = {(char *)cxx, "-std=c++17", "-E", "-P", "-DTY_SIM_SCAN", "-x", "c++", cu, "-o", ii, NULL};
      if (!run_compiler(scan, log)) {
        r = compile_failed("-E (preprocessing)", log, why, whylen);
      } else if (!(pp = read_file(ii, &ppn))) {
        r = TY__CUDA_ERROR_INVALID_SOURCE;
        snprintf(why, whylen, "cannot read %s", ii);
      }
    }
    if (!r) {
      int nk;
      ty__sb_printf(&text, "%s", WRAPPERS);
      wrap_kernels(pp, &text, &nk);
      if (text.failed || !write_file(cu, text.p, text.len, "", 0)) {
        r = TY__CUDA_ERROR_INVALID_SOURCE;
        snprintf(why, whylen, "cannot write %s", cu);
      } else {
        char flags[sizeof CXXFLAGS];
        memcpy(flags, CXXFLAGS, sizeof flags);
        char *argv[24] = {(char *)cxx};
        int n = 1;
        for (char *save = NULL, *t = strtok_r(flags, " ", &save); t && n < 16; t = strtok_r(NULL, " ", &save))
          argv[n++] = t;
        char *rest[] = {"-x", "c++", cu, "-o", tso, NULL};
        for (int i = 0; rest[i]; i++) argv[n++] = rest[i];
        argv[n] = NULL;
        if (!run_compiler(argv, log)) {
          r = compile_failed("(compiling)", log, why, whylen);
        } else if (rename(tso, so_path) != 0) {
          r = TY__CUDA_ERROR_INVALID_SOURCE;
          snprintf(why, whylen, "cannot rename %s: %s", tso, strerror(errno));
        }
      }
    }
    free(pp);
    free(text.p);
    unlink(cu);
    unlink(ii);
    unlink(tso);
    unlink(log);
  }
  if (!r) {
    *so = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    if (!*so) {
      r = TY__CUDA_ERROR_INVALID_IMAGE;
      snprintf(why, whylen, "dlopen(%s): %s", so_path, dlerror());
    }
  }
  if (tmpdir[0]) {
    unlink(so_path); /* the handle keeps it mapped */
    rmdir(tmpdir);
  }
  return r;
}
