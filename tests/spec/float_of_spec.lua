-- tests/spec/float_of_spec.lua — the float dtype of small integers (issue
-- 18, docs/dtypes.md "The float dtype F of an integer"): sqrt, exp, sin and
-- the other float functions of i16/u16 give f32 as numpy's, of i8/u8/bool
-- f32 where numpy gives f16 (tycho has no f16), of i32/i64 f64; arctan2
-- and hypot promote the two operands' float dtypes (i16 with u16 is f32);
-- true division and the statistics stay f64, as numpy's. The same dtypes
-- and bits fused and unfused, compiled and interpreted. Expected values:
-- numpy 1.24 on the f32 of the input (for i16/u16 these are numpy's own
-- results; for i8/u8 numpy's f16 ones to more digits), pasted here.
local tycho = tycho or require "tycho"

local N = 0 / 0
local IN = { i16 = {-300, -7, -1, 0, 1, 2, 3, 100, 30000}, u16 = {0, 1, 2, 3, 100, 1000, 65535}, i8 = {-128, -7, -1, 0, 1, 2, 3, 100, 127}, u8 = {0, 1, 2, 3, 7, 100, 200, 255} }
local E = {
  sqrt = { i16 = {N, N, N, 0.0, 1.0, 1.4142135381698608, 1.7320507764816284, 10.0, 173.205078125}, u16 = {0.0, 1.0, 1.4142135381698608, 1.7320507764816284, 10.0, 31.62277603149414, 255.998046875}, i8 = {N, N, N, 0.0, 1.0, 1.4142135381698608, 1.7320507764816284, 10.0, 11.269427299499512}, u8 = {0.0, 1.0, 1.4142135381698608, 1.7320507764816284, 2.6457512378692627, 10.0, 14.142135620117188, 15.968719482421875} },
  exp = { i16 = {0.0, 0.0009118819143623114, 0.3678794205188751, 1.0, 2.7182819843292236, 7.3890557289123535, 20.08553695678711, math.huge, math.huge}, u16 = {1.0, 2.7182819843292236, 7.3890557289123535, 20.08553695678711, math.huge, math.huge, math.huge}, i8 = {0.0, 0.0009118819143623114, 0.3678794205188751, 1.0, 2.7182819843292236, 7.3890557289123535, 20.08553695678711, math.huge, math.huge}, u8 = {1.0, 2.7182819843292236, 7.3890557289123535, 20.08553695678711, 1096.6331787109375, math.huge, math.huge, math.huge} },
  sin = { i16 = {0.999755859375, -0.6569865942001343, -0.8414710164070129, 0.0, 0.8414710164070129, 0.9092974066734314, 0.14112000167369843, -0.5063656568527222, -0.8026654124259949}, u16 = {0.0, 0.8414710164070129, 0.9092974066734314, 0.14112000167369843, -0.5063656568527222, 0.8268795609474182, 0.9813275337219238}, i8 = {-0.721037745475769, -0.6569865942001343, -0.8414710164070129, 0.0, 0.8414710164070129, 0.9092974066734314, 0.14112000167369843, -0.5063656568527222, 0.9726300835609436}, u8 = {0.0, 0.8414710164070129, 0.9092974066734314, 0.14112000167369843, 0.6569865942001343, -0.5063656568527222, -0.8732972741127014, -0.5063916444778442} },
  log1p = { i16 = {N, N, -math.huge, 0.0, 0.6931471824645996, 1.0986123085021973, 1.3862943649291992, 4.6151204109191895, 10.308985710144043}, u16 = {0.0, 0.6931471824645996, 1.0986123085021973, 1.3862943649291992, 4.6151204109191895, 6.908754825592041, 11.090354919433594}, i8 = {N, N, -math.huge, 0.0, 0.6931471824645996, 1.0986123085021973, 1.3862943649291992, 4.6151204109191895, 4.852030277252197}, u8 = {0.0, 0.6931471824645996, 1.0986123085021973, 1.3862943649291992, 2.079441547393799, 4.6151204109191895, 5.303305149078369, 5.545177459716797} },
  arctan = { i16 = {-1.5674630403518677, -1.4288992881774902, -0.7853981852531433, 0.0, 0.7853981852531433, 1.1071487665176392, 1.249045729637146, 1.5607967376708984, 1.5707629919052124}, u16 = {0.0, 0.7853981852531433, 1.1071487665176392, 1.249045729637146, 1.5607967376708984, 1.5697963237762451, 1.5707811117172241}, i8 = {-1.5629839897155762, -1.4288992881774902, -0.7853981852531433, 0.0, 0.7853981852531433, 1.1071487665176392, 1.249045729637146, 1.5607967376708984, 1.562922477722168}, u8 = {0.0, 0.7853981852531433, 1.1071487665176392, 1.249045729637146, 1.4288992881774902, 1.5607967376708984, 1.5657963752746582, 1.5668748617172241} },
  cbrt = { i16 = {-6.694329738616943, -1.912931203842163, -1.0, 0.0, 1.0, 1.2599210739135742, 1.4422496557235718, 4.6415886878967285, 31.072324752807617}, u16 = {0.0, 1.0, 1.2599210739135742, 1.4422496557235718, 4.6415886878967285, 10.0, 40.31726837158203}, i8 = {-5.039684295654297, -1.912931203842163, -1.0, 0.0, 1.0, 1.2599210739135742, 1.4422496557235718, 4.6415886878967285, 5.026525974273682}, u8 = {0.0, 1.0, 1.2599210739135742, 1.4422496557235718, 1.912931203842163, 4.6415886878967285, 5.8480353355407715, 6.341325759887695} },
  tanh = { i16 = {-1.0, -0.9999983310699463, -0.7615941762924194, 0.0, 0.7615941762924194, 0.9640275835990906, 0.9950547814369202, 1.0, 1.0}, u16 = {0.0, 0.7615941762924194, 0.9640275835990906, 0.9950547814369202, 1.0, 1.0, 1.0}, i8 = {-1.0, -0.9999983310699463, -0.7615941762924194, 0.0, 0.7615941762924194, 0.9640275835990906, 0.9950547814369202, 1.0, 1.0}, u8 = {0.0, 0.7615941762924194, 0.9640275835990906, 0.9950547814369202, 0.9999983310699463, 1.0, 1.0, 1.0} },
  arctan2_i16 = {-0.00999966636300087, -0.06988599896430969, -0.32175058126449585, 0.0, 0.7853981256484985, 1.5707963705062866, 1.8925468921661377, 1.640682339668274, 1.5807960033416748},
  hypot_u8 = {255.0, 200.00250244140625, 100.0199966430664, 7.6157732009887695, 7.6157732009887695, 100.0199966430664, 200.00250244140625, 255.0} ,
  deg2rad_i8 = {-2.2340214252471924, -0.12217304855585098, -0.01745329238474369, 0.0, 0.01745329238474369, 0.03490658476948738, 0.05235987901687622, 1.7453292608261108, 2.2165682315826416} ,
  div_i8 = {-42.666666666666664, -2.3333333333333335, -0.3333333333333333, 0.0, 0.3333333333333333, 0.6666666666666666, 1.0, 33.333333333333336, 42.333333333333336},
  mean_i8 = 10.777777777777779 , std_i16 = 9436.584815898934 , median_u16 = 3.0 ,
}

-- within 2 f32 ULP (SLEEF's f32 functions against numpy's libm), NaN equal
-- to NaN, infinities exact
local function near32(got, want, path)
  if type(got) == "userdata" then got = got:totable() end
  assert(#got == #want, string.format("%s: expected %d elements, got %d", path, #want, #got))
  for i = 1, #want do
    local g, w = got[i], want[i]
    local ok
    if w ~= w then ok = g ~= g
    elseif w == math.huge or w == -math.huge or w == 0 then ok = g == w
    else ok = math.abs(g - w) <= 2 * 2 ^ (math.floor(math.log(math.abs(w), 2)) - 23) end
    assert(ok, string.format("%s[%d]: got %.17g, expected %.17g", path, i, g, w))
  end
end

describe("float functions of small integers", function()
  it("give f32 for i8, u8, i16, u16 and bool, f64 for i32 and i64", function()
    for _, f in ipairs({ "sqrt", "exp", "sin", "log1p", "arctan", "cbrt", "tanh" }) do
      for _, t in ipairs({ "i16", "u16", "i8", "u8" }) do
        local r = tycho[f](tycho.array(IN[t], t))
        assert.are.equal("f32", r.dtype, f .. " of " .. t)
        near32(r, E[f][t], f .. " " .. t)
      end
      assert.are.equal("f32", tycho[f](tycho.array({ true, false })).dtype, f .. " of bool")
      assert.are.equal("f64", tycho[f](tycho.array({ 1, 2 }, "i32")).dtype, f .. " of i32")
      assert.are.equal("f64", tycho[f](tycho.array({ 1, 2 }, "u32")).dtype, f .. " of u32")
      assert.are.equal("f64", tycho[f](tycho.array({ 1, 2 }, "i64")).dtype, f .. " of i64")
      assert.are.equal("f32", tycho[f](tycho.array({ 1, 2 }, "f32")).dtype, f .. " of f32")
    end
  end)

  it("arctan2 and hypot promote the operands' float dtypes, as numpy's loops", function()
    local a = tycho.array(IN.i16, "i16")
    local r = tycho.arctan2(a, tycho.flip(a, 1))
    assert.are.equal("f32", r.dtype)
    near32(r, E.arctan2_i16, "arctan2")
    local u = tycho.array(IN.u8, "u8")
    local h = tycho.hypot(u, tycho.flip(u, 1))
    assert.are.equal("f32", h.dtype)
    near32(h, E.hypot_u8, "hypot")
    assert.are.equal("f32", tycho.arctan2(a, tycho.array({ 1 }, "u16")).dtype)
    assert.are.equal("f32", tycho.hypot(tycho.array({ 1 }, "i8"), u).dtype)
    assert.are.equal("f64", tycho.arctan2(a, tycho.array({ 1 }, "i32")).dtype)
    assert.are.equal("f64", tycho.hypot(tycho.array({ 1 }, "u32"), u).dtype)
  end)

  it("deg2rad of i8 is f32; true division, mean, std, median stay f64 as numpy's", function()
    local x = tycho.array(IN.i8, "i8")
    local d = tycho.deg2rad(x)
    assert.are.equal("f32", d.dtype)
    near32(d, E.deg2rad_i8, "deg2rad")
    local q = x / tycho.array({ 3 }, "i8")
    assert.are.equal("f64", q.dtype)
    spec_same(q:totable(), E.div_i8)
    assert.are.equal("f64", x:mean().dtype)
    assert.are.equal(E.mean_i8, x:mean():item())
    local s = tycho.std(tycho.array(IN.i16, "i16"))
    assert.are.equal("f64", s.dtype)
    assert(math.abs(s:item() - E.std_i16) <= 1e-12 * E.std_i16)
    local m = tycho.median(tycho.array(IN.u16, "u16"))
    assert.are.equal("f64", m.dtype)
    assert.are.equal(E.median_u16, m:item())
  end)

  it("the same dtype and bits fused and unfused", function()
    local a = tycho.array(IN.i16, "i16")
    local fused = (tycho.sin(a) * 2 + tycho.sqrt(tycho.abs(a))):totable()
    local plain = tycho.parallel({ fuse = false }, function()
      return tycho.sin(a) * 2 + tycho.sqrt(tycho.abs(a))
    end)
    assert.are.equal("f32", plain.dtype)
    spec_same(fused, plain:totable())
  end)

  it("the same dtype and bits compiled and interpreted", function()
    local code = [[
      local a = tycho.arange(-3000, 3000):astype("i16")
      local b = tycho.arange(0, 6000):astype("u8")
      local r = tycho.exp(a / 1000) + tycho.cbrt(a) * tycho.sin(b) + tycho.arctan2(a, b)
      io.write(r.dtype, " ")
      local t = r:totable()
      local s = 0
      for i = 1, #t do s = s + t[i] * i end
      io.write(string.format("%.17g %.9g %.9g\n", s, t[1], t[#t]))
    ]]
    local on, rc1 = spec_lua(code, { TYCHO_CODEGEN = "always" })
    local off, rc2 = spec_lua(code, { TYCHO_CODEGEN = "off" })
    assert.are.equal(0, rc1, on)
    assert.are.equal(0, rc2, off)
    assert.are.equal(off, on)
    assert(on:match("^f64 "), on) -- a / 1000: true division is f64, and it promotes the sum
    local code32 = code:gsub("a / 1000", "tycho.sqrt(tycho.abs(a))")
    on = spec_lua(code32, { TYCHO_CODEGEN = "always" })
    off = spec_lua(code32, { TYCHO_CODEGEN = "off" })
    assert.are.equal(off, on)
    assert(on:match("^f32 "), on)
  end)
end)
