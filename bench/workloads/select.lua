-- select.lua — selection by data: boolean-mask compaction x[x < 0.5], a
-- mask assignment y[x < 0.5] = 0, a random gather x[idx], a random scatter
-- y[idx] = v, a sort and an argsort, on 10M f64 (issue 17 §2).
--   tycho select.lua op=mask|maskassign|gather|scatter|sort|argsort n=10000000 reps=5
-- Inputs: x = seq(n, ALPHA[1]); idx = floor(seq(n, ALPHA[2]) * n) + 1
-- (tycho's positions are 1-based; the peers use the same positions - 1);
-- v = seq(n, ALPHA[4]); y starts as a copy of x and is written in place by
-- every step (the same values each time: of repeated positions the last
-- write wins, in tycho, numpy and the C loop alike).
-- Checksums: sum(x[mask]); sum(y); sum(x[idx]); sum(y); sum of every 1000th
-- sorted value; the same through x[argsort(x)].
local tycho = require "tycho"
local C = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local p = C.params { op = "mask", n = 10000000, reps = 5 }
local x = C.seq(p.n, C.ALPHA[1])
local step, check
if p.op == "mask" then
  step = function() return x[x:lt(0.5)] end
  check = function(r) return r:sum():item() end
elseif p.op == "maskassign" then
  local y = x:copy()
  C.sync(y)
  step = function()
    y[x:lt(0.5)] = 0
    return y
  end
  check = function(r) return r:sum():item() end
elseif p.op == "gather" then
  local idx = (C.seq(p.n, C.ALPHA[2]) * p.n):floor():astype("i64") + 1
  C.sync(idx)
  step = function() return x[idx] end
  check = function(r) return r:sum():item() end
elseif p.op == "scatter" then
  local idx = (C.seq(p.n, C.ALPHA[2]) * p.n):floor():astype("i64") + 1
  local v, y = C.seq(p.n, C.ALPHA[4]), x:copy()
  C.sync(idx)
  C.sync(v)
  C.sync(y)
  step = function()
    y[idx] = v
    return y
  end
  check = function(r) return r:sum():item() end
elseif p.op == "sort" then
  step = function() return tycho.sort(x) end
  check = function(r) return r[{ { 1, -1, 1000 } }]:sum():item() end
elseif p.op == "argsort" then
  step = function() return tycho.argsort(x) end
  check = function(r) return x[r[{ { 1, -1, 1000 } }]]:sum():item() end
else
  error("bench: op is mask, maskassign, gather, scatter, sort or argsort, got " .. tostring(p.op), 0)
end
C.sync(x)
local r = C.timed(p.reps, step, C.sync)
C.checksum(check(r))
