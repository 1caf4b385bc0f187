-- misc.lua CASE: what misc.sh runs under mpirun (see there).
local case, out = ...
local x = tycho.arange(300000) * 0.5 -- split among ranks
local function hide(err) -- the folder's name differs between runs
  return (tostring(err):gsub((out or ""):gsub("%p", "%%%0"), "OUT"))
end
if case == "io" then
  -- saved together (MPI-IO), loaded back on every rank
  local m = tycho.arange(3 * 100001):reshape({100001, 3}) * 0.25
  tycho.save(out .. "/m.npy", m)
  tycho.save(out .. "/t.npy", m.T) -- a transposed view: gathered, then written
  tycho.save(out .. "/s.npy", tycho.array(3.5))
  local back = tycho.load(out .. "/m.npy")
  print("back", back.dtype, table.concat(back.shape, "x"), back:sum():item())
  -- errors every rank raises alike, once each
  local ok, err = pcall(tycho.save, out, m)
  print("to a folder", ok, hide(err))
  ok, err = pcall(tycho.save, "/dev/null", m)
  print("to a device", ok, tostring(err))
  ok, err = pcall(tycho.load, out .. "/missing.npy")
  print("missing", ok, hide(err))
elseif case == "exit0" then
  print("sum", x:sum():item())
  os.exit(0)
elseif case == "exit3" then
  print("sum", x:sum():item())
  os.exit(3)
elseif case == "exit_close" then
  print("sum", x:sum():item())
  os.exit(true, true)
elseif case == "trace" then
  print("sum", (x + 1):sum():item())
elseif case == "uneven_end" then
  print("sum", x:sum():item())
  if tycho.rank() == 1 then
    local extra = (x * 3):sum():item() -- a flush only rank 1 makes, after rank 0 ended
  end
elseif case == "uneven_exit" then
  print("sum", x:sum():item())
  if tycho.rank() == 1 then
    local extra = (x * 3):sum():item() -- a flush only rank 1 makes, after rank 0 left
  end
  os.exit(0, true)
elseif case == "uneven_save" then
  print("sum", x:sum():item()) -- x exists: the save flushes nothing
  if tycho.rank() == 1 then
    local extra = (x * 3):sum():item() -- a flush only rank 1 makes
  end
  tycho.save(out .. "/x.npy", x)
end
