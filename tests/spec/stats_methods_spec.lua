-- tests/spec/stats_methods_spec.lua — numpy's quantile methods (all
-- thirteen, with axis and keepdims, discrete ones keeping the dtype) and
-- cov's fweights, aweights, ddof and dtype, corrcoef's dtype (issue 18).
-- Expected values: numpy 1.24 on the same inputs (axes here are numpy's
-- + 1), pasted here.
local tycho = tycho or require "tycho"

local N = 0 / 0
local function near(got, want, tol, path) return spec_close(got, want, tol or 1e-13, path) end

local Q = {0, 0.05, 0.1, 0.25, 0.3, 0.5, 0.77, 0.9, 1}
local E = {
  linear = { x1 = {-1.0, -0.5499999999999999, -0.09999999999999987, 1.25, 1.6999999999999997, 2.0, 5.67, 8.200000000000001, 10.0}, x2 = {{3.0, 0.19999999999999996, 6.0}, {3.0, 1.0, 6.0}, {7.0, 6.800000000000001, 9.4}}, x2_pct40_keep = {{3.2, 0.40000000000000013, 4.4, 6.2, 2.6}}, xi = {1.4000000000000001, 3.5, 7.949999999999998}, xi_dtype = "f64" },
  lower = { x1 = {-1.0, -1.0, -1.0, 0.5, 0.5, 2.0, 3.5, 7.0, 10.0}, x2 = {{3.0, 0.0, 6.0}, {3.0, 1.0, 6.0}, {4.0, 5.0, 7.0}}, x2_pct40_keep = {{0.0, -2.0, 2.0, 3.0, 1.0}}, xi = {1, 3, 6}, xi_dtype = "i16" },
  higher = { x1 = {-1.0, 0.5, 0.5, 2.0, 2.0, 2.0, 7.0, 10.0, 10.0}, x2 = {{3.0, 1.0, 6.0}, {3.0, 1.0, 6.0}, {9.0, 8.0, 11.0}}, x2_pct40_keep = {{4.0, 1.0, 5.0, 7.0, 3.0}}, xi = {2, 4, 9}, xi_dtype = "i16" },
  nearest = { x1 = {-1.0, -1.0, 0.5, 2.0, 2.0, 2.0, 7.0, 7.0, 10.0}, x2 = {{3.0, 0.0, 6.0}, {3.0, 1.0, 6.0}, {9.0, 8.0, 11.0}}, x2_pct40_keep = {{4.0, 1.0, 5.0, 7.0, 3.0}}, xi = {1, 4, 9}, xi_dtype = "i16" },
  midpoint = { x1 = {-1.0, -0.25, -0.25, 1.25, 1.25, 2.0, 5.25, 8.5, 10.0}, x2 = {{3.0, 0.5, 6.0}, {3.0, 1.0, 6.0}, {6.5, 6.5, 9.0}}, x2_pct40_keep = {{2.0, -0.5, 3.5, 5.0, 2.0}}, xi = {1.5, 3.5, 7.5}, xi_dtype = "f64" },
  inverted_cdf = { x1 = {-1.0, -1.0, -1.0, 0.5, 2.0, 2.0, 7.0, 10.0, 10.0}, x2 = {{3.0, 0.0, 6.0}, {3.0, 1.0, 6.0}, {9.0, 8.0, 11.0}}, x2_pct40_keep = {{4.0, 1.0, 5.0, 7.0, 3.0}}, xi = {1, 3, 9}, xi_dtype = "i16" },
  averaged_inverted_cdf = { x1 = {-1.0, -1.0, -1.0, 0.5, 2.0, 2.0, 7.0, 10.0, 10.0}, x2 = {{3.0, 0.0, 6.0}, {3.0, 1.0, 6.0}, {9.0, 8.0, 11.0}}, x2_pct40_keep = {{4.0, 1.0, 5.0, 7.0, 3.0}}, xi = {1.0, 3.5, 9.0}, xi_dtype = "f64" },
  closest_observation = { x1 = {-1.0, -1.0, -1.0, 0.5, 0.5, 2.0, 3.5, 7.0, 10.0}, x2 = {{1.0, -2.0, 2.0}, {3.0, 1.0, 6.0}, {9.0, 8.0, 11.0}}, x2_pct40_keep = {{0.0, -2.0, 2.0, 3.0, 1.0}}, xi = {1, 3, 9}, xi_dtype = "i16" },
  interpolated_inverted_cdf = { x1 = {-1.0, -1.0, -1.0, 0.125, 0.6500000000000001, 2.0, 4.865000000000002, 7.8999999999999995, 10.0}, x2 = {{2.0, -1.0, 4.0}, {3.0, 0.5, 6.0}, {6.5, 6.5, 9.0}}, x2_pct40_keep = {{0.8000000000000007, -1.3999999999999995, 2.6000000000000005, 3.8000000000000007, 1.4000000000000004}}, xi = {1.0, 3.0, 7.799999999999999}, xi_dtype = "f64" },
  hazen = { x1 = {-1.0, -1.0, -0.6999999999999997, 0.875, 1.4000000000000001, 2.0, 6.615000000000002, 9.399999999999999, 10.0}, x2 = {{3.0, 0.0, 6.0}, {3.0, 1.0, 6.0}, {9.0, 8.0, 11.0}}, x2_pct40_keep = {{2.8000000000000007, 0.10000000000000053, 4.1000000000000005, 5.800000000000001, 2.4000000000000004}}, xi = {1.1, 3.5, 9.0}, xi_dtype = "f64" },
  weibull = { x1 = {-1.0, -1.0, -1.0, 0.5, 1.0999999999999999, 2.0, 7.48, 10.0, 10.0}, x2 = {{2.6, -0.3999999999999999, 5.2}, {3.0, 1.0, 6.0}, {9.0, 8.0, 11.0}}, x2_pct40_keep = {{2.4000000000000004, -0.19999999999999973, 3.8000000000000003, 5.4, 2.2}}, xi = {1.0, 3.5, 9.0}, xi_dtype = "f64" },
  median_unbiased = { x1 = {-1.0, -1.0, -0.9, 0.7499999999999998, 1.2999999999999998, 2.0, 6.9300000000000015, 9.8, 10.0}, x2 = {{2.8666666666666667, -0.1333333333333333, 5.733333333333333}, {3.0, 1.0, 6.0}, {9.0, 8.0, 11.0}}, x2_pct40_keep = {{2.666666666666668, 8.881784197001252e-16, 4.000000000000001, 5.666666666666668, 2.333333333333334}}, xi = {1.0, 3.5, 9.0}, xi_dtype = "f64" },
  normal_unbiased = { x1 = {-1.0, -1.0, -0.8499999999999999, 0.78125, 1.3250000000000004, 2.0, 6.851250000000002, 9.7, 10.0}, x2 = {{2.9, -0.10000000000000009, 5.8}, {3.0, 1.0, 6.0}, {9.0, 8.0, 11.0}}, x2_pct40_keep = {{2.700000000000001, 0.0250000000000008, 4.025, 5.700000000000001, 2.3500000000000005}}, xi = {1.025, 3.5, 9.0}, xi_dtype = "f64" },
}
local C = {
  fw = {{7.285714285714286, 0.3333333333333333, -1.4285714285714284}, {0.3333333333333333, 7.333333333333333, 1.6666666666666665}, {-1.4285714285714284, 1.6666666666666665, 1.1428571428571428}},
  aw = {{7.468750000000001, 1.6125, -7.425}, {1.6125, 5.1375, -2.1375}, {-7.425, -2.1375, 17.1375}},
  both = {{6.370860927152317, 2.0198675496688745, -1.3443708609271523}, {2.019867549668874, 4.642384105960265, -0.03311258278145698}, {-1.3443708609271523, -0.03311258278145698, 0.5496688741721854}},
  both_ddof0 = {{5.278463648834018, 1.673525377229081, -1.1138545953360768}, {1.6735253772290808, 3.8463648834019204, -0.02743484224965708}, {-1.1138545953360768, -0.02743484224965708, 0.45541838134430723}},
  fw_bias = {{6.244897959183673, 0.2857142857142857, -1.2244897959183672}, {0.2857142857142857, 6.285714285714286, 1.4285714285714284}, {-1.2244897959183672, 1.4285714285714284, 0.9795918367346937}},
  aw_ddof2 = {{12.010050251256283, 2.5929648241206027, -11.93969849246231}, {2.5929648241206027, 8.261306532663317, -3.437185929648241}, {-11.93969849246231, -3.437185929648241, 27.557788944723615}},
  aw_rowvar = {{7.468750000000001, 1.6125, -7.425}, {1.6125, 5.1375, -2.1375}, {-7.425, -2.1375, 17.1375}},
  fw_y = {{7.285714285714286, 2.6904761904761902}, {2.6904761904761902, 2.1547619047619047}},
  f32 = {{7.5, 1.5, -4.0}, {1.5, 9.700000762939453, -1.4000000953674316}, {-4.0, -1.4000000953674316, 10.299999237060547}},
  corr = {{1.0, 0.17586311452816472, -0.45510409919085937}, {0.17586311452816475, 0.9999999999999999, -0.1400630425569189}, {-0.45510409919085937, -0.1400630425569189, 1.0}},
  corr_f32 = {{0.9999999403953552, 0.1758631020784378, -0.45510411262512207}, {0.1758631020784378, 1.0, -0.1400630623102188}, {-0.45510411262512207, -0.1400630623102188, 1.0}},
  cov1d_aw = 6.0421875,
}

