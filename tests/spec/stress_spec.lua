-- tests/spec/stress_spec.lua — the executor under load: many small launches
-- from several coroutines interleaved (each with its own scope), task errors
-- in the middle of waves, and Ctrl-C (SIGINT) during a flush, in script mode
-- and at the REPL. Results are checked exactly (integer arithmetic), and the
-- runtime must stay usable after every error.
--
-- It is part of the ThreadSanitizer set (ctest -L tsan; tests/CMakeLists.txt):
-- most cases run in child shells with more processors than cores (--cpus 4
-- or 8 on 2 cores) and small windows, so that waves of several launches run
-- their pieces at the same time on every worker. Cases tagged #notsan cannot
-- run under TSan (see tests/CMakeLists.txt). The number of launches the file
-- ran is printed at the end ("# stress: N launches ...").

local BIN = assert(os.getenv("TYCHO_BIN"), "TYCHO_BIN must name the tycho executable")
local PTYDRIVE = BIN:match("^(.*)/[^/]*$") .. "/ptydrive"

local total_launches = 0 -- launches run to the end by this file, children included
local interrupted_launches = 0 -- launches made in flushes that Ctrl-C interrupted
local total_runs = 0     -- child shells

local function q(s) return "'" .. tostring(s):gsub("'", [['\'']]) .. "'" end

-- Run `code` in a child shell with `env`; it must print "PASS launches=N"
-- last. Returns N (added to the total).
local function child(code, env)
  local out, rc = spec_lua(code, env)
  total_runs = total_runs + 1
  local n = out:match("PASS launches=(%d+)%s*$")
  assert(rc == 0 and n, "child failed (exit " .. tostring(rc) .. "):\n" .. out)
  total_launches = total_launches + tonumber(n)
  return tonumber(n), out
end

-- ---- many small launches from interleaved coroutines -------------------------------

