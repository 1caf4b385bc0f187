/*
 * options.c — the command line of `tycho` and the configuration it resolves.
 *
 * Grammar (lua.c's, plus long options):
 *   tycho [options] [script [args]]
 * Options stop at the first argument that does not start with '-' (the
 * script), at "-" (the script is standard input) or after "--". Everything
 * after the script belongs to the script, even if it looks like an option:
 * `tycho run.lua --cpus 2` passes "--cpus" and "2" to run.lua.
 *
 * Precedence of the runtime settings: the command line, then the TYCHO_*
 * environment variables (read by ty_config_init, skipped under -E), then the
 * runtime's defaults (0 in ty_config). Nothing here touches Lua: the runtime
 * must be configured before the state exists.
 *
 * Every bad option ends the program with a message on stderr and status 1;
 * nothing is guessed.
 */
#include "shell.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <lua.h>

/* The most processors a runtime accepts (ty_runtime_create refuses more). */
#define MAX_CPUS 4096

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, SHELL_PROGNAME ": ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static void hint_help(void) {
  fprintf(stderr, "Try '" SHELL_PROGNAME " --help' for more information.\n");
}

void shell_print_version(FILE *f) {
  fprintf(f, SHELL_PROGNAME " %s (%s)\n", TY_VERSION, LUA_RELEASE);
  /* the kernels' instruction set (runtime/src/core/isa.h) */
  fprintf(f, "kernels: %s (this CPU's best: %s; built for: %s)\n", ty_isa(), ty_isa_best(),
          ty_isa_levels());
}

/* One line per option; the runtime's options name the variable that mirrors
 * them. Fits 80 columns. */
