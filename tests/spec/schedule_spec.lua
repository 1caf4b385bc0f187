-- schedule_spec.lua — favors through the Lua API, the figures, the shell's
-- --stats and --trace (the trace parsed as JSON).
local json = require "dkjson"

local function run_shell(args)
  local bin = assert(os.getenv("TYCHO_BIN"), "TYCHO_BIN is not set")
  local p = io.popen(bin .. " " .. args .. " 2>&1")
  local out = p:read("a")
  local ok, _, code = p:close()
  return out, ok and 0 or code
end

local function chains(favor)
  local a, b
  tycho.flush()
  tycho.parallel({favor = favor, fuse = false}, function()
    tycho.seed(3)
    local x = tycho.random(50000)
    local acc
    for c = 1, 4 do
      local y = tycho.sin(x * c) + c
      acc = acc and acc + y or y
    end
    a = acc:sum()
    b = acc:max()
  end)
  tycho.flush()
  return a:item(), b:item(), tycho.stats().last_flush
end

describe("favors", function()
  it("give identical results and the expected figures", function()
    local ad, bd, d = chains("debug")
    local am, bm, m = chains("min-peak-memory")
    local ax, bx, x = chains("max-concurrency")
    assert.are.equal(ad, am)
    assert.are.equal(ad, ax)
    assert.are.equal(bd, bm)
    assert.are.equal(bd, bx)
    assert.are.equal("debug", d.favor)
    assert.are.equal(d.launches, d.waves)
    assert.are.equal(0, d.concurrent)
    assert.are.equal(d.peak_transient, m.peak_transient)
    assert.are.equal(x.critical_path, x.waves)
    assert.is_true(x.waves <= m.waves and m.waves <= d.waves)
    assert.is_true(x.concurrent > 0)
    assert.is_true(x.peak_transient >= m.peak_transient)
  end)

  it("are rejected when unknown", function()
    local ok, err = pcall(tycho.parallel, {favor = "fastest"}, function() end)
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("favor", 1, true))
  end)
end)

describe("the shell", function()
  it("prints the figures at exit with --stats", function()
    local out, code = run_shell("--stats -e 'local x = tycho.arange(1000) * 2; print(x:sum():item())'")
    assert.are.equal(0, code)
    assert.is_truthy(out:find("999000", 1, true))
    assert.is_truthy(out:find("tycho stats", 1, true))
    assert.is_truthy(out:find("waves", 1, true))
    assert.is_truthy(out:find("time +[%d.]+ s timed: %d+%% in flushes"), out) -- --stats times them
    local js = run_shell("--stats-format json -e 'tycho.arange(10):sum():item()'")
    local obj = json.decode(js:match("{.*}"))
    assert.is_table(obj)
    assert.is_true(obj.launches >= 2)
    assert.is_true(obj.timed_ns > 0 and obj.flush_ns > 0 and obj.tasks_ns > 0)
    assert.is_table(obj.last_flush)
  end)

  it("writes a trace with one event per point task", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert.is_true(os.execute("mkdir -p " .. dir))
    local path, svg = dir .. "/t.json", dir .. "/t.svg"
    local script = "local x = tycho.random(300000); local y = tycho.exp(x) * 2; " ..
                   "print(y:sum():item()); print('PIECES', tycho.stats().pieces)"
    local out, code = run_shell(string.format("--cpus 2 --trace %s --trace-svg %s -e %q", path, svg, script))
    assert.are.equal(0, code, out)
    local pieces = tonumber(out:match("PIECES%s+(%d+)"))
    local f = assert(io.open(path))
    local doc = json.decode(f:read("a"))
    f:close()
    assert.is_table(doc.traceEvents)
    local tasks = 0
    for _, e in ipairs(doc.traceEvents) do
      if e.cat == "task" then
        tasks = tasks + 1
        assert.are.equal("X", e.ph)
        assert.is_number(e.args.piece)
        assert.is_number(e.args.wave)
      end
    end
    assert.are.equal(pieces, tasks)
    local s = assert(io.open(svg)):read("a")
    assert.is_truthy(s:find("<svg", 1, true))
    os.execute("rm -rf " .. dir)
  end)

  it("refuses more GPUs than exist, saying why", function()
    local out, code = run_shell("--gpus 16 -e 'print(1)'")
    if code == 0 then return end -- a machine with 16 GPUs: nothing to refuse
    assert.is_truthy(out:find("--gpus 16", 1, true), out)
  end)
end)
