-- tests/spec/index_mix_spec.lua — index tables that mix index stores with
-- integers, ranges and tycho.newaxis (numpy's advanced indexing, issue 17
-- §2): x[{idx, 2}], x[{2, idx}], x[{idx, {1, 3}}], x[{{}, idx, 1}],
-- x[{i1, 2, i3}], reading and on the left of `=`.
--
-- Expected values were computed once with numpy 1.24 and pasted here
-- (x = np.arange(60).reshape(3, 4, 5), i = [2, 0, -1]; positions here are
-- numpy's + 1, negative ones count from the end as numpy's). numpy's rule:
-- integers broadcast with the index arrays; the broadcast dims stand where
-- the advanced entries stand when these are neighbours, else they go first.
local tycho = tycho or require "tycho"

local same, fails = spec_same, spec_fails

local function X() return tycho.arange(60):reshape(3, 4, 5) end
local function I() return tycho.array({ 3, 1, -1 }) end

local function check(r, shape, want)
  same(r.shape, shape)
  same(r:totable(), want)
end

describe("x[{...}] with one index store", function()
  it("with integers (in place when neighbours)", function()
    check(X()[{ I(), 2 }], { 3, 5 },
      { { 45, 46, 47, 48, 49 }, { 5, 6, 7, 8, 9 }, { 45, 46, 47, 48, 49 } })
    check(X()[{ 2, I() }], { 3, 5 },
      { { 30, 31, 32, 33, 34 }, { 20, 21, 22, 23, 24 }, { 35, 36, 37, 38, 39 } })
    check(X()[{ {}, I(), 1 }], { 3, 3 }, { { 10, 0, 15 }, { 30, 20, 35 }, { 50, 40, 55 } })
    check(X()[{ {}, -1, I() }], { 3, 3 }, { { 17, 15, 19 }, { 37, 35, 39 }, { 57, 55, 59 } })
  end)
  it("with ranges", function()
    check(X()[{ I(), { 1, 3 } }], { 3, 3, 5 },
      { { { 40, 41, 42, 43, 44 }, { 45, 46, 47, 48, 49 }, { 50, 51, 52, 53, 54 } },
        { { 0, 1, 2, 3, 4 }, { 5, 6, 7, 8, 9 }, { 10, 11, 12, 13, 14 } },
        { { 40, 41, 42, 43, 44 }, { 45, 46, 47, 48, 49 }, { 50, 51, 52, 53, 54 } } })
    -- a 2-D index store between a whole dim and a range (numpy x[:, [[0, 1], [3, 2]], 1:4])
    check(X()[{ {}, tycho.array({ { 1, 2 }, { 4, 3 } }), { 2, 4 } }], { 3, 2, 2, 3 },
      { { { { 1, 2, 3 }, { 6, 7, 8 } }, { { 16, 17, 18 }, { 11, 12, 13 } } },
        { { { 21, 22, 23 }, { 26, 27, 28 } }, { { 36, 37, 38 }, { 31, 32, 33 } } },
        { { { 41, 42, 43 }, { 46, 47, 48 } }, { { 56, 57, 58 }, { 51, 52, 53 } } } })
  end)
  it("puts the index dims first when a range separates the advanced entries", function()
    check(X()[{ I(), {}, 2 }], { 3, 4 },
      { { 41, 46, 51, 56 }, { 1, 6, 11, 16 }, { 41, 46, 51, 56 } })
    check(X()[{ 2, {}, I() }], { 3, 4 },
      { { 22, 27, 32, 37 }, { 20, 25, 30, 35 }, { 24, 29, 34, 39 } })
  end)
  it("with tycho.newaxis, a 1-D mask (its positions) and a 0-d index store", function()
    check(X()[{ tycho.newaxis, I(), 2 }], { 1, 3, 5 },
      { { { 45, 46, 47, 48, 49 }, { 5, 6, 7, 8, 9 }, { 45, 46, 47, 48, 49 } } })
    check(X()[{ tycho.array({ true, false, true }), 2 }], { 2, 5 },
      { { 5, 6, 7, 8, 9 }, { 45, 46, 47, 48, 49 } })
    local z = tycho.full({}, 2, "i64")
    check(X()[{ z, {}, 3 }], { 4 }, { 22, 27, 32, 37 })
  end)
  it("reads views in their own order", function()
    local xt = X():transpose(1, 3) -- numpy x.transpose(2, 1, 0), shape (5, 4, 3)
    check(xt[{ tycho.array({ 2, 2 }), 3 }], { 2, 3 }, { { 11, 31, 51 }, { 11, 31, 51 } })
    local s = X()[{ {}, { 2, 4 }, { 1, 5, 2 } }] -- numpy x[:, 1:4, 0:5:2], (3, 3, 3)
    check(s[{ tycho.array({ -1, 1 }), 2, tycho.array({ 3, 1 }) }], { 2 }, { 54, 10 })
  end)
end)

