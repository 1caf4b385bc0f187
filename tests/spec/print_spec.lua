-- tests/spec/print_spec.lua — tostring(x) / print(x) and the print options
-- (tycho.set_printoptions, numpy's names and defaults). The expected strings
-- were computed once with numpy 1.24's str(array) (repr's value for 0-d
-- stores, "array(1.)" shows "1."), under the same np.set_printoptions, and
-- pasted here; the tests never call python.
local tycho = tycho or require "tycho"

local DEFAULTS = { threshold = 1000, precision = 8, linewidth = 75, edgeitems = 3, suppress = false }

-- The values part of tostring(x): the line naming shape and dtype cut off.
local function values(x)
  local s = tostring(x)
  local at = s:find("\ntycho.store(", 1, true)
  assert(at, "no shape line in: " .. s)
  return s:sub(1, at - 1)
end

local function fails(wants, f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok, "expected an error containing '" .. wants[1] .. "', the call succeeded")
  err = tostring(err)
  for _, w in ipairs(wants) do
    assert(err:find(w, 1, true), "expected '" .. w .. "' in: " .. err)
  end
end

-- {name, store maker, options, numpy's text}
local cases = {
  {"floats of one magnitude", function() return tycho.array({0.5, 100.25, 3, -7.125}) end, {},
   "[  0.5   100.25    3.     -7.125]"},
  {"floats of mixed magnitude go scientific", function() return tycho.array({0.001, 1.5, 123.456, 7}) end, {},
   "[1.00000e-03 1.50000e+00 1.23456e+02 7.00000e+00]"},
  {"tiny and huge", function() return tycho.array({1e-5, 1, 1e5}) end, {},
   "[1.e-05 1.e+00 1.e+05]"},
  {"large values", function() return tycho.array({1e8, 2.5, -3}) end, {},
   "[ 1.0e+08  2.5e+00 -3.0e+00]"},
  {"nan and inf", function() return tycho.array({1.5, 0/0, -1/0, 1/0}) end, {},
   "[ 1.5  nan -inf  inf]"},
  {"f32", function() return tycho.array({0.1, 0.2, 1/3}):astype('f32') end, {},
   "[0.1        0.2        0.33333334]"},
  {"ints", function() return tycho.arange(-5, 6) end, {},
   "[-5 -4 -3 -2 -1  0  1  2  3  4  5]"},
  {"2-D ints", function() return tycho.arange(12):reshape(3, 4) * 37 - 100 end, {},
   "[[-100  -63  -26   11]\n [  48   85  122  159]\n [ 196  233  270  307]]"},
  {"bools", function() return tycho.array({true, false, true}) end, {},
   "[ True False  True]"},
  {"all true", function() return tycho.array({true, true}) end, {},
   "[ True  True]"},
  {"2-D bools", function() return tycho.arange(6):reshape(2, 3):gt(2) end, {},
   "[[False False False]\n [ True  True  True]]"},
  {"2-D floats", function() return tycho.arange(6):reshape(2, 3) / 4 end, {},
   "[[0.   0.25 0.5 ]\n [0.75 1.   1.25]]"},
  {"3-D ints", function() return tycho.arange(24):reshape(2, 3, 4) end, {},
   "[[[ 0  1  2  3]\n  [ 4  5  6  7]\n  [ 8  9 10 11]]\n\n [[12 13 14 15]\n  [16 17 18 19]\n  [20 21 22 23]]]"},
  {"3-D floats", function() return tycho.arange(12):reshape(2, 3, 2) / 10 end, {},
   "[[[0.  0.1]\n  [0.2 0.3]\n  [0.4 0.5]]\n\n [[0.6 0.7]\n  [0.8 0.9]\n  [1.  1.1]]]"},
  {"truncated 1-D", function() return tycho.arange(2000) end, {},
   "[   0    1    2 ... 1997 1998 1999]"},
  {"truncated 2-D", function() return tycho.arange(2000):reshape(40, 50) / 8 end, {},
   "[[0.00000e+00 1.25000e-01 2.50000e-01 ... 5.87500e+00 6.00000e+00\n  6.12500e+00]\n [6.25000e+00 6.37500e+00 6.50000e+00 ... 1.21250e+01 1.22500e+01\n  1.23750e+01]\n [1.25000e+01 1.26250e+01 1.27500e+01 ... 1.83750e+01 1.85000e+01\n  1.86250e+01]\n ...\n [2.31250e+02 2.31375e+02 2.31500e+02 ... 2.37125e+02 2.37250e+02\n  2.37375e+02]\n [2.37500e+02 2.37625e+02 2.37750e+02 ... 2.43375e+02 2.43500e+02\n  2.43625e+02]\n [2.43750e+02 2.43875e+02 2.44000e+02 ... 2.49625e+02 2.49750e+02\n  2.49875e+02]]"},
  {"truncated 3-D", function() return tycho.arange(3000):reshape(10, 15, 20) end, {},
   "[[[   0    1    2 ...   17   18   19]\n  [  20   21   22 ...   37   38   39]\n  [  40   41   42 ...   57   58   59]\n  ...\n  [ 240  241  242 ...  257  258  259]\n  [ 260  261  262 ...  277  278  279]\n  [ 280  281  282 ...  297  298  299]]\n\n [[ 300  301  302 ...  317  318  319]\n  [ 320  321  322 ...  337  338  339]\n  [ 340  341  342 ...  357  358  359]\n  ...\n  [ 540  541  542 ...  557  558  559]\n  [ 560  561  562 ...  577  578  579]\n  [ 580  581  582 ...  597  598  599]]\n\n [[ 600  601  602 ...  617  618  619]\n  [ 620  621  622 ...  637  638  639]\n  [ 640  641  642 ...  657  658  659]\n  ...\n  [ 840  841  842 ...  857  858  859]\n  [ 860  861  862 ...  877  878  879]\n  [ 880  881  882 ...  897  898  899]]\n\n ...\n\n [[2100 2101 2102 ... 2117 2118 2119]\n  [2120 2121 2122 ... 2137 2138 2139]\n  [2140 2141 2142 ... 2157 2158 2159]\n  ...\n  [2340 2341 2342 ... 2357 2358 2359]\n  [2360 2361 2362 ... 2377 2378 2379]\n  [2380 2381 2382 ... 2397 2398 2399]]\n\n [[2400 2401 2402 ... 2417 2418 2419]\n  [2420 2421 2422 ... 2437 2438 2439]\n  [2440 2441 2442 ... 2457 2458 2459]\n  ...\n  [2640 2641 2642 ... 2657 2658 2659]\n  [2660 2661 2662 ... 2677 2678 2679]\n  [2680 2681 2682 ... 2697 2698 2699]]\n\n [[2700 2701 2702 ... 2717 2718 2719]\n  [2720 2721 2722 ... 2737 2738 2739]\n  [2740 2741 2742 ... 2757 2758 2759]\n  ...\n  [2940 2941 2942 ... 2957 2958 2959]\n  [2960 2961 2962 ... 2977 2978 2979]\n  [2980 2981 2982 ... 2997 2998 2999]]]"},
  {"threshold", function() return tycho.arange(12) end, {threshold = 10},
   "[ 0  1  2 ...  9 10 11]"},
  {"threshold and edgeitems", function() return tycho.arange(40):reshape(5, 8) end, {threshold = 10, edgeitems = 1},
   "[[ 0 ...  7]\n ...\n [32 ... 39]]"},
  {"edgeitems", function() return tycho.arange(2000) end, {edgeitems = 5},
   "[   0    1    2    3    4 ... 1995 1996 1997 1998 1999]"},
  {"a higher threshold", function() return tycho.arange(1001) % 10 end, {threshold = 2000},
   "[0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6\n 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3\n 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0\n 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7\n 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4\n 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1\n 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8\n 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5\n 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2\n 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9\n 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6\n 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3\n 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0\n 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7\n 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4\n 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1\n 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8\n 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5\n 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2\n 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9\n 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6\n 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3\n 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0\n 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7\n 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4\n 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1\n 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8\n 9 0]"},
  {"precision 3", function() return tycho.array({math.pi, math.exp(1), 0.5}) end, {precision = 3},
   "[3.142 2.718 0.5  ]"},
  {"precision 0", function() return tycho.array({1.25, 2.5, 3.75}) end, {precision = 0},
   "[1. 2. 4.]"},
  {"precision 12", function() return tycho.array({1/3, 2/3}) end, {precision = 12},
   "[0.333333333333 0.666666666667]"},
  {"precision in scientific", function() return tycho.array({1/3 * 1e-6, 2/3, 5}) end, {precision = 4},
   "[3.3333e-07 6.6667e-01 5.0000e+00]"},
  {"linewidth", function() return tycho.arange(30) end, {linewidth = 40},
   "[ 0  1  2  3  4  5  6  7  8  9 10 11 12\n 13 14 15 16 17 18 19 20 21 22 23 24 25\n 26 27 28 29]"},
  {"linewidth 2-D", function() return tycho.arange(20):reshape(2, 10) / 3 end, {linewidth = 30},
   "[[0.         0.33333333\n  0.66666667 1.\n  1.33333333 1.66666667\n  2.         2.33333333\n  2.66666667 3.        ]\n [3.33333333 3.66666667\n  4.         4.33333333\n  4.66666667 5.\n  5.33333333 5.66666667\n  6.         6.33333333]]"},
  {"default linewidth wraps", function() return tycho.arange(40) / 7 end, {},
   "[0.         0.14285714 0.28571429 0.42857143 0.57142857 0.71428571\n 0.85714286 1.         1.14285714 1.28571429 1.42857143 1.57142857\n 1.71428571 1.85714286 2.         2.14285714 2.28571429 2.42857143\n 2.57142857 2.71428571 2.85714286 3.         3.14285714 3.28571429\n 3.42857143 3.57142857 3.71428571 3.85714286 4.         4.14285714\n 4.28571429 4.42857143 4.57142857 4.71428571 4.85714286 5.\n 5.14285714 5.28571429 5.42857143 5.57142857]"},
  {"suppress", function() return tycho.array({1e-10, 1, 100.5}) end, {suppress = true},
   "[  0.    1.  100.5]"},
  {"suppress keeps large scientific", function() return tycho.array({1e-10, 1e9}) end, {suppress = true},
   "[1.e-10 1.e+09]"},
  {"0-d float", function() return tycho.array({0.5, 0.5}):sum() end, {},
   "1."},
  {"0-d small float", function() return tycho.array({1e-5}):sum() end, {},
   "1.e-05"},
  {"0-d int", function() return tycho.arange(5):sum() end, {},
   "10"},
  {"0-d bool", function() return tycho.array({true, true}):all() end, {},
   "True"},
  {"0-d false", function() return tycho.array({true, false}):all() end, {},
   "False"},
}

describe("printing", function()
  after_each(function() tycho.set_printoptions(DEFAULTS) end)

  for _, c in ipairs(cases) do
    it("matches numpy: " .. c[1], function()
      tycho.set_printoptions(c[3])
      local got = values(c[2]())
      assert(got == c[4], "got:\n" .. got .. "\nwant (numpy):\n" .. c[4])
    end)
  end

  it("ends with a line naming shape and dtype", function()
    assert.are.equal("[ True False]\ntycho.store(shape=(2,), dtype=bool)",
                     tostring(tycho.array({ true, false })))
    assert.are.equal("10\ntycho.store(shape=(), dtype=i64)", tostring(tycho.arange(5):sum()))
  end)

  it("never summarises with threshold = math.huge", function()
    tycho.set_printoptions({ threshold = math.huge })
    local s = values(tycho.arange(5000))
    assert.is_falsy(s:find("...", 1, true))
    assert.is_truthy(s:find(" 2500 ", 1, true))
    assert.are.equal(math.huge, tycho.get_printoptions().threshold)
  end)
end)

describe("set_printoptions / get_printoptions", function()
  after_each(function() tycho.set_printoptions(DEFAULTS) end)

  it("has numpy's defaults", function()
    local o = tycho.get_printoptions()
    for k, v in pairs(DEFAULTS) do assert.are.equal(v, o[k], k) end
    local n = 0
    for _ in pairs(o) do n = n + 1 end
    assert.are.equal(5, n)
  end)

  it("changes only the keys given and returns them in get_printoptions", function()
    tycho.set_printoptions({ precision = 3 })
    tycho.set_printoptions({ linewidth = 100, suppress = true })
    local o = tycho.get_printoptions()
    assert.are.equal(3, o.precision)
    assert.are.equal(100, o.linewidth)
    assert.are.equal(true, o.suppress)
    assert.are.equal(1000, o.threshold)
    assert.are.equal(3, o.edgeitems)
    tycho.set_printoptions()           -- nothing given: nothing changes
    tycho.set_printoptions(o)          -- the table round-trips
    assert.are.equal(3, tycho.get_printoptions().precision)
  end)

  it("rejects an unknown key, naming the accepted ones", function()
    fails({ "tycho.set_printoptions: unknown option 'precison'",
            "threshold, precision, linewidth, edgeitems, suppress" },
          tycho.set_printoptions, { precison = 3 })
    fails({ "tycho.set_printoptions: unknown option 'floatmode'" },
          tycho.set_printoptions, { floatmode = "fixed" })
  end)

  it("rejects bad values and keeps the old options", function()
    tycho.set_printoptions({ precision = 4 })
    fails({ "tycho.set_printoptions: precision must be in 0..100, got -1" },
          tycho.set_printoptions, { precision = -1 })
    fails({ "tycho.set_printoptions: precision must be in 0..100, got 101" },
          tycho.set_printoptions, { precision = 101 })
    fails({ "tycho.set_printoptions", "precision", "integer" },
          tycho.set_printoptions, { precision = 2.5 })
    fails({ "tycho.set_printoptions: threshold must be >= 0, got -1" },
          tycho.set_printoptions, { threshold = -1 })
    fails({ "tycho.set_printoptions: linewidth must be >= 1, got 0" },
          tycho.set_printoptions, { linewidth = 0 })
    fails({ "tycho.set_printoptions: edgeitems must be >= 1, got 0" },
          tycho.set_printoptions, { edgeitems = 0 })
    fails({ "tycho.set_printoptions: option suppress must be true or false, got number" },
          tycho.set_printoptions, { suppress = 1 })
    fails({ "tycho.set_printoptions", "linewidth", "string" },
          tycho.set_printoptions, { linewidth = "wide" })
    fails({ "tycho.set_printoptions: takes no arguments" }, tycho.set_printoptions, 3)
    fails({ "tycho.get_printoptions: takes no arguments" }, tycho.get_printoptions, {})
    assert.are.equal(4, tycho.get_printoptions().precision)
  end)
end)
