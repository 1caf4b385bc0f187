/*
 * test_codegen_async.c — compiles in the background (fused_codegen.c,
 * codegen_cc.c): a fused run whose kernel is still compiling runs in the
 * interpreter and gives the unfused bits; once the compile is done, a later
 * run of the same structure uses the compiled kernel and gives the same
 * bits; a runtime destroyed with a compile in flight returns at once, leaves
 * no child process, and the compile goes on to install its kernel; a
 * failing compiler leaves the run to the interpreter and no file behind.
 *
 * The compiler is made slow by a wrapper script (TYCHO_CC: sleep, then cc)
 * written into the test's directory; each test has its own cache directory
 * there (tycho-async-cache-<test>), emptied first.
 */
#include "check.h"
#include "req.h"
#include "fused.h"
#include "internal.h"
#include "codegen_cc.h"
#include "team.h"

#include <tycho/tycho.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A compiler that sleeps `secs` first (or fails when secs < 0), as TYCHO_CC,
 * and an empty cache directory `name` as TYCHO_CACHE_DIR; background
 * compiles at first sight (always, not waited for). */
static char cache[1024];
static void setup(const char *name, double secs) {
  char cwd[800], cc[1024], cmd[2200];
  if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, "/tmp");
  snprintf(cache, sizeof cache, "%s/tycho-async-cache-%s", cwd, name);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
  CHECK(system(cmd) == 0);
  snprintf(cc, sizeof cc, "%s/tycho-async-cc-%s.sh", cwd, name);
  FILE *f = fopen(cc, "w");
  CHECK(f != NULL);
  if (secs < 0) fprintf(f, "#!/bin/sh\nexit 1\n");
  else fprintf(f, "#!/bin/sh\nsleep %g\nexec cc \"$@\"\n", secs);
  fclose(f);
  chmod(cc, 0755);
  setenv("TYCHO_CC", cc, 1);
  setenv("TYCHO_CACHE_DIR", cache, 1);
  setenv("TYCHO_CODEGEN", "always", 1);
  setenv("TYCHO_CODEGEN_WAIT", "0", 1);
}

static void teardown(void) {
  unsetenv("TYCHO_CC");
  unsetenv("TYCHO_CODEGEN");
  unsetenv("TYCHO_CODEGEN_WAIT");
}

/* Overwrites setup's compiler script `tycho-async-cc-<name>.sh` (into cc)
 * with one that logs each try's niceness to `log` and sleeps 60 s when it
 * runs niced below our priority; returns our niceness. */
static int logging_cc(const char *name, char *cc, char *log) {
  errno = 0;
  const int base = getpriority(PRIO_PROCESS, 0);
  CHECK(errno == 0);
  char cwd[800];
  if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, "/tmp");
  snprintf(cc, 1024, "%s/tycho-async-cc-%s.sh", cwd, name);
  snprintf(log, 1024, "%s/tycho-async-cc-%s.log", cwd, name);
  unlink(log);
  FILE *f = fopen(cc, "w");
  CHECK(f != NULL);
  fprintf(f, "#!/bin/sh\nn=$(nice)\necho $n >> '%s'\nif [ $n -gt %d ]; then sleep 60; fi\nexec cc \"$@\"\n",
          log, base);
  fclose(f);
  return base;
}

/* Files of the cache directory: kernels (fk-*.so), their sources (fk-*.c),
 * and anything else (temporaries, failure marks). */
static void count_files(int *so, int *src, int *other) {
  *so = *src = *other = 0;
  DIR *d = opendir(cache);
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    const char *n = e->d_name;
    if (n[0] == '.') continue;
    size_t l = strlen(n);
    bool fk = strncmp(n, "fk-", 3) == 0 && l == 3 + 16 + 3;
    if (fk && strcmp(n + l - 3, ".so") == 0) (*so)++;
    else if (l == 3 + 16 + 2 && strncmp(n, "fk-", 3) == 0 && strcmp(n + l - 2, ".c") == 0) (*src)++;
    else (*other)++;
  }
  closedir(d);
}

enum { N = 100003 };
enum { CG_SMALL_HOT_FOR_TEST = 8 }; /* fused_codegen.c's CG_SMALL_HOT */

static ty_store *input(ty_runtime *rt, double scale, double shift) {
  static double v[N];
  for (int i = 0; i < N; i++) v[i] = sin((double)i * scale) * 40.0 + shift;
  v[7] = NAN, v[11] = INFINITY, v[13] = -0.0, v[17] = 1e300;
  ty_store *s = NULL;
  int64_t n = N;
  REQ(rt, ty_store_from_buffer(rt, TY_F64, 1, &n, v, &s));
  return s;
}

static ty_store *un(ty_runtime *rt, ty_op op, ty_store *a) {
  ty_store *r = NULL;
  REQ(rt, ty_unary(rt, op, a, &r));
  return r;
}
static ty_store *bin(ty_runtime *rt, ty_op op, ty_store *a, ty_store *b) {
  ty_store *r = NULL;
  REQ(rt, ty_binary(rt, op, a, b, &r));
  return r;
}
static ty_store *sc(ty_runtime *rt, double x) {
  ty_store *r = NULL;
  REQ(rt, ty_scalar_f64(rt, TY_F64, x, &r));
  return r;
}

/* One element-wise chain (one fused run) over a and b with the math
 * functions the generator covers; `which` picks one of three chains. The
 * temporaries are released as built, so the run keeps them in slots. */
