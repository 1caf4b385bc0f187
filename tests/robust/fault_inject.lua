--[[
fault_inject.lua — makes allocations fail, one at a time, under Lua scripts
run by the `tycho` shell, and checks that each failure is survived cleanly.

For each script: one run unarmed (TYCHO_ALLOC_COUNT=1) counts the
allocations it makes from the creation of the shell's Lua state on (core
and Lua state alike: ty__malloc and ty_lua_newstate's allocator share one
count); then one run per k in 1..count (or `--samples` evenly spaced k when
the count is larger) with TYCHO_FAIL_ALLOC=k, which makes the k-th
allocation fail once. Each run must end either
  - successfully (the failure was absorbed: a retry after a collection, an
    emergency collection in Lua, or a path that can do without), or
  - with a Lua error that mentions memory ("out of memory", "not enough
    memory"), reported by the shell, exit status 1;
never with a crash, an abort, a hang (`--timeout`), a sanitizer report
(AddressSanitizer, LeakSanitizer in the ASan build: nothing may leak on an
error path, UndefinedBehaviorSanitizer), or "WRONG" (a script's own check
that a result after the failure is right: oom_recovery.lua, api_fuzz.lua).

  tycho tests/robust/fault_inject.lua [options] [script-with-args ...]
    --tycho PATH     the shell to run (default $TYCHO_BIN, else "tycho")
    --samples N      at most N values of k per script (default 200; 0: all)
    --seed S         shift the evenly spaced k by a random offset (default 0: none)
    --timeout T      seconds per run (default 60)
    --cpus N         passed to the shell (default 2)
    --quick          the short CTest sample: 12 k per script
    --burst N        fail N allocations in a row from the k-th on
                     (TYCHO_FAIL_ALLOC_BURST): past single retries
    --core-only      count and fail the core's allocations only, not the Lua
                     state's (TYCHO_FAIL_ALLOC_LUA=0): denser in core paths
    --verbose        one line per run
    --tail N         lines of a failed run's output to print (default 40)
  A script is "path [args...]" as one argument; relative paths are taken
  from the repository root (TYCHO_SOURCE_DIR, else the parent of this file's
  directory). Without scripts, the default set below runs.

Exit status 0 when every run was clean. The summary line:
  fault_inject: 9 scripts, 1800 runs, 1786 allocation failures injected:
  1203 absorbed, 583 out-of-memory errors, 0 FAILED
]]

local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
local root = os.getenv("TYCHO_SOURCE_DIR") or (here .. "/../..")

-- The default scripts: small sizes, so that a run takes ~0.1 s.
local DEFAULT = {
  "tests/robust/oom_recovery.lua",
  "tests/robust/api_fuzz.lua --seed 11 --steps 120",
  "tests/robust/api_fuzz.lua --seed 12 --steps 120",
  "examples/black_scholes.lua 2000 f64 2",
  "examples/stencil.lua 40 3",
  "examples/regression.lua 200 300",
  "examples/heavy_task.lua 64 10",
  "examples/schedule_modes.lua 2000 8",
}

