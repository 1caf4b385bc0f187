-- tests/spec/shape_spec.lua — numpy's shape functions (issue 17 §2): joining,
-- splitting, scans, rearranging, creation like another store, repetition.
--
-- Expected values were computed once with numpy 1.24 (np.concatenate,
-- np.cumsum, ...: the calls are named next to each table) and pasted here;
-- the tests never call Python. Positions are 1-based in tycho, so numpy's
-- split points and indices() are shifted by one where noted.
local T = tycho
local NAN, INF = 0 / 0, math.huge

local NP = { -- /tmp/gen/gen.py: np.<fn>(...) for each entry
  cat1 = {{0.0, 1.0, 2.0}, {3.0, 4.0, 5.0}, {9.0, 10.5, 12.0}, {13.5, 15.0, 16.5}},
  cat2 = {{0.0, 1.0, 2.0, 9.0, 10.5, 12.0}, {3.0, 4.0, 5.0, 13.5, 15.0, 16.5}},
  catT = {{0, 3, 2, 5}, {1, 4, 1, 4}, {2, 5, 0, 3}},
  stack1 = {{{0, 1, 2}, {3, 4, 5}}, {{10, 11, 12}, {13, 14, 15}}},
  stack3 = {{{0, 10}, {1, 11}, {2, 12}}, {{3, 13}, {4, 14}, {5, 15}}},
  hs1 = {0, 1, 2, 0, 1},
  hs2 = {{0, 1, 2, 0, 1, 2}, {3, 4, 5, 3, 4, 5}},
  vs1 = {{0, 1, 2}, {3, 4, 5}},
  vs0 = {{1}, {2}},
  cs = {0, 1, 3, 6, 10, 15, 21, 28, 36, 45, 55, 66},
  cs1 = {{0, 1, 2, 3}, {4, 6, 8, 10}, {12, 15, 18, 21}},
  cs2 = {{0, 1, 3, 6}, {4, 9, 15, 22}, {8, 17, 27, 38}},
  csT = {{0, 4, 12}, {1, 6, 15}, {2, 8, 18}, {3, 10, 21}},
  csf = {0.1, 0.30000000000000004, 0.6000000000000001, 1.0, 1e+16, 0.0, 0.7},
  cpf = {0.1, 0.020000000000000004, 0.006000000000000001, 0.0024000000000000007},
  csb = {1, 1, 2, 3},
  csu8 = {200, 300, 350},
  cp = {{1, 2, 6, 24}, {5, 30, 210, 1680}, {9, 90, 990, 11880}},
  ncs = {{1.0, 1.0, 3.0}, {0.0, 3.0, 3.0}},
  ncp = {{1.0, 1.0, 2.0}, {1.0, 3.0, 2.0}},
  csnan = {{1.0, NAN, NAN}, {NAN, NAN, NAN}},
  csf32 = {0.10000000149011612, 0.30000001192092896, 0.6000000238418579},
  d1 = {3, 5, 7, 9},
  d2 = {2, 2, 2},
  dm = {{4, 4, 4, 4}, {4, 4, 4, 4}},
  dmT = {{4, 4}, {4, 4}, {4, 4}, {4, 4}},
  db = {true, false, true},
  du8 = {4, 253},
  flip = {{11, 10, 9, 8}, {7, 6, 5, 4}, {3, 2, 1, 0}},
  flip1 = {{8, 9, 10, 11}, {4, 5, 6, 7}, {0, 1, 2, 3}},
  flip2 = {{3, 2, 1, 0}, {7, 6, 5, 4}, {11, 10, 9, 8}},
  roll = {{7, 8, 9, 10}, {11, 0, 1, 2}, {3, 4, 5, 6}},
  roll1 = {{4, 5, 6, 7}, {8, 9, 10, 11}, {0, 1, 2, 3}},
  roll2 = {{1, 2, 3, 0}, {5, 6, 7, 4}, {9, 10, 11, 8}},
  mv = {{{0, 12}, {1, 13}, {2, 14}, {3, 15}}, {{4, 16}, {5, 17}, {6, 18}, {7, 19}}, {{8, 20}, {9, 21}, {10, 22}, {11, 23}}},
  mv2 = {{{0, 12}, {4, 16}, {8, 20}}, {{1, 13}, {5, 17}, {9, 21}}, {{2, 14}, {6, 18}, {10, 22}}, {{3, 15}, {7, 19}, {11, 23}}},
  perm = {{{0, 12}, {1, 13}, {2, 14}, {3, 15}}, {{4, 16}, {5, 17}, {6, 18}, {7, 19}}, {{8, 20}, {9, 21}, {10, 22}, {11, 23}}},
  ravT = {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11},
  eye = {{0.0, 1.0, 0.0, 0.0}, {0.0, 0.0, 1.0, 0.0}, {0.0, 0.0, 0.0, 1.0}},
  eyek = {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {1.0, 0.0, 0.0}},
  diagb = {{0, 0, 0}, {1, 0, 0}, {0, 2, 0}},
  diagx = {1, 6, 11},
  diagxm = {4, 9},
  tri = {{1.0, 1.0, 0.0, 0.0}, {1.0, 1.0, 1.0, 0.0}, {1.0, 1.0, 1.0, 1.0}},
  tril = {{0, 0, 0, 0}, {4, 0, 0, 0}, {8, 9, 0, 0}},
  triu = {{0, 1, 2, 3}, {0, 0, 6, 7}, {0, 0, 0, 11}},
  triu3 = {{{0, 1, 2}, {0, 4, 5}, {0, 0, 8}}, {{9, 10, 11}, {0, 13, 14}, {0, 0, 17}}},
  rep = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11},
  rep0 = {{0, 1, 2, 3}, {0, 1, 2, 3}, {4, 5, 6, 7}, {4, 5, 6, 7}, {8, 9, 10, 11}, {8, 9, 10, 11}},
  repc = {{0, 2, 2, 3}, {4, 6, 6, 7}, {8, 10, 10, 11}},
  tile = {0, 1, 2, 0, 1, 2},
  tile2 = {{0, 1, 2, 0, 1, 2}, {0, 1, 2, 0, 1, 2}},
  tile3 = {{0, 1, 2}, {3, 4, 5}, {0, 1, 2}, {3, 4, 5}},
  padc = {{0, 0, 0, 0, 0}, {0, 0, 1, 2, 0}, {0, 3, 4, 5, 0}, {0, 0, 0, 0, 0}},
  padc2 = {{9, 9, 9, 9, 9}, {0, 1, 2, 9, 9}, {3, 4, 5, 9, 9}},
  pade = {{0, 0, 1, 2, 2, 2}, {0, 0, 1, 2, 2, 2}, {3, 3, 4, 5, 5, 5}, {3, 3, 4, 5, 5, 5}, {3, 3, 4, 5, 5, 5}},
  padw = {{4, 5, 3, 4, 5, 3, 4, 5}, {1, 2, 0, 1, 2, 0, 1, 2}, {4, 5, 3, 4, 5, 3, 4, 5}, {1, 2, 0, 1, 2, 0, 1, 2}},
  mgx = {{0, 1, 2}, {0, 1, 2}},
  mgy = {{10, 10, 10}, {20, 20, 20}},
  mgi = {{0, 0}, {1, 1}, {2, 2}},
  mgj = {{10, 20}, {10, 20}, {10, 20}},
  ind = {{{1, 1, 1}, {2, 2, 2}}, {{1, 2, 3}, {1, 2, 3}}},
}

