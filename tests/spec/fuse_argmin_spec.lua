-- tests/spec/fuse_argmin_spec.lua — argmin/argmax along the rows join a fused
-- run as its last launch (fuse.c): k-means' labels = dist:argmin(2) is
-- computed in the same pass that computes dist, and the indices equal the
-- unfused scan's (ties: the first; a NaN: the first NaN), fusion on or off.

local has = function(s, needle) return s:find(needle, 1, true) ~= nil end

local function off(f) return tycho.parallel({ fuse = false }, f) end

-- rows of 10 with ties, NaNs, -0/+0 and infinities
local function tricky(rows)
  local t = {}
  for i = 1, rows do
    local r = {}
    for j = 1, 10 do r[j] = ((i * 7 + j * 3) % 5) - 2.0 end
    if i % 4 == 1 then r[(i % 10) + 1] = 0 / 0 end
    if i % 6 == 2 then r[5], r[10] = 0 / 0, 0 / 0 end
    if i % 5 == 3 then for j = 1, 10 do r[j] = (j % 2 == 0) and 0.0 or -0.0 end end
    if i % 7 == 6 then for j = 1, 10 do r[j] = (j % 3 == 0) and math.huge or -math.huge end end
    t[i] = r
  end
  return tycho.array(t)
end

describe("fused argmin/argmax", function()
  it("joins the run that computes the distances (k-means)", function()
    local N, K = 2000, 10
    local data = tycho.random({ N, 2 })
    local cent = tycho.random({ K, 2 })
    local dd = (data * data):sum(2)
    tycho.flush()
    local function step()
      local cd = (cent * cent):sum(2)
      local dist = dd:expand(2) + cd:expand(1) - data:dot(cent:t()) * 2.0
      return dist:argmin(2), dist:min(2)
    end
    local labels, mins = step()
    local f = spec_fused_with(32, "argmin")
    assert.is_not_nil(f)
    -- add, mul mul add (the product, k = 2), mul, sub, argmin, and dist:min(2)
    -- as the arg reduction's second output
    assert.are.equal(8, f.fused)
    assert.is_true(has(f.fused_ops, "argmin min"), f.fused_ops)
    assert.is_true(has(f.fuse_end, "reduction is terminal"), f.fuse_end)
    local ul, um = off(step)
    assert.are.same(ul:totable(), labels:totable())
    assert.are.same(um:totable(), mins:totable())
  end)

  it("gives the unfused indices on ties, NaN, -0/+0 and infinities", function()
    local x = tricky(60)
    tycho.flush()
    for _, op in ipairs({ "argmin", "argmax" }) do
      local y = x * 1 -- keeps -0 and NaN
      local got = y[op](y, 2)
      assert.is_not_nil(spec_fused_with(4, op))
      local ref = off(function()
        local z = x * 1
        return z[op](z, 2)
      end)
      assert.are.same(ref:totable(), got:totable())
      assert.are.equal(6, ref:totable()[5]) -- row 5: its only NaN is in column 6 (1-based)
      assert.are.equal(1, ref:totable()[3]) -- row 3: -0 and +0 only, the first
    end
  end)

  it("stays unfused over rows longer than 512", function()
    local x = tycho.random({ 4, 513 })
    tycho.flush()
    local i = (x * 2):argmin(2)
    assert.is_nil(spec_fused_with(8, "argmin"))
    assert.are.same(off(function() return (x * 2):argmin(2) end):totable(), i:totable())
  end)
end)
