"""fusion_numpy.py — the numpy and numexpr peers of bench/fusion.

    /usr/bin/python3 bench/fusion_numpy.py numexpr-bs N ITERS THREADS
    /usr/bin/python3 bench/fusion_numpy.py small ITERS

numexpr-bs: Black-Scholes on bench/black_scholes.lua's deterministic inputs,
written with numexpr (python3-numexpr), which compiles each expression to a
blocked virtual machine over THREADS threads: the closest thing to tycho's
fused interpreter in the Python world. Prints "time: <best> s" and
"checksum: <sum(call) + sum(put)>".

small: 10 element-wise operations on 1,000 f64 elements per iteration, as
bench/fusion.lua's `small`; prints "time: <per operation> s".

(numpy's own Black-Scholes peer is bench/peers/black_scholes_numpy.py.)
"""
import sys
import time

import numpy as np

R, V = 0.02, 0.3
ALPHA_S, ALPHA_K, ALPHA_T = 0.6180339887498949, 0.7548776662466927, 0.5698402909980532
CONST = dict(A1=0.31938153, A2=-0.356563782, A3=1.781477937, A4=-1.821255978,
             A5=1.330274429, RS=0.39894228040143267793994605993438, R=R, V=V)


def inputs(n):
    u = np.arange(n) + 0.5

    def frac(x):
        return x - np.floor(x)

    return (frac(u * ALPHA_S) * 25.0 + 5.0, frac(u * ALPHA_K) * 99.0 + 1.0,
            frac(u * ALPHA_T) * 9.75 + 0.25)


def numexpr_bs(n, iters, threads):
    import numexpr as ne
    ne.set_num_threads(threads)
    S, K, T = inputs(n)
    c = CONST

    def cnd(d):
        k = ne.evaluate("1.0 / (abs(d) * 0.2316419 + 1.0)")
        return ne.evaluate("where(d > 0, 1.0 - e, e)", local_dict={
            "d": d, "e": ne.evaluate(
                "exp(d * -0.5 * d) * RS * (k * (k * (k * (k * (k * A5 + A4) + A3) + A2) + A1))",
                local_dict=dict(c, d=d, k=k))})

    best = float("inf")
    call = put = None
    for _ in range(iters):
        call = put = None
        t0 = time.perf_counter()
        d1 = ne.evaluate("(log(S / K) + T * (R + 0.5 * V * V)) / (sqrt(T) * V)", local_dict=dict(c, S=S, K=K, T=T))
        d2 = ne.evaluate("d1 - sqrt(T) * V", local_dict=dict(c, d1=d1, T=T))
        c1, c2 = cnd(d1), cnd(d2)
        ker = ne.evaluate("K * exp(T * -R)", local_dict=dict(c, K=K, T=T))
        call = ne.evaluate("S * c1 - ker * c2")
        put = ne.evaluate("ker * (1.0 - c2) - S * (1.0 - c1)")
        best = min(best, time.perf_counter() - t0)
    print(f"numexpr_bs: {n} options, {threads} threads, numexpr {ne.__version__}")
    print(f"time: {best:.6f} s (best of {iters})")
    print(f"checksum: {float(call.sum()) + float(put.sum()):.17g}")


def small(iters):
    rng = np.random.default_rng(1)
    a, b = rng.random(1000), rng.random(1000)
    reps = 2000
    best = float("inf")
    y = None
    for _ in range(iters):
        t0 = time.perf_counter()
        for _ in range(reps):
            x = a * 1.0001 + b
            x = x * x - a
            x = x / (b + 1)
            x = np.exp(x * 0.1) + 1
            y = x * 2 - a  # 10 operations
        best = min(best, time.perf_counter() - t0)
    print(f"small: 10 ops on 1000 f64, numpy {np.__version__}")
    print(f"time: {best / (reps * 10):.9f} s (per operation, best of {iters})")
    print(f"checksum: {float(y.sum()):.17g}")


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "numexpr-bs":
        numexpr_bs(int(float(sys.argv[2])), int(sys.argv[3]), int(sys.argv[4]))
    elif what == "small":
        small(int(sys.argv[2]) if len(sys.argv) > 2 else 3)
    else:
        sys.exit("usage: fusion_numpy.py numexpr-bs N ITERS THREADS | small [ITERS]")


if __name__ == "__main__":
    main()
