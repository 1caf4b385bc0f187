-- shape.lua — a scan and a join (issue 17 §2): c = cumsum(x) over a 2-D
-- array's rows (axis 2) and flat, then concatenate({x, c}).
--   tycho shape.lua n=10000000 reps=5
-- x is seq(n) as (rows, n / rows) with rows = 4: the row scans are long lines
-- (2.5M elements), cut into fixed 65536-element blocks and scanned in
-- parallel; the flat scan is one 10M line. Checksum: sum of the joined
-- store's last row and of the flat scan's last element.
local tycho = require "tycho"
local C = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local p = C.params { n = 10000000, reps = 5, rows = 4 }

local x = C.seq(p.n, C.ALPHA[1], "f64", { p.rows, p.n // p.rows })
C.sync(x)
local r = C.timed(p.reps, function()
  local c = tycho.cumsum(x, 2)
  local f = tycho.cumsum(x)
  return { tycho.concatenate({ x, c }, 1), f }
end, function(r) C.sync(r[1]); C.sync(r[2]) end)
C.checksum(r[1][{-1}]:sum():item() + r[2][-1])
