-- scope_gc_spec.lua — scope objects nobody closes (issue 21, item 9). A scope
-- object collected without close() used to stay open for ever, and 64 of them
-- gave "scopes nest 64 deep at most" far from the cause. Now a collected
-- scope closes (at the next launch or scope: see lpolicy.c), opening one
-- past the limit collects first, and the limit's error names where the open
-- scopes were opened.

local function open_scopes()
  local origins, depth = tycho._scopes()
  return origins, depth
end

local function touch() return tycho.arange(3):sum():item() end -- a launch: a safe point

describe("scope objects nobody closes", function()
  after_each(function()
    collectgarbage()
    touch()
    local origins, depth = open_scopes()
    assert.are.equal(0, depth, table.concat(origins, "; "))
  end)

  it("are closed once collected (the reproducer: 64 dropped scopes, then one more)", function()
    for _ = 1, 64 do tycho.parallel { overdecompose = 1 } end -- results dropped
    -- the 65th collects the dropped ones first instead of failing
    local s = tycho.parallel { mode = "single" }
    local origins, depth = open_scopes()
    assert.are.equal(1, depth)
    assert.are.equal(1, #origins)
    s:close()
  end)

  it("close at the next launch after a collection, without an explicit sweep", function()
    local s = tycho.parallel { mode = "single" }
    assert.are.equal(1, select(2, open_scopes()))
    s = nil
    collectgarbage()
    assert.are.equal(3, touch())
    assert.are.equal(0, select(2, open_scopes()))
  end)

  it("an outer scope collected while an inner one is open is removed where it is", function()
    local outer = tycho.parallel { overdecompose = 2 }
    local inner = tycho.parallel { mode = "single" }
    local origins = open_scopes()
    assert.are.equal(2, #origins)
    local inner_origin = origins[2]
    outer = nil
    collectgarbage()
    touch()
    origins = open_scopes()
    assert.are.same({inner_origin}, origins)
    -- the inner scope still steers launches
    local _ = tycho.arange(8) + 1
    local e = tostring(tycho.explain(1))
    assert.matches("single", e)
    inner:close()
    assert.is_nil(outer)
  end)

  it("a scope dropped inside a live coroutine is closed in that coroutine's list", function()
    local co = coroutine.wrap(function()
      tycho.parallel { mode = "single" } -- dropped
      coroutine.yield(#open_scopes())
      collectgarbage()
      touch()
      coroutine.yield(#open_scopes())
    end)
    assert.are.equal(1, co())
    assert.are.equal(0, co())
  end)

  it("past the limit, the error names where the open scopes were opened", function()
    local kept = {}
    local ok, err = pcall(function()
      for i = 1, 65 do kept[i] = tycho.parallel { overdecompose = 1 } end
    end)
    assert.is_false(ok)
    assert.matches("tycho.parallel: scopes nest 64 deep at most; open now: scope at " ..
                   "[^%s]*scope_gc_spec.lua:%d+ %(x64%)%. A scope stays open until it is closed", err)
    for i = #kept, 1, -1 do kept[i]:close() end
  end)

  it("warns with the origin of a scope that was never closed", function()
    local out = spec_lua([[
      warn("@on") -- line 2: spec_lua puts a line of its own first
      tycho.parallel { mode = "all" }
      collectgarbage()
      print("depth", select(2, tycho._scopes()))
    ]])
    assert.matches("tycho: the scope at [^\n]*:3 was never closed; closed when collected", out)
    assert.matches("depth\t0", out)
  end)
end)
