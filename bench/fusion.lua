-- bench/fusion.lua — the tycho side of bench/fusion (fusion's speed).
--
--   tycho bench/fusion.lua bs N ITERS       Black-Scholes over N f64 options
--   tycho bench/fusion.lua b3c N ITERS      a = b + 3*c (a fresh store each time)
--   tycho bench/fusion.lua b3c_into N ITERS a[{}] = b + 3*c (into an existing store)
--   tycho bench/fusion.lua chain6 N ITERS   a = ((((b*1.5 + c)*0.5 - b)*c) + 2) * 0.25
--   tycho bench/fusion.lua chain6_into N ITERS  the same into an existing store (a[{}] = ...)
--   tycho bench/fusion.lua peak N           peak bytes of z = a*2 + b*3 + c (issue 5: inputs
--                                           + output, the intermediates never allocated)
--   tycho bench/fusion.lua small ITERS      10 ops on 1,000 elements per iteration and a
--                                           flush per iteration (as a value read would)
--                                           (2,000 iterations per timing; per-op time)
--   tycho bench/fusion.lua small_window ITERS  the same without the flush: the
--                                           window flushes every 64 launches
--
-- Fusion and fast math come from the command line or the environment
-- (TYCHO_FUSE, TYCHO_FASTMATH), so the same script measures every variant.
-- Prints "time: <best of ITERS> s", "checksum: <value>" and, for bs, the
-- first iteration's time (it includes compiling the fused kernel when it is
-- not in the kernel cache yet).
--
-- Black-Scholes is bench/black_scholes.lua's kernel on its deterministic
-- inputs (option i: u = i + 0.5, S = frac(u*0.618..)*25 + 5, ...), so the
-- checksums match the C and numpy peers'.
local tycho = tycho or require "tycho"

local what = arg[1] or "bs"
local N = math.tointeger(tonumber(arg[2] or "")) or 10000000
local ITERS = math.tointeger(tonumber(arg[3] or "")) or 3
if what == "small" or what == "small_window" then -- small ITERS
  ITERS = math.tointeger(tonumber(arg[2] or "")) or 3
end

local function frac(x) return x - tycho.floor(x) end

local function cnd(d)
  local A1, A2, A3, A4, A5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429
  local RSQRT2PI = 0.39894228040143267793994605993438
  local k = 1.0 / (tycho.abs(d) * 0.2316419 + 1.0)
  local c = tycho.exp(d * -0.5 * d) * RSQRT2PI
            * (k * (k * (k * (k * (k * A5 + A4) + A3) + A2) + A1))
  return tycho.where(d:gt(0), 1.0 - c, c)
end

local function black_scholes(S, K, T)
  local R, V = 0.02, 0.3
  local sqrt_t = tycho.sqrt(T)
  local d1 = (tycho.log(S / K) + T * (R + 0.5 * V * V)) / (sqrt_t * V)
  local d2 = d1 - sqrt_t * V
  local cnd_d1, cnd_d2 = cnd(d1), cnd(d2)
  local k_exp_rt = K * tycho.exp(T * -R)
  local call = S * cnd_d1 - k_exp_rt * cnd_d2
  local put = k_exp_rt * (1.0 - cnd_d2) - S * (1.0 - cnd_d1)
  return call, put
end

-- best time of ITERS runs of f (each ended by a flush), and the first time
local function timed(f)
  local best, first, result = math.huge, nil, nil
  for i = 1, ITERS do
    result = nil
    collectgarbage() -- the previous iteration's stores go now, not during the timing
    local t0 = tycho.clock()
    result = f()
    tycho.flush()
    local dt = tycho.clock() - t0
    first = first or dt
    best = math.min(best, dt)
  end
  return best, first, result
end

local function report(best, first, checksum, extra)
  print(string.format("fusion_%s: N=%d, %d cpus%s", what, N, tycho.config().cpus, extra or ""))
  print(string.format("time: %.9f s (best of %d)", best, ITERS))
  print(string.format("first: %.9f s", first))
  print(string.format("checksum: %.17g", checksum))
end

if what == "bs" then
  local u = tycho.arange(N) + 0.5
  local S = frac(u * 0.6180339887498949) * 25.0 + 5.0
  local K = frac(u * 0.7548776662466927) * 99.0 + 1.0
  local T = frac(u * 0.5698402909980532) * 9.75 + 0.25
  u = nil
  tycho.flush()
  local call, put
  local best, first = timed(function()
    call, put = nil, nil
    call, put = black_scholes(S, K, T)
    return call
  end)
  report(best, first, call:sum():item() + put:sum():item())
elseif what == "b3c" or what == "b3c_into" or what == "chain6" or what == "chain6_into" then
  -- the peer's inputs (bench/fusion_peers.c): b = (i % 1000) * 0.001, c = (i % 777) * 0.002
  local i = tycho.arange(N)
  local b = (i % 1000) * 0.001
  local c = (i % 777) * 0.002
  i = nil
  local a = what:find("_into") and tycho.zeros(N) or nil
  tycho.flush()
  local best, first, r = timed(function()
    if what == "b3c" then return b + 3 * c end
    if what == "b3c_into" then
      a[{}] = b + 3 * c
      return a
    end
    if what == "chain6_into" then
      a[{}] = ((((b * 1.5 + c) * 0.5 - b) * c) + 2) * 0.25
      return a
    end
    return ((((b * 1.5 + c) * 0.5 - b) * c) + 2) * 0.25
  end)
  report(best, first, r:sum():item())
elseif what == "peak" then
  local a, b, c = tycho.random(N), tycho.random(N), tycho.random(N)
  tycho.flush()
  local z = a * 2 + b * 3 + c
  tycho.flush()
  local m, st = tycho.memory(), tycho.stats()
  print(string.format("fusion_peak: N=%d, %d cpus", N, tycho.config().cpus))
  print(string.format("peak: %d bytes", m.peak))
  print(string.format("inputs+output: %d bytes", 4 * 8 * N))
  print(string.format("elided: %d bytes", st.bytes_elided or -1))
  print("time: 0")
  print(string.format("checksum: %.17g", z[1]))
elseif what == "small" or what == "small_window" then
  -- small: a value read every iteration (a flush per 10 ops, the worst case);
  -- small_window: the same program without it (the window flushes when full)
  local per_iteration = what == "small"
  N = 1000
  local a, b = tycho.random(N), tycho.random(N)
  tycho.flush()
  local reps = 2000
  local best, first, r = timed(function()
    local y
    for _ = 1, reps do
      local x = a * 1.0001 + b
      x = x * x - a
      x = x / (b + 1)
      x = tycho.exp(x * 0.1) + 1
      y = x * 2 - a -- 10 operations
      if per_iteration then tycho.flush() end
    end
    return y
  end)
  report(best / (reps * 10), first / (reps * 10), r:sum():item(), ", time is per operation")
else
  error("bench/fusion.lua: unknown workload '" .. tostring(what) .. "' (bs, b3c, b3c_into, chain6, chain6_into, peak, small, small_window)", 0)
end
