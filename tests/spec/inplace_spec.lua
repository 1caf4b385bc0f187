-- tests/spec/inplace_spec.lua — a fused run that writes a store in place
-- while reading it through row-shifted views (the 2-D stencil's
-- `center[{}] = (center + north + east + west + south) * 0.2`) runs as one
-- line-buffered pass (runtime/src/exec/linebuf.c, docs/fusion.md "Shifted
-- reads of the store a run writes"): numpy's values (the expected tables
-- were computed with numpy 1.24 and pasted here), the same bits as the
-- unfused launches and under any --cpus and mode, and the cases it does not
-- take fall back to the two passes with the same values.

local function off(f) return tycho.parallel({ fuse = false }, f) end
local function inplace()
  tycho.flush()
  return tycho.stats().fused_inplace
end

-- the inputs the numpy script used: exact binary fractions
local init = spec_grid

local function init3(P, R, C)
  local t = {}
  for i = 1, P do
    t[i] = {}
    for j = 1, R do
      t[i][j] = {}
      for k = 1, C do t[i][j][k] = ((i * 29 + j * 37 + k * 11) % 13) * 0.5 - 2.0 end
    end
  end
  return t
end

-- the stencil with its neighbours h rows and k columns away
local function five(g, h, k, iters)
  local c = g[{ { 1 + h, -1 - h }, { 1 + k, -1 - k } }]
  local n = g[{ { 1, -1 - 2 * h }, { 1 + k, -1 - k } }]
  local s = g[{ { 1 + 2 * h, -1 }, { 1 + k, -1 - k } }]
  local w = g[{ { 1 + h, -1 - h }, { 1, -1 - 2 * k } }]
  local e = g[{ { 1 + h, -1 - h }, { 1 + 2 * k, -1 } }]
  for _ = 1, iters do
    c[{}] = (c + n + e + w + s) * 0.2
  end
  return g
end

local function last_fused()
  local f
  for _, e in ipairs(tycho.explain(8)) do
    if e.task == "fused" then f = e end
  end
  return f
end

local A = {
  {2.5, 1.0, -0.5, 2.25, 0.75, -0.75, 2.0, 0.5, -1.0, 1.75, 0.25, 3.0},
  {-1.0, 0.3900000000000001, 0.6580000000000003, 1.3680000000000003, 1.0580000000000003, 0.6800000000000002, 1.1520000000000001, 0.8080000000000003, 0.4300000000000001, 0.8680000000000002, 0.3880000000000001, -0.5},
  {-0.25, 0.5280000000000001, 0.8980000000000002, 1.2000000000000002, 1.1960000000000002, 1.022, 1.0520000000000003, 0.9460000000000002, 0.7720000000000001, 0.8020000000000002, 0.5940000000000002, 0.25},
  {0.5, 0.7000000000000001, 0.9000000000000002, 1.1000000000000003, 1.1980000000000002, 1.1600000000000001, 1.054, 0.9820000000000002, 0.9100000000000001, 0.8040000000000002, 0.8340000000000001, 1.0},
  {1.25, 0.9060000000000002, 0.8340000000000001, 1.0000000000000002, 1.1660000000000001, 1.1960000000000002, 1.0900000000000003, 1.0180000000000002, 0.9460000000000002, 0.8740000000000002, 1.074, 1.75},
  {2.0, 1.1460000000000001, 0.8360000000000002, 0.9000000000000002, 1.1000000000000003, 1.1980000000000002, 1.1600000000000001, 1.054, 0.9820000000000002, 0.9780000000000002, 1.1780000000000002, 2.5},
  {2.75, 1.3520000000000003, 0.8720000000000001, 0.8, 1.0680000000000003, 1.1660000000000001, 1.1280000000000001, 1.1240000000000003, 1.0180000000000002, 0.8100000000000002, 0.5000000000000001, -1.0},
  {-0.75, 1.014, 0.8740000000000002, 0.6320000000000001, 1.2740000000000002, 1.1000000000000003, 0.8240000000000003, 1.33, 0.9520000000000002, 0.5740000000000002, 0.774, -0.25},
  {0.0, 2.75, 1.25, -0.25, 2.5, 1.0, -0.5, 2.25, 0.75, -0.75, 2.0, 0.5},
}