static ty_store *tmp[64];
static int nt;
static ty_store *keep(ty_store *x) { return tmp[nt++] = x; }
#define T(x) keep(x)
static ty_store *chain(ty_runtime *rt, ty_store *a, ty_store *b, int which) {
  nt = 0;
  ty_store *r;
  if (which == 0) { /* exp log sin cos tanh sqrt pow, where, comparisons */
    ty_store *x = T(bin(rt, TY_OP_MUL, a, b));
    ty_store *s = T(un(rt, TY_OP_SIN, x)), *c = T(un(rt, TY_OP_COS, b));
    ty_store *e = T(un(rt, TY_OP_EXP, T(un(rt, TY_OP_NEG, T(bin(rt, TY_OP_MUL, T(sc(rt, 1e-3)), T(bin(rt, TY_OP_MUL, a, a))))))));
    ty_store *l = T(un(rt, TY_OP_LOG, T(bin(rt, TY_OP_ADD, T(un(rt, TY_OP_ABS, b)), T(sc(rt, 1.0))))));
    ty_store *p = T(bin(rt, TY_OP_POW, T(un(rt, TY_OP_ABS, a)), T(sc(rt, 0.37))));
    ty_store *q = T(bin(rt, TY_OP_POW, b, T(sc(rt, 2.0)))); /* squares */
    ty_store *m = T(bin(rt, TY_OP_LT, a, b)), *w = NULL;
    REQ(rt, ty_where(rt, m, T(bin(rt, TY_OP_ADD, s, c)), T(bin(rt, TY_OP_MUL, e, l)), &w));
    T(w);
    ty_store *t = T(un(rt, TY_OP_TANH, T(bin(rt, TY_OP_DIV, a, T(sc(rt, 7.0))))));
    ty_store *sq = T(un(rt, TY_OP_SQRT, T(un(rt, TY_OP_ABS, b))));
    r = bin(rt, TY_OP_ADD, T(bin(rt, TY_OP_ADD, T(bin(rt, TY_OP_SUB, w, t)), T(bin(rt, TY_OP_MAXIMUM, p, q)))), sq);
  } else if (which == 1) { /* the ufuncs of issue 18 */
    ty_store *h = T(bin(rt, TY_OP_HYPOT, a, b)), *at = T(bin(rt, TY_OP_ARCTAN2, a, b));
    ty_store *sh = T(un(rt, TY_OP_SINH, T(bin(rt, TY_OP_DIV, b, T(sc(rt, 4.0))))));
    ty_store *cb = T(un(rt, TY_OP_CBRT, a)), *lp = T(un(rt, TY_OP_LOG1P, T(un(rt, TY_OP_ABS, a))));
    ty_store *tn = T(un(rt, TY_OP_TAN, b)), *fl = T(un(rt, TY_OP_FLOOR, T(bin(rt, TY_OP_FLOORDIV, a, T(sc(rt, 3.0))))));
    ty_store *ex = T(un(rt, TY_OP_EXPM1, T(bin(rt, TY_OP_MINIMUM, b, T(sc(rt, 5.0))))));
    r = bin(rt, TY_OP_ADD, T(bin(rt, TY_OP_MUL, T(bin(rt, TY_OP_ADD, h, at)), T(bin(rt, TY_OP_SUB, sh, cb)))),
            T(bin(rt, TY_OP_ADD, T(bin(rt, TY_OP_ADD, lp, tn)), T(bin(rt, TY_OP_SUB, fl, ex)))));
  } else if (which == 3) { /* additions and products only: no library call */
    r = bin(rt, TY_OP_SUB, T(bin(rt, TY_OP_MUL, T(bin(rt, TY_OP_ADD, a, b)), a)), T(bin(rt, TY_OP_MUL, b, T(sc(rt, 0.5)))));
  } else { /* Black-Scholes' normal CDF */
    ty_store *k = T(bin(rt, TY_OP_DIV, T(sc(rt, 1.0)), T(bin(rt, TY_OP_ADD, T(bin(rt, TY_OP_MUL, T(un(rt, TY_OP_ABS, b)), T(sc(rt, 0.2316419)))), T(sc(rt, 1.0))))));
    ty_store *poly = T(bin(rt, TY_OP_MUL, k, T(bin(rt, TY_OP_ADD, T(bin(rt, TY_OP_MUL, k, T(sc(rt, 1.330274429)))), T(sc(rt, -1.821255978))))));
    ty_store *c = T(bin(rt, TY_OP_MUL, T(un(rt, TY_OP_EXP, T(bin(rt, TY_OP_MUL, T(bin(rt, TY_OP_MUL, b, T(sc(rt, -0.5)))), b)))), poly));
    ty_store *w = NULL;
    REQ(rt, ty_where(rt, T(bin(rt, TY_OP_GT, b, T(sc(rt, 0.0)))), T(bin(rt, TY_OP_SUB, T(sc(rt, 1.0)), c)), c, &w));
    r = w;
  }
  for (int i = 0; i < nt; i++)
    if (tmp[i] != r) ty_store_release(tmp[i]);
  return r;
}

/* The chain's bytes in a runtime (its inputs made there); *kernel: whether
 * its fused run was given a compiled kernel. */
static double *run_chain(ty_runtime *rt, int which, bool *kernel) {
  ty_store *a = input(rt, 0.37, 0.5), *b = input(rt, 0.011, 0.0);
  REQ(rt, ty_flush(rt)); /* the inputs: not part of the run */
  ty_store *r = chain(rt, a, b, which);
  ty_store_release(a), ty_store_release(b);
  *kernel = false;
  ty__fuse(rt);
  for (int i = 0; i < rt->nwindow; i++)
    if (rt->window[i]->task == ty__fused_task(rt))
      *kernel |= ((const ty__fhead *)rt->window[i]->scalars)->kernel != 0;
  double *v = malloc(N * sizeof *v);
  REQ(rt, ty_store_read(rt, r, v, N * sizeof *v));
  ty_store_release(r);
  return v;
}

static double *unfused(int which) {
  ty_runtime *rt = req_runtime(3, false);
  bool k;
  double *v = run_chain(rt, which, &k);
  ty_runtime_destroy(rt);
  return v;
}

/* The same bits, except that two NaNs are equal: where two NaNs meet in a
 * commutative operation (x * y, both NaN), x86 returns the first operand's,
 * and the compiler may swap the operands in the kernels and in generated
 * code alike, so the NaN's sign may differ between the two paths
 * (docs/fusion.md, Results). Every other element is compared bit for bit. */
static bool same_n(const double *a, const double *b, int n) {
  for (int i = 0; i < n; i++)
    if (memcmp(&a[i], &b[i], sizeof a[i]) != 0 && !(isnan(a[i]) && isnan(b[i]))) {
      fprintf(stderr, "  element %d: %.17g against %.17g\n", i, a[i], b[i]);
      return false;
    }
  return true;
}

