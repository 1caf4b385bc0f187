-- tests/spec/tasks_spec.lua — Lua tasks: tycho.task declarations, launches,
-- tiles, reductions, scalars, errors in bodies, refused upvalues, and the
-- worker states (leaks, isolation, Ctrl-C).
--
-- Tasks need unique names per runtime (busted runs every spec of a file in
-- one shell), so each test declares its own; `uniq` makes names for loops.

local n_uniq = 0
local function uniq(prefix)
  n_uniq = n_uniq + 1
  return prefix .. "_" .. n_uniq
end

local function totable(x) return x:totable() end

-- the line of the caller, for messages that must name it
local function line() return debug.getinfo(2, "l").currentline end

describe("a Lua task", function()
  it("reads its `in` tiles and writes its `out` tiles with global indices", function()
    local sq = tycho.task {
      name = uniq("square"), args = { "in", "out" },
      body = function(ctx, x, y)
        for i = ctx.lo, ctx.hi do y[i] = x[i] * x[i] end
      end,
    }
    local x = tycho.arange(1000) * 0.5
    local y = tycho.zeros(1000)
    local r = sq(x, y)
    assert.are.equal(y, r) -- the out store is returned
    assert.are.same(totable(x * x), totable(y))
  end)

  it("makes an omitted out store with the domain's shape and the declared dtype", function()
    local t = tycho.task {
      name = uniq("mk"), args = { "in", "out:i32", "out" },
      body = function(ctx, x, a, b)
        for i = ctx.lo, ctx.hi do a[i] = i; b[i] = x[i] + 0.25 end
      end,
    }
    local a, b = t(tycho.ones(5))
    assert.are.equal("i32", a.dtype)
    assert.are.equal("f64", b.dtype)
    assert.are.same({ 1, 2, 3, 4, 5 }, totable(a))
    assert.are.same({ 1.25, 1.25, 1.25, 1.25, 1.25 }, totable(b))
  end)

  it("reads and writes every dtype with its Lua type", function()
    local conv = tycho.task {
      name = uniq("conv"), args = { "in", "in", "out:bool", "out:u8", "out:f32", "out:i32" },
      body = function(ctx, b, f, ob, ou, of, oi)
        for i = ctx.lo, ctx.hi do
          assert(type(b[i]) == "boolean" and math.type(f[i]) == "float")
          ob[i] = not b[i]
          ou[i] = i + 250 -- wraps like a C cast: 251, 252, ..., 0, 1
          of[i] = f[i] / 4
          oi[i] = -i
        end
      end,
    }
    local b = tycho.array { true, false, true, false, true, false }
    local ob, ou, of, oi = conv(b, tycho.arange(6):astype "f32")
    assert.are.same({ false, true, false, true, false, true }, totable(ob))
    assert.are.same({ 251, 252, 253, 254, 255, 0 }, totable(ou))
    assert.are.same({ 0, 0.25, 0.5, 0.75, 1, 1.25 }, totable(of))
    assert.are.same({ -1, -2, -3, -4, -5, -6 }, totable(oi))
    assert.are.equal("f32", of.dtype)
  end)

  it("updates an `inout` store in place", function()
    local inc = tycho.task {
      name = uniq("inc"), args = { "inout", "scalar" }, traits = { parallel = "all" },
      body = function(ctx, x, by)
        for i = ctx.lo, ctx.hi do x[i] = x[i] + by end
      end,
    }
    local x = tycho.arange(7)
    inc(x, 10)
    inc(x, 100)
    assert.are.same({ 110, 111, 112, 113, 114, 115, 116 }, totable(x))
  end)

  it("lets every piece read an `in:broadcast` store whole", function()
    local rev = tycho.task {
      name = uniq("rev"), args = { "in:broadcast", "out" }, traits = { parallel = "all" },
      body = function(ctx, x, y)
        local n = #x
        for i = ctx.lo, ctx.hi do y[i] = x[n + 1 - i] end
      end,
    }
    local x = tycho.arange(100)
    local y = rev(x, tycho.zeros(100, "i64"))
    local want = {}
    for i = 1, 100 do want[i] = 100 - i end
    assert.are.same(want, totable(y))
  end)

  it("combines reductions returned by the body or accumulated into the tile", function()
    local x = tycho.random(5000) * 0.002 + 0.999 -- a product far from 0 and inf
    local ops = { ["+"] = "sum", ["*"] = "prod", min = "min", max = "max" }
    for op, builtin in pairs(ops) do
      local ret = tycho.task {
        name = uniq("ret"), args = { "in", "reduce:" .. op, "scalar" },
        traits = { parallel = "all" },
        body = function(ctx, v, r, op)
          local acc = v[ctx.lo]
          for i = ctx.lo + 1, ctx.hi do
            local e = v[i]
            if op == "+" then acc = acc + e
            elseif op == "*" then acc = acc * e
            elseif op == "min" then acc = math.min(acc, e)
            else acc = math.max(acc, e) end
          end
          return acc
        end,
      }
      local want = tycho[builtin](x):item()
      local got = ret(x, nil, op):item() -- the omitted reduction starts at op's identity
      assert.is_true(math.abs(got - want) <= 1e-9 * math.max(1, math.abs(want)),
        op .. ": " .. got .. " vs " .. want)
    end
    -- accumulation into the tile, and into the store's current value
    local acc = tycho.task {
      name = uniq("acc"), args = { "in", "reduce:+" }, traits = { parallel = "all" },
      body = function(ctx, v, r)
        for i = ctx.lo, ctx.hi do r[i] = r[i] + v[i] end
      end,
    }
    local total = tycho.full({}, 1000.0)
    acc(tycho.arange(100) * 1.0, total)
    assert.are.equal(1000 + 4950, total:item())
  end)

  it("reduces into a store broadcast over the domain (per-row sums)", function()
    local rows = tycho.task {
      name = uniq("rows"), args = { "in", "reduce:+:i64" },
      body = function(ctx, x, r)
        local i0, i1 = x:range(1)
        local j0, j1 = x:range(2)
        for i = i0, i1 do
          for j = j0, j1 do r:set(i, j, r:get(i, j) + x:get(i, j)) end
        end
      end,
    }
    local x = tycho.arange(24):reshape { 4, 6 }
    local r = tycho.zeros({ 4, 1 }, "i64")
    rows(x, r)
    assert.are.same(totable(x:sum(2):reshape { 4, 1 }), totable(r))
  end)

  it("passes scalars by value with their Lua types", function()
    local seen = tycho.task {
      name = uniq("seen"), args = { "out", "scalar", "scalar", "scalar", "scalar", "scalar:f64",
        "scalar:i64" },
      traits = { parallel = "single" },
      body = function(ctx, y, f, i, b, s, f2, i2)
        assert(math.type(f) == "float" and f == 2.5, "float " .. tostring(f))
        assert(math.type(i) == "integer" and i == 7, "integer " .. tostring(i))
        assert(b == true, "boolean")
        assert(s == "héllo", "string " .. tostring(s))
        assert(math.type(f2) == "float" and f2 == 3.0, "f64 " .. tostring(f2))
        assert(math.type(i2) == "integer" and i2 == 4, "i64 " .. tostring(i2))
        y[1] = f + i + #s + f2 + i2
      end,
    }
    local y = seen(tycho.zeros(1), 2.5, 7, true, "héllo", 3, 4.0)
    assert.are.equal(2.5 + 7 + 6 + 3 + 4, y[1])
  end)

  it("gives rank-2 tiles a[{i, j}], get/set, range, # and shape", function()
    local t = tycho.task {
      name = uniq("r2"), args = { "in", "out" }, traits = { parallel = "all" },
      body = function(ctx, x, y)
        assert(#x == 3 and x.shape[1] == 3 and x.shape[2] == 4 and x.ndim == 2)
        assert(x.dtype == "f64")
        local i0, i1 = y:range(1)
        local j0, j1 = y:range(2)
        for i = i0, i1 do
          for j = j0, j1 do
            y[{ i, j }] = x[{ i, j }] * 10
            y:set(i, j, y:get(i, j) + 1)
          end
        end
      end,
    }
    local x = tycho.arange(12):reshape { 3, 4 } * 1.0
    assert.are.same(totable(x * 10 + 1), totable(t(x)))
  end)

  it("sees ctx: piece, pieces, lo, hi covering the domain once", function()
    local mark = tycho.task {
      name = uniq("mark"), args = { "out", "out" }, traits = { parallel = "all" },
      body = function(ctx, p, c)
        assert(ctx.dim == 1 and ctx.ndim == 1)
        assert(ctx.piece >= 1 and ctx.piece <= ctx.pieces)
        local lo, hi = ctx:range(1)
        assert(lo == ctx.lo and hi == ctx.hi)
        for i = ctx.lo, ctx.hi do p[i] = ctx.piece; c[i] = ctx.pieces end
      end,
    }
    local p, c = mark(tycho.zeros(50), tycho.zeros(50))
    local pieces, last = c[1], 0
    for i = 1, 50 do
      assert.is_true(p[i] >= last) -- pieces are contiguous, in order
      last = p[i]
    end
    assert.are.equal(pieces, last)
  end)

  it("runs in a worker state with the standard libraries, not the caller's globals", function()
    caller_global = 42
    local t = tycho.task {
      name = uniq("iso"), args = { "out" }, traits = { parallel = "single" },
      body = function(ctx, y)
        local w = require "tycho"
        assert(w == tycho and type(w.worker) == "number" and w.clock() > 0)
        assert(w.is_tile(y) and not w.is_tile({}) and w.interrupted() == false)
        assert(string.format("%d", 3) == "3" and math.pi > 3 and table.concat { "a" } == "a")
        y[1] = caller_global == nil and 1 or 0
      end,
    }
    assert.are.equal(1, t(tycho.zeros(1))[1])
    caller_global = nil
  end)

  it("can be redeclared in the same state, replacing its body", function()
    local name = uniq("redo")
    local t1 = tycho.task { name = name, args = { "out" }, body = function(ctx, y)
      for i = ctx.lo, ctx.hi do y[i] = 1 end end }
    local a = t1(tycho.zeros(3))
    local t2 = tycho.task { name = name, args = { "out", "scalar" }, body = function(ctx, y, v)
      for i = ctx.lo, ctx.hi do y[i] = v end end }
    local b = t2(tycho.zeros(3), 9)
    assert.are.same({ 1, 1, 1 }, totable(a)) -- launched before: ran with the old body
    assert.are.same({ 9, 9, 9 }, totable(b))
    assert.are.equal(t2, tycho.tasks[name])
    assert.has_error(function()
      tycho.task { name = name, args = { "out" }, traits = { parallel = "all" },
        body = function() end }
    end, "tycho.task '" .. name .. "': was declared with other traits, which cannot change in a runtime; choose another name")
  end)

  it("is listed in tycho.tasks and prints its signature", function()
    local name = uniq("listed")
    local t = tycho.task { name = name, args = { "in", "reduce:max", "scalar:string" },
      body = function() end }
    assert.are.equal(t, tycho.tasks[name])
    assert.are.equal(name, t.name)
    assert.are.same({ "in", "reduce:max", "scalar:string" }, t.args)
    assert.are.equal("lua", t.kind)
    assert.are.equal("tycho.task '" .. name .. "' (Lua task: in, reduce:max, scalar:string)",
      tostring(t))
    assert.is_nil(tycho.tasks.no_such_task)
    assert.has_error(function() tycho.tasks.x = 1 end,
      "tycho.tasks: is read-only: declare tasks with tycho.task{...}")
  end)

  it("takes per-launch options with :with{}", function()
    local t = tycho.task { name = uniq("opt"), args = { "in", "out" },
      body = function(ctx, x, y) for i = ctx.lo, ctx.hi do y[i] = x[i] + 1 end end }
    local single = t:with { parallel = "single" }
    assert.are.same({ 1, 2, 3 }, totable(single(tycho.arange(3))))
    assert.matches("with options", tostring(single))
    assert.has_error(function() t:with { parallel = "sometimes" } end)
  end)
end)

describe("results of a Lua task", function()
  it("are identical for 1, 2, 3 and 8 processors", function()
    local code = [[
      local f = tycho.task {
        name = "heavyish", args = { "in", "out", "reduce:+:i64", "scalar" },
        traits = { parallel = "all" },
        body = function(ctx, x, y, total, k)
          local s = 0
          for i = ctx.lo, ctx.hi do
            local v = x[i]
            for _ = 1, k do v = math.sin(v) * 1.5 + 0.25 end
            y[i] = v
            s = s + i
          end
          return s
        end,
      }
      local mark = tycho.task { name = "mark", args = { "out" }, traits = { parallel = "all" },
        body = function(ctx, p) for i = ctx.lo, ctx.hi do p[i] = ctx.pieces end end }
      local x = tycho.linspace(0, 3, 997)
      local y, total = f(x, nil, nil, 20)
      local out = {}
      for _, v in ipairs(y:totable()) do out[#out + 1] = string.format("%.17g", v) end
      print("total", total:item())
      print("values", table.concat(out, ","))
      local serial = {} -- the same body as a plain loop over x's values, in this state
      for i, v in ipairs(x:totable()) do
        for _ = 1, 20 do v = math.sin(v) * 1.5 + 0.25 end
        serial[i] = string.format("%.17g", v)
      end
      print("serial", table.concat(serial, ","))
      print("pieces", mark(tycho.zeros(997))[1])
    ]]
    local first, split
    for _, cpus in ipairs { 1, 2, 3, 8 } do
      local out, code_ = spec_lua(code, { TYCHO_CPUS = cpus })
      assert.are.equal(0, code_, out)
      local total = out:match("total\t(%d+)")
      local values = out:match("values\t([^\n]+)")
      local pieces = tonumber(out:match("pieces\t(%d+)"))
      assert.are.equal(tostring(997 * 998 // 2), total)
      assert.is_string(values, out)
      assert.are.equal(out:match("serial\t([^\n]+)"), values) -- identical to a serial computation
      if not first then first = values else assert.are.equal(first, values) end
      if pieces > 1 then split = true end
    end
    assert.is_true(split) -- some run really split the work
  end)
end)

describe("an error in a Lua task", function()
  it("names the task and the piece and carries the body's traceback", function()
    local boom = tycho.task {
      name = uniq("boom"), args = { "in", "out" }, traits = { parallel = "single" },
      body = function(ctx, x, y)
        for i = ctx.lo, ctx.hi do
          if x[i] == 3 then error("three is not allowed") end
          y[i] = x[i]
        end
      end,
    }
    local y = boom(tycho.arange(5))
    local ok, msg = pcall(function() return y:sum():item() end)
    assert.is_false(ok)
    -- the line of the error() call in this file
    local src = debug.getinfo(1, "S").source:sub(2)
    local n, err_line = 0, nil
    for l in io.lines(src) do
      n = n + 1
      if l:find('error("three is not allowed")', 1, true) and not err_line then err_line = n end
    end
    assert.matches("task 'boom_%d+' failed in piece 1 of 1: ", msg)
    assert.matches("tasks_spec%.lua:" .. err_line .. ": three is not allowed", msg)
    assert.matches("stack traceback:", msg)
    assert.matches("tasks_spec%.lua:%d+: in function", msg)
  end)

  it("keeps the other launches of the window and leaves the runtime usable", function()
    local good = tycho.task { name = uniq("good"), args = { "in", "out" },
      body = function(ctx, x, y) for i = ctx.lo, ctx.hi do y[i] = x[i] * 2 end end }
    local bad = tycho.task { name = uniq("bad"), args = { "in", "out" },
      body = function() error({ code = 7 }) end }
    local x = tycho.arange(4)
    local a = good(x)
    local b = bad(x)
    local c = good(x + 1)
    local ok, msg = pcall(tycho.flush)
    assert.is_false(ok)
    assert.matches("failed in piece 1 of 1: %(error object is a table value%)", msg)
    assert.are.same({ 0, 2, 4, 6 }, totable(a))
    assert.are.same({ 2, 4, 6, 8 }, totable(c))
    assert.has_error(function() b:totable() end)
    assert.are.same({ 0, 4, 8, 12 }, totable(good(a)))
  end)

  it("is raised for writes outside the piece, and for writes to inputs", function()
    local over = tycho.task {
      name = uniq("over"), args = { "in", "out" }, traits = { parallel = "all" },
      body = function(ctx, x, y)
        for i = ctx.lo, ctx.hi do y[i] = x[i] end
        y[ctx.hi % #y + 1] = -1 -- the next piece's first element (or the first)
      end,
    }
    local ok, msg = pcall(function() return over(tycho.arange(100)):totable() end)
    assert.is_false(ok)
    assert.matches("argument 2 %(out%): index %d+ of dimension 1 is outside this piece " ..
      "%(%d+%.%.%d+%): a piece reads and writes only its own elements", msg)

    local peek = tycho.task {
      name = uniq("peek"), args = { "in", "out" }, traits = { parallel = "all" },
      body = function(ctx, x, y) y[ctx.lo] = x[ctx.hi % #x + 1] end,
    }
    ok, msg = pcall(function() return peek(tycho.arange(100)):totable() end)
    assert.is_false(ok)
    assert.matches('declare the argument "in:broadcast" to read all of it', msg, 1, true)

    local ro = tycho.task { name = uniq("ro"), args = { "in", "out" },
      body = function(ctx, x, y) x[ctx.lo] = 0 end }
    ok, msg = pcall(function() return ro(tycho.arange(3)):totable() end)
    assert.is_false(ok)
    assert.matches("argument 1 %(in%) is read%-only", msg)

    local range = tycho.task { name = uniq("range"), args = { "out" },
      body = function(ctx, y) y[0] = 1 end }
    ok, msg = pcall(function() return range(tycho.zeros(3)):totable() end)
    assert.matches("argument 1 %(out%): index 0 is out of range 1%.%.3 of dimension 1", msg)

    local typ = tycho.task { name = uniq("typ"), args = { "out:i64" },
      body = function(ctx, y) y[1] = 2.5 end }
    ok, msg = pcall(function() return typ():totable() end)
    assert.is_false(ok)
  end)

  it("refuses a tile used outside its piece", function()
    local keep = tycho.task { name = uniq("keep"), args = { "out", "out" },
      traits = { parallel = "single" },
      body = function(ctx, a, b) kept_tile = b; a[1] = 1 end }
    local use = tycho.task { name = uniq("use"), args = { "out" },
      traits = { parallel = "single" },
      body = function(ctx, a) a[1] = kept_tile[1] end }
    keep(tycho.zeros(1), tycho.zeros(1))
    tycho.flush() -- alone in their waves, both run on the flushing thread: one worker state
    local ok, msg = pcall(function() return use(tycho.zeros(1)):totable() end)
    assert.is_false(ok)
    assert.matches("a tile is valid only inside the piece it was given to", msg)
  end)
end)

describe("declaring a Lua task", function()
  it("refuses a body that captures a local, naming it and suggesting a scalar", function()
    local n = 5
    local name = uniq("up")
    assert.has_error(function()
      tycho.task { name = name, args = { "out" }, body = function(ctx, y) y[1] = n end }
    end, "tycho.task '" .. name .. "': the body captures the local 'n', which may change " ..
      "after the declaration and does not reach worker threads: pass it as a scalar argument " ..
      "(args = {..., \"scalar\"}), or declare it <const>")
    local t <const> = {}
    local ok, msg = pcall(tycho.task, { name = uniq("tab"), args = { "out" },
      body = function(ctx, y) y[1] = #t end })
    assert.is_false(ok)
    assert.matches("captures the <const> 't', which is a table", msg)
    local floor <const> = math.floor
    ok, msg = pcall(tycho.task, { name = uniq("cfn"), args = { "out" },
      body = function(ctx, y) y[1] = floor(1.5) end })
    assert.matches("'floor', which is a C function", msg)
    local m = 3
    local helper <const> = function(v) return v * m end
    ok, msg = pcall(tycho.task, { name = uniq("deep"), args = { "out" },
      body = function(ctx, y) y[1] = helper(1) end })
    assert.matches("the local 'm' %(an upvalue of 'helper', which the body captures%)", msg)
  end)

  it("accepts <const> numbers, strings and functions, copied into workers", function()
    local k <const> = tonumber("4") -- not folded by the compiler: a real upvalue
    local tag <const> = string.rep("ab", 2)
    local scale <const> = function(v) return v * k end
    local t = tycho.task {
      name = uniq("consts"), args = { "in", "out" }, traits = { parallel = "all" },
      body = function(ctx, x, y)
        for i = ctx.lo, ctx.hi do y[i] = scale(x[i]) + #tag end
      end,
    }
    assert.are.same({ 4, 8, 12, 16, 20 }, totable(t(tycho.arange(5) * 1.0)))
  end)

  it("checks its table, naming the bad field", function()
    local function err(decl) local ok, msg = pcall(tycho.task, decl); assert.is_false(ok); return msg end
    assert.matches("expects a table", err(3))
    assert.matches("unknown field 'bdy'", err { name = "x", args = {}, bdy = 1 })
    assert.matches("name must be a string", err { args = { "in" }, body = print })
    assert.matches("args is missing", err { name = uniq("n") })
    assert.matches("args%[2%] = 'inn' is not an argument kind", err { name = uniq("n"),
      args = { "out", "inn" }, body = function() end })
    assert.matches("a task needs at least one aligned store argument",
      err { name = uniq("n"), args = { "scalar", "in:broadcast" }, body = function() end })
    assert.matches("body must be a Lua function, got number",
      err { name = uniq("n"), args = { "out" }, body = 3 })
    assert.matches("body must be a Lua function, got function",
      err { name = uniq("n"), args = { "out" }, body = print })
    assert.matches("traits: unknown policy key 'paralel'",
      err { name = uniq("n"), args = { "out" }, traits = { paralel = "all" }, body = function() end })
    assert.matches("traits: parallel must be one of auto, all, single, task; got 'most'",
      err { name = uniq("n"), args = { "out" }, traits = { parallel = "most" }, body = function() end })
    assert.matches("a task of this name already exists %(a built%-in or C task%)",
      err { name = "add", args = { "out" }, body = function() end })
    assert.matches("no C task of this name is registered",
      err { name = uniq("nobody"), args = { "out" } })
    assert.matches("is longer than 63 bytes",
      err { name = string.rep("x", 80), args = { "out" }, body = function() end })
  end)
end)

describe("calling a task", function()
  local t = tycho.task {
    name = "checked", args = { "in", "out", "scalar:i64", "reduce:+" },
    body = function(ctx, x, y, k, r) for i = ctx.lo, ctx.hi do y[i] = x[i] * k end end,
  }
  local function err(...)
    local ok, msg = pcall(t, ...)
    assert.is_false(ok)
    return msg
  end

  it("checks the argument count", function()
    assert.matches("tycho.task 'checked': takes 4 arguments %(in, out, scalar:i64, reduce:%+%), got 5",
      err(tycho.zeros(2), nil, 1, nil, 5))
    assert.matches("argument 1 %(in%) must be a store, got nothing %(it is missing%)", err())
    assert.matches("argument 3 %(scalar:i64%) must be an integer, got nothing", err(tycho.zeros(2)))
  end)

  it("checks that stores and scalars are where they are declared", function()
    assert.matches("argument 1 %(in%) must be a store, got number", err(3, nil, 1))
    assert.matches("argument 3 %(scalar:i64%) must be a number, boolean or string, got store",
      err(tycho.zeros(2), nil, tycho.zeros(2)))
    assert.matches("argument 3 %(scalar:i64%) must be an integer, got 2.5", err(tycho.zeros(2), nil, 2.5))
    assert.matches("argument 3 %(scalar:i64%) must be an integer, got string",
      err(tycho.zeros(2), nil, "2"))
  end)

  it("checks the shapes of aligned stores and reductions", function()
    assert.matches("argument 2 %(out%) has shape %(3,%), argument 1 %(in%) has shape %(2,%): " ..
      "aligned arguments must have the same shape", err(tycho.zeros(2), tycho.zeros(3), 1))
    assert.matches("argument 4 %(reduce:%+%) has shape %(3,%), which does not broadcast to the " ..
      "launch domain %(2,%)", err(tycho.zeros(2), nil, 1, tycho.zeros(3)))
    local y, r = t(tycho.ones(2), nil, 3, tycho.zeros { 1 })
    assert.are.same({ 3, 3 }, totable(y))
    assert.are.same({ 0 }, totable(r))
  end)

  it("limits scalar bytes", function()
    local s = tycho.task { name = uniq("big"), args = { "out", "scalar" }, body = function() end }
    assert.has_error(function() s(tycho.zeros(1), string.rep("x", 5000)) end,
      "tycho.task '" .. s.name .. "': the scalar arguments take more than 4096 bytes")
  end)
end)

describe("worker states", function()
  it("are created once per worker and reused by thousands of tiny launches", function()
    local tiny = tycho.task { name = uniq("tiny"), args = { "inout", "scalar" },
      body = function(ctx, x, k) x[1] = x[1] + k end }
    collectgarbage()
    local before = tycho.stats()
    local x = tycho.zeros(1, "i64")
    for i = 1, 3000 do tiny(x, i) end
    assert.are.equal(3000 * 3001 // 2, x[1])
    x = nil
    collectgarbage()
    tycho.flush()
    local after = tycho.stats()
    assert.is_true(after.lua_workers <= tycho.config().cpus)
    assert.is_true(after.stores_live <= before.stores_live)
    assert.is_true(after.bytes_live <= before.bytes_live)
  end)

  it("stop a running body on Ctrl-C, and the shell goes on", function()
    local bin = assert(os.getenv("TYCHO_BIN"), "TYCHO_BIN must name the tycho executable")
    local ptydrive = bin:match("^(.*)/[^/]*$") .. "/ptydrive"
    local steps = table.concat({
      "expect > ",
      'line spin = tycho.task{name="spin", args={"out"}, traits={parallel="all"}, ' ..
        "body=function(ctx, y) while true do end end}",
      "expect > ",
      "line r = spin(tycho.zeros(64)); print(r:totable())",
      "sleep 1500",
      "send \\x03",
      "expect interrupted",
      "expect > ",
      'line print("alive", tycho.sum(tycho.arange(10)):item())',
      "expect alive\\t45",
      "expect > ",
      "send \\x04",
    }, "\n") .. "\n"
    local script, home = os.tmpname(), os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write(steps)
    f:close()
    os.remove(home)
    local p = io.popen(string.format("TERM=dumb INPUTRC=/dev/null HOME=%s %s -t 60 -- %s <%s 2>&1",
      home, ptydrive, bin, script))
    local out = p:read("a")
    local _, _, code = p:close()
    os.remove(script)
    assert.are.equal(0, code, out)
    assert.matches("interrupted", out)
    assert.matches("alive\t45", out)
  end)
end)

describe("a task over an empty domain", function()
  it("never runs its body (as the built-ins)", function()
    local never = tycho.task {
      name = "never_on_empty", args = {"inout"},
      body = function() error("the body ran on an empty domain") end,
    }
    for _, shape in ipairs { {3, 0}, {0}, {0, 5} } do
      local x = tycho.zeros(shape)
      never(x)
      tycho.flush()
      assert.are.equal(0, x.size)
    end
    -- and a non-empty one still runs it
    assert.has_error(function() never(tycho.zeros({2})); tycho.flush() end)
  end)
end)
