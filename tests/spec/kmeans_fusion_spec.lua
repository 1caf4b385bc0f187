-- tests/spec/kmeans_fusion_spec.lua — bincount of labels whose bounds are
-- known from how they were made (core/range.c): labels = dist:argmin(2) - 1
-- hold 0 .. K-1, so bincount(labels, {minlength = K}) has length K without
-- reading max(labels): no flush, k-means' iteration stays in one window.
-- Expected values from numpy (np.bincount, dist.argmin(1)).

local function flushes() return tycho.stats().flushes end

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

describe("bincount of labels with known bounds", function()
  it("does not flush for argmin(2) - 1 with minlength = K (k-means)", function()
    local data, cent = tycho.array(X), tycho.array(C)
    tycho.flush()
    local f0 = flushes()
    local dist = distances(data, cent)
    local labels = dist:argmin(2) - 1
    local counts = tycho.bincount(labels, { minlength = 3 })
    local sx = tycho.bincount(labels, data[{ {}, 1 }], { minlength = 3 })
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
end)