static void print_help(FILE *f) {
  fprintf(f,
          "usage: " SHELL_PROGNAME " [options] [script [args]]\n"
          "Runs a Lua 5.4 script with the tycho array runtime as the global 'tycho'.\n"
          "Without a script: the interactive shell on a terminal, else standard input.\n"
          "\n"
          "Options:" "%55s" "environment\n"
          "  -e stat        execute string 'stat' (repeatable, in order)\n"
          "  -i             enter the interactive shell after the script and -e\n"
          "  -l mod         require 'mod' into global 'mod' (-l g=mod: into 'g')\n"
          "  -v             show version information\n"
          "  -E             ignore environment variables (LUA_*, TYCHO_*)\n"
          "  -W             turn warnings on\n"
          "  --allow-bytecode  load precompiled chunks (luac, string.dump),\n"
          "                 unverified: a bad chunk can crash tycho  TYCHO_ALLOW_BYTECODE\n"
          "  --cpus N       CPU processors, N >= 1, may exceed the cores  TYCHO_CPUS\n"
          "  --sysmem SIZE  memory budget for stores: 512MB, 4GiB, ...    TYCHO_SYSMEM\n"
          "  --window N     launches deferred before a flush, 1..%-5d    TYCHO_WINDOW\n"
          "  --isa LEVEL    kernels' vector ISA at most (auto)            TYCHO_ISA\n"
          "                 auto: the CPU's best; avx512, avx2, baseline (--version)\n",
          "", TY_MAX_WINDOW);
  fprintf(f, "\nParallelism (also per scope, task, store or launch: docs/policy.md):\n");
  ty_shell_policy_help(f);
  fprintf(f,
          "\nGPUs (docs/gpu.md):\n"
          "  --gpus N       GPUs to use: all, none, exactly N, or sim:N    TYCHO_GPUS\n"
          "                 (N GPUs simulated on the CPU: docs/gpu.md)\n"
          "  --fbmem SIZE   device pool budget per GPU (default 90%%)       TYCHO_FBMEM\n"
          "\nMany processes (docs/mpi.md; tycho built with MPI):\n"
          "  mpirun -np N tycho script.lua   the script on N processes, the results of\n"
          "                 one; tycho.rank() (from 0), tycho.nranks()\n"
          "                 print from rank 0 only (all ranks)        TYCHO_MPI_PRINT=all\n"
          "                 compare every flush's launches on all ranks  TYCHO_MPI_CHECK=1\n"
          "                 launches split among ranks from N elements  TYCHO_MPI_MIN_ELEMS\n"
          "                 --trace F: one file per rank, F.json -> F.rank1.json\n"
          "                 save/load of .npy are collective (MPI-IO); os.exit(code)\n"
          "                 finalizes MPI and ends the job with code\n"
          "                 no split stores (every store whole)  TYCHO_MPI_REPLICATED=1\n"
          "                 halos before the pieces, not while they run  TYCHO_MPI_OVERLAP=0\n"
          "\nFigures (docs/scheduling.md):\n"
          "  --stats        print launches, waves, memory and where the time\n"
          "                 went at exit (stderr)                         TYCHO_TIMING=1\n"
          "  --stats-format F  text (default), json or csv\n"
          "  --trace FILE   Chrome trace-event JSON of every point task (open\n"
          "                 it in https://ui.perfetto.dev or chrome://tracing);\n"
          "                 under mpirun one per rank: FILE.rank<R>.json\n"
          "  --trace-svg FILE  also draw the trace as an SVG timeline\n");
  fprintf(f,
          "\nThe Lua API (README, A tour of the Lua API): numpy's names and values,\n"
          "1-based positions and axes. Options go in a trailing table:\n"
          "  x:sum({1, 2}, {keepdims = true})   several axes, axes kept with length 1\n"
          "  tycho.add(a, b, out) or tycho.add(a, b, {out = o})   numpy's out\n"
          "  tycho.bincount(x, w, {minlength = n}), x:diagonal(k), tycho.random(n, \"f64\",\n"
          "  \"normal\"), x.T, x.nbytes, x.itemsize.\n"
          "  dtypes (docs/dtypes.md): f64 f32 i64 i32 i16 i8 u64 u32 u16 u8 bool;\n"
          "  tycho.iinfo(dt), tycho.finfo(dt), tycho.promote_types(a, b), result_type.\n"
          "  Shapes (README, Shape functions): concatenate stack hstack vstack split\n"
          "  array_split cumsum cumprod nancumsum nancumprod diff flip roll squeeze\n"
          "  moveaxis permute_dims ravel flatten broadcast_to zeros_like ones_like\n"
          "  full_like empty_like eye identity diag tri tril triu indices meshgrid\n"
          "  repeat (tycho.rep) tile pad; x[{{-1, 1, -1}}] reverses (negative step).\n"
          "  Masks and positions (1-based): x[x:gt(0)], x[m] = v, x[idx], x[{{}, idx}],\n"
          "  x[{i1, i2}], x[idx] = v, tycho.nonzero, argwhere, where(cond), count_nonzero,\n"
          "  any, all, take, put, take_along_axis, put_along_axis.\n"
          "  Sorting (stable, NaN last): sort, argsort, unique(x, {return_counts = true,\n"
          "  return_index = true, return_inverse = true}), searchsorted(a, v, \"right\"),\n"
          "  isin, partition, argpartition (kth 1-based; tycho returns the sorted order).\n"
          "  Element-wise (README, Element-wise functions): tan arcsin arccos arctan\n"
          "  arctan2 sinh cosh arcsinh arccosh arctanh expm1 log1p log2 log10 exp2 cbrt\n"
          "  hypot sign round (half to even) rint trunc clip square reciprocal isnan\n"
          "  isinf isfinite nan_to_num logical_xor floor_divide (a // b) remainder\n"
          "  bitwise_and/or/xor/not left_shift right_shift (& | ~ << >> on integer\n"
          "  stores) deg2rad rad2deg; tycho.pi e inf nan, x[{{}, tycho.newaxis}].\n"
          "  Sets and histograms: intersect1d union1d setdiff1d (sorted unique 1-D),\n"
          "  histogram(x, bins, {range = {lo, hi}}) -> counts, edges; choose(idx, {a, b})\n"
          "  (choice numbers 1-based).\n"
          "  Linear algebra (LAPACK; stacks of matrices): tycho.linalg.solve inv det\n"
          "  slogdet cholesky qr svd eigh eigvalsh lstsq pinv matrix_rank norm.\n"
          "  Statistics: std var (x:std(1, {ddof = 1})) ptp median quantile percentile\n"
          "  ({method = \"lower\"}, numpy's 13) average nansum nanmean nanmin nanmax\n"
          "  nanargmin nanargmax nanstd nanvar cov ({fweights = w, aweights = w})\n"
          "  corrcoef.\n"
          "  Products: matmul dot (batched, numpy's broadcasting) tensordot outer inner\n"
          "  vdot kron trace einsum(\"bij,bjk->bik\", a, b); convolve correlate (1-D\n"
          "  numpy's, N-D scipy.signal's; mode full|same|valid).\n"
          "  Printing as numpy: tycho.set_printoptions{\n"
          "  precision = 4, threshold = 1000, linewidth = 75, edgeitems = 3, suppress =\n"
          "  true}, get_printoptions(). A wrong call (an extra argument, an unknown\n"
          "  option, a misspelt field, x[0], a < b) raises an error that says what is\n"
          "  accepted instead; stores compare element-wise with a:lt(b) ...\n"
          "  Random (README, Random numbers): tycho.random.normal(shape, mean, std),\n"
          "  uniform(shape, lo, hi), integers(lo, hi, shape), standard_normal,\n"
          "  exponential, permutation(x, axis), shuffle(x, axis), choice(a, size,\n"
          "  replace, p, axis, shuffle);\n"
          "  g = tycho.random.generator(seed), g:normal(...) ... Text files:\n"
          "  tycho.loadtxt(path, {delimiter = \",\", skiprows = 1, usecols = {1, 3},\n"
          "  dtype, comments, max_rows, ndmin}), tycho.savetxt(path, x, {fmt = \"%%.6g\",\n"
          "  delimiter, header, footer, comments, newline}).\n"
          "\n"
          "  --help         show this help and exit\n"
          "  --version      show the version and exit\n"
          "  --             stop handling options\n"
          "  -              stop handling options and run standard input\n"
          "\n"
          "The command line wins over the environment. Defaults: --cpus all cores,\n"
          "--sysmem 80%% of physical memory (a store is charged when allocated),\n"
          "--window 64.\n"
          "Compiled fused kernels (docs/fusion.md): TYCHO_CODEGEN auto|always|off,\n"
          "TYCHO_CACHE_DIR (default ~/.cache/tycho), TYCHO_CC (default cc);\n"
          "they compile in the background while the interpreter runs the program,\n"
          "TYCHO_CODEGEN_WAIT=1 waits for each compile instead (default under always).\n"
          "TYCHO_NT_STORES=auto|1|0: compiled runs of 2^21 elements or more store\n"
          "fresh outputs with streaming stores when their arguments exceed the\n"
          "last-level cache (auto, the default), always (1) or never (0);\n"
          "TYCHO_LLC_BYTES=bytes overrides the cache size auto reads from the system.\n"
          "Also read: LUA_INIT_5_4 or LUA_INIT (code or @file run first), LUA_PATH,\n"
          "LUA_CPATH; the shell keeps its history in $HOME/.tycho_history.\n"
          "Idle workers stay awake TYCHO_SPIN_US microseconds (default 200), giving\n"
          "their core to other processes meanwhile, then sleep (README, Global\n"
          "settings); 0: sleep at once (0..1000000; another value is an error).\n"
          "TYCHO_SCATTER_DIRECT=bytes: x[i] = y with a long i into a line of more\n"
          "bytes (default 16 MiB) scatters bucketed by window (README); 0: always\n"
          "(a value that is not a whole number of bytes is an error).\n"
          "TYCHO_CEDE=0: short waves keep every worker while a compile runs in the\n"
          "background (default 1: one worker fewer, the compiler gets a core).\n"
          "TYCHO_FUSE_CACHE=0: decide every window's fusion afresh instead of\n"
          "replaying the decision of a window of the same structure (default 1;\n"
          "another value is an error).\n"
          "TYCHO_WINDOW_CUT=0: a full window flushes whole, not up to its last\n"
          "scalar result (a sum, 0-d arithmetic) or else its last assignment (a\n"
          "write of a store that existed before) with the rest kept (default 1;\n"
          "another value is an error).\n"
          "TYCHO_IN_PLACE=0: a new store never takes the memory of an input its\n"
          "element-wise launch reads for the last time (default 1; another value\n"
          "is an error).\n"          "TYCHO_DOUBLE_BUFFER=0: an in-place stencil update (a store written while\n"
          "read through row-shifted views of itself) always goes through a row\n"
          "buffer, never into a second block of the store that becomes its own\n"
          "(default 1: double-buffered where it fits; another value is an error).\n"
          "The shell keeps up to 64 MiB of freed heap (glibc's trim threshold)\n"
          "unless MALLOC_TRIM_THRESHOLD_ or GLIBC_TUNABLES sets it (README).\n");
}

