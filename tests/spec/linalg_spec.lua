-- tests/spec/linalg_spec.lua — tycho.linalg (issue 18): LAPACK through
-- LAPACKE on OpenBLAS. Expected values were computed once with numpy 1.24
-- (numpy.linalg, same inputs) and pasted here. Factors whose signs LAPACK
-- builds may choose differently (svd's u and vh, eigh's v) are checked by
-- what they reconstruct; q and r by value (Householder's signs are fixed).
local tycho = tycho or require "tycho"
local la = tycho.linalg

local near = spec_close

local E = {
  solve_A_b = {-1.3877787807814457e-17, 0.14285714285714285, 0.4285714285714286},
  solve_N_B = {{0.5000000000000001, 1.0}, {1.2688263138573217e-16, 0.0}, {1.2499999999999998, 1.5}},
  hilbert_x = {0.9999999999998319, 1.0000000000041545, 0.9999999999745927, 1.0000000000611868, 0.999999999936465, 1.0000000000238192},
  inv_N = {{0.4166666666666667, 0.16666666666666663, -0.08333333333333331}, {-0.16666666666666663, 0.33333333333333326, -0.16666666666666663}, {0.04166666666666666, -0.08333333333333331, 0.29166666666666663}},
  inv_S = {{{0.3, 0.0, -0.1}, {0.0, 0.2857142857142857, -0.14285714285714282}, {-0.1, -0.14285714285714285, 0.2714285714285714}}, {{0.4166666666666667, 0.16666666666666663, -0.08333333333333331}, {-0.16666666666666663, 0.33333333333333326, -0.16666666666666663}, {0.04166666666666666, -0.08333333333333331, 0.29166666666666663}}},
  det_N = 24.000000000000004,
  det_S = {69.99999999999996, 24.000000000000004},
  slogdet_N = {1.0, 3.1780538303479458},
  chol_A = {{2.0, 0.0, 0.0}, {0.5, 2.179449471770337, 0.0}, {1.0, 1.1470786693528088, 1.9194297398747862}},
  qr_q = {{-0.16903085094570325, 0.8970852271450607}, {-0.50709255283711, 0.27602622373694136}, {-0.8451542547285166, -0.345032779671177}},
  qr_r = {{-5.916079783099616, -7.437357441610946}, {0.0, 0.8280786712108248}},
  qrc_q = {{-0.16903085094570325, 0.8970852271450607, 0.40824829046386274}, {-0.50709255283711, 0.27602622373694136, -0.8164965809277261}, {-0.8451542547285166, -0.345032779671177, 0.40824829046386313}},
  qrc_r = {{-5.916079783099616, -7.437357441610946}, {0.0, 0.8280786712108248}, {0.0, 0.0}},
  qr_rr = {{-4.123105625617661, -5.335783750799326, -6.5484618759809905}, {0.0, -0.7276068751089995, -1.455213750217998}},
  svd_s = {9.525518091565107, 0.514300580658644},
  eigh_w = {2.194397167422409, 3.3867701566075485, 9.418832675970037},
  eigh_wU = {-98.00499987500626, 102.00499987500623},
  eigh_wL = {-0.2360679774997897, 4.23606797749979},
  ls_x = {3.4999999999999996, 1.4000000000000004},
  ls_res = {4.199999999999999},
  ls_rank = 2.0,
  ls_s = {5.779378813233887, 0.773809106397227},
  lsu_x = {-0.055555555555556, 0.11111111111111112, 0.27777777777777807},
  lsu_s = {9.508032000695724, 0.7728696356734843},
  lsu_rank = 2.0,
  lsd_x = {{0.19999999999999996, 0.24285714285714283}, {0.39999999999999997, 0.48571428571428577}},
  lsd_rank = 1.0,
  pinv = {{-1.3333333333333337, -0.3333333333333329, 0.6666666666666666}, {1.083333333333334, 0.33333333333333304, -0.4166666666666667}},
  pinv_sing = {{0.039999999999999994, 0.07999999999999999}, {0.07999999999999999, 0.15999999999999998}},
  rank = {1.0, 4.0, 1.0, 1.0},
  vnorm = {5.0990195135927845, 8.0, 5.0990195135927845, 4.0, 0.0, 3.0, 4.514357435474001, 22.392304845413257},
  mnorm = {6.0, 6.0, 9.47899475747348, 6.0, 3.0, 5.166582419506819, 2.093055491554155, 6.0, 3.0},
  norm_ax = {{7.3484692283495345, 2.449489742783178, 9.273618495495704}, {17.146428199482248, 25.099800796022265, 33.075670817082454}},
  norm_ax1_1 = {{9.0, 8.0, 9.0, 10.0}, {33.0, 36.0, 39.0, 42.0}},
  norm_ax13_2 = {18.425997142342247, 25.12844979855732, 34.31551038253919},
  norm_ax31_inf = {12.0, 16.0, 24.0},
  norm_keep_shape = {2.0, 1.0, 1.0},
  norm_keep = {{{12.083045973594572}}, {{44.9221548904324}}},
  solve32 = {-1.3877787807814457e-17, 0.1428571492433548, 0.4285714328289032},
  inv32 = {{0.30000001192092896, 0.0, -0.10000000149011612}, {0.0, 0.2857142984867096, -0.1428571492433548}, {-0.10000000149011612, -0.1428571492433548, 0.27142858505249023}},
  svd32 = {9.418832778930664, 3.386770248413086, 2.194397211074829},
}

local function A() return tycho.array({ { 4, 1, 2 }, { 1, 5, 3 }, { 2, 3, 6 } }) end -- SPD
local function N() return tycho.array({ { 2, -1, 0 }, { 1, 3, 2 }, { 0, 1, 4 } }) end
local function M32() return tycho.array({ { 1, 2 }, { 3, 4 }, { 5, 6 } }) end
local function S() return tycho.stack({ A(), N() }) end
local function hilbert(n)
  local t = {}
  for i = 1, n do
    t[i] = {}
    for j = 1, n do t[i][j] = 1 / (i + j - 1) end
  end
  return tycho.array(t)
end

describe("linalg.solve and inv", function()
  it("solve a system for a vector and for a matrix of right-hand sides", function()
    local x = la.solve(A(), tycho.array({ 1, 2, 3 }))
    assert.are.same({ 3 }, x.shape)
    near(x, E.solve_A_b)
    near(la.solve(N(), tycho.array({ { 1, 2 }, { 3, 4 }, { 5, 6 } })), E.solve_N_B)
  end)
  it("solve an ill-conditioned (Hilbert 6, cond 1.5e7) system as numpy does", function()
    local h = hilbert(6)
    local x = la.solve(h, h:matmul(tycho.ones({ 6 })))
    near(x, E.hilbert_x, 1e-8)
  end)
  it("inv a matrix and a stack of matrices (the batch dims lead)", function()
    near(la.inv(N()), E.inv_N)
    local i = la.inv(S())
    assert.are.same({ 2, 3, 3 }, i.shape)
    near(i, E.inv_S)
  end)
  it("solve a stack with one right-hand side broadcast over it", function()
    local x = la.solve(S(), tycho.array({ { { 1 }, { 2 }, { 3 } } })) -- (1, 3, 1)
    assert.are.same({ 2, 3, 1 }, x.shape)
    near(x[1]:totable(), { { E.solve_A_b[1] }, { E.solve_A_b[2] }, { E.solve_A_b[3] } })
    -- b.ndim == a.ndim - 1: a stack of vectors (numpy's rule)
    local xv = la.solve(S(), tycho.array({ { 1, 2, 3 }, { 1, 2, 3 } }))
    assert.are.same({ 2, 3 }, xv.shape)
    near(xv[1]:totable(), E.solve_A_b)
  end)
  it("raise on a singular matrix, naming the function, the condition and the matrix", function()
    spec_fails({ "tycho.linalg.solve: matrix is singular (U(2,2) is exactly zero)" }, la.solve,
               tycho.array({ { 1, 2 }, { 2, 4 } }), tycho.array({ 1, 2 }))
    spec_fails({ "tycho.linalg.inv: matrix is singular" }, la.inv, tycho.zeros({ 3, 3 }))
    local st = tycho.stack({ tycho.eye(2), tycho.zeros({ 2, 2 }) })
    spec_fails({ "tycho.linalg.inv: matrix 2 of the stack is singular (U(1,1) is exactly zero)" }, la.inv, st)
  end)
  it("refuse non-square and misaligned operands", function()
    spec_fails({ "tycho.linalg.inv:", "must be square", "(2, 3)" }, la.inv, tycho.zeros({ 2, 3 }))
    spec_fails({ "tycho.linalg.solve:", "do not align" }, la.solve, A(), tycho.ones({ 4 }))
    spec_fails({ "tycho.linalg.inv:", "at least 2 dimensions" }, la.inv, tycho.ones({ 3 }))
    spec_fails({ "tycho.linalg.solve: b must be a store" }, la.solve, A(), 3)
    spec_fails({ "tycho.linalg.inv: argument 2 is not accepted" }, la.inv, A(), 2)
  end)
  it("promote integers to f64 and keep f32 (LAPACK's s routines)", function()
    assert.are.equal("f64", la.inv(tycho.eye(3, "i32")).dtype)
    local a32 = A():astype("f32")
    local x = la.solve(a32, tycho.array({ 1, 2, 3 }):astype("f32"))
    assert.are.equal("f32", x.dtype)
    near(x, E.solve32, 1e-6)
    near(la.inv(a32), E.inv32, 1e-6)
    assert.are.equal("f64", la.solve(a32, tycho.array({ 1, 2, 3 })).dtype) -- f32 with f64: f64
  end)
  it("take 1x1 and 0x0 matrices", function()
    near(la.inv(tycho.array({ { 4 } })), { { 0.25 } })
    assert.are.same({ 0, 0 }, la.inv(tycho.zeros({ 0, 0 })).shape)
    near(la.det(tycho.zeros({ 0, 0 })), 1)
  end)
end)

describe("linalg.det and slogdet", function()
  it("match numpy's (computed through the LU's log, as numpy)", function()
    near(la.det(N()), E.det_N)
    near(la.det(S()), E.det_S)
    local s, l = la.slogdet(N())
    near(s, E.slogdet_N[1])
    near(l, E.slogdet_N[2])
    near(la.det(tycho.array({ { 0, 1 }, { 1, 0 } })), -1)
  end)
  it("a singular matrix has det 0 and slogdet (0, -inf), not an error", function()
    near(la.det(tycho.array({ { 1, 2 }, { 2, 4 } })), 0)
    local s, l = la.slogdet(tycho.zeros({ 2, 2 }))
    near(s, 0)
    near(l, -math.huge)
  end)
end)

describe("linalg.cholesky", function()
  it("gives numpy's lower factor, upper triangle zero", function()
    near(la.cholesky(A()), E.chol_A)
    local l = la.cholesky(tycho.stack({ A(), A() * 4 }))
    near(l[2], { { 4, 0, 0 }, { 1, 2 * E.chol_A[2][2], 0 }, { 2, 2 * E.chol_A[3][2], 2 * E.chol_A[3][3] } })
  end)
  it("raise on a matrix that is not positive definite", function()
    spec_fails({ "tycho.linalg.cholesky: matrix is not positive definite (its leading minor of order 2 is not)" },
               la.cholesky, tycho.array({ { 1, 2 }, { 2, 1 } }))
    spec_fails({ "tycho.linalg.cholesky: matrix 2 of the stack is not positive definite" }, la.cholesky,
               tycho.stack({ A(), -A() }))
  end)
end)

describe("linalg.qr", function()
  it("reduced (default), complete and r modes as numpy's", function()
    local q, r = la.qr(M32())
    near(q, E.qr_q)
    near(r, E.qr_r)
    q, r = la.qr(M32(), "complete")
    near(q, E.qrc_q)
    near(r, E.qrc_r)
    local r2 = la.qr(tycho.array({ { 1, 2, 3 }, { 4, 5, 6 } }), { mode = "r" })
    near(r2, E.qr_rr)
    near(q:matmul(r), M32():totable())
  end)
  it("refuse an unknown mode and a mode given twice", function()
    spec_fails({ "tycho.linalg.qr: mode must be" }, la.qr, M32(), "full")
    spec_fails({ "tycho.linalg.qr: mode is given twice" }, la.qr, M32(), "r", { mode = "r" })
  end)
end)

describe("linalg.svd", function()
  it("singular values as numpy's; u s vh reconstructs a", function()
    near(la.svd(M32(), { compute_uv = false }), E.svd_s)
    local u, s, vh = la.svd(M32())
    assert.are.same({ 3, 3 }, u.shape)
    assert.are.same({ 2, 2 }, vh.shape)
    near(s, E.svd_s)
    u, s, vh = la.svd(M32(), false)
    assert.are.same({ 3, 2 }, u.shape)
    near((u * s):matmul(vh), M32():totable())
    near(u:t():matmul(u), { { 1, 0 }, { 0, 1 } })
    near(la.svd(A():astype("f32"), { compute_uv = false }), E.svd32, 1e-6)
  end)
  it("batched over a stack", function()
    local s = la.svd(tycho.stack({ M32(), M32() * 2 }), { compute_uv = false })
    near(s, { E.svd_s, { 2 * E.svd_s[1], 2 * E.svd_s[2] } })
  end)
end)

describe("linalg.eigh and eigvalsh", function()
  it("ascending eigenvalues as numpy's; a v = v w", function()
    local w, v = la.eigh(A())
    near(w, E.eigh_w)
    near(A():matmul(v), (v * w):totable())
    near(la.eigvalsh(A()), E.eigh_w)
  end)
  it("read the lower (default) or upper triangle", function()
    local m = tycho.array({ { 1, 100 }, { 2, 3 } })
    near(la.eigvalsh(m), E.eigh_wL)
    near(la.eigvalsh(m, "U"), E.eigh_wU)
    near(la.eigh(m, { UPLO = "U" }), E.eigh_wU)
    spec_fails({ "tycho.linalg.eigh: UPLO must be" }, la.eigh, m, "X")
  end)
end)

describe("linalg.lstsq", function()
  it("an overdetermined system: x, residuals, rank, s as numpy's (rcond=None)", function()
    local x, res, rank, s = la.lstsq(tycho.array({ { 1, 1 }, { 1, 2 }, { 1, 3 }, { 1, 4 } }),
                                     tycho.array({ 6, 5, 7, 10 }))
    near(x, E.ls_x)
    near(res, E.ls_res)
    assert.are.equal(2, rank)
    assert.are.equal("integer", math.type(rank))
    near(s, E.ls_s)
  end)
  it("underdetermined and rank-deficient: no residuals, numpy's minimum-norm x", function()
    local x, res, rank, s = la.lstsq(tycho.array({ { 1, 2, 3 }, { 4, 5, 6 } }), tycho.array({ 1, 2 }))
    near(x, E.lsu_x)
    assert.are.same({ 0 }, res.shape)
    assert.are.equal(2, rank)
    near(s, E.lsu_s)
    x, res, rank = la.lstsq(tycho.array({ { 1, 2 }, { 2, 4 }, { 3, 6 } }), tycho.array({ { 1, 0 }, { 2, 1 }, { 3, 5 } }))
    near(x, E.lsd_x)
    assert.are.equal(1, rank)
    assert.are.same({ 0 }, res.shape)
  end)
  it("refuse a stack and a bad rcond", function()
    spec_fails({ "tycho.linalg.lstsq: a must be 2-D" }, la.lstsq, S(), tycho.ones({ 2, 3 }))
    spec_fails({ "tycho.linalg.lstsq: rcond must be a number" }, la.lstsq, N(), tycho.ones({ 3 }), "x")
  end)
end)

describe("linalg.pinv and matrix_rank", function()
  it("pinv as numpy's, also of a singular matrix", function()
    near(la.pinv(M32()), E.pinv)
    near(la.pinv(tycho.array({ { 1, 2 }, { 2, 4 } })), E.pinv_sing)
  end)
  it("matrix_rank with numpy's default tolerance and a given one", function()
    near(la.matrix_rank(tycho.array({ { 1, 2 }, { 2, 4 } })), E.rank[1])
    near(la.matrix_rank(tycho.eye(4)), E.rank[2])
    near(la.matrix_rank(tycho.array({ { 1, 0 }, { 0, 1e-20 } })), E.rank[3])
    near(la.matrix_rank(tycho.array({ { 1, 0 }, { 0, 1e-3 } }), 1e-2), E.rank[4])
    assert.are.equal("i64", la.matrix_rank(tycho.eye(4)).dtype)
    assert.are.equal(1, la.matrix_rank(tycho.array({ 0, 3 })))
    assert.are.equal(0, la.matrix_rank(tycho.zeros({ 3 })))
  end)
end)

describe("linalg.norm", function()
  local v = function() return tycho.array({ 3, -4, 0, 1 }) end
  it("vector orders nil, 1, 2, inf, -inf, 0, p", function()
    local got = {}
    for i, o in ipairs({ false, 1, 2, math.huge, -math.huge, 0, 3, 0.5 }) do
      got[i] = la.norm(v(), o or nil):item()
    end
    near(got, E.vnorm)
  end)
  it("matrix orders fro, nuc, 1, -1, 2, -2, inf, -inf", function()
    local got = {}
    for i, o in ipairs({ false, "fro", "nuc", 1, -1, 2, -2, math.huge, -math.huge }) do
      got[i] = la.norm(N(), o or nil):item()
    end
    near(got, E.mnorm)
  end)
  it("along an axis, a pair of axes, with keepdims", function()
    local t = tycho.arange(24):reshape(2, 3, 4) - 5
    near(la.norm(t, nil, 3), E.norm_ax)
    near(la.norm(t, 1, { axis = 2 }), E.norm_ax1_1)
    near(la.norm(t, 2, { 1, 3 }), E.norm_ax13_2)
    near(la.norm(t, math.huge, { 3, 1 }), E.norm_ax31_inf)
    local k = la.norm(t, { axis = { 2, 3 }, keepdims = true })
    assert.are.same({ 2, 1, 1 }, k.shape)
    near(k, E.norm_keep)
    assert.are.same({ 1, 1 }, la.norm(N(), nil, nil, true).shape)
  end)
  it("refuse bad orders and axes", function()
    spec_fails({ "tycho.linalg.norm: ord must be" }, la.norm, v(), "x")
    spec_fails({ "invalid norm order \"fro\" for vectors" }, la.norm, v(), "fro")
    spec_fails({ "tycho.linalg.norm: improper number of dimensions" }, la.norm, tycho.ones({ 2, 2, 2 }), 1)
    spec_fails({ "tycho.linalg.norm: axis 4 is out of range" }, la.norm, N(), nil, 4)
    spec_fails({ "tycho.linalg.norm: unknown option" }, la.norm, N(), { ordr = 1 })
  end)
end)

describe("linalg with NaN", function()
  it("inv and det of a matrix holding NaN give NaN (LAPACKE's NaN check is off), as numpy's", function()
    local a = tycho.array({ { 0 / 0, 1 }, { 1, 2 } })
    local d = la.det(a):item()
    assert.is_true(d ~= d)
    local i = la.inv(a):totable()
    assert.is_true(i[2][2] ~= i[2][2])
  end)
  it("the SVD-based functions raise, as numpy's 'SVD did not converge'", function()
    local a = tycho.array({ { 0 / 0, 1 }, { 1, 2 } })
    spec_fails({ "tycho.linalg.svd: matrix holds NaN or infinity: the SVD did not converge" }, la.svd, a)
    spec_fails({ "tycho.linalg.pinv: matrix holds NaN" }, la.pinv, a)
    spec_fails({ "tycho.linalg.lstsq: matrix or b holds NaN" }, la.lstsq, tycho.eye(2), tycho.array({ 1, 0 / 0 }))
  end)
end)

describe("solve, inv, det and cholesky on a in C order (LAPACK reads a^T)", function()
  -- numpy 1.24: P needs row exchanges (a zero first pivot), is not symmetric
  local EP = {
    solve = {{2.3333333333333335, 2.666666666666667}, {4.666666666666666, 5.333333333333333}, {-2.3333333333333335, -2.666666666666667}, {-2.0, -2.0}},
    solvev = {2.3333333333333335, 4.666666666666667, -2.3333333333333335, -2.0},
    inv = {{-0.45833333333333337, 0.6666666666666667, 0.04166666666666666, 0.08333333333333334}, {-1.2916666666666665, 2.333333333333333, -0.7916666666666666, 0.41666666666666674}, {0.9583333333333334, -1.6666666666666667, 0.45833333333333337, -0.08333333333333337}, {0.875, -1.0, 0.375, -0.25}},
    det = 24.000000000000004,
  }
  local function P() return tycho.array({ { 0, 2, 1, 3 }, { 1, 1, 0, 2 }, { 4, 0, 1, 1 }, { 2, 3, 5, 0 } }) end
  local function PB() return tycho.array({ { 1, 2 }, { 3, 4 }, { 5, 6 }, { 7, 8 } }) end
  it("match numpy on a matrix that needs pivoting, one and two right-hand sides", function()
    near(la.solve(P(), PB()), EP.solve)
    near(la.solve(P(), tycho.array({ 1, 3, 5, 7 })), EP.solvev)
    near(la.inv(P()), EP.inv)
    near(la.det(P()), EP.det)
    local sign, logdet = la.slogdet(P())
    near(sign, 1)
    near(logdet, math.log(24))
  end)
  it("take a transposed view, a stack and a broadcast a alike", function()
    near(la.inv(P():t():copy():t()), EP.inv)
    local st = tycho.stack({ P(), P():t():copy() })
    local x = la.solve(st, tycho.stack({ PB(), PB() }))
    near(x[1], EP.solve)
    near(st[2]:matmul(x[2]), PB():totable())
    near(la.inv(st)[1], EP.inv)
    near(la.det(st), { EP.det, EP.det })
    near(la.solve(P(), tycho.stack({ PB(), PB() })), { EP.solve, EP.solve }) -- a over b's stack
  end)
  it("cholesky reads only the lower triangle (numpy's), the upper is zeroed", function()
    local a = tycho.array({ { 4, 99, 99 }, { 1, 5, 99 }, { 2, 3, 6 } })
    near(la.cholesky(a), E.chol_A)
    near(la.cholesky(tycho.stack({ A(), a })), { E.chol_A, E.chol_A })
  end)
  it("a singular matrix still fails at the call", function()
    spec_fails({ "tycho.linalg.inv: matrix is singular" }, la.inv, tycho.array({ { 1, 2 }, { 2, 4 } }))
    local s3 = tycho.array({ { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } })
    spec_fails({ "tycho.linalg.solve: matrix is singular" }, la.solve, s3, tycho.array({ 1, 2, 3 }))
    near(la.det(tycho.array({ { 1, 2 }, { 2, 4 } })), 0)
    -- no right-hand side: nothing to solve, no error (numpy's)
    assert.are.same({ 2, 0 }, la.solve(tycho.zeros({ 2, 2 }), tycho.zeros({ 2, 0 })).shape)
  end)
end)

describe("linalg on larger matrices", function()
  it("a lone 320 x 320 matrix (on OpenBLAS threads) and its f32 twin solve to a small residual", function()
    tycho.seed(11)
    local a = tycho.random({ 320, 320 }) + tycho.eye(320) * 8
    local b = tycho.random({ 320 })
    local x = la.solve(a, b)
    assert.is_true(tycho.abs(a:matmul(x) - b):max():item() < 1e-12)
    local x32 = la.solve(a:astype("f32"), b:astype("f32"))
    assert.are.equal("f32", x32.dtype)
    assert.is_true(tycho.abs(x32:astype("f64") - x):max():item() < 1e-5)
    local l = la.cholesky(a:t():matmul(a))
    assert.is_true(tycho.abs(l:matmul(l:t()) - a:t():matmul(a)):max():item() < 1e-9)
  end)
  it("f32 through every routine (the s functions)", function()
    local a32 = A():astype("f32")
    near(la.cholesky(a32), E.chol_A, 1e-6)
    near(la.eigvalsh(a32), E.eigh_w, 1e-5)
    near(la.det(N():astype("f32")), E.det_N, 1e-5)
    near(la.pinv(M32():astype("f32")), E.pinv, 1e-5)
    local _, r = la.qr(M32():astype("f32"))
    near(r, E.qr_r, 1e-5)
    local x = la.lstsq(tycho.array({ { 1, 1 }, { 1, 2 }, { 1, 3 }, { 1, 4 } }):astype("f32"),
                       tycho.array({ 6, 5, 7, 10 }):astype("f32"))
    near(x, E.ls_x, 1e-5)
    assert.are.equal("f32", x.dtype)
  end)
end)

describe("linalg with any argument", function()
  it("returns or raises a tycho error, never crashes (every function, 14 kinds of values)", function()
    local vals = {
      function() return nil end, function() return 0 end, function() return 2.5 end,
      function() return 0 / 0 end, function() return "x" end, function() return "r" end,
      function() return true end, function() return {} end, function() return { 2, 3 } end,
      function() return tycho.zeros({ 2, 3 }) end, function() return tycho.eye(3) end,
      function() return tycho.zeros({}) end, function() return tycho.zeros({ 0, 2 }, "bool") end,
      function() return tycho.ones({ 2, 2, 2 }, "u8") end,
    }
    local bad = {}
    for name, f in pairs(la) do
      for i = 1, #vals do
        for j = 1, #vals do
          for k = 1, #vals do
            local ok, err = pcall(f, vals[i](), vals[j](), vals[k]())
            if not ok and not tostring(err):find("tycho", 1, true) then
              bad[#bad + 1] = name .. ": " .. tostring(err)
            end
          end
        end
      end
    end
    assert.are.same({}, bad)
    near(la.det(tycho.eye(2)), 1) -- and the runtime still works
  end)
end)

describe("linalg results", function()
  it("are the same bits under any piece count (one LAPACK call per matrix)", function()
    tycho.seed(7)
    local st = tycho.random({ 16, 20, 20 }) + tycho.eye(20) * 20
    local one = tycho.parallel({ mode = "single" }, function() return la.inv(st):totable() end)
    local all = tycho.parallel({ mode = "all" }, function() return la.inv(st):totable() end)
    spec_same(all, one)
  end)
end)
