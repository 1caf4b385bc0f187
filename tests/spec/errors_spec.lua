-- tests/spec/errors_spec.lua — bad input from Lua raises an error that names
-- the function and the argument, never crashes, and leaves the runtime usable.
--
-- Each case checks the message text (plain substrings, so brackets and dots
-- need no escaping). Core failures must not leak C names ("ty_binary: ...").
local tycho = tycho or require "tycho"

-- f(...) must raise; its message must contain every string in `wants`.
local function fails(wants, f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok, "expected an error containing '" .. wants[1] .. "', got success")
  err = tostring(err)
  for _, want in ipairs(wants) do
    assert(err:find(want, 1, true), "expected '" .. want .. "' in: " .. err)
  end
  assert(not err:find("ty_%l"), "a C name leaked into: " .. err)
  return err
end

-- The runtime computes correctly after whatever happened before.
local function still_works()
  local x = tycho.arange(10) * 2 + 1
  assert.are.equal(100, x:sum():item())
  assert.are.equal(19, x[-1])
  tycho.flush()
end

describe("wrong types", function()
  local x = tycho.zeros({2, 3})

  it("in shapes", function()
    fails({"tycho.zeros: shape must be a table of integers or an integer, got string"},
          tycho.zeros, "a")
    fails({"tycho.ones: shape must be a table of integers or an integer, got nil"}, tycho.ones)
    fails({"tycho.zeros: shape[2] must be a non-negative integer, got string"},
          tycho.zeros, {2, "x"})
    fails({"tycho.empty: shape[1] must be a non-negative integer, got 2.5"}, tycho.empty, {2.5})
    fails({"tycho.random: shape[1] must be a non-negative integer, got table"},
          tycho.random, {{2}})
    still_works()
  end)

  it("in operands", function()
    fails({"tycho.exp: argument 1 must be a store or a number, got string"}, tycho.exp, "x")
    fails({"tycho.add: argument 2 must be a store or a number, got string"},
          function() return x + "3" end)
    fails({"tycho.mul: argument 1 must be a store or a number, got table"},
          function() return {} * x end)
    fails({"tycho.sub: argument 2 must be a store or a number, got nil"}, tycho.sub, x)
    fails({"tycho.where: argument 1 must be a store or a number, got string"},
          tycho.where, "c", x, x)
    fails({"tycho.matmul: argument 2 must be a store, got number"}, tycho.matmul, x, 3)
    fails({"tycho.dot: argument 1 must be a store, got nil"}, tycho.dot, nil, x)
    fails({"tycho.narrow: argument 1 must be a store, got number"}, tycho.narrow, 5, 1, 1, 1)
    fails({"tycho.save: argument 2 must be a store, got number"}, tycho.save, "/tmp/x.npy", 3)
    still_works()
  end)

  it("in other arguments", function()
    fails({"tycho.sum: axis must be an integer, got string"}, tycho.sum, x, "a")
    fails({"tycho.min: axis must be an integer, got store", "tycho.minimum"}, tycho.min, x, x)
    fails({"tycho.max: axis must be an integer, got store", "tycho.maximum"},
          function() return x:max(x) end)
    fails({"tycho.mean: axis must be an integer, got 1.5"}, tycho.mean, x, 1.5)
    fails({"tycho.seed: seed must be an integer, got string"}, tycho.seed, "x")
    fails({"tycho.full: value must be a number or a boolean, got string"}, tycho.full, {2}, "x")
    fails({"tycho.fill: value must be a number or a boolean, got table"},
          function() return x:fill({}) end)
    fails({"tycho.linspace: num must be a non-negative integer, got -1"}, tycho.linspace, 0, 1, -1)
    fails({"tycho.linspace: start must be a number, got string"}, tycho.linspace, "0", 1, 3)
    fails({"tycho.arange: step must not be zero"}, tycho.arange, 1, 2, 0)
    fails({"tycho.arange: step must not be zero"}, tycho.arange, 1.5, 2, 0.0)
    fails({"tycho.arange: expected arange(stop)"}, tycho.arange)
    fails({"tycho.arange: stop must be a number, got table"}, tycho.arange, {})
    fails({"tycho.arange: start, stop and step must be finite"}, tycho.arange, 0, math.huge)
    fails({"tycho.load: path must be a string, got number"}, tycho.load, 5)
    fails({"tycho.assign: value must be a number, a boolean or a store, got string"},
          function() x[1] = "v" end)
    fails({"tycho.assign: cannot set field 'foo' of a store"}, function() x.foo = 1 end)
    fails({"tycho.index: a store is indexed by an integer, a table, a store or a method name, got boolean"},
          function() return x[true] end)
    fails({"tycho.item: the store has 6 elements (shape (2, 3)), item needs exactly 1"},
          function() return x:item() end)
    fails({"tycho.len: a 0-d store has no length"}, function() return #tycho.zeros({}) end)
    still_works()
  end)
end)

describe("unknown dtypes", function()
  it("are refused with the list of known ones", function()
    fails({"tycho.zeros: unknown dtype 'f16' (expected f64, f32, i64, i32, i16, i8, u64, u32, u16, u8 or bool)"},
          tycho.zeros, 3, "f16")
    fails({"tycho.zeros: dtype must be a string, got number"}, tycho.zeros, 3, 5)
    fails({"tycho.array: unknown dtype 'int128'"}, tycho.array, {1}, "int128")
    fails({"tycho.arange: unknown dtype 'x'"}, tycho.arange, 3, "x")
    fails({"tycho.astype: unknown dtype 'complex'"}, function() return tycho.zeros(2):astype("complex") end)
    fails({"tycho.astype: dtype must be a string, got no value"}, function() return tycho.zeros(2):astype() end)
    fails({"tycho.random: dtype must be f64 or f32"}, tycho.random, 3, "i64")
    still_works()
  end)
end)

describe("shape mismatches", function()
  it("name the shapes that do not broadcast", function()
    local a, b = tycho.array({1, 2, 3}), tycho.array({1, 2})
    fails({"tycho.add: ", "(3,)", "(2,)", "broadcast"}, function() return a + b end)
    fails({"tycho.lt: ", "broadcast"}, tycho.lt, a, b)
    fails({"tycho.maximum: ", "broadcast"}, tycho.maximum, tycho.zeros({2, 3}), tycho.zeros({3, 2}))
    fails({"tycho.where: ", "broadcast"}, tycho.where, a:gt(1), a, b)
    fails({"tycho.assign: ", "(2,)", "(3,)"}, function() a[{}] = b end)
    fails({"tycho.matmul: ", "(2, 3)", "(2, 3)"}, tycho.matmul, tycho.zeros({2, 3}), tycho.zeros({2, 3}))
    fails({"tycho.dot: ", "(2, 2, 3)", "(2, 2)", "do not align"}, tycho.dot, tycho.zeros({2, 2, 3}),
          tycho.zeros({2, 2}))
    fails({"tycho.reshape: ", "(2, 3)", "(4,)"}, function() return tycho.zeros({2, 3}):reshape(4) end)
    fails({"tycho.reshape: shape may contain -1 only once"},
          function() return tycho.zeros({2, 3}):reshape(-1, -1) end)
    fails({"tycho.reshape: the store is not contiguous"},
          function() return tycho.zeros({2, 3}):t():reshape(6) end)
    still_works()
  end)
end)

describe("out-of-range indices and axes", function()
  local v = tycho.arange(3)            -- {0, 1, 2}
  local m = tycho.arange(6):reshape(2, 3)

  it("for reads", function()
    fails({"tycho.index: index 5 is out of range for dimension 1 of size 3"},
          function() return v[5] end)
    fails({"tycho.index: index 0 is out of range for dimension 1 of size 3"},
          function() return v[0] end)
    fails({"tycho.index: index -4 is out of range for dimension 1 of size 3"},
          function() return v[-4] end)
    fails({"tycho.index: index must be an integer, got 1.5"}, function() return v[1.5] end)
    fails({"tycho.index: index 3 is out of range for dimension 1 of size 2"},
          function() return m[3] end)
    fails({"tycho.index: index[2] = 9 is out of range for dimension 2 of size 3"},
          function() return m[{1, 9}] end)
    fails({"tycho.index: index[1] = {0, 2} is out of range for dimension 1 of size 2"},
          function() return m[{{0, 2}}] end)
    fails({"tycho.index: index[2] = {2, 4} is out of range for dimension 2 of size 3"},
          function() return m[{{}, {2, 4}}] end)
    fails({"tycho.index: too many indices (3) for a store of rank 2"},
          function() return m[{1, 1, 1}] end)
    fails({"tycho.index: index[1] must be an integer, a range table or tycho.newaxis, got string"},
          function() return m[{"a"}] end)
    fails({"tycho.index: index[1]: step must be a non-zero integer, got 0"},
          function() return m[{{1, 2, 0}}] end)
    fails({"tycho.index: index[1] must be {}, {i}, {first, last} or {first, last, step}"},
          function() return m[{{1, 2, 1, 1}}] end)
    fails({"tycho.index: cannot index a 0-d store"}, function() return tycho.zeros({})[1] end)
    still_works()
  end)

  it("for writes", function()
    fails({"tycho.assign: index 4 is out of range for dimension 1 of size 3"},
          function() v[4] = 1 end)
    fails({"tycho.assign: index[2] = -4 is out of range for dimension 2 of size 3"},
          function() m[{1, -4}] = 1 end)
    assert.are.same({0, 1, 2}, v:totable())
    still_works()
  end)

  it("for axes and view methods", function()
    fails({"tycho.sum: axis 3 is out of range for a store of rank 2"}, tycho.sum, m, 3)
    fails({"tycho.argmax: axis 0 is out of range for a store of rank 2"},
          function() return m:argmax(0) end)
    fails({"tycho.sum: axis -3 is out of range"}, tycho.sum, m, -3)
    fails({"tycho.sum: axis 1 is out of range: the store is 0-d"}, tycho.sum, tycho.zeros({}), 1)
    fails({"tycho.narrow: dim 3 is out of range"}, function() return m:narrow(3, 1, 1) end)
    fails({"tycho.narrow: start 5 is out of range for dimension 2 of size 3"},
          function() return m:narrow(2, 5, 1) end)
    fails({"tycho.narrow: len 3 is out of range"}, function() return m:narrow(2, 2, 3) end)
    fails({"tycho.expand: dim 4 is out of range for a store of rank 2"},
          function() return m:expand(4) end)
    fails({"tycho.expand: dim 0 is out of range"}, function() return m:expand(0) end)
    fails({"tycho.transpose: dim2 3 is out of range"}, function() return m:transpose(1, 3) end)
    fails({"tycho.max: the store is empty (shape (0,)): max is undefined"},
          function() return tycho.zeros(0):max() end)
    fails({"tycho.argmin: axis 2 has length 0 (shape (3, 0)): argmin is undefined"},
          function() return tycho.zeros({3, 0}):argmin(2) end)
    still_works()
  end)
end)

describe("bad shapes", function()
  it("negative, overflowing and too many dimensions", function()
    fails({"tycho.zeros: shape[2] must be a non-negative integer, got -1"}, tycho.zeros, {2, -1})
    fails({"tycho.ones: shape must be a non-negative integer, got -5"}, tycho.ones, -5)
    fails({"tycho.empty: shape (2147483648, 2147483648, 2147483648) f64 is too large"},
          tycho.empty, {1 << 31, 1 << 31, 1 << 31})
    fails({"tycho.zeros: ", "too large"}, tycho.zeros, {1 << 62, 4})
    fails({"tycho.full: ", "too large"}, tycho.full, {1 << 40, 1 << 40}, 1)
    fails({"tycho.arange: ", "too many"}, tycho.arange, 0, 1 << 62, 1, "f64")
    local seventeen = {}
    for i = 1, 17 do seventeen[i] = 1 end
    fails({"tycho.zeros: shape has 17 dimensions, at most 16 are supported"},
          tycho.zeros, seventeen)
    local sixteen = {}
    for i = 1, 16 do sixteen[i] = 1 end
    local s16 = tycho.zeros(sixteen)
    assert.are.equal(16, s16.ndim)
    fails({"tycho.expand: the store already has 16 dimensions"}, function() return s16:expand(1) end)
    local deep = 1
    for _ = 1, 17 do deep = {deep} end
    fails({"tycho.array: the table is nested more than 16 deep"}, tycho.array, deep)
    still_works()
  end)

  it("a memory budget refuses what does not fit, naming the budget", function()
    local out, code = spec_lua([[
      local ok, err = pcall(tycho.zeros, 10000000)
      print(err)
      -- 1 MB stores, dropped at once, with the collector stopped: creations
      -- past the 16 MB budget collect, flush and retry instead of failing.
      collectgarbage("stop")
      local x
      for i = 1, 100 do x = tycho.ones(131072) * 2 end
      print("sum", x:sum():item())
    ]], {TYCHO_SYSMEM = "16MB"})
    assert.are.equal(0, code, out)
    assert.is_truthy(out:find("tycho.zeros: out of memory", 1, true), out)
    assert.is_truthy(out:find("budget", 1, true), out)
    assert.is_truthy(out:find("(10000000,)", 1, true), out)
    assert.is_truthy(out:find("sum\t262144", 1, true), out)
  end)
end)

describe("array from a table that is not rectangular", function()
  it("names the element that breaks the shape", function()
    fails({"tycho.array: the table is not rectangular: [2] has 1 elements, expected 2"},
          tycho.array, {{1, 2}, {3}})
    fails({"tycho.array: the table is not rectangular: element [2] is a number, expected a table of 2 elements"},
          tycho.array, {{1, 2}, 3})
    fails({"tycho.array: the table is not rectangular: element [2] is a table, expected a number"},
          tycho.array, {1, {2}})
    fails({"tycho.array: the table is not rectangular: [1][2] has 3 elements, expected 2"},
          tycho.array, {{{1, 2}, {1, 2, 3}}})
    fails({"tycho.array: element [2][1] must be a number or a boolean, got string"},
          tycho.array, {{1}, {"a"}})
    fails({"tycho.array: argument 1 must be a table (nested for more dimensions), got string"},
          tycho.array, "x")
    still_works()
  end)
end)

describe(".npy files", function()
  it("missing or malformed files are errors that name the path", function()
    fails({"tycho.load: cannot open '/nonexistent/x.npy'"}, tycho.load, "/nonexistent/x.npy")
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write("this is not an npy file at all, just text\n")
    f:close()
    fails({"tycho.load: '" .. path .. "'", "not a .npy file"}, tycho.load, path)
    -- A version 1.0 header padded so that the data starts at byte 128.
    local function npy(dict, data)
      local h = dict .. string.rep(" ", 128 - 10 - #dict - 1) .. "\n"
      f = assert(io.open(path, "wb"))
      f:write("\147NUMPY\1\0", string.pack("<I2", #h), h, data)
      f:close()
    end
    -- a valid header whose data is cut short: 16 of 80 bytes
    npy("{'descr': '<f8', 'fortran_order': False, 'shape': (10,), }", string.rep("\0", 16))
    fails({"tycho.load: ", path, "truncated"}, tycho.load, path)
    -- an unsupported dtype
    npy("{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }", string.rep("\0", 16))
    fails({"tycho.load: ", path, "c16"}, tycho.load, path)
    -- a header that is not a dict
    npy("[1, 2, 3]", "")
    fails({"tycho.load: ", path, "malformed header"}, tycho.load, path)
    -- the same header with the data in full loads
    npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", string.pack("<d<d", 1.5, -2))
    assert.are.same({1.5, -2}, tycho.load(path):totable())
    os.remove(path)
    fails({"tycho.save: ", "/nonexistent/dir/x.npy"}, tycho.save, "/nonexistent/dir/x.npy",
          tycho.zeros(2))
    still_works()
  end)
end)

describe("closed stores", function()
  it("are errors, not crashes", function()
    local keep
    do
      local x <close> = tycho.ones(3)
      keep = x
    end
    fails({"tycho.sum: argument 1 is a closed store"}, function() return keep:sum() end)
    fails({"tycho.add: argument 1 is a closed store"}, function() return keep + 1 end)
    fails({"tycho.add: argument 2 is a closed store"}, function() return 1 + keep end)
    fails({"tycho.index: argument 1 is a closed store"}, function() return keep[1] end)
    fails({"tycho.index: field 'shape' of a closed store"}, function() return keep.shape end)
    fails({"tycho.assign: argument 1 is a closed store"}, function() keep[1] = 0 end)
    fails({"tycho.len: argument 1 is a closed store"}, function() return #keep end)
    assert.are.equal("tycho.store (closed)", tostring(keep))
    still_works()
  end)
end)

describe("every function with every kind of argument", function()
  it("returns or raises a tycho error, never crashes", function()
    -- 22 kinds of values, in every position of every function and method
    -- (three positions for the functions that take three), ~100000 calls.
    local vals = {
      function() return nil end, function() return 0 end, function() return -1 end,
      function() return 2 end, function() return 2.5 end, function() return 0 / 0 end,
      function() return math.huge end, function() return math.maxinteger end,
      function() return math.mininteger end, function() return "f32" end,
      function() return "x" end, function() return true end, function() return {} end,
      function() return {2, 3} end, function() return {{1, 2}, {3, 4}} end,
      function() return {-1} end, function() return {1, {}} end,
      function() return tycho.zeros({2, 3}) end, function() return tycho.arange(4) end,
      function() return tycho.zeros({}) end, function() return tycho.zeros({0, 2}, "bool") end,
      function() return tycho.ones({2, 1}, "u8") end,
    }
    local three = {where = true, narrow = true, arange = true, linspace = true, full = true,
                   transpose = true}
    local path = os.tmpname()
    local bad = {}
    local function check(what, ok, err)
      if not ok and not tostring(err):find("tycho", 1, true) then
        bad[#bad + 1] = what .. ": " .. tostring(err)
      end
    end
    local names = {}
    for k, v in pairs(tycho) do
      if type(v) == "function" and k ~= "seed" then names[#names + 1] = k end
    end
    table.sort(names)
    for _, name in ipairs(names) do
      for i = 1, #vals do
        for j = 1, #vals do
          for k = 1, three[name] and #vals or 1 do
            local a, b, c = vals[i](), vals[j](), k > 1 and vals[k]() or nil
            if name == "save" then a = path end
            check(name, pcall(tycho[name], a, b, c))
          end
        end
      end
    end
    for name, m in pairs(getmetatable(tycho.zeros(1)).__methods) do
      for i = 1, #vals do
        for j = 1, #vals do check(name, pcall(m, vals[i](), vals[j](), vals[j]())) end
      end
    end
    for i = 18, #vals do
      for j = 1, #vals do
        local x = vals[i]()
        check("index", pcall(function() return x[vals[j]()] end))
        for k = 1, #vals do
          check("assign", pcall(function() x[vals[j]()] = vals[k]() end))
        end
      end
    end
    os.remove(path)
    assert.are.same({}, bad)
    still_works()
  end)
end)

describe("after all of the above", function()
  it("the runtime still computes correctly", function()
    still_works()
    local a = tycho.random({30, 20})
    local b = a:copy()
    assert.are.equal(0, (a - b):abs():max():item())
    assert.are.equal(600, a:ge(0):sum():item())
  end)
end)
