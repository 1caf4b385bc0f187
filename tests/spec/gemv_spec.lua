-- tests/spec/gemv_spec.lua — a float matrix whose rows are contiguous times
-- a vector, at any inner length: each element is kernels_gemv.c's
-- fixed-order dot (8 lanes, lane l the products p = l mod 8 in p order, the
-- products past the last whole vector added to their lanes one at a time,
-- then a fixed tree), not a BLAS call, so its bits do not depend on the row
-- blocks, the pieces or --cpus (issue 19). Expected values: numpy emulating
-- that order (acc = acc + A[:, p:p+8] * x[p:p+8] over the whole vectors,
-- acc[:, p % 8] += A[:, p] * x[p] after, b = acc[:, :4] + acc[:, 4:],
-- c = b[:, :2] + b[:, 2:], c[:, 0] + c[:, 1]) and numpy's A @ x.

-- frac((i + 0.5) * a), i from 0 (bench/workloads/common.lua's seq)
local SEQ = [[
local function seq(n, a)
  local u = (tycho.arange(n) + 0.5) * a
  return u - tycho.floor(u)
end
]]
local seq = load(SEQ .. "return seq", "seq", "t", setmetatable({ tycho = tycho }, { __index = _G }))()

local function close(got, want, rtol)
  assert(math.abs(got - want) <= rtol * math.abs(want),
         string.format("%.17g is not %.17g within %g", got, want, rtol))
end

describe("a matrix times a vector", function()
  -- 301 rows (75 groups of four and one row alone), k = 1003 (125 whole
  -- vectors of 8 and 3 products past them)
  local A = seq(301 * 1003, 0.6180339887498949):reshape({ 301, 1003 })
  local x = seq(1003, 0.7548776662466927)

  it("gives the fixed order's bits in f64, within 1e-15 of numpy's A @ x", function()
    local y = A:dot(x):totable()
    assert.are.equal(301, #y)
    assert.are.equal("0x1.f7af88bead18cp+7", string.format("%a", y[1]))
    assert.are.equal("0x1.f7ef5360a6fedp+7", string.format("%a", y[150]))
    assert.are.equal("0x1.f668e77003c9cp+7", string.format("%a", y[301]))
    local s = 0
    for i = 1, 301 do s = s + y[i] end
    close(s, 75525.73542316558, 1e-15)
    close(y[1], 251.84284015524855, 1e-15)
    close(y[150], 251.9674329952099, 1e-15)
    close(y[301], 251.20489072843773, 1e-15)
  end)

  it("gives the fixed order's bits in f32, within 1e-6 of numpy's A @ x", function()
    local y = A:astype("f32"):dot(x:astype("f32")):totable()
    assert.are.equal("0x1.f7af88p+7", string.format("%a", y[1]))
    assert.are.equal("0x1.f7ef58p+7", string.format("%a", y[150]))
    assert.are.equal("0x1.f668e6p+7", string.format("%a", y[301]))
    close(y[1], 251.84283447265625, 1e-6)
    close(y[150], 251.9674072265625, 1e-6)
    close(y[301], 251.20486450195312, 1e-6)
  end)

  it("gives the same bits under any --cpus and --parallel mode", function()
    -- 2000 rows: 16 row blocks of 125, split among the pieces
    local code = SEQ .. [[
      local A = seq(2000 * 1003, 0.6180339887498949):reshape({ 2000, 1003 })
      local x = seq(1003, 0.7548776662466927)
      for _, t in ipairs({ "f64", "f32" }) do
        local y = A:astype(t):dot(x:astype(t))
        print(string.format("%a %a %a %a", y[1], y[777], y[2000],
                            y:astype("f64"):sum():item()))
      end
    ]]
    local ref = spec_lua(code, { TYCHO_CPUS = "1" })
    assert(ref:find("0x1%.") and select(2, ref:gsub("\n", "")) == 2, ref)
    for _, env in ipairs({ { TYCHO_CPUS = "2" }, { TYCHO_CPUS = "3", TYCHO_PARALLEL = "all" },
                          { TYCHO_CPUS = "8", TYCHO_PARALLEL = "all", TYCHO_OVERDECOMPOSE = "3" },
                          { TYCHO_CPUS = "2", TYCHO_PARALLEL = "single" } }) do
      assert.are.equal(ref, spec_lua(code, env))
    end
  end)

  it("gives the same bits when a product sweeps its matrix backwards", function()
    -- repeated products over one matrix of 4 MiB or more on several workers:
    -- every other wave takes its pieces, and each piece its rows, last first
    -- (exec.c's sweep_backwards), starting on what the last one left in cache
    local code = SEQ .. [[
      local A = seq(2000 * 1003, 0.6180339887498949):reshape({ 2000, 1003 })
      local x = seq(1003, 0.7548776662466927)
      local back = tycho.stats().waves_backwards
      for _, t in ipairs({ "f64", "f32" }) do
        local At, xt = A:astype(t), x:astype(t)
        for _ = 1, 3 do
          local y = At:dot(xt)
          print(string.format("%a %a %a %a %a", y[1], y[125], y[126], y[2000],
                              y:astype("f64"):sum():item()))
        end
      end
      print(string.format("backwards %d", tycho.stats().waves_backwards - back))
    ]]
    local function lines(out)
      local l = {}
      for line in out:gmatch("[^\n]+") do l[#l + 1] = line end
      return l
    end
    local ref = lines(spec_lua(code, { TYCHO_CPUS = "1" }))
    assert.are.equal(7, #ref)
    assert.are.equal("backwards 0", ref[7])
    assert.are.equal(ref[1], ref[2])
    assert.are.equal(ref[1], ref[3])
    assert.are.equal(ref[4], ref[6])
    assert(ref[1]:find("^0x1%."), ref[1])
    for _, env in ipairs({ { TYCHO_CPUS = "2" }, { TYCHO_CPUS = "3", TYCHO_PARALLEL = "all" } }) do
      local got = lines(spec_lua(code, env))
      assert.are.equal(7, #got)
      for i = 1, 6 do assert.are.equal(ref[i], got[i]) end
      -- of three products over one matrix, one or two swept backwards (which
      -- ones depends on the waves over it before: the conversion too)
      local back = tonumber(got[7]:match("^backwards (%d+)$"))
      assert(back and back >= 2, got[7])
    end
  end)

  it("gives the same bits at every instruction-set level", function()
    -- the kernel set compiled for baseline, AVX2 and AVX-512 (each level's
    -- own vectors, no contraction): 301 rows, on AVX-512 37 groups of eight,
    -- one of four and one row alone, below it 75 groups of four and one alone
    local code = SEQ .. [[
      local A = seq(301 * 1003, 0.6180339887498949):reshape({ 301, 1003 })
      local x = seq(1003, 0.7548776662466927)
      for _, t in ipairs({ "f64", "f32" }) do
        local y = A:astype(t):dot(x:astype(t))
        print(tycho.config().isa, string.format("%a %a %a %a %a", y[1], y[296], y[297], y[301],
                                                y:astype("f64"):sum():item()))
      end
    ]]
    local function bits(isa) -- the lines without the level's name (a CPU below
      local out = spec_lua(code, { TYCHO_ISA = isa }) -- the level runs its best)
      assert(out:find("^%w+\t0x1%."), out)
      return (out:gsub("%w+\t", ""))
    end
    local ref = bits("baseline")
    assert(ref:find("0x1%.") and select(2, ref:gsub("\n", "")) == 2, ref)
    assert(ref:find("0x1.f7af88bead18cp+7", 1, true), ref) -- y[1], as above
    for _, isa in ipairs({ "avx2", "avx512" }) do assert.are.equal(ref, bits(isa)) end
  end)

  it("gives the fixed order's bits at every level when k is whole vectors", function()
    -- k = 1000 (125 vectors, no products past them): below AVX-512 the four
    -- rows' lanes 0-3 and 4-7 are summed as two halves (kernels_gemv.c,
    -- SPLIT), on AVX-512 as one vector; numpy emulating the order as above
    -- (A @ x: 251.30283326627801 for y[1], 252.1871606358304 for y[301])
    local code = SEQ .. [[
      local A = seq(301 * 1000, 0.6180339887498949):reshape({ 301, 1000 })
      local x = seq(1000, 0.7548776662466927)
      local y = A:dot(x)
      local y32 = A:astype("f32"):dot(x:astype("f32"))
      print(string.format("%a %a %a %a %a %a", y[1], y[150], y[297], y[301], y32[1], y32[301]))
    ]]
    local want = "0x1.f69b0cf63d9c3p+7 0x1.f583b1fd2ff14p+7 0x1.f5c2aa9702522p+7 " ..
                 "0x1.f85fd384d3fb2p+7 0x1.f69b0cp+7 0x1.f85fd4p+7\n"
    for _, isa in ipairs({ "baseline", "avx2", "avx512" }) do
      assert.are.equal(want, spec_lua(code, { TYCHO_ISA = isa }))
    end
  end)

  it("still takes a transposed matrix (BLAS's gemv) to numpy's values", function()
    local At = seq(1003 * 301, 0.6180339887498949):reshape({ 1003, 301 }):t()
    local y = At:dot(x):totable()
    assert.are.equal(301, #y)
    -- numpy: (seq(1003*301, a1).reshape(1003, 301).T @ seq(1003, a2))[[0, 150, 300]]
    close(y[1], 251.983506520819, 1e-13)
    close(y[151], 247.34470441860668, 1e-13)
    close(y[301], 251.97849484550244, 1e-13)
  end)
end)
