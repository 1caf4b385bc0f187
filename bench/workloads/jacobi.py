"""jacobi.py — the peers of jacobi.lua (cuNumeric's jacobi.py).

    python3 jacobi.py lib=numpy|cupynumeric|dask n=... iters=... reps=...
"""
from common import ALPHA, array_module, checksum, dask_setup, params, seq, timed

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
else:
    def step():
        x = np.zeros(N)
        for _ in range(p["iters"]):
            x = (b - np.dot(R, x)) / d
        return x
    finish = lambda x: float(x[0])  # noqa: E731

x = timed(p["reps"], step, finish)
checksum(float(x.sum()))
