-- tests/spec/args_spec.lua — no argument is ever ignored (issue 17 §1):
-- each reproducer of the issue, the numpy forms added for it (reductions over
-- several axes, keepdims, out, diagonal offsets, bincount of values, fields),
-- and the errors that replace silently wrong results.
--
-- Expected values were computed once with numpy 1.24 and pasted here
-- (np.arange(24).reshape(2, 3, 4).sum(axis=(0, 2)) and so on); positions
-- (argmax) are numpy's + 1.
local tycho = tycho or require "tycho"

local function near(a, b, tol)
  if a ~= a and b ~= b then return true end -- both NaN
  return a == b or math.abs(a - b) <= (tol or 0) * math.max(1, math.abs(b))
end

local function same(got, want, tol, path)
  path = path or ""
  if type(want) == "table" then
    assert(type(got) == "table", path .. ": expected a table, got " .. tostring(got))
    assert(#got == #want, string.format("%s: expected %d elements, got %d", path, #want, #got))
    for i = 1, #want do same(got[i], want[i], tol, path .. "[" .. i .. "]") end
  elseif type(want) == "number" then
    assert(type(got) == "number", path .. ": expected a number, got " .. tostring(got))
    assert(near(got, want, tol), string.format("%s: got %.17g, expected %.17g", path, got, want))
  else
    assert(got == want, string.format("%s: got %s, expected %s", path, tostring(got), tostring(want)))
  end
end

-- f(...) raises an error containing every string of `wants`; returns it.
local fails = spec_fails

local NAN = 0 / 0
local function x24() return tycho.arange(24):reshape(2, 3, 4) end

describe("the reproducers of issue 17", function()
  it("diagonal(x, 1) is the first superdiagonal", function()
    same(tycho.diagonal(tycho.arange(9):reshape(3, 3), 1):totable(), { 1, 5 })
  end)

  it("sum and max with two axes raise instead of reducing one", function()
    local x = x24()
    fails({ "tycho.sum: argument 3 is not accepted (got 2)", "accepted: tycho.sum(x [, axis | {axes}]" },
      tycho.sum, x, 1, 2)
    fails({ "tycho.max: argument 3 is not accepted (got 2)" }, function() return x:max(1, 2) end)
    fails({ "tycho.sum: argument 3 is not accepted (got true", "{keepdims = true}" },
      function() return x:sum(2, true) end)
  end)

  it("a third store of a binary op is out, not ignored", function()
    local a, b, o = tycho.ones(3), tycho.arange(3):astype("f64"), tycho.zeros(3)
    assert.are.equal(o, tycho.add(a, b, o)) -- numpy returns out
    same(o:totable(), { 1, 2, 3 })
    tycho.maximum(a, b, o)
    same(o:totable(), { 1, 1, 2 })
    local m = tycho.arange(6):astype("f64"):reshape(2, 3)
    local d = tycho.zeros({ 2, 2 })
    assert.are.equal(d, tycho.dot(m, m:t(), d))
    same(d:totable(), { { 5, 14 }, { 14, 50 } })
  end)

  it("random with a distribution gives it or raises", function()
    tycho.seed(7)
    local z = tycho.random(100000, "f64", "normal")
    local mean = z:mean():item()
    local var = ((z - mean) * (z - mean)):mean():item()
    assert.is_true(math.abs(mean) < 0.02, "mean " .. mean)
    assert.is_true(math.abs(var - 1) < 0.03, "variance " .. var)
    assert.is_true(z:min():item() < -3 and z:max():item() > 3) -- uniform never leaves [0, 1)
    local u = tycho.random(1000, "f32", "uniform")
    assert.are.equal("f32", u.dtype)
    assert.is_true(u:min():item() >= 0 and u:max():item() < 1)
    assert.are.equal("f32", tycho.random({ 2, 2 }, "f32", "normal").dtype)
    fails({ "tycho.random: unknown distribution 'gauss'", "\"normal\"" }, tycho.random, 3, "f64", "gauss")
    fails({ "tycho.random: argument 4 is not accepted" }, tycho.random, 3, "f64", "normal", 1)
  end)

  it("random normal is the same under a seed whatever the pieces", function()
    tycho.seed(3)
    local a = tycho.random(5000, "f64", "normal", nil):totable()
    tycho.seed(3)
    local b = tycho.parallel({ parallel = "all" }, function()
      return tycho.random(5000, "f64", "normal"):totable()
    end)
    same(b, a)
  end)

  it("bincount counts the value 0 (numpy)", function()
    same(tycho.bincount(tycho.array({ 0, 0, 1 })):totable(), { 2, 1 })
    same(tycho.bincount(tycho.array({ 0, 0, 1 }), { minlength = 5 }):totable(), { 2, 1, 0, 0, 0 })
    same(tycho.bincount(tycho.array({ 0, 0, 1 }), nil, 5):totable(), { 2, 1, 0, 0, 0 })
    -- minlength never truncates
    same(tycho.array({ 0, 3 }):bincount({ minlength = 2 }):totable(), { 1, 0, 0, 1 })
    same(tycho.bincount(tycho.array({ 3, 1 }), tycho.array({ 0.5, 2.0 })):totable(), { 0, 2, 0, 0.5 })
    same(tycho.bincount(tycho.array({ true, false, true })):totable(), { 1, 2 })
    same(tycho.bincount(tycho.array({ 1, 4 }, "u8"), { minlength = 2 }):totable(), { 0, 1, 0, 0, 1 })
    same(tycho.bincount(tycho.array({}, "i64")):totable(), {})
    same(tycho.bincount(tycho.array({}, "i64"), { minlength = 3 }):totable(), { 0, 0, 0 })
    -- a strided view: [5, 2, 2, 0, 7, 2][::2] = [5, 2, 7]
    same(tycho.array({ 5, 2, 2, 0, 7, 2 })[{ { 1, -1, 2 } }]:bincount():totable(), { 0, 0, 1, 0, 0, 1, 0, 1 })
    fails({ "tycho.bincount: x holds negative values (the smallest is -1)" }, tycho.bincount,
      tycho.array({ 2, -1 }))
    fails({ "tycho.bincount: weights (argument 2) must be a store, got number", "{minlength = n}" },
      tycho.bincount, tycho.array({ 1 }), 3)
    fails({ "tycho.bincount: minlength must be non-negative" }, tycho.bincount, tycho.array({ 1 }), nil, -1)
    fails({ "tycho.bincount: minlength is given twice" }, tycho.bincount, tycho.array({ 1 }), nil, 2,
      { minlength = 3 })
    fails({ "tycho.bincount: x must hold integer values" }, tycho.bincount, tycho.array({ 1.5 }))
    -- u64 labels are unsigned: one past 2^63 is no negative value, and no
    -- count of bins fits (api_fuzz seeds 80328, 80348: the length wrapped and
    -- bincount returned an empty store)
    local u = tycho.array({ 3, 0 }, "u64") - tycho.array({ 1, 2 }, "u64") -- 2, 2^64 - 2
    fails({ "x holds values of 2^63 - 1 or more (the largest is 18446744073709551614): too many bins" },
      tycho.bincount, u)
    fails({ "(the largest is 18446744073709551615)" }, tycho.bincount, -tycho.array({ 1, 2 }, "u64"), nil, 8)
    fails({ "(the largest is 9223372036854775807)" }, tycho.bincount, tycho.array({ 0, math.maxinteger }))
    same(tycho.bincount(tycho.array({ 2, 0 }, "u64")):totable(), { 1, 0, 1 })
  end)

  it("unknown store fields raise naming the fields", function()
    local x = x24()
    for _, k in ipairs({ "nbytes_", "strides", "Shape" }) do
      fails({ "store has no field or method '" .. k .. "'", "shape, dtype, ndim, size, nbytes, itemsize, T" },
        function() return x[k] end)
    end
    local c = tycho.zeros(2)
    do local _ <close> = c end
    fails({ "field 'nbytes' of a closed store" }, function() return c.nbytes end)
    fails({ "no field or method 'bogus'" }, function() return c.bogus end)
  end)
end)

describe("reductions over several axes", function()
  it("sum, max, min and prod match numpy", function()
    local x = x24()
    same(x:sum({ 1, 2 }):totable(), { 60, 66, 72, 78 })
    same(x:sum({ 1, 3 }):totable(), { 60, 92, 124 })
    same(tycho.sum(x, { 2, 3 }):totable(), { 66, 210 })
    same(x:sum({ -1, 1 }):totable(), { 60, 92, 124 }) -- negative axes, any order
    same(x:max({ 1, 3 }):totable(), { 15, 19, 23 })
    same(x:min({ 1, 2 }):totable(), { 0, 1, 2, 3 })
    same(x:prod({ 1, 2 }):totable(), { 0, 208845, 665280, 1514205 })
    local f = x * 0.5 + 0.25
    same(f:mean({ 2, 3 }):totable(), { 3.0, 9.0 }, 1e-15)
    same(f:mean({ 1, 3 }):totable(), { 4.0, 6.0, 8.0 }, 1e-15)
  end)

  it("every axis is the reduction over everything, to the bit", function()
    local f = tycho.random({ 30, 40, 5 })
    assert.are.equal(f:sum():item(), f:sum({ 1, 2, 3 }):item())
    assert.are.equal(f:max():item(), f:max({ 3, 1, 2 }):item())
    assert.are.equal(0, f:sum({ 1, 2, 3 }).ndim)
  end)

  it("keepdims keeps each reduced axis with length 1", function()
    local x = x24()
    local k = x:sum({ 1, 3 }, { keepdims = true })
    same(k.shape, { 1, 3, 1 })
    same(k:totable(), { { { 60 }, { 92 }, { 124 } } })
    same(x:sum(2, { keepdims = true }).shape, { 2, 1, 4 })
    same(x:sum(nil, { keepdims = true }).shape, { 1, 1, 1 })
    same(x:sum({ keepdims = true }).shape, { 1, 1, 1 })
    same(x:sum(2, { keepdims = false }).shape, { 2, 4 })
    -- argmax: numpy's positions + 1
    same(x:argmax(2, { keepdims = true }):totable(), { { { 3, 3, 3, 3 } }, { { 3, 3, 3, 3 } } })
    local s = tycho.array(5)
    same(s:sum({ keepdims = true }).shape, {})
    assert.are.equal(5, s:sum():item())
  end)

  it("views, NaN and empty stores", function()
    local x = x24()
    local t = x:transpose(1, 3) -- (4, 3, 2), not contiguous
    same(t:sum({ 1, 3 }):totable(), { 60, 92, 124 })
    same(t:sum(2, { keepdims = true }).shape, { 4, 1, 2 })
    local n = tycho.array({ { 1.0, NAN }, { 3.0, 4.0 } })
    assert.is_true(n:sum({ 1, 2 }):item() ~= n:sum({ 1, 2 }):item())
    same(n:sum(1):totable(), { 4.0, NAN })
    same(n:max(2):totable(), { NAN, 4.0 })
    local e = tycho.zeros({ 0, 3 })
    assert.are.equal(0, e:sum({ 1, 2 }):item())
    same(e:sum(1):totable(), { 0, 0, 0 })
    same(e:max(2).shape, { 0 })
    fails({ "tycho.max: axis 1 has length 0" }, function() return e:max(1) end)
    fails({ "tycho.max: the store is empty" }, function() return e:max({ 1, 2 }) end)
    fails({ "tycho.max: the store is empty" }, function() return e:max() end)
  end)

  it("errors name the axis", function()
    local x = x24()
    fails({ "tycho.sum: axis 2 is given twice" }, function() return x:sum({ 2, -2 }) end)
    fails({ "tycho.sum: axis[2] 4 is out of range for a store of rank 3" }, function() return x:sum({ 1, 4 }) end)
    fails({ "tycho.argmax: axis must be an integer, got table" }, function() return x:argmax({ 1, 2 }) end)
    fails({ "tycho.sum: option keepdims must be true or false, got number" },
      function() return x:sum(1, { keepdims = 1 }) end)
    fails({ "tycho.sum: unknown option 'keepdim'", "options: keepdims, out; the policy keys parallel" },
      function() return x:sum(1, { keepdim = true }) end)
  end)

  it("are the same bits under any mode and with fusion off", function()
    local f = tycho.random({ 64, 33, 17 })
    local want = f:sum({ 1, 3 }):totable()
    for _, opts in ipairs({ { parallel = "single" }, { parallel = "all", overdecompose = 3 }, { fuse = false } }) do
      same(tycho.parallel(opts, function() return (f * 1):sum({ 1, 3 }):totable() end), want)
      same(f:sum({ 1, 3 }, opts):totable(), want)
    end
  end)

  it("are the same bits under any --cpus", function()
    local code = [[
      tycho.seed(11)
      local f = tycho.random({50, 20, 9})
      local t = f:mean({1, 3}, {keepdims = true}):totable()
      local out = {}
      for i = 1, #t[1] do out[#out + 1] = string.format("%a", t[1][i][1]) end
      print(table.concat(out, ","))
    ]]
    local one = spec_lua(code, { TYCHO_CPUS = "1" })
    local four = spec_lua(code, { TYCHO_CPUS = "4", TYCHO_PARALLEL = "all" })
    assert.truthy(one:find("0x", 1, true), one)
    assert.are.equal(one, four)
  end)

  it("appear in explain as one reduction per axis", function()
    tycho.flush()
    local r = x24():astype("f64"):sum({ 1, 3 }, { fuse = false })
    local e = tycho.explain(3)
    local names = {}
    for i = 1, #e do names[#names + 1] = e[i].task end
    local text = table.concat(names, " ")
    assert.truthy(select(2, text:gsub("sum", "")) >= 2, text)
    same(r:totable(), { 60, 92, 124 })
  end)
end)

describe("out", function()
  it("positional or as an option, for ufuncs, reductions and dot", function()
    local a = tycho.arange(6):reshape(2, 3)
    local o = tycho.zeros({ 2, 3 }, "i64")
    assert.are.equal(o, tycho.mul(a, 2, { out = o }))
    same(o:totable(), { { 0, 2, 4 }, { 6, 8, 10 } })
    assert.are.equal(o, a:neg(o))
    same(o:totable(), { { 0, -1, -2 }, { -3, -4, -5 } })
    local s = tycho.zeros(3, "f64") -- i64 sums into f64: same_kind allows it
    assert.are.equal(s, a:sum(1, { out = s }))
    same(s:totable(), { 3, 5, 7 })
    local k = tycho.zeros({ 1, 3 }, "i64")
    a:max(1, { keepdims = true, out = k })
    same(k:totable(), { { 3, 4, 5 } })
    -- out may be an operand, and a view
    local v = tycho.arange(8):astype("f64")
    local half = v[{ { 1, -1, 2 } }]
    tycho.add(half, half, half)
    same(v:totable(), { 0, 1, 4, 3, 8, 5, 12, 7 })
  end)

  it("refuses another shape, a lossy dtype and a second out", function()
    local a = tycho.ones(3)
    fails({ "tycho.add: out has shape (4,), the result has shape (3,)" }, tycho.add, a, a, tycho.zeros(4))
    fails({ "tycho.add: cannot write the f64 result into out of dtype i64" }, tycho.add, a, a,
      tycho.zeros(3, "i64"))
    fails({ "tycho.add: out is given twice" }, tycho.add, a, a, tycho.zeros(3), { out = tycho.zeros(3) })
    fails({ "tycho.add: argument 3 (out) must be a store, got number" }, tycho.add, a, a, 5)
    fails({ "tycho.sum: option out must be a store, got string" }, tycho.sum, a, nil, { out = "x" })
    fails({ "tycho.where: argument 4 is not accepted" }, tycho.where, a:gt(0), a, a, a)
    fails({ "tycho.dot: out has shape (2,), the result has shape ()" }, tycho.dot, a, a, tycho.zeros(2))
  end)
end)

describe("diagonal", function()
  it("offsets and axes as numpy's", function()
    local a = tycho.arange(9):reshape(3, 3)
    same(a:diagonal():totable(), { 0, 4, 8 })
    same(a:diagonal(-1):totable(), { 3, 7 })
    same(a:diagonal(3):totable(), {})
    same(a:diagonal(math.mininteger):totable(), {})
    same(a:diagonal(math.maxinteger):totable(), {})
    local b = tycho.arange(12):reshape(3, 4)
    same(b:diagonal(1):totable(), { 1, 6, 11 })
    same(b:diagonal(-2):totable(), { 8 })
    same(b:diagonal(1, 2, 1):totable(), { 4, 9 })
    same(b:diagonal({ offset = 1, axis1 = 2, axis2 = 1 }):totable(), { 4, 9 })
    same(b:t():diagonal(1):totable(), { 4, 9 })
    same(b[{ {}, { 1, -1, 2 } }]:diagonal():totable(), { 0, 6 })
  end)

  it("is a view", function()
    local a = tycho.zeros({ 3, 3 }, "i64")
    a:diagonal(1):fill(7)
    same(a:totable(), { { 0, 7, 0 }, { 0, 0, 7 }, { 0, 0, 0 } })
  end)

  it("errors", function()
    local a = tycho.arange(9):reshape(3, 3)
    fails({ "tycho.diagonal: axis1 and axis2 must be two different axes" }, tycho.diagonal, a, 0, 1, 1)
    fails({ "tycho.diagonal: axis1 and axis2 go together" }, tycho.diagonal, a, 0, 1)
    fails({ "tycho.diagonal: offset must be an integer, got 1.5" }, tycho.diagonal, a, 1.5)
    fails({ "tycho.diagonal: argument 5 is not accepted" }, tycho.diagonal, a, 0, 1, 2, 3)
    fails({ "tycho.diagonal: x must be 2-D" }, tycho.diagonal, tycho.arange(3))
  end)
end)

describe("fields", function()
  it("nbytes, itemsize and T as numpy's", function()
    local x = x24()
    assert.are.equal(192, x.nbytes)
    assert.are.equal(8, x.itemsize)
    same(x.T.shape, { 4, 3, 2 })
    same(x.T:totable()[2][3], { 9, 21 }) -- x[1][3][2], x[2][3][2]
    assert.are.equal(12, tycho.zeros(3, "f32").nbytes)
    assert.are.equal(4, tycho.zeros({ 2, 2 }, "bool").nbytes)
    assert.are.equal(1, tycho.zeros(2, "u8").itemsize)
    local v = tycho.arange(5)
    assert.are.equal(v, v.T) -- 1-D: itself
    same(tycho.arange(6):reshape(2, 3).T:totable(), { { 0, 3 }, { 1, 4 }, { 2, 5 } })
  end)
end)

describe("helpful errors", function()
  it("a < b names a:lt(b)", function()
    local a, b = tycho.ones(2), tycho.zeros(2)
    fails({ "stores cannot be compared with <", "a:lt(b)" }, function() return a < b end)
    fails({ "a:le(b)" }, function() return a <= b end)
    fails({ "a:gt(b)" }, function() return a > b end)
    fails({ "stores cannot be compared" }, function() return a < 1 end)
  end)

  it("== is identity, eq is element-wise", function()
    local a = tycho.ones(2)
    local b = a:copy()
    assert.is_true(a == a)
    assert.is_false(a == b) -- two stores with equal values are two objects
    same(a:eq(b):totable(), { true, true })
  end)

  it("x[0] says indices start at 1", function()
    local x = tycho.arange(6):reshape(2, 3)
    fails({ "index 0 is out of range", "indices start at 1" }, function() return x[0] end)
    fails({ "indices start at 1" }, function() return tycho.arange(3)[0] end)
    fails({ "indices start at 1" }, function() return x[{ 1, 0 }] end)
    fails({ "indices start at 1" }, function() return x[{ { 0, 2 } }] end)
    fails({ "indices start at 1" }, function() x[0] = 1 end)
  end)

  it("extra arguments and options raise in every family", function()
    local x = tycho.arange(6):astype("f64")
    local cases = {
      { "tycho.exp: argument 3 is not accepted", function() return tycho.exp(x, nil, 1) end },
      { "tycho.exp: unknown option 'keepdims'", function() return x:exp({ keepdims = true }) end },
      { "tycho.zeros: argument 3 is not accepted", function() return tycho.zeros(3, "f64", 1) end },
      { "tycho.full: argument 4 is not accepted", function() return tycho.full(3, 1, "f64", true) end },
      { "tycho.arange: argument 5 is not accepted", function() return tycho.arange(0, 5, 1, "i64", 2) end },
      { "tycho.linspace: argument 5 is not accepted", function() return tycho.linspace(0, 1, 3, "f64", 2) end },
      { "tycho.array: argument 3 is not accepted", function() return tycho.array({ 1 }, "f64", 2) end },
      { "tycho.reshape: argument 3 is not accepted", function() return x:reshape({ 2, 3 }, 1) end },
      { "tycho.copy: argument 2 is not accepted", function() return x:copy("f32") end },
      { "tycho.fill: argument 3 is not accepted", function() return x:fill(1, 2) end },
      { "tycho.item: argument 2 is not accepted", function() return x:sum():item(1) end },
      { "tycho.transpose: argument 4 is not accepted", function() return x:reshape(2, 3):transpose(1, 2, 3) end },
      { "tycho.t: argument 2 is not accepted", function() return x:t(1) end },
      { "tycho.narrow: argument 5 is not accepted", function() return x:narrow(1, 1, 2, 3) end },
      { "tycho.expand: argument 3 is not accepted", function() return x:expand(1, 2) end },
      { "tycho.astype: argument 3 is not accepted", function() return x:astype("f32", true) end },
      { "tycho.totable: argument 2 is not accepted", function() return x:totable(1) end },
      { "tycho.save: argument 3 is not accepted", function() return x:save("/nonexistent/x.npy", 1) end },
      { "tycho.load: argument 2 is not accepted", function() return tycho.load("x.npy", "f64") end },
      { "tycho.flush: takes no arguments", function() return tycho.flush(x) end },
      { "tycho.seed: argument 2 is not accepted", function() return tycho.seed(1, 2) end },
      { "tycho.explain: argument 2 is not accepted", function() return tycho.explain(1, 2) end },
      { "tycho.hint: argument 3 is not accepted", function() return x:hint({}, 1) end },
      { "tycho.parallel: argument 4 is not accepted", function() return tycho.parallel({}, print, "o", 1) end },
      { "tycho.matmul: argument 4 is not accepted", function() return tycho.matmul(x, x, nil, 1) end },
      { "tycho.where: unknown option 'out'", function() return tycho.where(x:gt(1), x, x, { out = x }) end },
    }
    for _, c in ipairs(cases) do
      local err = fails({ c[1] }, c[2])
      assert.truthy(err:find("accepted: ", 1, true), err)
    end
  end)

  it("a table where a function takes no options is not taken for one", function()
    fails({ "tycho.zeros: dtype must be a string, got table" }, tycho.zeros, 3, {})
    -- trailing nils are as if not given
    same(tycho.zeros(2, "i64", nil, nil):totable(), { 0, 0 })
  end)

  it("user tasks: the declaration, the launcher's fields and with", function()
    local decl = { name = "args_spec_sq", args = { "in", "out" },
                   body = function(ctx, x, y) for i = ctx.lo, ctx.hi do y[i] = x[i] * x[i] end end }
    fails({ "tycho.task: argument 2 is not accepted" }, tycho.task, decl, { parallel = "all" })
    local sq = tycho.task(decl)
    same(sq(tycho.arange(3):astype("f64")):totable(), { 0, 1, 4 })
    fails({ "a task launcher has no field 'nmae'", "name, args, kind, with" }, function() return sq.nmae end)
    fails({ "with takes one table" }, function() return sq:with({ parallel = "all" }, 1) end)
    fails({ "takes 2 arguments" }, sq, tycho.ones(2), tycho.ones(2), tycho.ones(2))
  end)

  it("the runtime keeps working after every error", function()
    assert.are.equal(15, tycho.arange(6):sum():item())
  end)
end)
