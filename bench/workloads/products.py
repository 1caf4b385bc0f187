"""products.py — the peers of products.lua: np.matmul on a stack, np.einsum,
and convolution (np.convolve in 1-D; in 2-D numpy has none, so the direct
sum of shifted slices a numpy program writes without scipy).

    python3 products.py lib=numpy op=bmm|einsum|conv2d|conv1d b=.. h=.. n=.. d=.. k=.. reps=..
"""
from common import ALPHA, array_module, checksum, params, seq, timed

p = params({"op": "bmm", "b": 64, "h": 8, "n": 256, "d": 64, "k": 5, "reps": 5})
np = array_module(p["lib"])
b, h, n, d, k = p["b"], p["h"], p["n"], p["d"], p["k"]
if p["op"] == "bmm":
    x = seq(np, b * n * n, ALPHA[0], shape=(b, n, n))
    w = seq(np, n * n, ALPHA[1], shape=(n, n))
    step = lambda: np.matmul(x, w)
elif p["op"] == "einsum":
    q = seq(np, b * h * n * d, ALPHA[0], shape=(b, h, n, d))
    kk = seq(np, b * h * n * d, ALPHA[1], shape=(b, h, n, d))
    step = lambda: np.einsum("bhqd,bhkd->bhqk", q, kk)
elif p["op"] == "conv2d":
    img = seq(np, n * n, ALPHA[0], shape=(n, n))
    ker = seq(np, k * k, ALPHA[1], shape=(k, k))
    w = ker[::-1, ::-1]
    left = k // 2
    padded = np.pad(img, ((left, k - 1 - left), (left, k - 1 - left)))

    def step():
        out = np.zeros((n, n))
        for i in range(k):
            for j in range(k):
                out += w[i, j] * padded[i:i + n, j:j + n]
        return out
elif p["op"] == "conv1d":
    x, ker = seq(np, n, ALPHA[0]), seq(np, k, ALPHA[1])
    step = lambda: np.convolve(x, ker, "same")
else:
    raise SystemExit(f"bench: op is bmm, einsum, conv2d or conv1d, got {p['op']}")
r = timed(p["reps"], step, lambda r: float(r.flat[0]))
checksum(float(r.sum()))
