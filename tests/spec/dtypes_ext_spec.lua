-- tests/spec/dtypes_ext_spec.lua — the dtypes added by issue 18: i8, i16, u16,
-- u32, u64, through every operation family (creation, casts, promotion,
-- arithmetic that wraps, floor division and modulo, reductions, sort, .npy,
-- text I/O, items, printing, fused runs) and tycho.iinfo / tycho.finfo.
--
-- Expected values were computed once with numpy 1.24 (/usr/bin/python3) and
-- pasted here; the tests never call python. A u64 element at or above 2^63
-- reaches Lua as the nearest float (docs/dtypes.md), so those expectations
-- are floats (1.8446744073709552e19 is 2^64 - 1). Float -> integer casts out
-- of range are tycho's rule, not numpy's (numpy leaves them to the hardware):
-- NaN gives 0, values beyond the range saturate.
local tycho = tycho or require "tycho"

local NEW = { "i8", "i16", "u16", "u32", "u64" }
local U64MAX = 1.8446744073709552e19 -- 2^64 - 1 as a Lua float
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local data = here .. "/../data/dtypes/"

local function arr(v, dt) return tycho.array(v, dt) end

describe("new dtypes: creation and items", function()
  it("zeros, full, arange and array give the dtype and numpy's values", function()
    for _, dt in ipairs(NEW) do
      local z = tycho.zeros({ 2, 3 }, dt)
      assert.are.equal(dt, z.dtype)
      spec_same(z:totable(), { { 0, 0, 0 }, { 0, 0, 0 } })
      local f = tycho.full({ 3 }, 7, dt)
      assert.are.equal(dt, f.dtype)
      spec_same(f:totable(), { 7, 7, 7 })
      local a = tycho.arange(0, 5, 1, dt)
      assert.are.equal(dt, a.dtype)
      spec_same(a:totable(), { 0, 1, 2, 3, 4 })
      assert.are.equal("integer", math.type(a[5]))
    end
    spec_same(arr({ -128, 0, 127 }, "i8"):totable(), { -128, 0, 127 })
    spec_same(arr({ 0, 65535 }, "u16"):totable(), { 0, 65535 })
    spec_same(arr({ 0, 4294967295 }, "u32"):totable(), { 0, 4294967295 })
    -- a float beyond int64 goes into u64 (saturating); Lua gets it back as a float
    local u = arr({ 0, math.maxinteger, 1.8446744073709552e19 }, "u64")
    spec_same(u:totable(), { 0, math.maxinteger, U64MAX })
    assert.are.equal("integer", math.type(u[2]))
    assert.are.equal("float", math.type(u[3]))
  end)

  it("refuses a Lua integer out of the dtype's range, as numpy 2", function()
    spec_fails({ "tycho.array", "300 is out of range for i8 (-128..127)" }, tycho.array, { 300 }, "i8")
    spec_fails({ "-1 is out of range for u16 (0..65535)" }, tycho.array, { -1 }, "u16")
    spec_fails({ "-1 is out of range for u64 (0..18446744073709551615)" }, tycho.array, { -1 }, "u64")
  end)

  it("accepts numpy's long names", function()
    for long, short in pairs({ int8 = "i8", int16 = "i16", uint16 = "u16", uint32 = "u32", uint64 = "u64" }) do
      assert.are.equal(short, tycho.zeros({ 1 }, long).dtype)
    end
  end)
end)

