-- kmeans.lua — k-means (cuNumeric's kmeans.py): n points in 2-D, k
-- centroids; each iteration: squared distances by ||x||^2 + ||c||^2 - 2 x.c
-- (a matrix product), labels = argmin, new centroids = bincount of the
-- labels weighted by each coordinate / counts.
--   tycho kmeans.lua n=10000000 k=10 iters=10 reps=5
-- Points: (seq(ALPHA[1]), seq(ALPHA[2])); first centroids: (seq(ALPHA[4]),
-- seq(ALPHA[5])) over k. One timed step = `iters` iterations from the first
-- centroids. Checksum: sum of the centroids + the last distance sum / n.
local tycho = require "tycho"
local C = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local p = C.params { n = 10000000, k = 10, iters = 10, reps = 5 }
local N, K, D = p.n, p.k, 2

local data = tycho.zeros({ N, D })
data[{ {}, 1 }] = C.seq(N, C.ALPHA[1])
data[{ {}, 2 }] = C.seq(N, C.ALPHA[2])
local data_dots = (data * data):sum(2)
C.sync(data_dots)
local distance_sum = 0

local function kmeans()
  local centroids = tycho.zeros({ K, D })
  centroids[{ {}, 1 }] = C.seq(K, C.ALPHA[4])
  centroids[{ {}, 2 }] = C.seq(K, C.ALPHA[5])
  local dsum
  for _ = 1, p.iters do
    local centroid_dots = (centroids * centroids):sum(2)
    local dist = data_dots:expand(2) + centroid_dots:expand(1) - data:dot(centroids:t()) * 2.0
    local labels = dist:argmin(2) - 1                   -- argmin is 1-based; values from 0
    local counts = tycho.bincount(labels, { minlength = K })
    for d = 1, D do
      centroids[{ {}, d }] = tycho.bincount(labels, data[{ {}, d }], { minlength = K })
    end
    dsum = dist:min(2):sum()
    counts = tycho.maximum(counts, 1)
    centroids = centroids / counts:expand(2)
  end
  distance_sum = dsum
  return centroids
end

local c = C.timed(p.reps, kmeans, C.sync)
C.checksum(c:sum():item() + distance_sum:item() / N)
