--[[
fuzz_gen.lua — the step generator of the API fuzzer (api_fuzz.lua).

A step is one statement of a tycho program (a call, or a policy scope around
a few calls) as Lua source, plus what the reference model says it does:

  step = { src = "V[3] = V[1] + V[2]", kind = "binary", calls = 1,
           apply = function(S, V) ... end }

The program keeps its stores in the global table V (V[1] .. V[NSLOTS]); the
model keeps the matching model views in S.slots. `apply` runs AFTER the
source has run: it updates S (or raises M.fail(reason) when the step must
fail with a Lua error) and may return a checker for what the step read
(function(R) -> ok, message, with R the global the step left its result in).
It only reads V to adopt values tycho chose itself (tycho.random).

Steps are generated from the model's state (shapes, dtypes) but apply uses
only the literal parameters baked into the step, so a step still means the
same thing when the minimiser removes steps before it: the model then
predicts whatever that program does (often an error), like tycho.

About 15% of the calls are ill-typed on purpose (bad shapes, dtypes,
indices, axes, options, closed stores, wrong argument types) and must fail
with a Lua error.
]]

local M = require("fuzz_model")

local G = {}
G.NSLOTS = 10

-- ---- random choices -------------------------------------------------------------

local rnd = math.random
local function chance(p) return rnd() < p end
local function pick(t) return t[rnd(#t)] end

-- ---- Lua source for values --------------------------------------------------------

local function lit(v)
  local tp = type(v)
  if tp == "boolean" or tp == "nil" then return tostring(v) end
  if tp == "string" then return string.format("%q", v) end
  if tp == "table" then
    local parts = {}
    for i = 1, #v do parts[i] = lit(v[i]) end
    local keys = {}
    for k in pairs(v) do
      if type(k) == "string" then keys[#keys + 1] = k end
    end
    table.sort(keys)
    for _, k in ipairs(keys) do parts[#parts + 1] = k .. " = " .. lit(v[k]) end
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  if math.type(v) == "integer" then
    if v == math.mininteger then return "math.mininteger" end
    return string.format("%d", v)
  end
  if v ~= v then return "(0/0)" end
  if v == math.huge then return "(1/0)" end
  if v == -math.huge then return "(-1/0)" end
  local s = string.format("%.17g", v)
  if not s:find("[%.eEn]") then s = s .. ".0" end
  return s
end
G.lit = lit

local function ref(i) return "V[" .. i .. "]" end

-- ---- model access inside apply -------------------------------------------------------

-- The view in slot i for an operation (nil: the program holds no store there).
local function need(S, i, what)
  local v = S.slots[i]
  if v == nil then M.fail((what or "argument") .. " is nil") end
  M.check_open(v, what)
  return v
end

-- An operand spec: {slot = i} or {num = v} (a Lua number/boolean) or
-- {bad = "src"} (something that is neither).
local function opnd_src(o)
  if o.slot then return ref(o.slot) end
  if o.bad then return o.bad end
  return lit(o.num)
end

local function opnd_peer(S, o)
  if o.slot then
    local v = S.slots[o.slot]
    return v and not v.closed and v.dtype or nil
  end
end

local function opnd_model(S, o, peer, op)
  if o.bad then M.fail("bad operand") end
  if o.slot then return need(S, o.slot) end
  return M.operand(o.num, peer, op)
end

-- ---- what the generator knows ---------------------------------------------------------

local function live(S, pred)
  local r = {}
  for i = 1, G.NSLOTS do
    local v = S.slots[i]
    if v and not v.closed and (not pred or pred(v, i)) then r[#r + 1] = i end
  end
  return r
end

-- A random live slot (pred: a filter); slots whose storage a failed launch
-- left unavailable are picked rarely, so that failures do not spread.
local function any_slot(S, pred)
  local l = live(S, pred)
  if #l == 0 then return nil end
  local ok = {}
  for _, i in ipairs(l) do
    local b = S.slots[i].buf
    if not (b and (b.cancelled or b.maybe_cancelled)) then ok[#ok + 1] = i end
  end
  if #ok > 0 and not chance(0.1) then return pick(ok) end
  return pick(l)
end

-- The slots a piece of source reads or writes whose storage is unavailable.
local function touches_cancelled(S, src)
  for k in src:gmatch("V%[(%d+)%]") do
    local v = S.slots[tonumber(k)]
    if v and v.buf and (v.buf.cancelled or v.buf.maybe_cancelled) then return true end
  end
  return false
end

local CUR -- the model state of the step being generated (for out_slot)
local function out_slot()
  if CUR and chance(0.5) then
    local free = {}
    for i = 1, G.NSLOTS do
      local v = CUR.slots[i]
      if v == nil or v.closed or (v.buf and v.buf.cancelled) then free[#free + 1] = i end
    end
    if #free > 0 then return pick(free) end
  end
  return rnd(G.NSLOTS)
end

local function rand_shape(maxrank)
  local r = rnd(0, maxrank or 3)
  local sh = {}
  local total = 1
  for d = 1, r do
    local e
    if chance(0.04) then e = 0 else e = rnd(1, 5) end
    if total * math.max(e, 1) > 60 then e = 1 end
    sh[d] = e
    total = total * math.max(e, 1)
  end
  return sh
end

local function shape_src(sh)
  if #sh == 1 and chance(0.3) then return lit(sh[1]) end
  return lit(sh)
end

local function rand_dtype() return pick(M.DTYPES) end

-- A dtype as the source spells it: the canonical name, or an alias
-- (dtype.c's table: float64 double float32 float int64 int32 uint8).
local ALIASES = { f64 = { "float64", "double" }, f32 = { "float32", "float" }, i64 = { "int64" },
                  i32 = { "int32" }, u8 = { "uint8" }, bool = {} }
local function dtype_src(t)
  if #ALIASES[t] > 0 and chance(0.2) then return lit(pick(ALIASES[t])) end
  return lit(t)
end

local NUMS = { 0, 1, 2, 3, -1, -2, 7, 0.5, -0.25, 1.5, 2.0, 0.1, 3.75, -4.5, 1e3, true, false,
               100, 255, 300, -7, 1 / 0, 0 / 0, 2 ^ 31, 1e-3, 2147483648, -129, 256, -0.0, 1e300 }
local function rand_num() return pick(NUMS) end
local BAD_OPERANDS = { '"abc"', "{}", "nil", "print", "{1, 2}" }

-- ---- policy tables ------------------------------------------------------------------

local POLICY_VALUES = {
  mode = { "auto", "all", "single", "task" },
  overdecompose = { 1, 2, 3, 4 },
  min_chunk = { 64, 4096, 65536 },
  favor = { "debug", "min-peak-memory", "max-concurrency" },
  fuse = { true, false },
  fastmath = { true, false },
}
local POLICY_KEYS = { "mode", "overdecompose", "min_chunk", "favor", "fuse", "fastmath" }
local BAD_POLICIES = {
  { mode = "sometimes" }, { overdecompose = 0 }, { overdecompose = 5000 }, { favor = "fast" },
  { fuse = "maybe" }, { bogus = 1 }, { min_chunk = "lots" }, { overdecompose = 1.5 },
  { stream = "loose" }, { memory = "plenty" },
}

local function rand_policy(bad)
  if bad then return pick(BAD_POLICIES), false end
  local p = {}
  local n = rnd(1, 3)
  for _ = 1, n do
    local k = pick(POLICY_KEYS)
    p[k] = pick(POLICY_VALUES[k])
  end
  if chance(0.1) then p.memory = 0 end
  return p, true
end

-- The sugar's spelling: parallel<mode=all, fuse=false> (values are literals).
local function sugar_header(p)
  local keys = {}
  for k in pairs(p) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do
    local v = p[k]
    if type(v) == "number" and math.type(v) == "float" then v = lit(v) end
    parts[#parts + 1] = k .. "=" .. tostring(v)
  end
  return "parallel<" .. table.concat(parts, ", ") .. ">"
end

-- ---- steps ----------------------------------------------------------------------------

local function step(kind, src, apply, calls)
  return { kind = kind, src = src, apply = apply, calls = calls or 1 }
end

-- Element-wise ops ----------------------------------------------------------------------

local UNARY_OPS = { "neg", "exp", "log", "sqrt", "abs", "sin", "cos", "tanh", "floor", "ceil",
                    "logical_not" }
local BINARY_OPS = { "add", "sub", "mul", "div", "mod", "pow", "maximum", "minimum", "lt", "le",
                     "gt", "ge", "eq", "ne", "logical_and", "logical_or" }
local METAOP = { add = "+", sub = "-", mul = "*", div = "/", mod = "%", pow = "^" }
local REDUCE_OPS = { "sum", "prod", "min", "max", "mean", "argmin", "argmax" }

local function opts_src(opts)
  return opts and (", " .. lit(opts)) or ""
end

local function maybe_opts()
  if chance(0.12) then
    local p = rand_policy(chance(0.15))
    return p
  end
end

local function policy_ok(p)
  for _, b in ipairs(BAD_POLICIES) do
    if b == p then return false end
  end
  return true
end

local function check_opts(opts)
  if opts and not policy_ok(opts) then M.fail("bad options") end
end

function G.unary(S, o)
  local op = pick(UNARY_OPS)
  local a
  local i = any_slot(S)
  if i and not chance(0.1) then a = { slot = i }
  elseif chance(0.3) then a = { bad = pick(BAD_OPERANDS) }
  else a = { num = rand_num() } end
  local opts = maybe_opts()
  local expr
  if a.slot and not opts and chance(0.5) then
    expr = op == "neg" and ("-" .. ref(a.slot)) or (ref(a.slot) .. ":" .. op .. "()")
  else
    expr = "tycho." .. op .. "(" .. opnd_src(a) .. opts_src(opts) .. ")"
  end
  local dst = o and o.dst or out_slot()
  return step("unary", ref(dst) .. " = " .. expr, function(S2)
    check_opts(opts)
    local x = opnd_model(S2, a, nil)
    S2.slots[dst] = M.unary(op, x)
  end)
end

-- An operand for a binary op next to slot i: a broadcast-compatible slot, a
-- number, or (rarely) an incompatible slot or a non-operand.
local function partner(S, i)
  local sh = S.slots[i].shape
  if chance(0.4) then return { num = rand_num() } end
  local j = any_slot(S, function(v) return M.broadcast(sh, v.shape) ~= nil end)
  if chance(0.06) then j = any_slot(S) end
  if chance(0.03) then return { bad = pick(BAD_OPERANDS) } end
  if j then return { slot = j } end
  return { num = rand_num() }
end

function G.binary(S, o)
  local op = pick(BINARY_OPS)
  local i = any_slot(S)
  local a, b
  if not i then
    a, b = { num = rand_num() }, { num = rand_num() }
  else
    a, b = { slot = i }, partner(S, i)
    if chance(0.3) then a, b = b, a end
  end
  local opts = maybe_opts()
  local expr
  local form = rnd(3)
  if form == 1 and METAOP[op] and not opts and (a.slot or b.slot) and not (a.bad or b.bad) then
    local function paren(x) local s = opnd_src(x); return x.num ~= nil and ("(" .. s .. ")") or s end
    expr = paren(a) .. " " .. METAOP[op] .. " " .. paren(b)
  elseif form == 2 and a.slot then
    expr = ref(a.slot) .. ":" .. op .. "(" .. opnd_src(b) .. opts_src(opts) .. ")"
  else
    expr = "tycho." .. op .. "(" .. opnd_src(a) .. ", " .. opnd_src(b) .. opts_src(opts) .. ")"
  end
  local dst = o and o.dst or out_slot()
  return step("binary", ref(dst) .. " = " .. expr, function(S2)
    check_opts(opts)
    -- weak scalars take the dtype of the store next to them
    local x = opnd_model(S2, a, opnd_peer(S2, b), op)
    local y = opnd_model(S2, b, opnd_peer(S2, a), op)
    S2.slots[dst] = M.binary(op, x, y)
  end)
end

function G.where(S, o)
  local i = any_slot(S)
  if not i then return G.binary(S, o) end
  local c = { slot = any_slot(S, function(v) return M.broadcast(S.slots[i].shape, v.shape) ~= nil end) or i }
  if chance(0.2) then c = { num = pick({ true, false, 0, 1 }) } end
  local a, b = { slot = i }, partner(S, i)
  if chance(0.5) then a, b = b, a end
  local dst = o and o.dst or out_slot()
  local src = ref(dst) .. " = tycho.where(" .. opnd_src(c) .. ", " .. opnd_src(a) .. ", " .. opnd_src(b) .. ")"
  return step("where", src, function(S2)
    local cm = opnd_model(S2, c, nil)
    local x = opnd_model(S2, a, opnd_peer(S2, b), "where")
    local y = opnd_model(S2, b, opnd_peer(S2, a), "where")
    S2.slots[dst] = M.where(cm, x, y)
  end)
end

-- Reductions ----------------------------------------------------------------------------

-- axis: nil, one axis, a list of axes ({1, 3}: several, numpy's tuple; all of
-- them is the reduction over everything; argmin/argmax take one axis), or a
-- bad value; {keepdims = true} joins the options table.
function G.reduce(S, o)
  local op = pick(REDUCE_OPS)
  local i = any_slot(S)
  local a = i and { slot = i } or { num = rand_num() }
  local nd = i and #S.slots[i].shape or 0
  local axis -- nil, an integer, a list, or a bad value
  if chance(0.6) and nd > 0 then
    axis = rnd(1, nd)
    if chance(0.3) then axis = axis - nd - 1 end
    if chance(0.3) then -- a list: distinct axes, sometimes a repeat or out of range
      local list, seen = {}, {}
      for _ = 1, rnd(1, nd) do
        local d = rnd(1, nd)
        if not seen[d] or chance(0.1) then
          seen[d] = true
          list[#list + 1] = chance(0.3) and d - nd - 1 or d
        end
      end
      if chance(0.05) then list[#list + 1] = nd + 1 end
      axis = list
    end
  elseif chance(0.1) then
    axis = pick({ 0, nd + 1, -nd - 1, 1.5, "x", 1 })
  end
  local opts = maybe_opts()
  local keepdims = chance(0.15) and pick({ true, false, 1 }) or nil
  local optlit = opts
  if keepdims ~= nil then
    optlit = { keepdims = keepdims }
    for k, v in pairs(opts or {}) do optlit[k] = v end
  end
  local expr
  local args = axis ~= nil and lit(axis) or (optlit and "nil" or "")
  if optlit and axis == nil and chance(0.5) then args = "" end
  local sep = (args ~= "" and optlit) and ", " or ""
  local ostr = optlit and lit(optlit) or ""
  if a.slot and chance(0.5) then
    expr = ref(a.slot) .. ":" .. op .. "(" .. args .. sep .. ostr .. ")"
  else
    expr = "tycho." .. op .. "(" .. opnd_src(a) .. (args ~= "" and (", " .. args) or "") ..
           (optlit and (", " .. ostr) or "") .. ")"
  end
  local dst = o and o.dst or out_slot()
  return step("reduce", ref(dst) .. " = " .. expr, function(S2)
    check_opts(opts)
    if keepdims ~= nil and type(keepdims) ~= "boolean" then M.fail("keepdims not a boolean") end
    local x = opnd_model(S2, a, nil)
    local n = #x.shape
    local function norm(ax)
      if math.type(ax) ~= "integer" then M.fail("bad axis") end
      if n == 0 then M.fail("axis of a 0-d store") end
      if ax >= 1 and ax <= n then return ax end
      if ax <= -1 and ax >= -n then return n + ax + 1 end
      M.fail("axis out of range")
    end
    local red = {} -- red[d]: axis d is reduced
    if axis == nil then
      for d = 1, n do red[d] = true end
    elseif type(axis) == "table" then
      if op == "argmin" or op == "argmax" then M.fail("argmin/argmax take one axis") end
      for _, ax in ipairs(axis) do
        local d = norm(ax)
        if red[d] then M.fail("axis given twice") end
        red[d] = true
      end
    else
      red[norm(axis)] = true
    end
    local count = 0
    for d = 1, n do if red[d] then count = count + 1 end end
    local r
    if count == n then
      r = M.reduce(op, x, nil) -- argmin/argmax: 1-based, as in Lua
    else
      -- one axis at a time, highest first; an empty reduced axis of min/max fails
      local ordered = op == "min" or op == "max" or op == "argmin" or op == "argmax"
      for d = 1, n do if red[d] and ordered and x.shape[d] == 0 then M.fail("empty axis") end end
      r = x
      for d = n, 1, -1 do if red[d] then r = M.reduce(op, r, d) end end
    end
    if keepdims then
      local ks = {}
      for d = 1, n do ks[d] = red[d] and 1 or x.shape[d] end
      r = M.reshape(r, ks)
    end
    S2.slots[dst] = r
  end)
end

function G.matmul(S, o)
  local cand = live(S, function(v) return #v.shape == 1 or #v.shape == 2 end)
  local i, j
  if #cand > 0 then
    i = pick(cand)
    local k = S.slots[i].shape[#S.slots[i].shape]
    local fits = live(S, function(v) return (#v.shape == 1 or #v.shape == 2) and v.shape[1] == k end)
    -- a mismatched partner of rank <= 2 (the model computes no batched product)
    if #fits > 0 and not chance(0.1) then j = pick(fits)
    else j = any_slot(S, function(v) return #v.shape <= 2 end) end
  end
  if not i or not j then return G.binary(S, o) end
  local fn = pick({ "dot", "matmul" })
  local expr
  if chance(0.4) then expr = ref(i) .. ":" .. fn .. "(" .. ref(j) .. ")"
  elseif chance(0.05) then expr = "tycho." .. fn .. "(" .. ref(i) .. ", 2)"; j = nil
  else expr = "tycho." .. fn .. "(" .. ref(i) .. ", " .. ref(j) .. ")" end
  local dst = o and o.dst or out_slot()
  return step("matmul", ref(dst) .. " = " .. expr, function(S2)
    local a = need(S2, i)
    if not j then M.fail("number operand") end
    local b = need(S2, j)
    S2.slots[dst] = M.matmul(a, b, fn)
  end)
end

function G.cast(S, o)
  local i = any_slot(S)
  if not i then return G.create(S, o) end
  local t = rand_dtype()
  local dst = o and o.dst or out_slot()
  local bad = chance(0.08)
  local expr
  if bad then expr = ref(i) .. ":astype(" .. pick({ '"f16"', "5", "" }) .. ")"
  else expr = ref(i) .. ":astype(" .. dtype_src(t) .. ")" end
  return step("cast", ref(dst) .. " = " .. expr, function(S2)
    local a = need(S2, i)
    if bad then M.fail("bad dtype") end
    S2.slots[dst] = M.cast(a, t)
  end)
end

function G.copy(S, o)
  local i = any_slot(S)
  if not i then return G.create(S, o) end
  local how = pick({ "copy", "contiguous" })
  local dst = o and o.dst or out_slot()
  local expr = chance(0.5) and (ref(i) .. ":" .. how .. "()") or ("tycho." .. how .. "(" .. ref(i) .. ")")
  return step("copy", ref(dst) .. " = " .. expr, function(S2)
    local a = need(S2, i)
    if how == "contiguous" and M.is_contiguous(a) then
      S2.slots[dst] = a -- the same userdata
    else
      S2.slots[dst] = M.cast(a, a.dtype)
    end
  end)
end

-- Creation -------------------------------------------------------------------------------

local BAD_CREATES = {
  'tycho.zeros({2, -1})', 'tycho.zeros("x")', 'tycho.ones({2, 3}, "f16")', 'tycho.zeros({2, 3}, 5)',
  'tycho.ones({1.5})', 'tycho.full({2}, "a")', 'tycho.arange(1, 5, 0)', 'tycho.arange("a")',
  'tycho.arange()', 'tycho.linspace(0, 1, -1)', 'tycho.linspace(0, "b", 3)',
  'tycho.array({{1, 2}, {3}})', 'tycho.array({1, "x"})', 'tycho.array("x")',
  'tycho.random({2}, "i32")', 'tycho.zeros({1e6, 1e6})', 'tycho.zeros({2^40, 2^40})',
  'tycho.zeros({1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1})', 'tycho.full({2}, 1, "bogus")',
  'tycho.empty({3}, {})', 'tycho.array({{1}, 2})', 'tycho.arange(0, 1/0, 1.0)',
  'tycho.ones({4096, 4096, 4096})',
}

local function rand_array_values(sh, kind)
  local function elem()
    if kind == "int" then return rnd(-9, 20) end
    if kind == "float" then return pick({ 0.5, -1.25, 2.0, 3.5, 0.0, -0.0, 10.75, 1e-2 }) end
    if kind == "bool" then return chance(0.5) end
    return pick({ 1, 2.5, true, -3, 0 })
  end
  local function build(d)
    if d > #sh then return elem() end
    local t = {}
    for k = 1, sh[d] do t[k] = build(d + 1) end
    return t
  end
  return build(1)
end

local function flatten(t, out)
  if type(t) ~= "table" then out[#out + 1] = t; return out end
  for _, v in ipairs(t) do flatten(v, out) end
  return out
end

function G.create(S, o)
  local dst = o and o.dst or out_slot()
  if chance(0.1) then
    local src = pick(BAD_CREATES)
    return step("create", ref(dst) .. " = " .. src, function() M.fail("bad creation") end)
  end
  local kind = pick({ "zeros", "ones", "full", "arange", "arange", "linspace", "array", "array",
                      "random", "empty" })
  local t = chance(0.6) and rand_dtype() or nil
  local sh = rand_shape()
  local tsrc = t and (", " .. dtype_src(t)) or ""
  if kind == "zeros" or kind == "ones" or kind == "empty" then
    local v = kind == "ones" and 1.0 or 0.0
    return step("create", ref(dst) .. " = tycho." .. kind .. "(" .. shape_src(sh) .. tsrc .. ")",
      function(S2)
        local m = M.full(t or "f64", sh, v)
        if kind == "empty" then for k = 1, #m.buf.st do m.buf.st[k] = 2 end end
        S2.slots[dst] = m
      end)
  elseif kind == "full" then
    local v = rand_num()
    return step("create", ref(dst) .. " = tycho.full(" .. shape_src(sh) .. ", " .. lit(v) .. tsrc .. ")",
      function(S2)
        local def = type(v) == "boolean" and "bool" or (math.type(v) == "integer" and "i64" or "f64")
        S2.slots[dst] = M.full(t or def, sh, v)
      end)
  elseif kind == "arange" then
    local ints = chance(0.6)
    local start, step_, stop
    if ints then
      start = rnd(-5, 5)
      step_ = pick({ 1, 1, 2, 3, -1, -2 })
      stop = start + step_ * rnd(0, 12) + (chance(0.3) and (step_ > 0 and 1 or -1) or 0)
    else
      start = pick({ 0, 0.5, -1.5, 1.0, 2 })
      step_ = pick({ 0.5, 0.25, -0.5, 1.5, 1.0 })
      stop = start + step_ * rnd(0, 10) + pick({ 0, 0.1, -0.1 })
    end
    local form = rnd(3)
    local args
    if form == 1 and math.type(start) == "integer" and start == 0 and step_ == 1 then
      args = lit(stop)
    elseif form <= 2 and step_ == 1 then
      args = lit(start) .. ", " .. lit(stop)
    else
      args = lit(start) .. ", " .. lit(stop) .. ", " .. lit(step_)
    end
    return step("create", ref(dst) .. " = tycho.arange(" .. args .. tsrc .. ")", function(S2)
      local allint = math.type(start) == "integer" and math.type(stop) == "integer" and
                     math.type(step_) == "integer"
      local n
      if allint then
        local diff = stop - start
        if step_ > 0 then n = diff <= 0 and 0 or (diff + step_ - 1) // step_
        else n = diff >= 0 and 0 or (diff + step_ + 1) // step_ end
      else
        n = math.ceil((stop - start) / step_)
        if not (n > 0) then n = 0 end
        n = math.tointeger(n)
      end
      S2.slots[dst] = M.arange(t or (allint and "i64" or "f64"), start, step_, n)
    end)
  elseif kind == "linspace" then
    local a, b = pick({ 0, -1, 2.5, 10 }), pick({ 1, 4, -3.5, 10 })
    local n = rnd(0, 9)
    local lt = t and (M.is_float(t) and t or "f64") or nil
    local ltsrc = lt and (", " .. lit(lt)) or ""
    return step("create", ref(dst) .. " = tycho.linspace(" .. lit(a) .. ", " .. lit(b) .. ", " ..
      lit(n) .. ltsrc .. ")", function(S2)
      S2.slots[dst] = M.linspace(lt or "f64", a, b, n)
    end)
  elseif kind == "array" then
    local k = pick({ "int", "float", "bool", "mixed" })
    local vals = rand_array_values(sh, k)
    return step("create", ref(dst) .. " = tycho.array(" .. lit(vals) .. tsrc .. ")", function(S2)
      local flat = flatten(vals, {})
      local has_f, has_i, has_b = false, false, false
      for _, v in ipairs(flat) do
        if type(v) == "boolean" then has_b = true
        elseif math.type(v) == "integer" then has_i = true
        else has_f = true end
      end
      local def = has_f and "f64" or has_i and "i64" or has_b and "bool" or "f64"
      local dt = t or def
      local mv = {}
      for q, v in ipairs(flat) do mv[q] = M.array_value(v, dt) end
      -- the shape follows the first elements down: {} is (0,), {{}} (1, 0)
      local shp = {}
      local cur = vals
      while type(cur) == "table" do
        shp[#shp + 1] = #cur
        if #cur == 0 then break end
        cur = cur[1]
      end
      S2.slots[dst] = M.new(dt, shp, mv, 0)
    end)
  else -- random
    local rt = t and (M.is_float(t) and t or "f32") or nil
    local rtsrc = rt and (", " .. lit(rt)) or ""
    return step("create", ref(dst) .. " = tycho.random(" .. shape_src(sh) .. rtsrc .. ")",
      function(S2, V, ran)
        -- tycho's own numbers: adopt them, after checking they are in [0, 1)
        if not ran then S2.slots[dst] = M.full(rt or "f64", sh, 0.0); return end
        local got = V[dst]:totable()
        local flat = type(got) == "table" and flatten(got, {}) or { got }
        for _, v in ipairs(flat) do
          if not (v >= 0 and v < 1) then error("fuzz: tycho.random gave " .. tostring(v)) end
        end
        S2.slots[dst] = M.new(rt or "f64", sh, flat, 0)
      end)
  end
end

-- Views -------------------------------------------------------------------------------------

-- A random index table for shape sh (some entries out of range when bad).
local function rand_index(sh, bad)
  local n = rnd(0, #sh)
  local entries, descr = {}, {}
  for d = 1, n do
    local size = sh[d]
    local r = rnd(5)
    if r == 1 and size > 0 then
      local i = rnd(1, size)
      if chance(0.3) then i = i - size - 1 end
      entries[d] = lit(i); descr[d] = { sel = i }
    elseif r == 2 then
      entries[d] = "{}"; descr[d] = { range = {} }
    elseif r == 3 and size > 0 then
      local a = rnd(1, size)
      entries[d] = "{" .. a .. "}"; descr[d] = { range = { a } }
    else
      local a = rnd(1, size + 1)
      local b = rnd(a - 1, size)
      if chance(0.25) and b > 0 then b = b - size - 1 end
      if chance(0.15) and size > 0 then -- downwards: {a, b, -st} with b <= a + 1
        a = rnd(1, size)
        b = rnd(1, a + 1)
        if chance(0.25) then a = a - size - 1 end
        local st = -rnd(1, 3)
        entries[d] = "{" .. a .. ", " .. b .. ", " .. st .. "}"; descr[d] = { range = { a, b, st } }
      elseif chance(0.3) then
        local st = rnd(1, 3)
        entries[d] = "{" .. a .. ", " .. b .. ", " .. st .. "}"; descr[d] = { range = { a, b, st } }
      else
        entries[d] = "{" .. a .. ", " .. b .. "}"; descr[d] = { range = { a, b } }
      end
    end
  end
  if bad then
    local r = rnd(5)
    if r == 1 then -- one index too many
      entries[#sh + 1] = "1"; descr[#sh + 1] = { sel = 1 }
    elseif r == 2 and #sh > 0 then
      entries[1] = lit(sh[1] + 1); descr[1] = { sel = sh[1] + 1 }
    elseif r == 3 and #sh > 0 then
      entries[1] = "{1, 2, 0}"; descr[1] = { range = { 1, 2, 0 } }
    elseif r == 4 and #sh > 0 then
      entries[1] = '"a"'; descr[1] = { bad = true }
    elseif #sh > 0 then
      entries[1] = "{0, " .. (sh[1] + 2) .. "}"; descr[1] = { range = { 0, sh[1] + 2 } }
    end
  end
  local n2 = 0
  for k in pairs(entries) do n2 = math.max(n2, k) end
  for k = 1, n2 do entries[k] = entries[k] or "{}"; descr[k] = descr[k] or { range = {} } end
  return "{" .. table.concat(entries, ", ") .. "}", descr
end

-- lstore.c's parse_index + apply_index on the model.
local function model_index(v, descr)
  local nd = #v.shape
  if #descr > nd then M.fail("too many indices") end
  local cur, dim = v, 1
  for k, e in ipairs(descr) do
    local size = v.shape[k]
    if e.bad then M.fail("bad index entry") end
    if e.sel then
      local i = e.sel
      if math.type(i) ~= "integer" then M.fail("not an integer") end
      if i < 0 then i = i + size + 1 end
      if i < 1 or i > size then M.fail("index out of range") end
      cur = M.select(cur, dim, i - 1)
    else
      local r = e.range
      local m = #r
      local a, b, st = 1, size, 1
      if m >= 1 then a, b = r[1], r[1] end
      if m >= 2 then b = r[2] end
      if m >= 3 then st = r[3]; if st == 0 then M.fail("bad step") end end
      local ra = m > 0 and (a < 0 and a + size + 1 or a) or 1
      local rb = m > 0 and (b < 0 and b + size + 1 or b) or size
      if st < 0 then -- a down to b: a..b upwards of the dim flipped
        if ra < 0 or ra > size or rb < 1 or rb > size + 1 or rb > ra + 1 then
          M.fail("range out of range")
        end
        cur = M.slice(M.flip(cur, dim), dim, size - ra, size + 1 - rb, -st)
        dim = dim + 1
        goto next
      end
      if ra < 1 or ra > size + 1 or rb > size or rb < ra - 1 then M.fail("range out of range") end
      if not (ra - 1 == 0 and rb == size and st == 1) then
        cur = M.slice(cur, dim, ra - 1, rb, st)
      end
      dim = dim + 1
    end
    ::next::
  end
  if cur == v then -- x[{}]: a new userdata of the same store
    cur = { buf = v.buf, dtype = v.dtype, shape = M.copy_list(v.shape),
            strides = M.copy_list(v.strides), offset = v.offset }
  end
  return cur
end

function G.view(S, o)
  local i = any_slot(S)
  if not i then return G.create(S, o) end
  local v = S.slots[i]
  local sh, nd = v.shape, #v.shape
  local dst = o and o.dst or out_slot()
  local bad = chance(0.12)
  local r = rnd(9)
  if r == 3 and nd < 2 then r = 1 end
  if r <= 2 then
    local isrc, descr = rand_index(sh, bad)
    return step("view", ref(dst) .. " = " .. ref(i) .. "[" .. isrc .. "]", function(S2)
      S2.slots[dst] = model_index(need(S2, i), descr)
    end)
  elseif r == 3 then -- x[k]: a row (rank > 1); the element of a 1-D store is a read
    local k = nd > 0 and rnd(1, math.max(sh[1], 1)) or 1
    if bad then k = pick({ 0, (sh[1] or 0) + 1, 2.5 }) end
    return step("view", ref(dst) .. " = " .. ref(i) .. "[" .. lit(k) .. "]", function(S2)
      local x = need(S2, i)
      if #x.shape == 0 then M.fail("index of a 0-d store") end
      if math.type(k) ~= "integer" then M.fail("bad index") end
      local size = x.shape[1]
      local k0 = k < 0 and k + size + 1 or k
      if k0 < 1 or k0 > size then M.fail("index out of range") end
      if #x.shape == 1 then -- (only when the minimiser changed the program) a Lua value
        S2.slots[dst] = { number = true, closed = true }
        return
      end
      S2.slots[dst] = M.select(x, 1, k0 - 1)
    end)
  elseif r == 4 then -- narrow
    local d = nd > 0 and rnd(1, nd) or 1
    local size = sh[d] or 0
    local start = rnd(1, size + 1)
    local len = rnd(0, size - start + 1)
    if bad then len = size - start + 2 end
    local expr = chance(0.5) and (ref(i) .. ":narrow(" .. d .. ", " .. start .. ", " .. len .. ")")
                 or ("tycho.narrow(" .. ref(i) .. ", " .. d .. ", " .. start .. ", " .. len .. ")")
    return step("view", ref(dst) .. " = " .. expr, function(S2)
      local x = need(S2, i)
      local n = #x.shape
      if n == 0 or d > n then M.fail("dim out of range") end
      local sz = x.shape[d]
      if start < 1 or start > sz + 1 then M.fail("start out of range") end
      if len < 0 or len > sz - (start - 1) then M.fail("len out of range") end
      S2.slots[dst] = M.slice(x, d, start - 1, start - 1 + len, 1)
    end)
  elseif r == 5 then -- expand
    local d = rnd(1, nd + 1)
    if chance(0.3) then d = d - nd - 2 end
    if bad then d = pick({ 0, nd + 2 }) end
    return step("view", ref(dst) .. " = " .. ref(i) .. ":expand(" .. d .. ")", function(S2)
      local x = need(S2, i)
      local n = #x.shape
      local d0 = d > 0 and d - 1 or d + n + 1
      if d == 0 or d0 < 0 or d0 > n then M.fail("dim out of range") end
      if n >= 16 then M.fail("rank limit") end
      S2.slots[dst] = M.expand(x, d0)
    end)
  elseif r == 6 then -- transpose / t
    local form = rnd(3)
    local d1, d2
    local expr
    if form == 1 then expr = ref(i) .. ":t()"
    elseif form == 2 then expr = ref(i) .. ":transpose()"
    else
      d1, d2 = rnd(1, math.max(nd, 1)), rnd(1, math.max(nd, 1))
      if chance(0.3) then d2 = -d2 end
      if bad then d2 = nd + 1 end
      expr = "tycho.transpose(" .. ref(i) .. ", " .. d1 .. ", " .. d2 .. ")"
    end
    return step("view", ref(dst) .. " = " .. expr, function(S2)
      local x = need(S2, i)
      local n = #x.shape
      if not d1 then
        if n < 2 then S2.slots[dst] = x; return end -- itself
        S2.slots[dst] = M.transpose(x, 1, 2)
        return
      end
      local function ax(a)
        if n == 0 then M.fail("0-d") end
        if a >= 1 and a <= n then return a end
        if a <= -1 and a >= -n then return n + a + 1 end
        M.fail("axis out of range")
      end
      S2.slots[dst] = M.transpose(x, ax(d1), ax(d2))
    end)
  elseif r == 7 then -- reshape
    local size = M.numel(sh)
    local nsh = {}
    -- a factorisation of size, sometimes with a -1
    local rem = size
    local rank = rnd(0, 3)
    for d = 1, rank - 1 do
      local f = 1
      for c = 2, 5 do if rem > 0 and rem % c == 0 and chance(0.5) then f = c; break end end
      nsh[d] = f
      rem = rem // math.max(f, 1)
    end
    if rank >= 1 then nsh[rank] = rem end
    if rank == 0 and size ~= 1 then nsh = { size } end
    if #nsh > 0 and chance(0.25) then nsh[rnd(#nsh)] = -1 end
    if bad then nsh[#nsh + 1] = 7 end
    local args
    if chance(0.4) and #nsh > 0 then
      local parts = {}
      for q, e in ipairs(nsh) do parts[q] = lit(e) end
      args = table.concat(parts, ", ")
    else
      args = lit(nsh)
    end
    return step("view", ref(dst) .. " = " .. ref(i) .. ":reshape(" .. args .. ")", function(S2)
      S2.slots[dst] = M.reshape(need(S2, i), nsh)
    end)
  elseif r == 9 then -- flip: all axes, or one (a view with negative strides)
    local d = nd > 0 and chance(0.6) and rnd(1, nd) or nil
    if d and chance(0.3) then d = d - nd - 1 end
    if bad then d = nd + 1 end
    local expr = d and (ref(i) .. ":flip(" .. d .. ")") or ("tycho.flip(" .. ref(i) .. ")")
    return step("view", ref(dst) .. " = " .. expr, function(S2)
      local x = need(S2, i)
      local n = #x.shape
      if not d then
        local cur = x
        for k = 1, n do cur = M.flip(cur, k) end
        if n == 0 then cur = { buf = x.buf, dtype = x.dtype, shape = {}, strides = {}, offset = x.offset } end
        S2.slots[dst] = cur
        return
      end
      if n == 0 then M.fail("0-d") end
      local d1 = d > 0 and d or d + n + 1
      if d1 < 1 or d1 > n then M.fail("axis out of range") end
      S2.slots[dst] = M.flip(x, d1)
    end)
  else -- diagonal
    return step("view", ref(dst) .. " = " .. ref(i) .. ":diagonal()", function(S2)
      local x = need(S2, i)
      if #x.shape ~= 2 then M.fail("not 2-D") end
      S2.slots[dst] = M.diagonal(x)
    end)
  end
end

-- Writes ------------------------------------------------------------------------------------

function G.assign(S)
  local i = any_slot(S)
  if not i then return G.create(S) end
  local v = S.slots[i]
  local bad = chance(0.1)
  local r = rnd(4)
  if r == 3 and not chance(0.3) then r = 4 end
  local value -- {num = v} | {slot = j} | {bad = src}
  local function rhs(target_shape)
    if bad and chance(0.5) then return { bad = pick({ '"x"', "{}" }) } end
    if chance(0.5) then return { num = rand_num() } end
    local j = any_slot(S, function(w)
      local b = M.broadcast(w.shape, target_shape)
      if not b or #b ~= #target_shape then return false end
      for d = 1, #b do if b[d] ~= target_shape[d] then return false end end
      return true
    end)
    if bad or not j then j = any_slot(S) end
    return { slot = j }
  end
  if r == 1 then -- fill
    local val = bad and { bad = '"x"' } or { num = rand_num() }
    local src = chance(0.5) and (ref(i) .. ":fill(" .. opnd_src(val) .. ")")
                or ("tycho.fill(" .. ref(i) .. ", " .. opnd_src(val) .. ")")
    return step("assign", src, function(S2)
      local x = need(S2, i)
      if val.bad then M.fail("bad value") end
      M.assign(x, val.num)
    end)
  elseif r == 2 and #v.shape >= 1 then -- x[k] = value
    local k = rnd(1, math.max(v.shape[1], 1))
    if bad then k = v.shape[1] + 1 end
    local tshape = {}
    for d = 2, #v.shape do tshape[#tshape + 1] = v.shape[d] end
    value = rhs(tshape)
    return step("assign", ref(i) .. "[" .. k .. "] = " .. opnd_src(value), function(S2)
      local x = need(S2, i)
      if #x.shape == 0 then M.fail("0-d") end
      if k < 1 or k > x.shape[1] then M.fail("out of range") end
      local row = M.select(x, 1, k - 1)
      if value.bad then M.fail("bad value") end
      local src = value.slot and need(S2, value.slot) or value.num
      M.assign(row, src)
    end)
  elseif r == 3 then -- a field: always an error
    return step("assign", ref(i) .. "." .. pick({ "shape", "dtype", "foo" }) .. " = 1", function(S2)
      need(S2, i)
      M.fail("cannot set a field")
    end)
  else -- x[{...}] = value
    local isrc, descr = rand_index(v.shape, bad and chance(0.5))
    local ok, target = pcall(model_index, v, descr)
    value = rhs(ok and target.shape or v.shape)
    return step("assign", ref(i) .. "[" .. isrc .. "] = " .. opnd_src(value), function(S2)
      local x = need(S2, i)
      local t = model_index(x, descr)
      if value.bad then M.fail("bad value") end
      local src = value.slot and need(S2, value.slot) or value.num
      M.assign(t, src)
    end)
  end
end

-- Reads ----------------------------------------------------------------------------------------
-- A read leaves its result in the global R; apply returns a checker.

function G.read(S)
  local i = any_slot(S) or 1
  local r = rnd(6)
  if r <= 2 then
    return step("read", "R = " .. ref(i) .. ":totable()", function(S2)
      local x = need(S2, i)
      M.check_readable(x)
      return { view = x, totable = true }
    end)
  elseif r == 3 then
    return step("read", "R = " .. ref(i) .. ":item()", function(S2)
      local x = need(S2, i)
      if M.numel(x.shape) ~= 1 then M.fail("item of a store with ~= 1 elements") end
      M.check_readable(x)
      return { view = x, item = true }
    end)
  elseif r == 4 then
    local v = S.slots[i]
    local k = v and #v.shape >= 1 and rnd(-v.shape[1], math.max(v.shape[1], 1)) or 1
    if k == 0 then k = 1 end
    return step("read", "R = " .. ref(i) .. "[" .. k .. "]", function(S2)
      local x = need(S2, i)
      if #x.shape ~= 1 then
        if #x.shape == 0 then M.fail("0-d") end
        local size = x.shape[1]
        local k0 = k < 0 and k + size + 1 or k
        if k0 < 1 or k0 > size then M.fail("out of range") end
        return { view = M.select(x, 1, k0 - 1), isstore = true }
      end
      local size = x.shape[1]
      local k0 = k < 0 and k + size + 1 or k
      if k0 < 1 or k0 > size then M.fail("out of range") end
      M.check_readable(x)
      return { view = M.select(x, 1, k0 - 1), item = true }
    end)
  elseif r == 5 then
    return step("read", "R = tostring(" .. ref(i) .. ")", function(S2)
      local x = S2.slots[i]
      if x and not x.closed then M.check_readable(x) end
      return { tostring = x or "nil" }
    end)
  else
    return step("read", "R = {" .. ref(i) .. ".dtype, " .. ref(i) .. ".ndim, " .. ref(i) .. ".size, #" .. ref(i) .. "}",
      function(S2)
        local x = need(S2, i)
        if #x.shape == 0 then M.fail("# of a 0-d store") end
        return { fields = { x.dtype, #x.shape, M.numel(x.shape), x.shape[1] } }
      end)
  end
end

-- The final checks: every live slot read whole.
function G.check_slot(i)
  return step("check", "R = " .. ref(i) .. ":totable()", function(S2)
    local x = S2.slots[i]
    if x == nil or x.number then return nil end
    M.check_open(x)
    M.check_readable(x)
    return { view = x, totable = true }
  end)
end

-- Scopes ---------------------------------------------------------------------------------------

function G.scope(S)
  local p, valid = rand_policy(chance(0.1))
  -- inner steps read the slots as they are now and write slots no later inner
  -- step reads, so generating them all from the current state is sound
  local inner = {}
  local written = {}
  for _ = 1, rnd(1, 3) do
    local dst
    repeat dst = out_slot() until not written[dst]
    local gen = pick({ G.unary, G.binary, G.binary, G.reduce, G.view, G.where })
    local st = gen(S, { dst = dst })
    local rhs = st.src:match("^V%[%d+%] = (.*)$") or st.src
    for w in pairs(written) do
      if rhs:find("V%[" .. w .. "%]") then st = nil; break end
    end
    if st and G.isolate and touches_cancelled(S, st.src) then st = nil end
    if st then
      written[dst] = true
      inner[#inner + 1] = st
    end
  end
  if #inner == 0 then inner[1] = G.unary(S, { dst = out_slot() }) end
  local body = {}
  for k, st in ipairs(inner) do body[k] = st.src end
  local code = table.concat(body, "; ")
  local form = rnd(4)
  local src
  if form == 1 then
    src = sugar_header(p) .. " do " .. code .. " end"
  elseif form == 2 then
    src = "do local _ <close> = tycho.parallel(" .. lit(p) .. "); " .. code .. " end"
  elseif form == 3 then
    src = "tycho.parallel(" .. lit(p) .. ", function() " .. code .. " end)"
  else
    src = "coroutine.wrap(function() " .. sugar_header(p) .. " do " .. code .. " end end)()"
  end
  local calls = 1
  for _, st in ipairs(inner) do calls = calls + st.calls end
  return step("scope", src, function(S2, V, ran)
    if not valid then M.fail("bad policy") end
    for _, st in ipairs(inner) do st.apply(S2, V, ran) end
  end, calls)
end

function G.hint(S)
  local i = any_slot(S)
  if not i then return G.create(S) end
  local p, valid = rand_policy(chance(0.15))
  local src
  if chance(0.3) then
    src, valid = ref(i) .. ":hint()", true
  else
    src = ref(i) .. ":hint(" .. lit(p) .. ")"
  end
  return step("hint", src, function(S2)
    need(S2, i)
    if not valid then M.fail("bad hint") end
  end)
end

-- Sizes, steps and bounds near the int64 limits (issue 21) ---------------------------------------
-- A slice step past the extent takes the first element (numpy); a shape
-- whose bytes overflow int64 and a bound near math.maxinteger are errors.

local BIG = { math.maxinteger, math.maxinteger - 1, 1 << 62, (1 << 62) + 1 }

function G.limits(S)
  local r = rnd(3)
  local dst = out_slot()
  if r == 1 then
    local i = any_slot(S, function(v) return #v.shape >= 1 end)
    if not i then return G.create(S) end
    local big = pick(BIG)
    return step("limits", ref(dst) .. " = " .. ref(i) .. "[{{1, -1, " .. lit(big) .. "}}]", function(S2)
      local x = need(S2, i)
      if #x.shape == 0 then M.fail("0-d") end
      S2.slots[dst] = M.slice(x, 1, 0, math.min(1, x.shape[1]), 1) -- only the first index, if any
    end)
  elseif r == 2 then
    local k = pick({ 1 << 62, 1 << 40, 3037000500, 1 << 20, 1 << 29 })
    local t = pick({ "f64", "u8", "i32" })
    local bytes = ({ f64 = 8, u8 = 1, i32 = 4 })[t]
    -- not kept in a slot: reductions of a (0, k, k) store would give k*k elements
    return step("limits", "do local r = tycho.zeros({0}, " .. lit(t) .. "):reshape(0, " .. lit(k) ..
                ", " .. lit(k) .. "); assert(r.shape[3] == " .. lit(k) .. " and r.size == 0) end",
                function()
      if k * 1.0 * k * bytes >= 2.0 ^ 63 then M.fail("size in bytes overflows int64") end
    end)
  else
    local i = any_slot(S, function(v) return #v.shape >= 1 end)
    if not i then return G.create(S) end
    local bound = pick({ "{1, math.maxinteger}", "{math.mininteger, -1}", "{math.maxinteger, 1}",
                         "{2, math.mininteger}" })
    return step("limits", ref(dst) .. " = " .. ref(i) .. "[{" .. bound .. "}]", function(S2)
      need(S2, i)
      M.fail("out of range")
    end)
  end
end

-- Save targets that are not regular files (a private FIFO and a symbolic
-- link in FZDIR, made by the prelude): the FIFO is refused and stays a FIFO,
-- the link stays a link and its target gets the data.
function G.save_target(S)
  local i = any_slot(S)
  if not i then return G.create(S) end
  local dst = out_slot()
  if chance(0.5) then
    return step("save", "assert(not pcall(tycho.save, FZDIR .. '/fifo', " .. ref(i) ..
                "), 'saved over a FIFO'); assert(os.execute(\"test -p '\" .. FZDIR .. \"/fifo'\"), " ..
                "'the FIFO was replaced')", function() end)
  end
  return step("save", "tycho.save(FZDIR .. '/link', " .. ref(i) .. "); assert(os.execute(\"test -L '\" .. " ..
              "FZDIR .. \"/link'\"), 'the link was replaced'); " .. ref(dst) ..
              " = tycho.load(FZDIR .. '/data.npy')", function(S2)
    local x = need(S2, i)
    M.check_readable(x)
    local vals, st = M.values(x)
    S2.slots[dst] = M.new(x.dtype, x.shape, vals, st)
  end, 2)
end

-- In-place updates through overlapping views (issue 21) -----------------------------------------
-- A slot updated from a shifted (or, square, transposed) view of itself,
-- through the built-in assignment or a user task whose two arguments
-- overlap, sometimes inside a streamed scope with a budget of a few bytes.
-- numpy's answer reads the whole source first. A strict scope that cannot
-- be split is refused before anything runs: the slot keeps its values (the
-- model cannot tell which budgets need a split, so it accepts either
-- outcome, and what the slot holds is checked either way).

local TASK_DTYPES = { f64 = true, f32 = true, i32 = true }

function G.shift(S)
  local i = any_slot(S, function(v) return #v.shape >= 1 and v.shape[1] >= 2 and #v.shape <= 3 end)
  if not i then return G.create(S) end
  local v = S.slots[i]
  local how = pick({ "assign", "assign", "task", "transpose" })
  if how == "transpose" and not (#v.shape == 2 and v.shape[1] == v.shape[2]) then how = "assign" end
  if how == "task" and not TASK_DTYPES[v.dtype] then how = "assign" end
  local back = chance(0.5) -- x[2:] = x[:-1] or x[:-1] = x[2:]
  local dst_ix, src_ix = "{{2, -1}}", "{{1, -2}}"
  if back then dst_ix, src_ix = src_ix, dst_ix end
  local x = ref(i)
  local code
  if how == "transpose" then
    code = x .. "[{}] = " .. x .. ":t()"
  elseif how == "task" then
    code = "FZ.copy:with{parallel = " .. lit(pick({ "all", "single", "auto" })) ..
           ", overdecompose = " .. rnd(1, 4) .. "}(" .. x .. "[" .. src_ix .. "], " .. x .. "[" ..
           dst_ix .. "])"
  else
    code = x .. "[" .. dst_ix .. "] = " .. x .. "[" .. src_ix .. "]"
  end
  local streamed = chance(0.5)
  local strict = chance(0.5)
  if streamed then
    code = "tycho.parallel({memory = " .. lit(pick({ "8B", "16B", "24B", "64B", "1KB" })) ..
           ", stream = " .. lit(strict and "strict" or "relaxed") .. "}, function() " .. code .. " end)"
  end
  local pre = (G.isolate and v.buf.cancelled) and "tycho.flush(); " or ""
  return step("shift", pre .. code, function(S2, _, ran)
    local a = need(S2, i)
    if streamed and not ran then -- refused (or a budget below one index): nothing changed
      error({ fz_expected = "a streamed scope that may be refused", either = true }, 0)
    end
    local n = a.shape[1]
    if how == "transpose" then
      M.assign(a, M.cast(M.transpose(a, 1, 2), a.dtype))
      return
    end
    local dst = back and M.slice(a, 1, 0, n - 1, 1) or M.slice(a, 1, 1, n, 1)
    local src = back and M.slice(a, 1, 1, n, 1) or M.slice(a, 1, 0, n - 1, 1)
    if how == "task" and a.buf.cancelled then return end -- skipped: stays unavailable
    M.assign(dst, M.cast(src, a.dtype))
  end)
end

-- User tasks (declared by G.PRELUDE) -------------------------------------------------------------

-- The prelude of every program: the seed, the slots and the user tasks
-- (fuzz_tasks.lua, next to this file).
-- FZDIR: a private directory with a FIFO and a dangling symbolic link to
-- data.npy (G.save_target); api_fuzz.lua removes it at the end.
G.PRELUDE = "tycho.seed(%d)\nV = {}\nFZ = dofile(%q)\nTMP = os.tmpname()\n" ..
  "FZDIR = os.tmpname(); os.remove(FZDIR)\n" ..
  "assert(os.execute(\"mkdir -m 700 '\" .. FZDIR .. \"' && mkfifo '\" .. FZDIR .. \"/fifo' && " ..
  "ln -s data.npy '\" .. FZDIR .. \"/link'\"))"

local function lua_arith(x, t) -- a store element as a worker state's Lua value
  if t == "bool" then return x ~= 0 end
  -- a u64 from 2^63 (held as its bits, a negative integer) reads as a float (docs/dtypes.md)
  if t == "u64" and math.type(x) == "integer" and x < 0 then return M.tofl(x, t) end
  return x
end

function G.task(S)
  local small = function(v) return #v.shape <= 3 end
  local i = any_slot(S, small)
  if i and S.slots[i].dtype == "bool" and chance(0.7) then -- fewer failing bodies
    i = any_slot(S, function(v) return small(v) and v.dtype ~= "bool" end) or i
  end
  if not i then return G.create(S) end
  local which = pick({ "axpy", "axpy", "inc", "total", "fail", "bad" })
  local dst = out_slot()
  local sc = pick({ 2, -1, 0.5, 3, 1.5 })
  local with = chance(0.15) and (":with" .. lit(rand_policy(false))) or ""
  local size0 = function(x) return M.numel(x.shape) == 0 end
  -- a launch reading unavailable storage is skipped: no body runs, no error
  local skipped = function(x) return x.buf.cancelled end
  local pre = ""
  if G.isolate then
    local x = S.slots[i]
    if x.dtype == "bool" or x.buf.cancelled then pre = "tycho.flush(); " end
  end
  if which == "axpy" then
    local src = pre .. "do local r = FZ.axpy" .. with .. "(" .. ref(i) .. ", nil, " .. lit(sc) ..
                "); tycho.flush(); " .. ref(dst) .. " = r end"
    return step("task", src, function(S2)
      local x = need(S2, i)
      if skipped(x) then S2.slots[dst] = M.taint(M.new("f64", x.shape, {}, 2), x); return end
      if x.dtype == "bool" and not size0(x) then M.fail("arithmetic on a boolean in the body") end
      local vals, st = M.values(x)
      for k = 1, #vals do
        local y = lua_arith(vals[k], x.dtype)
        if type(y) == "boolean" then y = 0 end
        vals[k] = (y * sc + 1) + 0.0
      end
      S2.slots[dst] = M.taint(M.new("f64", x.shape, vals, st), x)
    end, 2)
  elseif which == "inc" then
    local s = sc
    local j = any_slot(S, function(v) return #v.shape <= 3 and (v.dtype ~= "bool" or chance(0.2)) end) or i
    if S.slots[j] and not M.is_float(S.slots[j].dtype) and chance(0.9) then s = 2 end
    return step("task", "FZ.inc" .. with .. "(" .. ref(j) .. ", " .. lit(s) .. "); tycho.flush()",
      function(S2)
        local x = need(S2, j)
        if size0(x) or skipped(x) then return end
        local int = not M.is_float(x.dtype)
        -- the body writes x[i] + s back: an integer store takes a whole value
        -- (a u64 element past 2^63 reads as a float, and any float there is
        -- whole: it goes back by the float rule, docs/dtypes.md)
        local whole = true
        if int and x.dtype ~= "bool" then
          M.each(x, function(_, pos)
            local y = lua_arith(x.buf.vals[pos], x.dtype) + s
            if math.tointeger(y) == nil and not (x.dtype == "u64" and y >= 2.0 ^ 63) then whole = false end
          end)
        end
        if x.dtype == "bool" or not whole then
          -- the body fails: its output (x's storage) is unavailable from now on
          x.buf.cancelled = true
          M.fail("the body fails")
        end
        M.each(x, function(_, pos)
          local y = lua_arith(x.buf.vals[pos], x.dtype) + s
          if math.type(y) == "float" and x.dtype == "u64" then y = M.convert(y, "f64", "u64") -- the float rule
          elseif int then y = M.convert(math.tointeger(y) or y, "i64", x.dtype)
          else y = M.convert(y, "f64", x.dtype) end
          x.buf.vals[pos] = y
        end)
      end, 2)
  elseif which == "total" then
    local src = "do local r = FZ.total" .. with .. "(" .. ref(i) .. "); tycho.flush(); " .. ref(dst) .. " = r end"
    return step("task", src, function(S2)
      local x = need(S2, i)
      if skipped(x) then S2.slots[dst] = M.taint(M.new("f64", {}, { 0.0 }, 2), x); return end
      if x.dtype == "bool" and not size0(x) then M.fail("arithmetic on a boolean in the body") end
      local vals, st = M.values(x)
      local acc, s, mag = 0.0, 0, 0.0
      for k = 1, #vals do
        local v = lua_arith(vals[k], x.dtype)
        acc = acc + v
        mag = mag + math.abs(v + 0.0) -- math.abs(math.mininteger) is negative
        s = math.max(s, st[k])
      end
      if s == 0 then s = 1 end
      -- the body adds Lua integers for an integer store: past 2^62 they may
      -- wrap, in each piece, and the pieces depend on the partition
      if not M.is_float(x.dtype) and mag >= 2.0 ^ 62 then s = 2 end
      S2.slots[dst] = M.new("f64", {}, { acc }, { s })
    end, 2)
  elseif which == "fail" then
    local src = "do local r = FZ.fail(" .. ref(i) .. "); tycho.flush(); " .. ref(dst) .. " = r end"
    return step("task", src, function(S2)
      local x = need(S2, i)
      if skipped(x) then S2.slots[dst] = M.taint(M.new("f64", x.shape, {}, 2), x); return end
      -- an empty domain never runs a body (as the built-ins): nothing raises
      if M.numel(x.shape) == 0 then S2.slots[dst] = M.new("f64", x.shape, {}, 0); return end
      M.fail("the body raises")
    end, 2)
  else -- ill-typed calls and declarations
    local bads = {
      "FZ.axpy(" .. ref(i) .. ")", -- the scalar is missing
      "FZ.axpy(" .. ref(i) .. ", nil, 'x')",
      "FZ.axpy(2, nil, 1)",
      "FZ.total(" .. ref(i) .. ", 1, 2, 3)",
      "tycho.task{name = 'fz_bad', args = {'bogus'}, body = function() end}",
      "local n = 3; tycho.task{name = 'fz_bad2', args = {'in'}, body = function(ctx, x) return n end}",
      "tycho.task{name = 'fz_axpy', args = {'in', 'out', 'scalar'}, traits = {parallel = 'single'}, body = function() end}",
      "FZ.axpy:with{mode = 'sometimes'}(" .. ref(i) .. ", nil, 1)",
    }
    local k = rnd(#bads)
    local src = bads[k]
    if G.isolate and k == 2 then src = "tycho.flush(); " .. src end
    return step("task", "do " .. src .. "; tycho.flush() end", function(S2)
      if k == 2 or k == 4 or k == 8 then
        local x = need(S2, i)
        if k == 2 and (size0(x) or skipped(x)) then return end -- no body runs
      end
      M.fail("ill-typed task call")
    end)
  end
end

-- scans and joins -------------------------------------------------------------------------

function G.shape(S, o)
  local dst = o and o.dst or out_slot()
  if chance(0.5) then -- cumsum / cumprod, flat or along an axis
    local op = pick({ "cumsum", "cumprod" })
    local i = any_slot(S, function(v) return M.numel(v.shape) <= 2000 end)
    if not i then return G.create(S, o) end
    local nd = #S.slots[i].shape
    local axis = nd > 0 and chance(0.6) and rnd(1, nd) or nil
    if axis and chance(0.3) then axis = axis - nd - 1 end
    if chance(0.08) then axis = pick({ 0, nd + 1, 1.5 }) end
    local opts = maybe_opts()
    local args = (axis ~= nil and lit(axis) or (opts and "nil" or "")) ..
                 (opts and (", " .. lit(opts)) or "")
    local expr = chance(0.5) and (ref(i) .. ":" .. op .. "(" .. args .. ")")
                 or ("tycho." .. op .. "(" .. ref(i) .. (args ~= "" and (", " .. args) or "") .. ")")
    return step("shape", ref(dst) .. " = " .. expr, function(S2)
      check_opts(opts)
      local x = need(S2, i)
      local n = #x.shape
      local ax = axis
      if ax ~= nil then
        if math.type(ax) ~= "integer" then M.fail("bad axis") end
        if n == 0 then M.fail("axis of a 0-d store") end
        if ax < 0 then ax = ax + n + 1 end
        if ax < 1 or ax > n then M.fail("axis out of range") end
      end
      S2.slots[dst] = M.scan(op, x, ax)
    end)
  end
  -- concatenate two or three stores (often views of one another) along an axis
  local i = any_slot(S)
  if not i then return G.create(S, o) end
  local x = S.slots[i]
  local nd = #x.shape
  local list = { i }
  local axis = nd > 0 and rnd(1, nd) or 1
  for _ = 1, rnd(1, 2) do
    local j = any_slot(S, function(v)
      if #v.shape ~= nd then return false end
      for d = 1, nd do if d ~= axis and v.shape[d] ~= x.shape[d] then return false end end
      return true
    end)
    list[#list + 1] = (j and not chance(0.1)) and j or any_slot(S) or i
  end
  if chance(0.3) then axis = axis - nd - 1 end
  local refs = {}
  for k, j in ipairs(list) do refs[k] = ref(j) end
  local form = rnd(3)
  local expr = "tycho.concatenate({" .. table.concat(refs, ", ") .. "}" ..
               (form == 1 and "" or (", " .. lit(axis))) .. ")"
  if form == 1 then axis = 1 end
  return step("shape", ref(dst) .. " = " .. expr, function(S2)
    local vs = {}
    for k, j in ipairs(list) do vs[k] = need(S2, j) end
    S2.slots[dst] = M.concatenate(vs, axis)
  end)
end

-- bincount and .npy ----------------------------------------------------------------------------

-- numpy's bincount: values are data (0 counts into position 1), the length is
-- max(max(x) + 1, minlength), a negative value is an error; reading min/max
-- flushes, so x must be readable when it is not empty.
-- x is drawn with values the model can size the result from (known, at most
-- 1000; negative ones are the error case), or as a float or non-1-D store.
local function countable(v)
  if M.is_float(v.dtype) or #v.shape ~= 1 then return true end
  local vals, st = M.values(v)
  for k, l in ipairs(vals) do
    if st[k] == 2 or (type(l) == "number" and l > 1000) then return false end
  end
  return true
end

function G.bincount(S, o)
  local i = any_slot(S, function(v)
    return #v.shape == 1 and not M.is_float(v.dtype) and countable(v)
  end)
  if not i or chance(0.1) then i = any_slot(S, countable) end
  if not i then return G.create(S, o) end
  local dst = o and o.dst or out_slot()
  local w = chance(0.4) and any_slot(S, function(v) return #v.shape == 1 end) or nil
  local minlength = chance(0.5) and rnd(0, 8) or nil
  if minlength and chance(0.05) then minlength = -1 end
  local rest = {}
  if w then rest[#rest + 1] = ref(w) end
  if minlength then
    if chance(0.5) then
      if not w then rest[#rest + 1] = "nil" end
      rest[#rest + 1] = tostring(minlength)
    else
      rest[#rest + 1] = "{ minlength = " .. minlength .. " }"
    end
  end
  local expr
  if chance(0.5) then
    expr = "tycho.bincount(" .. table.concat({ ref(i), table.unpack(rest) }, ", ") .. ")"
  else
    expr = ref(i) .. ":bincount(" .. table.concat(rest, ", ") .. ")"
  end
  return step("bincount", ref(dst) .. " = " .. expr, function(S2)
    local x = need(S2, i)
    local wv = w and need(S2, w) or nil
    if minlength and minlength < 0 then M.fail("negative minlength") end
    if M.is_float(x.dtype) then M.fail("float values") end
    if #x.shape ~= 1 then M.fail("x not 1-D") end
    local labels, lst = M.values(x)
    local n = minlength or 0
    -- bool and u8 values are bounded by their dtype: within minlength, the
    -- length is known and nothing is read (README, bincount); an unavailable
    -- x then makes an unavailable result, read later
    local known = minlength and ((x.dtype == "bool" and minlength >= 2) or (x.dtype == "u8" and minlength >= 256))
    if known and (x.buf.cancelled or x.buf.maybe_cancelled) then
      local vals, st = {}, {}
      for b = 1, n do vals[b] = 0; st[b] = 2 end
      local r = M.new(wv and (wv.dtype == "f32" and "f32" or "f64") or "i64", { n }, vals, st)
      if wv and wv.shape[1] ~= x.shape[1] then M.fail("weights of another length") end
      S2.slots[dst] = wv and M.taint(r, x, wv) or M.taint(r, x)
      if x.buf.maybe_cancelled then r.buf.maybe_cancelled = true end
      return
    end
    for k = 1, known and #labels or 0 do
      if lst[k] == 2 then error({ fz_expected = "unknown values", either = true }, 0) end
    end
    if #labels > 0 and not known then -- min and max are read: flushes, may find x unavailable
      M.check_readable(x)
      for k, l in ipairs(labels) do
        if lst[k] == 2 then error({ fz_expected = "unknown values", either = true }, 0) end
        if type(l) == "boolean" then l = l and 1 or 0 end
        if l < 0 then M.fail("negative value") end
        n = math.max(n, l + 1)
      end
    end
    if n > 100000 then error({ fz_expected = "too many bins for the model", either = true }, 0) end
    if wv and wv.shape[1] ~= x.shape[1] then M.fail("weights of another length") end
    local rt = "i64"
    if wv then rt = wv.dtype == "f32" and "f32" or "f64" end
    local vals, st = {}, {}
    for b = 1, n do vals[b] = (rt == "i64") and 0 or 0.0; st[b] = 0 end
    local wvals, wst
    if wv then wvals, wst = M.values(wv) end
    for k, l in ipairs(labels) do
      if type(l) == "boolean" then l = l and 1 or 0 end
      local b = l + 1
      if wv then
        vals[b] = vals[b] + M.convert(wvals[k], wv.dtype, "f64")
        st[b] = math.max(st[b], wst[k], lst[k], 1)
      else
        vals[b] = vals[b] + 1
        st[b] = math.max(st[b], lst[k])
      end
    end
    if rt == "f32" then for b = 1, n do vals[b] = M.f32(vals[b]) end end
    local r = M.new(rt, { n }, vals, st)
    if wv then M.taint(r, x, wv) else M.taint(r, x) end
    S2.slots[dst] = r
  end)
end

function G.npy(S, o)
  local i = any_slot(S)
  if not i then return G.create(S, o) end
  local dst = o and o.dst or out_slot()
  local src = chance(0.5) and ("tycho.save(TMP, " .. ref(i) .. ")") or (ref(i) .. ":save(TMP)")
  return step("npy", src .. "; " .. ref(dst) .. " = tycho.load(TMP)", function(S2)
    local x = need(S2, i)
    M.check_readable(x)
    local vals, st = M.values(x)
    S2.slots[dst] = M.new(x.dtype, x.shape, vals, st)
  end, 2)
end

-- Everything else -------------------------------------------------------------------------------

function G.misc(S)
  local r = rnd(10)
  local i = rnd(G.NSLOTS)
  if r == 10 then
    return step("misc", "tycho.seed(" .. rnd(0, 99) .. ")", function() end)
  elseif r == 1 then
    return step("misc", "tycho.flush()", function() end)
  elseif r == 2 then
    return step("misc", "collectgarbage()", function() end, 0)
  elseif r == 3 then
    return step("misc", ref(i) .. " = nil", function(S2) S2.slots[i] = nil end, 0)
  elseif r == 4 then
    local j = rnd(G.NSLOTS)
    return step("misc", ref(j) .. " = " .. ref(i), function(S2) S2.slots[j] = S2.slots[i] end, 0)
  elseif r == 5 then
    return step("misc", "do local c <close> = " .. ref(i) .. " end", function(S2)
      local x = S2.slots[i]
      if x then x.closed = true end
    end, 0)
  elseif r == 6 then
    return step("misc", "R = tycho.stats().launches", function() end)
  elseif r == 7 then
    return step("misc", "R = #tycho.explain(3)", function() end)
  elseif r == 8 then
    return step("misc", "R = tycho.memory().live", function() end)
  else
    -- a misspelt field is an error naming the fields (never a nil)
    return step("misc", "R = " .. ref(i) .. " and " .. ref(i) .. ".nosuchfield", function(S2)
      if S2.slots[i] then M.fail("no such field") end
    end, 0)
  end
end

-- The mix of steps.
local WEIGHTS = {
  { G.create, 14 }, { G.unary, 9 }, { G.binary, 16 }, { G.where, 3 }, { G.reduce, 8 },
  { G.matmul, 3 }, { G.cast, 4 }, { G.copy, 2 }, { G.view, 12 }, { G.assign, 8 },
  { G.read, 20 }, { G.scope, 5 }, { G.hint, 2 }, { G.task, 5 }, { G.misc, 5 },
  { G.bincount, 2 }, { G.npy, 1 }, { G.shift, 3 }, { G.limits, 2 }, { G.save_target, 1 },
  { G.shape, 3 },
}
local TOTAL = 0
for _, w in ipairs(WEIGHTS) do TOTAL = TOTAL + w[2] end

-- G.isolate (api_fuzz.lua --isolate-failures): keep launches that fail, or
-- read storage a failed launch left unavailable, out of fused runs, by
-- flushing around them. Until session 14 such a launch took the unrelated
-- launches fused with it down too (their results read as "unavailable"), so
-- this was the default; a failure now takes only what depends on it
-- (docs/fusion.md, "Failures"), and the default lets them fuse.
G.isolate = false

function G.next(S)
  CUR = S
  if #live(S) < 2 then return G.create(S) end
  local x = rnd() * TOTAL
  local st
  for _, w in ipairs(WEIGHTS) do
    x = x - w[2]
    if x < 0 then st = w[1](S); break end
  end
  st = st or G.misc(S)
  if G.isolate and st.kind ~= "scope" and touches_cancelled(S, st.src) then
    st.src = "tycho.flush(); " .. st.src .. "; tycho.flush()"
  end
  return st
end

return G
