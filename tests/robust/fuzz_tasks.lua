--[[
fuzz_tasks.lua — the user tasks the API fuzzer calls (fuzz_gen.lua's G.task):
returns them as a table (FZ). Bodies work for stores of any rank: 1-D
through ctx.lo..ctx.hi and x[i], 0-d and rank > 1 through get/set.
  fz_axpy(x, nil, s) -> x * s + 1 (f64)   pointwise, so it fuses
  fz_inc(x, s)       x = x + s in place  traits parallel = "all"
  fz_total(x)        sum of x (reduce:+)
  fz_fail(x)         raises in every piece
  fz_copy(x, y)      y = x element by element (G.shift calls it on overlapping views)
]]
local FZ = {}
FZ.axpy = tycho.task{ name = "fz_axpy", args = {"in", "out", "scalar"}, traits = {pointwise = true},
  body = function(ctx, x, y, s)
    local nd = #x.shape
    if nd == 0 then y:set(x:get() * s + 1) return end
    if nd == 1 then for i = ctx.lo, ctx.hi do y[i] = x[i] * s + 1 end return end
    local lo, hi, idx = {}, {}, {}
    for d = 1, nd do lo[d], hi[d] = ctx:range(d) end
    local function rec(d)
      if d > nd then
        local a = {table.unpack(idx, 1, nd)}
        a[nd + 1] = x:get(table.unpack(idx, 1, nd)) * s + 1
        y:set(table.unpack(a, 1, nd + 1))
        return
      end
      for i = lo[d], hi[d] do idx[d] = i; rec(d + 1) end
    end
    rec(1)
  end }
FZ.inc = tycho.task{ name = "fz_inc", args = {"inout", "scalar"}, traits = {parallel = "all"},
  body = function(ctx, x, s)
    local nd = #x.shape
    if nd == 0 then x:set(x:get() + s) return end
    if nd == 1 then for i = ctx.lo, ctx.hi do x[i] = x[i] + s end return end
    local lo, hi, idx = {}, {}, {}
    for d = 1, nd do lo[d], hi[d] = ctx:range(d) end
    local function rec(d)
      if d > nd then
        local a = {table.unpack(idx, 1, nd)}
        a[nd + 1] = x:get(table.unpack(idx, 1, nd)) + s
        x:set(table.unpack(a, 1, nd + 1))
        return
      end
      for i = lo[d], hi[d] do idx[d] = i; rec(d + 1) end
    end
    rec(1)
  end }
FZ.total = tycho.task{ name = "fz_total", args = {"in", "reduce:+"},
  body = function(ctx, x)
    local nd, acc = #x.shape, 0
    if nd == 0 then return x:get() + 0 end
    if nd == 1 then for i = ctx.lo, ctx.hi do acc = acc + x[i] end return acc end
    local lo, hi, idx = {}, {}, {}
    for d = 1, nd do lo[d], hi[d] = ctx:range(d) end
    local function rec(d)
      if d > nd then acc = acc + x:get(table.unpack(idx, 1, nd)) return end
      for i = lo[d], hi[d] do idx[d] = i; rec(d + 1) end
    end
    rec(1)
    return acc
  end }
FZ.copy = tycho.task{ name = "fz_copy", args = {"in", "out"},
  body = function(ctx, x, y)
    local nd = #x.shape
    if nd == 1 then for i = ctx.lo, ctx.hi do y[i] = x[i] end return end
    local lo, hi, idx = {}, {}, {}
    for d = 1, nd do lo[d], hi[d] = ctx:range(d) end
    local function rec(d)
      if d > nd then
        local a = {table.unpack(idx, 1, nd)}
        a[nd + 1] = x:get(table.unpack(idx, 1, nd))
        y:set(table.unpack(a, 1, nd + 1))
        return
      end
      for i = lo[d], hi[d] do idx[d] = i; rec(d + 1) end
    end
    rec(1)
  end }
FZ.fail = tycho.task{ name = "fz_fail", args = {"in", "out"},
  body = function(ctx, x, y) error("fz_fail: a deliberate error in piece " .. ctx.piece) end }
return FZ
