-- waves_spec.lua — issue 6 end to end, on programs that really run: the
-- favor axis's precedence (launch > trait > hint > scope > --favor >
-- TYCHO_FAVOR > default), the fixed graphs (a chain, a diamond, two chains
-- joined, a wide fan-out, the counterexample where unguarded merging raises
-- the peak) and a few hundred seeded random programs with read/write and
-- write/write hazards on views: results bit-identical under every favor and
-- the figures' invariants; a wave wider than the processors; every figure in
-- tycho.stats(), stats_text and explain (bytes freed, the fraction of
-- concurrent launches, explain's line and `flushes` entry per flush); the
-- trace's fields from tycho.trace_start.
local json = require "dkjson"

local FAVORS = { "debug", "min-peak-memory", "max-concurrency" }
local has = function(s, needle) return s:find(needle, 1, true) ~= nil end

local function close(x) getmetatable(x).__close(x) end

-- Runs build() (which returns a list of stores) under `favor` with fusion off,
-- in one window; returns the results as text (%a: bit for bit) and the flush's
-- figures.
local function run(favor, build)
  tycho.flush()
  local outs
  tycho.parallel({ favor = favor, fuse = false }, function() outs = build() end)
  tycho.flush()
  local f = tycho.stats().last_flush
  local text = {}
  for i, s in ipairs(outs) do
    local t = s:totable()
    if type(t) ~= "table" then t = { t } end
    local row = {}
    for _, v in ipairs(t) do row[#row + 1] = string.format("%a", v) end
    text[i] = table.concat(row, " ")
  end
  return table.concat(text, "\n"), f
end

-- The three favors on one program: identical results and every invariant.
local function check_favors(build, label)
  local r, f = {}, {}
  for i, favor in ipairs(FAVORS) do r[i], f[i] = run(favor, build) end
  local d, m, x = f[1], f[2], f[3]
  label = label or ""
  assert.are.equal(r[1], r[2], label .. ": min-peak-memory differs from debug")
  assert.are.equal(r[1], r[3], label .. ": max-concurrency differs from debug")
  assert.are.same({ "debug", "min-peak-memory", "max-concurrency" }, { d.favor, m.favor, x.favor })
  assert.are.equal(d.launches, m.launches, label)
  assert.are.equal(d.launches, x.launches, label)
  assert.are.equal(d.launches, d.waves, label)
  assert.are.equal(0, d.concurrent, label)
  assert.are.equal(1, d.widest, label)
  assert.are.equal(d.peak_transient, m.peak_transient, label)
  assert.are.equal(x.critical_path, x.waves, label)
  assert.is_true(x.waves <= m.waves and m.waves <= d.waves, label)
  return d, m, x, r[1]
end

local N = 64

describe("favor precedence", function()
  local function from()
    local e = tycho.explain(1)[1]
    return e.favor .. "|" .. e.from.favor
  end
  local t = tycho.tasks.waves_spec_copy or tycho.task {
    name = "waves_spec_copy", args = { "in", "out" }, traits = { favor = "debug" },
    body = function(ctx, a, b) for i = ctx.lo, ctx.hi do b[i] = a[i] end end,
  }

  it("goes launch option > task trait > store hint > inner scope > outer scope > default", function()
    local x = tycho.ones(N)
    tycho.flush()
    local _ = x + 1
    assert.are.equal("min-peak-memory|default", from())
    tycho.parallel({ favor = "max-concurrency" }, function()
      local _ = x + 1
      assert.is_truthy(from():find("^max%-concurrency|scope at"), from())
      tycho.parallel({ favor = "debug" }, function()
        local _ = x + 1
        assert.is_truthy(from():find("^debug|scope at"), from())   -- inner over outer
        x:hint { favor = "max-concurrency" }
        local _ = x + 1
        assert.is_truthy(from():find("^max%-concurrency|hint on store #"), from()) -- hint over scope
        t(x)
        assert.are.equal("debug|trait of task 'waves_spec_copy'", from())          -- trait over hint
        t:with { favor = "min-peak-memory" }(x)
        assert.are.equal("min-peak-memory|launch option", from())                  -- option over trait
        local _ = tycho.exp(x, { favor = "min-peak-memory" })
        assert.are.equal("min-peak-memory|launch option", from())                  -- option over hint
        x:hint()
      end)
    end)
    tycho.flush()
  end)

  it("goes --favor > TYCHO_FAVOR > default, and a scope over both", function()
    local probe = "local x = tycho.ones(8); local _ = x + 1; local e = tycho.explain(1)[1]; " ..
                  "print('F', e.favor, e.from.favor); " ..
                  "tycho.parallel({favor = 'min-peak-memory'}, function() local _ = x * 2 end); " ..
                  "e = tycho.explain(1)[1]; print('S', e.favor, e.from.favor)"
    local bin = assert(os.getenv("TYCHO_BIN"))
    local function shell(env, args)
      local p = io.popen(string.format("env %s '%s' %s -e %q 2>&1", env, bin, args, probe))
      local out = p:read("a")
      p:close()
      return out
    end
    local out = shell("TYCHO_FAVOR=debug", "")
    assert.is_truthy(has(out, "F\tdebug\tglobal TYCHO_FAVOR"), out)
    assert.is_truthy(out:find("S\tmin%-peak%-memory\tscope at"), out)
    out = shell("TYCHO_FAVOR=debug", "--favor max-concurrency")
    assert.is_truthy(has(out, "F\tmax-concurrency\tglobal --favor"), out)
    out = shell("TYCHO_FAVOR=", "")
    assert.is_truthy(has(out, "F\tmin-peak-memory\tdefault"), out)
    out = shell("", "--favor fastest")
    assert.is_truthy(has(out, "fastest"), out)
  end)

  it("flushes the window when the effective favor changes", function()
    local x = tycho.ones(N)
    tycho.flush()
    local before = tycho.stats().flushes
    local _ = x + 1
    local _ = x + 2 -- same favor: no flush
    assert.are.equal(before, tycho.stats().flushes)
    tycho.parallel({ favor = "max-concurrency" }, function() local _ = x * 3 end)
    assert.is_true(tycho.stats().flushes > before)
    tycho.flush()
  end)
end)

describe("fixed graphs run under every favor", function()
  it("a chain: one launch per wave under all three", function()
    local d, m, x = check_favors(function()
      local a = tycho.arange(N) * 0.5
      for _ = 1, 6 do a = tycho.sin(a) + 1 end
      return { a }
    end, "chain")
    assert.are.equal(d.waves, m.waves)
    assert.are.equal(d.waves, x.waves)
    assert.are.equal(0, x.concurrent)
  end)

  it("a diamond: its two middle launches share a wave", function()
    local _, m, x = check_favors(function()
      local a = tycho.arange(N) * 0.25
      local l, r = tycho.sin(a), tycho.cos(a)
      return { l + r }
    end, "diamond")
    assert.are.equal(2, x.widest)
    assert.is_true(x.concurrent >= 2)
    assert.is_true(m.concurrent >= 2) -- sin and cos merge without raising the peak
  end)

  it("two chains joined: max-concurrency runs them side by side, at a memory cost", function()
    local d, _, x = check_favors(function()
      local a = tycho.arange(4096) * 0.001
      local p, q = a + 1, a + 2
      for _ = 1, 3 do p = tycho.sin(p) * 2 end
      for _ = 1, 3 do q = tycho.cos(q) * 3 end
      return { p + q }
    end, "two chains")
    assert.is_true(x.widest >= 2)
    assert.is_true(x.waves < d.waves)
    assert.is_true(x.peak_transient > d.peak_transient)
  end)

  it("a wide fan-out: eight launches in one wave, more than the processors", function()
    local cpus = tycho.config().cpus
    local _, _, x, text = check_favors(function()
      local a = tycho.arange(N)
      local level = {}
      for k = 1, 8 do level[k] = a * k end -- eight independent launches
      while #level > 1 do -- joined pairwise: each level waits for the whole previous one
        local up = {}
        for k = 1, #level, 2 do up[#up + 1] = level[k] + level[k + 1] end
        level = up
      end
      return { level[1] }
    end, "fan-out")
    assert.is_true(x.widest >= 8)
    assert.is_true(x.widest > cpus or cpus >= 8)
    -- and the wave's result is right: sum over k of i*k = 36 i
    local want = {}
    for i = 0, N - 1 do want[#want + 1] = string.format("%a", 36.0 * i) end
    assert.are.equal(table.concat(want, " "), text)
  end)

  it("the counterexample: min-peak-memory refuses the merge that raises the peak", function()
    -- A = big, used once; B = big, made after A dies. Merging the use of A
    -- with the making of B would keep both alive.
    local d, m, x = check_favors(function()
      local a = tycho.arange(100000) * 1.0
      local s1 = (a + 1):sum()
      local b = tycho.arange(100000) * 2.0
      local s2 = (b + 1):sum()
      return { s1, s2 }
    end, "counterexample")
    assert.are.equal(d.peak_transient, m.peak_transient)
    assert.is_true(x.peak_transient > m.peak_transient)
    assert.is_true(m.waves > x.waves)
  end)
end)

describe("hazards on overlapping storage", function()
  it("never share a wave: writes into views read and written by others", function()
    local _, _, _, text = check_favors(function()
      local x = tycho.arange(10) * 1.0
      local y = x * 2                   -- reads x
      x[{ { 1, 5 } }] = 100             -- write after read (y must see the old x)
      local z = x + 1                   -- read after write
      x[{ { 4, 6 } }] = -1              -- write after write over part of the first
      local w = x[{ { 2, -2 } }] * 3    -- through a view
      y[{ { 6, 10 } }] = z[{ { 1, 5 } }] -- y's second half from z's first
      return { x, y, z, w }
    end, "hazards")
    local function row(t)
      local r = {}
      for _, v in ipairs(t) do r[#r + 1] = string.format("%a", v) end
      return table.concat(r, " ")
    end
    local x = { 100, 100, 100, -1, -1, -1, 6, 7, 8, 9 }
    local z = { 101, 101, 101, 101, 101, 6, 7, 8, 9, 10 }
    local y = { 0, 2, 4, 6, 8, 101, 101, 101, 101, 101 }
    local w = {}
    for i = 2, 9 do w[#w + 1] = x[i] * 3 end
    assert.are.equal(table.concat({ row(x), row(y), row(z), row(w) }, "\n"), text)
  end)
end)

describe("seeded random programs", function()
  -- A program of element-wise launches, reductions, view reads and writes
  -- (read/write and write/write hazards), copies and fills over a pool of
  -- stores; dropped stores are closed so they are transient.
  local function program(seed)
    return function()
      local rs = seed
      local function rnd(n)
        rs = (rs * 1103515245 + 12345) % 2147483648
        return rs % n + 1
      end
      local n = 16 + rnd(48)
      local pool = { tycho.arange(n) * (1 / n), tycho.linspace(-1, 1, n) }
      local outs = {}
      local steps = 6 + rnd(20)
      for _ = 1, steps do
        local op = rnd(10)
        local a = pool[rnd(#pool)]
        local b = pool[rnd(#pool)]
        if op == 1 then pool[#pool + 1] = tycho.sin(a)
        elseif op == 2 then pool[#pool + 1] = tycho.tanh(a + b)
        elseif op == 3 then pool[#pool + 1] = a * b - 0.5
        elseif op == 4 then pool[#pool + 1] = tycho.maximum(a, b) * 0.75
        elseif op == 5 then outs[#outs + 1] = a:sum()
        elseif op == 6 then -- write a range of one store from a range of another
          local lo = rnd(n); local hi = lo + rnd(n - lo + 1) - 1
          a[{ { lo, hi } }] = b[{ { n - hi + lo, n } }]
        elseif op == 7 then
          local lo = rnd(n)
          a[{ { lo, -1 } }] = rnd(5) - 3
        elseif op == 8 then pool[#pool + 1] = a:copy()
        elseif op == 9 and #pool > 2 then -- drop one: a transient once its readers ran
          local k = rnd(#pool)
          outs[#outs + 1] = pool[k]:max()
          close(pool[k])
          table.remove(pool, k)
        else pool[#pool + 1] = tycho.abs(a) + tycho.cos(b) end
      end
      for _, s in ipairs(pool) do outs[#outs + 1] = s end
      return outs
    end
  end

  it("give bit-identical results and keep every invariant under all three favors", function()
    local merged, concurrent = 0, 0
    for seed = 1, 200 do
      local d, m, x = check_favors(program(seed), "seed " .. seed)
      if m.waves < d.waves then merged = merged + 1 end
      if x.concurrent > 0 then concurrent = concurrent + 1 end
    end
    -- the programs are not all chains: both favors found work to overlap
    assert.is_true(merged > 20, "min-peak-memory merged in " .. merged .. " programs")
    assert.is_true(concurrent > 50, "max-concurrency overlapped in " .. concurrent .. " programs")
  end)
end)

describe("the figures", function()
  it("are in tycho.stats(), per flush and in total", function()
    tycho.flush()
    local s0 = tycho.stats()
    local _, f = run("max-concurrency", function()
      local a = tycho.arange(1000) * 1.0
      return { tycho.sin(a) + tycho.cos(a) }
    end)
    local s = tycho.stats()
    for _, k in ipairs { "launches", "launches_run", "waves", "critical_path", "widest_wave",
                         "concurrent_launches", "peak_transient", "bytes_peak", "bytes_allocated",
                         "bytes_live", "flushes", "pieces" } do
      assert.are.equal("integer", math.type(s[k]), k)
    end
    for _, k in ipairs { "launches", "waves", "critical_path", "widest", "concurrent", "peak_transient" } do
      assert.are.equal("integer", math.type(f[k]), k)
    end
    assert.are.equal("max-concurrency", f.favor)
    assert.is_true(s.waves - s0.waves >= f.waves)
    assert.is_true(s.concurrent_launches - s0.concurrent_launches >= f.concurrent)
    assert.is_true(f.concurrent >= 2)
    assert.is_true(s.widest_wave >= f.widest)
    assert.is_true(s.bytes_peak >= s.bytes_live)
    assert.is_true(s.bytes_allocated - s0.bytes_allocated >= 8000)
  end)

  it("render as text, json and csv with the fraction of concurrent launches", function()
    local t = tycho.stats_text("text")
    for _, k in ipairs { "waves", "critical path", "widest wave", "concurrent", "transient peak",
                         "(allocator)", "live", "allocated" } do
      assert.is_truthy(has(t, k), k)
    end
    local s = tycho.stats()
    local j = json.decode(tycho.stats_text("json"))
    assert.are.equal(s.waves, j.waves)
    assert.are.equal(s.concurrent_launches, j.concurrent_launches)
    assert.is_true(math.abs(j.concurrent_fraction - s.concurrent_launches / s.launches_run) < 1e-4)
    assert.are.equal("table", type(j.last_flush))
    local csv = tycho.stats_text("csv")
    assert.is_truthy(csv:find("\nwaves," .. s.waves .. "\n", 1, true), csv)
    assert.is_truthy(csv:find("\nconcurrent_fraction,", 1, true), csv)
    assert.has_error(function() tycho.stats_text("xml") end)
  end)

  it("say where the time went with tycho.timing(true)", function()
    tycho.flush()
    local off = tycho.stats()
    if off.timed_ns == 0 then -- not on already (TYCHO_TIMING=1 in the environment)
      assert.are.equal(0, off.flush_ns)
      assert.is_falsy(has(tycho.stats_text("text"), "  time "))
    end
    local was = tycho.timing(true)
    tycho.timing(false) -- from zero when it goes on again
    assert.is_false(tycho.timing(true))
    local x = tycho.arange(200000) * 1.0
    local y
    for _ = 1, 20 do
      x = tycho.sin(x) * 0.5 + 0.25
      y = x:sum():item()
    end
    local t0 = tycho.clock()
    while tycho.clock() - t0 < 0.02 do end -- the script's own 20 ms
    local s = tycho.stats()
    assert.is_true(y > 0)
    for _, k in ipairs { "timed_ns", "flush_ns", "collect_ns", "fuse_ns", "schedule_ns", "tasks_ns", "launch_ns" } do
      assert.are.equal("integer", math.type(s[k]), k)
    end
    assert.is_true(s.tasks_ns > 0 and s.fuse_ns > 0 and s.collect_ns > 0 and s.launch_ns > 0)
    assert.are.equal(s.flush_ns, s.collect_ns + s.fuse_ns + s.schedule_ns + s.tasks_ns + s.launch_ns)
    assert.is_true(s.timed_ns - s.flush_ns >= 20e6)
    local t = tycho.stats_text("text")
    assert.is_truthy(t:find("time +[%d.]+ s timed: %d+%% in flushes %(tasks %d+%%"), t)
    assert.is_truthy(has(t, "outside them (the program)"), t)
    assert.is_true(tycho.timing(was))
    assert.has_error(function() tycho.timing() end)
    assert.has_error(function() tycho.timing(1) end)
  end)

  it("are in tycho.explain(): each launch's favor and wave", function()
    run("max-concurrency", function()
      local a = tycho.arange(1000) * 1.0
      return { tycho.sin(a) + tycho.cos(a) }
    end)
    local s = tostring(tycho.explain(3))
    assert.is_truthy(s:find("favor=max%-concurrency %(scope at [^)]*%), wave %d of %d"), s)
  end)

  -- ones, then sin and cos of it joined by an add; sin and cos closed before
  -- the flush, so they are freed once the add has read them. 1000 f64: 8000 B.
  local function joined(favor)
    local d
    tycho.parallel({ favor = favor, fuse = false }, function()
      local a = tycho.ones(1000)
      local b, c = tycho.sin(a), tycho.cos(a)
      d = b + c
      close(b)
      close(c)
      close(a)
    end)
    return d
  end

  it("count bytes freed: allocated - freed == live, in total and per flush", function()
    collectgarbage("stop") -- no store released by the collector between two readings
    tycho.flush()
    local s0 = tycho.stats()
    assert.are.equal(s0.bytes_allocated - s0.bytes_freed, s0.bytes_live)
    local d = joined("min-peak-memory")
    tycho.flush()
    local s1 = tycho.stats()
    local f = s1.last_flush
    assert.are.equal(s1.bytes_allocated - s1.bytes_freed, s1.bytes_live)
    assert.are.equal(s1.flushes, f.flush)
    -- a, sin, cos; the sum takes sin's block, which only it reads (in place)
    assert.are.equal(3 * 8000, f.bytes_allocated)
    assert.are.equal(2 * 8000, f.bytes_freed)      -- a, cos
    assert.are.equal(8000, s1.bytes_in_place - s0.bytes_in_place)
    assert.are.equal(s0.bytes_live + 8000, f.bytes_live)
    assert.are.equal(s1.bytes_live, f.bytes_live)
    assert.are.equal(s1.bytes_allocated - s0.bytes_allocated, f.bytes_allocated)
    assert.are.equal(s1.bytes_freed - s0.bytes_freed, f.bytes_freed)
    -- the flush's own allocator peak: ones, sin and cos at once (ones is
    -- freed after its last wave, before the sum is allocated)
    assert.are.equal(s0.bytes_live + 3 * 8000, f.bytes_peak)
    assert.is_true(s1.bytes_peak >= f.bytes_peak)
    close(d)
    local s2 = tycho.stats()
    collectgarbage("restart")
    assert.are.equal(s1.bytes_freed + 8000, s2.bytes_freed)
    assert.are.equal(s2.bytes_allocated - s2.bytes_freed, s2.bytes_live)
    -- a streamed scope frees its slices as it goes: the balance still holds
    local a = tycho.arange(300) * 0.37
    local b = tycho.arange(200) * 0.21 + 0.1
    tycho.flush()
    local m
    tycho.parallel({ memory = "10KB", fuse = false }, function()
      m = tycho.min(tycho.abs(a:expand(2) - b:expand(1)), 1)
    end)
    tycho.flush()
    local s3 = tycho.stats()
    assert.is_true(s3.last_flush.stream_pieces > 1, "streamed")
    -- the difference and its abs, (300, 200) f64 each, lived only as slices
    assert.is_true(s3.bytes_freed - s2.bytes_freed >= 2 * 300 * 200 * 8, "slices were freed")
    assert.is_true(s3.last_flush.bytes_peak < s2.bytes_live + 300 * 200 * 8, "never a whole one")
    assert.are.equal(s3.bytes_allocated - s3.bytes_freed, s3.bytes_live)
    assert.are.equal(s3.bytes_allocated - s3.bytes_freed, tycho.stats().bytes_live)
    close(m)
    local t = tycho.stats_text("text")
    assert.is_truthy(t:find("in all, [%d.]+ [KMG]?i?B freed, "), t)
    local j = json.decode(tycho.stats_text("json"))
    local s4 = tycho.stats()
    assert.are.equal(s4.bytes_freed, j.bytes_freed)
    assert.is_truthy(tycho.stats_text("csv"):find("\nbytes_freed," .. s4.bytes_freed .. "\n", 1, true))
  end)

  it("give concurrent_fraction in tycho.stats() and its last_flush, as stats_text does", function()
    run("max-concurrency", function() return { joined("max-concurrency") } end)
    local s = tycho.stats()
    local f = s.last_flush
    assert.are.equal("float", math.type(s.concurrent_fraction))
    assert.are.equal(s.concurrent_launches / s.launches_run, s.concurrent_fraction)
    -- ones; sin and cos side by side; the add
    assert.are.same({ 4, 3, 2, 2 }, { f.launches, f.waves, f.widest, f.concurrent })
    assert.are.equal(0.5, f.concurrent_fraction)
    local j = json.decode(tycho.stats_text("json"))
    assert.is_true(math.abs(j.concurrent_fraction - s.concurrent_fraction) < 1e-4)
    assert.are.equal(0.5, j.last_flush.concurrent_fraction)
    assert.are.equal(f.bytes_freed, j.last_flush.bytes_freed)
    run("debug", function() return { joined("debug") } end)
    assert.are.equal(0, tycho.stats().last_flush.concurrent_fraction)
  end)

  it("are in tycho.explain(): a line and an entry of `flushes` per flush", function()
    collectgarbage("stop") -- the flush hook frees nothing of earlier tests
    run("debug", function() return { joined("debug") } end)
    local f1 = tycho.stats().last_flush
    run("max-concurrency", function() return { joined("max-concurrency") } end)
    local f2 = tycho.stats().last_flush
    collectgarbage("restart")
    assert.are.equal(f1.flush + 1, f2.flush)
    local e = tycho.explain(8)
    assert.are.equal(8, #e)
    for i = 1, 4 do assert.are.equal(f1.flush, e[i].flush, i) end
    for i = 5, 8 do assert.are.equal(f2.flush, e[i].flush, i) end
    assert.are.equal(2, #e.flushes)
    assert.are.same(f1, e.flushes[1])
    assert.are.same(f2, e.flushes[2])
    assert.are.same({ "debug", 4, 4, 1, 0, 0 }, { f1.favor, f1.launches, f1.waves, f1.widest, f1.concurrent, f1.concurrent_fraction })
    assert.are.same({ 3 * 8000, 2 * 8000 }, { f2.bytes_allocated, f2.bytes_freed }) -- the sum in place
    local text = tostring(e)
    local head1 = ("\nflush %d (favor debug): 4 launches in 4 waves, critical path 3, widest 1, " ..
                   "0 concurrent (0%%), transient peak "):format(f1.flush)
    local head2 = ("\nflush %d (favor max-concurrency): 4 launches in 3 waves, critical path 3, " ..
                   "widest 2, 2 concurrent (50%%), transient peak "):format(f2.flush)
    local p1, p2 = text:find(head1, 1, true), text:find(head2, 1, true)
    assert.is_truthy(p1 and p2, text)
    local line1 = text:sub(p1 + 1):match("^[^\n]*")
    assert.is_truthy(has(line1, " (simulated); allocator peak "), line1)
    -- one launch a wave: cos, the last reader of ones, takes its block, and
    -- the add sin's (in place): ones and sin allocated, cos freed
    assert.is_truthy(has(line1, ", allocated 15.6 KiB, freed 7.8 KiB, live "), line1)
    -- ones and sin at once over what lived before (its end less the sum)
    assert.are.equal(f1.bytes_live - 8000 + 2 * 8000, f1.bytes_peak)
    -- each after its own launches: the debug flush's add before its line, the
    -- other flush's first launch after it
    local _, add1 = text:find("\n#%d+%s+add ")
    assert.is_true(add1 < p1 and p1 < p2, text)
    assert.is_truthy(text:sub(p1 + 1):find("\n#%d+%s+fill ") < p2 - p1, text)
  end)
end)

describe("tycho.trace_start / trace_stop", function()
  it("write a Chrome trace: a track per processor, every point task with its fields, spans, a counter", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert.is_true(os.execute("mkdir -p " .. dir))
    local path, svg = dir .. "/t.json", dir .. "/t.svg"
    tycho.flush()
    tycho.trace_start(path, svg)
    local p0 = tycho.stats().pieces
    run("max-concurrency", function()
      local a = tycho.random(200000)
      return { (tycho.sin(a) + tycho.cos(a)):sum() }
    end)
    local fused_before = tycho.stats().fused_runs
    local _ = (tycho.exp(tycho.ones(1000)) * 2):sum():item() -- a fused run
    assert.is_true(tycho.stats().fused_runs > fused_before)
    local pieces = tycho.stats().pieces - p0
    tycho.trace_stop()
    local doc = json.decode(assert(io.open(path)):read("a"))
    assert.is_table(doc.traceEvents)
    local tasks, tracks, names, counters, fused = 0, {}, {}, 0, 0
    local procs = {}
    for _, e in ipairs(doc.traceEvents) do
      if e.cat == "task" then
        tasks = tasks + 1
        assert.are.equal("X", e.ph)
        assert.is_string(e.name)
        for _, k in ipairs { "launch", "piece", "pieces", "wave", "fused" } do
          assert.is_number(e.args[k], k)
        end
        assert.is_true(e.args.piece < e.args.pieces)
        if e.args.fused > 0 then fused = fused + 1 end
        tracks[e.tid] = true
      elseif e.ph == "M" and e.name == "thread_name" then
        procs[e.tid] = e.args.name
      elseif e.ph == "C" then
        counters = counters + 1
        assert.is_number(e.args.bytes)
      elseif e.ph == "X" then
        names[e.name:match("^%a+")] = true
      end
    end
    assert.are.equal(pieces, tasks)
    assert.is_true(fused > 0)
    assert.is_true(counters > 0)
    assert.is_true(names.flush and names.wave, "flush and wave spans")
    for tid in pairs(tracks) do
      assert.is_truthy(procs[tid] and procs[tid]:find("^processor %d+$"), tostring(procs[tid]))
    end
    local pic = assert(io.open(svg)):read("a")
    assert.is_truthy(has(pic, "<svg") and has(pic, "processor 0"), pic:sub(1, 200))
    os.execute("rm -rf " .. dir)
  end)

  it("refuse a second start and report a bad path", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert.is_true(os.execute("mkdir -p " .. dir))
    tycho.trace_start(dir .. "/a.json")
    assert.has_error(function() tycho.trace_start(dir .. "/b.json") end)
    tycho.trace_stop()
    local ok = pcall(function()
      tycho.trace_start("/nonexistent-dir/x/t.json")
      tycho.trace_stop()
    end)
    assert.is_false(ok)
    local _ = tycho.ones(4):sum():item() -- still usable
    os.execute("rm -rf " .. dir)
  end)
end)
