/*
 * policy.c — the policy axes (DESIGN.md section 3): names, parsing, and
 * resolving each axis for a launch from the most specific level that sets it.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
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

static const char *const target_names[] = {"auto", "cpu", "gpu"};

const char *ty_target_name(ty_target t) {
  return (unsigned)t < sizeof target_names / sizeof *target_names ? target_names[t] : "?";
}

ty_status ty_target_parse(const char *s, ty_target *out) {
  for (unsigned i = 0; s && i < sizeof target_names / sizeof *target_names; i++)
    if (strcmp(s, target_names[i]) == 0) {
      *out = (ty_target)i;
      return TY_OK;
    }
  return TY_EINVAL;
}

ty_status ty_favor_parse(const char *s, ty_favor *out) {
  for (unsigned i = 0; s && i < sizeof favor_names / sizeof *favor_names; i++)
    if (strcmp(s, favor_names[i]) == 0) {
      *out = (ty_favor)i;
      return TY_OK;
    }
  return TY_EINVAL;
}

/* ---- axes ------------------------------------------------------------------------ */

static const struct axis_info {
  const char *name;   /* key in scopes and traits */
  const char *option; /* command line */
  const char *env;    /* environment */
} axes[TY_NAXES] = {
    [TY_AXIS_MODE] = {"mode", "--parallel", "TYCHO_PARALLEL"},
    [TY_AXIS_OVERDECOMPOSE] = {"overdecompose", "--overdecompose", "TYCHO_OVERDECOMPOSE"},
    [TY_AXIS_MIN_CHUNK] = {"min_chunk", "--min-cpu-chunk", "TYCHO_MIN_CPU_CHUNK"},
    [TY_AXIS_FAVOR] = {"favor", "--favor", "TYCHO_FAVOR"},
    [TY_AXIS_FUSE] = {"fuse", "--fuse", "TYCHO_FUSE"},
    [TY_AXIS_FASTMATH] = {"fastmath", "--fast-math", "TYCHO_FASTMATH"},
    [TY_AXIS_MEMORY] = {"memory", "--stream-memory", "TYCHO_STREAM_MEMORY"},
    [TY_AXIS_STREAM] = {"stream", "--stream", "TYCHO_STREAM"},
    [TY_AXIS_TARGET] = {"target", "--target", "TYCHO_TARGET"},
};

const char *ty_axis_name(int axis) {
  return (unsigned)axis < TY_NAXES ? axes[axis].name : "?";
}

/* TY_AXIS_x and TY_POL_x are in the same order */
static unsigned axis_bit(int axis) { return 1u << axis; }

/* Smallest piece worth a worker in auto mode: 64 KiB of the launch's widest
 * element type. Measured here (bench/task_overhead, 2 cores): dispatching a
 * point task through OpenMP costs ~3-5 us; an element-wise op streams
 * 64 KiB of f64 in ~8-15 us on one core, so smaller pieces spend more time
 * in dispatch than in work, and 2 pieces of 64 KiB already halve a 128 KiB
 * op's time. */
#define TY_DEFAULT_MIN_CHUNK ((int64_t)64 << 10)

void ty__policy_defaults(ty_policy *p) {
  memset(p, 0, sizeof *p);
  p->set = (1u << TY_NAXES) - 1;
  p->mode = TY_MODE_AUTO;
  p->overdecompose = 1;
  p->min_chunk = TY_DEFAULT_MIN_CHUNK;
  p->favor = TY_FAVOR_MIN_PEAK;
  p->fuse = true;
  p->fastmath = false;
  p->memory = 0;
  p->stream_relaxed = false;
  p->target = TY_TARGET_AUTO;
}

static void copy_axis(ty_policy *dst, const ty_policy *src, int axis) {
  switch (axis) {
  case TY_AXIS_MODE: dst->mode = src->mode; break;
  case TY_AXIS_OVERDECOMPOSE: dst->overdecompose = src->overdecompose; break;
  case TY_AXIS_MIN_CHUNK: dst->min_chunk = src->min_chunk; break;
  case TY_AXIS_FAVOR: dst->favor = src->favor; break;
  case TY_AXIS_FUSE: dst->fuse = src->fuse; break;
  case TY_AXIS_FASTMATH: dst->fastmath = src->fastmath; break;
  case TY_AXIS_MEMORY: dst->memory = src->memory; break;
  case TY_AXIS_STREAM: dst->stream_relaxed = src->stream_relaxed; break;
  case TY_AXIS_TARGET: dst->target = src->target; break;
  default: break;
  }
  dst->set |= axis_bit(axis);
}

static void resolve_axes(const ty_runtime *rt, const ty_task *task, const ty_arg *args, int nargs,
                         const ty_policy *options, ty_resolved *out);

