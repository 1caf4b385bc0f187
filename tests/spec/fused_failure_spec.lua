-- tests/spec/fused_failure_spec.lua — a failing task takes down only what
-- depends on it, fused or not (DESIGN §5; docs/fusion.md, "Failures").
--
-- A failing user task and element-wise launches that do not depend on it
-- flush in one window: fused into one run with it (a point-wise task), or
-- into a run that also holds launches reading its output (any task). The
-- independent results keep numpy's values; what reads the failed output
-- reads as unavailable, naming the task's error. Each case runs in a fresh
-- process under 1, 2 and 3 CPUs, interpreted and compiled, fused and not,
-- and on a simulated GPU. numpy's values: /usr/bin/python3, numpy 1.24.

local CASES = [=[
local PW = os.getenv("SPEC_PW") ~= "0"
local bad = tycho.task{name = "bad", args = {"in", "out"}, traits = {pointwise = PW},
  body = function(ctx, a, b)
    for i = ctx.lo, ctx.hi do
      if a[i] >= 50 then error("kaboom") end
      b[i] = a[i] * 10
    end
  end}
local bad2 = tycho.task{name = "bad2", args = {"in", "out"}, traits = {pointwise = PW},
  body = function(ctx, a, b) error("kaboom2") end}
local good = tycho.task{name = "good", args = {"in", "out"}, traits = {pointwise = PW},
  body = function(ctx, a, b) for i = ctx.lo, ctx.hi do b[i] = a[i] + 0.5 end end}
local function show(name, s, whole)
  local ok, v = pcall(function()
    if whole then return table.concat(s:totable(), " ") end
    return string.format("%.17g", s:sum():item())
  end)
  if ok then print(name, v)
  else print(name, "ERR", tostring(v):match("task '[%w_]+'[^\n]*kaboom2?") or tostring(v)) end
end
local function case(title, f)
  print("== " .. title)
  local stores = f()
  print("flush", tostring(select(2, pcall(tycho.flush))):match("kaboom2?") or "ok")
  for _, kv in ipairs(stores) do show(kv[1], kv[2], kv[3]) end
end
case("A", function()
  local x = tycho.arange(10) * 1.0
  local r = tycho.empty({10}); bad(x + 45, r)
  local y = x * 2 + 1
  local w = r + y
  return {{"x", x, true}, {"y", y, true}, {"r", r}, {"w", w}}
end)
case("B", function() -- several pieces and blocks; only the last sixth fails
  local n = 300000
  local x = tycho.arange(n) * (60 / n)
  local r = tycho.empty({n}); bad(x, r)
  local y = tycho.exp(x * 0.01) + x
  local w = (r * 2 + y) * 0.5
  local v = r - 1
  local z = y * 3
  return {{"y", y}, {"r", r}, {"w", w}, {"v", v}, {"z", z}}
end)
case("C", function() -- an independent reduction ends the run
  local x = tycho.arange(200000) * 1.0
  local r = tycho.empty({200000}); bad2(x, r)
  local s = (x * 3 - 1):sum()
  local y = x + 2
  local t = (r * 3 + y):sum()
  return {{"s", s}, {"y", y}, {"t", t}}
end)
case("D", function() -- 2-D
  local x = tycho.arange(300 * 400):reshape(300, 400) * (1 / 1000)
  local r = tycho.empty({300, 400}); bad2(x, r)
  local y = tycho.sin(x) * 2 + x
  local w = r + y
  local s = (y * 2):sum()
  return {{"y", y}, {"w", w}, {"s", s}}
end)
case("E", function() -- a task that succeeds next to one that fails
  local x = tycho.arange(50000) * 1.0
  local r = tycho.empty({50000}); bad2(x, r)
  local y = x * 2
  local g = tycho.empty({50000}); good(y, g)
  local w = r + g
  local z = g - y
  return {{"y", y}, {"g", g}, {"w", w}, {"z", z}}
end)
case("F", function() -- an in-place update and an output written again
  local x = tycho.arange(1000) * 1.0
  local a = tycho.ones({1000})
  local r = tycho.zeros({1000})
  tycho.flush()
  bad2(x, r)
  a[{}] = a * 3 + x
  local w = r * a
  r[{}] = x + 1
  return {{"a", a}, {"w", w}, {"r", r}}
end)
]=]

