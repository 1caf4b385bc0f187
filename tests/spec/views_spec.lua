-- tests/spec/views_spec.lua — indexing, views and assignment through views,
-- compared with a reference written here on nested Lua tables.
--
-- The reference (ref_index, ref_assign) implements the Lua indexing rules
-- directly: one entry per leading dim; an integer selects (drops the dim),
-- {} is the whole dim, {a} = {a, a}, {a, b[, step]} is inclusive; negative
-- counts from the end. Random index tables (fixed seed, so failures repeat)
-- are checked against it on a 3-D store, including views of views and
-- writes through views.
local tycho = tycho or require "tycho"

local function norm(i, n) return i < 0 and n + 1 + i or i end

-- The range {first, last, step} an entry denotes over a dim of size n, or
-- the selected index for an integer entry.
local function entry_range(e, n)
  if type(e) == "number" then return norm(e, n) end
  if e == nil or #e == 0 then return 1, n, 1 end
  local a = norm(e[1], n)
  local b = e[2] and norm(e[2], n) or a
  return a, b, e[3] or 1
end

local function ref_index(t, shape, spec)
  local function rec(sub, d)
    if d > #shape then return sub end
    local a, b, step = entry_range(spec[d], shape[d])
    if type(spec[d]) == "number" then return rec(sub[a], d + 1) end
    local out = {}
    for i = a, b, step do out[#out + 1] = rec(sub[i], d + 1) end
    return out
  end
  return rec(t, 1)
end

-- Sets every element of the view `spec` of t (in place) to v.
local function ref_assign(t, shape, spec, v)
  local function rec(sub, d)
    local a, b, step = entry_range(spec[d], shape[d])
    if type(spec[d]) == "number" then b, step = a, 1 end
    for i = a, b, step do
      if d == #shape then sub[i] = v else rec(sub[i], d + 1) end
    end
  end
  rec(t, 1)
end

-- A random entry for a dim of size n: a selection, {}, {a}, {a, b} or
-- {a, b, step}, with indices randomly written from the front or the back.
local function random_entry(n, allow_select)
  if n == 0 then return {} end -- the only entry an empty dim takes
  local function idx(i) return math.random(2) == 1 and i or i - n - 1 end
  local kind = math.random(allow_select and 5 or 4)
  if kind == 5 then return idx(math.random(n)) end
  if kind == 1 then return {} end
  local a = math.random(n)
  if kind == 2 then return {idx(a)} end
  local b = math.random(a - 1, n) -- a - 1: an empty range
  if kind == 3 then return {idx(a), b >= 1 and idx(b) or b} end
  return {idx(a), b >= 1 and idx(b) or b, math.random(3)}
end

local function random_spec(shape)
  local spec = {}
  for d = 1, math.random(0, #shape) do spec[d] = random_entry(shape[d], true) end
  return spec
end

local function show(spec)
  local parts = {}
  for i, e in ipairs(spec) do
    parts[i] = type(e) == "number" and tostring(e) or "{" .. table.concat(e, ", ") .. "}"
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end

describe("views against the Lua reference", function()
  local shape = {4, 5, 6}
  local base = tycho.arange(120):reshape(shape)
  local T = base:totable()

  it("x[{...}] for 300 random index tables", function()
    math.randomseed(1234)
    for _ = 1, 300 do
      local spec = random_spec(shape)
      local got = base[spec]:totable()
      assert.are.same(ref_index(T, shape, spec), got, show(spec))
    end
  end)

  it("views of views, and their shapes", function()
    math.randomseed(99)
    for _ = 1, 200 do
      local s1 = random_spec(shape)
      local v = base[s1]
      local vshape = v.shape
      local vt = ref_index(T, shape, s1)
      if v.ndim > 0 then
        local s2 = random_spec(vshape)
        local w = v[s2]
        assert.are.same(ref_index(vt, vshape, s2), w:totable(), show(s1) .. " then " .. show(s2))
      else
        assert.are.equal(vt, v:item())
      end
    end
  end)

  it("writes through 100 random views touch exactly their elements", function()
    math.randomseed(7)
    local x = tycho.arange(120, "f64"):reshape(shape)
    local X = x:totable()
    for k = 1, 100 do
      local spec = {}
      for d = 1, math.random(1, 3) do spec[d] = random_entry(shape[d], true) end
      local v = -k
      x[spec] = v
      ref_assign(X, shape, spec, v)
    end
    assert.are.same(X, x:totable())
  end)

  it("a store assigned into a view lands element by element", function()
    local x = tycho.zeros({4, 5, 6}, "i64")
    local spec = {{2, -1, 2}, 3, {-4, -2}}
    local src = tycho.arange(6):reshape(2, 3) + 1
    x[spec] = src
    local S = src:totable()
    local X = tycho.zeros({4, 5, 6}, "i64"):totable()
    for a, i in ipairs({2, 4}) do
      for b, k in ipairs({3, 4, 5}) do X[i][3][k] = S[a][b] end
    end
    assert.are.same(X, x:totable())
  end)
end)

describe("view methods compose", function()
  it("narrow and transpose equal the index forms", function()
    local x = tycho.arange(60):reshape(3, 4, 5)
    assert.are.same(x[{{}, {2, 3}}]:totable(), x:narrow(2, 2, 2):totable())
    assert.are.same(x[{{}, {}, {-2, -1}}]:totable(), x:narrow(3, -2, 2):totable())
    local t = x:transpose(1, 3) -- (5, 4, 3)
    for i = 1, 3 do for j = 1, 4 do for k = 1, 5 do
      assert.are.equal(x[i][j][k], t[k][j][i])
    end end end
    -- a view of a transposed view, written through
    local corner = t[{{1, 2}, 1, {3}}] -- (2, 1) = x[3][1][1..2] as a column
    corner:fill(-7)
    assert.are.same({-7, -7, 42, 43, 44}, x[3][1]:totable())
  end)

  it("expand makes the broadcasting axes of an outer operation", function()
    local a = tycho.array({1.5, 2.5, 4})
    local b = tycho.array({1, 2})
    local outer = a:expand(2) * b:expand(1) -- (3, 2)
    assert.are.same({{1.5, 3}, {2.5, 5}, {4, 8}}, outer:totable())
    local m = tycho.min(tycho.abs(a:expand(2) - b:expand(1)), 2) -- nearest distance
    assert.are.same({0.5, 0.5, 2}, m:totable())
    assert.are.same({1, 3, 1}, a:expand(1):expand(-1).shape)
  end)

  it("reshape shares storage with a contiguous base", function()
    local x = tycho.zeros({2, 6})
    local r = x:reshape(3, 4)
    r[{2, 1}] = 5 -- element 5 in C order
    assert.are.equal(5, x[1][5])
    local flat = x:reshape(-1)
    assert.are.same({12}, flat.shape)
    assert.are.equal(5, flat[5])
  end)

  it("views keep their base's storage alive", function()
    local v
    do
      local x = tycho.arange(10) * 3
      v = x[{{8, 10}}]
    end
    collectgarbage()
    collectgarbage()
    assert.are.same({21, 24, 27}, v:totable())
  end)
end)
