/*
 * lrandom.c — tycho.random: numpy's Generator methods from Lua, on the
 * runtime's generator (tycho.random.normal(...)) or an explicit one
 * (local g = tycho.random.generator(42); g:normal(...)).
 *
 * tycho.random stays callable: tycho.random(shape [, dtype] [, dist]) is
 * lcreate.c's function, reached through the table's __call, so scripts that
 * used it see the same numbers.
 *
 * A generator is (seed, stream) (tycho/random.h): every draw takes the next
 * stream, so two calls differ and a script repeats its numbers run after
 * run, under any --cpus, mode or fusion (each element is a function of the
 * seed, the stream and its flat index only). The runtime's generator is the
 * one tycho.seed / tycho.random.seed reset, so after tycho.random.seed(s) the
 * module functions give what generator(s) gives for the same calls.
 *
 * Each function is written once for both forms: `self` is 1 for a method
 * (argument k of the numpy call is at stack index k + 1) and 0 for the
 * module function. Positions are 1-based as everywhere in tycho: an integer
 * n given to permutation or choice means the positions 1..n (numpy's
 * arange(n) + 1), so the result indexes a store directly.
 */
#include "tl.h"
#include "tycho/mask.h"
#include "tycho/random.h"
#include "tycho/sort.h"

#include <math.h>
#include <string.h>

#define TL_GEN "tycho.random.generator"

