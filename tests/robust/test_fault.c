/*
 * test_fault.c — fault injection through the C API (ty_fault_fail_alloc),
 * without Lua: every allocation a small workload makes is failed in turn,
 * and each time
 *   - every call returns TY_OK or TY_ENOMEM with a message (TY_EINTR only
 *     when reading a value whose launch an earlier failure cancelled),
 *   - once the stores are released, the runtime holds what it held before
 *     (stores alive, bytes charged against the budget): nothing leaked,
 *   - the same workload, run again unarmed, gives the right answer.
 * One processor, so the allocations come in the same order on every run. The
 * sanitizer build adds: no leak (LeakSanitizer at exit), no bad access.
 */
#include "check.h"

#include <stdint.h>
#include <unistd.h>

#include <tycho/task.h>
#include <tycho/tycho.h>

static ty_runtime *make_rt(void) {
  ty_config cfg = {.cpus = 1};
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&cfg, &rt) == TY_OK);
  return rt;
}

/* What a failed call may return: out of memory (with a message), or for a
 * read, the "unavailable" of a launch an earlier failure cancelled. */
static int etask_oom; /* out of memory inside a kernel, reported as TY_ETASK */

static int bad_status(ty_runtime *rt, ty_status st, bool read) {
  if (st == TY_OK) return 0;
  if (st == TY_ENOMEM && strstr(ty_errmsg(rt), "memory")) return 1;
  /* a kernel that cannot get its scratch memory fails its task: TY_ETASK
   * "task 'fused' failed in piece 1 of 1: fused: out of memory for ..."
   * (fused_cpu.c); TY_ENOMEM would say it better */
  if (st == TY_ETASK && strstr(ty_errmsg(rt), "out of memory")) {
    etask_oom++;
    return 1;
  }
  if (read && st == TY_EINTR && strstr(ty_errmsg(rt), "unavailable")) return 1;
  fprintf(stderr, "unexpected status %s: %s\n", ty_status_name(st), ty_errmsg(rt));
  return 2;
}

#define STEP(call, read)                                   \
  do {                                                     \
    int b_ = bad_status(rt, (call), (read));               \
    if (b_) {                                              \
      *failed = b_;                                        \
      goto out;                                            \
    }                                                      \
  } while (0)

/* Element-wise chains, views, a copy into a view, reductions, a matmul, a
 * cast, reads, the text renderings, explain and a trace: sum of
 * ((i * 2 + 1) - i) over 0..99 and friends. Sets *failed (1: a clean
 * failure, 2: a wrong status) and returns the checksum. */
static double workload(ty_runtime *rt, const char *trace_path, int *failed) {
  ty_store *a = NULL, *b = NULL, *c = NULL, *d = NULL, *v = NULL, *m = NULL, *mt = NULL,
           *p = NULL, *s = NULL, *two = NULL, *e = NULL, *acc = NULL;
  char *text = NULL;
  double sum = 0;
  *failed = 0;
  const int64_t n = 100, sh[2] = {10, 10};
  STEP(ty_trace_start(rt, trace_path, NULL), false);
  STEP(ty_arange(rt, TY_F64, 0, 1, n, &a), false);
  STEP(ty_scalar_f64(rt, TY_F64, 2, &two), false);
  STEP(ty_binary(rt, TY_OP_MUL, a, two, &b), false);
  STEP(ty_binary(rt, TY_OP_ADD, b, two, &c), false);   /* 2i + 2 */
  STEP(ty_binary(rt, TY_OP_SUB, c, a, &d), false);     /* i + 2 */
  STEP(ty_store_slice(rt, d, 0, 10, 20, 1, &v), false);
  STEP(ty_fill(rt, v, 1), false);                      /* d[10..19] = 1 */
  STEP(ty_store_reshape(rt, d, 2, sh, &m), false);
  STEP(ty_store_transpose(rt, m, 0, 1, &mt), false);
  STEP(ty_matmul(rt, m, mt, &p), false);
  STEP(ty_reduce(rt, TY_RED_SUM, p, -1, &s), false);
  ty_value val;
  STEP(ty_item(rt, s, &val), true);
  sum = val.f;
  ty_store_release(s);
  s = NULL;
  STEP(ty_cast(rt, d, TY_I32, &e), false);
  STEP(ty_reduce(rt, TY_RED_MAX, e, -1, &s), false);
  STEP(ty_item(rt, s, &val), true);
  sum += (double)val.i;
  /* 70 launches: the window (64) fills and flushes inside ty_launch */
  for (int i = 0; i < 70; i++) {
    ty_store *next = NULL;
    STEP(ty_binary(rt, TY_OP_ADD, acc ? acc : a, acc ? a : two, &next), false);
    ty_store_release(acc);
    acc = next;
  }
  ty_store_release(s);
  s = NULL;
  STEP(ty_reduce(rt, TY_RED_SUM, acc, -1, &s), false);
  STEP(ty_item(rt, s, &val), true);
  sum += val.f;
  STEP(ty_store_format(rt, m, &text), true);
  free(text);
  text = NULL;
  STEP(ty_explain_text(rt, 5, &text), false);
  free(text);
  text = NULL;
  STEP(ty_stats_format(rt, "json", &text), false);
  free(text);
  text = NULL;
  STEP(ty_trace_stop(rt), false);
out:
  if (*failed) ty_trace_stop(rt); /* (fails harmlessly when not started) */
  free(text);
  ty_store *all[] = {a, b, c, d, v, m, mt, p, s, two, e, acc};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ty_store_release(all[i]);
  ty_flush(rt);
  return sum;
}

