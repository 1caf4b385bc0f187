-- bench/gpu_check.lua, step 6 of bench/gpu_check.sh: GPU against CPU in the shell for
-- what runs on GPUs since the first gpu_check:
-- fused runs ending in a reduction (one kernel), batched and integer matmul,
-- streamed scopes. Prints every case; exits 1 on a wrong value.
-- On a GPU: tycho --gpus 1 bench/gpu_check.lua; on simulated GPUs, at small
-- sizes (ctest gpu-sim.check): tycho --gpus sim:1 bench/gpu_check.lua small
local big = not (arg and arg[1] == "small")
local N = big and 50000003 or 300007
local M = big and 4096 or 300
local bad = 0
local function check(name, ok, detail)
  print(string.format("  %-46s %-5s %s", name, ok and "ok" or "WRONG", detail or ""))
  if not ok then bad = bad + 1 end
end
local function on(t, f, extra)
  local o = {target = t}
  for k, v in pairs(extra or {}) do o[k] = v end
  return tycho.parallel(o, f)
end
local function close(g, c, rtol)
  if g ~= g and c ~= c then return true end
  return math.abs(g - c) <= rtol * math.abs(c)
end
local function mk()
  local a = tycho.arange(N) * 1e-6 - 20
  local b = tycho.arange(N) % 7 + 0.5
  return a, b
end
local function explain_has(s) return tostring(tycho.explain(1)):find(s, 1, true) ~= nil end

local cases = {
  {"f64 sum of a*b+1", 1e-12, function() local a, b = mk() return (a * b + 1):sum() end},
  {"f64 max of a*b", 0, function() local a, b = mk() return (a * b):max() end},
  {"f64 min of a-3b", 0, function() local a, b = mk() return (a - b * 3):min() end},
  {"f64 max with NaN (sqrt of negatives)", 0, function() local a, b = mk() return (tycho.sqrt(a) + b):max() end},
  {"f32 sum of a*b", 1e-5, function() local a, b = mk() return (a * b):astype("f32"):sum() end},
  {"i32 sum of (i*7-3)", 0, function() return ((tycho.arange(N) % 1000):astype("i32") * 7 - 3):sum() end},
  {"i32 prod of (i%3+1) (wraps)", 0, function() return ((tycho.arange(N) % 3):astype("i32") + 1):prod() end},
  {"2-d strided sum (transpose + box)", 0, function()
    local m = (tycho.arange((M + 2) * (M + 2)) % 1000):reshape({M + 2, M + 2})
    return (m[{{2, -2}, {2, -2}}]:transpose() * 2 - m[{{1, -3}, {2, -2}}]):sum() end},
}
for _, c in ipairs(cases) do
  local name, rtol, f = c[1], c[2], c[3]
  local want = on("cpu", function() return f():item() end)
  local s0 = tycho.stats().gpu_launches
  local t0 = tycho.clock()
  local got = on("gpu", function() return f():item() end)
  local dt = tycho.clock() - t0
  local fused_on_gpu = false
  for _, e in ipairs(tycho.explain(1)) do
    if e.task == "fused" and e.target == "gpu" then fused_on_gpu = true end
  end
  check(name, close(got, want, rtol) and fused_on_gpu,
        string.format("gpu %.17g cpu %.17g (%d GPU launches, %.4f s%s)", got, want,
                      tycho.stats().gpu_launches - s0, dt, fused_on_gpu and "" or ", NO fused launch on the GPU"))
end

-- one kernel instead of two, and the same bits as the unfused reduction on the GPU
do
  local a, b = mk()
  tycho.flush()
  local function run(extra)
    local s0 = tycho.stats().gpu_launches
    local t0 = tycho.clock()
    local v = on("gpu", function() return (a * b - a):sum():item() end, extra)
    return v, tycho.stats().gpu_launches - s0, tycho.clock() - t0
  end
  run({}) -- compile
  local vf, nf, tf = run({})
  local vu, nu, tu = run({fuse = false})
  check("fused reduce: fewer launches than unfused", nf < nu, string.format("%d vs %d launches; %.4f s vs %.4f s", nf, nu, tf, tu))
  check("fused reduce: the unfused GPU bits", vf == vu, string.format("%.17g vs %.17g", vf, vu))
  local v2 = run({})
  check("fused reduce: the same bits on a rerun", v2 == vf, string.format("%.17g vs %.17g", v2, vf))
end

-- batched matmul on the GPU (one cuBLAS gemm per matrix), integer matmul on the CPU
do
  local function bm() return tycho.matmul(tycho.linspace(-1, 1, 8 * M * 64):reshape({8, M, 64}),
                                          tycho.linspace(2, -2, 64 * 96):reshape({64, 96})) end
  local c = on("cpu", function() return bm():sum():item() end)
  local placed = false
  local g = on("gpu", function()
    local r = bm()
    tycho.flush()
    for _, e in ipairs(tycho.explain(1)) do if e.task == "matmul" and e.target == "gpu" then placed = true end end
    return r:sum():item()
  end)
  check("batched matmul f64 (8 x M x 64 @ 64 x 96)", close(g, c, 1e-9) and placed,
        string.format("gpu %.17g cpu %.17g%s", g, c, placed and "" or ", matmul NOT on the GPU"))
  local function im() local x = (tycho.arange(200 * 300) % 13):astype("i64"):reshape({200, 300}) return tycho.matmul(x, x:transpose()) end
  c = on("cpu", function() return im():sum():item() end)
  local why = false
  g = on("gpu", function()
    local r = im()
    tycho.flush()
    why = explain_has("cuBLAS multiplies f64 and f32 only")
    return r:sum():item()
  end)
  check("integer matmul: CPU values, explain says why", c == g and why,
        string.format("gpu %s cpu %s", g, c))
end

-- a streamed scope stages its element-wise chunks through the GPU: the CPU's
-- bits for element-wise work (max is exact), the CPU's values within 1e-12 for
-- the sum (the pieces change its order, docs/streaming.md), and explain says
-- what stayed on the CPU
do
  local function st(red) local a, b = mk() local v = a * b + 1 return red == "max" and v:max() or v:sum() end
  local budget = big and "64MB" or "1MB"
  for _, red in ipairs({"max", "sum"}) do
    local c = on("cpu", function() return st(red):item() end)
    local g = on("gpu", function() return st(red):item() end, {memory = budget})
    local ok = red == "max" and g == c or close(g, c, 1e-12)
    check("streamed scope (memory=" .. budget .. "): " .. red .. ", explained",
          ok and explain_has("in a streamed scope"), string.format("gpu %.17g cpu %.17g", g, c))
  end
end

-- device time in the trace: a "GPU 0 (device)" track with the pieces' durations
do
  local path = os.tmpname()
  tycho.trace_start(path)
  local v = on("gpu", function() local a, b = mk() return (a * b + 1):sum():item() end)
  tycho.trace_stop()
  local f = io.open(path)
  local text = f and f:read("a") or ""
  if f then f:close() end
  os.remove(path)
  local n, total = 0, 0
  for dur in text:gmatch('"cat":"gpu%-device","ph":"X","pid":1,"tid":%d+,"ts":[%d.]+,"dur":([%d.]+)') do
    n = n + 1
    total = total + tonumber(dur)
  end
  check("trace: device time per piece on \"GPU 0 (device)\"", v == v and n >= 1 and text:find('"GPU 0 (device)"', 1, true) ~= nil,
        string.format("%d pieces, %.1f us on the device", n, total))
end

print(bad == 0 and "  all GPU results agree with the CPU" or string.format("  %d WRONG", bad))
os.exit(bad == 0 and 0 or 1)
