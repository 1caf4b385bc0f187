-- scatter_spec.lua — x[idx] = v, tycho.put and put_along_axis with long
-- index stores (the bucketed scatter: put_bucket + put_apply, chunks of
-- 65536 positions, so these cases span several chunks and pieces). Lines
-- this short go to the plain put by default (ops_scatter.c); CTest runs the
-- file twice, the second time as spec.scatter_spec.bucketed with
-- TYCHO_SCATTER_DIRECT=0: every case through the bucketed scatter.
--
-- Cases (m = 200000, k = 300000, i = 0..k-1 0-based):
--   idx0 = (i * 7919) % 150000: every destination 0..149999 is written by i
--   and by i + 150000, in different chunks; the later one must win.
-- Expected values were computed once with numpy 1.24 (/usr/bin/python3) and
-- pasted here, e.g. A: x = np.zeros(m); x[idx0] = i + 1; x.sum() and
-- (x * (np.arange(m) % 7)).sum() (integer values: exact in any order).
local same = spec_same
local fails = spec_fails

local M, K = 200000, 300000

local function idx1() -- idx0 + 1: tycho's positions are 1-based
  return (tycho.arange(K) * 7919):mod(150000) + 1
end

local function vals() return (tycho.arange(K) + 1):astype("f64") end

local function weights() return tycho.arange(M):mod(7) end

local function sums(x) return { x:sum():item(), (x:astype("f64") * weights()):sum():item() } end

local function case_a()
  local x = tycho.zeros(M)
  x[idx1()] = vals()
  return x
end