static bool same(const double *a, const double *b) { return same_n(a, b, N); }

/* Runs chain `which` on rt and checks its values are ref's bits; whether
 * its kernel ran. */
static bool run_same(ty_runtime *rt, int which, const double *ref) {
  bool kernel = false;
  double *got = run_chain(rt, which, &kernel);
  CHECK(same(ref, got));
  free(got);
  return kernel;
}

/* No child of this process is left (all reaped). */
static bool no_children(void) {
  int st;
  return waitpid(-1, &st, WNOHANG) < 0 && errno == ECHILD;
}

/* (a)-(c): while compiling, the interpreter; then the switch; the same bits */
TEST(runs_while_compiling_then_switches_same_bits) {
  setup("switch", 1.0);
  for (int which = 0; which < 3; which++) {
    double *ref = unfused(which);
    ty_runtime *rt = req_runtime(3, true);
    bool kernel = true;
    double *got = run_chain(rt, which, &kernel);
    CHECK(!kernel); /* the compile takes a second at least: interpreted */
    ty_stats st;
    ty_get_stats(rt, &st);
    CHECK_EQ_INT(st.fused_compiled, 0);
    CHECK(st.fused_runs >= 1);
    CHECK(same(ref, got));
    free(got);
    if (ty__isa_lanes()) { /* the level has generated code (isa.h) */
      /* the same structure again until its kernel is loaded (the switch) */
      const double t0 = now();
      while (!kernel && now() - t0 < 120) {
        usleep(50000);
        got = run_chain(rt, which, &kernel);
        bool ok = same(ref, got);
        if (!ok) fprintf(stderr, "chain %d differs (%s)\n", which, kernel ? "compiled" : "interpreted");
        CHECK(ok);
        free(got);
      }
      CHECK(kernel);
      ty_stats st0, st1;
      ty_get_stats(rt, &st0);
      got = run_chain(rt, which, &kernel); /* and it stays */
      ty_get_stats(rt, &st1);
      CHECK(kernel);
      /* counted: one more fused run, and it was compiled */
      CHECK_EQ_INT(st1.fused_runs - st0.fused_runs, 1);
      CHECK_EQ_INT(st1.fused_compiled - st0.fused_compiled, 1);
      char *text = NULL;
      CHECK(ty_stats_format(rt, "json", &text) == TY_OK);
      CHECK(text && strstr(text, "\"fused_compiled\": "));
      free(text);
      CHECK(same(ref, got));
      free(got);
    }
    ty_runtime_destroy(rt);
    free(ref);
  }
  int so, src, other;
  count_files(&so, &src, &other);
  if (ty__isa_lanes()) CHECK_EQ_INT(so, 3);
  CHECK_EQ_INT(so, src);
  CHECK_EQ_INT(other, 0);
  CHECK(no_children());
  teardown();
}

/* By default (TYCHO_CODEGEN unset) a run under CG_HOT_ELEMS (2^18; N is
 * 100,003) is compiled from its structure's 8th sight (CG_SMALL_HOT), not
 * its first: a one-off starts no compile, even in runtimes one after another
 * (a structure's sights are counted per runtime); a loop's run switches,
 * with the interpreter's bits throughout; a kernel in the cache is loaded
 * at first sight. */
TEST(runs_under_2p18_compile_from_the_eighth_sight) {
  setup("loop", 0);
  unsetenv("TYCHO_CODEGEN"); /* the default mode */
  double *ref = unfused(2);
  int so, src, other;
  for (int r = 0; r < 3; r++) { /* one sight each */
    ty_runtime *rt = req_runtime(3, true);
    CHECK(!run_same(rt, 2, ref)); /* interpreted, the same bits */
    ty_runtime_destroy(rt);
  }
  count_files(&so, &src, &other);
  CHECK_EQ_INT(so + src + other, 0); /* no compile was started */
  ty_runtime *rt = req_runtime(3, true);
  bool kernel = false;
  int sights = 0;
  for (; sights < CG_SMALL_HOT_FOR_TEST - 1; sights++) {
    double *got = run_chain(rt, 2, &kernel);
    CHECK(!kernel);
    CHECK(same(ref, got));
    free(got);
  }
  count_files(&so, &src, &other);
  CHECK_EQ_INT(so + src + other, 0); /* 7 sights: none yet */
  if (ty__isa_lanes()) {
    for (const double t0 = now(); !kernel && now() - t0 < 120; sights++) {
      if (sights >= CG_SMALL_HOT_FOR_TEST) usleep(50000);
      double *got = run_chain(rt, 2, &kernel);
      CHECK(same(ref, got));
      free(got);
    }
    CHECK(kernel);
    count_files(&so, &src, &other);
    CHECK_EQ_INT(so, 1);
    CHECK_EQ_INT(src, 1);
    CHECK_EQ_INT(other, 0);
    ty_runtime_destroy(rt);
    rt = req_runtime(3, true); /* warm: the cache's kernel at first sight */
    double *got = run_chain(rt, 2, &kernel);
    CHECK(kernel);
    CHECK(same(ref, got));
    free(got);
  }
  ty_runtime_destroy(rt);
  free(ref);
  CHECK(no_children());
  teardown();
}

/* (d): a runtime destroyed with a compile in flight returns at once and
 * leaves no child; the compile installs its kernel on its own, and a new
 * runtime finds it at first sight */
TEST(shutdown_with_a_compile_in_flight) {
  setup("shutdown", 2.0);
  double *ref = unfused(0);
  ty_runtime *rt = req_runtime(3, true);
  CHECK(!run_same(rt, 0, ref)); /* interpreted, the same bits */
  const double t0 = now();
  ty_runtime_destroy(rt);
  CHECK(now() - t0 < 1.5); /* not waiting for the 2 s compile */
  CHECK(no_children());
  if (ty__isa_lanes()) {
    int so = 0, src, other;
    for (const double t1 = now(); so == 0 && now() - t1 < 120;) {
      usleep(50000);
      count_files(&so, &src, &other);
    }
    CHECK_EQ_INT(so, 1);
    for (const double t1 = now(); (src == 0 || other > 0) && now() - t1 < 10;) {
      usleep(20000); /* the source's rename and the temporaries' removal follow */
      count_files(&so, &src, &other);
    }
    CHECK_EQ_INT(src, 1);
    CHECK_EQ_INT(other, 0);
    rt = req_runtime(1, true);
    CHECK(run_same(rt, 0, ref)); /* from the disk cache, at once */
    ty_runtime_destroy(rt);
  }
  free(ref);
  teardown();
}

