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

  -- the interpreter takes blocks of short rows column by column (fused_cpu.c,
  -- run_box's column order and arg_cols): the same indices and best values
  -- as the unfused scan and as the compiled kernel, f64 and f32, rows of 2 to
  -- 65, blocks of more than 256 rows, NaN, ties, -0/+0 and infinities
  it("gives the same bits in column order, compiled or not, on 1 or 2 cpus", function()
    local code = [==[
      local function off(f) return tycho.parallel({ fuse = false }, f) end
      local out = {}
      for _, dt in ipairs({ "f64", "f32" }) do
        for _, w in ipairs({ 2, 3, 10, 17, 64, 65 }) do
          local t = {}
          for i = 1, 1500 do
            local r = {}
            for j = 1, w do r[j] = ((i * 7 + j * 3) % 5) - 2.0 + (j % 3) * 0.25 end
            if i % 4 == 1 then r[(i % w) + 1] = 0 / 0 end
            if i % 6 == 2 then r[1], r[w] = 0 / 0, 0 / 0 end
            if i % 5 == 3 then for j = 1, w do r[j] = (j % 2 == 0) and 0.0 or -0.0 end end
            if i % 7 == 6 then for j = 1, w do r[j] = (j % 3 == 0) and math.huge or -math.huge end end
            t[i] = r
          end
          local x = tycho.array(t):astype(dt)
          tycho.flush()
          for _, op in ipairs({ { "argmin", "min" }, { "argmax", "max" } }) do
            local function step()
              local y = x * 2 + 1
              return y[op[1]](y, 2), y[op[2]](y, 2)
            end
            local i1, v1 = step()
            local i2, v2 = off(step)
            local a, b, c, d = i1:totable(), v1:totable(), i2:totable(), v2:totable()
            for r = 1, #a do
              assert(a[r] == c[r], dt .. " " .. w .. " " .. op[1] .. " row " .. r)
              assert(string.format("%a", b[r]) == string.format("%a", d[r]), dt .. " " .. w .. " row " .. r)
              out[#out + 1] = a[r] .. ":" .. string.format("%a", b[r])
            end
          end
        end
      end
      io.write(#out, " ", table.concat(out, ","):len(), "\n", table.concat(out, ","), "\n")
    ]==]
    local ref
    for _, cpus in ipairs({ "1", "2" }) do
      for _, cg in ipairs({ "off", "always" }) do
        local got, rc = spec_lua(code, { TYCHO_CODEGEN = cg, TYCHO_CPUS = cpus })
        assert.are.equal(0, rc, got:sub(1, 400))
        ref = ref or got
        assert.is_true(ref == got, "cpus " .. cpus .. " codegen " .. cg)
      end
    end
    assert.is_true(ref:match("^36000 ") ~= nil, ref:sub(1, 80))
  end)

  it("stays unfused over rows longer than 512", function()
    local x = tycho.random({ 4, 513 })
    tycho.flush()
    local i = (x * 2):argmin(2)
    assert.is_nil(spec_fused_with(8, "argmin"))
    assert.are.same(off(function() return (x * 2):argmin(2) end):totable(), i:totable())
  end)
end)