local x1 = function() return tycho.array({ 3.5, -1, 7, 2, 2, 10, 0.5 }) end
local x2 = function() return tycho.array({ { 4, 1, 9, 3, 3 }, { 0, -2, 5, 8, 1 }, { 6, 6, 2, 7, 11 } }) end
local xi = function() return tycho.array({ 5, 1, 4, 1, 9, 2, 6, 3 }, "i16") end
local METHODS = { "linear", "lower", "higher", "nearest", "midpoint", "inverted_cdf", "averaged_inverted_cdf",
  "closest_observation", "interpolated_inverted_cdf", "hazen", "weibull", "median_unbiased", "normal_unbiased" }

describe("quantile methods", function()
  it("every numpy method over a list of q, 1-D", function()
    for _, m in ipairs(METHODS) do
      near(tycho.quantile(x1(), Q, { method = m }), E[m].x1, nil, m)
      -- one q at a time gives the same, as a 0-d store
      for i, q in ipairs(Q) do
        local r = tycho.quantile(x1(), q, { method = m })
        assert.are.equal(0, r.ndim)
        near(r:item(), E[m].x1[i], nil, m .. " q=" .. q)
      end
    end
  end)
  it("along an axis, with keepdims, and percentile", function()
    for _, m in ipairs(METHODS) do
      local r = tycho.quantile(x2(), { 0.3, 0.5, 0.9 }, 2, { method = m })
      assert.are.same({ 3, 3 }, r.shape)
      near(r, E[m].x2, nil, m)
      local p = tycho.percentile(x2(), 40, { axis = 1, keepdims = true, method = m })
      assert.are.same({ 1, 5 }, p.shape)
      near(p, E[m].x2_pct40_keep, nil, m .. " percentile")
    end
  end)
  it("discrete methods keep an integer dtype, the others give f64, as numpy's", function()
    for _, m in ipairs(METHODS) do
      local r = tycho.quantile(xi(), { 0.2, 0.5, 0.95 }, { method = m })
      assert.are.equal(E[m].xi_dtype, r.dtype, m)
      near(r, E[m].xi, nil, m)
    end
    assert.are.equal("f32", tycho.quantile(x1():astype("f32"), 0.5, { method = "lower" }).dtype)
    assert.are.equal("f64", tycho.quantile(x1():astype("f32"), 0.5, { method = "hazen" }).dtype)
  end)
  it("a line holding NaN gives NaN under every method", function()
    local x = tycho.array({ { 1, N, 3 }, { 1, 2, 3 } })
    -- numpy: 2 for each method but these two
    local second = { closest_observation = 1.0, interpolated_inverted_cdf = 1.5 }
    for _, m in ipairs(METHODS) do
      local r = tycho.quantile(x, 0.5, 2, { method = m }):totable()
      assert(r[1] ~= r[1], m .. ": expected NaN")
      assert.are.equal(second[m] or 2, r[2], m)
    end
  end)
  it("several axes (numpy's tuple): merged, with keepdims and methods", function()
    local T = tycho.array({{{4.0, 1.0, 9.0, 3.0}, {3.0, 0.0, -2.0, 5.0}}, {{8.0, 1.0, 6.0, 6.0}, {2.0, 7.0, 11.0, -1.0}},
      {{0.5, 2.0, 2.0, 9.0}, {4.0, 4.0, 3.0, 1.0}}})
    near(tycho.median(T, { 1, 3 }), { 3.5, 3.0 })
    local k = tycho.quantile(T, { 0.3, 0.8 }, { 1, 2 }, { keepdims = true })
    assert.are.same({ 2, 1, 1, 4 }, k.shape)
    near(k, {{{{2.5, 1.0, 2.5, 2.0}}}, {{{4.0, 4.0, 9.0, 6.0}}}})
    near(tycho.quantile(T, 0.4, { axis = { 3, 2 }, method = "lower" }), { 1.0, 2.0, 2.0 })
    local all = tycho.percentile(T, 35, { 1, 2, -1 }, { method = "hazen" })
    assert.are.equal(0, all.ndim)
    near(all, 2.0)
  end)
  it("refuse an unknown method, naming the function and numpy's methods", function()
    spec_fails({ "tycho.quantile: method spline is not one of numpy's (linear, lower, higher" },
      tycho.quantile, x1(), 0.5, { method = "spline" })
    spec_fails({ "tycho.percentile: method 3 is not one of numpy's" }, tycho.percentile, x1(), 50, { method = 3 })
    spec_fails({ "tycho.quantile", "interpolation" }, tycho.quantile, x1(), 0.5, { interpolation = "lower" })
  end)
end)