/* A module function and its method twin: the same name, positions + 1. */
typedef struct rsig {
  tl_sig mod, meth;
} rsig;
#define RSIGO(name, min, max, opts, args, what)                                          \
  static const rsig sig_##name = {                                                       \
      {"random." #name, min, max, opts, false, "tycho.random." #name args ": " what},    \
      {"random." #name, min + 1, max + 1, opts, false, "g:" #name args ": " what}}
#define RSIG(name, min, max, args, what) RSIGO(name, min, max, "", args, what)

RSIG(random, 0, 2, "([shape] [, dtype])", "uniform on [0, 1), f64 or f32");
RSIG(uniform, 0, 4, "([shape] [, low = 0] [, high = 1] [, dtype])", "uniform on [low, high)");
RSIG(normal, 0, 4, "([shape] [, mean = 0] [, std = 1] [, dtype])", "normal (Gaussian)");
RSIG(standard_normal, 0, 2, "([shape] [, dtype])", "normal, mean 0 and std 1");
RSIG(exponential, 0, 3, "([shape] [, scale = 1] [, dtype])", "exponential with mean scale");
RSIG(integers, 1, 4, "(low [, high] [, shape] [, dtype = \"i64\"])",
     "integers on [low, high) (high absent: [0, low))");
RSIGO(permutation, 1, 2, "axis", "(n | x [, axis = 1] [, {axis = k}])",
      "the positions 1..n shuffled, or x's slices along axis in a random order");
RSIGO(shuffle, 1, 2, "axis", "(x [, axis = 1] [, {axis = k}])", "shuffles x's slices along axis in place");
RSIGO(choice, 1, 6, "replace p axis shuffle",
      "(a | n [, size] [, replace = true] [, p] [, axis = 1] [, shuffle = true] [, {replace = bool, "
      "p = p, axis = k, shuffle = bool}])",
      "a sample of a's slices along axis (or of the positions 1..n), weighted by p");

/* The generator of a method, NULL (the runtime's) for a module function. */
static ty_random_gen *self_gen(lua_State *L, int self) {
  return self ? (ty_random_gen *)luaL_checkudata(L, 1, TL_GEN) : NULL;
}

static const tl_sig *sig_of(const rsig *s, int self) { return self ? &s->meth : &s->mod; }

/* A shape or nil (a 0-d store: numpy's size=None gives one value). */
static int opt_shape(lua_State *L, int idx, const char *fn, int64_t *shape, ty_dtype t) {
  if (lua_isnil(L, idx)) return 0;
  return tl_checkshape(L, idx, fn, shape, false, t);
}

static double opt_number(lua_State *L, int idx, const char *fn, const char *what, double def) {
  if (lua_isnil(L, idx)) return def;
  if (lua_type(L, idx) != LUA_TNUMBER)
    tl_error(L, fn, "%s must be a number, got %s", what, tl_typename(L, idx));
  return lua_tonumber(L, idx);
}

static ty_dtype float_dtype(lua_State *L, int idx, const char *fn) {
  ty_dtype t = tl_optdtype(L, idx, fn, TY_F64);
  if (!ty_dtype_is_float(t)) tl_error(L, fn, "dtype must be f64 or f32, got %s", ty_dtype_name(t));
  return t;
}

/* Push a new store drawn from spec with gen (NULL: the runtime's). */
static ty_store *push_draw(lua_State *L, const char *fn, ty_random_gen *gen, ty_dtype t, int ndim,
                           const int64_t *shape, const ty_random_spec *spec) {
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_random_draw(rt, t, ndim, shape, spec, gen, slot));
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  tl_created(L, *slot);
  return *slot;
}

/* The float distributions: shape, up to two parameters, dtype. */
static int float_dist(lua_State *L, const rsig *rs, int self, ty_random_dist dist, int nparams) {
  const tl_sig *s = sig_of(rs, self);
  tl_args(L, s);
  ty_random_gen *g = self_gen(L, self);
  /* the parameters' names, and their defaults: standard_normal is normal(0, 1) */
  static const char *const names[TY_RANDOM_NDIST][2] = {
      [TY_RANDOM_UNIFORM] = {"low", "high"},
      [TY_RANDOM_NORMAL] = {"mean", "std"},
      [TY_RANDOM_EXPONENTIAL] = {"scale", NULL}};
  ty_random_spec spec = {.dist = dist, .a = dist == TY_RANDOM_EXPONENTIAL ? 1.0 : 0.0, .b = 1.0};
  if (nparams > 0) spec.a = opt_number(L, self + 2, s->fn, names[dist][0], spec.a);
  if (nparams > 1) spec.b = opt_number(L, self + 3, s->fn, names[dist][1], spec.b);
  ty_dtype t = float_dtype(L, self + 2 + nparams, s->fn);
  int64_t shape[TY_MAX_RANK];
  int ndim = opt_shape(L, self + 1, s->fn, shape, t);
  push_draw(L, s->fn, g, t, ndim, shape, &spec);
  return 1;
}

static int do_random(lua_State *L, int self) { return float_dist(L, &sig_random, self, TY_RANDOM_BITS, 0); }
static int do_uniform(lua_State *L, int self) {
  return float_dist(L, &sig_uniform, self, TY_RANDOM_UNIFORM, 2);
}
static int do_normal(lua_State *L, int self) { return float_dist(L, &sig_normal, self, TY_RANDOM_NORMAL, 2); }
static int do_standard_normal(lua_State *L, int self) {
  return float_dist(L, &sig_standard_normal, self, TY_RANDOM_NORMAL, 0);
}
static int do_exponential(lua_State *L, int self) {
  return float_dist(L, &sig_exponential, self, TY_RANDOM_EXPONENTIAL, 1);
}

/* integers(low [, high] [, shape] [, dtype]): numpy's Generator.integers,
 * high exclusive; one argument n means [0, n). */
static int do_integers(lua_State *L, int self) {
  const tl_sig *s = sig_of(&sig_integers, self);
  tl_args(L, s);
  ty_random_gen *g = self_gen(L, self);
  if (lua_isnil(L, self + 1)) return tl_argerror(L, s, "low is missing");
  ty_random_spec spec = {.dist = TY_RANDOM_INTEGERS};
  spec.lo = tl_checkint(L, self + 1, s->fn, "low");
  if (lua_isnil(L, self + 2)) {
    spec.hi = spec.lo;
    spec.lo = 0;
  } else {
    spec.hi = tl_checkint(L, self + 2, s->fn, "high");
  }
  ty_dtype t = tl_optdtype(L, self + 4, s->fn, TY_I64);
  int64_t shape[TY_MAX_RANK];
  int ndim = opt_shape(L, self + 3, s->fn, shape, t);
  push_draw(L, s->fn, g, t, ndim, shape, &spec);
  return 1;
}

/* ---- permutations and samples ---------------------------------------------- */

/* Push the positions 1..n in a random order: argsort of n random 64-bit
 * keys. The sort is stable, so equal keys (a 2^-64 n^2 chance) still give a
 * permutation, and the same one under any piece count. One draw. */
static ty_store *push_positions(lua_State *L, const char *fn, ty_random_gen *g, int64_t n) {
  const ty_random_spec bits = {.dist = TY_RANDOM_BITS};
  ty_store *keys = push_draw(L, fn, g, TY_I64, 1, &n, &bits);
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_argsort(rt, keys, 0, 1, slot));
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  tl_created(L, *slot);
  return *slot;
}

