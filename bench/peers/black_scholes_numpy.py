"""black_scholes_numpy.py — the numpy peer of bench/blackscholes.

    /usr/bin/python3 bench/peers/black_scholes_numpy.py [N] [iterations]

The formula of cuNumeric's examples/black_scholes.py (Abramowitz-Stegun
cumulative normal, np.where for negative d), written with whole-array numpy
operations as a numpy user would; the inputs are the deterministic sequence
shared by all peers (see bench/black_scholes.lua), so checksums agree.

Prints "time: <best of iterations> s" and "checksum: <sum(call)+sum(put)>".
"""
import sys
import time

import numpy as np

R, V = 0.02, 0.3
ALPHA_S, ALPHA_K, ALPHA_T = 0.6180339887498949, 0.7548776662466927, 0.5698402909980532


def frac(x):
    return x - np.floor(x)


def cnd(d):
    A1, A2, A3, A4, A5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429
    RSQRT2PI = 0.39894228040143267793994605993438
    k = 1.0 / (np.absolute(d) * 0.2316419 + 1.0)
    c = np.exp(d * -0.5 * d) * RSQRT2PI * (k * (k * (k * (k * (k * A5 + A4) + A3) + A2) + A1))
    return np.where(d > 0, 1.0 - c, c)


def black_scholes(S, K, T):
    sqrt_t = np.sqrt(T)
    d1 = (np.log(S / K) + T * (R + 0.5 * V * V)) / (sqrt_t * V)
    d2 = d1 - sqrt_t * V
    cnd_d1, cnd_d2 = cnd(d1), cnd(d2)
    k_exp_rt = K * np.exp(T * -R)
    call = S * cnd_d1 - k_exp_rt * cnd_d2
    put = k_exp_rt * (1.0 - cnd_d2) - S * (1.0 - cnd_d1)
    return call, put


def main():
    n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 10_000_000
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    u = np.arange(n) + 0.5
    S = frac(u * ALPHA_S) * 25.0 + 5.0
    K = frac(u * ALPHA_K) * 99.0 + 1.0
    T = frac(u * ALPHA_T) * 9.75 + 0.25
    best = float("inf")
    for _ in range(iterations):
        call = put = None  # free the previous results before timing
        t0 = time.perf_counter()
        call, put = black_scholes(S, K, T)
        best = min(best, time.perf_counter() - t0)
    checksum = float(call.sum()) + float(put.sum())
    print(f"black_scholes_numpy: {n} options, f64, numpy {np.__version__}")
    print(f"time: {best:.6f} s (best of {iterations})")
    print(f"options/s: {n / best:.4g}")
    print(f"checksum: {checksum:.17g}")


if __name__ == "__main__":
    main()
