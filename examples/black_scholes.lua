-- examples/black_scholes.lua — European option pricing, the cuNumeric benchmark.
--
--   tycho examples/black_scholes.lua [N] [dtype] [iterations]
--
-- N options (default 10_000_000) of dtype f64 (default) or f32, with the
-- cuNumeric benchmark's inputs: spot price S uniform in [5, 30], strike K in
-- [1, 100], time to expiry T in [0.25, 10] years, rate R = 0.02, volatility
-- V = 0.3. Prices the call and the put of every option with the Black-Scholes
-- formula; the cumulative normal distribution is the Abramowitz-Stegun
-- polynomial (error below 7.5e-8), as in cuNumeric's black_scholes.py.
--
-- Prints the time of the pricing (the best of `iterations` runs, default 1),
-- options per second, the sums of the call and of the put prices, and a
-- checksum: their total.
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
local N = int_arg(1, 10000000, 1, "N")
local dtype = args[2] or "f64"
if dtype ~= "f64" and dtype ~= "f32" then
  error("dtype (argument 2) must be f64 or f32, got '" .. dtype .. "'", 0)
end
local iterations = int_arg(3, 1, 1, "iterations")

local R, V = 0.02, 0.3

-- Uniform in [lo, hi): a Lua number next to a store keeps the store's dtype.
local function uniform(lo, hi)
  return tycho.random(N, dtype) * (hi - lo) + lo
end

-- Standard normal CDF, Abramowitz & Stegun 26.2.17.
local function cnd(d)
  local A1, A2, A3, A4, A5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429
  local RSQRT2PI = 0.39894228040143267793994605993438
  local k = 1.0 / (tycho.abs(d) * 0.2316419 + 1.0)
  local c = tycho.exp(d * -0.5 * d) * RSQRT2PI
            * (k * (k * (k * (k * (k * A5 + A4) + A3) + A2) + A1))
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

tycho.seed(42)
local S, K, T = uniform(5, 30), uniform(1, 100), uniform(0.25, 10)
tycho.flush() -- the inputs are not part of the timing

local best, call, put = math.huge, nil, nil
for _ = 1, iterations do
  call, put = nil, nil
  collectgarbage() -- the previous iteration's stores go now, not during the timing
  local t0 = tycho.clock()
  call, put = black_scholes(S, K, T)
  tycho.flush()
  local _ = call[N] + put[N] -- a value read: every deferred launch has run
  best = math.min(best, tycho.clock() - t0)
end

local call_sum, put_sum = call:sum():item(), put:sum():item()
print(string.format("black_scholes: %d options, %s, %d cpus", N, dtype, tycho.config().cpus))
print(string.format("time: %.6f s (best of %d)", best, iterations))
print(string.format("options/s: %.4g", N / best))
print(string.format("sum of calls: %.17g", call_sum))
print(string.format("sum of puts: %.17g", put_sum))
print(string.format("checksum: %.17g", call_sum + put_sum))
