/*
 * ctask_host.c — the `tycho` shell with C test tasks registered, the way a
 * host application adds its kernels (ty_shell_main with a setup hook).
 * tests/spec/ctask_spec.lua runs Lua chunks in it. Every task here works on
 * 1-D launches and reads its scalars with the tycho_lua.h helpers.
 *
 *   c_axpy      in x, in y, out z, scalar:f64 a     z = a*x + y
 *   c_scale     inout x, scalar:f64 a               x = a*x
 *   c_sum       in x, reduce:+ r                    r += x (element-wise into the tile)
 *   c_minmax    in x, reduce:min lo, reduce:max hi
 *   c_gather    in:broadcast table, in idx (i64, 1-based), out y   y = table[idx]
 *   c_fail      in x, out y, scalar:i64 p           fails in piece p (1-based)
 *   c_pw_fail   in x, out y (point-wise: fuses)     y = x + 1; fails on a negative x
 *   c_scalars   out y, scalar:f64, scalar:i64, scalar:bool, scalar:string
 *                                                   y = f + i + b + #s
 *   c_pieces    out y                               y = piece number (1-based), trait all
 *   c_nosig     in x, out y (no signature)          y = x + 1
 */
#include <stdio.h>
#include <string.h>

#include "tycho/task.h"
#include "tycho_lua.h"
#include "tycho_repl.h"

#define AT(tile, i) ((double *)(tile)->data)[(i) * (tile)->strides[0]]

static int check_1d(ty_task_ctx *c) {
  if (c->ndim != 1) return ty_ctx_fail(c, "%s works on 1-D launches", c->task_name);
  for (int k = 0; k < c->nargs; k++)
    if (c->args[k].dtype != TY_F64 && !(strcmp(c->task_name, "c_gather") == 0 && k == 1))
      return ty_ctx_fail(c, "argument %d must be f64", k + 1);
  return 0;
}

static int axpy(ty_task_ctx *c) {
  if (check_1d(c)) return TY_ETASK;
  double a = ty_lua_scalar_f64(c, 0);
  const ty_tile *x = &c->args[0], *y = &c->args[1], *z = &c->args[2];
  for (int64_t i = 0; i < z->shape[0]; i++) AT(z, i) = a * AT(x, i) + AT(y, i);
  return 0;
}

static int scale(ty_task_ctx *c) {
  if (check_1d(c)) return TY_ETASK;
  double a = ty_lua_scalar_f64(c, 0);
  const ty_tile *x = &c->args[0];
  for (int64_t i = 0; i < x->shape[0]; i++) AT(x, i) *= a;
  return 0;
}

static int sum(ty_task_ctx *c) {
  if (check_1d(c)) return TY_ETASK;
  const ty_tile *x = &c->args[0], *r = &c->args[1];
  for (int64_t i = 0; i < x->shape[0]; i++) AT(r, i) += AT(x, i);
  return 0;
}

static int minmax(ty_task_ctx *c) {
  if (check_1d(c)) return TY_ETASK;
  const ty_tile *x = &c->args[0], *lo = &c->args[1], *hi = &c->args[2];
  for (int64_t i = 0; i < x->shape[0]; i++) {
    double v = AT(x, i);
    if (v < AT(lo, i)) AT(lo, i) = v;
    if (v > AT(hi, i)) AT(hi, i) = v;
  }
  return 0;
}

static int gather(ty_task_ctx *c) {
  if (check_1d(c)) return TY_ETASK;
  const ty_tile *table = &c->args[0], *idx = &c->args[1], *y = &c->args[2];
  if (idx->dtype != TY_I64) return ty_ctx_fail(c, "indices must be i64");
  for (int64_t i = 0; i < y->shape[0]; i++) {
    int64_t j = ((const int64_t *)idx->data)[i * idx->strides[0]];
    if (j < 1 || j > table->shape[0])
      return ty_ctx_fail(c, "index %lld is out of range 1..%lld", (long long)j,
                         (long long)table->shape[0]);
    AT(y, i) = AT(table, j - 1);
  }
  return 0;
}

static int fail(ty_task_ctx *c) {
  if (check_1d(c)) return TY_ETASK;
  if (c->piece + 1 == ty_lua_scalar_i64(c, 0))
    return ty_ctx_fail(c, "C failure in piece %d of %d", c->piece + 1, c->pieces);
  const ty_tile *x = &c->args[0], *y = &c->args[1];
  for (int64_t i = 0; i < y->shape[0]; i++) AT(y, i) = AT(x, i);
  return 0;
}