describe("x[{...}] with several index stores", function()
  it("broadcasts them together with the integers", function()
    local j = tycho.array({ 1, 5, -2 })
    check(X()[{ I(), 2, j }], { 3 }, { 45, 9, 48 })
    check(X()[{ tycho.array({ { 1 }, { 2 } }), 2, j }], { 2, 3 }, { { 5, 9, 8 }, { 25, 29, 28 } })
    check(X()[{ I(), {}, j }], { 3, 4 },
      { { 40, 45, 50, 55 }, { 4, 9, 14, 19 }, { 43, 48, 53, 58 } })
  end)
end)

describe("x[{...}] = v with index stores", function()
  it("scatters with integers; of repeated positions the last write wins", function()
    local x = X()
    x[{ I(), 2 }] = tycho.arange(15):reshape(3, 5) + 100
    same(x[{ {}, 2 }]:totable(),
      { { 105, 106, 107, 108, 109 }, { 25, 26, 27, 28, 29 }, { 110, 111, 112, 113, 114 } })
    x = X()
    x[{ 2, tycho.array({ 1, 1, 4 }) }] = tycho.array({ { -1 }, { -2 }, { -3 } })
    same(x[2]:totable(), { { -2, -2, -2, -2, -2 }, { 25, 26, 27, 28, 29 }, { 30, 31, 32, 33, 34 },
      { -3, -3, -3, -3, -3 } })
    x = X()
    x[{ {}, tycho.array({ 2, -1 }), 1 }] = -7
    same(x[{ {}, {}, 1 }]:totable(), { { 0, -7, 10, -7 }, { 20, -7, 30, -7 }, { 40, -7, 50, -7 } })
    local y = tycho.arange(12):astype("f64"):reshape(3, 4)
    y[{ tycho.array({ 3, 3, 1, 3 }), 2 }] = tycho.array({ 1, 2, 3, 4 })
    same(y:totable(), { { 0, 3, 2, 3 }, { 4, 5, 6, 7 }, { 8, 4, 10, 11 } })
  end)
  it("scatters with two stores split by a range (index dims first)", function()
    local x = X()
    x[{ tycho.array({ 1, 3, 1 }), {}, tycho.array({ 5, 1, 5 }) }] = tycho.arange(1, 13):reshape(3, 4)
    same(x[{ {}, {}, 1 }]:totable(), { { 0, 5, 10, 15 }, { 20, 25, 30, 35 }, { 5, 6, 7, 8 } })
    same(x[{ {}, {}, 5 }]:totable(), { { 9, 10, 11, 12 }, { 24, 29, 34, 39 }, { 44, 49, 54, 59 } })
  end)
  it("writes through views and with a 1-D mask", function()
    local x = X()
    local t = x:transpose(1, 3)
    t[{ tycho.array({ 2, 2 }), 3 }] = tycho.array({ { 7, 8, 9 }, { 10, 11, 12 } })
    same(x[{ {}, 3, 2 }]:totable(), { 10, 11, 12 })
    x = X()
    local s = x[{ {}, { 2, 4 }, { 1, 5, 2 } }]
    s[{ tycho.array({ -1, 1 }), 2, tycho.array({ 3, 1 }) }] = tycho.array({ 500, 600 })
    same(x[{ 1, 3 }]:totable(), { 600, 11, 12, 13, 14 })
    same(x[{ 3, 3 }]:totable(), { 50, 51, 52, 53, 500 })
    x = X()
    x[{ tycho.array({ true, false, true }), 3, tycho.array({ 2, 3 }) }] = 0
    same(x[{ {}, 3 }]:totable(), { { 10, 0, 12, 13, 14 }, { 30, 31, 32, 33, 34 }, { 50, 51, 0, 53, 54 } })
  end)
  it("writes views whose dims do not merge (a copy written back) and columns (in place)", function()
    local x = X()
    local y = x[{ {}, {}, { 1, 3 } }] -- numpy y = x[:, :, 0:3], (3, 4, 3)
    check(y[{ tycho.array({ 3, 1 }), { 2, 3 } }], { 2, 2, 3 },
      { { { 45, 46, 47 }, { 50, 51, 52 } }, { { 5, 6, 7 }, { 10, 11, 12 } } })
    y[{ tycho.array({ 3, 1, 3 }), { 2, 3 } }] = tycho.arange(18):reshape(3, 2, 3) + 100
    same(x[{ {}, { 2, 3 } }]:totable(),
      { { { 106, 107, 108, 8, 9 }, { 109, 110, 111, 13, 14 } },
        { { 25, 26, 27, 28, 29 }, { 30, 31, 32, 33, 34 } },
        { { 112, 113, 114, 48, 49 }, { 115, 116, 117, 53, 54 } } })
    x = X()
    local c = x[{ {}, {}, 2 }] -- numpy c = x[:, :, 1]
    c[{ tycho.array({ 2, 2 }), -1 }] = tycho.array({ 7, 8 })
    same(x[{ {}, {}, 2 }]:totable(), { { 1, 6, 11, 16 }, { 21, 26, 31, 8 }, { 41, 46, 51, 56 } })
  end)
  it("gives the same values with single, all and fusion off", function()
    local function run()
      local a = tycho.arange(200000):reshape(400, 500)
      local i = (tycho.arange(3000) * 7919):mod(400) + 1
      local g = a[{ i, -3 }]
      local b = a:copy()
      b[{ i, { 2, 10 } }] = tycho.arange(3000 * 9):reshape(3000, 9)
      b[{ i, (tycho.arange(3000) * 13):mod(500) - 500 }] = -1
      return { g:sum():item(), b:sum():item(), b[{ 17 }]:sum():item() }
    end
    local want = run()
    same(want, { 301041000, 19534161496, 4243560 }) -- numpy's
    for _, opts in ipairs({ { parallel = "single" }, { parallel = "all", overdecompose = 3 },
      { fuse = false } }) do
      same(tycho.parallel(opts, run), want)
    end
  end)
end)

