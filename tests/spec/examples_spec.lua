-- tests/spec/examples_spec.lua — the example programs compute the right numbers.
--
-- Each example runs as a user would run it: through the `tycho` shell
-- (TYCHO_BIN) in its own process, with small arguments. Its printed checksum
-- is compared with a reference computed here in plain Lua (math.exp, tables)
-- from the same inputs:
--  - black_scholes.lua draws its inputs from tycho.random; a second process
--    replays the example's seed and draws and prints them (%.17g is exact),
--    and the reference prices them one by one. Put-call parity
--    (sum C - sum P = sum S - K exp(-R T)) is checked too.
--  - stencil.lua: the same Jacobi sweeps on Lua tables (the element-wise sums
--    run in the same order, so only the final sum's order differs).
--  - regression.lua checks itself; here: its exit status and the coefficients.
--  - bench/black_scholes.lua: its deterministic inputs are rebuilt here.
-- Tolerances: f64 results 1e-12 relative (SLEEF 1-ULP vs glibc, sums in a
-- different order); f32 1e-5 (24-bit arithmetic through ~40 operations; the
-- errors seen are ~3e-8).
local bin = os.getenv("TYCHO_BIN")
local src = os.getenv("TYCHO_SOURCE_DIR") or "../.."

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- Runs `tycho <argv...>`; returns its output (stdout and stderr) and exit code.
local function tycho_run(...)
  local parts = {q(bin)}
  for _, a in ipairs({...}) do parts[#parts + 1] = q(a) end
  local f = assert(io.popen(table.concat(parts, " ") .. " 2>&1"))
  local out = f:read("a")
  local ok, _, code = f:close()
  return out, ok and 0 or code
end

local function example(name, ...)
  local out, code = tycho_run(src .. "/" .. name, ...)
  assert(code == 0, name .. " exited with " .. tostring(code) .. ":\n" .. out)
  return out
end

-- The number after "<name>: " at the start of a line of out.
local function field(out, name)
  local v = ("\n" .. out):match("\n" .. name:gsub("%p", "%%%0") .. ": (%S+)")
  local n = tonumber(v)
  assert(n, "no '" .. name .. ": <number>' line in:\n" .. out)
  return n
end

local function assert_close(expected, got, rtol, what)
  local err = math.abs(got - expected)
  assert(err <= rtol * math.abs(expected),
         string.format("%s: expected %.17g, got %.17g (relative error %.3g > %g)",
                       what, expected, got, err / math.abs(expected), rtol))
end

-- Black-Scholes in plain Lua: the example's formula, one option at a time.
local R, V = 0.02, 0.3
local function cnd(d)
  local A1, A2, A3, A4, A5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429
  local k = 1.0 / (1.0 + 0.2316419 * math.abs(d))
  local c = 0.39894228040143267793994605993438 * math.exp(-0.5 * d * d)
            * (k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5)))))
  return d > 0 and 1.0 - c or c
end
local function price(s, x, t)
  local sqrt_t = math.sqrt(t)
  local d1 = (math.log(s / x) + (R + 0.5 * V * V) * t) / (V * sqrt_t)
  local d2 = d1 - V * sqrt_t
  local kexp = x * math.exp(-R * t)
  return s * cnd(d1) - kexp * cnd(d2), kexp * (1.0 - cnd(d2)) - s * (1.0 - cnd(d1))
end

-- Sums of call and put prices, and of S - K exp(-R T), over options.
local function reference(S, K, T)
  local calls, puts, parity = 0, 0, 0
  for i = 1, #S do
    local c, p = price(S[i], K[i], T[i])
    calls, puts = calls + c, puts + p
    parity = parity + (S[i] - K[i] * math.exp(-R * T[i]))
  end
  return calls, puts, parity
end

