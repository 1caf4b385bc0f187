-- overflow_spec.lua — sizes, strides, offsets and slice lengths near the int64
-- limits (issue 21, item 3): a shape is accepted exactly when its bytes (zero
-- dims skipped) fit int64, whatever function makes it; a slice has numpy's
-- length; nothing overflows on the way (the sanitizer build runs this spec
-- under UBSan, which stops at the first signed overflow).

local MAX = math.maxinteger

local function fails(want, f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok, "expected an error containing '" .. want .. "', got success")
  err = tostring(err)
  assert(err:find(want, 1, true), "expected '" .. want .. "' in: " .. err)
  assert(not err:find("ty_%l"), "a C name leaked into: " .. err)
  return err
end

-- Values near the limits, and small ones.
local near = {0, 1, 2, 3, 6, 1 << 31, 1 << 32, 1 << 62, MAX // 16, MAX // 8, MAX // 8 + 1,
              MAX // 4, MAX // 2, MAX // 2 + 1, MAX - 1, MAX}

-- Do the bytes of `shape` (zero dims skipped) fit int64? Computed in floats
-- with a margin check in integers, independently of the C code.
local function fits(shape, esize)
  local n = esize
  for _, d in ipairs(shape) do
    if d ~= 0 then
      if n > MAX // d then return false end
      n = n * d
    end
  end
  return true
end

-- numpy's len(range(a, b + 1, step)) for tycho's inclusive 1-based {a, b, step}
local function range_len(a, b, step)
  if b < a then return 0 end
  return (b - a) // step + 1
end

describe("shapes near the int64 limit", function()
  it("reshape of an empty store refuses shapes whose strides would overflow (the reproducer)", function()
    fails("tycho.reshape: shape (0, 4611686018427387904, 4611686018427387904) f64 is too large: " ..
          "its size in bytes overflows int64", function()
      return tycho.zeros({0}):reshape(0, 2 ^ 62, 2 ^ 62)
    end)
    fails("tycho.zeros: shape (0, 4611686018427387904, 4611686018427387904) f64 is too large",
          tycho.zeros, {0, 2 ^ 62, 2 ^ 62})
    -- what is accepted saves and loads back
    local v = tycho.zeros({0}):reshape(0, 2 ^ 29, 2 ^ 29)
    assert.are.same({0, 1 << 29, 1 << 29}, v.shape)
    local path = os.tmpname()
    tycho.save(path, v)
    assert.are.same({0, 1 << 29, 1 << 29}, tycho.load(path).shape)
    os.remove(path)
  end)

  it("every creation function and reshape agree on which shapes fit", function()
    local empty = tycho.zeros({0})
    for _, dt in ipairs({"f64", "f32", "i32", "u8"}) do
      local esize = ({f64 = 8, f32 = 4, i32 = 4, u8 = 1})[dt]
      for _, a in ipairs(near) do
        for _, b in ipairs(near) do
          for _, shape in ipairs({{0, a, b}, {a, 0, b}, {a, b, 0}}) do
            local ok, err = pcall(tycho.empty, shape, dt)
            if fits(shape, esize) then
              assert(ok, err)
              assert.are.equal(0, ok and #err:reshape(-1) or 0)
            else
              assert(not ok and err:find("is too large: its size in bytes overflows int64", 1, true), err)
            end
            if dt == "f64" then
              local ok2, err2 = pcall(empty.reshape, empty, shape)
              assert.are.equal(fits(shape, 8), ok2, tostring(err2))
            end
          end
        end
      end
    end
  end)

  it("broadcasting refuses a result whose bytes overflow", function()
    local a, b, c = tycho.zeros({0, 1, 1}), tycho.zeros({1, 1 << 20, 1}), tycho.zeros({1, 1, 1 << 20})
    assert.are.same({0, 1 << 20, 1 << 20}, (a + b + c).shape)
    local out = spec_lua([[
      local ok, err = pcall(function()
        return tycho.zeros({0, 1, 1}) + tycho.zeros({1, 1 << 40, 1}) + tycho.zeros({1, 1, 1 << 40})
      end)
      print(ok, err)
    ]], {TYCHO_SYSMEM = "4611686018427387904"})
    assert.matches("false\t.*tycho.add: shape %(0, 1099511627776, 1099511627776%) f64 is too large", out)
  end)
end)

describe("policy sizes near the int64 limit", function()
  it("min_chunk past INT64_MAX bytes is refused, not turned negative", function()
    fails("tycho.parallel: options: min_chunk must be a size such as 64KiB, got '9223372036854775807'",
          tycho.parallel, { min_chunk = MAX }, function() end)
    local r = tycho.parallel({ min_chunk = MAX // 2 }, function() return (tycho.arange(10) + 1):sum():item() end)
    assert.are.equal(55, r)
  end)
end)

describe("slices near the int64 limit", function()
  it("a step near math.maxinteger gives numpy's length (the reproducer)", function()
    local x = tycho.arange(6)
    local v = x[{{1, 6, MAX}}]
    assert.are.equal(1, #v)
    assert.are.same({0}, v:totable())
    v = x[{{1, 6, MAX - 1}}]
    assert.are.equal(1, #v)
    assert.are.same({0, 5}, x[{{1, 6, 5}}]:totable())
    assert.are.same({1}, x[{{2, 6, MAX}}]:totable())
    assert.are.same({}, x[{{4, 3, MAX}}]:totable())
  end)

  it("walks bounds and steps near the limits with numpy's lengths", function()
    local x = tycho.arange(6)
    local bounds = {-MAX - 1, -MAX, -7, -6, -1, 1, 5, 6, 7, MAX - 1, MAX}
    for _, a in ipairs(bounds) do
      for _, b in ipairs(bounds) do
        for k = 2, #near do
          local step = near[k]
          local ra = a < 0 and a + 7 or a
          local rb = b < 0 and b + 7 or b
          local ok, v = pcall(function() return x[{{a, b, step}}] end)
          if ra >= 1 and ra <= 7 and rb <= 6 and rb >= ra - 1 then
            assert(ok, v)
            local want = {}
            for i = ra, rb, step do want[#want + 1] = i - 1 end
            assert.are.equal(range_len(ra, rb, step), #v)
            assert.are.same(want, v:totable())
          else
            assert(not ok and tostring(v):find("out of range", 1, true), tostring(v))
          end
        end
      end
    end
    for _, i in ipairs(bounds) do
      local ok, e = pcall(function() return x[i] end)
      assert.are.equal(i >= -6 and i <= 6 and i ~= 0, ok, tostring(e))
      for _, len in ipairs({-MAX - 1, -1, 0, 1, 6, MAX}) do
        local ok2, e2 = pcall(x.narrow, x, 1, i, len)
        if ok2 then assert.are.equal(len, #e2) end
        assert(ok2 or tostring(e2):find("out of range", 1, true), tostring(e2))
      end
    end
  end)

  it("arange and linspace refuse counts whose bytes overflow", function()
    fails("tycho.arange: ", tycho.arange, -MAX - 1, MAX)
    fails("tycho.arange: ", tycho.arange, MAX, -MAX - 1, -1)
    fails("tycho.linspace: ", tycho.linspace, 0, 1, MAX)
    -- large counts with start and step exact in a double (the C API takes doubles)
    local h = 1 << 52
    assert.are.same({-h, -1, h - 2}, tycho.arange(-h, h, h - 1):totable())
    assert.are.same({h - 1}, tycho.arange(h - 1, -h, -(1 << 53)):totable())
  end)
end)
