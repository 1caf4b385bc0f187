-- tests/spec/body_lanes_spec.lua — a flat run of at least 16 sub-operations
-- compiles with its loop over interleaved vectors (fused_codegen.c,
-- body_lanes, CG_LANES_MIN_SUBS): eight for a chain that holds one value at
-- a time, fewer (or none) where the copies of the values a body holds at
-- once would not fit the vector registers (lanes_for). Every element still
-- goes through the same operations in the same order, so the values are the
-- interpreter's bits, on 1 and 3 processors, for lengths that leave every
-- kind of tail (less than one vector, less than the lanes, none). A short
-- run keeps one vector a loop.

local cache = spec_tmpdir()
local run = spec_run

local function kernels(pattern, dir)
  local p = assert(io.popen("grep -l '" .. pattern .. "' '" .. (dir or cache) .. "'/fk-*.c 2>/dev/null"))
  local n = 0
  for _ in p:lines() do n = n + 1 end
  p:close()
  return n
end

-- The lines `code` prints (`lines` + 1 of them) interpreted on 3 processors,
-- and compiled into the cache `dir` on 1 and on 3: the same text.
local function same_bits(code, lines, dir)
  local want = run(code, { TYCHO_CODEGEN = "off", TYCHO_CPUS = "3" })
  assert.are.equal(lines, select(2, want:gsub("\n", "")))
  for _, cpus in ipairs({ "1", "3" }) do
    assert.are.equal(want, run(code, { TYCHO_CODEGEN = "always", TYCHO_CACHE_DIR = dir, TYCHO_CPUS = cpus }))
  end
end

describe("a long flat run compiled in lanes", function()
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
    same_bits(code, 5, cache)
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

  it("gives a chain eight lanes and a wide body fewer, with the same bits", function()
    -- a chain holds one value at a time (20 sub-operations); the wide body
    -- holds ten products of x at once, then adds them (20 sub-operations)
    local chain = [[
      for _ = 1, 10 do y = y * 0.999 + 0.001 end
    ]]
    local wide = [[
      local t = {}
      for j = 1, 10 do t[j] = x * (1 + j / 16) end
      y = t[1]
      for j = 2, 10 do y = y + t[j] end
      y = y * 0.5
    ]]
    for _, case in ipairs({ { chain, true }, { wide, false } }) do
      local dir = spec_tmpdir()
      local code = [[
        local out = {}
        for _, n in ipairs({ 5, 67, 1000 }) do
          local x = (tycho.arange(n) * 0.37) % 1.9 - 0.6
          tycho.flush()
          local y
          for _ = 1, 10 do
            y = x
            ]] .. case[1] .. [[
            tycho.flush()
          end
          out[#out + 1] = string.format("%a %a", y:sum():item(), y[{ n }]:item())
        end
        print(table.concat(out, "\n"))
      ]]
      same_bits(code, 3, dir)
      if spec_codegen() then
        assert.is_true(kernels("void ty_fk", dir) > 0)
        assert.are.equal(case[2], kernels("char \\*pl\\[8\\]", dir) > 0, case[2] and "a chain in eight lanes"
          or "ten values a lane do not fit eight lanes")
      end
      os.execute("rm -rf '" .. dir .. "'")
    end
  end)
end)