describe("examples", function()
  if not bin then
    pending("TYCHO_BIN is not set (run the specs through ctest)")
    return
  end

  for _, dtype in ipairs({"f64", "f32"}) do
    it("black_scholes.lua prices " .. dtype .. " options like plain Lua", function()
      local N = 1000
      local out = example("examples/black_scholes.lua", N, dtype, 2)
      -- The example's inputs, drawn again the way it draws them.
      local dump = tycho_run("-e", string.format([[
        tycho.seed(42)
        local function uniform(lo, hi) return tycho.random(%d, %q) * (hi - lo) + lo end
        for _, x in ipairs({uniform(5, 30), uniform(1, 100), uniform(0.25, 10)}) do
          for _, v in ipairs(x:totable()) do io.write(string.format("%%.17g\n", v)) end
        end]], N, dtype))
      local values = {}
      for v in dump:gmatch("[^\n]+") do values[#values + 1] = assert(tonumber(v), dump) end
      assert.are.equal(3 * N, #values)
      local S, K, T = {}, {}, {}
      for i = 1, N do S[i], K[i], T[i] = values[i], values[N + i], values[2 * N + i] end
      for i = 1, N do
        assert(S[i] >= 5 and S[i] <= 30 and K[i] >= 1 and K[i] <= 100 and T[i] >= 0.25 and T[i] <= 10)
      end

      local calls, puts, parity = reference(S, K, T)
      local rtol = dtype == "f64" and 1e-12 or 1e-5
      assert_close(calls, field(out, "sum of calls"), rtol, "sum of calls")
      assert_close(puts, field(out, "sum of puts"), rtol, "sum of puts")
      assert_close(calls + puts, field(out, "checksum"), rtol, "checksum")
      -- Put-call parity holds for the printed prices themselves.
      assert_close(parity, field(out, "sum of calls") - field(out, "sum of puts"),
                   dtype == "f64" and 1e-10 or 1e-5, "put-call parity")
      assert.is_true(field(out, "options/s") > 0)
      assert.truthy(out:find("black_scholes: 1000 options, " .. dtype, 1, true))
    end)
  end

  it("black_scholes.lua gives the same checksum, bit for bit, with 1 and 3 cpus", function()
    -- float sums are ordered (docs/policy.md, "Determinism"); every example
    -- under every mode: determinism_spec.lua
    local a = field(tycho_run("--cpus", "1", src .. "/examples/black_scholes.lua", 150000), "checksum")
    local b = field(tycho_run("--cpus", "3", src .. "/examples/black_scholes.lua", 150000), "checksum")
    assert.are.equal(string.format("%a", a), string.format("%a", b))
  end)

  it("stencil.lua matches Jacobi sweeps in plain Lua", function()
    local N, iterations = 13, 9
    local out = example("examples/stencil.lua", N, iterations)
    local g = {}
    for i = 1, N + 2 do
      g[i] = {}
      for j = 1, N + 2 do g[i][j] = 0.0 end
    end
    for i = 1, N + 2 do g[i][1], g[i][N + 2] = -273.15, -273.15 end
    for j = 1, N + 2 do g[N + 2][j] = -273.15 end
    for j = 1, N + 2 do g[1][j] = 40.0 end
    for _ = 1, iterations do
      local new = {}
      for i = 2, N + 1 do
        new[i] = {}
        for j = 2, N + 1 do
          -- center + north + east + west + south, as the example adds them
          new[i][j] = (g[i][j] + g[i - 1][j] + g[i][j + 1] + g[i][j - 1] + g[i + 1][j]) * 0.2
        end
      end
      for i = 2, N + 1 do
        for j = 2, N + 1 do g[i][j] = new[i][j] end
      end
    end
    local sum = 0
    for i = 2, N + 1 do
      for j = 2, N + 1 do sum = sum + g[i][j] end
    end
    -- The mean mixes +40 and -273.15 regions: compare absolutely.
    local got = field(out, "checksum")
    assert(math.abs(got - sum / (N * N)) < 1e-9,
           string.format("stencil checksum: expected %.17g, got %.17g", sum / (N * N), got))
  end)

  it("stencil.lua with no iterations leaves the inside at zero", function()
    assert.are.equal(0, field(example("examples/stencil.lua", 5, 0), "checksum"))
  end)

  it("regression.lua recovers the known coefficients both ways", function()
    local out = example("examples/regression.lua", 500, 400)
    assert.truthy(out:find("recovered: yes", 1, true))
    local truth = {1.5, -2.0, 0.5, 3.0, -1.0}
    for _, method in ipairs({"normal equations", "gradient descent"}) do
      local list = out:match(method .. "%s+{([^}]*)}")
      assert(list, "no '" .. method .. "' line in:\n" .. out)
      local i = 0
      for v in list:gmatch("[^,%s]+") do
        i = i + 1
        assert(math.abs(tonumber(v) - truth[i]) < 0.01, method .. " coefficient " .. i .. ": " .. v)
      end
      assert.are.equal(#truth, i)
    end
    assert(math.abs(field(out, "checksum") - 2.0) < 0.05)
    assert(math.abs(field(out, "gradient descent checksum") - 2.0) < 0.05)
  end)

  it("reject bad arguments with a message naming them", function()
    local out, code = tycho_run(src .. "/examples/black_scholes.lua", "ten")
    assert.are_not.equal(0, code)
    assert.truthy(out:find("N (argument 1) must be an integer >= 1, got 'ten'", 1, true), out)
    out, code = tycho_run(src .. "/examples/black_scholes.lua", "10", "i32")
    assert.are_not.equal(0, code)
    assert.truthy(out:find("dtype (argument 2) must be f64 or f32, got 'i32'", 1, true), out)
    out, code = tycho_run(src .. "/examples/stencil.lua", "8", "-1")
    assert.are_not.equal(0, code)
    assert.truthy(out:find("iterations (argument 2) must be an integer >= 0, got '-1'", 1, true), out)
  end)

  it("bench/black_scholes.lua prices its deterministic options like plain Lua", function()
    local N = 1001
    local out = example("bench/black_scholes.lua", N, 1)
    local S, K, T = {}, {}, {}
    local function frac(x) return x - math.floor(x) end
    for i = 1, N do
      local u = (i - 1) + 0.5
      S[i] = frac(u * 0.6180339887498949) * 25.0 + 5.0
      K[i] = frac(u * 0.7548776662466927) * 99.0 + 1.0
      T[i] = frac(u * 0.5698402909980532) * 9.75 + 0.25
    end
    local calls, puts = reference(S, K, T)
    assert_close(calls + puts, field(out, "checksum"), 1e-12, "bench checksum")
  end)
  it("schedule_modes.lua prints each favor's figures and identical results", function()
    local out = example("examples/schedule_modes.lua", 20000, 16)
    local rows = {}
    for favor, waves, launches, conc, peak in out:gmatch("\n(%S+)%s+(%d+)%s+(%d+)%s+(%d+)%s+([%d.]+) MiB") do
      rows[favor] = {waves = tonumber(waves), launches = tonumber(launches), conc = tonumber(conc),
                     peak = tonumber(peak)}
    end
    local d, m, x = rows.debug, rows["min-peak-memory"], rows["max-concurrency"]
    assert.is_table(d, out)
    assert.is_table(m, out)
    assert.is_table(x, out)
    assert.are.equal(d.launches, d.waves)
    assert.are.equal(0, d.conc)
    assert.are.equal(d.peak, m.peak)
    assert.is_true(x.waves <= m.waves and m.waves <= d.waves)
    assert.is_true(x.conc > 0)
    assert.is_truthy(out:find("identical under every favor", 1, true))
  end)

  it("heavy_task.lua splits the heavy task by its trait and runs task mode", function()
    local out = example("examples/heavy_task.lua", 200, 50)
    assert.is_truthy(out:find("trait parallel", 1, true))
    assert.is_truthy(out:find("mode task", 1, true))
    -- the same body in plain Lua gives the checksum
    local sum = 0
    for i = 1, 200 do
      local v = (i - 1) / 199
      for _ = 1, 50 do v = math.sin(v) * 0.9 + 0.1 end
      sum = sum + v
    end
    assert_close(sum, field(out, "checksum"), 1e-12, "heavy_task checksum")
    local explain = select(1, tycho_run("--explain", src .. "/examples/heavy_task.lua", 200, 50))
    assert.is_truthy(explain:find("trait of task 'heavy'", 1, true), explain)
  end)
end)
