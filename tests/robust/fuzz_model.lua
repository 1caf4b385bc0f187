--[[
fuzz_model.lua — the reference implementation the API fuzzer (api_fuzz.lua)
checks tycho against: stores as plain Lua tables, small and slow, written
from the documented semantics (README.md, docs/dtypes.md), never from the
C code.

A model store is two tables, as tycho's are:
  buffer  { vals = {...}, st = {...} }   the storage, 1-based flat
  view    { buf, dtype, shape, strides, offset, closed }   one Lua userdata
Views share buffers, so a write through one view shows in the others; two
Lua values that are the same userdata (x:t() of a 1-D x, x:fill(v)) are the
same view table, so closing one closes both.

Values: float dtypes hold Lua floats (f32 ones rounded to f32), integer
dtypes Lua integers (wrapped to their width), bool 0 or 1.

Every element carries a state, because the model and tycho compute some
things differently:
  0 exact    the model's value is the value (IEEE-rounded + - * / sqrt,
             integer ops, casts, copies)
  1 approx   within a tolerance: transcendentals (SLEEF 1-ULP vs libm),
             float sums and products (order), matmul (BLAS)
  2 unknown  not compared: a discontinuous op (floor, a comparison, a cast
             to an integer, argmax...) applied to an approx value close to
             its discontinuity, or `empty`'s contents
A discontinuous op on an approx value far from the discontinuity is exact
again, so unknown stays rare.

Errors the model predicts (bad shapes, dtypes, indices) are raised with
M.fail(reason): error({fz_expected = reason}); the fuzzer pcalls the model
and compares "error or not" with what tycho did.
]]

local M = {}

M.RTOL = { f64 = 1e-6, f32 = 1e-3 } -- approx comparisons: |a-b| <= rtol * (1 + |b|)
M.NEAR = 1e-6                       -- "close to a discontinuity" for approx inputs

function M.fail(reason) error({ fz_expected = reason }, 0) end

-- ---- dtypes -------------------------------------------------------------------

M.DTYPES = { "f64", "f32", "i64", "i32", "u8", "bool" }
local FLOAT = { f64 = true, f32 = true }
local INT = { i64 = true, i32 = true, u8 = true, u64 = true }
M.is_float = function(t) return FLOAT[t] == true end
M.is_int = function(t) return INT[t] == true end

-- numpy's result_type for the six dtypes (docs/dtypes.md), and u64, which
-- sums, products and scans of u8 give (numpy's)
local RANK = { bool = 0, u8 = 1, i32 = 2, i64 = 3 }
function M.promote(a, b)
  if a == b then return a end
  if a == "u64" or b == "u64" then
    local o = a == "u64" and b or a
    return (o == "bool" or o == "u8") and "u64" or "f64"
  end
  if FLOAT[a] and FLOAT[b] then return "f64" end
  if FLOAT[a] or FLOAT[b] then
    local f, i = a, b
    if FLOAT[b] then f, i = b, a end
    if f == "f64" then return "f64" end
    return (i == "bool" or i == "u8") and "f32" or "f64"
  end
  return RANK[a] >= RANK[b] and a or b
end

-- The dtype a Lua number (or boolean) takes next to a store of dtype peer
-- (nil: no store next to it): tycho_lua.c's tl_weak_dtype.
function M.weak(v, peer)
  if type(v) == "boolean" then return "bool" end
  local isint = math.type(v) == "integer"
  if not peer then return isint and "i64" or "f64" end
  if FLOAT[peer] then return peer end
  if not isint then return "f64" end
  if peer == "i32" then return (v >= -2147483648 and v <= 2147483647) and "i32" or "i64" end
  if peer == "u8" then return (v >= 0 and v <= 255) and "u8" or "i64" end
  if peer == "u64" then return v >= 0 and "u64" or "f64" end
  return "i64"
end

-- A Lua integer stored into (or next to, in arithmetic) an i32 or u8 store
-- must fit it (tycho_lua.c's tl_check_int_fits, numpy 2's OverflowError).
local INT_RANGE = { i32 = { -2147483648, 2147483647 }, u8 = { 0, 255 }, u64 = { 0, math.maxinteger } }
function M.check_fits(v, t)
  local r = INT_RANGE[t]
  if r and math.type(v) == "integer" and (v < r[1] or v > r[2]) then
    M.fail("the integer " .. v .. " is out of range for " .. t)
  end
end

-- Binary ops that compare or combine truth values: exact, never refused.
local NOT_ARITH = { lt = true, le = true, gt = true, ge = true, eq = true, ne = true,
                    logical_and = true, logical_or = true }

local function f32(x) return (string.unpack("f", string.pack("f", x))) end
M.f32 = f32

-- A number as a float, keeping the sign of a zero (x + 0.0 turns -0.0 into
-- 0.0, and 1 / x tells them apart).
local function fl(x) return math.type(x) == "float" and x or x + 0.0 end
M.fl = fl

-- A u64 from 2^63 is held as its bits: a negative Lua integer. As a float,
-- it is the unsigned value rounded as C's conversion rounds it (half its
-- bits, the lowest kept sticky, converted and doubled); anything else: fl.
local function tofl(x, t)
  if t == "u64" and math.type(x) == "integer" and x < 0 then return ((x >> 1) | (x & 1)) * 2.0 end
  return fl(x)