/* At most this many distinct scope resolutions are shared; past it, a
 * scope's launches resolve into their own copy, as hinted ones do. A
 * program has a few scopes (each line of `parallel<...>` one origin). */
#define TY_POL_SHARED_MAX 256

/* The shared copy of r (equal bytes: one copy), made when new; NULL when
 * the table is full or out of memory. r's padding is zero (resolved into a
 * zeroed struct), so equal resolutions compare equal. */
static const ty_resolved *pol_share(ty_runtime *rt, ty_resolved *r) {
  r->shared = true;
  for (int i = 0; i < rt->npol_shared; i++)
    if (memcmp(rt->pol_shared[i], r, sizeof *r) == 0) return rt->pol_shared[i];
  if (rt->npol_shared == TY_POL_SHARED_MAX) return NULL;
  if (!rt->pol_shared) {
    rt->pol_shared = ty__malloc(TY_POL_SHARED_MAX * sizeof *rt->pol_shared);
    if (!rt->pol_shared) return NULL;
  }
  ty_resolved *copy = ty__malloc(sizeof *copy);
  if (!copy) return NULL;
  *copy = *r;
  rt->pol_shared[rt->npol_shared++] = copy;
  return copy;
}

void ty__policy_shared_free(ty_runtime *rt) {
  for (int i = 0; i < rt->npol_shared; i++) free(rt->pol_shared[i]);
  free(rt->pol_shared);
  rt->pol_shared = NULL;
  rt->npol_shared = 0;
}

/* ty__policy_resolve's way (internal.h) for all but the commonest launch,
 * which that one takes in line. */
const ty_resolved *ty__policy_resolve_any(ty_runtime *rt, const ty_task *task, const ty_arg *args,
                                          int nargs, const ty_policy *options, ty_resolved *own) {
  if (!options && rt->has_launch_options) options = &rt->launch_options;
  bool plain = !options && !task->traits.set;
  for (int i = 0; i < nargs && plain && rt->any_hint; i++)
    plain = !(args[i].proj == TY_PROJ_ALIGNED && args[i].store->has_hint);
  if (plain && rt->nscopes == 0) {
    /* most launches of a script: every axis from the configuration or the
     * defaults, the same for all of them */
    if (!rt->have_base_pol) {
      memset(&rt->base_pol, 0, sizeof rt->base_pol);
      resolve_axes(rt, task, args, 0, NULL, &rt->base_pol);
      rt->base_pol.shared = true;
      rt->have_base_pol = true;
    }
    return &rt->base_pol;
  }
  if (plain) {
    /* in a scope: what the scopes (innermost to outermost) and the
     * configuration decide, the same for the scope's plain launches; a
     * scope's policy does not change while it is open, nor do those
     * around it */
    ty_scope *s = &rt->scopes[rt->nscopes - 1];
    if (s->plain) return s->plain;
    memset(own, 0, sizeof *own);
    resolve_axes(rt, task, args, 0, NULL, own);
    const ty_resolved *sh = pol_share(rt, own);
    if (!sh) return own->shared = false, own;
    return s->plain = sh;
  }
  resolve_axes(rt, task, args, nargs, options, own);
  own->shared = false;
  return own;
}


static void resolve_axes(const ty_runtime *rt, const ty_task *task, const ty_arg *args, int nargs,
                         const ty_policy *options, ty_resolved *out) {
  static ty_policy defaults;
  static bool have_defaults; /* a constant; racing writers store the same bytes */
  if (!have_defaults) {
    ty__policy_defaults(&defaults);
    have_defaults = true;
  }
  out->p.set = 0;
  out->mode_from_hint = false;
  out->hint_store = 0;
  for (int axis = 0; axis < TY_NAXES; axis++) {
    unsigned bit = axis_bit(axis);
    ty_origin *from = &out->from[axis];
    from->scope = NULL;
    from->store = 0;
    if (options && (options->set & bit)) {
      copy_axis(&out->p, options, axis);
      from->level = TY_FROM_OPTION;
      continue;
    }
    if (task->traits.set & bit) {
      copy_axis(&out->p, &task->traits, axis);
      from->level = TY_FROM_TRAIT;
      continue;
    }
    const ty_store *hinted = NULL;
    for (int i = 0; i < nargs && !hinted; i++)
      if (args[i].proj == TY_PROJ_ALIGNED && args[i].store->has_hint &&
          (args[i].store->hint.set & bit))
        hinted = args[i].store;
    if (hinted) {
      copy_axis(&out->p, &hinted->hint, axis);
      from->level = TY_FROM_HINT;
      from->store = hinted->hint_from;
      if (axis == TY_AXIS_MODE) {
        out->mode_from_hint = true;
        out->hint_store = hinted->id;
      }
      continue;
    }
    int k = rt->nscopes - 1;
    while (k >= 0 && !(rt->scopes[k].policy.set & bit)) k--;
    if (k >= 0) {
      copy_axis(&out->p, &rt->scopes[k].policy, axis);
      from->level = TY_FROM_SCOPE;
      from->scope = rt->scopes[k].origin;
      continue;
    }
    if (rt->cfg.policy.set & bit) {
      copy_axis(&out->p, &rt->cfg.policy, axis);
      from->level = (rt->cfg.policy_cli & bit) ? TY_FROM_CLI : TY_FROM_ENV;
      continue;
    }
    copy_axis(&out->p, &defaults, axis);
    from->level = TY_FROM_DEFAULT;
  }
}

