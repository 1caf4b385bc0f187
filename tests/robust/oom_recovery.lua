--[[
oom_recovery.lua — pieces of work over most of the API, each run under
pcall, for fault-injection runs (fault_inject.lua): with one allocation made
to fail (TYCHO_FAIL_ALLOC=k), a piece may fail, but only with an
out-of-memory error; every piece that succeeds must give the right answer;
and afterwards every piece runs again, unprotected, and must give the right
answer: the runtime recovered. Run alone, it is a plain test (everything
succeeds):

  tycho tests/robust/oom_recovery.lua

A wrong answer raises "WRONG RESULT: ...", an error that is not about memory
raises "WRONG ERROR: ..." (the fault-injection runner fails on both).
Expected values come from plain Lua loops, never from tycho.
]]

local tmp = os.tmpname()

local function close(a, b, tol)
  tol = tol or 1e-9
  return math.abs(a - b) <= tol * (1 + math.abs(b))
end

local function sum_range(n, f)
  local s = 0.0
  for i = 0, n - 1 do s = s + f(i) end
  return s
end

-- A user task (declared once; its declaration may itself fail, uncaught).
local axpy = tycho.task{ name = "oom_axpy", args = { "in", "out", "scalar" },
  traits = { parallel = "all" },
  body = function(ctx, x, y, a)
    for i = ctx.lo, ctx.hi do y[i] = a * x[i] + 1 end
  end }
local total = tycho.task{ name = "oom_total", args = { "in", "reduce:+" },
  body = function(ctx, x)
    local s = 0
    for i = ctx.lo, ctx.hi do s = s + x[i] end
    return s
  end }

local works = {
  { "fused chain", function()
      local x = tycho.arange(1000) * 1.0
      local y = (x * 2 + 1) / 4 - tycho.sqrt(x)
      return y:sum():item()
    end, sum_range(1000, function(i) return (i * 2 + 1) / 4 - math.sqrt(i) end) },
  { "f32 and an axis", function()
      local x = tycho.linspace(0, 1, 64, "f32"):reshape(8, 8)
      local s = tycho.sum(tycho.exp(x), 2)
      local t = s:totable()
      local acc = 0.0
      for i = 1, 8 do acc = acc + t[i] * i end
      return acc
    end, (function()
      local acc = 0.0
      for r = 0, 7 do
        local s = 0.0
        for c = 0, 7 do s = s + math.exp((r * 8 + c) / 63) end
        acc = acc + s * (r + 1)
      end
      return acc
    end)(), 1e-5 },
  { "views and assignment", function()
      local x = tycho.arange(1, 25):reshape(4, 6)
      local y = x:copy()
      y[{ { 2, 3 }, { 1, -1, 2 } }] = 0
      y[{ {}, 6 }] = x[{ {}, 1 }]
      y:transpose()[2]:fill(-1)
      local t = y:totable()
      local acc = 0
      for i = 1, 4 do for j = 1, 6 do acc = acc + t[i][j] * (i * 10 + j) end end
      return acc
    end, (function()
      local y = {}
      for i = 1, 4 do
        y[i] = {}
        for j = 1, 6 do y[i][j] = (i - 1) * 6 + j end
      end
      for i = 2, 3 do for j = 1, 6, 2 do y[i][j] = 0 end end
      for i = 1, 4 do y[i][6] = (i - 1) * 6 + 1 end
      for i = 1, 4 do y[i][2] = -1 end
      local acc = 0
      for i = 1, 4 do for j = 1, 6 do acc = acc + y[i][j] * (i * 10 + j) end end
      return acc
    end)() },
  { "integer reductions", function()
      local x = (tycho.arange(60) * 7 % 13):reshape(3, 4, 5)
      local a = tycho.argmax(x, 3):sum():item()
      local b = tycho.min(x, 1):sum():item()
      local c = x:max():item() * 1000 + x:argmin():item()
      return a * 1000000 + b * 1000 + c
    end, (function()
      local v = {}
      for i = 0, 59 do v[i] = (i * 7) % 13 end
      local a = 0
      for i = 0, 2 do for j = 0, 3 do
        local bi, best = 1, v[i * 20 + j * 5]
        for k = 1, 4 do
          local e = v[i * 20 + j * 5 + k]
          if e > best then bi, best = k + 1, e end
        end
        a = a + bi
      end end
      local b = 0
      for j = 0, 3 do for k = 0, 4 do
        local m = math.huge
        for i = 0, 2 do m = math.min(m, v[i * 20 + j * 5 + k]) end
        b = b + m
      end end
      local mx, amin, mn = -1, 1, math.huge
      for i = 0, 59 do
        mx = math.max(mx, v[i])
        if v[i] < mn then mn, amin = v[i], i + 1 end
      end
      return a * 1000000 + b * 1000 + mx * 1000 + amin
    end)() },
  { "matmul", function()
      local a = (tycho.arange(30) % 7):reshape(5, 6):astype("f64")
      local b = (tycho.arange(24) % 5):reshape(6, 4):astype("f64")
      local c = tycho.dot(a, b)
      return (c * tycho.arange(1, 21):reshape(5, 4)):sum():item()
    end, (function()
      local s = 0
      for i = 0, 4 do for j = 0, 3 do
        local c = 0
        for k = 0, 5 do c = c + ((i * 6 + k) % 7) * ((k * 4 + j) % 5) end
        s = s + c * (i * 4 + j + 1)
      end end
      return s
    end)() },
  { "where, comparisons, casts", function()
      local x = tycho.arange(-20, 20)
      local y = tycho.where(x:gt(3), x * 3, -x):astype("i32")
      local z = (y:astype("u8") + y:lt(0):astype("i64")):sum():item()
      return z + y:sum():item() * 1000
    end, (function()
      local s32, s8 = 0, 0
      for v = -20, 19 do
        local y = v > 3 and v * 3 or -v
        s32 = s32 + y
        s8 = s8 + (y & 0xff) + (y < 0 and 1 or 0)
      end
      return s8 + s32 * 1000
    end)() },
  { "user tasks", function()
      local x = tycho.arange(500) * 0.5
      local y = axpy(x, nil, 3)
      return total(y):item()
    end, sum_range(500, function(i) return 3 * (i * 0.5) + 1 end) },
  { "policy scopes", function()
      local r
      parallel<mode=all, overdecompose=2> do
        r = (tycho.arange(400) * 2):sum(nil, { mode = "single" })
      end
      local s = tycho.parallel({ mode = "task" }, function() return tycho.arange(100):sum() end)
      do local _ <close> = tycho.parallel{ fuse = false }
        r = r + s
      end
      return r:item()
    end, 400 * 399 + 4950 },
  { "text out", function()
      local x = tycho.arange(12):reshape(3, 4)
      local n = #tostring(x) + #tostring(x:astype("f32") / 3)
      n = n + #tycho.stats_text("json") * 0 + #tycho.stats_text("text") * 0
      local e = tycho.explain(2)
      return n + #e * 0
    end, nil },
  { "trace", function()
      tycho.trace_start(tmp .. ".json", tmp .. ".svg")
      local v = (tycho.arange(100) * 3):sum():item()
      tycho.trace_stop()
      return v
    end, 3 * 4950 },
  { ".npy", function()
      local x = tycho.arange(24):reshape(2, 3, 4):astype("f32") * 0.5
      tycho.save(tmp .. ".npy", x)
      local y = tycho.load(tmp .. ".npy")
      return (y * 2):sum():item()
    end, 276 },
  { "bincount and diagonal", function()
      local labels = tycho.arange(40) % 5 -- values 0..4: bincount has 5 entries
      local c = tycho.bincount(labels, tycho.arange(40):astype("f64"))
      local m = tycho.arange(16):reshape(4, 4):astype("f64")
      m:diagonal():fill(100)
      return (c * tycho.arange(1, 6)):sum():item() + m:sum():item()
    end, (function()
      local c = { 0, 0, 0, 0, 0 }
      for i = 0, 39 do c[i % 5 + 1] = c[i % 5 + 1] + i end
      local s = 0
      for k = 1, 5 do s = s + c[k] * k end
      local m = 0
      for i = 0, 15 do m = m + ((i % 5 == 0) and 100 or i) end
      return s + m
    end)() },
  { "many temporaries", function()
      local x = tycho.arange(2000) * 1.0
      local acc = 0.0
      for i = 1, 40 do acc = acc + (x * i - i):max():item() end
      return acc
    end, (function()
      local acc = 0.0
      for i = 1, 40 do acc = acc + 1999 * i - i end
      return acc
    end)() },
}

