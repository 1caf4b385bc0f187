-- bench/task_overhead.lua — what a user task costs (run by bench/task_overhead):
--   1. launch overhead of a tiny Lua task and a tiny C task, per launch and
--      per piece, with one piece and with one piece per processor;
--   2. throughput of a Lua task body touching one element per iteration,
--      next to the same loop over Lua tables in this interpreter (and, when
--      run under plain lua5.4, there: the runner does both);
--   3. the speedup of a heavy Lua body split across every processor over the
--      same body in one piece.
-- Times are the best of RUNS runs (tycho.clock(), wall time).

local RUNS = tonumber(os.getenv("RUNS")) or 5
local N_LOOP = tonumber(os.getenv("N_LOOP")) or 2000000

local clock = tycho and tycho.clock or os.clock
local function best(f)
  local b = math.huge
  for _ = 1, RUNS do
    local t0 = clock()
    f()
    local dt = clock() - t0
    if dt < b then b = dt end
  end
  return b
end

-- the reference loop, over Lua tables
local function plain_loop()
  local x, y = {}, {}
  for i = 1, N_LOOP do x[i] = i * 0.5 end
  for i = 1, N_LOOP do y[i] = 0 end
  local dt = best(function()
    for i = 1, N_LOOP do y[i] = x[i] * 2 + 1 end
  end)
  assert(y[N_LOOP] == N_LOOP + 1)
  return N_LOOP / dt
end

if not tycho then -- plain lua5.4 (os.clock: CPU time, one thread)
  print(string.format("%-44s %10.1f M elements/s", "loop over tables, lua5.4 (" .. _VERSION .. ")",
    plain_loop() / 1e6))
  return
end

local cpus = tycho.config().cpus
print(string.format("tycho %s, %d cpus, best of %d runs", tycho.version, cpus, RUNS))

-- ---- 1. launch overhead ------------------------------------------------------------
local N_LAUNCH = tonumber(os.getenv("N_LAUNCH")) or 20000

local tiny_lua = tycho.task {
  name = "tiny_lua", args = { "inout" },
  body = function(ctx, x) x[ctx.lo] = x[ctx.lo] + 1 end,
}
local tiny_lua_all = tycho.task {
  name = "tiny_lua_all", args = { "inout" }, traits = { parallel = "all" },
  body = function(ctx, x) x[ctx.lo] = x[ctx.lo] + 1 end,
}

local function overhead(label, launch, elems)
  local x = tycho.zeros(elems, "i64")
  launch(x) -- warm: worker states, body caches
  tycho.flush()
  local pieces
  local dt = best(function()
    local p0 = tycho.stats().pieces
    for _ = 1, N_LAUNCH do launch(x) end
    tycho.flush()
    pieces = tycho.stats().pieces - p0
  end)
  print(string.format("%-44s %8.2f us/launch %8.2f us/piece  (%.1f pieces/launch)", label,
    dt / N_LAUNCH * 1e6, dt / pieces * 1e6, pieces / N_LAUNCH))
end

print("\nlaunch overhead (launch + flush, window of " .. tycho.config().window .. ")")
overhead("tiny Lua task, 1 piece", tiny_lua, 1)
overhead("tiny C task, 1 piece", tycho.tasks.tiny_c, 1)
overhead("tiny Lua task, parallel=all", tiny_lua_all, cpus)
overhead("tiny C task, parallel=all", tycho.tasks.tiny_c_all, cpus)

-- ---- 2. throughput of a body ----------------------------------------------------------
local affine = tycho.task {
  name = "affine", args = { "in", "out" }, traits = { parallel = "single" },
  body = function(ctx, x, y)
    for i = ctx.lo, ctx.hi do y[i] = x[i] * 2 + 1 end
  end,
}
local x = tycho.arange(N_LOOP) * 0.5 + 0.5
local y = tycho.zeros(N_LOOP)
tycho.flush()
local dt = best(function()
  affine(x, y)
  tycho.flush()
end)
assert(y[N_LOOP] == N_LOOP + 1)
print(string.format("\nthroughput, y[i] = x[i] * 2 + 1 over %d f64 (one piece)", N_LOOP))
print(string.format("%-44s %10.1f M elements/s", "Lua task body, tiles", N_LOOP / dt / 1e6))
print(string.format("%-44s %10.1f M elements/s", "loop over tables, this interpreter",
  plain_loop() / 1e6))

-- ---- 3. speedup of a heavy body ---------------------------------------------------------
-- Each piece also records when it ran (tycho.clock) and the CPU time of its
-- thread (tycho.thread_clock). On a machine busy with other work the wall
-- speedup is what the free cores gave; the CPU-time speedup (the one-piece
-- run's CPU time over the longest piece's) is what idle cores give, and the
-- overlap says whether the pieces really ran at the same time.
local heavy = tycho.task {
  name = "heavy", args = { "in", "out", "out", "out", "out" }, traits = { parallel = "all" },
  body = function(ctx, x, y, t0, t1, cpu)
    local start, c0 = tycho.clock(), tycho.thread_clock()
    for i = ctx.lo, ctx.hi do
      local v = x[i]
      for _ = 1, 2000 do v = math.sin(v) + 0.5 end
      y[i] = v
    end
    t0[ctx.lo], t1[ctx.lo], cpu[ctx.lo] = start, tycho.clock(), tycho.thread_clock() - c0
  end,
}
local h = tycho.linspace(0, 1, 2000)
local function run(launcher)
  local y, s, e, c = launcher(h, nil, tycho.zeros(2000), tycho.zeros(2000), tycho.zeros(2000))
  local sum = y:sum():item()
  local starts, ends, cpu = s:totable(), e:totable(), c:totable()
  local last_start, first_end, longest, cpu_max = 0, math.huge, 0, 0
  for i = 1, #starts do
    if starts[i] > 0 then
      last_start = math.max(last_start, starts[i])
      first_end = math.min(first_end, ends[i])
      longest = math.max(longest, ends[i] - starts[i])
      cpu_max = math.max(cpu_max, cpu[i])
    end
  end
  return sum, math.max(0, first_end - last_start) / longest, cpu_max
end
local r1, r2, overlap, cpu1, cpun = nil, nil, 0, math.huge, math.huge
local single = heavy:with { parallel = "single" }
local t1 = best(function()
  local c
  r1, _, c = run(single)
  cpu1 = math.min(cpu1, c)
end)
local t2 = best(function()
  local c
  r2, overlap, c = run(heavy)
  cpun = math.min(cpun, c)
end)
assert(r1 == r2, "the split run must give the same result")
print(string.format("\nheavy body (2000 elements x 2000 sin), 1 piece vs %d pieces on %d cpus:", cpus,
  cpus))
print(string.format("  wall %.3f s vs %.3f s: speedup %.2fx (pieces all running at once %.0f%% " ..
  "of the time)", t1, t2, t1 / t2, overlap * 100))
print(string.format("  CPU time of the longest piece %.3f s vs %.3f s: speedup %.2fx on idle cores",
  cpu1, cpun, cpu1 / cpun))