-- Each coroutine owns an i64 store and a scope (mode and favor differ between
-- coroutines and stay open across yields); every round it adds with a
-- built-in, adds with a Lua task (inout), and now and then reads a reduction
-- of a Lua task and of a built-in, which flushes a window holding the other
-- coroutines' launches too. A scheduler resumes them in a shuffled order.
local COROUTINES = [[
local NCO, ROUNDS, LEN, SEED = %d, %d, %d, %d
local launches0 = tycho.stats().launches
local bump = tycho.task { name = "bump", args = { "inout", "scalar:i64" },
  body = function(ctx, x, k) for i = ctx.lo, ctx.hi do x[i] = x[i] + k end end }
local total = tycho.task { name = "total", args = { "in", "reduce:+:i64" },
  body = function(ctx, x)
    local s = 0
    for i = ctx.lo, ctx.hi do s = s + x[i] end
    return s
  end }
local modes = { "auto", "all", "single", "task", "all" }
local favors = { "min-peak-memory", "max-concurrency", "min-peak-memory", "debug" }
local function worker(c)
  local _ <close> = tycho.parallel { mode = modes[(c - 1) %% #modes + 1],
                                     favor = favors[(c - 1) %% #favors + 1] }
  local n = LEN + c
  local x = tycho.arange(n)          -- 0 .. n-1
  local y = tycho.zeros({ n }, "i64")
  local add = 0
  for r = 1, ROUNDS do
    x = x + c                          -- a built-in
    bump(x, r)                         -- a Lua task, in place
    y[{ { 1, n } }] = x                -- a copy into a view
    add = add + c + r
    if r %% 5 == 0 then
      local want = n * (n - 1) // 2 + n * add
      local s1 = total(x):item()       -- flushes the others' launches too
      local s2 = tycho.sum(y):item()
      if s1 ~= want or s2 ~= want then
        error(string.format("coroutine %%d round %%d: sums %%d, %%d, want %%d", c, r, s1, s2, want))
      end
    end
    local scopes = tycho._scopes()
    if #scopes ~= 1 then error("coroutine " .. c .. " sees " .. #scopes .. " scopes") end
    coroutine.yield()
  end
  local t = x:totable()
  for i = 1, n do
    if t[i] ~= i - 1 + add then error(string.format("coroutine %%d: x[%%d] = %%d", c, i, t[i])) end
  end
  return true
end
local cos, alive = {}, NCO
for c = 1, NCO do cos[c] = coroutine.create(function() return worker(c) end) end
math.randomseed(SEED)
while alive > 0 do
  local order = {}
  for c = 1, NCO do order[c] = c end
  for i = NCO, 2, -1 do
    local j = math.random(i)
    order[i], order[j] = order[j], order[i]
  end
  for _, c in ipairs(order) do
    local co = cos[c]
    if co and coroutine.status(co) == "suspended" then
      local ok, err = coroutine.resume(co)
      if not ok then error(debug.traceback(co, err)) end
      if coroutine.status(co) == "dead" then alive = alive - 1 end
    end
  end
end
local _, depth = tycho._scopes()
assert(depth == 0, "the runtime keeps " .. depth .. " scopes after every coroutine ended")
print("PASS launches=" .. (tycho.stats().launches - launches0))
]]

describe("stress: interleaved coroutines", function()
  -- {processors, window, coroutines, rounds, elements [, global mode, overdecompose]}
  local configs = {
    { 2, 64, 8, 120, 300 },
    { 4, 8, 8, 120, 300 },
    { 8, 1, 6, 50, 100 },
    { 4, 512, 12, 80, 5000 },
    { 3, 32, 10, 80, 2000, "all", 2 },
  }
  for k, c in ipairs(configs) do
    it(string.format("give exact results with --cpus %d --window %d%s (%d coroutines)", c[1], c[2],
                     c[6] and (" --parallel " .. c[6] .. " --overdecompose " .. c[7]) or "", c[3]),
       function()
      local n = child(COROUTINES:format(c[3], c[4], c[5], k),
                      { TYCHO_CPUS = c[1], TYCHO_WINDOW = c[2], TYCHO_PARALLEL = c[6] or "auto",
                        TYCHO_OVERDECOMPOSE = c[7] or 1 })
      assert.is_true(n >= c[3] * c[4] * 3)
    end)
  end
end)

-- ---- task errors in the middle of waves --------------------------------------------

-- A Lua task fails in one piece while other launches (a Lua task, built-ins)
-- run in the same wave (favor = max-concurrency puts independent launches
-- together). The error reaches Lua at the flush, naming the task and the
-- piece; the other launches' results are right; a store the failed launch
-- produced reads as an error; later launches are right.
local ERRORS = [[
local ROUNDS, N = %d, %d
local launches0 = tycho.stats().launches
local flaky = tycho.task { name = "flaky", args = { "in", "out", "scalar" },
  traits = { parallel = "all" },
  body = function(ctx, x, y, bad)
    if bad == ctx.piece or bad == -1 then error("piece " .. ctx.piece .. " fails") end
    if bad == -2 then error({ code = ctx.piece }) end
    for i = ctx.lo, ctx.hi do y[i] = x[i] * 2 end
  end }
local good = tycho.task { name = "good", args = { "in", "out" }, traits = { parallel = "all" },
  body = function(ctx, x, y) for i = ctx.lo, ctx.hi do y[i] = x[i] + 1 end end }
local pieces = tycho.config().cpus
local shared = 0 -- rounds where flaky shared its wave with another launch
for round = 1, ROUNDS do
  tycho.flush()
  local seq0 = tycho.stats().launches
  local bad = ({ (round %% pieces) + 1, -1, -2 })[round %% 3 + 1]
  local x = tycho.arange(N)
  local a, y, b, c
  tycho.parallel({ favor = "max-concurrency", fuse = false }, function()
    a = good(x)                        -- the same wave as flaky
    y = flaky(x, nil, bad)
    b = x * 3
    c = a + b                          -- a later wave
  end)
  local ok, err = pcall(tycho.flush)
  assert(not ok, "round " .. round .. ": the flush did not fail")
  local want = bad > 0 and ("task 'flaky' failed in piece " .. bad .. " of " .. pieces)
            or bad == -1 and ("task 'flaky' failed in piece 1 of " .. pieces)
            or "(error object is a table value)"
  assert(tostring(err):find(want, 1, true), "round " .. round .. ": " .. tostring(err))
  if bad > 0 then assert(tostring(err):find("piece " .. bad .. " fails", 1, true), err) end
  -- the failed launch ran beside others: its wave has more than one launch
  local wave_of, count = nil, {}
  for _, e in ipairs(tycho.explain(10)) do
    if e.seq > seq0 then
      count[e.wave] = (count[e.wave] or 0) + 1
      if e.task == "flaky" then wave_of = e.wave end
    end
  end
  if wave_of and count[wave_of] > 1 then shared = shared + 1 end
  -- the launches of the failed one's wave and the later ones ran
  assert(c:sum():item() == 4 * (N * (N - 1) // 2) + N, "round " .. round .. ": c is wrong")
  assert(a[N] == N and b[N] == 3 * (N - 1))
  -- what the failed launch produced is unavailable, and says so
  local rok, rerr = pcall(function() return y:sum():item() end)
  assert(not rok and tostring(rerr):find("unavailable", 1, true), tostring(rerr))
  -- later launches are right, the same task included
  local y2 = flaky(x, nil, 0)
  assert(y2:sum():item() == N * (N - 1), "round " .. round .. ": a later launch is wrong")
end
assert(shared > 0, "the failing launch never shared a wave")
print("PASS launches=" .. (tycho.stats().launches - launches0))
]]

-- Errors while several coroutines have launches in the window: whoever
-- flushes gets the error; the other coroutines' values are right when read.
local ERRORS_COROUTINES = [[
local NCO, ROUNDS = %d, %d
local launches0 = tycho.stats().launches
local flaky = tycho.task { name = "flaky", args = { "inout", "scalar" },
  traits = { parallel = "all" },
  body = function(ctx, x, fail)
    if fail and ctx.piece == ctx.pieces then error("boom") end
    for i = ctx.lo, ctx.hi do x[i] = x[i] + 1 end
  end }
local errors = 0
local cos = {}
for c = 1, NCO do
  cos[c] = coroutine.wrap(function()
    local x = tycho.zeros({ 257 }, "i64")
    local good = 0
    for r = 1, ROUNDS do
      local fail = (r + c) %% 7 == 0
      local ok, err = pcall(flaky, x, fail)   -- a launch: errors come at the flush
      assert(ok, err)
      coroutine.yield()
      local rok, v = pcall(function() return x:sum():item() end)
      if not rok then
        errors = errors + 1
        assert(tostring(v):find("task 'flaky' failed", 1, true) or
               tostring(v):find("unavailable", 1, true), tostring(v))
        x = tycho.zeros({ 257 }, "i64") + good   -- start over from a known value
      else
        assert(v == 257 * (good + 1), string.format("coroutine %%d: %%d, want %%d", c, v, 257 * (good + 1)))
        good = good + 1
      end
      coroutine.yield()
    end
  end)
end
for _ = 1, 2 * ROUNDS do
  for c = 1, NCO do cos[c]() end
end
assert(errors > 0, "no error reached any coroutine")
assert(tycho.arange(100):sum():item() == 4950)
print("PASS launches=" .. (tycho.stats().launches - launches0))
]]

describe("stress: task errors in the middle of waves", function()
  it("reach Lua, keep the wave's other launches and leave the runtime usable", function()
    child(ERRORS:format(36, 4000), { TYCHO_CPUS = 4 })
    child(ERRORS:format(18, 999), { TYCHO_CPUS = 3, TYCHO_WINDOW = 16 })
  end)

  it("reach whichever coroutine flushes; the others' values stay right", function()
    child(ERRORS_COROUTINES:format(6, 40), { TYCHO_CPUS = 4, TYCHO_WINDOW = 8 })
  end)

  it("in this shell: an error in one piece, then thousands of launches", function()
    local s0 = tycho.stats().launches
    local flaky = tycho.task { name = "stress_flaky", args = { "in", "out", "scalar" },
      traits = { parallel = "all" },
      body = function(ctx, x, y, bad)
        if ctx.piece == bad then error("piece fails") end
        for i = ctx.lo, ctx.hi do y[i] = x[i] end
      end }
    for round = 1, 20 do
      local x = tycho.arange(1000)
      local a = x + round
      local y = flaky(x, nil, round % 2 + 1)
      local ok, err = pcall(tycho.flush)
      assert.is_false(ok)
      assert.matches("task 'stress_flaky' failed in piece %d of %d", tostring(err))
      assert.are.equal(1000 * 999 // 2 + 1000 * round, a:sum():item())
      assert.has_error(function() y:sum():item() end)
      local acc = tycho.zeros({ 1000 }, "i64")
      for _ = 1, 50 do acc = acc + 1 end
      assert.are.equal(50 * 1000, acc:sum():item())
    end
    total_launches = total_launches + tycho.stats().launches - s0
  end)
end)

-- ---- Ctrl-C during a flush ------------------------------------------------------------

-- A long flush of built-in launches (a chain of 2000 on 1M elements: seconds
-- on 2 cores); the script touches MARK just before it flushes.
local LONG_FLUSH = [[
local x = tycho.ones(1000000)
local acc = x
for i = 1, %d do acc = tycho.sqrt(acc * 1.0001 + x) end
io.open(%q, "w"):close()
tycho.flush()
print("FLUSH FINISHED")
]]

-- The same with Lua task bodies (each piece a loop over its tiles).
local LONG_TASK_FLUSH = [[
local step = tycho.task { name = "step", args = { "in", "out" }, traits = { parallel = "all" },
  body = function(ctx, x, y) for i = ctx.lo, ctx.hi do y[i] = x[i] * 0.5 + 1 end end }
local acc = tycho.ones(200000)
for i = 1, %d do acc = step(acc) end
io.open(%q, "w"):close()
tycho.flush()
print("FLUSH FINISHED")
]]

-- Start `tycho script`, wait for MARK, send SIGINT after `delay` seconds, and
-- wait for the exit (at most 60 s, then SIGKILL). Returns stdout+stderr, the
-- exit status, and whether it had to be killed.
local function interrupt_script(code, env)
  local script, mark, outf = os.tmpname(), os.tmpname(), os.tmpname()
  os.remove(mark)
  local f = assert(io.open(script, "w"))
  f:write(code:format(mark))
  f:close()
  local envs = {}
  for k, v in pairs(env or {}) do envs[#envs + 1] = k .. "=" .. q(v) end
  local sh = table.concat({
    string.format("%s %s %s >%s 2>&1 </dev/null & pid=$!", table.concat(envs, " "), q(BIN),
                  q(script), q(outf)),
    -- the script reaches its flush (at most 120 s: a slow sanitizer build)
    string.format("i=0; while [ ! -e %s ] && [ $i -lt 2400 ] && kill -0 $pid 2>/dev/null; do " ..
                  "sleep 0.05; i=$((i+1)); done", q(mark)),
    "sleep 0.3; kill -INT $pid 2>/dev/null",
    "j=0; while kill -0 $pid 2>/dev/null && [ $j -lt 1200 ]; do sleep 0.05; j=$((j+1)); done",
    "if kill -0 $pid 2>/dev/null; then kill -KILL $pid; echo KILLED; fi",
    "wait $pid; echo rc=$?",
  }, "\n")
  local p = assert(io.popen(sh))
  local status = p:read("a")
  p:close()
  local of = io.open(outf)
  local out = of and of:read("a") or ""
  if of then of:close() end
  os.remove(script)
  os.remove(mark)
  os.remove(outf)
  return out, tonumber(status:match("rc=(%d+)")), status:find("KILLED", 1, true) ~= nil
end

-- Drive the REPL through ptydrive (steps: its script). Returns the
-- transcript and the exit status.
local function repl(steps)
  local script, home, errf = os.tmpname(), os.tmpname(), os.tmpname()
  os.remove(home)
  local f = assert(io.open(script, "w"))
  f:write(table.concat(steps, "\n"), "\n")
  f:close()
  local p = assert(io.popen(string.format(
    "env TERM=dumb INPUTRC=/dev/null HOME=%s TYCHO_CPUS=4 %s -t 120 -- %s --window 4096 " ..
    "--fuse off <%s 2>%s", q(home), q(PTYDRIVE), q(BIN), q(script), q(errf))))
  local out = p:read("a")
  local _, _, code = p:close()
  local ef = io.open(errf)
  local err = ef and ef:read("a") or ""
  if ef then ef:close() end
  os.remove(script)
  os.remove(errf)
  assert(err == "", "ptydrive: " .. err .. "\ntranscript:\n" .. out)
  return (out:gsub("\r", "")), code
end

describe("stress: Ctrl-C during a flush", function()
  it("ends a script with a message and status 1, never a crash or a hang", function()
    local out, rc, killed = interrupt_script(LONG_FLUSH:format(2000, "%s"),
                                             { TYCHO_CPUS = 4, TYCHO_WINDOW = 4096, TYCHO_FUSE = 0 })
    assert.is_false(killed, out)
    assert.are.equal(1, rc, out)
    assert.matches("^tycho: interrupted", out)
    assert.is_nil(out:find("FLUSH FINISHED", 1, true), out)
    interrupted_launches = interrupted_launches + 4000
  end)

  it("ends a script whose flush runs Lua task bodies", function()
    local out, rc, killed = interrupt_script(LONG_TASK_FLUSH:format(3000, "%s"),
                                             { TYCHO_CPUS = 4, TYCHO_WINDOW = 4096 })
    assert.is_false(killed, out)
    assert.are.equal(1, rc, out)
    assert.matches("^tycho: interrupted", out)
    assert.is_nil(out:find("FLUSH FINISHED", 1, true), out)
    interrupted_launches = interrupted_launches + 3000
  end)

  it("returns to the REPL prompt, and later results are right", function()
    local out, code = repl({
      "expect > ",
      "line x = tycho.ones(1000000); acc = x",
      "expect > ",
      "line for i = 1, 2000 do acc = tycho.sqrt(acc * 1.0001 + x) end; print('FLUSH' .. 'ING'); " ..
        "tycho.flush(); print('FLUSH' .. 'ED')",
      "expect FLUSHING",
      "sleep 300",
      "send \\x03",
      "expect interrupted",
      "expect > ",
      -- the cancelled result says so; x and fresh work are right
      "line print(pcall(function() return acc[1] end))",
      "expect unavailable",
      "expect > ",
      "line print('sum', (x * 2):sum():item(), tycho.arange(10):sum():item())",
      "expect sum\\t2000000.0\\t45",
      "expect > ",
      "line for i = 1, 3 do acc = tycho.sqrt(x * 4) + i end; print('last', acc[7])",
      "expect last\\t5.0",
      "expect > ",
      "send \\x04",
    })
    assert.are.equal(0, code, out)
    assert.is_nil(out:find("FLUSHED", 1, true), out)
    interrupted_launches = interrupted_launches + 4000
  end)

  it("returns to the REPL prompt from a flush of Lua task bodies", function()
    local out, code = repl({
      "expect > ",
      "line step = tycho.task { name = 'step', args = { 'in', 'out' }, traits = { parallel = 'all' }, " ..
        "body = function(ctx, x, y) for i = ctx.lo, ctx.hi do y[i] = x[i] * 0.5 + 1 end end }",
      "expect > ",
      "line acc = tycho.ones(200000); for i = 1, 3000 do acc = step(acc) end; print('FLUSH' .. 'ING'); " ..
        "tycho.flush(); print('FLUSH' .. 'ED')",
      "expect FLUSHING",
      "sleep 300",
      "send \\x03",
      "expect interrupted",
      "expect > ",
      "line r = step(tycho.full({ 1000 }, 4)); print('step', r:sum():item())",
      "expect step\\t3000.0",
      "expect > ",
      "send \\x04",
    })
    assert.are.equal(0, code, out)
    assert.is_nil(out:find("FLUSHED", 1, true), out)
    interrupted_launches = interrupted_launches + 3000
  end)
end)

describe("stress", function()
  it("counts its launches", function()
    -- printed as a TAP comment, so ctest -V and scripts/test's log show it
    io.stdout:write(string.format("# stress: %d launches run and checked (%d child shells and " ..
                                  "this one), %d more made in flushes Ctrl-C interrupted\n",
                                  total_launches, total_runs, interrupted_launches))
    -- ~17,000 in a full run; fewer when a label or filter leaves cases out
    assert.is_true(total_launches > 5000, "launches: " .. total_launches)
  end)
end)
