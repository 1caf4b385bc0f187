-- tests/spec/sort_spec.lua — sort, argsort, unique, searchsorted, isin
-- (issue 17 §2). Expected values were computed once with numpy 1.24 and
-- pasted here; positions are numpy's + 1 (argsort with kind="stable", which
-- is what tycho's stable sort gives), b = (np.arange(24).reshape(2, 3, 4) * 7) % 10.
local tycho = tycho or require "tycho"

local function same(got, want, path)
  path = path or ""
  if type(want) == "table" then
    assert(type(got) == "table", path .. ": expected a table, got " .. tostring(got))
    assert(#got == #want, string.format("%s: expected %d elements, got %d", path, #want, #got))
    for i = 1, #want do same(got[i], want[i], path .. "[" .. i .. "]") end
  elseif type(want) == "number" and want ~= want then
    assert(got ~= got, path .. ": expected NaN, got " .. tostring(got))
  else
    assert(got == want, string.format("%s: got %s, expected %s", path, tostring(got), tostring(want)))
  end
end

local function fails(wants, f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok, "expected an error containing '" .. wants[1] .. "', the call succeeded")
  err = tostring(err)
  for _, w in ipairs(wants) do
    assert(err:find(w, 1, true), "expected '" .. w .. "' in: " .. err)
  end
end

local N = 0 / 0
local function xn() return tycho.array({ 3, 1, N, 2, 1, -0.0, 0.0, N, 5 }) end
local function b() return (tycho.arange(24):reshape(2, 3, 4) * 7):mod(10) end

describe("sort and argsort", function()
  it("are stable with NaN last, as numpy's", function()
    local s = tycho.sort(xn()):totable()
    same(s, { -0.0, 0.0, 1, 1, 2, 3, 5, N, N })
    assert.are.equal("-0.0", tostring(s[1]))
    same(xn():argsort():totable(), { 6, 7, 2, 5, 4, 1, 9, 3, 8 })
  end)
  it("sort along the last axis by default, or the one given", function()
    same(b():sort():totable(), { { { 0, 1, 4, 7 }, { 2, 5, 8, 9 }, { 0, 3, 6, 7 } },
      { { 1, 4, 5, 8 }, { 2, 3, 6, 9 }, { 0, 1, 4, 7 } } })
    same(tycho.sort(b(), 1):totable(), { { { 0, 1, 4, 1 }, { 2, 5, 2, 3 }, { 0, 3, 0, 1 } },
      { { 4, 7, 8, 5 }, { 8, 9, 6, 9 }, { 6, 7, 4, 7 } } })
    same(tycho.argsort(b(), { axis = 2 }):totable(), { { { 1, 3, 3, 1 }, { 3, 2, 2, 3 }, { 2, 1, 1, 2 } },
      { { 3, 1, 3, 3 }, { 2, 3, 2, 2 }, { 1, 2, 1, 1 } } })
    same(tycho.argsort(b(), -2):totable(), tycho.argsort(b(), 2):totable())
  end)
  it("read transposed views", function()
    same(b():transpose(1, 3):sort():totable(), { { { 0, 4 }, { 2, 8 }, { 0, 6 } }, { { 1, 7 }, { 5, 9 }, { 3, 7 } },
      { { 4, 8 }, { 2, 6 }, { 0, 4 } }, { { 1, 5 }, { 3, 9 }, { 1, 7 } } })
  end)
  it("keep every dtype", function()
    for _, dt in ipairs({ "f32", "i32", "u8" }) do
      local y = tycho.array({ 5, 3, 0, 7, 3, 1 }):astype(dt)
      local s = y:sort()
      assert.are.equal(dt, s.dtype)
      same(s:totable(), { 0, 1, 3, 3, 5, 7 })
      same(y:argsort():totable(), { 3, 6, 2, 5, 1, 4 })
    end
    local y = tycho.array({ true, false, true, false })
    same(y:sort():totable(), { false, false, true, true })
    same(y:argsort():totable(), { 2, 4, 1, 3 })
  end)
  it("handle empty stores and refuse 0-d ones", function()
    same(tycho.sort(tycho.zeros(0)).shape, { 0 })
    same(tycho.argsort(tycho.zeros({ 2, 0 })).shape, { 2, 0 })
    fails({ "tycho.sort:", "0-d" }, tycho.sort, tycho.full({}, 1))
    fails({ "tycho.argsort:", "axis 3 is out of range" }, tycho.argsort, tycho.zeros({ 2, 2 }), 3)
  end)
  it("sort 20011 elements as numpy (many runs and merges)", function()
    local z = (tycho.arange(20011) * 7919):mod(1000):astype("f64")
    local s = z:sort()
    same(s[{ { 1, 5 } }]:totable(), { 0, 0, 0, 0, 0 })
    same(s[{ { -3, -1 } }]:totable(), { 999, 999, 999 })
    local p = z:argsort()
    same(p[{ { 1, 6 } }]:totable(), { 1, 1001, 2001, 3001, 4001, 5001 })
    same(p[{ { -3, -1 } }]:totable(), { 17322, 18322, 19322 })
    same((p * tycho.arange(1, 20012)):sum():item(), 2004164584041)
  end)
end)

describe("a long 1-D sort (runs sorted in parallel, then merged)", function()
  local n = 300007
  local function z()
    local v = (tycho.arange(n) * 7919):mod(100003):astype("f64")
    v[{ { 1, n, 1000 } }] = N
    return v
  end
  it("gives numpy's values, NaN last", function()
    local s = z():sort()
    same(s[{ { 1, 3 } }]:totable(), { 0, 0, 1 })
    same(s[{ { n - 302, n - 300 } }]:totable(), { 100002, 100002, N })
    assert.are.equal(301, s[{ { n - 300, n } }]:ne(s[{ { n - 300, n } }]):sum():item())
    same((s[{ { 1, n - 301 } }] * tycho.arange(1, n - 300):mod(7)):sum():item(), 44957747853)
  end)
  it("gives numpy's stable positions (f64 and i32)", function()
    local p = z():argsort()
    same(p[{ { 1, 4 } }]:totable(), { 100004, 200007, 47319, 147322 })
    same(p[{ { -3, -1 } }]:totable(), { 298001, 299001, 300001 })
    same((p * tycho.arange(1, n + 1):mod(1000)):sum():item(), 22479121398714)
    local zi = (tycho.arange(n) * 7919):mod(1009):astype("i32")
    same(zi:sort()[{ { 1, n, 50000 } }]:totable(), { 0, 168, 336, 504, 672, 840, 1008 })
    same((zi:argsort() * tycho.arange(1, n + 1):mod(1000)):sum():item(), 22478402907903)
  end)
  it("shows its runs and merges in explain (argsort), its buckets (sort)", function()
    tycho.flush()
    z():argsort():sum():item()
    local names = {}
    for _, e in ipairs(tycho.explain(30)) do names[#names + 1] = e.task end
    local text = table.concat(names, " ")
    assert.truthy(text:find("sort_runs", 1, true), text)
    assert.truthy(text:find("sort_merge", 1, true), text)
    tycho.flush()
    z():sort():sum():item()
    names = {}
    for _, e in ipairs(tycho.explain(30)) do names[#names + 1] = e.task end
    text = table.concat(names, " ")
    for _, t in ipairs({ "sort_split", "sort_group", "sort_count", "sort_bucket" }) do
      assert.truthy(text:find(t, 1, true), text)
    end
  end)
end)

-- The long 1-D value sort of the 4- and 8-byte dtypes (ops_sort_bucket.c):
-- numbers from numpy 1.24's np.sort(kind="stable") (numpy's default sort
-- orders -0.0 and 0.0 as its algorithm happens to; tycho keeps them in input
-- order, as numpy's stable sort and tycho's merge sort do).
describe("a long 1-D value sort (sample sort, radix-sorted buckets)", function()
  local I = 1 / 0
  -- integers in [-1000, 1000], -0.0 at every 7th place, NaN, +inf, -inf
  local function sp(n)
    n = n or 200003
    local v = ((tycho.arange(n) * 7919):mod(2001) - 1000):astype("f64")
    v[{ { 1, n, 7 } }] = -0.0
    v[{ { 3, n, 101 } }] = N
    v[{ { 5, n, 997 } }] = I
    v[{ { 6, n, 1009 } }] = -I
    return v
  end
  it("gives numpy's stable order with NaN, -0.0, 0.0, inf, -inf and duplicates", function()
    local n = 200003
    local s = sp():sort()
    assert.are.equal(1977, s[{ { n - 1976, n } }]:ne(s[{ { n - 1976, n } }]):sum():item())
    assert.are.equal(200, s[{ { n - 2176, n - 1977 } }]:eq(I):sum():item())
    assert.are.equal(199, s[{ { 1, 199 } }]:eq(-I):sum():item())
    local fin = s[{ { 200, n - 2177 } }]
    same((fin * tycho.arange(1, 197628):mod(7)):sum():item(), 15364)
    local zr = s[{ { 84850, 113165 } }]
    assert.are.equal(28316, zr:eq(0):sum():item())
    same({ s[84849] < 0, s[113166] > 0 }, { true, true })
    -- the signs of the zeros in input order: numpy's stable sort's 28231 -0.0
    same(((1 / zr):lt(0) * tycho.arange(28316):mod(1000)):sum():item(), 13995027)
    assert.are.equal(28231, (1 / zr):lt(0):sum():item())
  end)
  it("gives the same bits as the merge sort (x[argsort(x)])", function()
    for _, n in ipairs({ 131071, 131072, 200003, 300007 }) do
      local x = sp(n)
      local a, b = x:sort(), x[x:argsort()]
      local ok = a:eq(b):logical_or(a:ne(a):logical_and(b:ne(b))):logical_and((1 / a):eq(1 / b):logical_or(a:ne(a)))
      assert.are.equal(n, ok:sum():item(), "n = " .. n)
    end
  end)
  it("gives each repeated value a bucket of its own (all equal, few others, zeros of both signs)", function()
    local n = 200003
    local eq = tycho.full(n, 3.5):sort()
    assert.are.equal(n, eq:eq(3.5):sum():item())
    local f = tycho.full(n, 2.0)
    f[{ { 1, n, 1003 } }] = -5
    f[{ { 2, n, 2001 } }] = 7
    local s = f:sort()
    same({ s[{ { 1, 200 } }]:eq(-5):sum():item(), s[{ { n - 99, n } }]:eq(7):sum():item(), s[201], s[n - 100] },
      { 200, 100, 2, 2 })
    local z = tycho.zeros(n)
    z[{ { 1, n, 3 } }] = -0.0
    z[{ { 2, n, 1001 } }] = -1
    z[{ { 5, n, 977 } }] = N
    s = z:sort()
    assert.are.equal(200, s[{ { 1, 200 } }]:eq(-1):sum():item())
    assert.are.equal(205, s[{ { n - 204, n } }]:ne(s[{ { n - 204, n } }]):sum():item())
    local zr = s[{ { 201, 199798 } }]
    assert.are.equal(199598, zr:eq(0):sum():item())
    same(((1 / zr):lt(0) * tycho.arange(199598):mod(1000)):sum():item(), 33181039)
    for _, x in ipairs({ f, z, (tycho.arange(n) * 7919):mod(7):astype("f64") }) do
      local a, b = x:sort(), x[x:argsort()]
      local ok = a:eq(b):logical_or(a:ne(a):logical_and(b:ne(b))):logical_and((1 / a):eq(1 / b):logical_or(a:ne(a)))
      assert.are.equal(n, ok:sum():item())
    end
  end)
  it("sorts reversed and already sorted input around its threshold (2 * 65536)", function()
    for n, want in pairs({ [131071] = 196323864, [131072] = 196325501, [262145] = 392698958 }) do
      local a = ((tycho.arange(n) * -1 + (n - 1)) * 3):mod(1000):astype("f64")
      local s = a:sort()
      same((s * tycho.arange(1, n + 1):mod(7)):sum():item(), want)
      same({ s[1], s[n] }, { 0, 999 })
      same((s:sort() * tycho.arange(1, n + 1):mod(7)):sum():item(), want)
    end
  end)
  it("keeps f32, i64, i32, u32 and u64", function()
    local n = 300007
    local base = (tycho.arange(n) * 7919):mod(100003) - 50000
    for _, dt in ipairs({ "f32", "i64", "i32" }) do
      local s = base:astype(dt):sort()
      assert.are.equal(dt, s.dtype)
      same(s[{ { 1, n, 50000 } }]:totable(), { -50000, -33334, -16667, 0, 16666, 33333, 50000 })
      same((s:astype("f64") * tycho.arange(1, n + 1):mod(7)):sum():item(), 671277)
    end
    local s = base:astype("u32"):sort()
    same(s[{ { 1, n, 50000 } }]:totable(), { 0, 16666, 33333, 50000, 4294933960, 4294950627, 4294967293 })
    s = base:astype("u64"):sort()
    same(s[{ { 1, 150001, 50000 } }]:totable(), { 0, 16666, 33333, 50000 })
  end)
  it("gives the same bits under TYCHO_CPUS=1, 2, 3 and every TYCHO_ISA", function()
    local code = [[
      tycho.seed(11)
      local v = ((tycho.arange(300007) * 7919):mod(2001) - 1000):astype("f64")
      v[{ { 1, 300007, 7 } }] = -0.0
      v[{ { 3, 300007, 101 } }] = 0 / 0
      tycho.save(os.getenv("OUT") .. "a.npy", v:sort())
      tycho.save(os.getenv("OUT") .. "b.npy", tycho.random(400000):sort())
      tycho.save(os.getenv("OUT") .. "c.npy", (tycho.random(300000) * 1e6 - 5e5):astype("i32"):sort())
      print("saved")
    ]]
    local function run(env)
      env.OUT = os.tmpname()
      local out = spec_lua(code, env)
      assert.truthy(out:find("saved", 1, true), out)
      local got = {}
      for _, f in ipairs({ "a", "b", "c" }) do
        local h = assert(io.open(env.OUT .. f .. ".npy", "rb"))
        got[#got + 1] = h:read("a")
        h:close()
        os.remove(env.OUT .. f .. ".npy")
      end
      os.remove(env.OUT)
      return got
    end
    local want = run({ TYCHO_CPUS = "1", TYCHO_ISA = "baseline" })
    for _, env in ipairs({ { TYCHO_CPUS = "2" }, { TYCHO_CPUS = "3", TYCHO_PARALLEL = "all" },
      { TYCHO_CPUS = "2", TYCHO_ISA = "avx2" }, { TYCHO_CPUS = "3", TYCHO_ISA = "baseline" } }) do
      local got = run(env)
      for i = 1, 3 do assert.truthy(got[i] == want[i], "file " .. i .. " differs under " .. env.TYCHO_CPUS) end
    end
  end)
end)

describe("unique", function()
  it("returns values, index, inverse and counts as numpy (1-based positions)", function()
    local v, i, inv, c = tycho.unique(b(), { return_index = true, return_inverse = true, return_counts = true })
    same(v:totable(), { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 })
    same(i:totable(), { 1, 4, 7, 10, 3, 6, 9, 2, 5, 8 })
    same(inv:totable(), { 1, 8, 5, 2, 9, 6, 3, 10, 7, 4, 1, 8, 5, 2, 9, 6, 3, 10, 7, 4, 1, 8, 5, 2 })
    same(c:totable(), { 3, 3, 2, 2, 3, 2, 2, 3, 2, 2 })
    local only, counts = b():unique({ return_counts = true })
    assert.are.equal(10, only.size)
    same(counts:totable(), c:totable())
    assert.are.equal(1, select("#", tycho.unique(b())))
  end)
  it("counts NaNs as one value (numpy's equal_nan) and keeps -0.0", function()
    local v, c = tycho.unique(xn(), { return_counts = true })
    same(v:totable(), { -0.0, 1, 2, 3, 5, N })
    same(c:totable(), { 2, 2, 1, 1, 1, 2 })
  end)
  it("of an empty store is empty", function()
    local v, c = tycho.unique(tycho.zeros(0, "i32"), { return_counts = true })
    same(v.shape, { 0 })
    assert.are.equal("i32", v.dtype)
    same(c.shape, { 0 })
  end)
  it("checks its options", function()
    fails({ "tycho.unique:", "unknown option 'return_count'" }, tycho.unique, b(), { return_count = true })
    fails({ "tycho.unique:", "return_index" }, tycho.unique, b(), { return_index = 1 })
    local v, c = tycho.unique(b(), { return_counts = true, parallel = "single" }) -- a launch option
    same(c:totable(), { 3, 3, 2, 2, 3, 2, 2, 3, 2, 2 })
    assert.are.equal(10, v.size)
  end)
end)

describe("searchsorted and isin", function()
  it("give numpy's insertion positions + 1", function()
    local a = tycho.array({ 1, 2, 2, 3 })
    local v = tycho.array({ { 2, 0 }, { 4, 2.5 } })
    same(tycho.searchsorted(a, v):totable(), { { 2, 1 }, { 5, 4 } })
    same(a:searchsorted(v, "right"):totable(), { { 4, 1 }, { 5, 4 } })
    same(a:searchsorted(v, { side = "right" }):totable(), { { 4, 1 }, { 5, 4 } })
    same(tycho.searchsorted(a, 2):item(), 2)
    same(tycho.searchsorted(tycho.array({ 1, 2, N }), tycho.array({ N, 2, 0 })):totable(), { 3, 2, 1 })
    fails({ "tycho.searchsorted:", "side must be \"left\" or \"right\"" }, tycho.searchsorted, a, v, "middle")
    fails({ "tycho.searchsorted:", "must be 1-D" }, tycho.searchsorted, tycho.zeros({ 2, 2 }), v)
  end)
  it("isin follows numpy (NaN is in nothing)", function()
    same(tycho.isin(b(), tycho.array({ 0, 4, 9 })):totable(),
      { { { true, false, true, false }, { false, false, false, true }, { false, false, true, false } },
        { { true, false, false, false }, { false, true, false, false }, { true, false, true, false } } })
    same(tycho.array({ 1, N, 3 }):isin(tycho.array({ 3, N })):totable(), { false, false, true })
    same(tycho.isin(tycho.arange(3), tycho.zeros(0)):totable(), { false, false, false })
  end)
end)

describe("under any parallel mode", function()
  local function run()
    local z = (tycho.arange(30011) * 7919):mod(1013):astype("f64"):reshape(30011)
    local m = z:reshape(30011, 1) * tycho.ones(3)
    local v, c = tycho.unique(z, { return_counts = true })
    local big = (tycho.arange(200003) * 7919):mod(100003):astype("f64")
    return { (z:argsort() * tycho.arange(1, 30012)):sum():item(), m:sort(1)[{ { 1, 5 }, 1 }]:totable(),
      (big:argsort() * tycho.arange(200003):mod(1000)):sum():item(), big:sort()[{ { 1, -1, 999 } }]:totable(),
      v:sum():item(), c:max():item(), tycho.isin(z, tycho.array({ 5, 7 })):sum():item() }
  end
  it("gives the same values with single, all and fusion off", function()
    local want = run()
    for _, opts in ipairs({ { parallel = "single" }, { parallel = "all", overdecompose = 3 }, { fuse = false } }) do
      same(tycho.parallel(opts, run), want)
    end
  end)
  it("gives the same bits under TYCHO_CPUS=1 and 3 (parallel all)", function()
    local code = [[
      tycho.seed(3)
      local a = tycho.random({300, 200})
      local s = a:sort(1)
      local p = tycho.random(400000):argsort()
      print(string.format("%a %a", (s * tycho.arange(300):reshape(300, 1)):sum():item(),
        (p * tycho.arange(400000)):sum():item()))
    ]]
    local one = spec_lua(code, { TYCHO_CPUS = "1" })
    local three = spec_lua(code, { TYCHO_CPUS = "3", TYCHO_PARALLEL = "all" })
    assert.truthy(one:find("0x", 1, true), one)
    assert.are.equal(one, three)
  end)
  it("shows its tasks in explain", function()
    tycho.flush()
    local r = tycho.sort(tycho.arange(100):mod(7))
    local q = tycho.searchsorted(r, tycho.arange(5))
    q:sum():item()
    local names = {}
    for _, e in ipairs(tycho.explain(20)) do names[#names + 1] = e.task end
    local text = table.concat(names, " ")
    assert.truthy(text:find("sort", 1, true), text)
    assert.truthy(text:find("searchsorted", 1, true), text)
  end)
end)