local m3 = function() return tycho.array({ { 1, 4, 2, 8, 5 }, { 3, -1, 0, 2, 7 }, { 2, 2, 9, 1, 4 } }) end
local fw = { 1, 2, 0, 3, 1 }
local aw = { 0.5, 1.5, 2, 1, 0.25 }

describe("cov weights", function()
  it("fweights, aweights and both, with ddof and bias", function()
    near(tycho.cov(m3(), { fweights = fw }), C.fw)
    near(tycho.cov(m3(), { fweights = tycho.array(fw, "i32") }), C.fw)
    near(tycho.cov(m3(), { aweights = tycho.array(aw) }), C.aw)
    near(tycho.cov(m3(), { fweights = fw, aweights = aw }), C.both)
    near(tycho.cov(m3(), { fweights = fw, aweights = aw, ddof = 0 }), C.both_ddof0)
    near(tycho.cov(m3(), { fweights = fw, bias = true }), C.fw_bias)
    near(tycho.cov(m3(), { aweights = aw, ddof = 2 }), C.aw_ddof2)
    near(tycho.cov(m3():t(), { rowvar = false, aweights = aw }), C.aw_rowvar)
    near(tycho.cov(m3():narrow(1, 1, 1):squeeze(1), tycho.array({ 0.5, 1, -2, 3, 4.5 }), { fweights = fw }), C.fw_y)
    near(tycho.cov(tycho.array({ 0.5, 1, -2, 3, 4.5 }), { aweights = aw }), C.cov1d_aw)
  end)
  it("dtype f32 for cov and corrcoef", function()
    local c = tycho.cov(m3(), { dtype = "f32" })
    assert.are.equal("f32", c.dtype)
    near(c, C.f32, 1e-6)
    local r = tycho.corrcoef(m3(), { dtype = "f32" })
    assert.are.equal("f32", r.dtype)
    near(r, C.corr_f32, 1e-6)
    near(tycho.corrcoef(m3()), C.corr)
  end)
  it("refuse bad weights and arguments, naming the function and the argument", function()
    spec_fails({ "tycho.cov: fweights must be integer" }, tycho.cov, m3(), { fweights = { 1, 2.5, 0, 3, 1 } })
    spec_fails({ "tycho.cov: fweights cannot be negative" }, tycho.cov, m3(), { fweights = { 1, -2, 0, 3, 1 } })
    spec_fails({ "tycho.cov: aweights cannot be negative" }, tycho.cov, m3(), { aweights = { 1, -2, 0, 3, 1 } })
    spec_fails({ "tycho.cov: incompatible numbers of samples and aweights (5 observations, 3 weights)" },
      tycho.cov, m3(), { aweights = { 1, 2, 3 } })
    spec_fails({ "tycho.cov: fweights must be 1-D" }, tycho.cov, m3(), { fweights = tycho.ones({ 5, 1 }) })
    spec_fails({ "tycho.cov: aweights must be a store or a list of numbers, got string" },
      tycho.cov, m3(), { aweights = "x" })
    spec_fails({ "tycho.cov: ddof must be integer, got 1.5" }, tycho.cov, m3(), { ddof = 1.5 })
    spec_fails({ "tycho.cov: dtype must be f64 or f32, got i32" }, tycho.cov, m3(), { dtype = "i32" })
    spec_fails({ "tycho.corrcoef", "fweights" }, tycho.corrcoef, m3(), { fweights = fw })
    spec_fails({ "tycho.corrcoef", "bias" }, tycho.corrcoef, m3(), { bias = true })
  end)
end)
