-- logreg.lua — logistic regression by gradient descent (cuNumeric's
-- logreg.py): X is n x f (seq - 0.5), y in {0, 1} (floor(2 seq)), w from 0;
-- each iteration: p = sigmoid(X w), w += lr * (y - p) X.
--   tycho logreg.lua n=10000000 f=32 dtype=f32 iters=10 reps=5
-- One timed step = `iters` iterations from w = 0. Checksum: sum(w).
local tycho = require "tycho"
local C = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local p = C.params { n = 10000000, f = 32, dtype = "f32", iters = 10, reps = 5 }
local lr = 1e-5

local X = (C.seq(p.n * p.f, C.ALPHA[1], "f64", { p.n, p.f }) - 0.5):astype(p.dtype)
local y = tycho.floor(C.seq(p.n, C.ALPHA[2]) * 2.0):astype(p.dtype)
C.sync(X)

local w = C.timed(p.reps, function()
  local w = tycho.zeros(p.f, p.dtype)
  for _ = 1, p.iters do
    local scores = X:dot(w)
    local predictions = 1.0 / (1.0 + tycho.exp(-scores))
    local err = y - predictions
    w = w + lr * err:dot(X)
  end
  return w
end, C.sync)
C.checksum(w:astype("f64"):sum():item())
