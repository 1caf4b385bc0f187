-- tests/spec/window_cut_spec.lua — where a flush made because the window
-- is full ends (plan/window.c, flush_full).
--
-- When the window fills, the flush runs the prefix that ends after the last
-- scalar result (a launch whose outputs are all 0-d: a whole sum, 0-d
-- arithmetic) of the window's second half, and keeps the launches after it
-- for the next window; without one, after the last assignment there (a
-- launch writing storage that existed before it); without either, the
-- whole window. A loop body with a
-- dot product then flushes at the same place of every iteration: CG's
-- stencil group is not cut where the window happened to fill.
-- TYCHO_WINDOW_CUT=0 flushes the whole window. Expected values: numpy
-- (pasted); the same bits with and without the cut, on 1, 2 and 3
-- processors.

local function rel(a, b) return math.abs(a - b) / math.abs(b) end

local function run(code, env)
  local out, rc = spec_lua(code, env)
  assert.are.equal(0, rc, out)
  return out
end

-- a 5-launch loop body (mul, sum, 0-d mul, sub, add) unfused, in a window of
-- 8: prints each flush's launches, each flush's last launch (task/rank),
-- then sum(x) and sum(x * x) (%a: the bits)
local LOOP = [[
  local x = tycho.arange(100) * 0.01
  tycho.flush()
  tycho.parallel({ fuse = false }, function()
    for _ = 1, 10 do
      local y = x * 0.5
      local m = y:sum() * 0.01
      x = y - m
      x = x + 1.0
    end
  end)
  local e = tycho.explain(50)
  local sizes, last = {}, {}
  for _, f in ipairs(e.flushes) do sizes[#sizes + 1] = f.launches end
  for i = 1, #e do
    if i == #e or e[i + 1].flush ~= e[i].flush then last[#last + 1] = e[i].task .. "/" .. #e[i].shape end
  end
  print(table.concat(sizes, " "))
  print(table.concat(last, " "))
  print(string.format("%a %a", x:sum():item(), (x * x):sum():item()))
]]

-- 12 CG iterations at 256 x 256 (bench/workloads/cg.lua's loop, b = seq -
-- 0.5) with no flush in the loop: 252 launches, several full windows of 64.
-- Prints the launches appended, run, waves and flushes of the loop, then
-- ||r||, sum(x) and sum(x * x).
local CG = [[
]] .. SPEC_CG_SETUP .. [[
  tycho.flush()
  local s0 = tycho.stats()
  for _ = 1, 12 do
]] .. SPEC_CG_STEP .. [[
  end
  tycho.flush()
  local s1 = tycho.stats()
  print(s1.launches - s0.launches, s1.launches_run - s0.launches_run, s1.waves - s0.waves,
        s1.flushes - s0.flushes)
  print(string.format("%a %a %a", math.sqrt(rsold:item()), x:sum():item(), (x * x):sum():item()))
]]

describe("a full window's flush", function()
  it("ends after the last scalar result of the window's second half", function()
    -- numpy: the same loop; x.sum(), (x * x).sum()
    local want = { 99.99999999999999, 100.00000794649125 }
    local ref
    for _, cut in ipairs({ "1", "0" }) do
      local out = run(LOOP, { TYCHO_WINDOW = "8", TYCHO_WINDOW_CUT = cut, TYCHO_CPUS = "2" })
      local sizes, last, v1, v2 = out:match("^([^\n]*)\n([^\n]*)\n(%S+) (%S+)")
      assert(sizes, out)
      ref = ref or { v1, v2 }
      assert.are.same(ref, { v1, v2 })
      assert.is_true(rel(tonumber(v1), want[1]) < 1e-15, v1)
      assert.is_true(rel(tonumber(v2), want[2]) < 1e-15, v2)
      if cut == "1" then
        -- the first window ends with the 0-d mul (a whole flush); then each
        -- flush runs sub, add, mul, sum, 0-d mul and keeps sub, add, mul
        assert.are.equal("8 5 5 5 5 5 5 5 7", sizes)
        assert.are.equal(("mul/0 "):rep(8) .. "add/1", last)
      else
        assert.are.equal("8 8 8 8 8 8 2", sizes)
      end
    end
  end)

  it("keeps more launches than its 64 slots on the stack (a window of 200)", function()
    -- a 110-launch body: a sum, a 0-d mul, a sub and 107 adds, unfused
    local code = [[
      local x = tycho.arange(10) * 0.1
      tycho.flush()
      tycho.parallel({ fuse = false }, function()
        for _ = 1, 3 do
          local m = x:sum() * 0.001
          x = x - m
          for _ = 1, 107 do x = x + 0.001 end
        end
      end)
      local e = tycho.explain(400)
      local sizes = {}
      for _, f in ipairs(e.flushes) do sizes[#sizes + 1] = f.launches end
      print(table.concat(sizes, " "))
      print(string.format("%a %a", x:sum():item(), (x * x):sum():item()))
    ]]
    -- numpy: x.sum(), (x * x).sum(), the same bits
    local want = "0x1.e2d6abde3fb98p+2 0x1.a11207aeadf5ep+2"
    local out = run(code, { TYCHO_WINDOW = "200" })
    -- the first full window ends after the second body's 0-d mul (launch
    -- 112) and keeps 88 launches; the mul that made x comes first
    assert.are.equal("1 112 110 108\n" .. want .. "\n", out)
    out = run(code, { TYCHO_WINDOW = "200", TYCHO_WINDOW_CUT = "0" })
    assert.are.equal("1 200 130\n" .. want .. "\n", out)
  end)

  it("without a scalar result, ends after the last assignment: each stencil iteration stays one pass", function()
    -- the stencil on a 9 x 12 grid, 10 iterations of 6 launches (4 adds, a
    -- mul, the copy into center) in a window of 16: prints each flush's runs,
    -- the launches, the runs in place and the bytes allocated in the loop,
    -- then three points (%a)
    local code = SPEC_STENCIL(9, 12) .. [[
      tycho.flush()
      local s0 = tycho.stats()
      for _ = 1, 10 do c[{}] = (c + n + e + w + s) * 0.2 end
      tycho.flush()
      local s1 = tycho.stats()
      local sizes = {}
      for _, f in ipairs(tycho.explain(60).flushes) do sizes[#sizes + 1] = f.launches end
      print(table.concat(sizes, " "))
      print(s1.launches - s0.launches, s1.fused_inplace - s0.fused_inplace,
            s1.bytes_allocated - s0.bytes_allocated)
      print(string.format("%a %a %a", g[{2, 2}]:item(), g[{5, 7}]:item(), g[{8, 11}]:item()))
    ]]
    -- numpy (the same loop): g[1,1], g[4,6], g[7,10] by float.hex()
    local want = "0x1.75d3bc8c2a1ep-3 0x1.09c4fc7e283fbp+0 0x1.40665a4e966b5p-1\n"
    -- cut: each flush runs two iterations (12 launches, 2 runs in place)
    -- and keeps the next one's 4 adds; the grid was made in the first
    -- window, so its copy counts as an assignment there too
    local out = run(code, { TYCHO_WINDOW = "16" })
    assert.are.equal("2 2 2 2 2\n60\t10\t40\n" .. want, out)
    -- whole windows: the first ends after 4 adds, and that iteration is a
    -- 7 x 10 temporary (560 bytes more) in one flush and a copy in the next
    out = run(code, { TYCHO_WINDOW = "16", TYCHO_WINDOW_CUT = "0" })
    local sizes, launches, inplace, bytes = out:match("^([^\n]*)\n(%d+)\t(%d+)\t(%d+)\n")
    assert.are.equal("3 4 3 2", sizes, out)
    assert.are.equal("60", launches)
    assert.are.equal("9", inplace)
    assert.is_true(tonumber(bytes) >= 40 + 7 * 10 * 8, out)
    assert.is_truthy(out:find(want, 1, true), out)
  end)

  it("TYCHO_WINDOW_CUT takes 0 or 1", function()
    for _, v in ipairs({ "2", "yes", "-1" }) do
      local out, rc = spec_lua("print(tycho.zeros({ 2 }):sum():item())", { TYCHO_WINDOW_CUT = v })
      assert.are_not.equal(0, rc, out)
      assert.is_truthy(out:find("TYCHO_WINDOW_CUT must be 0 or 1, got '" .. v .. "'", 1, true), out)
    end
    assert.are.equal("0.0\n", run("print(tycho.zeros({ 2 }):sum():item())", { TYCHO_WINDOW_CUT = "0" }))
  end)

  it("keeps CG's iteration whole: numpy's values, the same bits, 10 launches run an iteration in 6 waves", function()
    -- numpy (cg.py's loop, 12 iterations): ||r||, x.sum(), (x * x).sum()
    local want = { 0.8434686627226252, -22.73590052316355, 763.7055890140234 }
    local ref
    for _, case in ipairs({ { "1", 1 }, { "1", 2 }, { "1", 3 }, { "0", 2 } }) do
      local out = run(CG, { TYCHO_WINDOW_CUT = case[1], TYCHO_CPUS = tostring(case[2]) })
      local appended, ran, waves, flushes, v1, v2, v3 =
        out:match("^(%d+)%s+(%d+)%s+(%d+)%s+(%d+)\n(%S+) (%S+) (%S+)")
      assert(appended, out)
      ref = ref or { v1, v2, v3 }
      assert.are.same(ref, { v1, v2, v3 })
      for k, v in ipairs({ v1, v2, v3 }) do
        assert.is_true(rel(tonumber(v), want[k]) < 1e-13, v)
      end
      assert.are.equal(252, tonumber(appended), out)
      if case[1] == "1" then
        -- as with a flush an iteration (cg_scalars_spec.lua): 10 launches
        -- run an iteration, in 6 waves (the Laplacian's 5 regions in one)
        assert.are.equal(120, tonumber(ran), out)
        assert.are.equal(72, tonumber(waves), out)
        assert.are.equal(5, tonumber(flushes), out)
      else
        -- the whole window: the stencil group is cut where the window fills
        assert.is_true(tonumber(ran) > 120, out)
      end
    end
  end)
end)