static double expected(void) {
  double d[100];
  for (int i = 0; i < 100; i++) d[i] = i + 2;
  for (int i = 10; i < 20; i++) d[i] = 1;
  double sum = 0;
  for (int r = 0; r < 10; r++)
    for (int q = 0; q < 10; q++) {
      double x = 0;
      for (int k = 0; k < 10; k++) x += d[r * 10 + k] * d[q * 10 + k];
      sum += x;
    }
  /* the max of the i32 cast; then a + 2 + 69 a summed */
  return sum + 101 + 70 * 4950.0 + 200;
}

TEST(store_create_failure_gives_back_its_charge) {
  ty_runtime *rt = make_rt();
  ty_stats s0, s1;
  ty_get_stats(rt, &s0);
  const int64_t shape[1] = {1000};
  int failures = 0;
  for (long k = 1; k <= 4; k++) {
    ty_store *x = NULL;
    ty_fault_fail_alloc(k);
    ty_status st = ty_store_create(rt, TY_F64, 1, shape, &x);
    ty_fault_fail_alloc(0);
    if (st == TY_ENOMEM) failures++;
    else CHECK(st == TY_OK);
    ty_store_release(x);
    ty_get_stats(rt, &s1);
    CHECK_EQ_INT(s1.bytes_reserved, s0.bytes_reserved);
    CHECK_EQ_INT(s1.stores_live, s0.stores_live);
  }
  CHECK(failures >= 1); /* the store and its storage are allocations 1 and 2 */
  ty_runtime_destroy(rt);
}

TEST(every_allocation_failure_is_clean_and_recoverable) {
  char trace_path[] = "/tmp/tycho_fault_XXXXXX";
  int fd = mkstemp(trace_path);
  CHECK(fd >= 0);
  if (fd >= 0) close(fd);
  ty_runtime *rt = make_rt();
  const double want = expected();
  int failed = 0;
  ty_stats s0, s1;
  ty_get_stats(rt, &s0);
  ty_fault_fail_alloc(0); /* restart the count */
  CHECK_NEAR(workload(rt, trace_path, &failed), want, 1e-12);
  CHECK_EQ_INT(failed, 0);
  long n = ty_fault_alloc_count();
  CHECK(n > 20);
  int clean = 0, absorbed = 0;
  for (long k = 1; k <= n; k++) {
    ty_fault_fail_alloc(k);
    double got = workload(rt, trace_path, &failed);
    ty_fault_fail_alloc(0);
    if (failed == 2) {
      fprintf(stderr, "  allocation %ld of %ld: a wrong status\n", k, n);
      CHECK(failed != 2);
    } else if (failed == 1) {
      clean++;
    } else {
      absorbed++;
      if (fabs(got - want) > 1e-9 * want) {
        fprintf(stderr, "  allocation %ld of %ld: absorbed, but the result is %.17g, not %.17g\n",
                k, n, got, want);
        CHECK(fabs(got - want) <= 1e-9 * want);
      }
    }
    ty_get_stats(rt, &s1);
    if (s1.stores_live != s0.stores_live || s1.bytes_reserved != s0.bytes_reserved) {
      fprintf(stderr, "  allocation %ld of %ld: %llu stores and %llu bytes held, not %llu and %llu\n",
              k, n, (unsigned long long)s1.stores_live, (unsigned long long)s1.bytes_reserved,
              (unsigned long long)s0.stores_live, (unsigned long long)s0.bytes_reserved);
      CHECK(s1.stores_live == s0.stores_live && s1.bytes_reserved == s0.bytes_reserved);
    }
    /* recovered: right again, unarmed */
    CHECK_NEAR(workload(rt, trace_path, &failed), want, 1e-12);
    CHECK_EQ_INT(failed, 0);
  }
  printf("  %ld allocations failed in turn: %d clean out-of-memory failures (%d of them "
         "TY_ETASK from a kernel), %d absorbed\n", n, clean, etask_oom, absorbed);
  ty_runtime_destroy(rt);
  unlink(trace_path);
}

static const check_case cases[] = {CASE(store_create_failure_gives_back_its_charge),
                                   CASE(every_allocation_failure_is_clean_and_recoverable)};
CHECK_MAIN(cases)