/* a compiler that fails: the interpreter, every time; nothing left behind */
TEST(failing_compiler_leaves_the_interpreter) {
  setup("fail", -1);
  double *ref = unfused(2);
  ty_runtime *rt = req_runtime(3, true);
  for (int i = 0; i < 20; i++) {
    CHECK(!run_same(rt, 2, ref)); /* interpreted, the same bits */
    usleep(50000);
  }
  ty_runtime_destroy(rt);
  int so, src, other;
  count_files(&so, &src, &other);
  CHECK_EQ_INT(so, 0);
  CHECK_EQ_INT(other, 0);
  CHECK(no_children());
  free(ref);
  teardown();
}

/* TYCHO_CODEGEN_WAIT=1: the first sight waits for the compile */
TEST(wait_compiles_at_first_sight) {
  setup("wait", 0.2);
  setenv("TYCHO_CODEGEN_WAIT", "1", 1);
  double *ref = unfused(1);
  ty_runtime *rt = req_runtime(3, true);
  bool kernel = false;
  double *got = run_chain(rt, 1, &kernel);
  CHECK(kernel == (ty__isa_lanes() != 0));
  CHECK(same(ref, got));
  free(got);
  ty_runtime_destroy(rt);
  CHECK(no_children());
  free(ref);
  teardown();
}

/* Runs the chain every step_us until its kernel is installed (30 s at
 * most), each time with ref's values; whether it was. */
static bool wait_kernel(ty_runtime *rt, const double *ref, useconds_t step_us) {
  bool kernel = false;
  const double t0 = now();
  while (!kernel && now() - t0 < 30) {
    usleep(step_us);
    double *got = run_chain(rt, 2, &kernel);
    CHECK(same(ref, got));
    free(got);
  }
  return kernel;
}

/* The niceness of each try logging_cc's compiler logged (up to 3); how many. */
static int read_tries(const char *log, int tries[3]) {
  int nt = 0;
  tries[0] = tries[1] = tries[2] = -100;
  FILE *f = fopen(log, "r");
  CHECK(f != NULL);
  while (f && nt < 3 && fscanf(f, "%d", &tries[nt]) == 1) nt++;
  if (f) fclose(f);
  return nt;
}

/* A background compile of a young runtime holds (codegen_cc.c: sleeps
 * what is left of the runtime's first TY__CC_HOLD_S) and then compiles at
 * the program's own priority, never niced (until session 23 a niced try
 * came first): here the compiler "starves" (sleeps 60 s) whenever it runs
 * niced, yet the kernel is installed within seconds, by one try at this
 * process's priority, which it logs. */
TEST(held_compile_runs_at_own_priority) {
  setup("niced", 0);
  char cc[1024], log[1024];
  const int base = logging_cc("niced", cc, log);
  double *ref = unfused(2);
  ty_runtime *rt = req_runtime(3, true);
  CHECK(!run_same(rt, 2, ref)); /* interpreted, the same bits */
  if (ty__isa_lanes()) {
    CHECK(wait_kernel(rt, ref, 50000)); /* well before a niced try's 60 s */
    int tries[3];
    const int nt_ = read_tries(log, tries);
    CHECK_EQ_INT(nt_, 1);
    CHECK_EQ_INT(tries[0], base); /* at our priority */
  }
  ty_runtime_destroy(rt);
  CHECK(no_children());
  free(ref);
  teardown();
}

/* A program already older than the hold (TY__CC_HOLD_S) is not a short
 * one: its compiles start at its own priority at once, without a hold
 * (fused_codegen.c, hold_for). The logging compiler records one
 * try, at our niceness. */
TEST(old_program_compiles_at_own_priority_at_once) {
  setup("old", 0);
  char cc[1024], log[1024];
  const int base = logging_cc("old", cc, log);
  double *ref = unfused(2);
  ty_runtime *rt = req_runtime(3, true);
  usleep((useconds_t)(TY__CC_HOLD_S * 1e6) + 100000); /* older than the hold */
  CHECK(!run_same(rt, 2, ref)); /* interpreted, the same bits */
  if (ty__isa_lanes()) {
    CHECK(wait_kernel(rt, ref, 20000));
    int tries[3];
    const int nt_ = read_tries(log, tries);
    CHECK_EQ_INT(nt_, 1);
    CHECK_EQ_INT(tries[0], base); /* at our priority */
  }
  ty_runtime_destroy(rt);
  CHECK(no_children());
  free(ref);
  teardown();
}

/* Every source compiles at -O1 whatever its size (codegen_cc.c; before
 * session 17, -O2 below 8 KiB). A logging compiler records the level of
 * each compile, waited for here; both objects are installed. (That -O1
 * kernels give the interpreter's bits: test_fuse, test_codegen_async's
 * chains, the determinism specs.) */
