-- tests/spec/sets_spec.lua — numpy's set functions (intersect1d, union1d,
-- setdiff1d), partition / argpartition, histogram and choose (issue 17 §2).
--
-- Expected values were computed once with numpy 1.24 and pasted here; tycho's
-- positions are numpy's + 1 (argpartition's results, kth, choose's choice
-- numbers). numpy's partition order is unspecified past its contract; tycho
-- returns the sorted order, so the expected values are numpy's np.sort /
-- np.argsort(kind="stable") + 1, and the contract is checked against them.
local tycho = tycho or require "tycho"

local same, fails = spec_same, spec_fails

local NAN = 0 / 0
local A = tycho.array

local function check(r, dtype, want)
  assert.are.equal(dtype, r.dtype)
  same(r.shape, { #want })
  same(r:totable(), want)
end

describe("intersect1d, union1d, setdiff1d", function()
  it("give numpy's sorted unique values for integers", function()
    local a, b = A({ 5, 1, 3, 3, 7, 1 }), A({ 3, 1, 9, 1 })
    check(tycho.intersect1d(a, b), "i64", { 1, 3 })
    check(tycho.union1d(a, b), "i64", { 1, 3, 5, 7, 9 })
    check(tycho.setdiff1d(a, b), "i64", { 5, 7 })
  end)

  it("treat NaN as numpy does (in no intersection, one in a union, kept by setdiff)", function()
    local a, b = A({ 2.5, NAN, 1.0, NAN, 4.0 }), A({ NAN, 4.0, 0.5 })
    check(tycho.intersect1d(a, b), "f64", { 4.0 })
    check(tycho.union1d(a, b), "f64", { 0.5, 1.0, 2.5, 4.0, NAN })
    check(tycho.setdiff1d(a, b), "f64", { 1.0, 2.5, NAN })
  end)

  it("promote as numpy: intersect1d and union1d both dtypes, setdiff1d keeps a's", function()
    local a, b = A({ 1, 2, 3 }), A({ 2.0, 3.5 })
    check(tycho.intersect1d(a, b), "f64", { 2.0 })
    check(tycho.union1d(a, b), "f64", { 1.0, 2.0, 3.0, 3.5 })
    check(tycho.setdiff1d(a, b), "i64", { 1, 3 })
  end)

  it("take empty inputs", function()
    local e, b = tycho.zeros(0), A({ 1.0, 2.0 })
    check(tycho.intersect1d(e, b), "f64", {})
    check(tycho.union1d(e, b), "f64", { 1.0, 2.0 })
    check(tycho.setdiff1d(e, b), "f64", {})
    check(tycho.setdiff1d(b, e), "f64", { 1.0, 2.0 })
  end)

  it("flatten non-contiguous inputs in C order (methods too)", function()
    local x = (tycho.arange(24):reshape(4, 6) * 7):mod(10)
    local a = x[{ {}, { 1, -1, 2 } }] -- numpy x[:, ::2]
    local b = x.T[{ { 2, 3 } }]       -- numpy x.T[1:3]
    same(a:ravel():totable(), { 0, 4, 8, 2, 6, 0, 4, 8, 2, 6, 0, 4 })
    same(b:ravel():totable(), { 7, 9, 1, 3, 4, 6, 8, 0 })
    check(a:intersect1d(b), "i64", { 0, 4, 6, 8 })
    check(a:union1d(b), "i64", { 0, 1, 2, 3, 4, 6, 7, 8, 9 })
    check(a:setdiff1d(b), "i64", { 2 })
  end)

  it("check their arguments", function()
    local a = A({ 1, 2 })
    fails({ "tycho.intersect1d:", "b must be a store" }, tycho.intersect1d, a)
    fails({ "tycho.union1d:", "a must be a store" }, tycho.union1d, { 1, 2 }, a)
    fails({ "tycho.setdiff1d:", "accepted: tycho.setdiff1d(a, b" }, tycho.setdiff1d, a, a, 3)
    fails({ "tycho.intersect1d:", "unknown option 'assume_unique'" }, tycho.intersect1d, a, a,
      { assume_unique = true })
  end)
end)

describe("partition and argpartition", function()
  local x = function() return A({ 3.0, NAN, 1.0, 2.0, 1.0, -4.0 }) end

  it("return the sorted order, a valid partition for every kth", function()
    local want = { -4.0, 1.0, 1.0, 2.0, 3.0, NAN } -- np.sort
    for _, k in ipairs({ 1, 2, 4, 6, -1, -3 }) do
      check(tycho.partition(x(), k), "f64", want)
      check(x():argpartition(k), "i64", { 6, 3, 5, 4, 1, 2 }) -- argsort(stable) + 1
    end
    check(x():partition({ 2, -2 }), "f64", want)
    -- the contract, with numpy's np.partition(x, 1) = [-4, 1, nan, 2, 1, 3]:
    -- position 2 (kth 2) holds 1.0 in both
    assert.are.equal(1.0, tycho.partition(x(), 2):totable()[2])
  end)

  it("work along an axis (default the last, negative from the end)", function()
    local y = A({ { 4, 1, 3, 1 }, { 0, 9, 2, 2 }, { 7, 7, 5, 6 } })
    same(y:partition(2):totable(), { { 1, 1, 3, 4 }, { 0, 2, 2, 9 }, { 5, 6, 7, 7 } })
    same(y:partition(3, 1):totable(), { { 0, 1, 2, 1 }, { 4, 7, 3, 2 }, { 7, 9, 5, 6 } })
    same(tycho.argpartition(y, -1, { axis = -2 }):totable(),
      { { 2, 1, 2, 1 }, { 1, 3, 1, 2 }, { 3, 2, 3, 3 } })
    same(y.T:partition(1, 2):totable(), { { 0, 4, 7 }, { 1, 7, 9 }, { 2, 3, 5 }, { 1, 2, 6 } })
  end)

  it("check kth and the axis", function()
    fails({ "tycho.partition:", "kth 0 is out of range for an axis of length 6" },
      tycho.partition, x(), 0)
    fails({ "tycho.argpartition:", "kth -7 is out of range" }, tycho.argpartition, x(), -7)
    fails({ "tycho.partition:", "kth 9 is out of range" }, tycho.partition, x(), { 1, 9 })
    fails({ "tycho.partition:", "kth is missing", "accepted:" }, tycho.partition, x())
    fails({ "tycho.partition:", "kth must be an integer" }, tycho.partition, x(), 1.5)
    fails({ "tycho.partition:", "axis 2 is out of range" }, tycho.partition, x(), 1, 2)
    fails({ "tycho.partition:", "axis is given twice" }, tycho.partition, x(), 1, 1, { axis = 1 })
    fails({ "tycho.partition:", "0-d" }, tycho.partition, tycho.zeros({}), 1)
  end)
end)

describe("histogram", function()
  local function hist(want_c, want_e, ...)
    local c, e = tycho.histogram(...)
    check(c, "i64", want_c)
    check(e, "f64", want_e)
  end

  it("counts equal bins over x's range, the last closed (numpy's)", function()
    hist({ 2, 2, 2 }, { 1.0, 2.0, 3.0, 4.0 }, A({ 1, 2, 1, 2.5, 4, 4 }), 3)
    hist({ 3, 2, 2, 3 }, { 0.0, 2.25, 4.5, 6.75, 9.0 }, tycho.arange(10), 4)
    hist({ 0, 3 }, { 2.5, 3.0, 3.5 }, A({ 3, 3, 3 }), 2) -- one value: +-0.5 around it
    hist({ 0, 0, 0 }, { 0.0, 1 / 3, 2 / 3, 1.0 }, tycho.zeros(0), 3) -- empty: [0, 1]
  end)

  it("counts values on edges and leaves out those outside range and NaN", function()
    local x = A({ 0.0, 0.5, 1.0, 1.5, 2.0, -1, 3, NAN })
    hist({ 1, 1, 1, 2 }, { 0.0, 0.5, 1.0, 1.5, 2.0 }, x, 4, { range = { 0, 2 } })
    same(x:histogram(4, { range = { 0, 2 } }):totable(), { 1, 1, 1, 2 }) -- as a method
  end)

  it("makes numpy's edges bit for bit (linspace)", function()
    local x = A({ 0x1.a9d69cf87c18ep-1, 0x1.8d054e0f9f10cp+0, 0x1.07b195de603a1p+1,
      0x1.252ff43eb3cbbp+1, 0x1.1affd9f91eb04p+1, 0x1.d5048b447773bp+0, 0x1.348eabc3295f0p+0,
      0x1.a9571fe058747p-2, -0x1.b91dcbd69d814p-2, -0x1.37f7af601d289p+0, -0x1.d76ebef635809p+0,
      -0x1.1b8bb601dd7e6p+1, -0x1.24ffa48edbcc2p+1, -0x1.06cba45e7e65dp+1, -0x1.8a0c65c66ab85p+0,
      -0x1.a258ba44e815ep-1, 0x1.00cc2558c22bcp-6, 0x1.b14f6fa3fcf62p-1, 0x1.8ff97e0575c71p+0,
      0x1.089464d22f820p+1, 0x1.255cc79f0ee83p+1, 0x1.1a70a0a29a00fp+1, 0x1.d294c420341fbp+0,
      0x1.3121fd0f7ab18p+0, 0x1.998b656602b28p-2, -0x1.c8df39453154dp-2, -0x1.3b5cfd85553bdp+0,
      -0x1.d9d357dbf1a76p+0, -0x1.1c1433132d770p+1 })
    hist({ 6, 3, 3, 1, 4, 4, 8 }, { -0x1.24ffa48edbcc2p+1, -0x1.a2772a352b64cp+0,
      -0x1.f5de16993e628p-1, -0x1.4d9bb1904bf70p-2, 0x1.5084ca11e4d70p-2, 0x1.f752a2da0ad28p-1,
      0x1.a3317055919ccp+0, 0x1.255cc79f0ee83p+1 }, x, 7)
    -- a non-contiguous integer x: numpy's np.arange(24).reshape(2, 3, 4).transpose(2, 1, 0)[::2]
    local v = tycho.arange(24):reshape(2, 3, 4):transpose(1, 3)[{ { 1, -1, 2 } }]
    hist({ 3, 2, 2, 2, 3 }, { 0.0, 0x1.199999999999ap+2, 0x1.199999999999ap+3,
      0x1.a666666666667p+3, 0x1.199999999999ap+4, 22.0 }, v, 5)
  end)

  it("takes edges as a list or a store (increasing, the last closed)", function()
    local x = A({ 0, 1, 1, 2, 3, 5, 8 })
    hist({ 1, 2, 2, 2 }, { 0, 1, 2, 5, 8 }, x, { 0, 1, 2, 5, 8 })
    hist({ 1, 2, 2, 2 }, { 0, 1, 2, 5, 8 }, x, A({ 0, 1, 2, 5, 8 }))
    hist({ 2, 3 }, { 1.0, 3.0, 5.0 }, A({ 1, 2, 3, 4, 5 }):astype("f32"), 2)
    hist({ 1, 2 }, { 0.0, 0.5, 1.0 }, A({ true, false, true }), 2) -- bool: as u8 (numpy's)
  end)

  it("checks its arguments", function()
    local x = A({ 1.0, 2.0 })
    fails({ "tycho.histogram:", "not finite", "range" }, tycho.histogram, A({ 1.0, NAN }), 3)
    fails({ "tycho.histogram:", "bins must be positive" }, tycho.histogram, x, 0)
    fails({ "tycho.histogram:", "increase monotonically" }, tycho.histogram, x, { 0, 2, 1 })
    fails({ "tycho.histogram:", "range applies to a bin count" }, tycho.histogram, x, { 0, 1 },
      { range = { 0, 1 } })
    fails({ "tycho.histogram:", "lo must not exceed hi" }, tycho.histogram, x, 2,
      { range = { 1, 0 } })
    fails({ "tycho.histogram:", "option range must be {lo, hi}" }, tycho.histogram, x, 2,
      { range = 3 })
    fails({ "tycho.histogram:", "unknown option 'density'" }, tycho.histogram, x, 2,
      { density = true })
    fails({ "tycho.histogram:", "bins must be an integer, a list or a store" }, tycho.histogram,
      x, "auto")
    fails({ "tycho.histogram:", "at least 2 edges" }, tycho.histogram, x, { 1 })
    fails({ "tycho.histogram:", "accepted: tycho.histogram(x, bins" }, tycho.histogram, x)
  end)
end)

describe("choose", function()
  it("picks element-wise from broadcast choices (1-based choice numbers)", function()
    local idx = A({ { 1, 2 }, { 3, 1 } })
    local r = tycho.choose(idx, { A({ { 1, 2 }, { 3, 4 } }), 10, A({ 100.5, 200.5 }) })
    assert.are.equal("f64", r.dtype)
    same(r:totable(), { { 1.0, 10.0 }, { 100.5, 4.0 } })
    local c = { A({ 1, 2, 3 }), A({ 7, 8, 9 }) }
    local s = A({ 2, 1, 2 }):choose(c)
    assert.are.equal("i64", s.dtype)
    same(s:totable(), { 7, 2, 9 })
    same(tycho.choose(A({ { 1 }, { 2 } }), c):totable(), { { 1, 2, 3 }, { 7, 8, 9 } })
    same(tycho.choose(A({ 2, 0, 1, 0, 2, 0 })[{ { 1, -1, 2 } }], c):totable(), { 7, 2, 9 })
  end)

  it("refuses choice numbers out of range and bad arguments", function()
    local c = { A({ 1, 2, 3 }), A({ 7, 8, 9 }) }
    fails({ "tycho.choose:", "choice 0 is out of range for 2 choices (1..2)" }, tycho.choose,
      A({ 0, 1, 2 }), c)
    fails({ "tycho.choose:", "choice 3 is out of range" }, tycho.choose, A({ 3, 1, 2 }), c)
    fails({ "tycho.choose:", "integer dtype" }, tycho.choose, A({ 1.0, 2.0, 1.0 }), c)
    fails({ "tycho.choose:", "idx must be an integer store" }, tycho.choose, 1, c)
    fails({ "tycho.choose:", "choices must be a list" }, tycho.choose, A({ 1 }), c[1])
    fails({ "tycho.choose:", "choices is an empty list" }, tycho.choose, A({ 1 }), {})
    fails({ "tycho.choose:", "choices[2] must be a store or a number" }, tycho.choose, A({ 1 }),
      { 1, "a" })
  end)
end)

describe("under any parallel mode", function()
  it("gives the same bits under TYCHO_CPUS=1 and 3 (parallel all)", function()
    local code = [[
      tycho.seed(7)
      local a = tycho.random(140001)
      local ai = (a * 1000):astype("i64")
      local bi = (tycho.random(50000) * 1500):astype("i64")
      local c, e = tycho.histogram(a * 3 - 1, 13)
      local p = tycho.argpartition(a, 70000)
      local ch = tycho.choose(ai:mod(3) + 1, {a, a * 2, -a})
      print(string.format("%d %d %d %d %a %a %d %a", tycho.intersect1d(ai, bi):sum():item(),
        tycho.union1d(ai, bi).shape[1], tycho.setdiff1d(bi, ai).shape[1], c[7], e[5],
        tycho.partition(a, 3):sum():item(), p[70000], ch:sum():item()))
    ]]
    local one = spec_lua(code, { TYCHO_CPUS = "1" })
    local three = spec_lua(code, { TYCHO_CPUS = "3", TYCHO_PARALLEL = "all" })
    assert.truthy(one:find("0x", 1, true), one)
    assert.are.equal(one, three)
  end)

  it("shows the parts' tasks in explain", function()
    tycho.flush()
    local c = tycho.histogram(tycho.arange(100), 4)
    c:sum():item()
    local names = {}
    for _, e in ipairs(tycho.explain(40)) do names[#names + 1] = e.task end
    local text = table.concat(names, " ")
    for _, t in ipairs({ "sort", "searchsorted" }) do
      assert.truthy(text:find(t, 1, true), text)
    end
  end)

  it("passes launch options to its parts", function()
    local a, b = tycho.arange(5), tycho.arange(3)
    same(tycho.intersect1d(a, b, { parallel = "single" }):totable(), { 0, 1, 2 })
    same(tycho.histogram(a, 2, { parallel = "all", range = { 0, 4 } }):totable(), { 2, 3 })
    fails({ "tycho.partition:", "parallel must be one of" }, tycho.partition, a, 2,
      { parallel = "bogus" })
  end)
end)