describe("new dtypes: casts", function()
  it("integer -> integer wraps modulo 2^bits (numpy's astype)", function()
    local src = tycho.array({ -129, -128, -1, 0, 255, 256, 65535, 65536, 1 << 31, (1 << 32) + 5 }, "i64")
    local want = {
      i8 = { 127, -128, -1, 0, -1, 0, -1, 0, 0, 5 },
      i16 = { -129, -128, -1, 0, 255, 256, -1, 0, 0, 5 },
      u16 = { 65407, 65408, 65535, 0, 255, 256, 65535, 0, 0, 5 },
      u32 = { 4294967167, 4294967168, 4294967295, 0, 255, 256, 65535, 65536, 2147483648, 5 },
      u64 = { U64MAX, U64MAX, U64MAX, 0, 255, 256, 65535, 65536, 2147483648, 4294967301 },
    }
    for _, dt in ipairs(NEW) do spec_same(src:astype(dt):totable(), want[dt], dt) end
  end)

  it("between the new dtypes (min, max, 1 of the source), as numpy", function()
    local want = {
      i8_i16 = { -128, 127, 1 }, i8_u16 = { 65408, 127, 1 }, i8_u32 = { 4294967168, 127, 1 },
      i8_u64 = { U64MAX, 127, 1 }, i16_i8 = { 0, -1, 1 }, i16_u16 = { 32768, 32767, 1 },
      i16_u32 = { 4294934528, 32767, 1 }, i16_u64 = { 1.8446744073709519e+19, 32767, 1 },
      u16_i8 = { 0, -1, 1 }, u16_i16 = { 0, -1, 1 }, u16_u32 = { 0, 65535, 1 },
      u16_u64 = { 0, 65535, 1 }, u32_i8 = { 0, -1, 1 }, u32_i16 = { 0, -1, 1 },
      u32_u16 = { 0, 65535, 1 }, u32_u64 = { 0, 4294967295, 1 }, u64_i8 = { 0, -1, 1 },
      u64_i16 = { 0, -1, 1 }, u64_u16 = { 0, 65535, 1 }, u64_u32 = { 0, 4294967295, 1 },
    }
    for _, f in ipairs(NEW) do
      local info = tycho.iinfo(f) -- u64's max is a float: array saturates it to 2^64 - 1
      local src = tycho.array({ info.min, info.max, 1 }, f)
      for _, t in ipairs(NEW) do
        if f ~= t then spec_same(src:astype(t):totable(), want[f .. "_" .. t], f .. " -> " .. t) end
      end
    end
  end)

  it("to floats: exact up to the float's precision (u32 max rounds in f32)", function()
    spec_same(arr({ 0, 4294967295 }, "u32"):astype("f32"):totable(), { 0.0, 4294967296.0 })
    spec_same(arr({ 0, 4294967295 }, "u32"):astype("f64"):totable(), { 0.0, 4294967295.0 })
    spec_same((arr({ 0 }, "u64") - 1):astype("f64"):totable(), { 1.8446744073709552e19 })
    spec_same(arr({ -32768, 32767 }, "i16"):astype("f32"):totable(), { -32768.0, 32767.0 })
  end)

  it("float -> integer: NaN is 0, out of range saturates, the rest truncates (tycho's rule)", function()
    local x = tycho.array({ -1.5, 300.7, 1e10, -1e10, 0 / 0, 1e30 })
    spec_same(x:astype("i8"):totable(), { -1, 127, 127, -128, 0, 127 })
    spec_same(x:astype("i16"):totable(), { -1, 300, 32767, -32768, 0, 32767 })
    spec_same(x:astype("u16"):totable(), { 0, 300, 65535, 0, 0, 65535 })
    spec_same(x:astype("u32"):totable(), { 0, 300, 4294967295, 0, 0, 4294967295 })
    spec_same(x:astype("u64"):totable(), { 0, 300, 10000000000, 0, 0, U64MAX })
    spec_same(tycho.full({ 2 }, -5.5, "u16"):totable(), { 0, 0 })
  end)
end)