TEST(small_and_large_sources_compile_at_O1) {
  setup("level", 0);
  char cwd[800], cc[1024], log[1024], so[1200], src[1200];
  if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, "/tmp");
  snprintf(cc, sizeof cc, "%s/tycho-async-cc-level.sh", cwd);
  snprintf(log, sizeof log, "%s/tycho-async-cc-level.log", cwd);
  unlink(log);
  FILE *f = fopen(cc, "w");
  CHECK(f != NULL);
  fprintf(f, "#!/bin/sh\nfor a do case $a in -O*) echo $a >> '%s';; esac; done\nexec cc \"$@\"\n", log);
  fclose(f);
  CHECK(mkdir(cache, 0755) == 0);
  static char text[9000];
  const char *body = "int tycho_level_probe(int x) { return x + 1; }\n";
  const size_t sizes[2] = {strlen(body), 8192};
  for (int i = 0; i < 2; i++) {
    size_t len = sizes[i];
    memset(text, ' ', len);
    memcpy(text, body, strlen(body));
    if (len > strlen(body)) text[len - 1] = '\n';
    snprintf(so, sizeof so, "%s/fk-level%d.so", cache, i);
    snprintf(src, sizeof src, "%s/fk-level%d.c", cache, i);
    ty__ccjob j;
    const ty__cckernel k = {so, src, text, len};
    CHECK(ty__cc_start(&j, cc, &k, 1, text, len, true, false, 0, NULL));
    CHECK_EQ_INT(ty__cc_poll(&j, true), 1);
    CHECK(access(so, R_OK) == 0);
  }
  char levels[2][8] = {"", ""};
  f = fopen(log, "r");
  CHECK(f != NULL);
  for (int i = 0; f && i < 2; i++) CHECK(fscanf(f, "%7s", levels[i]) == 1);
  if (f) fclose(f);
  CHECK(strcmp(levels[0], "-O1") == 0);
  CHECK(strcmp(levels[1], "-O1") == 0);
  CHECK(no_children());
  teardown();
}


/* The new kernels of one flush compile in ONE compiler process (one unit:
 * codegen_cc.h): three chains, each ending in a sum (three fused runs, three
 * structures), give one compile, which a logging compiler sees once (twice
 * when the niced try was stopped at its cap on a loaded machine and run
 * again: codegen_cc.c), where one compile per kernel would log three calls
 * at least; every run switches to its kernel with the unfused bits
 * (element-wise) and the interpreted run's bits (the sums; NaN equals NaN,
 * as in same()); the three objects are one file (hard links); the three
 * sources lie beside them and no temporary is left. */
static int nkernels;
static void three_runs(ty_runtime *rt, double *out[3], double sums[3]) {
  ty_store *a = input(rt, 0.37, 0.5), *b = input(rt, 0.011, 0.0);
  REQ(rt, ty_flush(rt));
  ty_store *r[3], *s[3];
  for (int w = 0; w < 3; w++) {
    r[w] = chain(rt, a, b, w);
    REQ(rt, ty_reduce(rt, TY_RED_SUM, r[w], -1, &s[w]));
  }
  ty_store_release(a), ty_store_release(b);
  ty__fuse(rt);
  nkernels = 0;
  for (int i = 0; i < rt->nwindow; i++)
    if (rt->window[i]->task == ty__fused_task(rt))
      nkernels += ((const ty__fhead *)rt->window[i]->scalars)->kernel != 0;
  for (int w = 0; w < 3; w++) {
    out[w] = malloc(N * sizeof *out[w]);
    REQ(rt, ty_store_read(rt, r[w], out[w], N * sizeof *out[w]));
    REQ(rt, ty_store_read(rt, s[w], &sums[w], sizeof sums[w]));
    ty_store_release(r[w]), ty_store_release(s[w]);
  }
}

/* A compiler wrapper tycho-async-cc-<tag>.sh in the working directory
 * (its path into cc) that appends `echo what` to tycho-async-cc-<tag>.log
 * (emptied; its path into log) and runs cc. */
static void cc_wrapper(const char *tag, const char *what, char cc[1024], char log[1024]) {
  char cwd[800];
  if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, "/tmp");
  snprintf(cc, 1024, "%s/tycho-async-cc-%s.sh", cwd, tag);
  snprintf(log, 1024, "%s/tycho-async-cc-%s.log", cwd, tag);
  unlink(log);
  FILE *f = fopen(cc, "w");
  CHECK(f != NULL);
  if (!f) return;
  fprintf(f, "#!/bin/sh\necho %s >> '%s'\nexec cc \"$@\"\n", what, log);
  fclose(f);
}

TEST(new_kernels_of_a_flush_share_one_compile) {
  setup("unit", 0);
  char cc[1024], log[1024];
  cc_wrapper("unit", "cc", cc, log);
  double *ref[3], *got[3], s0[3], s1[3];
  ty_runtime *rt = req_runtime(3, false);
  three_runs(rt, ref, s0);
  ty_runtime_destroy(rt);
  rt = req_runtime(3, true);
  three_runs(rt, got, s0); /* the first sight: interpreted, the three queued */
  CHECK_EQ_INT(nkernels, 0);
  for (int w = 0; w < 3; w++) {
    CHECK(same(ref[w], got[w]));
    free(got[w]);
  }
  if (ty__isa_lanes()) {
    for (const double t0 = now(); nkernels < 3 && now() - t0 < 120;) {
      usleep(50000);
      three_runs(rt, got, s1);
      for (int w = 0; w < 3; w++) {
        CHECK(same(ref[w], got[w]));
        CHECK(memcmp(&s0[w], &s1[w], sizeof s1[w]) == 0 || (isnan(s0[w]) && isnan(s1[w])));
        free(got[w]);
      }
    }
    CHECK_EQ_INT(nkernels, 3); /* all three compiled, by one compile: */
    int calls = 0;
    char line[16];
    FILE *f = fopen(log, "r");
    CHECK(f != NULL);
    while (f && fgets(line, sizeof line, f)) calls++;
    if (f) fclose(f);
    CHECK(calls == 1 || calls == 2);
    int so, src, other;
    count_files(&so, &src, &other);
    CHECK_EQ_INT(so, 3);
    CHECK_EQ_INT(src, 3);
    CHECK_EQ_INT(other, 0);
    DIR *d = opendir(cache);
    CHECK(d != NULL);
    ino_t ino[3] = {0};
    int nso = 0, linked = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
      size_t l = strlen(e->d_name);
      if (l < 3 || strcmp(e->d_name + l - 3, ".so") != 0) continue;
      char path[1400];
      struct stat st;
      snprintf(path, sizeof path, "%s/%s", cache, e->d_name);
      CHECK(stat(path, &st) == 0);
      if (nso < 3) ino[nso++] = st.st_ino;
    }
    if (d) closedir(d);
    for (int i = 0; i < nso; i++)
      for (int k = 0; k < nso; k++) linked += i != k && ino[i] == ino[k];
    CHECK_EQ_INT(nso, 3);
    CHECK_EQ_INT(linked, 6); /* one file */
  }
  ty_runtime_destroy(rt);
  for (int w = 0; w < 3; w++) free(ref[w]);
  CHECK(no_children());
  teardown();
}

