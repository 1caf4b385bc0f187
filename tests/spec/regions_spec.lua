-- tests/spec/regions_spec.lua — shifted in-place updates of one store are cut
-- into regions that fuse (runtime/src/plan/regions.c): the values are those
-- of the launches one by one (checked against plain Lua arithmetic and
-- against fuse = false), per-element order is kept where updates overlap,
-- temporaries Lua still holds keep their values, a stencil that reads the
-- store it writes is left alone, and the inside of the grid becomes one
-- fused pass.

local function off(f) return tycho.parallel({ fuse = false }, f) end

-- the CG Laplacian of bench/workloads/cg.lua
local function laplacian(v)
  local Av = v * 4.0
  Av[{ { 2, -1 }, {} }] = Av[{ { 2, -1 }, {} }] - v[{ { 1, -2 }, {} }]
  Av[{ { 1, -2 }, {} }] = Av[{ { 1, -2 }, {} }] - v[{ { 2, -1 }, {} }]
  Av[{ {}, { 2, -1 } }] = Av[{ {}, { 2, -1 } }] - v[{ {}, { 1, -2 } }]
  Av[{ {}, { 1, -2 } }] = Av[{ {}, { 1, -2 } }] - v[{ {}, { 2, -1 } }]
  return Av
end

-- the same in plain Lua, in the same order of operations per element
local function laplacian_lua(t, n, m)
  local r = {}
  for i = 1, n do
    r[i] = {}
    for j = 1, m do r[i][j] = t[i][j] * 4.0 end
  end
  for i = 2, n do for j = 1, m do r[i][j] = r[i][j] - t[i - 1][j] end end
  for i = 1, n - 1 do for j = 1, m do r[i][j] = r[i][j] - t[i + 1][j] end end
  for i = 1, n do for j = 2, m do r[i][j] = r[i][j] - t[i][j - 1] end end
  for i = 1, n do for j = 1, m - 1 do r[i][j] = r[i][j] - t[i][j + 1] end end
  return r
end

local function grid(n, m)
  local t = {}
  for i = 1, n do
    t[i] = {}
    for j = 1, m do t[i][j] = math.sin(i * 0.37 + j * 0.11) * 3.0 + (i * m + j) % 7 end
  end
  return t
end

local function count_fused(k, shape)
  local c = 0
  for _, e in ipairs(tycho.explain(k)) do
    if e.task == "fused" and e.shape[1] == shape[1] and e.shape[2] == shape[2] then c = c + 1 end
  end
  return c
end

