-- stencil.lua — bench/workloads/stencil.lua's 5-point Jacobi step on an
-- (n+2) x (n+2) grid, `iters` times, with the bytes and messages this rank
-- received per iteration (tycho.stats). For weak scaling give n*sqrt(nranks)
-- (run.sh does): each rank then holds about n*n points.
--   mpirun -np 2 tycho bench/mpi_scaling/stencil.lua n=1414 iters=20
local p = { n = 1000, iters = 20 }
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^([%w_]+)=(.*)$")
  if not k or p[k] == nil then error("stencil.lua: unknown argument '" .. a .. "'", 0) end
  p[k] = math.tointeger(tonumber(v)) or tonumber(v)
end
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
center[{}] = (center + north + east + west + south) * 0.2 -- warm-up: the grid's first split write
tycho.flush()
collectgarbage()
local s0, t0, c0 = tycho.stats(), tycho.clock(), os.clock()
for _ = 1, p.iters do
  center[{}] = (center + north + east + west + south) * 0.2
end
tycho.flush()
local t, c, s1 = tycho.clock() - t0, os.clock() - c0, tycho.stats()
print(string.format("stencil np=%d n=%d iters=%d time=%.4f s cpu=%.4f bytes/iter=%.0f msgs/iter=%.2f "
  .. "collectives/iter=%.2f mpi/iter=%.4f early/iter=%.2f", tycho.nranks(), N, p.iters, t, c, (s1.dist_bytes - s0.dist_bytes) / p.iters,
  (s1.dist_messages - s0.dist_messages) / p.iters, (s1.dist_collectives - s0.dist_collectives) / p.iters,
  (s1.dist_wait_ns - s0.dist_wait_ns) * 1e-9 / p.iters, (s1.dist_overlap_pieces - s0.dist_overlap_pieces) / p.iters))
print(string.format("checksum %.17g", center:sum():item() / (N * N)))