-- Deep equality with NaN equal to NaN and integers equal to integral floats.
local function same(want, got, path)
  path = path or "x"
  if type(want) == "table" then
    assert(type(got) == "table", path .. ": expected a table, got " .. tostring(got))
    assert(#want == #got, string.format("%s: expected %d entries, got %d", path, #want, #got))
    for i = 1, #want do same(want[i], got[i], path .. "[" .. i .. "]") end
    return true
  end
  if want ~= want then
    assert(got ~= got, path .. ": expected NaN, got " .. tostring(got))
  else
    assert(want == got, string.format("%s: expected %s, got %s", path, tostring(want), tostring(got)))
  end
  return true
end
local function check(want, x, dtype)
  if dtype then assert.are.equal(dtype, x.dtype) end
  return same(want, x:totable())
end

local m = T.arange(12):reshape(3, 4)   -- np.arange(12).reshape(3, 4)
local a = T.arange(6):reshape(2, 3)
local b = T.arange(6, 12):reshape(2, 3) * 1.5

describe("joining", function()
  it("concatenate follows numpy: axis, promotion, transposed and flipped inputs", function()
    check(NP.cat1, T.concatenate({a, b}), "f64")
    check(NP.cat1, T.concatenate({a, b}, 1), "f64")
    check(NP.cat2, T.concatenate({a, b}, 2))
    check(NP.catT, T.concatenate({a:t(), T.flip(a:t(), 1)}, -1), "i64")
    check({0, 1, 2}, T.concatenate({T.zeros(0, "i64"), T.arange(3)}))
    check(NP.cat1, T.concatenate({T.zeros({0, 3}), a, b}))
    assert.are.equal("i32", T.concatenate({T.ones(2, "i32"), T.ones(1, "u8")}).dtype)
    assert.are.equal("bool", T.concatenate({T.ones(2, "bool"), T.zeros(1, "bool")}).dtype)
  end)

  it("stack, hstack and vstack", function()
    check(NP.stack1, T.stack({a, a + 10}))
    check(NP.stack3, T.stack({a, a + 10}, -1))
    check(NP.stack3, T.stack({a, a + 10}, 3))
    check(NP.hs1, T.hstack({T.arange(3), T.arange(2)}))
    check(NP.hs2, T.hstack({a, a}))
    check(NP.vs1, T.vstack({T.arange(3), T.arange(3) + 3}))
    check(NP.vs0, T.vstack({T.array(1), T.array(2)}))
    check({1, 2}, T.stack({T.array(1), T.array(2)}))
  end)

  it("the result is a new store: writing it leaves the inputs alone", function()
    local c = T.concatenate({a, a})
    c:fill(0)
    check({{0, 1, 2}, {3, 4, 5}}, a)
  end)

  it("refuses bad arguments naming the function and its forms", function()
    local function err(f, pat) 
      local ok, msg = pcall(f)
      assert.is_false(ok)
      assert.is_truthy(tostring(msg):find(pat, 1, true), tostring(msg))
    end
    err(function() T.concatenate({}) end, "tycho.concatenate: need at least one store")
    err(function() T.concatenate(a) end, "must be a list of stores")
    err(function() T.concatenate({a, 3}) end, "element 2 of the list must be a store")
    err(function() T.concatenate({a, T.arange(3)}) end, "same rank")
    err(function() T.concatenate({a, m}) end, "shapes must match except along axis 1")
    err(function() T.concatenate({T.array(1)}) end, "0-d stores cannot be concatenated")
    err(function() T.concatenate({a}, 3) end, "axis 3 is out of range")
    err(function() T.concatenate({a}, 1, 2) end, "argument 3 is not accepted")
    err(function() T.concatenate({a}, 1, 2) end, "accepted: tycho.concatenate(")
    err(function() T.stack({a, m}) end, "same shape")
    err(function() T.stack({a}, 4) end, "axis 4 is out of range")
  end)
end)

describe("splitting", function()
  it("split at 1-based positions (numpy's np.split(x, [2, 5]) is split(x, {3, 6}))", function()
    local p = T.split(T.arange(10), {3, 6})
    assert.are.equal(3, #p)
    check({0, 1}, p[1]); check({2, 3, 4}, p[2]); check({5, 6, 7, 8, 9}, p[3])
    p = T.split(T.arange(10), {-2})       -- np.split(x, [-2])
    check({0, 1, 2, 3, 4, 5, 6, 7}, p[1]); check({8, 9}, p[2])
    p = T.split(T.arange(5), {4, 2, 9})   -- np.split(x, [3, 1, 8]): clipped, empty parts
    check({0, 1, 2}, p[1]); check({}, p[2]); check({3, 4}, p[3]); check({}, p[4])
  end)

  it("split into equal sections along an axis; the parts are views", function()
    local x = T.arange(12):reshape(3, 4)
    local p = x:split(2, 2)
    check({{0, 1}, {4, 5}, {8, 9}}, p[1]); check({{2, 3}, {6, 7}, {10, 11}}, p[2])
    p[1]:fill(-1)
    check({-1, -1, 2, 3}, x[1])
    local err = select(2, pcall(T.split, T.arange(10), 3))
    assert.is_truthy(err:find("3 sections do not divide axis 1 of length 10 equally", 1, true), err)
  end)

  it("array_split allows unequal sections (np.array_split(arange(10), 3))", function()
    local p = T.array_split(T.arange(10), 3)
    check({0, 1, 2, 3}, p[1]); check({4, 5, 6}, p[2]); check({7, 8, 9}, p[3])
    p = T.array_split(T.arange(2), 3)
    check({0}, p[1]); check({1}, p[2]); check({}, p[3])
  end)

  it("refuses bad arguments", function()
    assert.has_error(function() T.split(T.array(1), 2) end)
    local ok, msg = pcall(T.split, T.arange(4), {0})
    assert.is_false(ok)
    assert.is_truthy(msg:find("positions start at 1", 1, true), msg)
    ok, msg = pcall(T.split, T.arange(4), "2")
    assert.is_truthy(msg:find("accepted: tycho.split(", 1, true), msg)
    ok, msg = pcall(T.split, T.arange(4), 0)
    assert.is_truthy(msg:find("at least 1", 1, true), msg)
  end)
end)

describe("scans", function()
  it("cumsum over all elements and along axes (np.cumsum)", function()
    check(NP.cs, T.cumsum(m), "i64")
    check(NP.cs, m:cumsum())
    check(NP.cs1, T.cumsum(m, 1))
    check(NP.cs2, m:cumsum(2))
    check(NP.cs2, m:cumsum(-1))
    check(NP.csT, T.cumsum(m:t(), 2))   -- a transposed view
    check(NP.cs, T.cumsum(m:t():t()))
    check({5}, T.cumsum(T.array(5)))    -- 0-d: np.cumsum(np.array(5))
    check({}, T.cumsum(T.zeros(0)))
    check({{}, {}}, T.cumsum(T.zeros({2, 0}), 2))
    check({{0, 0, 0}}, T.cumsum(T.zeros({1, 3}, "i32"), 1))
  end)

  it("keeps numpy's dtypes: bool and signed integers -> i64, unsigned -> u64, floats keep theirs", function()
    check(NP.csf, T.cumsum(T.array({0.1, 0.2, 0.3, 0.4, 1e16, -1e16, 0.7})), "f64")
    check(NP.csb, T.cumsum(T.array({true, false, true, true})), "i64")
    check(NP.csu8, T.cumsum(T.array({200, 100, 50}):astype("u8")), "u64")
    check(NP.csf32, T.cumsum(T.array({0.1, 0.2, 0.3}):astype("f32")), "f32")
    check({1, 2, 3}, T.cumsum(T.ones(3, "i32")), "i64")
  end)

  it("cumprod, nancumsum, nancumprod (np.cumprod, np.nancumsum, np.nancumprod)", function()
    check(NP.cp, T.cumprod(m + 1, 2), "i64")
    check(NP.cpf, T.cumprod(T.array({0.1, 0.2, 0.3, 0.4})))
    local n = T.array({{1, NAN, 2}, {NAN, 3, NAN}})
    check(NP.ncs, T.nancumsum(n, 2))
    check(NP.ncp, T.nancumprod(n, 1))
    check(NP.csnan, T.cumsum(n, 2))
    check(NP.cs2, T.nancumsum(m, 2), "i64")
  end)

  it("a long line is cut into fixed blocks and still scans exactly", function()
    local n = 3 * 65536 + 1234
    local c = T.cumsum(T.ones(n, "i32"))
    assert.are.equal(n, c[-1])
    assert.are.equal(65537, c[65537])
    assert.are.equal(n * (n + 1) // 2, c:sum():item())
    -- along a leading axis of a 2-D store too
    local c2 = T.cumsum(T.ones({n, 3}), 1)
    same({n, n, n}, c2[-1]:totable())
    same({131073, 131073, 131073}, c2[131073]:totable())
    local p = T.cumprod(T.full(n, 1.0))
    assert.are.equal(1.0, p[-1])
  end)

  it("diff (np.diff): n, axis, bool and unsigned wrap", function()
    local d = T.array({1, 4, 9, 16, 25})
    check(NP.d1, T.diff(d))
    check(NP.d2, d:diff(2))
    check({1, 4, 9, 16, 25}, T.diff(d, 0))
    check({}, T.diff(d, 7))
    check(NP.dm, T.diff(m, 1, 1))
    check(NP.dmT, T.diff(m:t()))
    check(NP.db, T.diff(T.array({true, false, false, true})), "bool")
    check(NP.du8, T.diff(T.array({1, 5, 2}):astype("u8")), "u8")
  end)

  it("appears in explain as scan launches", function()
    local c = T.cumsum(T.ones(10))
    c:sum():item()
    local text = tostring(T.explain(6))
    assert.is_truthy(text:find("scan", 1, true), text)
  end)

  it("refuses bad arguments", function()
    local function err(f, pat)
      local ok, msg = pcall(f)
      assert.is_false(ok)
      assert.is_truthy(tostring(msg):find(pat, 1, true), tostring(msg))
    end
    err(function() T.cumsum(3) end, "tycho.cumsum: x must be a store")
    err(function() T.cumsum(m, 3) end, "axis 3 is out of range")
    err(function() T.cumsum(m, 1, 2) end, "argument 3 is not accepted")
    err(function() T.cumsum(m, {bogus = 1}) end, "unknown option 'bogus'")
    err(function() T.cumprod(T.array(1), 1) end, "the store is 0-d")
    err(function() T.diff(m, -1) end, "n must be non-negative")
    err(function() T.diff(T.array(1)) end, "at least one dimension")
  end)
end)

-- A script that prints every bit of a few scans; run under several processor
-- counts, parallel modes and fusion settings it must print the same.
local SCAN_BITS = [[
  tycho.seed(7)
  local x = tycho.random({2, 300001})
  local outs = {tycho.cumsum(x, 2), tycho.cumsum(x), tycho.cumprod(x * 0.01 + 1, 2),
                tycho.nancumsum(x:t(), 1), tycho.cumsum(x:astype("f32"), 2)}
  for _, c in ipairs(outs) do
    io.write(string.format("%.17g %.17g %.17g\n", c:sum():item(), c[{-1}]:sum():item(),
                           c:max():item()))
  end
]]

describe("same bits", function()
  it("cumsum and cumprod give the same bits under any --cpus, parallel mode and fusion", function()
    local ref, code = spec_lua(SCAN_BITS, { TYCHO_CPUS = "1" })
    assert.are.equal(0, code, ref)
    assert.is_truthy(ref:find("%d%.%d+"), ref)
    for _, env in ipairs({
      { TYCHO_CPUS = "3" },
      { TYCHO_CPUS = "3", TYCHO_PARALLEL = "all" },
      { TYCHO_CPUS = "3", TYCHO_PARALLEL = "single" },
      { TYCHO_CPUS = "3", TYCHO_FUSE = "off" },
      { TYCHO_CPUS = "3", TYCHO_PARALLEL = "task" },
      { TYCHO_CPUS = "2", TYCHO_OMPS = "1" },
      { TYCHO_CPUS = "2", TYCHO_PARALLEL = "all", TYCHO_OVERDECOMPOSE = "3" },
    }) do
      assert.are.equal(ref, spec_lua(SCAN_BITS, env))
    end
  end)
end)

describe("rearranging", function()
  it("flip: all axes, one axis, views that write through", function()
    check(NP.flip, T.flip(m))
    check(NP.flip1, m:flip(1))
    check(NP.flip2, T.flip(m, {2}))
    check(NP.flip, T.flip(m, {1, -1}))
    check(NP.flip1, T.flip(m:t(), 2):t())
    check(7, T.flip(T.array(7)))
    local x = T.zeros(4)
    T.flip(x):copy()                     -- a copy of a view
    T.flip(x)[{{1, 2}}] = T.array({1, 2})
    check({0, 0, 2, 1}, x)
    check({{22, 20, 18, 16}, {14, 12, 10, 8}, {6, 4, 2, 0}}, T.flip(m) * 2)
    assert.are.equal(66, T.flip(m):sum():item())
  end)

  it("negative steps in index tables ({first, last, step}, Torch style)", function()
    local x = T.arange(5)
    check({4, 3, 2, 1, 0}, x[{{-1, 1, -1}}])
    check({4, 2, 0}, x[{{-1, 1, -2}}])
    check({3, 2, 1}, x[{{4, 2, -1}}])
    check({}, x[{{2, 3, -1}}])
    check({{11, 9}, {3, 1}}, m[{{-1, 1, -2}, {4, 1, -2}}])
    local y = T.zeros(5)
    y[{{-1, 1, -1}}] = T.arange(5)
    check({4, 3, 2, 1, 0}, y)
    local ok, msg = pcall(function() return x[{{1, 5, 0}}] end)
    assert.is_false(ok)
    assert.is_truthy(msg:find("step must be a non-zero integer", 1, true), msg)
    ok, msg = pcall(function() return x[{{7, 1, -1}}] end)
    assert.is_truthy(msg:find("out of range", 1, true), msg)
  end)

  it("roll (np.roll), flat and along an axis", function()
    check(NP.roll, T.roll(m, 5))
    check(NP.roll1, m:roll(-1, 1))
    check(NP.roll2, T.roll(m, 7, 2))
    check(NP.roll2, T.roll(m:t(), 7, 1):t())
    check({}, T.roll(T.zeros(0), 3))
    -- np.roll(m, (1, 2), (0, 1)), np.roll(m, 1, (0, 1)), np.roll(m, (1, -1), 1)
    check({{10, 11, 8, 9}, {2, 3, 0, 1}, {6, 7, 4, 5}}, T.roll(m, {1, 2}, {1, 2}))
    check({{11, 8, 9, 10}, {3, 0, 1, 2}, {7, 4, 5, 6}}, T.roll(m, 1, {1, 2}))
    check({{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}}, T.roll(m, {1, -1}, 2))
    assert.has_error(function() T.roll(m, {1, 2}) end)
    assert.has_error(function() T.roll(m, {1, 2}, {1, 2, 1}) end)
  end)

  it("squeeze, moveaxis, permute_dims, ravel, flatten, broadcast_to", function()
    same({3, 4}, T.squeeze(m:reshape(1, 3, 1, 4)).shape)
    same({3, 1, 4}, T.squeeze(m:reshape(1, 3, 1, 4), 1).shape)
    same({}, T.squeeze(T.zeros({1, 1})).shape)
    check(NP.mv, T.moveaxis(T.arange(24):reshape(2, 3, 4), 1, -1))
    check(NP.mv2, T.moveaxis(T.arange(24):reshape(2, 3, 4), {1, 2}, {-1, -2}))
    check(NP.perm, T.permute_dims(T.arange(24):reshape(2, 3, 4), {2, 3, 1}))
    check(NP.perm, T.arange(24):reshape(2, 3, 4):permute({2, 3, 1}))
    same({4, 3, 2}, T.permute(T.zeros({2, 3, 4})).shape)
    check({{0, 4, 8}, {1, 5, 9}, {2, 6, 10}, {3, 7, 11}}, T.permute(m:t(), {1, 2}))
    check(5, T.flip(m[{2, 2}]))             -- 0-d view of a strided store
    check(NP.ravT, T.ravel(m:t()))
    check(NP.ravT, m:t():flatten())
    local r = m:ravel()
    r[1] = 100                              -- contiguous: a view
    assert.are.equal(100, m[1][1])
    m[1][1] = 0
    check({{0, 1, 2}, {0, 1, 2}}, T.broadcast_to(T.arange(3), {2, 3}))
    assert.has_error(function() T.squeeze(m, 1) end)
    assert.has_error(function() T.broadcast_to(T.arange(3), {2, 4}) end)
    assert.has_error(function() T.moveaxis(m, 1, {2}) end)
    assert.has_error(function() T.permute(m, {1, 1}) end)
  end)
end)

describe("extreme arguments", function()
  it("huge shifts, offsets and counts give numpy's answer or an error, never a wrap", function()
    local big, small = math.maxinteger, math.mininteger
    -- np.roll(m, 2**63 - 1, 1): a shift of 3; twice on one axis: 2 (mod 4)
    check(T.roll(m, 3, 2):totable(), T.roll(m, big, 2))
    check(T.roll(m, 2, 2):totable(), T.roll(m, {big, big}, {2, 2}))
    check(T.roll(m, 1, 1):totable(), T.roll(m, small, 1))    -- -2**63 mod 3 = 1
    check(m:totable(), T.tril(m, big))
    check(m:totable(), T.triu(m, small))
    check({{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}, T.tril(m, small))
    same({3, 4}, T.eye(3, 4, small).shape)
    for _, f in ipairs({
      function() return T.rep(T.zeros(2), big) end,
      function() return T.rep(T.zeros(2), {big, big}) end,
      function() return T.pad(T.zeros(1), {big, 1}) end,
      function() return T.tile(T.zeros(2), big) end,
      function() return T.diag(T.zeros(2), small) end,
    }) do
      local ok, msg = pcall(f)
      assert.is_false(ok)
      assert.is_truthy(tostring(msg):find("tycho.", 1, true), tostring(msg))
    end
  end)
end)

describe("creation", function()
  it("zeros_like, ones_like, full_like, empty_like keep the shape (and dtype unless given)", function()
    check({{0, 0, 0}, {0, 0, 0}}, T.zeros_like(a), "i64")
    check({{1, 1, 1}, {1, 1, 1}}, a:ones_like("f32"), "f32")
    check({{7, 7, 7}, {7, 7, 7}}, T.full_like(a:t():t(), 7))
    check({true, true}, T.full_like(T.zeros(2), true, "bool"), "bool")
    same({3, 2}, T.empty_like(a:t()).shape)
    assert.are.equal("f64", T.empty_like(b).dtype)
    assert.has_error(function() T.full_like(a) end)
    assert.has_error(function() T.zeros_like(a, "f16") end)
  end)

  it("eye, identity, diag, tri, tril, triu (np.eye, np.diag, np.tri, np.tril, np.triu)", function()
    check(NP.eye, T.eye(3, 4, 1), "f64")
    check(NP.eyek, T.eye(3, nil, -2))
    check({{1, 0}, {0, 1}}, T.identity(2, "i32"), "i32")
    check({{1, 0}, {0, 1}}, T.eye(2, "u8"), "u8")
    same({0, 0}, T.eye(0).shape)
    check(NP.diagb, T.diag(T.array({1, 2}), -1))
    check(NP.diagx, T.diag(m, 1))
    check(NP.diagxm, m:diag(-1))
    check(NP.tri, T.tri(3, 4, 1))
    check(NP.tril, T.tril(m, -1))
    check(NP.triu, m:triu(1))
    check(NP.triu3, T.triu(T.arange(18):reshape(2, 3, 3)))
    check({{1.5, 0}, {3, 4.5}}, T.tril(T.array({{1.5, 2}, {3, 4.5}})), "f64")
    assert.has_error(function() T.eye(-1) end)
    assert.has_error(function() T.tril(T.arange(3)) end)
    assert.has_error(function() T.diag(T.zeros({2, 2, 2})) end)
  end)

  it("indices are 1-based positions; meshgrid in xy and ij indexing", function()
    check(NP.ind, T.indices({2, 3}), "i64")   -- np.indices((2, 3)) + 1
    local X, Y = T.meshgrid(T.arange(3), T.array({10, 20}))
    check(NP.mgx, X); check(NP.mgy, Y)
    local I, J = T.meshgrid(T.arange(3), T.array({10, 20}), {indexing = "ij"})
    check(NP.mgi, I); check(NP.mgj, J)
    check({0, 1, 2}, (T.meshgrid(T.arange(3))))
    assert.has_error(function() T.meshgrid(T.arange(3), {indexing = "yx"}) end)
    local ok, msg = pcall(T.meshgrid, T.arange(3), {sparse = true})
    assert.is_truthy(msg:find("unknown option 'sparse'", 1, true), msg)
  end)
end)

describe("repetition", function()
  it("repeat (np.repeat) with one count or one per element, flat or along an axis", function()
    check(NP.rep, T["repeat"](m, 2))
    check(NP.rep0, T.rep(m, 2, 1))
    check(NP.repc, m:rep({1, 0, 2, 1}, 2))
    check(NP.repc, m:rep(T.array({1, 0, 2, 1}), 2))   -- counts in a store, as numpy's array
    assert.has_error(function() T.rep(m, T.array({1.5, 0, 2, 1}), 2) end)
    check({}, T.rep(m, 0))
    assert.has_error(function() T.rep(m, {1, 2}, 2) end)
    assert.has_error(function() T.rep(m, -1) end)
  end)

  it("tile (np.tile)", function()
    check(NP.tile, T.tile(T.arange(3), 2))
    check(NP.tile2, T.tile(T.arange(3), {2, 2}))
    check(NP.tile3, a:tile({2, 1}))
    check(NP.tile3, T.tile(a:t():t(), {2, 1}))
  end)

  it("pad (np.pad) in constant, edge and wrap modes", function()
    check(NP.padc, T.pad(a, 1))
    check(NP.padc2, T.pad(a, {{1, 0}, {0, 2}}, {constant_values = 9}))
    check(NP.pade, a:pad({1, 2}, {mode = "edge"}))
    check(NP.padw, T.pad(a, {{1, 1}, {2, 3}}, {mode = "wrap"}))
    -- np.pad(a, ((3, 4), (5, 7)), mode="wrap"): wider than the axes, periodic
    check({{4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3}, {1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0}, {4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3}, {1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0}, {4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3}, {1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0}, {4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3}, {1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0}, {4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3}},
          T.pad(a, {{3, 4}, {5, 7}}, {mode = "wrap"}))
    check({{0, 0, 0}}, T.pad(T.zeros({1, 0}, "i64"), {{0, 0}, {1, 2}}, {constant_values = 0}))
    assert.has_error(function() T.pad(T.zeros({1, 0}), {{0, 0}, {1, 2}}, {mode = "edge"}) end)
    assert.has_error(function() T.pad(a, 1, {mode = "reflect"}) end)
    assert.has_error(function() T.pad(a, -1) end)
    local ok, msg = pcall(T.pad, a, 1, {mode = "edge", constant_values = 1})
    assert.is_false(ok)
    ok, msg = pcall(T.pad, a, 1, {fill = 1})
    assert.is_truthy(msg:find("unknown option 'fill'", 1, true), msg)
  end)
end)
