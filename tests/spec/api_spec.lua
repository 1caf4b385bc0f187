-- tests/spec/api_spec.lua — every function of the Lua API, checked against
-- values computed here in plain Lua (tables and the math library).
--
-- Runs inside the `tycho` shell and under stock lua5.4 (require "tycho").
-- Tolerances: exact for integers and for results that are exact in binary
-- (small sums, 0.25 steps); 1e-14 relative for one libm-class function
-- (SLEEF is 1-ULP, glibc's math.exp too, so two results may differ by 2 ULP);
-- 1e-12 for sums and dot products of up to a few thousand terms (the order of
-- additions differs from the Lua loop).
local tycho = tycho or require "tycho"

-- |a - b| <= tol * max(1, |b|); tol 0 is exact.
local function near(a, b, tol)
  tol = tol or 0
  if a ~= a and b ~= b then return true end -- both NaN
  return a == b or math.abs(a - b) <= tol * math.max(1, math.abs(b))
end

-- Recursive comparison of nested tables of numbers/booleans; on mismatch the
-- error names the path, e.g. [2][3].
local function same(got, want, tol, path)
  path = path or ""
  if type(want) == "table" then
    assert(type(got) == "table", path .. ": expected a table, got " .. tostring(got))
    assert(#got == #want, string.format("%s: expected %d elements, got %d", path, #want, #got))
    for i = 1, #want do same(got[i], want[i], tol, path .. "[" .. i .. "]") end
  elseif type(want) == "number" then
    assert(type(got) == "number", path .. ": expected a number, got " .. tostring(got))
    assert(near(got, want, tol),
           string.format("%s: got %.17g, expected %.17g", path, got, want))
  else
    assert(got == want, string.format("%s: got %s, expected %s", path, tostring(got), tostring(want)))
  end
  return true
end

-- Element-wise f over one or two nested tables.
local function map(f, a, b)
  if type(a) ~= "table" and type(b) ~= "table" then return f(a, b) end
  local n = type(a) == "table" and #a or #b
  local out = {}
  for i = 1, n do
    out[i] = map(f, type(a) == "table" and a[i] or a, type(b) == "table" and b[i] or b)
  end
  return out
end

local function flatten(t, out)
  out = out or {}
  if type(t) ~= "table" then out[#out + 1] = t return out end
  for i = 1, #t do flatten(t[i], out) end
  return out
end

local function shape_of(x) return table.concat(x.shape, ",") end

describe("module", function()
  it("is the same table from require and the global", function()
    assert.are.equal(tycho, require "tycho")
    assert.is_string(tycho.version)
    assert.is_true(tycho.version:match("^%d+%.%d+%.%d+") ~= nil)
  end)

  it("tells stores from other values", function()
    assert.is_true(tycho.is_store(tycho.zeros(1)))
    assert.is_false(tycho.is_store({}))
    assert.is_false(tycho.is_store(1))
    assert.are.equal("tycho.store", getmetatable(tycho.zeros(1)).__name)
  end)
end)

describe("creation", function()
  it("zeros, ones and empty have the shape, dtype and values asked for", function()
    local z = tycho.zeros({2, 3})
    assert.are.equal("2,3", shape_of(z))
    assert.are.equal("f64", z.dtype)
    same(z:totable(), {{0, 0, 0}, {0, 0, 0}})
    local zi = tycho.zeros(4, "i32")
    assert.are.equal("i32", zi.dtype)
    same(zi:totable(), {0, 0, 0, 0})
    assert.are.equal("integer", math.type(zi:totable()[1]))
    local o = tycho.ones({2, 2}, "f32")
    assert.are.equal("f32", o.dtype)
    same(o:totable(), {{1, 1}, {1, 1}})
    local e = tycho.empty({3, 4}, "u8")
    assert.are.equal("3,4", shape_of(e))
    assert.are.equal("u8", e.dtype)
    for _, dt in ipairs({"f64", "f32", "i64", "i32", "u8", "bool"}) do
      assert.are.equal(dt, tycho.zeros(2, dt).dtype)
    end
    assert.are.equal("f64", tycho.zeros(2, "float64").dtype)
  end)

  it("makes 0-d and empty stores", function()
    local s = tycho.zeros({})
    assert.are.equal(0, s.ndim)
    assert.are.equal(1, s.size)
    assert.are.equal(0, s:item())
    local e = tycho.zeros({3, 0})
    assert.are.equal(0, e.size)
    same(e:totable(), {{}, {}, {}})
    assert.are.equal(0, e:sum():item())
  end)

  it("full takes its dtype from the value", function()
    local a = tycho.full({2, 3}, 7)
    assert.are.equal("i64", a.dtype)
    same(a:totable(), {{7, 7, 7}, {7, 7, 7}})
    local b = tycho.full(3, 2.5)
    assert.are.equal("f64", b.dtype)
    same(b:totable(), {2.5, 2.5, 2.5})
    local c = tycho.full(2, true)
    assert.are.equal("bool", c.dtype)
    same(c:totable(), {true, true})
    local d = tycho.full(2, 3, "f32")
    assert.are.equal("f32", d.dtype)
    -- 2^53 + 1 does not survive a double: full keeps all 64 bits.
    local big = tycho.full(2, 9007199254740993)
    assert.are.equal(9007199254740993, big[2])
  end)

  it("random is uniform in [0, 1) and repeats after seed", function()
    tycho.seed(42)
    local a = tycho.random(10000)
    local t = a:totable()
    local sum = 0
    for i = 1, #t do
      assert.is_true(t[i] >= 0 and t[i] < 1)
      sum = sum + t[i]
    end
    -- the mean of 10000 uniforms: 0.5 with a standard deviation of 0.0029
    assert.is_true(math.abs(sum / #t - 0.5) < 0.015)
    assert.is_true(near(a:mean():item(), sum / #t, 1e-12))
    local b = tycho.random(10000)
    assert.are_not.same(t, b:totable()) -- each call draws a fresh stream
    tycho.seed(42)
    same(tycho.random(10000):totable(), t)
    tycho.seed(43)
    assert.are_not.same(t, tycho.random(10000):totable())
    local f = tycho.random({3, 4}, "f32")
    assert.are.equal("f32", f.dtype)
    assert.are.equal("3,4", shape_of(f))
    assert.is_true(f:min():item() >= 0 and f:max():item() < 1)
  end)

  it("arange follows numpy (stop exclusive)", function()
    local a = tycho.arange(5)
    assert.are.equal("i64", a.dtype)
    same(a:totable(), {0, 1, 2, 3, 4})
    same(tycho.arange(1, 10, 3):totable(), {1, 4, 7})
    same(tycho.arange(5, 0, -2):totable(), {5, 3, 1})
    same(tycho.arange(2, 2):totable(), {})
    local f = tycho.arange(0, 1, 0.25)
    assert.are.equal("f64", f.dtype)
    same(f:totable(), {0, 0.25, 0.5, 0.75})
    assert.are.equal(3, tycho.arange(0.5, 3):totable()[3] + 0.5)
    local g = tycho.arange(3, "f32")
    assert.are.equal("f32", g.dtype)
    same(g:totable(), {0, 1, 2})
  end)

  it("linspace includes both ends", function()
    local l = tycho.linspace(0, 1, 5)
    assert.are.equal("f64", l.dtype)
    same(l:totable(), {0, 0.25, 0.5, 0.75, 1})
    same(tycho.linspace(2, 2, 1):totable(), {2})
    same(tycho.linspace(-1, 1, 3, "f32"):totable(), {-1, 0, 1})
    assert.are.equal(0, tycho.linspace(0, 1, 0).size)
  end)

  it("arange and linspace give numpy's values bit for bit", function()
    -- numpy 2: np.linspace(-1, 1, 7), np.linspace(-5, 5, 11), np.arange(-1, 1.05, 0.1),
    -- the same with dtype=np.float32 (computed in float, numpy's FLOAT_fill), and
    -- np.arange(1e8, 1e8 + 2, 0.3). One fused multiply-add gave -0x1p-54 for the
    -- first's middle point and differed in 187 of 400 random cases (session 35)
    same(tycho.linspace(-1, 1, 7):totable(), { -0x1.0000000000000p+0, -0x1.5555555555556p-1,
      -0x1.5555555555556p-2, 0x0.0p+0, 0x1.5555555555554p-2, 0x1.5555555555554p-1, 0x1.0000000000000p+0 })
    assert.are.equal(0, tycho.linspace(-5, 5, 11):totable()[6])
    same(tycho.arange(-1, 1.05, 0.1):totable(), { -0x1.0000000000000p+0, -0x1.ccccccccccccdp-1,
      -0x1.999999999999ap-1, -0x1.6666666666667p-1, -0x1.3333333333334p-1, -0x1.0000000000001p-1,
      -0x1.999999999999cp-2, -0x1.3333333333336p-2, -0x1.99999999999a0p-3, -0x1.99999999999a8p-4,
      -0x1.0000000000000p-52, 0x1.9999999999980p-4, 0x1.9999999999990p-3, 0x1.3333333333330p-2,
      0x1.9999999999994p-2, 0x1.ffffffffffff8p-2, 0x1.3333333333330p-1, 0x1.6666666666664p-1,
      0x1.9999999999996p-1, 0x1.cccccccccccc8p-1, 0x1.ffffffffffffcp-1 })
    same(tycho.arange(-1, 1.05, 0.1, "f32"):totable(), { -0x1.0000000000000p+0, -0x1.cccccc0000000p-1,
      -0x1.9999980000000p-1, -0x1.6666640000000p-1, -0x1.3333300000000p-1, -0x1.fffff80000000p-2,
      -0x1.9999900000000p-2, -0x1.3333280000000p-2, -0x1.9999800000000p-3, -0x1.9999600000000p-4,
      0x1.0000000000000p-22, 0x1.9999e00000000p-4, 0x1.9999c00000000p-3, 0x1.3333480000000p-2,
      0x1.9999b00000000p-2, 0x1.00000c0000000p-1, 0x1.3333400000000p-1, 0x1.6666740000000p-1,
      0x1.9999a80000000p-1, 0x1.ccccdc0000000p-1, 0x1.0000080000000p+0 })
    same(tycho.arange(1e8, 1e8 + 2, 0.3):totable(), { 0x1.7d78400000000p+26, 0x1.7d78401333333p+26,
      0x1.7d78402666666p+26, 0x1.7d78403999999p+26, 0x1.7d78404ccccccp+26, 0x1.7d78405ffffffp+26,
      0x1.7d78407333332p+26 })
    -- the same values from any piece: each element from its own index
    tycho.parallel({ mode = "all", min_chunk = 8 }, function()
      same(tycho.linspace(-1, 1, 7):totable()[4], 0.0)
      same(tycho.arange(-1, 1.05, 0.1):totable()[11], -0x1.0000000000000p-52)
    end)
  end)

  it("array infers shape and dtype from nested tables", function()
    local a = tycho.array({{1, 2, 3}, {4, 5, 6}})
    assert.are.equal("2,3", shape_of(a))
    assert.are.equal("i64", a.dtype)
    same(a:totable(), {{1, 2, 3}, {4, 5, 6}})
    assert.are.equal("f64", tycho.array({1, 2.5}).dtype)
    assert.are.equal("bool", tycho.array({true, false}).dtype)
    same(tycho.array({true, false}):totable(), {true, false})
    local c = tycho.array({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}, "f32")
    assert.are.equal("2,2,2", shape_of(c))
    assert.are.equal("f32", c.dtype)
    same(c:totable(), {{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}})
    assert.are.equal("0", shape_of(tycho.array({})))
    local s = tycho.array(3.5)
    assert.are.equal(0, s.ndim)
    assert.are.equal(3.5, s:item())
    same(tycho.array({1.5, -1.5, 300}, "i32"):totable(), {1, -1, 300})
    same(tycho.array({0, 2, 0.5}, "bool"):totable(), {false, true, true})
  end)
end)

describe("element-wise", function()
  local A = {{1.5, -2, 3}, {4, 5.25, -6}}
  local B = {{2, 4, -8}, {0.5, 1, 3}}
  local a, b = tycho.array(A), tycho.array(B)

  it("operators match Lua arithmetic", function()
    same((a + b):totable(), map(function(x, y) return x + y end, A, B))
    same((a - b):totable(), map(function(x, y) return x - y end, A, B))
    same((a * b):totable(), map(function(x, y) return x * y end, A, B))
    same((a / b):totable(), map(function(x, y) return x / y end, A, B))
    same((a % b):totable(), map(function(x, y) return x % y end, A, B))
    same((a ^ b):totable(), map(function(x, y) return x ^ y end, A, B), 1e-15)
    same((-a):totable(), map(function(x) return -x end, A))
  end)

  it("mixes numbers on either side", function()
    same((a + 1):totable(), map(function(x) return x + 1 end, A))
    same((1 + a):totable(), map(function(x) return 1 + x end, A))
    same((10 - a):totable(), map(function(x) return 10 - x end, A))
    same((a * 2.5):totable(), map(function(x) return x * 2.5 end, A))
    same((3 / b):totable(), map(function(x) return 3 / x end, B))
    same((a % 2):totable(), map(function(x) return x % 2 end, A))
    same((a ^ 2):totable(), map(function(x) return x ^ 2 end, A))
    same((2 ^ a):totable(), map(function(x) return 2 ^ x end, A), 1e-15)
    same(tycho.add(a, b):totable(), (a + b):totable())
    same(a:mul(2):totable(), (a * 2):totable())
    same(tycho.sub(1, a):totable(), (1 - a):totable())
  end)

  it("integer stores keep integer arithmetic", function()
    local I = {7, -7, 8}
    local i = tycho.array(I)
    local m = i % 3
    assert.are.equal("i64", m.dtype)
    same(m:totable(), {1, 2, 2}) -- numpy and Lua: the sign of the divisor
    local d = i / 2
    assert.are.equal("f64", d.dtype) -- true division
    same(d:totable(), {3.5, -3.5, 4})
    local p = i * 2
    assert.are.equal("i64", p.dtype)
    assert.are.equal("integer", math.type(p:totable()[1]))
    same(p:totable(), {14, -14, 16})
    assert.are.equal("f64", (i ^ 2).dtype) -- like Lua's ^
  end)

  it("numbers are weak scalars", function()
    assert.are.equal("f32", (tycho.ones(2, "f32") * 2.5).dtype)
    assert.are.equal("f32", (tycho.ones(2, "f32") + 1).dtype)
    assert.are.equal("i32", (tycho.ones(2, "i32") + 1).dtype)
    assert.are.equal("u8", (tycho.ones(2, "u8") * 3).dtype)
    assert.are.equal("f64", (tycho.ones(2, "i64") * 0.5).dtype)
    assert.are.equal("f64", (tycho.ones(2, "i32") * 0.5).dtype)
    assert.are.equal("i64", (tycho.ones(2, "bool") + 1).dtype)
    -- an integer that does not fit the store's dtype is an error, as numpy 2's
    -- OverflowError (issue 21: it used to widen to i64, against docs/dtypes.md)
    assert.is_false(pcall(function() return tycho.ones(2, "i32") + (1 << 40) end))
    assert.is_false(pcall(function() return tycho.ones(2, "u8") + -1 end))
    assert.are.equal("u8", (tycho.ones(2, "u8") - 1).dtype)
    same((tycho.ones(2, "i64") + (1 << 40)):totable(), {(1 << 40) + 1, (1 << 40) + 1})
  end)

  it("stores of different dtypes promote like numpy", function()
    local function dt(x, y) return (tycho.ones(1, x) + tycho.ones(1, y)).dtype end
    assert.are.equal("f64", dt("f32", "f64"))
    assert.are.equal("f64", dt("i64", "f64"))
    assert.are.equal("f64", dt("i32", "f32"))
    assert.are.equal("f32", dt("u8", "f32"))
    assert.are.equal("i64", dt("i32", "i64"))
    assert.are.equal("i32", dt("u8", "i32"))
    assert.are.equal("i64", dt("bool", "bool"))
  end)

  it("math functions match the math library, as functions and methods", function()
    local X = {0.25, 0.5, 1, 2.5, 7.75}
    local x = tycho.array(X)
    local function tanh(v) local e = math.exp(2 * v) return (e - 1) / (e + 1) end
    local cases = {
      exp = math.exp, log = math.log, sqrt = math.sqrt, abs = math.abs,
      sin = math.sin, cos = math.cos, tanh = tanh, floor = math.floor, ceil = math.ceil,
    }
    for name, f in pairs(cases) do
      local want = map(f, X)
      same(tycho[name](x):totable(), want, 1e-14)
      same(x[name](x):totable(), want, 1e-14)
      same(tycho[name](-x):totable(), map(function(v) return f(-v) end, X), 1e-14)
    end
    same(tycho.exp(1):totable(), math.exp(1), 1e-15)
  end)

  it("integer stores keep their dtype through abs, floor, ceil and neg", function()
    local i = tycho.array({-3, 4})
    assert.are.equal("i64", tycho.abs(i).dtype)
    same(tycho.abs(i):totable(), {3, 4})
    assert.are.equal("i64", i:floor().dtype)
    assert.are.equal("i64", (-i).dtype)
    assert.are.equal("f64", i:exp().dtype)
    assert.are.equal("i64", (-tycho.array({true})).dtype)
  end)

  it("maximum, minimum and where", function()
    same(tycho.maximum(a, b):totable(), map(math.max, A, B))
    same(tycho.minimum(a, b):totable(), map(math.min, A, B))
    same(a:maximum(0):totable(), map(function(x) return math.max(x, 0) end, A))
    same(tycho.minimum(0, a):totable(), map(function(x) return math.min(0, x) end, A))
    same(tycho.where(a:gt(0), a, b):totable(),
         map(function(x, y) return x > 0 and x or y end, A, B))
    local w = tycho.where(a:lt(0), 1, 0)
    assert.are.equal("i64", w.dtype)
    same(w:totable(), {{0, 1, 0}, {0, 0, 1}})
    same(tycho.where(a:lt(0), 0, a):totable(), map(function(x) return x < 0 and 0 or x end, A))
    local nan = tycho.maximum(tycho.array({0 / 0, 1}), tycho.array({1, 2})):totable()
    assert.is_true(nan[1] ~= nan[1]) -- NaN propagates
    assert.are.equal(2, nan[2])
  end)

  it("comparisons give bool stores, as functions and methods", function()
    local ops = {
      lt = function(x, y) return x < y end, le = function(x, y) return x <= y end,
      gt = function(x, y) return x > y end, ge = function(x, y) return x >= y end,
      eq = function(x, y) return x == y end, ne = function(x, y) return x ~= y end,
    }
    local C = {{1.5, 4, 3}, {4, 1, -6}}
    local c = tycho.array(C)
    for name, f in pairs(ops) do
      local r = tycho[name](a, c)
      assert.are.equal("bool", r.dtype)
      same(r:totable(), map(f, A, C))
      same(a[name](a, c):totable(), map(f, A, C))
      same(tycho[name](a, 3):totable(), map(function(x) return f(x, 3) end, A))
      same(tycho[name](3, a):totable(), map(function(x) return f(3, x) end, A))
    end
  end)

  it("logical operations", function()
    local p, q = tycho.array({true, true, false, false}), tycho.array({true, false, true, false})
    same(tycho.logical_and(p, q):totable(), {true, false, false, false})
    same(tycho.logical_or(p, q):totable(), {true, true, true, false})
    same(tycho.logical_not(p):totable(), {false, false, true, true})
    same(p:logical_and(q):totable(), {true, false, false, false})
    same(tycho.logical_not(tycho.array({0, 2.5})):totable(), {true, false})
  end)

  it("broadcasts by numpy's rules", function()
    local col = tycho.array({{1}, {2}, {3}})       -- (3, 1)
    local row = tycho.array({{10, 20, 30, 40}})    -- (1, 4)
    local s = col + row
    assert.are.equal("3,4", shape_of(s))
    same(s:totable(), {{11, 21, 31, 41}, {12, 22, 32, 42}, {13, 23, 33, 43}})
    local m = tycho.array({{1, 2, 3}, {4, 5, 6}}) * tycho.array({1, 10, 100}) -- (2,3) * (3,)
    same(m:totable(), {{1, 20, 300}, {4, 50, 600}})
    -- numpy's a[:, None] - b[None, :]
    local u, v = tycho.array({1, 2, 3}), tycho.array({10, 20})
    local d = u:expand(2) - v:expand(1)
    assert.are.equal("3,2", shape_of(d))
    same(d:totable(), {{-9, -19}, {-8, -18}, {-7, -17}})
    same((tycho.zeros({}) + u):totable(), {1, 2, 3})
  end)
end)

describe("reductions", function()
  local M = {{1, 5, 3}, {4, 2, 6}}
  local m = tycho.array(M)

  it("over all elements give 0-d stores", function()
    local s = m:sum()
    assert.are.equal(0, s.ndim)
    assert.are.equal(21, s:item())
    assert.are.equal("integer", math.type(s:item()))
    assert.are.equal(720, m:prod():item())
    assert.are.equal(1, m:min():item())
    assert.are.equal(6, m:max():item())
    assert.are.equal(3.5, m:mean():item())
    assert.are.equal("f64", m:mean().dtype)
    assert.are.equal(6, m:argmax():item()) -- 1-based flat index
    assert.are.equal(1, m:argmin():item())
    assert.are.equal(21, tycho.sum(m):item())
    assert.are.equal(6, tycho.max(m):item())
  end)

  it("over one axis remove it (1-based, negative from the end)", function()
    same(m:sum(1):totable(), {5, 7, 9})
    same(m:sum(2):totable(), {9, 12})
    same(m:sum(-1):totable(), {9, 12})
    same(tycho.sum(m, -2):totable(), {5, 7, 9})
    same(m:prod(2):totable(), {15, 48})
    same(m:min(1):totable(), {1, 2, 3})
    same(m:max(2):totable(), {5, 6})
    same(m:mean(1):totable(), {2.5, 3.5, 4.5})
    same(m:argmax(1):totable(), {2, 1, 2})
    same(m:argmax(2):totable(), {2, 3})
    same(m:argmin(2):totable(), {1, 2})
    same(tycho.argmin(m, 1):totable(), {1, 2, 1})
  end)

  it("float reductions match a Lua loop", function()
    tycho.seed(7)
    local x = tycho.random({50, 40})
    local X = x:totable()
    local total, cols = 0, {}
    for i = 1, 50 do
      for j = 1, 40 do
        total = total + X[i][j]
        cols[j] = (cols[j] or 0) + X[i][j]
      end
    end
    assert.is_true(near(x:sum():item(), total, 1e-12))
    same(x:sum(1):totable(), cols, 1e-12)
    local mx, at = -1, 0
    local flat = flatten(X)
    for k = 1, #flat do if flat[k] > mx then mx, at = flat[k], k end end
    assert.are.equal(mx, x:max():item())
    assert.are.equal(at, x:argmax():item())
    assert.are.equal(mx, flat[x:argmax():item()])
  end)

  it("of empty stores: sum 0, prod 1", function()
    local e = tycho.zeros(0)
    assert.are.equal(0, e:sum():item())
    assert.are.equal(1, e:prod():item())
  end)

  it("item gives the Lua type of the dtype", function()
    assert.are.equal("integer", math.type(tycho.array({3}):item()))
    assert.are.equal("float", math.type(tycho.array({3.0}):item()))
    assert.are.equal(true, tycho.array({true}):item())
    assert.are.equal(5, tycho.full({1, 1, 1}, 5):item())
  end)
end)

describe("linear algebra", function()
  local function lua_matmul(A, B)
    local C = {}
    for i = 1, #A do
      C[i] = {}
      for j = 1, #B[1] do
        local s = 0
        for k = 1, #B do s = s + A[i][k] * B[k][j] end
        C[i][j] = s
      end
    end
    return C
  end

  it("dot, matmul and the method agree with a Lua loop", function()
    tycho.seed(3)
    local a, b = tycho.random({4, 3}), tycho.random({3, 5})
    local want = lua_matmul(a:totable(), b:totable())
    same(tycho.dot(a, b):totable(), want, 1e-14)
    same(tycho.matmul(a, b):totable(), want, 1e-14)
    same(a:dot(b):totable(), want, 1e-14)
    same(a:matmul(b):totable(), want, 1e-14)
    -- through a transposed view
    same(b:t():dot(a:t()):totable(), lua_matmul(b:t():totable(), a:t():totable()), 1e-14)
  end)

  it("handles vectors like numpy", function()
    local A = {{1, 2, 3}, {4, 5, 6}}
    local a, v = tycho.array(A, "f64"), tycho.array({1, 0.5, -1})
    same(a:dot(v):totable(), {-1, 0.5})
    local d = v:dot(v)
    assert.are.equal(0, d.ndim)
    assert.are.equal(2.25, d:item())
    same(tycho.array({1, 2}):dot(a):totable(), {9, 12, 15})
  end)

  it("multiplies integer and f32 matrices", function()
    local i = tycho.array({{1, 2}, {3, 4}})
    local r = i:dot(i)
    assert.are.equal("i64", r.dtype)
    same(r:totable(), {{7, 10}, {15, 22}})
    local f = tycho.array({{1, 2}, {3, 4}}, "f32")
    assert.are.equal("f32", f:dot(f).dtype)
    same(f:dot(f):totable(), {{7, 10}, {15, 22}})
    tycho.seed(11)
    local big_a, big_b = tycho.random({64, 48}), tycho.random({48, 80})
    same(big_a:dot(big_b):totable(), lua_matmul(big_a:totable(), big_b:totable()), 1e-12)
  end)
end)

describe("views", function()
  local function grid() return tycho.arange(12):reshape({3, 4}) end
  -- grid: {{0,1,2,3},{4,5,6,7},{8,9,10,11}}

  it("index with ranges, selections and negatives", function()
    local x = grid()
    same(x[{{2, -2}, {2, -2}}]:totable(), {{5, 6}})
    same(x[{3, {1, -1}}]:totable(), {8, 9, 10, 11})
    assert.are.equal("4", shape_of(x[{3, {1, -1}}]))
    same(x[{{}, 2}]:totable(), {1, 5, 9})
    assert.are.equal("1,4", shape_of(x[{{2}}]))
    same(x[{{2}}]:totable(), {{4, 5, 6, 7}})
    same(x[{{}, {1, -1, 2}}]:totable(), {{0, 2}, {4, 6}, {8, 10}})
    same(x[{{-1, -1}, {-2, -1}}]:totable(), {{10, 11}})
    assert.are.equal("0,4", shape_of(x[{{3, 2}}]))
    same(x[{}]:totable(), x:totable())
    local e = x[{2, 3}]
    assert.are.equal(0, e.ndim)
    assert.are.equal(6, e:item())
  end)

  it("x[i] reads an element of a 1-D store and a row otherwise", function()
    local x = grid()
    same(x[2]:totable(), {4, 5, 6, 7})
    assert.are.equal(6, x[2][3])
    assert.are.equal("integer", math.type(x[2][3]))
    assert.are.equal(11, x[-1][-1])
    assert.are.equal(0.5, tycho.linspace(0, 1, 3)[2])
    assert.are.equal(false, tycho.array({true, false})[2])
    assert.are.equal(3, #x)
    assert.are.equal(4, #x[1])
  end)

  it("narrow, expand, reshape, transpose", function()
    local x = grid()
    same(x:narrow(2, 2, 2):totable(), {{1, 2}, {5, 6}, {9, 10}})
    same(x:narrow(1, -1, 1):totable(), {{8, 9, 10, 11}})
    assert.are.equal("3,0", shape_of(x:narrow(2, 5, 0)))
    assert.are.equal("1,3,4", shape_of(x:expand(1)))
    assert.are.equal("3,1,4", shape_of(x:expand(2)))
    assert.are.equal("3,4,1", shape_of(x:expand(-1)))
    assert.are.equal("3,4,1", shape_of(tycho.expand(x, 3)))
    same(x:reshape({4, 3}):totable(), {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9, 10, 11}})
    same(x:reshape(2, 6):totable(), {{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10, 11}})
    assert.are.equal("6,2", shape_of(x:reshape({-1, 2})))
    assert.are.equal("12", shape_of(x:reshape(12)))
    local t = x:t()
    assert.are.equal("4,3", shape_of(t))
    for i = 1, 3 do for j = 1, 4 do assert.are.equal(x[i][j], t[j][i]) end end
    same(x:transpose():totable(), t:totable())
    same(tycho.transpose(x, 1, 2):totable(), t:totable())
    local c = tycho.arange(24):reshape(2, 3, 4)
    local ct = c:transpose(1, 3)
    assert.are.equal("4,3,2", shape_of(ct))
    assert.are.equal(c[{2, 3, 4}]:item(), ct[{4, 3, 2}]:item())
    assert.are.equal(c[{1, 2, 3}]:item(), c:transpose(-1, -3)[{3, 2, 1}]:item())
    assert.are.equal("5", shape_of(tycho.arange(5):t()))
    -- a non-contiguous view reshapes after a copy
    same(t:copy():reshape(12):totable(), {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11})
    same(t:contiguous():reshape(12):totable(), {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11})
  end)

  it("share storage with their base", function()
    local x = grid()
    local v = x[{{1, 2}, {1, 2}}]
    v:fill(-1)
    same(x:totable(), {{-1, -1, 2, 3}, {-1, -1, 6, 7}, {8, 9, 10, 11}})
    local c = x:copy()
    c:fill(0)
    assert.are.equal(-1, x[1][1])
    local t = x:t()
    t[{1, 3}] = 100 -- x[3][1]
    assert.are.equal(100, x[3][1])
    local r = x:reshape(12)
    r[12] = 99
    assert.are.equal(99, x[3][4])
  end)
end)

describe("assignment", function()
  it("writes numbers and stores into views, broadcasting", function()
    local x = tycho.zeros({3, 4})
    x[{{1, 2}, {2, 3}}] = 5
    same(x:totable(), {{0, 5, 5, 0}, {0, 5, 5, 0}, {0, 0, 0, 0}})
    x[{3}] = tycho.array({1, 2, 3, 4})
    same(x[3]:totable(), {1, 2, 3, 4})
    x[{{}, 4}] = tycho.array({7, 8, 9})
    same(x[{{}, 4}]:totable(), {7, 8, 9})
    x[2] = -1
    same(x[2]:totable(), {-1, -1, -1, -1})
    x[{{}, {1}}] = tycho.array({{10}, {20}, {30}})
    same(x[{{}, 1}]:totable(), {10, 20, 30})
    x[{1, 2}] = true
    assert.are.equal(1, x[1][2])
    local y = tycho.zeros(4, "i64")
    y[2] = 3
    y[-1] = 9007199254740993
    same(y:totable(), {0, 3, 0, 9007199254740993})
  end)

  it("casts to the destination's dtype", function()
    local y = tycho.zeros(3, "i32")
    y[{}] = tycho.array({1.9, -1.9, 2})
    same(y:totable(), {1, -1, 2}) -- truncation toward zero
    assert.are.equal("i32", y.dtype)
  end)

  it("handles overlapping source and destination", function()
    local x = tycho.arange(6)
    x[{{2, -1}}] = x[{{1, -2}}]
    same(x:totable(), {0, 0, 1, 2, 3, 4})
  end)

  it("a stencil through views equals a Lua loop", function()
    local n = 6
    local g = tycho.arange(n * n, "f64"):reshape(n, n)
    local G = g:totable()
    local inner = (g[{{1, -3}, {2, -2}}] + g[{{3, -1}, {2, -2}}]
                   + g[{{2, -2}, {1, -3}}] + g[{{2, -2}, {3, -1}}]) * 0.25
    g[{{2, -2}, {2, -2}}] = inner
    local want = {}
    for i = 1, n do
      want[i] = {}
      for j = 1, n do
        if i > 1 and i < n and j > 1 and j < n then
          want[i][j] = (G[i - 1][j] + G[i + 1][j] + G[i][j - 1] + G[i][j + 1]) * 0.25
        else
          want[i][j] = G[i][j]
        end
      end
    end
    same(g:totable(), want)
  end)

  it("fill, copy and astype", function()
    local x = tycho.zeros({2, 2})
    assert.are.equal(x, x:fill(2.5))
    same(x:totable(), {{2.5, 2.5}, {2.5, 2.5}})
    same(tycho.fill(tycho.zeros(2, "bool"), true):totable(), {true, true})
    local c = tycho.copy(x)
    c[{1, 1}] = 0
    assert.are.equal(2.5, x[1][1])
    local i = tycho.array({1.5, -2.5, 3}):astype("i64")
    assert.are.equal("i64", i.dtype)
    same(i:totable(), {1, -2, 3})
    local f = tycho.arange(3):astype("f32")
    assert.are.equal("f32", f.dtype)
    same(f:totable(), {0, 1, 2})
    same(tycho.array({0, 3}):astype("bool"):totable(), {false, true})
    local same_dtype = x:astype("f64")
    same_dtype:fill(0)
    assert.are.equal(2.5, x[1][1]) -- astype copies
  end)
end)

describe("fields and output", function()
  it("shape, dtype, ndim, size and #", function()
    local x = tycho.zeros({2, 3, 4}, "i32")
    local s = x.shape
    same(s, {2, 3, 4})
    s[1] = 100 -- a new table each time
    same(x.shape, {2, 3, 4})
    assert.are.equal("i32", x.dtype)
    assert.are.equal(3, x.ndim)
    assert.are.equal(24, x.size)
    assert.are.equal(2, #x)
    assert.are.equal(96, x.nbytes)
    assert.are.equal(4, x.itemsize)
    same(x.T.shape, {4, 3, 2})
    -- a misspelt field is an error that lists the fields, not a nil
    local ok, err = pcall(function() return x.nosuchfield end)
    assert.is_false(ok)
    assert.truthy(err:find("store has no field or method 'nosuchfield'", 1, true))
    assert.truthy(err:find("shape, dtype, ndim, size, nbytes, itemsize, T", 1, true))
  end)

  it("tostring shows values, shape and dtype", function()
    local x = tycho.array({{1.5, 2}, {3, 4}})
    local text = tostring(x)
    assert.is_truthy(text:find("(2, 2)", 1, true))
    assert.is_truthy(text:find("f64", 1, true))
    assert.is_truthy(text:find("1.5", 1, true))
    local big = tostring(tycho.arange(100000))
    assert.is_truthy(big:find("...", 1, true))
    assert.is_truthy(big:find("99999", 1, true))
    assert.is_true(#big < 2000)
    assert.is_truthy(tostring(tycho.zeros(3, "bool")):find("bool", 1, true))
  end)

  it("totable nests by dimension; 0-d gives a number", function()
    same(tycho.arange(6):reshape(3, 1, 2):totable(), {{{0, 1}}, {{2, 3}}, {{4, 5}}})
    assert.are.equal(7, tycho.full({}, 7):totable())
    same(tycho.array({1, 2}, "u8"):totable(), {1, 2})
  end)
end)

describe("runtime", function()
  it("flush, stats, config and memory", function()
    local before = tycho.stats()
    for _, k in ipairs({"launches", "flushes", "pieces", "bytes_allocated", "bytes_live",
                        "bytes_peak", "bytes_reserved", "stores_live"}) do
      assert.are.equal("integer", math.type(before[k]), k)
      assert.is_true(before[k] >= 0, k)
    end
    local x = tycho.ones(1000) * 2
    tycho.flush()
    local after = tycho.stats()
    assert.is_true(after.launches >= before.launches + 2)
    assert.is_true(after.flushes >= before.flushes + 1)
    assert.is_true(after.pieces >= before.pieces + 1) -- fill and mul may fuse into one launch
    -- the ones(1000) temporary may be fused away: only the result is allocated
    assert.is_true(after.bytes_allocated >= before.bytes_allocated + 8000)
    assert.is_true(after.bytes_peak >= after.bytes_live)
    assert.is_true(after.stores_live >= 1)
    assert.are.equal(2000, x:sum():item())

    local c = tycho.config()
    assert.are.equal("integer", math.type(c.cpus))
    assert.is_true(c.cpus >= 1)
    assert.is_true(c.sysmem > 0)
    assert.is_true(c.window >= 1)
    assert.are.equal(tycho.version, c.version)

    local m = tycho.memory()
    assert.are.equal(c.sysmem, m.budget)
    assert.is_true(m.peak >= m.live)
    assert.is_true(m.reserved >= 8000)
  end)

  it("clock is monotonic with sub-millisecond steps", function()
    local t0 = tycho.clock()
    assert.are.equal("float", math.type(t0))
    -- the smallest of 100 steps: one step may hold a preemption of the
    -- process (the ASan suite beside other tests saw 1 ms once)
    local smallest = math.huge
    for _ = 1, 100 do
      local t1 = tycho.clock()
      while t1 == t0 do t1 = tycho.clock() end
      assert.is_true(t1 > t0)
      smallest = math.min(smallest, t1 - t0)
      t0 = t1
    end
    assert.is_true(smallest < 1e-3)
  end)

  it("__close releases a store at the end of its scope", function()
    collectgarbage()
    collectgarbage("stop") -- only the close may release a store here
    tycho.flush()          -- pending launches hold references too
    local live = tycho.stats().stores_live
    local keep
    do
      local x <close> = tycho.zeros(10)
      keep = x
      tycho.flush()
      assert.are.equal(live + 1, tycho.stats().stores_live)
    end
    tycho.flush()
    local after = tycho.stats().stores_live
    collectgarbage("restart")
    assert.are.equal(live, after)
    assert.are.equal("tycho.store (closed)", tostring(keep))
  end)

  it("temporaries Lua drops are collected before they pile up", function()
    -- 2000 stores of 256 KiB (500 MiB) are made and dropped. Lua's heap grows
    -- by ~100 bytes per store, too little for it to collect on its own; the
    -- binding counts store bytes and collects every 64 MiB of them once the
    -- allocated bytes grew by 64 MiB too (or when store memory may have
    -- doubled), so about that much stays reserved.
    -- empty() charges the budget without a launch or any writing.
    collectgarbage()
    local y
    local most = 0
    for i = 1, 2000 do
      y = tycho.empty(32768)
      if i % 50 == 0 then most = math.max(most, tycho.memory().reserved) end
    end
    assert.is_true(most < 128 * 1024 * 1024, "reserved " .. most)
    -- The same with launches: 200 stores of 1 MiB. Pending launches (a
    -- window of 64) hold their stores too until the window is flushed, so
    -- up to 64 MiB more stay reserved; without collection all 200 MiB would.
    collectgarbage()
    local x = tycho.ones(131072)
    most = 0
    for i = 1, 200 do
      y = x * 2
      if i % 10 == 0 then most = math.max(most, tycho.memory().reserved) end
    end
    assert.are.equal(262144, y:sum():item())
    assert.is_true(most < 160 * 1024 * 1024, "reserved " .. most)
  end)

  -- An object only a full collection finalises: old (it survived two full
  -- collections), then dropped.
  local function old_object()
    local state = { finalised = false }
    local old = setmetatable({}, { __gc = function() state.finalised = true end })
    collectgarbage()
    collectgarbage()
    old = nil
    return state
  end

  it("results the window has not allocated cost no full collection", function()
    -- 40 launches of 9 MiB (360 MiB of new stores) in one window allocate
    -- nothing before their flush, so the binding does not collect fully
    -- during the window (it cost the stencil at 768^2 5%); the flush's
    -- hook collects fully (a store of 8 MiB or more).
    local x = tycho.ones(1179648)
    tycho.flush()
    local old = old_object()
    local flushes = tycho.stats().flushes
    local y
    for _ = 1, 40 do y = x * 2 end
    assert.are.equal(flushes, tycho.stats().flushes)
    assert.is_false(old.finalised)
    assert.are.equal(2 * 1179648, y:sum():item())
    assert.is_true(old.finalised)
  end)

  it("a flush whose stores are all under 8 MiB takes a minor collection", function()
    -- 20 stores of 1 MiB (20 MiB in all): a minor collection at the flush
    -- (a full one was 8% of CG at 256^2); a store of 8 MiB: a full one
    local x = tycho.ones(131072)
    tycho.flush()
    local old = old_object()
    local y
    for _ = 1, 20 do y = x * 2 end
    assert.are.equal(2 * 131072, y:sum():item())
    assert.is_false(old.finalised)
    local z = tycho.ones(1048576) * 2
    assert.are.equal(2 * 1048576, z:sum():item())
    assert.is_true(old.finalised)
  end)
end)
