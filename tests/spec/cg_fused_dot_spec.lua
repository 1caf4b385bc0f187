-- tests/spec/cg_fused_dot_spec.lua — CG's p.Ap in the Laplacian's pass.
--
-- The matrix-free Laplacian of bench/workloads/cg.lua is cut into regions
-- (plan/regions.c); the dot product p.(A p) right after it joins the cut:
-- each region sums its part of p * Ap into the 0-d result inside the fused
-- run that computes Ap there, the largest region (the inside) first. So a
-- CG iteration makes one pass less over the grid (16 of 104 bytes a point).
-- The sum's order is region after region, each its own ordered tree, fixed
-- by the shapes: other bits than the whole grid's tree (close to numpy), the
-- same on any number of processors. Below 4 ordered tiles (262,144
-- elements) the dot product keeps its own pass (the inside's sum would be
-- one piece). Expected values: numpy, pasted.

local function rel(a, b) return math.abs(a - b) / math.abs(b) end

local function run(code, cpus, env)
  env = env or {}
  env.TYCHO_CPUS = tostring(cpus)
  local out, rc = spec_lua(code, env)
  assert.are.equal(0, rc, out)
  return out
end

local LAPLACIAN = [[
  local function laplacian(v)
    local Av = v * 4.0
    Av[{{2, -1}, {}}] = Av[{{2, -1}, {}}] - v[{{1, -2}, {}}]
    Av[{{1, -2}, {}}] = Av[{{1, -2}, {}}] - v[{{2, -1}, {}}]
    Av[{{}, {2, -1}}] = Av[{{}, {2, -1}}] - v[{{}, {1, -2}}]
    Av[{{}, {1, -2}}] = Av[{{}, {1, -2}}] - v[{{}, {2, -1}}]
    return Av
  end
  -- the launches of the last flush over the inside or the whole grid:
  -- "rows pieces ops"
  local function passes(N, n)
    local out, ex, last = {}, tycho.explain(n), 0
    for _, e in ipairs(ex) do last = math.max(last, e.flush) end
    for _, e in ipairs(ex) do
      local ops = (e.fused_ops or e.task or ""):gsub("%[compiled%] ", "")
      if e.flush == last and #e.shape == 2 and e.shape[1] >= N - 2 and e.shape[2] >= N - 2 then
        out[#out + 1] = string.format("%d %d %s", e.shape[1], e.pieces, ops)
      end
    end
    return out
  end
]]

-- v . (A v) for v = (arange(N*N) % 97) * 0.01 - 0.3; prints its bits, the
-- bits of Av:sum(), then the passes over the grid of the dot product's flush
local DOT = LAPLACIAN .. [[
  local N = SIZE
  local v = ((tycho.arange(N * N) % 97) * 0.01 - 0.3):reshape(N, N)
  tycho.flush()
  local Av = laplacian(v)
  local s = (v * Av):sum():item()
  local p = passes(N, 30)
  print(string.format("%a %a", s, Av:sum():item()))
  for _, l in ipairs(p) do print(l) end
]]

local function dot(n, cpus)
  local out = run(DOT:gsub("SIZE", tostring(n)), cpus)
  local s, asum = out:match("^(%S+) (%S+)")
  assert(s, out)
  local p = {}
  for l in out:gmatch("\n(%d+ %d+ [^\n]*)") do p[#p + 1] = l end
  return s, asum, p
end

describe("CG's p.Ap in the Laplacian's pass", function()
  it("joins the inside's fused run at 512 x 512: numpy's values, the same bits on 1, 2, 3 processors", function()
    -- numpy: (v * lap(v)).sum() = 52179.0006, lap(v).sum() = 354.9000000000083
    local first
    for _, cpus in ipairs({ 1, 2, 3 }) do
      local s, asum, p = dot(512, cpus)
      first = first or s
      assert.are.equal(first, s)
      assert.is_true(rel(tonumber(s), 52179.0006) < 1e-12, s)
      assert.is_true(rel(tonumber(asum), 354.9000000000083) < 1e-9, asum)
      -- one pass: the Laplacian's inside and its part of the sum (4 ordered
      -- tiles of 510 x 510, one piece on one processor); no pass of its own
      -- for p.Ap over the whole grid
      assert.are.same({ string.format("510 %d mul sub copy sub copy sub copy sub copy mul sum",
                                      cpus == 1 and 1 or 4) }, p)
    end
  end)

  it("compiled (ty_fk4, rows of the grid feeding the ordered sum): the interpreter's bits", function()
    local code = LAPLACIAN .. [[
      local N = 700
      local v = ((tycho.arange(N * N) % 97) * 0.01 - 0.3):reshape(N, N)
      tycho.flush()
      local Av = laplacian(v)
      local s = (v * Av):sum():item()
      local ops
      for _, e in ipairs(tycho.explain(30)) do
        if e.shape[1] == N - 2 and e.shape[2] == N - 2 then ops = e.fused_ops end
      end
      print(tycho.config().isa)
      print(string.format("%a %a", s, Av:sum():item()), ops)
    ]]
    local ref
    for _, cg in ipairs({ "off", "always" }) do
      for _, cpus in ipairs({ 1, 2 }) do
        local out = run(code, cpus, { TYCHO_CODEGEN = cg })
        local isa, vals, ops = out:match("^(%S+)\n(%S+ %S+)%s+([^\n]*)")
        assert(vals, out)
        ref = ref or vals
        assert.are.equal(ref, vals)
        local want = "mul sub copy sub copy sub copy sub copy mul sum"
        -- the baseline level (TYCHO_ISA=baseline) has no generated code
        local compiled = cg == "always" and isa ~= "baseline"
        assert.are.equal(compiled and "[compiled] " .. want or want, ops)
      end
    end
    -- numpy (700 x 700, the same v): (v * lap(v)).sum() = 83091.86000000003
    assert.is_true(rel(tonumber(ref:match("^%S+")), 83091.86000000003) < 1e-12, ref)
  end)

  it("keeps its own pass below 262,144 elements", function()
    -- numpy (256 x 256, the same v): (v * lap(v)).sum() = 14896.6698
    local s, _, p = dot(256, 2)
    assert.is_true(rel(tonumber(s), 14896.6698) < 1e-12, s)
    assert.are.same({ "254 2 mul sub copy sub copy sub copy sub copy", "256 2 mul sum" }, p)
  end)

  it("writes a product the program keeps in full", function()
    local code = LAPLACIAN .. [[
      local N = 512
      local v = ((tycho.arange(N * N) % 97) * 0.01 - 0.3):reshape(N, N)
      tycho.flush()
      local Av = laplacian(v)
      local t = v * Av
      local s = t:sum()
      tycho.flush()
      print(string.format("%a %a %a %a", s:item(), t[{1, 1}]:item(), t[{300, 2}]:item(), t[{512, 512}]:item()))
      print(string.format("%a", (t * 1.0):sum():item()))
    ]]
    local out = run(code, 2)
    local s, a, b, c = out:match("^(%S+) (%S+) (%S+) (%S+)")
    local whole = out:match("\n(%S+)")
    assert(s and whole, out)
    -- numpy: t[0,0] = 0.26399999999999996, t[299,1] = 0.06789999999999997,
    -- t[511,511] = 0.12539999999999998
    assert.is_true(rel(tonumber(s), 52179.0006) < 1e-12, s)
    assert.is_true(rel(tonumber(whole), 52179.0006) < 1e-12, whole)
    assert.are.equal(0.26399999999999996, tonumber(a))
    assert.are.equal(0.06789999999999997, tonumber(b))
    assert.are.equal(0.12539999999999998, tonumber(c))
  end)

  it("a dot product over part of the grid: its regions only, the largest first", function()
    local code = LAPLACIAN .. [[
      local N = 600
      local v = ((tycho.arange(N * N) % 97) * 0.01 - 0.3):reshape(N, N)
      tycho.flush()
      local out = {}
      for _, box in ipairs({ { { 2, -1 }, { 2, -1 } }, { { 1, -2 }, {} } }) do
        local Av = laplacian(v)
        local s = (v[box] * Av[box]):sum():item()
        local ops
        for _, e in ipairs(tycho.explain(30)) do
          if e.shape[1] == N - 2 and e.shape[2] == N - 2 then ops = e.fused_ops:gsub("%[compiled%] ", "") end
        end
        out[#out + 1] = string.format("%a|%s", s, ops)
      end
      print(table.concat(out, " "))
    ]]
    local ref
    for _, cpus in ipairs({ 1, 2, 3 }) do
      local out = run(code, cpus)
      local a, oa, b, ob = out:match("^(%S+)|([^|]+) (%S+)|([^\n]+)")
      assert(a, out)
      ref = ref or (a .. " " .. b)
      assert.are.equal(ref, a .. " " .. b)
      -- numpy (600 x 600): (v[1:, 1:] * lap(v)[1:, 1:]).sum() = 54550.5535,
      -- (v[:-1] * lap(v)[:-1]).sum() = 54706.0835
      assert.is_true(rel(tonumber(a), 54550.5535) < 1e-12, a)
      assert.is_true(rel(tonumber(b), 54706.0835) < 1e-12, b)
      assert.are.equal("mul sub copy sub copy sub copy sub copy mul sum", oa)
      assert.are.equal("mul sub copy sub copy sub copy sub copy mul sum", ob)
    end
  end)

  -- the loop of bench/workloads/cg.lua on a 512 x 512 grid, a flush per
  -- iteration: r.r after each, x.sum(), the last iteration's passes
  local CG = LAPLACIAN .. [[
    local N = 512
    local function vdot(a, b) return (a * b):sum() end
    local b = (tycho.arange(N * N) * 0.001):reshape(N, N) - 0.5
    local x = tycho.zeros({ N, N })
    local r = b:copy()
    local p = r
    local rsold = vdot(r, r)
    tycho.flush()
    local last
    for i = 1, 3 do
      local Ap = laplacian(p)
      local pAp = vdot(p, Ap)
      local alpha = rsold / pAp
      x = x + alpha * p
      r = r - alpha * Ap
      local rsnew = vdot(r, r)
      p = r + (rsnew / rsold) * p
      rsold = rsnew
      io.write(string.format("%a %a ", pAp:item(), rsnew:item()))
      last = passes(N, 40)
    end
    print(string.format("%a", x:sum():item()))
    for _, l in ipairs(last) do print(l) end
  ]]

  it("a CG iteration: numpy's values, the same bits on 1, 2 and 3 processors, three passes", function()
    -- numpy, the same program: p.Ap and r.r after iterations 1-3, x.sum()
    local want = { 58372429.28076801, 608288582779.0806, 613526120142.3872, 603528160471.8281,
                   617086874864.758, 617090497783.2948, 10362657620.175673 }
    local first
    for _, cpus in ipairs({ 1, 2, 3 }) do
      local out = run(CG, cpus)
      local vals = out:match("^([^\n]*)")
      first = first or vals
      assert.are.equal(first, vals)
      local k = 0
      for v in vals:gmatch("%S+") do
        k = k + 1
        assert.is_true(rel(tonumber(v), want[k]) < 1e-11, k .. ": " .. v)
      end
      assert.are.equal(7, k)
      if cpus == 2 then
        local p = {}
        for l in out:gmatch("\n(%d+ %d+ [^\n]*)") do p[#p + 1] = l end
        -- {Ap = A p, p.Ap}; {x += a p, r -= a Ap, r.r}; {p = r + b p}
        assert.are.same({ "510 4 mul sub copy sub copy sub copy sub copy mul sum",
                          "512 4 mul add mul sub mul sum", "512 2 mul add" }, p)
      end
    end
  end)
end)
