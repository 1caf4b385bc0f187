/*
 * ltask.c — user tasks from Lua: `tycho.task{name=, args=, traits=, body=}`,
 * the launchers it returns, and `tycho.tasks` (every task declared in this
 * state, by name).
 *
 * A declaration with a body makes a Lua task: a core task whose cpu variant
 * (tl_lua_task_cpu, lworker.c) runs the body in per-worker Lua states. One
 * without a body gives Lua a signature for a C task the host registered
 * (ty_task_register): both are then called the same way, through the same
 * checks, and the core cannot tell them apart.
 *
 * Arguments, in call order (args = {...}):
 *   "in"              aligned: each piece sees its own box, read-only
 *   "in:broadcast"    every piece reads the whole store
 *   "out[:dtype]"     aligned, written; may be omitted (nil): a new store of
 *                     the launch domain's shape is made (dtype, default f64)
 *   "inout"           aligned, read and written
 *   "reduce:OP[:dt]"  OP + * min max: a private tile per piece, combined by
 *                     the runtime into the store's current value; a store
 *                     that does not have the domain's shape is broadcast to
 *                     it (a 0-d store collects one value); omitted: a new 0-d
 *                     store holding OP's identity
 *   "scalar[:type]"   a Lua number, boolean or string by value; type f64,
 *                     i64, bool or string checks and converts it
 * The launch domain is the shape of the first aligned store given (in, out,
 * inout; else the first reduction's). Every other aligned store must have
 * exactly that shape: a mismatch, a missing or extra argument, or a value of
 * the wrong kind is an error at the call naming the task and the argument.
 * A launcher returns its out, inout and reduce stores, in order.
 *
 * Scalars are packed as tycho_lua.h documents (the same bytes for Lua and C
 * tasks). Redeclaring a Lua task in the same state (re-running a script in
 * the REPL) replaces its body and arguments after flushing the window; its
 * traits are registered with the core and cannot change.
 */
#include "tl.h"
#include "tycho_lua.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TL_LAUNCHER "tycho.launcher"
#define TL_TASKS "tycho.tasks" /* registry key: name -> launcher */
/* Prefix of the core signature of a Lua task: no argument kind starts with
 * it, and it marks ty_task_data as a tl_ltask. */
#define TL_LUA_SIG "lua: "

typedef struct launcher {
  tl_ltask *t;
  bool has_options;
  ty_policy options; /* per-launch policy (launcher:with{...}) */
} launcher;

static tl_box *box_of(lua_State *L) {
  tl_box *b = lua_touserdata(L, lua_upvalueindex(1));
  if (!b || !b->rt || !b->tasks) luaL_error(L, "tycho: the runtime is closed");
  return b;
}

/* ---- argument kinds ---------------------------------------------------------------- */

static const char *const ARG_KINDS =
    "in, in:broadcast, out, out:<dtype>, inout, reduce:+ (or *, min, max, with an optional "
    ":<dtype>), scalar, scalar:f64, scalar:i64, scalar:bool, scalar:string";

static bool parse_redop(const char *s, ty_redop *op, const char **name) {
  static const struct {
    const char *text, *name;
    ty_redop op;
  } ops[] = {{"+", "+", TY_REDOP_SUM},   {"sum", "+", TY_REDOP_SUM}, {"*", "*", TY_REDOP_PROD},
             {"prod", "*", TY_REDOP_PROD}, {"min", "min", TY_REDOP_MIN}, {"max", "max", TY_REDOP_MAX}};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp(s, ops[i].text) == 0) {
      *op = ops[i].op;
      *name = ops[i].name;
      return true;
    }
  return false;
}