/* A decimal integer in [lo, hi], the whole string. */
static bool parse_int(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || errno || v < lo || v > hi) return false;
  *out = v;
  return true;
}

/* What the command line sets; applied over the environment afterwards. */
typedef struct overlay {
  bool cpus_set, sysmem_set, window_set, gpus_set, fbmem_set, bytecode_set;
  int gpus;
  size_t fbmem;
  int cpus, window;
  size_t sysmem;
  const char *isa; /* --isa, NULL when absent */
  struct {
    char name[16];
    const char *value;
  } pol[64]; /* policy options, applied in order over the environment */
  int npol;
} overlay;

/* --cpus, --sysmem, --window with their value; false after a message. */
static bool set_long(overlay *o, const char *name, const char *value) {
  long n;
  if (strcmp(name, "cpus") == 0) {
    if (!parse_int(value, 1, LONG_MAX, &n)) {
      fail("--cpus must be a positive integer, got '%s'", value);
      return false;
    }
    if (n > MAX_CPUS) {
      fail("--cpus must be at most %d, got '%s'", MAX_CPUS, value);
      return false;
    }
    o->cpus = (int)n;
    o->cpus_set = true;
  } else if (strcmp(name, "window") == 0) {
    if (!parse_int(value, 1, TY_MAX_WINDOW, &n)) {
      fail("--window must be an integer in 1..%d, got '%s'", TY_MAX_WINDOW, value);
      return false;
    }
    o->window = (int)n;
    o->window_set = true;
  } else { /* sysmem */
    size_t bytes;
    if (ty_parse_size(value, &bytes) != TY_OK || bytes == 0) {
      fail("--sysmem must be a positive size such as 512MB or 4GiB, got '%s'", value);
      return false;
    }
    o->sysmem = bytes;
    o->sysmem_set = true;
  }
  return true;
}

