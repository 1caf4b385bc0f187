--[[
api_fuzz.lua — a seeded fuzzer of tycho's Lua API, run in the `tycho` shell:

  tycho tests/robust/api_fuzz.lua --seed 7 --steps 300
  TYCHO_FUZZ_SEED=7 TYCHO_FUZZ_STEPS=300 tycho tests/robust/api_fuzz.lua

It generates a random program of well-typed and ill-typed calls (fuzz_gen.lua:
creation, views, arithmetic, casts, reductions, matmul, assignment, reads,
policy scopes in all three spellings, hints, launch options, user tasks,
flushes, closing and dropping stores), runs each step as Lua source, and
checks it against a plain-Lua reference model (fuzz_model.lua): a step the
model accepts must succeed, with the same shapes, dtypes and values (floats
within a tolerance where the computation is not exactly specified); a step
the model refuses must fail with a Lua error. Every slot's metadata is
checked after every step, values on each read and on all live stores at the
end. A crash, hang or sanitizer report is the shell dying: run it under
`timeout` (the CTest entries have one).

On a mismatch it prints the seed, the step and a minimal program replaying
it (steps removed while the same mismatch still shows at the same step), and
exits 1. Options:
  --seed S        (TYCHO_FUZZ_SEED; default: the time)
  --steps N       (TYCHO_FUZZ_STEPS; default 300)
  --log FILE      write each step before running it (what a crash ran last)
  --out FILE      write the minimal program there too
  --minimize-seconds T   time given to the minimiser (default 60)
  --verbose       print every step and its outcome
  --isolate-failures  flush around launches that fail or read what a failed
                  launch left unavailable, so that they never fuse with
                  unrelated launches (fuzz_gen.lua's G.isolate; the default
                  before session 14, which --fused-failures, now the
                  default, turned off)
  --oom-resets    (implied by TYCHO_FAIL_ALLOC, fault_inject.lua's runs) an
                  out-of-memory error where the model expects success drops
                  every store and the model's state, and the run goes on:
                  what follows checks that the runtime is still right
The last line is a summary (steps: the generated ones plus a final read of
every live store; a step is one call, or a scope around a few):
  api_fuzz: seed 7: 3010 steps (3316 calls): 2593 ok, 417 failed with an
  error; 987 values compared (168 not comparable); 0 mismatches
"failed with an error" counts steps the model expected to fail and that
raised a Lua error; "not comparable": values the model cannot pin down
(fuzz_model.lua's unknown state).
]]

local dir = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
package.path = dir .. "/?.lua;" .. package.path
local M = require("fuzz_model")
local G = require("fuzz_gen")

-- ---- options -------------------------------------------------------------------------

local opts = {
  seed = tonumber(os.getenv("TYCHO_FUZZ_SEED") or ""),
  steps = tonumber(os.getenv("TYCHO_FUZZ_STEPS") or "") or 300,
  log = os.getenv("TYCHO_FUZZ_LOG"),
  minimize_seconds = 60,
  oom_resets = (os.getenv("TYCHO_FAIL_ALLOC") or "") ~= "",
}
do
  local k = 1
  while arg and arg[k] do
    local a = arg[k]
    local function val()
      k = k + 1
      if arg[k] == nil then error("api_fuzz: " .. a .. " needs a value", 0) end
      return arg[k]
    end
    if a == "--seed" then opts.seed = math.tointeger(tonumber(val()))
    elseif a == "--steps" then opts.steps = math.tointeger(tonumber(val()))
    elseif a == "--log" then opts.log = val()
    elseif a == "--out" then opts.out = val()
    elseif a == "--minimize-seconds" then opts.minimize_seconds = tonumber(val())
    elseif a == "--verbose" then opts.verbose = true
    elseif a == "--fused-failures" then G.isolate = false
    elseif a == "--isolate-failures" then G.isolate = true
    elseif a == "--oom-resets" then opts.oom_resets = true
    else error("api_fuzz: unknown option " .. a, 0) end
    k = k + 1
  end
end
opts.seed = math.tointeger(opts.seed) or (os.time() % 1000000)
assert(opts.steps and opts.steps >= 0, "api_fuzz: --steps must be a non-negative integer")

-- ---- comparing tycho with the model ----------------------------------------------------

local counts = { steps = 0, calls = 0, ok = 0, err = 0, compared = 0, unknown = 0, oom = 0 }

local function is_oom(err)
  err = tostring(err)
  return err:find("out of memory", 1, true) or err:find("not enough memory", 1, true)
end

local function flatten(t, out)
  if type(t) ~= "table" then out[#out + 1] = t; return out end
  for _, v in ipairs(t) do flatten(v, out) end
  return out
end

local function show(v)
  if type(v) == "number" then return G.lit(v) end
  return tostring(v)
end

-- One element: the model's value `exp` (state st) against tycho's `got`.
local function same(exp, st, got, dtype, c, loose)
  local lt = type(got)
  if dtype == "bool" then
    if lt ~= "boolean" then return false, "a bool element read as a " .. lt end
    got = got and 1 or 0
  elseif M.is_float(dtype) then
    if math.type(got) ~= "float" then return false, "a " .. dtype .. " element read as " .. show(got) end
  elseif dtype == "u64" and math.type(got) == "float" then -- 2^63 and above: the nearest float
    if st == 2 then c.unknown = c.unknown + 1; return true end
    c.compared = c.compared + 1
    if exp >= 0 then return false end -- the model's bits say below 2^63
    return math.abs(got - ((exp >> 1) * 2.0 + (exp & 1))) <= 4096 -- one ulp at 2^64
  elseif math.type(got) ~= "integer" then
    return false, "an " .. dtype .. " element read as " .. show(got)
  end
  if st == 2 then c.unknown = c.unknown + 1; return true end
  c.compared = c.compared + 1
  if not M.is_float(dtype) then return got == exp end
  if exp ~= exp then return got ~= got end
  if st == 0 then return got == exp end
  if got ~= got then return false end
  if got == exp then return true end
  local big = dtype == "f32" and 1e37 or 1e300
  if math.abs(exp) >= big and math.abs(got) >= big then return (exp > 0) == (got > 0) end
  -- loose: f32 values went into it (fuzz_model.lua, M.taint): f32's tolerance
  return math.abs(got - exp) <= M.RTOL[loose and "f32" or dtype] * (1 + math.abs(exp))
end

local function shape_str(sh)
  local p = {}
  for i, e in ipairs(sh) do p[i] = tostring(e) end
  return "(" .. table.concat(p, ", ") .. (#sh == 1 and ",)" or ")")
end

-- The store x (a tycho value) against the model view v: metadata only, or values.
local function check_store(x, v, what, values, c)
  if v.number then return true end
  if v.closed then
    local s = tostring(x)
    if s ~= "tycho.store (closed)" then
      return false, what .. ": the model's store is closed, tycho's reads " .. s
    end
    return true
  end
  if not tycho.is_store(x) then return false, what .. ": not a store but " .. show(x) end
  local sh = x.shape
  if x.dtype ~= v.dtype then return false, what .. ": dtype " .. x.dtype .. ", the model says " .. v.dtype end
  if #sh ~= #v.shape then
    return false, what .. ": shape " .. shape_str(sh) .. ", the model says " .. shape_str(v.shape)
  end
  for d = 1, #sh do
    if sh[d] ~= v.shape[d] then
      return false, what .. ": shape " .. shape_str(sh) .. ", the model says " .. shape_str(v.shape)
    end
  end
  if not values then return true end
  if v.buf.cancelled or v.buf.maybe_cancelled then
    local ok = pcall(x.totable, x)
    if ok and v.buf.cancelled then return false, what .. ": its producer failed, yet its values read" end
    return true
  end
  local t = x:totable()
  local got = flatten(t, {})
  local vals, st = M.values(v)
  if #got ~= #vals then return false, what .. ": " .. #got .. " values, the model has " .. #vals end
  for k = 1, #vals do
    local ok, why = same(vals[k], st[k], got[k], v.dtype, c, v.buf.loose)
    if not ok then
      return false, string.format("%s: element %d (row-major) is %s, the model says %s%s%s", what, k,
        show(got[k]), show(vals[k]), st[k] == 1 and " (within a tolerance)" or "",
        why and (": " .. why) or "")
    end
  end
  return true
end

-- What a read step left in R against the checker its apply returned.
local function check_read(want, c)
  if want.totable then
    local v = want.view
    local got = flatten(R, {})
    local vals, st = M.values(v)
    if #v.shape == 0 and type(R) == "table" then return false, "totable of a 0-d store gave a table" end
    if #got ~= #vals then return false, "totable: " .. #got .. " values, the model has " .. #vals end
    for k = 1, #vals do
      local ok, why = same(vals[k], st[k], got[k], v.dtype, c, v.buf.loose)
      if not ok then
        return false, string.format("element %d (row-major) is %s, the model says %s%s%s", k,
          show(got[k]), show(vals[k]), st[k] == 1 and " (within a tolerance)" or "",
          why and (": " .. why) or "")
      end
    end
    return true
  elseif want.item then
    local v = want.view
    local vals, st = M.values(v)
    local ok, why = same(vals[1], st[1], R, v.dtype, c, v.buf.loose)
    if not ok then
      return false, "the value is " .. show(R) .. ", the model says " .. show(vals[1]) ..
        (why and (": " .. why) or "")
    end
    return true
  elseif want.isstore then
    return check_store(R, want.view, "the row", true, c)
  elseif want.tostring then
    local v = want.tostring
    if v == "nil" then return R == "nil", "tostring(nil) gave " .. show(R) end
    if type(R) ~= "string" then return false, "tostring gave a " .. type(R) end
    if v.number then return true end
    if v.closed then return R == "tycho.store (closed)", "tostring of a closed store: " .. R end
    if not R:find("dtype=" .. v.dtype, 1, true) then return false, "tostring: " .. R end
    return true
  elseif want.fields then
    for k = 1, 4 do
      if R[k] ~= want.fields[k] then
        return false, string.format("fields {dtype, ndim, size, #x} = {%s, %s, %s, %s}, the model says "
          .. "{%s, %s, %s, %s}", show(R[1]), show(R[2]), show(R[3]), show(R[4]),
          show(want.fields[1]), show(want.fields[2]), show(want.fields[3]), show(want.fields[4]))
      end
    end
    return true
  end
  return true
end

-- ---- running steps --------------------------------------------------------------------

local log = opts.log and assert(io.open(opts.log, "w"))

local function run_prelude()
  local absdir = dir:sub(1, 1) == "/" and dir or ((os.getenv("PWD") or ".") .. "/" .. dir)
  local src = string.format(G.PRELUDE, opts.seed, absdir .. "/fuzz_tasks.lua")
  assert(load(src, "=prelude"))()
  return src
end

-- Run one step; returns nil, or a mismatch message.
local function run_step_checked(st, S, c, quiet)
  if log and not quiet then
    log:write(st.src, "\n")
    log:flush()
  end
  R = nil
  local f, lerr = load(st.src, "=step", "t")
  local ran, err
  if f then ran, err = pcall(f) else ran, err = false, lerr end
  local mok, want = pcall(st.apply, S, V, ran)
  if not mok and not (type(want) == "table" and want.fz_expected) then
    if opts.oom_resets and is_oom(want) then error({ fz_oom = true }, 0) end
    error("api_fuzz: the model failed on `" .. st.src .. "`: " .. tostring(want), 0)
  end
  if opts.oom_resets and not ran and mok and is_oom(err) then error({ fz_oom = true }, 0) end
  st.expect_error = not mok
  c.steps = c.steps + 1
  c.calls = c.calls + st.calls
  if not mok and want.either then -- the model cannot tell: either outcome
    st.expect_error = not ran
    if ran then c.ok = c.ok + 1 else c.err = c.err + 1 end
  elseif ran and not mok then
    return "expected an error (" .. want.fz_expected .. "), the step succeeded"
  elseif not ran and mok then
    return "unexpected error: " .. tostring(err)
  elseif not ran then
    if type(err) ~= "string" then return "the error is a " .. type(err) .. ", not a message" end
    c.err = c.err + 1
  else
    c.ok = c.ok + 1
    if want then
      local ok, why = check_read(want, c)
      if not ok then return why end
    end
  end
  -- every slot: nil where the model has nothing, else the same metadata
  for i = 1, G.NSLOTS do
    local v, x = S.slots[i], V[i]
    if v == nil then
      if x ~= nil then return "V[" .. i .. "] holds " .. show(x) .. ", the model has nothing there" end
    else
      local ok, why = check_store(x, v, "V[" .. i .. "]", false, c)
      if not ok then return why end
    end
  end
  if opts.verbose and not quiet then
    print(string.format("%5d %-6s %s", c.steps, ran and "ok" or "error", st.src))
  end
end

-- Under fault injection an out-of-memory error (from the step or from the
-- checks) drops every store and the model's state; the run goes on.
local function run_step(st, S, c, quiet)
  if not opts.oom_resets then return run_step_checked(st, S, c, quiet) end
  local ok, mm = pcall(run_step_checked, st, S, c, quiet)
  if ok then return mm end
  if type(mm) == "table" and mm.fz_oom or is_oom(mm) then
    c.oom = (c.oom or 0) + 1
    V, R = {}, nil
    for i in pairs(S.slots) do S.slots[i] = nil end
    if log then log:write("-- out of memory: every store dropped\nV = {}\n"); log:flush() end
    return nil
  end
  error(mm, 0)
end

-- Replay a program from scratch in this process: nil, or (message, index).
local function replay(prog)
  V, R = {}, nil
  collectgarbage()
  local S = { slots = {} }
  local c = { steps = 0, calls = 0, ok = 0, err = 0, compared = 0, unknown = 0 }
  for k, st in ipairs(prog) do
    local ok, mm = pcall(run_step, st, S, c, true)
    if not ok then return "internal: " .. tostring(mm), k end
    if mm then return mm, k end
  end
end

-- Remove steps (halves, quarters, ... single steps) while the replay still
-- fails at its last step with the same kind of mismatch.
local function signature(message)
  if message:find("^expected an error") then return "expected an error" end
  if message:find("^unexpected error") then -- the message without positions and numbers
    return (message:gsub("step:%d+:", ""):gsub("[%d%.]+", "#"):sub(1, 80))
  end
  return message:match("^(V%[%d+%]: %a+)") or message:match("^(the row)") or "value"
end

local function minimize(prog, message)
  local kind = signature(message)
  local function same_failure(p)
    local mm, k = replay(p)
    if not mm or k ~= #p or mm:find("^internal") then return false end
    return signature(mm) == kind
  end
  local deadline = os.time() + opts.minimize_seconds
  local chunk = math.max(1, (#prog - 1) // 2)
  while chunk >= 1 and os.time() < deadline do
    local changed = false
    local start = 1
    while start <= #prog - 1 and os.time() < deadline do
      local cand = {}
      for k, st in ipairs(prog) do
        if k < start or k >= start + chunk or k == #prog then cand[#cand + 1] = st end
      end
      if #cand < #prog and same_failure(cand) then
        prog, changed = cand, true
      else
        start = start + chunk
      end
    end
    if not changed then chunk = chunk // 2 end
  end
  local mm = replay(prog) -- leaves expect_error set for the printout
  return prog, mm or message
end

local function program_text(prelude, prog, message, step_no)
  local out = {}
  out[#out + 1] = string.format("-- tycho api_fuzz: seed %d, mismatch at step %d: %s", opts.seed,
                                step_no, message)
  out[#out + 1] = string.format("-- replay: tycho this_file.lua (a minimal program: %d steps)", #prog)
  out[#out + 1] = prelude
  for k, st in ipairs(prog) do
    if k == #prog then
      out[#out + 1] = "-- the mismatch: " .. message
      if st.expect_error then
        out[#out + 1] = string.format("print(pcall(load(%q)))  -- the model expects an error", st.src)
      else
        out[#out + 1] = st.src
        if st.src:find("^R =") then out[#out + 1] = "print(R)" end
      end
    elseif st.expect_error then
      out[#out + 1] = string.format("assert(not pcall(load(%q)))  -- an error, as expected", st.src)
    else
      out[#out + 1] = st.src
    end
  end
  return table.concat(out, "\n")
end

-- ---- the run ---------------------------------------------------------------------------

math.randomseed(opts.seed)
V, R = {}, nil
local prelude = run_prelude()
if log then log:write(prelude, "\n"); log:flush() end
print(string.format("api_fuzz: seed %d, %d steps", opts.seed, opts.steps))

local S = { slots = {} }
local program = {}
local function fail(message, step_no)
  io.stdout:write(string.format("api_fuzz: MISMATCH: seed %d, step %d: %s\n", opts.seed, step_no, message))
  if opts.oom_resets then -- the failure injected cannot be replayed in this process
    io.stdout:write("api_fuzz: under fault injection: no minimising", opts.log and ("; the steps run are in " .. opts.log) or "", "\n")
    os.exit(1)
  end
  io.stdout:write("api_fuzz: minimising the program (up to ", opts.minimize_seconds, " s)...\n")
  io.stdout:flush()
  local prog, mm = minimize(program, message)
  local text = program_text(prelude, prog, mm, step_no)
  io.stdout:write(text, "\n")
  if opts.out then
    local f = assert(io.open(opts.out, "w"))
    f:write(text, "\n")
    f:close()
  end
  os.exit(1)
end

for n = 1, opts.steps do
  local st = G.next(S)
  program[#program + 1] = st
  local mm = run_step(st, S, counts)
  if mm then fail(mm, n) end
end
-- the end: every live store read whole
for i = 1, G.NSLOTS do
  if S.slots[i] and not S.slots[i].number then
    local st = G.check_slot(i)
    program[#program + 1] = st
    local mm = run_step(st, S, counts)
    if mm then fail(mm, #program) end
  end
end
V, R = nil, nil
collectgarbage()
tycho.flush()
if TMP then os.remove(TMP) end
if FZDIR and FZDIR:match("^/tmp/") then os.execute("rm -rf '" .. FZDIR .. "'") end
print(string.format("api_fuzz: seed %d: %d steps (%d calls): %d ok, %d failed with an error; " ..
  "%d values compared (%d not comparable); 0 mismatches%s", opts.seed, counts.steps, counts.calls,
  counts.ok, counts.err, counts.compared, counts.unknown,
  counts.oom > 0 and string.format("; %d out-of-memory errors (stores dropped)", counts.oom) or ""))
if log then log:close() end