/* Parse one declared kind ("reduce:+:i64") into a; false when it is not one. */
static bool parse_kind(const char *text, tl_argspec *a) {
  char buf[64], *part[4] = {0};
  size_t n = 0;
  for (const char *p = text; *p && n + 1 < sizeof buf; p++)
    if (!isspace((unsigned char)*p)) buf[n++] = *p;
  buf[n] = 0;
  if (strlen(text) >= sizeof buf - 1) return false;
  int np = 0;
  for (char *p = buf; np < 4;) {
    part[np++] = p;
    char *c = strchr(p, ':');
    if (!c) break;
    *c = 0;
    p = c + 1;
  }
  if (part[np - 1] && strchr(part[np - 1], ':')) return false; /* more than 4 parts */
  memset(a, 0, sizeof *a);
  a->dtype = -1;
  ty_dtype dt;
  const char *k = part[0];
  if (strcmp(k, "in") == 0) {
    if (np == 1) a->kind = TL_IN;
    else if (np == 2 && (strcmp(part[1], "broadcast") == 0 || strcmp(part[1], "whole") == 0))
      a->kind = TL_WHOLE;
    else return false;
    snprintf(a->text, sizeof a->text, "%s", a->kind == TL_IN ? "in" : "in:broadcast");
  } else if (strcmp(k, "out") == 0) {
    a->kind = TL_OUT;
    if (np > 2) return false;
    if (np == 2) {
      if (ty_dtype_parse(part[1], &dt) != TY_OK) return false;
      a->dtype = (int)dt;
    }
    snprintf(a->text, sizeof a->text, "out%s%s", np == 2 ? ":" : "",
             np == 2 ? ty_dtype_name(dt) : "");
  } else if (strcmp(k, "inout") == 0) {
    if (np != 1) return false;
    a->kind = TL_INOUT;
    snprintf(a->text, sizeof a->text, "inout");
  } else if (strcmp(k, "reduce") == 0) {
    const char *opname;
    if (np < 2 || np > 3 || !parse_redop(part[1], &a->redop, &opname)) return false;
    a->kind = TL_REDUCE;
    if (np == 3) {
      if (ty_dtype_parse(part[2], &dt) != TY_OK) return false;
      a->dtype = (int)dt;
    }
    snprintf(a->text, sizeof a->text, "reduce:%s%s%s", opname, np == 3 ? ":" : "",
             np == 3 ? ty_dtype_name(dt) : "");
  } else if (strcmp(k, "scalar") == 0) {
    static const struct {
      const char *text, *name;
      int t;
    } st[] = {{"f64", "f64", TL_SC_F64},      {"number", "f64", TL_SC_F64},
              {"float", "f64", TL_SC_F64},    {"i64", "i64", TL_SC_I64},
              {"integer", "i64", TL_SC_I64},  {"int", "i64", TL_SC_I64},
              {"bool", "bool", TL_SC_BOOL},   {"boolean", "bool", TL_SC_BOOL},
              {"string", "string", TL_SC_STR}, {"str", "string", TL_SC_STR}};
    a->kind = TL_SCALAR;
    a->sctype = TL_SC_ANY;
    snprintf(a->text, sizeof a->text, "scalar");
    if (np > 2) return false;
    if (np == 2) {
      size_t i = 0;
      while (i < sizeof st / sizeof st[0] && strcmp(part[1], st[i].text) != 0) i++;
      if (i == sizeof st / sizeof st[0]) return false;
      a->sctype = st[i].t;
      snprintf(a->text, sizeof a->text, "scalar:%s", st[i].name);
    }
  } else {
    return false;
  }
  return true;
}

/* args table at idx -> t->args, nargs, nstores, nscalars, sig. */
static void parse_args(lua_State *L, int idx, const char *fn, tl_ltask *t) {
  if (!lua_istable(L, idx))
    tl_error(L, fn, "args must be a table of argument kinds such as {\"in\", \"out\"}, got %s",
             tl_typename(L, idx));
  lua_Unsigned n = lua_rawlen(L, idx);
  if (n > TL_MAX_TASK_ARGS)
    tl_error(L, fn, "%llu arguments, at most %d are supported", (unsigned long long)n,
             TL_MAX_TASK_ARGS);
  t->nargs = t->nstores = t->nscalars = 0;
  t->sig[0] = 0;
  size_t siglen = 0;
  for (int k = 0; k < (int)n; k++) {
    lua_rawgeti(L, idx, k + 1);
    if (lua_type(L, -1) != LUA_TSTRING)
      tl_error(L, fn, "args[%d] must be a string (%s), got %s", k + 1, ARG_KINDS,
               tl_typename(L, -1));
    const char *text = lua_tostring(L, -1);
    tl_argspec *a = &t->args[k];
    if (!parse_kind(text, a))
      tl_error(L, fn, "args[%d] = '%s' is not an argument kind (%s)", k + 1, text, ARG_KINDS);
    lua_pop(L, 1);
    a->slot = a->kind == TL_SCALAR ? t->nscalars++ : t->nstores++;
    siglen += (size_t)snprintf(t->sig + siglen, sizeof t->sig - siglen, "%s%s", k ? ", " : "",
                               a->text);
    if (siglen >= sizeof t->sig) siglen = sizeof t->sig - 1;
  }
  t->nargs = (int)n;
  int aligned = 0;
  for (int k = 0; k < t->nargs; k++)
    aligned += t->args[k].kind != TL_SCALAR && t->args[k].kind != TL_WHOLE;
  if (aligned == 0)
    tl_error(L, fn, "a task needs at least one aligned store argument (in, out, inout or "
             "reduce): its shape is the launch domain");
}

/* ---- policies ------------------------------------------------------------------------ */

