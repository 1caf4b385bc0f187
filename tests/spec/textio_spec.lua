-- tests/spec/textio_spec.lua — tycho.loadtxt and tycho.savetxt (issue 18,
-- "Text I/O").
--
-- Expected values were computed once with numpy 1.24 (np.loadtxt on the same
-- text, np.savetxt's bytes for the same store and options) and pasted here.
-- tycho's usecols counts from 1 (numpy's + 1; negative ones are the same).
local tycho = tycho or require "tycho"

local same, fails = spec_same, spec_fails
local NAN, INF = 0 / 0, math.huge

local function write(text)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  return path
end
local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end
-- loadtxt of a text: shape, dtype and values
local function load(text, opts)
  local path = write(text)
  local ok, x = pcall(tycho.loadtxt, path, opts)
  os.remove(path)
  assert(ok, x)
  return x
end
local function values(x)
  if #x.shape == 0 then return x:item() end
  return x:totable()
end
-- savetxt into a fresh file; its bytes
local function saved(x, opts)
  local path = os.tmpname()
  tycho.savetxt(path, x, opts)
  local s = read(path)
  os.remove(path)
  return s
end

describe("tycho.loadtxt", function()
  it("reads CSV with a header, comments, blank lines, CRLF and spaces (numpy's values)", function()
    local x = load("x,y,z\r\n# comment line\r\n1.5, 2,3e2\r\n\r\n-4,  5.25 ,6 # trailing\r\n7,8,-9.125e-3\r\n",
      { delimiter = ",", skiprows = 1 })
    assert.are.equal("f64", x.dtype)
    same(x.shape, { 3, 3 })
    same(values(x), { { 1.5, 2.0, 300.0 }, { -4.0, 5.25, 6.0 }, { 7.0, 8.0, -0.009125 } })
  end)

  it("reads whitespace-separated text with nan, inf and no final newline", function()
    local x = load("  1\t2.5   nan\n\n# c\n-inf 1e-300 +7\n3 4 5")
    same(x.shape, { 3, 3 })
    same(values(x), { { 1.0, 2.5, NAN }, { -INF, 1e-300, 7.0 }, { 3.0, 4.0, 5.0 } })
  end)

  it("selects columns (1-based, negative from the end) and stops at max_rows", function()
    local text = "1,2,3,4\n5,6,7,8\n9,10,11,12\n"
    local x = load(text, { delimiter = ",", usecols = { 4, 1 }, max_rows = 2 })
    same(values(x), { { 4.0, 1.0 }, { 8.0, 5.0 } })
    local y = load(text, { delimiter = ",", usecols = -1 })
    same(y.shape, { 3 })
    same(values(y), { 4.0, 8.0, 12.0 })
    -- usecols lets rows differ in length, as numpy's
    same(values(load("1,2\n3,4,5\n", { delimiter = ",", usecols = { 1, 2 } })), { { 1, 2 }, { 3, 4 } })
    -- max_rows counts rows of data, not comments or blank lines
    same(values(load("# a\n\n1\n# b\n2\n3\n", { max_rows = 2 })), { 1, 2 })
    same(load("1 2\n", { max_rows = 0 }).shape, { 0 })
  end)

  it("shapes the result as numpy does (squeeze, then ndmin)", function()
    local cases = {
      { "1 2 3\n", {}, { 3 } },
      { "1\n2\n3\n", {}, { 3 } },
      { "1\n2\n3\n", { ndmin = 2 }, { 3, 1 } },
      { "1 2 3\n", { ndmin = 2 }, { 1, 3 } },
      { "42\n", {}, {} },
      { "42\n", { ndmin = 1 }, { 1 } },
      { "42\n", { ndmin = 2 }, { 1, 1 } },
      { "", {}, { 0 } },
      { "# only a comment\n", {}, { 0 } },
      { "", { ndmin = 2 }, { 0, 1 } },
      { "1 2\n3 4\n", { ndmin = 1 }, { 2, 2 } },
    }
    for _, c in ipairs(cases) do
      local x = load(c[1], c[2])
      same(x.shape, c[3], string.format("%q", c[1]))
    end
    assert.are.equal(42, load("42\n"):item())
  end)

  it("reads integer dtypes exactly", function()
    local x = load("1;-2;3\n40;5;-600000000000\n", { delimiter = ";", dtype = "i64" })
    assert.are.equal("i64", x.dtype)
    same(values(x), { { 1, -2, 3 }, { 40, 5, -600000000000 } })
    assert.are.equal(9007199254740993, load("9007199254740993\n", { dtype = "i64" }):item())
    same(values(load("1 2.0 -3\n", { dtype = "i32" })), { 1, 2, -3 }) -- "2.0": an integral float
    same(values(load("0 255\n", { dtype = "u8" })), { 0, 255 })
    assert.are.equal("f32", load("0.1\n", { dtype = "f32" }).dtype)
    -- another comment string; comments = false: '#' is data (an error here)
    same(values(load("1;2 % note\n", { delimiter = ";", comments = "%" })), { 1, 2 })
    local p = write("1;2 # note\n")
    fails({ p .. ":1:3: could not convert '2 # note' to f64" }, tycho.loadtxt, p,
      { delimiter = ";", comments = false })
    os.remove(p)
  end)

  it("names the file, line and column of what it cannot read", function()
    local p = write("a b c\n1 2 3\n# skip\n4 5 6\n7 8\n")
    fails({ "tycho.loadtxt: " .. p .. ":5: line 5 has 2 columns, expected 3 (as line 2)" },
      tycho.loadtxt, p, { skiprows = 1 })
    os.remove(p)
    p = write("1,2,3\n4,5x,6\n")
    fails({ "tycho.loadtxt: " .. p .. ":2:3: could not convert '5x' to f64" }, tycho.loadtxt, p,
      { delimiter = "," })
    os.remove(p)
    p = write("1,,3\n")
    fails({ p .. ":1:3: could not convert '' to f64" }, tycho.loadtxt, p, { delimiter = "," })
    os.remove(p)
    p = write("0x10\n")
    fails({ p .. ":1:1: could not convert '0x10' to f64" }, tycho.loadtxt, p)
    os.remove(p)
    p = write("1.5\n")
    fails({ p .. ":1:1: could not convert '1.5' to i64" }, tycho.loadtxt, p, { dtype = "i64" })
    os.remove(p)
    p = write("300\n")
    fails({ p .. ":1:1: could not convert '300' to u8" }, tycho.loadtxt, p, { dtype = "u8" })
    os.remove(p)
    p = write("1 2\n3 4\n")
    fails({ p .. ":1: line 1 has 2 columns, usecols asks for column 4" }, tycho.loadtxt, p, { usecols = 5 })
    os.remove(p)
    fails({ "tycho.loadtxt: cannot open '/nonexistent/x.csv': No such file or directory" }, tycho.loadtxt,
      "/nonexistent/x.csv")
    fails({ "tycho.loadtxt: cannot read '/tmp': it is a directory" }, tycho.loadtxt, "/tmp")
    fails({ "tycho.loadtxt: option delimiter must be one character, got \", \"" }, tycho.loadtxt, "x",
      { delimiter = ", " })
    fails({ "tycho.loadtxt: unknown option 'delim'" }, tycho.loadtxt, "x", { delim = "," })
    fails({ "tycho.loadtxt: usecols counts from 1" }, tycho.loadtxt, "x", { usecols = 0 })
    fails({ "tycho.loadtxt: option ndmin must be 0, 1 or 2, got 3" }, tycho.loadtxt, "x", { ndmin = 3 })
    fails({ "tycho.loadtxt: dtype must be a float or integer dtype, not bool" }, tycho.loadtxt, "/dev/null",
      { dtype = "bool" })
  end)

  it("streams a file longer than its read buffer, with a line longer than it", function()
    -- 1 MiB reads: 3 MiB of rows and one 1.5 MiB line
    local rows = {}
    for i = 1, 200000 do rows[i] = string.format("%d,%d.5", i, -i) end
    local long = {}
    for i = 1, 150000 do long[i] = "1.2345678" end
    local p = write(table.concat(rows, "\n") .. "\n")
    local x = tycho.loadtxt(p, { delimiter = "," })
    os.remove(p)
    same(x.shape, { 200000, 2 })
    assert.are.equal(200000 * 200001 / 2, x[{ {}, 1 }]:sum():item())
    same(x[{ { 199999, 200000 } }]:totable(), { { 199999, -199999.5 }, { 200000, -200000.5 } })
    p = write("1 2\n" .. table.concat(long, " ") .. "\n")
    fails({ p .. ":2: line 2 has 150000 columns, expected 2 (as line 1)" }, tycho.loadtxt, p)
    local y = tycho.loadtxt(p, { skiprows = 1 })
    os.remove(p)
    same(y.shape, { 150000 })
    assert.is_true(math.abs(y:sum():item() - 150000 * 1.2345678) < 1e-6)
  end)
end)

