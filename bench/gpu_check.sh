#!/usr/bin/env bash
# bench/gpu_check.sh — everything that needs an NVIDIA GPU, in one command
# (under 8 minutes on an H200 node with 16 cores):
#
#   1. configure and build with CUDA (nvcc: the embedded kernels, sm_90 + PTX);
#   2. check a GPU is usable (tycho_gpu_bench --probe: it says why not);
#   3. run the GPU tests (tests/c/test_gpu_*.c); on a GPU none may be skipped;
#   4. run the GPU benchmarks: device-to-device copy bandwidth (the roof),
#      STREAM triad, Black-Scholes 100M f32 and f64, the stencil at
#      N = 16384, a fused 8-op chain, each as bytes/s and as a fraction of
#      the copy bandwidth (target: fused chains >= 80%);
#   5. Black-Scholes with CuPy (unfused) and JAX (jit) on the same device,
#      when they are installed, and the ratios (targets: faster than CuPy,
#      within 1.2x of JAX);
#   6. GPU against CPU in the shell (tycho --gpus 1): fused runs that end
#      in a reduction (one kernel; the unfused bits), batched and integer
#      matmul, a streamed scope; any wrong value fails the script;
#   7. every Lua workload with --gpus 1 and with --gpus none: times and
#      checksums (they must agree).
#
# Usage: bench/gpu_check.sh [build-dir]     (default: build-gpu-check)
# Exit status: 0 all ran, 1 a step failed, 2 no usable GPU or no nvcc.
# Without a GPU it stops at step 2 with the reason; it never reports a
# benchmark it did not run.
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build-gpu-check}
JOBS=$(nproc 2>/dev/null || echo 4)
OUT=$BUILD/gpu_check
T0=$SECONDS

step() { printf '\n== %s  [%ds]\n' "$1" $((SECONDS - T0)); }
fail() { printf 'gpu_check: FAILED: %s\n' "$*" >&2; exit 1; }
nogpu() { printf 'gpu_check: NO GPU: %s\n' "$*" >&2; exit 2; }

mkdir -p "$OUT" || fail "cannot create $OUT"

step "machine"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=index,name,memory.total,driver_version,compute_cap --format=csv,noheader ||
    echo "nvidia-smi failed (no driver loaded?)"
else
  echo "nvidia-smi: not found"
fi
command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] || nogpu "nvcc not found (CUDA toolkit)"

step "configure ($BUILD)"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DTYCHO_CUDA=ON >"$OUT/configure.log" 2>&1 ||
  { tail -20 "$OUT/configure.log"; fail "cmake configure"; }
grep -E "tycho: (CUDA|nvcc)" "$OUT/configure.log" || true
grep -q "tycho: CUDA kernels with" "$OUT/configure.log" ||
  fail "the build does not include the CUDA kernels (runtime/src/cuda not wired into runtime/CMakeLists.txt, or nvcc not found)"

step "build (-j$JOBS)"
timeout 330 cmake --build "$BUILD" -j"$JOBS" >"$OUT/build.log" 2>&1 ||
  { grep -E "error|Error" "$OUT/build.log" | head -20; fail "build (log: $OUT/build.log)"; }
BENCH=$BUILD/runtime/src/cuda/tycho_gpu_bench
[ -x "$BENCH" ] || fail "no $BENCH"

step "probe"
"$BENCH" --probe
rc=$?
[ $rc -eq 3 ] && nogpu "tycho found no usable GPU (reason above)"
[ $rc -eq 0 ] || fail "probe (status $rc)"

step "GPU tests"
timeout 240 ctest --test-dir "$BUILD" -R '^c\.test_gpu_' -j4 --output-on-failure >"$OUT/ctest.log" 2>&1
rc=$?
grep -E "tests passed|Skipped|Failed|\*\*\*" "$OUT/ctest.log" | sed 's/^/  /'
[ $rc -eq 0 ] || fail "GPU tests (log: $OUT/ctest.log)"
if grep -q "(Skipped)" "$OUT/ctest.log"; then
  # on a GPU machine nothing may be skipped (a skip here hides a broken setup)
  grep -B2 "^skip:" "$OUT/ctest.log" | head -20
  fail "GPU tests were skipped although a GPU is present (is SKIP_RETURN_CODE 77 set? see above)"
fi

step "benchmarks"
timeout 240 "$BENCH" | tee "$OUT/bench.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || fail "benchmarks"

step "peers: CuPy (unfused) and JAX (jit), Black-Scholes 100M"
timeout 150 python3 - "$OUT/peers.txt" <<'PY' || echo "  peers did not run to the end"
import sys, time
out = open(sys.argv[1], "w")
N, R, V = 100_000_000, 0.02, 0.3
def line(s):
    print(s); out.write(s + "\n"); out.flush()
def best(f, sync, reps=5):
    f(); sync()
    b = 1e30
    for _ in range(reps):
        t = time.perf_counter(); r = f(); sync(r); b = min(b, time.perf_counter() - t)
    return b
def bs(xp, S, K, T):
    def cnd(d):
        A1, A2, A3, A4, A5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429
        k = 1.0 / (xp.abs(d) * 0.2316419 + 1.0)
        c = xp.exp(d * -0.5 * d) * 0.3989422804014327 * (k * (k * (k * (k * (k * A5 + A4) + A3) + A2) + A1))
        return xp.where(d > 0, 1.0 - c, c)
    sq = xp.sqrt(T)
    d1 = (xp.log(S / K) + T * (R + 0.5 * V * V)) / (sq * V)
    d2 = d1 - sq * V
    c1, c2 = cnd(d1), cnd(d2)
    ke = K * xp.exp(T * -R)
    return S * c1 - ke * c2, ke * (1.0 - c2) - S * (1.0 - c1)
