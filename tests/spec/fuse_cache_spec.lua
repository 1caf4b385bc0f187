-- fuse_cache_spec.lua — the fusion pass's decision remembered per window
-- structure (runtime/src/plan/fuse_cache.c): a repeated window is replayed
-- to the same values, statistics and explain text as the pass would give,
-- and a window whose shapes, views, aliasing, constants or temporaries
-- differ is decided afresh.

-- Windows of one structure each (tycho.flush ends one), each made twice
-- in a row, then the same with one thing changed. Prints every result in
-- hex, then the statistics.
local PROGRAM = [[
local out = {}
local function put(x)
  for _, v in ipairs(x:totable()) do out[#out + 1] = string.format("%a", v) end
end
local a = tycho.arange(12) * 0.5
local b = tycho.arange(12) + 1
tycho.flush()
local function win(f) local r = f(); tycho.flush(); return r end
for rep = 1, 2 do
  -- the same structure twice; then a new constant value (same structure)
  put(win(function() return (a * 0.75 + b) * a - 2 end))
end
put(win(function() return (a * 0.25 + b) * a - 2 end))
-- a view at another offset, same shape
for off = 1, 3, 2 do
  for rep = 1, 2 do
    put(win(function() local v = a[{{off, off + 7}}]; return v * 2 + v * v end))
  end
end
-- aliasing: a * b, then a * a
for rep = 1, 2 do put(win(function() return (a * b + 1) * 3 end)) end
for rep = 1, 2 do put(win(function() return (a * a + 1) * 3 end)) end
-- another shape
local c = tycho.arange(14) * 0.5
for rep = 1, 2 do put(win(function() return (c * 0.75 + 1) * c end)) end
-- a temporary that Lua keeps: it must be written
local kept
for rep = 1, 2 do put(win(function() local t = a * 3; kept = t; return t + 1 end)) end
put(kept)
for rep = 1, 2 do put(win(function() local t = a * 3; return t + 1 end)) end
-- the overhead loop: full windows of 64 launches, phases repeating
local x = tycho.arange(1000) * 0.001
for _ = 1, 200 do x = x * 0.999 + 0.001 end
out[#out + 1] = string.format("%a %a", x[1], x[1000])
local s = tycho.stats()
io.write(table.concat(out, " "), "\n")
for _, k in ipairs({"launches_run", "fused_runs", "fused_launches", "fused_compiled",
                    "fused_inplace", "bytes_elided", "flushes"}) do
  io.write(k, "=", tostring(s[k]), "\n")
end
io.write("hits=", tostring(s.fuse_cache_hits), "\n")
]]

local function run(env)
  local out, code = spec_lua(PROGRAM, env)
  assert.are.equal(0, code, out)
  local hits = tonumber(out:match("hits=(%d+)"))
  return out:gsub("hits=%d+\n", ""), hits
end

describe("the fusion cache", function()
  it("replays repeated windows to the values, stats and explain of a fresh decision", function()
    local on, hits_on = run({ TYCHO_FUSE_CACHE = 1, TYCHO_CPUS = 2 })
    local off, hits_off = run({ TYCHO_FUSE_CACHE = 0, TYCHO_CPUS = 2 })
    assert.are.equal(0, hits_off)
    assert.is_true(hits_on >= 10, "hits: " .. tostring(hits_on))
    assert.are.equal(off, on)
    -- explain's text of every launch, both ways
    local eon = run({ TYCHO_FUSE_CACHE = 1, TYCHO_EXPLAIN = 1, TYCHO_CPUS = 2 })
    local eoff = run({ TYCHO_FUSE_CACHE = 0, TYCHO_EXPLAIN = 1, TYCHO_CPUS = 2 })
    assert.is_truthy(eon:find("fused", 1, true))
    assert.are.equal(eoff, eon)
  end)

  it("gives numpy's values when a constant, a view, an alias, a shape or a temporary changes", function()
    local a = tycho.arange(12) * 0.5
    local b = tycho.arange(12) + 1
    local function win(f) local r = f(); tycho.flush(); return r:totable() end
    local h0 = tycho.stats().fuse_cache_hits
    -- numpy: a = np.arange(12) * 0.5; b = np.arange(12) + 1.0
    -- ((a * 0.75 + b) * a - 2).sum() = 356.875; with 0.25: 293.625
    local function sum(t) local s = 0; for _, v in ipairs(t) do s = s + v end; return s end
    assert.are.equal(356.875, sum(win(function() return (a * 0.75 + b) * a - 2 end)))
    assert.are.equal(356.875, sum(win(function() return (a * 0.75 + b) * a - 2 end)))
    assert.are.equal(293.625, sum(win(function() return (a * 0.25 + b) * a - 2 end)))
    -- v = a[off-1:off+7]: (v * 2 + v * v).sum(): 1 -> 63.0, off 3 -> 115.0
    assert.are.equal(63.0, sum(win(function() local v = a[{{1, 8}}]; return v * 2 + v * v end)))
    assert.are.equal(115.0, sum(win(function() local v = a[{{3, 10}}]; return v * 2 + v * v end)))
    assert.are.equal(63.0, sum(win(function() local v = a[{{1, 8}}]; return v * 2 + v * v end)))
    -- ((a * b + 1) * 3).sum() = 894.0; ((a * a + 1) * 3).sum() = 415.5
    assert.are.equal(894.0, sum(win(function() return (a * b + 1) * 3 end)))
    assert.are.equal(415.5, sum(win(function() return (a * a + 1) * 3 end)))
    assert.are.equal(894.0, sum(win(function() return (a * b + 1) * 3 end)))
    -- c = np.arange(14) * 0.5: ((c * 0.75 + 1) * c).sum() = 199.0625
    local c = tycho.arange(14) * 0.5
    assert.are.equal(199.0625, sum(win(function() return (c * 0.75 + 1) * c end)))
    -- (a * 3 + 1).sum() = 111.0; the kept t = a * 3 sums to 99.0
    local kept
    assert.are.equal(111.0, sum(win(function() local t = a * 3; kept = t; return t + 1 end)))
    assert.are.equal(99.0, sum(kept:totable()))
    assert.are.equal(111.0, sum(win(function() local t = a * 3; return t + 1 end)))
    assert.are.equal(111.0, sum(win(function() local t = a * 3; kept = t; return t + 1 end)))
    assert.are.equal(99.0, sum(kept:totable()))
    -- the repeated ones were replayed (unless TYCHO_FUSE_CACHE=0 runs the suite)
    if os.getenv("TYCHO_FUSE_CACHE") ~= "0" then
      assert.is_true(tycho.stats().fuse_cache_hits - h0 >= 3)
    end
  end)

  it("goes cold after windows that never repeat, and warms again on a repeated one", function()
    -- (2k - 1 summed over k = 1..n) = n^2: exact in f64
    for i = 1, 70 do -- 70 window structures (shapes), each once
      local n = 100 + i
      assert.are.equal(n * n, (tycho.arange(n) * 2 + 1):sum():item())
    end
    local h0 = tycho.stats().fuse_cache_hits
    for _ = 1, 40 do -- then one structure 40 times
      assert.are.equal(2500, (tycho.arange(50) * 2 + 1):sum():item())
    end
    -- cold: one window in 8 is looked up, the second of those hits, and
    -- from then on every window does
    if os.getenv("TYCHO_FUSE_CACHE") ~= "0" then
      assert.is_true(tycho.stats().fuse_cache_hits - h0 >= 20, tostring(tycho.stats().fuse_cache_hits - h0))
    end
  end)

  it("refuses a bad TYCHO_FUSE_CACHE at start", function()
    local out, code = spec_lua("io.write('ran')", { TYCHO_FUSE_CACHE = 2 })
    assert.are_not.equal(0, code)
    assert.is_truthy(out:find("TYCHO_FUSE_CACHE must be 0 or 1, got '2'", 1, true), out)
  end)
end)