local B = {{3, 2, 0.6504000000000002}, {3, 44, 1.0128000000000001}, {20, 20, 1.0000000000000002}, {41, 7, 0.8356}, {42, 30, 1.0856000000000001}, {78, 44, 1.8496000000000004}, {79, 23, 2.5}, {60, 2, 1.0364000000000002}}
local Bsum = 3597.1028000000006

local C = {
  {2.5, 1.0, 0.4921875, 0.3515625, 0.31640625, 0.28125, 0.24609375, 0.3046875, 0.66015625, 1.75},
  {-1.0, -0.05078125, 0.421875, 0.6015625, 0.6328125, 0.59765625, 0.5625, 0.6328125, 1.0703125, 2.5},
  {-0.25, 0.16015625, 0.3515625, 0.38671875, 0.3515625, 0.31640625, 0.28125, 0.1640625, -0.1796875, -1.0},
  {0.5, 0.3046875, 0.34765625, 0.50390625, 0.6015625, 0.6328125, 0.59765625, 0.4921875, 0.23046875, -0.25},
  {1.25, 0.6484375, 0.4765625, 0.421875, 0.38671875, 0.3515625, 0.31640625, 0.2890625, 0.30859375, 0.5},
  {2.0, 0.7265625, 0.33984375, 0.33984375, 0.50390625, 0.6015625, 0.6328125, 0.6171875, 0.71875, 1.25},
}

local D = {
  {2.0234375, 0.03125, -0.3671875, 0.09765625, -0.03515625},
  {1.8125, 0.62109375, -0.63671875, 3.75, 0.6328125},
  {-0.51953125, 3.4921875, 0.0, 2.8828125, 1.31640625},
  {-0.6328125, 2.25, 0.68359375, 0.11328125, 4.125},
  {0.31640625, -0.51953125, 3.4921875, 0.0, 2.8828125},
  {1.0, -0.6328125, 2.25, 0.68359375, 0.11328125},
  {3.83203125, 0.08203125, -0.61328125, 3.5390625, -0.2109375},
  {2.421875, 3.046875, -0.046875, 1.90625, 2.53125},
}

local E = {{2, 2, 2, 0.515625}, {3, 4, 3, 1.0234375}, {4, 5, 4, 1.0625}, {6, 5, 4, 1.109375}, {6, 2, 2, 1.578125}, {4, 3, 2, 0.3515625}}
local Esum = 192.7421875

local F = {2.5, 1.53125, 1.625, 0.65625, 0.75, 0.84375, 0.40625, 0.5, 1.125, 0.6875, 2.375, 3.0}

local G = {
  {2.5, 1.0, -0.5, 2.25},
  {-1.0, 1.75, 0.25, 3.0},
  {-0.25, 2.5, 1.0, -0.5},
  {0.5, -1.0, 1.75, 0.25},
  {1.25, -0.25, 2.5, 1.0},
  {2.0, 0.5, -1.0, 1.75},
  {2.75, 1.25, -0.25, 2.5},
  {-0.75, 2.0, 0.5, -1.0},
  {0.0, 2.75, 1.25, -0.25},
  {2.25, 2.0, 1.75, 5.75},
  {0.25, 4.25, 4.0, 3.75},
  {2.5, 2.25, 2.0, 1.75},
  {4.75, 0.25, 4.25, 4.0},
  {-0.5, 2.25, 0.75, -0.75},
  {0.25, 3.0, 1.5, 0.0},
  {1.0, -0.5, 2.25, 0.75},
  {1.75, 0.25, 3.0, 1.5},
  {2.5, 1.0, -0.5, 2.25},
  {-1.0, 1.75, 0.25, 3.0},
  {-0.25, 2.5, 1.0, -0.5},
  {0.5, -1.0, 1.75, 0.25},
  {1.25, -0.25, 2.5, 1.0},
}

