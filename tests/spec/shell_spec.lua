-- shell_spec.lua — the `tycho` executable: scripts and their arguments, -e,
-- standard input, options and their errors, exit statuses, and the REPL
-- driven through a pseudo-terminal by tests/tools/ptydrive.c (built next to
-- tycho). Every case starts a fresh process; outputs are compared exactly
-- where the shell defines them.

local BIN = assert(os.getenv("TYCHO_BIN"), "TYCHO_BIN must name the tycho executable")
local PTYDRIVE = BIN:match("^(.*)/[^/]*$") .. "/ptydrive"

local function q(s)
  return "'" .. tostring(s):gsub("'", [['\'']]) .. "'"
end

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local function slurp(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local scratch = {} -- files and directories to remove after each test

local function tmpfile(text)
  local name = os.tmpname()
  scratch[#scratch + 1] = name
  if text then write(name, text) end
  return name
end

local function tmpdir()
  local name = os.tmpname()
  os.remove(name)
  assert(os.execute("mkdir -p " .. q(name)))
  scratch[#scratch + 1] = name
  return name
end

-- The variables the shell reads, cleared so the caller's environment cannot
-- change a result; opts.env adds some back.
local CLEAN_ENV = "env -u TYCHO_CPUS -u TYCHO_SYSMEM -u TYCHO_WINDOW -u LUA_INIT -u LUA_INIT_5_4"

local function env_prefix(env)
  local parts = { CLEAN_ENV }
  local keys = {}
  for k in pairs(env or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. q(env[k]) end
  return table.concat(parts, " ")
end

-- Run tycho with `args` (a list); opts.stdin: text for standard input
-- (default: /dev/null); opts.env: variables; opts.cwd: the directory to run
-- in. Returns { out, err, code }.
local function tycho(args, opts)
  opts = opts or {}
  local quoted = {}
  for i, a in ipairs(args) do quoted[i] = q(a) end
  local errfile = tmpfile()
  local infile = opts.stdin and tmpfile(opts.stdin) or "/dev/null"
  local cmd = string.format("%s %s %s <%s 2>%s", env_prefix(opts.env), q(BIN),
                            table.concat(quoted, " "), q(infile), q(errfile))
  if opts.cwd then cmd = "cd " .. q(opts.cwd) .. " && " .. cmd end
  local p = assert(io.popen(cmd, "r"))
  local out = p:read("a")
  local _, _, code = p:close()
  return { out = out, err = slurp(errfile), code = code }
end

-- Drive the REPL: `steps` is ptydrive's script (one step a line). Returns
-- the transcript without carriage returns and the exit status.
local function repl(steps, opts)
  opts = opts or {}
  local env = { TERM = "dumb", INPUTRC = "/dev/null", HOME = opts.home or tmpdir() }
  local args = {}
  for i, a in ipairs(opts.args or {}) do args[i] = q(a) end
  local script = tmpfile(table.concat(steps, "\n") .. "\n")
  local errfile = tmpfile()
  local cmd = string.format("%s %s -t 60 -- %s %s <%s 2>%s", env_prefix(env), q(PTYDRIVE), q(BIN),
                            table.concat(args, " "), q(script), q(errfile))
  local p = assert(io.popen(cmd, "r"))
  local out = p:read("a")
  local _, _, code = p:close()
  local err = slurp(errfile)
  assert(err == "", "ptydrive: " .. err .. "\ntranscript:\n" .. out)
  return (out:gsub("\r", "")), code
end

local function has(haystack, needle)
  return haystack:find(needle, 1, true) ~= nil
end

after_each(function()
  for i = #scratch, 1, -1 do
    os.execute("rm -rf " .. q(scratch[i]))
    scratch[i] = nil
  end
end)

describe("tycho script", function()
  it("gets lua.c's arg table and its arguments as ...", function()
    local script = tmpfile([[
for i = -3, #arg do io.write(i, "=", arg[i], "\n") end
print(select("#", ...), ...)
]])
    local r = tycho({ "--cpus", "2", script, "a", "b c" })
    assert.are.equal("", r.err)
    assert.are.equal(0, r.code)
    assert.are.equal(table.concat({
      "-3=" .. BIN, "-2=--cpus", "-1=2", "0=" .. script, "1=a", "2=b c", "2\ta\tb c", "" }, "\n"), r.out)
  end)

  it("passes what follows the script to it, options included", function()
    local script = tmpfile("print(#arg, ...)\n")
    local r = tycho({ script, "--cpus", "x", "-e" })
    assert.are.equal(0, r.code)
    assert.are.equal("3\t--cpus\tx\t-e\n", r.out)
  end)

  it("runs a script named after --", function()
    local script = tmpfile("print('ran', arg[-1])\n")
    local r = tycho({ "--", script })
    assert.are.equal("ran\t--\n", r.out)
  end)

  it("skips a #! first line, as lua does", function()
    local script = tmpfile("#!/usr/bin/env tycho\nprint(debug.getinfo(1, 'l').currentline)\n")
    local r = tycho({ script })
    assert.are.equal(0, r.code)
    assert.are.equal("2\n", r.out)
  end)

  it("reports a runtime error with file:line and a traceback, status 1", function()
    local script = tmpfile("local x = 1\n\nerror('kaboom')\n")
    local r = tycho({ script })
    assert.are.equal(1, r.code)
    assert.are.equal("", r.out)
    assert.is_truthy(has(r.err, "tycho: " .. script .. ":3: kaboom\nstack traceback:\n"), r.err)
  end)

  it("reports a syntax error with file:line, status 1", function()
    local script = tmpfile("print(1)\nx = = 2\n")
    local r = tycho({ script })
    assert.are.equal(1, r.code)
    assert.are.equal("", r.out) -- nothing of the script ran
    assert.are.equal("tycho: " .. script .. ":2: unexpected symbol near '='\n", r.err)
  end)

  it("reports a missing script, status 1", function()
    local r = tycho({ "/nonexistent/none.lua" })
    assert.are.equal(1, r.code)
    assert.are.equal("tycho: cannot open /nonexistent/none.lua\n", r.err:gsub(":[^:]*\n$", "\n"))
  end)

  it("exits with os.exit's status, closing the state on request", function()
    assert.are.equal(7, tycho({ "-e", "os.exit(7)" }).code)
    assert.are.equal(0, tycho({ "-e", "os.exit(true)" }).code)
    assert.are.equal(1, tycho({ "-e", "os.exit(false)" }).code)
    -- busted's way out: close the state (stores, then the runtime) and exit
    local r = tycho({ "-e", "local x = tycho.zeros({4, 4}) + 1; print(x:sum():item()); os.exit(5, true)" })
    assert.are.equal(5, r.code)
    assert.are.equal("16.0\n", r.out)
    assert.are.equal("", r.err)
  end)

  it("shows a non-string error object as lua.c does", function()
    local r = tycho({ "-e", "error({})" })
    assert.are.equal(1, r.code)
    assert.is_truthy(has(r.err, "tycho: (error object is a table value)\n"), r.err)
    r = tycho({ "-e", "error(setmetatable({}, {__tostring = function() return 'custom' end}))" })
    assert.are.equal("tycho: custom\n", r.err)
  end)

  it("runs busted inside the shell with busted's status", function()
    local busted = arg and arg[0] or "/usr/bin/busted"
    local dir = tmpdir()
    write(dir .. "/pass_spec.lua", "describe('s', function() it('p', function() assert.are.equal(2, 1 + 1) end) end)\n")
    write(dir .. "/fail_spec.lua", "describe('s', function() it('f', function() assert.are.equal(3, 1 + 1) end) end)\n")
    local r = tycho({ busted, "--output=TAP", "pass_spec.lua" }, { cwd = dir })
    assert.are.equal(0, r.code)
    assert.is_truthy(has(r.out, "ok 1 - s p"), r.out)
    r = tycho({ busted, "--output=TAP", "fail_spec.lua" }, { cwd = dir })
    assert.are.equal(1, r.code)
    assert.is_truthy(has(r.out, "not ok 1 - s f"), r.out)
  end)
end)

describe("tycho -e", function()
  it("runs each chunk in order, before the script", function()
    local script = tmpfile("print('script', x)\n")
    local r = tycho({ "-e", "x = 1", "-e", "x = x + 1; print('e', x)", script })
    assert.are.equal(0, r.code)
    assert.are.equal("e\t2\nscript\t2\n", r.out)
  end)

  it("sees the runtime as the global tycho and as require 'tycho'", function()
    local r = tycho({ "-e", "print(type(tycho), require('tycho') == tycho, package.loaded.tycho == tycho)" })
    assert.are.equal("table\ttrue\ttrue\n", r.out)
  end)

  it("stops at an error with status 1 and the message", function()
    local r = tycho({ "-e", "print('before')", "-e", "error('boom')", "-e", "print('after')" })
    assert.are.equal(1, r.code)
    assert.are.equal("before\n", r.out)
    assert.is_truthy(has(r.err, "tycho: (command line):1: boom\nstack traceback:\n"), r.err)
  end)

  it("reports a syntax error, status 1", function()
    local r = tycho({ "-e", "x = = 1" })
    assert.are.equal(1, r.code)
    assert.are.equal("tycho: (command line):1: unexpected symbol near '='\n", r.err)
  end)

  it("does not open the REPL or read stdin", function()
    local r = tycho({ "-e", "print('only')" }, { stdin = "print('stdin ran')\n" })
    assert.are.equal("only\n", r.out)
  end)
end)

describe("tycho -l", function()
  it("requires a module into a global", function()
    local dir = tmpdir()
    write(dir .. "/mymod.lua", "return { answer = 42 }\n")
    local env = { LUA_PATH = dir .. "/?.lua;;" }
    assert.are.equal("42\n", tycho({ "-l", "mymod", "-e", "print(mymod.answer)" }, { env = env }).out)
    assert.are.equal("42\n", tycho({ "-l", "m=mymod", "-e", "print(m.answer)" }, { env = env }).out)
    local r = tycho({ "-l", "nosuchmodule" })
    assert.are.equal(1, r.code)
    assert.is_truthy(has(r.err, "module 'nosuchmodule' not found"), r.err)
  end)
end)

describe("tycho with standard input", function()
  it("runs piped input as a script when there is no script", function()
    local r = tycho({}, { stdin = "print(40 + 2)\nprint(arg[0] == '" .. BIN .. "')\n" })
    assert.are.equal(0, r.code)
    assert.are.equal("42\ntrue\n", r.out)
  end)

  it("runs stdin as the script named -, with arguments", function()
    local r = tycho({ "-", "x", "y" }, { stdin = "print(arg[0], ...)\n" })
    assert.are.equal(0, r.code)
    assert.are.equal("-\tx\ty\n", r.out)
  end)

  it("reports an error in piped input as stdin:line, status 1", function()
    local r = tycho({}, { stdin = "print(1)\nerror('piped')\n" })
    assert.are.equal(1, r.code)
    assert.are.equal("1\n", r.out)
    assert.is_truthy(has(r.err, "tycho: stdin:2: piped\n"), r.err)
  end)

  it("reads REPL lines from a pipe after -i", function()
    local r = tycho({ "-e", "x = 20", "-i" }, { stdin = "x + 22\nfunction f()\nreturn 'multi'\nend\nf()\n" })
    assert.are.equal(0, r.code)
    assert.is_truthy(has(r.out, "42\n"), r.out)
    assert.is_truthy(has(r.out, "multi\n"), r.out)
    assert.is_truthy(has(r.out, ">> "), r.out) -- the continuation prompt
  end)
end)

describe("tycho options", function()
  it("--help lists every option with its environment variable", function()
    local r = tycho({ "--help" })
    assert.are.equal(0, r.code)
    assert.are.equal("", r.err)
    assert.is_truthy(r.out:find("^usage: tycho %[options%] %[script %[args%]%]\n"), r.out)
    for _, opt in ipairs({ "-e stat", "-i ", "-l mod", "-v ", "-E ", "-W ", "--cpus N", "--sysmem SIZE",
                           "--window N", "--isa LEVEL", "--help", "--version", "-- ", "- " }) do
      assert.is_truthy(r.out:find("\n  " .. opt:gsub("%p", "%%%0"), 1), "--help misses " .. opt)
    end
    for _, pair in ipairs({ { "--cpus", "TYCHO_CPUS" }, { "--sysmem", "TYCHO_SYSMEM" }, { "--window", "TYCHO_WINDOW" },
                          { "--isa", "TYCHO_ISA" } }) do
      local line = r.out:match("\n  (" .. pair[1]:gsub("%p", "%%%0") .. " [^\n]*)")
      assert.is_truthy(line and has(line, pair[2]), "the " .. pair[1] .. " line names " .. pair[2])
    end
  end)

  it("--version prints tycho's and Lua's versions and the kernels' instruction set", function()
    local r = tycho({ "--version" })
    assert.are.equal(0, r.code)
    assert.is_truthy(r.out:find("^tycho 0%.1%.0 %(Lua 5%.4%.%d+%)\nkernels: [%w]+ %(this CPU's best: [%w]+; " ..
                                "built for: [%w ]+%)\n$"), r.out)
  end)

  it("--isa and TYCHO_ISA lower the kernels' instruction set; a bad name is an error", function()
    local show = "local c = tycho.config(); print(c.isa)"
    assert.are.equal("baseline\n", tycho({ "--isa", "baseline", "-e", show }).out)
    local r = tycho({ "--version" }, { env = { TYCHO_ISA = "baseline" } })
    assert.is_truthy(r.out:find("\nkernels: baseline "), r.out)
    r = tycho({ "--isa", "sse9", "-e", show })
    assert.are_not.equal(0, r.code)
    assert.is_truthy(r.err:find("--isa: the instruction set must be auto|", 1, true), r.err)
    r = tycho({ "-e", show }, { env = { TYCHO_ISA = "sse9" } })
    assert.are_not.equal(0, r.code)
    assert.is_truthy(r.err:find("TYCHO_ISA: the instruction set must be", 1, true), r.err)
  end)

  it("--cpus, --sysmem and --window reach tycho.config()", function()
    local show = "local c = tycho.config(); print(c.cpus, c.sysmem, c.window)"
    assert.are.equal("3\t536870912\t8\n",
      tycho({ "--cpus", "3", "--sysmem", "512MiB", "--window", "8", "-e", show }).out)
    assert.are.equal("5\t512000000\t16\n",
      tycho({ "--cpus=5", "--sysmem=512MB", "--window=16", "-e", show }).out)
    assert.are.equal("64\t4294967296\t64\n", tycho({ "--cpus", "64", "--sysmem", "4GiB", "-e", show }).out)
  end)

  it("takes the command line over TYCHO_* and TYCHO_* over the defaults", function()
    local show = "local c = tycho.config(); print(c.cpus, c.sysmem, c.window)"
    local env = { TYCHO_CPUS = "4", TYCHO_SYSMEM = "1GiB", TYCHO_WINDOW = "32" }
    assert.are.equal("4\t1073741824\t32\n", tycho({ "-e", show }, { env = env }).out)
    assert.are.equal("2\t1073741824\t32\n", tycho({ "--cpus", "2", "-e", show }, { env = env }).out)
    -- -E ignores the environment
    local r = tycho({ "-E", "-e", "print(tycho.config().window)" }, { env = env })
    assert.are.equal("64\n", r.out)
  end)

  it("refuses bad --cpus values with status 1", function()
    for _, bad in ipairs({ "x", "0", "-1", "2.5", "", "3x" }) do
      local r = tycho({ "--cpus", bad, "-e", "print('ran')" })
      assert.are.equal(1, r.code, bad)
      assert.are.equal("", r.out, bad)
      assert.are.equal("tycho: --cpus must be a positive integer, got '" .. bad .. "'\n", r.err)
    end
    local r = tycho({ "--cpus", "100000" })
    assert.are.equal(1, r.code)
    assert.are.equal("tycho: --cpus must be at most 4096, got '100000'\n", r.err)
    r = tycho({ "--cpus" })
    assert.are.equal(1, r.code)
    assert.is_truthy(has(r.err, "tycho: option '--cpus' needs a value\n"), r.err)
  end)

  it("refuses bad --sysmem and --window values with status 1", function()
    for _, bad in ipairs({ "lots", "-5GB", "0", "12XB" }) do
      local r = tycho({ "--sysmem", bad, "-e", "print('ran')" })
      assert.are.equal(1, r.code, bad)
      assert.are.equal("", r.out, bad)
      assert.are.equal("tycho: --sysmem must be a positive size such as 512MB or 4GiB, got '" .. bad .. "'\n", r.err)
    end
    local r = tycho({ "--window", "0" })
    assert.are.equal(1, r.code)
    assert.are.equal("tycho: --window must be an integer in 1..65536, got '0'\n", r.err)
  end)

  it("refuses a bad TYCHO_* variable with status 1", function()
    local r = tycho({ "-e", "print('ran')" }, { env = { TYCHO_CPUS = "many" } })
    assert.are.equal(1, r.code)
    assert.are.equal("", r.out)
    assert.is_truthy(has(r.err, "tycho: TYCHO_CPUS"), r.err)
    assert.is_truthy(has(r.err, "'many'"), r.err)
  end)

  it("refuses unknown options with a hint to --help", function()
    for _, bad in ipairs({ "--frobnicate", "-x", "--cpu", "-ix" }) do
      local r = tycho({ bad, "-e", "print('ran')" })
      assert.are.equal(1, r.code, bad)
      assert.are.equal("", r.out)
      assert.are.equal("tycho: unrecognized option '" .. bad .. "'\nTry 'tycho --help' for more information.\n", r.err)
    end
    local r = tycho({ "-e" })
    assert.are.equal(1, r.code)
    assert.is_truthy(has(r.err, "'-e' needs an argument"), r.err)
  end)

  it("runs LUA_INIT first, unless -E", function()
    assert.are.equal("42\n", tycho({ "-e", "print(x + 1)" }, { env = { LUA_INIT = "x = 41" } }).out)
    local r = tycho({ "-E", "-e", "print(x)" }, { env = { LUA_INIT = "x = 41" } })
    assert.are.equal("nil\n", r.out)
  end)
end)

describe("the REPL on a terminal", function()
  it("prints the value of an expression", function()
    local out, code = repl({
      "expect > ", "line 2^10", "expect 1024.0", "expect > ",
      "line 'a', 1 + 1, nil", "expect a\t2\tnil", "expect > ",
      "send \\x04" })
    assert.are.equal(0, code)
    assert.is_truthy(out:find("^tycho 0%.1%.0 %(Lua 5%.4%.%d+%)"), out) -- the banner
    assert.is_truthy(has(out, "> 2^10\n1024.0\n> "), out)
    assert.is_truthy(has(out, "\na\t2\tnil\n> "), out)
  end)

  it("continues an incomplete statement on the next lines", function()
    local out, code = repl({
      "expect > ", "line function sq(x)", "expect >> ", "line return x * x", "expect >> ",
      "line end", "expect > ", "line sq(12)", "expect 144", "expect > ", "send \\x04" })
    assert.are.equal(0, code)
    assert.is_truthy(has(out, "> function sq(x)\n>> return x * x\n>> end\n> sq(12)\n144\n"), out)
  end)

  it("prints an error with a traceback and runs the next line", function()
    local out, code = repl({
      "expect > ", "line error('bo' .. 'om')", "expect boom", "expect > ",
      "line print(6 * 7)", "expect 42", "expect > ", "send \\x04" })
    assert.are.equal(0, code)
    assert.is_truthy(has(out, "stdin:1: boom\nstack traceback:\n"), out)
    assert.is_truthy(has(out, "> print(6 * 7)\n42\n"), out)
  end)

  it("completes a global name with TAB", function()
    -- "tyc" + TAB must become "tycho." (a table gets its dot)
    local out, code = repl({
      "expect > ", "send tyc\\t", "expect ho.", "line config().cpus", "expect \\r\\n3\\r\\n", "expect > ",
      "send \\x04" }, { args = { "--cpus", "3" } })
    assert.are.equal(0, code)
    assert.is_truthy(has(out, "> tycho.config().cpus\n3\n"), out)
  end)

  it("completes table fields and store methods with TAB", function()
    local out, code = repl({
      "expect > ", "send tycho.conf\\t", "expect ig(", "line ).window", "expect \\r\\n8\\r\\n", "expect > ",
      "line x = tycho.zeros({5})", "expect > ",
      "send #x:totabl\\t", "expect e(", "line )", "expect \\r\\n5\\r\\n", "expect > ",
      "send \\x04" }, { args = { "--window", "8" } })
    assert.are.equal(0, code)
    assert.is_truthy(has(out, "> tycho.config().window\n8\n"), out)
    assert.is_truthy(has(out, "> #x:totable()\n5\n"), out)
  end)

  it("lists the candidates on a second TAB", function()
    local out, code = repl({
      "expect > ", "send se\\t\\t", "expect setmetatable", "expect > se", "send \\x03", "expect ^C",
      "expect > ", "send \\x04" })
    assert.are.equal(0, code)
    assert.is_truthy(out:find("\nselect +setmetatable *\n"), out)
  end)

  it("keeps history in $HOME/.tycho_history across sessions", function()
    local home = tmpdir()
    local _, code = repl({ "expect > ", "line print(20 + 22)", "expect 42", "expect > ", "send \\x04" },
                         { home = home })
    assert.are.equal(0, code)
    assert.are.equal("print(20 + 22)\n", slurp(home .. "/.tycho_history"))
    -- the next session recalls it with the up arrow
    local out
    out, code = repl({ "expect > ", "send \\e[A", "expect print(20 + 22)", "send \\r", "expect \\r\\n42\\r\\n",
                       "expect > ", "send \\x04" }, { home = home })
    assert.are.equal(0, code)
    assert.is_truthy(has(out, "\n42\n"), out)
  end)

  it("works when the history file cannot be written", function()
    local out, code = repl({ "expect > ", "line print(6 * 7)", "expect 42", "expect > ", "send \\x04" },
                           { home = "/nonexistent/home" })
    assert.are.equal(0, code)
    assert.is_truthy(has(out, "cannot write history file /nonexistent/home/.tycho_history"), out)
    assert.is_truthy(has(out, "\n42\n"), out)
  end)

  it("interrupts a running statement with Ctrl-C and prompts again", function()
    local out, code = repl({
      "expect > ", 'line print("RU" .. "N") while true do end', "expect RUN", "send \\x03",
      "expect interrupted!", "expect > ", "line print(7 * 6)", "expect 42", "expect > ",
      -- the runtime forgets the interrupt: the next flush runs
      "line print(tycho.ones({3}):sum():item())", "expect \\r\\n3.0\\r\\n", "expect > ", "send \\x04" })
    assert.are.equal(0, code)
    assert.is_truthy(has(out, "interrupted!\nstack traceback:\n"), out)
    assert.is_truthy(has(out, "> print(7 * 6)\n42\n"), out)
    assert.is_truthy(has(out, "\n3.0\n"), out)
  end)

  it("clears the line on Ctrl-C at the prompt", function()
    local out, code = repl({
      "expect > ", "send abc", "expect abc", "send \\x03", "expect ^C", "expect > ",
      "line print(1 + 2)", "expect \\r\\n3\\r\\n", "expect > ",
      -- in a continuation, Ctrl-C drops the whole statement
      "line for i = 1, 3 do", "expect >> ", "send \\x03", "expect ^C", "expect > ",
      "line print('fresh')", "expect \\r\\nfresh\\r\\n", "expect > ", "send \\x04" })
    assert.are.equal(0, code)
    assert.is_falsy(has(out, "abcprint"), out)
    assert.is_truthy(has(out, "> print(1 + 2)\n3\n"), out)
    assert.is_truthy(has(out, "> print('fresh')\nfresh\n"), out)
  end)

  it("exits on Ctrl-D with status 0, or with os.exit's", function()
    local _, code = repl({ "expect > ", "send \\x04" })
    assert.are.equal(0, code)
    _, code = repl({ "expect > ", "line os.exit(3)" })
    assert.are.equal(3, code)
  end)

  it("opens after a script with -i", function()
    local script = tmpfile("x = 'from script'\n")
    local out, code = repl({ "expect > ", "line x", "expect \\r\\nfrom script\\r\\n", "expect > ", "send \\x04" },
                           { args = { "-i", script } })
    assert.are.equal(0, code)
    assert.is_truthy(has(out, "> x\nfrom script\n"), out)
  end)
end)