describe("tycho.savetxt", function()
  local X = tycho.array({ { 1.5, -2.7, 3.0 }, { 1e-300, 123456.789, -0.0 } })

  it("writes numpy's bytes for numpy's options", function()
    assert.are.equal("1.500000000000000000e+00 -2.700000000000000178e+00 3.000000000000000000e+00\n" ..
      "1.000000000000000025e-300 1.234567890000000043e+05 -0.000000000000000000e+00\n", saved(X))
    assert.are.equal("1,-2,3\n0,123456,0\n", saved(X, { fmt = "%d", delimiter = "," }))
    assert.are.equal("1.50 -2.700e+00 +3\n0.00  1.235e+05 -0\n", saved(X, { fmt = { "%.2f", "%10.3e", "%+g" } }))
    assert.are.equal("1.5|-2.70;3.000e+00\n0.0|123456.79;-0.000e+00\n", saved(X, { fmt = "%.1f|%.2f;%.3e" }))
    assert.are.equal("// a b c\n// second line\r\n1.5 -2.7 3\r\n1e-300 123457 -0\r\n// the end\r\n",
      saved(X, { fmt = "%g", header = "a b c\nsecond line", footer = "the end", comments = "// ",
        newline = "\r\n" }))
    assert.are.equal("1\n2\n-3\n", saved(tycho.array({ 1, 2, -3 }), { fmt = "%d" }))
    assert.are.equal("1.000000000000000056e-01\n2.500000000000000000e+00\n", saved(tycho.array({ 0.1, 2.5 })))
    assert.are.equal("1.000000014901161194e-01 3.333333432674407959e-01\n",
      saved(tycho.array({ { 0.1, 1 / 3 } }, "f32")))
    assert.are.equal("     nan\n     inf\n    -inf\n", saved(tycho.array({ NAN, INF, -INF }), { fmt = "%8.3f" }))
    assert.are.equal("ff 10 7\n", saved(tycho.array({ { 255, 16, 7 } }), { fmt = "%x" }))
    assert.are.equal("1.000e+00 -2.000e+00\n", saved(tycho.array({ { 1, -2 } }), { fmt = "%.3e" }))
    assert.are.equal("1.000000000000000000e+00 2.000000000000000000e+00\n", saved(tycho.array({ { 1, 2 } })))
    assert.are.equal("1\n0\n", saved(tycho.array({ true, false }), { fmt = "%d" }))
    -- x:savetxt(path, opts), a view (gathered in C order)
    local p = os.tmpname()
    X:t():savetxt(p, { fmt = "%g" })
    assert.are.equal("1.5 1e-300\n-2.7 123457\n3 -0\n", read(p))
    os.remove(p)
  end)

  it("round-trips through loadtxt to the bit", function()
    local g = tycho.random.generator(5)
    local x = g:normal({ 500, 7 }, 0, 1e10) / g:exponential({ 500, 7 })
    local p = os.tmpname()
    tycho.savetxt(p, x, { delimiter = "," })
    same(tycho.loadtxt(p, { delimiter = "," }):totable(), x:totable())
    tycho.savetxt(p, x, { fmt = "%.17g", header = "seven columns" })
    same(tycho.loadtxt(p):totable(), x:totable())
    local i = g:integers(-2 ^ 62, 2 ^ 62, { 100, 3 })
    tycho.savetxt(p, i, { fmt = "%d" })
    same(tycho.loadtxt(p, { dtype = "i64" }):totable(), i:totable())
    os.remove(p)
  end)

  it("replaces files safely and refuses what is not a regular file", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. dir))
    -- through a symbolic link: the link stays, its target gets the text
    assert(os.execute("ln -s target.txt " .. dir .. "/link.txt"))
    tycho.savetxt(dir .. "/link.txt", tycho.array({ 1, 2 }), { fmt = "%d" })
    assert.are.equal("1\n2\n", read(dir .. "/target.txt"))
    assert.is_true(os.execute("test -L " .. dir .. "/link.txt"))
    fails({ "tycho.savetxt: cannot write '" .. dir .. "': it is a directory, not a regular file" },
      tycho.savetxt, dir, X)
    assert(os.execute("mkfifo " .. dir .. "/fifo"))
    fails({ "it is a FIFO, not a regular file" }, tycho.savetxt, dir .. "/fifo", X)
    -- a failed save (bad fmt) leaves the old file and no temporary
    fails({ "tycho.savetxt: cannot format nan with the integer conversion '%d'" }, tycho.savetxt,
      dir .. "/target.txt", tycho.array({ NAN }), { fmt = "%d" })
    assert.are.equal("1\n2\n", read(dir .. "/target.txt"))
    local ls = io.popen("ls " .. dir):read("a")
    assert.is_nil(ls:find("tmp", 1, true), ls)
    assert(os.execute("rm -rf " .. dir))
  end)

  it("refuses bad formats and shapes with messages that name them", function()
    fails({ "tycho.savetxt: unsupported conversion '%s'" }, tycho.savetxt, "/tmp/x.txt", X, { fmt = "%s" })
    fails({ "tycho.savetxt: fmt \"%d %d\" has 2 conversions, but the store has 3 columns" }, tycho.savetxt,
      "/tmp/x.txt", X, { fmt = "%d %d" })
    fails({ "tycho.savetxt: expected a 1-D or 2-D store, got 3-D" }, tycho.savetxt, "/tmp/x.txt",
      tycho.zeros({ 2, 2, 2 }))
    fails({ "tycho.savetxt: expected a 1-D or 2-D store, got 0-D" }, tycho.savetxt, "/tmp/x.txt", tycho.array(1))
    fails({ "compressed (.gz) text is not supported" }, tycho.savetxt, "/tmp/x.txt.gz", X)
    fails({ "tycho.savetxt: option fmt[2] must be a string, got number" }, tycho.savetxt, "/tmp/x.txt", X,
      { fmt = { "%d", 3, "%d" } })
    fails({ "tycho.savetxt: unknown option 'format'" }, tycho.savetxt, "/tmp/x.txt", X, { format = "%d" })
    fails({ "tycho.savetxt: x must be a store, got number" }, tycho.savetxt, "/tmp/x.txt", 3)
  end)
end)