describe("scatter with many chunks", function()
  it("keeps the last of repeated positions across chunks (numpy's x[idx] = v)", function()
    local x = case_a()
    same(sums(x), { 33750075000.0, 101249745710.0 })
    -- np: x[0], x[1], x[149999], x[150000], x[idx0[-1]]
    same({ x[1], x[2], x[150000], x[150001] }, { 150001.0, 217680.0, 232322.0, 0.0 })
  end)

  it("keeps the last write for positions repeated within and across chunks", function()
    local x = tycho.zeros(M)
    x[tycho.arange(K):mod(10) + 1] = vals() -- np: x[i % 10] = i + 1
    same(x[{ { 1, 10 } }]:totable(),
      { 299991, 299992, 299993, 299994, 299995, 299996, 299997, 299998, 299999, 300000 })
    same(x:sum():item(), 2999955.0)
  end)

  it("counts negative positions from the end", function()
    local x = tycho.zeros(M)
    local i = tycho.arange(K)
    local idx0 = (i * 7919):mod(150000)
    -- np: ii = np.where(i % 3 == 0, idx0 - m, idx0); x[ii] = i + 1
    x[tycho.where(i:mod(3):eq(0), idx0 - M, idx0 + 1)] = vals()
    same(sums(x), { 33750075000.0, 101249745710.0 })
  end)

  it("writes one value, and every dtype width", function()
    local f = tycho.zeros(M, "f32")
    f[idx1()] = 5
    same({ f:sum():item(), tycho.count_nonzero(f):item() }, { 750000.0, 150000 })
    local i = tycho.arange(K)
    local a = tycho.zeros(M, "i32")
    a[idx1()] = (i:mod(1000) - 500):astype("i32")
    same(sums(a), { -75000, -223284 })
    local u = tycho.zeros(M, "u8")
    u[idx1()] = i:mod(251):astype("u8")
    same({ u:astype("i64"):sum():item(), (u:astype("i64") * weights()):sum():item() },
      { 18752107, 56258706 })
    local b = tycho.zeros(M, "bool")
    b[idx1()] = i:mod(2):eq(1)
    same(tycho.count_nonzero(b):item(), 75000)
  end)

  it("writes a strided column (x[{idx, 2}] = v)", function()
    local X = tycho.zeros({ M, 3 })
    X[{ idx1(), 2 }] = vals() -- np: X[idx0, 1] = i + 1
    same(X:sum():item(), 33750075000.0)
    same((X[{ {}, 2 }] * weights()):sum():item(), 101249745710.0)
  end)

  it("goes through tycho.put and put_along_axis the same way", function()
    local x = tycho.zeros(M)
    tycho.put(x, idx1(), vals())
    same(sums(x), { 33750075000.0, 101249745710.0 })
    local y = tycho.zeros(M)
    tycho.put_along_axis(y, idx1(), vals(), 1)
    same(sums(y), { 33750075000.0, 101249745710.0 })
  end)

  it("names the first bad position and writes nothing", function()
    local x = tycho.arange(M):astype("f64")
    local idx = idx1()
    idx[250001] = M + 1 -- entry 250001 (chunk 4) and 280001 (chunk 5) are bad
    idx[280001] = -M - 1
    fails({ "index 200001 (entry 250001 of the index store", "size 200000" },
      function() x[idx] = vals() end)
    same(x:sum():item(), 19999900000.0) -- untouched: sum(0..199999)
    idx[250001] = 0
    fails({ "index 0 (entry 250001", "positions start at 1" }, function() x[idx] = 7 end)
    idx[250001] = 5
    fails({ "tycho.put", "index -200001 (entry 280001" }, function() tycho.put(x, idx, vals()) end)
    same(x:sum():item(), 19999900000.0)
    same(sums(case_a()), { 33750075000.0, 101249745710.0 }) -- the runtime still works
  end)

  it("gives the same values with single, all and fusion off", function()
    local function run()
      local x = case_a()
      local y = tycho.zeros(M)
      y[tycho.arange(K):mod(10) + 1] = vals() * 2
      return { sums(x), y[{ { 1, 10 } }]:totable() }
    end
    local want = run()
    for _, opts in ipairs({ { parallel = "single" }, { parallel = "all", overdecompose = 7 },
      { parallel = "task" }, { fuse = false } }) do
      same(tycho.parallel(opts, run), want)
    end
  end)

  it("gives the same bits under TYCHO_CPUS=1 and 3 (parallel all)", function()
    local code = [[
      tycho.seed(9)
      local n, k = 300001, 700001
      local idx = (tycho.random(k) * (n - 0.5)):floor():astype("i64") + 1
      local x = tycho.random(n)
      x[idx] = tycho.random(k)
      local y = tycho.zeros(n, "f32")
      y[idx] = 3
      print(string.format("%a %a %a", x:sum():item(), (x * tycho.arange(n)):sum():item(),
        y:sum():item()))
    ]]
    local one = spec_lua(code, { TYCHO_CPUS = "1" })
    local three = spec_lua(code, { TYCHO_CPUS = "3", TYCHO_PARALLEL = "all" })
    local two = spec_lua(code, { TYCHO_CPUS = "2", TYCHO_PARALLEL = "all", TYCHO_OVERDECOMPOSE = "5" })
    assert.truthy(one:find("0x", 1, true), one)
    assert.are.equal(one, three)
    assert.are.equal(one, two)
  end)

  it("scatters segment after segment under a small memory budget", function()
    -- TYCHO_SYSMEM=16MB: segments of 65536 positions (rows <= 1/16 of the
    -- budget), five of them here; the later segment's write still wins, and a
    -- bad position in the last segment writes nothing at all
    local code = [[
      local M, K = 200000, 300000
      local i = tycho.arange(K)
      local idx = (i * 7919):mod(150000) + 1
      local x = tycho.zeros(M)
      x[idx] = (i + 1):astype("f64")
      local w = tycho.arange(M):mod(7)
      local y = tycho.arange(M):astype("f64")
      idx[290001] = M + 1
      local ok, err = pcall(function() y[idx] = (i + 1):astype("f64") end)
      print(string.format("%.17g %.17g %.17g", x:sum():item(), (x * w):sum():item(), y:sum():item()))
      print(err)
    ]]
    local out = spec_lua(code, { TYCHO_SYSMEM = "16MB", TYCHO_PARALLEL = "all", TYCHO_CPUS = "3" })
    assert.truthy(out:find("33750075000 101249745710 19999900000", 1, true), out)
    assert.truthy(out:find("index 200001 (entry 290001 of the index store", 1, true), out)
  end)

  it("shows its tasks in explain", function()
    tycho.flush()
    local x = case_a()
    x:sum():item()
    local names = {}
    for _, e in ipairs(tycho.explain(20)) do names[#names + 1] = e.task end
    local text = table.concat(names, " ")
    local bucketed = os.getenv("TYCHO_SCATTER_DIRECT") == "0"
    for _, t in ipairs(bucketed and { "put_bucket", "put_apply" } or { "index_check", "put" }) do
      assert.truthy(text:find(t, 1, true), text)
    end
    assert.are.equal(bucketed, text:find("put_bucket", 1, true) ~= nil, text)
  end)
end)
