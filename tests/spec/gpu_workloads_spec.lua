-- tests/spec/gpu_workloads_spec.lua — every bench workload gives the CPU's
-- checksum with its launches on one and on two simulated GPUs.
--
-- Each workload of bench/workloads runs three times at a small size, as
-- bench/run runs it (`tycho <name>.lua key=value ...`, one timed step): with
-- no GPU, then with TYCHO_GPUS=sim:1 and sim:2 and TYCHO_TARGET=gpu (every
-- launch with a GPU kernel on a GPU; the rest on the CPU, with the copies
-- between them). The checksums must agree to 1e-9 relative: operations are
-- the same bits on both sides except float sums (a tree on the GPU) and the
-- transcendentals (within 4 ULPs), and the workloads' checksums are sums.
local src = os.getenv("TYCHO_SOURCE_DIR") or "../.."
local dir = src .. "/bench/workloads/"

local small = {
  black_scholes = {"n=20000"},
  ["blas gemv"] = {"op=gemv", "n=200", "iters=3"},
  ["blas gemvt"] = {"op=gemvt", "m=5000", "f=8", "iters=3"},
  ["blas gemm"] = {"op=gemm", "n=96"},
  ["linalg solve"] = {"op=solve", "n=64"},
  ["linalg cholesky"] = {"op=cholesky", "n=64"},
  ["products bmm"] = {"op=bmm", "b=4", "n=32"},
  ["products einsum"] = {"op=einsum", "b=2", "h=2", "n=32", "d=8"},
  ["products conv2d"] = {"op=conv2d", "n=64", "k=5"},
  ["products conv1d"] = {"op=conv1d", "n=5000", "k=7"},
  cg = {"n=24", "max_iters=40", "check=5"},
  jacobi = {"n=96", "iters=8"},
  kmeans = {"n=20000", "k=5", "iters=3"},
  logreg = {"n=20000", "f=8", "iters=3"},
  nearest = {"n=3000", "m=2000"},
  nearest_stream = {"n=3000", "m=2000", "budget=256KB"},
  overhead = {"n=1000", "loops=20"},
  ["select mask"] = {"op=mask", "n=50000"},
  ["select gather"] = {"op=gather", "n=50000"},
  ["select scatter"] = {"op=scatter", "n=50000"},
  ["select sort"] = {"op=sort", "n=50000"},
  shape = {"n=50000"},
  stencil = {"n=96", "iters=6"},
  stream = {"n=100000"},
}

local function checksum(name, args, env)
  local file = name:match("^(%S+)")
  local code = "arg = {" .. (function()
    local q = {}
    for _, a in ipairs(args) do q[#q + 1] = string.format("%q", a) end
    q[#q + 1] = '"reps=1"'
    return table.concat(q, ", ")
  end)() .. "}\narg[0] = " .. string.format("%q", dir .. file .. ".lua") ..
    "\ndofile(arg[0])\n"
  local out, rc = spec_lua(code, env)
  assert(rc == 0, name .. " failed (" .. tostring(env.TYCHO_GPUS) .. "):\n" .. out)
  local v = tonumber(out:match("checksum: (%S+)"))
  assert(v, name .. ": no checksum in:\n" .. out)
  return v, out
end

describe("bench workloads on simulated GPUs", function()
  local names = {}
  for k in pairs(small) do names[#names + 1] = k end
  table.sort(names)
  for _, name in ipairs(names) do
    it(name .. " gives the CPU's checksum on sim:1 and sim:2", function()
      local cpu = checksum(name, small[name], {TYCHO_GPUS = "none"})
      for _, n in ipairs({"sim:1", "sim:2"}) do
        local gpu, out = checksum(name, small[name], {TYCHO_GPUS = n, TYCHO_TARGET = "gpu"})
        assert(math.abs(gpu - cpu) <= 1e-9 * math.max(math.abs(cpu), 1),
               string.format("%s on %s: checksum %.17g, the CPU's %.17g\n%s", name, n, gpu, cpu, out))
      end
    end)
  end
end)