local opts = {
  tycho = os.getenv("TYCHO_BIN") or "tycho",
  samples = 200, seed = 0, timeout = 60, cpus = 2, scripts = {},
}
do
  local k = 1
  while arg and arg[k] do
    local a = arg[k]
    local function val()
      k = k + 1
      assert(arg[k], "fault_inject: " .. a .. " needs a value")
      return arg[k]
    end
    if a == "--tycho" then opts.tycho = val()
    elseif a == "--samples" then opts.samples = math.tointeger(tonumber(val()))
    elseif a == "--seed" then opts.seed = math.tointeger(tonumber(val()))
    elseif a == "--timeout" then opts.timeout = tonumber(val())
    elseif a == "--cpus" then opts.cpus = math.tointeger(tonumber(val()))
    elseif a == "--quick" then opts.samples = 12
    elseif a == "--core-only" then opts.core_only = true
    elseif a == "--tail" then opts.tail = math.tointeger(tonumber(val()))
    elseif a == "--burst" then opts.burst = math.tointeger(tonumber(val()))
    elseif a == "--verbose" then opts.verbose = true
    elseif a:sub(1, 2) == "--" then error("fault_inject: unknown option " .. a, 0)
    else opts.scripts[#opts.scripts + 1] = a end
    k = k + 1
  end
end
if #opts.scripts == 0 then opts.scripts = DEFAULT end

local function shquote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local out = os.tmpname()

-- Run the shell on a script line with TYCHO_FAIL_ALLOC=k (nil: unarmed).
-- Returns the exit status (124: timed out; 128 + n: killed by signal n) and
-- the output (stdout and stderr together).
local function run(script, k)
  local words = {}
  for w in script:gmatch("%S+") do words[#words + 1] = w end
  local path = words[1]
  if path:sub(1, 1) ~= "/" then path = root .. "/" .. path end
  local cmd = { "env", "TYCHO_ALLOC_COUNT=1" }
  if opts.core_only then cmd[#cmd + 1] = "TYCHO_FAIL_ALLOC_LUA=0" end
  if opts.burst and k then cmd[#cmd + 1] = "TYCHO_FAIL_ALLOC_BURST=" .. opts.burst end
  if k then cmd[#cmd + 1] = "TYCHO_FAIL_ALLOC=" .. k end
  cmd[#cmd + 1] = "timeout -k 5 " .. opts.timeout
  cmd[#cmd + 1] = shquote(opts.tycho)
  cmd[#cmd + 1] = "--cpus " .. opts.cpus
  cmd[#cmd + 1] = shquote(path)
  for i = 2, #words do cmd[#cmd + 1] = shquote(words[i]) end
  local line = table.concat(cmd, " ")
  local ok, how, code = os.execute(line .. " >" .. out .. " 2>&1 </dev/null")
  local f = io.open(out, "r")
  local text = f and f:read("a") or ""
  if f then f:close() end
  local status = code
  if how == "signal" then status = 128 + code end
  if ok and how == "exit" then status = 0 end
  return status, text, line
end

local function counted(text)
  local n, failed = text:match("fault injection: (%d+) allocations counted, (%d+) failed on purpose")
  return tonumber(n), tonumber(failed)
end

-- "absorbed", "oom", or nil and why it is a failure.
local function classify(status, text)
  if text:find("ERROR: AddressSanitizer", 1, true) then return nil, "AddressSanitizer report" end
  if text:find("ERROR: LeakSanitizer", 1, true) then return nil, "LeakSanitizer: a leak" end
  if text:find("runtime error:", 1, true) then return nil, "UndefinedBehaviorSanitizer report" end
  if text:find("ThreadSanitizer", 1, true) then return nil, "ThreadSanitizer report" end
  if status == 124 or status == 137 then return nil, "hang (timed out)" end
  if status >= 128 then return nil, "killed by signal " .. (status - 128) end
  if text:find("WRONG", 1, true) or text:find("MISMATCH", 1, true) then
    return nil, "a wrong result after the failure"
  end
  if status == 0 then return "absorbed" end
  if status == 1 and (text:find("out of memory", 1, true) or text:find("not enough memory", 1, true)) then
    return "oom"
  end
  return nil, "exit status " .. status .. " without an out-of-memory error"
end

local function tail(text, n)
  local lines = {}
  for l in text:gmatch("[^\n]*") do lines[#lines + 1] = l end
  local first = math.max(1, #lines - n)
  return table.concat(lines, "\n", first)
end

local totals = { scripts = 0, runs = 0, injected = 0, absorbed = 0, oom = 0, failed = 0 }
local failures = {}
local rng = opts.seed ~= 0 and opts.seed or nil
if rng then math.randomseed(rng) end

for _, script in ipairs(opts.scripts) do
  totals.scripts = totals.scripts + 1
  local status, text, line = run(script, nil)
  local n = counted(text)
  if status ~= 0 or not n then
    failures[#failures + 1] = string.format("%s: the unarmed run failed (status %d):\n  %s\n%s",
                                            script, status, line, tail(text, 20))
    totals.failed = totals.failed + 1
    goto next_script
  end
  do
    local ks = {}
    if opts.samples == 0 or n <= opts.samples then
      for k = 1, n do ks[#ks + 1] = k end
    else
      local step = (n - 1) / (opts.samples - 1)
      for i = 0, opts.samples - 1 do
        local k = 1 + math.floor(i * step + 0.5)
        if rng then k = math.min(n, k + math.random(0, math.max(0, math.floor(step) - 1))) end
        ks[#ks + 1] = k
      end
    end
    local c = { absorbed = 0, oom = 0, failed = 0, injected = 0 }
    for _, k in ipairs(ks) do
      local st, txt, cmdline = run(script, k)
      local _, inj = counted(txt)
      inj = inj or 0
      c.injected = c.injected + inj
      local kind, why = classify(st, txt)
      if kind then
        c[kind] = c[kind] + 1
      else
        c.failed = c.failed + 1
        failures[#failures + 1] = string.format("%s, k = %d: %s\n  %s\n%s", script, k, why,
                                                cmdline, tail(txt, opts.tail or 40))
      end
      if opts.verbose then
        print(string.format("  k=%-7d %-9s %s", k, kind or "FAILED", kind and "" or why))
      end
    end
    print(string.format("%s: %d allocations; %d runs: %d injected, %d absorbed, %d out-of-memory errors, %d FAILED",
                        script, n, #ks, c.injected, c.absorbed, c.oom, c.failed))
    io.stdout:flush()
    totals.runs = totals.runs + #ks
    totals.injected = totals.injected + c.injected
    totals.absorbed = totals.absorbed + c.absorbed
    totals.oom = totals.oom + c.oom
    totals.failed = totals.failed + c.failed
  end
  ::next_script::
end
os.remove(out)

for i, f in ipairs(failures) do
  if i > 10 then
    print(string.format("... and %d more failures", #failures - 10))
    break
  end
  print("FAILED: " .. f)
end
print(string.format("fault_inject: %d scripts, %d runs, %d allocation failures injected: %d absorbed, " ..
                    "%d out-of-memory errors, %d FAILED", totals.scripts, totals.runs, totals.injected,
                    totals.absorbed, totals.oom, totals.failed))
os.exit(totals.failed == 0 and 0 or 1)