describe("regions", function()
  it("a Laplacian by shifted in-place updates: the values of the launches one by one", function()
    local n, m = 150, 140 -- 21,000 elements: cut
    local t = grid(n, m)
    local v = tycho.array(t)
    local got = laplacian(v):totable()
    spec_same(got, laplacian_lua(t, n, m))
    local unfused = off(function() return laplacian(v):totable() end)
    spec_same(got, unfused)
  end)

  it("the inside of the grid is one fused pass", function()
    local n = 200
    local v = tycho.array(grid(n, n))
    tycho.flush()
    local Av = laplacian(v)
    tycho.flush()
    local inside
    for _, e in ipairs(tycho.explain(40)) do
      if e.task == "fused" and e.shape[1] == n - 2 and e.shape[2] == n - 2 then inside = e end
    end
    assert.is_not_nil(inside, "no fused launch over the inside of the grid")
    assert.are.equal("mul sub copy sub copy sub copy sub copy", inside.fused_ops)
    assert.are.equal(1, count_fused(40, { n - 2, n - 2 }))
    spec_same(Av:totable(), laplacian_lua(grid(n, n), n, n))
  end)

  it("keeps the order of overlapping updates per element", function()
    local n = 40000
    local a = tycho.arange(n) * 1.0
    a[{ { 2, -1 } }] = a[{ { 2, -1 } }] * 2.0
    a[{ { 1, -2 } }] = a[{ { 1, -2 } }] + 1.0
    a[{ { 3, -1 } }] = a[{ { 3, -1 } }] - 0.5
    local got = a:totable()
    for i = 1, n do
      local x = i - 1.0
      if i >= 2 then x = x * 2.0 end
      if i <= n - 1 then x = x + 1.0 end
      if i >= 3 then x = x - 0.5 end
      assert(got[i] == x, string.format("element %d: got %.17g, expected %.17g", i, got[i], x))
    end
  end)

  it("a temporary Lua still holds keeps its values", function()
    local n = 30000
    local v = tycho.arange(n) * 0.5
    local a = v * 3.0
    local t1 = a[{ { 2, -1 } }] - v[{ { 1, -2 } }]
    a[{ { 2, -1 } }] = t1
    local t2 = a[{ { 1, -2 } }] + v[{ { 2, -1 } }]
    a[{ { 1, -2 } }] = t2
    local ga, g1, g2 = a:totable(), t1:totable(), t2:totable()
    for i = 1, n - 1 do
      local vi, vn = (i - 1) * 0.5, i * 0.5
      assert(g1[i] == vn * 3.0 - vi, "t1 " .. i)
    end
    for i = 1, n - 1 do
      local a_i = (i - 1) * 0.5 * 3.0
      if i >= 2 then a_i = g1[i - 1] end
      assert(g2[i] == a_i + i * 0.5, "t2 " .. i)
      assert(ga[i] == g2[i], "a " .. i)
    end
    assert(ga[n] == g1[n - 1], "a last")
  end)

  it("leaves a stencil that reads the store it writes to numpy's semantics", function()
    local n = 20000
    local a = tycho.arange(n) * 1.0
    a[{ { 2, -1 } }] = a[{ { 2, -1 } }] + a[{ { 1, -2 } }] -- the right side first, as numpy
    a[{ { 1, -2 } }] = a[{ { 1, -2 } }] * 2.0
    local got = a:totable()
    for i = 1, n do
      local x = i - 1.0
      if i >= 2 then x = x + (i - 2.0) end
      if i <= n - 1 then x = x * 2.0 end
      assert(got[i] == x, string.format("element %d: got %.17g, expected %.17g", i, got[i], x))
    end
  end)

  it("cuts a 3-D store shifted along every axis", function()
    local n = 30 -- 27,000 elements, 27 regions
    local v = tycho.arange(n * n * n):reshape(n, n, n) * 0.25
    local function lap3(u)
      local A = u * 6.0
      A[{ { 2, -1 }, {}, {} }] = A[{ { 2, -1 }, {}, {} }] - u[{ { 1, -2 }, {}, {} }]
      A[{ { 1, -2 }, {}, {} }] = A[{ { 1, -2 }, {}, {} }] - u[{ { 2, -1 }, {}, {} }]
      A[{ {}, { 2, -1 }, {} }] = A[{ {}, { 2, -1 }, {} }] - u[{ {}, { 1, -2 }, {} }]
      A[{ {}, { 1, -2 }, {} }] = A[{ {}, { 1, -2 }, {} }] - u[{ {}, { 2, -1 }, {} }]
      A[{ {}, {}, { 2, -1 } }] = A[{ {}, {}, { 2, -1 } }] - u[{ {}, {}, { 1, -2 } }]
      A[{ {}, {}, { 1, -2 } }] = A[{ {}, {}, { 1, -2 } }] - u[{ {}, {}, { 2, -1 } }]
      return A
    end
    local got = lap3(v):totable()
    spec_same(got, off(function() return lap3(v):totable() end))
    -- one inner point and one corner by hand
    local function val(i, j, k) return ((i - 1) * n * n + (j - 1) * n + (k - 1)) * 0.25 end
    local x = val(5, 6, 7) * 6.0
    x = x - val(4, 6, 7); x = x - val(6, 6, 7); x = x - val(5, 5, 7)
    x = x - val(5, 7, 7); x = x - val(5, 6, 6); x = x - val(5, 6, 8)
    assert.are.equal(x, got[5][6][7])
    local c = val(1, 1, 1) * 6.0
    c = c - val(2, 1, 1); c = c - val(1, 2, 1); c = c - val(1, 1, 2)
    assert.are.equal(c, got[1][1][1])
  end)

  it("gives the same bits under any --cpus and mode", function()
    local code = [[
      local n = 256
      local v = (tycho.arange(n * n):reshape(n, n) * 0.001):sin()
      local function lap(u)
        local A = u * 4.0
        A[{{2, -1}, {}}] = A[{{2, -1}, {}}] - u[{{1, -2}, {}}]
        A[{{1, -2}, {}}] = A[{{1, -2}, {}}] - u[{{2, -1}, {}}]
        A[{{}, {2, -1}}] = A[{{}, {2, -1}}] - u[{{}, {1, -2}}]
        A[{{}, {1, -2}}] = A[{{}, {1, -2}}] - u[{{}, {2, -1}}]
        return A
      end
      local a = lap(v)
      local b = tycho.parallel({ mode = "all" }, function() return lap(v) end)
      print(string.format("%a %a %a", a:sum():item(), (a * a):sum():item(), b:sum():item()))
    ]]
    local outs = {}
    for _, cpus in ipairs({ "1", "2", "3" }) do
      local out, rc = spec_lua(code, { TYCHO_CPUS = cpus })
      assert.are.equal(0, rc, out)
      outs[#outs + 1] = out
    end
    assert.are.equal(outs[1], outs[2])
    assert.are.equal(outs[1], outs[3])
  end)
end)
