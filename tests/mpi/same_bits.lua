-- same_bits.lua: a mix of tycho's operations whose printed values (floats in
-- hex, bit for bit) and saved .npy files must be the same under
-- `mpirun -np N` as in a plain run (compare.sh runs both). Large launches
-- are split among ranks (compare.sh sets TYCHO_MPI_MIN_ELEMS low, so that
-- these small arrays are split too); the rest runs whole on every rank.
local out = assert(os.getenv("TYCHO_OUT"), "TYCHO_OUT: the folder for .npy files")
local function hex(v)
  if math.type(v) == "float" then return string.format("%a", v) end
  return tostring(v)
end
local function show(name, x)
  if tycho.is_store(x) then
    if x.ndim == 0 then
      print(name, hex(x:item()))
    else
      tycho.save(out .. "/" .. name .. ".npy", x)
      print(name, x.dtype, table.concat(x.shape, "x"), hex(x:sum():item()))
    end
  else
    print(name, hex(x))
  end
end

tycho.seed(7)
local n = 200003 -- not a multiple of any rank count
local a = tycho.random.normal(n)
local b = tycho.random.uniform(n, -1, 1, "f32")
local m = tycho.random.normal({301, 257})

-- element-wise chains (fused), saved whole
show("chain", (a * 2.5 + 1):exp():log1p() - a:sin() * a:cos())
show("mixed", b:astype("f64") * a + b:abs():sqrt())
-- float reductions: the fixed tree of one process, at every rank count
show("sum_f64", a:sum())
show("sum_f32", b:sum())
show("prod", (b * 0.01 + 1):prod())
show("mean", a:mean())
show("min", a:min())
show("max", b:max())
show("argmax", a:argmax())
show("argmin", b:argmin())
show("sum_axis1", m:sum(1))
show("sum_axis2", m:sum(2))
show("max_axis2", m:max(2))
show("mean_keep", m:mean(1, {keepdims = true}))
-- integers: exact
local k = tycho.random.integers(-1000, 1000, {n})
show("isum", k:sum())
show("icum", (k * 3 - 1):astype("i32"))
-- 2-D views: a transpose, a strided slice, a column
show("transposed", m:transpose() * 2)
show("strided", m[{{1, -1, 3}, {2, -2, 2}}] + 1)
show("column", m[{{}, 5}] * m[{{}, 6}])
-- assignment into a view of a big store
local z = tycho.zeros({301, 257})
z[{{2, 300}, {}}] = m[{{2, 300}, {}}] * 3
show("assigned", z)
-- a matrix product and a dot
show("matmul", tycho.matmul(m[{{1, 120}, {}}], m:transpose()[{{}, {1, 90}}]))
show("dot", tycho.dot(a, a))
-- data-dependent shapes: replicated control reads the same values everywhere
local mask = a:gt(1.5)
show("masked", a[mask])
show("count", tycho.count_nonzero(mask))
show("sorted", tycho.sort(b))
-- a loop of small and large launches (an iterative update)
local u = tycho.linspace(0, 1, n)
for _ = 1, 5 do
  u = u * 0.5 + (u * u):sin() * 0.25
end
show("loop", u)
show("loop_sum", u:sum())
-- reads back into Lua
print("item", hex(a[12345]), hex(m[{17, 33}]:item()))
local t = m[{{1, 2}, {1, 3}}]:totable()
print("totable", hex(t[1][1]), hex(t[2][3]))
print(b[{{1, 5}}])
-- a user task split like a built-in
local twice = tycho.task {
  name = "twice",
  args = {"in", "out", "reduce:+"},
  body = function(ctx, x, y)
    local s = 0
    for i = ctx.lo, ctx.hi do
      y[i] = x[i] * 2
      s = s + x[i]
    end
    return s
  end,
}
local y, s = twice(a)
show("task_out", y)
show("task_sum", s)
-- split launches happened when several ranks ran this
print("split", tycho.nranks() == 1 or tycho.stats().dist_launches > 0)
