-- linalg.lua — dense factorisations through LAPACK (issue 18): solve a @ x = b
-- or the Cholesky factor of a, a n x n symmetric positive definite matrix:
-- a = (S + S^T) / 2 + n I with S = seq(n*n) (diagonally dominant).
--   tycho linalg.lua op=solve|cholesky n=4096 reps=5
-- Checksum: sum(x) (solve) or sum(L) (cholesky). One lone matrix: LAPACK
-- runs on --cpus OpenBLAS threads (tycho/linalg.h).
local tycho = require "tycho"
local C = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local p = C.params { op = "solve", n = 4096, reps = 5 }
local N = p.n

local S = C.seq(N * N, C.ALPHA[1], "f64", { N, N })
local a = (S + S:t()) * 0.5 + tycho.eye(N) * N
local b = C.seq(N, C.ALPHA[2])
tycho.flush()

local step
if p.op == "solve" then
  step = function() return tycho.linalg.solve(a, b) end
elseif p.op == "cholesky" then
  step = function() return tycho.linalg.cholesky(a) end
else
  error("linalg.lua: op is solve or cholesky, got " .. tostring(p.op), 0)
end

local r = C.timed(p.reps, step, C.sync)
C.checksum(r:sum():item())
