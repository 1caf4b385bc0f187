-- examples/nearest.lua — the distance from every point b_j to the nearest a_i,
-- written the natural way and run under a memory budget (streaming).
--
--   tycho examples/nearest.lua [N] [M] [budget]
--
-- a holds N points (default 100,000), b holds M (default N); the budget
-- defaults to 256MB. The natural program builds the N x M matrix of
-- distances |a_i - b_j| and takes its minimum over the a axis:
--
--   parallel<memory="256MB"> do
--     nearest = tycho.min(tycho.abs(a:expand(2) - b:expand(1)), 1)
--   end
--
-- At N = M = 100,000 that matrix is 80 GB of f64: numpy cannot run this
-- program. Inside the scope tycho defers the launches to the scope's end,
-- fuses them (the matrix lives a block at a time in registers and cache) and,
-- where some intermediate must exist, runs the launches piece by piece so
-- that no more than the budget of it exists at once (see docs/streaming.md;
-- `tycho --explain` shows how each launch ran).
--
-- For comparison the same result is computed by a hand-chunked loop, the way
-- people break such programs up without streaming: blocks of columns of b
-- whose matrix fits the budget, one after another.
--
-- Prints the checksum (the sum of the distances) of both versions, their
-- times, the peak of memory the runtime allocated, and the budget.
local tycho = require "tycho"

local args = arg or {}
local function int_arg(i, default, name)
  if args[i] == nil then return default end
  local v = math.tointeger(tonumber(args[i]))
  if not v or v < 1 then
    error(string.format("%s (argument %d) must be an integer >= 1, got '%s'", name, i, args[i]), 0)
  end
  return v
end
local N = int_arg(1, 100000, "N")
local M = int_arg(2, N, "M")
local budget = args[3] or "256MB"

-- points: a_i = frac(0.618034 i), b_j = frac(0.414214 j + 0.5), in [0, 1)
local a = tycho.arange(N) * 0.6180339887
a = a - tycho.floor(a)
local b = tycho.arange(M) * 0.4142135624 + 0.5
b = b - tycho.floor(b)
tycho.flush()

local function peak_mib() return tycho.memory().peak / 2 ^ 20 end

-- the natural program, streamed
local t0 = tycho.clock()
local nearest
-- (the sugar parallel<memory="256MB"> do ... end takes literals; a budget
-- computed at run time goes through tycho.parallel)
tycho.parallel({memory = budget}, function()
  nearest = tycho.min(tycho.abs(a:expand(2) - b:expand(1)), 1)
end)
local streamed = nearest:sum():item()
local t_streamed = tycho.clock() - t0

-- the hand-chunked loop: columns of b in blocks whose N x block matrix fits
local function parse_size(text)
  local num, unit = tostring(text):match("^%s*([%d%.]+)%s*(%a*)%s*$")
  local scale = {[""] = 1, B = 1, KB = 1e3, MB = 1e6, GB = 1e9, KIB = 2 ^ 10, MIB = 2 ^ 20, GIB = 2 ^ 30}
  local f = num and scale[unit:upper()]
  if not f then error("budget must be a size such as 256MB, got '" .. tostring(text) .. "'", 0) end
  return tonumber(num) * f
end
local bytes = parse_size(budget)
local block = math.max(1, math.min(M, math.floor(bytes / (8 * N * 2))))
t0 = tycho.clock()
local chunked = 0
for lo = 1, M, block do
  local hi = math.min(M, lo + block - 1)
  local bj = b:narrow(1, lo, hi - lo + 1)
  chunked = chunked + tycho.min(tycho.abs(a:expand(2) - bj:expand(1)), 1):sum():item()
end
local t_chunked = tycho.clock() - t0

print(string.format("nearest: N = %d, M = %d, budget %s (the N x M matrix would be %.1f GB)",
                    N, M, budget, N * M * 8 / 1e9))
print(string.format("  streamed      checksum %.17g  %8.3f s", streamed, t_streamed))
print(string.format("  hand-chunked  checksum %.17g  %8.3f s  (blocks of %d columns)", chunked,
                    t_chunked, block))
print(string.format("  peak memory allocated by the runtime: %.1f MiB", peak_mib()))
