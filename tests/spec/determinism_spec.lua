-- tests/spec/determinism_spec.lua — the examples print the same results, to
-- the last bit, whatever the processors and the parallel mode.
--
-- Each example runs in its own `tycho` process (TYCHO_BIN) under --cpus 1, 3
-- and 8 in every --parallel mode (auto, all, single, task), and under
-- --fuse off and --overdecompose 3, with arguments small enough to finish
-- fast but large enough that launches split: float sums over several ordered
-- tiles (65536 elements each), matmul over several row blocks and over k
-- split into chunks (X'X of a tall X). The examples
-- print their results with %.17g (every bit of a double); the lines that
-- report the run itself (times, speedups, the cpu count, scheduling and
-- memory figures) are dropped and the rest must be identical.
local bin = os.getenv("TYCHO_BIN")
local src = os.getenv("TYCHO_SOURCE_DIR") or "../.."

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- Runs `tycho <flags...> <example> <args...>`; returns its output and exit code.
local function run(flags, script, args)
  local parts = {q(bin)}
  for _, a in ipairs(flags) do parts[#parts + 1] = q(a) end
  parts[#parts + 1] = q(src .. "/examples/" .. script)
  for _, a in ipairs(args) do parts[#parts + 1] = q(a) end
  local f = assert(io.popen(table.concat(parts, " ") .. " 2>&1"))
  local out = f:read("a")
  local ok, _, code = f:close()
  return out, ok and 0 or code
end

-- The result lines of an output: checksums, sums, coefficient lists,
-- results; parenthesised remarks and trailing times removed.
local function results(out)
  local keep = {}
  for line in out:gmatch("[^\n]+") do
    if line:find("checksum", 1, true) or line:find("sum of", 1, true) or line:find("results", 1, true)
       or line:find("{", 1, true) or line:find("recovered", 1, true) then
      line = line:gsub("%s*%b()", ""):gsub("%s+[%d.]+ s$", "")
      keep[#keep + 1] = line
    end
  end
  return table.concat(keep, "\n")
end

local CONFIGS = {}
for _, cpus in ipairs({1, 3, 8}) do
  for _, mode in ipairs({"auto", "all", "single", "task"}) do
    CONFIGS[#CONFIGS + 1] = {"--cpus", tostring(cpus), "--parallel", mode}
  end
end
CONFIGS[#CONFIGS + 1] = {"--cpus", "3", "--fuse", "off"}
CONFIGS[#CONFIGS + 1] = {"--cpus", "8", "--parallel", "all", "--overdecompose", "3"}

local EXAMPLES = {
  {"black_scholes.lua", {"150000", "f64", "1"}},  -- sums of 150000: 3 tiles
  {"black_scholes.lua", {"150000", "f32", "1"}},
  {"heavy_task.lua", {"200", "50"}},
  {"regression.lua", {"30000", "400"}},           -- X * b: 5 row blocks
  {"regression.lua", {"90000", "400"}},           -- X'X: k split into 2 chunks
  {"schedule_modes.lua", {"20000", "16"}},
  {"stencil.lua", {"300", "10"}},                 -- the final sum: 2 tiles
  {"nearest.lua", {"3000", "2000", "2MB"}},       -- streamed under a budget
}

describe("examples give the same bits", function()
  if not bin then
    pending("TYCHO_BIN is not set (run the specs through ctest)")
    return
  end

  for _, ex in ipairs(EXAMPLES) do
    local script, args = ex[1], ex[2]
    it(script .. " " .. table.concat(args, " ") .. " under every --cpus and --parallel", function()
      local ref, ref_flags
      for _, flags in ipairs(CONFIGS) do
        local out, code = run(flags, script, args)
        assert(code == 0, script .. " " .. table.concat(flags, " ") .. " exited with " ..
               tostring(code) .. ":\n" .. out)
        local got = results(out)
        assert(got:find("%d%d%d%d%d%d%d"), "no result printed with its digits in:\n" .. out)
        if ref then
          assert(got == ref, string.format("%s: results differ\n%s:\n%s\n%s:\n%s", script,
                 table.concat(ref_flags, " "), ref, table.concat(flags, " "), got))
        else
          ref, ref_flags = got, flags
        end
      end
    end)
  end
end)
