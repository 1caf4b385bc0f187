-- tests/spec/matmul_small_k_spec.lua — a float product with an inner dim of
-- at most 8 is element-wise multiply-adds (ops_matmul_ew.c): element (i, j)
-- is ((a_i1 b_1j + a_i2 b_2j) + ...) in p order, each product and sum
-- rounded, so it fuses into k-means' distance expression and its argmin
-- (one pass, no n x k product in memory) and gives the same bits fused or
-- not, on any --cpus. Expected values: numpy with the same element-wise
-- order (x[:, 0:1] * c[:, 0] + x[:, 1:2] * c[:, 1]; BLAS's x @ c.T differs
-- in the last bit for 1680 of the 10000 distances of the second case).

local has = function(s, needle) return s:find(needle, 1, true) ~= nil end

local function off(f) return tycho.parallel({ fuse = false }, f) end

local function dists(data, cent)
  local dd = (data * data):sum(2)
  local cd = (cent * cent):sum(2)
  return dd:expand(2) + cd:expand(1) - data:dot(cent:t()) * 2.0
end

-- frac((i + 0.5) * alpha), i from 0 (bench/workloads/common.lua's seq)
local SEQ = [[
local function seq(n, a)
  local u = (tycho.arange(n) + 0.5) * a
  return u - tycho.floor(u)
end
local function points(n, a1, a2)
  local x = tycho.zeros({ n, 2 })
  x[{ {}, 1 }] = seq(n, a1)
  x[{ {}, 2 }] = seq(n, a2)
  return x
end
local data = points(1000, 0.6180339887498949, 0.7548776662466927)
local cent = points(10, 0.4142135623730950, 0.7320508075688772)
]]
local seq_env = load(SEQ .. "return data, cent", "seq", "t", setmetatable({ tycho = tycho }, { __index = _G }))

describe("matmul with a short inner dim", function()
  it("gives numpy's distances, labels (ties: the lowest index) and minimums", function()
    local data = tycho.array({ { 0, 0 }, { 1, 0 }, { 0, 1 }, { 2, 2 }, { 0.5, 0.5 }, { 3, 0 },
      { 1.5, 1.5 }, { -1, 2 }, { 2, -1 }, { 0.25, 0.75 }, { 1, 1 }, { 4, 4 } })
    local cent = tycho.array({ { 0, 0 }, { 2, 0 }, { 0, 2 }, { 2, 2 } })
    local d = dists(data, cent)
    local labels, mins = d:argmin(2), d:min(2)
    spec_same(d:totable(), {
      { 0, 4, 4, 8 }, { 1, 1, 5, 5 }, { 1, 5, 1, 5 }, { 8, 4, 4, 0 }, { 0.5, 2.5, 2.5, 4.5 },
      { 9, 1, 13, 5 }, { 4.5, 2.5, 2.5, 0.5 }, { 5, 13, 1, 9 }, { 5, 1, 13, 9 },
      { 0.625, 3.625, 1.625, 4.625 }, { 2, 2, 2, 2 }, { 32, 20, 20, 8 } })
    spec_same(labels:totable(), { 1, 1, 1, 4, 1, 2, 4, 3, 2, 1, 1, 4 })
    spec_same(mins:totable(), { 0, 1, 1, 0, 0.5, 1, 0.5, 1, 1, 0.625, 2, 8 })
  end)

  it("adds the products in p order, without FMA (numpy's element-wise bits)", function()
    local data, cent = seq_env()
    local d = dists(data, cent)
    local labels, mins = d:argmin(2), d:min(2)
    local t = d:totable()
    -- numpy: float.hex of d[i, j] (0-based i, j below: (0,0) (1,3) (7,9) (500,5) (999,2))
    assert.are.equal("0x1.58963fade14p-7", string.format("%a", t[1][1]))
    assert.are.equal("0x1.a680756942b9p-2", string.format("%a", t[2][4]))
    assert.are.equal("0x1.67bdc43fa6bep-3", string.format("%a", t[8][10]))
    assert.are.equal("0x1.40b46cb4683d8p-1", string.format("%a", t[501][6]))
    assert.are.equal("0x1.2b16cbe3ab73fp-1", string.format("%a", t[1000][3]))
    local l = labels:totable()
    local want = { 1, 5, 7, 8, 5, 9, 3, 7, 1, 5, 7, 3, 5, 6, 10, 7, 1, 5, 7, 3 }
    for i = 1, 20 do assert.are.equal(want[i], l[i]) end
    local m = mins:totable()
    local wm = { "0x1.58963fade14p-7", "0x1.eebab4d5e88cp-6", "0x1.39c998e0ca64p-5",
      "0x1.ad54c2205afcp-6", "0x1.1d399b8823acp-6" }
    for i = 1, 5 do assert.are.equal(wm[i], string.format("%a", m[i])) end
  end)

  it("fuses with the distances and argmin: the product is never in memory", function()
    local data, cent = seq_env()
    local dd, cd = (data * data):sum(2), (cent * cent):sum(2)
    tycho.flush()
    local s0 = tycho.stats()
    local labels = (dd:expand(2) + cd:expand(1) - data:dot(cent:t()) * 2.0):argmin(2)
    tycho.flush()
    local s1 = tycho.stats()
    local f = spec_fused_with(8, "argmin")
    assert.is_not_nil(f)
    assert.is_true(has(f.fused_ops, "matmul(k=2)"), f.fused_ops)
    assert.are.equal(7, f.fused) -- add, mul mul add (the product), mul, sub, argmin
    for _, e in ipairs(tycho.explain(8)) do assert.are_not.equal("matmul", e.task) end
    -- dd + cd, the two terms, the product, its double and the distances (read by
    -- argmin only): 6 n x k f64 never allocated
    assert.are.equal(6 * 1000 * 10 * 8, s1.bytes_elided - s0.bytes_elided)
    assert.are.same(off(function()
      return (dd:expand(2) + cd:expand(1) - data:dot(cent:t()) * 2.0):argmin(2)
    end):totable(), labels:totable())
  end)

  it("is the same bits on --cpus 1, 2, 3 and with fusion off", function()
    local code = SEQ .. [[
local d = data:dot(cent:t())
local dist = (data * data):sum(2):expand(2) + (cent * cent):sum(2):expand(1) - d * 2.0
local out = {}
for _, v in ipairs(dist:argmin(2):totable()) do out[#out + 1] = tostring(v) end
for _, v in ipairs(dist:min(2):totable()) do out[#out + 1] = string.format("%a", v) end
for _, r in ipairs(d:totable()) do for _, v in ipairs(r) do out[#out + 1] = string.format("%a", v) end end
-- a 1-D operand, f32, k = 1 and k = 8
local v = tycho.array({ 0.1, 0.2, 0.3 })
local a8 = tycho.arange(24):reshape({ 3, 8 }) * 0.37
for _, x in ipairs({ v:dot(tycho.arange(6):reshape({ 3, 2 }) * 0.1),
                     (tycho.arange(6):reshape({ 2, 3 }) * 0.1):dot(v),
                     (tycho.arange(4):reshape({ 4, 1 }) * 0.3):dot(tycho.array({ { 0.7, 0.11 } })),
                     a8:dot(a8:t() * 1.3) }) do
  for _, r in ipairs(x:totable()) do
    if type(r) == "table" then for _, y in ipairs(r) do out[#out + 1] = string.format("%a", y) end
    else out[#out + 1] = string.format("%a", r) end
  end
end
local f = data:astype("f32"):dot(cent:astype("f32"):t())
out[#out + 1] = string.format("%a", f:sum():item())
print(table.concat(out, " "))
]]
    local ref, rc = spec_lua(code, { TYCHO_CPUS = "1" })
    assert.are.equal(0, rc, ref)
    assert.is_true(#ref > 1000)
    for _, env in ipairs({ { TYCHO_CPUS = "2" }, { TYCHO_CPUS = "3" },
                           { TYCHO_CPUS = "3", TYCHO_FUSE = "off" },
                           { TYCHO_CPUS = "2", TYCHO_PARALLEL = "all", TYCHO_OVERDECOMPOSE = "3" } }) do
      local got = spec_lua(code, env)
      assert.are.equal(ref, got)
    end
  end)

  it("keeps numpy's shapes and values for 1-D operands and k = 1", function()
    local v = tycho.array({ 1, 2, 3 })
    local m = tycho.array({ { 1, 2 }, { 3, 4 }, { 5, 6 } })
    spec_same(v:dot(m):totable(), { 22, 28 })
    spec_same(m:t():dot(v):totable(), { 22, 28 })
    spec_same(tycho.array({ { 1 }, { 2 } }):dot(tycho.array({ { 3, 4 } })):totable(), { { 3, 4 }, { 6, 8 } })
    assert.are.equal(14, v:dot(v):item())
    -- integers keep their exact loop; a long inner dim keeps BLAS
    spec_same(tycho.array({ { 1, 2 } }, "i64"):dot(tycho.array({ { 3 }, { 4 } }, "i64")):totable(), { { 11 } })
    local big = tycho.ones({ 4, 9 })
    big:dot(big:t())
    tycho.flush()
    local saw = false
    for _, e in ipairs(tycho.explain(4)) do saw = saw or e.task == "matmul" end
    assert.is_true(saw)
  end)
end)