end
M.tofl = tofl

-- a < b for two values of dtype t (u64: unsigned).
local function lt(a, b, t)
  if t == "u64" and math.type(a) == "integer" and math.type(b) == "integer" then return math.ult(a, b) end
  return a < b
end

-- Unsigned a % b of two u64 bit patterns (b ~= 0), as Lua's manual divides them.
local function umod(a, b)
  if b < 0 then return math.ult(a, b) and a or a - b end
  local q = ((a >> 1) // b) << 1
  local r = a - q * b
  if not math.ult(r, b) then r = r - b end
  return r
end

local function negzero(x) return x == 0 and 1 / x < 0 end

local function wrap(t, v) -- an integer into dtype t's width (C's modulo conversion)
  if t == "i32" then
    v = v & 0xffffffff
    if v >= 0x80000000 then v = v - 0x100000000 end
    return v
  elseif t == "u8" then
    return v & 0xff
  elseif t == "bool" then
    return v ~= 0 and 1 or 0
  end
  return v
end

local function sat(v, lo, hi) -- float -> integer: NaN 0, saturate, truncate (kernels_cast.c)
  if v ~= v then return 0 end
  if v >= hi then return math.tointeger(hi) or hi end
  if v <= lo then return math.tointeger(lo) or lo end
  local t = v < 0 and math.ceil(v) or math.floor(v)
  return math.tointeger(t)
end

-- A value of dtype `from` converted to dtype `to` (C conversions, docs/dtypes.md).
function M.convert(v, from, to)
  if to == "bool" then return (v ~= 0) and 1 or 0 end -- NaN ~= 0: true
  if FLOAT[to] then
    local x = tofl(v, from)
    return to == "f32" and f32(x) or x
  end
  if FLOAT[from] then
    if to == "i64" then
      if v ~= v then return 0 end
      if v >= 9223372036854775808.0 then return math.maxinteger end
      if v < -9223372036854775808.0 then return math.mininteger end
      return math.tointeger(v < 0 and math.ceil(v) or math.floor(v))
    elseif to == "i32" then
      return sat(v, -2147483648.0, 2147483647.0)
    elseif to == "u64" then -- saturating; values from 2^63 kept as their bits
      if v ~= v or v <= 0 then return 0 end
      if v >= 18446744073709551616.0 then return -1 end
      if v >= 9223372036854775808.0 then
        return math.tointeger(v - 9223372036854775808.0) + math.mininteger
      end
      return math.tointeger(math.floor(v))
    else -- u8
      return sat(v, 0.0, 255.0)
    end
  end
  return wrap(to, v)
end

-- A Lua number or boolean as a value of dtype t (a 0-d operand store).
function M.from_lua(v, t)
  if type(v) == "boolean" then v = v and 1 or 0 end
  if math.type(v) == "integer" then
    return M.convert(v, "i64", t)
  end
  return M.convert(v, "f64", t)
end

