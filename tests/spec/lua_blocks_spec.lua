-- lua_blocks_spec.lua — the shell's Lua allocator keeps freed small blocks
-- (lua/lheap.c, "Lua's small blocks"): blocks that grow and shrink across
-- its 16-byte classes and past its 256-byte limit keep their contents, a
-- block handed out again after a collection holds what its new owner wrote,
-- and the state keeps working when the sentinel that ends the lists is
-- collected early (the allocator goes on without lists, blocks from the
-- lists included, and still releases stores: tycho is bound). Specs run inside the `tycho` shell, so its allocator is the one
-- under test here and under every other spec.
local function sentinel_key()
  for k, v in pairs(debug.getregistry()) do
    if type(v) == "userdata" and getmetatable(v) and
       rawget(getmetatable(v), "__name") == "tycho.lua_blocks" then
      return k
    end
  end
end

-- a table grown one key at a time through every class, then shrunk by a
-- rehash; strings of every length up to 600 bytes
local function churn(seed)
  local t, s = {}, {}
  for i = 1, 300 do
    t[i] = i * seed
    s[i] = string.rep(string.char(65 + i % 26), i * 2)
  end
  for i = 1, 290 do t[i] = nil end
  t.x = seed -- a rehash: the array part shrinks
  collectgarbage()
  local sum = 0
  for i = 291, 300 do sum = sum + t[i] end
  local bytes = 0
  for i = 1, 300 do
    assert(#s[i] == i * 2 and s[i]:sub(-1) == string.char(65 + i % 26))
    bytes = bytes + #s[i]
  end
  return sum, bytes, t.x
end

describe("the shell's Lua allocator", function()
  it("keeps contents across growth, shrinking and reuse", function()
    for seed = 1, 4 do
      local sum, bytes, x = churn(seed)
      assert.are.equal(2955 * seed, sum) -- 291 + ... + 300
      assert.are.equal(90300, bytes) -- 2 * (1 + ... + 300)
      assert.are.equal(seed, x)
    end
  end)

  it("keeps working after its sentinel is collected", function()
    local k = sentinel_key()
    if not k then
      pending("no sentinel: a sanitizer build keeps no blocks")
      return
    end
    local keep = {}
    for i = 1, 100 do keep[i] = { i, tostring(i) } end -- blocks from the lists
    debug.getregistry()[k] = nil
    collectgarbage()
    collectgarbage()
    assert.is_nil(sentinel_key())
    local sum, bytes = churn(3)
    assert.are.equal(2955 * 3, sum)
    assert.are.equal(90300, bytes)
    for i = 1, 100 do keep[i][3] = i * 2 end -- growth of a block the lists made
    assert.are.same({ 7, "7", 14 }, keep[7])
    local t = require("tycho")
    local x = t.arange(4) * 2
    assert.are.same({ 0, 2, 4, 6 }, x:totable())
    -- stores are still released when Lua frees them (lua/lheap.c)
    t.flush()
    collectgarbage()
    local live0 = t.stats().stores_live
    for i = 1, 50 do assert(t.full(3, i)) end
    t.flush()
    collectgarbage()
    collectgarbage()
    assert.are.equal(live0, t.stats().stores_live)
  end)
end)
