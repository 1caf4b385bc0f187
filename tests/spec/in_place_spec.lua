-- tests/spec/in_place_spec.lua — an output written into the storage of an
-- input its launch reads for the last time (runtime/src/exec/inplace.c,
-- docs/scheduling.md "Outputs in place of dead inputs"): `x = x * 1.5 +
-- 0.25` in a loop reuses x's block instead of taking a fresh one, and a
-- store that anything still reads (Lua, a view, a later launch, a later
-- sub-operation of the same fused run) is never written over. Expected
-- values: numpy 1.24 (pasted); CG's bits the same with TYCHO_IN_PLACE=0 and
-- on 1, 2 and 3 processors.

local function rel(a, b) return math.abs(a - b) / math.abs(b) end

local function run(code, env)
  local out, rc = spec_lua(code, env)
  assert.are.equal(0, rc, out)
  return out
end

-- flush, then the stats
local function stats()
  tycho.flush()
  return tycho.stats()
end

local function at(x, i) return x[{ i }]:item() end

describe("an output in place of a dead input", function()
  it("takes the block of the store a loop drops: x = x * 1.5 + 0.25", function()
    -- numpy: x = arange(1000) * 0.01, five times x = x * 1.5 + 0.25
    local want = { 3.296875, 41.189687500000005, 79.1584375 }
    for _, fuse in ipairs({ true, false }) do
      local x = tycho.arange(1000) * 0.01
      local s0 = stats()
      tycho.parallel({ fuse = fuse }, function()
        for _ = 1, 5 do
          x = x * 1.5 + 0.25
          -- the old x is unreachable; a full collection finalises it for
          -- sure (a flush's minor collection leaves stores that grew old)
          collectgarbage()
          tycho.flush()
        end
      end)
      local s1 = stats()
      -- fused: one run an iteration writes the new x over the old one;
      -- unfused: the mul over the old x, the add over the mul's result
      assert.are.equal((fuse and 5 or 10) * 8000, s1.bytes_in_place - s0.bytes_in_place)
      -- no array allocated: only the numbers' 0-d stores, 8 bytes each
      assert.are.equal(5 * 2 * 8, s1.bytes_allocated - s0.bytes_allocated)
      assert.are.equal(s1.bytes_allocated - s1.bytes_freed, s1.bytes_live)
      assert.are.same(want, { at(x, 1), at(x, 500), at(x, 1000) })
    end
  end)

  it("leaves a store alone while Lua or a view holds it", function()
    local x = tycho.arange(1000) * 0.01
    local s0 = stats()
    local y = x + 1 -- x is still Lua's
    local s1 = stats()
    assert.are.equal(s0.bytes_in_place, s1.bytes_in_place)
    assert.is_true(s1.bytes_allocated - s0.bytes_allocated >= 8000) -- y (and the number's 0-d store)
    assert.are.same({ 0.0, 9.99, 10.99 }, { at(x, 1), at(x, 1000), at(y, 1000) })
    local v = x[{ { 991, 1000 } }] -- a view of x's storage outlives x
    x = x + 1
    local s2 = stats()
    assert.are.equal(s1.bytes_in_place, s2.bytes_in_place)
    assert.are.same({ 9.99, 10.99 }, { at(v, 10), at(x, 1000) })
  end)

  it("waits for the last of several readers", function()
    -- one launch a wave (favor debug): the add runs while the mul still
    -- holds x; the mul, its last reader, writes over it
    local x = tycho.arange(1000) * 0.01
    local s0 = stats()
    local a, b
    tycho.parallel({ fuse = false, favor = "debug" }, function()
      a = x + 1
      b = x * 2
      x = nil
    end)
    local s1 = stats()
    assert.are.equal(8000, s1.bytes_in_place - s0.bytes_in_place)
    assert.are.same({ 1.0, 10.99, 0.0, 19.98 }, { at(a, 1), at(a, 1000), at(b, 1), at(b, 1000) })
  end)

  it("in a fused run, only an output written after the input's last read", function()
    -- y = x + 1 is written before z = y * x reads x: y must not take x's
    -- block (z would read y's values as x's); z may. numpy: y[i], z[i]
    local want = "1 5.9900000000000002 10.99 0 29.890100000000004 109.79010000000001 8000"
    local code = [[
      local x = tycho.arange(1000) * 0.01
      tycho.flush()
      local s0 = tycho.stats()
      local y = x + 1
      local z = y * x
      x = nil
      collectgarbage() -- x dead for sure: a minor collection may keep it (Lua's ages differ by build)
      tycho.flush()
      local function at(s, i) return s[{ i }]:item() end
      print(string.format("%.17g %.17g %.17g %.17g %.17g %.17g %d", at(y, 1), at(y, 500), at(y, 1000),
                          at(z, 1), at(z, 500), at(z, 1000), tycho.stats().bytes_in_place - s0.bytes_in_place))
    ]]
    -- the interpreter, and the compiled kernel (waited for), on 1 and 3 processors
    for _, env in ipairs({ { TYCHO_CODEGEN = "off", TYCHO_CPUS = "1" },
                           { TYCHO_CODEGEN = "off", TYCHO_CPUS = "3" },
                           { TYCHO_CODEGEN = "always", TYCHO_CPUS = "3" } }) do
      assert.are.equal(want .. "\n", run(code, env))
    end
  end)

  it("keeps CG's bits: numpy's values, the same with TYCHO_IN_PLACE=0 and on 1, 2, 3 processors", function()
    -- 12 CG iterations at 256 x 256 (bench/workloads/cg.lua's loop, b = seq
    -- - 0.5) with a flush an iteration, as cg.lua's reads make them
    local code = [[
]] .. SPEC_CG_SETUP .. [[
      tycho.flush()
      local s0 = tycho.stats()
      for _ = 1, 12 do
]] .. SPEC_CG_STEP .. [[
        collectgarbage() -- the dropped stores dead for sure, whatever their age in Lua's collector
        tycho.flush()
      end
      local s1 = tycho.stats()
      print((s1.bytes_in_place - s0.bytes_in_place) // (N * N * 8),
            (s1.bytes_allocated - s0.bytes_allocated) // (N * N * 8))
      print(string.format("%a %a %a", math.sqrt(rsold:item()), x:sum():item(), (x * x):sum():item()))
    ]]
    -- numpy (cg.py's loop, 12 iterations): ||r||, x.sum(), (x * x).sum()
    local want = { 0.8434686627226252, -22.73590052316355, 763.7055890140234 }
    local ref
    for _, case in ipairs({ { "1", 1 }, { "1", 2 }, { "1", 3 }, { "0", 2 } }) do
      local out = run(code, { TYCHO_IN_PLACE = case[1], TYCHO_CPUS = tostring(case[2]) })
      local inplace, allocated, v1, v2, v3 = out:match("^(%d+)%s+(%d+)\n(%S+) (%S+) (%S+)")
      assert(inplace, out)
      ref = ref or { v1, v2, v3 }
      assert.are.same(ref, { v1, v2, v3 })
      for k, v in ipairs({ v1, v2, v3 }) do
        assert.is_true(rel(tonumber(v), want[k]) < 1e-13, v)
      end
      if case[1] == "1" then
        -- x, r and p are updated in place and Ap is new: 36 and 12, but for
        -- the first iteration's r, which the first p still holds (the loop
        -- collects before each flush, so the counts do not depend on the
        -- ages of stores in Lua's collector, which differ between builds)
        assert.are.equal(35, tonumber(inplace), out)
        assert.are.equal(13, tonumber(allocated), out)
      else
        assert.are.equal(0, tonumber(inplace), out)
        assert.are.equal(48, tonumber(allocated), out)
      end
    end
  end)

  it("TYCHO_IN_PLACE takes 0 or 1", function()
    for _, v in ipairs({ "2", "no", "-1" }) do
      local out, rc = spec_lua("print(tycho.zeros({ 2 }):sum():item())", { TYCHO_IN_PLACE = v })
      assert.are_not.equal(0, rc, out)
      assert.is_truthy(out:find("TYCHO_IN_PLACE must be 0 or 1, got '" .. v .. "'", 1, true), out)
    end
    assert.are.equal("0.0\n", run("print(tycho.zeros({ 2 }):sum():item())", { TYCHO_IN_PLACE = "0" }))
  end)
end)
