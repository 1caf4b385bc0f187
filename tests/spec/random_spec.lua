-- tests/spec/random_spec.lua — tycho.random's distributions and generators
-- (issue 18, "Random").
--
-- tycho's bit streams are not numpy's (counter-based SplitMix64, not PCG64),
-- so the checks are statistical with fixed seeds: moments, ranges and
-- histograms against the distributions' exact values, with tolerances of
-- about 5 standard errors (the runs are deterministic, so a check either
-- always passes or always fails; 5 sigma keeps a correct generator far from
-- the edge and still catches a wrong law: a biased modulo, a wrong std).
-- Chi-square thresholds are the 0.1% points of the distribution.
-- Reproducibility is exact: the same bits for a seed under --cpus 1, 2, 3,
-- every parallel mode and fusion on or off.
local tycho = tycho or require "tycho"

local same, fails = spec_same, spec_fails
local R = tycho.random

local function mean(x) return x:astype("f64"):mean():item() end
local function var(x)
  local m = mean(x)
  local d = x:astype("f64") - m
  return (d * d):mean():item()
end
local function frac(mask) return mask:astype("f64"):mean():item() end
local function near(got, want, tol, what)
  assert.is_true(math.abs(got - want) <= tol,
    string.format("%s: got %.6g, expected %.6g within %.3g", what or "value", got, want, tol))
end
-- chi-square of counts against expected probabilities
local function chi2(counts, probs)
  local n = 0
  for i = 1, #counts do n = n + counts[i] end
  local c = 0
  for i = 1, #counts do
    local e = n * probs[i]
    c = c + (counts[i] - e) ^ 2 / e
  end
  return c
end
-- counts of the values 1..k of an integer store (its values must lie there)
local function counts(x, k)
  local c = tycho.bincount(x:astype("i64")):totable()
  local out = {}
  for i = 1, k do out[i] = c[i + 1] or 0 end
  return out
end

