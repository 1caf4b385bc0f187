-- tests/spec/products_spec.lua — batched matmul, dot, tensordot, outer,
-- inner, vdot, kron and trace against numpy's values (computed offline with
-- numpy 1.24 from the same inputs and pasted here), their errors, and the
-- same bits under any --cpus and --parallel mode.

-- numpy: (np.arange(n) * 7 % 11 - off).reshape(shape).astype(dtype): small
-- integers, so float products are exact and compare with ==.
local function ramp(shape, dt, off)
  local n = 1
  for _, e in ipairs(shape) do n = n * e end
  return (tycho.arange(n) * 7 % 11 - off):reshape(shape):astype(dt)
end

describe("products", function()
  it("matmul broadcasts a 3-D stack against a matrix", function()
    local r = tycho.matmul(ramp({2, 3, 4}, 'i64', 5), ramp({4, 5}, 'i64', 5))
    spec_same(r:totable(), {{{26, -7, 26, -29, -29}, {0, -30, 6, 9, 12}, {7, 24, -14, -30, 20}}, {{-8, -32, 10, 8, 17}, {-1, 22, -10, -31, 25}, {-5, 21, -8, 29, -33}}})
    assert.are.equal("i64", r.dtype)
  end)
  it("matmul broadcasts batch dims of both operands (f64)", function()
    local r = tycho.matmul(ramp({2, 1, 3, 4}, 'f64', 5), ramp({5, 4, 2}, 'f64', 5))
    spec_same(r:totable(), {{{{39.0, 6.0}, {5.0, -25.0}, {-7.0, 10.0}}, {{39.0, -16.0}, {7.0, 10.0}, {-14.0, -30.0}}, {{-16.0, -16.0}, {9.0, 12.0}, {34.0, -37.0}}, {{-16.0, -16.0}, {11.0, 14.0}, {27.0, -44.0}}, {{-16.0, 39.0}, {13.0, 5.0}, {20.0, -7.0}}}, {{{3.0, -21.0}, {-9.0, 14.0}, {-10.0, 16.0}}, {{9.0, 7.0}, {-12.0, -33.0}, {-11.0, 26.0}}, {{4.0, 13.0}, {29.0, -36.0}, {-34.0, 25.0}}, {{10.0, 19.0}, {26.0, -39.0}, {-35.0, 24.0}}, {{16.0, 3.0}, {23.0, -9.0}, {-36.0, -10.0}}}})
    assert.are.equal("f64", r.dtype)
  end)
  it("matmul of a 1-D and a 3-D store drops the vector's dim", function()
    local r = tycho.matmul(ramp({4}, 'f64', 5), ramp({2, 4, 3}, 'f64', 5))
    spec_same(r:totable(), {{42.0, -13.0, -13.0}, {-13.0, -13.0, -13.0}})
    assert.are.equal("f64", r.dtype)
  end)
  it("matmul of a 3-D and a 1-D store", function()
    local r = tycho.matmul(ramp({2, 3, 4}, 'f32', 5), ramp({4}, 'f32', 5))
    spec_same(r:totable(), {{58.0, -19.0, 3.0}, {-19.0, 3.0, 3.0}})
    assert.are.equal("f32", r.dtype)
  end)
  it("matmul promotes i32 with f32 to f64", function()
    local r = tycho.matmul(ramp({2, 2, 3}, 'i32', 5), ramp({2, 3, 2}, 'f32', 5))
    spec_same(r:totable(), {{{19.0, 6.0}, {-30.0, 24.0}}, {{20.0, 20.0}, {21.0, 22.0}}})
    assert.are.equal("f64", r.dtype)
  end)
  it("matmul reads transposed batched operands", function()
    local r = tycho.matmul(ramp({3, 4, 2}, 'f64', 5):transpose(2, 3), ramp({3, 4, 5}, 'f64', 5))
    spec_same(r:totable(), {{{34.0, -35.0, 28.0, -19.0, -22.0}, {-22.0, 39.0, -10.0, -4.0, 2.0}}, {{-35.0, 34.0, 26.0, -37.0, 32.0}, {-10.0, -9.0, 3.0, -7.0, -6.0}}, {{37.0, 2.0, -11.0, -13.0, 7.0}, {-22.0, -4.0, -8.0, -1.0, -5.0}}})
    assert.are.equal("f64", r.dtype)
  end)
  it("matmul of a transposed stack of i32", function()
    local r = tycho.matmul(ramp({2, 3, 4}, 'i32', 5), ramp({2, 5, 4}, 'i32', 5):transpose(2, 3))
    spec_same(r:totable(), {{{58, -19, 3, -19, 3}, {-19, 26, -17, 28, -15}, {3, -17, 51, -24, 44}}, {{-15, -12, -9, 16, -3}, {-21, 38, -24, -9, -27}, {39, -22, 38, -12, 37}}})
    assert.are.equal("i32", r.dtype)
  end)
  it("matmul of bool stacks is logical", function()
    local r = tycho.matmul(ramp({2, 2, 3}, 'i64', 5):gt(0), ramp({3, 2}, 'i64', 5):gt(0))
    spec_same(r:totable(), {{{false, true}, {false, true}}, {{false, true}, {false, true}}})
    assert.are.equal("bool", r.dtype)
  end)
  -- a long k is split into chunks whose partial products are summed
  -- (ty__matmul_ksplit: 4 chunks of 75001 and a remainder of 3 here); every
  -- partial sum is an integer below 2^24, so f32 is exact too
  it("X^T z and z X over 300007 rows (k split into chunks) give numpy's values", function()
    local want = {26, 299996, 900035, -1500044, -300032, 1200038, -300032, -1500044, 900035,
                  299996, 26, 26, 299996, 900035, -1500044, -300032}
    for _, dt in ipairs({'f64', 'f32'}) do
      local X, z = ramp({300007, 16}, dt, 5), ramp({300007}, dt, 5)
      local a, b = X:t():dot(z), z:dot(X)
      spec_same(a:totable(), want)
      spec_same(b:totable(), want)
      assert.are.equal(dt, a.dtype)
      local y = X:dot(ramp({16}, dt, 5))
      spec_same({y[{1}]:item(), y[{2}]:item(), y[{3}]:item(), y[{-1}]:item(), y:sum():item()},
                {169, 17, -58, -78, 50})
    end
  end)
  -- X^T z with X's columns <= TY__THIN_K: ty__thin_acc over X's rows, in row
  -- order within each chunk (kernels_linalg.c, thin), as z X: the same bits
  -- as z X, and under any number of processors
  it("X^T z of fractions over 300007 rows: numpy's values, the bits of z X, the same bits on 1 and 3 cpus", function()
    local code = [[
      local n, f = 300007, 16
      local u = (tycho.arange(n * f) + 0.5) * 0.6180339887498949
      local X = (u - tycho.floor(u)):reshape(n, f)
      local v = (tycho.arange(n) + 0.5) * 0.7548776662466927
      local z = v - tycho.floor(v)
      local out = {}
      for _, dt in ipairs({ "f64", "f32" }) do
        local Xd, zd = X:astype(dt), z:astype(dt)
        local a, b = Xd:t():dot(zd), zd:dot(Xd)
        for i = 1, f do
          out[#out + 1] = string.format("%a", a[i])
          assert(string.format("%a", b[i]) == out[#out], "z X differs at " .. i)
        end
      end
      print(table.concat(out, " "))
    ]]
    local lines = {}
    for _, cpus in ipairs({ 1, 3 }) do
      local out, rc = spec_lua(code, { TYCHO_CPUS = tostring(cpus) })
      assert.are.equal(0, rc, out)
      lines[#lines + 1] = out:match("^[^\n]*")
    end
    assert.are.equal(lines[1], lines[2])
    local v = {}
    for w in lines[1]:gmatch("%S+") do v[#v + 1] = tonumber(w) end
    -- numpy: X.T.dot(z)[0], [15] in f64, and with X, z cast to f32
    local want = { 75001.22864398066, 74995.72299191852, 75001.195, 74995.67 }
    local got = { v[1], v[16], v[17], v[32] }
    for i = 1, 4 do
      local tol = i <= 2 and 1e-12 or 1e-5
      assert.is_true(math.abs(got[i] - want[i]) <= tol * want[i], i .. ": " .. got[i])
    end
  end)
  it("matmul of u8 stacks wraps", function()
    local r = tycho.matmul(ramp({2, 2, 5}, 'u8', 0), ramp({2, 5, 2}, 'u8', 0))
    spec_same(r:totable(), {{{135, 174}, {74, 183}}, {{142, 79}, {143, 106}}})
    assert.are.equal("u8", r.dtype)
  end)
  it("matmul of 4-D stacks", function()
    local r = tycho.matmul(ramp({2, 2, 2, 3}, 'f64', 5), ramp({2, 1, 3, 2}, 'f64', 5))
    spec_same(r:totable(), {{{{19.0, 6.0}, {-30.0, 24.0}}, {{-24.0, 20.0}, {-18.0, 16.0}}}, {{{11.0, -31.0}, {12.0, -29.0}}, {{13.0, -27.0}, {14.0, -25.0}}}})
    assert.are.equal("f64", r.dtype)
  end)
  it("dot of N-D stores sums a's last and b's second-to-last axis", function()
    local r = tycho.dot(ramp({2, 3, 4}, 'i64', 5), ramp({3, 4, 2}, 'i64', 5))
    spec_same(r:totable(), {{{{39, 6}, {39, -16}, {-16, -16}}, {{5, -25}, {7, 10}, {9, 12}}, {{-7, 10}, {-14, -30}, {34, -37}}}, {{{3, -21}, {9, 7}, {4, 13}}, {{-9, 14}, {-12, -33}, {29, -36}}, {{-10, 16}, {-11, 26}, {-34, 25}}}})
    assert.are.equal("i64", r.dtype)
  end)
  it("dot of a 3-D store and a vector", function()
    local r = tycho.dot(ramp({2, 3, 4}, 'f64', 5), ramp({4}, 'f64', 5))
    spec_same(r:totable(), {{58.0, -19.0, 3.0}, {-19.0, 3.0, 3.0}})
    assert.are.equal("f64", r.dtype)
  end)
  it("dot of a matrix and a 3-D store", function()
    local r = tycho.dot(ramp({2, 3}, 'i32', 5), ramp({2, 3, 2}, 'i32', 5))
    spec_same(r:totable(), {{{19, 6}, {-26, 16}}, {{-30, 24}, {19, 18}}})
    assert.are.equal("i32", r.dtype)
  end)
  it("dot of two vectors", function()
    local r = tycho.dot(ramp({5}, 'f64', 5), ramp({5}, 'f64', 5))
    spec_same(r:totable(), 59.0)
    assert.are.equal("f64", r.dtype)
  end)
  it("tensordot sums the last two axes of a with the first two of b by default", function()
    local r = tycho.tensordot(ramp({2, 3, 4}, 'f64', 5), ramp({3, 4, 2}, 'f64', 5))
    spec_same(r:totable(), {{80.0, -21.0}, {-43.0, -29.0}})
    assert.are.equal("f64", r.dtype)
  end)
  it("tensordot with a pair of axis lists", function()
    local r = tycho.tensordot(ramp({2, 3, 4}, 'i64', 5), ramp({4, 3, 5}, 'i64', 5), {{2, 3}, {2, 1}})
    spec_same(r:totable(), {{69, 12, 54, -36, -27}, {-43, 15, -26, -1, 46}})
    assert.are.equal("i64", r.dtype)
  end)
  it("tensordot with a pair of axes", function()
    local r = tycho.tensordot(ramp({2, 3}, 'f64', 5), ramp({3, 4}, 'f64', 5), {2, 1})
    spec_same(r:totable(), {{35.0, -22.0, 20.0, -15.0}, {-12.0, -2.0, -3.0, 40.0}})
    assert.are.equal("f64", r.dtype)
  end)
  it("tensordot with axes = 0 is the outer product", function()
    local r = tycho.tensordot(ramp({2}, 'f64', 5), ramp({3}, 'f64', 5), 0)
    spec_same(r:totable(), {{25.0, -10.0, 10.0}, {-10.0, 4.0, -4.0}})
    assert.are.equal("f64", r.dtype)
  end)
  it("tensordot with negative axes", function()
    local r = tycho.tensordot(ramp({2, 3, 4}, 'f64', 5), ramp({4, 2}, 'f64', 5), {{-1}, {1}})
    spec_same(r:totable(), {{{39.0, 6.0}, {5.0, -25.0}, {-7.0, 10.0}}, {{3.0, -21.0}, {-9.0, 14.0}, {-10.0, 16.0}}})
    assert.are.equal("f64", r.dtype)
  end)
  it("outer flattens its operands", function()
    local r = tycho.outer(ramp({2, 2}, 'i64', 5), ramp({3}, 'i64', 5))
    spec_same(r:totable(), {{25, -10, 10}, {-10, 4, -4}, {10, -4, 4}, {-25, 10, -10}})
    assert.are.equal("i64", r.dtype)
  end)
  it("outer of bools is logical and", function()
    local r = tycho.outer(ramp({3}, 'i64', 5):gt(0), ramp({2}, 'i64', 5):gt(0))
    spec_same(r:totable(), {{false, false}, {false, true}, {false, false}})
    assert.are.equal("bool", r.dtype)
  end)
  it("inner of N-D stores sums the last axes", function()
    local r = tycho.inner(ramp({2, 3, 4}, 'f64', 5), ramp({2, 4}, 'f64', 5))
    spec_same(r:totable(), {{{58.0, -19.0}, {-19.0, 26.0}, {3.0, -17.0}}, {{-19.0, 28.0}, {3.0, -15.0}, {3.0, -14.0}}})
    assert.are.equal("f64", r.dtype)
  end)
  it("inner of vectors", function()
    local r = tycho.inner(ramp({4}, 'i32', 5), ramp({4}, 'i32', 5))
    spec_same(r:totable(), 58)
    assert.are.equal("i32", r.dtype)
  end)
  it("vdot flattens both operands", function()
    local r = tycho.vdot(ramp({2, 3}, 'f64', 5), ramp({3, 2}, 'f64', 5))
    spec_same(r:totable(), 68.0)
    assert.are.equal("f64", r.dtype)
  end)
  it("vdot of a transposed view", function()
    local r = tycho.vdot(ramp({2, 3}, 'i64', 5):transpose(), ramp({3, 2}, 'i64', 5))
    spec_same(r:totable(), 43)
    assert.are.equal("i64", r.dtype)
  end)
  it("kron of matrices", function()
    local r = tycho.kron(ramp({2, 3}, 'i64', 5), ramp({2, 2}, 'i64', 5))
    spec_same(r:totable(), {{25, -10, -10, 4, 10, -4}, {10, -25, -4, 10, 4, -10}, {-25, 10, -5, 2, 15, -6}, {-10, 25, -2, 5, 6, -15}})
    assert.are.equal("i64", r.dtype)
  end)
  it("kron pads the operand of fewer dims", function()
    local r = tycho.kron(ramp({3}, 'f64', 5), ramp({2, 2}, 'f64', 5))
    spec_same(r:totable(), {{25.0, -10.0, -10.0, 4.0, 10.0, -4.0}, {10.0, -25.0, -4.0, 10.0, 4.0, -10.0}})
    assert.are.equal("f64", r.dtype)
  end)
  it("kron of 3-D stores", function()
    local r = tycho.kron(ramp({2, 1, 2}, 'f32', 5), ramp({1, 2, 2}, 'f32', 5))
    spec_same(r:totable(), {{{25.0, -10.0, -10.0, 4.0}, {10.0, -25.0, -4.0, 10.0}}, {{10.0, -4.0, -25.0, 10.0}, {4.0, -10.0, -10.0, 25.0}}})
    assert.are.equal("f32", r.dtype)
  end)
  it("trace of a matrix", function()
    local r = tycho.trace(ramp({3, 3}, 'i64', 5))
    spec_same(r:totable(), -8)
    assert.are.equal("i64", r.dtype)
  end)
  it("trace above the diagonal", function()
    local r = tycho.trace(ramp({3, 4}, 'f64', 5), 1)
    spec_same(r:totable(), 1.0)
    assert.are.equal("f64", r.dtype)
  end)
  it("trace below the diagonal", function()
    local r = tycho.trace(ramp({4, 3}, 'f64', 5), -2)
    spec_same(r:totable(), 3.0)
    assert.are.equal("f64", r.dtype)
  end)
  it("trace past the edge is 0", function()
    local r = tycho.trace(ramp({3, 3}, 'f64', 5), 5)
    spec_same(r:totable(), 0.0)
    assert.are.equal("f64", r.dtype)
  end)
  it("trace over chosen axes of a 3-D store", function()
    local r = tycho.trace(ramp({2, 3, 3}, 'i32', 5), 0, 2, 3)
    spec_same(r:totable(), {-8, 5})
    assert.are.equal("i64", r.dtype)
  end)
  it("trace over axes 1 and 3", function()
    local r = ramp({3, 2, 3}, 'f64', 5):trace(1, 1, 3)
    spec_same(r:totable(), {-2.0, -4.0})
    assert.are.equal("f64", r.dtype)
  end)
  it("trace of bools counts", function()
    local r = tycho.trace(ramp({3, 3}, 'i64', 5):gt(0))
    spec_same(r:totable(), 1)
    assert.are.equal("i64", r.dtype)
  end)


  it("kron takes operands of up to 8 dims", function()
    local r = tycho.kron(tycho.ones({1, 1, 1, 1, 1, 1, 1, 2}), tycho.ones({2}))
    spec_same(r.shape, {1, 1, 1, 1, 1, 1, 1, 4})
    spec_fails({"tycho.kron", "operands of 9 dims (at most 8)"}, tycho.kron,
               tycho.ones({1, 1, 1, 1, 1, 1, 1, 1, 2}), tycho.ones({2}))
  end)

  it("matmul of a batch equals the 2-D product of each matrix, to the bit", function()
    tycho.seed(7)
    local a, b = tycho.random({3, 300, 40}), tycho.random({40, 70})
    local c = tycho.matmul(a, b)
    for i = 1, 3 do
      spec_same(c[i]:totable(), tycho.matmul(a[i], b):totable())
    end
  end)

  it("matmul names both shapes when they do not align", function()
    spec_fails({"tycho.matmul", "(2, 3, 4)", "(2, 3, 4)", "do not align (4 != 3)"}, tycho.matmul,
               ramp({2, 3, 4}, "f64", 5), ramp({2, 3, 4}, "f64", 5))
    spec_fails({"tycho.matmul", "batch dims", "(2, 3, 4)", "(3, 4, 2)", "do not broadcast"},
               tycho.matmul, ramp({2, 3, 4}, "f64", 5), ramp({3, 4, 2}, "f64", 5))
    spec_fails({"tycho.matmul", "at least 1-D"}, tycho.matmul, tycho.array(2.0), ramp({2, 2}, "f64", 5))
  end)

  it("tensordot, vdot, trace and dot reject bad axes and shapes", function()
    local a = ramp({2, 3, 4}, "f64", 5)
    spec_fails({"tycho.tensordot", "do not align"}, tycho.tensordot, a, ramp({4, 3}, "f64", 5), {{3}, {2}})
    spec_fails({"tycho.tensordot", "axes_a lists 2 axes and axes_b 1"}, tycho.tensordot, a, a, {{1, 2}, {1}})
    spec_fails({"tycho.tensordot", "out of range"}, tycho.tensordot, a, a, {{4}, {1}})
    spec_fails({"tycho.tensordot", "axes = 4"}, tycho.tensordot, a, a, 4)
    spec_fails({"tycho.tensordot", "summed twice"}, tycho.tensordot, a, a, {{1, 1}, {1, 1}})
    spec_fails({"tycho.vdot", "different sizes"}, tycho.vdot, a, ramp({5}, "f64", 5))
    spec_fails({"tycho.trace", "at least 2 dims"}, tycho.trace, ramp({5}, "f64", 5))
    spec_fails({"tycho.trace", "same axis"}, tycho.trace, a, 0, 2, 2)
    spec_fails({"tycho.trace", "axis1 4 is out of range"}, tycho.trace, a, 0, 4, 1)
    spec_fails({"tycho.dot", "(2, 3, 4)", "(3, 2)", "do not align"}, tycho.dot, a, ramp({3, 2}, "f64", 5))
    spec_fails({"tycho.outer", "accepted"}, tycho.outer, a, a, a)
  end)

  it("gives the same bits under any --cpus and --parallel mode", function()
    local code = [[
      tycho.seed(3)
      local a, b = tycho.random({5, 260, 33}), tycho.random({5, 33, 90})
      local c = tycho.matmul(a, b)
      local d = tycho.matmul(a:astype("f32"), b[1]:astype("f32"))
      local t = tycho.tensordot(a, b, {{1, 3}, {1, 2}})
      for _, x in ipairs({c, d, t}) do
        print(string.format("%.17g %.17g %.17g", x:sum():item(), x:max():item(),
                            x:reshape({-1})[777]))
      end
    ]]
    local ref = spec_lua(code, {TYCHO_CPUS = "1"})
    assert(ref:find("%d%d%d%d%d"), ref)
    for _, env in ipairs({{TYCHO_CPUS = "3", TYCHO_PARALLEL = "all"},
                          {TYCHO_CPUS = "8", TYCHO_PARALLEL = "all", TYCHO_OVERDECOMPOSE = "3"},
                          {TYCHO_CPUS = "3", TYCHO_PARALLEL = "single"}}) do
      assert.are.equal(ref, spec_lua(code, env))
    end
  end)
end)
