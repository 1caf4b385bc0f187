-- tests/spec/npy_spec.lua — tycho.save / tycho.load round trips for every
-- dtype, and files exchanged with numpy when /usr/bin/python3 has it.
--
-- Values are chosen to catch byte-order, width and sign mistakes: extremes of
-- each integer type, floats that need all 53 (or 24) bits, NaN and infinities.
local tycho = tycho or require "tycho"

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- A fresh empty directory (os.tmpname makes a file: replace it by a dir).
local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  assert(os.execute("mkdir -p " .. q(p)))
  return p
end

local function rmdir(p) os.execute("rm -rf " .. q(p)) end

local function listdir(p)
  local f = assert(io.popen("ls -A " .. q(p)))
  local names = {}
  for line in f:lines() do names[#names + 1] = line end
  f:close()
  return names
end

-- Equality that treats NaN as equal to NaN.
local function same(got, want, path)
  path = path or ""
  if type(want) == "table" then
    assert(type(got) == "table", path .. ": expected a table")
    assert(#got == #want, path .. ": length " .. #got .. " ~= " .. #want)
    for i = 1, #want do same(got[i], want[i], path .. "[" .. i .. "]") end
  elseif want ~= want then
    assert(got ~= got, path .. ": expected NaN, got " .. tostring(got))
  else
    assert(got == want and math.type(got) == math.type(want),
           string.format("%s: got %s (%s), expected %s (%s)", path, tostring(got),
                         tostring(math.type(got)), tostring(want), tostring(math.type(want))))
  end
end

local nan, inf = 0 / 0, math.huge
local cases = {
  f64 = {{1.5, -2.25, 0.1}, {1e300, -inf, nan}},
  f32 = {{1.5, -2.25, 0.5}, {16777216.0, inf, nan}},
  i64 = {{math.mininteger, -1, 0}, {1, (1 << 53) + 1, math.maxinteger}},
  i32 = {{-2147483648, -1, 0}, {1, 65536, 2147483647}},
  u8 = {{0, 1, 127}, {128, 200, 255}},
  bool = {{true, false, true}, {false, false, true}},
}

describe(".npy round trips", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmdir(dir) end)

  it("keep dtype, shape and every value of each dtype", function()
    for dt, values in pairs(cases) do
      local path = dir .. "/" .. dt .. ".npy"
      local x = tycho.array(values, dt)
      tycho.save(path, x)
      local y = tycho.load(path)
      assert.are.equal(dt, y.dtype)
      assert.are.same({2, 3}, y.shape)
      same(y:totable(), values, dt)
    end
  end)

  it("handle 0-d, empty and high-rank stores", function()
    local p = dir .. "/s.npy"
    tycho.save(p, tycho.full({}, 42))
    local s = tycho.load(p)
    assert.are.equal(0, s.ndim)
    assert.are.equal(42, s:item())
    tycho.save(p, tycho.zeros({3, 0}, "i32"))
    local e = tycho.load(p)
    assert.are.same({3, 0}, e.shape)
    assert.are.equal("i32", e.dtype)
    local shape = {2, 1, 3, 1, 2, 1, 1, 2}
    local h = tycho.arange(24):reshape(shape)
    tycho.save(p, h)
    local hl = tycho.load(p)
    assert.are.same(shape, hl.shape)
    assert.are.equal(0, (hl - h):abs():max():item())
  end)

  it("save views in C order, by function or method", function()
    local x = tycho.arange(12):reshape(3, 4)
    local p = dir .. "/v.npy"
    x:t():save(p) -- a transposed (non-contiguous) view
    same(tycho.load(p):totable(), x:t():totable())
    tycho.save(p, x[{{2, 3}, {1, -1, 2}}])
    same(tycho.load(p):totable(), {{4, 6}, {8, 10}})
  end)

  it("overwrite atomically and leave no temporary files", function()
    local p = dir .. "/a.npy"
    tycho.save(p, tycho.ones(1000))
    tycho.save(p, tycho.full(5, 2.5, "f32"))
    same(tycho.load(p):totable(), {2.5, 2.5, 2.5, 2.5, 2.5})
    assert.are.same({"a.npy"}, listdir(dir))
    -- a failed save leaves the old file alone
    assert.is_false(pcall(tycho.save, dir .. "/missing/b.npy", tycho.ones(2)))
    assert.are.same({"a.npy"}, listdir(dir))
  end)

  -- The error reaches Lua and the old file survives byte for byte: a file
  -- size limit (binding root too) stops the write half way in a child shell
  -- (SIGXFSZ ignored, so write() fails with EFBIG instead of killing it).
  it("keep the old file when a save fails half way, and say why", function()
    local bin = os.getenv("TYCHO_BIN")
    if not bin then return pending("TYCHO_BIN names the tycho executable") end
    local p = dir .. "/keep.npy"
    tycho.save(p, tycho.arange(3))
    local f = assert(io.open(p, "rb"))
    local before = f:read("a")
    f:close()
    local script = dir .. "/save.lua"
    f = assert(io.open(script, "w"))
    f:write(string.format("print(pcall(tycho.save, %q, tycho.ones(100000)))\n", p))
    f:close()
    local sh = string.format("trap '' XFSZ; ulimit -f 8; exec %s %s", q(bin), q(script))
    local pipe = assert(io.popen("sh -c " .. q(sh) .. " 2>&1"))
    local out = pipe:read("a")
    pipe:close()
    assert.matches("^false\t", out)
    assert.matches("tycho.save: cannot write '" .. p:gsub("%p", "%%%0") .. "' %(write%): File too large", out)
    f = assert(io.open(p, "rb"))
    assert.are.equal(before, f:read("a"))
    f:close()
    assert.are.same({"keep.npy", "save.lua"}, listdir(dir))
  end)

  it("loaded stores compute like any other", function()
    tycho.seed(5)
    local x = tycho.random({40, 30})
    local p = dir .. "/r.npy"
    tycho.save(p, x)
    local y = tycho.load(p)
    assert.are.equal(x:sum():item(), y:sum():item())
    assert.are.equal(0, (x - y):abs():max():item())
    y[{1, 1}] = -1 -- a loaded store is an ordinary writable store
    assert.are.equal(-1, y:min():item())
  end)
end)

local python = "/usr/bin/python3"
local has_numpy = os.execute(python .. " -c 'import numpy' >/dev/null 2>&1") == true

-- Runs a Python script; returns its output and whether it exited 0.
local function run_python(code)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(code)
  f:close()
  local p = assert(io.popen(python .. " " .. q(path) .. " 2>&1"))
  local out = p:read("a")
  local ok = p:close()
  os.remove(path)
  return out, ok
end

describe(".npy files shared with numpy", function()
  if not has_numpy then
    pending("skipped: " .. python .. " cannot import numpy")
    return
  end

  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmdir(dir) end)

  it("files numpy writes load equal", function()
    local out, ok = run_python(([==[
import numpy as np
d = %q
np.save(d + "/f64.npy", np.array([[1.5, -2.25, 0.1], [1e300, -np.inf, np.nan]]))
np.save(d + "/f32.npy", np.array([[1.5, -2.25, 0.5], [16777216.0, np.inf, np.nan]], dtype=np.float32))
np.save(d + "/i64.npy", np.array([[-2**63, -1, 0], [1, 2**53 + 1, 2**63 - 1]], dtype=np.int64))
np.save(d + "/i32.npy", np.array([[-2**31, -1, 0], [1, 65536, 2**31 - 1]], dtype=np.int32))
np.save(d + "/u8.npy", np.array([[0, 1, 127], [128, 200, 255]], dtype=np.uint8))
np.save(d + "/bool.npy", np.array([[True, False, True], [False, False, True]]))
np.save(d + "/fortran.npy", np.asfortranarray(np.arange(12.0).reshape(3, 4)))
np.save(d + "/big.npy", np.arange(2.0, 2.0 + 3 * 5 * 7).reshape(3, 5, 7) ** 0.5)
np.save(d + "/scalar.npy", np.float64(3.25))
np.save(d + "/be.npy", np.array([1.5, -2.0], dtype=">f8"))
print("ok")
]==]):format(dir))
    assert(ok, out)
    for dt, values in pairs(cases) do
      local x = tycho.load(dir .. "/" .. dt .. ".npy")
      assert.are.equal(dt, x.dtype)
      same(x:totable(), values, dt)
    end
    local f = tycho.load(dir .. "/fortran.npy")
    same(f:totable(), {{0.0, 1.0, 2.0, 3.0}, {4.0, 5.0, 6.0, 7.0}, {8.0, 9.0, 10.0, 11.0}})
    local b = tycho.load(dir .. "/big.npy")
    assert.are.same({3, 5, 7}, b.shape)
    local t, k = b:totable(), 2.0
    for i = 1, 3 do for j = 1, 5 do for l = 1, 7 do
      assert.are.equal(math.sqrt(k), t[i][j][l]) -- both correctly rounded
      k = k + 1
    end end end
    assert.are.equal(3.25, tycho.load(dir .. "/scalar.npy"):item())
    -- big-endian data: loaded (converted) or refused with a message, never garbage
    local ok_be, be = pcall(tycho.load, dir .. "/be.npy")
    if ok_be then
      same(be:totable(), {1.5, -2.0})
    else
      assert.is_truthy(tostring(be):find("tycho.load: ", 1, true), be)
    end
  end)

  it("files tycho writes load in numpy equal", function()
    for dt, values in pairs(cases) do
      tycho.save(dir .. "/" .. dt .. ".npy", tycho.array(values, dt))
    end
    tycho.save(dir .. "/t.npy", tycho.arange(12.0, "f64"):reshape(3, 4):t())
    tycho.save(dir .. "/s.npy", tycho.full({}, 7, "i32"))
    tycho.save(dir .. "/e.npy", tycho.zeros({0, 5}))
    local out, ok = run_python(([==[
import numpy as np
d = %q
want = {
  "f64": (np.float64, [[1.5, -2.25, 0.1], [1e300, -np.inf, np.nan]]),
  "f32": (np.float32, [[1.5, -2.25, 0.5], [16777216.0, np.inf, np.nan]]),
  "i64": (np.int64, [[-2**63, -1, 0], [1, 2**53 + 1, 2**63 - 1]]),
  "i32": (np.int32, [[-2**31, -1, 0], [1, 65536, 2**31 - 1]]),
  "u8": (np.uint8, [[0, 1, 127], [128, 200, 255]]),
  "bool": (np.bool_, [[True, False, True], [False, False, True]]),
}
for name, (dt, values) in want.items():
    a = np.load(d + "/" + name + ".npy")
    assert a.dtype == dt, (name, a.dtype)
    assert a.shape == (2, 3), (name, a.shape)
    assert np.array_equal(a, np.array(values, dtype=dt), equal_nan=(name[0] == "f")), (name, a)
t = np.load(d + "/t.npy")
assert np.array_equal(t, np.arange(12.0).reshape(3, 4).T), t
s = np.load(d + "/s.npy")
assert s.shape == () and s.dtype == np.int32 and s == 7, s
e = np.load(d + "/e.npy")
assert e.shape == (0, 5) and e.dtype == np.float64, e
print("numpy agrees")
]==]):format(dir))
    assert(ok, out)
    assert.is_truthy(out:find("numpy agrees", 1, true), out)
  end)
end)
