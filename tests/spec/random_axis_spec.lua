-- tests/spec/random_axis_spec.lua — the axis of permutation, shuffle and
-- choice (numpy's Generator: axis=0 there, axis = 1 here, negative from the
-- end) and choice's shuffle flag (issue 18). tycho's numbers are its own
-- (counter-based), so the checks are exact relations: along an axis, the
-- result is x taken at the positions the same generator state gives for
-- the length of that axis, and nothing else moves.
local tycho = tycho or require "tycho"
local R = tycho.random

local function X() -- 3 x 5 x 2, every value distinct
  return tycho.arange(30):reshape({ 3, 5, 2 })
end

describe("random axis arguments", function()
  it("permutation along an axis is take at a permutation of that axis's positions", function()
    for _, ax in ipairs({ 1, 2, 3, -1, -2 }) do
      local a = ax < 0 and ax + 4 or ax
      local n = X().shape[a]
      local got = R.generator(7):permutation(X(), ax)
      local pos = R.generator(7):permutation(n)
      assert.are.same(X().shape, got.shape)
      spec_same(got:totable(), tycho.take(X(), pos, a):totable())
      spec_same(tycho.sort(pos):totable(), tycho.arange(1, n + 1):totable())
      -- the option form is the same call
      spec_same(R.generator(7):permutation(X(), { axis = ax }):totable(), got:totable())
    end
    -- the module function on the runtime's generator, after a seed
    R.seed(11)
    local a = R.permutation(X(), 2)
    R.seed(11)
    spec_same(a:totable(), tycho.take(X(), R.permutation(5), 2):totable())
  end)

  it("shuffle along an axis, in place", function()
    for _, ax in ipairs({ 1, 2, 3, -1 }) do
      local x = X()
      local a = ax < 0 and ax + 4 or ax
      assert.is_nil(R.generator(3):shuffle(x, ax))
      local pos = R.generator(3):permutation(x.shape[a])
      spec_same(x:totable(), tycho.take(X(), pos, a):totable())
    end
    local y = X()
    R.generator(5):shuffle(y, { axis = 2 })
    spec_same(y:totable(), tycho.take(X(), R.generator(5):permutation(5), 2):totable())
  end)

  it("choice along an axis: size's shape in place of that axis", function()
    local g, h = R.generator(9), R.generator(9)
    local c = g:choice(X(), { 4, 3 }, true, nil, 2)
    assert.are.same({ 3, 4, 3, 2 }, c.shape)
    spec_same(c:totable(), tycho.take(X(), h:choice(5, { 4, 3 }), 2):totable())
    -- without replacement, weighted, as options, the last axis
    g, h = R.generator(4), R.generator(4)
    local w = g:choice(X(), 2, { replace = false, p = { 0.25, 0.75 }, axis = -1 })
    assert.are.same({ 3, 5, 2 }, w.shape)
    spec_same(w:totable(), tycho.take(X(), h:choice(2, 2, false, { 0.25, 0.75 }), 3):totable())
    -- shuffle = false is accepted: numpy leaves that order unspecified
    g, h = R.generator(6), R.generator(6)
    spec_same(g:choice(X(), 3, false, nil, 1, false):totable(), h:choice(X(), 3, false):totable())
    g, h = R.generator(6), R.generator(6)
    spec_same(g:choice(10, 4, { replace = false, shuffle = false }):totable(), h:choice(10, 4, false):totable())
  end)

  it("refuse a bad axis or shuffle, naming the function and the argument", function()
    local g = R.generator(1)
    spec_fails({ "tycho.random.permutation", "axis", "4" }, function() return g:permutation(X(), 4) end)
    spec_fails({ "tycho.random.permutation: axis is given twice" },
      function() return g:permutation(X(), 1, { axis = 2 }) end)
    spec_fails({ "tycho.random.permutation", "axis" }, function() return g:permutation(5, 2) end)
    spec_fails({ "tycho.random.shuffle", "axis", "-4" }, function() return g:shuffle(X(), -4) end)
    spec_fails({ "tycho.random.shuffle", "option axis" }, function() return g:shuffle(X(), { axis = "x" }) end)
    spec_fails({ "tycho.random.choice", "axis", "5" }, function() return g:choice(X(), 2, true, nil, 5) end)
    spec_fails({ "tycho.random.choice: shuffle must be a boolean, got number" },
      function() return g:choice(X(), 2, false, nil, 1, 1) end)
    spec_fails({ "tycho.random.choice", "option shuffle must be true or false" },
      function() return g:choice(X(), 2, { shuffle = "no" }) end)
    spec_fails({ "tycho.random.choice: shuffle is given twice" },
      function() return g:choice(X(), 2, false, nil, 1, true, { shuffle = false }) end)
    spec_fails({ "tycho.random.choice: cannot take 3 samples from 2 without replacement" },
      function() return g:choice(X(), 3, false, nil, 3) end)
  end)
end)
