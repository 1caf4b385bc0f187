-- binding_fast_spec.lua — the arithmetic operators' fast path (lops.c's
-- meta_binary: the runtime box read once, the tl_*_in helpers, the constant
-- cache read from one stack read) and the tagged store userdata (tl.h,
-- tl_slot_tagged) against the functions' path (tycho.add ...) and numpy.
--
-- Expected values: numpy 1.24 with numpy 2's weak scalars spelt out (the
-- number given the dtype tycho's rule gives it, docs/dtypes.md):
--   x = np.array([0, 1, 2, 250]).astype(d); w = the number's dtype
--   right: op(x, np.array(n, w)); left: op(np.array(n, w), x);
--   store: op(x, x[::-1])
local CASES = {
  {"f64", "add", "right", 2, "f64", {2.0, 3.0, 4.0, 252.0}},
  {"f64", "add", "left", 2, "f64", {2.0, 3.0, 4.0, 252.0}},
  {"f64", "add", "right", 0.5, "f64", {0.5, 1.5, 2.5, 250.5}},
  {"f64", "add", "left", 0.5, "f64", {0.5, 1.5, 2.5, 250.5}},
  {"f64", "add", "right", 7, "f64", {7.0, 8.0, 9.0, 257.0}},
  {"f64", "add", "left", 7, "f64", {7.0, 8.0, 9.0, 257.0}},
  {"f64", "add", "store", 0, "f64", {250.0, 3.0, 3.0, 250.0}},
  {"f64", "sub", "right", 2, "f64", {-2.0, -1.0, 0.0, 248.0}},
  {"f64", "sub", "left", 2, "f64", {2.0, 1.0, 0.0, -248.0}},
  {"f64", "sub", "right", 0.5, "f64", {-0.5, 0.5, 1.5, 249.5}},
  {"f64", "sub", "left", 0.5, "f64", {0.5, -0.5, -1.5, -249.5}},
  {"f64", "sub", "right", 7, "f64", {-7.0, -6.0, -5.0, 243.0}},
  {"f64", "sub", "left", 7, "f64", {7.0, 6.0, 5.0, -243.0}},
  {"f64", "sub", "store", 0, "f64", {-250.0, -1.0, 1.0, 250.0}},
  {"f64", "mul", "right", 2, "f64", {0.0, 2.0, 4.0, 500.0}},
  {"f64", "mul", "left", 2, "f64", {0.0, 2.0, 4.0, 500.0}},
  {"f64", "mul", "right", 0.5, "f64", {0.0, 0.5, 1.0, 125.0}},
  {"f64", "mul", "left", 0.5, "f64", {0.0, 0.5, 1.0, 125.0}},
  {"f64", "mul", "right", 7, "f64", {0.0, 7.0, 14.0, 1750.0}},
  {"f64", "mul", "left", 7, "f64", {0.0, 7.0, 14.0, 1750.0}},
  {"f64", "mul", "store", 0, "f64", {0.0, 2.0, 2.0, 0.0}},
  {"f64", "div", "right", 2, "f64", {0.0, 0.5, 1.0, 125.0}},
  {"f64", "div", "left", 2, "f64", {math.huge, 2.0, 1.0, 0.008}},
  {"f64", "div", "right", 0.5, "f64", {0.0, 2.0, 4.0, 500.0}},
  {"f64", "div", "left", 0.5, "f64", {math.huge, 0.5, 0.25, 0.002}},
  {"f64", "div", "right", 7, "f64", {0.0, 0.14285714285714285, 0.2857142857142857, 35.714285714285715}},
  {"f64", "div", "left", 7, "f64", {math.huge, 7.0, 3.5, 0.028}},
  {"f64", "div", "store", 0, "f64", {0.0, 0.5, 2.0, math.huge}},
  {"f32", "add", "right", 2, "f32", {2.0, 3.0, 4.0, 252.0}},
  {"f32", "add", "left", 2, "f32", {2.0, 3.0, 4.0, 252.0}},
  {"f32", "add", "right", 0.5, "f32", {0.5, 1.5, 2.5, 250.5}},
  {"f32", "add", "left", 0.5, "f32", {0.5, 1.5, 2.5, 250.5}},
  {"f32", "add", "right", 7, "f32", {7.0, 8.0, 9.0, 257.0}},
  {"f32", "add", "left", 7, "f32", {7.0, 8.0, 9.0, 257.0}},
  {"f32", "add", "store", 0, "f32", {250.0, 3.0, 3.0, 250.0}},
  {"f32", "sub", "right", 2, "f32", {-2.0, -1.0, 0.0, 248.0}},
  {"f32", "sub", "left", 2, "f32", {2.0, 1.0, 0.0, -248.0}},
  {"f32", "sub", "right", 0.5, "f32", {-0.5, 0.5, 1.5, 249.5}},
  {"f32", "sub", "left", 0.5, "f32", {0.5, -0.5, -1.5, -249.5}},
  {"f32", "sub", "right", 7, "f32", {-7.0, -6.0, -5.0, 243.0}},
  {"f32", "sub", "left", 7, "f32", {7.0, 6.0, 5.0, -243.0}},
  {"f32", "sub", "store", 0, "f32", {-250.0, -1.0, 1.0, 250.0}},
  {"f32", "mul", "right", 2, "f32", {0.0, 2.0, 4.0, 500.0}},
  {"f32", "mul", "left", 2, "f32", {0.0, 2.0, 4.0, 500.0}},
  {"f32", "mul", "right", 0.5, "f32", {0.0, 0.5, 1.0, 125.0}},
  {"f32", "mul", "left", 0.5, "f32", {0.0, 0.5, 1.0, 125.0}},
  {"f32", "mul", "right", 7, "f32", {0.0, 7.0, 14.0, 1750.0}},
  {"f32", "mul", "left", 7, "f32", {0.0, 7.0, 14.0, 1750.0}},
  {"f32", "mul", "store", 0, "f32", {0.0, 2.0, 2.0, 0.0}},
  {"f32", "div", "right", 2, "f32", {0.0, 0.5, 1.0, 125.0}},
  {"f32", "div", "left", 2, "f32", {math.huge, 2.0, 1.0, 0.00800000037997961}},
  {"f32", "div", "right", 0.5, "f32", {0.0, 2.0, 4.0, 500.0}},
  {"f32", "div", "left", 0.5, "f32", {math.huge, 0.5, 0.25, 0.0020000000949949026}},
  {"f32", "div", "right", 7, "f32", {0.0, 0.1428571492433548, 0.2857142984867096, 35.71428680419922}},
  {"f32", "div", "left", 7, "f32", {math.huge, 7.0, 3.5, 0.02800000086426735}},
  {"f32", "div", "store", 0, "f32", {0.0, 0.5, 2.0, math.huge}},
  {"i64", "add", "right", 2, "i64", {2, 3, 4, 252}},
  {"i64", "add", "left", 2, "i64", {2, 3, 4, 252}},
  {"i64", "add", "right", 0.5, "f64", {0.5, 1.5, 2.5, 250.5}},
  {"i64", "add", "left", 0.5, "f64", {0.5, 1.5, 2.5, 250.5}},
  {"i64", "add", "right", 7, "i64", {7, 8, 9, 257}},
  {"i64", "add", "left", 7, "i64", {7, 8, 9, 257}},
  {"i64", "add", "store", 0, "i64", {250, 3, 3, 250}},
  {"i64", "sub", "right", 2, "i64", {-2, -1, 0, 248}},
  {"i64", "sub", "left", 2, "i64", {2, 1, 0, -248}},
  {"i64", "sub", "right", 0.5, "f64", {-0.5, 0.5, 1.5, 249.5}},
  {"i64", "sub", "left", 0.5, "f64", {0.5, -0.5, -1.5, -249.5}},
  {"i64", "sub", "right", 7, "i64", {-7, -6, -5, 243}},
  {"i64", "sub", "left", 7, "i64", {7, 6, 5, -243}},
  {"i64", "sub", "store", 0, "i64", {-250, -1, 1, 250}},
  {"i64", "mul", "right", 2, "i64", {0, 2, 4, 500}},
  {"i64", "mul", "left", 2, "i64", {0, 2, 4, 500}},
  {"i64", "mul", "right", 0.5, "f64", {0.0, 0.5, 1.0, 125.0}},
  {"i64", "mul", "left", 0.5, "f64", {0.0, 0.5, 1.0, 125.0}},
  {"i64", "mul", "right", 7, "i64", {0, 7, 14, 1750}},
  {"i64", "mul", "left", 7, "i64", {0, 7, 14, 1750}},
  {"i64", "mul", "store", 0, "i64", {0, 2, 2, 0}},
  {"i64", "div", "right", 2, "f64", {0.0, 0.5, 1.0, 125.0}},
  {"i64", "div", "left", 2, "f64", {math.huge, 2.0, 1.0, 0.008}},
  {"i64", "div", "right", 0.5, "f64", {0.0, 2.0, 4.0, 500.0}},
  {"i64", "div", "left", 0.5, "f64", {math.huge, 0.5, 0.25, 0.002}},
  {"i64", "div", "right", 7, "f64", {0.0, 0.14285714285714285, 0.2857142857142857, 35.714285714285715}},
  {"i64", "div", "left", 7, "f64", {math.huge, 7.0, 3.5, 0.028}},
  {"i64", "div", "store", 0, "f64", {0.0, 0.5, 2.0, math.huge}},
  {"i32", "add", "right", 2, "i32", {2, 3, 4, 252}},
  {"i32", "add", "left", 2, "i32", {2, 3, 4, 252}},
  {"i32", "add", "right", 0.5, "f64", {0.5, 1.5, 2.5, 250.5}},
  {"i32", "add", "left", 0.5, "f64", {0.5, 1.5, 2.5, 250.5}},
  {"i32", "add", "right", 7, "i32", {7, 8, 9, 257}},
  {"i32", "add", "left", 7, "i32", {7, 8, 9, 257}},
  {"i32", "add", "store", 0, "i32", {250, 3, 3, 250}},
  {"i32", "sub", "right", 2, "i32", {-2, -1, 0, 248}},
  {"i32", "sub", "left", 2, "i32", {2, 1, 0, -248}},
  {"i32", "sub", "right", 0.5, "f64", {-0.5, 0.5, 1.5, 249.5}},
  {"i32", "sub", "left", 0.5, "f64", {0.5, -0.5, -1.5, -249.5}},
  {"i32", "sub", "right", 7, "i32", {-7, -6, -5, 243}},
  {"i32", "sub", "left", 7, "i32", {7, 6, 5, -243}},
  {"i32", "sub", "store", 0, "i32", {-250, -1, 1, 250}},
  {"i32", "mul", "right", 2, "i32", {0, 2, 4, 500}},
  {"i32", "mul", "left", 2, "i32", {0, 2, 4, 500}},
  {"i32", "mul", "right", 0.5, "f64", {0.0, 0.5, 1.0, 125.0}},
  {"i32", "mul", "left", 0.5, "f64", {0.0, 0.5, 1.0, 125.0}},
  {"i32", "mul", "right", 7, "i32", {0, 7, 14, 1750}},
  {"i32", "mul", "left", 7, "i32", {0, 7, 14, 1750}},
  {"i32", "mul", "store", 0, "i32", {0, 2, 2, 0}},
  {"i32", "div", "right", 2, "f64", {0.0, 0.5, 1.0, 125.0}},
  {"i32", "div", "left", 2, "f64", {math.huge, 2.0, 1.0, 0.008}},
  {"i32", "div", "right", 0.5, "f64", {0.0, 2.0, 4.0, 500.0}},
  {"i32", "div", "left", 0.5, "f64", {math.huge, 0.5, 0.25, 0.002}},
  {"i32", "div", "right", 7, "f64", {0.0, 0.14285714285714285, 0.2857142857142857, 35.714285714285715}},
  {"i32", "div", "left", 7, "f64", {math.huge, 7.0, 3.5, 0.028}},
  {"i32", "div", "store", 0, "f64", {0.0, 0.5, 2.0, math.huge}},
  {"u8", "add", "right", 2, "u8", {2, 3, 4, 252}},
  {"u8", "add", "left", 2, "u8", {2, 3, 4, 252}},
  {"u8", "add", "right", 0.5, "f64", {0.5, 1.5, 2.5, 250.5}},
  {"u8", "add", "left", 0.5, "f64", {0.5, 1.5, 2.5, 250.5}},
  {"u8", "add", "right", 7, "u8", {7, 8, 9, 1}},
  {"u8", "add", "left", 7, "u8", {7, 8, 9, 1}},
  {"u8", "add", "store", 0, "u8", {250, 3, 3, 250}},
  {"u8", "sub", "right", 2, "u8", {254, 255, 0, 248}},
  {"u8", "sub", "left", 2, "u8", {2, 1, 0, 8}},
  {"u8", "sub", "right", 0.5, "f64", {-0.5, 0.5, 1.5, 249.5}},
  {"u8", "sub", "left", 0.5, "f64", {0.5, -0.5, -1.5, -249.5}},
  {"u8", "sub", "right", 7, "u8", {249, 250, 251, 243}},
  {"u8", "sub", "left", 7, "u8", {7, 6, 5, 13}},
  {"u8", "sub", "store", 0, "u8", {6, 255, 1, 250}},
  {"u8", "mul", "right", 2, "u8", {0, 2, 4, 244}},
  {"u8", "mul", "left", 2, "u8", {0, 2, 4, 244}},
  {"u8", "mul", "right", 0.5, "f64", {0.0, 0.5, 1.0, 125.0}},
  {"u8", "mul", "left", 0.5, "f64", {0.0, 0.5, 1.0, 125.0}},
  {"u8", "mul", "right", 7, "u8", {0, 7, 14, 214}},
  {"u8", "mul", "left", 7, "u8", {0, 7, 14, 214}},
  {"u8", "mul", "store", 0, "u8", {0, 2, 2, 0}},
  {"u8", "div", "right", 2, "f64", {0.0, 0.5, 1.0, 125.0}},
  {"u8", "div", "left", 2, "f64", {math.huge, 2.0, 1.0, 0.008}},
  {"u8", "div", "right", 0.5, "f64", {0.0, 2.0, 4.0, 500.0}},
  {"u8", "div", "left", 0.5, "f64", {math.huge, 0.5, 0.25, 0.002}},
  {"u8", "div", "right", 7, "f64", {0.0, 0.14285714285714285, 0.2857142857142857, 35.714285714285715}},
  {"u8", "div", "left", 7, "f64", {math.huge, 7.0, 3.5, 0.028}},
  {"u8", "div", "store", 0, "f64", {0.0, 0.5, 2.0, math.huge}},
  {"bool", "add", "right", 2, "i64", {2, 3, 3, 3}},
  {"bool", "add", "left", 2, "i64", {2, 3, 3, 3}},
  {"bool", "add", "right", 0.5, "f64", {0.5, 1.5, 1.5, 1.5}},
  {"bool", "add", "left", 0.5, "f64", {0.5, 1.5, 1.5, 1.5}},
  {"bool", "add", "right", 7, "i64", {7, 8, 8, 8}},
  {"bool", "add", "left", 7, "i64", {7, 8, 8, 8}},
  {"bool", "mul", "right", 2, "i64", {0, 2, 2, 2}},
  {"bool", "mul", "left", 2, "i64", {0, 2, 2, 2}},
  {"bool", "mul", "right", 0.5, "f64", {0.0, 0.5, 0.5, 0.5}},
  {"bool", "mul", "left", 0.5, "f64", {0.0, 0.5, 0.5, 0.5}},
  {"bool", "mul", "right", 7, "i64", {0, 7, 7, 7}},
  {"bool", "mul", "left", 7, "i64", {0, 7, 7, 7}},
  {"bool", "div", "right", 2, "f64", {0.0, 0.5, 0.5, 0.5}},
  {"bool", "div", "left", 2, "f64", {math.huge, 2.0, 2.0, 2.0}},
  {"bool", "div", "right", 0.5, "f64", {0.0, 2.0, 2.0, 2.0}},
  {"bool", "div", "left", 0.5, "f64", {math.huge, 0.5, 0.5, 0.5}},
  {"bool", "div", "right", 7, "f64", {0.0, 0.14285714285714285, 0.14285714285714285, 0.14285714285714285}},
  {"bool", "div", "left", 7, "f64", {math.huge, 7.0, 7.0, 7.0}},
}

