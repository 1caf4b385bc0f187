-- tests/spec/cg_passes_spec.lua — the passes of a CG iteration
-- (bench/workloads/cg.lua) and the pieces of its dot products.
--
-- A whole f64 sum or product of at most one ordered tile (65,536 elements:
-- CG's p.Ap and r.r at 256 x 256) used to run as one piece, on one
-- processor. When halving its first dim cuts the elements at the middle of
-- the sum's tree, it runs as those two halves (exec/partition.c,
-- ordered_halves): the same bits as one piece, on any number of
-- processors. Expected values: numpy (pasted; numpy's sum of 65,536
-- elements differs from the ordered tree in the last bit here, so sums are
-- compared with it within 1e-15, and bit for bit across processors).

local function rel(a, b) return math.abs(a - b) / math.abs(b) end

-- a fresh process with `cpus` processors; returns its output
local function run(code, cpus)
  local out, rc = spec_lua(code, { TYCHO_CPUS = tostring(cpus) })
  assert.are.equal(0, rc, out)
  return out
end

-- the dot product of x = arange(n) * 0.001 - 20 and y = x * x, its bits as
-- one piece (mode = "single"), unfused, and the pieces and reason of the
-- fused launch
local DOT = [[
  local shape = SHAPE
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local x = (tycho.arange(n) * 0.001 - 20.0):reshape(shape)
  local y = x * x
  tycho.flush()
  local s = (x * y):sum():item()
  local e = tycho.explain(1)[1]
  local one = tycho.parallel({ mode = "single" }, function() return (x * y):sum():item() end)
  local unfused = tycho.parallel({ fuse = false }, function() return (x * y):sum():item() end)
  print(string.format("%a %a %a %d %s", s, one, unfused, e.pieces, e.why))
]]

local function dot(shape, cpus)
  local out = run(DOT:gsub("SHAPE", "{" .. table.concat(shape, ", ") .. "}"), cpus)
  local s, one, unfused, pieces, why = out:match("^(%S+) (%S+) (%S+) (%d+) ([^\n]*)")
  assert(s, out)
  return s, one, unfused, tonumber(pieces), why
end

