-- store_release_spec.lua — when the shell's Lua state releases a store. Its
-- store userdata have no __gc (lua/lheap.c): the state's allocator releases
-- a store when Lua frees the userdata's block. Pinned here: a store is
-- released once Lua can no longer reach it, exactly once (a released store's
-- parent is never let go early), never while something can still reach it
-- (a view, a weak table that still holds it, a finalizer that reads it),
-- and the blocks of other values of the same size are left alone.

local function live()
  tycho.flush() -- the window's launches hold references on their stores
  return tycho.stats().stores_live
end

local function collect()
  collectgarbage()
  collectgarbage()
end

-- stores_live counts the binding's cache of numbers used in arithmetic
-- (`x * 2`: a 0-d store per recent number, tl_const_operand) too, so the
-- counts below are taken around code whose operands are all stores.
local function settled()
  collect()
  return live()
end

describe("store release", function()
  it("has no __gc in the shell's state; __close is still there", function()
    local m = getmetatable(tycho.zeros(1))
    assert.is_nil(rawget(m, "__gc"))
    assert.are.equal("function", type(rawget(m, "__close")))
  end)

  it("releases stores Lua no longer reaches, and only those", function()
    local base = settled()
    local keep = {}
    for i = 1, 500 do keep[i] = tycho.arange(10) * tycho.full(1, i) end
    collect()
    assert.are.equal(base + 500, live())
    for i = 1, 500, 2 do keep[i] = nil end
    collect()
    assert.are.equal(base + 250, live())
    assert.are.equal(45 * 2, keep[2]:sum():item())
    assert.are.equal(45 * 500, keep[500]:sum():item())
    keep = nil
    collect()
    assert.are.equal(base, live())
  end)

  it("releases a loop's temporaries as it goes", function()
    local a, b = tycho.full(1, 0.999), tycho.full(1, 0.001)
    local base = settled()
    local x = tycho.arange(100) + tycho.zeros(1)
    for _ = 1, 2000 do x = x * a + b end
    -- generational minor collections free the temporaries during the loop
    assert.is_true(live() < base + 200, "at most a few windows' temporaries are alive")
    collect()
    assert.are.equal(base + 1, live())
    assert.are.near(99 * 0.999 ^ 2000 + (1 - 0.999 ^ 2000), x[100], 1e-9)
  end)

  it("keeps a view's parent alive through the view, and releases each once", function()
    local base = settled()
    local v
    do
      local a = tycho.arange(12) + 1
      v = a:reshape({3, 4})[{2, {2, 3}}]
    end
    collect() -- a's userdata is freed: its reference goes, the view's stays
    assert.are.same({6, 7}, v:totable())
    collect()
    assert.are.same({6, 7}, v:totable())
    assert.are.equal(13, (v + v):sum():item() / 2)
    v = nil
    collect()
    assert.are.equal(base, live())
  end)

  it("releases a store closed by <close> once, when closed", function()
    local base = settled()
    local keep
    do
      local y <close> = tycho.full(4, 3)
      keep = y
      assert.are.equal(base + 1, live())
    end
    assert.are.equal(base, live()) -- released at the close
    assert.has_error(function() return keep:sum() end)
    keep = nil
    collect() -- its userdata's block goes now: nothing left to release
    assert.are.equal(base, live())
  end)

  it("keeps stores a finalizer will read, and releases them after it", function()
    local base = settled()
    local seen
    do
      local holder = setmetatable({x = tycho.full(3, 2)}, {
        __gc = function(o) seen = o.x:sum():item() end,
      })
      holder = nil
    end
    collect()
    assert.are.equal(6, seen)
    collect()
    assert.are.equal(base, live())
  end)

  it("releases stores dropped from a weak table, keeps the others", function()
    local base = settled()
    local weak = setmetatable({}, {__mode = "v"})
    local strong = {}
    for i = 1, 20 do
      weak[i] = tycho.full(2, i)
      if i % 4 == 0 then strong[#strong + 1] = weak[i] end
    end
    collect()
    local n = 0
    for _, s in pairs(weak) do
      n = n + 1
      assert.are.equal(0, s:sum():item() % 8)
    end
    assert.are.equal(5, n)
    collect() -- the sums' stores
    assert.are.equal(base + 5, live())
    strong = nil
    collect()
    assert.is_nil(next(weak))
    assert.are.equal(base, live())
  end)

  it("leaves other values of a store userdata's size alone", function()
    local base = settled()
    local x = tycho.arange(4) + 1
    -- strings, tables and userdata freed by the hundred next to stores
    for i = 1, 2000 do
      local s = string.rep("x", 16 + i % 16) .. i
      local t = {i, s}
      local u = io.stdout
      assert(#t == 2 and u)
    end
    collect()
    assert.are.same({1, 2, 3, 4}, x:totable())
    assert.are.equal(base + 1, live())
  end)

  it("releases stores made in coroutines", function()
    local base = settled()
    local co = coroutine.wrap(function()
      local a = tycho.full(5, 2)
      coroutine.yield(a:sum():item())
      local b = a + tycho.ones(5)
      coroutine.yield(b:sum():item())
    end)
    assert.are.equal(10, co())
    assert.are.equal(15, co())
    co = nil
    -- the binding anchors the thread whose policy scopes it synced last
    -- (lpolicy.c) until another thread calls it: live() does
    live()
    collect()
    assert.are.equal(base, live())
  end)
end)
