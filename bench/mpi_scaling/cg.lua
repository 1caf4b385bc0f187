-- cg.lua — bench/workloads/cg.lua (conjugate gradients on an n x n 2-D
-- Laplacian through shifted views), then one line with the whole run's
-- time (inputs, warm-up and timed steps) and the bytes and messages this
-- rank received per CG iteration (tycho.stats). For weak scaling give
-- n*sqrt(nranks) (run.sh does). tol=0: every step runs max_iters iterations.
--   mpirun -np 2 tycho bench/mpi_scaling/cg.lua n=1414 max_iters=30
local here = arg[0]:match("(.*/)") or "./"
local p = { n = 1000, max_iters = 30 }
for _, a in ipairs(arg) do
  local k, v = a:match("^([%w_]+)=(.*)$")
  if not k or p[k] == nil then error("cg.lua: unknown argument '" .. a .. "'", 0) end
  p[k] = math.tointeger(tonumber(v)) or tonumber(v)
end
local np = tycho.nranks()
arg = { [0] = here .. "../workloads/cg.lua", "n=" .. p.n, "max_iters=" .. p.max_iters, "tol=0",
        "check=" .. p.max_iters, "reps=1" }
local quiet = print
print = function() end -- the workload's own lines
local s0, t0, c0 = tycho.stats(), tycho.clock(), os.clock()
dofile(arg[0])
local t, c, s1 = tycho.clock() - t0, os.clock() - c0, tycho.stats()
print = quiet
local iters = 2 * p.max_iters -- the warm-up step and one timed step
print(string.format("cg np=%d n=%d iters=%d time=%.4f s cpu=%.4f bytes/iter=%.0f msgs/iter=%.2f "
  .. "collectives/iter=%.2f mpi/iter=%.4f early/iter=%.2f", np, p.n, iters, t, c, (s1.dist_bytes - s0.dist_bytes) / iters,
  (s1.dist_messages - s0.dist_messages) / iters, (s1.dist_collectives - s0.dist_collectives) / iters,
  (s1.dist_wait_ns - s0.dist_wait_ns) * 1e-9 / iters, (s1.dist_overlap_pieces - s0.dist_overlap_pieces) / iters))