-- What ty_fill writes for a Lua value (tycho_lua.c's tl_fill_value): booleans
-- as 1.0 / 0.0; an integer must fit an i32/u8 store; integers beyond 2^53
-- into i64 stores through an i64 copy; everything else through a double
-- (saturating casts).
function M.fill_value(v, t)
  if type(v) == "boolean" then return M.convert(v and 1.0 or 0.0, "f64", t) end
  M.check_fits(v, t)
  if math.type(v) == "integer" and not FLOAT[t] and (v > (1 << 53) or v < -(1 << 53)) then
    return M.convert(v, "i64", t)
  end
  return M.convert(fl(v), "f64", t)
end

-- ---- shapes and views -------------------------------------------------------------

function M.numel(shape)
  local n = 1
  for _, e in ipairs(shape) do n = n * e end
  return n
end

local function rowmajor(shape)
  local s, acc = {}, 1
  for d = #shape, 1, -1 do
    s[d] = acc
    acc = acc * shape[d]
  end
  return s
end

local function copy_list(t)
  local r = {}
  for i, v in ipairs(t) do r[i] = v end
  return r
end
M.copy_list = copy_list

-- A fresh store of dtype t and shape with row-major values (states: a table,
-- a number for all, or nil for exact).
function M.new(t, shape, vals, states)
  local n = M.numel(shape)
  local buf = { vals = {}, st = {} }
  for i = 1, n do
    buf.vals[i] = vals[i]
    if buf.vals[i] == nil then buf.vals[i] = FLOAT[t] and 0.0 or 0 end
    buf.st[i] = type(states) == "table" and states[i] or states or 0
  end
  return { buf = buf, dtype = t, shape = copy_list(shape), strides = rowmajor(shape), offset = 0 }
end

-- A launch that reads storage whose producer failed is skipped and its
-- outputs are unavailable too (window.c): the result of an op on such an
-- input is "cancelled", and reading it is an error. Returns r.
-- (An empty result may have had no launch at all: reading it may work.)
function M.taint(r, ...)
  for _, v in ipairs({ ... }) do
    -- an f32 operand's approximate values (1-ULP functions, f32 sums) carry
    -- f32's error into an f64 result, past f64's tolerance when a cancellation
    -- or a product grows it (api_fuzz seeds 30209, 30537, 41135): such a
    -- result is compared within f32's
    if v.buf.loose or v.dtype == "f32" then r.buf.loose = true end
    if v.buf.cancelled then
      if M.numel(r.shape) > 0 then r.buf.cancelled = true else r.buf.maybe_cancelled = true end
    end
  end
  return r
end

-- Reading values (item, totable, x[i], tostring) of cancelled storage fails.
function M.check_readable(v)
  local empty = M.numel(v.shape) == 0 -- (tostring of an empty view does not look)
  if v.buf.cancelled and not empty then M.fail("the value is unavailable (its producer failed)") end
  if v.buf.cancelled or v.buf.maybe_cancelled then
    error({ fz_expected = "maybe unavailable", either = true }, 0)
  end
end

-- Calls fn(idx, pos) for every element in row-major order: idx the 0-based
-- index (a reused table), pos the 1-based buffer position.
function M.each(v, fn)
  local nd, shape = #v.shape, v.shape
  if M.numel(shape) == 0 then return end
  local idx = {}
  for d = 1, nd do idx[d] = 0 end
  while true do
    local pos = v.offset
    for d = 1, nd do pos = pos + idx[d] * v.strides[d] end
    fn(idx, pos + 1)
    local d = nd
    while d >= 1 do
      idx[d] = idx[d] + 1
      if idx[d] < shape[d] then break end
      idx[d] = 0
      d = d - 1
    end
    if d < 1 then return end
  end
end

-- Row-major values and states of a view.
function M.values(v)
  local vals, st = {}, {}
  M.each(v, function(_, pos)
    vals[#vals + 1] = v.buf.vals[pos]
    st[#st + 1] = v.buf.st[pos]
  end)
  return vals, st
end

local function view(v, shape, strides, offset)
  return { buf = v.buf, dtype = v.dtype, shape = shape, strides = strides, offset = offset }
end

function M.check_open(v, what)
  if v.closed then M.fail((what or "argument") .. " is a closed store") end
end

function M.select(v, d, i0) -- d 1-based, i0 0-based
  local shape, strides = {}, {}
  for k = 1, #v.shape do
    if k ~= d then
      shape[#shape + 1] = v.shape[k]
      strides[#strides + 1] = v.strides[k]
    end
  end
  return view(v, shape, strides, v.offset + i0 * v.strides[d])
end

function M.slice(v, d, start, stop, step) -- [start, stop) 0-based
  local shape, strides = copy_list(v.shape), copy_list(v.strides)
  local n = stop - start
  shape[d] = n <= 0 and 0 or (n + step - 1) // step
  strides[d] = v.strides[d] * step
  return view(v, shape, strides, v.offset + start * v.strides[d])
end

function M.flip(v, d) -- d 1-based: reversed along d (a negative stride)
  local shape, strides = copy_list(v.shape), copy_list(v.strides)
  strides[d] = -v.strides[d]
  local n = v.shape[d]
  return view(v, shape, strides, v.offset + (n > 0 and (n - 1) * v.strides[d] or 0))
end

function M.expand(v, d0) -- a size-1 axis before 0-based position d0
  local shape, strides = copy_list(v.shape), copy_list(v.strides)
  table.insert(shape, d0 + 1, 1)
  table.insert(strides, d0 + 1, 0)
  return view(v, shape, strides, v.offset)
end

function M.transpose(v, d1, d2) -- 1-based
  local shape, strides = copy_list(v.shape), copy_list(v.strides)
  shape[d1], shape[d2] = shape[d2], shape[d1]
  strides[d1], strides[d2] = strides[d2], strides[d1]
  return view(v, shape, strides, v.offset)
end

function M.diagonal(v)
  local n = math.min(v.shape[1], v.shape[2])
  return view(v, { n }, { v.strides[1] + v.strides[2] }, v.offset)
end

-- store.c's rule: C order, no gaps, dims of size 1 ignored; empty is contiguous.
function M.is_contiguous(v)
  if M.numel(v.shape) == 0 then return true end
  local expect = 1
  for d = #v.shape, 1, -1 do
    if v.shape[d] ~= 1 then
      if v.strides[d] ~= expect then return false end
      expect = expect * v.shape[d]
    end
  end
  return true
end

-- reshape to `shape` (one entry may be -1): the checks of lstore.c + store.c.
function M.reshape(v, shape)
  local infer, known = nil, 1
  for d, e in ipairs(shape) do
    if e == -1 then
      if infer then M.fail("-1 twice") end
      infer = d
    elseif e < 0 then
      M.fail("negative dim")
    else
      known = known * e
    end
  end
  if #shape > 16 then M.fail("rank > 16") end
  if not M.is_contiguous(v) then M.fail("not contiguous") end
  local size = M.numel(v.shape)
  local sh = copy_list(shape)
  if infer then
    if known == 0 or size % known ~= 0 then M.fail("cannot infer") end
    sh[infer] = size // known
  elseif known ~= size then
    M.fail("size mismatch")
  end
  return view(v, sh, rowmajor(sh), v.offset)
end

-- numpy broadcasting of shapes (nil, reason when they do not broadcast).
function M.broadcast(...)
  local shapes = { ... }
  local n = 0
  for _, s in ipairs(shapes) do n = math.max(n, #s) end
  local out = {}
  for i = 1, n do
    local e = 1
    for _, s in ipairs(shapes) do
      local j = #s - n + i
      local x = j >= 1 and s[j] or 1
      if x ~= 1 then
        if e ~= 1 and e ~= x then return nil end
        e = x
      end
    end
    out[i] = e
  end
  return out
end

-- The buffer position of the element of v at out-index idx (0-based) of a
-- broadcast result of rank nd.
local function bpos(v, idx, nd)
  local pos = v.offset
  local k = nd - #v.shape
  for d = 1, #v.shape do
    if v.shape[d] ~= 1 then pos = pos + idx[d + k] * v.strides[d] end
  end
  return pos + 1
end

-- Iterate the broadcast shape `shape` over operands: fn(idx, k) with k the
-- 1-based row-major position, and positions in each operand.
local function each_out(shape, ops, fn)
  local tmp = { shape = shape, strides = rowmajor(shape), offset = 0 }
  local k = 0
  M.each(tmp, function(idx)
    k = k + 1
    local pos = {}
    for i, v in ipairs(ops) do pos[i] = bpos(v, idx, #shape) end
    fn(idx, k, pos)
  end)
end

-- ---- element-wise ----------------------------------------------------------------

local function isnan(x) return x ~= x end

local function near_int(x) -- approx x close to an integer (floor/ceil/trunc may differ)
  if x ~= x or x == math.huge or x == -math.huge then return false end
  local r = math.floor(x + 0.5)
  return math.abs(x - r) <= M.NEAR * (1 + math.abs(x))
end

local function near_zero(x) return x == x and math.abs(x) <= M.NEAR end

local TRANSC = { exp = true, log = true, sin = true, cos = true, tanh = true }

local function tanh(x)
  if x > 20 then return 1.0 elseif x < -20 then return -1.0 end
  if math.abs(x) < 1e-5 then return x - x * x * x / 3 end
  local e = math.exp(2 * x)
  return (e - 1) / (e + 1)
end

M.SMALL_INT = { i8 = true, u8 = true, i16 = true, u16 = true, bool = true }

local UNARY = {
  exp = math.exp, log = math.log, sin = math.sin, cos = math.cos, tanh = tanh,
  sqrt = function(x) return x < 0 and (0.0 / 0.0) or math.sqrt(x) end,
}

function M.unary_dtype(op, t)
  if op == "neg" then return t == "bool" and "i64" or t end
  if op == "abs" or op == "floor" or op == "ceil" then return t end
  if op == "logical_not" then return "bool" end
  -- exp log sqrt sin cos tanh: integers of 16 bits or fewer and bool give
  -- f32 (numpy: f16 for 8 bits), wider ones f64 (docs/dtypes.md)
  if FLOAT[t] then return t end
  return M.SMALL_INT[t] and "f32" or "f64"
end

-- One element: value and state of op(x) with x of dtype t, result dtype r.
local function unary_elem(op, x, s, t, r)
  if op == "neg" then
    if FLOAT[r] then return -x, s end
    return wrap(r, 0 - x), s
  elseif op == "abs" then
    if FLOAT[r] then return math.abs(x), s end
    if r == "u8" or r == "u64" or r == "bool" then return x, s end
    return wrap(r, x < 0 and 0 - x or x), s
  elseif op == "floor" or op == "ceil" then
    if not FLOAT[r] then return x, s end
    if isnan(x) or x == math.huge or x == -math.huge then return x, s end
    local y = fl(op == "floor" and math.floor(x) or math.ceil(x))
    if y == 0 then y = (x < 0 or negzero(x)) and -0.0 or 0.0 end -- C's floor/ceil keep the sign
    if s == 1 then s = near_int(x) and 2 or 0 end
    return y, s
  elseif op == "logical_not" then
    if s == 1 then s = near_zero(x) and 2 or 0 end
    return (x == 0) and 1 or 0, s
  end
  local xf = tofl(x, t)
  local y = UNARY[op](xf)
  if r == "f32" then y = f32(y) end
  if TRANSC[op] then
    if s == 1 and op == "log" and (near_zero(xf) or xf < 0) then s = 2 end
    -- an approximate argument's error, times its size, is the error of a
    -- sine of it: past a few units an f32 one's (promoted or not) exceeds
    -- the tolerance (sin(exp(32.85)): api_fuzz seeds 30978, 40476)
    if s == 1 and (op == "sin" or op == "cos" or op == "tan") and math.abs(xf) > 8 then s = 2 end
    if s == 0 then s = 1 end
  elseif op == "sqrt" and s == 1 and (near_zero(xf) or xf < 0) then
    s = 2
  end
  return y, s
end

function M.unary(op, a)
  local r = M.unary_dtype(op, a.dtype)
  local vals, st = {}, {}
  M.each(a, function(_, pos)
    local y, s = unary_elem(op, a.buf.vals[pos], a.buf.st[pos], a.dtype, r)
    vals[#vals + 1], st[#st + 1] = y, s
  end)
  return M.taint(M.new(r, a.shape, vals, st), a)
end

local ARITH = { add = true, sub = true, mul = true, mod = true }
local CMP = { lt = true, le = true, gt = true, ge = true, eq = true, ne = true }
M.CMP = CMP

function M.binary_dtype(op, ta, tb)
  local p = M.promote(ta, tb)
  if ARITH[op] then return p == "bool" and "i64" or p end
  if op == "maximum" or op == "minimum" then return p end -- bools stay bool (or / and), as numpy
  if op == "div" or op == "pow" then return FLOAT[p] and p or "f64" end
  return "bool" -- comparisons, logical_and, logical_or
end

-- numpy's float remainder: fmod, moved into the divisor's sign (Lua's %),
-- and a zero takes the divisor's sign (npy_divmod's copysign(0, b)).
local function lua_mod_float(a, b)
  if b == 0 then return 0.0 / 0.0 end
  local m = a % b
  if m == 0 then m = (b < 0) and -0.0 or 0.0 end
  return m
end

-- a, b already converted to p; returns value, state-adjustment flags.
local function binary_elem(op, a, b, sa, sb, p, r)
  local s = math.max(sa, sb)
  local isf = FLOAT[p]
  if op == "add" or op == "sub" or op == "mul" then
    local y
    if op == "add" then y = a + b elseif op == "sub" then y = a - b else y = a * b end
    if isf then return (r == "f32" and f32(y) or y), s end
    return wrap(r, y), s
  elseif op == "div" then
    local y = tofl(a, p) / tofl(b, p)
    if s == 1 and near_zero(fl(b)) then s = 2 end
    return (r == "f32" and f32(y) or y), s
  elseif op == "mod" then
    if isf then
      local y = lua_mod_float(a, b)
      if s == 1 then s = 2 end
      return (r == "f32" and f32(y) or y), s
    end
    if b == 0 then return 0, s end
    if p == "u64" then return umod(a, b), s end
    return wrap(r, a % b), s
  elseif op == "pow" then
    local y = tofl(a, p) ^ tofl(b, p)
    if r == "f32" then y = f32(y) end
    if s == 1 and not (a > M.NEAR and a < math.huge) then s = 2 end
    -- a^b's relative error is b's times |b log a|, and a's times |b|: an
    -- f32 exponent promoted into f64 exceeds f64's tolerance past a few
    -- (2147483648 ^ cos(1) in f32: api_fuzz seed 30853)
    if s == 1 and (math.abs(tofl(b, p)) > 4 or math.abs(tofl(b, p) * math.log(math.abs(tofl(a, p)))) > 4) then
      s = 2
    end
    if s == 0 then s = 1 end
    return y, s
  elseif op == "maximum" or op == "minimum" then
    local y
    if isnan(a) then y = a
    elseif isnan(b) then y = b
    elseif op == "maximum" then y = lt(a, b, p) and b or a
    else y = lt(b, a, p) and b or a end
    if not isf then y = wrap(r, y) end
    return y, s
  elseif CMP[op] then
    local y
    if p == "u64" and math.type(a) == "integer" and math.type(b) == "integer" then
      if op == "lt" then y = math.ult(a, b) elseif op == "le" then y = not math.ult(b, a)
      elseif op == "gt" then y = math.ult(b, a) elseif op == "ge" then y = not math.ult(a, b)
      elseif op == "eq" then y = a == b else y = a ~= b end
    elseif op == "lt" then y = a < b elseif op == "le" then y = a <= b
    elseif op == "gt" then y = a > b elseif op == "ge" then y = a >= b
    elseif op == "eq" then y = a == b else y = a ~= b end
    if s == 1 then
      local d = math.abs(a - b)
      s = (d ~= d or d > M.NEAR * (1 + math.abs(a) + math.abs(b))) and 0 or 2
      if isnan(a) or isnan(b) then s = 0 end
    end
    return y and 1 or 0, s
  elseif op == "logical_and" or op == "logical_or" then
    local x, z = a ~= 0, b ~= 0
    if s == 1 then s = ((sa == 1 and near_zero(a)) or (sb == 1 and near_zero(b))) and 2 or 0 end
    local y
    if op == "logical_and" then y = x and z else y = x or z end
    return y and 1 or 0, s
  end
  error("fuzz_model: unknown binary op " .. tostring(op))
end

-- An operand: a view, or {num = v} for a Lua number/boolean next to `peer`;
-- `op` (a binary op's name, or "where"): an integer next to an i32/u8 store
-- in arithmetic must fit it.
function M.operand(x, peer_dtype, op)
  if type(x) == "table" and x.buf then
    M.check_open(x)
    return x
  end
  if op and not NOT_ARITH[op] and peer_dtype then M.check_fits(x, peer_dtype) end
  local t = M.weak(x, peer_dtype)
  return M.new(t, {}, { M.from_lua(x, t) }, 0)
end

function M.binary(op, a, b)
  local shape = M.broadcast(a.shape, b.shape)
  if not shape then M.fail("shapes do not broadcast") end
  local p = M.promote(a.dtype, b.dtype)
  local r = M.binary_dtype(op, a.dtype, b.dtype)
  local vals, st = {}, {}
  each_out(shape, { a, b }, function(_, k, pos)
    local x = M.convert(a.buf.vals[pos[1]], a.dtype, p)
    local y = M.convert(b.buf.vals[pos[2]], b.dtype, p)
    vals[k], st[k] = binary_elem(op, x, y, a.buf.st[pos[1]], b.buf.st[pos[2]], p, r)
  end)
  return M.taint(M.new(r, shape, vals, st), a, b)
end

function M.where(c, a, b)
  local shape = M.broadcast(c.shape, a.shape, b.shape)
  if not shape then M.fail("shapes do not broadcast") end
  local p = M.promote(a.dtype, b.dtype)
  local vals, st = {}, {}
  each_out(shape, { c, a, b }, function(_, k, pos)
    local cv, cs = c.buf.vals[pos[1]], c.buf.st[pos[1]]
    local pick = cv ~= 0
    local src = pick and a or b
    local sp = pick and pos[2] or pos[3]
    local s = src.buf.st[sp]
    if cs == 2 or (cs == 1 and near_zero(cv)) then s = 2 end
    vals[k] = M.convert(src.buf.vals[sp], src.dtype, p)
    st[k] = s
  end)
  return M.taint(M.new(p, shape, vals, st), c, a, b)
end

function M.cast(a, t)
  local vals, st = {}, {}
  M.each(a, function(_, pos)
    local x, s = a.buf.vals[pos], a.buf.st[pos]
    if s == 1 and FLOAT[a.dtype] and not FLOAT[t] then
      if t == "bool" then s = near_zero(x) and 2 or 0
      else s = near_int(x) and 2 or 0 end
    end
    vals[#vals + 1] = M.convert(x, a.dtype, t)
    st[#st + 1] = s
  end)
  return M.taint(M.new(t, a.shape, vals, st), a)
end

-- dst[...] = src (a view: broadcast to dst's shape, cast) or a Lua value.
function M.assign(dst, src)
  M.check_open(dst)
  if type(src) == "table" and src.buf then
    M.check_open(src)
    local shape = M.broadcast(src.shape, dst.shape)
    local ok = shape and #shape == #dst.shape
    if ok then
      for d = 1, #shape do ok = ok and shape[d] == dst.shape[d] end
    end
    if not ok then M.fail("does not broadcast to the destination") end
    local c = M.cast(src, dst.dtype) -- read everything first: views may overlap
    local vals, st = {}, {}
    each_out(dst.shape, { c }, function(_, k, pos)
      vals[k], st[k] = c.buf.vals[pos[1]], c.buf.st[pos[1]]
    end)
    local k = 0
    M.each(dst, function(_, pos)
      k = k + 1
      dst.buf.vals[pos], dst.buf.st[pos] = vals[k], st[k]
    end)
    if c.buf.cancelled and M.numel(dst.shape) > 0 then dst.buf.cancelled = true end
    return
  end
  local tp = type(src)
  if tp ~= "number" and tp ~= "boolean" then M.fail("value must be a number, boolean or store") end
  local y = M.fill_value(src, dst.dtype)
  M.each(dst, function(_, pos) dst.buf.vals[pos], dst.buf.st[pos] = y, 0 end)
end

-- ---- reductions ----------------------------------------------------------------------

function M.reduce_dtype(op, t)
  if op == "sum" or op == "prod" then
    return FLOAT[t] and t or (t == "u8" or t == "u64") and "u64" or "i64"
  end
  if op == "mean" then return FLOAT[t] and t or "f64" end
  if op == "argmin" or op == "argmax" then return "i64" end
  return t -- min max
end

-- Reduce a list of values/states (one lane).
local function reduce_lane(op, t, r, vals, st)
  local n = #vals
  local s = 0
  for i = 1, n do s = math.max(s, st[i]) end
  if op == "sum" or op == "mean" or op == "prod" then
    local isf = FLOAT[t]
    local acc = op == "prod" and 1 or 0
    if isf or op == "mean" then acc = acc + 0.0 end
    for i = 1, n do
      local x = vals[i]
      if math.type(acc) == "float" then x = tofl(x, t) end
      if op == "prod" then acc = acc * x else acc = acc + x end
    end
    if op == "mean" then acc = (acc + 0.0) / n end
    if FLOAT[r] then
      if r == "f32" then acc = f32(acc) end
      if s == 0 and n > 1 then s = 1 end
    else
      acc = wrap(r, acc)
    end
    return acc, s
  elseif op == "min" or op == "max" then
    local best = vals[1]
    for i = 2, n do
      local x = vals[i]
      if isnan(best) then break end
      if isnan(x) or (op == "min" and lt(x, best, t)) or (op == "max" and lt(best, x, t)) then best = x end
    end
    return best, s
  else -- argmin / argmax: first occurrence; NaN wins (numpy)
    local bi, best = 1, vals[1]
    for i = 2, n do
      local x = vals[i]
      if isnan(best) then break end
      if isnan(x) or (op == "argmin" and lt(x, best, t)) or (op == "argmax" and lt(best, x, t)) then
        bi, best = i, x
      end
    end
    if s == 1 then -- a near tie for the extremum makes the position uncertain
      s = 0
      for i = 1, n do
        if i ~= bi and math.abs(vals[i] - best) <= M.NEAR * (1 + math.abs(best)) then s = 2 end
      end
    end
    return bi, s
  end
end

-- op over all elements (axis nil) or along a 1-based axis.
function M.reduce(op, a, axis)
  local t = a.dtype
  local r = M.reduce_dtype(op, t)
  local ordered = op == "min" or op == "max" or op == "argmin" or op == "argmax"
  if axis == nil then
    local vals, st = M.values(a)
    if ordered and #vals == 0 then M.fail("empty") end
    local y, s = reduce_lane(op, t, r, vals, st)
    -- the index of a 0-d store's only element is a constant: nothing is read
    if #a.shape == 0 and (op == "argmin" or op == "argmax") then return M.new(r, {}, { y }, { s }) end
    return M.taint(M.new(r, {}, { y }, { s }), a)
  end
  local nd = #a.shape
  if ordered and a.shape[axis] == 0 then M.fail("empty axis") end
  local oshape = {}
  for d = 1, nd do if d ~= axis then oshape[#oshape + 1] = a.shape[d] end end
  local out = { shape = oshape, strides = rowmajor(oshape), offset = 0 }
  local vals, st = {}, {}
  local k = 0
  M.each(out, function(idx)
    k = k + 1
    local lane, lst = {}, {}
    for i = 0, a.shape[axis] - 1 do
      local pos, j = a.offset, 0
      for d = 1, nd do
        local ix
        if d == axis then ix = i else j = j + 1; ix = idx[j] end
        pos = pos + ix * a.strides[d]
      end
      lane[#lane + 1] = a.buf.vals[pos + 1]
      lst[#lst + 1] = a.buf.st[pos + 1]
    end
    vals[k], st[k] = reduce_lane(op, t, r, lane, lst)
  end)
  return M.taint(M.new(r, oshape, vals, st), a)
end

-- ---- scans and joins (lshape.c) ---------------------------------------------------------

-- numpy's cumsum / cumprod along a 1-based axis, or over the elements in C
-- order (axis nil: 1-D). The model's lines are short (< 131072 elements):
-- tycho scans them in index order, as here.
function M.scan(op, a, axis)
  local t = a.dtype
  local r = FLOAT[t] and t or (t == "u8" or t == "u64") and "u64" or "i64"
  local src = a
  if axis == nil then
    local vals, st = M.values(a)
    src = M.new(t, { #vals }, vals, st)
    axis = 1
  end
  local shape = src.shape
  local out = { shape = shape, strides = rowmajor(shape), offset = 0 }
  local vals, st = {}, {}
  local nd = #shape
  -- lines along `axis`: every index with idx[axis] = 0
  M.each(out, function(idx)
    if idx[axis] ~= 0 then return end
    local acc, s = nil, 0
    local pos, opos = src.offset, 0
    for d = 1, nd do
      pos = pos + idx[d] * src.strides[d]
      opos = opos + idx[d] * out.strides[d]
    end
    for i = 0, shape[axis] - 1 do
      local p = pos + i * src.strides[axis]
      local x = M.convert(src.buf.vals[p + 1], t, r)
      s = math.max(s, src.buf.st[p + 1])
      if acc == nil then acc = x
      elseif op == "cumsum" then acc = acc + x
      else acc = acc * x end
      if FLOAT[r] then
        if r == "f32" then acc = f32(acc) end
        if i > 0 and s == 0 then s = 1 end
      else
        acc = wrap(r, acc)
      end
      local o = opos + i * out.strides[axis] + 1
      vals[o], st[o] = acc, s
    end
  end)
  return M.taint(M.new(r, shape, vals, st), a)
end

-- numpy's concatenate along a 1-based axis: ranks and the other dims match,
-- dtypes promote.
function M.concatenate(list, axis)
  if #list == 0 then M.fail("nothing to join") end
  local nd = #list[1].shape
  if nd == 0 then M.fail("0-d stores cannot be concatenated") end
  if axis < 0 then axis = axis + nd + 1 end
  if axis < 1 or axis > nd then M.fail("axis out of range") end
  local t = list[1].dtype
  local shape = copy_list(list[1].shape)
  shape[axis] = 0
  for k, v in ipairs(list) do
    M.check_open(v)
    if #v.shape ~= nd then M.fail("ranks differ") end
    for d = 1, nd do
      if d ~= axis and v.shape[d] ~= list[1].shape[d] then M.fail("shapes differ") end
    end
    shape[axis] = shape[axis] + v.shape[axis]
    if k > 1 then t = M.promote(t, v.dtype) end
  end
  local res = M.new(t, shape, {}, 0)
  local at = 0
  for _, v in ipairs(list) do
    local n = v.shape[axis]
    if n > 0 and M.numel(v.shape) > 0 then
      M.assign(M.slice(res, axis, at, at + n, 1), v)
      M.taint(res, v)
    end
    at = at + n
  end
  return res
end

-- numpy's matmul (fn "matmul") and dot (fn "dot") for operands of rank <= 2
-- (the generator makes no others): dot multiplies a 0-d operand (bool with
-- bool: logical and), matmul refuses it.
function M.matmul(a, b, fn)
  M.check_open(a)
  M.check_open(b)
  local na, nb = #a.shape, #b.shape
  if fn == "dot" and (na == 0 or nb == 0) then
    local both_bool = a.dtype == "bool" and b.dtype == "bool"
    return M.binary(both_bool and "logical_and" or "mul", a, b)
  end
  if na < 1 or na > 2 or nb < 1 or nb > 2 then M.fail("matmul rank") end
  local m = na == 2 and a.shape[1] or 1
  local k = a.shape[na]
  local k2 = b.shape[1]
  local n = nb == 2 and b.shape[2] or 1
  if k ~= k2 then M.fail("matmul shapes do not align") end
  local p = M.promote(a.dtype, b.dtype)
  local r = p == "bool" and "i64" or p -- bool: counted in i64, then != 0 (numpy's any)
  local oshape = {}
  if na == 2 then oshape[#oshape + 1] = m end
  if nb == 2 then oshape[#oshape + 1] = n end
  local function at(v, left, i, j) -- 0-based (row, col) of an operand seen as a matrix
    local pos
    if #v.shape == 2 then pos = v.offset + i * v.strides[1] + j * v.strides[2]
    elseif left then pos = v.offset + j * v.strides[1] -- a 1-D left operand is a row
    else pos = v.offset + i * v.strides[1] end -- a 1-D right operand is a column
    return M.convert(v.buf.vals[pos + 1], v.dtype, r), v.buf.st[pos + 1]
  end
  local vals, st = {}, {}
  for i = 0, m - 1 do
    for j = 0, n - 1 do
      -- a float product with k <= 8 is k multiplies added in order from the
      -- first term (README, "short inner dimension"): all -0 terms give -0;
      -- BLAS (and numpy's) sums start from +0
      local from_first = FLOAT[r] and k >= 1 and k <= 8
      local acc = not from_first and (FLOAT[r] and 0.0 or 0) or nil
      local s = 0
      for q = 0, k - 1 do
        local x, sx = at(a, true, i, q)
        local y, sy = at(b, false, q, j)
        acc = acc and acc + x * y or x * y
        s = math.max(s, sx, sy)
      end
      if FLOAT[r] then
        if r == "f32" then acc = f32(acc) end
        if s == 0 and k > 1 then s = 1 end
      else
        acc = wrap(r, acc)
      end
      vals[#vals + 1], st[#st + 1] = acc, s
    end
  end
  if p == "bool" then
    for q = 1, #vals do vals[q] = vals[q] ~= 0 and 1 or 0 end
    r = "bool"
  end
  return M.taint(M.new(r, oshape, vals, st), a, b)
end

-- ---- creation -------------------------------------------------------------------------

function M.full(t, shape, v) -- zeros / ones / full
  local y = M.fill_value(v, t)
  local vals = {}
  for i = 1, M.numel(shape) do vals[i] = y end
  return M.new(t, shape, vals, 0)
end

-- start + i*step: in wrapping int64 for an integer dtype with integral start
-- and step, else in double then cast (kernels_fill.c).
function M.arange(t, start, step, n)
  local exact = not FLOAT[t] and math.tointeger(start) and math.tointeger(step)
  local vals = {}
  for i = 0, n - 1 do
    if exact then
      vals[i + 1] = M.convert(math.tointeger(start) + i * math.tointeger(step), "i64", t)
    elseif t == "f32" then -- numpy's FLOAT_fill: x0, x1, then x0 + i * (x1 - x0), in float
      local x0, x1 = f32(fl(start)), f32(fl(start) + step)
      vals[i + 1] = i == 0 and x0 or i == 1 and x1 or f32(x0 + f32(f32(i + 0.0) * f32(x1 - x0)))
    else -- numpy's DOUBLE_fill: start, start + step, then start + i * (x1 - start)
      local x0 = fl(start)
      local x1 = x0 + step
      local x = i == 0 and x0 or i == 1 and x1 or x0 + i * (x1 - x0)
      vals[i + 1] = M.convert(x, "f64", t)
    end
  end
  return M.new(t, { n }, vals, 0)
end

function M.linspace(t, a, b, n)
  local vals = {}
  for i = 0, n - 1 do
    local x
    if n == 1 then x = fl(a)
    elseif i == n - 1 then x = fl(b)
    else -- numpy: i * step + a (i / div * delta + a when the step underflows to 0)
      local step = (b - a) / (n - 1)
      if step == 0 then x = i / (n - 1) * (b - a) + a else x = i * step + a end
    end
    vals[i + 1] = M.convert(x, "f64", t)
  end
  return M.new(t, { n }, vals, 1)
end

-- array(nested): the flat values written as put_elem does (lcreate.c):
-- integers must fit an i32/u8 dtype, floats saturate.
function M.array_value(v, t)
  if type(v) == "boolean" then v = v and 1 or 0 end
  M.check_fits(v, t)
  if math.type(v) == "integer" then return M.convert(v, "i64", t) end
  return M.convert(v, "f64", t)
end

return M