/* Push x's slices along axis (0-based) at the given positions. */
static ty_store *push_take(lua_State *L, const char *fn, ty_store *x, ty_store *idx, int axis) {
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_take(rt, x, idx, axis, 1, slot));
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  tl_created(L, *slot);
  return *slot;
}

static ty_store *rows_arg(lua_State *L, int idx, const char *fn, const char *what) {
  ty_store *x = tl_checkstore(L, idx, fn, what);
  if (ty_store_ndim(x) == 0) tl_error(L, fn, "%s must be at least 1-D, got a 0-d store", what);
  return x;
}

/* numpy's axis (1-based here, negative from the end) of a rank-ndim store:
 * argument idx or option axis (not both), axis 1 when neither; 0-based. */
static int axis_arg(lua_State *L, const tl_sig *s, int idx, int ndim) {
  int64_t opt;
  bool has_opt = tl_optint(L, s, "axis", &opt);
  if (has_opt && !lua_isnil(L, idx)) return tl_argerror(L, s, "axis is given twice");
  if (has_opt) {
    lua_pushinteger(L, (lua_Integer)opt);
    lua_replace(L, idx);
  }
  if (lua_isnil(L, idx)) return 0;
  return tl_checkaxis(L, idx, s->fn, "axis", ndim);
}

static int do_permutation(lua_State *L, int self) {
  const tl_sig *s = sig_of(&sig_permutation, self);
  tl_args(L, s);
  ty_random_gen *g = self_gen(L, self);
  if (lua_type(L, self + 1) == LUA_TNUMBER) {
    int64_t n = tl_checkint(L, self + 1, s->fn, "n");
    if (n < 0) return tl_error(L, s->fn, "n must be >= 0, got %lld", (long long)n);
    axis_arg(L, s, self + 2, 1); /* the positions are 1-D: axis 1 or -1 only */
    push_positions(L, s->fn, g, n);
    return 1;
  }
  if (!tl_teststore(L, self + 1, s->fn))
    return tl_argerror(L, s, "the argument must be an integer or a store, got %s",
                       tl_typename(L, self + 1));
  ty_store *x = rows_arg(L, self + 1, s->fn, "x");
  const int axis = axis_arg(L, s, self + 2, ty_store_ndim(x));
  ty_store *perm = push_positions(L, s->fn, g, ty_store_shape(x)[axis]);
  push_take(L, s->fn, x, perm, axis);
  return 1;
}

static int do_shuffle(lua_State *L, int self) {
  const tl_sig *s = sig_of(&sig_shuffle, self);
  tl_args(L, s);
  ty_random_gen *g = self_gen(L, self);
  ty_store *x = rows_arg(L, self + 1, s->fn, "x");
  const int axis = axis_arg(L, s, self + 2, ty_store_ndim(x));
  ty_store *perm = push_positions(L, s->fn, g, ty_store_shape(x)[axis]);
  ty_store *y = push_take(L, s->fn, x, perm, axis);
  ty_runtime *rt = tl_rt(L);
  ty_status st = ty_copy(rt, x, y);
  if (st != TY_OK) return tl_fail(L, rt, s->fn, st);
  return 0;
}

/* p of choice as n doubles in a userdata (pushed): a store or a table of
 * numbers, non-negative, summing to 1 within sqrt(eps) as numpy requires. */
