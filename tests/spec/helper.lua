-- tests/spec/helper.lua — loaded by busted (--helper) before the specs.
--
-- The specs run two ways: inside the `tycho` shell, which defines the global
-- `tycho` (and `require "tycho"` returns it), and under stock lua5.4 with
-- LUA_CPATH pointing at build/lua/tycho.so. Either way `tycho` is global here
-- and `require "tycho"` gives the same table.
tycho = tycho or require "tycho"

-- spec_lua(code, env): runs the Lua chunk `code` in a fresh process that has
-- tycho (the shell from TYCHO_BIN when set, else lua5.4 with this process's
-- LUA_CPATH), with extra environment variables `env` (a table). Returns the
-- combined output and the exit code. For what one process cannot test on
-- itself: a small memory budget, a crash that must not happen.
function spec_lua(code, env)
  local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write("local tycho = tycho or require 'tycho'\n", code)
  f:close()
  local bin = os.getenv("TYCHO_BIN")
  local cmd = {}
  for k, v in pairs(env or {}) do cmd[#cmd + 1] = k .. "=" .. q(v) end
  if bin and bin ~= "" then
    cmd[#cmd + 1] = q(bin)
  else
    cmd[#cmd + 1] = "LUA_CPATH=" .. q(package.cpath) .. " lua5.4"
  end
  cmd[#cmd + 1] = q(path) .. " 2>&1"
  local p = assert(io.popen(table.concat(cmd, " ")))
  local out = p:read("a")
  local ok, _, code_ = p:close()
  os.remove(path)
  return out, ok and 0 or code_
end