void tl_checkpolicy(lua_State *L, int idx, const char *fn, const char *what, ty_policy *p,
                    unsigned *flags) {
  idx = lua_absindex(L, idx);
  if (!lua_istable(L, idx))
    tl_error(L, fn, "%s must be a table such as {parallel = \"all\"}, got %s", what,
             tl_typename(L, idx));
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      tl_error(L, fn, "%s: keys must be names, got a %s key", what, tl_typename(L, -2));
    const char *key = lua_tostring(L, -2);
    char text[64];
    int tp = lua_type(L, -1);
    if (flags && (strcmp(key, "pointwise") == 0 || strcmp(key, "fusable") == 0)) {
      if (tp != LUA_TBOOLEAN)
        tl_error(L, fn, "%s: %s must be true or false, got %s", what, key, tl_typename(L, -1));
      bool on = lua_toboolean(L, -1);
      if (key[0] == 'p') *flags = on ? (*flags | TY_TASK_POINTWISE) : (*flags & ~TY_TASK_POINTWISE);
      else *flags = on ? (*flags & ~TY_TASK_NOFUSE) : (*flags | TY_TASK_NOFUSE);
      lua_pop(L, 1);
      continue;
    }
    if (tp == LUA_TSTRING) {
      snprintf(text, sizeof text, "%s", lua_tostring(L, -1));
    } else if (tp == LUA_TBOOLEAN) {
      snprintf(text, sizeof text, "%s", lua_toboolean(L, -1) ? "true" : "false");
    } else if (tp == LUA_TNUMBER && lua_isinteger(L, -1)) {
      snprintf(text, sizeof text, "%lld", (long long)lua_tointeger(L, -1));
    } else if (tp == LUA_TNUMBER) {
      snprintf(text, sizeof text, "%.17g", (double)lua_tonumber(L, -1));
    } else {
      tl_error(L, fn, "%s: %s must be a string, number or boolean, got %s", what, key,
               tl_typename(L, -1));
    }
    char err[300];
    if (ty_policy_set(p, key, text, err, sizeof err) != TY_OK) {
      if (flags && strncmp(err, "unknown policy key", 18) == 0)
        tl_error(L, fn, "%s: %s; or pointwise, fusable", what, err);
      tl_error(L, fn, "%s: %s", what, err);
    }
    lua_pop(L, 1);
  }
}

/* ---- the binding's task state ----------------------------------------------------------- */

static tl_ltask *find(const tl_tasks *ts, const char *name) {
  for (int i = 0; i < ts->ntasks; i++)
    if (strcmp(ts->tasks[i]->name, name) == 0) return ts->tasks[i];
  return NULL;
}

/* A Lua task's record belongs to the runtime (its `release`): queued
 * launches and a later state bound to the same runtime may still find it. */
static void release_record(void *data) {
  tl_ltask *t = data;
  tl_body_free(t->body);
  free(t);
}

void tl_tasks_close(tl_box *b) {
  tl_tasks *ts = b->tasks;
  if (!ts) return;
  tl_workers_free(ts->workers, ts->nworkers);
  for (int i = 0; i < ts->ntasks; i++) {
    tl_ltask *t = ts->tasks[i];
    if (t->lua) {
      /* a launch still queued fails with "the Lua state ... is closed" */
      t->owner = NULL;
      tl_body_free(t->body);
      t->body = NULL;
    } else {
      free(t); /* a C task's signature record: ours alone */
    }
  }
  free(ts->tasks);
  free(ts);
  b->tasks = NULL;
}

/* ---- declaring --------------------------------------------------------------------------- */

static void push_launcher(lua_State *L, tl_ltask *t, const ty_policy *options) {
  launcher *ln = lua_newuserdatauv(L, sizeof *ln, 0);
  ln->t = t;
  ln->has_options = options != NULL;
  if (options) ln->options = *options;
  else memset(&ln->options, 0, sizeof ln->options);
  luaL_setmetatable(L, TL_LAUNCHER);
}

/* The same axes set to the same values (field by field: padding and unset
 * fields do not count). */
static bool same_traits(const ty_task *core, const ty_policy *b, unsigned flags) {
  const ty_policy *a = ty_task_traits(core);
  if (ty_task_flags(core) != flags || a->set != b->set) return false;
  unsigned s = a->set;
  return (!(s & TY_POL_MODE) || a->mode == b->mode) &&
         (!(s & TY_POL_OVERDECOMPOSE) || a->overdecompose == b->overdecompose) &&
         (!(s & TY_POL_MIN_CHUNK) || a->min_chunk == b->min_chunk) &&
         (!(s & TY_POL_FAVOR) || a->favor == b->favor) &&
         (!(s & TY_POL_FUSE) || a->fuse == b->fuse) &&
         (!(s & TY_POL_FASTMATH) || a->fastmath == b->fastmath) &&
         (!(s & TY_POL_MEMORY) || a->memory == b->memory) &&
         (!(s & TY_POL_STREAM) || a->stream_relaxed == b->stream_relaxed) &&
         (!(s & TY_POL_TARGET) || a->target == b->target);
}