static double *probabilities(lua_State *L, int idx, const char *fn, int64_t n, int64_t *nonzero) {
  double *p = lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof(double), 0);
  ty_store *ps = tl_teststore(L, idx, fn);
  if (ps) {
    if (ty_store_ndim(ps) != 1 || ty_store_shape(ps)[0] != n)
      tl_error(L, fn, "p must be 1-D with one entry per choice (%lld)", (long long)n);
    ty_runtime *rt = tl_rt(L);
    ty_store **f = tl_newslot(L);
    ty_status st;
    TL_TRY(L, rt, st, ty_cast(rt, ps, TY_F64, f));
    if (st == TY_OK) st = ty_store_read(rt, *f, p, (size_t)n * sizeof(double));
    if (st != TY_OK) tl_fail(L, rt, fn, st);
    lua_pop(L, 1);
  } else if (lua_istable(L, idx)) {
    if ((int64_t)lua_rawlen(L, idx) != n)
      tl_error(L, fn, "p has %lld entries, expected one per choice (%lld)",
               (long long)lua_rawlen(L, idx), (long long)n);
    for (int64_t i = 0; i < n; i++) {
      lua_rawgeti(L, idx, i + 1);
      if (lua_type(L, -1) != LUA_TNUMBER)
        tl_error(L, fn, "p[%lld] must be a number, got %s", (long long)i + 1, tl_typename(L, -1));
      p[i] = lua_tonumber(L, -1);
      lua_pop(L, 1);
    }
  } else {
    tl_error(L, fn, "p must be a store or a table of numbers, got %s", tl_typename(L, idx));
  }
  double sum = 0;
  *nonzero = 0;
  for (int64_t i = 0; i < n; i++) {
    if (!(p[i] >= 0) || !isfinite(p[i]))
      tl_error(L, fn, "probabilities must be finite and non-negative, p[%lld] is %g", (long long)i + 1,
               p[i]);
    sum += p[i];
    *nonzero += p[i] > 0;
  }
  if (!(fabs(sum - 1.0) <= 1.4901161193847656e-08)) /* sqrt(eps), numpy's tolerance */
    tl_error(L, fn, "probabilities do not sum to 1 (their sum is %.17g)", sum);
  return p;
}

static ty_store *push_buffer(lua_State *L, const char *fn, int64_t n, const double *v) {
  ty_runtime *rt = tl_rt(L);
  ty_store **slot = tl_newslot(L);
  ty_status st;
  TL_TRY(L, rt, st, ty_store_from_buffer(rt, TY_F64, 1, &n, v, slot));
  if (st != TY_OK) tl_fail(L, rt, fn, st);
  tl_created(L, *slot);
  return *slot;
}

/* choice(a | n [, size] [, replace] [, p] [, axis] [, shuffle]): numpy's
 * Generator.choice along axis (1 by default, numpy's 0). shuffle = false is
 * accepted and gives the same sample: numpy leaves the order of an
 * unshuffled sample unspecified, and a shuffled one is such an order.
 * With replacement: uniform positions, or with p the
 * inverse of p's cumulative sum (numpy's searchsorted(cdf, u, "right")).
 * Without: the first k of a random permutation, or with p the k smallest
 * of E_i / p_i (E_i exponential), which is sampling one at a time in
 * proportion to the weights left (Efraimidis-Spirakis), numpy's law. */
