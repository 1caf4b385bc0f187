-- tests/spec/thin_f32_sums_spec.lua — f32 X^T z and z^T X (a tall X of 2..256
-- columns: kernels_gemv.c's thin sums, logistic regression's gradient) sum
-- in f64 and round once: each element within 1e-7 relative of the f64
-- product of the same f32 values, where summing 300,000 rows in f32 missed
-- by up to 2.1e-4 (elements with cancellation; the gradient by 2.0e-6).
-- Rows enough for ops.c's k split (36 chunks of f64 partials, four to a
-- tile, read side by side: ty__thin_accs), and the fused
-- gemv chain (plan/fuse_gemv.c) with the unfused bits; the same bits on 1
-- and 3 processors, under AVX2 and without it (TYCHO_ISA: a ceiling).

local code = [[
  local function seq(n, a)
    local u = (tycho.arange(n) + 0.5) * a
    return u - tycho.floor(u)
  end
  local n, f = 300000, 32
  local X = (seq(n * f, 0.6180339887498949):reshape({ n, f }) - 0.5):astype("f32")
  local z = (seq(n, 0.7548776662466927) - 0.3):astype("f32")
  local w = (seq(f, 0.5698402909980532) - 0.5):astype("f32")
  local X64, z64 = X:astype("f64"), z:astype("f64")
  local function worst(g, r)
    local m = 0
    for j = 1, #r do m = math.max(m, math.abs(g[j] - r[j]) / math.abs(r[j])) end
    return m
  end
  local function hex(t)
    local s = {}
    for j = 1, #t do s[j] = string.format("%a", t[j]) end
    return table.concat(s, " ")
  end
  local xtz, ztx = X:t():dot(z):totable(), z:dot(X):totable()
  print(string.format("xtz %.3g ztx %.3g", worst(xtz, X64:t():dot(z64):totable()),
                      worst(ztx, z64:dot(X64):totable())))
  -- logistic regression's gradient: fused into one pass over X, or not
  local function grad()
    local e = z - 1 / (1 + tycho.exp(-X:dot(w)))
    return e:dot(X)
  end
  local g = grad():totable()
  local fused = false
  for _, e in ipairs(tycho.explain(8)) do
    if e.task == "gemv_chain" then fused = true end
  end
  local u = tycho.parallel({ fuse = false }, grad):totable()
  -- the reference: the same f32 e (element-wise: the fused run's values), in f64
  local e64 = tycho.parallel({ fuse = false }, function()
    return (z - 1 / (1 + tycho.exp(-X:dot(w)))):astype("f64")
  end)
  print(string.format("grad %.3g fused %s same %s", worst(g, e64:dot(X64):totable()),
                      tostring(fused), tostring(hex(g) == hex(u))))
  print("bits " .. hex(xtz) .. " | " .. hex(ztx) .. " | " .. hex(g))
]]

describe("f32 thin sums (X^T z, z^T X)", function()
  local bits
  for _, case in ipairs({ { "1", "" }, { "3", "" }, { "3", "avx2" }, { "3", "baseline" } }) do
    local cpus, isa = case[1], case[2]
    it("are within 1e-7 of the f64 sums, fused or not, on " .. cpus .. " processor(s) " .. isa, function()
      local env = { TYCHO_CPUS = cpus }
      if isa ~= "" then env.TYCHO_ISA = isa end
      local out = spec_lua(code, env)
      local a, b = out:match("xtz ([%d.e+-]+) ztx ([%d.e+-]+)")
      assert.is_not_nil(a, out)
      assert.is_true(tonumber(a) < 1e-7 and tonumber(b) < 1e-7, out)
      local c, fused, same = out:match("grad ([%d.e+-]+) fused (%a+) same (%a+)")
      assert.is_true(tonumber(c) < 1e-7, out)
      assert.are.equal("true", fused, out)
      assert.are.equal("true", same, out)
      local hx = out:match("bits ([^\n]*)")
      bits = bits or hx
      assert.are.equal(bits, hx)
    end)
  end
end)
