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
#      checksums (within 1e-3 relative, or the step fails: float sums differ
#      in their last digits, logreg f32 by 6e-4); with GPU_CHECK_BUDGET=S set, the runs
#      that would start S seconds after the script did are skipped (and
#      listed as skipped), for a machine lent for a fixed time;
#   8. the gpu-sim specs (examples, determinism, views, hazards, args,
#      mask, shape, scatter) with TYCHO_TARGET=gpu on the real GPU: they
#      assert numpy's and the CPU's values (busted: the system's, or the
#      bundle's); a failing case fails the script.
#
# GPU_CHECK_KEEP_GOING=1: a failed step 3-6 or 8 does not stop the script; the
# failures are listed at the end (exit 1).
#
# Usage: bench/gpu_check.sh [--prebuilt] [build-dir]   (default: build-gpu-check)
#   --prebuilt  the build dir was made elsewhere by bench/gpu_bundle.sh (a
#               machine without tycho's Debian packages, such as a lent GPU
#               node): skip configure and build, load the libraries the
#               bundle carries (build-dir/libs) for tycho's programs only.
# Exit status: 0 all ran, 1 a step failed, 2 no usable GPU or no nvcc.
# Without a GPU it stops at step 2 with the reason; it never reports a
# benchmark it did not run.
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PREBUILT=0
if [ "${1:-}" = "--prebuilt" ]; then PREBUILT=1; shift; fi
BUILD=${1:-$ROOT/build-gpu-check}
# the peers (python3) run with the loader path as it was, never the bundle's
PY_LD_LIBRARY_PATH=${LD_LIBRARY_PATH-}
JOBS=$(nproc 2>/dev/null || echo 4)
OUT=$BUILD/gpu_check
T0=$SECONDS

step() { printf '\n== %s  [%ds]\n' "$1" $((SECONDS - T0)); }
fail() { printf 'gpu_check: FAILED: %s\n' "$*" >&2; exit 1; }
# a failed check (tests, benchmarks, GPU against CPU): stop, or with
# GPU_CHECK_KEEP_GOING=1 (a machine lent once) go on and exit 1 at the end
FAILED=()
check_failed() {
  printf 'gpu_check: FAILED: %s\n' "$*" >&2
  [ "${GPU_CHECK_KEEP_GOING:-0}" = 1 ] || exit 1
  FAILED+=("$*")
}
nogpu() { printf 'gpu_check: NO GPU: %s\n' "$*" >&2; exit 2; }

mkdir -p "$OUT" || fail "cannot create $OUT"

step "machine"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=index,name,memory.total,driver_version,compute_cap --format=csv,noheader ||
    echo "nvidia-smi failed (no driver loaded?)"
else
  echo "nvidia-smi: not found"
fi
if [ $PREBUILT = 1 ]; then
  step "prebuilt ($BUILD)"
  [ -f "$BUILD/CMakeCache.txt" ] || fail "--prebuilt: no build in $BUILD (make one with bench/gpu_bundle.sh)"
  grep -q '^TYCHO_NVCC:FILEPATH=/' "$BUILD/CMakeCache.txt" ||
    fail "--prebuilt: $BUILD was built without the CUDA kernels (no nvcc where it was built?)"
  if [ -d "$BUILD/libs" ]; then
    # the bundle's libraries stand in only for those this machine lacks
    rm -rf "$BUILD/libs.use" && mkdir -p "$BUILD/libs.use"
    for f in "$BUILD"/libs/*; do
      n=$(basename "$f")
      ldconfig -p 2>/dev/null | grep -qF "$n (" && continue
      ln -s "$f" "$BUILD/libs.use/$n" && echo "  from the bundle: $n"
    done
    export LD_LIBRARY_PATH=$BUILD/libs.use${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  fi
  # NVRTC and cuBLAS are opened by name: where the loader does not know the
  # toolkit's folders, point it at the first one that holds them
  for lib in libnvrtc.so.13 libcublas.so.13; do
    ldconfig -p 2>/dev/null | grep -q "$lib" && continue
    found=$(ls /usr/local/cuda/lib64/$lib /usr/local/cuda/targets/x86_64-linux/lib/$lib \
              /usr/local/cuda-*/lib64/$lib /usr/lib/x86_64-linux-gnu/$lib \
              /usr/local/lib/python3*/dist-packages/nvidia/*/lib/$lib \
              /opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib/$lib \
              /opt/*/.venv/lib/python3*/site-packages/nvidia/cu*/lib/$lib 2>/dev/null | head -1)
    if [ -n "$found" ]; then
      echo "  $lib: $found"
      export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$found")
    else
      echo "  $lib: not found on this machine"
    fi
  done
  "$BUILD/repl/tycho" --version ||
    { ldd "$BUILD/repl/tycho" | grep -i "not found"; fail "the prebuilt tycho does not start here (the missing libraries above)"; }
else
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
fi
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
[ $rc -eq 0 ] || check_failed "GPU tests (log: $OUT/ctest.log)"
if grep -q "(Skipped)" "$OUT/ctest.log"; then
  # on a GPU machine nothing may be skipped (a skip here hides a broken setup)
  grep -B2 "^skip:" "$OUT/ctest.log" | head -20
  check_failed "GPU tests were skipped although a GPU is present (is SKIP_RETURN_CODE 77 set? see above)"
fi

step "benchmarks"
timeout 240 "$BENCH" | tee "$OUT/bench.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || check_failed "benchmarks"

