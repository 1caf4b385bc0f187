-- tests/spec/kmeans_rows_spec.lua — compiled arg reductions over short rows
-- run W rows at once (fused_codegen.c: across, rows of at most 32 elements;
-- longer rows along the row): the indices and values are numpy's (pasted
-- below, computed offline) and the unfused ones, bit for bit, with ties (the
-- first index), NaN (the first NaN's index, the last NaN as the value),
-- -0/+0 and infinities, row lengths on both sides of the threshold, row
-- counts that leave a partial block of rows, on 1 and 3 processors.

local has = function(s, needle) return s:find(needle, 1, true) ~= nil end

-- Rows of n: x[i][j] = ((7i + 3j) mod 5) - 2; rows i = 1 mod 4 hold a NaN
-- at column (i mod n) + 1, rows i = 2 mod 6 a -NaN last, rows i = 3 mod 5
-- are -0/+0 only, rows i = 6 mod 7 +-inf only. Per row length and op it
-- prints: sum of i * index (1-based), NaN results, infinite results, sum of
-- i * finite result; then whether the run was compiled, whether every bit
-- equals the unfused run's and whether the across-rows kernel was generated.
local code = [[
  local R, nan = 37, 0 / 0
  local function tricky(n)
    local t = {}
    for i = 1, R do
      local r = {}
      for j = 1, n do r[j] = ((i * 7 + j * 3) % 5) - 2.0 end
      if i % 4 == 1 then r[(i % n) + 1] = nan end
      if i % 6 == 2 then r[n] = -nan end
      if i % 5 == 3 then for j = 1, n do r[j] = (j % 2 == 0) and 0.0 or -0.0 end end
      if i % 7 == 6 then for j = 1, n do r[j] = (j % 3 == 0) and math.huge or -math.huge end end
      t[i] = r
    end
    return tycho.array(t)
  end
  local function summary(idx, val)
    local a, b = idx:totable(), val:totable()
    local s, nn, ni, sv = 0, 0, 0, 0
    for i = 1, #a do
      s = s + i * a[i]
      if b[i] ~= b[i] then nn = nn + 1
      elseif b[i] == math.huge or b[i] == -math.huge then ni = ni + 1
      else sv = sv + i * b[i] end
    end
    return string.format("%d %d %d %d", s, nn, ni, math.floor(sv))
  end
  local function bits(p, q)
    local same = true
    for k = 1, #p do
      local u, v = p[k]:totable(), q[k]:totable()
      for i = 1, #v do same = same and tostring(u[i]) == tostring(v[i]) end
    end
    return same
  end
  local function compiled(op)
    for _, e in ipairs(tycho.explain(12)) do
      local f = e.fused_ops
      if f and f:find("[compiled]", 1, true) and f:find(op, 1, true) then return true end
    end
    return false
  end
  for _, n in ipairs({ 2, 5, 10, 31, 32, 33, 40 }) do
    local x = tricky(n)
    tycho.flush()
    for _, op in ipairs({ "min", "max" }) do
      local function step()
        local y = x * 1
        return y["arg" .. op](y, 2), y[op](y, 2)
      end
      local r = { step() }
      local c = compiled("arg" .. op .. " " .. op)
      local u = { tycho.parallel({ fuse = false }, step) }
      print(string.format("rows %d %s %s compiled %s same %s", n, op, summary(r[1], r[2]), tostring(c),
                          tostring(bits(r, u))))
    end
  end
  -- k-means' distances to k centroids (exact in binary: ties stay ties)
  local N = 37
  local dt = {}
  for i = 1, N do dt[i] = { (i * 3 + 5) % 7, (i * 3 + 10) % 7 } end
  local data = tycho.array(dt)
  local dd = (data * data):sum(2)
  for _, k in ipairs({ 3, 10, 32, 33 }) do
    local ct = {}
    for c = 1, k do ct[c] = { (c * 7 + 3) % 11 + c / 8, (c * 7 + 6) % 11 + c / 8 } end
    local cent = tycho.array(ct)
    tycho.flush()
    local function step()
      local cd = (cent * cent):sum(2)
      local dist = dd:expand(2) + cd:expand(1) - data:dot(cent:t()) * 2.0
      return dist:argmin(2), dist:min(2)
    end
    local r = { step() }
    local c = compiled("argmin min")
    local u = { tycho.parallel({ fuse = false }, step) }
    local lab, s, sv = r[1]:totable(), 0, 0
    for i = 1, N do s, sv = s + i * lab[i], sv + i * r[2]:totable()[i] end
    print(string.format("km %d %d %.5f %s compiled %s same %s", k, s, sv,
                        table.concat(lab, ",", 1, 8), tostring(c), tostring(bits(r, u))))
  end
]]

-- numpy, offline: the same x (np.nan, -np.nan, np.inf), w = arange(1, 38):
-- "%d %d %d %d" % ((w * (x.argmin(1) + 1)).sum(), isnan(m).sum(),
-- isinf(m).sum(), (w * m)[isfinite(m)].sum()) with m = x.min(1), then the
-- same with argmax/max; k-means: dist = dd[:, None] + cd[None, :] - data @
-- cent.T * 2.0, (w * (dist.argmin(1) + 1)).sum(), (w * dist.min(1)).sum(),
-- the first 8 labels
local want_rows = {
  [2] = { "1052 12 5 -407", "1062 12 5 278" },
  [5] = { "1823 12 5 -544", "2154 12 5 544" },
  [10] = { "2803 12 5 -544", "3134 12 5 544" },
  [31] = { "5990 12 5 -544", "6321 12 5 544" },
  [32] = { "6027 12 5 -544", "6358 12 5 544" },
  [33] = { "6064 12 5 -544", "6395 12 5 544" },
  [40] = { "7803 12 5 -544", "8134 12 5 544" },
}
local want_km = {
  [3] = "2109 9790.96875 3,3,3,3,3,3,3,3",
  [10] = "4443 7602.84375 6,6,9,9,3,9,3,6",
  [32] = "7273 7370.96875 6,6,9,9,14,9,20,6",
  [33] = "7273 7370.96875 6,6,9,9,14,9,20,6",
}

local function cache_sources(dir)
  local p = assert(io.popen("cat " .. dir .. "/*.c 2>/dev/null"))
  local s = p:read("a")
  p:close()
  return s
end

describe("arg reductions over short rows, compiled", function()
  -- W = 8 lanes with AVX-512, 4 with AVX2 (TYCHO_ISA: a ceiling)
  -- one kernel cache per instruction set: the 3-processor run loads the
  -- kernels the 1-processor run compiled (the compiles are most of the time)
  local dirs = {}
  local cases = { { "1", "" }, { "3", "" }, { "3", "avx2" } }
  for i, case in ipairs(cases) do
    local cpus, isa = case[1], case[2]
    it("give numpy's and the unfused results on " .. cpus .. " processor(s) " .. isa, function()
      local dir = dirs[isa]
      if not dir then
        dir = os.tmpname()
        os.remove(dir)
        dirs[isa] = dir
      end
      local env = { TYCHO_CODEGEN = "always", TYCHO_CPUS = cpus, TYCHO_CACHE_DIR = dir }
      if isa ~= "" then env.TYCHO_ISA = isa end
      local out = spec_lua(code, env)
      local compiled = tostring(spec_codegen(isa)) -- none at the baseline level
      for n, w in pairs(want_rows) do
        assert.is_true(has(out, string.format("rows %d min %s compiled %s same true", n, w[1], compiled)), out)
        assert.is_true(has(out, string.format("rows %d max %s compiled %s same true", n, w[2], compiled)), out)
      end
      for k, w in pairs(want_km) do
        assert.is_true(has(out, string.format("km %d %s compiled %s same true", k, w, compiled)), out)
      end
      -- the across-rows kernel exists where the machine has a vector ISA
      -- (no generated code at the baseline level: nothing compiled then)
      local src = cache_sources(dir)
      if has(src, "void ty_fk2") then assert.is_true(has(src, "across(n0, a, os, D)")) end
      -- its loop over a row's elements is unrolled with 4 lanes, not with 8
      -- (fused_codegen.c, across_rows: measured, and half the compile)
      local level = isa ~= "" and isa or tycho.config().isa
      if has(src, "across(n0, a, os, D)") and (level == "avx2" or level == "avx512") then
        assert.are.equal(level == "avx2", has(src, "#pragma GCC unroll"), level)
      end
      local last = true
      for j = i + 1, #cases do
        if cases[j][2] == isa then last = false end
      end
      if last then os.execute("rm -rf '" .. dir .. "'") end
    end)
  end
end)
