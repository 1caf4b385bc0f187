-- tests/spec/gpu_sim_spec.lua — launches on GPUs give the CPU's results.
--
-- Runs under CTest with TYCHO_GPUS=sim:2 (the simulated devices of
-- docs/gpu.md: device memory is a separate, poisoned arena, every stream is
-- its own worker thread), so a missing copy or a missing wait shows up here
-- as a wrong number. Each case computes the same thing under target=cpu and
-- target=gpu in this process and compares: bit for bit where the operation
-- is exact, within 4 ULPs for the transcendentals, within a relative 1e-12
-- for float sums (a tree on the GPU, pairwise on the CPU).
local have_gpu = #tycho.config().gpus > 0

local function on(target, f)
  return tycho.parallel({target = target}, f)
end

local function both(f)
  local c = on("cpu", function() return f():totable() end)
  local g = on("gpu", function() return f():totable() end)
  return c, g
end

local function flat(t, out)
  out = out or {}
  if type(t) ~= "table" then out[#out + 1] = t return out end
  for _, v in ipairs(t) do flat(v, out) end
  return out
end

-- |got - want| <= rtol |want| + atol, element by element (NaN equals NaN)
local function assert_close(got, want, rtol, what, atol)
  local g, w = flat(got), flat(want)
  assert(#g == #w, what .. ": sizes differ")
  for i = 1, #w do
    local a, b = g[i], w[i]
    if not (a ~= a and b ~= b) then
      local err = math.abs(a - b)
      assert(err <= rtol * math.abs(b) + (atol or 0),
             string.format("%s[%d]: got %.17g, want %.17g", what, i, a, b))
    end
  end
end

local function last_entry()
  local e = tycho.explain(1)
  return e[#e]
end

describe("the GPU path on simulated devices", function()
  setup(function()
    assert(have_gpu, "this spec runs with TYCHO_GPUS=sim:2 (tycho.gpu_count() is 0)")
  end)

  it("runs exact element-wise chains bit for bit", function()
    local c, g = both(function()
      local x = tycho.arange(100000) * 0.5 - 7
      local y = tycho.linspace(-3, 3, 100000)
      return (x * y + x / (y * y + 1)) - tycho.sqrt(tycho.abs(x)) + tycho.maximum(x, y)
    end)
    spec_same(g, c)
    assert.equal("gpu", last_entry().target)
  end)

  it("runs integer, bool and cast chains bit for bit", function()
    local c, g = both(function()
      local i = tycho.arange(50000)
      local m = tycho.logical_or(tycho.eq(i % 7, 3), tycho.gt(i, 40000))
      return tycho.where(m, i * 3 - 5, (i * 5):astype("i32"):astype("f64"))
    end)
    spec_same(g, c)
  end)

  it("runs transcendentals within 4 ULPs", function()
    local c, g = both(function()
      local x = tycho.linspace(0.01, 20, 65536)
      return tycho.exp(-x) + tycho.log(x) * tycho.sin(x) - tycho.tanh(x) * tycho.cos(x)
    end)
    -- each term within 4 ULPs; terms up to ~20 in size, so 4 ULPs of 20 absolute
    assert_close(g, c, 4 * 2.2e-16, "transcendentals", 4 * 2.2e-16 * 32)
  end)

  it("draws the same random numbers for a seed", function()
    local c, g = both(function()
      tycho.seed(1234)
      return tycho.random({300, 200})
    end)
    spec_same(g, c)
  end)

  it("reduces like the CPU: integers exactly, floats within rounding", function()
    local function reductions()
      local x = tycho.arange(120000):reshape({300, 400})
      local f = tycho.linspace(-1, 1, 120000):reshape({300, 400})
      return {x:sum():item(), x:max():item(), x:min(1):totable(), f:argmax(2):totable(),
              x:sum(1):totable(), f:sum():item(), f:sum(2):totable(), f:mean():item()}
    end
    local c = on("cpu", reductions)
    local g = on("gpu", reductions)
    spec_same({g[1], g[2], g[3], g[4], g[5]}, {c[1], c[2], c[3], c[4], c[5]})
    -- the sums cancel to ~0: rounding relative to the sum of |x| (~60000)
    assert_close({g[6], g[7], g[8]}, {c[6], c[7], c[8]}, 1e-12, "float reductions", 1e-9)
  end)

  it("keeps a store coherent when CPU and GPU launches alternate on it", function()
    local x = tycho.zeros({1000, 300})
    local want = tycho.zeros({1000, 300})
    for k = 1, 6 do
      on(k % 2 == 0 and "gpu" or "cpu", function()
        x[{{1, 500}, {}}] = x[{{1, 500}, {}}] + k  -- a slice on one side
        x = x * 1.5                                -- the whole store
      end)
      on("cpu", function()
        want[{{1, 500}, {}}] = want[{{1, 500}, {}}] + k
        want = want * 1.5
      end)
    end
    spec_same(x:totable(), want:totable())
  end)

  it("writes views (transposes, steps) on the GPU that the host then reads", function()
    local function f()
      local a = tycho.arange(600 * 400):reshape({600, 400}) * 1.0
      local b = a.T + 1
      a[{{1, 600, 3}, {2, 400, 2}}] = a[{{1, 600, 3}, {2, 400, 2}}] * -1
      return {b:totable(), a:totable()}
    end
    local c = on("cpu", f)
    local g = on("gpu", f)
    spec_same(g, c)
  end)

  it("multiplies matrices through the device BLAS", function()
    local c, g = both(function()
      local a = tycho.linspace(-1, 1, 300 * 200):reshape({300, 200})
      local b = tycho.linspace(2, -2, 200 * 100):reshape({200, 100})
      return a:dot(b)
    end)
    assert_close(g, c, 1e-12, "matmul", 1e-12)
  end)

  it("multiplies a matrix by a vector on the GPU (C one column, its stride 0)", function()
    local c, g = both(function()
      local a = tycho.linspace(-1, 1, 300 * 200):reshape({300, 200})
      local v = tycho.linspace(2, -2, 200)
      return a:dot(v)
    end)
    assert_close(g, c, 1e-12, "matrix-vector", 1e-12)
    assert.equal("gpu", last_entry().target)
    c, g = both(function() -- X^T z of one dtype: a transposed operand, one column out
      local x = (tycho.arange(20000 * 32) % 7):astype("f64"):reshape({20000, 32})
      local z = (tycho.arange(20000) % 5):astype("f64")
      return x:t():dot(z)
    end)
    spec_same(g, c)
    assert.equal(119981, c[1]); assert.equal(120008, c[32]) -- exact: small integers in f64
    assert.equal("gpu", last_entry().target)
  end)

  it("multiplies batched matrices on the GPU, one device gemm per matrix", function()
    local c, g = both(function()
      local a = tycho.linspace(-1, 1, 3 * 40 * 30):reshape({3, 40, 30})
      local b = tycho.linspace(2, -2, 30 * 20):reshape({30, 20}) -- broadcast over the batch
      return tycho.matmul(a, b)
    end)
    assert_close(g, c, 1e-12, "batched matmul", 1e-12)
    local e = last_entry()
    assert.equal("matmul", e.task)
    assert.equal("gpu", e.target)
    c, g = both(function()
      local a = tycho.linspace(-1, 1, 2 * 3 * 8 * 5):reshape({2, 3, 8, 5})
      local b = tycho.linspace(1, 3, 3 * 5 * 4):reshape({3, 5, 4})
      return tycho.matmul(a, b)
    end)
    assert_close(g, c, 1e-12, "4-d batched matmul", 1e-12)
  end)

  it("keeps integer matmul on the CPU and explain says why", function()
    local c, g = both(function()
      local a = tycho.arange(40 * 30):reshape({40, 30}) % 13
      return tycho.matmul(a, a:transpose())
    end)
    spec_same(g, c)
    assert.truthy(tostring(tycho.explain(1)):find("cuBLAS multiplies f64 and f32 only", 1, true))
  end)

  it("keeps an f32 X^T z (summed in f64) on the CPU and explain names the dtypes", function()
    local c, g = both(function()
      local x = (tycho.arange(100000 * 32) % 7):astype("f32"):reshape({100000, 32})
      local z = (tycho.arange(100000) % 5):astype("f32")
      return x:t():dot(z)
    end)
    spec_same(g, c)
    assert.equal(599999, c[1]); assert.equal(600001, c[32]) -- exact: small integers
    local text = tostring(tycho.explain(12))
    assert.truthy(text:find("matmul of f32 and f32 into f64: cuBLAS takes one dtype", 1, true), text)
  end)

  it("spreads a large launch over both devices and says so", function()
    local x = on("gpu", function()
      return tycho.parallel({mode = "all"}, function()
        local v = tycho.arange(1 << 20) * 3.0 + 1
        v:sum():item()
        return v
      end)
    end)
    local e = tycho.explain(8)
    local seen = 0
    for _, en in ipairs(e) do if en.target == "gpu" then seen = math.max(seen, en.gpus) end end
    assert.equal(2, seen)
    assert.equal(3.0 * 1000 + 1, x[1001])
  end)

  it("counts the bytes it copies, and explain names the placement", function()
    local before = tycho.stats()
    local h = on("cpu", function()                      -- 800 KB: made on the host
      local x = tycho.arange(100000) * 1.0
      tycho.flush()
      return x
    end)
    local y = on("gpu", function() return (h + 1):sum():item() end)
    assert.equal(100000 * 99999 / 2 + 100000, y)
    local after = tycho.stats()
    assert.is_true(after.gpu_launches > before.gpu_launches)
    assert.is_true(after.gpu_h2d_bytes > before.gpu_h2d_bytes)
    assert.is_true(after.gpu_d2h_bytes > before.gpu_d2h_bytes)
    local text = tostring(tycho.explain(4))
    assert.truthy(text:find("placement: target=gpu", 1, true))
  end)

  it("traces the pieces queued on each GPU and the bytes copied", function()
    local path = os.tmpname()
    tycho.trace_start(path)
    on("gpu", function()
      tycho.parallel({mode = "all"}, function() return ((tycho.arange(1 << 19) + 1) * 2):sum():item() end)
    end)
    tycho.trace_stop()
    local f = assert(io.open(path))
    local text = f:read("a")
    f:close()
    os.remove(path)
    assert.truthy(text:find('"GPU 0 (queued)"', 1, true))
    assert.truthy(text:find('"GPU 1 (queued)"', 1, true))
    assert.truthy(text:find('"cat":"gpu"', 1, true))
    assert.truthy(text:find('"gpu bytes copied"', 1, true))
    -- device time: events around each piece on its stream, a track per GPU
    assert.truthy(text:find('"GPU 0 (device)"', 1, true))
    assert.truthy(text:find('"GPU 1 (device)"', 1, true))
    local n = 0
    for ts, dur in text:gmatch('"cat":"gpu%-device","ph":"X","pid":1,"tid":%d+,"ts":([%d.]+),"dur":([%d.]+)') do
      assert.is_true(tonumber(ts) >= 0 and tonumber(dur) >= 0, ts .. " " .. dur)
      n = n + 1
    end
    assert.is_true(n >= 3, text)
  end)

  it("runs the element-wise chunks of streamed scopes on a GPU, with the CPU's values", function()
    local n = 1 << 18 -- 2 MiB a store, streamed under a 1 MB budget
    local function program()
      return tycho.parallel({memory = "1MB"}, function()
        local x = tycho.arange(n) * 0.001 - 100
        local y = tycho.linspace(-1, 1, n)
        return (x * y + x / (y * y + 1)) - tycho.abs(x) * 0.5
      end)
    end
    local s0 = tycho.stats()
    local c = on("cpu", function() return program():totable() end)
    local g = on("gpu", function() return program():totable() end)
    local s1 = tycho.stats()
    spec_same(g, c)
    assert.equal(-100.0 * -1.0 + -100.0 / 2.0 - 50.0, c[1]) -- x = -100, y = -1
    -- the chunks went to the GPU and back: every byte written came back
    assert.is_true(s1.gpu_launches > s0.gpu_launches)
    assert.is_true(s1.gpu_d2h_bytes - s0.gpu_d2h_bytes >= 8 * n, tostring(s1.gpu_d2h_bytes - s0.gpu_d2h_bytes))
    local text = tostring(tycho.explain(8))
    assert.truthy(text:find("streaming: ", 1, true), text)
    assert.truthy(text:find("a streamed chunk, staged through GPU memory", 1, true), text)
  end)

  it("runs a streamed sum's chunks on the CPU, and explain says why", function()
    local v = on("gpu", function()
      return tycho.parallel({memory = "2MB"}, function()
        local a = tycho.arange(1 << 20) * 2.0
        return ((a + 1) * 3):sum():item()
      end)
    end)
    local n = 1 << 20
    assert.equal(3.0 * (n * (n - 1) + n), v)
    local text = tostring(tycho.explain(4))
    assert.truthy(text:find("streaming: ", 1, true), text)
    assert.truthy(text:find("placement: ran on the CPU: in a streamed scope, GPUs run the element-wise chunks",
                            1, true), text)
  end)

  it("leaves small launches on the CPU under target=auto", function()
    on("auto", function()
      local x = tycho.arange(100) + 1
      x:sum():item()
    end)
    assert.equal("cpu", last_entry().target)
  end)
end)

describe("the GPU path with a small device budget", function()
  it("gives up the least recently used stores' device copies to make room", function()
    local out, code = spec_lua([[
      local s = {}
      tycho.parallel({target = "gpu"}, function()
        for i = 1, 8 do                             -- 4 MiB each; 8 do not fit in 20 MB
          s[i] = tycho.arange(1 << 19) * 1.0 + i
          tycho.flush()
        end
      end)
      local st = tycho.stats()
      print("evictions", st.gpu_evictions)
      for i = 1, 8 do print(string.format("sum %d %.17g", i, s[i]:sum():item())) end
      print(tostring(tycho.explain(3)))
    ]], {TYCHO_GPUS = "sim:1", TYCHO_FBMEM = "20MB"})
    assert.equal(0, code, out)
    local ev = tonumber(out:match("evictions%s+(%d+)"))
    assert.is_true(ev and ev > 0, out)
    local n = 1 << 19
    for i = 1, 8 do
      assert.truthy(out:find(string.format("sum %d %.17g", i, n * (n - 1) / 2 + i * n), 1, true), out)
    end
    assert.falsy(out:find("ran on the CPU", 1, true), out)
  end)

  it("streams stores larger than the device budget through it, chunk by chunk", function()
    local out, code = spec_lua([[
      local y = tycho.parallel({target = "gpu", memory = "4MB"}, function()
        local x = tycho.arange(1 << 21) * 1.0       -- 16 MiB a store; the GPU holds 6 MB
        return x * 2 + 1
      end)
      print(string.format("sum %.17g", y:sum():item()))
      print(string.format("last %.17g", y[-1]))
      print(tostring(tycho.explain(6)))
    ]], {TYCHO_GPUS = "sim:1", TYCHO_FBMEM = "6MB"})
    assert.equal(0, code, out)
    local n = 1 << 21
    assert.truthy(out:find(string.format("sum %.17g", 1.0 * n * (n - 1) + n), 1, true), out)
    assert.truthy(out:find(string.format("last %.17g", 2.0 * (n - 1) + 1), 1, true), out)
    assert.truthy(out:find("a streamed chunk, staged through GPU memory", 1, true), out)
  end)

  it("runs what does not fit on the CPU, with the same results", function()
    local out, code = spec_lua([[
      local t = tycho.parallel({target = "gpu"}, function()
        local a = tycho.arange(1 << 20) * 2.0      -- 8 MiB each: two do not fit in 12 MiB
        local b = tycho.arange(1 << 20) * 3.0
        return (a + b):sum():item()
      end)
      print(string.format("sum %.17g", t))
      print(tostring(tycho.explain(6)))
    ]], {TYCHO_GPUS = "sim:1", TYCHO_FBMEM = "12MB"})
    assert.equal(0, code, out)
    local n = 1 << 20
    assert.truthy(out:find(string.format("sum %.17g", 5.0 * n * (n - 1) / 2), 1, true), out)
    assert.truthy(out:find("ran on the CPU", 1, true), out)
  end)
end)

-- A fused run that ends in a full reduction runs as one generated kernel
-- (gpu_codegen.h: ty__gred): the element-wise body inside the reduction's
-- grid-stride loop, no temporary. Float sums add in another order than the
-- CPU's (docs/gpu.md): within a relative 1e-12 for f64 and 1e-6 for f32;
-- integer sums and products, min and max are exact.
describe("a fused run that ends in a reduction, on a GPU", function()
  local n = 300007
  local function inputs()
    local a = tycho.arange(n) * 0.5 - 1000
    local b = tycho.arange(n) % 7 + 0.25
    local i = (tycho.arange(n) % 1000):astype("i32")
    return a, b, i
  end

  local function both_scalar(f)
    local c = on("cpu", function() return f():item() end)
    local g = on("gpu", function() return f():item() end)
    return c, g
  end

  it("gives the CPU's values for sum, prod, min and max of chains", function()
    local c, g = both_scalar(function() local a, b = inputs() return (a * b + 1):sum() end)
    assert_close({g}, {c}, 1e-12, "f64 sum")
    c, g = both_scalar(function() local a, b = inputs() return (a * b):max() end)
    assert.equal(c, g)
    c, g = both_scalar(function() local a, b = inputs() return (a - b * 3):min() end)
    assert.equal(c, g)
    c, g = both_scalar(function() local _, _, i = inputs() return (i * 7 - 3):sum() end)
    assert.equal(c, g)
    c, g = both_scalar(function() local _, _, i = inputs() return ((i % 3) + 1):prod() end)
    assert.equal(c, g) -- wraps modulo 2^64 on both
    -- strided operands (a transposed view, an inner box): the index decomposition in the loop
    c, g = both_scalar(function()
      local m = (tycho.arange(400 * 300) * 0.25):reshape({400, 300})
      return (m:transpose() * 2 + 1):sum()
    end)
    assert_close({g}, {c}, 1e-12, "strided f64 sum")
    c, g = both_scalar(function()
      local m = (tycho.arange(402 * 302) % 1000):reshape({402, 302})
      local inner = m[{{2, -2}, {2, -2}}]
      return (inner * 3 - m[{{1, -3}, {2, -2}}]):sum()
    end)
    assert.equal(c, g)
    c, g = both_scalar(function() local a, b = inputs() return (a * b):astype("f32"):sum() end)
    assert_close({g}, {c}, 1e-6, "f32 sum")
    c, g = both_scalar(function() local a, b = inputs() return (tycho.sqrt(a) + b):max() end) -- NaN sticks
    assert.is_true(c ~= c and g ~= g, string.format("cpu %s, gpu %s", c, g))
    c, g = both_scalar(function() local a, b = inputs() return (tycho.sqrt(a) * b):min() end)
    assert.is_true(c ~= c and g ~= g, string.format("cpu %s, gpu %s", c, g))
  end)

  it("is one launch on the GPU, fewer than unfused, and explain says it ran there", function()
    local a, b = inputs()
    tycho.flush()
    local function launches(fuse)
      local s0 = tycho.stats().gpu_launches
      local v = tycho.parallel({target = "gpu", fuse = fuse}, function() return (a * b - a):sum():item() end)
      return tycho.stats().gpu_launches - s0, v
    end
    local unfused, v0 = launches(false)
    local fused, v1 = launches(true)
    assert.is_true(fused < unfused, string.format("fused %d, unfused %d launches", fused, unfused))
    assert_close({v1}, {v0}, 1e-12, "sum")
    local e = tycho.explain(1)
    local found
    for _, en in ipairs(e) do
      if en.task == "fused" then found = en end
    end
    assert.truthy(found, tostring(e))
    assert.equal("gpu", found.target)
    assert.equal(1, found.pieces)
    -- "[compiled]" when the CPU's kernel for the run is ready too (fused_codegen.c's ty_fk3)
    assert.truthy(tostring(e):find("fused 3 launches: ", 1, true), tostring(e))
    assert.truthy(tostring(e):find("mul sub sum", 1, true), tostring(e))
  end)

  it("gives the same bits every run on the same devices", function()
    local first
    for _ = 1, 3 do
      local v = on("gpu", function() local a, b = inputs() return (a * b + a):sum():item() end)
      first = first or v
      assert.equal(first, v)
    end
  end)

  it("keeps a reduction along an axis out of the run (its own kernel), with the CPU's values", function()
    local c, g = both(function()
      local a = (tycho.arange(600 * 50) * 0.25):reshape({600, 50})
      return (a * 2 + 1):sum(1)
    end)
    assert_close(g, c, 1e-12, "sum along axis 1")
    assert.truthy(tostring(tycho.explain(1)):find("may run on a GPU, as its own kernel", 1, true))
  end)
end)
