-- overlap.lua: the halo exchange overlapped with interior pieces (docs/mpi.md,
-- "Split stores"). CTest runs it with 3 processors per rank (TYCHO_CPUS=3),
-- so each rank holds 3 pieces of the grid: the middle one reads only its
-- rank's rows and runs while the halos move, the edge ones after the wait.
-- compare.sh checks that -np 1..4 print the lines of a plain run; the
-- asserts check how many pieces ran before the wait (tycho.stats()'s
-- dist_overlap_pieces), none with TYCHO_MPI_OVERLAP=0.
local np = tycho.nranks()
local blocking = os.getenv("TYCHO_MPI_OVERLAP") == "0"
local function hex(v) return string.format("%a", v) end

-- a 5-point stencil in place, one flush an iteration
local N = 600
local grid = tycho.zeros({N + 2, N + 2})
grid[{{}, 1}] = -273.15
grid[{{}, -1}] = -273.15
grid[{-1, {}}] = -273.15
grid[{1, {}}] = 40.0
local center = grid[{{2, -2}, {2, -2}}]
local north = grid[{{1, -3}, {2, -2}}]
local south = grid[{{3, -1}, {2, -2}}]
local west = grid[{{2, -2}, {1, -3}}]
local east = grid[{{2, -2}, {3, -1}}]
center[{}] = (center + north + east + west + south) * 0.2 -- the grid's first split write
tycho.flush()
local s0 = tycho.stats()
local iters = 8
for _ = 1, iters do
  center[{}] = (center + north + east + west + south) * 0.2
  tycho.flush()
end
local s1 = tycho.stats()
local early = s1.dist_overlap_pieces - s0.dist_overlap_pieces
if np > 1 then
  -- every rank's middle piece, each iteration (its edge pieces read halos)
  local want = blocking and "0" or ">= " .. iters
  assert((blocking and early == 0) or (not blocking and early >= iters),
         string.format("rank %d ran %d pieces while halos moved; expected %s", tycho.rank(), early, want))
  assert(s1.dist_messages > s0.dist_messages, "no halo moved")
end
print("stencil", hex(center:sum():item()), hex(grid[{2, 2}]:item()), hex(grid[{N // 2, N // 3}]:item()))

-- a 1-D 3-point smoother in place
local n = 300007
tycho.seed(5)
local u = tycho.random.uniform(n)
local inner, left, right = u[{{2, -2}}], u[{{1, -3}}], u[{{3, -1}}]
for _ = 1, 4 do
  inner[{}] = (left + inner * 2 + right) * 0.25
  tycho.flush()
end
print("smooth", hex(u:sum():item()), hex(u[n // 2]))
