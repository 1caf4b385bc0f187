-- black_scholes.lua — bench/workloads/black_scholes.lua's step (call and put
-- prices of n options per rank, weak scaling: n * nranks in all), `iters`
-- times with a flush after each, timed from the first step to the last
-- flush; then the bytes and messages this rank received per iteration
-- (tycho.stats), and a checksum. The outputs stay split: nothing moves.
--   mpirun -np 2 tycho bench/mpi_scaling/black_scholes.lua n=4000000 iters=10
local p = { n = 4000000, iters = 10 }
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^([%w_]+)=(.*)$")
  if not k or p[k] == nil then error("black_scholes.lua: unknown argument '" .. a .. "'", 0) end
  p[k] = math.tointeger(tonumber(v)) or tonumber(v)
end
local R, V = 0.02, 0.3

local function cnd(d)
  local A1, A2, A3, A4, A5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429
  local RSQRT2PI = 0.39894228040143267793994605993438
  local k = 1.0 / (tycho.abs(d) * 0.2316419 + 1.0)
  local c = tycho.exp(d * -0.5 * d) * RSQRT2PI * (k * (k * (k * (k * (k * A5 + A4) + A3) + A2) + A1))
  return tycho.where(d:gt(0), 1.0 - c, c)
end

local function black_scholes(S, K, T)
  local sqrt_t = tycho.sqrt(T)
  local d1 = (tycho.log(S / K) + T * (R + 0.5 * V * V)) / (sqrt_t * V)
  local d2 = d1 - sqrt_t * V
  local cnd_d1, cnd_d2 = cnd(d1), cnd(d2)
  local k_exp_rt = K * tycho.exp(T * -R)
  local call = S * cnd_d1 - k_exp_rt * cnd_d2
  local put = k_exp_rt * (1.0 - cnd_d2) - S * (1.0 - cnd_d1)
  return call, put
end

-- bench/workloads/common.lua's inputs: frac((i + 0.5) * alpha)
local function seq(n, alpha)
  local u = (tycho.arange(n) + 0.5) * alpha
  return u - tycho.floor(u)
end

local np = tycho.nranks()
local n = p.n * np
local S = seq(n, 0.6180339887498949) * 25.0 + 5.0
local K = seq(n, 0.7548776662466927) * 99.0 + 1.0
local T = seq(n, 0.5698402909980532) * 9.75 + 0.25
local call, put = black_scholes(S, K, T) -- warm-up: compiles the fused kernel
tycho.flush()
collectgarbage()
local s0, t0, c0 = tycho.stats(), tycho.clock(), os.clock()
for _ = 1, p.iters do
  call, put = black_scholes(S, K, T)
  tycho.flush()
end
local t, c, s1 = tycho.clock() - t0, os.clock() - c0, tycho.stats()
print(string.format("black_scholes np=%d n/rank=%d iters=%d time=%.4f s cpu=%.4f bytes/iter=%.0f "
  .. "msgs/iter=%.2f collectives/iter=%.2f mpi/iter=%.4f", np, p.n, p.iters, t, c,
  (s1.dist_bytes - s0.dist_bytes) / p.iters, (s1.dist_messages - s0.dist_messages) / p.iters,
  (s1.dist_collectives - s0.dist_collectives) / p.iters,
  (s1.dist_wait_ns - s0.dist_wait_ns) * 1e-9 / p.iters))
print(string.format("checksum %.17g", call:sum():item() + put:sum():item()))