local function check(name, got, want, tol)
  if want == nil then return end
  if type(got) ~= "number" or not close(got, want, tol) then
    error(string.format("WRONG RESULT: %s gave %s, expected %.17g", name, tostring(got), want), 0)
  end
end

-- What the runtime holds with no work alive: the same at the end, or a
-- failure leaked a store or its charge against the memory budget.
local function held()
  collectgarbage()
  collectgarbage()
  tycho.flush()
  local m, s = tycho.memory(), tycho.stats()
  return m.reserved, s.stores_live
end
local reserved0, stores0 = held()

local failed = 0
for _ = 1, 2 do
  for _, w in ipairs(works) do
    local ok, v = pcall(w[2])
    if ok then
      check(w[1], v, w[3], w[4])
    else
      v = tostring(v)
      if v:find("WRONG", 1, true) then error(v, 0) end
      if not (v:find("memory", 1, true)) then
        error("WRONG ERROR: " .. w[1] .. " failed with an error that is not about memory: " .. v, 0)
      end
      failed = failed + 1
    end
  end
end
-- recovered: everything again, unprotected
for _, w in ipairs(works) do check(w[1], w[2](), w[3], w[4]) end
for _, ext in ipairs({ "", ".json", ".svg", ".npy" }) do os.remove(tmp .. ext) end
local reserved1, stores1 = held()
if reserved1 ~= reserved0 or stores1 ~= stores0 then
  error(string.format("WRONG RESULT: with no work alive the runtime holds %d stores and %d bytes "
    .. "of budget, against %d and %d at the start", stores1, reserved1, stores0, reserved0), 0)
end
print(string.format("oom_recovery: %d pieces of work twice, %d failed with out of memory; all right afterwards",
                    #works, failed))