/* The record of a Lua task registered by a binding (its signature starts
 * with TL_LUA_SIG), or NULL for a C or built-in task. */
static tl_ltask *lua_record(const ty_task *core) {
  const char *sig = core ? ty_task_signature(core) : NULL;
  if (!sig || strncmp(sig, TL_LUA_SIG, sizeof TL_LUA_SIG - 1) != 0) return NULL;
  return (tl_ltask *)ty_task_data(core);
}

void tl_task_declare(lua_State *L, const char *name, int args_idx, int traits_idx,
                     int body_idx) {
  tl_box *b = box_of(L);
  tl_tasks *ts = b->tasks;
  ty_runtime *rt = b->rt;
  char fn[TY_MAX_NAME + 16];
  if (!*name) tl_error(L, "task", "name must not be empty");
  if (strlen(name) >= TY_MAX_NAME)
    tl_error(L, "task", "name '%.20s...' is longer than %d bytes", name, TY_MAX_NAME - 1);
  snprintf(fn, sizeof fn, "task '%s'", name);
  args_idx = lua_absindex(L, args_idx);
  traits_idx = lua_absindex(L, traits_idx);
  body_idx = lua_absindex(L, body_idx);

  /* everything that may raise comes before the body is captured */
  tl_ltask *spec = lua_newuserdatauv(L, sizeof *spec, 0); /* scratch, collected */
  memset(spec, 0, sizeof *spec);
  parse_args(L, args_idx, fn, spec);
  bool has_body = !lua_isnoneornil(L, body_idx);
  ty_policy traits;
  unsigned flags = 0;
  memset(&traits, 0, sizeof traits);
  if (!lua_isnoneornil(L, traits_idx)) {
    if (!has_body)
      tl_error(L, fn, "the traits of a C task are set where C registers it (ty_task_desc.traits)");
    tl_checkpolicy(L, traits_idx, fn, "traits", &traits, &flags);
  }
  const ty_task *core = ty_task_find(rt, name);
  tl_ltask *rec = lua_record(core);
  tl_ltask *t = find(ts, name); /* declared in this state */
  if (rec && rec->owner && rec->owner != ts)
    tl_error(L, fn, "is a Lua task of another Lua state bound to this runtime");
  if (core && !rec && has_body)
    tl_error(L, fn, "a task of this name already exists (a built-in or C task); choose another "
             "name, or omit the body to call that C task from Lua");
  if (rec && !has_body) tl_error(L, fn, "is a Lua task: a declaration needs its body");
  if (!core && !has_body)
    tl_error(L, fn, "no C task of this name is registered (a Lua task needs a body)");
  if (rec && !same_traits(core, &traits, flags))
    tl_error(L, fn, "was declared with other traits, which cannot change in a runtime; "
             "choose another name");
  if (!t && ts->ntasks == ts->cap) {
    int cap = ts->cap ? ts->cap * 2 : 16;
    tl_ltask **p = realloc(ts->tasks, (size_t)cap * sizeof *p);
    if (!p) tl_error(L, fn, "out of memory");
    ts->tasks = p;
    ts->cap = cap;
  }
  if (rec) {
    /* queued launches of the old body run with it (or fail, once closed) */
    ty_status st = ty_flush(rt);
    if (st != TY_OK) tl_fail(L, rt, "task", st);
  }
  char sig[sizeof spec->sig + sizeof TL_LUA_SIG];
  snprintf(sig, sizeof sig, "%s%s", TL_LUA_SIG, spec->sig);

  tl_body *body = has_body ? tl_body_capture(L, body_idx, fn) : NULL;
  /* from here: release body before raising */
  if (!t) {
    t = rec; /* a record left by a closed state: adopt it */
    if (!t && !(t = calloc(1, sizeof *t))) {
      tl_body_free(body);
      tl_error(L, fn, "out of memory");
    }
    if (!rec) {
      snprintf(t->name, sizeof t->name, "%s", name);
      t->task = core;
      t->lua = has_body;
    }
    if (has_body && !rec) {
      ty_task_desc d;
      memset(&d, 0, sizeof d);
      d.name = name;
      d.cpu = tl_lua_task_cpu;
      d.data = t;
      d.traits = traits;
      d.flags = flags;
      d.signature = sig;
      d.release = release_record;
      ty_status st = ty_task_register(rt, &d, &t->task);
      if (st != TY_OK) {
        free(t);
        tl_body_free(body);
        tl_fail(L, rt, "task", st);
      }
    }
    t->owner = ts;
    t->id = ts->ntasks;
    ts->tasks[ts->ntasks++] = t;
  }
  tl_body_free(t->body);
  t->body = body;
  t->gen++;
  t->nargs = spec->nargs;
  t->nstores = spec->nstores;
  t->nscalars = spec->nscalars;
  memcpy(t->args, spec->args, sizeof t->args);
  memcpy(t->sig, spec->sig, sizeof t->sig);
  lua_pop(L, 1); /* spec */

  push_launcher(L, t, NULL);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_TASKS);
  lua_pushstring(L, name);
  lua_pushvalue(L, -3);
  lua_rawset(L, -3); /* tycho.tasks refuses plain assignments */
  lua_pop(L, 1);
}

