-- bench/workloads/common.lua — what every tycho workload script shares.
--
-- A workload script is run as `tycho <name>.lua key=value ...` by bench/run
-- (or by hand). It builds its inputs (untimed), runs its step once as a
-- warm-up, then `reps` timed steps, and prints one line per timed step
--   time: <seconds>
-- then `checksum: <number>` (and optional `info: key=value` lines). Every
-- peer of the workload (Python, C) prints the same lines for the same
-- parameters, so bench/run can compare them.
--
-- Inputs are deterministic sequences every peer can rebuild exactly:
-- seq(n, alpha)[i] = frac((i + 0.5) * alpha) for 0-based i (Roberts'
-- additive recurrence: evenly spread in [0, 1), exact in f64), so checksums
-- agree to rounding.
local tycho = require "tycho"

local M = {}

-- The irrational steps of the sequences (plastic and golden ratio family).
M.ALPHA = { 0.6180339887498949, 0.7548776662466927, 0.5698402909980532,
            0.4142135623730950, 0.7320508075688772, 0.2360679774997897 }

-- key=value arguments over defaults; numbers become numbers.
function M.params(defaults)
  local p = {}
  for k, v in pairs(defaults) do p[k] = v end
  for _, a in ipairs(arg or {}) do
    local k, v = a:match("^([%w_]+)=(.*)$")
    if not k then error("bench: arguments are key=value, got '" .. a .. "'", 0) end
    if p[k] == nil then error("bench: unknown parameter '" .. k .. "'", 0) end
    p[k] = math.tointeger(tonumber(v)) or tonumber(v) or v
  end
  return p
end

-- frac((arange(n) + 0.5) * alpha) as f64 (then dtype), shaped `shape` (default {n}).
function M.seq(n, alpha, dtype, shape)
  local u = (tycho.arange(n) + 0.5) * alpha
  local s = u - tycho.floor(u)
  if shape then s = s:reshape(shape) end
  if dtype and dtype ~= "f64" then s = s:astype(dtype) end
  return s
end

-- Run `step` once untimed, then `reps` times timed. `finish(result)` must
-- force completion (a value read). Prints the time lines. BENCH_WARMUP=0 in
-- the environment skips the warm-up step (bench/run sets it where one step
-- is minutes long: CG to 1e-8 at 4M unknowns).
function M.timed(reps, step, finish)
  local r
  if os.getenv("BENCH_WARMUP") ~= "0" then
    r = step()
    finish(r)
  end
  for _ = 1, reps do
    r = nil
    collectgarbage()
    collectgarbage()
    local t0 = tycho.clock()
    r = step()
    finish(r)
    print(string.format("time: %.9f", tycho.clock() - t0))
  end
  return r
end

-- Force everything pending to run: a flush and a read of one element.
function M.sync(x)
  tycho.flush()
  if x then
    if x.ndim == 0 then return x:item() end
    local idx = {}
    for d = 1, x.ndim do idx[d] = 1 end
    return x[idx]:item()
  end
end

-- The process's minor page faults so far (nil where /proc is missing).
function M.minflt()
  local f = io.open("/proc/self/stat")
  if not f then return nil end
  local st = f:read("a")
  f:close()
  local rest = st:match("%)%s+(.*)") -- after the command's name, which may hold spaces
  local k = 0
  for field in (rest or ""):gmatch("%S+") do
    k = k + 1
    if k == 8 then return tonumber(field) end -- field 10: minflt
  end
end

-- f() run and synced once: its result, wall and CPU seconds, and the minor
-- page faults it took (nil where /proc is missing).
function M.measured(f)
  local f0 = M.minflt()
  local t0, c0 = tycho.clock(), os.clock()
  local r = f()
  M.sync(r)
  local t, c = tycho.clock() - t0, os.clock() - c0
  local f1 = M.minflt()
  return r, t, c, f0 and f1 and f1 - f0
end

-- C.timed's protocol (a warm-up step unless BENCH_WARMUP=0, then `reps`
-- timed ones, a collection before each) with each step run through
-- M.measured; after(timed) runs right after every step (its own timing is
-- the caller's). Prints the time lines and M.step_info's. Returns the last
-- step's result and the timed steps' wall times.
function M.measured_steps(reps, step, after)
  local times, cpus, faults = {}, {}, {}
  local warm = os.getenv("BENCH_WARMUP") ~= "0" and 1 or 0
  local r
  for i = 1, reps + warm do
    r = nil
    collectgarbage()
    collectgarbage()
    local t, c, df
    r, t, c, df = M.measured(step)
    if after then after(i > warm) end
    if i > warm then
      times[#times + 1] = t
      cpus[#cpus + 1] = c
      if df then faults[#faults + 1] = df end
      print(string.format("time: %.9f", t))
    end
  end
  M.step_info(cpus, faults)
  return r, times
end

-- The median of t (sorts t in place).
function M.median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

-- info lines of the timed steps' CPU seconds (cpu_steps, their median cpu_s)
-- and page faults (faults, the median; none where /proc was missing)
function M.step_info(cpus, faults)
  local steps = {}
  for i, c in ipairs(cpus) do steps[i] = string.format("%.3f", c) end
  M.info("cpu_steps", table.concat(steps, ","))
  M.info("cpu_s", string.format("%.3f", M.median(cpus)))
  if #faults > 0 then M.info("faults", M.median(faults)) end
end

function M.checksum(v) print(string.format("checksum: %.17g", v)) end
function M.info(k, v) print(string.format("info: %s=%s", k, tostring(v))) end

return M
