-- tests/spec/body_lanes_spec.lua — a flat run of at least 16 sub-operations
-- compiles with its loop over four interleaved vectors (fused_codegen.c,
-- body_lanes, CG_LANES_MIN_SUBS): every element still goes through the same
-- operations in the same order, so the values are the interpreter's bits, on
-- 1 and 3 processors, for lengths that leave every kind of tail (less than
-- one vector, less than four, none). A short run keeps one vector a loop.

local cache = spec_tmpdir()
local run = spec_run

local function kernels(pattern)
  local p = assert(io.popen("grep -l '" .. pattern .. "' '" .. cache .. "'/fk-*.c 2>/dev/null"))
  local n = 0
  for _ in p:lines() do n = n + 1 end
  p:close()
  return n
end

describe("a long flat run compiled in four lanes", function()
  it("gives the interpreter's bits, and a short run keeps one vector", function()
    local code = [[
      local out = {}
      for _, n in ipairs({ 3, 13, 64, 1000, 1003 }) do
        local x = (tycho.arange(n) * 0.37) % 1.9 - 0.6
        tycho.flush()
        local y, z
        for _ = 1, 10 do -- small runs compile from their structure's 8th sight
          y = x
          for _ = 1, 10 do y = y * 0.999 + 0.001 end                -- 20 sub-operations
          y = tycho.maximum(y * 1.5 - 0.25, x) - tycho.abs(x) * 0.5  -- compares, abs
          tycho.flush()
          z = x * 2.0 + 1.0                                          -- a short run
          tycho.flush()
        end
        out[#out + 1] = string.format("%a %a %a %a", y:sum():item(), y[{ n }]:item(),
                                      z:sum():item(), (y * z):sum():item())
      end
      print(table.concat(out, "\n"))
    ]]
    local want = run(code, { TYCHO_CODEGEN = "off", TYCHO_CPUS = "3" })
    assert.are.equal(5, select(2, want:gsub("\n", "")))
    for _, cpus in ipairs({ "1", "3" }) do
      assert.are.equal(want, run(code, { TYCHO_CODEGEN = "always", TYCHO_CACHE_DIR = cache, TYCHO_CPUS = cpus }))
    end
    -- the long run's kernels have lanes; some kernel (the short run's) has none
    local total = kernels("void ty_fk")
    if spec_codegen() then
      assert.is_true(kernels("body_lanes(pl") > 0)
      assert.is_true(total > kernels("body_lanes(pl"), "every kernel has lanes")
    else
      assert.are.equal(0, total) -- the baseline level: interpreted, the same bits
    end
    os.execute("rm -rf '" .. cache .. "'")
  end)
end)