void tl_push_signature_args(lua_State *L, const char *sig) {
  lua_newtable(L);
  int n = 0;
  for (const char *p = sig; *p;) {
    const char *c = strchr(p, ',');
    const char *end = c ? c : p + strlen(p);
    while (p < end && isspace((unsigned char)*p)) p++;
    const char *e = end;
    while (e > p && isspace((unsigned char)e[-1])) e--;
    lua_pushlstring(L, p, (size_t)(e - p));
    lua_rawseti(L, -2, ++n);
    p = c ? c + 1 : end;
  }
}

/* tycho.task{name=, args=, traits=, body=} */
static const tl_sig sig_task = {"task", 1, 1, "", false,
                                "tycho.task{name = ..., args = {...} [, traits = {...}] [, body = f]}"};
static int l_task(lua_State *L) {
  tl_args(L, &sig_task);
  if (!lua_istable(L, 1))
    return tl_error(L, "task", "expects a table {name = ..., args = {...}, traits = {...}, "
                    "body = function(ctx, ...) ... end}, got %s", tl_typename(L, 1));
  lua_settop(L, 1);
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    if (!k || (strcmp(k, "name") && strcmp(k, "args") && strcmp(k, "traits") && strcmp(k, "body")))
      tl_error(L, "task", "unknown field %s%s%s (valid: name, args, traits, body)", k ? "'" : "",
               k ? k : tl_typename(L, -2), k ? "'" : "");
    lua_pop(L, 1);
  }
  lua_getfield(L, 1, "name");   /* 2 */
  lua_getfield(L, 1, "args");   /* 3 */
  lua_getfield(L, 1, "traits"); /* 4 */
  lua_getfield(L, 1, "body");   /* 5 */
  if (lua_type(L, 2) != LUA_TSTRING)
    tl_error(L, "task", "name must be a string, got %s", tl_typename(L, 2));
  if (lua_isnil(L, 3)) tl_error(L, "task", "args is missing (e.g. args = {\"in\", \"out\"})");
  tl_task_declare(L, lua_tostring(L, 2), 3, 4, 5);
  return 1;
}

/* ---- launching ------------------------------------------------------------------------------- */

static launcher *checklauncher(lua_State *L) {
  box_of(L);
  return luaL_checkudata(L, 1, TL_LAUNCHER);
}

static bool same_shape(int na, const int64_t *a, int nb, const int64_t *b) {
  if (na != nb) return false;
  for (int k = 0; k < na; k++)
    if (a[k] != b[k]) return false;
  return true;
}

/* Pack scalar k (declared a, Lua value at idx) into the buffer. */
typedef struct packer {
  _Alignas(8) unsigned char buf[TY_MAX_SCALAR_BYTES];
  size_t strings; /* next free byte for strings */
  int n;
} packer;