/* Switching inside a launch (fused_cpu.c): a launch fused while its kernel
 * compiles runs interpreted in chunks of 2^18 elements and, once the kernel
 * is in the cache, runs the rest of its piece compiled; the result has the
 * unfused bits (NaN equals NaN, as in same()). Made deterministic: the
 * compiler waits for a file that the test hook (called before each chunk's
 * check) makes after the first chunk, and then waits until the kernel is
 * installed, so the next check finds it mid-piece. */
enum { NB = 3 * (1 << 18) + 12345 };
static char go[1100];
static int hook_fired;
static void switch_hook(int64_t done) {
  int armed = 0;
  if (done == 0 || !__atomic_compare_exchange_n(&hook_fired, &armed, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    return;
  FILE *f = fopen(go, "w");
  if (f) fclose(f);
  int so = 0, src, other;
  for (const double t0 = now(); so == 0 && now() - t0 < 120;) {
    usleep(10000);
    count_files(&so, &src, &other);
  }
}

/* The two inputs of a long chain (n elements, with a NaN, an infinity,
 * a negative zero and a huge value), flushed; v is left holding the
 * second. */
static void wide_inputs(ty_runtime *rt, double *v, int64_t n, ty_store *in[2]) {
  for (int k = 0; k < 2; k++) {
    for (int64_t i = 0; i < n; i++) v[i] = sin((double)i * (k ? 0.011 : 0.37)) * 40.0 + (k ? 0.0 : 0.5);
    v[7] = NAN, v[11] = INFINITY, v[13] = -0.0, v[n - 5] = 1e300;
    REQ(rt, ty_store_from_buffer(rt, TY_F64, 1, &n, v, &in[k]));
  }
  REQ(rt, ty_flush(rt));
}

static double *run_big(ty_runtime *rt, bool *pending) {
  double *v = malloc(NB * sizeof *v);
  ty_store *in[2];
  wide_inputs(rt, v, NB, in);
  ty_store *r = chain(rt, in[0], in[1], 0);
  ty_store_release(in[0]), ty_store_release(in[1]);
  ty__fuse(rt);
  *pending = false;
  for (int i = 0; i < rt->nwindow; i++)
    if (rt->window[i]->task == ty__fused_task(rt)) {
      const ty__fhead *h = (const ty__fhead *)rt->window[i]->scalars;
      *pending |= !h->kernel && h->pending;
    }
  REQ(rt, ty_store_read(rt, r, v, NB * sizeof *v));
  ty_store_release(r);
  return v;
}

/* setup() with a compiler that waits for the file `go` (switch_hook makes it) */
static void setup_held(const char *name) {
  setup(name, 0);
  char cwd[800], cc[1024];
  if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, "/tmp");
  snprintf(go, sizeof go, "%s/tycho-async-go-%s", cwd, name);
  unlink(go);
  snprintf(cc, sizeof cc, "%s/tycho-async-cc-%s.sh", cwd, name);
  FILE *f = fopen(cc, "w");
  CHECK(f != NULL);
  fprintf(f, "#!/bin/sh\nwhile [ ! -e '%s' ]; do sleep 0.01; done\nexec cc \"$@\"\n", go);
  fclose(f);
  hook_fired = 0;
}

/* no compile left waiting */
static void release_held(void) {
  FILE *f = fopen(go, "w");
  if (f) fclose(f);
}

TEST(switches_inside_a_launch_same_bits) {
  setup_held("inside");
  bool pending = false;
  ty_runtime *rt = req_runtime(2, false);
  double *ref = run_big(rt, &pending);
  ty_runtime_destroy(rt);
  rt = req_runtime(2, true);
  ty__fslot_test_hook = switch_hook;
  double *got = run_big(rt, &pending);
  ty__fslot_test_hook = NULL;
  bool ok = true;
  for (int i = 0; i < NB && ok; i++)
    if (memcmp(&ref[i], &got[i], sizeof ref[i]) != 0 && !(isnan(ref[i]) && isnan(got[i]))) {
      fprintf(stderr, "  element %d: %.17g against %.17g\n", i, ref[i], got[i]);
      ok = false;
    }
  CHECK(ok);
  ty_stats st;
  ty_get_stats(rt, &st);
  CHECK_EQ_INT(st.fused_compiled, 0); /* the launch was not given the kernel */
  if (ty__isa_lanes()) {
    CHECK(pending);
    CHECK_EQ_INT(hook_fired, 1);
    CHECK(st.fused_switched >= 1);
    char *text = NULL;
    CHECK(ty_stats_format(rt, "text", &text) == TY_OK);
    CHECK(text && strstr(text, " pieces switched, "));
    free(text);
  }
  ty_runtime_destroy(rt);
  release_held();
  free(ref), free(got);
  CHECK(no_children());
  teardown();
}

/* The same for a 2-D run ending in a min along the rows (a ROWS kernel,
 * k-means' shape: n points against m centroids): cut between rows, each
 * row's min made by the interpreter or by the kernel; the unfused bits,
 * NaN rows included. `axis` 0 (a min across the rows) never switches. */
enum { NR = 120011, MR = 10 };
static double *rows_big(ty_runtime *rt, int axis, bool *pending) {
  double *v = malloc(NR * sizeof *v);
  for (int i = 0; i < NR; i++) v[i] = sin((double)i * 0.37) * 10.0;
  v[1] = NAN, v[3] = INFINITY, v[4] = -INFINITY, v[NR - 2] = -0.0;
  ty_store *a = NULL, *b = NULL, *ac, *br, *two = NULL, *d, *ab = NULL, *t, *x, *out = NULL;
  int64_t n = NR, m = MR;
  REQ(rt, ty_store_from_buffer(rt, TY_F64, 1, &n, v, &a));
  for (int i = 0; i < MR; i++) v[i] = sin((double)i * 0.11) * 10.0;
  REQ(rt, ty_store_from_buffer(rt, TY_F64, 1, &m, v, &b));
  REQ(rt, ty_flush(rt));
  REQ(rt, ty_store_expand(rt, a, 1, &ac));
  REQ(rt, ty_store_expand(rt, b, 0, &br));
  REQ(rt, ty_scalar_f64(rt, TY_F64, 2.0, &two));
  d = bin(rt, TY_OP_SUB, ac, br);
  REQ(rt, ty_unary(rt, TY_OP_ABS, d, &ab));
  t = bin(rt, TY_OP_MUL, ab, two);
  x = bin(rt, TY_OP_ADD, t, ac);
  REQ(rt, ty_reduce(rt, TY_RED_MIN, x, axis, &out));
  ty_store_release(d), ty_store_release(ab), ty_store_release(t), ty_store_release(x);
  ty__fuse(rt);
  *pending = false;
  for (int i = 0; i < rt->nwindow; i++)
    if (rt->window[i]->task == ty__fused_task(rt)) {
      const ty__fhead *h = (const ty__fhead *)rt->window[i]->scalars;
      *pending |= !h->kernel && h->pending;
    }
  const int64_t len = ty_store_size(out);
  REQ(rt, ty_store_read(rt, out, v, (size_t)len * sizeof *v));
  ty_store_release(out), ty_store_release(a), ty_store_release(b), ty_store_release(ac), ty_store_release(br),
      ty_store_release(two);
  return v;
}

TEST(switches_between_rows_same_bits) {
  for (int axis = 1; axis >= 0; axis--) {
    setup_held(axis ? "rows1" : "rows0");
    bool pending = false;
    ty_runtime *rt = req_runtime(2, false);
    double *ref = rows_big(rt, axis, &pending);
    ty_runtime_destroy(rt);
    rt = req_runtime(2, true);
    ty__fslot_test_hook = switch_hook;
    double *got = rows_big(rt, axis, &pending);
    ty__fslot_test_hook = NULL;
    const int64_t len = axis ? NR : MR;
    CHECK(memcmp(ref, got, (size_t)len * sizeof *ref) == 0);
    ty_stats st;
    ty_get_stats(rt, &st);
    if (ty__isa_lanes()) {
      CHECK(pending);
      CHECK_EQ_INT(st.fused_compiled, 0);
      CHECK_EQ_INT(hook_fired, axis); /* asked between chunks only when it may switch */
      CHECK(axis ? st.fused_switched >= 1 : st.fused_switched == 0);
    }
    ty_runtime_destroy(rt);
    release_held();
    free(ref), free(got);
    CHECK(no_children());
    teardown();
  }
}

/* A structure first seen well after the runtime's first compile started
 * (CG_LATE_NS, 0.1 s), of a run of 2^18 elements or more, is compiled only
 * once its interpreted runs come to 2^25 elements (CG_LATE_ELEMS: 64 runs
 * of NW), with the interpreter's bits meanwhile; one seen fewer times is
 * compiled when the runtime ends, and the next runtime loads it at first
 * sight. */
enum { NW = (1 << 19) + 3, LATE_RUNS_FOR_TEST = 64 }; /* 64 * NW >= 2^25 > 63 * NW */
static double *run_wide(ty_runtime *rt, int which, bool *kernel) {
  double *v = malloc(NW * sizeof *v);
  ty_store *in[2];
  wide_inputs(rt, v, NW, in);
  ty_store *r = chain(rt, in[0], in[1], which);
  ty_store_release(in[0]), ty_store_release(in[1]);
  ty__fuse(rt);
  *kernel = false;
  for (int i = 0; i < rt->nwindow; i++)
    if (rt->window[i]->task == ty__fused_task(rt))
      *kernel |= ((const ty__fhead *)rt->window[i]->scalars)->kernel != 0;
  REQ(rt, ty_store_read(rt, r, v, NW * sizeof *v));
  ty_store_release(r);
  return v;
}

static bool same_wide(const double *a, const double *b) { return same_n(a, b, NW); }

/* Runs chain `which` until its kernel is loaded (120 s at most), each time
 * with ref's bits; the runs it took. */
static int wide_until_kernel(ty_runtime *rt, int which, const double *ref) {
  bool kernel = false;
  int runs = 0;
  for (const double t0 = now(); !kernel && now() - t0 < 120; runs++) {
    if (runs > 0) usleep(20000);
    double *got = run_wide(rt, which, &kernel);
    CHECK(same_wide(ref, got));
    free(got);
  }
  CHECK(kernel);
  return runs;
}

TEST(late_structures_compile_once_their_runs_add_up) {
  setup("late", 0);
  unsetenv("TYCHO_CODEGEN"); /* the default mode */
  double *ref[3];
  for (int w = 0; w < 3; w++) {
    ty_runtime *rt = req_runtime(3, false);
    bool k;
    ref[w] = run_wide(rt, w, &k);
    ty_runtime_destroy(rt);
  }
  if (!ty__isa_lanes()) { /* no generated code at this level (isa.h) */
    for (int w = 0; w < 3; w++) free(ref[w]);
    teardown();
    return;
  }
  ty_runtime *rt = req_runtime(3, true);
  wide_until_kernel(rt, 0, ref[0]); /* the program's first kernel: at first sight */
  usleep(150000);                   /* past CG_LATE_NS since that compile started */
  int so, src, other;
  for (int r = 0; r < LATE_RUNS_FOR_TEST; r++) { /* a late structure: interpreted */
    bool kernel = true;
    double *got = run_wide(rt, 2, &kernel);
    CHECK(!kernel);
    CHECK(same_wide(ref[2], got));
    free(got);
  }
  count_files(&so, &src, &other);
  CHECK_EQ_INT(so, 1); /* no compile started for it */
  CHECK_EQ_INT(other, 0);
  wide_until_kernel(rt, 2, ref[2]); /* the next run starts it */
  bool kernel = true;
  double *got = run_wide(rt, 1, &kernel); /* late, once */
  CHECK(!kernel);
  CHECK(same_wide(ref[1], got));
  free(got);
  count_files(&so, &src, &other);
  CHECK_EQ_INT(so, 2);
  CHECK_EQ_INT(other, 0);
  ty_runtime_destroy(rt); /* its compile starts now */
  CHECK(no_children());
  for (const double t0 = now(); (so < 3 || src < 3 || other > 0) && now() - t0 < 120;) {
    usleep(20000);
    count_files(&so, &src, &other);
  }
  CHECK_EQ_INT(so, 3);
  CHECK_EQ_INT(src, 3);
  CHECK_EQ_INT(other, 0);
  rt = req_runtime(3, true); /* the next run: from the cache at first sight */
  got = run_wide(rt, 1, &kernel);
  CHECK(kernel);
  CHECK(same_wide(ref[1], got));
  free(got);
  ty_runtime_destroy(rt);
  for (int w = 0; w < 3; w++) free(ref[w]);
  teardown();
}

/* A unit links SLEEF and libm only when its kernels call them (codegen_cc.c):
 * a chain of additions and products links without, Black-Scholes' CDF
 * (exp) with them; both load and give the interpreter's bits. */
TEST(units_link_sleef_and_libm_only_when_called) {
  setup("libs", 0);
  setenv("TYCHO_CODEGEN_WAIT", "1", 1);
  char cc[1024], log[1024];
  cc_wrapper("libs", "\"$*\"", cc, log);
  const int which[2] = {3, 2};
  for (int i = 0; i < 2; i++) {
    double *ref = unfused(which[i]);
    ty_runtime *rt = req_runtime(3, true);
    bool kernel = false;
    double *got = run_chain(rt, which[i], &kernel);
    CHECK(kernel == (ty__isa_lanes() != 0));
    CHECK(same(ref, got));
    free(got);
    free(ref);
    ty_runtime_destroy(rt);
  }
  if (ty__isa_lanes()) {
    char line[2][4096] = {"", ""};
    FILE *f = fopen(log, "r");
    CHECK(f != NULL);
    for (int i = 0; f && i < 2 && fgets(line[i], sizeof line[i], f); i++) {
    }
    if (f) fclose(f);
    CHECK(strstr(line[0], "-lgcc") && !strstr(line[0], "-lsleef") && !strstr(line[0], "-lm "));
    CHECK(strstr(line[1], "-lsleef -lm -lgcc"));
  }
  CHECK(no_children());
  teardown();
}

/* Ceding a core (exec.c, cede): while a background compile runs
 * (ty__cc_running counts it) and a wave would use every core the process
 * may run on (2 here, whatever the machine: ty__usable_cpus_test), the
 * wave runs on one worker fewer; its pieces are the same, so the
 * interpreter's bits, and the compiled kernel's once loaded, when no wave
 * cedes. A runtime on fewer workers than cores never cedes. The runtime is
 * older than the hold (TY__CC_HOLD_S: a young runtime's compile of a short
 * run waits in the queue, and is not counted while it holds), so its
 * compile starts at the first fusion pass. */
TEST(waves_cede_a_core_while_a_compile_runs_same_bits) {
  setup("cede", 1.0);
  ty__usable_cpus_test = 2;
  double *ref = unfused(0);
  CHECK_EQ_INT(ty__cc_running(), 0);
  ty_runtime *rt = req_runtime(2, true);
  usleep((useconds_t)(TY__CC_HOLD_S * 1e6) + 100000); /* older than the hold */
  bool kernel = true;
  double *got = run_chain(rt, 0, &kernel);
  CHECK(!kernel); /* the compile takes a second at least */
  CHECK(same(ref, got));
  free(got);
  ty_stats st;
  ty_get_stats(rt, &st);
  /* the run's wave cedes: its compile started at the fusion pass (none at
   * the baseline level, which generates no code: nothing compiles or cedes) */
  CHECK_EQ_INT(ty__cc_running(), ty__isa_lanes() ? 1 : 0);
  if (ty__isa_lanes()) CHECK(st.waves_ceded >= 1);
  else CHECK_EQ_INT(st.waves_ceded, 0);
  char *text = NULL;
  CHECK(ty_stats_format(rt, "json", &text) == TY_OK);
  CHECK(text && strstr(text, "\"waves_ceded\": "));
  free(text);
  /* a runtime on one worker fewer than the cores: no ceding */
  ty_runtime *one = req_runtime(1, true);
  got = run_chain(one, 0, &kernel);
  CHECK(same(ref, got));
  free(got);
  ty_get_stats(one, &st);
  CHECK_EQ_INT(st.waves_ceded, 0);
  ty_runtime_destroy(one);
  if (ty__isa_lanes()) {
    for (const double t0 = now(); !kernel && now() - t0 < 120;) {
      usleep(50000);
      got = run_chain(rt, 0, &kernel);
      CHECK(same(ref, got));
      free(got);
    }
    CHECK(kernel);
    CHECK_EQ_INT(ty__cc_running(), 0); /* its poll saw the compile end */
    ty_stats st0, st1;
    ty_get_stats(rt, &st0);
    got = run_chain(rt, 0, &kernel);
    ty_get_stats(rt, &st1);
    CHECK(kernel);
    CHECK(same(ref, got));
    free(got);
    CHECK_EQ_INT(st1.waves_ceded, st0.waves_ceded); /* nothing compiling: every worker */
  }
  ty_runtime_destroy(rt);
  CHECK_EQ_INT(ty__cc_running(), 0);
  ty__usable_cpus_test = 0;
  free(ref);
  CHECK(no_children());
  teardown();
}

static const check_case cases[] = {
    CASE(runs_while_compiling_then_switches_same_bits),
    CASE(runs_under_2p18_compile_from_the_eighth_sight),
    CASE(shutdown_with_a_compile_in_flight),
    CASE(failing_compiler_leaves_the_interpreter),
    CASE(wait_compiles_at_first_sight),
    CASE(held_compile_runs_at_own_priority),
    CASE(old_program_compiles_at_own_priority_at_once),
    CASE(small_and_large_sources_compile_at_O1),
    CASE(new_kernels_of_a_flush_share_one_compile),
    CASE(switches_inside_a_launch_same_bits),
    CASE(switches_between_rows_same_bits),
    CASE(late_structures_compile_once_their_runs_add_up),
    CASE(units_link_sleef_and_libm_only_when_called),
    CASE(waves_cede_a_core_while_a_compile_runs_same_bits),
};
CHECK_MAIN(cases)
