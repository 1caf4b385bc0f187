/*
 * policy_opts.c — the shell's command-line options for the policy axes and
 * the processors: --parallel, --overdecompose, --min-cpu-chunk, --favor,
 * --fuse, --fast-math, --stream-memory, --stream, --omps, --ompthreads,
 * --explain. Each mirrors an environment variable that ty_config_init reads
 * (TYCHO_PARALLEL, ...); the command line wins, so options.c applies these
 * after ty_config_init, and marks each policy axis it sets in
 * cfg->policy_cli, so that explain says "global --parallel" rather than
 * "global TYCHO_PARALLEL".
 *
 * Values are parsed by the runtime (ty_policy_set), so the shell, the
 * environment, scopes and traits accept exactly the same spellings; the
 * messages name the option as the user typed it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tycho/tycho.h"

/* Also declared in shell.h once notes/integrate-SUGAR.md lands; repeated
 * here so that this file builds on its own before then. */
int ty_shell_policy_arity(const char *name);
int ty_shell_policy_option(const char *opt, const char *value, ty_config *cfg, char *err,
                           size_t len);
void ty_shell_policy_help(FILE *f);

/* OpenMP processors and their threads: the runtime refuses more (runtime.c). */
#define MAX_OMP 4096

static const struct popt {
  const char *name;  /* without "--" */
  const char *key;   /* ty_policy_set's key; NULL: handled here */
  unsigned bit;      /* TY_POL_* it sets */
  const char *arg;   /* value placeholder in --help; NULL: takes no value */
  const char *help;
  const char *env;
} opts[] = {
    {"parallel", "parallel", TY_POL_MODE, "MODE", "auto|all|single|task (default auto)",
     "TYCHO_PARALLEL"},
    {"overdecompose", "overdecompose", TY_POL_OVERDECOMPOSE, "N", "pieces per processor (1)",
     "TYCHO_OVERDECOMPOSE"},
    {"min-cpu-chunk", "min_chunk", TY_POL_MIN_CHUNK, "SIZE", "auto: bytes per piece (64KiB)",
     "TYCHO_MIN_CPU_CHUNK"},
    {"favor", "favor", TY_POL_FAVOR, "F", "min-peak-memory (default),",
     "TYCHO_FAVOR"},
    {"fuse", "fuse", TY_POL_FUSE, "on|off", "fuse chains of launches (on)", "TYCHO_FUSE"},
    {"fast-math", "fastmath", TY_POL_FASTMATH, NULL, "4-ULP vector math (default 1-ULP)",
     "TYCHO_FASTMATH"},
    {"stream-memory", "memory", TY_POL_MEMORY, "SIZE", "streaming budget (docs/streaming)",
     "TYCHO_STREAM_MEMORY"},
    {"stream", "stream", TY_POL_STREAM, "S", "strict (default) or relaxed",
     "TYCHO_STREAM"},
    {"target", "target", TY_POL_TARGET, "T", "auto (default), cpu or gpu",
     "TYCHO_TARGET"},
    {"omps", NULL, 0, "N", "OpenMP processors (0: none)", "TYCHO_OMPS"},
    {"ompthreads", NULL, 0, "T", "threads per OpenMP processor", "TYCHO_OMPTHREADS"},
    {"explain", NULL, 0, NULL, "print what was decided per launch", "TYCHO_EXPLAIN"},
};
#define NOPTS (sizeof opts / sizeof opts[0])

static const struct popt *find(const char *name) {
  if (!name) return NULL;
  if (name[0] == '-' && name[1] == '-') name += 2;
  for (size_t i = 0; i < NOPTS; i++)
    if (strcmp(opts[i].name, name) == 0) return &opts[i];
  return NULL;
}

/* 1: takes a value, 0: a flag, -1: not an option of this file. */
int ty_shell_policy_arity(const char *name) {
  const struct popt *o = find(name);
  return o ? (o->arg != NULL) : -1;
}

static bool parse_count(const char *s, long lo, long hi, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || *end || v < lo || v > hi) return false;
  *out = (int)v;
  return true;
}

/* Apply "--opt value" (opt with or without "--"; value NULL for flags) to
 * cfg. 0, or -1 with a message such as "--parallel must be one of auto, all,
 * single, task; got 'most'" in err. */
int ty_shell_policy_option(const char *opt, const char *value, ty_config *cfg, char *err,
                           size_t len) {
  const struct popt *o = find(opt);
  if (!o) {
    snprintf(err, len, "unrecognized option '%s'", opt ? opt : "");
    return -1;
  }
  if (o->arg && !value) {
    snprintf(err, len, "option '--%s' needs a value", o->name);
    return -1;
  }
  if (!o->arg && value) {
    snprintf(err, len, "option '--%s' takes no value", o->name);
    return -1;
  }
  if (!o->key) {
    if (strcmp(o->name, "explain") == 0) {
      cfg->explain = true;
    } else if (strcmp(o->name, "omps") == 0) {
      if (!parse_count(value, 0, MAX_OMP, &cfg->omps)) {
        snprintf(err, len, "--omps must be an integer in 0..%d, got '%s'", MAX_OMP, value);
        return -1;
      }
    } else if (!parse_count(value, 1, MAX_OMP, &cfg->ompthreads)) {
      snprintf(err, len, "--ompthreads must be an integer in 1..%d, got '%s'", MAX_OMP, value);
      return -1;
    }
    return 0;
  }
  /* "off" is the natural way to say "no streaming budget" */
  if (o->bit == TY_POL_MEMORY && (!strcmp(value, "off") || !strcmp(value, "0"))) value = "0";
  char msg[256];
  ty_policy p = cfg->policy;
  if (ty_policy_set(&p, o->key, o->arg ? value : "true", msg, sizeof msg) != TY_OK) {
    /* the runtime names its key ("min_chunk must be ..."): name the option */
    size_t kl = strlen(o->key);
    const char *rest = strncmp(msg, o->key, kl) == 0 ? msg + kl : NULL;
    if (rest)
      snprintf(err, len, "--%s%s", o->name, rest);
    else
      snprintf(err, len, "--%s: %s", o->name, msg);
    return -1;
  }
  cfg->policy = p;
  cfg->policy_cli |= o->bit;
  return 0;
}

/* The lines of `tycho --help` for these options (80 columns). */
void ty_shell_policy_help(FILE *f) {
  for (size_t i = 0; i < NOPTS; i++) {
    char left[40];
    snprintf(left, sizeof left, "--%s%s%s", opts[i].name, opts[i].arg ? " " : "",
             opts[i].arg ? opts[i].arg : "");
    fprintf(f, "  %-22s%-36s%s\n", left, opts[i].help, opts[i].env);
    if (strcmp(opts[i].name, "favor") == 0)
      fprintf(f, "  %-22s%s\n", "", "max-concurrency or debug");
  }
}