static void pack_scalar(lua_State *L, const char *fn, packer *pk, const tl_argspec *a, int argno,
                        int idx) {
  int tp = lua_type(L, idx);
  int64_t iv = 0;
  double dv = 0;
  int kind = 0;
  const char *expect = NULL;
  switch (a->sctype) {
  case TL_SC_F64:
    if (tp == LUA_TNUMBER) dv = lua_tonumber(L, idx), kind = TY_LUA_SCALAR_F64;
    else expect = "a number";
    break;
  case TL_SC_I64:
    if (tp == LUA_TNUMBER) {
      int ok = 0;
      iv = (int64_t)lua_tointegerx(L, idx, &ok);
      if (!ok)
        tl_error(L, fn, "argument %d (%s) must be an integer, got %s", argno, a->text,
                 lua_tostring(L, idx));
      kind = TY_LUA_SCALAR_I64;
    } else {
      expect = "an integer";
    }
    break;
  case TL_SC_BOOL:
    if (tp == LUA_TBOOLEAN) iv = lua_toboolean(L, idx), kind = TY_LUA_SCALAR_BOOL;
    else expect = "a boolean";
    break;
  case TL_SC_STR:
    if (tp == LUA_TSTRING) kind = TY_LUA_SCALAR_STR;
    else expect = "a string";
    break;
  default:
    if (tp == LUA_TNUMBER && lua_isinteger(L, idx)) iv = lua_tointeger(L, idx), kind = TY_LUA_SCALAR_I64;
    else if (tp == LUA_TNUMBER) dv = lua_tonumber(L, idx), kind = TY_LUA_SCALAR_F64;
    else if (tp == LUA_TBOOLEAN) iv = lua_toboolean(L, idx), kind = TY_LUA_SCALAR_BOOL;
    else if (tp == LUA_TSTRING) kind = TY_LUA_SCALAR_STR;
    else expect = "a number, boolean or string";
  }
  if (expect)
    tl_error(L, fn, "argument %d (%s) must be %s, got %s", argno, a->text, expect,
             tp == LUA_TNONE || tp == LUA_TNIL ? "nothing (it is missing)" : tl_typename(L, idx));
  unsigned char *slot = pk->buf + 8 + 8 * (size_t)a->slot;
  if (kind == TY_LUA_SCALAR_STR) {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    if (memchr(s, 0, len))
      tl_error(L, fn, "argument %d (%s): a string scalar may not contain zero bytes", argno,
               a->text);
    if (pk->strings + len + 1 > sizeof pk->buf)
      tl_error(L, fn, "the scalar arguments take more than %d bytes", TY_MAX_SCALAR_BYTES);
    memcpy(pk->buf + pk->strings, s, len + 1);
    iv = (int64_t)pk->strings;
    pk->strings += len + 1;
  }
  if (kind == TY_LUA_SCALAR_F64) memcpy(slot, &dv, 8);
  else memcpy(slot, &iv, 8);
  pk->buf[8 + 8 * (size_t)pk->n + (size_t)a->slot] = (unsigned char)kind;
}

/* The identity of op for dtype t, as a new 0-d store pushed on the stack. */
static ty_store *push_identity(lua_State *L, ty_runtime *rt, const char *fn, ty_redop op,
                               ty_dtype t) {
  ty_store **slot = tl_newslot(L);
  ty_status st;
  if (ty_dtype_is_float(t)) {
    double v = op == TY_REDOP_SUM ? 0.0 : op == TY_REDOP_PROD ? 1.0
             : op == TY_REDOP_MIN ? INFINITY : -INFINITY;
    TL_TRY(L, rt, st, ty_scalar_f64(rt, t, v, slot));
  } else {
    int64_t lo;
    uint64_t hi;
    ty_dtype_limits(t, &lo, &hi);
    int64_t v = op == TY_REDOP_SUM    ? 0
                : op == TY_REDOP_PROD ? 1
                : op == TY_REDOP_MIN  ? (int64_t)hi /* u64: the bits */
                                      : lo;
    TL_TRY(L, rt, st, ty_scalar_i64(rt, t, v, slot));
  }
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  return *slot;
}

