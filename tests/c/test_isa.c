/*
 * test_isa.c — the kernels' instruction-set level (runtime/src/core/isa.h,
 * isa.c): the first runtime fixes it for the process, a ceiling lowers it
 * (never above the CPU's best), a later runtime asking for another level is
 * refused, and each level's table is the one the hot entry points reach.
 * Each case runs in its own process (CTest calls one case per process), as
 * the level is the process's.
 */
#include "check.h"
#include "internal.h"
#include "kernels.h"

#include <tycho/tycho.h>

#include <stdlib.h>
#include <string.h>

static ty_runtime *make(const char *isa, ty_status *st) {
  ty_config cfg = {.cpus = 2, .isa = isa};
  ty_runtime *rt = NULL;
  *st = ty_runtime_create(&cfg, &rt);
  return rt;
}

TEST(isa_parse_names_every_level) {
  char err[200];
  CHECK(ty_isa_parse("auto", err, sizeof err) == TY_OK);
  /* every level this build lists parses; an unknown name is refused with the list */
  char levels[64];
  snprintf(levels, sizeof levels, "%s", ty_isa_levels());
  for (char *save = NULL, *t = strtok_r(levels, " ", &save); t; t = strtok_r(NULL, " ", &save))
    CHECK(ty_isa_parse(t, err, sizeof err) == TY_OK);
  CHECK(ty_isa_parse("sse9", err, sizeof err) == TY_EINVAL);
  CHECK_STR_CONTAINS(err, "the instruction set must be auto|");
  CHECK_STR_CONTAINS(err, "got 'sse9'");
}

TEST(first_runtime_fixes_the_level) {
  unsetenv("TYCHO_ISA");
  char levels[64];
  snprintf(levels, sizeof levels, "%s", ty_isa_levels());
  const char *first = strtok(levels, " "); /* the lowest */
  ty_status st;
  ty_runtime *rt = make(first, &st);
  CHECK(st == TY_OK);
  CHECK(strcmp(ty_isa(), first) == 0);
  CHECK(strcmp(ty_runtime_config(rt)->isa, first) == 0);
  /* no preference: joins the process's level */
  ty_runtime *rt2 = make(NULL, &st);
  CHECK(st == TY_OK);
  ty_runtime_destroy(rt2);
  /* the CPU's best, when it is another level: refused */
  if (strcmp(ty_isa_best(), first) != 0) {
    ty_runtime *rt3 = make("auto", &st);
    CHECK(st == TY_EINVAL && rt3 == NULL);
  }
  ty_runtime_destroy(rt);
  CHECK(strcmp(ty_isa(), first) == 0); /* still, after the runtimes are gone */
}

TEST(a_ceiling_above_the_cpu_gives_its_best) {
  unsetenv("TYCHO_ISA");
  /* the last level listed is the highest the build has */
  char levels[64];
  snprintf(levels, sizeof levels, "%s", ty_isa_levels());
  const char *top = strrchr(levels, ' ') ? strrchr(levels, ' ') + 1 : levels;
  ty_status st;
  ty_runtime *rt = make(top, &st);
  CHECK(st == TY_OK);
  CHECK(strcmp(ty_isa(), ty_isa_best()) == 0);
  ty_runtime_destroy(rt);
}

TEST(kernels_reached_are_the_levels) {
  /* TYCHO_ISA before any runtime: the first kernel call chooses from it */
  setenv("TYCHO_ISA", "baseline", 1);
  if (strcmp(ty_isa_levels(), "native") == 0) return; /* a -DTYCHO_NATIVE=ON build */
  const ty__kernels *k = ty__kern();
  CHECK(strcmp(ty_isa(), "baseline") == 0);
  CHECK(ty__isa_lanes() == 0); /* no generated code at baseline */
  /* the dispatched names are this level's table */
  CHECK(ty__unary_loops == k->unary_loops && ty__fused_variant == k->fused_variant);
  /* and the same loops compute: exp(1) through the table */
  double x = 1.0, y = 0.0;
  char *p[2] = {(char *)&y, (char *)&x};
  const int64_t s[2] = {8, 8};
  ty__unary_loops[TY_OP_EXP][TY_F64](1, p, s, NULL);
  CHECK(fabs(y - exp(1.0)) <= 1e-15 * exp(1.0));
}

static const check_case cases[] = {
    CASE(isa_parse_names_every_level),
    CASE(first_runtime_fixes_the_level),
    CASE(a_ceiling_above_the_cpu_gives_its_best),
    CASE(kernels_reached_are_the_levels),
};

CHECK_MAIN(cases)
