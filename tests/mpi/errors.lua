-- errors.lua CASE: what failures.sh runs under mpirun (see there).
local case = ...
local x = tycho.arange(300000) * 0.5 -- split among ranks
if case == "everywhere" then
  print("sum", x:sum():item())
  error("boom everywhere")
elseif case == "one_rank" then
  print("sum", x:sum():item())
  if tycho.rank() == 1 then error("boom on rank 1") end
  print("after", (x + 1):sum():item()) -- rank 0 waits here, or ends
elseif case == "diverged" then
  if tycho.rank() == 1 then
    local extra = (x * 3):sum():item() -- launches only rank 1 makes
  end
  print("sum", (x + 1):sum():item())
elseif case == "piece" then
  local check = tycho.task {
    name = "check",
    args = {"in", "out"},
    body = function(ctx, a, b)
      for i = ctx.lo, ctx.hi do
        if i == 250000 then error("element " .. i .. " is bad") end
        b[i] = a[i]
      end
    end,
  }
  local ok, err = pcall(function() return check(x):sum():item() end)
  -- the piece count depends on the processors: not part of what is compared
  print("rank", tycho.rank(), ok, (tostring(err):gsub("piece %d+ of %d+", "piece P")))
  print("rank", tycho.rank(), "still works", (x + 1):sum():item())
elseif case == "print" then
  print("rank", tycho.rank(), "of", tycho.nranks())
end
