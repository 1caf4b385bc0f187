-- nearest.lua — nearest neighbour by pairwise min: for each of n points a_i,
-- the distance to the nearest of m points b_j, min_j |a_i - b_j|, written
-- the natural way: an n x m matrix of distances, then a min over axis 2.
-- The matrix is n*m*8 bytes (and a second one for abs): the size has to fit
-- in memory until the streaming issue lands.
--   tycho nearest.lua n=16384 m=16384 reps=5
-- a = seq(n, ALPHA[1]), b = seq(m, ALPHA[2]). Checksum: sum of the minima.
local tycho = require "tycho"
local C = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local p = C.params { n = 16384, m = 16384, reps = 5 }

local a, b = C.seq(p.n, C.ALPHA[1]), C.seq(p.m, C.ALPHA[2])
C.sync(b)
local d = C.timed(p.reps, function()
  return tycho.min(tycho.abs(a:expand(2) - b:expand(1)), 2)
end, C.sync)
C.checksum(d:sum():item())
