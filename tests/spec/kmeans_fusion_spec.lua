-- tests/spec/kmeans_fusion_spec.lua — k-means' iteration in one window and
-- one pass over the distances:
--  - bincount of labels whose bounds are known from how they were made
--    (core/range.c): labels = dist:argmin(2) - 1 hold 0 .. K-1, so
--    bincount(labels, {minlength = K}) has length K without reading
--    max(labels): no flush;
--  - dist:min(2) after dist:argmin(2) (bincounts in between) becomes the arg
--    reduction's second output in the fused pass (plan/fuse.c, pair_of), with
--    the unfused values, NaN signs included.
-- Expected values from numpy (np.bincount, dist.argmin(1), dist.min(1)).

local function flushes() return tycho.stats().flushes end
local has = function(str, needle) return str ~= nil and str:find(needle, 1, true) ~= nil end

-- values as text: tells -nan from nan, -0.0 from 0.0
local function text(store)
  local o = {}
  for i, v in ipairs(store:totable()) do o[i] = tostring(v) end
  return table.concat(o, " ")
end

-- 12 points, 3 centroids (exact in binary: the distances are integers)
local X = { { 1, 2 }, { 0, 0 }, { 5, 5 }, { 6, 4 }, { -1, 3 }, { 2, 2 }, { 7, 7 }, { 0, 1 },
            { 4, 6 }, { 3, 0 }, { 1, 1 }, { 6, 6 } }
local C = { { 0, 0 }, { 5, 5 }, { 1, 3 } }
local LABELS = { 2, 0, 1, 1, 2, 2, 1, 0, 1, 0, 0, 1 } -- np: dist.argmin(1)

local function distances(data, cent)
  local dd = (data * data):sum(2)
  local cd = (cent * cent):sum(2)
  return dd:expand(2) + cd:expand(1) - data:dot(cent:t()) * 2.0
end

-- k-means' labels, counts and x sums of the points `data` for centroids `cent`
local function labels_of(data, cent)
  local dist = distances(data, cent)
  local labels = dist:argmin(2) - 1
  return dist, labels, tycho.bincount(labels, { minlength = 3 }),
         tycho.bincount(labels, data[{ {}, 1 }], { minlength = 3 })
end

