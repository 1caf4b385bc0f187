-- stream.lua — the element-wise update x = x * 1.0001 + 1, `iters` times over
-- `n` float64 elements per rank (weak scaling: n * nranks in all), timed
-- from the first update to the flush after the last; then the bytes and
-- messages this rank received per iteration (tycho.stats), and a checksum.
--   mpirun -np 2 tycho bench/mpi_scaling/stream.lua n=1000000 iters=20
local p = { n = 1000000, iters = 20, flush = 1 }
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^([%w_]+)=(.*)$")
  if not k or p[k] == nil then error("stream.lua: unknown argument '" .. a .. "'", 0) end
  p[k] = math.tointeger(tonumber(v)) or tonumber(v)
end
local np = tycho.nranks()
local x = tycho.arange(p.n * np) * 1e-6
tycho.flush()
collectgarbage()
local s0, t0, c0 = tycho.stats(), tycho.clock(), os.clock()
for _ = 1, p.iters do
  x = x * 1.0001 + 1
  if p.flush == 1 then tycho.flush() end -- one wave per update, as a loop with reads would
end
tycho.flush()
local t, c, s1 = tycho.clock() - t0, os.clock() - c0, tycho.stats()
print(string.format("stream np=%d n/rank=%d iters=%d time=%.4f s cpu=%.4f bytes/iter=%.0f msgs/iter=%.2f "
  .. "collectives/iter=%.2f mpi/iter=%.4f", np, p.n, p.iters, t, c, (s1.dist_bytes - s0.dist_bytes) / p.iters,
  (s1.dist_messages - s0.dist_messages) / p.iters, (s1.dist_collectives - s0.dist_collectives) / p.iters,
  (s1.dist_wait_ns - s0.dist_wait_ns) * 1e-9 / p.iters))
print(string.format("checksum %.17g", x:sum():item()))
