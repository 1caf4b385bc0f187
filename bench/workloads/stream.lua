-- stream.lua — STREAM triad a = b + s * c (the memory-bandwidth roof).
--   tycho stream.lua n=160000000 reps=5 [sweep=1000,10000,...]
-- STREAM's constant inputs (b = 2, c = 1, s = 3: a = 5 everywhere; cheap to
-- set up, which matters at 3 x 1.28 GB). Checksum: sum(a) = 5n.
-- sweep=...: for each size, the best of max(reps, min(1000, 1e7 / n)) triads, printed as
-- "sweep: <n> <seconds>" (one process for the whole size sweep).
local tycho = require "tycho"
local C = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local p = C.params { n = 160000000, reps = 5, sweep = "" }
local s = 3.0

local function triad_at(n, reps)
  local b, c = tycho.full(n, 2.0), tycho.full(n, 1.0)
  C.sync(c)
  local best, a = math.huge, nil
  for r = 0, reps do
    a = nil
    collectgarbage()
    local t0 = tycho.clock()
    a = b + s * c
    C.sync(a)
    if r > 0 then best = math.min(best, tycho.clock() - t0) end
  end
  return best, a
end

if p.sweep ~= "" then
  for n in tostring(p.sweep):gmatch("[^,]+") do
    -- small sizes: many more repetitions (best of), so that a busy machine
    -- cannot hide the runtime's own cost behind a scheduler time slice
    local ni = math.tointeger(tonumber(n))
    local t = triad_at(ni, math.max(p.reps, math.min(1000, 10000000 // ni)))
    print(string.format("sweep: %s %.9f", n, t))
  end
  C.checksum(0)
  return
end

local b, c = tycho.full(p.n, 2.0), tycho.full(p.n, 1.0)
C.sync(c)
local a = C.timed(p.reps, function() return b + s * c end, C.sync)
C.checksum(a:sum():item())
