-- tests/spec/mask_spec.lua — boolean masks and integer positions (issue 17
-- §2): x[mask], x[mask] = v, nonzero, argwhere, where(cond), count_nonzero,
-- any, all, x[idx], x[{{}, idx}], x[{i1, i2}], their assignments, take, put.
--
-- Expected values were computed once with numpy 1.24 and pasted here
-- (x = np.arange(24).reshape(2, 3, 4); x[x % 3 == 0] and so on); positions
-- are numpy's + 1 (tycho's rule), negative ones count from the end as numpy's.
local tycho = tycho or require "tycho"

local same, fails = spec_same, spec_fails

local NAN = 0 / 0
local function x24() return tycho.arange(24):reshape(2, 3, 4) end
local function x12() return tycho.arange(12):reshape(3, 4) end
local function m24() return x24():mod(3):eq(0) end

describe("x[mask]", function()
  it("selects in C order, as numpy's x[x % 3 == 0]", function()
    local r = x24()[m24()]
    same(r.shape, { 8 })
    assert.are.equal("i64", r.dtype)
    same(r:totable(), { 0, 3, 6, 9, 12, 15, 18, 21 })
  end)

  it("reads transposed and sliced views in their own C order", function()
    local xt = x24():transpose(1, 3) -- numpy x.transpose(2, 1, 0)
    same(xt[xt:mod(3):eq(0)]:totable(), { 0, 12, 9, 21, 6, 18, 3, 15 })
    local xs = x24()[{ {}, { 1, 3, 2 }, { 2, -1 } }] -- numpy x[:, 0:3:2, 1:]
    same(xs[xs:mod(2):eq(1)]:totable(), { 1, 3, 9, 11, 13, 15, 21, 23 })
  end)

  it("takes a mask of the leading dims (rows)", function()
    local r = x12()[tycho.array({ true, false, true })]
    same(r.shape, { 2, 4 })
    same(r:totable(), { { 0, 1, 2, 3 }, { 8, 9, 10, 11 } })
    same(x12()[{ tycho.array({ false, true, false }) }]:totable(), { { 4, 5, 6, 7 } })
  end)

  it("keeps NaN (non-zero) and handles empty and 0-d stores", function()
    local f = tycho.array({ 1, NAN, 0, -0.0, 2 })
    same(f[f:ne(0)]:totable(), { 1, NAN, 2 })
    local e = tycho.zeros(0)[tycho.zeros(0, "bool")]
    same(e.shape, { 0 })
    same(x12()[x12():gt(100)].shape, { 0 })
    local x0 = tycho.full({}, 5)
    same(x0[tycho.full({}, 1, "bool")]:totable(), { 5 })
    same(x0[tycho.full({}, 0, "bool")].shape, { 0 })
  end)

  it("keeps the dtype (f32, i32, u8, bool)", function()
    for _, dt in ipairs({ "f32", "i32", "u8", "bool" }) do
      local x = tycho.arange(6):astype(dt)
      local r = x[tycho.array({ true, false, true, false, false, true })]
      assert.are.equal(dt, r.dtype)
      if dt == "bool" then same(r:totable(), { false, true, true })
      else same(r:totable(), { 0, 2, 5 }) end
    end
  end)

  it("crosses chunks: 10007 elements (numpy's sum, ends and positions)", function()
    local a = tycho.arange(10007):astype("f64")
    local mk = (a * 7):mod(11):lt(3)
    local sel = a[mk]
    same(sel.shape, { 2729 })
    same(sel:sum():item(), 13650458)
    same(sel[{ { 1, 5 } }]:totable(), { 0, 5, 8, 11, 16 })
    same(sel[{ { -3, -1 } }]:totable(), { 9996, 9999, 10004 })
    same(tycho.argwhere(mk):sum():item(), 13653187)
  end)

  it("refuses masks of another shape and float index stores", function()
    fails({ "tycho.index:", "mask of shape (2, 2)", "shape (3, 4)" },
      function() return x12()[tycho.ones({ 2, 2 }, "bool")] end)
    fails({ "tycho.index:", "bool (a mask) or integer (positions), got f64" },
      function() return x12()[tycho.ones(3)] end)
    fails({ "tycho.assign:", "mask of shape (4,)" },
      function() local y = x12(); y[tycho.ones(4, "bool")] = 1 end)
  end)
end)