static int launcher_call(lua_State *L) {
  launcher *ln = checklauncher(L);
  ty_runtime *rt = tl_rt(L);
  tl_ltask *t = ln->t;
  char fn[TY_MAX_NAME + 16];
  snprintf(fn, sizeof fn, "task '%s'", t->name);
  int given = lua_gettop(L) - 1;
  if (given > t->nargs)
    tl_error(L, fn, "takes %d argument%s (%s), got %d", t->nargs, t->nargs == 1 ? "" : "s",
             t->sig, given);
  lua_settop(L, 1 + t->nargs); /* omitted arguments read as nil */
  luaL_checkstack(L, 2 * t->nargs + 8, "too many task arguments");

  ty_store *store[TL_MAX_TASK_ARGS]; /* per declared argument */
  int result_idx[TL_MAX_TASK_ARGS];  /* stack index of the store to return */
  int dom = -1, dom_reduce = -1;
  for (int k = 0; k < t->nargs; k++) {
    const tl_argspec *a = &t->args[k];
    int idx = 2 + k;
    store[k] = NULL;
    result_idx[k] = idx;
    if (a->kind == TL_SCALAR) {
      if (tl_teststore(L, idx, fn))
        tl_error(L, fn, "argument %d (%s) must be a number, boolean or string, got store", k + 1,
                 a->text);
      continue;
    }
    store[k] = tl_teststore(L, idx, fn);
    if (!store[k]) {
      if (lua_isnil(L, idx) && (a->kind == TL_OUT || a->kind == TL_REDUCE)) continue;
      tl_error(L, fn, "argument %d (%s) must be a store, got %s", k + 1, a->text,
               lua_isnil(L, idx) ? "nothing (it is missing)" : tl_typename(L, idx));
    }
    if (a->kind == TL_REDUCE) {
      if (dom_reduce < 0) dom_reduce = k;
    } else if (a->kind != TL_WHOLE && dom < 0) {
      dom = k;
    }
  }
  if (dom < 0) dom = dom_reduce;
  if (dom < 0)
    tl_error(L, fn, "no store argument gives the launch domain: pass an in, out or inout store");
  int ndim = ty_store_ndim(store[dom]);
  int64_t domain[TY_MAX_RANK];
  memcpy(domain, ty_store_shape(store[dom]), (size_t)ndim * sizeof *domain);

  /* shapes, omitted outputs, broadcast reductions */
  ty_arg args[TL_MAX_TASK_ARGS];
  for (int k = 0; k < t->nargs; k++) {
    const tl_argspec *a = &t->args[k];
    if (a->kind == TL_SCALAR) continue;
    ty_arg *arg = &args[a->slot];
    memset(arg, 0, sizeof *arg);
    arg->proj = a->kind == TL_WHOLE ? TY_PROJ_WHOLE : TY_PROJ_ALIGNED;
    arg->priv = a->kind == TL_OUT ? TY_PRIV_OUT : a->kind == TL_INOUT ? TY_PRIV_INOUT
              : a->kind == TL_REDUCE ? TY_PRIV_REDUCE : TY_PRIV_IN;
    arg->redop = a->kind == TL_REDUCE ? a->redop : TY_REDOP_NONE;
    ty_store *s = store[k];
    ty_dtype dt = a->dtype >= 0 ? (ty_dtype)a->dtype : TY_F64;
    ty_status st;
    if (!s && a->kind == TL_OUT) {
      ty_store **slot = tl_newslot(L);
      TL_TRY(L, rt, st, ty_store_create(rt, dt, ndim, domain, slot));
      if (st != TY_OK) tl_fail(L, rt, fn, st);
      tl_created(L, *slot);
      s = *slot;
      result_idx[k] = lua_gettop(L);
    } else if (!s) { /* an omitted reduction: a 0-d store of the identity */
      s = push_identity(L, rt, fn, a->redop, dt);
      result_idx[k] = lua_gettop(L);
    }
    if (a->kind != TL_WHOLE && !same_shape(ty_store_ndim(s), ty_store_shape(s), ndim, domain)) {
      char got[200], want[200];
      tl_shape_str(ty_store_ndim(s), ty_store_shape(s), got, sizeof got);
      tl_shape_str(ndim, domain, want, sizeof want);
      if (a->kind != TL_REDUCE)
        tl_error(L, fn, "argument %d (%s) has shape %s, argument %d (%s) has shape %s: aligned "
                 "arguments must have the same shape (declare \"in:broadcast\" for an input "
                 "every piece reads whole)", k + 1, a->text, got, dom + 1, t->args[dom].text, want);
      ty_store **slot = tl_newslot(L);
      st = ty_store_broadcast(rt, s, ndim, domain, slot);
      if (st != TY_OK)
        tl_error(L, fn, "argument %d (%s) has shape %s, which does not broadcast to the launch "
                 "domain %s", k + 1, a->text, got, want);
      s = *slot;
    }
    arg->store = s;
  }

  packer pack, *pk = NULL; /* on the C stack: a raise leaves nothing to free */
  size_t scalar_bytes = 0;
  if (t->nscalars > 0) {
    pk = &pack;
    pk->n = t->nscalars;
    memset(pk->buf, 0, 8 + 9 * (size_t)pk->n);
    int64_t n64 = pk->n;
    memcpy(pk->buf, &n64, 8);
    pk->strings = 8 + 9 * (size_t)pk->n;
    for (int k = 0; k < t->nargs; k++)
      if (t->args[k].kind == TL_SCALAR) pack_scalar(L, fn, pk, &t->args[k], k + 1, 2 + k);
    scalar_bytes = pk->strings;
  }

  ty_launch_desc d;
  memset(&d, 0, sizeof d);
  d.task = t->task;
  d.ndim = ndim;
  d.domain = domain;
  d.nargs = t->nstores;
  d.args = args;
  d.scalars = pk ? pk->buf : NULL;
  d.scalar_bytes = scalar_bytes;
  d.options = ln->has_options ? &ln->options : NULL;
  luaL_where(L, 1); /* "file:line:" of the caller, named if the task fails */
  char origin[TY_MAX_ORIGIN];
  size_t olen = 0;
  const char *where = lua_tolstring(L, -1, &olen);
  while (olen > 0 && (where[olen - 1] == ':' || where[olen - 1] == ' ')) olen--;
  snprintf(origin, sizeof origin, "%.*s", (int)olen, where);
  lua_pop(L, 1);
  d.origin = origin[0] ? origin : NULL;
  ty_status st = ty_launch(rt, &d);
  if (st != TY_OK) tl_fail(L, rt, fn, st);

  int nres = 0;
  for (int k = 0; k < t->nargs; k++) {
    tl_argkind kind = t->args[k].kind;
    if (kind == TL_OUT || kind == TL_INOUT || kind == TL_REDUCE) {
      lua_pushvalue(L, result_idx[k]);
      nres++;
    }
  }
  return nres;
}

