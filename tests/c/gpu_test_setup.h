/*
 * gpu_test_setup.h — what the GPU tests share: SKIP
 * (prints the reason, counts the case as skipped: main then exits 77 when a
 * single case ran, CTest's SKIP_RETURN_CODE) and whether a host C++
 * compiler exists to run kernels on simulated GPUs (TYCHO_CXX, else c++).
 */
#ifndef TY_GPU_TEST_SETUP_H
#define TY_GPU_TEST_SETUP_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static int skipped;
#define SKIP(...)                                                                        \
  do {                                                                                   \
    printf("skip: " __VA_ARGS__);                                                        \
    printf("\n");                                                                        \
    skipped++;                                                                           \
    return;                                                                              \
  } while (0)

/* Whether the simulated GPUs can compile kernels (checked once). */
static inline bool have_cxx(void) {
  static int have = -1;
  if (have < 0) {
    const char *c = getenv("TYCHO_CXX");
    char cmd[300];
    snprintf(cmd, sizeof cmd, "%s --version >/dev/null 2>&1", c && *c ? c : "c++");
    have = system(cmd) == 0;
  }
  return have == 1;
}

#endif