describe("x[mask] = v", function()
  local function y() return tycho.arange(12):astype("f64"):reshape(3, 4) end
  it("stores a number", function()
    local a = y()
    a[a:gt(5)] = -1
    same(a:totable(), { { 0, 1, 2, 3 }, { 4, 5, -1, -1 }, { -1, -1, -1, -1 } })
  end)
  it("stores one value per true element, in C order", function()
    local a = y()
    a[a:gt(5)] = tycho.arange(6) * 10
    same(a:totable(), { { 0, 1, 2, 3 }, { 4, 5, 0, 10 }, { 20, 30, 40, 50 } })
  end)
  it("broadcasts the value over selected rows", function()
    local a = y()
    a[tycho.array({ true, false, true })] = tycho.array({ 1, 2, 3, 4 })
    same(a:totable(), { { 1, 2, 3, 4 }, { 4, 5, 6, 7 }, { 1, 2, 3, 4 } })
    local b = y()
    b[tycho.array({ true, false, true })] = tycho.array({ { 7 }, { 8 } })
    same(b:totable(), { { 7, 7, 7, 7 }, { 4, 5, 6, 7 }, { 8, 8, 8, 8 } })
  end)
  it("writes through a transposed view", function()
    local a = y()
    local v = a:t()
    v[v:gt(6)] = tycho.array({ 100, 200, 300, 400, 500 })
    same(a:totable(), { { 0, 1, 2, 3 }, { 4, 5, 6, 400 }, { 100, 200, 300, 500 } })
  end)
  it("casts to the store's dtype (numpy: 2.7 into i32 is 2)", function()
    local a = tycho.arange(6):astype("i32")
    a[a:gt(2)] = 2.7
    same(a:totable(), { 0, 1, 2, 2, 2, 2 })
    assert.are.equal("i32", a.dtype)
  end)
  it("crosses chunks: 10007 elements", function()
    local a = tycho.arange(10007):astype("f64")
    local mk = (a * 7):mod(11):lt(3)
    a[mk] = -a[mk]
    same(a:sum():item(), 22764105)
    same(a[{ { 1, 8 } }]:totable(), { -0.0, 1, 2, 3, 4, -5, 6, 7 })
  end)
  it("refuses a value count that is not the selection's", function()
    fails({ "tycho.assign:", "cannot assign values of shape (3,) to the 6 selected elements" },
      function() local a = y(); a[a:gt(5)] = tycho.array({ 1, 2, 3 }) end)
  end)
end)

