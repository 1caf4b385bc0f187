/*
 * lstats.c — statistics from Lua (numpy's): std, var, median, quantile,
 * percentile, average, ptp, nansum, nanmean, nanmin, nanmax, nanargmin,
 * nanargmax, nanstd, nanvar, cov, corrcoef; std, var and ptp are store
 * methods too (x:std(), numpy's ndarray methods).
 *
 * Each is composed of the existing element-wise ops, reductions and sort,
 * so it fuses and partitions like them (and keeps their same-bits rule):
 * var is sum((x - mean(x))^2) / (n - ddof); the nan forms replace NaN by
 * the identity (tycho.where) and count the rest; median and quantile sort
 * along the axis and take a neighbour or interpolate between two (numpy's
 * thirteen methods, its indices, gamma and lerp: the index arithmetic is
 * per q, in Lua, so only the lerp is launched); cov is a matmul of the
 * centred rows.
 *
 * The arithmetic is the Lua chunk below, run in the driving state. The C
 * functions in front of it check every argument first (tl_args: counts,
 * option keys, the launch options that steer its launches), so nothing a
 * caller passes is silently ignored; the chunk checks values and types.
 * Positions and axes are 1-based; results of reductions over every axis
 * are 0-d stores, as the existing reductions'.
 */
#include "tl.h"

#include <string.h>

#define AX " [, axis | {axes}]"
#define KD "keepdims = bool, "
static const tl_sig sigs[] = {
    {"std", 1, 2, "axis ddof keepdims", true,
     "tycho.std(x" AX " [, {axis = ..., ddof = 0, " KD "parallel = ...}]), x:std(...)"},
    {"var", 1, 2, "axis ddof keepdims", true,
     "tycho.var(x" AX " [, {axis = ..., ddof = 0, " KD "parallel = ...}]), x:var(...)"},
    {"ptp", 1, 2, "axis keepdims", true, "tycho.ptp(x" AX " [, {axis = ..., " KD "...}]), x:ptp(...)"},
    {"median", 1, 2, "axis keepdims", true, "tycho.median(x [, axis] [, {axis = k, " KD "...}])"},
    {"quantile", 2, 3, "axis keepdims method", true,
     "tycho.quantile(x, q [, axis] [, {axis = k, " KD "method = \"linear\" | \"lower\" | ...}]) (q a number or a list in [0, 1])"},
    {"percentile", 2, 3, "axis keepdims method", true,
     "tycho.percentile(x, q [, axis] [, {axis = k, " KD "method = \"linear\" | \"lower\" | ...}]) (q in [0, 100])"},
    {"average", 1, 2, "axis weights returned keepdims", true,
     "tycho.average(x" AX " [, {axis = ..., weights = store, returned = bool, " KD "...}])"},
    {"nansum", 1, 2, "axis keepdims", true, "tycho.nansum(x" AX " [, {axis = ..., " KD "...}])"},
    {"nanmean", 1, 2, "axis keepdims", true, "tycho.nanmean(x" AX " [, {axis = ..., " KD "...}])"},
    {"nanmin", 1, 2, "axis keepdims", true, "tycho.nanmin(x" AX " [, {axis = ..., " KD "...}])"},
    {"nanmax", 1, 2, "axis keepdims", true, "tycho.nanmax(x" AX " [, {axis = ..., " KD "...}])"},
    {"nanargmin", 1, 2, "axis keepdims", true, "tycho.nanargmin(x [, axis] [, {axis = k, " KD "...}])"},
    {"nanargmax", 1, 2, "axis keepdims", true, "tycho.nanargmax(x [, axis] [, {axis = k, " KD "...}])"},
    {"nanstd", 1, 2, "axis ddof keepdims", true,
     "tycho.nanstd(x" AX " [, {axis = ..., ddof = 0, " KD "...}])"},
    {"nanvar", 1, 2, "axis ddof keepdims", true,
     "tycho.nanvar(x" AX " [, {axis = ..., ddof = 0, " KD "...}])"},
    {"cov", 1, 2, "rowvar bias ddof fweights aweights dtype", true,
     "tycho.cov(m [, y] [, {rowvar = true, bias = false, ddof = k, fweights = w, aweights = w, "
     "dtype = \"f64\"}])"},
    {"corrcoef", 1, 2, "rowvar dtype", true,
     "tycho.corrcoef(x [, y] [, {rowvar = true, dtype = \"f64\"}])"},
};
#define NSTATS ((int)(sizeof sigs / sizeof sigs[0]))
#define NMETHODS 3 /* std, var, ptp: the first entries */

