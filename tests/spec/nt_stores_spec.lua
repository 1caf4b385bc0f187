-- tests/spec/nt_stores_spec.lua — streaming stores in compiled runs.
--
-- A compiled run of 2^21 elements or more whose arguments' bytes exceed the
-- last-level cache (TYCHO_LLC_BYTES here, to force either choice) stores the
-- f64 arguments it only writes (fresh outputs) with non-temporal stores, once
-- per vector at the body's end, the first such argument aligned by a partial
-- vector first (fused_codegen.c, nt_stream, nt_args; docs/fusion.md
-- "Streaming stores"). Only how the values reach memory changes: the same
-- bits as the interpreter, as TYCHO_NT_STORES=0 and as a cache that holds the
-- run, on any number of processors (pieces of 2^21 + 13
-- elements on 3 processors start at unaligned addresses; the Laplacian's
-- inside rows start 8 bytes past a vector). Expected values: numpy, pasted.

local function rel(a, b) return math.abs(a - b) / math.abs(b) end

local cache = spec_tmpdir()
local run = spec_run

-- the kernels of the cache directory (default: the shared one) that stream a store
local function streaming_kernels(dir)
  local p = assert(io.popen("grep -l 'stn(p' '" .. (dir or cache) .. "'/fk-*.c 2>/dev/null"))
  local n = 0
  for _ in p:lines() do n = n + 1 end
  p:close()
  return n
end

-- every setting: compiled with streaming stores (a last-level cache of 1 MiB;
-- TYCHO_NT_STORES=1 whatever the cache), compiled without (0; a cache of
-- 64 GiB that holds every run), the interpreter; on 1 and 3 processors. All
-- print the same line.
local MIB, GIB = 1 << 20, 1 << 30
local function same_everywhere(code)
  local ref
  for _, env in ipairs({
    { TYCHO_CODEGEN = "always", TYCHO_LLC_BYTES = tostring(MIB) },
    { TYCHO_CODEGEN = "always", TYCHO_NT_STORES = "1", TYCHO_LLC_BYTES = tostring(64 * GIB) },
    { TYCHO_CODEGEN = "always", TYCHO_NT_STORES = "0" },
    { TYCHO_CODEGEN = "always", TYCHO_LLC_BYTES = tostring(64 * GIB) },
    { TYCHO_CODEGEN = "off" },
  }) do
    env.TYCHO_CACHE_DIR = cache
    for _, cpus in ipairs({ 1, 3 }) do
      env.TYCHO_CPUS = tostring(cpus)
      local out = run(code, env)
      local line = out:match("^[^\n]*")
      ref = ref or line
      assert.are.equal(ref, line, out)
    end
  end
  return ref
end

-- a (16 MiB) read, b (16 MiB) written: 32 MiB of arguments; b's values, then
-- (after a tab) the runs that had a compiled kernel
local STREAM_CODE = [[
  local n = (1 << 21) + 13
  local a = tycho.arange(n) * 0.5
  tycho.flush()
  local b = a * 3.0 + 1.0
  tycho.flush()
  print(string.format("%a %a %a", b[1], b[n], b:sum():item()), tycho.stats().fused_compiled)
]]

