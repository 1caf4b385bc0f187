-- tests/spec/cg_scalars_spec.lua — the scalars of a small CG iteration
-- (bench/workloads/cg.lua at 64 x 64).
--
-- A whole reduction of fewer elements than four ordered tiles (262,144)
-- sets its new 0-d output to the identity on the calling thread instead of
-- launching a fill (ops/ops.c, identity_now): CG's two dot products an
-- iteration cost one launch each, not two. Larger ones keep the fill (the
-- region cut joins it with the sum: cg_fused_dot_spec.lua). Expected
-- values: numpy (pasted); tycho's ordered sums differ from numpy's vdot in
-- the last bits, so CG's figures are compared within 1e-13, and bit for bit
-- across processors.

local function rel(a, b) return math.abs(a - b) / math.abs(b) end

local function run(code, cpus)
  local out, rc = spec_lua(code, { TYCHO_CPUS = tostring(cpus) })
  assert.are.equal(0, rc, out)
  return out
end

-- 20 CG iterations at 64 x 64 with a flush each (cg.lua's loop, b = seq - 0.5);
-- prints the launches appended, run and the waves of iterations 6..15, then
-- ||r||, sum(x) and sum(x * x) (%a: the bits).
local CG = [[
  local N = 64
  local function laplacian(v)
    local Av = v * 4.0
    Av[{{2, -1}, {}}] = Av[{{2, -1}, {}}] - v[{{1, -2}, {}}]
    Av[{{1, -2}, {}}] = Av[{{1, -2}, {}}] - v[{{2, -1}, {}}]
    Av[{{}, {2, -1}}] = Av[{{}, {2, -1}}] - v[{{}, {1, -2}}]
    Av[{{}, {1, -2}}] = Av[{{}, {1, -2}}] - v[{{}, {2, -1}}]
    return Av
  end
  local function vdot(a, b) return (a * b):sum() end
  local u = (tycho.arange(N * N) + 0.5) * 0.6180339887498949
  local b = ((u - tycho.floor(u)) - 0.5):reshape({ N, N })
  local x = tycho.zeros({ N, N })
  local r = b:copy()
  local pp = r
  local rsold = vdot(r, r)
  tycho.flush()
  local s0, s1
  for i = 1, 20 do
    if i == 6 then s0 = tycho.stats() end
    local Ap = laplacian(pp)
    local alpha = rsold / vdot(pp, Ap)
    x = x + alpha * pp
    r = r - alpha * Ap
    local rsnew = vdot(r, r)
    pp = r + (rsnew / rsold) * pp
    rsold = rsnew
    tycho.flush()
    if i == 15 then s1 = tycho.stats() end
  end
  print(s1.launches - s0.launches, s1.launches_run - s0.launches_run, s1.waves - s0.waves)
  print(string.format("%a %a %a", math.sqrt(rsold:item()), x:sum():item(), (x * x):sum():item()))
]]

describe("CG's scalars at 64 x 64", function()
  it("numpy's values, the same bits on 1, 2 and 3 processors, no fill launch", function()
    -- numpy (cg.py's loop, 20 iterations): ||r||, x.sum(), (x * x).sum()
    local want = { 0.1396805291797686, -16.633402867706906, 38.10497116189693 }
    local ref
    for _, cpus in ipairs({ 1, 2, 3 }) do
      local out = run(CG, cpus)
      local appended, ran, waves, v1, v2, v3 =
        out:match("^(%d+)%s+(%d+)%s+(%d+)\n(%S+) (%S+) (%S+)")
      assert(appended, out)
      ref = ref or { v1, v2, v3 }
      assert.are.same(ref, { v1, v2, v3 })
      for k, v in ipairs({ v1, v2, v3 }) do
        assert.is_true(rel(tonumber(v), want[k]) < 1e-13, v)
      end
      -- 10 iterations: 21 launches appended an iteration (23 with the two
      -- fills), 10 run after fusion (12 with the fills) in 10 waves
      assert.are.equal(210, tonumber(appended), out)
      assert.are.equal(100, tonumber(ran), out)
      assert.are.equal(100, tonumber(waves), out)
    end
  end)

  it("small whole reductions start from the identity without a launch", function()
    local a = (tycho.arange(1000) * 0.37) % 1.0 - 0.5
    tycho.flush()
    local s0 = tycho.stats()
    local sum = a:sum()
    tycho.flush()
    local s1 = tycho.stats()
    assert.are.equal(1, s1.launches - s0.launches)
    assert.are.equal(1, s1.launches_run - s0.launches_run)
    -- numpy: a.sum(), np.prod(1 + a * 0.01), a.min(), a.max(), a.mean()
    assert.is_true(rel(sum:item(), -5.000000000002398) < 1e-13)
    assert.is_true(rel((a * 0.01 + 1.0):prod():item(), 0.947273000588423) < 1e-13)
    assert.are.equal(-0.5, a:min():item())
    assert.are.equal(0.4900000000000091, a:max():item())
    assert.is_true(rel(a:mean():item(), -0.005000000000002398) < 1e-12)
    -- integers: ai = arange(1000) - 500; numpy: -500, prod((ai % 3 + 1)[:30]) = 60466176
    local ai = tycho.arange(1000) - 500
    assert.are.equal(-500, ai:sum():item())
    assert.are.equal(60466176, (ai % 3 + 1)[{ { 1, 30 } }]:prod():item())
    assert.are.equal(-500, ai:min():item())
    assert.are.equal(499, ai:max():item())
    -- bool sums count (numpy: (a > 0).sum() = 490)
    assert.are.equal(490, a:gt(0):sum():item())
    -- an empty store's sum and prod: the identity (numpy: 0.0, 1.0)
    local e = tycho.zeros({ 0 })
    assert.are.equal(0, e:sum():item())
    assert.are.equal(1, e:prod():item())
  end)

  it("a whole sum of four ordered tiles or more keeps its fill launch", function()
    local big = tycho.ones({ 262144 })
    tycho.flush()
    local s0 = tycho.stats()
    local s = big:sum()
    tycho.flush()
    local s1 = tycho.stats()
    assert.are.equal(2, s1.launches - s0.launches) -- the fill and the sum
    assert.are.equal(262144, s:item())
    -- one element fewer: the sum alone
    local less = tycho.ones({ 262143 })
    tycho.flush()
    s0 = tycho.stats()
    s = less:sum()
    tycho.flush()
    s1 = tycho.stats()
    assert.are.equal(1, s1.launches - s0.launches)
    assert.are.equal(262143, s:item())
  end)
end)