describe("tycho.random", function()
  it("is still callable, and a table of functions", function()
    assert.are.equal("table", type(R))
    R.seed(5)
    local a = tycho.random({ 3, 4 }):totable()
    R.seed(5)
    same(R.random({ 3, 4 }):totable(), a)
    tycho.seed(5) -- tycho.seed and tycho.random.seed are one seed
    same(tycho.random({ 3, 4 }):totable(), a)
    -- the runtime's generator after seed(s) is generator(s)
    same(R.generator(5):random({ 3, 4 }):totable(), a)
    assert.are.equal("f32", tycho.random(3, "f32").dtype)
    assert.are.equal("f64", tycho.random(3, "f64", "normal").dtype)
  end)

  it("generators advance one draw per call and repeat for a seed", function()
    local g = R.generator(42)
    local a = g:normal(1000):totable()
    local b = g:normal(1000):totable()
    assert.are_not.same(a, b)
    local seed, draws = g:state()
    assert.are.equal(42, seed)
    assert.are.equal(2, draws)
    local h = R.generator(42)
    same(h:normal(1000):totable(), a)
    same(h:normal(1000):totable(), b)
    assert.truthy(tostring(h):find("tycho.random.generator(42) after 2 draws", 1, true))
    -- another seed, other numbers; the global generator is independent of g
    assert.are_not.same(R.generator(43):normal(1000):totable(), a)
    R.seed(1)
    local c = R.normal(10):totable()
    g:normal(10)
    R.seed(1)
    same(R.normal(10):totable(), c)
  end)

  it("normal has its mean, std and bell shape", function()
    local g = R.generator(7)
    local n = 200000
    local x = g:normal(n, 2.5, 3)
    assert.are.equal("f64", x.dtype)
    same(x.shape, { n })
    -- standard error of the mean 3/sqrt(n) = 0.0067, of the variance 9*sqrt(2/n) = 0.028
    near(mean(x), 2.5, 0.034, "mean")
    near(var(x), 9, 0.15, "variance")
    local z = (x - 2.5) / 3
    near(mean(z * z * z), 0, 0.03, "skewness")     -- se sqrt(15/n) = 0.0087
    near(mean(z * z * z * z), 3, 0.12, "kurtosis") -- se sqrt(96/n) = 0.022
    -- P(|z| < 1) = 0.682689, P(|z| < 2) = 0.954500, P(z < -1.5) = 0.066807
    near(frac(tycho.lt(tycho.abs(z), 1)), 0.682689, 0.006, "P(|z|<1)")
    near(frac(tycho.lt(tycho.abs(z), 2)), 0.954500, 0.003, "P(|z|<2)")
    near(frac(tycho.lt(z, -1.5)), 0.066807, 0.003, "P(z<-1.5)")
    -- standard_normal and f32
    local s = g:standard_normal({ 400, 500 }, "f32")
    assert.are.equal("f32", s.dtype)
    near(mean(s), 0, 0.012, "mean f32")
    near(var(s), 1, 0.016, "var f32")
    -- std 0 gives the mean; module form
    R.seed(3)
    same(R.normal(4, -1, 0):totable(), { -1, -1, -1, -1 })
  end)

  it("uniform covers [low, high) evenly", function()
    local g = R.generator(11)
    local n = 100000
    local x = g:uniform(n, -2, 3)
    assert.is_true(x:min():item() >= -2 and x:max():item() < 3)
    near(mean(x), 0.5, 0.025, "mean")            -- se 5/sqrt(12 n) = 0.0046
    near(var(x), 25 / 12, 0.04, "variance")      -- se 0.0074
    local bins = counts(tycho.floor((x + 2) * 2) + 1, 10) -- 10 bins of width 0.5
    local p = {}
    for i = 1, 10 do p[i] = 0.1 end
    assert.is_true(chi2(bins, p) < 27.88, "chi2 " .. chi2(bins, p)) -- 9 dof
    -- defaults [0, 1), f32, and a range so narrow that rounding would reach high
    local u = g:uniform({ 100, 10 }, nil, nil, "f32")
    assert.are.equal("f32", u.dtype)
    assert.is_true(u:min():item() >= 0 and u:max():item() < 1)
    local t = g:uniform(100000, 1, 1 + 2 ^ -50)
    assert.is_true(t:min():item() >= 1 and t:max():item() < 1 + 2 ^ -50)
    assert.is_true(t:max():item() > 1) -- not stuck at low
  end)

  it("integers are uniform on [low, high) without bias", function()
    local g = R.generator(13)
    local d = g:integers(1, 7, 60000)            -- a die
    assert.are.equal("i64", d.dtype)
    assert.is_true(d:min():item() == 1 and d:max():item() == 6)
    local c = counts(d, 6)
    assert.is_true(chi2(c, { 1 / 6, 1 / 6, 1 / 6, 1 / 6, 1 / 6, 1 / 6 }) < 20.52) -- 5 dof
    -- one bound: [0, n); i32 and u8
    local z = g:integers(5, nil, { 30, 40 }, "i32")
    assert.are.equal("i32", z.dtype)
    same(z.shape, { 30, 40 })
    assert.is_true(z:min():item() == 0 and z:max():item() == 4)
    local b = g:integers(250, 256, 1000, "u8")
    assert.is_true(b:min():item() == 250 and b:max():item() == 255)
    -- range 3 * 2^61: a plain modulo would put 3/4 of the draws below 2^62;
    -- unbiased, 2/3 (se 0.0015 over 100000)
    local big = g:integers(0, 3 * 2 ^ 61, 100000)
    near(frac(tycho.lt(big, 2 ^ 62)), 2 / 3, 0.008, "P(x < 2^62)")
    -- negative bounds
    local neg = g:integers(-3, 0, 2000)
    assert.is_true(neg:min():item() == -3 and neg:max():item() == -1)
    same(g:integers(7, 8, 3):totable(), { 7, 7, 7 })
  end)

  it("exponential has mean scale and variance scale^2", function()
    local g = R.generator(17)
    local x = g:exponential(200000, 2)
    assert.is_true(x:min():item() >= 0)
    near(mean(x), 2, 0.025, "mean")    -- se 2/sqrt(n) = 0.0045
    near(var(x), 4, 0.1, "variance")   -- se 4*sqrt(8/n) = 0.025
    -- P(x > scale) = e^-1
    near(frac(tycho.gt(x, 2)), math.exp(-1), 0.006, "P(x > 2)")
    assert.are.equal("f32", g:exponential(3, 1, "f32").dtype)
  end)

  it("permutation and shuffle reorder without losing anything", function()
    local g = R.generator(19)
    local p = g:permutation(1000)
    assert.are.equal("i64", p.dtype)
    same(tycho.sort(p):totable(), tycho.arange(1, 1001):totable())
    assert.are_not.same(p:totable(), tycho.arange(1, 1001):totable())
    -- positions index a store: x:take(p) is permutation(x)'s kind of result
    local x = tycho.arange(12):reshape({ 4, 3 })
    local y = g:permutation(x)
    same(y.shape, { 4, 3 })
    local rows = {}
    for _, r in ipairs(y:totable()) do
      assert.are.equal(r[1] + 1, r[2]); assert.are.equal(r[1] + 2, r[3]) -- rows stay whole
      rows[#rows + 1] = r[1]
    end
    table.sort(rows)
    same(rows, { 0, 3, 6, 9 })
    same(x:totable(), { { 0, 1, 2 }, { 3, 4, 5 }, { 6, 7, 8 }, { 9, 10, 11 } }) -- x untouched
    -- shuffle: in place, along the first axis
    local s = tycho.arange(100) * 1.0
    assert.is_nil(g:shuffle(s))
    same(tycho.sort(s):totable(), (tycho.arange(100) * 1.0):totable())
    assert.are_not.same(s:totable(), (tycho.arange(100) * 1.0):totable())
    -- every order of 3 is about equally likely (6 orders, 3000 draws)
    local seen = {}
    for _ = 1, 3000 do
      local k = table.concat(g:permutation(3):totable(), "")
      seen[k] = (seen[k] or 0) + 1
    end
    local c = {}
    for _, k in ipairs({ "123", "132", "213", "231", "312", "321" }) do c[#c + 1] = seen[k] or 0 end
    assert.is_true(chi2(c, { 1 / 6, 1 / 6, 1 / 6, 1 / 6, 1 / 6, 1 / 6 }) < 20.52)
    same(g:permutation(0).shape, { 0 })
  end)

  it("choice samples with and without replacement, weighted or not", function()
    local g = R.generator(23)
    -- without replacement: distinct positions
    local k = g:choice(50, 50, false)
    same(tycho.sort(k):totable(), tycho.arange(1, 51):totable())
    local part = g:choice(1000, { 10, 20 }, false)
    same(part.shape, { 10, 20 })
    same(tycho.unique(part).shape, { 200 })
    -- with replacement: positions 1..n, all of them hit
    local r = g:choice(4, 40000)
    local c = counts(r, 4)
    assert.is_true(chi2(c, { 0.25, 0.25, 0.25, 0.25 }) < 16.27) -- 3 dof
    -- weighted with replacement
    local w = g:choice(4, 40000, true, { 0.1, 0.2, 0.3, 0.4 })
    c = counts(w, 4)
    assert.is_true(chi2(c, { 0.1, 0.2, 0.3, 0.4 }) < 16.27, "chi2 " .. chi2(c, { 0.1, 0.2, 0.3, 0.4 }))
    -- a zero weight is never drawn
    local z = g:choice(3, 5000, true, tycho.array({ 0.5, 0, 0.5 }))
    assert.are.equal(0, frac(tycho.eq(z, 2)))
    -- weighted without replacement: numpy's law (draw in proportion to the
    -- weights left): P(1 in a sample of 2 with p = .5 .3 .2) = .5 + .3*.5/.7 + .2*.5/.8
    local hits = 0
    for _ = 1, 2000 do
      local s = g:choice(3, 2, false, { 0.5, 0.3, 0.2 }):totable()
      assert.are_not.equal(s[1], s[2])
      if s[1] == 1 or s[2] == 1 then hits = hits + 1 end
    end
    near(hits / 2000, 0.5 + 0.3 * 0.5 / 0.7 + 0.2 * 0.5 / 0.8, 0.041, "P(1 chosen)") -- se 0.0082
    same(g:choice(3, 2, false, { 0, 0.5, 0.5 }):sort():totable(), { 2, 3 })
    -- numpy's keywords as options
    same(g:choice(3, 2, { replace = false, p = { 0, 0.5, 0.5 } }):sort():totable(), { 2, 3 })
    same(tycho.sort(R.choice(5, 5, { replace = false })):totable(), { 1, 2, 3, 4, 5 })
    -- from a store: its rows
    local a = tycho.array({ { 1, 2 }, { 3, 4 }, { 5, 6 } })
    local t = g:choice(a, 5)
    same(t.shape, { 5, 2 })
    for _, row in ipairs(t:totable()) do assert.are.equal(row[1] + 1, row[2]) end
    local v = g:choice(tycho.array({ 10, 20, 30, 40, 50 }), { 2, 2 }, false)
    same(v.shape, { 2, 2 })
    same(tycho.unique(v).shape, { 4 })
  end)

  it("choice without replacement never repeats", function()
    local g = R.generator(29)
    local v = g:choice(tycho.array({ 10, 20, 30, 40 }), 4, false)
    same(tycho.sort(v):totable(), { 10, 20, 30, 40 })
    same(g:choice(5, 0).shape, { 0 })
    same(g:choice(5).shape, {}) -- size nil: one value (0-d)
  end)

  it("refuses bad arguments with messages that name them", function()
    local g = R.generator(1)
    fails({ "tycho.random.normal: the standard deviation must be >= 0, got -1" }, R.normal, 3, 0, -1)
    fails({ "tycho.random.normal: dtype must be f64 or f32, got i64" }, R.normal, 3, 0, 1, "i64")
    fails({ "tycho.random.uniform: low must be a number, got string" }, R.uniform, 3, "a")
    fails({ "tycho.random.uniform: the parameters must be finite" }, R.uniform, 3, 0, math.huge)
    fails({ "tycho.random.exponential: the scale must be >= 0" }, R.exponential, 3, -1)
    fails({ "tycho.random.integers: low (5) must be less than high (5)" }, R.integers, 5, 5, 3)
    fails({ "tycho.random.integers: [0, 3000000000) is out of range for i32" }, R.integers, 0, 3000000000,
      3, "i32")
    fails({ "tycho.random.integers: integers draw an integer dtype (i64 ... u8), not f64" }, R.integers, 0, 3, 3, "f64")
    fails({ "tycho.random.integers: low is missing" }, R.integers)
    fails({ "tycho.random.generator: seed must be an integer" }, R.generator)
    fails({ "tycho.random.choice: cannot take 4 samples from 3 without replacement" },
      function() return g:choice(3, 4, false) end)
    fails({ "tycho.random.choice: probabilities do not sum to 1" },
      function() return g:choice(3, 4, true, { 0.5, 0.2, 0.2 }) end)
    fails({ "tycho.random.choice: probabilities must be finite and non-negative, p[2] is -0.5" },
      function() return g:choice(3, 4, true, { 1, -0.5, 0.5 }) end)
    fails({ "tycho.random.choice: p has 2 entries, expected one per choice (3)" },
      function() return g:choice(3, 1, true, { 0.5, 0.5 }) end)
    fails({ "tycho.random.choice: p has 1 non-zero entries, fewer than the 2 samples" },
      function() return g:choice(3, 2, false, { 1, 0, 0 }) end)
    fails({ "tycho.random.choice: a is empty" }, function() return g:choice(0, 2) end)
    fails({ "tycho.random.choice: replace is given twice" }, function() return g:choice(3, 2, true, nil, { replace = false }) end)
    fails({ "tycho.random.choice: unknown option 'replac'" }, function() return g:choice(3, 2, { replac = false }) end)
    fails({ "tycho.random.permutation: x must be at least 1-D" }, function() return g:permutation(tycho.array(1)) end)
    fails({ "tycho.random.shuffle: x must be a store, got number" }, R.shuffle, 3)
    fails({ "tycho.random.normal: argument 5 is not accepted" }, R.normal, 3, 0, 1, "f64", 9)
    fails({ "tycho.random.generator: a generator has no method 'nromal' (methods: random," },
      function() return g:nromal(3) end)
    -- a failed draw uses no stream: the next one is what it would have been
    local h1, h2 = R.generator(9), R.generator(9)
    pcall(h1.normal, h1, 3, 0, -1)
    same(h1:normal(5):totable(), h2:normal(5):totable())
  end)

  it("gives the same bits in every mode and with fusion off", function()
    local function draws()
      local g = R.generator(99)
      local out = {}
      for _, x in ipairs({ g:normal({ 300, 70 }, 1, 2) * 3 + 1, g:uniform({ 70, 300 }, -1, 1),
        g:integers(0, 1000, { 21000 }), g:exponential({ 200, 105 }), g:permutation(5000),
        g:choice(100, 3000, true, tycho.full(100, 0.01)), g:standard_normal({ 300, 70 }, "f32") }) do
        out[#out + 1] = x:totable()
      end
      return out
    end
    local want = draws()
    for _, opts in ipairs({ { parallel = "single" }, { parallel = "all", overdecompose = 3 }, { fuse = false } }) do
      same(tycho.parallel(opts, draws), want)
    end
  end)

  it("gives the same bits under --cpus 1, 2 and 3", function()
    local code = [[
      local g = tycho.random.generator(2024)
      local out = {}
      local function add(x)
        local t = x:astype("f64"):reshape({-1}):totable()
        for i = 1, #t, 997 do out[#out + 1] = string.format("%a", t[i]) end
        out[#out + 1] = string.format("%a", x:astype("f64"):sum():item())
      end
      add(g:normal({ 500, 300 }, 0, 1) * 2)
      add(g:uniform({ 150000 }, 5, 6))
      add(g:integers(-50, 50, { 300, 500 }))
      add(g:exponential({ 150000 }, 3))
      add(g:permutation(20000))
      add(g:choice(50, 20000, true, { 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02,
        0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02,
        0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02,
        0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02 }))
      tycho.random.seed(8)
      add(tycho.random.normal({ 100000 }))
      print(table.concat(out, ","))
    ]]
    local one = spec_lua(code, { TYCHO_CPUS = "1" })
    local two = spec_lua(code, { TYCHO_CPUS = "2", TYCHO_PARALLEL = "all" })
    local three = spec_lua(code, { TYCHO_CPUS = "3", TYCHO_FUSE = "off" })
    assert.truthy(one:find("0x", 1, true), one)
    assert.are.equal(one, two)
    assert.are.equal(one, three)
  end)
end)
