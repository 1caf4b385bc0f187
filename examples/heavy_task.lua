-- examples/heavy_task.lua — work out of proportion to data: task traits and
-- the `task` mode.
--
--   tycho --explain examples/heavy_task.lua [N=2000] [steps=20000]
--
-- A task whose per-element work is heavy (an iterated map, `steps` rounds per
-- element) over a small input. The size heuristic (`auto`) sees 16 KB and
-- runs it as one piece; the same task declared with the trait
-- `parallel = "all"` is split across every processor wherever it is called.
-- `tycho --explain` shows both decisions and who made them. Then N
-- independent launches on small inputs run in `task` mode (one launch per
-- processor at a time) against `single` (one after another).
local tycho = require "tycho"

local args = arg or {}
local N = math.tointeger(tonumber(args[1] or "") or 2000)
local STEPS = math.tointeger(tonumber(args[2] or "") or 20000)
assert(N and N >= 1 and STEPS and STEPS >= 1, "usage: heavy_task.lua [N] [steps]")

local function body(ctx, params, result, steps)
  for i = ctx.lo, ctx.hi do
    local v = params[i]
    for _ = 1, steps do v = math.sin(v) * 0.9 + 0.1 end
    result[i] = v
  end
end

local heavy = tycho.task {
  name = "heavy", args = {"in", "out", "scalar"}, traits = {parallel = "all"}, body = body,
}
local plain = tycho.task {name = "plain", args = {"in", "out", "scalar"}, body = body}

local params = tycho.linspace(0, 1, N)
tycho.flush()

local function timed(f)
  local t0 = tycho.clock()
  local r = f()
  local s = r:sum():item() -- a read: the launch has run
  return tycho.clock() - t0, s
end

local t_auto, s_auto = timed(function() return plain(params, nil, STEPS) end)
local t_all, s_all = timed(function() return heavy(params, nil, STEPS) end)
assert(s_auto == s_all, "the split must not change the result")
print(string.format("heavy_task: N = %d, %d steps per element, %d cpus", N, STEPS,
                    tycho.config().cpus))
print(string.format("auto (one piece):          %.3f s", t_auto))
print(string.format("trait parallel = \"all\":    %.3f s  (%.2fx)", t_all, t_auto / t_all))

-- task mode: 8 independent launches on 1/8 of the input each
local parts = {}
for k = 1, 8 do
  local lo = (k - 1) * N // 8 + 1
  local hi = k * N // 8
  if hi >= lo then parts[#parts + 1] = params[{{lo, hi}}]:copy() end
end
tycho.flush()
-- `single` under favor = debug: one launch per wave, one after another (under
-- the default favor, independent one-piece launches may share a wave anyway)
local function run_parts(mode, favor)
  local t0 = tycho.clock()
  local results = {}
  tycho.parallel({mode = mode, favor = favor}, function()
    for k, p in ipairs(parts) do results[k] = plain(p, nil, STEPS) end
  end)
  local total = 0
  for _, r in ipairs(results) do total = total + r:sum():item() end
  return tycho.clock() - t0, total
end
local t_single, a = run_parts("single", "debug")
local t_task, b = run_parts("task", "min-peak-memory")
assert(a == b, "task mode must not change the result")
print(string.format("%d launches, mode single:  %.3f s  (one after another)", #parts, t_single))
print(string.format("%d launches, mode task:    %.3f s  (%.2fx, spread over the processors)", #parts,
                    t_task, t_single / t_task))
print(string.format("checksum: %.17g", s_all))
