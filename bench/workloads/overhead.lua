-- overhead.lua — what a launch costs.
--   tycho overhead.lua mode=ops n=1000 loops=2000 reps=5
--     a loop of 10 element-wise ops (5 multiply-adds) on n-element arrays;
--     one timed step = `loops` loops (10 * loops launches), ended by a read.
--   tycho overhead.lua mode=curve sizes=64,256,... [launches=...]
--     for each size S, `y = exp(x)` launched repeatedly on S elements (the
--     window batches them, one read at the end), printing
--     "curve: <S> <seconds per launch> <pieces per launch>". bench/run turns
--     it into an efficiency curve: efficiency(S) = S * (per-element time at the
--     largest size) / (time per launch at S). Run it under TYCHO_PARALLEL=all
--     (every launch split on every core) and the default (auto).
--   mode=empty n=1024 kind=task|fill: `launches` launches of an empty user
--     task reading n elements (tycho.task), or of an n-element fill.
local tycho = require "tycho"
local C = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local p = C.params { mode = "ops", n = 1000, loops = 2000, reps = 5, sizes = "", launches = 0,
                     kind = "fill" }

if p.mode == "ops" then
  local x0 = C.seq(p.n, C.ALPHA[1])
  C.sync(x0)
  local x = C.timed(p.reps, function()
    local x = x0
    for _ = 1, p.loops do
      x = x * 0.999 + 0.001
      x = x * 0.999 + 0.001
      x = x * 0.999 + 0.001
      x = x * 0.999 + 0.001
      x = x * 0.999 + 0.001
    end
    return x
  end, C.sync)
  C.info("ops", 10 * p.loops)
  C.checksum(x:sum():item())
elseif p.mode == "curve" then
  for s in tostring(p.sizes):gmatch("[^,]+") do
    local S = math.tointeger(tonumber(s))
    local x = C.seq(S, C.ALPHA[1])
    C.sync(x)
    -- enough launches for ~20 ms of work at 1 ns per element, at least 64
    local k = p.launches > 0 and p.launches or math.max(64, math.min(20000, 20000000 // S))
    local best, pieces = math.huge, 0
    for r = 0, 3 do
      collectgarbage()
      local st0 = tycho.stats().pieces
      local t0 = tycho.clock()
      local y
      for _ = 1, k do y = tycho.exp(x) end
      C.sync(y)
      local t = (tycho.clock() - t0) / k
      pieces = (tycho.stats().pieces - st0) / k
      if r > 0 then best = math.min(best, t) end
      y = nil
    end
    print(string.format("curve: %d %.9f %.2f", S, best, pieces))
  end
  C.checksum(0)
elseif p.mode == "empty" then
  -- kind=task: an empty user task (tycho.task, a Lua body that returns at
  -- once) reading x; kind=fill: x:fill(1), a built-in launch that writes it.
  local k = p.launches > 0 and p.launches or 20000
  local x = tycho.zeros(p.n)
  local launch
  if p.kind == "task" then
    if not tycho.task then error("bench: this tycho has no tycho.task", 0) end
    local empty = tycho.task { name = "bench_empty", args = { "in" }, body = function(ctx, a) end }
    launch = function() empty(x) end
  else
    launch = function() x:fill(1) end
  end
  C.sync(x)
  local st0 = tycho.stats().pieces
  C.timed(p.reps, function()
    for _ = 1, k do launch() end
    return x
  end, C.sync)
  C.info("launches", k)
  C.info("pieces_per_launch", (tycho.stats().pieces - st0) / ((p.reps + 1) * k))
  C.checksum(x:sum():item())
end