describe("streaming stores", function()
  teardown(function() os.execute("rm -rf '" .. cache .. "'") end)

  it("TYCHO_NT_STORES takes 0, 1 or auto, TYCHO_LLC_BYTES a byte count; another value is an error at start",
     function()
    local out, rc = spec_lua("print(tycho.arange(4):sum():item())", { TYCHO_NT_STORES = "off" })
    assert.are_not.equal(0, rc)
    assert.is_truthy(out:find("TYCHO_NT_STORES must be 0, 1 or auto, got 'off'", 1, true), out)
    out, rc = spec_lua("print(tycho.arange(4):sum():item())", { TYCHO_NT_STORES = "2" })
    assert.are_not.equal(0, rc)
    for _, v in ipairs({ "0k", "-5", "0" }) do
      out, rc = spec_lua("print(tycho.arange(4):sum():item())", { TYCHO_LLC_BYTES = v })
      assert.are_not.equal(0, rc)
      assert.is_truthy(out:find("TYCHO_LLC_BYTES must be a number of bytes >= 1, got '" .. v .. "'", 1, true), out)
    end
    for _, v in ipairs({ "0", "1", "auto", "00" }) do
      out = run("print(tycho.arange(4):sum():item())", { TYCHO_NT_STORES = v, TYCHO_LLC_BYTES = "33554432" })
      assert.are.equal("6", out:match("^(%S+)"))
    end
  end)

  it("streams by the last-level cache: 1 MiB streams, 1 GiB does not, 1 and 00 as at start", function()
    local code = STREAM_CODE
    -- TYCHO_NT_STORES, TYCHO_LLC_BYTES -> whether the run's kernel streams
    for _, c in ipairs({ { nil, MIB, true }, { "auto", 31 * MIB, true }, { "auto", 64 * MIB, false },
                         { nil, GIB, false }, { "1", GIB, true }, { "0", MIB, false }, { "00", MIB, false } }) do
      local dir = os.tmpname()
      os.remove(dir)
      local out = run(code, { TYCHO_CODEGEN = "always", TYCHO_CACHE_DIR = dir, TYCHO_CPUS = "2",
                              TYCHO_NT_STORES = c[1], TYCHO_LLC_BYTES = tostring(c[2]) })
      -- numpy: b = arange(n)*0.5*3+1: b[0], b[-1], b.sum()
      assert.are.equal(string.format("%a %a %a", 1.0, 3145747.0, 3298576302210.0), out:match("^[^\t\n]*"))
      local streams = streaming_kernels(dir)
      os.execute("rm -rf '" .. dir .. "'")
      -- (no kernel at the baseline level)
      assert.are.equal(c[3] and spec_codegen(), streams > 0, (c[1] or "unset") .. " " .. c[2])
    end
  end)

  it("compiles its streaming stores under clang as TYCHO_CC too (its own non-temporal builtin)", function()
    if not os.execute("command -v clang > /dev/null 2>&1") then
      pending("clang is not installed")
      return
    end
    local code = STREAM_CODE
    local dir = os.tmpname()
    os.remove(dir)
    local out = run(code, { TYCHO_CC = "clang", TYCHO_CODEGEN = "always", TYCHO_CODEGEN_WAIT = "1",
                            TYCHO_CACHE_DIR = dir, TYCHO_CPUS = "2", TYCHO_LLC_BYTES = tostring(MIB) })
    local streams = streaming_kernels(dir)
    os.execute("rm -rf '" .. dir .. "'")
    -- numpy: b = arange(n)*0.5*3+1: b[0], b[-1], b.sum(); the run compiled (clang 14 had
    -- no __builtin_ia32_movntpd256: the unit failed and the run stayed interpreted)
    local line, compiled = out:match("^([^\t\n]*)\t(%d+)")
    assert.are.equal(string.format("%a %a %a", 1.0, 3145747.0, 3298576302210.0), line, out)
    if spec_codegen() then
      assert.is_true(tonumber(compiled) >= 1, out)
      assert.is_true(streams >= 1)
    else -- the baseline level: interpreted, the same values
      assert.are.same({ 0, 0 }, { tonumber(compiled), streams }, out)
    end
  end)

  it("flat runs (ty_fk, ty_fk3) of 2^21 + 13 elements: numpy's values, the same bits everywhere", function()
    local line = same_everywhere([[
      local n = (1 << 21) + 13
      local a = tycho.arange(n) * 0.5
      tycho.flush()
      local b = a * 3.0 + 1.0 -- ty_fk
      tycho.flush()
      local c = a * 2.0 - 1.0 -- ty_fk3 with the sum
      local s = (c * c):sum()
      tycho.flush()
      print(string.format("%a %a %a %a %a %a %a", b[1], b[n], b[1000001], b:sum():item(), c[4], c[n],
                          s:item()))
    ]])
    local v = {}
    for w in line:gmatch("%S+") do v[#v + 1] = tonumber(w) end
    -- numpy: a = arange(n) * 0.5; b = a*3+1: b[0], b[-1], b[1000000], b.sum()
    assert.are.same({ 1.0, 3145747.0, 1500001.0, 3298576302210.0 }, { v[1], v[2], v[3], v[4] })
    -- c = a*2-1: c[3], c[-1]; (c*c).sum() = 3.0745079234303104e+18
    assert.are.same({ 2.0, 2097163.0 }, { v[5], v[6] })
    assert.is_true(rel(v[7], 3.0745079234303104e+18) < 1e-12, line)
    assert.are.equal(spec_codegen(), streaming_kernels() >= 2) -- none at the baseline level
  end)

  it("the Laplacian's inside with p.Ap (ty_fk4, rows 8 bytes past a vector) at 1500 x 1500", function()
    local line = same_everywhere([[
      local N = 1500
      local v = ((tycho.arange(N * N) % 97) * 0.01 - 0.3):reshape(N, N)
      tycho.flush()
      local Av = v * 4.0
      Av[{{2, -1}, {}}] = Av[{{2, -1}, {}}] - v[{{1, -2}, {}}]
      Av[{{1, -2}, {}}] = Av[{{1, -2}, {}}] - v[{{2, -1}, {}}]
      Av[{{}, {2, -1}}] = Av[{{}, {2, -1}}] - v[{{}, {1, -2}}]
      Av[{{}, {1, -2}}] = Av[{{}, {1, -2}}] - v[{{}, {2, -1}}]
      local s = (v * Av):sum()
      tycho.flush()
      print(string.format("%a %a %a %a %a %a", s:item(), Av:sum():item(), Av[{1, 1}]:item(), Av[{701, 6}]:item(),
                          Av[{1500, 1500}]:item(), Av[{4, 1499}]:item()))
    ]])
    local v = {}
    for w in line:gmatch("%S+") do v[#v + 1] = tonumber(w) end
    -- numpy (the same v and Laplacian): (v*Av).sum() = 548394.4416000003,
    -- Av.sum() = 1075.0200000000812; Av[0,0], Av[700,5], Av[1499,1499], Av[3,1498]
    assert.is_true(rel(v[1], 548394.4416000003) < 1e-12, line)
    assert.is_true(rel(v[2], 1075.0200000000812) < 1e-9, line)
    assert.are.same({ -1.06, 0.9700000000000002, 1.5400000000000003, 0.97 }, { v[3], v[4], v[5], v[6] })
    local p = assert(io.popen("grep -l 'void ty_fk4' $(grep -l 'stn(p' '" .. cache .. "'/fk-*.c) 2>/dev/null </dev/null"))
    local found = p:read("l") ~= nil
    p:close()
    assert.are.equal(spec_codegen(), found) -- none at the baseline level
  end)

  it("leaves runs below 2^21 elements and in-place updates to plain stores", function()
    local code = [[
      local a = tycho.arange((1 << 21) - 8) * 0.5
      tycho.flush()
      local b = a * 3.0 + 1.0 -- below the bound
      local c = tycho.arange(1 << 21) * 1.0
      tycho.flush()
      c[{}] = c * 2.0 + 1.0 -- in place: c is read and written
      tycho.flush()
      print(string.format("%a %a %a", b[2], c[2], c[1 << 21]))
    ]]
    local before = streaming_kernels()
    local out = run(code, { TYCHO_CODEGEN = "always", TYCHO_CACHE_DIR = cache, TYCHO_CPUS = "2",
                            TYCHO_LLC_BYTES = "1" })
    -- numpy: (arange(2**21-8)*0.5*3+1)[1] = 2.5; (arange(2**21)*2+1)[1], [-1]
    assert.are.equal(string.format("%a %a %a", 2.5, 3.0, 4194303.0), out:match("^[^\n]*"))
    assert.are.equal(before, streaming_kernels())
  end)
end)
