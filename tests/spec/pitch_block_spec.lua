-- tests/spec/pitch_block_spec.lua — interpreted runs down a grid's columns.
--
-- A flat run whose views step through memory by a multiple of 512 bytes (a
-- column of a grid with rows 512 B, 2 KiB or 16 KiB long; a 1-D view with
-- such a step), of at most 16,384 elements, runs in blocks of 8 elements in
-- the interpreter (fused_cpu.c, PITCH_BLOCK) instead of 512 and more: every
-- element of such a run is on a line of the same few L1 sets. The blocks
-- change no value: each element's sub-operations are the same, in the same
-- order. Here the values of such runs (lengths that are not multiples of 8,
-- in-place updates, several views of one store) must be the unfused
-- launches' bits on 1-3 processors, and the compiled kernels' where the run
-- is compiled; the integer-valued cases are checked against Lua's own sums.

local CASES = [[
  local function f(x) return string.format("%.17g", x) end
  -- 1. cg.lua's Laplacian on grids whose rows are 512 B, 2 KiB and 16 KiB
  -- apart: its edge columns are runs of N - 2 elements down one column
  local function lap(rows, cols)
    local v = tycho.arange(rows * cols):reshape({ rows, cols }) * 0.001 - 1.5
    local Av = v * 4.0
    Av[{{2, -1}, {}}] = Av[{{2, -1}, {}}] - v[{{1, -2}, {}}]
    Av[{{1, -2}, {}}] = Av[{{1, -2}, {}}] - v[{{2, -1}, {}}]
    Av[{{}, {2, -1}}] = Av[{{}, {2, -1}}] - v[{{}, {1, -2}}]
    Av[{{}, {1, -2}}] = Av[{{}, {1, -2}}] - v[{{}, {2, -1}}]
    tycho.flush()
    local edges = {}
    for _, r in ipairs({ 2, rows // 2, rows - 1 }) do
      edges[#edges + 1] = f(Av[{ r, 1 }]:item())
      edges[#edges + 1] = f(Av[{ r, cols }]:item())
    end
    return f(Av:sum():item()) .. " " .. f((Av * Av):sum():item()) .. " " .. table.concat(edges, " ")
  end
  print("lap64", lap(64, 64))
  print("lap256", lap(256, 256))
  print("lap2048", lap(99, 2048))
  -- 2. two 1-D views 2 KiB apart (every 256th element), 1,001 elements, an
  -- update in place of one of them: integers, so every sum is exact
  local x = tycho.arange(256 * 1001) * 1.0
  local y = tycho.arange(256 * 1001) * 2.0
  local v = x[{{1, -1, 256}}]
  local w = y[{{1, -1, 256}}]
  v[{}] = ((v + w) * 2.0 - v) * 0.5 + w
  tycho.flush()
  print("view", f(v:sum():item()), f(v[{ 1001 }]:item()), f(x:sum():item()))
  -- 3. a column 16 KiB apart, 17 elements, with a strided right-hand side
  local g = tycho.arange(17 * 2048):reshape({ 17, 2048 }) * 1.0
  g[{{}, 5}] = g[{{}, 5}] * 3.0 - g[{{}, 7}] + 1.0
  tycho.flush()
  print("col", f(g[{{}, 5}]:sum():item()), f(g[{ 17, 5 }]:item()))
]]

local function run(env) return spec_run_keyed(CASES, env) end

-- Lua's own values for cases 2 and 3 (integers below 2^53: exact in any order)
local function expected()
  local vs, vlast, xs = 0, 0, 0
  for i = 0, 256 * 1001 - 1 do
    local xi = i * 1.0
    if i % 256 == 0 then
      local wi = i * 2.0
      xi = ((xi + wi) * 2.0 - xi) * 0.5 + wi
      vs = vs + xi
      vlast = xi
    end
    xs = xs + xi
  end
  local cs, clast = 0, 0
  for r = 0, 16 do
    local c = (r * 2048 + 4) * 3.0 - (r * 2048 + 6) + 1.0
    cs = cs + c
    clast = c
  end
  local function f(x) return string.format("%.17g", x) end
  return f(vs) .. "\t" .. f(vlast) .. "\t" .. f(xs), f(cs) .. "\t" .. f(clast)
end

describe("interpreted runs down a grid's columns", function()
  local unfused = run({ TYCHO_FUSE = "off", TYCHO_CPUS = "1" })
  local view, col = expected()

  it("have the exact values where they are integers", function()
    assert.are.equal(view, unfused.view)
    assert.are.equal(col, unfused.col)
  end)

  for _, cpus in ipairs({ "1", "2", "3" }) do
    it("give the unfused launches' bits, interpreted, on " .. cpus .. " processors", function()
      local r, out = run({ TYCHO_CODEGEN = "off", TYCHO_CPUS = cpus })
      for _, k in ipairs({ "lap64", "lap256", "lap2048", "view", "col" }) do
        assert.are.equal(unfused[k], r[k], k .. ":\n" .. out)
      end
    end)
  end

  it("give the same bits compiled", function()
    local r, out = run({ TYCHO_CODEGEN = "always", TYCHO_CODEGEN_WAIT = "1", TYCHO_CACHE_DIR = spec_tmpdir(),
                         TYCHO_CPUS = "2" })
    for _, k in ipairs({ "lap64", "lap256", "lap2048", "view", "col" }) do
      assert.are.equal(unfused[k], r[k], k .. ":\n" .. out)
    end
  end)
end)
