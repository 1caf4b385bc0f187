-- tests/spec/policy_spec.lua — the policy levels through the Lua API
-- (DESIGN.md section 3, issue 4): precedence of every level against every
-- other (launch option > task trait > store hint > innermost scope > outer
-- scope > global > default), nesting field by field, scopes closed by
-- errors, break, goto and return, scopes in coroutines, store hints, options
-- tables on built-ins, tycho.explain's fields, and results that do not
-- depend on the mode, the piece count or the processor count.
--
-- Every launch here is identified through tycho.explain(1): the level that
-- decided the mode is in `from.mode`. The global level needs a process of
-- its own (TYCHO_PARALLEL, --parallel): those rows run the same probe in a
-- fresh shell.

local has = function(s, needle) return s:find(needle, 1, true) ~= nil end

if not tycho.parallel then
  describe("policy levels", function()
    it("need tycho.parallel (lua/lpolicy.c, see notes/integrate-SUGAR.md)", function()
      pending("tycho.parallel is not wired into the module yet")
    end)
  end)
  return
end

local CPUS = tycho.config().cpus
local HAS_TASKS = type(tycho.task) == "function"

-- The probe, as source: it runs here and in the fresh shells of the global
-- rows. probe(lv) makes one launch with the levels lv sets (option, trait,
-- hint, inner, outer: a mode each) and returns the mode explain reports and
-- the level it names.
local PROBE = [[
local tycho = tycho or require "tycho"
local probe_tasks = {}
local function task_for(trait)
  local name = "policy_spec_probe_" .. trait
  probe_tasks[trait] = probe_tasks[trait] or tycho.tasks[name] or tycho.task {
    name = name, args = { "in", "out" }, traits = { parallel = trait },
    body = function(ctx, x, y) for i = ctx.lo, ctx.hi do y[i] = x[i] + 1 end end,
  }
  return probe_tasks[trait]
end
function probe(lv)
  local x = tycho.ones(100)
  tycho.flush()
  if lv.hint then x:hint { parallel = lv.hint } end
  local function launch()
    if lv.trait then
      local t = task_for(lv.trait)
      if lv.option then t = t:with { parallel = lv.option } end
      return t(x)
    end
    if lv.option then return tycho.exp(x, { mode = lv.option }) end
    return tycho.exp(x)
  end
  local function inner()
    if lv.inner then return tycho.parallel({ mode = lv.inner }, launch, "scope at inner") end
    return launch()
  end
  local function outer()
    if lv.outer then return tycho.parallel({ mode = lv.outer }, inner, "scope at outer") end
    return inner()
  end
  outer()
  local e
  for _, f in ipairs(tycho.explain(16)) do
    if not e or f.seq > e.seq then e = f end
  end
  return e.mode, e.from.mode
end
]]
assert(load(PROBE, "=probe"))()

-- Levels, most specific first, with the text explain gives each.
local LEVELS = {
  { name = "option", from = "launch option" },
  { name = "trait", from = "trait of task 'policy_spec_probe_" },
  { name = "hint", from = "hint on store #" },
  { name = "inner", from = "scope at inner" },
  { name = "outer", from = "scope at outer" },
  { name = "global", from = "global TYCHO_PARALLEL" },
  { name = "default", from = "default" },
}

