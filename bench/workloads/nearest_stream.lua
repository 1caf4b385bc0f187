-- nearest_stream.lua — the nearest-neighbour distance written the natural
-- way (a min over the n x m matrix of distances) far beyond memory, run in a
-- streamed scope: tycho fuses the matrix away and keeps whatever
-- intermediate is left under the budget (docs/streaming.md).
--   tycho nearest_stream.lua n=200000 m=200000 budget=256MB reps=1
-- Checksum: the sum of the minima (as nearest.lua: min over axis 2).
local tycho = require "tycho"
local C = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local p = C.params { n = 200000, m = 200000, budget = "256MB", reps = 1 }

local a, b = C.seq(p.n, C.ALPHA[1]), C.seq(p.m, C.ALPHA[2])
C.sync(b)
C.info("matrix_bytes", p.n * p.m * 8)
local d = C.timed(p.reps, function()
  local r
  tycho.parallel({memory = tostring(p.budget)}, function()
    r = tycho.min(tycho.abs(a:expand(2) - b:expand(1)), 2)
  end)
  return r
end, C.sync)
C.info("stream_peak", tycho.stats().stream_peak)
C.checksum(d:sum():item())
