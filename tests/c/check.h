/*
 * check.h — a tiny unit-test harness. A test file defines TEST(name) functions
 * and one list:
 *
 *   static const check_case cases[] = { CASE(store_views), ... };
 *   CHECK_MAIN(cases)
 *
 * `test_x` runs every case in order; `test_x NAME` runs one (how CTest calls
 * it: tests/CMakeLists.txt registers each TEST(name) of each file). A failed
 * CHECK prints file:line and the expression and makes the process exit 1.
 */
#ifndef TY_CHECK_H
#define TY_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct check_case {
  const char *name;
  void (*fn)(void);
} check_case;

static int check_failures;

#define TEST(name) static void name(void)
#define CASE(name) {#name, name}

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
      check_failures++;                                                          \
    }                                                                            \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                       \
  do {                                                                           \
    long long check_a_ = (long long)(a), check_b_ = (long long)(b);              \
    if (check_a_ != check_b_) {                                                  \
      fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld != %lld)\n", __FILE__, \
              __LINE__, #a, #b, check_a_, check_b_);                             \
      check_failures++;                                                          \
    }                                                                            \
  } while (0)

/* |a - b| <= tol * max(1, |b|) */
#define CHECK_NEAR(a, b, tol)                                                    \
  do {                                                                           \
    double check_a_ = (double)(a), check_b_ = (double)(b);                       \
    double check_s_ = fabs(check_b_) > 1 ? fabs(check_b_) : 1;                   \
    if (!(fabs(check_a_ - check_b_) <= (tol) * check_s_)) {                      \
      fprintf(stderr, "%s:%d: CHECK failed: %s ~= %s (%.17g vs %.17g)\n",        \
              __FILE__, __LINE__, #a, #b, check_a_, check_b_);                   \
      check_failures++;                                                          \
    }                                                                            \
  } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                          \
  do {                                                                           \
    const char *check_h_ = (hay), *check_n_ = (needle);                          \
    if (!check_h_ || !strstr(check_h_, check_n_)) {                              \
      fprintf(stderr, "%s:%d: CHECK failed: \"%s\" contains \"%s\"\n", __FILE__, \
              __LINE__, check_h_ ? check_h_ : "(null)", check_n_);               \
      check_failures++;                                                          \
    }                                                                            \
  } while (0)

static inline int check_run(int argc, char **argv, const check_case *cases, size_t n) {
  int ran = 0;
  for (size_t i = 0; i < n; i++) {
    if (argc > 1 && strcmp(argv[1], cases[i].name) != 0) continue;
    int before = check_failures;
    cases[i].fn();
    printf("%s %s\n", check_failures == before ? "ok  " : "FAIL", cases[i].name);
    ran++;
  }
  if (ran == 0) {
    fprintf(stderr, "no test named %s\n", argc > 1 ? argv[1] : "(any)");
    return 2;
  }
  return check_failures ? 1 : 0;
}

#define CHECK_MAIN(cases)                                                        \
  int main(int argc, char **argv) {                                              \
    return check_run(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));       \
  }

#endif /* TY_CHECK_H */