-- Every (more specific, less specific) pair, both ways round.
local ROWS = {}
for i = 1, #LEVELS - 1 do
  for j = i + 1, #LEVELS do
    for _, vals in ipairs { { "single", "all" }, { "all", "single" } } do
      ROWS[#ROWS + 1] = { win = LEVELS[i], lose = LEVELS[j], v = vals[1], w = vals[2] }
    end
  end
end

local function levels_of(row)
  local lv = {}
  if row.win.name ~= "global" then lv[row.win.name] = row.v end
  if row.lose.name ~= "global" and row.lose.name ~= "default" then lv[row.lose.name] = row.w end
  return lv
end

local function serialize(t)
  local parts = {}
  for k, v in pairs(t) do parts[#parts + 1] = string.format("%s = %q", k, v) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- Run the probe for `rows` in a fresh shell with `env` and shell `args`;
-- returns one "mode|from" per row.
local function probe_elsewhere(rows, env, args)
  local code = { PROBE }
  for _, row in ipairs(rows) do
    code[#code + 1] = string.format("print((function() local m, f = probe(%s) return m .. '|' .. f end)())",
                                    serialize(levels_of(row)))
  end
  local bin = assert(os.getenv("TYCHO_BIN"), "TYCHO_BIN names the shell")
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(table.concat(code, "\n"), "\n")
  f:close()
  local envs = {}
  for k, v in pairs(env) do envs[#envs + 1] = k .. "=" .. v end
  local p = assert(io.popen(string.format("env %s '%s' %s '%s' 2>&1", table.concat(envs, " "), bin,
                                          args or "", path)))
  local out = p:read("a")
  p:close()
  os.remove(path)
  local lines = {}
  for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
  assert(#lines == #rows, "probe output:\n" .. out)
  return lines
end

describe("policy precedence", function()
  for _, row in ipairs(ROWS) do
    local title = string.format("%s (%s) beats %s (%s)", row.win.name, row.v, row.lose.name, row.w)
    it(title, function()
      if (row.win.name == "trait" or row.lose.name == "trait") and not HAS_TASKS then
        pending("task traits need tycho.task")
      end
      if row.lose.name == "global" or row.win.name == "global" then
        local g = row.win.name == "global" and row.v or row.w
        local got = probe_elsewhere({ row }, { TYCHO_PARALLEL = g })[1]
        local mode, from = got:match("^([^|]*)|(.*)$")
        assert.are.equal(row.v, mode, got)
        assert.is_truthy(has(from, row.win.from), got)
        return
      end
      local mode, from = probe(levels_of(row))
      assert.are.equal(row.v, mode)
      assert.is_truthy(has(from, row.win.from), from)
    end)
  end

  it("global level: TYCHO_PARALLEL, and --parallel over it", function()
    local rows = { { win = LEVELS[7], lose = LEVELS[7], v = "x", w = "x" } }
    local got = probe_elsewhere(rows, { TYCHO_PARALLEL = "single" })[1]
    assert.are.equal("single|global TYCHO_PARALLEL", got)
    local help = io.popen("'" .. os.getenv("TYCHO_BIN") .. "' --help"):read("a")
    if not has(help, "--parallel") then pending("the shell has no --parallel option yet") end
    got = probe_elsewhere(rows, { TYCHO_PARALLEL = "single" }, "--parallel all")[1]
    assert.are.equal("all|global --parallel", got)
  end)

  it("default level: auto", function()
    assert.are.same({ "auto", "default" }, { probe {} })
  end)
end)

-- ---------------------------------------------------------------------------

-- The entry of the latest launch: explain lists launches in the order they
-- ran, which the scheduler may change within a flush; the latest launch is
-- in the entry with the highest seq.
local function last()
  local best
  for _, e in ipairs(tycho.explain(64)) do
    if not best or e.seq > best.seq then best = e end
  end
  return best
end
local function small() local x = tycho.ones(100); tycho.flush(); return x end
local function depth() return select(2, tycho._scopes()) end

describe("scopes", function()
  after_each(function() assert.are.equal(0, depth()) end)

  it("nest field by field: an inner overdecompose keeps the outer mode", function()
    local x = small()
    do
      local _ <close> = tycho.parallel { mode = "all" }
      do
        local _ <close> = tycho.parallel { overdecompose = 2 }
        local _ = x + 1
        local e = last()
        assert.are.equal("all", e.mode)
        assert.are.equal(2, e.overdecompose)
        assert.are.equal(CPUS * 2, e.pieces)
        assert.is_truthy(has(e.from.mode, "policy_spec.lua:"), e.from.mode)
        assert.are_not.equal(e.from.mode, e.from.overdecompose)
      end
      local _ = x + 1
      assert.are.equal(1, last().overdecompose)
      assert.are.equal(CPUS, last().pieces)
    end
  end)

  it("an inner scope overrides an outer one on the same axis, until it closes", function()
    local x = small()
    tycho.parallel({ mode = "all" }, function()
      tycho.parallel({ mode = "single" }, function()
        local _ = x * 2
        assert.are.same({ "single", 1 }, { last().mode, last().pieces })
      end)
      local _ = x * 2
      assert.are.equal("all", last().mode)
    end)
    local _ = x * 2
    assert.are.equal("default", last().from.mode)
  end)

  it("name the line that opened them", function()
    local x = small()
    local line = debug.getinfo(1, "l").currentline + 1
    local s <close> = tycho.parallel { mode = "all" }
    local _ = x - 1
    assert.are.equal("scope at " .. debug.getinfo(1, "S").short_src .. ":" .. line, last().from.mode)
    s:close()
  end)

  it("close when an error leaves the block", function()
    local ok, err = pcall(function()
      local _ <close> = tycho.parallel { mode = "single" }
      error("boom")
    end)
    assert.is_false(ok)
    assert.is_truthy(has(err, "boom"))
    assert.are.equal(0, depth())
    local x = small()
    local _ = x + 1
    assert.are.equal("default", last().from.mode)
  end)

  it("close on break, goto and return", function()
    for i = 1, 3 do
      local _ <close> = tycho.parallel { mode = "all" }
      if i == 2 then break end
    end
    assert.are.equal(0, depth())
    do
      local _ <close> = tycho.parallel { mode = "all" }
      goto out
    end
    ::out::
    assert.are.equal(0, depth())
    local function f()
      local _ <close> = tycho.parallel { mode = "all" }
      return depth()
    end
    assert.are.equal(1, f())
  end)

  it("closure form: returns fn's results, closes on error with the error unchanged", function()
    assert.are.same({ 1, 2, 3 }, { tycho.parallel({ mode = "all" }, function() return 1, 2, 3 end) })
    local obj = { "an error object" }
    local ok, err = pcall(tycho.parallel, { mode = "all" }, function() error(obj) end)
    assert.is_false(ok)
    assert.are.equal(obj, err)
    local line = debug.getinfo(1, "l").currentline + 1
    ok, err = pcall(tycho.parallel, { mode = "all" }, function() error("deep") end)
    assert.are.equal(debug.getinfo(1, "S").short_src .. ":" .. line .. ": deep", err)
  end)

  it("closure form keeps the traceback of an error inside fn", function()
    local tb
    local src, line = debug.getinfo(1, "S").short_src, debug.getinfo(1, "l").currentline + 2
    xpcall(function()
      tycho.parallel({ mode = "all" }, function() error("inside") end)
    end, function(m) tb = debug.traceback(m) end)
    assert.is_truthy(has(tb, "inside"))
    -- the frame of fn itself, which a pcall-and-rethrow would have lost
    assert.is_truthy(has(tb, string.format("%s:%d: in function <%s:%d>", src, line, src, line)), tb)
  end)

  it("close out of order: closing the outer keeps the inner", function()
    local x = small()
    local outer = tycho.parallel { mode = "all", overdecompose = 3 }
    local inner = tycho.parallel { mode = "single" }
    outer:close()
    local _ = x + 1
    assert.are.equal("single", last().mode)
    assert.are.equal(1, last().overdecompose) -- the outer's overdecompose is gone
    inner:close()
    inner:close() -- twice is fine
    assert.are.equal(0, depth())
    assert.is_truthy(has(tostring(inner), "closed"))
  end)

  it("carry every axis, even those the core does not act on yet", function()
    local x = small()
    tycho.parallel({ favor = "debug", memory = "1GB", stream = "relaxed", fuse = false,
                     fastmath = true, min_chunk = "1KiB" }, function()
      local _ = x + 1
      local e = last()
      assert.are.same({ "debug", 1000000000, "relaxed", false, true, 1024 },
                      { e.favor, e.memory, e.stream, e.fuse, e.fastmath, e.min_chunk })
      for _, axis in ipairs { "favor", "memory", "stream", "fuse", "fastmath", "min_chunk" } do
        assert.is_truthy(has(e.from[axis], "scope at"), axis .. ": " .. e.from[axis])
      end
    end)
  end)

  it("reject unknown keys and values, naming them and the valid ones", function()
    assert.has_error(function() tycho.parallel { mode = "most" } end,
      "tycho.parallel: options: mode must be one of auto, all, single, task; got 'most'")
    local ok, err = pcall(tycho.parallel, { colour = "red" })
    assert.is_false(ok)
    assert.is_truthy(has(err, "'colour'") and has(err, "overdecompose"), err)
    ok, err = pcall(tycho.parallel, { overdecompose = 0 })
    assert.is_truthy(has(err, "overdecompose must be an integer in 1..4096"), err)
    ok, err = pcall(tycho.parallel, "all")
    assert.is_truthy(has(err, "options must be a table"), err)
    ok, err = pcall(tycho.parallel, { mode = "all" }, 42)
    assert.is_truthy(has(err, "argument 2 must be a function"), err)
    assert.are.equal(0, depth())
  end)

  it("nest up to the runtime's limit and say so past it", function()
    local opened = {}
    local ok, err = pcall(function()
      for i = 1, 100 do opened[i] = tycho.parallel { overdecompose = 1 } end
    end)
    assert.is_false(ok)
    assert.is_truthy(has(err, "tycho.parallel: scopes nest 64 deep at most"), err)
    for i = #opened, 1, -1 do opened[i]:close() end
  end)
end)

describe("scopes and coroutines", function()
  after_each(function() assert.are.equal(0, depth()) end)

  it("a scope opened in a coroutine does not steer the main thread", function()
    local x = small()
    local co = coroutine.wrap(function()
      local _ <close> = tycho.parallel { mode = "single" }
      coroutine.yield()
      local _ = x + 1
      coroutine.yield(last().mode)
      return "done"
    end)
    co()
    assert.are.equal(0, depth()) -- the main thread has none
    local _ = x + 2
    assert.are.equal("default", last().from.mode)
    assert.are.equal("single", co()) -- the coroutine still has its own
    local _ = x + 3
    assert.are.equal("default", last().from.mode)
    assert.are.equal("done", co())
  end)

  it("the main thread's scope does not steer a coroutine started outside it", function()
    local x = small()
    local co = coroutine.create(function()
      coroutine.yield()
      local _ = x + 1
      return last().from.mode
    end)
    coroutine.resume(co)
    tycho.parallel({ mode = "all" }, function()
      local _ = x + 1
      assert.are.equal("all", last().mode)
      local ok, from = coroutine.resume(co)
      assert.is_true(ok)
      assert.are.equal("default", from)
      local _ = x + 1
      assert.are.equal("all", last().mode) -- back in the main thread's scope
    end)
  end)

  it("the closure form works across yields", function()
    local x = small()
    local co = coroutine.wrap(function()
      return tycho.parallel({ mode = "single" }, function()
        coroutine.yield(depth())
        local _ = x + 1
        return last().mode
      end)
    end)
    assert.are.equal(1, co())
    local _ = x + 1
    assert.are.equal("auto", last().mode)
    assert.are.equal("single", co())
  end)

  it("a coroutine that dies or is closed inside a scope leaves the others alone", function()
    local x = small()
    local co = coroutine.create(function()
      local _ <close> = tycho.parallel { mode = "single" }
      error("dies")
    end)
    assert.is_false((coroutine.resume(co)))
    local _ = x + 1
    assert.are.equal("default", last().from.mode)
    co = coroutine.create(function()
      local _ <close> = tycho.parallel { mode = "single" }
      coroutine.yield()
    end)
    coroutine.resume(co)
    assert.is_true(coroutine.close(co))
    local _ = x + 1
    assert.are.equal("default", last().from.mode)
  end)
end)

describe("store hints", function()
  it("x:hint{...} steers launches aligned with x and returns x", function()
    local x = small()
    assert.are.equal(x, x:hint { parallel = "all" })
    local y = x * 2
    assert.are.same({ "all", CPUS }, { last().mode, last().pieces })
    assert.is_truthy(has(last().from.mode, "hint on store #"))
    local _ = y + 1 -- what x drives is split like it
    assert.are.equal("all", last().mode)
    x:hint()
    local _ = x * 2
    assert.are.equal("default", last().from.mode)
  end)

  it("rejects bad hints", function()
    local x = small()
    assert.has_error(function() x:hint { parallel = "lots" } end,
      "tycho.hint: options: parallel must be one of auto, all, single, task; got 'lots'")
    assert.has_error(function() x:hint("all") end,
      "tycho.hint: options must be a table such as {parallel = \"all\"}, got string")
    assert.has_error(function() tycho.hint(42, {}) end)
  end)
end)

describe("options tables on built-in functions", function()
  local x
  before_each(function() x = small() end)

  it("steer that call's launches only", function()
    local _ = tycho.exp(x, { mode = "all" })
    assert.are.same({ "all", "launch option" }, { last().mode, last().from.mode })
    local _ = tycho.exp(x)
    assert.are.equal("default", last().from.mode)
  end)

  it("beat scopes and hints", function()
    x:hint { parallel = "all" }
    tycho.parallel({ mode = "all" }, function()
      local _ = tycho.sqrt(x, { mode = "single" })
      assert.are.same({ "single", 1, "launch option" }, { last().mode, last().pieces, last().from.mode })
    end)
    x:hint()
  end)

  it("work on methods, reductions with and without an axis, binaries and where", function()
    local m = tycho.ones({ 10, 10 })
    tycho.flush()
    local _ = x:exp { mode = "single" }
    assert.are.equal("launch option", last().from.mode)
    assert.are.equal(100.0, x:sum({ mode = "all" }):item())
    assert.are.equal("launch option", last().from.mode)
    assert.are.same({ 10, 10, 10, 10, 10, 10, 10, 10, 10, 10 }, m:sum(1, { mode = "all" }):totable())
    assert.are.equal("launch option", last().from.mode)
    local _ = tycho.add(x, 1, { overdecompose = 3, mode = "all" })
    assert.are.same({ 3, CPUS * 3 }, { last().overdecompose, last().pieces })
    local _ = tycho.where(x:gt(0), x, 0, { mode = "single" })
    assert.are.equal("launch option", last().from.mode)
    local _ = tycho.dot(m, m, { mode = "single" })
    assert.are.equal("launch option", last().from.mode)
  end)

  it("are cleared when the call fails", function()
    assert.has_error(function() tycho.exp("nope", { mode = "single" }) end)
    local _ = tycho.exp(x)
    assert.are.equal("default", last().from.mode)
    assert.has_error(function() tycho.exp(x, { mode = "sometimes" }) end,
      "tycho.exp: options: mode must be one of auto, all, single, task; got 'sometimes'")
  end)

  it("keep the old messages for a table where an operand belongs", function()
    assert.has_error(function() tycho.add(x, { 1, 2 }) end,
      "tycho.add: argument 2 must be a store or a number, got table")
  end)
end)

describe("tycho.explain", function()
  it("returns entries with every field, oldest first", function()
    local x = tycho.ones({ 60, 40 })
    tycho.flush()
    tycho.parallel({ mode = "all" }, function() local _ = x * 2 end)
    local t = tycho.explain(2)
    assert.are.equal(2, #t)
    assert.is_true(t[1].seq < t[2].seq)
    local e = t[2]
    assert.are.same({ 60, 40 }, e.shape)
    assert.are.equal("cpu", e.target)
    assert.are.equal(CPUS, e.pieces)
    local prod = 1
    for _, k in ipairs(e.tiling) do prod = prod * k end
    assert.are.equal(e.pieces, prod)
    assert.are.equal(2, #e.tiling)
    for _, k in ipairs { "task", "why", "partition", "mode", "favor", "stream", "fused_ops", "fuse_end" } do
      assert.are.equal("string", type(e[k]), k)
    end
    for _, k in ipairs { "seq", "pieces", "overdecompose", "min_chunk", "memory", "fused" } do
      assert.is_truthy(math.type(e[k]) == "integer", k)
    end
    for _, axis in ipairs { "mode", "overdecompose", "min_chunk", "favor", "fuse", "fastmath", "memory", "stream" } do
      assert.are.equal("string", type(e.from[axis]), axis)
    end
    -- the processor a one-piece launch ran on (always in task mode), else nil
    assert.is_truthy(e.processor == nil or math.type(e.processor) == "integer")
  end)

  it("prints as explain's table", function()
    local x = small()
    local _ = x + 1
    local s = tostring(tycho.explain(1))
    assert.is_truthy(s:find("^launch%s+task%s+shape%s+target%s+pieces%s+tiling%s+why\n"), s)
    assert.is_truthy(has(s, "(100,)"), s)
    assert.is_truthy(has(s, "mode=auto (default)"), s)
  end)

  it("names the processor of each launch in task mode", function()
    local outs = {}
    tycho.parallel({ mode = "task" }, function()
      for i = 1, CPUS do outs[i] = tycho.full(4, i) end
    end)
    local t = tycho.explain(CPUS)
    local seen = {}
    for _, e in ipairs(t) do
      assert.are.equal("task", e.mode)
      assert.are.equal(1, e.pieces)
      assert.is_truthy(math.type(e.processor) == "integer")
      seen[e.processor] = true
    end
    local n = 0
    for _ in pairs(seen) do n = n + 1 end
    assert.are.equal(CPUS, n)
    for i = 1, CPUS do assert.are.same({ i, i, i, i }, outs[i]:totable()) end
  end)

  it("rejects a bad count", function()
    assert.has_error(function() tycho.explain(0) end, "tycho.explain: n must be a positive integer, got 0")
    assert.has_error(function() tycho.explain("x") end)
  end)
end)

-- ---------------------------------------------------------------------------
-- Results must not depend on how launches are split. Checked exactly (%a of
-- every value) for element-wise chains, where, min/max, argmin/argmax,
-- integer sums and sums along an axis; in every mode and overdecompose here,
-- and under 1, 3 and 8 processors in fresh shells.

local WORKLOAD = [[
local tycho = tycho or require "tycho"
local function fp(t)
  local parts = {}
  local function walk(v)
    if type(v) == "table" then for _, e in ipairs(v) do walk(e) end
    else parts[#parts + 1] = string.format("%a", v) end
  end
  walk(t)
  return table.concat(parts, ",")
end
function workload()
  tycho.seed(7)
  local x = tycho.random({ 300, 200 })
  local k = tycho.arange(60000):reshape({ 300, 200 }) % 97
  local y = tycho.exp(x * 2 + 1) - x / 3
  return {
    ew = fp(y:totable()),
    where = fp(tycho.where(x:gt(0.5), x, -x):totable()),
    minmax = fp((x:max(2) - x:min(1):sum()):totable()),
    arg = x:argmax():item() .. ";" .. fp(x:argmin(1):totable()),
    isum = k:sum():item() .. ";" .. fp(k:sum(1):totable()),
    axis = fp(x:sum(1):totable()) .. ";" .. fp(x:mean(2):totable()),
    full = fp({ x:sum():item(), x:prod():item(), x:mean():item(), (x * 2 + 1):sum():item() }),
    matmul = fp(x:dot(tycho.random({ 200, 7 })):totable()),
  }
end
function all_modes()
  local ref, n = nil, 0
  for _, mode in ipairs { "auto", "single", "all", "task" } do
    for _, od in ipairs { 1, 3 } do
      local got = tycho.parallel({ mode = mode, overdecompose = od }, workload)
      if ref then
        for k, v in pairs(ref) do
          if got[k] ~= v then return nil, k .. " differs in mode " .. mode .. " x" .. od end
        end
      else
        ref = got
      end
      n = n + 1
    end
  end
  local keys = {}
  for k in pairs(ref) do keys[#keys + 1] = k end
  table.sort(keys)
  local sig = {}
  for _, k in ipairs(keys) do sig[#sig + 1] = k .. "=" .. #ref[k] .. ":" .. ref[k]:sub(1, 40) .. ref[k]:sub(-40) end
  return table.concat(sig, "|"), n
end
]]
assert(load(WORKLOAD, "=workload"))()

describe("results do not depend on the split", function()
  it("in every mode and overdecompose", function()
    local sig, n = all_modes()
    assert.is_truthy(sig, n)
    assert.are.equal(8, n)
  end)

  it("under 1, 3 and 8 processors", function()
    local bin = assert(os.getenv("TYCHO_BIN"))
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write(WORKLOAD, "\nlocal sig, n = all_modes()\nprint(sig or n)\n")
    f:close()
    local outs = {}
    for _, cpus in ipairs { 1, 3, 8 } do
      local p = io.popen(string.format("TYCHO_CPUS=%d '%s' '%s' 2>&1", cpus, bin, path))
      outs[#outs + 1] = p:read("a")
      p:close()
    end
    os.remove(path)
    assert.is_truthy(outs[1]:find("^arg="), outs[1])
    assert.are.equal(outs[1], outs[2])
    assert.are.equal(outs[1], outs[3])
  end)

end)