try:
    import cupy as cp
    for dt in ("float32", "float64"):
        rs = cp.random.RandomState(42)
        S = (rs.random_sample(N) * 25 + 5).astype(dt); K = (rs.random_sample(N) * 99 + 1).astype(dt)
        T = (rs.random_sample(N) * 9.75 + 0.25).astype(dt)
        t = best(lambda: bs(cp, S, K, T), lambda r=None: cp.cuda.Device().synchronize())
        line("peer cupy black-scholes %s: %.6f s" % ("f32" if dt == "float32" else "f64", t))
        del S, K, T
        cp.get_default_memory_pool().free_all_blocks()
except Exception as e:
    line("peer cupy: not available (%s)" % e.__class__.__name__)
try:
    import jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    f = jax.jit(lambda S, K, T: bs(jnp, S, K, T))
    for dt in (jnp.float32, jnp.float64):
        k = jax.random.split(jax.random.PRNGKey(42), 3)
        S = jax.random.uniform(k[0], (N,), dtype=dt) * 25 + 5
        K = jax.random.uniform(k[1], (N,), dtype=dt) * 99 + 1
        T = jax.random.uniform(k[2], (N,), dtype=dt) * 9.75 + 0.25
        t = best(lambda: f(S, K, T), lambda r=None: jax.block_until_ready(r) if r is not None else None)
        line("peer jax black-scholes %s: %.6f s" % ("f32" if dt == jnp.float32 else "f64", t))
        del S, K, T
except Exception as e:
    line("peer jax: not available (%s)" % e.__class__.__name__)
PY
# ratios against tycho's fused kernel
for dt in f32 f64; do
  ours=$(sed -n "s/^bench black-scholes $dt n=100000000.*: \([0-9.]*\) s,.*/\1/p" "$OUT/bench.txt")
  for peer in cupy jax; do
    theirs=$(sed -n "s/^peer $peer black-scholes $dt: \([0-9.]*\) s/\1/p" "$OUT/peers.txt" 2>/dev/null)
    if [ -n "$ours" ] && [ -n "$theirs" ]; then
      awk -v o="$ours" -v t="$theirs" -v p="$peer" -v d="$dt" \
        'BEGIN { printf "ratio black-scholes %s: tycho %.4f s, %s %.4f s, tycho/%s = %.2f\n", d, o, p, t, p, o / t }'
    fi
  done
done

TYCHO=$BUILD/repl/tycho
step "GPU against CPU: fused reductions, batched/integer matmul, streamed scopes"
# (the same script runs on simulated GPUs with the argument 'small':
#  tycho --gpus sim:1 check.lua small)
cat >"$OUT/check.lua" <<'LUA'
-- GPU against CPU for what runs on GPUs since the first gpu_check (bench/gpu_check.sh):
-- fused runs ending in a reduction (one kernel), batched and integer matmul,
-- streamed scopes. Prints every case; exits 1 on a wrong value.
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

-- a streamed scope runs on the CPU, with the CPU's values, and says so
do
  local function st() local a, b = mk() return (a * b + 1):sum() end
  local c = on("cpu", function() return st():item() end)
  local budget = big and "64MB" or "1MB"
  local g = on("gpu", function() return st():item() end, {memory = budget})
  check("streamed scope (memory=" .. budget .. "): CPU values, explained",
        g == c and explain_has("a streamed scope (memory budget)"),
        string.format("%.17g vs %.17g", g, c))
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
LUA
timeout 300 "$TYCHO" --gpus 1 "$OUT/check.lua" 2>&1 | tee "$OUT/check.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || fail "GPU results differ from the CPU's, or the check did not finish (above; $OUT/check.txt)"

step "Lua workloads: --gpus 1 against the CPU (--gpus none), checksums must agree"
W=$ROOT/bench/workloads
# name, then arguments (sizes where the GPU should win); each run has a minute
while read -r name args; do
  [ -n "$name" ] || continue
  file=${name%%:*}
  for where in none 1; do
    # shellcheck disable=SC2086
    out=$(timeout 60 "$TYCHO" --gpus "$where" "$W/$file.lua" $args reps=3 2>&1)
    rc=$?
    best=$(printf '%s\n' "$out" | sed -n 's/^time: //p' | sort -g | head -1)
    sum=$(printf '%s\n' "$out" | sed -n 's/^checksum: //p')
    printf '  %-16s --gpus %-4s best %-10s checksum %s%s\n' "$name" "$where" "${best:--}" "${sum:--}" \
      "$([ $rc -ne 0 ] && echo " (exit $rc: $(printf '%s' "$out" | tail -1))")"
  done
done <<'LIST'
stream n=160000000
black_scholes:f32 n=100000000 dtype=f32
black_scholes:f64 n=100000000 dtype=f64
stencil n=16384 iters=10
jacobi n=8192 iters=20
cg n=2048 max_iters=100
logreg n=10000000 f=32 iters=5
kmeans n=10000000 k=10 iters=5
nearest n=16384 m=16384
overhead n=1000 loops=2000
select:mask op=mask n=10000000
shape n=10000000
LIST
echo "  (cuPyNumeric: run bench/run's Python peers under 'legate --gpus 1' where it is installed)"

printf '\ngpu_check: done in %ds (results in %s)\n' $((SECONDS - T0)) "$OUT"