/* launcher:with{parallel = "single", ...}: the same task with per-launch options. */
static int launcher_with(lua_State *L) {
  launcher *ln = checklauncher(L);
  char fn[TY_MAX_NAME + 16];
  snprintf(fn, sizeof fn, "task '%s'", ln->t->name);
  ty_policy p = ln->options;
  if (!ln->has_options) memset(&p, 0, sizeof p);
  if (lua_gettop(L) > 2)
    tl_error(L, fn, "with takes one table: launcher:with{parallel = \"single\"}, got %d arguments",
             lua_gettop(L) - 1);
  tl_checkpolicy(L, 2, fn, "with", &p, NULL);
  push_launcher(L, ln->t, &p);
  return 1;
}

static int launcher_index(lua_State *L) {
  launcher *ln = checklauncher(L);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "with") == 0) {
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushcclosure(L, launcher_with, 1);
  } else if (strcmp(k, "name") == 0) {
    lua_pushstring(L, ln->t->name);
  } else if (strcmp(k, "args") == 0) {
    lua_createtable(L, ln->t->nargs, 0);
    for (int i = 0; i < ln->t->nargs; i++) {
      lua_pushstring(L, ln->t->args[i].text);
      lua_rawseti(L, -2, i + 1);
    }
  } else if (strcmp(k, "kind") == 0) {
    lua_pushstring(L, ln->t->body ? "lua" : "c");
  } else {
    tl_error(L, "task", "a task launcher has no field '%s' (fields: name, args, kind, with)", k);
  }
  return 1;
}

static int launcher_tostring(lua_State *L) {
  launcher *ln = checklauncher(L);
  lua_pushfstring(L, "tycho.task '%s' (%s task: %s)%s", ln->t->name, ln->t->body ? "Lua" : "C",
                  ln->t->sig, ln->has_options ? " with options" : "");
  return 1;
}

/* tycho.tasks.x for a name not declared in this state: a C task registered
 * with a signature is declared now; others say why they cannot be called. */
static int tasks_index(lua_State *L) {
  tl_box *b = box_of(L);
  const char *name = lua_tostring(L, 2);
  const ty_task *core = name ? ty_task_find(b->rt, name) : NULL;
  if (!core) return 0;
  const char *sig = ty_task_signature(core);
  if (lua_record(core))
    return tl_error(L, "tasks", "'%s' is a Lua task of a closed or other Lua state: declare it "
                    "again with its body", name);
  if (!sig)
    return tl_error(L, "tasks", "'%s' is a C or built-in task without a signature: declare it "
                    "with tycho.task{name = \"%s\", args = {...}} (no body), or register it "
                    "with ty_task_desc.signature", name, name);
  tl_push_signature_args(L, sig);
  lua_pushnil(L);
  lua_pushnil(L);
  tl_task_declare(L, name, -3, -2, -1);
  return 1;
}

static int tasks_newindex(lua_State *L) {
  return tl_error(L, "tasks", "is read-only: declare tasks with tycho.task{...}");
}

void tl_tasks_open(lua_State *L, int mod, int box) {
  tl_box *b = lua_touserdata(L, box);
  tl_tasks *ts = calloc(1, sizeof *ts);
  int n = ty_runtime_config(b->rt)->cpus;
  if (!ts || !(ts->workers = tl_workers_new(n, b->rt))) {
    free(ts);
    luaL_error(L, "tycho: out of memory");
    return;
  }
  ts->rt = b->rt;
  ts->nworkers = n;
  b->tasks = ts;

  luaL_newmetatable(L, TL_LAUNCHER);
  static const luaL_Reg meta[] = {{"__call", launcher_call},
                                  {"__index", launcher_index},
                                  {"__tostring", launcher_tostring},
                                  {NULL, NULL}};
  lua_pushvalue(L, box);
  luaL_setfuncs(L, meta, 1);
  lua_pop(L, 1);

  lua_newtable(L); /* tycho.tasks: name -> launcher */
  lua_createtable(L, 0, 2);
  lua_pushvalue(L, box);
  lua_pushcclosure(L, tasks_index, 1);
  lua_setfield(L, -2, "__index");
  lua_pushvalue(L, box);
  lua_pushcclosure(L, tasks_newindex, 1);
  lua_setfield(L, -2, "__newindex");
  lua_setmetatable(L, -2);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, TL_TASKS);
  lua_setfield(L, mod, "tasks");

  lua_pushvalue(L, box);
  lua_pushcclosure(L, l_task, 1);
  lua_setfield(L, mod, "task");
}