describe("new dtypes: promotion", function()
  -- np.promote_types over f64 f32 i64 i32 u8 bool i8 i16 u16 u32 u64
  local names = { "f64", "f32", "i64", "i32", "u8", "bool", "i8", "i16", "u16", "u32", "u64" }
  local rows = {
    f64 = "f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64",
    f32 = "f64 f32 f64 f64 f32 f32 f32 f32 f32 f64 f64",
    i64 = "f64 f64 i64 i64 i64 i64 i64 i64 i64 i64 f64",
    i32 = "f64 f64 i64 i32 i32 i32 i32 i32 i32 i64 f64",
    u8 = "f64 f32 i64 i32 u8 u8 i16 i16 u16 u32 u64",
    bool = "f64 f32 i64 i32 u8 bool i8 i16 u16 u32 u64",
    i8 = "f64 f32 i64 i32 i16 i8 i8 i16 i32 i64 f64",
    i16 = "f64 f32 i64 i32 i16 i16 i16 i16 i32 i64 f64",
    u16 = "f64 f32 i64 i32 u16 u16 i32 i32 u16 u32 u64",
    u32 = "f64 f64 i64 i64 u32 u32 i64 i64 u32 u32 u64",
    u64 = "f64 f64 f64 f64 u64 u64 f64 f64 u64 u64 u64",
  }

  it("promote_types is numpy's table, and maximum computes in it", function()
    for _, a in ipairs(names) do
      local j = 0
      for want in rows[a]:gmatch("%S+") do
        j = j + 1
        local b = names[j]
        assert.are.equal(want, tycho.promote_types(a, b), a .. " with " .. b)
        local m = tycho.maximum(tycho.zeros({ 1 }, a), tycho.zeros({ 1 }, b))
        assert.are.equal(want, m.dtype, "maximum of " .. a .. " and " .. b)
      end
    end
    assert.are.equal("f32", tycho.result_type("u8", tycho.zeros({ 1 }, "i8"), "f32"))
  end)

  it("compares mixed signedness in the promoted dtype (u8 200 < i8 -1 is false)", function()
    spec_same(arr({ 200, 1 }, "u8"):lt(arr({ -1, 2 }, "i8")):totable(), { false, true })
    assert.are.equal("f64", (arr({ 1 }, "u64") + arr({ 1 }, "i64")).dtype)
  end)

  it("a Lua integer keeps the store's dtype when it fits", function()
    assert.are.equal("i8", (arr({ 1 }, "i8") + 1).dtype)
    assert.are.equal("u16", (arr({ 1 }, "u16") * 3).dtype)
    assert.are.equal("u64", (arr({ 1 }, "u64") - 1).dtype)
    assert.are.equal("f64", (arr({ 1 }, "i16") / 2).dtype)
  end)
end)

