-- tests/spec/bincount_merge_spec.lua — bincounts of the same labels in one
-- pass (plan/bincount_merge.c): k-means' counts and per-coordinate weights
-- become one launch that reads the labels once, with the same bits as the
-- separate launches (fuse = false) on any number of processors.
-- Expected values from numpy (np.bincount).

local has = function(str, needle) return str ~= nil and str:find(needle, 1, true) ~= nil end

local function bincount_launches(n)
  local out = {}
  for _, e in ipairs(tycho.explain(n)) do
    if e.task == "bincount" then out[#out + 1] = e end
  end
  return out
end

-- labels 0 .. k-1 as argmin makes them, so that bincount knows their bounds
-- and does not flush (core/range.c): argmin of |label - j| over j
local function bounded(t, k)
  local j = {}
  for i = 1, k do j[i] = i - 1 end
  local d = ((tycho.array(t) * 1.0):expand(2) - tycho.array(j):expand(1)):abs()
  return d:argmin(2) - 1
end

local X = { { 1, 2 }, { 0, 0 }, { 5, 5 }, { 6, 4 }, { -1, 3 }, { 2, 2 }, { 7, 7 }, { 0, 1 },
            { 4, 6 }, { 3, 0 }, { 1, 1 }, { 6, 6 } }
local LABELS = { 2, 0, 1, 1, 2, 2, 1, 0, 1, 0, 0, 1 }

describe("bincounts of the same labels", function()
  it("run as one launch with k-means' counts and weights", function()
    local data, labels = tycho.array(X, "f64"), bounded(LABELS, 3)
    tycho.flush()
    local counts = tycho.bincount(labels, { minlength = 3 })
    local cent = tycho.zeros({ 3, 2 })
    for d = 1, 2 do cent[{ {}, d }] = tycho.bincount(labels, data[{ {}, d }], { minlength = 3 }) end
    spec_same(counts:totable(), { 4, 5, 3 })
    spec_same(cent:totable(), { { 4.0, 2.0 }, { 28.0, 28.0 }, { 2.0, 7.0 } })
    local b = bincount_launches(12)
    assert.are.equal(1, #b)
    assert.are.equal(3, b[1].fused)
    assert.is_true(has(b[1].fused_ops, "bincount bincount bincount"), b[1].fused_ops)
  end)

  it("stay apart when the labels are written in between", function()
    local labels = bounded(LABELS, 3)
    tycho.flush()
    local c1 = tycho.bincount(labels, { minlength = 3 })
    labels[{ 1 }] = 0
    local c2 = tycho.bincount(labels, { minlength = 3 })
    spec_same(c1:totable(), { 4, 5, 3 })
    spec_same(c2:totable(), { 5, 5, 2 })
    assert.are.equal(2, #bincount_launches(12))
  end)

  it("stay apart for different labels or bases, and merge cast weights' results right", function()
    local a, b = bounded(LABELS, 3), bounded({ 0, 1, 1, 0, 2, 2, 2, 0, 1, 1, 1, 1 }, 3)
    local wi = tycho.array({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 }) -- i64: cast to f64 first
    tycho.flush()
    local ca = tycho.bincount(a, { minlength = 3 })
    local cb = tycho.bincount(b, { minlength = 3 })
    local wa = tycho.bincount(a, wi, { minlength = 3 })
    spec_same(ca:totable(), { 4, 5, 3 })
    spec_same(cb:totable(), { 3, 6, 3 })
    spec_same(wa:totable(), { 31.0, 35.0, 12.0 })
    assert.are.equal(3, #bincount_launches(12)) -- the cast writes wa's weights in between
  end)

  it("give the separate launches' bits on any number of processors", function()
    local code = [[
      local n = 20011
      local lab, w1, w2 = {}, {}, {}
      for i = 1, n do
        lab[i] = (i * 7919) % 13
        w1[i] = math.sin(i) * 1e3 + 1 / i
        w2[i] = math.cos(i * 0.37) * 1e-3 + i
      end
      local jj = {}
      for i = 1, 13 do jj[i] = i - 1 end
      local labels = ((tycho.array(lab) * 1.0):expand(2) - tycho.array(jj):expand(1)):abs():argmin(2) - 1
      local a, b = tycho.array(w1), tycho.array(w2)
      local a32 = tycho.array(w1, "f32")
      tycho.flush()
      -- 4 outputs (an f32 one: the generic loop) and 3 (count + two f64: the k-means loop)
      local function step4()
        return tycho.bincount(labels, { minlength = 13 }), tycho.bincount(labels, a, { minlength = 13 }),
               tycho.bincount(labels, b, { minlength = 13 }), tycho.bincount(labels, a32, { minlength = 13 })
      end
      local function step3()
        return tycho.bincount(labels, { minlength = 13 }), tycho.bincount(labels, a, { minlength = 13 }),
               tycho.bincount(labels, b, { minlength = 13 })
      end
      local same, merged = true, {}
      for s, step in ipairs({ step4, step3 }) do
        local r = { step() }
        merged[s] = 0
        for _, e in ipairs(tycho.explain(12)) do
          if e.task == "bincount" then merged[s] = e.fused end -- the last: this step's
        end
        local u = { tycho.parallel({ fuse = false }, step) }
        local v = { tycho.parallel({ overdecompose = 3 }, step) }
        local w = { tycho.parallel({ overdecompose = 3, fuse = false }, step) }
        for k = 1, #r do
          local p, q, s2, t = r[k]:totable(), u[k]:totable(), v[k]:totable(), w[k]:totable()
          for i = 1, #q do
            same = same and tostring(p[i]) == tostring(q[i]) and tostring(s2[i]) == tostring(t[i])
          end
        end
      end
      merged = merged[1] * 10 + merged[2]
      print(string.format("merged %d same %s", merged, tostring(same)))
    ]]
    for _, cpus in ipairs({ "1", "3" }) do
      local out = spec_lua(code, { TYCHO_CPUS = cpus })
      assert.is_true(has(out, "merged 43 same true"), out)
    end
  end)
end)