step "peers: CuPy (unfused) and JAX (jit), Black-Scholes 100M"
LD_LIBRARY_PATH=$PY_LD_LIBRARY_PATH timeout 150 python3 - "$OUT/peers.txt" <<'PY' || echo "  peers did not run to the end"
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
# (bench/gpu_check.lua; the same script runs on simulated GPUs with the
#  argument 'small' in ctest: gpu-sim.check)
timeout 300 "$TYCHO" --gpus 1 "$ROOT/bench/gpu_check.lua" 2>&1 | tee "$OUT/check.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || check_failed "GPU results differ from the CPU's, or the check did not finish (above; $OUT/check.txt)"

step "Lua workloads: --gpus 1 against the CPU (--gpus none), checksums must agree"
W=$ROOT/bench/workloads
# name, then arguments (sizes where the GPU should win); each run has a minute
while read -r name args; do
  [ -n "$name" ] || continue
  file=${name%%:*}
  for where in none 1; do
    if [ -n "${GPU_CHECK_BUDGET:-}" ] && [ $((SECONDS - T0)) -gt "$GPU_CHECK_BUDGET" ]; then
      printf '  %-16s --gpus %-4s skipped: past GPU_CHECK_BUDGET (%ss)\n' "$name" "$where" "$GPU_CHECK_BUDGET"
      continue
    fi
    # shellcheck disable=SC2086
    out=$(timeout 60 "$TYCHO" --gpus "$where" "$W/$file.lua" $args reps=3 2>&1)
    rc=$?
    best=$(printf '%s\n' "$out" | sed -n 's/^time: //p' | sort -g | head -1)
    sum=$(printf '%s\n' "$out" | sed -n 's/^checksum: //p')
    # the GPU's checksum against the CPU's: float sums may differ in their
    # last digits (docs/gpu.md); beyond 1e-3 relative it is a wrong value
    diff=""
    if [ "$where" = 1 ] && [ -n "$sum" ] && [ -n "${cpu_sum:-}" ]; then
      diff=$(awk -v g="$sum" -v c="$cpu_sum" 'BEGIN {
        d = g - c; if (d < 0) d = -d; m = c < 0 ? -c : c
        r = m > 0 ? d / m : d; printf " (rel. diff %.1e%s)", r, (r > 1e-3) ? ": DIFFERS" : "" }')
    fi
    [ "$where" = none ] && cpu_sum=$sum
    printf '  %-16s --gpus %-4s best %-10s checksum %s%s%s\n' "$name" "$where" "${best:--}" "${sum:--}" "$diff" \
      "$([ $rc -ne 0 ] && echo " (exit $rc: $(printf '%s' "$out" | tail -1))")"
    case $diff in *DIFFERS*) check_failed "workload $name: the GPU's checksum differs from the CPU's" ;; esac
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

step "specs on the GPU: the gpu-sim specs with every launch that has a GPU kernel sent to it"
# ctest -L gpu-sim runs these on simulated GPUs; here on the real one
# (TYCHO_TARGET=gpu): they assert numpy's and the CPU's values
if [ -f "$BUILD/lua-deps/busted" ]; then
  BUSTED=$BUILD/lua-deps/busted
  export LUA_PATH="$BUILD/lua-deps/share/?.lua;$BUILD/lua-deps/share/?/init.lua;;"
  export LUA_CPATH="$BUILD/lua-deps/lib/?.so;;"
else
  BUSTED=$(command -v busted || true)
fi
if [ -z "$BUSTED" ]; then
  echo "  skipped: no busted (apt-get install lua-busted, or bench/gpu_bundle.sh)"
else
  for spec in examples determinism views hazards args mask shape scatter; do
    if [ -n "${GPU_CHECK_BUDGET:-}" ] && [ $((SECONDS - T0)) -gt "$GPU_CHECK_BUDGET" ]; then
      printf '  %-12s skipped: past GPU_CHECK_BUDGET (%ss)\n' "$spec" "$GPU_CHECK_BUDGET"
      continue
    fi
    t0=$SECONDS
    (cd "$BUILD" && TYCHO_GPUS=1 TYCHO_TARGET=gpu TYCHO_BIN=$TYCHO TYCHO_MODULE_DIR=$BUILD/lua \
       TYCHO_SOURCE_DIR=$ROOT TYCHO_BUILD_DIR=$BUILD timeout 300 "$TYCHO" "$BUSTED" \
       --helper="$ROOT/tests/spec/helper.lua" --output=TAP "$ROOT/tests/spec/${spec}_spec.lua") \
      >"$OUT/spec_$spec.tap" 2>&1
    rc=$?
    ok=$(grep -c '^ok ' "$OUT/spec_$spec.tap")
    bad=$(grep -c '^not ok ' "$OUT/spec_$spec.tap")
    printf '  %-12s %3d ok, %d not ok (%ds)\n' "$spec" "$ok" "$bad" $((SECONDS - t0))
    if [ $rc -ne 0 ] || [ "$bad" -ne 0 ] || [ "$ok" -eq 0 ]; then
      grep -A8 '^not ok ' "$OUT/spec_$spec.tap" | head -40 | sed 's/^/    /'
      check_failed "spec $spec on the GPU (exit $rc; $OUT/spec_$spec.tap)"
    fi
  done
fi

printf '\ngpu_check: done in %ds (results in %s)\n' $((SECONDS - T0)) "$OUT"
if [ ${#FAILED[@]} -gt 0 ]; then
  printf 'gpu_check: %d check(s) FAILED:\n' ${#FAILED[@]}
  printf '  %s\n' "${FAILED[@]}"
  exit 1
fi
