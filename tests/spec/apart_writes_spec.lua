-- tests/spec/apart_writes_spec.lua — launches that write apart boxes of one
-- store, or sum into one store, share a wave (plan/window.c, no_hazard).
--
-- The window's graph ordered every writer of a storage after the one
-- before, so the edge regions of CG's Laplacian (plan/regions.c) ran as one
-- wave of one piece each: 8 waves an iteration at 2048 x 2048. Writes and
-- reads through views that are boxes of one index space (the same strides)
-- and apart need no order, nor do sums into one store, whose private tiles
-- the executor adds in program order at the end of the wave. The values are
-- the bits of one launch a wave on any number of processors.

local function lap_code(n)
  return SPEC_LAPLACIAN .. string.format([[
    local N = %d
    local v = ((tycho.arange(N * N) %% 97) * 0.01 - 0.3):reshape(N, N)
    tycho.flush()
    local Av = laplacian(v)
    local s = (v * Av):sum()
    tycho.flush()
    local f = tycho.stats().last_flush
    local waves = {}
    for _, e in ipairs(tycho.explain(30)) do
      if e.flush == f.flush and #e.shape == 2 then waves[#waves + 1] = e.wave end
    end
    print(string.format("%%a %%a", s:item(), Av:sum():item()), f.launches, f.waves, table.concat(waves, ","))
  ]], n)
end

describe("writes into apart boxes of one store", function()
  -- boxes are looked at in storages of 1 MiB or more (window.c,
  -- BOX_MIN_BYTES): 512 x 256 f64 is 1 MiB
  local R, C = 512, 256
  it("share a wave; an overlapping write or a read follows them; numpy's values", function()
    local a = tycho.zeros({ R, C })
    tycho.flush()
    tycho.parallel({ fuse = false }, function()
      a[{ { 1, 1 }, {} }] = 1
      a[{ { R, R }, {} }] = 2
      a[{ { 2, R - 1 }, { 1, 1 } }] = 3 -- the two columns' byte ranges overlap
      a[{ { 2, R - 1 }, { C, C } }] = 4
      a[{ { 2, R - 1 }, { 2, C - 1 } }] = 5
    end)
    tycho.flush()
    local f = tycho.stats().last_flush
    assert.are.same({ 5, 1 }, { f.launches, f.waves })
    local b
    tycho.parallel({ fuse = false }, function()
      a[{ { 1, 2 }, {} }] = 7
      a[{ { 2, 3 }, { 2, 3 } }] = 8 -- overlaps the write before it
      a[{ { R, R }, {} }] = 9
      b = a[{ { R - 2, R }, {} }] * 2 -- reads the row written last
    end)
    tycho.flush()
    f = tycho.stats().last_flush
    assert.are.same({ 4, 3 }, { f.launches, f.waves })
    local t = a:totable()
    assert.are.same({ 7, 8, 8, 7, 7 }, { t[2][1], t[2][2], t[2][3], t[2][4], t[2][C] })
    assert.are.same({ 3, 8, 8, 5, 4 }, { t[3][1], t[3][2], t[3][3], t[3][4], t[3][C] })
    assert.are.same({ 3, 5, 4, 9, 9 }, { t[R - 1][1], t[R - 1][2], t[R - 1][C], t[R][1], t[R][C] })
    -- numpy, the same writes: a.sum() 655889.0, b.sum() 9716.0
    assert.are.equal(655889, a:sum():item())
    assert.are.equal(9716, b:sum():item())
  end)

  it("in a small storage keep the order of program (no boxes looked at)", function()
    local a = tycho.zeros({ 6, 8 })
    tycho.flush()
    tycho.parallel({ fuse = false }, function()
      a[{ { 1, 1 }, {} }] = 1
      a[{ { 6, 6 }, {} }] = 2
    end)
    tycho.flush()
    local f = tycho.stats().last_flush
    assert.are.same({ 2, 2 }, { f.launches, f.waves })
    assert.are.equal(24, a:sum():item())
  end)
end)

describe("CG's Laplacian cut into regions", function()
  it("runs its regions in one wave, at 512 x 512 with their sums into p.Ap (at 256 x 256 p.Ap after them): the same bits on 1, 2, 3 processors", function()
    -- bits of one region a wave (before this change), the same on any --cpus;
    -- numpy: (v * lap(v)).sum() = 52179.0006 at 512 (cg_fused_dot_spec)
    local want = {
      -- 512 KiB: boxes from 128 KiB (plan/window.c), the regions in one wave, then p.Ap
      [256] = "0x1.d1855bc01a36fp+13 0x1.45eb851eb84f8p+7\t6\t2\t1,1,1,1,1,2",
      [512] = "0x1.97a6004ea4a8dp+15 0x1.62e66666666f8p+8\t10\t2\t2,2,2,2,2,2,2,2,2",
    }
    for _, n in ipairs({ 256, 512 }) do
      for _, cpus in ipairs({ 1, 2, 3 }) do
        local out, rc = spec_lua(lap_code(n), { TYCHO_CPUS = tostring(cpus) })
        assert.are.equal(0, rc, out)
        assert.are.equal(want[n] .. "\n", out)
      end
    end
  end)
end)
