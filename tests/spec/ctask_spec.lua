-- tests/spec/ctask_spec.lua — C tasks registered by a host, called from Lua.
--
-- The host is tests/tools/ctask_host.c: the tycho shell (ty_shell_main) with
-- C test tasks registered by its setup hook, most with a signature (so
-- tycho.tasks finds them), one without. Each case runs a chunk in a fresh
-- host process and reads what it prints.

local BIN = assert(os.getenv("TYCHO_BIN"), "TYCHO_BIN must name the tycho executable")
local HOST = BIN:match("^(.*)/[^/]*$") .. "/tycho_ctask_host"

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- run `code` in the host with TYCHO_CPUS = cpus; returns output and status
local function host(code, cpus)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(code)
  f:close()
  local p = assert(io.popen(string.format("TYCHO_CPUS=%d %s %s 2>&1", cpus or 3, q(HOST), q(path))))
  local out = p:read("a")
  local _, _, status = p:close()
  os.remove(path)
  return out, status
end

local function ok_host(code, cpus)
  local out, status = host(code, cpus)
  assert.are.equal(0, status, out)
  return out
end

describe("a C task registered by the host", function()
  it("is callable by name with its signature: in, out and scalar:f64", function()
    local out = ok_host [[
      local z = tycho.tasks.c_axpy(tycho.arange(5) * 1.0, tycho.ones(5), nil, 2)
      print(table.concat(z:totable(), " "))
      print(tycho.tasks.c_axpy)
      print(tycho.tasks.c_axpy.kind)
    ]]
    assert.matches("^1%.0 3%.0 5%.0 7%.0 9%.0\n", out)
    assert.matches("tycho.task 'c_axpy' %(C task: in, in, out, scalar:f64%)", out)
    assert.matches("\nc\n", out)
  end)

  it("updates an inout store", function()
    local out = ok_host [[
      local x = tycho.arange(4) * 1.0
      tycho.tasks.c_scale(x, 3)
      tycho.tasks.c_scale(x, 0.5)
      print(table.concat(x:totable(), " "))
    ]]
    assert.matches("^0%.0 1%.5 3%.0 4%.5\n", out)
  end)

  it("reads an in:broadcast store whole in every piece", function()
    local out = ok_host [[
      local idx = tycho.array({ 5, 1, 4, 2, 3, 5, 5, 1 })
      print(table.concat(tycho.tasks.c_gather(tycho.arange(5) * 10.0, idx):totable(), " "))
    ]]
    assert.matches("^40%.0 0%.0 30%.0 10%.0 20%.0 40%.0 40%.0 0%.0\n", out)
  end)

  it("reduces with + into a 0-d store, and with min and max", function()
    local out = ok_host [[
      local x = tycho.arange(1000) * 1.0
      print(tycho.tasks.c_sum(x):item())
      local start = tycho.full({}, 5.0)
      tycho.tasks.c_sum(x, start)
      print(start:item())
      local lo, hi = tycho.tasks.c_minmax(x - 300)
      print(lo:item(), hi:item())
      local rows = tycho.zeros({ 1 })
      tycho.tasks.c_sum(tycho.ones(10), rows)
      print(rows:item())
    ]]
    assert.matches("^499500%.0\n499505%.0\n%-300%.0\t699%.0\n10%.0\n", out)
  end)

  it("receives scalars of each type", function()
    local out = ok_host [[
      print(tycho.tasks.c_scalars(tycho.zeros(2), 0.25, 3, true, "four"):totable()[1])
    ]]
    assert.matches("^8%.25\n", out)
  end)

  it("keeps its traits from C: parallel = all splits 16 elements", function()
    local out = ok_host([[
      local p = tycho.tasks.c_pieces(tycho.zeros(16))
      print(p:max():item())
    ]], 4)
    assert.is_true(tonumber(out:match("^(%d+)")) > 1, out)
  end)

  it("gives identical results for 1, 2, 3 and 8 processors", function()
    local code = [[
      local x = tycho.linspace(-2, 2, 1001)
      local y = tycho.tasks.c_axpy(x, x * x, nil, 1.5)
      local idx = tycho.arange(1001) % 7 + 1
      local g = tycho.tasks.c_gather(y, idx)
      local lo, hi = tycho.tasks.c_minmax(y)
      local t = {}
      for _, v in ipairs(g:totable()) do t[#t + 1] = string.format("%.17g", v) end
      print(table.concat(t, ","), lo:item(), hi:item())
    ]]
    local first
    for _, cpus in ipairs { 1, 2, 3, 8 } do
      local out = ok_host(code, cpus)
      if not first then first = out else assert.are.equal(first, out) end
    end
  end)

  it("reports a failure with the task, the piece and its message", function()
    local out = ok_host([[
      local x = tycho.arange(30) * 1.0
      local a = tycho.tasks.c_axpy(x, x, nil, 1)
      local ok, err = pcall(function() return tycho.tasks.c_fail(x, nil, 2):totable() end)
      print(ok, err)
      print(a:sum():item())
    ]], 3)
    assert.matches("false\t[^\n]*task 'c_fail' failed in piece 2 of 3: C failure in piece 2 of 3 "
                   .. "%(launched at [^\n]+:%d+%)\n", out)
    assert.matches("\n870%.0\n", out)
  end)

  it("fails alone when it fuses with launches that do not depend on it", function()
    -- c_pw_fail is point-wise: it fuses with the element-wise launches
    -- around it; y and z do not read its output and keep numpy's values
    for _, cpus in ipairs{1, 3} do
      local out = ok_host([[
        local x = tycho.arange(30000) * 1.0 - 100
        local r = tycho.tasks.c_pw_fail(x, nil)
        local y = x * 2 + 1
        local w = r + y
        local z = (y * 0.5):sum()
        print(pcall(tycho.flush))
        print(y:sum():item(), z:item())
        print(pcall(function() return w:sum():item() end))
        for _, e in ipairs(tycho.explain(4)) do if e.task == "fused" then print(e.fused_ops) end end
      ]], cpus)
      assert.matches("^false\t[^\n]*task 'c_pw_fail' %(fused%): C failure: element 1 is negative", out)
      -- numpy: y = (np.arange(30000.) - 100) * 2 + 1; y.sum(), (y * .5).sum()
      assert.matches("\n894000000%.0\t447000000%.0\n", out)
      assert.matches("\nfalse\t[^\n]*the value is unavailable: launch #%d+ failed: [^\n]*c_pw_fail", out)
      assert.matches("c_pw_fail", out:match("\n([^\n]*)\n$"))
    end
  end)

  it("checks arguments at the call, naming the task and the argument", function()
    local out = ok_host [[
      local function try(...) print((select(2, pcall(...)))) end
      local axpy = tycho.tasks.c_axpy
      try(axpy, tycho.zeros(2), tycho.zeros(3), nil, 1)
      try(axpy, tycho.zeros(2), 3, nil, 1)
      try(axpy, tycho.zeros(2), tycho.zeros(2), nil, "x")
      try(axpy, tycho.zeros(2), tycho.zeros(2), nil, 1, 5)
      try(function() return tycho.tasks.c_gather(tycho.zeros(2), tycho.zeros(3)):totable() end)
    ]]
    assert.matches("tycho.task 'c_axpy': argument 2 %(in%) has shape %(3,%), argument 1 %(in%) has shape %(2,%)", out)
    assert.matches("tycho.task 'c_axpy': argument 2 %(in%) must be a store, got number", out)
    assert.matches("tycho.task 'c_axpy': argument 4 %(scalar:f64%) must be a number, got string", out)
    assert.matches("tycho.task 'c_axpy': takes 4 arguments %(in, in, out, scalar:f64%), got 5", out)
    assert.matches("task 'c_gather' failed in piece %d of %d: indices must be i64", out)
  end)

  it("without a signature is declared from Lua, and not before", function()
    local out = ok_host [[
      print(pcall(function() return tycho.tasks.c_nosig end))
      print(pcall(tycho.task, { name = "c_nosig", args = { "in", "out" }, body = function() end }))
      local f = tycho.task { name = "c_nosig", args = { "in", "out" } }
      print(table.concat(f(tycho.arange(3) * 1.0):totable(), " "), tycho.tasks.c_nosig == f)
    ]]
    assert.matches("false\t[^\n]*'c_nosig' is a C or built%-in task without a signature", out)
    assert.matches("false\t[^\n]*a task of this name already exists", out)
    assert.matches("1%.0 2%.0 3%.0\ttrue", out)
  end)

  it("shows in explain like a Lua task: its trait, :with{} options and scopes", function()
    local out = ok_host([[
      local function show()
        local e = tycho.explain(1)[1]
        print(e.task, e.pieces, e.mode, e.from.mode, e.favor, e.from.favor)
      end
      local y = tycho.zeros(64)
      tycho.flush()
      tycho.tasks.c_pieces(y); show()                                  -- trait all
      tycho.tasks.c_pieces:with { parallel = "single" }(y); show()      -- launch option
      tycho.tasks.c_pieces:with { favor = "debug" }(y); show()
      tycho.parallel({ mode = "single", favor = "max-concurrency" }, function()
        tycho.tasks.c_pieces(y); show()                                -- the trait beats the scope
        tycho.tasks.c_axpy(y, y, nil, 1); show()                       -- no trait: the scope decides
      end)
      print(y:max():item())
    ]], 4)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.matches("^c_pieces\t4\tall\ttrait of task 'c_pieces'\tmin%-peak%-memory\tdefault$", lines[1], 1)
    assert.matches("^c_pieces\t1\tsingle\tlaunch option\t", lines[2], 1)
    assert.matches("^c_pieces\t4\tall\ttrait of task 'c_pieces'\tdebug\tlaunch option$", lines[3], 1)
    assert.matches("^c_pieces\t4\tall\ttrait of task 'c_pieces'\tmax%-concurrency\tscope at ", lines[4], 1)
    assert.matches("^c_axpy\t1\tsingle\tscope at [^\t]*\tmax%-concurrency\tscope at ", lines[5], 1)
    assert.are.equal("4.0", lines[6], out) -- c_pieces ran last in 4 pieces: 1..4
  end)

  it("lives in a host shell that runs scripts like tycho", function()
    local out, status = host("print(tycho.version, #arg)")
    assert.are.equal(0, status, out)
    assert.matches("^0%.1%.0\t0\n", out)
  end)
end)