-- numpy's values (sums are compared within 1e-12, relative)
local WANT = {
  A = {x = "0 1 2 3 4 5 6 7 8 9", y = "1 3 5 7 9 11 13 15 17 19", r = "bad", w = "bad"},
  B = {y = 9411028.9891359936, r = "bad", w = "bad", v = "bad", z = 28233086.967407979},
  C = {s = 59999500000, y = 20000300000, t = "bad2"},
  D = {y = 7200311.057416793, w = "bad2", s = 14400622.114833586},
  E = {y = 2499950000, g = 2499975000, w = "bad2", z = 25000},
  F = {a = 502500, w = "bad2", r = 500500},
}

local function check(out, what)
  local case, n = nil, 0
  for line in out:gmatch("[^\n]+") do
    local title = line:match("^== (%w+)$")
    if title then
      case = title
    elseif line:match("^flush\t") then
      assert.matches("^flush\tkaboom", line, what)
    else
      local name, rest = line:match("^(%w+)\t(.*)$")
      assert(name and case and WANT[case], what .. ": unexpected line: " .. line)
      local want = WANT[case][name]
      assert(want ~= nil, what .. ": unexpected store " .. case .. "." .. name)
      n = n + 1
      if want == "bad" or want == "bad2" then
        local task, msg = rest:match("^ERR\ttask '([%w_]+)'.-(kaboom2?)$")
        assert(task, what .. ": " .. case .. "." .. name .. " should be unavailable, got " .. rest)
        assert.are.equal(want == "bad" and "kaboom" or "kaboom2", msg, what .. ": " .. case .. "." .. name)
      elseif type(want) == "string" then
        assert.are.equal(want, (rest:gsub("%.0", "")), what .. ": " .. case .. "." .. name)
      else
        local got = tonumber(rest)
        assert(got, what .. ": " .. case .. "." .. name .. " should have a value, got " .. rest)
        spec_close(got, want, 1e-12, what .. ": " .. case .. "." .. name)
      end
    end
  end
  local total = 0
  for _, t in pairs(WANT) do for _ in pairs(t) do total = total + 1 end end
  assert.are.equal(total, n, what .. ": stores checked\n" .. out)
end

describe("a failing task fused with independent launches", function()
  for _, pw in ipairs{"1", "0"} do
    local kind = pw == "1" and "a point-wise task in the run" or "a task before a run that reads it"
    it("keeps the independent results, " .. kind .. ", any CPUs, interpreted or compiled", function()
      local first
      for _, cpus in ipairs{"1", "2", "3"} do
        for _, cg in ipairs{"off", "always"} do
          for _, fuse in ipairs{"true", "false"} do
            local what = string.format("cpus %s, codegen %s, fuse %s", cpus, cg, fuse)
            local out = spec_lua(CASES, {SPEC_PW = pw, TYCHO_CPUS = cpus, TYCHO_CODEGEN = cg,
                                         TYCHO_CODEGEN_WAIT = "1", TYCHO_FUSE = fuse})
            check(out, what)
            -- the same bits everywhere, fused or not (names: the fused run's first failure)
            local values = out:gsub("ERR\t[^\n]*", "ERR")
            if not first then first = values else assert.are.equal(first, values, what) end
          end
        end
      end
    end)
    it("keeps them on a simulated GPU, " .. kind, function()
      for _, fuse in ipairs{"true", "false"} do
        check(spec_lua(CASES, {SPEC_PW = pw, TYCHO_CPUS = "2", TYCHO_GPUS = "sim:1", TYCHO_FUSE = fuse}),
              "gpus sim:1, fuse " .. fuse)
      end
    end)
  end

  it("says in explain why a run with unavailable inputs stays on the CPU", function()
    local out = spec_lua([[
      local bad = tycho.task{name = "bad", args = {"in", "out"}, body = function() error("kaboom") end}
      local x = tycho.arange(300000) * 1.0
      local r = tycho.empty({300000}); bad(x, r)
      local y = x * 2 + 1
      local w = r + y
      pcall(tycho.flush)
      for _, e in ipairs(tycho.explain(8)) do
        if e.task == "fused" and e.fused_ops:find("add add") then print(e.placement) end
      end
      print(y:sum():item())
    ]], {TYCHO_GPUS = "sim:1"})
    assert.matches("ran on the CPU: it skips the operations that read inputs a failed launch left unavailable", out, 1, true)
    assert.matches("\n90000000000%.0\n$", out) -- numpy: (np.arange(300000.) * 2 + 1).sum()
  end)
end)