describe("index tables with stores refuse", function()
  it("out-of-range positions, naming the entry and the first bad one", function()
    fails({ "tycho.index:", "index[1]: index 4 (entry 2 of the index store", "dimension 1 of size 3" },
      function() return X()[{ tycho.array({ 1, 4, 9 }), 2 }] end)
    fails({ "tycho.index:", "index[2]: index -5 (entry 1", "dimension 2 of size 4" },
      function() return X()[{ 2, tycho.array({ -5, 0 }) }] end)
    fails({ "tycho.index:", "index[3]: index 0", "positions start at 1" },
      function() return X()[{ 2, {}, tycho.array({ 0 }) }] end)
    fails({ "tycho.index:", "index[1] = 5 is out of range for dimension 1 of size 3" },
      function() return X()[{ 5, tycho.array({ 1 }) }] end)
    local x = X()
    fails({ "tycho.assign:", "index[2]: index 7", "dimension 2 of size 4" },
      function() x[{ {}, tycho.array({ 1, 7 }) }] = 1 end)
    same(x:sum():item(), 1770) -- nothing written
  end)
  it("stores that do not broadcast, bad masks, values of the wrong shape", function()
    fails({ "tycho.index:", "index[3] of shape (3,) does not broadcast", "(shape (2,))" },
      function() return X()[{ tycho.array({ 1, 2 }), 2, tycho.array({ 1, 2, 3 }) }] end)
    fails({ "tycho.index:", "index[1] is a mask of length 2, but dimension 1 has size 3" },
      function() return X()[{ tycho.array({ true, false }), 2 }] end)
    fails({ "tycho.index:", "index[1] is a mask of rank 2" },
      function() return X()[{ tycho.array({ { true } }), 2 }] end)
    fails({ "tycho.index:", "must be bool (a mask) or integer (positions), got f64" },
      function() return X()[{ tycho.array({ 1.5 }), 2 }] end)
    fails({ "tycho.index:", "too many indices (4) for a store of rank 3" },
      function() return X()[{ tycho.array({ 1 }), 2, 3, 4 }] end)
    fails({ "tycho.assign:", "values of shape (5,) do not broadcast to the indexed shape (3, 2)" },
      function() local x = X(); x[{ {}, tycho.array({ 1, 2 }), 2 }] = tycho.zeros(5) end)
  end)
end)