/* The text explain shows for an origin. */
void ty__origin_text(const ty_origin *o, int axis, const ty_task *task, char *buf, size_t len) {
  switch (o->level) {
  case TY_FROM_OPTION: snprintf(buf, len, "launch option"); break;
  case TY_FROM_TRAIT: snprintf(buf, len, "trait of task '%s'", ty_task_name(task)); break;
  case TY_FROM_HINT: snprintf(buf, len, "hint on store #%llu", (unsigned long long)o->store); break;
  case TY_FROM_SCOPE: snprintf(buf, len, "%s", o->scope ? o->scope : "scope"); break;
  case TY_FROM_CLI: snprintf(buf, len, "global %s", axes[axis].option); break;
  case TY_FROM_ENV: snprintf(buf, len, "global %s", axes[axis].env); break;
  default: snprintf(buf, len, "default"); break;
  }
}

const char *ty__intern(ty_runtime *rt, const char *text) {
  for (int i = rt->norigins - 1; i >= 0; i--)
    if (strcmp(rt->origins[i], text) == 0) return rt->origins[i];
  if (rt->norigins >= 4096) return "scope"; /* generated origins: stop growing */
  if (rt->norigins == rt->cap_origins) {
    int cap = rt->cap_origins ? rt->cap_origins * 2 : 16;
    char **o = ty__realloc(rt->origins, (size_t)cap * sizeof *o);
    if (!o) return "scope";
    rt->origins = o;
    rt->cap_origins = cap;
  }
  char *copy = ty__strdup(text);
  if (!copy) return "scope";
  rt->origins[rt->norigins++] = copy;
  return copy;
}

void ty__origins_free(ty_runtime *rt) {
  for (int i = 0; i < rt->norigins; i++) free(rt->origins[i]);
  free(rt->origins);
  rt->origins = NULL;
  rt->norigins = rt->cap_origins = 0;
}

static ty_status check_policy(ty_runtime *rt, const char *fn, const ty_policy *p) {
  if ((p->set & TY_POL_MODE) && (unsigned)p->mode > TY_MODE_TASK)
    return ty__fail(rt, TY_EINVAL, "%s: mode %d is not a mode", fn, (int)p->mode);
  if ((p->set & TY_POL_OVERDECOMPOSE) && p->overdecompose < 1)
    return ty__fail(rt, TY_EINVAL, "%s: overdecompose must be >= 1, got %d", fn, p->overdecompose);
  if ((p->set & TY_POL_MIN_CHUNK) && p->min_chunk < 1)
    return ty__fail(rt, TY_EINVAL, "%s: min_chunk must be >= 1 byte", fn);
  if ((p->set & TY_POL_FAVOR) && (unsigned)p->favor > TY_FAVOR_MAX_CONCURRENCY)
    return ty__fail(rt, TY_EINVAL, "%s: favor %d is not a favor", fn, (int)p->favor);
  return TY_OK;
}

ty_status ty_scope_push(ty_runtime *rt, const ty_policy *p, const char *origin) {
  if (!rt || !p) return TY_EINVAL;
  if (rt->nscopes >= TY_MAX_SCOPES)
    return ty__fail(rt, TY_ELIMIT, "ty_scope_push: scopes nest %d deep at most", TY_MAX_SCOPES);
  ty_status st = check_policy(rt, "ty_scope_push", p);
  if (st) return st;
  char clipped[TY_MAX_ORIGIN];
  snprintf(clipped, sizeof clipped, "%s", origin && *origin ? origin : "scope");
  ty_scope *s = &rt->scopes[rt->nscopes++];
  s->policy = *p;
  s->origin = ty__intern(rt, clipped);
  s->plain = NULL;
  return TY_OK;
}

