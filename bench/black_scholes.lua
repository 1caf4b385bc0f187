-- bench/black_scholes.lua — the tycho side of bench/blackscholes.
--
--   tycho bench/black_scholes.lua [N] [iterations]
--
-- examples/black_scholes.lua's kernel, line for line, on inputs every peer
-- can rebuild exactly: option i (0-based) has u = i + 0.5 and
--   S = frac(u * 0.618...) * 25 + 5, K = frac(u * 0.754...) * 99 + 1,
--   T = frac(u * 0.569...) * 9.75 + 0.25
-- (Roberts' additive recurrence: evenly spread over the cuNumeric ranges).
-- Every step is exact or correctly rounded in f64, so numpy and C price the
-- very same options and the checksums agree to rounding of exp/log and sums.
--
-- Prints "time: <best of iterations> s" (the pricing, ended by a value read)
-- and "checksum: <sum(call)+sum(put)>".
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
local iterations = int_arg(2, 1, 1, "iterations")

local R, V = 0.02, 0.3
local ALPHA_S, ALPHA_K, ALPHA_T = 0.6180339887498949, 0.7548776662466927, 0.5698402909980532

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
  local sqrt_t = tycho.sqrt(T)
  local d1 = (tycho.log(S / K) + T * (R + 0.5 * V * V)) / (sqrt_t * V)
  local d2 = d1 - sqrt_t * V
  local cnd_d1, cnd_d2 = cnd(d1), cnd(d2)
  local k_exp_rt = K * tycho.exp(T * -R)
  local call = S * cnd_d1 - k_exp_rt * cnd_d2
  local put = k_exp_rt * (1.0 - cnd_d2) - S * (1.0 - cnd_d1)
  return call, put
end

local u = tycho.arange(N) + 0.5
local S = frac(u * ALPHA_S) * 25.0 + 5.0
local K = frac(u * ALPHA_K) * 99.0 + 1.0
local T = frac(u * ALPHA_T) * 9.75 + 0.25
u = nil
tycho.flush()

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

local checksum = call:sum():item() + put:sum():item()
print(string.format("black_scholes_tycho: %d options, f64, %d cpus", N, tycho.config().cpus))
print(string.format("time: %.6f s (best of %d)", best, iterations))
print(string.format("options/s: %.4g", N / best))
print(string.format("checksum: %.17g", checksum))
