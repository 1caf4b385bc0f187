-- examples/schedule_modes.lua — one program under each scheduling favor.
--
--   tycho examples/schedule_modes.lua [N=200000] [hidden=256]
--
-- The window holds independent branches: four chains of element-wise work
-- joined at the end, and the forward pass of a two-layer perceptron on random
-- data. The same launches run under `debug`, `min-peak-memory` and
-- `max-concurrency`; the script prints, for each favor, the waves, the
-- launches that ran beside others, and the simulated peak of transient bytes,
-- and checks that all three give the same results, bit for bit.
local tycho = require "tycho"

local args = arg or {}
local N = math.tointeger(tonumber(args[1] or "") or 200000)
local H = math.tointeger(tonumber(args[2] or "") or 256)
assert(N and N >= 1 and H and H >= 1, "usage: schedule_modes.lua [N] [hidden]")

local function program()
  tycho.seed(7)
  local x = tycho.random(N)
  -- four independent chains: each allocates and frees its own temporaries
  local joined
  for c = 1, 4 do
    local y = tycho.sin(x * c) * 0.5 + tycho.cos(x + c)
    local z = tycho.sqrt(tycho.abs(y) + 1) - y / (c + 1)
    joined = joined and (joined + z) or z
  end
  -- a two-layer perceptron forward pass: 64 samples of 32 features
  local batch = tycho.random({64, 32}) - 0.5
  local w1 = tycho.random({32, H}) - 0.5
  local w2 = tycho.random({H, 10}) - 0.5
  local hidden = tycho.maximum(tycho.dot(batch, w1), 0) -- ReLU
  local out = tycho.dot(hidden, w2)
  local a, b = joined:sum(), out:sum()
  return a, b
end

local function run(favor)
  local a, b
  tycho.flush()
  tycho.parallel({favor = favor, fuse = false}, function()
    a, b = program()
  end)
  tycho.flush()
  local f = tycho.stats().last_flush or {}
  return a:item(), b:item(), f
end

print(string.format("schedule_modes: N = %d, hidden = %d, %d cpus", N, H, tycho.config().cpus))
print(string.format("%-17s %6s %10s %12s %16s", "favor", "waves", "launches", "concurrent",
                    "peak transient"))
local first
for _, favor in ipairs {"debug", "min-peak-memory", "max-concurrency"} do
  local a, b, f = run(favor)
  print(string.format("%-17s %6d %10d %12d %12.1f MiB", favor, f.waves or -1, f.launches or -1,
                      f.concurrent or -1, (f.peak_transient or 0) / 2^20))
  if first then
    assert(a == first[1] and b == first[2], "results differ between favors")
  else
    first = {a, b}
  end
end
print(string.format("results (identical under every favor): %.17g %.17g", first[1], first[2]))
