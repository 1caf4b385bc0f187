"""jacobi.py — the peers of jacobi.lua (cuNumeric's jacobi.py).

    python3 jacobi.py lib=numpy|cupynumeric|dask n=... iters=... reps=...

numpy and cupynumeric: info: cpu_s=, cpu_steps=, faults=, prod_s= and
of_prod=, as jacobi.lua's (`iters` products np.dot(R, x0) timed right after
each step, untimed).
"""
import os
import resource
import time

from common import ALPHA, array_module, checksum, dask_setup, info, params, seq, timed

p = params({"n": 8192, "iters": 50, "reps": 5})
lib = p["lib"]
np = array_module(lib)
N = p["n"]

A = seq(np, N * N, ALPHA[0], shape=(N, N))
A = A + N * np.eye(N)
b = seq(np, N, ALPHA[1])
d = np.diag(A)
R = A - np.diag(d)
del A

if lib == "dask":
    import dask.array as da
    threads = dask_setup()
    R = da.from_array(R, chunks=(-(-N // (2 * threads)), N)).persist()
    b, d = da.from_array(b), da.from_array(d)

    def step():
        x = da.zeros(N)
        for _ in range(p["iters"]):
            x = ((b - R.dot(x)) / d).persist()
        return x
    finish = lambda x: None  # noqa: E731
    x = timed(p["reps"], step, finish)
else:
    x0 = seq(np, N, ALPHA[2])

    def step():
        x = np.zeros(N)
        for _ in range(p["iters"]):
            x = (b - np.dot(R, x)) / d
        return x

    def products():
        for _ in range(p["iters"]):
            y = np.dot(R, x0)
        return y

    # common.timed's protocol, with each step's CPU time and faults, and
    # `iters` products timed after it (untimed)
    times, cpus, faults, prods = [], [], [], []
    warm = 1 if os.environ.get("BENCH_WARMUP") != "0" else 0
    for i in range(p["reps"] + warm):
        x = None
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0, c0 = time.perf_counter(), time.process_time()
        x = step()
        float(x[0])
        t, c = time.perf_counter() - t0, time.process_time() - c0
        f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t1 = time.perf_counter()
        float(products()[0])
        if i >= warm:
            times.append(t)
            cpus.append(c)
            faults.append(f1 - f0)
            prods.append(time.perf_counter() - t1)
            print(f"time: {t:.9f}", flush=True)
    med = lambda v: sorted(v)[(len(v) - 1) // 2]  # noqa: E731
    info("cpu_steps", ",".join(f"{c:.3f}" for c in cpus))
    info("cpu_s", f"{med(cpus):.3f}")
    info("faults", med(faults))
    info("prod_s", f"{med(prods):.3f}")
    info("of_prod", f"{med(times) / med(prods):.2f}")
checksum(float(x.sum()))
