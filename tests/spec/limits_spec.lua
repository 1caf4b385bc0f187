-- tests/spec/limits_spec.lua — every documented limit (docs/limits.md) at
-- the limit (works) and one past it (a Lua error or a shell message naming
-- the limit; never a crash), and the runtime still computes afterwards.
--
-- One table drives it: each entry has `at` (must succeed; may return a
-- value checked against `value`), `past` (must fail) and `says` (a plain
-- substring of the failure). Shell options go through a child `tycho`.

local BIN = assert(os.getenv("TYCHO_BIN"), "TYCHO_BIN must name the tycho executable")

local function q(s) return "'" .. tostring(s):gsub("'", [['\'']]) .. "'" end

-- Run `tycho args...` with env (a table); returns output (stdout+stderr), exit status.
local function shell(args, env)
  local parts = { "env -u TYCHO_CPUS -u TYCHO_WINDOW -u TYCHO_OMPS -u TYCHO_OMPTHREADS" }
  for k, v in pairs(env or {}) do parts[#parts + 1] = k .. "=" .. q(v) end
  parts[#parts + 1] = q(BIN)
  for _, a in ipairs(args) do parts[#parts + 1] = q(a) end
  local p = assert(io.popen(table.concat(parts, " ") .. " </dev/null 2>&1"))
  local out = p:read("a")
  local _, _, code = p:close()
  return out, code
end

-- A shell run that must print `want` (at the limit) or fail with `says`.
local function shell_ok(args, env, want)
  return function()
    local out, code = shell(args, env)
    if code ~= 0 then error(out, 0) end
    return (out:gsub("\n$", ""))
  end, want
end
local function shell_fails(args, env)
  return function()
    local out, code = shell(args, env)
    if code == 0 then return out end
    assert(code == 1, "exit status " .. tostring(code) .. ": " .. out) -- a message, not a crash
    error(out, 0)
  end
end

local function ones(n) local t = {} for i = 1, n do t[i] = 1 end return t end
local function nest(n) local t = 1 for _ = 1, n do t = { t } end return t end
local function rep(n, v) local t = {} for i = 1, n do t[i] = v end return t end

local n_uniq = 0
local function uniq(p) n_uniq = n_uniq + 1 return p .. "_lim" .. n_uniq end

-- A task with n argument kinds: one "out" then n-1 of `kind`.
local function task_with(n, kind)
  local args = rep(n, kind)
  args[1] = "out"
  return tycho.task { name = uniq("args"), args = args,
                      body = function(ctx, y) for i = ctx.lo, ctx.hi do y[i] = 1 end end }
end

-- Scopes open n deep (closed in any case); returns the runtime's depth.
local function scopes(n)
  local list, depth = {}, nil
  local ok, err = pcall(function() for i = 1, n do list[i] = tycho.parallel { mode = "all" } end end)
  depth = select(2, tycho._scopes())
  for i = #list, 1, -1 do list[i]:close() end
  if not ok then error(err, 0) end
  return depth
end

-- n nested parallel<...> do blocks in one chunk.
local function sugar_scopes(n)
  local src = string.rep("parallel<mode=all> do ", n) .. "x = select(2, tycho._scopes()) " ..
              string.rep("end ", n)
  local f = assert(load(src, "=nested"))
  x = nil
  f()
  return x
end

-- A body capturing a chain of n <const> functions.
local function const_chain(n)
  local src = { "local f0 <const> = function() return 0 end" }
  for i = 1, n do
    src[#src + 1] = string.format("local f%d <const> = function() return f%d() + 1 end", i, i - 1)
  end
  src[#src + 1] = string.format("return tycho.task { name = %q, args = { 'out' }, " ..
                                "body = function(ctx, y) y[ctx.lo] = f%d() end }", uniq("chain"), n)
  local t = assert(load(table.concat(src, "\n"), "=chain"))()
  return t(tycho.zeros(1))[1]
end

local S16 = nil -- a rank-16 store, made on first use
local function s16() S16 = S16 or tycho.zeros(ones(16)) + 1 return S16 end

local LIMITS = {
  -- rank: TY_MAX_RANK = 16
  { "rank of a new store", at = function() return #tycho.zeros(ones(16)).shape end, value = 16,
    past = function() return tycho.zeros(ones(17)) end,
    says = "tycho.zeros: shape has 17 dimensions, at most 16 are supported" },
  { "rank through expand", at = function() return tycho.zeros(ones(15)):expand(1).ndim end, value = 16,
    past = function() return s16():expand(1) end,
    says = "tycho.expand: the store already has 16 dimensions, the most supported" },
  { "rank through reshape", at = function() return tycho.zeros(1):reshape(ones(16)).ndim end,
    value = 16, past = function() return tycho.zeros(1):reshape(ones(17)) end,
    says = "tycho.reshape: shape has 17 dimensions, at most 16 are supported" },
  { "rank of tycho.array", at = function() return tycho.array(nest(16)).ndim end, value = 16,
    past = function() return tycho.array(nest(17)) end,
    says = "tycho.array: the table is nested more than 16 deep (at most 16 dimensions)" },
  { "indices of a store", at = function() return s16()[ones(16)]:item() end, value = 1,
    past = function() return s16()[ones(17)] end,
    says = "too many indices (17) for a store of rank 16" },
  { "rank of a computation", at = function() return tycho.sum(tycho.exp(s16() - 1) * 2, 16):sum():item() end,
    value = 2, past = function() return tycho.sum(s16(), 17) end, says = "out of range for a store of rank 16" },
  { "rank of a .npy file", at = function()
      local path = os.tmpname()
      tycho.save(path, s16())
      local v = tycho.load(path):sum():item()
      os.remove(path)
      return v
    end, value = 1,
    past = function()
      local path = os.tmpname()
      local f = assert(io.open(path, "wb"))
      local h = "{'descr': '<f8', 'fortran_order': False, 'shape': (" .. string.rep("1, ", 17) .. "), }"
      h = h .. string.rep(" ", 63 - (10 + #h) % 64) .. "\n"
      f:write("\x93NUMPY\x01\x00", string.char(#h % 256, #h // 256), h, string.rep("\0", 8))
      f:close()
      local ok, err = pcall(tycho.load, path)
      os.remove(path)
      if not ok then error(err, 0) end
    end, says = "the shape has more than 16 dimensions (tycho's rank limit)" },
  { "rank of a Lua task's domain and its tiles", at = function()
      local t = tycho.task { name = uniq("r16"), args = { "in", "out" },
        body = function(ctx, x, y)
          local i = {}
          for d = 1, 16 do i[d] = ctx:range(d) end
          y[i] = x[i] + x:get(table.unpack(i))
        end }
      return t(s16()):sum():item()
    end, value = 2,
    past = function()
      local t = tycho.task { name = uniq("r17"), args = { "in", "out" },
        body = function(ctx, x, y) y[{ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 }] = 1 end }
      t(s16())
      tycho.flush()
    end, says = "has rank 16, got 17 indices" },

  -- arguments of a task: TY_MAX_ARGS = 64 (stores and scalars together)
  { "arguments of a task", at = function() return #task_with(64, "in").args end, value = 64,
    past = function() return task_with(65, "in") end, says = "65 arguments, at most 64 are supported" },
  { "store arguments of one launch", at = function()
      local t = task_with(64, "in")
      local xs = { tycho.zeros(2) }
      for i = 2, 64 do xs[i] = tycho.full({ 2 }, i) end
      return t(table.unpack(xs)):sum():item()
    end, value = 2,
    past = function() return task_with(65, "inout") end, says = "at most 64 are supported" },
  { "scalar arguments of one launch", at = function()
      local t = task_with(64, "scalar")
      return t(tycho.zeros(1), table.unpack(rep(63, 2.5)))[1]
    end, value = 1,
    past = function() return task_with(65, "scalar") end, says = "at most 64 are supported" },
  -- packed scalars: 8 + 9 per scalar + each string and its NUL <= TY_MAX_SCALAR_BYTES = 4096
  { "bytes of a launch's scalars", at = function()
      local t = tycho.task { name = uniq("str"), args = { "out", "scalar" },
        body = function(ctx, y, s) y[ctx.lo] = #s end }
      return t(tycho.zeros(1), string.rep("s", 4096 - 8 - 9 - 1))[1]
    end, value = 4078,
    past = function()
      local t = tycho.task { name = uniq("str"), args = { "out", "scalar" }, body = function() end }
      return t(tycho.zeros(1), string.rep("s", 4096 - 8 - 9))
    end, says = "the scalar arguments take more than 4096 bytes" },

  -- names: TY_MAX_NAME = 64 bytes with the NUL
  { "length of a task name", at = function()
      return #tycho.task { name = string.rep("n", 63), args = { "out" }, body = function() end }.name
    end, value = 63,
    past = function() return tycho.task { name = string.rep("m", 64), args = { "out" }, body = function() end } end,
    says = "is longer than 63 bytes" },

  -- scopes: TY_MAX_SCOPES = 64
  { "scopes open at once", at = function() return scopes(64) end, value = 64,
    past = function() return scopes(65) end, says = "tycho.parallel: scopes nest 64 deep at most" },
  { "nested parallel<...> do blocks", at = function() return sugar_scopes(64) end, value = 64,
    past = function() return sugar_scopes(65) end, says = "scopes nest 64 deep at most" },

  -- <const> functions a body carries: 16 deep (lbody.c)
  { "<const> functions nested in a body", at = function() return const_chain(15) end, value = 15,
    past = function() return const_chain(17) end, says = "captured <const> functions nest deeper than 16" },

  -- policy values
  { "overdecompose", at = function()
      return tycho.sqrt(tycho.ones(8), { mode = "all", overdecompose = 4096 }):sum():item()
    end, value = 8,
    past = function() return tycho.sqrt(tycho.ones(8), { overdecompose = 4097 }) end,
    says = "overdecompose must be an integer in 1..4096, got '4097'" },
  { "a sugar value's length", at = function()
      local f, err = load("parallel<min_chunk=\"" .. string.rep("9", 63) .. "\"> do end", "=v")
      assert(not f and err:find("min_chunk", 1, true) and not err:find("too long", 1, true), err)
      return true
    end, value = true,
    past = function()
      local f, err = load("parallel<min_chunk=\"" .. string.rep("9", 64) .. "\"> do end", "=v")
      if not f then error(err, 0) end
    end, says = "the value of 'min_chunk' is too long (64 bytes)" },

  -- sizes: bytes must fit in 64 bits, and the memory budget
  { "bytes of a store", at = function() return tycho.zeros({ 1024, 1024 }, "u8").size end, value = 1048576,
    past = function() return tycho.zeros({ 2 ^ 31, 2 ^ 31, 2 ^ 2 }) end, says = "its size in bytes overflows" },
  { "the memory budget", at = function() return tycho.zeros(1000):sum():item() end, value = 0,
    past = function() return tycho.zeros({ 2 ^ 45 }) end, says = "the host memory budget is" },

  -- the shell: --window, --cpus, --omps, --ompthreads, --overdecompose, --gpus
  { "--window", at = shell_ok({ "--window", "65536", "-e", "io.write(tycho.config().window)" }, nil, "65536"),
    value = "65536", past = shell_fails({ "--window", "65537", "-e", "" }),
    says = "tycho: --window must be an integer in 1..65536, got '65537'" },
  { "TYCHO_WINDOW", at = shell_ok({ "-e", "io.write(tycho.config().window)" }, { TYCHO_WINDOW = 65536 }),
    value = "65536", past = shell_fails({ "-e", "" }, { TYCHO_WINDOW = 65537 }),
    says = "TYCHO_WINDOW must be an integer in 1..65536, got '65537'" },
  { "--cpus", at = shell_ok({ "--cpus", "4096", "-e", "io.write(tycho.config().cpus, ' ', " ..
                                "tycho.arange(100):sum():item())" }), value = "4096 4950",
    past = shell_fails({ "--cpus", "4097", "-e", "" }), says = "tycho: --cpus must be at most 4096, got '4097'" },
  { "TYCHO_CPUS", at = shell_ok({ "-e", "io.write(tycho.config().cpus)" }, { TYCHO_CPUS = 4096 }),
    value = "4096", past = shell_fails({ "-e", "" }, { TYCHO_CPUS = 4097 }),
    says = "TYCHO_CPUS must be an integer in 1..4096, got '4097'" },
  { "TYCHO_SPIN_US", at = shell_ok({ "-e", "io.write(tycho.arange(100):sum():item())" }, { TYCHO_SPIN_US = 1000000 }),
    value = "4950", past = shell_fails({ "-e", "" }, { TYCHO_SPIN_US = 1000001 }),
    says = "TYCHO_SPIN_US must be an integer in 0..1000000, got '1000001'" },
  { "TYCHO_SCATTER_DIRECT", at = shell_ok({ "-e", "local y = tycho.zeros(4); y[tycho.array({1, 3}, 'i64')] = 2; " ..
                                                  "io.write(y:sum():item())" }, { TYCHO_SCATTER_DIRECT = 0 }),
    value = "4", past = shell_fails({ "-e", "" }, { TYCHO_SCATTER_DIRECT = "16MB" }),
    says = "TYCHO_SCATTER_DIRECT must be a number of bytes >= 0, got '16MB'" },
  { "--omps", at = shell_ok({ "--omps", "4096", "-e", "io.write(tycho.config().omps)" }), value = "4096",
    past = shell_fails({ "--omps", "4097", "-e", "" }), says = "--omps must be an integer in 0..4096, got '4097'" },
  { "--ompthreads", at = shell_ok({ "--omps", "1", "--ompthreads", "4096", "-e", "io.write('ok')" }),
    value = "ok", past = shell_fails({ "--ompthreads", "4097", "-e", "" }),
    says = "--ompthreads must be an integer in 1..4096, got '4097'" },
  { "--overdecompose", at = shell_ok({ "--overdecompose", "4096", "-e", "io.write('ok')" }), value = "ok",
    past = shell_fails({ "--overdecompose", "4097", "-e", "" }),
    says = "--overdecompose must be an integer in 1..4096, got '4097'" },
  { "--gpus", at = function()
      -- 16 is accepted as a count (and then refused when fewer GPUs exist)
      local out = shell({ "--gpus", "16", "-e", "" })
      assert(not out:find("a count in 0..16", 1, true), out)
      -- and so is sim:16 (16 simulated GPUs: always there)
      assert(not shell({ "--gpus", "sim:16", "-e", "" }):find("sim:N", 1, true))
      return true
    end, value = true, past = shell_fails({ "--gpus", "17", "-e", "" }),
    says = "gpus must be 'all', 'none', a count in 0..16 or sim:N (N simulated GPUs, 1..16), got '17'" },
}

describe("limits", function()
  for _, lim in ipairs(LIMITS) do
    it(lim[1] .. ": works at the limit, fails one past it with a message", function()
      local ok, v = pcall(lim.at)
      assert(ok, "at the limit: " .. tostring(v))
      if lim.value ~= nil then assert.are.equal(lim.value, v) end
      local pok, err = pcall(lim.past)
      assert(not pok, "one past the limit did not fail")
      assert(tostring(err):find(lim.says, 1, true),
             "expected '" .. lim.says .. "' in: " .. tostring(err))
      -- and the runtime goes on
      assert.are.equal(4950, tycho.arange(100):sum():item())
      assert.are.equal(0, select(2, tycho._scopes()))
    end)
  end

  it("are clamped, not refused, where the docs say so", function()
    -- explain keeps the last 4096 launches
    assert.is_true(#tycho.explain(4097) <= 4096)
    -- an origin longer than 95 bytes is shortened from the left
    local f = assert(load("local s <close> = tycho.parallel{mode = 'all'}; return (tycho._scopes())[1]",
                          "@" .. string.rep("d", 200) .. ".lua"))
    local origin = f()
    assert.is_true(#origin <= 95, origin)
    assert.matches("^scope at %.%.%.d+%.lua:1$", origin)
    -- a body's error message is cut to 2 KiB
    local t = tycho.task { name = uniq("long_error"), args = { "out" },
      body = function() error(string.rep("x", 5000)) end }
    local ok, err = pcall(function() t(tycho.zeros(1)); tycho.flush() end)
    assert.is_false(ok)
    assert.is_true(#err < 2200, #err)
    assert.matches("task '" .. t.name .. "' failed in piece 1 of 1", err)
  end)
end)