local FN = { add = tycho.add, sub = tycho.sub, mul = tycho.mul, div = tycho.div }
local OP = {
  add = function(a, b) return a + b end,
  sub = function(a, b) return a - b end,
  mul = function(a, b) return a * b end,
  div = function(a, b) return a / b end,
}

describe("the operators' fast path", function()
  it("gives numpy's dtype and values for every dtype, number and side", function()
    for _, c in ipairs(CASES) do
      local d, op, side, n, dtype, want = c[1], c[2], c[3], c[4], c[5], c[6]
      local what = d .. " " .. op .. " " .. side .. " " .. tostring(n)
      local x = tycho.array({0, 1, 2, 250}):astype(d)
      local a, b
      if side == "right" then a, b = x, n
      elseif side == "left" then a, b = n, x
      else a, b = x, x[{{4, 1, -1}}] end -- a reversed view
      local r = OP[op](a, b)
      assert.are.equal(dtype, r.dtype, what)
      local got = r:totable()
      spec_same(got, want, what)
      -- the function's path: the same dtype and the same bits
      local f = FN[op](a, b)
      assert.are.equal(dtype, f.dtype, what)
      spec_same(got, f:totable(), what)
    end
  end)

  it("keeps 1 and 1.0 apart in the constant cache within one window", function()
    -- numpy: x = np.array([1, 2, 3], np.int32); x + 1 (i32), x + 1.0 (f64)
    local x = tycho.array({1, 2, 3}):astype("i32")
    local a, b, c, e = x + 1, x + 1.0, 1 + x, 1.0 * x
    assert.are.equal("i32", a.dtype)
    assert.are.equal("f64", b.dtype)
    assert.are.equal("i32", c.dtype)
    assert.are.equal("f64", e.dtype)
    spec_same(a:totable(), {2, 3, 4})
    spec_same(b:totable(), {2, 3, 4})
    assert.is_true(math.type(b:totable()[1]) == "float")
    assert.is_true(math.type(a:totable()[1]) == "integer")
    -- the same number next to stores of two dtypes: a constant each
    local y = tycho.array({1.5, 2.5}):astype("f32")
    local p, q = y * 0.1, tycho.array({1.5, 2.5}) * 0.1
    assert.are.equal("f32", p.dtype)
    assert.are.equal("f64", q.dtype)
    -- numpy: np.array([1.5, 2.5], np.float32) * np.float32(0.1)
    spec_same(p:totable(), {0.15000000596046448, 0.25})
    spec_same(q:totable(), {0.15000000000000002, 0.25})
  end)

  it("takes 0-d stores and views on either side", function()
    -- numpy: x = np.arange(6.0).reshape(2, 3); s = x.sum() (15.0)
    local x = tycho.arange(6):astype("f64"):reshape({2, 3})
    local s = x:sum()
    assert.are.equal(0, s.ndim)
    spec_same((s * x):totable(), {{0, 15, 30}, {45, 60, 75}})
    spec_same((x - s):totable(), {{-15, -14, -13}, {-12, -11, -10}})
    assert.are.equal(7.5, (s / 2):item())
    assert.are.equal(-13, (2 - s):item())
    assert.are.equal(225, (s * s):item())
    -- x[:, 1:3] + x[:, 0:2] and a row view times a number
    spec_same((x[{{}, {2, 3}}] + x[{{}, {1, 2}}]):totable(), {{1, 3}, {7, 9}})
    spec_same((x[2] * 0.5):totable(), {1.5, 2, 2.5})
    spec_same((0.5 * x[2]):totable(), {1.5, 2, 2.5})
  end)

  it("raises the functions' errors, naming the function and the argument", function()
    local x = tycho.array({1, 2, 3}):astype("u8")
    spec_fails({"tycho.add", "the integer 300 is out of range for u8 (0..255)"},
               function() return x + 300 end)
    spec_fails({"tycho.sub", "the integer -1 is out of range for u8 (0..255)"},
               function() return -1 - x end)
    -- io.stdout is a 16-byte userdata, the size of a store's: not a store
    spec_fails({"tycho.add", "argument 2 must be a store or a number, got userdata"},
               function() return x + io.stdout end)
    spec_fails({"tycho.mul", "argument 1 must be a store or a number, got userdata"},
               function() return io.stdout * x end)
    spec_fails({"tycho.div", "argument 2 must be a store or a number, got string"},
               function() return x / "2" end)
    spec_fails({"tycho.mod", "argument 1 must be a store or a number, got nil"},
               function() return getmetatable(x).__mod(nil, x) end)
    -- a closed store, either side, next to a number or a store
    local keep
    do
      local y <close> = x * 2
      keep = y
    end
    spec_fails({"tycho.add: argument 1 is a closed store"}, function() return keep + 1 end)
    spec_fails({"tycho.mul: argument 2 is a closed store"}, function() return 2 * keep end)
    spec_fails({"tycho.sub: argument 1 is a closed store"}, function() return keep - x end)
    spec_fails({"tycho.sub: argument 2 is a closed store"}, function() return x - keep end)
  end)

  it("closes only stores: __close refuses other values and leaves them alone", function()
    -- in the shell's state stores have no __gc (lua/lheap.c); __close is the
    -- function __gc is under stock lua5.4
    local gc = getmetatable(tycho.zeros(1)).__close
    spec_fails({"tycho.store expected, got FILE*"}, function() return gc(io.stdout) end)
    spec_fails({"tycho.store expected, got table"}, function() return gc({}) end)
    assert.is_true(io.type(io.stdout) == "file")
    -- called on a store it closes it, as __close does
    local x = tycho.ones(2)
    gc(x)
    spec_fails({"tycho.sum: argument 1 is a closed store"}, function() return x:sum() end)
    gc(x) -- twice: nothing to release
  end)

  it("runs a loop of temporaries to numpy's values, collected as it goes", function()
    -- numpy: x = np.arange(10) * 0.5; 300 times x = (x * 0.5 + 1) - x / 4
    local live0 = tycho.stats().stores_live
    local x = tycho.arange(10) * 0.5
    for _ = 1, 300 do x = (x * 0.5 + 1) - x / 4 end
    spec_same(x:totable(), {1.3333333333333333, 1.3333333333333333, 1.3333333333333333,
                            1.3333333333333335, 1.3333333333333335, 1.3333333333333335,
                            1.3333333333333335, 1.3333333333333335, 1.3333333333333335,
                            1.3333333333333335})
    collectgarbage()
    collectgarbage()
    assert.is_true(tycho.stats().stores_live <= live0 + 4)
  end)
end)
