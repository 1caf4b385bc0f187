-- tests/spec/gemv_chain_spec.lua — logistic regression's gradient in one
-- pass over X (plan/fuse_gemv.c, exec/kernels_gemv.c): z = X w, the fused
-- element-wise chain and e X become one launch of the task "gemv_chain",
-- with the bits of the unfused launches (the thin products' fixed order) on
-- any --cpus. Expected values: numpy 2.x, computed offline:
--   def seq(n, a): u = (np.arange(n) + 0.5) * a; return u - np.floor(u)
--   X = (seq(n*f, 0.618...).reshape(n, f) - 0.5).astype(dt)
--   y = np.floor(seq(n, 0.754...) * 2.0).astype(dt); w = np.zeros(f, dt)
--   for _ in range(iters): s = X.dot(w); p = 1.0 / (1.0 + np.exp(-s)); e = y - p
--                          w = w + lr * e.dot(X)
-- (numpy's BLAS adds in another order: the comparison is within a tolerance;
-- the bit-for-bit comparisons are between tycho's own runs.)

local has = function(s, needle) return s:find(needle, 1, true) ~= nil end

local PROG = [[
local function seq(n, a)
  local u = (tycho.arange(n) + 0.5) * a
  return u - tycho.floor(u)
end
local function logreg(n, f, dt, iters, lr)
  local X = (seq(n * f, 0.6180339887498949):reshape({ n, f }) - 0.5):astype(dt)
  local y = tycho.floor(seq(n, 0.7548776662466927) * 2.0):astype(dt)
  tycho.flush()
  local w = tycho.zeros(f, dt)
  local scores, err
  for _ = 1, iters do
    scores = X:dot(w)
    local predictions = 1.0 / (1.0 + tycho.exp(-scores))
    err = y - predictions
    w = w + lr * err:dot(X)
  end
  return w, scores, err
end
]]
local env = load(PROG .. "return logreg", "prog", "t", setmetatable({ tycho = tycho }, { __index = _G }))
local logreg = env()

local function close(got, want, tol, what)
  assert.is_true(math.abs(got - want) <= tol, string.format("%s: %.17g, numpy %.17g", what, got, want))
end

describe("the gemv chain (logistic regression in one pass over X)", function()
  it("gives numpy's weights, f64, k split with a remainder (n = 100000, f = 32)", function()
    local w, s, e = logreg(100000, 32, "f64", 3, 1e-3)
    local t = w:totable()
    local want = { 0.24412988448951778, -0.2832501357234092, 0.09975334991228678, 0.23699310291692519 }
    for i, k in ipairs({ 1, 2, 17, 32 }) do close(t[k], want[i], 1e-13, "w[" .. k .. "]") end
    close(w:sum():item(), 0.1813862916116724, 1e-13, "sum(w)")
    close(s:totable()[12346], -0.018861009655695517, 1e-15, "scores[12346]")
    close(e:totable()[100000], -0.5165750186868369, 1e-14, "err[100000]")
  end)

  it("gives numpy's weights, f32 (n = 140001, f = 16)", function()
    local w, s, e = logreg(140001, 16, "f32", 3, 1e-4)
    local t = w:totable()
    local want = { 0.0008195448317565024, 0.00020220674923621118, 0.0018279470968991518,
      -0.0011516092345118523 }
    for i, k in ipairs({ 1, 2, 9, 16 }) do close(t[k], want[i], 2e-8, "w[" .. k .. "]") end
    close(w:astype("f64"):sum():item(), -0.003612556407460943, 3e-7, "sum(w)")
    close(s:totable()[12346], 0.0007587725413031876, 5e-8, "scores[12346]")
    close(e:totable()[140001], -0.49969619512557983, 1e-7, "err[140001]")
  end)

  it("runs as one gemv_chain launch that reads X once", function()
    local w = logreg(100000, 32, "f64", 1, 1e-3)
    w:sum():item()
    local seen
    for _, e in ipairs(tycho.explain(16)) do
      if e.task == "gemv_chain" then seen = e end
      assert.are_not.equal("matmul", e.task)
    end
    assert.is_not_nil(seen)
    assert.are.equal(8, seen.fused) -- matmul, neg exp add div sub, 2 matmuls (the chunks and the rest)
    assert.is_true(has(seen.fused_ops, "exp"), seen.fused_ops)
    assert.is_true(has(seen.fuse_end, "one pass over X"), seen.fuse_end)
    -- with fusion off the products are matmul launches
    tycho.parallel({ fuse = false }, function() return logreg(100000, 32, "f64", 1, 1e-3):sum():item() end)
    local saw = false
    for _, e in ipairs(tycho.explain(16)) do saw = saw or e.task == "matmul" end
    assert.is_true(saw)
  end)

  it("keeps the launches when the run reads z through another view (reversed)", function()
    local X = tycho.arange(3000 * 12):reshape({ 3000, 12 }) % 7 - 3
    local w = tycho.arange(12) * 0.01
    local y = tycho.arange(3000) % 2
    local function grad()
      local s = X:dot(w)
      local e = y - 1.0 / (1.0 + tycho.exp(-s:flip()))
      return e:dot(X)
    end
    local g = grad()
    local t = g:totable()
    for _, e in ipairs(tycho.explain(8)) do assert.are_not.equal("gemv_chain", e.task) end
    local want = tycho.parallel({ fuse = false }, grad):totable()
    for i = 1, 12 do assert.are.equal(string.format("%a", want[i]), string.format("%a", t[i])) end
  end)

  it("is the same bits fused and unfused, on --cpus 1, 2, 3", function()
    local code = PROG .. [[
local out = {}
for _, c in ipairs({ { 100000, 32, "f64", 2, 1e-3 }, { 140000, 16, "f32", 2, 1e-4 },
                     { 140001, 16, "f32", 2, 1e-4 }, { 5000, 24, "f32", 3, 1e-2 },
                     { 3000, 12, "f64", 2, 1e-2 } }) do
  local w, s, e = logreg(table.unpack(c))
  for _, v in ipairs(w:totable()) do out[#out + 1] = string.format("%a", v) end
  out[#out + 1] = string.format("%a", s:astype("f64"):sum():item())
  out[#out + 1] = string.format("%a", e:astype("f64"):sum():item())
  out[#out + 1] = string.format("%a", e:totable()[c[1] - 1])
end
print(table.concat(out, " "))
if os.getenv("GEMV_CHAIN_COUNT") then -- the launches of the last 64
  local n = 0
  for _, e in ipairs(tycho.explain(64)) do n = n + (e.task == "gemv_chain" and 1 or 0) end
  print("chains " .. n)
end
]]
    local ref, rc = spec_lua(code, { TYCHO_CPUS = "1" })
    assert.are.equal(0, rc, ref)
    assert.is_true(#ref > 500)
    local counted = spec_lua(code, { TYCHO_CPUS = "1", GEMV_CHAIN_COUNT = "1" })
    assert.are.equal(ref .. "chains 11\n", counted) -- fused: one launch per iteration, 11 in all
    for _, e in ipairs({ { TYCHO_CPUS = "2" }, { TYCHO_CPUS = "3" }, { TYCHO_CPUS = "2", TYCHO_FUSE = "off" },
                         { TYCHO_CPUS = "1", TYCHO_FUSE = "off" },
                         { TYCHO_CPUS = "2", TYCHO_OVERDECOMPOSE = "3" } }) do
      assert.are.equal(ref, (spec_lua(code, e)))
    end
  end)
end)
