/*
 * policy.c — the policy axes (DESIGN.md section 3): names, parsing, and
 * resolving each axis for a launch from the most specific level that sets it.
 */
#include "internal.h"

#include <string.h>

static const char *const mode_names[] = {"auto", "all", "single", "task"};
static const char *const favor_names[] = {"min-peak-memory", "debug", "max-concurrency"};

const char *ty_mode_name(ty_mode m) {
  return (unsigned)m < sizeof mode_names / sizeof *mode_names ? mode_names[m] : "?";
}

ty_status ty_mode_parse(const char *s, ty_mode *out) {
  for (unsigned i = 0; s && i < sizeof mode_names / sizeof *mode_names; i++)
    if (strcmp(s, mode_names[i]) == 0) {
      *out = (ty_mode)i;
      return TY_OK;
    }
  return TY_EINVAL;
}

const char *ty_favor_name(ty_favor f) {
  return (unsigned)f < sizeof favor_names / sizeof *favor_names ? favor_names[f] : "?";
}

ty_status ty_favor_parse(const char *s, ty_favor *out) {
  for (unsigned i = 0; s && i < sizeof favor_names / sizeof *favor_names; i++)
    if (strcmp(s, favor_names[i]) == 0) {
      *out = (ty_favor)i;
      return TY_OK;
    }
  return TY_EINVAL;
}
