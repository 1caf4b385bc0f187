-- dtype_rules_spec.lua — each conversion and result-dtype rule of
-- docs/dtypes.md that issue 21 (item 10) found the code contradicting, one
-- case per rule, with numpy's answer or tycho's documented choice.

local function fails(want, f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok, "expected an error containing '" .. want .. "', got success")
  assert(tostring(err):find(want, 1, true), "expected '" .. want .. "' in: " .. tostring(err))
end

describe("dtype rules", function()
  it("bool with bool in dot/matmul is bool (numpy: any of the products)", function()
    local a, b = tycho.array({true, false, true}), tycho.array({true, true, false})
    local d = tycho.dot(a, b)
    assert.are.equal("bool", d.dtype)
    assert.are.equal(true, d:item())
    assert.are.equal(false, tycho.dot(a, tycho.array({false, true, false})):item())
    local m = tycho.matmul(tycho.array({{true, false}, {false, false}}),
                           tycho.array({{true, false}, {true, true}}))
    assert.are.equal("bool", m.dtype)
    assert.are.same({{true, false}, {false, false}}, m:totable())
    -- the empty case keeps the dtype
    assert.are.equal("bool", tycho.matmul(tycho.zeros({0, 2}, "bool"), tycho.zeros({2, 3}, "bool")).dtype)
    -- bool with a wider dtype promotes as documented
    assert.are.equal("u8", tycho.dot(a, tycho.array({1, 2, 3}, "u8")).dtype)
  end)

  it("a Lua integer next to an integer store keeps the store's dtype or is refused (numpy 2)", function()
    local x = tycho.array({1, 2}, "u8")
    assert.are.equal("u8", (x + 200).dtype)
    fails("tycho.add: the integer 300 is out of range for u8 (0..255)", function() return x + 300 end)
    fails("tycho.add: the integer 300 is out of range for u8 (0..255)", function() return 300 + x end)
    fails("tycho.mul: the integer -1 is out of range for u8 (0..255)", function() return x * -1 end)
    fails("tycho.maximum: the integer 256 is out of range for u8", tycho.maximum, x, 256)
    fails("tycho.where: the integer 300 is out of range for u8",
          tycho.where, tycho.array({true, false}), x, 300)
    fails("the integer 2147483648 is out of range for i32", function()
      return tycho.ones(2, "i32") + (1 << 31)
    end)
    -- comparisons are exact, as numpy 2's
    assert.are.same({false, false}, x:gt(300):totable())
    assert.are.same({true, true}, x:gt(-1):totable())
    assert.are.same({true, true}, x:ne(257):totable())
    -- wrapping arithmetic within the dtype stays as numpy's
    assert.are.same({255, 0}, (x - 2):totable())
  end)

  it("full with an integer is i64 and astype wraps to u8, as numpy", function()
    local f = tycho.full({2}, 300)
    assert.are.equal("i64", f.dtype)
    assert.are.same({44, 44}, f:astype("u8"):totable())
    assert.are.same({-1, -1}, tycho.full({2}, (1 << 32) - 1):astype("i32"):totable())
  end)

  it("a float converts to an integer by truncation, saturating beyond the range (astype and fill alike)", function()
    assert.are.same({255, 255}, tycho.full({2}, 300.0):astype("u8"):totable())
    assert.are.same({0, 2}, tycho.array({-1.5, 2.9}):astype("u8"):totable())
    local x = tycho.zeros({2}, "u8")
    x:fill(-1.0)
    assert.are.same({0, 0}, x:totable())
    x:fill(300.5)
    assert.are.same({255, 255}, x:totable())
    assert.are.same({0}, tycho.array({0 / 0}):astype("i32"):totable())
    assert.are.same({2147483647}, tycho.array({1e300}):astype("i32"):totable())
    assert.are.same({255}, tycho.array({1e300}, "u8"):totable())
  end)

  it("a Lua integer stored into an integer store must fit (fill, full, array, assignment)", function()
    local x = tycho.zeros({2}, "u8")
    fails("tycho.fill: the integer -1 is out of range for u8 (0..255)", x.fill, x, -1)
    fails("tycho.full: the integer 300 is out of range for u8", tycho.full, {2}, 300, "u8")
    fails("tycho.array: the integer 256 is out of range for u8", tycho.array, {1, 256}, "u8")
    fails("the integer 256 is out of range for u8", function() x[1] = 256 end)
    fails("the integer -2147483649 is out of range for i32", tycho.full, {1}, -2147483649, "i32")
    x:fill(255)
    assert.are.same({255, 255}, x:totable())
    x[2] = 0
    assert.are.same({255, 0}, x:totable())
    -- i64 takes every Lua integer exactly, beyond 2^53 too
    assert.are.same({(1 << 62) + 1}, tycho.full({1}, (1 << 62) + 1):totable())
    assert.are.same({math.mininteger}, tycho.full({1}, math.mininteger, "i64"):totable())
  end)
end)
