"""kmeans.py — the peers of kmeans.lua (cuNumeric's kmeans.py).

    python3 kmeans.py lib=numpy|cupynumeric|dask n=... k=... iters=... reps=...
"""
from common import ALPHA, array_module, checksum, dask_setup, params, seq, timed

p = params({"n": 10_000_000, "k": 10, "iters": 10, "reps": 5})
lib = p["lib"]
np = array_module(lib)
N, K, D = p["n"], p["k"], 2

data = np.zeros((N, D))
data[:, 0] = seq(np, N, ALPHA[0])
data[:, 1] = seq(np, N, ALPHA[1])
xp = np
if lib == "dask":
    import dask.array as da
    threads = dask_setup()
    data = da.from_array(data, chunks=(-(-N // (4 * threads)), D)).persist()
    xp = da
data_dots = xp.square(data).sum(axis=1)
if lib == "dask":
    data_dots = data_dots.persist()
state = {}


def kmeans():
    centroids = np.zeros((K, D))
    centroids[:, 0] = seq(np, K, ALPHA[3])
    centroids[:, 1] = seq(np, K, ALPHA[4])
    for _ in range(p["iters"]):
        centroid_dots = np.square(centroids).sum(axis=1)
        dist = data_dots[:, np.newaxis] + centroid_dots[np.newaxis, :] - 2.0 * data.dot(centroids.T)
        labels = xp.argmin(dist, axis=1)
        counts = xp.bincount(labels, minlength=K)
        new = [xp.bincount(labels, weights=data[:, d], minlength=K) for d in range(D)]
        dsum = xp.sum(xp.min(dist, axis=1))
        if lib == "dask":
            import dask
            counts, new, dsum = dask.compute(counts, new, dsum)
        for d in range(D):
            centroids[:, d] = new[d]
        counts = np.maximum(counts, np.ones((1,), dtype=np.uint64))
        centroids /= counts[:, np.newaxis]
    state["dsum"] = float(dsum)
    return centroids


c = timed(p["reps"], kmeans, lambda c: float(c[0, 0]))
checksum(float(c.sum()) + state["dsum"] / N)
