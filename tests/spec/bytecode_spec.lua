-- tests/spec/bytecode_spec.lua — precompiled Lua chunks (string.dump, luac)
-- are refused by every way of loading code unless bytecode is allowed
-- (--allow-bytecode, TYCHO_ALLOW_BYTECODE=1): the shell's script, standard
-- input, -l, LUA_INIT, load, loadfile, dofile, require, and the same inside
-- Lua task bodies. The Lua VM does not verify bytecode, so a bad chunk could
-- crash the process; text chunks load as before. Each path is checked
-- without the flag (a refusal naming the flag) and with it (the chunk runs).

local BIN = assert(os.getenv("TYCHO_BIN"), "TYCHO_BIN must name the tycho executable")

local function q(s) return "'" .. tostring(s):gsub("'", [['\'']]) .. "'" end

local scratch = {}
local function tmpname()
  local name = os.tmpname()
  scratch[#scratch + 1] = name
  return name
end
local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  return path
end
local function tmpdir()
  local d = tmpname()
  os.remove(d)
  assert(os.execute("mkdir -p " .. q(d)))
  return d
end

after_each(function()
  for i = #scratch, 1, -1 do os.execute("rm -rf " .. q(scratch[i])) end
  scratch = {}
end)

-- A precompiled chunk that prints `text` (and returns it).
local function luac(text)
  return string.dump(load("print(" .. string.format("%q", text) .. ") return " ..
                          string.format("%q", text)))
end

-- Run tycho with args; opts.stdin, opts.env (a table), opts.cwd. Returns
-- stdout, stderr, exit status.
local function tycho_run(args, opts)
  opts = opts or {}
  local parts = { "env -u TYCHO_ALLOW_BYTECODE -u LUA_INIT -u LUA_INIT_5_4" }
  for k, v in pairs(opts.env or {}) do parts[#parts + 1] = k .. "=" .. q(v) end
  parts[#parts + 1] = q(BIN)
  for _, a in ipairs(args) do parts[#parts + 1] = q(a) end
  local errf = tmpname()
  local inf = opts.stdin and write(tmpname(), opts.stdin) or "/dev/null"
  local cmd = table.concat(parts, " ") .. " <" .. q(inf) .. " 2>" .. q(errf)
  if opts.cwd then cmd = "cd " .. q(opts.cwd) .. " && " .. cmd end
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  local _, _, code = p:close()
  local f = io.open(errf)
  local err = f:read("a")
  f:close()
  return out, err, code
end

local REFUSED = "precompiled Lua bytecode is refused"
local FLAG = "--allow-bytecode"

local function refused(msg, where)
  msg = tostring(msg)
  assert(msg:find(REFUSED, 1, true), "expected a refusal, got: " .. msg)
  assert(msg:find(FLAG, 1, true), "the refusal does not name " .. FLAG .. ": " .. msg)
  assert(msg:find("TYCHO_ALLOW_BYTECODE", 1, true), msg)
  if where then assert(msg:find(where, 1, true), "expected '" .. where .. "' in: " .. msg) end
end

describe("a precompiled script given to the shell", function()
  it("is refused without the flag, naming it, with status 1", function()
    local script = write(tmpname(), luac("RAN"))
    local out, err, code = tycho_run({ script })
    assert.are.equal(1, code)
    assert.are.equal("", out)
    assert.are.equal("tycho: ", err:sub(1, 7))
    refused(err, script .. ":")
  end)

  it("runs with --allow-bytecode or TYCHO_ALLOW_BYTECODE=1", function()
    local script = write(tmpname(), luac("RAN"))
    local out, err, code = tycho_run({ "--allow-bytecode", script })
    assert.are.equal(0, code, err)
    assert.are.equal("RAN\n", out)
    for _, v in ipairs({ "1", "on", "true", "yes" }) do
      out, err, code = tycho_run({ script }, { env = { TYCHO_ALLOW_BYTECODE = v } })
      assert.are.equal(0, code, err)
      assert.are.equal("RAN\n", out)
    end
  end)

  it("is refused with TYCHO_ALLOW_BYTECODE=0, or under -E whatever the variable says", function()
    local script = write(tmpname(), luac("RAN"))
    local _, err, code = tycho_run({ script }, { env = { TYCHO_ALLOW_BYTECODE = "0" } })
    assert.are.equal(1, code)
    refused(err)
    _, err, code = tycho_run({ "-E", script }, { env = { TYCHO_ALLOW_BYTECODE = "1" } })
    assert.are.equal(1, code)
    refused(err)
    local out
    out, err, code = tycho_run({ "-E", "--allow-bytecode", script })
    assert.are.equal(0, code, err)
    assert.are.equal("RAN\n", out)
  end)

  it("after a #! line, and from standard input, likewise", function()
    local script = write(tmpname(), "#!/usr/bin/env tycho\n" .. luac("RAN"))
    local out, err, code = tycho_run({ script })
    assert.are.equal(1, code)
    refused(err)
    out, err, code = tycho_run({ "--allow-bytecode", script })
    assert.are.equal(0, code, err)
    assert.are.equal("RAN\n", out)
    out, err, code = tycho_run({ "-" }, { stdin = luac("STDIN") })
    assert.are.equal(1, code)
    refused(err, "stdin:")
    out, err, code = tycho_run({ "--allow-bytecode", "-" }, { stdin = luac("STDIN") })
    assert.are.equal(0, code, err)
    assert.are.equal("STDIN\n", out)
  end)

  it("from -l and LUA_INIT=@file, likewise", function()
    local dir = tmpdir()
    write(dir .. "/bcmod.lua", luac("MOD"))
    local out, err, code = tycho_run({ "-l", "bcmod", "-e", "" }, { cwd = dir })
    assert.are.equal(1, code)
    refused(err, "error loading module 'bcmod'")
    out, err, code = tycho_run({ "--allow-bytecode", "-l", "bcmod", "-e", "print(bcmod)" },
                               { cwd = dir })
    assert.are.equal(0, code, err)
    assert.are.equal("MOD\nMOD\n", out)
    local init = write(tmpname(), luac("INIT"))
    out, err, code = tycho_run({ "-e", "print('after')" }, { env = { LUA_INIT = "@" .. init } })
    assert.are.equal(1, code)
    refused(err)
    out, err, code = tycho_run({ "--allow-bytecode", "-e", "print('after')" },
                               { env = { LUA_INIT = "@" .. init } })
    assert.are.equal(0, code, err)
    assert.are.equal("INIT\nafter\n", out)
  end)

  it("is documented in --help, and the option takes no value", function()
    local out, _, code = tycho_run({ "--help" })
    assert.are.equal(0, code)
    assert.truthy(out:find("--allow-bytecode", 1, true))
    assert.truthy(out:find("TYCHO_ALLOW_BYTECODE", 1, true))
    local _, err
    _, err, code = tycho_run({ "--allow-bytecode=1", "-e", "" })
    assert.are.equal(1, code)
    assert.truthy(err:find("option '--allow-bytecode' takes no value", 1, true), err)
    _, err, code = tycho_run({ "-e", "" }, { env = { TYCHO_ALLOW_BYTECODE = "maybe" } })
    assert.are.equal(1, code)
    assert.truthy(err:find("TYCHO_ALLOW_BYTECODE must be 1 or 0", 1, true), err)
  end)
end)

-- The loaders of a script: checked in this shell (bytecode refused: the
-- suite runs without the variable) and in a child shell with the flag.
local LOADERS = [[
local bc = string.dump(function() return "LOADED" end)
local dir = %q
local file = dir .. "/bcfile.lua"
local fh = assert(io.open(file, "wb")); fh:write(bc); fh:close()
package.path = dir .. "/?.lua;" .. package.path
local r = {}
local f, err = load(bc)
r[#r + 1] = "load " .. (f and f() or err)
local pieces = { bc:sub(1, 10), bc:sub(11) }
f, err = load(function() return table.remove(pieces, 1) end)
r[#r + 1] = "load(reader) " .. (f and f() or err)
f, err = load(bc, "=named", "b")
r[#r + 1] = "load(b) " .. (f and f() or err)
f, err = loadfile(file)
r[#r + 1] = "loadfile " .. (f and f() or err)
local ok, v = pcall(dofile, file)
r[#r + 1] = "dofile " .. tostring(v)
ok, v = pcall(require, "bcfile")
r[#r + 1] = "require " .. tostring(v)
-- text chunks load as before, the sugar included
f = assert(load("return 'TEXT'"))
assert(f() == "TEXT")
assert(load("parallel<mode=all> do x = 1 end"))
-- mode "t" keeps Lua's own refusal
f, err = load(bc, "=t", "t")
assert(not f and err:find("attempt to load a binary chunk", 1, true), err)
for i = 1, #r do r[i] = r[i]:gsub("\n%%s*", " ") end
print(table.concat(r, "\n"))
]]

describe("the loaders of a script", function()
  it("refuse bytecode without the flag: load, load(reader), loadfile, dofile, require", function()
    local dir = tmpdir()
    local out, err, code = tycho_run({ write(tmpname(), LOADERS:format(dir)) })
    assert.are.equal(0, code, err)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal(6, #lines, out)
    for _, l in ipairs(lines) do refused(l) end
    assert.truthy(lines[1]:find("^load binary string chunk: "), lines[1])
    assert.truthy(lines[3]:find("^load%(b%) named: "), lines[3])
    assert.truthy(lines[4]:find(dir .. "/bcfile.lua: ", 1, true), lines[4])
    assert.truthy(lines[5]:find(dir .. "/bcfile.lua: ", 1, true), lines[5])
    assert.truthy(lines[6]:find("error loading module 'bcfile' from file", 1, true), lines[6])
  end)

  it("load it with --allow-bytecode", function()
    local dir = tmpdir()
    local out, err, code = tycho_run({ "--allow-bytecode", write(tmpname(), LOADERS:format(dir)) })
    assert.are.equal(0, code, err)
    assert.are.equal("load LOADED\nload(reader) LOADED\nload(b) LOADED\nloadfile LOADED\n" ..
                     "dofile LOADED\nrequire LOADED\n", out)
  end)

  it("refuse it in this shell too (busted's)", function()
    local f, err = load(string.dump(function() end))
    assert.is_nil(f)
    refused(err)
    assert.is_function(load("return 1"))
  end)
end)

local WORKER = [[
local dir = %q
local fh = assert(io.open(dir .. "/wmod.lua", "wb"))
fh:write(string.dump(function() return 5 end)); fh:close()
local t = tycho.task { name = "t", args = { "out", "scalar:string", "scalar:string" },
  body = function(ctx, y, how, path)
    local bc = string.dump(function() return 7 end)
    local f, err
    if how == "load" then f, err = load(bc)
    elseif how == "loadfile" then f, err = loadfile(path .. "/wmod.lua")
    elseif how == "dofile" then
      local ok, v = pcall(dofile, path .. "/wmod.lua")
      f, err = ok and function() return v end or nil, v
    else
      package.path = path .. "/?.lua;" .. package.path
      local ok, v = pcall(require, "wmod")
      f, err = ok and function() return v end or nil, v
    end
    if not f then error(err, 0) end
    y[ctx.lo] = f()
  end }
for _, how in ipairs({ "load", "loadfile", "dofile", "require" }) do
  local y = tycho.zeros(1)
  local ok, err = pcall(function() t(y, how, dir); return y[1] end)
  print(how, ok and y[1] or (err:gsub("\n.*", ""):gsub(":$", "") .. " " .. (err:match("\n%%s*([^\n]*)") or "")))
end
]]

describe("a Lua task body", function()
  it("cannot load bytecode without the flag, can with it; its own body always runs", function()
    local dir = tmpdir()
    local script = write(tmpname(), WORKER:format(dir))
    local out, err, code = tycho_run({ script })
    assert.are.equal(0, code, err)
    local n = 0
    for l in out:gmatch("[^\n]+") do
      n = n + 1
      assert.truthy(l:find("task 't' failed in piece 1 of 1", 1, true), l)
      refused(l)
    end
    assert.are.equal(4, n, out)
    out, err, code = tycho_run({ "--allow-bytecode", script })
    assert.are.equal(0, code, err)
    assert.are.equal("load\t7.0\nloadfile\t5.0\ndofile\t5.0\nrequire\t5.0\n", out)
  end)
end)

describe("stock lua5.4 with require 'tycho'", function()
  it("refuses bytecode after the binding loads, unless TYCHO_ALLOW_BYTECODE=1", function()
    local mdir = os.getenv("TYCHO_MODULE_DIR")
    local code = "package.cpath = " .. string.format("%q", (mdir or "") .. "/?.so;") ..
                 " .. package.cpath; require 'tycho'; " ..
                 "local f, e = load(string.dump(function() return 'OK' end)); print(f and f() or e)"
    local probe = io.popen("lua5.4 -e " .. q("package.cpath = '" .. (mdir or "") ..
                           "/?.so;' .. package.cpath; require 'tycho'; print('up')") .. " 2>/dev/null")
    local up = probe:read("a")
    probe:close()
    if not mdir or up ~= "up\n" then
      pending("lua5.4 cannot load this build's tycho.so (a sanitizer build)")
      return
    end
    local p = io.popen("env -u TYCHO_ALLOW_BYTECODE lua5.4 -e " .. q(code) .. " 2>&1")
    local out = p:read("a")
    p:close()
    refused(out)
    p = io.popen("TYCHO_ALLOW_BYTECODE=1 lua5.4 -e " .. q(code) .. " 2>&1")
    out = p:read("a")
    p:close()
    assert.are.equal("OK\n", out)
  end)
end)
