"""cg.py — the peers of cg.lua: CG on the matrix-free 2-D Laplacian.

    python3 cg.py lib=numpy|cupynumeric n=... tol=... max_iters=... check=... reps=...
"""
import math

from common import ALPHA, array_module, checksum, info, params, seq, timed

p = params({"n": 2048, "tol": 1e-8, "max_iters": 100, "check": 25, "reps": 5})
np = array_module(p["lib"])
N = p["n"]


def laplacian(v):
    Av = 4.0 * v
    Av[1:, :] -= v[:-1, :]
    Av[:-1, :] -= v[1:, :]
    Av[:, 1:] -= v[:, :-1]
    Av[:, :-1] -= v[:, 1:]
    return Av


def vdot(a, b):
    return (a * b).sum() if p["lib"] == "cupynumeric" else np.vdot(a, b)


b = seq(np, N * N, ALPHA[0], shape=(N, N)) - 0.5
bnorm = math.sqrt(float(vdot(b, b)))
state = {"iters": 0, "relres": 0.0}


def solve():
    x = np.zeros((N, N))
    r = b.copy()
    pp = r
    rsold = vdot(r, r)
    i = 0
    while i < p["max_iters"]:
        Ap = laplacian(pp)
        alpha = rsold / vdot(pp, Ap)
        x = x + alpha * pp
        r = r - alpha * Ap
        rsnew = vdot(r, r)
        i += 1
        if i % p["check"] == 0 or i == p["max_iters"]:
            state["relres"] = math.sqrt(float(rsnew)) / bnorm
            if state["relres"] < p["tol"]:
                break
        pp = r + (rsnew / rsold) * pp
        rsold = rsnew
    state["iters"] = i
    return x


timed(p["reps"], solve, lambda x: float(x[0, 0]))
info("iterations", state["iters"])
checksum(state["relres"])