/* A long option: "--name", "--name=value" or "--name value". Sets *i to the
 * last argv entry consumed. */
static shell_parse long_option(int argc, char **argv, int *i, overlay *o,
                               shell_options *opt_out) {
  const char *arg = argv[*i] + 2;
  const char *eq = strchr(arg, '=');
  size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
  char name[16];
  if (len < sizeof name) {
    memcpy(name, arg, len);
    name[len] = '\0';
  } else {
    name[0] = '\0';
  }
  if (strcmp(name, "help") == 0 || strcmp(name, "version") == 0) {
    if (eq) {
      fail("option '--%s' takes no value", name);
      hint_help();
      return SHELL_PARSE_FAIL;
    }
    if (name[0] == 'h')
      print_help(stdout);
    else
      shell_print_version(stdout);
    return SHELL_PARSE_DONE;
  }
  if (strcmp(name, "cpus") == 0 || strcmp(name, "sysmem") == 0 || strcmp(name, "window") == 0) {
    const char *value = eq ? eq + 1 : NULL;
    if (!value) {
      if (*i + 1 >= argc) {
        fail("option '--%s' needs a value", name);
        hint_help();
        return SHELL_PARSE_FAIL;
      }
      value = argv[++*i];
    }
    return set_long(o, name, value) ? SHELL_PARSE_RUN : SHELL_PARSE_FAIL;
  }
  if (strcmp(name, "stats") == 0 || strcmp(name, "allow-bytecode") == 0) {
    if (eq) {
      fail("option '--%s' takes no value", name);
      return SHELL_PARSE_FAIL;
    }
    if (name[0] == 's') opt_out->stats = true;
    else o->bytecode_set = true;
    return SHELL_PARSE_RUN;
  }
  if (strcmp(name, "trace") == 0 || strcmp(name, "trace-svg") == 0 ||
      strcmp(name, "stats-format") == 0 || strcmp(name, "gpus") == 0 ||
      strcmp(name, "fbmem") == 0 || strcmp(name, "isa") == 0) {
    const char *value = eq ? eq + 1 : NULL;
    if (!value) {
      if (*i + 1 >= argc) {
        fail("option '--%s' needs a value", name);
        hint_help();
        return SHELL_PARSE_FAIL;
      }
      value = argv[++*i];
    }
    if (strcmp(name, "trace") == 0) {
      opt_out->trace = value;
    } else if (strcmp(name, "trace-svg") == 0) {
      opt_out->trace_svg = value;
    } else if (strcmp(name, "stats-format") == 0) {
      if (strcmp(value, "text") && strcmp(value, "json") && strcmp(value, "csv")) {
        fail("--stats-format must be text, json or csv, got '%s'", value);
        return SHELL_PARSE_FAIL;
      }
      opt_out->stats_format = value;
      opt_out->stats = true;
    } else if (strcmp(name, "isa") == 0) {
      char err[256];
      if (ty_isa_parse(value, err, sizeof err) != TY_OK) {
        fail("--isa: %s", err);
        return SHELL_PARSE_FAIL;
      }
      o->isa = value;
    } else if (strcmp(name, "gpus") == 0) {
      char err[256];
      if (ty_gpus_parse(value, &o->gpus, err, sizeof err) != TY_OK) {
        fail("--gpus: %s", err);
        return SHELL_PARSE_FAIL;
      }
      o->gpus_set = true;
    } else {
      size_t b;
      if (ty_parse_size(value, &b) != TY_OK || b == 0) {
        fail("--fbmem must be a positive size such as 8GiB, got '%s'", value);
        return SHELL_PARSE_FAIL;
      }
      o->fbmem = b;
      o->fbmem_set = true;
    }
    return SHELL_PARSE_RUN;
  }
  int arity = ty_shell_policy_arity(name);
  if (arity >= 0) {
    const char *value = eq ? eq + 1 : NULL;
    if (arity == 0 && eq) {
      fail("option '--%s' takes no value", name);
      hint_help();
      return SHELL_PARSE_FAIL;
    }
    if (arity == 1 && !value) {
      if (*i + 1 >= argc) {
        fail("option '--%s' needs a value", name);
        hint_help();
        return SHELL_PARSE_FAIL;
      }
      value = argv[++*i];
    }
    /* checked now, applied after the environment is read */
    char err[256];
    ty_config scratch;
    memset(&scratch, 0, sizeof scratch);
    if (ty_shell_policy_option(name, value, &scratch, err, sizeof err) != 0) {
      fail("%s", err);
      return SHELL_PARSE_FAIL;
    }
    if (o->npol == (int)(sizeof o->pol / sizeof o->pol[0])) {
      fail("too many policy options");
      return SHELL_PARSE_FAIL;
    }
    snprintf(o->pol[o->npol].name, sizeof o->pol[o->npol].name, "%s", name);
    o->pol[o->npol++].value = value;
    return SHELL_PARSE_RUN;
  }
  fail("unrecognized option '%s'", argv[*i]);
  hint_help();
  return SHELL_PARSE_FAIL;
}