describe("new dtypes: arithmetic", function()
  it("wraps like numpy", function()
    spec_same((arr({ 100, -100, 127 }, "i8") + arr({ 100, -100, 1 }, "i8")):totable(), { -56, 56, -128 })
    spec_same((arr({ 300, -300, 181 }, "i16") * arr({ 300, 300, 181 }, "i16")):totable(), { 24464, -24464, 32761 })
    spec_same((arr({ 65535, 256, 3 }, "u16") * arr({ 65535, 256, 3 }, "u16")):totable(), { 1, 0, 9 })
    spec_same((arr({ 0, 5 }, "u32") - arr({ 1, 6 }, "u32")):totable(), { 4294967295, 4294967295 })
    spec_same((arr({ 0, 5 }, "u64") - arr({ 1, 6 }, "u64")):totable(), { U64MAX, U64MAX })
    spec_same((-arr({ -128, 5, 127 }, "i8")):totable(), { -128, -5, -127 })
    spec_same(tycho.abs(arr({ -128, -5, 127 }, "i8")):totable(), { -128, 5, 127 })
  end)

  it("floor division and modulo follow numpy; x // 0 and x % 0 are 0", function()
    local x, y = { -7, 7, -7, 7, 0, -128 }, { 2, -2, -2, 2, 3, -1 }
    for _, dt in ipairs({ "i8", "i16" }) do
      local a, b = arr(x, dt), arr(y, dt)
      spec_same((a // b):totable(), dt == "i8" and { -4, -4, 3, 3, 0, -128 } or { -4, -4, 3, 3, 0, 128 }, dt)
      spec_same((a % b):totable(), { 1, -1, -1, 1, 0, 0 }, dt)
    end
    spec_same((arr({ -32768 }, "i16") // arr({ -1 }, "i16")):totable(), { -32768 })
    for _, dt in ipairs({ "u16", "u32", "u64" }) do
      local a, b = arr({ 7, 65535, 0, 9 }, dt), arr({ 2, 16, 3, 0 }, dt)
      spec_same((a // b):totable(), { 3, 4095, 0, 0 }, dt)
      spec_same((a % b):totable(), { 1, 15, 0, 0 }, dt)
      spec_same((a / b):totable(), { 3.5, 4095.9375, 0.0, math.huge }, dt)
    end
    spec_same((arr({ 7, -7 }, "i8") // arr({ 0, 0 }, "i8")):totable(), { 0, 0 })
    spec_same((arr({ 7, -7 }, "i8") % arr({ 0, 0 }, "i8")):totable(), { 0, 0 })
  end)

  it("shifts and bitwise operators as numpy", function()
    spec_same((arr({ 1, -1, 64 }, "i8") << arr({ 7, 3, 1 }, "i8")):totable(), { -128, -8, -128 })
    spec_same((arr({ -128, 100, -1 }, "i8") >> arr({ 7, 2, 9 }, "i8")):totable(), { -1, 25, -1 })
    spec_same((~arr({ 0, 255 }, "u16")):totable(), { 65535, 65280 })
    spec_same((~arr({ 0, 1 }, "u64")):totable(), { U64MAX, U64MAX })
    spec_same((arr({ 0xF0F0F0F0 }, "u32") ~ arr({ 0xFFFFFFFF }, "u32")):totable(), { 252645135 })
  end)
end)

describe("new dtypes: reductions", function()
  -- numpy: sums and products of signed dtypes are i64, of unsigned ones u64
  local cases = {
    { "i8", { 100, 100, 100, -128 }, "i64", 172, -128000000, -128, 100, 4, 1, 43.0 },
    { "i16", { 30000, 30000, -5 }, "i64", 59995, -4500000000, -5, 30000, 3, 1, 19998.333333333332 },
    { "u8", { 200, 200, 255 }, "u64", 655, 10200000, 200, 255, 1, 3, 218.33333333333334 },
    { "u16", { 65535, 65535 }, "u64", 131070, 4294836225, 65535, 65535, 1, 1, 65535.0 },
    { "u32", { 4294967295, 4294967295 }, "u64", 8589934590, 1.8446744065119617e+19, 4294967295,
      4294967295, 1, 1, 4294967295.0 },
  }
  it("sum prod min max argmin argmax mean as numpy", function()
    for _, c in ipairs(cases) do
      local dt, x = c[1], arr(c[2], c[1])
      assert.are.equal(c[3], x:sum().dtype, dt)
      assert.are.equal(c[3], x:prod().dtype, dt)
      assert.are.equal(dt, x:min().dtype)
      spec_same(x:sum():item(), c[4], dt .. " sum")
      spec_same(x:prod():item(), c[5], dt .. " prod")
      spec_same(x:min():item(), c[6], dt .. " min")
      spec_same(x:max():item(), c[7], dt .. " max")
      spec_same(x:argmin():item(), c[8], dt .. " argmin")
      spec_same(x:argmax():item(), c[9], dt .. " argmax")
      spec_same(x:mean():item(), c[10], dt .. " mean")
    end
  end)

  it("u64 above 2^63 orders unsigned (min, max, argmin, sort)", function()
    local big = (arr({ 0, 0, 5 }, "u64") - arr({ 0, 1, 0 }, "u64")) -- {0, 2^64-1, 5}
    spec_same(big:max():item(), U64MAX)
    spec_same(big:min():item(), 0)
    spec_same(big:argmax():item(), 2)
    spec_same(tycho.sort(big):totable(), { 0, 5, U64MAX })
    local s = arr({ 1, 1, 5 }, "u64") * (1 << 62) -- 5 * 2^62 wraps to 2^62
    spec_same(s:totable(), { 1 << 62, 1 << 62, 1 << 62 })
    spec_same(s:sum():item(), 1.3835058055282164e19) -- 3 * 2^62, numpy's 13835058055282163712
  end)

  it("along an axis", function()
    local a = arr({ { 1, -2, 3 }, { -4, 5, -6 } }, "i16")
    spec_same(a:sum(1):totable(), { -3, 3, -3 })
    spec_same(a:sum(2):totable(), { 2, -5 })
    spec_same(a:max(2):totable(), { 3, 5 })
    spec_same(a:argmin(2):totable(), { 2, 3 })
  end)
end)

describe("new dtypes: other operation families", function()
  it("scans, matmul, unique, clip, where and median as numpy", function()
    local c = tycho.cumsum(arr({ 65535, 65535, 3 }, "u16"))
    assert.are.equal("u64", c.dtype)
    spec_same(c:totable(), { 65535, 131070, 131073 })
    spec_same(tycho.cumprod(arr({ -100, 100, -3 }, "i8")):totable(), { -100, -10000, 30000 })
    local m = arr({ { 1, 2 }, { 3, 4 } }, "i16")
    local p = tycho.matmul(m, m)
    assert.are.equal("i16", p.dtype)
    spec_same(p:totable(), { { 7, 10 }, { 15, 22 } })
    spec_same(tycho.matmul(arr({ { 200, 100 } }, "u8"), arr({ { 2 }, { 3 } }, "u8")):totable(), { { 188 } })
    spec_same(tycho.unique(arr({ 3, 65535, 3, 0 }, "u16")):totable(), { 0, 3, 65535 })
    spec_same(tycho.clip(arr({ -5, 100, 50 }, "i8"), -10, 60):totable(), { -5, 60, 50 })
    local w = tycho.where(tycho.array({ true, false }), arr({ 1, 2 }, "u32"), arr({ 5, 6 }, "u32"))
    assert.are.equal("u32", w.dtype)
    spec_same(w:totable(), { 1, 6 })
    spec_same(tycho.median(arr({ 1, 2, 3, 4 }, "i16")):item(), 2.5)
  end)

  it("a Lua task writes back a u64 element read as a float above 2^63 (the float rule)", function()
    -- found by tests/robust/api_fuzz.lua (seeds 30118, 30379): `x[i] = x[i] + 2`
    -- on a u64 element past 2^63 failed with "is not an integer"
    local inc = tycho.task{ name = "dx_u64_inc", args = { "inout", "scalar" },
      body = function(ctx, x, s) for i = ctx.lo, ctx.hi do x[i] = x[i] + s end end }
    local x = arr({ 0, 5, 0 }, "u64") - arr({ 3, 0, 1 }, "u64") -- 2^64 - 3, 5, 2^64 - 1
    inc(x, 2)
    -- 2^64 - 3 reads as the float 2^64, plus 2 saturates at 2^64 - 1; 2^64 - 1 stays
    spec_same(x:totable(), { U64MAX, 7, U64MAX })
    assert.are.equal("18446744073709551615", tostring(x):match("%d+"))
    local top = tycho.task{ name = "dx_u64_top", args = { "in", "reduce:max" },
      body = function(ctx, a) return 2.0 ^ 63 end }
    local r = tycho.zeros({}, "u64")
    top(x, r)
    spec_same(r:item(), 2.0 ^ 63)
    local bad = tycho.task{ name = "dx_u64_bad", args = { "inout" },
      body = function(ctx, a) a[ctx.lo] = 0.5 end }
    local ok, err = pcall(function() bad(x); tycho.flush() end)
    assert.is_false(ok)
    assert.matches("0%.5 is not an integer %(the store is u64%)", err)
  end)

  it("random integers, integer positions and masks take the new dtypes", function()
    local r = tycho.random.integers(-5, 5, { 1000 }, "i8")
    assert.are.equal("i8", r.dtype)
    assert.is_true(r:min():item() >= -5 and r:max():item() <= 4)
    spec_fails({ "[0, 300) is out of range for i8 (-128..127)" }, tycho.random.integers, 0, 300, { 3 }, "i8")
    local x = tycho.arange(10, "i64"):astype("i16")
    spec_same(x[arr({ 1, 3 }, "u16")]:totable(), { 0, 2 })
    spec_same(x[arr({ 10, -1 }, "i8")]:totable(), { 9, 9 })
    local m = arr({ 0, 0, 0, 0, 0, 0, 0, 0, 256, 0 }, "i16") -- 256: its low byte is 0
    spec_same(tycho.nonzero(m)[1]:totable(), { 9 })
  end)
end)

describe("new dtypes: sort", function()
  it("sorts and argsorts as numpy", function()
    spec_same(tycho.sort(arr({ 4294967295, 0, 7, 2147483648 }, "u32")):totable(), { 0, 7, 2147483648, 4294967295 })
    spec_same(tycho.argsort(arr({ 5, -3, -32768, 32767, 0 }, "i16")):totable(), { 3, 2, 5, 1, 4 })
    spec_same(tycho.sort(arr({ 3, -1, 2, -128 }, "i8")):totable(), { -128, -1, 2, 3 })
    -- long enough for the parallel runs-and-merges path
    local n = 300000
    local x = (tycho.arange(n, "i64") * 7919 % 65536):astype("u16")
    local s = tycho.sort(x)
    assert.are.equal("u16", s.dtype)
    local t = s:totable()
    spec_same({ t[1], t[n] }, { 0, 65535 })
    local sorted = true
    for i = 2, n do sorted = sorted and t[i - 1] <= t[i] end
    assert.is_true(sorted)
  end)
end)

describe("new dtypes: .npy", function()
  local files = {
    i8 = { { -128, -1, 0 }, { 1, 100, 127 } },
    i16 = { { -32768, -1, 0 }, { 1, 300, 32767 } },
    u16 = { { 0, 1, 255 }, { 256, 40000, 65535 } },
    u32 = { { 0, 1, 65536 }, { 2147483648, 3000000000, 4294967295 } },
    u64 = { { 0, 1, (1 << 53) + 1 }, { math.maxinteger, 9.2233720368547758e18, U64MAX } },
  }
  it("reads files numpy wrote (|i1 <i2 <u2 <u4 <u8)", function()
    for dt, want in pairs(files) do
      local x = tycho.load(data .. dt .. ".npy")
      assert.are.equal(dt, x.dtype)
      spec_same(x.shape, { 2, 3 })
      spec_same(x:totable(), want, dt)
    end
  end)

  it("round-trips every new dtype and writes numpy's descr", function()
    local descr = { i8 = "|i1", i16 = "<i2", u16 = "<u2", u32 = "<u4", u64 = "<u8" }
    for dt, want in pairs(files) do
      local path = os.tmpname()
      tycho.save(path, tycho.load(data .. dt .. ".npy"))
      local f = assert(io.open(path, "rb"))
      local bytes = f:read("a")
      f:close()
      assert.is_truthy(bytes:find("'descr': '" .. descr[dt] .. "'", 1, true), dt)
      -- the same data bytes as numpy's file
      local g = assert(io.open(data .. dt .. ".npy", "rb"))
      local np = g:read("a")
      g:close()
      local nb = 6 * tycho.iinfo(dt).bits // 8
      assert.are.equal(np:sub(-nb), bytes:sub(-nb), dt)
      local back = tycho.load(path)
      os.remove(path)
      assert.are.equal(dt, back.dtype)
      spec_same(back:totable(), want, dt)
    end
  end)
end)

describe("new dtypes: text I/O and printing", function()
  it("savetxt and loadtxt keep u64 above 2^63 and negative i8", function()
    local path = os.tmpname()
    tycho.savetxt(path, arr({ 0, 1.8446744073709552e19 }, "u64"), { fmt = "%d" })
    local f = assert(io.open(path))
    local text = f:read("a")
    f:close()
    assert.are.equal("0\n18446744073709551615\n", text)
    local back = tycho.loadtxt(path, { dtype = "u64" })
    assert.are.equal("u64", back.dtype)
    spec_same(back:totable(), { 0, U64MAX })
    f = assert(io.open(path, "w"))
    f:write("-128 5\n127 -1\n")
    f:close()
    local x = tycho.loadtxt(path, { dtype = "i8" })
    spec_same(x:totable(), { { -128, 5 }, { 127, -1 } })
    f = assert(io.open(path, "w"))
    f:write("128\n")
    f:close()
    assert.is_false(pcall(tycho.loadtxt, path, { dtype = "i8" }))
    os.remove(path)
  end)

  it("prints as numpy (u64 unsigned, right-aligned)", function()
    local s = tostring(arr({ -128, 0, 127 }, "i8"))
    assert.is_truthy(s:find("[-128    0  127]", 1, true), s)
    assert.is_truthy(s:find("dtype=i8", 1, true), s)
    s = tostring(arr({ 0, 1.8446744073709552e19 }, "u64"))
    assert.is_truthy(s:find("[                   0 18446744073709551615]", 1, true), s)
  end)
end)

describe("new dtypes: fused runs", function()
  it("a chain mixing i8, u8, i16 and f32 gives numpy's values, fused or not", function()
    local function run()
      local a = arr({ -100, 50, 120, -5 }, "i8")
      local b = arr({ 200, 100, 255, 0 }, "u8")
      local c = arr({ 1.5, -2.5, 3.25, 0.5 }, "f32")
      local s = a + b -- i16
      local r = s * 3 - c -- f32
      local r2 = tycho.maximum(a * a, b:astype("i16")) // 7 -- i8 * i8 wraps first
      return s, r, r2
    end
    local s, r, r2 = run()
    if type(tycho.explain) == "function" then -- one fused launch, casts included
      tycho.flush()
      local fused
      for _, e in ipairs(tycho.explain(8)) do
        if e.task == "fused" then fused = e end
      end
      assert.is_truthy(fused)
      assert.is_truthy(fused.fused_ops:find("floor_divide", 1, true), fused.fused_ops)
    end
    assert.are.equal("i16", s.dtype)
    assert.are.equal("f32", r.dtype)
    assert.are.equal("i16", r2.dtype)
    spec_same(s:totable(), { 100, 150, 375, -5 })
    spec_same(r:totable(), { 298.5, 452.5, 1121.75, -15.5 })
    spec_same(r2:totable(), { 28, 14, 36, 3 })
    if tycho.parallel then
      tycho.parallel({ fuse = false }, function()
        local _, ru, r2u = run()
        spec_same(ru:totable(), r:totable())
        spec_same(r2u:totable(), r2:totable())
      end)
    end
  end)
end)

describe("new dtypes: large fused runs", function()
  it("give the same bits fused and unfused over many pieces", function()
    local function run()
      local i = tycho.arange(200000, "i64")
      local a = (i % 256 - 128):astype("i8")
      local u = (i * 40503):astype("u16")
      local w = (i * 2654435761):astype("u32")
      return ((a * a + u) // 3):astype("u64") * w - 7, (a:astype("i16") - u:astype("i16")) % 97
    end
    local x, y = run()
    local tx, ty = x:totable(), y:totable()
    -- numpy: x[1000], x[0] (2^64 - 7, a float in Lua) and y[0:5]
    spec_same({ tx[1001], tx[1] }, { 88313103553, 1.8446744073709552e19 })
    spec_same({ ty[1], ty[2], ty[3], ty[4], ty[5] }, { 66, 74, 21, 29, 73 })
    if tycho.parallel then
      tycho.parallel({ fuse = false }, function()
        local xu, yu = run()
        spec_same(xu:totable(), tx)
        spec_same(yu:totable(), ty)
      end)
    end
  end)
end)

describe("tycho.iinfo and tycho.finfo", function()
  it("iinfo has numpy's bits, min and max", function()
    local want = {
      i8 = { 8, -128, 127 }, i16 = { 16, -32768, 32767 }, i32 = { 32, -2147483648, 2147483647 },
      i64 = { 64, math.mininteger, math.maxinteger }, u8 = { 8, 0, 255 }, u16 = { 16, 0, 65535 },
      u32 = { 32, 0, 4294967295 }, u64 = { 64, 0, U64MAX },
    }
    for dt, w in pairs(want) do
      local i = tycho.iinfo(dt)
      spec_same({ i.bits, i.min, i.max }, w, dt)
      assert.are.equal(dt:sub(1, 1), i.kind)
      assert.are.equal(dt, i.dtype)
    end
    assert.are.equal(127, tycho.iinfo(tycho.zeros({ 1 }, "i8")).max)
    spec_fails({ "tycho.iinfo: f64 is not an integer dtype" }, tycho.iinfo, "f64")
    spec_fails({ "tycho.iinfo: unknown dtype 'i128'" }, tycho.iinfo, "i128")
  end)

  it("finfo has numpy's fields", function()
    local f = tycho.finfo("f64")
    spec_same({ f.bits, f.eps, f.epsneg, f.tiny, f.smallest_normal, f.smallest_subnormal, f.max, f.min,
      f.resolution, f.precision, f.maxexp, f.minexp, f.nmant, f.nexp, f.machep, f.negep, f.iexp },
      { 64, 2.220446049250313e-16, 1.1102230246251565e-16, 2.2250738585072014e-308,
        2.2250738585072014e-308, 5e-324, 1.7976931348623157e+308, -1.7976931348623157e+308, 1e-15,
        15, 1024, -1022, 52, 11, -52, -53, 11 })
    f = tycho.finfo("float32")
    spec_same({ f.bits, f.eps, f.epsneg, f.tiny, f.smallest_normal, f.smallest_subnormal, f.max, f.min,
      f.resolution, f.precision, f.maxexp, f.minexp, f.nmant, f.nexp, f.machep, f.negep, f.iexp },
      { 32, 1.1920928955078125e-07, 5.960464477539063e-08, 1.1754943508222875e-38,
        1.1754943508222875e-38, 1.401298464324817e-45, 3.4028234663852886e+38,
        -3.4028234663852886e+38, 9.999999974752427e-07, 6, 128, -126, 23, 8, -23, -24, 8 })
    spec_fails({ "tycho.finfo: i8 is not a float dtype" }, tycho.finfo, "i8")
  end)
end)