/* upvalue 1 the box, 2 the chunk's table, 3 the index in sigs */
static int l_stat(lua_State *L) {
  const tl_sig *s = &sigs[lua_tointeger(L, lua_upvalueindex(3))];
  tl_args(L, s);
  const int base = lua_gettop(L); /* max + 2: the arguments, options, launch guard */
  lua_getfield(L, lua_upvalueindex(2), s->fn);
  for (int i = 1; i <= s->max + 1; i++) lua_pushvalue(L, i);
  lua_call(L, s->max + 1, LUA_MULTRET);
  return lua_gettop(L) - base;
}

/* The arithmetic (called with the positional arguments and the options
 * table or nil, all counted and keyed already). */
static const char stats_src[] =
    "local tycho, store_mt = ...\n"
    "local M = {}\n"
    "local inf, nan = math.huge, 0 / 0\n"
    "\n"
    "local function err(fn, fmt, ...) error(\"tycho.\" .. fn .. \": \" .. string.format(fmt, ...), 0) end\n"
    "local function isfloat(x) return x.dtype == \"f64\" or x.dtype == \"f32\" end\n"
    "local function tofloat(x) return isfloat(x) and x or x:astype(\"f64\") end\n"
    "\n"
    "-- The value at position `v` or option `key` (not both).\n"
    "local function pick(fn, v, o, key)\n"
    "  if o and o[key] ~= nil then\n"
    "    if v ~= nil then err(fn, \"%s is given twice (as an argument and as option %s)\", key, key) end\n"
    "    return o[key]\n"
    "  end\n"
    "  return v\n"
    "end\n"
    "local function optbool(fn, o, key, def)\n"
    "  local v = o and o[key]\n"
    "  if v == nil then return def end\n"
    "  if type(v) ~= \"boolean\" then err(fn, \"%s must be a boolean, got %s\", key, tostring(v)) end\n"
    "  return v\n"
    "end\n"
    "local function optnum(fn, o, key, def)\n"
    "  local v = o and o[key]\n"
    "  if v == nil then return def end\n"
    "  if type(v) ~= \"number\" then err(fn, \"%s must be a number, got %s\", key, tostring(v)) end\n"
    "  return v\n"
    "end\n"
    "local function checkstore(fn, x, what)\n"
    "  if getmetatable(x) ~= store_mt then\n"
    "    err(fn, \"%s must be a store, got %s\", what, type(x))\n"
    "  end\n"
    "  return x\n"
    "end\n"
    "\n"
    "-- axis nil (every axis), an integer or a list: the sorted 1-based axes (nil\n"
    "-- for all) and how many elements each result reduces.\n"
    "local function axes_of(fn, x, axis)\n"
    "  if axis == nil then return nil, x.size end\n"
    "  local list = type(axis) == \"table\" and axis or { axis }\n"
    "  if #list == 0 then err(fn, \"the list of axes is empty\") end\n"
    "  local out, seen, n, nd = {}, {}, 1, x.ndim\n"
    "  for _, a in ipairs(list) do\n"
    "    if math.type(a) ~= \"integer\" then err(fn, \"axis must be an integer or a list of them, got %s\", tostring(a)) end\n"
    "    local b = a < 0 and a + nd + 1 or a\n"
    "    if b < 1 or b > nd then err(fn, \"axis %d is out of range for a store of rank %d\", a, nd) end\n"
    "    if seen[b] then err(fn, \"axis %d is repeated\", a) end\n"
    "    seen[b] = true\n"
    "    out[#out + 1] = b\n"
    "    n = n * x.shape[b]\n"
    "  end\n"
    "  table.sort(out)\n"
    "  return out, n\n"
    "end\n"
    "-- one axis (nil: the flattened store)\n"
    "local function one_axis(fn, x, axis)\n"
    "  if axis == nil then return nil end\n"
    "  if type(axis) == \"table\" then err(fn, \"axis must be one integer here, got a list\") end\n"
    "  return axes_of(fn, x, axis)[1]\n"
    "end\n"
    "\n"
    "-- sum over the axes (nil: all) with keepdims\n"
    "local function red(x, op, ax, keep) return x[op](x, ax, { keepdims = keep }) end\n"
    "\n"
    "local function var(fn, x, axis, o)\n"
    "  axis = pick(fn, axis, o, \"axis\")\n"
    "  local ddof, keep = optnum(fn, o, \"ddof\", 0), optbool(fn, o, \"keepdims\", false)\n"
    "  local ax, n = axes_of(fn, x, axis)\n"
    "  x = tofloat(x)\n"
    "  local d = x - red(x, \"mean\", ax, true)\n"
    "  return red(d * d, \"sum\", ax, keep) / math.max(n - ddof, 0)\n"
    "end\n"
    "function M.var(x, axis, o) return var(\"var\", checkstore(\"var\", x, \"x\"), axis, o) end\n"
    "function M.std(x, axis, o) return tycho.sqrt(var(\"std\", checkstore(\"std\", x, \"x\"), axis, o)) end\n"
    "\n"
    "function M.ptp(x, axis, o)\n"
    "  checkstore(\"ptp\", x, \"x\")\n"
    "  axis = pick(\"ptp\", axis, o, \"axis\")\n"
    "  local keep = optbool(\"ptp\", o, \"keepdims\", false)\n"
    "  local ax = axes_of(\"ptp\", x, axis)\n"
    "  return red(x, \"max\", ax, keep) - red(x, \"min\", ax, keep)\n"
    "end\n"
    "\n"
    "-- median and the quantiles of the sorted lines, numpy's methods (its\n"
    "-- _quantile): `at(q, n)` gives, for one q, a 0-based position (the\n"
    "-- discrete methods: the value itself, x's dtype kept) or a virtual\n"
    "-- index v (the others: numpy's neighbours, gamma and lerp, in f64,\n"
    "-- from below for gamma < 0.5, from above after); a line holding a NaN\n"
    "-- gives NaN.\n"
    "local function lerp_at(v, n, fix)\n"
    "  local prev = math.floor(v)\n"
    "  local nxt = prev + 1\n"
    "  if v >= n - 1 then prev, nxt = -1, -1 end\n"
    "  if v < 0 then prev, nxt = 0, 0 end\n"
    "  local g = v - prev\n"
    "  if fix then g = fix(g, v) end\n"
    "  if prev < 0 then prev, nxt = n - 1, n - 1 end\n"
    "  return prev, nxt, g\n"
    "end\n"
    "local function hf(alpha, beta)\n"
    "  return function(q, n) return nil, n * q + (alpha + q * (1 - alpha - beta)) - 1 end\n"
    "end\n"
    "local function bounded(idx, keep)\n"
    "  local prev = math.floor(idx)\n"
    "  local k = keep(idx - prev, idx) and prev or prev + 1\n"
    "  return math.max(k, 0)\n"
    "end\n"
    "local function around(v) -- numpy's around: half to even\n"
    "  local f = math.floor(v)\n"
    "  local d = v - f\n"
    "  if d > 0.5 or (d == 0.5 and f % 2 == 1) then f = f + 1 end\n"
    "  return f\n"
    "end\n"
    "local METHODS = {\n"
    "  linear = { at = function(q, n) return nil, (n - 1) * q end },\n"
    "  lower = { discrete = true, at = function(q, n) return math.floor((n - 1) * q) end },\n"
    "  higher = { discrete = true, at = function(q, n) return math.ceil((n - 1) * q) end },\n"
    "  nearest = { discrete = true, at = function(q, n) return around((n - 1) * q) end },\n"
    "  midpoint = { at = function(q, n) return nil, 0.5 * (math.floor((n - 1) * q) + math.ceil((n - 1) * q)) end,\n"
    "               fix = function(_, v) return v % 1 == 0 and 0 or 0.5 end },\n"
    "  inverted_cdf = { discrete = true, at = function(q, n) return bounded(n * q - 1, function(g) return g == 0 end) end },\n"
    "  averaged_inverted_cdf = { at = function(q, n) return nil, n * q - 1 end,\n"
    "                            fix = function(g) return g == 0 and 0.5 or 1 end },\n"
    "  closest_observation = { discrete = true, at = function(q, n)\n"
    "    return bounded(n * q - 1 - 0.5, function(g, idx) return g == 0 and math.floor(idx) % 2 == 0 end) end },\n"
    "  interpolated_inverted_cdf = { at = hf(0, 1) },\n"
    "  hazen = { at = hf(0.5, 0.5) },\n"
    "  weibull = { at = hf(0, 0) },\n"
    "  median_unbiased = { at = hf(1 / 3.0, 1 / 3.0) },\n"
    "  normal_unbiased = { at = hf(3 / 8.0, 3 / 8.0) },\n"
    "}\n"
    "local METHOD_NAMES = \"linear, lower, higher, nearest, midpoint, inverted_cdf, averaged_inverted_cdf, \"\n"
    "  .. \"closest_observation, interpolated_inverted_cdf, hazen, weibull, median_unbiased, normal_unbiased\"\n"
    "local function quant(fn, x, qs, scalar, axis, keep, method)\n"
    "  local ax = one_axis(fn, x, axis)\n"
    "  local y = x\n"
    "  if ax == nil then y, ax = x:ravel(), 1 end\n"
    "  local n = y.shape[ax]\n"
    "  if n == 0 then err(fn, \"the axis is empty (shape %s)\", table.concat(x.shape, \", \")) end\n"
    "  local s = tycho.sort(y, ax)\n"
    "  local last = s:narrow(ax, n, 1)\n"
    "  local hasnan = tycho.ne(last, last)\n"
    "  local outs = {}\n"
    "  for i, q in ipairs(qs) do\n"
    "    local r\n"
    "    if method == \"median\" then\n"
    "      if n % 2 == 1 then r = s:narrow(ax, (n + 1) // 2, 1)\n"
    "      else r = (s:narrow(ax, n // 2, 1) + s:narrow(ax, n // 2 + 1, 1)) * 0.5 end\n"
    "    else\n"
    "      local m = METHODS[method]\n"
    "      local k, v = m.at(q, n)\n"
    "      if k then\n"
    "        r = s:narrow(ax, k + 1, 1)\n"
    "      else\n"
    "        local lo, hi, t = lerp_at(v, n, m.fix)\n"
    "        local a, b = s:narrow(ax, lo + 1, 1), s:narrow(ax, hi + 1, 1)\n"
    "        local d = b - a\n"
    "        if t >= 0.5 then r = b - d * (1 - t) else r = a + d * t end\n"
    "      end\n"
    "    end\n"
    "    r = tycho.where(hasnan, last, r)\n"
    "    if keep then\n"
    "      if axis == nil then\n"
    "        local shape = {}\n"
    "        for k = 1, x.ndim do shape[k] = 1 end\n"
    "        r = r:reshape(shape)\n"
    "      end\n"
    "    else\n"
    "      r = r:squeeze(ax)\n"
    "    end\n"
    "    outs[i] = r:copy()\n"
    "  end\n"
    "  if scalar then return outs[1] end\n"
    "  return tycho.stack(outs)\n"
    "end\n"
    "\n"
    "function M.median(x, axis, o)\n"
    "  checkstore(\"median\", x, \"x\")\n"
    "  axis = pick(\"median\", axis, o, \"axis\")\n"
    "  local y = isfloat(x) and x or x:astype(\"f64\")\n"
    "  return quant(\"median\", y, { 0.5 }, true, axis, optbool(\"median\", o, \"keepdims\", false), \"median\")\n"
    "end\n"
    "\n"
    "local function qlist(fn, q, hi)\n"
    "  local scalar, list = false, q\n"
    "  if type(q) == \"number\" then scalar, list = true, { q }\n"
    "  elseif type(q) == \"table\" then list = q\n"
    "  elseif getmetatable(q) == store_mt then\n"
    "    if q.ndim == 0 then scalar, list = true, { q:item() } else list = q:totable() end\n"
    "  else err(fn, \"q must be a number, a list of numbers or a store, got %s\", type(q)) end\n"
    "  local out = {}\n"
    "  for i, v in ipairs(list) do\n"
    "    if type(v) ~= \"number\" then err(fn, \"q must hold numbers, got %s\", tostring(v)) end\n"
    "    if not (v >= 0 and v <= hi) then err(fn, \"quantiles must be in the range [0, %s], got %s\", hi, v) end\n"
    "    out[i] = v / hi\n"
    "  end\n"
    "  return out, scalar\n"
    "end\n"
    "\n"
    "local function quantile(fn, hi, x, q, axis, o)\n"
    "  checkstore(fn, x, \"x\")\n"
    "  axis = pick(fn, axis, o, \"axis\")\n"
    "  local method = o and o.method\n"
    "  if method == nil then method = \"linear\" end\n"
    "  if type(method) ~= \"string\" or not METHODS[method] then\n"
    "    err(fn, \"method %s is not one of numpy's (%s)\", tostring(method), METHOD_NAMES)\n"
    "  end\n"
    "  local qs, scalar = qlist(fn, q, hi)\n"
    "  local y = METHODS[method].discrete and x or x:astype(\"f64\")\n"
    "  return quant(fn, y, qs, scalar, axis, optbool(fn, o, \"keepdims\", false), method)\n"
    "end\n"
    "function M.quantile(x, q, axis, o) return quantile(\"quantile\", 1, x, q, axis, o) end\n"
    "function M.percentile(x, q, axis, o) return quantile(\"percentile\", 100, x, q, axis, o) end\n"
    "\n"
    "function M.average(x, axis, o)\n"
    "  local fn = \"average\"\n"
    "  checkstore(fn, x, \"x\")\n"
    "  axis = pick(fn, axis, o, \"axis\")\n"
    "  local w = o and o.weights\n"
    "  local returned, keep = optbool(fn, o, \"returned\", false), optbool(fn, o, \"keepdims\", false)\n"
    "  local ax, n = axes_of(fn, x, axis)\n"
    "  local avg, scl\n"
    "  if w == nil then\n"
    "    avg = red(x, \"mean\", ax, keep)\n"
    "    scl = tycho.full(avg.shape, n, avg.dtype)\n"
    "  else\n"
    "    checkstore(fn, w, \"weights\")\n"
    "    local dt = (x.dtype == \"f32\" and w.dtype == \"f32\") and \"f32\" or \"f64\"\n"
    "    x, w = x:astype(dt), w:astype(dt)\n"
    "    local same = w.ndim == x.ndim\n"
    "    for k = 1, x.ndim do same = same and w.shape[k] == x.shape[k] end\n"
    "    if not same then\n"
    "      if axis == nil then err(fn, \"axis must be given when the shapes of x and weights differ\") end\n"
    "      if w.ndim ~= 1 then err(fn, \"1-D weights expected when the shapes of x and weights differ\") end\n"
    "      if #ax ~= 1 or w.shape[1] ~= x.shape[ax[1]] then err(fn, \"the length of weights does not match the axis\") end\n"
    "      local shape = {}\n"
    "      for k = 1, x.ndim do shape[k] = k == ax[1] and w.shape[1] or 1 end\n"
    "      w = tycho.broadcast_to(w:reshape(shape), x.shape)\n"
    "    end\n"
    "    scl = red(w, \"sum\", ax, keep)\n"
    "    if tycho.eq(scl, 0):any():item() then err(fn, \"weights sum to zero, can't be normalized\") end\n"
    "    avg = red(x * w, \"sum\", ax, keep) / scl\n"
    "  end\n"
    "  if returned then return avg, scl end\n"
    "  return avg\n"
    "end\n"
    "\n"
    "-- the nan functions: NaN counts as missing (ints and bools have none)\n"
    "local function nanred(fn, op, fill, x, axis, o)\n"
    "  checkstore(fn, x, \"x\")\n"
    "  axis = pick(fn, axis, o, \"axis\")\n"
    "  local keep = optbool(fn, o, \"keepdims\", false)\n"
    "  local ax = axes_of(fn, x, axis)\n"
    "  if not isfloat(x) then return red(x, op, ax, keep) end\n"
    "  local m = tycho.ne(x, x)\n"
    "  local r = red(tycho.where(m, fill, x), op, ax, keep)\n"
    "  if op ~= \"sum\" then r = tycho.where(red(m, \"all\", ax, keep), nan, r) end -- an all-NaN slice\n"
    "  return r\n"
    "end\n"
    "function M.nansum(x, axis, o) return nanred(\"nansum\", \"sum\", 0, x, axis, o) end\n"
    "function M.nanmin(x, axis, o) return nanred(\"nanmin\", \"min\", inf, x, axis, o) end\n"
    "function M.nanmax(x, axis, o) return nanred(\"nanmax\", \"max\", -inf, x, axis, o) end\n"
    "function M.nanmean(x, axis, o)\n"
    "  local fn = \"nanmean\"\n"
    "  checkstore(fn, x, \"x\")\n"
    "  axis = pick(fn, axis, o, \"axis\")\n"
    "  local keep = optbool(fn, o, \"keepdims\", false)\n"
    "  local ax = axes_of(fn, x, axis)\n"
    "  if not isfloat(x) then return red(x, \"mean\", ax, keep) end\n"
    "  local m = tycho.ne(x, x)\n"
    "  local c = red(tycho.logical_not(m), \"sum\", ax, keep):astype(x.dtype)\n"
    "  return red(tycho.where(m, 0, x), \"sum\", ax, keep) / c\n"
    "end\n"
    "local function nanarg(fn, op, fill, x, axis, o)\n"
    "  checkstore(fn, x, \"x\")\n"
    "  axis = pick(fn, axis, o, \"axis\")\n"
    "  local keep = optbool(fn, o, \"keepdims\", false)\n"
    "  local a = one_axis(fn, x, axis)\n"
    "  if not isfloat(x) then return x[op](x, a, { keepdims = keep }) end\n"
    "  local m = tycho.ne(x, x)\n"
    "  local allnan = a and m:all(a):any() or m:all()\n"
    "  if allnan:item() then err(fn, \"an all-NaN slice (no position to give)\") end\n"
    "  local y = tycho.where(m, fill, x)\n"
    "  return y[op](y, a, { keepdims = keep })\n"
    "end\n"
    "function M.nanargmin(x, axis, o) return nanarg(\"nanargmin\", \"argmin\", inf, x, axis, o) end\n"
    "function M.nanargmax(x, axis, o) return nanarg(\"nanargmax\", \"argmax\", -inf, x, axis, o) end\n"
    "local function nanvar(fn, x, axis, o)\n"
    "  checkstore(fn, x, \"x\")\n"
    "  axis = pick(fn, axis, o, \"axis\")\n"
    "  local ddof, keep = optnum(fn, o, \"ddof\", 0), optbool(fn, o, \"keepdims\", false)\n"
    "  local ax = axes_of(fn, x, axis)\n"
    "  x = tofloat(x)\n"
    "  local m = tycho.ne(x, x)\n"
    "  local c = red(tycho.logical_not(m), \"sum\", ax, true):astype(x.dtype)\n"
    "  local xm = red(tycho.where(m, 0, x), \"sum\", ax, true) / c\n"
    "  local d = tycho.where(m, 0, x - xm)\n"
    "  local dof = red(tycho.logical_not(m), \"sum\", ax, keep):astype(x.dtype) - ddof\n"
    "  return tycho.where(tycho.le(dof, 0), nan, red(d * d, \"sum\", ax, keep) / dof)\n"
    "end\n"
    "function M.nanvar(x, axis, o) return nanvar(\"nanvar\", x, axis, o) end\n"
    "function M.nanstd(x, axis, o) return tycho.sqrt(nanvar(\"nanstd\", x, axis, o)) end\n"
    "\n"
    "-- cov and corrcoef: numpy's (variables in rows unless rowvar is false), f64\n"
    "local function as2d(x) -- numpy's array(x, ndmin=2)\n"
    "  if x.ndim == 0 then return x:reshape({ 1, 1 }) end\n"
    "  if x.ndim == 1 then return x:reshape({ 1, x.shape[1] }) end\n"
    "  return x\n"
    "end\n"
    "-- numpy's fweights / aweights: a 1-D store or list of one weight per\n"
    "-- observation, non-negative (fweights also whole numbers), as f64.\n"
    "local function obs_weights(fn, w, name, nobs, dt)\n"
    "  if type(w) == \"table\" and getmetatable(w) ~= store_mt then\n"
    "    if #w == 0 and nobs > 0 then err(fn, \"%s is empty, expected %d weights\", name, nobs) end\n"
    "    w = tycho.array(w, \"f64\")\n"
    "  elseif getmetatable(w) ~= store_mt then\n"
    "    err(fn, \"%s must be a store or a list of numbers, got %s\", name, type(w))\n"
    "  end\n"
    "  if w.ndim ~= 1 then err(fn, \"%s must be 1-D (one weight per observation), got %d dimensions\", name, w.ndim) end\n"
    "  if w.shape[1] ~= nobs then\n"
    "    err(fn, \"incompatible numbers of samples and %s (%d observations, %d weights)\", name, nobs, w.shape[1])\n"
    "  end\n"
    "  w = w:astype(dt)\n"
    "  if nobs > 0 then\n"
    "    if name == \"fweights\" and tycho.any(tycho.ne(w, tycho.round(w))):item() then\n"
    "      err(fn, \"fweights must be integer\")\n"
    "    end\n"
    "    if w:min():item() < 0 then err(fn, \"%s cannot be negative\", name) end\n"
    "  end\n"
    "  return w\n"
    "end\n"
    "local function cov(fn, m, y, o)\n"
    "  checkstore(fn, m, \"m\")\n"
    "  local rowvar, bias = optbool(fn, o, \"rowvar\", true), optbool(fn, o, \"bias\", false)\n"
    "  local ddof = optnum(fn, o, \"ddof\", nil)\n"
    "  if ddof ~= nil and ddof ~= math.floor(ddof) then err(fn, \"ddof must be integer, got %s\", ddof) end\n"
    "  local dt = o and o.dtype or \"f64\"\n"
    "  if dt ~= \"f64\" and dt ~= \"f32\" and dt ~= \"float64\" and dt ~= \"float32\" then\n"
    "    err(fn, \"dtype must be f64 or f32, got %s\", tostring(dt))\n"
    "  end\n"
    "  if m.ndim > 2 then err(fn, \"m has more than 2 dimensions\") end\n"
    "  local X = as2d(m):astype(dt)\n"
    "  if not rowvar and X.shape[1] ~= 1 then X = X:t() end\n"
    "  if y ~= nil then\n"
    "    checkstore(fn, y, \"y\")\n"
    "    if y.ndim > 2 then err(fn, \"y has more than 2 dimensions\") end\n"
    "    local Y = as2d(y):astype(dt)\n"
    "    if not rowvar and Y.shape[1] ~= 1 then Y = Y:t() end\n"
    "    if Y.shape[2] ~= X.shape[2] then err(fn, \"m and y have different numbers of observations\") end\n"
    "    X = tycho.concatenate({ X, Y }, 1)\n"
    "  end\n"
    "  if ddof == nil then ddof = bias and 0 or 1 end\n"
    "  local nobs = X.shape[2]\n"
    "  local fw = o and o.fweights ~= nil and obs_weights(fn, o.fweights, \"fweights\", nobs, dt)\n"
    "  local aw = o and o.aweights ~= nil and obs_weights(fn, o.aweights, \"aweights\", nobs, dt)\n"
    "  local w = fw or aw\n"
    "  if fw and aw then w = fw * aw end\n"
    "  local fact\n"
    "  if not w then\n"
    "    X = X - X:mean(2, { keepdims = true })\n"
    "    fact = nobs - ddof\n"
    "  else\n"
    "    local wsum = w:sum()\n"
    "    X = X - (X * w):sum(2, { keepdims = true }) / wsum\n"
    "    local ws = wsum:item()\n"
    "    if ddof == 0 then fact = ws\n"
    "    elseif not aw then fact = ws - ddof\n"
    "    else fact = ws - ddof * (w * aw):sum():item() / ws end\n"
    "  end\n"
    "  if fact <= 0 then fact = 0.0 end\n"
    "  local XT = w and (X * w):t() or X:t()\n"
    "  return (X:matmul(XT) * (1 / fact)):squeeze()\n"
    "end\n"
    "function M.cov(m, y, o) return cov(\"cov\", m, y, o) end\n"
    "function M.corrcoef(x, y, o)\n"
    "  local c = cov(\"corrcoef\", x, y, o)\n"
    "  if c.ndim == 0 then return c / c end\n"
    "  local sd = tycho.sqrt(tycho.diagonal(c))\n"
    "  c = c / sd:expand(2) / sd:expand(1)\n"
    "  return tycho.maximum(tycho.minimum(c, 1), -1)\n"
    "end\n"
    "\n"
    "return M\n";

/* Adds the functions to the module table and std, var, ptp to the store
 * methods. */
void tl_stats_open(lua_State *L, int module_index) {
  module_index = lua_absindex(L, module_index);
  if (luaL_loadbuffer(L, stats_src, sizeof stats_src - 1, "=tycho.stats") != LUA_OK) lua_error(L);
  lua_pushvalue(L, module_index);
  luaL_getmetatable(L, TL_STORE);
  lua_call(L, 2, 1);
  const int impl = lua_gettop(L);
  luaL_getmetatable(L, TL_STORE);
  lua_getfield(L, -1, "__methods");
  const int methods = lua_gettop(L);
  for (int i = 0; i < NSTATS; i++) {
    lua_getfield(L, LUA_REGISTRYINDEX, TL_BOX);
    lua_pushvalue(L, impl);
    lua_pushinteger(L, i);
    lua_pushcclosure(L, l_stat, 3);
    if (i < NMETHODS && lua_istable(L, methods)) {
      lua_pushvalue(L, -1);
      lua_setfield(L, methods, sigs[i].fn);
    }
    lua_setfield(L, module_index, sigs[i].fn);
  }
  lua_settop(L, impl - 1);
}