describe("nonzero, argwhere, where(cond)", function()
  it("give 1-based positions, one store per dim", function()
    local nz = tycho.nonzero(m24())
    assert.are.equal(3, #nz)
    same(nz[1]:totable(), { 1, 1, 1, 1, 2, 2, 2, 2 })
    same(nz[2]:totable(), { 1, 1, 2, 3, 1, 1, 2, 3 })
    same(nz[3]:totable(), { 1, 4, 3, 2, 1, 4, 3, 2 })
    same(tycho.where(m24())[3]:totable(), nz[3]:totable())
    same(m24():nonzero()[1]:totable(), nz[1]:totable())
    local aw = tycho.argwhere(m24())
    same(aw.shape, { 8, 3 })
    same(aw:totable(), { { 1, 1, 1 }, { 1, 1, 4 }, { 1, 2, 3 }, { 1, 3, 2 }, { 2, 1, 1 },
      { 2, 1, 4 }, { 2, 2, 3 }, { 2, 3, 2 } })
  end)
  it("read a transposed view in its C order", function()
    local xt = x24():transpose(1, 3)
    same(tycho.argwhere(xt:mod(3):eq(0))[{ { 1, 5 } }]:totable(),
      { { 1, 1, 1 }, { 1, 1, 2 }, { 2, 3, 1 }, { 2, 3, 2 }, { 3, 2, 1 } })
  end)
  it("count NaN as non-zero, -0.0 as zero; positions index back", function()
    local f = tycho.array({ 1, NAN, 0, -0.0, 2 })
    same(tycho.nonzero(f)[1]:totable(), { 1, 2, 5 })
    same(f[tycho.nonzero(f)[1]]:totable(), { 1, NAN, 2 })
  end)
  it("handle empty and 0-d stores as numpy", function()
    same(tycho.argwhere(tycho.zeros({ 0, 3 })).shape, { 0, 2 })
    same(tycho.nonzero(tycho.zeros(4))[1].shape, { 0 })
    same(tycho.argwhere(tycho.full({}, 5)).shape, { 1, 0 })
    same(tycho.argwhere(tycho.full({}, 0)).shape, { 0, 0 })
    fails({ "tycho.nonzero:", "0-d" }, tycho.nonzero, tycho.full({}, 1))
  end)
end)

describe("count_nonzero, any, all", function()
  it("reduce over all elements or axes, as numpy", function()
    same(tycho.count_nonzero(m24()):item(), 8)
    same(tycho.count_nonzero(m24(), 1):totable(), { { 2, 0, 0, 2 }, { 0, 0, 2, 0 }, { 0, 2, 0, 0 } })
    same(m24():count_nonzero({ 1, 3 }):totable(), { 4, 2, 2 })
    same(tycho.any(m24(), 2):totable(), { { true, true, true, true }, { true, true, true, true } })
    same(x24():gt(2):all(3):totable(), { { false, true, true }, { true, true, true } })
    same(tycho.any(m24()):item(), true)
    same(tycho.all(m24()):item(), false)
    same(x24():ge(0):all():item(), true)
    same(tycho.all(m24(), 2, { keepdims = true }).shape, { 2, 1, 4 })
  end)
  it("follow numpy on NaN and empty stores", function()
    local f = tycho.array({ 1, NAN, 0, -0.0, 2 })
    same(tycho.count_nonzero(f):item(), 3)
    same(f:any():item(), true)
    same(f:all():item(), false)
    same(tycho.any(tycho.zeros(0)):item(), false)
    same(tycho.all(tycho.zeros(0)):item(), true)
  end)
end)

describe("integer positions", function()
  local idx = function() return tycho.array({ 3, 1, -1, 1 }) end
  it("x[idx] gathers rows, x[{{}, idx}] columns", function()
    same(x12()[idx()]:totable(), { { 8, 9, 10, 11 }, { 0, 1, 2, 3 }, { 8, 9, 10, 11 }, { 0, 1, 2, 3 } })
    same(x12()[{ {}, idx() }]:totable(), { { 2, 0, 3, 0 }, { 6, 4, 7, 4 }, { 10, 8, 11, 8 } })
    local r = x12()[tycho.array({ { 1, 2 }, { 3, 1 } })]
    same(r.shape, { 2, 2, 4 })
    same(r:totable(), { { { 0, 1, 2, 3 }, { 4, 5, 6, 7 } }, { { 8, 9, 10, 11 }, { 0, 1, 2, 3 } } })
    same(tycho.arange(10):astype("f64")[{ { 1, 10, 3 } }][tycho.array({ 4, 1 }, "i32")]:totable(), { 9, 0 })
  end)
  it("pairs index stores as numpy (x[{i1, i2}], broadcast)", function()
    same(x12()[{ tycho.array({ 1, 3 }), tycho.array({ 2, -1 }) }]:totable(), { 1, 11 })
    same(x12()[{ tycho.array({ { 1 }, { 3 } }), tycho.array({ 2, 4 }) }]:totable(), { { 1, 3 }, { 9, 11 } })
  end)
  it("take and put follow numpy (flat without an axis)", function()
    same(tycho.take(x12(), idx()):totable(), { 2, 0, 11, 0 })
    same(x12():take(idx(), 2):totable(), { { 2, 0, 3, 0 }, { 6, 4, 7, 4 }, { 10, 8, 11, 8 } })
    same(tycho.take(x12(), idx(), { axis = -1 }):totable(), { { 2, 0, 3, 0 }, { 6, 4, 7, 4 }, { 10, 8, 11, 8 } })
    local w = x12()
    tycho.put(w, tycho.array({ 1, -1 }), 55)
    same(w:totable(), { { 55, 1, 2, 3 }, { 4, 5, 6, 7 }, { 8, 9, 10, 55 } })
    -- values shorter or longer than the positions are repeated or cut (numpy:
    -- np.put(np.zeros(8), [0, 2, 4, 6, 7], [10, 20]); np.put(np.zeros(6), [1, 3], [1, 2, 3]))
    local a = tycho.zeros(8)
    tycho.put(a, tycho.array({ 1, 3, 5, 7, 8 }), tycho.array({ 10, 20 }))
    same(a:totable(), { 10, 0, 20, 0, 10, 0, 20, 10 })
    local b = tycho.zeros(6)
    b:put(tycho.array({ 2, 4 }), tycho.array({ { 1, 2, 3 } }))
    same(b:totable(), { 0, 1, 0, 2, 0, 0 })
    local c = tycho.zeros(4) -- 2-D positions, 1-D values of the same size
    tycho.put(c, tycho.array({ { 1, 2 }, { 3, 4 } }), tycho.array({ 5, 6, 7, 8 }))
    same(c:totable(), { 5, 6, 7, 8 })
    local ok, err = pcall(tycho.put, c, tycho.array({ 1 }), tycho.zeros(0))
    assert.is_false(ok)
    assert.matches("values is empty", err)
  end)
  it("assign: repeated positions keep the last write, as numpy", function()
    local z = tycho.zeros(5)
    z[tycho.array({ 1, 1, 3 })] = tycho.array({ 7, 8, 9 })
    same(z:totable(), { 8, 0, 9, 0, 0 })
    local w = x12()
    w[tycho.array({ 3, 1, 3 })] = tycho.array({ { 1, 1, 1, 1 }, { 2, 2, 2, 2 }, { 3, 3, 3, 3 } })
    same(w:totable(), { { 2, 2, 2, 2 }, { 4, 5, 6, 7 }, { 3, 3, 3, 3 } })
  end)
  it("assign through tables, pairs and transposed views", function()
    local w = x12()
    w[{ {}, tycho.array({ 1, 2 }) }] = 0
    same(w:totable(), { { 0, 0, 2, 3 }, { 0, 0, 6, 7 }, { 0, 0, 10, 11 } })
    local w2 = x12()
    w2[{ tycho.array({ 1, 3 }), tycho.array({ 2, -1 }) }] = 100
    same(w2:totable(), { { 0, 100, 2, 3 }, { 4, 5, 6, 7 }, { 8, 9, 10, 100 } })
    local w3 = x12()
    local wt = w3:t()
    wt[tycho.array({ 1, 4 })] = tycho.array({ { 1, 2, 3 } })
    same(w3:totable(), { { 1, 1, 2, 1 }, { 2, 5, 6, 2 }, { 3, 9, 10, 3 } })
  end)
  it("name the first out-of-range position", function()
    fails({ "tycho.index:", "index 4 (entry 2 of the index store", "dimension 1 of size 3" },
      function() return x12()[tycho.array({ 1, 4, 0, 9 })] end)
    fails({ "tycho.index:", "index 0 (entry 2", "positions start at 1" },
      function() return x12()[tycho.array({ -3, 0, 9 })] end)
    fails({ "tycho.index:", "index -5", "dimension 2 of size 4" },
      function() return x12()[{ {}, tycho.array({ -5 }) }] end)
    fails({ "tycho.assign:", "index 6", "dimension 1 of size 5" },
      function() local z = tycho.zeros(5); z[tycho.array({ 6 })] = 1 end)
    fails({ "tycho.take:", "index 13", "size 12" }, tycho.take, x12(), tycho.array({ 13 }))
    -- nothing was written by the refused assignment, and the runtime goes on
    same(x12()[tycho.array({ 2 })]:totable(), { { 4, 5, 6, 7 } })
  end)
end)

describe("take_along_axis and put_along_axis", function()
  local function b() return (tycho.arange(24):reshape(2, 3, 4) * 7):mod(10) end
  it("gather along an axis as numpy's (argsort round trip, broadcasting)", function()
    same(tycho.take_along_axis(b(), b():argsort(3), 3):totable(),
      { { { 0, 1, 4, 7 }, { 2, 5, 8, 9 }, { 0, 3, 6, 7 } }, { { 1, 4, 5, 8 }, { 2, 3, 6, 9 }, { 0, 1, 4, 7 } } })
    same(tycho.take_along_axis(b(), tycho.array({ { { 1 }, { 4 }, { 2 } }, { { 3 }, { 3 }, { 1 } } }), -1):totable(),
      { { { 0 }, { 9 }, { 3 } }, { { 8 }, { 6 }, { 0 } } })
    same(b():take_along_axis(tycho.array({ { { 2, 1, 3, 2 } } }), 2):totable(),
      { { { 8, 7, 0, 9 } }, { { 2, 1, 4, 3 } } })
  end)
  it("scatter along an axis; the last of repeated positions wins", function()
    local c = b()
    tycho.put_along_axis(c, tycho.array({ { { 1 }, { 4 }, { 2 } }, { { 3 }, { 3 }, { 1 } } }), -1, 3)
    same(c:totable(), { { { -1, 7, 4, 1 }, { 8, 5, 2, -1 }, { 6, -1, 0, 7 } },
      { { 4, 1, -1, 5 }, { 2, 9, -1, 3 }, { -1, 7, 4, 1 } } })
    local d = b()
    d:put_along_axis(tycho.array({ { { 1, 1, 2, 2 } }, { { 1, 1, 2, 2 } } }),
      tycho.array({ { { 10, 20, 30, 40 } }, { { 50, 60, 70, 80 } } }), 2)
    same(d:totable(), { { { 10, 20, 4, 1 }, { 8, 5, 30, 40 }, { 6, 3, 0, 7 } },
      { { 50, 60, 8, 5 }, { 2, 9, 70, 80 }, { 0, 7, 4, 1 } } })
    local e = tycho.zeros(4)
    tycho.put_along_axis(e, tycho.array({ 2, 2, 2 }), tycho.array({ 1, 2, 3 }), 1)
    same(e:totable(), { 0, 3, 0, 0 })
  end)
  it("check ranks, shapes and positions", function()
    fails({ "tycho.take_along_axis:", "index 5", "dimension 3 of size 4" },
      tycho.take_along_axis, b(), tycho.array({ { { 5 } } }), 3)
    fails({ "tycho.take_along_axis:", "x's rank 3" }, tycho.take_along_axis, b(), tycho.array({ 1 }), 1)
    fails({ "tycho.take_along_axis:", "axis (argument 3) is required" }, tycho.take_along_axis, b(), b())
  end)
end)

describe("argument checks", function()
  it("name the function and its forms", function()
    fails({ "tycho.nonzero:", "accepted: tycho.nonzero(x" }, tycho.nonzero, m24(), 2)
    fails({ "tycho.argwhere:", "accepted:" }, tycho.argwhere, m24(), 1)
    fails({ "tycho.any:", "unknown option 'keepdim'" }, tycho.any, m24(), 1, { keepdim = true })
    fails({ "tycho.take:", "must be an integer store" }, tycho.take, x12(), "a")
    fails({ "tycho.take:", "integer dtype" }, tycho.take, x12(), tycho.ones(2))
    fails({ "tycho.put:", "accepted: tycho.put(x, indices, values" }, tycho.put, x12(), 1, 2, 3)
    fails({ "tycho.where:", "accepted:" }, tycho.where, m24(), 1, 2, 3)
    fails({ "tycho.count_nonzero:", "x must be a store" }, tycho.count_nonzero, 3)
  end)
end)

describe("under any parallel mode", function()
  local function run()
    local a = tycho.arange(50000):astype("f64")
    local mk = (a * 7):mod(13):lt(4)
    local sel = a[mk]
    local aw = tycho.argwhere(mk:reshape(100, 500))
    local g = a[tycho.array({ 50000, 1, 777, -2 })]
    local b = a:copy()
    b[mk] = -sel
    return { sel:sum():item(), sel.shape[1], aw:sum():item(), g:totable(), b:sum():item(),
      tycho.count_nonzero(mk):item() }
  end
  it("gives the same values with single, all and fusion off", function()
    local want = run()
    for _, opts in ipairs({ { parallel = "single" }, { parallel = "all", overdecompose = 3 },
      { fuse = false } }) do
      same(tycho.parallel(opts, run), want)
    end
  end)
  it("gives the same bits under TYCHO_CPUS=1 and 3 (parallel all)", function()
    local code = [[
      tycho.seed(5)
      local a = tycho.random(70001)
      local mk = a:gt(0.3)
      local sel = a[mk]
      local b = a:copy(); b[mk] = sel * 2
      local g = a[tycho.array({70001, 1, 35000})]
      print(sel.shape[1], string.format("%a %a %a", sel:sum():item(), b:sum():item(), g:sum():item()),
            tycho.argwhere(mk):sum():item())
    ]]
    local one = spec_lua(code, { TYCHO_CPUS = "1" })
    local three = spec_lua(code, { TYCHO_CPUS = "3", TYCHO_PARALLEL = "all" })
    assert.truthy(one:find("0x", 1, true), one)
    assert.are.equal(one, three)
  end)
  it("shows its tasks in explain", function()
    tycho.flush()
    local a = tycho.arange(1000)
    local r = a[a:gt(500)]
    local g = a[tycho.array({ 3, 2 })]
    r:sum():item()
    g:sum():item()
    local names = {}
    for _, e in ipairs(tycho.explain(20)) do names[#names + 1] = e.task end
    local text = table.concat(names, " ")
    for _, t in ipairs({ "mask_count", "mask_compress", "take" }) do
      assert.truthy(text:find(t, 1, true), text)
    end
  end)
end)
