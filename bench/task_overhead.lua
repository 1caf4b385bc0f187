-- bench/task_overhead.lua — what a user task costs (run by bench/task_overhead):
--   1. launch overhead of a tiny Lua task and a tiny C task, per launch and
--      per piece, with one piece and with one piece per processor;
--   2. throughput of a Lua task body touching one element per iteration,
--      next to the same loop over Lua tables in this interpreter (and, when
--      run under plain lua5.4, there: the runner does both);
--   3. the speedup of a heavy Lua body split into one piece per processor, and
--      into 4 per processor, over the same body in one piece.
-- Times are the best of RUNS runs (tycho.clock(), wall time); section 3 runs
-- its configurations in RUNS alternating rounds.

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
-- The configurations run in alternating rounds (the first one rotates), RUNS
-- rounds, so that drift on a shared machine hits them all alike: each reports
-- its best wall time, best over the one-piece best, and the median of the
-- per-round ratios. Each piece records when it ran (tycho.clock), the CPU
-- time of its thread (tycho.thread_clock) and its worker. With one piece per
-- processor the run waits for the slowest piece, so a slower core sets its
-- time; with more pieces than threads the pieces are handed out one at a
-- time (window.c, schedule(dynamic, 1)), and the faster core takes more.
local heavy = tycho.task {
  name = "heavy", args = { "in", "out", "out", "out", "out", "out" }, traits = { parallel = "all" },
  body = function(ctx, x, y, t0, t1, cpu, worker)
    local start, c0 = tycho.clock(), tycho.thread_clock()
    for i = ctx.lo, ctx.hi do
      local v = x[i]
      for _ = 1, 2000 do v = math.sin(v) + 0.5 end
      y[i] = v
    end
    t0[ctx.lo], t1[ctx.lo], cpu[ctx.lo] = start, tycho.clock(), tycho.thread_clock() - c0
    worker[ctx.lo] = ctx.worker
  end,
}
local N_HEAVY = 2000
local h = tycho.linspace(0, 1, N_HEAVY)
local configs = {
  { label = "1 piece", task = heavy:with { parallel = "single" } },
  { label = "parallel=all", task = heavy:with { parallel = "all" } },
  { label = "parallel=all, overdecompose=4", task = heavy:with { parallel = "all", overdecompose = 4 } },
}

-- One run: wall time of the launch up to the result, then the pieces' records.
local function run(task)
  local z = function() return tycho.zeros(N_HEAVY) end
  local t0 = tycho.clock()
  local y, s, e, c, w = task(h, nil, z(), z(), z(), z())
  local sum = y:sum():item()
  local wall = tycho.clock() - t0
  local starts, ends, cpu, worker = s:totable(), e:totable(), c:totable(), w:totable()
  local r = { wall = wall, sum = sum, pieces = 0, cpu_min = math.huge, cpu_max = 0, per_worker = {} }
  local last_start, first_end, longest = 0, math.huge, 0
  for i = 1, N_HEAVY do
    if starts[i] > 0 then
      r.pieces = r.pieces + 1
      last_start = math.max(last_start, starts[i])
      first_end = math.min(first_end, ends[i])
      longest = math.max(longest, ends[i] - starts[i])
      r.cpu_min, r.cpu_max = math.min(r.cpu_min, cpu[i]), math.max(r.cpu_max, cpu[i])
      r.per_worker[worker[i]] = (r.per_worker[worker[i]] or 0) + 1
    end
  end
  r.overlap = math.max(0, first_end - last_start) / longest
  return r
end

for _, cf in ipairs(configs) do run(cf.task) end -- warm: worker states, body caches
local rounds = {}
for round = 1, RUNS do
  rounds[round] = {}
  for k = 0, #configs - 1 do
    local j = (round - 1 + k) % #configs + 1
    rounds[round][j] = run(configs[j].task)
  end
end

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) / 2] or (t[n / 2] + t[n / 2 + 1]) / 2
end
local best_run = {} -- per configuration, the round with the best wall time
for j = 1, #configs do
  for round = 1, RUNS do
    local r = rounds[round][j]
    assert(r.sum == rounds[1][1].sum, "every configuration must give the same result")
    if not best_run[j] or r.wall < best_run[j].wall then best_run[j] = r end
  end
end
print(string.format("\nheavy body (%d elements x 2000 sin), %d cpus, %d alternating rounds:", N_HEAVY,
  cpus, RUNS))
for j, cf in ipairs(configs) do
  local b = best_run[j]
  local line = string.format("  %-31s %2d piece%s  best %.3f s", cf.label, b.pieces,
    b.pieces == 1 and " " or "s", b.wall)
  if j > 1 then
    local ratios = {}
    for round = 1, RUNS do ratios[round] = rounds[round][1].wall / rounds[round][j].wall end
    line = line .. string.format("  speedup %.2fx (median of rounds %.2fx)", best_run[1].wall / b.wall,
      median(ratios))
    if j == 2 then
      line = line .. string.format(", at once %.0f%% of the time", b.overlap * 100)
    else
      local counts = {}
      for _, n in pairs(b.per_worker) do counts[#counts + 1] = n end
      table.sort(counts, function(a, c) return a > c end)
      line = line .. ", pieces per worker " .. table.concat(counts, "+")
    end
  end
  print(line)
end
print(string.format("  CPU time of a piece, parallel=all (best round): fastest %.3f s, slowest %.3f s; " ..
  "1 piece %.3f s / %d = %.3f s", best_run[2].cpu_min, best_run[2].cpu_max, best_run[1].cpu_max, cpus,
  best_run[1].cpu_max / cpus))
print("  (equal pieces take more CPU time on a core that runs slower, shared or throttled; with one " ..
  "piece per cpu the run waits for the slowest)")