describe("CG's passes", function()
  it("a dot product of 65,536 elements runs as two halves, with the one piece's bits", function()
    -- numpy: float((x * (x * x)).sum()) = 1034827652.1631745
    local want = 1034827652.1631745
    local ref
    for _, shape in ipairs({ { 65536 }, { 256, 256 } }) do
      for _, cpus in ipairs({ 1, 2, 3 }) do
        local s, one, unfused, pieces, why = dot(shape, cpus)
        ref = ref or s
        assert.are.equal(ref, s)
        assert.are.equal(ref, one)
        assert.are.equal(ref, unfused)
        assert.is_true(rel(tonumber(s), want) < 1e-15, s)
        if cpus == 1 then
          assert.are.equal(1, pieces)
        else
          assert.are.equal(2, pieces)
          assert.are.equal("ordered: 2 pieces fixed by the shape (the same bits on any processors)", why)
        end
      end
    end
  end)

  it("stays one piece where the halves are not the tree's", function()
    -- 40,000 elements: 313 leaves, the tree splits after 256 of them (32,768
    -- elements), not at 20,000. numpy: -7999.999999985099
    local s, one, unfused, pieces = dot({ 40000 }, 2)
    assert.are.equal(1, pieces)
    assert.are.equal(s, one)
    assert.are.equal(s, unfused)
    assert.is_true(rel(tonumber(s), -7999.999999985099) < 1e-12, s)
    -- an odd first dim cannot be halved
    local _, _, _, p2 = dot({ 255, 256 }, 2)
    assert.are.equal(1, p2)
  end)

  it("halves a sum over more dims, a leading dim of one, and a product", function()
    local code = [[
      local function bits(f) return string.format("%a", f()) end
      local a = tycho.arange(65536) * 0.01 - 300.0
      local out = {}
      for _, shape in ipairs({ { 4, 128, 128 }, { 1, 65536 } }) do
        local b = a:reshape(shape)
        out[#out + 1] = bits(function() return (b * b):sum():item() end)
        out[#out + 1] = tycho.explain(1)[1].pieces
        out[#out + 1] = tycho.parallel({ mode = "single" }, function()
          return bits(function() return (b * b):sum():item() end)
        end)
      end
      -- a product near 1 (numpy's prod multiplies in order: close only)
      local q = 1.0 + ((tycho.arange(65536) % 13) - 6) * 1e-5
      out[#out + 1] = bits(function() return q:prod():item() end)
      out[#out + 1] = tycho.explain(1)[1].pieces
      out[#out + 1] = tycho.parallel({ mode = "single" }, function() return bits(function() return q:prod():item() end) end)
      print(table.concat(out, " "))
    ]]
    local out = run(code, 2)
    local v = {}
    for w in out:gmatch("%S+") do v[#v + 1] = w end
    assert.are.equal(9, #v, out)
    -- numpy: float(((np.arange(65536) * 0.01 - 300.0) ** 2).sum()) = 2395819196.416
    for k = 1, 4, 3 do
      assert.are.equal("2", v[k + 1])
      assert.are.equal(v[k + 2], v[k])
      assert.are.equal(v[1], v[k])
      assert.is_true(rel(tonumber(v[k]), 2395819196.416) < 1e-15, v[k])
    end
    -- numpy: float(np.prod(1.0 + ((np.arange(65536) % 13) - 6) * 1e-5)) = 0.9998041422329967
    assert.are.equal("2", v[8])
    assert.are.equal(v[9], v[7])
    assert.is_true(rel(tonumber(v[7]), 0.9998041422329967) < 1e-12, v[7])
  end)

  it("f32 sums and sums along an axis keep their pieces", function()
    local code = [[
      local x = (tycho.arange(65536) * 0.5):astype("f32")
      local s = x:sum():item()
      local e = tycho.explain(1)[1]
      local m = (tycho.arange(65536) * 0.5):reshape(256, 256)
      local c = m:sum(1)
      tycho.flush()
      print(s, e.pieces)
    ]]
    local out = run(code, 2)
    local s, pieces = out:match("^(%S+)%s+(%d+)")
    assert(s, out)
    assert.are.equal("1", pieces) -- an f32 accumulator would round each half
    -- numpy: float((np.arange(65536) * 0.5).astype(np.float32).sum(dtype=np.float64)) = 1073725440.0
    assert.are.equal(1073725440.0, tonumber(s))
  end)

  -- the loop of bench/workloads/cg.lua on a 256 x 256 grid, a flush per
  -- iteration; prints r.r after each and the launches over the whole grid
  local CG = [[
    local N = 256
    local function laplacian(v)
      local Av = v * 4.0
      Av[{{2, -1}, {}}] = Av[{{2, -1}, {}}] - v[{{1, -2}, {}}]
      Av[{{1, -2}, {}}] = Av[{{1, -2}, {}}] - v[{{2, -1}, {}}]
      Av[{{}, {2, -1}}] = Av[{{}, {2, -1}}] - v[{{}, {1, -2}}]
      Av[{{}, {1, -2}}] = Av[{{}, {1, -2}}] - v[{{}, {2, -1}}]
      return Av
    end
    local function vdot(a, b) return (a * b):sum() end
    local b = (tycho.arange(N * N) * 0.001):reshape(N, N) - 0.5
    local x = tycho.zeros({ N, N })
    local r = b:copy()
    local p = r
    local rsold = vdot(r, r)
    tycho.flush()
    for i = 1, 3 do
      local Ap = laplacian(p)
      local alpha = rsold / vdot(p, Ap)
      x = x + alpha * p
      r = r - alpha * Ap
      local rsnew = vdot(r, r)
      p = r + (rsnew / rsold) * p
      rsold = rsnew
      io.write(string.format("%a ", rsnew:item()))
    end
    tycho.flush()
    -- the last iteration's launches over the inside and the whole grid
    local last = {}
    for _, e in ipairs(tycho.explain(40)) do
      local ops = (e.fused_ops or ""):gsub("%[compiled%] ", "")
      if e.shape[1] == N - 2 and e.shape[2] == N - 2 then last = {} end
      if #e.shape == 2 and e.shape[1] >= N - 2 and e.shape[2] >= N - 2 then
        last[#last + 1] = string.format("%d %d %s", e.shape[1], e.pieces, ops)
      end
    end
    print(string.format("%a", x:sum():item()))
    for _, l in ipairs(last) do print(l) end
  ]]

  it("a CG iteration: the values of numpy, the same bits on 1, 2 and 3 processors", function()
    -- numpy, the same program: r.r after iterations 1-3 and x.sum() after 3
    local want = { 4636326476.745229, 4563561869.986382, 4748138900.28547, 314869804.9164955 }
    local first
    for _, cpus in ipairs({ 1, 2, 3 }) do
      local out = run(CG, cpus)
      local vals = out:match("^([^\n]*)")
      first = first or vals
      assert.are.equal(first, vals)
      local k = 0
      for v in vals:gmatch("%S+") do
        k = k + 1
        assert.is_true(rel(tonumber(v), want[k]) < 1e-12, k .. ": " .. v)
      end
      assert.are.equal(4, k)
    end
  end)

  it("a CG iteration's passes: the stencil, p.Ap, the updates with r.r, p", function()
    local out = run(CG, 2)
    local passes = {}
    for l in out:gmatch("\n(%d+ %d+ [^\n]*)") do passes[#passes + 1] = l end
    -- the inside of the Laplacian: one fused pass on both processors; then
    -- p.Ap; x += alpha p, r -= alpha Ap and r.r in one pass; p = r + beta p:
    -- every pass over the grid on both processors
    assert.are.same({ "254 2 mul sub copy sub copy sub copy sub copy", "256 2 mul sum",
                      "256 2 mul add mul sub mul sum", "256 2 mul add" }, passes)
  end)
end)
