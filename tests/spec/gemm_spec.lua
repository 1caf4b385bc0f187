-- tests/spec/gemm_spec.lua — a float matrix product through OpenBLAS
-- (kernels_linalg.c): numpy's values, and the same bits under any --cpus and
-- --parallel mode (issue 19). OpenBLAS's bits for an element depend on the
-- call that computes it: measured with 0.3.21 on the AMD EPYC (its
-- Cooperlake kernels), C = A B at 1023 x 777 x 1531 computed by 2, 3, 5 or 8
-- row-block calls differs from one call in 3..71 elements (also with the
-- block edges on multiples of 64 rows), by 2 column-block calls in 6783, and
-- one call on 2, 3 or 4 threads in ~330000 of the 794871 (at 4096^3: 2 and 4
-- threads the same bits, 3 threads 44794 elements apart). So tycho computes
-- C in row blocks fixed by the shape (ty__matmul_blocks: 8 blocks here,
-- rows 1-127, then 128 rows each), each by one single-threaded call,
-- whichever processor runs it; this spec runs that shape on 1, 2 and 3
-- processors.
-- Expected values: numpy's A @ B from the same inputs (numpy 1.24).

-- frac((i + 0.5) * a), i from 0 (bench/workloads/common.lua's seq)
local SEQ = [[
local function seq(n, a)
  local u = (tycho.arange(n) + 0.5) * a
  return u - tycho.floor(u)
end
local A = (seq(1023 * 1531, 0.6180339887498949) - 0.3):reshape({ 1023, 1531 })
local B = (seq(1531 * 777, 0.7548776662466927) - 0.4):reshape({ 1531, 777 })
]]

local function close(got, want, rtol)
  assert(math.abs(got - want) <= rtol * math.abs(want),
         string.format("%.17g is not %.17g within %g", got, want, rtol))
end

describe("a matrix product of several row blocks", function()
  local env = setmetatable({ tycho = tycho }, { __index = _G })
  local A, B = load(SEQ .. "return A, B", "seq", "t", env)()

  it("gives numpy's A @ B in f64", function()
    local C = A:dot(B)
    assert.are.same({ 1023, 777 }, C.shape)
    close(C[{ 1, 1 }]:item(), 31.101467479362174, 1e-13)
    close(C[{ 512, 400 }]:item(), 28.39209539744131, 1e-13)
    close(C[{ 1023, 777 }]:item(), 32.59868776948629, 1e-13)
    close(C:sum():item(), 24338868.84718261, 1e-13)
  end)

  it("gives numpy's A @ B in f32", function()
    local C = A:astype("f32"):dot(B:astype("f32"))
    assert.are.equal("f32", C.dtype)
    close(C[{ 1, 1 }]:item(), 31.10146713256836, 1e-5)
    close(C[{ 512, 400 }]:item(), 28.3920955657959, 1e-5)
    close(C[{ 1023, 777 }]:item(), 32.59868621826172, 1e-5)
    close(C:astype("f64"):sum():item(), 24338868.86861229, 1e-5)
  end)

  it("gives the same bits under any --cpus and --parallel mode", function()
    local code = SEQ .. [[
      for _, t in ipairs({ "f64", "f32" }) do
        local C = A:astype(t):dot(B:astype(t)):astype("f64")
        print(string.format("%a %a %a %a %a", C[{ 1, 1 }]:item(), C[{ 128, 777 }]:item(),
                            C[{ 129, 1 }]:item(), C[{ 1023, 777 }]:item(), C:sum():item()))
        -- every element's bits in one number (integers wrap in Lua 5.4)
        local h = 0
        for _, row in ipairs(C:totable()) do
          for _, v in ipairs(row) do h = h * 31 + string.unpack("<i8", string.pack("<d", v)) end
        end
        print(h)
      end
    ]]
    local ref = spec_lua(code, { TYCHO_CPUS = "1" })
    assert(ref:find("0x1%.") and select(2, ref:gsub("\n", "")) == 4, ref)
    for _, e in ipairs({ { TYCHO_CPUS = "2" }, { TYCHO_CPUS = "3", TYCHO_PARALLEL = "all" },
                         { TYCHO_CPUS = "3", TYCHO_PARALLEL = "all", TYCHO_OVERDECOMPOSE = "3" },
                         { TYCHO_CPUS = "2", TYCHO_PARALLEL = "single" } }) do
      assert.are.equal(ref, spec_lua(code, e))
    end
  end)
end)