/* lua.c's collectargs, with the long options and the -e/-l list. */
static shell_parse collect(int argc, char **argv, shell_options *opt, overlay *o) {
  int i;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-') break;     /* the script */
    if (a[1] == '\0') break;    /* "-": the script is stdin */
    if (a[1] == '-') {
      if (a[2] == '\0') {       /* "--": the script is next */
        i++;
        break;
      }
      shell_parse r = long_option(argc, argv, &i, o, opt);
      if (r != SHELL_PARSE_RUN) return r;
      continue;
    }
    switch (a[1]) {
      case 'e':
      case 'l': {
        const char *text = a + 2;
        if (*text == '\0') {
          /* like lua.c: a following option is a forgotten argument */
          if (i + 1 >= argc || argv[i + 1][0] == '-') {
            fail("'%s' needs an argument", a);
            hint_help();
            return SHELL_PARSE_FAIL;
          }
          text = argv[++i];
        }
        if (a[1] == 'e') opt->flags |= SHELL_HAS_E;
        opt->actions[opt->nactions].kind = a[1];
        opt->actions[opt->nactions].text = text;
        opt->nactions++;
        break;
      }
      case 'i':
      case 'v':
      case 'E':
      case 'W':
        if (a[2] != '\0') goto unknown;
        opt->flags |= a[1] == 'i'   ? SHELL_HAS_I
                      : a[1] == 'v' ? SHELL_HAS_V
                      : a[1] == 'E' ? SHELL_HAS_NOENV
                                    : SHELL_HAS_W;
        break;
      default:
      unknown:
        fail("unrecognized option '%s'", a);
        hint_help();
        return SHELL_PARSE_FAIL;
    }
  }
  opt->script = i < argc ? i : argc;
  return SHELL_PARSE_RUN;
}

