-- tests/spec/op_chains_spec.lua — chains of f64 arithmetic run by the block
-- interpreter as one pass (fused_cpu.c, mark_chains).
--
-- An f64 add, sub, mul or div, then operations of one form (the same op,
-- the chain's value on the same side), each reading the result of the one
-- before (a slot nothing reads later, or the very place it writes), run as
-- one loop, 8 operations at most a chain: CG's Laplacian `Av = 4 v; Av -=
-- v_up; ...` over blocks of several rows, `a * b + c + d + a`, `c - (d -
-- (b - a * c))`, and after two links a last one of another form with a
-- constant (the stencil's `(c + n + e + w + s) * 0.2`); a mix of forms is
-- cut into such chains, and two operations other than a mul and an add or
-- sub run as their passes. The same roundings
-- in the same order (no fused multiply-add), so the values must be the
-- unfused launches' bits on 1-3 processors, interpreted, and the compiled
-- kernels' bits (NaNs from one NaN operand included);
-- `tycho.stats().chained_ops` must count the links where the interpreter
-- runs them. An f64 mul and the sum after it (a dot product) feed the sum
-- the products as they are made: the same bits. Layouts the loop cannot
-- take (strided views, a one-element link operand, inputs that overlap the
-- output elsewhere, a shifted read of the array being written) run as
-- separate passes: the same values.

local CASES = SPEC_ARITH_SETUP .. [[
  local d = tycho.cos(tycho.arange(n) * 0.5) + 3.0
  tycho.flush()
  local c0 = tycho.stats().chained_ops
  -- 1. every op on both sides of the chain's value, constants and 0-d stores
  show("long", ((a * b + c) / d - alpha) * 1.5 + c)
  show("sides", 2.0 - (c / (a * b)) + (d - c) * 0.0)
  show("divs", 1.0 / (a + d) / d * alpha - (b - a) / 3.0)
  show("heads", (a + b) * c - (a - b) / d)
  show("nine", ((((((((a + 1.0) * b) - c) / d) + a) * c) - b) / d) + 1.0) -- longer than one chain
  -- every link the same form (the loop's own path): each side, each op
  show("uniadd", a * b + c + d + a)
  show("unisub", c - (d - (b - a * c)))
  show("unidiv", d / (c / (a / (b + 3.0))))
  show("unimul", (a - b) * c * d * alpha)
  -- a tail: after two links of one form, one of another with a constant
  show("tailmul", (a + b + c + d) * 0.2)
  show("tailsub", 2.0 - a * b * c * d)
  show("taildiv", (a - b - c - d) / 3.0 + c) -- the add after the tail: a pass
  show("tailzerod", (a + b + c + d) * alpha) -- a 0-d store: no tail, a pass
  local grid = (tycho.arange(20 * 22) * 0.1):reshape({ 20, 22 })
  local center, north, south = grid[{{2, -2}, {2, -2}}], grid[{{1, -3}, {2, -2}}], grid[{{3, -1}, {2, -2}}]
  local west, east = grid[{{2, -2}, {1, -3}}], grid[{{2, -2}, {3, -1}}]
  for _ = 1, 3 do center[{}] = (center + north + east + west + south) * 0.2 end
  show("stencil", grid:reshape({ 20 * 22 }))
  -- 2. CG's Laplacian: a 2-D run over blocks of several rows
  local N = 67
  local v = (tycho.arange(N * N) * 0.013 - 3.0):reshape({ N, N })
  local Av = laplacian(v) -- SPEC_LAPLACIAN, cg.lua's
  show("lap", Av:reshape({ N * N }))
  -- 3. a row broadcast (a column: one element a row) in a 2-D chain
  local col = (tycho.arange(N) * 0.25 + 1.0):reshape({ N, 1 })
  show("bcast", ((v * col - v) / col + 2.0):reshape({ N * N }))
  -- 4. layouts one pass cannot take: strided views; an in-place update
  -- whose input is the array one element on (it overlaps the output)
  show("strided", a[{{1, -1, 3}}] * b[{{1, -1, 3}}] + c[{{1, -1, 3}}] - d[{{1, -1, 3}}])
  local w = a * 1.0
  w[{{2, -1}}] = (w[{{1, -2}}] * 0.5 + 1.0) / 3.0 - b[{{2, -1}}]
  local z = a * 1.0
  z[{{1, -2}}] = (z[{{2, -1}}] * 0.5 + 1.0) / 3.0 - b[{{1, -2}}]
  show("shiftw", w)
  show("shiftz", z)
  -- 5. a 2-D in-place chain reading the array one row on
  local g = v * 1.0
  g[{{1, -2}, {}}] = (g[{{1, -2}, {}}] * 2.0 - g[{{2, -1}, {}}]) / 4.0 + 1.0
  show("rows", g:reshape({ N * N }))
  -- 6. a NaN of either sign from one operand (where two NaNs meet, the C
  -- compiler may order the operands either way: docs/fusion.md)
  local qn = tycho.zeros({ 4 }) / 0.0 -- 0/0: a NaN
  local pn = -qn
  local fin = tycho.arange(4) * 0.5 + 1.0
  local t1 = (pn + fin * 3.0) / fin - 1.0
  local t2 = (fin / 2.0 - qn) * fin
  local t3 = 1.0 - (fin - pn) / 2.0
  tycho.flush()
  print("nans", f(t1[{ 1 }]:item()), f(t2[{ 1 }]:item()), f(t3[{ 1 }]:item()))
  -- 7. a mul and the sum after it (a dot): the sum is fed the products as
  -- they are made, in the leaves and groups of the products stored
  local function dot(key, x, y)
    tycho.flush()
    print(key, f((x * y):sum():item()))
  end
  dot("dot", a, b)
  dot("dotseven", a[{{1, 7}}], b[{{1, 7}}])
  dot("dotodd", a[{{3, 600}}], c[{{3, 600}}])
  dot("dotstrided", a[{{1, -1, 3}}], d[{{1, -1, 3}}])
  dot("dotzerod", d, alpha)
  dot("dotsquare", d, d)
  local big = tycho.sin(tycho.arange(200003) * 0.001)
  dot("dotbig", big, big + 0.5)
  dot("dotlink", a - b, c) -- the mul ends a chain: no dot
  local w2 = v * 0.5 + 1.0
  dot("dotbox", v[{{2, -2}, {3, -3}}], w2[{{3, -1}, {1, -5}}]) -- 2-D blocks of views
  print("chained", tycho.stats().chained_ops - c0)
]]

local KEYS = { "long", "sides", "divs", "heads", "nine", "uniadd", "unisub", "unidiv", "unimul", "tailmul", "tailsub",
               "taildiv", "tailzerod", "stencil", "lap", "bcast", "strided", "shiftw", "shiftz", "rows",
               "nans", "dot", "dotseven", "dotodd", "dotstrided", "dotzerod", "dotsquare", "dotbig", "dotlink", "dotbox" }

describe("chains of f64 arithmetic in one pass", function()
  -- the chains ran: the Laplacian links 4 operations a region, the one-form
  -- chains of section 1 3 each
  local unfused, uout = spec_same_bits_as_unfused(it, assert, CASES, KEYS, "chained", 30, "chained ops")

  it("has the values of numpy where they are exact", function()
    -- numpy: a[0] = -11, b[0] = 2.5, c[0] = 0, d[0] = 4:
    -- ((a*b + c) / d - alpha) * 1.5 + c at 0 is (-27.5 / 4 - alpha) * 1.5
    -- (alpha = a[6] * 0.001 = -0.00878)
    local first = tonumber(unfused.long:match("^%S+%s+(%S+)"))
    assert.is_true(math.abs(first - (-27.5 / 4 - (6 * 0.37 - 11.0) * 0.001) * 1.5) < 1e-12, uout)
    assert.are.equal("0", unfused.chained, uout) -- unfused, nothing chains
  end)

  it("keeps the sign of a NaN from one operand", function()
    local x, y, z = unfused.nans:match("^(%S+)%s+(%S+)%s+(%S+)$")
    assert.is_truthy(x and y and z, uout)
    assert.is_truthy(x:find("nan", 1, true) and y:find("nan", 1, true) and z:find("nan", 1, true), uout)
  end)
end)
