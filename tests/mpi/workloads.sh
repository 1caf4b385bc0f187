#!/bin/sh
# workloads.sh TYCHO BENCH_DIR: bench/workloads programs, small, print the
# same checksum (and info) lines under mpirun as in a plain run. Launches of
# 1,000 elements or more are split among ranks (the info lines of times,
# CPU times and page faults, which vary from run to run, left out). Exit 77
# without MPI.
set -u
tycho=$1
bench=$2
. "$(dirname "$0")/env.sh"
status=0
varies='^(time:|info: (cpu_steps|cpu_s|faults|prod_s|of_prod)=)'
check() { # check NP WORKLOAD ARGS...
  np=$1
  shift
  want=$("$tycho" "$bench/$@" 2>&1 | grep -Ev "$varies")
  got=$(TYCHO_MPI_CHECK=1 TYCHO_MPI_MIN_ELEMS=1000 timeout 120 $MPIRUN -np "$np" "$tycho" \
        "$bench/$@" 2>&1 | grep -Ev "$varies")
  if [ "$want" = "$got" ]; then
    echo "ok: -np $np $*: $(echo "$want" | tail -1)"
  else
    echo "FAIL: -np $np $*"
    echo "--- plain"; echo "$want"; echo "--- mpirun"; echo "$got"
    status=1
  fi
}
check 3 stencil.lua n=200 iters=5 reps=1
check 2 black_scholes.lua n=100000 reps=1
check 2 cg.lua n=100 max_iters=20 check=5 reps=1
check 2 jacobi.lua n=200 reps=1
check 2 logreg.lua n=20000 iters=3 reps=1
check 2 select.lua n=100000 reps=1
check 2 nearest.lua n=300 m=200 reps=1
exit $status
