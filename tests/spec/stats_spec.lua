-- tests/spec/stats_spec.lua — statistics (issue 18): std, var, ptp, median,
-- quantile, percentile, average, the nan forms, cov, corrcoef. Expected
-- values were computed once with numpy 1.24 (same inputs; axes and positions
-- here are numpy's + 1) and pasted here.
local tycho = tycho or require "tycho"

local N = 0 / 0
local function near(got, want, tol, path) return spec_close(got, want, tol or 1e-12, path) end

local E = {
  std = 5.851014869234225,
  std_ax2 = {1.118033988749895, 5.7608593109014565},
  var_ax1_ddof1 = {8.0, 12.5, 32.0, 128.0},
  std_T_13 = {2.7271780286589284, 2.7838821814150108, 2.7838821814150108},
  var_T_keep = {{{7.5}, {7.5}, {7.5}}, {{6.25}, {7.5}, {7.5}}},
  var_i = 10.0,
  std32 = 5.851015090942383,
  ptp = 19.0,
  ptp_ax1 = {4.0, 5.0, 8.0, 16.0},
  median = 4.5,
  median_ax2 = {2.5, 9.0},
  median_T1 = {{2.0, 4.0, 6.0, 3.0}, {5.0, 7.0, 4.0, 6.0}, {3.0, 5.0, 2.0, 4.0}},
  median_odd = 2.0,
  median_nan = {N, 2.0},
  q = 3.1,
  q_list_ax2 = {{1.3, 5.6}, {2.5, 9.0}, {3.7, 17.3}},
  pct = {{2.0, 3.25, 5.0, 8.0}, {4.0, 5.75, 9.0, 16.0}},
  q_T3 = {{1.3299999999999996, 5.33, 3.3299999999999996}, {4.109999999999999, 3.3299999999999996, 1.3299999999999996}},
  q_keep = {{{6.0, 5.0, 2.0, 7.0}}, {{2.0, 7.0, 6.0, 3.0}}},
  q_edges = {1.0, 5.0},
  avg = 6.625,
  avg_w = {3.0, 13.2},
  avg_wfull = {4.2, 5.0, 6.2, 7.2},
  avg_scl = {5.0, 5.0, 5.0, 5.0},
  avg_ret = {2.5, 10.75},
  avg_ret_scl = {4.0, 4.0},
  nansum = 17.0,
  nansum_ax2 = {8.0, 0.0, 9.0},
  nanmean_ax2 = {2.6666666666666665, N, 3.0},
  nanmin_ax2 = {1.0, N, -1.0},
  nanmax_ax1 = {2.0, -1.0, 3.0, 8.0},
  nanmin = -1.0,
  nanmax = 8.0,
  nanargmin = 10.0,
  nanargmax_ax1 = {2.0, 2.0, 1.0, 2.0},
  nanstd_ax2 = {1.247219128924647, N, 3.7416573867739413},
  nanvar_ddof = {2.333333333333333, N, 21.0},
  nanstd_all = 2.7938424357067015,
  cov = {{1.6666666666666665, 8.166666666666666}, {8.166666666666666, 44.25}},
  cov_T = {{8.0, 10.0, 16.0, 32.0}, {10.0, 12.5, 20.0, 40.0}, {16.0, 20.0, 32.0, 64.0}, {32.0, 40.0, 64.0, 128.0}},
  cov_bias = {{1.25, 6.125}, {6.125, 33.1875}},
  cov_1d = 2.3333333333333335,
  cov_xy = {{2.3333333333333335, -1.0833333333333333}, {-1.0833333333333333, 0.5833333333333334}},
  cov_ddof0 = {{1.25, 6.125}, {6.125, 33.1875}},
  corr = {{1.0, 0.9509634325746505}, {0.9509634325746505, 1.0}},
  corr_T = {{0.9999999999999999, 0.9999999999999999, 0.9999999999999999, 0.9999999999999999}, {0.9999999999999999, 0.9999999999999999, 0.9999999999999999, 0.9999999999999999}},
  corr_xy = {{1.0, -0.9285714285714284}, {-0.9285714285714284, 1.0}},
}

local function X() return tycho.array({ { 1, 2, 3, 4 }, { 5, 7, 11, 20 } }) end
local function T() return (tycho.arange(24):reshape(2, 3, 4) * 7):mod(10):astype("f64") end
local function Nn() return tycho.array({ { 1, N, 3, 4 }, { N, N, N, N }, { 2, -1, N, 8 } }) end

describe("std and var", function()
  it("over everything, an axis, several axes, with ddof and keepdims", function()
    near(X():std(), E.std)
    near(tycho.std(X(), 2), E.std_ax2)
    near(X():var(1, { ddof = 1 }), E.var_ax1_ddof1)
    near(T():std({ 1, 3 }), E.std_T_13)
    local v = tycho.var(T(), { axis = 3, keepdims = true })
    assert.are.same({ 2, 3, 1 }, v.shape)
    near(v, E.var_T_keep)
  end)
  it("integers give f64, f32 stays f32", function()
    local v = tycho.var(tycho.array({ 1, 2, 3, 4, 10 }))
    assert.are.equal("f64", v.dtype)
    near(v, E.var_i)
    local s = X():astype("f32"):std()
    assert.are.equal("f32", s.dtype)
    near(s, E.std32, 1e-6)
  end)
  it("check their arguments", function()
    spec_fails({ "tycho.std: argument 3 is not accepted" }, tycho.std, X(), 1, 2)
    spec_fails({ "tycho.var: unknown option 'ddf'" }, tycho.var, X(), { ddf = 1 })
    spec_fails({ "tycho.std: axis 3 is out of range" }, tycho.std, X(), 3)
    spec_fails({ "tycho.var: ddof must be a number" }, tycho.var, X(), { ddof = "1" })
    spec_fails({ "tycho.std: axis is given twice" }, tycho.std, X(), 1, { axis = 1 })
    spec_fails({ "tycho.std: the list of axes is empty" }, tycho.std, X(), {}, {})
    -- the reductions under them: an empty list of axes is refused (it crashed with keepdims)
    spec_fails({ "tycho.sum: the list of axes is empty" }, X().sum, X(), {}, { keepdims = true })
  end)
end)

describe("ptp", function()
  it("max - min over everything or an axis", function()
    near(X():ptp(), E.ptp)
    near(tycho.ptp(X(), 1), E.ptp_ax1)
  end)
end)

describe("median, quantile and percentile", function()
  it("median of everything, along an axis, odd and even lengths", function()
    near(tycho.median(X()), E.median)
    near(tycho.median(X(), 2), E.median_ax2)
    near(tycho.median(T(), 1), E.median_T1)
    near(tycho.median(tycho.array({ 3, 1, 2 })), E.median_odd)
    assert.are.equal("f64", tycho.median(tycho.array({ 3, 1, 2 })).dtype)
    assert.are.equal("f32", tycho.median(X():astype("f32")).dtype)
  end)
  it("a line holding NaN gives NaN, as numpy's", function()
    near(tycho.median(tycho.array({ { 1, N, 3 }, { 1, 2, 3 } }), 2), E.median_nan)
  end)
  it("quantile with numpy's linear method: a number or a list of q, an axis, keepdims", function()
    near(tycho.quantile(X(), 0.3), E.q)
    local q = tycho.quantile(X(), { 0.1, 0.5, 0.9 }, 2)
    assert.are.same({ 3, 2 }, q.shape)
    near(q, E.q_list_ax2)
    near(tycho.percentile(X(), { 25, 75 }, { axis = 1 }), E.pct)
    near(tycho.quantile(T(), 0.37, 3), E.q_T3)
    local k = tycho.quantile(T(), 0.5, 2, { keepdims = true })
    assert.are.same({ 2, 1, 4 }, k.shape)
    near(k, E.q_keep)
    near(tycho.quantile(tycho.array({ 5, 1, 3 }), { 0, 1 }), E.q_edges)
  end)
  it("refuse q out of range and unknown methods", function()
    spec_fails({ "tycho.quantile: quantiles must be in the range [0, 1]" }, tycho.quantile, X(), 1.5)
    spec_fails({ "tycho.percentile: quantiles must be in the range [0, 100]" }, tycho.percentile, X(), -1)
    spec_fails({ "tycho.quantile: method nearst is not one of numpy's" }, tycho.quantile, X(), 0.5, { method = "nearst" })
    spec_fails({ "tycho.median: axis 3 is out of range" }, tycho.median, X(), { 1, 3 })
    spec_fails({ "tycho.median: axis 1 is repeated" }, tycho.median, X(), { 1, 1 })
  end)
end)

describe("average", function()
  it("without weights is the mean; with 1-D weights along an axis or full weights", function()
    near(tycho.average(X()), E.avg)
    near(tycho.average(X(), 2, { weights = tycho.array({ 1, 2, 3, 4 }) }), E.avg_w)
    local a, s = tycho.average(X(), 1, { weights = tycho.array({ { 1, 2, 3, 4 }, { 4, 3, 2, 1 } }), returned = true })
    near(a, E.avg_wfull)
    near(s, E.avg_scl)
    a, s = tycho.average(X(), 2, { returned = true })
    near(a, E.avg_ret)
    near(s, E.avg_ret_scl)
  end)
  it("refuse weights that sum to zero or do not fit", function()
    spec_fails({ "tycho.average: weights sum to zero" }, tycho.average, X(), 2,
               { weights = tycho.array({ 1, -1, 1, -1 }) })
    spec_fails({ "tycho.average: axis must be given" }, tycho.average, X(), { weights = tycho.ones({ 4 }) })
    spec_fails({ "tycho.average: the length of weights" }, tycho.average, X(), 1, { weights = tycho.ones({ 4 }) })
  end)
end)

describe("the nan functions", function()
  it("nansum, nanmean, nanmin, nanmax skip NaN; an all-NaN slice is 0 or NaN as numpy's", function()
    near(tycho.nansum(Nn()), E.nansum)
    near(tycho.nansum(Nn(), 2), E.nansum_ax2)
    near(tycho.nanmean(Nn(), 2), E.nanmean_ax2)
    near(tycho.nanmin(Nn(), 2), E.nanmin_ax2)
    near(tycho.nanmax(Nn(), 1), E.nanmax_ax1)
    near(tycho.nanmin(Nn()), E.nanmin)
    near(tycho.nanmax(Nn()), E.nanmax)
    near(tycho.nansum(tycho.array({ 1, 2, 3 })), 6)
  end)
  it("nanargmin and nanargmax give 1-based positions; an all-NaN slice is an error", function()
    near(tycho.nanargmin(Nn()), E.nanargmin)
    local two = tycho.array({ { 1, N, 3, 4 }, { 2, -1, N, 8 } })
    near(tycho.nanargmax(two, 1), E.nanargmax_ax1)
    spec_fails({ "tycho.nanargmin: an all-NaN slice" }, tycho.nanargmin, Nn(), 2)
  end)
  it("nanstd and nanvar with ddof", function()
    near(tycho.nanstd(Nn(), 2), E.nanstd_ax2)
    near(tycho.nanvar(Nn(), 2, { ddof = 1 }), E.nanvar_ddof)
    near(tycho.nanstd(Nn()), E.nanstd_all)
  end)
end)

describe("cov and corrcoef", function()
  it("cov of rows, of columns (rowvar false), biased, of a 1-D and of two variables", function()
    near(tycho.cov(X()), E.cov)
    near(tycho.cov(X(), { rowvar = false }), E.cov_T)
    near(tycho.cov(X(), { bias = true }), E.cov_bias)
    near(tycho.cov(X(), { ddof = 0 }), E.cov_ddof0)
    local c = tycho.cov(tycho.array({ 1, 2, 4 }))
    assert.are.equal(0, c.ndim)
    near(c, E.cov_1d)
    near(tycho.cov(tycho.array({ 1, 2, 4 }), tycho.array({ 2, 1, 0.5 })), E.cov_xy)
  end)
  it("corrcoef, clipped to [-1, 1]", function()
    near(tycho.corrcoef(X()), E.corr)
    near(tycho.corrcoef(X(), { rowvar = false })[{ { 1, 2 } }], E.corr_T)
    near(tycho.corrcoef(tycho.array({ 1, 2, 4 }), tycho.array({ 2, 1, 0.5 })), E.corr_xy)
    spec_fails({ "tycho.corrcoef: unknown option 'bias'" }, tycho.corrcoef, X(), { bias = true })
  end)
end)

describe("statistics results", function()
  it("are the same bits under any mode (built of the core's reductions)", function()
    tycho.seed(3)
    local r = tycho.random({ 300, 500 })
    local function all_stats()
      return { r:std():item(), tycho.var(r, 1):totable(), tycho.median(r, 2):totable(),
               tycho.quantile(r, 0.3):item(), tycho.nanstd(r, 2):totable() }
    end
    local one = tycho.parallel({ mode = "single" }, all_stats)
    local all = tycho.parallel({ mode = "all" }, all_stats)
    spec_same(all, one)
  end)
end)