describe("in place, line-buffered", function()
  it("the 5-point stencil on a non-square grid: numpy's values, one pass an iteration", function()
    local before, db = inplace(), tycho.stats().double_buffered
    local g = five(tycho.array(init(9, 12)), 1, 1, 3)
    spec_same(g:totable(), A)
    assert.are.equal(3, inplace() - before)
    -- its edge (38 of 108 elements) is too wide to double-buffer: the rows
    -- go through the line buffer
    assert.are.equal(db, tycho.stats().double_buffered)
    local f = last_fused()
    assert.is_not_nil(f)
    assert.is_truthy(f.fused_ops:find("[in place]", 1, true), f.fused_ops)
    assert.is_truthy(f.fused_ops:find("add add add add mul copy", 1, true), f.fused_ops)
    assert.is_truthy(f.fuse_end:find("in place, line-buffered (reads rows -1..+1)", 1, true), f.fuse_end)
  end)

  it("neighbours 2 rows away, several pieces: numpy's values and the unfused bits", function()
    local before = inplace()
    local got = five(tycho.array(init(80, 45)), 2, 1, 4)
    assert.are.equal(4, inplace() - before)
    local f = last_fused()
    assert.is_truthy(f.fuse_end:find("(reads rows -2..+2)", 1, true), f.fuse_end)
    for _, p in ipairs(B) do assert.are.equal(p[3], got[{ p[1], p[2] }]:item()) end
    assert.is_true(math.abs(got:sum():item() - Bsum) < 1e-9)
    local many = tycho.parallel({ mode = "all" }, function() return five(tycho.array(init(80, 45)), 2, 1, 4) end)
    local unfused = off(function() return five(tycho.array(init(80, 45)), 2, 1, 4):totable() end)
    spec_same(got:totable(), unfused)
    spec_same(many:totable(), unfused)
  end)

  it("shifts along the columns only: each row on its own", function()
    local before = inplace()
    local g = tycho.array(init(6, 10))
    local c = g[{ {}, { 2, -2 } }]
    for _ = 1, 3 do c[{}] = (g[{ {}, { 1, -3 } }] + c + g[{ {}, { 3, -1 } }]) * 0.25 end
    spec_same(g:totable(), C)
    assert.are.equal(3, inplace() - before)
    assert.is_truthy(last_fused().fuse_end:find("(reads rows -0..+0)", 1, true))
  end)

  it("reads of the rows before only, and of the rows after only", function()
    local before = inplace()
    local g = tycho.array(init(8, 5))
    for _ = 1, 2 do
      g[{ { 2, -1 }, {} }] = g[{ { 2, -1 }, {} }] + g[{ { 1, -2 }, {} }] * 0.5
      g[{ { 1, -2 }, {} }] = g[{ { 1, -2 }, {} }] - g[{ { 2, -1 }, {} }] * 0.25
    end
    spec_same(g:totable(), D)
    assert.are.equal(4, inplace() - before)
  end)

  it("a 3-D 7-point stencil: planes are the rows", function()
    local before = inplace()
    local g = tycho.array(init3(7, 6, 5))
    local function v(a, b, c) return g[{ a, b, c }] end
    local I = { 2, -2 }
    local c = v(I, I, I)
    for _ = 1, 2 do
      c[{}] = (c + v({ 1, -3 }, I, I) + v({ 3, -1 }, I, I) + v(I, { 1, -3 }, I) + v(I, { 3, -1 }, I)
               + v(I, I, { 1, -3 }) + v(I, I, { 3, -1 })) * 0.125
    end
    assert.are.equal(2, inplace() - before)
    for _, p in ipairs(E) do assert.are.equal(p[4], g[{ p[1], p[2], p[3] }]:item()) end
    assert.are.equal(Esum, g:sum():item()) -- 210 multiples of 2^-7: exact
  end)

  it("falls back to two passes: 1-D, and reads more than 8 rows away", function()
    local before = inplace()
    local a = tycho.array(init(1, 12)[1])
    for _ = 1, 3 do a[{ { 2, -2 } }] = (a[{ { 1, -3 } }] + a[{ { 3, -1 } }]) * 0.5 end
    spec_same(a:totable(), F)
    assert.are.equal(before, inplace())
    local f = last_fused()
    assert.is_truthy(f and f.fuse_end:find("write through another view of a store read in this run", 1, true))
    local g = tycho.array(init(22, 4))
    for _ = 1, 2 do
      g[{ { 10, -10 }, {} }] = (g[{ { 1, -19 }, {} }] + g[{ { 19, -1 }, {} }]) * 0.5 + g[{ { 10, -10 }, {} }]
    end
    spec_same(g:totable(), G)
    assert.are.equal(before, inplace())
  end)

  it("falls back when the written store is read through a transposed view", function()
    local before = inplace()
    local t = init(6, 6)
    local g = tycho.array(t)
    g[{ { 2, -1 }, {} }] = g[{ { 2, -1 }, {} }] + g:t()[{ { 1, -2 }, {} }]
    assert.are.equal(before, inplace())
    local got = g:totable()
    for i = 2, 6 do
      for j = 1, 6 do assert.are.equal(t[i][j] + t[j][i - 1], got[i][j]) end
    end
  end)

  it("gives the same bits under --cpus 1, 2, 3, mode all and the interpreter", function()
    local code = [[
      local function init(R, C)
        local t = {}
        for i = 1, R do
          t[i] = {}
          for j = 1, C do t[i][j] = math.sin(i * 0.37 + j * 0.11) end
        end
        return t
      end
      local function run()
        local g = tycho.array(init(203, 131))
        local c = g[{{3, -3}, {2, -2}}]
        for _ = 1, 5 do
          c[{}] = (c + g[{{1, -5}, {2, -2}}] + g[{{3, -3}, {3, -1}}] + g[{{3, -3}, {1, -3}}]
                   + g[{{5, -1}, {2, -2}}] + g[{{2, -4}, {2, -2}}]) * 0.125
        end
        return g
      end
      local a, b = run(), tycho.parallel({ mode = "all" }, run)
      local d = tycho.parallel({ fuse = false }, run)
      print(string.format("%a %a %a %a %s", a:sum():item(), (a * a):sum():item(), b:sum():item(),
        ((a - b):abs() + (a - d):abs()):max():item(), tycho.stats().fused_inplace))
    ]]
    local outs = {}
    for _, env in ipairs({ { TYCHO_CPUS = "1" }, { TYCHO_CPUS = "2" }, { TYCHO_CPUS = "3" },
                           { TYCHO_CPUS = "3", TYCHO_CODEGEN = "off" } }) do
      local out, rc = spec_lua(code, env)
      assert.are.equal(0, rc, out)
      assert.is_truthy(out:find(" 0x0p%+0 10\n"), out) -- no difference; 10 runs in place
      outs[#outs + 1] = out
    end
    for i = 2, #outs do assert.are.equal(outs[1], outs[i]) end
  end)
end)

-- A grid whose inside is most of it (130 x 130, 6 iterations, a flush
-- each): computed into a second block that becomes the grid's (linebuf.c,
-- may_swap). Prints the runs double-buffered and in place, the bytes at
-- peak, each launch's flush:wave, then probes (%a) and the sum. numpy (the same loop; probes' float.hex()):
-- g[0,0] 0x1.4p+1, g[64,64] 0x1.d27a20578e5c8p-1, g[1,1]
-- 0x1.e48a58b3f63c5p-3, g[128,128] 0x1.97e77d523b365p+0, g[129,129]
-- -0x1.8p-1, g.sum() 16892.76476800001
local GRID = SPEC_STENCIL(130, 130) .. [[
  tycho.flush()
  local s0 = tycho.stats()
  for _ = 1, 6 do
    c[{}] = (c + n + e + w + s) * 0.2
    CORNER(g)
    tycho.flush()
  end
  tycho.flush()
  local s1 = tycho.stats()
  local waves = {}
  for _, x in ipairs(tycho.explain(20)) do waves[#waves + 1] = x.flush .. ":" .. x.wave end
  print(s1.double_buffered - s0.double_buffered, s1.fused_inplace - s0.fused_inplace, s1.bytes_peak)
  print(table.concat(waves, " "))
  print(string.format("%a %a %a %a %a %a", g[{1, 1}]:item(), g[{65, 65}]:item(), g[{2, 2}]:item(),
    g[{129, 129}]:item(), g[{130, 130}]:item(), g:sum():item()))
]]

local function grid(corner, env)
  local out, rc = spec_lua(GRID:gsub("CORNER%(g%)", corner), env)
  assert.are.equal(0, rc, out)
  local db, ip, peak, waves, v = out:match("^(%d+)%s+(%d+)%s+(%d+)\n([^\n]*)\n([^\n]*)\n$")
  assert(db, out)
  return tonumber(db), tonumber(ip), tonumber(peak), waves, v
end

describe("in place, double-buffered", function()
  local GRID_BYTES = 130 * 130 * 8

  it("numpy's values and the line buffer's bits; twice the grid's bytes at peak", function()
    local probes = { 0x1.4p+1, 0x1.d27a20578e5c8p-1, 0x1.e48a58b3f63c5p-3, 0x1.97e77d523b365p+0, -0x1.8p-1 }
    local ref
    for _, case in ipairs({ { {}, 6 }, { { TYCHO_CPUS = "1" }, 6 }, { { TYCHO_CPUS = "3" }, 6 },
                            { { TYCHO_CODEGEN = "off" }, 6 }, { { TYCHO_DOUBLE_BUFFER = "0" }, 0 },
                            -- a budget whose block cache (an eighth) cannot keep the grid's
                            -- old block: the line buffer
                            { { TYCHO_SYSMEM = "1000000" }, 0 } }) do
      local db, ip, peak, _, v = grid("", case[1])
      assert.are.equal(case[2], db, v)
      assert.are.equal(6, ip)
      if db > 0 then
        assert.is_true(peak >= 2 * GRID_BYTES, tostring(peak))
      else
        assert.is_true(peak < 2 * GRID_BYTES, tostring(peak))
      end
      ref = ref or v
      assert.are.equal(ref, v)
      local got = {}
      for x in v:gmatch("%S+") do got[#got + 1] = tonumber(x) end
      for k, p in ipairs(probes) do assert.are.equal(p, got[k]) end
      assert.is_true(math.abs(got[6] - 16892.76476800001) < 1e-9, v)
    end
  end)

  it("another launch of its wave on the grid: the rest of the grid is copied after the wave", function()
    -- the corner, which the stencil neither reads nor writes, read in the
    -- stencil's wave; numpy: g[0,0] 0x1.1p+3 (+ 1 six times), the rest as
    -- without, g.sum() 16898.76476800001
    local db, ip, _, waves, v = grid("g[{{1, 1}, {1, 1}}] = g[{{1, 1}, {1, 1}}] + 1",
                                     { TYCHO_FAVOR = "max-concurrency" })
    assert.are.equal(6, db)
    assert.are.equal(6, ip)
    local seen, shared = {}, 0 -- flush:wave of each launch; every stencil shares its wave
    for fw in waves:gmatch("%S+") do
      shared = shared + (seen[fw] and 1 or 0)
      seen[fw] = true
    end
    assert.are.equal(6, shared, waves)
    local got = {}
    for x in v:gmatch("%S+") do got[#got + 1] = tonumber(x) end
    assert.are.equal(0x1.1p+3, got[1])
    assert.are.equal(0x1.d27a20578e5c8p-1, got[2])
    assert.is_true(math.abs(got[6] - 16898.76476800001) < 1e-9, v)
  end)

  it("a failing piece: its error, the second block given back, the grid unavailable as line-buffered", function()
    if type(tycho.task) ~= "function" then return pending("tycho.task is not in this build") end
    local code = SPEC_STENCIL(130, 130) .. [[
      local bad = tycho.task {
        name = "inplace_spec_bad", args = { "in", "out" }, traits = { pointwise = true },
        body = function(ctx, x, y) error("boom") end,
      }
      tycho.flush()
      local ok, err = pcall(function()
        c[{}] = (bad(c) + n + e + w + s) * 0.2
        tycho.flush()
      end)
      local st = tycho.stats()
      local ok2, err2 = pcall(function() return g:sum():item() end)
      print(ok, st.double_buffered, st.bytes_live, st.bytes_peak, ok2)
      print(err)
      print(err2)
    ]]
    for _, db in ipairs({ "1", "0" }) do
      local out, rc = spec_lua(code, { TYCHO_DOUBLE_BUFFER = db })
      assert.are.equal(0, rc, out)
      local ok, n, live, peak, ok2 = out:match("^(%S+)%s+(%d+)%s+(%d+)%s+(%d+)%s+(%S+)\n")
      assert.are.equal("false", ok, out)
      assert.are.equal("0", n, out)
      assert.are.equal(GRID_BYTES, tonumber(live), out) -- the grid alone
      if db == "1" then -- it ran double-buffered: the second block was live
        assert.is_true(tonumber(peak) >= 2 * GRID_BYTES, out)
      end
      assert.are.equal("false", ok2, out)
      assert.is_truthy(out:find("task 'inplace_spec_bad' (fused)", 1, true), out)
      assert.is_truthy(out:find("the value is unavailable", 1, true), out)
    end
  end)

  it("TYCHO_DOUBLE_BUFFER takes 0 or 1", function() spec_switch("TYCHO_DOUBLE_BUFFER") end)
end)
