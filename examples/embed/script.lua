-- examples/embed/script.lua — run by embed_host, which registered the C task
-- mc_integral and set two globals: `freq` (a store over the host's own
-- buffer, attached without a copy) and `samples`. The host reads `result`
-- back when the script ends.

local mc = tycho.tasks.mc_integral -- the host's C task, by name
local estimate = mc(freq, nil, samples) -- out omitted: a new store is made

-- built-in ops on the same stores
local exact = 0.5 - tycho.sin(freq * 2) / (freq * 4)

-- and a Lua task beside the C one: the relative error of each element
local relerr = tycho.task {
  name = "relerr",
  args = { "in", "in", "out" },
  body = function(ctx, est, ref, err)
    for i = ctx.lo, ctx.hi do
      err[i] = math.abs(est[i] - ref[i]) / ref[i]
    end
  end,
}

local abs_err = tycho.max(tycho.abs(estimate - exact)):item()
local rel_err = tycho.max(relerr(estimate, exact)):item()
print(string.format("mc_integral: %d elements x %d samples, max error %.2e (relative %.2e)",
  #freq, samples, abs_err, rel_err))

result = estimate
