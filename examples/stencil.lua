-- examples/stencil.lua — 2-D 5-point Jacobi stencil on views (cuNumeric's stencil.py).
--
--   tycho examples/stencil.lua [N] [iterations]
--
-- An (N+2) x (N+2) grid (default N = 1000) with fixed boundaries: the top row
-- at 40, the other three sides at -273.15, the inside at 0. Each iteration
-- replaces every inner point by the mean of itself and its four neighbours
-- (default 100 iterations). The five neighbourhoods are views of the one grid
-- (no copies); the update writes the inner view in place.
--
-- Prints the time and a checksum: the mean of the inner points.
local tycho = require "tycho"

local args = arg or {}
-- An integer command-line argument: args[i] if given (an error if it is not
-- an integer >= min), else the default.
local function int_arg(i, default, min, name)
  if args[i] == nil then return default end
  local v = math.tointeger(tonumber(args[i]))
  if not v or v < min then
    error(string.format("%s (argument %d) must be an integer >= %d, got '%s'", name, i, min, args[i]), 0)
  end
  return v
end
local N = int_arg(1, 1000, 1, "N")
local iterations = int_arg(2, 100, 0, "iterations")

local grid = tycho.zeros({N + 2, N + 2})
grid[{{}, 1}] = -273.15   -- left column
grid[{{}, -1}] = -273.15  -- right column
grid[{-1, {}}] = -273.15  -- bottom row
grid[{1, {}}] = 40.0      -- top row (its corners too, as in cuNumeric)

-- Rows and columns 2..N+1 are the inside; each neighbour is that box shifted by one.
local center = grid[{{2, -2}, {2, -2}}]
local north  = grid[{{1, -3}, {2, -2}}]
local south  = grid[{{3, -1}, {2, -2}}]
local west   = grid[{{2, -2}, {1, -3}}]
local east   = grid[{{2, -2}, {3, -1}}]

local t0 = tycho.clock()
for _ = 1, iterations do
  -- The right-hand side is a new store computed from the old values, so the
  -- in-place assignment is a Jacobi (not Gauss-Seidel) step.
  center[{}] = (center + north + east + west + south) * 0.2
end
local checksum = center:sum():item() / (N * N) -- the read waits for every iteration
local elapsed = tycho.clock() - t0

print(string.format("stencil: %d x %d inner points, %d iterations, %d cpus",
                    N, N, iterations, tycho.config().cpus))
print(string.format("time: %.6f s (%.4g point updates/s)", elapsed,
                    N * N * iterations / math.max(elapsed, 1e-9)))
print(string.format("checksum: %.17g", checksum))
