"""blas.py — the peers of blas.lua: numpy's matrix-vector and matrix-matrix
products (its OpenBLAS, its threads as it ships).

    python3 blas.py lib=numpy op=gemv|gemvt|gemm n=.. m=.. f=.. dtype=.. iters=.. reps=..

info: cpu_s= and cpu_steps=, the process's CPU seconds in a timed step (all
threads, median and each), as blas.lua's; OpenBLAS's threads count the time
they spin waiting for work. info: faults=, a timed step's page faults
(median), as blas.lua's.
"""
import os
import resource
import time

from common import ALPHA, array_module, checksum, info, params, seq, timed

p = params({"op": "gemv", "n": 4096, "m": 500000, "f": 32, "dtype": "f64", "iters": 10,
            "reps": 5})
np = array_module(p["lib"])
n, m, f, dt, iters = p["n"], p["m"], p["f"], p["dtype"], p["iters"]
if p["op"] == "gemv":
    M = seq(np, n * n, ALPHA[0], dt, shape=(n, n))
    x = seq(np, n, ALPHA[1], dt)

    def step():
        for _ in range(iters):
            y = M @ x
        return y
elif p["op"] == "gemvt":
    X = seq(np, m * f, ALPHA[0], dt, shape=(m, f))
    z = seq(np, m, ALPHA[1], dt)

    def step():
        for _ in range(iters):
            w = X.T @ z
        return w
elif p["op"] == "gemm":
    L = seq(np, n * n, ALPHA[0], dt, shape=(n, n))
    R = seq(np, n * n, ALPHA[1], dt, shape=(n, n))
    step = lambda: L @ R
else:
    raise SystemExit(f"bench: op is gemv, gemvt or gemm, got {p['op']}")
cpus, faults = [], []


def cpu_step(run=step):
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    c0 = time.process_time()
    y = run()
    cpus.append(time.process_time() - c0)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    return y


r = timed(p["reps"], cpu_step, lambda r: float(r.flat[0]))
if os.environ.get("BENCH_WARMUP") != "0":
    cpus, faults = cpus[1:], faults[1:]
info("cpu_steps", ",".join(f"{c:.3f}" for c in cpus))
info("cpu_s", f"{sorted(cpus)[(len(cpus) - 1) // 2]:.3f}")
info("faults", sorted(faults)[(len(faults) - 1) // 2])
checksum(float(r.astype(np.float64).sum()))