static int do_choice(lua_State *L, int self) {
  const tl_sig *s = sig_of(&sig_choice, self);
  const char *fn = s->fn;
  tl_args(L, s);
  ty_random_gen *g = self_gen(L, self);
  ty_runtime *rt = tl_rt(L);
  const int ia = self + 1, isize = self + 2, irep = self + 3, ip = self + 4, iaxis = self + 5,
            ishuf = self + 6;
  ty_store *a = NULL;
  int64_t n;
  int axis = 0;
  if (lua_type(L, ia) == LUA_TNUMBER) {
    n = tl_checkint(L, ia, fn, "n");
    if (n < 0) return tl_error(L, fn, "n must be >= 0, got %lld", (long long)n);
    axis_arg(L, s, iaxis, 1); /* the positions are 1-D: axis 1 or -1 only */
  } else if (tl_teststore(L, ia, fn)) {
    a = rows_arg(L, ia, fn, "a");
    axis = axis_arg(L, s, iaxis, ty_store_ndim(a));
    n = ty_store_shape(a)[axis];
  } else {
    return tl_argerror(L, s, "a must be a store or an integer, got %s", tl_typename(L, ia));
  }
  int64_t shape[TY_MAX_RANK];
  int ndim = opt_shape(L, isize, fn, shape, TY_I64);
  int64_t k = 1;
  for (int d = 0; d < ndim; d++) k *= shape[d];
  bool replace = true;
  if (!lua_isnil(L, irep)) {
    if (lua_type(L, irep) != LUA_TBOOLEAN)
      return tl_error(L, fn, "replace must be a boolean, got %s", tl_typename(L, irep));
    replace = lua_toboolean(L, irep);
  }
  if (!lua_isnil(L, ishuf) && lua_type(L, ishuf) != LUA_TBOOLEAN)
    return tl_error(L, fn, "shuffle must be a boolean, got %s", tl_typename(L, ishuf));
  /* numpy's keywords as options: {replace = false, p = {...}, shuffle = bool} */
  if (lua_istable(L, TL_OPTS(s))) {
    lua_getfield(L, TL_OPTS(s), "shuffle");
    bool shuf_given = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (shuf_given && !lua_isnil(L, ishuf)) return tl_argerror(L, s, "shuffle is given twice");
    (void)tl_optbool(L, s, "shuffle", true); /* checked: a boolean */
    lua_getfield(L, TL_OPTS(s), "replace");
    bool given = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (given && !lua_isnil(L, irep)) return tl_argerror(L, s, "replace is given twice");
    replace = tl_optbool(L, s, "replace", replace);
    if (lua_getfield(L, TL_OPTS(s), "p") != LUA_TNIL) {
      if (!lua_isnil(L, ip)) return tl_argerror(L, s, "p is given twice");
      lua_replace(L, ip);
    } else {
      lua_pop(L, 1);
    }
  }
  if (n == 0 && k > 0) return tl_error(L, fn, "a is empty, and %lld samples were asked for", (long long)k);
  if (!replace && k > n)
    return tl_error(L, fn, "cannot take %lld samples from %lld without replacement", (long long)k,
                    (long long)n);
  int64_t nonzero = n;
  double *p = lua_isnil(L, ip) ? NULL : probabilities(L, ip, fn, n, &nonzero);
  ty_store **slot = NULL;
  ty_status st = TY_OK;
  ty_store *idx; /* k positions, 1-D */
  if (k == 0) {
    slot = tl_newslot(L);
    TL_TRY(L, rt, st, ty_store_create(rt, TY_I64, 1, &k, slot));
    idx = *slot;
  } else if (replace && !p) {
    ty_random_spec sp = {.dist = TY_RANDOM_INTEGERS, .lo = 1, .hi = n + 1};
    idx = push_draw(L, fn, g, TY_I64, 1, &k, &sp);
  } else if (replace) {
    /* the cumulative sum, divided by its last entry so that it ends at 1 exactly */
    for (int64_t i = 1; i < n; i++) p[i] += p[i - 1];
    const double last = p[n - 1];
    for (int64_t i = 0; i < n; i++) p[i] /= last;
    ty_store *cdf = push_buffer(L, fn, n, p);
    const ty_random_spec bits = {.dist = TY_RANDOM_BITS};
    ty_store *u = push_draw(L, fn, g, TY_F64, 1, &k, &bits);
    slot = tl_newslot(L);
    TL_TRY(L, rt, st, ty_searchsorted(rt, cdf, u, true, 1, slot));
    idx = *slot;
  } else {
    if (p && nonzero < k)
      return tl_error(L, fn, "p has %lld non-zero entries, fewer than the %lld samples asked for",
                      (long long)nonzero, (long long)k);
    ty_store *order;
    if (!p) {
      order = push_positions(L, fn, g, n);
    } else {
      ty_store *w = push_buffer(L, fn, n, p);
      const ty_random_spec ex = {.dist = TY_RANDOM_EXPONENTIAL, .a = 1.0};
      ty_store *e = push_draw(L, fn, g, TY_F64, 1, &n, &ex);
      ty_store **keys = tl_newslot(L);
      TL_TRY(L, rt, st, ty_binary(rt, TY_OP_DIV, e, w, keys)); /* p = 0: inf or NaN, sorted last */
      slot = tl_newslot(L);
      if (st == TY_OK) TL_TRY(L, rt, st, ty_argsort(rt, *keys, 0, 1, slot));
      if (st != TY_OK) return tl_fail(L, rt, fn, st);
      order = *slot;
    }
    slot = tl_newslot(L);
    TL_TRY(L, rt, st, ty_store_slice(rt, order, 0, 0, k, 1, slot));
    idx = *slot;
  }
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  ty_store **shaped = tl_newslot(L);
  TL_TRY(L, rt, st, ty_store_reshape(rt, idx, ndim, shape, shaped));
  if (st != TY_OK) return tl_fail(L, rt, fn, st);
  if (a) push_take(L, fn, a, *shaped, axis);
  return 1;
}

