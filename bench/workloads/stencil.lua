-- stencil.lua — 2-D 5-point Jacobi stencil on views of one grid (cuNumeric's
-- stencil.py): an (n+2) x (n+2) grid, boundaries fixed (top row 40, the other
-- sides -273.15, inside 0); each iteration replaces every inner point by the
-- mean of itself and its four neighbours.
--   tycho stencil.lua n=8192 iters=50 reps=5
-- One timed step = `iters` iterations. Checksum: mean of the inner points
-- after the warm-up and every timed step ((reps + 1) * iters iterations).
local tycho = require "tycho"
local C = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local p = C.params { n = 8192, iters = 50, reps = 5 }
local N = p.n

local grid = tycho.zeros({N + 2, N + 2})
grid[{{}, 1}] = -273.15
grid[{{}, -1}] = -273.15
grid[{-1, {}}] = -273.15
grid[{1, {}}] = 40.0
local center = grid[{{2, -2}, {2, -2}}]
local north  = grid[{{1, -3}, {2, -2}}]
local south  = grid[{{3, -1}, {2, -2}}]
local west   = grid[{{2, -2}, {1, -3}}]
local east   = grid[{{2, -2}, {3, -1}}]
C.sync(grid)

C.timed(p.reps, function()
  for _ = 1, p.iters do
    center[{}] = (center + north + east + west + south) * 0.2
  end
  return center
end, C.sync)
C.checksum(center:sum():item() / (N * N))
