"""linalg.py — the peers of linalg.lua: numpy.linalg.solve / cholesky of a
n x n symmetric positive definite matrix (S + S^T) / 2 + n I.

    python3 linalg.py lib=numpy|cupynumeric op=solve|cholesky n=4096 reps=5
"""
from common import ALPHA, array_module, checksum, params, seq, timed

p = params({"op": "solve", "n": 4096, "reps": 5})
np = array_module(p["lib"])
N = p["n"]

S = seq(np, N * N, ALPHA[0], shape=(N, N))
a = (S + S.T) * 0.5 + np.eye(N) * N
b = seq(np, N, ALPHA[1])

if p["op"] == "solve":
    def step():
        return np.linalg.solve(a, b)
elif p["op"] == "cholesky":
    def step():
        return np.linalg.cholesky(a)
else:
    raise SystemExit(f"linalg.py: op is solve or cholesky, got {p['op']}")

r = timed(p["reps"], step, lambda x: float(x.flat[0]))
checksum(float(r.sum()))