shell_parse shell_parse_options(int argc, char **argv, shell_options *opt) {
  memset(opt, 0, sizeof *opt);
  opt->argc = argc;
  opt->argv = argv;
  opt->script = argc;
  /* at most one action per argument */
  opt->actions = calloc((size_t)(argc > 0 ? argc : 1), sizeof *opt->actions);
  if (!opt->actions) {
    fail("not enough memory");
    return SHELL_PARSE_FAIL;
  }
  overlay o = {0};
  shell_parse r = collect(argc, argv, opt, &o);
  if (r != SHELL_PARSE_RUN) return r;

  if (opt->flags & SHELL_HAS_NOENV) {
    memset(&opt->cfg, 0, sizeof opt->cfg);
    opt->cfg.isa = "auto"; /* not TYCHO_ISA, which the runtime would read */
  } else {
    const char *bc = getenv("TYCHO_ALLOW_BYTECODE");
    if (bc && *bc) {
      if (!strcmp(bc, "1") || !strcmp(bc, "on") || !strcmp(bc, "true") || !strcmp(bc, "yes")) {
        opt->allow_bytecode = true;
      } else if (strcmp(bc, "0") && strcmp(bc, "off") && strcmp(bc, "false") && strcmp(bc, "no")) {
        fail("TYCHO_ALLOW_BYTECODE must be 1 or 0 (on/off, true/false, yes/no), got '%s'", bc);
        return SHELL_PARSE_FAIL;
      }
    }
    char err[256] = "";
    if (ty_config_init(&opt->cfg, err, sizeof err) != TY_OK) {
      fail("%s", err[0] ? err : "a TYCHO_* environment variable does not parse");
      return SHELL_PARSE_FAIL;
    }
  }
  if (o.cpus_set) opt->cfg.cpus = o.cpus;
  if (o.sysmem_set) opt->cfg.sysmem = o.sysmem;
  if (o.window_set) opt->cfg.window = o.window;
  if (o.gpus_set) opt->cfg.gpus = o.gpus;
  if (o.fbmem_set) opt->cfg.fbmem = o.fbmem;
  if (o.isa) opt->cfg.isa = o.isa;
  if (o.bytecode_set) opt->allow_bytecode = true;
  for (int k = 0; k < o.npol; k++) {
    char err[256];
    if (ty_shell_policy_option(o.pol[k].name, o.pol[k].value, &opt->cfg, err, sizeof err) != 0) {
      fail("%s", err); /* checked while parsing: not reached */
      return SHELL_PARSE_FAIL;
    }
  }
  return SHELL_PARSE_RUN;
}

void shell_free_options(shell_options *opt) {
  free(opt->actions);
  opt->actions = NULL;
}
