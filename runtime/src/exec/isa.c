/*
 * isa.c — which instruction-set level the CPU kernels of this process run
 * with (the levels, and why kernels come in several copies: isa.h).
 *
 * The level is a property of the process, not of a runtime: it is the one
 * piece of state here outside a ty_runtime, written once (compare-and-swap)
 * and read-only after, like the CPU's own cpuid. Every runtime of a process
 * shares it, so a variant's address (compared by ops.c and fuse.c) and a
 * fused kernel's vector width never change under a running program.
 *
 * Choice: the highest level whose cpu check passes, lowered by a ceiling:
 * the first runtime's config.isa (--isa, TYCHO_ISA through ty_config_init)
 * or, when the kernels are reached before any runtime (unit tests), TYCHO_ISA
 * itself. A ceiling above the CPU is not an error: the CPU's best is taken.
 */
#include "kernels.h"

#include <stdlib.h>
#include <string.h>

/* the level tables, one per copy of the kernel set (kernels_table.c) */
#define DECLARE(level, flags, lanes, check) extern const ty__kernels ty__kernels_##level;
TY_ISA_LEVELS(DECLARE)
#undef DECLARE

typedef struct level {
  const char *name, *flags;
  int lanes;
  const ty__kernels *table;
} level;

#define ROW(level, flags, lanes, check) {#level, flags, lanes, &ty__kernels_##level},
static const level levels[] = {TY_ISA_LEVELS(ROW)};
#undef ROW
#define NLEVELS ((int)(sizeof levels / sizeof levels[0]))

int ty__cpu_has_v3(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
}

int ty__cpu_has_v4(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl");
}

/* the highest level the CPU passes (the first always does: this code runs) */
static int best_level(void) {
  const int ok[] = {
#define CHECK(level, flags, lanes, check) (check),
      TY_ISA_LEVELS(CHECK)
#undef CHECK
  };
  int best = 0;
  for (int i = 1; i < NLEVELS; i++)
    if (ok[i]) best = i;
  return best;
}

/* A ceiling's level index; NLEVELS for "auto" (none); -1 unknown. */
static int parse(const char *text) {
  if (!strcmp(text, "auto")) return NLEVELS;
  for (int i = 0; i < NLEVELS; i++)
    if (!strcmp(text, levels[i].name)) return i;
  return -1;
}

static _Atomic int chosen = -1;

static int choose(int want) {
  int expected = -1;
  atomic_compare_exchange_strong(&chosen, &expected, want);
  return atomic_load(&chosen);
}

/* the level from the CPU and TYCHO_ISA (a bad value is ignored here:
 * ty_config_init reports it) */
static int from_env(void) {
  int best = best_level();
  const char *v = getenv("TYCHO_ISA");
  int c = v && *v ? parse(v) : -1;
  return c >= 0 && c < best ? c : best;
}

static int current(void) {
  int i = atomic_load_explicit(&chosen, memory_order_acquire);
  return i >= 0 ? i : choose(from_env());
}

/* The chosen level never changes (choose's compare-and-swap), so every
 * thread that stores the table stores the same pointer. */
_Atomic(const ty__kernels *) ty__kern_now = NULL;

const ty__kernels *ty__kern_choose(void) {
  const ty__kernels *k = levels[current()].table;
  atomic_store_explicit(&ty__kern_now, k, memory_order_release);
  return k;
}

int ty__isa_index(void) { return current(); }
const char *ty__isa_cflags(void) { return levels[current()].flags; }
int ty__isa_lanes(void) { return levels[current()].lanes; }

const char *ty__isa_cflags_of(int lanes) {
  for (int i = 0; i < NLEVELS; i++)
    if (levels[i].lanes == lanes) return levels[i].flags;
  return NULL;
}

int ty__isa_select(const char *ceiling) {
  if (!ceiling || !*ceiling) {
    (void)current();
    return 0;
  }
  int c = parse(ceiling), best = best_level();
  if (c < 0) return -1;
  int want = c < best ? c : best;
  return choose(want) == want ? 0 : -1;
}

const char *ty_isa(void) { return levels[current()].name; }
const char *ty_isa_best(void) { return levels[best_level()].name; }

const char *ty_isa_levels(void) {
#define NAME(level, flags, lanes, check) " " #level
  return &(TY_ISA_LEVELS(NAME))[1];
#undef NAME
}

ty_status ty_isa_parse(const char *text, char *err, size_t errlen) {
  if (text && parse(text) >= 0) return TY_OK;
  if (err) {
    size_t n = (size_t)snprintf(err, errlen, "the instruction set must be auto");
    for (int i = 0; i < NLEVELS && n < errlen; i++)
      n += (size_t)snprintf(err + n, errlen - n, "|%s", levels[i].name);
    if (n < errlen) snprintf(err + n, errlen - n, ", got '%s'", text ? text : "(null)");
  }
  return TY_EINVAL;
}