describe("bincount of labels with known bounds", function()
  it("does not flush for argmin(2) - 1 with minlength = K (k-means)", function()
    local data, cent = tycho.array(X), tycho.array(C)
    tycho.flush()
    local f0 = flushes()
    local dist, labels, counts, sx = labels_of(data, cent)
    local sy = tycho.bincount(labels, data[{ {}, 2 }], { minlength = 3 })
    local dsum = dist:min(2):sum()
    assert.are.equal(f0, flushes()) -- nothing read yet: no flush
    assert.are.same({ 3 }, counts.shape)
    spec_same(counts:totable(), { 4, 5, 3 })
    spec_same(sx:totable(), { 4.0, 28.0, 2.0 })
    spec_same(sy:totable(), { 2.0, 28.0, 7.0 })
    spec_same(labels:totable(), LABELS)
    assert.are.equal(33.0, dsum:item())
  end)

  it("gives the same bits with fusion off and on any number of processors", function()
    local data, cent = tycho.array(X), tycho.array(C)
    local function step()
      local labels = distances(data, cent):argmin(2) - 1
      return tycho.bincount(labels, { minlength = 3 }), tycho.bincount(labels, data[{ {}, 1 }], { minlength = 3 })
    end
    local c1, s1 = step()
    local c2, s2 = tycho.parallel({ fuse = false }, step)
    local c3, s3 = tycho.parallel({ overdecompose = 3 }, step)
    spec_same(c2:totable(), c1:totable())
    spec_same(s2:totable(), s1:totable())
    spec_same(c3:totable(), c1:totable())
    spec_same(s3:totable(), s1:totable())
  end)

  it("reads max(labels) when minlength is below the bound", function()
    local labels = distances(tycho.array(X), tycho.array(C)):argmin(2) - 1
    tycho.flush()
    local f0 = flushes()
    local c = tycho.bincount(labels, { minlength = 1 }) -- length max + 1 = 3
    assert.is_true(flushes() > f0)
    spec_same(c:totable(), { 4, 5, 3 })
  end)

  it("forgets the bounds when the labels are written", function()
    local labels = distances(tycho.array(X), tycho.array(C)):argmin(2) - 1
    labels[{ 1 }] = 7 -- past minlength: numpy's length 8
    local c = tycho.bincount(labels, { minlength = 3 })
    spec_same(c:totable(), { 4, 5, 2, 0, 0, 0, 0, 1 })
    local l2 = tycho.array({ { 1, 0 }, { 0, 1 } }):argmin(2) - 1 -- 1, 0
    l2:fill(5)
    spec_same(tycho.bincount(l2, { minlength = 2 }):totable(), { 0, 0, 0, 0, 0, 2 })
  end)

  it("keeps bounds through scalar add, subtract and integer casts", function()
    local d = tycho.array({ { 3, 1, 2, 0 }, { 0, 5, 6, 7 }, { 4, 4, 1, 9 } }) -- argmin (1-based): 4 1 3
    local i = d:argmin(2) -- 1-based: 1 .. 4 known
    tycho.flush()
    local f0 = flushes()
    local a = tycho.bincount(i - 1, { minlength = 4 })           -- 0 .. 3
    local b = tycho.bincount(i + 2, { minlength = 7 })           -- 3 .. 6
    local c = tycho.bincount((i - 1):astype("i32"), { minlength = 4 })
    local e = tycho.bincount((i - 1):astype("u8"), { minlength = 4 })
    assert.are.equal(f0, flushes())
    spec_same(a:totable(), { 1, 0, 1, 1 })
    spec_same(b:totable(), { 0, 0, 0, 1, 0, 1, 1 })
    spec_same(c:totable(), { 1, 0, 1, 1 })
    spec_same(e:totable(), { 1, 0, 1, 1 })
    -- a shift past minlength, or a product, is not known: read, same values
    tycho.flush()
    f0 = flushes()
    spec_same(tycho.bincount(i + 2, { minlength = 4 }):totable(), { 0, 0, 0, 1, 0, 1, 1 })
    assert.is_true(flushes() > f0)
    f0 = flushes()
    spec_same(tycho.bincount(i * 1, { minlength = 9 }):totable(), { 0, 1, 0, 1, 1, 0, 0, 0, 0 })
    assert.is_true(flushes() > f0)
  end)

  it("knows u8 and bool values from the dtype", function()
    local u = tycho.array({ 0, 3, 3, 255 }):astype("u8")
    local m = tycho.array({ true, false, true })
    tycho.flush()
    local f0 = flushes()
    local cu = tycho.bincount(u, { minlength = 256 })
    local cm = tycho.bincount(m, { minlength = 2 })
    assert.are.equal(f0, flushes())
    local t = cu:totable()
    assert.are.equal(256, #t)
    assert.are.same({ 1, 0, 0, 2, 1 }, { t[1], t[2], t[3], t[4], t[256] })
    spec_same(cm:totable(), { 1, 2 })
  end)

  it("computes dist:min(2) in the pass that computes the labels", function()
    local rows = {}
    for r = 1, 3 do for i = 1, #X do rows[#rows + 1] = X[i] end end -- 36 points
    local data, cent = tycho.array(rows):astype("f64"), tycho.array(C):astype("f64")
    tycho.flush()
    local f0 = flushes()
    local dist, labels, counts, sx = labels_of(data, cent)
    local mins = dist:min(2)
    dist = nil
    collectgarbage()
    assert.are.equal(f0, flushes())
    tycho.flush()
    local f = spec_fused_with(30, "argmin min")
    assert.is_not_nil(f)
    assert.are.equal(8, f.fused) -- add, the product (3), mul, sub, argmin, min
    spec_same(counts:totable(), { 12, 15, 9 })
    spec_same(sx:totable(), { 12.0, 84.0, 6.0 })
    assert.are.equal(99.0, mins:sum():item())
    local m = mins:totable()
    spec_same({ m[1], m[2], m[3], m[13], m[36] }, { 1.0, 0.0, 0.0, 1.0, 2.0 })
  end)

  -- rows of 10 with ties, NaNs of both signs, -0/+0 and infinities
  local function tricky(rows)
    local nan = 0 / 0
    local t = {}
    for i = 1, rows do
      local r = {}
      for j = 1, 10 do r[j] = ((i * 7 + j * 3) % 5) - 2.0 end
      if i % 4 == 1 then r[(i % 10) + 1] = nan end
      if i % 6 == 2 then r[3], r[8] = nan, -nan end
      if i % 6 == 3 then r[3], r[8] = -nan, nan end
      if i % 5 == 3 then for j = 1, 10 do r[j] = (j % 2 == 0) and 0.0 or -0.0 end end
      if i % 7 == 6 then for j = 1, 10 do r[j] = (j % 3 == 0) and math.huge or -math.huge end end
      if i % 9 == 4 then for j = 1, 10 do r[j] = math.huge end end
      t[i] = r
    end
    return tycho.array(t)
  end

  it("gives the unfused min and max, NaN signs and zeros included", function()
    local x = tricky(48)
    tycho.flush()
    local function step()
      local y = x * 1
      return y:argmin(2), y:min(2), y:argmax(2), y:max(2)
    end
    local a, b, c, d = step()
    assert.is_not_nil(spec_fused_with(12, "argmin min"))
    assert.is_not_nil(spec_fused_with(12, "argmax max"))
    local a2, b2, c2, d2 = tycho.parallel({ fuse = false }, step)
    assert.are.equal(text(a2), text(a))
    assert.are.equal(text(b2), text(b))
    assert.are.equal(text(c2), text(c))
    assert.are.equal(text(d2), text(d))
    -- row 2: NaN at 3, -NaN at 8: argmin gives the first NaN, min the last
    local t = b2:totable()
    assert.are.equal(tostring(-(0 / 0)), tostring(t[2]))
    assert.are.equal(3, a2:totable()[2])
  end)

  it("gives the unfused values with compiled kernels on any number of processors", function()
    local code = [[
      local nan = 0 / 0
      local t = {}
      for i = 1, 48 do
        local r = {}
        for j = 1, 10 do r[j] = ((i * 7 + j * 3) % 5) - 2.0 end
        if i % 6 == 2 then r[3], r[8] = nan, -nan end
        if i % 6 == 3 then r[3], r[8] = -nan, nan end
        if i % 5 == 3 then for j = 1, 10 do r[j] = (j % 2 == 0) and 0.0 or -0.0 end end
        t[i] = r
      end
      local x = tycho.array(t)
      tycho.flush()
      local function step()
        local y = x * 1
        return y:argmin(2), y:min(2), y:argmax(2), y:max(2)
      end
      local r = { step() }
      local compiled = false
      for _, e in ipairs(tycho.explain(12)) do
        if e.fused_ops and e.fused_ops:find("[compiled] argmax max", 1, true) then compiled = true end
      end
      local u = { tycho.parallel({ fuse = false }, step) }
      local same = true
      for k = 1, 4 do
        local p, q = r[k]:totable(), u[k]:totable()
        for i = 1, #q do same = same and tostring(p[i]) == tostring(q[i]) end
      end
      print(string.format("compiled %s same %s", tostring(compiled), tostring(same)))
    ]]
    for _, cpus in ipairs({ "1", "3" }) do
      local out = spec_lua(code, { TYCHO_CODEGEN = "always", TYCHO_CPUS = cpus })
      assert.is_true(has(out, "compiled " .. tostring(spec_codegen()) .. " same true"), out)
    end
  end)

  it("leaves dist:min(2) alone when dist is written in between", function()
    local x = tricky(32)
    tycho.flush()
    local y = x * 1
    local i = y:argmin(2)
    y[{ 7, 1 }] = -100 -- row 7: no NaN, its first -2 in column 2
    local m = y:min(2)
    assert.is_nil(spec_fused_with(6, "argmin min"))
    assert.are.equal(-100, m:totable()[7])
    assert.are.equal(2, i:totable()[7])
  end)
end)