static int pw_fail(ty_task_ctx *c) {
  if (check_1d(c)) return TY_ETASK;
  const ty_tile *x = &c->args[0], *y = &c->args[1];
  for (int64_t i = 0; i < y->shape[0]; i++) {
    if (AT(x, i) < 0) return ty_ctx_fail(c, "C failure: element %lld is negative", (long long)(x->lo[0] + i + 1));
    AT(y, i) = AT(x, i) + 1;
  }
  return 0;
}

static int scalars(ty_task_ctx *c) {
  if (check_1d(c)) return TY_ETASK;
  if (ty_lua_nscalars(c) != 4) return ty_ctx_fail(c, "expected 4 scalars, got %d", ty_lua_nscalars(c));
  if (ty_lua_scalar_kind(c, 0) != TY_LUA_SCALAR_F64 || ty_lua_scalar_kind(c, 1) != TY_LUA_SCALAR_I64 ||
      ty_lua_scalar_kind(c, 2) != TY_LUA_SCALAR_BOOL || ty_lua_scalar_kind(c, 3) != TY_LUA_SCALAR_STR)
    return ty_ctx_fail(c, "unexpected scalar kinds");
  double v = ty_lua_scalar_f64(c, 0) + (double)ty_lua_scalar_i64(c, 1) +
             (double)ty_lua_scalar_i64(c, 2) + (double)strlen(ty_lua_scalar_str(c, 3));
  const ty_tile *y = &c->args[0];
  for (int64_t i = 0; i < y->shape[0]; i++) AT(y, i) = v;
  return 0;
}

static int pieces(ty_task_ctx *c) {
  if (check_1d(c)) return TY_ETASK;
  const ty_tile *y = &c->args[0];
  for (int64_t i = 0; i < y->shape[0]; i++) AT(y, i) = c->piece + 1;
  return 0;
}

static int nosig(ty_task_ctx *c) {
  if (check_1d(c)) return TY_ETASK;
  const ty_tile *x = &c->args[0], *y = &c->args[1];
  for (int64_t i = 0; i < y->shape[0]; i++) AT(y, i) = AT(x, i) + 1;
  return 0;
}

static int setup(lua_State *L, ty_runtime *rt, void *ud) {
  (void)L;
  (void)ud;
  static const struct {
    const char *name, *sig;
    ty_variant_fn fn;
    ty_mode mode; /* TY_MODE_AUTO: no trait */
    unsigned flags;
  } tasks[] = {
      {"c_axpy", "in, in, out, scalar:f64", axpy, TY_MODE_AUTO, 0},
      {"c_scale", "inout, scalar:f64", scale, TY_MODE_AUTO, 0},
      {"c_sum", "in, reduce:+", sum, TY_MODE_ALL, 0},
      {"c_minmax", "in, reduce:min, reduce:max", minmax, TY_MODE_ALL, 0},
      {"c_gather", "in:broadcast, in, out", gather, TY_MODE_ALL, 0},
      {"c_fail", "in, out, scalar:i64", fail, TY_MODE_ALL, 0},
      {"c_scalars", "out, scalar:f64, scalar:i64, scalar:bool, scalar:string", scalars, TY_MODE_AUTO, 0},
      {"c_pieces", "out", pieces, TY_MODE_ALL, 0},
      {"c_nosig", NULL, nosig, TY_MODE_AUTO, 0},
      {"c_pw_fail", "in, out", pw_fail, TY_MODE_AUTO, TY_TASK_POINTWISE},
  };
  for (size_t i = 0; i < sizeof tasks / sizeof tasks[0]; i++) {
    ty_task_desc d;
    memset(&d, 0, sizeof d);
    d.name = tasks[i].name;
    d.cpu = tasks[i].fn;
    d.signature = tasks[i].sig;
    d.flags = tasks[i].flags;
    if (tasks[i].mode != TY_MODE_AUTO) {
      d.traits.set = TY_POL_MODE;
      d.traits.mode = tasks[i].mode;
    }
    if (ty_task_register(rt, &d, NULL) != TY_OK) {
      fprintf(stderr, "ctask_host: %s\n", ty_errmsg(rt));
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) { return ty_shell_main(argc, argv, setup, NULL); }
