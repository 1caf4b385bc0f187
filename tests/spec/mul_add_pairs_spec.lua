-- tests/spec/mul_add_pairs_spec.lua — an f64 mul and the add or sub after
-- it, run by the block interpreter as one pass (fused_cpu.c, mark_pairs).
--
-- `x + alpha * p`, `r - alpha * Ap`, `a * 3 - b`, `c + a * b`: the product
-- goes to a slot (or to the very place the add writes next) that only the
-- add or sub reads, so one loop computes it and the sum per element, with
-- the same two roundings (no fused multiply-add). The values must be the
-- unfused launches' bits on 1-3 processors, interpreted, and the compiled
-- kernels' bits (NaNs from one NaN operand included);
-- `tycho.stats().mul_add_pairs` must count the pairs where the interpreter
-- runs them and none where nothing pairs. Layouts that one pass cannot
-- take (strided views, an input that overlaps the output elsewhere) run as
-- two passes: the same values.

local CASES = SPEC_ARITH_SETUP .. [[
  tycho.flush()
  local p0 = tycho.stats().mul_add_pairs
  -- 1. the four forms, a 0-d store, a constant and contiguous operands
  show("addct", c + alpha * a)
  show("addtc", a * b + 2.5)
  show("subtc", a * 3.0 - b)
  show("subct", c - b * alpha)
  show("full", a * b + c)
  -- 2. CG's updates, one run: x + alpha p, r - alpha Ap, r.r
  local x, r = a * 1.0, b * 1.0
  for _ = 1, 3 do
    x = x + alpha * c
    r = r - alpha * a
  end
  show("cgx", x)
  show("cgr", r)
  -- 3. a 2-D Laplacian (the mul writes Av, the first sub writes Av again)
  local N = 67
  local v = (tycho.arange(N * N) * 0.013 - 3.0):reshape({ N, N })
  local Av = laplacian(v) -- SPEC_LAPLACIAN, cg.lua's
  show("lap", Av:reshape({ N * N }))
  -- 4. strided views (two passes) and an in-place update of a view whose
  -- input is the same store one element on (it overlaps the output)
  local s = a[{{1, -1, 3}}] * b[{{1, -1, 3}}] + c[{{1, -1, 3}}]
  show("strided", s)
  local w = a * 1.0
  w[{{2, -1}}] = w[{{1, -2}}] * 0.5 + 1.0
  local z = a * 1.0
  z[{{1, -2}}] = z[{{2, -1}}] * 0.5 + 1.0
  show("shiftw", w)
  show("shiftz", z)
  -- 5. a NaN of either sign from one operand (where two NaNs meet, the C
  -- compiler may order the operands either way: docs/fusion.md)
  local qn = tycho.zeros({ 4 }) / 0.0 -- 0/0: a NaN
  local pn = -qn
  local fin = tycho.arange(4) * 0.5
  local t1 = pn + fin * 3.0
  local t2 = qn * 1.0 + fin
  local t3 = fin * 2.0 - pn
  tycho.flush()
  print("nans", f(t1[{ 1 }]:item()), f(t2[{ 1 }]:item()), f(t3[{ 1 }]:item()))
  print("pairs", tycho.stats().mul_add_pairs - p0)
]]

local KEYS = { "addct", "addtc", "subtc", "subct", "full", "cgx", "cgr", "lap", "strided", "shiftw", "shiftz",
               "nans" }

describe("an f64 mul and the add after it in one pass", function()
  -- the pairs ran: at least the forms' five, CG's six and the Laplacian's
  local unfused, uout = spec_same_bits_as_unfused(it, assert, CASES, KEYS, "pairs", 12, "mul-add pairs")

  it("has the values of numpy where they are exact", function()
    -- numpy (a = arange(3001) * 0.37 - 11, b = arange(3001) * -0.011 + 2.5):
    -- (a * 3 - b)[0] = -35.5, (a * b + 2.5)[0] = -25.0
    assert.are.equal(-35.5, tonumber(unfused.subtc:match("^%S+%s+(%S+)")), uout)
    assert.are.equal(-25.0, tonumber(unfused.addtc:match("^%S+%s+(%S+)")), uout)
    -- unfused, nothing pairs
    assert.are.equal("0", unfused.pairs, uout)
  end)

  it("keeps the sign of a NaN from one operand", function()
    -- -nan + finite, nan * 1 + finite, finite - (-nan): the NaN operand's
    -- sign each (the hardware's), unfused and paired alike (above)
    local a, b, c = unfused.nans:match("^(%S+)%s+(%S+)%s+(%S+)$")
    assert.is_truthy(a and b and c, uout)
    assert.are_not.equal(a, b)
    assert.is_truthy(a:find("nan", 1, true) and b:find("nan", 1, true) and c:find("nan", 1, true), uout)
  end)
end)
