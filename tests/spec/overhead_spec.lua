-- overhead_spec.lua — the per-operation shortcuts of small-array loops
-- (bench/workloads/overhead.lua): new stores get the store metatable from the
-- runtime box (tycho_lua.c, tl_newslot) wherever they are made, and the loop's
-- values are numpy's.
describe("per-operation shortcuts", function()
  local meta = debug.getregistry()["tycho.store"]

  it("gives every new store the store metatable", function()
    local x = tycho.arange(4)
    assert.are.equal(meta, getmetatable(x))
    assert.are.equal(meta, getmetatable(x * 2))
    assert.are.equal(meta, getmetatable(2 + x))
    assert.are.equal(meta, getmetatable(-x))
    assert.are.equal(meta, getmetatable(x:exp()))
    assert.are.equal(meta, getmetatable(tycho.add(x, x)))
    assert.are.equal(meta, getmetatable(x[{{2, 3}}]))
    assert.are.equal(meta, getmetatable(x:sum()))
    local co = coroutine.wrap(function() return x * x end)
    assert.are.equal(meta, getmetatable(co()))
    local ok, y = pcall(function() return x - 1 end)
    assert.is_true(ok)
    assert.are.equal(meta, getmetatable(y))
    spec_same(y:totable(), {-1, 0, 1, 2})
  end)

  it("takes the operators' operands as the functions do", function()
    -- numpy: x = np.arange(4, dtype=np.int32)
    local x = tycho.arange(4):astype("i32")
    assert.are.equal("i32", (x + 1).dtype)
    assert.are.equal("f64", (1.5 * x).dtype)
    spec_same((x + 1):totable(), {1, 2, 3, 4})
    spec_same((10 - x):totable(), {10, 9, 8, 7})
    spec_same((x * x):totable(), {0, 1, 4, 9})
    spec_same((x / 2):totable(), {0, 0.5, 1, 1.5})
    spec_same((x % 3):totable(), {0, 1, 2, 0})
    spec_same((2 ^ x):totable(), {1, 2, 4, 8})
    spec_same((x - x:astype("f64")):totable(), {0, 0, 0, 0})
    spec_fails({"tycho.mul", "argument 2 must be a store or a number, got table"},
               function() return x * {} end)
    spec_fails({"tycho.sub", "argument 1 must be a store or a number, got string"},
               function() return "a" - x end)
    spec_fails({"tycho.add", "3000000000 is out of range for i32"},
               function() return x + 3000000000 end)
    -- the metamethod called with an out goes the functions' way
    local out = tycho.zeros(4)
    local r = getmetatable(x).__mul(x, 2, out)
    assert.are.equal(out, r)
    spec_same(out:totable(), {0, 2, 4, 6})
  end)

  it("runs overhead.lua's loop to numpy's values", function()
    -- numpy: x = np.arange(1000) * 0.001; 100 times x = x * 0.999 + 0.001
    -- (200 launches: full windows flushed as they fill, then the read)
    local x = tycho.arange(1000) * 0.001
    for _ = 1, 100 do
      x = x * 0.999 + 0.001
    end
    assert.are.equal(0x1.85f8ab6781050p-4, x[1])
    assert.are.equal(0x1.ff896836a30e6p-1, x[1000])
    assert.are.equal(meta, getmetatable(x))
  end)
end)
