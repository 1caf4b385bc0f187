-- tests/spec/helper.lua — loaded by busted (--helper) before the specs.
--
-- The specs run two ways: inside the `tycho` shell, which defines the global
-- `tycho` (and `require "tycho"` returns it), and under stock lua5.4 with
-- LUA_CPATH pointing at build/lua/tycho.so. Either way `tycho` is global here
-- and `require "tycho"` gives the same table.
tycho = tycho or require "tycho"

-- spec_codegen(isa): whether a process at instruction-set level `isa` (a
-- TYCHO_ISA value; nil or "": this process's level, which its children
-- inherit) generates compiled kernels. The baseline level (TYCHO_ISA=baseline,
-- or a CPU without AVX2) has no generated code (fused_codegen.c): every run is
-- interpreted, with the same values, and the specs that look for kernels
-- expect none there.
function spec_codegen(isa)
  local c = tycho.config()
  if isa == nil or isa == "" then return c.isa ~= "baseline" end
  return isa ~= "baseline" and c.isa_best ~= "baseline"
end

-- spec_lua(code, env): runs the Lua chunk `code` in a fresh process that has
-- tycho (the shell from TYCHO_BIN when set, else lua5.4 with this process's
-- LUA_CPATH), with extra environment variables `env` (a table). Returns the
-- combined output and the exit code. For what one process cannot test on
-- itself: a small memory budget, a crash that must not happen.
function spec_lua(code, env)
  local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write("local tycho = tycho or require 'tycho'\n", code)
  f:close()
  local bin = os.getenv("TYCHO_BIN")
  local cmd = {}
  for k, v in pairs(env or {}) do cmd[#cmd + 1] = k .. "=" .. q(v) end
  if bin and bin ~= "" then
    cmd[#cmd + 1] = q(bin)
  else
    cmd[#cmd + 1] = "LUA_CPATH=" .. q(package.cpath) .. " lua5.4"
  end
  cmd[#cmd + 1] = q(path) .. " 2>&1"
  local p = assert(io.popen(table.concat(cmd, " ")))
  local out = p:read("a")
  local ok, _, code_ = p:close()
  os.remove(path)
  return out, ok and 0 or code_
end

-- spec_run(code, env): spec_lua's output, the process's exit code checked to be 0.
function spec_run(code, env)
  local out, rc = spec_lua(code, env)
  if rc ~= 0 then error("exit code " .. tostring(rc) .. ":\n" .. out, 2) end
  return out
end

-- spec_run_keyed(code, env): spec_run's output as a table of the lines
-- "<key> <rest>" (key: letters and digits), key -> rest, and the output.
function spec_run_keyed(code, env)
  local out = spec_run(code, env)
  local r = {}
  for line in out:gmatch("[^\n]+") do
    local k, rest = line:match("^(%w+)%s+(.*)$")
    if k then r[k] = rest end
  end
  return r, out
end

-- spec_same_bits_as_unfused(it, assert, code, keys, counter, least, why):
-- inside a describe (busted's `it` and `assert` are the spec file's, passed
-- in), the checks of a spec whose keyed lines (spec_run_keyed) must be
-- the unfused launches' bits (TYCHO_FUSE=off, one processor) when run by
-- the interpreter on 1-3 processors, with its line `counter` at least
-- `least` (why: what that count says), and when compiled. Returns the
-- unfused run's lines and output, for the spec's own checks.
function spec_same_bits_as_unfused(it, assert, code, keys, counter, least, why)
  local unfused, uout = spec_run_keyed(code, { TYCHO_FUSE = "off", TYCHO_CPUS = "1" })
  for _, cpus in ipairs({ "1", "2", "3" }) do
    it("gives the unfused launches' bits, interpreted, on " .. cpus .. " processors", function()
      local r, out = spec_run_keyed(code, { TYCHO_CODEGEN = "off", TYCHO_CPUS = cpus })
      for _, k in ipairs(keys) do assert.are.equal(unfused[k], r[k], k .. ":\n" .. out) end
      assert.is_true(tonumber(r[counter]) >= least, why .. ":\n" .. out)
    end)
  end
  it("gives the same bits compiled", function()
    local r, out = spec_run_keyed(code, { TYCHO_CODEGEN = "always", TYCHO_CODEGEN_WAIT = "1",
                                          TYCHO_CACHE_DIR = spec_tmpdir(), TYCHO_CPUS = "2" })
    for _, k in ipairs(keys) do assert.are.equal(unfused[k], r[k], k .. ":\n" .. out) end
  end)
  return unfused, uout
end

-- spec_tmpdir(): a fresh path for a directory (a kernel cache), not yet made.
function spec_tmpdir()
  local p = os.tmpname()
  os.remove(p)
  return p
end

-- SPEC_CG_SETUP and SPEC_CG_STEP: chunks of Lua for the specs that run CG in
-- a fresh process (spec_lua): bench/workloads/cg.lua's loop at 256 x 256 with
-- b = seq - 0.5. The setup defines N, laplacian, vdot, b, x, r, pp and rsold;
-- the step is one iteration (no flush: a spec adds its own). numpy's values
-- after 12 iterations: ||r|| 0.8434686627226252, x.sum() -22.73590052316355,
-- (x * x).sum() 763.7055890140234.
-- SPEC_LAPLACIAN: cg.lua's 5-point Laplacian as a chunk, for the specs that
-- run it in a fresh process.
SPEC_LAPLACIAN = [[
  local function laplacian(v)
    local Av = v * 4.0
    Av[{{2, -1}, {}}] = Av[{{2, -1}, {}}] - v[{{1, -2}, {}}]
    Av[{{1, -2}, {}}] = Av[{{1, -2}, {}}] - v[{{2, -1}, {}}]
    Av[{{}, {2, -1}}] = Av[{{}, {2, -1}}] - v[{{}, {1, -2}}]
    Av[{{}, {1, -2}}] = Av[{{}, {1, -2}}] - v[{{}, {2, -1}}]
    return Av
  end
]]
-- SPEC_ARITH_SETUP: SPEC_LAPLACIAN, then f64 operands for the specs of the
-- interpreter's arithmetic in one pass (mul_add_pairs, op_chains): a, b, c
-- of 3001 elements (no multiple of a vector width), a 0-d alpha, f (a
-- number's exact text) and show(key, y) (a line of y's sum, ends and
-- sum of squares, after a flush).
SPEC_ARITH_SETUP = SPEC_LAPLACIAN .. [[
  local function f(x) return string.format("%a", x) end
  local n = 3001
  local a = tycho.arange(n) * 0.37 - 11.0
  local b = tycho.arange(n) * -0.011 + 2.5
  local c = tycho.sin(tycho.arange(n) * 1.0)
  local alpha = (a[{ 7 }] * 0.001):reshape({})
  local function show(key, y)
    tycho.flush()
    print(key, f(y:sum():item()), f(y[{ 1 }]:item()), f(y[{ -1 }]:item()), f((y * y):sum():item()))
  end
]]
SPEC_CG_SETUP = SPEC_LAPLACIAN .. [[
  local N = 256
  local function vdot(a, b) return (a * b):sum() end
  local u = (tycho.arange(N * N) + 0.5) * 0.6180339887498949
  local b = ((u - tycho.floor(u)) - 0.5):reshape({ N, N })
  local x = tycho.zeros({ N, N })
  local r = b:copy()
  local pp = r
  local rsold = vdot(r, r)
]]
SPEC_CG_STEP = [[
    local Ap = laplacian(pp)
    local alpha = rsold / vdot(pp, Ap)
    x = x + alpha * pp
    r = r - alpha * Ap
    local rsnew = vdot(r, r)
    pp = r + (rsnew / rsold) * pp
    rsold = rsnew
]]

-- SPEC_STENCIL(R, C): a chunk making g, an R x C grid of the values the
-- numpy scripts of the in-place stencil specs use (((i * 37 + j * 11) % 17)
-- * 0.25 - 1.0, 1-based), and its 5-point stencil's views: c (the inside),
-- n, s, w, e. spec_grid(R, C) is the same grid as a table.
SPEC_GRID_INIT = [[
  local function init(R, C)
    local t = {}
    for i = 1, R do
      t[i] = {}
      for j = 1, C do t[i][j] = ((i * 37 + j * 11) % 17) * 0.25 - 1.0 end
    end
    return t
  end
]]
spec_grid = load(SPEC_GRID_INIT .. " return init")()
function SPEC_STENCIL(R, C)
  return SPEC_GRID_INIT .. string.format([[
  local g = tycho.array(init(%d, %d))
  local c, n, s = g[{{2, -2}, {2, -2}}], g[{{1, -3}, {2, -2}}], g[{{3, -1}, {2, -2}}]
  local w, e = g[{{2, -2}, {1, -3}}], g[{{2, -2}, {3, -1}}]
]], R, C)
end

-- spec_switch(name): the on/off variable `name` refuses anything but 0 or 1
-- at start, naming itself and the value.
function spec_switch(name)
  for _, v in ipairs({ "2", "no", "-1" }) do
    local out, rc = spec_lua("print(tycho.zeros({ 2 }):sum():item())", { [name] = v })
    if rc == 0 then error(name .. "=" .. v .. " was accepted: " .. out, 2) end
    if not out:find(name .. " must be 0 or 1, got '" .. v .. "'", 1, true) then
      error(name .. "=" .. v .. ": no message naming it: " .. out, 2)
    end
  end
end

-- spec_same(got, want): a deep comparison of tables of numbers (NaN equals
-- NaN, the path of the first difference in the message); spec_fails(wants,
-- f, ...): f(...) must raise an error containing every string of `wants`.
local function spec_near(a, b)
  if a ~= a and b ~= b then return true end -- both NaN
  return a == b
end

function spec_same(got, want, path)
  path = path or ""
  if type(want) == "table" then
    assert(type(got) == "table", path .. ": expected a table, got " .. tostring(got))
    assert(#got == #want, string.format("%s: expected %d elements, got %d", path, #want, #got))
    for i = 1, #want do spec_same(got[i], want[i], path .. "[" .. i .. "]") end
  elseif type(want) == "number" then
    assert(type(got) == "number", path .. ": expected a number, got " .. tostring(got))
    assert(spec_near(got, want), string.format("%s: got %.17g, expected %.17g", path, got, want))
  else
    assert(got == want, string.format("%s: got %s, expected %s", path, tostring(got), tostring(want)))
  end
end

-- spec_close(got, want, tol, path): got (a store or a value) and want
-- (nested tables or numbers) agree within tol (default 1e-12) relative to
-- max(1, |want|); NaN equals NaN, infinities must be equal.
function spec_close(got, want, tol, path)
  tol, path = tol or 1e-12, path or ""
  if type(got) == "userdata" then got = got.ndim == 0 and got:item() or got:totable() end
  if type(want) == "table" then
    assert(type(got) == "table", path .. ": expected a table, got " .. tostring(got))
    assert(#got == #want, string.format("%s: expected %d elements, got %d", path, #want, #got))
    for i = 1, #want do spec_close(got[i], want[i], tol, path .. "[" .. i .. "]") end
    return
  end
  assert(type(got) == "number", path .. ": expected a number, got " .. tostring(got))
  if want ~= want then return assert(got ~= got, path .. ": expected NaN, got " .. got) end
  if want == math.huge or want == -math.huge then
    return assert(got == want, string.format("%s: got %.17g, expected %.17g", path, got, want))
  end
  local scale = math.max(1, math.abs(want))
  assert(math.abs(got - want) <= tol * scale,
         string.format("%s: got %.17g, expected %.17g (tol %g)", path, got, want, tol))
end

-- spec_fused_with(n, name): the explain entry of a fused launch among the
-- last n whose ops include `name` (e.g. "argmin"), or nil.
function spec_fused_with(n, name)
  for _, e in ipairs(tycho.explain(n)) do
    if e.task == "fused" and e.fused_ops and e.fused_ops:find(name, 1, true) then return e end
  end
  return nil
end

function spec_fails(wants, f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok, "expected an error containing '" .. wants[1] .. "', the call succeeded")
  err = tostring(err)
  for _, w in ipairs(wants) do
    assert(err:find(w, 1, true), "expected '" .. w .. "' in: " .. err)
  end
  return err
end