ty_status ty_launch_options(ty_runtime *rt, const ty_policy *p) {
  if (!rt) return TY_EINVAL;
  if (p) {
    ty_status st = check_policy(rt, "ty_launch_options", p);
    if (st) return st;
  }
  rt->has_launch_options = p != NULL;
  if (p) rt->launch_options = *p;
  return TY_OK;
}

ty_status ty_scope_pop(ty_runtime *rt) {
  if (!rt) return TY_EINVAL;
  if (rt->nscopes == 0) return ty__fail(rt, TY_EINVAL, "ty_scope_pop: no scope is open");
  rt->nscopes--;
  return TY_OK;
}

int ty_scope_depth(const ty_runtime *rt) { return rt ? rt->nscopes : 0; }

ty_status ty_store_hint(ty_runtime *rt, ty_store *s, const ty_policy *p) {
  if (!rt || !s || !p) return TY_EINVAL;
  ty_status st = check_policy(rt, "ty_store_hint", p);
  if (st) return st;
  s->has_hint = p->set != 0;
  rt->any_hint |= s->has_hint;
  s->hint = *p;
  s->hint_from = s->id;
  return TY_OK;
}

static int parse_bool(const char *v, bool *out) {
  static const char *const yes[] = {"true", "on", "1", "yes"}, *const no[] = {"false", "off", "0", "no"};
  for (int i = 0; i < 4; i++) {
    if (strcmp(v, yes[i]) == 0) return *out = true, 0;
    if (strcmp(v, no[i]) == 0) return *out = false, 0;
  }
  return -1;
}

ty_status ty_policy_set(ty_policy *p, const char *key, const char *value, char *err,
                        size_t errlen) {
#define BAD(...) (err ? (void)snprintf(err, errlen, __VA_ARGS__) : (void)0, TY_EINVAL)
  if (!key || !value) return BAD("missing policy key or value");
  if (strcmp(key, "parallel") == 0 || strcmp(key, "mode") == 0) {
    if (ty_mode_parse(value, &p->mode)) return BAD("%s must be one of auto, all, single, task; got '%s'", key, value);
    p->set |= TY_POL_MODE;
  } else if (strcmp(key, "overdecompose") == 0) {
    char *end;
    long n = strtol(value, &end, 10);
    if (end == value || *end || n < 1 || n > 4096) return BAD("overdecompose must be an integer in 1..4096, got '%s'", value);
    p->overdecompose = (int)n;
    p->set |= TY_POL_OVERDECOMPOSE;
  } else if (strcmp(key, "min_chunk") == 0 || strcmp(key, "min_cpu_chunk") == 0) {
    size_t b;
    /* min_chunk is an int64_t: a size past INT64_MAX would turn negative */
    if (ty_parse_size(value, &b) || b < 1 || b > (size_t)INT64_MAX)
      return BAD("%s must be a size such as 64KiB, got '%s'", key, value);
    p->min_chunk = (int64_t)b;
    p->set |= TY_POL_MIN_CHUNK;
  } else if (strcmp(key, "favor") == 0) {
    if (ty_favor_parse(value, &p->favor)) return BAD("favor must be one of debug, min-peak-memory, max-concurrency; got '%s'", value);
    p->set |= TY_POL_FAVOR;
  } else if (strcmp(key, "fuse") == 0) {
    if (parse_bool(value, &p->fuse)) return BAD("fuse must be true or false (on/off), got '%s'", value);
    p->set |= TY_POL_FUSE;
  } else if (strcmp(key, "fastmath") == 0) {
    if (parse_bool(value, &p->fastmath)) return BAD("fastmath must be true or false (on/off), got '%s'", value);
    p->set |= TY_POL_FASTMATH;
  } else if (strcmp(key, "memory") == 0) {
    size_t b = 0;
    if (strcmp(value, "off") != 0 && ty_parse_size(value, &b))
      return BAD("memory must be a size such as 256MB (or off), got '%s'", value);
    p->memory = b;
    p->set |= TY_POL_MEMORY;
  } else if (strcmp(key, "stream") == 0) {
    if (strcmp(value, "strict") == 0) p->stream_relaxed = false;
    else if (strcmp(value, "relaxed") == 0) p->stream_relaxed = true;
    else return BAD("stream must be strict or relaxed, got '%s'", value);
    p->set |= TY_POL_STREAM;
  } else if (strcmp(key, "target") == 0) {
    if (ty_target_parse(value, &p->target)) return BAD("target must be one of auto, cpu, gpu; got '%s'", value);
    p->set |= TY_POL_TARGET;
  } else {
    return BAD("unknown policy key '%s' (valid: parallel, overdecompose, min_chunk, favor, fuse, fastmath, memory, stream, target)", key);
  }
  return TY_OK;
#undef BAD
}

