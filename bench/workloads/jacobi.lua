-- jacobi.lua — Jacobi iteration on a dense, diagonally dominant n x n system
-- (cuNumeric's jacobi.py): A = seq + n * I, b = seq; d = diag(A),
-- R = A - diag(d); x <- (b - R x) / d.
--   tycho jacobi.lua n=8192 iters=50 reps=5
-- One timed step = `iters` iterations from x = 0. Checksum: sum(x).
local tycho = require "tycho"
local C = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local p = C.params { n = 8192, iters = 50, reps = 5 }
local N = p.n

local A = C.seq(N * N, C.ALPHA[1], "f64", { N, N })
local diag = A:diagonal()
diag[{}] = diag + N                      -- A + N * eye(N)
local b = C.seq(N, C.ALPHA[2])
local d = A:diagonal():copy()
local R = A:copy()
R:diagonal():fill(0)                     -- A - diag(d)
A = nil
C.sync(R)

local x = C.timed(p.reps, function()
  local x = tycho.zeros(N)
  for _ = 1, p.iters do x = (b - R:dot(x)) / d end
  return x
end, C.sync)
C.checksum(x:sum():item())