/* ---- the two forms --------------------------------------------------------------- */

#define FORMS(name)                                                                      \
  static int l_##name(lua_State *L) { return do_##name(L, 0); }                          \
  static int m_##name(lua_State *L) { return do_##name(L, 1); }
FORMS(random)
FORMS(uniform)
FORMS(normal)
FORMS(standard_normal)
FORMS(exponential)
FORMS(integers)
FORMS(permutation)
FORMS(shuffle)
FORMS(choice)

#define ENTRIES(P)                                                                       \
  {"random", P##_random}, {"uniform", P##_uniform}, {"normal", P##_normal},              \
      {"standard_normal", P##_standard_normal}, {"exponential", P##_exponential},        \
      {"integers", P##_integers}, {"permutation", P##_permutation},                      \
      {"shuffle", P##_shuffle}, {"choice", P##_choice}

/* tycho.random.generator(seed): a generator at stream 0 of seed. */
static int l_generator(lua_State *L) {
  int64_t seed = tl_checkint(L, 1, "random.generator", "seed");
  if (lua_gettop(L) > 1)
    return tl_error(L, "random.generator", "takes one argument (the seed), got %d", lua_gettop(L));
  ty_random_gen *g = lua_newuserdatauv(L, sizeof *g, 0);
  *g = (ty_random_gen){(uint64_t)seed, 0};
  luaL_setmetatable(L, TL_GEN);
  return 1;
}

/* tycho.random.seed(s): the runtime's generator restarts at stream 0 of s. */
static int l_seed(lua_State *L) {
  int64_t seed = tl_checkint(L, 1, "random.seed", "seed");
  ty_seed(tl_rt(L), (uint64_t)seed);
  return 0;
}

/* g:state(): its seed and the number of draws it has made (its stream). */
static int m_state(lua_State *L) {
  ty_random_gen *g = luaL_checkudata(L, 1, TL_GEN);
  lua_pushinteger(L, (lua_Integer)g->seed);
  lua_pushinteger(L, (lua_Integer)g->stream);
  return 2;
}

/* g.name: a method, or an error that lists them (a misspelt g:nromal). */
static int gen_index(lua_State *L) {
  if (lua_type(L, 2) == LUA_TSTRING && lua_getfield(L, lua_upvalueindex(1), lua_tostring(L, 2)) != LUA_TNIL)
    return 1;
  return tl_error(L, "random.generator", "a generator has no method '%s' (methods: random, uniform, "
                  "normal, standard_normal, exponential, integers, permutation, shuffle, choice, "
                  "state)", lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : luaL_typename(L, 2));
}

static int m_tostring(lua_State *L) {
  ty_random_gen *g = luaL_checkudata(L, 1, TL_GEN);
  lua_pushfstring(L, "tycho.random.generator(%I) after %I draws", (lua_Integer)g->seed,
                  (lua_Integer)g->stream);
  return 1;
}

/* tycho.random(...) as before: __call(table, ...) calls lcreate.c's random. */
static int random_call(lua_State *L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_replace(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

static const luaL_Reg module_funcs[] = {
    ENTRIES(l), {"generator", l_generator}, {"seed", l_seed}, {NULL, NULL}};
static const luaL_Reg gen_methods[] = {ENTRIES(m), {"state", m_state}, {NULL, NULL}};

void tl_random_open(lua_State *L, int module_index) {
  module_index = lua_absindex(L, module_index);
  lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
  int box = lua_gettop(L);

  /* the generator's metatable: methods, __tostring, __name */
  luaL_newmetatable(L, TL_GEN);
  lua_newtable(L);
  lua_pushvalue(L, box);
  luaL_setfuncs(L, gen_methods, 1);
  lua_pushcclosure(L, gen_index, 1);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, m_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);

  /* tycho.random: a table of functions, callable as the old function */
  lua_newtable(L);
  int tab = lua_gettop(L);
  lua_pushvalue(L, box);
  luaL_setfuncs(L, module_funcs, 1);
  lua_newtable(L);
  lua_getfield(L, module_index, "random");
  luaL_checktype(L, -1, LUA_TFUNCTION);
  lua_pushcclosure(L, random_call, 1);
  lua_setfield(L, -2, "__call");
  lua_setmetatable(L, tab);
  lua_setfield(L, module_index, "random");
  lua_pop(L, 1); /* box */
}
